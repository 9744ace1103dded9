//! Text rendering of decoded events: the one way every tool writes a value.
//!
//! Pointers and addresses are hex, integers decimal, doubles in Rust's shortest round-trip
//! form, strings quoted with escapes (invalid UTF-8 as `\xNN`) and `...` after the closing
//! quote when the writer cut them. docs/FORMAT.md ("Text rendering") states each rule.
//!
//! A string is the log's, and a log is untrusted: what would act on a terminal instead of
//! showing (control characters, so terminal escape sequences) or make a line read otherwise
//! than it is stored (the bidirectional overrides, embeddings, isolates and marks) is escaped.

use crate::codec::decode::Event;
use crate::codec::wire::{Clock, STRING_TRUNCATED, Take, Text, Timebase, Value};
use event_def::letter::Letter;
use std::fmt::{self, Write};

/// Whether `c` is a bidirectional formatting character: the embeddings and overrides
/// U+202A..=U+202E, the isolates U+2066..=U+2069, and the marks U+200E, U+200F and U+061C.
/// Shown raw, they reorder what a terminal shows of the rest of the line.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// Writes `text` quoted, escaping `"`, `\`, control characters, bidirectional formatting
/// characters ([`is_bidi_control`]) and invalid UTF-8 (one `\xNN` per byte), and marks a cut
/// string with `...` after the closing quote: [`push_text`]'s text.
pub fn write_text<W: Write>(out: &mut W, text: &Text<'_>) -> fmt::Result {
    via_append(out, |sink| push_text(sink, text))
}

/// Writes one value as text: [`push_value`]'s text.
pub fn write_value<W: Write>(out: &mut W, value: &Value<'_>) -> fmt::Result {
    via_append(out, |sink| push_value(sink, value))
}

/// Where the text writers append: a `Vec<u8>` (what `print` renders into, the fast path) or,
/// through [`write_value`] and the other `write_*`, any [`fmt::Write`]. The rules are written
/// once, in the `push_*` functions, over this. Every piece they append is UTF-8 on its own
/// (numbers, escapes and marks are ASCII; a string's text is appended at character
/// boundaries). (Named `Sink` before: `Sink` names the recorder's stream sinks.)
///
/// ```
/// use event_format::text::{push_value, write_value};
/// use event_format::wire::{Text, Value};
/// let value = Value::Str(Text::new("a \"quoted\" word"));
/// let mut bytes = Vec::new();
/// push_value(&mut bytes, &value);
/// let mut text = String::new();
/// write_value(&mut text, &value).unwrap();
/// assert_eq!(text, r#""a \"quoted\" word""#);
/// assert_eq!(bytes, text.as_bytes());
/// ```
pub trait Append {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]);

    /// Appends `bytes[..len]` of an array whose length is known.
    fn put_prefix<const N: usize>(&mut self, bytes: &[u8; N], len: usize) {
        self.put(&bytes[..len.min(N)]);
    }
}

impl Append for Vec<u8> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    /// The whole array goes in with a copy of a known length (a few moves, where a copy of a
    /// variable length calls `memcpy`), and what is beyond `len` is cut off again.
    #[inline]
    fn put_prefix<const N: usize>(&mut self, bytes: &[u8; N], len: usize) {
        let end = self.len() + len.min(N);
        self.extend_from_slice(bytes);
        self.truncate(end);
    }
}

impl Append for String {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        // Each piece is UTF-8 (the trait's promise); were one not, it would show with
        // replacement characters, never as bytes unchecked.
        match std::str::from_utf8(bytes) {
            Ok(s) => self.push_str(s),
            Err(_) => self.push_str(&String::from_utf8_lossy(bytes)),
        }
    }
}

/// The old name of [`Append`]: every [`Append`] is one, so that a bound `S: Sink` still
/// takes what the `push_*` functions do.
#[deprecated(note = "renamed `event_format::text::Append`: `Sink` names the recorder's stream sinks")]
pub trait Sink: Append {}

#[allow(deprecated)]
impl<T: Append + ?Sized> Sink for T {}

/// A [`fmt::Write`] as an [`Append`]: the first error is kept, and nothing is written after it.
struct FmtAppend<'a, W> {
    out: &'a mut W,
    result: fmt::Result,
}

impl<W: Write> Append for FmtAppend<'_, W> {
    fn put(&mut self, bytes: &[u8]) {
        if self.result.is_ok() {
            // Each piece is UTF-8 (the trait's promise); were one not, the write fails.
            self.result = std::str::from_utf8(bytes).map_err(|_| fmt::Error).and_then(|s| self.out.write_str(s));
        }
    }
}

