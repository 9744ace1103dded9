//! The heap lanes: a thread's blocks on the heap (its pool block under `switch` and `fill`,
//! its ring under `ring`), shared with the stop by the ring file's commit protocol
//! (`ringfile`'s module docs, "Ordering"), so that the stop takes what every thread
//! committed without its help ([`Lane`]).
//!
//! This is one of the crate's modules with `unsafe` code (the crate root's docs, "Unsafe
//! code", name them): a lane's blocks are reached through raw pointers, by the owning thread
//! above the committed end and by the stop below it, never through references that would
//! promise exclusivity to the compiler. The thread buffers (`buffer`) reach them through the
//! safe methods of [`LaneWriter`] and [`LaneGuard`] and hold no `unsafe` code of their own.
#![allow(unsafe_code)]

use std::sync::atomic::Ordering;

/// The length of a `TimeExtend` record, header included: the least an idle flush pads with.
const TIME_EXTEND_LEN: usize = event_format::wire::RECORD_HEADER_LEN + event_format::builtin::TIME_EXTEND_FIXED;

/// A thread's blocks on the heap (its pool block under `switch` and `fill`, its ring under
/// `ring`), shared with the stop so that the stop can take what the thread committed without
/// its cooperation: a thread still running, blocked or never joined loses nothing recorded
/// before the stop.
///
/// The protocol is the ring file's (`ringfile`'s module docs, "Ordering"), over heap memory:
///
/// - The owning thread writes each record's bytes above the committed end of its current
///   block, then stores the committed word (`records << 32 | end`) with release ordering: one
///   plain store per record on x86_64, no lock, no read-modify-write.
/// - Everything else a thread does to its blocks (a block header, a block finished, handed
///   on, replaced, a ring moving to its next block) happens under `state`'s lock, a few times
///   per block.
/// - The stop takes the lock, loads the committed word with acquire ordering (every byte below
///   that end is visible), copies the committed prefix, and marks the lane taken. The memory
///   stays the lane's: the thread may be writing its next record above the committed end at
///   that moment, into bytes the stop does not read, and it never writes below that end
///   again. On its next cold path (a full block, a flush, its exit) it finds the lane taken
///   and counts the records it committed after the take as lost; nothing it writes reaches
///   memory the stop took or freed, since the stop took a copy and freed nothing.
///
/// The memory is freed when the lane is dropped: after both the thread ([`LaneWriter`]) and
/// the recording (its list of lanes) have let go of it.
#[derive(Debug)]
pub(crate) struct Lane {
    state: crate::sync::Mutex<LaneState>,
    /// The current block's committed records: `records << 32 | end`, `end` in
    /// `BLOCK_HEADER_LEN..=block_size`. Stored by the owning thread alone (release); loaded
    /// by the stop under `state`'s lock (acquire).
    committed: crate::sync::AtomicU64,
    /// Bytes per block.
    block_size: usize,
    /// Blocks in the lane: 1 for a pool block, the ring's length for a ring.
    blocks: usize,
    /// The thread that owns it.
    thread: u64,
    /// Events the thread refused since its current block started (a `Dropped` record at the
    /// start of its next block will say so): stored by the thread alone (release), read by
    /// the stop under the lock, which reports them.
    refused: crate::sync::AtomicU64,
    /// For a ring: the recording's heap rings, whose pool hands the ring its blocks
    /// (`ringpool`); the ring's id in the pool is `thread`. `None` for a pool lane.
    rings: Option<std::sync::Arc<HeapRings>>,
}

/// What changes only under the lane's lock.
#[derive(Debug)]
struct LaneState {
    /// `blocks * block_size` bytes from `Box::into_raw`, owned by the lane; null while it
    /// holds no block (a pool lane between blocks, or with the pool dry).
    memory: *mut u8,
    /// The block being written, below `blocks`.
    current: usize,
    /// Its sequence number: the ring's blocks hold sequences `sequence + 1 - blocks ..=
    /// sequence` (those at or above 0).
    sequence: u64,
    /// A ring's block being written (its index in the pool), once its thread started one:
    /// `None` before its first, and for a pool lane.
    ring_block: Option<u32>,
    /// `Some((records, refused))` once the stop took the lane: the current block's committed
    /// records and the refused count at that moment, which the stop has put into the stream.
    /// The thread writes nothing below the committed end from then on, and counts every later
    /// record and refusal as lost.
    taken: Option<(u64, u64)>,
    /// The idle flush (`Lane::flush_idle`): the end of the current block's records already
    /// written to the sinks (0: none), which the block then holds as `TimeExtend` padding.
    /// Reset when a block starts.
    flushed: usize,
    /// The (sequence, committed word) the writer saw at its last idle check: the lane is
    /// idle when it sees the same at the next.
    seen: Option<(u64, u64)>,
}

// SAFETY: `memory` is owned by the lane (it came from `Box::into_raw` and goes back to a
// `Box` only under the lock or in `Drop`); the bytes are reached under the lock, or by the
// one `LaneWriter` above the committed end (`Lane`'s docs).
unsafe impl Send for Lane {}
// SAFETY: as for Send: shared access is through the lock and the atomic committed word.
unsafe impl Sync for Lane {}

/// What the stop took from a lane.
#[derive(Debug)]
pub(crate) struct LaneTake {
    /// A copy of a pool lane's block, the bytes above the committed end zeroed (empty for a
    /// ring, or a lane without a block).
    pub(crate) bytes: Box<[u8]>,
    /// A ring's blocks that hold records, oldest first, each finished (its `used` set, the
    /// current one's at the committed end), unsealed.
    pub(crate) ring: Vec<Box<[u8]>>,
    /// The committed end of the current block.
    pub(crate) end: usize,
    /// The thread that owned the lane.
    pub(crate) thread: u64,
    /// Events it refused that no block of it says so: the stop reports them.
    pub(crate) refused: u64,
}

impl Lane {
    /// A lane of `blocks` zeroed blocks (a ring), or of none (`blocks == 1` and
    /// `with_memory == false`: a pool lane that gets its block from the pool).
    pub(crate) fn new(thread: u64, blocks: usize, block_size: usize, with_memory: bool) -> Lane {
        // Zeroed memory from the allocator: large rings come straight from the OS, whose
        // pages cost nothing until the thread first writes them.
        let memory = if with_memory {
            Box::into_raw(vec![0u8; blocks * block_size].into_boxed_slice()).cast::<u8>()
        } else {
            std::ptr::null_mut()
        };
        Lane {
            state: crate::sync::Mutex::new(LaneState {
                memory,
                current: 0,
                sequence: 0,
                ring_block: None,
                taken: None,
                flushed: 0,
                seen: None,
            }),
            committed: crate::sync::AtomicU64::new(0),
            block_size,
            blocks,
            thread,
            refused: crate::sync::AtomicU64::new(0),
            rings: None,
        }
    }

    /// The ring of `thread` in the recording's heap `rings`: its blocks come from their pool
    /// (`ringpool`), none yet.
    pub(crate) fn ring(thread: u64, rings: std::sync::Arc<HeapRings>) -> Lane {
        // A ring of this id that ended is replaced (ids are never reused within a recording).
        let _ = rings.lock().open(thread);
        let mut lane = Lane::new(thread, 1, rings.block_size, false);
        lane.blocks = rings.lock().blocks() as usize;
        lane.rings = Some(rings);
        lane
    }

    /// Whether this lane is a ring (it stays in the recording's list after its thread ends,
    /// for the stop to write), not a pool block.
    pub(crate) fn is_ring(&self) -> bool {
        self.rings.is_some()
    }

