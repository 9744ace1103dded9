//! What a log's events mean beyond their parameters, for a reader: the spans they begin and end,
//! the counters they sample, the flows they take part in. One model, built from a log's
//! header, that every reader asks (event-dump's Chrome and Perfetto exports, `latency`, a
//! program that reads logs).
//!
//! - [`Roles`]: for each wire code, its [`Role`]: what events.def declares (`SPAN`, `COUNTER`,
//!   `FLOW`, carried in the header since format 2.0.2: docs/FORMAT.md, "Meanings"), or, for a
//!   set that declares none of them, the naming convention readers used before declarations
//!   existed: `FooBegin` and `FooEnd` are the span `Foo`, paired across threads by a
//!   parameter named `id` when the event has one; the built-in `SpanOpen` and `SpanClose` of
//!   the `tracing` bridge (since format 2.1.0), one span per `tracing` span, paired by their
//!   `span` across threads and named by the open's `name`; and the built-in `SpanEnter` and
//!   `SpanExit` of the `tracing` bridge (each entry of a span: a poll of a future), paired by
//!   their `span` on one thread and named by their `name`.
//! - [`Pairer`]: the one rule that pairs a span's end with its begin (a thread's spans nest;
//!   async spans pair by id), fed events in time order.
//! - [`Flows`]: the one rule that links the events of a flow into pieces of work.
//!
//! ```
//! use event_format::roles::{Ended, Pairer, Roles};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let schema = event_format::def::parse(
//!     "VERSION(1, 0, 0)\nKIND(Req, \"requests\")\n\
//!      RELATION(Start, 1, TRUE, Req, W, id)\nRELATION(Done, 2, TRUE, Req, W, id)\n\
//!      SPAN(request, Start, Done, id)\n",
//!     "events.def",
//! )?;
//! let sets = event_format::wire::SetEntry::assign([schema]);
//! let roles = Roles::new(&sets);
//! let (start, done) = (sets[0].wire_code_of(1).unwrap(), sets[0].wire_code_of(2).unwrap());
//! let request = roles.span_named("request").expect("declared");
//! assert!(roles.span(request).is_async);
//!
//! // Start(7) on thread 1 at 100 ns, Done(7) on thread 2 at 350 ns: one request of 250 ns.
//! let mut pairer = Pairer::new();
//! let begin = roles.of(start).and_then(|r| r.begins.as_ref()).unwrap();
//! pairer.begin(1, roles.key_of(begin, &[event_format::wire::Value::Word(7)]).unwrap(), 100u64);
//! let end = roles.of(done).and_then(|r| r.ends.as_ref()).unwrap();
//! let Some(Ended { begin: began, .. }) = pairer.end(2, &roles.key_of(end, &[event_format::wire::Value::Word(7)]).unwrap())
//! else { panic!("paired") };
//! assert_eq!(350 - began, 250);
//! # Ok(()) }
//! ```

mod flows;
mod pairer;

pub use flows::{FlowLink, Flows};
pub use pairer::{Ended, MAX_DEPTH, MAX_OPEN, Pairer, Unended};

use crate::codec::decode::Event;
use crate::codec::wire::{SetEntry, Value};
use event_def::builtin;
use event_def::letter::Letter;
use event_def::schema::FlowStep;
use std::borrow::Cow;
use std::collections::HashMap;

/// A span's place in [`Roles::spans`].
pub type SpanId = u32;

/// Where a span's rule comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanSource {
    /// A `SPAN` line of the set's events.def.
    Declared,
    /// The naming convention of a set that declares nothing: `FooBegin` / `FooEnd`.
    Convention,
    /// The `tracing` bridge's `SpanEnter` / `SpanExit`: paired by `span`, named by `name`.
    Tracing,
    /// The `tracing` bridge's `SpanOpen` / `SpanClose` (since format 2.1.0): one span per
    /// `tracing` span, from its creation to its close, paired by `span` across threads (an
    /// async span), named by the open's `name`.
    TracingSpan,
}

