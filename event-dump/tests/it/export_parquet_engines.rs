//! A fleet's Parquet exports gathered by copying, read by the five engines docs/OUTPUT.md
//! names (DuckDB, DataFusion, Polars, Spark in local mode, ClickHouse's engine in process:
//! chdb), each through
//! `parquet_engines.py`: three logs exported separately into three directories, one of them
//! twice more into a fourth, all copied into one directory, as `cp -r` or `aws s3 sync` would;
//! every engine's count and sum of every event table per log equals `stats` and `print`, with
//! no row lost or doubled; Spark reads no id or count as DECIMAL; a `WHERE date = ...` prunes
//! a partition whose file is not Parquet at all. The `spans` table has each log's spans (as
//! the OTLP export counts them) in every engine, and one query over it, in DuckDB's SQL and
//! in ClickHouse's (chdb), gives the same numbers.
//!
//! An engine whose Python package is missing (`pip install duckdb datafusion polars
//! pyspark chdb`; Spark also needs a Java runtime) is skipped with a line saying so, unless its
//! `EVENT_REQUIRE_*` variable is 1 (CI, `.ci/run`): then its absence fails the test.

use crate::common::*;
use crate::export_parquet::{allocations_log, columns, dir, export_ok, fresh, id_in, printed, stats_per_event, tree};
use event_format::wire::Order;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The engines: name for the script, Python module, the variable that requires it.
const ENGINES: [(&str, &str, &str); 5] = [
    ("duckdb", "duckdb", "EVENT_REQUIRE_DUCKDB"),
    ("datafusion", "datafusion", "EVENT_REQUIRE_DATAFUSION"),
    ("polars", "polars", "EVENT_REQUIRE_POLARS"),
    ("spark", "pyspark", "EVENT_REQUIRE_SPARK"),
    ("chdb", "chdb", "EVENT_REQUIRE_CHDB"),
];

/// Whether `engine` can run here (its Python modules `imports` import; Spark also needs a
/// Java runtime); when it cannot, says so past the harness's capture, or fails when its
/// `EVENT_REQUIRE_*` variable `require` is 1.
fn available(engine: &str, imports: &str, require: &str) -> bool {
    let python = Command::new("python3").args(["-c", &format!("import {imports}")]).output();
    let java = engine != "spark" || Command::new("java").arg("-version").output().is_ok_and(|o| o.status.success());
    let ok = python.is_ok_and(|o| o.status.success()) && java;
    if !ok {
        let pip = imports.replace(", ", " ").replace("moto", "'moto[server]'");
        let java = if engine == "spark" { " and a Java runtime" } else { "" };
        assert!(
            std::env::var(require).as_deref() != Ok("1"),
            "{engine} not found (python3 -m pip install {pip}{java}), and {require}=1 requires it"
        );
        let _ = writeln!(std::io::stderr(), "skipped: {engine} not found (python3 -m pip install {pip}{java})");
    }
    ok
}

/// Copies every file under `from` into `to`, replacing files of the same name, as gathering
/// datasets by copying does.
fn copy_into(from: &Path, to: &Path) {
    for (path, bytes) in tree(from) {
        let target = to.join(path.strip_prefix(from).unwrap());
        if path.is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(&target, bytes).unwrap();
        }
    }
}

/// What the engine read: `parquet_engines.py`'s JSON (its last line of output; Spark may
/// print before it).
fn read_with(engine: &str, dataset: &Path, trap: &Path, date: &str, with_rows: &[&String]) -> Json {
    const SCRIPT: &str = include_str!("parquet_engines.py");
    let mut command = Command::new("python3");
    if engine == "spark" {
        // Spark runs jobs for each table it reads: only the tables with rows, `logs` and
        // `threads` (the other engines read every table, empty ones too).
        let tables: Vec<&str> = with_rows.iter().map(|t| t.as_str()).chain(["logs", "threads", "spans"]).collect();
        command.env("EVENT_PARQUET_TABLES", tables.join(","));
    }
    let out = command.args(["-c", SCRIPT, engine]).args([dataset, trap]).arg(date).output().unwrap();
    assert!(out.status.success(), "{engine}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    serde_json::from_str(text.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{engine}: {e}: {text}"))
}

/// What one log's rows of one table hold: how many, and each integer column's sum.
type Expected = (i64, BTreeMap<String, String>);

