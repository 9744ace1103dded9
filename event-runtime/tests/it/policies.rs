//! The policies and sinks in one process: `switch` with a pool too small (emitted = decoded +
//! reported drops, exactly), `wait`, `fill`, `ring` on the heap and in a ring file, several
//! sinks at once. (Control through the ring file's control page is event-dump's to send:
//! event-dump/tests/cli.rs.)
//!
//! A process has one recording at a time, so the tests take turns (`serial`).
#![deny(warnings)]

use crate::{events, serial};
use event_format::builtin;
use event_format::decode::{Catalog, Decoder, Entry};
use event_format::ring::{RingReader, RingStream};
use event_format::wire::Value;
use event_runtime::{Policy, Recorder};
use std::collections::BTreeMap;
use std::time::Duration;

/// What one stream holds.
#[derive(Debug, Default)]
struct Tally {
    /// Worker index -> the numbers it recorded, in stream order.
    numbers: BTreeMap<u64, Vec<u64>>,
    /// Worker index -> events of its thread lost, as `Dropped` events and `lost` fields say.
    dropped: BTreeMap<u64, u64>,
    /// Events lost by threads whose worker cannot be told (none of their events survived).
    dropped_unknown: u64,
    /// `ThreadName` events of threads other than the writer's.
    names: u64,
    /// Losses attributed to no thread (thread 0's `Dropped(0, n)`).
    unattributed: u64,
    /// Blocks that failed their checks.
    damaged: usize,
    /// Blocks per thread, by sequence: for the ring checks.
    sequences: BTreeMap<u64, Vec<u64>>,
}

/// Tallies a stream in which worker `w` recorded `ArenaDestroy(w, i)` for i = 0, 1, ...
fn tally(stream: &[u8]) -> Tally {
    let mut decoder = Decoder::new(stream).expect("a valid header");
    let catalog = Catalog::new(&decoder.header().sets);
    let mut t = Tally::default();
    // Thread id -> worker index, learnt from its ArenaDestroy events; losses by thread id.
    let mut worker_of = BTreeMap::new();
    let mut lost_by_thread: BTreeMap<u64, u64> = BTreeMap::new();
    let mut writer_threads = Vec::new();
    while let Some(block) = decoder.next_block() {
        let Ok(block) = block else {
            t.damaged += 1;
            continue;
        };
        *lost_by_thread.entry(block.header.thread).or_default() += block.header.lost;
        t.sequences.entry(block.header.thread).or_default().push(block.header.sequence);
        for entry in block.entries(&catalog) {
            let Entry::Event(e) = entry else { panic!("unexpected {entry:?}") };
            let values: Vec<Value<'_>> = e.values().collect();
            let word = |i: usize| match values[i] {
                Value::Word(w) | Value::Pointer(w) | Value::Address(w) => w,
                ref v => panic!("not a word: {v:?}"),
            };
            match e.desc.code {
                c if c == events::code::ArenaDestroy => {
                    worker_of.insert(e.thread, word(0));
                    t.numbers.entry(word(0)).or_default().push(word(1));
                }
                builtin::DROPPED => *lost_by_thread.entry(word(0)).or_default() += word(1),
                builtin::THREAD_NAME => match values[1] {
                    Value::Str(ref s) if s.bytes == b"event-writer" => writer_threads.push(e.thread),
                    _ => t.names += 1,
                },
                _ => {}
            }
        }
    }
    for (thread, lost) in lost_by_thread {
        match worker_of.get(&thread) {
            Some(&w) => *t.dropped.entry(w).or_default() += lost,
            None if thread == 0 => t.unattributed += lost,
            None => {
                assert!(!writer_threads.contains(&thread) || lost == 0, "the writer thread never refuses");
                t.dropped_unknown += lost;
            }
        }
    }
    t
}

