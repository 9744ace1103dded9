//! Opening a log: an event stream or a ring file, recognised by its magic, and read as a
//! [`BlockSource`] either way: a ring file's blocks come straight from the ring reader, never
//! re-encoded as a stream.

use event_format::decode::{BlockSource, BlockStart, Catalog, DecodeOptions, Decoder, index_blocks};
use event_format::ring::{self, RingBlocks, RingFindings, RingReader};
use event_format::wire::{Header, HeaderError};
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// What went wrong, as the one line the user sees; the exit code is 1.
#[derive(Debug)]
pub(crate) struct DumpError(pub(crate) String);

impl fmt::Display for DumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl DumpError {
    pub(crate) fn new(message: impl Into<String>) -> DumpError {
        DumpError(message.into())
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

/// An open log.
pub(crate) struct Log {
    pub(crate) path: PathBuf,
    source: Source,
    pub(crate) catalog: Catalog,
    /// Its length in bytes (for progress).
    pub(crate) len: u64,
    /// Where its blocks start and when they say their records do, from their headers, for a
    /// stream in a regular file opened with [`open_all_indexed`]; its blocks are then read up
    /// to the length the index was made at, so that they are the blocks it lists.
    pub(crate) index: Option<Vec<BlockStart>>,
}

impl Log {
    /// Its blocks: the one way every reader reads a log, stream or ring file.
    pub(crate) fn blocks(&mut self) -> &mut dyn BlockSource {
        match &mut self.source {
            Source::Stream(decoder) => decoder,
            Source::Ring(ring) => ring,
        }
    }

    /// Its blocks, to be read on another thread, and its catalog, to read them by.
    pub(crate) fn blocks_and_catalog(&mut self) -> (&mut (dyn BlockSource + Send), &Catalog) {
        let blocks: &mut (dyn BlockSource + Send) = match &mut self.source {
            Source::Stream(decoder) => decoder,
            Source::Ring(ring) => ring,
        };
        (blocks, &self.catalog)
    }

    pub(crate) fn header(&self) -> &Header {
        match &self.source {
            Source::Stream(decoder) => decoder.header(),
            Source::Ring(ring) => ring.header(),
        }
    }

    /// For a ring file, what the ring reader found: complete once every block was read.
    pub(crate) fn ring_findings(&self) -> Option<&RingFindings> {
        match &self.source {
            Source::Stream(_) => None,
            Source::Ring(ring) => Some(ring.findings()),
        }
    }
}

/// Opens every log of `paths`; the first that cannot be opened is the error.
pub(crate) fn open_all(paths: &[PathBuf], force: bool) -> Result<Vec<Log>, DumpError> {
    paths.iter().map(|p| open_with(p, force, false)).collect()
}

/// Opens every log of `paths` as [`open_all`] does, and indexes the blocks of each stream in
/// a regular file ([`Log::index`]).
pub(crate) fn open_all_indexed(paths: &[PathBuf], force: bool) -> Result<Vec<Log>, DumpError> {
    paths.iter().map(|p| open_with(p, force, true)).collect()
}

/// Opens `path`: a stream, or a ring file (recognised by its magic).
pub(crate) fn open(path: &Path, force: bool) -> Result<Log, DumpError> {
    open_with(path, force, false)
}

fn open_with(path: &Path, force: bool, index: bool) -> Result<Log, DumpError> {
    let shown = path.display();
    let meta =
        std::fs::metadata(path).map_err(|e| DumpError::new(format!("{shown}: cannot open: {}", io_reason(&e))))?;
    if meta.is_dir() {
        return Err(DumpError::new(format!("{shown}: is a directory; give a log file")));
    }
    let cannot_open = |e: io::Error| DumpError::new(format!("{shown}: cannot open: {}", io_reason(&e)));
    let mut file = File::open(path).map_err(cannot_open)?;
    let mut magic = [0u8; 8];
    let got = read_up_to(&mut file, &mut magic).map_err(|e| DumpError::new(format!("{shown}: cannot read: {e}")))?;
    let options = DecodeOptions { force };
    if ring::is_ring(&magic[..got]) {
        if !meta.is_file() {
            return Err(DumpError::new(format!(
                "{shown}: a ring file is read at positions, which a pipe cannot give; read the ring file itself, or a copy of it"
            )));
        }
        // The ring reader reads at positions: where the magic left the file does not matter.
        let reader = RingReader::open(file, options).map_err(|e| DumpError::new(format!("{shown}: {e}")))?;
        let catalog = Catalog::new(&reader.header().sets);
        let source = Source::Ring(RingBlocks::new(reader));
        return Ok(Log { path: path.to_owned(), source, catalog, len: meta.len(), index: None });
    }
    // The index reads block headers at positions, through a second handle (a pipe has none).
    let len = meta.len();
    let indexing = if index && meta.is_file() { file.try_clone().ok() } else { None };
    let limit = if indexing.is_some() { len } else { u64::MAX };
    let reader: Box<dyn Read + Send> = if meta.is_file() {
        file.seek(SeekFrom::Start(0)).map_err(cannot_open)?;
        Box::new(file.take(limit))
    } else {
        // A pipe (`zcat log.evt.gz | event-dump print /dev/stdin`) cannot seek: what was read
        // of it goes back in front of the rest.
        Box::new(Cursor::new(magic[..got].to_vec()).chain(file))
    };
    let decoder = Decoder::with_options(BufReader::with_capacity(1 << 20, reader), options)
        .map_err(|e| header_error(path, &e))?;
    // A read error leaves the log unindexed: its blocks are merged by the window alone.
    let index = indexing.and_then(|f| index_blocks(&f, decoder.header(), decoder.header_len(), len).ok().flatten());
    let catalog = Catalog::new(&decoder.header().sets);
    Ok(Log { path: path.to_owned(), source: Source::Stream(decoder), catalog, len, index })
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

fn io_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied (a trace is readable by its owner only)".to_owned(),
        _ => e.to_string(),
    }
}

/// The header's error names the way out itself (a newer median: `--force`).
fn header_error(path: &Path, e: &HeaderError) -> DumpError {
    DumpError::new(format!("{}: {e}", path.display()))
}
