//! Where the threads' blocks live while they are written: the memory-mapped ring file
//! (`ringfile`, with its SIGBUS guard `busguard`), the heap lanes and rings (`lane`, whose
//! rings share one pool of blocks, `ringpool`), and the exchange between the recording
//! threads and the writer thread (`exchange`).
//!
//! These are the floor of the recorder: they know blocks and their commit protocol, not
//! events, sessions or sinks, and import nothing of the crate above the ground modules.

#[cfg(unix)]
pub(crate) mod busguard;
pub(crate) mod exchange;
pub(crate) mod lane;
pub(crate) mod ringfile;
pub(crate) mod ringpool;
