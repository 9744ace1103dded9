//! Per-thread buffers: each thread writes records into its own current block with plain
//! stores, and hands the block on when it is full (design.mps.telemetry `.sol.block`).
//!
//! No lock and no atomic read-modify-write on the fast path: the thread-local block is
//! reached through a `RefCell` whose borrow flag is a plain thread-local integer, and the
//! recorder's generation is one relaxed load. Each record is committed with one release
//! store (a plain store on x86_64), in the ring file's slot or the thread's lane, so that
//! the stop (or a reader of the ring file) can take it without the thread. A re-entrant emit (an event recorded
//! while the thread is already recording one, e.g. from a signal handler) finds the cell
//! borrowed and is counted as lost, never as a panic.
//!
//! Where a thread's blocks live ([`Home`]) depends on the policy and sinks:
//!
//! | home | when | a full block |
//! |------|------|--------------|
//! | `Lane`, one block | `switch` or `fill`, no ring file | queued to the writer thread; a free one is taken from the pool |
//! | `Lane`, a ring | `ring`, no ring file | the next of the thread's ring, oldest overwritten; the sinks get the ring at stop |
//! | `File` | a ring file | the next of the thread's slot in the file (`fill`: until the slot is full); with `switch` or `fill` and a stream sink, a copy is queued too |
//!
//! A lane (`lane::Lane`) is the ring file's commit protocol over heap memory: each record
//! is committed with one release store (a plain store on x86_64), and everything else the
//! thread does to its blocks happens under the lane's lock, a few times per block. So the
//! stop takes the committed prefix of every live thread's current block (and every block of
//! its ring) without the thread's help: a thread still running, blocked, or never joined
//! loses nothing it recorded before the stop. The thread finds its lane taken on its next
//! cold path (a full block, a flush, its exit), writes nothing more into it, and counts what
//! it recorded after the take as lost (`lost_unattributed`). Each lane is registered with the
//! recording (`Shared::add_lane`); the writer thread's own pool lane is not (it flushes itself
//! before the stop writes). A ring-file slot whose blocks the stream sinks get copies of is
//! registered the same way (`ringfile::SlotCopy`): the stop copies the committed prefix of
//! the block a live thread is writing, which no hand-on has copied yet.
//!
//! When no block can be had (the pool is dry, or `fill` has used its budget), the thread
//! refuses events and counts them; the count is written as a `Dropped` event at the start
//! of its next block, or reported by the recorder at stop. Nothing is lost silently.

use crate::blocks::exchange::BlockBuf;
use crate::blocks::lane::{Lane, LaneWriter};
use crate::blocks::ringfile::{Slot, SlotCopy};
use crate::clock::TimeSource;
use crate::config::Policy;
use crate::emit::line::{LINE, Line};
use crate::emit::session::{self, Shared};
use crate::event_set::EventSet;
use event_format::builtin;
use event_format::raw::{fit_texts, put_record_header, seal_block};
use event_format::wire::{
    ArgWriter, BLOCK_HEADER_LEN, BlockHeader, MAX_RECORD_LEN, Order, RECORD_HEADER_LEN, RecordIter, STRING_MAX, Text,
    body,
};
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Where a thread's blocks live (see the module docs).
#[derive(Debug)]
enum Home {
    /// A lane on the heap: one block at a time from the exchange's pool (`ring_blocks == 1`;
    /// none while the pool is dry), or a ring of `ring_blocks` blocks.
    Lane(LaneWriter),
    /// A slot of the ring file.
    File(Slot),
    /// None: no ring-file slot was free, or the stop took the lane (`slotless`).
    Nowhere,
}

/// A thread's current block and what it knows of its history.
///
/// `repr(C)`, the fields an enabled event reads and writes first, in the order the hot path
/// takes them: with the borrow flag before them ([`Local`]), they fill the thread-local's
/// first two cache lines and nothing else does, so that an event whose caches the program's
/// own work emptied misses on two lines of its buffer, not on every line of it (BENCHMARKS.md,
/// "the cache lines an enabled event reads"), and on the span word's own (`SPAN`).
#[derive(Debug)]
#[repr(C)]
pub(crate) struct ThreadBuffer {
    /// The recorder generation this buffer belongs to.
    generation: u64,
    /// The set this buffer resolved last (null before the first): its events are written
    /// as `first + j` with one pointer compare and an add on the hot path.
    set: *const EventSet,
    /// The time of the last record: the next delta counts from it.
    time: u64,
    /// End of the records in the current block, in `BLOCK_HEADER_LEN..=block_size`.
    end: usize,
    /// Records in the current block.
    records: u64,
    /// The `tracing` span the last `SpanCurrent` this thread wrote names (0 before any: what
    /// a reader assumes), or [`SPAN_UNKNOWN`] at the start of each block once it has written
    /// one: a record finds [`Local::span`] different and writes a `SpanCurrent` before it
    /// ([`ThreadBuffer::mark_span`]).
    span_written: u64,
    block_size: usize,
    /// The wire code of `set`'s event 0 in this buffer's recording (`shared.sets`).
    first: u16,
    /// Whether there is a current block to write into ([`WRITABLE`]) and whether the
    /// recording's clock is the TSC ([`TSC`], `TimeSource::is_tsc`: read with one
    /// instruction, without matching on the source per event), in one byte: the hot path
    /// tests both with one compare ([`writable`](Self::writable) reads the first).
    state: u8,
    home: Home,
    shared: Arc<Shared>,
    thread: u64,
    /// The current block's sequence number.
    sequence: u64,
    /// Events refused since the last block started; written as a `Dropped` record at the
    /// start of the next block.
    lost: u64,
    /// Events refused in all, for the ring file's slot word.
    refused: u64,
    /// With a `File` home whose blocks the stream sinks get copies of: the stop's handle on
    /// the current block (`ringfile::SlotCopy`), under whose lock each block is copied.
    copy: Option<Arc<SlotCopy>>,
    /// Blocks in the home ring (a ring lane, `File`); 1 for a pool lane.
    ring_blocks: u64,
    /// The current block's place in the home ring: `sequence % ring_blocks`, kept so that
    /// the emit path does no division.
    index: usize,
    /// The longest record a block holds: `block_size - BLOCK_HEADER_LEN`, at most
    /// `MAX_RECORD_LEN`; kept so that the emit path does not compute it per event.
    max_record: usize,
    /// Whether this refusal episode has already waited for the writer (`wait` policy).
    waited: bool,
    /// This is the writer thread: its full blocks go straight to the sinks.
    direct: bool,
    /// The thread has no home: the ring file had no free slot for it, or the stop took its
    /// lane. It records nothing, and counts what it refuses as unattributed (the file's
    /// `lost` word, the recording's report of thread 0, or [`session::lost_unattributed`]).
    slotless: bool,
    /// The current block's base time.
    base_time: u64,
    /// The pending snapshot whose `post=N` events this thread counts, and how many are left.
    /// While it does, every event is diverted to `watched` (`divert::post_window`). The
    /// count is never 0 (a window ends at its last event), and its `NonZeroU64` keeps the
    /// `Option`'s tag out of the layout: a tag is a niche, which `Option<ThreadBuffer>`
    /// would take for its own and test on every event, on a cold line (the home's tag,
    /// on the second hot line, is the niche it takes instead).
    post: Option<(u64, std::num::NonZeroU64)>,
    /// This thread has written a `SpanCurrent` in this recording: each of its blocks then
    /// holds one before its first record that belongs to a span (any but span records and
    /// `Callsite`s; a `Dropped` opens a block before it), so that a reader of any block
    /// alone (a ring's, a segment's) knows.
    span_marks: bool,
    /// The next block of the `post` window to copy (`hold_post_blocks`): at first the block
    /// that held the trigger event.
    post_from: u64,
    /// The blocks of the `post` window copied so far, for its snapshot (`ring` policy).
    post_held: Vec<Box<[u8]>>,
}

/// [`ThreadBuffer::span_written`] at the start of a block of a thread that names spans: no
/// span id (`tracing`'s are small counters), so that the block's first record that belongs
/// to a span writes one.
const SPAN_UNKNOWN: u64 = u64::MAX;

/// Whether a record of wire code `code` takes no `SpanCurrent` before it (docs/FORMAT.md,
/// "Built-in events", format 2.1.2): a span record, which names its span itself, and a
/// `Callsite`, a definition that readers consume as they delimit records (the record by
/// callsite after it takes the mark).
pub(crate) fn takes_no_mark(code: u16) -> bool {
    builtin::is_span_record(code) || code == builtin::CALLSITE
}

/// [`ThreadBuffer`]'s `state`: there is a current block to write into.
const WRITABLE: u8 = 1;
/// [`ThreadBuffer`]'s `state`: the recording's clock is the TSC.
const TSC: u8 = 2;

