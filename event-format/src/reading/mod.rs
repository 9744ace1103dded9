//! The reading policy: what a reader makes of a log beyond its bytes. Opening a log by its
//! path, counting and wording what it lost, merging its threads by time, the roles of its
//! events, the languages that choose and filter them, and their text. It stands on the codec
//! (`crate::codec`).

pub mod filter;
pub mod histogram;
pub mod ledger;
pub mod log;
pub mod merge;
pub mod roles;
pub mod select;
pub mod text;
