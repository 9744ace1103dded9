//! Where the stream goes: the sinks a recording writes its blocks to (`sink`: a file, a
//! memory buffer, a raw descriptor), the segments a rotating file is cut into (`segments`),
//! and the room kept on the disk for them (`space`).
//!
//! The writer thread owns the sinks; the session holds them for it, so that a stop, a
//! snapshot and a thread's direct write reach them under one lock.

pub(crate) mod segments;
pub(crate) mod sink;
pub(crate) mod space;
