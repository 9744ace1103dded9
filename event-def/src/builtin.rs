//! The runtime's built-in events: codes `0xFF00..=0xFFFF`, the same in every stream.
//!
//! They are not part of any events.def; their codes, formats and parameter names are fixed by
//! the stream format's major version (docs/FORMAT.md, "Built-in events"). They are shown under
//! the kind [`BUILTIN_KIND`](crate::schema::BUILTIN_KIND) and are recorded whatever the
//! control mask says.

use crate::letter::Letter;

/// A built-in event type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builtin {
    /// Its name.
    pub name: &'static str,
    /// Its code.
    pub code: u16,
    /// Its parameters' types.
    pub format: &'static [Letter],
    /// Its parameters' names.
    pub params: &'static [&'static str],
}

/// `Intern(id W, text S)`: interned string `id` stands for `text` from here on.
pub const INTERN: u16 = 0xFF00;
/// `Label(address A, id W)`: `address` is labelled with interned string `id`.
pub const LABEL: u16 = 0xFF01;
/// `ThreadName(thread W, name S)`: the thread with id `thread` is called `name`.
pub const THREAD_NAME: u16 = 0xFF02;
/// `Dropped(thread W, count W)`: `count` events of thread `thread` (0: of no thread) were
/// lost before this point. A thread writes its own refusals this way at the start of its
/// next block; the recorder writes, in blocks of thread 0, the losses no block of the thread
/// can carry. A loss is counted once: in a `Dropped` event or in a block header's `lost`
/// field, never both, so the events lost in a stream are the sum of both
/// (docs/FORMAT.md, "Counting losses").
pub const DROPPED: u16 = 0xFF03;
/// `ClockSync(ticks W, wall_ns I)`: counter value `ticks` was wall time `wall_ns`
/// (nanoseconds since the Unix epoch).
pub const CLOCK_SYNC: u16 = 0xFF04;
/// `TimeExtend(time W)`: the running time of this block becomes `time` (absolute ticks);
/// written when a delta would not fit in 32 bits. The record's own delta field is 0.
pub const TIME_EXTEND: u16 = 0xFF05;
/// `Message(text S)`: a free-text message from the program.
pub const MESSAGE: u16 = 0xFF06;
/// `TraceEvent(level U, target S, text S)` (since format 1.1): an event of the `tracing`
/// crate. `level` is 1 = ERROR, 2 = WARN, 3 = INFO, 4 = DEBUG, 5 = TRACE (see
/// [`trace_level_name`]); `target` is the event's target (by default its module path);
/// `text` is its `message` field followed by its other fields as ` key=value`.
pub const TRACE_EVENT: u16 = 0xFF07;
/// `SpanEnter(span W, name S, fields S)` (since format 1.1): the thread entered the `tracing`
/// span with id `span`, named `name`, whose fields recorded so far are `fields`
/// (`key=value` separated by spaces; possibly empty). An id is unique among the spans that
/// exist at the same time; `tracing` may reuse the id of a closed span.
pub const SPAN_ENTER: u16 = 0xFF08;
/// `SpanExit(span W, name S)` (since format 1.1): the thread left the `tracing` span `span`.
pub const SPAN_EXIT: u16 = 0xFF09;

/// `SpanOpen(span W, parent W, name S, fields S)` (since format 2.1.0): the `tracing` span
/// `span` was created, named `name`, inside span `parent` (0: a root span), with the fields
/// `fields` given at its creation (as `SpanEnter`'s: `key=value` separated by spaces). Recorded
/// once per span, on the thread that created it; it lasts until its [`SPAN_CLOSE`], which may
/// come on another thread. A span id is unique among the spans open at one time; `tracing`
/// may reuse the id of a closed span.
pub const SPAN_OPEN: u16 = 0xFF0B;
/// `SpanClose(span W)` (since format 2.1.0): the `tracing` span `span` closed (its last handle
/// was dropped). It closes the latest [`SPAN_OPEN`] of the same id, on any thread.
pub const SPAN_CLOSE: u16 = 0xFF0C;
/// `SpanRecord(span W, fields S)` (since format 2.1.0): fields recorded into the open span
/// `span` after its creation (`Span::record`); a field of a name the span already has
/// takes the new value.
pub const SPAN_RECORD: u16 = 0xFF0D;
/// `SpanFollows(span W, follows W)` (since format 2.1.0): the open span `span` follows from
/// span `follows` (a causal link that is not nesting: `Span::follows_from`).
pub const SPAN_FOLLOWS: u16 = 0xFF0E;
/// `SpanCurrent(span W)` (since format 2.1.0): the events this thread records from this one
/// on, up to its next `SpanCurrent`, were recorded while `tracing` span `span` was the
/// thread's innermost entered span (0: none). Written by the recorder before an event when
/// the thread's current span changed since the last one it wrote (docs/FORMAT.md, "Built-in
/// events").
pub const SPAN_CURRENT: u16 = 0xFF0F;

