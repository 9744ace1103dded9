//! `export` with `print`'s selection (`--since`, `--until`, `--kind`, `--thread`, ...): every
//! format writes what `print` shows with the same options, says how many events it left out
//! (never as losses), and Chrome and Perfetto choose a span by its begin: one begun in the
//! window is exported whole, an end whose begin was left out is an instant.

use crate::common::{self, *};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The test program's log (spans nested on four workers), and its `print --format json`.
fn program(test: &str) -> (Scratch, PathBuf, Vec<Printed>) {
    let d = common::dir(test);
    let log = d.join("program.evt");
    program_log(&log, false);
    let printed = print_json(&[log.to_str().unwrap()]);
    (d, log, printed)
}

/// Seconds as `print` writes them, from nanoseconds.
fn seconds(ns: i128) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// `print --format json LOG ARGS`: how many events it shows.
fn printed_with(log: &Path, args: &[&str]) -> usize {
    let mut all = vec!["print", log.to_str().unwrap(), "--format", "json"];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).lines().count()
}

/// Runs `export --to TO LOG -o OUT ARGS`, successfully; its stdout and stderr.
fn export(to: &str, log: &Path, out: &Path, args: &[&str]) -> (String, String) {
    let mut all = vec!["export", "--to", to, log.to_str().unwrap(), "-o", out.to_str().unwrap()];
    all.extend_from_slice(args);
    let run = run(&all);
    assert!(run.status.success(), "{}", stderr(&run));
    (stdout(&run), stderr(&run))
}

/// The first `SweepBegin` of the inner span: the outer span of its thread began before it.
fn first_inner_begin(printed: &[Printed]) -> &Printed {
    printed.iter().find(|p| p.event == "SweepBegin" && p.args.values().any(|v| v == "inner")).unwrap()
}

fn left_out_line(n: usize) -> String {
    format!("{n} events outside the choice (--kind, --event, --thread, --since, --until, --filter) left out")
}

/// Chrome's events that are not metadata, counters or the closing of a slice cut short.
fn chrome_events(trace: &Value) -> Vec<&Value> {
    trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] != "M" && e["ph"] != "C" && e["args"]["unended"] != Value::Bool(true))
        .collect()
}

fn ts_ns(e: &Value) -> i128 {
    (e["ts"].as_f64().unwrap() * 1000.0).round() as i128
}

#[test]
fn chrome_since_exports_what_print_shows_and_a_span_begun_before_is_an_instant() {
    let (d, log, printed) = program("window-chrome-since");
    let inner = first_inner_begin(&printed);
    let since = seconds(inner.ns);
    let shown = printed_with(&log, &["--since", &since]);
    assert!(shown < printed.len() && shown > 0);
    let out = d.join("since.json");
    let (_, err) = export("chrome", &log, &out, &["--since", &since]);
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let events = chrome_events(&trace);
    // One line per event print shows: an instant, a begin or an end.
    assert_eq!(events.len(), shown, "{err}");
    assert!(events.iter().all(|e| ts_ns(e) >= inner.ns), "nothing before --since");
    // The outer Sweep of the thread began before --since: its end is an instant, said.
    let instants: Vec<_> = events.iter().filter(|e| e["name"] == "SweepEnd" && e["ph"] == "i").collect();
    assert_eq!(instants.len(), 1, "{instants:?}");
    assert_eq!(events.iter().filter(|e| e["ph"] == "B").count(), events.iter().filter(|e| e["ph"] == "E").count());
    assert!(err.contains("1 span end whose begin the choice left out, exported as an instant"), "{err}");
    assert!(err.contains(&left_out_line(printed.len() - shown)), "{err}");
    assert!(!err.contains("never ended"), "{err}");
}