/// A span that the log's events may begin and end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanDef {
    /// Its name as readers show it: the declared name, or `Foo` of `FooBegin`; qualified as
    /// `set:name` when the log holds more than one set (as event names are). A `tracing`
    /// span's name is each begin's `name` value ([`Roles::begin_name`]); this one is
    /// `SpanEnter`.
    pub name: String,
    /// The set whose events begin and end it (empty for built-in events).
    pub set: String,
    /// Where its rule comes from.
    pub source: SpanSource,
    /// Whether its begin and end are paired by an id across threads (a declared `SPAN` with
    /// an id; a convention span whose begin has an `id`), rather than nested on one thread.
    pub is_async: bool,
}

/// How an event's span is paired with its other end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairing {
    /// On its thread: the innermost open span of its name.
    Thread,
    /// On any thread: the latest open span of its name whose begin had the same value of
    /// parameter `param` (its index in the event's parameters).
    Async {
        /// The index of the id parameter in this event's parameters.
        param: usize,
    },
    /// On its thread, by the value of its first parameter (`span`, a `W`), as `SpanEnter`
    /// and `SpanExit` are; a begin is named by its second (`name`, an `S`).
    Tracing,
}

/// What an event does to a span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanUse {
    /// The span.
    pub span: SpanId,
    /// How it is paired.
    pub pairing: Pairing,
}

/// A counter that the log's events sample (a `COUNTER` line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterDef {
    /// Its name, qualified as `set:name` when the log holds more than one set.
    pub name: String,
    /// Its set.
    pub set: String,
    /// The unit of its values (free text; may be empty).
    pub unit: String,
}

/// What an event samples: counter `counter`'s value is its parameter `param`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterUse {
    /// The counter's place in [`Roles::counters`].
    pub counter: u32,
    /// The index of the value parameter in the event's parameters.
    pub param: usize,
}

/// A flow that the log's events take part in (the `FLOW` lines of one name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowDef {
    /// Its name, qualified as `set:name` when the log holds more than one set.
    pub name: String,
    /// Its set.
    pub set: String,
}

/// What an event does to a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowUse {
    /// The flow's place in [`Roles::flows`].
    pub flow: u32,
    /// The index of its id parameter in the event's parameters.
    pub param: usize,
    /// Whether it begins, continues or ends the piece of work.
    pub step: FlowStep,
}

/// What events of one wire code mean. An event may end one span and begin another (ended
/// first: a phase that ends where the next begins), sample counters and take part in flows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Role {
    /// The span it ends, if any.
    pub ends: Option<SpanUse>,
    /// The span it begins, if any.
    pub begins: Option<SpanUse>,
    /// The counters it samples.
    pub counters: Vec<CounterUse>,
    /// The flows it takes part in.
    pub flows: Vec<FlowUse>,
}

impl Role {
    /// Whether it begins or ends a span.
    pub fn is_span(&self) -> bool {
        self.ends.is_some() || self.begins.is_some()
    }
}

/// The value that pairs an async span or names a piece of work: an integer (`P`, `A`, `W`,
/// `U`, and `I` of either sign: equal values of different letters are equal), the bytes of a
/// string, or (for the naming convention, which lets `id` be any letter) a double by its
/// bits or a bool.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IdValue {
    /// A value of 0 or more.
    Unsigned(u64),
    /// A value below 0 (an `I`).
    Negative(i64),
    /// A string's bytes.
    Bytes(Box<[u8]>),
    /// A double's bits, or a bool as 0 or 1: ids only by the naming convention.
    Other(u64),
}

impl IdValue {
    /// The id of `value`.
    pub fn of(value: &Value<'_>) -> IdValue {
        match *value {
            Value::Pointer(v) | Value::Address(v) | Value::Word(v) => IdValue::Unsigned(v),
            Value::Unsigned(v) => IdValue::Unsigned(u64::from(v)),
            Value::Signed(v) if v >= 0 => IdValue::Unsigned(v as u64),
            Value::Signed(v) => IdValue::Negative(v),
            Value::Str(t) => IdValue::Bytes(t.bytes.into()),
            Value::Double(v) => IdValue::Other(v.to_bits()),
            Value::Bool(b) => IdValue::Other(u64::from(b)),
        }
    }
}

/// Which open span an end closes: what [`Pairer`] pairs by.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SpanKey {
    /// A span of one thread, by its span.
    Thread(SpanId),
    /// A `tracing` span of one thread, by its `span` value.
    Tracing(u64),
    /// An async span, by its span and its id.
    Async(SpanId, IdValue),
}

