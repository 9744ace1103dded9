//! `export --to parquet`: logs into a Parquet dataset, a directory that DuckDB, DataFusion,
//! Polars, Spark and Trino query, on local disk or in object storage.
//!
//! The shape is the SQLite export's (MPS's mpseventsql): one table per event type with one
//! typed column per parameter, and tables that describe the logs. A table is a directory of
//! Parquet files, one file per export run, so that appending never rewrites a file: engines
//! read a table as `OUT/<table>/*.parquet`.
//!
//! # Layout
//!
//! ```text
//! OUT/_event-dump                 marks the directory as a dataset of this exporter, with its layout version
//! OUT/logs/part-000001.parquet    one row per log of the run whose first log is log 1
//! OUT/threads/part-000001.parquet one row per thread of those logs
//! OUT/<Kind>.<Event>/part-000001.parquet   the events of one type (Object.ObjectAlloc, Builtin.Dropped)
//! ```
//!
//! A table's directory name is its event's name qualified by its kind, `<Kind>.<Event>`, and
//! by its set, `<set>.<Kind>.<Event>`, when the log holds more than one event set (as `print`
//! qualifies it).
//! Every event type of every exported log has a directory, the built-in events (kind
//! `Builtin`) too; a type that no log of the dataset recorded holds one file of no rows, so
//! that a query of it finds an empty table rather than no files.
//!
//! # Schema
//!
//! Every event table: `log` INT64 (the row's log, `logs.log`), `thread` UINT64, `ticks` UINT64
//! (the clock's raw ticks), `ns` INT64 (nanoseconds since the log's start, exactly as `print`
//! shows the seconds), `time` TIMESTAMP(MICROS, UTC) (the wall-clock time, from the header's
//! clock facts), then one column per parameter, named after it, typed by its letter through
//! the exports' one mapping ([`super::column_type`]): `P A W` UINT64, `U` UINT32, `I` INT64,
//! `D` DOUBLE (NaN and infinities as they are), `B` BOOLEAN, `S` STRING. A parameter whose
//! name is taken (ignoring case, as DuckDB and SQLite compare names) by a fixed column or an
//! earlier parameter gets `_` appended: `Dropped(thread, count)` has columns `thread_` and
//! `count`. Every column is required (never null).
//!
//! - `time` is in microseconds because every engine reads that (Spark refuses nanosecond
//!   timestamps); `ns` and `ticks` hold the exact time.
//! - Strings are UTF-8, as the JSON output renders them: bytes that are not UTF-8 are each
//!   maximal invalid sequence replaced by U+FFFD (Parquet's STRING is UTF-8, and engines
//!   check it). A string the writer cut holds the part kept; `logs.truncated_strings` counts
//!   them.
//!
//! `logs`: `log` INT64, `path` STRING (as exported, made absolute), `size` UINT64, `identity`
//! STRING (size and FNV-1a digest, see below), `host` STRING (the producer's host name from the
//! stream header, format 2.0.1 and later; null for older logs, whose `path` tells where they
//! came from), `program` STRING, `pid`
//! UINT64, `arch` STRING, `os` STRING, `pointer_width` UINT32, `start` TIMESTAMP(MICROS, UTC),
//! `start_wall_ns` INT64, `format_version` STRING, `event_set_version` STRING (each set's
//! version, space-separated), `clock`
//! STRING, `ticks_per_second` UINT64, `start_ticks` UINT64, `ref_ticks` UINT64,
//! `ref_wall_ns` INT64, `block_size` UINT32, `exported` TIMESTAMP(MICROS, UTC), and the counts
//! of `event-dump stats`, each UINT64: `events` (rows), `blocks` (whole blocks),
//! `damaged_blocks`, `bad_records`, `unknown_records` (skipped), `lost_events` (from
//! `Dropped` events and block headers), `missing_blocks` (gaps in a thread's block sequence
//! numbers), `truncated_strings`.
//!
//! `threads`: `log` INT64, `thread` UINT64, `name` STRING (null when the log names it not),
//! `events` UINT64, `lost_events` UINT64: every thread that has a block or lost events.
//!
//! # Files
//!
//! Row groups of up to 2^20 rows (fewer when the buffers of all tables together reach
//! 64 MiB: then the largest is written out), Snappy compression (every engine reads it, and
//! it costs no C library to build), statistics per column chunk and page, dictionary
//! encoding for `log`, `thread`, the strings and the `U` columns (where values repeat; not
//! for times and doubles). Each file's key-value metadata names what it holds
//! (`event-dump.event`: the event's kind, code, format and parameters; `event-dump.logs`:
//! the logs of a `logs` file with their identities), which is how the next run reads the
//! dataset without a query engine.
//!
//! # Appending, refusing, atomicity
//!
//! Every run adds logs numbered after those already there. A log whose identity (size and a
//! 64-bit FNV-1a digest of its bytes, as the SQLite export computes it) is already in the
//! dataset, or given twice, is refused before anything is written: the dataset is left byte
//! for byte as it was. So is a log whose event type disagrees with the table already there
//! (another code, kind, format or parameter names).
//!
//! A run writes every file under a temporary name (`.part-N.parquet.PID.tmp`, which engines
//! do not read: not `*.parquet`, and hidden), then renames them into place, the `logs` file
//! last. Each rename is atomic: a file is there whole or not at all. The run as a whole is
//! not, since no file system renames several files at once: if the run is killed during the
//! renames, some event files of it are in place without their `logs` file. A query that joins
//! `logs` never sees those rows; the next export removes them (and any temporary file left)
//! before it writes, and says so. An error before the renames (a refused log, a full disk)
//! removes what the run wrote; a directory the run created is removed too. A lock file
//! (`_event-dump.lock`, created exclusively) keeps two exports out of one dataset.
//!
//! # Memory
//!
//! Each log is read block by block ([`super::walk`]) and each row goes into its table's
//! column buffers, written out as a row group when it is full: memory is the buffers (at
//! most 64 MiB beyond one row group) and the thread and block counts, whatever the size of
//! the log.

