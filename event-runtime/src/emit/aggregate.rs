//! Answers without keeping every event: per-event limits (events.def's `limit=`,
//! `EVENT_LIMIT`, [`control::limit`](crate::control::limit)) and declared histograms
//! (events.def's `HISTOGRAM`), kept by the recorder (docs/FORMAT.md, "Limits" and
//! "Histograms"; docs/guide/aggregates.md).
//!
//! # Where it is decided
//!
//! An event that is limited, or that a histogram counts (a parameter's event, a span's begin
//! or end), is *diverted*: at the start its bit (its index in its set, mod 64) is set in the
//! divert word that `event!` already tests after the enabled test (`divert`'s module docs), as
//! triggers' and pins' events are. Only a diverted event reaches this module, on its cold
//! side (`admit::admit`, before its arguments are evaluated): an event that is neither limited nor
//! counted costs what it cost before (one load of the divert word, a test and a branch, as
//! without a trigger; `trigger`'s module docs, "Cost").
//!
//! - **A limit** is decided per thread, by the thread's own state ([`Limiter`]): kept, the
//!   event is recorded, after a `Suppressed` record of what the limit suppressed since the
//!   last one kept (when it suppressed any); not kept, it is counted, and its arguments are
//!   not evaluated, unless a histogram counts it (they are then evaluated and measured, and
//!   no record is written: [`Aggregates::measure_unkept`]).
//! - **A histogram** counts each value on the thread that records it, in that thread's
//!   [`Distribution`]: a kept event's values are read back from its record (`buffer`'s
//!   `watched`), an unkept one's from a scratch copy; a span's begin is kept on the thread's
//!   stack of open spans (an async span's in the recording's table, by its id), its end
//!   counts the duration in nanoseconds. An event refused for want of room (counted lost) is
//!   not counted.
//!
//! # What is written, and when
//!
//! Every thread's state is registered with the recording ([`Aggregates`]): the writer thread
//! takes what the threads counted every period ([`Recorder::histogram_period`], 10 s), before
//! a segment is sealed, and the stop takes what is left, and writes it as `Suppressed` and
//! `Histogram` records of each thread in blocks of thread 0 (`admit::flush`): so a segment holds the
//! distributions of its period, however many of its events the limits suppressed or the disk
//! budget deleted with older segments. Under `ring`, where nothing reaches the sinks until the
//! stop, the writer thread records them in its own ring instead, and the stop writes the rest
//! into the stopping thread's ring before it takes the rings (so that a ring file holds them),
//! then what could not be written there to the sinks ([`Flush`]).
//! A suppression is counted once: in the thread's own `Suppressed` record, or in one of the
//! recorder's; after the stop's, a late one is counted lost.
//!
//! [`Recorder::histogram_period`]: crate::Recorder::histogram_period

use crate::clock::TimeSource;
use crate::config::ConfigError;
use crate::locks::lock;
use event_format::builtin;
use event_format::decode::{Catalog, Entry, Event};
use event_format::histogram::Distribution;
use event_format::raw::{fit_texts, put_record_header};
use event_format::schema::{Buckets, HistogramOf, Rate, Schema};
use event_format::text::write_value;
use event_format::wire::{ArgWriter, Header, MAX_RECORD_LEN, Order, RECORD_HEADER_LEN, RecordIter, Text, Value, body};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the writer thread writes what the threads counted, unless the recorder says.
pub(crate) const DEFAULT_PERIOD: Duration = Duration::from_secs(10);
/// The deepest a thread's stack of open spans of one histogram goes: deeper, the oldest is
/// forgotten (its end then closes the one below, as `latency` gives up past its depth).
const MAX_DEPTH: usize = 1024;
/// The most async spans of one histogram open at once: more are not timed.
const MAX_OPEN: usize = 1 << 16;
/// The longest text of buckets one `Histogram` record holds: more are written as several
/// records of one period (docs/FORMAT.md, "Histograms").
const BUCKETS_TEXT_MAX: usize = 1000;

/// What a declared histogram counts, resolved to what the recorder needs.
#[derive(Debug)]
struct HistDecl {
    buckets: Buckets,
}

/// What a wire code does to the histograms: the parameters it gives values of, the spans it
/// begins and ends (each with its id parameter for an async span).
#[derive(Debug, Default, Clone)]
struct Role {
    params: Vec<(usize, usize)>,
    begins: Vec<(usize, Option<usize>)>,
    ends: Vec<(usize, Option<usize>)>,
}