#[test]
fn a_fleet_gathered_by_copying_reads_the_same_in_every_engine() {
    let scratch = dir();
    let engines: Vec<&str> =
        ENGINES.iter().filter(|(e, m, r)| available(e, m, r)).map(|(engine, _, _)| *engine).collect();
    let recorded = scratch.join("engines-recorded.evt");
    sample_log(&recorded);
    let handmade = scratch.join("engines-handmade.evt");
    handmade_log(&handmade, Order::Big);
    let allocations = scratch.join("engines-allocations.evt");
    allocations_log(&allocations);
    // Each host exports its own log; the first log is exported a second time elsewhere.
    let hosts: Vec<(PathBuf, &Path)> =
        [("a", &recorded), ("b", &handmade), ("c", &allocations), ("a-again", &recorded)]
            .into_iter()
            .map(|(host, log)| (fresh(&scratch, &format!("engines-host-{host}")), log.as_path()))
            .collect();
    let mut ids = BTreeMap::new();
    for (out, log) in &hosts {
        let result = export_ok(out, &[log]);
        ids.insert(id_in(&result, log), *log);
    }
    assert_eq!(ids.len(), 3, "one id per log, the same for the log exported twice: {ids:?}");
    let relative = |d: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
        tree(d).into_iter().map(|(p, b)| (p.strip_prefix(d).unwrap().to_owned(), b)).collect()
    };
    assert_eq!(relative(&hosts[0].0), relative(&hosts[3].0), "the same log exported twice: the same names and bytes");
    let fleet = fresh(&scratch, "engines-fleet");
    for (out, _) in &hosts {
        copy_into(out, &fleet);
    }
    let files = |d: &Path| relative(d).into_iter().filter(|(_, b)| !b.is_empty()).count();
    assert_eq!(
        files(&fleet),
        hosts[..3].iter().map(|(d, _)| files(d)).sum::<usize>() - 2,
        "every file of the three exports (their markers one), none overwritten by another log's"
    );

    // A copy of the `logs` table beside a partition no query of another date should read.
    let trap = fresh(&scratch, "engines-trap");
    copy_into(&fleet.join("logs"), &trap.join("logs"));
    std::fs::create_dir_all(trap.join("logs/date=2999-01-01")).unwrap();
    std::fs::write(trap.join("logs/date=2999-01-01/00000000000000000000000000000000.parquet"), "not Parquet").unwrap();
    let start_date = std::fs::read_dir(fleet.join("logs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.starts_with("date="))
        .unwrap();
    let date = start_date.strip_prefix("date=").unwrap();
    let on_that_date = std::fs::read_dir(fleet.join("logs").join(&start_date)).unwrap().count() as i64;

    // Each log's spans, as the OTLP export (the same span model) counts them.
    let mut spans: BTreeMap<String, i64> = BTreeMap::new();
    for (id, log) in &ids {
        let json = scratch.join("engines-spans.json");
        let out = run(&["export", "--to", "otlp", log.to_str().unwrap(), "-o", json.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        let n: i64 = stdout(&out).split(' ').next().unwrap().parse().unwrap();
        if n > 0 {
            spans.insert(id.clone(), n);
        }
    }
    assert!(!spans.is_empty(), "some log has spans: {spans:?}");
    let mut span_stats: Option<(String, Json)> = None;

    // What each log holds, by `stats` and `print`: table -> id -> (rows, column -> sum).
    let mut want: BTreeMap<String, BTreeMap<String, Expected>> = BTreeMap::new();
    let mut events = BTreeMap::new();
    for (id, log) in &ids {
        let stats = stats_per_event(log);
        events.insert(id.clone(), stats.values().sum::<i64>());
        for (table, (params, aggregates)) in printed(log) {
            assert_eq!(stats.get(&table), Some(&aggregates.count), "{table}: print and stats agree");
            let names: BTreeMap<&String, String> = params.iter().zip(columns(&params)).collect();
            let sums = aggregates.sums.iter().map(|(p, sum)| (names[p].clone(), sum.to_string())).collect();
            want.entry(table).or_default().insert(id.clone(), (aggregates.count, sums));
        }
    }

    for engine in engines {
        let got = read_with(engine, &fleet, &trap, date, &want.keys().collect::<Vec<_>>());
        assert_eq!(got["logs_rows"].as_i64(), Some(3), "{engine}: one logs row per log");
        for (id, total) in &events {
            assert_eq!(got["logs"][id]["events"].as_i64(), Some(*total), "{engine}: events of {id}");
            assert_eq!(got["threads"][id].as_i64(), Some(*total), "{engine}: the threads' events of {id}");
        }
        let tables = got["tables"].as_object().unwrap();
        for (table, logs) in &want {
            for (id, (count, sums)) in logs {
                let row = &tables.get(table).unwrap_or_else(|| panic!("{engine}: no table {table}"))[id];
                assert_eq!(row[0].as_i64(), Some(*count), "{engine}: rows of {table} of {id}");
                // Every integer column the engine sums is one `print` sums, and agrees.
                let summed: BTreeMap<String, String> = row[1]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(c, v)| (c.clone(), v.as_str().unwrap().to_owned()))
                    .collect();
                assert_eq!(&summed, sums, "{engine}: sums of {table} of {id}");
            }
        }
        for (table, logs) in tables {
            for id in logs.as_object().unwrap().keys() {
                assert!(want.get(table).is_some_and(|w| w.contains_key(id)), "{engine}: {table} has rows of {id}");
            }
        }
        assert_eq!(
            got["pruned"].as_i64(),
            Some(on_that_date),
            "{engine}: WHERE date = '{date}' read only that partition"
        );
        let got_spans: BTreeMap<String, i64> =
            got["spans"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_i64().unwrap())).collect();
        assert_eq!(got_spans, spans, "{engine}: the spans table has each log's spans");
        assert!(
            got.get("span_stats").is_some() || !["duckdb", "chdb"].contains(&engine),
            "{engine}: the query over the spans table"
        );
        if let Some(stats) = got.get("span_stats") {
            let names: i64 = stats
                .as_object()
                .unwrap()
                .values()
                .flat_map(|s| s.as_object().unwrap().values())
                .map(|v| v[0].as_str().unwrap().parse::<i64>().unwrap())
                .sum();
            assert_eq!(names, spans.values().sum::<i64>(), "{engine}: the query counts every span");
            match &span_stats {
                None => span_stats = Some((engine.to_owned(), stats.clone())),
                Some((first, theirs)) => assert_eq!(stats, theirs, "{engine} and {first} agree on the spans table"),
            }
        }
        if engine == "spark" {
            // No id or count as DECIMAL: only the P, A and W parameters are UINT64.
            for (table, types) in got["types"].as_object().unwrap() {
                for (column, ty) in types.as_object().unwrap() {
                    let parameter = !["logs", "threads"].contains(&table.as_str())
                        && !["log", "thread", "ticks", "ns", "time", "date"].contains(&column.as_str());
                    if !parameter {
                        assert!(!ty.as_str().unwrap().contains("decimal"), "spark: {table}.{column} is {ty}");
                    }
                }
            }
        }
    }
}

/// Object storage: a dataset copied to an S3-compatible server (moto's server mode) and read
/// by Polars over `s3://` has every table's rows of every log, as `stats` counts them.
#[test]
fn a_dataset_in_object_storage_reads_as_on_disk() {
    let scratch = dir();
    if !available("polars over s3 (moto)", "moto, boto3, polars", "EVENT_REQUIRE_S3") {
        return;
    }
    let handmade = scratch.join("s3-handmade.evt");
    handmade_log(&handmade, Order::Little);
    let allocations = scratch.join("s3-allocations.evt");
    allocations_log(&allocations);
    let out = fresh(&scratch, "s3");
    let result = export_ok(&out, &[&handmade, &allocations]);
    const SCRIPT: &str = include_str!("parquet_s3.py");
    let read = Command::new("python3").args(["-c", SCRIPT]).arg(&out).output().unwrap();
    assert!(read.status.success(), "{}", String::from_utf8_lossy(&read.stderr));
    let text = String::from_utf8(read.stdout).unwrap();
    let got: Json = serde_json::from_str(text.lines().last().unwrap_or_default()).unwrap();
    for log in [&handmade, &allocations] {
        let id = id_in(&result, log);
        for (table, count) in stats_per_event(log) {
            let rows = got[&table][&id].as_i64().unwrap_or(0);
            assert_eq!(rows, count, "{table} of {} over s3://", log.display());
        }
        assert_eq!(got["logs"][&id].as_i64(), Some(1));
    }
}
