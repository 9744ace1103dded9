//! A recording written as a sequence of segments (`EVENT_ROTATE`; docs/FORMAT.md,
//! "Segments"; docs/guide/long-running-services.md): each segment's name, its file created
//! under `NAME.open` and renamed to `NAME` once sealed, the disk budget (`EVENT_KEEP`) that
//! deletes the oldest sealed segments and counts them, and each thread's block numbers, which
//! restart at 0 in every segment.
//!
//! Plain bookkeeping and file operations, done by the writer thread (or the stop) under the
//! sinks' lock (`sink::Sinks`): a recording thread never waits for a rotation.

use crate::config::{Keep, Rotate};
use crate::files;
use event_format::wire::{BlockHeader, Header, Order, Segment, seal_block_in_place};
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Digits of a segment's number in its name: names sort by number up to 999999.
const DIGITS: usize = 6;

/// The most numbers a new segment tries, past names taken by files that are not the
/// recording's, before it gives up until the next try (`sink`: every second).
const SKIP: u64 = 16;

/// The name of segment `index` of the recording whose `EVENT_FILE` is `base`: the number
/// between the stem and the extension (`trace.evt` -> `trace.000002.evt`).
pub(crate) fn segment_path(base: &Path, index: u64) -> PathBuf {
    let stem = base.file_stem().map(|s| s.to_os_string()).unwrap_or_else(|| "events".into());
    let mut name = stem;
    name.push(format!(".{index:0DIGITS$}"));
    if let Some(ext) = base.extension() {
        name.push(".");
        name.push(ext);
    }
    base.with_file_name(name)
}

/// The name of a segment while it is written: its final name and `.open`.
pub(crate) fn open_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".open");
    PathBuf::from(name)
}

/// A sealed segment still on the disk, as the budget counts it.
#[derive(Debug)]
struct Sealed {
    /// Its number (its header's `index`).
    index: u64,
    path: PathBuf,
    /// Its length in bytes when sealed.
    bytes: u64,
    /// What it accounted for: its marker's events, losses and unwritten events, and its
    /// header's `lost_between` (docs/FORMAT.md, "Segments").
    accounted: u64,
    /// Its identity (device, inode), to tell it from a file someone else put at its name.
    id: (u64, u64),
}

/// The segments of one recording.
#[derive(Debug)]
pub(crate) struct Segments {
    /// The expanded `EVENT_FILE` path the names are made from.
    base: PathBuf,
    rotate: Rotate,
    keep: Keep,
    /// The header every segment repeats (with its own segment property).
    header: Header,
    /// The number of the segment being written (or of the next, while none is open): its
    /// header's `index`, 0, 1, 2, ... with none skipped.
    index: u64,
    /// The number in the segment's name: its `index`, plus the names skipped because files
    /// that are not the recording's took them.
    skipped: u64,
    /// When the segment being written was opened.
    opened: Instant,
    /// Sealed segments on the disk, oldest first.
    sealed: VecDeque<Sealed>,
    removed_segments: u64,
    removed_events: u64,
    /// Per thread (not 0), the next block number in the recording's own numbering.
    next: HashMap<u64, u64>,
    /// Per thread, the recording's number of the segment's first block: subtracted.
    offset: HashMap<u64, u64>,
    /// A rotation was asked for (`Recording::rotate`, the control command).
    pub(crate) requested: bool,
    /// Whether a segment was found removed or renamed by someone else (said once).
    said_missing: bool,
    /// Whether the first segment was made (a name taken later is skipped, not an error).
    started: bool,
    /// While this is above 0, the budget deletes nothing: triggered snapshots wait for their
    /// `post=` windows, whose blocks may lie in the oldest segments
    /// (`trigger::Triggers::pending_count`; docs/guide/keeping-the-incident.md).
    hold: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
    /// The newest segment the budget deleted since the last look (`take_removed`).
    removed_upto: Option<u64>,
}

/// A segment file just created, with its header to write first.
#[derive(Debug)]
pub(crate) struct Opened {
    /// Its final name (the file is at its `.open` name until sealed).
    pub(crate) path: PathBuf,
    pub(crate) file: File,
    pub(crate) header: Vec<u8>,
}

impl Segments {
    /// The segments of a recording to `base`, whose segments repeat `header`.
    pub(crate) fn new(base: PathBuf, rotate: Rotate, keep: Keep, header: Header) -> Segments {
        Segments {
            base,
            rotate,
            keep,
            header,
            index: 0,
            skipped: 0,
            opened: Instant::now(),
            sealed: VecDeque::new(),
            removed_segments: 0,
            removed_events: 0,
            next: HashMap::new(),
            offset: HashMap::new(),
            requested: false,
            said_missing: false,
            started: false,
            hold: None,
            removed_upto: None,
        }
    }

    /// Holds the budget while `hold` is above 0 (snapshots wait for their windows).
    pub(crate) fn hold_with(&mut self, hold: std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        self.hold = Some(hold);
    }

