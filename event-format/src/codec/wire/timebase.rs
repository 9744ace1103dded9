//! A log's times for a reader of many events: nanoseconds since the start, wall time and
//! seconds, from the [`Clock`] a header gives, each without a division per event.
//!
//! [`Clock`] states the rule (its [`Clock::wall_ns`] and [`Clock::seconds_since_start`]);
//! a [`Timebase`] gives the same numbers fast, by the one divider of the readers: the
//! division by the clock's rate done as a multiplication by its inverse, computed once. Text
//! (`print`'s seconds, [`crate::text::Seconds`]), every export and the typed reader count
//! time through it, so that one event has one time in every output (docs/OUTPUT.md, "Time").

use super::Clock;

/// Nanoseconds in a second.
const NS_PER_SECOND: u64 = 1_000_000_000;

/// A clock's times, with its rate's inverse computed once ([`Timebase::new`]).
#[derive(Clone, Copy, Debug)]
pub struct Timebase {
    clock: Clock,
    /// `clock.ticks_per_second`, at least 1.
    rate: u64,
    /// `u64::MAX / rate`: `n * inverse / 2^64` is `n / rate` or one less ([`Timebase::divide`]).
    inverse: u64,
    /// The rate lets a remainder times 10^9 fit in 64 bits (every rate below 18 GHz).
    fits: bool,
}

impl Timebase {
    /// The timebase of `clock`.
    pub fn new(clock: &Clock) -> Timebase {
        let rate = clock.ticks_per_second.max(1);
        Timebase { clock: *clock, rate, inverse: u64::MAX / rate, fits: rate <= u64::MAX / NS_PER_SECOND }
    }

    /// The clock it counts by.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// `(n / rate, n % rate)`. With `inverse = floor((2^64 - 1) / rate) >= 2^64 / rate - 1`,
    /// `q = floor(n * inverse / 2^64)` lies in `(n / rate - 1, n / rate]` (as `n < 2^64`): it
    /// is the quotient or one less, and the remainder tells which.
    #[inline]
    fn divide(&self, n: u64) -> (u64, u64) {
        let q = ((u128::from(n) * u128::from(self.inverse)) >> 64) as u64;
        let r = n - q * self.rate;
        if r >= self.rate { (q + 1, r - self.rate) } else { (q, r) }
    }

    /// `floor(delta * 10^9 / rate)` as whole seconds and nanoseconds, for a `delta` whose
    /// remainder times 10^9 fits (`self.fits`).
    #[inline]
    fn split_delta(&self, delta: u64) -> (u64, u32) {
        let (whole, rest) = self.divide(delta);
        // rest < rate <= u64::MAX / 10^9: the product fits.
        let (nanos, _) = self.divide(rest * NS_PER_SECOND);
        (whole, nanos as u32)
    }

    /// The time from the clock's start to `ticks` as whole seconds and nanoseconds (below
    /// 10^9), on the fast way: `None` for a time before the start or a rate of 18 GHz or
    /// more, whose time [`Timebase::nanos`] gives in 128 bits. What `print` writes as
    /// `WHOLE.NNNNNNNNN`.
    #[inline]
    pub fn split(&self, ticks: u64) -> Option<(u64, u32)> {
        (self.fits && ticks >= self.clock.start_ticks).then(|| self.split_delta(ticks - self.clock.start_ticks))
    }

    /// The time from the clock's start to `ticks` in nanoseconds, truncated toward zero: the
    /// number `print` writes as seconds (`1.000000001` is 1 000 000 001), so that a reader
    /// that counts in nanoseconds (an export, a duration) agrees with `print`.
    ///
    /// ```
    /// use event_format::wire::{Clock, ClockSource, Timebase};
    /// let clock = Clock { source: ClockSource::Tsc, ticks_per_second: 3_000_000_000,
    ///                     ref_ticks: 0, ref_wall_ns: 0, start_ticks: 3_000 };
    /// let time = Timebase::new(&clock);
    /// assert_eq!(time.nanos(3_000 + 3_000_000_004), 1_000_000_001); // 1 s and 1.33 ns
    /// assert_eq!(time.nanos(0), -1_000);
    /// ```
    #[inline]
    pub fn nanos(&self, ticks: u64) -> i128 {
        match self.split(ticks) {
            Some((whole, nanos)) => i128::from(whole) * i128::from(NS_PER_SECOND) + i128::from(nanos),
            None => {
                let delta = i128::from(ticks) - i128::from(self.clock.start_ticks);
                let ns = delta.abs() * i128::from(NS_PER_SECOND) / i128::from(self.rate);
                if delta < 0 { -ns } else { ns }
            }
        }
    }

