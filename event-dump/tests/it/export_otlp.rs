//! `export --to otlp`: a service's log (declared spans across threads with a `traceparent`
//! and a status, a flow between two spans, a counter, the `tracing` bridge's spans with
//! fields, a span event and a `SpanFollows`) read back with OpenTelemetry's own classes
//! (`otlp_read.py`, PyPI `opentelemetry-proto`): one span per pair `latency` counts, valid
//! ids that two exports give alike, parents, links, status and the resource right; OTLP JSON
//! the same spans as protobuf; an OTLP/HTTP receiver on 127.0.0.1 (here, in the test) gets
//! the same spans, and a batch it refuses with 503 or 429 again; one it refuses for good
//! is counted, and the export exits 1.
//!
//! Without the Python package (`python3 -m pip install opentelemetry-proto`) the tests that
//! read OTLP back are skipped with a line saying so, unless `EVENT_REQUIRE_OTLP` is 1 (CI,
//! `.ci/run`): then its absence fails them.

use crate::common::*;
use event_format::wire::{
    BlockHeader, BlockWriter, Clock, ClockSource, Header, Order, RecordingId, Segment, Stop, StopCause, Text, Value,
};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// The events.def of [`service_log`].
const SERVICE_DEF: &str = r#"VERSION(1, 2, 0)
SET(shop)
KIND(Req, "requests")
RELATION(RequestBegin, 0x0001, TRUE, Req, WSS, id, path, traceparent)
RELATION(RequestEnd, 0x0002, TRUE, Req, WUS, id, code, status)
RELATION(HandleBegin, 0x0003, TRUE, Req, W, worker)
RELATION(HandleEnd, 0x0004, TRUE, Req, W, worker)
RELATION(Enqueue, 0x0005, TRUE, Req, W, job)
RELATION(Dequeue, 0x0006, TRUE, Req, W, job)
RELATION(QueueDepth, 0x0007, TRUE, Req, W, depth)
RELATION(Note, 0x0008, TRUE, Req, S, text)
SPAN(request, RequestBegin, RequestEnd, id)
SPAN(handle, HandleBegin, HandleEnd)
COUNTER(queue, QueueDepth, depth, "items")
FLOW(job, Enqueue, job, BEGIN)
FLOW(job, Dequeue, job, END)
"#;

/// The recording id of [`service_log`].
const RECORDING: [u8; 16] =
    [0x5f, 0x0c, 0x9a, 0x1e, 0x2b, 0x7d, 0x4c, 0x3a, 0x8e, 0x6f, 0x10, 0x29, 0x38, 0x47, 0x56, 0xab];

/// The remote parent of request 1.
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A 1 GHz clock whose tick 0 was 1 800 000 000 s after the epoch.
fn clock() -> Clock {
    Clock {
        source: ClockSource::Tsc,
        ticks_per_second: 1_000_000_000,
        ref_ticks: 0,
        ref_wall_ns: 1_800_000_000_000_000_000,
        start_ticks: 0,
    }
}

/// A service's stream, written here. Thread 1: `handle` (worker 1) around request 1 (with
/// [`TRACEPARENT`]) and request 2, an `Enqueue` of job 7, a `QueueDepth` of 3 and a `Note`.
/// Thread 2: `handle` (worker 2) around the `Dequeue` of job 7 and the ends of both
/// requests (1 `ok` with 200, 2 `error` with 500), then an end of request 9, never begun.
/// Thread 3, the `tracing` bridge: `conn` (peer) around `query` (sql, then `SpanRecord`
/// rows), a `TraceEvent` inside `query`, `retry` that follows from `query`, and `open`,
/// never closed. Seven spans end.
fn service_log(path: &Path) {
    std::fs::write(path, service_stream(None, |_| true)).unwrap();
}

