//! `export --to parquet`: logs into a Parquet dataset, a directory that DuckDB, DataFusion,
//! Polars, Spark and Trino query, on local disk or in object storage.
//!
//! The shape is the SQLite export's (MPS's mpseventsql): one table per event type with one
//! typed column per parameter, and tables that describe the logs. Every file is one log's and
//! is named by the log's recording id ([`Log::recording_id`]), so that datasets exported on
//! many hosts are gathered by copying them into one directory (`cp -r`, `aws s3 sync`):
//! another log's export never writes a file of that name, and the same log exported twice,
//! anywhere, writes the same files with the same rows. docs/OUTPUT.md ("The Parquet
//! export") is the reference of the layout and the schema; this is a summary.
//!
//! # Layout (layout 2)
//!
//! ```text
//! OUT/_event-dump                                   marks the directory as a dataset of this exporter, with its layout version
//! OUT/logs/date=2026-11-26/<id>.parquet             the log's one row (date: the day its recording started, UTC)
//! OUT/threads/date=2026-11-26/<id>.parquet          one row per thread of the log (same date)
//! OUT/<Kind>.<Event>/date=2026-11-26/<id>.parquet   the log's events of one type on one day (UTC, their `time`)
//! ```
//!
//! `<id>` is the recording id in 32 lowercase hex digits. `date=` is a hive-style partition:
//! engines read it as a column `date` and skip the directories a `WHERE date ...` excludes.
//! A table's directory name is its event's name qualified by its kind, `<Kind>.<Event>`, and
//! by its set, `<set>.<Kind>.<Event>`, when the log holds more than one event set (as `print`
//! qualifies it). An event type new to the dataset that the log did not record gets one file
//! of no rows (in its start date's partition), so that a query of it finds an empty table.
//!
//! # Schema
//!
//! Every event table: `log` STRING (the recording id), `thread` INT64, `ticks` INT64, `ns`
//! INT64 (nanoseconds since the log's start, exactly as `print` shows the seconds), `time`
//! TIMESTAMP(MICROS, UTC), then one column per parameter typed by its letter through the
//! exports' one mapping ([`super::tables::column_type`]): `P A W` UINT64, `U` UINT32, `I` INT64, `D`
//! DOUBLE, `B` BOOLEAN, `S` STRING; the `tracing` bridge's `TraceEvent`, `SpanEnter`, `SpanOpen` and `SpanRecord` have
//! one more, `fields` (STRING, JSON; null when the text holds none). Thread ids and ticks are
//! unsigned on the wire and signed here: a value above 2^63 − 1 (no clock or thread id
//! reaches it in practice) would be stored as its bits, a negative number, and the export
//! says so on stderr. `logs` and `threads`: docs/OUTPUT.md.
//!
//! # Appending, idempotence, atomicity
//!
//! A log whose recording id the dataset holds (its `logs` file is there) adds nothing, and
//! the run says so; one whose id the dataset holds from a file of another size (another file
//! of the same recording: a stream exported while it was still written) is refused, as is a
//! log whose event type disagrees with the table already there. Every check is made before
//! anything is written; a refused run leaves the dataset byte for byte as it was.
//!
//! A run writes every file under a temporary name (`.<id>.parquet.PID.tmp`: hidden, and not
//! `*.parquet`, so engines do not read it) and syncs it (as it is written, every MiB, and a
//! log's files all at once, once the last is written), then renames them into place, each log's `logs` file last, after the
//! directories of the others are synced; the marker and every directory the run made an
//! entry in are synced too ([`commit`]), so that an export that succeeded survives a power
//! cut. If the run is killed during the renames, some event files of a log are in place
//! without its `logs` file; exporting that log again writes them again (the same names, the
//! same bytes) and completes it. An error before the renames removes what the run wrote, and
//! a directory it created. A lock file (`_event-dump.lock`, created exclusively) keeps two
//! exports out of one dataset.
//!
//! # Memory and threads
//!
//! Each log is read block by block ([`super::tables::walk`], its blocks read and unpacked on a thread
//! of their own, a few ahead) and each row goes into its table's
//! column buffers (an event's parameters as their bytes), handed as a row group to the
//! encoder ([`encode`]) when it is full: its workers, one per core (at most 4), decode the
//! parameters into their columns and encode row groups while the log is read on, and the
//! files are the same byte for byte with any number of them. Memory is the buffers (at most
//! 64 MiB beyond one row group per table), at most one row group per worker and four waiting
//! in the encoder, one emptied set of buffers per table, each worker's parameter columns of
//! one row group, and the thread and block counts, whatever the size of the log. Each log's
//! files are closed before the next log is read.
//!
//! # Modules
//!
//! This module is the run: checking the logs against the dataset (the plan), then writing
//! each log's files and committing them. Imports run one way, from here down:
//! [`commit`] (the lock, the renames and syncs) uses [`layout`] (the dataset's names and
//! what it holds); [`rows`] (the tables' columns and rows) hands row groups to [`encode`];
//! an event's times are its log's [`Timebase`]'s; every one reports through [`errors`].