impl Role {
    fn measures(&self) -> bool {
        !(self.params.is_empty() && self.begins.is_empty() && self.ends.is_empty())
    }
}

/// A recording's limits and histograms: what each wire code does, the limits now, and every
/// thread's state.
#[derive(Debug)]
pub(crate) struct Aggregates {
    /// The lowest wire code of the recorded sets: `roles[i]` and `limits[i]` are code `base + i`'s.
    base: u16,
    roles: Vec<Role>,
    hists: Vec<HistDecl>,
    /// Each set's range of wire codes, for the divert word's bits.
    ranges: Vec<(u16, u16)>,
    /// The limit of each wire code now; changed under this lock, and `limits_gen` bumped.
    limits: Mutex<Vec<Option<Rate>>>,
    limits_gen: AtomicU64,
    /// Every thread's state, for the flushes.
    threads: Mutex<Vec<Arc<Mutex<ThreadAgg>>>>,
    /// Async spans open now: (histogram, id as `print` writes it) -> begin time.
    asyncs: Mutex<HashMap<(usize, String), u64>>,
    /// How often the writer thread flushes.
    pub(crate) period: Duration,
    ticks_per_second: u64,
    /// The stop's flush has run: later suppressions are counted lost.
    closed: AtomicBool,
}

/// One thread's limits and histograms.
#[derive(Debug)]
struct ThreadAgg {
    thread: u64,
    /// Set by the stop's flush: nothing counted after it is written.
    closed: bool,
    limiters: Limiters,
    /// Per declared histogram: its values since `since` (ticks).
    hists: Vec<Option<(Distribution, u64)>>,
    /// Per span histogram: the begin times of this thread's open spans.
    stacks: HashMap<usize, Vec<u64>>,
}

/// A thread's limiters, by wire code (`base` the recording's lowest): a slot each, no hash
/// on the path of a limited event.
#[derive(Debug)]
struct Limiters {
    base: u16,
    slots: Vec<Option<Limiter>>,
}

impl Limiters {
    fn get_mut(&mut self, wire: u16) -> Option<&mut Limiter> {
        self.slots.get_mut(usize::from(wire.wrapping_sub(self.base)))?.as_mut()
    }

    fn insert(&mut self, wire: u16, limiter: Limiter) -> &mut Limiter {
        let i = usize::from(wire.wrapping_sub(self.base));
        if i >= self.slots.len() {
            self.slots.resize(i + 1, None);
        }
        self.slots[i].insert(limiter)
    }

    /// Every limiter, with its wire code, by code.
    fn iter_mut(&mut self) -> impl Iterator<Item = (u16, &mut Limiter)> + '_ {
        let base = self.base;
        self.slots.iter_mut().enumerate().filter_map(move |(i, l)| Some((base.wrapping_add(i as u16), l.as_mut()?)))
    }
}

/// A thread's state of one limited event.
#[derive(Debug, Clone, Copy)]
struct Limiter {
    /// The limit it was made for: another resets it.
    rate: Rate,
    /// A token bucket's period in ticks (1 for every-Nth), computed once.
    cost: u128,
    /// Token bucket: tokens scaled by the period in ticks (a token is `period` units);
    /// every-Nth: events seen.
    credit: u128,
    /// When the bucket was last filled (ticks).
    last: u64,
    /// Events suppressed since the last `Suppressed` record that counted them.
    suppressed: u64,
    /// The time of the first of them (ticks).
    first: u64,
}

impl Limiter {
    fn new(rate: Rate, now: u64, period_ticks: u128) -> Limiter {
        // A bucket starts with one token: the first event passes. A cycle starts at its first.
        let credit = match rate {
            Rate::PerPeriod { .. } => period_ticks,
            Rate::Sample { .. } => 0,
        };
        Limiter { rate, cost: period_ticks.max(1), credit, last: now, suppressed: 0, first: 0 }
    }

    /// Whether the event at `now` is kept.
    fn keep(&mut self, now: u64) -> bool {
        match self.rate {
            Rate::PerPeriod { count, .. } => {
                let cost = self.cost;
                let elapsed = u128::from(now.saturating_sub(self.last));
                self.last = self.last.max(now);
                let capacity = u128::from(count) * cost;
                self.credit = self.credit.saturating_add(elapsed.saturating_mul(u128::from(count))).min(capacity);
                if self.credit >= cost {
                    self.credit -= cost;
                    true
                } else {
                    false
                }
            }
            Rate::Sample { keep, of } => {
                let seen = self.credit;
                self.credit = (seen + 1) % u128::from(of.max(1));
                seen < u128::from(keep)
            }
        }
    }
}

