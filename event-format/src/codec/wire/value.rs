//! An argument's value, typed by its format letter ([`Value`], strings as [`Text`]); reading a
//! record's arguments as values ([`ValueIter`]); and the one rule that cuts strings to fit a
//! record ([`fit_strings`]).

use super::{MAX_RECORD_LEN, Order, RECORD_HEADER_LEN, STRING_MAX, STRING_TRUNCATED, Take};
use event_def::letter::Letter;

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

/// The values of a record's arguments, one per letter of its format. Meant for arguments that
/// passed [`validate_args`](super::validate_args); on others it stops early rather than panic.
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

    // Always inlined: called out of line, the value comes back through the stack, and a
    // caller that copies it with one 16-byte load waits for the callee's narrower stores
    // (a failed store-to-load forward): `print` took 0.38 s against 0.25 on 4 M events when
    // the Parquet export's growth moved `Renderer::line` past `#[inline]`'s reach
    // (BENCHMARKS.md).
    #[inline(always)]
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
pub(super) fn char_boundary(bytes: &[u8], limit: usize) -> usize {
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
