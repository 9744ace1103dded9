//! The ring file's writer: the file mapped into memory, its live words, and the slots that
//! threads write their blocks into (docs/FORMAT.md, "The ring file"; the layout is
//! [`event_format::ring`]'s). The same commit protocol over heap memory is `lane`'s.
//!
//! This is one of the crate's modules with `unsafe` code (the crate root's docs, "Unsafe
//! code", name them): the mapping is shared with other processes, so it is reached through
//! raw pointers and atomics, never through references that would promise exclusivity to the
//! compiler. The thread buffers (`buffer`) reach their blocks through the safe methods of
//! `Slot` and hold no `unsafe` code of their own.
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
//! The whole argument, the reader's side and the page cache included, is written once in
//! [`event_format::ring`]'s module docs ("Memory").
//!
//! # A shared data area (layout 1.1)
//!
//! The slots' rings share the data area, the whole buffer: each block a ring takes comes from
//! the file's pool (`ringpool::BlockPool`, kept in this process), and the block table says
//! which slot's ring holds each block (docs/FORMAT.md, "Block table"). Before a thread writes
//! any byte of a block it takes, it stores the block's table entry (release), then a release
//! fence: a reader that copied the block and reads the entry again after its acquire fence
//! finds it changed whenever the copy may hold a byte of the new use, and drops it.
#![allow(unsafe_code)]

use crate::files;
use event_format::raw::{
    PIN_ENTRY_HEADER, RECLAIMING, at, control_at, pin_at, pin_entry, position, slot_at, split_position, tag,
};
use event_format::ring::{Layout, REPLY_MAX, REQUEST_MAX, RING_VERSION, STATE_CLOSED, STATE_RECORDING};
use event_format::wire::{BLOCK_HEADER_LEN, BlockHeader, Order, RecordIter, verify_block};
use memmap2::MmapMut;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// A ring file, mapped.
#[derive(Debug)]
pub(crate) struct RingFile {
    /// Where the bytes are; never touched through a reference after creation (see the
    /// module docs).
    memory: Memory,
    /// Their base address, in `memory`.
    base: *mut u8,
    /// Their length.
    len: usize,
    layout: Layout,
    path: PathBuf,
    /// The mapping's guard against SIGBUS (`busguard`): `None` without one (`Signals::None`,
    /// memory in tests, a full guard table). Dropped before the mapping (`Drop`).
    #[cfg(unix)]
    guard: Option<crate::blocks::busguard::Guard>,
    /// Whether the loss of the file (cut short under the mapping) was said on stderr.
    said: AtomicBool,
    /// Which slot's ring holds which block of the data area (`ringpool`), as this process
    /// hands them out; the block table in the file says the same to readers.
    pool: std::sync::Mutex<crate::blocks::ringpool::BlockPool>,
}

impl Drop for RingFile {
    fn drop(&mut self) {
        // The guard goes first: the handler must never see a range that is unmapped (and
        // perhaps reused) as the ring file's.
        #[cfg(unix)]
        self.guard.take();
    }
}

/// The bytes of a ring file.
#[derive(Debug)]
enum Memory {
    /// The file, mapped; the file is kept open, and its lock (`files`) with it.
    Mapped { map: MmapMut, file: File },
    /// On the heap, for tests that cannot map a file (Miri): `words` u64s from `ptr`, owned.
    #[cfg(test)]
    Heap { ptr: *mut u64, words: usize },
}

#[cfg(test)]
impl Drop for Memory {
    fn drop(&mut self) {
        if let Memory::Heap { ptr, words } = *self {
            // SAFETY: `ptr` and `words` came from `Box::into_raw` of a boxed slice of that
            // length in `RingFile::in_memory`, and are freed only here.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, words)) });
        }
    }
}

// SAFETY: the mapping is only accessed through atomics (the live words and positions) and
// through slots, each of which one thread claims exclusively (`claim`).
unsafe impl Send for RingFile {}
// SAFETY: as for Send: shared access is through atomics only.
unsafe impl Sync for RingFile {}

/// Allocates `len` bytes for the ring file `file` on its file system before it is mapped, so
/// that no write through the mapping meets a page the file system cannot back (which the
/// kernel answers with SIGBUS: a ring file made sparse on a full disk killed the first thread
/// that wrote past what fitted). `fallocate(2)` where the file system supports it; elsewhere
/// (or on a system without it) zeros written over the whole length. An error (ENOSPC, EDQUOT)
/// means the ring file cannot be backed: the start refuses it.
pub(crate) fn back(file: &File, len: u64) -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::fd::AsRawFd;
        let Ok(size) = libc::off_t::try_from(len) else {
            return Err(io::Error::from(io::ErrorKind::FileTooLarge));
        };
        loop {
            // SAFETY: fallocate only reads its arguments; the descriptor is open for the call
            // (borrowed from `file`), and mode 0 allocates without changing any byte.
            if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, size) } == 0 {
                return Ok(());
            }
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EOPNOTSUPP | libc::ENOSYS) => break,
                _ => return Err(error),
            }
        }
    }
    #[cfg(unix)]
    {
        write_zeros(file, len)
    }
    #[cfg(not(unix))]
    {
        // Elsewhere a mapped page the disk cannot back is no signal; the length is enough.
        file.set_len(len)
    }
}

