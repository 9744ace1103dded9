//! One verdict (issue 45): a damaged stream, a ring that wrapped, a recording of segments
//! (whole, and with a segment missing) and a snapshot of a wrapped ring each get the same
//! verdict from every reader: `check` (its exit code and last line) and `check --strict`,
//! `stats`' verdict line, `print`'s closing lines, an export's report, `summary`'s JSON and
//! the typed reader's summary (its findings, strict and not), in the same words; and
//! `latency` says what it left out in those words too.

use crate::common::{self, run, stderr, stdout};
use crate::events;
use std::path::Path;

/// What each reader said of one log: its verdict in words (`whole`, `NOT whole: ...`), or
/// whether it found the log whole where it says only that.
#[derive(Debug)]
struct Said {
    check: bool,
    check_strict: bool,
    stats: String,
    print: String,
    export: String,
    summary_json: bool,
    typed: String,
    typed_strict: bool,
}

/// `NOT whole: ...` from `text` up to the next `;` (or the line's end), `whole` when `text`
/// says no such thing: how `print` and the exports give the verdict.
fn verdict_in(text: &str) -> String {
    let Some(at) = text.find("NOT whole: ") else { return "whole".to_owned() };
    let rest = &text[at..];
    rest[..rest.find([';', '\n']).unwrap_or(rest.len())].to_owned()
}

/// `check`'s (and `--strict`'s) verdict: its exit code, which its last line must agree with.
fn checked(log: &str, strict: bool) -> bool {
    let args: &[&str] = if strict { &["check", "--strict", log] } else { &["check", log] };
    let out = run(args);
    let text = stdout(&out);
    let last = text.lines().last().unwrap_or_default().trim().to_owned();
    let whole = out.status.code() == Some(0);
    assert_eq!(last == "whole", whole, "{args:?}: exit {:?}\n{text}", out.status.code());
    assert!(whole || last.starts_with("NOT whole: "), "{text}");
    whole
}

fn said(log: &Path) -> Said {
    let path = log.to_str().unwrap();
    let stats = stdout(&run(&["stats", path]));
    // Its verdict is the last line of its findings, before its tables.
    let stats_verdict = stats
        .lines()
        .map(str::trim)
        .rfind(|l| *l == "whole" || l.starts_with("NOT whole: "))
        .unwrap_or_else(|| panic!("stats gives no verdict:\n{stats}"))
        .to_owned();
    let print = run(&["print", path]);
    assert!(print.status.success(), "{}", stderr(&print));
    let out = log.with_extension("verdict.json");
    let export = run(&["export", "--to", "chrome", path, "-o", out.to_str().unwrap()]);
    assert!(export.status.success(), "{}", stderr(&export));
    let summary: serde_json::Value =
        serde_json::from_str(&stdout(&run(&["summary", path, "--format", "json"]))).unwrap();
    let mut reader = events::read(log).unwrap();
    while reader.next_item().is_some() {}
    let typed = reader.summary();
    Said {
        check: checked(path, false),
        check_strict: checked(path, true),
        stats: stats_verdict,
        print: verdict_in(&stderr(&print)),
        export: verdict_in(&stderr(&export)),
        summary_json: summary["findings"]["whole"].as_bool().unwrap(),
        typed: typed.findings.verdict(false),
        typed_strict: typed.findings.is_whole(true),
    }
}

/// Every reader of `log` says `verdict` (`whole` or `NOT whole: ...`), and strict ones
/// (`check --strict`, the typed reader's findings strict) find it whole when `strict_whole`.
fn one_verdict(log: &Path, verdict: &str, strict_whole: bool) {
    let s = said(log);
    let whole = verdict == "whole";
    assert_eq!((s.check, s.summary_json, s.typed.as_str()), (whole, whole, verdict), "{s:#?}");
    assert_eq!((s.stats.as_str(), s.print.as_str(), s.export.as_str()), (verdict, verdict, verdict), "{s:#?}");
    assert_eq!((s.check_strict, s.typed_strict), (strict_whole, strict_whole), "{s:#?}");
}

