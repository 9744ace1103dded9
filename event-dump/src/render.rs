//! One line per event: text, JSON or CSV, with labels beside addresses and interned ids
//! resolved (MPS eventtxt's `["label"]`). CSV has a column per parameter ([`CsvColumns`]);
//! docs/OUTPUT.md says why its shape is the one it is.

use crate::color::{Palette, Style};
use crate::json;
use event_format::builtin;
use event_format::decode::{Catalog, Event};
use event_format::text::{is_bidi_control, write_seconds, write_text, write_value};
use event_format::wire::{Clock, Value};
use std::collections::HashMap;
use std::fmt::Write;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative hash (FxHash's) for the label tables, which are looked up for every
/// address printed: keys are a log's own addresses and ids, so no hash flooding to fear
/// from anyone but the log's author, who could only slow their own dump.
#[derive(Default, Clone, Copy)]
struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

type Fast = BuildHasherDefault<FastHasher>;

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
    places: HashMap<(usize, u16), Vec<usize>, Fast>,
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

/// What the log said so far about strings and addresses, per log.
#[derive(Debug, Default)]
pub(crate) struct Annotations {
    /// (log, interned id) -> string.
    interned: HashMap<(usize, u64), String, Fast>,
    /// (log, address) -> interned id of its label.
    labels: HashMap<(usize, u64), u64, Fast>,
}

impl Annotations {
    /// Learns from an `Intern` or `Label` event.
    pub(crate) fn learn(&mut self, file: usize, event: &Event<'_>) {
        match event.desc.code {
            builtin::INTERN => {
                let mut values = event.values();
                if let (Some(Value::Word(id)), Some(Value::Str(text))) = (values.next(), values.next()) {
                    self.interned.insert((file, id), String::from_utf8_lossy(text.bytes).into_owned());
                }
            }
            builtin::LABEL => {
                let mut values = event.values();
                if let (Some(Value::Address(address)), Some(Value::Word(id))) = (values.next(), values.next()) {
                    self.labels.insert((file, address), id);
                }
            }
            _ => {}
        }
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

/// How lines are written.
#[derive(Debug)]
pub(crate) struct Renderer {
    pub(crate) format: Format,
    pub(crate) raw_ticks: bool,
    pub(crate) labels: bool,
    /// Thread names are prefixed by the producer's pid when several logs are merged.
    pub(crate) pids: Option<Vec<u64>>,
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

    fn thread(&self, out: &mut String, file: usize, thread: u64) {
        let _ = match &self.pids {
            Some(pids) => write!(out, "{}:T{thread}", pids[file]),
            None => write!(out, "T{thread}"),
        };
    }

    fn time(&self, out: &mut String, clock: &Clock, ticks: u64) {
        if self.raw_ticks {
            let _ = write!(out, "{ticks}");
        } else {
            let _ = write_seconds(out, clock, ticks);
        }
    }

    /// One value as text, with its label or interned string when one applies.
    fn value(
        &self,
        out: &mut String,
        ann: &Annotations,
        file: usize,
        event: &Event<'_>,
        index: usize,
        value: &Value<'_>,
    ) {
        let _ = write_value(out, value);
        if !self.labels {
            return;
        }
        let extra = match value {
            Value::Pointer(a) | Value::Address(a) => ann.label(file, *a),
            // Label's `id` names an interned string.
            Value::Word(id) if event.desc.code == builtin::LABEL && index == 1 => ann.interned(file, *id),
            _ => None,
        };
        if let Some(text) = extra {
            out.push('[');
            let _ = write_text(out, &event_format::wire::Text::new(text));
            out.push(']');
        }
    }

    /// Writes `event` of log `file` as one line, without the newline.
    pub(crate) fn line(&self, out: &mut String, ann: &Annotations, file: usize, clock: &Clock, event: &Event<'_>) {
        match self.format {
            Format::Text => {
                self.time(out, clock, event.time);
                out.push(' ');
                self.palette.start(out, Style::Thread);
                self.thread(out, file, event.thread);
                self.palette.end(out);
                out.push(' ');
                self.palette.start(out, Style::Event);
                // `set:Kind.Name` when the log holds more than one set.
                if event.desc.qualified {
                    out.push_str(&event.desc.set);
                    out.push(':');
                }
                out.push_str(&event.desc.kind_name);
                out.push('.');
                out.push_str(&event.desc.name);
                self.palette.end(out);
                for (i, (name, value)) in event.desc.params.iter().zip(event.values()).enumerate() {
                    out.push(' ');
                    out.push_str(name);
                    out.push('=');
                    self.value(out, ann, file, event, i, &value);
                }
            }
            Format::Csv => self.csv_line(out, ann, file, clock, event),
            Format::Json => {
                out.push_str("{\"time\":");
                if self.raw_ticks {
                    json::unsigned(out, event.time);
                } else {
                    let _ = write_seconds(out, clock, event.time);
                }
                out.push_str(",\"thread\":");
                let mut thread = String::new();
                self.thread(&mut thread, file, event.thread);
                json::string(out, &thread);
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
                let mut labels = Vec::new();
                let mut truncated = Vec::new();
                for (i, (name, value)) in event.desc.params.iter().zip(event.values()).enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    json::string(out, name);
                    out.push(':');
                    json::value(out, &value);
                    match value {
                        Value::Pointer(v) | Value::Address(v) => {
                            if let Some(l) = self.labels.then(|| ann.label(file, v)).flatten() {
                                labels.push((name, l.to_owned()));
                            }
                        }
                        Value::Word(v) if event.desc.code == builtin::LABEL && i == 1 => {
                            if let Some(s) = ann.interned(file, v) {
                                labels.push((name, s.to_owned()));
                            }
                        }
                        Value::Str(t) if t.truncated => truncated.push(name),
                        _ => {}
                    }
                }
                out.push('}');
                if !labels.is_empty() {
                    out.push_str(",\"labels\":{");
                    for (i, (name, l)) in labels.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        json::string(out, name);
                        out.push(':');
                        json::string(out, l);
                    }
                    out.push('}');
                }
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
    }
}

impl Renderer {
    /// One CSV row (docs/OUTPUT.md, "CSV"): the fixed columns, a cell per parameter column
    /// (empty where the event has no such parameter), the labels and the cut strings.
    fn csv_line(&self, out: &mut String, ann: &Annotations, file: usize, clock: &Clock, event: &Event<'_>) {
        self.time(out, clock, event.time);
        out.push(',');
        self.thread(out, file, event.thread);
        // The kind is `set:Kind` when the log holds more than one set (set names need no quoting).
        out.push(',');
        if event.desc.qualified {
            out.push_str(&event.desc.set);
            out.push(':');
        }
        let _ = write!(out, "{},{}", event.desc.kind_name, event.desc.name);
        let Some(columns) = &self.csv else { return };
        let places = columns.places.get(&(file, event.desc.wire)).map_or(&[][..], Vec::as_slice);
        let mut cells: Vec<(usize, String)> = Vec::with_capacity(places.len());
        let (mut labels, mut truncated) = (String::new(), String::new());
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
                _ => {
                    let _ = write_value(&mut cell, &value);
                }
            }
            let label = match value {
                Value::Pointer(a) | Value::Address(a) if self.labels => ann.label(file, a),
                Value::Word(id) if self.labels && event.desc.code == builtin::LABEL && i == 1 => ann.interned(file, id),
                _ => None,
            };
            if let Some(text) = label {
                if !labels.is_empty() {
                    labels.push(' ');
                }
                let _ = write!(labels, "{name}=");
                let _ = write_text(&mut labels, &event_format::wire::Text::new(text));
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
        csv_field(out, &labels);
        out.push(',');
        out.push_str(&truncated);
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
