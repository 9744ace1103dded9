//! A test capture's buffer (`capture`): where the events of a thread that captures go
//! instead of its thread buffer, and the cold test that decides, while a capture runs
//! somewhere, whether an event is recorded ([`enabled_here`]).
//!
//! `capture` starts and ends a capture and decodes what it recorded; this module is the
//! recording side that `event!` (`__private`), the limits (`admit`) and the `tracing` bridge
//! call, and holds nothing that starts a recording.

use crate::event_set::EventSet;
use event_format::builtin;
use event_format::wire::{ArgWriter, BlockHeader, BlockWriter, Order, Text, body};
use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::AtomicU64;

thread_local! {
    /// This thread's capture, while one runs.
    static CAPTURE: RefCell<Option<CaptureBuffer>> = const { RefCell::new(None) };
}

/// The cold half of `event!`'s test for an event diverted (its bit set in the divert word,
/// `divert::any`) while a capture runs somewhere, as `admit` found before it called this
/// (and does not ask again): whether it is recorded, by this thread's capture or, failing
/// that, by the selection (which, if the capture has ended since, is the set's bits again).
#[cold]
#[inline(never)]
pub(crate) fn enabled_here(bits: &[AtomicU64], index: u16) -> bool {
    crate::event_set::enabled(bits, index) || captures_here()
}

/// Whether this thread captures now.
fn captures_here() -> bool {
    CAPTURE.try_with(|s| s.try_borrow().is_ok_and(|s| s.is_some())).unwrap_or(false)
}

/// Records event `index` of `set` into this thread's capture; gives `fill` back when this
/// thread does not capture (the caller records it, as a diverted event). Called for a
/// diverted event only (its bit set in the divert word, `divert::any`: `__private::emit_routed`).
#[inline]
pub(crate) fn try_emit<F: FnOnce(&mut ArgWriter<'_>)>(
    set: &'static EventSet,
    index: u16,
    fixed: usize,
    strs: &[Text<'_>],
    fill: F,
) -> Option<F> {
    into_capture(fill, |buffer, fill| buffer.event(set, index, fixed, strs, fill))
}

/// Records a built-in event of the `tracing` bridge into this thread's capture; gives `fill`
/// back when this thread does not capture (the caller records it as usual).
#[cfg(feature = "tracing")]
#[inline]
pub(crate) fn try_emit_builtin<F: FnOnce(&mut ArgWriter<'_>)>(
    code: u16,
    fixed: usize,
    strs: &[Text<'_>],
    fill: F,
) -> Option<F> {
    into_capture(fill, |buffer, fill| buffer.write(code, fixed, strs, fill))
}

/// Hands `fill` to `record` with this thread's capture, while this thread captures; gives it
/// back otherwise (no capture runs, this thread's is busy or gone with the thread).
#[inline]
fn into_capture<F>(fill: F, record: impl FnOnce(&mut CaptureBuffer, F)) -> Option<F> {
    if !crate::emit::divert::capturing() {
        return Some(fill);
    }
    let mut fill = Some(fill);
    let _ = CAPTURE.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut()
            && let Some(buffer) = slot.as_mut()
            && let Some(fill) = fill.take()
        {
            record(buffer, fill);
        }
    });
    fill
}

/// Makes `buffer` this thread's capture; returns the one it interrupts (captures nest).
pub(crate) fn begin(buffer: CaptureBuffer) -> Option<CaptureBuffer> {
    let outer = CAPTURE.with(|s| s.borrow_mut().replace(buffer));
    crate::emit::divert::capture_started();
    outer
}

/// Ends this thread's capture, `outer` back in its place; returns what it recorded.
pub(crate) fn end(outer: Option<CaptureBuffer>) -> Option<CaptureBuffer> {
    let buffer = CAPTURE.try_with(|s| std::mem::replace(&mut *s.borrow_mut(), outer)).ok().flatten();
    crate::emit::divert::capture_ended();
    buffer
}

