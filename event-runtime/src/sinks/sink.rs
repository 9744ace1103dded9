//! The stream sinks: the event file and the memory copy that sealed blocks are written to, in
//! order (the ring file is not one of them: threads write it in place, `ringfile`).
//!
//! A sink is plain I/O with no knowledge of threads or policies, so that the session, the
//! writer thread and the stop can all write through it under one lock (`WriterOwned::sinks`). A
//! write error gives the one event file up with one line on stderr and is returned by the
//! stop; under segments it ends the segment and the recording goes on in a new one (as a full
//! disk does). It never stops the program.

use crate::incident::history::{Entry, History, Place};
use crate::sinks::segments::Segments;
use crate::sinks::space::{Room, is_no_space, make_room};
use event_format::builtin::{DROPPED, THREAD_NAME};
use event_format::raw::stop_block;
use event_format::wire::{BLOCK_HEADER_LEN, BlockHeader, BlockWriter, Order, RecordIter, Stop, StopCause, Text, Value};
use event_format::wire::{Packer, Packing};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often a recording of segments that found the disk full tries a new segment.
const RETRY_PERIOD: Duration = Duration::from_secs(1);
/// How often the writer looks whether the segment being written still has its `.open` name.
const NAME_CHECK_PERIOD: Duration = Duration::from_secs(1);

/// Whether the event file can be written (docs/guide/long-running-services.md, "A full
/// disk").
#[derive(Debug, Default)]
enum Writable {
    /// Blocks go to the file.
    #[default]
    Yes,
    /// One event file, ended by a stop block (disk full or write error) at `stop_at`, in room
    /// reserved for it: later blocks are counted as unwritten, and the stop rewrites the
    /// block there with the final count.
    Ended { stop_at: u64, cause: StopCause, sequence: u64, time: u64 },
    /// Segments: the last one was sealed for want of room; blocks are counted for the next
    /// segment's `lost_between` until a new segment can be made (tried every second).
    Waiting { lost_between: u64, tried: Instant },
}

/// How the writer stands against the threads that hand it blocks, which decides how a block
/// is packed (`write::write_batch` judges it by the pool's free blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pace {
    /// Keeping up (or not the writer's turn): the packing as configured.
    Keep,
    /// Behind (fewer than a quarter of the pool's blocks free), or on a CPU its program keeps
    /// busy (`writer::contention`): zstd at its fast level
    /// ([`event_format::wire::Packer::pack_fast`]), less than half level 5's time a block, so
    /// that a writer short of time packs twice the blocks before it has to write them whole,
    /// and one that shares its program's CPU takes half the time from it.
    Behind,
    /// Far behind (fewer than an eighth free): written whole, so that no event is dropped for
    /// the sake of size.
    Hurry,
}

/// The stream sinks: where sealed blocks are written, in order.
#[derive(Debug, Default)]
pub(crate) struct Sinks {
    /// The event file (under segments: the segment being written, by its final name; the
    /// file is at its `.open` name until sealed).
    file: Option<(PathBuf, File)>,
    memory: Option<Vec<u8>>,
    /// The first write error; the file sink is given up after it.
    failed: Option<String>,
    /// Blocks the file sink could not write.
    unwritten: u64,
    /// Events (and the losses they reported) the file could not hold: the stop marker's
    /// `unwritten` (docs/FORMAT.md, "The clean stop").
    unwritten_events: u64,
    /// The next sequence number of the recorder's own blocks (thread 0).
    recorder_sequence: u64,
    /// What the blocks written so far hold, for the clean-stop marker (docs/FORMAT.md, "The
    /// clean stop").
    written: Stop,
    /// Packs blocks before they are written, when packing is on (docs/FORMAT.md, "Packed
    /// blocks"): the writer's one packing call is [`Sinks::emit`]'s `Packer::pack`.
    packer: Option<Packer>,
    /// Where a block is packed; reused.
    packed: Vec<u8>,
    /// Bytes written to the event file (or segment).
    file_len: u64,
    /// Bytes kept free after the file's end for its stop block: one whole block.
    reserve: u64,
    /// Where the room taken on the disk for the file ends (`space::make_room`): taken a
    /// block ahead of what a write needs, so that one `fallocate` serves several packed
    /// blocks (0: none taken yet in this file).
    reserved_to: u64,
    /// The recording's segments (`EVENT_ROTATE`), when it writes them.
    segments: Option<Segments>,
    /// The `lost_between` of the segment being written.
    lost_between: u64,
    /// The latest block start written: a stop block the writer writes on its own is at it.
    last_time: u64,
    writable: Writable,
    /// When the segment being written was last found at its `.open` name.
    name_checked: Option<Instant>,
    /// The segment being written was found gone from its `.open` name: to be sealed.
    name_gone: bool,
    /// The disk was found below the budget's floor of free space (`Keep::free`): the segment
    /// is to end as for a full disk.
    floor_reached: bool,
    /// A segment that could not be written, not even its stop block, was said (once).
    said_write_error: bool,
    /// Under segments: the threads' names as the recording knew them at the last rotation
    /// (`session::Shared::names`), for the segments to name the threads whose blocks they hold.
    known: HashMap<u64, String>,
    /// Under segments: the threads the segment being written names already.
    named: HashSet<u64>,
    /// Under a streaming policy: the blocks written lately and where (`history`), for
    /// snapshots to read their windows back from.
    history: Option<History>,
}

