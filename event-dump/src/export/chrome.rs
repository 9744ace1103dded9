//! `export --to chrome`: Chrome trace-event JSON, which Perfetto's UI (ui.perfetto.dev) and
//! chrome://tracing open.
//!
//! What the file holds (processes, threads, events, slices, counters, flows, time) is stated
//! once, in docs/OUTPUT.md ("Chrome JSON").

use super::timeline::Timeline;
use super::{Said, Window};
use crate::export::Item;
use crate::json;
use crate::log::{DumpError, Log};
use crate::render::Annotations;
use event_format::builtins::{BuiltinEvent, interned_arg};
use event_format::decode::{Desc, Event};
use event_format::ledger::Ledger;
use event_format::roles::{CounterUse, Flows, IdValue, Pairer, Roles, SpanKey, SpanUse};
use event_format::wire::Value;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

pub(crate) fn export(logs: &mut [Log], out: &Path, window: &mut Window) -> Result<ExitCode, DumpError> {
    let (ledgers, notes) =
        super::trace_file::write_whole(out, "trace.json", |file| write_trace(logs, file, &mut *window))?;
    Said::of(&ledgers).report("chrome", &notes, window);
    Ok(ExitCode::SUCCESS)
}

/// Writes nanoseconds as microseconds with 3 decimals.
fn write_us(out: &mut String, ns: i128) {
    let sign = if ns < 0 { "-" } else { "" };
    let ns = ns.abs();
    let _ = write!(out, "{sign}{}.{:03}", ns / 1000, ns % 1000);
}

/// Which async slice an event is in: its span's name (qualified by set as slices are), and
/// its id as `print` writes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct AsyncKey {
    name: String,
    id: String,
}

impl AsyncKey {
    /// The key of an event of async span `name` whose id is `key`'s, read from `event`'s
    /// parameter `param`.
    fn of(name: &str, event: &Event<'_>, param: usize) -> Option<AsyncKey> {
        let value = event.values().nth(param)?;
        let mut id = String::new();
        event_format::text::write_value(&mut id, &value).ok()?;
        Some(AsyncKey { name: name.to_owned(), id })
    }

    /// The id Chrome pairs `b` and `e` events by: a hash of the slice's name and id, as a
    /// hex string, so that `Foo` and `Bar` of one id are two slices. (The id itself is in
    /// the args.)
    fn chrome_id(&self) -> String {
        // FNV-1a, 64 bits: stable across runs and platforms.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.name.bytes().chain([0]).chain(self.id.bytes()) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{hash:#x}")
    }
}

/// An event's name in the trace: `set:Name` when the log holds more than one set.
fn event_name(desc: &Desc) -> std::borrow::Cow<'_, str> {
    if desc.qualified { format!("{}:{}", desc.set, desc.name).into() } else { desc.name.as_str().into() }
}

/// A slice begun and not yet ended: its name and category, for an async slice its key, and
/// whether the window selected its begin (a span left out is paired all the same, so that
/// its end closes it, but nothing of it is written).
#[derive(Debug)]
struct Open {
    name: String,
    cat: String,
    key: Option<AsyncKey>,
    selected: bool,
}

/// The `traceEvents` array, one event per line.
struct Events<W: Write> {
    out: W,
    first: bool,
    line: String,
}

impl<W: Write> Events<W> {
    /// Starts a new event line (the separator first).
    fn begin(&mut self) -> &mut String {
        self.line.clear();
        self.line.push_str(if self.first { "\n" } else { ",\n" });
        self.first = false;
        &mut self.line
    }

    fn end(&mut self) -> io::Result<()> {
        self.out.write_all(self.line.as_bytes())
    }
}

/// Where an event line goes and what it binds: (ns, pid, tid), an async slice's key, and a
/// flow's (id, in, out).
#[derive(Clone, Copy)]
struct At<'k> {
    ns: i128,
    pid: u64,
    tid: u64,
    key: Option<&'k AsyncKey>,
    flow: Option<(u64, bool, bool)>,
    /// The thread's current `tracing` span (its latest `SpanCurrent`; 0: none): the event's
    /// arg `span`.
    span: u64,
}

