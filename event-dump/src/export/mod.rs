//! `export`: a log in another tool's format.
//!
//! - [`chrome`]: Chrome trace-event JSON, which Perfetto's UI and chrome://tracing open.
//! - [`perfetto`]: Perfetto's own protobuf trace, which ui.perfetto.dev and trace_processor
//!   read natively (written by [`proto`], a protobuf writer of a few field types).
//! - [`sqlite`]: a database in the shape of MPS's mpseventsql.
//! - [`ctf`]: a CTF 1.8 trace that babeltrace2 reads.
//! - [`parquet`]: a Parquet dataset (a directory of tables) that DuckDB, DataFusion, Polars
//!   and Spark query.
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
//! what it could not carry over (damaged blocks, bad records, unknown codes: [`Said`]); the
//! export still completes and exits 0, as `print` does (`event-dump check` tells the
//! details).
//!
//! Every export takes `print`'s selection ([`Window`]: `--kind`, `--event`, `--thread`,
//! `--since`, `--until`, `--filter`, with `print`'s meaning, from the one parser of
//! [`crate::cli::Select`]): the events it leaves out are counted per log and said (on stderr,
//! and in SQLite's `event_log.left_out`), never as losses. Perfetto and Chrome choose a span
//! by its begin, as `latency` does: a span begun in the selection is exported whole (its end
//! included, whatever the selection says of it); an end whose begin was left out is an
//! instant when it is itself selected, and nothing otherwise.
//!
//! The table exports share one mapping of format letters to column types
//! ([`column_type`]), one naming of parameter columns ([`param_columns`]) and one content
//! identity of a log ([`identity`]), by which both refuse a log already exported.

mod chrome;
mod ctf;
mod parquet;
mod perfetto;
mod proto;
mod sqlite;
mod timeline;
mod trace_file;

use crate::cli::{ExportArgs, Target};
use crate::log::{DumpError, Log, open_all, open_all_indexed};
use crate::merge::{self, Item};
use crate::progress::Progress;
use crate::selection::{Selection, thread_names};
use event_format::decode::{BlockSource, Entry, Event};
use event_format::ledger::Ledger;
use event_format::letter::Letter;
use event_format::wire::Clock;
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::ops::ControlFlow;
use std::path::Path;
use std::process::ExitCode;

/// Reads `logs` through the merge into `write`, with progress on stderr (on a terminal, for
/// big logs), and says on stderr how many events it could not put in time order (`N events
/// {done} out of time order`: `exported`, or what the caller does); the first error `write`
/// returns stops the reading and is returned. Each log's ledger. `latency` reads through it
/// too.
pub(crate) fn merge_all(
    logs: &mut [Log],
    done: &str,
    mut write: impl FnMut(Item<'_>) -> io::Result<()>,
) -> io::Result<Vec<Ledger>> {
    let mut progress = Progress::new("exporting", logs.iter().map(|l| l.len()).sum());
    let mut seen = 0u64;
    let mut failure = None;
    let merged = merge::merge(logs, |item| {
        seen += 1;
        if seen.is_multiple_of(1 << 16) {
            progress.update(seen * 32);
        }
        match write(item) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failure = Some(e);
                ControlFlow::Break(())
            }
        }
    });
    progress.finish();
    if let Some(e) = failure {
        return Err(e);
    }
    let merged = merged.map_err(|e| io::Error::other(e.0))?;
    if merged.out_of_order > 0 {
        let why = if merged.early {
            "a block has records earlier than the time its header says they start at, which the merge goes \
             by; `--window-only` orders them by the merge window alone"
        } else {
            "the log's disorder is more than the merge window (256 MiB of records) holds"
        };
        eprintln!("event-dump: {} events {done} out of time order: {why}", merged.out_of_order);
    }
    Ok(merged.ledgers)
}

pub(crate) fn export(args: &ExportArgs) -> Result<ExitCode, DumpError> {
    // The viewers' exports merge by the logs' block indexes; the table exports walk blocks.
    let mut logs = match args.to {
        Target::Chrome | Target::Perfetto | Target::Ctf if !args.window_only => {
            open_all_indexed(&args.logs, args.force)?
        }
        _ => open_all(&args.logs, args.force)?,
    };
    let mut window = {
        let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
        let selection = Selection::new(&args.select, &headers, || thread_names(&args.logs, args.force))?;
        Window::new(selection, headers.iter().map(|h| h.clock).collect())
    };
    match args.to {
        Target::Chrome => chrome::export(&mut logs, &args.out, &mut window),
        Target::Perfetto => perfetto::export(&mut logs, &args.out, &mut window),
        Target::Sqlite => sqlite::export(&mut logs, &args.out, &mut window),
        Target::Ctf => ctf::export(&mut logs, &args.out, &mut window),
        Target::Parquet => parquet::export(&mut logs, &args.out, &mut window),
    }
}

