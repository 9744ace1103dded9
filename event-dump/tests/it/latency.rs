//! `latency` as a user runs it: its counts, minimum, percentiles (nearest rank), maximum,
//! histogram and slowest spans equal what the test computes itself from `print --format
//! json`, pairing the events as the declarations say (nested spans of a thread, async spans
//! that migrate, spans never ended and ends never begun counted, not timed); per value of a
//! parameter (`--by`); for a log that declares nothing (the naming convention); with the
//! selection options; and its errors are one line.

use crate::common::{self, *};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// `latency` of `logs` with `extra` options, as JSON.
fn latency(logs: &[&Path], extra: &[&str]) -> Value {
    let mut args = vec!["latency", "--format", "json"];
    args.extend(logs.iter().map(|l| l.to_str().unwrap()));
    args.extend_from_slice(extra);
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&out)))
}

/// The nearest-rank p-th percentile, computed here; `p` as latency's keys write it (`99.9`).
fn percentile(sorted: &[i128], p: &str) -> i128 {
    let (whole, frac) = p.split_once('.').unwrap_or((p, ""));
    let den = 10u128.pow(frac.len() as u32);
    let num = whole.parse::<u128>().unwrap() * den + frac.parse::<u128>().unwrap_or(0);
    let rank = (num * sorted.len() as u128).div_ceil(100 * den).max(1);
    sorted[rank as usize - 1]
}

/// What the test expects of one span name (and value of `--by`).
#[derive(Debug, Default)]
struct Expected {
    durations: Vec<i128>,
    unended: u64,
    unmatched: u64,
}

/// What is expected per span name and value of `--by`.
type Groups = BTreeMap<(String, Option<String>), Expected>;

/// A span paired here from `print`'s events: (name, group value, start, end, thread, end
/// thread, id).
type Paired = (String, Option<String>, i128, i128, String, String, Option<String>);

/// The spans of the test program ([`meanings_log`]), paired from `print --format json` as
/// events.def declares them: `Sweep` nested on each thread, `Segment` by `seg` on any
/// thread; grouped by `by` (parameters of the begin, their values joined by `,` as latency's
/// `value` joins several; `(none)` for one an event has not).
fn pair(printed: &[Printed], by: &[&str]) -> (Groups, Vec<Paired>) {
    let mut groups = Groups::new();
    let mut sweeps: BTreeMap<String, Vec<&Printed>> = BTreeMap::new();
    let mut segments: BTreeMap<String, &Printed> = BTreeMap::new();
    let mut paired = Vec::new();
    let value = |p: &Printed| {
        let values: Vec<String> = by.iter().map(|b| p.args.get(*b).map_or("(none)".to_owned(), text)).collect();
        (!by.is_empty()).then(|| values.join(","))
    };
    for p in printed {
        let (name, begun) = match p.event.as_str() {
            "SweepBegin" => {
                sweeps.entry(p.thread.clone()).or_default().push(p);
                continue;
            }
            "SegAlloc" => {
                segments.insert(text(&p.args["seg"]), p);
                continue;
            }
            "SweepEnd" => ("Sweep", sweeps.get_mut(&p.thread).and_then(Vec::pop)),
            "SegFree" => ("Segment", segments.remove(&text(&p.args["seg"]))),
            _ => continue,
        };
        match begun {
            None => groups.entry((name.to_owned(), value(p))).or_default().unmatched += 1,
            Some(b) => {
                groups.entry((name.to_owned(), value(b))).or_default().durations.push(p.ns - b.ns);
                let id = (name == "Segment").then(|| text(&b.args["seg"]));
                paired.push((name.to_owned(), value(b), b.ns, p.ns, b.thread.clone(), p.thread.clone(), id));
            }
        }
    }
    for b in sweeps.values().flatten() {
        groups.entry(("Sweep".to_owned(), value(b))).or_default().unended += 1;
    }
    for b in segments.values() {
        groups.entry(("Segment".to_owned(), value(b))).or_default().unended += 1;
    }
    (groups, paired)
}

/// A printed value as `print`'s text writes it: pointers as they are, numbers bare.
fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

