//! How `hist`, `latency` and `summary` show a distribution: a line per bucket of powers of
//! two with a bar, as bpftrace's `hist` draws them ([`BAR`], [`power`]), durations for people
//! ([`human`]), and the histograms the recorder kept (events.def's `HISTOGRAM`) as text and
//! JSON ([`text`], [`json_one`]), with the one line on stderr for the records that could not
//! be merged ([`say_unreadable`]). Each command imports it; it imports none of them.

use crate::json::string;
use event_format::histogram::{Distribution, Histograms, Merged, bounds};
use event_format::schema::HistogramOf;
use std::fmt::Write as _;

/// The percentiles shown, as `latency` shows them.
pub(crate) const PERCENTILES: [u64; 3] = [50, 90, 99];

/// The width of a histogram's bar, as bpftrace draws it.
pub(super) const BAR: usize = 52;

/// One line on stderr for the records that could not be merged, if any.
pub(crate) fn say_unreadable(histograms: &Histograms) {
    let bad = histograms.unreadable();
    if let Some(first) = bad.first() {
        eprintln!(
            "event-dump: {} Histogram record{} could not be merged and {} left out ({first})",
            bad.len(),
            if bad.len() == 1 { "" } else { "s" },
            if bad.len() == 1 { "was" } else { "were" }
        );
    }
}

/// Whether `m` counts durations (a span's), shown as times.
fn is_duration(m: &Merged) -> bool {
    matches!(m.declared.histogram.of, HistogramOf::Span(_))
}

/// A value as the histogram shows it: a duration for people, else the number.
fn shown(m: &Merged, v: u64) -> String {
    if is_duration(m) { human(v) } else { v.to_string() }
}

/// The histograms as text: each one's title, its summary line and its buckets, as `latency`
/// shows a span's.
pub(crate) fn text(chosen: &[&Merged], qualified: bool, per_thread: bool) -> String {
    let mut out = String::new();
    for m in chosen {
        let d = &m.total;
        let name = m.declared.full_name(qualified);
        let threads = m.threads.len();
        let _ = writeln!(
            out,
            "{name} ({}, {} buckets): {} value{}, {} record{}, {threads} thread{}",
            m.declared.of,
            m.declared.histogram.buckets.word(),
            d.count(),
            if d.count() == 1 { "" } else { "s" },
            m.records,
            if m.records == 1 { "" } else { "s" },
            if threads == 1 { "" } else { "s" },
        );
        distribution(&mut out, m, d, "  ");
        if per_thread && threads > 1 {
            for ((file, thread), d) in &m.threads {
                let who =
                    if m.periods.len() > 1 { format!("log {} T{thread}", file + 1) } else { format!("T{thread}") };
                let _ = writeln!(out, "  {who}: {} value{}", d.count(), if d.count() == 1 { "" } else { "s" });
                distribution(&mut out, m, d, "    ");
            }
        }
        out.push('\n');
    }
    out
}

/// `d`'s summary line and its bucket lines, each after `indent`.
fn distribution(out: &mut String, m: &Merged, d: &Distribution, indent: &str) {
    let (Some(min), Some(max)) = (d.min(), d.max()) else { return };
    let mut line = format!("{indent}min {}", shown(m, min));
    for p in PERCENTILES {
        let _ = write!(line, "  p{p} {}", d.percentile(p as f64).map_or_else(String::new, |v| shown(m, v)));
    }
    let _ = writeln!(out, "{line}  max {}", shown(m, max));
    let buckets = d.span();
    let most = buckets.iter().map(|b| b.1).max().unwrap_or(1).max(1);
    let unit = if is_duration(m) { "durations in ns".to_owned() } else { format!("values of {}", m.declared.unit) };
    let _ = writeln!(out, "{indent}{unit}:");
    for (b, count) in buckets {
        let label = match bounds(b, d.buckets()) {
            (from, to) if to == u128::from(from) + 1 => format!("[{}]", power(u128::from(from))),
            (from, to) => format!("[{}, {})", power(u128::from(from)), power(to)),
        };
        let bar = "@".repeat((count as usize * BAR).div_ceil(most as usize).min(BAR) * usize::from(count > 0));
        let _ = writeln!(out, "{indent}{label:<16}{count:>8} |{bar:<BAR$}|");
    }
}

/// One histogram as a JSON object, appended to `out`.
pub(crate) fn json_one(out: &mut String, m: &Merged, qualified: bool) {
    let d = &m.total;
    out.push_str("{\"name\":");
    string(out, &m.declared.full_name(qualified));
    out.push_str(",\"set\":");
    string(out, &m.declared.set);
    out.push_str(",\"of\":");
    string(out, &m.declared.of);
    out.push_str(",\"unit\":");
    string(out, &m.declared.unit);
    out.push_str(",\"layout\":");
    string(out, &m.declared.histogram.buckets.word());
    let stat = |v: Option<u64>| v.map_or_else(|| "null".to_owned(), |v| v.to_string());
    let _ = write!(
        out,
        ",\"records\":{},\"threads\":{},\"count\":{},\"sum\":{},\"min\":{}",
        m.records,
        m.threads.len(),
        d.count(),
        d.sum(),
        stat(d.min())
    );
    for p in PERCENTILES {
        let _ = write!(out, ",\"p{p}\":{}", stat(d.percentile(p as f64)));
    }
    let _ = write!(out, ",\"max\":{},\"histogram\":[", stat(d.max()));
    for (j, (b, count)) in d.nonempty().enumerate() {
        let (from, to) = bounds(b, d.buckets());
        let _ = write!(out, "{}{{\"from\":{from},\"to\":{to},\"count\":{count}}}", if j > 0 { "," } else { "" });
    }
    out.push_str("]}");
}

/// A power of two as bpftrace writes it: `512`, `1K`, `2M`, `4G`...
pub(super) fn power(v: u128) -> String {
    const SUFFIXES: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
    let mut v = v;
    let mut i = 0;
    while v >= 1024 && v.is_multiple_of(1024) && i + 1 < SUFFIXES.len() {
        v /= 1024;
        i += 1;
    }
    format!("{v}{}", SUFFIXES[i])
}

/// A duration for people: `850 ns`, `12.345 µs`, `3.210 ms`, `1.500000 s`.
pub(super) fn human(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{}.{:03} µs", ns / 1_000, ns % 1_000),
        1_000_000..1_000_000_000 => format!("{}.{:03} ms", ns / 1_000_000, ns / 1_000 % 1_000),
        _ => format!("{}.{:06} s", ns / 1_000_000_000, ns / 1_000 % 1_000_000),
    }
}
