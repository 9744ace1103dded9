//! Timestamps: the monotonic clock in nanoseconds, or a deterministic clock for tests.

use event_format::wire::{Clock, ClockSource};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Where a recorder's timestamps come from.
#[derive(Debug)]
pub(crate) enum TimeSource {
    /// Nanoseconds since `anchor`, from the operating system's monotonic clock.
    Monotonic { anchor: Instant },
    /// A counter that each reading advances by one: the same events give the same times.
    Deterministic { next: AtomicU64 },
}

impl TimeSource {
    pub(crate) fn monotonic() -> TimeSource {
        TimeSource::Monotonic { anchor: Instant::now() }
    }

    pub(crate) fn deterministic() -> TimeSource {
        TimeSource::Deterministic { next: AtomicU64::new(0) }
    }

    #[inline]
    pub(crate) fn now(&self) -> u64 {
        match self {
            TimeSource::Monotonic { anchor } => anchor.elapsed().as_nanos() as u64,
            // Tests only: the read-modify-write keeps times unique across threads.
            TimeSource::Deterministic { next } => next.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The header's clock facts, with the start of recording at tick 0.
    pub(crate) fn facts(&self) -> (Clock, i64) {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64);
        let (source, ref_wall_ns) = match self {
            TimeSource::Monotonic { .. } => (ClockSource::Monotonic, wall),
            TimeSource::Deterministic { .. } => (ClockSource::Deterministic, 0),
        };
        let clock = Clock { source, ticks_per_second: 1_000_000_000, ref_ticks: 0, ref_wall_ns, start_ticks: 0 };
        (clock, ref_wall_ns)
    }
}
