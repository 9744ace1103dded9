//! The stream header: magic, byte order, versions, producer and clock facts, block size,
//! the embedded schema and a CRC-32 (docs/FORMAT.md, "Header").

use super::properties::Properties;
use super::{FORMAT_VERSION, LAST_V1, MAGIC, MAX_BLOCK_SIZE, MAX_HEADER_LEN, MIN_BLOCK_SIZE, Order, Put, Take};
use crate::letter::Letter;
use crate::schema::{EventType, Kind, LAST_USER_CODE, Problem, Retired, Rules, Schema, Version, set_name_problem};
use std::fmt;
use std::io;

/// Length of the header's fixed part; the variable part starts here.
pub(crate) const FIXED_LEN: usize = 80;
/// Length of the prefix a reader needs to find the version, byte order and header length.
pub(crate) const PREFIX_LEN: usize = 24;
/// The pointer widths, in bytes, a header may give.
const POINTER_WIDTHS: [u8; 4] = [2, 4, 8, 16];
/// Bit 0 of an event's flags byte in the embedded schema: the `always` flag.
const EVENT_ALWAYS: u8 = 1;

/// Where the stream's timestamps come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClockSource {
    /// A deterministic clock (tests): ticks are whatever the test chose.
    Deterministic,
    /// The monotonic clock of the operating system, in nanoseconds.
    Monotonic,
    /// The x86_64 invariant time-stamp counter.
    Tsc,
    /// A source a newer minor version defined; the rate still converts ticks to seconds.
    Other(u8),
}

impl ClockSource {
    /// The source's number in the header.
    pub fn to_byte(self) -> u8 {
        match self {
            ClockSource::Deterministic => 0,
            ClockSource::Monotonic => 1,
            ClockSource::Tsc => 2,
            ClockSource::Other(b) => b,
        }
    }

    /// The source for a number in the header.
    pub fn from_byte(b: u8) -> ClockSource {
        match b {
            0 => ClockSource::Deterministic,
            1 => ClockSource::Monotonic,
            2 => ClockSource::Tsc,
            b => ClockSource::Other(b),
        }
    }

    /// The source's name, for messages and the dump.
    pub fn name(self) -> String {
        match self {
            ClockSource::Deterministic => "deterministic".to_owned(),
            ClockSource::Monotonic => "monotonic".to_owned(),
            ClockSource::Tsc => "tsc".to_owned(),
            ClockSource::Other(b) => format!("source {b}"),
        }
    }
}

/// Facts about the clock, so that a reader can turn ticks into seconds and wall time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Clock {
    /// Where ticks come from.
    pub source: ClockSource,
    /// Ticks per second; never 0.
    pub ticks_per_second: u64,
    /// A counter value...
    pub ref_ticks: u64,
    /// ...and the wall time it was read at, in nanoseconds since the Unix epoch.
    pub ref_wall_ns: i64,
    /// The counter value when recording started: time zero of the dump.
    pub start_ticks: u64,
}

impl Clock {
    /// The facts of a deterministic clock: a counter of 1 GHz that starts at 0, with no wall
    /// time (what a recorder's deterministic clock and a test capture write).
    pub const fn deterministic() -> Clock {
        Clock {
            source: ClockSource::Deterministic,
            ticks_per_second: 1_000_000_000,
            ref_ticks: 0,
            ref_wall_ns: 0,
            start_ticks: 0,
        }
    }

    /// Seconds from the start of recording to `ticks` (negative before it).
    pub fn seconds_since_start(&self, ticks: u64) -> f64 {
        let delta = i128::from(ticks) - i128::from(self.start_ticks);
        delta as f64 / self.ticks_per_second as f64
    }

    /// The wall time of `ticks`, in nanoseconds since the Unix epoch.
    pub fn wall_ns(&self, ticks: u64) -> i128 {
        let delta = i128::from(ticks) - i128::from(self.ref_ticks);
        i128::from(self.ref_wall_ns) + delta * 1_000_000_000 / i128::from(self.ticks_per_second)
    }
}

