//! Opening a log: the one way every reader (event-dump's commands, the typed reader, `follow`)
//! turns a path into blocks. An event stream or a ring file, recognised by its magic, from a
//! regular file or a pipe, read as a [`BlockSource`] either way: a ring file's blocks come
//! straight from the ring reader, never re-encoded as a stream.
//!
//! A recording of segments (a directory, a glob, or a list of its segment files; see
//! [`open_all`] for which files make which logs) is one log: its segments' blocks in the order
//! of their index, each block saying which segment it is of ([`Block::segment`]), read with
//! one header (the first segment's) and one catalog. [`Log::ledger`] is the ledger that
//! counts it segment by segment (docs/FORMAT.md, "Reading segments").
//!
//! A log still being written is followed through the same opener: [`kind`] says what a path
//! holds, [`open_ring`] opens a ring file to follow, and [`open_growing`] a stream file (a
//! segment `*.open`, or a stream its writer holds) whose reader waits at its end for more;
//! [`liveness`] says whether a log's writer is still at work.
//!
//! ```
//! use event_format::decode::BlockSource;
//! use event_format::log::{self, OpenOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let path = std::env::temp_dir().join(format!("log-doc-{}.evt", std::process::id()));
//! std::fs::write(&path, event_format::testing::sample_stream(event_format::wire::Order::Little))?;
//! let mut log = log::open(&path, OpenOptions::default())?;
//! let mut blocks = 0;
//! while let Some(block) = log.next_block() {
//!     block?;
//!     blocks += 1;
//! }
//! assert!(blocks > 1);
//! assert_eq!(log.header().producer.program, "sample");
//! # std::fs::remove_file(&path)?;
//! # Ok(()) }
//! ```

mod chain;
pub mod liveness;
mod recording;
mod tail;

pub use liveness::WriterLiveness;
pub use recording::{FoundSegment, OPEN_SUFFIX, SegmentFile, segment_at, segments_in};
pub use tail::Growing;

use crate::codec::decode::{
    Block, BlockError, BlockSource, BlockStart, Catalog, DecodeOptions, Decoder, PendingBlock, index_blocks,
};
use crate::codec::ring::{self, RingBlocks, RingError, RingFindings, RingReader};
use crate::codec::wire::{Header, HeaderError, RecordingId};
use crate::reading::ledger::{Ledger, SegmentEntry};
use chain::Chain;
use recording::Plan;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use tail::Tail;

/// How to open a log.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenOptions {
    /// Read a stream of a newer median format version (docs/FORMAT.md, "Reader's rules").
    pub force: bool,
    /// Index a stream's blocks before reading it ([`Log::take_index`]): one positioned read
    /// of each block's header, for readers that merge by time (event-dump's `print` and
    /// exports). Only a stream in a regular file is indexed, or a recording of segments
    /// (each block's offset then its place in the log: [`Log::segment_starts`]).
    pub index: bool,
    /// Whether a live writer still writes the segment `*.open` at a path
    /// ([`liveness::writer_running`] asks the lock its recorder holds). With it, a directory's or glob's `.open` segments whose
    /// writer is gone (killed) are read as their recording's, and a live writer's first
    /// segment as the stream it is so far; without it (`None`) every `.open` segment a
    /// directory or glob finds is left out (docs/FORMAT.md, "Reading segments").
    pub writer_alive: Option<fn(&Path) -> bool>,
}

