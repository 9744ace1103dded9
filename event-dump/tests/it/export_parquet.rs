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
const FIXED: [&str; 6] = ["log", "thread", "ticks", "ns", "time", "date"];

/// A directory of the test's own ([`common::numbered_dir`]).
pub(crate) fn dir() -> common::Scratch {
    common::numbered_dir("export-parquet")
}

/// A fresh dataset path in the test's directory `scratch` (removed if something left one).
pub(crate) fn fresh(scratch: &Path, name: &str) -> PathBuf {
    let d = scratch.join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn export(out: &Path, logs: &[&Path]) -> Output {
    let mut args = vec!["export", "--to", "parquet", "-o", out.to_str().unwrap()];
    args.extend(logs.iter().map(|l| l.to_str().unwrap()));
    run(&args)
}

pub(crate) fn export_ok(out: &Path, logs: &[&Path]) -> Output {
    let result = export(out, logs);
    assert!(result.status.success(), "{}", stderr(&result));
    result
}

/// Whether DuckDB's Python package can be imported; when it cannot, says so (past the test
/// harness's capture) or fails when `EVENT_REQUIRE_DUCKDB=1`.
pub(crate) fn duckdb_available() -> bool {
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

/// A table of the dataset `out` as DuckDB reads it: every partition, `date` a column.
fn table(out: &Path, name: &str) -> String {
    format!("read_parquet('{}/{name}/*/*.parquet', hive_partitioning = true)", out.display())
}

/// The recording id an export's stdout gives `log` (`LOG: N events as log ID in OUT`).
pub(crate) fn id_in(output: &Output, log: &Path) -> String {
    let text = stdout(output);
    let line = text.lines().find(|l| l.starts_with(&format!("{}:", log.display()))).unwrap_or_else(|| panic!("{text}"));
    let id = line.split(" as log ").nth(1).unwrap().split([' ', ';']).next().unwrap();
    assert_eq!(id.len(), 32, "{line}");
    id.to_owned()
}

/// `stats`' counts per event of `log`: `Kind.Name` -> count.
pub(crate) fn stats_per_event(log: &Path) -> BTreeMap<String, i64> {
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
pub(crate) fn columns(params: &[String]) -> Vec<String> {
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
pub(crate) struct Aggregates {
    pub(crate) count: i64,
    pub(crate) distinct: BTreeMap<String, i64>,
    pub(crate) sums: BTreeMap<String, i128>,
}

/// `print --format json` of `log`, summarised per `Kind.Name`, with its parameter names.
/// A parameter has a sum when every value of it is an integer (pointers in hex, words beyond
/// 2^53 in decimal strings).
pub(crate) fn printed(log: &Path) -> BTreeMap<String, (Vec<String>, Aggregates)> {
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
fn queried(out: &Path, name: &str, id: &str, params: &[String]) -> Aggregates {
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
    let row = &duck(&format!("SELECT {} FROM {} WHERE log = '{id}'", select.join(", "), table(out, name)))[0];
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

/// Checks every event type of `log`, exported as log `id` into `out`, against `stats`
/// and `print`.
fn check_log(out: &Path, log: &Path, id: &str) {
    let stats = stats_per_event(log);
    let printed = printed(log);
    assert_eq!(
        printed.iter().map(|(k, (_, s))| (k.clone(), s.count)).collect::<BTreeMap<_, _>>(),
        stats,
        "print and stats agree"
    );
    for (name, (params, want)) in &printed {
        let got = queried(out, name, id, params);
        assert_eq!(&got, want, "{name} of log {id} ({})", log.display());
    }
    let total: i64 = stats.values().sum();
    let row = &duck(&format!("SELECT events FROM {} WHERE log = '{id}'", table(out, "logs")))[0];
    assert_eq!(row[0].as_i64(), Some(total));
}

/// A log of many `ObjectAlloc` events of several sizes, on one thread.
pub(crate) fn allocations_log(path: &Path) {
    many_events_log(path, 3000);
}

#[test]
fn several_processes_in_two_runs_agree_with_stats_and_print() {
    let scratch = dir();
    if !duckdb_available() {
        return;
    }
    let a = scratch.join("fleet-a.evt");
    sample_log(&a);
    let b = scratch.join("fleet-b.evt");
    handmade_log(&b, Order::Big);
    let c = scratch.join("fleet-c.evt");
    dropping_log(&c);
    let d = scratch.join("fleet-d.evt");
    allocations_log(&d);
    let out = fresh(&scratch, "fleet");
    let first = export_ok(&out, &[&a, &b]);
    let second = export_ok(&out, &[&c, &d]);
    let ids = [id_in(&first, &a), id_in(&first, &b), id_in(&second, &c), id_in(&second, &d)];
    for (id, log) in ids.iter().zip([&a, &b, &c, &d]) {
        check_log(&out, log, id);
    }
    // The logs are told apart: each has its own program and pid.
    let logs = duck(&format!(
        "SELECT log, program, pid, format_version, id_source FROM {} WHERE log = '{}'",
        table(&out, "logs"),
        ids[1]
    ));
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0][1], "handmade");
    assert_eq!(logs[0][2], 4242);
    assert_eq!(logs[0][4], "derived", "a handmade stream has no recording id");
    let all = duck(&format!("SELECT count(*), count(DISTINCT log) FROM {}", table(&out, "logs")));
    assert_eq!((all[0][0].as_i64(), all[0][1].as_i64()), (Some(4), Some(4)));
    let recorded =
        duck(&format!("SELECT format_version, id_source FROM {} WHERE log = '{}'", table(&out, "logs"), ids[0]));
    assert_eq!(recorded[0][0].as_str().unwrap(), event_format::wire::FORMAT_VERSION.to_string());
    assert_eq!(recorded[0][1], "header", "the recorder writes a recording id");
    // A query over all logs at once, as a user writes it.
    let rows = duck(&format!(
        "SELECT log, count(*), sum(size)::VARCHAR FROM {} GROUP BY log ORDER BY count(*)",
        table(&out, "Object.ObjectAlloc")
    ));
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[1][0].as_str(), Some(ids[3].as_str()));
    assert_eq!(rows[1][1], 3000);
    assert_eq!(rows[1][2].as_str().unwrap(), (0..3000u64).sum::<u64>().to_string());
    // Thread names are a table.
    let names = duck(&format!(
        "SELECT name FROM {} WHERE log = '{}' AND name IS NOT NULL ORDER BY name",
        table(&out, "threads"),
        ids[0]
    ));
    let names: Vec<&str> = names.iter().map(|r| r[0].as_str().unwrap()).collect();
    assert!(names.contains(&"worker-0") && names.contains(&"worker-1"), "{names:?}");
    let io =
        duck(&format!("SELECT name, events FROM {} WHERE log = '{}' AND thread = 2", table(&out, "threads"), ids[1]));
    assert_eq!(io[0][0], "io");
    // An event type no log recorded is an empty table, not missing files.
    let empty = duck(&format!("SELECT count(*) FROM {}", table(&out, "Seg.SegSplit")));
    assert_eq!(empty[0][0], 0);
}

#[test]
fn losses_and_missing_blocks_in_the_logs_table_equal_stats() {
    let scratch = dir();
    if !duckdb_available() {
        return;
    }
    let drops = scratch.join("losses-fill.evt");
    small_buffer_log(&drops, Policy::Fill);
    let ring = scratch.join("losses-ring.evt");
    small_buffer_log(&ring, Policy::Ring);
    let out = fresh(&scratch, "losses");
    let result = export_ok(&out, &[&drops, &ring]);
    assert_eq!(stderr(&result), "", "losses are no damage");
    let (drops_id, ring_id) = (id_in(&result, &drops), id_in(&result, &ring));
    let rows =
        duck(&format!("SELECT lost_events, missing_blocks FROM {} ORDER BY log = '{ring_id}'", table(&out, "logs")));
    let lost = stats_number(&drops, "events lost");
    assert!(lost > 0, "the log drops");
    assert_eq!(rows[0][0].as_u64(), Some(lost), "lost_events as stats counts them");
    assert_eq!(rows[0][1].as_u64(), Some(stats_number(&drops, "blocks missing (overwritten or dropped)")));
    let missing = stats_number(&ring, "blocks missing (overwritten or dropped)");
    assert!(missing > 0, "the ring overwrote blocks");
    assert_eq!(rows[1][1].as_u64(), Some(missing));
    // Per thread too: the losses are the refusing thread's.
    let threads =
        duck(&format!("SELECT sum(lost_events)::BIGINT FROM {} WHERE log = '{drops_id}'", table(&out, "threads")));
    assert_eq!(threads[0][0].as_u64(), Some(lost));
    // Dropped events are rows, their parameter `thread` in column `thread_`.
    let dropped =
        duck(&format!("SELECT thread, thread_ FROM {} WHERE log = '{drops_id}'", table(&out, "Builtin.Dropped")));
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
    let scratch = dir();
    if !duckdb_available() {
        return;
    }
    let log = scratch.join("extremes.evt");
    let rows = extremes_log(&log);
    let out = fresh(&scratch, "extremes");
    let result = export_ok(&out, &[&log]);
    let err = stderr(&result);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("1 record of an unknown code skipped"), "{err}");

    let types =
        duck(&format!("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {})", table(&out, "Trace.Every")));
    let types: Vec<(String, String)> =
        types.iter().map(|r| (r[0].as_str().unwrap().to_owned(), r[1].as_str().unwrap().to_owned())).collect();
    let want = [
        ("log", "VARCHAR"),
        ("thread", "BIGINT"),
        ("ticks", "BIGINT"),
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
        ("date", "DATE"),
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
    let scratch = dir();
    if !duckdb_available() {
        return;
    }
    let whole = scratch.join("damage-whole.evt");
    sample_log(&whole);
    let damaged = scratch.join("damage-flipped.evt");
    damaged_copy(&whole, &damaged, 0);
    let out = fresh(&scratch, "damage");
    let result = export(&out, &[&damaged]);
    assert_eq!(result.status.code(), Some(0), "{}", stderr(&result));
    let err = stderr(&result);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("1 damaged block skipped"), "{err}");
    let rows = duck(&format!("SELECT damaged_blocks, events FROM {}", table(&out, "logs")));
    assert_eq!(rows[0][0], 1);
    check_log(&out, &damaged, &id_in(&result, &damaged));
    let whole_events: i64 = stats_per_event(&whole).values().sum();
    assert!(rows[0][1].as_i64().unwrap() < whole_events);
}

/// How many `.parquet` files table `name` of dataset `out` has, in all its partitions.
fn files_of(out: &Path, name: &str) -> usize {
    tree(&out.join(name)).keys().filter(|p| p.extension().is_some_and(|e| e == "parquet")).count()
}

/// Every file under `d`, hidden ones too, with its bytes.
pub(crate) fn tree(d: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
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
fn exporting_a_log_again_adds_nothing() {
    let scratch = dir();
    let log = scratch.join("again.evt");
    sample_log(&log);
    let out = fresh(&scratch, "again");
    let first = export_ok(&out, &[&log]);
    let id = id_in(&first, &log);
    let before = tree(&out);
    let alloc = "Object.ObjectAlloc/date=";
    assert!(
        before.keys().any(|p| p.to_string_lossy().contains(alloc) && p.ends_with(format!("{id}.parquet"))),
        "{:?}",
        before.keys()
    );

    let again = export_ok(&out, &[&log]);
    assert_eq!(stderr(&again), "");
    assert!(
        stdout(&again).contains(&format!("already in {} as log {id}; nothing added", out.display())),
        "{}",
        stdout(&again)
    );
    assert_eq!(tree(&out), before, "the dataset is unchanged");

    // The same content under another name is the same log.
    let copy = scratch.join("again-copy.evt");
    std::fs::copy(&log, &copy).unwrap();
    assert!(stdout(&export_ok(&out, &[&copy])).contains("nothing added"));
    assert_eq!(tree(&out), before);

    // A new log beside it: only the new one is added.
    let other = scratch.join("again-other.evt");
    handmade_log(&other, Order::Little);
    let both = export_ok(&out, &[&other, &log]);
    let other_id = id_in(&both, &other);
    assert_ne!(other_id, id);
    assert!(stdout(&both).contains("nothing added"), "{}", stdout(&both));
    let after = tree(&out);
    for (path, bytes) in &before {
        assert_eq!(after.get(path), Some(bytes), "{} is as it was", path.display());
    }
    let added: Vec<&PathBuf> = after.keys().filter(|p| !before.contains_key(*p)).collect();
    assert!(!added.is_empty());
    for path in added {
        assert!(path.is_dir() || path.ends_with(format!("{other_id}.parquet")), "{} is the new log's", path.display());
    }

    // Twice in one run into a new dataset: exported once, with the same files as alone.
    let twice = fresh(&scratch, "again-twice");
    let result = export_ok(&twice, &[&log, &copy]);
    assert!(stdout(&result).contains("nothing added"), "{}", stdout(&result));
    let alone = fresh(&scratch, "again-alone");
    export_ok(&alone, &[&log]);
    let relative = |d: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
        tree(d).into_iter().map(|(p, b)| (p.strip_prefix(d).unwrap().to_owned(), b)).collect()
    };
    assert_eq!(relative(&twice), relative(&alone), "the same log: the same names and bytes");
}

#[test]
fn a_refused_export_leaves_the_dataset_byte_for_byte() {
    let scratch = dir();
    let log = scratch.join("refused.evt");
    sample_log(&log);
    let out = fresh(&scratch, "refused");
    export_ok(&out, &[&log]);
    let before = tree(&out);

    // Another file of the same recording (a stream exported while still written): refused.
    let grown = scratch.join("refused-grown.evt");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(&[0; 100]);
    std::fs::write(&grown, bytes).unwrap();
    let result = export(&out, &[&grown]);
    assert_eq!(result.status.code(), Some(1));
    let err = stderr(&result);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("another file of the same recording") && err.contains("nothing was written"), "{err}");
    assert_eq!(tree(&out), before);

    // A log whose ObjectAlloc means something else: refused, naming both, and the new log
    // before it in the same run is not kept either.
    let other = scratch.join("refused-other.evt");
    handmade_log(&other, Order::Little);
    let changed = scratch.join("refused-changed.evt");
    disagreeing_log(&changed);
    let refused = export(&out, &[&other, &changed]);
    assert_eq!(refused.status.code(), Some(1));
    let err = stderr(&refused);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("event ObjectAlloc has code 0x0030, kind Object, format PAWW") && err.contains("format PAWU"),
        "{err}"
    );
    assert!(refused.stdout.is_empty());
    assert_eq!(tree(&out), before, "all or nothing");

    // Refused into a new dataset: no directory is left behind.
    let new = fresh(&scratch, "refused-new");
    assert_eq!(export(&new, &[&log, &grown]).status.code(), Some(1));
    assert!(!new.exists(), "a refused run leaves no new directory");

    // The refused log goes on to export into the first dataset once it is new to it.
    export_ok(&out, &[&other]);
}

