//! `export --to otlp`: a log's spans and counters as OpenTelemetry's OTLP, the protocol every
//! collector and tracing backend takes: spans as `ExportTraceServiceRequest`s, counter samples
//! as `ExportMetricsServiceRequest`s (gauges), written by [`super::proto`] (no schema
//! compiler). The spans are the span model's ([`crate::spans`]), the same that the tables'
//! `spans` hold; docs/OUTPUT.md ("OTLP") states the mapping and its limits.
//!
//! - **Where.** `-o FILE`: the spans in FILE and the counters in FILE with `.metrics` before its
//!   extension, protobuf (each file one request, the batches' `resource_spans` one after
//!   another: protobuf's concatenation of messages is their merge), or, for a name ending in
//!   `.json` or `.jsonl`, OTLP JSON, one request per line (what the collector's `otlpjsonfile`
//!   receiver reads). Written whole or not at all (`.partial`, renamed). `-o http://HOST:PORT`,
//!   or no `-o`: OTLP/HTTP with protobuf bodies to the endpoint (`otlp_http`), taken as the
//!   OpenTelemetry SDKs take it, from `OTEL_EXPORTER_OTLP_ENDPOINT` and the others.
//! - **Batches.** [`SPANS_PER_BATCH`] spans and [`POINTS_PER_BATCH`] points a request, sent as
//!   they fill while the logs are read through the merge: memory is the spans open at once
//!   (the span model's bounds) and one batch of each.
//! - **Counts.** What was sent and what the receiver refused (a batch it answered with an
//!   error that is not worth retrying, or the `rejected_spans` of a partial success), said on
//!   stdout; exit 1 when anything was refused.

use super::Window;
use crate::export::Item;
use crate::log::{DumpError, Log};
use crate::spans::{Attr, Resource, Span, SpanModel, resource};
use event_format::roles::Roles;
use event_format::wire::Value;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::proto::Proto;

/// Spans in one request: OpenTelemetry SDKs' default batch (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
pub(crate) const SPANS_PER_BATCH: usize = 512;
/// Data points in one request.
pub(crate) const POINTS_PER_BATCH: usize = 2048;

/// Field numbers of the OTLP messages written (opentelemetry-proto's `collector/trace/v1`,
/// `collector/metrics/v1`, `trace/v1`, `metrics/v1`, `common/v1`, `resource/v1`).
mod field {
    // Export*ServiceRequest: resource_spans / resource_metrics
    pub(super) const RESOURCE_DATA: u32 = 1;
    // ResourceSpans / ResourceMetrics
    pub(super) const RESOURCE: u32 = 1;
    pub(super) const SCOPE_DATA: u32 = 2;
    // Resource
    pub(super) const RESOURCE_ATTRIBUTES: u32 = 1;
    // ScopeSpans / ScopeMetrics
    pub(super) const SCOPE: u32 = 1;
    pub(super) const SCOPE_ITEMS: u32 = 2;
    // InstrumentationScope
    pub(super) const SCOPE_NAME: u32 = 1;
    pub(super) const SCOPE_VERSION: u32 = 2;
    // KeyValue, AnyValue
    pub(super) const KEY: u32 = 1;
    pub(super) const VALUE: u32 = 2;
    pub(super) const STRING_VALUE: u32 = 1;
    pub(super) const BOOL_VALUE: u32 = 2;
    pub(super) const INT_VALUE: u32 = 3;
    pub(super) const DOUBLE_VALUE: u32 = 4;
    // Span
    pub(super) const TRACE_ID: u32 = 1;
    pub(super) const SPAN_ID: u32 = 2;
    pub(super) const TRACE_STATE: u32 = 3;
    pub(super) const PARENT_SPAN_ID: u32 = 4;
    pub(super) const NAME: u32 = 5;
    pub(super) const KIND: u32 = 6;
    pub(super) const START: u32 = 7;
    pub(super) const END: u32 = 8;
    pub(super) const ATTRIBUTES: u32 = 9;
    pub(super) const DROPPED_ATTRIBUTES: u32 = 10;
    pub(super) const EVENTS: u32 = 11;
    pub(super) const DROPPED_EVENTS: u32 = 12;
    pub(super) const LINKS: u32 = 13;
    pub(super) const DROPPED_LINKS: u32 = 14;
    pub(super) const STATUS: u32 = 15;
    pub(super) const FLAGS: u32 = 16;
    // Span.Event
    pub(super) const EVENT_TIME: u32 = 1;
    pub(super) const EVENT_NAME: u32 = 2;
    pub(super) const EVENT_ATTRIBUTES: u32 = 3;
    pub(super) const EVENT_DROPPED_ATTRIBUTES: u32 = 4;
    // Span.Link
    pub(super) const LINK_TRACE_ID: u32 = 1;
    pub(super) const LINK_SPAN_ID: u32 = 2;
    pub(super) const LINK_ATTRIBUTES: u32 = 4;
    pub(super) const LINK_FLAGS: u32 = 6;
    // Status
    pub(super) const STATUS_MESSAGE: u32 = 2;
    pub(super) const STATUS_CODE: u32 = 3;
    // Metric
    pub(super) const METRIC_NAME: u32 = 1;
    pub(super) const METRIC_UNIT: u32 = 3;
    pub(super) const GAUGE: u32 = 5;
    // Gauge
    pub(super) const DATA_POINTS: u32 = 1;
    // NumberDataPoint
    pub(super) const POINT_TIME: u32 = 3;
    pub(super) const AS_DOUBLE: u32 = 4;
    pub(super) const AS_INT: u32 = 6;
}

