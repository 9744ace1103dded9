//! The dataset's `spans` table: one row per span of the span model (`crate::spans`), in the
//! shape of ClickHouse's OpenTelemetry table `otel_traces` (the collector's ClickHouse
//! exporter's), so that ClickHouse, DuckDB and the others load it as it is, and with the ids
//! OTLP sends: `log` (the dataset's name of the log, as every table has it), then
//! `Timestamp` `TIMESTAMP(NANOS, UTC)`, `TraceId`, `SpanId`, `ParentSpanId` (hex, empty for a
//! root), `TraceState`, `SpanName`, `SpanKind`, `ServiceName`, `ResourceAttributes`
//! `MAP<STRING, STRING>`, `ScopeName`, `ScopeVersion`, `SpanAttributes` `MAP<STRING, STRING>`,
//! `Duration` `INT64` (ns), `StatusCode`, `StatusMessage`, and ClickHouse's flattened `Nested`
//! columns `Events.Timestamp` `LIST<TIMESTAMP(NANOS)>`, `Events.Name` `LIST<STRING>`,
//! `Events.Attributes` `LIST<MAP>`, `Links.TraceId`, `Links.SpanId`, `Links.TraceState`
//! `LIST<STRING>` and `Links.Attributes` `LIST<MAP>`. Attribute values are text (ClickHouse's
//! maps hold strings). docs/OUTPUT.md ("spans") is the contract.
//!
//! Nested columns are written as their leaves with Parquet's definition and repetition
//! levels ([`Buffer::Nested`]): a map is `required group (MAP) { repeated group key_value {
//! required key; required value } }`, a list `required group (LIST) { repeated group list {
//! required element } }`.

use super::encode::{Buffer, Strings};
use crate::spans::{Attr, Span, hex};
use parquet::basic::{LogicalType, Repetition, TimeUnit, Type as Physical};
use parquet::schema::types::{Type, TypePtr};
use std::sync::Arc;

/// The table's directory.
pub(super) const SPANS: &str = "spans";

/// The top-level columns whose values seldom repeat: no dictionary.
pub(super) const UNIQUE: [&str; 5] = ["Timestamp", "TraceId", "SpanId", "ParentSpanId", "Duration"];

fn primitive(name: &str, physical: Physical, logical: Option<LogicalType>) -> TypePtr {
    Arc::new(
        Type::primitive_type_builder(name, physical)
            .with_logical_type(logical)
            .with_repetition(Repetition::REQUIRED)
            .build()
            .unwrap_or_else(|e| unreachable!("a fixed column: {e}")),
    )
}

fn text(name: &str) -> TypePtr {
    primitive(name, Physical::BYTE_ARRAY, Some(LogicalType::String))
}

fn nanos(name: &str) -> TypePtr {
    primitive(name, Physical::INT64, Some(LogicalType::timestamp(true, TimeUnit::NANOS)))
}

fn group(name: &str, repetition: Repetition, logical: Option<LogicalType>, fields: Vec<TypePtr>) -> TypePtr {
    Arc::new(
        Type::group_type_builder(name)
            .with_repetition(repetition)
            .with_logical_type(logical)
            .with_fields(fields)
            .build()
            .unwrap_or_else(|e| unreachable!("a fixed group: {e}")),
    )
}

/// `MAP<STRING, STRING>` named `name`.
fn map(name: &str) -> TypePtr {
    let entry = group("key_value", Repetition::REPEATED, None, vec![text("key"), text("value")]);
    group(name, Repetition::REQUIRED, Some(LogicalType::Map), vec![entry])
}

/// `LIST<element>` named `name`.
fn list(name: &str, element: TypePtr) -> TypePtr {
    let repeated = group("list", Repetition::REPEATED, None, vec![element]);
    group(name, Repetition::REQUIRED, Some(LogicalType::List), vec![repeated])
}

/// A map as a list's element (named `element`).
fn map_element() -> TypePtr {
    map("element")
}