/// The rows of [`service_log`]: each thread's (code, time, values).
type Rows = Vec<(u64, Vec<(u16, u64, Vec<Value<'static>>)>)>;

fn service_rows() -> Rows {
    let s = |text: &'static str| Value::Str(Text::new(text));
    use event_format::builtin::*;
    vec![
        (
            1,
            vec![
                (THREAD_NAME, 1, vec![Value::Word(1), s("front")]),
                (0x0003, 100, vec![Value::Word(1)]),
                (0x0001, 110, vec![Value::Word(1), s("/a"), s(TRACEPARENT)]),
                (0x0005, 120, vec![Value::Word(7)]),
                (0x0007, 130, vec![Value::Word(3)]),
                (0x0008, 140, vec![s("inside handle")]),
                (0x0001, 150, vec![Value::Word(2), s("/b"), s("")]),
                (0x0004, 200, vec![Value::Word(1)]),
            ],
        ),
        (
            2,
            vec![
                (0x0003, 300, vec![Value::Word(2)]),
                (0x0006, 310, vec![Value::Word(7)]),
                (0x0002, 320, vec![Value::Word(1), Value::Unsigned(200), s("ok")]),
                (0x0002, 330, vec![Value::Word(2), Value::Unsigned(500), s("error")]),
                (0x0004, 340, vec![Value::Word(2)]),
                (0x0002, 350, vec![Value::Word(9), Value::Unsigned(0), s("")]),
            ],
        ),
        (
            3,
            vec![
                (SPAN_OPEN, 400, vec![Value::Word(5), Value::Word(0), s("conn"), s("peer=\"10.0.0.1\"")]),
                (SPAN_CURRENT, 410, vec![Value::Word(5)]),
                (SPAN_OPEN, 420, vec![Value::Word(6), Value::Word(5), s("query"), s("sql=\"select 1\"")]),
                (SPAN_RECORD, 430, vec![Value::Word(6), s("rows=3")]),
                (SPAN_CURRENT, 440, vec![Value::Word(6)]),
                (TRACE_EVENT, 450, vec![Value::Unsigned(3), s("db"), s("done rows=3")]),
                (SPAN_CURRENT, 460, vec![Value::Word(5)]),
                // A record by callsite whose callsite its block does not define: left as it
                // is, and still a span record, of no span (the `conn` span has no events).
                (SPAN_RECORD_AT, 465, vec![Value::Word(6), Value::Word(42), s("0=1")]),
                (SPAN_CLOSE, 470, vec![Value::Word(6)]),
                (SPAN_OPEN, 480, vec![Value::Word(8), Value::Word(0), s("retry"), s("")]),
                (SPAN_FOLLOWS, 490, vec![Value::Word(8), Value::Word(6)]),
                (SPAN_CLOSE, 500, vec![Value::Word(8)]),
                (SPAN_CLOSE, 510, vec![Value::Word(5)]),
                (SPAN_OPEN, 520, vec![Value::Word(11), Value::Word(0), s("open"), s("")]),
            ],
        ),
    ]
}

/// The stream of [`service_log`]'s rows that `keep` keeps (by time), as segment `segment`
/// (index, and whether the recording goes on after it) when given.
fn service_stream(segment: Option<(u64, bool)>, keep: impl Fn(u64) -> bool) -> Vec<u8> {
    labelled_stream(segment, keep, &[])
}

/// [`service_stream`] with the recording's labels (`EVENT_LABELS`) in its header.
fn labelled_stream(segment: Option<(u64, bool)>, keep: impl Fn(u64) -> bool, labels: &[(&str, &str)]) -> Vec<u8> {
    let schema = event_format::def::parse(SERVICE_DEF, "shop.def").unwrap();
    let mut header = Header::with_sets(wire_is_own(schema), 1024, clock(), handmade_producer());
    header.properties.labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    header.properties.recording = Some(RecordingId(RECORDING));
    header.properties.segment = segment.map(|(index, _)| Segment { index, ..Segment::default() });
    let mut bytes = header.encode().unwrap();
    for (thread, rows) in &service_rows() {
        let rows: Vec<_> = rows.iter().filter(|(_, t, _)| keep(*t)).collect();
        if rows.is_empty() {
            continue;
        }
        let mut block = BlockWriter::new(Order::Little, 1024, &BlockHeader { thread: *thread, ..Default::default() });
        for (code, time, values) in rows {
            block.push(*code, *time, values).unwrap();
        }
        bytes.extend(block.finish());
    }
    match segment {
        Some((_, true)) => {
            let stop = Stop { cause: StopCause::Rotated, ..Stop::default() };
            bytes.extend(event_format::raw::stop_block(Order::Little, 1024, 0, 1000, &stop));
        }
        _ => end_with_stop(&mut bytes),
    }
    bytes
}

/// [`service_log`] as a recording of two segments in `dir`: the rows before 300 ticks in
/// segment 0, the rest in segment 1 (both requests, and the flow, cross the rotation).
fn service_segments(dir: &Path) -> [PathBuf; 2] {
    std::fs::create_dir_all(dir).unwrap();
    let first = dir.join("shop.000000.evt");
    let second = dir.join("shop.000001.evt");
    std::fs::write(&first, service_stream(Some((0, true)), |t| t < 300)).unwrap();
    std::fs::write(&second, service_stream(Some((1, false)), |t| t >= 300)).unwrap();
    [first, second]
}

/// Whether OpenTelemetry's Python classes are here; when not, says so past the harness's
/// capture, or fails when `EVENT_REQUIRE_OTLP` is 1.
pub(crate) fn otlp_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import opentelemetry.proto.collector.trace.v1.trace_service_pb2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("EVENT_REQUIRE_OTLP").as_deref() != Ok("1"),
            "opentelemetry-proto not found (python3 -m pip install opentelemetry-proto), and EVENT_REQUIRE_OTLP=1 requires it"
        );
        let _ = writeln!(
            std::io::stderr(),
            "skipped: opentelemetry-proto not found (python3 -m pip install opentelemetry-proto)"
        );
    }
    ok
}