/// Facts about the program that wrote the stream.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Producer {
    /// Size of a pointer in bytes (4 or 8).
    pub pointer_width: u8,
    /// The CPU architecture, as Rust names it (`x86_64`, `aarch64`, ...).
    pub arch: String,
    /// The operating system, as Rust names it (`linux`, `macos`, ...).
    pub os: String,
    /// The process id.
    pub pid: u64,
    /// The program's name.
    pub program: String,
    /// The name of the machine it ran on (since format 2.0.1; empty when the stream is older
    /// or the system did not tell).
    pub host: String,
    /// When recording started, in nanoseconds since the Unix epoch.
    pub start_wall_ns: i64,
}

impl Producer {
    /// Facts of the running program: this machine's pointer width, arch and OS, this process's
    /// id and name, and `start_wall_ns` as given. `host` is left empty: the crate does no
    /// system calls; a recorder fills it in (event-runtime does).
    pub fn current(start_wall_ns: i64) -> Producer {
        let program = std::env::args_os()
            .next()
            .map(|p| {
                std::path::Path::new(&p)
                    .file_name()
                    .map_or_else(|| p.to_string_lossy().into_owned(), |n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_default();
        Producer {
            pointer_width: std::mem::size_of::<usize>() as u8,
            arch: std::env::consts::ARCH.to_owned(),
            os: std::env::consts::OS.to_owned(),
            pid: u64::from(std::process::id()),
            program,
            host: String::new(),
            start_wall_ns,
        }
    }
}

/// A stream's header.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    /// The format version the stream was written in.
    pub format: Version,
    /// The byte order of every multi-byte field after the magic.
    pub order: Order,
    /// The size of every block, a power of two in `MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE`.
    pub block_size: u32,
    /// Who wrote the stream.
    pub producer: Producer,
    /// How to read its timestamps.
    pub clock: Clock,
    /// The event sets, complete, each with its wire codes: a reader needs nothing else to
    /// decode the stream. A 1.x stream has exactly one, unnamed, whose wire codes are its
    /// events' own codes; a 2.x stream any number (docs/FORMAT.md, "Event sets").
    pub sets: Vec<SetEntry>,
    /// The recording's facts after the host (since format 2.0.2, [`records_properties`]):
    /// its id, ... Each `None` in an older stream.
    pub properties: Properties,
    /// Bytes after the schema that a newer minor version added and this reader skipped:
    /// trailing bytes, and properties it does not know (their tags and lengths included).
    pub skipped_bytes: u32,
}

/// How the records of one set name its events: the codes they carry (*wire codes*).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireCodes {
    /// Format 2.x: event *j* of the set (in declaration order) is written with code
    /// `first + j`; `first` is 0 when the set has no events.
    Range {
        /// The wire code of the set's first event.
        first: u16,
    },
    /// Format 1.x: each event is written with its own code.
    Own,
}

/// One event set of a stream: its schema (name, version, kinds, events) and the codes its
/// records carry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SetEntry {
    /// The set itself; `schema.name` is the set's name.
    pub schema: Schema,
    /// How its events are written.
    pub codes: WireCodes,
}

impl SetEntry {
    /// A 2.x set whose event *j* is written as `first + j` (`first` should be 0 when it has
    /// no events).
    pub fn new(schema: Schema, first: u16) -> SetEntry {
        SetEntry { schema, codes: WireCodes::Range { first } }
    }

    /// The sets of `schemas`, each given the next free range of wire codes from 1 on, in
    /// order: what a recorder writes. A set without events gets `first` 0. Ranges past
    /// 0xFEFF are not refused here: [`Header::encode`] refuses them.
    pub fn assign(schemas: impl IntoIterator<Item = Schema>) -> Vec<SetEntry> {
        let mut next: usize = 1;
        schemas
            .into_iter()
            .map(|schema| {
                let n = schema.events.len();
                let first = if n == 0 { 0 } else { u16::try_from(next).unwrap_or(u16::MAX) };
                next += n;
                SetEntry::new(schema, first)
            })
            .collect()
    }

    /// The wire code of event `j` (its index in `schema.events`), or `None` when the set has
    /// no such event or the code would not be a user code.
    pub fn wire_code(&self, j: usize) -> Option<u16> {
        let event = self.schema.events.get(j)?;
        match self.codes {
            WireCodes::Own => Some(event.code),
            WireCodes::Range { first } => {
                u16::try_from(usize::from(first) + j).ok().filter(|&c| c != 0 && c <= LAST_USER_CODE)
            }
        }
    }