/// `SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK`: the flags say whether the parent is remote.
const HAS_IS_REMOTE: u32 = 0x100;
/// `SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK`.
const IS_REMOTE: u32 = 0x200;
/// W3C trace flags: sampled (a recorded span was).
const SAMPLED: u32 = 0x01;

/// What a request carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Signal {
    Traces,
    Metrics,
}

impl Signal {
    /// The path OTLP/HTTP appends to a base endpoint.
    #[cfg_attr(not(feature = "otlp"), allow(dead_code, reason = "OTLP/HTTP's"))]
    pub(crate) fn path(self) -> &'static str {
        match self {
            Signal::Traces => "v1/traces",
            Signal::Metrics => "v1/metrics",
        }
    }

    /// What its items are called.
    #[cfg_attr(not(feature = "otlp"), allow(dead_code, reason = "OTLP/HTTP's"))]
    pub(crate) fn items(self) -> &'static str {
        match self {
            Signal::Traces => "spans",
            Signal::Metrics => "data points",
        }
    }
}

/// Where requests go: a file of each signal, or an OTLP/HTTP endpoint. Its answer to each
/// request: how many of its `items` the receiver refused.
pub(crate) trait Sink {
    /// Sends one request of `signal` holding `items` spans or points: its protobuf bytes, or
    /// (for a JSON file) its JSON.
    fn send(&mut self, signal: Signal, body: Body, items: u64) -> io::Result<u64>;
    /// Everything is sent: finishes the files.
    fn finish(&mut self) -> io::Result<()>;
}

/// A request's bytes.
pub(crate) enum Body {
    Proto(Vec<u8>),
    Json(String),
}

/// How a sink wants its requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Proto,
    Json,
}

/// What one log brings to every request: its resource and what its scopes and counters are.
pub(crate) struct Source {
    pub(crate) resource: Resource,
    /// Each counter's name, unit and set.
    counters: Vec<(String, String, String)>,
    /// Each set's version.
    versions: BTreeMap<String, String>,
}

impl Source {
    /// The source of `log`: its resource (`fallback_service` for a log without a `service`
    /// label, and `extra` resource attributes after the log's own: `OTEL_RESOURCE_ATTRIBUTES`).
    pub(crate) fn new(log: &Log, fallback_service: Option<&str>, extra: &[(String, String)]) -> Source {
        let header = log.header();
        let mut resource = resource(header, &log.recording_id().to_hex(), fallback_service);
        for (k, v) in extra {
            if !resource.attributes.iter().any(|(key, _)| key == k) {
                resource.attributes.push((k.clone(), Attr::Str(v.clone())));
            }
        }
        let roles = Roles::new(&header.sets);
        let counters = roles.counters().iter().map(|c| (c.name.clone(), c.unit.clone(), c.set.clone())).collect();
        let versions = header.sets.iter().map(|s| (s.schema.name.clone(), s.schema.version.to_string())).collect();
        Source { resource, counters, versions }
    }
}

/// A counter's sample.
#[derive(Clone, Copy, Debug)]
struct Point {
    file: usize,
    counter: u32,
    time_ns: u64,
    value: Number,
}

#[derive(Clone, Copy, Debug)]
enum Number {
    Int(i64),
    Double(f64),
}

/// What was sent and refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) spans: u64,
    pub(crate) spans_refused: u64,
    pub(crate) points: u64,
    pub(crate) points_refused: u64,
}

