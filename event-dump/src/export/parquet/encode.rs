//! The Parquet export's encoder: a thread that writes row groups (Parquet's encodings,
//! statistics, Snappy) while the export reads the log on, so that the reading and the
//! encoding run on two cores. The export fills a table's column [`Buffer`]s and hands them
//! over whole ([`Encoder::write`]); the encoder gives them back emptied, their memory kept,
//! for the table's next row group ([`Encoder::spare`]).
//!
//! Memory: at most [`QUEUE`] (one) job waits while one is written, so at most two row groups
//! are in the encoder beside the export's own buffers, and each table keeps at most one emptied set
//! of buffers.

use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::writer::SerializedFileWriter;
use std::fs::File;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

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

    /// The strings as `ByteArray`s, the buffer handed over.
    fn take(&mut self) -> Vec<ByteArray> {
        let all = bytes::Bytes::from(std::mem::take(&mut self.bytes));
        let mut start = 0;
        let arrays = self
            .ends
            .iter()
            .map(|&end| {
                let a = ByteArray::from(all.slice(start..end));
                start = end;
                a
            })
            .collect();
        self.ends.clear();
        arrays
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
}

impl Buffer {
    /// An empty buffer of the same kind.
    fn empty_like(&self) -> Buffer {
        match self {
            Buffer::I64(_) => Buffer::I64(Vec::new()),
            Buffer::I32(_) => Buffer::I32(Vec::new()),
            Buffer::F64(_) => Buffer::F64(Vec::new()),
            Buffer::Bool(_) => Buffer::Bool(Vec::new()),
            Buffer::Str(_, defs) => Buffer::Str(Strings::default(), defs.as_ref().map(|_| Vec::new())),
        }
    }
}

/// Writes `buffers` (one per column, in order) as one row group of `writer`, and empties
/// them.
fn write_group(writer: &mut SerializedFileWriter<File>, buffers: &mut [Buffer]) -> Result<(), ParquetError> {
    let mut group = writer.next_row_group()?;
    for buffer in buffers {
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
                let arrays = v.take();
                column.typed::<ByteArrayType>().write_batch(&arrays, defs.as_deref(), None)?;
                if let Some(d) = defs {
                    d.clear();
                }
            }
        }
        column.close()?;
    }
    group.close()?;
    Ok(())
}

/// Row groups that wait for the encoder beside the one it writes: a bound on memory (4 made
/// no difference to the time on the 2-core machine of BENCHMARKS.md).
const QUEUE: usize = 1;

enum Job {
    /// A file's writer; its number is how many were opened before it.
    Open(Box<SerializedFileWriter<File>>),
    /// A row group of file `.0`.
    Write(usize, Vec<Buffer>),
}

/// Why the encoder failed: the number of the file it was writing, and the error.
pub(super) type Failure = (usize, ParquetError);

/// The encoder thread and the channels to it.
pub(super) struct Encoder {
    jobs: Option<SyncSender<Job>>,
    returned: Receiver<(usize, Vec<Buffer>)>,
    /// The thread, or why the system refused one.
    thread: std::result::Result<JoinHandle<Result<Vec<File>, Failure>>, String>,
    /// Emptied buffers given back, by file.
    spares: Vec<Option<Vec<Buffer>>>,
}

impl Encoder {
    /// Starts the thread. If the system refuses one, every job is dropped and
    /// [`finish`](Encoder::finish) says why.
    pub(super) fn start() -> Encoder {
        let (jobs, inbox) = sync_channel::<Job>(QUEUE);
        let (give_back, returned) = channel();
        let thread = std::thread::Builder::new()
            .name("parquet-encoder".into())
            .spawn(move || run(&inbox, &give_back))
            .map_err(|e| format!("cannot start the encoder's thread: {e}"));
        let jobs = thread.is_ok().then_some(jobs);
        Encoder { jobs, returned, thread, spares: Vec::new() }
    }

    /// Hands over a file's writer; returns its number.
    pub(super) fn open(&mut self, writer: SerializedFileWriter<File>) -> usize {
        if let Some(jobs) = &self.jobs {
            // A closed channel means the encoder failed: finish() says why.
            let _ = jobs.send(Job::Open(Box::new(writer)));
        }
        self.spares.push(None);
        self.spares.len() - 1
    }

    /// Hands over a row group of file `file`.
    pub(super) fn write(&mut self, file: usize, buffers: Vec<Buffer>) {
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Write(file, buffers));
        }
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

    /// Waits for every row group to be written and every file's footer; the files, in the
    /// order they were opened, not yet synced.
    pub(super) fn finish(mut self) -> Result<Vec<File>, Failure> {
        self.jobs = None;
        match self.thread {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|_| Err((0, ParquetError::General("the Parquet encoder's thread stopped".into())))),
            Err(why) => Err((0, ParquetError::General(why))),
        }
    }
}

/// The encoder thread: writes each job; after a failure, only drains the channel (the export
/// finds out at the end).
fn run(inbox: &Receiver<Job>, give_back: &Sender<(usize, Vec<Buffer>)>) -> Result<Vec<File>, Failure> {
    let mut writers: Vec<Box<SerializedFileWriter<File>>> = Vec::new();
    let mut failure = None;
    for job in inbox {
        match job {
            Job::Open(writer) => writers.push(writer),
            Job::Write(i, mut buffers) => {
                if failure.is_none()
                    && let Some(writer) = writers.get_mut(i)
                    && let Err(e) = write_group(writer, &mut buffers)
                {
                    failure = Some((i, e));
                }
                let _ = give_back.send((i, buffers));
            }
        }
    }
    if let Some(f) = failure {
        return Err(f);
    }
    writers.into_iter().enumerate().map(|(i, w)| w.into_inner().map_err(|e| (i, e))).collect()
}
