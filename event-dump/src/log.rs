//! Opening a log: an event stream, or a ring file read as one.

use event_format::decode::{Catalog, DecodeOptions, Decoder};
use event_format::ring::{self, RingReader, RingStream};
use event_format::wire::{Header, HeaderError};
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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

/// A ring file's summary, filled in as its stream is read.
pub(crate) type RingSummary = Arc<Mutex<Option<ring::RingSummary>>>;

/// An open log.
pub(crate) struct Log {
    pub(crate) path: PathBuf,
    pub(crate) decoder: Decoder<Box<dyn Read>>,
    pub(crate) catalog: Catalog,
    /// Its length in bytes (for progress).
    pub(crate) len: u64,
    /// Set when the log is a ring file: what the ring reader found, once read.
    pub(crate) ring: Option<RingSummary>,
}

impl Log {
    pub(crate) fn header(&self) -> &Header {
        self.decoder.header()
    }
}

/// A ring file's stream that records the reader's summary when it ends.
struct SummarisedRing {
    stream: RingStream<File>,
    summary: RingSummary,
}

impl Read for SummarisedRing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.stream.read(buf)?;
        if n == 0 {
            *self.summary.lock().unwrap_or_else(|p| p.into_inner()) = Some(self.stream.summary().clone());
        }
        Ok(n)
    }
}

/// Opens `path`: a stream, or a ring file (recognised by its magic).
pub(crate) fn open(path: &Path, force: bool) -> Result<Log, DumpError> {
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
        // The ring reader reads at positions: where the magic left the file does not matter.
        let reader = RingReader::open(file, options).map_err(|e| DumpError::new(format!("{shown}: {e}")))?;
        let summary: RingSummary = Arc::new(Mutex::new(None));
        let stream = SummarisedRing { stream: RingStream::new(reader), summary: Arc::clone(&summary) };
        let decoder =
            Decoder::with_options(Box::new(stream) as Box<dyn Read>, options).map_err(|e| header_error(path, &e))?;
        let catalog = Catalog::new(&decoder.header().schema);
        return Ok(Log { path: path.to_owned(), decoder, catalog, len: meta.len(), ring: Some(summary) });
    }
    file.seek(SeekFrom::Start(0)).map_err(cannot_open)?;
    let reader: Box<dyn Read> = Box::new(BufReader::with_capacity(1 << 20, file));
    let decoder = Decoder::with_options(reader, options).map_err(|e| header_error(path, &e))?;
    let catalog = Catalog::new(&decoder.header().schema);
    Ok(Log { path: path.to_owned(), decoder, catalog, len: meta.len(), ring: None })
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
