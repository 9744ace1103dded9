//! A recording of segments opened as one log (`event_format::log::open_all`) and counted by
//! one ledger: segments grouped by recording id and ordered by index, `.open` files left out
//! of a directory unless named, each segment's thread numbers restarting without a repeat
//! counted, each segment's stop marker judged against its own blocks, and the last one's
//! saying how the recording ended.

use event_format::decode::BlockSource;
use event_format::ledger::{Ending, Ledger};
use event_format::log::{self, Log, OpenOptions};
use event_format::raw::stop_block;
use event_format::testing::sample_header;
use event_format::wire::{BlockHeader, BlockWriter, Order, RecordingId, Segment, Stop, StopCause};
use std::path::Path;

fn fresh(name: &str) -> crate::Scratch {
    crate::dir(&format!("event-format-segments-{name}"))
}

/// A segment of recording `id`: `blocks` blocks of thread 1, numbered from 0, with two `Poll`
/// events each; ended by a stop marker of `cause` unless `None`.
fn segment(path: &Path, id: u8, segment: Segment, blocks: u64, cause: Option<StopCause>) -> u64 {
    let order = Order::Little;
    let mut header = sample_header(order);
    header.properties.recording = Some(RecordingId([id; 16]));
    header.properties.segment = Some(segment);
    let mut bytes = header.encode().unwrap();
    let start = 10_000 * (segment.index + 1);
    for sequence in 0..blocks {
        let time = start + 10 * sequence;
        let mut w = BlockWriter::new(
            order,
            header.block_size,
            &BlockHeader { thread: 1, sequence, base_time: time, ..Default::default() },
        );
        w.push(0x0004, time, &[]).unwrap();
        w.push(0x0004, time + 1, &[]).unwrap();
        bytes.extend(w.finish());
    }
    if let Some(cause) = cause {
        let stop = Stop { blocks, events: 2 * blocks, lost: 0, cause, unwritten: 0 };
        bytes.extend(stop_block(order, header.block_size, 0, start + 5000, &stop));
    }
    std::fs::write(path, bytes).unwrap();
    2 * blocks
}

fn at(index: u64) -> Segment {
    Segment { index, ..Segment::default() }
}

/// Reads `log` to its end into its own ledger.
fn count(log: &mut Log) -> Ledger {
    let mut ledger = log.ledger();
    let catalog = log.catalog().clone();
    while let Some(block) = log.next_block() {
        match block {
            Ok(block) => {
                ledger.block(&block);
                for entry in block.entries(&catalog) {
                    ledger.entry(block.header.thread, block.header.sequence, &entry);
                }
            }
            Err(e) => ledger.damaged(&e),
        }
    }
    ledger
}

#[test]
fn a_directory_of_segments_is_one_log_in_index_order() {
    let d = fresh("order");
    // Written out of order, named so that their names do not sort as their indexes do.
    let mut events = segment(&d.join("c"), 1, at(0), 2, Some(StopCause::Rotated));
    events += segment(&d.join("a"), 1, at(2), 1, Some(StopCause::Stopped));
    events += segment(&d.join("b"), 1, at(1), 3, Some(StopCause::Rotated));
    std::fs::write(d.join("notes.txt"), "not a log").unwrap();
    segment(&d.join("d.open"), 1, at(3), 1, None);
    let mut logs = log::open_all(&[d.to_path_buf()], OpenOptions::default()).unwrap();
    assert_eq!(logs.len(), 1);
    let log = &mut logs[0];
    let names: Vec<String> =
        log.segments().iter().map(|s| s.path.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["c", "b", "a"], "by index; the open one and the text file left out");
    assert_eq!(log.path(), &*d);
    let ledger = count(log);
    assert_eq!((ledger.events(), ledger.blocks()), (events, 6));
    assert_eq!((ledger.missing_blocks(), ledger.repeated_blocks(), ledger.late_blocks()), (0, 0, 0));
    assert!(ledger.parts().all(|p| p.marker.is_some_and(|m| m.agrees())), "every segment agrees with its marker");
    assert!(matches!(ledger.ending(|| false), Ending::Clean(Some(Stop { cause: StopCause::Stopped, .. }))));
    // `open` of the directory is the same one log.
    assert_eq!(log::open(&d, OpenOptions::default()).unwrap().segments().len(), 3);
}

