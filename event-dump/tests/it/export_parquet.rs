//! `event-dump export --to parquet` as a user runs it, read back by a real engine (DuckDB's
//! Python package): per event type, counts, sums and distinct values equal what `stats` and
//! `print --format json` say, for logs of several processes exported in two runs into one
//! dataset; the `logs` table's counts of losses, missing and damaged blocks and unknown codes
//! equal `stats`; every letter's extreme values come back exactly; refused runs leave the
//! dataset byte for byte as it was.
//!
//! Without DuckDB (`pip install duckdb`) the tests that need it print "skipped" and pass,
//! unless `EVENT_REQUIRE_DUCKDB=1` (CI) makes its absence a failure.

use crate::common::{self, *};
use event_format::wire::{BlockHeader, BlockWriter, Header, Order, Text, Value};
use event_runtime::Policy;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The columns before the parameters in every event table.
const FIXED: [&str; 5] = ["log", "thread", "ticks", "ns", "time"];

fn dir() -> PathBuf {
    common::dir("export-parquet")
}

/// A fresh dataset path (removed if a previous run left one).
fn fresh(name: &str) -> PathBuf {
    let d = dir().join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn export(out: &Path, logs: &[&Path]) -> Output {
    let mut args = vec!["export", "--to", "parquet", "-o", out.to_str().unwrap()];
    args.extend(logs.iter().map(|l| l.to_str().unwrap()));
    run(&args)
}

fn export_ok(out: &Path, logs: &[&Path]) -> Output {
    let result = export(out, logs);
    assert!(result.status.success(), "{}", stderr(&result));
    result
}

/// Whether DuckDB's Python package can be imported; when it cannot, says so (past the test
/// harness's capture) or fails when `EVENT_REQUIRE_DUCKDB=1`.
fn duckdb_available() -> bool {
    let ok = Command::new("python3").args(["-c", "import duckdb"]).output().is_ok_and(|o| o.status.success());
    if ok {
        return true;
    }
    assert!(
        std::env::var("EVENT_REQUIRE_DUCKDB").as_deref() != Ok("1"),
        "DuckDB's Python package not found, and EVENT_REQUIRE_DUCKDB=1 requires it (pip install duckdb)"
    );
    let _ = writeln!(std::io::stderr(), "skipped: DuckDB's Python package not found (pip install duckdb)");
    false
}

/// Runs `sql` in DuckDB; its rows, each an array of values. Doubles come back as their
/// Python `repr` in a string (`"nan"`, `"-inf"`, `"0.25"`), so that NaN survives JSON;
/// integers exactly; timestamps as microseconds since the epoch.
fn duck(sql: &str) -> Vec<Vec<Json>> {
    const SCRIPT: &str = r#"
import duckdb, json, sys, datetime
def conv(v):
    if isinstance(v, bool) or v is None or isinstance(v, int) or isinstance(v, str):
        return v
    if isinstance(v, float):
        return "float:" + repr(v)
    if isinstance(v, datetime.datetime):
        d = v - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return (d.days * 86400 + d.seconds) * 1000000 + d.microseconds
    return "other:" + str(v)
rows = duckdb.sql(sys.argv[1]).fetchall()
print(json.dumps([[conv(v) for v in row] for row in rows]))
"#;
    let out = Command::new("python3").args(["-c", SCRIPT, sql]).output().unwrap();
    assert!(out.status.success(), "{sql}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn table(out: &Path, name: &str) -> String {
    format!("read_parquet('{}/{name}/*.parquet')", out.display())
}

/// `stats`' counts per event of `log`: `Kind.Name` -> count.
fn stats_per_event(log: &Path) -> BTreeMap<String, i64> {
    let out = run(&["stats", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let section = text.split("  per event:\n").nth(1).unwrap().split("  per thread:").next().unwrap();
    section
        .lines()
        .map(|l| {
            let mut parts = l.split_whitespace();
            (parts.next().unwrap().to_owned(), parts.next().unwrap().parse().unwrap())
        })
        .collect()
}

/// A number `stats` prints before `what` (`"events lost"`, `"blocks missing"`...).
fn stats_number(log: &Path, what: &str) -> u64 {
    let stats = stdout(&run(&["stats", log.to_str().unwrap()]));
    for part in stats.lines().flat_map(|l| l.split(", ")) {
        if let Some(n) = part.trim().strip_suffix(what) {
            return n.split_whitespace().last().unwrap().parse().unwrap();
        }
    }
    panic!("no {what} in {stats}")
}

/// The column of parameter `params[i]`, as the exporter names it.
fn columns(params: &[String]) -> Vec<String> {
    let mut taken: Vec<String> = FIXED.iter().map(|c| (*c).to_owned()).collect();
    params
        .iter()
        .map(|p| {
            let mut c = p.clone();
            while taken.iter().any(|t| t.eq_ignore_ascii_case(&c)) {
                c.push('_');
            }
            taken.push(c.clone());
            c
        })
        .collect()
}

/// A JSON argument as an integer, where it is one: numbers, decimal strings, hex strings.
fn integer(v: &Json) -> Option<i128> {
    match v {
        Json::Number(n) => n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)),
        Json::String(s) => match s.strip_prefix("0x") {
            Some(hex) => i128::from_str_radix(hex, 16).ok(),
            None => s.parse().ok(),
        },
        _ => None,
    }
}

/// What `print --format json` says of one event type of a log: its count, and per parameter
/// the number of distinct values and, for integers, their sum.
#[derive(Debug, Default, PartialEq)]
struct Aggregates {
    count: i64,
    distinct: BTreeMap<String, i64>,
    sums: BTreeMap<String, i128>,
}

/// `print --format json` of `log`, summarised per `Kind.Name`, with its parameter names.
/// A parameter has a sum when every value of it is an integer (pointers in hex, words beyond
/// 2^53 in decimal strings).
fn printed(log: &Path) -> BTreeMap<String, (Vec<String>, Aggregates)> {
    type Seen = (Vec<String>, i64, BTreeMap<String, Vec<String>>, BTreeMap<String, Option<i128>>);
    let mut values: BTreeMap<String, Seen> = BTreeMap::new();
    for p in print_json(&[log.to_str().unwrap()]) {
        let entry = values.entry(format!("{}.{}", p.kind, p.event)).or_default();
        entry.0 = p.args.keys().cloned().collect();
        entry.1 += 1;
        for (name, v) in &p.args {
            entry.2.entry(name.clone()).or_default().push(v.to_string());
            let n = integer(v).filter(|_| !matches!(v, Json::Bool(_)));
            let sum = entry.3.entry(name.clone()).or_insert(Some(0));
            *sum = sum.and_then(|s| n.map(|n| s + n));
        }
    }
    values
        .into_iter()
        .map(|(name, (params, count, mut distinct, sums))| {
            let distinct = distinct
                .iter_mut()
                .map(|(k, v)| {
                    v.sort();
                    v.dedup();
                    (k.clone(), v.len() as i64)
                })
                .collect();
            let sums = sums.into_iter().filter_map(|(k, v)| Some((k, v?))).collect();
            (name, (params, Aggregates { count, distinct, sums }))
        })
        .collect()
}

/// The same summary of one event type of log `serial`, from the dataset, by DuckDB: sums of
/// the integer columns.
fn queried(out: &Path, name: &str, serial: i64, params: &[String]) -> Aggregates {
    let cols = columns(params);
    let types: BTreeMap<String, String> = duck(&format!("DESCRIBE SELECT * FROM {}", table(out, name)))
        .into_iter()
        .map(|r| (r[0].as_str().unwrap().to_owned(), r[1].as_str().unwrap().to_owned()))
        .collect();
    let integers: Vec<bool> =
        cols.iter().map(|c| matches!(types[c].as_str(), "UBIGINT" | "UINTEGER" | "BIGINT")).collect();
    let mut select = vec!["count(*)".to_owned()];
    for (c, int) in cols.iter().zip(&integers) {
        select.push(format!("count(DISTINCT \"{c}\")"));
        if *int {
            select.push(format!("sum(\"{c}\")::VARCHAR"));
        }
    }
    let row = &duck(&format!("SELECT {} FROM {} WHERE log = {serial}", select.join(", "), table(out, name)))[0];
    let mut values = row.iter();
    let mut s = Aggregates { count: values.next().unwrap().as_i64().unwrap(), ..Default::default() };
    for (p, int) in params.iter().zip(&integers) {
        s.distinct.insert(p.clone(), values.next().unwrap().as_i64().unwrap());
        if *int {
            s.sums.insert(p.clone(), values.next().unwrap().as_str().unwrap().parse().unwrap());
        }
    }
    s
}

/// Checks every event type of `log`, exported as log `serial` into `out`, against `stats`
/// and `print`.
fn check_log(out: &Path, log: &Path, serial: i64) {
    let stats = stats_per_event(log);
    let printed = printed(log);
    assert_eq!(
        printed.iter().map(|(k, (_, s))| (k.clone(), s.count)).collect::<BTreeMap<_, _>>(),
        stats,
        "print and stats agree"
    );
    for (name, (params, want)) in &printed {
        let got = queried(out, name, serial, params);
        assert_eq!(&got, want, "{name} of log {serial} ({})", log.display());
    }
    let total: i64 = stats.values().sum();
    let row = &duck(&format!("SELECT events FROM {} WHERE log = {serial}", table(out, "logs")))[0];
    assert_eq!(row[0].as_i64(), Some(total));
}

/// A log of many `ObjectAlloc` events of several sizes, on one thread.
fn allocations_log(path: &Path) {
    many_events_log(path, 3000);
}

#[test]
fn several_processes_in_two_runs_agree_with_stats_and_print() {
    if !duckdb_available() {
        return;
    }
    let a = dir().join("fleet-a.evt");
    sample_log(&a);
    let b = dir().join("fleet-b.evt");
    handmade_log(&b, Order::Big);
    let c = dir().join("fleet-c.evt");
    dropping_log(&c);
    let d = dir().join("fleet-d.evt");
    allocations_log(&d);
    let out = fresh("fleet");
    let first = export_ok(&out, &[&a, &b]);
    assert!(stdout(&first).contains("events as log 2 in"), "{}", stdout(&first));
    let second = export_ok(&out, &[&c, &d]);
    assert!(stdout(&second).contains("events as log 4 in"), "a second run appends: {}", stdout(&second));
    for (serial, log) in [(1, &a), (2, &b), (3, &c), (4, &d)] {
        check_log(&out, log, serial);
    }
    // The logs are told apart: each has its own program and pid.
    let logs = duck(&format!("SELECT log, program, pid, format_version FROM {} ORDER BY log", table(&out, "logs")));
    assert_eq!(logs.len(), 4);
    assert_eq!(logs[1][1], "handmade");
    assert_eq!(logs[1][2], 4242);
    assert_eq!(logs[0][3].as_str().unwrap(), event_format::wire::FORMAT_VERSION.to_string());
    // A query over all logs at once, as a user writes it.
    let rows = duck(&format!(
        "SELECT log, count(*), sum(size)::VARCHAR FROM {} GROUP BY log ORDER BY log",
        table(&out, "Object.ObjectAlloc")
    ));
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[1][1], 3000);
    assert_eq!(rows[1][2].as_str().unwrap(), (0..3000u64).sum::<u64>().to_string());
    // Thread names are a table.
    let names =
        duck(&format!("SELECT name FROM {} WHERE log = 1 AND name IS NOT NULL ORDER BY name", table(&out, "threads")));
    let names: Vec<&str> = names.iter().map(|r| r[0].as_str().unwrap()).collect();
    assert!(names.contains(&"worker-0") && names.contains(&"worker-1"), "{names:?}");
    let io = duck(&format!("SELECT name, events FROM {} WHERE log = 2 AND thread = 2", table(&out, "threads")));
    assert_eq!(io[0][0], "io");
    // An event type no log recorded is an empty table, not missing files.
    let empty = duck(&format!("SELECT count(*) FROM {}", table(&out, "Seg.SegSplit")));
    assert_eq!(empty[0][0], 0);
}

#[test]
fn losses_and_missing_blocks_in_the_logs_table_equal_stats() {
    if !duckdb_available() {
        return;
    }
    let drops = dir().join("losses-fill.evt");
    small_buffer_log(&drops, Policy::Fill);
    let ring = dir().join("losses-ring.evt");
    small_buffer_log(&ring, Policy::Ring);
    let out = fresh("losses");
    let result = export_ok(&out, &[&drops, &ring]);
    assert_eq!(stderr(&result), "", "losses are no damage");
    let rows = duck(&format!("SELECT lost_events, missing_blocks FROM {} ORDER BY log", table(&out, "logs")));
    let lost = stats_number(&drops, "events lost");
    assert!(lost > 0, "the log drops");
    assert_eq!(rows[0][0].as_u64(), Some(lost), "lost_events as stats counts them");
    assert_eq!(rows[0][1].as_u64(), Some(stats_number(&drops, "blocks missing (overwritten or dropped)")));
    let missing = stats_number(&ring, "blocks missing (overwritten or dropped)");
    assert!(missing > 0, "the ring overwrote blocks");
    assert_eq!(rows[1][1].as_u64(), Some(missing));
    // Per thread too: the losses are the refusing thread's.
    let threads = duck(&format!("SELECT sum(lost_events)::BIGINT FROM {} WHERE log = 1", table(&out, "threads")));
    assert_eq!(threads[0][0].as_u64(), Some(lost));
    // Dropped events are rows, their parameter `thread` in column `thread_`.
    let dropped = duck(&format!("SELECT thread, thread_ FROM {} WHERE log = 1", table(&out, "Builtin.Dropped")));
    assert!(!dropped.is_empty());
    assert_eq!((dropped[0][0].as_u64(), dropped[0][1].as_u64()), (Some(0), Some(1)));
}

/// A stream of [`HANDMADE_DEF`] whose `Every` rows hold each letter's extremes.
fn extremes_log(path: &Path) -> Vec<[Value<'static>; 8]> {
    let (schema, _, _) = handmade_schema();
    let header = Header::with_sets(wire_is_own(schema), 1024, handmade_clock(), handmade_producer());
    let mut bytes = header.encode().unwrap();
    let t0 = handmade_clock().start_ticks;
    let rows: Vec<[Value<'static>; 8]> = vec![
        [
            Value::Pointer(u64::MAX),
            Value::Address(1 << 63),
            Value::Word(u64::MAX),
            Value::Unsigned(u32::MAX),
            Value::Signed(i64::MIN),
            Value::Double(f64::NAN),
            Value::Bool(true),
            Value::Str(Text { bytes: b"nul\0here \xff \"q\"", truncated: false }),
        ],
        [
            Value::Pointer(0),
            Value::Address(0),
            Value::Word(0),
            Value::Unsigned(0),
            Value::Signed(i64::MAX),
            Value::Double(f64::INFINITY),
            Value::Bool(false),
            Value::Str(Text { bytes: b"", truncated: false }),
        ],
        [
            Value::Pointer(1),
            Value::Address(2),
            Value::Word(i64::MAX as u64 + 1),
            Value::Unsigned(1),
            Value::Signed(-1),
            Value::Double(f64::NEG_INFINITY),
            Value::Bool(true),
            Value::Str(Text { bytes: b"the beginning of a longer st", truncated: true }),
        ],
        [
            Value::Pointer(2),
            Value::Address(3),
            Value::Word(4),
            Value::Unsigned(5),
            Value::Signed(0),
            Value::Double(-0.0),
            Value::Bool(false),
            Value::Str(Text { bytes: "é ✓ 🦀".as_bytes(), truncated: false }),
        ],
        [
            Value::Pointer(3),
            Value::Address(4),
            Value::Word(5),
            Value::Unsigned(6),
            Value::Signed(1),
            Value::Double(f64::from_bits(1)),
            Value::Bool(true),
            Value::Str(Text { bytes: b"\xe2\x82", truncated: false }),
        ],
    ];
    let mut block =
        BlockWriter::new(header.order, 1024, &BlockHeader { thread: 1, base_time: t0, ..Default::default() });
    for (i, row) in rows.iter().enumerate() {
        block.push(0x0102, t0 + 10 * i as u64 + 1, row).unwrap();
    }
    block.push(UNKNOWN_CODE, t0 + 100, &[]).unwrap();
    bytes.extend(block.finish());
    std::fs::write(path, bytes).unwrap();
    rows
}

#[test]
fn every_letters_extremes_come_back_exactly() {
    if !duckdb_available() {
        return;
    }
    let log = dir().join("extremes.evt");
    let rows = extremes_log(&log);
    let out = fresh("extremes");
    let result = export_ok(&out, &[&log]);
    let err = stderr(&result);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("1 record of an unknown code skipped"), "{err}");

    let types =
        duck(&format!("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {})", table(&out, "Trace.Every")));
    let types: Vec<(String, String)> =
        types.iter().map(|r| (r[0].as_str().unwrap().to_owned(), r[1].as_str().unwrap().to_owned())).collect();
    let want = [
        ("log", "BIGINT"),
        ("thread", "UBIGINT"),
        ("ticks", "UBIGINT"),
        ("ns", "BIGINT"),
        ("time", "TIMESTAMP WITH TIME ZONE"),
        ("p", "UBIGINT"),
        ("a", "UBIGINT"),
        ("w", "UBIGINT"),
        ("u", "UINTEGER"),
        ("i", "BIGINT"),
        ("d", "DOUBLE"),
        ("b", "BOOLEAN"),
        ("s", "VARCHAR"),
    ];
    assert_eq!(types, want.map(|(a, b)| (a.to_owned(), b.to_owned())));

    let got = duck(&format!(
        "SELECT p, a, w, u, i, d, b, s, ticks, ns, epoch_us(time) FROM {} ORDER BY ticks",
        table(&out, "Trace.Every")
    ));
    assert_eq!(got.len(), rows.len());
    let printed = print_json(&[log.to_str().unwrap()]);
    let printed: Vec<&Printed> = printed.iter().filter(|p| p.event == "Every").collect();
    let clock = handmade_clock();
    for (i, (row, want)) in got.iter().zip(&rows).enumerate() {
        let [p, a, w, u, int, d, b, s] = want;
        let unsigned = |v: &Value<'_>| match v {
            Value::Pointer(x) | Value::Address(x) | Value::Word(x) => *x,
            _ => unreachable!(),
        };
        assert_eq!(row[0].as_u64(), Some(unsigned(p)), "row {i}: P");
        assert_eq!(row[1].as_u64(), Some(unsigned(a)), "row {i}: A");
        assert_eq!(row[2].as_u64(), Some(unsigned(w)), "row {i}: W");
        let Value::Unsigned(u) = u else { unreachable!() };
        assert_eq!(row[3].as_u64(), Some(u64::from(*u)), "row {i}: U");
        let Value::Signed(int) = int else { unreachable!() };
        assert_eq!(row[4].as_i64(), Some(*int), "row {i}: I");
        let Value::Double(d) = d else { unreachable!() };
        let repr = row[5].as_str().unwrap().strip_prefix("float:").unwrap();
        let back: f64 = match repr {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            r => r.parse().unwrap(),
        };
        assert!(back.to_bits() == d.to_bits() || (back.is_nan() && d.is_nan()), "row {i}: D {repr} for {d:?}");
        let Value::Bool(b) = b else { unreachable!() };
        assert_eq!(row[6].as_bool(), Some(*b), "row {i}: B");
        let Value::Str(text) = s else { unreachable!() };
        // Strings as the JSON output renders them: bytes that are not UTF-8 replaced.
        assert_eq!(row[7].as_str(), Some(String::from_utf8_lossy(text.bytes).as_ref()), "row {i}: S");
        assert_eq!(row[7].as_str(), printed[i].args["s"].as_str(), "row {i}: S as print --format json");
        // Times: ticks as recorded, ns as print shows the seconds, the wall clock in µs.
        let ticks = clock.start_ticks + 10 * i as u64 + 1;
        assert_eq!(row[8].as_u64(), Some(ticks));
        assert_eq!(i128::from(row[9].as_i64().unwrap()), printed[i].ns, "row {i}: ns");
        assert_eq!(i128::from(row[10].as_i64().unwrap()), clock.wall_ns(ticks).div_euclid(1000), "row {i}: time");
    }
    let counts = duck(&format!(
        "SELECT events, unknown_records, truncated_strings, damaged_blocks, host FROM {}",
        table(&out, "logs")
    ));
    // The host from the stream header (format 2.0.1).
    assert_eq!(counts[0], [Json::from(5), Json::from(1), Json::from(1), Json::from(0), Json::from("handmade-host")]);
}