/// Spans and points batched into requests to a sink.
pub(crate) struct Batcher<S: Sink> {
    pub(crate) sources: Vec<Source>,
    spans: Vec<(usize, Span)>,
    points: Vec<Point>,
    pub(crate) sink: S,
    encoding: Encoding,
    pub(crate) counts: Counts,
}

impl<S: Sink> Batcher<S> {
    pub(crate) fn new(sources: Vec<Source>, sink: S, encoding: Encoding) -> Batcher<S> {
        Batcher { sources, spans: Vec::new(), points: Vec::new(), sink, encoding, counts: Counts::default() }
    }

    /// A span of log `file`; a full batch is sent.
    pub(crate) fn span(&mut self, file: usize, span: Span) -> io::Result<()> {
        self.spans.push((file, span));
        if self.spans.len() >= SPANS_PER_BATCH { self.flush_spans() } else { Ok(()) }
    }

    /// Counter `counter` of log `file` is `value` at `time_ns`; a full batch is sent.
    fn point(&mut self, point: Point) -> io::Result<()> {
        self.points.push(point);
        if self.points.len() >= POINTS_PER_BATCH { self.flush_points() } else { Ok(()) }
    }

    /// Sends the spans batched.
    pub(crate) fn flush_spans(&mut self) -> io::Result<()> {
        if self.spans.is_empty() {
            return Ok(());
        }
        let n = self.spans.len() as u64;
        let body = match self.encoding {
            Encoding::Proto => Body::Proto(spans_proto(&self.sources, &self.spans)),
            Encoding::Json => Body::Json(spans_json(&self.sources, &self.spans)),
        };
        self.spans.clear();
        let refused = self.sink.send(Signal::Traces, body, n)?;
        self.counts.spans += n - refused.min(n);
        self.counts.spans_refused += refused.min(n);
        Ok(())
    }

    fn flush_points(&mut self) -> io::Result<()> {
        if self.points.is_empty() {
            return Ok(());
        }
        let n = self.points.len() as u64;
        let body = match self.encoding {
            Encoding::Proto => Body::Proto(metrics_proto(&self.sources, &self.points)),
            Encoding::Json => Body::Json(metrics_json(&self.sources, &self.points)),
        };
        self.points.clear();
        let refused = self.sink.send(Signal::Metrics, body, n)?;
        self.counts.points += n - refused.min(n);
        self.counts.points_refused += refused.min(n);
        Ok(())
    }

    /// The spans and points batched, not yet sent.
    #[cfg_attr(not(feature = "otlp"), allow(dead_code, reason = "OTLP/HTTP's"))]
    pub(crate) fn pending(&self) -> (usize, usize) {
        (self.spans.len(), self.points.len())
    }

    /// Sends what is batched.
    #[cfg_attr(not(feature = "otlp"), allow(dead_code, reason = "OTLP/HTTP's"))]
    pub(crate) fn flush_all(&mut self) -> io::Result<()> {
        self.flush_spans()?;
        self.flush_points()
    }

    /// Sends what is batched and finishes the sink.
    pub(crate) fn finish(&mut self) -> io::Result<Counts> {
        self.flush_spans()?;
        self.flush_points()?;
        self.sink.finish()?;
        Ok(self.counts)
    }

    /// Counter samples of an event of log `file` at `time_ns`, as `roles` says it samples.
    pub(crate) fn samples(
        &mut self,
        roles: &Roles,
        file: usize,
        event: &event_format::decode::Event<'_>,
        time_ns: u64,
    ) -> io::Result<()> {
        let Some(role) = roles.of(event.desc.wire) else { return Ok(()) };
        for c in &role.counters {
            let Some(value) = event.values().nth(c.param) else { continue };
            let value = match value {
                Value::Word(v) | Value::Pointer(v) | Value::Address(v) => {
                    i64::try_from(v).map_or(Number::Double(v as f64), Number::Int)
                }
                Value::Unsigned(v) => Number::Int(i64::from(v)),
                Value::Signed(v) => Number::Int(v),
                Value::Double(v) => Number::Double(v),
                Value::Bool(b) => Number::Int(i64::from(b)),
                Value::Str(_) => continue,
            };
            self.point(Point { file, counter: c.counter, time_ns, value })?;
        }
        Ok(())
    }
}

/// The requests as files: the spans' and the counters' (created when the first request of
/// each comes), each written under `.partial` and renamed by [`FileSink::finish`].
pub(crate) struct FileSink {
    paths: [PathBuf; 2],
    files: [Option<(PathBuf, BufWriter<File>)>; 2],
}