    fn lock(&self) -> crate::sync::MutexGuard<'_, LaneState> {
        // Every update under the lock is complete before it is released.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The stop's take: a copy of every block that holds committed records, and the lane
    /// marked taken. `None` when it was taken already.
    pub(crate) fn take(&self) -> Option<LaneTake> {
        if let Some(rings) = &self.rings {
            // Lock order: the pool's, then the lane's (`copy_ring`).
            let pool = rings.lock();
            let mut s = self.lock();
            if s.taken.is_some() {
                return None;
            }
            // Acquire: as below.
            let word = self.committed.load(Ordering::Acquire);
            let (records, end) = (word >> 32, (word & 0xFFFF_FFFF) as usize);
            let refused = self.refused.load(Ordering::Acquire);
            s.taken = Some((records, refused));
            let ring =
                pool.ring(self.thread).iter().filter_map(|&(seq, b)| self.copy_one(rings, &s, seq, b, end)).collect();
            return Some(LaneTake { bytes: Box::default(), ring, end, thread: self.thread, refused });
        }
        let mut s = self.lock();
        if s.taken.is_some() {
            return None;
        }
        // Acquire: pairs with the writer's release in `LaneWriter::commit`; every byte below
        // `end` is visible.
        let word = self.committed.load(Ordering::Acquire);
        let (records, end) = (word >> 32, (word & 0xFFFF_FFFF) as usize);
        let refused = self.refused.load(Ordering::Acquire);
        s.taken = Some((records, refused));
        let thread = self.thread;
        if s.memory.is_null() {
            let bytes = Box::default();
            return Some(LaneTake { bytes, ring: Vec::new(), end: 0, thread, refused });
        }
        let bs = self.block_size;
        // Blocks that were ever written: all of a ring that went round, else those up to
        // the current one.
        let written = if s.sequence + 1 >= self.blocks as u64 { self.blocks } else { s.current + 1 };
        let mut bytes = vec![0u8; self.blocks * bs].into_boxed_slice();
        for index in 0..written {
            let len = if index == s.current { end.min(bs) } else { bs };
            // SAFETY: `memory` holds `blocks * block_size` bytes (`new`, `install`) and we
            // hold the lock. The blocks other than the current one change only under the
            // lock; the current one's bytes below `end` are committed and never written
            // again by the thread, which writes above `end` only (`LaneWriter::record_mut`).
            let from = unsafe { std::slice::from_raw_parts(s.memory.add(index * bs), len) };
            bytes[index * bs..index * bs + len].copy_from_slice(from);
        }
        Some(LaneTake { bytes, ring: Vec::new(), end, thread, refused })
    }

    /// A snapshot's look at a pool lane (`switch`, `fill`): a copy of its current block up to
    /// its committed end, with its `used` set, unsealed; nothing changes in the lane (as the
    /// idle flush reads it: under the lock, below the committed end). `None` for a ring, a
    /// lane without a block or records, or one the stop took.
    pub(crate) fn peek(&self) -> Option<Box<[u8]>> {
        use event_format::raw::BLOCK_USED_AT;
        use event_format::wire::{BLOCK_HEADER_LEN, Order};
        let s = self.lock();
        if self.rings.is_some() || s.taken.is_some() || s.memory.is_null() {
            return None;
        }
        // Acquire: as the stop's take; every byte below `end` is visible.
        let end = ((self.committed.load(Ordering::Acquire) & 0xFFFF_FFFF) as usize).min(self.block_size);
        if end <= BLOCK_HEADER_LEN {
            return None;
        }
        let mut copy = vec![0u8; self.block_size].into_boxed_slice();
        // SAFETY: `memory` holds one block of `block_size` bytes (a pool lane), we hold the
        // lock, and the bytes below the committed end are never written again by the thread,
        // which writes above it only (`LaneWriter::record_mut`): as in `take`.
        let from = unsafe { std::slice::from_raw_parts(s.memory, end) };
        copy[..end].copy_from_slice(from);
        Order::NATIVE.put_u32(&mut copy[BLOCK_USED_AT..], (end - BLOCK_HEADER_LEN) as u32);
        Some(copy)
    }

    /// A copy of block `block` of the pool, which holds sequence `seq` of this ring, under
    /// the pool's lock and the lane's (`s`): whole and finished when it is behind the block
    /// being written; up to `end`, the committed end (loaded with acquire ordering), with its
    /// `used` set, when it is that block; `None` when it is not started yet (handed to the
    /// ring and not begun), or the current block holds no record.
    fn copy_one(&self, rings: &HeapRings, s: &LaneState, seq: u64, block: u32, end: usize) -> Option<Box<[u8]>> {
        use event_format::raw::BLOCK_USED_AT;
        use event_format::wire::{BLOCK_HEADER_LEN, Order};
        let bs = self.block_size;
        let current = seq == s.sequence && s.ring_block == Some(block);
        if seq > s.sequence || (seq == s.sequence && !current) {
            return None;
        }
        let len = if current { end.min(bs) } else { bs };
        if current && len <= BLOCK_HEADER_LEN {
            return None;
        }
        // SAFETY: the block lies in the region (`block_ptr` asserts its index), and the ring
        // holds it: under the pool's lock no other ring can take it, and under the lane's
        // lock its thread neither starts nor finishes a block. A block behind the current one
        // was finished before the thread moved on and is not written again while the ring
        // holds it; the current one's bytes below the committed end are never written again
        // (`LaneWriter::record_mut` writes above it only).
        let from = unsafe { std::slice::from_raw_parts(rings.block_ptr(block), len) };
        let mut copy = copied(from, bs);
        if current {
            Order::NATIVE.put_u32(&mut copy[BLOCK_USED_AT..], (len - BLOCK_HEADER_LEN) as u32);
        }
        let header = event_format::wire::BlockHeader::read(Order::NATIVE, &copy);
        // Not a block of this ring's writing (never finished): nothing to copy.
        (header.sequence == seq && header.thread == self.thread).then_some(copy)
    }

    /// A copy of a ring lane's blocks of sequence `from ..= until` (`snapshot`, a trigger's
    /// own copy, the traceback), oldest first, each whole and finished (its `used` set; the
    /// current one up to its committed end), unsealed; nothing changes in the lane. Each block
    /// is copied under the pool's lock and the lane's on its own, so that the thread waits at
    /// most for one block's copy on its cold path (it never waits on its hot path, which takes
    /// no lock); between two copies it may move on, and the copy follows it: blocks that left
    /// the ring meanwhile (overwritten, or taken by another ring) are left out (their events
    /// were the oldest, as a ring drops them), and the copy ends at the block that is current
    /// when the copy reaches it. Empty for a pool lane, or one the stop took.
    pub(crate) fn copy_ring(&self, from: u64, until: u64) -> Vec<Box<[u8]>> {
        self.copy_ring_stepped(from, until, || {})
    }

