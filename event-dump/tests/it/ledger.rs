//! One ledger (issue 27): a stream with damage of every kind event-format's ledger counts, read
//! by every reader, each of which must count the same: `stats`, `check`, the SQLite, Parquet,
//! Chrome and CTF exports, the typed reader's summary and the fuzz targets' tally. The stream
//! ends with its stop marker, which no reader counts as a block (issue 31: `stats` said 14949
//! blocks where the SQLite export and the typed reader said 14950).

use crate::common::{self, run, stderr, stdout};
use crate::events;
use event_format::wire::{BlockHeader, BlockWriter, Clock, Header, Order, Producer, SetEntry, Stop, Text, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// A directory of the test's own ([`common::numbered_dir`]).
fn dir() -> common::Scratch {
    common::numbered_dir("ledger")
}

/// What a reader says it found; `None` where it does not say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counted {
    events: Option<u64>,
    blocks: Option<u64>,
    damaged: Option<u64>,
    bad: Option<u64>,
    unknown: Option<u64>,
    lost: Option<u64>,
    missing: Option<u64>,
    repeated: Option<u64>,
    late: Option<u64>,
    truncated: Option<u64>,
}

/// The counts of [`damaged_log`], as it is made.
const EXPECTED: Counted = Counted {
    events: Some(9),
    blocks: Some(7),
    damaged: Some(1),
    bad: Some(1),
    unknown: Some(1),
    lost: Some(5),
    missing: Some(2),
    repeated: Some(1),
    late: Some(1),
    truncated: Some(1),
};

