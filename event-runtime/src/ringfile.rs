//! The ring file's writer: the file mapped into memory, its live words, and the slots that
//! threads write their blocks into (docs/FORMAT.md, "The ring file"; the layout is
//! [`event_format::ring`]'s).
//!
//! This is one of the two modules with `unsafe` code (the other is `buffer`'s use of it):
//! the mapping is shared with other processes, so it is reached through raw pointers and
//! atomics, never through references that would promise exclusivity to the compiler.
//!
//! # Ordering
//!
//! A thread commits a record by storing its bytes, then its slot's `position` word with
//! release ordering; a reader (another process) loads `position` with acquire ordering, so
//! every byte below the committed end is visible to it. When a thread moves on to its next
//! block, it first stores the block's seal (used length, CRC), then advances `position` with
//! release ordering, and only then overwrites the oldest block of its ring: a reader that
//! copied a block checks `position` again afterwards and drops the copy if the writer may
//! have reused that block meanwhile (`RingReader::read_slot`).
#![allow(unsafe_code)]

use event_format::ring::{
    Layout, RECLAIMING, RING_VERSION, REPLY_MAX, REQUEST_MAX, STATE_CLOSED, STATE_RECORDING, at, control_at, position, slot_at,
};
use event_format::wire::Order;
use memmap2::MmapMut;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A ring file, mapped.
#[derive(Debug)]
pub(crate) struct RingFile {
    /// The mapping; never touched through a reference after creation (see the module docs).
    map: MmapMut,
    /// Its base address, in `map`.
    base: *mut u8,
    layout: Layout,
    path: PathBuf,
    /// The file, kept open so its length cannot change under the mapping through us.
    _file: File,
}

// SAFETY: the mapping is only accessed through atomics (the live words and positions) and
// through slots, each of which one thread claims exclusively (`claim`).
unsafe impl Send for RingFile {}
// SAFETY: as for Send: shared access is through atomics only.
unsafe impl Sync for RingFile {}