impl SpanKey {
    /// Whether it pairs across threads.
    pub fn is_async(&self) -> bool {
        matches!(self, SpanKey::Async(..))
    }
}

/// The meanings of a log's events, by wire code; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct Roles {
    /// Every span, counter and flow that some event's role names.
    spans: Vec<SpanDef>,
    counters: Vec<CounterDef>,
    flows: Vec<FlowDef>,
    /// The distinct roles.
    roles: Vec<Role>,
    /// Wire code `c` below its length -> its role's index + 1, or 0.
    user: Vec<u32>,
    /// The same for the built-in codes, `0xFF00 + i` at `i`.
    builtin: Vec<u32>,
    /// (set, the event's own code) -> its wire code, for every event of every set.
    by_code: HashMap<(String, u16), u16>,
}

impl Roles {
    /// The roles of the events of `sets` (a header's [`Header::sets`](crate::wire::Header::sets))
    /// and of the built-in events.
    pub fn new(sets: &[SetEntry]) -> Roles {
        let mut roles = Roles { builtin: vec![0; 256], ..Roles::default() };
        let qualified = sets.len() > 1;
        let mut by_wire: HashMap<u16, Role> = HashMap::new();
        for set in sets {
            let schema = &set.schema;
            for (j, e) in schema.events.iter().enumerate() {
                if let Some(wire) = set.wire_code(j) {
                    roles.by_code.insert((schema.name.clone(), e.code), wire);
                }
            }
            let shown = |name: &str| if qualified { format!("{}:{name}", schema.name) } else { name.to_owned() };
            // The event of own code `code`: its wire code and parameters.
            let event = |code: u16| {
                let j = schema.events.iter().position(|e| e.code == code)?;
                Some((set.wire_code(j)?, &schema.events[j]))
            };
            let param = |params: &[String], name: &str| params.iter().position(|p| p == name);
            if schema.declares_meanings() {
                for span in &schema.spans {
                    let id = roles.add_span(SpanDef {
                        name: shown(&span.name),
                        set: schema.name.clone(),
                        source: SpanSource::Declared,
                        is_async: span.id.is_some(),
                    });
                    for (code, begins) in [(span.begin, true), (span.end, false)] {
                        let Some((wire, e)) = event(code) else { continue };
                        let pairing = match &span.id {
                            None => Pairing::Thread,
                            Some(name) => match param(&e.params, name) {
                                Some(param) => Pairing::Async { param },
                                None => continue,
                            },
                        };
                        let role = by_wire.entry(wire).or_default();
                        let used = Some(SpanUse { span: id, pairing });
                        if begins { role.begins = used } else { role.ends = used }
                    }
                }
                for counter in &schema.counters {
                    let Some((wire, e)) = event(counter.event) else { continue };
                    let Some(p) = param(&e.params, &counter.value) else { continue };
                    roles.counters.push(CounterDef {
                        name: shown(&counter.name),
                        set: schema.name.clone(),
                        unit: counter.unit.clone(),
                    });
                    let used = CounterUse { counter: (roles.counters.len() - 1) as u32, param: p };
                    by_wire.entry(wire).or_default().counters.push(used);
                }
                let mut flow_ids: HashMap<&str, u32> = HashMap::new();
                for flow in &schema.flows {
                    let Some((wire, e)) = event(flow.event) else { continue };
                    let Some(p) = param(&e.params, &flow.id) else { continue };
                    let id = *flow_ids.entry(flow.name.as_str()).or_insert_with(|| {
                        roles.flows.push(FlowDef { name: shown(&flow.name), set: schema.name.clone() });
                        (roles.flows.len() - 1) as u32
                    });
                    by_wire.entry(wire).or_default().flows.push(FlowUse { flow: id, param: p, step: flow.step });
                }
                continue;
            }
            // The convention: `FooBegin` begins and `FooEnd` ends the span `Foo` of the set;
            // each of the two pairs by its parameter `id` if it has one.
            let mut by_base: HashMap<String, SpanId> = HashMap::new();
            for (j, e) in schema.events.iter().enumerate() {
                let Some(wire) = set.wire_code(j) else { continue };
                if let Some(pairing) = tracing_pairing(&e.name, &e.format) {
                    let span = roles.tracing_span();
                    let role = by_wire.entry(wire).or_default();
                    let used = Some(SpanUse { span, pairing });
                    if e.name == "SpanEnter" {
                        role.begins = used
                    } else {
                        role.ends = used
                    }
                    continue;
                }
                let (base, begins) = match (e.name.strip_suffix("Begin"), e.name.strip_suffix("End")) {
                    (Some(base), _) if !base.is_empty() => (base, true),
                    (_, Some(base)) if !base.is_empty() => (base, false),
                    _ => continue,
                };
                let pairing = match param(&e.params, "id") {
                    Some(param) => Pairing::Async { param },
                    None => Pairing::Thread,
                };
                let span = match by_base.get(base) {
                    Some(&id) => id,
                    None => {
                        let id = roles.add_span(SpanDef {
                            name: shown(base),
                            set: schema.name.clone(),
                            source: SpanSource::Convention,
                            is_async: false,
                        });
                        by_base.insert(base.to_owned(), id);
                        id
                    }
                };
                if begins && matches!(pairing, Pairing::Async { .. }) {
                    roles.spans[span as usize].is_async = true;
                }
                let role = by_wire.entry(wire).or_default();
                let used = Some(SpanUse { span, pairing });
                if begins { role.begins = used } else { role.ends = used }
            }
        }
        // The bridge's spans: `SpanOpen(span, parent, name, fields)` begins, `SpanClose(span)`
        // ends, paired by `span` (parameter 0 of both) on any thread.
        let opened = roles.add_span(SpanDef {
            name: "SpanOpen".to_owned(),
            set: String::new(),
            source: SpanSource::TracingSpan,
            is_async: true,
        });
        let used = Some(SpanUse { span: opened, pairing: Pairing::Async { param: 0 } });
        by_wire.entry(builtin::SPAN_OPEN).or_default().begins = used;
        by_wire.entry(builtin::SPAN_CLOSE).or_default().ends = used;
        for b in builtin::ALL {
            if let Some(pairing) = tracing_pairing(b.name, b.format) {
                let span = roles.tracing_span();
                let role = by_wire.entry(b.code).or_default();
                let used = Some(SpanUse { span, pairing });
                if b.name == "SpanEnter" { role.begins = used } else { role.ends = used }
            }
        }
        let mut codes: Vec<(u16, Role)> = by_wire.into_iter().collect();
        codes.sort_by_key(|(code, _)| *code);
        let user_end = codes.iter().filter(|(c, _)| *c < 0xFF00).map(|(c, _)| usize::from(*c) + 1).max().unwrap_or(0);
        roles.user = vec![0; user_end];
        for (code, role) in codes {
            roles.roles.push(role);
            let slot = roles.roles.len() as u32;
            match code.checked_sub(0xFF00) {
                Some(i) => roles.builtin[usize::from(i)] = slot,
                None => roles.user[usize::from(code)] = slot,
            }
        }
        roles
    }

