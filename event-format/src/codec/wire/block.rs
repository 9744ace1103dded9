//! Blocks: fixed-size units of a stream, each with a header, records and padding
//! (docs/FORMAT.md, "Blocks").

use super::body;
use super::header::records_stop_cause;
use super::put::{ArgWriter, put_record_header};
use super::record::Stop;
use super::value::{Text, Value, fit_strings, fit_texts, record_len};
use super::{BLOCK_HEADER_LEN, BLOCK_SYNC, FORMAT_VERSION, MAX_RECORD_LEN, Order, RECORD_HEADER_LEN, STRING_MAX};
use event_def::builtin::{DROPPED, STOP, TIME_EXTEND, TIME_EXTEND_FIXED};
use event_def::schema::Version;
use std::borrow::Cow;
use std::fmt;

/// Offsets of the block header's fields.
mod at {
    pub(super) const SYNC: usize = 0;
    pub(super) const FLAGS: usize = 4;
    pub(super) const SEQUENCE: usize = 8;
    pub(super) const THREAD: usize = 16;
    pub(super) const BASE_TIME: usize = 24;
    pub(super) const LOST: usize = 32;
    pub(super) const USED: usize = 40;
    pub(super) const CRC: usize = 44;
}

/// Offset of the `used` field in a block header: a writer that builds a block in place
/// stores it there before [`seal_block`] (or sets it and seals later, as
/// [`seal_block_in_place`] does).
pub const BLOCK_USED_AT: usize = at::USED;

/// Seals a block whose `used` field is already written: computes and stores its CRC.
///
/// # Panics
/// If `used` says more than the block holds.
pub fn seal_block_in_place(order: Order, block: &mut [u8]) {
    let used = order.u32(&block[at::USED..]);
    seal_block(order, block, used);
}

/// A block's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct BlockHeader {
    /// Flags: [`BLOCK_PACKED`](super::BLOCK_PACKED) (since 1.1); a reader skips a block with
    /// a flag it does not know.
    pub flags: u16,
    /// The block's number among its thread's blocks, from 0, consecutive: a gap means
    /// blocks were lost or overwritten.
    pub sequence: u64,
    /// The thread that wrote the block.
    pub thread: u64,
    /// The time the first record's delta counts from, in ticks.
    pub base_time: u64,
    /// Events of this thread lost between its previous block and this one.
    pub lost: u64,
    /// Bytes of records after the header; the rest of the block is padding. In a packed
    /// block, the bytes of the compressed records.
    pub used: u32,
    /// CRC-32 of the header's first 44 bytes and the `used` bytes of records.
    pub crc: u32,
}

impl BlockHeader {
    /// Reads a block header from the first [`BLOCK_HEADER_LEN`] bytes of `b`, whatever they
    /// hold; [`verify_block`] checks it.
    pub fn read(order: Order, b: &[u8]) -> BlockHeader {
        BlockHeader {
            flags: order.u16(&b[at::FLAGS..]),
            sequence: order.u64(&b[at::SEQUENCE..]),
            thread: order.u64(&b[at::THREAD..]),
            base_time: order.u64(&b[at::BASE_TIME..]),
            lost: order.u64(&b[at::LOST..]),
            used: order.u32(&b[at::USED..]),
            crc: order.u32(&b[at::CRC..]),
        }
    }

    /// Writes every field but `used` and `crc` (which [`seal_block`] writes) into the first
    /// [`BLOCK_HEADER_LEN`] bytes of `b`, with the sync word and a zero reserved field.
    pub fn write(&self, order: Order, b: &mut [u8]) {
        order.put_u32(&mut b[at::SYNC..], BLOCK_SYNC);
        order.put_u16(&mut b[at::FLAGS..], self.flags);
        order.put_u16(&mut b[at::FLAGS + 2..], 0);
        order.put_u64(&mut b[at::SEQUENCE..], self.sequence);
        order.put_u64(&mut b[at::THREAD..], self.thread);
        order.put_u64(&mut b[at::BASE_TIME..], self.base_time);
        order.put_u64(&mut b[at::LOST..], self.lost);
    }
}

fn block_crc(block: &[u8], used: usize) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&block[..at::CRC]);
    hasher.update(&block[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used]);
    hasher.finalize()
}

