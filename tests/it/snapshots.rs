//! Snapshots of a running recording's rings (issue 32): on demand from code, through the ring
//! file's control page (`event-dump control --snapshot`), and taken while threads start and
//! exit; each one a whole event file that `event-dump` reads alone and says what it is.

use crate::common::{DUMP, dir, program, start_ready};
use event_format::decode::{Catalog, Decoder, Entry};
use event_format::wire::{SnapshotCause, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const CHILD: &str = env!("CARGO_BIN_EXE_snapshot-child");

/// What a snapshot holds: each thread's `ArenaDestroy` numbers in order (by the worker number
/// the event carries), the thread names, and the header's snapshot property.
struct Read {
    numbers: BTreeMap<u64, Vec<u64>>,
    names: BTreeMap<u64, String>,
    /// Worker number to the thread id that recorded it.
    threads: BTreeMap<u64, u64>,
    snapshot: event_format::wire::Snapshot,
    stop: Option<event_format::wire::Stop>,
    /// The `step` of every `ClientPhase`, in order, and its time.
    phases: Vec<u64>,
    phase_times: Vec<u64>,
    /// Every `ArenaDestroy` (worker, number) and `ClientPhase` (`u64::MAX`, step), in the
    /// order of the stream (one thread's blocks are in order).
    order: Vec<(u64, u64)>,
}

fn read(path: &Path) -> Read {
    let bytes = std::fs::read(path).unwrap();
    let mut decoder = Decoder::new(&bytes[..]).unwrap();
    let snapshot = decoder.header().properties.snapshot.clone().expect("a snapshot property in the header");
    let catalog = Catalog::new(&decoder.header().sets);
    let mut r = Read {
        numbers: BTreeMap::new(),
        names: BTreeMap::new(),
        threads: BTreeMap::new(),
        snapshot,
        stop: None,
        phases: Vec::new(),
        phase_times: Vec::new(),
        order: Vec::new(),
    };
    while let Some(block) = decoder.next_block() {
        let block = block.expect("no damaged block");
        if let Some(stop) = block.stop() {
            r.stop = Some(stop);
        }
        for entry in block.entries(&catalog) {
            let Entry::Event(e) = entry else { continue };
            let values: Vec<Value<'_>> = e.values().collect();
            match (e.desc.name.as_str(), values.as_slice()) {
                ("ArenaDestroy", [Value::Pointer(w), Value::Word(i)]) => {
                    r.numbers.entry(*w).or_default().push(*i);
                    r.order.push((*w, *i));
                    r.threads.insert(*w, e.thread);
                }
                ("ClientPhase", [Value::Str(_), Value::Word(step), _]) => {
                    r.phases.push(*step);
                    r.phase_times.push(e.time);
                    r.order.push((u64::MAX, *step));
                    continue;
                }
                ("ThreadName", [Value::Word(t), Value::Str(s)]) => {
                    r.names.insert(*t, String::from_utf8_lossy(s.bytes).into_owned());
                }
                _ => {}
            }
        }
    }
    r
}

fn dump(args: &[&str]) -> std::process::Output {
    Command::new(DUMP).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `check` finds the snapshot whole and says what it is; `stats` too.
fn assert_whole(path: &Path, why: &str) {
    let p = path.to_str().unwrap();
    let check = dump(&["check", p]);
    let out = text(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{p}: {out}{}", text(&check.stderr));
    assert!(out.contains("whole") && out.contains("snapshot ") && out.contains(why), "{out}");
    let stats = dump(&["stats", p]);
    let out = text(&stats.stdout);
    assert!(stats.status.success(), "{}", text(&stats.stderr));
    assert!(out.contains("snapshot ") && out.contains(why) && out.contains("written whole"), "{out}");
}

/// A snapshot from code, after three threads recorded more than their rings hold: each
/// thread's latest events, consecutive and in order, ending with its last; every thread named
/// (their `ThreadName` events were overwritten in the rings); whole by `check`.
#[test]
fn a_snapshot_from_code_holds_each_threads_latest_events_and_every_name() {
    let d = dir("snapshots", "demand");
    let out = d.join("incident.evt");
    let output = program(CHILD, &["demand", out.to_str().unwrap(), "3", "20000"], &[]).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let said = text(&output.stdout);
    let r = read(&out);
    assert_eq!(r.snapshot.cause, SnapshotCause::OnDemand);
    assert_eq!(r.snapshot.sequence, 1);
    assert_eq!(r.numbers.len(), 3, "three workers");
    let mut events = 0;
    for (w, numbers) in &r.numbers {
        assert!(numbers.len() < 20000, "worker {w}'s ring went round: {} events", numbers.len());
        assert_eq!(*numbers.last().unwrap(), 19999, "worker {w}: the snapshot ends with its last event");
        assert!(numbers.windows(2).all(|p| p[1] == p[0] + 1), "worker {w}: consecutive, in order");
        let thread = r.threads[w];
        assert_eq!(r.names.get(&thread).map(String::as_str), Some(format!("worker-{w}").as_str()), "named");
        events += numbers.len();
    }
    assert!(said.starts_with("snapshot "), "{said}");
    let stop = r.stop.expect("a clean-stop marker");
    assert!(stop.events as usize > events, "the marker counts every record: {stop:?}");
    assert_eq!(said.trim(), format!("snapshot {} 3", stop.events));
    assert_whole(&out, "taken on demand");
}

/// Snapshots taken while rounds of threads start, record and exit: each is whole, and holds
/// of each thread a run of its events from its first (the rings hold everything: nothing is
/// overwritten, so a hole would be an event the copy lost); the last one, after every thread
/// ended, holds every event of every thread.
#[test]
fn snapshots_taken_while_threads_start_and_exit_lose_nothing() {
    let d = dir("snapshots", "stress");
    let output = program(CHILD, &["stress", d.to_str().unwrap(), "12"], &[]).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let said = text(&output.stdout);
    let taken: u64 = said.trim().strip_prefix("snapshots ").unwrap().parse().unwrap();
    assert!(taken >= 1, "{said}");
    for n in 1..=taken {
        let path = d.join(format!("s-{n}.evt"));
        let r = read(&path);
        assert_eq!(r.snapshot.sequence as u64, n);
        for (w, numbers) in &r.numbers {
            let expected: Vec<u64> = (0..numbers.len() as u64).collect();
            assert_eq!(numbers, &expected, "{}: worker {w}: its events from the first, without a hole", path.display());
        }
    }
    let last = d.join("last.evt");
    let r = read(&last);
    assert_eq!(r.numbers.len(), 48, "every worker");
    for (w, numbers) in &r.numbers {
        assert_eq!(numbers, &(0..500).collect::<Vec<u64>>(), "worker {w}: every event");
        assert_eq!(r.names.get(&r.threads[w]), Some(&format!("worker-{w}")));
    }
    assert_whole(&last, "taken on demand");
    assert_whole(&d.join("s-1.evt"), "taken on demand");
}

/// `event-dump control RING --snapshot OUT` against a running program: the program writes the
/// snapshot (of its ring file, or of the stream it writes) and the command says where; a
/// second request for the same path is refused, and the file is left as it was.
#[test]
fn control_asks_a_running_program_for_a_snapshot() {
    // Under `ring` (the ring file's rings), and under `switch` into segments (the window read
    // back from the segment being written and the worker's current block).
    for streaming in [false, true] {
        let d = dir("snapshots", if streaming { "control-stream" } else { "control" });
        let ring = d.join("prog.ring");
        let out = d.join("now.evt");
        let base = d.join("trace.evt");
        let env: Vec<(&str, &str)> = if streaming {
            vec![("EVENT_POLICY", "switch"), ("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1m")]
        } else {
            Vec::new()
        };
        let mut child = start_ready(program(CHILD, &["hold-ring", ring.to_str().unwrap(), "1000"], &env));
        let asked = dump(&["control", ring.to_str().unwrap(), "--snapshot", out.to_str().unwrap()]);
        let said = text(&asked.stdout);
        assert!(asked.status.success(), "{said}{}", text(&asked.stderr));
        assert!(said.starts_with(&format!("snapshot written: {}: ", out.display())), "{said}");
        let before = std::fs::read(&out).unwrap();
        let again = dump(&["control", ring.to_str().unwrap(), "--snapshot", out.to_str().unwrap()]);
        assert_eq!(again.status.code(), Some(1));
        assert!(text(&again.stderr).contains("exists; a snapshot never writes over a file"), "{}", text(&again.stderr));
        assert_eq!(std::fs::read(&out).unwrap(), before, "the file is left as it was");
        drop(child.stdin.take());
        assert!(child.wait().unwrap().success());

        let r = read(&out);
        assert_eq!(r.numbers.get(&0), Some(&(0..1000).collect::<Vec<u64>>()), "every event of the worker");
        assert_eq!(r.names.get(&r.threads[&0]).map(String::as_str), Some("worker-0"));
        assert_whole(&out, "taken on demand");
    }
}

/// The snapshot files in `d`, by name.
fn snapshots_in(d: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// A trigger with `post=500` in a thread recording at full speed: one snapshot, holding the
/// thread's events back to its ring's capacity, the trigger event in its place, and exactly
/// the 500 events after it (the thread recorded no more), in order, whole, its thread named.
#[test]
fn a_trigger_keeps_the_window_before_it_and_the_post_events_after_it() {
    let d = dir("snapshots", "trigger");
    let pattern = d.join("incident-%s.evt");
    let env = [
        ("EVENT_TRIGGER", "Client:ClientPhase if phase == incident, post=500"),
        ("EVENT_SNAPSHOT", pattern.to_str().unwrap()),
    ];
    let at = 30_000u64;
    let output = program(CHILD, &["trigger", &(at + 501).to_string(), &at.to_string()], &env).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stderr), "", "nothing declined, nothing failed");
    assert_eq!(snapshots_in(&d), [d.join("incident-1.evt")]);
    let r = read(&d.join("incident-1.evt"));
    assert_eq!(r.snapshot.cause, SnapshotCause::Event);
    assert_eq!(r.snapshot.trigger, "Client:ClientPhase if phase == incident, post=500");
    assert_eq!(r.phases, [at], "the trigger event");
    assert_eq!(r.snapshot.trigger_time, r.phase_times[0], "the header says when it fired");
    let numbers = &r.numbers[&0];
    assert!(numbers[0] > 0 && numbers.len() < 20_000, "back to the ring's capacity: from {}", numbers[0]);
    assert_eq!(*numbers.last().unwrap(), at + 500, "the 500 events after the trigger");
    assert!(numbers.windows(2).all(|p| p[1] == p[0] + 1), "consecutive");
    let trigger_at = r.order.iter().position(|e| e.0 == u64::MAX).unwrap();
    assert_eq!((r.order[trigger_at - 1], r.order[trigger_at + 1]), ((0, at), (0, at + 1)), "in its place");
    assert_eq!(r.names.get(&r.threads[&0]).map(String::as_str), Some("worker-0"));
    assert_whole(&d.join("incident-1.evt"), "triggered by Client.ClientPhase");
}

/// Two threads record flat out under `ring` (16 MiB or 256 KiB, in memory or in a ring file
/// whose slots share the whole buffer), and an
/// event recorded once triggers a snapshot: the snapshot holds the trigger event and its
/// thread's events before it, consecutive, back about as far as the thread's share of the
/// rings reaches (its rings went round many times before and after), and its `post=` events
/// after it; the snapshot is whole. The trigger's thread copied its own ring as it recorded
/// the trigger (docs/guide/keeping-the-incident.md, "A trigger holds itself"): the writer
/// thread, which takes the snapshot later, would find the rings gone round past it.
#[test]
fn a_trigger_at_full_speed_holds_itself_and_its_window() {
    let n = 1_500_000u64;
    let at = 1_000_000u64;
    // The defaults (16 MiB), and the smallest buffer (256 KiB: 2 blocks a thread, which go
    // round in a millisecond or less), with a `post=` window four times as long as that
    // thread's ring: the writer thread, which takes the snapshot after it, finds the ring
    // gone round past the trigger every time, so that only what the trigger's thread held
    // itself can be there.
    let cases = [
        ("flat", 0u64, false, false),
        ("flat-post", 1000, false, false),
        ("flat-file", 1000, false, true),
        ("flat-small", 0, true, false),
        ("flat-small-post", 20_000, true, false),
        ("flat-small-file", 20_000, true, true),
    ];
    for (name, post, small, file) in cases {
        let d = dir("snapshots", name);
        let pattern = d.join("s-%s.evt");
        let trigger =
            if post > 0 { format!("Client:ClientPhase, post={post}") } else { "Client:ClientPhase".to_owned() };
        let mut env = vec![("EVENT_TRIGGER", trigger.as_str()), ("EVENT_SNAPSHOT", pattern.to_str().unwrap())];
        if small {
            env.push(("EVENT_BUFSIZE", "256k"));
        }
        let ring_path = d.join("flat.ring");
        if file {
            env.push(("EVENT_RING", ring_path.to_str().unwrap()));
        }
        let output = program(CHILD, &["flat", &n.to_string(), &at.to_string()], &env).output().unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        let snapshot = d.join("s-1.evt");
        let r = read(&snapshot);
        assert_eq!(r.phases, [at], "{name}: the trigger event");
        let numbers = &r.numbers[&0];
        let before = numbers.iter().filter(|&&i| i <= at).count() as u64;
        assert!(numbers.windows(2).all(|p| p[1] == p[0] + 1), "{name}: consecutive");
        assert!(numbers[0] > 0 && numbers.contains(&at), "{name}: from {} to {at}", numbers[0]);
        // At 24 bytes an event, a thread's fair share of 16 MiB (8 MiB, less what the other
        // thread still held) is some 300 000 events, a sixteenth of 16 MiB 40 000. Of 256 KiB
        // (4 blocks, shared with the writer thread's ring of `ClockSync` events), a thread may
        // hold one block: the trigger's part of it is all its ring has before the trigger.
        let least = if small { 0 } else { 100_000 };
        assert!(before > least, "{name}: {before} events before the trigger");
        assert!(numbers.contains(&at), "{name}: the event before the trigger");
        let after = numbers.iter().filter(|&&i| i > at).count() as u64;
        assert!(after >= post, "{name}: {after} events after the trigger, post={post}");
        let trigger_at = r.order.iter().position(|e| e.0 == u64::MAX).unwrap();
        assert_eq!(r.order[trigger_at - 1], (0, at), "{name}: in its place");
        assert_whole(&snapshot, "triggered by Client.ClientPhase");
    }
}

/// A service streams into segments under a small budget (`EVENT_ROTATE=64k EVENT_KEEP=3`),
/// with a trigger and a pin: the snapshot, read back from the segments while they were
/// there, holds the trigger, the window before it and its `post=` events, whole, after the
/// budget deleted the trigger's segment; and the last segment alone (every segment) shows the
/// pinned event recorded in the first, with its thread's name.
#[test]
fn a_service_streaming_segments_keeps_its_incident_and_its_pins() {
    let d = dir("snapshots", "service");
    let base = d.join("trace.evt");
    let incidents = d.join("incidents");
    std::fs::create_dir(&incidents).unwrap();
    let pattern = incidents.join("s-%s.evt");
    let env = [
        ("EVENT_FILE", base.to_str().unwrap()),
        // `wait` gives up after 100 ms and counts what it drops; the writer thread is niced,
        // and on a loaded machine (CI, the suite's own threads) it may be starved longer than
        // that, which this test is not about: every segment must be whole, so it waits long.
        ("EVENT_POLICY", "wait=30s"),
        ("EVENT_BUFSIZE", "256k"),
        ("EVENT_ROTATE", "64k"),
        ("EVENT_KEEP", "3"),
        // Blocks whole: the budget must delete the trigger's segment, so the events must fill
        // more than three segments, which 60 000 events packed by a writer that keeps up
        // (about 4 bytes each) do not; how many blocks a writer packs is its timing's.
        ("EVENT_PACK", "off"),
        ("EVENT_TRIGGER", "Client:ClientPhase if phase == incident, post=200"),
        ("EVENT_SNAPSHOT", pattern.to_str().unwrap()),
        ("EVENT_PIN", "Pool:PoolInit"),
    ];
    let (n, at) = (60_000u64, 20_000u64);
    let output = program(CHILD, &["service", &n.to_string(), &at.to_string()], &env).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stderr), "", "nothing said");

    // The snapshot: the trigger, its window before, its post=200 events after, whole.
    let snapshot = incidents.join("s-1.evt");
    let r = read(&snapshot);
    assert_eq!(r.snapshot.cause, SnapshotCause::Event);
    assert_eq!(r.phases, [at], "the trigger event");
    let numbers = &r.numbers[&0];
    assert!(numbers.windows(2).all(|p| p[1] == p[0] + 1), "consecutive");
    let before = numbers.iter().filter(|&&i| i <= at).count();
    let after = numbers.iter().filter(|&&i| i > at).count();
    assert!(before > 1000, "{before} events before the trigger");
    assert!(after >= 200, "{after} events after the trigger, post=200");
    let trigger_at = r.order.iter().position(|e| e.0 == u64::MAX).unwrap();
    assert_eq!(r.order[trigger_at - 1], (0, at), "in its place");
    assert_whole(&snapshot, "triggered by Client.ClientPhase");

    // The budget deleted the trigger's segment (and more): no segment left holds it.
    let mut segments: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "evt"))
        .collect();
    segments.sort();
    assert!(segments.len() <= 4, "the budget: {segments:?}");
    let first = segments[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(first != "trace.000000.evt", "the first segments were deleted: {segments:?}");
    for segment in &segments {
        let bytes = std::fs::read(segment).unwrap();
        let mut decoder = Decoder::new(&bytes[..]).unwrap();
        let catalog = Catalog::new(&decoder.header().sets);
        let (mut config, mut incident, mut names) = (0, 0, BTreeMap::new());
        let mut pool_threads = Vec::new();
        while let Some(block) = decoder.next_block() {
            let block = block.unwrap();
            for entry in block.entries(&catalog) {
                let Entry::Event(e) = entry else { continue };
                let values: Vec<Value<'_>> = e.values().collect();
                match (e.desc.name.as_str(), values.as_slice()) {
                    ("PoolInit", [_, _, Value::Str(class), Value::Unsigned(42)]) if class.bytes == b"config" => {
                        config += 1;
                        pool_threads.push(e.thread);
                    }
                    ("ClientPhase", _) => incident += 1,
                    ("ThreadName", [Value::Word(t), Value::Str(s)]) => {
                        names.insert(*t, String::from_utf8_lossy(s.bytes).into_owned());
                    }
                    _ => {}
                }
            }
        }
        assert_eq!(incident, 0, "{}: the trigger's segment is gone", segment.display());
        assert_eq!(config, 1, "{}: the pinned event, once", segment.display());
        assert_eq!(names.get(&pool_threads[0]).map(String::as_str), Some("main"), "its thread named");
        let check = dump(&["check", segment.to_str().unwrap()]);
        assert_eq!(check.status.code(), Some(0), "{}: {}", segment.display(), text(&check.stdout));
    }
}

