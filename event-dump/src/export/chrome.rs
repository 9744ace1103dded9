//! `export --to chrome`: Chrome trace-event JSON, which Perfetto's UI (ui.perfetto.dev) and
//! chrome://tracing open.
//!
//! The file is `{"displayTimeUnit":"ns","otherData":{..},"traceEvents":[..]}`, one event per
//! line, written as the logs are read (never held whole):
//!
//! - **Processes and threads.** Each log is a process (`pid` from its header; a log whose
//!   pid an earlier log already has gets the next free number, its name keeps the real
//!   one), named `program (pid N)`. Each thread is a track (`tid` = the log's thread id),
//!   named by the log's `ThreadName` events, `T<n>` when it has none.
//! - **Events.** Each event is an instant (`"ph":"i"`, `"s":"t"`) named by the event, its
//!   kind as `cat`, its parameters as `args`: pointers and addresses as `"0x.."` strings
//!   (with the address's label, when the log gave one, under `"<param> (label)"`), other
//!   integers as numbers, except those beyond ±(2^53 − 1) (which a JSON reader would round)
//!   as decimal strings; doubles as numbers (`"NaN"`, `"inf"`, `"-inf"` as strings), strings
//!   as strings (invalid UTF-8 replaced). `Dropped` events are instants like any other.
//!   The `tracing` fields of a built-in `SpanEnter` or `TraceEvent` are an object by name
//!   ([`event_format::fields::of_event`]): the span's `fields`, the event's `"fields"` beside
//!   its `text`; a text with no fields in the grammar stays as it is.
//! - **Slices.** `FooBegin` and `FooEnd` on one thread are the slice `Foo` (`"ph":"B"` and
//!   `"ph":"E"`, each with its event's args), and so are `SpanEnter(span, name, ..)` and
//!   `SpanExit(span, ..)` (matched by `span`, named by `name`). An End closes the innermost
//!   open slice of its name (or span); slices opened inside it and still open close with
//!   it. An End with no open slice is an instant. A slice still open at the end of the log
//!   ends at its thread's last event, with `"unended":true` in its args.
//! - **Async slices.** `FooBegin` and `FooEnd` that both have a parameter named `id` are
//!   paired by it instead, across threads: the async slice `Foo` (`"ph":"b"` and `"ph":"e"`,
//!   with `"scope":"Foo"`, the kind as `cat`, and `"id2":{"local":..}`, a hash of `Foo` and
//!   the id, so that Perfetto draws one track per slice, in its process), for work that
//!   moves between threads (a task of an async runtime, a job handed to a pool). An End
//!   closes the latest open slice of its name and id; one with none open is an instant. A
//!   slice still open at the end of the log ends at the log's last event, with
//!   `"unended":true` in its args. Events without an `id` keep the per-thread pairing.
//! - **Time.** `ts` is in microseconds since the start of recording with 3 decimals (exact
//!   nanoseconds, as `print` computes its seconds). Several logs are aligned on wall-clock
//!   time: `ts` counts from the start of the log that started first.

