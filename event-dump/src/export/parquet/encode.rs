//! The Parquet export's encoder: threads that encode row groups (Parquet's encodings,
//! statistics, Snappy) while the export reads the log on, so that the reading and the
//! encoding share the machine's cores. The export fills a table's column [`Buffer`]s and
//! hands them over whole ([`Encoder::write`]); a worker encodes each column into a column
//! chunk in memory, and the chunks of a file's row groups are appended to the file in the
//! order they were handed over, whichever worker finished first, so the file is the same
//! byte for byte with any number of workers. The buffers come back emptied, their memory
//! kept, for the table's next row group ([`Encoder::spare`]).
//!
//! An event table's parameters are decoded on the worker too: the export keeps each row's
//! argument bytes as recorded ([`Buffer::Args`]), and the table's [`Fill`] makes the
//! parameter columns of them before the row group is encoded. The reading thread, which
//! every row passes through, copies one run of bytes per row instead of decoding a value
//! per parameter, and the workers, which share the other cores, decode them.
//!
//! A thread of the encoder syncs each file every [`EARLY_SYNC_BYTES`] appended, while the
//! export goes on, so that the export's own sync of the finished files waits for little.
//!
//! The `log` column of an event table holds one value, the recording id, in every row: it
//! is kept as a count ([`Buffer::Id`]) and its chunk is encoded once per row count and
//! appended as many times as a row group of that count is written.
//!
//! Memory: at most [`QUEUE`] jobs wait while each worker encodes one, so at most
//! `QUEUE + workers` row groups are in the encoder beside the export's own buffers (and
//! the chunks of a file's row groups encoded before an earlier one of the same file, at
//! most one per worker); each table keeps at most one emptied set of buffers, and each
//! worker the parameter columns ([`Pool`]) and the `ByteArray`s of one row group.

use bytes::Bytes;
use event_format::wire::Order;
use parquet::column::writer::{ColumnCloseResult, ColumnWriter, get_column_writer};
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

type Result<T> = std::result::Result<T, ParquetError>;

/// Strings of a column not yet written: their bytes one after another and where each ends,
/// so that a row costs no allocation; cut into `ByteArray`s (slices of one buffer) when the
/// row group is written.
#[derive(Default)]
pub(super) struct Strings {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Strings {
    pub(super) fn push(&mut self, s: &[u8]) {
        self.bytes.extend_from_slice(s);
        self.ends.push(self.bytes.len());
    }

    /// The strings, in the order pushed.
    pub(super) fn iter(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let s = self.bytes.get(start..end).unwrap_or_default();
            start = end;
            s
        })
    }

    /// The number of strings.
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Their bytes, one after another.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// The strings as `ByteArray`s into `arrays` (emptied first: a worker's, its memory
    /// kept from row group to row group), the buffer handed over (and a new one of its size
    /// left, for the next row group's strings).
    fn take_into(&mut self, arrays: &mut Vec<ByteArray>) {
        let size = self.bytes.len();
        let all = Bytes::from(std::mem::replace(&mut self.bytes, Vec::with_capacity(size)));
        let mut start = 0;
        arrays.clear();
        arrays.extend(self.ends.iter().map(|&end| {
            let a = ByteArray::from(all.slice(start..end));
            start = end;
            a
        }));
        self.ends.clear();
    }
}

