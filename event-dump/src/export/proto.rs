//! Protocol Buffers' wire format, written by hand: the few field types the Perfetto and OTLP
//! exports write (varints, 32- and 64-bit fixed values, doubles, bytes and nested messages), into one
//! buffer, with no schema compiler and no per-field allocation.
//!
//! A nested message is written in place: one byte is kept for its length, the message is
//! written after it, and the length goes in once known (the bytes move only for a message
//! of 128 bytes or more, whose length takes more than a byte).

/// Wire type of a varint field.
const VARINT: u64 = 0;
/// Wire type of a 64-bit field.
const I64: u64 = 1;
/// Wire type of a length-delimited field.
const LEN: u64 = 2;
/// Wire type of a 32-bit field.
const I32: u64 = 5;

/// A buffer that protobuf fields are appended to.
#[derive(Debug, Default)]
pub(crate) struct Proto {
    pub(crate) buf: Vec<u8>,
}

/// Where a nested message started: [`Proto::begin`]'s mark, for [`Proto::end`].
#[must_use]
pub(crate) struct Nested(usize);

impl Proto {
    /// Appends `v` as a varint.
    #[inline]
    pub(crate) fn varint(&mut self, mut v: u64) {
        if v < 0x80 {
            // Most of a trace's varints: keys, small numbers.
            self.buf.push(v as u8);
            return;
        }
        while v >= 0x80 {
            self.buf.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    #[inline]
    fn key(&mut self, field: u32, wire: u64) {
        self.varint(u64::from(field) << 3 | wire);
    }

    /// A varint field: `uint32`, `uint64`, `bool`, an enum.
    #[inline]
    pub(crate) fn uint(&mut self, field: u32, v: u64) {
        self.key(field, VARINT);
        self.varint(v);
    }

    /// An `int64` field (a negative value takes 10 bytes, as the format says).
    #[inline]
    pub(crate) fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    /// A `fixed64` field.
    #[inline]
    pub(crate) fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, I64);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A `fixed32` field.
    #[inline]
    pub(crate) fn fixed32(&mut self, field: u32, v: u32) {
        self.key(field, I32);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// An `sfixed64` field.
    #[inline]
    pub(crate) fn sfixed64(&mut self, field: u32, v: i64) {
        self.fixed64(field, v as u64);
    }

    /// A `double` field.
    #[inline]
    pub(crate) fn double(&mut self, field: u32, v: f64) {
        self.fixed64(field, v.to_bits());
    }

    /// A `bytes` or `string` field.
    #[inline]
    pub(crate) fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, LEN);
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    /// The key and length of a `bytes` field or message of `len` bytes, which the caller
    /// writes after them (elsewhere: bytes too many to copy here).
    pub(crate) fn len_prefix(&mut self, field: u32, len: usize) {
        self.key(field, LEN);
        self.varint(len as u64);
    }

    /// Starts a nested message in field `field`; its fields follow, then [`Proto::end`].
    #[inline]
    pub(crate) fn begin(&mut self, field: u32) -> Nested {
        self.key(field, LEN);
        self.buf.push(0);
        Nested(self.buf.len())
    }

    /// Ends the nested message `nested` began: writes its length.
    #[inline]
    pub(crate) fn end(&mut self, nested: Nested) {
        let start = nested.0;
        let len = self.buf.len() - start;
        if len < 0x80 {
            self.buf[start - 1] = len as u8;
            return;
        }
        self.end_long(start, len);
    }

    /// [`Proto::end`] of a message whose length takes more than a byte: the message moves.
    #[cold]
    #[inline(never)]
    fn end_long(&mut self, start: usize, len: usize) {
        let mut head = [0u8; 10];
        let mut n = 0;
        let mut v = len as u64;
        while v >= 0x80 {
            head[n] = v as u8 | 0x80;
            v >>= 7;
            n += 1;
        }
        head[n] = v as u8;
        self.buf.splice(start - 1..start, head[..=n].iter().copied());
    }

    /// A nested message in field `field`, written by `write`.
    #[inline]
    pub(crate) fn message(&mut self, field: u32, write: impl FnOnce(&mut Proto)) {
        let nested = self.begin(field);
        write(self);
        self.end(nested);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_encoded_as_the_format_says() {
        // The examples of protobuf.dev's "Encoding": 150 in field 1, "testing" in field 2.
        let mut p = Proto::default();
        p.uint(1, 150);
        assert_eq!(p.buf, [0x08, 0x96, 0x01]);
        let mut p = Proto::default();
        p.bytes(2, b"testing");
        assert_eq!(p.buf, [0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']);
        let mut head = Proto::default();
        head.len_prefix(2, 7);
        assert_eq!([&head.buf[..], b"testing"].concat(), p.buf, "the same field, its bytes written apart");
        let mut p = Proto::default();
        p.int(1, -2);
        assert_eq!(p.buf, [0x08, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        let mut p = Proto::default();
        p.double(5, 1.0);
        assert_eq!(p.buf, [0x29, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]);
        let mut p = Proto::default();
        p.fixed64(47, 1);
        assert_eq!(p.buf, [0xf9, 0x02, 1, 0, 0, 0, 0, 0, 0, 0]);
        let mut p = Proto::default();
        p.fixed32(16, 0x301);
        assert_eq!(p.buf, [0x85, 0x01, 0x01, 0x03, 0, 0]);
        let mut p = Proto::default();
        p.sfixed64(6, -1);
        assert_eq!(p.buf, [0x31, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn nested_messages_get_their_length_whatever_it_is() {
        for n in [0usize, 1, 127, 128, 300, 20_000] {
            let mut p = Proto::default();
            p.uint(1, 1);
            p.message(3, |p| p.bytes(1, &vec![b'x'; n]));
            p.uint(2, 2);
            // The same bytes, by the book: the inner message first, then its length.
            let mut inner = Proto::default();
            inner.bytes(1, &vec![b'x'; n]);
            let mut expected = Proto::default();
            expected.uint(1, 1);
            expected.bytes(3, &inner.buf);
            expected.uint(2, 2);
            assert_eq!(p.buf, expected.buf, "{n} bytes");
        }
    }
}