impl Sinks {
    /// Sinks to `file` (claimed by `files::claim`, or a recording's first segment with its
    /// `segments`) and, when `memory`, to memory; blocks packed as `pack` says (`None`: not);
    /// room for a stop block of `block_size` bytes kept after the file's end.
    pub(crate) fn new(
        file: Option<(PathBuf, File)>,
        memory: bool,
        pack: Option<Packing>,
        block_size: u32,
        segments: Option<Segments>,
    ) -> Sinks {
        Sinks {
            file,
            memory: memory.then(Vec::new),
            packer: pack.map(Packer::new),
            reserve: u64::from(block_size),
            segments,
            ..Sinks::default()
        }
    }

    /// The event file's path, while the file sink is written (`None` without one, or after
    /// a write failed and it was given up). Under segments, the segment being written, by the
    /// name it has now (`NAME.open`).
    pub(crate) fn file_path(&self) -> Option<PathBuf> {
        let (path, _) = self.file.as_ref()?;
        Some(if self.segments.is_some() { crate::sinks::segments::open_path(path) } else { path.clone() })
    }

    /// Whether there is no sink at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.file.is_none() && self.memory.is_none() && self.segments.is_none()
    }

    /// Writes the header (or another piece that must be whole) to every sink; a failure gives
    /// the file up.
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        if let Some(memory) = &mut self.memory {
            memory.extend_from_slice(bytes);
        }
        if self.file.is_some() {
            if let Err(e) = self.write_file(bytes, true) {
                self.give_up(&e);
            }
        } else if self.failed.is_some() {
            self.unwritten += 1;
        }
    }

    /// Writes `bytes` at the file's end, with room for a stop block after them when
    /// `reserve` (the stop block itself needs none: its room was kept).
    ///
    /// The room is taken on the disk a block further ahead than the write needs, and again
    /// only once a write needs more: a packed block is a few KiB, and an `fallocate` (and the
    /// file size limit's `getrlimit`) before each took the writer 7 to 8 % of its time on a
    /// service's busy CPU (BENCHMARKS.md, "where the writer's time goes"). Where the room
    /// ahead cannot be had (a disk nearly full, the file size limit), the write takes what it
    /// needs alone, as before. While the file is written, at most two blocks of room past its
    /// end are taken; [`give_back_room`](Self::give_back_room) returns them when it is closed.
    fn write_file(&mut self, bytes: &[u8], reserve: bool) -> io::Result<()> {
        let Some((_, file)) = &mut self.file else { return Ok(()) };
        let extra = if reserve { self.reserve } else { 0 };
        let need = self.file_len + bytes.len() as u64 + extra;
        if need > self.reserved_to {
            let ahead = need + self.reserve;
            self.reserved_to = match make_room(file, self.file_len, ahead - self.file_len) {
                Room::Made => ahead,
                Room::Full(_) => match make_room(file, self.file_len, need - self.file_len) {
                    Room::Made => need,
                    Room::Full(e) => return Err(e),
                },
            };
        }
        match file.write_all(bytes) {
            Ok(()) => {
                self.file_len += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Whatever part was written goes: the file ends at its last whole block. The
                // room is asked for again before the next write (the cut may have freed it).
                let _ = file.set_len(self.file_len);
                let _ = std::io::Seek::seek(file, std::io::SeekFrom::Start(self.file_len));
                self.reserved_to = 0;
                Err(e)
            }
        }
    }

    /// Gives the file sink up after `e`, saying so in one line.
    fn give_up(&mut self, e: &io::Error) {
        if let Some((path, _)) = &self.file {
            let message =
                format!("writing the event file {} failed: {e}; the rest of the trace is not in it", path.display());
            eprintln!("event-runtime: {message}");
            self.failed = Some(message);
        }
        self.file = None;
    }

    /// Keeps an index of the blocks written from now on (`history`), for snapshots of a
    /// streaming recording; with `hold`, the disk budget deletes no segment while it is above
    /// 0 (triggered snapshots wait for their windows).
    pub(crate) fn keep_history(
        &mut self,
        history: History,
        hold: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
    ) {
        self.history = Some(history);
        if let (Some(segments), Some(hold)) = (&mut self.segments, hold) {
            segments.hold_with(hold);
        }
    }

    /// The blocks of a snapshot's window (`History::window`: from `from`, or as many as the
    /// buffer holds before `trigger`, and all after), each with where to read its bytes: a
    /// copy of the memory sink's, or a file opened now (the segment, or the one event file),
    /// which stays readable after the budget deletes it. Empty without a history.
    pub(crate) fn window(&self, from: Option<u64>, trigger: u64) -> Vec<(Entry, WindowBytes)> {
        let Some(history) = &self.history else { return Vec::new() };
        let mut files: HashMap<u64, Option<std::sync::Arc<File>>> = HashMap::new();
        let current = self.file.as_ref().map(|(_, f)| f);
        let mut out = Vec::new();
        for entry in history.window(from, trigger) {
            let bytes = match entry.place {
                Place::Memory(at) => {
                    let Some(memory) = &self.memory else { continue };
                    let range = at as usize..(at as usize + entry.len as usize);
                    let Some(bytes) = memory.get(range) else { continue };
                    WindowBytes::Copied(bytes.to_vec())
                }
                Place::File { segment, offset } => {
                    let file = files.entry(segment).or_insert_with(|| {
                        let file = match &self.segments {
                            Some(segments) => segments.open_for_reading(segment, current),
                            None => current.and_then(|f| f.try_clone().ok()),
                        };
                        file.map(std::sync::Arc::new)
                    });
                    let Some(file) = file else { continue };
                    WindowBytes::File(std::sync::Arc::clone(file), offset)
                }
            };
            out.push((entry, bytes));
        }
        out
    }

    /// The newest number in the recording of `thread`'s blocks written (see
    /// `History::newest`).
    pub(crate) fn newest_written(&self, thread: u64) -> Option<u64> {
        self.history.as_ref()?.newest(thread)
    }

    /// Whether the blocks are packed (`pack` on): the writer's turn counts a block written
    /// whole as little work.
    pub(crate) fn packs(&self) -> bool {
        self.packer.is_some()
    }

    /// Writes one sealed block to every sink: packed when `pack` is on and the block is worth
    /// packing, as `pace` says (the writer's standing against its threads). Under segments,
    /// the block gets its thread's number in the segment first.
    pub(crate) fn write_block(&mut self, block: &[u8], pace: Pace) {
        let sequence = BlockHeader::read(Order::NATIVE, block).sequence;
        if self.segments.is_some() {
            let thread = BlockHeader::read(Order::NATIVE, block).thread;
            self.name_in_segment(thread, block);
        }
        if let Some(segments) = &mut self.segments {
            let thread = BlockHeader::read(Order::NATIVE, block).thread;
            if segments.renumbers(thread) {
                let mut copy = block.to_vec();
                segments.renumber(&mut copy);
                return self.put_numbered(&copy, pace, sequence);
            }
            let mut header = [0u8; BLOCK_HEADER_LEN];
            header.copy_from_slice(&block[..BLOCK_HEADER_LEN]);
            segments.renumber(&mut header);
        }
        self.put_numbered(block, pace, sequence);
    }

    /// Under segments, before a block of `thread` goes into the segment being written: names
    /// the thread in it once (a block of thread 0 with its `ThreadName`), unless the block
    /// names it itself (a thread's first block) or its name is not known. So each segment
    /// names every thread whose blocks it holds, and no other: a program that runs many short
    /// threads does not repeat all their names in every segment.
    fn name_in_segment(&mut self, thread: u64, block: &[u8]) {
        if thread == 0 || self.named.contains(&thread) || self.file.is_none() || !matches!(self.writable, Writable::Yes)
        {
            return;
        }
        if names_itself(block, thread) {
            self.named.insert(thread);
            return;
        }
        self.name_threads([thread], self.last_time);
    }

    /// Under segments: learns the names of threads that started since the last rotation
    /// (`WriterOwned::learn_names`), which the segment being written may have to name.
    pub(crate) fn learn_names(&mut self, names: Vec<(u64, String)>) {
        if self.segments.is_none() {
            return;
        }
        for (thread, name) in names {
            self.known.entry(thread).or_insert(name);
        }
    }

    /// Forgets the names of `threads`, which ended and whose blocks are written.
    pub(crate) fn forget_threads(&mut self, threads: &[u64]) {
        for thread in threads {
            self.known.remove(thread);
        }
    }

    /// Under segments: names in the segment being written those of `threads` it does not name
    /// yet and whose names are known, in blocks of thread 0 at `time`.
    pub(crate) fn name_threads(&mut self, threads: impl IntoIterator<Item = u64>, time: u64) {
        if self.segments.is_none() || self.file.is_none() || !matches!(self.writable, Writable::Yes) {
            return;
        }
        let mut names = Vec::new();
        for thread in threads {
            if thread != 0
                && !self.named.contains(&thread)
                && let Some(name) = self.known.get(&thread)
            {
                self.named.insert(thread);
                names.push((THREAD_NAME, vec![Value::Word(thread), Value::Str(Text::new(name))]));
            }
        }
        if names.is_empty() {
            return;
        }
        let blocks = recorder_blocks(self.reserve as u32, self.recorder_sequence, time, &names);
        self.recorder_sequence += blocks.len() as u64;
        for block in &blocks {
            self.put_block(block, Pace::Keep);
        }
    }

    fn put_block(&mut self, block: &[u8], pace: Pace) {
        let sequence = BlockHeader::read(Order::NATIVE, block).sequence;
        self.put_numbered(block, pace, sequence);
    }

    /// [`put_block`](Self::put_block) of a block whose number in the recording is `sequence`
    /// (a segment may have given it another), noted in the history.
    fn put_numbered(&mut self, block: &[u8], pace: Pace, sequence: u64) {
        let counts = block_counts(block);
        match &mut self.writable {
            Writable::Yes => {}
            Writable::Ended { .. } => {
                self.unwritten_events = self.unwritten_events.saturating_add(counts.0 + counts.1);
                return;
            }
            Writable::Waiting { lost_between, .. } => {
                *lost_between = lost_between.saturating_add(counts.0 + counts.1);
                return;
            }
        }
        self.last_time = BlockHeader::read(Order::NATIVE, block).base_time.max(self.last_time);
        let (memory_at, file_at) = (self.memory.as_ref().map(|m| m.len() as u64), self.file_len);
        let result = self.emit(block, pace, true);
        if let (Some(segments), Some(Ok(()))) = (&mut self.segments, &result) {
            segments.wrote_block_of(BlockHeader::read(Order::NATIVE, block).thread);
        }
        if let Some(history) = &mut self.history
            && !matches!(result, Some(Err(_)))
        {
            let header = BlockHeader::read(Order::NATIVE, block);
            let (place, len) = match (memory_at, &self.memory) {
                (Some(at), Some(memory)) => (Some(Place::Memory(at)), memory.len() as u64 - at),
                _ if result.is_some() => {
                    let segment = self.segments.as_ref().map_or(0, Segments::index);
                    (Some(Place::File { segment, offset: file_at }), self.file_len - file_at)
                }
                _ => (None, 0),
            };
            if let Some(place) = place {
                history.push(Entry {
                    thread: header.thread,
                    sequence,
                    base_time: header.base_time,
                    len: len as u32,
                    place,
                    report: header.thread == 0 && counts.1 > header.lost,
                });
            }
        }
        match result {
            Some(Err(e)) => {
                self.unwritten_events = self.unwritten_events.saturating_add(counts.0 + counts.1);
                let cause = if is_no_space(&e) { StopCause::DiskFull } else { StopCause::WriteError };
                self.cannot_write(cause, &e);
                return;
            }
            Some(Ok(())) => {}
            None if self.failed.is_some() => {
                self.unwritten += 1;
                return;
            }
            None => {}
        }
        self.add(counts);
    }

    /// Writes `block` to every sink, packed when packing is on, `pace` is not
    /// [`Pace::Hurry`] and it is worth it, with room kept after it for a stop block when
    /// `reserve`; the file's result (`None` without a file). Counts nothing.
    fn emit(&mut self, block: &[u8], pace: Pace, reserve: bool) -> Option<io::Result<()>> {
        // Taken out and put back: `write_file` borrows the whole of `self`.
        let mut packed = std::mem::take(&mut self.packed);
        packed.clear();
        let is_packed = self.packer.as_mut().is_some_and(|p| match pace {
            Pace::Keep => p.pack(Order::NATIVE, block, &mut packed),
            Pace::Behind => p.pack_fast(Order::NATIVE, block, &mut packed),
            Pace::Hurry => false,
        });
        let bytes: &[u8] = if is_packed { &packed } else { block };
        if let Some(memory) = &mut self.memory {
            memory.extend_from_slice(bytes);
        }
        let result = if self.file.is_some() { Some(self.write_file(bytes, reserve)) } else { None };
        self.packed = packed;
        result
    }

    /// The file cannot take more (`cause`: a full disk or another error): the stream ends
    /// here with its stop block, in the room kept for it, saying why and how many events it
    /// could not hold. One event file stays open, its stop block rewritten at the stop with
    /// the final count; a segment is sealed, and the recording waits for room for the next.
    fn cannot_write(&mut self, cause: StopCause, e: &io::Error) {
        let time = self.last_time;
        let sequence = self.recorder_sequence;
        let stop_at = self.file_len;
        let stop = Stop { cause, unwritten: self.unwritten_events, ..self.written };
        let block = stop_block(Order::NATIVE, self.reserve as u32, sequence, time, &stop);
        let what = if cause == StopCause::DiskFull { "no room on the disk" } else { "a write error" };
        let path = self.file.as_ref().map(|(p, _)| p.display().to_string()).unwrap_or_default();
        if let Err(again) = self.write_file(&block, false) {
            if self.segments.is_some() {
                // Not even the stop block: the segment ends at its last whole block, unmarked,
                // under its `.open` name (a sealed name promises a marker), and the recording
                // goes on in a new segment, which counts what this one could not hold.
                if !std::mem::replace(&mut self.said_write_error, true)
                    && let Some((path, _)) = &self.file
                {
                    let open = crate::sinks::segments::open_path(path);
                    eprintln!(
                        "event-runtime: writing the segment {} failed ({what}: {e}; then {again}): it stays under that name without a stop marker, and the recording goes on in a new segment once one can be written (events until then are counted, not written)",
                        open.display()
                    );
                }
                self.file = None;
                self.name_gone = false;
                if let Some(segments) = &mut self.segments {
                    segments.abandon();
                }
                self.writable = Writable::Waiting { lost_between: self.unwritten_events, tried: Instant::now() };
                return;
            }
            // Not even the stop block: the file ends at its last whole block, unmarked.
            let message = format!(
                "writing the event file {path} failed ({what}: {e}; then {again}); the rest of the trace is not in it"
            );
            eprintln!("event-runtime: {message}");
            self.failed = Some(message);
            self.file = None;
            self.writable = Writable::Ended { stop_at, cause, sequence, time };
            return;
        }
        self.recorder_sequence += 1;
        if self.segments.is_some() {
            eprintln!(
                "event-runtime: {what} for the segment {path} ({e}): it is sealed with what it holds, and the recording goes on in a new segment once there is room (events until then are counted, not written)"
            );
            self.seal(true);
            self.writable = Writable::Waiting { lost_between: 0, tried: Instant::now() };
        } else {
            eprintln!(
                "event-runtime: {what} for the event file {path} ({e}): it ends here, its stop marker says so, and the events recorded from now on are counted, not written"
            );
            self.writable = Writable::Ended { stop_at, cause, sequence, time };
        }
    }

    /// Seals the segment being written (its stop block written) and lets go of its file;
    /// `more` when another segment follows (the budget then deletes: `Segments::seal`).
    fn seal(&mut self, more: bool) {
        let accounted = self
            .written
            .events
            .saturating_add(self.written.lost)
            .saturating_add(self.unwritten_events)
            .saturating_add(self.lost_between);
        self.name_gone = false;
        self.give_back_room();
        if let (Some(segments), Some((path, file))) = (&mut self.segments, self.file.take()) {
            segments.seal(&path, &file, accounted, more);
            if let (Some(upto), Some(history)) = (segments.take_removed(), &mut self.history) {
                history.forget_segments(upto);
            }
        }
    }

    /// Opens the next segment, which says `lost_between` events were not written before it,
    /// and writes its header and `names` (blocks of thread 0 numbered from 0: the names, labels
    /// and strings its events use). `false` when it cannot be made now (no room: tried again
    /// later; a name taken: said).
    fn open_next(&mut self, lost_between: u64, names: Vec<Vec<u8>>, pins: &[crate::incident::trigger::Pinned]) -> bool {
        let Some(segments) = &mut self.segments else { return false };
        let opened = match segments.open(lost_between) {
            Ok(opened) => opened,
            Err(e) => {
                if !is_no_space(&e) && !matches!(self.writable, Writable::Waiting { .. }) {
                    eprintln!("event-runtime: cannot start the next segment: {e}; trying again every second");
                }
                return false;
            }
        };
        let open = crate::sinks::segments::open_path(&opened.path);
        self.file = Some((opened.path, opened.file));
        self.file_len = 0;
        self.reserved_to = 0;
        if let Err(e) = self.write_file(&opened.header, true) {
            if let Some((_, file)) = self.file.take()
                && crate::files::names(&open, &file)
            {
                let _ = std::fs::remove_file(&open);
            }
            if !is_no_space(&e) {
                eprintln!(
                    "event-runtime: cannot start the next segment {}: {e}; trying again every second",
                    open.display()
                );
            }
            return false;
        }
        self.written = Stop::default();
        self.named.clear();
        self.unwritten_events = 0;
        self.recorder_sequence = 0;
        self.lost_between = lost_between;
        self.writable = Writable::Yes;
        self.recorder_sequence = names.len() as u64;
        for block in &names {
            self.put_block(block, Pace::Keep);
        }
        self.repeat_pins(pins);
        true
    }

    /// In a segment just opened: the pinned events (`EVENT_PIN`) that earlier segments hold,
    /// repeated, so that this segment alone, and the recording after the budget deleted any of
    /// its segments, shows them (as names, labels and strings are repeated). Each thread's in
    /// blocks of its own, in time order, numbered just below its first block in the segment
    /// (`Segments::number_below`), so that its blocks follow one another from 0; a thread with
    /// fewer blocks before this segment than they need keeps the newest that fit.
    fn repeat_pins(&mut self, pins: &[crate::incident::trigger::Pinned]) {
        let Some(segments) = &mut self.segments else { return };
        let mut by_thread: std::collections::BTreeMap<u64, Vec<&crate::incident::trigger::Pinned>> = Default::default();
        for p in pins {
            if p.sequence < segments.next_of(p.thread) {
                by_thread.entry(p.thread).or_default().push(p);
            }
        }
        let block_size = self.reserve as u32;
        for (thread, mut records) in by_thread {
            records.sort_by_key(|p| p.time);
            let mut blocks: Vec<Vec<u8>> = Vec::new();
            let mut writer: Option<BlockWriter> = None;
            for p in records {
                let Some(code) = p.record.get(..2).map(|c| Order::NATIVE.u16(c)) else { continue };
                let args = &p.record[event_format::wire::RECORD_HEADER_LEN.min(p.record.len())..];
                loop {
                    let w = writer.get_or_insert_with(|| {
                        let header = BlockHeader { thread, base_time: p.time, ..BlockHeader::default() };
                        BlockWriter::new(Order::NATIVE, block_size, &header)
                    });
                    match w.push_record(code, p.time, args) {
                        Err(event_format::wire::PushError::Full) if !w.is_empty() => {
                            blocks.extend(writer.take().map(BlockWriter::finish));
                        }
                        _ => break,
                    }
                }
            }
            blocks.extend(writer.take().filter(|w| !w.is_empty()).map(BlockWriter::finish));
            let Some(segments) = &mut self.segments else { return };
            let fit = (segments.next_of(thread) as usize).min(blocks.len());
            let skip = blocks.len() - fit;
            let blocks = &mut blocks[skip..];
            let Some(first) = segments.number_below(thread, fit as u64) else { continue };
            for (i, block) in blocks.iter_mut().enumerate() {
                let header = BlockHeader { sequence: first + i as u64, ..BlockHeader::read(Order::NATIVE, block) };
                header.write(Order::NATIVE, block);
                event_format::raw::seal_block_in_place(Order::NATIVE, block);
                self.write_block(block, Pace::Keep);
            }
        }
    }

    /// The writer's turn at the segments: seals the segment being written and opens the next
    /// when it is due (its size, its age, or asked for), or, after a full disk, tries again for
    /// room (at most every second). `names` are the blocks of thread 0, numbered from 0, that
    /// repeat the names, labels and strings in a new segment. `time` is the stop block's.
    pub(crate) fn rotate_if_due(
        &mut self,
        time: u64,
        names: Vec<Vec<u8>>,
        threads: Vec<(u64, String)>,
        pins: &[crate::incident::trigger::Pinned],
    ) {
        if !self.rotation_due() {
            return;
        }
        self.known = threads.into_iter().collect();
        match self.writable {
            Writable::Waiting { lost_between, .. } => {
                if !self.open_next(lost_between, names, pins) {
                    self.writable = Writable::Waiting { lost_between, tried: Instant::now() };
                }
            }
            Writable::Yes if std::mem::take(&mut self.floor_reached) => {
                let why = io::Error::new(
                    io::ErrorKind::StorageFull,
                    "the disk holds less free space than EVENT_KEEP's free= keeps, and no sealed segment is left to delete",
                );
                self.cannot_write(StopCause::DiskFull, &why);
            }
            Writable::Yes => {
                self.write_stop(time, StopCause::Rotated);
                self.seal(true);
                if !self.open_next(0, names, pins) {
                    self.writable = Writable::Waiting { lost_between: 0, tried: Instant::now() };
                }
            }
            Writable::Ended { .. } => {}
        }
    }

    /// Whether [`rotate_if_due`](Self::rotate_if_due) has anything to do now: the segment is
    /// due, or (looked at once a second) someone else removed or renamed it while it was
    /// written, so that its events would go to a file that no name reaches (sealing it says so
    /// once, and the recording goes on in the next segment), or the disk fell below the
    /// budget's floor of free space with nothing left to delete (the segment ends as for a
    /// full disk).
    pub(crate) fn rotation_due(&mut self) -> bool {
        let Some(segments) = &mut self.segments else { return false };
        match self.writable {
            Writable::Waiting { tried, .. } => tried.elapsed() >= RETRY_PERIOD || segments.requested,
            Writable::Yes => {
                let Some((path, file)) = &self.file else { return false };
                if self.name_gone || segments.due(self.file_len) {
                    return true;
                }
                if self.name_checked.is_some_and(|t| t.elapsed() < NAME_CHECK_PERIOD) {
                    return false;
                }
                self.name_checked = Some(Instant::now());
                self.name_gone = !crate::files::names(&crate::sinks::segments::open_path(path), file);
                self.floor_reached = segments.below_floor();
                self.name_gone || self.floor_reached
            }
            Writable::Ended { .. } => false,
        }
    }

    /// Asks for the segment being written to be sealed and a new one started (by the writer
    /// thread, at its next turn). The number of the segment being written, `None` without
    /// segments.
    pub(crate) fn request_rotation(&mut self) -> Option<u64> {
        let segments = self.segments.as_mut()?;
        segments.requested = true;
        Some(segments.index())
    }

    /// The number of the segment being written (or of the next one), `None` without segments.
    pub(crate) fn segment_index(&self) -> Option<u64> {
        self.segments.as_ref().map(Segments::index)
    }

    /// Writes the stream's stop block (docs/FORMAT.md, "The clean stop") saying `cause`,
    /// counting what was written. A single event file that a full disk ended gets its stop
    /// block rewritten in place with the final count of unwritten events; segments waiting for
    /// room try once more for a segment that counts what was not written.
    pub(crate) fn write_stop(&mut self, time: u64, cause: StopCause) {
        match std::mem::take(&mut self.writable) {
            Writable::Yes => {}
            Writable::Ended { stop_at, cause, sequence, time } => {
                self.rewrite_stop(stop_at, cause, sequence, time);
                return;
            }
            Writable::Waiting { lost_between, .. } => {
                if !self.open_next(lost_between, Vec::new(), &[]) {
                    if lost_between > 0 {
                        eprintln!(
                            "event-runtime: {lost_between} events were not written: no room for a new segment since the disk was full"
                        );
                    }
                    return;
                }
            }
        }
        let stop = Stop { cause, unwritten: self.unwritten_events, ..self.written };
        let block = stop_block(Order::NATIVE, self.reserve as u32, self.recorder_sequence, time, &stop);
        self.recorder_sequence += 1;
        if let Some(Err(e)) = self.emit(&block, Pace::Keep, false) {
            self.give_up(&e);
        }
    }

    /// Writes the stop block of an event file that a full disk ended again, in its place, with
    /// the events counted since.
    fn rewrite_stop(&mut self, stop_at: u64, cause: StopCause, sequence: u64, time: u64) {
        let Some((path, file)) = &self.file else { return };
        let stop = Stop { cause, unwritten: self.unwritten_events, ..self.written };
        let block = stop_block(Order::NATIVE, self.reserve as u32, sequence, time, &stop);
        #[cfg(unix)]
        if let Err(e) = std::os::unix::fs::FileExt::write_all_at(file, &block, stop_at) {
            eprintln!("event-runtime: updating the stop block of {} failed: {e}", path.display());
        }
        if self.unwritten_events > 0 {
            self.failed = Some(format!(
                "the event file {} ended when the disk was full: {} events were not written",
                path.display(),
                self.unwritten_events
            ));
        }
        self.writable = Writable::Ended { stop_at, cause, sequence, time };
    }

    fn add(&mut self, (events, lost): (u64, u64)) {
        let w = &mut self.written;
        w.blocks += 1;
        w.events += events;
        w.lost = w.lost.saturating_add(lost);
    }

    /// What the blocks written so far hold: the clean-stop marker's counts.
    pub(crate) fn written(&self) -> Stop {
        self.written
    }

    /// The sequence number of the recorder's next own block (thread 0).
    pub(crate) fn recorder_sequence(&self) -> u64 {
        self.recorder_sequence
    }

    /// Counts `blocks` more of the recorder's own blocks as written.
    pub(crate) fn advance_recorder_sequence(&mut self, blocks: u64) {
        self.recorder_sequence += blocks;
    }

    /// Records a failure that is not a write's (copying the ring file at stop).
    pub(crate) fn fail(&mut self, message: String) {
        self.failed = Some(message);
    }

    /// The memory sink's stream so far (empty without one).
    pub(crate) fn memory_copy(&self) -> Vec<u8> {
        self.memory.clone().unwrap_or_default()
    }

    /// The end of the sinks: the first failure, or else the memory sink's stream (empty
    /// without one).
    pub(crate) fn finish(&mut self) -> io::Result<Vec<u8>> {
        match self.failed.take() {
            Some(message) => Err(io::Error::other(message)),
            None => Ok(self.memory.take().unwrap_or_default()),
        }
    }

    /// Flushes the event file, if there is one.
    pub(crate) fn flush_file(&self) {
        if let Some((_, file)) = &self.file {
            let _ = (&*file).flush();
        }
    }

    /// Closes the event file, which releases its lock (`files`): the recording has ended, and
    /// another may claim the path. The last segment is sealed.
    pub(crate) fn close_file(&mut self) {
        self.flush_file();
        if self.segments.is_some() {
            self.seal(false);
        }
        self.give_back_room();
        self.file = None;
    }

    /// Gives back the room taken on the disk past the file's end (`write_file` takes it a
    /// block ahead), before the file is let go: a cut at the file's own length frees it where
    /// the file system keeps it (ext4 and tmpfs do), so that the disk budget, which counts
    /// files' lengths, sees what a closed file takes. Nothing of the file's bytes changes.
    fn give_back_room(&mut self) {
        if let Some((_, file)) = &self.file
            && self.reserved_to > 0
            && let Ok(meta) = file.metadata()
        {
            let _ = file.set_len(meta.len());
        }
        self.reserved_to = 0;
    }

    /// Closes the event file of a recording that never ran (its writer thread could not
    /// start), and removes it when it holds no event and no loss (a trace of nothing that
    /// would say it stopped cleanly) and its path still names it: it is this recording's own
    /// file, made by it, and removed while its lock is held, before another may claim the path.
    pub(crate) fn discard_file(&mut self) {
        if let Some(path) = self.file_path()
            && let Some((_, file)) = &self.file
            && self.written.events == 0
            && self.written.lost == 0
        {
            crate::files::discard(&path, file);
            self.file = None;
        }
        self.close_file();
    }

    /// Gives the event file up, whatever it holds, and removes it when its path still names
    /// `ours` (a copy of its descriptor, kept by the caller that made the file): a snapshot
    /// cut short (`snapshot`).
    pub(crate) fn discard_as(&mut self, path: &std::path::Path, ours: &File) {
        self.file = None;
        crate::files::discard(path, ours);
    }

    /// The file sink's descriptor, for a fatal signal's last write.
    #[cfg(unix)]
    pub(crate) fn raw_fd(&self) -> Option<i32> {
        use std::os::fd::AsRawFd;
        self.file.as_ref().map(|(_, f)| f.as_raw_fd())
    }
}

