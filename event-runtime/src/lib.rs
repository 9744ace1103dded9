//! The event recorder: typed events from events.def, recorded into per-thread buffers and
//! written as a self-describing stream.
//!
//! A program declares its events in events.def, includes them once, starts a recording and
//! annotates its code:
//!
//! ```
//! // Once, in the crate root; the path is relative to the crate's Cargo.toml.
//! event_runtime::include_events!("../events.def");
//!
//! fn create_pool(pool: &u64) {
//!     event!(PoolInit, pool, pool, "AMC", 16u32);
//! }
//!
//! fn main() {
//!     let recording = event_runtime::Recorder::new().start().unwrap();
//!     create_pool(&7);
//!     let stream = recording.stop().unwrap();
//!
//!     // The stream names its events: any reader decodes it.
//!     use event_runtime::format::{Catalog, Decoder, Entry};
//!     let mut decoder = Decoder::new(&stream[..]).unwrap();
//!     let catalog = Catalog::new(&decoder.header().sets);
//!     let block = decoder.next_block().unwrap().unwrap();
//!     let names: Vec<String> = block
//!         .entries(&catalog)
//!         .filter_map(|e| match e { Entry::Event(e) => Some(e.desc.name.clone()), _ => None })
//!         .collect();
//!     assert!(names.contains(&"PoolInit".to_string()));
//! }
//! ```
//!
//! `include_events!` is called in the crate root, once per crate: every crate of a program may
//! carry its own events.def, and every set linked into the program is recorded into one stream
//! (docs/EVENT-SETS.md). Each set is named by its `SET(name)` line, else by the package name
//! of the crate that includes it, and registers itself: [`Recorder::new`] records every set
//! linked in, [`Recorder::sets`] only those it lists.
//!
//! `include_events!` generates, where it is called: the `event!` macro, usable in every module
//! of the crate after it and exported, so that the crates that depend on this one can emit its
//! events (`storage::event!(...)`); and a module `events` with the kind enum (`events::Kind`),
//! the event codes (`events::code::Name`), the event set's version (`events::VERSION`) and
//! the event set itself (`events::SET`), which the recorder writes into every stream's header.
//! It also generates the set's typed reader (`events::Event`, `events::read`; see [`read`]).
//! `event!` names its crate through a hidden `__event_runtime` item that it also generates.
//!
//! `event!(Name, args...)` takes the arguments in format order, with the Rust types of the
//! format letters (P: pointers, `&T`, `usize`; A: addresses; W: `u64`..`u8`; U: `u32`..`u8`;
//! I: signed; D: `f64`, `f32`; B: `bool`; S: anything `AsRef<str>`). Its arguments are
//! evaluated only when the event is enabled; when it is not, the cost is one relaxed load of the
//! set's control bits, a bit test and one branch (a running test [`capture`] forces the bits on
//! and decides on the enabled side).
//!
//! # The API
//!
//! - Sets: [`EventSet`] is what `include_events!` generates (`events::SET`);
//!   [`EventSet::registered`] lists every set linked in.
//! - Start: [`Recorder`] configures a recording (sinks, policy, sizes, clock, what to record)
//!   and [`Recorder::start`] starts it. [`start`] is the shortcut for a program configured by
//!   the environment alone (`EVENT_*`): it records only when the environment asks, as
//!   `RUST_LOG` does (docs/guide/configuration.md).
//! - Run: [`Recording`] is the running recording; [`Recording::stop`] (or dropping it) ends
//!   it and returns the memory sink's stream. [`flush`], from any thread, puts what that
//!   thread recorded so far into the sinks. [`message`], [`intern`] and [`label`] record the
//!   built-in events; [`control`] changes what is recorded while it runs.
//! - Keep the incident, under every policy: [`Recording::snapshot`] writes the latest events
//!   (the rings under `ring`; the window read back from the stream otherwise) into a whole
//!   event file while the recording goes on ([`SnapshotInfo`]); [`Recorder::trigger`]
//!   (`EVENT_TRIGGER`) makes the recording write them by itself when an event matches a
//!   condition, on a panic or on lost events, into [`Recorder::snapshots`]' pattern;
//!   [`Recorder::pin`] (`EVENT_PIN`) keeps rare events for as long as the recording, in every
//!   segment and every snapshot (docs/guide/keeping-the-incident.md).
//! - Test: [`capture`] (and [`Capture`]) records the events of the code a test calls, on the
//!   test's thread only, in parallel with other tests and with a recording; [`Captured`]
//!   decodes them for assertions (docs/guide/testing.md).
//! - Read: [`read`] is the typed reader that `include_events!` generates for its set
//!   (`events::Event`, `events::read`, `events::from_reader`): a log read back with the types
//!   that wrote it, checked against the compiled set before the first event.
//!   [`format`](mod@format) is what of the stream's codec a program needs to decode what it recorded
//!   untyped (the decoder, its events, their text); the whole codec is the `event-format` crate.
//! - Losses and limits: [`lost_unattributed`], [`StartError`], [`ConfigError`], [`Policy`], [`BufResize`] and
//!   the `DEFAULT_*` sizes; [`Signals`], the signal handlers a recording installs (never
//!   SIGINT or SIGTERM; [`Recorder`]'s docs, "Signals").
//!
//! The module `__private` is the generated code's bridge and is not an API.
//!
//! # Features
//!
//! - `hot`: compiles out every event whose `always` flag is FALSE.
//! - `rash`: compiles out every event.
//! - `tracing` (off by default): the module `tracing_bridge`, with `EventLayer`, a
//!   `tracing_subscriber` layer that records the `tracing` crate's events and spans, and
//!   `EVENTS`, an event set for programs that use only `tracing`.
//!
//! A compiled-out event still type-checks its arguments but evaluates none of them and, in an
//! optimised build, leaves no code.
//!
//! # Unsafe code
//!
//! The crate denies `unsafe` except in exactly eight modules, each of which says so with
//! `#![allow(unsafe_code)]` (or `#[allow(unsafe_code)]`): `blocks::ringfile` (the
//! memory-mapped ring file), `blocks::lane` (the heap lanes that share a thread's blocks with
//! the stop by the ring file's protocol; the thread buffers reach their blocks only through
//! the safe methods of `ringfile::Slot` and `lane::LaneWriter`), `clock` (reading the TSC),
//! `setup::crash` (installing signal handlers and the last `write(2)` of a fatal signal),
//! `blocks::busguard` (the ring file's SIGBUS handler, which maps memory over a ring file cut
//! short under its mapping), `files::sys` (`gethostname`, and `getpriority`/`setpriority`
//! for the writer thread's nice value), `setup::fork` (registering the `pthread_atfork`
//! handlers that keep a forked child off its parent's recording) and `sinks::space`
//! (`getrlimit` and `fallocate`, the room kept on the disk for a stop block).
//! Each block carries a `// SAFETY:` comment; the protocols are checked with loom and Miri
//! (README, "Contributing").
#![warn(missing_docs)]
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
// docs.rs (Cargo.toml, `package.metadata.docs.rs`) documents every feature, each gated item
// marked with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

