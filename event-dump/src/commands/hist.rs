//! `hist`: the histograms the recorder kept (events.def's `HISTOGRAM`; docs/guide/aggregates.md),
//! merged over threads, segments and logs: each declared histogram's `Histogram` records added
//! up by event-format's [`Histograms`], shown as `latency` shows a span's durations (count,
//! min, percentiles, max, one line per bucket), so that a distribution survives whatever the
//! limits suppressed and the disk budget deleted.
//!
//! - **Percentiles are the buckets'**: the p-th of n values (nearest rank) lies in a bucket,
//!   and its largest value is shown (within the smallest and largest counted): exact below
//!   2^precision, else at most one bucket's width above ([`Distribution::percentile`]).
//! - **Nothing guessed.** A record that does not read (an index its header does not declare,
//!   buckets that break their rules) is left out and said on stderr.

use super::latency::{BAR, human, power};
use super::{Result, write_all};
use crate::cli::{HistArgs, HistFormat};
use crate::export::Item;
use crate::log::{DumpError, open_all};
use event_format::histogram::{Distribution, Histograms, Merged, bounds};
use event_format::schema::HistogramOf;
use event_format::select::glob;
use std::fmt::Write as _;
use std::process::ExitCode;

/// The percentiles shown, as `latency` shows them.
pub(crate) const PERCENTILES: [u64; 3] = [50, 90, 99];

/// `hist`: every declared histogram of the logs, merged.
pub(crate) fn hist(args: &HistArgs) -> Result<ExitCode> {
    let mut logs = open_all(&args.logs, args.force)?;
    let mut histograms = Histograms::new();
    for (file, log) in logs.iter().enumerate() {
        histograms.add_log(file, log.header());
    }
    if histograms.is_empty() {
        return Err(DumpError::new(
            "the logs declare no histogram: declare one in events.def (HISTOGRAM(name, Span, LOG2), or HISTOGRAM(name, Event, param, LOG2))",
        ));
    }
    crate::export::merge_all(&mut logs, "read", |Item { file, event }| {
        histograms.take(file, &event);
        Ok(())
    })
    .map_err(|e| DumpError::new(format!("cannot read the logs: {e}")))?;
    let names: Option<Vec<&str>> = args.name.as_deref().map(|n| n.split(',').map(str::trim).collect());
    let wanted =
        |m: &Merged| names.as_ref().is_none_or(|n| n.iter().any(|g| glob::matches(g, &m.declared.histogram.name)));
    let chosen: Vec<&Merged> = histograms.iter().map(|(_, m)| m).filter(|m| wanted(m)).collect();
    if chosen.is_empty() {
        let all: Vec<String> = histograms.iter().map(|(_, m)| m.declared.histogram.name.clone()).collect();
        return Err(DumpError::new(format!("--name matches no histogram; the logs declare {}", all.join(", "))));
    }
    let qualified = histograms.qualified();
    let out = match args.format {
        HistFormat::Text => text(&chosen, qualified, args.per_thread),
        HistFormat::Json => json(&chosen, qualified),
    };
    write_all(&out)?;
    say_unreadable(&histograms);
    Ok(ExitCode::SUCCESS)
}

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

/// The histograms as one JSON document (docs/OUTPUT.md, "hist").
pub(crate) fn json(chosen: &[&Merged], qualified: bool) -> String {
    let mut out = String::from("{\"percentiles\":\"nearest rank, the bucket's largest value\",\"histograms\":[");
    for (i, m) in chosen.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('\n');
        json_one(&mut out, m, qualified);
    }
    out.push_str("\n]}\n");
    out
}

/// One histogram as a JSON object, appended to `out`.
pub(crate) fn json_one(out: &mut String, m: &Merged, qualified: bool) {
    use crate::json::string;
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