/// Why a log could not be opened: one line that names the path, says what is wrong and, where
/// there is one, what to do.
#[non_exhaustive]
pub enum OpenError {
    /// The file cannot be opened or read.
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// The path is a directory (where a log file is needed: a ring file to follow).
    Directory(PathBuf),
    /// A directory or glob in which no log was found.
    NoLog(PathBuf),
    /// A directory or glob that holds several logs, where one is needed.
    Several {
        /// The path.
        path: PathBuf,
        /// How many logs it holds.
        logs: usize,
    },
    /// The segments of a recording given cannot be read as one (the whole line).
    Segments(String),
    /// A ring file given through a pipe, which cannot be read at positions.
    RingFromPipe(PathBuf),
    /// The stream's header is refused (not a stream, another format major, damaged, ...).
    Header {
        /// The path.
        path: PathBuf,
        /// Why.
        error: HeaderError,
    },
    /// The ring file cannot be read.
    Ring {
        /// The path.
        path: PathBuf,
        /// Why.
        error: RingError,
    },
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Io { path, error } => write!(f, "{}: cannot open: {}", path.display(), io_reason(error)),
            OpenError::Directory(path) => write!(f, "{}: is a directory; give a log file", path.display()),
            OpenError::NoLog(path) => write!(
                f,
                "{}: no log found (segments still being written, `*{OPEN_SUFFIX}`, are read only when named)",
                path.display()
            ),
            OpenError::Several { path, logs } => {
                write!(f, "{}: holds {logs} logs (recordings or files); give one of them", path.display())
            }
            OpenError::Segments(line) => f.write_str(line),
            OpenError::RingFromPipe(path) => write!(
                f,
                "{}: a ring file is read at positions, which a pipe cannot give; read the ring file itself, or a copy of it",
                path.display()
            ),
            OpenError::Header { path, error } => write!(f, "{}: {error}", path.display()),
            OpenError::Ring { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

/// `Debug` writes the one-line message that `Display` writes, not the variant and its
/// fields: an error returned from `main` (`fn main() -> Result<(), OpenError>`, or through
/// `Box<dyn Error>`) is printed by the standard library with `Debug`, as `Error: {:?}`, and
/// that line is what the program's user reads. A program that needs the parts matches on
/// them.
impl fmt::Debug for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OpenError::Io { error, .. } => Some(error),
            OpenError::Header { error, .. } => Some(error),
            OpenError::Ring { error, .. } => Some(error),
            OpenError::Directory(_)
            | OpenError::NoLog(_)
            | OpenError::Several { .. }
            | OpenError::Segments(_)
            | OpenError::RingFromPipe(_) => None,
        }
    }
}

/// What a reader shows for an I/O error: the common ones in words.
fn io_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied (a trace is readable by its owner only)".to_owned(),
        _ => e.to_string(),
    }
}

/// Where an open log's blocks come from.
enum Source {
    /// An event stream, decoded as it is read (up to the length it was indexed at, if it was):
    /// from its file, or from a pipe, which cannot seek back over the magic read first.
    Stream(Decoder<BufReader<Box<dyn Read + Send>>>),
    /// A ring file, read slot by slot: its blocks as the ring reader checked them.
    Ring(RingBlocks<File>),
    /// A recording of segments, segment after segment.
    Segments(Box<Chain>),
}

/// An open log: its header, the catalog its records are named by, and its blocks, in the
/// order the log holds them ([`BlockSource`]).
pub struct Log {
    path: PathBuf,
    source: Source,
    catalog: Catalog,
    len: u64,
    index: Option<Vec<BlockStart>>,
    /// Segments of its recording that the directory or glob it was found by left out
    /// because their names end in `.open`.
    left_open: Vec<PathBuf>,
    recording_id: RecordingId,
    /// What later recordings' budgets removed of it (segments, events).
    removed_later: (u64, u64),
    /// The earlier recordings its segments say the directory's budget removed wholly.
    earlier_gone: Option<(u64, u64, u64)>,
}

impl fmt::Debug for Log {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.source {
            Source::Stream(_) => "stream",
            Source::Ring(_) => "ring file",
            Source::Segments(_) => "recording of segments",
        };
        f.debug_struct("Log").field("path", &self.path).field("kind", &kind).field("len", &self.len).finish()
    }
}

impl Log {
    /// The path it was opened at (for a recording of segments: the directory or glob it was
    /// found by, or its first segment's path).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its header (for a recording of segments: its first segment's).
    pub fn header(&self) -> &Header {
        match &self.source {
            Source::Stream(decoder) => decoder.header(),
            Source::Ring(ring) => ring.header(),
            Source::Segments(chain) => chain.header(),
        }
    }

    /// Its segments, in order, for a recording of segments; empty for a log of one file.
    pub fn segments(&self) -> &[SegmentFile] {
        match &self.source {
            Source::Segments(chain) => chain.files(),
            _ => &[],
        }
    }

