//! A recording of segments read as one log (issue 29): a directory, a glob or a list of its
//! segment files, read by `print`, `stats`, `check`, every export and the typed reader as one
//! trace; a segment the disk budget removed is reported with its events, a segment deleted
//! otherwise is a gap, and a last segment that stopped for a full disk makes `check` say
//! `disk full: N events not written`. The segments are made here as the recorder makes them
//! (docs/FORMAT.md, "Segments"): each a whole stream whose header has the recording id and
//! the segment property, each thread's blocks numbered from 0 again, sealed by a stop marker
//! of cause 1 (rotated).

use crate::common::{self, run, stderr, stdout};
use crate::events;
use event_format::wire::{
    BlockHeader, BlockWriter, Clock, Header, Order, Producer, RecordingId, Segment, SetEntry, Stop, StopCause, Text,
    Value,
};
use std::path::{Path, PathBuf};

/// A fresh directory for one test's segments: `dir` in a directory of the test's own
/// ([`common::dir`]), where the test's exports go beside it (`dir.db`, as `with_extension`
/// names them), and which goes with them when the test passes.
fn fresh(name: &str) -> Segments {
    let scratch = common::dir(&format!("segments-{name}"));
    let dir = scratch.join("dir");
    std::fs::create_dir(&dir).unwrap();
    Segments { dir, _scratch: scratch }
}

/// [`fresh`]'s directory of segments, which derefs to its path.
struct Segments {
    dir: PathBuf,
    _scratch: common::Scratch,
}

impl std::ops::Deref for Segments {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.dir
    }
}

impl AsRef<Path> for Segments {
    fn as_ref(&self) -> &Path {
        &self.dir
    }
}

const RECORDING: RecordingId = RecordingId([7; 16]);

/// One segment to write: its property, its events (`ClientMark`s of thread 1, `per_block` in
/// each of `blocks` blocks, after a `ThreadName` naming thread 1), and how it ends (`None`: no
/// stop marker, as when its writer was killed).
struct Seg {
    segment: Segment,
    blocks: u64,
    per_block: u64,
    end: Option<(StopCause, u64)>,
}

impl Seg {
    fn sealed(index: u64, blocks: u64) -> Seg {
        Seg {
            segment: Segment { index, ..Segment::default() },
            blocks,
            per_block: 3,
            end: Some((StopCause::Rotated, 0)),
        }
    }

    /// Its events: every block's marks, and the thread's name.
    fn events(&self) -> u64 {
        self.blocks * self.per_block + 1
    }
}

/// Writes `seg` to `dir/trace.NNNNNN.evt` (or `name` when given).
fn write(dir: &Path, seg: &Seg, name: Option<&str>) -> PathBuf {
    let name = name.map_or_else(|| format!("trace.{:06}.evt", seg.segment.index), str::to_owned);
    let path = dir.join(name);
    std::fs::write(&path, encode(seg)).unwrap();
    path
}

/// The bytes of `seg`: its header, its blocks (of 4096 bytes) and its stop marker; its
/// events' times follow its index, so that the segments are in time order.
fn encode(seg: &Seg) -> Vec<u8> {
    let order = Order::Little;
    let schema = events::SET.schema().unwrap();
    let index = schema.events.iter().position(|e| e.name == "ClientMark").unwrap();
    let mark = SetEntry::assign([schema.clone()])[0].wire_code(index).unwrap();
    let mut header =
        Header::with_sets(SetEntry::assign([schema.clone()]), 4096, Clock::deterministic(), Producer::current(0));
    header.properties.recording = Some(RECORDING);
    header.properties.segment = Some(seg.segment);
    let mut bytes = header.encode().unwrap();
    let start = 1_000_000 * (seg.segment.index + 1);
    let mut stop = Stop::default();
    for sequence in 0..seg.blocks {
        let time = start + 100 * sequence;
        let head = BlockHeader { thread: 1, sequence, base_time: time, ..Default::default() };
        let mut w = BlockWriter::new(order, 4096, &head);
        if sequence == 0 {
            let name = [Value::Word(1), Value::Str(Text::new("worker"))];
            w.push(event_format::builtin::THREAD_NAME, time, &name).unwrap();
            stop.events += 1;
        }
        for i in 0..seg.per_block {
            w.push(mark, time + i, &[]).unwrap();
        }
        stop.events += seg.per_block;
        stop.blocks += 1;
        bytes.extend(w.finish());
    }
    if let Some((cause, unwritten)) = seg.end {
        let stop = Stop { cause, unwritten, ..stop };
        bytes.extend(event_format::raw::stop_block(order, 4096, 0, start + 100_000, &stop));
    }
    bytes
}

