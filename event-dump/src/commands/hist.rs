//! `hist`: the histograms the recorder kept (events.def's `HISTOGRAM`; docs/guide/aggregates.md),
//! merged over threads, segments and logs: each declared histogram's `Histogram` records added
//! up by event-format's [`Histograms`], shown as `latency` shows a span's durations (count,
//! min, percentiles, max, one line per bucket), so that a distribution survives whatever the
//! limits suppressed and the disk budget deleted.
//!
//! - **Percentiles are the buckets'**: the p-th of n values (nearest rank) lies in a bucket,
//!   and its largest value is shown (within the smallest and largest counted): exact below
//!   2^precision, else at most one bucket's width above
//!   ([`Distribution::percentile`](event_format::histogram::Distribution::percentile)).
//! - **Chosen as `summary` and `latency` choose them**: `--thread` keeps the records of the
//!   threads that counted the values, `--since`/`--until` those whose period overlaps the
//!   window, each period whole ([`Choice::keeps_period`]).
//! - **Nothing guessed.** A record that does not read (an index its header does not declare,
//!   buckets that break their rules) is left out and said on stderr.

use super::distributions::{json_one, say_unreadable, text};
use super::{Choice, Result, thread_names, write_all};
use crate::cli::{HistArgs, HistFormat, Select};
use crate::export::Item;
use crate::log::{DumpError, open_all};
use event_format::histogram::{Histograms, Merged};
use event_format::select::glob;
use std::process::ExitCode;

/// `hist`: every declared histogram of the logs, merged.
pub(crate) fn hist(args: &HistArgs) -> Result<ExitCode> {
    let mut logs = open_all(&args.logs, args.force)?;
    let headers: Vec<_> = logs.iter().map(|l| l.header()).collect();
    let select = Select { scope: args.scope.clone(), ..Select::default() };
    let choice = Choice::new(&select, &headers, || thread_names(&args.logs, args.force))?;
    let clocks: Vec<_> = headers.iter().map(|h| h.clock).collect();
    drop(headers);
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
        if choice.keeps_period(file, &event, &clocks[file]) {
            histograms.take(file, &event);
        }
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