impl FileSink {
    /// The sink writing the spans to `out` and the counters beside it ([`metrics_path`]).
    pub(crate) fn new(out: &Path) -> Result<FileSink, DumpError> {
        if out.is_dir() {
            return Err(DumpError::new(format!(
                "{}: is a directory; give a file name for the spans, such as spans.pb or spans.json",
                out.display()
            )));
        }
        Ok(FileSink { paths: [out.to_owned(), metrics_path(out)], files: [None, None] })
    }

    /// Removes what was written.
    pub(crate) fn abandon(&mut self) {
        for (partial, _) in self.files.iter_mut().filter_map(Option::take) {
            let _ = std::fs::remove_file(partial);
        }
    }

    /// Where each file is, for the report: the spans' and, if any was written, the counters'.
    pub(crate) fn written(&self) -> Vec<&Path> {
        let mut out = vec![self.paths[0].as_path()];
        if self.files[1].is_some() {
            out.push(&self.paths[1]);
        }
        out
    }
}

/// The file the counters of an export to `out` go to: `.metrics` before its extension
/// (`spans.pb`: `spans.metrics.pb`; `spans`: `spans.metrics`).
pub(crate) fn metrics_path(out: &Path) -> PathBuf {
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match out.extension() {
        Some(ext) => format!("{stem}.metrics.{}", ext.to_string_lossy()),
        None => format!("{stem}.metrics"),
    };
    out.with_file_name(name)
}

impl Sink for FileSink {
    fn send(&mut self, signal: Signal, body: Body, _items: u64) -> io::Result<u64> {
        let i = usize::from(signal == Signal::Metrics);
        if self.files[i].is_none() {
            let mut partial = self.paths[i].clone().into_os_string();
            partial.push(".partial");
            let partial = PathBuf::from(partial);
            let file = File::create(&partial)?;
            self.files[i] = Some((partial, BufWriter::with_capacity(1 << 16, file)));
        }
        let Some((_, out)) = self.files[i].as_mut() else { return Ok(0) };
        match body {
            Body::Proto(bytes) => out.write_all(&bytes)?,
            Body::Json(text) => {
                out.write_all(text.as_bytes())?;
                out.write_all(b"\n")?;
            }
        }
        Ok(0)
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.files[0].is_none() {
            // No span: an empty request (zero bytes in protobuf), so that the file says so.
            let mut partial = self.paths[0].clone().into_os_string();
            partial.push(".partial");
            let partial = PathBuf::from(partial);
            let file = File::create(&partial)?;
            self.files[0] = Some((partial, BufWriter::new(file)));
        }
        for (i, slot) in self.files.iter_mut().enumerate() {
            if let Some((partial, out)) = slot.as_mut() {
                out.flush()?;
                out.get_ref().sync_all()?;
                std::fs::rename(&*partial, &self.paths[i])?;
            }
        }
        Ok(())
    }
}

// ---- Protobuf ----

fn any_value(p: &mut Proto, value: &Attr) {
    p.message(field::VALUE, |p| match value {
        Attr::Str(s) => p.bytes(field::STRING_VALUE, s.as_bytes()),
        Attr::Bool(b) => p.uint(field::BOOL_VALUE, u64::from(*b)),
        Attr::Int(i) => p.int(field::INT_VALUE, *i),
        Attr::Double(x) => p.double(field::DOUBLE_VALUE, *x),
    });
}

fn key_values(p: &mut Proto, at: u32, attributes: &[(String, Attr)]) {
    for (key, value) in attributes {
        p.message(at, |p| {
            p.bytes(field::KEY, key.as_bytes());
            any_value(p, value);
        });
    }
}

fn resource_proto(p: &mut Proto, resource: &Resource) {
    p.message(field::RESOURCE, |p| key_values(p, field::RESOURCE_ATTRIBUTES, &resource.attributes));
}

fn scope_proto(p: &mut Proto, (name, version): (&str, &str)) {
    p.message(field::SCOPE, |p| {
        p.bytes(field::SCOPE_NAME, name.as_bytes());
        if !version.is_empty() {
            p.bytes(field::SCOPE_VERSION, version.as_bytes());
        }
    });
}

/// The spans of a batch grouped by log, then by scope, in the order they came.
fn grouped(spans: &[(usize, Span)]) -> BTreeMap<usize, BTreeMap<(&str, &str), Vec<&Span>>> {
    let mut by: BTreeMap<usize, BTreeMap<(&str, &str), Vec<&Span>>> = BTreeMap::new();
    for (file, span) in spans {
        by.entry(*file).or_default().entry((span.scope.0.as_str(), span.scope.1.as_str())).or_default().push(span);
    }
    by
}