/// A column's values not yet written. Unsigned values are kept as their bits (Parquet
/// stores UINT64 in INT64 and UINT32 in INT32).
pub(super) enum Buffer {
    I64(Vec<i64>),
    I32(Vec<i32>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    /// Strings, and the definition levels of a nullable column (1 there, 0 null).
    Str(Strings, Option<Vec<i16>>),
    /// The log's recording id (given to [`Encoder::start`]) in this many rows: an event
    /// table's `log` column.
    Id(usize),
    /// A leaf of a nested column (a list's elements, a map's keys or values: the `spans`
    /// table's): the values present (an `I64` or a `Str` without levels), and each value's or
    /// empty slot's definition and repetition levels.
    Nested(Box<Buffer>, Vec<i16>, Vec<i16>),
    /// Not a column: an event table's rows' argument bytes as recorded, in the stream's byte
    /// order, which the table's [`Fill`] decodes into its parameter columns. The last buffer
    /// of a table that has a [`Fill`].
    Args(Strings, Order),
}

/// Makes a row group's parameter columns of its [`Buffer::Args`], on the worker that
/// encodes it: `make` is given the buffers of all its columns, then its `Args`, and fills
/// the columns `columns` (empty until then; the worker lends them the memory of another
/// row group's, [`Pool`]).
pub(super) struct Fill {
    pub(super) columns: std::ops::Range<usize>,
    pub(super) make: Make,
}

/// What fills a [`Fill`]'s columns.
pub(super) type Make = Box<dyn Fn(&mut [Buffer]) + Send + Sync>;

/// A worker's emptied columns that a [`Fill`] filled, their memory kept for the next row
/// group's: the buffers of the parameters of the row groups handed over and of those
/// waiting hold no memory. At most as many as the most parameters of a table.
#[derive(Default)]
struct Pool(Vec<Buffer>);

impl Pool {
    /// Puts a kept buffer of the kind of `slot` (an empty one) in its place.
    fn lend(&mut self, slot: &mut Buffer) {
        let kind = |b: &Buffer| (std::mem::discriminant(b), matches!(b, Buffer::Str(_, Some(_))));
        if let Some(i) = self.0.iter().position(|b| kind(b) == kind(slot)) {
            *slot = self.0.swap_remove(i);
        }
    }

