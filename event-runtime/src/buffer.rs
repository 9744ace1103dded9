//! Per-thread buffers: each thread writes records into its own current block with plain
//! stores, and hands the block on when it is full (design.mps.telemetry `.sol.block`).
//!
//! No lock and no atomic read-modify-write on the fast path: the thread-local block is reached
//! through a `RefCell` whose borrow flag is a plain thread-local integer, and the recorder's
//! generation is one relaxed load. A re-entrant emit (an event recorded while the thread is
//! already recording one, e.g. from a signal handler) finds the cell borrowed and is counted
//! as lost, never as a panic.

use crate::recorder::{self, Shared};
use event_format::builtin;
use event_format::wire::{
    BLOCK_HEADER_LEN, BlockHeader, MAX_RECORD_LEN, Order, RECORD_HEADER_LEN, STRING_MAX,
    STRING_TRUNCATED, Text, fit_texts, seal_block,
};
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A thread's current block.
#[derive(Debug)]
pub(crate) struct ThreadBuffer {
    shared: Arc<Shared>,
    /// The recorder generation this buffer belongs to.
    generation: u64,
    thread: u64,
    sequence: u64,
    /// Events this thread lost since its last block was handed on.
    lost: u64,
    /// `block_size` bytes; the header is written when the block is sealed.
    block: Vec<u8>,
    /// End of the records, in `BLOCK_HEADER_LEN..=block.len()`.
    end: usize,
    /// The block's base time.
    base_time: u64,
    /// The time of the last record: the next delta counts from it.
    time: u64,
}

thread_local! {
    static BUFFER: RefCell<Option<ThreadBuffer>> = const { RefCell::new(None) };
}

/// Writes the arguments of one record: a cursor over the reserved bytes.
#[derive(Debug)]
pub struct Cursor<'a> {
    out: &'a mut [u8],
    at: usize,
    strs: &'a [Text<'a>],
}

impl Cursor<'_> {
    /// Writes a 64-bit value.
    #[inline(always)]
    pub fn u64(&mut self, v: u64) {
        self.out[self.at..self.at + 8].copy_from_slice(&v.to_ne_bytes());
        self.at += 8;
    }
    /// Writes a 32-bit value.
    #[inline(always)]
    pub fn u32(&mut self, v: u32) {
        self.out[self.at..self.at + 4].copy_from_slice(&v.to_ne_bytes());
        self.at += 4;
    }
    /// Writes a byte.
    #[inline(always)]
    pub fn u8(&mut self, v: u8) {
        self.out[self.at] = v;
        self.at += 1;
    }
    /// Writes string `i` of the record, as cut to fit.
    #[inline(always)]
    pub fn str(&mut self, i: usize) {
        let t = self.strs[i];
        let prefix = t.bytes.len() as u16 | if t.truncated { STRING_TRUNCATED } else { 0 };
        self.out[self.at..self.at + 2].copy_from_slice(&prefix.to_ne_bytes());
        self.out[self.at + 2..self.at + 2 + t.bytes.len()].copy_from_slice(t.bytes);
        self.at += 2 + t.bytes.len();
    }
}

impl ThreadBuffer {
    fn new(shared: Arc<Shared>, generation: u64) -> ThreadBuffer {
        let thread = shared.next_thread.fetch_add(1, Ordering::Relaxed);
        let now = shared.time.now();
        let block = vec![0; shared.block_size as usize];
        let mut buffer = ThreadBuffer { shared, generation, thread, sequence: 0, lost: 0, block, end: BLOCK_HEADER_LEN, base_time: now, time: now };
        let current = std::thread::current();
        let name = current.name().map_or_else(|| format!("thread-{thread}"), str::to_owned);
        let strs = [Text::new(&name)];
        buffer.write(builtin::THREAD_NAME, 8, &strs, |c| {
            c.u64(thread);
            c.str(0);
        });
        buffer
    }

    /// Appends a record; hands the block on and starts another when it does not fit.
    #[inline]
    fn write(&mut self, code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut Cursor<'_>)) {
        let now = self.shared.time.now();
        let mut len = RECORD_HEADER_LEN + fixed;
        let mut longest = 0;
        for s in strs {
            len += 2 + s.bytes.len();
            longest = longest.max(s.bytes.len());
        }
        let max = (self.block.len() - BLOCK_HEADER_LEN).min(MAX_RECORD_LEN);
        if len > max || longest > STRING_MAX {
            return self.write_cut(code, fixed, strs, fill);
        }
        let mut delta = now.wrapping_sub(self.time);
        let extend = if now < self.time || delta > u64::from(u32::MAX) { RECORD_HEADER_LEN + 8 } else { 0 };
        if self.end + extend + len > self.block.len() {
            self.hand_on(now);
            delta = 0;
        } else if extend > 0 {
            let at = self.end;
            self.header(at, builtin::TIME_EXTEND, RECORD_HEADER_LEN + 8, 0);
            self.block[at + RECORD_HEADER_LEN..at + RECORD_HEADER_LEN + 8].copy_from_slice(&now.to_ne_bytes());
            self.end += RECORD_HEADER_LEN + 8;
            delta = 0;
        }
        let at = self.end;
        self.header(at, code, len, delta as u32);
        let mut cursor = Cursor { out: &mut self.block[at + RECORD_HEADER_LEN..at + len], at: 0, strs };
        fill(&mut cursor);
        debug_assert_eq!(cursor.at, len - RECORD_HEADER_LEN, "the fill wrote what the length says");
        self.end = at + len;
        self.time = now;
    }

