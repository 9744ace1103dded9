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
//!
//! The fourth round (issue 43, /work/shared/format-t4/README.md), each settled by a sentence
//! of docs/FORMAT.md that the test below keeps:
//!
//! - `S14-segment-tie/`: two segments whose records tie at equal time and thread;
//! - `S15-stop-of-40-bytes.evt`, `S15-2.0.1-stream-with-48-byte-stop.evt`: a `Stop` with a
//!   cause and no `unwritten`, and a 2.0.1 stream whose `Stop` has both;
//! - `S16-block0-damaged.ring`: a slot whose block 0 is damaged and block 1 kept, with pins;
//! - `S17-refused-header/`: a recording whose segment 1's header is damaged;
//! - `S19-pins-numbered-below-0.ring`, `S19-pinned-stop.ring`: pins put back that would need
//!   numbers below 0, and a pinned `Stop`;
//! - `R4-kept-none-first-sequence-0.ring`, `R4-block0-only-damaged.ring`: slots that kept no
//!   block, whose rings never passed block 0.

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

/// S14: sequence numbers restart in each segment, so the tie order of equal times and threads
/// compares segments before sequences: segment 0's record comes before segment 1's
/// (docs/FORMAT.md, "Merging", step 3). `print` put segment 1's block 0 first.
#[test]
fn records_of_equal_time_and_thread_come_in_segment_order() {
    let out = dump(&["print", &data("S14-segment-tie")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<String> = text(&out).lines().map(|l| l.split(' ').nth(3).unwrap_or("").to_owned()).collect();
    assert_eq!(lines, ["n=0", "n=1", "n=10"], "{}", text(&out));
}

/// S15: a `Stop` whose arguments hold a cause but no `unwritten` (40 bytes) reads as cause 0
/// with nothing unwritten (docs/FORMAT.md, "The clean stop").
#[test]
fn a_stop_with_a_cause_but_no_unwritten_reads_as_stopped() {
    let stats = text(&dump(&["stats", &data("S15-stop-of-40-bytes.evt")]));
    assert!(stats.contains("stopped cleanly: the writer wrote 1 blocks, 1 events and counted 0 lost"), "{stats}");
    assert!(!stats.contains("not written"), "{stats}");
}

/// S15: the `Stop`'s appended arguments are read whatever the stream's version: a 2.0.1
/// stream's 48-byte `Stop` says its cause (disk full) and its events not written, which are
/// counted lost.
#[test]
fn a_stops_cause_is_read_in_a_stream_of_an_older_minor() {
    let log = data("S15-2.0.1-stream-with-48-byte-stop.evt");
    let stats = text(&dump(&["stats", &log]));
    assert!(stats.contains("format 2.0.1"), "{stats}");
    assert!(stats.contains("disk full: 5 events not written"), "{stats}");
    assert!(stats.contains("5 events lost"), "{stats}");
}

/// S16: "the slot still holds its block 0" means the reader kept a verified block 0: a
/// damaged block 0 with block 1 kept puts the pins older than block 1 back as a new block 0
/// (docs/FORMAT.md, "Pin area").
#[test]
fn a_damaged_block_0_puts_the_pins_back_as_block_0() {
    let ring = data("S16-block0-damaged.ring");
    let check = text(&dump(&["check", &ring]));
    assert!(check.contains("pin area: 2 pinned records put back in 1 blocks, 0 pins dropped"), "{check}");
    assert!(check.contains("damaged: slot 0, block 0: checksum mismatch"), "{check}");
    let print = text(&dump(&["print", &ring, "--raw-ticks"]));
    let values: Vec<&str> = print.lines().filter_map(|l| l.split(' ').nth(3)).collect();
    assert_eq!(values, ["n=1", "n=2", "n=100", "n=101"], "{print}");
}

/// S17: a segment whose header is refused while the log is gathered is known as no segment:
/// the command refuses, naming the file and why, and the other segments read when named alone.
#[test]
fn a_segment_whose_header_is_damaged_before_reading_refuses_the_directory() {
    let dir = data("S17-refused-header");
    let out = dump(&["check", &dir]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("r.000001.evt: header checksum mismatch"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    let rest = dump(&["check", &format!("{dir}/r.000000.evt"), &format!("{dir}/r.000002.evt")]);
    assert!(text(&rest).contains("gap: segment 1 missing before r.000002.evt"), "{}", text(&rest));
}

/// S19: pins put back that would need block numbers below 0 are left out, oldest first, and
/// counted with the area's own pins dropped (4 in the area's word, 3 left out here).
#[test]
fn pins_that_would_be_numbered_below_0_are_counted_as_dropped() {
    let stats = text(&dump(&["stats", &data("S19-pins-numbered-below-0.ring")]));
    assert!(stats.contains("pin area: 3 pinned records put back in 3 blocks, 7 pins dropped"), "{stats}");
}

/// S19: a pinned `Stop` is put back in its block like any record, and, being no event, is
/// not counted among the pinned records put back.
#[test]
fn a_pinned_stop_is_put_back_but_not_counted() {
    let ring = data("S19-pinned-stop.ring");
    let check = dump(&["check", &ring]);
    assert!(check.status.success(), "{}", text(&check));
    assert!(
        text(&check).contains("pin area: 0 pinned records put back in 1 blocks, 0 pins dropped"),
        "{}",
        text(&check)
    );
    assert!(text(&check).contains("4 blocks, 6 events"), "{}", text(&check));
}

/// R4: a slot that kept no block and whose ring never passed block 0 puts its pins back in
/// blocks numbered from 0, as for a thread no slot holds: nothing pinned is lost.
#[test]
fn a_slot_that_kept_no_block_puts_its_pins_back_from_block_0() {
    for (name, pinned, values) in [
        ("R4-kept-none-first-sequence-0.ring", 1, &["n=1"][..]),
        ("R4-block0-only-damaged.ring", 2, &["n=1", "n=2"][..]),
    ] {
        let ring = data(name);
        let stats = text(&dump(&["stats", &ring]));
        assert!(
            stats.contains(&format!("pin area: {pinned} pinned records put back in 1 blocks, 0 pins dropped")),
            "{name}: {stats}"
        );
        let print = text(&dump(&["print", &ring]));
        let got: Vec<&str> = print.lines().filter_map(|l| l.split(' ').nth(3)).collect();
        assert_eq!(got, values, "{name}: {print}");
    }
}