/// The table's columns.
pub(super) fn fields() -> Vec<TypePtr> {
    vec![
        text("log"),
        nanos("Timestamp"),
        text("TraceId"),
        text("SpanId"),
        text("ParentSpanId"),
        text("TraceState"),
        text("SpanName"),
        text("SpanKind"),
        text("ServiceName"),
        map("ResourceAttributes"),
        text("ScopeName"),
        text("ScopeVersion"),
        map("SpanAttributes"),
        primitive("Duration", Physical::INT64, None),
        text("StatusCode"),
        text("StatusMessage"),
        list("Events.Timestamp", nanos("element")),
        list("Events.Name", text("element")),
        list("Events.Attributes", map_element()),
        list("Links.TraceId", text("element")),
        list("Links.SpanId", text("element")),
        list("Links.TraceState", text("element")),
        list("Links.Attributes", map_element()),
    ]
}

fn strings() -> Buffer {
    Buffer::Str(Strings::default(), None)
}

fn nested_strings() -> Buffer {
    Buffer::Nested(Box::new(strings()), Vec::new(), Vec::new())
}

/// The buffers of the table's leaf columns, in order.
pub(super) fn buffers() -> Vec<Buffer> {
    let mut b = vec![Buffer::Id(0), Buffer::I64(Vec::new())];
    b.extend((0..7).map(|_| strings())); // TraceId .. ServiceName
    b.extend([nested_strings(), nested_strings()]); // ResourceAttributes
    b.extend([strings(), strings()]); // ScopeName, ScopeVersion
    b.extend([nested_strings(), nested_strings()]); // SpanAttributes
    b.push(Buffer::I64(Vec::new())); // Duration
    b.extend([strings(), strings()]); // StatusCode, StatusMessage
    b.push(Buffer::Nested(Box::new(Buffer::I64(Vec::new())), Vec::new(), Vec::new())); // Events.Timestamp
    b.push(nested_strings()); // Events.Name
    b.extend([nested_strings(), nested_strings()]); // Events.Attributes
    b.extend([nested_strings(), nested_strings(), nested_strings()]); // Links.*
    b.extend([nested_strings(), nested_strings()]); // Links.Attributes
    b
}

fn push_str(buffer: &mut Buffer, s: &str) {
    if let Buffer::Str(v, _) = buffer {
        v.push(s.as_bytes());
    }
}

fn push_i64(buffer: &mut Buffer, x: i64) {
    if let Buffer::I64(v) = buffer {
        v.push(x);
    }
}

/// One level's value (or, `None`, an empty slot) into a nested leaf.
fn push_level(buffer: &mut Buffer, value: Option<NestedValue<'_>>, def: i16, rep: i16) {
    let Buffer::Nested(values, defs, reps) = buffer else { return };
    match value {
        Some(NestedValue::Str(s)) => push_str(values, s),
        Some(NestedValue::Int(x)) => push_i64(values, x),
        None => {}
    }
    defs.push(def);
    reps.push(rep);
}

enum NestedValue<'a> {
    Str(&'a str),
    Int(i64),
}

/// A row's list of `items` into a list leaf: an empty list is one empty slot.
fn push_list<'a>(buffer: &mut Buffer, items: impl ExactSizeIterator<Item = NestedValue<'a>>) {
    if items.len() == 0 {
        push_level(buffer, None, 0, 0);
    }
    for (i, item) in items.enumerate() {
        push_level(buffer, Some(item), 1, i16::from(i > 0));
    }
}

/// A row's map `entries` into its two leaves (keys, values).
fn push_map(keys: &mut Buffer, values: &mut Buffer, entries: &[(String, String)]) {
    push_list(keys, entries.iter().map(|(k, _)| NestedValue::Str(k)));
    push_list(values, entries.iter().map(|(_, v)| NestedValue::Str(v)));
}

