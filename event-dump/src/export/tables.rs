//! What the table exports (SQLite, Parquet) share, and the other exports do not: one mapping of
//! format letters to column types ([`column_type`]), one naming of parameter columns
//! ([`param_columns`]), one content identity of a log ([`identity`]), the `tracing` fields as
//! JSON by name ([`fields_json`]), the walk of a log block by block with its ledger ([`walk`]),
//! and what a run says of each log ([`report`]). Built with either table export's feature.

#[cfg(feature = "sqlite")]
use super::Window;
use super::{Said, left_out_note};
use crate::log::Log;
use crate::progress::Progress;
use event_format::decode::{Block, BlockError, BlockSource, Catalog, Entry, Event};
use event_format::ledger::Ledger;
use event_format::letter::Letter;
use std::collections::BTreeMap;
#[cfg(feature = "sqlite")]
use std::io::Read;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Mutex, mpsc};

/// The type of a parameter's column in a table export: one mapping of format letters,
/// shared by the SQLite and the Parquet exports, each of which spells it in its own types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ColumnType {
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

/// What a table export (SQLite, Parquet) took from one log: its path as shown, its id in the
/// database or dataset (SQLite's serial number, Parquet's recording id), its events, what its
/// ledger says was skipped, and whether the output already held it (nothing added).
pub(super) struct Imported {
    pub(super) path: String,
    pub(super) log: String,
    pub(super) events: u64,
    /// The events the choice left out (not rows, not lost).
    pub(super) left_out: u64,
    pub(super) said: Said,
    pub(super) already: bool,
}

/// Says what a table export took from each log: a line on stdout per log, and on stderr what
/// was skipped. The exit status of a run that succeeded.
pub(super) fn report(imported: &[Imported], out: &Path) -> ExitCode {
    let mut stdout = io::stdout().lock();
    for s in imported {
        if s.already {
            let _ = writeln!(stdout, "{}: already in {} as log {}; nothing added", s.path, out.display(), s.log);
            continue;
        }
        if let Some(line) = s.said.table_line() {
            eprintln!("event-dump: {}: {line}, the rest exported; `event-dump check {}` lists them", s.path, s.path);
        }
        let left_out = left_out_note(s.left_out).map(|n| format!(" ({n})")).unwrap_or_default();
        let _ = writeln!(stdout, "{}: {} events as log {} in {}{left_out}", s.path, s.events, s.log, out.display());
    }
    ExitCode::SUCCESS
}

/// Whether an event type's table has a fields column (SQLite's `fields_json`, Parquet's
/// `fields`): the `tracing` bridge's events, whose text holds fields.
pub(super) fn has_fields(desc: &event_format::decode::Desc) -> bool {
    use event_format::builtin::{SPAN_ENTER, SPAN_OPEN, SPAN_RECORD, TRACE_EVENT};
    desc.is_builtin() && matches!(desc.code, TRACE_EVENT | SPAN_ENTER | SPAN_OPEN | SPAN_RECORD)
}

/// The fields of a `tracing` bridge's event as one JSON object by name ([`crate::json::fields`]),
/// appended to `out`; false (nothing appended) when its text holds none in `tracing`'s grammar.
pub(super) fn fields_json(event: &Event<'_>, out: &mut String) -> bool {
    match event_format::fields::of_event(event) {
        Some(fields) => {
            crate::json::fields(out, &fields);
            true
        }
        None => false,
    }
}