    /// The wire code of the set's event whose own code is `code`.
    pub fn wire_code_of(&self, code: u16) -> Option<u16> {
        self.wire_code(self.schema.events.iter().position(|e| e.code == code)?)
    }

    /// The wire codes of its events, `first ..= last`, or `None` when it has no events or
    /// its codes are its own (1.x).
    pub fn range(&self) -> Option<(u16, u16)> {
        match self.codes {
            WireCodes::Range { first } if !self.schema.events.is_empty() => {
                let last = usize::from(first) + self.schema.events.len() - 1;
                Some((first, u16::try_from(last).unwrap_or(u16::MAX)))
            }
            _ => None,
        }
    }
}

/// The header fields a reader checks before anything else.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prefix {
    pub(crate) order: Order,
    pub(crate) format: Version,
    pub(crate) header_len: u32,
    pub(crate) block_size: u32,
}

/// Why a header could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodeError(pub String);

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot encode the stream header: {}", self.0)
    }
}

impl std::error::Error for EncodeError {}

/// Why a stream's header was refused. Each message is one line that says what is wrong and
/// what to do.
#[derive(Debug)]
#[non_exhaustive]
pub enum HeaderError {
    /// Reading failed.
    Io(io::Error),
    /// The input does not start with [`MAGIC`].
    NotAStream,
    /// The input ends inside the header.
    Truncated {
        /// Bytes there are.
        have: u64,
        /// Bytes the header needs.
        need: u64,
    },
    /// The byte-order mark is neither `FE FF` nor `FF FE`.
    BadByteOrderMark([u8; 2]),
    /// The stream's major version is not one this reader reads.
    UnsupportedMajor(Version),
    /// The stream's median version is newer than this reader's, and reading was not forced.
    NewerMedian(Version),
    /// The header length is out of range.
    BadHeaderLength(u32),
    /// The block size is not a power of two in range.
    BadBlockSize(u32),
    /// The header's CRC does not match its bytes.
    CrcMismatch {
        /// The CRC the header holds.
        stored: u32,
        /// The CRC of its bytes.
        computed: u32,
    },
    /// A field is out of range or the header's parts do not add up.
    Malformed(String),
    /// An embedded schema breaks a rule of event sets (each problem's message names its
    /// set when the stream has named sets).
    BadSchema(Vec<Problem>),
    /// The list of sets breaks a rule of format 2.x: a bad or repeated set name, a range of
    /// wire codes out of `1..=0xFEFF`, two ranges that overlap.
    BadSets(String),
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::Io(e) => write!(f, "cannot read the stream: {e}"),
            HeaderError::NotAStream => {
                write!(f, "not an event stream: it does not start with the stream's magic bytes; check the file name")
            }
            HeaderError::Truncated { have, need } => write!(
                f,
                "the stream ends inside its header ({have} of {need} bytes): the file is truncated or still being created"
            ),
            HeaderError::BadByteOrderMark(b) => write!(
                f,
                "bad byte-order mark {:02x} {:02x} (expected fe ff or ff fe): the header is damaged",
                b[0], b[1]
            ),
            HeaderError::UnsupportedMajor(v) => write!(
                f,
                "stream format {v} is not supported: this reader reads format {}.x (up to {}.{}.x, and newer minors) and format 1.x (up to {}.{}.x); use a reader built for format {}.x",
                FORMAT_VERSION.major,
                FORMAT_VERSION.major,
                FORMAT_VERSION.median,
                LAST_V1.major,
                LAST_V1.median,
                v.major
            ),
            HeaderError::NewerMedian(v) => write!(
                f,
                "stream format {v} is newer than this reader's {FORMAT_VERSION} and may be misread; update the reader, or force it to read anyway (--force)"
            ),
            HeaderError::BadHeaderLength(n) => write!(
                f,
                "header length {n} is out of range ({}..={MAX_HEADER_LEN}): the header is damaged",
                FIXED_LEN + 4
            ),
            HeaderError::BadBlockSize(n) => write!(
                f,
                "block size {n} is invalid: it must be a power of two in {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}; the header is damaged"
            ),
            HeaderError::CrcMismatch { stored, computed } => write!(
                f,
                "header checksum mismatch (stored {stored:08x}, computed {computed:08x}): the header is damaged"
            ),
            HeaderError::Malformed(what) => write!(f, "malformed header: {what}"),
            HeaderError::BadSchema(problems) => {
                write!(f, "the embedded schema is invalid: {}", problems[0])?;
                if problems.len() > 1 {
                    write!(f, " (and {} more problems)", problems.len() - 1)?;
                }
                Ok(())
            }
            HeaderError::BadSets(what) => write!(f, "the header's event sets are invalid: {what}"),
        }
    }
}