fn span_flags(span: &Span) -> u32 {
    HAS_IS_REMOTE | SAMPLED | if span.remote_parent { IS_REMOTE } else { 0 }
}

fn span_proto(p: &mut Proto, span: &Span) {
    p.bytes(field::TRACE_ID, &span.trace_id);
    p.bytes(field::SPAN_ID, &span.span_id);
    if !span.trace_state.is_empty() {
        p.bytes(field::TRACE_STATE, span.trace_state.as_bytes());
    }
    if let Some(parent) = &span.parent {
        p.bytes(field::PARENT_SPAN_ID, parent);
    }
    p.bytes(field::NAME, span.name.as_bytes());
    p.uint(field::KIND, span.kind as u64);
    p.fixed64(field::START, span.start_ns);
    p.fixed64(field::END, span.end_ns);
    key_values(p, field::ATTRIBUTES, &span.attributes.list);
    if span.attributes.dropped > 0 {
        p.uint(field::DROPPED_ATTRIBUTES, u64::from(span.attributes.dropped));
    }
    for e in &span.events {
        p.message(field::EVENTS, |p| {
            p.fixed64(field::EVENT_TIME, e.time_ns);
            p.bytes(field::EVENT_NAME, e.name.as_bytes());
            key_values(p, field::EVENT_ATTRIBUTES, &e.attributes.list);
            if e.attributes.dropped > 0 {
                p.uint(field::EVENT_DROPPED_ATTRIBUTES, u64::from(e.attributes.dropped));
            }
        });
    }
    if span.dropped_events > 0 {
        p.uint(field::DROPPED_EVENTS, u64::from(span.dropped_events));
    }
    for l in &span.links {
        p.message(field::LINKS, |p| {
            p.bytes(field::LINK_TRACE_ID, &l.trace_id);
            p.bytes(field::LINK_SPAN_ID, &l.span_id);
            key_values(p, field::LINK_ATTRIBUTES, &l.attributes());
            p.fixed32(field::LINK_FLAGS, HAS_IS_REMOTE | SAMPLED);
        });
    }
    if span.dropped_links > 0 {
        p.uint(field::DROPPED_LINKS, u64::from(span.dropped_links));
    }
    p.message(field::STATUS, |p| {
        if !span.status_message.is_empty() {
            p.bytes(field::STATUS_MESSAGE, span.status_message.as_bytes());
        }
        if span.status as u64 != 0 {
            p.uint(field::STATUS_CODE, span.status as u64);
        }
    });
    p.fixed32(field::FLAGS, span_flags(span));
}

/// An `ExportTraceServiceRequest` of the batch `spans`.
pub(crate) fn spans_proto(sources: &[Source], spans: &[(usize, Span)]) -> Vec<u8> {
    let mut p = Proto::default();
    for (file, scopes) in grouped(spans) {
        p.message(field::RESOURCE_DATA, |p| {
            resource_proto(p, &sources[file].resource);
            for (scope, spans) in &scopes {
                p.message(field::SCOPE_DATA, |p| {
                    scope_proto(p, *scope);
                    for span in spans {
                        p.message(field::SCOPE_ITEMS, |p| span_proto(p, span));
                    }
                });
            }
        });
    }
    p.buf
}

/// The points of a batch by log, then set (scope), then counter.
type PointsBy<'a> = BTreeMap<usize, BTreeMap<&'a str, BTreeMap<u32, Vec<&'a Point>>>>;

fn points_grouped<'a>(sources: &'a [Source], points: &'a [Point]) -> PointsBy<'a> {
    let mut by: PointsBy<'a> = BTreeMap::new();
    for point in points {
        let set = sources[point.file].counters.get(point.counter as usize).map_or("", |c| c.2.as_str());
        by.entry(point.file).or_default().entry(set).or_default().entry(point.counter).or_default().push(point);
    }
    by
}