/// What `otlp_read.py` read of `files` as `kind` (`traces`, `metrics`, `json-traces`, ...).
pub(crate) fn read_otlp(kind: &str, files: &[&Path]) -> Json {
    const SCRIPT: &str = include_str!("otlp_read.py");
    let out = Command::new("python3").args(["-c", SCRIPT, kind]).args(files).output().unwrap();
    assert!(out.status.success(), "otlp_read.py: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The spans of `read` by name (each name once in [`service_log`]).
fn by_name(read: &Json) -> BTreeMap<String, Json> {
    read["spans"].as_array().unwrap().iter().map(|s| (s["name"].as_str().unwrap().to_owned(), s.clone())).collect()
}

/// The number of spans `latency` pairs in `log`.
fn latency_pairs(log: &Path) -> u64 {
    let out = run(&["latency", log.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Json = serde_json::from_slice(&out.stdout).unwrap();
    json["spans"].as_array().unwrap().iter().map(|s| s["count"].as_u64().unwrap()).sum()
}

fn export_to(log: &Path, out: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(DUMP);
    command.args(["export", "--to", "otlp", log.to_str().unwrap(), "-o", out]);
    for var in
        ["OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS"]
    {
        command.env_remove(var);
    }
    command.envs(env.iter().copied()).output().unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn spans_and_counters_read_back_with_opentelemetrys_classes() {
    let scratch = dir("otlp-file");
    let log = scratch.join("service.evt");
    service_log(&log);
    if !otlp_available() {
        return;
    }
    let out = scratch.join("spans.pb");
    let done = export_to(
        &log,
        out.to_str().unwrap(),
        &[("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test,host.name=not-this")],
    );
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(
        stdout(&done).trim(),
        format!(
            "7 spans and 1 data points written to {} and {}",
            out.display(),
            scratch.join("spans.metrics.pb").display()
        )
    );
    let said = stderr(&done);
    assert!(said.contains("1 span never ended") && said.contains("1 span end with no open span"), "{said}");
    let read = read_otlp("traces", &[&out]);
    let all = read["spans"].as_array().unwrap();
    assert_eq!(all.len() as u64, latency_pairs(&log), "one span per pair `latency` counts: {all:?}");
    assert_eq!(all.len(), 7);
    let spans = by_name(&read);

    // Ids: 16 and 8 bytes, never zero, none twice.
    let mut ids = std::collections::BTreeSet::new();
    for s in all {
        let (trace, span) = (s["trace"].as_str().unwrap(), s["span"].as_str().unwrap());
        assert_eq!((trace.len(), span.len()), (32, 16), "{s}");
        assert!(trace.chars().any(|c| c != '0') && span.chars().any(|c| c != '0'), "{s}");
        assert!(ids.insert(span.to_owned()), "span id {span} twice");
        assert!(s["end"].as_u64() >= s["start"].as_u64());
    }
    let id = |name: &str| spans[name]["span"].as_str().unwrap().to_owned();
    let trace = |name: &str| spans[name]["trace"].as_str().unwrap().to_owned();
    let parent = |name: &str| spans[name]["parent"].as_str().unwrap().to_owned();
    // Times: wall-clock nanoseconds of the ticks (1 GHz from 1.8e18).
    let first_handle = read["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "handle" && s["attributes"]["worker"] == 1)
        .unwrap();
    assert_eq!(first_handle["start"].as_u64(), Some(1_800_000_000_000_000_100));
    assert_eq!(first_handle["end"].as_u64(), Some(1_800_000_000_000_000_200));

    // Request 1 joins the remote trace of its traceparent; request 2 is the first handle's
    // child, in its trace.
    let requests: Vec<&Json> = read["spans"].as_array().unwrap().iter().filter(|s| s["name"] == "request").collect();
    assert_eq!(requests.len(), 2);
    let request = |n: u64| *requests.iter().find(|s| s["attributes"]["id"] == n).unwrap();
    assert_eq!(request(1)["trace"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(request(1)["parent"], "00f067aa0ba902b7");
    assert_eq!(request(1)["flags"].as_u64().unwrap() & 0x300, 0x300, "a remote parent");
    assert!(request(1)["attributes"].get("traceparent").is_none(), "the traceparent is the parent, not an attribute");
    assert_eq!(request(1)["attributes"]["path"], "/a");
    assert_eq!(request(1)["attributes"]["code"], 200, "the end's parameters too");
    assert_eq!(request(1)["status"], serde_json::json!([1, ""]), "status ok");
    assert_eq!(request(2)["status"], serde_json::json!([2, ""]), "status error");
    assert_eq!(request(2)["parent"].as_str().unwrap(), first_handle["span"].as_str().unwrap());
    assert_eq!(request(2)["trace"], first_handle["trace"]);
    assert_eq!(first_handle["parent"], "", "a root");
    assert_eq!(first_handle["attributes"]["thread.name"], "front");
    // Its instants, the Enqueue and the Note (the QueueDepth samples a counter: a metric).
    let events: Vec<&str> = first_handle["events"].as_array().unwrap().iter().map(|e| e[0].as_str().unwrap()).collect();
    assert_eq!(events, ["Enqueue", "Note"], "{first_handle}");
    assert_eq!(first_handle["events"][1][1].as_u64(), Some(1_800_000_000_000_000_140));
    assert_eq!(first_handle["events"][1][2]["text"], "inside handle");
    // The flow of job 7: the second handle links to the first.
    let second_handle = read["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "handle" && s["attributes"]["worker"] == 2)
        .unwrap();
    assert_eq!(second_handle["links"].as_array().unwrap().len(), 1, "{second_handle}");
    assert_eq!(second_handle["links"][0][0], first_handle["trace"]);
    assert_eq!(second_handle["links"][0][1], first_handle["span"]);
    assert_eq!(second_handle["links"][0][2]["event.flow"], "job");

    // The tracing spans: query in conn, its fields and its event; retry follows query.
    assert_eq!(parent("query"), id("conn"));
    assert_eq!(trace("query"), trace("conn"));
    assert_eq!(parent("conn"), "");
    assert_eq!(spans["query"]["attributes"]["sql"], "select 1");
    assert_eq!(spans["query"]["attributes"]["rows"], 3, "SpanRecord's fields");
    assert_eq!(spans["query"]["scope"][0], "tracing");
    assert_eq!(spans["query"]["events"][0][0], "done");
    assert_eq!(spans["query"]["events"][0][2]["level"], "INFO");
    assert_eq!(spans["conn"]["events"].as_array().unwrap().len(), 0);
    assert_eq!(spans["retry"]["links"][0][1].as_str().unwrap(), id("query"));
    assert_eq!(spans["retry"]["links"][0][2]["event.link"], "follows_from");
    assert_eq!(spans["handle"]["scope"], serde_json::json!(["shop", "1.2.0"]));
    assert!(spans.values().all(|s| s["kind"] == 1), "internal spans");

    // The resource: the log's program, host and recording, then the environment's extra.
    assert_eq!(read["resources"].as_array().unwrap().len(), 1);
    let resource = &read["resources"][0];
    assert_eq!(resource["service.name"], "handmade");
    assert_eq!(resource["host.name"], "handmade-host", "the log's own wins over OTEL_RESOURCE_ATTRIBUTES");
    assert_eq!(resource["process.pid"], 4242);
    assert_eq!(resource["event.recording.id"], hex(&RECORDING));
    assert_eq!(resource["deployment.environment"], "test");

    // The counter: a gauge with its unit.
    let metrics = read_otlp("metrics", &[&scratch.join("spans.metrics.pb")]);
    assert_eq!(metrics["metrics"], serde_json::json!([["queue", "items", [[1_800_000_000_000_000_130u64, 3]]]]));

    // The same log again: the same bytes (ids are derived, not drawn).
    let again = scratch.join("again.pb");
    assert!(
        export_to(
            &log,
            again.to_str().unwrap(),
            &[("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test,host.name=not-this")]
        )
        .status
        .success()
    );
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap(), "two exports, the same ids and bytes");

    // OTLP JSON: the same spans and points.
    let json = scratch.join("spans.json");
    let done = export_to(
        &log,
        json.to_str().unwrap(),
        &[("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test,host.name=not-this")],
    );
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(read_otlp("json-traces", &[&json]), read, "OTLP JSON reads as the protobuf does");
    let points = read_otlp("json-metrics", &[&scratch.join("spans.metrics.json")]);
    assert_eq!(points["metrics"], metrics["metrics"]);
}

/// A request a receiver got: its path, body and headers (names in lowercase).
type Request = (String, Vec<u8>, Vec<(String, String)>);

/// A span as the tests compare them: trace, span and parent ids, name, duration, status code.
type Row = (String, String, String, String, u64, u64);

/// What a receiver answers each request of a path, in turn (the last answer then on):
/// (status, `Retry-After`, body).
type Answers = BTreeMap<&'static str, Vec<(u16, Option<u64>, Vec<u8>)>>;

/// An OTLP/HTTP receiver on 127.0.0.1: each request's path and body, in order, as it got
/// them, answered as `answers` says. Stops when `stop` is called.
struct Receiver {
    port: u16,
    got: Arc<Mutex<Vec<Request>>>,
}

impl Receiver {
    fn start(answers: Answers) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&got);
        let answers = Arc::new(Mutex::new(answers));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (got, answers) = (Arc::clone(&shared), Arc::clone(&answers));
                std::thread::spawn(move || serve(stream, &got, &answers));
            }
        });
        Receiver { port, got }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The bodies it got at `path`.
    fn bodies(&self, path: &str) -> Vec<Vec<u8>> {
        self.got.lock().unwrap().iter().filter(|(p, _, _)| p == path).map(|(_, b, _)| b.clone()).collect()
    }
}

/// Serves one connection's requests (HTTP/1.1, kept alive) until it closes; each request
/// must take at most a few seconds.
fn serve(stream: std::net::TcpStream, got: &Mutex<Vec<Request>>, answers: &Mutex<Answers>) {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split(' ').nth(1).unwrap_or("").to_owned();
        let mut headers = Vec::new();
        let mut length = 0;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_owned());
                if k == "content-length" {
                    length = v.parse().unwrap();
                }
                headers.push((k, v));
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        got.lock().unwrap().push((path.clone(), body, headers));
        let (status, retry_after, reply) = {
            let mut answers = answers.lock().unwrap();
            let list =
                answers.entry(Box::leak(path.clone().into_boxed_str())).or_insert_with(|| vec![(200, None, vec![])]);
            if list.len() > 1 { list.remove(0) } else { list[0].clone() }
        };
        let mut head = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\n",
            reply.len()
        );
        if let Some(s) = retry_after {
            head.push_str(&format!("Retry-After: {s}\r\n"));
        }
        head.push_str("\r\n");
        if writer.write_all(head.as_bytes()).and_then(|()| writer.write_all(&reply)).is_err() {
            return;
        }
    }
}

/// Writes `bodies` to files under `dir` named `name-N`, for `otlp_read.py`.
fn body_files(dir: &Path, name: &str, bodies: &[Vec<u8>]) -> Vec<PathBuf> {
    bodies
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let p = dir.join(format!("{name}-{i}"));
            std::fs::write(&p, b).unwrap();
            p
        })
        .collect()
}