    /// [`copy_ring`](Self::copy_ring), calling `between` after each block's copy, with no
    /// lock held: where a test lets the ring's thread, or another ring, move on.
    fn copy_ring_stepped(&self, from: u64, until: u64, mut between: impl FnMut()) -> Vec<Box<[u8]>> {
        let mut out = Vec::new();
        let Some(rings) = &self.rings else { return out };
        let mut seq = from;
        // Bounded: a thread that keeps moving on is followed for two rings' lengths at most.
        let mut budget = 2 * rings.lock().ring(self.thread).len() + 2;
        while budget > 0 {
            budget -= 1;
            // Lock order: the pool's, then the lane's (as `take`).
            let pool = rings.lock();
            let s = self.lock();
            if s.taken.is_some() {
                break;
            }
            let ring = pool.ring(self.thread);
            let Some(&(oldest, _)) = ring.front() else { break };
            // Blocks that left the ring since the last look (overwritten, or taken by another
            // ring) are skipped, and so are the copies of those before them, which left it
            // too: the copy is consecutive, as the ring is.
            if oldest > seq {
                out.clear();
                seq = oldest;
            }
            let Some(&(_, block)) = ring.iter().find(|&&(sq, _)| sq == seq) else { break };
            if seq > s.sequence || seq > until {
                break;
            }
            // Acquire: pairs with the thread's release in `LaneWriter::commit`; every byte
            // below `end` is visible. Read only for the current block.
            let end = (self.committed.load(Ordering::Acquire) & 0xFFFF_FFFF) as usize;
            let current = seq == s.sequence;
            let copy = self.copy_one(rings, &s, seq, block, end);
            drop(s);
            drop(pool);
            out.extend(copy);
            if current {
                break;
            }
            seq += 1;
            between();
        }
        out
    }

    /// For a ring: the number of its oldest block that may hold an event at `time` or later
    /// (the last that starts before `time`, or the oldest it holds): where a trigger's copy of
    /// its window (`pre=`) starts. 0 for a pool lane.
    pub(crate) fn first_since(&self, time: u64) -> u64 {
        use event_format::wire::{BLOCK_HEADER_LEN, BlockHeader, Order};
        let Some(rings) = &self.rings else { return 0 };
        let pool = rings.lock();
        let s = self.lock();
        let mut first = None;
        for &(seq, block) in pool.ring(self.thread).iter() {
            if seq > s.sequence || (seq == s.sequence && s.ring_block != Some(block)) {
                break;
            }
            // SAFETY: as in `copy_one`: the ring holds the block under the pool's lock, and
            // its header was written under the lane's lock, which we hold.
            let header = unsafe { std::slice::from_raw_parts(rings.block_ptr(block), BLOCK_HEADER_LEN) };
            let header = BlockHeader::read(Order::NATIVE, header);
            if first.is_none() || header.base_time < time {
                first = Some(seq);
            }
        }
        first.unwrap_or(0)
    }

    /// The writer's idle flush of a pool lane (its thread recorded nothing since the writer's
    /// previous call): the current block's committed records not yet flushed, as a block of
    /// their own that `write` gets (sealed, numbered with the current block's sequence), so
    /// that an idle thread's records reach the sinks without waiting for its block to fill.
    /// Returns whether it flushed.
    ///
    /// The thread's bytes are never written while it may write them: as the stop's take does,
    /// this reads only below the committed end, under the lock, and then, still under the
    /// lock, rewrites only what lies below that end (the records just flushed become one
    /// `TimeExtend` record to the time of the last of them, which readers pass over,
    /// docs/FORMAT.md "Delimiting records") and the block's header (its sequence one more, as
    /// the flushed block took this one, its `lost` 0, as the flushed block carries it). The
    /// thread writes below its committed end and the header only under the lock too; it
    /// reads the sequence back at its next cold path (`LaneGuard::sequence`). `write` runs
    /// under the lock, so that the flushed block reaches the sinks before any later block of
    /// the thread can.
    ///
    /// Nothing changes on the thread's hot path. A block whose unflushed records are fewer
    /// than 16 bytes (the smallest `TimeExtend`) at the block's start is left as it is.
    pub(crate) fn flush_idle(&self, write: impl FnOnce(&mut [u8])) -> bool {
        use event_format::builtin::TIME_EXTEND;
        use event_format::raw::{put_record_header, seal_block};
        use event_format::wire::{BLOCK_HEADER_LEN, BlockHeader, Order, RECORD_HEADER_LEN, RecordIter};
        let mut s = self.lock();
        if s.taken.is_some() || s.memory.is_null() || self.blocks != 1 {
            return false;
        }
        // Acquire: as the stop's take; every byte below `end` is visible.
        let word = self.committed.load(Ordering::Acquire);
        let end = (word & 0xFFFF_FFFF) as usize;
        let seen = Some((s.sequence, word));
        let from = s.flushed.max(BLOCK_HEADER_LEN);
        if s.seen != seen || end <= from || end - BLOCK_HEADER_LEN < TIME_EXTEND_LEN {
            // Not idle for a whole period yet, nothing new, or too little to pad.
            s.seen = seen;
            return false;
        }
        s.seen = None;
        let bs = self.block_size;
        // SAFETY: `memory` holds one block of `block_size` bytes (a pool lane), we hold the
        // lock, and `end` is the committed end: the thread writes at or above it only, and
        // below it (and the header) only under the lock.
        let block = unsafe { std::slice::from_raw_parts_mut(s.memory, bs) };
        let header = BlockHeader::read(Order::NATIVE, block);
        // The unflushed records count from the header's base time: the block's start, or,
        // after a flush, the padding's time, which the padding's TimeExtend sets again.
        let start_time = header.base_time;
        let mut records = RecordIter::new(&block[BLOCK_HEADER_LEN..end], Order::NATIVE, start_time);
        for _ in records.by_ref() {}
        let end_time = records.position().1;
        let mut out = vec![0u8; bs];
        BlockHeader { base_time: start_time, used: 0, crc: 0, ..header }.write(Order::NATIVE, &mut out);
        out[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + (end - from)].copy_from_slice(&block[from..end]);
        seal_block(Order::NATIVE, &mut out, (end - from) as u32);
        write(&mut out);
        // The block from here: one more in the sequence, starting at the flushed records' end
        // time, its records so far one TimeExtend (or a few, past 64 KiB) to that time.
        let mut at = BLOCK_HEADER_LEN;
        while at < end {
            let left = end - at;
            let len = if left <= usize::from(u16::MAX) {
                left
            } else if left - usize::from(u16::MAX) >= TIME_EXTEND_LEN {
                usize::from(u16::MAX)
            } else {
                left - TIME_EXTEND_LEN
            };
            put_record_header(Order::NATIVE, block, at, TIME_EXTEND, len as u16, 0);
            block[at + RECORD_HEADER_LEN..at + len].fill(0);
            Order::NATIVE.put_u64(&mut block[at + RECORD_HEADER_LEN..], end_time);
            at += len;
        }
        s.sequence += 1;
        BlockHeader { sequence: s.sequence, base_time: end_time, lost: 0, used: 0, crc: 0, ..header }
            .write(Order::NATIVE, block);
        s.flushed = end;
        true
    }

    /// Whether the stop took this lane.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_taken(&self) -> bool {
        self.lock().taken.is_some()
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        let memory = self.lock().memory;
        if !memory.is_null() {
            // SAFETY: `memory` came from `Box::into_raw` of a boxed slice of this length
            // (`new`, `install`), and nothing else holds the lane now.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(memory, self.blocks * self.block_size)) });
        }
    }
}

/// The rings of a recording under `ring` without a ring file: one region of the heap, the
/// whole buffer, whose blocks its pool (`ringpool::BlockPool`) hands out, reached by the ring lanes ([`Lane`]).
///
/// The region is allocated zeroed at the start and is never written by anything here: the
/// allocator takes a large zeroed region from the operating system, whose pages cost nothing
/// until a thread first writes them, so a budget larger than what is recorded costs only
/// what is used.
#[derive(Debug)]
pub(crate) struct HeapRings {
    /// `blocks * block_size` bytes from `alloc_zeroed`, owned; reached through raw
    /// pointers only (`lane`'s module docs).
    memory: *mut u8,
    pub(crate) block_size: usize,
    pub(crate) pool: crate::sync::Mutex<crate::blocks::ringpool::BlockPool>,
    blocks: usize,
}