/// Nanoseconds as `print` writes seconds.
fn seconds(ns: i128) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// Checks `latency`'s JSON against the groups computed here.
fn check(json: &Value, expected: &Groups) {
    let spans = json["spans"].as_array().unwrap();
    assert_eq!(spans.len(), expected.len(), "{json}");
    for ((name, value), want) in expected {
        let got = spans
            .iter()
            .find(|s| s["span"] == name.as_str() && s["value"].as_str() == value.as_deref())
            .unwrap_or_else(|| panic!("no {name} {value:?} in {json}"));
        let mut d = want.durations.clone();
        d.sort_unstable();
        assert_eq!(got["count"].as_u64(), Some(d.len() as u64), "{got}");
        assert_eq!(
            (got["unended"].as_u64(), got["unmatched_ends"].as_u64()),
            (Some(want.unended), Some(want.unmatched))
        );
        let stat = |key: &str| got[key].as_i64().map(i128::from);
        if d.is_empty() {
            assert!(got["p50_ns"].is_null() && got["histogram"].as_array().unwrap().is_empty(), "{got}");
            continue;
        }
        assert_eq!((stat("min_ns"), stat("max_ns")), (Some(d[0]), Some(d[d.len() - 1])), "{got}");
        for p in json["percentile_points"].as_array().unwrap() {
            let p = p.as_str().unwrap();
            assert_eq!(stat(&format!("p{p}_ns")), Some(percentile(&d, p)), "p{p} of {name}: {d:?}");
        }
        let total = got["total_ns"].as_i64().map(i128::from);
        assert_eq!(total, Some(d.iter().sum::<i128>()), "{got}");
        // The histogram's buckets are powers of two, each counting its durations.
        let mut counted = 0;
        for bucket in got["histogram"].as_array().unwrap() {
            let (from, to) = (bucket["from_ns"].as_i64().unwrap() as i128, bucket["to_ns"].as_i64().unwrap() as i128);
            assert!(from == 0 && to == 1 || to == 2 * from, "{bucket}");
            let n = d.iter().filter(|&&x| from <= x && x < to).count() as u64;
            assert_eq!(bucket["count"].as_u64(), Some(n), "{bucket} of {d:?}");
            counted += n;
        }
        assert_eq!(counted, d.len() as u64);
    }
}

#[test]
fn percentiles_and_the_slowest_are_what_print_shows() {
    let d = common::dir("latency-program");
    let log = d.join("program.evt");
    meanings_log(&log);
    let printed = print_json(&[log.to_str().unwrap()]);
    let (expected, mut paired) = pair(&printed, &[]);
    // Both kinds, each with its never ended and its never begun.
    assert_eq!(expected.len(), 2);
    assert!(expected.values().all(|e| e.unended == 1 && e.unmatched == 1), "{expected:?}");
    let json = latency(&[&log], &["--top", "3"]);
    assert_eq!(json["percentiles"], "nearest rank");
    check(&json, &expected);
    assert_eq!(json["slowest"].as_array().unwrap().len(), 3);
    // The slowest, slowest first (of equal durations, the one that ended first), each with
    // where print shows it: all of them.
    paired.sort_by_key(|p| std::cmp::Reverse(p.3 - p.2));
    let json = latency(&[&log], &["--top", "100"]);
    let slowest = json["slowest"].as_array().unwrap();
    assert_eq!(slowest.len(), 8 + 9);
    for (s, p) in slowest.iter().zip(&paired) {
        assert_eq!(s["duration_ns"].as_i64().map(i128::from), Some(p.3 - p.2), "{s}");
        assert_eq!((s["start"].as_str(), s["end"].as_str()), (Some(&*seconds(p.2)), Some(&*seconds(p.3))), "{s}");
        assert_eq!((s["thread"].as_str(), s["end_thread"].as_str()), (Some(&*p.4), Some(&*p.5)), "{s}");
        assert_eq!(s["id"].as_str(), p.6.as_deref(), "{s}");
    }
    // Segments migrated: begun on one thread, ended on another.
    let segments: Vec<&Value> = slowest.iter().filter(|s| s["span"] == "Segment").collect();
    assert_eq!(segments.len(), 9);
    assert!(segments.iter().all(|s| s["thread"] != s["end_thread"]), "{segments:?}");
}

#[test]
fn per_value_of_a_parameter() {
    let d = common::dir("latency-by");
    let log = d.join("program.evt");
    meanings_log(&log);
    let printed = print_json(&[log.to_str().unwrap()]);
    let (expected, _) = pair(&printed, &["pool"]);
    // Four workers' pools and the main thread's 0x1 (a span never ended, an end never begun).
    assert_eq!(expected.keys().filter(|(n, _)| n == "Sweep").count(), 5, "{expected:?}");
    let json = latency(&[&log], &["--by", "pool"]);
    assert_eq!(json["by"], "pool");
    check(&json, &expected);
}