/// Backs `len` bytes of `file` by writing zeros over them (a file system without
/// `fallocate`).
#[cfg(unix)]
fn write_zeros(file: &File, len: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    const CHUNK: usize = 64 << 10;
    let zeros = vec![0u8; CHUNK];
    let mut at = 0u64;
    while at < len {
        let n = (len - at).min(CHUNK as u64) as usize;
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}

impl RingFile {
    /// Makes `file`, just claimed at `path` (`files::claim`: created by us, 0600, locked, and
    /// empty) and backed ([`back`]), the ring file, with the stream header `header` and every
    /// slot free.
    /// With `guard`, the mapping is guarded against SIGBUS (`busguard`) while it lives.
    pub(crate) fn create(
        file: File,
        path: &Path,
        mut layout: Layout,
        header: &[u8],
        guard: bool,
    ) -> io::Result<RingFile> {
        layout.version = RING_VERSION;
        layout.order = Order::NATIVE;
        layout.header_len = header.len() as u32;
        layout.check().map_err(io::Error::other)?;
        file.set_len(layout.file_len())?;
        // SAFETY: the file was claimed just now by us, 0600, and stays open for the
        // mapping's life; other processes may read and write it (that is its purpose), which
        // is why every access after this function goes through atomics or claimed slots.
        let mut map = unsafe { MmapMut::map_mut(&file)? };
        let (base, len) = (map.as_mut_ptr(), map.len());
        #[cfg_attr(not(unix), allow(unused_mut))]
        let mut ring = RingFile::init(Memory::Mapped { map, file }, base, len, layout, header, path);
        #[cfg(unix)]
        if guard {
            ring.guard = crate::blocks::busguard::register(base, len);
        }
        #[cfg(not(unix))]
        let _ = guard;
        Ok(ring)
    }

    /// A ring file on the heap, for tests that cannot map a file (Miri).
    #[cfg(test)]
    pub(crate) fn in_memory(mut layout: Layout, header: &[u8]) -> RingFile {
        layout.version = RING_VERSION;
        layout.order = Order::NATIVE;
        layout.header_len = header.len() as u32;
        layout.check().expect("a valid layout");
        let words = (layout.file_len() as usize).div_ceil(8);
        let ptr = Box::into_raw(vec![0u64; words].into_boxed_slice()).cast::<u64>();
        RingFile::init(Memory::Heap { ptr, words }, ptr.cast(), words * 8, layout, header, Path::new(""))
    }

    /// Writes the fixed part of page 0 and the stream header into zeroed memory, then marks
    /// the file recording.
    fn init(memory: Memory, base: *mut u8, len: usize, layout: Layout, header: &[u8], path: &Path) -> RingFile {
        let fixed = layout.encode();
        let h = layout.stream_header() as usize;
        assert!(len as u64 >= layout.file_len() && h + header.len() <= len, "the memory holds the layout");
        let pin_half = layout.encode_pin_half();
        // SAFETY: in bounds (asserted; the pin area's size is at 52, in page 0), and nobody
        // else can see this memory yet: these plain writes happen before the release store of
        // STATE below that publishes them.
        unsafe {
            std::ptr::copy_nonoverlapping(fixed.as_ptr(), base, fixed.len());
            std::ptr::copy_nonoverlapping(pin_half.as_ptr(), base.add(at::PIN_HALF), pin_half.len());
            std::ptr::copy_nonoverlapping(header.as_ptr(), base.add(h), header.len());
        }
        let ring = RingFile {
            memory,
            base,
            len,
            layout,
            path: path.to_owned(),
            #[cfg(unix)]
            guard: None,
            said: AtomicBool::new(false),
            pool: std::sync::Mutex::new(crate::blocks::ringpool::BlockPool::new(layout.blocks_per_slot, true)),
        };
        ring.heartbeat();
        // Release: a reader that sees RECORDING sees the header written above.
        ring.word32(at::STATE).store(STATE_RECORDING, Ordering::Release);
        ring
    }

    /// A copy of the bytes as they are now (tests read it back with `RingReader`).
    #[cfg(test)]
    pub(crate) fn snapshot(&self) -> Vec<u8> {
        (0..self.len).map(|i| self.byte(i)).collect()
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The file, opened again through our own descriptor: it reads the same bytes even when
    /// its path was removed or replaced while recording.
    pub(crate) fn reopen(&self) -> io::Result<File> {
        match &self.memory {
            Memory::Mapped { file, .. } => file.try_clone(),
            #[cfg(test)]
            Memory::Heap { .. } => Err(io::Error::other("a ring file in memory has no file")),
        }
    }

    /// Whether the file was cut short under the mapping and the guard replaced it
    /// (`busguard`): what the file held is gone, and nothing written from then on reaches it.
    /// One atomic load: threads ask it before they claim a slot.
    pub(crate) fn is_lost(&self) -> bool {
        #[cfg(unix)]
        {
            self.guard.as_ref().is_some_and(crate::blocks::busguard::Guard::is_lost)
        }
        #[cfg(not(unix))]
        {
            false
        }
    }

    /// Whether the file is lost ([`is_lost`](Self::is_lost)) or shorter than its layout (cut
    /// short where no thread has written since). A system call: for the writer thread and
    /// the stop.
    pub(crate) fn cut_short(&self) -> bool {
        self.is_lost() || self.reopen().and_then(|f| f.metadata()).is_ok_and(|m| m.len() < self.layout.file_len())
    }

    /// The line that says the file was cut short, the first time it is asked for after that
    /// happened; `None` before, and after. `copies`: the stream sinks get the events.
    pub(crate) fn loss_to_say(&self, copies: bool) -> Option<String> {
        // Relaxed: the flag orders nothing; the swap makes one caller the one that says it.
        if self.said.load(Ordering::Relaxed) || !self.cut_short() || self.said.swap(true, Ordering::Relaxed) {
            return None;
        }
        let rest = if copies {
            "; the event file and memory still get them, but for the blocks being written then, counted lost"
        } else {
            ""
        };
        Some(format!(
            "the ring file {} was truncated while recording: the events it held are lost, and none recorded since is in it{rest}",
            self.path.display()
        ))
    }

    /// Whether the path still names this file (not removed, not replaced).
    pub(crate) fn path_is_ours(&self) -> bool {
        self.reopen().is_ok_and(|file| files::names(&self.path, &file))
    }

    /// The 64-bit word at `offset`.
    fn word(&self, offset: usize) -> &AtomicU64 {
        // Cannot fail: every offset comes from the layout checked at creation. The
        // assertions here and below guard `unsafe` access: were the arithmetic ever wrong,
        // stopping is the only safe answer (they are not I/O errors, which never panic).
        assert!(offset.is_multiple_of(8) && offset + 8 <= self.len, "a word in the file");
        // SAFETY: in bounds and aligned (the mapping is page-aligned; asserted above), and
        // only ever accessed atomically, by us and by other processes.
        unsafe { AtomicU64::from_ptr(self.base.add(offset).cast()) }
    }

    fn word32(&self, offset: usize) -> &AtomicU32 {
        assert!(offset.is_multiple_of(4) && offset + 4 <= self.len, "a word in the file");
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

    /// Marks the recording closed cleanly, writes the mapping back, and releases the file's
    /// lock: no live writer holds it now (threads that still hold slots only count losses).
    pub(crate) fn close(&self) {
        self.word32(at::STATE).store(STATE_CLOSED, Ordering::Release);
        #[allow(irrefutable_let_patterns)] // Memory::Heap exists in tests only
        if let Memory::Mapped { map, file } = &self.memory {
            let _ = map.flush_async();
            files::unlock(file);
        }
    }

    /// Claims a free slot for `thread` ([`claim_slot`]). The slot is the caller's alone until
    /// it is released (`Slot::drop`). A slot whose thread exited gives up what its ring still
    /// held (counted in `discarded`) and its blocks to the pool.
    pub(crate) fn claim(self: &Arc<RingFile>, thread: u64) -> Option<Slot> {
        let mut discarded = 0;
        let claimed = claim_slot(&**self, thread, |slot, position| discarded = self.reclaim(slot, position));
        let Some((index, previous)) = claimed else {
            self.word(at::THREADS_WITHOUT_SLOT).fetch_add(1, Ordering::Relaxed);
            return None;
        };
        if previous.is_none() {
            // A slot never used: its ring, empty, before its thread asks for a block.
            let _ = self.lock_pool().open(u64::from(index));
        }
        let block_size = self.layout.block_size as usize;
        let blocks = self.layout.blocks() as usize;
        let data = self.layout.data() as usize;
        assert!(data + blocks * block_size <= self.len, "the data area lies in the file");
        // SAFETY: in bounds, asserted above.
        let data = unsafe { self.base.add(data) };
        let slot = Slot {
            data,
            block_size,
            blocks,
            index,
            position: self.word(self.layout.slot(index) as usize + slot_at::POSITION),
            current: data,
            current_block: NO_BLOCK,
            started: position(0, 0),
            thread,
            file: Arc::clone(self),
        };
        if let Some((_, refused)) = previous {
            // What the previous thread left is gone once this one writes: counted first
            // (docs/FORMAT.md, "Losses in a ring file").
            self.word(at::DISCARDED).fetch_add(refused.saturating_add(discarded), Ordering::Relaxed);
            self.word(at::SLOTS_REUSED).fetch_add(1, Ordering::Relaxed);
        }
        Some(slot)
    }

    /// The pool of the data area's blocks, locked.
    fn lock_pool(&self) -> std::sync::MutexGuard<'_, crate::blocks::ringpool::BlockPool> {
        crate::locks::lock(&self.pool)
    }

    /// Under `fill`: the rings only grow, from blocks no ring holds, and a thread refuses its
    /// events once none is left (the ring file is filled once).
    pub(crate) fn fill_once(&self) {
        self.lock_pool().set_reuse(false);
    }

    /// While a thread claims the exited thread's slot `slot` (its owner `RECLAIMING`): counts
    /// the events the ring holds as that thread left it at `position` (its blocks' records
    /// other than `TimeExtend`, their `lost` fields and `Dropped` counts; the block being
    /// written up to its committed end), clears their block table entries, and gives the
    /// blocks back to the pool, with a new, empty ring for the slot. Under the pool's lock:
    /// no other ring takes one of these blocks meanwhile, and their thread writes no more.
    fn reclaim(&self, slot: u32, position: u64) -> u64 {
        let mut pool = self.lock_pool();
        let (current, end) = split_position(position);
        let bs = self.layout.block_size as usize;
        let mut count = 0u64;
        for &(seq, block) in pool.ring(u64::from(slot)).iter() {
            let at = self.layout.pool_block(block) as usize;
            assert!(at + bs <= self.len, "a block of the data area");
            // SAFETY: in bounds (asserted), and nothing writes this block now (above).
            let bytes = unsafe { std::slice::from_raw_parts(self.base.add(at), bs) };
            let used_end = if seq as u32 == current {
                (end as usize).min(bs)
            } else {
                match verify_block(Order::NATIVE, bytes) {
                    Ok(h) => BLOCK_HEADER_LEN + h.used as usize,
                    Err(_) => 0,
                }
            };
            if used_end > BLOCK_HEADER_LEN {
                count = count.saturating_add(BlockHeader::read(Order::NATIVE, bytes).lost);
                for record in RecordIter::new(&bytes[BLOCK_HEADER_LEN..used_end], Order::NATIVE, 0).flatten() {
                    count += 1;
                    if record.code == event_format::builtin::DROPPED && record.args.len() >= 16 {
                        count = count.saturating_add(Order::NATIVE.u64(&record.args[8..]));
                    }
                }
            }
            // Release: a reader that sees the slot's new owner (stored after, release) sees
            // no entry naming the old ring's blocks as the slot's.
            self.word(self.layout.tag_at(block) as usize).store(0, Ordering::Release);
        }
        let _ = pool.open(u64::from(slot));
        count
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
        let mut len = text.len().min(REPLY_MAX);
        while !text.is_char_boundary(len) {
            len -= 1;
        }
        let bytes = &text.as_bytes()[..len];
        for (i, &b) in bytes.iter().enumerate() {
            self.set_byte(page + control_at::REPLY + i, b);
        }
        self.word32(page + control_at::REPLY_LEN).store(bytes.len() as u32, Ordering::Relaxed);
        self.word32(page + control_at::STATUS).store(u32::from(!ok), Ordering::Relaxed);
        // Release: the monitor that sees the acknowledgement sees the reply.
        self.word(page + control_at::ACK_SEQ).store(seq, Ordering::Release);
    }

    /// Whether the file has a pin area (docs/FORMAT.md, "Pin area").
    pub(crate) fn has_pins(&self) -> bool {
        self.layout.pin_half > 0
    }

    /// Keeps a pinned record (its bytes as in its block: header and arguments) of `thread` at
    /// `time` in the pin area ([`pin_into`]). `state` is what the area holds (the caller's,
    /// kept under its lock: one writer at a time).
    pub(crate) fn pin(&self, state: &mut FilePins, thread: u64, time: u64, record: &[u8]) {
        pin_into(self, state, thread, time, record);
    }

    fn byte(&self, offset: usize) -> u8 {
        assert!(offset < self.len, "a byte in the file");
        // SAFETY: in bounds; the control page's text is shared with the monitor process, so it
        // is read atomically, byte by byte (a request is rare and short).
        unsafe { std::sync::atomic::AtomicU8::from_ptr(self.base.add(offset)) }.load(Ordering::Relaxed)
    }

    fn set_byte(&self, offset: usize, v: u8) {
        assert!(offset < self.len, "a byte in the file");
        // SAFETY: as for `byte`.
        unsafe { std::sync::atomic::AtomicU8::from_ptr(self.base.add(offset)) }.store(v, Ordering::Relaxed);
    }
}

/// What the ring file's pin area holds, as its writer keeps it (under the pin ring's lock):
/// the entries of the current half, their end, the epoch, and the records let go.
#[derive(Debug, Default)]
pub(crate) struct FilePins {
    entries: std::collections::VecDeque<Vec<u8>>,
    end: usize,
    epoch: u32,
    dropped: u64,
}

impl FilePins {
    /// Whether the area holds an entry of `thread` whose record has wire code `code`.
    pub(crate) fn holds(&self, thread: u64, code: u16) -> bool {
        let o = Order::NATIVE;
        self.entries.iter().any(|e| o.u64(&e[pin_at::THREAD..]) == thread && o.u16(&e[pin_at::RECORD..]) == code)
    }
}

/// Where the pin area's writer ([`pin_into`]) writes: the ring file's pin area, or a loom
/// model's.
pub(crate) trait PinArea {
    type W64: Word<u64>;
    /// Bytes in each half (0: no pin area).
    fn pin_half(&self) -> usize;
    /// The area's position word (`PIN_POSITION`).
    fn pin_position(&self) -> &Self::W64;
    /// The area's `PINS_DROPPED` word.
    fn pins_dropped(&self) -> &Self::W64;
    /// Writes `entry` at `at` of half `half` (0 or 1), with plain (relaxed) stores.
    fn write_pin(&self, half: u32, at: usize, entry: &[u8]);
    /// A release fence (std's, or loom's in the models).
    fn release_fence(&self);
}

impl PinArea for RingFile {
    type W64 = AtomicU64;
    fn pin_half(&self) -> usize {
        self.layout.pin_half as usize
    }
    fn pin_position(&self) -> &AtomicU64 {
        self.word(at::PIN_POSITION)
    }
    fn pins_dropped(&self) -> &AtomicU64 {
        self.word(at::PINS_DROPPED)
    }
    fn write_pin(&self, half: u32, at: usize, entry: &[u8]) {
        let size = self.layout.pin_half as usize;
        let offset = self.layout.pin_area() as usize + half as usize * size + at;
        assert!(
            half < 2 && at + entry.len() <= size && offset + entry.len() <= self.len,
            "a pin entry in the pin area"
        );
        // SAFETY: in bounds (asserted). The pin area is written by one thread at a time (the
        // caller's lock); readers in other processes copy it and check the copy against the
        // area's position (docs/FORMAT.md, "Pin area"), so plain stores are what they expect.
        unsafe { std::ptr::copy_nonoverlapping(entry.as_ptr(), self.base.add(offset), entry.len()) }
    }
    fn release_fence(&self) {
        std::sync::atomic::fence(Ordering::Release);
    }
}

/// Keeps a pinned record (its bytes as in its block: header and arguments) of `thread` at
/// `time` in `area`, by the protocol of docs/FORMAT.md, "Pin area": appended to the current
/// half and committed with one release store of the area's position; when it does not fit,
/// the oldest entries leave (counted in `PINS_DROPPED`) and the ones left, with it, are
/// written into the other half, which the next epoch then names. `state` is what the area
/// holds (one writer at a time: the caller's lock). The loom model
/// `loom_a_pin_area_reader_keeps_only_whole_committed_entries` checks it against the reader.
pub(crate) fn pin_into<A: PinArea>(area: &A, state: &mut FilePins, thread: u64, time: u64, record: &[u8]) {
    let half = area.pin_half();
    if half == 0 {
        return;
    }
    let len = (PIN_ENTRY_HEADER + record.len()).next_multiple_of(8);
    if len > half {
        state.dropped += 1;
        // Relaxed: a count, read by a reader as it is.
        area.pins_dropped().store(state.dropped, Ordering::Relaxed);
        return;
    }
    let entry = pin_entry(Order::NATIVE, thread, time, record);
    if state.end + len <= half {
        area.write_pin(state.epoch % 2, state.end, &entry);
        state.end += len;
        state.entries.push_back(entry);
    } else {
        while state.end + len > half {
            let Some(oldest) = state.entries.pop_front() else { break };
            state.end -= oldest.len();
            state.dropped += 1;
        }
        state.entries.push_back(entry);
        state.epoch = state.epoch.wrapping_add(1);
        // The other half held the entries of the epoch before last, which no reader keeps
        // now: the position moved on from it when the last compaction committed. A release
        // fence keeps these bytes from being visible before that store (as a slot's block
        // reuse, module docs): a reader that copied any of them then sees the epoch changed.
        area.release_fence();
        let mut at = 0;
        for e in &state.entries {
            area.write_pin(state.epoch % 2, at, e);
            at += e.len();
        }
        state.end = at;
        area.pins_dropped().store(state.dropped, Ordering::Relaxed);
    }
    // Release: a reader that loads this position sees the entries below its end.
    area.pin_position().store(position(u64::from(state.epoch), state.end as u32), Ordering::Release);
}

/// An atomic word, as the claim protocol uses it: std's in the ring file, loom's in the
/// models.
pub(crate) trait Word<T> {
    fn load(&self, order: Ordering) -> T;
    fn store(&self, value: T, order: Ordering);
    fn compare_exchange(&self, current: T, new: T, success: Ordering, failure: Ordering) -> Result<T, T>;
}

macro_rules! word {
    ($atomic:ty, $t:ty) => {
        impl Word<$t> for $atomic {
            fn load(&self, order: Ordering) -> $t {
                <$atomic>::load(self, order)
            }
            fn store(&self, value: $t, order: Ordering) {
                <$atomic>::store(self, value, order)
            }
            fn compare_exchange(&self, current: $t, new: $t, success: Ordering, failure: Ordering) -> Result<$t, $t> {
                <$atomic>::compare_exchange(self, current, new, success, failure)
            }
        }
    };
}
word!(AtomicU64, u64);
word!(AtomicU32, u32);
#[cfg(loom)]
word!(loom::sync::atomic::AtomicU64, u64);
#[cfg(loom)]
word!(loom::sync::atomic::AtomicU32, u32);

/// The slot table's words that a claim works on.
pub(crate) trait SlotTable {
    type W64: Word<u64>;
    type W32: Word<u32>;
    fn slots(&self) -> u32;
    fn owner(&self, slot: u32) -> &Self::W64;
    fn live(&self, slot: u32) -> &Self::W32;
    fn position(&self, slot: u32) -> &Self::W64;
    fn refused(&self, slot: u32) -> &Self::W64;
}

impl SlotTable for RingFile {
    type W64 = AtomicU64;
    type W32 = AtomicU32;
    fn slots(&self) -> u32 {
        self.layout.slots
    }
    fn owner(&self, slot: u32) -> &AtomicU64 {
        self.word(self.layout.slot(slot) as usize + slot_at::THREAD)
    }
    fn live(&self, slot: u32) -> &AtomicU32 {
        self.word32(self.layout.slot(slot) as usize + slot_at::LIVE)
    }
    fn position(&self, slot: u32) -> &AtomicU64 {
        self.word(self.layout.slot(slot) as usize + slot_at::POSITION)
    }
    fn refused(&self, slot: u32) -> &AtomicU64 {
        self.word(self.layout.slot(slot) as usize + slot_at::REFUSED)
    }
}

/// Claims a slot of `table` for `thread`: a never-used one, else one whose thread exited.
/// Returns its index and, for a reused slot, what its previous thread left: its last
/// `position` and its `refused` count, read before they are reset (the claim's acquire makes
/// them the exited thread's last).
///
/// A never-used slot's owner word goes 0 -> [`RECLAIMING`] by compare-exchange (no other
/// claim can do that twice), then `live` becomes 1, then the owner is named: a reuse, which
/// needs a named owner and `live == 0`, never sees this slot free. Reusing an exited
/// thread's slot claims its `live` word (0 to 1), then marks the owner `RECLAIMING` while
/// the position is reset, so that no reader pairs the new owner with the old position.
/// Each is one compare-exchange per thread, off the hot path. `reclaim` gets a reused slot
/// and its previous position while its owner is `RECLAIMING`.
pub(crate) fn claim_slot<T: SlotTable>(
    table: &T,
    thread: u64,
    reclaim: impl FnOnce(u32, u64),
) -> Option<(u32, Option<(u64, u64)>)> {
    for i in 0..table.slots() {
        if table.owner(i).compare_exchange(0, RECLAIMING, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            // Release: a reuse that sees the owner named sees `live == 1` (see above).
            table.live(i).store(1, Ordering::Release);
            table.owner(i).store(thread, Ordering::Release);
            return Some((i, None));
        }
    }
    for i in 0..table.slots() {
        // Acquire: an owner named after `live` was set shows `live == 1`.
        let owner = table.owner(i).load(Ordering::Acquire);
        // Acquire on success: the exited owner's writes (released with `live = 0`) happen
        // before ours.
        if owner != 0
            && owner != RECLAIMING
            && table.live(i).compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
        {
            // Release each: a reader sees the owner leave, the position reset, then the new
            // owner, in this order.
            table.owner(i).store(RECLAIMING, Ordering::Release);
            let previous = (table.position(i).load(Ordering::Relaxed), table.refused(i).load(Ordering::Relaxed));
            // The previous thread's ring, counted and given up while no reader takes the slot
            // for anyone's (`RingFile::reclaim`).
            reclaim(i, previous.0);
            table.position(i).store(position(0, 0), Ordering::Release);
            table.refused(i).store(0, Ordering::Release);
            table.owner(i).store(thread, Ordering::Release);
            return Some((i, Some(previous)));
        }
    }
    None
}

/// [`Slot::current_block`] before the slot's first block.
const NO_BLOCK: u32 = u32::MAX;

/// One thread's slot: its ring of blocks in the file's shared data area. Owned by that thread
/// alone.
///
/// `repr(C)`, the fields that a record's write and commit read first: with the rest of what
/// an event reads they stay on the thread's first two cache lines (`buffer::ThreadBuffer`).
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Slot {
    /// The current block's first byte ([`start`](Slot::start)): a record's bytes are found
    /// from it with one bounds test, no index arithmetic per event.
    current: *mut u8,
    /// The slot's `position` word, found once at claim: a commit is one store through it.
    position: *const AtomicU64,
    /// The current block's position with its end left zero (`position(sequence, 0)`), for
    /// [`commit_end`](Slot::commit_end).
    started: u64,
    block_size: usize,
    /// The data area's first byte; `blocks * block_size` bytes, which the slots share.
    data: *mut u8,
    /// Blocks of the data area.
    blocks: usize,
    index: u32,
    /// The block the slot's ring writes, its index in the data area ([`next_block`]
    /// (Slot::next_block)): the ring's newest, which no other ring takes; [`NO_BLOCK`] before
    /// the first. Not an `Option`: its niche would become the thread's home's tag, and the
    /// hot path's match of the home would cost three instructions more (callgrind).
    current_block: u32,
    /// The thread that claimed it.
    thread: u64,
    file: Arc<RingFile>,
}

// SAFETY: a slot is one thread's at a time; moving it to another thread (a thread's buffer
// retired at exit) moves that exclusivity with it.
unsafe impl Send for Slot {}

impl Slot {
    pub(crate) fn blocks(&self) -> u32 {
        self.blocks as u32
    }

    /// Block `index` of the data area, to write: the block this slot's ring writes
    /// ([`next_block`](Self::next_block) gave it), only.
    #[inline(always)]
    pub(crate) fn block_mut(&mut self, index: u32) -> &mut [u8] {
        assert!(self.current_block == index, "block {index} is the one the slot writes");
        let index = index as usize;
        assert!(index < self.blocks, "block {index} of a data area of {}", self.blocks);
        // SAFETY: in bounds (the index by the assertion, the area at claim); the block is the
        // newest of this slot's ring, which no other ring takes (`ringpool`), and `&mut self`
        // keeps this the only slice into it. Other processes read these bytes concurrently;
        // they validate what they read against `position` and the block table (module docs).
        unsafe { std::slice::from_raw_parts_mut(self.data.add(index * self.block_size), self.block_size) }
    }

    /// The block of the data area that this slot's block `sequence` goes into, from the
    /// file's pool (`ringpool`), its block table entry stored (release) and a release fence
    /// after, before any of its bytes changes (module docs); `None` when the pool can give
    /// none (`fill`, used up).
    pub(crate) fn next_block(&mut self, sequence: u64) -> Option<u32> {
        let mut pool = self.file.lock_pool();
        let (block, _) = pool.next(u64::from(self.index), sequence)?;
        // Release, then a release fence: a reader that copied a byte this thread writes into
        // the block from now on reads the entry after its acquire fence and finds it changed.
        // Under the pool's lock: the entries change in the order the pool hands blocks out,
        // so a ring's blocks leave the table oldest first, as they leave the ring (a block
        // taken from another ring is renamed before that ring can take or reuse another).
        self.file.word(self.file.layout.tag_at(block) as usize).store(tag(self.index, sequence), Ordering::Release);
        std::sync::atomic::fence(Ordering::Release);
        drop(pool);
        self.current_block = block;
        Some(block)
    }

    /// The number of this slot's oldest block that may hold an event at `time` or later (the
    /// last that starts before `time`, or the oldest its ring holds), behind or at `current`,
    /// the block being written: where a trigger's copy of its window (`pre=`) starts.
    pub(crate) fn first_since(&self, time: u64, current: u64) -> u64 {
        let pool = self.file.lock_pool();
        let mut first = None;
        for &(seq, block) in pool.ring(u64::from(self.index)).iter() {
            if seq > current {
                break;
            }
            // SAFETY: in bounds (the pool's indices are below `blocks`); the ring holds the
            // block (the pool's lock), and this thread, its only writer, wrote its header.
            let header = unsafe {
                std::slice::from_raw_parts(self.data.add(block as usize * self.block_size), BLOCK_HEADER_LEN)
            };
            if first.is_none() || BlockHeader::read(Order::NATIVE, header).base_time < time {
                first = Some(seq);
            }
        }
        first.unwrap_or(0)
    }

    /// Copies of this slot's blocks `from ..= until` still in its ring, oldest first: those
    /// behind the block being written (`current`, sealed), whole; that one up to `end`, its
    /// `used` set; unsealed. On the slot's own thread (a trigger's copy, the traceback), under
    /// the pool's lock: no other ring takes one of them meanwhile.
    pub(crate) fn copy_ring(&self, from: u64, until: u64, current: u64, end: usize) -> Vec<Box<[u8]>> {
        let pool = self.file.lock_pool();
        let mut out = Vec::new();
        for &(seq, block) in pool.ring(u64::from(self.index)).iter() {
            if seq < from || seq > until || seq > current {
                continue;
            }
            let len = if seq == current { end.min(self.block_size) } else { self.block_size };
            if len <= BLOCK_HEADER_LEN {
                continue;
            }
            // SAFETY: in bounds (the pool's indices are below `blocks`); the ring holds the
            // block (the pool's lock keeps other rings from taking it), and this thread, its
            // only writer, is here.
            let bytes = unsafe { std::slice::from_raw_parts(self.data.add(block as usize * self.block_size), len) };
            let mut copy = crate::blocks::lane::copied(bytes, self.block_size);
            if seq == current {
                Order::NATIVE.put_u32(&mut copy[event_format::raw::BLOCK_USED_AT..], (len - BLOCK_HEADER_LEN) as u32);
            }
            out.push(copy);
        }
        out
    }

    /// Makes block `index` (the one [`next_block`](Self::next_block) gave), of sequence
    /// number `sequence`, the current one: the block [`record_mut`](Self::record_mut) and
    /// [`commit_end`](Self::commit_end) work on.
    pub(crate) fn start(&mut self, index: u32, sequence: u64) {
        assert!(self.current_block == index, "block {index} is the one the slot writes");
        let index = index as usize;
        assert!(index < self.blocks, "block {index} of a data area of {}", self.blocks);
        // In bounds (the index by the assertion, the area at claim); `wrapping_add` keeps this
        // safe code, and `record_mut` reads through it only within `block_size`.
        self.current = self.data.wrapping_add(index * self.block_size);
        self.started = position(sequence, 0);
    }

    /// `len` bytes at `at` of the current block ([`start`](Self::start)), to write a record
    /// into; `None` past the block's end.
    #[inline(always)]
    pub(crate) fn record_mut(&mut self, at: usize, len: usize) -> Option<&mut [u8]> {
        if at.checked_add(len)? > self.block_size {
            return None;
        }
        // SAFETY: `current` is the first byte of one of the slot's blocks (`start`, or block 0
        // from the claim), each `block_size` bytes long: `at..at + len` lies in it, checked
        // above. `&mut self` keeps this the only slice into the slot; readers in other
        // processes validate what they read against `position` (module docs).
        Some(unsafe { std::slice::from_raw_parts_mut(self.current.add(at), len) })
    }

    /// Commits the current block's ([`start`](Self::start)) records up to `end`: its
    /// position, sequence number and end, in one store.
    #[inline(always)]
    pub(crate) fn commit_end(&self, end: usize) {
        // SAFETY: `position` is the slot's word in the mapping that `file` keeps, in bounds
        // and aligned (`RingFile::word` checked it at claim), and only accessed atomically.
        let word = unsafe { &*self.position };
        // Release: a reader that loads this position sees the bytes it covers. `end` is at
        // most `block_size`, below 2^32 (the layout's), so it fits the position's low half.
        word.store(self.started | end as u64, Ordering::Release);
    }

    fn slot_word(&self, field: usize) -> &AtomicU64 {
        self.file.word(self.file.layout.slot(self.index) as usize + field)
    }

    /// Publishes how many events this thread refused because its ring was full.
    pub(crate) fn set_refused(&self, refused: u64) {
        self.slot_word(slot_at::REFUSED).store(refused, Ordering::Relaxed);
    }
}

impl Slot {
    /// The stop's handle on this slot's current block (`switch` or `fill`, whose stream sinks
    /// get a copy of each block): see [`SlotCopy`].
    pub(crate) fn copier(&self) -> SlotCopy {
        SlotCopy {
            state: crate::sync::Mutex::new(SlotCopyState { copied: None, taken: None }),
            data: self.data,
            block_size: self.block_size,
            blocks: self.blocks,
            index: self.index,
            thread: self.thread,
            file: Arc::clone(&self.file),
        }
    }
}

/// Whether `block`, of a ring-file slot, is still the block `sequence` of `thread` that was
/// begun there: `false` once the file was cut short under the mapping and the guard
/// replaced it (`busguard`), for every block begun before that (its header, and what it
/// held, became zeros; thread ids start at 1). A block begun after it is whole.
pub(crate) fn block_is_intact(block: &[u8], thread: u64, sequence: u64) -> bool {
    let header = BlockHeader::read(Order::NATIVE, block);
    header.thread == thread && header.sequence == sequence
}

/// A thread's slot as the stop sees it when the stream sinks get a copy of every block
/// (`switch` or `fill` with a ring file): the stop copies the committed prefix of the block
/// the thread is writing, which no hand-on has copied, so that a thread alive at the stop
/// loses nothing from the stream (its records are in the ring file either way).
///
/// The lane's protocol (`Lane`), with the slot's `position` word as the committed word: the
/// thread finishes a block and queues its copy under `state`'s lock, and records the block
/// as copied there ([`SlotCopy::hand_on`]); the stop, under the same lock, loads `position`
/// (acquire), copies the bytes below its end unless that block was copied, and marks the
/// slot taken. The thread finds it taken on its next cold path and counts the records it
/// committed after the take as lost.
#[derive(Debug)]
pub(crate) struct SlotCopy {
    state: crate::sync::Mutex<SlotCopyState>,
    /// The data area's first block (`Slot::data`), valid while `file` is held.
    data: *mut u8,
    block_size: usize,
    blocks: usize,
    index: u32,
    /// The thread that writes the slot.
    thread: u64,
    file: Arc<RingFile>,
}

/// What changes only under a [`SlotCopy`]'s lock.
#[derive(Debug)]
struct SlotCopyState {
    /// The last block whose copy the thread queued: its position is this block's (the copy
    /// made, the next block not started yet) or the next one's.
    copied: Option<u64>,
    /// `Some(records)` once the stop took the slot's current block, with its records.
    taken: Option<u64>,
}

// SAFETY: `data` points into the mapping that `file` keeps alive; the stop reads only bytes
// below the committed end, under the lock (`SlotCopy`'s docs).
unsafe impl Send for SlotCopy {}
// SAFETY: as for Send: shared access is through the lock and the atomic position word.
unsafe impl Sync for SlotCopy {}

/// What the stop took from a slot: its current block's committed prefix, sealed.
#[derive(Debug)]
pub(crate) struct SlotTake {
    /// A whole block: header, the committed records, zeros; used length and CRC set.
    pub(crate) block: Box<[u8]>,
}

impl SlotCopy {
    fn lock(&self) -> crate::sync::MutexGuard<'_, SlotCopyState> {
        // Every update under the lock is complete before it is released.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The owning thread's hand-on of block `sequence`: `copy` (finish the block and queue
    /// its copy) runs under the lock, and the block is then recorded as copied.
    /// `Err((records, 0))` when the stop took the slot first (as `LaneWriter::lock`).
    pub(crate) fn hand_on(&self, sequence: u64, copy: impl FnOnce()) -> Result<(), (u64, u64)> {
        let mut state = self.lock();
        if let Some(records) = state.taken {
            return Err((records, 0));
        }
        copy();
        state.copied = Some(sequence);
        Ok(())
    }

    /// A fatal signal's take of block `sequence`, being written by the interrupted thread:
    /// `seal` (which seals the block in place and returns where it lies) runs under the lock,
    /// taken without waiting, and the block is then recorded as copied, so that a stop never
    /// takes it again. `None` when the lock is held or the stop took the slot.
    #[cfg(unix)]
    pub(crate) fn take_for_signal<T>(&self, sequence: u64, seal: impl FnOnce() -> T) -> Option<T> {
        let mut state = self.state.try_lock().ok()?;
        if state.taken.is_some() || state.copied == Some(sequence) {
            return None;
        }
        let sealed = seal();
        state.copied = Some(sequence);
        Some(sealed)
    }

    /// The stop's take: the committed prefix of the block being written, unless its copy
    /// was queued already or it holds no record. `None` also when it was taken already.
    pub(crate) fn take(&self) -> Option<SlotTake> {
        let mut state = self.lock();
        if state.taken.is_some() {
            return None;
        }
        state.taken = Some(0);
        // Acquire: pairs with the thread's release in `Slot::commit`; every byte below `end`,
        // the block's header included (`buffer`'s start of a block), is visible.
        let word =
            self.file.word(self.file.layout.slot(self.index) as usize + slot_at::POSITION).load(Ordering::Acquire);
        let (low, end) = split_position(word);
        let end = end as usize;
        // The full sequence number: the position holds its low 32 bits, and the block is the
        // last one copied or the one after it (the first block before any copy).
        let sequence = match state.copied {
            Some(c) if c as u32 == low => return None,
            Some(c) => c + 1,
            None => 0,
        };
        if end <= BLOCK_HEADER_LEN || end > self.block_size || sequence as u32 != low {
            return None;
        }
        // Where the ring put that block (lock order: this one's, then the pool's).
        let found = self.file.lock_pool().ring(u64::from(self.index)).iter().find(|p| p.0 == sequence).map(|p| p.1);
        let block = found.filter(|&b| (b as usize) < self.blocks)?;
        let at = block as usize * self.block_size;
        let mut block = vec![0u8; self.block_size].into_boxed_slice();
        // SAFETY: in bounds (`at + end` within the data area's `blocks * block_size` bytes,
        // which `claim` checked lie in the mapping `file` keeps). The bytes below the committed end
        // are not written again until the thread hands the block on, which needs the lock we
        // hold; the thread writes above `end` meanwhile, which we do not read.
        let from = unsafe { std::slice::from_raw_parts(self.data.add(at), end) };
        block[..end].copy_from_slice(from);
        if !block_is_intact(&block, self.thread, sequence) {
            // Begun before the file was cut short under the mapping: what it held is gone.
            // The thread counts its records lost when it notices (`taken` is 0).
            return None;
        }
        let records = RecordIter::new(&block[BLOCK_HEADER_LEN..end], Order::NATIVE, 0).count() as u64;
        state.taken = Some(records);
        event_format::raw::seal_block(Order::NATIVE, &mut block, (end - BLOCK_HEADER_LEN) as u32);
        Some(SlotTake { block })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // The thread is done with the slot: its blocks stay for readers until other rings
        // need them or another thread claims it (which may only happen after `live` is 0,
        // so the pool learns the ring ended first).
        self.file.lock_pool().close(u64::from(self.index));
        // Release: that thread's claim (acquire) comes after our last writes.
        self.file.word32(self.file.layout.slot(self.index) as usize + slot_at::LIVE).store(0, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! The slots in memory, written by several threads and read back: run under Miri
    //! (`cargo +nightly miri test -p event-runtime --lib`), which checks the raw pointers,
    //! the atomics made from them and the slices handed to threads.
    use super::*;
    use event_format::decode::{Catalog, Decoder, Entry};
    use event_format::ring::{RingReader, RingStream};
    use event_format::wire::{BLOCK_HEADER_LEN, BlockHeader, BlockWriter, Value};

    #[test]
    fn threads_write_their_slots_and_a_reader_finds_every_record() {
        let header = event_format::testing::sample_header(Order::NATIVE);
        let header_bytes = header.encode().unwrap();
        let layout = Layout {
            order: Order::NATIVE,
            version: RING_VERSION,
            block_size: 1024,
            slots: 3,
            // A shared data area of 12 blocks: a fair share of 4 for each of 3 threads.
            blocks_per_slot: 12,
            header_len: 0,
            pid: 1,
            created_ns: 0,
            pin_half: 0,
        };
        let ring = Arc::new(RingFile::in_memory(layout, &header_bytes));
        let code = header.sets[0].wire_code(0).expect("a wire code");
        let per_thread = if cfg!(miri) { 30 } else { 300 };
        let threads: Vec<_> = (1..=3u64)
            .map(|thread| {
                let ring = Arc::clone(&ring);
                std::thread::spawn(move || {
                    let mut slot = ring.claim(thread).expect("a slot each");
                    let (mut sequence, mut i) = (0u64, 0u64);
                    while i < per_thread {
                        // Fill one block as the thread buffers do: commit after each record.
                        let index = slot.next_block(sequence).expect("a block of the area");
                        slot.start(index, sequence);
                        slot.commit_end(BLOCK_HEADER_LEN);
                        let head = BlockHeader { sequence, thread, ..BlockHeader::default() };
                        let mut writer = BlockWriter::new(Order::NATIVE, 1024, &head);
                        while i < per_thread
                            && writer
                                .push(code, i, &[Value::Pointer(thread), Value::Address(i), Value::Word(i)])
                                .is_ok()
                        {
                            i += 1;
                        }
                        let bytes = writer.finish();
                        let used = Order::NATIVE.u32(&bytes[event_format::raw::BLOCK_USED_AT..]) as usize;
                        let block = slot.block_mut(index);
                        block.copy_from_slice(&bytes);
                        slot.commit_end(BLOCK_HEADER_LEN + used);
                        sequence += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(ring.claim(4).is_some(), "an exited thread's slot is reused");
        let bytes = ring.snapshot();
        let mut stream = Vec::new();
        std::io::Read::read_to_end(
            &mut RingStream::new(RingReader::open(bytes, Default::default()).unwrap()),
            &mut stream,
        )
        .unwrap();
        let mut decoder = Decoder::new(&stream[..]).unwrap();
        let catalog = Catalog::new(&decoder.header().sets);
        let mut discarded = 0;
        let mut kept: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
        while let Some(block) = decoder.next_block() {
            for entry in block.unwrap().entries(&catalog) {
                let Entry::Event(e) = entry else { panic!("{entry:?}") };
                let values: Vec<Value<'_>> = e.values().collect();
                if e.desc.code == event_format::builtin::DROPPED {
                    // The recorder's report (thread 0) of what the reused slot discarded.
                    assert_eq!(e.thread, 0);
                    if let [Value::Word(0), Value::Word(n)] = values.as_slice() {
                        discarded += n;
                    }
                } else if let [Value::Pointer(t), Value::Address(i), _] = values.as_slice() {
                    kept.entry(*t).or_default().push(*i);
                }
            }
        }
        // Two slots keep their rings: each thread's latest events, consecutive, ending with
        // its last. The third was reused by thread 4, which recorded nothing, and its previous
        // thread's ring is counted discarded. 30 records of 32 bytes fill a 1 KiB block.
        assert_eq!(kept.len(), 2, "{:?}", kept.keys());
        let mut all = 0;
        for (t, list) in &kept {
            assert_eq!(*list.last().unwrap(), per_thread - 1, "thread {t} ends with its last event");
            assert!(list.windows(2).all(|w| w[1] == w[0] + 1), "thread {t}: consecutive");
            all += list.len() as u64;
        }
        assert!(discarded > 0 && discarded <= per_thread, "{discarded} discarded");
        assert!(all + discarded <= 12 * 30, "no more than the area holds");
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! The ring file's protocols under loom: the slot claim (the real `claim_slot`, on loom's
    //! atomics), and the commit protocol (the writer's order of stores against the reader's
    //! copy-and-validate, on a model of one slot whose bytes are loom atomics).
    use super::*;
    use event_format::raw::split_position;
    use loom::sync::Arc;
    use loom::sync::atomic::{AtomicU32 as LoomU32, AtomicU64 as LoomU64, fence};
    use loom::thread;

    struct Table {
        owner: Vec<LoomU64>,
        live: Vec<LoomU32>,
        position: Vec<LoomU64>,
        refused: Vec<LoomU64>,
        /// Who holds each slot now, per the claims: the exclusivity checked.
        holder: Vec<LoomU64>,
        /// Whether each slot was ever claimed: a claim that says "fresh" must find it unused,
        /// or the previous thread's blocks would be discarded uncounted.
        ever: Vec<LoomU64>,
    }

    impl SlotTable for Table {
        type W64 = LoomU64;
        type W32 = LoomU32;
        fn slots(&self) -> u32 {
            self.owner.len() as u32
        }
        fn owner(&self, slot: u32) -> &LoomU64 {
            &self.owner[slot as usize]
        }
        fn live(&self, slot: u32) -> &LoomU32 {
            &self.live[slot as usize]
        }
        fn position(&self, slot: u32) -> &LoomU64 {
            &self.position[slot as usize]
        }
        fn refused(&self, slot: u32) -> &LoomU64 {
            &self.refused[slot as usize]
        }
    }

    fn table(slots: usize) -> Table {
        let words = |n| (0..n).map(|_| LoomU64::new(0)).collect::<Vec<_>>();
        Table {
            owner: words(slots),
            live: (0..slots).map(|_| LoomU32::new(0)).collect(),
            position: words(slots),
            refused: words(slots),
            holder: words(slots),
            ever: words(slots),
        }
    }

    /// Claims, holds the slot for a moment, and exits (as a thread's `Slot::drop` does).
    fn claim_hold_exit(t: &Table, thread: u64) {
        if let Some((i, previous)) = claim_slot(t, thread, |_, _| {}) {
            let reused = previous.is_some();
            let used = t.ever[i as usize].swap(1, Ordering::AcqRel);
            assert!(reused || used == 0, "slot {i}: claimed as fresh by thread {thread} after another used it");
            let before = t.holder[i as usize].swap(thread, Ordering::AcqRel);
            assert_eq!(before, 0, "slot {i}: thread {thread} claimed it while thread {before} held it");
            thread::yield_now();
            t.holder[i as usize].store(0, Ordering::Release);
            t.live[i as usize].store(0, Ordering::Release);
        }
    }

    #[test]
    fn loom_no_two_threads_hold_one_slot() {
        // One slot, three threads that come and go: the race that once gave two threads one
        // slot (a claim descheduled between its check and its compare-exchange).
        loom::model(|| {
            let t = Arc::new(table(1));
            let others: Vec<_> = (1..=2u64)
                .map(|id| {
                    let t = Arc::clone(&t);
                    thread::spawn(move || claim_hold_exit(&t, id))
                })
                .collect();
            claim_hold_exit(&t, 3);
            for h in others {
                h.join().unwrap();
            }
        });
    }

    #[test]
    fn loom_two_slots_two_threads_each_get_one() {
        loom::model(|| {
            let t = Arc::new(table(2));
            let other = {
                let t = Arc::clone(&t);
                thread::spawn(move || claim_slot(&*t, 1, |_, _| {}))
            };
            let mine = claim_slot(&*t, 2, |_, _| {});
            let theirs = other.join().unwrap();
            let (Some((a, None)), Some((b, None))) = (mine, theirs) else { panic!("both claim a fresh slot") };
            assert_ne!(a, b);
        });
    }

    /// Blocks in the model ring, records per block.
    const K: u64 = 2;
    const R: u64 = 2;

    /// One slot: K blocks of (header word, R record words) and a position.
    struct Ring {
        position: LoomU64,
        words: Vec<LoomU64>,
    }

    fn at(seq: u64, word: u64) -> usize {
        ((seq % K) * (R + 1) + word) as usize
    }

    /// The writer as `buffer` orders it: each block starts with `position = (seq, 0)`, a
    /// release fence, then the header; each record is stored, then committed with release.
    fn write(ring: &Ring, blocks: u64) {
        for seq in 0..blocks {
            ring.position.store(position(seq, 0), Ordering::Release);
            fence(Ordering::Release);
            ring.words[at(seq, 0)].store(seq, Ordering::Relaxed);
            for r in 0..R {
                ring.words[at(seq, 1 + r)].store(seq * R + r, Ordering::Relaxed);
                ring.position.store(position(seq, r as u32 + 1), Ordering::Release);
            }
        }
    }

    /// The reader as `RingReader::read_slot` does it: acquire the position, copy the blocks
    /// in the window, fence, re-read the position, keep only the blocks not reused since.
    /// Returns the (sequence, records) it kept.
    fn read(ring: &Ring) -> Vec<(u64, Vec<u64>)> {
        let (seq, end) = split_position(ring.position.load(Ordering::Acquire));
        let (seq, end) = (u64::from(seq), u64::from(end));
        let mut copies = Vec::new();
        for s in (seq + 1).saturating_sub(K)..=seq {
            let n = if s == seq { end } else { R };
            let header = ring.words[at(s, 0)].load(Ordering::Relaxed);
            let records: Vec<u64> = (0..n).map(|r| ring.words[at(s, 1 + r)].load(Ordering::Relaxed)).collect();
            copies.push((s, header, records));
        }
        fence(Ordering::Acquire);
        let (after, _) = split_position(ring.position.load(Ordering::Acquire));
        let first_kept = (u64::from(after) + 1).saturating_sub(K);
        copies
            .into_iter()
            .filter(|(s, _, records)| *s >= first_kept && !records.is_empty())
            .map(|(s, header, records)| {
                assert_eq!(header, s, "block {s}'s header is its own, not a reused block's");
                (s, records)
            })
            .collect()
    }

    #[test]
    fn loom_a_reader_keeps_only_whole_committed_records() {
        loom::model(|| {
            let ring = Arc::new(Ring {
                position: LoomU64::new(position(0, 0)),
                words: (0..K * (R + 1)).map(|_| LoomU64::new(u64::MAX)).collect(),
            });
            let writer = {
                let ring = Arc::clone(&ring);
                thread::spawn(move || write(&ring, 3))
            };
            for (s, records) in read(&ring) {
                for (r, value) in records.into_iter().enumerate() {
                    assert_eq!(value, s * R + r as u64, "block {s} record {r} is the one committed");
                }
            }
            writer.join().unwrap();
        });
    }
}

#[cfg(all(test, loom))]
mod loom_pool_tests {
    //! The shared data area's protocol under loom (docs/FORMAT.md, "Block table"): a block
    //! that another slot's ring takes while a reader copies it as the first slot's. The thief
    //! stores the block's table entry (release), a release fence, then its bytes, as
    //! `Slot::next_block` and the buffer's start of a block do; the reader copies the block,
    //! an acquire fence, then reads the entry again and keeps the copy only when it did not
    //! change, as `RingReader::read_pooled_slot` does. Whatever the interleaving, a kept copy
    //! is wholly the first slot's block.
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::{AtomicU64 as LoomU64, fence};
    use loom::thread;

    /// Words of the block: a header and two records.
    const WORDS: usize = 3;

    struct Area {
        tag: LoomU64,
        words: Vec<LoomU64>,
    }

    #[test]
    fn loom_a_copy_of_a_block_another_ring_took_is_never_kept() {
        loom::model(|| {
            // Slot 0's block 0, whole: words 10, 11, 12.
            let area = Arc::new(Area {
                tag: LoomU64::new(tag(0, 0)),
                words: (0..WORDS as u64).map(|w| LoomU64::new(10 + w)).collect(),
            });
            let thief = {
                let area = Arc::clone(&area);
                thread::spawn(move || {
                    // Slot 1 takes the block for its block 5.
                    area.tag.store(tag(1, 5), Ordering::Release);
                    fence(Ordering::Release);
                    for w in 0..WORDS {
                        // Relaxed: the writer's plain stores.
                        area.words[w].store(50 + w as u64, Ordering::Relaxed);
                    }
                })
            };
            let before = area.tag.load(Ordering::Acquire);
            if before == tag(0, 0) {
                let copy: Vec<u64> = area.words.iter().map(|w| w.load(Ordering::Relaxed)).collect();
                fence(Ordering::Acquire);
                if area.tag.load(Ordering::Relaxed) == before {
                    assert_eq!(copy, [10, 11, 12], "a kept copy is slot 0's block, whole");
                }
            }
            thief.join().unwrap();
        });
    }
}

#[cfg(all(test, loom))]
mod loom_pin_tests {
    //! The pin area's protocol under loom (docs/FORMAT.md, "Pin area"): the real writer
    //! ([`pin_into`]) on a model area whose bytes are loom atomics (one per 8 bytes), against
    //! the reader's copy-and-recheck as `RingReader::read_pins` does it.
    use super::*;
    use event_format::raw::split_position;
    use loom::sync::Arc;
    use loom::sync::atomic::{AtomicU64 as LoomU64, fence};
    use loom::thread;

    /// Bytes in each half: two entries of 32 bytes (a record of 8).
    const HALF: usize = 64;

    struct Area {
        position: LoomU64,
        dropped: LoomU64,
        /// Both halves, 8 bytes a word.
        words: Vec<LoomU64>,
    }

    impl PinArea for Area {
        type W64 = LoomU64;
        fn pin_half(&self) -> usize {
            HALF
        }
        fn pin_position(&self) -> &LoomU64 {
            &self.position
        }
        fn pins_dropped(&self) -> &LoomU64 {
            &self.dropped
        }
        fn write_pin(&self, half: u32, at: usize, entry: &[u8]) {
            assert!(at + entry.len() <= HALF && entry.len() % 8 == 0);
            for (i, chunk) in entry.chunks(8).enumerate() {
                let word = u64::from_ne_bytes(chunk.try_into().unwrap());
                // Relaxed: the real writer's plain stores.
                self.words[(half as usize * HALF + at) / 8 + i].store(word, Ordering::Relaxed);
            }
        }
        fn release_fence(&self) {
            fence(Ordering::Release);
        }
    }

    /// Pinned record `id`: a record of 8 bytes (code 0x20 + id, no arguments) of thread `id`
    /// at time `id`.
    fn record(id: u64) -> Vec<u8> {
        let mut r = vec![0u8; 8];
        Order::NATIVE.put_u16(&mut r, 0x20 + id as u16);
        Order::NATIVE.put_u16(&mut r[2..], 8);
        r
    }

    fn entry(id: u64) -> Vec<u8> {
        pin_entry(Order::NATIVE, id, id, &record(id))
    }

    /// The reader as `read_pins` does it, `tries` times at most: the position, an acquire
    /// fence, a copy of the current half up to its end, an acquire fence, the position again;
    /// the copy is kept when the epoch is the same. Returns the ids of the entries it kept, or
    /// `None` when every try met a compaction.
    fn read(area: &Area, tries: usize) -> Option<Vec<u64>> {
        for _ in 0..tries {
            let (epoch, end) = split_position(area.position.load(Ordering::Acquire));
            assert!(end as usize <= HALF, "the committed end is in its half");
            fence(Ordering::Acquire);
            let first = (epoch % 2) as usize * HALF / 8;
            let copy: Vec<u8> = (0..end as usize / 8)
                .flat_map(|i| area.words[first + i].load(Ordering::Relaxed).to_ne_bytes())
                .collect();
            fence(Ordering::Acquire);
            let (again, _) = split_position(area.position.load(Ordering::Acquire));
            if again != epoch {
                continue;
            }
            // Every entry whole, and the one pinned with its id: a torn copy would differ.
            let ids: Vec<u64> = copy
                .chunks(32)
                .map(|e| {
                    let id = Order::NATIVE.u64(&e[event_format::raw::pin_at::THREAD..]);
                    assert_eq!(e, &entry(id)[..], "entry of id {id} is the one pinned, whole");
                    id
                })
                .collect();
            return Some(ids);
        }
        None
    }

    #[test]
    fn loom_a_pin_area_reader_keeps_only_whole_committed_entries() {
        // Entries 1 and 2 fill half 0 before the reader starts; the writer then pins 3 (a
        // compaction into half 1, dropping 1) and 4 (a compaction back into half 0, the half
        // the reader may be copying, dropping 2), while the reader reads.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(|| {
            let area = Arc::new(Area {
                position: LoomU64::new(0),
                dropped: LoomU64::new(0),
                words: (0..2 * HALF / 8).map(|_| LoomU64::new(0)).collect(),
            });
            let mut state = FilePins::default();
            for id in 1..=2 {
                pin_into(&*area, &mut state, id, id, &record(id));
            }
            let writer = {
                let area = Arc::clone(&area);
                thread::spawn(move || {
                    for id in 3..=4 {
                        pin_into(&*area, &mut state, id, id, &record(id));
                    }
                    state
                })
            };
            if let Some(ids) = read(&area, 2) {
                // The latest two pinned when it read: consecutive, never fewer than the two
                // that any committed position names.
                assert!([vec![1, 2], vec![2, 3], vec![3, 4]].contains(&ids), "{ids:?}");
            }
            let state = writer.join().unwrap();
            assert_eq!(state.dropped, 2);
            assert_eq!(area.dropped.load(Ordering::Relaxed), 2);
            assert_eq!(read(&area, 1), Some(vec![3, 4]), "after the writer: its last two");
        });
    }
}

#[cfg(all(test, unix, not(loom), not(miri)))]
mod backing_tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// Both ways of backing a ring file leave its whole length allocated, not sparse.
    #[test]
    fn a_backed_file_has_every_block_allocated() {
        let dir = std::env::temp_dir().join(format!("ringfile-back-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let len = (1 << 20) + 4096;
        for (name, how) in [("fallocate", back as fn(&File, u64) -> io::Result<()>), ("zeros", write_zeros)] {
            let path = dir.join(name);
            let file = File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
            how(&file, len).unwrap();
            let meta = file.metadata().unwrap();
            assert_eq!(meta.len(), len, "{name}: the whole length");
            assert!(meta.blocks() * 512 >= len, "{name}: {} bytes allocated of {len}", meta.blocks() * 512);
            let _ = std::fs::remove_file(&path);
        }
        let _ = std::fs::remove_dir(&dir);
    }
}
