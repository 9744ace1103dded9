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
//!     drop(span);
//!
//!     let stream = recording.stop()?;
//!     // The stream holds the span's SpanOpen (span "request", fields `id=7`, no parent), a
//!     // SpanCurrent naming it before the TraceEvent recorded inside it (level 2, text `slow
//!     // reply user="ada"`), and its SpanClose, which names its span and so takes no
//!     // SpanCurrent (the first and the third written by callsite, and read as themselves);
//!     // `event-dump print` shows them, `event-dump latency` the span's duration.
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
//!     assert_eq!(names, ["SpanOpen", "SpanCurrent", "TraceEvent", "SpanClose"]);
//!     Ok(())
//! }
//! ```
//!
//! What it records (docs/FORMAT.md, "Built-in events"):
//!
//! - **A span once, as a span.** Creating a span records `SpanOpen(span, parent, name,
//!   fields)`: tracing's span id, its parent's (0 for a root span), its name and the fields
//!   given at its creation; closing it (its last handle dropped) records `SpanClose(span)`,
//!   on whichever thread that happens. Readers pair them by the id into one span: `event-dump
//!   latency` gives each request's duration, the Perfetto and Chrome exports one slice per
//!   span (async slices, which may begin and end on different threads), the SQLite and
//!   Parquet exports a `SpanOpen` row per span with its parent. Fields recorded later
//!   (`Span::record`) are a `SpanRecord(span, fields)`; `Span::follows_from` a
//!   `SpanFollows(span, follows)`.
//! - **Fields once.** The fields are written at the open and at each `record()`, never again
//!   when the span is entered: an instrumented future entered on each of its polls costs
//!   its span's fields once.
//! - **Events name their span.** Entering and leaving spans keeps the thread's current span
//!   (a word of the thread); the recorder writes a `SpanCurrent(span)` before the next
//!   record of the thread that belongs to a span whenever it changed since the last one it
//!   wrote, and in each block of a thread that has written one before its first such
//!   record. So every event the thread records, a `tracing` event's `TraceEvent` and an
//!   `event!` of any set alike, belongs to the span the latest `SpanCurrent` of its thread
//!   names (0: none): readers group a request's events by it. A `tracing` event with an
//!   explicit parent is written under that span. The span records themselves (`SpanOpen`,
//!   `SpanClose`, ...) name their span and take no `SpanCurrent` (format 2.1.2): a request's
//!   span opened and closed outside every span costs no mark of its own. The cost is paid
//!   only where the current span changes between two other records of a thread: one 16-byte
//!   record; an `event!` outside the bridge pays one load and a compare.
//! - **Entries and exits, on request.** [`EventLayer::with_entries`] also records
//!   `SpanEnter(span, name, "")` and `SpanExit(span, name)` at each entry and exit (each poll
//!   of an instrumented future), which the readers show as slices of the thread that polled.
//!   Logs of earlier versions of the bridge hold only those, with the span's fields in each
//!   `SpanEnter`; they read as they always did.
//!
//! - **Names once a block, by callsite.** A span's or an event's name, target, level and
//!   field names (what `tracing` knows of its callsite before it happens) are written once
//!   in each block that uses them, in a `Callsite` record, and its `SpanOpen`, `SpanRecord`
//!   and `TraceEvent` are written as `SpanOpenAt`, `SpanRecordAt` and `TraceEventAt`, which
//!   name the callsite by a number and key each field by its index (docs/FORMAT.md,
//!   "Callsites"). Every reader expands them as it reads a block, into exactly the records
//!   written without callsites, so nothing downstream changes; because each block that names
//!   a callsite defines it, a ring's latest blocks and a snapshot read alone. A record that
//!   would be cut, or whose text would read otherwise, is written without its callsite.
//!   [`EventLayer::with_callsites`]`(false)` writes every record as format 2.1.0 did, for
//!   readers older than 2.1.1. docs/guide/async.md, "What it costs, and how to keep it down",
//!   measures what callsites save.
//!
//! Each tracing event becomes a `TraceEvent(level, target, text)`: `level` is 1 (ERROR) to 5
//! (TRACE), `target` the event's target, `text` its `message` field followed by its other
//! fields as ` key=value`, as tracing's `fmt` layer writes them, in the grammar of
//! [`event_format::fields`]: each value one token that reads back with its type (integers,
//! floats and booleans bare, strings quoted and escaped; a value recorded by its `Debug` or
//! `Display` text that is not such a token, `Some(3)`, is quoted), so that readers reach the
//! fields by name (`event-dump print --filter 'fields.id == 7'`). A span's fields are in the
//! same grammar.
//!
//! Which events and spans reach the layer is tracing's business: its levels, filters and
//! per-layer filters govern it, and they are the way to keep the cost down: a span that a
//! filter disables costs nothing here. The built-in events are recorded whatever the
//! recorder's control mask says.
//!
//! **Without a running recording the layer does nothing**: tracing events and spans are
//! ignored silently, as a subscriber that records nowhere ignores them, and the layer costs
//! one relaxed atomic load per callback. A span created before the recording started has no
//! `SpanOpen`: its close is a `SpanClose` that readers count as closing nothing.
//!
//! The text of an event and the fields of a span are formatted into buffers of the thread,
//! reused from one to the next: recording allocates nothing once they have grown, and the
//! bridge keeps nothing per span. Strings are cut to the format's maximum (1024 bytes) and
//! flagged as cut, as every string argument is.