#[test]
fn outputs_that_are_not_datasets_are_left_alone() {
    let scratch = dir();
    let log = scratch.join("alone.evt");
    handmade_log(&log, Order::Little);
    let file = scratch.join("alone-notes.txt");
    std::fs::write(&file, "not a dataset\n").unwrap();
    let foreign = fresh(&scratch, "alone-foreign");
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
    let locked = fresh(&scratch, "alone-locked");
    export_ok(&locked, &[&log]);
    std::fs::write(locked.join("_event-dump.lock"), "12345\n").unwrap();
    let other = scratch.join("alone-other.evt");
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
fn an_interrupted_export_is_completed_by_exporting_the_log_again() {
    let scratch = dir();
    let log = scratch.join("leftover.evt");
    handmade_log(&log, Order::Little);
    let whole = fresh(&scratch, "leftover-whole");
    let id = id_in(&export_ok(&whole, &[&log]), &log);
    let out = fresh(&scratch, "leftover");
    export_ok(&out, &[&log]);
    // As if the run was killed while renaming: event files in place without the `logs`
    // file, which is renamed last, and a temporary file of the log's.
    let logs_file = tree(&out).into_keys().find(|p| p.starts_with(out.join("logs")) && p.is_file()).unwrap();
    std::fs::remove_file(&logs_file).unwrap();
    let poll = tree(&out).into_keys().find(|p| p.starts_with(out.join("Trace.Poll")) && p.is_file()).unwrap();
    let temp = poll.with_file_name(format!(".{id}.parquet.99999.tmp"));
    std::fs::write(&temp, b"half").unwrap();
    let result = export_ok(&out, &[&log]);
    assert!(stdout(&result).contains(&format!("as log {id}")), "exported, not skipped: {}", stdout(&result));
    assert!(stderr(&result).contains("removed 1 temporary file"), "{}", stderr(&result));
    let relative = |d: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
        tree(d).into_iter().map(|(p, b)| (p.strip_prefix(d).unwrap().to_owned(), b)).collect()
    };
    assert_eq!(relative(&out), relative(&whole), "complete, as one export makes it");
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
    let scratch = dir();
    let log = scratch.join("sets.evt");
    two_sets_log(&log);
    let printed = print_json(&[log.to_str().unwrap()]);
    assert_eq!(printed.len(), 3, "{printed:?}");
    let out = fresh(&scratch, "sets");
    export_ok(&out, &[&log]);
    for name in ["alpha.Trace.Poll", "beta.Trace.Poll"] {
        assert_eq!(files_of(&out, name), 1, "{name}");
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
    let scratch = dir();
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sets/two-sets-le.evt");
    let out = fresh(&scratch, "dash");
    export_ok(&out, &[&log]);
    for name in ["storage-v2.Page.PageWrite", "storage-v2.Pool.PoolInit", "app.Pool.PoolInit", "app.Req.ReqStart"] {
        assert_eq!(files_of(&out, name), 1, "{name}");
    }
}

/// A log of the `tracing` bridge's events: the fields of a `TraceEvent` and of a `SpanEnter`
/// are a JSON object by name in `fields_json` (the SQLite export's column, written by the
/// same code), and one query over every event table at once (docs/OUTPUT.md's "all events")
/// counts every event of the log.
#[test]
fn tracing_fields_are_json_by_name_and_one_query_reads_every_event() {
    use event_format::builtin::{SPAN_ENTER, TRACE_EVENT};
    let scratch = dir();
    let (schema, _, _) = handmade_schema();
    let header = Header::with_sets(wire_is_own(schema), 1024, handmade_clock(), handmade_producer());
    let mut bytes = header.encode().unwrap();
    let t0 = header.clock.start_ticks;
    let s = |t: &'static str| Value::Str(Text::new(t));
    let mut block =
        BlockWriter::new(header.order, 1024, &BlockHeader { thread: 1, base_time: t0, ..Default::default() });
    block
        .push(
            TRACE_EVENT,
            t0 + 10,
            &[Value::Unsigned(2), s("app::db"), s("retry in 2s attempt=3 user=\"ada\" slow=true")],
        )
        .unwrap();
    block.push(SPAN_ENTER, t0 + 20, &[Value::Word(7), s("request"), s("id=42 path=\"/index\"")]).unwrap();
    block.push(TRACE_EVENT, t0 + 30, &[Value::Unsigned(3), s("app"), s("plain text, no fields here:")]).unwrap();
    bytes.extend(block.finish());
    end_with_stop(&mut bytes);
    let log = scratch.join("tracing.evt");
    std::fs::write(&log, &bytes).unwrap();
    let out = fresh(&scratch, "tracing");
    export_ok(&out, &[&log]);
    if !duckdb_available() {
        return;
    }
    let fields = duck(&format!(
        "SELECT fields_json->>'user', (fields_json->>'attempt')::BIGINT, (fields_json->>'slow')::BOOLEAN, fields_json IS NULL FROM {} ORDER BY ticks",
        table(&out, "Builtin.TraceEvent")
    ));
    assert_eq!(fields[0], [Json::from("ada"), Json::from(3), Json::from(true), Json::from(false)]);
    assert_eq!(fields[1], [Json::Null, Json::Null, Json::Null, Json::from(true)], "no fields: null");
    let span = duck(&format!(
        "SELECT (fields_json->>'id')::BIGINT, fields_json->>'path', fields FROM {}",
        table(&out, "Builtin.SpanEnter")
    ));
    assert_eq!(span[0], [Json::from(42), Json::from("/index"), Json::from("id=42 path=\"/index\"")]);
    // Every event table at once: the directories named `Kind.Event` (logs and threads have
    // no dot), their columns united by name.
    let all = duck(&format!(
        "SELECT count(*), count(DISTINCT filename) FROM read_parquet('{}/*.*/*/*.parquet', union_by_name = true, filename = true, hive_partitioning = true)",
        out.display()
    ));
    let stats = stats_per_event(&log);
    assert_eq!(all[0][0].as_i64(), Some(stats.values().sum()));
    assert_eq!(all[0][1].as_i64(), Some(stats.values().filter(|&&n| n > 0).count() as i64), "{stats:?}");
}

/// A table of more rows than a row group holds: written as several row groups by the
/// encoder's thread (the later ones in the buffers it gave back), every row there once, in
/// the log's order.
#[test]
fn a_big_table_is_several_row_groups_with_every_row() {
    let scratch = dir();
    if !duckdb_available() {
        return;
    }
    let n: u64 = 300_000;
    let log = scratch.join("big.evt");
    many_events_log(&log, n);
    let out = fresh(&scratch, "big");
    let id = id_in(&export_ok(&out, &[&log]), &log);
    let alloc = table(&out, "Object.ObjectAlloc");
    let rows = duck(&format!(
        "SELECT count(*), sum(size)::VARCHAR, min(size), max(size), count(DISTINCT addr), bool_and(log = '{id}') FROM {alloc}"
    ));
    let want = [Json::from(n), Json::from((0..n).sum::<u64>().to_string()), Json::from(0), Json::from(n - 1)];
    assert_eq!(rows[0][..4], want);
    assert_eq!(rows[0][4], Json::from(n));
    assert_eq!(rows[0][5], Json::from(true));
    // Rows in the order the log holds them: `size` counts up.
    let unordered = duck(&format!(
        "SELECT count(*) FROM (SELECT size, lag(size) OVER () AS before FROM {alloc}) WHERE size <> before + 1"
    ));
    assert_eq!(unordered[0][0], 0);
    let groups = duck(&format!(
        "SELECT count(DISTINCT row_group_id) FROM parquet_metadata('{}/Object.ObjectAlloc/*/*.parquet')",
        out.display()
    ));
    assert!(groups[0][0].as_i64().unwrap() > 1, "{groups:?}");
}