/// Writes `used` and the CRC into a block whose header fields and first `used` bytes of
/// records are written. The padding is left as it is (writers should zero it; readers ignore it).
///
/// # Panics
/// If `block` is shorter than the header plus `used` bytes.
pub fn seal_block(order: Order, block: &mut [u8], used: u32) {
    order.put_u32(&mut block[at::USED..], used);
    let crc = block_crc(block, used as usize);
    order.put_u32(&mut block[at::CRC..], crc);
}

/// Why a block was skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Damage {
    /// The block does not start with the sync word.
    BadSync(u32),
    /// The block has flags this reader does not know.
    UnknownFlags(u16),
    /// A packed block whose compressed records do not decompress into a block.
    BadPacking(String),
    /// The `used` field is larger than the block.
    UsedTooLarge(u32),
    /// The CRC does not match the bytes.
    CrcMismatch {
        /// The CRC in the block header.
        stored: u32,
        /// The CRC of the block's bytes.
        computed: u32,
    },
    /// The stream ends inside the block.
    Truncated {
        /// Bytes there are.
        have: usize,
        /// The block size.
        need: usize,
    },
    /// Reading failed; decoding stops here.
    Unreadable(String),
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Damage::BadSync(w) => write!(f, "no block sync word (found {w:08x}, expected {BLOCK_SYNC:08x})"),
            Damage::UnknownFlags(flags) => {
                write!(f, "unknown block flags {flags:#06x} (a newer format version wrote it)")
            }
            Damage::BadPacking(why) => write!(f, "packed records do not decompress: {why}"),
            Damage::UsedTooLarge(n) => write!(f, "used length {n} is larger than the block"),
            Damage::CrcMismatch { stored, computed } => {
                write!(f, "checksum mismatch (stored {stored:08x}, computed {computed:08x})")
            }
            Damage::Truncated { have, need } => {
                write!(f, "the stream ends inside the block ({have} of {need} bytes)")
            }
            Damage::Unreadable(e) => write!(f, "read error: {e}"),
        }
    }
}

/// Checks a whole block (`block.len()` is the block size, or for a packed block at least
/// its header plus `used` bytes): sync word, flags, used length and CRC. Returns its header
/// when all hold. A packed block's records are then [`unpack_records`].
pub fn verify_block(order: Order, block: &[u8]) -> Result<BlockHeader, Damage> {
    if block.len() < BLOCK_HEADER_LEN {
        return Err(Damage::Truncated { have: block.len(), need: BLOCK_HEADER_LEN });
    }
    let sync = order.u32(&block[at::SYNC..]);
    if sync != BLOCK_SYNC {
        return Err(Damage::BadSync(sync));
    }
    let header = BlockHeader::read(order, block);
    if header.used as usize > block.len() - BLOCK_HEADER_LEN {
        return Err(Damage::UsedTooLarge(header.used));
    }
    let computed = block_crc(block, header.used as usize);
    if computed != header.crc {
        return Err(Damage::CrcMismatch { stored: header.crc, computed });
    }
    // Flags are covered by the CRC: checked after it, an unknown flag is a newer writer's,
    // not a flipped bit. Bits 1 and 2 (zstd, columns) mean nothing without bit 0.
    if !super::flags_known(header.flags) {
        return Err(Damage::UnknownFlags(header.flags));
    }
    Ok(header)
}

/// The bytes a packed block with `used` bytes of compressed records takes in a stream: its
/// header and the records, rounded up to a multiple of 8.
pub fn packed_len(used: u32) -> usize {
    (BLOCK_HEADER_LEN + used as usize).next_multiple_of(8)
}

/// The records of a verified packed block of LZ4 ([`BLOCK_PACKED`](super::BLOCK_PACKED) alone; a reader of any
/// packing uses an [`Unpacker`](super::Unpacker)) (`packed` is its compressed records area) in a
/// stream of blocks of `block_size` bytes: at most `block_size - 48` bytes, or
/// [`Damage::BadPacking`]. Allocates no more than the compressed bytes can expand to.
pub fn unpack_records(packed: &[u8], block_size: u32) -> Result<Vec<u8>, Damage> {
    let mut records = Vec::new();
    unpack_records_into(packed, block_size, &mut records)?;
    Ok(records)
}