// The recorder's floors, from the ground up: each imports only those before it
// (tests/it/floors.rs checks it).
mod clock;
mod config;
mod event_set;
mod files;
mod locks;
mod machine;
mod sync;

mod blocks;
mod incident;
mod sinks;

mod emit;
#[cfg(feature = "tracing")]
pub mod tracing_bridge;
mod writer;

mod setup;

pub use writer::control;
pub mod read;

#[doc(hidden)]
pub mod __private;

pub use config::{BufResize, ConfigError, Keep, Policy, Rotate, Signals};
pub use emit::annotate::{intern, label, message};
pub use emit::session::lost_unattributed;
pub use emit::traceback::TRACEBACK_EVENTS;
/// How the writer packs blocks ([`Recorder::packing`], `EVENT_PACK`): re-exported from
/// `event-format`, whose [`Packing`] docs say what each costs.
pub use event_format::wire::{Codec, Packing};
pub use event_macros::include_events;
pub use event_set::EventSet;
pub use setup::capture::{Capture, Captured, capture};
pub use setup::recorder::{DEFAULT_BLOCK_SIZE, DEFAULT_BUFFER_SIZE, DEFAULT_RING_THREADS, Recorder};
pub use setup::recording::{Recording, flush};
pub use setup::start::{start, start_or_warn};
pub use setup::start_error::StartError;
pub use writer::snapshot::SnapshotInfo;

/// What a program that reads what it recorded needs of the stream's codec (a memory sink's
/// stream, [`Recording::bytes`]; a test capture's `bytes()`; the typed reader's blocks): the
/// decoder and what it decodes, and the text `event-dump print` writes ([`format::text`]) and
/// the spans events.def declares ([`format::roles`]). These are `event-format`'s items; a
/// program that reads streams in depth (ring files, the ledger of losses, the filter and
/// selection languages, the encoder) depends on `event-format` itself. Recording needs none of
/// this: the recorder's API is the items above.
pub mod format {
    pub use event_format::decode::{Block, BlockError, BlockSource, Catalog, Decoder, Desc, Entry, Event};
    pub use event_format::wire::{Header, Text, Value};
    pub use event_format::{roles, text};
}
