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
//! exports' one mapping ([`super::column_type`]): `P A W` UINT64, `U` UINT32, `I` INT64, `D`
//! DOUBLE, `B` BOOLEAN, `S` STRING; the `tracing` bridge's `TraceEvent` and `SpanEnter` have
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
//! Each log is read block by block ([`super::walk`], its blocks read and unpacked on a thread
//! of their own, a few ahead) and each row goes into its table's
//! column buffers (an event's parameters as their bytes), handed as a row group to the
//! encoder ([`encode`]) when it is full: its workers, one per core (at most 4), decode the
//! parameters into their columns and encode row groups while the log is read on, and the
//! files are the same byte for byte with any number of them. Memory is the buffers (at most
//! 64 MiB beyond one row group per table), at most one row group per worker and four waiting
//! in the encoder, one emptied set of buffers per table, each worker's parameter columns of
//! one row group, and the thread and block counts, whatever the size of the log. Each log's
//! files are closed before the next log is read.

mod encode;

use super::Said;
use super::tables::{ColumnType, Imported, column_type, fields_json, has_fields, param_columns, walk_chosen};
use crate::log::{DumpError, Log};
use encode::{Buffer, Encoder, Fill, Strings};
use event_format::builtin;
use event_format::decode::{Desc, Event};
use event_format::letter::{self, Letter};
use event_format::wire::{Clock, Order, STRING_TRUNCATED, Value};
use parquet::basic::{Compression, Encoding, LogicalType, Repetition, TimeUnit, Type as Physical};
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
/// misread bumps it; an exporter refuses a dataset of another layout. Layout 2: files named
/// by recording id in `date=` partitions (layout 1 numbered logs and files per run).
const LAYOUT_VERSION: u32 = 2;

/// The file that marks a directory as a dataset of this exporter.
const MARKER: &str = "_event-dump";

/// The lock file of a run.
const LOCK: &str = "_event-dump.lock";

/// The most rows in a row group: small enough that the encoder's workers work while the
/// log is read, and that the buffers of a row group (a table's being filled, its spare, and
/// those in the encoder) are soon reused rather than new memory: with 2^17 rows a 4 M-event
/// log of 4 event types took 34,000 page faults and 140 MB at its peak, with 2^15 14,000 and
/// 46 MB, and 10% less CPU time (BENCHMARKS.md); about 1 MB of Parquet per row group of
/// such a table, which DuckDB and Polars read as fast as fewer larger ones.
const ROW_GROUP_ROWS: usize = 1 << 15;

/// The most bytes the column buffers of all tables hold before the largest is written out.
const BUFFER_BYTES: usize = 64 << 20;

/// The columns before the parameters in every event table, and `date`, the partition's
/// column, which engines add: a parameter takes none of these names.
const RESERVED_COLUMNS: [&str; 6] = ["log", "thread", "ticks", "ns", "time", "date"];

/// The column after the parameters of the `tracing` bridge's events: their fields, as JSON.
const FIELDS_COLUMN: &str = "fields_json";

/// Key-value metadata: what an event table's file holds.
const KEY_EVENT: &str = "event-dump.event";

/// Key-value metadata of a `logs` file: the log's recording id and size in bytes, `id size`.
const KEY_LOG: &str = "event-dump.log";

/// The logs to export, a recording of segments as its segments, each opened alone: each is a
/// log of the dataset, named by its recording id and its index (`id_of`), so that a recording
/// exported whole and one exported a sealed segment at a time give the same files.
fn one_per_segment(logs: Vec<Log>) -> Result<Vec<Log>> {
    let mut each = Vec::with_capacity(logs.len());
    for log in logs {
        if log.segments().is_empty() {
            each.push(log);
            continue;
        }
        let files: Vec<PathBuf> = log.files().into_iter().map(Path::to_path_buf).collect();
        for file in files {
            let one = event_format::log::open(&file, event_format::log::OpenOptions::default())
                .map_err(|e| DumpError::new(e.to_string()))?;
            each.push(one);
        }
    }
    Ok(each)
}

/// A log's name in the dataset: its recording id (32 hex digits), and for a segment, `-` and
/// its index in six digits (`0f1e...f0-000003`).
fn id_of(log: &Log) -> String {
    let id = log.recording_id().to_hex();
    match log.header().properties.segment {
        Some(segment) => format!("{id}-{:06}", segment.index),
        None => id,
    }
}

/// What to do about a log that disagrees with the dataset.
const ELSEWHERE: &str = "; export this log into another dataset (-o another/)";

/// Microseconds in a day.
const DAY_MICROS: i64 = 86_400_000_000;

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

/// `2026-11-26` for day 20783 since the Unix epoch (the proleptic Gregorian calendar, UTC).
/// Days before year 1 or after year 9999 are those years' ends, which every engine's DATE
/// reads.
fn date(days: i64) -> String {
    let (year, month, day) = event_format::text::civil_date(days.clamp(-719_162, 2_932_896));
    format!("{year:04}-{month:02}-{day:02}")
}

/// The partition directory name of day `days`.
fn partition(days: i64) -> String {
    format!("date={}", date(days))
}

/// The day (since the Unix epoch, UTC) of `micros` since the epoch.
fn day_of(micros: i64) -> i64 {
    micros.div_euclid(DAY_MICROS)
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

/// The `.parquet` files (not hidden) in the partitions of table directory `dir`, sorted.
fn table_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(partitions) = fs::read_dir(dir) else { return files };
    for p in partitions.filter_map(std::result::Result::ok) {
        let Ok(entries) = fs::read_dir(p.path()) else { continue };
        for e in entries.filter_map(std::result::Result::ok) {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".parquet") && !name.starts_with('.') {
                files.push(e.path());
            }
        }
    }
    files.sort();
    files
}

