//! Records: a 16-bit code, a 16-bit length, a 32-bit time delta, then the arguments packed
//! by format letter (docs/FORMAT.md, "Records").

use super::{Order, RECORD_HEADER_LEN, STRING_TRUNCATED, Take, field};
use event_def::builtin::{
    CALLSITE, STOP, STOP_ARGS, STOP_DISK_FULL, STOP_FIXED, STOP_ROTATED, STOP_STOPPED, STOP_WRITE_ERROR, TIME_EXTEND,
    TIME_EXTEND_FIXED,
};
use event_def::letter::Letter;
use std::fmt;

/// Why a record could not be decoded. The block it is in passed its CRC, so these mean the
/// writer broke the format; the records before it in the block are good.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordError {
    /// Fewer bytes remain in the block than a record header needs.
    Truncated {
        /// Offset of the record in the block's records area.
        offset: usize,
        /// Bytes left.
        remaining: usize,
    },
    /// The record's length field is below 8 or runs past the block's used bytes. Nothing after
    /// it in the block can be delimited.
    BadLength {
        /// Offset of the record in the block's records area.
        offset: usize,
        /// Its code.
        code: u16,
        /// Its length field.
        length: u16,
        /// Bytes left in the block from its start.
        remaining: usize,
    },
    /// The arguments do not match the event's format; the record is skipped by its length.
    BadArguments {
        /// Offset of the record in the block's records area.
        offset: usize,
        /// Its code.
        code: u16,
        /// What is wrong.
        why: &'static str,
    },
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Truncated { offset, remaining } => {
                write!(f, "record at offset {offset}: only {remaining} bytes left, less than a record header")
            }
            RecordError::BadLength { offset, code, length, remaining } => write!(
                f,
                "record at offset {offset} (code {code:#06x}): length {length} is not in 8..={remaining}; the rest of the block is skipped"
            ),
            RecordError::BadArguments { offset, code, why } => {
                write!(f, "record at offset {offset} (code {code:#06x}): {why}; the record is skipped")
            }
        }
    }
}

impl std::error::Error for RecordError {}

/// A record as delimited in a block, before its arguments are interpreted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// The event code.
    pub code: u16,
    /// Its absolute time in ticks.
    pub time: u64,
    /// Its argument bytes (the record minus its 8-byte header).
    pub args: &'a [u8],
    /// Its offset in the block's records area.
    pub offset: usize,
}

/// What a clean-stop marker says (a `Stop` record, [`crate::builtin::STOP`], since format
/// 2.0.1): what the writer wrote before the marker's block, as it counted it, and (since
/// 2.0.3) why the stream ends and what the writer could not write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stop {
    /// Blocks the stream held before the marker's block.
    pub blocks: u64,
    /// Events in those blocks: every record but `TimeExtend` (and `Stop`).
    pub events: u64,
    /// Events counted lost in those blocks: the `lost` fields and `Dropped` counts.
    pub lost: u64,
    /// Why the stream ends (since 2.0.3; [`StopCause::Stopped`] in an older marker).
    pub cause: StopCause,
    /// Events the writer held for this stream and could not write (since 2.0.3; 0 in an older
    /// marker, and 0 unless `cause` is [`StopCause::DiskFull`] or [`StopCause::WriteError`]).
    pub unwritten: u64,
}

/// Why a stream ends, as its stop marker says (docs/FORMAT.md, "The clean stop").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StopCause {
    /// 0: the program stopped the recording, or its process exited (every marker before
    /// format 2.0.3).
    #[default]
    Stopped,
    /// 1: the stream is a segment its writer sealed; the recording goes on in the next one.
    Rotated,
    /// 2: the writer could not write for want of space.
    DiskFull,
    /// 3: the writer could not write for another I/O error.
    WriteError,
    /// A cause a later minor version defines: the stream ended, for a reason this reader
    /// does not know.
    Other(u64),
}

impl StopCause {
    /// The cause written as `word` (the marker's fourth argument).
    pub fn from_word(word: u64) -> StopCause {
        match word {
            STOP_STOPPED => StopCause::Stopped,
            STOP_ROTATED => StopCause::Rotated,
            STOP_DISK_FULL => StopCause::DiskFull,
            STOP_WRITE_ERROR => StopCause::WriteError,
            other => StopCause::Other(other),
        }
    }

    /// The word the cause is written as.
    pub fn to_word(self) -> u64 {
        match self {
            StopCause::Stopped => STOP_STOPPED,
            StopCause::Rotated => STOP_ROTATED,
            StopCause::DiskFull => STOP_DISK_FULL,
            StopCause::WriteError => STOP_WRITE_ERROR,
            StopCause::Other(word) => word,
        }
    }

    /// Whether the writer stopped writing the stream because it could not write (a full disk
    /// or another I/O error): events after the marker's counts may be missing.
    pub fn is_failure(self) -> bool {
        matches!(self, StopCause::DiskFull | StopCause::WriteError)
    }
}

impl fmt::Display for StopCause {
    /// `stopped`, `rotated`, `disk full`, `write error`, or `cause N`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopCause::Stopped => f.write_str("stopped"),
            StopCause::Rotated => f.write_str("rotated"),
            StopCause::DiskFull => f.write_str("disk full"),
            StopCause::WriteError => f.write_str("write error"),
            StopCause::Other(word) => write!(f, "cause {word}"),
        }
    }
}