    /// The slow path for records with strings too long for [`STRING_MAX`] or the block.
    #[cold]
    fn write_cut(&mut self, code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut Cursor<'_>)) {
        let mut cut = strs.to_vec();
        let max = (self.block.len() - BLOCK_HEADER_LEN).min(MAX_RECORD_LEN);
        if !fit_texts(&mut cut, RECORD_HEADER_LEN + fixed, max) {
            // No valid schema has fixed arguments longer than a minimal block.
            self.lost += 1;
            return;
        }
        self.write(code, fixed, &cut, fill);
    }

    #[inline(always)]
    fn header(&mut self, at: usize, code: u16, len: usize, delta: u32) {
        let h = &mut self.block[at..at + RECORD_HEADER_LEN];
        h[0..2].copy_from_slice(&code.to_ne_bytes());
        h[2..4].copy_from_slice(&(len as u16).to_ne_bytes());
        h[4..8].copy_from_slice(&delta.to_ne_bytes());
    }

    /// Seals the current block, hands it to the sink, and starts an empty one at `now`.
    #[cold]
    fn hand_on(&mut self, now: u64) {
        if self.end > BLOCK_HEADER_LEN {
            let header = BlockHeader { flags: 0, sequence: self.sequence, thread: self.thread, base_time: self.base_time, lost: self.lost, used: 0, crc: 0 };
            header.write(Order::NATIVE, &mut self.block);
            seal_block(Order::NATIVE, &mut self.block, (self.end - BLOCK_HEADER_LEN) as u32);
            self.shared.sink.accept(&self.block);
            // The sink copied the block: reuse the buffer, zeroing only the records written, so
            // that the next block's padding is zeros as FORMAT.md asks.
            self.block[BLOCK_HEADER_LEN..self.end].fill(0);
            self.sequence += 1;
            self.lost = 0;
        }
        self.end = BLOCK_HEADER_LEN;
        self.base_time = now;
        self.time = now;
    }

    fn flush(&mut self) {
        let now = self.time;
        self.hand_on(now);
    }
}

impl Drop for ThreadBuffer {
    fn drop(&mut self) {
        // Thread exit (or a new recorder): the partial block is handed on, not lost.
        self.flush();
    }
}

/// Records one event on this thread. `fixed` is the size of the arguments other than
/// strings; `strs` are the string arguments, written by [`Cursor::str`] in `fill`.
#[inline]
pub(crate) fn emit(code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut Cursor<'_>)) {
    let done = BUFFER.try_with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            recorder::count_lost_unattributed();
            return;
        };
        let current = recorder::generation();
        match slot.as_mut() {
            Some(buffer) if buffer.generation == current => buffer.write(code, fixed, strs, fill),
            _ => attach(&mut slot, current, code, fixed, strs, fill),
        }
    });
    if done.is_err() {
        // The thread is exiting and its buffer is gone.
        recorder::count_lost_unattributed();
    }
}

#[cold]
fn attach(slot: &mut Option<ThreadBuffer>, generation: u64, code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut Cursor<'_>)) {
    // Drop (and so flush) a buffer of an older recorder first.
    *slot = None;
    match recorder::current(generation) {
        Some(shared) => {
            let buffer = slot.insert(ThreadBuffer::new(shared, generation));
            buffer.write(code, fixed, strs, fill);
        }
        None => recorder::count_lost_unattributed(),
    }
}

/// Hands this thread's partial block on.
pub(crate) fn flush_this_thread() {
    let _ = BUFFER.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut()
            && let Some(buffer) = slot.as_mut()
        {
            buffer.flush();
        }
    });
}

/// Drops this thread's buffer (flushing it) if it belongs to `generation`.
pub(crate) fn detach_this_thread(generation: u64) {
    let _ = BUFFER.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut()
            && slot.as_ref().is_some_and(|b| b.generation == generation)
        {
            *slot = None;
        }
    });
}