    /// The newest segment the budget deleted since the last call, if any.
    pub(crate) fn take_removed(&mut self) -> Option<u64> {
        self.removed_upto.take()
    }

    /// A sealed segment still on the disk, or the file of the segment being written when it
    /// is `index` (`current`), opened for reading: a snapshot reads its window's blocks back
    /// through it, even once the budget deleted the file. `None` when it is gone or is no
    /// longer the file the recording sealed.
    pub(crate) fn open_for_reading(&self, index: u64, current: Option<&File>) -> Option<File> {
        if index == self.index {
            return current.and_then(|f| f.try_clone().ok());
        }
        let sealed = self.sealed.iter().find(|s| s.index == index)?;
        let file = File::open(&sealed.path).ok()?;
        (identity(&file) == sealed.id).then_some(file)
    }

    /// Creates the next segment's file (`NAME.open`, exclusively) and its header, saying
    /// `lost_between` events were not written since the previous one. Block numbers restart.
    ///
    /// The first segment's name taken by a file that is not this recording's is an error (the
    /// recording does not start). A later one's is left as it is: the segment's name takes the
    /// next free number instead (at most [`SKIP`] numbers at a time; its header's `index` is
    /// still the next, docs/FORMAT.md, "Segments"), said in one line, so that the recording
    /// goes on and never writes into, or over, a file that is not its own.
    pub(crate) fn open(&mut self, lost_between: u64) -> io::Result<Opened> {
        let first_taken = self.index + self.skipped;
        let (path, open, file) = loop {
            let path = segment_path(&self.base, self.index + self.skipped);
            let open = open_path(&path);
            let taken = [&path, &open].into_iter().find(|p| std::fs::symlink_metadata(p).is_ok()).cloned();
            let created = match taken {
                None => files::create_segment(&open).map_err(|e| (e, open.clone())),
                Some(taken) => Err((io::Error::from(io::ErrorKind::AlreadyExists), taken)),
            };
            match created {
                Ok(file) => break (path, open, file),
                Err((e, taken)) if e.kind() == io::ErrorKind::AlreadyExists => {
                    if !self.started || self.index + self.skipped - first_taken + 1 >= SKIP {
                        return Err(io::Error::new(
                            io::ErrorKind::AlreadyExists,
                            format!(
                                "{} exists and is not this recording's; remove it or choose another EVENT_FILE",
                                taken.display()
                            ),
                        ));
                    }
                    self.skipped += 1;
                }
                Err((e, at)) => return Err(io::Error::new(e.kind(), format!("{}: {e}", at.display()))),
            }
        };
        if self.index + self.skipped != first_taken {
            eprintln!(
                "event-runtime: the segment name {} is taken by a file that is not this recording's; it is left as it is, and the recording goes on as {}",
                segment_path(&self.base, first_taken).display(),
                open.display()
            );
        }
        self.started = true;
        let mut header = self.header.clone();
        header.properties.segment = Some(Segment {
            index: self.index,
            removed_segments: self.removed_segments,
            removed_events: self.removed_events,
            lost_between,
        });
        let header = header.encode().map_err(io::Error::other)?;
        self.opened = Instant::now();
        self.offset = self.next.clone();
        Ok(Opened { path, file, header })
    }

    /// The number of the segment being written (or of the next, while none is open).
    pub(crate) fn index(&self) -> u64 {
        self.index
    }

    /// Whether the segment being written, `bytes` long, is due to be sealed.
    pub(crate) fn due(&self, bytes: u64) -> bool {
        self.requested
            || self.rotate.size.is_some_and(|size| bytes >= size)
            || self.rotate.age.is_some_and(|age| self.opened.elapsed() >= age)
    }

    /// Seals the segment written to `file` at `path`'s `.open` name: synced, renamed to `path`
    /// (never over another file), counted for the budget with what it `accounted` for; then,
    /// when a next segment follows (`more`) to count them, the oldest sealed segments are
    /// deleted to stay within the budget (the last segment of a recording deletes none: no
    /// segment would say so). The next segment's number is taken. Errors and files found
    /// missing are said on stderr (once).
    pub(crate) fn seal(&mut self, path: &Path, file: &File, accounted: u64, more: bool) {
        self.requested = false;
        self.index += 1;
        let open = open_path(path);
        if let Err(e) = file.sync_all() {
            eprintln!("event-runtime: syncing the segment {} failed: {e}", open.display());
        }
        if !files::names(&open, file) {
            self.say_missing(&open);
            return;
        }
        if let Err(e) = files::rename_new(&open, path) {
            eprintln!(
                "event-runtime: sealing the segment {} as {} failed: {e}; it stays under its .open name",
                open.display(),
                path.display()
            );
            return;
        }
        let bytes = file.metadata().map_or(0, |m| m.len());
        let index = self.index - 1;
        self.sealed.push_back(Sealed { index, path: path.to_owned(), bytes, accounted, id: identity(file) });
        if more {
            self.keep_within_budget();
        }
    }