/// The number before `what` in `text` (`"12 events lost"` -> 12 for `" events lost"`).
fn number_before(text: &str, what: &str) -> Option<u64> {
    let at = text.find(what)?;
    text[..at].rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Three sealed segments and a last one stopped cleanly: the events of all four.
pub(crate) fn four_segments(dir: &Path) -> u64 {
    let mut segs = [Seg::sealed(0, 2), Seg::sealed(1, 3), Seg::sealed(2, 1), Seg::sealed(3, 2)];
    segs[3].end = Some((StopCause::Stopped, 0));
    segs.iter().map(|s| write(dir, s, None)).for_each(drop);
    segs.iter().map(Seg::events).sum()
}

#[test]
fn segments_read_as_one_trace_by_every_reader() {
    let d = fresh("one-trace");
    let events = four_segments(&d);
    let blocks = 2 + 3 + 1 + 2;
    let glob = d.join("trace.*.evt");
    let list: Vec<PathBuf> = (0..4).map(|i| d.join(format!("trace.{i:06}.evt"))).collect();
    // The directory, a glob the shell did not expand, and the files in another order.
    let mut given: Vec<Vec<&str>> = vec![vec![arg(&d)], vec![arg(&glob)]];
    given.push(vec![arg(&list[2]), arg(&list[0]), arg(&list[3]), arg(&list[1])]);
    for logs in &given {
        let stats = stdout(&run(&[&["stats"][..], logs].concat()));
        assert_eq!(number_before(&stats, " events in "), Some(events), "{logs:?}: {stats}");
        assert_eq!(number_before(&stats, " blocks over "), Some(blocks), "{stats}");
        assert!(stats.contains("recording of segments: 4 here"), "{stats}");
        assert!(stats.contains("stopped cleanly"), "{stats}");
        assert!(stats.contains("T1 (worker)"), "{stats}");
        let check = run(&[&["check"][..], logs].concat());
        let text = stdout(&check);
        assert!(check.status.success(), "{text}");
        assert_eq!(number_before(&text, " events\n"), Some(events), "{text}");
        assert!(text.contains("  whole"), "{text}");
        // One log: print's lines are every event, in time order across the segments.
        let printed = common::print_json(logs);
        assert_eq!(printed.len() as u64, events, "{logs:?}");
        assert!(printed.windows(2).all(|w| w[0].ns <= w[1].ns), "in time order");
    }
    // The exports: one log each, with every event.
    let db = d.with_extension("db");
    let _ = std::fs::remove_file(&db);
    let export = run(&["export", "--to", "sqlite", arg(&d), "-o", arg(&db)]);
    assert!(export.status.success(), "{}", stderr(&export));
    let conn = rusqlite::Connection::open(&db).unwrap();
    let row: (i64, i64, i64) = conn
        .query_row("SELECT count(*), sum(events), sum(blocks) FROM event_log", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(row, (1, events as i64, blocks as i64));
    let parquet = d.with_extension("parquet");
    let _ = std::fs::remove_dir_all(&parquet);
    let export = run(&["export", "--to", "parquet", arg(&d), "-o", arg(&parquet)]);
    assert!(export.status.success(), "{}", stderr(&export));
    // Segment by segment: each a log of the dataset, named by the recording id and its index,
    // whose events add up to the recording's.
    let said = stdout(&export);
    let per_segment: Vec<(u64, String)> = said
        .lines()
        .map(|l| {
            let (_, rest) = l.split_once(": ").unwrap();
            let (n, rest) = rest.split_once(" events as log ").unwrap();
            (n.parse().unwrap(), rest.split_whitespace().next().unwrap().to_owned())
        })
        .collect();
    assert_eq!(per_segment.iter().map(|(n, _)| n).sum::<u64>(), events, "{said}");
    for (i, (_, id)) in per_segment.iter().enumerate() {
        assert_eq!(id.len(), 32 + 7, "{id}");
        assert!(id.ends_with(&format!("-{i:06}")), "{id}");
        assert_eq!(id[..32], per_segment[0].1[..32], "one recording id");
    }
    // One sealed segment exported again, alone, into the same dataset: nothing added.
    let files = |dir: &std::path::Path| {
        let mut all = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() { stack.push(p) } else { all.push((p.clone(), std::fs::read(&p).unwrap())) }
            }
        }
        all.sort();
        all
    };
    let before = files(&parquet);
    let one = d.join("trace.000001.evt");
    let again = run(&["export", "--to", "parquet", arg(&one), "-o", arg(&parquet)]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stdout(&again).contains("nothing added"), "{}", stdout(&again));
    assert_eq!(files(&parquet), before, "the dataset is as it was");
    for (to, out) in [("chrome", "json"), ("perfetto", "pftrace"), ("ctf", "ctf")] {
        let out = d.with_extension(out);
        let _ = std::fs::remove_file(&out);
        let _ = std::fs::remove_dir_all(&out);
        let export = run(&["export", "--to", to, arg(&d), "-o", arg(&out)]);
        assert!(export.status.success(), "{to}: {}", stderr(&export));
        assert!(stderr(&export).is_empty(), "{to}: nothing skipped or lost: {}", stderr(&export));
    }
    let chrome: serde_json::Value = serde_json::from_slice(&std::fs::read(d.with_extension("json")).unwrap()).unwrap();
    let marks = chrome["traceEvents"].as_array().unwrap().iter().filter(|e| e["name"] == "ClientMark").count();
    assert_eq!(marks as u64, events - 4, "every mark (the thread names are metadata)");
    // The typed reader: the directory as one log.
    let mut reader = events::read(&d).unwrap();
    while reader.next_item().is_some() {}
    let s = reader.summary();
    assert_eq!((reader.ledger().events(), s.blocks), (events, blocks));
    assert!(s.is_whole(), "{s}");
}

