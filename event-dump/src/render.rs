//! One line per event: text, JSON or CSV, with labels beside addresses and interned ids
//! resolved (MPS eventtxt's `["label"]`). CSV has a column per parameter ([`CsvColumns`]);
//! docs/OUTPUT.md says why its shape is the one it is.

use crate::color::{Palette, Style};
use crate::json;
use event_format::builtin;
use event_format::builtins::{BuiltinEvent, interned_arg};
use event_format::decode::{Catalog, Desc, Event};
use event_format::text::{Seconds, is_bidi_control, push_decimal, push_value, push_values, write_text, write_value};
use event_format::wire::Value;
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::fmt::Write;

/// Output formats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// `0.000001500 T1 Pool.PoolInit pool=0x7 class="AMC"`
    #[default]
    Text,
    /// One JSON object per line.
    Json,
    /// Comma-separated, with a header line; a column per parameter.
    Csv,
}

/// The CSV columns that come before the parameters' and after them; a parameter of one of
/// these names gets the column `arg.NAME`, which no parameter name can be.
const CSV_FIXED: [&str; 6] = ["time", "thread", "kind", "event", "labels", "truncated"];

/// The CSV columns of a dump (docs/OUTPUT.md, "CSV"): `time`, `thread`, `kind`, `event`,
/// then one column per parameter name of the event types the selection can show (the
/// union over types and logs, in the order the names first appear: log by log, types in
/// code order), then `labels` and `truncated`. Parameters of the same name share a column;
/// when the selection holds one event type, the columns are exactly its parameters.
#[derive(Debug)]
pub(crate) struct CsvColumns {
    header: String,
    /// The number of parameter columns.
    count: usize,
    /// (log, wire code) -> the parameter column of each of its parameters, in order.
    places: FxHashMap<(usize, u16), Vec<usize>>,
}

impl CsvColumns {
    /// The columns for `catalogs` (one per log) of the event types `shown(log, wire code)`
    /// allows.
    pub(crate) fn new(catalogs: &[&Catalog], shown: impl Fn(usize, u16) -> bool) -> CsvColumns {
        let mut names: Vec<String> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut places = HashMap::default();
        for (file, catalog) in catalogs.iter().enumerate() {
            // TimeExtend records only carry time; no reader shows them as events.
            for desc in catalog.iter().filter(|d| d.code != builtin::TIME_EXTEND && shown(file, d.wire)) {
                let columns = desc
                    .params
                    .iter()
                    .map(|p| {
                        let column = if CSV_FIXED.contains(&p.as_str()) { format!("arg.{p}") } else { p.clone() };
                        *index.entry(column.clone()).or_insert_with(|| {
                            names.push(column);
                            names.len() - 1
                        })
                    })
                    .collect();
                places.insert((file, desc.wire), columns);
            }
        }
        let mut header = String::from("time,thread,kind,event");
        for name in &names {
            header.push(',');
            csv_field(&mut header, name);
        }
        header.push_str(",labels,truncated");
        CsvColumns { header, count: names.len(), places }
    }
}

/// What an `Intern` or `Label` event says: taken from the event where it is decoded (a
/// worker of `print`), learnt where the events are put in order.
#[derive(Debug, Clone)]
pub(crate) enum Fact {
    /// Interned id -> string.
    Intern(u64, String),
    /// Address -> interned id of its label.
    Label(u64, u64),
}

impl Fact {
    /// What `event` says, if it is an `Intern` or a `Label` event.
    #[inline]
    pub(crate) fn of(event: &Event<'_>) -> Option<Fact> {
        // Asked of every event a worker renders: an event of a set (nearly all of them) is
        // told here, without a call.
        if !event.desc.is_builtin() {
            return None;
        }
        match BuiltinEvent::of(event)? {
            BuiltinEvent::Intern { id, text } => Some(Fact::Intern(id, text.to_string_lossy().into_owned())),
            BuiltinEvent::Label { address, id } => Some(Fact::Label(address, id)),
            _ => None,
        }
    }
}

/// A place in a rendered line where a label may go: the label of an address, or the
/// string an interned id names. A line is rendered without looking labels up (a worker
/// renders it before the events are in order) and its holes are filled when it is written
/// ([`Renderer::fill`]), with what the log said before it in time order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hole {
    /// The byte offset in the line where the label goes (text: after the value; JSON: after
    /// the arguments' object; CSV: the `labels` cell).
    pub(crate) at: u32,
    /// The address, or the interned id.
    pub(crate) value: u64,
    /// The parameter's index.
    pub(crate) param: u16,
    /// `value` is an interned id (a `Label` event's `id`), not an address.
    pub(crate) interned: bool,
}