/// What a thread keeps for the recorder, in one thread-local aligned to a cache line: its
/// buffer, whose hot fields come first ([`ThreadBuffer`]). An enabled event reads the borrow
/// flag and those fields: two lines.
#[repr(C, align(64))]
struct Local {
    /// This thread's buffer (`None` before its first event in a recording).
    buffer: RefCell<Option<ThreadBuffer>>,
}

thread_local! {
    /// This thread's buffer ([`Local`]). Without a destructor (`ManuallyDrop`): reaching it
    /// is one address, with no state to test on every event and nothing registered on its
    /// first use (a fatal signal's flush may reach it, `take_for_signal`). The buffer is
    /// dropped at the thread's exit by [`RETIRE`]'s destructor, registered when the thread
    /// gets its buffer (`attach`).
    static LOCAL: std::mem::ManuallyDrop<Local> = const {
        std::mem::ManuallyDrop::new(Local { buffer: RefCell::new(None) })
    };
    /// This thread's current `tracing` span, as the bridge keeps it (0: none): the records of
    /// the thread (but span records and `Callsite`s) are preceded by a `SpanCurrent` whenever
    /// it differs from the last one written (docs/FORMAT.md, "Built-in events"). A
    /// thread-local of its own: beside the buffer in `LOCAL` it saved one cache line after a
    /// sweep of the caches, and cost the benchmark's warm loop 8 % (BENCHMARKS.md, the lead's
    /// night run), with no difference an event after a sweep measured in time.
    static SPAN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Drops this thread's buffer (flushing it) when the thread ends ([`Retire`]).
    static RETIRE: Retire = const { Retire };
    /// Set on the writer thread.
    static IS_WRITER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The blocks this thread started ([`block_now`]).
    static BLOCKS_STARTED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The destructor of this thread's buffer, a thread-local of its own: at the thread's exit it
/// drops the buffer, which hands its partial block on (`ThreadBuffer`'s `Drop`). Once it has
/// run, the thread gets no buffer again (`attach` finds it gone): what the thread records
/// later in its exit (another thread-local's destructor) is counted as lost.
struct Retire;

impl Drop for Retire {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|local| {
            let cell = &local.buffer;
            // Dropped while borrowed: an event recorded by the drop itself is counted as
            // lost, never written into the buffer being dropped.
            if let Ok(mut slot) = cell.try_borrow_mut() {
                *slot = None;
            }
        });
    }
}

/// Makes `span` this thread's current `tracing` span (0: none) and returns the one before:
/// the thread's next record that belongs to a span (not a span record) is preceded by a
/// `SpanCurrent` when it differs from the last one written. What the bridge calls on each
/// entry and exit of a span.
#[cfg(feature = "tracing")]
#[inline]
pub(crate) fn set_current_span(span: u64) -> u64 {
    SPAN.try_with(|s| s.replace(span)).unwrap_or(0)
}

/// This thread's current `tracing` span (0: none).
#[inline]
pub(crate) fn current_span() -> u64 {
    SPAN.try_with(std::cell::Cell::get).unwrap_or(0)
}