    /// Segments of its recording left out because their names end in `.open` (still being
    /// written, or left by a killed writer): in the directory or glob it was found by, not
    /// named. Readers say so; a segment named is read.
    pub fn left_open(&self) -> &[PathBuf] {
        &self.left_open
    }

    /// Where each of its segments starts among the log's bytes ([`len`](Log::len) counts them
    /// all): the lengths of the segments before it, by [`Block::segment`]; `[0]` for a log of
    /// one file. A block's place in the log is its segment's start plus its `offset`: for
    /// progress.
    pub fn segment_starts(&self) -> Vec<u64> {
        let mut starts = vec![0u64];
        for f in self.segments() {
            let last = starts.last().copied().unwrap_or(0);
            starts.push(last.saturating_add(f.len));
        }
        starts
    }

    /// The files it reads: its segments', or its own path.
    pub fn files(&self) -> Vec<&Path> {
        match &self.source {
            Source::Segments(chain) => chain.files().iter().map(|f| f.path.as_path()).collect(),
            _ => vec![self.path.as_path()],
        }
    }

    /// A new ledger for its blocks: one that knows its segments, for a recording of segments
    /// ([`Ledger::with_segments`]).
    pub fn ledger(&self) -> Ledger {
        let ledger = Ledger::new(self.header().format);
        match &self.source {
            Source::Segments(chain) => {
                let entries = chain
                    .files()
                    .iter()
                    .map(|f| SegmentEntry {
                        name: f
                            .path
                            .file_name()
                            .map_or_else(|| f.path.display().to_string(), |n| n.to_string_lossy().into_owned()),
                        segment: f.segment,
                    })
                    .collect();
                ledger.with_segments(entries, self.removed_later)
            }
            _ => ledger,
        }
    }

    /// What later recordings' disk budgets removed of it, segments and events, as the earlier
    /// property of their segments says (docs/FORMAT.md, "Earlier recordings"); counted in its
    /// [`ledger`](Log::ledger)'s removed segments.
    pub fn removed_by_later(&self) -> (u64, u64) {
        self.removed_later
    }

    /// The earlier recordings of its directory that the budget removed wholly, with their
    /// segments and events (recordings, segments, events), when the segments of this log say
    /// the most of them (docs/FORMAT.md, "Earlier recordings"); `None` otherwise.
    pub fn earlier_removed(&self) -> Option<(u64, u64, u64)> {
        self.earlier_gone
    }

    /// Its recording id: the header's ([`Properties::recording`](crate::wire::Properties),
    /// since format 2.0.2), or for a log without one the id derived from its header's bytes
    /// ([`RecordingId::derived`]). Every stream of one recording has the header's id; two
    /// logs of older formats have the same derived id only if their headers are byte for byte
    /// the same (same program, pid, host, clock readings and event sets).
    pub fn recording_id(&self) -> RecordingId {
        self.recording_id
    }

    /// The catalog of its sets, which names and checks its records.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Its length in bytes when it was opened (0 for a pipe): for progress.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it was empty when opened (a pipe always says so).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its blocks, to be read on another thread, and its catalog, to read them by.
    pub fn blocks_and_catalog(&mut self) -> (&mut (dyn BlockSource + Send), &Catalog) {
        let blocks: &mut (dyn BlockSource + Send) = match &mut self.source {
            Source::Stream(decoder) => decoder,
            Source::Ring(ring) => ring,
            Source::Segments(chain) => chain,
        };
        (blocks, &self.catalog)
    }

    /// For a ring file, what the ring reader found (the blocks it left out as damaged, what
    /// its rings overwrote): complete once every block was read. `None` for a stream.
    pub fn ring_findings(&self) -> Option<&RingFindings> {
        match &self.source {
            Source::Stream(_) | Source::Segments(_) => None,
            Source::Ring(ring) => Some(ring.findings()),
        }
    }