    /// [`Timebase::nanos`] saturated to the `i64` range: a 64-bit column's nanoseconds.
    #[inline]
    pub fn nanos_i64(&self, ticks: u64) -> i64 {
        if self.clock.ticks_per_second == NS_PER_SECOND {
            // A clock in nanoseconds (the recorder's monotonic clock): no division.
            return clamp(i128::from(ticks) - i128::from(self.clock.start_ticks));
        }
        clamp(self.nanos(ticks))
    }

    /// The seconds from the clock's start to `ticks`, as a double: [`Timebase::nanos`] over
    /// 10^9, the nanoseconds `print` shows, rounded once.
    #[inline]
    pub fn seconds(&self, ticks: u64) -> f64 {
        let nanos = self.nanos(ticks);
        // The same double either way; from 64 bits in one instruction.
        let nanos = i64::try_from(nanos).map_or(nanos as f64, |n| n as f64);
        nanos / NS_PER_SECOND as f64
    }

    /// The wall time of `ticks` in nanoseconds since the Unix epoch: [`Clock::wall_ns`].
    #[inline]
    pub fn wall_ns(&self, ticks: u64) -> i128 {
        let clock = &self.clock;
        if clock.ticks_per_second == NS_PER_SECOND {
            // No division for a clock in nanoseconds.
            return i128::from(clock.ref_wall_ns) + (i128::from(ticks) - i128::from(clock.ref_ticks));
        }
        if self.fits && ticks >= clock.ref_ticks {
            // floor((ticks - ref) * 10^9 / rate) = q * 10^9 + floor(r * 10^9 / rate), where
            // ticks - ref = q * rate + r.
            let (whole, nanos) = self.split_delta(ticks - clock.ref_ticks);
            return i128::from(clock.ref_wall_ns) + i128::from(whole) * i128::from(NS_PER_SECOND) + i128::from(nanos);
        }
        // Clock::wall_ns, by the rate at least 1.
        let delta = i128::from(ticks) - i128::from(clock.ref_ticks);
        i128::from(clock.ref_wall_ns) + delta * i128::from(NS_PER_SECOND) / i128::from(self.rate)
    }

    /// The wall time of `ticks` in microseconds since the Unix epoch (rounded down),
    /// saturated to the `i64` range.
    #[inline]
    pub fn wall_micros(&self, ticks: u64) -> i64 {
        let wall = self.wall_ns(ticks);
        // In 64 bits when it fits (every time this side of the year 2262).
        match i64::try_from(wall) {
            Ok(wall) => wall.div_euclid(1000),
            Err(_) => clamp(wall.div_euclid(1000)),
        }
    }

    /// [`Timebase::wall_micros`] of `ticks`, given `nanos` = [`Timebase::nanos_i64`] of
    /// `ticks` (a reader that needs both): from `nanos` when the clock's reference is its
    /// start (as the recorder writes every clock) and `ticks` is not before it, for then both
    /// are floor((ticks - start) * 10^9 / rate), `nanos` exact below `i64::MAX`; by
    /// [`Timebase::wall_micros`] otherwise.
    #[inline]
    pub fn wall_micros_at(&self, ticks: u64, nanos: i64) -> i64 {
        let clock = &self.clock;
        if clock.ref_ticks == clock.start_ticks
            && ticks >= clock.start_ticks
            && nanos < i64::MAX
            && let Some(wall) = clock.ref_wall_ns.checked_add(nanos)
        {
            return wall.div_euclid(1000);
        }
        self.wall_micros(ticks)
    }
}