/// Where a block of a snapshot's window is read from ([`Sinks::window`]).
#[derive(Debug)]
pub(crate) enum WindowBytes {
    /// Its bytes, copied from the memory sink.
    Copied(Vec<u8>),
    /// In this file, from this offset.
    File(std::sync::Arc<File>, u64),
}

/// Whether `block` holds a `ThreadName` record that names `thread` (a thread's first block).
fn names_itself(block: &[u8], thread: u64) -> bool {
    let header = BlockHeader::read(Order::NATIVE, block);
    let end = (BLOCK_HEADER_LEN + header.used as usize).min(block.len());
    RecordIter::new(&block[BLOCK_HEADER_LEN..end], Order::NATIVE, 0)
        .flatten()
        .any(|r| r.code == THREAD_NAME && r.args.len() >= 8 && Order::NATIVE.u64(r.args) == thread)
}

/// Blocks of thread 0 (the recorder's own), numbered from `first`, with base time `time`,
/// holding `records` (code and arguments, each at `time`) in order, as many blocks of
/// `block_size` bytes as they need.
pub(crate) fn recorder_blocks(
    block_size: u32,
    first: u64,
    time: u64,
    records: &[(u16, Vec<Value<'_>>)],
) -> Vec<Vec<u8>> {
    let header = |sequence| BlockHeader { thread: 0, sequence, base_time: time, ..BlockHeader::default() };
    let mut blocks = Vec::new();
    let mut writer = BlockWriter::new(Order::NATIVE, block_size, &header(first));
    for (code, values) in records {
        if writer.push(*code, time, values).is_err() {
            let full = std::mem::replace(
                &mut writer,
                BlockWriter::new(Order::NATIVE, block_size, &header(first + blocks.len() as u64 + 1)),
            );
            blocks.push(full.finish());
            // A string longer than a block is cut to fit by the writer (`fit_strings`).
            let _ = writer.push(*code, time, values);
        }
    }
    if !writer.is_empty() {
        blocks.push(writer.finish());
    }
    blocks
}

/// A block's events (every record but `TimeExtend` and `Stop`) and the losses it reports (its
/// `lost` field, its `Dropped` counts), as the stop marker counts them. A walk of the record
/// headers, on the writer thread or at stop, never on a recording thread's hot path.
fn block_counts(block: &[u8]) -> (u64, u64) {
    let header = BlockHeader::read(Order::NATIVE, block);
    let end = (BLOCK_HEADER_LEN + header.used as usize).min(block.len());
    let mut events = 0u64;
    let mut lost = header.lost;
    for record in RecordIter::new(&block[BLOCK_HEADER_LEN..end], Order::NATIVE, 0).flatten() {
        events += 1;
        if record.code == DROPPED && record.args.len() >= 16 {
            lost = lost.saturating_add(Order::NATIVE.u64(&record.args[8..]));
        }
    }
    (events, lost)
}
