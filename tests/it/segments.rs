//! A recording written as segments (`EVENT_ROTATE`, `EVENT_KEEP`; docs/FORMAT.md,
//! "Segments"), by real child processes (`recorder-child`), read back from the directory one
//! segment at a time with event-format alone: rotation by size and on demand (the API and
//! `event-dump control --rotate`), names that sort, no `.open` file left, each sealed segment
//! whole and readable alone with every thread name and label; the budget; a full disk
//! (`RLIMIT_FSIZE`) with the stop marker's cause and count; a forked child that returns from
//! `main` while its parent records segments.

use crate::common::{DUMP, child, start_ready};
use event_format::builtin;
use event_format::decode::{Catalog, Decoder, Entry};
use event_format::ledger::{Ending, Ledger};
use event_format::wire::{Segment, Stop, StopCause, Value};
use event_tests::{NUMBERED, Numbered, numbered};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn dir(name: &str) -> crate::common::Scratch {
    crate::common::dir("segments", name)
}

/// One segment, read alone.
#[derive(Debug)]
struct Read {
    segment: Segment,
    /// The stop marker (the stream ended with one; its counts agree with what was read).
    stop: Stop,
    numbered: Numbered,
    /// Thread names by thread id, as its `ThreadName` records say.
    names: BTreeMap<u64, String>,
    /// Labels: address -> text (through its interned string).
    labels: BTreeMap<u64, String>,
    /// Records read, as the marker counts them.
    records: u64,
}

/// Reads the segment at `path` alone: its header has the segment property, its blocks are
/// whole and each thread's numbers run from 0 without a gap, and it ends with a stop marker
/// whose counts agree with what was read.
fn read(path: &Path) -> Read {
    let bytes = std::fs::read(path).unwrap();
    let numbered = numbered(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for (thread, first) in &numbered.first_block {
        assert_eq!(*first, 0, "{}: thread {thread}'s blocks restart at 0", path.display());
    }
    let mut decoder = Decoder::new(&bytes[..]).unwrap();
    let header = decoder.header().clone();
    let segment = header.properties.segment.unwrap_or_else(|| panic!("{}: no segment property", path.display()));
    let catalog = Catalog::new(&header.sets);
    let mut ledger = Ledger::new(header.format);
    let (mut names, mut interned, mut labelled) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    while let Some(block) = decoder.next_block() {
        let block = block.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        ledger.block(&block);
        for entry in block.entries(&catalog) {
            ledger.entry(block.header.thread, block.header.sequence, &entry);
            let Entry::Event(e) = &entry else { continue };
            let values: Vec<Value<'_>> = e.values().collect();
            match (e.desc.code, &values[..]) {
                (builtin::THREAD_NAME, [Value::Word(t), Value::Str(s)]) => {
                    names.insert(*t, s.to_string_lossy().into_owned());
                }
                (builtin::INTERN, [Value::Word(id), Value::Str(s)]) => {
                    interned.insert(*id, s.to_string_lossy().into_owned());
                }
                (builtin::LABEL, [Value::Address(a), Value::Word(id)]) => {
                    labelled.insert(*a, *id);
                }
                _ => {}
            }
        }
    }
    assert_eq!(ledger.missing_blocks(), 0, "{}", path.display());
    let stop = match ledger.ending(|| false) {
        Ending::Clean(Some(stop)) => stop,
        other => panic!("{}: ends {other:?}, not with a stop marker", path.display()),
    };
    let marker = ledger.marker().unwrap();
    assert!(
        marker.agrees(),
        "{}: the marker's counts {:?} are what was read {:?}",
        path.display(),
        marker.written,
        marker.read
    );
    let labels = labelled
        .into_iter()
        .map(|(a, id)| {
            (a, interned.get(&id).cloned().unwrap_or_else(|| panic!("{}: label id {id} has no Intern", path.display())))
        })
        .collect();
    Read { segment, stop, numbered, names, labels, records: marker.read.events }
}

/// The directory's entries, by name.
fn listing(d: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// The sealed segments of `trace.evt` in `d`, in name order, after checking that nothing else
/// is there (no `.open` file left) and that the names carry consecutive numbers.
fn sealed(d: &Path) -> Vec<PathBuf> {
    let names = listing(d);
    let mut numbers = Vec::new();
    for name in &names {
        let n = name
            .strip_prefix("trace.")
            .and_then(|r| r.strip_suffix(".evt"))
            .filter(|n| n.len() == 6)
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{name}: not a sealed segment's name ({names:?})"));
        numbers.push(n);
    }
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "consecutive numbers: {names:?}");
    names.iter().map(|n| d.join(n)).collect()
}

fn run(mut c: Command) -> Output {
    let out = c.output().unwrap();
    assert!(out.status.success(), "the child exits 0: {:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    out
}

fn numbers(read: &Read, worker: u64) -> Vec<u64> {
    read.numbered.by_worker.get(&worker).cloned().unwrap_or_default()
}

#[test]
fn rotation_by_size_seals_segments_that_each_read_alone_with_every_name() {
    let d = dir("size");
    let base = d.join("trace.evt");
    let n = 200_000u64;
    run(child(
        &["go-on", &n.to_string()],
        &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "256k"), ("EVENT_PACK", "off")],
    ));
    let paths = sealed(&d);
    assert!(paths.len() >= 10, "200000 events of 24 bytes make more than ten segments of 256k: {}", paths.len());
    let mut all = Vec::new();
    let mut main_thread = None;
    for (i, path) in paths.iter().enumerate() {
        let r = read(path);
        assert_eq!(r.segment.index, i as u64, "{}", path.display());
        assert_eq!((r.segment.removed_segments, r.segment.lost_between), (0, 0));
        let last = i + 1 == paths.len();
        let cause = if last { StopCause::Stopped } else { StopCause::Rotated };
        assert_eq!((r.stop.cause, r.stop.unwritten), (cause, 0), "{}", path.display());
        // A block is never split: a sealed segment reaches the size by less than a block more.
        let len = std::fs::metadata(path).unwrap().len();
        assert!(len <= (256 << 10) + 2 * (64 << 10), "{}: {len} bytes", path.display());
        // The last segment may hold no numbered event: its marker, and the names of the
        // threads whose blocks it holds (every one of them).
        if let Some(&thread) = r.numbered.thread_of.get(&0) {
            assert_eq!(*main_thread.get_or_insert(thread), thread);
        }
        let main = main_thread.expect("the first segment holds events");
        if r.numbered.first_block.contains_key(&main) {
            assert_eq!(
                r.names.get(&main).map(String::as_str),
                Some("main"),
                "{}: the main thread's name",
                path.display()
            );
        }
        for thread in r.numbered.first_block.keys().filter(|&&t| t != 0) {
            assert!(r.names.contains_key(thread), "{}: thread {thread} holds blocks and is not named", path.display());
        }
        all.extend(numbers(&r, 0));
    }
    assert_eq!(all, (0..n).collect::<Vec<_>>(), "every event once, in order, across the segments");
}