    /// Keeps the memory of `slot` (emptied), leaving it an empty buffer without any.
    fn keep(&mut self, slot: &mut Buffer) {
        let none = slot.empty_like();
        self.0.push(std::mem::replace(slot, none));
    }
}

impl Buffer {
    /// An empty buffer of the same kind, with room for as many values (and string bytes) as
    /// it holds: the next row group of a table is filled without growing its buffers (a
    /// copy of what they held each time they double, and the pages of the new memory).
    fn empty_like(&self) -> Buffer {
        match self {
            Buffer::I64(v) => Buffer::I64(Vec::with_capacity(v.len())),
            Buffer::I32(v) => Buffer::I32(Vec::with_capacity(v.len())),
            Buffer::F64(v) => Buffer::F64(Vec::with_capacity(v.len())),
            Buffer::Bool(v) => Buffer::Bool(Vec::with_capacity(v.len())),
            Buffer::Str(v, defs) => Buffer::Str(
                Strings { bytes: Vec::with_capacity(v.bytes.len()), ends: Vec::with_capacity(v.ends.len()) },
                defs.as_ref().map(|d| Vec::with_capacity(d.len())),
            ),
            Buffer::Id(_) => Buffer::Id(0),
            Buffer::Nested(values, defs, reps) => Buffer::Nested(
                Box::new(values.empty_like()),
                Vec::with_capacity(defs.len()),
                Vec::with_capacity(reps.len()),
            ),
            Buffer::Args(v, order) => Buffer::Args(
                Strings { bytes: Vec::with_capacity(v.bytes.len()), ends: Vec::with_capacity(v.ends.len()) },
                *order,
            ),
        }
    }
}

/// A column chunk encoded in memory: its bytes, and what closing its writer said (the
/// offsets in it are from the start of `bytes`).
#[derive(Clone)]
struct Chunk {
    bytes: Bytes,
    close: ColumnCloseResult,
}

/// Encodes `buffer` as a column chunk of column `descr` in memory, and empties it. `id` is
/// the value of a [`Buffer::Id`], whose chunk is taken from `ids` (chunks by row count) or
/// encoded once and kept there: the `log` column has the same descriptor and properties in
/// every event table (`append_column` refuses a chunk of another descriptor).
fn encode_column(
    descr: &ColumnDescPtr,
    props: &WriterPropertiesPtr,
    buffer: &mut Buffer,
    id: &[u8],
    ids: &mut HashMap<usize, Chunk>,
    arrays: &mut Vec<ByteArray>,
) -> Result<Chunk> {
    let rows = match buffer {
        Buffer::Id(rows) => std::mem::take(rows),
        _ => return encode(descr, props, buffer, None, arrays),
    };
    if let Some(chunk) = ids.get(&rows) {
        return Ok(chunk.clone());
    }
    let values = vec![ByteArray::from(Bytes::copy_from_slice(id)); rows];
    let chunk = encode(descr, props, &mut Buffer::Id(0), Some(&values), arrays)?;
    ids.insert(rows, chunk.clone());
    Ok(chunk)
}

/// Encodes `buffer` (or, for a [`Buffer::Id`], `ids`) as a column chunk in memory, through
/// the `parquet` crate's column writer with the file's properties: the chunk is the bytes a
/// column writer of the file writes. `arrays`: room for a string column's `ByteArray`s,
/// left empty.
fn encode(
    descr: &ColumnDescPtr,
    props: &WriterPropertiesPtr,
    buffer: &mut Buffer,
    ids: Option<&[ByteArray]>,
    arrays: &mut Vec<ByteArray>,
) -> Result<Chunk> {
    let mut sink = TrackedWrite::new(Vec::new());
    let pages = Box::new(SerializedPageWriter::new(&mut sink));
    let close = match (get_column_writer(descr.clone(), props.clone(), pages), buffer) {
        (ColumnWriter::Int64ColumnWriter(mut w), Buffer::I64(v)) => {
            w.write_batch(v, None, None)?;
            v.clear();
            w.close()?
        }
        (ColumnWriter::Int32ColumnWriter(mut w), Buffer::I32(v)) => {
            w.write_batch(v, None, None)?;
            v.clear();
            w.close()?
        }
        (ColumnWriter::DoubleColumnWriter(mut w), Buffer::F64(v)) => {
            w.write_batch(v, None, None)?;
            v.clear();
            w.close()?
        }
        (ColumnWriter::BoolColumnWriter(mut w), Buffer::Bool(v)) => {
            w.write_batch(v, None, None)?;
            v.clear();
            w.close()?
        }
        (ColumnWriter::ByteArrayColumnWriter(mut w), Buffer::Str(v, defs)) => {
            v.take_into(arrays);
            let written = w.write_batch(arrays, defs.as_deref(), None);
            arrays.clear();
            written?;
            if let Some(d) = defs {
                d.clear();
            }
            w.close()?
        }
        (ColumnWriter::ByteArrayColumnWriter(mut w), Buffer::Id(_)) => {
            w.write_batch(ids.unwrap_or_default(), None, None)?;
            w.close()?
        }
        (ColumnWriter::Int64ColumnWriter(mut w), Buffer::Nested(values, defs, reps)) => {
            if let Buffer::I64(v) = values.as_mut() {
                // A nullable column that repeats nothing has no repetition levels.
                w.write_batch(v, Some(defs), (!reps.is_empty()).then_some(&reps[..]))?;
                v.clear();
            }
            defs.clear();
            reps.clear();
            w.close()?
        }
        (ColumnWriter::ByteArrayColumnWriter(mut w), Buffer::Nested(values, defs, reps)) => {
            if let Buffer::Str(v, _) = values.as_mut() {
                v.take_into(arrays);
                let written = w.write_batch(arrays, Some(defs), (!reps.is_empty()).then_some(&reps[..]));
                arrays.clear();
                written?;
            }
            defs.clear();
            reps.clear();
            w.close()?
        }
        _ => return Err(ParquetError::General(format!("column {} of another type than its values", descr.name()))),
    };
    Ok(Chunk { bytes: Bytes::from(sink.into_inner()?), close })
}

/// Row groups that wait for a worker beside those the workers encode: a bound on memory.
/// Tables filled at like rates (a log's event types recorded in a steady mix) hand their row
/// groups over at about the same time; a queue of one stopped the reading at the third of
/// them until a worker was free (in a 4 M-event log of 4 event types, at 23 of 35 row
/// groups, 110-160 ms of a 0.6 s export), and the workers then waited for the next round
/// while the log was read. Four take a round of four tables without stopping the reading.
const QUEUE: usize = 4;

/// The most workers, whatever the number of cores: a bound on memory (a row group each),
/// and more than the reading keeps busy.
const MOST_WORKERS: usize = 4;

/// A file's writer and what its workers share.
struct Shared {
    /// The file's columns.
    columns: Vec<ColumnDescPtr>,
    /// What makes the parameter columns of a row group's [`Buffer::Args`]; `None` for a
    /// table whose buffers are its columns.
    fill: Option<Fill>,
    props: WriterPropertiesPtr,
    state: Mutex<FileState>,
    /// The file, a second handle: synced early ([`EARLY_SYNC_BYTES`]). `None` where the
    /// system gave no second handle.
    early: Option<File>,
}

/// Bytes appended to a file after which it is synced on the encoder's sync thread while the
/// export goes on, so that the sync of the finished files (which the export waits for) has
/// only the rest to write: about 30 ms of a 0.4 s export of a 4 M-event log otherwise.
const EARLY_SYNC_BYTES: usize = 1 << 20;

/// A file being written: the row groups are appended in the order they were handed over.
struct FileState {
    writer: Option<SerializedFileWriter<File>>,
    /// The number of the next row group to append.
    next: u64,
    /// Row groups encoded before an earlier one: their chunks, by number.
    waiting: BTreeMap<u64, Vec<Chunk>>,
    /// The first error, after which nothing more is written to the file.
    failure: Option<ParquetError>,
    /// The file's size when an early sync was last asked for.
    synced: usize,
}

impl FileState {
    /// Appends row group `number` when its turn comes, and those waiting for it; whether the
    /// file is due an early sync ([`EARLY_SYNC_BYTES`]).
    fn append(&mut self, number: u64, chunks: Vec<Chunk>) -> bool {
        self.waiting.insert(number, chunks);
        while let Some(chunks) = self.waiting.remove(&self.next) {
            self.next += 1;
            if self.failure.is_some() {
                continue;
            }
            let Some(writer) = self.writer.as_mut() else { continue };
            if let Err(e) = append_group(writer, chunks) {
                self.failure = Some(e);
            }
        }
        let size = self.writer.as_ref().map_or(0, SerializedFileWriter::bytes_written);
        let due = self.failure.is_none() && size >= self.synced + EARLY_SYNC_BYTES;
        if due {
            self.synced = size;
        }
        due
    }
}

/// The encoder's sync thread: syncs each file it is given (its data written so far); an
/// error is the file's failure, which [`Encoder::finish`] reports (a failed sync may leave
/// the next one nothing to report).
fn sync_early(files: &Receiver<Arc<Shared>>) {
    for shared in files {
        if let Some(Err(e)) = shared.early.as_ref().map(File::sync_data)
            && let Ok(mut state) = shared.state.lock()
            && state.failure.is_none()
        {
            state.failure = Some(ParquetError::External(Box::new(e)));
        }
    }
}

/// Appends a row group of encoded chunks (one per column, in order) to `writer`.
fn append_group(writer: &mut SerializedFileWriter<File>, chunks: Vec<Chunk>) -> Result<()> {
    let mut group = writer.next_row_group()?;
    for chunk in chunks {
        group.append_column(&chunk.bytes, chunk.close)?;
    }
    group.close()?;
    Ok(())
}

/// A row group to encode: row group `number` of file `file`.
struct Job {
    file: usize,
    shared: Arc<Shared>,
    number: u64,
    buffers: Vec<Buffer>,
}

/// Why the encoder failed: the number of the file it was writing, and the error.
pub(super) type Failure = (usize, ParquetError);

/// The encoder's workers and the channels to them.
pub(super) struct Encoder {
    jobs: Option<SyncSender<Job>>,
    returned: Receiver<(usize, Vec<Buffer>)>,
    /// The workers, or why the system refused every one.
    workers: std::result::Result<Vec<JoinHandle<()>>, String>,
    /// The files, in the order they were opened.
    files: Vec<Arc<Shared>>,
    /// The number of each file's next row group.
    numbers: Vec<u64>,
    /// Emptied buffers given back, by file.
    spares: Vec<Option<Vec<Buffer>>>,
    /// The sync thread ([`sync_early`]) and the channel to it (a clone with each worker), if
    /// the system gave a thread.
    syncer: Option<(Sender<Arc<Shared>>, JoinHandle<()>)>,
}

impl Encoder {
    /// Starts the workers, one per core (at most [`MOST_WORKERS`]); `id` is the value of the
    /// [`Buffer::Id`] columns. If the system refuses every thread, every job is dropped and
    /// [`finish`](Encoder::finish) says why.
    pub(super) fn start(id: &[u8]) -> Encoder {
        let (jobs, inbox) = sync_channel::<Job>(QUEUE);
        let inbox = Arc::new(Mutex::new(inbox));
        let (give_back, returned) = channel();
        let count = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, MOST_WORKERS);
        let (to_sync, synced) = channel();
        let syncer = std::thread::Builder::new()
            .name("parquet-sync-early".into())
            .spawn(move || sync_early(&synced))
            .ok()
            .map(|thread| (to_sync, thread));
        let mut workers = Vec::new();
        let mut refused = None;
        for n in 0..count {
            let (inbox, give_back, id) = (Arc::clone(&inbox), give_back.clone(), id.to_vec());
            let to_sync = syncer.as_ref().map(|(to_sync, _)| to_sync.clone());
            match std::thread::Builder::new()
                .name(format!("parquet-encoder-{n}"))
                .spawn(move || work(&inbox, &give_back, to_sync.as_ref(), &id))
            {
                Ok(worker) => workers.push(worker),
                Err(e) => refused = Some(format!("cannot start the encoder's thread: {e}")),
            }
        }
        let workers = match refused {
            Some(why) if workers.is_empty() => Err(why),
            _ => Ok(workers),
        };
        let jobs = workers.is_ok().then_some(jobs);
        Encoder { jobs, returned, workers, files: Vec::new(), numbers: Vec::new(), spares: Vec::new(), syncer }
    }