impl std::error::Error for HeaderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HeaderError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for HeaderError {
    fn from(e: io::Error) -> HeaderError {
        HeaderError::Io(e)
    }
}

pub(crate) fn put_str(put: &mut Put<'_>, s: &str, what: &str) -> Result<(), EncodeError> {
    let len = u16::try_from(s.len())
        .map_err(|_| EncodeError(format!("{what} is {} bytes long, at most 65535 fit", s.len())))?;
    put.u16(len);
    put.bytes(s.as_bytes());
    Ok(())
}

pub(crate) fn take_str(take: &mut Take<'_>, what: &str) -> Result<String, HeaderError> {
    let malformed = || HeaderError::Malformed(format!("{what} runs past the end of the header"));
    let len = take.u16().ok_or_else(malformed)?;
    let bytes = take.bytes(usize::from(len)).ok_or_else(malformed)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| HeaderError::Malformed(format!("{what} is not valid UTF-8")))
}

impl Header {
    /// A header for a stream of one set written now by this program, in this machine's byte
    /// order, with the current format version: the set's event *j* is written as wire code
    /// `1 + j` ([`SetEntry::assign`]).
    pub fn new(schema: Schema, block_size: u32, clock: Clock, producer: Producer) -> Header {
        Header::with_sets(SetEntry::assign([schema]), block_size, clock, producer)
    }

    /// A header for a stream of `sets`, written now by this program, in this machine's byte
    /// order, with the current format version.
    pub fn with_sets(sets: Vec<SetEntry>, block_size: u32, clock: Clock, producer: Producer) -> Header {
        Header {
            format: FORMAT_VERSION,
            order: Order::NATIVE,
            block_size,
            producer,
            clock,
            sets,
            properties: Properties::default(),
            skipped_bytes: 0,
        }
    }

