//! An event's times in the Parquet export: nanoseconds since the log's start (as `print`
//! shows them) and the wall-clock time in microseconds, of its ticks and the log's clock,
//! without a division per event.

use event_format::wire::Clock;

/// A log's clock, and its rate as a [`Divisor`]: the times of an event without a division.
pub(super) struct Times {
    clock: Clock,
    rate: Divisor,
}

impl Times {
    pub(super) fn new(clock: Clock) -> Times {
        Times { clock, rate: Divisor::new(clock.ticks_per_second) }
    }
}

/// Division of 64-bit numbers by one divisor, `d`, by a multiplication: with
/// m = ceil(2^64 / d), floor(x * m / 2^64) is floor(x / d) or one more (x * m / 2^64 is
/// x / d + x * e / (d * 2^64) for the e < d that makes m * d = 2^64 + e, and x < 2^64), which
/// one product tells.
#[derive(Clone, Copy)]
struct Divisor {
    d: u64,
    m: u128,
}

impl Divisor {
    /// The divisor `d`, 1 for 0.
    fn new(d: u64) -> Divisor {
        let d = d.max(1);
        Divisor { d, m: (1u128 << 64).div_ceil(u128::from(d)) }
    }

    /// `(x / d, x % d)`.
    fn div_rem(self, x: u64) -> (u64, u64) {
        // x * m < 2^64 * (2^64 / d + 1) <= 2^128 for d >= 1 (m = 2^64 only when d = 1).
        let q = u64::try_from((u128::from(x) * self.m) >> 64).unwrap_or(u64::MAX);
        match q.checked_mul(self.d) {
            Some(p) if p <= x => (q, x - p),
            _ => {
                let q = q - 1;
                (q, x - q * self.d)
            }
        }
    }
}

/// Nanoseconds from the clock's start to `ticks`, as `print` computes its seconds (truncated
/// toward zero), saturated to the i64 range.
pub(super) fn ns_since_start(times: &Times, ticks: u64) -> i64 {
    let clock = &times.clock;
    let rate = clock.ticks_per_second.max(1);
    if rate == NS_PER_SECOND {
        // A clock in nanoseconds (the recorder's monotonic clock): no division.
        return clamp(i128::from(ticks) - i128::from(clock.start_ticks));
    }
    if ticks >= clock.start_ticks && rate <= u64::MAX / NS_PER_SECOND {
        let (whole, part) = times.rate.div_rem(ticks - clock.start_ticks);
        // part < rate, so part * 10^9 fits.
        let ns = whole.saturating_mul(NS_PER_SECOND).saturating_add(times.rate.div_rem(part * NS_PER_SECOND).0);
        return i64::try_from(ns).unwrap_or(i64::MAX);
    }
    let delta = i128::from(ticks) - i128::from(clock.start_ticks);
    let ns = delta.signum() * (delta.abs() * 1_000_000_000 / i128::from(rate));
    clamp(ns)
}

/// The wall-clock time of `ticks` in microseconds since the Unix epoch, saturated.
fn wall_micros(times: &Times, ticks: u64) -> i64 {
    let clock = &times.clock;
    // floor((ref_wall_ns + ns) / 1000) in 64 bits when the sum fits (as it does for every
    // time of a log this side of the year 2262), in 128 otherwise.
    let micros = |ns: u128| match i64::try_from(ns).ok().and_then(|ns| clock.ref_wall_ns.checked_add(ns)) {
        Some(wall) => wall.div_euclid(1000),
        None => clamp((i128::from(clock.ref_wall_ns) + ns.cast_signed()).div_euclid(1000)),
    };
    if clock.ticks_per_second == NS_PER_SECOND {
        // `wall_ns` without its 128-bit division, which a clock in nanoseconds does not need.
        if ticks >= clock.ref_ticks {
            return micros(u128::from(ticks - clock.ref_ticks));
        }
        let ns = i128::from(clock.ref_wall_ns) + (i128::from(ticks) - i128::from(clock.ref_ticks));
        return clamp(ns.div_euclid(1000));
    }
    let rate = clock.ticks_per_second;
    if ticks >= clock.ref_ticks && rate != 0 && rate <= u64::MAX / NS_PER_SECOND {
        // `wall_ns`'s floor((ticks - ref) * 10^9 / rate) without a division: q * 10^9 +
        // floor(r * 10^9 / rate), where ticks - ref = q * rate + r.
        let (whole, part) = times.rate.div_rem(ticks - clock.ref_ticks);
        let ns = u128::from(whole) * u128::from(NS_PER_SECOND) + u128::from(times.rate.div_rem(part * NS_PER_SECOND).0);
        return micros(ns);
    }
    clamp(clock.wall_ns(ticks).div_euclid(1000))
}