#[test]
fn rotation_on_demand_starts_a_segment_with_every_name_and_label() {
    let d = dir("demand");
    let base = d.join("trace.evt");
    let out = run(child(&["rotate", "1000", "3"], &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1h")]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("rotated ")).collect::<Vec<_>>(),
        ["rotated 1", "rotated 2", "rotated 3"]
    );
    let paths = sealed(&d);
    assert_eq!(paths.len(), 4, "{:?}", listing(&d));
    let (mut main, mut worker) = (Vec::new(), Vec::new());
    for (i, path) in paths.iter().enumerate() {
        let r = read(path);
        assert_eq!(r.segment.index, i as u64);
        // Each turn's events are flushed before the rotation: each segment holds its own turn.
        assert_eq!(numbers(&r, 0).len(), 1000, "{}", path.display());
        assert_eq!(numbers(&r, 1).len(), 1000, "{}", path.display());
        let names: Vec<&str> = r.names.values().map(String::as_str).collect();
        assert!(names.contains(&"main") && names.contains(&"worker-1"), "{}: {names:?}", path.display());
        assert_eq!(r.labels.get(&0x7f3a_0000_1000).map(String::as_str), Some("tour arena"), "{}", path.display());
        main.extend(numbers(&r, 0));
        worker.extend(numbers(&r, 1));
    }
    assert_eq!(main, (0..4000).collect::<Vec<_>>());
    assert_eq!(worker, (0..4000).collect::<Vec<_>>());
}

#[test]
fn rotation_by_age_seals_a_segment_a_second() {
    let d = dir("age");
    let base = d.join("trace.evt");
    let mut c =
        start_ready(child(&["record-hold", "100"], &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1s")]));
    // The writer looks at the segment's age every 20 ms: after 2.5 s, two were sealed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !d.join("trace.000001.evt").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    c.stdin.take().unwrap().write_all(b"\n").unwrap();
    assert!(c.wait().unwrap().success());
    let paths = sealed(&d);
    assert!(paths.len() >= 3, "{:?}", listing(&d));
    let worker: Vec<u64> = paths.iter().flat_map(|p| numbers(&read(p), 1)).collect();
    assert_eq!(worker, (0..worker.len() as u64).collect::<Vec<_>>(), "the worker's events, once each, in order");
}

/// An idle program seals no segments for their age alone: after its 100 events, written in
/// the first segment, it records nothing for 4 s with `EVENT_ROTATE=1s`, and the directory
/// holds that segment sealed and one open (it sealed a segment of thread names every second).
#[test]
fn an_idle_program_seals_no_empty_segments() {
    let d = dir("idle");
    let base = d.join("trace.evt");
    let mut c =
        start_ready(child(&["go-on-hold", "100"], &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1s")]));
    // Its events reach the file within 2 s (an idle thread's block), then a second more.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !d.join("trace.000000.evt").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_secs(4));
    let during = listing(&d);
    c.stdin.take().unwrap().write_all(b"\n").unwrap();
    assert!(c.wait().unwrap().success());
    assert_eq!(during, ["trace.000000.evt", "trace.000001.evt.open"], "one sealed, one open");
    let events: usize = sealed(&d).iter().map(|p| numbers(&read(p), 0).len()).sum();
    assert_eq!(events, 100, "{:?}", listing(&d));
}

#[test]
fn sealed_segments_taken_by_a_shipper_are_said_once_and_recording_goes_on() {
    let d = dir("shipped");
    let shipped = dir("shipped-away");
    let base = d.join("trace.evt");
    let mut command = child(
        &["record-hold", "100"],
        &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1s"), ("EVENT_KEEP", "1")],
    );
    command.stderr(std::process::Stdio::piped());
    let mut c = start_ready(command);
    // A shipper: every sealed segment is moved away as soon as it appears, until four were.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut moved = Vec::new();
    while moved.len() < 4 && std::time::Instant::now() < deadline {
        for name in listing(&d) {
            if !name.ends_with(".open") {
                std::fs::rename(d.join(&name), shipped.join(&name)).unwrap();
                moved.push(name);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    c.stdin.take().unwrap().write_all(b"\n").unwrap();
    let out = c.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(moved.len(), 4, "{moved:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("removed or renamed by someone else")).collect();
    assert_eq!(said.len(), 1, "said once: {stderr}");
    // Nothing the shipper took was counted as the budget's, and every segment is whole.
    let mut all: Vec<PathBuf> = moved.iter().map(|n| shipped.join(n)).collect();
    all.extend(sealed(&d));
    let mut worker = Vec::new();
    for path in &all {
        let r = read(path);
        assert_eq!(r.segment.removed_segments, 0, "{}", path.display());
        worker.extend(numbers(&r, 1));
    }
    assert_eq!(worker, (0..worker.len() as u64).collect::<Vec<_>>(), "the worker's events, once each, in order");
}

#[test]
fn the_control_command_rotates_a_running_program() {
    let d = dir("control");
    let base = d.join("trace.evt");
    let ring = d.join("trace.ring");
    let mut c = start_ready(child(
        &["record-hold", "100"],
        &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_RING", ring.to_str().unwrap()), ("EVENT_ROTATE", "1h")],
    ));
    let out = Command::new(DUMP).args(["control", ring.to_str().unwrap(), "--rotate"]).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{said}");
    assert!(said.starts_with("segment 0 is being sealed"), "{said}");
    // Sealed by the writer thread: trace.000000.evt appears.
    let first = d.join("trace.000000.evt");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !first.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(first.exists(), "{:?}", listing(&d));
    c.stdin.take().unwrap().write_all(b"\n").unwrap();
    assert!(c.wait().unwrap().success());
    std::fs::remove_file(&ring).unwrap();
    let paths = sealed(&d);
    assert_eq!(paths.len(), 2, "{:?}", listing(&d));
    let (a, b) = (read(&paths[0]), read(&paths[1]));
    assert_eq!((a.stop.cause, b.stop.cause), (StopCause::Rotated, StopCause::Stopped));
    let main: Vec<u64> = numbers(&a, 0).into_iter().chain(numbers(&b, 0)).collect();
    assert_eq!(main, (0..200).collect::<Vec<_>>(), "the main thread's events, once each");
}

#[test]
fn the_budget_keeps_the_newest_segments_and_counts_what_it_deleted() {
    let d = dir("budget");
    let base = d.join("trace.evt");
    let n = 300_000u64;
    run(child(
        &["go-on", &n.to_string()],
        &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "128k"), ("EVENT_KEEP", "3"), ("EVENT_PACK", "off")],
    ));
    let paths = sealed(&d);
    // Three sealed segments, and the last one, sealed at the stop: the budget deletes when a
    // next segment follows to count the deletion.
    assert_eq!(paths.len(), 4, "EVENT_KEEP=3 keeps three sealed segments and the last: {:?}", listing(&d));
    let reads: Vec<Read> = paths.iter().map(|p| read(p)).collect();
    let last = &reads[3];
    assert!(last.segment.index >= 10, "many segments were written: {}", last.segment.index);
    // The budget deleted the oldest ones: every index before the first kept one.
    assert_eq!(reads[0].segment.index, last.segment.removed_segments);
    let kept: Vec<u64> = reads.iter().flat_map(|r| numbers(r, 0)).collect();
    let first = kept[0];
    assert_eq!(kept, (first..n).collect::<Vec<_>>(), "the newest events, every one");
    // What the deleted segments accounted for: at least the numbered events before `first`,
    // and the records of every segment count the same way (each segment's own accounting).
    assert!(
        last.segment.removed_events >= first,
        "{} removed events, {first} numbered ones",
        last.segment.removed_events
    );
    for r in &reads {
        assert_eq!(r.stop.events, r.records);
        assert_eq!(r.segment.lost_between, 0);
    }
    // Each kept segment counts the deletions made before it started: never fewer later.
    assert!(reads.windows(2).all(|w| w[0].segment.removed_segments <= w[1].segment.removed_segments));
}

#[test]
fn a_full_disk_ends_the_event_file_with_a_marker_that_says_so_and_counts_the_rest() {
    let d = dir("full-file");
    let path = d.join("trace.evt");
    let n = 200_000u64;
    // 256 KiB: the header, two blocks of 64 KiB and the room kept for the stop block fit.
    let out = run(child(
        &["fsize", "262144", &n.to_string()],
        &[("EVENT_FILE", path.to_str().unwrap()), ("EVENT_PACK", "off"), ("EVENT_BUFSIZE", "1m")],
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(lines[0].contains("no room on the disk for the event file"), "{}", lines[0]);
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() as u64 <= 262144);
    let mut decoder = Decoder::new(&bytes[..]).unwrap();
    let catalog = Catalog::new(&decoder.header().sets);
    let mut ledger = Ledger::new(decoder.header().format);
    let mut written = Vec::new();
    while let Some(block) = decoder.next_block() {
        let block = block.expect("every block whole");
        ledger.block(&block);
        for entry in block.entries(&catalog) {
            ledger.entry(block.header.thread, block.header.sequence, &entry);
            if let Entry::Event(e) = &entry
                && e.desc.code == NUMBERED
                && let Some(Value::Word(i)) = e.values().nth(1)
            {
                written.push(i);
            }
        }
    }
    let Ending::Clean(Some(stop)) = ledger.ending(|| false) else { panic!("no marker: {:?}", ledger.ending(|| false)) };
    assert!(ledger.marker().unwrap().agrees());
    assert_eq!(stop.cause, StopCause::DiskFull);
    let p = written.len() as u64;
    assert_eq!(written, (0..p).collect::<Vec<_>>(), "a gap-free run from event 0");
    assert!(p > 0 && p < n, "{p} of {n} events written");
    // Every event not written is counted: in the marker's `unwritten`, or as lost in a block
    // written before (the writer fell behind). The excess is the writer thread's own records
    // (its name and a ClockSync a second), not numbered.
    let accounted = p + stop.lost + stop.unwritten;
    assert!(
        accounted >= n && accounted <= n + 16,
        "{p} written + {} lost + {} unwritten = {accounted}, of {n}",
        stop.lost,
        stop.unwritten
    );
    // `check` names the cause instead of a kill.
    let check = Command::new(DUMP).args(["check", path.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(!text.contains("killed"), "{text}");
}

#[test]
fn a_full_disk_seals_the_segment_and_the_next_counts_what_was_lost_between() {
    let d = dir("full-segments");
    let base = d.join("trace.evt");
    // The size limit is per file: each segment is full at 256 KiB, and the next one has room
    // again, as when the budget deleted a segment.
    let out = run(child(
        &["fsize", "262144", "400000"],
        &[
            ("EVENT_FILE", base.to_str().unwrap()),
            ("EVENT_ROTATE", "1m"),
            ("EVENT_PACK", "off"),
            ("EVENT_BUFSIZE", "1m"),
            ("EVENT_POLICY", "wait=1s"),
        ],
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no room on the disk for the segment"), "{stderr}");
    let paths = sealed(&d);
    assert!(paths.len() >= 2, "{:?}\n{stderr}", listing(&d));
    let reads: Vec<Read> = paths.iter().map(|p| read(p)).collect();
    assert_eq!(reads[0].stop.cause, StopCause::DiskFull);
    assert!(reads[0].stop.unwritten > 0);
    let mut accounted = 0;
    for r in &reads {
        accounted += r.stop.events + r.stop.lost + r.stop.unwritten + r.segment.lost_between;
    }
    assert!(reads[1..].iter().any(|r| r.segment.lost_between > 0), "a gap between segments is counted");
    let present: u64 = reads.iter().map(|r| numbers(r, 0).len() as u64).sum();
    assert!(present < 400_000);
    // Every numbered event is in a segment or counted; the rest are the recorder's records
    // (names repeated per segment, the writer's ClockSync).
    assert!(accounted >= 400_000, "{accounted} accounted for");
}

#[test]
fn a_forked_child_that_returns_from_main_while_recording_segments_exits_0() {
    let d = dir("fork");
    let base = d.join("trace.evt");
    let out = run(child(
        &["fork", base.to_str().unwrap(), "3", "3000", "file", "return"],
        &[("EVENT_BUFSIZE", "1m"), ("EVENT_ROTATE", "64k")],
    ));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find(|l| l.starts_with("child ")).unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(
        line.split_whitespace().nth(2),
        Some("0"),
        "the child exits 0: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    // The parent's segments are sealed and whole.
    let parents: Vec<PathBuf> =
        listing(&d).into_iter().filter(|n| n.starts_with("trace.") && n.ends_with(".evt")).map(|n| d.join(n)).collect();
    assert!(!parents.is_empty(), "{:?}", listing(&d));
    assert!(listing(&d).iter().all(|n| !n.ends_with(".open")), "{:?}", listing(&d));
    for p in &parents {
        read(p);
    }
}

/// The directory's total size in bytes, `.open` files included.
fn dir_bytes(d: &Path) -> u64 {
    std::fs::read_dir(d).map_or(0, |r| r.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum())
}

/// A number from the environment, or `default`.
fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The long run (issue 29): a service-like child records about a million events a second
/// (`SEGMENTS_LONG_RATE`) for a minute (`SEGMENTS_LONG_SECONDS`) into small segments under a
/// small budget. While it runs, the directory never holds more than the budget and one
/// segment; afterwards every sealed segment is whole, the events the budget removed, those
/// present and those counted lost are every event the child emitted, and the child's resident
/// memory and open descriptors did not grow from the first sealed segment to the last.
/// `#[ignore]`d so that `cargo test` stays short: `scripts/test` runs it as a step of its own
/// ("long run", `--ignored segments::a_long_run`), so CI runs it on every submission.
#[test]
#[ignore = "a minute long: scripts/test runs it explicitly"]
fn a_long_run_stays_within_its_budget_and_accounts_for_every_event() {
    use std::io::{BufRead, BufReader};
    let d = dir("long");
    let base = d.join("trace.evt");
    let (rate, seconds) = (env_number("SEGMENTS_LONG_RATE", 1_000_000), env_number("SEGMENTS_LONG_SECONDS", 60));
    const SEGMENT: u64 = 4 << 20;
    const BUDGET: u64 = 16 << 20;
    let mut c = child(
        &["steady", "4", &rate.to_string(), &seconds.to_string()],
        &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "4m"), ("EVENT_KEEP", "16m")],
    );
    let mut running = c.stdout(std::process::Stdio::piped()).spawn().unwrap();
    let stdout = BufReader::new(running.stdout.take().unwrap());
    // Read on a thread of its own: the directory is sampled here meanwhile.
    let lines = std::thread::spawn(move || stdout.lines().map_while(Result::ok).collect::<Vec<String>>());
    let (mut dir_samples, mut largest) = (0u64, 0u64);
    while running.try_wait().unwrap().is_none() {
        let bytes = dir_bytes(&d);
        largest = largest.max(bytes);
        // The budget and one segment (a segment reaches its size by less than a block more).
        assert!(bytes <= BUDGET + SEGMENT + 2 * (64 << 10), "{bytes} bytes in the directory: {:?}", listing(&d));
        dir_samples += 1;
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(running.wait().unwrap().success());
    let lines = lines.join().unwrap();
    assert!(dir_samples > 10 && largest > BUDGET / 2, "{dir_samples} samples, at most {largest} bytes");
    let emitted: u64 = lines
        .iter()
        .filter_map(|l| l.strip_prefix("emitted "))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(emitted > rate * seconds / 2, "the child emitted {emitted} events");
    let samples: Vec<(u64, u64)> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("sample "))
        .map(|l| {
            let mut v = l.split_whitespace().map(|x| x.parse::<u64>().unwrap());
            (v.next().unwrap(), v.next().unwrap())
        })
        .collect();
    // From five seconds in (the first segments sealed, every buffer touched) to the end.
    let steady = &samples[samples.len().min(5)..];
    let (first, last) = (steady.first().unwrap(), steady.last().unwrap());
    assert_eq!(first.1, last.1, "open descriptors, first and last: {samples:?}");
    assert!(last.0 <= first.0 + 8 * 1024, "resident KiB grew from {} to {}: {samples:?}", first.0, last.0);
    let paths = sealed(&d);
    let reads: Vec<Read> = paths.iter().map(|p| read(p)).collect();
    let last_read = reads.last().unwrap();
    assert!(last_read.segment.removed_segments > 0, "the budget deleted segments");
    // Every worker's events present form one run, up to the last it emitted; the ones before
    // the run were in segments the budget removed.
    let mut removed_numbered = 0;
    let mut present = 0;
    for w in 0..4u64 {
        let ns: Vec<u64> = reads.iter().flat_map(|r| numbers(r, w)).collect();
        assert!(ns.windows(2).all(|p| p[1] > p[0]), "worker {w}: in order, no repeat");
        removed_numbered += ns.first().copied().unwrap_or(0);
        present += ns.len() as u64;
    }
    let lost: u64 = reads.iter().map(|r| r.stop.lost + r.stop.unwritten + r.segment.lost_between).sum();
    assert_eq!(
        removed_numbered + present + lost,
        emitted,
        "removed {removed_numbered} + present {present} + lost {lost}"
    );
    assert!(last_read.segment.removed_events >= removed_numbered);
    println!(
        "long run: {emitted} events in {seconds} s; {} segments, {} removed by the budget ({removed_numbered} numbered \
         events); {present} present, {lost} counted lost; the directory at most {largest} bytes ({dir_samples} \
         samples); resident {} -> {} KiB, {} -> {} descriptors",
        last_read.segment.index + 1,
        last_read.segment.removed_segments,
        first.0,
        last.0,
        first.1,
        last.1
    );
}

/// `EVENT_POLICY=ring` writes the event file once, at the stop: there is nothing to cut into
/// segments while the program runs (rotation by size never came, rotation by age made empty
/// segments). The two together are refused at the start, as a bad value is: one line naming
/// both variables, no recording, no file.
#[test]
fn the_ring_policy_with_rotation_is_refused_in_one_line_naming_both() {
    let d = dir("ring-policy");
    let base = d.join("trace.evt");
    for rotate in ["256k", "1s", "256k,1s"] {
        let out = child(
            &["env"],
            &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_POLICY", "ring"), ("EVENT_ROTATE", rotate)],
        )
        .output()
        .unwrap();
        assert_eq!(out.status.code(), Some(2), "EVENT_ROTATE={rotate}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one line: {lines:?}");
        assert!(
            lines[0].contains(&format!("EVENT_ROTATE=\"{rotate}\"")) && lines[0].contains("EVENT_POLICY=ring"),
            "{}",
            lines[0]
        );
        assert_eq!(listing(&d), Vec::<String>::new(), "no file made");
    }
    // Each alone starts.
    for env in
        [[("EVENT_POLICY", "ring"), ("EVENT_ROTATE", "")], [("EVENT_POLICY", "switch"), ("EVENT_ROTATE", "256k")]]
    {
        let vars: Vec<(&str, &str)> = std::iter::once(("EVENT_FILE", base.to_str().unwrap()))
            .chain(env.into_iter().filter(|(_, v)| !v.is_empty()))
            .collect();
        run(child(&["env"], &vars));
    }
    assert!(!listing(&d).is_empty());
}

/// A later segment's name taken by a file that is not the recording's (someone put
/// `trace.000002.evt` there): the file is never opened, written or replaced; the recording
/// says so in one line and goes on under the next free name; the segments' `index` goes on
/// 0, 1, 2, ... (no gap for readers: nothing was lost).
#[test]
fn a_later_segment_name_taken_by_another_file_is_left_alone_and_skipped() {
    let d = dir("taken");
    let base = d.join("trace.evt");
    let foreign = d.join("trace.000002.evt");
    std::fs::write(&foreign, b"not this recording's").unwrap();
    let out = run(child(&["rotate", "1000", "3"], &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1h")]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("rotated ")).collect::<Vec<_>>(),
        ["rotated 1", "rotated 2", "rotated 3"]
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(
        lines[0].contains(&format!("{} is taken by a file that is not this recording's", foreign.display()))
            && lines[0].contains("trace.000003.evt.open"),
        "{}",
        lines[0]
    );
    assert_eq!(std::fs::read(&foreign).unwrap(), b"not this recording's", "the foreign file as it was");
    std::fs::remove_file(&foreign).unwrap();
    let names = listing(&d);
    assert_eq!(names, ["trace.000000.evt", "trace.000001.evt", "trace.000003.evt", "trace.000004.evt"]);
    let (mut main, mut worker) = (Vec::new(), Vec::new());
    for (name, index) in names.iter().zip([0, 1, 2, 3]) {
        let r = read(&d.join(name));
        assert_eq!(r.segment.index, index, "{name}: the header's index has no gap");
        assert_eq!(r.segment.lost_between, 0);
        main.extend(numbers(&r, 0));
        worker.extend(numbers(&r, 1));
    }
    assert_eq!(main, (0..4000).collect::<Vec<_>>(), "nothing lost to the skip");
    assert_eq!(worker, (0..4000).collect::<Vec<_>>());
}

/// The segment being written (`trace.000000.evt.open`) deleted by someone else while the
/// program records: the recorder notices within about a second, says so once, and goes on in
/// the next segment (not writing on into a file that no name reaches until the segment's age
/// of an hour); the program exits 0; what is left is whole, and readers see segment 0 as a gap.
#[test]
fn an_open_segment_deleted_while_recording_is_said_once_and_recording_goes_on_in_the_next() {
    let d = dir("open-deleted");
    let base = d.join("trace.evt");
    let mut command = child(&["record-hold", "100"], &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1h")]);
    command.stderr(std::process::Stdio::piped());
    let mut c = start_ready(command);
    std::fs::remove_file(d.join("trace.000000.evt.open")).unwrap();
    let next = d.join("trace.000001.evt.open");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !next.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let found = next.exists();
    c.stdin.take().unwrap().write_all(b"\n").unwrap();
    let out = c.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(found, "the next segment was started: {:?}\n{stderr}", listing(&d));
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(lines[0].contains("trace.000000.evt.open was removed or renamed by someone else"), "{}", lines[0]);
    assert_eq!(listing(&d), ["trace.000001.evt"], "nothing written at segment 0's names");
    let r = read(&d.join("trace.000001.evt"));
    assert_eq!(r.segment.index, 1, "readers see segment 0 missing: a gap");
    assert_eq!((r.segment.removed_segments, r.segment.lost_between), (0, 0), "not the budget's, not lost between");
    assert_eq!(r.stop.cause, StopCause::Stopped);
    // The events of the deleted segment are gone with it; from the next segment on, each
    // thread's events are one run to its last.
    let main = numbers(&r, 0);
    assert!(main.ends_with(&(100..200).collect::<Vec<_>>()), "the main thread's last 100: {main:?}");
    let worker = numbers(&r, 1);
    assert!(!worker.is_empty() && worker.windows(2).all(|w| w[1] == w[0] + 1), "the worker's events, one run");
    let names: Vec<&str> = r.names.values().map(String::as_str).collect();
    assert!(names.contains(&"main") && names.contains(&"worker-1"), "{names:?}");
}

/// `chattr +i` (or `-i`) on `path`; `false` when it cannot be done here.
fn immutable(path: &Path, on: bool) -> bool {
    Command::new("chattr").arg(if on { "+i" } else { "-i" }).arg(path).output().is_ok_and(|o| o.status.success())
}

/// A write error that is not a full disk (stop cause 3) while a segment is written. The real
/// cause used: the segment made immutable (`chattr +i`, as an administrator or a security
/// tool may do) while the recorder holds it open: every write to it, the stop block's too,
/// fails with `EPERM` (ext4, xfs, btrfs, tmpfs since Linux 6.0), not `ENOSPC`/`EFBIG` (the
/// full-disk tests cover those, through `RLIMIT_FSIZE`). It needs root (`CAP_LINUX_IMMUTABLE`)
/// and e2fsprogs' `chattr`: skipped without them, except in CI (`.ci/run` runs as root and
/// installs e2fsprogs). EIO from a failing disk takes the same path, untested: no test can
/// make one without a device-mapper target.
///
/// The segment ends at its last whole block, unmarked, under its `.open` name; one line says
/// so; the recording goes on in a new segment, whose `lost_between` counts what neither
/// holds; the program exits 0. Before, a write error ended the whole recording: no segment
/// after it, every event from then on lost.
#[test]
fn a_write_error_in_a_segment_is_one_line_and_recording_goes_on_in_a_new_segment() {
    let d = dir("write-error");
    let probe = d.join("probe");
    std::fs::write(&probe, b"").unwrap();
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !(root && immutable(&probe, true)) {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root with chattr (e2fsprogs) on a file system with it");
        eprintln!("skipped: needs root and chattr +i on {}", d.display());
        return;
    }
    assert!(immutable(&probe, false));
    std::fs::remove_file(&probe).unwrap();
    let base = d.join("trace.evt");
    let mut command = child(&["record-hold", "100"], &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1h")]);
    command.stderr(std::process::Stdio::piped());
    let mut c = start_ready(command);
    let first = d.join("trace.000000.evt.open");
    assert!(immutable(&first, true));
    // Made mutable again however the test ends, so that the directory can be removed.
    struct Mutable<'a>(&'a Path);
    impl Drop for Mutable<'_> {
        fn drop(&mut self) {
            immutable(self.0, false);
        }
    }
    let _mutable = Mutable(&first);
    let next = d.join("trace.000001.evt.open");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !next.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let found = next.exists();
    c.stdin.take().unwrap().write_all(b"\n").unwrap();
    let out = c.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(found, "a new segment was started: {:?}\n{stderr}", listing(&d));
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(
        lines[0].contains(&format!("writing the segment {} failed (a write error", first.display()))
            && lines[0].contains("Operation not permitted")
            && lines[0].contains("goes on in a new segment"),
        "{}",
        lines[0]
    );
    assert_eq!(listing(&d), ["trace.000000.evt.open", "trace.000001.evt"]);
    // The abandoned segment: whole blocks, numbered from 0, and no marker (its writer could
    // not write one), as readers judge it.
    let bytes = std::fs::read(&first).unwrap();
    let old = numbered(&bytes).unwrap_or_else(|e| panic!("{}: whole blocks: {e}", first.display()));
    let mut decoder = Decoder::new(&bytes[..]).unwrap();
    let mut ledger = Ledger::new(decoder.header().format);
    while let Some(block) = decoder.next_block() {
        ledger.block(&block.expect("every block whole"));
    }
    assert!(!matches!(ledger.ending(|| false), Ending::Clean(_)), "no stop marker: {:?}", ledger.ending(|| false));
    let new = read(&d.join("trace.000001.evt"));
    assert_eq!(new.segment.index, 1);
    assert_eq!(new.stop.cause, StopCause::Stopped);
    // The worker's events: a run from 0 in the old segment, a run to its last in the new, and
    // every one between them counted in the new segment's `lost_between`.
    let before = old.by_worker.get(&1).cloned().unwrap_or_default();
    let after = numbers(&new, 1);
    assert_eq!(before, (0..before.len() as u64).collect::<Vec<_>>());
    assert!(!after.is_empty() && after.windows(2).all(|w| w[1] == w[0] + 1), "one run");
    let between = after[0] - before.len() as u64;
    assert!(between > 0, "the failed block's events are not in either segment");
    assert!(
        new.segment.lost_between >= between,
        "{between} of the worker's events between the segments, {} counted",
        new.segment.lost_between
    );
    let main = numbers(&new, 0);
    assert!(main.ends_with(&(100..200).collect::<Vec<_>>()), "the main thread's last 100: {main:?}");
}

/// A program that runs many short threads over many segments: each segment names every
/// thread whose blocks it holds, and no other, so the names a segment repeats stay bounded by
/// the threads that write in it. Before, every new segment repeated the name of every thread
/// the program had ever run (here 8 a round: 96 names by the last segment).
#[test]
fn each_segment_names_the_threads_it_holds_and_not_every_thread_ever_run() {
    let d = dir("churn");
    let base = d.join("trace.evt");
    let (k, rounds, n) = (8u64, 12u64, 500u64);
    run(child(
        &["churn", &k.to_string(), &rounds.to_string(), &n.to_string()],
        &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1h")],
    ));
    let paths = sealed(&d);
    assert_eq!(paths.len() as u64, rounds + 1, "{:?}", listing(&d));
    let mut workers: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for path in &paths {
        let r = read(path);
        // Every thread with a block here is named here ...
        for thread in r.numbered.first_block.keys().filter(|&&t| t != 0) {
            assert!(r.names.contains_key(thread), "{}: thread {thread} holds blocks and is not named", path.display());
        }
        // ... and no other: the names this segment repeats are of its own threads.
        for thread in r.names.keys() {
            assert!(
                r.numbered.first_block.contains_key(thread),
                "{}: names thread {thread} ({}), which holds no block here",
                path.display(),
                r.names[thread]
            );
        }
        // At most two rounds' threads (a round's last blocks may follow its rotation), the
        // main thread and the writer's.
        assert!(r.names.len() as u64 <= 2 * k + 2, "{}: {} names: {:?}", path.display(), r.names.len(), r.names);
        for (worker, numbers) in &r.numbered.by_worker {
            let thread = r.numbered.thread_of[worker];
            if *worker > 0 {
                let (round, i) = ((worker - 1) / k, (worker - 1) % k);
                assert_eq!(r.names[&thread], format!("churn-{round}-{i}"), "{}", path.display());
            }
            workers.entry(*worker).or_default().extend(numbers);
        }
    }
    assert_eq!(workers.len() as u64, rounds * k + 1);
    for (worker, numbers) in &workers {
        let want = if *worker == 0 { rounds } else { n };
        assert_eq!(numbers, &(0..want).collect::<Vec<_>>(), "worker {worker}: every event once, in order");
    }
}

/// The same write error with one event file (no segments): there is no next file to go on
/// in, and the file refuses even its stop block. One line; the file ends at its last whole
/// block, unmarked (a reader judges it as a killed writer's: nothing more can be written into
/// it to say otherwise); the program records on and exits 0. Root and `chattr` as above.
#[test]
fn a_write_error_in_the_event_file_is_one_line_and_the_program_goes_on() {
    use std::io::{BufRead, BufReader};
    let d = dir("write-error-file");
    let probe = d.join("probe");
    std::fs::write(&probe, b"").unwrap();
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !(root && immutable(&probe, true)) {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root with chattr (e2fsprogs) on a file system with it");
        eprintln!("skipped: needs root and chattr +i on {}", d.display());
        return;
    }
    assert!(immutable(&probe, false));
    std::fs::remove_file(&probe).unwrap();
    let path = d.join("trace.evt");
    let mut command = child(&["record-hold", "100"], &[("EVENT_FILE", path.to_str().unwrap())]);
    command.stderr(std::process::Stdio::piped());
    let mut c = start_ready(command);
    assert!(immutable(&path, true));
    struct Mutable<'a>(&'a Path);
    impl Drop for Mutable<'_> {
        fn drop(&mut self) {
            immutable(self.0, false);
        }
    }
    let _mutable = Mutable(&path);
    // Its stderr, read on a thread of its own: the line comes once the writer's next block
    // fails (the worker fills one every few dozen milliseconds).
    let stderr = BufReader::new(c.stderr.take().unwrap());
    let (line_to, lines) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = line_to.send(line);
        }
    });
    let first = lines.recv_timeout(std::time::Duration::from_secs(30));
    c.stdin.take().unwrap().write_all(b"\n").unwrap();
    let status = c.wait().unwrap();
    reader.join().unwrap();
    let mut said: Vec<String> = first.into_iter().collect();
    said.extend(lines.try_iter());
    assert!(status.success(), "{status:?}: {said:?}");
    assert_eq!(said.len(), 1, "one line: {said:?}");
    assert!(
        said[0].contains(&format!("writing the event file {} failed (a write error", path.display()))
            && said[0].contains("Operation not permitted"),
        "{}",
        said[0]
    );
    let bytes = std::fs::read(&path).unwrap();
    let numbered = numbered(&bytes).unwrap_or_else(|e| panic!("whole blocks: {e}"));
    let worker = numbered.by_worker.get(&1).cloned().unwrap_or_default();
    assert_eq!(worker, (0..worker.len() as u64).collect::<Vec<_>>(), "a run from 0, then nothing");
    let mut decoder = Decoder::new(&bytes[..]).unwrap();
    let mut ledger = Ledger::new(decoder.header().format);
    while let Some(block) = decoder.next_block() {
        ledger.block(&block.expect("every block whole"));
    }
    assert!(!matches!(ledger.ending(|| false), Ending::Clean(_)), "no stop marker: {:?}", ledger.ending(|| false));
}

/// The recorder's memory for thread names holds the threads alive, not every thread the
/// program ever ran: a child runs 5000 short threads with 4000-byte names (20 MB of names)
/// over 25 segments, and its resident memory does not grow by more than 8 MiB from the fifth
/// segment to the last. Before, the recorder kept every name (and a copy for the segments),
/// some 40 MB by the end.
#[test]
fn the_names_of_ended_threads_are_forgotten() {
    let d = dir("churn-memory");
    let base = d.join("trace.evt");
    let out = run(child(
        &["churn", "200", "25", "1", "4000"],
        &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1h"), ("EVENT_BUFSIZE", "1m")],
    ));
    let samples: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("sample "))
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(samples.len(), 25);
    let (fifth, last) = (samples[4], samples[24]);
    assert!(fifth > 0, "{samples:?}");
    assert!(last <= fifth + 8 * 1024, "resident KiB grew from {fifth} to {last}: {samples:?}");
    // Each segment still names the threads whose blocks it holds.
    for path in sealed(&d) {
        let r = read(&path);
        for thread in r.numbered.first_block.keys().filter(|&&t| t != 0) {
            assert!(r.names.contains_key(thread), "{}: thread {thread} is not named", path.display());
        }
    }
}

/// Segments written with each packing (`EVENT_PACK=off`, `lz4`, `zstd`) hold the same events,
/// read back value for value: by event-format one segment at a time, by `event-dump print`
/// over the directory (the numbers, in order), and by `check` and `stats` (whole, every event
/// counted); the packed segments' blocks carry their packing's flags.
#[test]
fn segments_of_every_packing_read_back_the_same_events() {
    use event_format::wire::{BLOCK_COLUMNS, BLOCK_PACKED, BLOCK_ZSTD};
    let n = 60_000u64;
    for (pack, flags) in [("off", 0), ("lz4", BLOCK_PACKED), ("zstd", BLOCK_PACKED | BLOCK_ZSTD | BLOCK_COLUMNS)] {
        let d = dir(&format!("packing-{pack}"));
        let base = d.join("trace.evt");
        run(child(
            &["go-on", &n.to_string()],
            &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "8k"), ("EVENT_PACK", pack)],
        ));
        let paths = sealed(&d);
        assert!(paths.len() >= 2, "{pack}: {} segments", paths.len());
        let mut all = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for path in &paths {
            let r = read(path);
            all.extend(numbers(&r, 0));
            let bytes = std::fs::read(path).unwrap();
            seen.extend(Decoder::new(&bytes[..]).unwrap().map(|b| b.unwrap().header.flags));
        }
        assert_eq!(all, (0..n).collect::<Vec<_>>(), "{pack}: every event once, in order");
        assert!(seen.contains(&flags), "{pack}: blocks of flags {flags:#x} among {seen:?}");
        assert!(seen.iter().all(|&f| f == 0 || f == flags), "{pack}: {seen:?}");
        let print = run({
            let mut c = Command::new(DUMP);
            c.args(["print", d.to_str().unwrap(), "--event", "ArenaDestroy", "--filter", "arena == 0"]);
            c
        });
        let printed: Vec<u64> = String::from_utf8(print.stdout)
            .unwrap()
            .lines()
            .filter_map(|l| l.split("committed=").nth(1)?.split(' ').next()?.parse().ok())
            .collect();
        let mut sorted = printed.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "{pack}: print shows every event");
        let check = run({
            let mut c = Command::new(DUMP);
            c.args(["check", d.to_str().unwrap()]);
            c
        });
        let text = String::from_utf8_lossy(&check.stdout).into_owned();
        assert!(text.contains("  whole\n") || text.ends_with("whole\n"), "{pack}: {text}");
    }
}