    /// The one set of a stream that holds exactly one, or `None` when it holds none or
    /// several: a convenience that cannot hide a second set.
    pub fn single_set(&self) -> Option<&SetEntry> {
        match self.sets.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// The set named `name`.
    pub fn set(&self, name: &str) -> Option<&SetEntry> {
        self.sets.iter().find(|s| s.schema.name == name)
    }

    /// Encodes the header, `self.format` and `self.order` included, in the layout of
    /// `self.format`'s major: 1 (exactly one set, [`WireCodes::Own`]: what tests of older
    /// streams write), else 2 (the sets as docs/FORMAT.md says; a header that claims another
    /// major is what tests of version skew write). The sets must pass the rules a reader
    /// checks; strings must fit their 16-bit lengths.
    pub fn encode(&self) -> Result<Vec<u8>, EncodeError> {
        if !self.block_size.is_power_of_two() || !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&self.block_size) {
            return Err(EncodeError(format!(
                "block size {} is not a power of two in {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}",
                self.block_size
            )));
        }
        if self.clock.ticks_per_second == 0 {
            return Err(EncodeError("the clock's rate is 0 ticks per second".to_owned()));
        }
        if !POINTER_WIDTHS.contains(&self.producer.pointer_width) {
            return Err(EncodeError(format!(
                "pointer width {} bytes is not 2, 4, 8 or 16",
                self.producer.pointer_width
            )));
        }
        let v1 = self.format.major == LAST_V1.major;
        if v1 && !matches!(self.sets.as_slice(), [one] if one.codes == WireCodes::Own) {
            return Err(EncodeError("a 1.x header holds exactly one set, written with its own codes".to_owned()));
        }
        match check_sets(&self.sets, if v1 { LAST_V1.major } else { FORMAT_VERSION.major }) {
            Ok(()) => {}
            Err(HeaderError::BadSchema(problems)) => {
                return Err(EncodeError(format!("the schema is invalid: {}", problems[0])));
            }
            Err(e) => return Err(EncodeError(e.to_string())),
        }
        if !records_properties(self.format) && self.sets.iter().any(|s| s.schema.declares_meanings()) {
            return Err(EncodeError(format!(
                "format {} cannot carry spans, counters or flows (they are a header property since 2.0.2)",
                self.format
            )));
        }
        let set_version = if v1 { self.sets[0].schema.version } else { Version::default() };
        let mut out = Vec::with_capacity(256);
        let mut put = Put { out: &mut out, order: self.order };
        put.bytes(&MAGIC);
        put.u16(0xFEFF);
        put.u16(self.format.major);
        put.u16(self.format.median);
        put.u16(self.format.minor);
        put.u32(0); // header length, patched below
        put.u32(self.block_size);
        // 1.x: the one set's version; 2.x: reserved, 0 (each set carries its own).
        put.u16(set_version.major);
        put.u16(set_version.median);
        put.u16(set_version.minor);
        put.u8(self.producer.pointer_width);
        put.u8(self.clock.source.to_byte());
        put.u64(self.producer.pid);
        put.u64(self.clock.ticks_per_second);
        put.u64(self.clock.ref_ticks);
        put.u64(self.clock.ref_wall_ns as u64);
        put.u64(self.clock.start_ticks);
        put.u64(self.producer.start_wall_ns as u64);
        debug_assert_eq!(put.out.len(), FIXED_LEN);
        put_str(&mut put, &self.producer.arch, "the architecture name")?;
        put_str(&mut put, &self.producer.os, "the OS name")?;
        put_str(&mut put, &self.producer.program, "the program name")?;
        if v1 {
            encode_schema(&mut put, &self.sets[0].schema)?;
        } else {
            let count = u16::try_from(self.sets.len())
                .map_err(|_| EncodeError(format!("{} sets do not fit in a 16-bit count", self.sets.len())))?;
            put.u16(count);
            for set in &self.sets {
                put_str(&mut put, &set.schema.name, "a set name")?;
                put.u16(set.schema.version.major);
                put.u16(set.schema.version.median);
                put.u16(set.schema.version.minor);
                // check_sets refused WireCodes::Own in 2.x.
                put.u16(match set.codes {
                    WireCodes::Range { first } => first,
                    WireCodes::Own => 0,
                });
                encode_schema(&mut put, &set.schema)?;
            }
            if records_host(self.format) {
                put_str(&mut put, &self.producer.host, "the host name")?;
            }
            if records_properties(self.format) {
                self.properties.encode(&self.sets, &mut put)?;
            }
        }
        let len = out.len() + 4;
        let len32 = u32::try_from(len)
            .ok()
            .filter(|&n| n <= MAX_HEADER_LEN)
            .ok_or_else(|| EncodeError(format!("the header would be {len} bytes, more than {MAX_HEADER_LEN}")))?;
        self.order.put_u32(&mut out[16..20], len32);
        let crc = crc32fast::hash(&out);
        Put { out: &mut out, order: self.order }.u32(crc);
        Ok(out)
    }