    /// Hands over a file's writer, and for an event table what makes its parameter columns
    /// ([`Fill`]); returns its number.
    pub(super) fn open(&mut self, writer: SerializedFileWriter<File>, fill: Option<Fill>) -> usize {
        let descr = writer.schema_descr();
        let columns = (0..descr.num_columns()).map(|i| descr.column(i)).collect();
        let props = Arc::clone(writer.properties());
        let early = writer.inner().try_clone().ok();
        let state = FileState { writer: Some(writer), next: 0, waiting: BTreeMap::new(), failure: None, synced: 0 };
        self.files.push(Arc::new(Shared { columns, fill, props, state: Mutex::new(state), early }));
        self.numbers.push(0);
        self.spares.push(None);
        self.files.len() - 1
    }

    /// Hands over a row group of file `file`.
    pub(super) fn write(&mut self, file: usize, buffers: Vec<Buffer>) {
        let (Some(jobs), Some(shared), Some(number)) = (&self.jobs, self.files.get(file), self.numbers.get_mut(file))
        else {
            return;
        };
        let job = Job { file, shared: Arc::clone(shared), number: *number, buffers };
        *number += 1;
        // A closed channel means every worker stopped: finish() says why.
        let _ = jobs.send(job);
    }

    /// Empty buffers for file `file`'s next row group, shaped as `like`: those the encoder
    /// gave back, or new ones.
    pub(super) fn spare(&mut self, file: usize, like: &[Buffer]) -> Vec<Buffer> {
        while let Ok((i, buffers)) = self.returned.try_recv() {
            if let Some(slot) = self.spares.get_mut(i) {
                *slot = Some(buffers);
            }
        }
        match self.spares.get_mut(file).and_then(Option::take) {
            Some(buffers) => buffers,
            None => like.iter().map(Buffer::empty_like).collect(),
        }
    }

