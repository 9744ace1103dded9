//! The workspace's end-to-end tests, gathered in one test binary: one binary per file linked
//! the recorder, the dumper and their dependencies once each. Each module's first line says
//! what it covers; `common` holds the child processes they start.

mod aggregates;
mod async_spans;
mod clean_stop;
mod common;
mod contract;
mod files;
mod fixtures;
mod house;
mod process;
mod reading_segments;
mod ring_fixtures;
mod runtime;
mod security;
mod segments;
mod signals;
mod snapshots;
mod startup;
mod stop;
mod top;
mod tracing;
mod varieties;
mod versions;