/// What the log said so far about strings and addresses, per log.
#[derive(Debug, Default)]
pub(crate) struct Annotations {
    /// (log, interned id) -> string.
    interned: FxHashMap<(usize, u64), String>,
    /// (log, address) -> interned id of its label.
    labels: FxHashMap<(usize, u64), u64>,
}

impl Annotations {
    /// Learns from an `Intern` or `Label` event.
    pub(crate) fn learn(&mut self, file: usize, event: &Event<'_>) {
        if let Some(fact) = Fact::of(event) {
            self.learn_fact(file, fact);
        }
    }

    /// Learns what an `Intern` or `Label` event said ([`Fact::of`]).
    pub(crate) fn learn_fact(&mut self, file: usize, fact: Fact) {
        match fact {
            Fact::Intern(id, text) => {
                self.interned.insert((file, id), text);
            }
            Fact::Label(address, id) => {
                self.labels.insert((file, address), id);
            }
        }
    }

    /// Whether nothing was learnt: no line can get a label.
    pub(crate) fn is_empty(&self) -> bool {
        self.interned.is_empty() && self.labels.is_empty()
    }

    /// The label of `address` in log `file`, if the log gave it one.
    pub(crate) fn label(&self, file: usize, address: u64) -> Option<&str> {
        if self.labels.is_empty() {
            return None;
        }
        let id = self.labels.get(&(file, address))?;
        self.interned.get(&(file, *id)).map(String::as_str)
    }

    /// The text of interned string `id` in log `file`, if the log gave it.
    pub(crate) fn interned(&self, file: usize, id: u64) -> Option<&str> {
        self.interned.get(&(file, id)).map(String::as_str)
    }
}

/// Bytes that lines repeat (a thread's name, an event's name, ` name=`), kept where a copy
/// of a fixed length takes them: a few moves where a copy of a variable length calls
/// `memcpy`, and a line makes several.
#[derive(Clone, Debug)]
pub(crate) enum Piece {
    /// At most 32 bytes: `.0[..len]`.
    Short([u8; 32], u8),
    Long(Box<[u8]>),
}

impl Piece {
    pub(crate) fn new(bytes: &[u8]) -> Piece {
        if bytes.len() <= 32 {
            let mut short = [0; 32];
            short[..bytes.len()].copy_from_slice(bytes);
            Piece::Short(short, bytes.len() as u8)
        } else {
            Piece::Long(bytes.into())
        }
    }

    /// Appends its bytes to `out`.
    pub(crate) fn push(&self, out: &mut Vec<u8>) {
        match self {
            Piece::Short(bytes, len) => {
                // The whole array in, the rest cut off.
                let end = out.len() + usize::from(*len);
                out.extend_from_slice(bytes);
                out.truncate(end);
            }
            Piece::Long(bytes) => out.extend_from_slice(bytes),
        }
    }
}

/// A thread as lines show it ([`Renderer::thread_text`]).
#[derive(Clone, Debug)]
pub(crate) struct Thread {
    /// `T3`, or `4242:T3`.
    pub(crate) text: String,
    /// ` T3` in the thread's color, as a text line has it after the time.
    piece: Piece,
}

/// What a text line of an event type says besides its time, thread and values: ` Kind.Name`
/// (in its color) and ` name=` before each value ([`Renderer::template`]).
#[derive(Clone, Debug)]
pub(crate) struct Template {
    head: Piece,
    params: Vec<Piece>,
}

/// Where the events a line is written for come from: a block of one thread of one log.
#[derive(Clone, Copy)]
pub(crate) struct Origin<'a> {
    /// The log's place on the command line.
    pub(crate) file: usize,
    pub(crate) thread: &'a Thread,
    /// The log's clock.
    pub(crate) seconds: &'a Seconds,
}

/// The [`Template`]s of the event types a reader has met, by log and wire code: made when a
/// type is first met (a schema may hold 65279 types and a log use a few).
pub(crate) struct Templates {
    list: Vec<Template>,
    /// (log << 16 | wire code) -> its place in `list`.
    index: FxHashMap<u64, usize>,
    /// The keys looked up last and their places, by the key's low bits: most lookups (a
    /// block holds a few types) end here, without hashing.
    recent: [(u64, usize); 64],
}

impl Default for Templates {
    fn default() -> Templates {
        Templates { list: Vec::new(), index: HashMap::default(), recent: [(u64::MAX, 0); 64] }
    }
}