    /// Waits for every row group to be written, then writes every file's footer; the files,
    /// in the order they were opened, not yet synced.
    pub(super) fn finish(mut self) -> std::result::Result<Vec<File>, Failure> {
        self.jobs = None;
        let stopped = || ParquetError::General("the Parquet encoder's thread stopped".into());
        match self.workers {
            Ok(workers) => {
                let mut panicked = false;
                for worker in workers {
                    panicked |= worker.join().is_err();
                }
                if panicked {
                    return Err((0, stopped()));
                }
            }
            Err(why) => return Err((0, ParquetError::General(why))),
        }
        // The workers gone, the sync thread ends with this last channel to it.
        if let Some((to_sync, thread)) = self.syncer.take() {
            drop(to_sync);
            if thread.join().is_err() {
                return Err((0, stopped()));
            }
        }
        let mut written = Vec::with_capacity(self.files.len());
        for (i, shared) in self.files.iter().enumerate() {
            let mut state = shared.state.lock().map_err(|_| (i, stopped()))?;
            if let Some(e) = state.failure.take() {
                return Err((i, e));
            }
            if state.next != self.numbers[i] {
                return Err((i, stopped()));
            }
            let writer = state.writer.take().ok_or_else(|| (i, stopped()))?;
            written.push(writer.into_inner().map_err(|e| (i, e))?);
        }
        Ok(written)
    }
}

