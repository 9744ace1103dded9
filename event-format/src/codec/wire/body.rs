//! The bodies of the built-in events (docs/FORMAT.md, "Built-in events"): one function per
//! built-in that writes its arguments with the letters of its format.
//!
//! A body's fixed-size arguments take the bytes the `*_FIXED` constant of
//! [`builtin`](crate::builtin) says (derived from the built-in's format); its strings are the
//! writer's strings, by index, in the order of the format. The runtime records built-ins
//! through these functions, and [`BlockWriter`](super::BlockWriter) writes its `TimeExtend`
//! records with [`time_extend`].

use super::put::ArgWriter;

/// `TimeExtend(time W)`: the running time of the block becomes `time`
/// ([`TIME_EXTEND_FIXED`](crate::builtin::TIME_EXTEND_FIXED) bytes).
#[inline(always)]
pub fn time_extend(w: &mut ArgWriter<'_>, time: u64) {
    w.word(time);
}

/// `Dropped(thread W, count W)`: `count` events of `thread` were lost
/// ([`DROPPED_FIXED`](crate::builtin::DROPPED_FIXED) bytes).
#[inline(always)]
pub fn dropped(w: &mut ArgWriter<'_>, thread: u64, count: u64) {
    w.word(thread);
    w.word(count);
}

/// `Intern(id W, text S)`: `id` stands for the writer's string 0
/// ([`INTERN_FIXED`](crate::builtin::INTERN_FIXED) bytes and the string).
#[inline(always)]
pub fn intern(w: &mut ArgWriter<'_>, id: u64) {
    w.word(id);
    w.str(0);
}

/// `Label(address A, id W)`: `address` is labelled with interned string `id`
/// ([`LABEL_FIXED`](crate::builtin::LABEL_FIXED) bytes).
#[inline(always)]
pub fn label(w: &mut ArgWriter<'_>, address: u64, id: u64) {
    w.address(address);
    w.word(id);
}

/// `ThreadName(thread W, name S)`: `thread` is called the writer's string 0
/// ([`THREAD_NAME_FIXED`](crate::builtin::THREAD_NAME_FIXED) bytes and the string).
#[inline(always)]
pub fn thread_name(w: &mut ArgWriter<'_>, thread: u64) {
    w.word(thread);
    w.str(0);
}

/// `ClockSync(ticks W, wall_ns I)`: counter value `ticks` was wall time `wall_ns`
/// ([`CLOCK_SYNC_FIXED`](crate::builtin::CLOCK_SYNC_FIXED) bytes).
#[inline(always)]
pub fn clock_sync(w: &mut ArgWriter<'_>, ticks: u64, wall_ns: i64) {
    w.word(ticks);
    w.signed(wall_ns);
}

/// `Message(text S)`: the writer's string 0
/// ([`MESSAGE_FIXED`](crate::builtin::MESSAGE_FIXED) bytes and the string).
#[inline(always)]
pub fn message(w: &mut ArgWriter<'_>) {
    w.str(0);
}

/// `TraceEvent(level U, target S, text S)`: `level`, then the writer's strings 0 (target)
/// and 1 (text) ([`TRACE_EVENT_FIXED`](crate::builtin::TRACE_EVENT_FIXED) bytes and the
/// strings).
#[inline(always)]
pub fn trace_event(w: &mut ArgWriter<'_>, level: u32) {
    w.unsigned(level);
    w.str(0);
    w.str(1);
}

/// `SpanEnter(span W, name S, fields S)`: `span`, then the writer's strings 0 (name) and 1
/// (fields) ([`SPAN_ENTER_FIXED`](crate::builtin::SPAN_ENTER_FIXED) bytes and the strings).
#[inline(always)]
pub fn span_enter(w: &mut ArgWriter<'_>, span: u64) {
    w.word(span);
    w.str(0);
    w.str(1);
}

/// `SpanExit(span W, name S)`: `span`, then the writer's string 0 (name)
/// ([`SPAN_EXIT_FIXED`](crate::builtin::SPAN_EXIT_FIXED) bytes and the string).
#[inline(always)]
pub fn span_exit(w: &mut ArgWriter<'_>, span: u64) {
    w.word(span);
    w.str(0);
}

/// `SpanOpen(span W, parent W, name S, fields S)`: `span`, `parent`, then the writer's strings
/// 0 (name) and 1 (fields) ([`SPAN_OPEN_FIXED`](crate::builtin::SPAN_OPEN_FIXED) bytes and the
/// strings).
#[inline(always)]
pub fn span_open(w: &mut ArgWriter<'_>, span: u64, parent: u64) {
    w.word(span);
    w.word(parent);
    w.str(0);
    w.str(1);
}

