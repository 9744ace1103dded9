//! `export`: a log in another tool's format.
//!
//! - [`chrome`]: Chrome trace-event JSON, which Perfetto's UI and chrome://tracing open.
//! - [`perfetto`]: Perfetto's own protobuf trace, which ui.perfetto.dev and trace_processor
//!   read natively (written by [`proto`], a protobuf writer of a few field types).
//! - [`sqlite`]: a database in the shape of MPS's mpseventsql.
//! - [`ctf`]: a CTF 1.8 trace that babeltrace2 reads.
//! - [`parquet`]: a Parquet dataset (a directory of tables) that DuckDB, DataFusion, Polars
//!   and Spark query.
//! - [`folded`]: nested spans as folded stacks, which inferno, flamegraph.pl and speedscope
//!   draw as flame graphs.
//! - [`otlp`]: OpenTelemetry's OTLP, the spans of the span model (`crate::spans`) and the
//!   counters, to a file or (by [`otlp_http`]) to a collector.
//!
//! The viewers' exports (Chrome, Perfetto, CTF) read the logs through the merge (bounded
//! memory, threads and logs in time order) and write as they read; Chrome's and Perfetto's
//! put the logs on one time line ([`timeline`]), show what events mean by the log's roles
//! (`event_format::roles`: spans, counters, flows), and write their file whole or not at all
//! ([`trace_file`]). The table exports (SQLite,
//! Parquet) need no time order (a query sorts) but do need the block headers' facts for
//! their `logs` tables (losses, sequence gaps), which the merge does not hand on: they read
//! each log block by block through [`walk`], one block in memory at a time. Every export keeps
//! each log's [`Ledger`] (the counts of `event-dump stats`), and says in one line on stderr
//! what it could not carry over (damaged blocks, bad records, unknown codes: [`Said`]) and,
//! for logs not whole, the verdict every reader gives, in the findings' words; the
//! export still completes and exits 0, as `print` does (`event-dump check` tells the
//! details).
//!
//! Every export takes `print`'s choice ([`Window`]: `--kind`, `--event`, `--thread`,
//! `--since`, `--until`, `--filter`, with `print`'s meaning, from the one parser of
//! [`crate::cli::Select`]): the events it leaves out are counted per log and said (on stderr,
//! and in SQLite's `event_log.left_out`), never as losses. Perfetto and Chrome choose a span
//! by its begin, as `latency` does: a span begun in the choice is exported whole (its end
//! included, whatever the choice says of it); an end whose begin was left out is an
//! instant when it is itself selected, and nothing otherwise.
//!
//! The table exports share one mapping of format letters to column types
//! ([`column_type`]), one naming of parameter columns ([`param_columns`]) and one content
//! identity of a log ([`identity`]), by which both refuse a log already exported.

mod chrome;
mod ctf;
mod folded;
pub(crate) mod otlp;
#[cfg(feature = "otlp")]
pub(crate) mod otlp_http;
#[cfg(feature = "parquet")]
mod parquet;
mod perfetto;
mod proto;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(any(feature = "sqlite", feature = "parquet"))]
mod tables;
mod timeline;
mod trace_file;

use crate::choice::{Choice, thread_names};
use crate::cli::{ExportArgs, Target};
use crate::log::{DumpError, Log, open_all, open_all_indexed};
use crate::progress::Progress;
use event_format::decode::Event;
use event_format::ledger::{Finding, Findings, Ledger};
use event_format::merge::{self, Merge};
use event_format::wire::Clock;
use std::io;
use std::process::ExitCode;

/// An event of log `file`, as the merge hands it on to an export. (What is not an event, the
/// logs' ledgers count.)
pub(crate) struct Item<'a> {
    pub(crate) file: usize,
    pub(crate) event: Event<'a>,
}