// SAFETY: the region is owned here and freed only in `Drop`; its bytes are reached through
// the lanes' protocol ([`Lane`]'s docs): a block by the ring that holds it in the pool,
// under the pool's lock or above its committed end.
unsafe impl Send for HeapRings {}
// SAFETY: as for Send.
unsafe impl Sync for HeapRings {}

impl HeapRings {
    /// A region of `blocks` zeroed blocks of `block_size` bytes; `None` when the allocator
    /// cannot give it (the program goes on: the recorder never aborts its host for memory).
    pub(crate) fn new(blocks: u32, block_size: usize) -> Option<HeapRings> {
        let len = (blocks as usize).checked_mul(block_size).filter(|&len| len > 0)?;
        let layout = std::alloc::Layout::array::<u8>(len).ok()?;
        // Zeroed by the allocator: a large region is the operating system's zeroed pages,
        // which cost nothing until a thread writes them (`vec![0; n]` does the same, but
        // aborts the process when it cannot).
        // SAFETY: the layout's size is not zero (filtered above).
        let memory = unsafe { std::alloc::alloc_zeroed(layout) };
        if memory.is_null() {
            return None;
        }
        let pool = crate::sync::Mutex::new(crate::blocks::ringpool::BlockPool::new(blocks, true));
        Some(HeapRings { memory, block_size, pool, blocks: blocks as usize })
    }

    /// The first byte of block `index`, below the pool's size.
    pub(crate) fn block_ptr(&self, index: u32) -> *mut u8 {
        assert!((index as usize) < self.blocks, "block {index} of a pool of {}", self.blocks);
        // In bounds (asserted); `wrapping_add` keeps this safe code: the pointer is only
        // dereferenced under the lanes' protocol.
        self.memory.wrapping_add(index as usize * self.block_size)
    }

    /// The pool, locked.
    pub(crate) fn lock(&self) -> crate::sync::MutexGuard<'_, crate::blocks::ringpool::BlockPool> {
        // Every update under the lock is complete before it is released.
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for HeapRings {
    fn drop(&mut self) {
        // SAFETY: `memory` came from `alloc_zeroed` of `blocks * block_size` bytes of `u8`
        // (`new`), the layout a boxed slice of that length has, and nothing holds the region
        // now: every lane that reached it held an `Arc` of this.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.memory, self.blocks * self.block_size)) });
    }
}

/// A block of `block_size` bytes that starts with `from` and is zero after it, written once
/// (no zeroing of what `from` covers: a trigger's copy of a ring is memory bandwidth on its
/// thread's cold path).
pub(crate) fn copied(from: &[u8], block_size: usize) -> Box<[u8]> {
    let mut copy = Vec::with_capacity(block_size);
    copy.extend_from_slice(&from[..from.len().min(block_size)]);
    copy.resize(block_size, 0);
    copy.into_boxed_slice()
}

/// The owning thread's handle on its lane: the only writer of its bytes.
#[derive(Debug)]
pub(crate) struct LaneWriter {
    lane: std::sync::Arc<Lane>,
    /// The current block's first byte; valid while the lane holds its memory, which only this
    /// writer replaces. Without a block it is dangling (never null) and `limit` is 0: only an
    /// empty slice can be made from it, which a dangling pointer allows.
    block: std::ptr::NonNull<u8>,
    /// The committed end of the current block: the writer writes at or above it only.
    end: usize,
    /// Where a record must end: `block_size` with a current block, 0 without (so that the
    /// hot path needs one comparison, not a null check too).
    limit: usize,
}

// SAFETY: the writer is one thread's at a time; moving it (a buffer dropped on another thread)
// moves that exclusivity with it.
unsafe impl Send for LaneWriter {}

impl LaneWriter {
    /// The writer of `lane`, which this thread alone writes.
    pub(crate) fn new(lane: std::sync::Arc<Lane>) -> LaneWriter {
        LaneWriter { lane, block: std::ptr::NonNull::dangling(), end: 0, limit: 0 }
    }

    /// Whether the lane holds memory (a pool lane may hold no block; a ring always may).
    pub(crate) fn has_memory(&self) -> bool {
        self.lane.rings.is_some() || !self.lane.lock().memory.is_null()
    }

    /// Whether the lane is a ring.
    pub(crate) fn is_ring(&self) -> bool {
        self.lane.is_ring()
    }

    /// For a ring: the block (its index in the pool) its block `sequence` goes into, from the
    /// pool (`ringpool`; taken under the pool's lock, never with the lane's held); `None`
    /// when the pool can give it none now.
    pub(crate) fn next_ring_block(&self, sequence: u64) -> Option<usize> {
        let rings = self.lane.rings.as_ref()?;
        rings.lock().next(self.lane.thread, sequence).map(|(block, _)| block as usize)
    }

    /// For a ring: its thread ended; its blocks stay for the stop and snapshots until other
    /// rings need them.
    pub(crate) fn close_ring(&self) {
        if let Some(rings) = &self.lane.rings {
            rings.lock().close(self.lane.thread);
        }
    }

    /// The ring's first block that may hold an event at `time` or later (`Lane::first_since`).
    pub(crate) fn first_since(&self, time: u64) -> u64 {
        self.lane.first_since(time)
    }

    /// A copy of the ring's blocks `from ..= until` (`Lane::copy_ring`), on the owning
    /// thread's cold path.
    pub(crate) fn copy_ring(&self, from: u64, until: u64) -> Vec<Box<[u8]>> {
        self.lane.copy_ring(from, until)
    }

    /// `len` bytes at `at` of the current block, to write a record into; `None` without a
    /// block, below the committed end, or past the block's end.
    #[inline(always)]
    pub(crate) fn record_mut(&mut self, at: usize, len: usize) -> Option<&mut [u8]> {
        if at < self.end || at.checked_add(len)? > self.limit {
            return None;
        }
        // SAFETY: with `limit` non-zero, `self.block` is the current block's first byte, and
        // the block holds `limit` (`block_size`) bytes: in bounds, checked above (the add
        // cannot wrap). With `limit` 0 it is dangling and `len` is 0: an empty slice. The
        // stop reads only below the committed end (`self.end`), and `&mut self` keeps this
        // the only slice above it.
        Some(unsafe { std::slice::from_raw_parts_mut(self.block.as_ptr().add(at), len) })
    }

    /// Commits the current block's records up to `end`, `records` of them.
    #[inline(always)]
    pub(crate) fn commit(&mut self, end: usize, records: u64) {
        debug_assert!(end >= self.end && end <= self.lane.block_size, "a commit moves forward within the block");
        self.end = end;
        // Release: the stop, loading this with acquire, sees every byte below `end`.
        self.lane.committed.store(records << 32 | end as u64, Ordering::Release);
    }

    /// Publishes the count of events refused since the current block started, for the stop.
    pub(crate) fn set_refused(&self, refused: u64) {
        // Release: the stop's acquire load under the lock reads the latest the thread stored
        // before the take; a later one is the thread's to count (`lock`'s `Err`).
        self.lane.refused.store(refused, Ordering::Release);
    }