/// A stream of this crate's event set, block size 4096, whose blocks are, in stream order:
///
/// - thread 1, block 0: `ArenaCreate`, a `PoolInit` whose class (2000 bytes) the writer cuts,
///   `Dropped(1, 3)`;
/// - thread 1, block 1, damaged (a flipped byte: its CRC fails);
/// - thread 1, block 2: `ArenaDestroy`, a record of an unknown code, a `ClientCheck` whose bool
///   is 5 (a bad record);
/// - thread 1, block 4, its `lost` field 2: `ArenaDestroy` (block 3 is missing, and block 1
///   with the damage: 2 blocks missing);
/// - thread 1, block 0 again (a repeat): `ArenaCreate`;
/// - thread 2, blocks 0, 2, 1 (block 1 comes late): one `ClientMark` each;
/// - the stop marker, whose counts are what the writer wrote (the damaged block included).
///
/// Events: 3 + 1 + 1 + 1 + 3 = 9; blocks read: 7; lost: 3 + 2.
pub(crate) fn damaged_log(path: &Path) {
    let order = Order::Little;
    let schema = events::SET.schema().unwrap();
    let code = |name: &str| {
        let index = schema.events.iter().position(|e| e.name == name).unwrap();
        SetEntry::assign([schema.clone()])[0].wire_code(index).unwrap()
    };
    let header =
        Header::with_sets(SetEntry::assign([schema.clone()]), 4096, Clock::deterministic(), Producer::current(0));
    let mut bytes = header.encode().unwrap();
    let block = |thread: u64, sequence: u64, lost: u64, records: &[(u16, Vec<Value<'_>>)]| {
        let head = BlockHeader { thread, sequence, lost, base_time: 100 * sequence, ..Default::default() };
        let mut w = BlockWriter::new(order, 4096, &head);
        for (i, (code, values)) in records.iter().enumerate() {
            w.push(*code, 100 * sequence + i as u64, values).unwrap();
        }
        w.finish()
    };
    let p = |v: u64| Value::Pointer(v);
    let w = |v: u64| Value::Word(v);
    let long = "x".repeat(2000);
    let create = (code("ArenaCreate"), vec![p(1), Value::Address(2), w(3)]);
    let destroy = (code("ArenaDestroy"), vec![p(1), w(2)]);
    let mark = (code("ClientMark"), vec![]);
    let mut blocks = [
        block(
            1,
            0,
            0,
            &[
                create.clone(),
                (code("PoolInit"), vec![p(1), p(2), Value::Str(Text::new(&long)), Value::Unsigned(8)]),
                (event_format::builtin::DROPPED, vec![w(1), w(3)]),
            ],
        ),
        block(1, 1, 0, std::slice::from_ref(&destroy)),
        block(1, 2, 0, &[destroy.clone(), (0xFFF0, vec![w(9)]), (code("ClientCheck"), vec![w(5)])]),
        block(1, 4, 2, std::slice::from_ref(&destroy)),
        block(1, 0, 0, &[create]),
        block(2, 0, 0, std::slice::from_ref(&mark)),
        block(2, 2, 0, std::slice::from_ref(&mark)),
        block(2, 1, 0, &[mark]),
    ];
    // Block 1 of thread 1: a byte of its record flipped after it was sealed.
    blocks[1][60] ^= 0x40;
    let mut written = Stop { blocks: blocks.len() as u64, events: 0, lost: 5, ..Stop::default() };
    for (i, b) in blocks.iter().enumerate() {
        // The records each block holds, as its writer counted them.
        written.events += [3, 1, 3, 1, 1, 1, 1, 1][i];
        bytes.extend_from_slice(b);
    }
    bytes.extend(event_format::raw::stop_block(order, 4096, 0, 1000, &written));
    std::fs::write(path, bytes).unwrap();
}

/// The number before `what` in `text` (`"12 events lost"` -> 12 for `" events lost"`).
fn number_before(text: &str, what: &str) -> Option<u64> {
    let at = text.find(what)?;
    text[..at].rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

fn from_stats(log: &str) -> Counted {
    let out = stdout(&run(&["stats", log]));
    Counted {
        events: number_before(&out, " events in "),
        blocks: number_before(&out, " blocks over "),
        damaged: number_before(&out, " damaged blocks"),
        bad: number_before(&out, " bad records"),
        unknown: number_before(&out, " records of unknown codes"),
        lost: number_before(&out, " events lost"),
        missing: number_before(&out, " blocks missing"),
        repeated: number_before(&out, " blocks repeated"),
        late: number_before(&out, " blocks out of order"),
        truncated: None,
    }
}

fn from_check(log: &str) -> Counted {
    let out = stdout(&run(&["check", log]));
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    let count = |prefix: &str| lines.iter().filter(|l| l.starts_with(prefix)).count() as u64;
    // "gap: thread 1: block 3 missing (...)", "gap: thread 1: blocks 3..5 missing (...)".
    let missing = lines
        .iter()
        .filter_map(|l| l.strip_prefix("gap: "))
        .map(|l| match l.split_once("blocks ") {
            Some((_, range)) => {
                let (a, b) = range.split_once(' ').unwrap().0.split_once("..").unwrap();
                b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap() + 1
            }
            None => 1,
        })
        .sum();
    let sum_of = |prefix: &str, what: &str| -> u64 {
        lines.iter().filter(|l| l.starts_with(prefix)).filter_map(|l| number_before(l, what)).sum()
    };
    Counted {
        events: number_before(lines[0], " events"),
        blocks: number_before(lines[0], " blocks,"),
        damaged: Some(count("damaged: ")),
        bad: Some(count("bad record: ")),
        unknown: Some(sum_of("unknown code ", " records skipped")),
        lost: Some(sum_of("lost: ", " events")),
        missing: Some(missing),
        repeated: Some(count("repeat: ")),
        late: Some(count("backwards: ")),
        truncated: None,
    }
}

/// What an export's line on stderr says it skipped.
fn skipped_line(err: &str) -> Counted {
    Counted {
        damaged: number_before(err, " damaged block"),
        bad: number_before(err, " bad record"),
        unknown: number_before(err, " record of an unknown code").or(number_before(err, " records of unknown codes")),
        ..Counted::default()
    }
}

fn from_sqlite(log: &str, out: &Path) -> Counted {
    let export = run(&["export", "--to", "sqlite", log, "-o", out.to_str().unwrap()]);
    assert!(export.status.success(), "{}", stderr(&export));
    let db = rusqlite::Connection::open(out).unwrap();
    let row: [i64; 8] = db
        .query_row(
            "SELECT events, blocks, damaged_blocks, bad_records, unknown_records, lost_events, missing_blocks, \
             truncated_strings FROM event_log",
            [],
            |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?]),
        )
        .unwrap();
    let [events, blocks, damaged, bad, unknown, lost, missing, truncated] = row.map(|n| Some(n as u64));
    let said = skipped_line(&stderr(&export));
    assert_eq!((said.damaged, said.bad, said.unknown), (damaged, bad, unknown), "{}", stderr(&export));
    Counted { events, blocks, damaged, bad, unknown, lost, missing, repeated: None, late: None, truncated }
}