/// This thread's state in the running recording, and its copy of the limits.
struct Local {
    generation: u64,
    agg: Arc<Mutex<ThreadAgg>>,
    limits_gen: u64,
    limits: Vec<Option<Rate>>,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
    /// The wire code of the event `admit::admit` let through only to be measured (its limit did
    /// not keep it), until the thread buffer takes it ([`unkept_code`]).
    static UNKEPT: Cell<Option<u16>> = const { Cell::new(None) };
}

/// Whether the event of wire code `code` is the one `admit::admit` let through on this thread
/// only to be measured; the mark is taken.
pub(crate) fn unkept_code(code: u16) -> bool {
    UNKEPT
        .try_with(|u| {
            let marked = u.get() == Some(code);
            if marked {
                u.set(None);
            }
            marked
        })
        .unwrap_or(false)
}

impl Aggregates {
    /// The limits and histograms of a recording whose header is `header` (their
    /// declarations), with `limits` the limit of each wire code to start with
    /// ([`initial_limits`]). A recording without either has one too, with nothing diverted:
    /// limits may come while it runs ([`set_limits`](Self::set_limits)).
    pub(crate) fn new(header: &Header, limits: Vec<(u16, Rate)>, period: Duration) -> Option<Aggregates> {
        let ranges: Vec<(u16, u16)> = header.sets.iter().filter_map(|s| s.range()).collect();
        let base = ranges.iter().map(|r| r.0).min().unwrap_or(0);
        let top = ranges.iter().map(|r| r.1).max().unwrap_or(0);
        let len = usize::from(top.saturating_sub(base)) + 1;
        let mut roles = vec![Role::default(); len];
        let mut hists = Vec::new();
        for set in &header.sets {
            let schema = &set.schema;
            let wire = |code: u16| set.wire_code_of(code).map(|w| usize::from(w - base));
            for h in &schema.histograms {
                let index = hists.len();
                hists.push(HistDecl { buckets: h.buckets });
                match &h.of {
                    HistogramOf::Param { event, param } => {
                        let p = schema.event_by_code(*event).and_then(|e| e.params.iter().position(|n| n == param));
                        if let (Some(w), Some(p)) = (wire(*event), p) {
                            roles[w].params.push((index, p));
                        }
                    }
                    HistogramOf::Span(name) => {
                        let Some(span) = schema.spans.iter().find(|s| &s.name == name) else { continue };
                        let id = |code: u16| {
                            let id = span.id.as_ref()?;
                            schema.event_by_code(code)?.params.iter().position(|n| n == id)
                        };
                        if let (Some(b), Some(e)) = (wire(span.begin), wire(span.end)) {
                            roles[b].begins.push((index, id(span.begin)));
                            roles[e].ends.push((index, id(span.end)));
                        }
                    }
                }
            }
        }
        let mut by_code = vec![None; len];
        for (wire, rate) in limits {
            if let Some(slot) = by_code.get_mut(usize::from(wire.wrapping_sub(base))) {
                *slot = Some(rate);
            }
        }
        Some(Aggregates {
            base,
            roles,
            hists,
            ranges,
            limits: Mutex::new(by_code),
            limits_gen: AtomicU64::new(0),
            threads: Mutex::new(Vec::new()),
            asyncs: Mutex::new(HashMap::new()),
            period,
            ticks_per_second: header.clock.ticks_per_second.max(1),
            closed: AtomicBool::new(false),
        })
    }

    fn role(&self, wire: u16) -> Option<&Role> {
        self.roles.get(usize::from(wire.wrapping_sub(self.base)))
    }

    /// Whether a histogram counts values of wire code `wire`.
    pub(crate) fn measures(&self, wire: u16) -> bool {
        self.role(wire).is_some_and(Role::measures)
    }

