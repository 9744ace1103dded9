//! event-dump's integration tests, gathered in one test binary: one binary per file linked
//! the crate and its dev-dependencies (the recorder, SQLite) once each. Each module's first
//! line says what it covers; `common` (tests/common/mod.rs, shared with `cli`) holds the logs
//! they read and running event-dump.
//!
//! `tests/cli.rs` stays a binary of its own: its snapshots show what it records in-process,
//! and that depends on the binary. A recording names the test's thread as libtest does, by
//! the test's path in its crate (`stats_and_check`; `cli::stats_and_check` in a module of
//! this crate), and writes the binary's name into the header, whose length shows in offsets.

event_runtime::include_events!("../events.def");

mod aggregates;
#[path = "../common/mod.rs"]
mod common;
mod export_chrome;
mod export_ctf;
mod export_folded;
mod export_otlp;
mod export_parquet;
mod export_parquet_engines;
mod export_perfetto;
mod export_sqlite;
mod export_window;
mod filter_values;
mod hostile;
mod latency;
mod ledger;
mod print_jobs;
mod segments;
mod sets;
#[cfg(feature = "s3")]
mod ship;
mod summary;
mod verdict;