impl RingFile {
    /// Creates (or replaces) the ring file at `path`, readable and writable by its owner
    /// only, with the stream header `header` and every slot free.
    pub(crate) fn create(path: &Path, mut layout: Layout, header: &[u8]) -> io::Result<RingFile> {
        layout.version = RING_VERSION;
        layout.order = Order::NATIVE;
        layout.header_len = header.len() as u32;
        layout.check().map_err(io::Error::other)?;
        // A fresh file: a reader of the old one keeps its own, and ours starts zeroed.
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(path)?;
        file.set_len(layout.file_len())?;
        // SAFETY: the file was created just now by us, 0600, and stays open for the
        // mapping's life; other processes may read and write it (that is its purpose), which
        // is why every access after this function goes through atomics or claimed slots.
        let mut map = unsafe { MmapMut::map_mut(&file)? };
        map[..layout.encode().len()].copy_from_slice(&layout.encode());
        let h = layout.stream_header() as usize;
        map[h..h + header.len()].copy_from_slice(header);
        let base = map.as_mut_ptr();
        let ring = RingFile { map, base, layout, path: path.to_owned(), _file: file };
        ring.word(at::PID).store(std::process::id().into(), Ordering::Relaxed);
        ring.heartbeat();
        // Release: a reader that sees RECORDING sees the header written above.
        ring.word32(at::STATE).store(STATE_RECORDING, Ordering::Release);
        Ok(ring)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The 64-bit word at `offset`.
    fn word(&self, offset: usize) -> &AtomicU64 {
        assert!(offset % 8 == 0 && offset + 8 <= self.map.len(), "a word in the file");
        // SAFETY: in bounds and aligned (the mapping is page-aligned; asserted above), and
        // only ever accessed atomically, by us and by other processes.
        unsafe { AtomicU64::from_ptr(self.base.add(offset).cast()) }
    }

    fn word32(&self, offset: usize) -> &AtomicU32 {
        assert!(offset % 4 == 0 && offset + 4 <= self.map.len(), "a word in the file");
        // SAFETY: as for `word`.
        unsafe { AtomicU32::from_ptr(self.base.add(offset).cast()) }
    }

    /// Marks the writer alive now.
    pub(crate) fn heartbeat(&self) {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        self.word(at::HEARTBEAT_NS).store(now, Ordering::Relaxed);
    }

    /// Publishes the count of events no slot holds.
    pub(crate) fn set_lost(&self, lost: u64) {
        self.word(at::LOST).store(lost, Ordering::Relaxed);
    }

    /// Marks the recording closed cleanly, and writes the mapping back.
    pub(crate) fn close(&self) {
        self.word32(at::STATE).store(STATE_CLOSED, Ordering::Release);
        let _ = self.map.flush_async();
    }

    /// Claims a free slot for `thread`: one never used, else one whose thread exited. The
    /// slot is the caller's alone until it is released (`Slot::drop`).
    ///
    /// A never-used slot is claimed by swapping its owner word from 0 to `thread`, which no
    /// other claim can do twice. Reusing an exited thread's slot claims its `live` word
    /// (0 to 1), then marks the owner [`RECLAIMING`] while the position is reset, so that
    /// neither a reader nor a first-time claim pairs the new owner with the old position.
    /// Each is one compare-exchange per thread, off the hot path.
    pub(crate) fn claim(self: &Arc<RingFile>, thread: u64) -> Option<Slot> {
        let slots = self.layout.slots;
        let slot_word = |i: u32, field: usize| self.word(self.layout.slot(i) as usize + field);
        let slot_live = |i: u32| self.word32(self.layout.slot(i) as usize + slot_at::LIVE);
        let mut pick = None;
        for i in 0..slots {
            // Acquire/Release: our later writes to the slot follow the claim.
            if slot_word(i, slot_at::THREAD).compare_exchange(0, thread, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                slot_live(i).store(1, Ordering::Release);
                pick = Some(i);
                break;
            }
        }
        if pick.is_none() {
            for i in 0..slots {
                let owner = slot_word(i, slot_at::THREAD).load(Ordering::Relaxed);
                // Acquire on success: the exited owner's writes (released with `live = 0`)
                // happen before ours.
                if owner != 0
                    && owner != RECLAIMING
                    && slot_live(i).compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
                {
                    // Release each: a reader sees the owner word leave, the position reset,
                    // then the new owner, in this order.
                    slot_word(i, slot_at::THREAD).store(RECLAIMING, Ordering::Release);
                    slot_word(i, slot_at::POSITION).store(position(0, 0), Ordering::Release);
                    slot_word(i, slot_at::REFUSED).store(0, Ordering::Release);
                    slot_word(i, slot_at::THREAD).store(thread, Ordering::Release);
                    pick = Some(i);
                    break;
                }
            }
        }
        let Some(index) = pick else {
            self.word(at::THREADS_WITHOUT_SLOT).fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let block_size = self.layout.block_size as usize;
        let blocks = self.layout.blocks_per_slot as usize;
        let data = self.layout.block(index, 0) as usize;
        assert!(data + blocks * block_size <= self.map.len(), "the slot's blocks lie in the file");
        Some(Slot {
            // SAFETY: in bounds, asserted above.
            data: unsafe { self.base.add(data) },
            block_size,
            blocks,
            index,
            file: Arc::clone(self),
        })
    }

    /// The monitor's pending request, if it made one since the last reply: its sequence
    /// number and text.
    pub(crate) fn request(&self) -> Option<(u64, String)> {
        let page = self.layout.control() as usize;
        // Acquire: the request's text, written before its sequence number, is visible.
        let seq = self.word(page + control_at::REQUEST_SEQ).load(Ordering::Acquire);
        let ack = self.word(page + control_at::ACK_SEQ).load(Ordering::Relaxed);
        if seq == ack {
            return None;
        }
        let len = (self.word32(page + control_at::REQUEST_LEN).load(Ordering::Relaxed) as usize).min(REQUEST_MAX);
        let mut text = vec![0u8; len];
        for (i, b) in text.iter_mut().enumerate() {
            *b = self.byte(page + control_at::REQUEST + i);
        }
        Some((seq, String::from_utf8_lossy(&text).into_owned()))
    }

    /// Answers request `seq`.
    pub(crate) fn reply(&self, seq: u64, ok: bool, text: &str) {
        let page = self.layout.control() as usize;
        let bytes = &text.as_bytes()[..text.len().min(REPLY_MAX)];
        for (i, &b) in bytes.iter().enumerate() {
            self.set_byte(page + control_at::REPLY + i, b);
        }
        self.word32(page + control_at::REPLY_LEN).store(bytes.len() as u32, Ordering::Relaxed);
        self.word32(page + control_at::STATUS).store(u32::from(!ok), Ordering::Relaxed);
        // Release: the monitor that sees the acknowledgement sees the reply.
        self.word(page + control_at::ACK_SEQ).store(seq, Ordering::Release);
    }

    fn byte(&self, offset: usize) -> u8 {
        assert!(offset < self.map.len(), "a byte in the file");
        // SAFETY: in bounds; the control page's text is shared with the monitor process, so it
        // is read atomically, byte by byte (a request is rare and short).
        unsafe { std::sync::atomic::AtomicU8::from_ptr(self.base.add(offset)) }.load(Ordering::Relaxed)
    }

    fn set_byte(&self, offset: usize, v: u8) {
        assert!(offset < self.map.len(), "a byte in the file");
        // SAFETY: as for `byte`.
        unsafe { std::sync::atomic::AtomicU8::from_ptr(self.base.add(offset)) }.store(v, Ordering::Relaxed);
    }
}

/// One thread's slot: its ring of blocks in the file. Owned by that thread alone.
#[derive(Debug)]
pub(crate) struct Slot {
    /// The first block's first byte; `blocks * block_size` bytes are the slot's.
    data: *mut u8,
    block_size: usize,
    blocks: usize,
    index: u32,
    file: Arc<RingFile>,
}

// SAFETY: a slot is one thread's at a time; moving it to another thread (a thread's buffer
// retired at exit) moves that exclusivity with it.
unsafe impl Send for Slot {}

impl Slot {
    pub(crate) fn blocks(&self) -> u32 {
        self.blocks as u32
    }

    /// Block `index` of the ring, to write.
    #[inline(always)]
    pub(crate) fn block_mut(&mut self, index: u32) -> &mut [u8] {
        let index = index as usize % self.blocks;
        // SAFETY: in bounds (checked at claim); the slot was claimed by this thread alone, and
        // `&mut self` keeps this the only slice into it. Other processes read these bytes
        // concurrently; they validate what they read against `position` (module docs).
        unsafe { std::slice::from_raw_parts_mut(self.data.add(index * self.block_size), self.block_size) }
    }

    fn slot_word(&self, field: usize) -> &AtomicU64 {
        self.file.word(self.file.layout.slot(self.index) as usize + field)
    }

    /// Commits: the block being written is number `sequence`, its records end at `end`.
    #[inline(always)]
    pub(crate) fn commit(&self, sequence: u64, end: usize) {
        // Release: a reader that loads this position sees the bytes it covers.
        self.slot_word(slot_at::POSITION).store(position(sequence, end as u32), Ordering::Release);
    }

    /// Publishes how many events this thread refused because its ring was full.
    pub(crate) fn set_refused(&self, refused: u64) {
        self.slot_word(slot_at::REFUSED).store(refused, Ordering::Relaxed);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // The thread is done with the slot: its blocks stay for readers until another thread
        // claims it. Release: that thread's claim (acquire) comes after our last writes.
        self.file.word32(self.file.layout.slot(self.index) as usize + slot_at::LIVE).store(0, Ordering::Release);
    }
}
