//! The spans of a log as the fleet's tools see them: one model, which every reader that hands
//! spans on builds them with (the OTLP export and `follow --otlp`, the Parquet dataset's and
//! the SQLite export's `spans` tables), so that one span has the same ids, parent, attributes,
//! status, events and links wherever it goes. docs/OUTPUT.md ("Spans") states the mapping;
//! this is its reference.
//!
//! - **Which spans.** What the log's roles (`event_format::roles`) pair: the spans events.def
//!   declares (`SPAN`) or names (`FooBegin`/`FooEnd`), and the `tracing` bridge's spans
//!   (`SpanOpen`/`SpanClose`, one span per `tracing` span). The bridge's `SpanEnter`/`SpanExit`
//!   are a span's polls, not spans, in a log of format 2.1.0 or later (which has `SpanOpen`);
//!   in an older log they are its only `tracing` spans, and are spans here. A span is handed
//!   on when it ends ([`SpanModel::event`]); one never ended is never given a time (counted,
//!   [`Unpaired`]).
//! - **Ids.** A span's 8-byte id and a root span's 16-byte trace id are derived from the
//!   recording id and the span's key, its begin's thread, ticks and ordinal (the begins
//!   before it on that thread at those ticks): [`derive`]. The same log read twice, whole or
//!   segment by segment, gives the same ids.
//! - **Parents.** A declared span's parent is the innermost span of its thread open at its
//!   begin, else the `tracing` span its thread is in (`SpanCurrent`); a `tracing` span's is
//!   its `parent` while that span is open. A child takes its parent's trace id. A W3C
//!   `traceparent` in a parameter (or a `tracing` field) of a span's begin makes that span a
//!   child of the remote parent it names, in its trace.
//! - **Attributes** are the begin's parameters and the end's (a name given twice takes the
//!   end's value), or a `tracing` span's fields (`SpanOpen`, then each `SpanRecord`), with
//!   `thread.id` and `thread.name`. **Status** is a parameter or field named `otel.status_code`
//!   or `status` ([`status_of`]). **Events** are the events recorded inside the span that are
//!   no span's begin or end and sample no counter. **Links** are `SpanFollows` and flows: a
//!   piece of work that goes on from one span into another links the second to the first.
//!
//! Memory is the spans open at once, bounded by the pairer's limits
//! (`event_format::roles::MAX_DEPTH`, `MAX_OPEN`), each with at most [`MAX_ITEMS`]
//! attributes, events and links (the rest counted as dropped, as OTLP carries them).

use crate::log::Log;
use event_format::builtin;
use event_format::builtins::BuiltinEvent;
use event_format::decode::Event;
use event_format::fields::FieldValue;
use event_format::roles::{FlowLink, Flows, IdValue, Pairer, Pairing, Role, Roles, SpanSource, SpanUse};
use event_format::wire::{Clock, Header, Value};
use std::collections::HashMap;

/// The most attributes, events and links a span keeps (OpenTelemetry SDKs' default limit);
/// beyond, they are counted as dropped.
pub(crate) const MAX_ITEMS: usize = 128;

/// A span's kind, OTLP's `Span.SpanKind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Internal = 1,
    Server = 2,
    Client = 3,
    Producer = 4,
    Consumer = 5,
}

impl Kind {
    /// As ClickHouse's `otel_traces.SpanKind` holds it (the proto's enum names).
    #[cfg_attr(not(any(feature = "sqlite", feature = "parquet")), allow(dead_code, reason = "the tables'"))]
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Internal => "SPAN_KIND_INTERNAL",
            Kind::Server => "SPAN_KIND_SERVER",
            Kind::Client => "SPAN_KIND_CLIENT",
            Kind::Producer => "SPAN_KIND_PRODUCER",
            Kind::Consumer => "SPAN_KIND_CONSUMER",
        }
    }

    fn parse(text: &str) -> Option<Kind> {
        match text.to_ascii_lowercase().as_str() {
            "internal" => Some(Kind::Internal),
            "server" => Some(Kind::Server),
            "client" => Some(Kind::Client),
            "producer" => Some(Kind::Producer),
            "consumer" => Some(Kind::Consumer),
            _ => None,
        }
    }
}

/// A span's status code, OTLP's `Status.StatusCode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum StatusCode {
    #[default]
    Unset = 0,
    Ok = 1,
    Error = 2,
}

impl StatusCode {
    /// As ClickHouse's `otel_traces.StatusCode` holds it.
    #[cfg_attr(not(any(feature = "sqlite", feature = "parquet")), allow(dead_code, reason = "the tables'"))]
    pub(crate) fn name(self) -> &'static str {
        match self {
            StatusCode::Unset => "STATUS_CODE_UNSET",
            StatusCode::Ok => "STATUS_CODE_OK",
            StatusCode::Error => "STATUS_CODE_ERROR",
        }
    }
}