    /// Whether its writer is still at work, by the one rule of [`liveness`]: the lock its
    /// recorder holds on the file it writes (a ring file, a stream, a recording's last
    /// segment), else a ring file's heartbeat. What a ledger asks of a log without its stop
    /// marker ([`Ledger::findings`], [`Ledger::ending`](crate::ledger::Ledger::ending)).
    pub fn writer_alive(&self) -> bool {
        let heartbeat = self.ring_findings().map(|ring| ring.heartbeat_ns);
        self.files().last().is_some_and(|path| liveness::WriterLiveness::of_path(path, heartbeat).is_running())
    }

    /// For a ring file, its geometry (slots, blocks per slot, block size): what a reader
    /// needs to say how long its rings hold at the rate it recorded. `None` for a stream.
    pub fn ring_layout(&self) -> Option<&ring::Layout> {
        match &self.source {
            Source::Stream(_) | Source::Segments(_) => None,
            Source::Ring(ring) => Some(ring.reader().layout()),
        }
    }

    /// Where its blocks start and when they say their records do, from their headers, when it
    /// was opened with [`OpenOptions::index`] and is a stream in a regular file: taken once.
    /// Its blocks are then read up to the length the index was made at, so that they are the
    /// blocks it lists.
    pub fn take_index(&mut self) -> Option<Vec<BlockStart>> {
        self.index.take()
    }
}

impl BlockSource for Log {
    fn header(&self) -> &Header {
        Log::header(self)
    }

    fn next_block(&mut self) -> Option<Result<Block, BlockError>> {
        match &mut self.source {
            Source::Stream(decoder) => decoder.next_block(),
            Source::Ring(ring) => ring.next_block(),
            Source::Segments(chain) => chain.next_block(),
        }
    }

    fn next_pending(&mut self) -> Option<Result<PendingBlock, BlockError>> {
        match &mut self.source {
            Source::Stream(decoder) => decoder.next_pending(),
            Source::Ring(ring) => ring.next_pending(),
            Source::Segments(chain) => chain.next_pending(),
        }
    }

    fn recycle(&mut self, block: Block) {
        match &mut self.source {
            Source::Stream(decoder) => decoder.recycle(block),
            Source::Ring(ring) => ring.recycle(block),
            Source::Segments(chain) => chain.recycle(block),
        }
    }
    fn writer_alive(&self) -> bool {
        Log::writer_alive(self)
    }
}

/// Opens the log at `path`: a stream or a ring file, told apart by their magic, from a
/// regular file or a pipe (`zcat log.evt.gz | event-dump print /dev/stdin`; not a ring file,
/// which is read at positions); or a directory or glob that holds one log, such as the
/// segments of one recording ([`open_all`] says which files make a log).
pub fn open(path: &Path, options: OpenOptions) -> Result<Log, OpenError> {
    if std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return open_file(path, options);
    }
    let mut logs = open_all(std::slice::from_ref(&path.to_owned()), options)?;
    match logs.len() {
        1 => Ok(logs.remove(0)),
        n => Err(OpenError::Several { path: path.to_owned(), logs: n }),
    }
}

/// Opens the logs that `paths` name, in order (docs/FORMAT.md, "Reading segments"):
///
/// - a file named is a log (a stream, a ring file, a pipe; a segment `*.open` too);
/// - a directory names the files in it, and a path whose file name holds `*` or `?` (a glob
///   the shell did not expand) the files of its directory that match, less those ending in
///   `.open` (segments still being written: read when named) and those that are not event
///   logs;
/// - then the segments of one recording (streams with the segment header property and the
///   same recording id) are one log, in the order of their index, at the place of the first
///   one; files of several recordings are several logs, each read as one; one segment named
///   alone is read as the stream it is (no accounting of the segments not asked for).
///
/// Two files that are the same segment of a recording, or a segment whose event sets differ
/// from its recording's first segment's, are an error.
pub fn open_all(paths: &[PathBuf], options: OpenOptions) -> Result<Vec<Log>, OpenError> {
    let decode = DecodeOptions { force: options.force };
    let mut logs = Vec::new();
    for plan in recording::plan(paths, decode, options.writer_alive)? {
        match plan {
            Plan::File(path) => logs.push(open_file(&path, options)?),
            Plan::Recording { shown, files, header, mut left_open, removed_later, earlier_gone } => {
                let len = files.iter().map(|f| f.len).sum();
                let catalog = Catalog::new(&header.sets);
                let mut chain = Chain::new(files, *header, decode);
                let index = if options.index { chain.index() } else { None };
                left_open.sort();
                // Segments are grouped by their recording's id; one without (a hand-made
                // stream) is named by its first segment's header, as encoded.
                let recording_id = chain
                    .header()
                    .properties
                    .recording
                    .unwrap_or_else(|| RecordingId::derived(&chain.header().encode().unwrap_or_default()));
                logs.push(Log {
                    path: shown,
                    source: Source::Segments(Box::new(chain)),
                    catalog,
                    len,
                    index,
                    left_open,
                    recording_id,
                    removed_later,
                    earlier_gone,
                });
            }
        }
    }
    Ok(logs)
}