/// A worker: encodes each job's columns, appends them to its file in turn and gives the
/// buffers back; after a file's failure, only drops that file's jobs (the export finds out
/// at the end).
fn work(
    inbox: &Mutex<Receiver<Job>>,
    give_back: &Sender<(usize, Vec<Buffer>)>,
    to_sync: Option<&Sender<Arc<Shared>>>,
    id: &[u8],
) {
    let mut ids = HashMap::new();
    let mut pool = Pool::default();
    let mut arrays = Vec::new();
    loop {
        let job = match inbox.lock() {
            Ok(inbox) => inbox.recv(),
            Err(_) => return,
        };
        let Ok(Job { file, shared, number, mut buffers }) = job else { return };
        let failed = shared.state.lock().map_or(true, |s| s.failure.is_some());
        let chunks: Result<Vec<Chunk>> = if failed {
            Err(ParquetError::General("an earlier row group failed".into()))
        } else if shared.columns.len() + usize::from(shared.fill.is_some()) == buffers.len() {
            if let Some(fill) = &shared.fill {
                for slot in buffers.get_mut(fill.columns.clone()).unwrap_or_default() {
                    pool.lend(slot);
                }
                (fill.make)(&mut buffers);
            }
            // `zip` leaves out the `Args` after the columns.
            shared
                .columns
                .iter()
                .zip(&mut buffers)
                .map(|(descr, buffer)| encode_column(descr, &shared.props, buffer, id, &mut ids, &mut arrays))
                .collect()
        } else {
            Err(ParquetError::General("another number of columns than buffers".into()))
        };
        for buffer in &mut buffers {
            clear(buffer);
        }
        if let Some(fill) = &shared.fill {
            for slot in buffers.get_mut(fill.columns.clone()).unwrap_or_default() {
                pool.keep(slot);
            }
        }
        let _ = give_back.send((file, buffers));
        let Ok(mut state) = shared.state.lock() else { return };
        let due = match chunks {
            Ok(chunks) => state.append(number, chunks),
            Err(e) => {
                if state.failure.is_none() {
                    state.failure = Some(e);
                }
                // Its turn passes: the row groups after it are not written either.
                state.append(number, Vec::new())
            }
        };
        drop(state);
        if due && let Some(to_sync) = to_sync {
            let _ = to_sync.send(Arc::clone(&shared));
        }
    }
}

/// Empties a buffer that an error left full, and a row group's `Args`, decoded.
fn clear(buffer: &mut Buffer) {
    match buffer {
        Buffer::I64(v) => v.clear(),
        Buffer::I32(v) => v.clear(),
        Buffer::F64(v) => v.clear(),
        Buffer::Bool(v) => v.clear(),
        Buffer::Str(s, defs) => {
            s.clear();
            if let Some(d) = defs {
                d.clear();
            }
        }
        Buffer::Id(rows) => *rows = 0,
        Buffer::Nested(values, defs, reps) => {
            clear(values);
            defs.clear();
            reps.clear();
        }
        Buffer::Args(s, _) => s.clear(),
    }
}
