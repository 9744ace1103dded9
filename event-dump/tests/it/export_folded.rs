//! `export --to folded`: nested spans as folded stacks. The total weights of the lines that
//! end in a span equal `latency`'s `total_ns` of it; the self weights are the totals less
//! the spans each encloses; per thread, the same stacks under thread frames; inferno's
//! flame graph (the library behind `inferno-flamegraph`) draws the file and names the spans.

use crate::common::{self, *};
use std::collections::BTreeMap;
use std::path::Path;

/// `export --to folded` of `log` to stdout with `extra` options: (stack, weight) per line.
fn folded(log: &Path, extra: &[&str]) -> Vec<(String, u128)> {
    let mut args = vec!["export", "--to", "folded", log.to_str().unwrap(), "-o", "-"];
    args.extend_from_slice(extra);
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| {
            let (stack, weight) = l.rsplit_once(' ').unwrap_or_else(|| panic!("no weight: {l}"));
            (stack.to_owned(), weight.parse().unwrap_or_else(|_| panic!("weight: {l}")))
        })
        .collect()
}

/// The sum of the weights of the lines whose last frame is each span's name.
fn by_last_frame(lines: &[(String, u128)]) -> BTreeMap<String, u128> {
    let mut sums = BTreeMap::new();
    for (stack, w) in lines {
        *sums.entry(stack.rsplit(';').next().unwrap().to_owned()).or_default() += w;
    }
    sums
}