/// A row's list of maps (`maps`, one per event or link) into its two leaves: an empty list
/// is one empty slot (level 0), an empty map an empty element (level 1), an entry level 2;
/// the repetition level says where a new list (0), element (1) or entry (2) starts.
fn push_list_of_maps(keys: &mut Buffer, values: &mut Buffer, maps: &[Vec<(String, String)>]) {
    if maps.is_empty() {
        push_level(keys, None, 0, 0);
        push_level(values, None, 0, 0);
    }
    for (j, entries) in maps.iter().enumerate() {
        let element_rep = i16::from(j > 0);
        if entries.is_empty() {
            push_level(keys, None, 1, element_rep);
            push_level(values, None, 1, element_rep);
        }
        for (i, (k, v)) in entries.iter().enumerate() {
            let rep = if i == 0 { element_rep } else { 2 };
            push_level(keys, Some(NestedValue::Str(k)), 2, rep);
            push_level(values, Some(NestedValue::Str(v)), 2, rep);
        }
    }
}

/// Attributes as text, as ClickHouse's maps hold them.
pub(crate) fn text_attributes(list: &[(String, Attr)]) -> Vec<(String, String)> {
    list.iter().map(|(k, v)| (k.clone(), v.text())).collect()
}

/// What a span's row is made of, beside the span: the log's service and resource (as text).
pub(super) struct Resource<'a> {
    pub(super) service: &'a str,
    pub(super) attributes: &'a [(String, String)],
}

/// The nanoseconds since the epoch of `ns` as an INT64 (saturated).
fn signed(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}

/// Pushes `span`'s row into `buffers` (of [`buffers`]); about the bytes it added.
pub(super) fn push_span(b: &mut [Buffer], resource: &Resource<'_>, span: &Span) -> usize {
    let [
        log,
        timestamp,
        trace,
        id,
        parent,
        state,
        name,
        kind,
        service,
        ra_k,
        ra_v,
        scope,
        version,
        sa_k,
        sa_v,
        duration,
        code,
        message,
        e_t,
        e_n,
        e_a_k,
        e_a_v,
        l_t,
        l_s,
        l_ts,
        l_a_k,
        l_a_v,
    ] = b
    else {
        return 0;
    };
    if let Buffer::Id(rows) = log {
        *rows += 1;
    }
    push_i64(timestamp, signed(span.start_ns));
    let ids = (hex(&span.trace_id), hex(&span.span_id), span.parent.map(|p| hex(&p)).unwrap_or_default());
    push_str(trace, &ids.0);
    push_str(id, &ids.1);
    push_str(parent, &ids.2);
    push_str(state, &span.trace_state);
    push_str(name, &span.name);
    push_str(kind, span.kind.name());
    push_str(service, resource.service);
    push_map(ra_k, ra_v, resource.attributes);
    push_str(scope, &span.scope.0);
    push_str(version, &span.scope.1);
    let attributes = text_attributes(&span.attributes.list);
    push_map(sa_k, sa_v, &attributes);
    push_i64(duration, signed(span.duration_ns()));
    push_str(code, span.status.name());
    push_str(message, &span.status_message);
    push_list(e_t, span.events.iter().map(|e| NestedValue::Int(signed(e.time_ns))));
    push_list(e_n, span.events.iter().map(|e| NestedValue::Str(&e.name)));
    let event_maps: Vec<Vec<(String, String)>> =
        span.events.iter().map(|e| text_attributes(&e.attributes.list)).collect();
    push_list_of_maps(e_a_k, e_a_v, &event_maps);
    let links: Vec<(String, String)> = span.links.iter().map(|l| (hex(&l.trace_id), hex(&l.span_id))).collect();
    push_list(l_t, links.iter().map(|(t, _)| NestedValue::Str(t)));
    push_list(l_s, links.iter().map(|(_, s)| NestedValue::Str(s)));
    push_list(l_ts, links.iter().map(|_| NestedValue::Str("")));
    let link_maps: Vec<Vec<(String, String)>> = span.links.iter().map(|l| text_attributes(&l.attributes())).collect();
    push_list_of_maps(l_a_k, l_a_v, &link_maps);
    let strings = |m: &[(String, String)]| m.iter().map(|(k, v)| k.len() + v.len() + 8).sum::<usize>();
    200 + span.name.len()
        + strings(resource.attributes)
        + strings(&attributes)
        + event_maps.iter().map(|m| strings(m) + 40).sum::<usize>()
        + link_maps.iter().map(|m| strings(m) + 60).sum::<usize>()
}
