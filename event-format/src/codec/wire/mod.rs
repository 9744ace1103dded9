//! Stream format 2 (and the 1.x it reads): the bytes of the header, the blocks and the records.
//!
//! docs/FORMAT.md is the normative description; this module is its implementation. Every
//! multi-byte integer is in the byte order the header's byte-order mark gives: a writer
//! writes its own order ([`Order::NATIVE`]), a reader reads either.

pub(crate) mod block;
pub mod body;
mod errors;
mod header;
pub(crate) mod pack;
pub(crate) mod properties;
pub(crate) mod put;
mod record;
mod sets;
mod timebase;
pub(crate) mod value;

pub use block::{BlockHeader, BlockWriter, Damage, PushError, unpack_records, unpack_records_into, verify_block};
// What only a writer needs is public in `crate::raw`.
pub(crate) use block::{BLOCK_USED_AT, dropped_report, packed_len, seal_block};
pub use errors::{EncodeError, HeaderError};
pub use header::{
    Clock, ClockSource, Header, Producer, records_histograms, records_host, records_properties, records_stop,
    records_stop_cause,
};
pub(crate) use pack::columns;
pub use pack::{Codec, Packer, Packing, Unpacker};
pub use properties::{
    Earlier, EarlierRemoval, MAX_EARLIER, MAX_LABEL_KEY, MAX_LABEL_VALUE, MAX_LABELS, Properties, RecordingId, Segment,
    Snapshot, SnapshotCause, valid_label_key,
};
pub use put::ArgWriter;
pub use record::{RawRecord, RecordError, RecordIter, Stop, StopCause, validate_args};
pub use sets::{SetEntry, WireCodes};
pub use timebase::Timebase;
pub use value::{Text, Value, ValueIter};

pub(crate) mod field {
    /// The event code, 16 bits.
    pub(crate) const CODE: usize = 0;
    /// The record's length, header included, 16 bits.
    pub(crate) const LENGTH: usize = 2;
    /// The time since the previous record (or the block's base time), 32 bits.
    pub(crate) const DELTA: usize = 4;
}

use byteorder::{BigEndian, ByteOrder, LittleEndian};
use event_def::schema::Version;

/// The format version this crate writes, and the newest it reads without `force`.
///
/// What forces a bump (docs/FORMAT.md, "Versions"):
/// - **major**: a change an older reader cannot detect or skip: the header's 80-byte fixed
///   part (only its first 16 bytes, magic, byte-order mark and version, stay the same in
///   every major), the layout of the header's variable part before its extension bytes (the
///   list of sets), the block header, the record header, what a record's code means, or the
///   encoding of a letter or of a built-in event's existing arguments.
/// - **median**: a change an older reader can detect but may misread: a new block flag, a
///   new meaning for an existing field, a use for a reserved field. Older readers refuse it
///   unless forced.
/// - **minor**: an addition an older reader skips or tolerates safely: a new built-in event
///   code (skipped by its length), arguments appended to a built-in event, a new clock
///   source value, a new field at the end of the header's variable part.
///
/// History (docs/FORMAT.md, "Versions"): 1.0.0 the first; 1.1.0 packed blocks
/// ([`BLOCK_PACKED`], a median change: a 1.0 reader cannot find the block after one);
/// 2.0.0 event sets (the header lists any number of named sets, each with its range of wire
/// codes, docs/EVENT-SETS.md: a major change, a 1.x reader cannot parse such a header);
/// 2.0.1 the host name after the sets, and the clean-stop marker ([`crate::builtin::STOP`],
/// [`Stop`]) that ends a stream whose writer stopped cleanly (minor: a 2.0 reader skips both);
/// 2.0.2 the header's properties after the host ([`Properties`]: the recording's id, ...;
/// minor: a 2.0.1 reader skips them as extension bytes); 2.0.3 the stop marker's `cause`
/// and `unwritten` ([`StopCause`]) and the header's segment property ([`Segment`]) for a
/// recording written as a sequence of segments (minor: a 2.0.2 reader ignores the appended
/// arguments and skips the property by its length), and the snapshot property
/// ([`Snapshot`], tag 4: a stream that holds a running recording's rings at one moment;
/// minor: a 2.0.2 reader skips it by its length); 2.1.0 (a median step) the zstd packing and
/// the records in columns ([`BLOCK_ZSTD`], [`BLOCK_COLUMNS`]: new block flags; a 2.0 reader
/// skips such a block as a newer writer's, and refuses the stream unless forced), and with it
/// the `tracing` bridge's spans as spans:
/// `SpanOpen`, `SpanClose`, `SpanRecord`, `SpanFollows` and the recorder's `SpanCurrent`
/// ([`crate::builtin::SPAN_OPEN`] ..= [`crate::builtin::SPAN_CURRENT`]), the built-in events
/// `Suppressed` and `Histogram`, the header's labels ([`Properties::labels`], tag 5: `service`,
/// `version`, ... of the recording), earlier recordings ([`Earlier`], tag 6: what a
/// directory's budget removed of them), and declared histograms and limits
/// (`TAG_HISTOGRAMS`, `TAG_LIMITS`): new built-in codes and properties, which a 2.0 reader
/// skips by their length; 2.1.1 the `tracing` bridge's records by callsite
/// ([`crate::builtin::CALLSITE`] ..= [`crate::builtin::TRACE_EVENT_AT`]; minor: a 2.1.0
/// reader skips them by their length, and counts them); 2.1.2 no `SpanCurrent` before a span
/// record ([`crate::builtin::is_span_record`]; minor: the reference readers never
/// attributed one to the current span).
///
/// A reader of this version reads majors 2 and 1 ([`LAST_V1`]).
pub const FORMAT_VERSION: Version = Version::new(2, 1, 2);

