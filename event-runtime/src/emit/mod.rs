//! The hot path and the state it reads: the recording session every thread buffer shares
//! (`session`), the per-thread buffers (`buffer`), the divert word and the cold paths it
//! opens (`divert`; `admit` for limits, `capture_buffer` for a test's capture), the one cache
//! line that holds the process-wide words every enabled event reads (`line`), the limits
//! and histograms a thread counts (`aggregate`), and the built-in events (`annotate`,
//! `traceback`).
//!
//! It stands on the blocks (`blocks`), the incidents' watch (`incident`) and the sinks
//! (`sinks`); the writer thread and the start and stop (`writer`, `setup`) stand on it, and
//! nothing here calls them.

pub(crate) mod admit;
pub(crate) mod aggregate;
pub(crate) mod annotate;
pub(crate) mod buffer;
pub(crate) mod capture_buffer;
pub(crate) mod divert;
pub(crate) mod line;
pub(crate) mod session;
pub(crate) mod traceback;
