//! `event-dump export --to sqlite` as a user runs it, on logs this test records with the
//! deterministic clock: row counts against `stats`, typed values, several logs in one
//! database, re-import and disagreeing relations refused with the database unchanged, damaged
//! logs, drops, and the one-line errors.

use crate::common::{self, AWKWARD, BIG, run, small_buffer_log, stderr};
use event_format::wire::{BlockHeader, BlockWriter, Header, Value};
use event_runtime::Policy;
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A directory of the test's own ([`common::numbered_dir`]).
fn dir() -> common::Scratch {
    common::numbered_dir("export-sqlite")
}

fn export(db: &Path, logs: &[&Path]) -> Output {
    let mut args = vec!["export", "--to", "sqlite", "-o", db.to_str().unwrap()];
    args.extend(logs.iter().map(|l| l.to_str().unwrap()));
    run(&args)
}

/// A fresh database path in the test's directory `d` (removed if something left one).
fn fresh_db(d: &Path, name: &str) -> PathBuf {
    let db = d.join(name);
    let _ = std::fs::remove_file(&db);
    db
}

/// [`common::awkward_log`] in the test's directory `d`.
fn sample_log(d: &Path, name: &str, workers: u64) -> PathBuf {
    let path = d.join(name);
    common::awkward_log(&path, workers);
    path
}

/// [`common::dropping_log`] in the test's directory `d`.
fn dropping_log(d: &Path) -> PathBuf {
    let path = d.join("drops.evt");
    common::dropping_log(&path);
    path
}