/// The keys every event line has, up to `args` (which the caller writes): an instant with
/// a flow is a zero-length slice (`"X"`) carrying it.
fn head(line: &mut String, name: &str, cat: &str, ph: &str, at: At<'_>) {
    let ph = if ph == "i" && at.flow.is_some() { "X" } else { ph };
    line.push_str("{\"name\":");
    json::string(line, name);
    line.push_str(",\"cat\":");
    json::string(line, cat);
    let _ = write!(line, ",\"ph\":\"{ph}\",");
    match ph {
        "i" => line.push_str("\"s\":\"t\","),
        "X" => line.push_str("\"dur\":0,"),
        _ => {}
    }
    if let Some(key) = at.key {
        line.push_str("\"scope\":");
        json::string(line, &key.name);
        let _ = write!(line, ",\"id2\":{{\"local\":\"{}\"}},", key.chrome_id());
    }
    if let Some((id, incoming, outgoing)) = at.flow {
        let _ = write!(line, "\"bind_id\":{id},");
        if incoming {
            line.push_str("\"flow_in\":true,");
        }
        if outgoing {
            line.push_str("\"flow_out\":true,");
        }
    }
    line.push_str("\"ts\":");
    write_us(line, at.ns);
    let _ = write!(line, ",\"pid\":{},\"tid\":{},\"args\":", at.pid, at.tid);
}

/// Writes one event line: its head as `ph`, named `name`, with the event's parameters as args.
fn event_line<W: Write>(
    events: &mut Events<W>,
    (name, cat, ph): (&str, &str, &str),
    at: At<'_>,
    ann: &Annotations,
    file: usize,
    event: &Event<'_>,
) -> io::Result<()> {
    let line = events.begin();
    let span = at.span;
    head(line, name, cat, ph, at);
    write_args(line, ann, file, event, span);
    line.push('}');
    events.end()
}

/// A slice's end that no event of its own ends: `{"unended":true}`.
fn unended<W: Write>(events: &mut Events<W>, open: &Open, at: At<'_>) -> io::Result<()> {
    let line = events.begin();
    head(line, &open.name, &open.cat, if open.key.is_some() { "e" } else { "E" }, At { key: open.key.as_ref(), ..at });
    line.push_str("{\"unended\":true}}");
    events.end()
}