/// The events an export writes: `print`'s selection, and what it left out of each log.
pub(crate) struct Window {
    /// `None` when the command line chose nothing: every event is exported.
    selection: Option<Selection>,
    clocks: Vec<Clock>,
    /// Each log's events the selection left out.
    left_out: Vec<u64>,
}

impl Window {
    fn new(selection: Selection, clocks: Vec<Clock>) -> Window {
        let left_out = vec![0; clocks.len()];
        Window { selection: (!selection.is_everything()).then_some(selection), clocks, left_out }
    }

    /// Whether event `event` of log `file` is selected; one that is not is counted as left out.
    fn keeps(&mut self, file: usize, event: &Event<'_>) -> bool {
        let Some(selection) = &self.selection else { return true };
        let keeps = selection.keeps(file, event, &self.clocks[file]);
        if !keeps {
            self.left_out[file] += 1;
        }
        keeps
    }

    /// The events of log `file` left out so far.
    fn left_out(&self, file: usize) -> u64 {
        self.left_out[file]
    }

    /// The events of every log left out.
    fn left_out_of_all(&self) -> u64 {
        self.left_out.iter().sum()
    }
}

/// The words of an export's note on what its selection left out, if it left out any.
fn left_out_note(n: u64) -> Option<String> {
    (n > 0).then(|| {
        format!(
            "{n} {} outside the selection (--kind, --event, --thread, --since, --until, --filter) left out",
            if n == 1 { "event" } else { "events" }
        )
    })
}

/// The type of a parameter's column in a table export: one mapping of format letters,
/// shared by the SQLite and the Parquet exports, each of which spells it in its own types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ColumnType {
    /// `P`, `A`, `W`: unsigned 64-bit.
    U64,
    /// `U`: unsigned 32-bit.
    U32,
    /// `I`: signed 64-bit.
    I64,
    /// `D`: IEEE 754 double.
    F64,
    /// `B`: boolean.
    Bool,
    /// `S`: UTF-8 text (bytes that are not UTF-8 replaced by U+FFFD, as the JSON output does).
    Utf8,
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

/// What a table export (SQLite, Parquet) took from one log: its path as shown, its number
/// in the database or dataset, its events, and what its ledger says was skipped.
struct Imported {
    path: String,
    serial: i64,
    events: u64,
    /// The events the selection left out (not rows, not lost).
    left_out: u64,
    said: Said,
}

/// Says what a table export took from each log: a line on stdout per log, and on stderr what
/// was skipped. The exit status of a run that succeeded.
fn report(imported: &[Imported], out: &Path) -> ExitCode {
    let mut stdout = io::stdout().lock();
    for s in imported {
        if let Some(line) = s.said.table_line() {
            eprintln!("event-dump: {}: {line}, the rest exported; `event-dump check {}` lists them", s.path, s.path);
        }
        let left_out = left_out_note(s.left_out).map(|n| format!(" ({n})")).unwrap_or_default();
        let _ = writeln!(stdout, "{}: {} events as log {} in {}{left_out}", s.path, s.events, s.serial, out.display());
    }
    ExitCode::SUCCESS
}

/// What an export says of a log beside what it exported, from the log's [`Ledger`] (the
/// counts of `event-dump stats`): what it skipped, damaged blocks, bad records and records of
/// unknown codes. (What the log lost is in the table exports' `logs` tables, and in every
/// viewer as the `Dropped` events; a ring's overwritten blocks are no damage.)
#[derive(Debug, Default)]
struct Said {
    skipped: Vec<String>,
    /// What a recording of segments misses that no export can carry: segments the disk budget
    /// removed or that are missing, events the recorder could not write.
    segments: Vec<String>,
}

impl Said {
    /// What the ledgers of `logs` say together, as the parts of one line.
    fn of<'a>(ledgers: impl IntoIterator<Item = &'a Ledger>) -> Said {
        let (mut damaged, mut bad, mut unknown) = (0u64, 0u64, 0u64);
        let (mut removed, mut removed_events, mut gaps, mut full, mut unwritten, mut between) =
            (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
        for l in ledgers {
            damaged += l.damaged_blocks().len() as u64;
            bad += l.bad_records().len() as u64;
            unknown = unknown.saturating_add(l.unknown_records());
            let (r, e) = l.removed();
            removed += r;
            removed_events = removed_events.saturating_add(e);
            gaps += l.segment_gaps();
            full = full.saturating_add(l.unwritten_for_disk_full());
            unwritten = unwritten.saturating_add(l.unwritten() - l.unwritten_for_disk_full());
            between = between.saturating_add(l.lost_between());
        }
        let mut segments = Vec::new();
        if removed > 0 {
            let s = if removed == 1 { "" } else { "s" };
            segments.push(format!("{removed} segment{s} removed by the disk budget ({removed_events} events)"));
        }
        if gaps > 0 {
            let s = if gaps == 1 { "" } else { "s" };
            segments.push(format!("{gaps} segment{s} missing"));
        }
        if full > 0 {
            segments.push(format!("disk full: {full} events not written"));
        }
        if unwritten > 0 {
            segments.push(format!("write error: {unwritten} events not written"));
        }
        if between > 0 {
            segments.push(format!("{between} events lost between segments"));
        }
        let mut skipped = Vec::new();
        let mut count = |n: u64, one: &str, many: &str| {
            if n > 0 {
                skipped.push(format!("{n} {}", if n == 1 { one } else { many }));
            }
        };
        count(damaged, "damaged block", "damaged blocks");
        count(bad, "bad record", "bad records");
        count(unknown, "record of an unknown code", "records of unknown codes");
        Said { skipped, segments }
    }

    /// The line of a table export for one log, if anything was skipped or is missing.
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
            .collect();
        if !all.is_empty() {
            eprintln!(
                "event-dump: export --to {format}: {}; the rest was exported (`event-dump check LOG` tells more)",
                all.join("; ")
            );
        }
    }
}