impl Stop {
    /// The marker's arguments, `blocks`, `events`, `lost`, and since 2.0.3 `cause` and
    /// `unwritten`, each a `u64` in `order`; `cause` and `unwritten` read as 0 when `args` ends
    /// before them (a marker of 2.0.1 or 2.0.2); bytes after them (a later minor's) are
    /// ignored. `None` when `args` is shorter than 24 bytes.
    pub fn read(args: &[u8], order: Order) -> Option<Stop> {
        let fixed = args.get(..STOP_FIXED)?;
        let (cause, unwritten) = match args.get(STOP_FIXED..STOP_ARGS) {
            Some(more) => (order.u64(more), order.u64(&more[8..])),
            None => (0, 0),
        };
        Some(Stop {
            blocks: order.u64(fixed),
            events: order.u64(&fixed[8..]),
            lost: order.u64(&fixed[16..]),
            cause: StopCause::from_word(cause),
            unwritten,
        })
    }

    /// Whether `other` says the same counts of what was written before the marker (`blocks`,
    /// `events`, `lost`), whatever either says of the cause and the unwritten events.
    pub fn same_counts(&self, other: &Stop) -> bool {
        (self.blocks, self.events, self.lost) == (other.blocks, other.events, other.lost)
    }
}

/// The records of one block's used bytes, in order, with absolute times. `TimeExtend` records
/// are applied and not yielded; `Stop` records (the clean-stop marker) are not yielded either,
/// and the last one is kept for [`RecordIter::stop`]. After an error that leaves the records
/// undelimited, the iterator ends.
#[derive(Clone, Debug)]
pub struct RecordIter<'a> {
    bytes: &'a [u8],
    offset: usize,
    order: Order,
    time: u64,
    stop: Option<Stop>,
}

impl<'a> RecordIter<'a> {
    /// The records in `bytes` (a block's records area, `used` bytes long), whose first delta
    /// counts from `base_time`.
    pub fn new(bytes: &'a [u8], order: Order, base_time: u64) -> RecordIter<'a> {
        RecordIter { bytes, offset: 0, order, time: base_time, stop: None }
    }

    /// The clean-stop marker, when it is the last record walked so far: once the iterator
    /// has ended, the marker the block ends with.
    pub fn stop(&self) -> Option<Stop> {
        self.stop
    }

    /// The walk of `bytes` resumed at a [`position`](RecordIter::position) an earlier walk of
    /// the same bytes gave: the record at `offset`, whose delta counts from `time`. A reader
    /// that hands out one record at a time keeps the position instead of the iterator.
    pub fn resume(bytes: &'a [u8], order: Order, (offset, time): (usize, u64)) -> RecordIter<'a> {
        RecordIter { bytes, offset: offset.min(bytes.len()), order, time, stop: None }
    }

    /// Where the walk is: the offset of the next record and the time its delta counts from.
    pub fn position(&self) -> (usize, u64) {
        (self.offset, self.time)
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<RawRecord<'a>, RecordError>;

    // Always inlined: a reader's loop calls it for every record, and `print`'s render loop,
    // grown by its template lookup, left it out of line at `#[inline]` (12 M instructions on
    // 200 000 events, BENCHMARKS.md).
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let rest = &self.bytes[self.offset..];
            if rest.is_empty() {
                return None;
            }
            let offset = self.offset;
            if rest.len() < RECORD_HEADER_LEN {
                self.offset = self.bytes.len();
                return Some(Err(RecordError::Truncated { offset, remaining: rest.len() }));
            }
            let code = self.order.u16(&rest[field::CODE..]);
            let length = self.order.u16(&rest[field::LENGTH..]);
            let delta = self.order.u32(&rest[field::DELTA..]);
            if usize::from(length) < RECORD_HEADER_LEN || usize::from(length) > rest.len() {
                self.offset = self.bytes.len();
                return Some(Err(RecordError::BadLength { offset, code, length, remaining: rest.len() }));
            }
            self.offset += usize::from(length);
            let args = &rest[RECORD_HEADER_LEN..usize::from(length)];
            self.time = self.time.wrapping_add(u64::from(delta));
            if code == TIME_EXTEND {
                if args.len() < TIME_EXTEND_FIXED {
                    return Some(Err(RecordError::BadArguments {
                        offset,
                        code,
                        why: "a TimeExtend record needs an 8-byte time",
                    }));
                }
                self.time = self.order.u64(args);
                continue;
            }
            if code == CALLSITE {
                // A definition the block's records by callsite were expanded with
                // (`callsites`): no event of its own.
                continue;
            }
            if code == STOP {
                match Stop::read(args, self.order) {
                    Some(stop) => {
                        self.stop = Some(stop);
                        continue;
                    }
                    None => {
                        return Some(Err(RecordError::BadArguments {
                            offset,
                            code,
                            why: "a Stop record needs three 8-byte counts",
                        }));
                    }
                }
            }
            // A record after a marker: the marker was not the block's last.
            self.stop = None;
            return Some(Ok(RawRecord { code, time: self.time, args, offset }));
        }
    }
}

/// Checks that `args` holds one value per letter of `format`: every length within the
/// record, every bool 0 or 1. Bytes after the last value are allowed (a newer minor version
/// may append arguments to a built-in event) and ignored.
pub fn validate_args(format: &[Letter], args: &[u8], order: Order) -> Result<(), &'static str> {
    let mut take = Take { rest: args, order };
    for &letter in format {
        match letter {
            Letter::String => {
                let prefix = take.u16().ok_or("a string's length runs past the record")?;
                take.bytes(usize::from(prefix & !STRING_TRUNCATED)).ok_or("a string runs past the record")?;
            }
            Letter::Bool => {
                let b = take.u8().ok_or("the arguments run past the record")?;
                if b > 1 {
                    return Err("a bool is neither 0 nor 1");
                }
            }
            fixed => {
                // Every letter but S has a fixed size.
                take.bytes(fixed.min_size()).ok_or("the arguments run past the record")?;
            }
        }
    }
    Ok(())
}
