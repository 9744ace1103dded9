//! The Parquet export's tables and rows: the columns of each table and their Parquet types
//! and encodings, a table file's writer and column buffers, and the rows put into them (an
//! event's fixed columns and argument bytes, the parameter columns the encoder's workers
//! decode of them, and the cells of the `logs` and `threads` rows).

use super::encode::{Buffer, Encoder, Fill, Strings};
use super::errors::{Result, io_error, parquet_error};
use crate::export::tables::{ColumnType, column_type, fields_json, has_fields, param_columns};
use event_format::decode::{Desc, Event};
use event_format::letter::Letter;
use event_format::wire::{Order, STRING_TRUNCATED};
use parquet::basic::{Compression, Encoding, LogicalType, Repetition, TimeUnit, Type as Physical};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnPath, Type};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The columns before the parameters in every event table, and `date`, the partition's
/// column, which engines add: a parameter takes none of these names.
const RESERVED_COLUMNS: [&str; 6] = ["log", "thread", "ticks", "ns", "time", "date"];

/// The column after the parameters of the `tracing` bridge's events: their fields, as JSON.
const FIELDS_COLUMN: &str = "fields_json";

/// The most rows in a row group: small enough that the encoder's workers work while the
/// log is read, and that the buffers of a row group (a table's being filled, its spare, and
/// those in the encoder) are soon reused rather than new memory: with 2^17 rows a 4 M-event
/// log of 4 event types took 34,000 page faults and 140 MB at its peak, with 2^15 14,000 and
/// 46 MB, and 10% less CPU time (BENCHMARKS.md); about 1 MB of Parquet per row group of
/// such a table, which DuckDB and Polars read as fast as fewer larger ones.
pub(super) const ROW_GROUP_ROWS: usize = 1 << 15;

/// The physical shape of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
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
pub(super) struct Column {
    name: String,
    pub(super) shape: Shape,
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
pub(super) enum Cell {
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
pub(super) fn bits32(v: u32) -> i32 {
    i32::from_ne_bytes(v.to_ne_bytes())
}

/// A count or size as a signed column holds it.
pub(super) fn count(v: u64) -> Cell {
    Cell::I64(bits64(v))
}

/// One table file of a log, its writer with the [`Encoder`] under its temporary name, and
/// its buffered rows.
pub(super) struct TableFile {
    pub(super) temp: PathBuf,
    pub(super) path: PathBuf,
    /// Its number at the encoder.
    file: usize,
    buffers: Vec<Buffer>,
    pub(super) rows: usize,
    /// About how many bytes the buffers hold.
    pub(super) bytes: usize,
    /// Bytes a row takes in the buffers, strings aside.
    row_bytes: usize,
    /// The table has the `fields` column.
    fields: bool,
}

impl TableFile {
    /// Creates the file `name` (`<id>.parquet`) in directory `dir`, with `columns` and
    /// key-value metadata, its writer handed to `encoder`; an event table's with the
    /// [`Fill`] of its parameter columns (its rows' arguments kept as recorded).
    pub(super) fn create(
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
    pub(super) fn flush(&mut self, encoder: &mut Encoder) {
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
    pub(super) fn push_cells(&mut self, cells: Vec<Cell>) {
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
    pub(super) fn other_order(&self, order: Order) -> bool {
        matches!(self.buffers.last(), Some(Buffer::Args(args, o)) if *o != order && args.len() > 0)
    }
}

/// An event's row into event table `table`, its `ns` and `time` (`wall`) computed: the
/// fixed columns, the `fields_json` column of the tables that have it, and the argument
/// bytes as recorded, which the worker decodes ([`fill_params`]). Returns the bits of the
/// thread id and ticks or-ed (whether one is above 2^63 - 1).
pub(super) fn push_event(table: &mut TableFile, ns: i64, wall: i64, event: &Event<'_>) -> u64 {
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
pub(super) fn fill_params(format: Vec<Letter>, params: usize) -> Fill {
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

/// The columns of the event table of `desc`.
pub(super) fn event_columns(desc: &Desc) -> Vec<Column> {
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

pub(super) fn logs_columns() -> Vec<Column> {
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

/// The `histograms` table: one row per non-empty bucket of each `Histogram` record
/// (docs/OUTPUT.md, "Tables").
pub(super) fn histograms_columns() -> Vec<Column> {
    [
        ("log", Shape::Param(ColumnType::Utf8)),
        ("thread", Shape::Int64),
        ("ticks", Shape::Int64),
        ("ns", Shape::Int64),
        ("since_ns", Shape::Int64),
        ("histogram", Shape::Param(ColumnType::Utf8)),
        ("event_set", Shape::Param(ColumnType::Utf8)),
        ("of", Shape::Param(ColumnType::Utf8)),
        ("unit", Shape::Param(ColumnType::Utf8)),
        ("layout", Shape::Param(ColumnType::Utf8)),
        ("bucket", Shape::Int64),
        ("low", Shape::Int64),
        ("high", Shape::Int64),
        ("count", Shape::Int64),
    ]
    .into_iter()
    .map(|(name, shape)| Column::new(name, shape))
    .collect()
}

pub(super) fn threads_columns() -> Vec<Column> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