/// The column type of a parameter of `letter`.
fn column_type(letter: Letter) -> ColumnType {
    match letter {
        Letter::Pointer | Letter::Address | Letter::Word => ColumnType::U64,
        Letter::Unsigned => ColumnType::U32,
        Letter::Signed => ColumnType::I64,
        Letter::Double => ColumnType::F64,
        Letter::Bool => ColumnType::Bool,
        Letter::String => ColumnType::Utf8,
    }
}

/// The columns of parameters `params` in a table whose columns before them are `fixed`:
/// their names, made distinct (ignoring ASCII case, as SQLite and DuckDB compare names) from
/// the fixed columns and from each other by appending `_`.
fn param_columns(fixed: &[&str], params: &[String]) -> Vec<String> {
    let mut taken: Vec<String> = fixed.iter().map(|c| (*c).to_owned()).collect();
    params
        .iter()
        .map(|p| {
            let mut column = p.clone();
            while taken.iter().any(|t| t.eq_ignore_ascii_case(&column)) {
                column.push('_');
            }
            taken.push(column.clone());
            column
        })
        .collect()
}

/// A log's content identity: its size and a 64-bit FNV-1a digest of all its bytes (of its
/// files' bytes one after the other, for a recording of segments), `size:digest` with the
/// digest in hex. The table exports refuse a log whose identity they already hold.
fn identity(files: &[&Path]) -> io::Result<String> {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut buf = vec![0u8; 1 << 20];
    let (mut hash, mut size) = (OFFSET, 0u64);
    for path in files {
        let mut file = std::fs::File::open(path)?;
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            for &b in &buf[..n] {
                hash = (hash ^ u64::from(b)).wrapping_mul(PRIME);
            }
            size += n as u64;
        }
    }
    Ok(format!("{size}:{hash:016x}"))
}

/// What a table export learns of a log while it walks it: its [`Ledger`], the events of
/// each thread (those the export wrote, as rows), and the events the selection left out.
struct Walked {
    ledger: Ledger,
    events_by_thread: BTreeMap<u64, u64>,
    left_out: u64,
}

impl Walked {
    /// The events written, as rows.
    fn rows(&self) -> u64 {
        self.events_by_thread.values().sum()
    }
}

/// Reads `log` (log `file` of the export) block by block in the order it holds them and hands
/// each event `window` selects to `visit`, counting as it goes (the ledger counts every
/// event); the first error `visit` returns stops the reading and is returned. Memory: one
/// block, and the ledger's numbers of each thread's blocks (a range per gap).
fn walk<E>(
    log: &mut Log,
    file: usize,
    window: &mut Window,
    mut visit: impl FnMut(&Event<'_>) -> Result<(), E>,
) -> Result<Walked, E> {
    let mut ledger = log.ledger();
    let mut events_by_thread = BTreeMap::new();
    let block_size = u64::from(log.header().block_size);
    let starts = log.segment_starts();
    let mut progress = Progress::new(&format!("exporting {}", log.path().display()), log.len());
    while let Some(block) = log.next_block() {
        let block = match block {
            Ok(b) => b,
            Err(e) => {
                ledger.damaged(&e);
                continue;
            }
        };
        let start = starts.get(block.segment as usize).copied().unwrap_or(0);
        progress.update(start + block.offset + block_size);
        let (thread, sequence) = (block.header.thread, block.header.sequence);
        ledger.block(&block);
        let mut in_block = 0u64;
        for entry in block.entries(log.catalog()) {
            if let Entry::Event(event) = &entry
                && window.keeps(file, event)
            {
                visit(event)?;
                in_block += 1;
            }
            ledger.entry(thread, sequence, &entry);
        }
        *events_by_thread.entry(thread).or_default() += in_block;
    }
    progress.finish();
    if let Some(findings) = log.ring_findings() {
        ledger.ring_file(findings);
    }
    Ok(Walked { ledger, events_by_thread, left_out: window.left_out(file) })
}
