//! A recording written as a sequence of segments (`EVENT_ROTATE`; docs/FORMAT.md,
//! "Segments"; docs/guide/long-running-services.md): each segment's name, its file created
//! under `NAME.open` and renamed to `NAME` once sealed, the disk budget (`EVENT_KEEP`) that
//! deletes the oldest sealed segments of the directory and counts them, and each thread's
//! block numbers, which restart at 0 in every segment.
//!
//! The directory is shared by the runs of a program: a service restarted by a deploy or a
//! crash loop writes its new recording's segments beside its earlier ones. Its *family* is
//! the files whose names its `EVENT_FILE` pattern could give, in any run (`%p`, `%t` and `%r`
//! stand for any value; `%n` and `%h` for this program's and this host's), with a segment's
//! number before the extension. At its first segment a recording
//!
//! - seals what a killed run left: a family member `NAME.open` that is a segment of another
//!   recording (by its magic, its header's recording id and segment property, never by its
//!   name alone) and whose writer is gone (no process holds its lock) is renamed `NAME`, and
//!   one line says so; readers then see that recording's last segment, without a stop
//!   marker, as the kill it was;
//! - numbers its segments after the highest number a segment of the same name already has
//!   (`trace.000007.evt` before it: it writes `trace.000008.evt`), so restarts never collide;
//! - keeps the budget for the whole family: the oldest sealed segments, whichever run wrote
//!   them, go first. What it removes of its own recording its segments count as before
//!   (`removed_segments`); what it removes of earlier recordings, the header's earlier
//!   property (docs/FORMAT.md, "Earlier recordings"), carried forward from theirs.
//!
//! Nothing that is not the recorder's is ever touched: a file is sealed, counted or deleted
//! only when it is a regular file holding a segment of ours (its header read and checked),
//! deleted only while its name still names the file that was read, renamed only exclusively
//! (never over another file).
//!
//! Plain bookkeeping and file operations, done by the writer thread (or the start and the
//! stop) under the sinks' lock (`sink::Sinks`): a recording thread never waits for a rotation.

use crate::config::{Keep, Rotate};
use crate::files;
use event_format::decode::{Catalog, DecodeOptions, Decoder, index_blocks};
use event_format::ledger::Ledger;
use event_format::raw::seal_block_in_place;
use event_format::wire::{BlockHeader, Earlier, EarlierRemoval, Header, Order, RecordingId, Segment};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::io::{self, Read};
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

/// The files a recording's segments share their directory with: the names its `EVENT_FILE`
/// pattern gives in any run (module docs).
#[derive(Clone, Debug)]
pub(crate) struct Family {
    /// The directory (the expanded path's).
    dir: PathBuf,
    /// The stem of this run's segments' names (`trace` of `trace.000003.evt`).
    stem: String,
    /// The stem in any run: literal pieces between which a run's value stands (`%p`, `%t`,
    /// `%r`): `["trace-", ""]` for `trace-%p`.
    pieces: Vec<String>,
    /// The extension, without its dot (`evt`), if the names have one.
    ext: Option<String>,
}

/// What a name of the family is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Member {
    /// The number in its name.
    number: u64,
    /// Whether its name ends in `.open`.
    open: bool,
    /// Whether its stem is this run's (its numbers are the ones this run's names follow).
    own_stem: bool,
}