/// Checks that `out` is empty or a dataset of this layout, and lists its logs: recording id
/// (hex) -> its `logs` file.
fn read_dataset(out: &Path) -> Result<HashMap<String, PathBuf>> {
    let marker = out.join(MARKER);
    let shown = out.display();
    match fs::read_to_string(&marker) {
        Ok(text) => {
            let layout: Option<u32> = text.split_whitespace().last().and_then(|v| v.parse().ok());
            match layout {
                Some(LAYOUT_VERSION) => {}
                Some(l) if l < LAYOUT_VERSION => {
                    return Err(DumpError::new(format!(
                        "{shown}: a dataset of layout {l}, which numbered logs per dataset (this event-dump writes layout {LAYOUT_VERSION}, files named by recording id); export into a new -o directory"
                    )));
                }
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
            return Ok(HashMap::new());
        }
        Err(e) => return Err(io_error(&marker, &e)),
    }
    let mut logs = HashMap::new();
    for path in table_files(&out.join("logs")) {
        if let Some(id) = path.file_stem().and_then(|s| s.to_str()) {
            logs.insert(id.to_owned(), path.clone());
        }
    }
    Ok(logs)
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
    /// Signed 32-bit.
    Int32,
    /// Wall-clock time: microseconds since the Unix epoch, UTC.
    Micros,
    /// A string that may be null.
    NullableUtf8,
    /// An event table's `log` column: a string, the log's recording id in every row.
    Id,
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
            Shape::Int32 => (Physical::INT32, None),
            Shape::Param(ColumnType::F64) => (Physical::DOUBLE, None),
            Shape::Param(ColumnType::Bool) => (Physical::BOOLEAN, None),
            Shape::Param(ColumnType::Utf8) | Shape::NullableUtf8 | Shape::Id => {
                (Physical::BYTE_ARRAY, Some(LogicalType::String))
            }
            Shape::Micros => (Physical::INT64, Some(LogicalType::timestamp(true, TimeUnit::MICROS))),
        };
        let repetition = if self.shape == Shape::NullableUtf8 { Repetition::OPTIONAL } else { Repetition::REQUIRED };
        Type::primitive_type_builder(&self.name, physical)
            .with_logical_type(logical)
            .with_repetition(repetition)
            .build()
    }

    /// Whether dictionary encoding pays: values that repeat (the log, threads, strings and
    /// small unsigned values); not for times, doubles and 64-bit parameters, which rarely
    /// repeat and whose dictionary costs a hash per value.
    fn dictionary(&self) -> bool {
        match self.shape {
            Shape::Param(ColumnType::U32 | ColumnType::Utf8) | Shape::NullableUtf8 | Shape::Id => true,
            Shape::Param(ColumnType::F64 | ColumnType::Bool | ColumnType::U64 | ColumnType::I64)
            | Shape::Micros
            | Shape::Int32 => false,
            Shape::Int64 => self.name == "thread",
        }
    }

    /// Whether the column is an event table's `ticks`, `ns` or `time`: times that grow by
    /// little from row to row, which DELTA_BINARY_PACKED stores in the bits of their
    /// differences (half the size of PLAIN with Snappy, in less time), and which Snappy
    /// would not make smaller (so not compressed). A parameter never takes these names.
    fn delta(&self) -> bool {
        matches!((self.name.as_str(), self.shape), ("ticks" | "ns", Shape::Int64) | ("time", Shape::Micros))
    }

    fn buffer(&self) -> Buffer {
        match self.shape {
            Shape::Param(ColumnType::U64 | ColumnType::I64) | Shape::Int64 | Shape::Micros => Buffer::I64(Vec::new()),
            Shape::Param(ColumnType::U32) | Shape::Int32 => Buffer::I32(Vec::new()),
            Shape::Param(ColumnType::F64) => Buffer::F64(Vec::new()),
            Shape::Param(ColumnType::Bool) => Buffer::Bool(Vec::new()),
            Shape::Param(ColumnType::Utf8) => Buffer::Str(Strings::default(), None),
            Shape::NullableUtf8 => Buffer::Str(Strings::default(), Some(Vec::new())),
            Shape::Id => Buffer::Id(0),
        }
    }
}

/// A value for a column of the `logs` or `threads` tables.
enum Cell {
    I64(i64),
    I32(i32),
    Str(String),
    Null,
}

/// Appends a cell to its column's buffer.
fn push_cell(buffer: &mut Buffer, cell: Cell) {
    match (buffer, cell) {
        (Buffer::I64(v), Cell::I64(x)) => v.push(x),
        (Buffer::I32(v), Cell::I32(x)) => v.push(x),
        (Buffer::Str(v, defs), Cell::Str(s)) => {
            v.push(s.as_bytes());
            if let Some(d) = defs {
                d.push(1);
            }
        }
        (Buffer::Str(_, Some(d)), Cell::Null) => d.push(0),
        _ => debug_assert!(false, "a cell of the wrong type"),
    }
}

/// A u64 as Parquet stores a UINT64 (and as the signed columns hold thread ids and ticks):
/// its bits in an INT64.
fn bits64(v: u64) -> i64 {
    i64::from_ne_bytes(v.to_ne_bytes())
}

/// A u32 as Parquet stores a UINT32: its bits in an INT32.
fn bits32(v: u32) -> i32 {
    i32::from_ne_bytes(v.to_ne_bytes())
}

/// A count or size as a signed column holds it.
fn count(v: u64) -> Cell {
    Cell::I64(bits64(v))
}

/// One table file of a log, its writer with the [`Encoder`] under its temporary name, and
/// its buffered rows.
struct TableFile {
    temp: PathBuf,
    path: PathBuf,
    /// Its number at the encoder.
    file: usize,
    buffers: Vec<Buffer>,
    rows: usize,
    /// About how many bytes the buffers hold.
    bytes: usize,
    /// Bytes a row takes in the buffers, strings aside.
    row_bytes: usize,
    /// The table has the `fields` column.
    fields: bool,
}

