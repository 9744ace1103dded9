//! The process-wide words that every enabled `event!` reads, on one cache line of their own:
//! the divert word (`divert`) and the recorder's generation (`session`); and beside them the
//! two flags that the `tracing` bridge and the built-in events test before they record,
//! whether a recording runs (`session`) and whether a capture does (`divert`). An event in a
//! service finds them cold after the program's own work between two requests: kept apart,
//! each was a last-level cache miss of its own (BENCHMARKS.md, "the cache lines an enabled
//! event reads"); together they are one.
//!
//! All are written only on rare paths (a capture's start and end, a recording's triggers
//! and post windows, a start, a stop, a `fork()`), under their owners' locks; nothing that
//! is written often shares the line (its alignment gives it the line alone), so that reading
//! it never waits for another core's writes.

use std::sync::atomic::{AtomicBool, AtomicU64};

/// The words on [`LINE`], each owned by its module (`divert` or `session`), which stores
/// and loads it with the orderings it argues.
#[repr(C, align(64))]
#[derive(Debug)]
pub(crate) struct Line {
    /// The divert word (`divert`'s `ANY`: its docs there).
    pub(crate) divert: AtomicU64,
    /// The recorder's generation (`session`'s docs: bumped at every start and stop).
    pub(crate) generation: AtomicU64,
    /// Whether a recording runs (`session`'s `is_running`).
    pub(crate) running: AtomicBool,
    /// Whether a capture runs (`divert`'s `capturing`).
    pub(crate) capturing: AtomicBool,
}

/// The line itself.
pub(crate) static LINE: Line = Line {
    divert: AtomicU64::new(0),
    generation: AtomicU64::new(0),
    running: AtomicBool::new(false),
    capturing: AtomicBool::new(false),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_share_one_line_of_their_own() {
        // One line: every word in the same 64 bytes, and nothing else in them.
        assert_eq!(std::mem::align_of::<Line>(), 64);
        assert_eq!(std::mem::size_of::<Line>(), 64);
        let base = &LINE as *const Line as usize;
        assert_eq!(base % 64, 0);
        for word in [
            &LINE.divert as *const AtomicU64 as usize,
            &LINE.generation as *const AtomicU64 as usize,
            &LINE.running as *const AtomicBool as usize,
            &LINE.capturing as *const AtomicBool as usize,
        ] {
            assert_eq!(word / 64, base / 64);
        }
    }
}
