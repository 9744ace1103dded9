//! The recorder in a process of its own (`recorder-child`): killed with SIGKILL, aborted
//! and panicking while it writes a ring file (checked by `event_tests::check_ring`, which the
//! crash soak `bin/soak.rs` runs many more times), aborted with an event file, panicking
//! (the traceback), followed live, and started with bad environment settings.

use crate::common::{child, start_ready};
use event_format::decode::{Catalog, Entry};
use event_format::ring::{FollowItem, Follower, RingReader, STATE_CLOSED, STATE_RECORDING};
use event_format::wire::Value;
use event_tests::{NUMBERED, check_ring};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn dir(name: &str) -> crate::common::Scratch {
    crate::common::dir("runtime", name)
}

/// Per worker, the numbers decoded from `stream`, in order; panics on any damage.
fn numbers(stream: &[u8]) -> BTreeMap<u64, Vec<u64>> {
    event_tests::numbered(stream).unwrap_or_else(|e| panic!("{e}")).by_worker
}

/// A small deterministic sequence of pauses, different on each run of the suite.
fn pauses(n: usize) -> Vec<u64> {
    let mut x = u64::from(std::process::id()) ^ 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % 40
        })
        .collect()
}

#[test]
fn a_ring_file_survives_sigkill_with_every_committed_event() {
    let d = dir("sigkill");
    for (round, pause) in pauses(20).into_iter().enumerate() {
        let path = d.join(format!("kill-{round}.ring"));
        let mut c = start_ready(child(&["ring", path.to_str().unwrap(), "3"], &[("EVENT_BUFSIZE", "512k")]));
        std::thread::sleep(Duration::from_millis(pause));
        c.kill().unwrap(); // SIGKILL
        c.wait().unwrap();
        // Killed, never closed; every worker's events a gap-free run, from 0 unless overwritten.
        check_ring(&path, STATE_RECORDING, 3).unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
}

#[test]
fn a_ring_file_survives_an_abort_on_a_recording_thread() {
    let d = dir("abort-ring");
    for (round, pause) in pauses(4).into_iter().enumerate() {
        let path = d.join(format!("abort-{round}.ring"));
        let mut c = start_ready(child(&["ring", path.to_str().unwrap(), "3"], &[("EVENT_BUFSIZE", "1m")]));
        std::thread::sleep(Duration::from_millis(pause));
        // `kill -ABRT`: without an event file the recorder has no handler for it (a ring
        // file needs no flush), and the signal takes its course.
        let sent = std::process::Command::new("kill").args(["-ABRT", &c.id().to_string()]).status().unwrap();
        assert!(sent.success());
        let status = c.wait().unwrap();
        assert_eq!(status.signal(), Some(6), "round {round}: ended by SIGABRT");
        check_ring(&path, STATE_RECORDING, 3).unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
}

#[test]
fn a_ring_file_keeps_a_panicking_workers_events_up_to_its_last() {
    let d = dir("panic-ring");
    for (round, pause) in pauses(3).into_iter().enumerate() {
        let path = d.join(format!("panic-{round}.ring"));
        let victim = round as u64 % 3;
        let mut c = child(
            &["panic-ring", path.to_str().unwrap(), "3", &pause.to_string(), &victim.to_string()],
            &[("EVENT_BUFSIZE", "1m")],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null()) // the panic and its traceback (tested above)
        .spawn()
        .unwrap();
        // One reader for both lines: `ready`, then what the victim recorded.
        let lines: Vec<String> = BufReader::new(c.stdout.take().unwrap()).lines().map(Result::unwrap).collect();
        assert_eq!(lines.len(), 2, "round {round}: {lines:?}");
        assert_eq!(lines[0], "ready");
        let recorded: u64 =
            lines[1].strip_prefix("panic after ").and_then(|l| l.strip_suffix(" events")).unwrap().parse().unwrap();
        let status = c.wait().unwrap();
        assert_eq!(status.code(), Some(101), "round {round}: the panic reaches the main thread");
        // The main thread's unwinding drops the recording, which closes the file.
        let found = check_ring(&path, STATE_CLOSED, 3).unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(
            found.numbered.by_worker[&victim].last(),
            Some(&(recorded - 1)),
            "round {round}: the victim's last event is in the file"
        );
    }
}

#[test]
fn the_crash_check_reports_a_wrong_state_a_missing_worker_and_a_damaged_block() {
    let d = dir("check-fails");
    let path = d.join("whole.ring");
    // Paced (a millisecond's pause every 100 events, at most 100 000 events a second per
    // worker): the 16 MiB rings hold seconds of it, however long a loaded machine makes the
    // 20 ms before the kill (flat out, a run of the whole suite once overwrote 966 blocks).
    let mut c = start_ready(child(&["ring", path.to_str().unwrap(), "2", "100"], &[("EVENT_BUFSIZE", "16m")]));
    std::thread::sleep(Duration::from_millis(20));
    c.kill().unwrap();
    c.wait().unwrap();
    let whole = check_ring(&path, STATE_RECORDING, 2).unwrap();
    assert_eq!(whole.findings.overwritten_blocks, 0, "a ring large enough for the paced workers");
    assert!(check_ring(&path, STATE_CLOSED, 2).unwrap_err().contains("state is recording, expected closed"));
    assert!(check_ring(&path, STATE_RECORDING, 3).unwrap_err().contains("worker 2: no event"));
    // A flipped bit in the sync word of block 0 of the first slot, sealed or being written
    // (the reader needs the file's layout to find it).
    let reader = RingReader::open(std::fs::File::open(&path).unwrap(), Default::default()).unwrap();
    let at = reader.layout().block(0, 0) as usize;
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[at] ^= 0x40;
    let damaged = d.join("damaged.ring");
    std::fs::write(&damaged, &bytes).unwrap();
    let why = check_ring(&damaged, STATE_RECORDING, 2).unwrap_err();
    assert!(why.contains("damaged blocks"), "{why}");
}

#[test]
fn an_aborted_program_leaves_its_events_in_the_event_file() {
    let d = dir("abort");
    let path = d.join("abort.evt");
    let out = child(&["abort", path.to_str().unwrap(), "10000"], &[]).output().unwrap();
    assert!(!out.status.success(), "the child aborts");
    let by_worker = numbers(&std::fs::read(&path).unwrap());
    assert_eq!(by_worker.get(&0).map(Vec::len), Some(10_000), "every event, the partial block included");
    assert!(by_worker[&0].windows(2).all(|p| p[1] == p[0] + 1));
}

#[test]
fn an_aborted_program_with_a_ring_file_too_leaves_as_much_in_the_event_file() {
    // With an event file and a ring file, the event file gets a copy of each block; the
    // aborting thread's partial block was in the ring file only, and the event file was empty.
    let d = dir("abort-both");
    for n in [100u64, 10_000] {
        let file = d.join(format!("alone-{n}.evt"));
        let out = child(&["abort-env", &n.to_string()], &[("EVENT_FILE", file.to_str().unwrap())]).output().unwrap();
        assert_eq!(out.status.signal(), Some(libc::SIGABRT), "the child aborts");
        let alone = numbers(&std::fs::read(&file).unwrap());
        assert_eq!(alone.get(&0).map(Vec::len), Some(n as usize), "{n}: the event file alone holds every event");
        let file = d.join(format!("both-{n}.evt"));
        let ring = d.join(format!("both-{n}.ring"));
        let env = [("EVENT_FILE", file.to_str().unwrap()), ("EVENT_RING", ring.to_str().unwrap())];
        let out = child(&["abort-env", &n.to_string()], &env).output().unwrap();
        assert_eq!(out.status.signal(), Some(libc::SIGABRT), "the child aborts");
        let both = numbers(&std::fs::read(&file).unwrap());
        assert_eq!(both, alone, "{n}: with a ring file too, the event file holds what it holds alone");
        let in_ring = numbers(&event_tests::read_ring(&ring).unwrap().0);
        assert_eq!(in_ring, alone, "{n}: and the ring file every event");
    }
}

#[test]
fn a_panic_prints_the_last_events_of_the_panicking_thread() {
    let out = child(&["panic", "500"], &[]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the child panics on purpose"), "the panic message comes first: {stderr}");
    let head = format!(
        "event-runtime: the last {} events of thread 'main' before it panicked:",
        event_runtime::TRACEBACK_EVENTS
    );
    let at = stderr.find(&head).unwrap_or_else(|| panic!("a traceback in: {stderr}"));
    let lines: Vec<&str> = stderr[at..].lines().skip(1).take(event_runtime::TRACEBACK_EVENTS).collect();
    for (k, line) in lines.iter().enumerate() {
        let i = 500 - event_runtime::TRACEBACK_EVENTS + k;
        assert!(line.contains("Arena.ArenaDestroy") && line.ends_with(&format!("committed={i}")), "line {k}: {line}");
    }
}

#[test]
fn a_follower_sees_every_event_in_order_or_the_overwrites() {
    let d = dir("follow");
    // A ring too small for the run (overwrites) and one large enough (every event).
    for (bufsize, must_see_all) in [("64k", false), ("64m", true)] {
        let path = d.join(format!("follow-{bufsize}.ring"));
        let n = 100_000u64;
        let mut c =
            start_ready(child(&["follow", path.to_str().unwrap(), "2", &n.to_string()], &[("EVENT_BUFSIZE", bufsize)]));
        let reader = RingReader::open(std::fs::File::open(&path).unwrap(), Default::default()).unwrap();
        let catalog = Catalog::new(&reader.header().sets);
        let mut follower = Follower::new(reader);
        let mut next: BTreeMap<u64, u64> = BTreeMap::new(); // thread -> next number expected
        let mut overwritten: BTreeMap<u64, bool> = BTreeMap::new(); // an overwrite not yet accounted
        let mut seen = 0u64;
        let mut overwrites = 0u64;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let closed = follower.reader().status().unwrap().state == STATE_CLOSED;
            for item in follower.poll().unwrap() {
                match item {
                    FollowItem::Records { block, from, .. } => {
                        for entry in block.entries_from(&catalog, from) {
                            let Entry::Event(e) = entry else { panic!("damaged: {entry:?}") };
                            if e.desc.code != NUMBERED {
                                continue;
                            }
                            let Some(i) =
                                e.values().nth(1).and_then(|v| if let Value::Word(i) = v { Some(i) } else { None })
                            else {
                                panic!("a numbered event")
                            };
                            let expected = next.entry(e.thread).or_insert(0);
                            if i != *expected {
                                assert!(
                                    overwritten.remove(&e.thread).is_some(),
                                    "thread {}: {i} after {expected} with no overwrite reported",
                                    e.thread
                                );
                            }
                            *expected = i + 1;
                            seen += 1;
                        }
                    }
                    // Blocks gone before following started explain a jump too, and come
                    // before any event of their thread.
                    FollowItem::Before { thread, blocks } => {
                        assert!(blocks > 0);
                        assert!(!next.contains_key(&thread), "thread {thread}: Before after its events");
                        overwritten.insert(thread, true);
                        overwrites += blocks;
                    }
                    FollowItem::Overwritten { thread, blocks } => {
                        assert!(blocks > 0);
                        overwritten.insert(thread, true);
                        overwrites += blocks;
                    }
                    FollowItem::Damaged { thread, sequence, why } => panic!("thread {thread} block {sequence}: {why}"),
                    FollowItem::PinAreaDamaged { why } => panic!("the pin area: {why}"),
                }
            }
            if closed {
                break;
            }
            assert!(Instant::now() < deadline, "the child finishes within a minute");
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(c.wait().unwrap().success());
        if must_see_all {
            assert_eq!(seen, 2 * n, "a ring large enough: every event seen once");
            assert_eq!(overwrites, 0);
        } else {
            assert!(seen > 0 && seen <= 2 * n);
            assert_eq!(next.values().copied().collect::<Vec<_>>(), vec![n, n], "each thread's last event is seen");
        }
    }
}

#[test]
fn bad_settings_are_one_clear_line_and_a_failure() {
    let d = dir("env");
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[("EVENT_POLICY", "swtich")],
            "error: EVENT_POLICY=\"swtich\": unknown policy; write switch, ring, fill, wait or wait=DURATION (e.g. wait=50ms)",
        ),
        (
            &[("EVENT_BUFSIZE", "12q")],
            "error: EVENT_BUFSIZE=\"12q\": not a size; write a number of bytes with an optional k, m or g suffix (powers of 1024), e.g. 16m",
        ),
        (
            &[("EVENT_CONTROL", "Pol")],
            "error: EVENT_CONTROL=\"Pol\": unknown kind \"Pol\" at column 1 (did you mean \"Pool\"?)",
        ),
        (&[("EVENT_RING", "/nonexistent/dir/x.ring")], "error: cannot create the ring file /nonexistent/dir/x.ring: "),
    ];
    for (env, expected) in cases {
        let out = child(&["env"], env).current_dir(&d).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{env:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(stderr.starts_with(expected), "{env:?}: {stderr}");
    }
    // With no sink named, the stream goes to `<program>-<pid>-<recording id>.evt`.
    let c = child(&["env"], &[("EVENT_CONTROL", "Arena")])
        .current_dir(&d)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = c.id();
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let prefix = format!("recorder-child-{pid}-");
    let default: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix))
        .collect();
    assert_eq!(default.len(), 1, "{default:?}");
    let by_worker = numbers(&std::fs::read(&default[0]).unwrap());
    assert_eq!(by_worker[&0].len(), 1000);
}

