//! `summary`: the same bytes from two reads of one log; its counts are `stats`'s, its spans
//! `latency`'s, its losses and damage the ledger's (the line `stats` writes, word for word);
//! what limits suppressed is the ledger's count of the `Suppressed` records, per log and
//! thread and in all; the histograms are `hist`'s merge; the labels the header's.

use crate::common::{self, *};
use serde_json::Value;
use std::path::Path;

fn summary_json(logs: &[&Path], extra: &[&str]) -> (Value, Vec<u8>) {
    let mut args = vec!["summary", "--format", "json"];
    args.extend(logs.iter().map(|l| l.to_str().unwrap()));
    args.extend_from_slice(extra);
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&out)));
    (json, out.stdout)
}

#[test]
fn two_reads_give_the_same_bytes_and_the_numbers_are_stats_and_latencys() {
    let d = common::dir("summary-stable");
    let log = d.join("program.evt");
    meanings_log(&log);
    let (json, first) = summary_json(&[&log], &[]);
    let (_, second) = summary_json(&[&log], &[]);
    assert_eq!(first, second, "two reads of one log");
    assert_eq!(json["summary_version"], "1.3.0");
    assert_eq!(
        (json["suppressed"].as_array().map(Vec::len), json["histograms"].as_array().map(Vec::len)),
        (Some(0), Some(0))
    );
    let l = &json["logs"][0];
    assert_eq!(l["program"].as_str(), Some(std::env::current_exe().unwrap().file_stem().unwrap().to_str().unwrap()));
    assert_eq!(l["pid"].as_u64(), Some(u64::from(std::process::id())));
    assert_eq!(l["ending"], "stopped");
    assert!(l["labels"].as_object().is_some_and(|m| m.is_empty()));
    // Counts per event: stats's.
    let stats = stdout(&run(&["stats", log.to_str().unwrap()]));
    let per_event = json["per_event"].as_object().unwrap();
    assert!(!per_event.is_empty());
    for (name, n) in per_event {
        let line = stats.lines().find(|l| l.split_whitespace().next() == Some(name.as_str()));
        let line = line.unwrap_or_else(|| panic!("{name} not in stats: {stats}"));
        assert_eq!(line.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()), n.as_u64(), "{line}");
    }
    let events: u64 = per_event.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(json["events"].as_u64(), Some(events));
    assert_eq!(json["findings"]["events"].as_u64(), Some(events));
    assert!(json["findings"]["whole"].as_bool().unwrap(), "{}", json["findings"]);
    // Spans: latency's numbers, at latency's percentiles.
    let out = run(&["latency", log.to_str().unwrap(), "--format", "json"]);
    let latency: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (json, _) = summary_json(&[&log], &["--percentiles", "50,90,99"]);
    let spans = json["spans"].as_array().unwrap();
    assert_eq!(spans.len(), 2);
    for (s, l) in spans.iter().zip(latency["spans"].as_array().unwrap()) {
        for key in
            ["span", "count", "unended", "unmatched_ends", "min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns", "total_ns"]
        {
            assert_eq!(s[key], l[key], "{key} of {s}");
        }
    }
    // The text says the same.
    let text = stdout(&run(&["summary", log.to_str().unwrap()]));
    assert!(text.contains(&format!("{events} events\n")), "{text}");
}