mod commit;
mod encode;
mod errors;
mod layout;
mod rows;
mod spans_table;

use super::Said;
use super::tables::{Imported, walk_chosen};
use crate::log::{DumpError, Log};
use commit::{Dirs, Lock, Rename, sync_each};
use encode::{Encoder, Fill};
use errors::{Result, io_error, parquet_error};
use event_format::builtins::BuiltinEvent;
use event_format::decode::Desc;
use event_format::wire::{Header, Timebase};
use layout::{
    DAY_MICROS, KEY_EVENT, KEY_LOG, day_of, event_meaning, existing_meaning, id_of, logged, one_per_segment, partition,
    read_dataset, table_name,
};
use parquet::file::metadata::KeyValue;
use rows::{
    Cell, Column, ROW_GROUP_ROWS, Shape, TableFile, bits32, count, event_columns, fill_params, histograms_columns,
    logs_columns, push_event, threads_columns,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The most bytes the column buffers of all tables hold before the largest is written out.
const BUFFER_BYTES: usize = 64 << 20;

/// What to do about a log that disagrees with the dataset.
const ELSEWHERE: &str = "; export this log into another dataset (-o another/)";

/// Exports `logs` into the dataset `out` (created when missing), all or nothing.
pub(crate) fn export(logs: Vec<Log>, out: &Path) -> Result<ExitCode> {
    if out.exists() && !out.is_dir() {
        return Err(DumpError::new(format!(
            "{}: not a directory; give the dataset directory to write, e.g. -o fleet/",
            out.display()
        )));
    }
    let created = !out.exists();
    if created {
        fs::create_dir_all(out).map_err(|e| io_error(out, &e))?;
    }
    let mut logs = one_per_segment(logs)?;
    let logs = &mut logs[..];
    let result = Lock::take(out).and_then(|lock| {
        let result = export_into(logs, out, created);
        drop(lock);
        result
    });
    let empty = || fs::read_dir(out).is_ok_and(|mut d| d.next().is_none());
    if created && (result.is_err() || empty()) {
        // Nothing of the run is left: the directory held only what the run wrote.
        let _ = fs::remove_dir_all(out);
    }
    let imported = result?;
    Ok(super::tables::report(&imported, out))
}

/// A refusal: `what` is wrong, then what to do, if anything.
fn refuse(what: String, fix: &str) -> DumpError {
    DumpError::new(format!("{what}; nothing was written{fix}"))
}

/// Where the rows of an event type went last: its table, the file of the day and that day's
/// range of `time` (microseconds, `from` included, `until` not).
#[derive(Clone)]
struct Last {
    name: String,
    from: i64,
    until: i64,
    file: usize,
}

/// The files of one log being written: its open table files, keyed by table and day, and
/// the encoder that writes them.
struct LogFiles<'a> {
    out: &'a Path,
    /// `<id>.parquet`.
    name: String,
    tables: Vec<TableFile>,
    by_key: HashMap<(String, i64), usize>,
    encoder: Encoder,
    /// Directories this run created (removed if it fails), shared by the run's logs.
    created_dirs: &'a mut Vec<PathBuf>,
    /// What the buffers of all tables hold, about.
    buffered: usize,
}

/// The span model carried from one segment of a recording to the next one of the run, so
/// that a span open across a rotation pairs without reading the earlier segments again.
pub(super) struct Carried {
    recording: event_format::wire::RecordingId,
    index: u64,
    model: crate::spans::SpanModel,
}