#[test]
fn a_receiver_gets_the_same_spans_and_a_refused_batch_again() {
    let scratch = dir("otlp-http");
    let log = scratch.join("service.evt");
    service_log(&log);
    let file = scratch.join("spans.pb");
    assert!(export_to(&log, file.to_str().unwrap(), &[]).status.success());
    // The traces refused once (503, retry after 1 s), the metrics once (429, at once).
    let receiver = Receiver::start(BTreeMap::from([
        ("/v1/traces", vec![(503, Some(1), vec![]), (200, None, vec![])]),
        ("/v1/metrics", vec![(429, Some(0), vec![]), (200, None, vec![])]),
    ]));
    let done =
        export_to(&log, &receiver.url(), &[("OTEL_EXPORTER_OTLP_HEADERS", "x-team=shop,authorization=Bearer%20abc")]);
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(
        stdout(&done).trim(),
        format!("7 spans and 1 data points sent to {}/v1/traces", receiver.url()),
        "{}",
        stderr(&done)
    );
    assert!(stderr(&done).contains("HTTP 503; sending the batch again in 1 s"), "{}", stderr(&done));
    let traces = receiver.bodies("/v1/traces");
    assert_eq!(traces.len(), 2, "the refused batch, then again");
    assert_eq!(traces[0], traces[1], "the same batch again");
    assert_eq!(traces[1], std::fs::read(&file).unwrap(), "the receiver got what the file holds");
    assert_eq!(receiver.bodies("/v1/metrics").len(), 2);
    assert_eq!(receiver.bodies("/v1/metrics")[1], std::fs::read(scratch.join("spans.metrics.pb")).unwrap());
    let headers = receiver.got.lock().unwrap()[0].2.clone();
    for (k, v) in [("content-type", "application/x-protobuf"), ("x-team", "shop"), ("authorization", "Bearer abc")] {
        assert!(headers.contains(&(k.to_owned(), v.to_owned())), "{k}: {headers:?}");
    }
    if otlp_available() {
        let files = body_files(&scratch, "traces", &traces[1..]);
        let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        assert_eq!(read_otlp("traces", &paths), read_otlp("traces", &[&file]));
    }
}