/// A metadata event (`process_name`, `thread_name`).
fn metadata(line: &mut String, what: &str, pid: u64, tid: u64, name: &str) {
    let _ = write!(line, "{{\"name\":\"{what}\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":");
    json::string(line, name);
    line.push_str("}}");
}

/// The event's parameters as a JSON object, each value as `print --format json` writes it
/// ([`json::value`]), with labels beside their address (`"name (label)"`).
///
/// The `tracing` fields of a built-in `TraceEvent`, `SpanEnter`, `SpanOpen` or `SpanRecord` are
/// an object by name ([`event_format::fields::of_event`]): a span event's `fields` is that object instead of
/// its text, a `TraceEvent` has it as `"fields"` beside its `text`; a text that does not
/// read as fields (an old log's) stays a string.
/// An event of a thread inside a `tracing` span (`span`, not 0) has `"span"` too.
fn write_args(out: &mut String, ann: &Annotations, file: usize, event: &Event<'_>, span: u64) {
    out.push('{');
    let traced = event_format::fields::of_event(event);
    let fields_at = event_format::fields::fields_param(event);
    for (i, (name, value)) in event.desc.params.iter().zip(event.values()).enumerate() {
        if i > 0 {
            out.push(',');
        }
        json::string(out, name);
        out.push(':');
        match &traced {
            Some(fields) if fields_at == Some(i) => json::fields(out, fields),
            _ => json::value(out, &value),
        }
        let label = match value {
            Value::Pointer(v) | Value::Address(v) => ann.label(file, v),
            Value::Word(v) if interned_arg(event.desc) == Some(i) => ann.interned(file, v),
            _ => None,
        };
        if let Some(label) = label {
            out.push(',');
            json::string(out, &format!("{name} (label)"));
            out.push(':');
            json::string(out, label);
        }
    }
    if let Some(fields) = traced.as_ref().filter(|_| fields_at.is_none()) {
        out.push_str(",\"fields\":");
        json::fields(out, fields);
    }
    // Not on an event that has a `span` of its own (the bridge's span events).
    if span != 0 && !event.desc.params.iter().any(|p| p == "span") {
        let _ = write!(out, ",\"span\":{span}");
    }
    out.push('}');
}

/// Reads the logs and writes the whole trace of what `window` selects to `out` (a span by
/// its begin: module docs of `export`); each log's ledger, and notes on the spans that were
/// not paired. The [`Plan`] is made from the headers, then the [`Trace`] is written: its
/// head, each event, and what the logs left open.
fn write_trace(logs: &mut [Log], out: impl Write, window: &mut Window) -> io::Result<(Vec<Ledger>, Vec<String>)> {
    let plan = Plan::new(logs);
    let mut trace = Trace::new(out, logs.len());
    trace.head(&plan)?;
    let ledgers = super::merge_all(logs, "exported", |Item { file, event }| {
        let selected = window.keeps(file, &event);
        trace.event(&plan, file, &event, selected)
    })?;
    let notes = trace.finish(&plan)?;
    Ok((ledgers, notes))
}

/// What the trace holds before any event is read, from the logs' headers: where each log's
/// events go, its process's name and labels, and what its events mean.
struct Plan {
    /// Each log's pid and times.
    timeline: Timeline,
    /// The logs' paths, for `otherData`.
    paths: Vec<String>,
    /// Each log's process name and its recording's labels (`service=api`, ...).
    processes: Vec<(String, Vec<String>)>,
    /// Each log's roles.
    roles: Vec<Roles>,
}

impl Plan {
    fn new(logs: &[Log]) -> Plan {
        let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
        let names = crate::identity::process_names(&headers);
        let processes = names
            .into_iter()
            .zip(&headers)
            .map(|(name, h)| (name, h.properties.labels.iter().map(|(k, v)| format!("{k}={v}")).collect()))
            .collect();
        Plan {
            timeline: Timeline::new(logs),
            paths: logs.iter().map(|l| l.path().display().to_string()).collect(),
            processes,
            roles: headers.iter().map(|h| Roles::new(&h.sets)).collect(),
        }
    }
}

/// The trace as it is written: the lines so far, and what the events read so far left to
/// pair, to name and to bind.
struct Trace<W: Write> {
    events: Events<W>,
    pairers: Vec<Pairer<Open>>,
    flows: Vec<Flows>,
    ann: Annotations,
    /// Each thread's track, by (log, thread): the time of its latest event, in ns.
    tracks: BTreeMap<(usize, u64), i128>,
    /// Each thread's name, by (log, thread).
    names: BTreeMap<(usize, u64), String>,
    /// Each thread's current `tracing` span, by (log, thread).
    current: HashMap<(usize, u64), u64>,
    /// Each log's latest event, in ns on the trace's time line, and its thread.
    last: BTreeMap<usize, (i128, u64)>,
    /// Slices cut by an enclosing end.
    cut: u64,
    /// Ends of spans whose begin the window left out, exported as instants.
    begun_outside: u64,
}

impl<W: Write> Trace<W> {
    fn new(out: W, logs: usize) -> Trace<W> {
        Trace {
            events: Events { out, first: true, line: String::new() },
            pairers: (0..logs).map(|_| Pairer::new()).collect(),
            flows: (0..logs).map(|_| Flows::new()).collect(),
            ann: Annotations::default(),
            tracks: BTreeMap::new(),
            names: BTreeMap::new(),
            current: HashMap::new(),
            last: BTreeMap::new(),
            cut: 0,
            begun_outside: 0,
        }
    }

    /// The file's head, up to the `traceEvents` array, and each process's metadata.
    fn head(&mut self, plan: &Plan) -> io::Result<()> {
        let events = &mut self.events;
        events.out.write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":{\"exporter\":")?;
        let mut text = String::new();
        json::string(&mut text, &format!("event-dump {}", env!("CARGO_PKG_VERSION")));
        text.push_str(",\"logs\":[");
        for (i, path) in plan.paths.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            json::string(&mut text, path);
        }
        text.push_str("]},\"traceEvents\":[");
        events.out.write_all(text.as_bytes())?;
        for (&pid, (name, labels)) in plan.timeline.pids.iter().zip(&plan.processes) {
            metadata(events.begin(), "process_name", pid, 0, name);
            events.end()?;
            // The recording's labels, as Chrome's own process labels.
            if !labels.is_empty() {
                let line = events.begin();
                let _ = write!(
                    line,
                    "{{\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"args\":{{\"labels\":"
                );
                json::string(line, &labels.join(","));
                line.push_str("}}");
                events.end()?;
            }
        }
        Ok(())
    }

    /// The lines of one event of log `file`: its instant, or the begin or end of its span,
    /// and its counters; of an event the window did not select, only what ends a selected
    /// begin. Labels, interned strings and thread names are learned from every event,
    /// selected or not, as `print` learns them.
    fn event(&mut self, plan: &Plan, file: usize, event: &Event<'_>, selected: bool) -> io::Result<()> {
        self.ann.learn(file, event);
        let builtin = BuiltinEvent::of(event);
        if let Some(BuiltinEvent::ThreadName { thread, name }) = builtin {
            self.names.insert((file, thread), name.to_string_lossy().into_owned());
        }
        let ns = plan.timeline.ns(file, event.time);
        if selected {
            self.tracks.insert((file, event.thread), ns);
            self.last.insert(file, (ns, event.thread));
        }
        if let Some(BuiltinEvent::SpanCurrent { span }) = builtin {
            // No event of its own: the later events of its thread carry its span.
            self.current.insert((file, event.thread), span);
            return Ok(());
        }
        // `set:Kind` when the log holds more than one set.
        let cat = event.desc.full_kind();
        let instant = event_name(event.desc);
        let span = self.current.get(&(file, event.thread)).copied().unwrap_or(0);
        let at = At { ns, pid: plan.timeline.pids[file], tid: event.thread, key: None, flow: None, span };
        let roles = &plan.roles[file];
        let Some(role) = roles.of(event.desc.wire) else {
            return if selected {
                event_line(&mut self.events, (&instant, &cat, "i"), at, &self.ann, file, event)
            } else {
                Ok(())
            };
        };
        // The flows it takes part in (each piece of work steps on); a Chrome event binds one.
        let n_logs = plan.roles.len() as u64;
        let links: Vec<(u64, bool, bool)> = role
            .flows
            .iter()
            .filter_map(|f| {
                let link = self.flows[file].step(f.flow, IdValue::of(&event.values().nth(f.param)?), f.step)?;
                Some((link.serial * n_logs + file as u64, link.incoming, link.outgoing))
            })
            .collect();
        // Bound by the first line that can carry it: a begin's, or the instant's. (The flows
        // step on every event, so that a flow's ids stay those of the whole log.)
        let mut flow = links.first().copied().filter(|_| selected);
        let mut shown = false;
        if let Some(end) = role.ends {
            shown |= self.end(roles, &end, (file, event, selected), at)?;
        }
        if let Some(begin) = role.begins {
            shown |= self.begin(roles, &begin, (file, event, selected), &cat, at, &mut flow)?;
        }
        if !selected {
            return Ok(());
        }
        if !shown {
            event_line(&mut self.events, (&instant, &cat, "i"), At { flow, ..at }, &self.ann, file, event)?;
        }
        if !role.counters.is_empty() {
            self.counters(roles, &role.counters, (&instant, &cat), at, event)?;
        }
        Ok(())
    }

    /// The end of the span `event` ends, if its begin is open: the slices opened inside it
    /// and still open end with it, and its own end line is written when its begin was
    /// selected. Whether it wrote that line.
    fn end(
        &mut self,
        roles: &Roles,
        end: &SpanUse,
        (file, event, selected): (usize, &Event<'_>, bool),
        at: At<'_>,
    ) -> io::Result<bool> {
        let Some(key) = roles.key(end, event) else { return Ok(false) };
        let Some(ended) = self.pairers[file].end(event.thread, &key) else { return Ok(false) };
        for inner in ended.cut.iter().filter(|o| o.selected) {
            self.cut += 1;
            unended(&mut self.events, inner, at)?;
        }
        let open = ended.begin;
        if !open.selected {
            // Its begin was left out: the span is left out, and this end, when selected, is
            // an instant.
            self.begun_outside += u64::from(selected);
            return Ok(false);
        }
        self.tracks.insert((file, event.thread), at.ns);
        self.last.insert(file, (at.ns, event.thread));
        let ph = if open.key.is_some() { "e" } else { "E" };
        // An async end is keyed by its own id, and has its begin's category: Chrome pairs `b`
        // and `e` within one.
        let key = match (&open.key, end.pairing) {
            (Some(_), event_format::roles::Pairing::Async { param }) => AsyncKey::of(&open.name, event, param),
            _ => None,
        };
        let at = At { key: key.as_ref(), ..at };
        event_line(&mut self.events, (&open.name, &open.cat, ph), at, &self.ann, file, event)?;
        Ok(true)
    }

    /// The begin of the span `event` begins: paired whether selected or not, its line
    /// written when selected, binding `flow` (taken). Whether it wrote that line.
    fn begin(
        &mut self,
        roles: &Roles,
        begin: &SpanUse,
        (file, event, selected): (usize, &Event<'_>, bool),
        cat: &str,
        at: At<'_>,
        flow: &mut Option<(u64, bool, bool)>,
    ) -> io::Result<bool> {
        let Some(key) = roles.key(begin, event) else { return Ok(false) };
        let name = roles.begin_name(begin, event).into_owned();
        let async_key = match (&key, begin.pairing) {
            (SpanKey::Async(..), event_format::roles::Pairing::Async { param }) => AsyncKey::of(&name, event, param),
            _ => None,
        };
        if selected {
            let ph = if async_key.is_some() { "b" } else { "B" };
            let at = At { key: async_key.as_ref(), flow: flow.take(), ..at };
            event_line(&mut self.events, (&name, cat, ph), at, &self.ann, file, event)?;
        }
        self.pairers[file].begin(event.thread, key, Open { name, cat: cat.to_owned(), key: async_key, selected });
        Ok(selected)
    }

    /// One counter event of the event's name, a series per counter it samples.
    fn counters(
        &mut self,
        roles: &Roles,
        counters: &[CounterUse],
        (name, cat): (&str, &str),
        at: At<'_>,
        event: &Event<'_>,
    ) -> io::Result<()> {
        let line = self.events.begin();
        head(line, name, cat, "C", at);
        line.push('{');
        for (i, counter) in counters.iter().enumerate() {
            let Some(value) = event.values().nth(counter.param) else { continue };
            if i > 0 {
                line.push(',');
            }
            json::string(line, &roles.counters()[counter.counter as usize].name);
            line.push(':');
            json::value(line, &value);
        }
        line.push_str("}}");
        self.events.end()
    }

    /// Ends what the logs left open and names the threads, closes the file, and says what
    /// was not paired.
    fn finish(mut self, plan: &Plan) -> io::Result<Vec<String>> {
        let pids = &plan.timeline.pids;
        let mut unmatched = 0;
        let mut never = self.cut;
        let mut threads: BTreeMap<(usize, u64), Vec<Open>> = BTreeMap::new();
        let mut asyncs: Vec<(usize, Open)> = Vec::new();
        for (file, pairer) in std::mem::take(&mut self.pairers).into_iter().enumerate() {
            unmatched += pairer.unmatched();
            never += pairer.given_up();
            let left = pairer.finish();
            for (thread, open) in left.threads {
                let open: Vec<Open> = open.into_iter().map(|(_, o)| o).filter(|o| o.selected).collect();
                never += open.len() as u64;
                threads.insert((file, thread), open);
            }
            let opens = left.asyncs.into_iter().flat_map(|(_, opens)| opens.into_iter().filter(|o| o.selected));
            let before = asyncs.len();
            asyncs.extend(opens.map(|o| (file, o)));
            never += (asyncs.len() - before) as u64;
        }
        let events = &mut self.events;
        // Async slices never ended end at their log's last event, marked: by log, name and
        // id, the latest first.
        asyncs.sort_by(|a, b| (a.0, &a.1.key).cmp(&(b.0, &b.1.key)));
        for (file, open) in &asyncs {
            let (ns, thread) = self.last.get(file).copied().unwrap_or_default();
            unended(events, open, At { ns, pid: pids[*file], tid: thread, key: None, flow: None, span: 0 })?;
        }
        // Slices never ended end at their thread's last event, marked, innermost first.
        for (&(file, thread), &last_ns) in &self.tracks {
            let at = At { ns: last_ns, pid: pids[file], tid: thread, key: None, flow: None, span: 0 };
            for open in threads.remove(&(file, thread)).unwrap_or_default() {
                unended(events, &open, at)?;
            }
            let name = self.names.get(&(file, thread)).cloned().unwrap_or_else(|| format!("T{thread}"));
            metadata(events.begin(), "thread_name", pids[file], thread, &name);
            events.end()?;
        }
        events.out.write_all(b"\n]}\n")?;
        events.out.flush()?;
        Ok(notes(never, self.begun_outside, unmatched))
    }
}

/// The notes on the spans that were not paired: `never` ended, `begun_outside` the window
/// (their ends exported as instants), `unmatched` ends with no open span.
fn notes(never: u64, begun_outside: u64, unmatched: u64) -> Vec<String> {
    let mut notes = Vec::new();
    if never > 0 {
        notes.push(format!(
            "{never} {} never ended (each closed at its thread's or log's last event, or with the span enclosing it, \
             marked \"unended\")",
            if never == 1 { "span" } else { "spans" }
        ));
    }
    if begun_outside > 0 {
        notes.push(format!(
            "{begun_outside} {} whose begin the choice left out, exported as {}",
            if begun_outside == 1 { "span end" } else { "span ends" },
            if begun_outside == 1 { "an instant" } else { "instants" }
        ));
    }
    if unmatched > 0 {
        notes.push(format!(
            "{unmatched} {} with no open span, exported as {}",
            if unmatched == 1 { "span end" } else { "span ends" },
            if unmatched == 1 { "an instant" } else { "instants" }
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use event_format::text::Seconds;
    use event_format::wire::Clock;

    #[test]
    fn microseconds_are_exact() {
        let clock = Clock {
            source: event_format::wire::ClockSource::Tsc,
            ticks_per_second: 3_000_000_000,
            ref_ticks: 0,
            ref_wall_ns: 0,
            start_ticks: 3_000,
        };
        let seconds = Seconds::new(&clock);
        let mut s = String::new();
        write_us(&mut s, seconds.nanos(3_000 + 3_000_000_004));
        s.push(' ');
        write_us(&mut s, seconds.nanos(0));
        assert_eq!(s, "1000000.001 -1.000", "1 s + 1.33 ns, and 1 µs before the start");
    }
}