impl TableFile {
    /// Creates the file `name` (`<id>.parquet`) in directory `dir`, with `columns` and
    /// key-value metadata, its writer handed to `encoder`; an event table's with the
    /// [`Fill`] of its parameter columns (its rows' arguments kept as recorded).
    fn create(
        dir: &Path,
        name: &str,
        columns: Vec<Column>,
        metadata: Vec<KeyValue>,
        fill: Option<Fill>,
        encoder: &mut Encoder,
    ) -> Result<TableFile> {
        let path = dir.join(name);
        // The process id keeps it apart from a temporary file an interrupted run left.
        let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let error = |e: ParquetError| parquet_error(&temp, &e);
        let fields = columns.iter().map(|c| c.parquet_type().map(Arc::new)).collect::<std::result::Result<_, _>>();
        let schema = Type::group_type_builder("schema").with_fields(fields.map_err(error)?).build().map_err(error)?;
        let mut props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_created_by(format!("event-dump {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(metadata));
        for c in &columns {
            props = props.set_column_dictionary_enabled(ColumnPath::from(c.name.as_str()), c.dictionary());
            if c.delta() {
                let path = ColumnPath::from(c.name.as_str());
                props = props
                    .set_column_encoding(path.clone(), Encoding::DELTA_BINARY_PACKED)
                    .set_column_compression(path, Compression::UNCOMPRESSED);
            }
        }
        let file = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)
            .map_err(|e| io_error(&temp, &e))?;
        let writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props.build())).map_err(error)?;
        let has_fields = columns.last().is_some_and(|c| c.name == FIELDS_COLUMN && c.shape == Shape::NullableUtf8);
        let mut buffers: Vec<Buffer> = columns.iter().map(Column::buffer).collect();
        // An event table's parameters are kept as their bytes until the worker decodes them:
        // where each row's end, its bytes counted as they come (`push_event`).
        let args = fill.is_some();
        if args {
            buffers.push(Buffer::Args(Strings::default(), Order::NATIVE));
        }
        let row_bytes = columns
            .iter()
            .map(|c| match c.shape {
                Shape::Param(_) if args => 0,
                Shape::Id => 0,
                Shape::Param(ColumnType::Bool) => 1,
                Shape::Param(ColumnType::U32) | Shape::Int32 => 4,
                Shape::Param(ColumnType::Utf8) | Shape::NullableUtf8 => std::mem::size_of::<usize>() + 2,
                _ => 8,
            })
            .sum::<usize>()
            + if args { std::mem::size_of::<usize>() } else { 0 };
        let file = encoder.open(writer, fill);
        Ok(TableFile { temp, path, file, buffers, rows: 0, bytes: 0, row_bytes, fields: has_fields })
    }

    /// Hands the buffered rows to the encoder as one row group.
    fn flush(&mut self, encoder: &mut Encoder) {
        if self.rows == 0 {
            return;
        }
        let empty = encoder.spare(self.file, &self.buffers);
        let full = std::mem::replace(&mut self.buffers, empty);
        encoder.write(self.file, full);
        self.rows = 0;
        self.bytes = 0;
    }

    /// Appends one row of cells (the `logs` and `threads` tables).
    fn push_cells(&mut self, cells: Vec<Cell>) {
        debug_assert_eq!(cells.len(), self.buffers.len());
        for (buffer, cell) in self.buffers.iter_mut().zip(cells) {
            push_cell(buffer, cell);
        }
        self.rows += 1;
    }
}

impl TableFile {
    /// Whether the row group of this event table holds arguments of another byte order than
    /// `order` (never in one stream, whose header gives its order): then it is written out
    /// before a row of `order` is added.
    fn other_order(&self, order: Order) -> bool {
        matches!(self.buffers.last(), Some(Buffer::Args(args, o)) if *o != order && args.len() > 0)
    }
}

/// An event's row into event table `table`, its `ns` and `time` (`wall`) computed: the
/// fixed columns, the `fields_json` column of the tables that have it, and the argument
/// bytes as recorded, which the worker decodes ([`fill_params`]). Returns the bits of the
/// thread id and ticks or-ed (whether one is above 2^63 - 1).
fn push_event(table: &mut TableFile, ns: i64, wall: i64, event: &Event<'_>) -> u64 {
    let time = event.time;
    let mut extra = 0;
    let (fields, fixed) = match table.buffers.split_last_mut() {
        Some((Buffer::Args(args, order), columns)) => {
            if args.len() == 0 {
                *order = event.order;
            }
            extra += event.args.len();
            args.push(event.args);
            match columns {
                [Buffer::Id(rows), thread, ticks, ns_column, time_column, rest @ ..] => {
                    *rows += 1;
                    (rest.last_mut(), [thread, ticks, ns_column, time_column])
                }
                _ => {
                    debug_assert!(false, "an event table without its fixed columns");
                    return event.thread | time;
                }
            }
        }
        _ => {
            debug_assert!(false, "an event table without its arguments");
            return event.thread | time;
        }
    };
    for (buffer, v) in fixed.into_iter().zip([bits64(event.thread), bits64(time), ns, wall]) {
        if let Buffer::I64(b) = buffer {
            b.push(v);
        }
    }
    if table.fields
        && let Some(Buffer::Str(b, Some(defs))) = fields
    {
        let mut json = String::new();
        if fields_json(event, &mut json) {
            extra += json.len();
            b.push(json.as_bytes());
            defs.push(1);
        } else {
            defs.push(0);
        }
    }
    table.rows += 1;
    table.bytes += table.row_bytes + extra;
    event.thread | time
}

/// The columns of an event table before its parameters.
const FIXED_COLUMNS: usize = 5;

/// The [`Fill`] of an event table of `format` with `params` parameter columns (after the
/// [`FIXED_COLUMNS`]): those columns of the row group's argument bytes.
fn fill_params(format: Vec<Letter>, params: usize) -> Fill {
    // A format of fixed-size letters only: each letter's offset in a row, and the row's
    // size (a format of none has no column to fill).
    let layout = format.iter().try_fold((Vec::new(), 0), |(mut offsets, at), l| {
        offsets.push((*l, at));
        Some((offsets, at + l.fixed_size()?))
    });
    let layout = layout.filter(|(_, size)| *size > 0);
    Fill {
        columns: FIXED_COLUMNS..FIXED_COLUMNS + params,
        make: Box::new(move |buffers: &mut [Buffer]| {
            let Some((Buffer::Args(args, order), columns)) = buffers.split_last_mut() else { return };
            let Some(params) = columns.get_mut(FIXED_COLUMNS..) else { return };
            let bytes = args.bytes();
            match &layout {
                // Every row of exactly the format's size: each column read at its offset in
                // each row, one column after another.
                Some((offsets, size)) if bytes.len() == args.len() * size => {
                    let rows = || bytes.chunks_exact(*size);
                    for ((letter, at), buffer) in offsets.iter().zip(params.iter_mut()) {
                        push_column(buffer, *letter, *order, rows().map(|row| &row[*at..]));
                    }
                }
                _ => {
                    for row in args.iter() {
                        push_values(params, &format, *order, row);
                    }
                }
            }
        }),
    }
}