/// Two threads record flat out under `ring` with the default 16 MiB: their rings share the
/// whole buffer, and hold more than 12 MiB between them at the stop (not the 2 × 512 KiB of
/// rings that each took a 32nd of it), in memory (the stop writes them to the event file) and
/// in a ring file.
#[test]
fn two_threads_rings_share_the_whole_buffer() {
    let (n, never) = (1_500_000u64, u64::MAX - 1);
    for file in [false, true] {
        let d = dir("snapshots", if file { "share-file" } else { "share-heap" });
        let out = d.join(if file { "rings.ring" } else { "rings.evt" });
        let variable = if file { "EVENT_RING" } else { "EVENT_FILE" };
        let env = [(variable, out.to_str().unwrap())];
        let output = program(CHILD, &["flat", &n.to_string(), &never.to_string()], &env).output().unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        // Blocks per thread, as a reader reads the stop's stream or the ring file.
        let mut blocks = BTreeMap::<u64, u64>::new();
        let bytes = std::fs::read(&out).unwrap();
        let block_size = if file {
            use event_format::decode::BlockSource;
            let reader = event_format::ring::RingReader::open(&bytes[..], Default::default()).unwrap();
            let block_size = reader.header().block_size;
            let mut source = event_format::ring::RingBlocks::new(reader);
            while let Some(block) = source.next_block() {
                *blocks.entry(block.unwrap().header.thread).or_default() += 1;
            }
            block_size
        } else {
            let mut decoder = Decoder::new(&bytes[..]).unwrap();
            let block_size = decoder.header().block_size;
            while let Some(block) = decoder.next_block() {
                *blocks.entry(block.unwrap().header.thread).or_default() += 1;
            }
            block_size
        };
        // The two workers' rings: the two threads that hold the most.
        let mut held: Vec<u64> = blocks.iter().filter(|(t, _)| **t != 0).map(|(_, b)| *b).collect();
        held.sort_unstable();
        let workers: u64 = held.iter().rev().take(2).sum();
        let bytes_held = workers * u64::from(block_size);
        assert!(bytes_held > 12 << 20, "file={file}: the two rings held {bytes_held} bytes: {blocks:?}");
    }
}

