//! The one definition of a record's bytes: its header ([`put_record_header`]) and each format
//! letter's encoding ([`ArgWriter`]), in place in a `&mut [u8]` (docs/FORMAT.md, "Records").
//!
//! Every writer calls these: [`BlockWriter`](super::BlockWriter) and [`encode_value`](super::encode_value),
//! the runtime's per-thread buffers (whose hot path inlines them into plain stores: the order
//! is a constant there) and, through the runtime's bridge, the code `event!` generates. The
//! built-in events' bodies are written by [`body`](super::body) with the same letters. So a
//! change to an element's bytes is made here once, and the recorder and the reference encoder
//! cannot disagree (event-runtime's tests compare their bytes).

use super::value::{Text, Value, char_boundary};
use super::{Order, RECORD_HEADER_LEN, STRING_MAX, STRING_TRUNCATED, field};

/// Writes a record header at offset `at` of `block`: the event `code`, the record's length
/// `len` (header included) and the time `delta` from the previous record, in `order`.
///
/// # Panics
/// If `block` has fewer than `at + RECORD_HEADER_LEN` bytes.
#[inline(always)]
pub fn put_record_header(order: Order, block: &mut [u8], at: usize, code: u16, len: u16, delta: u32) {
    let h = &mut block[at..at + RECORD_HEADER_LEN];
    order.put_u16(&mut h[field::CODE..], code);
    order.put_u16(&mut h[field::LENGTH..], len);
    order.put_u32(&mut h[field::DELTA..], delta);
}

/// Writes the arguments of one record, one method per format letter, into the bytes reserved
/// for them (the record less its header), in order.
///
/// The string arguments are known before the record is reserved (their lengths make its
/// length): they are given to [`ArgWriter::new`] and written by index with
/// [`str`](ArgWriter::str), or given whole with [`text`](ArgWriter::text). Strings must
/// already be cut to at most [`STRING_MAX`] bytes (`fit_strings`, `fit_texts`).
///
/// # Panics
/// A write past the reserved bytes panics: the reservation was computed wrongly.
#[derive(Debug)]
pub struct ArgWriter<'a> {
    out: &'a mut [u8],
    /// Bytes written so far, in `0..=out.len()`.
    at: usize,
    order: Order,
    strs: &'a [Text<'a>],
}

impl<'a> ArgWriter<'a> {
    /// A writer of `out` (the record's argument bytes) in `order`, whose string `k` is
    /// `strs[k]`. The runtime writes [`Order::NATIVE`].
    #[inline(always)]
    pub fn new(order: Order, out: &'a mut [u8], strs: &'a [Text<'a>]) -> ArgWriter<'a> {
        ArgWriter { out, at: 0, order, strs }
    }

    /// The bytes written so far.
    #[inline(always)]
    pub fn written(&self) -> usize {
        self.at
    }

    #[inline(always)]
    fn put_u64(&mut self, v: u64) {
        self.order.put_u64(&mut self.out[self.at..self.at + 8], v);
        self.at += 8;
    }

    /// `P`: a pointer, 64 bits.
    #[inline(always)]
    pub fn pointer(&mut self, v: u64) {
        self.put_u64(v);
    }

    /// `A`: an address, 64 bits.
    #[inline(always)]
    pub fn address(&mut self, v: u64) {
        self.put_u64(v);
    }

    /// `W`: a word, 64 bits.
    #[inline(always)]
    pub fn word(&mut self, v: u64) {
        self.put_u64(v);
    }

    /// `U`: an unsigned integer, 32 bits.
    #[inline(always)]
    pub fn unsigned(&mut self, v: u32) {
        self.order.put_u32(&mut self.out[self.at..self.at + 4], v);
        self.at += 4;
    }

    /// `I`: a signed integer, 64 bits two's complement.
    #[inline(always)]
    pub fn signed(&mut self, v: i64) {
        self.put_u64(v as u64);
    }

    /// `D`: a double, its IEEE 754 binary64 bits.
    #[inline(always)]
    pub fn double(&mut self, v: f64) {
        self.put_u64(v.to_bits());
    }

    /// `B`: a bool, one byte, 0 or 1.
    #[inline(always)]
    pub fn bool(&mut self, v: bool) {
        self.out[self.at] = u8::from(v);
        self.at += 1;
    }

    /// `S`: string `k` of those given to [`ArgWriter::new`].
    #[inline(always)]
    pub fn str(&mut self, k: usize) {
        let t = self.strs[k];
        self.text(t);
    }

    /// `S`: the string `t`: a 16-bit length prefix, with [`STRING_TRUNCATED`] set when the
    /// writer cut it, then its bytes.
    #[inline(always)]
    pub fn text(&mut self, t: Text<'_>) {
        debug_assert!(t.bytes.len() <= STRING_MAX, "strings are cut before they are written");
        // At most STRING_MAX < 0x8000 bytes: the length fits the prefix's 15 bits.
        let prefix = t.bytes.len() as u16 | if t.truncated { STRING_TRUNCATED } else { 0 };
        self.order.put_u16(&mut self.out[self.at..self.at + 2], prefix);
        self.out[self.at + 2..self.at + 2 + t.bytes.len()].copy_from_slice(t.bytes);
        self.at += 2 + t.bytes.len();
    }

    /// `value`, by the method of its letter.
    #[inline]
    pub fn value(&mut self, value: &Value<'_>) {
        match *value {
            Value::Pointer(v) => self.pointer(v),
            Value::Address(v) => self.address(v),
            Value::Word(v) => self.word(v),
            Value::Unsigned(v) => self.unsigned(v),
            Value::Signed(v) => self.signed(v),
            Value::Double(v) => self.double(v),
            Value::Bool(v) => self.bool(v),
            Value::Str(t) => self.text(t),
        }
    }
}

/// Appends `value`'s wire encoding ([`ArgWriter::value`]) to `out`. Strings must already be
/// cut by `fit_strings` (at most [`STRING_MAX`] bytes); longer ones are cut here to keep the
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