impl Templates {
    /// The template of `desc` of log `file`, when `renderer` writes text lines.
    // Inlined in the render loop, which asks for every line: the last looked up of its slot
    // is a compare away; the others are found (or made) out of line.
    #[inline]
    pub(crate) fn get(&mut self, renderer: &Renderer, file: usize, desc: &Desc) -> Option<&Template> {
        if renderer.format != Format::Text {
            return None;
        }
        let key = (file as u64) << 16 | u64::from(desc.wire);
        let slot = (key ^ key >> 16) as usize % self.recent.len();
        let (recent, at) = self.recent[slot];
        if recent == key {
            return self.list.get(at);
        }
        self.find(renderer, desc, key, slot)
    }

    /// [`get`](Templates::get) of a key not in its recent slot.
    #[inline(never)]
    fn find(&mut self, renderer: &Renderer, desc: &Desc, key: u64, slot: usize) -> Option<&Template> {
        let list = &mut self.list;
        let at = *self.index.entry(key).or_insert_with(|| {
            list.push(renderer.template(desc));
            list.len() - 1
        });
        self.recent[slot] = (key, at);
        self.list.get(at)
    }
}

/// How lines are written.
#[derive(Debug)]
pub(crate) struct Renderer {
    pub(crate) format: Format,
    pub(crate) raw_ticks: bool,
    pub(crate) labels: bool,
    /// Thread names are prefixed by who wrote their log (`host-a/api`, `identity::prefixes`)
    /// when several logs are merged.
    pub(crate) processes: Option<Vec<String>>,
    /// The colors of the text format (JSON and CSV are never colored).
    pub(crate) palette: Palette,
    /// The columns, for CSV.
    pub(crate) csv: Option<CsvColumns>,
}

impl Renderer {
    /// The header line, if the format has one.
    pub(crate) fn header(&self) -> Option<&str> {
        match (&self.csv, self.format) {
            (Some(columns), Format::Csv) => Some(&columns.header),
            _ => None,
        }
    }

    /// Thread `thread` of log `file` as lines show it: `T3`, or `host-a/api:T3` when several
    /// logs are merged. Rendered once per block, not per line.
    pub(crate) fn thread_text(&self, file: usize, thread: u64) -> Thread {
        let mut text = String::new();
        self.thread(&mut text, file, thread);
        let mut piece = vec![b' '];
        self.palette.start_bytes(&mut piece, Style::Thread);
        piece.extend_from_slice(text.as_bytes());
        self.palette.end_bytes(&mut piece);
        Thread { text, piece: Piece::new(&piece) }
    }

    /// What a text line of an event of `desc` says besides its time, thread and values.
    pub(crate) fn template(&self, desc: &Desc) -> Template {
        let mut head = vec![b' '];
        self.palette.start_bytes(&mut head, Style::Event);
        // `set:Kind.Name` when the log holds more than one set.
        if desc.qualified {
            head.extend_from_slice(desc.set.as_bytes());
            head.push(b':');
        }
        head.extend_from_slice(desc.kind_name.as_bytes());
        head.push(b'.');
        head.extend_from_slice(desc.name.as_bytes());
        self.palette.end_bytes(&mut head);
        let params = desc.params.iter().map(|name| Piece::new(format!(" {name}=").as_bytes())).collect();
        Template { head: Piece::new(&head), params }
    }

    fn thread(&self, out: &mut String, file: usize, thread: u64) {
        if let Some(processes) = &self.processes {
            out.push_str(&processes[file]);
            out.push(':');
        }
        out.push('T');
        let _ = write_value(out, &Value::Word(thread));
    }

    fn time(&self, out: &mut String, seconds: &Seconds, ticks: u64) {
        if self.raw_ticks {
            let _ = write!(out, "{ticks}");
        } else {
            let _ = seconds.write(out, ticks);
        }
    }

    /// The hole after a value just written, where its label or interned string may go: at
    /// its offset in the line, which starts at `out[start]`.
    #[inline(always)]
    fn hole(
        &self,
        out: &[u8],
        start: usize,
        holes: &mut Vec<Hole>,
        event: &Event<'_>,
        index: usize,
        value: &Value<'_>,
    ) {
        if !self.labels {
            return;
        }
        let at = (out.len() - start) as u32;
        let param = index as u16;
        match value {
            Value::Pointer(a) | Value::Address(a) => holes.push(Hole { at, value: *a, param, interned: false }),
            // Label's `id` names an interned string.
            Value::Word(id) if interned_arg(event.desc) == Some(index) => {
                holes.push(Hole { at, value: *id, param, interned: true });
            }
            _ => {}
        }
    }