    /// The divert word's bits of the events that are limited now or that a histogram counts.
    pub(crate) fn mask(&self) -> u64 {
        let limits = lock(&self.limits);
        let mut mask = 0u64;
        for (i, role) in self.roles.iter().enumerate() {
            let limited = limits.get(i).is_some_and(Option::is_some);
            if !(limited || role.measures()) {
                continue;
            }
            let wire = self.base + i as u16;
            if let Some(&(first, _)) = self.ranges.iter().find(|(f, l)| (*f..=*l).contains(&wire)) {
                mask |= 1 << ((wire - first) % 64);
            }
        }
        mask
    }

    /// The nanoseconds of `ticks` of the recording's clock.
    fn nanos(&self, ticks: u64) -> u64 {
        u64::try_from(u128::from(ticks) * 1_000_000_000 / u128::from(self.ticks_per_second)).unwrap_or(u64::MAX)
    }

    /// A rate's period in ticks.
    fn period_ticks(&self, rate: Rate) -> u128 {
        match rate {
            Rate::PerPeriod { period_ns, .. } => {
                (u128::from(period_ns) * u128::from(self.ticks_per_second) / 1_000_000_000).max(1)
            }
            Rate::Sample { .. } => 1,
        }
    }

    /// This thread's state, registered on first use; its copy of the limits brought up to
    /// date. `f` gets the state and the limits.
    fn with_local<R>(
        &self,
        generation: u64,
        thread: u64,
        f: impl FnOnce(&Arc<Mutex<ThreadAgg>>, &[Option<Rate>]) -> R,
    ) -> Option<R> {
        LOCAL
            .try_with(|cell| {
                let mut local = cell.try_borrow_mut().ok()?;
                if local.as_ref().is_none_or(|l| l.generation != generation) {
                    let agg = Arc::new(Mutex::new(ThreadAgg {
                        thread,
                        closed: self.closed.load(Ordering::Relaxed),
                        limiters: Limiters { base: self.base, slots: Vec::new() },
                        hists: (0..self.hists.len()).map(|_| None).collect(),
                        stacks: HashMap::new(),
                    }));
                    lock(&self.threads).push(Arc::clone(&agg));
                    *local = Some(Local { generation, agg, limits_gen: u64::MAX, limits: Vec::new() });
                }
                let local = local.as_mut()?;
                // Acquire: pairs with the release in `set_limits`, after the table's change.
                let now = self.limits_gen.load(Ordering::Acquire);
                if local.limits_gen != now {
                    local.limits = lock(&self.limits).clone();
                    local.limits_gen = now;
                }
                Some(f(&local.agg, &local.limits))
            })
            .ok()
            .flatten()
    }

    /// Counts `event` (recorded by `thread` at `time`, its arguments read) into the
    /// histograms that count it.
    fn measure(&self, agg: &mut ThreadAgg, event: &Event<'_>, time: u64) {
        let Some(role) = self.role(event.desc.wire) else { return };
        let values: Vec<Value<'_>> = event.values().collect();
        for &(h, p) in &role.params {
            let value = match values.get(p) {
                Some(Value::Word(w)) => *w,
                Some(Value::Unsigned(u)) => u64::from(*u),
                _ => continue,
            };
            agg.record(h, value, time, &self.hists);
        }
        for &(h, id) in &role.ends {
            let begun = match id {
                None => agg.stacks.get_mut(&h).and_then(Vec::pop),
                Some(p) => values.get(p).and_then(|v| lock(&self.asyncs).remove(&(h, id_text(v)))),
            };
            if let Some(begun) = begun
                && time >= begun
            {
                agg.record(h, self.nanos(time - begun), time, &self.hists);
            }
        }
        for &(h, id) in &role.begins {
            match id {
                None => {
                    let stack = agg.stacks.entry(h).or_default();
                    if stack.len() >= MAX_DEPTH {
                        stack.remove(0);
                    }
                    stack.push(time);
                }
                Some(p) => {
                    if let Some(v) = values.get(p) {
                        let mut open = lock(&self.asyncs);
                        if open.len() < MAX_OPEN {
                            open.insert((h, id_text(v)), time);
                        }
                    }
                }
            }
        }
    }

    /// Sets the limits of the events `text` names (`EVENT_LIMIT`'s grammar, [`parse_limits`])
    /// over the ones now; returns every limit now, described as `EVENT_LIMIT` writes them.
    pub(crate) fn set_limits(&self, header: &Header, text: &str) -> Result<String, String> {
        let changes = parse_limits(text, header)?;
        {
            let mut limits = lock(&self.limits);
            for (wire, rate) in changes {
                if let Some(slot) = limits.get_mut(usize::from(wire.wrapping_sub(self.base))) {
                    *slot = rate;
                }
            }
        }
        // Release: a thread that sees the new number copies the table changed above.
        self.limits_gen.fetch_add(1, Ordering::Release);
        Ok(self.describe(header))
    }

