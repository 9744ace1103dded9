//! docs/FORMAT.md as a contract (issue 30): the reader faults a second implementation, written
//! from the spec alone, found in `event-dump`, and the rules it made precise, each on a
//! checked-in stream of tests/data/contract/ (written by that implementation from FORMAT.md,
//! or by hand; /work/shared/format-t3/README.md tells which):
//!
//! - `stop-counts-an-unknown-record.evt`: a block with one event and one record of code
//!   `0xfff0` (a later version's built-in; `0xff0b` until format 2.1.0 gave that code to
//!   `SpanOpen`: its code byte was rewritten and the block's CRC made again), then a stop block whose `events` is 2;
//! - `stop-block-after-a-damaged-report.evt`: thread 0's block 0 damaged, the stop block is
//!   thread 0's block 1;
//! - `v1.1-with-a-stop-block.evt`, `v2.0.0-with-a-stop-block.evt`: streams of versions that
//!   have no clean-stop marker, ending with a block that looks like one;
//! - `v2.0.1-without-host.evt`: a 2.0.1 header that ends right after its sets;
//! - `ring-1.0.0-word-104.ring`: a ring file of layout 1.0.0 whose reserved word at offset 104
//!   is not 0.

use crate::common::DUMP;
use std::path::PathBuf;
use std::process::{Command, Output};

fn data(name: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "data", "contract", name].iter().collect();
    path.to_str().unwrap().to_owned()
}

fn dump(args: &[&str]) -> Output {
    Command::new(DUMP).args(args).output().unwrap()
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// R1, S1: the marker's `events` counts the records the writer wrote other than `TimeExtend`
/// and `Stop`, a record of a code this reader does not know included (the recorder counts
/// them so); `check` compared it with the events it decoded, and called the stream damaged.
#[test]
fn the_markers_count_of_events_is_of_records_unknown_codes_included() {
    let log = data("stop-counts-an-unknown-record.evt");
    let check = dump(&["check", &log]);
    let out = text(&check);
    assert!(!out.contains("events: the writer wrote"), "the counts agree: {out}");
    // The unknown code is reported, as it is in any stream.
    assert!(out.contains("unknown code 0xfff0: 1 records skipped"), "{out}");
    assert!(out.ends_with("  NOT whole: 1 problem\n"), "{out}");
    let stats = text(&dump(&["stats", &log]));
    assert!(stats.contains("stopped cleanly: the writer wrote 1 blocks, 2 events"), "{stats}");
}

/// R2, S2: the stop block is one of thread 0's blocks: a damaged block 0 of thread 0 before
/// the stop block (its block 1) is a gap; `stats` said 0 blocks missing.
#[test]
fn a_gap_just_before_the_stop_block_is_counted() {
    let log = data("stop-block-after-a-damaged-report.evt");
    let stats = text(&dump(&["stats", &log]));
    assert!(stats.contains("1 blocks missing (overwritten or dropped), 1 damaged blocks"), "{stats}");
    let check = text(&dump(&["check", &log]));
    // Thread 0's blocks are the recorder's own: never overwritten by a ring, so a gap from its
    // block 0 is a problem without --strict.
    assert!(check.contains("gap: thread 0: block 0 missing (dropped or damaged)"), "{check}");
    // The marker's block is no block of the log's count.
    assert!(check.contains("blocks: the writer wrote 2 before its stop marker, 1 are here"), "{check}");
}

/// R3, S4: a stream of 1.x or 2.0.0 has no clean-stop marker, whatever its last block holds;
/// `stats` and `check` said "stopped cleanly". A `Stop` record is consumed in any stream (the
/// built-in codes a reader knows are its own version's), so it is no unknown code either; the
/// block it is in is a block of thread 0 like any other.
#[test]
fn streams_older_than_2_0_1_have_no_clean_stop_whatever_they_end_with() {
    for (name, version) in [("v1.1-with-a-stop-block.evt", "1.1.0"), ("v2.0.0-with-a-stop-block.evt", "2.0.0")] {
        let log = data(name);
        let stats = text(&dump(&["stats", &log]));
        assert!(stats.contains(&format!("format {version} records no clean stop")), "{name}: {stats}");
        assert!(!stats.contains("stopped cleanly"), "{name}: {stats}");
        assert!(stats.contains("1 events in 2 blocks"), "{name}: {stats}");
        assert!(stats.contains("0 records of unknown codes"), "{name}: {stats}");
        let check = dump(&["check", &log]);
        assert_eq!(check.status.code(), Some(0), "{name}: {}", text(&check));
        assert!(text(&check).contains(&format!("  format {version} records no clean stop\n")), "{}", text(&check));
    }
}

/// S7: in a ring file of layout 1.0.0 the word at offset 104 is reserved, and readers ignore
/// it (it became `discarded` in 1.0.1); `event-dump` counted its 13 as events lost.
#[test]
fn a_layout_1_0_0_ring_files_reserved_word_is_ignored() {
    let ring = data("ring-1.0.0-word-104.ring");
    let stats = text(&dump(&["stats", &ring]));
    assert!(stats.contains("1 slots reused (0 events discarded with them, counted lost)"), "{stats}");
    assert!(stats.contains("25 events lost"), "{stats}");
    let check = text(&dump(&["check", &ring]));
    assert!(check.contains("lost: no thread: 11 events"), "{check}");
}

/// S3: a 2.0.1 header whose variable part ends right after its sets has no host: it is read
/// with an empty host (docs/FORMAT.md, "Reading the header", step 13), as it always was.
#[test]
fn a_2_0_1_header_that_ends_with_its_sets_is_read_without_a_host() {
    use event_format::decode::Decoder;
    let bytes = std::fs::read(data("v2.0.1-without-host.evt")).unwrap();
    let decoder = Decoder::new(&bytes[..]).expect("readable");
    let header = decoder.header();
    assert_eq!(header.format.to_string(), "2.0.1");
    assert_eq!((header.producer.host.as_str(), header.skipped_bytes), ("", 0));
    let stats = dump(&["stats", &data("v2.0.1-without-host.evt")]);
    assert!(stats.status.success());
    assert!(text(&stats).contains("1 events in 1 blocks"), "{}", text(&stats));
}
