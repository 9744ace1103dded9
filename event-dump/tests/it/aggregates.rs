//! What limits suppress (`Suppressed` records) and what histograms the recorder kept
//! (`Histogram` records) in every reader: `print`, `stats` and `check` (a note, not a loss),
//! every export (Perfetto, Chrome, CTF, SQLite, Parquet), and `hist`; the table exports'
//! histogram tables, whose buckets add up to what `hist` merges.

use crate::common::{self, *};
use event_runtime::Recorder;
use std::collections::BTreeMap;
use std::path::Path;

/// A recording of 100 `ObjectAlloc` events on one thread whose limit keeps one of every 10:
/// 10 kept, 90 suppressed.
fn limited_log(path: &Path) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let recording = Recorder::new()
        .file(path)
        .block_size(1024)
        .deterministic_clock()
        .limit("Object:ObjectAlloc=1/10")
        .start()
        .unwrap();
    for i in 0..100u64 {
        event!(ObjectAlloc, 0x1000usize, 0x2000usize + i as usize, 16 * i, 1u32);
    }
    recording.stop().unwrap();
}

/// The sum of the `count` of the `Suppressed` events `print --format json` shows.
fn printed_suppressed(log: &Path) -> u64 {
    let out = run(&["print", log.to_str().unwrap(), "--event", "Suppressed", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["args"]["count"].as_u64().unwrap())
        .sum()
}

#[test]
fn suppressions_are_in_print_stats_check_and_every_export() {
    let d = common::dir("aggregates-suppressed");
    let log = d.join("limited.evt");
    limited_log(&log);
    let l = log.to_str().unwrap();
    assert_eq!(printed_suppressed(&log), 90);
    let out = run(&["print", l, "--event", "ObjectAlloc"]);
    assert_eq!(stdout(&out).lines().count(), 10);

    let check = run(&["check", l]);
    assert!(check.status.success(), "a suppression is no problem: {}", stdout(&check));
    assert!(
        stdout(&check).contains("suppressed by its limit: Object.ObjectAlloc, 90 events (T1 90)"),
        "{}",
        stdout(&check)
    );
    let stats = stdout(&run(&["stats", l]));
    assert!(
        stats.contains("0 events lost") && stats.contains("suppressed by its limit: Object.ObjectAlloc, 90 events")
    );

    // Chrome JSON: instants named `Suppressed`, their `count` arguments adding up.
    let chrome = d.join("t.json");
    assert!(run(&["export", "--to", "chrome", l, "-o", chrome.to_str().unwrap()]).status.success());
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&chrome).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let counted: u64 = events
        .iter()
        .filter(|e| e["name"] == "Suppressed")
        .map(|e| e["args"]["count"].as_u64().unwrap_or_else(|| panic!("{e}")))
        .sum();
    assert_eq!(counted, 90);

    // Perfetto: its instants' names, in packets as they are.
    let perfetto = d.join("t.pftrace");
    let out = run(&["export", "--to", "perfetto", "--uncompressed", l, "-o", perfetto.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let bytes = std::fs::read(&perfetto).unwrap();
    assert!(bytes.windows(b"Suppressed".len()).any(|w| w == b"Suppressed"), "the instants of Suppressed");

    // CTF: an event class of its own.
    let ctf = d.join("ctf");
    assert!(run(&["export", "--to", "ctf", l, "-o", ctf.to_str().unwrap()]).status.success());
    let metadata = std::fs::read_to_string(ctf.join("metadata")).unwrap();
    assert!(metadata.contains("name = \"Builtin:Suppressed\";"), "{metadata}");

    // SQLite: its table, as every event type's.
    let db = d.join("t.db");
    assert!(run(&["export", "--to", "sqlite", l, "-o", db.to_str().unwrap()]).status.success());
    let conn = rusqlite::Connection::open(&db).unwrap();
    let sum: i64 = conn.query_row("SELECT sum(count) FROM EVENT_Suppressed", [], |r| r.get(0)).unwrap();
    assert_eq!(sum, 90);

    // Parquet: its table, read back row by row.
    let dataset = d.join("pq");
    assert!(run(&["export", "--to", "parquet", l, "-o", dataset.to_str().unwrap()]).status.success());
    let rows = parquet_rows(&dataset.join("Builtin.Suppressed"));
    let sum: u64 = rows.iter().map(|r| r["count"].parse::<u64>().unwrap()).sum();
    assert_eq!(sum, 90);
}

/// Every row of every file of the Parquet table in `dir` (all its partitions), as column ->
/// value text.
fn parquet_rows(dir: &Path) -> Vec<BTreeMap<String, String>> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let mut rows = Vec::new();
    for partition in std::fs::read_dir(dir).unwrap() {
        for file in std::fs::read_dir(partition.unwrap().path()).unwrap() {
            let reader = SerializedFileReader::new(std::fs::File::open(file.unwrap().path()).unwrap()).unwrap();
            for row in reader.get_row_iter(None).unwrap() {
                let row = row.unwrap();
                rows.push(
                    row.get_column_iter()
                        .map(|(n, f)| (n.clone(), f.to_string().trim_matches('"').to_owned()))
                        .collect(),
                );
            }
        }
    }
    rows
}

#[test]
fn hist_merges_the_records_and_the_tables_hold_their_buckets() {
    let d = common::dir("aggregates-hist");
    let log = d.join("h.evt");
    histogram_log(&log, &[], &[]);
    let l = log.to_str().unwrap();
    let out = run(&["hist", l]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("sizes (Size.size, HDR2 buckets): 6 values, 2 records, 2 threads"), "{text}");
    assert!(text.contains("  min 1  p50 5  p90 100  p99 100  max 100"), "{text}");
    // The bucket lines, as latency draws them: a label, the count, a bar.
    let count = |label: &str| -> u64 {
        let line =
            text.lines().find(|l| l.trim_start().starts_with(label)).unwrap_or_else(|| panic!("{label}: {text}"));
        line[label.len() + 2..].split('|').next().unwrap().trim().parse().unwrap()
    };
    assert_eq!((count("[1]"), count("[4]"), count("[5]"), count("[96, 112)")), (1, 0, 2, 1), "{text}");
    assert!(text.contains("req_ns (span req, LOG2 buckets): 1 value, 1 record, 1 thread"), "{text}");
    assert!(text.contains("  min 3.000 µs  p50 3.000 µs"), "{text}");
    let per_thread = stdout(&run(&["hist", l, "--name", "siz*", "--per-thread"]));
    assert!(per_thread.contains("  T2: 2 values\n    min 6  p50 6"), "{per_thread}");
    assert!(!per_thread.contains("req_ns"));
    let bad = run(&["hist", l, "--name", "nothing"]);
    assert!(!bad.status.success() && stderr(&bad).contains("--name matches no histogram; the logs declare"));

    // SQLite's histogram_bucket: one row per non-empty bucket of each record.
    let db = d.join("h.db");
    assert!(run(&["export", "--to", "sqlite", l, "-o", db.to_str().unwrap()]).status.success());
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut stmt = conn
        .prepare("SELECT low, high, sum(count) FROM histogram_bucket WHERE histogram = 'sizes' GROUP BY low, high ORDER BY low")
        .unwrap();
    let merged: Vec<(i64, i64, i64)> =
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
    assert_eq!(merged, [(1, 1, 1), (5, 5, 2), (6, 6, 1), (7, 7, 1), (96, 111, 1)]);
    let (of, unit, layout): (String, String, String) = conn
        .query_row("SELECT of, unit, layout FROM histogram_bucket WHERE histogram = 'req_ns'", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!((of.as_str(), unit.as_str(), layout.as_str()), ("span req", "ns", "LOG2"));

    // Parquet's histograms table: the same rows.
    let dataset = d.join("pq");
    assert!(run(&["export", "--to", "parquet", l, "-o", dataset.to_str().unwrap()]).status.success());
    let rows = parquet_rows(&dataset.join("histograms"));
    assert_eq!(rows.len(), 6);
    let sizes: u64 =
        rows.iter().filter(|r| r["histogram"] == "sizes").map(|r| r["count"].parse::<u64>().unwrap()).sum();
    assert_eq!(sizes, 6);
    let req = rows.iter().find(|r| r["histogram"] == "req_ns").unwrap();
    assert_eq!((req["low"].as_str(), req["high"].as_str(), req["thread"].as_str()), ("2048", "4095", "1"));
}

/// `summary`, `latency` and `hist` merge the `Histogram` records of the threads `--thread`
/// chooses (the thread that counted the values, not the writer's thread 0 that wrote the
/// record) and of the periods that overlap `--since`/`--until`, each whole; `--event` (which
/// `hist` does not take) chooses events, not periods, and leaves them all.
#[test]
fn a_selection_chooses_the_histograms_by_thread_and_period() {
    let d = common::dir("aggregates-hist-select");
    let log = d.join("h.evt");
    // sizes: thread 1 counted 4 values, thread 2 counted 2; req_ns: thread 1 one value. Every
    // period runs from tick 1000 to tick 5000 or 6000: about 2 s before the log's start.
    histogram_log(&log, &[], &[]);
    let l = log.to_str().unwrap();
    // (count, records) of each histogram, by `summary` and by `latency`, which agree.
    let kept = |select: &[&str]| -> BTreeMap<String, (u64, u64)> {
        let mut seen = Vec::new();
        let hist = !select.contains(&"--event");
        for command in ["summary", "latency", "hist"].into_iter().filter(|c| hist || *c != "hist") {
            let mut args = vec![command, l, "--format", "json"];
            args.extend_from_slice(select);
            let out = run(&args);
            assert!(out.status.success(), "{command} {select:?}: {}", stderr(&out));
            let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            let counts: BTreeMap<String, (u64, u64)> = doc["histograms"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| {
                    (
                        h["name"].as_str().unwrap().to_owned(),
                        (h["count"].as_u64().unwrap(), h["records"].as_u64().unwrap()),
                    )
                })
                .collect();
            seen.push(counts);
        }
        assert_eq!(seen[0], seen[1], "summary and latency, {select:?}");
        if hist {
            assert_eq!(seen[0], seen[2], "summary and hist, {select:?}");
        }
        seen.remove(0)
    };
    let all = kept(&[]);
    assert_eq!((all["sizes"], all["req_ns"]), ((6, 2), (1, 1)));
    let two = kept(&["--thread", "2"]);
    assert_eq!((two["sizes"], two["req_ns"]), ((2, 1), (0, 0)), "thread 2's period only");
    let one = kept(&["--thread", "T1"]);
    assert_eq!((one["sizes"], one["req_ns"]), ((4, 1), (1, 1)), "thread 1's periods");
    assert_eq!(kept(&["--since=-3", "--until=-1"]), all, "a window around every period");
    let after = kept(&["--since=-1"]);
    assert_eq!((after["sizes"], after["req_ns"]), ((0, 0), (0, 0)), "every period ended before -1 s");
    let before = kept(&["--until=-3"]);
    assert_eq!((before["sizes"], before["req_ns"]), ((0, 0), (0, 0)), "every period began after -3 s");
    assert_eq!(kept(&["--event", "Size"]), all, "--event leaves the periods");
}