fn from_parquet(log: &str, out: &Path) -> Counted {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let export = run(&["export", "--to", "parquet", log, "-o", out.to_str().unwrap()]);
    assert!(export.status.success(), "{}", stderr(&export));
    // The log's one `logs` file, in its `date=` partition.
    let partition = std::fs::read_dir(out.join("logs")).unwrap().next().unwrap().unwrap().path();
    let part = std::fs::read_dir(partition).unwrap().next().unwrap().unwrap().path();
    let reader = SerializedFileReader::new(std::fs::File::open(part).unwrap()).unwrap();
    let mut fields = BTreeMap::new();
    for row in reader.get_row_iter(None).unwrap() {
        for (name, field) in row.unwrap().get_column_iter() {
            fields.insert(name.clone(), field.to_string());
        }
    }
    let n = |name: &str| fields.get(name).and_then(|v| v.parse::<u64>().ok());
    let said = skipped_line(&stderr(&export));
    assert_eq!(
        (said.damaged, said.bad, said.unknown),
        (n("damaged_blocks"), n("bad_records"), n("unknown_records")),
        "{}",
        stderr(&export)
    );
    Counted {
        events: n("events"),
        blocks: n("blocks"),
        damaged: n("damaged_blocks"),
        bad: n("bad_records"),
        unknown: n("unknown_records"),
        lost: n("lost_events"),
        missing: n("missing_blocks"),
        repeated: None,
        late: None,
        truncated: n("truncated_strings"),
    }
}

fn from_viewer(to: &str, log: &str, out: &Path) -> Counted {
    let export = run(&["export", "--to", to, log, "-o", out.to_str().unwrap()]);
    assert!(export.status.success(), "{to}: {}", stderr(&export));
    skipped_line(&stderr(&export))
}

fn from_typed(bytes: &[u8]) -> Counted {
    let mut reader = events::from_reader(bytes).unwrap();
    while reader.next_item().is_some() {}
    let s = reader.summary();
    // Its summary's events are those of its own set, typed, apart from the others; the
    // `Dropped` events are `Lost` items: every event is in its ledger.
    Counted {
        events: Some(reader.ledger().events()),
        blocks: Some(s.blocks),
        damaged: Some(s.damaged_blocks),
        bad: Some(s.bad_records),
        unknown: Some(s.unknown_codes),
        lost: Some(s.lost),
        missing: Some(s.missing_blocks),
        repeated: Some(s.repeated_blocks),
        late: Some(s.late_blocks),
        truncated: Some(s.truncated_strings),
    }
}

fn from_fuzz_tally(bytes: &[u8]) -> Counted {
    let tally = event_format::fuzzing::tally_stream(bytes);
    let l = tally.ledger.expect("the header is read");
    Counted {
        events: Some(l.events()),
        blocks: Some(l.blocks()),
        damaged: Some(l.damaged_blocks().len() as u64),
        bad: Some(l.bad_records().len() as u64),
        unknown: Some(l.unknown_records()),
        lost: Some(l.lost()),
        missing: Some(l.missing_blocks()),
        repeated: Some(l.repeated_blocks()),
        late: Some(l.late_blocks()),
        truncated: Some(l.truncated_strings()),
    }
}

/// Each count a reader gives must be the expected one.
fn agrees(reader: &str, counted: Counted) {
    let pairs = [
        ("events", counted.events, EXPECTED.events),
        ("blocks", counted.blocks, EXPECTED.blocks),
        ("damaged blocks", counted.damaged, EXPECTED.damaged),
        ("bad records", counted.bad, EXPECTED.bad),
        ("records of unknown codes", counted.unknown, EXPECTED.unknown),
        ("events lost", counted.lost, EXPECTED.lost),
        ("blocks missing", counted.missing, EXPECTED.missing),
        ("blocks repeated", counted.repeated, EXPECTED.repeated),
        ("blocks out of order", counted.late, EXPECTED.late),
        ("strings cut", counted.truncated, EXPECTED.truncated),
    ];
    for (what, got, expected) in pairs {
        if got.is_some() {
            assert_eq!(got, expected, "{reader}: {what} ({counted:?})");
        }
    }
}

