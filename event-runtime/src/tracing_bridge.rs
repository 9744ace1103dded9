//! A bridge from the [`tracing`](https://docs.rs/tracing) crate: its events and spans as built-in events (feature `tracing`).
//!
//! [`EventLayer`] is a tracing-subscriber [`Layer`] that records them into the running
//! recording. (The summary above is one line, linking nothing in this module: with a link
//! to `Layer` in it, the crate's index showed only "A bridge from the tracing crate: a".)
//!
//! A program already instrumented with `tracing` adds three lines: the layer on a
//! subscriber, the subscriber as the default, and a recording. It needs no events.def: a
//! program without one records [`EVENTS`], an event set without user events; a program
//! with events.def sets records them and the bridge's events together.
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt as _;
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let subscriber = tracing_subscriber::registry().with(event_runtime::tracing_bridge::EventLayer::new());
//!     tracing::subscriber::set_global_default(subscriber)?;
//!     let recording = event_runtime::Recorder::new().memory().start()?;
//!
//!     let span = tracing::info_span!("request", id = 7);
//!     span.in_scope(|| tracing::warn!(user = "ada", "slow reply"));
//!
//!     let stream = recording.stop()?;
//!     // The stream holds a SpanEnter (span "request", fields `id=7`), a TraceEvent (level 2,
//!     // text `slow reply user="ada"`) and a SpanExit; `event-dump print` shows them.
//!     use event_runtime::format::{Catalog, Decoder, Entry};
//!     let mut decoder = Decoder::new(&stream[..])?;
//!     let catalog = Catalog::new(&decoder.header().sets);
//!     let mut names = Vec::new();
//!     while let Some(block) = decoder.next_block() {
//!         for entry in block?.entries(&catalog) {
//!             if let Entry::Event(e) = entry {
//!                 names.push(e.desc.name.clone());
//!             }
//!         }
//!     }
//!     names.retain(|n| n != "ThreadName");
//!     assert_eq!(names, ["SpanEnter", "TraceEvent", "SpanExit"]);
//!     Ok(())
//! }
//! ```
//!
//! Each tracing event becomes a `TraceEvent(level, target, text)`: `level` is 1 (ERROR) to 5
//! (TRACE), `target` the event's target, `text` its `message` field followed by its other
//! fields as ` key=value`, as tracing's `fmt` layer writes them, in the grammar of
//! [`event_format::fields`]: each value one token that reads back with its type (integers,
//! floats and booleans bare, strings quoted and escaped; a value recorded by its `Debug` or
//! `Display` text that is not such a token, `Some(3)`, is quoted), so that readers reach the
//! fields by name (`event-dump print --filter 'fields.id == 7'`). Entering a span records
//! `SpanEnter(span, name, fields)`, with tracing's span id, the span's name and the fields
//! recorded so far, in the same grammar; leaving it records
//! `SpanExit(span, name)`. Both are recorded on the thread that enters or leaves the span, so
//! each thread's spans nest in its own stream of events (docs/FORMAT.md, "Built-in events").
//!
//! Which events and spans reach the layer is tracing's business: its levels, filters and
//! per-layer filters govern it. The built-in events are recorded whatever the recorder's
//! control mask says.
//!
//! **Without a running recording the layer does nothing**: tracing events are ignored
//! silently, as a subscriber that records nowhere ignores them, and the layer costs one relaxed
//! atomic load per callback. A span's fields are kept only while a recording runs, so a span
//! created before the recording started is entered with empty `fields`.
//!
//! The text of an event is formatted into a buffer of the thread, reused from one event to
//! the next: recording an event allocates nothing once the buffer has grown. Strings are cut
//! to the format's maximum (1024 bytes) and flagged as cut, as every string argument is.

use crate::buffer;
use crate::event_set::EventSet;
use crate::session;
use event_format::builtin;
use event_format::fields;
use event_format::wire::{STRING_MAX, Text, body};
use std::cell::RefCell;
use std::fmt::{self, Write as _};
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// An event set with no user events, named `tracing`, for a program that records only
/// through `tracing`: a recorder of a program that links in no events.def set records it
/// (`Recorder::new()`), and `Recorder::new().sets(&[&EVENTS])` names it. It is not
/// registered: the `tracing` events are built-in events, which need no set, so a program
/// with events.def sets and the bridge records its sets and the bridge's events together.
pub static EVENTS: EventSet = EventSet::__new(
    "# The event set, version 1.0.0. Written by event-format.\nSET(tracing)\nVERSION(1, 0, 0)\n",
    "<tracing_bridge::EVENTS>",
    "tracing",
    "",
    &NO_BITS,
);

/// The control bits of [`EVENTS`], which has no events.
static NO_BITS: [std::sync::atomic::AtomicU64; 1] = [const { std::sync::atomic::AtomicU64::new(0) }];