    /// Gives up the segment being written without sealing it (not even its stop block could
    /// be written: it stays under its `.open` name): the next segment takes the next number.
    pub(crate) fn abandon(&mut self) {
        self.requested = false;
        self.index += 1;
    }

    /// Deletes the oldest sealed segments until the budget holds: a segment someone else
    /// removed or replaced meanwhile is said once and not counted.
    fn keep_within_budget(&mut self) {
        if self.hold.as_ref().is_some_and(|h| h.load(std::sync::atomic::Ordering::Relaxed) > 0) {
            // A snapshot waits for its window: the budget is over for that long.
            return;
        }
        loop {
            let total: u64 = self.sealed.iter().map(|s| s.bytes).sum();
            let over = self.keep.segments.is_some_and(|n| self.sealed.len() as u64 > n)
                || self.keep.bytes.is_some_and(|b| total > b);
            if !over {
                return;
            }
            let Some(oldest) = self.sealed.pop_front() else { return };
            let ours = std::fs::symlink_metadata(&oldest.path).is_ok_and(|m| meta_identity(&m) == oldest.id);
            if !ours {
                self.say_missing(&oldest.path);
                continue;
            }
            self.removed_upto = Some(oldest.index);
            match std::fs::remove_file(&oldest.path) {
                Ok(()) => {
                    self.removed_segments += 1;
                    self.removed_events = self.removed_events.saturating_add(oldest.accounted);
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => self.say_missing(&oldest.path),
                Err(e) => {
                    eprintln!(
                        "event-runtime: deleting the oldest segment {} for EVENT_KEEP failed: {e}; it is kept",
                        oldest.path.display()
                    );
                }
            }
        }
    }

    fn say_missing(&mut self, path: &Path) {
        if !std::mem::replace(&mut self.said_missing, true) {
            eprintln!(
                "event-runtime: the segment {} was removed or renamed by someone else while recording; its events are not counted by the recording, which goes on",
                path.display()
            );
        }
    }

    /// Gives a sealed block of a recording thread its number in the segment (each thread's
    /// numbers restart at 0 in every segment), sealing it again when the number changes.
    /// Thread 0's blocks are numbered by the sinks per segment already.
    pub(crate) fn renumber(&mut self, block: &mut [u8]) {
        let mut header = BlockHeader::read(Order::NATIVE, block);
        if header.thread == 0 {
            return;
        }
        let next = self.next.entry(header.thread).or_insert(0);
        *next = (*next).max(header.sequence + 1);
        let offset = self.offset.get(&header.thread).copied().unwrap_or(0);
        if offset != 0 {
            header.sequence = header.sequence.saturating_sub(offset);
            header.write(Order::NATIVE, block);
            seal_block_in_place(Order::NATIVE, block);
        }
    }

    /// The next block of `thread` in the recording's numbering: every block before it was
    /// written (to this segment or an earlier one).
    pub(crate) fn next_of(&self, thread: u64) -> u64 {
        self.next.get(&thread).copied().unwrap_or(0)
    }

    /// In a segment just opened: numbers `blocks` blocks of `thread` before its first block
    /// here (its blocks in the segment start at `blocks` instead of 0), and returns the
    /// recording's number of the first of them: blocks written with those numbers
    /// (`write_block`) become the segment's 0, 1, ... `None` when the thread has fewer blocks
    /// before this segment than that.
    pub(crate) fn number_below(&mut self, thread: u64, blocks: u64) -> Option<u64> {
        let next = self.next_of(thread);
        let first = next.checked_sub(blocks)?;
        self.offset.insert(thread, first);
        Some(first)
    }

    /// Whether a block of `thread` needs a new number in this segment (a copy to renumber).
    pub(crate) fn renumbers(&self, thread: u64) -> bool {
        thread != 0 && self.offset.get(&thread).is_some_and(|&o| o != 0)
    }
}

#[cfg(unix)]
fn identity(file: &File) -> (u64, u64) {
    file.metadata().map_or((0, 0), |m| meta_identity(&m))
}

#[cfg(unix)]
fn meta_identity(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

#[cfg(not(unix))]
fn identity(file: &File) -> (u64, u64) {
    file.metadata().map_or((0, 0), |m| meta_identity(&m))
}

#[cfg(not(unix))]
fn meta_identity(m: &std::fs::Metadata) -> (u64, u64) {
    (m.len(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_put_the_number_before_the_extension_and_sort() {
        assert_eq!(segment_path(Path::new("/d/trace.evt"), 0), Path::new("/d/trace.000000.evt"));
        assert_eq!(segment_path(Path::new("/d/trace.evt"), 12), Path::new("/d/trace.000012.evt"));
        assert_eq!(segment_path(Path::new("trace"), 3), Path::new("trace.000003"));
        assert_eq!(open_path(Path::new("/d/trace.000001.evt")), Path::new("/d/trace.000001.evt.open"));
        let names: Vec<PathBuf> = [10, 2, 100, 1].iter().map(|&i| segment_path(Path::new("t.evt"), i)).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(sorted, [1, 2, 10, 100].map(|i| segment_path(Path::new("t.evt"), i)));
    }
}