    /// Every limit now, as `EVENT_LIMIT` writes them (`Test:Seq=100/s;Net:Send=1/100`), or
    /// `none`.
    pub(crate) fn describe(&self, header: &Header) -> String {
        let limits = lock(&self.limits).clone();
        let qualified = header.sets.len() > 1;
        let mut parts = Vec::new();
        for set in &header.sets {
            for event in &set.schema.events {
                let Some(wire) = set.wire_code_of(event.code) else { continue };
                if let Some(Some(rate)) = limits.get(usize::from(wire.wrapping_sub(self.base))) {
                    let kind = set.schema.kinds.get(usize::from(event.kind)).map_or("", |k| k.name.as_str());
                    let name = if qualified {
                        format!("{}:{kind}:{}", set.schema.name, event.name)
                    } else {
                        format!("{kind}:{}", event.name)
                    };
                    parts.push(format!("{name}={rate}"));
                }
            }
        }
        if parts.is_empty() { "none".to_owned() } else { parts.join(";") }
    }
}

impl ThreadAgg {
    fn record(&mut self, h: usize, value: u64, time: u64, hists: &[HistDecl]) {
        let Some(slot) = self.hists.get_mut(h) else { return };
        let (d, _) = slot.get_or_insert_with(|| (Distribution::new(hists[h].buckets), time));
        d.record(value);
    }
}

/// An id value as `print` writes it: the key of an async span's begin.
fn id_text(value: &Value<'_>) -> String {
    let mut text = String::new();
    let _ = write_value(&mut text, value);
    text
}

/// What a limited event's limit decided on its thread ([`Aggregates::decide`]).
pub(crate) enum Decision {
    /// Kept: recorded, after a `Suppressed` record of what the limit suppressed since the
    /// last one kept (count, window in nanoseconds), when it suppressed any.
    Kept(Option<(u64, u64)>),
    /// Not kept: suppressed and counted, or (`late`: after the stop's flush) lost.
    Unkept { late: bool },
}

impl Aggregates {
    /// Asks the limit of wire code `wire` on `thread` (of the recording of `generation`)
    /// whether the event it is about to record now (read from `clock` once the event is
    /// known to be limited) is kept; `None` when the event is not limited (or no state is to
    /// be had on this thread): it is recorded, and looked at.
    pub(crate) fn decide(&self, generation: u64, thread: u64, wire: u16, clock: &TimeSource) -> Option<Decision> {
        let decided = self.with_local(generation, thread, |state, limits| {
            let rate = limits.get(usize::from(wire.wrapping_sub(self.base))).copied().flatten()?;
            let now = clock.now();
            let mut state = lock(state);
            let closed = state.closed;
            let limiter = match state.limiters.get_mut(wire) {
                Some(l) if l.rate == rate => l,
                previous => {
                    // A new limit, or another: a fresh bucket, what it suppressed kept.
                    let pending = previous.map(|l| (l.suppressed, l.first));
                    let mut fresh = Limiter::new(rate, now, self.period_ticks(rate));
                    if let Some((suppressed, first)) = pending {
                        (fresh.suppressed, fresh.first) = (suppressed, first);
                    }
                    state.limiters.insert(wire, fresh)
                }
            };
            if limiter.keep(now) {
                let said = (limiter.suppressed > 0).then(|| (std::mem::take(&mut limiter.suppressed), limiter.first));
                Some(Decision::Kept(said.map(|(count, first)| (count, self.nanos(now.saturating_sub(first))))))
            } else if closed {
                Some(Decision::Unkept { late: true })
            } else {
                if limiter.suppressed == 0 {
                    limiter.first = now;
                }
                limiter.suppressed += 1;
                Some(Decision::Unkept { late: false })
            }
        });
        decided.flatten()
    }

    /// Gives `count` suppressions of `wire` back to `thread`'s own state: the `Suppressed`
    /// record that was to say them was refused for want of room.
    pub(crate) fn unsay(&self, generation: u64, thread: u64, wire: u16, count: u64) {
        self.with_local(generation, thread, |state, _| {
            let mut state = lock(state);
            if let Some(l) = state.limiters.get_mut(wire) {
                l.suppressed += count;
            }
        });
    }
}