    /// Checks the first [`PREFIX_LEN`] bytes: magic, byte order, major version, lengths. The
    /// median rule waits for the CRC ([`Header::decode`]), so that a damaged median field is
    /// reported as damage, not as a newer version.
    pub(crate) fn prefix(bytes: &[u8]) -> Result<Prefix, HeaderError> {
        if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
            // A short input that is a prefix of the magic is a truncated stream, not a stranger.
            if bytes.len() < MAGIC.len() && MAGIC.starts_with(bytes) {
                return Err(HeaderError::Truncated { have: bytes.len() as u64, need: PREFIX_LEN as u64 });
            }
            return Err(HeaderError::NotAStream);
        }
        if bytes.len() < PREFIX_LEN {
            return Err(HeaderError::Truncated { have: bytes.len() as u64, need: PREFIX_LEN as u64 });
        }
        let order = match [bytes[8], bytes[9]] {
            [0xFE, 0xFF] => Order::Big,
            [0xFF, 0xFE] => Order::Little,
            other => return Err(HeaderError::BadByteOrderMark(other)),
        };
        let format = Version::new(order.u16(&bytes[10..]), order.u16(&bytes[12..]), order.u16(&bytes[14..]));
        // Another major may lay out everything after byte 16 differently: refuse it before
        // reading further. (A flipped bit in the major field cannot be told from another major.)
        if format.major != FORMAT_VERSION.major && format.major != LAST_V1.major {
            return Err(HeaderError::UnsupportedMajor(format));
        }
        let header_len = order.u32(&bytes[16..]);
        if !(FIXED_LEN as u32 + 4..=MAX_HEADER_LEN).contains(&header_len) {
            return Err(HeaderError::BadHeaderLength(header_len));
        }
        let block_size = order.u32(&bytes[20..]);
        if !block_size.is_power_of_two() || !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&block_size) {
            return Err(HeaderError::BadBlockSize(block_size));
        }
        Ok(Prefix { order, format, header_len, block_size })
    }

    /// Decodes a whole header: `bytes` must be exactly the header (its length is in the
    /// prefix; [`crate::decode::Decoder`] reads it from a stream). Reads formats 1.x (one
    /// unnamed set, wire codes = own codes) and 2.x. With `force`, a newer median version of
    /// either major is read too. Never panics, whatever the bytes, and reserves no more
    /// memory than the bytes could fill.
    pub fn decode(bytes: &[u8], force: bool) -> Result<Header, HeaderError> {
        let prefix = Header::prefix(bytes)?;
        let len = prefix.header_len as usize;
        if bytes.len() < len {
            return Err(HeaderError::Truncated { have: bytes.len() as u64, need: len as u64 });
        }
        let order = prefix.order;
        let body = &bytes[..len - 4];
        let stored = order.u32(&bytes[len - 4..]);
        let computed = crc32fast::hash(body);
        if stored != computed {
            return Err(HeaderError::CrcMismatch { stored, computed });
        }
        let v1 = prefix.format.major == LAST_V1.major;
        let known_median = if v1 { LAST_V1.median } else { FORMAT_VERSION.median };
        if prefix.format.median > known_median && !force {
            return Err(HeaderError::NewerMedian(prefix.format));
        }
        let mut take = Take { rest: &body[PREFIX_LEN..], order };
        let short = || HeaderError::Malformed("the fixed fields run past the header length".to_owned());
        let u16f = |take: &mut Take<'_>| take.u16().ok_or_else(short);
        // 1.x: the set's version; 2.x: reserved, ignored.
        let event_set = Version::new(u16f(&mut take)?, u16f(&mut take)?, u16f(&mut take)?);
        let mut fixed = || -> Option<(u8, u8, [u64; 6])> {
            let width = take.u8()?;
            let source = take.u8()?;
            let mut words = [0u64; 6];
            for w in &mut words {
                *w = take.u64()?;
            }
            Some((width, source, words))
        };
        let (pointer_width, source, [pid, rate, ref_ticks, ref_wall, start_ticks, start_wall]) =
            fixed().ok_or_else(short)?;
        if !POINTER_WIDTHS.contains(&pointer_width) {
            return Err(HeaderError::Malformed(format!("pointer width {pointer_width} bytes is not 2, 4, 8 or 16")));
        }
        if rate == 0 {
            return Err(HeaderError::Malformed("the clock's rate is 0 ticks per second".to_owned()));
        }
        let arch = take_str(&mut take, "the architecture name")?;
        let os = take_str(&mut take, "the OS name")?;
        let program = take_str(&mut take, "the program name")?;
        let mut sets = if v1 {
            let mut schema = decode_schema(&mut take)?;
            schema.version = event_set;
            vec![SetEntry { schema, codes: WireCodes::Own }]
        } else {
            decode_sets(&mut take)?
        };
        // Since 2.0.1 the extension starts with the host name; what follows it is a newer
        // minor's and skipped. A header that ends with its sets has none (read as empty).
        let host = if records_host(prefix.format) && !take.rest.is_empty() {
            take_str(&mut take, "the host name")?
        } else {
            String::new()
        };
        // Since 2.0.2 the properties follow the host, up to the CRC; what this reader does not
        // know of them is skipped by its length.
        let (properties, skipped_properties) = if records_properties(prefix.format) {
            Properties::decode(&mut take, &mut sets)?
        } else {
            Default::default()
        };
        check_sets(&sets, prefix.format.major)?;
        Ok(Header {
            format: prefix.format,
            order,
            block_size: prefix.block_size,
            producer: Producer { pointer_width, arch, os, pid, program, host, start_wall_ns: start_wall as i64 },
            clock: Clock {
                source: ClockSource::from_byte(source),
                ticks_per_second: rate,
                ref_ticks,
                ref_wall_ns: ref_wall as i64,
                start_ticks,
            },
            sets,
            properties,
            skipped_bytes: (take.rest.len() as u32).saturating_add(skipped_properties),
        })
    }

    /// The encoded header's length in bytes; blocks start at this offset.
    pub fn encoded_len(&self) -> Result<usize, EncodeError> {
        self.encode().map(|b| b.len())
    }
}

