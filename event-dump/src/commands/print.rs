//! `print`: one line per event, threads (and logs) merged by time, in text, JSON or CSV;
//! what could not be shown (damaged blocks, bad records, unknown codes) goes to stderr.

use super::{Colors, Result, Selection, out_line, thread_names};
use crate::cli::PrintArgs;
use crate::color::Style;
use crate::log::{DumpError, open_all};
use crate::merge::{self, Item};
use crate::progress::Progress;
use crate::render::{Annotations, CsvColumns, Format, Renderer};
use event_format::decode::Catalog;
use event_format::wire::{Clock, Header};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::process::ExitCode;

/// `print`: the selected events of the logs, merged by time.
pub(crate) fn print(args: &PrintArgs, colors: Colors) -> Result<ExitCode> {
    let mut logs = open_all(&args.logs, args.force)?;
    let headers: Vec<&Header> = logs.iter().map(|l| l.header()).collect();
    let selection = Selection::new(&args.select, &headers, || thread_names(&args.logs, args.force))?;
    let catalogs: Vec<&Catalog> = logs.iter().map(|l| &l.catalog).collect();
    let csv = (args.format == Format::Csv).then(|| CsvColumns::new(&catalogs, |f, c| selection.may_show(f, c)));
    let renderer = Renderer {
        format: args.format,
        raw_ticks: args.raw_ticks,
        labels: !args.no_labels,
        pids: (logs.len() > 1).then(|| logs.iter().map(|l| l.header().producer.pid).collect()),
        palette: colors.out,
        csv,
    };
    let clocks: Vec<Clock> = logs.iter().map(|l| l.header().clock).collect();
    let total: u64 = logs.iter().map(|l| l.len).sum();
    let mut progress = Progress::new("reading", total);
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    if let Some(h) = renderer.header() {
        let _ = out_line(&mut out, h)?;
    }
    let mut ann = Annotations::default();
    let mut shown = 0u64;
    let mut line = String::new();
    let mut problems: Vec<String> = Vec::new();
    let mut failure: Option<DumpError> = None;
    let paths: Vec<String> = logs.iter().map(|l| l.path.display().to_string()).collect();
    let mut seen = 0u64;
    let mut unknown: BTreeMap<(usize, u16), u64> = BTreeMap::new();
    merge::merge(&mut logs, |item| {
        seen += 1;
        if seen.is_multiple_of(1 << 16) {
            progress.update(seen * 32);
        }
        match item {
            Item::Event { file, event } => {
                ann.learn(file, &event);
                if !selection.keeps(file, &event, &clocks[file]) {
                    return ControlFlow::Continue(());
                }
                if args.limit.is_some_and(|l| shown >= l) {
                    return ControlFlow::Break(());
                }
                shown += 1;
                line.clear();
                renderer.line(&mut line, &ann, file, &clocks[file], &event);
                match out_line(&mut out, &line) {
                    Ok(flow) => flow,
                    Err(e) => {
                        failure = Some(e);
                        ControlFlow::Break(())
                    }
                }
            }
            Item::Unknown { file, code } => {
                *unknown.entry((file, code)).or_insert(0u64) += 1;
                ControlFlow::Continue(())
            }
            Item::Bad { file, thread, error } => {
                problems.push(format!("{}: thread {thread}: {error}", paths[file]));
                ControlFlow::Continue(())
            }
            Item::Damaged { file, error } => {
                problems.push(format!("{}: {error}", paths[file]));
                ControlFlow::Continue(())
            }
        }
    })?;
    progress.finish();
    if let Some(e) = failure {
        return Err(e);
    }
    let _ = out.flush();
    for ((file, code), n) in &unknown {
        problems.push(format!(
            "{}: {n} records of unknown code {code:#06x} skipped (a newer event set or format wrote them)",
            paths[*file]
        ));
    }
    for p in &problems {
        eprintln!("event-dump: {}", colors.err.paint(Style::Warning, p));
    }
    Ok(ExitCode::SUCCESS)
}