    /// The lane's lock, for the cold paths: `Err((records, refused))` when the stop took the
    /// lane, with the current block's records and the refusals it took.
    pub(crate) fn lock(&mut self) -> Result<LaneGuard<'_>, (u64, u64)> {
        let state = self.lane.lock();
        if let Some(records) = state.taken {
            return Err(records);
        }
        Ok(LaneGuard { state, block: &mut self.block, end: &mut self.end, limit: &mut self.limit, lane: &self.lane })
    }

    /// Finishes the pool block with `finish` and hands it to `submit`, both under the lane's
    /// lock; `Err((records, refused))` when the stop took the lane first (as [`lock`](Self::lock)).
    ///
    /// Under the lock because the stop takes every lane before it closes the exchange: a block
    /// that left the lane is then in the exchange before the stop can find the lane empty, and
    /// the writer still takes it. Taken out and submitted after the lock, the stop could take
    /// the empty lane and close the exchange in between, and the thread's whole block would be
    /// refused at the stop (the loss of a scoped thread whose exit flush ran late).
    pub(crate) fn hand_on(
        &mut self,
        finish: impl FnOnce(&mut [u8]),
        submit: impl FnOnce(Box<[u8]>),
    ) -> Result<(), (u64, u64)> {
        let mut guard = self.lock()?;
        if let Some(block) = guard.block_mut(0) {
            finish(block);
        }
        if let Some(full) = guard.take_block() {
            submit(full);
        }
        Ok(())
    }

    /// The lane's lock without waiting (a fatal signal's handler); `None` when it is held or
    /// the lane was taken.
    pub(crate) fn try_lock(&mut self) -> Option<LaneGuard<'_>> {
        let state = self.lane.state.try_lock().ok()?;
        if state.taken.is_some() {
            return None;
        }
        Some(LaneGuard { state, block: &mut self.block, end: &mut self.end, limit: &mut self.limit, lane: &self.lane })
    }
}

/// The owning thread's access to its lane under the lock: whole blocks, and the moves from
/// one block to the next.
#[derive(Debug)]
pub(crate) struct LaneGuard<'a> {
    state: crate::sync::MutexGuard<'a, LaneState>,
    block: &'a mut std::ptr::NonNull<u8>,
    end: &'a mut usize,
    limit: &'a mut usize,
    lane: &'a Lane,
}