/// `Stop(blocks W, events W, lost W, cause W, unwritten W)` (since format 2.0.1; `cause` and
/// `unwritten` since 2.0.3): the clean-stop marker. The writer writes it last, when the
/// recording stops cleanly or stops writing the stream, as the only record of a block of
/// thread 0 after every other block: the stream held `blocks` blocks before that block, with
/// `events` events in them, and `lost` events were counted lost in them (`Dropped` counts and
/// block `lost` fields); `cause` says why the stream ends ([`STOP_STOPPED`], [`STOP_ROTATED`],
/// [`STOP_DISK_FULL`], [`STOP_WRITE_ERROR`]) and `unwritten` counts the events the writer held
/// for the stream and could not write. Like [`TIME_EXTEND`] it is consumed while records are
/// delimited (event-format's `wire::RecordIter`), never an event of its own; a stream of 2.0.1
/// or later without it was not stopped cleanly (docs/FORMAT.md, "The clean stop"). Not in
/// [`ALL`].
pub const STOP: u16 = 0xFF0A;
/// Bytes of `Stop`'s arguments a reader requires (`blocks`, `events`, `lost`): its whole body
/// before format 2.0.3 (record length 32).
pub const STOP_FIXED: usize = 24;
/// Bytes of `Stop`'s arguments since format 2.0.3 (`blocks`, `events`, `lost`, `cause`,
/// `unwritten`; record length 48). A shorter body reads `cause` and `unwritten` as 0.
pub const STOP_ARGS: usize = 40;
/// `Stop` cause 0 (since 2.0.3; the cause of every older marker): the program stopped the
/// recording, or its process exited.
pub const STOP_STOPPED: u64 = 0;
/// `Stop` cause 1 (since 2.0.3): the stream is a segment the writer sealed; the recording goes
/// on in the next segment.
pub const STOP_ROTATED: u64 = 1;
/// `Stop` cause 2 (since 2.0.3): the writer could not write for want of space (a full disk).
pub const STOP_DISK_FULL: u64 = 2;
/// `Stop` cause 3 (since 2.0.3): the writer could not write for another I/O error.
pub const STOP_WRITE_ERROR: u64 = 3;

/// `Suppressed(thread W, code U, count W, window W)` (since format 2.1.0): `count` events of
/// wire code `code` recorded on thread `thread` were not kept by the event's limit
/// (events.def's `limit=`, `EVENT_LIMIT`) in the `window` nanoseconds that end at this
/// record, from the first of them. Written by the thread itself, before the next event of
/// that code its limit keeps, and by the recorder (in blocks of thread 0) for the counts no
/// thread wrote: every period, at a rotation and at the stop. A suppression is counted once,
/// in one record: the events of `code` that the program emitted are those the log holds plus
/// the `Suppressed` counts (docs/FORMAT.md, "Limits"). Not a loss: the limit was asked for.
pub const SUPPRESSED: u16 = 0xFF10;
/// `Histogram(thread W, histogram U, since W, count W, sum W, min W, max W, buckets S)`
/// (since format 2.1.0): the values that histogram `histogram` (its place among the
/// histograms the stream's header declares, set after set) counted on thread `thread` from
/// time `since` (the stream's ticks) to this record's time: `count` values, their sum
/// (saturated at 2^64 - 1), the smallest and the largest, and the non-empty buckets as text,
/// `INDEX:COUNT` pairs separated by one space, indexes increasing (docs/FORMAT.md,
/// "Histograms"). The recorder writes them in blocks of thread 0 every period, at a
/// rotation and at the stop; records of one histogram merge by adding their buckets.
pub const HISTOGRAM: u16 = 0xFF11;
/// `Callsite(id W, level U, name S, target S, fields S)` (since format 2.1.1): in the block
/// that holds it, callsite `id` of the `tracing` bridge is the span or event `name` of
/// `target` at `level` (1 = ERROR .. 5 = TRACE), whose fields are named, by their index from
/// 0, by `fields`: the names separated by one space. A definition holds for its own block
/// only, before or after the records that name it: every block that names a callsite holds
/// its definition, so that a block read alone (a ring's, a snapshot's) names it
/// (docs/FORMAT.md, "Callsites").
pub const CALLSITE: u16 = 0xFF12;
/// `SpanOpenAt(span W, parent W, callsite W, values S)` (since format 2.1.1): a `SpanOpen`
/// whose name is callsite `callsite`'s and whose fields are `values` with each key the
/// field's index in the callsite's `fields`. A reader reads it as that `SpanOpen`.
pub const SPAN_OPEN_AT: u16 = 0xFF13;
/// `SpanRecordAt(span W, callsite W, values S)` (since format 2.1.1): a `SpanRecord` whose
/// fields' keys are indexes in callsite `callsite`'s `fields` (the span's own callsite).
pub const SPAN_RECORD_AT: u16 = 0xFF14;
/// `TraceEventAt(callsite W, message S, values S)` (since format 2.1.1): a `TraceEvent` of
/// callsite `callsite`'s level and target, whose text is `message` and `values` (keys as
/// indexes in the callsite's `fields`) joined as the fields grammar joins them.
pub const TRACE_EVENT_AT: u16 = 0xFF15;