#[test]
fn a_segment_the_budget_removed_is_reported_with_its_events() {
    let d = fresh("removed");
    // Segments 0 and 1 (2 + 3 blocks of 3 marks, and a name each: 7 + 10 events) removed by
    // the budget: segment 2 says so.
    let mut segs = [Seg::sealed(2, 1), Seg::sealed(3, 2)];
    segs[0].segment.removed_segments = 2;
    segs[0].segment.removed_events = 17;
    segs[1].segment.removed_segments = 2;
    segs[1].segment.removed_events = 17;
    segs[1].end = Some((StopCause::Stopped, 0));
    for s in &segs {
        write(&d, s, None);
    }
    let events: u64 = segs.iter().map(Seg::events).sum();
    let check = run(&["check", arg(&d)]);
    let text = stdout(&check);
    assert!(check.status.success(), "removed by the budget is no problem: {text}");
    assert!(
        text.contains("removed by the disk budget: segments 0..1, 17 events (as trace.000003.evt counts them)"),
        "{text}"
    );
    assert_eq!(number_before(&text, " events\n"), Some(events), "{text}");
    let stats = stdout(&run(&["stats", arg(&d)]));
    assert!(stats.contains("2 here, 2 removed by the disk budget (17 events)"), "{stats}");
    // `print` and the exports say so on stderr, and go on.
    let print = run(&["print", arg(&d)]);
    assert_eq!(stdout(&print).lines().count() as u64, events);
    assert!(stderr(&print).contains("2 segments removed by the disk budget (17 events)"), "{}", stderr(&print));
    let json = d.with_extension("json");
    let _ = std::fs::remove_file(&json);
    let export = run(&["export", "--to", "chrome", arg(&d), "-o", arg(&json)]);
    assert!(export.status.success(), "{}", stderr(&export));
    assert!(stderr(&export).contains("2 segments removed by the disk budget (17 events)"), "{}", stderr(&export));
    let mut reader = events::read(&d).unwrap();
    while reader.next_item().is_some() {}
    let s = reader.summary();
    assert_eq!((s.removed_segments, s.removed_events, s.missing_segments), (2, 17, 0));
    assert!(s.is_whole(), "{s}");
}