impl LaneGuard<'_> {
    /// Block `index` of the lane, whole; `None` without memory or past the lane. For a ring,
    /// only the block it writes (`index` its place in the pool, as [`start`](Self::start) was
    /// given it): the ring's newest, which no other ring takes.
    pub(crate) fn block_mut(&mut self, index: usize) -> Option<&mut [u8]> {
        if let Some(rings) = &self.lane.rings {
            if self.state.ring_block != Some(index as u32) {
                return None;
            }
            let block = rings.block_ptr(index as u32);
            // SAFETY: the block lies in the region (`block_ptr` asserts it) and is the one
            // this ring writes: no other ring takes a ring's newest block (`ringpool`), and
            // copies of it (the stop, a snapshot) take the lane's lock, which is held.
            return Some(unsafe { std::slice::from_raw_parts_mut(block, self.lane.block_size) });
        }
        if self.state.memory.is_null() || index >= self.lane.blocks {
            return None;
        }
        let bs = self.lane.block_size;
        // SAFETY: in bounds (checked above), and the lock is held: the stop does not read,
        // and the writer's only other slices (`record_mut`) need `&mut` of the writer, which
        // this guard borrows.
        Some(unsafe { std::slice::from_raw_parts_mut(self.state.memory.add(index * bs), bs) })
    }

    /// Makes block `index`, of sequence number `sequence`, the current one, with its records
    /// starting at `end` (its header written), none committed yet.
    pub(crate) fn start(&mut self, index: usize, sequence: u64, end: usize) {
        debug_assert!(index < self.lane.blocks, "block {index} of a lane of {}", self.lane.blocks);
        self.state.current = index;
        self.state.sequence = sequence;
        self.state.flushed = 0;
        self.state.seen = None;
        *self.end = end;
        if let Some(rings) = &self.lane.rings {
            // The block the pool just gave this ring (`LaneWriter::next_ring_block`).
            self.state.ring_block = Some(index as u32);
            let block = std::ptr::NonNull::new(rings.block_ptr(index as u32));
            (*self.block, *self.limit) =
                block.map_or((std::ptr::NonNull::dangling(), 0), |b| (b, self.lane.block_size));
        } else if self.state.memory.is_null() {
            *self.block = std::ptr::NonNull::dangling();
            *self.limit = 0;
        } else {
            // In bounds: `index` is below `blocks`; `wrapping_add` keeps this safe code. A block
            // of the lane's memory is never at address 0.
            let block = std::ptr::NonNull::new(self.state.memory.wrapping_add(index * self.lane.block_size));
            (*self.block, *self.limit) =
                block.map_or((std::ptr::NonNull::dangling(), 0), |b| (b, self.lane.block_size));
        }
        // Release: as `commit`'s; under the lock, so the stop sees it with the rest.
        self.lane.committed.store(end as u64, Ordering::Release);
    }

    /// Commits the current block's records up to `end`, `records` of them (as
    /// `LaneWriter::commit`, for records written under the lock).
    pub(crate) fn commit(&mut self, end: usize, records: u64) {
        *self.end = end;
        // Release: see `LaneWriter::commit`.
        self.lane.committed.store(records << 32 | end as u64, Ordering::Release);
    }

    /// Publishes the refused count (as `LaneWriter::set_refused`).
    pub(crate) fn set_refused(&mut self, refused: u64) {
        self.lane.refused.store(refused, Ordering::Release);
    }

    /// The current block's sequence number: one more than the thread gave it for each idle
    /// flush of the writer (`Lane::flush_idle`) since.
    pub(crate) fn sequence(&self) -> u64 {
        self.state.sequence
    }

    /// Takes the pool block out of the lane (which then holds none).
    pub(crate) fn take_block(&mut self) -> Option<Box<[u8]>> {
        if self.state.memory.is_null() || self.lane.blocks != 1 {
            return None;
        }
        let memory = std::mem::replace(&mut self.state.memory, std::ptr::null_mut());
        *self.block = std::ptr::NonNull::dangling();
        *self.limit = 0;
        *self.end = 0;
        self.lane.committed.store(0, Ordering::Release);
        // SAFETY: `memory` came from `Box::into_raw` of a boxed slice of `block_size` bytes
        // (a pool lane holds one block), and the lane holds it no more.
        Some(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(memory, self.lane.block_size)) })
    }

    /// Puts a pool block into the lane, which holds none; gives it back if it holds one
    /// already or is no pool lane.
    pub(crate) fn install(&mut self, block: Box<[u8]>) -> Result<(), Box<[u8]>> {
        if !self.state.memory.is_null() || self.lane.blocks != 1 || block.len() != self.lane.block_size {
            return Err(block);
        }
        self.state.memory = Box::into_raw(block).cast::<u8>();
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! A lane taken by the stop while its thread writes: run under Miri too, which checks the
    //! raw pointers and that the stop's copy and the thread's next record never overlap.
    use super::*;
    use std::sync::Arc;

    const BS: usize = 256;
    const H: usize = 16;
    const REC: usize = 8;

    /// Writes records `0..n` of `REC` bytes (each byte the record's number) into the lane's
    /// block, committing each; returns how many were written before the writer found its
    /// lane taken at a cold path (a full block), and how many it wrote in all.
    fn write(writer: &mut LaneWriter, n: u64) -> (u64, u64) {
        let mut end = H;
        for i in 0..n {
            if end + REC > BS {
                // The block is full: the cold path, where a take is noticed.
                return match writer.lock() {
                    Err((taken, _)) => (taken, i),
                    Ok(_) => (i, i),
                };
            }
            let record = writer.record_mut(end, REC).expect("room above the committed end");
            record.fill(i as u8 + 1);
            end += REC;
            writer.commit(end, i + 1);
        }
        match writer.lock() {
            Err((taken, _)) => (taken, n),
            Ok(_) => (n, n),
        }
    }

    #[test]
    fn the_stop_takes_what_a_running_thread_committed() {
        for delay in [0, 1, 3, 10] {
            let lane = Arc::new(Lane::new(7, 1, BS, false));
            let mut writer = LaneWriter::new(Arc::clone(&lane));
            writer.lock().unwrap().install(vec![0u8; BS].into_boxed_slice()).unwrap();
            writer.lock().unwrap().start(0, 0, H);
            let thread = std::thread::spawn(move || write(&mut writer, 20));
            for _ in 0..delay {
                std::thread::yield_now();
            }
            let take = lane.take().expect("a lane not taken before");
            let (taken_by_writer, written) = thread.join().unwrap();
            assert!(lane.is_taken() && lane.take().is_none(), "a lane is taken once");
            let records = (take.end - H) / REC;
            assert_eq!(records as u64, taken_by_writer.min(written), "the writer knows what the stop took");
            for i in 0..records {
                let at = H + i * REC;
                assert!(take.bytes[at..at + REC].iter().all(|&b| b == i as u8 + 1), "record {i} whole");
            }
            assert!(take.bytes[take.end..].iter().all(|&b| b == 0), "nothing past the committed end");
            assert_eq!(take.thread, 7);
        }
    }

    #[test]
    fn an_idle_flush_writes_the_committed_records_once_and_the_block_goes_on_numbered_after() {
        use event_format::raw::{BLOCK_USED_AT, put_record_header};
        use event_format::wire::{BLOCK_HEADER_LEN as H, BlockHeader, Order, RecordIter};
        const BS: usize = 512;
        let lane = Arc::new(Lane::new(4, 1, BS, false));
        let mut writer = LaneWriter::new(Arc::clone(&lane));
        writer.lock().unwrap().install(vec![0u8; BS].into_boxed_slice()).unwrap();
        {
            let mut g = writer.lock().unwrap();
            g.start(0, 7, H);
            let header = BlockHeader { thread: 4, sequence: 7, base_time: 100, lost: 3, ..BlockHeader::default() };
            header.write(Order::NATIVE, g.block_mut(0).unwrap());
        }
        let mut end = H;
        let mut record = |writer: &mut LaneWriter, value: u64, n: u64| {
            let r = writer.record_mut(end, 16).unwrap();
            put_record_header(Order::NATIVE, r, 0, 0x0030, 16, 5);
            Order::NATIVE.put_u64(&mut r[8..], value);
            end += 16;
            writer.commit(end, n);
        };
        let mut flushed = Vec::new();
        assert!(!lane.flush_idle(|b| flushed.push(b.to_vec())), "nothing to flush");
        record(&mut writer, 1, 1);
        record(&mut writer, 2, 2);
        // The first look only notes the lane; the second, with nothing new, flushes.
        assert!(!lane.flush_idle(|b| flushed.push(b.to_vec())));
        assert!(lane.flush_idle(|b| flushed.push(b.to_vec())));
        assert!(!lane.flush_idle(|b| flushed.push(b.to_vec())), "nothing new since");
        record(&mut writer, 3, 3);
        assert!(!lane.flush_idle(|b| flushed.push(b.to_vec())));
        assert!(lane.flush_idle(|b| flushed.push(b.to_vec())));
        record(&mut writer, 4, 4);
        // The thread's cold path: the block handed on with the number it has now.
        let mut g = writer.lock().unwrap();
        assert_eq!(g.sequence(), 9, "two flushes took numbers 7 and 8");
        let block = g.block_mut(0).unwrap();
        Order::NATIVE.put_u32(&mut block[BLOCK_USED_AT..], (end - H) as u32);
        let last = g.take_block().unwrap().to_vec();
        drop(g);
        flushed.push(last);
        let mut seen = Vec::new();
        for (n, b) in flushed.iter().enumerate() {
            let header = BlockHeader::read(Order::NATIVE, b);
            assert_eq!((header.thread, header.sequence), (4, 7 + n as u64));
            assert_eq!(header.lost, if n == 0 { 3 } else { 0 }, "the first block carries the losses, once");
            let used = header.used as usize;
            for r in RecordIter::new(&b[H..H + used], Order::NATIVE, header.base_time) {
                let r = r.unwrap();
                seen.push((Order::NATIVE.u64(r.args), r.time));
            }
        }
        // Each record once, at the time it had in the one block: 100 + 5 per record.
        assert_eq!(seen, [(1, 105), (2, 110), (3, 115), (4, 120)]);
    }

    #[test]
    fn a_ring_lane_gives_every_block_it_wrote() {
        // A ring alone in a pool of 4 blocks: it goes round, and the stop takes its last 4.
        const H: usize = event_format::wire::BLOCK_HEADER_LEN;
        let rings = Arc::new(HeapRings::new(4, BS).unwrap());
        let lane = Arc::new(Lane::ring(1, Arc::clone(&rings)));
        let mut writer = LaneWriter::new(Arc::clone(&lane));
        for seq in 0..6u64 {
            let index = writer.next_ring_block(seq).unwrap();
            let mut g = writer.lock().unwrap();
            g.start(index, seq, H);
            let header = event_format::wire::BlockHeader { sequence: seq, thread: 1, ..Default::default() };
            header.write(event_format::wire::Order::NATIVE, g.block_mut(index).unwrap());
            drop(g);
            let r = writer.record_mut(H, REC).unwrap();
            r.fill(0xAA);
            writer.commit(H + REC, 1);
            let mut g = writer.lock().unwrap();
            let used = &mut g.block_mut(index).unwrap()[event_format::raw::BLOCK_USED_AT..];
            event_format::wire::Order::NATIVE.put_u32(used, REC as u32);
        }
        let take = lane.take().unwrap();
        assert_eq!((take.end, take.bytes.len()), (H + REC, 0));
        let seqs: Vec<u64> = take
            .ring
            .iter()
            .map(|b| event_format::wire::BlockHeader::read(event_format::wire::Order::NATIVE, b).sequence)
            .collect();
        assert_eq!(seqs, [2, 3, 4, 5], "blocks 2..=5 are in the ring, oldest first");
        assert!(writer.lock().is_err(), "the thread finds its lane taken");
    }
}

#[cfg(all(test, not(loom)))]
mod copy_tests {
    //! A snapshot's copy of a ring (`Lane::copy_ring`) while its thread writes: run under Miri
    //! too, which checks that the copy reads only bytes the thread no longer writes.
    use super::*;
    use event_format::wire::{BLOCK_HEADER_LEN as H, BlockHeader, Order};
    use std::sync::Arc;

    pub(super) const BS: usize = 96;
    pub(super) const REC: usize = 8;

    /// A ring lane of `thread` in `rings`, and its writer.
    pub(super) fn ring_lane(thread: u64, rings: &Arc<HeapRings>) -> (Arc<Lane>, LaneWriter) {
        let lane = Arc::new(Lane::ring(thread, Arc::clone(rings)));
        let writer = LaneWriter::new(Arc::clone(&lane));
        (lane, writer)
    }

