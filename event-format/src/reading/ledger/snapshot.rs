//! What a snapshot is (docs/FORMAT.md, "Snapshot"), in the one line that `stats` and `check`
//! say of it: a snapshot of SERVICE on HOST at TIME, taken on demand or triggered by EVENT.
//! Who took it is named as the readers name a log (docs/OUTPUT.md, "Who wrote a log"): the
//! `service` label, else the program, and the host; the pid follows, as `stats` gives it.
//!
//! A snapshot is judged as a ring is (its threads' oldest blocks were overwritten before the
//! window, which is normal); this line is what tells a reader that it is one.

use crate::codec::decode::Catalog;
use crate::codec::wire::{Header, SnapshotCause};

/// The line that says what `header`'s stream is when it is a snapshot; `None` otherwise.
///
/// ```
/// use event_format::wire::{Snapshot, SnapshotCause};
/// let mut header = event_format::testing::sample_header(event_format::wire::Order::Little);
/// assert_eq!(event_format::ledger::describe_snapshot(&header), None);
/// header.properties.snapshot = Some(Snapshot {
///     taken_wall_ns: 1_767_225_600_500_000_000,
///     taken_time: header.clock.start_ticks + header.clock.ticks_per_second * 2,
///     sequence: 3,
///     not_taken: 4,
///     cause: SnapshotCause::OnDemand,
///     trigger_code: 0,
///     trigger_time: 0,
///     trigger: String::new(),
/// });
/// let line = event_format::ledger::describe_snapshot(&header).unwrap();
/// assert!(line.starts_with("snapshot 3 of"), "{line}");
/// // Named by its service and host, as the readers name a log.
/// header.producer.host = "host-a".to_owned();
/// header.properties.labels = vec![("service".to_owned(), "api".to_owned())];
/// let line = event_format::ledger::describe_snapshot(&header).unwrap();
/// assert!(line.starts_with(&format!("snapshot 3 of api on host-a (pid {}) at ", header.producer.pid)), "{line}");
/// assert!(line.contains("at 2026-01-01 00:00:00.500 UTC (2.000000 s into the recording), taken on demand"), "{line}");
/// assert!(line.ends_with("4 declined by its rate policy before it"), "{line}");
/// ```
pub fn describe_snapshot(header: &Header) -> Option<String> {
    let s = header.properties.snapshot.as_ref()?;
    let p = &header.producer;
    let service = header.properties.label("service").unwrap_or(&p.program);
    let host = if p.host.is_empty() { String::new() } else { format!(" on {}", p.host) };
    let when = if s.taken_wall_ns > 0 { format!("{} ", utc(s.taken_wall_ns)) } else { String::new() };
    let offset = header.clock.seconds_since_start(s.taken_time);
    let fired = format!("{:.6} s", header.clock.seconds_since_start(s.trigger_time));
    let why = match s.cause {
        SnapshotCause::OnDemand => "taken on demand".to_owned(),
        SnapshotCause::Event => {
            let catalog = Catalog::new(&header.sets);
            let name = catalog
                .get(s.trigger_code)
                .map_or_else(|| format!("code {:#06x}", s.trigger_code), |d| d.full_name().to_string());
            if s.trigger.is_empty() {
                format!("triggered by {name} at {fired}")
            } else {
                format!("triggered by {name} at {fired} (`{}`)", s.trigger)
            }
        }
        SnapshotCause::Panic => format!("triggered by a panic at {fired}"),
        SnapshotCause::Lost => format!("triggered by lost events at {fired}"),
        SnapshotCause::Other(b) => format!("taken for cause {b} (a newer format's)"),
    };
    let declined = if s.not_taken > 0 {
        format!("; {} declined by its rate policy before it", s.not_taken)
    } else {
        String::new()
    };
    Some(format!(
        "snapshot {} of {service}{host} (pid {}) at {when}({offset:.6} s into the recording), {why}{declined}",
        s.sequence, p.pid
    ))
}

/// `ns` since the Unix epoch as `YYYY-MM-DD hh:mm:ss.mmm UTC` (the proleptic Gregorian
/// calendar, [`crate::text::civil_date`]).
fn utc(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let millis = ns.rem_euclid(1_000_000_000) / 1_000_000;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = crate::reading::text::civil_date(days);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{millis:03} UTC", rem / 3600, rem / 60 % 60, rem % 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00.000 UTC");
        assert_eq!(super::utc(951_782_400_123_000_000), "2000-02-29 00:00:00.123 UTC");
        assert_eq!(super::utc(1_767_225_599_999_000_000), "2025-12-31 23:59:59.999 UTC");
    }
}