/// Marks the event of wire code `wire` as let through on this thread only to be measured
/// (its limit did not keep it): the thread buffer takes the mark ([`unkept_code`]).
pub(crate) fn mark_unkept(wire: u16) {
    let _ = UNKEPT.try_with(|u| u.set(Some(wire)));
}

impl Aggregates {
    /// A kept event of wire code `wire`, recorded at `time` on `thread` as `record` (its
    /// header and arguments, in the native order): counted into the histograms that count
    /// it. Called by the thread buffer right after it wrote the record (`buffer`'s `watched`).
    pub(crate) fn measure_kept(&self, catalog: &Catalog, generation: u64, thread: u64, record: &[u8], time: u64) {
        let Some(Ok(mut rec)) = RecordIter::new(record, Order::NATIVE, 0).next() else { return };
        rec.time = time;
        let Entry::Event(event) = catalog.entry(rec, thread, Order::NATIVE) else { return };
        self.with_local(generation, thread, |state, _| self.measure(&mut lock(state), &event, time));
    }

    /// An event its limit did not keep, but a histogram counts, of wire code `code`: its
    /// arguments (written by `fill`) go to a scratch copy, never to a block, and are counted
    /// (module docs). On the thread buffer's diverted path (`buffer`'s `write_in`).
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn measure_unkept(
        &self,
        catalog: &Catalog,
        clock: &TimeSource,
        (generation, thread): (u64, u64),
        code: u16,
        fixed: usize,
        strs: &[Text<'_>],
        fill: &mut dyn FnMut(&mut ArgWriter<'_>),
    ) {
        let mut cut = strs.to_vec();
        if !fit_texts(&mut cut, RECORD_HEADER_LEN + fixed, MAX_RECORD_LEN) {
            return;
        }
        let len = RECORD_HEADER_LEN + fixed + cut.iter().map(|s| 2 + s.bytes.len()).sum::<usize>();
        let mut record = vec![0u8; len];
        put_record_header(Order::NATIVE, &mut record, 0, code, len as u16, 0);
        fill(&mut ArgWriter::new(Order::NATIVE, &mut record[RECORD_HEADER_LEN..], &cut));
        let time = clock.now();
        self.measure_kept(catalog, generation, thread, &record, time);
    }
}

/// One record the flushes write: a `Suppressed` or a `Histogram`.
pub(crate) enum Said {
    Suppressed { thread: u64, code: u16, count: u64, window: u64 },
    Histogram { head: body::HistogramHead, text: String },
}

impl Said {
    pub(crate) fn values(&self) -> (u16, Vec<Value<'_>>) {
        match self {
            Said::Suppressed { thread, code, count, window } => (
                builtin::SUPPRESSED,
                vec![
                    Value::Word(*thread),
                    Value::Unsigned(u32::from(*code)),
                    Value::Word(*count),
                    Value::Word(*window),
                ],
            ),
            Said::Histogram { head, text } => (
                builtin::HISTOGRAM,
                vec![
                    Value::Word(head.thread),
                    Value::Unsigned(head.histogram),
                    Value::Word(head.since),
                    Value::Word(head.count),
                    Value::Word(head.sum),
                    Value::Word(head.min),
                    Value::Word(head.max),
                    Value::Str(Text::new(text)),
                ],
            ),
        }
    }
}

/// Takes what every thread counted since the last flush, at `now`: their `Suppressed` and
/// `Histogram` records; with `closing` (the stop's), the threads' states are closed, and what
/// comes later is not counted (a suppression is then counted lost: `admit::admit`).
pub(crate) fn take_all(agg: &Aggregates, now: u64, closing: bool) -> Vec<Said> {
    if closing {
        agg.closed.store(true, Ordering::Relaxed);
    }
    let threads = lock(&agg.threads).clone();
    let mut said = Vec::new();
    for state in &threads {
        let mut state = lock(state);
        state.closed |= closing;
        let thread = state.thread;
        for (code, l) in state.limiters.iter_mut() {
            if l.suppressed > 0 {
                let count = std::mem::take(&mut l.suppressed);
                let window = agg.nanos(now.saturating_sub(l.first));
                said.push(Said::Suppressed { thread, code, count, window });
            }
        }
        for (h, slot) in state.hists.iter_mut().enumerate() {
            let Some((d, since)) = slot else { continue };
            if d.count() > 0 {
                said.extend(histogram_records(thread, h as u32, *since, d));
            }
            d.clear();
            *since = now;
        }
    }
    // The threads that ended, with nothing left to say, are let go.
    lock(&agg.threads).retain(|t| Arc::strong_count(t) > 1 || !lock(t).holds_anything());
    said
}

impl ThreadAgg {
    /// Whether anything counted here is still to be written.
    fn holds_anything(&self) -> bool {
        self.limiters.slots.iter().flatten().any(|l| l.suppressed > 0)
            || self.hists.iter().flatten().any(|(d, _)| d.count() > 0)
    }
}

/// The records of `d`, counted by `thread` for histogram `h` since `since`: one, or several
/// of the same period when its buckets' text is longer than one record holds (each with some
/// of the buckets, their counts adding up; the first carries the sum; docs/FORMAT.md,
/// "Histograms").
fn histogram_records(thread: u64, h: u32, since: u64, d: &Distribution) -> Vec<Said> {
    let buckets = d.buckets();
    let mut parts: Vec<(String, u64, usize, usize)> = Vec::new();
    for (i, n) in d.nonempty() {
        let pair = format!("{i}:{n}");
        match parts.last_mut() {
            Some((text, count, _, last)) if text.len() + 1 + pair.len() <= BUCKETS_TEXT_MAX => {
                text.push(' ');
                text.push_str(&pair);
                *count += n;
                *last = i;
            }
            _ => parts.push((pair, n, i, i)),
        }
    }
    let (min, max) = (d.min().unwrap_or(0), d.max().unwrap_or(0));
    let n = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(k, (text, count, first, last))| {
            let lo = event_format::histogram::bounds(first, buckets).0;
            let hi = u64::try_from(event_format::histogram::bounds(last, buckets).1 - 1).unwrap_or(u64::MAX);
            let head = body::HistogramHead {
                thread,
                histogram: h,
                since,
                count,
                sum: if k == 0 { d.sum() } else { 0 },
                min: if k == 0 { min } else { lo },
                max: if k + 1 == n { max } else { hi },
            };
            Said::Histogram { head, text }
        })
        .collect()
}

/// Which flush: when, and where its records go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Flush {
    /// The writer thread's, every period and before a segment is sealed: streaming, to the
    /// sinks in blocks of thread 0 (never refused); under `ring`, into the writer thread's own
    /// ring (what cannot be written there goes back, for the stop).
    Period,
    /// The stop's first under `ring`, on the stopping thread before the stop takes the rings:
    /// into its ring (a ring file's slot: so that the file holds them), what cannot be written
    /// going back; the threads' states are closed.
    IntoRing,
    /// The stop's last, once the threads' records are taken: what is left, to the sinks in
    /// blocks of thread 0; the threads' states are closed. Suppressions that no sink takes (a
    /// recording into a ring file alone) are counted lost.
    Last,
}

