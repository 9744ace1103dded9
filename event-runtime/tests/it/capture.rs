//! Scoped capture (`event_runtime::capture`): each test thread gets its own events and only
//! its own, in parallel with other captures and with a recording of the process; a capture
//! costs the other threads no argument evaluation; captures nest; long strings and many
//! blocks decode as a recording's do.
#![deny(warnings)]

use crate::serial;
use event_format::wire::Value;
use event_runtime::{Capture, Recorder, capture};
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};

#[test]
fn a_capture_holds_this_threads_events_decoded() {
    let events = capture(|| {
        event!(ClientPhase, "warm-up", 1u64, -3);
        event!(ClientMark);
    });
    assert_eq!(events.names(), ["ClientPhase", "ClientMark"]);
    assert_eq!(events.values("ClientPhase")[0][1..], [Value::Word(1), Value::Signed(-3)]);
    assert_eq!(
        events.lines(),
        ["0.000000002 T1 Client.ClientPhase phase=\"warm-up\" step=1 delta=-3", "0.000000003 T1 Client.ClientMark"]
    );
    assert_eq!(events.to_string(), events.lines().join("\n") + "\n");
    // The capture starts by naming its thread, the test's.
    let entries = events.entries();
    let event_format::decode::Entry::Event(first) = &entries[0] else { panic!("{:?}", entries[0]) };
    assert_eq!(first.desc.name, "ThreadName");
    let name = std::thread::current().name().unwrap().to_owned();
    assert!(matches!(first.values().last(), Some(Value::Str(t)) if t.bytes == name.as_bytes()));
    // Its stream is one that any reader decodes.
    let mut decoder = event_format::decode::Decoder::new(events.bytes()).unwrap();
    assert!(decoder.next_block().unwrap().is_ok());
}

/// Eight threads capture at once, each its own numbered events, while (on the first run) a
/// recording of the process runs too and another thread records into it: no capture holds
/// another's event, and the recording holds none of theirs.
#[test]
fn parallel_captures_never_mix_and_leave_the_recording_alone() {
    let _serial = serial();
    let recording = Recorder::new().memory().deterministic_clock().start().unwrap();
    let threads = 8u64;
    let start = Barrier::new(threads as usize + 1);
    let (captured, ()) = std::thread::scope(|s| {
        let captures: Vec<_> = (0..threads)
            .map(|t| {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    capture(|| {
                        for i in 0..2000u64 {
                            event!(ArenaDestroy, t as usize, i);
                        }
                    })
                })
            })
            .collect();
        let outside = s.spawn(|| {
            start.wait();
            for i in 0..500u64 {
                event!(ArenaDestroy, 99usize, i);
            }
            event_runtime::flush();
        });
        let captured: Vec<_> = captures.into_iter().map(|h| h.join().unwrap()).collect();
        outside.join().unwrap();
        (captured, ())
    });
    for (t, events) in captured.iter().enumerate() {
        let values = events.values("ArenaDestroy");
        assert_eq!(values.len(), 2000, "thread {t}");
        for (i, v) in values.iter().enumerate() {
            assert_eq!(v[..], [Value::Pointer(t as u64), Value::Word(i as u64)], "thread {t}");
        }
    }
    let stream = recording.stop().unwrap();
    let mut decoder = event_format::decode::Decoder::new(&stream[..]).unwrap();
    let catalog = event_format::decode::Catalog::new(&decoder.header().sets);
    let mut recorded = Vec::new();
    while let Some(block) = decoder.next_block() {
        let block = block.unwrap();
        for entry in block.entries(&catalog) {
            if let event_format::decode::Entry::Event(e) = entry
                && e.desc.name == "ArenaDestroy"
            {
                recorded.push(e.values().next() == Some(Value::Pointer(99)));
            }
        }
    }
    assert_eq!(recorded.len(), 500, "the recording holds the other thread's events, and no captured one");
    assert!(recorded.iter().all(|from_99| *from_99));
}

/// While a capture runs on one thread, another thread's disabled events stay disabled: their
/// arguments are not evaluated and nothing is recorded for them.
#[test]
fn a_capture_evaluates_no_other_threads_arguments() {
    static EVALUATED: AtomicU64 = AtomicU64::new(0);
    fn arg() -> u64 {
        EVALUATED.fetch_add(1, Ordering::Relaxed);
        1
    }
    let _serial = serial();
    let started = Barrier::new(2);
    let done = Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            let c = Capture::start();
            started.wait();
            done.wait();
            drop(c);
        });
        started.wait();
        // No recording runs, and this thread does not capture.
        for _ in 0..100 {
            event!(PoolFinish, 0usize, arg());
        }
        done.wait();
    });
    assert_eq!(EVALUATED.load(Ordering::Relaxed), 0);
}

#[test]
fn captures_nest() {
    let outer = Capture::start();
    event!(ClientPhase, "outer", 1u64, 0);
    let inner = capture(|| event!(ClientPhase, "inner", 2u64, 0));
    event!(ClientPhase, "outer", 3u64, 0);
    let outer = outer.finish();
    fn steps(c: &event_runtime::Captured) -> Vec<String> {
        c.values("ClientPhase").iter().map(|v| format!("{:?}", v[1])).collect()
    }
    assert_eq!(steps(&inner), ["Word(2)"]);
    assert_eq!(steps(&outer), ["Word(1)", "Word(3)"]);
    assert!(capture(|| ()).is_empty());
}

#[test]
fn long_strings_are_cut_and_many_blocks_decode() {
    let long = "y".repeat(3000);
    let events = capture(|| {
        event!(ClientCheck, true, &long, "short");
        for i in 0..20_000u64 {
            event!(SweepEnd, 0usize, i, i % 2 == 0);
        }
    });
    let check = &events.values("ClientCheck")[0];
    let Value::Str(cut) = check[1] else { panic!("{check:?}") };
    assert!(cut.truncated && cut.bytes.len() == event_format::wire::STRING_MAX);
    assert_eq!(events.named("SweepEnd").len(), 20_000, "more than one block of 64 KiB");
    assert!(events.bytes().len() > 2 * 65536);
}

/// A capture records every event, whatever the running recording's selection leaves out.
#[test]
fn a_capture_records_what_the_recording_leaves_out() {
    let _serial = serial();
    let recording = Recorder::new().memory().control("none").start().unwrap();
    let events = capture(|| event!(PoolFinish, 0usize, 5u64));
    assert_eq!(events.names(), ["PoolFinish"]);
    recording.stop().unwrap();
}

/// Recordings that start and stop while a capture runs take none of its events, even when
/// another thread holds the selection's lock at the moment a stop clears the bits (the stop
/// once cleared the bits the capture forces on directly when it found that lock held, and
/// the capture then missed every later event).
#[test]
fn recordings_that_stop_while_a_capture_runs_take_nothing_from_it() {
    let _serial = serial();
    let done = std::sync::atomic::AtomicBool::new(false);
    let captured = std::thread::scope(|s| {
        // Not capturing: each of its events asks the selection, under its lock, while a
        // capture runs.
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                event!(SweepEnd, 0usize, 1u64, true);
            }
        });
        let starts = s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                let recording = Recorder::new().memory().start().unwrap();
                recording.stop().unwrap();
            }
        });
        let events = capture(|| {
            for i in 0..2_000_000u64 {
                event!(SweepEnd, 0usize, i, i % 2 == 0);
            }
        });
        done.store(true, Ordering::Relaxed);
        starts.join().unwrap();
        events
    });
    assert_eq!(captured.named("SweepEnd").len(), 2_000_000);
}
