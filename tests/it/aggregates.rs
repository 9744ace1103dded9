//! Limits and histograms the recorder keeps (tests/aggregates.def; docs/guide/aggregates.md),
//! by real child processes (`aggregate-child`), read back with event-format and `event-dump`:
//! a limited event keeps about its rate and the `Suppressed` records count the rest exactly;
//! `EVENT_LIMIT` overrides events.def; a declared histogram survives the disk budget, each
//! remaining segment holding exactly what the child measured in its period; the recorder's
//! span durations are `latency`'s.

use crate::common::{DUMP, Scratch, program};
use event_format::builtin;
use event_format::builtins::BuiltinEvent;
use event_format::decode::{Catalog, Decoder, Entry};
use event_format::histogram::{Distribution, Histograms};
use event_format::ledger::Ledger;
use event_format::schema::Buckets;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const CHILD: &str = env!("CARGO_BIN_EXE_aggregate-child");

fn dir(name: &str) -> Scratch {
    crate::common::dir("aggregates", name)
}

fn run(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = program(CHILD, args, env).output().unwrap();
    assert!(out.status.success(), "aggregate-child {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn dump(args: &[&str]) -> (bool, String) {
    let out = Command::new(DUMP).args(args).env("NO_COLOR", "1").output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What one stream holds of the limited events: per wire code and thread, the events kept
/// and their first and last times (seconds), and what `Suppressed` records count.
#[derive(Default, Debug)]
struct Limited {
    /// (code, thread) -> (kept, first s, last s)
    kept: BTreeMap<(u16, u64), (u64, f64, f64)>,
    /// (code, thread) -> suppressed
    suppressed: BTreeMap<(u16, u64), u64>,
    ledger_suppressed: BTreeMap<u16, u64>,
    lost: u64,
    names: BTreeMap<String, u16>,
}

fn read_limited(path: &Path) -> Limited {
    let bytes = if path.extension().is_some_and(|e| e == "ring") {
        event_tests::read_ring(path).unwrap().0
    } else {
        std::fs::read(path).unwrap()
    };
    let mut decoder = Decoder::new(&bytes[..]).unwrap();
    let header = decoder.header().clone();
    let catalog = Catalog::new(&header.sets);
    let mut ledger = Ledger::new(header.format);
    let mut l = Limited::default();
    for desc in catalog.iter() {
        l.names.insert(desc.name.clone(), desc.wire);
    }
    while let Some(block) = decoder.next_block() {
        let block = block.unwrap();
        ledger.block(&block);
        for entry in block.entries(&catalog) {
            ledger.entry(block.header.thread, block.header.sequence, &entry);
            let Entry::Event(e) = entry else { continue };
            if e.desc.is_builtin() && e.desc.code == builtin::SUPPRESSED {
                let Some(BuiltinEvent::Suppressed { thread, code, count, .. }) = BuiltinEvent::of(&e) else {
                    panic!("a Suppressed that does not read as one: {:?}", e.values().collect::<Vec<_>>())
                };
                *l.suppressed.entry((code as u16, thread)).or_default() += count;
            } else if !e.desc.is_builtin() {
                let s = header.clock.seconds_since_start(e.time);
                let k = l.kept.entry((e.desc.wire, e.thread)).or_insert((0, s, s));
                k.0 += 1;
                k.2 = s;
            }
        }
    }
    l.ledger_suppressed = ledger.suppressed_by_code();
    l.lost = ledger.lost();
    l
}

/// A child whose event is limited to 100/s by events.def records 10 000 of it in 2 s: the
/// log holds about 200 of them (at most one a period's share of the time they span, and the
/// first), and `Suppressed` records count the rest exactly: kept + suppressed = emitted.
/// `check` says so as a note (the log is whole), `stats` as a line; nothing is lost.
#[test]
fn a_limited_event_keeps_its_rate_and_counts_the_rest_exactly() {
    let d = dir("rate");
    let path = d.join("limited.evt");
    let out = run(&["limit", "Seq", "10000", "2", "1"], &[("EVENT_FILE", path.to_str().unwrap())]);
    assert_eq!(out.trim(), "emitted 10000");
    let l = read_limited(&path);
    let seq = l.names["Seq"];
    let (kept, first, last) = l.kept[&(seq, 1)];
    let suppressed: u64 = l.suppressed.iter().filter(|((c, _), _)| *c == seq).map(|(_, n)| n).sum();
    assert_eq!(kept + suppressed, 10_000, "kept {kept} + suppressed {suppressed}");
    // A token bucket of 100 a second that starts with one: over the time the kept events
    // span, at most one more than 100 a second, and about 200 over 2 s.
    let bound = 1.0 + 100.0 * (last - first) + 1.0;
    assert!((kept as f64) <= bound, "{kept} kept over {:.3} s", last - first);
    assert!((150..=205).contains(&kept), "{kept} kept");
    assert_eq!(l.ledger_suppressed.get(&seq), Some(&suppressed));
    assert_eq!(l.lost, 0);

    let log = path.to_str().unwrap();
    let (whole, check) = dump(&["check", log]);
    assert!(whole, "{check}");
    assert!(
        check.contains(&format!("suppressed by its limit: Test.Seq, {suppressed} events (T1 {suppressed})")),
        "{check}"
    );
    let (_, stats) = dump(&["stats", log]);
    assert!(stats.contains("0 events lost"), "{stats}");
    assert!(stats.contains(&format!("suppressed by its limit: Test.Seq, {suppressed} events")), "{stats}");
    let (_, printed) = dump(&["print", log, "--event", "Suppressed"]);
    assert!(printed.lines().count() > 1 && printed.contains("Builtin.Suppressed thread=1"), "{printed}");
}

/// `EVENT_LIMIT` overrides events.def: `Seq`'s limit off, `Sample` one of every 100; each
/// of two threads keeps exactly its own hundredth, and the rest is counted per thread.
#[test]
fn event_limit_overrides_events_def_per_thread() {
    let d = dir("env");
    let path = d.join("sampled.evt");
    let env = [("EVENT_FILE", path.to_str().unwrap()), ("EVENT_LIMIT", "Test:Seq=off;Test:Sample=1/100")];
    let out = run(&["limit", "Sample", "5000", "1", "2"], &env);
    assert_eq!(out.trim(), "emitted 10000");
    let l = read_limited(&path);
    let sample = l.names["Sample"];
    let threads: Vec<u64> = l.kept.keys().filter(|(c, _)| *c == sample).map(|(_, t)| *t).collect();
    assert_eq!(threads.len(), 2, "{l:?}");
    for t in threads {
        assert_eq!(l.kept[&(sample, t)].0, 50, "thread {t}");
        assert_eq!(l.suppressed[&(sample, t)], 4950, "thread {t}");
    }
    let out = run(&["limit", "Seq", "300", "1", "1"], &env);
    assert_eq!(out.trim(), "emitted 300");
    let l = read_limited(&path);
    assert_eq!(l.kept[&(l.names["Seq"], 1)].0, 300, "Seq's limit is off");
    assert!(l.suppressed.is_empty());

    // A bad EVENT_LIMIT is one line and no recording.
    let bad = program(
        CHILD,
        &["limit", "Seq", "1", "1", "1"],
        &[("EVENT_FILE", path.to_str().unwrap()), ("EVENT_LIMIT", "Test:Seq=100/parsec")],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(
        stderr.contains("EVENT_LIMIT=\"Test:Seq=100/parsec\"") && stderr.contains("unknown unit `parsec`"),
        "{stderr}"
    );
}

/// Each segment's histograms in directory `dir`, by segment index: `sizes` merged over its
/// threads, and `work_ns`'s count and shortest; with the files read, and the `Size` events
/// the segments hold.
/// A segment's histograms: `sizes`, and `work_ns`'s count and shortest.
type SegmentHistograms = (Distribution, u64, Option<u64>);

fn segment_histograms(dir: &Path) -> (BTreeMap<u64, SegmentHistograms>, Vec<std::path::PathBuf>) {
    let mut remaining = BTreeMap::new();
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let mut decoder = Decoder::new(&bytes[..]).unwrap();
        let header = decoder.header().clone();
        let index = header.properties.segment.unwrap().index;
        let catalog = Catalog::new(&header.sets);
        let mut histograms = Histograms::new();
        histograms.add_log(0, &header);
        while let Some(block) = decoder.next_block() {
            for entry in block.unwrap().entries(&catalog) {
                if let Entry::Event(e) = entry {
                    histograms.take(0, &e);
                }
            }
        }
        assert!(histograms.unreadable().is_empty(), "{:?}", histograms.unreadable());
        let (_, sizes) = histograms.iter().find(|(k, _)| k.name == "sizes").unwrap();
        let (_, work) = histograms.iter().find(|(k, _)| k.name == "work_ns").unwrap();
        remaining.insert(index, (sizes.total.clone(), work.total.count(), work.total.min()));
    }
    (remaining, files)
}

/// The child's own measure of one period: `segment INDEX COUNT SUM MIN MAX BUCKETS`.
fn measured(out: &str) -> BTreeMap<u64, Distribution> {
    out.lines()
        .filter_map(|line| line.strip_prefix("segment "))
        .map(|rest| {
            let mut w = rest.splitn(6, ' ');
            let mut n = || w.next().unwrap().parse::<u64>().unwrap();
            let (index, count, sum, min, max) = (n(), n(), n(), n(), n());
            let text = rest.splitn(6, ' ').nth(5).unwrap_or("");
            (index, Distribution::parse(Buckets { precision: 3 }, count, sum, min, max, text).unwrap())
        })
        .collect()
}

/// A declared histogram after the disk budget deleted most segments: each remaining
/// segment's `Histogram` records, merged over its threads, are exactly the distribution the
/// child measured itself of the values it recorded in that segment's period; `hist` over the
/// directory shows their sum, and `check` says the budget removed segments (no problem).
#[test]
fn histograms_survive_the_budget_segment_by_segment() {
    let d = dir("budget");
    let base = d.join("h.evt");
    let env = [("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1h"), ("EVENT_KEEP", "2")];
    let out = run(&["hist", "6", "2000"], &env);
    let mine = measured(&out);
    assert_eq!(mine.len(), 6, "{out}");
    let (remaining, files) = segment_histograms(&d);
    // The budget kept the two last sealed segments and the one written last (empty).
    let indexes: Vec<u64> = remaining.keys().copied().collect();
    assert_eq!(indexes, [5, 6, 7], "{files:?}");
    let mut all = Distribution::new(Buckets { precision: 3 });
    for (index, (sizes, spans, shortest)) in &remaining {
        match mine.get(index) {
            Some(want) => {
                assert_eq!(sizes, want, "segment {index}'s histogram is what the child measured");
                assert_eq!(*spans, 2, "segment {index}: each thread's `work` span");
                // Each span slept 2 ms before it ended.
                assert!(shortest.unwrap() >= 2_000_000, "{shortest:?}");
                all.merge(want).unwrap();
            }
            None => assert_eq!((sizes.count(), *spans), (0, 0), "segment {index} had no period of values"),
        }
    }
    let dir_arg = d.to_str().unwrap();
    let (whole, check) = dump(&["check", dir_arg]);
    assert!(whole && check.contains("removed by the disk budget: segments 0..4"), "{check}");
    let (ok, hist) = dump(&["hist", dir_arg, "--format", "json", "--name", "sizes"]);
    assert!(ok, "{hist}");
    let json: serde_json::Value = serde_json::from_str(&hist).unwrap();
    let sizes = &json["histograms"][0];
    assert_eq!(
        (sizes["name"].as_str(), sizes["count"].as_u64(), sizes["sum"].as_u64(), sizes["min"].as_u64()),
        (Some("sizes"), Some(all.count()), Some(all.sum()), all.min())
    );
    let buckets: u64 = sizes["histogram"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(buckets, all.count());
}

/// The recorder's span histograms are `latency`'s durations bucketed, for a span of one
/// thread (`work`) and an async one paired by its id across threads (`job`): the same count,
/// the same buckets (both from the records' times), and a minimum and maximum within a
/// nanosecond (each rounds ticks to nanoseconds its own way).
#[test]
fn a_span_histogram_is_latencys_durations() {
    let d = dir("spans");
    let base = d.join("s.evt");
    run(&["hist", "3", "10"], &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1h")]);
    let dir_arg = d.to_str().unwrap();
    let (ok, latency) = dump(&["latency", dir_arg, "--format", "json"]);
    assert!(ok, "{latency}");
    let json: serde_json::Value = serde_json::from_str(&latency).unwrap();
    for (span_name, kept_name, count) in [("work", "work_ns", 6), ("job", "job_ns", 3)] {
        let span = json["spans"].as_array().unwrap().iter().find(|s| s["span"] == span_name).unwrap();
        let kept = json["histograms"].as_array().unwrap().iter().find(|h| h["name"] == kept_name).unwrap();
        assert_eq!(span["count"], kept["count"], "{span_name}");
        assert_eq!(span["count"].as_u64(), Some(count), "{span_name}");
        let close =
            |a: &serde_json::Value, b: &serde_json::Value| a.as_u64().unwrap().abs_diff(b.as_u64().unwrap()) <= 1;
        assert!(close(&span["min_ns"], &kept["min"]) && close(&span["max_ns"], &kept["max"]), "{span} {kept}");
        let buckets = |h: &serde_json::Value, from: &str| -> Vec<(u64, u64)> {
            h["histogram"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["count"].as_u64() != Some(0))
                .map(|b| (b[from].as_u64().unwrap(), b["count"].as_u64().unwrap()))
                .collect()
        };
        assert_eq!(buckets(span, "from_ns"), buckets(kept, "from"), "{span_name}");
    }
}

/// `event-dump control RING --limit` changes a running program's limits: the program says
/// them back, and from then on the event keeps one of every ten; kept + suppressed = emitted
/// still holds over the whole run.
#[test]
fn control_changes_a_running_programs_limits() {
    let d = dir("control");
    let (ring, file) = (d.join("hold.ring"), d.join("hold.evt"));
    let env = [("EVENT_RING", ring.to_str().unwrap()), ("EVENT_FILE", file.to_str().unwrap())];
    let mut child = crate::common::start_ready(program(CHILD, &["hold"], &env));
    std::thread::sleep(std::time::Duration::from_millis(200));
    let ring_arg = ring.to_str().unwrap();
    let (ok, said) = dump(&["control", ring_arg, "--limit", "Test:Plain=1/10"]);
    // events.def's limit of `Seq` stays, beside the new one.
    assert!(ok && said.starts_with("limits: Test:Seq=100/s;Test:Plain=1/10 ("), "{said}");
    let (ok, said) = dump(&["control", ring_arg, "--limit", ""]);
    assert!(ok && said.starts_with("limits: Test:Seq=100/s;Test:Plain=1/10 ("), "{said}");
    let out = Command::new(DUMP).args(["control", ring_arg, "--limit", "Test:Plain=1/parsec"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown unit `parsec`"));
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let emitted: u64 = String::from_utf8_lossy(&out.stdout).trim().strip_prefix("emitted ").unwrap().parse().unwrap();
    let l = read_limited(&file);
    let plain = l.names["Plain"];
    let (kept, _, _) = l.kept[&(plain, 1)];
    let suppressed = l.suppressed[&(plain, 1)];
    assert_eq!(kept + suppressed, emitted);
    assert!(suppressed > 0 && kept > suppressed / 10, "kept {kept}, suppressed {suppressed}");
}

/// Under `ring` (the sinks get the rings at the stop) and `fill`, the counts are as exact:
/// the threads' own `Suppressed` records are in their rings, and the stop writes the rest; a
/// histogram's values are all there once, whether the writer thread's ring holds a period's
/// records or the stop wrote them.
#[test]
fn every_policy_counts_suppressions_and_histograms_once() {
    for policy in ["ring", "fill", "switch"] {
        let d = dir(&format!("policy-{policy}"));
        let path = d.join("p.evt");
        let env = [("EVENT_FILE", path.to_str().unwrap()), ("EVENT_POLICY", policy)];
        let out = run(&["limit", "Seq", "3000", "1", "2"], &env);
        assert_eq!(out.trim(), "emitted 6000");
        let l = read_limited(&path);
        let seq = l.names["Seq"];
        let kept: u64 = l.kept.iter().filter(|((c, _), _)| *c == seq).map(|(_, k)| k.0).sum();
        let suppressed: u64 = l.suppressed.iter().filter(|((c, _), _)| *c == seq).map(|(_, n)| n).sum();
        assert_eq!(kept + suppressed, 6000, "{policy}: kept {kept} + suppressed {suppressed}");
        assert_eq!(l.lost, 0, "{policy}");
    }
    // A ring file alone, under `ring`: the stopping thread writes what is left into its slot.
    let d = dir("policy-ring-file");
    let path = d.join("p.ring");
    let out =
        run(&["limit", "Seq", "3000", "1", "2"], &[("EVENT_RING", path.to_str().unwrap()), ("EVENT_POLICY", "ring")]);
    assert_eq!(out.trim(), "emitted 6000");
    let l = read_limited(&path);
    let seq = l.names["Seq"];
    let kept: u64 = l.kept.iter().filter(|((c, _), _)| *c == seq).map(|(_, k)| k.0).sum();
    let suppressed: u64 = l.suppressed.iter().filter(|((c, _), _)| *c == seq).map(|(_, n)| n).sum();
    assert_eq!((kept + suppressed, l.lost), (6000, 0), "the ring file: kept {kept} + suppressed {suppressed}");
}

/// A histogram counts every value of its event, those its limit did not keep too (their
/// arguments measured, no record written): with `Size` limited to one of every ten, each
/// segment's histogram is still everything the child recorded in its period, while the
/// segments hold a tenth of the events and `Suppressed` records count the rest.
#[test]
fn a_histogram_counts_what_a_limit_suppresses() {
    let d = dir("limited-hist");
    let base = d.join("h.evt");
    let env = [("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1h"), ("EVENT_LIMIT", "Test:Size=1/10")];
    let out = run(&["hist", "2", "500"], &env);
    let mine = measured(&out);
    let (remaining, files) = segment_histograms(&d);
    for (index, want) in &mine {
        assert_eq!(&remaining[index].0, want, "segment {index}");
    }
    let (mut kept, mut suppressed) = (0, 0);
    for path in &files {
        let l = read_limited(path);
        let size = l.names["Size"];
        kept += l.kept.iter().filter(|((c, _), _)| *c == size).map(|(_, k)| k.0).sum::<u64>();
        suppressed += l.suppressed.iter().filter(|((c, _), _)| *c == size).map(|(_, n)| n).sum::<u64>();
    }
    assert_eq!((kept, suppressed), (200, 1800), "4 threads' 500 each, one of every ten kept");
}