/// Gives `count` suppressions of `code` back to `thread`'s state.
pub(crate) fn put_back(agg: &Aggregates, thread: u64, code: u16, count: u64, now: u64) {
    let threads = lock(&agg.threads).clone();
    if let Some(state) = threads.iter().find(|t| lock(t).thread == thread) {
        let mut state = lock(state);
        let rate = Rate::Sample { keep: 1, of: 1 };
        let l = match state.limiters.get_mut(code) {
            Some(l) => l,
            None => state.limiters.insert(code, Limiter::new(rate, now, 1)),
        };
        if l.suppressed == 0 {
            l.first = now;
        }
        l.suppressed += count;
    }
}

/// The limits a recording starts with: events.def's (`limit=`), then `EVENT_LIMIT`'s (or
/// `Recorder::limit`'s) entries over them, by wire code.
pub(crate) fn initial_limits(header: &Header, text: Option<&str>) -> Result<Vec<(u16, Rate)>, ConfigError> {
    let mut limits: HashMap<u16, Rate> = HashMap::new();
    for set in &header.sets {
        for limit in &set.schema.limits {
            if let Some(wire) = set.wire_code_of(limit.event) {
                limits.insert(wire, limit.rate);
            }
        }
    }
    if let Some(text) = text {
        let changes = parse_limits(text, header).map_err(|message| ConfigError::env("EVENT_LIMIT", text, message))?;
        for (wire, rate) in changes {
            match rate {
                Some(rate) => limits.insert(wire, rate),
                None => limits.remove(&wire),
            };
        }
    }
    let mut limits: Vec<(u16, Rate)> = limits.into_iter().collect();
    limits.sort_by_key(|l| l.0);
    Ok(limits)
}