    fn add_span(&mut self, def: SpanDef) -> SpanId {
        self.spans.push(def);
        (self.spans.len() - 1) as SpanId
    }

    /// The one span of the `tracing` bridge's events (their names are their values).
    fn tracing_span(&mut self) -> SpanId {
        match self.spans.iter().position(|s| s.source == SpanSource::Tracing) {
            Some(i) => i as SpanId,
            None => self.add_span(SpanDef {
                name: "SpanEnter".to_owned(),
                set: String::new(),
                source: SpanSource::Tracing,
                is_async: false,
            }),
        }
    }

    /// What events of wire code `wire` mean; `None` for an event that is only itself (an
    /// instant, to a viewer).
    #[inline]
    pub fn of(&self, wire: u16) -> Option<&Role> {
        let c = usize::from(wire);
        let slot = if c < self.user.len() {
            self.user[c]
        } else if c >= 0xFF00 {
            self.builtin[c - 0xFF00]
        } else {
            0
        };
        match slot {
            0 => None,
            i => self.roles.get(i as usize - 1),
        }
    }

    /// What the event of code `code` (its own, events.def's) of set `set` means: for a reader
    /// that knows events by their set and code (the typed reader: `events::SET.name()` and
    /// `event.code()`), as [`Roles::of`] for a wire code.
    pub fn of_code(&self, set: &str, code: u16) -> Option<&Role> {
        self.of(*self.by_code.get(&(set.to_owned(), code))?)
    }