/// An `ExportMetricsServiceRequest` of the batch `points`: a gauge per counter.
fn metrics_proto(sources: &[Source], points: &[Point]) -> Vec<u8> {
    let mut p = Proto::default();
    for (file, sets) in points_grouped(sources, points) {
        let source = &sources[file];
        p.message(field::RESOURCE_DATA, |p| {
            resource_proto(p, &source.resource);
            for (set, counters) in &sets {
                let version = source.versions.get(*set).map_or("", String::as_str);
                p.message(field::SCOPE_DATA, |p| {
                    scope_proto(p, (set, version));
                    for (counter, points) in counters {
                        let (name, unit, _) = &source.counters[*counter as usize];
                        p.message(field::SCOPE_ITEMS, |p| {
                            p.bytes(field::METRIC_NAME, name.as_bytes());
                            if !unit.is_empty() {
                                p.bytes(field::METRIC_UNIT, unit.as_bytes());
                            }
                            p.message(field::GAUGE, |p| {
                                for point in points {
                                    p.message(field::DATA_POINTS, |p| {
                                        p.fixed64(field::POINT_TIME, point.time_ns);
                                        match point.value {
                                            Number::Int(i) => p.sfixed64(field::AS_INT, i),
                                            Number::Double(x) => p.double(field::AS_DOUBLE, x),
                                        }
                                    });
                                }
                            });
                        });
                    }
                });
            }
        });
    }
    p.buf
}

// ---- JSON (the protobuf JSON mapping, with OTLP's hex ids) ----

fn json_str(out: &mut String, s: &str) {
    crate::json::string(out, s);
}

fn json_any(out: &mut String, value: &Attr) {
    match value {
        Attr::Str(s) => {
            out.push_str("{\"stringValue\":");
            json_str(out, s);
        }
        Attr::Bool(b) => out.push_str(if *b { "{\"boolValue\":true" } else { "{\"boolValue\":false" }),
        Attr::Int(i) => out.push_str(&format!("{{\"intValue\":\"{i}\"")),
        Attr::Double(x) => {
            out.push_str("{\"doubleValue\":");
            json_double(out, *x);
        }
    }
    out.push('}');
}

/// A double as proto3's JSON writes one: a number, or `"NaN"`, `"Infinity"`, `"-Infinity"`.
fn json_double(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("\"NaN\"");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "\"Infinity\"" } else { "\"-Infinity\"" });
    } else {
        out.push_str(&format!("{x:?}"));
    }
}

fn json_attributes(out: &mut String, attributes: &[(String, Attr)]) {
    out.push('[');
    for (i, (key, value)) in attributes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"key\":");
        json_str(out, key);
        out.push_str(",\"value\":");
        json_any(out, value);
        out.push('}');
    }
    out.push(']');
}

fn json_resource(out: &mut String, resource: &Resource) {
    out.push_str("\"resource\":{\"attributes\":");
    json_attributes(out, &resource.attributes);
    out.push('}');
}

fn json_scope(out: &mut String, (name, version): (&str, &str)) {
    out.push_str("\"scope\":{\"name\":");
    json_str(out, name);
    if !version.is_empty() {
        out.push_str(",\"version\":");
        json_str(out, version);
    }
    out.push('}');
}

fn json_span(out: &mut String, span: &Span) {
    use crate::spans::hex;
    out.push_str(&format!("{{\"traceId\":\"{}\",\"spanId\":\"{}\"", hex(&span.trace_id), hex(&span.span_id)));
    if !span.trace_state.is_empty() {
        out.push_str(",\"traceState\":");
        json_str(out, &span.trace_state);
    }
    if let Some(parent) = &span.parent {
        out.push_str(&format!(",\"parentSpanId\":\"{}\"", hex(parent)));
    }
    out.push_str(&format!(",\"flags\":{},\"name\":", span_flags(span)));
    json_str(out, &span.name);
    out.push_str(&format!(
        ",\"kind\":{},\"startTimeUnixNano\":\"{}\",\"endTimeUnixNano\":\"{}\",\"attributes\":",
        span.kind as u8, span.start_ns, span.end_ns
    ));
    json_attributes(out, &span.attributes.list);
    if span.attributes.dropped > 0 {
        out.push_str(&format!(",\"droppedAttributesCount\":{}", span.attributes.dropped));
    }
    if !span.events.is_empty() {
        out.push_str(",\"events\":[");
        for (i, e) in span.events.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&format!("{{\"timeUnixNano\":\"{}\",\"name\":", e.time_ns));
            json_str(out, &e.name);
            out.push_str(",\"attributes\":");
            json_attributes(out, &e.attributes.list);
            if e.attributes.dropped > 0 {
                out.push_str(&format!(",\"droppedAttributesCount\":{}", e.attributes.dropped));
            }
            out.push('}');
        }
        out.push(']');
    }
    if span.dropped_events > 0 {
        out.push_str(&format!(",\"droppedEventsCount\":{}", span.dropped_events));
    }
    if !span.links.is_empty() {
        out.push_str(",\"links\":[");
        for (i, l) in span.links.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&format!(
                "{{\"traceId\":\"{}\",\"spanId\":\"{}\",\"attributes\":",
                hex(&l.trace_id),
                hex(&l.span_id)
            ));
            json_attributes(out, &l.attributes());
            out.push_str(&format!(",\"flags\":{}}}", HAS_IS_REMOTE | SAMPLED));
        }
        out.push(']');
    }
    if span.dropped_links > 0 {
        out.push_str(&format!(",\"droppedLinksCount\":{}", span.dropped_links));
    }
    out.push_str(",\"status\":{");
    let mut comma = false;
    if !span.status_message.is_empty() {
        out.push_str("\"message\":");
        json_str(out, &span.status_message);
        comma = true;
    }
    if span.status as u8 != 0 {
        if comma {
            out.push(',');
        }
        out.push_str(&format!("\"code\":{}", span.status as u8));
    }
    out.push_str("}}");
}