#[test]
fn a_segment_deleted_otherwise_is_a_gap() {
    let d = fresh("gap");
    four_segments(&d);
    std::fs::remove_file(d.join("trace.000001.evt")).unwrap();
    let check = run(&["check", arg(&d)]);
    let text = stdout(&check);
    assert_eq!(check.status.code(), Some(1), "{text}");
    assert!(text.contains("gap: segment 1 missing before trace.000002.evt"), "{text}");
    assert!(text.contains("NOT whole: 1 problem"), "{text}");
    let stats = stdout(&run(&["stats", arg(&d)]));
    assert!(stats.contains("3 here, 1 missing"), "{stats}");
    let db = d.with_extension("db");
    let _ = std::fs::remove_file(&db);
    let export = run(&["export", "--to", "sqlite", arg(&d), "-o", arg(&db)]);
    assert!(export.status.success(), "{}", stderr(&export));
    assert!(stderr(&export).contains("1 segment missing"), "{}", stderr(&export));
    let mut reader = events::read(&d).unwrap();
    while reader.next_item().is_some() {}
    assert_eq!(reader.summary().missing_segments, 1);
    assert!(!reader.summary().is_whole());
}

#[test]
fn a_full_disk_is_named_with_what_was_not_written() {
    let d = fresh("disk-full");
    let mut segs = [Seg::sealed(0, 2), Seg::sealed(1, 1)];
    segs[1].end = Some((StopCause::DiskFull, 1234));
    for s in &segs {
        write(&d, s, None);
    }
    let check = run(&["check", arg(&d)]);
    let text = stdout(&check);
    assert_eq!(check.status.code(), Some(1), "{text}");
    assert!(text.contains("  disk full: 1234 events not written"), "{text}");
    assert!(!text.contains("killed"), "a full disk is no kill: {text}");
    // One file, no rotation: the same line.
    let one = fresh("disk-full-one");
    let path = write(&one, &Seg { end: Some((StopCause::DiskFull, 99)), ..Seg::sealed(0, 1) }, Some("trace.evt"));
    let text = stdout(&run(&["check", arg(&path)]));
    assert!(text.contains("  disk full: 99 events not written"), "{text}");
    assert!(!text.contains("killed"), "{text}");
    let stats = stdout(&run(&["stats", arg(&path)]));
    assert!(stats.contains("99 events lost"), "what was not written is lost: {stats}");
}

#[test]
fn recording_resumes_after_a_full_disk_with_the_events_lost_between() {
    let d = fresh("resumed");
    let mut segs = [Seg::sealed(0, 2), Seg::sealed(1, 1)];
    segs[0].end = Some((StopCause::DiskFull, 10));
    segs[1].segment.lost_between = 500;
    segs[1].end = Some((StopCause::Stopped, 0));
    for s in &segs {
        write(&d, s, None);
    }
    let text = stdout(&run(&["check", arg(&d)]));
    assert!(text.contains("disk full: 10 events not written"), "{text}");
    assert!(text.contains("lost between segments: 500 events"), "{text}");
    let stats = stdout(&run(&["stats", arg(&d)]));
    assert!(stats.contains("510 events lost"), "{stats}");
}