/// A trigger alone asks for a recording (`event_runtime::start` with `EVENT_POLICY=ring`,
/// `EVENT_TRIGGER` and `EVENT_SNAPSHOT`, nothing else): it records, the trigger fires, the
/// snapshot is there, and nothing is said. A trigger or a pin that cannot take effect (the
/// selection records none of its events; snapshots into a directory that does not exist) is
/// said in one line each, and the program runs.
#[test]
fn a_trigger_alone_records_and_one_that_cannot_fire_is_said() {
    let d = dir("snapshots", "alone");
    let pattern = d.join("s-%s.evt");
    let trigger = ("EVENT_TRIGGER", "Client:ClientPhase if phase == incident");
    let env = [("EVENT_POLICY", "ring"), trigger, ("EVENT_SNAPSHOT", pattern.to_str().unwrap())];
    let output = program(CHILD, &["service", "2000", "1000"], &env).current_dir(&*d).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stderr), "", "nothing said");
    assert_eq!(read(&d.join("s-1.evt")).phases, [1000], "the trigger fired");

    let missing = d.join("no-such-dir").join("s-%s.evt");
    let env = [
        ("EVENT_POLICY", "ring"),
        ("EVENT_CONTROL", "Arena"),
        trigger,
        ("EVENT_PIN", "Pool:PoolInit"),
        ("EVENT_SNAPSHOT", missing.to_str().unwrap()),
    ];
    let output = program(CHILD, &["service", "2000", "1000"], &env).current_dir(&*d).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let said = text(&output.stderr);
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines.len(), 3, "{said}");
    assert!(
        lines[0].contains("EVENT_TRIGGER")
            && lines[0].contains("cannot fire")
            && lines[0].contains("Client:ClientPhase"),
        "{said}"
    );
    assert!(lines[1].contains("EVENT_PIN") && lines[1].contains("Pool:PoolInit"), "{said}");
    assert!(lines[2].contains("EVENT_SNAPSHOT") && lines[2].contains("not a directory"), "{said}");
}

