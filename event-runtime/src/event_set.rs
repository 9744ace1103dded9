//! The event set as the program carries it: what `include_events!` embeds (`events::SET`)
//! and the recorder reads to write the stream's header.
//!
//! Its own module because both sides name it: the generated code (through `__private`) makes
//! it, and the recorder and the `tracing` bridge take it; neither needs the other for it.

use event_format::schema::Schema;

/// An event set as `include_events!` embeds it: the events.def it was generated from,
/// rendered canonically, and its name. Made by the macro; read by the recorder.
#[derive(Debug)]
pub struct EventSet {
    def: &'static str,
    path: &'static str,
    name: &'static str,
}

impl EventSet {
    #[doc(hidden)]
    pub const fn __new(def: &'static str, path: &'static str, name: &'static str) -> EventSet {
        EventSet { def, path, name }
    }

    /// The set's name: the `SET` line of its events.def, else the package name of the crate
    /// that includes it (docs/EVENT-SETS.md). Streams qualify its events by it when they
    /// hold more than one set.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The event set as events.def text (canonical rendering of the file it came from).
    pub fn def(&self) -> &'static str {
        self.def
    }

    /// The path of the events.def it was generated from.
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// The schema. The macro checked the text when it embedded it, so this parses.
    pub fn schema(&self) -> Result<Schema, event_format::def::DefErrors> {
        event_format::def::parse_set(self.def, self.path, self.name)
    }
}