/// Runs `workers` threads, each recording `n` numbered events, and joins them.
fn run_workers(workers: u64, n: u64) {
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            std::thread::spawn(move || {
                for i in 0..n {
                    event!(ArenaDestroy, w as usize, i);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

/// Every worker's numbers are strictly increasing (in order, none twice).
fn assert_in_order(t: &Tally) {
    for (w, numbers) in &t.numbers {
        assert!(numbers.windows(2).all(|p| p[0] < p[1]), "worker {w}'s events are in order, none twice");
    }
}

/// Each worker emitted `n` events and one ThreadName: decoded + reported drops = emitted,
/// over all workers, and for each worker whose events partly survived, no more than it emitted.
fn assert_exact(t: &Tally, workers: u64, n: u64) {
    assert_eq!(t.damaged, 0);
    assert_eq!(t.unattributed, 0, "no unattributed losses");
    assert_in_order(t);
    let decoded = t.numbers.values().map(|v| v.len() as u64).sum::<u64>() + t.names;
    let dropped = t.dropped.values().sum::<u64>() + t.dropped_unknown;
    assert_eq!(decoded + dropped, workers * (n + 1), "{decoded} decoded + {dropped} dropped");
    for (w, numbers) in &t.numbers {
        let lost = t.dropped.get(w).copied().unwrap_or(0);
        // Its ThreadName may be among the decoded or the dropped: n or n + 1.
        let total = numbers.len() as u64 + lost;
        assert!(total == n || total == n + 1, "worker {w}: {} decoded + {lost} dropped", numbers.len());
    }
}

#[test]
fn switch_with_a_small_pool_counts_every_refused_event() {
    let _serial = serial();
    let (workers, n) = (4, 100_000);
    let mut runs_with_drops = 0;
    for _ in 0..5 {
        let recording =
            Recorder::new().memory().policy(Policy::Switch).block_size(1024).buffer_size(4 * 1024).start().unwrap();
        run_workers(workers, n);
        let t = tally(&recording.stop().unwrap());
        assert_exact(&t, workers, n);
        if t.dropped.values().sum::<u64>() + t.dropped_unknown > 0 {
            runs_with_drops += 1;
            break;
        }
    }
    assert!(runs_with_drops > 0, "four 1 KiB blocks for four busy threads run dry at least once in five runs");
}

#[test]
fn wait_policy_waits_for_the_writer_instead_of_dropping() {
    let _serial = serial();
    let (workers, n) = (3, 30_000);
    let recording = Recorder::new()
        .memory()
        .policy(Policy::Switch)
        .wait(Duration::from_secs(10))
        .block_size(1024)
        .buffer_size(4 * 1024)
        .start()
        .unwrap();
    run_workers(workers, n);
    let t = tally(&recording.stop().unwrap());
    assert_exact(&t, workers, n);
    assert_eq!(t.dropped.values().sum::<u64>() + t.dropped_unknown, 0, "with a long enough wait nothing is dropped");
}

#[test]
fn fill_stops_when_the_budget_is_spent_and_counts_the_rest() {
    let _serial = serial();
    let (workers, n) = (2, 20_000);
    let recording =
        Recorder::new().memory().policy(Policy::Fill).block_size(1024).buffer_size(8 * 1024).start().unwrap();
    run_workers(workers, n);
    let t = tally(&recording.stop().unwrap());
    assert_exact(&t, workers, n);
    let decoded: usize = t.numbers.values().map(Vec::len).sum();
    assert!(t.dropped.values().sum::<u64>() + t.dropped_unknown > 0);
    assert!(decoded > 0 && (decoded as u64) < workers * n, "fill records some, not all: {decoded}");
    for numbers in t.numbers.values() {
        assert_eq!(numbers[0], 0, "fill keeps the first events");
        assert!(numbers.windows(2).all(|p| p[1] == p[0] + 1), "and keeps them without a gap");
    }
}

#[test]
fn ring_keeps_the_latest_blocks_of_each_thread() {
    let _serial = serial();
    let (workers, n) = (2, 50_000);
    let recording = Recorder::new()
        .memory()
        .policy(Policy::Ring)
        .block_size(1024)
        .buffer_size(16 * 1024)
        .ring_threads(4)
        .start()
        .unwrap();
    run_workers(workers, n);
    let t = tally(&recording.stop().unwrap());
    assert_eq!(t.damaged, 0);
    assert_in_order(&t);
    for (w, numbers) in &t.numbers {
        assert_eq!(*numbers.last().unwrap(), n - 1, "worker {w}'s last event is kept");
        assert!(numbers[0] > 0, "worker {w}'s first events were overwritten");
        assert!(numbers.windows(2).all(|p| p[1] == p[0] + 1), "worker {w}: the kept events have no gap");
    }
    for seqs in t.sequences.values() {
        assert!(seqs.windows(2).all(|p| p[1] == p[0] + 1), "consecutive blocks: {seqs:?}");
    }
    // The rings share the buffer: 16 blocks of 1 KiB between them, whoever records more.
    let blocks: usize = t.sequences.iter().filter(|(t, _)| **t != 0).map(|(_, s)| s.len()).sum();
    assert!(blocks <= 16, "the rings hold the buffer's 16 blocks at most: {blocks}");
}

#[test]
fn a_file_and_memory_get_the_same_stream() {
    let _serial = serial();
    let dir = tempdir("file-and-memory");
    let path = dir.join("trace.evt");
    let recording = Recorder::new().memory().file(&path).block_size(4096).deterministic_clock().start().unwrap();
    run_workers(2, 5_000);
    let memory = recording.stop().unwrap();
    let file = std::fs::read(&path).unwrap();
    assert_eq!(file, memory, "both sinks get the same bytes");
    assert_exact(&tally(&file), 2, 5_000);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600, "owner only");
    }
}

#[test]
fn a_ring_file_holds_every_committed_event_after_stop() {
    let _serial = serial();
    let dir = tempdir("ring-file");
    let path = dir.join("trace.ring");
    let recording = Recorder::new().ring_file(&path).policy(Policy::Ring).block_size(4096).start().unwrap();
    run_workers(3, 10_000);
    assert!(recording.stop().unwrap().is_empty(), "no memory sink");
    let (stream, _) = read_ring(&path);
    assert_exact(&tally(&stream), 3, 10_000);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600, "owner only");
    }
}

