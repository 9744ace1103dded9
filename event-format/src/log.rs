//! Opening a log: the one way every reader (event-dump's commands, the typed reader, `follow`)
//! turns a path into blocks. An event stream or a ring file, recognised by its magic, from a
//! regular file or a pipe, read as a [`BlockSource`] either way: a ring file's blocks come
//! straight from the ring reader, never re-encoded as a stream.
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

use crate::decode::{Block, BlockError, BlockSource, BlockStart, Catalog, DecodeOptions, Decoder, index_blocks};
use crate::ring::{self, RingBlocks, RingError, RingFindings, RingReader};
use crate::wire::{Header, HeaderError, RecordingId};
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// How to open a log.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenOptions {
    /// Read a stream of a newer median format version (docs/FORMAT.md, "Reader's rules").
    pub force: bool,
    /// Index a stream's blocks before reading it ([`Log::take_index`]): one positioned read
    /// of each block's header, for readers that merge by time (event-dump's `print` and
    /// exports). Only a stream in a regular file is indexed.
    pub index: bool,
}

/// Why a log could not be opened: one line that names the path, says what is wrong and, where
/// there is one, what to do.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// The file cannot be opened or read.
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// The path is a directory.
    Directory(PathBuf),
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

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OpenError::Io { error, .. } => Some(error),
            OpenError::Header { error, .. } => Some(error),
            OpenError::Ring { error, .. } => Some(error),
            OpenError::Directory(_) | OpenError::RingFromPipe(_) => None,
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
}

/// An open log: its header, the catalog its records are named by, and its blocks, in the
/// order the log holds them ([`BlockSource`]).
pub struct Log {
    path: PathBuf,
    source: Source,
    catalog: Catalog,
    len: u64,
    index: Option<Vec<BlockStart>>,
    recording_id: RecordingId,
}

impl fmt::Debug for Log {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.source {
            Source::Stream(_) => "stream",
            Source::Ring(_) => "ring file",
        };
        f.debug_struct("Log").field("path", &self.path).field("kind", &kind).field("len", &self.len).finish()
    }
}

impl Log {
    /// The path it was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its header.
    pub fn header(&self) -> &Header {
        match &self.source {
            Source::Stream(decoder) => decoder.header(),
            Source::Ring(ring) => ring.header(),
        }
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
        };
        (blocks, &self.catalog)
    }

    /// For a ring file, what the ring reader found (the blocks it left out as damaged, what
    /// its rings overwrote): complete once every block was read. `None` for a stream.
    pub fn ring_findings(&self) -> Option<&RingFindings> {
        match &self.source {
            Source::Stream(_) => None,
            Source::Ring(ring) => Some(ring.findings()),
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
        }
    }

    fn recycle(&mut self, block: Block) {
        match &mut self.source {
            Source::Stream(decoder) => decoder.recycle(block),
            Source::Ring(ring) => ring.recycle(block),
        }
    }
}

/// Opens the log at `path`: a stream or a ring file, told apart by their magic, from a
/// regular file or a pipe (`zcat log.evt.gz | event-dump print /dev/stdin`; not a ring file,
/// which is read at positions).
pub fn open(path: &Path, options: OpenOptions) -> Result<Log, OpenError> {
    let io_error = |error: io::Error| OpenError::Io { path: path.to_owned(), error };
    let meta = std::fs::metadata(path).map_err(io_error)?;
    if meta.is_dir() {
        return Err(OpenError::Directory(path.to_owned()));
    }
    let mut file = File::open(path).map_err(io_error)?;
    let mut magic = [0u8; 8];
    let got = read_up_to(&mut file, &mut magic).map_err(io_error)?;
    let decode = DecodeOptions { force: options.force };
    if ring::is_ring(&magic[..got]) {
        if !meta.is_file() {
            return Err(OpenError::RingFromPipe(path.to_owned()));
        }
        // The ring reader reads at positions: where the magic left the file does not matter.
        let reader =
            RingReader::open(file, decode).map_err(|error| OpenError::Ring { path: path.to_owned(), error })?;
        let catalog = Catalog::new(&reader.header().sets);
        let recording_id = id_of(reader.header(), reader.header_bytes());
        let source = Source::Ring(RingBlocks::new(reader));
        return Ok(Log { path: path.to_owned(), source, catalog, len: meta.len(), index: None, recording_id });
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
    let decoder = Decoder::with_options(BufReader::with_capacity(1 << 20, reader), decode)
        .map_err(|error| OpenError::Header { path: path.to_owned(), error })?;
    // A read error leaves the log unindexed: its blocks are merged by the window alone.
    let index = indexing.and_then(|f| index_blocks(&f, decoder.header(), decoder.header_len(), len).ok().flatten());
    let catalog = Catalog::new(&decoder.header().sets);
    let recording_id = id_of(decoder.header(), decoder.header_bytes());
    Ok(Log { path: path.to_owned(), source: Source::Stream(decoder), catalog, len, index, recording_id })
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