/// The values of a fixed-size `letter` at the start of each of `values`, into its column
/// `buffer`.
fn push_column<'a>(buffer: &mut Buffer, letter: Letter, order: Order, values: impl Iterator<Item = &'a [u8]>) {
    match (buffer, letter) {
        (Buffer::I64(b), Letter::Pointer | Letter::Address | Letter::Word | Letter::Signed) => {
            b.extend(values.map(|v| bits64(order.u64(v))));
        }
        (Buffer::I32(b), Letter::Unsigned) => b.extend(values.map(|v| bits32(order.u32(v)))),
        (Buffer::F64(b), Letter::Double) => b.extend(values.map(|v| f64::from_bits(order.u64(v)))),
        (Buffer::Bool(b), Letter::Bool) => b.extend(values.map(|v| v[0] != 0)),
        _ => debug_assert!(false, "a value of another letter than its column"),
    }
}

/// The values of one row's argument bytes `args`, read by the letters of `format` straight
/// into the parameter columns `params` (as `Event::values` reads them, without a `Value`
/// between); the decoder checked the bytes against the format. `zip` takes no column past
/// the last value (the fields column's).
fn push_values(params: &mut [Buffer], format: &[Letter], order: Order, mut args: &[u8]) {
    for (letter, buffer) in format.iter().zip(params.iter_mut()) {
        // A fixed value's bytes, or a string's length prefix.
        let Some((head, rest)) = args.split_at_checked(letter.min_size()) else { break };
        args = rest;
        match (buffer, letter) {
            (Buffer::I64(b), Letter::Pointer | Letter::Address | Letter::Word | Letter::Signed) => {
                b.push(bits64(order.u64(head)));
            }
            (Buffer::I32(b), Letter::Unsigned) => b.push(bits32(order.u32(head))),
            (Buffer::F64(b), Letter::Double) => b.push(f64::from_bits(order.u64(head))),
            (Buffer::Bool(b), Letter::Bool) => b.push(head[0] != 0),
            (Buffer::Str(b, _), Letter::String) => {
                let len = usize::from(order.u16(head) & !STRING_TRUNCATED);
                let Some((text, rest)) = args.split_at_checked(len) else { break };
                args = rest;
                // UTF-8 as it is (most text: ASCII, told at once), checked faster than
                // `from_utf8_lossy` does.
                if text.is_ascii() || std::str::from_utf8(text).is_ok() {
                    b.push(text);
                } else {
                    b.push(String::from_utf8_lossy(text).as_bytes());
                }
            }
            _ => debug_assert!(false, "a value of another letter than its column"),
        }
    }
}

/// A log's clock, and its rate as a [`Divisor`]: the times of an event without a division.
struct Times {
    clock: Clock,
    rate: Divisor,
}

impl Times {
    fn new(clock: Clock) -> Times {
        Times { clock, rate: Divisor::new(clock.ticks_per_second) }
    }
}

/// Division of 64-bit numbers by one divisor, `d`, by a multiplication: with
/// m = ceil(2^64 / d), floor(x * m / 2^64) is floor(x / d) or one more (x * m / 2^64 is
/// x / d + x * e / (d * 2^64) for the e < d that makes m * d = 2^64 + e, and x < 2^64), which
/// one product tells.
#[derive(Clone, Copy)]
struct Divisor {
    d: u64,
    m: u128,
}

impl Divisor {
    /// The divisor `d`, 1 for 0.
    fn new(d: u64) -> Divisor {
        let d = d.max(1);
        Divisor { d, m: (1u128 << 64).div_ceil(u128::from(d)) }
    }

    /// `(x / d, x % d)`.
    fn div_rem(self, x: u64) -> (u64, u64) {
        // x * m < 2^64 * (2^64 / d + 1) <= 2^128 for d >= 1 (m = 2^64 only when d = 1).
        let q = u64::try_from((u128::from(x) * self.m) >> 64).unwrap_or(u64::MAX);
        match q.checked_mul(self.d) {
            Some(p) if p <= x => (q, x - p),
            _ => {
                let q = q - 1;
                (q, x - q * self.d)
            }
        }
    }
}

/// Nanoseconds from the clock's start to `ticks`, as `print` computes its seconds (truncated
/// toward zero), saturated to the i64 range.
fn ns_since_start(times: &Times, ticks: u64) -> i64 {
    let clock = &times.clock;
    let rate = clock.ticks_per_second.max(1);
    if rate == NS_PER_SECOND {
        // A clock in nanoseconds (the recorder's monotonic clock): no division.
        return clamp(i128::from(ticks) - i128::from(clock.start_ticks));
    }
    if ticks >= clock.start_ticks && rate <= u64::MAX / NS_PER_SECOND {
        let (whole, part) = times.rate.div_rem(ticks - clock.start_ticks);
        // part < rate, so part * 10^9 fits.
        let ns = whole.saturating_mul(NS_PER_SECOND).saturating_add(times.rate.div_rem(part * NS_PER_SECOND).0);
        return i64::try_from(ns).unwrap_or(i64::MAX);
    }
    let delta = i128::from(ticks) - i128::from(clock.start_ticks);
    let ns = delta.signum() * (delta.abs() * 1_000_000_000 / i128::from(rate));
    clamp(ns)
}

