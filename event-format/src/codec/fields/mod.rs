//! The named fields of `tracing` events and spans, as text: written by the runtime's tracing
//! bridge, read back by every reader (event-dump's `--filter fields.NAME`, its JSON and
//! Chrome exports), so that there is one grammar on both sides.
//!
//! A `SpanEnter`'s `fields` argument, and the part of a `TraceEvent`'s `text` after its
//! message, are `key=value` pairs separated by one space (docs/FORMAT.md, "Built-in
//! events"). A value is one of:
//!
//! | value | written | read as |
//! |---|---|---|
//! | an integer | `7`, `-3` (decimal) | [`FieldValue::Int`] |
//! | a float | as Rust's `Debug` writes an `f64`: `1.5`, `1e-7`, `NaN`, `inf`, `-inf` | [`FieldValue::Float`] |
//! | a boolean | `true`, `false` | [`FieldValue::Bool`] |
//! | a string | in double quotes, escaped as Rust's `Debug` escapes a `str` (`\"`, `\\`, `\n`, `\r`, `\t`, `\0`, `\'`, `\u{..}`) | [`FieldValue::Str`] |
//! | a character | as Rust's `Debug` writes a `char`: `'x'`, `'\n'` | [`FieldValue::Str`] of that character |
//!
//! A value recorded by its `Debug` or `Display` text (`?x`, `%x` in tracing's macros) is
//! written as that text when the text is itself one of the forms above (`?name` of a
//! `String` is `"ada"`, `%n` of a number is `42`), and otherwise as a string holding the
//! text (`Some(3)` is written `"Some(3)"`), so that every value reads back as exactly one
//! token and a reader never has to guess where one ends. A key is any run of characters
//! other than a space, `=` and `"` (tracing's field names, `r#` stripped).
//!
//! The message of a `TraceEvent` comes first, as its `Display` text without a key; the fields
//! are the longest run of whole `key=value` pairs at the end of the text, after a space
//! ([`split_message`]). The writer keeps that unambiguous: a message whose own text would
//! read as ending in fields is written as the field `message="..."` instead ([`write_event_text`]).
//!
//! Logs written before this grammar (a value's `Debug` text as it came, `x=Foo { a: 1 }`) read
//! the same wherever their text is in it, which integers, floats, booleans and strings always
//! were; a text that is not is shown as it is, with no named fields.

pub(crate) mod grammar;

pub use grammar::{FieldValue, name_fields, parse, parse_prefix, split_message, write_event_text, write_text_value};

use crate::codec::builtins::BuiltinEvent;
use crate::codec::decode::Event;
use event_def::builtin;

/// The named fields of a decoded built-in `tracing` event: the `fields` of a `SpanEnter`,
/// `SpanOpen` or `SpanRecord` read whole ([`parse`]; as many whole fields as it begins with
/// when the writer cut it), a `TraceEvent`'s `text` after its message ([`split_message`]).
/// `None` for any other event, for a text without fields, and for one that is not UTF-8 or
/// not in the grammar (an old log's, see the module docs).
pub fn of_event<'e>(event: &'e Event<'e>) -> Option<Vec<(&'e str, FieldValue<'e>)>> {
    let (is_span, t) = match BuiltinEvent::of(event)? {
        BuiltinEvent::SpanEnter { fields, .. }
        | BuiltinEvent::SpanOpen { fields, .. }
        | BuiltinEvent::SpanRecord { fields, .. } => (true, fields),
        BuiltinEvent::TraceEvent { text, .. } => (false, text),
        _ => return None,
    };
    let text = std::str::from_utf8(t.bytes).ok()?;
    let fields = match (is_span, t.truncated) {
        (true, false) => parse(text)?,
        (true, true) => parse_prefix(text),
        (false, _) => split_message(text).1,
    };
    Some(fields).filter(|f| !f.is_empty())
}

/// The parameter of a built-in `tracing` span event that holds only fields (`key=value`
/// separated by spaces): a `SpanEnter`'s and a `SpanOpen`'s `fields`, a `SpanRecord`'s. `None`
/// for any other event (a `TraceEvent`'s fields follow its message in its `text`).
pub fn fields_param(event: &Event<'_>) -> Option<usize> {
    if event.desc.kind.is_some() {
        return None;
    }
    match event.desc.code {
        // Its place by its name in the built-ins' table (a built-in's `params` are the table's).
        builtin::SPAN_ENTER | builtin::SPAN_OPEN | builtin::SPAN_RECORD => {
            event.desc.params.iter().position(|p| p == "fields")
        }
        _ => None,
    }
}