#[test]
fn a_batch_refused_for_good_is_counted_and_the_export_goes_on() {
    let scratch = dir("otlp-refused");
    let log = scratch.join("service.evt");
    service_log(&log);
    // Traces refused (400); metrics accepted in part (a partial success rejecting 1 point).
    let partial = vec![0x0a, 0x06, 0x08, 0x01, 0x12, 0x02, b'n', b'o'];
    let receiver = Receiver::start(BTreeMap::from([
        ("/v1/traces", vec![(400, None, vec![])]),
        ("/v1/metrics", vec![(200, None, partial)]),
    ]));
    let done = export_to(&log, &receiver.url(), &[]);
    assert_eq!(done.status.code(), Some(1), "{}", stderr(&done));
    assert_eq!(
        stdout(&done).trim(),
        format!("0 spans and 0 data points sent to {}/v1/traces; refused: 7 spans and 1 data points", receiver.url())
    );
    assert!(stderr(&done).contains("refused a batch of 7 spans (HTTP 400)"), "{}", stderr(&done));
    assert_eq!(receiver.bodies("/v1/traces").len(), 1, "a 400 is not sent again");
}

#[test]
fn the_endpoint_comes_from_the_environment() {
    let scratch = dir("otlp-env");
    let log = scratch.join("service.evt");
    service_log(&log);
    let receiver = Receiver::start(Answers::new());
    let mut command = Command::new(DUMP);
    command.args(["export", "--to", "otlp", log.to_str().unwrap()]);
    command.env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("{}/", receiver.url()));
    command.env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", format!("{}/custom/metrics", receiver.url()));
    command.env("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip");
    command.env("OTEL_SERVICE_NAME", "shop-api");
    let done = command.output().unwrap();
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(receiver.bodies("/v1/traces").len(), 1);
    assert_eq!(receiver.bodies("/custom/metrics").len(), 1, "a signal's own endpoint is taken as it is");
    let got = receiver.got.lock().unwrap().clone();
    assert!(got[0].2.contains(&("content-encoding".to_owned(), "gzip".to_owned())));
    let mut inflated = Vec::new();
    flate2_inflate(&got.iter().find(|g| g.0 == "/v1/traces").unwrap().1, &mut inflated);
    if otlp_available() {
        let body = scratch.join("gzipped-body");
        std::fs::write(&body, &inflated).unwrap();
        let read = read_otlp("traces", &[&body]);
        assert_eq!(
            read["resources"][0]["service.name"], "shop-api",
            "OTEL_SERVICE_NAME names a log without a service label"
        );
        assert_eq!(read["spans"].as_array().unwrap().len(), 7);
    }
    // A protocol it does not speak, and a bad header, are one line each.
    let mut command = Command::new(DUMP);
    command.args(["export", "--to", "otlp", log.to_str().unwrap()]).env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
    let refused = command.output().unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused)
            .contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc: event-dump sends OTLP over HTTP with protobuf only"),
        "{}",
        stderr(&refused)
    );
    let bad = run(&["export", "--to", "otlp", log.to_str().unwrap(), "-o", &receiver.url(), "--header", "novalue"]);
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(stderr(&bad).lines().count(), 1, "{}", stderr(&bad));
}