impl LogFiles<'_> {
    /// The index of the file of table `name` on day `day`, created (with its directories)
    /// when new.
    fn table(&mut self, name: &str, day: i64, desc: &Desc) -> Result<usize> {
        if let Some(&i) = self.by_key.get(&(name.to_owned(), day)) {
            return Ok(i);
        }
        let metadata = vec![KeyValue::new(KEY_EVENT.to_owned(), event_meaning(desc))];
        let columns = event_columns(desc);
        let params = columns.iter().filter(|c| matches!(c.shape, Shape::Param(_))).count();
        self.open(name, day, columns, metadata, Some(fill_params(desc.format.clone(), params)))
    }

    fn open(
        &mut self,
        name: &str,
        day: i64,
        columns: Vec<Column>,
        metadata: Vec<KeyValue>,
        fill: Option<Fill>,
    ) -> Result<usize> {
        let table_dir = self.out.join(name);
        let dir = table_dir.join(partition(day));
        for d in [&table_dir, &dir] {
            if !d.exists() {
                fs::create_dir(d).map_err(|e| io_error(d, &e))?;
                self.created_dirs.push(d.clone());
            }
        }
        let file = TableFile::create(&dir, &self.name, columns, metadata, fill, &mut self.encoder)?;
        self.tables.push(file);
        self.by_key.insert((name.to_owned(), day), self.tables.len() - 1);
        Ok(self.tables.len() - 1)
    }

    /// The index of the `spans` file of day `day`, created when new.
    fn spans_table(&mut self, day: i64) -> Result<usize> {
        if let Some(&i) = self.by_key.get(&(spans_table::SPANS.to_owned(), day)) {
            return Ok(i);
        }
        let table_dir = self.out.join(spans_table::SPANS);
        let dir = table_dir.join(partition(day));
        for d in [&table_dir, &dir] {
            if !d.exists() {
                fs::create_dir(d).map_err(|e| io_error(d, &e))?;
                self.created_dirs.push(d.clone());
            }
        }
        let file = TableFile::create_nested(
            &dir,
            &self.name,
            spans_table::fields(),
            spans_table::buffers(),
            &spans_table::UNIQUE,
            &mut self.encoder,
        )?;
        self.tables.push(file);
        self.by_key.insert((spans_table::SPANS.to_owned(), day), self.tables.len() - 1);
        Ok(self.tables.len() - 1)
    }

    /// Hands row groups to the encoder while the table `i` is full or all buffers are over
    /// budget.
    fn relieve(&mut self, i: usize) {
        if self.tables[i].rows >= ROW_GROUP_ROWS {
            self.buffered -= self.tables[i].bytes;
            self.tables[i].flush(&mut self.encoder);
        }
        if self.buffered > BUFFER_BYTES
            && let Some(largest) = self.tables.iter_mut().max_by_key(|t| t.bytes)
        {
            self.buffered -= largest.bytes;
            largest.flush(&mut self.encoder);
        }
    }

    /// Finishes every file (the rest of its rows, its footer) and syncs it (all at once,
    /// [`sync_all`]); on an error removes them all.
    fn finish(mut self, files: &mut Vec<Rename>) -> Result<()> {
        for table in &mut self.tables {
            table.flush(&mut self.encoder);
        }
        let written = self.encoder.finish();
        let synced = written
            .map_err(|(i, e)| parquet_error(self.tables.get(i).map_or(self.out, |t| t.temp.as_path()), &e))
            .and_then(|written| sync_all(&self.tables, written));
        match synced {
            Ok(()) => {
                files.extend(self.tables.into_iter().map(|t| (t.temp, t.path)));
                Ok(())
            }
            Err(e) => {
                for t in &self.tables {
                    let _ = fs::remove_file(&t.temp);
                }
                Err(e)
            }
        }
    }

    /// Removes every file it opened.
    fn abandon(self) {
        // The encoder's workers end with its channel; the files go by name.
        drop(self.encoder);
        for t in self.tables {
            let _ = fs::remove_file(&t.temp);
        }
    }
}

/// Syncs `files` (the files of `tables`, in order), [`sync_each`].
fn sync_all(tables: &[TableFile], files: Vec<File>) -> Result<()> {
    sync_each(&files, File::sync_all, |i| tables.get(i).map_or_else(PathBuf::new, |t| t.temp.clone()))
}

/// What to do with one log of the run, once checked.
enum Plan {
    /// Write it, under its recording id (hex).
    Export(String),
    /// The dataset (or an earlier log of the run) holds it: nothing to add.
    Already(String),
}