/// An attribute's value, as OTLP's `AnyValue` carries it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Attr {
    Str(String),
    Int(i64),
    Double(f64),
    Bool(bool),
}

impl Attr {
    /// The value as text (ClickHouse's attribute maps hold strings): an integer in decimal,
    /// a double as Rust writes it, `true`/`false`.
    #[cfg_attr(not(any(feature = "sqlite", feature = "parquet")), allow(dead_code, reason = "the tables'"))]
    pub(crate) fn text(&self) -> String {
        match self {
            Attr::Str(s) => s.clone(),
            Attr::Int(i) => i.to_string(),
            Attr::Double(x) => x.to_string(),
            Attr::Bool(b) => b.to_string(),
        }
    }

    /// A parameter's value: `P` and `A` as `0x...` text, `W` and `U` as integers (a `W`
    /// above 2^63 - 1 as decimal text), `I`, `D`, `B`, and `S` as text (bytes that are not
    /// UTF-8 replaced).
    fn of_value(value: &Value<'_>) -> Attr {
        match *value {
            Value::Pointer(v) | Value::Address(v) => Attr::Str(format!("{v:#x}")),
            Value::Word(v) => i64::try_from(v).map_or_else(|_| Attr::Str(v.to_string()), Attr::Int),
            Value::Unsigned(v) => Attr::Int(i64::from(v)),
            Value::Signed(v) => Attr::Int(v),
            Value::Double(v) => Attr::Double(v),
            Value::Bool(b) => Attr::Bool(b),
            Value::Str(t) => Attr::Str(String::from_utf8_lossy(t.bytes).into_owned()),
        }
    }

    /// A `tracing` field's value (an integer beyond `i64` as decimal text).
    fn of_field(value: &FieldValue<'_>) -> Attr {
        match value {
            FieldValue::Int(i) => i64::try_from(*i).map_or_else(|_| Attr::Str(i.to_string()), Attr::Int),
            FieldValue::Float(x) => Attr::Double(*x),
            FieldValue::Bool(b) => Attr::Bool(*b),
            FieldValue::Str(s) => Attr::Str(s.to_string()),
        }
    }
}

/// Attributes by name, in the order first given; at most [`MAX_ITEMS`], the rest counted.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Attrs {
    pub(crate) list: Vec<(String, Attr)>,
    pub(crate) dropped: u32,
}

impl Attrs {
    /// Sets `key` to `value`: a key already there takes the new value.
    pub(crate) fn set(&mut self, key: &str, value: Attr) {
        if let Some(slot) = self.list.iter_mut().find(|(k, _)| k == key) {
            slot.1 = value;
        } else if self.list.len() < MAX_ITEMS {
            self.list.push((key.to_owned(), value));
        } else {
            self.dropped = self.dropped.saturating_add(1);
        }
    }

    fn get(&self, key: &str) -> Option<&Attr> {
        self.list.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// An event recorded inside a span (OTLP's `Span.Event`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SpanEvent {
    /// Nanoseconds since the Unix epoch.
    pub(crate) time_ns: u64,
    pub(crate) name: String,
    pub(crate) attributes: Attrs,
}

/// A link from a span to another (OTLP's `Span.Link`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    /// What made it: `flow` (and the flow's name in `flow`), or `follows_from`.
    pub(crate) why: &'static str,
    pub(crate) flow: String,
}

impl Link {
    /// The attributes OTLP gives it (and the tables, as text): `event.link` (why: `flow` or
    /// `follows_from`) and, for a flow, `event.flow` (its name).
    pub(crate) fn attributes(&self) -> Vec<(String, Attr)> {
        let mut a = vec![("event.link".to_owned(), Attr::Str(self.why.to_owned()))];
        if !self.flow.is_empty() {
            a.push(("event.flow".to_owned(), Attr::Str(self.flow.clone())));
        }
        a
    }
}

/// A span, ended: what every reader of this module hands on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Span {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    /// The parent's id; `None` for a root span.
    pub(crate) parent: Option<[u8; 8]>,
    /// The parent is another process's (a `traceparent`'s).
    pub(crate) remote_parent: bool,
    /// W3C `tracestate`, from a `tracestate` parameter or field beside a `traceparent`.
    pub(crate) trace_state: String,
    pub(crate) name: String,
    pub(crate) kind: Kind,
    /// The instrumentation scope: the span's event set (`tracing` for the bridge's spans),
    /// and its version.
    pub(crate) scope: (String, String),
    /// Nanoseconds since the Unix epoch.
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    /// The thread its begin was recorded on.
    pub(crate) thread: u64,
    pub(crate) attributes: Attrs,
    pub(crate) events: Vec<SpanEvent>,
    pub(crate) dropped_events: u32,
    pub(crate) links: Vec<Link>,
    pub(crate) dropped_links: u32,
    pub(crate) status: StatusCode,
    pub(crate) status_message: String,
}