/// Several `--by` parameters group by their values together; `--percentiles` takes any
/// list, fractions included; `total_ns` is the durations' sum.
#[test]
fn several_parameters_and_any_percentiles() {
    let d = common::dir("latency-by-two");
    let log = d.join("program.evt");
    meanings_log(&log);
    let printed = print_json(&[log.to_str().unwrap()]);
    let (expected, _) = pair(&printed, &["pool", "epoch"]);
    // The outer and inner sweeps of each pool are groups apart; segments have no epoch.
    assert!(expected.keys().any(|(n, v)| n == "Sweep" && v.as_deref() == Some("0x1002,2")), "{expected:?}");
    assert!(expected.keys().any(|(n, v)| n == "Segment" && v.as_deref().is_some_and(|v| v.ends_with(",(none)"))));
    let json = latency(&[&log], &["--by", "pool,epoch", "--percentiles", "50,99,99.9,99.99"]);
    assert_eq!(json["by"], "pool,epoch");
    assert_eq!(json["by_params"], serde_json::json!(["pool", "epoch"]));
    assert_eq!(json["percentile_points"], serde_json::json!(["50", "99", "99.9", "99.99"]));
    check(&json, &expected);
    let sweep = json["spans"].as_array().unwrap().iter().find(|s| s["value"] == "0x1002,2").unwrap();
    assert_eq!(sweep["values"], serde_json::json!(["0x1002", "2"]), "{sweep}");
    assert!(sweep.get("p90_ns").is_none() && sweep.get("p99.99_ns").is_some(), "{sweep}");
    // `--by` repeated is `--by` with a list.
    assert_eq!(latency(&[&log], &["--by", "pool", "--by", "epoch"]), latency(&[&log], &["--by", "pool,epoch"]));
    // The text shows the percentiles asked for.
    let out = run(&["latency", log.to_str().unwrap(), "--percentiles", "99.9,50", "--span", "Sweep"]);
    let text = stdout(&out);
    assert!(text.lines().nth(1).is_some_and(|l| l.contains("  p99.9 ") && l.contains("  p50 ")), "{text}");
    let out = run(&["latency", log.to_str().unwrap(), "--percentiles", "0,50"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("`0` is not above 0 and at most 100"), "{}", stderr(&out));
}

#[test]
fn the_selection_chooses_spans_by_their_begin() {
    let d = common::dir("latency-select");
    let log = d.join("program.evt");
    meanings_log(&log);
    let printed = print_json(&[log.to_str().unwrap()]);
    let (expected, _) = pair(&printed, &[]);
    // --span: one name.
    let json = latency(&[&log], &["--span", "Seg*"]);
    let only: BTreeMap<_, _> = expected.into_iter().filter(|((n, _), _)| n == "Segment").collect();
    check(&json, &only);
    // --thread: the spans that begin on a thread, whichever thread ends them.
    let worker = printed.iter().find(|p| p.event == "ThreadName" && p.args["name"] == "worker-2").unwrap();
    let tid = format!("T{}", worker.args["thread"]);
    let on: Vec<Printed> = printed
        .iter()
        .filter(|p| p.event.ends_with("End") || p.event == "SegFree" || p.thread == tid)
        .cloned()
        .collect();
    let (mut expected, _) = pair(&on, &[]);
    for e in expected.values_mut() {
        // Ends of spans begun on other threads close nothing here; latency does not count them.
        e.unmatched = 0;
    }
    let json = latency(&[&log], &["--thread", "worker-2"]);
    let got: Vec<(String, u64)> = json["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["span"].as_str().unwrap().to_owned(), s["count"].as_u64().unwrap()))
        .collect();
    let want: Vec<(String, u64)> = expected.iter().map(|((n, _), e)| (n.clone(), e.durations.len() as u64)).collect();
    assert_eq!(got, want);
    assert_eq!(json["spans"][1]["unended"], 0, "worker-2 ended every span it began");
    // A glob of names chooses every thread it matches, as the names listed do.
    let glob = latency(&[&log], &["--thread", "worker-*"]);
    assert_eq!(glob, latency(&[&log], &["--thread", "worker-0,worker-1,worker-2,worker-3"]));
    assert_ne!(glob, latency(&[&log], &[]), "the main thread's spans are not the workers'");
}

#[test]
fn a_log_that_declares_nothing_pairs_by_the_convention() {
    let d = common::dir("latency-jobs");
    let log = d.join("jobs.evt");
    common::migrating_jobs_log(&log);
    let json = latency(&[&log], &["--top", "1"]);
    let mut jobs: Vec<i128> = (0..JOBS).map(job_times).map(|(b, e, _, _)| i128::from(e - b)).collect();
    jobs.sort_unstable();
    let mut expected = BTreeMap::new();
    expected.insert(("Job".to_owned(), None), Expected { durations: jobs.clone(), unended: 0, unmatched: 0 });
    expected
        .insert(("Step".to_owned(), None), Expected { durations: vec![1_000_000 - 2; 4], unended: 0, unmatched: 0 });
    check(&json, &expected);
    assert_eq!(json["slowest"][0]["duration_ns"], 1_000_000 - 2);
}

#[test]
fn several_logs_are_counted_together() {
    let d = common::dir("latency-two");
    let (a, b) = (d.join("a.evt"), d.join("b.evt"));
    meanings_log(&a);
    meanings_log(&b);
    let mut expected = Groups::new();
    for log in [&a, &b] {
        for (key, e) in pair(&print_json(&[log.to_str().unwrap()]), &[]).0 {
            let all = expected.entry(key).or_default();
            all.durations.extend(e.durations);
            all.unended += e.unended;
            all.unmatched += e.unmatched;
        }
    }
    let json = latency(&[&a, &b], &[]);
    check(&json, &expected);
    // Threads are named as print names them in several logs: `host/service`, here with the
    // pid and the recording id (both logs' host, program and pid are the same), and `:Tn`.
    let pid = std::process::id();
    let thread = json["slowest"][0]["thread"].as_str().unwrap();
    assert!(thread.contains(&format!("[{pid}]@")) && thread.contains(":T"), "{json}");
}

#[test]
fn the_text_shows_a_histogram_as_bpftrace_does() {
    let d = common::dir("latency-text");
    let log = d.join("jobs.evt");
    common::migrating_jobs_log(&log);
    let out = run(&["latency", log.to_str().unwrap(), "--top", "3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    insta::assert_snapshot!(stdout(&out));
}

#[test]
fn errors_are_one_line() {
    let d = common::dir("latency-errors");
    let jobs = d.join("jobs.evt");
    common::migrating_jobs_log(&jobs);
    let quiet = d.join("quiet.evt");
    dropping_log(&quiet);
    let cases: [(&str, Vec<&str>, &str); 3] = [
        ("no such parameter", vec!["latency", jobs.to_str().unwrap(), "--by", "idd"], "did you mean `id`?"),
        ("no span at all", vec!["latency", quiet.to_str().unwrap()], "no span in the log"),
        (
            "none selected",
            vec!["latency", jobs.to_str().unwrap(), "--span", "Nothing"],
            "no span of the log is selected",
        ),
    ];
    for (what, args, says) in cases {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{what}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.starts_with("event-dump: ") && err.contains(says), "{what}: {err}");
    }
}

/// The SQL block of docs/guide/looking-at-a-trace.md after the marker `<!-- sql: NAME -->`.
fn guide_sql(name: &str) -> String {
    let guide =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/guide/looking-at-a-trace.md")).unwrap();
    let marker = format!("<!-- sql: {name} -->\n```sql\n");
    let at = guide.find(&marker).unwrap_or_else(|| panic!("the guide has no block {name}")) + marker.len();
    guide[at..].split("```").next().unwrap().to_owned()
}

/// `latency`'s numbers of `span` as the guide's queries give them: count, min, p50, p90,
/// p99, max.
fn latency_numbers(json: &Value, span: &str) -> Vec<i64> {
    let s = json["spans"].as_array().unwrap().iter().find(|s| s["span"] == span).unwrap();
    ["count", "min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns"].iter().map(|k| s[*k].as_i64().unwrap()).collect()
}

/// The guide's SQL over the SQLite and Parquet exports gives `latency`'s numbers, for a
/// span of one thread that nests and an async one, when every span ends.
#[test]
fn the_guides_sql_gives_the_same_numbers() {
    let d = common::dir("latency-sql");
    let log = d.join("whole.evt");
    program_log(&log, false);
    let json = latency(&[&log], &[]);
    assert!(json["spans"].as_array().unwrap().iter().all(|s| s["unended"] == 0 && s["unmatched_ends"] == 0));
    let db_path = d.join("whole.db");
    let _ = std::fs::remove_file(&db_path);
    let out = run(&["export", "--to", "sqlite", log.to_str().unwrap(), "-o", db_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = rusqlite::Connection::open(&db_path).unwrap();
    let numbers = |db: &rusqlite::Connection| -> Vec<i64> {
        db.query_row(&guide_sql("sqlite percentiles"), [], |r| (0..6).map(|i| r.get(i)).collect()).unwrap()
    };
    db.execute_batch(&guide_sql("sqlite Sweep")).unwrap();
    assert_eq!(numbers(&db), latency_numbers(&json, "Sweep"));
    db.execute_batch(&guide_sql("sqlite Segment")).unwrap();
    assert_eq!(numbers(&db), latency_numbers(&json, "Segment"));

    // DuckDB over the Parquet export, where its Python package is installed.
    let duckdb = std::process::Command::new("python3").args(["-c", "import duckdb"]).output();
    if !duckdb.is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var("EVENT_REQUIRE_DUCKDB").as_deref() != Ok("1"),
            "DuckDB's Python package not found, and EVENT_REQUIRE_DUCKDB=1 requires it (pip install duckdb)"
        );
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "skipped: DuckDB's Python package not found (pip install duckdb)");
        return;
    }
    let fleet = d.join("fleet");
    let _ = std::fs::remove_dir_all(&fleet);
    let out = run(&["export", "--to", "parquet", log.to_str().unwrap(), "-o", fleet.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    const SCRIPT: &str = "import duckdb, json, os, sys\n\
        os.chdir(sys.argv[1])\n\
        con = duckdb.connect()\n\
        out = []\n\
        for view in sys.argv[3:]:\n    con.execute(view)\n    out.append(list(con.execute(sys.argv[2]).fetchone()))\n\
        print(json.dumps(out))\n";
    let run = std::process::Command::new("python3")
        .args(["-c", SCRIPT, d.to_str().unwrap(), &guide_sql("duckdb percentiles")])
        .args([guide_sql("duckdb Sweep"), guide_sql("duckdb Segment")])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let got: Vec<Vec<i64>> = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(got, [latency_numbers(&json, "Sweep"), latency_numbers(&json, "Segment")]);
}

/// A `tracing` span's `SpanClose` that closed nothing (its span created before the recording
/// started) is counted as an end with no begin, under a group that says what it is: a close
/// names no span, so it is not counted under the bridge's rule (`SpanOpen`) nor any name.
#[test]
fn a_span_close_that_closed_nothing_is_an_unmatched_end() {
    use event_format::wire::{BlockHeader, BlockWriter, Header, Order, Text, Value as Arg};
    let d = common::dir("latency-unopened");
    let log = d.join("closes.evt");
    let schema =
        event_format::def::parse("SET(t)\nVERSION(1, 0, 0)\nKIND(K)\nRELATION(Plain, 1, TRUE, K, W, n)\n", "t.def")
            .unwrap();
    let mut header = Header::new(schema, 1024, handmade_clock(), handmade_producer());
    header.order = Order::Little;
    let mut bytes = header.encode().unwrap();
    let mut b = BlockWriter::new(
        Order::Little,
        1024,
        &BlockHeader { thread: 1, base_time: 6_000_000_000, ..Default::default() },
    );
    let (open, close) = (event_format::builtin::SPAN_OPEN, event_format::builtin::SPAN_CLOSE);
    let opened = [Arg::Word(7), Arg::Word(0), Arg::Str(Text::new("request")), Arg::Str(Text::new("id=1"))];
    b.push(open, 6_000_000_000, &opened).unwrap();
    b.push(close, 6_000_003_000, &[Arg::Word(9)]).unwrap();
    b.push(close, 6_000_006_000, &[Arg::Word(7)]).unwrap();
    bytes.extend(b.finish());
    end_with_stop(&mut bytes);
    std::fs::write(&log, bytes).unwrap();

    let json = latency(&[&log], &[]);
    let spans: Vec<(&str, u64, u64)> = json["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["span"].as_str().unwrap(), s["count"].as_u64().unwrap(), s["unmatched_ends"].as_u64().unwrap()))
        .collect();
    assert_eq!(spans, [("(unopened tracing span)", 0, 1), ("request", 1, 0)]);
    assert_eq!(json["spans"][1]["min_ns"], 2000, "6000 ticks at 3 a ns");
    let out = run(&["latency", log.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(!text.contains("SpanOpen"), "{text}");
    assert!(text.contains("(unopened tracing span)"), "{text}");
    // `summary` pairs as `latency` does.
    let out = run(&["summary", log.to_str().unwrap(), "--format", "json"]);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["spans"][0]["span"], "(unopened tracing span)");
    assert_eq!(summary["spans"][0]["unmatched_ends"], 1);
}
