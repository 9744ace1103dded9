//! `export`: a log in another tool's format.
//!
//! - [`chrome`]: Chrome trace-event JSON, which Perfetto's UI and chrome://tracing open.
//! - [`sqlite`]: a database in the shape of MPS's mpseventsql.
//! - [`ctf`]: a CTF 1.8 trace that babeltrace2 reads.
//! - [`parquet`]: a Parquet dataset (a directory of tables) that DuckDB, DataFusion, Polars
//!   and Spark query.
//!
//! The viewers' exports (Chrome, CTF) read the logs through the merge (bounded memory,
//! threads and logs in time order) and write as they read. The table exports (SQLite,
//! Parquet) need no time order (a query sorts) but do need the block headers' facts for
//! their `logs` tables (losses, sequence gaps), which the merge does not hand on: they read
//! each log block by block through [`walk`], one block in memory at a time. What an export
//! cannot carry over (damaged blocks, bad records, unknown codes) it counts and reports in
//! one line on stderr; the export still completes and exits 0, as `print` does
//! (`event-dump check` tells the details).
//!
//! The table exports share one mapping of format letters to column types
//! ([`column_type`]), one naming of parameter columns ([`param_columns`]) and one content
//! identity of a log ([`identity`]), by which both refuse a log already exported.

mod chrome;
mod ctf;
mod parquet;
mod sqlite;

use crate::cli::{ExportArgs, Target};
use crate::log::{DumpError, Log, open_all, open_all_indexed};
use crate::merge::{self, Item};
use crate::progress::Progress;
use event_format::builtin;
use event_format::decode::{BlockSource, Entry, Event};
use event_format::letter::Letter;
use event_format::wire::Value;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Write};
use std::ops::ControlFlow;
use std::path::Path;
use std::process::ExitCode;

/// Reads `logs` through the merge into `write`, with progress on stderr (on a terminal, for
/// big logs), and says on stderr how many events it could not put in time order; the first
/// error `write` returns stops the reading and is returned.
fn merge_all(logs: &mut [Log], mut write: impl FnMut(Item<'_>) -> io::Result<()>) -> io::Result<()> {
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
        eprintln!("event-dump: {} events exported out of time order: {why}", merged.out_of_order);
    }
    Ok(())
}

pub(crate) fn export(args: &ExportArgs) -> Result<ExitCode, DumpError> {
    // The viewers' exports merge by the logs' block indexes; the table exports walk blocks.
    let mut logs = match args.to {
        Target::Chrome | Target::Ctf if !args.window_only => open_all_indexed(&args.logs, args.force)?,
        _ => open_all(&args.logs, args.force)?,
    };
    match args.to {
        Target::Chrome => chrome::export(&mut logs, &args.out),
        Target::Sqlite => sqlite::export(&mut logs, &args.out),
        Target::Ctf => ctf::export(&mut logs, &args.out),
        Target::Parquet => parquet::export(&mut logs, &args.out),
    }
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
/// in the database or dataset, its events, and what was skipped ("1 damaged block", "2 bad
/// records"...), when anything was.
struct Summary {
    path: String,
    serial: i64,
    events: u64,
    problems: Vec<String>,
}

/// Says what a table export took from each log: a line on stdout per log, and on stderr what
/// was skipped. The exit status of a run that succeeded.
fn report(summaries: &[Summary], out: &Path) -> ExitCode {
    let mut stdout = io::stdout().lock();
    for s in summaries {
        if !s.problems.is_empty() {
            eprintln!(
                "event-dump: {}: {} skipped, the rest exported; `event-dump check {}` lists them",
                s.path,
                s.problems.join(", "),
                s.path
            );
        }
        let _ = writeln!(stdout, "{}: {} events as log {} in {}", s.path, s.events, s.serial, out.display());
    }
    ExitCode::SUCCESS
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

/// A log's content identity: its size and a 64-bit FNV-1a digest of all its bytes,
/// `size:digest` with the digest in hex. The table exports refuse a log whose identity they
/// already hold.
fn identity(path: &Path) -> io::Result<String> {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut hash, mut size) = (OFFSET, 0u64);
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
    Ok(format!("{size}:{hash:016x}"))
}

/// What a table export counts while it reads a log: the counts of `event-dump stats`.
#[derive(Debug, Default)]
struct Counts {
    events: u64,
    blocks: u64,
    damaged: u64,
    bad: u64,
    unknown: u64,
    lost: u64,
    /// Gaps in the threads' block sequence numbers: blocks overwritten, dropped or damaged.
    missing: u64,
    truncated: u64,
    /// Per thread seen in a block header: (events, events lost).
    threads: BTreeMap<u64, (u64, u64)>,
}

impl Counts {
    /// "1 damaged block", "2 bad records"...: what was skipped, when anything was.
    fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let mut note = |n: u64, one: &str, many: &str| {
            if n > 0 {
                problems.push(format!("{n} {}", if n == 1 { one } else { many }));
            }
        };
        note(self.damaged, "damaged block", "damaged blocks");
        note(self.bad, "bad record", "bad records");
        note(self.unknown, "record of an unknown code", "records of unknown codes");
        problems
    }
}