/// Losses and damage are the ledger's: the line `stats` writes, and its counts under their
/// names in the JSON.
#[test]
fn losses_are_the_ledgers() {
    let d = common::dir("summary-losses");
    let whole = d.join("dropping.evt");
    dropping_log(&whole);
    let log = d.join("damaged.evt");
    // A block of the recording thread's events, not the recorder's report of its losses
    // (where the writer put that among them depends on its timing).
    let bytes = std::fs::read(&whole).unwrap();
    let block = event_format::decode::Decoder::new(&bytes[..])
        .unwrap()
        .position(|b| b.unwrap().header.thread == 1)
        .expect("a block of thread 1");
    damaged_copy(&whole, &log, block);
    let stats = stdout(&run(&["stats", log.to_str().unwrap()]));
    let losses = stats.lines().find(|l| l.contains(" events lost, ")).unwrap().trim().to_owned();
    let text = stdout(&run(&["summary", log.to_str().unwrap()]));
    assert!(text.contains(&format!("  {losses} (NOT whole)")), "{losses}\n{text}");
    let (json, _) = summary_json(&[&log], &[]);
    let f = &json["logs"][0]["findings"];
    assert_eq!(f["whole"], false);
    assert_eq!(f["damaged_blocks"], 1);
    let lost = losses.split_whitespace().next().unwrap().parse::<u64>().unwrap();
    assert!(lost > 0);
    assert_eq!(f["lost"].as_u64(), Some(lost));
    let by_thread: u64 = f["lost_by_thread"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(by_thread, lost);
    // Two logs: each one's findings, and their sum.
    let (two, _) = summary_json(&[&whole, &log], &[]);
    let sum = |key: &str| {
        two["logs"][0]["findings"][key].as_u64().unwrap() + two["logs"][1]["findings"][key].as_u64().unwrap()
    };
    for key in ["lost", "damaged_blocks", "events", "blocks"] {
        assert_eq!(two["findings"][key].as_u64(), Some(sum(key)), "{key}");
    }
}

/// What limits suppressed (the ledger's count of the `Suppressed` records: per log, event and
/// thread, and in all), the histograms the recorder kept (merged over threads and logs as
/// `hist` merges them) and the header's labels and service; none of it a loss.
#[test]
fn suppressions_histograms_and_labels_are_the_logs() {
    let d = common::dir("summary-aggregates");
    let (a, b) = (d.join("a.evt"), d.join("b.evt"));
    histogram_log(&a, &[("service", "api"), ("version", "1.4.2")], &[(1, 1, 90), (2, 1, 10), (1, 1, 5)]);
    histogram_log(&b, &[], &[(3, 1, 7)]);
    let (json, first) = summary_json(&[&a], &[]);
    let (_, second) = summary_json(&[&a], &[]);
    assert_eq!(first, second, "two reads of one log");
    let l = &json["logs"][0];
    assert_eq!(l["labels"], serde_json::json!({"service": "api", "version": "1.4.2"}));
    assert_eq!((l["service"].as_str(), l["host"].as_str()), (Some("api"), Some("handmade-host")));
    assert_eq!(
        l["suppressed"],
        serde_json::json!([{"event": "K.Size", "count": 105, "by_thread": {"1": 95, "2": 10}}])
    );
    assert_eq!(json["suppressed"], serde_json::json!([{"event": "K.Size", "count": 105}]));
    assert!(json["findings"]["whole"].as_bool().unwrap() && json["findings"]["lost"] == 0, "not a loss");
    // The histograms are `hist`'s, key for key.
    let hist = |logs: &[&Path]| -> Value {
        let mut args = vec!["hist", "--format", "json"];
        args.extend(logs.iter().map(|l| l.to_str().unwrap()));
        let out = run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["histograms"].clone()
    };
    assert_eq!(json["histograms"], hist(&[&a]));
    let sizes = json["histograms"].as_array().unwrap().iter().find(|h| h["name"] == "sizes").unwrap();
    assert_eq!(
        (sizes["count"].as_u64(), sizes["threads"].as_u64(), sizes["max"].as_u64()),
        (Some(6), Some(2), Some(100))
    );

    // Two logs: each one's suppressions and labels; the sums, and the histograms merged.
    let (two, _) = summary_json(&[&a, &b], &[]);
    assert_eq!(two["logs"][1]["labels"], serde_json::json!({}));
    assert_eq!(two["logs"][1]["service"], "handmade", "without a service label, the program");
    assert_eq!(
        two["logs"][1]["suppressed"],
        serde_json::json!([{"event": "K.Size", "count": 7, "by_thread": {"3": 7}}])
    );
    assert_eq!(two["suppressed"], serde_json::json!([{"event": "K.Size", "count": 112}]));
    assert_eq!(two["histograms"], hist(&[&a, &b]));
    let sizes = two["histograms"].as_array().unwrap().iter().find(|h| h["name"] == "sizes").unwrap();
    assert_eq!(sizes["count"].as_u64(), Some(12));

    // The text says the same, in the ledger's words and `hist`'s lines, and names the log
    // by its service and host.
    let text = stdout(&run(&["summary", a.to_str().unwrap()]));
    assert!(text.contains(": api on handmade-host (pid 4242, program handmade), format "), "{text}");
    assert!(text.contains("\n  suppressed by its limit: K.Size, 105 events (T1 95, T2 10)\n"), "{text}");
    assert!(text.contains("sizes (Size.size, HDR2 buckets): 6 values, 2 records, 2 threads"), "{text}");
}