/// An `ExportTraceServiceRequest` of the batch `spans` in OTLP JSON, on one line.
pub(crate) fn spans_json(sources: &[Source], spans: &[(usize, Span)]) -> String {
    let mut out = String::from("{\"resourceSpans\":[");
    for (i, (file, scopes)) in grouped(spans).into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('{');
        json_resource(&mut out, &sources[file].resource);
        out.push_str(",\"scopeSpans\":[");
        for (j, (scope, spans)) in scopes.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            out.push('{');
            json_scope(&mut out, *scope);
            out.push_str(",\"spans\":[");
            for (k, span) in spans.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                json_span(&mut out, span);
            }
            out.push_str("]}");
        }
        out.push_str("]}");
    }
    out.push_str("]}");
    out
}

fn metrics_json(sources: &[Source], points: &[Point]) -> String {
    let mut out = String::from("{\"resourceMetrics\":[");
    for (i, (file, sets)) in points_grouped(sources, points).into_iter().enumerate() {
        let source = &sources[file];
        if i > 0 {
            out.push(',');
        }
        out.push('{');
        json_resource(&mut out, &source.resource);
        out.push_str(",\"scopeMetrics\":[");
        for (j, (set, counters)) in sets.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            out.push('{');
            json_scope(&mut out, (set, source.versions.get(*set).map_or("", String::as_str)));
            out.push_str(",\"metrics\":[");
            for (k, (counter, points)) in counters.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                let (name, unit, _) = &source.counters[*counter as usize];
                out.push_str("{\"name\":");
                json_str(&mut out, name);
                if !unit.is_empty() {
                    out.push_str(",\"unit\":");
                    json_str(&mut out, unit);
                }
                out.push_str(",\"gauge\":{\"dataPoints\":[");
                for (m, point) in points.iter().enumerate() {
                    if m > 0 {
                        out.push(',');
                    }
                    out.push_str(&format!("{{\"timeUnixNano\":\"{}\",", point.time_ns));
                    match point.value {
                        Number::Int(v) => out.push_str(&format!("\"asInt\":\"{v}\"}}")),
                        Number::Double(x) => {
                            out.push_str("\"asDouble\":");
                            json_double(&mut out, x);
                            out.push('}');
                        }
                    }
                }
                out.push_str("]}}");
            }
            out.push_str("]}");
        }
        out.push_str("]}");
    }
    out.push_str("]}");
    out
}

// ---- The export ----

/// The service name and extra resource attributes the OpenTelemetry SDKs take from the
/// environment: `OTEL_SERVICE_NAME` (a log without a `service` label), `OTEL_RESOURCE_ATTRIBUTES`
/// (`key=value,...`, percent-encoded; added after the log's own).
pub(crate) fn environment_resource() -> (Option<String>, Vec<(String, String)>) {
    let service = std::env::var("OTEL_SERVICE_NAME").ok().filter(|s| !s.trim().is_empty());
    let extra = std::env::var("OTEL_RESOURCE_ATTRIBUTES").map(|v| key_value_list(&v)).unwrap_or_default();
    (service, extra)
}