#[test]
fn a_damaged_stream_is_not_whole_to_any_reader() {
    let d = common::dir("verdict-damaged");
    let log = d.join("damaged.evt");
    crate::ledger::damaged_log(&log);
    // Its stop marker counts the damaged block and its event, which no reader can.
    let verdict = "NOT whole: 5 events lost, 2 blocks missing (dropped or damaged), 1 damaged block, 1 bad record, \
                   1 record of an unknown code, 1 block repeated, 1 block out of order, \
                   2 counts that disagree with their stop markers";
    one_verdict(&log, verdict, false);
}

/// A packed block whose CRC holds and whose records do not unpack is one damaged block to
/// every reader, which go on at its end ([`common::unpackable_block_log`]): `print` (which
/// unpacks on its workers, after reading on) with any number of workers, `check`, `stats`,
/// the exports and the typed reader (which unpack as they read) say one verdict, and `print`
/// shows every event but the block's.
#[test]
fn a_packed_block_that_does_not_unpack_costs_that_block_only_to_every_reader() {
    let d = common::dir("verdict-unpackable");
    let (good, log) = (d.join("good.evt"), d.join("unpackable.evt"));
    common::two_threads_log(&good, true);
    let (offset, lost) = common::unpackable_block_log(&log);
    let path = log.to_str().unwrap();
    // Its stop marker counts the block's events, which no reader can; the copy inside it is
    // read by none (it would be a block repeated).
    let verdict = "NOT whole: 1 block missing (dropped or damaged), 1 damaged block, \
                   2 counts that disagree with their stop markers";
    one_verdict(&log, verdict, false);

    let whole = stdout(&run(&["print", good.to_str().unwrap()]));
    let one = run(&["print", "--jobs", "1", path]);
    let shown = stdout(&one);
    assert_eq!(shown.lines().count(), whole.lines().count() - lost, "the block's {lost} events, no more");
    assert!(shown.lines().all(|l| whole.contains(l)));
    let said = stderr(&one);
    let skipped: Vec<&str> = said.lines().filter(|l| l.contains("skipped")).collect();
    assert_eq!(skipped.len(), 1, "{said}");
    assert!(skipped[0].contains(&format!("block 1 at offset {offset} skipped: ")), "{}", skipped[0]);
    assert!(skipped[0].contains("not a zstd frame"), "{}", skipped[0]);
    for jobs in ["2", "4"] {
        let many = run(&["print", "--jobs", jobs, path]);
        assert_eq!((stdout(&many), stderr(&many)), (shown.clone(), said.clone()), "--jobs {jobs}");
    }
}

/// A ring that overwrote its oldest blocks is whole, as a ring keeps only the latest: to
/// every reader (the typed reader and `stats` called it not whole), unless strict.
#[test]
fn a_wrapped_ring_is_whole_to_every_reader_unless_strict() {
    let d = common::dir("verdict-ring");
    let ring = d.join("ring.evt");
    common::tiny_ring(&ring);
    let check = stdout(&run(&["check", ring.to_str().unwrap()]));
    assert!(check.contains("overwritten: "), "the ring wrapped: {check}");
    one_verdict(&ring, "whole", false);
}

#[test]
fn a_recording_of_segments_is_whole_and_a_missing_segment_is_not() {
    let d = common::dir("verdict-segments");
    let dir = d.join("dir");
    std::fs::create_dir(&dir).unwrap();
    crate::segments::four_segments(&dir);
    one_verdict(&dir, "whole", true);
    std::fs::remove_file(dir.join("trace.000001.evt")).unwrap();
    one_verdict(&dir, "NOT whole: 1 segment missing", false);
}

/// A snapshot of a ring that wrapped, taken while it records: whole, its oldest blocks
/// overwritten (a problem only when strict).
#[test]
fn a_snapshot_gets_one_verdict() {
    let d = common::dir("verdict-snapshot");
    let (ring, snapshot) = (d.join("ring.evt"), d.join("snapshot.evt"));
    common::tiny_ring_and_snapshot(&ring, Some(&snapshot));
    let stats = stdout(&run(&["stats", snapshot.to_str().unwrap()]));
    assert!(stats.contains("snapshot"), "{stats}");
    one_verdict(&snapshot, "whole", false);
}

