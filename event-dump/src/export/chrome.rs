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
use event_format::roles::{Flows, IdValue, Pairer, Roles, SpanKey};
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
/// not paired.
fn write_trace(logs: &mut [Log], out: impl Write, window: &mut Window) -> io::Result<(Vec<Ledger>, Vec<String>)> {
    let timeline = Timeline::new(logs);
    let pids = &timeline.pids;
    let mut events = Events { out, first: true, line: String::new() };
    events.out.write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":{\"exporter\":")?;
    let mut text = String::new();
    json::string(&mut text, &format!("event-dump {}", env!("CARGO_PKG_VERSION")));
    text.push_str(",\"logs\":[");
    for (i, log) in logs.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        json::string(&mut text, &log.path().display().to_string());
    }
    text.push_str("]},\"traceEvents\":[");
    events.out.write_all(text.as_bytes())?;
    let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
    let names = crate::identity::process_names(&headers);
    for (f, &pid) in pids.iter().enumerate() {
        metadata(events.begin(), "process_name", pid, 0, &names[f]);
        events.end()?;
        // The recording's labels (`service=api`, ...), as Chrome's own process labels.
        let labels = &headers[f].properties.labels;
        if !labels.is_empty() {
            let text: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let line = events.begin();
            let _ = write!(
                line,
                "{{\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"args\":{{\"labels\":"
            );
            json::string(line, &text.join(","));
            line.push_str("}}");
            events.end()?;
        }
    }
    drop(headers);

    let roles: Vec<Roles> = logs.iter().map(|l| Roles::new(&l.header().sets)).collect();
    let mut pairers: Vec<Pairer<Open>> = logs.iter().map(|_| Pairer::new()).collect();
    let mut flows: Vec<Flows> = logs.iter().map(|_| Flows::new()).collect();
    let n_logs = logs.len() as u64;
    let mut ann = Annotations::default();
    // Each thread's track, by (log, thread): the time of its latest event, in ns.
    let mut tracks: BTreeMap<(usize, u64), i128> = BTreeMap::new();
    let mut names: BTreeMap<(usize, u64), String> = BTreeMap::new();
    // Each thread's current `tracing` span, by (log, thread).
    let mut current: HashMap<(usize, u64), u64> = HashMap::new();
    // Each log's latest event, in ns on the trace's time line, and its thread.
    let mut last: BTreeMap<usize, (i128, u64)> = BTreeMap::new();
    let mut cut = 0u64;
    // Ends of spans whose begin the window left out, exported as instants.
    let mut begun_outside = 0u64;
    let ledgers = super::merge_all(logs, "exported", |Item { file, event }| {
        let selected = window.keeps(file, &event);
        // Labels, interned strings and thread names are learned from every event, selected
        // or not, as `print` learns them.
        ann.learn(file, &event);
        let builtin = BuiltinEvent::of(&event);
        if let Some(BuiltinEvent::ThreadName { thread, name }) = builtin {
            names.insert((file, thread), name.to_string_lossy().into_owned());
        }
        let ns = timeline.ns(file, event.time);
        let (pid, tid) = (pids[file], event.thread);
        if selected {
            tracks.insert((file, event.thread), ns);
            last.insert(file, (ns, event.thread));
        }
        // `set:Kind` when the log holds more than one set.
        let cat = event.desc.full_kind();
        let cat = cat.as_str();
        let instant = event_name(event.desc);
        if let Some(BuiltinEvent::SpanCurrent { span }) = builtin {
            // No event of its own: the later events of its thread carry its span.
            current.insert((file, event.thread), span);
            return Ok(());
        }
        let span = current.get(&(file, event.thread)).copied().unwrap_or(0);
        let at = At { ns, pid, tid, key: None, flow: None, span };
        let roles = &roles[file];
        let Some(role) = roles.of(event.desc.wire) else {
            return if selected {
                event_line(&mut events, (&instant, cat, "i"), at, &ann, file, &event)
            } else {
                Ok(())
            };
        };
        // The flows it takes part in (each piece of work steps on); a Chrome event binds one.
        let links: Vec<(u64, bool, bool)> = role
            .flows
            .iter()
            .filter_map(|f| {
                let link = flows[file].step(f.flow, IdValue::of(&event.values().nth(f.param)?), f.step)?;
                Some((link.serial * n_logs + file as u64, link.incoming, link.outgoing))
            })
            .collect();
        // Bound by the first line that can carry it: a begin's, or the instant's. (The flows
        // step on every event, so that a flow's ids stay those of the whole log.)
        let mut flow = links.first().copied().filter(|_| selected);
        let mut shown = false;
        if let Some(end) = role.ends
            && let Some(key) = roles.key(&end, &event)
            && let Some(ended) = pairers[file].end(event.thread, &key)
        {
            // Slices opened inside this one and still open end with it.
            for inner in ended.cut.iter().filter(|o| o.selected) {
                cut += 1;
                unended(&mut events, inner, at)?;
            }
            let open = ended.begin;
            if !open.selected {
                // Its begin was left out: the span is left out, and this end, when selected,
                // is an instant.
                begun_outside += u64::from(selected);
            } else {
                tracks.insert((file, event.thread), ns);
                last.insert(file, (ns, event.thread));
                let ph = if open.key.is_some() { "e" } else { "E" };
                // An async end is keyed by its own id, and has its begin's category: Chrome
                // pairs `b` and `e` within one.
                let key = match (&open.key, end.pairing) {
                    (Some(_), event_format::roles::Pairing::Async { param }) => AsyncKey::of(&open.name, &event, param),
                    _ => None,
                };
                event_line(
                    &mut events,
                    (&open.name, &open.cat, ph),
                    At { key: key.as_ref(), ..at },
                    &ann,
                    file,
                    &event,
                )?;
                shown = true;
            }
        }
        if let Some(begin) = role.begins
            && let Some(key) = roles.key(&begin, &event)
        {
            let name = roles.begin_name(&begin, &event).into_owned();
            let async_key = match (&key, begin.pairing) {
                (SpanKey::Async(..), event_format::roles::Pairing::Async { param }) => {
                    AsyncKey::of(&name, &event, param)
                }
                _ => None,
            };
            if selected {
                let ph = if async_key.is_some() { "b" } else { "B" };
                let at = At { key: async_key.as_ref(), flow: flow.take(), ..at };
                event_line(&mut events, (&name, cat, ph), at, &ann, file, &event)?;
                shown = true;
            }
            pairers[file].begin(event.thread, key, Open { name, cat: cat.to_owned(), key: async_key, selected });
        }
        if !selected {
            return Ok(());
        }
        if !shown {
            event_line(&mut events, (&instant, cat, "i"), At { flow, ..at }, &ann, file, &event)?;
        }
        if !role.counters.is_empty() {
            // One counter event of the event's name, a series per counter it samples.
            let line = events.begin();
            head(line, &instant, cat, "C", at);
            line.push('{');
            for (i, counter) in role.counters.iter().enumerate() {
                let Some(value) = event.values().nth(counter.param) else { continue };
                if i > 0 {
                    line.push(',');
                }
                json::string(line, &roles.counters()[counter.counter as usize].name);
                line.push(':');
                json::value(line, &value);
            }
            line.push_str("}}");
            events.end()?;
        }
        Ok(())
    })?;

    let mut unmatched = 0;
    let mut never = cut;
    let mut threads: BTreeMap<(usize, u64), Vec<Open>> = BTreeMap::new();
    let mut asyncs: Vec<(usize, Open)> = Vec::new();
    for (file, pairer) in pairers.into_iter().enumerate() {
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
    // Async slices never ended end at their log's last event, marked: by log, name and id,
    // the latest first.
    asyncs.sort_by(|a, b| (a.0, &a.1.key).cmp(&(b.0, &b.1.key)));
    for (file, open) in &asyncs {
        let (ns, thread) = last.get(file).copied().unwrap_or_default();
        unended(&mut events, open, At { ns, pid: pids[*file], tid: thread, key: None, flow: None, span: 0 })?;
    }
    // Slices never ended end at their thread's last event, marked, innermost first.
    for (&(file, thread), &last_ns) in &tracks {
        for open in threads.remove(&(file, thread)).unwrap_or_default() {
            unended(
                &mut events,
                &open,
                At { ns: last_ns, pid: pids[file], tid: thread, key: None, flow: None, span: 0 },
            )?;
        }
        let name = names.get(&(file, thread)).cloned().unwrap_or_else(|| format!("T{thread}"));
        metadata(events.begin(), "thread_name", pids[file], thread, &name);
        events.end()?;
    }
    events.out.write_all(b"\n]}\n")?;
    events.out.flush()?;
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
    Ok((ledgers, notes))
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
