//! The event set as the program carries it: what `include_events!` embeds (`events::SET`)
//! and the recorder reads to write the stream's header, and the registry of every set linked
//! into the program.
//!
//! Its own module because both sides name it: the generated code (through `__private`) makes
//! and registers it, and the recorder and the `tracing` bridge take it; neither needs the
//! other for it.
//!
//! Registration needs no central list (docs/EVENT-SETS.md, decision 4): each crate's
//! `include_events!` puts a `&'static EventSet` into the distributed slice [`SETS`]
//! (`linkme`), which the linker gathers from every crate linked into the program.
//!
//! Each set carries its own control bits, one per event by its index in the set: the
//! generated `event!` tests its bit in a static whose address is known at link time (one
//! relaxed load and a bit test). The recorder sets them at start from the selection and
//! clears them at stop; a set that the recording does not hold keeps them all clear.

use event_format::schema::Schema;
use std::sync::atomic::{AtomicU64, Ordering};

/// An event set as `include_events!` embeds it: the events.def it was generated from,
/// rendered canonically, its name, the version of the package that includes it, and its
/// control bits. Made by the macro; read by the recorder.
#[derive(Debug)]
pub struct EventSet {
    def: &'static str,
    path: &'static str,
    name: &'static str,
    package_version: &'static str,
    /// Bit `j % 64` of word `j / 64`: event `j` of the set is recorded now. Written only by
    /// `control` (under its lock); read by `event!` with relaxed loads.
    bits: &'static [AtomicU64],
}

/// Every event set linked into the program, registered by `include_events!`.
#[linkme::distributed_slice]
pub static SETS: [&'static EventSet];

impl EventSet {
    #[doc(hidden)]
    pub const fn __new(
        def: &'static str,
        path: &'static str,
        name: &'static str,
        package_version: &'static str,
        bits: &'static [AtomicU64],
    ) -> EventSet {
        EventSet { def, path, name, package_version, bits }
    }

    /// The set's name: the `SET` line of its events.def, else the package name of the crate
    /// that includes it (docs/EVENT-SETS.md). Streams qualify its events by it when they
    /// hold more than one set. A recording that holds two semver-incompatible versions of
    /// one set names them `NAME-vMAJOR` (see [`Recorder`](crate::Recorder)).
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

    /// The version of the package that includes it (`CARGO_PKG_VERSION`), empty when it was
    /// not built by cargo.
    pub fn package_version(&self) -> &'static str {
        self.package_version
    }

    /// The schema. The macro checked the text when it embedded it, so this parses.
    pub fn schema(&self) -> Result<Schema, event_format::def::DefErrors> {
        event_format::def::parse_set(self.def, self.path, self.name)
    }

    /// Every event set registered by `include_events!` in the crates linked into the
    /// program, each once, in no particular order.
    pub fn registered() -> Vec<&'static EventSet> {
        let mut sets: Vec<&'static EventSet> = Vec::new();
        for set in SETS.iter() {
            if !sets.iter().any(|s| std::ptr::eq(*s, *set)) {
                sets.push(set);
            }
        }
        sets
    }

    /// Sets the control bits: event `j` on when `on(j)`.
    pub(crate) fn set_bits(&self, events: usize, on: impl Fn(usize) -> bool) {
        for (w, word) in self.bits.iter().enumerate() {
            let mut value = 0u64;
            for b in 0..64 {
                let j = w * 64 + b;
                if j < events && on(j) {
                    value |= 1 << b;
                }
            }
            // Relaxed: an enable bit only decides whether to record (`control`'s module docs).
            word.store(value, Ordering::Relaxed);
        }
    }

    /// Clears every control bit: nothing of the set is recorded. Atomic stores only (safe
    /// in a child just after `fork()`).
    pub(crate) fn clear_bits(&self) {
        for word in self.bits {
            word.store(0, Ordering::Relaxed);
        }
    }

    /// Whether event `index` is recorded now.
    pub(crate) fn index_enabled(&self, index: usize) -> bool {
        self.bits.get(index / 64).is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (index % 64)) != 0)
    }
}

/// Whether event `index` of the set whose bits are `bits` is recorded now: one relaxed load
/// and a bit test (an index past the bits is never recorded).
#[inline(always)]
pub(crate) fn enabled(bits: &[AtomicU64], index: u16) -> bool {
    // Relaxed: see `control`'s module docs.
    bits.get(usize::from(index >> 6)).is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (index & 63)) != 0)
}
