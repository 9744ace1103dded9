//! The codec: a stream's bytes as docs/FORMAT.md specifies them (header, blocks, records,
//! packing, the ring file), encoded and decoded. It stands on `event-def` alone; the reading
//! policy (`crate::reading`) stands on it, never the other way.

pub mod builtins;
pub mod callsites;
pub mod decode;
pub mod fields;
pub mod read_at;
pub mod ring;
pub mod wire;