/// `stats`' counts per event of `log`: event name -> count.
fn stats_per_event(log: &Path) -> BTreeMap<String, i64> {
    let out = run(&["stats", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let section = text.split("  per event:\n").nth(1).unwrap().split("  per thread:").next().unwrap();
    section
        .lines()
        .map(|l| {
            let mut parts = l.split_whitespace();
            let name = parts.next().unwrap().split('.').nth(1).unwrap().to_owned();
            (name, parts.next().unwrap().parse().unwrap())
        })
        .collect()
}

/// Rows per event table of log `serial`, for every event type in the database.
fn rows_per_event(db: &Connection, serial: i64) -> BTreeMap<String, i64> {
    let names: Vec<String> = db
        .prepare("SELECT name FROM event_type")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    names
        .into_iter()
        .map(|n| {
            let count: i64 = db
                .query_row(&format!("SELECT count(*) FROM \"EVENT_{n}\" WHERE log = ?1"), [serial], |r| r.get(0))
                .unwrap();
            (n, count)
        })
        .filter(|(_, c)| *c > 0)
        .collect()
}

#[test]
fn row_counts_per_event_table_equal_stats() {
    let d = dir();
    let log = sample_log(&d, "counts.evt", 2);
    let db_path = fresh_db(&d, "counts.db");
    let out = export(&db_path, &[&log]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "a whole log exports without a word on stderr");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("events as log 1 in"), "{stdout}");
    let db = Connection::open(&db_path).unwrap();
    let expected = stats_per_event(&log);
    assert!(expected.len() > 8, "the sample has many event types: {expected:?}");
    assert_eq!(rows_per_event(&db, 1), expected);
    let total: i64 = db.query_row("SELECT events FROM event_log WHERE serial = 1", [], |r| r.get(0)).unwrap();
    assert_eq!(total, expected.values().sum::<i64>());
    // Every event type has its table, the built-in ones included, with their kinds.
    let types: i64 = db.query_row("SELECT count(*) FROM event_type", [], |r| r.get(0)).unwrap();
    let schema =
        event_format::def::parse(include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../events.def")), "events.def")
            .unwrap();
    assert_eq!(types as usize, schema.events.len() + event_format::builtin::ALL.len());
    let dropped_kind: String =
        db.query_row("SELECT kind FROM event_type WHERE name = 'Dropped'", [], |r| r.get(0)).unwrap();
    assert_eq!(dropped_kind, "Builtin");
    let kinds: Vec<(String, Option<i64>)> = db
        .prepare("SELECT name, bit FROM event_kind ORDER BY bit")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kinds[0], ("Builtin".to_owned(), None));
    assert_eq!(kinds[1], ("Arena".to_owned(), Some(0)));
    assert_eq!(kinds.len(), schema.kinds.len() + 1);
    let empty: i64 = db.query_row("SELECT count(*) FROM EVENT_SegSplit", [], |r| r.get(0)).unwrap();
    assert_eq!(empty, 0, "an event type the log never recorded has an empty table");
}

#[test]
fn typed_columns_hold_the_values() {
    let d = dir();
    let log = sample_log(&d, "typed.evt", 1);
    let db_path = fresh_db(&d, "typed.db");
    let out = export(&db_path, &[&log]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = Connection::open(&db_path).unwrap();

    // W above i64::MAX: the two's-complement bit pattern; printf('%x') shows it as recorded.
    let (size, size_type, hex): (i64, String, String) = db
        .query_row("SELECT size, typeof(size), printf('%x', size) FROM EVENT_ArenaCreate", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!((size as u64, size_type.as_str(), hex), (BIG, "integer", format!("{BIG:x}")));
    let (arena, base): (i64, i64) =
        db.query_row("SELECT arena, base FROM EVENT_ArenaCreate", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    assert_eq!((arena, base), (0x7f00_0000_1000, 0x7f00_0000_1000));
    let max: i64 = db.query_row("SELECT size FROM EVENT_AllocFail", [], |r| r.get(0)).unwrap();
    assert_eq!(max, -1, "u64::MAX is all ones");

    // S: TEXT, byte for byte, quotes and all.
    let (detail, detail_type, ok, ok_type): (String, String, i64, String) = db
        .query_row("SELECT detail, typeof(detail), ok, typeof(ok) FROM EVENT_ClientCheck", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .unwrap();
    assert_eq!((detail.as_str(), detail_type.as_str(), ok, ok_type.as_str()), (AWKWARD, "text", 1, "integer"));
    let found: i64 =
        db.query_row("SELECT count(*) FROM EVENT_AllocFail WHERE reason = ?1", [AWKWARD], |r| r.get(0)).unwrap();
    assert_eq!(found, 1);

    // D: REAL; I: negative INTEGER; U: INTEGER.
    let (load, load_type): (f64, String) =
        db.query_row("SELECT load, typeof(load) FROM EVENT_ArenaPoll", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    assert_eq!((load, load_type.as_str()), (0.25, "real"));
    let balance: i64 = db.query_row("SELECT balance FROM EVENT_SweepReclaim", [], |r| r.get(0)).unwrap();
    assert_eq!(balance, -5);
    let classes: Vec<i64> = db
        .prepare("SELECT DISTINCT class FROM EVENT_ObjectAlloc")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(classes, [3]);
    let sizes: i64 = db.query_row("SELECT sum(size) FROM EVENT_ObjectAlloc", [], |r| r.get(0)).unwrap();
    assert_eq!(sizes, (0..30).map(|i| 16 * i).sum::<i64>());

    // The declared types and event_param agree with the format letters.
    let declared: Vec<(String, String)> = db
        .prepare("SELECT name, type FROM pragma_table_info('EVENT_ArenaPoll')")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let want = [
        ("log", "INTEGER"),
        ("time", "INTEGER"),
        ("seconds", "REAL"),
        ("thread", "INTEGER"),
        ("arena", "INTEGER"),
        ("committed", "INTEGER"),
        ("load", "REAL"),
    ];
    assert_eq!(declared, want.map(|(a, b)| (a.to_owned(), b.to_owned())));
    let params: Vec<(i64, String, String, String)> = db
        .prepare(
            "SELECT position, name, letter, sql_type FROM event_param WHERE event = 'ClientCheck' ORDER BY position",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        params,
        [
            (0, "ok".into(), "B".into(), "INTEGER".into()),
            (1, "what".into(), "S".into(), "TEXT".into()),
            (2, "detail".into(), "S".into(), "TEXT".into())
        ]
    );

    // time is ticks; seconds are what print shows; thread is the recording thread.
    let print = run(&["print", log.to_str().unwrap(), "--event", "SweepReclaim", "--format", "csv"]);
    let line = String::from_utf8_lossy(&print.stdout).lines().nth(1).unwrap().to_owned();
    let (time, seconds, thread): (i64, f64, i64) = db
        .query_row("SELECT time, seconds, thread FROM EVENT_SweepReclaim", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    let mut fields = line.split(',');
    assert_eq!(fields.next().unwrap(), format!("{seconds:.9}"), "{line}");
    assert_eq!(fields.next().unwrap(), format!("T{thread}"), "{line}");
    let raw = run(&["print", log.to_str().unwrap(), "--event", "SweepReclaim", "--raw-ticks"]);
    assert!(
        String::from_utf8_lossy(&raw.stdout).starts_with(&format!("{time} ")),
        "ticks as print --raw-ticks shows them"
    );

    // The log's facts.
    let (program, format, set, identity, events): (String, String, String, String, i64) = db
        .query_row("SELECT program, format_version, event_set_version, identity, events FROM event_log", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap();
    assert!(std::env::current_exe().unwrap().to_string_lossy().contains(&program), "{program}");
    assert_eq!((format, set.as_str()), (event_format::wire::FORMAT_VERSION.to_string(), "1.0.0"));
    assert!(identity.starts_with(&format!("{}:", std::fs::metadata(&log).unwrap().len())), "{identity}");
    assert_eq!(events, stats_per_event(&log).values().sum::<i64>());
}

/// The database's bytes, to show that a refused run changed nothing.
fn bytes(db: &Path) -> Vec<u8> {
    std::fs::read(db).unwrap()
}

#[test]
fn reimport_is_refused_and_changes_nothing() {
    let d = dir();
    let log = sample_log(&d, "again.evt", 2);
    let db = fresh_db(&d, "again.db");
    assert!(export(&db, &[&log]).status.success());
    let before = bytes(&db);
    let again = export(&db, &[&log]);
    assert_eq!(again.status.code(), Some(1));
    let err = stderr(&again);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("already imported into") && err.contains("as log 1") && err.contains("nothing was written"),
        "{err}"
    );
    assert!(again.stdout.is_empty());
    assert_eq!(bytes(&db), before, "the database is unchanged");

    // The same content under another name is the same log.
    let copy = d.join("again-copy.evt");
    std::fs::copy(&log, &copy).unwrap();
    let copied = export(&db, &[&copy]);
    assert_eq!(copied.status.code(), Some(1), "{}", stderr(&copied));
    assert_eq!(bytes(&db), before);

    // A new log with a duplicate after it: all or nothing.
    let other = sample_log(&d, "again-other.evt", 1);
    let mixed = export(&db, &[&other, &log]);
    assert_eq!(mixed.status.code(), Some(1));
    assert_eq!(bytes(&db), before, "the first log of a refused run is not kept either");

    // Twice in one run into a new database: refused, and no database file is left behind.
    let new_db = fresh_db(&d, "twice.db");
    let twice = export(&new_db, &[&log, &log]);
    assert_eq!(twice.status.code(), Some(1));
    assert_eq!(stderr(&twice).lines().count(), 1);
    assert!(!new_db.exists(), "a refused run leaves no new file");
}

#[test]
fn several_logs_side_by_side() {
    let d = dir();
    let a = sample_log(&d, "side-a.evt", 2);
    let b = sample_log(&d, "side-b.evt", 1);
    let c = dropping_log(&d);
    let db_path = fresh_db(&d, "side.db");
    let out = export(&db_path, &[&a, &b]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = export(&db_path, &[&c]);
    assert!(out.status.success(), "a second run adds to the database: {}", stderr(&out));
    let db = Connection::open(&db_path).unwrap();
    let logs: Vec<(i64, String)> = db
        .prepare("SELECT serial, path FROM event_log ORDER BY serial")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let names: Vec<(i64, String)> =
        logs.iter().map(|(s, p)| (*s, Path::new(p).file_name().unwrap().to_string_lossy().into_owned())).collect();
    assert_eq!(names, [(1, "side-a.evt".to_owned()), (2, "side-b.evt".to_owned()), (3, "drops.evt".to_owned())]);
    for (serial, log) in [(1, &a), (2, &b), (3, &c)] {
        assert_eq!(
            rows_per_event(&db, serial),
            stats_per_event(log),
            "log {serial}: each row is attributed to its log"
        );
    }
    let unattributed: i64 = db
        .query_row("SELECT count(*) FROM EVENT_ObjectAlloc WHERE log NOT IN (SELECT serial FROM event_log)", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(unattributed, 0);

    // Dropped events are rows like any other; the parameter `thread` has column `thread_`.
    let (lost, dropped): (i64, i64) = db
        .query_row(
            "SELECT lost_events, (SELECT sum(count) FROM EVENT_Dropped WHERE log = 3) FROM event_log WHERE serial = 3",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let stats = String::from_utf8(run(&["stats", c.to_str().unwrap()]).stdout).unwrap();
    let stats_lost: i64 =
        stats.lines().find(|l| l.contains("events lost")).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert!(stats_lost > 0, "the log drops: {stats}");
    assert_eq!(lost, stats_lost, "event_log counts losses as stats does");
    assert!(dropped > 0 && dropped <= lost, "{dropped} of {lost}");
    let column: String = db
        .query_row("SELECT column_name FROM event_param WHERE event = 'Dropped' AND name = 'thread'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(column, "thread_");
    // The recorder (thread 0) reports the losses of thread 1, which refused events.
    let (reporter, victim): (i64, i64) = db
        .query_row("SELECT thread, thread_ FROM EVENT_Dropped WHERE log = 3", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    assert_eq!((reporter, victim), (0, 1));
}

/// A stream with events.def's schema, except that `ObjectAlloc` has another format: one
/// block, one ObjectAlloc, in the test's directory `d`.
fn disagreeing_log(d: &Path) -> PathBuf {
    let def = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../events.def"))
        .replace("Object, PAWU,    pool, addr, size, class", "Object, PAWW,    pool, addr, size, class");
    assert!(def.contains("PAWW"), "the relation changed");
    let schema = event_format::def::parse(&def, "changed.def").unwrap();
    let mut header = event_format::testing::sample_header(event_format::wire::Order::Little);
    header = Header::new(schema, 1024, header.clock, header.producer);
    let mut bytes = header.encode().unwrap();
    let mut block =
        BlockWriter::new(header.order, 1024, &BlockHeader { thread: 1, base_time: 1000, ..Default::default() });
    let wire = header.sets[0].wire_code_of(0x0030).unwrap();
    block.push(wire, 1001, &[Value::Pointer(1), Value::Address(2), Value::Word(3), Value::Word(4)]).unwrap();
    bytes.extend(block.finish());
    let path = d.join("changed.evt");
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn disagreeing_relations_are_refused() {
    let d = dir();
    let log = sample_log(&d, "agree.evt", 1);
    let changed = disagreeing_log(&d);
    // On its own, the changed log exports.
    let alone = fresh_db(&d, "changed-alone.db");
    let out = export(&alone, &[&changed]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = Connection::open(&alone).unwrap();
    let format: String =
        db.query_row("SELECT format FROM event_type WHERE name = 'ObjectAlloc'", [], |r| r.get(0)).unwrap();
    assert_eq!(format, "PAWW");

    // Beside a log that says ObjectAlloc is PAWU: refused, in either order, nothing written.
    let db = fresh_db(&d, "agree.db");
    assert!(export(&db, &[&log]).status.success());
    let before = bytes(&db);
    let out = export(&db, &[&changed]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("event ObjectAlloc has format PAWW in this log but PAWU in {}", db.display())),
        "{err}"
    );
    assert_eq!(bytes(&db), before);
    let both = fresh_db(&d, "agree-both.db");
    let out = export(&both, &[&changed, &log]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("has format PAWU in this log but PAWW"), "{}", stderr(&out));
    assert!(!both.exists());
}

#[test]
fn a_damaged_log_exports_its_whole_blocks_and_says_so() {
    let d = dir();
    let log = sample_log(&d, "damaged.evt", 2);
    let mut raw = std::fs::read(&log).unwrap();
    // A byte of the second block (found by the decoder: packed blocks' lengths vary).
    let second = event_format::decode::Decoder::new(&raw[..]).unwrap().nth(1).unwrap().unwrap();
    raw[second.offset as usize + 60] ^= 0x40;
    let damaged = d.join("damaged-flipped.evt");
    std::fs::write(&damaged, &raw).unwrap();
    let db_path = fresh_db(&d, "damaged.db");
    let out = export(&db_path, &[&damaged]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one summary line: {err}");
    assert!(err.contains("1 damaged block skipped"), "{err}");
    let db = Connection::open(&db_path).unwrap();
    let (events, damaged_blocks, blocks): (i64, i64, i64) = db
        .query_row("SELECT events, damaged_blocks, blocks FROM event_log", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(damaged_blocks, 1);
    let whole: i64 = stats_per_event(&log).values().sum();
    assert!(events > 0 && events < whole, "the other blocks are there: {events} of {whole}");
    assert_eq!(rows_per_event(&db, 1), stats_per_event(&damaged), "exactly what the whole blocks hold");
    assert!(blocks > 0);
}

/// `stats`' count of blocks missing from `log`.
fn stats_missing_blocks(log: &Path) -> i64 {
    let stats = String::from_utf8(run(&["stats", log.to_str().unwrap()]).stdout).unwrap();
    let line = stats.lines().find(|l| l.contains("blocks missing")).unwrap();
    line.split(", ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn blocks_a_ring_overwrote_are_counted_as_stats_counts_them() {
    let d = dir();
    let log = d.join("ring-policy.evt");
    small_buffer_log(&log, Policy::Ring);
    let stats_missing = stats_missing_blocks(&log);
    assert!(stats_missing > 0, "the ring kept only its latest blocks");
    let db_path = fresh_db(&d, "ring-policy.db");
    let out = export(&db_path, &[&log]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "missing blocks are no damage");
    let db = Connection::open(&db_path).unwrap();
    let missing: i64 = db.query_row("SELECT missing_blocks FROM event_log", [], |r| r.get(0)).unwrap();
    assert_eq!(missing, stats_missing);
    assert_eq!(rows_per_event(&db, 1), stats_per_event(&log));
}

#[test]
fn bad_outputs_are_one_line_and_exit_1() {
    let d = dir();
    let log = sample_log(&d, "bad-out.evt", 1);
    let text = d.join("notes.txt");
    std::fs::write(&text, "not a database, and it must stay as it is\n".repeat(100)).unwrap();
    let foreign = fresh_db(&d, "foreign.db");
    Connection::open(&foreign).unwrap().execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);").unwrap();
    let foreign_before = bytes(&foreign);
    let text_before = bytes(&text);
    for (out, says) in [
        (d.to_path_buf(), "is a directory"),
        (text.clone(), "not an SQLite database"),
        (foreign.clone(), "did not write"),
    ] {
        let result = export(&out, &[&log]);
        assert_eq!(result.status.code(), Some(1), "{}", out.display());
        let err = stderr(&result);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says) && !err.contains("panicked"), "{err}");
    }
    assert_eq!(bytes(&text), text_before, "a file that is not a database is left alone");
    assert_eq!(bytes(&foreign), foreign_before, "another program's database is left alone");
    let missing = export(&fresh_db(&d, "missing.db"), &[&d.join("no-such.evt")]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(stderr(&missing).lines().count(), 1);
    assert!(!d.join("missing.db").exists());
}

/// A log of the `tracing` bridge's events beside the program's own: the fields of a
/// `TraceEvent` and of a `SpanEnter` are a JSON object by name in `fields_json`, each value
/// with its type, and the `events` view holds every event of every table, in time order when
/// asked, with its parameters as JSON.
#[test]
fn tracing_fields_are_queried_by_name_and_every_event_is_one_view() {
    use event_format::builtin::{SPAN_ENTER, TRACE_EVENT};
    use event_format::wire::{BlockHeader, Text};
    let d = dir();
    let (schema, _, _) = common::handmade_schema();
    let header =
        Header::with_sets(common::wire_is_own(schema), 1024, common::handmade_clock(), common::handmade_producer());
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
    common::end_with_stop(&mut bytes);
    let log = d.join("tracing.evt");
    std::fs::write(&log, &bytes).unwrap();
    let db = fresh_db(&d, "tracing.db");
    let out = export(&db, &[&log]);
    assert!(out.status.success(), "{}", stderr(&out));
    let conn = Connection::open(&db).unwrap();
    let fields: Vec<(Option<String>, Option<i64>, Option<i64>)> = conn
        .prepare(
            "SELECT json_extract(fields_json, '$.user'), json_extract(fields_json, '$.attempt'), \
             json_extract(fields_json, '$.slow') FROM EVENT_TraceEvent ORDER BY time",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(fields, [(Some("ada".to_owned()), Some(3), Some(1)), (None, None, None)]);
    let plain: Option<String> =
        conn.query_row("SELECT fields_json FROM EVENT_TraceEvent ORDER BY time DESC", [], |r| r.get(0)).unwrap();
    assert_eq!(plain, None, "a text with no fields in the grammar has none");
    let span: (i64, String) = conn
        .query_row(
            "SELECT json_extract(fields_json, '$.id'), json_extract(fields_json, '$.path') FROM EVENT_SpanEnter",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(span, (42, "/index".to_owned()));
    // The view: every event, each table's, in time order with ORDER BY.
    let total: i64 = conn.query_row("SELECT events FROM event_log", [], |r| r.get(0)).unwrap();
    let in_view: i64 = conn.query_row("SELECT count(*) FROM events", [], |r| r.get(0)).unwrap();
    assert_eq!(in_view, total);
    let ordered: Vec<(String, String)> = conn
        .prepare("SELECT event, json_extract(args, '$.target') FROM events WHERE kind = 'Builtin' ORDER BY time")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get::<_, Option<String>>(1)?.unwrap_or_default())))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        ordered,
        [
            ("TraceEvent".to_owned(), "app::db".to_owned()),
            ("SpanEnter".to_owned(), String::new()),
            ("TraceEvent".to_owned(), "app".to_owned())
        ]
    );
}

/// A recording's host and labels (`Recorder::host`, `Recorder::label`; stream format 2.1.0)
/// are `event_log`'s `host`, `service` and `labels` (a JSON object); a log without labels has
/// a null `service` and `{}`.
#[test]
fn the_host_and_labels_are_columns_of_the_log() {
    let d = dir();
    let labelled = d.join("labelled.evt");
    {
        let _serial = common::SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let recording = event_runtime::Recorder::new()
            .file(&labelled)
            .host("host-a")
            .label("service", "api")
            .label("version", "1.4.2")
            .label("pod", "api \"7f9c\"")
            .deterministic_clock()
            .start()
            .unwrap();
        event_runtime::message("labelled");
        recording.stop().unwrap();
    }
    let plain = sample_log(&d, "plain.evt", 1);
    let db = fresh_db(&d, "labels.db");
    let out = export(&db, &[&labelled, &plain]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = Connection::open(&db).unwrap();
    let rows: Vec<(Option<String>, Option<String>, String)> = db
        .prepare("SELECT host, service, labels FROM event_log ORDER BY serial")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        rows[0],
        (
            Some("host-a".to_owned()),
            Some("api".to_owned()),
            r#"{"service":"api","version":"1.4.2","pod":"api \"7f9c\""}"#.to_owned()
        )
    );
    assert_eq!((rows[1].1.as_deref(), rows[1].2.as_str()), (None, "{}"));
    // SQLite's JSON functions read the labels.
    let pod: String = db
        .query_row("SELECT json_extract(labels, '$.pod') FROM event_log WHERE service = 'api'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(pod, "api \"7f9c\"");
}

/// A stream of a 3 GHz clock (one tick is a third of a nanosecond) with a `Message` at the
/// start, one tick after it, and 1 s and 4 ticks after it.
fn three_ghz_log(d: &Path) -> PathBuf {
    let mut header = event_format::testing::sample_header(event_format::wire::Order::Little);
    header.clock = event_format::wire::Clock {
        source: event_format::wire::ClockSource::Tsc,
        ticks_per_second: 3_000_000_000,
        ref_ticks: 3_000,
        ref_wall_ns: 1_700_000_000_000_000_000,
        start_ticks: 3_000,
    };
    let mut bytes = header.encode().unwrap();
    let mut block = BlockWriter::new(
        header.order,
        header.block_size,
        &BlockHeader { thread: 1, base_time: 3_000, ..Default::default() },
    );
    for ticks in [3_000, 3_001, 3_000 + 3_000_000_004] {
        let text = event_format::wire::Text::new("tick");
        block.push(event_format::builtin::MESSAGE, ticks, &[Value::Str(text)]).unwrap();
    }
    bytes.extend(block.finish());
    let path = d.join("three-ghz.evt");
    std::fs::write(&path, bytes).unwrap();
    path
}

/// docs/OUTPUT.md ("Time"): `seconds` is the nanoseconds `print` shows, over 10^9: `print`'s
/// text read as a number, on a clock whose ticks are not whole nanoseconds too.
#[test]
fn seconds_are_prints_seconds() {
    let d = dir();
    let log = three_ghz_log(&d);
    let db_path = fresh_db(&d, "three-ghz.db");
    let out = export(&db_path, &[&log]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = run(&["print", log.to_str().unwrap()]);
    assert!(printed.status.success(), "{}", stderr(&printed));
    let want: Vec<f64> =
        common::stdout(&printed).lines().map(|l| l.split(' ').next().unwrap().parse().unwrap()).collect();
    assert_eq!(want, [0.0, 0.0, 1.000000001], "print's seconds");
    let db = Connection::open(&db_path).unwrap();
    let seconds: Vec<f64> = db
        .prepare("SELECT seconds FROM EVENT_Message ORDER BY time")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(seconds, want);
}
