//! Per-thread buffers: each thread writes records into its own current block with plain
//! stores, and hands the block on when it is full (design.mps.telemetry `.sol.block`).
//!
//! No lock and no atomic read-modify-write on the fast path: the thread-local block is
//! reached through a `RefCell` whose borrow flag is a plain thread-local integer, and the
//! recorder's generation is one relaxed load. With a ring file, each record is committed
//! with one release store (a plain store on x86_64). A re-entrant emit (an event recorded
//! while the thread is already recording one, e.g. from a signal handler) finds the cell
//! borrowed and is counted as lost, never as a panic.
//!
//! Where a thread's blocks live ([`Home`]) depends on the policy and sinks:
//!
//! | home | when | a full block |
//! |------|------|--------------|
//! | `Pool` | `switch` or `fill`, no ring file | queued to the writer thread; a free one is taken from the pool |
//! | `Ring` | `ring`, no ring file | the next of the thread's ring, oldest overwritten; the sinks get the ring at stop |
//! | `File` | a ring file | the next of the thread's slot in the file (`fill`: until the slot is full); with `switch` or `fill` and a stream sink, a copy is queued too |
//!
//! When no block can be had (the pool is dry, or `fill` has used its budget), the thread
//! refuses events and counts them; the count is written as a `Dropped` event at the start
//! of its next block, or reported by the recorder at stop. Nothing is lost silently.

use crate::config::Policy;
use crate::event_set::EventSet;
use crate::exchange::BlockBuf;
use crate::ringfile::Slot;
use crate::session::{self, Shared};
use event_format::builtin;
use event_format::wire::{
    ArgWriter, BLOCK_HEADER_LEN, BlockHeader, MAX_RECORD_LEN, Order, RECORD_HEADER_LEN, STRING_MAX, Text, body,
    fit_texts, put_record_header, seal_block,
};
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Where a thread's blocks live (see the module docs).
#[derive(Debug)]
enum Home {
    /// One block at a time from the exchange's pool; `None` while the pool is dry.
    Pool(Option<BlockBuf>),
    /// A ring of blocks on the heap: `blocks × block_size` bytes.
    Ring(BlockBuf),
    /// A slot of the ring file.
    File(Slot),
}

/// A thread's current block and what it knows of its history.
#[derive(Debug)]
pub(crate) struct ThreadBuffer {
    shared: Arc<Shared>,
    /// The set this buffer resolved last (null before the first): its events are written
    /// as `first + j` with one pointer compare and an add on the hot path.
    set: *const EventSet,
    /// The wire code of `set`'s event 0 in this buffer's recording (`shared.sets`).
    first: u16,
    /// The recorder generation this buffer belongs to.
    generation: u64,
    thread: u64,
    /// The current block's sequence number.
    sequence: u64,
    /// Events refused since the last block started; written as a `Dropped` record at the
    /// start of the next block.
    lost: u64,
    /// Events refused in all, for the ring file's slot word.
    refused: u64,
    /// Records in the current block.
    records: u64,
    home: Home,
    /// Blocks in the home ring (`Ring`, `File`); 1 for `Pool`.
    ring_blocks: u64,
    /// The current block's place in the home ring: `sequence % ring_blocks`, kept so that
    /// the emit path does no division.
    index: usize,
    block_size: usize,
    /// Whether there is a current block to write into.
    writable: bool,
    /// Whether this refusal episode has already waited for the writer (`wait` policy).
    waited: bool,
    /// This is the writer thread: its full blocks go straight to the sinks.
    direct: bool,
    /// The ring file had no free slot for this thread: it records nothing, and counts what
    /// it refuses as unattributed (the file's `lost` word).
    slotless: bool,
    /// End of the records in the current block, in `BLOCK_HEADER_LEN..=block_size`.
    end: usize,
    /// The current block's base time.
    base_time: u64,
    /// The time of the last record: the next delta counts from it.
    time: u64,
}

