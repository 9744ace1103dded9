//! What notices an incident and what it keeps: the triggers and pins that watch events
//! (`trigger`, `EVENT_TRIGGER`, `EVENT_PIN`) and the window of recent blocks that a
//! snapshot of a stream reads back (`history`).
//!
//! The thread buffers consult the triggers on their cold path and the sinks keep the window
//! and repeat the pins; the snapshots themselves are written by `writer::snapshot`, which the
//! writer thread serves once a turn (docs/guide/keeping-the-incident.md).

pub(crate) mod history;
pub(crate) mod trigger;