use super::{ColumnType, Imported, Said, Window, column_type, identity, param_columns, walk};
use crate::log::{DumpError, Log};
use event_format::builtin;
use event_format::decode::{Desc, Event};
use event_format::letter;
use event_format::wire::{Clock, Value};
use parquet::basic::{Compression, LogicalType, Repetition, TimeUnit, Type as Physical};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnPath, Type};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

type Result<T> = std::result::Result<T, DumpError>;

/// The layout version written into the marker file. A change that an older exporter would
/// misread bumps it; an exporter refuses a dataset of a newer layout.
const LAYOUT_VERSION: u32 = 1;

/// The file that marks a directory as a dataset of this exporter.
const MARKER: &str = "_event-dump";

/// The lock file of a run.
const LOCK: &str = "_event-dump.lock";

/// The most rows in a row group.
const ROW_GROUP_ROWS: usize = 1 << 20;

/// The most bytes the column buffers of all tables hold before the largest is written out.
const BUFFER_BYTES: usize = 64 << 20;

/// The columns before the parameters in every event table.
const FIXED_COLUMNS: [&str; 5] = ["log", "thread", "ticks", "ns", "time"];

/// Key-value metadata: what an event table's file holds.
const KEY_EVENT: &str = "event-dump.event";

/// Key-value metadata: the logs of a `logs` file, one line each: serial, identity, path.
const KEY_LOGS: &str = "event-dump.logs";

/// What to do about a log that disagrees with the dataset.
const ELSEWHERE: &str = "; export this log into another dataset (-o another/)";

/// Exports `logs` into the dataset `out` (created when missing), all or nothing.
pub(crate) fn export(logs: &mut [Log], out: &Path, window: &mut Window) -> Result<ExitCode> {
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
    let result = Lock::take(out).and_then(|lock| {
        let result = export_into(logs, out, window);
        drop(lock);
        result
    });
    if result.is_err() && created {
        // Nothing of the run is left: the directory held only what the run wrote.
        let _ = fs::remove_dir_all(out);
    }
    let imported = result?;
    Ok(super::report(&imported, out))
}

/// The lock file of a run, removed when dropped.
struct Lock(PathBuf);