/// Reads `logs` through the merge by time ([`event_format::merge`]) into `write`, with
/// progress on stderr (on a terminal, for big logs), and says on stderr how many events it
/// could not put in time order (`N events {done} out of time order`: `exported`, or what the
/// caller does); the first error `write` returns stops the reading and is returned. Each
/// log's ledger. `latency` reads through it too.
pub(crate) fn merge_all(
    logs: &mut [Log],
    done: &str,
    mut write: impl FnMut(Item<'_>) -> io::Result<()>,
) -> io::Result<Vec<Ledger>> {
    let mut progress = Progress::new("exporting", logs.iter().map(|l| l.len()).sum());
    let mut seen = 0u64;
    let mut merge = Merge::new(logs.iter_mut().collect());
    while let Some(item) = merge.next_item() {
        let merge::Item::Event { log, event } = item else { continue };
        seen += 1;
        if seen.is_multiple_of(1 << 16) {
            progress.update(seen * 32);
        }
        if let Err(e) = write(Item { file: log, event }) {
            progress.finish();
            return Err(e);
        }
    }
    progress.finish();
    if merge.out_of_order() > 0 {
        let why = if merge.early() {
            "a block has records earlier than the time its header says they start at, which the merge goes \
             by; `--window-only` orders them by the merge window alone"
        } else {
            "the log's disorder is more than the merge window (256 MiB of records) holds"
        };
        eprintln!("event-dump: {} events {done} out of time order: {why}", merge.out_of_order());
    }
    Ok(merge.into_ledgers())
}

pub(crate) fn export(args: &ExportArgs) -> Result<ExitCode, DumpError> {
    if let Some(out) = args.out.as_ref().filter(|o| o.to_string_lossy().starts_with("s3://")) {
        return Err(DumpError::new(format!(
            "{}: exports write local files (the Parquet dataset with renames, which object stores do not have): \
             export into a directory, then copy it (`aws s3 sync DIR/ {}`)",
            out.display(),
            out.display()
        )));
    }
    if args.uncompressed && !matches!(args.to, Target::Perfetto) {
        return Err(DumpError::new(
            "--uncompressed is for --to perfetto, whose packets are otherwise deflated".to_owned(),
        ));
    }
    if (args.weight.is_some() || args.per_thread) && args.to != Target::Folded {
        return Err(DumpError::new(
            "--weight and --per-thread are for --to folded, whose stacks they weigh".to_owned(),
        ));
    }
    // The viewers' exports merge by the logs' block indexes; the table exports walk blocks.
    if !args.header.is_empty() && args.to != Target::Otlp {
        return Err(DumpError::new("--header is for --to otlp, whose requests it adds to".to_owned()));
    }
    let out = || args.out.clone().unwrap_or_default();
    let mut logs = match args.to {
        Target::Chrome | Target::Perfetto | Target::Ctf | Target::Folded | Target::Otlp if !args.window_only => {
            open_all_indexed(&args.logs, args.force)?
        }
        _ => open_all(&args.logs, args.force)?,
    };
    let mut window = {
        let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
        let choice = Choice::new(&args.select, &headers, || thread_names(&args.logs, args.force))?;
        Window::new(choice, headers.iter().map(|h| h.clock).collect())
    };
    match args.to {
        Target::Chrome => chrome::export(&mut logs, &out(), &mut window),
        Target::Perfetto => {
            let packing = if args.uncompressed { perfetto::Packing::Plain } else { perfetto::Packing::Deflated };
            perfetto::export(&mut logs, &out(), packing, &mut window)
        }
        #[cfg(feature = "sqlite")]
        Target::Sqlite => sqlite::export(&mut logs, &out(), &mut window),
        #[cfg(not(feature = "sqlite"))]
        Target::Sqlite => Err(without("sqlite")),
        Target::Ctf => ctf::export(&mut logs, &out(), &mut window),
        Target::Folded => {
            folded::export(&mut logs, &out(), &mut window, args.weight.unwrap_or_default(), args.per_thread)
        }
        // A file is written by `otlp`; an endpoint is sent to by `otlp_http`, which stands on it.
        Target::Otlp => match args.out.as_deref() {
            Some(file) if otlp::endpoint(file).is_none() => otlp::export(&mut logs, file, &mut window),
            #[cfg(feature = "otlp")]
            out => otlp_http::export(&mut logs, out.and_then(otlp::endpoint), &args.header, &mut window),
            #[cfg(not(feature = "otlp"))]
            _ => Err(without("otlp")),
        },
        Target::Parquet if window.choice.is_some() => Err(DumpError::new(
            "the Parquet export takes no --kind, --event, --thread, --since, --until or --filter: a dataset holds \
             whole logs, so that a log exported anywhere gives the same files and rows; select in the query \
             (WHERE ...), or export the window with --to sqlite"
                .to_owned(),
        )),
        #[cfg(feature = "parquet")]
        Target::Parquet => parquet::export(logs, &out()),
        #[cfg(not(feature = "parquet"))]
        Target::Parquet => Err(without("parquet")),
    }
}

/// The error of an export this build left out (its cargo feature was off).
#[cfg(not(all(feature = "sqlite", feature = "parquet", feature = "otlp")))]
fn without(feature: &str) -> DumpError {
    DumpError::new(format!(
        "this event-dump was built without the {feature} export; build it with `--features {feature}` (on by \
         default)"
    ))
}

/// The events an export writes: `print`'s choice, and what it left out of each log.
pub(crate) struct Window {
    /// `None` when the command line chose nothing: every event is exported.
    choice: Option<Choice>,
    clocks: Vec<Clock>,
    /// Each log's events the choice left out.
    left_out: Vec<u64>,
}

impl Window {
    fn new(choice: Choice, clocks: Vec<Clock>) -> Window {
        let left_out = vec![0; clocks.len()];
        Window { choice: (!choice.is_everything()).then_some(choice), clocks, left_out }
    }

    /// Whether event `event` of log `file` is selected; one that is not is counted as left out.
    fn keeps(&mut self, file: usize, event: &Event<'_>) -> bool {
        let Some(choice) = &self.choice else { return true };
        let keeps = choice.keeps(file, event, &self.clocks[file]);
        if !keeps {
            self.left_out[file] += 1;
        }
        keeps
    }

    /// Whether event `event` of log `file` is selected, without counting it: for a second
    /// pass over a log (the table exports' spans) whose events the first pass counted.
    #[cfg(feature = "sqlite")]
    fn selects(&self, file: usize, event: &Event<'_>) -> bool {
        self.choice.as_ref().is_none_or(|choice| choice.keeps(file, event, &self.clocks[file]))
    }

    /// The events of log `file` left out so far.
    #[cfg(feature = "sqlite")]
    fn left_out(&self, file: usize) -> u64 {
        self.left_out[file]
    }

    /// The events of every log left out.
    fn left_out_of_all(&self) -> u64 {
        self.left_out.iter().sum()
    }
}

/// The words of an export's note on what its choice left out, if it left out any.
fn left_out_note(n: u64) -> Option<String> {
    (n > 0).then(|| {
        format!(
            "{n} {} outside the choice (--kind, --event, --thread, --since, --until, --filter) left out",
            if n == 1 { "event" } else { "events" }
        )
    })
}

/// The log's event-set versions as the table exports and CTF's environment write them: the
/// one set's version (`1.2.0`), or `set:version` for each when the log holds more than one
/// (`app:1.2.0 storage-v2:2.0.1`).
fn set_versions(header: &event_format::wire::Header) -> String {
    let several = header.sets.len() > 1;
    header
        .sets
        .iter()
        .map(|s| if several { format!("{}:{}", s.schema.name, s.schema.version) } else { s.schema.version.to_string() })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The findings of records a reader could not hand on (the merge leaves them out): what the
/// exports and `latency` say they skipped.
pub(crate) const UNREADABLE: [Finding; 3] = [Finding::DamagedBlocks, Finding::BadRecords, Finding::UnknownRecords];

/// What an export says of a log beside what it exported, from the logs' [`Ledger`]s' findings
/// (the counts of `event-dump stats`, in the words of their one table,
/// [`event_format::ledger::FINDINGS`]): what it skipped, damaged blocks, bad records and
/// records of unknown codes, and the verdict every reader gives. (What the log lost is in
/// the table exports' `logs` tables, and in every viewer as the `Dropped` events; a ring's
/// overwritten blocks are no damage.)
#[derive(Debug, Default)]
struct Said {
    skipped: Vec<String>,
    /// What a recording of segments misses that no export can carry: segments the disk budget
    /// removed or that are missing, events the recorder could not write.
    segments: Vec<String>,
    /// The verdict of the logs' findings together, when they are not whole.
    verdict: Option<String>,
}

impl Said {
    /// What the ledgers of `logs` say together, as the parts of one line. A log without its
    /// stop marker is taken as still being written: whether its writer is alive is
    /// `event-dump check`'s to ask.
    fn of<'a>(ledgers: impl IntoIterator<Item = &'a Ledger>) -> Said {
        let mut f = Findings::default();
        let (mut full, mut unwritten, mut between) = (0u64, 0u64, 0u64);
        for l in ledgers {
            f.add(&l.findings(|| true));
            full = full.saturating_add(l.unwritten_for_disk_full());
            unwritten = unwritten.saturating_add(l.unwritten() - l.unwritten_for_disk_full());
            between = between.saturating_add(l.lost_between());
        }
        let mut segments = Vec::new();
        for removed in f.said(&[Finding::RemovedSegments]) {
            segments.push(format!("{removed} ({} events)", f.removed_events));
        }
        segments.extend(f.said(&[Finding::SegmentGaps]));
        if full > 0 {
            segments.push(format!("disk full: {full} events not written"));
        }
        if unwritten > 0 {
            segments.push(format!("write error: {unwritten} events not written"));
        }
        if between > 0 {
            segments.push(format!("{between} events lost between segments"));
        }
        let verdict = (!f.is_whole(false)).then(|| f.verdict(false));
        Said { skipped: f.said(&UNREADABLE), segments, verdict }
    }

    /// The line of a table export for one log, if anything was skipped or is missing.
    #[cfg(any(feature = "sqlite", feature = "parquet"))]
    fn table_line(&self) -> Option<String> {
        let skipped = (!self.skipped.is_empty()).then(|| format!("{} skipped", self.skipped.join(", ")));
        let all: Vec<String> = skipped.into_iter().chain(self.segments.iter().cloned()).collect();
        (!all.is_empty()).then(|| all.join("; "))
    }

    /// The one line of a viewer's export (`chrome`, `ctf`) on stderr, with the exporter's own
    /// notes (`extra`), if there is anything to say.
    fn report(&self, format: &str, extra: &[String], window: &Window) {
        let skipped = (!self.skipped.is_empty()).then(|| format!("skipped {}", self.skipped.join(", ")));
        let left_out = left_out_note(window.left_out_of_all());
        let all: Vec<String> = skipped
            .into_iter()
            .chain(self.segments.iter().cloned())
            .chain(extra.iter().cloned())
            .chain(left_out)
            .chain(self.verdict.clone())
            .collect();
        if !all.is_empty() {
            eprintln!(
                "event-dump: export --to {format}: {}; the rest was exported (`event-dump check LOG` tells more)",
                all.join("; ")
            );
        }
    }
}
