//! A recording of segments written by the real recorder (`recorder-child` with `EVENT_ROTATE`,
//! `EVENT_KEEP`, a full disk by `RLIMIT_FSIZE`), read back as one log by `event-dump` (issue 29,
//! the readers): `stats`, `check` and `print` of the directory count what the segments read
//! one by one hold together; the segments the budget removed are reported with their events;
//! a full disk is named with what was not written; `follow` goes on across the recorder's
//! rotations.

use crate::common::{DUMP, child, start_ready};
use event_format::decode::BlockSource;
use event_format::log::{self, OpenOptions};
use event_format::wire::{Segment, Stop, StopCause};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn dir(name: &str) -> crate::common::Scratch {
    crate::common::dir("reading-segments", name)
}

fn run(mut c: Command) -> Output {
    let out = c.output().unwrap();
    assert!(out.status.success(), "the child exits 0: {:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    out
}

fn dump(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(DUMP).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The number before `what` in `text`.
fn number_before(text: &str, what: &str) -> Option<u64> {
    let at = text.find(what)?;
    text[..at].rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// One sealed segment read alone (named alone, it is the stream it is).
struct Alone {
    segment: Segment,
    events: u64,
    blocks: u64,
    stop: Option<Stop>,
}

/// Every sealed segment of `d`, read alone, in index order.
fn segments(d: &Path) -> Vec<Alone> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()).collect();
    names.retain(|p| !p.to_string_lossy().ends_with(log::OPEN_SUFFIX));
    names.sort();
    names
        .iter()
        .map(|path| {
            let mut log = log::open(path, OpenOptions::default()).unwrap();
            assert!(log.segments().is_empty(), "a segment named alone is one stream");
            let segment = log.header().properties.segment.expect("a segment");
            let mut ledger = log.ledger();
            let catalog = log.catalog().clone();
            while let Some(block) = log.next_block() {
                let block = block.unwrap();
                ledger.block(&block);
                for entry in block.entries(&catalog) {
                    ledger.entry(block.header.thread, block.header.sequence, &entry);
                }
            }
            let stop = ledger.marker().map(|m| m.written);
            Alone { segment, events: ledger.events(), blocks: ledger.blocks(), stop }
        })
        .collect()
}

#[test]
fn a_budgeted_recording_reads_as_one_log_with_what_the_budget_removed() {
    let d = dir("budget");
    let base = d.join("trace.evt");
    run(child(
        &["go-on", "300000"],
        &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "128k"), ("EVENT_KEEP", "3"), ("EVENT_PACK", "off")],
    ));
    let alone = segments(&d);
    assert!(alone.len() >= 2, "segments were kept");
    let last = alone.last().unwrap().segment;
    assert!(last.removed_segments > 0, "the budget removed segments");
    let events: u64 = alone.iter().map(|a| a.events).sum();
    let blocks: u64 = alone.iter().map(|a| a.blocks).sum();
    let dir_arg = d.to_str().unwrap();
    let (code, stats) = dump(&["stats", dir_arg]);
    assert_eq!(code, Some(0), "{stats}");
    assert_eq!(number_before(&stats, " events in "), Some(events), "{stats}");
    assert_eq!(number_before(&stats, " blocks over "), Some(blocks), "{stats}");
    let removed = format!(
        "{} here, {} removed by the disk budget ({} events)",
        alone.len(),
        last.removed_segments,
        last.removed_events
    );
    assert!(stats.contains(&removed), "{removed}: {stats}");
    let (code, check) = dump(&["check", dir_arg]);
    assert_eq!(code, Some(0), "the budget's removals are no problem: {check}");
    let first = alone[0].segment.index;
    assert_eq!(first, last.removed_segments, "the oldest were removed");
    let note = format!("removed by the disk budget: segments 0..{}, {} events", first - 1, last.removed_events);
    assert!(check.contains(&note), "{note}: {check}");
    // `print` of the directory: every event once.
    let (code, printed) = dump(&["print", dir_arg]);
    assert_eq!(code, Some(0));
    assert_eq!(printed.lines().count() as u64, events);
}

#[test]
fn a_full_disk_is_named_by_check_with_the_events_not_written() {
    let d = dir("full");
    let base = d.join("trace.evt");
    run(child(
        &["fsize", "262144", "400000"],
        &[
            ("EVENT_FILE", base.to_str().unwrap()),
            ("EVENT_ROTATE", "1m"),
            ("EVENT_PACK", "off"),
            ("EVENT_BUFSIZE", "1m"),
            ("EVENT_POLICY", "wait=1s"),
        ],
    ));
    let alone = segments(&d);
    let full: u64 =
        alone.iter().filter_map(|a| a.stop).filter(|s| s.cause == StopCause::DiskFull).map(|s| s.unwritten).sum();
    let between: u64 = alone.iter().map(|a| a.segment.lost_between).sum();
    assert!(full > 0, "a segment stopped for a full disk");
    let (code, check) = dump(&["check", d.to_str().unwrap()]);
    assert_eq!(code, Some(1), "events not written are lost: {check}");
    assert!(check.contains(&format!("  disk full: {full} events not written")), "{full}: {check}");
    if between > 0 {
        assert!(check.contains(&format!("lost between segments: {between} events")), "{between}: {check}");
    }
    assert!(!check.contains("killed"), "a full disk is no kill: {check}");
}

#[test]
fn follow_goes_on_across_the_recorders_rotations() {
    let d = dir("follow");
    let base = d.join("trace.evt");
    let mut recorder =
        start_ready(child(&["record-hold", "100"], &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1s")]));
    let mut follow = Command::new(DUMP)
        .args(["follow", d.to_str().unwrap(), "--interval", "10"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = follow.stdout.take().unwrap();
    let counter = std::thread::spawn(move || BufReader::new(out).lines().map_while(Result::ok).count() as u64);
    // Three rotations (a segment a second), then the program stops.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !d.join("trace.000003.evt").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    recorder.stdin.take().unwrap().write_all(b"\n").unwrap();
    assert!(recorder.wait().unwrap().success());
    // `follow` ends at the last segment's stop marker (cause `stopped`).
    let mut ended = None;
    for _ in 0..600 {
        if let Some(status) = follow.try_wait().unwrap() {
            ended = Some(status);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    if ended.is_none() {
        let _ = follow.kill();
        panic!("follow did not end after the recording stopped");
    }
    let printed = counter.join().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut follow.stderr.take().unwrap(), &mut err).unwrap();
    assert!(ended.unwrap().success(), "{err}");
    let alone = segments(&d);
    let last = alone.last().unwrap();
    assert_eq!(last.stop.map(|s| s.cause), Some(StopCause::Stopped));
    assert!(last.segment.index >= 3, "{} segments", alone.len());
    // It printed every event of the segments from the one it started at (the latest when it
    // started: the first, or the second if the recorder had rotated already), across at least
    // two rotations.
    let from = (0..alone.len()).find(|&s| alone[s..].iter().map(|a| a.events).sum::<u64>() == printed);
    assert!(
        from.is_some_and(|s| s + 2 < alone.len()),
        "{printed} lines; the segments' events: {:?}\n{err}",
        alone.iter().map(|a| a.events).collect::<Vec<_>>()
    );
}
