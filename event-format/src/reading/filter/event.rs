//! A decoded event of a log as the filter sees it: its parameters, built-ins and `tracing`
//! fields, through [`Filterable`].

use super::{FieldValue, Filterable};
use crate::codec::decode::Event;
use crate::codec::wire::{Clock, Value as WireValue};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// An event of a log as the filter sees it.
#[derive(Debug)]
pub struct FilterEvent<'a> {
    /// The event.
    pub event: &'a Event<'a>,
    /// Its log's clock, for `time`.
    pub clock: &'a Clock,
    /// The names of the log's threads, where the filter compares threads by name.
    pub names: Option<&'a BTreeMap<u64, String>>,
}

/// A decoded value as the filter compares it; a string's bytes that are not UTF-8 as U+FFFD.
fn field_value<'a>(value: &WireValue<'a>) -> FieldValue<'a> {
    match *value {
        WireValue::Pointer(v) | WireValue::Address(v) | WireValue::Word(v) => FieldValue::Int(i128::from(v)),
        WireValue::Unsigned(v) => FieldValue::Int(i128::from(v)),
        WireValue::Signed(v) => FieldValue::Int(i128::from(v)),
        WireValue::Double(v) => FieldValue::Float(v),
        WireValue::Bool(v) => FieldValue::Bool(v),
        WireValue::Str(t) => FieldValue::Str(String::from_utf8_lossy(t.bytes)),
    }
}

impl Filterable for FilterEvent<'_> {
    fn get(&self, name: &str) -> Option<FieldValue<'_>> {
        let e = self.event;
        match name {
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
        self.param(name)
    }

    fn param(&self, name: &str) -> Option<FieldValue<'_>> {
        let e = self.event;
        let i = e.desc.params.iter().position(|p| p == name)?;
        Some(field_value(&e.values().nth(i)?))
    }

    fn qualified(&self, name: &str) -> Option<FieldValue<'_>> {
        let d = self.event.desc;
        if d.set.is_empty() {
            return None;
        }
        match name {
            "name" => Some(FieldValue::Str(Cow::Owned(format!("{}:{}", d.set, d.name)))),
            "kind" => Some(FieldValue::Str(Cow::Owned(format!("{}:{}", d.set, d.kind_name)))),
            _ => None,
        }
    }

    fn tracing_field(&self, name: &str) -> Option<FieldValue<'_>> {
        let fields = crate::codec::fields::of_event(self.event)?;
        fields.into_iter().find(|(k, _)| *k == name).map(|(_, value)| value)
    }

    fn thread_name(&self) -> Option<Cow<'_, str>> {
        self.names?.get(&self.event.thread).map(|n| Cow::Borrowed(n.as_str()))
    }

    fn printed_name(&self, with_set: bool) -> Option<Cow<'_, str>> {
        let d = self.event.desc;
        Some(Cow::Owned(if with_set && !d.set.is_empty() {
            format!("{}:{}.{}", d.set, d.kind_name, d.name)
        } else {
            format!("{}.{}", d.kind_name, d.name)
        }))
    }
}