/// Inflates a gzip member (the test reads what the receiver got).
fn flate2_inflate(gz: &[u8], out: &mut Vec<u8>) {
    flate2::read::GzDecoder::new(gz).read_to_end(out).unwrap();
}

/// The resource takes the log's labels (`EVENT_LABELS`): `service`, `version` and `instance`
/// as OpenTelemetry's `service.name`, `service.version` and `service.instance.id`, any other
/// label under its own key; the `service` label wins over `OTEL_SERVICE_NAME`.
#[test]
fn the_resource_carries_the_logs_labels() {
    let scratch = dir("otlp-labels");
    let log = scratch.join("labelled.evt");
    let labels = [("service", "shop-api"), ("version", "1.4.2"), ("instance", "api-7f9c"), ("team", "payments")];
    std::fs::write(&log, labelled_stream(None, |_| true, &labels)).unwrap();
    let out = scratch.join("spans.json");
    let done = export_to(&log, out.to_str().unwrap(), &[("OTEL_SERVICE_NAME", "not-this")]);
    assert!(done.status.success(), "{}", stderr(&done));
    let text = std::fs::read_to_string(&out).unwrap();
    let mut seen = BTreeMap::new();
    for line in text.lines() {
        let request: Json = serde_json::from_str(line).unwrap();
        for rs in request["resourceSpans"].as_array().unwrap() {
            for a in rs["resource"]["attributes"].as_array().unwrap() {
                let value = a["value"]["stringValue"].as_str().map(str::to_owned);
                seen.insert(a["key"].as_str().unwrap().to_owned(), value);
            }
        }
    }
    let get = |k: &str| seen.get(k).cloned().flatten();
    assert_eq!(get("service.name").as_deref(), Some("shop-api"), "{text}");
    assert_eq!(get("service.version").as_deref(), Some("1.4.2"), "{text}");
    assert_eq!(get("service.instance.id").as_deref(), Some("api-7f9c"), "{text}");
    assert_eq!(get("team").as_deref(), Some("payments"), "{text}");
    assert!(!seen.contains_key("service") && !seen.contains_key("version"), "each label once: {text}");
}