/// Opens the log file at `path`: a stream or a ring file, from a regular file or a pipe.
fn open_file(path: &Path, options: OpenOptions) -> Result<Log, OpenError> {
    let io_error = |error: io::Error| OpenError::Io { path: path.to_owned(), error };
    let meta = std::fs::metadata(path).map_err(io_error)?;
    if meta.is_dir() {
        return Err(OpenError::Directory(path.to_owned()));
    }
    let mut file = File::open(path).map_err(io_error)?;
    let mut magic = [0u8; 8];
    let got = read_up_to(&mut file, &mut magic).map_err(io_error)?;
    let decode = DecodeOptions { force: options.force };
    if kind_of(&magic[..got]) == Kind::Ring {
        if !meta.is_file() {
            return Err(OpenError::RingFromPipe(path.to_owned()));
        }
        // The ring reader reads at positions: where the magic left the file does not matter.
        let reader =
            RingReader::open(file, decode).map_err(|error| OpenError::Ring { path: path.to_owned(), error })?;
        let catalog = Catalog::new(&reader.header().sets);
        let recording_id = id_of(reader.header(), reader.header_bytes());
        let source = Source::Ring(RingBlocks::new(reader));
        return Ok(Log {
            path: path.to_owned(),
            source,
            catalog,
            len: meta.len(),
            index: None,
            left_open: Vec::new(),
            recording_id,
            removed_later: (0, 0),
            earlier_gone: None,
        });
    }
    // The index reads block headers at positions, through a second handle (a pipe has none).
    let len = meta.len();
    let indexing = if options.index && meta.is_file() { file.try_clone().ok() } else { None };
    let limit = if indexing.is_some() { len } else { u64::MAX };
    let reader: Box<dyn Read + Send> = if meta.is_file() {
        file.seek(SeekFrom::Start(0)).map_err(io_error)?;
        Box::new(file.take(limit))
    } else {
        // A pipe cannot seek: what was read of it goes back in front of the rest.
        Box::new(Cursor::new(magic[..got].to_vec()).chain(file))
    };
    stream_log(path, BufReader::with_capacity(1 << 20, reader), decode, len, |decoder| {
        // A read error leaves the log unindexed: its blocks are merged by the window alone.
        indexing.and_then(|f| index_blocks(&f, decoder.header(), decoder.header_len(), len).ok().flatten())
    })
}

/// The log of the stream `reader` reads from `path` (`len` bytes as the file stood), its
/// header read now, with the block index `index` makes once the header is known (or none).
fn stream_log(
    path: &Path,
    reader: BufReader<Box<dyn Read + Send>>,
    decode: DecodeOptions,
    len: u64,
    index: impl FnOnce(&Decoder<BufReader<Box<dyn Read + Send>>>) -> Option<Vec<BlockStart>>,
) -> Result<Log, OpenError> {
    let decoder =
        Decoder::with_options(reader, decode).map_err(|error| OpenError::Header { path: path.to_owned(), error })?;
    let index = index(&decoder);
    let catalog = Catalog::new(&decoder.header().sets);
    let recording_id = id_of(decoder.header(), decoder.header_bytes());
    Ok(Log {
        path: path.to_owned(),
        source: Source::Stream(decoder),
        catalog,
        len,
        index,
        left_open: Vec::new(),
        removed_later: (0, 0),
        earlier_gone: None,
        recording_id,
    })
}