#[test]
fn fill_in_a_ring_file_reports_what_its_slots_refused() {
    let _serial = serial();
    let dir = tempdir("ring-fill");
    let path = dir.join("trace.ring");
    let recording = Recorder::new()
        .ring_file(&path)
        .memory()
        .policy(Policy::Fill)
        .block_size(1024)
        .buffer_size(64 * 1024)
        .ring_threads(8)
        .start()
        .unwrap();
    run_workers(2, 20_000);
    let memory = recording.stop().unwrap();
    let (stream, _) = read_ring(&path);
    // The ring file and the stream copy both account for every event. The slots share the
    // file's 64 blocks of 1 KiB, filled once (whoever records first takes them).
    for s in [&stream, &memory] {
        let t = tally(s);
        assert_exact(&t, 2, 20_000);
        assert!(t.dropped.values().sum::<u64>() > 0, "64 KiB cannot hold 40 000 events");
        let blocks: usize = t.sequences.iter().filter(|(t, _)| **t != 0).map(|(_, s)| s.len()).sum();
        assert!(!t.numbers.is_empty() && blocks <= 64, "the file's blocks, once: {blocks}");
        for numbers in t.numbers.values() {
            assert_eq!(numbers[0], 0, "fill keeps the first events");
        }
    }
}

/// A ring file read as a stream, and what the reader found.
fn read_ring(path: &std::path::Path) -> (Vec<u8>, event_format::ring::RingFindings) {
    let reader = RingReader::open(std::fs::File::open(path).unwrap(), Default::default()).unwrap();
    let mut stream = RingStream::new(reader);
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut stream, &mut bytes).unwrap();
    (bytes, stream.findings().clone())
}

fn tempdir(name: &str) -> crate::Scratch {
    crate::dir(&format!("policies-{name}"))
}