mod callsites;

use crate::emit::buffer;
use crate::emit::session;
use crate::event_set::EventSet;
use callsites::INDEXES;
use event_format::builtin;
use event_format::fields;
use event_format::text;
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
    /// Each entry and exit of a span is recorded too (`SpanEnter`, `SpanExit`).
    entries: bool,
    /// Spans and events are written by callsite (the default).
    no_callsites: bool,
}

impl EventLayer {
    /// The layer: it records each span's open, fields and close, and `tracing` events.
    pub const fn new() -> EventLayer {
        EventLayer { entries: false, no_callsites: false }
    }

    /// Whether spans and events are written by callsite (on by default; docs/FORMAT.md,
    /// "Callsites"): a span's or an event's name, target, level and field names once in each
    /// block, in a `Callsite` record, and each `SpanOpen`, `SpanRecord` and `TraceEvent` as a
    /// record that names its callsite and keys its fields by their index. Readers show the
    /// same spans and events either way; by callsite a span costs fewer bytes. Off, the
    /// records are those of format 2.1.0, which readers older than 2.1.1 read (they skip
    /// records by callsite as a newer format's, and count them).
    ///
    /// ```
    /// let layer = event_runtime::tracing_bridge::EventLayer::new().with_callsites(false);
    /// # let _ = layer;
    /// ```
    pub const fn with_callsites(self, callsites: bool) -> EventLayer {
        EventLayer { no_callsites: !callsites, ..self }
    }

    /// Also records each entry and exit of a span, `SpanEnter` and `SpanExit` (off by
    /// default): every poll of an instrumented future, on the thread that polls it, for
    /// those who want to see the scheduling. Each costs about what an `event!` does.
    ///
    /// ```
    /// let layer = event_runtime::tracing_bridge::EventLayer::new().with_entries(true);
    /// # let _ = layer;
    /// ```
    pub const fn with_entries(self, entries: bool) -> EventLayer {
        EventLayer { entries, ..self }
    }
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

impl Bounded<'_> {
    /// Appends a field, ` key=value` (no space before the first), whose value is `len`
    /// bytes that `value` pushes onto the string: with one test of the room and one
    /// reservation when it all fits (the common case), else through [`Bounded::write_str`],
    /// cut. `name` is the key as written ([`FieldWriter::name`]: a raw identifier's `r#`
    /// already left out).
    #[inline]
    fn field(&mut self, name: &str, len: usize, value: impl FnOnce(&mut String)) {
        let space = !self.out.is_empty();
        let total = usize::from(space) + name.len() + 1 + len;
        if self.out.len() + total <= STRING_MAX {
            self.out.reserve(total);
            if space {
                self.out.push(' ');
            }
            // A field's index, by callsite, is one or two digits: pushed, not copied (a copy's
            // call cost more than the key).
            match *name.as_bytes() {
                [a] if a.is_ascii() => self.out.push(char::from(a)),
                [a, b] if a.is_ascii() && b.is_ascii() => {
                    self.out.push(char::from(a));
                    self.out.push(char::from(b));
                }
                _ => self.out.push_str(name),
            }
            self.out.push('=');
            let start = self.out.len();
            value(self.out);
            debug_assert_eq!(self.out.len() - start, len, "the value of `{name}` is as long as it said");
        } else {
            self.field_cut(space, name, len, value);
        }
    }