#[test]
fn a_segment_named_is_read_even_open_and_two_recordings_are_two_logs() {
    let d = fresh("named");
    segment(&d.join("r1.0"), 1, at(0), 1, Some(StopCause::Rotated));
    segment(&d.join("r1.1.open"), 1, at(1), 1, None);
    segment(&d.join("r2.0"), 2, at(0), 1, Some(StopCause::Stopped));
    let given = [d.join("r1.0"), d.join("r2.0"), d.join("r1.1.open")];
    let mut logs = log::open_all(&given, OpenOptions::default()).unwrap();
    let counts: Vec<usize> = logs.iter().map(|l| l.segments().len()).collect();
    // Recording 1 (two segments, at its first file's place), then recording 2's one segment,
    // named alone: read as the stream it is.
    assert_eq!(counts, [2, 0]);
    assert_eq!(logs[1].path(), d.join("r2.0"));
    // The open segment has no marker: recording 1's writer did not stop it.
    assert_eq!(count(&mut logs[0]).ending(|| false), Ending::Killed { after_marker: 0 });
    // A directory with two recordings is two logs; `open` refuses it in one line.
    let e = log::open(&d, OpenOptions::default()).unwrap_err().to_string();
    assert!(e.ends_with("holds 2 logs (recordings or files); give one of them"), "{e}");
    // The same segment given twice is refused.
    let e = log::open_all(&[d.join("r1.0"), d.join("r1.0")], OpenOptions::default()).unwrap_err().to_string();
    assert!(e.contains("both are segment 0 of recording"), "{e}");
}

#[test]
fn each_segment_is_judged_by_its_own_marker_and_the_last_one_ends_the_log() {
    let d = fresh("markers");
    segment(&d.join("s0"), 1, at(0), 2, Some(StopCause::Rotated));
    // Segment 1 lost its marker (cut): a problem of that segment, not the log's ending.
    segment(&d.join("s1"), 1, at(1), 2, None);
    segment(
        &d.join("s2"),
        1,
        Segment { index: 2, lost_between: 4, ..Segment::default() },
        1,
        Some(StopCause::DiskFull),
    );
    let mut log = log::open(&d, OpenOptions::default()).unwrap();
    let ledger = count(&mut log);
    let parts: Vec<(Option<&str>, bool, bool)> = ledger.parts().map(|p| (p.name, p.marker.is_some(), p.last)).collect();
    assert_eq!(parts, [(Some("s0"), true, false), (Some("s1"), false, false), (Some("s2"), true, true)]);
    // The markers are not blocks of the counts; s1's last block is one.
    assert_eq!(ledger.blocks(), 5);
    assert_eq!(ledger.marker().map(|m| (m.written.blocks, m.read.blocks)), Some((1, 1)));
    assert!(matches!(ledger.ending(|| true), Ending::Clean(Some(Stop { cause: StopCause::DiskFull, .. }))));
    assert_eq!((ledger.lost_between(), ledger.lost()), (4, 4));
}

#[test]
fn a_recording_of_segments_is_indexed_by_each_blocks_place_in_the_log() {
    let d = fresh("index");
    segment(&d.join("s0"), 1, at(0), 2, Some(StopCause::Rotated));
    segment(&d.join("s1"), 1, at(1), 3, Some(StopCause::Stopped));
    let mut log = log::open(&d, OpenOptions { index: true, ..OpenOptions::default() }).unwrap();
    let index = log.take_index().expect("indexed");
    let starts = log.segment_starts();
    assert_eq!(starts.len(), 3);
    let mut read = Vec::new();
    while let Some(block) = log.next_block() {
        let block = block.unwrap();
        read.push((starts[block.segment as usize] + block.offset, block.header.base_time));
    }
    let listed: Vec<(u64, u64)> = index.iter().map(|b| (b.offset, b.base_time)).collect();
    assert_eq!(listed, read, "every block, stop blocks included, where the index says");
    assert_eq!(listed.len(), 2 + 1 + 3 + 1);
}