#[test]
fn chrome_until_keeps_a_span_begun_inside_whole() {
    let (d, log, printed) = program("window-chrome-until");
    let inner = first_inner_begin(&printed);
    // Just after the inner begin: both Sweeps of its thread are open, and end after --until.
    let until = seconds(inner.ns + 1);
    let shown = printed_with(&log, &["--until", &until]);
    let out = d.join("until.json");
    let (_, err) = export("chrome", &log, &out, &["--until", &until]);
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let events = chrome_events(&trace);
    let ends: Vec<_> = events.iter().filter(|e| e["ph"] == "E").collect();
    assert_eq!(ends.len(), 2, "the inner and outer Sweep end, after --until: {ends:?}");
    assert!(ends.iter().all(|e| ts_ns(e) > inner.ns), "both at or after --until");
    assert_eq!(events.len(), shown + 2, "print's events and the two ends");
    assert!(!err.contains("never ended") && !err.contains("instant"), "{err}");
    assert!(err.contains(&left_out_line(printed.len() - shown)), "{err}");
}

#[test]
fn sqlite_rows_are_what_print_shows_and_left_out_is_counted() {
    let (d, log, printed) = program("window-sqlite");
    let args = ["--kind", "Seg,Pool", "--thread", "2"];
    let shown = printed_with(&log, &args);
    assert!(shown > 0 && shown < printed.len());
    let db_path = d.join("window.db");
    let _ = std::fs::remove_file(&db_path);
    let (out, _) = export("sqlite", &log, &db_path, &args);
    assert!(out.contains(&format!("{shown} events as log 1")), "{out}");
    assert!(out.contains(&left_out_line(printed.len() - shown)), "{out}");
    let db = rusqlite::Connection::open(&db_path).unwrap();
    let rows: i64 = db.query_row("SELECT count(*) FROM events", [], |r| r.get(0)).unwrap();
    assert_eq!(rows as usize, shown);
    let threads: i64 = db.query_row("SELECT count(DISTINCT thread) FROM events", [], |r| r.get(0)).unwrap();
    assert_eq!(threads, 1);
    let (events, left_out, lost): (i64, i64, i64) = db
        .query_row("SELECT events, left_out, lost_events FROM event_log", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    assert_eq!((events as usize, left_out as usize, lost), (printed.len(), printed.len() - shown, 0));
}

/// A Parquet dataset holds whole logs (a log's files are named by its id, and the same name
/// must always hold the same rows): the export refuses a selection in one line and writes
/// nothing. CTF takes the window as the viewers do.
#[test]
fn ctf_takes_the_window_and_parquet_refuses_it() {
    let (d, log, printed) = program("window-tables");
    let inner = first_inner_begin(&printed);
    let args = ["--since", &seconds(inner.ns), "--filter", "name ~ \"Sweep*\""];
    let fleet = d.join("fleet");
    let _ = std::fs::remove_dir_all(&fleet);
    let mut command = vec!["export", "--to", "parquet", log.to_str().unwrap(), "-o", fleet.to_str().unwrap()];
    command.extend(args.iter().copied());
    let refused = run(&command);
    assert_eq!(refused.status.code(), Some(1));
    let err = stderr(&refused);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("the Parquet export takes no --kind"), "{err}");
    assert!(!fleet.exists(), "nothing written");

    let ctf = d.join("ctf");
    let _ = std::fs::remove_dir_all(&ctf);
    let (_, err) = export("ctf", &log, &ctf, &["--thread", "1"]);
    let left_out = printed.len() - printed_with(&log, &["--thread", "1"]);
    assert!(err.contains(&left_out_line(left_out)), "{err}");
    let streams = std::fs::read_dir(&ctf).unwrap().filter(|e| e.as_ref().unwrap().file_name() != "metadata").count();
    assert_eq!(streams, 1, "one thread, one stream file");
}

#[test]
fn a_bad_selection_is_one_line_and_writes_nothing() {
    let (d, log, _) = program("window-bad");
    let out = d.join("bad.json");
    let run = run(&["export", "--to", "chrome", log.to_str().unwrap(), "-o", out.to_str().unwrap(), "--kind", "Nope"]);
    assert_eq!(run.status.code(), Some(1));
    let err = stderr(&run);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--kind Nope"), "{err}");
    assert!(!out.exists());
}