/// `SpanClose(span W)` ([`SPAN_CLOSE_FIXED`](crate::builtin::SPAN_CLOSE_FIXED) bytes).
#[inline(always)]
pub fn span_close(w: &mut ArgWriter<'_>, span: u64) {
    w.word(span);
}

/// `SpanRecord(span W, fields S)`: `span`, then the writer's string 0 (fields)
/// ([`SPAN_RECORD_FIXED`](crate::builtin::SPAN_RECORD_FIXED) bytes and the string).
#[inline(always)]
pub fn span_record(w: &mut ArgWriter<'_>, span: u64) {
    w.word(span);
    w.str(0);
}

/// `SpanFollows(span W, follows W)` ([`SPAN_FOLLOWS_FIXED`](crate::builtin::SPAN_FOLLOWS_FIXED)
/// bytes).
#[inline(always)]
pub fn span_follows(w: &mut ArgWriter<'_>, span: u64, follows: u64) {
    w.word(span);
    w.word(follows);
}

/// `SpanCurrent(span W)` ([`SPAN_CURRENT_FIXED`](crate::builtin::SPAN_CURRENT_FIXED) bytes).
#[inline(always)]
pub fn span_current(w: &mut ArgWriter<'_>, span: u64) {
    w.word(span);
}
/// `Suppressed(thread W, code U, count W, window W)`: `count` events of wire code `code` on
/// `thread` were not kept by their limit in the `window` nanoseconds before the record
/// ([`SUPPRESSED_FIXED`](crate::builtin::SUPPRESSED_FIXED) bytes).
#[inline(always)]
pub fn suppressed(w: &mut ArgWriter<'_>, thread: u64, code: u16, count: u64, window: u64) {
    w.word(thread);
    w.unsigned(u32::from(code));
    w.word(count);
    w.word(window);
}

/// The fixed-size arguments of a `Histogram` record, before its buckets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HistogramHead {
    /// The thread whose values it counts.
    pub thread: u64,
    /// The histogram's place among those the header declares.
    pub histogram: u32,
    /// When its period began (ticks).
    pub since: u64,
    /// Values counted.
    pub count: u64,
    /// Their sum, saturated.
    pub sum: u64,
    /// The smallest (0 when none).
    pub min: u64,
    /// The largest (0 when none).
    pub max: u64,
}

/// `Histogram(thread W, histogram U, since W, count W, sum W, min W, max W, buckets S)`:
/// `head`, then the writer's string 0, the buckets' text
/// ([`HISTOGRAM_FIXED`](crate::builtin::HISTOGRAM_FIXED) bytes and the string).
#[inline(always)]
pub fn histogram(w: &mut ArgWriter<'_>, head: &HistogramHead) {
    w.word(head.thread);
    w.unsigned(head.histogram);
    w.word(head.since);
    w.word(head.count);
    w.word(head.sum);
    w.word(head.min);
    w.word(head.max);
    w.str(0);
}

/// `Callsite(id W, level U, name S, target S, fields S)`: `id`, `level`, then the writer's
/// strings 0 (name), 1 (target) and 2 (the field names, separated by one space)
/// ([`CALLSITE_FIXED`](crate::builtin::CALLSITE_FIXED) bytes and the strings).
#[inline(always)]
pub fn callsite(w: &mut ArgWriter<'_>, id: u64, level: u32) {
    w.word(id);
    w.unsigned(level);
    w.str(0);
    w.str(1);
    w.str(2);
}

/// `SpanOpenAt(span W, parent W, callsite W, values S)`: `span`, `parent`, `callsite`, then
/// the writer's string 0 (the values, keyed by field index)
/// ([`SPAN_OPEN_AT_FIXED`](crate::builtin::SPAN_OPEN_AT_FIXED) bytes and the string).
#[inline(always)]
pub fn span_open_at(w: &mut ArgWriter<'_>, span: u64, parent: u64, callsite: u64) {
    w.word(span);
    w.word(parent);
    w.word(callsite);
    w.str(0);
}

/// `SpanRecordAt(span W, callsite W, values S)`: `span`, `callsite`, then the writer's
/// string 0 (the values, keyed by field index)
/// ([`SPAN_RECORD_AT_FIXED`](crate::builtin::SPAN_RECORD_AT_FIXED) bytes and the string).
#[inline(always)]
pub fn span_record_at(w: &mut ArgWriter<'_>, span: u64, callsite: u64) {
    w.word(span);
    w.word(callsite);
    w.str(0);
}

/// `TraceEventAt(callsite W, message S, values S)`: `callsite`, then the writer's strings 0
/// (the message) and 1 (the values, keyed by field index)
/// ([`TRACE_EVENT_AT_FIXED`](crate::builtin::TRACE_EVENT_AT_FIXED) bytes and the strings).
#[inline(always)]
pub fn trace_event_at(w: &mut ArgWriter<'_>, callsite: u64) {
    w.word(callsite);
    w.str(0);
    w.str(1);
}