#[test]
fn an_idle_threads_start_up_events_reach_the_event_file_before_a_sigkill() {
    // The main thread records its start-up events, then idles while a worker records: the
    // writer flushes the main thread's partial block once it has been idle for a second
    // (README, "Guarantees": within two seconds of its last event), so a SIGKILL after that
    // loses none of them. Before, they reached the file only at the stop.
    let d = dir("idle-flush");
    let file = d.join("idle.evt");
    let mut c = start_ready(child(&["record-hold", "3"], &[("EVENT_FILE", file.to_str().unwrap())]));
    let main_events = |bytes: &[u8]| event_tests::numbered(bytes).ok().and_then(|n| n.by_worker.get(&0).cloned());
    // Waits for the file to hold them: the bound is two seconds; the minute is for a loaded
    // machine, and the check after the kill is what the test asserts.
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline && main_events(&std::fs::read(&file).unwrap_or_default()).is_none() {
        std::thread::sleep(Duration::from_millis(100));
    }
    c.kill().unwrap(); // SIGKILL
    c.wait().unwrap();
    let bytes = std::fs::read(&file).unwrap();
    let found = event_tests::numbered(&bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(found.by_worker.get(&0), Some(&vec![0, 1, 2]), "the main thread's start-up events are in the file");
    assert!(found.by_worker.get(&1).is_some_and(|w| !w.is_empty()), "the worker recorded meanwhile");
}
