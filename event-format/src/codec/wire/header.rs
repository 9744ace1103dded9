//! The stream header: magic, byte order, versions, producer and clock facts, block size,
//! the embedded schema and a CRC-32 (docs/FORMAT.md, "Header").

use super::errors::{EncodeError, HeaderError};
use super::properties::Properties;
use super::sets::{SetEntry, WireCodes, check_sets, decode_schema, decode_sets, encode_schema, put_str, take_str};
use super::{
    FIXED_LEN, FORMAT_VERSION, LAST_V1, MAGIC, MAX_BLOCK_SIZE, MAX_HEADER_LEN, MIN_BLOCK_SIZE, Order, PREFIX_LEN, Put,
    Take,
};
use event_def::schema::{Schema, Version};

/// The pointer widths, in bytes, a header may give.
const POINTER_WIDTHS: [u8; 4] = [2, 4, 8, 16];

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

/// The header fields a reader checks before anything else.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prefix {
    pub(crate) order: Order,
    pub(crate) format: Version,
    pub(crate) header_len: u32,
    pub(crate) block_size: u32,
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
        if !records_histograms(self.format)
            && self.sets.iter().any(|s| !s.schema.histograms.is_empty() || !s.schema.limits.is_empty())
        {
            return Err(EncodeError(format!(
                "format {} cannot carry histograms or limits (they are header properties since 2.1.0)",
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

/// Whether a stream of `format` has the stop marker's `cause` and `unwritten` and may carry
/// the segment property: 2.0.3 and later of major 2 (docs/FORMAT.md, "Segments").
pub fn records_stop_cause(format: Version) -> bool {
    format.major == FORMAT_VERSION.major && (format.median, format.minor) >= (0, 3)
}

/// Whether a stream of `format` may declare histograms and limits in its header and hold
/// `Suppressed` and `Histogram` records: 2.1.0 and later of major 2 (docs/FORMAT.md,
/// "Histograms", "Limits").
pub fn records_histograms(format: Version) -> bool {
    format.major == FORMAT_VERSION.major && (format.median, format.minor) >= (1, 0)
}

/// Whether a stream of `format` ends with a `Stop` record when its writer stopped cleanly:
/// 2.0.1 and later of major 2 (docs/FORMAT.md, "The clean stop").
pub fn records_stop(format: Version) -> bool {
    records_host(format)
}
