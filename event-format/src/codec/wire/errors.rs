//! Why a header could not be encoded ([`EncodeError`]) or was refused ([`HeaderError`]).

use super::{FIXED_LEN, FORMAT_VERSION, LAST_V1, MAX_BLOCK_SIZE, MAX_HEADER_LEN, MIN_BLOCK_SIZE};
use event_def::schema::{Problem, Version};
use std::fmt;
use std::io;

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
#[non_exhaustive]
pub enum HeaderError {
    /// Reading failed.
    Io(io::Error),
    /// The input does not start with [`MAGIC`](super::MAGIC).
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

/// `Debug` writes the one-line message that `Display` writes, not the variant and its
/// fields: an error returned from `main` (`fn main() -> Result<(), HeaderError>`, or through
/// `Box<dyn Error>`) is printed by the standard library with `Debug`, as `Error: {:?}`, and
/// that line is what the program's user reads. A program that needs the parts matches on
/// them.
impl fmt::Debug for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
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