/// What a path holds, as the opener reads it: by its metadata and, for a regular file, its
/// first bytes (the magic). [`open`] reads a `Ring` as a ring file and any other file as a
/// stream (whose header then says what is wrong, if it is not one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A directory: of the segments of a recording, or of several logs.
    Directory,
    /// A regular file that starts with an event stream's magic (a segment is one).
    Stream,
    /// A regular file that starts with a ring file's magic.
    Ring,
    /// Not a regular file (a pipe): not read here, since what is read of a pipe is gone; it
    /// is read once, by the log that opens it.
    Pipe,
    /// A regular file that starts with neither magic: not an event log, or one whose first
    /// bytes are not written yet.
    Other,
}

/// What `path` holds ([`Kind`]).
pub fn kind(path: &Path) -> Result<Kind, OpenError> {
    let io_error = |error: io::Error| OpenError::Io { path: path.to_owned(), error };
    let meta = std::fs::metadata(path).map_err(io_error)?;
    if meta.is_dir() {
        return Ok(Kind::Directory);
    }
    if !meta.is_file() {
        return Ok(Kind::Pipe);
    }
    let mut file = File::open(path).map_err(io_error)?;
    let mut magic = [0u8; 8];
    let got = read_up_to(&mut file, &mut magic).map_err(io_error)?;
    Ok(kind_of(&magic[..got]))
}

/// What a regular file whose first bytes are `magic` holds: the one test of the magics.
fn kind_of(magic: &[u8]) -> Kind {
    if ring::is_ring(magic) {
        Kind::Ring
    } else if magic == crate::codec::wire::MAGIC {
        Kind::Stream
    } else {
        Kind::Other
    }
}

/// Opens the event stream at `path` that its writer is still writing, to follow it (event-dump's
/// `follow` of a segment `*.open`, or of a stream its recorder holds): its blocks as they are
/// written. At the end of what is written so far (its header included), the reader asks
/// [`Growing::writing`] whether more will come and waits [`Growing::interval`] before reading
/// again; once the writer is done, or the file is no longer at `path` (renamed when sealed, or
/// removed), the file is read to its end and the log ends there. [`OpenOptions::index`] does
/// not apply (a growing file has no length to index up to). A file that is not a stream is
/// refused as [`open`] refuses it: by its header.
pub fn open_growing(path: &Path, options: OpenOptions, growing: Growing) -> Result<Log, OpenError> {
    let io_error = |error: io::Error| OpenError::Io { path: path.to_owned(), error };
    let meta = std::fs::metadata(path).map_err(io_error)?;
    if meta.is_dir() {
        return Err(OpenError::Directory(path.to_owned()));
    }
    let file = File::open(path).map_err(io_error)?;
    let reader: Box<dyn Read + Send> = Box::new(Tail::new(file, path, growing));
    let decode = DecodeOptions { force: options.force };
    stream_log(path, BufReader::with_capacity(1 << 16, reader), decode, meta.len(), |_| None)
}

/// The header's recording id, or the one derived from its bytes.
fn id_of(header: &Header, bytes: &[u8]) -> RecordingId {
    header.properties.recording.unwrap_or_else(|| RecordingId::derived(bytes))
}

/// Opens the ring file at `path` to follow it live or to control its program: a ring file
/// only (a stream is refused with a line that says so).
pub fn open_ring(path: &Path) -> Result<RingReader<File>, OpenError> {
    let meta = std::fs::metadata(path).map_err(|error| OpenError::Io { path: path.to_owned(), error })?;
    if meta.is_dir() {
        return Err(OpenError::Directory(path.to_owned()));
    }
    let file = File::open(path).map_err(|error| OpenError::Io { path: path.to_owned(), error })?;
    if !meta.is_file() {
        return Err(OpenError::RingFromPipe(path.to_owned()));
    }
    RingReader::open(file, DecodeOptions::default()).map_err(|error| OpenError::Ring { path: path.to_owned(), error })
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