/// `v` saturated to the `i64` range.
fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::wire::ClockSource;

    fn clock(rate: u64, start: u64) -> Clock {
        Clock {
            source: ClockSource::Monotonic,
            ticks_per_second: rate,
            ref_ticks: 0,
            ref_wall_ns: 0,
            start_ticks: start,
        }
    }

    /// A fixed generator: the same numbers every run.
    fn numbers() -> impl FnMut() -> u64 {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    #[test]
    fn the_divider_divides_as_the_division_does() {
        let mut divisors = vec![1, 2, 3, 7, 1000, 2_600_000_198, 3_000_000_000, u64::MAX / NS_PER_SECOND, u64::MAX];
        divisors.extend((0..64).map(|b| 1u64 << b));
        divisors.extend((1..64).map(|b| (1u64 << b) - 1));
        divisors.extend((1..64).map(|b| (1u64 << b) + 1));
        let mut next = numbers();
        for d in divisors {
            let time = Timebase::new(&clock(d, 0));
            let mut xs = vec![0, 1, d - 1, d, d.saturating_add(1), u64::MAX, u64::MAX - 1, u64::MAX / d * d];
            xs.extend((0..200).map(|_| next()));
            xs.extend((0..200).map(|_| next() >> (next() % 64)));
            for x in xs {
                assert_eq!(time.divide(x), (x / d, x % d), "{x} / {d}");
            }
        }
        assert_eq!(Timebase::new(&clock(0, 0)).divide(5), (5, 0), "a rate of 0 divides as 1");
    }

    /// Nanoseconds, on either way, are floor(|delta| * 10^9 / rate) with delta's sign.
    #[test]
    fn nanoseconds_are_those_of_the_general_rule() {
        let mut next = numbers();
        let mut cases = vec![
            (3_000_000_000, 6_000_000_000, 9_000_000_001),
            (1_000_000_000, 10, 5),
            (7, 0, u64::MAX),
            (u64::MAX, 1, 0),
        ];
        for i in 0..20_000u64 {
            let rate =
                [1, 1_000, NS_PER_SECOND, 2_400_000_000, 3_000_000_007, u64::MAX / NS_PER_SECOND + 1][i as usize % 6];
            cases.push((rate + next() % 7, next() >> (next() % 64), next() >> (next() % 64)));
        }
        for (rate, start, ticks) in cases {
            let time = Timebase::new(&clock(rate, start));
            let delta = i128::from(ticks) - i128::from(start);
            let want = delta.signum() * (delta.abs() * 1_000_000_000 / i128::from(rate));
            assert_eq!(time.nanos(ticks), want, "rate {rate} start {start} ticks {ticks}");
            assert_eq!(time.nanos_i64(ticks), clamp(want));
            if let Some((whole, nanos)) = time.split(ticks) {
                assert_eq!(i128::from(whole) * 1_000_000_000 + i128::from(nanos), want);
                assert!(nanos < 1_000_000_000);
            }
        }
    }

    /// The seconds as a double are `print`'s text of them, read as a number (below 2^53
    /// nanoseconds, where a double holds every nanosecond).
    #[test]
    fn seconds_read_as_print_writes_them() {
        let mut next = numbers();
        for i in 0..20_000u64 {
            let rate = [1, 1_000, NS_PER_SECOND, 2_400_000_000, 3_000_000_007, 7][i as usize % 6] + next() % 7;
            let (start, ticks) = (next() % (1 << 40), next() % (1 << 40));
            let c = clock(rate, start);
            let time = Timebase::new(&c);
            if time.nanos(ticks).unsigned_abs() >= 1 << 53 {
                continue;
            }
            let mut text = String::new();
            crate::reading::text::write_seconds(&mut text, &c, ticks).unwrap();
            assert_eq!(time.seconds(ticks), text.parse::<f64>().unwrap(), "{text}");
        }
    }

    #[test]
    fn wall_times_are_the_clocks() {
        for (rate, reference, wall) in [
            (NS_PER_SECOND, 500, 1_700_000_000_123_456_789),
            (NS_PER_SECOND, 0, i64::MIN),
            (2_600_000_198, 5_000_000_000, 1_700_000_000_123_456_789),
            (3, 10, -5),
            (u64::MAX / NS_PER_SECOND, 0, 0),
            (u64::MAX / NS_PER_SECOND + 1, 7, i64::MAX),
            (1, u64::MAX, i64::MIN),
        ] {
            let mut c = clock(rate, 1_000);
            c.ref_ticks = reference;
            c.ref_wall_ns = wall;
            let time = Timebase::new(&c);
            for ticks in
                [0, 1, reference.saturating_sub(1), reference, reference.saturating_add(1), rate, 1 << 40, u64::MAX]
            {
                assert_eq!(time.wall_ns(ticks), c.wall_ns(ticks), "rate {rate} ticks {ticks}");
                assert_eq!(
                    time.wall_micros(ticks),
                    clamp(c.wall_ns(ticks).div_euclid(1000)),
                    "rate {rate} ticks {ticks}"
                );
            }
        }
    }

    #[test]
    fn the_wall_time_from_nanoseconds_is_the_wall_time() {
        for (rate, start, wall) in [
            (NS_PER_SECOND, 1_000, 1_700_000_000_123_456_789),
            (2_600_000_198, 5_000_000_000, 1_700_000_000_123_456_789),
            (3, 10, -5),
            (3, 10, -1_000_000_000_007),
            (u64::MAX / NS_PER_SECOND, 0, 0),
            (u64::MAX / NS_PER_SECOND + 1, 7, i64::MAX),
            (u64::MAX / NS_PER_SECOND + 1, 7, i64::MIN),
            (1, u64::MAX, i64::MIN),
            (1, 0, i64::MAX - 999),
        ] {
            for reference in [start, start / 2, start.saturating_add(3)] {
                let mut c = clock(rate, start);
                c.ref_ticks = reference;
                c.ref_wall_ns = wall;
                let time = Timebase::new(&c);
                for ticks in [0, 1, start.saturating_sub(1), start, start.saturating_add(1), rate, 1 << 40, u64::MAX] {
                    let ns = time.nanos_i64(ticks);
                    assert_eq!(
                        time.wall_micros_at(ticks, ns),
                        time.wall_micros(ticks),
                        "rate {rate} start {start} reference {reference} ticks {ticks}"
                    );
                }
            }
        }
    }
}