/// [`unpack_records`] into `records`, whose bytes are replaced: a buffer reused from block to
/// block is allocated once and zero-filled only where it grows (the decompressor writes into
/// initialized bytes). On an error, `records` holds no records.
pub fn unpack_records_into(packed: &[u8], block_size: u32, records: &mut Vec<u8>) -> Result<(), Damage> {
    unpack_lz4_into(packed, (block_size as usize).saturating_sub(BLOCK_HEADER_LEN), records)
}

/// One LZ4 block, `packed`, decompressed into `records` (its bytes replaced), at most `limit`
/// bytes.
pub(super) fn unpack_lz4_into(packed: &[u8], limit: usize, records: &mut Vec<u8>) -> Result<(), Damage> {
    // LZ4 expands at most 255 times (plus a few bytes): a lying block size costs nothing.
    let room = limit.min(packed.len().saturating_mul(255).saturating_add(16));
    records.resize(room, 0);
    match lz4_flex::block::decompress_into(packed, records) {
        Ok(n) => {
            records.truncate(n);
            Ok(())
        }
        Err(e) => {
            records.clear();
            Err(Damage::BadPacking(e.to_string()))
        }
    }
}

/// The length of a `TimeExtend` record, header included.
const TIME_EXTEND_LEN: usize = RECORD_HEADER_LEN + TIME_EXTEND_FIXED;

/// Why [`BlockWriter::push`] wrote nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PushError {
    /// The record does not fit in the rest of this block: seal it and start another.
    Full,
    /// The code is `TimeExtend`'s, which the writer adds by itself.
    ReservedCode,
    /// The fixed-size arguments alone are longer than the largest record (65535 bytes, or
    /// the block less its header): no block takes this record.
    TooLarge,
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Full => write!(f, "the record does not fit in the rest of the block"),
            PushError::ReservedCode => write!(f, "TimeExtend records are written by the block writer itself"),
            PushError::TooLarge => write!(f, "the record's fixed-size arguments alone exceed the largest record"),
        }
    }
}

impl std::error::Error for PushError {}

/// Builds one block in memory: the reference encoder, used by tests, tools and the
/// runtime's slow paths.
#[derive(Debug, Clone)]
pub struct BlockWriter {
    block: Vec<u8>,
    order: Order,
    /// End of the records written so far, in `BLOCK_HEADER_LEN..=block.len()`.
    end: usize,
    /// The time the next record's delta counts from.
    time: u64,
}

impl BlockWriter {
    /// An empty block of `block_size` bytes (zeroed) with `header`'s fields; its first
    /// record's delta counts from `header.base_time`.
    pub fn new(order: Order, block_size: u32, header: &BlockHeader) -> BlockWriter {
        let mut block = vec![0; block_size as usize];
        header.write(order, &mut block);
        BlockWriter { block, order, end: BLOCK_HEADER_LEN, time: header.base_time }
    }

    /// The largest record this block size takes.
    pub fn max_record_len(&self) -> usize {
        (self.block.len() - BLOCK_HEADER_LEN).min(MAX_RECORD_LEN)
    }

    /// Whether no record was written.
    pub fn is_empty(&self) -> bool {
        self.end == BLOCK_HEADER_LEN
    }