    /// Writes `event` of `origin` as one line, without the newline and without its labels:
    /// appends to `holes` where they may go (offsets in the line, which starts at the end of
    /// `out` as it is given), for [`Renderer::fill`].
    /// `template` is its type's (made here when not given).
    pub(crate) fn line(
        &self,
        out: &mut Vec<u8>,
        holes: &mut Vec<Hole>,
        origin: &Origin<'_>,
        template: Option<&Template>,
        event: &Event<'_>,
    ) {
        let Origin { file, thread, seconds, .. } = *origin;
        let thread_text = thread.text.as_str();
        if self.format != Format::Text {
            // JSON and CSV are written as strings, then appended: the text format is the one
            // written straight as bytes (it is what a dump mostly writes).
            SCRATCH.with_borrow_mut(|text| {
                text.clear();
                match self.format {
                    Format::Csv => self.csv_line(text, holes, file, thread_text, seconds, event),
                    _ => self.json_line(text, holes, thread_text, seconds, event),
                }
                out.extend_from_slice(text.as_bytes());
            });
            return;
        }
        let start = out.len();
        if self.raw_ticks {
            push_decimal(out, event.time);
        } else {
            seconds.push(out, event.time);
        }
        thread.piece.push(out);
        let built;
        let template = match template {
            Some(template) => template,
            None => {
                built = self.template(event.desc);
                &built
            }
        };
        template.head.push(out);
        // Each value written where it is read, its name before it, its hole after it.
        push_values(
            out,
            event,
            &template.params,
            |out, name| name.push(out),
            |out, i, value| self.hole(out, start, holes, event, i, &value),
        );
    }

    /// One JSON object (docs/OUTPUT.md, "JSON"); its holes are where the `labels` object goes.
    fn json_line(&self, out: &mut String, holes: &mut Vec<Hole>, thread: &str, seconds: &Seconds, event: &Event<'_>) {
        out.push_str("{\"time\":");
        if self.raw_ticks {
            json::unsigned(out, event.time);
        } else {
            let _ = seconds.write(out, event.time);
        }
        // A thread's name needs no escaping.
        out.push_str(",\"thread\":\"");
        out.push_str(thread);
        out.push('"');
        // With more than one set in the log: its set, and the kind as `set:Kind`.
        if event.desc.qualified {
            out.push_str(",\"set\":");
            json::string(out, &event.desc.set);
        }
        out.push_str(",\"kind\":");
        json::string(out, &event.desc.full_kind());
        out.push_str(",\"event\":");
        json::string(out, &event.desc.name);
        out.push_str(",\"args\":{");
        let first_hole = holes.len();
        let mut truncated = Vec::new();
        for (i, (name, value)) in event.desc.params.iter().zip(event.values()).enumerate() {
            if i > 0 {
                out.push(',');
            }
            json::string(out, name);
            out.push(':');
            json::value(out, &value);
            // Every hole of the line is where the `labels` object goes.
            let (param, at) = (i as u16, 0);
            match value {
                Value::Pointer(value) | Value::Address(value) if self.labels => {
                    holes.push(Hole { at, value, param, interned: false });
                }
                Value::Word(value) if interned_arg(event.desc) == Some(i) => {
                    holes.push(Hole { at, value, param, interned: true });
                }
                Value::Str(t) if t.truncated => truncated.push(name),
                _ => {}
            }
        }
        out.push('}');
        let at = out.len() as u32;
        holes[first_hole..].iter_mut().for_each(|h| h.at = at);
        // The strings the writer cut, beside their values (which stay plain strings):
        // the text form's `...`.
        if !truncated.is_empty() {
            out.push_str(",\"truncated\":[");
            for (i, name) in truncated.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json::string(out, name);
            }
            out.push(']');
        }
        out.push('}');
    }
}