#[test]
fn totals_equal_latencys_and_self_is_total_less_what_a_span_encloses() {
    let d = common::dir("folded-totals");
    let log = d.join("program.evt");
    meanings_log(&log);
    let total = folded(&log, &["--weight", "total"]);
    let out = run(&["latency", log.to_str().unwrap(), "--format", "json"]);
    let latency: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let want: BTreeMap<String, u128> = latency["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["span"].as_str().unwrap().to_owned(), u128::from(s["total_ns"].as_u64().unwrap())))
        .collect();
    assert_eq!(want.len(), 2, "{latency}");
    assert_eq!(by_last_frame(&total), want);
    // Sweeps nest on their thread (outer;inner); segments are async: stacks of their own.
    let stacks: Vec<&str> = total.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(stacks, ["Segment", "Sweep", "Sweep;Sweep"]);
    // Self time: each stack's total less the totals of the stacks one frame deeper.
    let own: BTreeMap<String, u128> = folded(&log, &[]).into_iter().collect();
    let total: BTreeMap<String, u128> = total.into_iter().collect();
    for (stack, t) in &total {
        let inner: u128 = total
            .iter()
            .filter(|(s, _)| {
                s.strip_prefix(stack.as_str()).is_some_and(|r| r.starts_with(';') && r[1..].find(';').is_none())
            })
            .map(|(_, w)| w)
            .sum();
        assert!(inner < *t, "{stack}");
        assert_eq!(own.get(stack).copied().unwrap_or(0), t - inner, "{stack}");
    }
    // What had no time is said, through the export's one line.
    let out = run(&["export", "--to", "folded", log.to_str().unwrap(), "-o", "-"]);
    let err = stderr(&out);
    assert!(err.contains("spans never ended (no time given)") && err.contains("ends closed no span"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn per_thread_stacks_sum_to_the_merged_ones() {
    let d = common::dir("folded-threads");
    let log = d.join("program.evt");
    program_log(&log, false);
    let merged = folded(&log, &[]);
    let threads = folded(&log, &["--per-thread"]);
    let mut summed: BTreeMap<String, u128> = BTreeMap::new();
    for (stack, w) in &threads {
        let (thread, rest) = stack.split_once(';').unwrap();
        assert!(thread.starts_with('T'), "{stack}");
        *summed.entry(rest.to_owned()).or_default() += w;
    }
    assert_eq!(summed, merged.into_iter().collect());
    // Sweeps run on the workers, named as stats names them.
    assert!(threads.iter().any(|(s, _)| s.contains(" (worker-2);Sweep;Sweep")), "{threads:?}");
    // A file, written whole; and the selection: the spans begun on one thread.
    let file = d.join("program.folded");
    let out =
        run(&["export", "--to", "folded", log.to_str().unwrap(), "-o", file.to_str().unwrap(), "--thread", "worker-1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&file).unwrap();
    let want: Vec<String> = threads
        .iter()
        .filter(|(s, _)| s.contains("(worker-1);"))
        .map(|(s, w)| format!("{} {w}", s.split_once(';').unwrap().1))
        .collect();
    assert_eq!(text.lines().collect::<Vec<_>>(), want);
    let out = run(&["export", "--to", "chrome", log.to_str().unwrap(), "-o", file.to_str().unwrap(), "--per-thread"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("are for --to folded"), "{}", stderr(&out));
}

/// inferno's flame graph draws the folded file: an SVG that names the spans.
#[test]
fn inferno_draws_it() {
    let d = common::dir("folded-inferno");
    let log = d.join("program.evt");
    program_log(&log, false);
    let file = d.join("program.folded");
    let out = run(&["export", "--to", "folded", log.to_str().unwrap(), "-o", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut options = inferno::flamegraph::Options::default();
    let mut svg = Vec::new();
    inferno::flamegraph::from_files(&mut options, &[file], &mut svg).unwrap();
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.starts_with("<?xml") && svg.contains("<svg"), "{}", &svg[..svg.len().min(200)]);
    for span in ["Sweep", "Segment"] {
        assert!(svg.contains(&format!("<title>{span} (")), "{span} not in the flame graph");
    }
}

/// The `tracing` bridge's spans (`SpanEnter`/`SpanExit`, named by their `name`) nest as
/// declared spans do: `outer` around `inner` on one thread; `a` and `b` overlapping on
/// another, where `a`'s exit cuts `b` (never ended: no time) and `b`'s exit closes nothing.
#[test]
fn the_tracing_bridges_spans_fold_too() {
    let d = common::dir("folded-tracing");
    let log = d.join("handmade.evt");
    handmade_log(&log, event_format::wire::Order::Little);
    let total = folded(&log, &["--weight", "total"]);
    let stacks: Vec<&str> = total.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(stacks, ["a", "outer", "outer;inner"]);
    let out = run(&["latency", log.to_str().unwrap(), "--format", "json"]);
    let latency: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for s in latency["spans"].as_array().unwrap().iter().filter(|s| s["count"] != 0) {
        let name = s["span"].as_str().unwrap();
        assert_eq!(by_last_frame(&total).get(name).copied(), s["total_ns"].as_u64().map(u128::from), "{name}");
    }
    let own: BTreeMap<String, u128> = folded(&log, &[]).into_iter().collect();
    let total: BTreeMap<String, u128> = total.into_iter().collect();
    assert_eq!(own["outer"], total["outer"] - total["outer;inner"]);
    let out = run(&["export", "--to", "folded", log.to_str().unwrap(), "-o", "-"]);
    let err = stderr(&out);
    assert!(err.contains("1 spans never ended") && err.contains("2 ends closed no span"), "{err}");
    assert!(err.contains("1 record of an unknown code"), "the ledger's findings: {err}");
}

/// Several logs' thread frames name who wrote each log as `print` and `latency` do
/// (`host/service:T1`), not its pid: two recordings of one process (one pid) on two hosts
/// are two stacks.
#[test]
fn several_logs_frames_name_the_host_and_service() {
    let d = common::dir("folded-hosts");
    let record = |name: &str, host: &str| {
        let log = d.join(name);
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let recording = event_runtime::Recorder::new()
            .file(&log)
            .host(host)
            .label("service", "api")
            .deterministic_clock()
            .start()
            .unwrap();
        event!(SweepBegin, 0x1000usize, 1u64, "outer");
        event!(ObjectAlloc, 0x1000usize, 0x2000usize, 16u64, 1u32);
        event!(SweepEnd, 0x1000usize, 1u64, true);
        recording.stop().unwrap();
        log
    };
    let (a, b) = (record("a.evt", "host-a"), record("b.evt", "host-b"));
    let out = run(&["export", "--to", "folded", a.to_str().unwrap(), b.to_str().unwrap(), "-o", "-", "--per-thread"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let frames: Vec<&str> = text.lines().map(|l| l.split(':').next().unwrap()).collect();
    assert_eq!(frames, ["host-a/api", "host-b/api"], "{text}");
    assert!(!text.contains(&format!("{}:", std::process::id())), "{text}");
}