impl Family {
    /// The family of `pattern` (as given: `EVENT_FILE`, `Recorder::file`), whose expanded path
    /// this run writes is `base`; `%n` and `%h` as this run expands them (`naming`).
    pub(crate) fn new(pattern: &Path, base: &Path, naming: &files::Naming) -> Family {
        let dir =
            base.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), Path::to_owned);
        let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let (pattern_name, base_name) = (name(pattern), name(base));
        let split = |n: &str| match n.rfind('.') {
            Some(dot) if dot > 0 => (n[..dot].to_owned(), Some(n[dot + 1..].to_owned())),
            _ => (n.to_owned(), None),
        };
        let (stem, ext) = split(&base_name);
        let (pattern_stem, _) = split(&pattern_name);
        let mut pieces = vec![String::new()];
        let mut chars = pattern_stem.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                pieces.last_mut().expect("one piece at least").push(c);
                continue;
            }
            match chars.next() {
                Some('p' | 't' | 'r') => pieces.push(String::new()),
                Some('n') => {
                    pieces.last_mut().expect("one piece at least").push_str(&files::program_name().replace('/', "_"))
                }
                Some('h') => pieces.last_mut().expect("one piece at least").push_str(&naming.host.replace('/', "_")),
                Some(other) => pieces.last_mut().expect("one piece at least").push(other),
                None => {}
            }
        }
        Family { dir, stem, pieces, ext }
    }

    /// What `name` is in the family, if it is of it: `STEM.NUMBER[.EXT][.open]`, its stem one
    /// this pattern gives.
    fn member(&self, name: &str) -> Option<Member> {
        let (name, open) = match name.strip_suffix(".open") {
            Some(n) => (n, true),
            None => (name, false),
        };
        let rest = match &self.ext {
            Some(ext) => name.strip_suffix(ext.as_str())?.strip_suffix('.')?,
            None => name,
        };
        let dot = rest.rfind('.')?;
        let (stem, digits) = (&rest[..dot], &rest[dot + 1..]);
        if digits.len() < DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let number = digits.parse().ok()?;
        let own_stem = stem == self.stem;
        (own_stem || pieces_match(&self.pieces, stem)).then_some(Member { number, open, own_stem })
    }
}

/// Whether `text` is `pieces` with a run's value (letters and digits, at least one) between
/// each two.
fn pieces_match(pieces: &[String], text: &str) -> bool {
    let Some((first, rest)) = pieces.split_first() else { return text.is_empty() };
    let Some(mut text) = text.strip_prefix(first.as_str()) else { return false };
    for (i, piece) in rest.iter().enumerate() {
        let last = i + 1 == rest.len();
        // The value: the shortest run of letters and digits after which the piece follows
        // (and, for the last piece, ends the text).
        let value_len = text.bytes().take_while(u8::is_ascii_alphanumeric).count();
        let found = (1..=value_len).find(|&n| {
            let after = &text[n..];
            if last { after == piece.as_str() } else { after.starts_with(piece.as_str()) }
        });
        match found {
            Some(n) => text = &text[n + piece.len()..],
            None => return false,
        }
    }
    text.is_empty()
}

/// A sealed segment of the family on the disk, as the budget counts it.
#[derive(Debug, Clone)]
struct Sealed {
    path: PathBuf,
    /// Its length in bytes when found.
    bytes: u64,
    /// What it accounted for: its marker's events, losses and unwritten events, and its
    /// header's `lost_between` (docs/FORMAT.md, "Segments"); counted when first needed.
    accounted: Option<u64>,
    /// Its identity (device, inode), to tell it from a file someone else put at its name.
    id: (u64, u64),
    /// Its recording and its index in it.
    recording: RecordingId,
    index: u64,
    /// When its recording started (the budget's order: oldest recording first).
    started: i64,
}

/// What the headers of the family's segments say of earlier recordings, carried forward.
#[derive(Debug, Default)]
struct Carried {
    /// Per earlier recording still (partly) present: its segments removed by later runs and
    /// their events.
    partly: BTreeMap<RecordingId, (u64, u64)>,
    /// Earlier recordings removed wholly, their segments and events.
    gone: (u64, u64, u64),
    /// Per recording, the most of its segments and events its own headers say its budget
    /// removed (folded into `gone` when the recording goes).
    own: BTreeMap<RecordingId, (u64, u64)>,
}