/// The wall-clock time of `ticks` in microseconds since the Unix epoch, saturated.
fn wall_micros(times: &Times, ticks: u64) -> i64 {
    let clock = &times.clock;
    // floor((ref_wall_ns + ns) / 1000) in 64 bits when the sum fits (as it does for every
    // time of a log this side of the year 2262), in 128 otherwise.
    let micros = |ns: u128| match i64::try_from(ns).ok().and_then(|ns| clock.ref_wall_ns.checked_add(ns)) {
        Some(wall) => wall.div_euclid(1000),
        None => clamp((i128::from(clock.ref_wall_ns) + ns.cast_signed()).div_euclid(1000)),
    };
    if clock.ticks_per_second == NS_PER_SECOND {
        // `wall_ns` without its 128-bit division, which a clock in nanoseconds does not need.
        if ticks >= clock.ref_ticks {
            return micros(u128::from(ticks - clock.ref_ticks));
        }
        let ns = i128::from(clock.ref_wall_ns) + (i128::from(ticks) - i128::from(clock.ref_ticks));
        return clamp(ns.div_euclid(1000));
    }
    let rate = clock.ticks_per_second;
    if ticks >= clock.ref_ticks && rate != 0 && rate <= u64::MAX / NS_PER_SECOND {
        // `wall_ns`'s floor((ticks - ref) * 10^9 / rate) without a division: q * 10^9 +
        // floor(r * 10^9 / rate), where ticks - ref = q * rate + r.
        let (whole, part) = times.rate.div_rem(ticks - clock.ref_ticks);
        let ns = u128::from(whole) * u128::from(NS_PER_SECOND) + u128::from(times.rate.div_rem(part * NS_PER_SECOND).0);
        return micros(ns);
    }
    clamp(clock.wall_ns(ticks).div_euclid(1000))
}