    /// [`Bounded::field`] where the field does not fit whole: part by part, cut.
    #[cold]
    #[inline(never)]
    fn field_cut(&mut self, space: bool, name: &str, len: usize, value: impl FnOnce(&mut String)) {
        let mut text = String::with_capacity(len);
        value(&mut text);
        for part in [if space { " " } else { "" }, name, "=", &text] {
            let _ = fmt::Write::write_str(self, part);
        }
    }
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
    /// Every key written is one the grammar reads as a key ([`is_key`]); kept for an
    /// event's fields only (with a `message`), for [`event_text`].
    keys: bool,
    /// Keys are the fields' indexes ([`INDEXES`]), for a record by callsite.
    indexed: bool,
    /// With `indexed`: the bytes the fields' names take beyond their indexes, what the
    /// fields will take once a reader names them (`extra` can be negative).
    extra: isize,
}

impl<'a> FieldWriter<'a> {
    /// A writer of a span's fields into `fields`.
    fn span(fields: Bounded<'a>, value: &'a mut String, indexed: bool) -> Self {
        FieldWriter { message: None, fields, value, keys: true, indexed, extra: 0 }
    }

    /// A writer of an event's message into `message` and its other fields into `fields`.
    fn event(message: Bounded<'a>, fields: Bounded<'a>, value: &'a mut String, indexed: bool) -> Self {
        FieldWriter { message: Some(message), fields, value, keys: true, indexed, extra: 0 }
    }

    /// A field's key: its name (noting for an event's fields whether the grammar reads it as
    /// a key), or with `indexed` its index (the callsite's names are all keys: `callsites`
    /// lists only such a callsite).
    #[inline]
    fn name(&mut self, field: &Field) -> &'static str {
        let name = field.name();
        if self.indexed {
            // tracing gives a callsite at most 32 fields; a key beyond is never an index.
            if let Some(index) = INDEXES.get(field.index()) {
                let named = name.strip_prefix("r#").unwrap_or(name).len();
                self.extra += named as isize - index.len() as isize;
                return index;
            }
            self.keys = false;
        } else if self.message.is_some() && !is_key(name) {
            self.keys = false;
        }
        // A raw identifier's `r#` (`r#type`) is left out of the key, as `fmt` does.
        name.strip_prefix("r#").unwrap_or(name)
    }

    /// Starts a field, `key=`, whose value the caller writes after it.
    fn key(&mut self, field: &Field) {
        let name = self.name(field);
        self.fields.field(name, 0, |_| {});
    }

    /// A field whose value is an integer, written without `core::fmt` (a third of a span's
    /// cost, when it went through it).
    #[inline]
    fn integer(&mut self, field: &Field, negative: bool, magnitude: u64) {
        // The digits' values, most significant first from `at`, two at a time (a 10-digit
        // request id in five divisions, not ten).
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut n = magnitude;
        while n >= 100 {
            let pair = (n % 100) as usize;
            n /= 100;
            at -= 2;
            digits[at] = (pair / 10) as u8;
            digits[at + 1] = (pair % 10) as u8;
        }
        if n >= 10 {
            at -= 2;
            digits[at] = (n / 10) as u8;
            digits[at + 1] = (n % 10) as u8;
        } else {
            at -= 1;
            digits[at] = n as u8;
        }
        let digits = &digits[at..];
        let name = self.name(field);
        self.fields.field(name, usize::from(negative) + digits.len(), |out| {
            if negative {
                out.push('-');
            }
            // `& 0xf` tells the compiler what it is: an ASCII character, one byte to push.
            for &d in digits {
                out.push(char::from(b'0' | (d & 0xf)));
            }
        });
    }

    /// A field whose value is written as it is: a token of the grammar.
    fn token(&mut self, field: &Field, value: impl fmt::Display) {
        self.key(field);
        let _ = write!(self.fields, "{value}");
    }
}

/// Appends `s` quoted and escaped as `Debug` escapes a `str` (`\"`, `\\`, `\n`, `\r`, `\t`,
/// `\0`, `\u{1b}`), without `core::fmt`, when it is ASCII; returns false, having
/// appended nothing, when it is not (`Debug` then decides which characters it shows as they
/// are, by Unicode's tables).
fn escape_ascii(s: &str, out: &mut String) -> bool {
    if !s.is_ascii() {
        return false;
    }
    out.reserve(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            ' '..='~' => out.push(c),
            _ => {
                // The other controls and DEL, as `\u{hex}` without leading zeros.
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let b = c as u8;
                out.push_str("\\u{");
                if b >= 0x10 {
                    out.push(char::from(HEX[usize::from(b >> 4)]));
                }
                out.push(char::from(HEX[usize::from(b & 0xf)]));
                out.push('}');
            }
        }
    }
    out.push('"');
    true
}

/// Whether the grammar reads `name` (`r#` stripped, as it is written) as a key: not empty,
/// without a space, `=` or `"`. Every Rust identifier is one.
#[inline]
fn is_key(name: &str) -> bool {
    let name = name.strip_prefix("r#").unwrap_or(name);
    !name.is_empty() && !name.bytes().any(|b| matches!(b, b' ' | b'=' | b'"'))
}