/// A `.open` segment whose writer holds its lock (a live recorder) is left out of its
/// directory's recording and said to be still recording; one that no process holds (its
/// writer was killed) is read as the recording's last segment, a kill `check` names. Named,
/// it is read either way.
#[test]
fn a_segment_still_open_is_read_when_its_writer_is_gone_or_when_named() {
    let d = fresh("open");
    let sealed = write(&d, &Seg::sealed(0, 2), None);
    let open = write(&d, &Seg { end: None, ..Seg::sealed(1, 1) }, Some("trace.000001.evt.open"));
    // Its writer alive: its lock held.
    let held = std::fs::File::open(&open).unwrap();
    held.lock().unwrap();
    let checked = run(&["check", arg(&d)]);
    let text = stdout(&checked);
    assert_eq!(checked.status.code(), Some(0), "{text}");
    assert!(text.contains("recording of segments: 1 here"), "{text}");
    assert!(text.contains("sealed segment (rotated): the recording goes on in the next segment"), "{text}");
    // Left out, and said so.
    assert!(text.contains("still recording: trace.000001.evt.open (being written by a live writer"), "{text}");
    let stats = stdout(&run(&["stats", arg(&d)]));
    assert!(stats.contains("still recording: trace.000001.evt.open"), "{stats}");
    // Its writer gone (killed): read as the recording's last segment, and named.
    drop(held);
    let checked = run(&["check", arg(&d)]);
    let text = stdout(&checked);
    assert_eq!(checked.status.code(), Some(1), "{text}");
    assert!(text.contains("recording of segments: 2 here"), "{text}");
    assert!(
        text.contains(
            "not stopped cleanly (killed or aborted): no stop marker (its last segment, trace.000001.evt.open)"
        ),
        "{text}"
    );
    // Named, it is read, and its writer (not running) did not stop it.
    let named = run(&["check", arg(&sealed), arg(&open)]);
    let text = stdout(&named);
    assert!(text.contains("recording of segments: 2 here"), "{text}");
    assert!(text.contains("not stopped cleanly (killed or aborted)"), "{text}");
}

#[test]
fn a_mid_log_segment_that_disagrees_with_its_marker_is_named() {
    let d = fresh("cut");
    four_segments(&d);
    // Segment 1 loses its last whole block (and keeps its marker): 1 block, 3 events short.
    let path = d.join("trace.000001.evt");
    let bytes = std::fs::read(&path).unwrap();
    let header_len = bytes.len() - 4 * 4096;
    let mut cut = bytes[..header_len + 2 * 4096].to_vec();
    cut.extend_from_slice(&bytes[header_len + 3 * 4096..]);
    std::fs::write(&path, cut).unwrap();
    let check = run(&["check", arg(&d)]);
    let text = stdout(&check);
    assert_eq!(check.status.code(), Some(1), "{text}");
    assert!(
        text.contains("segment trace.000001.evt: blocks: the writer wrote 3 before its stop marker, 2 are here"),
        "{text}"
    );
}