/// What every capture shares: the sets linked into the program, their wire codes and the
/// stream header that names them (computed once).
pub(crate) struct Prepared {
    pub(crate) sets: Vec<(&'static EventSet, u16)>,
    pub(crate) header: Vec<u8>,
}

/// The size of a capture's blocks.
pub(crate) const BLOCK_SIZE: usize = 64 << 10;

/// The thread id of a capture's blocks.
pub(crate) const THREAD: u64 = 1;

/// A capture's buffer: the stream so far and the block being written, by event-format's
/// [`BlockWriter`] (the one way to append a record outside the hot path).
pub(crate) struct CaptureBuffer {
    prepared: Option<&'static Prepared>,
    /// The header and every finished block.
    stream: Vec<u8>,
    /// The block being written, `BLOCK_SIZE` bytes.
    block: BlockWriter,
    sequence: u64,
    /// The last record's time; each record is one tick later.
    time: u64,
    /// The span the last `SpanCurrent` written names (0 before any), as the recorder keeps
    /// it (`buffer`'s `span_written`).
    span_written: u64,
}

impl fmt::Debug for CaptureBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaptureBuffer").field("stream_bytes", &self.stream.len()).finish_non_exhaustive()
    }
}

impl CaptureBuffer {
    /// A new capture's buffer, its stream started with `prepared`'s header (none: nothing is
    /// recorded, as when the sets could not be prepared).
    pub(crate) fn new(prepared: Option<&'static Prepared>) -> CaptureBuffer {
        let stream = prepared.map(|p| p.header.clone()).unwrap_or_default();
        let mut buffer = CaptureBuffer {
            prepared,
            stream,
            block: CaptureBuffer::block(0, 1),
            sequence: 0,
            time: 0,
            span_written: 0,
        };
        let name = std::thread::current().name().map_or_else(|| "thread-1".to_owned(), str::to_owned);
        buffer.write(builtin::THREAD_NAME, builtin::THREAD_NAME_FIXED, &[Text::new(&name)], |w| {
            body::thread_name(w, THREAD)
        });
        buffer
    }

    /// An empty block of number `sequence` whose first record is at `base_time`.
    fn block(sequence: u64, base_time: u64) -> BlockWriter {
        let header = BlockHeader { flags: 0, sequence, thread: THREAD, base_time, lost: 0, used: 0, crc: 0 };
        BlockWriter::new(Order::NATIVE, BLOCK_SIZE as u32, &header)
    }

    /// Seals the block being written into the stream (when it holds a record) and starts
    /// the next, whose first record is at `base_time`.
    fn finish_block(&mut self, base_time: u64) {
        let block = std::mem::replace(&mut self.block, CaptureBuffer::block(self.sequence + 1, base_time));
        if block.is_empty() {
            self.block = CaptureBuffer::block(self.sequence, base_time);
        } else {
            self.stream.extend_from_slice(&block.finish());
            self.sequence += 1;
        }
    }

    /// Records event `index` of `set`; an event of a set that is not registered (none is)
    /// is not recorded.
    fn event(
        &mut self,
        set: &'static EventSet,
        index: u16,
        fixed: usize,
        strs: &[Text<'_>],
        fill: impl FnOnce(&mut ArgWriter<'_>),
    ) {
        let Some(prepared) = self.prepared else { return };
        let Some(&(_, first)) = prepared.sets.iter().find(|(s, _)| std::ptr::eq(*s, set)) else { return };
        self.write(first.wrapping_add(index), fixed, strs, fill);
    }

    /// Appends a record, one tick after the one before, in a new block when it does not fit
    /// in this one. A record that no block takes (its fixed arguments alone are too long,
    /// which no valid events.def allows) is not recorded.
    fn write(&mut self, code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) {
        // The thread's current `tracing` span changed since the last mark: a mark first, as
        // the recorder writes one (none before a span record, which names its span, nor a
        // `Callsite`).
        let span = crate::emit::buffer::current_span();
        if span != self.span_written && code != builtin::THREAD_NAME && !crate::emit::buffer::takes_no_mark(code) {
            self.span_written = span;
            self.put(builtin::SPAN_CURRENT, builtin::SPAN_CURRENT_FIXED, &[], |w| body::span_current(w, span));
        }
        self.put(code, fixed, strs, fill);
    }

    /// Appends a record as [`write`](Self::write) does, without the mark.
    fn put(&mut self, code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) {
        let time = self.time + 1;
        if !self.block.fits(time, fixed, strs) {
            if self.block.is_empty() {
                return;
            }
            self.finish_block(time);
        }
        if self.block.push_with(code, time, fixed, strs, fill).is_ok() {
            self.time = time;
        }
    }

    /// The stream recorded, its last block sealed.
    pub(crate) fn into_stream(mut self) -> Vec<u8> {
        self.finish_block(self.time + 1);
        std::mem::take(&mut self.stream)
    }
}