/// A trigger in a hot loop: `every=10` takes the 1st, 11th, ... of 95 matches, 10 snapshots,
/// each after the first counting the 9 declined before it, and the stop says the 4 declined
/// after the last; `every=once` takes one and the stop says the 94 others.
#[test]
fn a_rate_policy_takes_exactly_the_allowed_snapshots_and_counts_the_rest() {
    for (every, taken, after) in [("every=10", 10u32, 4u64), ("every=once", 1, 94)] {
        let d = dir("snapshots", &format!("hot-{}", &every[6..]));
        let pattern = d.join("hot-%s.evt");
        let trigger = format!("Client:ClientPhase, {every}");
        let env = [("EVENT_TRIGGER", trigger.as_str()), ("EVENT_SNAPSHOT", pattern.to_str().unwrap())];
        let output = program(CHILD, &["hot", "95"], &env).output().unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        let files = snapshots_in(&d);
        assert_eq!(files.len(), taken as usize, "{every}: {files:?}");
        let mut declined = 0;
        for n in 1..=taken {
            let r = read(&d.join(format!("hot-{n}.evt")));
            assert_eq!((r.snapshot.sequence, r.snapshot.cause), (n, SnapshotCause::Event));
            assert_eq!(r.snapshot.not_taken, if n == 1 { 0 } else { 9 }, "{every}: snapshot {n}");
            declined += r.snapshot.not_taken;
        }
        assert_eq!(u64::from(taken) + declined + after, 95);
        assert_eq!(
            text(&output.stderr),
            format!(
                "event-runtime: the trigger `{trigger}` matched {after} more times than its rate policy took snapshots\n"
            )
        );
    }
}