    /// Whether no event means anything more than itself.
    pub fn is_empty(&self) -> bool {
        self.roles.is_empty()
    }

    /// Every span some event begins or ends, by [`SpanId`].
    pub fn spans(&self) -> &[SpanDef] {
        &self.spans
    }

    /// Span `id`.
    pub fn span(&self, id: SpanId) -> &SpanDef {
        &self.spans[id as usize]
    }

    /// The span named `name` (as [`SpanDef::name`] shows it), if some event begins or ends it.
    pub fn span_named(&self, name: &str) -> Option<SpanId> {
        self.spans.iter().position(|s| s.name == name).map(|i| i as SpanId)
    }

    /// Every counter some event samples.
    pub fn counters(&self) -> &[CounterDef] {
        &self.counters
    }

    /// Every flow some event takes part in.
    pub fn flows(&self) -> &[FlowDef] {
        &self.flows
    }

    /// The key by which an event whose values are `values` begins or ends span `used`:
    /// `None` when its values do not give one (a `SpanEnter` whose values are not a word
    /// and a string, which its format guarantees for a checked event): the event is then
    /// no span's.
    pub fn key_of(&self, used: &SpanUse, values: &[Value<'_>]) -> Option<SpanKey> {
        match used.pairing {
            Pairing::Thread => Some(SpanKey::Thread(used.span)),
            Pairing::Async { param } => Some(SpanKey::Async(used.span, IdValue::of(values.get(param)?))),
            Pairing::Tracing => match (values.first()?, values.get(1)?) {
                (Value::Word(span), Value::Str(_)) => Some(SpanKey::Tracing(*span)),
                _ => None,
            },
        }
    }

    /// [`Roles::key_of`] an event.
    pub fn key(&self, used: &SpanUse, event: &Event<'_>) -> Option<SpanKey> {
        match used.pairing {
            Pairing::Thread => Some(SpanKey::Thread(used.span)),
            Pairing::Async { param } => Some(SpanKey::Async(used.span, IdValue::of(&event.values().nth(param)?))),
            Pairing::Tracing => {
                let mut values = event.values();
                // A span's name too: a `SpanEnter` without both is no span's.
                match (values.next()?, values.next()?) {
                    (Value::Word(span), Value::Str(_)) => Some(SpanKey::Tracing(span)),
                    _ => None,
                }
            }
        }
    }

    /// The name of the span that `event` begins as `used` says: its `name` value for a
    /// `tracing` span (a `SpanEnter`'s, a `SpanOpen`'s), else the span's name.
    pub fn begin_name<'a>(&'a self, used: &SpanUse, event: &Event<'a>) -> Cow<'a, str> {
        if let Some(at) = self.name_param(used)
            && let Some(Value::Str(text)) = event.values().nth(at)
        {
            return String::from_utf8_lossy(text.bytes);
        }
        Cow::Borrowed(&self.span(used.span).name)
    }

    /// Whether the spans `used` begins are named each by its begin (a `tracing` span's
    /// `name` value, [`Roles::begin_name`]) rather than all by [`SpanDef::name`].
    pub fn named_by_begin(&self, used: &SpanUse) -> bool {
        self.name_param(used).is_some()
    }

    /// The parameter that names each span `used` begins, for the `tracing` bridge's spans.
    fn name_param(&self, used: &SpanUse) -> Option<usize> {
        match (used.pairing, self.span(used.span).source) {
            (Pairing::Tracing, _) => Some(1),
            (_, SpanSource::TracingSpan) => Some(2),
            _ => None,
        }
    }
}

/// `SpanEnter(span W, name S, ..)` and `SpanExit(span W, name S, ..)` pair as `tracing`
/// spans; another format under those names is no span's.
fn tracing_pairing(name: &str, format: &[Letter]) -> Option<Pairing> {
    let fits = format.len() >= 2 && format[0] == Letter::Word && format[1] == Letter::String;
    (fits && (name == "SpanEnter" || name == "SpanExit")).then_some(Pairing::Tracing)
}

#[cfg(test)]
mod tests;
