//! The event stream that event-runtime writes and event-dump reads: its codec and its
//! readers. The events.def language it embeds (grammar, schema, letters, built-in events) is
//! the crate `event-def`, which the proc macro uses alone; this crate re-exports its modules,
//! so that a reader needs one dependency.
//!
//! - [`def`], [`schema`], [`letter`], [`builtin`]: `event-def`'s, re-exported.
//!
//! Two layers, one folder each, the second standing on the first:
//!
//! **The codec** (`src/codec/`): the stream's bytes, as docs/FORMAT.md specifies them.
//!
//! - [`wire`] encodes and decodes the parts of a stream: header, blocks, records.
//! - [`decode`] reads a whole stream from untrusted input, block by block.
//! - [`ring`] reads a ring file, post mortem or live.
//! - [`builtins`] reads the built-in events by their arguments' names.
//! - [`fields`] is the grammar of `tracing` fields (`id=7 user="ada"`) in the built-in
//!   tracing events' text, written by the runtime's bridge and read by every reader.
//! - [`read_at`] reads a file at an offset, the one way the decoders touch a file.
//!
//! **The reading policy** (`src/reading/`): what a reader makes of a log.
//!
//! - [`log`] opens a log by its path (a stream or a ring file, from a file or a pipe): the one
//!   way every reader starts.
//! - [`ledger`] counts what a log lost and what is wrong with it, by one set of rules for
//!   every reader, and words it in one table of findings: gaps, repeats, losses, damage, bad
//!   records, unknown codes, the clean stop.
//! - [`merge`] orders the events of many threads, segments and logs by time.
//! - [`roles`] tells what a log's events mean beyond their parameters (the spans they begin and
//!   end, the counters they sample, the flows they take part in), and pairs spans' ends with
//!   their begins: the one rule every reader uses.
//! - [`histogram`] is the buckets of declared histograms (events.def's `HISTOGRAM`) and the
//!   merge of the recorder's `Histogram` records over threads, segments and logs.
//! - [`text`] renders decoded events as text.
//! - [`filter`] is ftrace's filter language (`size >= 512 && name ~ "Object*"`): event-dump's
//!   `--filter`, and a recorder's trigger conditions.
//! - [`select`] is the one language that chooses events (`EVENT_CONTROL`, a monitor's
//!   `event-dump control`, event-dump's `--kind` and `--event`): a text of kinds, events and
//!   globs, read into a [`select::Selection`] or [`select::Patterns`] and compiled per schema
//!   to a [`select::CodeSet`], one bit per event code.
//!
//! What only a writer needs (sealing a block in place, a record's header, a stop block) and the
//! ring file's byte offsets are in [`raw`], hidden from these docs: the recorder's, not a
//! reader's, and it may change in any release.
//!
//! docs/FORMAT.md in the repository is the normative description of the stream format.
//!
//! # Example
//!
//! ```
//! use event_format::decode::{Catalog, Decoder, Entry};
//! use event_format::wire::{BlockHeader, BlockWriter, Clock, ClockSource, Header, Order, Producer, Text, Value};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let schema = event_format::def::parse(
//!     "VERSION(1, 0, 0)\nKIND(Pool, \"pools\")\nRELATION(PoolInit, 0x0001, TRUE, Pool, WS, pool, class)\n",
//!     "events.def",
//! )?;
//! let clock = Clock { source: ClockSource::Deterministic, ticks_per_second: 1_000_000_000,
//!                     ref_ticks: 0, ref_wall_ns: 0, start_ticks: 0 };
//! let header = Header::new(schema, 4096, clock, Producer::current(0));
//! let mut stream = header.encode()?;
//! let mut block = BlockWriter::new(Order::NATIVE, 4096, &BlockHeader { thread: 1, ..BlockHeader::default() });
//! block.push(0x0001, 1500, &[Value::Word(7), Value::Str(Text::new("AMC"))])?;
//! stream.extend(block.finish());
//!
//! let mut decoder = Decoder::new(&stream[..])?;
//! let catalog = Catalog::new(&decoder.header().sets);
//! let block = decoder.next_block().expect("one block")?;
//! let Some(Entry::Event(event)) = block.entries(&catalog).next() else { panic!("one event") };
//! let mut line = String::new();
//! event_format::text::write_event(&mut line, &decoder.header().clock, &event)?;
//! assert_eq!(line, "0.000001500 T1 Pool.PoolInit pool=7 class=\"AMC\"");
//! # Ok(()) }
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod codec;
#[doc(hidden)]
pub mod fuzzing;
#[doc(hidden)]
pub mod raw;
mod reading;
/// Sample data for this workspace's tests and examples: not part of the API (hidden from the
/// docs, as the fuzz bodies are), and it may change in any release.
#[doc(hidden)]
pub mod testing;

pub use codec::{builtins, callsites, decode, fields, read_at, ring, wire};
pub use reading::{filter, histogram, ledger, log, merge, roles, select, text};

pub use event_def::{EventType, Kind, Letter, Retired, Schema, Version};
pub use event_def::{builtin, def, letter, schema};