/// Writes a `TraceEvent`'s text as [`fields::write_event_text`] writes it, into `out`
/// (empty): `whole` says that `fields` is all whole fields of the grammar (none cut, every
/// key a key), as the bridge's writer makes them. Then a message without `=` cannot read as
/// ending in fields (a field needs its `=`), so the message, a space and the fields are the
/// text, and the reader's split (which costs a scan of the text from each of its spaces) is
/// not needed to know it; else `write_event_text` decides.
fn event_text(out: &mut String, message: &str, fields: &str, whole: bool) {
    if whole && !message.as_bytes().contains(&b'=') {
        out.reserve(message.len() + 1 + fields.len());
        out.push_str(message);
        if !message.is_empty() && !fields.is_empty() {
            out.push(' ');
        }
        out.push_str(fields);
    } else {
        fields::write_event_text(out, message, fields);
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
        if let Some(message) = &mut self.message
            && field.name() == "message"
        {
            let _ = message.write_str(value);
        } else if text::is_plain(value.as_bytes()) {
            // Its own `Debug` text between quotes: copied as it is.
            let name = self.name(field);
            self.fields.field(name, value.len() + 2, |out| {
                out.push('"');
                out.push_str(value);
                out.push('"');
            });
        } else {
            self.value.clear();
            if !escape_ascii(value, self.value) {
                let _ = write!(self.value, "{value:?}");
            }
            let name = self.name(field);
            let text = self.value.as_str();
            self.fields.field(name, text.len(), |out| out.push_str(text));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.integer(field, value < 0, value.unsigned_abs());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.integer(field, false, value);
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
        let text = if value { "true" } else { "false" };
        let name = self.name(field);
        self.fields.field(name, text.len(), |out| out.push_str(text));
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
    let mut writer = FieldWriter::span(Bounded { out, cut }, value, false);
    record(&mut writer);
}

/// Records a built-in event: into this thread's capture while one runs
/// ([`crate::capture`]), else into the recording.
#[inline]
fn emit(code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut event_format::wire::ArgWriter<'_>)) {
    if let Some(fill) = crate::emit::capture_buffer::try_emit_builtin(code, fixed, strs, fill) {
        buffer::emit(code, fixed, strs, fill);
    }
}

/// Whether the bridge records: a recording runs, or a capture may ([`crate::capture`]). One
/// or two relaxed loads.
#[inline]
fn recording() -> bool {
    session::is_running() || crate::emit::divert::capturing()
}

/// This thread's entered spans, innermost last, as the bridge saw them entered while a
/// recording ran: the innermost is the thread's current span ([`buffer::set_current_span`]).
/// A span is pushed once per entry; a `Vec` that grows once and is then reused.
struct Entered {
    stack: Vec<u64>,
}

thread_local! {
    static ENTERED: RefCell<Entered> = const { RefCell::new(Entered { stack: Vec::new() }) };
}

/// The span `id` was entered: it is the thread's current span.
fn push_entered(id: u64) {
    let _ = ENTERED.try_with(|e| {
        if let Ok(mut e) = e.try_borrow_mut() {
            e.stack.push(id);
            buffer::set_current_span(id);
        }
    });
}

/// The span `id` was left: the span entered before it (its latest entry, which is the
/// innermost unless guards were dropped out of order) is current again.
fn pop_entered(id: u64) {
    let _ = ENTERED.try_with(|e| {
        if let Ok(mut e) = e.try_borrow_mut() {
            // Nearly always the innermost: popped without a search or a move.
            if e.stack.last() == Some(&id) {
                e.stack.pop();
            } else if let Some(at) = e.stack.iter().rposition(|&s| s == id) {
                e.stack.remove(at);
            } else {
                return;
            }
            buffer::set_current_span(e.stack.last().copied().unwrap_or(0));
        }
    });
}

/// Visits an event's fields (`record`) into `scratch`: its message into `text`, the others
/// into `fields`, keyed by their names, or with `indexed` by their indexes. Gives whether
/// every key is one the grammar reads as a key, and with `indexed` the bytes the names take
/// beyond the indexes ([`FieldWriter::extra`]).
fn record_event(scratch: &mut Scratch, indexed: bool, record: impl FnOnce(&mut dyn Visit)) -> (bool, isize) {
    let Scratch { text, fields, value, text_cut, fields_cut } = scratch;
    let mut writer = FieldWriter::event(
        Bounded { out: &mut *text, cut: &mut *text_cut },
        Bounded { out: &mut *fields, cut: &mut *fields_cut },
        &mut *value,
        indexed,
    );
    record(&mut writer);
    (writer.keys, writer.extra)
}

/// Formats an event's message and fields (`record` visits them) into `scratch` and gives its
/// text, cut at [`STRING_MAX`]: the message, then the fields, so that a reader splits them
/// apart again.
fn event_fields<'s>(scratch: &'s mut Scratch, record: impl FnOnce(&mut dyn Visit)) -> Text<'s> {
    let (keys, _) = record_event(scratch, false, record);
    let Scratch { text, fields, value, text_cut, fields_cut } = scratch;
    let whole = keys && !*fields_cut;
    value.clear();
    event_text(value, text, fields, whole);
    let mut text = value.as_str();
    if text.len() > STRING_MAX {
        let mut n = STRING_MAX;
        while !text.is_char_boundary(n) {
            n -= 1;
        }
        text = &text[..n];
        *text_cut = true;
    }
    Text { bytes: text.as_bytes(), truncated: *text_cut || *fields_cut }
}

