//! Records: a 16-bit code, a 16-bit length, a 32-bit time delta, then the arguments packed
//! by format letter (docs/FORMAT.md, "Records").

use super::put::{ArgWriter, field};
use super::{MAX_RECORD_LEN, Order, RECORD_HEADER_LEN, STRING_MAX, STRING_TRUNCATED, Take};
use crate::builtin::{STOP, STOP_FIXED, TIME_EXTEND, TIME_EXTEND_FIXED};
use crate::letter::Letter;
use std::fmt;

/// A string argument as it is on the wire: bytes (UTF-8 from a well-behaved writer, but a
/// reader must not assume it) and whether the writer cut it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Text<'a> {
    /// The bytes recorded.
    pub bytes: &'a [u8],
    /// The writer cut the string to fit [`STRING_MAX`] or the block.
    pub truncated: bool,
}

impl<'a> Text<'a> {
    /// The whole of `s`, not truncated (yet: [`fit_strings`] may cut it).
    pub fn new(s: &'a str) -> Text<'a> {
        Text { bytes: s.as_bytes(), truncated: false }
    }

    /// The text as `&str`, when its bytes are UTF-8 (a well-behaved writer's always are;
    /// docs/FORMAT.md lets a reader meet others).
    pub fn to_str(&self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes).ok()
    }

    /// The text, each invalid UTF-8 sequence replaced by U+FFFD; borrowed when it is UTF-8.
    pub fn to_string_lossy(&self) -> std::borrow::Cow<'a, str> {
        String::from_utf8_lossy(self.bytes)
    }
}

/// One argument value, typed by its format letter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    /// `P`
    Pointer(u64),
    /// `A`
    Address(u64),
    /// `W`
    Word(u64),
    /// `U`
    Unsigned(u32),
    /// `I`
    Signed(i64),
    /// `D`
    Double(f64),
    /// `B`
    Bool(bool),
    /// `S`
    Str(Text<'a>),
}

impl Value<'_> {
    /// The letter of this value's type.
    pub fn letter(&self) -> Letter {
        match self {
            Value::Pointer(_) => Letter::Pointer,
            Value::Address(_) => Letter::Address,
            Value::Word(_) => Letter::Word,
            Value::Unsigned(_) => Letter::Unsigned,
            Value::Signed(_) => Letter::Signed,
            Value::Double(_) => Letter::Double,
            Value::Bool(_) => Letter::Bool,
            Value::Str(_) => Letter::String,
        }
    }

    /// Bytes this value takes on the wire, strings as they are now (see [`fit_strings`]).
    pub fn wire_len(&self) -> usize {
        match self {
            Value::Str(t) => 2 + t.bytes.len(),
            other => other.letter().fixed_size().unwrap_or(0),
        }
    }
}

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
/// 2.0.1): what the writer wrote before the marker's block, as it counted it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stop {
    /// Blocks the stream held before the marker's block.
    pub blocks: u64,
    /// Events in those blocks: every record but `TimeExtend` (and `Stop`).
    pub events: u64,
    /// Events counted lost in those blocks: the `lost` fields and `Dropped` counts.
    pub lost: u64,
}

impl Stop {
    /// The marker's arguments, `blocks`, `events`, `lost`, each a `u64` in `order`; bytes after
    /// them (a later minor's) are ignored. `None` when `args` is shorter than 24 bytes.
    pub fn read(args: &[u8], order: Order) -> Option<Stop> {
        let args = args.get(..STOP_FIXED)?;
        Some(Stop { blocks: order.u64(args), events: order.u64(&args[8..]), lost: order.u64(&args[16..]) })
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

    #[inline]
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

/// The values of a record's arguments, one per letter of its format. Meant for arguments that
/// passed [`validate_args`]; on others it stops early rather than panic.
#[derive(Clone, Debug)]
pub struct ValueIter<'a> {
    letters: std::slice::Iter<'a, Letter>,
    take: Take<'a>,
}

impl<'a> ValueIter<'a> {
    /// The values of `args` read by `format`.
    pub fn new(format: &'a [Letter], args: &'a [u8], order: Order) -> ValueIter<'a> {
        ValueIter { letters: format.iter(), take: Take { rest: args, order } }
    }
}

impl<'a> Iterator for ValueIter<'a> {
    type Item = Value<'a>;