#[test]
fn damaged_blocks_are_counted_and_reported_in_one_line() {
    if !duckdb_available() {
        return;
    }
    let whole = dir().join("damage-whole.evt");
    sample_log(&whole);
    let damaged = dir().join("damage-flipped.evt");
    damaged_copy(&whole, &damaged, 0);
    let out = fresh("damage");
    let result = export(&out, &[&damaged]);
    assert_eq!(result.status.code(), Some(0), "{}", stderr(&result));
    let err = stderr(&result);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("1 damaged block skipped"), "{err}");
    let rows = duck(&format!("SELECT damaged_blocks, events FROM {}", table(&out, "logs")));
    assert_eq!(rows[0][0], 1);
    check_log(&out, &damaged, 1);
    let whole_events: i64 = stats_per_event(&whole).values().sum();
    assert!(rows[0][1].as_i64().unwrap() < whole_events);
}

/// Every file under `d`, hidden ones too, with its bytes.
fn tree(d: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![d.to_owned()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.insert(path.clone(), Vec::new());
                todo.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// A stream with events.def's schema, except that `ObjectAlloc` has another format.
fn disagreeing_log(path: &Path) {
    let def = include_str!("../../../events.def")
        .replace("Object, PAWU,    pool, addr, size, class", "Object, PAWW,    pool, addr, size, class");
    assert!(def.contains("PAWW"), "the relation changed");
    let schema = event_format::def::parse(&def, "changed.def").unwrap();
    let sample = event_format::testing::sample_header(Order::Little);
    let header = Header::new(schema, 1024, sample.clock, sample.producer);
    let mut bytes = header.encode().unwrap();
    let mut block =
        BlockWriter::new(header.order, 1024, &BlockHeader { thread: 1, base_time: 1000, ..Default::default() });
    block.push(0x0030, 1001, &[Value::Pointer(1), Value::Address(2), Value::Word(3), Value::Word(4)]).unwrap();
    bytes.extend(block.finish());
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_refused_export_leaves_the_dataset_byte_for_byte() {
    let log = dir().join("again.evt");
    sample_log(&log);
    let out = fresh("again");
    export_ok(&out, &[&log]);
    let before = tree(&out);
    assert!(before.keys().any(|p| p.ends_with("Object.ObjectAlloc/part-000001.parquet")), "{:?}", before.keys());

    let again = export(&out, &[&log]);
    assert_eq!(again.status.code(), Some(1));
    let err = stderr(&again);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("already exported into") && err.contains("as log 1") && err.contains("nothing was written"),
        "{err}"
    );
    assert!(again.stdout.is_empty());
    assert_eq!(tree(&out), before, "the dataset is unchanged");

    // The same content under another name is the same log.
    let copy = dir().join("again-copy.evt");
    std::fs::copy(&log, &copy).unwrap();
    assert_eq!(export(&out, &[&copy]).status.code(), Some(1));
    assert_eq!(tree(&out), before);

    // A new log with a duplicate after it: all or nothing.
    let other = dir().join("again-other.evt");
    handmade_log(&other, Order::Little);
    assert_eq!(export(&out, &[&other, &log]).status.code(), Some(1));
    assert_eq!(tree(&out), before, "the first log of a refused run is not kept either");

    // A log whose ObjectAlloc means something else: refused, naming both.
    let changed = dir().join("again-changed.evt");
    disagreeing_log(&changed);
    let refused = export(&out, &[&changed]);
    assert_eq!(refused.status.code(), Some(1));
    let err = stderr(&refused);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("event ObjectAlloc has code 0x0030, kind Object, format PAWW") && err.contains("format PAWU"),
        "{err}"
    );
    assert_eq!(tree(&out), before);

    // Twice in one run into a new dataset: refused, and no directory is left behind.
    let new = fresh("again-twice");
    let twice = export(&new, &[&log, &log]);
    assert_eq!(twice.status.code(), Some(1));
    assert!(stderr(&twice).contains("given twice"), "{}", stderr(&twice));
    assert!(!new.exists(), "a refused run leaves no new directory");

    // The refused log goes on to export into the first dataset once it is new to it.
    let added = export_ok(&out, &[&other]);
    assert!(stdout(&added).contains("as log 2"), "{}", stdout(&added));
}

#[test]
fn outputs_that_are_not_datasets_are_left_alone() {
    let log = dir().join("alone.evt");
    handmade_log(&log, Order::Little);
    let file = dir().join("alone-notes.txt");
    std::fs::write(&file, "not a dataset\n").unwrap();
    let foreign = fresh("alone-foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("data.csv"), "a,b\n1,2\n").unwrap();
    let before = tree(&foreign);
    for (out, says) in [(&file, "not a directory"), (&foreign, "did not write")] {
        let result = export(out, &[&log]);
        assert_eq!(result.status.code(), Some(1));
        let err = stderr(&result);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says) && !err.contains("panicked"), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a dataset\n");
    assert_eq!(tree(&foreign), before);

    // A lock left by another export: refused with the way out.
    let locked = fresh("alone-locked");
    export_ok(&locked, &[&log]);
    std::fs::write(locked.join("_event-dump.lock"), "12345\n").unwrap();
    let other = dir().join("alone-other.evt");
    handmade_log(&other, Order::Big);
    let result = export(&locked, &[&other]);
    assert_eq!(result.status.code(), Some(1));
    assert!(
        stderr(&result).contains("another export is writing") && stderr(&result).contains("12345"),
        "{}",
        stderr(&result)
    );
}

#[test]
fn leftovers_of_an_interrupted_export_are_removed() {
    let log = dir().join("leftover.evt");
    handmade_log(&log, Order::Little);
    let out = fresh("leftover");
    export_ok(&out, &[&log]);
    // As if a run of log 2 was killed while renaming: an event file in place without its
    // `logs` file, and a temporary file.
    let orphan = out.join("Trace.Poll/part-000002.parquet");
    std::fs::copy(out.join("Trace.Poll/part-000001.parquet"), &orphan).unwrap();
    let temp = out.join("Trace.Every/.part-000002.parquet.tmp");
    std::fs::write(&temp, b"half").unwrap();
    let other = dir().join("leftover-other.evt");
    handmade_log(&other, Order::Big);
    let result = export_ok(&out, &[&other]);
    assert!(stderr(&result).contains("removed 2 file(s) of an export that was interrupted"), "{}", stderr(&result));
    assert!(!temp.exists());
    // Log 2 is the new one: its Poll file is this run's, the orphan's name reused.
    assert!(orphan.exists());
    assert!(!out.join("_event-dump.lock").exists(), "the lock is gone");
}

/// A stream of two event sets, `alpha` and `beta`, each with an event `Trace.Poll(n W)`: one
/// `Poll` of alpha (n = 1), two of beta (n = 2, 3).
fn two_sets_log(path: &Path) {
    let set = |name: &str| {
        let def =
            format!("SET({name})\nVERSION(1, 0, 0)\nKIND(Trace, \"t\")\nRELATION(Poll, 0x0001, TRUE, Trace, W, n)\n");
        event_format::def::parse(&def, "events.def").unwrap()
    };
    let sets = vec![
        event_format::wire::SetEntry::new(set("alpha"), 0x0001),
        event_format::wire::SetEntry::new(set("beta"), 0x0002),
    ];
    let header = Header::with_sets(sets, 1024, handmade_clock(), handmade_producer());
    let mut bytes = header.encode().unwrap();
    let t0 = handmade_clock().start_ticks;
    let mut block =
        BlockWriter::new(header.order, 1024, &BlockHeader { thread: 1, base_time: t0, ..Default::default() });
    for (wire, time, n) in [(0x0001, 1, 1), (0x0002, 2, 2), (0x0002, 3, 3)] {
        block.push(wire, t0 + time, &[Value::Word(n)]).unwrap();
    }
    bytes.extend(block.finish());
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_log_of_several_sets_has_tables_qualified_by_set() {
    let log = dir().join("sets.evt");
    two_sets_log(&log);
    let printed = print_json(&[log.to_str().unwrap()]);
    assert_eq!(printed.len(), 3, "{printed:?}");
    let out = fresh("sets");
    export_ok(&out, &[&log]);
    for name in ["alpha.Trace.Poll", "beta.Trace.Poll"] {
        assert!(out.join(name).join("part-000001.parquet").exists(), "{name}");
    }
    assert!(!out.join("Trace.Poll").exists(), "no unqualified table when the log has two sets");
    if !duckdb_available() {
        return;
    }
    let alpha = duck(&format!("SELECT sum(n)::BIGINT, count(*) FROM {}", table(&out, "alpha.Trace.Poll")));
    let beta = duck(&format!("SELECT sum(n)::BIGINT, count(*) FROM {}", table(&out, "beta.Trace.Poll")));
    assert_eq!((alpha[0][0].as_i64(), alpha[0][1].as_i64()), (Some(1), Some(1)));
    assert_eq!((beta[0][0].as_i64(), beta[0][1].as_i64()), (Some(5), Some(2)));
    // `stats` counts per set, as the tables do.
    let stats = stats_per_event(&log);
    assert_eq!((stats.get("alpha:Trace.Poll"), stats.get("beta:Trace.Poll")), (Some(&1), Some(&2)), "{stats:?}");
}

/// A set whose name holds a `-` (`storage-v2`, as the recorder names a second major version
/// of a library) names its tables as it is: `storage-v2.Page.PageWrite`.
#[test]
fn a_set_name_with_a_dash_names_its_tables() {
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sets/two-sets-le.evt");
    let out = fresh("dash");
    export_ok(&out, &[&log]);
    for name in ["storage-v2.Page.PageWrite", "storage-v2.Pool.PoolInit", "app.Pool.PoolInit", "app.Req.ReqStart"] {
        assert!(out.join(name).join("part-000001.parquet").exists(), "{name}");
    }
}