/// The spans of an OTLP JSON file (lines of requests), each as its ids, name, duration and
/// status, sorted.
fn json_spans(path: &Path) -> Vec<Row> {
    let mut spans = Vec::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let request: Json = serde_json::from_str(line).unwrap();
        for rs in request["resourceSpans"].as_array().unwrap() {
            for ss in rs["scopeSpans"].as_array().unwrap() {
                for s in ss["spans"].as_array().unwrap() {
                    let ns = |k: &str| s[k].as_str().unwrap().parse::<u64>().unwrap();
                    spans.push((
                        s["traceId"].as_str().unwrap().to_owned(),
                        s["spanId"].as_str().unwrap().to_owned(),
                        s["parentSpanId"].as_str().unwrap_or("").to_owned(),
                        s["name"].as_str().unwrap().to_owned(),
                        ns("endTimeUnixNano") - ns("startTimeUnixNano"),
                        s["status"]["code"].as_u64().unwrap_or(0),
                    ));
                }
            }
        }
    }
    spans.sort();
    spans
}

/// The `spans` rows of an SQLite export, as [`json_spans`] gives them.
fn sqlite_spans(db: &Path) -> Vec<Row> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt =
        conn.prepare("SELECT TraceId, SpanId, ParentSpanId, SpanName, Duration, StatusCode FROM spans").unwrap();
    let code = |s: String| match s.as_str() {
        "STATUS_CODE_OK" => 1,
        "STATUS_CODE_ERROR" => 2,
        _ => 0,
    };
    let mut rows: Vec<_> = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get::<_, i64>(4)? as u64, code(r.get(5)?)))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.sort();
    rows
}

