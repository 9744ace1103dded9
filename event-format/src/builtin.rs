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

use Letter::{Address, Signed, String as Str, Unsigned, Word};

/// Every built-in event of this format version, by code.
pub const ALL: &[Builtin] = &[
    Builtin { name: "Intern", code: INTERN, format: &[Word, Str], params: &["id", "text"] },
    Builtin { name: "Label", code: LABEL, format: &[Address, Word], params: &["address", "id"] },
    Builtin { name: "ThreadName", code: THREAD_NAME, format: &[Word, Str], params: &["thread", "name"] },
    Builtin { name: "Dropped", code: DROPPED, format: &[Word, Word], params: &["thread", "count"] },
    Builtin { name: "ClockSync", code: CLOCK_SYNC, format: &[Word, Signed], params: &["ticks", "wall_ns"] },
    Builtin { name: "TimeExtend", code: TIME_EXTEND, format: &[Word], params: &["time"] },
    Builtin { name: "Message", code: MESSAGE, format: &[Str], params: &["text"] },
    Builtin {
        name: "TraceEvent",
        code: TRACE_EVENT,
        format: &[Unsigned, Str, Str],
        params: &["level", "target", "text"],
    },
    Builtin { name: "SpanEnter", code: SPAN_ENTER, format: &[Word, Str, Str], params: &["span", "name", "fields"] },
    Builtin { name: "SpanExit", code: SPAN_EXIT, format: &[Word, Str], params: &["span", "name"] },
];

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

/// Blocks of thread 0 that report `losses`, each `(thread, count)`, as `Dropped` events at
/// `time`, numbered from `first_sequence`: how a recorder (or a ring-file reader) reports the
/// losses that no block of the thread itself can carry (docs/FORMAT.md, "Counting losses").
/// Empty when there is nothing to report.
pub fn dropped_report(
    order: crate::wire::Order,
    block_size: u32,
    first_sequence: u64,
    time: u64,
    losses: &[(u64, u64)],
) -> Vec<Vec<u8>> {
    use crate::wire::{BlockHeader, BlockWriter, Value};
    let mut blocks = Vec::new();
    if losses.is_empty() {
        return blocks;
    }
    let mut header = BlockHeader { thread: 0, sequence: first_sequence, base_time: time, ..BlockHeader::default() };
    let mut writer = BlockWriter::new(order, block_size, &header);
    for &(thread, count) in losses {
        let values = [Value::Word(thread), Value::Word(count)];
        if writer.push(DROPPED, time, &values).is_err() {
            blocks.push(writer.finish());
            header.sequence += 1;
            writer = BlockWriter::new(order, block_size, &header);
            // A 24-byte record always fits an empty block (1 KiB at least).
            let _ = writer.push(DROPPED, time, &values);
        }
    }
    blocks.push(writer.finish());
    blocks
}
