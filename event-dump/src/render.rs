//! One line per event: text, JSON or CSV, with labels beside addresses and interned ids
//! resolved (MPS eventtxt's `["label"]`).

use crate::filter::{FieldValue, Fields};
use crate::json;
use event_format::builtin;
use event_format::decode::Event;
use event_format::text::{write_seconds, write_text, write_value};
use event_format::wire::{Clock, Value};
use std::borrow::Cow;
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
    /// Comma-separated, with a header line.
    Csv,
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
}

impl Renderer {
    /// The header line, if the format has one.
    pub(crate) fn header(&self) -> Option<&'static str> {
        (self.format == Format::Csv).then_some("time,thread,kind,event,arguments")
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
                self.thread(out, file, event.thread);
                out.push(' ');
                // `set:Kind.Name` when the log holds more than one set.
                let _ = write!(out, "{}", event.desc.full_name());
                for (i, (name, value)) in event.desc.params.iter().zip(event.values()).enumerate() {
                    out.push(' ');
                    out.push_str(name);
                    out.push('=');
                    self.value(out, ann, file, event, i, &value);
                }
            }
            Format::Csv => {
                self.time(out, clock, event.time);
                out.push(',');
                self.thread(out, file, event.thread);
                // The kind is `set:Kind` when the log holds more than one set.
                let kind = event.desc.full_kind();
                out.push(',');
                csv_field(out, &kind);
                let _ = write!(out, ",{},", event.desc.name);
                let mut args = String::new();
                for (i, (name, value)) in event.desc.params.iter().zip(event.values()).enumerate() {
                    if i > 0 {
                        args.push(' ');
                    }
                    let _ = write!(args, "{name}=");
                    self.value(&mut args, ann, file, event, i, &value);
                }
                csv_field(out, &args);
            }
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

/// An event as the filter sees it.
pub(crate) struct EventFields<'a> {
    pub(crate) event: &'a Event<'a>,
    pub(crate) clock: &'a Clock,
}

impl Fields for EventFields<'_> {
    fn get(&self, field: &str) -> Option<FieldValue<'_>> {
        let e = self.event;
        match field {
            // An event's own parameter named `set` wins: it was there before sets were.
            "set" if !e.desc.params.iter().any(|p| p == "set") => {
                return Some(FieldValue::Str(Cow::Borrowed(&e.desc.set)));
            }
            "time" => return Some(FieldValue::Float(self.clock.seconds_since_start(e.time))),
            "thread" => return Some(FieldValue::Int(i128::from(e.thread))),
            "code" => return Some(FieldValue::Int(i128::from(e.desc.code))),
            "name" => return Some(FieldValue::Str(Cow::Borrowed(&e.desc.name))),
            "kind" => return Some(FieldValue::Str(Cow::Borrowed(&e.desc.kind_name))),
            _ => {}
        }
        let i = e.desc.params.iter().position(|p| p == field)?;
        Some(match e.values().nth(i)? {
            Value::Pointer(v) | Value::Address(v) | Value::Word(v) => FieldValue::Int(i128::from(v)),
            Value::Unsigned(v) => FieldValue::Int(i128::from(v)),
            Value::Signed(v) => FieldValue::Int(i128::from(v)),
            Value::Double(v) => FieldValue::Float(v),
            Value::Bool(v) => FieldValue::Int(i128::from(v)),
            Value::Str(t) => FieldValue::Str(String::from_utf8_lossy(t.bytes)),
        })
    }

    fn qualified(&self, field: &str) -> Option<FieldValue<'_>> {
        let d = self.event.desc;
        if d.set.is_empty() {
            return None;
        }
        match field {
            "name" => Some(FieldValue::Str(Cow::Owned(format!("{}:{}", d.set, d.name)))),
            "kind" => Some(FieldValue::Str(Cow::Owned(format!("{}:{}", d.set, d.kind_name)))),
            _ => None,
        }
    }
}