/// The segments of one recording.
#[derive(Debug)]
pub(crate) struct Segments {
    /// The expanded `EVENT_FILE` path the names are made from.
    base: PathBuf,
    /// The names the directory's segments of this program may have.
    family: Family,
    rotate: Rotate,
    keep: Keep,
    /// The header every segment repeats (with its own segment property).
    header: Header,
    /// This recording's id (in `header`).
    recording: RecordingId,
    /// The number of the segment being written (or of the next, while none is open): its
    /// header's `index`, 0, 1, 2, ... with none skipped.
    index: u64,
    /// The number in the segment's name less its `index`: the names of earlier runs'
    /// segments it follows, and those skipped because files that are not the recording's
    /// took them.
    skipped: u64,
    /// When the segment being written was opened.
    opened: Instant,
    /// Whether the segment being written holds a block of the program's threads (not only
    /// the names, pins and clock syncs of thread 0): an idle program's segment is not sealed
    /// for its age alone ([`due`](Self::due)).
    holds_program: bool,
    /// The family's sealed segments on the disk, oldest first: the budget's.
    sealed: VecDeque<Sealed>,
    removed_segments: u64,
    removed_events: u64,
    /// What the budget removed of earlier recordings (the earlier property).
    carried: Carried,
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
    /// The segments of a recording to `base` (its pattern's `family`), whose segments repeat
    /// `header`.
    pub(crate) fn new(base: PathBuf, family: Family, rotate: Rotate, keep: Keep, header: Header) -> Segments {
        let recording = header.properties.recording.unwrap_or(RecordingId([0; 16]));
        Segments {
            base,
            family,
            rotate,
            keep,
            header,
            recording,
            index: 0,
            skipped: 0,
            opened: Instant::now(),
            holds_program: false,
            sealed: VecDeque::new(),
            removed_segments: 0,
            removed_events: 0,
            carried: Carried::default(),
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
    /// Before the first, the family is looked at (module docs): a killed run's `.open`
    /// segments are sealed, the numbers follow those of earlier runs' segments, and the budget
    /// is kept. A segment's name taken by a file that is not this recording's is left as it
    /// is: the segment's name takes the next free number instead (at most [`SKIP`] numbers at
    /// a time; its header's `index` is still the next, docs/FORMAT.md, "Segments"), said in
    /// one line, so that the recording goes on and never writes into, or over, a file that is
    /// not its own. Below the budget's floor of free space (`Keep::free`) no segment is made:
    /// an error of no space, which the writer treats as a full disk.
    pub(crate) fn open(&mut self, lost_between: u64) -> io::Result<Opened> {
        if !self.started {
            self.take_over();
            self.keep_within_budget();
        }
        if let Some(floor) = self.keep.free {
            self.keep_within_budget();
            if crate::sinks::space::free_bytes(&self.family.dir).is_some_and(|free| free < floor) {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    format!(
                        "fewer than {} bytes are free on the disk of {} (EVENT_KEEP's free=), and no sealed segment is left to delete",
                        floor,
                        self.family.dir.display()
                    ),
                ));
            }
        }
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
                    if self.index + self.skipped - first_taken + 1 >= SKIP {
                        return Err(io::Error::new(
                            io::ErrorKind::AlreadyExists,
                            format!(
                                "{} exists and is not this recording's, nor are the {SKIP} names after it; remove them or choose another EVENT_FILE",
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
        header.properties.earlier = self.earlier();
        let header = header.encode().map_err(io::Error::other)?;
        self.opened = Instant::now();
        self.holds_program = false;
        self.offset = self.next.clone();
        Ok(Opened { path, file, header })
    }

    /// The earlier property of the next segment: what the family's budget removed of earlier
    /// recordings, as far as this recording knows (`None` when nothing).
    fn earlier(&self) -> Option<Earlier> {
        let c = &self.carried;
        let partly: Vec<EarlierRemoval> = c
            .partly
            .iter()
            .filter(|(_, (segments, _))| *segments > 0)
            .take(event_format::wire::MAX_EARLIER)
            .map(|(&recording, &(segments, events))| EarlierRemoval { recording, segments, events })
            .collect();
        (c.gone != (0, 0, 0) || !partly.is_empty()).then_some(Earlier {
            recordings_removed: c.gone.0,
            segments_of_removed: c.gone.1,
            events_of_removed: c.gone.2,
            partly,
        })
    }

    /// The start's look at the family (module docs): seals a killed run's `.open` segments,
    /// finds the numbers and the sealed segments of earlier runs, and what their headers carry
    /// of earlier recordings.
    fn take_over(&mut self) {
        let Ok(entries) = std::fs::read_dir(&self.family.dir) else { return };
        let mut highest: Option<u64> = None;
        let mut open = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(member) = self.family.member(&name) else { continue };
            if member.open {
                open.push((entry.path(), member));
            } else if member.own_stem && read_segment(&entry.path()).is_some() {
                highest = highest.max(Some(member.number));
            }
        }
        for (path, member) in open {
            match self.seal_left(&path) {
                Some(true) if member.own_stem => highest = highest.max(Some(member.number)),
                // A live writer's (another process of the family): its number is taken.
                None if member.own_stem => highest = highest.max(Some(member.number)),
                _ => {}
            }
        }
        if let Some(highest) = highest {
            self.skipped = highest + 1;
        }
        self.rescan();
    }

    /// Seals `open`, a `.open` member of the family left by a killed run: `Some(true)` when it
    /// was (or is now) a sealed segment of ours, `Some(false)` when it is not a segment of
    /// ours (left as it is), `None` when a live process writes it.
    fn seal_left(&self, open: &Path) -> Option<bool> {
        let Ok(file) = files::open_regular(open) else { return Some(false) };
        match files::try_lock(&file) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(_) => return Some(false),
        }
        // Under the lock: no recorder of ours writes it now.
        let Some(found) = read_header(&file) else { return Some(false) };
        let Some(recording) = found.properties.recording else { return Some(false) };
        if found.properties.segment.is_none() || recording == self.recording {
            return Some(false);
        }
        let Some(sealed) = open.to_str().and_then(|p| p.strip_suffix(".open")).map(PathBuf::from) else {
            return Some(false);
        };
        match files::rename_new(open, &sealed) {
            Ok(()) => {
                eprintln!(
                    "event-runtime: {} was left by recording {recording}, which ended without stopping (killed); sealed as {}, which readers take as that recording's last segment",
                    open.display(),
                    sealed.display()
                );
                Some(true)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // Sealed by a hard link whose `.open` name was not removed yet (killed between
                // the two): the same file under both names.
                let same = std::fs::symlink_metadata(&sealed).is_ok_and(|m| meta_identity(&m) == identity(&file));
                if same && files::names(open, &file) {
                    let _ = std::fs::remove_file(open);
                    return Some(true);
                }
                eprintln!(
                    "event-runtime: {} was left by recording {recording}, which ended without stopping (killed); it stays under that name: {} is taken by another file",
                    open.display(),
                    sealed.display()
                );
                Some(false)
            }
            Err(e) => {
                eprintln!(
                    "event-runtime: {} was left by recording {recording}, which ended without stopping (killed); sealing it failed: {e}",
                    open.display()
                );
                Some(false)
            }
        }
    }

    /// Reads the family's sealed segments anew (those known kept, by identity), oldest first,
    /// and what their headers carry of earlier recordings.
    fn rescan(&mut self) {
        let Ok(entries) = std::fs::read_dir(&self.family.dir) else { return };
        let known: HashMap<(u64, u64), Sealed> = self.sealed.drain(..).map(|s| (s.id, s)).collect();
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if self.family.member(&name).is_none_or(|m| m.open) {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            if !meta.is_file() {
                continue;
            }
            if let Some(s) = known.get(&meta_identity(&meta)) {
                found.push(Sealed { path, ..s.clone() });
                continue;
            }
            let Some((header, id)) = read_segment(&path) else { continue };
            let (Some(recording), Some(segment)) = (header.properties.recording, header.properties.segment) else {
                continue;
            };
            self.carry(&header, recording, segment);
            found.push(Sealed {
                path,
                bytes: meta.len(),
                accounted: None,
                id,
                recording,
                index: segment.index,
                started: header.producer.start_wall_ns,
            });
        }
        // What headers say of recordings no longer here is in the newest header's count of
        // those removed wholly already (a budget folds a recording into it once it removed
        // the last of its segments): counting it again would count it twice.
        self.carried.partly.retain(|r, _| found.iter().any(|s| s.recording == *r));
        self.carried.own.retain(|r, _| found.iter().any(|s| s.recording == *r));
        // This recording's last of all, the others by their start, then their ids and indexes.
        found.sort_by_key(|s| (s.recording == self.recording, s.started, s.recording, s.index));
        self.sealed = found.into();
    }

    /// Takes what `header`, a segment of `recording`, carries of earlier recordings.
    fn carry(&mut self, header: &Header, recording: RecordingId, segment: Segment) {
        if recording == self.recording {
            return;
        }
        let own = self.carried.own.entry(recording).or_default();
        *own = (own.0.max(segment.removed_segments), own.1.max(segment.removed_events));
        if let Some(earlier) = &header.properties.earlier {
            let gone = &mut self.carried.gone;
            *gone = (
                gone.0.max(earlier.recordings_removed),
                gone.1.max(earlier.segments_of_removed),
                gone.2.max(earlier.events_of_removed),
            );
            for e in &earlier.partly {
                if e.recording == self.recording {
                    continue;
                }
                let partly = self.carried.partly.entry(e.recording).or_default();
                *partly = (partly.0.max(e.segments), partly.1.max(e.events));
            }
        }
    }

    /// The number of the segment being written (or of the next, while none is open).
    pub(crate) fn index(&self) -> u64 {
        self.index
    }

    /// Whether the segment being written, `bytes` long, is due to be sealed: asked for, its
    /// size reached, or its age reached once it holds a block of the program's (an idle
    /// program's segments would otherwise hold only the names each new segment repeats, and
    /// push its recorded history out of the budget).
    pub(crate) fn due(&self, bytes: u64) -> bool {
        self.requested
            || self.rotate.size.is_some_and(|size| bytes >= size)
            || (self.holds_program && self.rotate.age.is_some_and(|age| self.opened.elapsed() >= age))
    }

    /// A block of `thread` went into the segment being written.
    pub(crate) fn wrote_block_of(&mut self, thread: u64) {
        self.holds_program |= thread != 0;
    }

    /// Whether the disk holds less free space than the budget's floor (`Keep::free`) once the
    /// budget deleted what it may: the writer then ends the segment as for a full disk.
    pub(crate) fn below_floor(&mut self) -> bool {
        let Some(floor) = self.keep.free else { return false };
        let below = || crate::sinks::space::free_bytes(&self.family.dir).is_some_and(|free| free < floor);
        if !below() {
            return false;
        }
        self.keep_within_budget();
        crate::sinks::space::free_bytes(&self.family.dir).is_some_and(|free| free < floor)
    }

    /// Seals the segment written to `file` at `path`'s `.open` name: synced, renamed to `path`
    /// (never over another file), counted for the budget with what it `accounted` for; then,
    /// when a next segment follows (`more`) to count them, the oldest sealed segments are
    /// deleted to stay within the budget (the last segment of a recording deletes none: no
    /// segment would say so; the next run's start does). The next segment's number is taken.
    /// Errors and files found missing are said on stderr (once).
    pub(crate) fn seal(&mut self, path: &Path, file: &File, accounted: u64, more: bool) {
        self.requested = false;
        let index = self.index;
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
        self.sealed.push_back(Sealed {
            path: path.to_owned(),
            bytes,
            accounted: Some(accounted),
            id: identity(file),
            recording: self.recording,
            index,
            started: self.header.producer.start_wall_ns,
        });
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

    /// Deletes the family's oldest sealed segments until the budget holds (its counts, its
    /// size, its floor of free space), counting each for the recording it was of: a segment
    /// someone else removed or replaced meanwhile is said once and not counted. The family is
    /// read anew first (others of the family may have sealed or deleted segments meanwhile).
    fn keep_within_budget(&mut self) {
        if self.keep == Keep::default() {
            return;
        }
        if self.hold.as_ref().is_some_and(|h| h.load(std::sync::atomic::Ordering::Relaxed) > 0) {
            // A snapshot waits for its window: the budget is over for that long.
            return;
        }
        let own: Vec<Sealed> = self.sealed.iter().filter(|s| s.recording == self.recording).cloned().collect();
        self.rescan();
        // Our own sealed segments are known by what we counted when sealing them; one gone
        // from the directory (a shipper took it) is said once.
        for o in &own {
            match self.sealed.iter_mut().find(|s| s.id == o.id) {
                Some(s) => s.accounted = o.accounted,
                None => self.say_missing(&o.path),
            }
        }
        let mut deleted_any = false;
        loop {
            let total: u64 = self.sealed.iter().map(|s| s.bytes).sum();
            let below_floor = self.keep.free.is_some_and(|floor| {
                crate::sinks::space::free_bytes(&self.family.dir).is_some_and(|free| free < floor)
            });
            let over = self.keep.segments.is_some_and(|n| self.sealed.len() as u64 > n)
                || self.keep.bytes.is_some_and(|b| total > b)
                || below_floor;
            if !over {
                break;
            }
            let Some(mut oldest) = self.sealed.pop_front() else { break };
            let ours = std::fs::symlink_metadata(&oldest.path).is_ok_and(|m| meta_identity(&m) == oldest.id);
            if !ours {
                self.say_missing(&oldest.path);
                continue;
            }
            let accounted = *oldest.accounted.get_or_insert_with(|| accounted_of(&oldest.path));
            if oldest.recording == self.recording {
                self.removed_upto = Some(oldest.index);
            }
            match std::fs::remove_file(&oldest.path) {
                Ok(()) => {
                    deleted_any = true;
                    if oldest.recording == self.recording {
                        self.removed_segments += 1;
                        self.removed_events = self.removed_events.saturating_add(accounted);
                    } else {
                        let partly = self.carried.partly.entry(oldest.recording).or_default();
                        *partly = (partly.0 + 1, partly.1.saturating_add(accounted));
                    }
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
        if deleted_any {
            self.fold_gone();
        }
    }

    /// Earlier recordings none of whose segments is left: counted as removed wholly.
    fn fold_gone(&mut self) {
        let present: Vec<RecordingId> = self.sealed.iter().map(|s| s.recording).collect();
        let gone: Vec<RecordingId> = self.carried.partly.keys().filter(|r| !present.contains(r)).copied().collect();
        for recording in gone {
            let (segments, events) = self.carried.partly.remove(&recording).unwrap_or_default();
            let (own_segments, own_events) = self.carried.own.remove(&recording).unwrap_or_default();
            let g = &mut self.carried.gone;
            g.0 += 1;
            g.1 = g.1.saturating_add(segments).saturating_add(own_segments);
            g.2 = g.2.saturating_add(events).saturating_add(own_events);
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

/// The header of the stream `file` holds, if it is one (its magic, a header that decodes).
fn read_header(file: &File) -> Option<Header> {
    let reader = io::BufReader::with_capacity(1 << 14, file);
    Decoder::with_options(reader, DecodeOptions { force: true }).ok().map(|d| d.header().clone())
}

/// The header of the regular file at `path` when it is a segment of ours (a recording id and
/// a segment property), and its identity.
fn read_segment(path: &Path) -> Option<(Header, (u64, u64))> {
    let file = files::open_regular(path).ok()?;
    let header = read_header(&file)?;
    (header.properties.recording.is_some() && header.properties.segment.is_some()).then(|| (header, identity(&file)))
}

/// What the sealed segment at `path` accounted for (docs/FORMAT.md, "Counting a recording of
/// segments"): its stop marker's events, losses and unwritten events and its header's
/// `lost_between`, read from its last block; a segment without a marker (a killed run's) is
/// read whole and its records and losses counted. 0 when it cannot be read.
fn accounted_of(path: &Path) -> u64 {
    let Ok(file) = files::open_regular(path) else { return 0 };
    let Ok(decoder) = Decoder::with_options(io::BufReader::new(&file), DecodeOptions { force: true }) else {
        return 0;
    };
    let header = decoder.header().clone();
    let header_bytes = decoder.header_bytes().to_vec();
    let lost_between = header.properties.segment.map_or(0, |s| s.lost_between);
    let len = file.metadata().map_or(0, |m| m.len());
    // The last block alone: the header and it make a stream of one block.
    if let Ok(Some(starts)) = index_blocks(&file, &header, header_bytes.len() as u64, len)
        && let Some(last) = starts.last()
    {
        let mut one = header_bytes.clone();
        let mut reader = &file;
        if io::Seek::seek(&mut reader, io::SeekFrom::Start(last.offset)).is_ok()
            && reader.take(len - last.offset).read_to_end(&mut one).is_ok()
            && let Ok(mut decoder) = Decoder::with_options(&one[..], DecodeOptions { force: true })
            && let Some(Ok(block)) = decoder.next_block()
            && let Some(stop) = block.stop()
        {
            return stop.events.saturating_add(stop.lost).saturating_add(stop.unwritten).saturating_add(lost_between);
        }
    }
    let Ok(mut decoder) = Decoder::with_options(io::BufReader::new(&file), DecodeOptions { force: true }) else {
        return 0;
    };
    let catalog = Catalog::new(&header.sets);
    let mut ledger = Ledger::new(header.format);
    while let Some(block) = decoder.next_block() {
        match block {
            Ok(block) => {
                ledger.block(&block);
                for entry in block.entries(&catalog) {
                    ledger.entry(block.header.thread, block.header.sequence, &entry);
                }
            }
            Err(e) => ledger.damaged(&e),
        }
    }
    ledger
        .events()
        .saturating_add(ledger.unknown_records())
        .saturating_add(ledger.bad_records().len() as u64)
        .saturating_add(ledger.lost())
        .saturating_add(lost_between)
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