/// A condition that never matches takes no snapshot and says nothing.
#[test]
fn a_condition_that_never_matches_takes_nothing() {
    let d = dir("snapshots", "never");
    let pattern = d.join("never-%s.evt");
    let env =
        [("EVENT_TRIGGER", "Client:ClientPhase if step > 1000000"), ("EVENT_SNAPSHOT", pattern.to_str().unwrap())];
    let output = program(CHILD, &["hot", "1000"], &env).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stderr), "");
    assert!(snapshots_in(&d).is_empty());
}

/// A trigger that does not parse stops the start with one line naming the variable.
#[test]
fn a_bad_trigger_is_one_line_naming_the_variable() {
    let d = dir("snapshots", "bad");
    let env = [("EVENT_TRIGGER", "Client:NoSuchEvent, every=2/1s")];
    let output = program(CHILD, &["hot", "1"], &env).output().unwrap();
    assert!(!output.status.success());
    let err = text(&output.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("EVENT_TRIGGER") && err.contains("NoSuchEvent"), "{err}");
    assert!(snapshots_in(&d).is_empty());
}

/// The disk fills while a snapshot is written: what was written is removed (the file is the
/// snapshot's own), the error says so, and the recording goes on and stops cleanly.
#[test]
fn a_snapshot_cut_short_by_a_full_disk_is_removed_and_the_recording_goes_on() {
    let d = dir("snapshots", "full");
    let out = d.join("cut.evt");
    // 8000 bytes: less than the snapshot's 7590 events take packed (since format 2.1, zstd over
    // columns, they fit in the 40 000 bytes this test allowed before), more than its header.
    let output = program(CHILD, &["full", "8000", out.to_str().unwrap()], &[]).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let said = text(&output.stdout);
    assert!(
        said.contains(&format!("no snapshot: the snapshot {} was not written whole and is removed", out.display())),
        "{said}"
    );
    assert!(said.ends_with("stopped\n"), "{said}");
    assert!(!out.exists(), "the cut snapshot is removed");
}