/// The block this thread writes its records into now, told apart from every other block it
/// started: a count of the blocks it started ([`ThreadBuffer::start_block`]), in any
/// recording. A record written after this call is in this block unless the block changed
/// meanwhile, which the next call tells: what the bridge needs to define a callsite in every
/// block that names it (`tracing_bridge`, docs/FORMAT.md, "Callsites"). One load.
#[cfg(feature = "tracing")]
#[inline]
pub(crate) fn block_now() -> u64 {
    BLOCKS_STARTED.try_with(std::cell::Cell::get).unwrap_or(0)
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
        // A ring file cut short under its mapping (`busguard`) is lost: its slot table reads
        // as zeros (every slot free), so a slot claimed then is let go, and the thread records
        // on the heap as without a ring file.
        let claimed = shared.ring_file.as_ref().filter(|f| !f.is_lost()).map(|f| f.claim(thread));
        let (home, ring_blocks) = if let Some(claimed) = claimed
            && shared.ring_file.as_ref().is_some_and(|f| !f.is_lost())
        {
            match claimed {
                Some(slot) => {
                    let blocks = u64::from(slot.blocks());
                    (Home::File(slot), blocks)
                }
                None => {
                    slotless = true;
                    (Home::Nowhere, 1)
                }
            }
        } else if let Some(rings) = shared.heap_rings.as_ref().and_then(crate::emit::session::HeapRingsCell::get) {
            let blocks = u64::from(rings.lock().blocks());
            let lane = Arc::new(Lane::ring(thread, Arc::clone(rings)));
            if shared.add_lane(&lane) {
                (Home::Lane(LaneWriter::new(lane)), blocks)
            } else {
                slotless = true;
                (Home::Nowhere, 1)
            }
        } else {
            let lane = Arc::new(Lane::new(thread, 1, block_size, false));
            // The writer thread's own block does not come from the pool it empties, and its
            // lane is not the stop's to take: it flushes itself before the stop writes.
            if direct || shared.add_lane(&lane) {
                let mut writer = LaneWriter::new(lane);
                let block = if direct {
                    Some(vec![0u8; block_size].into_boxed_slice())
                } else {
                    shared.exchange.take(shared.wait)
                };
                if let (Some(block), Ok(mut guard)) = (block, writer.lock()) {
                    // A new pool lane holds no block: `install` cannot refuse it.
                    let _ = guard.install(block);
                }
                (Home::Lane(writer), 1)
            } else {
                slotless = true;
                (Home::Nowhere, 1)
            }
        };
        let mut copy = None;
        // The writer thread's own slot is not the stop's to take (as its lane): its exit
        // flush writes its last block to the sinks itself before the stop writes.
        if let Home::File(slot) = &home
            && shared.streams_copies()
            && !direct
        {
            let copier = Arc::new(slot.copier());
            if shared.add_slot_copy(&copier) {
                copy = Some(copier);
            } else {
                // The stop has taken the slots: this thread records nothing.
                slotless = true;
            }
        }
        let home = if slotless { Home::Nowhere } else { home };
        let now = shared.time.now();
        let mut buffer = ThreadBuffer {
            copy,
            set: std::ptr::null(),
            first: 0,
            state: if shared.time.is_tsc() { TSC } else { 0 },
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
            max_record: (block_size - BLOCK_HEADER_LEN).min(MAX_RECORD_LEN),
            waited: false,
            direct,
            slotless,
            end: BLOCK_HEADER_LEN,
            base_time: now,
            time: now,
            post: None,
            span_written: 0,
            span_marks: false,
            post_from: 0,
            post_held: Vec::new(),
        };
        if buffer.has_block() {
            buffer.start_block(now);
        }
        let current = std::thread::current();
        let name = current.name().map_or_else(|| format!("thread-{thread}"), str::to_owned);
        // Kept for the segments to come, which name the threads whose blocks they hold
        // (`Sinks::write_block`), and for snapshots, whose rings may no longer hold this event.
        crate::locks::lock(&buffer.shared.writer.names).push((thread, name.clone(), false));
        buffer.shared.writer.names_added.fetch_add(1, Ordering::Release);
        let strs = [Text::new(&name)];
        buffer.write(builtin::THREAD_NAME, builtin::THREAD_NAME_FIXED, &strs, |w| body::thread_name(w, thread));
        buffer
    }

    /// Whether there is a current block to write into.
    #[inline(always)]
    fn writable(&self) -> bool {
        self.state & WRITABLE != 0
    }

    /// There is (`true`) or is no longer a current block to write into.
    #[inline(always)]
    fn set_writable(&mut self, writable: bool) {
        self.state = if writable { self.state | WRITABLE } else { self.state & !WRITABLE };
    }

    /// Whether the home holds a block to write into (a pool lane may hold none).
    fn has_block(&mut self) -> bool {
        match &mut self.home {
            Home::Lane(writer) => writer.has_memory(),
            Home::File(_) => true,
            Home::Nowhere => false,
        }
    }

    /// `len` bytes at `at` of the current block, above its committed end, to write a record
    /// into; `None` when there is no such room.
    #[inline(always)]
    fn tail(&mut self, at: usize, len: usize) -> Option<&mut [u8]> {
        match &mut self.home {
            Home::Lane(writer) => writer.record_mut(at, len),
            Home::File(slot) => slot.record_mut(at, len),
            Home::Nowhere => None,
        }
    }

    /// Whether the home is a pool lane (one block at a time from the exchange).
    fn is_pool(&self) -> bool {
        matches!(self.home, Home::Lane(_)) && self.ring_blocks == 1
    }

    /// The stop took this thread's lane, with `records` of the current block and `refused`
    /// refusals: what the thread recorded or refused since is counted as lost, and the
    /// thread records nothing more in this recording.
    #[cold]
    fn lane_taken(&mut self, (records, refused): (u64, u64)) {
        let late = self.records.saturating_sub(records) + self.lost.saturating_sub(refused);
        session::count_lost_unattributed(late);
        self.lost = 0;
        self.set_writable(false);
        self.slotless = true;
        self.home = Home::Nowhere;
    }

    /// Appends a record; hands the block on and starts another when it does not fit.
    #[inline]
    fn write(&mut self, code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) {
        let mut len = RECORD_HEADER_LEN + fixed;
        let mut longest = 0;
        for s in strs {
            len += 2 + s.bytes.len();
            longest = longest.max(s.bytes.len());
        }
        if strs.is_empty() {
            // Nothing to cut: no valid schema has fixed arguments longer than a minimal
            // block. Decided here so that an event without strings never passes its
            // arguments to the cold path (they would live on the stack). Its length is
            // known where it is compiled, so this test is too; the block's own limit
            // (`max_record`) is `make_room`'s: a record longer than it never fits behind
            // the block's end, and so always gets there.
            if len > MAX_RECORD_LEN {
                return self.refuse();
            }
        } else if len > self.max_record || longest > STRING_MAX {
            return self.write_cut(code, fixed, strs, fill);
        }
        let now = if self.state == WRITABLE | TSC {
            self.shared.time.now_with(true)
        } else if self.writable() {
            self.shared.time.now_with(false)
        } else {
            match self.resume() {
                Some(now) => now,
                None => return self.refuse(),
            }
        };
        // The thread's current `tracing` span changed since the last `SpanCurrent`: one
        // before this record, unless it takes none (`takes_no_mark`: a span record or a
        // `Callsite`; cold; one load and a compare here).
        let span = SPAN.with(std::cell::Cell::get);
        if span != self.span_written {
            self.mark_span(now, span, code, len);
        }
        self.put(now, code, len, strs, fill);
    }

    /// Writes a record of `len` bytes at `now` (the hot path's second half, after the
    /// clock): its header, its arguments by `fill`, its commit; the next block or a
    /// `TimeExtend` first when it needs one.
    #[inline(always)]
    fn put(&mut self, now: u64, code: u16, len: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) {
        let mut delta = now.wrapping_sub(self.time);
        // One test on the hot path: a delta that fits the record's 32 bits, and room for the
        // record. Anything else is `make_room`'s.
        if now < self.time || delta > u64::from(u32::MAX) || self.end + len > self.block_size {
            match self.make_room_marked(now, code, len) {
                Some(d) => delta = d,
                None => return self.refuse(),
            }
        }
        let (at, records) = (self.end, self.records + 1);
        // The record written, and the buffer's own fields stored, before the commit: stored
        // after it, the same instructions took 17.1 ns an event against 14.9 (emit_probe's
        // `steady` under `ring`, thread CPU time, interleaved runs on the 2-core Intel VM).
        let put = |record: &mut [u8]| {
            // len <= MAX_RECORD_LEN = u16::MAX (checked above).
            put_record_header(Order::NATIVE, record, 0, code, len as u16, delta as u32);
            let mut args = ArgWriter::new(Order::NATIVE, &mut record[RECORD_HEADER_LEN..], strs);
            fill(&mut args);
            debug_assert_eq!(args.written(), len - RECORD_HEADER_LEN, "the fill wrote what the length says");
            self.end = at + len;
            self.time = now;
            self.records = records;
        };
        // The room for the record and its commit (one release store, which makes the record
        // visible to the stop, for a lane, or to ring-file readers, for a slot) under one
        // match of the home, not one for each.
        let written = match &mut self.home {
            Home::Lane(writer) => match writer.record_mut(at, len) {
                Some(record) => {
                    put(record);
                    writer.commit(at + len, records);
                    true
                }
                None => false,
            },
            Home::File(slot) => match slot.record_mut(at, len) {
                Some(record) => {
                    put(record);
                    slot.commit_end(at + len);
                    true
                }
                None => false,
            },
            Home::Nowhere => false,
        };
        if !written {
            self.refuse();
        }
    }

    /// Writes a `SpanCurrent(span)` at `now`, before a record of code `code` and `len` bytes,
    /// with room for both in one block: the record is never separated from the mark that
    /// names its span by a block boundary (docs/FORMAT.md, "Built-in events"). None before a
    /// record that takes none ([`takes_no_mark`]: a span record, which names its span itself,
    /// or a `Callsite`; format 2.1.2): the thread's next other record gets the mark.
    #[cold]
    #[inline(never)]
    fn mark_span(&mut self, now: u64, span: u64, code: u16, len: usize) {
        if takes_no_mark(code) || SPAN_CURRENT_LEN + len > self.max_record {
            // A record that fills a block alone goes without its mark.
            return;
        }
        let delta = now.wrapping_sub(self.time);
        let extend = if now < self.time || delta > u64::from(u32::MAX) { TIME_EXTEND_LEN } else { 0 };
        // Not both in this block (with the `TimeExtend` the mark may need): the next one,
        // which starts at `now` with `SPAN_UNKNOWN`, which this mark replaces.
        if (now < self.base_time || self.end + extend + SPAN_CURRENT_LEN + len > self.block_size)
            && self.make_room(now, SPAN_CURRENT_LEN + len).is_none()
        {
            return;
        }
        self.span_written = span;
        self.span_marks = true;
        self.put(now, builtin::SPAN_CURRENT, SPAN_CURRENT_LEN, &[], |w| body::span_current(w, span));
    }

    /// [`make_room`](Self::make_room) for a record of code `code` about to be written: when
    /// the record opens a block of a thread that names spans, the block's `SpanCurrent` goes
    /// before it ([`mark_span`](Self::mark_span), which writes none before a span record):
    /// each block of such a thread names its span before its first record that belongs to
    /// one, so that a block read alone (a ring's, a segment's) knows it (docs/FORMAT.md,
    /// "Built-in events"). Before, a record that filled a block opened the next unmarked,
    /// and its span was known only from the blocks before. Returns the record's delta.
    #[cold]
    #[inline(never)]
    fn make_room_marked(&mut self, now: u64, code: u16, len: usize) -> Option<u64> {
        let delta = self.make_room(now, len)?;
        // A block just started by a thread that names spans has `SPAN_UNKNOWN` as its mark.
        if self.span_written != SPAN_UNKNOWN || code == builtin::SPAN_CURRENT {
            return Some(delta);
        }
        let span = SPAN.with(std::cell::Cell::get);
        self.mark_span(now, span, code, len);
        // The mark, when written, is the record's predecessor at `now`.
        Some(now.wrapping_sub(self.time))
    }

    /// Makes room for a record of `len` bytes at `now` in the current block: the next block
    /// when this one is full, or a `TimeExtend` record when the delta does not fit.
    /// Returns the record's delta; `None` when it must be refused.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self, now: u64, len: usize) -> Option<u64> {
        if len > self.max_record {
            // A record without strings that no block holds (`write`): refused, no block
            // handed on for it.
            return None;
        }
        let delta = now.wrapping_sub(self.time);
        let extend = if now < self.time || delta > u64::from(u32::MAX) { TIME_EXTEND_LEN } else { 0 };
        // A time before the block's start (the thread's clock stepped back past it: a thread
        // moved to a core whose counter is behind) starts a new block at it, as a full block
        // does: no record of a block is earlier than its `base_time`, which readers take as
        // the earliest time the block holds (docs/FORMAT.md, "Writing times").
        if now < self.base_time || self.end + extend + len > self.block_size {
            // Twice at most: a fresh block may open with a `Dropped` record.
            for _ in 0..2 {
                if !self.hand_on(now) {
                    return None;
                }
                if self.end + len <= self.block_size {
                    break;
                }
            }
            return Some(0);
        }
        if extend > 0 {
            let at = self.end;
            // `writable` means a current block; were it missing, the event is refused, not a panic.
            let record = self.tail(at, TIME_EXTEND_LEN)?;
            put_record_header(Order::NATIVE, record, 0, builtin::TIME_EXTEND, TIME_EXTEND_LEN as u16, 0);
            let args = &mut record[RECORD_HEADER_LEN..];
            body::time_extend(&mut ArgWriter::new(Order::NATIVE, args, &[]), now);
            self.end += TIME_EXTEND_LEN;
            return Some(0);
        }
        Some(delta)
    }

    /// The slow path for records with strings too long for [`STRING_MAX`] or the block.
    #[cold]
    fn write_cut(&mut self, code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) {
        let mut cut = strs.to_vec();
        let max = self.max_record;
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

    /// A diverted record was written (or refused): counts it as a `post=N` event, and when it
    /// is a pinned event's, copies it into the pin ring (and the ring file's pin area); when
    /// it is a trigger's, decodes it and asks its trigger (`trigger`'s module docs, "Cost").
    /// Cold: only watched events (and those that share their bit in the divert word) and the
    /// `post` window get here.
    #[cold]
    #[inline(never)]
    fn watched(&mut self, code: u16, fixed: usize, strs: &[Text<'_>]) {
        if self.shared.aggregates.as_ref().is_some_and(|a| a.measures(code)) {
            self.measure(code, fixed, strs);
        }
        let Some(triggers) = &self.shared.incidents.triggers else { return };
        if self.post.is_none() && !triggers.watches(code) {
            return; // an event that shares a watched one's bit
        }
        let shared = Arc::clone(&self.shared);
        let Some(triggers) = &shared.incidents.triggers else { return };
        if let Some((id, left)) = self.post {
            if left.get() <= 1 {
                self.post = None;
                let held = self.end_post_window();
                triggers.counted(id, self.time, held);
                crate::emit::divert::post_window(self.generation, false);
            } else {
                self.post = std::num::NonZeroU64::new(left.get() - 1).map(|left| (id, left));
                self.hold_post_blocks();
            }
        }
        let (pinned, trigger) = (triggers.is_pinned(code), triggers.is_trigger(code));
        if !pinned && !trigger {
            return;
        }
        // The record just written is the current block's last (none when it was refused).
        let len = RECORD_HEADER_LEN + fixed + strs.iter().map(|s| 2 + s.bytes.len()).sum::<usize>();
        let Some((bytes, time)) = self.last_record(code, len) else { return };
        if pinned {
            let thread = self.thread;
            let name = || thread_name_record(&shared, thread);
            let thread_name =
                || crate::locks::lock(&shared.writer.names).iter().find(|e| e.0 == thread).map(|e| e.1.clone());
            // The number its block will be written with: a pool lane's idle flushes may have
            // moved it on from this buffer's (`Lane::flush_idle`).
            let sequence = match &mut self.home {
                Home::Lane(writer) if !writer.is_ring() => writer.lock().map_or(self.sequence, |g| g.sequence()),
                _ => self.sequence,
            };
            let pin = crate::incident::trigger::Pinned { sequence, thread, time, record: bytes.clone() };
            triggers.pin(pin, shared.ring_file.as_deref(), name, thread_name);
            if !trigger {
                return;
            }
        }
        let Some(Ok(mut record)) = RecordIter::new(&bytes, Order::NATIVE, 0).next() else { return };
        record.time = time;
        let event_format::decode::Entry::Event(event) = shared.catalog.entry(record, self.thread, Order::NATIVE) else {
            return;
        };
        if let Some(admitted) = triggers.on_event(&event, &shared.clock) {
            // The trigger holds itself: under `ring` this thread copies its own ring now, back
            // to the ring's capacity and up to the trigger event, before it can overwrite any
            // of it (docs/guide/keeping-the-incident.md, "A trigger holds itself").
            let trigger_block = self.sequence;
            // With `pre=`, only the blocks that may hold its window: the copy is the cost.
            let from = match admitted.pre() {
                Some(pre) if !shared.streaming => {
                    let ticks = (pre.as_nanos() * u128::from(shared.clock.ticks_per_second) / 1_000_000_000) as u64;
                    let since = time.saturating_sub(ticks);
                    match &self.home {
                        Home::Lane(writer) if writer.is_ring() => writer.first_since(since),
                        Home::File(slot) => slot.first_since(since, self.sequence),
                        _ => 0,
                    }
                }
                _ => 0,
            };
            let held = self.own_ring(from, u64::MAX);
            let post = admitted.post_events();
            let tps = shared.clock.ticks_per_second;
            let id = triggers.push_admitted(admitted, held, tps, || shared.exchange.wake_writer());
            if let Some(n) = post.and_then(std::num::NonZeroU64::new) {
                // A trigger while counting another's post window: the older one is taken now
                // (with what this thread recorded since its trigger), and this thread's
                // window goes on.
                let older = self.post.take().map(|(older, _)| (older, self.end_post_window()));
                self.post = Some((id, n));
                self.post_from = trigger_block;
                match older {
                    Some((older, held)) => triggers.counted(older, self.time, held),
                    None => crate::emit::divert::post_window(self.generation, true),
                }
            }
        }
    }

    /// A kept event that a histogram counts: its record, just written, read back and
    /// counted (`Aggregates::measure_kept`); nothing when it was refused.
    fn measure(&mut self, code: u16, fixed: usize, strs: &[Text<'_>]) {
        let len = RECORD_HEADER_LEN + fixed + strs.iter().map(|s| 2 + s.bytes.len()).sum::<usize>();
        if let Some((bytes, time)) = self.last_record(code, len)
            && let Some(agg) = &self.shared.aggregates
        {
            agg.measure_kept(&self.shared.catalog, self.generation, self.thread, &bytes, time);
        }
    }

    /// The recording's shared state.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The recording's generation.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// This thread's id in the recording.
    pub(crate) fn thread(&self) -> u64 {
        self.thread
    }

    /// Writes this thread's `Suppressed` record for wire code `code`; `false` when it was
    /// refused (no room), and the caller keeps the count.
    pub(crate) fn write_suppressed(&mut self, code: u16, count: u64, window: u64) -> bool {
        let thread = self.thread;
        self.write_checked(builtin::SUPPRESSED, builtin::SUPPRESSED_FIXED, &[], |w| {
            body::suppressed(w, thread, code, count, window)
        })
    }

    /// Writes a record as [`write`](Self::write) does; `false` when it was refused.
    fn write_checked(
        &mut self,
        code: u16,
        fixed: usize,
        strs: &[Text<'_>],
        fill: impl FnOnce(&mut ArgWriter<'_>),
    ) -> bool {
        let refused = self.refused;
        self.write(code, fixed, strs, fill);
        !self.slotless && self.refused == refused
    }

    /// While this thread counts a `post=N` window under `ring`: copies each block it
    /// finished since the last look (from `post_from`), so that a window longer than its
    /// ring is held whole. Every event of the window comes here (the divert word is all
    /// ones), so a block is copied just after it is finished, before the ring can reuse it.
    fn hold_post_blocks(&mut self) {
        if self.sequence > self.post_from {
            let (from, until) = (self.post_from, self.sequence - 1);
            let finished = self.own_ring(from, until);
            self.post_held.extend(finished);
            self.post_from = self.sequence;
        }
    }

    /// The end of a `post=N` window (its N events recorded, a newer trigger's window began,
    /// or the thread ends): the blocks held during it and the rest, up to the last event.
    fn end_post_window(&mut self) -> Vec<Box<[u8]>> {
        self.hold_post_blocks();
        let mut held = std::mem::take(&mut self.post_held);
        held.extend(self.own_ring(self.post_from, u64::MAX));
        held
    }

    /// Under `ring` (the recording keeps its events in rings, not a stream): a copy of this
    /// thread's own ring's blocks `from ..= until` (as far as the ring still holds them),
    /// oldest first, each block finished (its `used` set, the current one's at its committed
    /// end), unsealed; on the thread's own cold path, so that nothing it records meanwhile can
    /// overwrite what is copied. Empty when the recording streams (every block goes to the
    /// sinks, where the snapshot finds it) or the thread has no ring.
    fn own_ring(&mut self, from: u64, until: u64) -> Vec<Box<[u8]>> {
        if self.shared.streaming || !self.writable() || from > until {
            return Vec::new();
        }
        let (end, sequence) = (self.end, self.sequence);
        match &mut self.home {
            Home::Lane(writer) if writer.is_ring() => writer.copy_ring(from, until),
            Home::File(slot) => slot.copy_ring(from, until, sequence, end),
            _ => Vec::new(),
        }
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
        match &self.home {
            Home::File(slot) if self.shared.policy == Policy::Fill => slot.set_refused(self.refused),
            Home::Lane(writer) => writer.set_refused(self.lost),
            _ => {}
        }
    }

    /// Tries to get a block again after refusing events.
    #[cold]
    /// Returns the event's time when it got one, `None` when the event is refused.
    fn resume(&mut self) -> Option<u64> {
        // First the test that refuses most events while the pool is dry: a refusal episode
        // that has waited once tries again only when the pool may have a block. Such a
        // refusal reads no clock, but for the deterministic one (tests), which counts its
        // readings: one per event, refused or not, as always.
        if self.waited && !self.shared.exchange.may_have_free() {
            if let TimeSource::Deterministic { .. } = self.shared.time {
                self.shared.time.now();
            }
            return None;
        }
        let now = self.shared.time.now();
        if self.slotless || !self.is_pool() {
            // A ring that `fill` filled stays full.
            return None;
        }
        let wait = if self.waited { Duration::ZERO } else { self.shared.wait };
        self.waited = true;
        if wait.is_zero() && !self.shared.exchange.may_have_free() {
            return None;
        }
        let block = self.shared.exchange.take(wait)?;
        self.install(block, now).then_some(now)
    }

    /// Puts a block from the pool into this thread's (empty) pool lane and starts it; `false`
    /// when the stop took the lane meanwhile (the block is let go: the pool is closed).
    fn install(&mut self, block: BlockBuf, now: u64) -> bool {
        let Home::Lane(writer) = &mut self.home else { return false };
        let taken = match writer.lock() {
            Ok(mut guard) => {
                // The lane holds no block here (it was handed on, or never had one).
                let _ = guard.install(block);
                None
            }
            Err(taken) => Some(taken),
        };
        if let Some(taken) = taken {
            self.lane_taken(taken);
            return false;
        }
        self.start_block(now);
        self.writable()
    }

    /// Starts the current block at `now`: its header, and a `Dropped` record when events
    /// were refused since the last one.
    fn start_block(&mut self, now: u64) {
        let _ = BLOCKS_STARTED.try_with(|n| n.set(n.get() + 1));
        if self.span_marks {
            self.span_written = SPAN_UNKNOWN;
        }
        self.index = match &mut self.home {
            // A ring on the heap: the block its pool gives (`ringpool`), before the lane's
            // lock is taken (the pool's lock comes first).
            Home::Lane(writer) if writer.is_ring() => match writer.next_ring_block(self.sequence) {
                Some(index) => index,
                None => return self.set_writable(false),
            },
            // A ring-file slot: the block of the shared data area its file's pool gives, its
            // table entry stored before any byte changes (`ringfile`'s module docs); under
            // `fill`, none once the area is used up.
            Home::File(slot) => match slot.next_block(self.sequence) {
                Some(index) => index as usize,
                None => return self.set_writable(false),
            },
            _ => (self.sequence % self.ring_blocks) as usize,
        };
        self.end = BLOCK_HEADER_LEN;
        self.base_time = now;
        self.time = now;
        self.records = 0;
        self.set_writable(true);
        self.waited = false;
        let header = BlockHeader {
            flags: 0,
            sequence: self.sequence,
            thread: self.thread,
            base_time: now,
            lost: 0,
            used: 0,
            crc: 0,
        };
        let (index, sequence, thread, lost) = (self.index, self.sequence, self.thread, self.lost);
        let opened = match &mut self.home {
            Home::Lane(writer) => match writer.lock() {
                Ok(mut guard) => {
                    guard.start(index, sequence, BLOCK_HEADER_LEN);
                    let opened = guard.block_mut(index).map(|block| open_block(block, &header, thread, lost));
                    if let Some((end, records)) = opened {
                        guard.commit(end, records);
                        guard.set_refused(0);
                    }
                    Ok(opened)
                }
                Err(taken) => Err(taken),
            },
            Home::File(slot) => {
                // Readers learn that this block is being rewritten before any of its bytes
                // change (ringfile's module docs): the release fence keeps the header stores
                // below from becoming visible before the position (free on x86_64).
                slot.start(index as u32, sequence);
                slot.commit_end(BLOCK_HEADER_LEN);
                std::sync::atomic::fence(Ordering::Release);
                let (end, records) = open_block(slot.block_mut(index as u32), &header, thread, lost);
                slot.commit_end(end);
                Ok(Some((end, records)))
            }
            Home::Nowhere => Ok(None),
        };
        match opened {
            Ok(Some((end, records))) => {
                self.end = end;
                self.records = records;
                if records > 0 {
                    self.lost = 0;
                }
            }
            // Every caller has a current block; without one there is nothing to start.
            Ok(None) => self.set_writable(false),
            Err(taken) => self.lane_taken(taken),
        }
    }

    /// Hands the current block on and starts the next. `false` when there is no next block:
    /// the caller refuses the event.
    #[cold]
    fn hand_on(&mut self, now: u64) -> bool {
        if !self.writable() {
            return false;
        }
        if self.end == BLOCK_HEADER_LEN {
            self.start_block(now);
            return self.writable();
        }
        let shared = Arc::clone(&self.shared);
        let (end, index, records, direct) = (self.end, self.index, self.records, self.direct);
        let pool = self.is_pool();
        match &mut self.home {
            Home::Lane(writer) => {
                let handed = match writer.lock() {
                    Err(taken) => Err(taken),
                    Ok(mut guard) => {
                        // The writer's idle flushes gave the block a later number.
                        let sequence = guard.sequence();
                        if let Some(block) = guard.block_mut(index) {
                            finish_block(block, end, false);
                        }
                        // `writable` means a pool block in hand.
                        if pool && let Some(full) = guard.take_block() {
                            if direct {
                                // Cannot fail: the lane's block was taken just above.
                                let _ = guard.install(shared.write_now(full));
                            } else if !shared.exchange.submit(full) {
                                // The recording stopped: the writer is gone.
                                session::count_lost_unattributed(records);
                            }
                        }
                        Ok(sequence)
                    }
                };
                let sequence = match handed {
                    Ok(sequence) => sequence,
                    Err(taken) => {
                        self.lane_taken(taken);
                        return false;
                    }
                };
                self.records = 0;
                self.sequence = sequence + 1;
                if pool && !direct {
                    match shared.exchange.take(shared.wait) {
                        Some(block) => return self.install(block, now),
                        None => {
                            self.set_writable(false);
                            self.waited = true;
                            return false;
                        }
                    }
                }
            }
            Home::File(_) => {
                if !self.finish_file_block() {
                    return false;
                }
                // Under `fill`, once the data area is used up the slot gets no next block
                // (`start_block`): its last block stays, finished, and nothing follows.
                self.sequence += 1;
            }
            Home::Nowhere => {
                self.set_writable(false);
                return false;
            }
        }
        self.start_block(now);
        self.writable()
    }

    /// Finishes (seals) the current ring-file block and, when the stream sinks get copies,
    /// queues its copy, under the `SlotCopy`'s lock: the stop then either takes the block's
    /// committed prefix or finds its copy queued, never neither. `false` when the stop took
    /// the block first (the thread records nothing more: `lane_taken`).
    fn finish_file_block(&mut self) -> bool {
        let (end, index, thread, records, direct, sequence) =
            (self.end, self.index, self.thread, self.records, self.direct, self.sequence);
        let shared = &self.shared;
        let Home::File(slot) = &mut self.home else { return false };
        let Some(copy) = &self.copy else {
            finish_block(slot.block_mut(index as u32), end, true);
            return true;
        };
        let base_time = self.base_time;
        let handed = copy.hand_on(sequence, || {
            let block = slot.block_mut(index as u32);
            let mut end = end;
            if !crate::blocks::ringfile::block_is_intact(block, thread, sequence) {
                // Begun before the ring file was cut short under its mapping: what it held is
                // gone. The stream gets the block all the same (its sequence number stays in
                // line), holding one `Dropped` record that counts every record it had.
                let header = BlockHeader { sequence, thread, base_time, ..BlockHeader::default() };
                end = open_block(block, &header, thread, records).0;
            }
            finish_block(block, end, true);
            shared.copy_to_streams(block, thread, records, direct);
        });
        match handed {
            Ok(()) => true,
            Err(taken) => {
                self.lane_taken(taken);
                false
            }
        }
    }

    /// Hands a partial block on (explicit flush, thread exit). A ring keeps its blocks (the
    /// stop takes a ring lane): only pool blocks move.
    fn flush(&mut self, exiting: bool) {
        if !self.writable() || self.end <= BLOCK_HEADER_LEN {
            return;
        }
        if self.is_pool() {
            if !exiting {
                let now = self.time;
                self.hand_on(now);
                return;
            }
            let (end, records, direct) = (self.end, self.records, self.direct);
            let shared = &self.shared;
            let Home::Lane(writer) = &mut self.home else { return };
            // Submitted under the lane's lock (`LaneWriter::hand_on`): a stop that runs
            // meanwhile either takes the records from the lane or finds them in the exchange.
            let handed = writer.hand_on(
                |block| finish_block(block, end, false),
                |full| {
                    if direct {
                        shared.write_now(full);
                    } else if !shared.exchange.submit(full) {
                        // Only when the stop took the lane first: then `lock` fails before.
                        session::count_lost_unattributed(records);
                    }
                },
            );
            if let Err(taken) = handed {
                return self.lane_taken(taken);
            }
            self.set_writable(false);
            self.records = 0;
        } else if let Home::File(_) = self.home {
            let copies = self.shared.streams_copies();
            if exiting {
                // Sealed, so a reader finds a checked block; the position already covers it.
                if self.finish_file_block() {
                    self.set_writable(false);
                }
            } else if copies {
                let now = self.time;
                self.hand_on(now);
            }
        }
    }

    /// A copy of the current block up to its committed end; `None` without one.
    fn current_block(&mut self) -> Option<Vec<u8>> {
        self.current_bytes(0)
    }

    /// A copy of the current block's bytes from `from` up to its committed end; `None`
    /// without a current block or with `from` past its end.
    fn current_bytes(&mut self, from: usize) -> Option<Vec<u8>> {
        if !self.writable() || from > self.end {
            return None;
        }
        let (end, index) = (self.end, self.index);
        match &mut self.home {
            Home::Lane(writer) => writer.lock().ok()?.block_mut(index).map(|b| b[from..end].to_vec()),
            Home::File(slot) => Some(slot.block_mut(index as u32)[from..end].to_vec()),
            Home::Nowhere => None,
        }
    }

    /// The record just written, of wire code `code` and `len` bytes (as `write` computed it
    /// from the arguments), and its time: read from the block's end, without walking the
    /// block; the block walked only when that is not the record (its strings were cut). `None`
    /// when it was refused.
    fn last_record(&mut self, code: u16, len: usize) -> Option<(Vec<u8>, u64)> {
        let order = Order::NATIVE;
        if let Some(start) = self.end.checked_sub(len).filter(|&s| s >= BLOCK_HEADER_LEN)
            && let Some(bytes) = self.current_bytes(start)
            && bytes.len() >= RECORD_HEADER_LEN
            && order.u16(&bytes) == code
            && usize::from(order.u16(&bytes[2..])) == len
        {
            return Some((bytes, self.time));
        }
        let block = self.current_block()?;
        let record = RecordIter::new(&block[BLOCK_HEADER_LEN..], order, self.base_time).flatten().last()?;
        if record.code != code {
            return None;
        }
        let at = BLOCK_HEADER_LEN + record.offset;
        let len = usize::from(order.u16(&block[at + 2..]));
        Some((block[at..at + len].to_vec(), record.time))
    }

    /// Copies of this thread's latest blocks, oldest first: the previous one of a ring (still
    /// there, finished) and the current one up to its committed end. What the traceback
    /// decodes (`traceback`).
    fn recent_blocks(&mut self) -> Vec<Vec<u8>> {
        let (from, sequence, end, index, writable) =
            (self.sequence.saturating_sub(1), self.sequence, self.end, self.index, self.writable());
        let ring = match &mut self.home {
            // A ring on the heap, or a ring-file slot: its blocks are its pool's, copied under
            // its lock.
            Home::Lane(writer) if writer.is_ring() => writer.copy_ring(from, u64::MAX),
            Home::File(slot) if writable => slot.copy_ring(from, u64::MAX, sequence, end),
            Home::Lane(writer) if writable => {
                // A pool lane: its current block up to its committed end.
                let Ok(mut guard) = writer.lock() else { return Vec::new() };
                return guard.block_mut(index).map(|b| vec![b[..end].to_vec()]).unwrap_or_default();
            }
            _ => return Vec::new(),
        };
        ring.into_iter()
            .map(|b| {
                let used = Order::NATIVE.u32(&b[event_format::raw::BLOCK_USED_AT..]) as usize;
                b[..(BLOCK_HEADER_LEN + used).min(b.len())].to_vec()
            })
            .collect()
    }
}

/// Writes a block's header and, when `lost` events were refused before it, a `Dropped`
/// record; returns the end of its records and their number.
fn open_block(block: &mut [u8], header: &BlockHeader, thread: u64, lost: u64) -> (usize, u64) {
    header.write(Order::NATIVE, block);
    if lost == 0 {
        return (BLOCK_HEADER_LEN, 0);
    }
    let at = BLOCK_HEADER_LEN;
    put_record_header(Order::NATIVE, block, at, builtin::DROPPED, DROPPED_LEN as u16, 0);
    let args = &mut block[at + RECORD_HEADER_LEN..at + DROPPED_LEN];
    body::dropped(&mut ArgWriter::new(Order::NATIVE, args, &[]), thread, lost);
    (at + DROPPED_LEN, 1)
}

/// Closes a block whose records end at `end`: its used length, zeroed padding, and (in a
/// ring file, where readers check it) its CRC.
fn finish_block(block: &mut [u8], end: usize, in_file: bool) {
    block[end..].fill(0);
    let used = (end - BLOCK_HEADER_LEN) as u32;
    if in_file {
        seal_block(Order::NATIVE, block, used);
    } else {
        // The writer (or the stop) computes the CRC, off this thread's path.
        Order::NATIVE.put_u32(&mut block[event_format::raw::BLOCK_USED_AT..], used);
    }
}

/// The length of a `TimeExtend` record, header included.
const TIME_EXTEND_LEN: usize = RECORD_HEADER_LEN + builtin::TIME_EXTEND_FIXED;
/// The length of a `SpanCurrent` record, header included.
const SPAN_CURRENT_LEN: usize = RECORD_HEADER_LEN + builtin::SPAN_CURRENT_FIXED;
/// The length of a `Dropped` record, header included.
const DROPPED_LEN: usize = RECORD_HEADER_LEN + builtin::DROPPED_FIXED;

impl Drop for ThreadBuffer {
    fn drop(&mut self) {
        if self.shared.is_parents() {
            // A child of `fork()` dropping its parent's buffer: the block, the slot and the
            // pool are the parent's, and not ours to finish, hand on or free (`fork`'s module
            // docs). A slot's drop would mark it free in the parent's ring file.
            std::mem::forget(std::mem::replace(&mut self.home, Home::Nowhere));
            return;
        }
        // A thread that ends while it counts `post=N` events: its window ends with it, and
        // the snapshot waits no more.
        if let Some((id, _)) = self.post.take() {
            let held = self.end_post_window();
            if let Some(triggers) = &self.shared.incidents.triggers {
                triggers.counted(id, self.time, held);
            }
            crate::emit::divert::post_window(self.generation, false);
        }
        // Thread exit (or a new recorder): the partial block is handed on, not lost.
        let pool = self.is_pool();
        self.flush(true);
        self.end_losses();
        if let Home::Lane(writer) = &self.home {
            // A ring keeps its blocks for the stop, until other rings need them.
            writer.close_ring();
        }
        // After its last block and report were handed on to the writer (a pool block; a
        // ring-file block is copied by the stop, which may still need the name, as it does
        // a lane the stop took meanwhile): the writer forgets its name once it has written
        // what was handed on before it looked (`writer::thread::forget_ended`).
        if pool && matches!(self.home, Home::Lane(_)) {
            let thread = self.thread;
            if let Some(entry) = crate::locks::lock(&self.shared.writer.names).iter_mut().find(|e| e.0 == thread) {
                entry.2 = true;
            }
        }
    }
}

impl ThreadBuffer {
    /// At the thread's end, after its last block: its refused events reported.
    fn end_losses(&mut self) {
        if self.lost > 0 {
            if let Home::Lane(writer) = &mut self.home {
                // Refused after the last block: the recorder reports them, unless the stop
                // took them with the lane already. Reported under the lane's lock, as the
                // exit flush hands its block on: the stop closes the reports only after it
                // has taken every lane, so the report reaches the stream.
                let (shared, thread, lost) = (&self.shared, self.thread, self.lost);
                let taken = writer.lock().map(|mut guard| {
                    guard.set_refused(0);
                    shared.writer.report_dropped(thread, lost);
                });
                if let Err(taken) = taken {
                    return self.lane_taken(taken);
                }
                self.lost = 0;
                return;
            }
            self.shared.writer.report_dropped(self.thread, std::mem::take(&mut self.lost));
        }
        // A ring lane stays with the recording, for the stop to write.
    }
}

/// Records one event on this thread. `fixed` is the size of the arguments other than
/// strings; `strs` are the string arguments, written by [`ArgWriter::str`] in `fill`.
#[inline]
pub(crate) fn emit(code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) {
    emit_as(&LINE, Code::Wire(code), fixed, strs, fill, Watch::WhileCounting)
}

/// Records event `index` (its position in `set`) with its arguments: its wire code is the
/// first of the range that the buffer's recording gave `set`, plus `index`
/// (docs/EVENT-SETS.md, decision 1). A set that the recording does not hold has the event
/// refused and counted.
#[inline]
pub(crate) fn emit_event(
    set: &'static EventSet,
    index: u16,
    fixed: usize,
    strs: &[Text<'_>],
    fill: impl FnOnce(&mut ArgWriter<'_>),
) {
    emit_event_at(&LINE, set, index, fixed, strs, fill)
}

/// Records event `index` of `set` as [`emit_event`] does, reading the recorder's generation
/// through `line`, the address of the process-wide words (`line::LINE`) that the set's
/// control bits keep (`__private::Bits`). What the generated code calls.
#[inline]
pub(crate) fn emit_event_at(
    line: &Line,
    set: &'static EventSet,
    index: u16,
    fixed: usize,
    strs: &[Text<'_>],
    fill: impl FnOnce(&mut ArgWriter<'_>),
) {
    emit_as(line, Code::Event(set, index), fixed, strs, fill, Watch::No)
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

/// What a record's writer does after writing it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Watch {
    /// Nothing: an event that the divert word did not divert (`__private::emit_routed`).
    No,
    /// Looks at it (`ThreadBuffer::watched`): a diverted event.
    Yes,
    /// Looks at it while the thread counts `post=N` events: a built-in event (which no
    /// trigger or pin names, and which the divert word does not see).
    WhileCounting,
}

/// Writes the record in `buffer`, or refuses it (counted) when its set is not recorded; then
/// looks at it as `watch` says.
#[inline(always)]
fn write_in(
    buffer: &mut ThreadBuffer,
    code: Code,
    fixed: usize,
    strs: &[Text<'_>],
    fill: impl FnOnce(&mut ArgWriter<'_>),
    watch: Watch,
) {
    match code.wire(buffer) {
        // An event its limit did not keep, let through to be measured only (`aggregate`).
        Some(code) if watch == Watch::Yes && crate::emit::aggregate::unkept_code(code) => {
            let mut fill = Some(fill);
            let shared = Arc::clone(&buffer.shared);
            let Some(agg) = &shared.aggregates else { return };
            agg.measure_unkept(
                &shared.catalog,
                &shared.time,
                (buffer.generation, buffer.thread),
                code,
                fixed,
                strs,
                &mut |w| {
                    if let Some(fill) = fill.take() {
                        fill(w)
                    }
                },
            );
        }
        Some(code) => {
            buffer.write(code, fixed, strs, fill);
            if watch == Watch::Yes || (watch == Watch::WhileCounting && buffer.post.is_some()) {
                buffer.watched(code, fixed, strs);
            }
        }
        None => buffer.refuse(),
    }
}

/// Records event `index` of `set` as [`emit_event`] does, then looks at it
/// (`ThreadBuffer::watched`): a diverted event (`__private::emit_routed`) that no capture took, a
/// trigger's or a pin's, one that shares its bit in the divert word, or any while a thread
/// counts `post=N` events. Called from `__private`'s cold, out-of-line path only.
#[inline]
pub(crate) fn emit_watched(
    set: &'static EventSet,
    index: u16,
    fixed: usize,
    strs: &[Text<'_>],
    fill: impl FnOnce(&mut ArgWriter<'_>),
) {
    emit_as(&LINE, Code::Event(set, index), fixed, strs, fill, Watch::Yes)
}

/// The `ThreadName` record of `thread` as the recording names it, for the ring file's pin
/// area; `None` when it has no name.
fn thread_name_record(shared: &Shared, thread: u64) -> Option<Vec<u8>> {
    let name = crate::locks::lock(&shared.writer.names).iter().find(|e| e.0 == thread).map(|e| e.1.clone())?;
    let mut strs = [Text::new(&name)];
    let max = (shared.block_size as usize - BLOCK_HEADER_LEN).min(MAX_RECORD_LEN);
    if !fit_texts(&mut strs, RECORD_HEADER_LEN + builtin::THREAD_NAME_FIXED, max) {
        return None;
    }
    let len = RECORD_HEADER_LEN + builtin::THREAD_NAME_FIXED + 2 + strs[0].bytes.len();
    let mut record = vec![0u8; len];
    put_record_header(Order::NATIVE, &mut record, 0, builtin::THREAD_NAME, len as u16, 0);
    body::thread_name(&mut ArgWriter::new(Order::NATIVE, &mut record[RECORD_HEADER_LEN..], &strs), thread);
    Some(record)
}

/// Records a record of `code` in this thread's buffer (attached first when it has none of
/// the running recording, whose generation it reads through `line`), then looks at it as
/// `watch` says.
#[inline]
fn emit_as(
    line: &Line,
    code: Code,
    fixed: usize,
    strs: &[Text<'_>],
    fill: impl FnOnce(&mut ArgWriter<'_>),
    watch: Watch,
) {
    // `LOCAL` has no destructor: always there (`try_with` tests nothing; `with` would not be
    // inlined, for its panic).
    let _ = LOCAL.try_with(|local| {
        let cell = &local.buffer;
        let Ok(mut slot) = cell.try_borrow_mut() else {
            session::count_lost_unattributed(1);
            return;
        };
        let current = session::generation_at(line);
        // The cold path takes neither the code nor the arguments: passed to a function that
        // is not inlined, they would live on the stack on the hot path too. Its test is the
        // buffer's generation first, then whether there is one: a buffer's generation is
        // never 0 (`session`'s first is 1), and no buffer reads as generation 0, so that the
        // hot path is one comparison with the recording's, then one of the buffer's tag.
        let generation = slot.as_ref().map_or(0, |buffer| buffer.generation);
        if (generation != current || slot.is_none()) && !attach(&mut slot, current) {
            // No recording runs, or the thread is exiting and its buffer is gone.
            return session::count_lost_unattributed(1);
        }
        if let Some(buffer) = slot.as_mut() {
            write_in(buffer, code, fixed, strs, fill, watch);
        }
    });
}

/// Records a built-in event on this thread, as [`emit`] does; `false` when it was refused (no
/// room, no recording, or the thread is recording another event now).
pub(crate) fn emit_checked(code: u16, fixed: usize, strs: &[Text<'_>], fill: impl FnOnce(&mut ArgWriter<'_>)) -> bool {
    with_buffer(|buffer| buffer.write_checked(code, fixed, strs, fill)).unwrap_or(false)
}

/// This thread's buffer in the running recording (made on first use), given to `f`; `None`
/// when no recording runs or the thread is recording an event now.
fn with_buffer<R>(f: impl FnOnce(&mut ThreadBuffer) -> R) -> Option<R> {
    LOCAL
        .try_with(|local| {
            let mut slot = local.buffer.try_borrow_mut().ok()?;
            let current = session::generation();
            if slot.as_ref().is_none_or(|buffer| buffer.generation != current) && !attach(&mut slot, current) {
                return None;
            }
            slot.as_mut().map(f)
        })
        .ok()
        .flatten()
}

/// For event `index` of the set whose control bits are `bits`: this thread's buffer and the
/// event's wire code in its recording, given to `f`. `None` when no recording runs, the
/// thread is recording an event now, or the recording does not hold the set.
pub(crate) fn with_event<R>(
    bits: &[std::sync::atomic::AtomicU64],
    index: u16,
    f: impl FnOnce(&mut ThreadBuffer, u16) -> R,
) -> Option<R> {
    with_buffer(|buffer| {
        let first = buffer.shared.sets.iter().find(|(set, _)| set.has_bits(bits)).map(|&(_, first)| first)?;
        Some(f(buffer, first.wrapping_add(index)))
    })
    .flatten()
}

/// Gives this thread a buffer in the recording of `generation` (dropping, and so flushing,
/// one of an older recording first); `false` when no recording runs, or the thread is
/// exiting and its buffer was dropped already ([`Retire`]).
#[cold]
#[inline(never)]
fn attach(slot: &mut Option<ThreadBuffer>, generation: u64) -> bool {
    *slot = None;
    // The buffer's destructor registered (on the first attach), or gone: a buffer made now
    // would never be dropped, nor its block handed on.
    if RETIRE.try_with(|_| ()).is_err() {
        return false;
    }
    // In a child of `fork()`, its own recording starts here, on its first event.
    let found = session::current(generation).map(|shared| (generation, shared)).or_else(session::start_after_fork);
    *slot = found.map(|(generation, shared)| ThreadBuffer::new(shared, generation));
    slot.is_some()
}

/// Hands this thread's partial block on.
pub(crate) fn flush_this_thread() {
    let _ = LOCAL.try_with(|local| {
        if let Ok(mut slot) = local.buffer.try_borrow_mut()
            && let Some(buffer) = slot.as_mut()
            && !buffer.shared.is_parents()
        {
            buffer.flush(false);
        }
    });
}

/// Drops this thread's buffer (flushing it) if it belongs to `generation`.
pub(crate) fn detach_this_thread(generation: u64) {
    let _ = LOCAL.try_with(|local| {
        if let Ok(mut slot) = local.buffer.try_borrow_mut()
            && slot.as_ref().is_some_and(|b| b.generation == generation)
        {
            *slot = None;
        }
    });
}

/// Copies of this thread's latest blocks in the running recording (`recent_blocks`), with
/// the recording's shared state to decode them by; `None` when it has recorded nothing in it
/// or is recording an event now.
pub(crate) fn recent_blocks_of_this_thread() -> Option<(Arc<Shared>, Vec<Vec<u8>>)> {
    LOCAL
        .try_with(|local| {
            let mut slot = local.buffer.try_borrow_mut().ok()?;
            let buffer = slot.as_mut().filter(|b| b.generation == session::generation())?;
            Some((Arc::clone(&buffer.shared), buffer.recent_blocks()))
        })
        .ok()
        .flatten()
}

/// What a fatal signal's flush took from this thread (`crash`): its partial block, finished.
/// The thread holds it no more, so neither the thread nor the stop can write it again.
#[cfg(unix)]
#[derive(Debug)]
pub(crate) enum SignalTake {
    /// Its pool block, out of its lane, with its used length set (the CRC is the writer's).
    Pool(BlockBuf),
    /// Its ring-file block, sealed in place and recorded as copied (`SlotCopy`): `len` bytes
    /// from `at`, in the ring file's mapping, which lives as long as the recording's `Shared`.
    Slot { at: *const u8, len: usize },
}

/// This thread's partial block, finished, for a fatal signal's last write when the stream
/// sinks get it (a pool block, or a ring-file block whose copy they get); the thread records
/// nothing more into it. `None` when it has none, is recording now, or never recorded.
///
/// Async-signal-safe: no allocation, no lock waited for (the lane's and the slot's are tried),
/// and the thread-local reached (`LOCAL`) has no destructor, so that reaching it never
/// registers one (which may allocate).
#[cfg(unix)]
pub(crate) fn take_for_signal() -> Option<SignalTake> {
    LOCAL
        .try_with(|local| {
            let mut slot = local.buffer.try_borrow_mut().ok()?;
            let buffer = slot.as_mut()?;
            if !buffer.writable() || buffer.end <= BLOCK_HEADER_LEN {
                return None;
            }
            let (end, index, sequence) = (buffer.end, buffer.index, buffer.sequence);
            let taken = match &mut buffer.home {
                Home::Lane(writer) if buffer.ring_blocks == 1 => {
                    // Never waits: the interrupted code may hold the lock.
                    let mut guard = writer.try_lock()?;
                    finish_block(guard.block_mut(0)?, end, false);
                    SignalTake::Pool(guard.take_block()?)
                }
                Home::File(slot) => buffer.copy.as_ref()?.take_for_signal(sequence, || {
                    let block = slot.block_mut(index as u32);
                    finish_block(block, end, true);
                    SignalTake::Slot { at: block.as_ptr(), len: block.len() }
                })?,
                _ => return None,
            };
            // The block is gone from the thread: were it to record on, it would start the
            // next one, never this one again.
            buffer.set_writable(false);
            buffer.sequence += 1;
            Some(taken)
        })
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use crate::Recorder;
    use crate::emit::session;
    use crate::event_set::TEST_SET as SET;
    use event_format::decode::{Catalog, Decoder, Entry};
    use event_format::wire::Value;

    /// Every `E` event of a stream: its word and its time, in order.
    fn words(bytes: &[u8]) -> Vec<(u64, u64)> {
        let mut decoder = Decoder::new(bytes).unwrap();
        let catalog = Catalog::new(&decoder.header().sets);
        let mut out = Vec::new();
        while let Some(block) = decoder.next_block() {
            let block = block.unwrap();
            for record in block.records() {
                let record = record.unwrap();
                let time = record.time;
                if let Entry::Event(e) = catalog.entry(record, block.header.thread, block.order)
                    && e.desc.name == "E"
                    && let Some(Value::Word(w)) = e.values().next()
                {
                    out.push((w, time));
                }
            }
        }
        out
    }

    /// A gap too long for a record's 32-bit delta is bridged by a `TimeExtend` record (the
    /// hot path's one test of the time and the room, then `make_room`): the records after it
    /// go behind it, in the same block, at their times.
    #[test]
    fn a_time_extend_keeps_the_times_of_the_records_after_it() {
        let _serial = session::TEST_RECORDING.lock().unwrap_or_else(|p| p.into_inner());
        let recording = Recorder::new().sets(&[&SET]).memory().deterministic_clock().start().unwrap();
        let emit = |i: u64| super::emit_event(&SET, 0, 8, &[], |w| w.word(i));
        const GAP: u64 = 1 << 33;
        std::thread::scope(|s| {
            s.spawn(|| {
                (0..5).for_each(emit);
                session::current(session::generation()).expect("the recording runs").time.set_next(GAP);
                (5..10).for_each(emit);
                crate::flush();
            });
        });
        let events = words(&recording.stop().unwrap());
        assert_eq!(events.iter().map(|e| e.0).collect::<Vec<_>>(), (0..10).collect::<Vec<_>>(), "every event");
        assert!(events[..5].iter().all(|e| e.1 < GAP), "before the gap: {events:?}");
        // The deterministic clock reads once an event, from `GAP` on.
        for (k, e) in events[5..].iter().enumerate() {
            assert_eq!(e.1, GAP + k as u64, "after the gap: {events:?}");
        }
    }

    thread_local! {
        /// Records an event when the thread ends, from a thread-local destructor.
        static AT_EXIT: RecordsAtExit = const { RecordsAtExit };
    }

    struct RecordsAtExit;

    impl Drop for RecordsAtExit {
        fn drop(&mut self) {
            super::emit_event(&SET, 0, 8, &[], |w| w.word(99));
        }
    }

    /// An event recorded by another thread-local's destructor at the thread's exit: recorded
    /// when that destructor runs before the buffer's ([`super::Retire`]), counted as lost
    /// when it runs after; never a panic (which would abort the process in a destructor),
    /// never a buffer made again after the thread's was dropped (whose lane the stop would
    /// take: the second exit's event would be written too).
    #[test]
    fn events_recorded_by_thread_local_destructors_are_recorded_or_counted() {
        let _serial = session::TEST_RECORDING.lock().unwrap_or_else(|p| p.into_inner());
        let recording = Recorder::new().sets(&[&SET]).memory().deterministic_clock().start().unwrap();
        let lost = crate::lost_unattributed();
        // Registered after the buffer's destructor: runs before it (destructors run in the
        // reverse order of their registration), and its event is recorded.
        std::thread::spawn(|| {
            super::emit_event(&SET, 0, 8, &[], |w| w.word(1));
            AT_EXIT.with(|_| ());
        })
        .join()
        .unwrap();
        // Registered before it: runs after, when the thread has no buffer any more.
        std::thread::spawn(|| {
            AT_EXIT.with(|_| ());
            super::emit_event(&SET, 0, 8, &[], |w| w.word(2));
        })
        .join()
        .unwrap();
        let events: Vec<u64> = words(&recording.stop().unwrap()).into_iter().map(|e| e.0).collect();
        // The count is the process's: other tests may add to it, never take from it.
        let counted = crate::lost_unattributed() - lost;
        assert!(events.contains(&1) && events.contains(&2), "the threads' own events: {events:?}");
        assert_eq!(
            events.iter().filter(|&&w| w == 99).count(),
            1,
            "the first exit's event recorded, the second's not: {events:?}"
        );
        assert!(counted >= 1, "the second exit's event counted as lost");
    }

    /// What an enabled event reads of its thread's buffer lies on the thread-local's first
    /// two cache lines: the borrow flag, the buffer's hot fields up to its home's, and the
    /// home's lane writer (its tag, the lane, the block, its end and limit). A field moved
    /// behind them, or the thread-local no longer aligned, fails here. (The span word is a
    /// thread-local of its own: `SPAN`.)
    #[test]
    fn an_events_thread_state_lies_on_two_cache_lines() {
        use super::{Home, LOCAL, Local, ThreadBuffer};
        use crate::blocks::lane::{Lane, LaneWriter};
        use std::mem::{offset_of, size_of};
        assert_eq!(std::mem::align_of::<Local>(), 64);
        let local = LOCAL.with(|local| &**local as *const Local as usize);
        assert_eq!(local % 64, 0, "the thread-local starts a cache line");
        // The buffer in its `RefCell` (whose borrow flag is the rest of the first 16 bytes),
        // its `Option` taking a niche, not a tag in front of it.
        let buffer = LOCAL.with(|local| local.buffer.as_ptr() as usize) - local;
        assert!(buffer <= 16, "the buffer starts at {buffer}");
        assert_eq!(size_of::<Option<ThreadBuffer>>(), size_of::<ThreadBuffer>());
        let home = buffer + offset_of!(ThreadBuffer, home);
        for hot in [
            offset_of!(ThreadBuffer, generation),
            offset_of!(ThreadBuffer, set),
            offset_of!(ThreadBuffer, time),
            offset_of!(ThreadBuffer, end),
            offset_of!(ThreadBuffer, records),
            offset_of!(ThreadBuffer, span_written),
            offset_of!(ThreadBuffer, block_size),
            offset_of!(ThreadBuffer, first),
            offset_of!(ThreadBuffer, state),
        ] {
            assert!(buffer + hot < home, "a hot field behind the home");
        }
        // The lane writer's bytes within the home, from a home of its variant.
        let lane = std::sync::Arc::new(Lane::new(1, 1, 4096, false));
        let writer_home = Home::Lane(LaneWriter::new(lane));
        let Home::Lane(writer) = &writer_home else { unreachable!() };
        let at = writer as *const LaneWriter as usize - &writer_home as *const Home as usize;
        let end = home + at + size_of::<LaneWriter>();
        assert!(end <= 128, "the lane writer ends at byte {end} of the thread-local");
        // The home's tag (the `Option`'s niche too, which the hot path tests) in front of its
        // writer, on the same line.
        assert!(at > 0, "the home's tag is in front of its writer");
    }
}
