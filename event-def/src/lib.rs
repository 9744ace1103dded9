//! The events.def language, on its own: the grammar, the schema it describes, the format
//! letters and the runtime's built-in events.
//!
//! This is the part of the event telemetry that the proc macro (`event-macros`) needs, and
//! nothing more: no codec, no compression, no I/O. The stream's codec and readers
//! (`event-format`) and the recorder build on it, as defmt's decoder and macros share
//! `defmt-parser`.
//!
//! - [`def`] parses events.def into a [`Schema`] (reporting every error with file, line and
//!   column) and renders a schema back to events.def text.
//! - [`schema`] is the event set itself and its rules ([`Schema::check`]), applied alike to a
//!   hand-written file and to the schema a stream embeds.
//! - [`letter`] is the type of one parameter ([`Letter`]).
//! - [`meaning`] is what events mean beyond their parameters: the spans they begin and end, the
//!   counters they sample and the flows they take part in (`SPAN`, `COUNTER`, `FLOW`).
//! - [`builtin`] lists the runtime's built-in events (codes `0xFF00..`), the same in every
//!   stream.
//!
//! # Example
//!
//! ```
//! let schema = event_def::def::parse(
//!     "VERSION(1, 0, 0)\nKIND(Pool, \"pools\")\nRELATION(PoolInit, 0x0001, TRUE, Pool, WS, pool, class)\n",
//!     "events.def",
//! )?;
//! let event = schema.event("PoolInit").expect("declared");
//! assert_eq!(event.code, 0x0001);
//! assert_eq!(event.format, [event_def::Letter::Word, event_def::Letter::String]);
//! assert_eq!(event.params, ["pool", "class"]);
//!
//! let errors = event_def::def::parse("VERSION(1, 0, 0)\nRELATION(A, 1, TRUE, Pol, 0)\n", "events.def")
//!     .expect_err("Pol is not declared");
//! assert!(errors.to_string().contains("events.def:2:"));
//! # Ok::<(), event_def::def::DefErrors>(())
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod builtin;
pub mod def;
pub mod letter;
pub mod meaning;
pub mod schema;

pub use letter::Letter;
pub use schema::{EventType, Kind, Retired, Schema, Version};