#[test]
fn threads_that_come_and_go_each_get_a_slot_of_their_own() {
    // A claim that raced with a slot's owner exiting once gave two threads one slot.
    let _serial = serial();
    let dir = tempdir("ring-slots");
    let path = dir.join("trace.ring");
    for _ in 0..20 {
        let recording = Recorder::new().ring_file(&path).policy(Policy::Ring).block_size(4096).start().unwrap();
        run_workers(3, 2_000);
        recording.stop().unwrap();
        let (bytes, findings) = read_ring(&path);
        assert_eq!(findings.threads, 3);
        assert_exact(&tally(&bytes), 3, 2_000);
    }
}

#[test]
fn a_thread_without_a_slot_is_counted_not_lost_silently() {
    let _serial = serial();
    let dir = tempdir("ring-no-slot");
    let path = dir.join("trace.ring");
    let n = 1_000u64;
    let recording =
        Recorder::new().ring_file(&path).policy(Policy::Ring).block_size(4096).ring_threads(1).start().unwrap();
    // Both threads hold their first event's slot (or lack of one) until both have one.
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let handles: Vec<_> = (0..2u64)
        .map(|w| {
            let barrier = std::sync::Arc::clone(&barrier);
            std::thread::spawn(move || {
                event!(ArenaDestroy, w as usize, 0u64);
                barrier.wait();
                for i in 1..n {
                    event!(ArenaDestroy, w as usize, i);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    recording.stop().unwrap();
    let (bytes, findings) = read_ring(&path);
    assert_eq!((findings.threads, findings.threads_without_slot, findings.slots_reused), (1, 1, 0));
    let t = tally(&bytes);
    assert_eq!(t.numbers.len(), 1, "one thread recorded");
    assert_eq!(t.numbers.values().next().unwrap().len() as u64, n);
    assert_eq!(t.unattributed, n + 1, "the other's events and its ThreadName are counted as lost");
}

#[test]
fn the_writer_records_clock_sync_events_as_the_run_goes_on() {
    let _serial = serial();
    let recording = Recorder::new().memory().start().unwrap();
    std::thread::sleep(Duration::from_millis(1300));
    let stream = recording.stop().unwrap();
    let mut decoder = Decoder::new(&stream[..]).unwrap();
    let clock = decoder.header().clock;
    let catalog = Catalog::new(&decoder.header().sets);
    let mut syncs = Vec::new();
    while let Some(block) = decoder.next_block() {
        for entry in block.unwrap().entries(&catalog) {
            if let Entry::Event(e) = entry
                && e.desc.code == builtin::CLOCK_SYNC
            {
                let v: Vec<Value<'_>> = e.values().collect();
                let (Value::Word(ticks), Value::Signed(wall)) = (&v[0], &v[1]) else { panic!("{v:?}") };
                syncs.push((*ticks, *wall));
            }
        }
    }
    assert!(!syncs.is_empty(), "one ClockSync a second");
    for (ticks, wall) in syncs {
        // The pair agrees with the header's rate and reference to within a millisecond.
        let predicted = clock.wall_ns(ticks);
        assert!((predicted - i128::from(wall)).abs() < 1_000_000, "{predicted} vs {wall}");
    }
}

#[cfg(unix)]
#[test]
fn an_older_trace_is_kept_the_new_file_is_private_and_a_symlink_is_left_alone() {
    use std::os::unix::fs::PermissionsExt;
    let _serial = serial();
    let dir = tempdir("private-file");
    let path = dir.join("trace.evt");
    Recorder::new().file(&path).start().unwrap().stop().unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let older = std::fs::read(&path).unwrap();
    let recording = Recorder::new().file(&path).start().unwrap();
    recording.stop().unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600, "owner only, though it existed");
    assert_eq!(std::fs::read(dir.join("trace.evt.old")).unwrap(), older, "the older trace is kept");
    // Anything that is not a trace of ours is left as it is; the recording goes on without it.
    let target = dir.join("elsewhere.evt");
    let link = dir.join("link.evt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, b"old").unwrap();
    for path in [&link, &notes] {
        let recording = Recorder::new().file(path).start().unwrap();
        event!(ClientPhase, "ignored", 1u64, 0);
        recording.stop().unwrap();
    }
    assert!(!target.exists(), "nothing written through the link");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link is still a link");
    assert_eq!(std::fs::read(&notes).unwrap(), b"old", "a file of other content is unchanged");
}