/// [`wall_micros`] of `ticks`, given `ns` = [`ns_since_start`] of `ticks`: from `ns` when the
/// clock's reference is its start (as the recorder writes every clock) and `ticks` is not
/// before it, for then both are floor((ticks - start) * 10^9 / rate), `ns` exact when below
/// i64::MAX; by [`wall_micros`] otherwise.
fn wall_micros_of(times: &Times, ticks: u64, ns: i64) -> i64 {
    let clock = &times.clock;
    if clock.ref_ticks == clock.start_ticks
        && ticks >= clock.start_ticks
        && clock.ticks_per_second != 0
        && ns < i64::MAX
        && let Some(wall) = clock.ref_wall_ns.checked_add(ns)
    {
        return wall.div_euclid(1000);
    }
    wall_micros(times, ticks)
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

/// Ticks per second of a clock in nanoseconds.
const NS_PER_SECOND: u64 = 1_000_000_000;

fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// The columns of the event table of `desc`.
fn event_columns(desc: &Desc) -> Vec<Column> {
    let fixed = [
        Column::new("log", Shape::Id),
        Column::new("thread", Shape::Int64),
        Column::new("ticks", Shape::Int64),
        Column::new("ns", Shape::Int64),
        Column::new("time", Shape::Micros),
    ];
    let mut reserved: Vec<&str> = RESERVED_COLUMNS.to_vec();
    if has_fields(desc) {
        reserved.push(FIELDS_COLUMN);
    }
    let params = param_columns(&reserved, &desc.params)
        .into_iter()
        .zip(&desc.format)
        .map(|(name, l)| Column { name, shape: Shape::Param(column_type(*l)) });
    let fields = has_fields(desc).then(|| Column::new(FIELDS_COLUMN, Shape::NullableUtf8));
    fixed.into_iter().chain(params).chain(fields).collect()
}

fn logs_columns() -> Vec<Column> {
    use Shape::{Int32, Int64, Micros, NullableUtf8};
    let text = Shape::Param(ColumnType::Utf8);
    [
        ("log", text),
        ("id_source", text),
        ("size", Int64),
        ("host", NullableUtf8),
        ("program", text),
        ("pid", Int64),
        ("arch", text),
        ("os", text),
        ("pointer_width", Int32),
        ("start", Micros),
        ("start_wall_ns", Int64),
        ("format_version", text),
        ("event_set_version", text),
        ("clock", text),
        ("ticks_per_second", Int64),
        ("start_ticks", Int64),
        ("ref_ticks", Int64),
        ("ref_wall_ns", Int64),
        ("block_size", Int32),
        ("events", Int64),
        ("blocks", Int64),
        ("damaged_blocks", Int64),
        ("bad_records", Int64),
        ("unknown_records", Int64),
        ("lost_events", Int64),
        ("missing_blocks", Int64),
        ("truncated_strings", Int64),
    ]
    .into_iter()
    .map(|(name, shape)| Column::new(name, shape))
    .collect()
}

fn threads_columns() -> Vec<Column> {
    [
        ("log", Shape::Param(ColumnType::Utf8)),
        ("thread", Shape::Int64),
        ("name", Shape::NullableUtf8),
        ("events", Shape::Int64),
        ("lost_events", Shape::Int64),
    ]
    .into_iter()
    .map(|(name, shape)| Column::new(name, shape))
    .collect()
}

/// A finished file of the run: (its temporary name, its name in the dataset).
type Rename = (PathBuf, PathBuf);

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

/// The most threads that sync a log's files: syncs wait for the disk, not a core, and the
/// file system makes one commit of those that wait together, where syncs one after another
/// take a commit each.
const SYNC_THREADS: usize = 8;

/// Syncs `files` (the files of `tables`, in order), [`sync_each`].
fn sync_all(tables: &[TableFile], files: Vec<File>) -> Result<()> {
    sync_each(&files, File::sync_all, |i| tables.get(i).map_or_else(PathBuf::new, |t| t.temp.clone()))
}

/// Syncs the directories `dirs` (so that the entries made in them, files renamed in and
/// directories created, are on disk as the files' data are), [`sync_each`]. Where a
/// directory cannot be opened as a file (not on Unix), nothing.
fn sync_dirs(dirs: &BTreeSet<PathBuf>) -> Result<()> {
    if !cfg!(unix) {
        return Ok(());
    }
    let dirs: Vec<&PathBuf> = dirs.iter().collect();
    sync_each(&dirs, |dir| File::open(dir)?.sync_all(), |i| dirs.get(i).map_or_else(PathBuf::new, |d| d.to_path_buf()))
}

/// Syncs each of `items` by `sync` on up to [`SYNC_THREADS`] threads at once, each taking
/// the next item not yet taken; the first error, of the first item that failed (`shown`
/// names item `i`). Without a thread (the system refuses every one), one after another.
fn sync_each<T: Sync>(
    items: &[T],
    sync: impl Fn(&T) -> io::Result<()> + Sync,
    shown: impl Fn(usize) -> PathBuf + Sync,
) -> Result<()> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let each = || {
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            if let Err(e) = sync(item)
                && let Ok(mut failures) = failures.lock()
            {
                failures.push((i, io_error(&shown(i), &e)));
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..SYNC_THREADS.min(items.len()) {
            if std::thread::Builder::new().name("parquet-sync".into()).spawn_scoped(scope, each).is_err() {
                break;
            }
        }
        // This thread syncs too, and alone when the system refused every other.
        each();
    });
    let failures = failures.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    match failures.into_iter().min_by_key(|(i, _)| *i) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
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
            Plan::Export(id) => match write_log(log, id, out, &mut created_dirs, &mut files, &mut logs_files) {
                Ok(i) => imported.push(i),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            },
        }
    }
    let new_dirs = Dirs { out, created, within: &created_dirs };
    let mut renaming = false;
    if result.is_ok() && !(files.is_empty() && logs_files.is_empty()) {
        result = commit(&new_dirs, &files, &logs_files, &mut renaming);
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

/// The recording id and size in bytes that a `logs` file says it holds.
fn logged(path: &Path) -> Result<Option<(String, u64)>> {
    let value = file_key(path, KEY_LOG)?;
    Ok(value.and_then(|v| {
        let (id, size) = v.split_once(' ')?;
        Some((id.to_owned(), size.parse().ok()?))
    }))
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

/// The meaning recorded in a file of table `name`, if the dataset has one.
fn existing_meaning(out: &Path, name: &str) -> Result<Option<String>> {
    match table_files(&out.join(name)).first() {
        Some(path) => file_key(path, KEY_EVENT),
        None => Ok(None),
    }
}

/// Writes one log's events into temporary files, then its `threads` and `logs` files; adds
/// them to `files` and `logs_files` (renamed last).
fn write_log(
    log: &mut Log,
    id: &str,
    out: &Path,
    created_dirs: &mut Vec<PathBuf>,
    files: &mut Vec<Rename>,
    logs_files: &mut Vec<Rename>,
) -> Result<Imported> {
    let header = log.header().clone();
    let times = Times::new(header.clock);
    let start_day = day_of(header.producer.start_wall_ns.div_euclid(1000));
    let mut files_of = LogFiles {
        out,
        name: format!("{id}.parquet"),
        tables: Vec::new(),
        by_key: HashMap::new(),
        encoder: Encoder::start(id.as_bytes()),
        created_dirs,
        buffered: 0,
    };
    // Wire code -> the table and day of the last row of that type.
    let mut last: Vec<Option<Last>> = vec![None; 1 << 16];
    let mut names: BTreeMap<u64, String> = BTreeMap::new();
    let mut high =
        header.producer.pid | header.clock.ticks_per_second | header.clock.start_ticks | header.clock.ref_ticks;
    let walked = walk_chosen(
        log,
        |_| true,
        |event| {
            let ns = ns_since_start(&times, event.time);
            let wall = wall_micros_of(&times, event.time, ns);
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
            if event.desc.code == builtin::THREAD_NAME && event.desc.is_builtin() {
                let mut v = event.values();
                if let (Some(Value::Word(t)), Some(Value::Str(s))) = (v.next(), v.next()) {
                    names.insert(t, String::from_utf8_lossy(s.bytes).into_owned());
                }
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
    );
    let walked = match walked {
        Ok(w) => w,
        Err(e) => {
            files_of.abandon();
            return Err(e);
        }
    };
    let l = &walked.ledger;
    let shown = log.path().display().to_string();
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
            Str(super::set_versions(&header)),
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
        ]
    };
    // Every thread with a block, and every thread a `Dropped` event names.
    let threads: BTreeSet<u64> = l.threads().map(|(t, _)| t).chain(l.lost_by_thread().keys().copied()).collect();
    let mut thread_rows = Vec::new();
    for thread in threads {
        high |= thread;
        let name = names.get(&thread).map_or(Cell::Null, |n| Cell::Str(n.clone()));
        let events = walked.events_by_thread.get(&thread).copied().unwrap_or(0);
        let lost = l.lost_by_thread().get(&thread).copied().unwrap_or(0);
        thread_rows.push(vec![Cell::Str(id.to_owned()), count(thread), name, count(events), count(lost)]);
    }
    if high >> 63 != 0 {
        eprintln!(
            "event-dump: {shown}: a thread id, tick count or header number is above 2^63 - 1; the signed column holds its bits (a negative number), as docs/OUTPUT.md says"
        );
    }
    let built = (|| {
        // Every event type of the log new to the dataset has a table: an empty file.
        for desc in log.catalog().iter() {
            let Some(name) = table_name(desc) else { continue };
            let written = files_of.by_key.keys().any(|(n, _)| *n == name);
            if !written && !out.join(&name).exists() {
                files_of.table(&name, start_day, desc)?;
            }
        }
        let threads = files_of.open("threads", start_day, threads_columns(), Vec::new(), None)?;
        for row in thread_rows {
            files_of.tables[threads].push_cells(row);
        }
        let meta = vec![KeyValue::new(KEY_LOG.to_owned(), format!("{id} {}", log.len()))];
        let logs_table = files_of.open("logs", start_day, logs_columns(), meta, None)?;
        files_of.tables[logs_table].push_cells(log_row);
        Ok(())
    })();
    if let Err(e) = built {
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
    Ok(Imported {
        path: shown,
        log: id.to_owned(),
        events: l.events(),
        left_out: 0,
        said: Said::of([l]),
        already: false,
    })
}

/// The directories a run made: the dataset `out` (`created`: by this run), and those
/// within it (`within`, the tables' and their partitions').
struct Dirs<'a> {
    out: &'a Path,
    created: bool,
    within: &'a [PathBuf],
}

/// Puts the run's files in place, durably: the marker first (synced, and the dataset's
/// directory, and its parent when the run created it), then the event, `threads` and
/// empty-table files renamed and their directories synced (and those of the directories the
/// run created), then each log's `logs` file renamed and its directory synced: a `logs` row
/// is never on disk before the files of its log, and when the run ends every file and
/// directory it made is. `renaming` is set once a file is renamed: from then on an error
/// leaves the files in place (and their directories).
fn commit(dirs: &Dirs<'_>, files: &[Rename], logs_files: &[Rename], renaming: &mut bool) -> Result<()> {
    let out = dirs.out;
    let marker = out.join(MARKER);
    let mut to_sync = BTreeSet::new();
    if !marker.exists() {
        let text = format!("event-dump parquet dataset, layout {LAYOUT_VERSION}\n");
        let written = File::create(&marker).and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.sync_all()
        });
        written.map_err(|e| io_error(&marker, &e))?;
        to_sync.insert(out.to_path_buf());
    }
    if dirs.created
        && let Some(parent) = out.parent()
    {
        // `out` itself, `.` when it is a bare name.
        to_sync.insert(if parent.as_os_str().is_empty() { PathBuf::from(".") } else { parent.to_path_buf() });
    }
    let removed = remove_stale_temps(files.iter().chain(logs_files));
    if removed > 0 {
        eprintln!(
            "event-dump: {}: removed {removed} temporary file(s) that an interrupted export of these logs left",
            out.display()
        );
    }
    let mut renamed = |files: &[Rename], to_sync: &mut BTreeSet<PathBuf>| -> Result<()> {
        for (temp, path) in files {
            *renaming = true;
            if let Err(e) = fs::rename(temp, path) {
                let error = io_error(path, &e);
                return Err(DumpError::new(format!(
                    "{}; files of this run already renamed stay: export the same logs again to complete them",
                    error.0.trim_end_matches("; the dataset is as it was")
                )));
            }
            if let Some(dir) = path.parent() {
                to_sync.insert(dir.to_path_buf());
            }
        }
        sync_dirs(to_sync).map_err(|e| {
            DumpError::new(format!(
                "{}; the files of this run are in place but may not be on disk: export the same logs again to make sure",
                e.0.trim_end_matches("; the dataset is as it was")
            ))
        })
    };
    // A directory the run created is an entry of its parent (the dataset's or a table's).
    to_sync.extend(dirs.within.iter().filter_map(|d| d.parent()).map(Path::to_path_buf));
    renamed(files, &mut to_sync)?;
    renamed(logs_files, &mut BTreeSet::new())
}