/// Formats fields into the thread's scratch `fields` buffer and calls `f` with them (and
/// whether they were cut); `f` is not called when there are none.
fn with_fields(record: impl FnOnce(&mut dyn Visit), f: impl FnOnce(Text<'_>)) {
    with_scratch(|scratch| {
        span_fields(&mut scratch.fields, &mut scratch.fields_cut, &mut scratch.value, record);
        f(Text { bytes: scratch.fields.as_bytes(), truncated: scratch.fields_cut });
    });
}

/// Formats a span's fields keyed by their indexes into the thread's scratch `fields` buffer
/// and calls `f` with them; `false`, without calling `f`, when named they would not be
/// written whole (cut at [`STRING_MAX`]): a reader that names them must get back exactly the
/// fields written without callsites. `f`'s answer otherwise.
fn with_values(record: impl FnOnce(&mut dyn Visit), f: impl FnOnce(Text<'_>) -> bool) -> bool {
    let mut done = false;
    with_scratch(|scratch| {
        let mut writer = FieldWriter::span(
            Bounded { out: &mut scratch.fields, cut: &mut scratch.fields_cut },
            &mut scratch.value,
            true,
        );
        record(&mut writer);
        let (keys, extra) = (writer.keys, writer.extra);
        let named = scratch.fields.len() as isize + extra;
        if keys && !scratch.fields_cut && named <= STRING_MAX as isize {
            done = f(Text::new(&scratch.fields));
        }
    });
    done
}

/// Formats an event's message and its other fields keyed by their indexes into `scratch`:
/// the message and the values of a `TraceEventAt`. `None` when a reader that names them
/// would not get back exactly the text written without callsites: a message or fields cut
/// at [`STRING_MAX`], a text that named would be longer, a message with `=` (which the fields
/// grammar may write as the field `message="..."`, [`fields::write_event_text`]), or a key
/// that is not an index.
fn event_values<'s>(scratch: &'s mut Scratch, record: impl FnOnce(&mut dyn Visit)) -> Option<(Text<'s>, Text<'s>)> {
    let (keys, extra) = record_event(scratch, true, record);
    let Scratch { text, fields, text_cut, fields_cut, .. } = scratch;
    let space = isize::from(!text.is_empty() && !fields.is_empty());
    let named = text.len() as isize + space + fields.len() as isize + extra;
    let whole = keys && !*text_cut && !*fields_cut && !text.contains('=') && named <= STRING_MAX as isize;
    whole.then(|| (Text::new(text), Text::new(fields)))
}

/// Records a `SpanEnter` of `id` ([`EventLayer::with_entries`]): out of line, so that an
/// entry without it (the default) costs only the current-span word.
#[inline(never)]
fn record_entry(id: &Id, meta: Option<&'static tracing_core::Metadata<'static>>) {
    if let Some(meta) = meta {
        // The fields are the `SpanOpen`'s: not repeated on every entry.
        let strs = [Text::new(meta.name()), Text::new("")];
        emit(builtin::SPAN_ENTER, builtin::SPAN_ENTER_FIXED, &strs, |w| body::span_enter(w, id.into_u64()));
    }
}

/// Records a `SpanExit` of `id` ([`EventLayer::with_entries`]), out of line as
/// [`record_entry`].
#[inline(never)]
fn record_exit(id: &Id, meta: Option<&'static tracing_core::Metadata<'static>>) {
    if let Some(meta) = meta {
        let strs = [Text::new(meta.name())];
        emit(builtin::SPAN_EXIT, builtin::SPAN_EXIT_FIXED, &strs, |w| body::span_exit(w, id.into_u64()));
    }
}

impl<S> Layer<S> for EventLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        if !recording() {
            return;
        }
        // Its parent as tracing decides it: an explicit one, none for a root, else the
        // thread's current span (the innermost entered, which the bridge keeps).
        let parent = match attrs.parent() {
            Some(parent) => parent.into_u64(),
            None if attrs.is_root() => 0,
            None => buffer::current_span(),
        };
        let meta = attrs.metadata();
        let span = id.into_u64();
        if !self.no_callsites
            && callsites::with_site(meta, |site| {
                with_values(
                    |v| attrs.record(v),
                    |values| {
                        site.emit(builtin::SPAN_OPEN_AT, builtin::SPAN_OPEN_AT_FIXED, &[values], |w, id| {
                            body::span_open_at(w, span, parent, id)
                        })
                    },
                )
            }) == Some(true)
        {
            return;
        }
        with_fields(
            |v| attrs.record(v),
            |fields| {
                let strs = [Text::new(meta.name()), fields];
                emit(builtin::SPAN_OPEN, builtin::SPAN_OPEN_FIXED, &strs, |w| body::span_open(w, span, parent));
            },
        );
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if !recording() || values.is_empty() {
            return;
        }
        let span = id.into_u64();
        // By the span's callsite, whose field indexes the values' keys are.
        if !self.no_callsites
            && let Some(meta) = ctx.metadata(id)
            && callsites::with_site(meta, |site| {
                with_values(
                    |v| values.record(v),
                    |fields| {
                        fields.bytes.is_empty()
                            || site.emit(builtin::SPAN_RECORD_AT, builtin::SPAN_RECORD_AT_FIXED, &[fields], |w, id| {
                                body::span_record_at(w, span, id)
                            })
                    },
                )
            }) == Some(true)
        {
            return;
        }
        with_fields(
            |v| values.record(v),
            |fields| {
                if fields.bytes.is_empty() && !fields.truncated {
                    return;
                }
                let strs = [fields];
                emit(builtin::SPAN_RECORD, builtin::SPAN_RECORD_FIXED, &strs, |w| body::span_record(w, id.into_u64()));
            },
        );
    }

    fn on_follows_from(&self, span: &Id, follows: &Id, _ctx: Context<'_, S>) {
        if !recording() {
            return;
        }
        let (span, follows) = (span.into_u64(), follows.into_u64());
        emit(builtin::SPAN_FOLLOWS, builtin::SPAN_FOLLOWS_FIXED, &[], |w| body::span_follows(w, span, follows));
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if !recording() {
            return;
        }
        let meta = event.metadata();
        let level = level_code(*meta.level());
        // The event's span, as tracing decides it: an explicit parent, none for a root,
        // else the thread's current one. The `SpanCurrent` before it names that span.
        let span = match event.parent() {
            Some(parent) => Some(parent.into_u64()),
            None if event.is_root() => Some(0),
            None => None,
        };
        let current = span.map(buffer::set_current_span);
        with_scratch(|scratch| {
            if !self.no_callsites {
                let by_site = callsites::with_site(meta, |site| match event_values(scratch, |v| event.record(v)) {
                    Some((message, values)) => site.emit(
                        builtin::TRACE_EVENT_AT,
                        builtin::TRACE_EVENT_AT_FIXED,
                        &[message, values],
                        body::trace_event_at,
                    ),
                    None => false,
                });
                match by_site {
                    Some(true) => return,
                    Some(false) => scratch.clear(),
                    None => {}
                }
            }
            let text = event_fields(scratch, |v| event.record(v));
            let strs = [Text::new(meta.target()), text];
            emit(builtin::TRACE_EVENT, builtin::TRACE_EVENT_FIXED, &strs, |w| body::trace_event(w, level));
        });
        if let Some(current) = current {
            buffer::set_current_span(current);
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if !recording() {
            return;
        }
        push_entered(id.into_u64());
        if self.entries {
            record_entry(id, ctx.metadata(id));
        }
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        // Also without a recording: a span entered while one ran is current no more.
        pop_entered(id.into_u64());
        if self.entries && recording() {
            record_exit(id, ctx.metadata(id));
        }
    }

    fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
        if !recording() {
            return;
        }
        let span = id.into_u64();
        emit(builtin::SPAN_CLOSE, builtin::SPAN_CLOSE_FIXED, &[], |w| body::span_close(w, span));
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

    /// What `text::is_plain` must say for the bridge's strings to be their own `Debug` text
    /// between the quotes: every byte printable ASCII, none `"` or `\\`.
    fn plain_by_bytes(s: &str) -> bool {
        s.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
    }

    #[test]
    fn is_plain_agrees_with_a_test_of_each_byte_at_every_position() {
        // Each interesting character at each position of strings from 0 to 19 bytes, so
        // that it falls in a word of eight and in the rest after the words.
        let odd = ['"', '\\', '\n', '\0', '\x1f', ' ', '~', '\x7f', 'é', '\u{301}', '!', '#', '[', ']'];
        for len in 0..20 {
            for at in 0..len {
                for c in odd {
                    let s: String = (0..len).map(|i| if i == at { c } else { 'a' }).collect();
                    assert_eq!(text::is_plain(s.as_bytes()), plain_by_bytes(&s), "{s:?}");
                }
            }
        }
        for b in 0..=0x7fu8 {
            let s = format!("abcdefg{}hijklmn", char::from(b));
            assert_eq!(text::is_plain(s.as_bytes()), plain_by_bytes(&s), "{s:?}");
        }
    }

    #[test]
    fn escape_ascii_writes_what_debug_writes() {
        for b in 0..=0x7fu8 {
            let c = char::from(b);
            for s in [c.to_string(), format!("a{c}b{c}"), format!("{c}{c}\"q\"")] {
                let mut out = String::new();
                assert!(escape_ascii(&s, &mut out));
                assert_eq!(out, format!("{s:?}"), "{s:?}");
            }
        }
        let mut out = String::new();
        assert!(!escape_ascii("caf\u{e9} \"x\"", &mut out), "not ASCII: left to `Debug`");
        assert!(out.is_empty());
    }

    /// A layer that formats each new span's fields as the bridge does, into `got`, after
    /// `before` bytes of another field (so the first of them is written after a space).
    struct Fields {
        got: std::sync::Arc<std::sync::Mutex<Vec<(String, bool)>>>,
        /// Bytes already in the buffer before the fields, to reach the maximum.
        before: usize,
    }

    impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Fields {
        fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
            let (mut out, mut cut, mut value) = ("x".repeat(self.before), false, String::new());
            span_fields(&mut out, &mut cut, &mut value, |v| attrs.record(v));
            self.got.lock().expect("not poisoned").push((out.split_off(self.before), cut));
        }
    }

    /// The fields the bridge writes for the span that `make` creates, after `before` bytes.
    fn fields_of(before: usize, make: impl FnOnce()) -> (String, bool) {
        use tracing_subscriber::layer::SubscriberExt as _;
        let got = std::sync::Arc::default();
        let layer = Fields { got: std::sync::Arc::clone(&got), before };
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), make);
        let got = got.lock().expect("not poisoned");
        got.first().cloned().expect("one span")
    }

    #[test]
    fn every_kind_of_field_is_written_in_the_grammar() {
        let quoted = "say \"hi\"\tto C:\\ \u{1b}[0m\u{7f}";
        let unicode = "caf\u{e9} \u{301}\u{200b} \"ok\"";
        let (got, cut) = fields_of(0, || {
            let _ = tracing::info_span!(
                "s",
                min = i64::MIN,
                max = u64::MAX,
                zero = 0u64,
                minus = -1i64,
                yes = true,
                no = false,
                plain = "GET /orders/{id}",
                empty = "",
                quoted,
                unicode,
                half = 0.5,
                tiny = 1e-7,
                nan = f64::NAN,
                big = u128::MAX,
                r#type = ?'x',
                dbg = ?Some(3),
            );
        });
        let expected = format!(
            "min={} max={} zero=0 minus=-1 yes=true no=false plain=\"GET /orders/{{id}}\" empty=\"\" quoted={quoted:?} \
             unicode={unicode:?} half=0.5 tiny=1e-7 nan=NaN big=\"{}\" type='x' dbg=\"Some(3)\"",
            i64::MIN,
            u64::MAX,
            u128::MAX
        );
        assert_eq!((got.as_str(), cut), (expected.as_str(), false));
        assert_eq!(fields::parse(&got).expect("reads back whole").len(), 16);
    }

    /// Integers are written two digits at a time: every count of digits, odd and even, and
    /// the values at each power of ten's edge read as `Display` writes them.
    #[test]
    fn integers_of_every_length_are_their_decimal_text() {
        let mut values: Vec<u64> = vec![0, 1, 9, u64::MAX, u64::MAX - 1];
        let mut p = 1u64;
        while let Some(next) = p.checked_mul(10) {
            p = next;
            values.extend([p - 1, p, p + 1, p + p / 2 + 7]);
        }
        for v in values {
            let (got, _) = fields_of(0, || {
                let _ = tracing::info_span!("s", u = v);
            });
            assert_eq!(got, format!("u={v}"));
            let signed = i64::try_from(v).map_or(i64::MIN, |v| -v);
            let (got, _) = fields_of(0, || {
                let _ = tracing::info_span!("s", i = signed);
            });
            assert_eq!(got, format!("i={signed}"));
        }
    }

    /// Keys of one and two bytes are pushed byte by byte when ASCII, copied otherwise: a raw
    /// identifier's `r#` left out, a two-byte character whole.
    #[test]
    fn short_keys_are_written_whole() {
        let (got, cut) = fields_of(0, || {
            let _ = tracing::info_span!("s", r#in = 1u64, x = 2u64, é = 3u64, ab = "c");
        });
        assert_eq!((got.as_str(), cut), ("in=1 x=2 é=3 ab=\"c\"", false));
    }

    #[test]
    fn a_field_that_does_not_fit_is_cut_at_the_maximum() {
        // Room for ` id=12` of ` id=12345`, after a first field.
        let (got, cut) = fields_of(STRING_MAX - 10, || {
            let _ = tracing::info_span!("s", a = 1u64, id = 12345u64);
        });
        assert_eq!((got.as_str(), cut), (" a=1 id=12", true));
        // A string value longer than the maximum.
        let long = "ab".repeat(STRING_MAX);
        let (got, cut) = fields_of(0, || {
            let _ = tracing::info_span!("s", long = long.as_str(), after = true);
        });
        assert_eq!(got.len(), STRING_MAX);
        assert_eq!((&got[..7], cut), ("long=\"a", true));
        // A field that fits exactly is not cut.
        let (got, cut) = fields_of(STRING_MAX - 9, || {
            let _ = tracing::info_span!("s", id = 12345u64);
        });
        assert_eq!((got.as_str(), cut), (" id=12345", false));
    }

    #[test]
    fn an_events_text_is_what_the_grammars_writer_writes() {
        let messages = ["", "step", "step ", " step", "a=b", "x =", "say \"hi\"", "two  spaces", "q=\"1\" and", "é=1"];
        let fields = ["", "id=7", "id=7 ok=true", r#"s="a b=c" n=-1"#, "f=1e-7 c='x'", "x=\"=\""];
        for message in messages {
            for f in fields {
                let mut expected = String::new();
                fields::write_event_text(&mut expected, message, f);
                for whole in [true, false] {
                    let mut got = String::new();
                    event_text(&mut got, message, f, whole);
                    assert_eq!(got, expected, "{message:?} {f:?} whole={whole}");
                }
            }
        }
        assert!(is_key("id") && is_key("r#type") && is_key("a.b") && is_key("é"));
        assert!(!is_key("") && !is_key("r#") && !is_key("a b") && !is_key("a=b") && !is_key("a\"b"));
    }

    /// A layer that formats each event's text as the bridge does, into `got`.
    struct Texts(std::sync::Arc<std::sync::Mutex<Vec<(String, bool)>>>);

    impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Texts {
        fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
            let mut scratch = Scratch::new();
            let text = event_fields(&mut scratch, |v| event.record(v));
            let got = (String::from_utf8(text.bytes.to_vec()).expect("UTF-8"), text.truncated);
            self.0.lock().expect("not poisoned").push(got);
        }
    }

    #[test]
    fn events_are_written_in_the_grammar() {
        use tracing_subscriber::layer::SubscriberExt as _;
        let got = std::sync::Arc::default();
        let layer = Texts(std::sync::Arc::clone(&got));
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
            tracing::info!(id = 7, ok = true, "step");
            tracing::info!(id = 7, "a message with x=1 in it");
            tracing::info!(id = 7, "it ends in x=1");
            tracing::info!(user = "ada \"l\"", "");
            tracing::info!("only a message");
            tracing::info!(message = "as a field", n = -1);
            tracing::info!(r#type = 2, "raw");
            tracing::info!(ratio = 0.5, dbg = ?Some(1), "{} of {}", 1, 2);
        });
        let got = got.lock().expect("not poisoned");
        let texts: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            texts,
            [
                "step id=7 ok=true",
                "a message with x=1 in it id=7",
                "message=\"it ends in x=1\" id=7",
                "user=\"ada \\\"l\\\"\"",
                "only a message",
                "as a field n=-1",
                "raw type=2",
                "1 of 2 ratio=0.5 dbg=\"Some(1)\"",
            ]
        );
        assert!(got.iter().all(|(_, cut)| !cut));
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