#[test]
fn every_reader_counts_one_damaged_stream_the_same() {
    let d = dir();
    let path = d.join("damaged.evt");
    damaged_log(&path);
    let log = path.to_str().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let fresh = |name: &str| {
        let out = d.join(name);
        let _ = std::fs::remove_file(&out);
        let _ = std::fs::remove_dir_all(&out);
        out
    };
    let readers = [
        ("stats", from_stats(log)),
        ("check", from_check(log)),
        ("export --to sqlite", from_sqlite(log, &fresh("damaged.db"))),
        ("export --to parquet", from_parquet(log, &fresh("damaged-parquet"))),
        ("export --to chrome", from_viewer("chrome", log, &fresh("damaged.json"))),
        ("export --to ctf", from_viewer("ctf", log, &fresh("damaged-ctf"))),
        ("the typed reader", from_typed(&bytes)),
        ("the fuzz tally", from_fuzz_tally(&bytes)),
    ];
    for (reader, counted) in readers {
        agrees(reader, counted);
    }
    // Every reader that counts blocks counts them: not one without its count of blocks.
    for (reader, counted) in &readers {
        let viewer = reader.ends_with("chrome") || reader.ends_with("ctf");
        assert!(viewer || counted.blocks.is_some(), "{reader} says how many blocks");
        assert!(counted.damaged.is_some() && counted.bad.is_some(), "{reader}: {counted:?}");
    }
}

/// Issue 31: `stats` counted 14949 blocks in a log where the SQLite export and the typed reader
/// counted 14950: the stop marker. A recorded log that stopped cleanly: every reader leaves the
/// marker out, as the writer does in its own count (the marker's `blocks`).
#[test]
fn the_stop_marker_is_no_block_to_any_reader() {
    let d = dir();
    let path = d.join("stopped.evt");
    common::sample_log(&path);
    let log = path.to_str().unwrap();
    let stats = stdout(&run(&["stats", log]));
    let blocks = number_before(&stats, " blocks over ").unwrap();
    let written = stats.split("the writer wrote ").nth(1).and_then(|s| number_before(s, " blocks,"));
    assert_eq!(written, Some(blocks), "{stats}");
    let db = d.join("stopped.db");
    let _ = std::fs::remove_file(&db);
    let export = run(&["export", "--to", "sqlite", log, "-o", db.to_str().unwrap()]);
    assert!(export.status.success(), "{}", stderr(&export));
    let exported: i64 =
        rusqlite::Connection::open(&db).unwrap().query_row("SELECT blocks FROM event_log", [], |r| r.get(0)).unwrap();
    assert_eq!(exported as u64, blocks, "the SQLite export");
    let mut reader = events::read(&path).unwrap();
    while reader.next_item().is_some() {}
    assert_eq!(reader.summary().blocks, blocks, "the typed reader");
}

/// `stats`' bytes per event in records are what the records take in their blocks as the
/// writer wrote them: a stream by callsite (format 2.1.1) is counted by its records by
/// callsite, not by their expansion (which a reader makes, longer). Before, `stats` counted
/// the expansion: 48.9 bytes an event on this fixture instead of 45.7.
#[test]
fn bytes_in_records_are_the_records_as_written() {
    use event_format::decode::Decoder;
    use event_format::wire::Unpacker;
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/v2.1.1/tracing-le.evt");
    let bytes = std::fs::read(&log).unwrap();
    let mut decoder = Decoder::new(&bytes[..]).unwrap();
    let block_size = decoder.header().block_size;
    let (mut unpacker, mut spare) = (Unpacker::new(), Vec::new());
    // Each block: its thread, its records as written, and their expansion's length.
    let mut blocks = Vec::new();
    while let Some(pending) = decoder.next_pending() {
        let block = pending.unwrap().unpack_as_written(&mut unpacker, &mut spare).unwrap();
        let expanded = event_format::callsites::expand(block.order, &block.records, block_size)
            .map_or(block.records.len(), |e| e.len());
        blocks.push((block.header.thread, block.records.len(), expanded));
    }
    // The stop marker's block, last, is not a block of events: `stats` leaves its bytes out.
    if blocks.last().is_some_and(|b| b.0 == 0) {
        blocks.pop();
    }
    let written: usize = blocks.iter().map(|b| b.1).sum();
    let expanded: usize = blocks.iter().map(|b| b.2).sum();
    assert!(expanded > written, "the fixture's records by callsite expand");
    let stats = stdout(&run(&["stats", log.to_str().unwrap()]));
    let events = number_before(&stats, " events in ").expect("a count of events");
    let line = stats.lines().find(|l| l.contains("bytes per event in records")).expect("the line");
    let expected = format!("{:.1} bytes per event in records", written as f64 / events as f64);
    assert!(line.trim_start().starts_with(&expected), "{line} (expected {expected})");
}