/// `latency` says what it could not read in the findings' words, as the exports do: a
/// stream of a sweep (a span) whose second block is damaged and whose third holds a record of
/// an unknown code.
#[test]
fn latency_says_what_it_left_out_in_the_findings_words() {
    use event_format::wire::{BlockHeader, BlockWriter, Clock, Header, Order, Producer, SetEntry, Value};
    let d = common::dir("verdict-latency");
    let log = d.join("sweep.evt");
    let schema = events::SET.schema().unwrap();
    let sets = SetEntry::assign([schema.clone()]);
    let code = |name: &str| sets[0].wire_code(schema.events.iter().position(|e| e.name == name).unwrap()).unwrap();
    let mut bytes =
        Header::with_sets(sets.clone(), 1024, Clock::deterministic(), Producer::current(0)).encode().unwrap();
    let (p, w) = (Value::Pointer(1), Value::Word(2));
    let records = [
        vec![(code("SweepBegin"), vec![p, w, Value::Str(event_format::wire::Text::new("full"))])],
        vec![(code("SweepEnd"), vec![p, w, Value::Bool(true)])],
        vec![(code("SweepEnd"), vec![p, w, Value::Bool(true)]), (0xFFF0, vec![w])],
    ];
    for (sequence, records) in records.iter().enumerate() {
        let head = BlockHeader { thread: 1, sequence: sequence as u64, base_time: 10, ..Default::default() };
        let mut block = BlockWriter::new(Order::Little, 1024, &head);
        for (i, (code, values)) in records.iter().enumerate() {
            block.push(*code, 10 + i as u64, values).unwrap();
        }
        let mut block = block.finish();
        if sequence == 1 {
            block[60] ^= 0x40;
        }
        bytes.extend(block);
    }
    std::fs::write(&log, bytes).unwrap();
    let out = run(&["latency", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = "event-dump: left out what could not be read: 1 damaged block, 1 record of an unknown code;";
    assert!(stderr(&out).contains(said), "{}", stderr(&out));
}

/// `follow` of a ring file its program is done with closes with the verdict every reader
/// gives, in `print`'s words; a whole ring adds no verdict line.
#[test]
fn follow_closes_with_the_verdict_of_the_ring_it_followed() {
    let d = common::dir("verdict-follow");
    let damaged = d.join("damaged.evt");
    common::damaged_records_ring(&damaged, event_format::wire::Order::Little);
    let path = damaged.to_str().unwrap();
    let follow = run(&["follow", path, "--interval", "1"]);
    assert!(follow.status.success(), "{}", stderr(&follow));
    let print = run(&["print", path]);
    let verdict = verdict_in(&stderr(&print));
    assert!(verdict.starts_with("NOT whole: "), "{}", stderr(&print));
    assert_eq!(verdict_in(&stderr(&follow)), verdict, "{}", stderr(&follow));
    assert!(stderr(&follow).contains(&format!("{path}: {verdict}; `event-dump check {path}` tells more")));

    let ring = d.join("ring.evt");
    common::tiny_ring(&ring);
    let follow = run(&["follow", ring.to_str().unwrap(), "--interval", "1"]);
    assert!(follow.status.success(), "{}", stderr(&follow));
    assert!(!stderr(&follow).contains("whole"), "{}", stderr(&follow));
}

/// `follow` of a recording of segments closes, once its recording ended, with the verdict
/// every reader gives it: none for a whole one, `print`'s line for one missing a segment.
#[test]
fn follow_closes_with_the_verdict_of_the_recording_it_followed() {
    let d = common::dir("verdict-follow-segments");
    let dir = d.join("dir");
    std::fs::create_dir(&dir).unwrap();
    crate::segments::four_segments(&dir);
    let path = dir.to_str().unwrap();
    let follow = run(&["follow", path, "--interval", "1"]);
    assert!(follow.status.success(), "{}", stderr(&follow));
    assert!(!stderr(&follow).contains("whole"), "{}", stderr(&follow));

    std::fs::remove_file(dir.join("trace.000001.evt")).unwrap();
    let verdict = verdict_in(&stderr(&run(&["print", path])));
    assert_eq!(verdict, "NOT whole: 1 segment missing");
    let follow = run(&["follow", path, "--interval", "1"]);
    assert!(follow.status.success(), "{}", stderr(&follow));
    assert!(
        stderr(&follow).contains(&format!("{path}: {verdict}; `event-dump check {path}` tells more")),
        "{}",
        stderr(&follow)
    );
}