thread_local! {
    static BUFFER: RefCell<Option<ThreadBuffer>> = const { RefCell::new(None) };
    /// Set on the writer thread.
    static IS_WRITER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as the recorder's writer thread.
pub(crate) fn mark_writer() {
    IS_WRITER.with(|w| w.set(true));
}

/// Whether this thread is the recorder's writer thread.
pub(crate) fn is_writer() -> bool {
    IS_WRITER.try_with(std::cell::Cell::get).unwrap_or(false)
}

impl ThreadBuffer {
    /// A buffer for this thread in `shared`'s recording.
    fn new(shared: Arc<Shared>, generation: u64) -> ThreadBuffer {
        let thread = shared.next_thread.fetch_add(1, Ordering::Relaxed);
        let block_size = shared.block_size as usize;
        let direct = IS_WRITER.with(std::cell::Cell::get);
        let mut slotless = false;
        let (home, ring_blocks) = if let Some(file) = &shared.ring_file {
            match file.claim(thread) {
                Some(slot) => {
                    let blocks = u64::from(slot.blocks());
                    (Home::File(slot), blocks)
                }
                None => {
                    slotless = true;
                    (Home::Pool(None), 1)
                }
            }
        } else if shared.policy == Policy::Ring {
            let blocks = u64::from(shared.heap_ring_blocks);
            (Home::Ring(vec![0u8; blocks as usize * block_size].into_boxed_slice()), blocks)
        } else if direct {
            // The writer thread's own block does not come from the pool it empties.
            (Home::Pool(Some(vec![0u8; block_size].into_boxed_slice())), 1)
        } else {
            (Home::Pool(shared.exchange.take(shared.wait)), 1)
        };
        let now = shared.time.now();
        let mut buffer = ThreadBuffer {
            set: std::ptr::null(),
            first: 0,
            shared,
            generation,
            thread,
            sequence: 0,
            lost: 0,
            refused: 0,
            records: 0,
            home,
            ring_blocks,
            index: 0,
            block_size,
            writable: false,
            waited: false,
            direct,
            slotless,
            end: BLOCK_HEADER_LEN,
            base_time: now,
            time: now,
        };
        if buffer.current().is_some() {
            buffer.start_block(now);
        }
        let current = std::thread::current();
        let name = current.name().map_or_else(|| format!("thread-{thread}"), str::to_owned);
        let strs = [Text::new(&name)];
        buffer.write(builtin::THREAD_NAME, builtin::THREAD_NAME_FIXED, &strs, |w| body::thread_name(w, thread));
        buffer
    }

    /// The current block, when there is one.
    #[inline(always)]
    fn current(&mut self) -> Option<&mut [u8]> {
        self.block_at(self.index)
    }

    /// Block `index` of the home ring (the pool block, for `Pool`).
    #[inline(always)]
    fn block_at(&mut self, index: usize) -> Option<&mut [u8]> {
        match &mut self.home {
            Home::Pool(block) => block.as_deref_mut(),
            // Cannot fail: `index` is below `ring_blocks` (`sequence % ring_blocks`, or the
            // previous block's), and the ring holds `ring_blocks` blocks.
            Home::Ring(blocks) => blocks.get_mut(index * self.block_size..(index + 1) * self.block_size),
            Home::File(slot) => Some(slot.block_mut(index as u32)),
        }
    }

    /// Makes the committed end of the current block visible to ring-file readers.
    #[inline(always)]
    fn commit(&self) {
        if let Home::File(slot) = &self.home {
            slot.commit(self.sequence, self.end);
        }
    }

    /// Appends a record; hands the block on and starts another when it does not fit.
    #[inline]
    fn write(&mut self, code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) {
        let now = self.shared.time.now();
        let mut len = RECORD_HEADER_LEN + fixed;
        let mut longest = 0;
        for s in strs {
            len += 2 + s.bytes.len();
            longest = longest.max(s.bytes.len());
        }
        let max = (self.block_size - BLOCK_HEADER_LEN).min(MAX_RECORD_LEN);
        if len > max || longest > STRING_MAX {
            return self.write_cut(code, fixed, strs, fill);
        }
        if !self.writable && !self.resume(now) {
            return self.refuse();
        }
        let mut delta = now.wrapping_sub(self.time);
        let extend = if now < self.time || delta > u64::from(u32::MAX) { TIME_EXTEND_LEN } else { 0 };
        if self.end + extend + len > self.block_size {
            // Twice at most: a fresh block may open with a `Dropped` record.
            for _ in 0..2 {
                if !self.hand_on(now) {
                    return self.refuse();
                }
                if self.end + len <= self.block_size {
                    break;
                }
            }
            delta = 0;
        } else if extend > 0 {
            let at = self.end;
            // `writable` means a current block; were it missing, the event is refused, not a panic.
            let Some(block) = self.current() else { return self.refuse() };
            put_record_header(Order::NATIVE, block, at, builtin::TIME_EXTEND, TIME_EXTEND_LEN as u16, 0);
            let args = &mut block[at + RECORD_HEADER_LEN..at + TIME_EXTEND_LEN];
            body::time_extend(&mut ArgWriter::new(Order::NATIVE, args, &[]), now);
            self.end += TIME_EXTEND_LEN;
            delta = 0;
        }
        let at = self.end;
        let Some(block) = self.current() else { return self.refuse() };
        // len <= MAX_RECORD_LEN = u16::MAX (checked above).
        put_record_header(Order::NATIVE, block, at, code, len as u16, delta as u32);
        let mut args = ArgWriter::new(Order::NATIVE, &mut block[at + RECORD_HEADER_LEN..at + len], strs);
        fill(&mut args);
        debug_assert_eq!(args.written(), len - RECORD_HEADER_LEN, "the fill wrote what the length says");
        self.end = at + len;
        self.time = now;
        self.records += 1;
        self.commit();
    }

    /// The slow path for records with strings too long for [`STRING_MAX`] or the block.
    #[cold]
    fn write_cut(&mut self, code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) {
        let mut cut = strs.to_vec();
        let max = (self.block_size - BLOCK_HEADER_LEN).min(MAX_RECORD_LEN);
        if !fit_texts(&mut cut, RECORD_HEADER_LEN + fixed, max) {
            // No valid schema has fixed arguments longer than a minimal block.
            return self.refuse();
        }
        self.write(code, fixed, &cut, fill);
    }

    /// The wire code of event `index` of `set` in this buffer's recording: `first + index`
    /// from the cache when `set` is the last one resolved, else looked up in the recording's
    /// sets (and cached). `None` when the recording does not hold `set`.
    #[inline(always)]
    fn wire_code(&mut self, set: &'static EventSet, index: u16) -> Option<u16> {
        if std::ptr::eq(set, self.set) {
            return Some(self.first.wrapping_add(index));
        }
        self.resolve(set).map(|first| first.wrapping_add(index))
    }

    /// Looks `set` up in the recording's sets and caches it. The cache lives in this buffer,
    /// which belongs to one recording: a range is never written into another's blocks.
    #[cold]
    fn resolve(&mut self, set: &'static EventSet) -> Option<u16> {
        let first = self.shared.first_of(set)?;
        self.set = set;
        self.first = first;
        Some(first)
    }

    /// Counts an event that could not be recorded.
    #[cold]
    fn refuse(&mut self) {
        if self.slotless {
            session::count_lost_unattributed(1);
            return;
        }
        self.lost += 1;
        self.refused += 1;
        if let Home::File(slot) = &self.home
            && self.shared.policy == Policy::Fill
        {
            slot.set_refused(self.refused);
        }
    }

    /// Tries to get a block again after refusing events.
    #[cold]
    fn resume(&mut self, now: u64) -> bool {
        if self.slotless {
            return false;
        }
        let Home::Pool(slot) = &mut self.home else {
            // A ring that `fill` filled stays full.
            return false;
        };
        let wait = if self.waited { Duration::ZERO } else { self.shared.wait };
        self.waited = true;
        if wait.is_zero() && !self.shared.exchange.may_have_free() {
            return false;
        }
        match self.shared.exchange.take(wait) {
            Some(block) => {
                *slot = Some(block);
                self.start_block(now);
                true
            }
            None => false,
        }
    }

    /// Starts the current block at `now`: its header, and a `Dropped` record when events
    /// were refused since the last one.
    fn start_block(&mut self, now: u64) {
        self.index = (self.sequence % self.ring_blocks) as usize;
        self.end = BLOCK_HEADER_LEN;
        self.base_time = now;
        self.time = now;
        self.records = 0;
        self.writable = true;
        self.waited = false;
        // With a ring file, readers learn that this block is being rewritten before any of
        // its bytes change (ringfile's module docs): the release fence keeps the header
        // stores below from becoming visible before the position (free on x86_64).
        self.commit();
        std::sync::atomic::fence(Ordering::Release);
        let block_header = BlockHeader {
            flags: 0,
            sequence: self.sequence,
            thread: self.thread,
            base_time: now,
            lost: 0,
            used: 0,
            crc: 0,
        };
        // Every caller has a current block; without one there is nothing to start.
        let Some(block) = self.current() else {
            self.writable = false;
            return;
        };
        block_header.write(Order::NATIVE, block);
        if self.lost > 0 {
            let (thread, lost) = (self.thread, std::mem::take(&mut self.lost));
            let at = self.end;
            let Some(block) = self.current() else { return };
            put_record_header(Order::NATIVE, block, at, builtin::DROPPED, DROPPED_LEN as u16, 0);
            let args = &mut block[at + RECORD_HEADER_LEN..at + DROPPED_LEN];
            body::dropped(&mut ArgWriter::new(Order::NATIVE, args, &[]), thread, lost);
            self.end += DROPPED_LEN;
            self.records += 1;
            self.commit();
        }
    }

    /// Closes the current block: its used length, zeroed padding, and (in a ring file,
    /// where readers check it) its CRC.
    fn finish_block(&mut self) {
        let end = self.end;
        let in_file = matches!(self.home, Home::File(_));
        // Called only while `writable`, which means a current block.
        let Some(block) = self.current() else { return };
        block[end..].fill(0);
        let used = (end - BLOCK_HEADER_LEN) as u32;
        if in_file {
            seal_block(Order::NATIVE, block, used);
        } else {
            // The writer (or the stop) computes the CRC, off this thread's path.
            Order::NATIVE.put_u32(&mut block[event_format::wire::BLOCK_USED_AT..], used);
        }
    }

    /// Hands the current block on and starts the next. `false` when there is no next block:
    /// the caller refuses the event.
    #[cold]
    fn hand_on(&mut self, now: u64) -> bool {
        if !self.writable {
            return false;
        }
        if self.end == BLOCK_HEADER_LEN {
            self.start_block(now);
            return true;
        }
        self.finish_block();
        let shared = Arc::clone(&self.shared);
        match &mut self.home {
            Home::Pool(slot) => {
                // `writable` means a pool block in hand; without one the event is refused.
                let Some(full) = slot.take() else {
                    self.writable = false;
                    return false;
                };
                if self.direct {
                    *slot = Some(shared.write_now(full));
                } else if shared.exchange.submit(full) {
                    *slot = shared.exchange.take(shared.wait);
                } else {
                    // The recording stopped: the writer is gone.
                    session::count_lost_unattributed(self.records);
                }
                self.sequence += 1;
                if slot.is_none() {
                    self.writable = false;
                    self.waited = true;
                    return false;
                }
            }
            Home::Ring(_) => self.sequence += 1,
            Home::File(_) => {
                if shared.streams_copies() {
                    self.copy_to_streams();
                }
                if shared.policy == Policy::Fill && self.sequence + 1 >= self.ring_blocks {
                    // The slot is full: its last block stays, finished, and nothing follows.
                    self.writable = false;
                    return false;
                }
                self.sequence += 1;
            }
        }
        self.start_block(now);
        true
    }

    /// Queues a copy of the current (finished) block for the stream sinks.
    fn copy_to_streams(&mut self) {
        let (thread, records, direct) = (self.thread, self.records, self.direct);
        let shared = Arc::clone(&self.shared);
        // Called on a finished current block; without one there is nothing to copy.
        let Some(block) = self.current() else { return };
        shared.copy_to_streams(block, thread, records, direct);
    }

    /// Hands a partial block on (explicit flush, thread exit). A ring keeps its blocks:
    /// only `Pool` blocks move.
    fn flush(&mut self, exiting: bool) {
        match &self.home {
            Home::Pool(_) if self.writable && self.end > BLOCK_HEADER_LEN => {
                if exiting {
                    self.finish_block();
                    self.writable = false;
                    // Matched as `Pool` above and `writable`: there is a block to take.
                    let Home::Pool(Some(full)) = std::mem::replace(&mut self.home, Home::Pool(None)) else { return };
                    if self.direct {
                        self.shared.write_now(full);
                    } else if !self.shared.exchange.submit(full) {
                        session::count_lost_unattributed(self.records);
                    }
                } else {
                    let now = self.time;
                    self.hand_on(now);
                }
            }
            Home::File(_) if self.writable && self.end > BLOCK_HEADER_LEN => {
                let copies = self.shared.streams_copies();
                if exiting {
                    // Sealed, so a reader finds a checked block; the position already covers it.
                    self.finish_block();
                    if copies {
                        self.copy_to_streams();
                    }
                    self.writable = false;
                } else if copies {
                    let now = self.time;
                    self.hand_on(now);
                }
            }
            _ => {}
        }
    }

    /// The last `n` events of this thread, decoded, oldest first.
    fn last_events(&mut self, n: usize) -> Vec<String> {
        let mut blocks = Vec::new();
        let (end, ring) = (self.end, self.ring_blocks);
        if ring > 1 && self.sequence > 0 && self.writable {
            // The previous block of a ring is still there, finished.
            let previous = ((self.sequence - 1) % ring) as usize;
            if let Some(b) = self.block_at(previous) {
                let used = Order::NATIVE.u32(&b[event_format::wire::BLOCK_USED_AT..]) as usize;
                if BLOCK_HEADER_LEN + used <= b.len() {
                    blocks.push(b[..BLOCK_HEADER_LEN + used].to_vec());
                }
            }
        }
        if self.writable
            && let Some(b) = self.current()
        {
            blocks.push(b[..end].to_vec());
        }
        let mut lines = Vec::new();
        let catalog = &self.shared.catalog;
        for b in &blocks {
            let header = BlockHeader::read(Order::NATIVE, b);
            let block = event_format::decode::Block {
                index: 0,
                offset: 0,
                header,
                records: b[BLOCK_HEADER_LEN..].to_vec(),
                order: Order::NATIVE,
                stored_len: b.len() as u64,
            };
            for entry in block.entries(catalog) {
                let mut line = String::new();
                match entry {
                    event_format::decode::Entry::Event(e) => {
                        let _ = event_format::text::write_event(&mut line, &self.shared.clock, &e);
                    }
                    other => line = format!("{other:?}"),
                }
                lines.push(line);
            }
        }
        let skip = lines.len().saturating_sub(n);
        lines.split_off(skip)
    }
}

/// The length of a `TimeExtend` record, header included.
const TIME_EXTEND_LEN: usize = RECORD_HEADER_LEN + builtin::TIME_EXTEND_FIXED;
/// The length of a `Dropped` record, header included.
const DROPPED_LEN: usize = RECORD_HEADER_LEN + builtin::DROPPED_FIXED;

impl Drop for ThreadBuffer {
    fn drop(&mut self) {
        if self.shared.is_parents() {
            // A child of `fork()` dropping its parent's buffer: the block, the slot and the
            // pool are the parent's, and not ours to finish, hand on or free (`fork`'s module
            // docs). A slot's drop would mark it free in the parent's ring file.
            std::mem::forget(std::mem::replace(&mut self.home, Home::Pool(None)));
            return;
        }
        // Thread exit (or a new recorder): the partial block is handed on, not lost.
        self.flush(true);
        if self.lost > 0 {
            // Refused after the last block: the recorder reports them.
            self.shared.report_dropped(self.thread, std::mem::take(&mut self.lost));
        }
        if let Home::Ring(blocks) = std::mem::replace(&mut self.home, Home::Pool(None)) {
            let end = self.end;
            self.shared.retire_ring(crate::session::RetiredRing {
                blocks,
                sequence: self.sequence,
                end,
                ring_blocks: self.ring_blocks,
            });
        }
    }
}

/// Records one event on this thread. `fixed` is the size of the arguments other than
/// strings; `strs` are the string arguments, written by [`ArgWriter::str`] in `fill`.
#[inline]
pub(crate) fn emit(code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) {
    emit_as(Code::Wire(code), fixed, strs, fill)
}

/// Records event `index` (its position in `set`) with its arguments: its wire code is the
/// first of the range that the buffer's recording gave `set`, plus `index`
/// (docs/EVENT-SETS.md, decision 1). A set that the recording does not hold has the event
/// refused and counted. What the generated code calls.
#[inline]
pub(crate) fn emit_event(
    set: &'static EventSet,
    index: u16,
    fixed: usize,
    strs: &[Text<'_>],
    fill: impl FnOnce(&mut ArgWriter<'_>),
) {
    emit_as(Code::Event(set, index), fixed, strs, fill)
}

/// What a record's code is given as.
#[derive(Clone, Copy)]
enum Code {
    /// A wire code as it is: a built-in event's.
    Wire(u16),
    /// Event `index` of a set.
    Event(&'static EventSet, u16),
}

impl Code {
    /// The wire code in `buffer`'s recording; `None` when it does not hold the set.
    #[inline(always)]
    fn wire(self, buffer: &mut ThreadBuffer) -> Option<u16> {
        match self {
            Code::Wire(code) => Some(code),
            Code::Event(set, index) => buffer.wire_code(set, index),
        }
    }
}

/// Writes the record in `buffer`, or refuses it (counted) when its set is not recorded.
#[inline(always)]
fn write_in(
    buffer: &mut ThreadBuffer,
    code: Code,
    fixed: usize,
    strs: &[Text<'_>],
    fill: impl FnOnce(&mut ArgWriter<'_>),
) {
    match code.wire(buffer) {
        Some(code) => buffer.write(code, fixed, strs, fill),
        None => buffer.refuse(),
    }
}

#[inline]
fn emit_as(code: Code, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) {
    let done = BUFFER.try_with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            session::count_lost_unattributed(1);
            return;
        };
        let current = session::generation();
        match slot.as_mut() {
            Some(buffer) if buffer.generation == current => write_in(buffer, code, fixed, strs, fill),
            _ => attach(&mut slot, current, code, fixed, strs, fill),
        }
    });
    if done.is_err() {
        // The thread is exiting and its buffer is gone.
        session::count_lost_unattributed(1);
    }
}

#[cold]
fn attach(
    slot: &mut Option<ThreadBuffer>,
    generation: u64,
    code: Code,
    fixed: usize,
    strs: &[Text<'_>],
    fill: impl FnOnce(&mut ArgWriter<'_>),
) {
    // Drop (and so flush) a buffer of an older recorder first.
    *slot = None;
    // In a child of `fork()`, its own recording starts here, on its first event.
    let found = session::current(generation).map(|shared| (generation, shared)).or_else(session::start_after_fork);
    let buffer = found.map(|(generation, shared)| ThreadBuffer::new(shared, generation));
    match buffer {
        Some(buffer) => {
            let buffer = slot.insert(buffer);
            write_in(buffer, code, fixed, strs, fill)
        }
        None => session::count_lost_unattributed(1),
    }
}

/// Hands this thread's partial block on.
pub(crate) fn flush_this_thread() {
    let _ = BUFFER.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut()
            && let Some(buffer) = slot.as_mut()
            && !buffer.shared.is_parents()
        {
            buffer.flush(false);
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

/// The last `n` events this thread recorded in the running recording, decoded; `None` when
/// it has recorded none or is recording one now.
pub(crate) fn last_events_of_this_thread(n: usize) -> Option<Vec<String>> {
    BUFFER
        .try_with(|cell| {
            let mut slot = cell.try_borrow_mut().ok()?;
            let buffer = slot.as_mut().filter(|b| b.generation == session::generation())?;
            Some(buffer.last_events(n))
        })
        .ok()
        .flatten()
}

/// This thread's partial `Pool` block, finished, for a fatal signal's last write; the thread
/// records nothing more. `None` when it has none or is recording now.
#[cfg(unix)]
pub(crate) fn take_block_for_signal() -> Option<BlockBuf> {
    BUFFER
        .try_with(|cell| {
            let mut slot = cell.try_borrow_mut().ok()?;
            let buffer = slot.as_mut()?;
            if !buffer.writable || buffer.end == BLOCK_HEADER_LEN || !matches!(buffer.home, Home::Pool(_)) {
                return None;
            }
            buffer.finish_block();
            buffer.writable = false;
            match &mut buffer.home {
                Home::Pool(block) => block.take(),
                _ => None,
            }
        })
        .ok()
        .flatten()
}