impl Span {
    /// Its duration in nanoseconds (0 for an end timed before its begin).
    #[cfg_attr(not(any(feature = "sqlite", feature = "parquet")), allow(dead_code, reason = "the tables'"))]
    pub(crate) fn duration_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }
}

/// What a log's spans could not be: counted, never given a time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Unpaired {
    /// Spans still open at the end, cut by the end of an enclosing span, or given up.
    pub(crate) unended: u64,
    /// Ends that closed no span.
    pub(crate) unmatched: u64,
}

/// The resource of a log's spans and metrics (OTLP's `Resource`): who recorded it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Resource {
    /// `service.name`: the log's `service` label, else `OTEL_SERVICE_NAME` where the caller
    /// gives it, else the program's name.
    pub(crate) service: String,
    /// Every attribute, `service.name` first.
    pub(crate) attributes: Vec<(String, Attr)>,
}

/// The resource of the log `header` heads, whose recording id is `recording` (hex);
/// `fallback_service` names the service of a log without a `service` label (the OTLP export
/// passes `OTEL_SERVICE_NAME`; the tables, which hold nothing of the exporter, pass `None`).
pub(crate) fn resource(header: &Header, recording: &str, fallback_service: Option<&str>) -> Resource {
    let labels = &header.properties.labels;
    let label = |key: &str| labels.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let service = label("service")
        .or_else(|| fallback_service.filter(|s| !s.is_empty()).map(str::to_owned))
        .unwrap_or_else(|| header.producer.program.clone());
    let text = |s: &str| Attr::Str(s.to_owned());
    let mut attributes = vec![("service.name".to_owned(), text(&service))];
    if let Some(version) = label("version") {
        attributes.push(("service.version".to_owned(), text(&version)));
    }
    if let Some(instance) = label("instance") {
        attributes.push(("service.instance.id".to_owned(), text(&instance)));
    }
    if !header.producer.host.is_empty() {
        attributes.push(("host.name".to_owned(), text(&header.producer.host)));
    }
    attributes.push(("host.arch".to_owned(), text(&header.producer.arch)));
    attributes.push(("os.type".to_owned(), text(&header.producer.os)));
    attributes.push(("process.pid".to_owned(), Attr::Int(i64::from_ne_bytes(header.producer.pid.to_ne_bytes()))));
    attributes.push(("process.executable.name".to_owned(), text(&header.producer.program)));
    attributes.push(("event.recording.id".to_owned(), text(recording)));
    for (key, value) in labels {
        if !matches!(key.as_str(), "service" | "version" | "instance") {
            attributes.push((key.clone(), text(value)));
        }
    }
    Resource { service, attributes }
}

/// 16 bytes derived from `input` under `domain` (docs/OUTPUT.md, "Span ids"): 128-bit
/// FNV-1a over the domain's bytes then the input's, then its two 64-bit halves mixed
/// (MurmurHash3's finalizer) so that every input bit reaches every output bit; the result
/// is the high half's 8 bytes then the low half's, most significant first.
pub(crate) fn derive(domain: &[u8], input: &[u8]) -> [u8; 16] {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    let mut h = OFFSET;
    for &b in domain.iter().chain(input) {
        h = (h ^ u128::from(b)).wrapping_mul(PRIME);
    }
    let (hi, lo) = ((h >> 64) as u64, h as u64);
    let lo = fmix64(lo ^ hi.rotate_left(32));
    let hi = fmix64(hi ^ lo);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&hi.to_be_bytes());
    out[8..].copy_from_slice(&lo.to_be_bytes());
    out
}

/// MurmurHash3's 64-bit finalizer.
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// A span's key: its begin's thread, ticks and ordinal, after the recording id.
fn key_bytes(recording: &[u8; 16], thread: u64, ticks: u64, ordinal: u32) -> [u8; 36] {
    let mut key = [0u8; 36];
    key[..16].copy_from_slice(recording);
    key[16..24].copy_from_slice(&thread.to_le_bytes());
    key[24..32].copy_from_slice(&ticks.to_le_bytes());
    key[32..].copy_from_slice(&ordinal.to_le_bytes());
    key
}

/// The span id of the span of key (`thread`, `ticks`, `ordinal`) of recording `recording`:
/// the first 8 bytes of [`derive`] under `span`, never all zero (OTLP's invalid id).
pub(crate) fn span_id(recording: &[u8; 16], thread: u64, ticks: u64, ordinal: u32) -> [u8; 8] {
    let d = derive(b"span", &key_bytes(recording, thread, ticks, ordinal));
    let mut id = [0u8; 8];
    id.copy_from_slice(&d[..8]);
    if id == [0; 8] {
        id[7] = 1;
    }
    id
}