    fn next(&mut self) -> Option<Value<'a>> {
        let take = &mut self.take;
        Some(match self.letters.next()? {
            Letter::Pointer => Value::Pointer(take.u64()?),
            Letter::Address => Value::Address(take.u64()?),
            Letter::Word => Value::Word(take.u64()?),
            Letter::Unsigned => Value::Unsigned(take.u32()?),
            Letter::Signed => Value::Signed(take.u64()? as i64),
            Letter::Double => Value::Double(f64::from_bits(take.u64()?)),
            Letter::Bool => Value::Bool(take.u8()? != 0),
            Letter::String => {
                let prefix = take.u16()?;
                let bytes = take.bytes(usize::from(prefix & !STRING_TRUNCATED))?;
                Value::Str(Text { bytes, truncated: prefix & STRING_TRUNCATED != 0 })
            }
        })
    }
}

/// The length of a record carrying `values`, header included.
pub fn record_len(values: &[Value<'_>]) -> usize {
    RECORD_HEADER_LEN + values.iter().map(Value::wire_len).sum::<usize>()
}

/// The largest `n <= limit` at which `bytes` can be cut without splitting a UTF-8 sequence.
fn char_boundary(bytes: &[u8], limit: usize) -> usize {
    if bytes.len() <= limit {
        return bytes.len();
    }
    let mut n = limit;
    while n > 0 && bytes[n] & 0xC0 == 0x80 {
        n -= 1;
    }
    n
}

/// A part of a record that [`fit`] can measure and, when it is a string, cut.
trait Piece<'a> {
    fn wire_len(&self) -> usize;
    fn text_mut(&mut self) -> Option<&mut Text<'a>>;
}

impl<'a> Piece<'a> for Value<'a> {
    fn wire_len(&self) -> usize {
        Value::wire_len(self)
    }
    fn text_mut(&mut self) -> Option<&mut Text<'a>> {
        match self {
            Value::Str(t) => Some(t),
            _ => None,
        }
    }
}

impl<'a> Piece<'a> for Text<'a> {
    fn wire_len(&self) -> usize {
        2 + self.bytes.len()
    }
    fn text_mut(&mut self) -> Option<&mut Text<'a>> {
        Some(self)
    }
}

/// The one truncation rule: every string to at most [`STRING_MAX`] bytes, then strings cut
/// from the last one backwards until `base_len` plus the pieces fit in `max_len`.
fn fit<'a, P: Piece<'a>>(pieces: &mut [P], base_len: usize, max_len: usize) -> bool {
    let max_len = max_len.min(MAX_RECORD_LEN);
    for p in pieces.iter_mut() {
        if let Some(t) = p.text_mut()
            && t.bytes.len() > STRING_MAX
        {
            t.bytes = &t.bytes[..char_boundary(t.bytes, STRING_MAX)];
            t.truncated = true;
        }
    }
    let total = base_len + pieces.iter().map(P::wire_len).sum::<usize>();
    let mut excess = total.saturating_sub(max_len);
    for p in pieces.iter_mut().rev() {
        if excess == 0 {
            break;
        }
        if let Some(t) = p.text_mut() {
            let keep = char_boundary(t.bytes, t.bytes.len().saturating_sub(excess));
            excess = excess.saturating_sub(t.bytes.len() - keep);
            if keep < t.bytes.len() {
                t.bytes = &t.bytes[..keep];
                t.truncated = true;
            }
        }
    }
    excess == 0
}

/// Cuts string values so that none is longer than [`STRING_MAX`] and the record is at most
/// `max_len` bytes (and at most [`MAX_RECORD_LEN`]): strings are cut from the last one
/// backwards, at character boundaries, and marked truncated. Returns `false` when even empty
/// strings do not fit (the fixed arguments alone are too long), which no valid schema allows
/// with a block of at least `MIN_BLOCK_SIZE` bytes.
pub fn fit_strings(values: &mut [Value<'_>], max_len: usize) -> bool {
    fit(values, RECORD_HEADER_LEN, max_len)
}

/// [`fit_strings`] for a record whose header and fixed-size arguments take `base_len` bytes
/// and whose string arguments are `texts`: the same rule, for writers that keep strings apart.
pub fn fit_texts(texts: &mut [Text<'_>], base_len: usize, max_len: usize) -> bool {
    fit(texts, base_len, max_len)
}

/// Appends `value`'s wire encoding ([`ArgWriter::value`]) to `out`. Strings must already be
/// cut by [`fit_strings`] (at most [`STRING_MAX`] bytes); longer ones are cut here to keep the
/// prefix valid.
pub fn encode_value(value: &Value<'_>, order: Order, out: &mut Vec<u8>) {
    let value = match *value {
        Value::Str(t) => {
            let n = char_boundary(t.bytes, STRING_MAX);
            Value::Str(Text { bytes: &t.bytes[..n], truncated: t.truncated || n < t.bytes.len() })
        }
        other => other,
    };
    let start = out.len();
    out.resize(start + value.wire_len(), 0);
    ArgWriter::new(order, &mut out[start..], &[]).value(&value);
}
