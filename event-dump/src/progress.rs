//! Progress on stderr for long work, only when stderr is a terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Work smaller than this shows no progress.
const WORTH_SHOWING: u64 = 64 << 20;

/// A percentage on stderr, redrawn at most ten times a second.
#[derive(Debug)]
pub(crate) struct Progress {
    label: String,
    total: u64,
    last: Option<Instant>,
    shown: bool,
}

impl Progress {
    /// Progress of `total` bytes of work; silent unless stderr is a terminal and the work
    /// is large.
    pub(crate) fn new(label: &str, total: u64) -> Progress {
        let on = total >= WORTH_SHOWING && std::io::stderr().is_terminal();
        Progress { label: label.to_owned(), total, last: on.then(Instant::now), shown: false }
    }

    /// `done` bytes of the work are done.
    pub(crate) fn update(&mut self, done: u64) {
        let Some(last) = self.last else { return };
        if last.elapsed() < Duration::from_millis(100) {
            return;
        }
        self.last = Some(Instant::now());
        let pct = (done.min(self.total) as f64 / self.total.max(1) as f64) * 100.0;
        let _ = write!(std::io::stderr(), "\r{} {pct:5.1}%", self.label);
        self.shown = true;
    }

    /// Clears the line.
    pub(crate) fn finish(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr(), "\r{:width$}\r", "", width = self.label.len() + 8);
            self.shown = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