/// The column type of a parameter of `letter`.
pub(super) fn column_type(letter: Letter) -> ColumnType {
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
pub(super) fn param_columns(fixed: &[&str], params: &[String]) -> Vec<String> {
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
#[cfg(feature = "sqlite")]
pub(super) fn identity(files: &[&Path]) -> io::Result<String> {
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
/// each thread (those the export wrote, as rows), and the events the choice left out.
pub(super) struct Walked {
    pub(super) ledger: Ledger,
    pub(super) events_by_thread: BTreeMap<u64, u64>,
    /// Set by [`walk`] (the SQLite export's, which takes a choice).
    #[cfg(feature = "sqlite")]
    pub(super) left_out: u64,
}

impl Walked {
    /// The events written, as rows.
    #[cfg(feature = "sqlite")]
    pub(super) fn rows(&self) -> u64 {
        self.events_by_thread.values().sum()
    }
}

/// Reads `log` (log `file` of the export) block by block in the order it holds them and hands
/// each event `window` selects to `visit`, counting as it goes (the ledger counts every
/// event); the first error `visit` returns stops the reading and is returned. The blocks are
/// read and unpacked on a thread of their own while this one walks them. Memory: a few blocks
/// (at most 2 × [`READ_AHEAD`] + 4: read ahead, walked and not yet read into again, being read,
/// being walked), and the ledger's numbers of each thread's blocks (a range per gap).
#[cfg(feature = "sqlite")]
pub(super) fn walk<E>(
    log: &mut Log,
    file: usize,
    window: &mut Window,
    visit: impl FnMut(&Event<'_>) -> Result<(), E>,
) -> Result<Walked, E> {
    let mut walked = walk_chosen(log, |event| window.keeps(file, event), visit)?;
    walked.left_out = window.left_out(file);
    Ok(walked)
}

/// Blocks read ahead of the walk at most (beside the one being read and the one walked):
/// enough that the walk does not wait while the reading thread waits for a core (the
/// Parquet export's encoders keep both of a 2-core machine's busy; with 2 blocks ahead the
/// walk found none ready about 160 times in a 4 M-event log, with 8 about 15-40 times).
const READ_AHEAD: usize = 8;

/// [`walk`] with the choice of events `keeps` makes (every event: the Parquet export, whose
/// dataset holds whole logs); `left_out` is left 0 for the caller to set.
pub(super) fn walk_chosen<E>(
    log: &mut Log,
    mut keeps: impl FnMut(&Event<'_>) -> bool,
    mut visit: impl FnMut(&Event<'_>) -> Result<(), E>,
) -> Result<Walked, E> {
    let mut ledger = log.ledger();
    let mut events_by_thread = BTreeMap::new();
    let block_size = u64::from(log.header().block_size);
    let starts = log.segment_starts();
    let mut progress = Progress::new(&format!("exporting {}", log.path().display()), log.len());
    let mut walk_block = |block: Result<Block, BlockError>, catalog: &Catalog| -> Result<Option<Block>, E> {
        let block = match block {
            Ok(b) => b,
            Err(e) => {
                ledger.damaged(&e);
                return Ok(None);
            }
        };
        let start = starts.get(block.segment as usize).copied().unwrap_or(0);
        progress.update(start + block.offset + block_size);
        let (thread, sequence) = (block.header.thread, block.header.sequence);
        ledger.block(&block);
        let mut in_block = 0u64;
        for entry in block.entries(catalog) {
            if let Entry::Event(event) = &entry
                && keeps(event)
            {
                visit(event)?;
                in_block += 1;
            }
            ledger.entry(thread, sequence, &entry);
        }
        *events_by_thread.entry(thread).or_default() += in_block;
        Ok(Some(block))
    };
    let (source, catalog) = log.blocks_and_catalog();
    let source = Mutex::new(source);
    std::thread::scope(|scope| {
        // The blocks are read (and unpacked) on a thread of their own, READ_AHEAD blocks ahead
        // of this one, which walks them; each walked block goes back to be read into again.
        let (blocks_tx, blocks_rx) = mpsc::sync_channel::<Result<Block, BlockError>>(READ_AHEAD);
        let (spent_tx, spent_rx) = mpsc::channel::<Block>();
        let source = &source;
        let reader = std::thread::Builder::new().name("event-dump-read".into()).spawn_scoped(scope, move || {
            let Ok(mut source) = source.lock() else { return };
            while let Some(block) = source.next_block() {
                // This thread stops when the walk stops (an error), its channel closed.
                if blocks_tx.send(block).is_err() {
                    return;
                }
                for spent in spent_rx.try_iter() {
                    source.recycle(spent);
                }
            }
        });
        if reader.is_err() {
            // No thread (a thread limit): this one reads too.
            let Ok(mut source) = source.lock() else { return Ok(()) };
            while let Some(block) = source.next_block() {
                if let Some(spent) = walk_block(block, catalog)? {
                    source.recycle(spent);
                }
            }
            return Ok(());
        }
        for block in blocks_rx {
            if let Some(spent) = walk_block(block, catalog)? {
                // The reader gone, the block goes with the channel.
                let _ = spent_tx.send(spent);
            }
        }
        Ok(())
    })?;
    progress.finish();
    if let Some(findings) = log.ring_findings() {
        ledger.ring_file(findings);
    }
    Ok(Walked {
        ledger,
        events_by_thread,
        #[cfg(feature = "sqlite")]
        left_out: 0,
    })
}

/// Feeds the events of the log of `files` (a stream, a ring file, a recording's segments:
/// one log), merged in time order, to `model`; hands each span it ends to `emit` (the first
/// error stops the reading). `keep`: whether the export's choice selects an event (a span is
/// chosen by its begin). The log is opened again, indexed, for the merge: the table exports
/// walk blocks in file order for their rows, and spans pair across threads in time order.
pub(super) fn spans_pass(
    files: &[std::path::PathBuf],
    model: &mut crate::spans::SpanModel,
    mut keep: impl FnMut(&Event<'_>) -> bool,
    mut emit: impl FnMut(crate::spans::Span) -> io::Result<()>,
) -> io::Result<()> {
    // The log opened once already under the command's rules: a newer median was allowed.
    let mut logs = crate::log::open_all_indexed(files, true).map_err(|e| io::Error::other(e.0))?;
    let mut failed = None;
    super::merge_all(&mut logs, "paired", |super::Item { event, .. }| {
        let selected = keep(&event);
        model.event(&event, selected, &mut |span| {
            if failed.is_none()
                && let Err(e) = emit(span)
            {
                failed = Some(e);
            }
        });
        failed.take().map_or(Ok(()), Err)
    })?;
    Ok(())
}

/// Feeds `model` the segments of `log`'s recording before it that are beside it (in its
/// directory), in order, as [`spans_pass`] does, without handing a span on: the spans open
/// when `log` starts, so that a segment exported alone pairs them as the whole recording
/// does. Nothing for a log that is not a segment.
#[cfg(feature = "parquet")]
pub(super) fn replay_earlier(log: &Log, model: &mut crate::spans::SpanModel) -> io::Result<()> {
    let Some(segment) = log.header().properties.segment else { return Ok(()) };
    let recording = log.recording_id();
    let dir = log.path().parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let found = event_format::log::segments_in(dir, event_format::log::OpenOptions::default())?;
    for earlier in found.iter().filter(|f| f.recording == recording && f.segment.index < segment.index && !f.open) {
        // Every event chosen, as when the segments are read in one run; the spans that end
        // before `log` are that segment's, not `log`'s.
        spans_pass(std::slice::from_ref(&earlier.path), model, |_| true, |_| Ok(()))?;
    }
    Ok(())
}

/// One non-empty bucket of a `Histogram` record: a row of the table exports' histogram table
/// (SQLite's `histogram_bucket`, Parquet's `histograms`; docs/OUTPUT.md).
pub(super) struct BucketRow<'a> {
    /// The thread whose values the record counts (its `thread` argument).
    pub(super) thread: u64,
    /// When its period began, in the log's ticks (the period ends at the record's time).
    pub(super) since: u64,
    /// The histogram, as the log's header declares it.
    pub(super) declared: &'a event_format::histogram::DeclaredHistogram,
    /// The bucket's index, its smallest and largest value, and its count.
    pub(super) bucket: usize,
    pub(super) low: u64,
    pub(super) high: u64,
    pub(super) count: u64,
}

/// The bucket rows of `event` when it is a `Histogram` record that reads, by the histograms
/// `declared` (its log's); `None` for any other event, and for a record that does not read
/// (which `event-dump hist` reports; its row in the `Histogram` table is there as it is).
pub(super) fn histogram_rows<'a>(
    declared: &'a event_format::histogram::Declared,
    event: &Event<'_>,
) -> Option<Vec<BucketRow<'a>>> {
    let Some(event_format::builtins::BuiltinEvent::Histogram { histogram, .. }) =
        event_format::builtins::BuiltinEvent::of(event)
    else {
        return None;
    };
    let d = declared.get(histogram as usize)?;
    let (facts, distribution) = event_format::histogram::Distribution::of_record(event, d.histogram.buckets).ok()?;
    let rows = distribution
        .nonempty()
        .map(|(bucket, count)| {
            let (low, to) = event_format::histogram::bounds(bucket, distribution.buckets());
            let high = u64::try_from(to - 1).unwrap_or(u64::MAX);
            BucketRow { thread: facts.thread, since: facts.since, declared: d, bucket, low, high, count }
        })
        .collect();
    Some(rows)
}