/// The newest 1.x format this reader knows: it reads 1.x streams up to this median without
/// `force`, as one unnamed set whose wire codes are its events' own codes.
pub const LAST_V1: Version = Version::new(1, 1, 0);

/// The 8 bytes every stream starts with. Like PNG's, they catch text-mode transfers:
/// a high-bit byte, CR LF, Ctrl-Z and LF.
pub const MAGIC: [u8; 8] = [0x89, b'E', b'V', b'T', b'\r', b'\n', 0x1A, b'\n'];

/// The first word of every block header, in the stream's byte order.
pub const BLOCK_SYNC: u32 = 0xEB10_C4ED;
/// Block flag (since 1.1): the records area is compressed (the LZ4 block format, or since 2.1
/// zstd where [`BLOCK_ZSTD`] is set too) and the block takes only its header plus `used` bytes
/// rounded up to a multiple of 8 in the stream, not the whole block size (docs/FORMAT.md,
/// "Packed blocks").
pub const BLOCK_PACKED: u16 = 0x0001;
/// Block flag (since 2.1): with [`BLOCK_PACKED`], the packed bytes are one zstd frame
/// (RFC 8878) instead of an LZ4 block (docs/FORMAT.md, "Packed blocks").
pub const BLOCK_ZSTD: u16 = 0x0002;
/// Block flag (since 2.1): with [`BLOCK_PACKED`], the unpacked bytes are the block's records
/// in columns ([`columns`](pack::columns); docs/FORMAT.md, "Columns").
pub const BLOCK_COLUMNS: u16 = 0x0004;
/// Every block flag this version knows.
pub const KNOWN_FLAGS: u16 = BLOCK_PACKED | BLOCK_ZSTD | BLOCK_COLUMNS;
/// Whether `flags` (a verified block's) are a combination this version reads: bits 1 and 2
/// mean nothing without bit 0.
pub fn flags_known(flags: u16) -> bool {
    flags & !KNOWN_FLAGS == 0 && (flags & BLOCK_PACKED != 0 || flags & (BLOCK_ZSTD | BLOCK_COLUMNS) == 0)
}

/// Size of a block header in bytes.
pub const BLOCK_HEADER_LEN: usize = 48;
/// Size of a record header (code, length, time delta) in bytes.
pub const RECORD_HEADER_LEN: usize = 8;

/// Length of the header's fixed part; the variable part starts here.
pub(crate) const FIXED_LEN: usize = 80;
/// Length of the prefix a reader needs to find the version, byte order and header length.
pub(crate) const PREFIX_LEN: usize = 24;
/// The smallest block size: big enough for the largest record without strings
/// (64 parameters of 8 bytes) plus a time extension.
pub const MIN_BLOCK_SIZE: u32 = 1 << 10;
/// The largest block size.
pub const MAX_BLOCK_SIZE: u32 = 1 << 24;
/// The largest record: its length field is 16 bits.
pub const MAX_RECORD_LEN: usize = u16::MAX as usize;
/// The longest string a writer records, in bytes; longer strings are cut at a character
/// boundary and marked truncated.
pub const STRING_MAX: usize = 1024;
/// The largest header a reader accepts, in bytes.
pub const MAX_HEADER_LEN: u32 = 1 << 24;
/// Bit 15 of a string's length prefix: the writer cut the string.
pub const STRING_TRUNCATED: u16 = 0x8000;

