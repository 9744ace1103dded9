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
use std::sync::{Mutex, MutexGuard};

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

    /// The name a recording gives it when it holds another set of its name, from a
    /// semver-incompatible version of the package: `NAME-vMAJOR` (`storage-v0_3` for 0.3.x).
    /// The recorder names it so in the header, and the typed reader finds it by it.
    pub(crate) fn versioned_name(&self) -> String {
        format!("{}-v{}", self.name, compatible(self.package_version))
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

    /// Sets the control bits: event `j` on when `on(j)`. While a capture runs, into the
    /// shadow ([`SHADOW`]).
    pub(crate) fn set_bits(&self, events: usize, on: impl Fn(usize) -> bool) {
        let words = (0..self.bits.len())
            .map(|w| (0..64).filter(|b| w * 64 + b < events && on(w * 64 + b)).fold(0u64, |v, b| v | 1 << b))
            .collect();
        self.store_bits(words);
    }

    /// Whether `bits` are this set's control bits (the static `event!` tests).
    pub(crate) fn has_bits(&self, bits: &[AtomicU64]) -> bool {
        std::ptr::eq(self.bits.as_ptr(), bits.as_ptr())
    }

    /// Clears every control bit: nothing of the set is recorded (while a capture runs, in
    /// the shadow: the bits the capture forces on stay on).
    pub(crate) fn clear_bits(&self) {
        store_words(&mut lock_shadow(), self.bits, vec![0; self.bits.len()]);
    }

    /// [`clear_bits`](EventSet::clear_bits) in a child just after `fork()`, which waits for
    /// no lock: when the shadow's is held (by a thread that does not exist there), the bits
    /// are cleared directly. Only there: elsewhere a held lock is a live thread's, and
    /// clearing the bits under a running capture would take its events.
    pub(crate) fn clear_bits_after_fork(&self) {
        let Ok(mut shadow) = SHADOW.try_lock() else {
            for word in self.bits {
                word.store(0, Ordering::Relaxed);
            }
            return;
        };
        store_words(&mut shadow, self.bits, vec![0; self.bits.len()]);
    }

    /// Stores the selection's words: into the bits, or while a capture runs into the shadow.
    fn store_bits(&self, words: Vec<u64>) {
        store_words(&mut lock_shadow(), self.bits, words);
    }

    /// Whether the selection records event `index` now.
    pub(crate) fn index_enabled(&self, index: usize) -> bool {
        u16::try_from(index).is_ok_and(|index| enabled(self.bits, index))
    }
}

/// While a capture runs (`capture`'s module docs), every registered set's control bits are
/// all ones, so that `event!`'s one test of the disabled path passes and the capture decides
/// on the enabled side; the selection that control makes meanwhile is kept here, per set (the
/// address of its bits, and its words), and put back when the last capture ends. `None` while
/// no capture runs.
static SHADOW: Mutex<Option<Shadow>> = Mutex::new(None);

/// The shadow's selection: per set, the address of its bits and its words.
type Shadow = Vec<(usize, Vec<u64>)>;

fn lock_shadow() -> MutexGuard<'static, Option<Shadow>> {
    // Every update under the lock is complete before it is released.
    SHADOW.lock().unwrap_or_else(|p| p.into_inner())
}

/// Stores `words` as the selection of the set whose bits are `bits`.
fn store_words(shadow: &mut Option<Shadow>, bits: &[AtomicU64], words: Vec<u64>) {
    match shadow {
        Some(list) => match list.iter_mut().find(|(key, _)| *key == bits.as_ptr() as usize) {
            Some((_, kept)) => *kept = words,
            None => list.push((bits.as_ptr() as usize, words)),
        },
        None => {
            for (word, value) in bits.iter().zip(words) {
                // Relaxed: an enable bit only decides whether to record (`control`'s module docs).
                word.store(value, Ordering::Relaxed);
            }
        }
    }
}

/// Forces every registered set's bits on (`on`: the first capture starts), keeping the
/// selection in the shadow, or puts the selection back (the last capture ends).
pub(crate) fn force_all(on: bool) {
    let mut shadow = lock_shadow();
    if on {
        if shadow.is_none() {
            let kept = EventSet::registered()
                .iter()
                .map(|set| {
                    let words = set.bits.iter().map(|w| w.swap(u64::MAX, Ordering::Relaxed)).collect();
                    (set.bits.as_ptr() as usize, words)
                })
                .collect();
            *shadow = Some(kept);
        }
    } else if let Some(kept) = shadow.take() {
        for set in EventSet::registered() {
            let words = kept.iter().find(|(key, _)| *key == set.bits.as_ptr() as usize).map(|(_, w)| w);
            for (i, word) in set.bits.iter().enumerate() {
                word.store(words.and_then(|w| w.get(i)).copied().unwrap_or(0), Ordering::Relaxed);
            }
        }
    }
}

/// Whether the selection records event `index` of the set whose bits are `bits`: their bit,
/// or while a capture forces them on, the shadow's (an index past the bits is never
/// recorded). Takes a lock: for cold paths (`event!`'s test is `__private::route`).
pub(crate) fn enabled(bits: &[AtomicU64], index: u16) -> bool {
    let w = usize::from(index >> 6);
    let bit = 1 << (index & 63);
    let shadow = lock_shadow();
    if let Some(kept) = shadow.as_ref().and_then(|list| list.iter().find(|(key, _)| *key == bits.as_ptr() as usize)) {
        return kept.1.get(w).is_some_and(|v| v & bit != 0);
    }
    // Relaxed: see `control`'s module docs.
    bits.get(w).is_some_and(|word| word.load(Ordering::Relaxed) & bit != 0)
}

/// The semver-compatible part of a package version, as a set name's suffix: `1` for 1.x.y,
/// `0_3` for 0.3.y, `0_0_7` for 0.0.7; `unknown` without a version.
fn compatible(version: &str) -> String {
    let parts: Vec<&str> = version.split(['.', '-', '+']).take(3).collect();
    match parts.as_slice() {
        ["0", "0", patch] => format!("0_0_{patch}"),
        ["0", minor, ..] => format!("0_{minor}"),
        [major, ..] if !major.is_empty() => (*major).to_owned(),
        _ => "unknown".to_owned(),
    }
}

/// A set of one event, `E` of kind `K` with one word, always on: for the crate's unit tests.
#[cfg(test)]
pub(crate) static TEST_SET: EventSet = {
    static BITS: [AtomicU64; 1] = [const { AtomicU64::new(0) }];
    EventSet::__new("VERSION(1,0,0)\nKIND(K, \"k\")\nRELATION(E, 1, TRUE, K, W)\n", "t.def", "t", "1.0.0", &BITS)
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver_compatible_suffixes() {
        assert_eq!(compatible("1.4.2"), "1");
        assert_eq!(compatible("0.3.9"), "0_3");
        assert_eq!(compatible("0.0.7"), "0_0_7");
        assert_eq!(compatible("2.0.0-rc.1"), "2");
        assert_eq!(compatible(""), "unknown");
        assert_eq!(TEST_SET.versioned_name(), "t-v1");
    }
}