/// Whether the built-in event of wire code `code` is a span record: one that names its
/// `tracing` span itself (`span` is its first argument): `SpanEnter`, `SpanExit`,
/// `SpanOpen`, `SpanClose`, `SpanRecord`, `SpanFollows`, `SpanOpenAt`, `SpanRecordAt`. A span
/// record belongs to no current span, in streams of every version: a reader attributes it
/// to none, and since format 2.1.2 a writer writes no `SpanCurrent` for it (docs/FORMAT.md,
/// "Built-in events").
///
/// ```
/// use event_def::builtin;
/// assert!(builtin::is_span_record(builtin::SPAN_CLOSE));
/// assert!(!builtin::is_span_record(builtin::SPAN_CURRENT));
/// assert!(!builtin::is_span_record(builtin::TRACE_EVENT_AT));
/// ```
pub const fn is_span_record(code: u16) -> bool {
    matches!(
        code,
        SPAN_ENTER | SPAN_EXIT | SPAN_OPEN | SPAN_CLOSE | SPAN_RECORD | SPAN_FOLLOWS | SPAN_OPEN_AT | SPAN_RECORD_AT
    )
}

use Letter::{Address, Signed, String as Str, Unsigned, Word};

const SUPPRESSED_TYPE: Builtin = Builtin {
    name: "Suppressed",
    code: SUPPRESSED,
    format: &[Word, Unsigned, Word, Word],
    params: &["thread", "code", "count", "window"],
};
const HISTOGRAM_TYPE: Builtin = Builtin {
    name: "Histogram",
    code: HISTOGRAM,
    format: &[Word, Unsigned, Word, Word, Word, Word, Word, Str],
    params: &["thread", "histogram", "since", "count", "sum", "min", "max", "buckets"],
};

const CALLSITE_TYPE: Builtin = Builtin {
    name: "Callsite",
    code: CALLSITE,
    format: &[Word, Unsigned, Str, Str, Str],
    params: &["id", "level", "name", "target", "fields"],
};
const SPAN_OPEN_AT_TYPE: Builtin = Builtin {
    name: "SpanOpenAt",
    code: SPAN_OPEN_AT,
    format: &[Word, Word, Word, Str],
    params: &["span", "parent", "callsite", "values"],
};
const SPAN_RECORD_AT_TYPE: Builtin = Builtin {
    name: "SpanRecordAt",
    code: SPAN_RECORD_AT,
    format: &[Word, Word, Str],
    params: &["span", "callsite", "values"],
};
const TRACE_EVENT_AT_TYPE: Builtin = Builtin {
    name: "TraceEventAt",
    code: TRACE_EVENT_AT,
    format: &[Word, Str, Str],
    params: &["callsite", "message", "values"],
};

const INTERN_TYPE: Builtin = Builtin { name: "Intern", code: INTERN, format: &[Word, Str], params: &["id", "text"] };
const LABEL_TYPE: Builtin =
    Builtin { name: "Label", code: LABEL, format: &[Address, Word], params: &["address", "id"] };