/// [`wall_micros`] of `ticks`, given `ns` = [`ns_since_start`] of `ticks`: from `ns` when the
/// clock's reference is its start (as the recorder writes every clock) and `ticks` is not
/// before it, for then both are floor((ticks - start) * 10^9 / rate), `ns` exact when below
/// i64::MAX; by [`wall_micros`] otherwise.
pub(super) fn wall_micros_of(times: &Times, ticks: u64, ns: i64) -> i64 {
    let clock = &times.clock;
    if clock.ref_ticks == clock.start_ticks
        && ticks >= clock.start_ticks
        && clock.ticks_per_second != 0
        && ns < i64::MAX
        && let Some(wall) = clock.ref_wall_ns.checked_add(ns)
    {
        return wall.div_euclid(1000);
    }
    wall_micros(times, ticks)
}

/// Ticks per second of a clock in nanoseconds.
const NS_PER_SECOND: u64 = 1_000_000_000;

fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;
    use event_format::wire::ClockSource;

    fn clock(rate: u64, start: u64) -> Clock {
        Clock {
            source: ClockSource::Monotonic,
            ticks_per_second: rate,
            ref_ticks: 0,
            ref_wall_ns: 0,
            start_ticks: start,
        }
    }

    #[test]
    fn nanoseconds_are_those_print_shows() {
        for (rate, start, ticks) in
            [(3_000_000_000, 6_000_000_000, 9_000_000_001), (1_000_000_000, 10, 5), (7, 0, u64::MAX), (u64::MAX, 1, 0)]
        {
            let c = clock(rate, start);
            let mut text = String::new();
            event_format::text::write_seconds(&mut text, &c, ticks).unwrap();
            let (whole, frac) = text.trim_start_matches('-').split_once('.').unwrap();
            let want =
                i128::from(whole.parse::<i64>().unwrap_or(i64::MAX)) * 1_000_000_000 + frac.parse::<i128>().unwrap();
            let want = if text.starts_with('-') { -want } else { want };
            assert_eq!(
                i128::from(ns_since_start(&Times::new(c), ticks)),
                want.clamp(i64::MIN.into(), i64::MAX.into()),
                "{text}"
            );
        }
    }

    #[test]
    fn a_clock_in_nanoseconds_gives_the_times_of_the_general_rule() {
        let mut c = clock(NS_PER_SECOND, 1_000);
        c.ref_ticks = 500;
        c.ref_wall_ns = 1_700_000_000_123_456_789;
        for ticks in [0, 1, 499, 500, 999, 1_000, 1_001, 123_456_789_012, u64::MAX] {
            assert_eq!(wall_micros(&Times::new(c), ticks), clamp(c.wall_ns(ticks).div_euclid(1000)), "{ticks}");
            let general = i128::from(ticks) - i128::from(c.start_ticks);
            assert_eq!(ns_since_start(&Times::new(c), ticks), clamp(general), "{ticks}");
        }
        c.ref_wall_ns = i64::MIN;
        assert_eq!(wall_micros(&Times::new(c), 0), clamp(c.wall_ns(0).div_euclid(1000)));
    }

    #[test]
    fn times_of_any_clock_rate_are_those_of_the_general_rule() {
        for (rate, reference, wall) in [
            (2_600_000_198, 5_000_000_000, 1_700_000_000_123_456_789),
            (3, 10, -5),
            (u64::MAX / NS_PER_SECOND, 0, 0),
            (u64::MAX / NS_PER_SECOND + 1, 7, i64::MAX),
            (1, u64::MAX, i64::MIN),
        ] {
            let mut c = clock(rate, 0);
            c.ref_ticks = reference;
            c.ref_wall_ns = wall;
            for ticks in
                [0, 1, reference.saturating_sub(1), reference, reference.saturating_add(1), rate, 1 << 40, u64::MAX]
            {
                assert_eq!(
                    wall_micros(&Times::new(c), ticks),
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
                let times = Times::new(c);
                for ticks in [0, 1, start.saturating_sub(1), start, start.saturating_add(1), rate, 1 << 40, u64::MAX] {
                    let ns = ns_since_start(&times, ticks);
                    assert_eq!(
                        wall_micros_of(&times, ticks, ns),
                        wall_micros(&times, ticks),
                        "rate {rate} start {start} reference {reference} ticks {ticks}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_divisor_divides_as_the_division_does() {
        let mut divisors = vec![1, 2, 3, 7, 1000, 2_600_000_198, 3_000_000_000, u64::MAX / NS_PER_SECOND, u64::MAX];
        divisors.extend((0..64).map(|b| 1u64 << b));
        divisors.extend((1..64).map(|b| (1u64 << b) - 1));
        divisors.extend((1..64).map(|b| (1u64 << b) + 1));
        // A fixed generator: the same numbers every run.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for d in divisors {
            let divisor = Divisor::new(d);
            let mut xs = vec![0, 1, d - 1, d, d.saturating_add(1), u64::MAX, u64::MAX - 1, u64::MAX / d * d];
            xs.extend((0..200).map(|_| next()));
            xs.extend((0..200).map(|_| next() >> (next() % 64)));
            for x in xs {
                assert_eq!(divisor.div_rem(x), (x / d, x % d), "{x} / {d}");
            }
        }
        assert_eq!(Divisor::new(0).div_rem(5), (5, 0), "0 divides as 1");
    }
}