use super::Said;
use crate::json;
use crate::log::{DumpError, Log};
use crate::merge::Item;
use crate::render::Annotations;
use event_format::builtin;
use event_format::decode::{Desc, Event};
use event_format::ledger::Ledger;
use event_format::letter::Letter;
use event_format::wire::{Clock, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(crate) fn export(logs: &mut [Log], out: &Path) -> Result<ExitCode, DumpError> {
    let shown = out.display().to_string();
    if out.is_dir() {
        return Err(DumpError::new(format!(
            "{shown}: is a directory; give a file name for the trace, such as trace.json"
        )));
    }
    let partial = partial_path(out)?;
    let file =
        File::create(&partial).map_err(|e| DumpError::new(format!("{}: cannot create: {e}", partial.display())))?;
    let result = write_trace(logs, BufWriter::with_capacity(1 << 16, file));
    match result {
        Ok(ledgers) => {
            std::fs::rename(&partial, out).map_err(|e| {
                let _ = std::fs::remove_file(&partial);
                DumpError::new(format!("{shown}: cannot write: {e}"))
            })?;
            Said::of(&ledgers).report("chrome", &[]);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(DumpError::new(format!("{shown}: cannot write: {e}")))
        }
    }
}

/// `out` with `.partial` added: the trace is written there, then renamed, so that a failed
/// export never leaves half a trace under the name asked for.
fn partial_path(out: &Path) -> Result<PathBuf, DumpError> {
    let Some(name) = out.file_name() else {
        return Err(DumpError::new(format!("{}: not a file name; give one such as trace.json", out.display())));
    };
    let mut partial = name.to_os_string();
    partial.push(".partial");
    Ok(out.with_file_name(partial))
}

/// The pid each log's events get: its header's, unless an earlier log took it (two logs of
/// one process, or of two machines): then the next number no log has.
fn assign_pids(logs: &[Log]) -> Vec<u64> {
    let real: BTreeSet<u64> = logs.iter().map(|l| l.header().producer.pid).collect();
    let mut taken = BTreeSet::new();
    let mut pids = Vec::with_capacity(logs.len());
    for log in logs {
        let mut pid = log.header().producer.pid;
        if taken.contains(&pid) {
            while real.contains(&pid) || taken.contains(&pid) {
                pid = pid.wrapping_add(1);
            }
        }
        taken.insert(pid);
        pids.push(pid);
    }
    pids
}

/// Nanoseconds from the clock's start to `ticks`, truncated towards zero (as `print`).
fn ns_since_start(clock: &Clock, ticks: u64) -> i128 {
    let delta = i128::from(ticks) - i128::from(clock.start_ticks);
    let rate = i128::from(clock.ticks_per_second.max(1));
    let ns = delta.abs() * 1_000_000_000 / rate;
    if delta < 0 { -ns } else { ns }
}

/// Writes nanoseconds as microseconds with 3 decimals.
fn write_us(out: &mut String, ns: i128) {
    let sign = if ns < 0 { "-" } else { "" };
    let ns = ns.abs();
    let _ = write!(out, "{sign}{}.{:03}", ns / 1000, ns % 1000);
}

/// Which open slice an End closes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SliceKey {
    /// `FooBegin` / `FooEnd`: the `Foo`.
    Named(String),
    /// `SpanEnter` / `SpanExit`: the span id.
    Span(u64),
}

/// What an event is on its thread's track, or across threads.
#[derive(Debug, PartialEq)]
enum Role {
    Instant,
    Begin {
        key: SliceKey,
        name: String,
    },
    End {
        key: SliceKey,
    },
    /// `FooBegin` with a parameter `id`: an async slice `Foo`, ended by the `FooEnd` of the
    /// same `id` on any thread.
    AsyncBegin {
        key: AsyncKey,
    },
    /// `FooEnd` with a parameter `id`.
    AsyncEnd {
        key: AsyncKey,
    },
}

/// Which async slice a `FooBegin` or `FooEnd` with an `id` is: `Foo` (qualified by set as
/// slices are), and the id as `print` writes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct AsyncKey {
    name: String,
    id: String,
}

impl AsyncKey {
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

/// The value of `event`'s parameter `id`, as `print` writes it, if it has one.
fn async_id(event: &Event<'_>) -> Option<String> {
    let i = event.desc.params.iter().position(|p| p == "id")?;
    let value = event.values().nth(i)?;
    let mut text = String::new();
    event_format::text::write_value(&mut text, &value).ok()?;
    Some(text)
}

/// `SpanEnter(span W, name S, ..)` and `SpanExit(span W, ..)`, whether built in or declared
/// in events.def, are spans; `FooBegin` and `FooEnd`, slices named `Foo`.
fn role(event: &Event<'_>) -> Role {
    let name = event.desc.name.as_str();
    let format = event.desc.format.as_slice();
    let is_span = format.len() >= 2 && format[0] == Letter::Word && format[1] == Letter::String;
    if is_span && (name == "SpanEnter" || name == "SpanExit") {
        let mut values = event.values();
        let (Some(Value::Word(span)), Some(Value::Str(text))) = (values.next(), values.next()) else {
            return Role::Instant;
        };
        return if name == "SpanEnter" {
            Role::Begin { key: SliceKey::Span(span), name: String::from_utf8_lossy(text.bytes).into_owned() }
        } else {
            Role::End { key: SliceKey::Span(span) }
        };
    }
    // A slice of a set's events is named, and matched, within its set: `storage:Sweep`.
    let named = |base: &str| if event.desc.qualified { format!("{}:{base}", event.desc.set) } else { base.to_owned() };
    if let Some(base) = name.strip_suffix("Begin").filter(|b| !b.is_empty()) {
        if let Some(id) = async_id(event) {
            return Role::AsyncBegin { key: AsyncKey { name: named(base), id } };
        }
        return Role::Begin { key: SliceKey::Named(named(base)), name: named(base) };
    }
    if let Some(base) = name.strip_suffix("End").filter(|b| !b.is_empty()) {
        if let Some(id) = async_id(event) {
            return Role::AsyncEnd { key: AsyncKey { name: named(base), id } };
        }
        return Role::End { key: SliceKey::Named(named(base)) };
    }
    Role::Instant
}

/// An event's name in the trace: `set:Name` when the log holds more than one set.
fn event_name(desc: &Desc) -> std::borrow::Cow<'_, str> {
    if desc.qualified { format!("{}:{}", desc.set, desc.name).into() } else { desc.name.as_str().into() }
}