const THREAD_NAME_TYPE: Builtin =
    Builtin { name: "ThreadName", code: THREAD_NAME, format: &[Word, Str], params: &["thread", "name"] };
const DROPPED_TYPE: Builtin =
    Builtin { name: "Dropped", code: DROPPED, format: &[Word, Word], params: &["thread", "count"] };
const CLOCK_SYNC_TYPE: Builtin =
    Builtin { name: "ClockSync", code: CLOCK_SYNC, format: &[Word, Signed], params: &["ticks", "wall_ns"] };
const TIME_EXTEND_TYPE: Builtin = Builtin { name: "TimeExtend", code: TIME_EXTEND, format: &[Word], params: &["time"] };
const MESSAGE_TYPE: Builtin = Builtin { name: "Message", code: MESSAGE, format: &[Str], params: &["text"] };
const TRACE_EVENT_TYPE: Builtin = Builtin {
    name: "TraceEvent",
    code: TRACE_EVENT,
    format: &[Unsigned, Str, Str],
    params: &["level", "target", "text"],
};
const SPAN_ENTER_TYPE: Builtin =
    Builtin { name: "SpanEnter", code: SPAN_ENTER, format: &[Word, Str, Str], params: &["span", "name", "fields"] };
const SPAN_EXIT_TYPE: Builtin =
    Builtin { name: "SpanExit", code: SPAN_EXIT, format: &[Word, Str], params: &["span", "name"] };
const SPAN_OPEN_TYPE: Builtin = Builtin {
    name: "SpanOpen",
    code: SPAN_OPEN,
    format: &[Word, Word, Str, Str],
    params: &["span", "parent", "name", "fields"],
};
const SPAN_CLOSE_TYPE: Builtin = Builtin { name: "SpanClose", code: SPAN_CLOSE, format: &[Word], params: &["span"] };
const SPAN_RECORD_TYPE: Builtin =
    Builtin { name: "SpanRecord", code: SPAN_RECORD, format: &[Word, Str], params: &["span", "fields"] };
const SPAN_FOLLOWS_TYPE: Builtin =
    Builtin { name: "SpanFollows", code: SPAN_FOLLOWS, format: &[Word, Word], params: &["span", "follows"] };
const SPAN_CURRENT_TYPE: Builtin =
    Builtin { name: "SpanCurrent", code: SPAN_CURRENT, format: &[Word], params: &["span"] };

/// Every built-in event of this format version, by code.
pub const ALL: &[Builtin] = &[
    INTERN_TYPE,
    LABEL_TYPE,
    THREAD_NAME_TYPE,
    DROPPED_TYPE,
    CLOCK_SYNC_TYPE,
    TIME_EXTEND_TYPE,
    MESSAGE_TYPE,
    TRACE_EVENT_TYPE,
    SPAN_ENTER_TYPE,
    SPAN_EXIT_TYPE,
    SPAN_OPEN_TYPE,
    SPAN_CLOSE_TYPE,
    SPAN_RECORD_TYPE,
    SPAN_FOLLOWS_TYPE,
    SPAN_CURRENT_TYPE,
    SUPPRESSED_TYPE,
    HISTOGRAM_TYPE,
    CALLSITE_TYPE,
    SPAN_OPEN_AT_TYPE,
    SPAN_RECORD_AT_TYPE,
    TRACE_EVENT_AT_TYPE,
];

// The bytes of each built-in's fixed-size arguments (every argument but its strings), derived
// from its format: what a writer reserves for the body before its strings
// (event-format's `wire::body` writes the bodies).

