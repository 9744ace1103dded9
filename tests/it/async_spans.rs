//! The `tracing` bridge's spans in a real tokio program (`tokio-spans`: a multi-thread
//! runtime, nested and concurrent instrumented futures that move between workers): one
//! `SpanOpen` and one `SpanClose` per span, with the right parents; `event-dump latency`
//! gives each span the duration the program measured itself; every event recorded inside a
//! span, `tracing`'s and `event!`'s, is named by it (the `SpanCurrent` before it on its
//! thread).

use crate::common::{DUMP, program};
use event_format::builtin;
use event_format::decode::{Catalog, Decoder, Entry};
use event_format::wire::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::Command;

const CHILD: &str = env!("CARGO_BIN_EXE_tokio-spans");

/// A span of the log: its name, task, parent, the threads that opened and closed it.
#[derive(Debug, Default)]
struct Span {
    id: u64,
    name: String,
    task: u64,
    parent: u64,
    opened_on: u64,
    closes: Vec<u64>,
    /// The threads of the events recorded inside it.
    event_threads: BTreeSet<u64>,
    /// The texts of the `tracing` events inside it, and how many `event!`s.
    texts: Vec<String>,
    event_macros: u64,
}

#[test]
fn a_tokio_programs_spans_are_opened_and_closed_once_timed_and_name_their_events() {
    let dir = crate::common::dir("async-spans", "tokio");
    let log = dir.join("tokio.evt");
    let out = program(CHILD, &[&log.to_string_lossy()], &[]).output().unwrap();
    assert!(out.status.success(), "tokio-spans: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    // (name, task) -> the program's own bracket of the span's duration, in ns.
    let measured: BTreeMap<(String, u64), (u128, u128)> = stdout
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.strip_prefix("span ")?.split(' ').collect();
            Some(((w[0].to_owned(), w[1].parse().ok()?), (w[2].parse().ok()?, w[3].parse().ok()?)))
        })
        .collect();
    let rounds: usize = stdout.lines().find_map(|l| l.strip_prefix("rounds ")?.parse().ok()).expect("rounds N");
    let n = 32 * rounds;
    assert_eq!(measured.len(), n, "16 requests and their queries a round: {stdout}");

    // The stream: the spans by id, opens and closes counted, events by the span they name.
    let stream = std::fs::read(&log).unwrap();
    let mut decoder = Decoder::new(&stream[..]).unwrap();
    let catalog = Catalog::new(&decoder.header().sets);
    let mut records = Vec::new();
    while let Some(block) = decoder.next_block() {
        for entry in block.unwrap().entries(&catalog) {
            let Entry::Event(e) = entry else { panic!("{entry:?}") };
            let values: Vec<Value<'_>> = e.values().collect();
            let owned: Vec<String> = values
                .iter()
                .map(|v| match v {
                    Value::Str(t) => String::from_utf8_lossy(t.bytes).into_owned(),
                    Value::Word(w) => w.to_string(),
                    other => format!("{other:?}"),
                })
                .collect();
            records.push((e.time, e.thread, e.desc.code, e.desc.is_builtin(), owned));
        }
    }
    // The threads merged by time, as a reader walks them (each thread's in its order).
    records.sort_by_key(|r| r.0);
    // The spans in the order they opened; tracing may reuse a closed span's id, so each id
    // names its latest open span.
    let mut spans: Vec<Span> = Vec::new();
    let mut by_id: HashMap<u64, usize> = HashMap::new();
    let mut current: HashMap<u64, u64> = HashMap::new();
    let word = |s: &String| s.parse::<u64>().unwrap();
    for (_, thread, code, is_builtin, values) in &records {
        let in_span = current.get(thread).copied().unwrap_or(0);
        match (is_builtin, *code) {
            (true, builtin::SPAN_CURRENT) => {
                current.insert(*thread, word(&values[0]));
            }
            (true, builtin::SPAN_OPEN) => {
                let id = word(&values[0]);
                let task = values[3].strip_prefix("task=").unwrap().parse().unwrap();
                let parent = word(&values[1]);
                let span = Span { id, name: values[2].clone(), task, parent, opened_on: *thread, ..Span::default() };
                by_id.insert(id, spans.len());
                spans.push(span);
            }
            (true, builtin::SPAN_CLOSE) => {
                let at = by_id.remove(&word(&values[0])).expect("closes an open span");
                spans[at].closes.push(*thread);
            }
            (true, builtin::TRACE_EVENT) | (false, _) => {
                let at = by_id.get(&in_span).copied();
                let span = &mut spans[at.unwrap_or_else(|| panic!("an event outside any open span: {values:?}"))];
                span.event_threads.insert(*thread);
                if *is_builtin {
                    span.texts.push(values[2].clone());
                } else {
                    span.event_macros += 1;
                }
            }
            _ => {}
        }
    }
    assert_eq!(spans.len(), n, "one open per span");
    let mut moved = 0;
    for span in &spans {
        assert_eq!(span.closes.len(), 1, "one close per span: {span:?}");
        match span.name.as_str() {
            "request" => assert_eq!(span.parent, 0, "{span:?}"),
            "query" => {
                // Its parent is its own request's span, open when the query opened.
                let request = spans.iter().find(|s| s.name == "request" && s.task == span.task).unwrap();
                assert_eq!(span.parent, request.id, "{span:?}");
            }
            other => panic!("span {other}"),
        }
        let task = span.task;
        let texts: Vec<&str> = span.texts.iter().map(String::as_str).collect();
        match span.name.as_str() {
            "request" => {
                assert_eq!(texts, [format!("accepted task={task}"), format!("answered task={task}")], "{span:?}");
                assert_eq!(span.event_macros, 1, "the event! inside the request names it: {span:?}");
            }
            _ => assert_eq!(texts, [format!("rows read task={task}")], "{span:?}"),
        }
        let threads: BTreeSet<u64> =
            span.event_threads.iter().copied().chain([span.opened_on, span.closes[0]]).collect();
        moved += usize::from(threads.len() > 1);
    }
    assert!(moved > 0, "some span moved between workers: {spans:?}");

    // `latency`: each span's duration is within what the program measured around it.
    let run = Command::new(DUMP).args(["latency", "--by", "fields", "--format", "json"]).arg(&log).output().unwrap();
    assert!(run.status.success(), "latency: {}", String::from_utf8_lossy(&run.stderr));
    let json: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let groups = json["spans"].as_array().unwrap();
    assert_eq!(groups.len(), n, "{json}");
    for group in groups {
        let name = group["span"].as_str().unwrap().to_owned();
        let task: u64 =
            group["value"].as_str().unwrap().trim_matches('"').strip_prefix("task=").unwrap().parse().unwrap();
        assert_eq!((group["count"].as_u64(), group["unended"].as_u64()), (Some(1), Some(0)), "{group}");
        let duration = u128::from(group["min_ns"].as_u64().unwrap());
        let (inner, outer) = measured[&(name.clone(), task)];
        // The recorder's clock and `Instant` are two clocks: 2 µs of slack for their
        // calibration over a few milliseconds.
        assert!(
            inner.saturating_sub(2_000) <= duration && duration <= outer + 2_000,
            "{name} {task}: recorded {duration} ns, measured between {inner} and {outer}"
        );
    }
}