/// Whether a header of `format` has the host name after its sets: 2.0.1 and later of major 2
/// (docs/FORMAT.md, "Variable part").
pub fn records_host(format: Version) -> bool {
    format.major == FORMAT_VERSION.major && (format.median, format.minor) >= (0, 1)
}

/// Whether a header of `format` has properties after the host (its recording id, ...): 2.0.2
/// and later of major 2 (docs/FORMAT.md, "Header properties").
pub fn records_properties(format: Version) -> bool {
    format.major == FORMAT_VERSION.major && (format.median, format.minor) >= (0, 2)
}

/// Whether a stream of `format` ends with a `Stop` record when its writer stopped cleanly:
/// 2.0.1 and later of major 2 (docs/FORMAT.md, "The clean stop").
pub fn records_stop(format: Version) -> bool {
    records_host(format)
}

/// The smallest encoding of a 2.x set: name length, version, first, and three counts.
const MIN_SET_LEN: usize = 2 + 6 + 2 + 6;

fn decode_sets(take: &mut Take<'_>) -> Result<Vec<SetEntry>, HeaderError> {
    let n = take.u16().ok_or_else(|| HeaderError::Malformed("the set count runs past the end of the header".into()))?;
    // Bounded by what remains, so that a lying count reserves nothing the input does not back.
    let mut sets = Vec::with_capacity(usize::from(n).min(take.rest.len() / MIN_SET_LEN));
    for i in 0..n {
        let short = || HeaderError::Malformed(format!("set {i} runs past the end of the header"));
        let name = take_str(take, "a set name")?;
        let mut word = || take.u16().ok_or_else(short);
        let version = Version::new(word()?, word()?, word()?);
        let first = word()?;
        let mut schema = decode_schema(take)?;
        schema.name = name;
        schema.version = version;
        sets.push(SetEntry { schema, codes: WireCodes::Range { first } });
    }
    Ok(sets)
}

/// Checks the rules of a header's sets (docs/FORMAT.md, "Set rules"): for major 1, the one
/// set's schema by [`Rules::V1Read`]; for major 2, each set's name (valid, unique), its
/// schema by [`Rules::V2`], its range of wire codes inside `1..=0xFEFF`, and no two ranges
/// overlapping. Linear in the sets after one sort, whatever the input.
fn check_sets(sets: &[SetEntry], major: u16) -> Result<(), HeaderError> {
    if major == LAST_V1.major {
        return match sets {
            [one] => one.schema.check_as_read().map_err(HeaderError::BadSchema),
            _ => Err(HeaderError::BadSets(format!("a 1.x stream holds exactly one set, not {}", sets.len()))),
        };
    }
    let mut names = std::collections::HashSet::with_capacity(sets.len());
    let mut ranges: Vec<(u16, u16, usize)> = Vec::with_capacity(sets.len());
    for (i, set) in sets.iter().enumerate() {
        let name = &set.schema.name;
        if let Some(why) = set_name_problem(name) {
            return Err(HeaderError::BadSets(format!("set {i}: {why}")));
        }
        if !names.insert(name.as_str()) {
            return Err(HeaderError::BadSets(format!("set name `{name}` is used by two sets")));
        }
        if let Err(mut problems) = set.schema.check_by(Rules::V2) {
            for p in &mut problems {
                p.message = format!("set `{name}`: {}", p.message);
            }
            return Err(HeaderError::BadSchema(problems));
        }
        let WireCodes::Range { first } = set.codes else {
            return Err(HeaderError::BadSets(format!("set `{name}` has no range of wire codes")));
        };
        let n = set.schema.events.len();
        if n == 0 {
            continue;
        }
        let last = usize::from(first) + n - 1;
        if first == 0 || last > usize::from(LAST_USER_CODE) {
            return Err(HeaderError::BadSets(format!(
                "set `{name}`'s wire codes 0x{first:04X}..=0x{last:04X} ({n} events) are not inside 0x0001..=0xFEFF"
            )));
        }
        ranges.push((first, last as u16, i));
    }
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        let ((a_first, a_last, a), (b_first, _, b)) = (pair[0], pair[1]);
        if b_first <= a_last {
            return Err(HeaderError::BadSets(format!(
                "the wire codes of sets `{}` (0x{a_first:04X}..=0x{a_last:04X}) and `{}` (from 0x{b_first:04X}) overlap",
                sets[a].schema.name, sets[b].schema.name
            )));
        }
    }
    Ok(())
}