/// A slice begun and not yet ended.
#[derive(Debug)]
struct Open {
    key: SliceKey,
    name: String,
    cat: String,
}

/// An async slice begun and not yet ended.
#[derive(Debug)]
struct AsyncOpen {
    cat: String,
}

/// A thread's track, by (log, thread).
#[derive(Debug, Default)]
struct Track {
    open: Vec<Open>,
    /// The time of its latest event, in ns on the trace's time line.
    last_ns: i128,
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

/// The fields every event line has, up to `args` (which the caller writes).
fn head(line: &mut String, name: &str, cat: &str, ph: &str, ns: i128, pid: u64, tid: u64) {
    head_with(line, name, cat, ph, None, ns, pid, tid);
}

/// [`head`], with an async slice's key for `"ph":"b"` and `"e"`: its `scope` (the slice's
/// name) and its process-local id (`id2.local`, [`AsyncKey::chrome_id`]).
#[allow(clippy::too_many_arguments, reason = "the fields of one trace event")]
fn head_with(line: &mut String, name: &str, cat: &str, ph: &str, key: Option<&AsyncKey>, ns: i128, pid: u64, tid: u64) {
    line.push_str("{\"name\":");
    json::string(line, name);
    line.push_str(",\"cat\":");
    json::string(line, cat);
    let _ = write!(line, ",\"ph\":\"{ph}\",");
    if ph == "i" {
        line.push_str("\"s\":\"t\",");
    }
    if let Some(key) = key {
        line.push_str("\"scope\":");
        json::string(line, &key.name);
        let _ = write!(line, ",\"id2\":{{\"local\":\"{}\"}},", key.chrome_id());
    }
    line.push_str("\"ts\":");
    write_us(line, ns);
    let _ = write!(line, ",\"pid\":{pid},\"tid\":{tid},\"args\":");
}

/// Writes one event line: its head as `ph`, named `name`, with the event's parameters as args.
#[allow(clippy::too_many_arguments, reason = "the fields of one trace event")]
fn event_line<W: Write>(
    events: &mut Events<W>,
    name: &str,
    cat: &str,
    ph: &str,
    at: (i128, u64, u64),
    ann: &Annotations,
    file: usize,
    event: &Event<'_>,
) -> io::Result<()> {
    event_line_with(events, name, cat, ph, None, at, ann, file, event)
}

/// [`event_line`], with an async slice's key ([`head_with`]).
#[allow(clippy::too_many_arguments, reason = "the fields of one trace event")]
fn event_line_with<W: Write>(
    events: &mut Events<W>,
    name: &str,
    cat: &str,
    ph: &str,
    key: Option<&AsyncKey>,
    at: (i128, u64, u64),
    ann: &Annotations,
    file: usize,
    event: &Event<'_>,
) -> io::Result<()> {
    let (ns, pid, tid) = at;
    let line = events.begin();
    head_with(line, name, cat, ph, key, ns, pid, tid);
    write_args(line, ann, file, event);
    line.push('}');
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
/// The `tracing` fields of a built-in `TraceEvent` or `SpanEnter` are an object by name
/// ([`event_format::fields::of_event`]): a `SpanEnter`'s `fields` is that object instead of
/// its text, a `TraceEvent` has it as `"fields"` beside its `text`; a text that does not
/// read as fields (an old log's) stays a string.
fn write_args(out: &mut String, ann: &Annotations, file: usize, event: &Event<'_>) {
    out.push('{');
    let traced = event_format::fields::of_event(event);
    let is_span = event.desc.code == builtin::SPAN_ENTER;
    for (i, (name, value)) in event.desc.params.iter().zip(event.values()).enumerate() {
        if i > 0 {
            out.push(',');
        }
        json::string(out, name);
        out.push(':');
        match &traced {
            Some(fields) if is_span && i == 2 => json::fields(out, fields),
            _ => json::value(out, &value),
        }
        let label = match value {
            Value::Pointer(v) | Value::Address(v) => ann.label(file, v),
            Value::Word(v) if event.desc.code == builtin::LABEL && i == 1 => ann.interned(file, v),
            _ => None,
        };
        if let Some(label) = label {
            out.push(',');
            json::string(out, &format!("{name} (label)"));
            out.push(':');
            json::string(out, label);
        }
    }
    if let Some(fields) = traced.as_ref().filter(|_| !is_span) {
        out.push_str(",\"fields\":");
        json::fields(out, fields);
    }
    out.push('}');
}

/// Reads the logs and writes the whole trace to `out`; each log's ledger.
fn write_trace(logs: &mut [Log], out: impl Write) -> io::Result<Vec<Ledger>> {
    let pids = assign_pids(logs);
    let clocks: Vec<Clock> = logs.iter().map(|l| l.header().clock).collect();
    // Several logs share one time line: the wall clock, from the earliest start.
    let starts: Vec<i128> = clocks.iter().map(|c| c.wall_ns(c.start_ticks)).collect();
    let earliest = starts.iter().copied().min().unwrap_or(0);
    let offsets: Vec<i128> =
        if logs.len() > 1 { starts.iter().map(|s| s - earliest).collect() } else { vec![0; logs.len()] };

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
    for (f, log) in logs.iter().enumerate() {
        let producer = &log.header().producer;
        let name = format!("{} (pid {})", producer.program, producer.pid);
        metadata(events.begin(), "process_name", pids[f], 0, &name);
        events.end()?;
    }

    let mut ann = Annotations::default();
    let mut tracks: BTreeMap<(usize, u64), Track> = BTreeMap::new();
    let mut names: BTreeMap<(usize, u64), String> = BTreeMap::new();
    // Async slices begun and not yet ended, by (log, key): their categories, latest last.
    let mut asyncs: BTreeMap<(usize, AsyncKey), Vec<AsyncOpen>> = BTreeMap::new();
    // Each log's latest event, in ns on the trace's time line, and its thread.
    let mut last: BTreeMap<usize, (i128, u64)> = BTreeMap::new();
    let ledgers = super::merge_all(logs, |Item { file, event }| {
        ann.learn(file, &event);
        if event.desc.code == builtin::THREAD_NAME {
            let mut values = event.values();
            if let (Some(Value::Word(thread)), Some(Value::Str(name))) = (values.next(), values.next()) {
                names.insert((file, thread), String::from_utf8_lossy(name.bytes).into_owned());
            }
        }
        let ns = ns_since_start(&clocks[file], event.time) + offsets[file];
        let (pid, tid) = (pids[file], event.thread);
        let track = tracks.entry((file, event.thread)).or_default();
        track.last_ns = ns;
        last.insert(file, (ns, event.thread));
        // `set:Kind` when the log holds more than one set.
        let cat = event.desc.full_kind();
        let cat = cat.as_str();
        let instant = event_name(event.desc);
        let at = (ns, pid, tid);
        match role(&event) {
            Role::Begin { key, name } => {
                event_line(&mut events, &name, cat, "B", at, &ann, file, &event)?;
                track.open.push(Open { key, name, cat: cat.to_owned() });
            }
            Role::End { key } => match track.open.iter().rposition(|o| o.key == key) {
                Some(at_open) => {
                    // Slices opened inside this one and still open end with it.
                    while track.open.len() > at_open + 1 {
                        if let Some(inner) = track.open.pop() {
                            head(events.begin(), &inner.name, &inner.cat, "E", ns, pid, tid);
                            events.line.push_str("{\"unended\":true}}");
                            events.end()?;
                        }
                    }
                    if let Some(open) = track.open.pop() {
                        event_line(&mut events, &open.name, &open.cat, "E", at, &ann, file, &event)?;
                    }
                }
                None => event_line(&mut events, &instant, cat, "i", at, &ann, file, &event)?,
            },
            Role::AsyncBegin { key } => {
                event_line_with(&mut events, &key.name, cat, "b", Some(&key), at, &ann, file, &event)?;
                asyncs.entry((file, key)).or_default().push(AsyncOpen { cat: cat.to_owned() });
            }
            Role::AsyncEnd { key } => match asyncs.get_mut(&(file, key.clone())).and_then(Vec::pop) {
                // The category of its begin: Chrome pairs `b` and `e` within one.
                Some(open) => {
                    event_line_with(&mut events, &key.name, &open.cat, "e", Some(&key), at, &ann, file, &event)?
                }
                None => event_line(&mut events, &instant, cat, "i", at, &ann, file, &event)?,
            },
            Role::Instant => event_line(&mut events, &instant, cat, "i", at, &ann, file, &event)?,
        }
        Ok(())
    })?;

    // Async slices never ended end at their log's last event, marked.
    for ((file, key), opens) in &asyncs {
        let (ns, thread) = last.get(file).copied().unwrap_or_default();
        for open in opens.iter().rev() {
            head_with(events.begin(), &key.name, &open.cat, "e", Some(key), ns, pids[*file], thread);
            events.line.push_str("{\"unended\":true}}");
            events.end()?;
        }
    }

    for (&(file, thread), track) in &mut tracks {
        while let Some(open) = track.open.pop() {
            head(events.begin(), &open.name, &open.cat, "E", track.last_ns, pids[file], thread);
            events.line.push_str("{\"unended\":true}}");
            events.end()?;
        }
        let name = names.get(&(file, thread)).cloned().unwrap_or_else(|| format!("T{thread}"));
        metadata(events.begin(), "thread_name", pids[file], thread, &name);
        events.end()?;
    }
    events.out.write_all(b"\n]}\n")?;
    events.out.flush()?;
    Ok(ledgers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use event_format::decode::Desc;
    use event_format::wire::Order;

    fn desc(name: &str, builtin: bool, format: &[Letter]) -> Desc {
        Desc {
            code: 0x10,
            wire: 0x10,
            set: String::new(),
            qualified: false,
            name: name.to_owned(),
            kind_name: if builtin { "Builtin".to_owned() } else { "K".to_owned() },
            kind: (!builtin).then_some(0),
            format: format.to_vec(),
            params: (0..format.len()).map(|i| format!("f{i}")).collect(),
        }
    }

    fn span_args(id: u64, name: &str) -> Vec<u8> {
        let mut args = id.to_le_bytes().to_vec();
        args.extend((name.len() as u16).to_le_bytes());
        args.extend(name.as_bytes());
        args
    }

    #[test]
    fn roles_by_name() {
        let role_of = |d: &Desc, args: &[u8]| role(&Event { desc: d, time: 0, thread: 1, args, order: Order::Little });
        let named = |s: &str| SliceKey::Named(s.to_owned());
        assert_eq!(
            role_of(&desc("SweepBegin", false, &[]), &[]),
            Role::Begin { key: named("Sweep"), name: "Sweep".to_owned() }
        );
        assert_eq!(role_of(&desc("SweepEnd", false, &[]), &[]), Role::End { key: named("Sweep") });
        assert_eq!(role_of(&desc("Begin", false, &[]), &[]), Role::Instant, "no name before Begin");
        assert_eq!(role_of(&desc("End", false, &[]), &[]), Role::Instant);
        assert_eq!(role_of(&desc("Ending", false, &[]), &[]), Role::Instant);
        let enter = desc("SpanEnter", true, &[Letter::Word, Letter::String, Letter::String]);
        let mut args = span_args(7, "request");
        args.extend(0u16.to_le_bytes());
        assert_eq!(role_of(&enter, &args), Role::Begin { key: SliceKey::Span(7), name: "request".to_owned() });
        let exit = desc("SpanExit", true, &[Letter::Word, Letter::String]);
        assert_eq!(role_of(&exit, &span_args(7, "request")), Role::End { key: SliceKey::Span(7) });
        let odd = desc("SpanEnter", true, &[Letter::Unsigned]);
        assert_eq!(role_of(&odd, &[0, 0, 0, 0]), Role::Instant, "another format is not a span");
    }

    #[test]
    fn microseconds_are_exact() {
        let clock = Clock {
            source: event_format::wire::ClockSource::Tsc,
            ticks_per_second: 3_000_000_000,
            ref_ticks: 0,
            ref_wall_ns: 0,
            start_ticks: 3_000,
        };
        let mut s = String::new();
        write_us(&mut s, ns_since_start(&clock, 3_000 + 3_000_000_004));
        s.push(' ');
        write_us(&mut s, ns_since_start(&clock, 0));
        assert_eq!(s, "1000000.001 -1.000", "1 s + 1.33 ns, and 1 µs before the start");
    }
}