thread_local! {
    /// Where a JSON or CSV line is written before it is appended to its block's text.
    static SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

impl Renderer {
    /// One CSV row (docs/OUTPUT.md, "CSV"): the fixed columns, a cell per parameter column
    /// (empty where the event has no such parameter), the labels and the cut strings.
    fn csv_line(
        &self,
        out: &mut String,
        holes: &mut Vec<Hole>,
        file: usize,
        thread: &str,
        seconds: &Seconds,
        event: &Event<'_>,
    ) {
        self.time(out, seconds, event.time);
        out.push(',');
        out.push_str(thread);
        // The kind is `set:Kind` when the log holds more than one set (set names need no quoting).
        out.push(',');
        if event.desc.qualified {
            out.push_str(&event.desc.set);
            out.push(':');
        }
        out.push_str(&event.desc.kind_name);
        out.push(',');
        out.push_str(&event.desc.name);
        let Some(columns) = &self.csv else { return };
        let places = columns.places.get(&(file, event.desc.wire)).map_or(&[][..], Vec::as_slice);
        let mut cells: Vec<(usize, String)> = Vec::with_capacity(places.len());
        let first_hole = holes.len();
        let mut truncated = String::new();
        for (i, (name, value)) in event.desc.params.iter().zip(event.values()).enumerate() {
            let mut cell = String::new();
            match value {
                Value::Str(t) => {
                    csv_text(&mut cell, t.bytes);
                    if t.truncated {
                        if !truncated.is_empty() {
                            truncated.push(' ');
                        }
                        truncated.push_str(name);
                    }
                }
                _ => push_value(&mut cell, &value),
            }
            // Every hole of the row is the `labels` cell.
            let (param, at) = (i as u16, 0);
            match value {
                Value::Pointer(value) | Value::Address(value) if self.labels => {
                    holes.push(Hole { at, value, param, interned: false });
                }
                Value::Word(value) if self.labels && interned_arg(event.desc) == Some(i) => {
                    holes.push(Hole { at, value, param, interned: true });
                }
                _ => {}
            }
            if let Some(&column) = places.get(i) {
                cells.push((column, cell));
            }
        }
        cells.sort_unstable_by_key(|c| c.0);
        let mut cells = cells.into_iter().peekable();
        for column in 0..columns.count {
            out.push(',');
            if let Some((_, cell)) = cells.next_if(|c| c.0 == column) {
                csv_field(out, &cell);
            }
        }
        out.push(',');
        let at = out.len() as u32;
        holes[first_hole..].iter_mut().for_each(|h| h.at = at);
        out.push(',');
        out.push_str(&truncated);
    }

    /// Writes `line` (rendered by [`Renderer::line`] for an event of `desc`, of log `file`)
    /// to `out` with its holes filled: the labels and interned strings `ann` knows, as the
    /// format writes them (text: `["label"]` after the value; JSON: a `labels` object after
    /// the arguments; CSV: the `labels` cell, `name="label"` pairs).
    pub(crate) fn fill(
        &self,
        out: &mut Vec<u8>,
        line: &[u8],
        holes: &[Hole],
        ann: &Annotations,
        file: usize,
        desc: &Desc,
    ) {
        if holes.is_empty() || ann.is_empty() {
            out.extend_from_slice(line);
            return;
        }
        let found = |h: &Hole| if h.interned { ann.interned(file, h.value) } else { ann.label(file, h.value) };
        let name = |h: &Hole| desc.params.get(usize::from(h.param)).map_or("", String::as_str);
        let mut text = String::new();
        match self.format {
            Format::Text => {
                let mut from = 0;
                for h in holes {
                    let Some(label) = found(h) else { continue };
                    let at = h.at as usize;
                    out.extend_from_slice(&line[from..at]);
                    text.clear();
                    text.push('[');
                    let _ = write_text(&mut text, &event_format::wire::Text::new(label));
                    text.push(']');
                    out.extend_from_slice(text.as_bytes());
                    from = at;
                }
                out.extend_from_slice(&line[from..]);
            }
            Format::Json => {
                for h in holes {
                    let Some(label) = found(h) else { continue };
                    text.push_str(if text.is_empty() { ",\"labels\":{" } else { "," });
                    json::string(&mut text, name(h));
                    text.push(':');
                    json::string(&mut text, label);
                }
                if !text.is_empty() {
                    text.push('}');
                }
                let at = holes[0].at as usize;
                out.extend_from_slice(&line[..at]);
                out.extend_from_slice(text.as_bytes());
                out.extend_from_slice(&line[at..]);
            }
            Format::Csv => {
                for h in holes {
                    let Some(label) = found(h) else { continue };
                    if !text.is_empty() {
                        text.push(' ');
                    }
                    text.push_str(name(h));
                    text.push('=');
                    let _ = write_text(&mut text, &event_format::wire::Text::new(label));
                }
                let at = holes[0].at as usize;
                out.extend_from_slice(&line[..at]);
                let mut cell = String::new();
                csv_field(&mut cell, &text);
                out.extend_from_slice(cell.as_bytes());
                out.extend_from_slice(&line[at..]);
            }
        }
    }
}

/// Writes a string's bytes as a CSV cell holds them: the text itself, with the text form's
/// escapes for what would act on a terminal or break the row (`\\`, `\n`, `\r`, `\t`,
/// `\u{..}` for other control and bidirectional formatting characters, `\xNN` for bytes that
/// are not UTF-8), but no quotes of its own: `"` is CSV's to double.
fn csv_text(out: &mut String, bytes: &[u8]) {
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() || is_bidi_control(c) => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
}

/// Writes `s` as a CSV field, quoted when it must be.
fn csv_field(out: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}