    /// Appends a record of `code` at `time` (absolute ticks) with `values`, preceded by a
    /// `TimeExtend` record when the delta from the previous record is negative or does not
    /// fit in 32 bits. Strings are cut as [`fit_strings`] says, with the whole block as the
    /// limit, so a record that is refused here as [`PushError::Full`] fits in a new block
    /// whose base time is `time`.
    pub fn push(&mut self, code: u16, time: u64, values: &[Value<'_>]) -> Result<(), PushError> {
        if code == TIME_EXTEND {
            return Err(PushError::ReservedCode);
        }
        let mut values = values.to_vec();
        if !fit_strings(&mut values, self.max_record_len()) {
            return Err(PushError::TooLarge);
        }
        let len = record_len(&values);
        let at = self.reserve(code, time, len)?;
        let mut args = ArgWriter::new(self.order, &mut self.block[at + RECORD_HEADER_LEN..at + len], &[]);
        for v in &values {
            args.value(v);
        }
        debug_assert_eq!(args.written(), len - RECORD_HEADER_LEN);
        self.end = at + len;
        self.time = time;
        Ok(())
    }

    /// Appends a record of `code` at `time` whose arguments `fill` writes, as the generated
    /// emit code writes them: `fixed` bytes of fixed-size arguments, then the strings `strs`
    /// (each its 2-byte length and its bytes), cut as [`fit_texts`] says. What
    /// [`push`](BlockWriter::push) does for values, for a writer that holds its arguments as
    /// a fill (the test capture); [`fits`](BlockWriter::fits) says beforehand whether it is
    /// [`PushError::Full`], which leaves `fill` uncalled.
    pub fn push_with(
        &mut self,
        code: u16,
        time: u64,
        fixed: usize,
        strs: &[Text<'_>],
        fill: impl FnOnce(&mut ArgWriter<'_>),
    ) -> Result<(), PushError> {
        if code == TIME_EXTEND {
            return Err(PushError::ReservedCode);
        }
        let (strs, len) = self.fitted(fixed, strs).ok_or(PushError::TooLarge)?;
        let at = self.reserve(code, time, len)?;
        let mut args = ArgWriter::new(self.order, &mut self.block[at + RECORD_HEADER_LEN..at + len], &strs);
        fill(&mut args);
        debug_assert_eq!(args.written(), len - RECORD_HEADER_LEN, "the fill wrote what the length says");
        self.end = at + len;
        self.time = time;
        Ok(())
    }

    /// Appends a record of `code` at `time` whose arguments are `args`, already encoded (a
    /// record copied from another block, its delta rewritten): preceded by a `TimeExtend`
    /// where its delta needs one, as [`push`](BlockWriter::push). Nothing is cut: a record
    /// longer than a block holds is [`PushError::TooLarge`].
    pub fn push_record(&mut self, code: u16, time: u64, args: &[u8]) -> Result<(), PushError> {
        if code == TIME_EXTEND {
            return Err(PushError::ReservedCode);
        }
        let len = RECORD_HEADER_LEN + args.len();
        if len > self.max_record_len() {
            return Err(PushError::TooLarge);
        }
        let at = self.reserve(code, time, len)?;
        self.block[at + RECORD_HEADER_LEN..at + len].copy_from_slice(args);
        self.end = at + len;
        self.time = time;
        Ok(())
    }

    /// Whether [`push_with`](BlockWriter::push_with) of a record at `time` with `fixed` bytes
    /// of fixed-size arguments and strings `strs` fits in what is left of the block (`false`
    /// too for a record no block takes).
    pub fn fits(&self, time: u64, fixed: usize, strs: &[Text<'_>]) -> bool {
        self.fitted(fixed, strs).is_some_and(|(_, len)| self.end + self.extend_len(time) + len <= self.block.len())
    }

    /// `strs` cut to fit a record of `fixed` bytes of fixed-size arguments, and the record's
    /// length; `None` when the fixed arguments alone are too long.
    fn fitted<'s, 't>(&self, fixed: usize, strs: &'s [Text<'t>]) -> Option<(Cow<'s, [Text<'t>]>, usize)> {
        let max = self.max_record_len();
        let len = |strs: &[Text<'_>]| RECORD_HEADER_LEN + fixed + strs.iter().map(|s| 2 + s.bytes.len()).sum::<usize>();
        let strs = if len(strs) > max || strs.iter().any(|s| s.bytes.len() > STRING_MAX) {
            let mut cut = strs.to_vec();
            if !fit_texts(&mut cut, RECORD_HEADER_LEN + fixed, max) {
                return None;
            }
            Cow::Owned(cut)
        } else {
            Cow::Borrowed(strs)
        };
        let len = len(&strs);
        Some((strs, len))
    }

    /// The `TimeExtend` record's length that a record at `time` needs before it: when its
    /// delta from the previous record is negative or does not fit in 32 bits.
    fn extend_len(&self, time: u64) -> usize {
        match time.checked_sub(self.time).and_then(|d| u32::try_from(d).ok()) {
            Some(_) => 0,
            None => TIME_EXTEND_LEN,
        }
    }

    /// Writes the header of a record of `code` at `time`, `len` bytes long, preceded by a
    /// `TimeExtend` record where its delta needs one, and returns where the record starts.
    fn reserve(&mut self, code: u16, time: u64, len: usize) -> Result<usize, PushError> {
        let delta = time.checked_sub(self.time).and_then(|d| u32::try_from(d).ok());
        if self.end + self.extend_len(time) + len > self.block.len() {
            return Err(PushError::Full);
        }
        let order = self.order;
        let mut at = self.end;
        let delta = match delta {
            Some(d) => d,
            None => {
                put_record_header(order, &mut self.block, at, TIME_EXTEND, TIME_EXTEND_LEN as u16, 0);
                let args = &mut self.block[at + RECORD_HEADER_LEN..at + TIME_EXTEND_LEN];
                body::time_extend(&mut ArgWriter::new(order, args, &[]), time);
                at += TIME_EXTEND_LEN;
                0
            }
        };
        // Callers made len <= max_record_len() <= MAX_RECORD_LEN = u16::MAX.
        put_record_header(order, &mut self.block, at, code, len as u16, delta);
        Ok(at)
    }

    /// Seals the block (used length and CRC) and returns its bytes, `block_size` long.
    pub fn finish(mut self) -> Vec<u8> {
        let used = (self.end - BLOCK_HEADER_LEN) as u32;
        seal_block(self.order, &mut self.block, used);
        self.block
    }
}

/// Blocks of thread 0 that report `losses`, each `(thread, count)`, as `Dropped` events at
/// `time`, numbered from `first_sequence`: how a recorder (or a ring-file reader) reports the
/// losses that no block of the thread itself can carry (docs/FORMAT.md, "Counting losses").
/// Empty when there is nothing to report.
pub fn dropped_report(
    order: Order,
    block_size: u32,
    first_sequence: u64,
    time: u64,
    losses: &[(u64, u64)],
) -> Vec<Vec<u8>> {
    let mut blocks = Vec::new();
    if losses.is_empty() {
        return blocks;
    }
    let mut header = BlockHeader { thread: 0, sequence: first_sequence, base_time: time, ..BlockHeader::default() };
    let mut writer = BlockWriter::new(order, block_size, &header);
    for &(thread, count) in losses {
        let values = [Value::Word(thread), Value::Word(count)];
        if writer.push(DROPPED, time, &values).is_err() {
            blocks.push(writer.finish());
            header.sequence += 1;
            writer = BlockWriter::new(order, block_size, &header);
            // A Dropped record (24 bytes) always fits an empty block (1 KiB at least).
            let _ = writer.push(DROPPED, time, &values);
        }
    }
    blocks.push(writer.finish());
    blocks
}

/// The block of thread 0 that ends a cleanly stopped stream (since format 2.0.1): one `Stop`
/// record (length 48 since 2.0.3) with `stop`'s counts, cause and unwritten events at `time`,
/// delta 0, in a block of sequence `sequence` (the recorder's next) whose base time is `time`
/// (docs/FORMAT.md, "The clean stop"). The marker of the current [`FORMAT_VERSION`].
pub fn stop_block(order: Order, block_size: u32, sequence: u64, time: u64, stop: &Stop) -> Vec<u8> {
    stop_block_of(FORMAT_VERSION, order, block_size, sequence, time, stop)
}

/// [`stop_block`] as a writer of `format` writes it: before 2.0.3 the `Stop` record has its
/// first three arguments only (length 32), and `stop`'s cause and unwritten events are left
/// out (a frozen stream of an older version made again byte for byte).
pub fn stop_block_of(format: Version, order: Order, block_size: u32, sequence: u64, time: u64, stop: &Stop) -> Vec<u8> {
    let header = BlockHeader { thread: 0, sequence, base_time: time, ..BlockHeader::default() };
    let mut writer = BlockWriter::new(order, block_size, &header);
    let values = [
        Value::Word(stop.blocks),
        Value::Word(stop.events),
        Value::Word(stop.lost),
        Value::Word(stop.cause.to_word()),
        Value::Word(stop.unwritten),
    ];
    let values = if records_stop_cause(format) { &values[..] } else { &values[..3] };
    // 48 bytes always fit an empty block (1 KiB at least).
    let _ = writer.push(STOP, time, values);
    writer.finish()
}