/// Reads `log` block by block in the order it holds them and hands each event to `visit`,
/// counting as it goes; the first error `visit` returns stops the reading and is returned.
/// Memory: one block, and 8 bytes per block for the sequence gaps.
fn walk<E>(log: &mut Log, mut visit: impl FnMut(&Event<'_>) -> Result<(), E>) -> Result<Counts, E> {
    let mut counts = Counts::default();
    let block_size = u64::from(log.header().block_size);
    let mut progress = Progress::new(&format!("exporting {}", log.path().display()), log.len());
    // Thread -> its blocks' sequence numbers, for the gaps.
    let mut sequences: HashMap<u64, Vec<u64>> = HashMap::new();
    while let Some(block) = log.next_block() {
        let block = match block {
            Ok(b) => b,
            Err(_) => {
                counts.damaged += 1;
                continue;
            }
        };
        progress.update(block.offset + block_size);
        counts.blocks += 1;
        counts.lost += block.header.lost;
        let thread = counts.threads.entry(block.header.thread).or_default();
        thread.1 = thread.1.saturating_add(block.header.lost);
        sequences.entry(block.header.thread).or_default().push(block.header.sequence);
        let mut in_block = 0u64;
        for entry in block.entries(log.catalog()) {
            let event = match entry {
                Entry::Event(e) => e,
                Entry::Unknown { .. } => {
                    counts.unknown += 1;
                    continue;
                }
                Entry::Bad(_) => {
                    counts.bad += 1;
                    continue;
                }
            };
            visit(&event)?;
            counts.events += 1;
            in_block += 1;
            if event.desc.format.contains(&Letter::String) {
                for value in event.values() {
                    if let Value::Str(text) = value {
                        counts.truncated += u64::from(text.truncated);
                    }
                }
            }
            if event.desc.code == builtin::DROPPED {
                let mut v = event.values();
                if let (Some(Value::Word(t)), Some(Value::Word(n))) = (v.next(), v.next()) {
                    counts.lost += n;
                    let victim = counts.threads.entry(t).or_default();
                    victim.1 = victim.1.saturating_add(n);
                }
            }
        }
        counts.threads.entry(block.header.thread).or_default().0 += in_block;
    }
    progress.finish();
    for mut s in sequences.into_values() {
        s.sort_unstable();
        s.dedup();
        // Sequences run from 0 in each thread: those below the highest seen that are not here.
        counts.missing += s.last().map_or(0, |last| last.saturating_add(1).saturating_sub(s.len() as u64));
    }
    Ok(counts)
}

/// What an export could not carry over, counted as it reads.
#[derive(Debug, Default)]
struct Skipped {
    damaged_blocks: u64,
    bad_records: u64,
    unknown_records: u64,
}

impl Skipped {
    /// Counts `item` when it is not an event; `true` when it was one of those.
    fn count(&mut self, item: &Item<'_>) -> bool {
        match item {
            Item::Event { .. } => return false,
            Item::Unknown => self.unknown_records += 1,
            Item::Bad => self.bad_records += 1,
            Item::Damaged => self.damaged_blocks += 1,
        }
        true
    }

    /// The one line that says what was skipped, if anything was; `extra` adds the exporter's
    /// own notes.
    fn report(&self, format: &str, extra: &[String]) {
        let mut parts = Vec::new();
        let mut part = |n: u64, one: &str, many: &str| {
            if n > 0 {
                parts.push(format!("{n} {}", if n == 1 { one } else { many }));
            }
        };
        part(self.damaged_blocks, "damaged block", "damaged blocks");
        part(self.bad_records, "bad record", "bad records");
        part(self.unknown_records, "record of an unknown code", "records of unknown codes");
        let skipped = (!parts.is_empty()).then(|| format!("skipped {}", parts.join(", ")));
        let all: Vec<String> = skipped.into_iter().chain(extra.iter().cloned()).collect();
        if !all.is_empty() {
            eprintln!(
                "event-dump: export --to {format}: {}; the rest was exported (`event-dump check LOG` tells more)",
                all.join("; ")
            );
        }
    }
}
