//! A stream file read as its writer writes it ([`open_growing`](super::open_growing)): at the
//! end of what is written so far, the reader waits for more while the file is still being
//! written.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How a file its writer is still writing is read: whether more will come, and how long to
/// wait before reading again.
pub struct Growing {
    /// Whether the file's writer is still at work on it, asked with its path at the end of
    /// what is written so far (the opener asks nothing else: whether the writer's process
    /// runs or holds the file's lock is the caller's to tell). Once it says no, or the file
    /// is no longer at its path (renamed when sealed, or removed), what the file holds is read
    /// to its end and the log ends there.
    pub writing: Box<dyn FnMut(&Path) -> bool + Send>,
    /// How long to wait at the end of what is written before reading again.
    pub interval: Duration,
}

impl std::fmt::Debug for Growing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Growing").field("interval", &self.interval).finish_non_exhaustive()
    }
}

/// The file, read as it grows.
pub(super) struct Tail {
    file: File,
    /// The path it was opened by, while it is followed live.
    live: Option<PathBuf>,
    growing: Growing,
}

impl Tail {
    pub(super) fn new(file: File, path: &Path, growing: Growing) -> Tail {
        Tail { file, live: Some(path.to_owned()), growing }
    }
}

impl Read for Tail {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.file.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            let Some(path) = &self.live else { return Ok(0) };
            // Renamed (sealed) or removed, or its writer done: what it holds is all it will
            // hold, read to its end once more.
            if !path.exists() || !(self.growing.writing)(path) {
                self.live = None;
                continue;
            }
            std::thread::sleep(self.growing.interval);
        }
    }
}