    /// Writes `blocks` blocks of a ring lane of `thread`, each with a real header and as many
    /// 8-byte records as fit, every byte of a record its block's sequence plus one (plus the
    /// thread's number times 64).
    pub(super) fn write_ring(writer: &mut LaneWriter, thread: u64, blocks: u64) {
        for seq in 0..blocks {
            let Some(index) = writer.next_ring_block(seq) else { return };
            let mut g = writer.lock().unwrap();
            g.start(index, seq, H);
            let header = BlockHeader { sequence: seq, thread, ..Default::default() };
            header.write(Order::NATIVE, g.block_mut(index).unwrap());
            drop(g);
            let mut end = H;
            while end + REC <= BS {
                writer.record_mut(end, REC).unwrap().fill(mark(thread, seq));
                end += REC;
                writer.commit(end, ((end - H) / REC) as u64);
            }
            // A finished block says how much it holds (as the thread buffer's `finish_block`).
            let mut g = writer.lock().unwrap();
            Order::NATIVE
                .put_u32(&mut g.block_mut(index).unwrap()[event_format::raw::BLOCK_USED_AT..], (end - H) as u32);
        }
    }

    /// The byte of `thread`'s records in its block `seq`.
    pub(super) fn mark(thread: u64, seq: u64) -> u8 {
        (thread * 64 + seq + 1) as u8
    }

    /// What a copy must be: consecutive blocks of the ring's thread, each holding only whole
    /// records of its own sequence, as many as its `used` says.
    pub(super) fn check_copy(copy: &[Box<[u8]>], thread: u64) {
        let mut last = None;
        for block in copy {
            let header = BlockHeader::read(Order::NATIVE, block);
            assert_eq!(header.thread, thread);
            if let Some(l) = last {
                assert_eq!(header.sequence, l + 1, "consecutive blocks");
            }
            last = Some(header.sequence);
            let used = header.used as usize;
            assert_eq!(used % REC, 0, "whole records");
            assert!(block[H..H + used].iter().all(|&b| b == mark(thread, header.sequence)), "its own records only");
        }
    }

    #[test]
    fn a_copy_of_a_ring_while_its_thread_writes_is_consecutive_and_whole() {
        for delay in [0, 1, 3, 10, 30] {
            let rings = Arc::new(HeapRings::new(4, BS).unwrap());
            let (lane, mut writer) = ring_lane(1, &rings);
            let thread = std::thread::spawn(move || write_ring(&mut writer, 1, 12));
            for _ in 0..delay {
                std::thread::yield_now();
            }
            let copy = lane.copy_ring(0, u64::MAX);
            thread.join().unwrap();
            check_copy(&copy, 1);
            assert!(!lane.is_taken(), "a copy takes nothing");
            // After the thread: the ring's last four blocks, whole.
            let after = lane.copy_ring(0, u64::MAX);
            check_copy(&after, 1);
            let first = BlockHeader::read(Order::NATIVE, &after[0]).sequence;
            assert_eq!((after.len(), first), (4, 8));
        }
    }

    /// Another ring takes the ring's oldest blocks after the copy has copied the first of
    /// them: the copy leaves that one out too, and is consecutive (it held block 0 and then
    /// block 3, a hole in the middle of a snapshot, once in about 150 runs of the test below).
    #[test]
    fn a_copy_leaves_out_its_first_blocks_when_another_ring_takes_them_meanwhile() {
        let rings = Arc::new(HeapRings::new(6, BS).unwrap());
        let (one, mut w1) = ring_lane(1, &rings);
        write_ring(&mut w1, 1, 6);
        let (two, mut w2) = ring_lane(2, &rings);
        let mut copied = 0;
        let copy = one.copy_ring_stepped(0, u64::MAX, || {
            copied += 1;
            if copied == 1 {
                // Ring 2 takes ring 1's three oldest blocks, 0 to 2, as its fair share.
                write_ring(&mut w2, 2, 8);
            }
        });
        check_copy(&copy, 1);
        let sequences: Vec<u64> = copy.iter().map(|b| BlockHeader::read(Order::NATIVE, b).sequence).collect();
        assert_eq!(sequences, [3, 4, 5], "ring 1's blocks from its oldest on");
        check_copy(&two.copy_ring(0, u64::MAX), 2);
    }