/// A [`Layer`] that records `tracing` events and span entries and exits into the running
/// recording (see the [module docs](self)).
///
/// It needs a subscriber that keeps span data, such as `tracing_subscriber::registry()`.
#[derive(Debug, Default, Clone, Copy)]
pub struct EventLayer {
    _private: (),
}

impl EventLayer {
    /// The layer.
    pub const fn new() -> EventLayer {
        EventLayer { _private: () }
    }
}

/// A span's fields recorded so far, as `key=value` separated by spaces; kept in the span's
/// extensions.
#[derive(Debug, Default)]
struct SpanFields {
    fields: String,
    /// `fields` was cut at [`STRING_MAX`].
    cut: bool,
}

/// Per-thread formatting buffers, reused from one event to the next.
#[derive(Debug, Default)]
struct Scratch {
    /// An event's message.
    text: String,
    /// Its other fields (or a span's fields) while they are formatted.
    fields: String,
    /// One value's `Debug` text while it is formatted, then an event's whole text.
    value: String,
    /// `text` was cut at [`STRING_MAX`].
    text_cut: bool,
    /// `fields` was cut at [`STRING_MAX`].
    fields_cut: bool,
}

impl Scratch {
    const fn new() -> Scratch {
        Scratch { text: String::new(), fields: String::new(), value: String::new(), text_cut: false, fields_cut: false }
    }

    fn clear(&mut self) {
        self.text.clear();
        self.fields.clear();
        self.value.clear();
        self.text_cut = false;
        self.fields_cut = false;
    }
}

/// Capacity above which a thread's buffers are given back after use: a huge event does not
/// keep its memory for the thread's lifetime.
const KEEP_CAPACITY: usize = 4 * STRING_MAX;

thread_local! {
    static SCRATCH: RefCell<Scratch> = const { RefCell::new(Scratch::new()) };
}

/// Runs `f` with this thread's cleared scratch buffers, or with fresh ones when they are in
/// use (a field's `Debug` that records a tracing event itself) or gone (the thread is exiting).
fn with_scratch(f: impl FnOnce(&mut Scratch)) {
    let mut f = Some(f);
    let _ = SCRATCH.try_with(|cell| {
        if let Ok(mut scratch) = cell.try_borrow_mut()
            && let Some(f) = f.take()
        {
            scratch.clear();
            f(&mut scratch);
            if [&scratch.text, &scratch.fields, &scratch.value].iter().any(|b| b.capacity() > KEEP_CAPACITY) {
                *scratch = Scratch::default();
            }
        }
    });
    if let Some(f) = f {
        f(&mut Scratch::default());
    }
}

/// Appends to a string up to [`STRING_MAX`] bytes, cut at a character boundary; what does not
/// fit is dropped and noted. Formatting never fails.
struct Bounded<'a> {
    out: &'a mut String,
    cut: &'a mut bool,
}

impl fmt::Write for Bounded<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = STRING_MAX.saturating_sub(self.out.len());
        if s.len() <= room {
            self.out.push_str(s);
        } else {
            let mut n = room;
            while !s.is_char_boundary(n) {
                n -= 1;
            }
            self.out.push_str(&s[..n]);
            *self.cut = true;
        }
        Ok(())
    }
}

/// Formats fields as tracing's `fmt` layer does, in the grammar of
/// [`event_format::fields`]: the `message` field (when `message` is given) as its `Display`
/// text, the others as `key=value` separated by spaces, each value one token that reads
/// back with its type (integers, floats and booleans bare, strings quoted and escaped, other
/// values' `Debug` text as it is when it is such a token, else quoted).
struct FieldWriter<'a> {
    message: Option<Bounded<'a>>,
    fields: Bounded<'a>,
    /// A value's `Debug` text while it is formatted.
    value: &'a mut String,
}

impl FieldWriter<'_> {
    /// Starts a field: the separator and `key=`.
    fn key(&mut self, field: &Field) {
        let name = field.name();
        // A raw identifier (`r#type`) is shown without its `r#`, as `fmt` does.
        let name = name.strip_prefix("r#").unwrap_or(name);
        if !self.fields.out.is_empty() {
            let _ = self.fields.write_char(' ');
        }
        let _ = write!(self.fields, "{name}=");
    }

    /// A field whose value is written as it is: a token of the grammar.
    fn token(&mut self, field: &Field, value: impl fmt::Display) {
        self.key(field);
        let _ = write!(self.fields, "{value}");
    }
}