/// `EVENT_TRIGGER=panic`: the panicking thread writes the snapshot in the panic hook, with
/// its events up to the panic; `lost`: a thread that finds no ring-file slot loses its events,
/// and the snapshot (of the ring file) says it was triggered by the loss.
#[test]
fn a_panic_and_lost_events_are_triggers() {
    let d = dir("snapshots", "panic");
    let pattern = d.join("p-%s.evt");
    let env = [("EVENT_TRIGGER", "panic"), ("EVENT_SNAPSHOT", pattern.to_str().unwrap())];
    let output = program(CHILD, &["panic"], &env).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(snapshots_in(&d), [d.join("p-1.evt")]);
    let r = read(&d.join("p-1.evt"));
    assert_eq!(r.snapshot.cause, SnapshotCause::Panic);
    assert_eq!(r.numbers[&0], (0..100).collect::<Vec<u64>>(), "worker-0's events up to its panic");
    assert!(!r.numbers.contains_key(&1), "taken at the panic, before the main thread's event");
    assert_whole(&d.join("p-1.evt"), "triggered by a panic");

    let d = dir("snapshots", "lost");
    let pattern = d.join("l-%s.evt");
    let ring = d.join("one-slot.ring");
    let env = [("EVENT_TRIGGER", "lost, every=once"), ("EVENT_SNAPSHOT", pattern.to_str().unwrap())];
    let output = program(CHILD, &["lost", ring.to_str().unwrap()], &env).output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let files: Vec<_> = snapshots_in(&d).into_iter().filter(|p| p.extension().is_some_and(|e| e == "evt")).collect();
    assert_eq!(files, [d.join("l-1.evt")]);
    let r = read(&d.join("l-1.evt"));
    assert_eq!(r.snapshot.cause, SnapshotCause::Lost);
    assert_eq!(r.numbers[&0], (0..10).collect::<Vec<u64>>(), "the main thread's events, in the ring file");
    assert!(!r.numbers.contains_key(&1), "worker-1's were lost");
    let stats = text(&dump(&["stats", d.join("l-1.evt").to_str().unwrap()]).stdout);
    assert!(stats.contains("triggered by lost events"), "{stats}");
}

