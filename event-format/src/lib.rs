//! The event stream that event-runtime writes and event-dump reads: its codec and its
//! readers. The events.def language it embeds (grammar, schema, letters, built-in events) is
//! the crate `event-def`, which the proc macro uses alone; this crate re-exports its modules,
//! so that a reader needs one dependency.
//!
//! - [`def`], [`schema`], [`letter`], [`builtin`]: `event-def`'s, re-exported.
//! - [`builtins`] reads the built-in events into typed variants ([`builtins::BuiltinEvent`]):
//!   the one way a reader learns a thread's name, a label or a span from them.
//! - [`wire`] encodes and decodes the parts of a stream: header, blocks, records.
//! - [`decode`] reads a whole stream from untrusted input, block by block.
//! - [`log`] opens a log by its path (a stream or a ring file, from a file or a pipe): the one
//!   way every reader starts.
//! - [`ring`] reads a ring file, post mortem or live.
//! - [`ledger`] counts what a log lost and what is wrong with it, by one set of rules for
//!   every reader: gaps, repeats, losses, damage, bad records, unknown codes, the clean stop.
//! - [`roles`] tells what a log's events mean beyond their parameters (the spans they begin and
//!   end, the counters they sample, the flows they take part in), and pairs spans' ends with
//!   their begins: the one rule every reader uses.
//! - [`histogram`] is the buckets of declared histograms (events.def's `HISTOGRAM`) and the
//!   merge of the recorder's `Histogram` records over threads, segments and logs.
//! - [`text`] renders decoded events as text.
//! - [`filter`] is ftrace's filter language (`size >= 512 && name ~ "Object*"`): event-dump's
//!   `--filter`, and a recorder's trigger conditions.
//! - [`fields`] is the grammar of `tracing` fields (`id=7 user="ada"`) in the built-in
//!   tracing events' text, written by the runtime's bridge and read by every reader.
//! - [`select`] is the one language that chooses events (`EVENT_CONTROL`, a monitor's
//!   `event-dump control`, event-dump's `--kind` and `--event`): a text of kinds, events and
//!   globs, read into a [`select::Selection`] or [`select::Patterns`] and compiled per schema
//!   to a [`select::CodeSet`], one bit per event code.
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

pub mod builtins;
pub mod decode;
pub mod fields;
pub mod filter;
#[doc(hidden)]
pub mod fuzzing;
pub mod histogram;
pub mod ledger;
pub mod log;
pub mod merge;
pub mod read_at;
pub mod ring;
pub mod roles;
pub mod select;
/// Sample data for this workspace's tests and examples: not part of the API (hidden from the
/// docs, as the fuzz bodies are), and it may change in any release.
#[doc(hidden)]
pub mod testing;
pub mod text;
pub mod wire;

pub use event_def::{EventType, Kind, Letter, Retired, Schema, Version};
pub use event_def::{builtin, def, letter, schema};
