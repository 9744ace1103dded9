//! Timestamps: the invariant TSC on x86_64, the monotonic clock elsewhere, or a
//! deterministic clock for tests.
//!
//! The TSC is read with one instruction and no system call. It is used only where the CPU
//! says it is invariant (constant rate in every power state: CPUID leaf `0x8000_0007`,
//! EDX bit 8); its rate is calibrated against the monotonic clock when the recording starts,
//! and the header carries the rate and a (counter, wall time) pair. The writer thread adds
//! a `ClockSync` event (counter, wall time) every second, so a reader can correct drift
//! over a long run.
#![allow(unsafe_code)]

use event_format::wire::{Clock, ClockSource};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where a recorder's timestamps come from.
#[derive(Debug)]
pub(crate) enum TimeSource {
    /// Nanoseconds since `anchor`, from the operating system's monotonic clock.
    Monotonic { anchor: Instant },
    /// The x86_64 time-stamp counter, `hz` ticks per second.
    Tsc { hz: u64 },
    /// A counter that each reading advances by one: the same events give the same times.
    Deterministic { next: AtomicU64 },
}

/// How long the TSC is calibrated against the monotonic clock at start.
const CALIBRATION: Duration = Duration::from_millis(10);

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC has no preconditions and exists on every x86_64 CPU.
    unsafe { std::arch::x86_64::_rdtsc() }
}

/// Whether the CPU's TSC runs at a constant rate in every state.
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn tsc_is_invariant() -> bool {
    let max_extended = std::arch::x86_64::__cpuid(0x8000_0000).eax;
    max_extended >= 0x8000_0007 && std::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) != 0
}

impl TimeSource {
    pub(crate) fn monotonic() -> TimeSource {
        TimeSource::Monotonic { anchor: Instant::now() }
    }

    pub(crate) fn deterministic() -> TimeSource {
        TimeSource::Deterministic { next: AtomicU64::new(0) }
    }

    /// The best clock here: the invariant TSC, calibrated, or the monotonic clock.
    pub(crate) fn best() -> TimeSource {
        // Miri runs no CPUID or RDTSC.
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if tsc_is_invariant()
            && let Some(hz) = calibrate()
        {
            return TimeSource::Tsc { hz };
        }
        TimeSource::monotonic()
    }

    /// Whether this is the TSC: a thread buffer keeps the answer, and reads the counter
    /// itself ([`now_with`](Self::now_with)) without matching on the source per event.
    pub(crate) fn is_tsc(&self) -> bool {
        matches!(self, TimeSource::Tsc { .. })
    }

    /// The time now; `tsc` is what [`is_tsc`](Self::is_tsc) said of this source. The TSC is
    /// one instruction, with no load of the source.
    #[inline(always)]
    pub(crate) fn now_with(&self, tsc: bool) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if tsc {
            return rdtsc();
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = tsc;
        self.now()
    }

    #[inline(always)]
    pub(crate) fn now(&self) -> u64 {
        match self {
            TimeSource::Monotonic { anchor } => anchor.elapsed().as_nanos() as u64,
            #[cfg(target_arch = "x86_64")]
            TimeSource::Tsc { .. } => rdtsc(),
            #[cfg(not(target_arch = "x86_64"))]
            TimeSource::Tsc { .. } => 0,
            // Tests only: the read-modify-write keeps times unique across threads.
            TimeSource::Deterministic { next } => next.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Sets the deterministic clock's next reading (tests: a clock that steps back).
    #[cfg(test)]
    pub(crate) fn set_next(&self, ticks: u64) {
        if let TimeSource::Deterministic { next } = self {
            next.store(ticks, Ordering::Relaxed);
        }
    }

    pub(crate) fn is_deterministic(&self) -> bool {
        matches!(self, TimeSource::Deterministic { .. })
    }

    /// A (ticks, wall time in ns since the epoch) pair read together, for `ClockSync`.
    pub(crate) fn sync_pair(&self) -> (u64, i64) {
        (self.now(), wall_ns())
    }

    /// The header's clock facts.
    pub(crate) fn facts(&self) -> Clock {
        let (ref_ticks, wall) = self.sync_pair();
        match self {
            TimeSource::Monotonic { .. } => Clock {
                source: ClockSource::Monotonic,
                ticks_per_second: 1_000_000_000,
                ref_ticks,
                ref_wall_ns: wall,
                start_ticks: ref_ticks,
            },
            TimeSource::Tsc { hz } => Clock {
                source: ClockSource::Tsc,
                ticks_per_second: *hz,
                ref_ticks,
                ref_wall_ns: wall,
                start_ticks: ref_ticks,
            },
            TimeSource::Deterministic { .. } => Clock::deterministic(),
        }
    }
}

pub(crate) fn wall_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64)
}

/// The TSC's rate: counter ticks over a short interval of the monotonic clock. Each end is
/// the tightest of a few paired readings, so a preemption between the two reads costs
/// accuracy in one sample only.
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn calibrate() -> Option<u64> {
    fn pair() -> (u64, Instant) {
        let mut best: Option<(u64, u64, Instant)> = None;
        for _ in 0..5 {
            let a = rdtsc();
            let t = Instant::now();
            let b = rdtsc();
            if best.is_none_or(|(x, y, _)| b.wrapping_sub(a) < y.wrapping_sub(x)) {
                best = Some((a, b, t));
            }
        }
        // Cannot fail: the first of the five readings is always taken.
        let (a, b, t) = best.expect("five readings");
        (a.wrapping_add(b.wrapping_sub(a) / 2), t)
    }
    let (t0, i0) = pair();
    std::thread::sleep(CALIBRATION);
    let (t1, i1) = pair();
    let ns = i1.duration_since(i0).as_nanos();
    let ticks = u128::from(t1.checked_sub(t0)?);
    let hz = (ticks * 1_000_000_000 / ns.max(1)) as u64;
    // A counter slower than 1 MHz is not a TSC worth trusting.
    (hz >= 1_000_000).then_some(hz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_clock_advances_at_its_stated_rate() {
        let clock = TimeSource::best();
        let facts = clock.facts();
        let a = clock.now();
        let start = Instant::now();
        std::thread::sleep(Duration::from_millis(50));
        let b = clock.now();
        let elapsed = start.elapsed().as_secs_f64();
        let measured = (b - a) as f64 / facts.ticks_per_second as f64;
        // Generous: a loaded machine may preempt between the readings.
        assert!(
            (measured - elapsed).abs() < 0.02 + elapsed * 0.05,
            "{measured} s by the clock, {elapsed} s by Instant"
        );
    }

    #[test]
    fn the_deterministic_clock_counts() {
        let clock = TimeSource::deterministic();
        assert_eq!((clock.now(), clock.now(), clock.now()), (0, 1, 2));
        assert_eq!(clock.facts().source, ClockSource::Deterministic);
    }
}