fn encode_schema(put: &mut Put<'_>, schema: &Schema) -> Result<(), EncodeError> {
    let count = |n: usize, what: &str| {
        u16::try_from(n).map_err(|_| EncodeError(format!("{n} {what} do not fit in a 16-bit count")))
    };
    put.u16(count(schema.kinds.len(), "kinds")?);
    for kind in &schema.kinds {
        put_str(put, &kind.name, "a kind name")?;
        put_str(put, &kind.doc, "a kind description")?;
    }
    put.u16(count(schema.events.len(), "events")?);
    for event in &schema.events {
        put.u16(event.code);
        put_str(put, &event.name, "an event name")?;
        put.u8(if event.always { EVENT_ALWAYS } else { 0 });
        put.u8(event.kind);
        // Schema::check bounds the parameter count by MAX_PARAMS (64).
        put.u8(event.format.len() as u8);
        for letter in &event.format {
            put.u8(letter.as_char() as u8);
        }
        for param in &event.params {
            put_str(put, param, "a parameter name")?;
        }
    }
    put.u16(count(schema.retired.len(), "retired events")?);
    for retired in &schema.retired {
        put.u16(retired.code);
        put_str(put, &retired.name, "a retired event name")?;
    }
    Ok(())
}

fn decode_schema(take: &mut Take<'_>) -> Result<Schema, HeaderError> {
    let short = |what: &str| HeaderError::Malformed(format!("the schema's {what} run past the end of the header"));
    // Each count is checked against what remains before anything is reserved: a kind takes at
    // least 4 bytes, an event 7, a retired event 4.
    let bounded = |n: u16, min: usize, rest: usize| usize::from(n).min(rest / min);

    let n = take.u16().ok_or_else(|| short("kinds"))?;
    let mut kinds = Vec::with_capacity(bounded(n, 4, take.rest.len()));
    for _ in 0..n {
        let name = take_str(take, "kind name")?;
        let doc = take_str(take, "kind description")?;
        kinds.push(Kind { name, doc });
    }
    let n = take.u16().ok_or_else(|| short("events"))?;
    let mut events = Vec::with_capacity(bounded(n, 7, take.rest.len()));
    for _ in 0..n {
        let code = take.u16().ok_or_else(|| short("events"))?;
        let name = take_str(take, "event name")?;
        let flags = take.u8().ok_or_else(|| short("events"))?;
        let kind = take.u8().ok_or_else(|| short("events"))?;
        let count = take.u8().ok_or_else(|| short("events"))?;
        let letters = take.bytes(usize::from(count)).ok_or_else(|| short("events"))?;
        let format = letters
            .iter()
            .map(|&b| {
                Letter::from_char(char::from(b)).ok_or_else(|| {
                    HeaderError::Malformed(format!(
                        "event `{name}` has format letter {:?}, not one of {}",
                        char::from(b),
                        Letter::SPELLED
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut params = Vec::with_capacity(format.len());
        for _ in 0..count {
            params.push(take_str(take, "parameter name")?);
        }
        events.push(EventType { name, code, always: flags & EVENT_ALWAYS != 0, kind, format, params });
    }
    let n = take.u16().ok_or_else(|| short("retired events"))?;
    let mut retired = Vec::with_capacity(bounded(n, 4, take.rest.len()));
    for _ in 0..n {
        let code = take.u16().ok_or_else(|| short("retired events"))?;
        let name = take_str(take, "retired event name")?;
        retired.push(Retired { name, code });
    }
    Ok(Schema { name: String::new(), version: Version::default(), kinds, events, retired, ..Schema::default() })
}