    #[test]
    fn a_copy_never_holds_a_block_that_another_ring_took() {
        // Ring 1 fills the pool; ring 2 starts and takes ring 1's oldest blocks while a
        // snapshot copies ring 1: the copy is ring 1's own blocks only, consecutive and whole.
        for delay in [0, 1, 3, 10, 30] {
            let rings = Arc::new(HeapRings::new(6, BS).unwrap());
            let (one, mut w1) = ring_lane(1, &rings);
            write_ring(&mut w1, 1, 6);
            let (two, mut w2) = ring_lane(2, &rings);
            let thread = std::thread::spawn(move || {
                write_ring(&mut w2, 2, 8);
                w2
            });
            for _ in 0..delay {
                std::thread::yield_now();
            }
            let copy = one.copy_ring(0, u64::MAX);
            let _w2 = thread.join().unwrap();
            check_copy(&copy, 1);
            assert_eq!(*copy.last().map(|b| &b[H]).unwrap(), mark(1, 5), "ring 1's current block is always there");
            let after = one.copy_ring(0, u64::MAX);
            check_copy(&after, 1);
            assert_eq!(after.len(), 3, "ring 1 gave up what ring 2's fair share needed");
            check_copy(&two.copy_ring(0, u64::MAX), 2);
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! The lane protocol under loom: the real `Lane` on loom's lock and atomics. Whatever the
    //! interleaving of a thread's records and cold path with the stop's take, every record
    //! committed before the take is in the take, whole, and the thread learns exactly how
    //! many the stop took, so that it counts the rest: taken + counted == written.
    use super::*;
    use loom::thread;
    use std::sync::Arc;

    #[test]
    fn loom_the_stop_takes_every_committed_record_and_the_thread_counts_the_rest() {
        const BS: usize = 64;
        const H: usize = 16;
        loom::model(|| {
            let lane = Arc::new(Lane::new(1, 1, BS, false));
            let mut writer = LaneWriter::new(Arc::clone(&lane));
            writer.lock().unwrap().install(vec![0u8; BS].into_boxed_slice()).unwrap();
            writer.lock().unwrap().start(0, 0, H);
            let thread = thread::spawn(move || {
                let mut end = H;
                for i in 0..2u64 {
                    writer.record_mut(end, 8).unwrap().fill(i as u8 + 1);
                    end += 8;
                    writer.commit(end, i + 1);
                }
                writer.set_refused(1);
                // The cold path: a full block, a flush or the thread's exit.
                match writer.lock() {
                    Err((records, refused)) => (2 - records) + (1 - refused),
                    Ok(_) => 0,
                }
            });
            let take = lane.take();
            let late = thread.join().unwrap();
            let (taken, refused) = match take {
                Some(t) => {
                    let records = ((t.end - H) / 8) as u64;
                    for i in 0..records as usize {
                        assert!(t.bytes[H + i * 8..H + i * 8 + 8].iter().all(|&b| b == i as u8 + 1));
                    }
                    (records, t.refused)
                }
                None => (0, 0),
            };
            assert_eq!(taken + refused + late, 3, "every record and refusal is taken or counted, once");
        });
    }

    #[test]
    fn loom_a_snapshots_copy_of_a_ring_is_consecutive_and_holds_only_committed_records() {
        // A ring of 2 blocks, its thread writing 3 (the third overwrites the first) while a
        // snapshot copies it: whatever the interleaving, the copy is consecutive blocks, each
        // with only whole records of its own, and it reaches the block that was current when
        // the copy began (nothing recorded before the copy is missing but what the ring itself
        // overwrote).
        use event_format::wire::{BLOCK_HEADER_LEN as H, BlockHeader, Order};
        const BS: usize = H + 16;
        loom::model(|| {
            let rings = Arc::new(HeapRings::new(2, BS).unwrap());
            let lane = Arc::new(Lane::ring(1, Arc::clone(&rings)));
            let mut writer = LaneWriter::new(Arc::clone(&lane));
            let thread = thread::spawn(move || {
                for seq in 0..3u64 {
                    let index = writer.next_ring_block(seq).unwrap();
                    let mut g = writer.lock().unwrap();
                    g.start(index, seq, H);
                    let header = BlockHeader { sequence: seq, thread: 1, ..Default::default() };
                    header.write(Order::NATIVE, g.block_mut(index).unwrap());
                    drop(g);
                    writer.record_mut(H, 8).unwrap().fill(seq as u8 + 1);
                    writer.commit(H + 8, 1);
                    let mut g = writer.lock().unwrap();
                    Order::NATIVE.put_u32(&mut g.block_mut(index).unwrap()[event_format::raw::BLOCK_USED_AT..], 8);
                }
            });
            let copy = lane.copy_ring(0, u64::MAX);
            thread.join().unwrap();
            let mut last = None;
            for block in &copy {
                let header = BlockHeader::read(Order::NATIVE, block);
                if let Some(l) = last {
                    assert_eq!(header.sequence, l + 1);
                }
                last = Some(header.sequence);
                assert!(header.used == 0 || header.used == 8);
                assert!(block[H..H + header.used as usize].iter().all(|&b| b == header.sequence as u8 + 1));
            }
        });
    }

    #[test]
    fn loom_an_idle_flush_hands_on_each_record_once_and_keeps_the_sequence() {
        // The writer's idle flush (two checks: the second flushes when the thread committed
        // nothing in between) while the thread writes two records and then reaches its cold
        // path (a full block: it finishes the block under the lock). Every record is in the
        // flushed block or the thread's block, once, and the blocks are numbered one after
        // the other: the thread reads the number the flush gave its block.
        use event_format::raw::put_record_header;
        use event_format::wire::{BLOCK_HEADER_LEN as H, BlockHeader, Order, RecordIter};
        const BS: usize = 256;
        loom::model(|| {
            let lane = Arc::new(Lane::new(1, 1, BS, false));
            let mut writer = LaneWriter::new(Arc::clone(&lane));
            writer.lock().unwrap().install(vec![0u8; BS].into_boxed_slice()).unwrap();
            {
                let mut g = writer.lock().unwrap();
                g.start(0, 0, H);
                let header = BlockHeader { thread: 1, sequence: 0, base_time: 100, ..BlockHeader::default() };
                header.write(Order::NATIVE, g.block_mut(0).unwrap());
            }
            let flusher = {
                let lane = Arc::clone(&lane);
                thread::spawn(move || {
                    let mut flushed = Vec::new();
                    for _ in 0..2 {
                        lane.flush_idle(|block| flushed.push(block.to_vec()));
                    }
                    flushed
                })
            };
            let mut end = H;
            for i in 0..2u64 {
                let record = writer.record_mut(end, 16).unwrap();
                put_record_header(Order::NATIVE, record, 0, 0x0030, 16, 1);
                Order::NATIVE.put_u64(&mut record[8..], i + 1);
                end += 16;
                writer.commit(end, i + 1);
            }
            // The cold path: the block finished and handed on under the lock (as
            // `ThreadBuffer::hand_on` does), with the number it has now.
            let (sequence, block) = {
                let mut g = writer.lock().unwrap();
                let sequence = g.sequence();
                let block = g.block_mut(0).unwrap();
                Order::NATIVE.put_u32(&mut block[event_format::raw::BLOCK_USED_AT..], (end - H) as u32);
                (sequence, g.take_block().unwrap().to_vec())
            };
            let flushed = flusher.join().unwrap();
            let mut blocks = flushed.clone();
            blocks.push(block);
            let mut values = Vec::new();
            for (n, b) in blocks.iter().enumerate() {
                let header = BlockHeader::read(Order::NATIVE, b);
                assert_eq!(header.sequence, n as u64, "blocks numbered one after the other");
                let used = header.used as usize;
                for r in RecordIter::new(&b[H..H + used], Order::NATIVE, header.base_time) {
                    let r = r.expect("every record delimits");
                    assert!(r.time >= 100, "times go on from the block's start");
                    values.push(Order::NATIVE.u64(r.args));
                }
            }
            assert_eq!(values, [1, 2], "each record once, in order");
            assert_eq!(sequence, flushed.len() as u64);
        });
    }

    #[test]
    fn loom_a_thread_whose_exit_flush_meets_the_stop_loses_nothing() {
        // A scoped thread has recorded all its records (before the stop begins), and its exit
        // flush (`LaneWriter::hand_on` to the exchange) runs while the stop takes the lanes,
        // closes the exchange and drains it as the writer does: every record is in the stop's
        // take or in a drained block, none refused. (With the block submitted after the lane's
        // lock is let go, the stop could find the lane empty and close the exchange first.)
        use crate::blocks::exchange::{Batch, Exchange};
        use std::time::Duration;
        const BS: usize = 64;
        const H: usize = 16;
        loom::model(|| {
            let exchange = Arc::new(Exchange::new(1, BS, None));
            let lane = Arc::new(Lane::new(1, 1, BS, false));
            let mut writer = LaneWriter::new(Arc::clone(&lane));
            let block = exchange.take(Duration::ZERO).unwrap();
            writer.lock().unwrap().install(block).unwrap();
            writer.lock().unwrap().start(0, 0, H);
            for i in 0..2u64 {
                writer.record_mut(H + 8 * i as usize, 8).unwrap().fill(i as u8 + 1);
                writer.commit(H + 8 * (i as usize + 1), i + 1);
            }
            let ex = Arc::clone(&exchange);
            let exiting = thread::spawn(move || {
                let mut refused = false;
                let handed = writer.hand_on(|block| block[0] = 0xEE, |full| refused = !ex.submit(full));
                (handed.is_err(), refused)
            });
            // The stop: every lane taken, then the exchange closed and drained.
            let take = lane.take().expect("taken once");
            exchange.close();
            let mut drained = 0;
            loop {
                match exchange.next_batch(Duration::ZERO) {
                    Batch::Blocks(blocks) => {
                        for b in &blocks {
                            assert_eq!(b[0], 0xEE, "a finished block");
                            drained += (1..=2u8).filter(|&r| b[H + 8 * (r as usize - 1)] == r).count();
                        }
                        exchange.give_back(blocks);
                    }
                    Batch::Idle => {}
                    Batch::Closed => break,
                }
            }
            let (found_taken, refused) = exiting.join().unwrap();
            assert!(!refused, "no block is refused by the closed exchange");
            let taken = (take.end.saturating_sub(H) / 8) as usize;
            assert_eq!(taken + drained, 2, "every record in the take or the stream, once");
            assert_eq!(found_taken, taken > 0, "the thread finds the lane taken when the stop took its records");
        });
    }
}
