//! What goes wrong, as the one line the user sees ([`DumpError`]), and the logs of a command
//! line opened through event-format's one opener (`event_format::log`).

use event_format::ledger::{Findings, Ledger};
pub(crate) use event_format::log::Log;
use event_format::log::OpenOptions;
use std::fmt;
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

/// How event-dump opens logs: a directory's `.open` segment is read when its writer is gone
/// (killed), by the lock a recorder holds on the file it writes
/// (`event_format::log::liveness`).
pub(crate) fn options(force: bool, index: bool) -> OpenOptions {
    OpenOptions { force, index, writer_alive: Some(event_format::log::liveness::writer_running) }
}

/// Opens every log of `paths` (a file, or a directory or glob of segments: the segments of
/// one recording are one log; `event_format::log::open_all`); the first that cannot be
/// opened is the error.
pub(crate) fn open_all(paths: &[PathBuf], force: bool) -> Result<Vec<Log>, DumpError> {
    paths.iter().try_for_each(|p| local(p))?;
    event_format::log::open_all(paths, options(force, false)).map_err(|e| DumpError::new(e.to_string()))
}

/// Opens every log of `paths` as [`open_all`] does, and indexes the blocks of each stream in
/// a regular file ([`Log::take_index`]).
pub(crate) fn open_all_indexed(paths: &[PathBuf], force: bool) -> Result<Vec<Log>, DumpError> {
    paths.iter().try_for_each(|p| local(p))?;
    event_format::log::open_all(paths, options(force, true)).map_err(|e| DumpError::new(e.to_string()))
}

/// Opens `path`: a stream, or a ring file (recognised by its magic).
pub(crate) fn open(path: &Path, force: bool) -> Result<Log, DumpError> {
    open_with(path, options(force, false))
}

fn open_with(path: &Path, options: OpenOptions) -> Result<Log, DumpError> {
    local(path)?;
    event_format::log::open(path, options).map_err(|e| DumpError::new(e.to_string()))
}

/// The error for a log named by an `s3://` address (that is no local path): the readers read
/// local files, which one command fetches (docs/guide/fleet-datasets.md, "Reading shipped
/// segments", says why).
pub(crate) fn local(path: &Path) -> Result<(), DumpError> {
    let shown = path.to_string_lossy();
    if shown.starts_with("s3://") && !path.exists() {
        let dir = shown.trim_end_matches('/').rsplit('/').next().unwrap_or("log").to_owned();
        return Err(DumpError::new(format!(
            "{shown}: in object storage; event-dump reads local files: fetch it first (`aws s3 cp --recursive \
             {shown} {dir}/`), then read {dir}/"
        )));
    }
    Ok(())
}

/// Reads `log` to its end through its ledger (every block counted, every record classified,
/// a ring file's own findings added): what `check` judges it by.
pub(crate) fn ledger_of(log: &mut Log) -> Ledger {
    let mut ledger = log.ledger();
    let (blocks, catalog) = log.blocks_and_catalog();
    while let Some(block) = blocks.next_block() {
        match block {
            Ok(block) => {
                ledger.block(&block);
                for entry in block.entries(catalog) {
                    ledger.entry(block.header.thread, block.header.sequence, &entry);
                }
                blocks.recycle(block);
            }
            Err(e) => ledger.damaged(&e),
        }
    }
    if let Some(findings) = log.ring_findings() {
        ledger.ring_file(findings);
    }
    ledger
}

/// The line every reader but `check` closes with for a log that is not whole: its verdict
/// (the ledger's findings' one rule and words, [`Findings::verdict`]) and where to learn more;
/// `None` for a whole log.
pub(crate) fn not_whole_line(shown: &str, found: &Findings) -> Option<String> {
    (!found.is_whole(false))
        .then(|| format!("{shown}: {}; `event-dump check {shown}` tells more", found.verdict(false)))
}
