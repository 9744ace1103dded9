//! `print`: one line per event, threads (and logs) merged by time, in text, JSON or CSV;
//! what could not be shown (damaged blocks, bad records, unknown codes, events the merge
//! window could not put in order) goes to stderr, and last, for each log read to its end that
//! is not whole, the verdict every reader gives (the ledger's findings, counted as the blocks
//! are read). The work is done by the `pipeline`: blocks rendered on `--jobs` workers, merged
//! and written in order.

use super::{Choice, Colors, Result, thread_names};
use crate::cli::PrintArgs;
use crate::color::Style;
use crate::log::{open_all, open_all_indexed};
use crate::pipeline::{self, Context, DEFAULT_WINDOW_MIB, LineMerge, Writer, default_jobs};
use crate::progress::Progress;
use crate::render::{CsvColumns, Format, Renderer};
use event_format::decode::{Catalog, Event};
use event_format::ledger::{Finding, Ledger};
use event_format::merge::Watermark;
use event_format::wire::{Clock, Header};
use std::process::ExitCode;

/// `print`: the selected events of the logs, merged by time.
pub(crate) fn print(args: &PrintArgs, colors: Colors) -> Result<ExitCode> {
    let mut logs =
        if args.window_only { open_all(&args.logs, args.force)? } else { open_all_indexed(&args.logs, args.force)? };
    let headers: Vec<&Header> = logs.iter().map(|l| l.header()).collect();
    let choice = Choice::new(&args.select, &headers, || thread_names(&args.logs, args.force))?;
    let catalogs: Vec<&Catalog> = logs.iter().map(|l| l.catalog()).collect();
    let csv = (args.format == Format::Csv).then(|| CsvColumns::new(&catalogs, |f, c| choice.may_show(f, c)));
    let renderer = Renderer {
        format: args.format,
        raw_ticks: args.raw_ticks,
        labels: !args.no_labels,
        processes: (logs.len() > 1).then(|| crate::identity::prefixes(&headers)),
        palette: colors.out,
        csv,
    };
    let clocks: Vec<Clock> = logs.iter().map(|l| l.header().clock).collect();
    let total: u64 = logs.iter().map(|l| l.len()).sum();
    let mut progress = Progress::new("reading", total);
    let paths: Vec<String> = logs.iter().map(|l| l.path().display().to_string()).collect();
    // Each log's ledger, which the pipeline counts every block in: what `print` says of the
    // log at the end, in the findings' words.
    let mut ledgers: Vec<Ledger> = logs.iter().map(|l| l.ledger()).collect();
    let catalogs: Vec<Catalog> = logs.iter().map(|l| l.catalog().clone()).collect();
    let keeps = |file: usize, event: &Event<'_>, clock: &Clock| choice.keeps(file, event, clock);
    let ctx = Context {
        renderer: &renderer,
        keeps: (!choice.is_everything()).then_some(&keeps),
        catalogs: catalogs.clone(),
        clocks: clocks.clone(),
        starts: logs.iter().map(|l| l.segment_starts()).collect(),
        spare: Default::default(),
    };
    let mut w = Writer::new(&renderer, &catalogs, &paths, args.limit, &mut progress);
    if let Some(h) = renderer.header() {
        w.out.extend_from_slice(h.as_bytes());
        w.out.push(b'\n');
    }
    let window = args.window.unwrap_or(DEFAULT_WINDOW_MIB).max(1) << 20;
    let wall = (logs.len() > 1).then(|| clocks.clone());
    let mark = Watermark::new(logs.iter_mut().map(|l| l.take_index()).collect(), wall.clone());
    let mut merge = LineMerge::new(window, wall, mark);
    let jobs = args.jobs.unwrap_or_else(default_jobs).max(1);
    let read_whole = pipeline::run(&mut logs, &mut ledgers, &ctx, jobs, &mut merge, &mut w);
    if w.failure.is_none() {
        let _ = w.flush();
    }
    let Writer { mut problems, unknown, failure, disorder, .. } = w;
    progress.finish();
    if let Some(e) = failure {
        return Err(e);
    }
    for ((file, code), n) in &unknown {
        problems.push(format!(
            "{}: {n} records of unknown code {code:#06x} skipped (a newer event set or format wrote them)",
            paths[*file]
        ));
    }
    // The logs with a block whose records start before its header says.
    let early: Vec<&str> = (0..paths.len()).filter(|&f| merge.early(f)).map(|f| paths[f].as_str()).collect();
    for (file, n) in disorder.iter().enumerate().filter(|(_, n)| **n > 0) {
        problems.push(if !early.is_empty() {
            format!(
                "{}: {n} events printed out of time order: a block of {} has records earlier than the \
                 time its header says they start at, which `print` merges by; `--window-only` orders \
                 them by the merge window alone",
                paths[file],
                early.join(", ")
            )
        } else {
            format!(
                "{}: {n} events printed out of time order: the log's disorder is more than the merge window \
                 ({} MiB) holds; `--window MIB` holds more",
                paths[file],
                window >> 20
            )
        });
    }
    problems.extend(missing_segments(&ledgers, &paths));
    // The verdict of the logs read to their end (not when `--limit` or a closed pipe stopped
    // the output first): `check`'s, in the same words.
    if read_whole {
        for ((log, ledger), path) in logs.iter().zip(&mut ledgers).zip(&paths) {
            if let Some(findings) = log.ring_findings() {
                ledger.ring_file(findings);
            }
            let found = ledger.findings(|| log.writer_alive());
            problems.extend(crate::log::not_whole_line(path, &found));
        }
    }
    for p in &problems {
        eprintln!("event-dump: {}", colors.err.paint(Style::Warning, p));
    }
    Ok(ExitCode::SUCCESS)
}

/// What each recording of segments misses, by its segments' properties (`check` says more):
/// segments the disk budget removed or missing otherwise, events lost between segments.
fn missing_segments(ledgers: &[Ledger], paths: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    for (ledger, path) in ledgers.iter().zip(paths) {
        let (removed, events) = ledger.removed();
        let (gaps, between) = (ledger.segment_gaps(), ledger.lost_between());
        let mut said = Vec::new();
        if removed > 0 {
            said.push(format!("{} ({events} events)", Finding::RemovedSegments.declared().count(removed)));
        }
        if gaps > 0 {
            said.push(format!("{} (deleted, moved or not given)", Finding::SegmentGaps.declared().count(gaps)));
        }
        if between > 0 {
            said.push(format!("{between} events lost between segments"));
        }
        if !said.is_empty() {
            lines.push(format!("{path}: {}; `event-dump check {path}` tells more", said.join("; ")));
        }
    }
    lines
}