/// `EVENT_PIN`: a configuration event that the thread's ring overwrote long ago is in the
/// snapshot, in a block of its thread just below the ring's oldest, and the snapshot is whole;
/// without the pin it is gone.
#[test]
fn a_pinned_event_outlives_its_ring_in_every_snapshot() {
    for (pin, kept) in [(Some("Client:ClientPhase"), true), (None, false)] {
        let d = dir("snapshots", if kept { "pin" } else { "no-pin" });
        let out = d.join("s.evt");
        let env: Vec<(&str, &str)> = pin.map(|p| ("EVENT_PIN", p)).into_iter().collect();
        let output = program(CHILD, &["pin", out.to_str().unwrap()], &env).output().unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        let r = read(&out);
        let numbers = &r.numbers[&0];
        assert!(numbers[0] > 0, "the ring went round");
        assert_eq!(*numbers.last().unwrap(), 19_999);
        assert!(numbers.windows(2).all(|p| p[1] == p[0] + 1), "consecutive");
        if kept {
            assert_eq!(r.phases, [42], "the pinned event");
            assert_eq!(r.order[0], (u64::MAX, 42), "before the ring's events");
        } else {
            assert!(r.phases.is_empty(), "overwritten with the ring: {:?}", r.phases);
        }
        assert_whole(&out, "taken on demand");
    }
}

