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
    /// `Some((records, refused))` once the stop took the lane: the current block's committed
    /// records and the refused count at that moment, which the stop has put into the stream.
    /// The thread writes nothing below the committed end from then on, and counts every later
    /// record and refusal as lost.
    taken: Option<(u64, u64)>,
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
    /// A copy of the lane's blocks that hold records, `blocks * block_size` bytes, the
    /// current one's bytes above the committed end zeroed.
    pub(crate) bytes: Box<[u8]>,
    /// The current block's sequence number.
    pub(crate) sequence: u64,
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
            state: crate::sync::Mutex::new(LaneState { memory, current: 0, sequence: 0, taken: None }),
            committed: crate::sync::AtomicU64::new(0),
            block_size,
            blocks,
            thread,
            refused: crate::sync::AtomicU64::new(0),
        }
    }

    /// Whether this lane is a ring (it stays in the recording's list after its thread ends,
    /// for the stop to write), not a pool block.
    pub(crate) fn is_ring(&self) -> bool {
        self.blocks > 1
    }

    fn lock(&self) -> crate::sync::MutexGuard<'_, LaneState> {
        // Every update under the lock is complete before it is released.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The stop's take: a copy of every block that holds committed records, and the lane
    /// marked taken. `None` when it was taken already.
    pub(crate) fn take(&self) -> Option<LaneTake> {
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
        let (thread, sequence) = (self.thread, s.sequence);
        if s.memory.is_null() {
            let bytes = Box::default();
            return Some(LaneTake { bytes, sequence, end: 0, thread, refused });
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
        Some(LaneTake { bytes, sequence, end, thread, refused })
    }

    /// A snapshot's copy of a ring lane (`snapshot`): its blocks oldest first, each whole and
    /// finished (its `used` set; the current one up to its committed end), unsealed; nothing
    /// changes in the lane. Each block is copied under the lock on its own, so that the
    /// thread waits at most for one block's copy on its cold path (it never waits on its hot
    /// path, which takes no lock); between two copies it may move on, and the copy follows
    /// it: blocks it overwrote meanwhile are left out (their events were the oldest, as a ring
    /// drops them), and the copy ends at the block that is current when the copy reaches it.
    /// Empty for a pool lane, a lane without memory, or one the stop took.
    pub(crate) fn copy_ring(&self) -> Vec<Box<[u8]>> {
        let (bs, blocks) = (self.block_size, self.blocks as u64);
        let mut out = Vec::new();
        let first = {
            let s = self.lock();
            if !self.is_ring() || s.memory.is_null() || s.taken.is_some() {
                return out;
            }
            (s.sequence + 1).saturating_sub(blocks)
        };
        // Bounded: a thread that keeps moving on is followed for one ring's length at most.
        for seq in first..first + 2 * blocks {
            let s = self.lock();
            if s.taken.is_some() {
                break;
            }
            if s.sequence >= seq + blocks {
                // Overwritten since the copy started.
                continue;
            }
            let index = (seq % blocks) as usize;
            let current = s.sequence == seq;
            // Acquire: pairs with the thread's release in `LaneWriter::commit`; every byte
            // below `end` is visible. Read only for the current block.
            let end = if current { (self.committed.load(Ordering::Acquire) & 0xFFFF_FFFF) as usize } else { bs };
            let len = end.min(bs);
            let mut block = vec![0u8; bs].into_boxed_slice();
            // SAFETY: `memory` holds `blocks * block_size` bytes and we hold the lock. A block
            // other than the current one changes only under the lock; the current one's
            // bytes below `end` are committed and never written again by the thread, which
            // writes above `end` only (`LaneWriter::record_mut`): as in `take`.
            let from = unsafe { std::slice::from_raw_parts(s.memory.add(index * bs), len) };
            block[..len].copy_from_slice(from);
            drop(s);
            let header = event_format::wire::BlockHeader::read(event_format::wire::Order::NATIVE, &block);
            if header.sequence != seq || header.thread != self.thread {
                // Not a block of this ring's writing (never written): nothing to copy.
                if current {
                    break;
                }
                continue;
            }
            if current {
                if end <= event_format::wire::BLOCK_HEADER_LEN {
                    break;
                }
                let used = (end - event_format::wire::BLOCK_HEADER_LEN) as u32;
                event_format::wire::Order::NATIVE.put_u32(&mut block[event_format::wire::BLOCK_USED_AT..], used);
                out.push(block);
                break;
            }
            out.push(block);
        }
        out
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

/// The owning thread's handle on its lane: the only writer of its bytes.
#[derive(Debug)]
pub(crate) struct LaneWriter {
    lane: std::sync::Arc<Lane>,
    /// The current block's first byte; valid while the lane holds its memory, which only this
    /// writer replaces. Without a block it is dangling (never null) and `limit` is 0: only an
    /// empty slice can be made from it, which a dangling pointer allows.
    block: *mut u8,
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
        LaneWriter { lane, block: std::ptr::NonNull::dangling().as_ptr(), end: 0, limit: 0 }
    }

    /// Whether the lane holds memory (a pool lane may hold no block).
    pub(crate) fn has_memory(&self) -> bool {
        !self.lane.lock().memory.is_null()
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
        Some(unsafe { std::slice::from_raw_parts_mut(self.block.add(at), len) })
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
    block: &'a mut *mut u8,
    end: &'a mut usize,
    limit: &'a mut usize,
    lane: &'a Lane,
}

impl LaneGuard<'_> {
    /// Block `index` of the lane, whole; `None` without memory or past the lane.
    pub(crate) fn block_mut(&mut self, index: usize) -> Option<&mut [u8]> {
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
        *self.end = end;
        if self.state.memory.is_null() {
            *self.block = std::ptr::NonNull::dangling().as_ptr();
            *self.limit = 0;
        } else {
            // In bounds: `index` is below `blocks`; `wrapping_add` keeps this safe code.
            *self.block = self.state.memory.wrapping_add(index * self.lane.block_size);
            *self.limit = self.lane.block_size;
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

    /// Takes the pool block out of the lane (which then holds none).
    pub(crate) fn take_block(&mut self) -> Option<Box<[u8]>> {
        if self.state.memory.is_null() || self.lane.blocks != 1 {
            return None;
        }
        let memory = std::mem::replace(&mut self.state.memory, std::ptr::null_mut());
        *self.block = std::ptr::NonNull::dangling().as_ptr();
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
    fn a_ring_lane_gives_every_block_it_wrote() {
        let lane = Arc::new(Lane::new(1, 4, BS, true));
        let mut writer = LaneWriter::new(Arc::clone(&lane));
        for seq in 0..6u64 {
            let index = (seq % 4) as usize;
            let mut g = writer.lock().unwrap();
            g.start(index, seq, H);
            g.block_mut(index).unwrap()[..H].fill(seq as u8 + 1);
            drop(g);
            let r = writer.record_mut(H, REC).unwrap();
            r.fill(0xAA);
            writer.commit(H + REC, 1);
        }
        let take = lane.take().unwrap();
        assert_eq!((take.sequence, take.end, take.bytes.len()), (5, H + REC, 4 * BS));
        // Blocks 2..=5 are in the ring: 4 and 5 at indexes 0 and 1.
        assert_eq!(take.bytes[0], 5);
        assert_eq!(take.bytes[BS], 6);
        assert_eq!(take.bytes[2 * BS], 3);
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

    /// Writes `blocks` blocks of a ring lane of thread 1, each with a real header and as many
    /// 8-byte records as fit, every byte of a record its block's sequence plus one.
    pub(super) fn write_ring(writer: &mut LaneWriter, ring: u64, blocks: u64) {
        for seq in 0..blocks {
            let index = (seq % ring) as usize;
            let mut g = writer.lock().unwrap();
            g.start(index, seq, H);
            let header = BlockHeader { sequence: seq, thread: 1, ..Default::default() };
            header.write(Order::NATIVE, g.block_mut(index).unwrap());
            drop(g);
            let mut end = H;
            while end + REC <= BS {
                writer.record_mut(end, REC).unwrap().fill(seq as u8 + 1);
                end += REC;
                writer.commit(end, ((end - H) / REC) as u64);
            }
            // A finished block says how much it holds (as the thread buffer's `finish_block`).
            let mut g = writer.lock().unwrap();
            Order::NATIVE
                .put_u32(&mut g.block_mut(index).unwrap()[event_format::wire::BLOCK_USED_AT..], (end - H) as u32);
        }
    }

    /// What a copy must be: consecutive blocks of the ring's thread, each holding only whole
    /// records of its own sequence, as many as its `used` says.
    pub(super) fn check_copy(copy: &[Box<[u8]>]) {
        let mut last = None;
        for block in copy {
            let header = BlockHeader::read(Order::NATIVE, block);
            assert_eq!(header.thread, 1);
            if let Some(l) = last {
                assert_eq!(header.sequence, l + 1, "consecutive blocks");
            }
            last = Some(header.sequence);
            let used = header.used as usize;
            assert_eq!(used % REC, 0, "whole records");
            assert!(block[H..H + used].iter().all(|&b| b == header.sequence as u8 + 1), "its own records only");
        }
    }

    #[test]
    fn a_copy_of_a_ring_while_its_thread_writes_is_consecutive_and_whole() {
        for delay in [0, 1, 3, 10, 30] {
            let lane = Arc::new(Lane::new(1, 4, BS, true));
            let mut writer = LaneWriter::new(Arc::clone(&lane));
            let thread = std::thread::spawn(move || write_ring(&mut writer, 4, 12));
            for _ in 0..delay {
                std::thread::yield_now();
            }
            let copy = lane.copy_ring();
            thread.join().unwrap();
            check_copy(&copy);
            assert!(!lane.is_taken(), "a copy takes nothing");
            // After the thread: the ring's last four blocks, whole.
            let after = lane.copy_ring();
            check_copy(&after);
            let first = BlockHeader::read(Order::NATIVE, &after[0]).sequence;
            assert_eq!((after.len(), first), (4, 8));
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
            let lane = Arc::new(Lane::new(1, 2, BS, true));
            let mut writer = LaneWriter::new(Arc::clone(&lane));
            let thread = thread::spawn(move || {
                for seq in 0..3u64 {
                    let index = (seq % 2) as usize;
                    let mut g = writer.lock().unwrap();
                    g.start(index, seq, H);
                    let header = BlockHeader { sequence: seq, thread: 1, ..Default::default() };
                    header.write(Order::NATIVE, g.block_mut(index).unwrap());
                    drop(g);
                    writer.record_mut(H, 8).unwrap().fill(seq as u8 + 1);
                    writer.commit(H + 8, 1);
                    let mut g = writer.lock().unwrap();
                    Order::NATIVE.put_u32(&mut g.block_mut(index).unwrap()[event_format::wire::BLOCK_USED_AT..], 8);
                }
            });
            let copy = lane.copy_ring();
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
    fn loom_a_thread_whose_exit_flush_meets_the_stop_loses_nothing() {
        // A scoped thread has recorded all its records (before the stop begins), and its exit
        // flush (`LaneWriter::hand_on` to the exchange) runs while the stop takes the lanes,
        // closes the exchange and drains it as the writer does: every record is in the stop's
        // take or in a drained block, none refused. (With the block submitted after the lane's
        // lock is let go, the stop could find the lane empty and close the exchange first.)
        use crate::exchange::{Batch, Exchange};
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
