//! event-format's integration tests, gathered in one test binary: one binary per file linked
//! the crate and its dev-dependencies once each. Each module's first line says what it covers.
//!
//! `tests/alloc.rs` stays a binary of its own: it measures the decoder with a counting global
//! allocator, which must see no other test's allocations.

mod decode;
mod encode;
mod fuzz_corpus;
mod index;
mod packed;
mod regressions;
mod segments;
mod select;