/// The trace id of the root span of that key: [`derive`] under `trace`, never all zero.
pub(crate) fn trace_id(recording: &[u8; 16], thread: u64, ticks: u64, ordinal: u32) -> [u8; 16] {
    let mut id = derive(b"trace", &key_bytes(recording, thread, ticks, ordinal));
    if id == [0; 16] {
        id[15] = 1;
    }
    id
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`, lowercase as the standard writes
/// it; version `ff` and all-zero ids are invalid): its trace id, parent id and flags. A
/// later version's value is read by its first four fields, as the standard says.
pub(crate) fn traceparent(text: &str) -> Option<([u8; 16], [u8; 8], u8)> {
    let text = text.trim();
    let mut parts = text.split('-');
    let (version, trace, parent, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let rest = parts.next();
    let lower_hex =
        |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !lower_hex(version, 2) || version == "ff" || (version == "00" && rest.is_some()) {
        return None;
    }
    if !lower_hex(trace, 32) || !lower_hex(parent, 16) || !lower_hex(flags, 2) {
        return None;
    }
    let byte = |s: &str, i: usize| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok();
    let mut t = [0u8; 16];
    for (i, b) in t.iter_mut().enumerate() {
        *b = byte(trace, i)?;
    }
    let mut p = [0u8; 8];
    for (i, b) in p.iter_mut().enumerate() {
        *b = byte(parent, i)?;
    }
    if t == [0; 16] || p == [0; 8] {
        return None;
    }
    Some((t, p, byte(flags, 0)?))
}

/// The status an attribute set declares: `otel.status_code` or `status`, a string (`ok`,
/// `error`, `unset`, in any case), a bool (true OK, false ERROR) or an integer of OTLP's
/// `StatusCode` (0 UNSET, 1 OK, 2 ERROR); any other value declares none (it stays an
/// attribute). The message is `otel.status_message` or `status_message`.
pub(crate) fn status_of(attributes: &Attrs) -> (StatusCode, String) {
    let code = ["otel.status_code", "status"].iter().find_map(|k| match attributes.get(k)? {
        Attr::Str(s) => match s.to_ascii_lowercase().as_str() {
            "ok" => Some(StatusCode::Ok),
            "error" => Some(StatusCode::Error),
            "unset" => Some(StatusCode::Unset),
            _ => None,
        },
        Attr::Bool(true) => Some(StatusCode::Ok),
        Attr::Bool(false) => Some(StatusCode::Error),
        Attr::Int(0) => Some(StatusCode::Unset),
        Attr::Int(1) => Some(StatusCode::Ok),
        Attr::Int(2) => Some(StatusCode::Error),
        _ => None,
    });
    let message = ["otel.status_message", "status_message"]
        .iter()
        .find_map(|k| match attributes.get(k)? {
            Attr::Str(s) => Some(s.clone()),
            _ => None,
        })
        .unwrap_or_default();
    match code {
        Some(code) => (code, if code == StatusCode::Error { message } else { String::new() }),
        None => (StatusCode::Unset, String::new()),
    }
}

/// A span begun and not yet ended.
struct Open {
    span: Span,
    /// The `tracing` span's `span` value, for a bridge span.
    tracing: Option<u64>,
    /// Whether it is handed on when it ends (a reader's choice selected its begin).
    selected: bool,
}

impl Open {
    fn ids(&self) -> Ids {
        Ids { trace: self.span.trace_id, span: self.span.span_id }
    }
}

/// The ids of a span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ids {
    trace: [u8; 16],
    span: [u8; 8],
}

/// The open spans, by slot: the pairer pairs slots, the model keeps the spans.
#[derive(Default)]
struct Slots {
    open: Vec<Option<Open>>,
    free: Vec<u32>,
}

impl Slots {
    fn put(&mut self, open: Open) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.open[i as usize] = Some(open);
                i
            }
            None => {
                self.open.push(Some(open));
                (self.open.len() - 1) as u32
            }
        }
    }

    fn take(&mut self, slot: u32) -> Option<Open> {
        let open = self.open.get_mut(slot as usize)?.take();
        if open.is_some() {
            self.free.push(slot);
        }
        open
    }

    fn get_mut(&mut self, slot: u32) -> Option<&mut Open> {
        self.open.get_mut(slot as usize)?.as_mut()
    }
}

/// The span model of one log (one recording): fed its events in time order, it hands on
/// each span as it ends. See the module docs.
pub(crate) struct SpanModel {
    recording: [u8; 16],
    clock: Clock,
    roles: std::sync::Arc<Roles>,
    /// `SpanEnter`/`SpanExit` are spans (a log before format 2.1.0).
    enter_exit: bool,
    pairer: Pairer<u32>,
    slots: Slots,
    /// Each open `tracing` span's slot, by its `span` value.
    tracing_open: HashMap<u64, u32>,
    /// The ids of the latest `tracing` span of each `span` value, open or ended: what a
    /// `SpanFollows` links to.
    tracing_ids: HashMap<u64, Ids>,
    /// Each thread's current `tracing` span (its latest `SpanCurrent`), when not 0.
    current: HashMap<u64, u64>,
    /// Each thread's last begin: its ticks and the begins at those ticks.
    ordinals: HashMap<u64, (u64, u32)>,
    /// Thread names from `ThreadName`.
    thread_names: HashMap<u64, String>,
    flows: Flows,
    /// Each open piece of work's last span.
    flow_spans: HashMap<u64, Ids>,
    /// Each set's name and version, for the scope.
    versions: HashMap<String, String>,
    unpaired: Unpaired,
}

impl SpanModel {
    /// The model of a log of `header` whose recording id is `recording`.
    pub(crate) fn new(header: &Header, recording: [u8; 16]) -> SpanModel {
        let versions = header.sets.iter().map(|s| (s.schema.name.clone(), s.schema.version.to_string())).collect();
        SpanModel {
            recording,
            clock: header.clock,
            roles: std::sync::Arc::new(Roles::new(&header.sets)),
            enter_exit: (header.format.major, header.format.median) < (2, 1),
            pairer: Pairer::new(),
            slots: Slots::default(),
            tracing_open: HashMap::new(),
            tracing_ids: HashMap::new(),
            current: HashMap::new(),
            ordinals: HashMap::new(),
            thread_names: HashMap::new(),
            flows: Flows::new(),
            flow_spans: HashMap::new(),
            versions,
            unpaired: Unpaired::default(),
        }
    }

    /// The model of `log`.
    pub(crate) fn of(log: &Log) -> SpanModel {
        SpanModel::new(log.header(), log.recording_id().0)
    }

    /// Whether a span of `used` is one of the model's.
    fn counts(&self, used: &SpanUse) -> bool {
        self.enter_exit || self.roles.span(used.span).source != SpanSource::Tracing
    }

    fn ns(&self, ticks: u64) -> u64 {
        u64::try_from(self.clock.wall_ns(ticks).max(0)).unwrap_or(u64::MAX)
    }

    /// Whether an event of this wire code can be recorded in a span (an event of the span
    /// its thread's latest `SpanCurrent` names): every event but the bookkeeping built-ins
    /// and the span records, which name their span themselves and belong to none
    /// (docs/FORMAT.md, "Built-in events"): a `SpanClose` that pairs with nothing, or a
    /// `SpanOpenAt` or `SpanRecordAt` left as it is (its callsite undefined in its block),
    /// is no event of the thread's current span.
    fn is_span_event(event: &Event<'_>) -> bool {
        !(event.desc.is_builtin()
            && (builtin::is_span_record(event.desc.code)
                || matches!(
                    event.desc.code,
                    builtin::INTERN
                        | builtin::LABEL
                        | builtin::THREAD_NAME
                        | builtin::CLOCK_SYNC
                        | builtin::DROPPED
                        | builtin::STOP
                        | builtin::SPAN_CURRENT
                )))
    }

    /// The next event of the log, in time order (each thread's in its order); `selected`:
    /// the reader's choice keeps it (a span is handed on when its begin was selected; an
    /// event is a span's event when it was). Each span it ends goes to `emit`.
    pub(crate) fn event(&mut self, event: &Event<'_>, selected: bool, emit: &mut dyn FnMut(Span)) {
        let thread = event.thread;
        match BuiltinEvent::of(event) {
            Some(BuiltinEvent::ThreadName { thread: t, name }) => {
                self.thread_names.insert(t, name.to_string_lossy().into_owned());
                return;
            }
            Some(BuiltinEvent::SpanCurrent { span }) => {
                match span {
                    0 => self.current.remove(&thread),
                    span => self.current.insert(thread, span),
                };
                return;
            }
            Some(BuiltinEvent::SpanRecord { span, .. }) => {
                if let Some(&slot) = self.tracing_open.get(&span)
                    && let Some(fields) = event_format::fields::of_event(event)
                    && let Some(open) = self.slots.get_mut(slot)
                {
                    for (key, value) in &fields {
                        open.span.attributes.set(key, Attr::of_field(value));
                    }
                }
                return;
            }
            Some(BuiltinEvent::SpanFollows { span, follows }) => {
                if let Some(&slot) = self.tracing_open.get(&span)
                    && let Some(&to) = self.tracing_ids.get(&follows)
                    && let Some(open) = self.slots.get_mut(slot)
                {
                    push_link(
                        &mut open.span,
                        Link { trace_id: to.trace, span_id: to.span, why: "follows_from", flow: String::new() },
                    );
                }
                return;
            }
            _ => {}
        }
        let roles = std::sync::Arc::clone(&self.roles);
        let Some(role) = roles.of(event.desc.wire) else {
            if selected && Self::is_span_event(event) {
                self.inside(event);
            }
            return;
        };
        let mut shown = false;
        // Its end first: an event that ends one span and begins another ends first.
        let mut ended = None;
        if let Some(end) = role.ends.filter(|u| self.counts(u))
            && let Some(key) = roles.key(&end, event)
        {
            shown = true;
            // An end that closes nothing is counted by the pairer.
            if let Some(e) = self.pairer.end(thread, &key) {
                for cut in e.cut {
                    if let Some(open) = self.slots.take(cut) {
                        self.forget_tracing(cut, &open);
                        self.unpaired.unended += 1;
                    }
                }
                if let Some(open) = self.slots.get_mut(e.begin)
                    && end.pairing != Pairing::Tracing
                    && !event.desc.is_builtin()
                {
                    for (name, value) in event.desc.params.iter().zip(event.values()) {
                        open.span.attributes.set(name, Attr::of_value(&value));
                    }
                }
                ended = Some(e.begin);
            }
        }
        let mut begun = None;
        if let Some(begin) = role.begins.filter(|u| self.counts(u))
            && let Some(key) = roles.key(&begin, event)
        {
            shown = true;
            let open = self.begin(&begin, event, selected);
            let tracing = open.tracing.map(|v| (v, open.ids()));
            let slot = self.slots.put(open);
            if let Some((value, ids)) = tracing {
                self.tracing_open.insert(value, slot);
                if self.tracing_ids.len() >= event_format::roles::MAX_OPEN {
                    self.tracing_ids.clear();
                }
                self.tracing_ids.insert(value, ids);
            }
            if let Some(given_up) = self.pairer.begin(thread, key, slot)
                && let Some(open) = self.slots.take(given_up)
            {
                self.forget_tracing(given_up, &open);
            }
            begun = Some(slot);
        }
        if !role.flows.is_empty() {
            // The span the event is in for its flows: the one it begins, else the one it
            // ends, else the one it was recorded in.
            let at = begun.or(ended).or_else(|| self.inside_slot(thread));
            self.flow_links(event, role, at);
        }
        if let Some(slot) = ended
            && let Some(open) = self.slots.take(slot)
        {
            self.close(slot, open, event.time, emit);
        }
        // An event that is no span's begin or end, and samples no counter, is an event of
        // the span it was recorded in.
        if !shown && role.counters.is_empty() && selected && Self::is_span_event(event) {
            self.inside(event);
        }
    }

    /// Forgets the `tracing` span of `slot` (taken: `open`), if it is the open one of its
    /// value.
    fn forget_tracing(&mut self, slot: u32, open: &Open) {
        if let Some(value) = open.tracing
            && self.tracing_open.get(&value) == Some(&slot)
        {
            self.tracing_open.remove(&value);
        }
    }

    /// Steps the flows `event` takes part in; `at` is the slot of the span it is in (begins,
    /// ends or is recorded in). A piece of work that comes into `at` from another span links
    /// `at` to that span.
    fn flow_links(&mut self, event: &Event<'_>, role: &Role, at: Option<u32>) {
        let at = at.and_then(|slot| Some((slot, self.slots.get_mut(slot)?.ids())));
        for f in &role.flows {
            let Some(value) = event.values().nth(f.param) else { continue };
            let Some(FlowLink { serial, incoming, outgoing }) = self.flows.step(f.flow, IdValue::of(&value), f.step)
            else {
                continue;
            };
            let from = self.flow_spans.get(&serial).copied();
            if incoming
                && let (Some(from), Some((slot, to))) = (from, at)
                && from != to
                && let Some(open) = self.slots.get_mut(slot)
            {
                let flow = self.roles.flows()[f.flow as usize].name.clone();
                push_link(&mut open.span, Link { trace_id: from.trace, span_id: from.span, why: "flow", flow });
            }
            match (outgoing, at) {
                (true, Some((_, ids))) => {
                    if self.flow_spans.len() >= event_format::roles::MAX_OPEN {
                        self.flow_spans.clear();
                    }
                    self.flow_spans.insert(serial, ids);
                }
                (true, None) => {
                    self.flow_spans.remove(&serial);
                }
                (false, _) => {
                    self.flow_spans.remove(&serial);
                }
            }
        }
    }

    /// The slot of the span an event of `thread` is recorded in: the innermost declared span
    /// open on its thread, else its thread's current `tracing` span.
    fn inside_slot(&mut self, thread: u64) -> Option<u32> {
        if let Some(&mut slot) = self.pairer.innermost_mut(thread) {
            return Some(slot);
        }
        let span = self.current.get(&thread)?;
        self.tracing_open.get(span).copied()
    }

    fn inside_ids(&mut self, thread: u64) -> Option<Ids> {
        let slot = self.inside_slot(thread)?;
        Some(self.slots.get_mut(slot)?.ids())
    }

    /// `event` is an event of the span it was recorded in, if any.
    fn inside(&mut self, event: &Event<'_>) {
        let Some(slot) = self.inside_slot(event.thread) else { return };
        let time_ns = self.ns(event.time);
        let Some(open) = self.slots.get_mut(slot) else { return };
        if open.span.events.len() >= MAX_ITEMS {
            open.span.dropped_events = open.span.dropped_events.saturating_add(1);
            return;
        }
        let mut attributes = Attrs::default();
        let desc = event.desc;
        let mut name = if desc.qualified { format!("{}:{}", desc.set, desc.name) } else { desc.name.clone() };
        if desc.is_builtin() && desc.code == builtin::TRACE_EVENT {
            // A `tracing` event: named by its message, its level, target and fields beside.
            if let Some(BuiltinEvent::TraceEvent { level, target, text }) = BuiltinEvent::of(event) {
                let level = match level {
                    1 => "ERROR",
                    2 => "WARN",
                    3 => "INFO",
                    4 => "DEBUG",
                    _ => "TRACE",
                };
                attributes.set("level", Attr::Str(level.to_owned()));
                attributes.set("target", Attr::Str(String::from_utf8_lossy(target.bytes).into_owned()));
                let text = String::from_utf8_lossy(text.bytes).into_owned();
                let (message, fields) = event_format::fields::split_message(&text);
                for (key, value) in &fields {
                    attributes.set(key, Attr::of_field(value));
                }
                name = if message.is_empty() { "event".to_owned() } else { message.to_owned() };
            }
        } else {
            for (param, value) in desc.params.iter().zip(event.values()) {
                attributes.set(param, Attr::of_value(&value));
            }
        }
        open.span.events.push(SpanEvent { time_ns, name, attributes });
    }

    /// The span `event` begins as `used` says.
    fn begin(&mut self, used: &SpanUse, event: &Event<'_>, selected: bool) -> Open {
        let thread = event.thread;
        let ordinal = match self.ordinals.get_mut(&thread) {
            Some((ticks, n)) if *ticks == event.time => {
                *n += 1;
                *n
            }
            _ => {
                self.ordinals.insert(thread, (event.time, 0));
                0
            }
        };
        let def = self.roles.span(used.span);
        let name = self.roles.begin_name(used, event).into_owned();
        let tracing_span = def.source == SpanSource::TracingSpan;
        let scope = if def.set.is_empty() {
            ("tracing".to_owned(), String::new())
        } else {
            (def.set.clone(), self.versions.get(&def.set).cloned().unwrap_or_default())
        };
        let mut attributes = Attrs::default();
        let mut tracing = None;
        let mut parent_value = 0;
        if tracing_span {
            if let Some(BuiltinEvent::SpanOpen { span, parent, .. }) = BuiltinEvent::of(event) {
                tracing = Some(span);
                parent_value = parent;
            }
            if let Some(fields) = event_format::fields::of_event(event) {
                for (key, value) in &fields {
                    attributes.set(key, Attr::of_field(value));
                }
            }
        } else if used.pairing != Pairing::Tracing {
            for (param, value) in event.desc.params.iter().zip(event.values()) {
                attributes.set(param, Attr::of_value(&value));
            }
        } else if let Some(fields) = event_format::fields::of_event(event) {
            // A `SpanEnter` span (a log before 2.1.0): its fields.
            for (key, value) in &fields {
                attributes.set(key, Attr::of_field(value));
            }
        }
        // The parent: the `tracing` parent, or the span the thread is in.
        let parent = if tracing_span {
            self.tracing_open.get(&parent_value).and_then(|&s| self.slots.get_mut(s)).map(|o| o.ids())
        } else {
            self.inside_ids(thread)
        };
        let span_id = span_id(&self.recording, thread, event.time, ordinal);
        let (mut trace, mut parent_id, mut remote) = match parent {
            Some(p) => (p.trace, Some(p.span), false),
            None => (trace_id(&self.recording, thread, event.time, ordinal), None, false),
        };
        let mut trace_state = String::new();
        let remote_parent = match attributes.get("traceparent") {
            Some(Attr::Str(text)) => traceparent(text),
            _ => None,
        };
        if let Some((t, p, _flags)) = remote_parent {
            (trace, parent_id, remote) = (t, Some(p), true);
            if let Some(Attr::Str(state)) = attributes.get("tracestate") {
                trace_state = state.clone();
            }
        }
        attributes.list.retain(|(k, _)| k != "traceparent" && k != "tracestate");
        let mut kind = Kind::Internal;
        if let Some(Attr::Str(k)) = attributes.get("otel.kind").or_else(|| attributes.get("span.kind"))
            && let Some(k) = Kind::parse(k)
        {
            kind = k;
        }
        let name = match attributes.get("otel.name") {
            Some(Attr::Str(n)) if !n.is_empty() => n.clone(),
            _ => name,
        };
        attributes.set("thread.id", Attr::Int(i64::from_ne_bytes(thread.to_ne_bytes())));
        if let Some(tn) = self.thread_names.get(&thread) {
            attributes.set("thread.name", Attr::Str(tn.clone()));
        }
        let start_ns = self.ns(event.time);
        Open {
            span: Span {
                trace_id: trace,
                span_id,
                parent: parent_id,
                remote_parent: remote,
                trace_state,
                name,
                kind,
                scope,
                start_ns,
                end_ns: start_ns,
                thread,
                attributes,
                events: Vec::new(),
                dropped_events: 0,
                links: Vec::new(),
                dropped_links: 0,
                status: StatusCode::Unset,
                status_message: String::new(),
            },
            tracing,
            selected,
        }
    }

    /// Ends `open` (of `slot`, taken) at `ticks`, and hands it on if its begin was selected.
    fn close(&mut self, slot: u32, mut open: Open, ticks: u64, emit: &mut dyn FnMut(Span)) {
        self.forget_tracing(slot, &open);
        if !open.selected {
            return;
        }
        open.span.end_ns = self.ns(ticks);
        let (status, message) = status_of(&open.span.attributes);
        open.span.status = status;
        open.span.status_message = message;
        emit(open.span);
    }

    /// What could not be paired so far, and the spans open now counted as never ended: what
    /// a reader says once the log is read.
    pub(crate) fn finish(&self) -> Unpaired {
        let open = self.slots.open.iter().filter(|o| o.as_ref().is_some_and(|o| o.selected)).count() as u64;
        Unpaired {
            unended: self.unpaired.unended + self.pairer.given_up() + open,
            unmatched: self.unpaired.unmatched + self.pairer.unmatched(),
        }
    }
}

/// Adds `link` to `span`, or counts it dropped past [`MAX_ITEMS`].
fn push_link(span: &mut Span, link: Link) {
    if span.links.len() < MAX_ITEMS {
        span.links.push(link);
    } else {
        span.dropped_links = span.dropped_links.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ids_are_fixed_and_spread() {
        // The worked example of docs/OUTPUT.md, "Span ids".
        let recording = [0x11u8; 16];
        assert_eq!(hex(&span_id(&recording, 1, 1000, 0)), hex(&span_id(&recording, 1, 1000, 0)));
        let ids: std::collections::BTreeSet<[u8; 8]> =
            (0..1000u64).flat_map(|t| (0..4).map(move |o| span_id(&recording, t, 1000, o))).collect();
        assert_eq!(ids.len(), 4000, "no two keys of a recording share a span id");
        assert_ne!(trace_id(&recording, 1, 1000, 0)[..8], span_id(&recording, 1, 1000, 0), "trace and span differ");
        assert_eq!(hex(&span_id(&recording, 1, 1000, 0)), "9f76ece5934b1409");
        assert_eq!(hex(&trace_id(&recording, 1, 1000, 0)), "cd96ee89eabfae117c1f92c5748b52d5");
    }

    #[test]
    fn traceparents_read_as_the_w3c_says() {
        let (t, p, f) = traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(hex(&t), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex(&p), "00f067aa0ba902b7");
        assert_eq!(f, 1);
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "",
        ] {
            assert_eq!(traceparent(bad), None, "{bad}");
        }
        // A later version's value, with a field after the four.
        assert!(traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what").is_some());
    }

    #[test]
    fn a_declared_status_is_read_and_any_other_value_is_none() {
        let with = |k: &str, v: Attr| {
            let mut a = Attrs::default();
            a.set(k, v);
            a.set("status_message", Attr::Str("boom".into()));
            status_of(&a)
        };
        assert_eq!(with("status", Attr::Str("Error".into())), (StatusCode::Error, "boom".into()));
        assert_eq!(with("otel.status_code", Attr::Str("ok".into())), (StatusCode::Ok, String::new()));
        assert_eq!(with("status", Attr::Bool(false)).0, StatusCode::Error);
        assert_eq!(with("status", Attr::Int(1)).0, StatusCode::Ok);
        assert_eq!(with("status", Attr::Int(200)).0, StatusCode::Unset, "an HTTP status is no span status");
        assert_eq!(status_of(&Attrs::default()).0, StatusCode::Unset);
    }
}