/// Writes to `out` what `push` appends.
fn via_append<W: Write>(out: &mut W, push: impl FnOnce(&mut FmtAppend<'_, W>)) -> fmt::Result {
    let mut sink = FmtAppend { out, result: Ok(()) };
    push(&mut sink);
    sink.result
}

/// `v`'s text as `{v:?}` writes it, from zmij, in two pieces to be written one after the
/// other; `None` where zmij's text may not be std's, which then writes it. A dump writes
/// millions of doubles, and std's formatting costs several times zmij's (ryu's, before: zmij
/// takes half its time, BENCHMARKS.md).
///
/// zmij's digits are std's but for an exact tie between two shortest candidates, which zmij
/// breaks to the even digit and std upwards; zmij also writes [1e-5, 1e-4) without an
/// exponent. Both, and what is not finite, go to std. And zmij writes a positive exponent
/// with a `+` (`1e+16`), std without (`1e16`): the pieces leave it out.
fn shortest(v: f64, buffer: &mut zmij::Buffer) -> Option<(&str, &str)> {
    if !v.is_finite() || (1e-5..1e-4).contains(&v.abs()) {
        return None;
    }
    let text = buffer.format_finite(v);
    if v != 0.0 && may_tie(v, text) {
        return None;
    }
    // zmij writes an exponent from 1e16 (as std does; below 1e-4 it is negative), and a `+`
    // is only ever its sign.
    if v.abs() < 1e16 {
        return Some((text, ""));
    }
    Some(text.split_once('+').unwrap_or((text, "")))
}

/// Whether zmij's `text` of `v` (finite, not zero) may be one of two shortest candidates at
/// an equal distance from `v`. A tie is `v = (2D + 1) * 5 * 10^(p - 1)` for the digits `D`
/// whose last has the power of ten `p`: `v` is then an odd number times `2^(p - 1)`, so a
/// `v` whose lowest set bit is another power of two cannot be one.
fn may_tie(v: f64, text: &str) -> bool {
    let bits = v.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, exponent) = if biased == 0 { (fraction, -1074) } else { (fraction | 1 << 52, biased - 1075) };
    let lowest_bit = exponent + mantissa.trailing_zeros() as i32;
    // The last of at most 17 digits is at most 16 powers of ten below the first, which is at
    // least floor(log10(2^e)) for a normal `v` in [2^e, 2^(e+1)); `(e * 78913) >> 18` is that
    // floor, or one more for a negative `e`: a lowest bit far below cannot make a tie.
    if biased != 0 && lowest_bit + 1 < (((biased - 1023) * 78913) >> 18) - 18 {
        return false;
    }
    last_digit_power(text.strip_prefix('-').unwrap_or(text)) == Some(lowest_bit + 1)
}

/// The power of ten of the last digit of zmij's text (without a sign): `-2` for `12.25`, `3`
/// for `1000.0` and `1.5e+16`, `-7` for `1.25e-5`. (Its at most 24 bytes are searched byte by
/// byte: a search for a `char` costs more set up than such a text.)
fn last_digit_power(text: &str) -> Option<i32> {
    let bytes = text.as_bytes();
    let (digits, exponent) = match bytes.iter().position(|&b| b == b'e') {
        Some(at) => (&bytes[..at], text.get(at + 1..)?.parse::<i32>().ok()?),
        None => (bytes, 0),
    };
    Some(match digits.iter().position(|&b| b == b'.') {
        Some(at) if exponent == 0 && &digits[at + 1..] == b"0" => {
            digits[..at].iter().rev().take_while(|&&b| b == b'0').count() as i32
        }
        Some(at) => exponent - (digits.len() - at - 1) as i32,
        None => exponent,
    })
}

/// Builds a table of every number below `10^width` (`base` 10) or `16^width` (`base` 16) in
/// `width` digits, one after another.
const fn digit_table<const N: usize>(base: usize, width: usize) -> [u8; N] {
    let mut table = [0u8; N];
    let mut n = 0;
    while n * width < N {
        let (mut v, mut d) = (n, width);
        while d > 0 {
            d -= 1;
            table[n * width + d] = b"0123456789abcdef"[v % base];
            v /= base;
        }
        n += 1;
    }
    table
}

/// `0000` to `9999`: the decimals of seconds are written four digits at a time.
static DECIMAL_BYTES: [u8; 40_000] = digit_table(10, 4);