/// Bytes of `Intern`'s fixed-size arguments (`id`).
pub const INTERN_FIXED: usize = INTERN_TYPE.fixed_len();
/// Bytes of `Label`'s fixed-size arguments (`address`, `id`).
pub const LABEL_FIXED: usize = LABEL_TYPE.fixed_len();
/// Bytes of `ThreadName`'s fixed-size arguments (`thread`).
pub const THREAD_NAME_FIXED: usize = THREAD_NAME_TYPE.fixed_len();
/// Bytes of `Dropped`'s fixed-size arguments (`thread`, `count`).
pub const DROPPED_FIXED: usize = DROPPED_TYPE.fixed_len();
/// Bytes of `ClockSync`'s fixed-size arguments (`ticks`, `wall_ns`).
pub const CLOCK_SYNC_FIXED: usize = CLOCK_SYNC_TYPE.fixed_len();
/// Bytes of `TimeExtend`'s fixed-size arguments (`time`): its whole body.
pub const TIME_EXTEND_FIXED: usize = TIME_EXTEND_TYPE.fixed_len();
/// Bytes of `Message`'s fixed-size arguments: none, its one argument is a string.
pub const MESSAGE_FIXED: usize = MESSAGE_TYPE.fixed_len();
/// Bytes of `TraceEvent`'s fixed-size arguments (`level`).
pub const TRACE_EVENT_FIXED: usize = TRACE_EVENT_TYPE.fixed_len();
/// Bytes of `SpanEnter`'s fixed-size arguments (`span`).
pub const SPAN_ENTER_FIXED: usize = SPAN_ENTER_TYPE.fixed_len();
/// Bytes of `SpanExit`'s fixed-size arguments (`span`).
pub const SPAN_EXIT_FIXED: usize = SPAN_EXIT_TYPE.fixed_len();
/// Bytes of `SpanOpen`'s fixed-size arguments (`span`, `parent`).
pub const SPAN_OPEN_FIXED: usize = SPAN_OPEN_TYPE.fixed_len();
/// Bytes of `SpanClose`'s fixed-size arguments (`span`): its whole body.
pub const SPAN_CLOSE_FIXED: usize = SPAN_CLOSE_TYPE.fixed_len();
/// Bytes of `SpanRecord`'s fixed-size arguments (`span`).
pub const SPAN_RECORD_FIXED: usize = SPAN_RECORD_TYPE.fixed_len();
/// Bytes of `SpanFollows`'s fixed-size arguments (`span`, `follows`): its whole body.
pub const SPAN_FOLLOWS_FIXED: usize = SPAN_FOLLOWS_TYPE.fixed_len();
/// Bytes of `SpanCurrent`'s fixed-size arguments (`span`): its whole body.
pub const SPAN_CURRENT_FIXED: usize = SPAN_CURRENT_TYPE.fixed_len();
/// Bytes of `Suppressed`'s arguments (`thread`, `code`, `count`, `window`): its whole body.
pub const SUPPRESSED_FIXED: usize = SUPPRESSED_TYPE.fixed_len();
/// Bytes of `Histogram`'s fixed-size arguments (all but `buckets`).
pub const HISTOGRAM_FIXED: usize = HISTOGRAM_TYPE.fixed_len();
/// Bytes of `Callsite`'s fixed-size arguments (`id`, `level`).
pub const CALLSITE_FIXED: usize = CALLSITE_TYPE.fixed_len();
/// Bytes of `SpanOpenAt`'s fixed-size arguments (`span`, `parent`, `callsite`).
pub const SPAN_OPEN_AT_FIXED: usize = SPAN_OPEN_AT_TYPE.fixed_len();
/// Bytes of `SpanRecordAt`'s fixed-size arguments (`span`, `callsite`).
pub const SPAN_RECORD_AT_FIXED: usize = SPAN_RECORD_AT_TYPE.fixed_len();
/// Bytes of `TraceEventAt`'s fixed-size arguments (`callsite`).
pub const TRACE_EVENT_AT_FIXED: usize = TRACE_EVENT_AT_TYPE.fixed_len();

impl Builtin {
    /// The bytes its fixed-size arguments take on the wire: every argument but its strings,
    /// whose size depends on their length ([`Letter::fixed_size`]).
    pub const fn fixed_len(&self) -> usize {
        let mut len = 0;
        let mut i = 0;
        while i < self.format.len() {
            if let Some(size) = self.format[i].fixed_size() {
                len += size;
            }
            i += 1;
        }
        len
    }
}

/// The name of a `TraceEvent`'s `level` (`1` is `"ERROR"` .. `5` is `"TRACE"`), `None` for
/// a value outside `1..=5`.
pub fn trace_level_name(level: u32) -> Option<&'static str> {
    match level {
        1 => Some("ERROR"),
        2 => Some("WARN"),
        3 => Some("INFO"),
        4 => Some("DEBUG"),
        5 => Some("TRACE"),
        _ => None,
    }
}

/// The built-in event with code `code`, if this format version defines one.
pub fn by_code(code: u16) -> Option<&'static Builtin> {
    ALL.iter().find(|b| b.code == code)
}

/// The built-in event named `name`.
pub fn by_name(name: &str) -> Option<&'static Builtin> {
    ALL.iter().find(|b| b.name == name)
}

/// The built-in events' names, comma-separated, for messages.
pub fn names() -> String {
    ALL.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
}