/// `EVENT_PIN` with a ring file: the pinned events (and the name of the thread that recorded
/// them) that the thread's ring overwrote many times over are in the file's pin area, and a
/// reader of the file after a `kill -9` puts them back, whole, in a block of their thread just
/// below its ring's oldest: `print` shows them first, under the thread's name, and `check`
/// judges the file as it judges a ring file without pins. Without the pin they are gone.
#[test]
fn pinned_events_outlive_their_ring_in_the_ring_file_after_a_kill() {
    for (pin, kept) in [(Some("Client:ClientPhase"), true), (None, false)] {
        let d = dir("snapshots", if kept { "pin-ring" } else { "no-pin-ring" });
        let ring = d.join("r.ring");
        let env: Vec<(&str, &str)> = pin.map(|p| ("EVENT_PIN", p)).into_iter().collect();
        let mut child = crate::common::start_ready(program(CHILD, &["pin-ring", ring.to_str().unwrap()], &env));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let r = ring.to_str().unwrap();
        let print = dump(&["print", r]);
        let lines = text(&print.stdout);
        assert!(print.status.success(), "{lines}{}", text(&print.stderr));
        let phases: Vec<&str> = lines.lines().filter(|l| l.contains("ClientPhase")).collect();
        let destroys: Vec<&str> = lines.lines().filter(|l| l.contains("ArenaDestroy")).collect();
        assert!(destroys.len() < 40_000 && destroys.last().unwrap().contains("39999"), "the ring went round");
        let stats = dump(&["stats", r]);
        let stats = text(&stats.stdout);
        if kept {
            assert_eq!(phases.len(), 2, "both pinned events: {phases:?}");
            assert!(phases[0].contains("phase=\"config\" step=42 delta=0"), "{phases:?}");
            assert!(phases[1].contains("phase=\"phase\" step=7 delta=1"), "{phases:?}");
            let first_event = lines.lines().find(|l| l.contains("ClientPhase") || l.contains("ArenaDestroy")).unwrap();
            assert!(first_event.contains("ClientPhase"), "before the ring's events: {first_event}");
            assert!(stats.contains("worker-0"), "the thread is named: {stats}");
        } else {
            assert!(phases.is_empty(), "overwritten with the ring: {phases:?}");
        }
        // Judged as any ring file killed while recording: its rings overwritten (normal), and
        // not stopped cleanly, its one problem; the pinned block is no gap and no damage.
        let check = dump(&["check", r]);
        let out = text(&check.stdout);
        assert_eq!(check.status.code(), Some(1), "{r}: {out}{}", text(&check.stderr));
        assert!(out.contains("overwritten: ") && out.contains("not stopped cleanly"), "{out}");
        assert!(out.ends_with("  NOT whole: 1 problem\n") && !out.contains("damaged"), "{out}");
    }
}

/// A pin area that the file system cannot hold (here the process's file size limit lets the
/// ring file's slots be allocated, not its pin area) costs the pins kept in the file, said
/// in one line, never the ring file: the recording goes on into it, without a pin area.
#[test]
fn a_pin_area_the_disk_cannot_hold_costs_the_pins_not_the_ring_file() {
    let d = dir("snapshots", "pin-area-full");
    let env = [("EVENT_PIN", "Client:ClientPhase")];
    // The layout the child makes, from a first run without a limit.
    let sized = d.join("sized.ring");
    let mut child = start_ready(program(CHILD, &["pin-ring", sized.to_str().unwrap()], &env));
    child.kill().unwrap();
    child.wait().unwrap();
    let bytes = std::fs::read(&sized).unwrap();
    let layout = event_format::ring::Layout::decode(&bytes, false).unwrap();
    assert!(layout.pin_half > 0 && layout.file_len() > layout.data_end(), "{layout:?}");
    let ring = d.join("r.ring");
    let limit = layout.data_end().to_string();
    let mut c = program(CHILD, &["pin-ring", ring.to_str().unwrap(), &limit], &env);
    c.stderr(std::process::Stdio::piped());
    let mut child = start_ready(c);
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert!(stderr.contains("keeps no pinned events: cannot allocate its pin area"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    let r = ring.to_str().unwrap();
    let head = std::fs::read(&ring).unwrap();
    let written = event_format::ring::Layout::decode(&head, false).unwrap();
    assert_eq!((written.pin_half, head.len() as u64), (0, layout.data_end()), "a ring file without a pin area");
    let print = dump(&["print", r]);
    let lines = text(&print.stdout);
    assert!(print.status.success(), "{lines}");
    assert!(lines.lines().rfind(|l| l.contains("ArenaDestroy")).unwrap().contains("39999"), "recorded");
    let stats = text(&dump(&["stats", r]).stdout);
    assert!(!stats.contains("pin area"), "{stats}");
}