/// Exports `logs` into `out`; `created`: the run created `out`.
fn export_into(logs: &mut [Log], out: &Path, created: bool) -> Result<Vec<Imported>> {
    let dataset = read_dataset(out)?;
    let plans = plan(logs, out, &dataset)?;
    let mut created_dirs = Vec::new();
    let mut files = Vec::new();
    let mut logs_files = Vec::new();
    let mut imported = Vec::new();
    let mut result = Ok(());
    let mut carried = None;
    for (log, plan) in logs.iter_mut().zip(&plans) {
        match plan {
            Plan::Already(id) => imported.push(Imported {
                path: log.path().display().to_string(),
                log: id.clone(),
                events: 0,
                left_out: 0,
                said: Said::default(),
                already: true,
            }),
            Plan::Export(id) => {
                match write_log(log, id, out, &mut created_dirs, (&mut files, &mut logs_files), &mut carried) {
                    Ok(i) => imported.push(i),
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
        }
    }
    let new_dirs = Dirs { out, created, within: &created_dirs };
    let mut renaming = false;
    if result.is_ok() && !(files.is_empty() && logs_files.is_empty()) {
        result = commit::commit(&new_dirs, &files, &logs_files, &mut renaming);
    }
    files.extend(logs_files);
    if let Err(e) = result {
        if renaming {
            // Files are in place, as the error says: the temporary ones left go, not the
            // directories that hold the others.
            for (temp, _) in &files {
                let _ = fs::remove_file(temp);
            }
            return Err(e);
        }
        for (temp, _) in &files {
            let _ = fs::remove_file(temp);
        }
        for dir in created_dirs.iter().rev() {
            let _ = fs::remove_dir_all(dir);
        }
        return Err(e);
    }
    Ok(imported)
}

/// Checks every log against the dataset and each other before anything is written: a log
/// the dataset holds adds nothing, one whose id it holds from a file of another size is
/// refused; its tables' names are safe and its event types agree with the tables already
/// there.
fn plan(logs: &[Log], out: &Path, dataset: &HashMap<String, PathBuf>) -> Result<Vec<Plan>> {
    let mut plans = Vec::new();
    // Id -> (size, path) of the logs of this run.
    let mut seen: HashMap<String, (u64, &Path)> = HashMap::new();
    // Table name -> (meaning, where it comes from).
    let mut meanings: HashMap<String, (String, String)> = HashMap::new();
    let another_file = |shown: &dyn std::fmt::Display, id: &str, size: u64, there: &str, other: u64| {
        refuse(
            format!(
                "{shown}: recording {id} is {there} from a file of {other} bytes and this file has {size}: another file of the same recording (a stream exported while it was still written?)"
            ),
            ELSEWHERE,
        )
    };
    for log in logs {
        let shown = log.path().display();
        let id = id_of(log);
        let size = log.len();
        if let Some(path) = dataset.get(&id) {
            match logged(path)? {
                Some((_, other)) if other == size => {
                    plans.push(Plan::Already(id));
                    continue;
                }
                Some((_, other)) => {
                    return Err(another_file(&shown, &id, size, &format!("in {}", out.display()), other));
                }
                None => {
                    return Err(DumpError::new(format!(
                        "{}: not a logs file of this exporter (no {KEY_LOG}); remove it or give a new -o",
                        path.display()
                    )));
                }
            }
        }
        if let Some(&(other, first)) = seen.get(&id) {
            if other != size {
                return Err(another_file(&shown, &id, size, &format!("given as {} too", first.display()), other));
            }
            plans.push(Plan::Already(id));
            continue;
        }
        seen.insert(id.clone(), (size, log.path()));
        for desc in log.catalog().iter() {
            let Some(name) = table_name(desc) else {
                return Err(refuse(
                    format!("{shown}: event {:?} of kind {:?} has a name no table can have", desc.name, desc.kind_name),
                    "",
                ));
            };
            let meaning = event_meaning(desc);
            let known = match meanings.get(&name) {
                Some(known) => Some(known.clone()),
                None => existing_meaning(out, &name)?.map(|m| (m, format!("in {}", out.display()))),
            };
            match known {
                Some((m, whence)) if m == meaning => {
                    meanings.entry(name).or_insert((m, whence));
                }
                Some((m, whence)) => {
                    return Err(refuse(
                        format!("{shown}: event {} has {meaning} in this log but {m} {whence}", desc.name),
                        ELSEWHERE,
                    ));
                }
                None => {
                    meanings.insert(name, (meaning, format!("in {shown}")));
                }
            }
        }
        plans.push(Plan::Export(id));
    }
    Ok(plans)
}

/// Writes one log's events into temporary files, then its `threads` and `logs` files; adds
/// them to `files` and `logs_files` (renamed last). The events are written as they are read
/// ([`write_events`]); what they leave is the plan of the log's own rows ([`LogRows::plan`]),
/// written after its spans ([`LogRows::write`]). On an error every file of the log goes.
fn write_log(
    log: &mut Log,
    id: &str,
    out: &Path,
    created_dirs: &mut Vec<PathBuf>,
    (files, logs_files): (&mut Vec<Rename>, &mut Vec<Rename>),
    carried: &mut Option<Carried>,
) -> Result<Imported> {
    let header = log.header().clone();
    let mut files_of = LogFiles {
        out,
        name: format!("{id}.parquet"),
        tables: Vec::new(),
        by_key: HashMap::new(),
        encoder: Encoder::start(id.as_bytes()),
        created_dirs,
        buffered: 0,
    };
    let mut read = match write_events(log, id, &header, &mut files_of) {
        Ok(read) => read,
        Err(e) => {
            files_of.abandon();
            return Err(e);
        }
    };
    let shown = log.path().display().to_string();
    let rows = LogRows::plan(log, id, &header, &mut read);
    if rows.high >> 63 != 0 {
        eprintln!(
            "event-dump: {shown}: a thread id, tick count or header number is above 2^63 - 1; the signed column holds its bits (a negative number), as docs/OUTPUT.md says"
        );
    }
    if let Err(e) = write_spans(log, &mut files_of, carried).and_then(|()| rows.write(log, &header, &mut files_of)) {
        files_of.abandon();
        return Err(e);
    }
    let mut mine = Vec::new();
    files_of.finish(&mut mine)?;
    // The `logs` file was opened last: it is renamed after every other file of the run.
    if let Some(logs_file) = mine.pop() {
        logs_files.push(logs_file);
    }
    files.extend(mine);
    let l = &read.walked.ledger;
    Ok(Imported {
        path: shown,
        log: id.to_owned(),
        events: l.events(),
        left_out: 0,
        said: Said::of([l]),
        already: false,
    })
}

/// What writing a log's events leaves for its own rows.
struct EventsWritten {
    /// The walk's ledger and counts.
    walked: super::tables::Walked,
    /// Each thread's name, from its `ThreadName` events.
    names: BTreeMap<u64, String>,
    /// Every number written to a signed column as a count, or-ed: bit 63 set when one of
    /// them does not fit.
    high: u64,
    /// The `histograms` table's rows: few (one per bucket of each record), kept until the
    /// end; `None` when the log declares no histogram (and has no such table).
    histogram_rows: Option<Vec<Vec<Cell>>>,
}

/// Writes every event of `log` as a row of its table's file of its day, and learns what the
/// log's own rows need.
fn write_events(log: &mut Log, id: &str, header: &Header, files_of: &mut LogFiles<'_>) -> Result<EventsWritten> {
    let times = Timebase::new(&header.clock);
    // Wire code -> the table and day of the last row of that type.
    let mut last: Vec<Option<Last>> = vec![None; 1 << 16];
    let mut names: BTreeMap<u64, String> = BTreeMap::new();
    let mut high =
        header.producer.pid | header.clock.ticks_per_second | header.clock.start_ticks | header.clock.ref_ticks;
    let declared = event_format::histogram::Declared::new(header);
    let mut histogram_rows: Vec<Vec<Cell>> = Vec::new();
    let walked = walk_chosen(
        log,
        |_| true,
        |event| {
            for row in super::tables::histogram_rows(&declared, event).unwrap_or_default() {
                let h = &row.declared.histogram;
                histogram_rows.push(vec![
                    Cell::Str(id.to_owned()),
                    count(row.thread),
                    count(event.time),
                    Cell::I64(times.nanos_i64(event.time)),
                    Cell::I64(times.nanos_i64(row.since)),
                    Cell::Str(h.name.clone()),
                    Cell::Str(row.declared.set.clone()),
                    Cell::Str(row.declared.of.clone()),
                    Cell::Str(row.declared.unit.clone()),
                    Cell::Str(h.buckets.word()),
                    count(row.bucket as u64),
                    count(row.low),
                    count(row.high),
                    count(row.count),
                ]);
            }
            let ns = times.nanos_i64(event.time);
            let wall = times.wall_micros_at(event.time, ns);
            let slot = &mut last[usize::from(event.desc.wire)];
            let i = match slot {
                // The day of the last row of its type: no division.
                Some(l) if l.from <= wall && wall < l.until => l.file,
                _ => {
                    let day = day_of(wall);
                    // plan() checked every name.
                    let name = match slot.take() {
                        Some(l) => l.name,
                        None => table_name(event.desc).unwrap_or_default(),
                    };
                    let file = files_of.table(&name, day, event.desc)?;
                    // Saturated at the ends of the i64 range: a time there takes this way
                    // again, and finds the same file.
                    let (from, until) = (day.saturating_mul(DAY_MICROS), (day + 1).saturating_mul(DAY_MICROS));
                    *slot = Some(Last { name, from, until, file });
                    file
                }
            };
            if let Some(BuiltinEvent::ThreadName { thread, name }) = BuiltinEvent::of(event) {
                names.insert(thread, name.to_string_lossy().into_owned());
            }
            if files_of.tables[i].other_order(event.order) {
                files_of.buffered -= files_of.tables[i].bytes;
                files_of.tables[i].flush(&mut files_of.encoder);
            }
            let table = &mut files_of.tables[i];
            let before = table.bytes;
            high |= push_event(table, ns, wall, event);
            files_of.buffered += files_of.tables[i].bytes - before;
            files_of.relieve(i);
            Ok(())
        },
    )?;
    let histogram_rows = (!declared.is_empty()).then_some(histogram_rows);
    Ok(EventsWritten { walked, names, high, histogram_rows })
}

/// The rows of a log's own tables, planned once its events are written: its `logs` row,
/// a `threads` row per thread, its histograms' buckets.
struct LogRows {
    /// The log's recording id (hex).
    id: String,
    log_row: Vec<Cell>,
    thread_rows: Vec<Vec<Cell>>,
    histogram_rows: Option<Vec<Vec<Cell>>>,
    /// [`EventsWritten::high`], with the thread ids.
    high: u64,
}

impl LogRows {
    fn plan(log: &Log, id: &str, header: &Header, read: &mut EventsWritten) -> LogRows {
        let l = &read.walked.ledger;
        let id_source = if header.properties.recording.is_some() { "header" } else { "derived" };
        let log_row = {
            use Cell::*;
            vec![
                Str(id.to_owned()),
                Str(id_source.to_owned()),
                count(log.len()),
                if header.producer.host.is_empty() { Null } else { Str(header.producer.host.clone()) },
                Str(header.producer.program.clone()),
                count(header.producer.pid),
                Str(header.producer.arch.clone()),
                Str(header.producer.os.clone()),
                I32(i32::from(header.producer.pointer_width)),
                I64(header.producer.start_wall_ns.div_euclid(1000)),
                I64(header.producer.start_wall_ns),
                Str(header.format.to_string()),
                Str(super::set_versions(header)),
                Str(header.clock.source.name().to_owned()),
                count(header.clock.ticks_per_second),
                count(header.clock.start_ticks),
                count(header.clock.ref_ticks),
                I64(header.clock.ref_wall_ns),
                I32(bits32(header.block_size)),
                count(l.events()),
                count(l.blocks()),
                count(l.damaged_blocks().len() as u64),
                count(l.bad_records().len() as u64),
                count(l.unknown_records()),
                count(l.lost()),
                count(l.missing_blocks()),
                count(l.truncated_strings()),
                header.properties.label("service").map_or(Null, |s| Str(s.to_owned())),
                Str(crate::identity::labels_json(header)),
                Str(log.recording_id().to_hex()),
                header.properties.segment.map_or(Null, |s| count(s.index)),
            ]
        };
        // Every thread with a block, and every thread a `Dropped` event names.
        let threads: BTreeSet<u64> = l.threads().map(|(t, _)| t).chain(l.lost_by_thread().keys().copied()).collect();
        let mut high = read.high;
        let mut thread_rows = Vec::new();
        for thread in threads {
            high |= thread;
            let name = read.names.get(&thread).map_or(Cell::Null, |n| Cell::Str(n.clone()));
            let events = read.walked.events_by_thread.get(&thread).copied().unwrap_or(0);
            let lost = l.lost_by_thread().get(&thread).copied().unwrap_or(0);
            thread_rows.push(vec![Cell::Str(id.to_owned()), count(thread), name, count(events), count(lost)]);
        }
        LogRows { id: id.to_owned(), log_row, thread_rows, histogram_rows: read.histogram_rows.take(), high }
    }

    /// Writes the rows, each table of the log's first day, after an empty file for every
    /// event type (and the `spans` table) new to the dataset; the `logs` file last.
    fn write(self, log: &Log, header: &Header, files_of: &mut LogFiles<'_>) -> Result<()> {
        let out = files_of.out;
        let start_day = day_of(header.producer.start_wall_ns.div_euclid(1000));
        // Every event type of the log new to the dataset has a table: an empty file.
        for desc in log.catalog().iter() {
            let Some(name) = table_name(desc) else { continue };
            let written = files_of.by_key.keys().any(|(n, _)| *n == name);
            if !written && !out.join(&name).exists() {
                files_of.table(&name, start_day, desc)?;
            }
        }
        // So has the `spans` table: a log without spans makes it empty, where it is new.
        let spans_written = files_of.by_key.keys().any(|(n, _)| n == spans_table::SPANS);
        if !spans_written && !out.join(spans_table::SPANS).exists() {
            files_of.spans_table(start_day)?;
        }
        if let Some(rows) = self.histogram_rows {
            let histograms = files_of.open("histograms", start_day, histograms_columns(), Vec::new(), None)?;
            for row in rows {
                files_of.tables[histograms].push_cells(row);
            }
        }
        let threads = files_of.open("threads", start_day, threads_columns(), Vec::new(), None)?;
        for row in self.thread_rows {
            files_of.tables[threads].push_cells(row);
        }
        let meta = vec![KeyValue::new(KEY_LOG.to_owned(), format!("{} {}", self.id, log.len()))];
        let logs_table = files_of.open("logs", start_day, logs_columns(), meta, None)?;
        files_of.tables[logs_table].push_cells(self.log_row);
        Ok(())
    }
}

/// The `spans` rows of `log` (a whole stream, or one segment: the spans that end in it,
/// paired with what the recording's earlier segments began, carried from the run's previous
/// segment or read again from beside it, [`super::tables::replay_earlier`]), into its files.
fn write_spans(log: &Log, files_of: &mut LogFiles<'_>, carried: &mut Option<Carried>) -> Result<()> {
    let shown = log.path().display().to_string();
    let failed = |e: std::io::Error| DumpError::new(format!("{shown}: cannot read its spans: {e}"));
    let recording = log.recording_id();
    let index = log.header().properties.segment.map(|s| s.index);
    let mut model = match (carried.take(), index) {
        (Some(c), Some(i)) if c.recording == recording && c.index.checked_add(1) == Some(i) => c.model,
        _ => {
            let mut model = crate::spans::SpanModel::of(log);
            super::tables::replay_earlier(log, &mut model).map_err(failed)?;
            model
        }
    };
    let resource = crate::spans::resource(log.header(), &recording.to_hex(), None);
    let attributes = spans_table::text_attributes(&resource.attributes);
    let row = spans_table::Resource { service: &resource.service, attributes: &attributes };
    let mut error = None;
    super::tables::spans_pass(
        &[log.path().to_owned()],
        &mut model,
        |_| true,
        |span| {
            let day = day_of(i64::try_from(span.start_ns / 1000).unwrap_or(i64::MAX));
            let i = match files_of.spans_table(day) {
                Ok(i) => i,
                Err(e) => {
                    let text = e.0.clone();
                    error = Some(e);
                    return Err(std::io::Error::other(text));
                }
            };
            let table = &mut files_of.tables[i];
            let before = table.bytes;
            let bytes = spans_table::push_span(table.row(0), &row, &span);
            table.bytes += bytes;
            files_of.buffered += table.bytes - before;
            files_of.relieve(i);
            Ok(())
        },
    )
    .map_err(|e| error.take().unwrap_or_else(|| failed(e)))?;
    *carried = index.map(|index| Carried { recording, index, model });
    Ok(())
}