/// Reads `EVENT_LIMIT`'s grammar against `header`'s sets: entries `SELECTION=LIMIT` separated
/// by `;`, the selection in `EVENT_CONTROL`'s grammar (`Test:Seq`, `Net`, globs, `set:Kind`),
/// the limit a rate (`1000/s`, `1/100`) or `off`. Later entries win. Returns each named
/// event's wire code and its limit (`None`: off). The error is one line.
pub(crate) fn parse_limits(text: &str, header: &Header) -> Result<Vec<(u16, Option<Rate>)>, String> {
    let schemas: Vec<&Schema> = header.sets.iter().map(|s| &s.schema).collect();
    let mut changes = Vec::new();
    let mut entries = 0;
    for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        entries += 1;
        let Some((selection, rate)) = entry.split_once('=') else {
            return Err(format!(
                "`{entry}` has no limit; write SELECTION=LIMIT entries separated by `;`, such as `Test:Seq=100/s;Net=1/100`"
            ));
        };
        let (selection, rate_text) = (selection.trim(), rate.trim());
        let rate = match rate_text {
            "off" | "none" => None,
            _ => Some(Rate::parse(rate_text).map_err(|why| format!("`{entry}`: {why}; {}", Rate::ACCEPTED))?),
        };
        let selections =
            event_format::select::from_env_text(selection, &schemas).map_err(|e| format!("`{entry}`: {e}"))?;
        let mut named = 0;
        for (set, chosen) in header.sets.iter().zip(&selections) {
            for event in &set.schema.events {
                if chosen.records(event)
                    && let Some(wire) = set.wire_code_of(event.code)
                {
                    changes.push((wire, rate));
                    named += 1;
                }
            }
        }
        if named == 0 {
            return Err(format!(
                "`{entry}` names no event; name events as EVENT_CONTROL does (`Kind:Event`, `Kind`, `set:Kind`)"
            ));
        }
    }
    if entries == 0 {
        return Err("names no limit; write SELECTION=LIMIT entries such as `Test:Seq=100/s;Net=1/100`".to_owned());
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_bucket_starts_with_one_and_keeps_its_rate() {
        // 100 a second, at 1 GHz: a period of 1e9 ticks.
        let rate = Rate::PerPeriod { count: 100, period_ns: 1_000_000_000 };
        let period = 1_000_000_000u128;
        let mut l = Limiter::new(rate, 0, period);
        // 10 000 events evenly over 2 s: one at once, then one every 10 ms.
        let kept = (0..10_000u64).filter(|i| l.keep(i * 200_000)).count();
        assert!((199..=201).contains(&kept), "{kept}");
        // Idle for a second: a burst of 100 passes, no more.
        let mut l = Limiter::new(rate, 0, period);
        assert!(l.keep(0));
        let burst = (0..150).filter(|_| l.keep(5_000_000_000)).count();
        assert_eq!(burst, 100);
    }

    #[test]
    fn every_nth_keeps_the_first_k_of_each_n() {
        let mut l = Limiter::new(Rate::Sample { keep: 2, of: 5 }, 0, 1);
        let kept: Vec<bool> = (0..10).map(|_| l.keep(0)).collect();
        assert_eq!(kept, [true, true, false, false, false, true, true, false, false, false]);
    }

    #[test]
    fn a_long_histogram_is_several_records_that_add_up() {
        let mut d = Distribution::new(Buckets { precision: 7 });
        for v in 0..100_000u64 {
            d.record(v * 7919);
        }
        let records = histogram_records(3, 0, 5, &d);
        assert!(records.len() > 1);
        let mut merged = Distribution::new(d.buckets());
        for r in &records {
            let Said::Histogram { head, text } = r else { panic!() };
            assert!(text.len() <= BUCKETS_TEXT_MAX);
            let part = Distribution::parse(d.buckets(), head.count, head.sum, head.min, head.max, text).unwrap();
            merged.merge(&part).unwrap();
        }
        assert_eq!(merged, d);
    }
}