/// The `spans` rows of a Parquet dataset read by DuckDB, as [`json_spans`] gives them; `None`
/// without DuckDB's Python package (`EVENT_REQUIRE_DUCKDB=1` makes that a failure).
fn parquet_spans(dataset: &Path) -> Option<Vec<Row>> {
    let script = "import duckdb, json, sys\n\
        rows = duckdb.connect().execute(\"SELECT TraceId, SpanId, ParentSpanId, SpanName, Duration, StatusCode \
        FROM read_parquet('\" + sys.argv[1] + \"/spans/*/*.parquet')\").fetchall()\n\
        print(json.dumps(rows))";
    let out = Command::new("python3").args(["-c", script]).arg(dataset).output().ok()?;
    if !out.status.success() {
        assert!(
            std::env::var("EVENT_REQUIRE_DUCKDB").as_deref() != Ok("1"),
            "duckdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let _ = writeln!(std::io::stderr(), "skipped: duckdb not found (python3 -m pip install duckdb)");
        return None;
    }
    let rows: Vec<(String, String, String, String, u64, String)> = serde_json::from_slice(&out.stdout).unwrap();
    let code = |s: &str| match s {
        "STATUS_CODE_OK" => 1,
        "STATUS_CODE_ERROR" => 2,
        _ => 0,
    };
    let mut rows: Vec<_> = rows.into_iter().map(|(a, b, c, d, e, f)| (a, b, c, d, e, code(&f))).collect();
    rows.sort();
    Some(rows)
}

#[test]
fn the_spans_tables_hold_the_spans_otlp_sends() {
    let scratch = dir("otlp-tables");
    let log = scratch.join("service.evt");
    service_log(&log);
    let json = scratch.join("spans.json");
    assert!(export_to(&log, json.to_str().unwrap(), &[]).status.success());
    let sent = json_spans(&json);
    assert_eq!(sent.len(), 7);
    let db = scratch.join("spans.db");
    let done = run(&["export", "--to", "sqlite", log.to_str().unwrap(), "-o", db.to_str().unwrap()]);
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(sqlite_spans(&db), sent, "SQLite's spans are OTLP's, ids and all");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let recording: String = conn.query_row("SELECT recording FROM event_log", [], |r| r.get(0)).unwrap();
    assert_eq!(recording, hex(&RECORDING));
    let path: String = conn
        .query_row(
            "SELECT json_extract(SpanAttributes, '$.path') FROM spans WHERE SpanAttributes LIKE '%\"id\":\"1\"%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(path, "/a");
    let dataset = scratch.join("dataset");
    let done = run(&["export", "--to", "parquet", log.to_str().unwrap(), "-o", dataset.to_str().unwrap()]);
    assert!(done.status.success(), "{}", stderr(&done));
    if let Some(rows) = parquet_spans(&dataset) {
        assert_eq!(rows, sent, "Parquet's spans are OTLP's, ids and all");
    }

    // The same recording as two segments: the same spans, whole or a segment at a time.
    let segments = service_segments(&scratch.join("segments"));
    let json2 = scratch.join("segments.json");
    assert!(export_to(&scratch.join("segments"), json2.to_str().unwrap(), &[]).status.success());
    assert_eq!(json_spans(&json2), sent, "a span across a rotation is one span, with the same ids");
    let whole = scratch.join("whole");
    let done =
        run(&["export", "--to", "parquet", scratch.join("segments").to_str().unwrap(), "-o", whole.to_str().unwrap()]);
    assert!(done.status.success(), "{}", stderr(&done));
    let apart = scratch.join("apart");
    for segment in &segments {
        let done = run(&["export", "--to", "parquet", segment.to_str().unwrap(), "-o", apart.to_str().unwrap()]);
        assert!(done.status.success(), "{}", stderr(&done));
    }
    let files = |d: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        for day in std::fs::read_dir(d.join("spans")).unwrap() {
            for f in std::fs::read_dir(day.unwrap().path()).unwrap() {
                let f = f.unwrap().path();
                out.insert(f.strip_prefix(d).unwrap().to_owned(), std::fs::read(&f).unwrap());
            }
        }
        out
    };
    assert_eq!(files(&whole), files(&apart), "the spans files, exported whole or a segment at a time");
    assert_eq!(files(&whole).len(), 2, "a file per segment: {:?}", files(&whole).keys());
    if let Some(rows) = parquet_spans(&whole) {
        assert_eq!(rows, sent);
    }
    let logs_segment = Command::new("python3")
        .args(["-c", "import duckdb, sys; print(duckdb.connect().execute(\"SELECT list(segment ORDER BY segment), list(DISTINCT recording) FROM read_parquet('\" + sys.argv[1] + \"/logs/*/*.parquet')\").fetchone())"])
        .arg(&whole)
        .output()
        .unwrap();
    if logs_segment.status.success() {
        assert_eq!(
            stdout(&logs_segment).trim(),
            format!("([0, 1], ['{}'])", hex(&RECORDING)),
            "the logs table's segment and recording"
        );
    }
}

/// Runs `follow DIR --otlp` to `receiver`, as it returns.
fn follow_otlp(dir: &Path, receiver: &Receiver) -> std::process::Output {
    let mut command = Command::new(DUMP);
    command.args(["follow", dir.to_str().unwrap(), "--otlp", "--endpoint", &receiver.url(), "--interval", "20"]);
    command.env_remove("OTEL_EXPORTER_OTLP_ENDPOINT").output().unwrap()
}

#[test]
fn follow_sends_each_sealed_segment_once_and_resumes_where_it_stopped() {
    let scratch = dir("otlp-follow");
    let dir = scratch.join("segments");
    service_segments(&dir);
    let json = scratch.join("all.json");
    assert!(export_to(&dir, json.to_str().unwrap(), &[]).status.success());
    let all = json_spans(&json);
    let receiver = Receiver::start(Answers::new());
    let done = follow_otlp(&dir, &receiver);
    assert!(done.status.success(), "{}", stderr(&done));
    let url = receiver.url();
    assert_eq!(stdout(&done).trim(), format!("7 spans and 1 data points sent to {url}/v1/traces"));
    let state = std::fs::read_to_string(dir.join(".event-dump-otlp")).unwrap();
    assert!(state.contains(&format!("recording {}\nsegment 2\n", hex(&RECORDING))), "{state}");
    // Again: everything was sent.
    let again = follow_otlp(&dir, &receiver);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(stdout(&again).trim(), format!("0 spans and 0 data points sent to {url}/v1/traces"));
    // Stopped after the first span of segment 1 was sent: the five others, request 2's begin
    // (in segment 0) read again to pair it.
    let stopped = format!("event-dump otlp 1\nrecording {}\nsegment 1\nspans 1\npoints 0\n", hex(&RECORDING));
    std::fs::write(dir.join(".event-dump-otlp"), stopped).unwrap();
    let before = receiver.bodies("/v1/traces").len();
    let resumed = follow_otlp(&dir, &receiver);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(stdout(&resumed).trim(), format!("5 spans and 0 data points sent to {url}/v1/traces"));
    if otlp_available() {
        let bodies = receiver.bodies("/v1/traces");
        let files = body_files(&scratch, "first", &bodies[..before]);
        let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        let first = read_otlp("traces", &paths);
        let ids = |read: &Json| -> Vec<(String, String, String, String)> {
            let mut v: Vec<_> = read["spans"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    let text = |k: &str| s[k].as_str().unwrap().to_owned();
                    (text("trace"), text("span"), text("parent"), text("name"))
                })
                .collect();
            v.sort();
            v
        };
        let exported: Vec<_> = all.iter().map(|s| (s.0.clone(), s.1.clone(), s.2.clone(), s.3.clone())).collect();
        assert_eq!(ids(&first), exported, "follow sends the spans export sends, ids and all");
        let files = body_files(&scratch, "resumed", &bodies[before..]);
        let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        let resumed = ids(&read_otlp("traces", &paths));
        assert_eq!(resumed.len(), 5);
        assert!(resumed.iter().all(|s| exported.contains(s)), "the same ids after a restart: {resumed:?}");
        assert!(resumed.iter().any(|s| s.3 == "request"), "request 2, begun before the rotation, paired");
    }
}