/// Removes the temporary files that an interrupted export of the same files left beside
/// them (`.<id>.parquet.PID.tmp` of another run); returns how many.
fn remove_stale_temps<'a>(files: impl Iterator<Item = &'a Rename> + Clone) -> usize {
    let mut removed = 0;
    let dirs: BTreeSet<(&Path, String)> = files
        .clone()
        .filter_map(|(_, path)| Some((path.parent()?, format!(".{}.", path.file_name()?.to_str()?))))
        .collect();
    let ours: BTreeSet<&Path> = files.map(|(temp, _)| temp.as_path()).collect();
    for (dir, prefix) in dirs {
        let Ok(entries) = fs::read_dir(dir) else { continue };
        for e in entries.filter_map(std::result::Result::ok) {
            let path = e.path();
            let stale = e.file_name().to_str().is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".tmp"));
            if stale && !ours.contains(path.as_path()) && fs::remove_file(&path).is_ok() {
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
            assert_eq!(
                i128::from(ns_since_start(&Times::new(c), ticks)),
                want.clamp(i64::MIN.into(), i64::MAX.into()),
                "{text}"
            );
        }
    }

    #[test]
    fn a_clock_in_nanoseconds_gives_the_times_of_the_general_rule() {
        let mut c = clock(NS_PER_SECOND, 1_000);
        c.ref_ticks = 500;
        c.ref_wall_ns = 1_700_000_000_123_456_789;
        for ticks in [0, 1, 499, 500, 999, 1_000, 1_001, 123_456_789_012, u64::MAX] {
            assert_eq!(wall_micros(&Times::new(c), ticks), clamp(c.wall_ns(ticks).div_euclid(1000)), "{ticks}");
            let general = i128::from(ticks) - i128::from(c.start_ticks);
            assert_eq!(ns_since_start(&Times::new(c), ticks), clamp(general), "{ticks}");
        }
        c.ref_wall_ns = i64::MIN;
        assert_eq!(wall_micros(&Times::new(c), 0), clamp(c.wall_ns(0).div_euclid(1000)));
    }

    #[test]
    fn times_of_any_clock_rate_are_those_of_the_general_rule() {
        for (rate, reference, wall) in [
            (2_600_000_198, 5_000_000_000, 1_700_000_000_123_456_789),
            (3, 10, -5),
            (u64::MAX / NS_PER_SECOND, 0, 0),
            (u64::MAX / NS_PER_SECOND + 1, 7, i64::MAX),
            (1, u64::MAX, i64::MIN),
        ] {
            let mut c = clock(rate, 0);
            c.ref_ticks = reference;
            c.ref_wall_ns = wall;
            for ticks in
                [0, 1, reference.saturating_sub(1), reference, reference.saturating_add(1), rate, 1 << 40, u64::MAX]
            {
                assert_eq!(
                    wall_micros(&Times::new(c), ticks),
                    clamp(c.wall_ns(ticks).div_euclid(1000)),
                    "rate {rate} ticks {ticks}"
                );
            }
        }
    }

    #[test]
    fn the_wall_time_from_nanoseconds_is_the_wall_time() {
        for (rate, start, wall) in [
            (NS_PER_SECOND, 1_000, 1_700_000_000_123_456_789),
            (2_600_000_198, 5_000_000_000, 1_700_000_000_123_456_789),
            (3, 10, -5),
            (3, 10, -1_000_000_000_007),
            (u64::MAX / NS_PER_SECOND, 0, 0),
            (u64::MAX / NS_PER_SECOND + 1, 7, i64::MAX),
            (u64::MAX / NS_PER_SECOND + 1, 7, i64::MIN),
            (1, u64::MAX, i64::MIN),
            (1, 0, i64::MAX - 999),
        ] {
            for reference in [start, start / 2, start.saturating_add(3)] {
                let mut c = clock(rate, start);
                c.ref_ticks = reference;
                c.ref_wall_ns = wall;
                let times = Times::new(c);
                for ticks in [0, 1, start.saturating_sub(1), start, start.saturating_add(1), rate, 1 << 40, u64::MAX] {
                    let ns = ns_since_start(&times, ticks);
                    assert_eq!(
                        wall_micros_of(&times, ticks, ns),
                        wall_micros(&times, ticks),
                        "rate {rate} start {start} reference {reference} ticks {ticks}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_divisor_divides_as_the_division_does() {
        let mut divisors = vec![1, 2, 3, 7, 1000, 2_600_000_198, 3_000_000_000, u64::MAX / NS_PER_SECOND, u64::MAX];
        divisors.extend((0..64).map(|b| 1u64 << b));
        divisors.extend((1..64).map(|b| (1u64 << b) - 1));
        divisors.extend((1..64).map(|b| (1u64 << b) + 1));
        // A fixed generator: the same numbers every run.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for d in divisors {
            let divisor = Divisor::new(d);
            let mut xs = vec![0, 1, d - 1, d, d.saturating_add(1), u64::MAX, u64::MAX - 1, u64::MAX / d * d];
            xs.extend((0..200).map(|_| next()));
            xs.extend((0..200).map(|_| next() >> (next() % 64)));
            for x in xs {
                assert_eq!(divisor.div_rem(x), (x / d, x % d), "{x} / {d}");
            }
        }
        assert_eq!(Divisor::new(0).div_rem(5), (5, 0), "0 divides as 1");
    }

    /// A parameter column's values, for comparing.
    fn values(buffer: &Buffer) -> String {
        match buffer {
            Buffer::I64(v) => format!("{v:?}"),
            Buffer::I32(v) => format!("{v:?}"),
            Buffer::F64(v) => format!("{:?}", v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()),
            Buffer::Bool(v) => format!("{v:?}"),
            Buffer::Str(s, _) => format!("{:?}", s.iter().collect::<Vec<_>>()),
            Buffer::Id(n) => format!("{n}"),
            Buffer::Args(s, order) => format!("{order:?} {:?}", s.iter().collect::<Vec<_>>()),
        }
    }

    #[test]
    fn a_row_groups_parameters_fill_as_each_row_decodes() {
        use Letter::*;
        let formats = [vec![Pointer, Unsigned, Double, Bool, Signed], vec![Word, String, Unsigned, String], vec![]];
        for format in formats {
            for order in [Order::Little, Order::Big] {
                // Rows of the format, and the same rows with bytes after the last value (as a
                // later minor version's records may have), which every column ignores.
                for trailing in [0, 3] {
                    let mut args = Strings::default();
                    let mut want: Vec<Buffer> =
                        format.iter().map(|l| Column::new("p", Shape::Param(column_type(*l))).buffer()).collect();
                    for i in 0..100u64 {
                        let mut row = Vec::new();
                        for l in &format {
                            let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                            let bytes: Vec<u8> = match l {
                                Unsigned => (x as u32).to_le_bytes().to_vec(),
                                Bool => vec![u8::from(x % 2 == 1)],
                                String => {
                                    let text = if i % 3 == 0 { vec![b'a'; (i % 7) as usize] } else { vec![0xff, b'x'] };
                                    let mut s = (text.len() as u16).to_le_bytes().to_vec();
                                    s.extend(text);
                                    s
                                }
                                _ => x.to_le_bytes().to_vec(),
                            };
                            let prefix = if *l == String { 2 } else { bytes.len() };
                            let (head, text) = bytes.split_at(prefix);
                            let mut head = head.to_vec();
                            if order == Order::Big {
                                head.reverse();
                            }
                            row.extend(head);
                            row.extend(text);
                        }
                        push_values(&mut want, &format, order, &row);
                        row.extend(std::iter::repeat_n(7, trailing));
                        args.push(&row);
                    }
                    let mut buffers: Vec<Buffer> = (0..FIXED_COLUMNS).map(|_| Buffer::I64(Vec::new())).collect();
                    buffers.extend(format.iter().map(|l| Column::new("p", Shape::Param(column_type(*l))).buffer()));
                    buffers.push(Buffer::Args(args, order));
                    let fill = fill_params(format.clone(), format.len());
                    assert_eq!(fill.columns, FIXED_COLUMNS..FIXED_COLUMNS + format.len());
                    (fill.make)(&mut buffers);
                    let got: Vec<std::string::String> = buffers[fill.columns.clone()].iter().map(values).collect();
                    let want: Vec<std::string::String> = want.iter().map(values).collect();
                    assert_eq!(got, want, "{format:?} {order:?} trailing {trailing}");
                    assert!(got.iter().all(|v| v.len() > 2), "every column filled: {got:?}");
                }
            }
        }
    }

    #[test]
    fn days_are_dates_of_the_gregorian_calendar() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(-1), "1969-12-31");
        assert_eq!(date(20_418), "2025-11-26");
        assert_eq!(date(20_783), "2026-11-26");
        assert_eq!(date(11_016), "2000-02-29");
        assert_eq!(date(i64::MIN), "0001-01-01");
        assert_eq!(date(i64::MAX), "9999-12-31");
        assert_eq!(day_of(-1), -1, "a microsecond before 1970 is on 1969-12-31");
        assert_eq!(day_of(DAY_MICROS), 1);
        assert_eq!(partition(20_783), "date=2026-11-26");
    }
}