impl Lock {
    fn take(out: &Path) -> Result<Lock> {
        let path = out.join(LOCK);
        match fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut f) => {
                let _ = writeln!(f, "{}", std::process::id());
                Ok(Lock(path))
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let pid = fs::read_to_string(&path).unwrap_or_default();
                Err(DumpError::new(format!(
                    "{}: another export is writing this dataset (pid {}); if none is, remove {} and run again",
                    out.display(),
                    pid.trim(),
                    path.display()
                )))
            }
            Err(e) => Err(io_error(&path, &e)),
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

fn io_error(path: &Path, e: &io::Error) -> DumpError {
    let hint = match e.kind() {
        io::ErrorKind::PermissionDenied => "; give a directory you can write",
        io::ErrorKind::StorageFull => "; free some space and run again",
        _ => "",
    };
    DumpError::new(format!("{}: {e}{hint}; the dataset is as it was", path.display()))
}

fn parquet_error(path: &Path, e: &ParquetError) -> DumpError {
    match e {
        ParquetError::External(inner) => match inner.downcast_ref::<io::Error>() {
            Some(io) => io_error(path, io),
            None => DumpError::new(format!("{}: {e}; the dataset is as it was", path.display())),
        },
        _ => DumpError::new(format!("{}: {e}; the dataset is as it was", path.display())),
    }
}

/// A refusal: `what` is wrong, then what to do, if anything.
fn refuse(what: String, fix: &str) -> DumpError {
    DumpError::new(format!("{what}; nothing was written{fix}"))
}

/// What the dataset holds, as its files' metadata say.
#[derive(Default)]
struct Dataset {
    /// Identity -> (serial, path) of every log of a committed run.
    logs: HashMap<String, (i64, String)>,
    /// The runs whose `logs` file is in place: their first serials.
    runs: BTreeSet<i64>,
    last_serial: i64,
}

/// `part-000042.parquet` -> 42.
fn run_of(name: &str) -> Option<i64> {
    name.strip_prefix("part-")?.strip_suffix(".parquet")?.parse().ok()
}

fn part_name(run: i64) -> String {
    format!("part-{run:06}.parquet")
}

/// The key-value metadata `key` of the Parquet file at `path`.
fn file_key(path: &Path, key: &str) -> Result<Option<String>> {
    let file = File::open(path).map_err(|e| io_error(path, &e))?;
    let reader = SerializedFileReader::new(file).map_err(|e| {
        DumpError::new(format!(
            "{}: not a Parquet file of this exporter ({e}); remove it or give a new -o",
            path.display()
        ))
    })?;
    let metadata = reader.metadata().file_metadata();
    Ok(metadata.key_value_metadata().and_then(|kv| kv.iter().find(|k| k.key == key)).and_then(|k| k.value.clone()))
}

/// Checks that `out` is empty or a dataset this exporter wrote, and reads its logs.
fn read_dataset(out: &Path) -> Result<Dataset> {
    let mut dataset = Dataset::default();
    let marker = out.join(MARKER);
    let shown = out.display();
    match fs::read_to_string(&marker) {
        Ok(text) => {
            let layout: Option<u32> = text.split_whitespace().last().and_then(|v| v.parse().ok());
            match layout {
                Some(l) if l <= LAYOUT_VERSION => {}
                Some(l) => {
                    return Err(DumpError::new(format!(
                        "{shown}: written by a newer event-dump (dataset layout {l}, this one writes {LAYOUT_VERSION}); use that event-dump or give a new -o directory"
                    )));
                }
                None => {
                    return Err(DumpError::new(format!(
                        "{}: not a marker of this exporter; give a new -o directory",
                        marker.display()
                    )));
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let others = fs::read_dir(out)
                .map_err(|e| io_error(out, &e))?
                .filter_map(std::result::Result::ok)
                .any(|entry| entry.file_name() != LOCK);
            if others {
                return Err(DumpError::new(format!(
                    "{shown}: a directory that event-dump did not write (no {MARKER} in it); give an empty or new -o directory"
                )));
            }
            return Ok(dataset);
        }
        Err(e) => return Err(io_error(&marker, &e)),
    }
    let logs_dir = out.join("logs");
    let entries = match fs::read_dir(&logs_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(dataset),
        Err(e) => return Err(io_error(&logs_dir, &e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| io_error(&logs_dir, &e))?;
        let Some(run) = entry.file_name().to_str().and_then(run_of) else { continue };
        dataset.runs.insert(run);
        let path = entry.path();
        let listed = file_key(&path, KEY_LOGS)?.unwrap_or_default();
        for line in listed.lines() {
            let mut fields = line.splitn(3, '\t');
            let (Some(serial), Some(identity), Some(log_path)) = (fields.next(), fields.next(), fields.next()) else {
                continue;
            };
            let Ok(serial) = serial.parse::<i64>() else { continue };
            dataset.last_serial = dataset.last_serial.max(serial);
            dataset.logs.insert(identity.to_owned(), (serial, log_path.to_owned()));
        }
    }
    Ok(dataset)
}

/// The directory name of the table of event type `desc`: its name qualified by its kind,
/// `<Kind>.<Event>`, and by its set, `<set>.<Kind>.<Event>`, when the log holds more than
/// one set ([`Desc::qualified`], as `print` shows `set:Kind.Name`). `None` for a name that
/// is not a plain identifier (a hostile header's), which no directory gets.
///
/// SET QUALIFIER: this is the one place that decides it. A set recorded alone in one log and
/// beside other sets in another lands in two tables (`Kind.Event` and `set.Kind.Event`), as
/// the other outputs name its events differently too.
fn table_name(desc: &Desc) -> Option<String> {
    let safe = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !(safe(&desc.kind_name) && safe(&desc.name)) {
        return None;
    }
    if desc.qualified {
        // Set names may hold `-` (`storage-v2`), which a directory name and every engine's
        // quoted table path take as it is.
        let set_safe =
            !desc.set.is_empty() && desc.set.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        return set_safe.then(|| format!("{}.{}.{}", desc.set, desc.kind_name, desc.name));
    }
    Some(format!("{}.{}", desc.kind_name, desc.name))
}

/// What must agree between the logs that share a table.
fn event_meaning(desc: &Desc) -> String {
    format!(
        "code {:#06x}, kind {}, format {}, parameters ({})",
        desc.code,
        desc.kind_name,
        letter::format_string(&desc.format),
        desc.params.join(", ")
    )
}

/// The physical shape of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A column of the exports' letter mapping.
    Param(ColumnType),
    /// Signed 64-bit.
    Int64,
    /// Wall-clock time: microseconds since the Unix epoch, UTC.
    Micros,
    /// A string that may be null.
    NullableUtf8,
}

/// One column of a table.
struct Column {
    name: String,
    shape: Shape,
}

impl Column {
    fn new(name: &str, shape: Shape) -> Column {
        Column { name: name.to_owned(), shape }
    }

    fn parquet_type(&self) -> std::result::Result<Type, ParquetError> {
        let (physical, logical) = match self.shape {
            Shape::Param(ColumnType::U64) => (Physical::INT64, Some(LogicalType::integer(64, false))),
            Shape::Param(ColumnType::U32) => (Physical::INT32, Some(LogicalType::integer(32, false))),
            Shape::Param(ColumnType::I64) | Shape::Int64 => (Physical::INT64, None),
            Shape::Param(ColumnType::F64) => (Physical::DOUBLE, None),
            Shape::Param(ColumnType::Bool) => (Physical::BOOLEAN, None),
            Shape::Param(ColumnType::Utf8) | Shape::NullableUtf8 => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            Shape::Micros => (Physical::INT64, Some(LogicalType::timestamp(true, TimeUnit::MICROS))),
        };
        let repetition = if self.shape == Shape::NullableUtf8 { Repetition::OPTIONAL } else { Repetition::REQUIRED };
        Type::primitive_type_builder(&self.name, physical)
            .with_logical_type(logical)
            .with_repetition(repetition)
            .build()
    }

    /// Whether dictionary encoding pays: values that repeat.
    fn dictionary(&self) -> bool {
        match self.shape {
            Shape::Param(ColumnType::U32 | ColumnType::Utf8 | ColumnType::U64 | ColumnType::I64)
            | Shape::NullableUtf8 => true,
            Shape::Param(ColumnType::F64 | ColumnType::Bool) | Shape::Micros => false,
            Shape::Int64 => self.name == "log",
        }
    }

    fn buffer(&self) -> Buffer {
        match self.shape {
            Shape::Param(ColumnType::U64 | ColumnType::I64) | Shape::Int64 | Shape::Micros => Buffer::I64(Vec::new()),
            Shape::Param(ColumnType::U32) => Buffer::I32(Vec::new()),
            Shape::Param(ColumnType::F64) => Buffer::F64(Vec::new()),
            Shape::Param(ColumnType::Bool) => Buffer::Bool(Vec::new()),
            Shape::Param(ColumnType::Utf8) => Buffer::Str(Vec::new(), None),
            Shape::NullableUtf8 => Buffer::Str(Vec::new(), Some(Vec::new())),
        }
    }
}

/// A column's values not yet written. Unsigned values are kept as their bits (Parquet
/// stores UINT64 in INT64 and UINT32 in INT32).
enum Buffer {
    I64(Vec<i64>),
    I32(Vec<i32>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    /// Strings, and the definition levels of a nullable column (1 there, 0 null).
    Str(Vec<ByteArray>, Option<Vec<i16>>),
}

/// A value for a column of the `logs` or `threads` tables.
enum Cell {
    I64(i64),
    U64(u64),
    U32(u32),
    Str(String),
    Null,
}

impl Buffer {
    fn push_cell(&mut self, cell: Cell) {
        match (self, cell) {
            (Buffer::I64(v), Cell::I64(x)) => v.push(x),
            (Buffer::I64(v), Cell::U64(x)) => v.push(bits64(x)),
            (Buffer::I32(v), Cell::U32(x)) => v.push(bits32(x)),
            (Buffer::Str(v, defs), Cell::Str(s)) => {
                v.push(ByteArray::from(s.into_bytes()));
                if let Some(d) = defs {
                    d.push(1);
                }
            }
            (Buffer::Str(_, Some(d)), Cell::Null) => d.push(0),
            _ => debug_assert!(false, "a cell of the wrong type"),
        }
    }
}

/// A u64 as Parquet stores a UINT64: its bits in an INT64.
fn bits64(v: u64) -> i64 {
    i64::from_ne_bytes(v.to_ne_bytes())
}

/// A u32 as Parquet stores a UINT32: its bits in an INT32.
fn bits32(v: u32) -> i32 {
    i32::from_ne_bytes(v.to_ne_bytes())
}

/// One table's file of this run, open under its temporary name, and its buffered rows.
struct TableFile {
    temp: PathBuf,
    path: PathBuf,
    writer: SerializedFileWriter<File>,
    buffers: Vec<Buffer>,
    rows: usize,
    /// About how many bytes the buffers hold.
    bytes: usize,
    /// Bytes a row takes in the buffers, strings aside.
    row_bytes: usize,
}

impl TableFile {
    /// Creates the file of table `dir` for run `run`, with `columns` and key-value metadata.
    fn create(dir: &Path, run: i64, columns: Vec<Column>, metadata: Vec<KeyValue>) -> Result<TableFile> {
        let path = dir.join(part_name(run));
        // The process id keeps it apart from a temporary file an interrupted run left.
        let temp = dir.join(format!(".{}.{}.tmp", part_name(run), std::process::id()));
        let error = |e: ParquetError| parquet_error(&temp, &e);
        let fields = columns.iter().map(|c| c.parquet_type().map(Arc::new)).collect::<std::result::Result<_, _>>();
        let schema = Type::group_type_builder("schema").with_fields(fields.map_err(error)?).build().map_err(error)?;
        let mut props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_created_by(format!("event-dump {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(metadata));
        for c in &columns {
            props = props.set_column_dictionary_enabled(ColumnPath::from(c.name.as_str()), c.dictionary());
        }
        let file = fs::OpenOptions::new().write(true).create_new(true).open(&temp).map_err(|e| io_error(&temp, &e))?;
        let writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props.build())).map_err(error)?;
        let buffers = columns.iter().map(Column::buffer).collect();
        let row_bytes = columns
            .iter()
            .map(|c| match c.shape {
                Shape::Param(ColumnType::Bool) => 1,
                Shape::Param(ColumnType::U32) => 4,
                Shape::Param(ColumnType::Utf8) | Shape::NullableUtf8 => std::mem::size_of::<ByteArray>() + 2,
                _ => 8,
            })
            .sum();
        Ok(TableFile { temp, path, writer, buffers, rows: 0, bytes: 0, row_bytes })
    }

    /// Writes the buffered rows as one row group.
    fn flush(&mut self) -> std::result::Result<(), ParquetError> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut group = self.writer.next_row_group()?;
        for buffer in &mut self.buffers {
            let Some(mut column) = group.next_column()? else {
                return Err(ParquetError::General("fewer columns than buffers".into()));
            };
            match buffer {
                Buffer::I64(v) => {
                    column.typed::<Int64Type>().write_batch(v, None, None)?;
                    v.clear();
                }
                Buffer::I32(v) => {
                    column.typed::<Int32Type>().write_batch(v, None, None)?;
                    v.clear();
                }
                Buffer::F64(v) => {
                    column.typed::<DoubleType>().write_batch(v, None, None)?;
                    v.clear();
                }
                Buffer::Bool(v) => {
                    column.typed::<BoolType>().write_batch(v, None, None)?;
                    v.clear();
                }
                Buffer::Str(v, defs) => {
                    column.typed::<ByteArrayType>().write_batch(v, defs.as_deref(), None)?;
                    v.clear();
                    if let Some(d) = defs {
                        d.clear();
                    }
                }
            }
            column.close()?;
        }
        group.close()?;
        self.rows = 0;
        self.bytes = 0;
        Ok(())
    }

    /// Appends one row of cells (the `logs` and `threads` tables).
    fn push_cells(&mut self, cells: Vec<Cell>) {
        debug_assert_eq!(cells.len(), self.buffers.len());
        for (buffer, cell) in self.buffers.iter_mut().zip(cells) {
            buffer.push_cell(cell);
        }
        self.rows += 1;
    }

    /// Writes the rest and the footer, and syncs the file: ready to be renamed into place.
    fn finish(mut self) -> Result<(PathBuf, PathBuf)> {
        self.flush().map_err(|e| parquet_error(&self.temp, &e))?;
        let file = self.writer.into_inner().map_err(|e| parquet_error(&self.temp, &e))?;
        file.sync_all().map_err(|e| io_error(&self.temp, &e))?;
        Ok((self.temp, self.path))
    }
}

/// An event's row into `table`. Values are those the catalog checked against the format,
/// one per parameter column.
fn push_event(table: &mut TableFile, serial: i64, clock: &Clock, event: &Event<'_>) {
    let time = event.time;
    let mut buffers = table.buffers.iter_mut();
    let mut fixed = |v: i64| {
        if let Some(Buffer::I64(b)) = buffers.next() {
            b.push(v);
        }
    };
    fixed(serial);
    fixed(bits64(event.thread));
    fixed(bits64(time));
    fixed(ns_since_start(clock, time));
    fixed(wall_micros(clock, time));
    let mut extra = 0;
    for (buffer, value) in buffers.zip(event.values()) {
        match (buffer, value) {
            (Buffer::I64(b), Value::Pointer(v) | Value::Address(v) | Value::Word(v)) => b.push(bits64(v)),
            (Buffer::I64(b), Value::Signed(v)) => b.push(v),
            (Buffer::I32(b), Value::Unsigned(v)) => b.push(bits32(v)),
            (Buffer::F64(b), Value::Double(v)) => b.push(v),
            (Buffer::Bool(b), Value::Bool(v)) => b.push(v),
            (Buffer::Str(b, _), Value::Str(text)) => {
                extra += text.bytes.len();
                b.push(ByteArray::from(String::from_utf8_lossy(text.bytes).into_owned().into_bytes()));
            }
            _ => debug_assert!(false, "a value of another letter than its column"),
        }
    }
    table.rows += 1;
    table.bytes += table.row_bytes + extra;
}

/// Nanoseconds from the clock's start to `ticks`, as `print` computes its seconds (truncated
/// toward zero), saturated to the i64 range.
fn ns_since_start(clock: &Clock, ticks: u64) -> i64 {
    let rate = clock.ticks_per_second.max(1);
    if ticks >= clock.start_ticks && rate <= u64::MAX / 1_000_000_000 {
        let delta = ticks - clock.start_ticks;
        let ns = (delta / rate).saturating_mul(1_000_000_000).saturating_add((delta % rate) * 1_000_000_000 / rate);
        return i64::try_from(ns).unwrap_or(i64::MAX);
    }
    let delta = i128::from(ticks) - i128::from(clock.start_ticks);
    let ns = delta.signum() * (delta.abs() * 1_000_000_000 / i128::from(rate));
    clamp(ns)
}

/// The wall-clock time of `ticks` in microseconds since the Unix epoch, saturated.
fn wall_micros(clock: &Clock, ticks: u64) -> i64 {
    clamp(clock.wall_ns(ticks).div_euclid(1000))
}

fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// The columns of the event table of `desc`.
fn event_columns(desc: &Desc) -> Vec<Column> {
    let fixed = [
        Column::new("log", Shape::Int64),
        Column::new("thread", Shape::Param(ColumnType::U64)),
        Column::new("ticks", Shape::Param(ColumnType::U64)),
        Column::new("ns", Shape::Int64),
        Column::new("time", Shape::Micros),
    ];
    let params = param_columns(&FIXED_COLUMNS, &desc.params)
        .into_iter()
        .zip(&desc.format)
        .map(|(name, l)| Column { name, shape: Shape::Param(column_type(*l)) });
    fixed.into_iter().chain(params).collect()
}

fn logs_columns() -> Vec<Column> {
    use ColumnType::{U32, U64, Utf8};
    let p = Shape::Param;
    [
        ("log", Shape::Int64),
        ("path", p(Utf8)),
        ("size", p(U64)),
        ("identity", p(Utf8)),
        ("host", Shape::NullableUtf8),
        ("program", p(Utf8)),
        ("pid", p(U64)),
        ("arch", p(Utf8)),
        ("os", p(Utf8)),
        ("pointer_width", p(U32)),
        ("start", Shape::Micros),
        ("start_wall_ns", Shape::Int64),
        ("format_version", p(Utf8)),
        ("event_set_version", p(Utf8)),
        ("clock", p(Utf8)),
        ("ticks_per_second", p(U64)),
        ("start_ticks", p(U64)),
        ("ref_ticks", p(U64)),
        ("ref_wall_ns", Shape::Int64),
        ("block_size", p(U32)),
        ("exported", Shape::Micros),
        ("events", p(U64)),
        ("blocks", p(U64)),
        ("damaged_blocks", p(U64)),
        ("bad_records", p(U64)),
        ("unknown_records", p(U64)),
        ("lost_events", p(U64)),
        ("missing_blocks", p(U64)),
        ("truncated_strings", p(U64)),
    ]
    .into_iter()
    .map(|(name, shape)| Column::new(name, shape))
    .collect()
}

fn threads_columns() -> Vec<Column> {
    [
        ("log", Shape::Int64),
        ("thread", Shape::Param(ColumnType::U64)),
        ("name", Shape::NullableUtf8),
        ("events", Shape::Param(ColumnType::U64)),
        ("lost_events", Shape::Param(ColumnType::U64)),
    ]
    .into_iter()
    .map(|(name, shape)| Column::new(name, shape))
    .collect()
}

/// A run in progress: its open table files and what it created.
struct Run<'a> {
    out: &'a Path,
    run: i64,
    /// Table directory name -> its file of this run.
    tables: Vec<TableFile>,
    by_name: HashMap<String, usize>,
    /// Directories this run created (removed if it fails).
    created_dirs: Vec<PathBuf>,
    /// What the buffers of all tables hold, about.
    buffered: usize,
}

impl Run<'_> {
    /// The index of the file of table `name`, created (with its directory) when new.
    fn table(&mut self, name: &str, desc: &Desc) -> Result<usize> {
        if let Some(&i) = self.by_name.get(name) {
            return Ok(i);
        }
        let columns = event_columns(desc);
        let metadata = vec![KeyValue::new(KEY_EVENT.to_owned(), event_meaning(desc))];
        self.open(name, columns, metadata)
    }

    fn open(&mut self, name: &str, columns: Vec<Column>, metadata: Vec<KeyValue>) -> Result<usize> {
        let dir = self.out.join(name);
        if !dir.exists() {
            fs::create_dir(&dir).map_err(|e| io_error(&dir, &e))?;
            self.created_dirs.push(dir.clone());
        }
        let file = TableFile::create(&dir, self.run, columns, metadata)?;
        self.tables.push(file);
        self.by_name.insert(name.to_owned(), self.tables.len() - 1);
        Ok(self.tables.len() - 1)
    }

    /// Writes out row groups while the table `i` is full or all buffers are over budget.
    fn relieve(&mut self, i: usize) -> std::result::Result<(), ParquetError> {
        if self.tables[i].rows >= ROW_GROUP_ROWS {
            self.buffered -= self.tables[i].bytes;
            self.tables[i].flush()?;
        }
        if self.buffered > BUFFER_BYTES
            && let Some(largest) = self.tables.iter_mut().max_by_key(|t| t.bytes)
        {
            self.buffered -= largest.bytes;
            largest.flush()?;
        }
        Ok(())
    }

    /// Removes every file and directory the run wrote.
    fn abandon(&mut self) {
        for t in self.tables.drain(..) {
            let _ = fs::remove_file(&t.temp);
        }
        for dir in self.created_dirs.iter().rev() {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

/// A finished file of the run: (its temporary name, its name in the dataset).
type Rename = (PathBuf, PathBuf);

/// A log to export, checked: its identity and serial.
struct Planned {
    identity: String,
    serial: i64,
}

fn export_into(logs: &mut [Log], out: &Path, window: &mut Window) -> Result<Vec<Imported>> {
    let dataset = read_dataset(out)?;
    let plans = plan(logs, out, &dataset)?;
    let run = dataset.last_serial + 1;
    let mut state =
        Run { out, run, tables: Vec::new(), by_name: HashMap::new(), created_dirs: Vec::new(), buffered: 0 };
    let result = write_run(logs, &plans, &mut state, window).and_then(|(imported, files)| {
        commit(out, &dataset, files)?;
        Ok(imported)
    });
    if result.is_err() {
        state.abandon();
    }
    result
}

/// Checks every log against the dataset and each other before anything is written: its
/// identity is new, its tables' names are safe and its event types agree with the tables
/// already there.
fn plan(logs: &[Log], out: &Path, dataset: &Dataset) -> Result<Vec<Planned>> {
    let mut plans = Vec::new();
    let mut seen: HashMap<String, &Path> = HashMap::new();
    // Table name -> (meaning, where it comes from).
    let mut meanings: HashMap<String, (String, String)> = HashMap::new();
    for (i, log) in logs.iter().enumerate() {
        let shown = log.path().display();
        let identity = identity(&log.files()).map_err(|e| DumpError::new(format!("{shown}: cannot read: {e}")))?;
        if let Some((serial, path)) = dataset.logs.get(&identity) {
            return Err(refuse(
                format!("{shown}: already exported into {} as log {serial} ({path})", out.display()),
                "",
            ));
        }
        if let Some(first) = seen.get(&identity) {
            return Err(refuse(format!("{shown}: the same log as {} given twice", first.display()), ""));
        }
        seen.insert(identity.clone(), log.path());
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
                None => existing_meaning(out, &name, dataset)?.map(|m| (m, format!("in {}", out.display()))),
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
        plans.push(Planned { identity, serial: dataset.last_serial + 1 + i as i64 });
    }
    Ok(plans)
}

/// The meaning recorded in a committed file of table `name`, if the dataset has one.
fn existing_meaning(out: &Path, name: &str, dataset: &Dataset) -> Result<Option<String>> {
    let dir = out.join(name);
    let Ok(entries) = fs::read_dir(&dir) else { return Ok(None) };
    let mut committed: Vec<(i64, PathBuf)> = entries
        .filter_map(std::result::Result::ok)
        .filter_map(|e| {
            let run = e.file_name().to_str().and_then(run_of)?;
            dataset.runs.contains(&run).then(|| (run, e.path()))
        })
        .collect();
    committed.sort();
    match committed.first() {
        Some((_, path)) => file_key(path, KEY_EVENT),
        None => Ok(None),
    }
}

/// Writes every log's events into the run's temporary files, then the `threads` and `logs`
/// files; returns the imported and the files to rename (temporary, final), `logs` last.
fn write_run(
    logs: &mut [Log],
    plans: &[Planned],
    run: &mut Run<'_>,
    window: &mut Window,
) -> Result<(Vec<Imported>, Vec<Rename>)> {
    let exported = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
    let mut imported = Vec::new();
    let mut log_rows = Vec::new();
    let mut thread_rows = Vec::new();
    for (file, (log, planned)) in logs.iter_mut().zip(plans).enumerate() {
        let serial = planned.serial;
        let clock = log.header().clock;
        // Wire code -> table index, for this log's catalog (codes of two sets may be equal;
        // their wire codes are not).
        let mut tables: HashMap<u16, usize> = HashMap::new();
        let mut names: BTreeMap<u64, String> = BTreeMap::new();
        let walked = walk(log, file, window, |event| {
            let i = match tables.get(&event.desc.wire) {
                Some(&i) => i,
                None => {
                    // plan() checked every name.
                    let name = table_name(event.desc).unwrap_or_default();
                    let i = run.table(&name, event.desc)?;
                    tables.insert(event.desc.wire, i);
                    i
                }
            };
            if event.desc.code == builtin::THREAD_NAME {
                let mut v = event.values();
                if let (Some(Value::Word(t)), Some(Value::Str(s))) = (v.next(), v.next()) {
                    names.insert(t, String::from_utf8_lossy(s.bytes).into_owned());
                }
            }
            let before = run.tables[i].bytes;
            push_event(&mut run.tables[i], serial, &clock, event);
            run.buffered += run.tables[i].bytes - before;
            run.relieve(i).map_err(|e| parquet_error(&run.tables[i].temp, &e))
        })?;
        let l = &walked.ledger;
        let path = fs::canonicalize(log.path()).unwrap_or_else(|_| log.path().to_path_buf());
        let header = log.header().clone();
        let path_text = path.display().to_string();
        log_rows.push((serial, planned.identity.clone(), path_text.clone(), {
            use Cell::*;
            vec![
                I64(serial),
                Str(path_text),
                U64(log.len()),
                Str(planned.identity.clone()),
                if header.producer.host.is_empty() { Null } else { Str(header.producer.host.clone()) },
                Str(header.producer.program.clone()),
                U64(header.producer.pid),
                Str(header.producer.arch.clone()),
                Str(header.producer.os.clone()),
                U32(u32::from(header.producer.pointer_width)),
                I64(header.producer.start_wall_ns.div_euclid(1000)),
                I64(header.producer.start_wall_ns),
                Str(header.format.to_string()),
                Str(super::set_versions(&header)),
                Str(header.clock.source.name().to_owned()),
                U64(header.clock.ticks_per_second),
                U64(header.clock.start_ticks),
                U64(header.clock.ref_ticks),
                I64(header.clock.ref_wall_ns),
                U32(header.block_size),
                I64(exported),
                U64(l.events()),
                U64(l.blocks()),
                U64(l.damaged_blocks().len() as u64),
                U64(l.bad_records().len() as u64),
                U64(l.unknown_records()),
                U64(l.lost()),
                U64(l.missing_blocks()),
                U64(l.truncated_strings()),
            ]
        }));
        // Every thread with a block, and every thread a `Dropped` event names.
        let threads: BTreeSet<u64> = l.threads().map(|(t, _)| t).chain(l.lost_by_thread().keys().copied()).collect();
        for thread in threads {
            let name = names.get(&thread).map_or(Cell::Null, |n| Cell::Str(n.clone()));
            let events = walked.events_by_thread.get(&thread).copied().unwrap_or(0);
            let lost = l.lost_by_thread().get(&thread).copied().unwrap_or(0);
            thread_rows.push(vec![Cell::I64(serial), Cell::U64(thread), name, Cell::U64(events), Cell::U64(lost)]);
        }
        imported.push(Imported {
            path: log.path().display().to_string(),
            serial,
            events: walked.rows(),
            left_out: walked.left_out,
            said: Said::of([l]),
        });
    }
    // Every event type of these logs has a table: an empty file for a type new to the dataset.
    for log in logs.iter() {
        for desc in log.catalog().iter() {
            let Some(name) = table_name(desc) else { continue };
            if !run.by_name.contains_key(&name) && !run.out.join(&name).exists() {
                run.table(&name, desc)?;
            }
        }
    }
    let threads = run.open("threads", threads_columns(), Vec::new())?;
    for row in thread_rows {
        run.tables[threads].push_cells(row);
    }
    let listed: Vec<String> =
        log_rows.iter().map(|(s, id, p, _)| format!("{s}\t{id}\t{}", p.replace(['\t', '\n'], " "))).collect();
    let logs_table = run.open("logs", logs_columns(), vec![KeyValue::new(KEY_LOGS.to_owned(), listed.join("\n"))])?;
    for (_, _, _, row) in log_rows {
        run.tables[logs_table].push_cells(row);
    }
    // Finish the files; `logs` is the last opened, so the last renamed.
    let mut files = Vec::new();
    let tables = std::mem::take(&mut run.tables);
    let mut rest = tables.into_iter();
    for table in rest.by_ref() {
        let temp = table.temp.clone();
        match table.finish() {
            Ok(pair) => files.push(pair),
            Err(e) => {
                let _ = fs::remove_file(temp);
                for t in rest {
                    let _ = fs::remove_file(&t.temp);
                }
                for (temp, _) in &files {
                    let _ = fs::remove_file(temp);
                }
                return Err(e);
            }
        }
    }
    // From here the run's temporary files are in `files`: if the commit fails, they go.
    run.tables = Vec::new();
    Ok((imported, files))
}

/// Puts the run's files in place: the marker first, then leftovers of an interrupted run
/// removed, then each file renamed, `logs` last.
fn commit(out: &Path, dataset: &Dataset, files: Vec<(PathBuf, PathBuf)>) -> Result<()> {
    let remove_temps = |files: &[(PathBuf, PathBuf)]| {
        for (temp, _) in files {
            let _ = fs::remove_file(temp);
        }
    };
    let marker = out.join(MARKER);
    if !marker.exists() {
        let text = format!("event-dump parquet dataset, layout {LAYOUT_VERSION}\n");
        if let Err(e) = fs::write(&marker, text) {
            remove_temps(&files);
            return Err(io_error(&marker, &e));
        }
    }
    let ours: BTreeSet<&Path> = files.iter().map(|(t, _)| t.as_path()).collect();
    let removed = remove_leftovers(out, dataset, &ours);
    if removed > 0 {
        eprintln!(
            "event-dump: {}: removed {removed} file(s) of an export that was interrupted before it completed",
            out.display()
        );
    }
    for (i, (temp, path)) in files.iter().enumerate() {
        if let Err(e) = fs::rename(temp, path) {
            remove_temps(&files[i..]);
            let error = io_error(path, &e);
            return Err(DumpError::new(format!(
                "{}; files of this run already renamed stay until the next export removes them",
                error.0.trim_end_matches("; the dataset is as it was")
            )));
        }
    }
    Ok(())
}

/// Removes the files that an interrupted run left: temporary files, and part files of a run
/// whose `logs` file is not there. Returns how many.
fn remove_leftovers(out: &Path, dataset: &Dataset, ours: &BTreeSet<&Path>) -> usize {
    let mut removed = 0;
    let Ok(dirs) = fs::read_dir(out) else { return 0 };
    for dir in dirs.filter_map(std::result::Result::ok) {
        let Ok(files) = fs::read_dir(dir.path()) else { continue };
        for file in files.filter_map(std::result::Result::ok) {
            let path = file.path();
            let Some(name) = file.file_name().to_str().map(str::to_owned) else { continue };
            let leftover = match run_of(&name) {
                Some(run) => !dataset.runs.contains(&run),
                None => name.starts_with(".part-") && name.ends_with(".parquet.tmp") && !ours.contains(path.as_path()),
            };
            if leftover && fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use event_format::wire::ClockSource;

    fn clock(rate: u64, start: u64) -> Clock {
        Clock {
            source: ClockSource::Monotonic,
            ticks_per_second: rate,
            ref_ticks: 0,
            ref_wall_ns: 0,
            start_ticks: start,
        }
    }

    #[test]
    fn nanoseconds_are_those_print_shows() {
        for (rate, start, ticks) in
            [(3_000_000_000, 6_000_000_000, 9_000_000_001), (1_000_000_000, 10, 5), (7, 0, u64::MAX), (u64::MAX, 1, 0)]
        {
            let c = clock(rate, start);
            let mut text = String::new();
            event_format::text::write_seconds(&mut text, &c, ticks).unwrap();
            let (whole, frac) = text.trim_start_matches('-').split_once('.').unwrap();
            let want =
                i128::from(whole.parse::<i64>().unwrap_or(i64::MAX)) * 1_000_000_000 + frac.parse::<i128>().unwrap();
            let want = if text.starts_with('-') { -want } else { want };
            assert_eq!(i128::from(ns_since_start(&c, ticks)), want.clamp(i64::MIN.into(), i64::MAX.into()), "{text}");
        }
    }

    #[test]
    fn run_numbers_name_the_files() {
        assert_eq!(part_name(42), "part-000042.parquet");
        assert_eq!(run_of("part-000042.parquet"), Some(42));
        assert_eq!(run_of(".part-000042.parquet.tmp"), None);
        assert_eq!(run_of("notes.txt"), None);
    }
}