impl Visit for FieldWriter<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match &mut self.message {
            // The message is `format_args!(..)`, whose `Debug` is its text.
            Some(message) if field.name() == "message" => {
                let _ = write!(message, "{value:?}");
            }
            _ => {
                self.value.clear();
                let _ = write!(self.value, "{value:?}");
                self.key(field);
                let _ = fields::write_text_value(&mut self.fields, self.value);
            }
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        match &mut self.message {
            Some(message) if field.name() == "message" => {
                let _ = message.write_str(value);
            }
            _ => self.token(field, format_args!("{value:?}")),
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.token(field, value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.token(field, value);
    }

    fn record_i128(&mut self, field: &Field, value: i128) {
        self.token(field, value);
    }

    fn record_u128(&mut self, field: &Field, value: u128) {
        // Beyond an i128, a reader could not hold it as an integer: a string.
        if i128::try_from(value).is_ok() {
            self.token(field, value);
        } else {
            self.token(field, format_args!("\"{value}\""));
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.token(field, format_args!("{value:?}"));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.token(field, value);
    }
}

/// A level's code in `TraceEvent` (docs/FORMAT.md): 1 = ERROR .. 5 = TRACE.
fn level_code(level: Level) -> u32 {
    if level == Level::ERROR {
        1
    } else if level == Level::WARN {
        2
    } else if level == Level::INFO {
        3
    } else if level == Level::DEBUG {
        4
    } else {
        5
    }
}

/// Formats `record`'s fields as `key=value` into `out` (after what it holds), with `value`
/// as the buffer of one value's text.
fn span_fields(out: &mut String, cut: &mut bool, value: &mut String, record: impl FnOnce(&mut dyn Visit)) {
    let mut writer = FieldWriter { message: None, fields: Bounded { out, cut }, value };
    record(&mut writer);
}

impl<S> Layer<S> for EventLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !session::is_running() {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        // Formatted before the span's extensions are locked: a field's `Debug` may use
        // tracing itself.
        let mut new = SpanFields::default();
        span_fields(&mut new.fields, &mut new.cut, &mut String::new(), |v| attrs.record(v));
        span.extensions_mut().replace(new);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if !session::is_running() {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        with_scratch(|scratch| {
            span_fields(&mut scratch.fields, &mut scratch.fields_cut, &mut scratch.value, |v| values.record(v));
            if scratch.fields.is_empty() && !scratch.fields_cut {
                return;
            }
            let mut extensions = span.extensions_mut();
            if extensions.get_mut::<SpanFields>().is_none() {
                extensions.replace(SpanFields::default());
            }
            if let Some(SpanFields { fields, cut }) = extensions.get_mut::<SpanFields>() {
                let mut out = Bounded { out: fields, cut };
                if !out.out.is_empty() {
                    let _ = out.write_char(' ');
                }
                let _ = out.write_str(&scratch.fields);
                *out.cut |= scratch.fields_cut;
            }
        });
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if !session::is_running() {
            return;
        }
        let meta = event.metadata();
        let level = level_code(*meta.level());
        with_scratch(|scratch| {
            let Scratch { text, fields, value, text_cut, fields_cut } = scratch;
            event.record(&mut FieldWriter {
                message: Some(Bounded { out: &mut *text, cut: &mut *text_cut }),
                fields: Bounded { out: &mut *fields, cut: &mut *fields_cut },
                value: &mut *value,
            });
            // The message, then the fields, so that a reader splits them apart again.
            value.clear();
            fields::write_event_text(value, text, fields);
            let mut text = value.as_str();
            if text.len() > STRING_MAX {
                let mut n = STRING_MAX;
                while !text.is_char_boundary(n) {
                    n -= 1;
                }
                text = &text[..n];
                *text_cut = true;
            }
            let strs = [Text::new(meta.target()), Text { bytes: text.as_bytes(), truncated: *text_cut || *fields_cut }];
            buffer::emit(builtin::TRACE_EVENT, builtin::TRACE_EVENT_FIXED, &strs, |w| body::trace_event(w, level));
        });
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if !session::is_running() {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let extensions = span.extensions();
        let fields = match extensions.get::<SpanFields>() {
            Some(f) => Text { bytes: f.fields.as_bytes(), truncated: f.cut },
            None => Text::new(""),
        };
        let strs = [Text::new(span.name()), fields];
        buffer::emit(builtin::SPAN_ENTER, builtin::SPAN_ENTER_FIXED, &strs, |w| body::span_enter(w, id.into_u64()));
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        if !session::is_running() {
            return;
        }
        let Some(name) = ctx.metadata(id).map(|m| m.name()) else { return };
        let strs = [Text::new(name)];
        buffer::emit(builtin::SPAN_EXIT, builtin::SPAN_EXIT_FIXED, &strs, |w| body::span_exit(w, id.into_u64()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_event_set_parses_and_is_canonical() {
        let schema = EVENTS.schema().expect("EVENTS parses");
        assert!(schema.events.is_empty() && schema.kinds.is_empty());
        assert_eq!(event_format::def::render(&schema), EVENTS.def());
    }

    #[test]
    fn bounded_cuts_at_a_character_boundary_and_notes_it() {
        let mut out = "x".repeat(STRING_MAX - 1);
        let mut cut = false;
        let _ = Bounded { out: &mut out, cut: &mut cut }.write_str("é");
        assert_eq!((out.len(), cut), (STRING_MAX - 1, true));
        let mut out = String::new();
        let mut cut = false;
        let _ = Bounded { out: &mut out, cut: &mut cut }.write_str("é");
        assert_eq!((out.as_str(), cut), ("é", false));
    }
}