/// `key=value,key=value` (the W3C Baggage form the OTel variables use), each part
/// percent-decoded and trimmed; a part without `=` is skipped.
pub(crate) fn key_value_list(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|part| {
            let (k, v) = part.split_once('=')?;
            let (k, v) = (percent_decode(k.trim()), percent_decode(v.trim()));
            (!k.is_empty()).then_some((k, v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(h) = bytes.get(i + 1..i + 3)
            && let Ok(v) = u8::from_str_radix(std::str::from_utf8(h).unwrap_or("zz"), 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads `logs` through the merge into `batcher`: each log's spans (its [`SpanModel`]) and
/// counter samples, as `window` chooses (a span by its begin). What could not be paired, per
/// log.
pub(crate) fn send_logs<S: Sink>(
    logs: &mut [Log],
    batcher: &mut Batcher<S>,
    window: &mut Window,
) -> io::Result<(Vec<event_format::ledger::Ledger>, crate::spans::Unpaired)> {
    let mut models: Vec<SpanModel> = logs.iter().map(SpanModel::of).collect();
    let roles: Vec<Roles> = logs.iter().map(|l| Roles::new(&l.header().sets)).collect();
    let clocks: Vec<_> = logs.iter().map(|l| l.header().clock).collect();
    let ledgers = super::merge_all(logs, "exported", |Item { file, event }| {
        let selected = window.keeps(file, &event);
        let mut spans = Vec::new();
        models[file].event(&event, selected, &mut |span| spans.push(span));
        for span in spans {
            batcher.span(file, span)?;
        }
        if selected {
            let ns = u64::try_from(clocks[file].wall_ns(event.time).max(0)).unwrap_or(u64::MAX);
            batcher.samples(&roles[file], file, &event, ns)?;
        }
        Ok(())
    })?;
    let mut unpaired = crate::spans::Unpaired::default();
    for m in &models {
        let u = m.finish();
        unpaired.unended += u.unended;
        unpaired.unmatched += u.unmatched;
    }
    Ok((ledgers, unpaired))
}

/// The OTLP/HTTP endpoint that `-o` names (`http://HOST:PORT`, `https://...`), if it names
/// one rather than a file.
pub(crate) fn endpoint(out: &Path) -> Option<&str> {
    out.to_str().filter(|o| o.starts_with("http://") || o.starts_with("https://"))
}

/// What each of `logs` brings to every request, with the service name and resource
/// attributes of the environment ([`environment_resource`]).
pub(crate) fn sources(logs: &[Log]) -> Vec<Source> {
    let (service, extra) = environment_resource();
    logs.iter().map(|l| Source::new(l, service.as_deref(), &extra)).collect()
}

/// `export --to otlp -o FILE`: protobuf, or OTLP JSON for a name ending in `.json` or
/// `.jsonl`. (To an endpoint, `otlp_http` sends.)
pub(crate) fn export(logs: &mut [Log], out: &Path, window: &mut Window) -> Result<ExitCode, DumpError> {
    let sources = sources(logs);
    let json = out.extension().is_some_and(|e| e == "json" || e == "jsonl");
    let encoding = if json { Encoding::Json } else { Encoding::Proto };
    let mut batcher = Batcher::new(sources, FileSink::new(out)?, encoding);
    let sent = send_logs(logs, &mut batcher, window).and_then(|r| Ok((r, batcher.finish()?)));
    let ((ledgers, unpaired), counts) = match sent {
        Ok(s) => s,
        Err(e) => {
            batcher.sink.abandon();
            return Err(DumpError::new(format!("{}: cannot write: {e}", out.display())));
        }
    };
    let files: Vec<String> = batcher.sink.written().iter().map(|p| p.display().to_string()).collect();
    println!("{} spans and {} data points written to {}", counts.spans, counts.points, files.join(" and "));
    report(&ledgers, unpaired, window);
    Ok(ExitCode::SUCCESS)
}

/// The line that says what was sent to `shown` and refused.
#[cfg_attr(not(feature = "otlp"), allow(dead_code, reason = "OTLP/HTTP's"))]
pub(crate) fn say_counts(shown: &str, counts: Counts) {
    let refused = if counts.spans_refused + counts.points_refused > 0 {
        format!("; refused: {} spans and {} data points", counts.spans_refused, counts.points_refused)
    } else {
        String::new()
    };
    println!("{} spans and {} data points sent to {shown}{refused}", counts.spans, counts.points);
}

/// Says on stderr what the logs lacked and what could not be paired.
pub(crate) fn report(ledgers: &[event_format::ledger::Ledger], unpaired: crate::spans::Unpaired, window: &Window) {
    let mut notes = Vec::new();
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if unpaired.unended > 0 {
        notes.push(format!(
            "{} never ended (not sent: no end time is invented)",
            plural(unpaired.unended, "span", "spans")
        ));
    }
    if unpaired.unmatched > 0 {
        notes.push(format!("{} with no open span", plural(unpaired.unmatched, "span end", "span ends")));
    }
    super::Said::of(ledgers).report("otlp", &notes, window);
}
