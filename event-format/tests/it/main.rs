//! event-format's integration tests, gathered in one test binary: one binary per file linked
//! the crate and its dev-dependencies once each. Each module's first line says what it covers.
//!
//! `tests/alloc.rs` stays a binary of its own: it measures the decoder with a counting global
//! allocator, which must see no other test's allocations.

mod aggregates;
mod callsites;
mod decode;
mod encode;
mod fuzz_corpus;
mod index;
mod layers;
mod packed;
mod regressions;
mod segments;
mod select;
mod zstd;

pub(crate) use test_scratch::Scratch;

/// An empty directory of the test `name`'s own, under `CARGO_TARGET_TMPDIR` (one per
/// process: no two tests of a process may name the same one, or the first to pass would
/// remove it under the other), removed when the test passes and kept when it fails
/// ([`Scratch`]).
pub(crate) fn dir(name: &str) -> Scratch {
    Scratch::named(env!("CARGO_TARGET_TMPDIR"), name)
}
