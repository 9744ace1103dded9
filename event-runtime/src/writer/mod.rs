//! Off the recording threads' path: the writer thread (`thread`), the writes it and a stop
//! make (`write`), whether it shares a busy CPU (`contention`), the snapshots it takes for a
//! trigger or a request (`snapshot`), and the control of what is recorded, with the answers
//! to the ring file's control requests (`control`, the public `event_runtime::control`).
//!
//! It stands on the hot path's session (`emit`) and is started and ended by `setup`.

pub(crate) mod contention;
pub mod control;
pub(crate) mod snapshot;
pub(crate) mod thread;
pub(crate) mod write;
