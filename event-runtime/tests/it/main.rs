//! event-runtime's integration tests, gathered in one test binary: one binary per file linked
//! the crate and its dev-dependencies once each. Each module's first line says what it covers.
//!
//! `tests/big.rs` stays a binary of its own: it includes another events.def, and
//! `include_events!` belongs at a crate's root (the `event!` it generates finds its set
//! through `$crate::events`), so one crate holds one event set's macro.
//!
//! `tracing_bridge` is compiled with feature `tracing` only (its `#![cfg]`, which was the
//! binary's `required-features`): `cargo test --workspace` turns the feature on through the
//! workspace tests' dependency, `cargo test -p event-runtime --features tracing` here.

event_runtime::include_events!("../events.def");

mod capture;
mod floors;
mod policies;
mod record;
mod tracing_bridge;
mod typed;
mod ui;

use std::sync::{Mutex, MutexGuard};
pub(crate) use test_scratch::Scratch;

/// A process has one recording at a time: every test that records, in any module, holds this
/// while it does.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// An empty directory of the test `name`'s own, under `CARGO_TARGET_TMPDIR` (one per
/// process: no two tests of a process may name the same one, or the first to pass would
/// remove it under the other), removed when the test passes and kept when it fails
/// ([`Scratch`]).
pub(crate) fn dir(name: &str) -> Scratch {
    Scratch::named(env!("CARGO_TARGET_TMPDIR"), name)
}