/// The civil date (year, month, day) of day `days` since the Unix epoch, in the proleptic
/// Gregorian calendar (Howard Hinnant's `civil_from_days`): the one conversion of the readers
/// that print a date (a snapshot's time, the Parquet export's `date=` partitions).
///
/// ```
/// assert_eq!(event_format::text::civil_date(0), (1970, 1, 1));
/// assert_eq!(event_format::text::civil_date(11_016), (2000, 2, 29));
/// assert_eq!(event_format::text::civil_date(-1), (1969, 12, 31));
/// ```
pub fn civil_date(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Writes the time from the clock's start to `ticks` as seconds with 9 decimals, computed
/// in integers so that equal ticks always print equal text: [`Seconds::push`]'s text.
pub fn write_seconds<W: Write>(out: &mut W, clock: &Clock, ticks: u64) -> fmt::Result {
    via_append(out, |sink| Timebase::new(clock).push(sink, ticks))
}

/// `00` to `99`, for the byte writers two digits at a time.
static DECIMAL_PAIRS: [u8; 200] = digit_table(10, 2);

/// The pair of digits of `v` (below 100).
fn pair(v: u64) -> [u8; 2] {
    let i = 2 * v as usize;
    [DECIMAL_PAIRS[i], DECIMAL_PAIRS[i + 1]]
}

/// Appends `v` in decimal, as `{v}` writes it: [`write_value`]'s text of a word, as bytes.
#[inline]
pub fn push_decimal<S: Append>(out: &mut S, mut v: u64) {
    if v < 100_000_000 {
        // What logs mostly hold: eight digits at once, the leading zeros shifted out.
        let digits = decimal8(v as u32);
        let zeros = (digits.trailing_zeros() / 8).min(7);
        let ascii = (digits >> (8 * zeros)) + 0x3030_3030_3030_3030;
        out.put_prefix(&ascii.to_le_bytes(), 8 - zeros as usize);
        return;
    }
    let digits = v.checked_ilog10().unwrap_or(0) as usize + 1;
    let mut buf = [b'0'; 20];
    let mut at = digits;
    while v >= 100 {
        at -= 2;
        buf[at..at + 2].copy_from_slice(&pair(v % 100));
        v /= 100;
    }
    if v >= 10 {
        buf[..2].copy_from_slice(&pair(v));
    } else {
        buf[0] = b'0' + v as u8;
    }
    out.put_prefix(&buf, digits);
}

/// The eight decimal digits of `v` (below 10^8) as byte values 0 to 9, the most significant
/// in the lowest byte (the first in memory): the two halves of four digits, each halved into
/// two of two, each into its digits, all lanes at once (a division by 100 as a multiplication
/// by 5243 and a shift by 19, exact below 43699; by 10 as 103 and 10, exact below 179).
fn decimal8(v: u32) -> u64 {
    let x = u64::from(v / 10_000) | u64::from(v % 10_000) << 32;
    let hundreds = ((x * 5243) >> 19) & 0x0000_007f_0000_007f;
    let x = hundreds | (x - hundreds * 100) << 16;
    let tens = ((x * 103) >> 10) & 0x000f_000f_000f_000f;
    tens | (x - tens * 10) << 8
}

/// Appends `v` in hex, as `{v:#x}` writes it: all sixteen digits at once, the first one
/// that is not a leading zero shifted to the front, then what is beyond the last cut off.
#[inline]
pub fn push_hex<S: Append>(out: &mut S, v: u64) {
    let digits = (64 - (v | 1).leading_zeros()).div_ceil(4);
    let v = v << (4 * (16 - digits));
    let mut buf = [0; 18];
    buf[..2].copy_from_slice(b"0x");
    buf[2..10].copy_from_slice(&hex8((v >> 32) as u32));
    buf[10..].copy_from_slice(&hex8(v as u32));
    out.put_prefix(&buf, 2 + digits as usize);
}

/// The eight hex digits of `v`, most significant first: each nibble spread to a byte of its
/// own, then made a digit (`0`-`9` by adding `'0'`, `a`-`f` by adding `'a' - 10` instead).
fn hex8(v: u32) -> [u8; 8] {
    let v = u64::from(v);
    let v = (v | v << 16) & 0x0000_ffff_0000_ffff;
    let v = (v | v << 8) & 0x00ff_00ff_00ff_00ff;
    // Every other byte holds two nibbles: the more significant goes up to the byte above.
    let v = (v & 0x00f0_00f0_00f0_00f0) << 4 | (v & 0x000f_000f_000f_000f);
    // 0x06 added to a nibble carries into bit 4 exactly when it is 10 or more.
    let letters = ((v + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    let ascii = v + 0x3030_3030_3030_3030 + letters * (b'a' - b'0' - 10) as u64;
    ascii.to_be_bytes()
}

/// Appends `text` as [`write_text`] writes it. A string of printable ASCII without a quote or
/// a backslash (what logs mostly hold) goes in as it is, without walking its characters.
pub fn push_text<S: Append>(out: &mut S, text: &Text<'_>) {
    if is_plain(text.bytes) {
        out.put(b"\"");
        out.put(text.bytes);
        out.put(b"\"");
        if text.truncated {
            out.put(b"...");
        }
        return;
    }
    out.put(b"\"");
    for chunk in text.bytes.utf8_chunks() {
        let valid = chunk.valid();
        let mut run = 0;
        for (at, c) in valid.char_indices() {
            let escape: &[u8] = match c {
                '"' => b"\\\"",
                '\\' => b"\\\\",
                '\n' => b"\\n",
                '\r' => b"\\r",
                '\t' => b"\\t",
                ' '..='~' => continue,
                c if c.is_control() || is_bidi_control(c) => b"",
                _ => continue,
            };
            out.put(&valid.as_bytes()[run..at]);
            run = at + c.len_utf8();
            if escape.is_empty() {
                let mut s = String::new();
                let _ = write!(s, "\\u{{{:x}}}", c as u32);
                out.put(s.as_bytes());
            } else {
                out.put(escape);
            }
        }
        out.put(&valid.as_bytes()[run..]);
        for &b in chunk.invalid() {
            let (high, low) = (HEX_DIGITS[usize::from(b >> 4)], HEX_DIGITS[usize::from(b & 0xf)]);
            out.put(&[b'\\', b'x', high, low]);
        }
    }
    out.put(b"\"");
    if text.truncated {
        out.put(b"...");
    }
}

/// The hex digits, for a byte that is not UTF-8 (`\xNN`).
const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Whether every byte of `bytes` is printable ASCII other than `"` and `\\`: shown as it is
/// (and its own `Debug` text between the quotes, as the `tracing` bridge writes a string that
/// needs no escape). Eight bytes at a time, with the classic tests on a word's bytes ("has a
/// byte below n", "above n", "a zero byte"), each nonzero exactly when some byte is one it
/// looks for.
///
/// ```
/// use event_format::text::is_plain;
/// assert!(is_plain(b"GET /users/7"));
/// assert!(!is_plain(b"say \"hi\"") && !is_plain(b"tab\there") && !is_plain("caf\u{e9}".as_bytes()));
/// ```
#[inline]
pub fn is_plain(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let special = |x: u64| {
        let below_space = x.wrapping_sub(ONES * b' ' as u64) & !x & HIGHS;
        let above_tilde = (x.wrapping_add(ONES) | x) & HIGHS;
        below_space | above_tilde | has_zero(x ^ (ONES * b'"' as u64)) | has_zero(x ^ (ONES * b'\\' as u64))
    };
    let word = |chunk: &[u8]| {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        u64::from_le_bytes(word)
    };
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        if special(word(chunk)) != 0 {
            return false;
        }
    }
    // The rest in one more word, of bytes tested already or plain: the last eight bytes
    // when there are eight; else two overlapping halves, or the first, middle and last
    // byte (which are all of one to three), among plain `a`s. (Byte by byte, a string of
    // seven cost more than one of sixteen.)
    let rest = chunks.remainder();
    let n = rest.len();
    let last = if n == 0 {
        return true;
    } else if bytes.len() >= 8 {
        word(&bytes[bytes.len() - 8..])
    } else if n >= 4 {
        let half = |at: usize| u64::from(u32::from_le_bytes([rest[at], rest[at + 1], rest[at + 2], rest[at + 3]]));
        half(0) | half(n - 4) << 32
    } else {
        u64::from_le_bytes([rest[0], rest[n / 2], rest[n - 1], b'a', b'a', b'a', b'a', b'a'])
    };
    special(last) == 0
}

/// Appends `value` as [`write_value`] writes it.
// Always: in the loop that renders a dump's lines, its call was a quarter of `print`'s time
// (BENCHMARKS.md), and with a second caller (CSV) the compiler stopped inlining it.
#[inline(always)]
pub fn push_value<S: Append>(out: &mut S, value: &Value<'_>) {
    match value {
        Value::Pointer(v) | Value::Address(v) => push_hex(out, *v),
        Value::Word(v) => push_decimal(out, *v),
        Value::Unsigned(v) => push_decimal(out, u64::from(*v)),
        Value::Signed(v) => {
            if *v < 0 {
                out.put(b"-");
            }
            push_decimal(out, v.unsigned_abs());
        }
        // Of a known length (a copy of a variable one calls `memcpy`).
        Value::Bool(v) => out.put_prefix(if *v { b"true " } else { b"false" }, if *v { 4 } else { 5 }),
        Value::Str(t) => push_text(out, t),
        Value::Double(v) => push_double(out, *v),
    }
}

/// Appends `event`'s values as [`push_value`] writes them, each after what `name` appends for
/// its entry of `names` (one a value, in order; the values stop where they or the names do),
/// and hands each value and its place to `written` once it is written (where a reader notes
/// what a value needs besides its text: a label after an address).
///
/// The values are read as [`Event::values`] reads them, but each is written where it is read:
/// one branch on its letter reads and writes it, where reading the values first and writing
/// them after branched twice and passed each through the stack (`print` writes millions).
///
/// ```
/// use event_format::decode::{Catalog, Decoder, Entry};
/// use event_format::text::{push_value, push_values};
/// # let bytes = event_format::testing::sample_stream(event_format::wire::Order::Little);
/// let mut decoder = Decoder::new(&bytes[..]).unwrap();
/// let catalog = Catalog::new(&decoder.header().sets);
/// let block = decoder.next_block().unwrap().unwrap();
/// for entry in block.entries(&catalog) {
///     let Entry::Event(event) = entry else { continue };
///     let (mut at_once, mut one_by_one) = (Vec::new(), Vec::new());
///     let name = |out: &mut Vec<u8>, name: &String| out.extend(format!(" {name}=").bytes());
///     push_values(&mut at_once, &event, &event.desc.params, name, |_, _, _| {});
///     for (name, value) in event.desc.params.iter().zip(event.values()) {
///         one_by_one.extend(format!(" {name}=").bytes());
///         push_value(&mut one_by_one, &value);
///     }
///     assert_eq!(at_once, one_by_one);
/// }
/// ```
#[inline(always)]
pub fn push_values<'a, S: Append, N>(
    out: &mut S,
    event: &Event<'a>,
    names: &[N],
    mut name: impl FnMut(&mut S, &N),
    mut written: impl FnMut(&mut S, usize, Value<'a>),
) {
    let mut take = Take { rest: event.args, order: event.order };
    for (i, (letter, n)) in event.desc.format.iter().zip(names).enumerate() {
        // Each arm reads its value, then writes the name and the value of a known type (a
        // macro, not a closure: a closure called from eight arms was not inlined in them).
        macro_rules! put {
            ($value:expr) => {{
                let value = $value;
                name(out, n);
                push_value(out, &value);
                written(out, i, value);
            }};
        }
        match letter {
            Letter::Pointer => match take.u64() {
                Some(v) => put!(Value::Pointer(v)),
                None => break,
            },
            Letter::Address => match take.u64() {
                Some(v) => put!(Value::Address(v)),
                None => break,
            },
            Letter::Word => match take.u64() {
                Some(v) => put!(Value::Word(v)),
                None => break,
            },
            Letter::Unsigned => match take.u32() {
                Some(v) => put!(Value::Unsigned(v)),
                None => break,
            },
            Letter::Signed => match take.u64() {
                Some(v) => put!(Value::Signed(v as i64)),
                None => break,
            },
            Letter::Double => match take.u64() {
                Some(v) => put!(Value::Double(f64::from_bits(v))),
                None => break,
            },
            Letter::Bool => match take.u8() {
                Some(v) => put!(Value::Bool(v != 0)),
                None => break,
            },
            Letter::String => {
                let Some(prefix) = take.u16() else { break };
                let Some(bytes) = take.bytes(usize::from(prefix & !STRING_TRUNCATED)) else { break };
                put!(Value::Str(Text { bytes, truncated: prefix & STRING_TRUNCATED != 0 }));
            }
        }
    }
}

/// Appends `v` as `{v:?}` writes it (the shortest digits that read back as `v`; an exponent
/// below 1e-4 and from 1e16).
fn push_double<S: Append>(out: &mut S, v: f64) {
    let mut buffer = zmij::Buffer::new();
    match shortest(v, &mut buffer) {
        Some((head, tail)) => {
            out.put(head.as_bytes());
            out.put(tail.as_bytes());
        }
        None => {
            let mut s = String::new();
            let _ = write!(s, "{v:?}");
            out.put(s.as_bytes());
        }
    }
}

/// A clock's times as [`write_seconds`] writes them, for a writer of many: the log's
/// [`Timebase`], whose one divider spares each time its divisions by the clock's rate (a
/// division costs tens of cycles, a dump writes millions of times). Its text is written here,
/// its numbers there.
pub type Seconds = Timebase;

impl Timebase {
    /// Writes the time from the clock's start to `ticks`, as [`Timebase::push`] appends it.
    pub fn write<W: Write>(&self, out: &mut W, ticks: u64) -> fmt::Result {
        via_append(out, |sink| self.push(sink, ticks))
    }

    /// Appends the time from the clock's start to `ticks` as seconds with 9 decimals, computed
    /// in integers so that equal ticks always print equal text: [`Timebase::nanos`] as
    /// `WHOLE.NNNNNNNNN`, with `-` before a time before the start.
    #[inline]
    pub fn push<S: Append>(&self, out: &mut S, ticks: u64) {
        let Some((whole, nanos)) = self.split(ticks) else {
            // Before the start, or a rate of 18 GHz or more: in 128 bits.
            let nanos = self.nanos(ticks).unsigned_abs();
            let sign = if ticks < self.clock().start_ticks { "-" } else { "" };
            let mut s = String::new();
            let _ = write!(s, "{sign}{}.{:09}", nanos / 1_000_000_000, nanos % 1_000_000_000);
            out.put(s.as_bytes());
            return;
        };
        // `W.nnnnnnnnn`, the whole seconds' last digit first: the first 10 seconds of a log
        // are written at once.
        let mut buf = [b'.'; 11];
        buf[0] = b'0' + (whole % 10) as u8;
        buf[2] = b'0' + (nanos / 100_000_000) as u8;
        let (high, low) = ((nanos / 10_000 % 10_000) as usize, (nanos % 10_000) as usize);
        buf[3..7].copy_from_slice(&DECIMAL_BYTES[4 * high..4 * high + 4]);
        buf[7..11].copy_from_slice(&DECIMAL_BYTES[4 * low..4 * low + 4]);
        if whole >= 10 {
            push_decimal(out, whole / 10);
        }
        out.put(&buf);
    }
}

/// Writes `event` as one line (without the newline): seconds since start, `T` and the
/// thread id, `Kind.Name` (`set:Kind.Name` when the stream holds more than one set), and
/// `param=value` pairs.
///
/// ```text
/// 0.000001200 T1 Arena.ArenaCreate arena=0x7f0000001000 base=0x7f0000000000 size=1048576
/// ```
pub fn write_event<W: Write>(out: &mut W, clock: &Clock, event: &Event<'_>) -> fmt::Result {
    write_seconds(out, clock, event.time)?;
    write!(out, " T{} {}", event.thread, event.desc.full_name())?;
    for (name, value) in event.desc.params.iter().zip(event.values()) {
        write!(out, " {name}=")?;
        write_value(out, &value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::write_seconds;
    use crate::codec::wire::{Clock, ClockSource};

    fn seconds(rate: u64, start: u64, ticks: u64) -> String {
        let clock = Clock {
            source: ClockSource::Tsc,
            ticks_per_second: rate,
            ref_ticks: 0,
            ref_wall_ns: 0,
            start_ticks: start,
        };
        let mut s = String::new();
        write_seconds(&mut s, &clock, ticks).unwrap();
        s
    }

    #[test]
    fn numbers_are_written_as_format_writes_them() {
        use crate::codec::wire::Value;
        let write = |value: Value<'_>| {
            let mut s = String::new();
            super::write_value(&mut s, &value).unwrap();
            s
        };
        // The pointers', addresses' and words' writers, and the byte writers under them.
        let (write_hex, write_decimal) = (|v| write(Value::Address(v)), |v| write(Value::Word(v)));
        for v in [0u64, 1, 9, 10, 15, 16, 255, 4096, 0x7f3a_4000_0000, u64::from(u32::MAX), u64::MAX - 1, u64::MAX] {
            assert_eq!(write_hex(v), format!("{v:#x}"));
            assert_eq!(write(Value::Pointer(v)), format!("{v:#x}"));
            assert_eq!(write_decimal(v), format!("{v}"));
            assert_eq!(write(Value::Unsigned(v as u32)), format!("{}", v as u32));
        }
        // Every number of digits, and its edges: the writers go by groups of digits.
        let mut edges = Vec::new();
        for shift in 0..64 {
            let p = 1u64 << shift;
            edges.extend([p - 1, p, p + 1]);
        }
        let mut p = 1u64;
        while let Some(next) = p.checked_mul(10) {
            edges.extend([p - 1, p, p + 1, next - 1]);
            p = next;
        }
        for v in edges {
            assert_eq!(write_hex(v), format!("{v:#x}"));
            assert_eq!(write(Value::Pointer(v)), format!("{v:#x}"));
            assert_eq!(write_decimal(v), format!("{v}"));
            assert_eq!(write(Value::Unsigned(v as u32)), format!("{}", v as u32));
        }
        // Below 10^8 (eight digits at once), as text and as bytes: densely, then every
        // 97th up to the bound.
        for v in (0..1_000_000u64).chain((1_000_000..100_000_001).step_by(97)) {
            let mut bytes = Vec::new();
            super::push_decimal(&mut bytes, v);
            assert_eq!((write_decimal(v), bytes), (format!("{v}"), format!("{v}").into_bytes()));
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX, -720] {
            let mut s = String::new();
            super::write_value(&mut s, &crate::codec::wire::Value::Signed(v)).unwrap();
            assert_eq!(s, format!("{v}"));
        }
    }

    /// docs/FORMAT.md ("Text rendering"): each rule of a value's text, pinned.
    #[test]
    fn values_are_written_as_format_md_says() {
        use crate::codec::wire::{Text, Value};
        let text = |v: Value<'_>| {
            let mut s = String::new();
            super::write_value(&mut s, &v).unwrap();
            s
        };
        assert_eq!(text(Value::Pointer(0xABCDEF)), "0xabcdef");
        let doubles = [
            (0.0001, "0.0001"),
            (0.00001, "1e-5"),
            (1e15, "1000000000000000.0"),
            (9999999999999998.0, "9999999999999998.0"),
            (1e16, "1e16"),
            (-1.5e16, "-1.5e16"),
            (1.0 / 3.0, "0.3333333333333333"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e308"),
            (-0.0, "-0.0"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (v, expected) in doubles {
            assert_eq!(text(Value::Double(v)), expected);
        }
        let s = |bytes: &'static [u8], truncated| text(Value::Str(Text { bytes, truncated }));
        // Cc controls (C0, DEL, C1) as \u{hex}, lower case, no leading zeros.
        assert_eq!(s(b"a\x00\x1b[31m\x7f\xc2\x9b", false), r#""a\u{0}\u{1b}[31m\u{7f}\u{9b}""#);
        // Every bidirectional formatting character; a joiner (U+200D) is not one.
        let bidi =
            "\u{61c}\u{200e}\u{200f}\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}\u{2066}\u{2067}\u{2068}\u{2069}\u{200d}";
        assert_eq!(
            s(bidi.as_bytes(), false),
            r#""\u{61c}\u{200e}\u{200f}\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}\u{2066}\u{2067}\u{2068}\u{2069}"#
                .to_owned()
                + "\u{200d}\""
        );
        // One \xNN per byte that is not UTF-8: a cut 3-byte sequence is two escapes.
        assert_eq!(s(b"\xe2\x82 \xff\"\\", true), r#""\xe2\x82 \xff\"\\"..."#);
    }

    /// Doubles go through zmij with std as the fallback: every value's text must be `{v:?}`'s,
    /// on the edges (ties, the exponent's thresholds, subnormals) and on random values.
    #[test]
    fn doubles_are_written_as_debug_writes_them() {
        let check = |v: f64| {
            let mut s = String::new();
            super::write_value(&mut s, &crate::codec::wire::Value::Double(v)).unwrap();
            assert_eq!(s, format!("{v:?}"), "{:#x}", v.to_bits());
        };
        let mut edges = vec![0.0, -0.0, f64::MIN_POSITIVE, f64::MAX, f64::MIN, f64::EPSILON, 5e-324, 1e-4, 1e-5, 1e16];
        edges.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.1, 0.2, 0.3, 2.5, 0.125, 1e23, 9007199254740993.0]);
        // Exact ties between two shortest candidates (zmij and std break them differently).
        // (Exact sums: the literals alone have more digits than the doubles need.)
        edges.extend([1389203678596250.0 + 0.25, 618515042358025.0 + 0.25, 90265226872708.0 + 0.625, 15e-324]);
        // Every power of two, normal (each exponent) and subnormal (each bit), and neighbours.
        let powers = (1..2047u64).map(|biased| biased << 52).chain((0..52).map(|bit| 1u64 << bit));
        for bits in powers {
            edges.extend([bits, bits + 1, bits - 1].map(f64::from_bits));
        }
        for p in -325..=308 {
            let ten: f64 = format!("1e{p}").parse().unwrap();
            edges.extend([ten, f64::from_bits(ten.to_bits() + 1), f64::from_bits(ten.to_bits().saturating_sub(1))]);
        }
        for v in edges {
            check(v);
            check(-v);
        }
        // Random bit patterns, values as a log holds them (x / 3, quarters, scaled), xorshift.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..3_000_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check(match i % 4 {
                0 => f64::from_bits(x),
                1 => (x % 10_000_000_000) as f64 / 3.0,
                2 => (x % 100_000) as f64 / 8.0 * 10f64.powi((x >> 40) as i32 % 30 - 15),
                _ => (x % 1000) as f64 * 2f64.powi((x >> 32) as i32 % 200 - 100),
            });
        }
    }

    /// `push_values` writes what `values` and `push_value` write, name by name, and hands on
    /// each value read, in both byte orders; cut arguments stop both at the same place.
    #[test]
    fn values_written_where_read_are_those_read_first() {
        use crate::codec::decode::{Catalog, Decoder, Entry, Event};
        use crate::codec::wire::{Order, Value};
        fn one_by_one<'a>(event: &Event<'a>) -> (Vec<u8>, Vec<Value<'a>>) {
            let mut out = Vec::new();
            for (name, value) in event.desc.params.iter().zip(event.values()) {
                out.extend(format!(" {name}=").bytes());
                super::push_value(&mut out, &value);
            }
            (out, event.values().collect())
        }
        fn at_once<'a>(event: &Event<'a>) -> (Vec<u8>, Vec<Value<'a>>) {
            let (mut out, mut seen) = (Vec::new(), Vec::new());
            let name = |out: &mut Vec<u8>, name: &String| out.extend(format!(" {name}=").bytes());
            super::push_values(&mut out, event, &event.desc.params, name, |_, i, value| seen.push((i, value)));
            assert!(seen.iter().enumerate().all(|(n, (i, _))| n == *i));
            (out, seen.into_iter().map(|(_, v)| v).collect())
        }
        let mut events = 0;
        for order in [Order::Little, Order::Big] {
            let bytes = crate::testing::sample_stream(order);
            let mut decoder = Decoder::new(&bytes[..]).unwrap();
            let catalog = Catalog::new(&decoder.header().sets);
            while let Some(block) = decoder.next_block() {
                let block = block.unwrap();
                for entry in block.entries(&catalog) {
                    let Entry::Event(event) = entry else { continue };
                    events += 1;
                    assert_eq!(at_once(&event), one_by_one(&event), "{}", event.desc.name);
                    // Arguments cut short (which the catalog refuses, but the writers must
                    // not read past): both stop at the same value.
                    for len in 0..event.args.len() {
                        let cut = Event { args: &event.args[..len], ..event };
                        assert_eq!(at_once(&cut), one_by_one(&cut), "{} cut at {len}", event.desc.name);
                    }
                }
            }
        }
        assert!(events > 10);
    }

    /// The word-at-a-time test of plain bytes is the byte-by-byte one.
    #[test]
    fn plain_bytes_are_told_a_word_at_a_time() {
        let plain = |b: &[u8]| b.iter().all(|b| (b' '..=b'~').contains(b) && *b != b'"' && *b != b'\\');
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..40 {
            for _ in 0..2000 {
                let mut bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // Mostly plain, with every byte value now and then.
                        if x.is_multiple_of(8) { (x >> 8) as u8 } else { b' ' + (x >> 8) as u8 % 95 }
                    })
                    .collect();
                assert_eq!(super::is_plain(&bytes), plain(&bytes), "{bytes:?}");
                for edge in [0x00, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0xff] {
                    if len > 0 {
                        let at = (x as usize) % len;
                        bytes[at] = edge;
                        assert_eq!(super::is_plain(&bytes), plain(&bytes), "{bytes:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn seconds_are_exact_on_both_paths() {
        // 64-bit path.
        assert_eq!(seconds(3_000_000_000, 1000, 1000 + 4_500_000_001), "1.500000000");
        assert_eq!(seconds(1_000_000_000, 0, u64::MAX), "18446744073.709551615");
        assert_eq!(seconds(2_400_000_000, 7, 7 + 2_400_000_000 * 3 + 1_200_000_000), "3.500000000");
        // Before the start, and an absurd rate: the 128-bit path.
        assert_eq!(seconds(1_000_000_000, 1_000, 500), "-0.000000500");
        assert_eq!(seconds(u64::MAX, 0, u64::MAX - 1), "0.999999999");
        // Both paths agree where both apply.
        for (rate, start, ticks) in
            [(3_000_000_007u64, 11u64, 987_654_321_987u64), (1, 0, 5), (999_999_999, 1, 1_999_999_999)]
        {
            let delta = i128::from(ticks) - i128::from(start);
            let r = i128::from(rate);
            assert_eq!(seconds(rate, start, ticks), format!("{}.{:09}", delta / r, (delta % r) * 1_000_000_000 / r));
        }
        // Random rates, starts and times (every number of whole digits), against `format!`.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for i in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let rate = [1, 1_000, 1_000_000_000, 2_400_000_000, 3_000_000_007][i as usize % 5] + x % 7;
            let start = (x >> 8) % 1_000_000;
            let ticks = start.saturating_add(x >> (i % 60));
            let delta = ticks - start;
            assert_eq!(
                seconds(rate, start, ticks),
                format!("{}.{:09}", delta / rate, delta % rate * 1_000_000_000 / rate)
            );
        }
    }
}
