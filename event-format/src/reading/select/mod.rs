//! The selection language: which events a program records and which a reader shows.
//!
//! One language serves the environment variable `EVENT_CONTROL`, read at start-up, the
//! runtime's `control::apply`, a monitor process that changes a running program's choice
//! (`event-dump control`), in the spirit of the Memory Pool System's
//! `MPS_TELEMETRY_CONTROL`, and event-dump's `--kind` and `--event`. A text is read once and
//! compiled once per schema to a [`CodeSet`], one bit per event code, so that the question
//! asked for every event ("is this one chosen?") is one index and one bit test.
//!
//! A text is a list of items separated by whitespace and/or commas:
//!
//! | item | meaning |
//! |---|---|
//! | `5`, `0x5` | the kind mask becomes this number; every override is cleared |
//! | `all`, `none` | every kind, no kind; every override is cleared |
//! | `Pool`, `Po*`, `?ool` | these kinds are recorded; their events' overrides are cleared |
//! | `Pool:PoolInit`, `Pool:*Init`, `*:*Begin` | these events are recorded, whatever their kind |
//! | `PoolInit`, `*Init` | a word that names no kind but names events: as `*:PoolInit` |
//! | `-` before any of these | removes instead: kinds off, events never recorded, `-all` is `none` |
//! | `storage:Page`, `storage:*`, `storage:0x3` | with several sets: a kind, every kind, the kind mask of set `storage` |
//! | `storage:Page:PageWrite`, `*:*:PoolInit` | with several sets: events of a set (each part a glob) |
//!
//! In a glob ([`glob`]), `*` matches any run of characters and `?` exactly one. Names are
//! case-sensitive. `all` and `none` are keywords wherever they stand alone, even when a kind
//! has that name. Built-in events (kind `Builtin`) are always recorded and cannot be named.
//!
//! Items apply left to right, so the last one wins: `Pool -Pool:PoolInit` records every
//! Pool event but PoolInit, and `-Pool:PoolInit Pool` records every Pool event.
//!
//! One API serves one set or several (a single set is a list of one); a program or a stream
//! with more than one events.def qualifies items by set the way ftrace qualifies events by
//! subsystem, `set:Kind`, `set:Kind:Event`, `set:*`, `set:0x5`, globs in every part; numbers,
//! `all` and `none` apply to every set; an unqualified name resolves in the sets that define
//! it, and is an error listing the qualified candidates when more than one does (a glob
//! applies in every set where it matches). The rules are in the [`sets`] module's docs.
//!
//! A recorder's side, one [`Selection`] per set: [`from_env_text`] gives a text its start-up
//! meaning, [`apply`] applies a text to the current selections (what a monitor does),
//! [`describe`] writes selections back as a text that reads back to them, and
//! [`Selection::compile`] makes a set's [`CodeSet`].
//!
//! A reader's side: [`Patterns`] are the same items without numbers and keywords, where the
//! built-in events can be named, a bare word names what the option says ([`Word`]), and
//! `Kind.Event` (as event-dump prints an event) is read as `Kind:Event`;
//! [`Patterns::compile`] makes a log's [`CodeSet`].
//!
//! Every error is a [`SelectError`]: one line naming the item, its column and what to write
//! instead. No input makes these functions panic.
//!
//! ```
//! use event_format::select;
//!
//! let schema = event_format::testing::sample_schema();
//! let selections = select::from_env_text("all -Pool:PoolInit", &[&schema])?;
//! let codes = selections[0].compile(&schema);
//! assert!(!codes.contains(schema.event("PoolInit").unwrap().code));
//! assert!(codes.contains(schema.event("PoolStats").unwrap().code));
//! assert_eq!(select::describe(&[&schema], &selections), "all -Pool:PoolInit");
//! # Ok::<(), select::SelectError>(())
//! ```

mod codes;
pub mod glob;
mod grammar;
mod pattern;
mod selection;
pub mod sets;
#[cfg(test)]
mod tests;

pub use codes::{CodeSet, WORDS};
pub use grammar::SelectError;
pub use pattern::{Pattern, Patterns, Word};
pub use selection::Selection;
pub use sets::{apply, describe, from_env_text};