#[test]
fn several_recordings_in_one_directory_are_several_logs() {
    let d = fresh("two");
    four_segments(&d);
    // Another recording's one segment, with another id.
    let other = fresh("two-other");
    let path = write(&other, &Seg { end: Some((StopCause::Stopped, 0)), ..Seg::sealed(0, 1) }, Some("other.evt"));
    let mut bytes = std::fs::read(&path).unwrap();
    let mut header = event_format::decode::Decoder::new(&bytes[..]).unwrap().header().clone();
    let len = header.encode().unwrap().len();
    header.properties.recording = Some(RecordingId([9; 16]));
    bytes.splice(..len, header.encode().unwrap());
    std::fs::write(d.join("other.000000.evt"), bytes).unwrap();
    let text = stdout(&run(&["check", arg(&d)]));
    assert_eq!(text.lines().filter(|l| !l.starts_with(' ')).count(), 2, "{text}");
    // A segment named alone is read as the stream it is: no segment accounting.
    let alone = run(&["check", arg(&d.join("trace.000003.evt"))]);
    assert!(alone.status.success(), "{}", stdout(&alone));
    assert!(!stdout(&alone).contains("recording of segments"), "{}", stdout(&alone));
    // A directory without a log is refused in one line.
    let empty = fresh("two-empty");
    let none = run(&["stats", arg(&empty)]);
    assert_eq!(none.status.code(), Some(1));
    assert!(
        stderr(&none).ends_with("no log found (segments still being written, `*.open`, are read only when named)\n"),
        "{}",
        stderr(&none)
    );
    // Where one log is needed, the directory is refused in one line.
    let schema = run(&["schema", arg(&d)]);
    assert_eq!(schema.status.code(), Some(1));
    assert!(stderr(&schema).contains("holds 2 logs"), "{}", stderr(&schema));
}

/// `follow` goes on across a rotation: the test writes a recording as the recorder does (a
/// segment grows as `NAME.open` under its writer's lock, gets its stop marker of cause 1 and
/// is renamed; the next one is created open), and `follow DIR`, started while the first one
/// is open, prints every event of both and ends at the second one's stop (cause 0).
#[test]
fn follow_goes_on_across_a_rotation() {
    use std::io::{BufRead, BufReader, Write};
    let d = fresh("follow");
    let first = Seg::sealed(0, 3);
    let second = Seg { end: Some((StopCause::Stopped, 0)), ..Seg::sealed(1, 2) };
    let (a, b) = (encode(&first), encode(&second));
    let header_len = a.len() - 4 * 4096;
    let open = |i: u64| d.join(format!("trace.{i:06}.evt{}", event_format::log::OPEN_SUFFIX));
    let sealed = |i: u64| d.join(format!("trace.{i:06}.evt"));
    // A segment created open with its first block, locked as its recorder locks it (a follower
    // takes a `.open` segment whose lock is free for one whose writer was killed). Made in
    // another directory and moved, so that the follower never finds it before its lock.
    let making = d.join("making");
    std::fs::create_dir(&making).unwrap();
    let create = |i: u64, bytes: &[u8]| {
        let made = making.join(i.to_string());
        let mut f = std::fs::File::create(&made).unwrap();
        f.lock().unwrap();
        f.write_all(bytes).unwrap();
        std::fs::rename(&made, open(i)).unwrap();
        f
    };
    // The first segment, open, with its first block.
    let mut f = create(0, &a[..header_len + 4096]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_event-dump"))
        .args(["follow", arg(&d), "--interval", "5"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    // Following has begun once it printed the first block's events (its name and 3 marks).
    while printed.len() < 4 {
        printed.push(lines.next().expect("follow prints the open segment's events").unwrap());
    }
    // The rest of the first segment, its stop (rotated), sealed by renaming, then closed.
    f.write_all(&a[header_len + 4096..]).unwrap();
    std::fs::rename(open(0), sealed(0)).unwrap();
    drop(f);
    // The next segment: open, written, stopped, sealed.
    let mut f = create(1, &b[..header_len + 4096]);
    f.write_all(&b[header_len + 4096..]).unwrap();
    std::fs::rename(open(1), sealed(1)).unwrap();
    drop(f);
    printed.extend(lines.map(Result::unwrap));
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert_eq!(printed.len() as u64, first.events() + second.events(), "{printed:#?}\n{err}");
    assert_eq!(printed.iter().filter(|l| l.contains("ThreadName")).count(), 2, "{printed:#?}");
    assert!(err.is_empty(), "{err}");
}