/// A byte order, as the header's byte-order mark gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Least significant byte first (x86_64, most aarch64).
    Little,
    /// Most significant byte first.
    Big,
}

impl Order {
    /// The order of the machine this code runs on.
    #[cfg(target_endian = "little")]
    pub const NATIVE: Order = Order::Little;
    /// The order of the machine this code runs on.
    #[cfg(target_endian = "big")]
    pub const NATIVE: Order = Order::Big;

    /// The order's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Order::Little => "little-endian",
            Order::Big => "big-endian",
        }
    }

    /// Reads a `u16` from the first 2 bytes of `b`.
    #[inline]
    pub fn u16(self, b: &[u8]) -> u16 {
        match self {
            Order::Little => LittleEndian::read_u16(b),
            Order::Big => BigEndian::read_u16(b),
        }
    }

    /// Reads a `u32` from the first 4 bytes of `b`.
    #[inline]
    pub fn u32(self, b: &[u8]) -> u32 {
        match self {
            Order::Little => LittleEndian::read_u32(b),
            Order::Big => BigEndian::read_u32(b),
        }
    }

    /// Reads a `u64` from the first 8 bytes of `b`.
    #[inline]
    pub fn u64(self, b: &[u8]) -> u64 {
        match self {
            Order::Little => LittleEndian::read_u64(b),
            Order::Big => BigEndian::read_u64(b),
        }
    }

    /// Writes `v` into the first 2 bytes of `b`.
    #[inline]
    pub fn put_u16(self, b: &mut [u8], v: u16) {
        match self {
            Order::Little => LittleEndian::write_u16(b, v),
            Order::Big => BigEndian::write_u16(b, v),
        }
    }

    /// Writes `v` into the first 4 bytes of `b`.
    #[inline]
    pub fn put_u32(self, b: &mut [u8], v: u32) {
        match self {
            Order::Little => LittleEndian::write_u32(b, v),
            Order::Big => BigEndian::write_u32(b, v),
        }
    }

    /// Writes `v` into the first 8 bytes of `b`.
    #[inline]
    pub fn put_u64(self, b: &mut [u8], v: u64) {
        match self {
            Order::Little => LittleEndian::write_u64(b, v),
            Order::Big => BigEndian::write_u64(b, v),
        }
    }
}

/// Appends integers to a byte vector in a given order: the encoders' helper.
#[derive(Debug)]
pub(crate) struct Put<'a> {
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) order: Order,
}

impl Put<'_> {
    pub(crate) fn u8(&mut self, v: u8) {
        self.out.push(v);
    }
    pub(crate) fn u16(&mut self, v: u16) {
        let mut b = [0; 2];
        self.order.put_u16(&mut b, v);
        self.out.extend_from_slice(&b);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        let mut b = [0; 4];
        self.order.put_u32(&mut b, v);
        self.out.extend_from_slice(&b);
    }
    pub(crate) fn u64(&mut self, v: u64) {
        let mut b = [0; 8];
        self.order.put_u64(&mut b, v);
        self.out.extend_from_slice(&b);
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }
}

/// Reads integers from a byte slice in a given order, checking every length against what
/// remains: the decoders' helper. Every read returns `None` past the end.
#[derive(Debug, Clone)]
pub(crate) struct Take<'a> {
    pub(crate) rest: &'a [u8],
    pub(crate) order: Order,
}

impl<'a> Take<'a> {
    #[inline]
    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.rest.len() {
            return None;
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Some(head)
    }
    #[inline]
    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }
    #[inline]
    pub(crate) fn u16(&mut self) -> Option<u16> {
        let order = self.order;
        self.bytes(2).map(|b| order.u16(b))
    }
    #[inline]
    pub(crate) fn u32(&mut self) -> Option<u32> {
        let order = self.order;
        self.bytes(4).map(|b| order.u32(b))
    }
    #[inline]
    pub(crate) fn u64(&mut self) -> Option<u64> {
        let order = self.order;
        self.bytes(8).map(|b| order.u64(b))
    }
}
