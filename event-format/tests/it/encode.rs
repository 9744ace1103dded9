//! Byte-exact encoding: a header, a block and a record of every format letter, in both byte
//! orders, against bytes written out by hand from docs/FORMAT.md; the built-ins' bodies and
//! fixed sizes against their formats.

use event_format::Letter;
use event_format::builtin;
use event_format::raw::put_record_header;
use event_format::schema::{EventType, Kind, Retired, Schema, Version};
use event_format::wire::{
    ArgWriter, BlockHeader, BlockWriter, Clock, ClockSource, Header, Order, Producer, RecordingId, STRING_MAX, Text,
    Value, ValueIter, body,
};

/// Integers in a chosen byte order, written the plain way, independent of the crate's code.
struct Bytes {
    order: Order,
    out: Vec<u8>,
}

impl Bytes {
    fn new(order: Order) -> Bytes {
        Bytes { order, out: Vec::new() }
    }
    fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.out.extend_from_slice(b);
        self
    }
    fn u8(&mut self, v: u8) -> &mut Self {
        self.raw(&[v])
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        match self.order {
            Order::Little => self.raw(&v.to_le_bytes()),
            Order::Big => self.raw(&v.to_be_bytes()),
        }
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        match self.order {
            Order::Little => self.raw(&v.to_le_bytes()),
            Order::Big => self.raw(&v.to_be_bytes()),
        }
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        match self.order {
            Order::Little => self.raw(&v.to_le_bytes()),
            Order::Big => self.raw(&v.to_be_bytes()),
        }
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.u16(s.len() as u16).raw(s.as_bytes())
    }
}

fn tiny_schema() -> Schema {
    Schema {
        name: "tiny".into(),
        version: Version::new(1, 2, 3),
        kinds: vec![Kind { name: "K".into(), doc: "d".into() }],
        events: vec![EventType {
            name: "E".into(),
            code: 0x0001,
            always: true,
            kind: 0,
            format: vec![Letter::Word, Letter::String],
            params: vec!["a".into(), "b".into()],
        }],
        retired: vec![Retired { name: "R".into(), code: 0x0002 }],
        ..Schema::default()
    }
}

fn tiny_header(order: Order) -> Header {
    let clock = Clock {
        source: ClockSource::Tsc,
        ticks_per_second: 3_000_000_000,
        ref_ticks: 0x1111,
        ref_wall_ns: 0x2222,
        start_ticks: 0x3333,
    };
    let producer = Producer {
        pointer_width: 8,
        arch: "x86_64".into(),
        os: "linux".into(),
        pid: 77,
        program: "tour".into(),
        host: "lab1".into(),
        start_wall_ns: 0x4444,
    };
    let mut header = Header::new(tiny_schema(), 4096, clock, producer);
    header.order = order;
    header.properties.recording = Some(TINY_RECORDING);
    header
}

/// The recording id of docs/FORMAT.md's worked example.
const TINY_RECORDING: RecordingId =
    RecordingId([0x0F, 0x1E, 0x2D, 0x3C, 0x4B, 0x5A, 0x69, 0x78, 0x87, 0x96, 0xA5, 0xB4, 0xC3, 0xD2, 0xE1, 0xF0]);

fn expected_header(order: Order) -> Vec<u8> {
    let bom: [u8; 2] = match order {
        Order::Little => [0xFF, 0xFE],
        Order::Big => [0xFE, 0xFF],
    };
    let mut b = Bytes::new(order);
    b.raw(&[0x89, b'E', b'V', b'T', 0x0D, 0x0A, 0x1A, 0x0A]) // magic
        .raw(&bom)
        .u16(2)
        .u16(1)
        .u16(2) // format 2.1.2
        .u32(0) // header length, patched below
        .u32(4096) // block size
        .u16(0)
        .u16(0)
        .u16(0) // reserved in 2.x (the event set version in 1.x)
        .u8(8) // pointer width
        .u8(2) // clock source: tsc
        .u64(77) // pid
        .u64(3_000_000_000)
        .u64(0x1111)
        .u64(0x2222)
        .u64(0x3333)
        .u64(0x4444);
    assert_eq!(b.out.len(), 80, "the fixed part is 80 bytes");
    b.str("x86_64").str("linux").str("tour");
    // one set: name, version 1.2.3, first wire code 1, then its schema
    b.u16(1).str("tiny").u16(1).u16(2).u16(3).u16(1);
    // schema: kinds, events, retired
    b.u16(1).str("K").str("d");
    b.u16(1).u16(0x0001).str("E").u8(1).u8(0).u8(2).raw(b"WS").str("a").str("b");
    b.u16(1).u16(0x0002).str("R");
    // since 2.0.1: the host name after the sets
    b.str("lab1");
    // since 2.0.2: the properties after the host; the recording id (tag 1, 16 bytes)
    b.u16(1).u32(16).raw(&TINY_RECORDING.0);
    let len = b.out.len() as u32 + 4;
    let mut out = b.out;
    let mut len_bytes = Bytes::new(order);
    len_bytes.u32(len);
    out[16..20].copy_from_slice(&len_bytes.out);
    let crc = crc32fast::hash(&out);
    let mut crc_bytes = Bytes::new(order);
    crc_bytes.u32(crc);
    out.extend_from_slice(&crc_bytes.out);
    out
}

#[test]
fn header_is_byte_exact_in_both_orders() {
    for order in [Order::Little, Order::Big] {
        let encoded = tiny_header(order).encode().expect("encodes");
        assert_eq!(encoded, expected_header(order), "{order:?}");
        let decoded = Header::decode(&encoded, false).expect("decodes");
        assert_eq!(decoded, tiny_header(order));
    }
}

#[test]
fn little_endian_header_starts_as_documented() {
    let encoded = tiny_header(Order::Little).encode().expect("encodes");
    assert_eq!(
        &encoded[..24],
        &[
            0x89, 0x45, 0x56, 0x54, 0x0D, 0x0A, 0x1A, 0x0A, // magic
            0xFF, 0xFE, // byte-order mark, little-endian
            0x02, 0x00, 0x01, 0x00, 0x02, 0x00, // format 2.1.2
            0xB6, 0x00, 0x00, 0x00, // header length 182
            0x00, 0x10, 0x00, 0x00, // block size 4096
        ]
    );
}

fn every_letter() -> Vec<Value<'static>> {
    vec![
        Value::Pointer(0x1122_3344_5566_7788),
        Value::Address(0x10),
        Value::Word(3),
        Value::Unsigned(0xAABB_CCDD),
        Value::Signed(-2),
        Value::Double(1.5),
        Value::Bool(true),
        Value::Str(Text::new("h\u{e9}")),
    ]
}

/// The record of `every_letter()` with code 0x0102 and delta 10, by hand.
fn expected_record(order: Order) -> Vec<u8> {
    let mut b = Bytes::new(order);
    b.u16(0x0102).u16(58).u32(10);
    match order {
        Order::Little => b
            .raw(&[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11])
            .raw(&[0x10, 0, 0, 0, 0, 0, 0, 0])
            .raw(&[3, 0, 0, 0, 0, 0, 0, 0])
            .raw(&[0xDD, 0xCC, 0xBB, 0xAA])
            .raw(&[0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
            .raw(&[0, 0, 0, 0, 0, 0, 0xF8, 0x3F])
            .raw(&[1])
            .raw(&[3, 0, 0x68, 0xC3, 0xA9]),
        Order::Big => b
            .raw(&[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88])
            .raw(&[0, 0, 0, 0, 0, 0, 0, 0x10])
            .raw(&[0, 0, 0, 0, 0, 0, 0, 3])
            .raw(&[0xAA, 0xBB, 0xCC, 0xDD])
            .raw(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE])
            .raw(&[0x3F, 0xF8, 0, 0, 0, 0, 0, 0])
            .raw(&[1])
            .raw(&[0, 3, 0x68, 0xC3, 0xA9]),
    };
    b.out
}

/// A 1024-byte block: header fields, `records`, zero padding, with the CRC computed over
/// bytes 0..44 and the records, as FORMAT.md says.
fn expected_block(order: Order, records: &[u8]) -> Vec<u8> {
    expected_block_sized(order, records, 1024)
}

fn expected_block_sized(order: Order, records: &[u8], size: usize) -> Vec<u8> {
    let mut b = Bytes::new(order);
    b.u32(0xEB10_C4ED) // sync
        .u16(0) // flags
        .u16(0) // reserved
        .u64(2) // sequence
        .u64(7) // thread
        .u64(100) // base time
        .u64(5) // lost
        .u32(records.len() as u32); // used
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&b.out);
    hasher.update(records);
    b.u32(hasher.finalize()).raw(records);
    let mut out = b.out;
    out.resize(size, 0);
    out
}

fn writer(order: Order) -> BlockWriter {
    writer_sized(order, 1024)
}

fn writer_sized(order: Order, size: u32) -> BlockWriter {
    BlockWriter::new(
        order,
        size,
        &BlockHeader { sequence: 2, thread: 7, base_time: 100, lost: 5, ..Default::default() },
    )
}

#[test]
fn block_with_a_record_of_every_letter_is_byte_exact() {
    for order in [Order::Little, Order::Big] {
        let mut block = writer(order);
        block.push(0x0102, 110, &every_letter()).expect("fits");
        assert_eq!(block.finish(), expected_block(order, &expected_record(order)), "{order:?}");
    }
}

#[test]
fn each_letter_alone_is_byte_exact() {
    // (value, little-endian bytes)
    let cases: Vec<(Value<'static>, Vec<u8>)> = vec![
        (Value::Pointer(0xDEAD_BEEF), vec![0xEF, 0xBE, 0xAD, 0xDE, 0, 0, 0, 0]),
        (Value::Address(u64::MAX), vec![0xFF; 8]),
        (Value::Word(0x0102), vec![0x02, 0x01, 0, 0, 0, 0, 0, 0]),
        (Value::Unsigned(7), vec![7, 0, 0, 0]),
        (Value::Signed(i64::MIN), vec![0, 0, 0, 0, 0, 0, 0, 0x80]),
        (Value::Double(-0.0), vec![0, 0, 0, 0, 0, 0, 0, 0x80]),
        (Value::Bool(false), vec![0]),
        (Value::Str(Text::new("")), vec![0, 0]),
    ];
    for (value, le) in cases {
        for order in [Order::Little, Order::Big] {
            let mut arg = le.clone();
            if order == Order::Big {
                match value {
                    Value::Str(_) | Value::Bool(_) => {}
                    _ => arg.reverse(),
                }
            }
            let mut record = Bytes::new(order);
            record.u16(0x0001).u16(8 + arg.len() as u16).u32(0).raw(&arg);
            let mut block = writer(order);
            block.push(0x0001, 100, &[value]).expect("fits");
            assert_eq!(block.finish(), expected_block(order, &record.out), "{value:?} {order:?}");
        }
    }
}

#[test]
fn a_long_gap_is_bridged_by_time_extend() {
    for order in [Order::Little, Order::Big] {
        let later = 105 + (1u64 << 32); // a delta of exactly 2^32 does not fit
        let mut block = writer(order);
        block.push(0x0001, 105, &[]).expect("fits");
        block.push(0x0001, later, &[]).expect("fits");
        let mut records = Bytes::new(order);
        records.u16(0x0001).u16(8).u32(5);
        records.u16(builtin::TIME_EXTEND).u16(16).u32(0).u64(later);
        records.u16(0x0001).u16(8).u32(0);
        assert_eq!(block.finish(), expected_block(order, &records.out), "{order:?}");
    }
}

#[test]
fn time_going_backwards_is_bridged_by_time_extend() {
    let mut block = writer(Order::Little);
    block.push(0x0001, 150, &[]).expect("fits");
    block.push(0x0001, 120, &[]).expect("fits");
    let mut records = Bytes::new(Order::Little);
    records.u16(0x0001).u16(8).u32(50);
    records.u16(builtin::TIME_EXTEND).u16(16).u32(0).u64(120);
    records.u16(0x0001).u16(8).u32(0);
    assert_eq!(block.finish(), expected_block(Order::Little, &records.out));
}

#[test]
fn long_strings_are_cut_at_a_char_boundary_and_flagged() {
    // 1023 ASCII bytes then a 2-byte character: cutting at STRING_MAX would split it.
    let text = format!("{}\u{e9}tail", "x".repeat(STRING_MAX - 1));
    let mut block = writer_sized(Order::Little, 4096);
    block.push(0x0001, 100, &[Value::Str(Text::new(&text))]).expect("fits");
    let mut records = Bytes::new(Order::Little);
    records.u16(0x0001).u16(8 + 2 + 1023).u32(0).u16(0x8000 | 1023).raw(&text.as_bytes()[..1023]);
    assert_eq!(block.finish(), expected_block_sized(Order::Little, &records.out, 4096));
}

#[test]
fn strings_are_cut_to_fit_an_empty_block() {
    // Two strings of STRING_MAX bytes cannot share a 1024-byte block: the last one is cut.
    let a = "a".repeat(STRING_MAX);
    let mut block = writer(Order::Little);
    block.push(0x0001, 100, &[Value::Word(1), Value::Str(Text::new(&a)), Value::Str(Text::new(&a))]).expect("fits");
    let bytes = block.finish();
    let payload = 1024 - 48;
    let used = u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize;
    assert_eq!(used, payload, "the record fills the block exactly");
    // first string: 976 - 8 (record header) - 8 (word) - 2 - 2 (prefixes) = 956 bytes
    let first_prefix = u16::from_le_bytes([bytes[64], bytes[65]]);
    assert_eq!(first_prefix, 0x8000 | 956, "the first string is cut to what is left");
    let second_at = 66 + 956;
    assert_eq!(u16::from_le_bytes([bytes[second_at], bytes[second_at + 1]]), 0x8000, "the last one is cut to nothing");
}

#[test]
fn a_full_block_refuses_and_a_fresh_one_takes_the_record() {
    let mut block = writer(Order::Little);
    let mut pushed = 0;
    while block.push(0x0001, 100, &[Value::Word(pushed)]).is_ok() {
        pushed += 1;
    }
    // (1024 - 48) / 16 records of 16 bytes fit.
    assert_eq!(pushed, 61);
    assert!(!block.is_empty());
}

#[test]
fn a_record_longer_than_any_block_is_refused_not_wrapped() {
    // 10,000 words are 80,008 bytes: more than a 16-bit length can say.
    let values = vec![Value::Word(1); 10_000];
    let mut block = writer_sized(Order::Little, 1 << 24);
    assert_eq!(block.push(0x0001, 100, &values), Err(event_format::wire::PushError::TooLarge));
    assert!(block.is_empty(), "nothing was written");
}

#[test]
fn a_header_the_decoder_would_refuse_is_not_encoded() {
    let mut header = tiny_header(Order::Little);
    header.producer.pointer_width = 3;
    let err = header.encode().unwrap_err();
    assert_eq!(err.to_string(), "cannot encode the stream header: pointer width 3 bytes is not 2, 4, 8 or 16");
}

#[test]
fn a_record_header_is_byte_exact_in_both_orders() {
    for order in [Order::Little, Order::Big] {
        let mut block = [0xAAu8; 12];
        put_record_header(order, &mut block, 2, 0xFF03, 24, 0x0102_0304);
        let mut expected = Bytes::new(order);
        expected.raw(&[0xAA; 2]).u16(0xFF03).u16(24).u32(0x0102_0304).raw(&[0xAA; 2]);
        assert_eq!(block.to_vec(), expected.out, "{order:?}");
    }
}

#[test]
fn each_builtin_body_writes_its_format_and_fixed_size() {
    type Body = fn(&mut ArgWriter<'_>);
    // (code, its fixed size as docs/FORMAT.md gives it, how many strings, the body)
    let cases: [(u16, usize, usize, Body); 21] = [
        (builtin::INTERN, 8, 1, |w| body::intern(w, 1)),
        (builtin::LABEL, 16, 0, |w| body::label(w, 0x7000, 1)),
        (builtin::THREAD_NAME, 8, 1, |w| body::thread_name(w, 2)),
        (builtin::DROPPED, 16, 0, |w| body::dropped(w, 2, 3)),
        (builtin::CLOCK_SYNC, 16, 0, |w| body::clock_sync(w, 4, -5)),
        (builtin::TIME_EXTEND, 8, 0, |w| body::time_extend(w, 6)),
        (builtin::MESSAGE, 0, 1, body::message),
        (builtin::TRACE_EVENT, 4, 2, |w| body::trace_event(w, 3)),
        (builtin::SPAN_ENTER, 8, 2, |w| body::span_enter(w, 7)),
        (builtin::SPAN_EXIT, 8, 1, |w| body::span_exit(w, 7)),
        (builtin::SPAN_OPEN, 16, 2, |w| body::span_open(w, 7, 3)),
        (builtin::SPAN_CLOSE, 8, 0, |w| body::span_close(w, 7)),
        (builtin::SPAN_RECORD, 8, 1, |w| body::span_record(w, 7)),
        (builtin::SPAN_FOLLOWS, 16, 0, |w| body::span_follows(w, 7, 3)),
        (builtin::SPAN_CURRENT, 8, 0, |w| body::span_current(w, 7)),
        (builtin::SUPPRESSED, 28, 0, |w| body::suppressed(w, 2, 0x0103, 4900, 990_000_000)),
        (builtin::HISTOGRAM, 52, 1, |w| {
            body::histogram(w, &body::HistogramHead { thread: 2, histogram: 1, count: 3, ..Default::default() })
        }),
        (builtin::CALLSITE, 12, 3, |w| body::callsite(w, 1, 3)),
        (builtin::SPAN_OPEN_AT, 24, 1, |w| body::span_open_at(w, 7, 3, 1)),
        (builtin::SPAN_RECORD_AT, 16, 1, |w| body::span_record_at(w, 7, 1)),
        (builtin::TRACE_EVENT_AT, 8, 2, |w| body::trace_event_at(w, 1)),
    ];
    let fixed = [
        builtin::INTERN_FIXED,
        builtin::LABEL_FIXED,
        builtin::THREAD_NAME_FIXED,
        builtin::DROPPED_FIXED,
        builtin::CLOCK_SYNC_FIXED,
        builtin::TIME_EXTEND_FIXED,
        builtin::MESSAGE_FIXED,
        builtin::TRACE_EVENT_FIXED,
        builtin::SPAN_ENTER_FIXED,
        builtin::SPAN_EXIT_FIXED,
        builtin::SPAN_OPEN_FIXED,
        builtin::SPAN_CLOSE_FIXED,
        builtin::SPAN_RECORD_FIXED,
        builtin::SPAN_FOLLOWS_FIXED,
        builtin::SPAN_CURRENT_FIXED,
        builtin::SUPPRESSED_FIXED,
        builtin::HISTOGRAM_FIXED,
        builtin::CALLSITE_FIXED,
        builtin::SPAN_OPEN_AT_FIXED,
        builtin::SPAN_RECORD_AT_FIXED,
        builtin::TRACE_EVENT_AT_FIXED,
    ];
    assert_eq!(cases.len(), builtin::ALL.len(), "every built-in");
    let strs = [Text::new("first"), Text { bytes: b"second", truncated: true }, Text::new("third")];
    for ((code, size, n_strs, write), fixed) in cases.into_iter().zip(fixed) {
        let b = builtin::by_code(code).expect("a built-in");
        assert_eq!((fixed, b.fixed_len()), (size, size), "{}'s fixed size", b.name);
        let strs = &strs[..n_strs];
        let len = fixed + strs.iter().map(|t| 2 + t.bytes.len()).sum::<usize>();
        for order in [Order::Little, Order::Big] {
            let mut args = vec![0u8; len];
            let mut w = ArgWriter::new(order, &mut args, strs);
            write(&mut w);
            assert_eq!(w.written(), len, "{} writes its fixed size and its strings", b.name);
            let values: Vec<Value<'_>> = ValueIter::new(b.format, &args, order).collect();
            let letters: Vec<Letter> = values.iter().map(Value::letter).collect();
            assert_eq!(letters, b.format, "{} writes its format's letters", b.name);
            let texts: Vec<Text<'_>> =
                values.iter().filter_map(|v| if let Value::Str(t) = v { Some(*t) } else { None }).collect();
            assert_eq!(texts, strs, "{} writes the writer's strings in order", b.name);
        }
    }
}

/// docs/FORMAT.md, read by the test that holds its worked examples to the encoder.
fn format_md() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/FORMAT.md")).expect("docs/FORMAT.md")
}

/// The text of FORMAT.md from the heading `from` to the next heading of the same level.
fn doc_section<'a>(doc: &'a str, from: &str) -> &'a str {
    let level = from.split(' ').next().unwrap();
    let start = doc.find(&format!("\n{from}\n")).unwrap_or_else(|| panic!("FORMAT.md has `{from}`")) + 1;
    let rest = &doc[start + from.len()..];
    let end = rest
        .lines()
        .scan(0, |at, line| {
            let here = *at;
            *at += line.len() + 1;
            Some((here, line))
        })
        .find(|(_, line)| {
            let hashes = line.chars().take_while(|&c| c == '#').count();
            hashes > 0 && hashes <= level.len() && line[hashes..].starts_with(' ')
        })
        .map_or(rest.len(), |(at, _)| at);
    &rest[..end]
}

/// Two hex digits, as a byte.
fn hex_byte(token: &str) -> Option<u8> {
    (token.len() == 2).then(|| u8::from_str_radix(token, 16).ok()).flatten()
}

/// The bytes of each fenced block of `text`: on each line, after an optional `0000:` offset
/// (which must count the bytes before it), the leading tokens of two hex digits; what follows
/// them (a comment) is not bytes.
fn fenced_bytes(text: &str) -> Vec<Vec<u8>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<u8>> = None;
    for line in text.lines() {
        if line.starts_with("```") {
            match current.take() {
                Some(bytes) => blocks.push(bytes),
                None => current = Some(Vec::new()),
            }
            continue;
        }
        let Some(bytes) = current.as_mut() else { continue };
        let mut rest = line;
        if let Some((offset, after)) = line.split_once(": ")
            && let Ok(offset) = usize::from_str_radix(offset, 16)
        {
            assert_eq!(offset, bytes.len(), "the dump line `{line}` is at its offset");
            rest = after;
        }
        bytes.extend(rest.split_whitespace().map_while(hex_byte));
    }
    blocks
}

/// The rows of the `| Offset | Bytes | ...` tables of `text`: (offset, bytes), leaving out
/// rows whose bytes are elided (`…`).
fn table_rows(text: &str) -> Vec<(usize, Vec<u8>)> {
    text.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let offset = usize::from_str_radix(cells.get(1)?.strip_prefix("0x")?, 16).ok()?;
            let bytes = cells.get(2)?;
            if bytes.contains('…') {
                return None;
            }
            let bytes: Vec<u8> = bytes
                .split('`')
                .skip(1)
                .step_by(2)
                .flat_map(|group| group.split_whitespace().map(|t| hex_byte(t).expect("a byte in a table")))
                .collect();
            Some((offset, bytes))
        })
        .collect()
}

fn hex_dump(bytes: &[u8]) -> String {
    bytes
        .chunks(16)
        .enumerate()
        .map(|(i, row)| {
            let hex: Vec<String> = row.iter().map(|b| format!("{b:02X}")).collect();
            format!("{:04X}: {}\n", i * 16, hex.join(" "))
        })
        .collect()
}

/// Each table row of `text` is the bytes of `encoded` at its offset.
fn assert_rows(text: &str, encoded: &[u8], what: &str) -> usize {
    let rows = table_rows(text);
    for (offset, bytes) in &rows {
        assert_eq!(
            encoded.get(*offset..offset + bytes.len()),
            Some(&bytes[..]),
            "FORMAT.md's {what} table row at {offset:#04x}; the encoder writes\n{}",
            hex_dump(encoded)
        );
    }
    rows.len()
}

/// docs/FORMAT.md's worked examples (the header, the block with a record of every letter in
/// both byte orders, the time extension) are the bytes the encoder writes today: every byte
/// of their dumps and every row of their tables, read out of the document.
#[test]
fn format_md_worked_examples_are_what_the_encoder_writes() {
    let doc = format_md();
    let examples = doc_section(&doc, "## Worked examples");

    let header = doc_section(examples, "### Header");
    let le = tiny_header(Order::Little).encode().unwrap();
    let be = tiny_header(Order::Big).encode().unwrap();
    assert!(header.contains(&format!("It is {} bytes.", le.len())), "the header's length is documented");
    assert_eq!(
        fenced_bytes(header),
        std::slice::from_ref(&le),
        "the header's dump; the encoder writes\n{}",
        hex_dump(&le)
    );
    assert_eq!(assert_rows(header, &le, "header"), 45, "the header's tables are read");
    let be_prefix: Vec<u8> = header
        .split_once("In big-endian order the same 24 bytes are\n`")
        .expect("the big-endian prefix is documented")
        .1
        .split('`')
        .next()
        .unwrap()
        .split_whitespace()
        .map(|t| hex_byte(t).unwrap())
        .collect();
    assert_eq!(be_prefix, be[..24]);

    let block = doc_section(examples, "### A block with one record of every letter");
    let dumps = fenced_bytes(block);
    assert_eq!(dumps.len(), 2, "a little-endian and a big-endian dump");
    for (order, dump) in [Order::Little, Order::Big].into_iter().zip(&dumps) {
        let mut writer = writer(order);
        writer.push(0x0102, 110, &every_letter()).unwrap();
        let bytes = writer.finish();
        let used = 48 + order.u32(&bytes[40..]) as usize;
        assert_eq!(dump[..], bytes[..used], "{order:?} block; the encoder writes\n{}", hex_dump(&bytes[..used]));
        if order == Order::Little {
            assert_eq!(assert_rows(block, &bytes, "block"), 21, "the block's tables are read");
        }
    }

    let extend = doc_section(examples, "### A time extension");
    let mut writer = writer(Order::Little);
    writer.push(0x0001, 105, &[]).unwrap();
    writer.push(0x0001, 105 + (1u64 << 32), &[]).unwrap();
    let bytes = writer.finish();
    let used = u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize;
    assert_eq!(fenced_bytes(extend), [bytes[48..48 + used].to_vec()], "the time extension's records");

    let stop = doc_section(examples, "### A clean stop");
    let bytes = stop_example(Order::Little);
    assert_eq!(
        fenced_bytes(stop),
        [bytes[..96].to_vec()],
        "the stop block; the encoder writes\n{}",
        hex_dump(&bytes[..96])
    );
    assert_eq!(assert_rows(stop, &bytes, "stop"), 13, "the stop block's tables are read");
}

/// docs/FORMAT.md's worked example of the meanings property (tag 2): its table rows and its
/// dump are the bytes the encoder writes for a set with a span, a counter and a flow.
#[test]
fn format_md_meanings_example_is_what_the_encoder_writes() {
    let doc = format_md();
    let examples = doc_section(&doc, "## Worked examples");
    let section = doc_section(examples, "### Header properties");
    let schema = event_format::def::parse(
        "SET(web)\nVERSION(1, 0, 0)\nKIND(K)\n\
         RELATION(Begin, 1, TRUE, K, W, id)\nRELATION(End, 2, TRUE, K, WU, id, status)\nRELATION(Depth, 3, TRUE, K, U, depth)\n\
         SPAN(request, Begin, End, id)\nCOUNTER(queue, Depth, depth, \"items\")\nFLOW(work, Begin, id, BEGIN)\n",
        "web.def",
    )
    .unwrap();
    let mut header = tiny_header(Order::Little);
    header.properties.recording = None;
    header.sets = event_format::wire::SetEntry::assign([schema]);
    let bytes = header.encode().unwrap();
    // The only property: it ends where the CRC starts.
    let end = bytes.len() - 4;
    let property = &bytes[end - 69..end];
    // The first fenced block is the events.def text: no bytes.
    let dumps: Vec<Vec<u8>> = fenced_bytes(section).into_iter().filter(|b| !b.is_empty()).collect();
    assert_eq!(dumps, [property.to_vec()], "the dump; the encoder writes\n{}", hex_dump(property));
    assert_eq!(assert_rows(section, property, "meanings"), 19, "the table is read");
}

/// docs/FORMAT.md's clean-stop example: the block of thread 0, sequence 1, at time 500, after
/// 5 blocks holding 76 events of which 2 were counted lost, written because the disk was full,
/// with 300 events its writer could not write (since 2.0.3).
fn stop_example(order: Order) -> Vec<u8> {
    event_format::raw::stop_block(order, 1024, 1, 500, &example_stop())
}

fn example_stop() -> event_format::wire::Stop {
    event_format::wire::Stop {
        blocks: 5,
        events: 76,
        lost: 2,
        cause: event_format::wire::StopCause::DiskFull,
        unwritten: 300,
    }
}

#[test]
fn a_stop_block_is_byte_exact_and_read_back() {
    for order in [Order::Little, Order::Big] {
        let bytes = stop_example(order);
        assert_eq!(bytes.len(), 1024);
        let mut b = Bytes::new(order);
        b.u16(0xFF0A).u16(48).u32(0).u64(5).u64(76).u64(2).u64(2).u64(300);
        assert_eq!(bytes[48..96], b.out[..], "{order:?}");
        let header = event_format::wire::verify_block(order, &bytes).expect("a sealed block");
        assert_eq!((header.thread, header.sequence, header.base_time, header.used), (0, 1, 500, 48));
        // Consumed while delimiting: no record comes out, the marker is kept.
        let mut records = event_format::wire::RecordIter::new(&bytes[48..96], order, 500);
        assert!(records.next().is_none(), "a Stop record is not yielded");
        assert_eq!(records.stop(), Some(example_stop()));
    }
}

/// A marker of 2.0.1 or 2.0.2 (record length 32) reads as cause 0 with nothing unwritten; a
/// later minor's arguments after `unwritten` are ignored; a cause this reader does not know is
/// kept as its number.
#[test]
fn a_stop_of_length_32_reads_as_stopped_and_appended_arguments_are_ignored() {
    use event_format::wire::{Stop, StopCause};
    for order in [Order::Little, Order::Big] {
        let mut old = Bytes::new(order);
        old.u16(0xFF0A).u16(32).u32(0).u64(5).u64(76).u64(2);
        let mut records = event_format::wire::RecordIter::new(&old.out, order, 500);
        assert!(records.next().is_none());
        assert_eq!(
            records.stop(),
            Some(Stop { blocks: 5, events: 76, lost: 2, cause: StopCause::Stopped, unwritten: 0 })
        );

        let mut newer = Bytes::new(order);
        newer.u16(0xFF0A).u16(56).u32(0).u64(5).u64(76).u64(2).u64(7).u64(9).u64(0xEEEE);
        let mut records = event_format::wire::RecordIter::new(&newer.out, order, 500);
        assert!(records.next().is_none());
        let stop = records.stop().expect("a marker");
        assert_eq!((stop.cause, stop.unwritten), (StopCause::Other(7), 9));
        assert_eq!(stop.cause.to_string(), "cause 7");
    }
    for (word, cause, text) in [
        (0, StopCause::Stopped, "stopped"),
        (1, StopCause::Rotated, "rotated"),
        (2, StopCause::DiskFull, "disk full"),
        (3, StopCause::WriteError, "write error"),
    ] {
        assert_eq!((StopCause::from_word(word), cause.to_word(), cause.to_string()), (cause, word, text.to_owned()));
    }
}

/// docs/FORMAT.md's worked example of the segment property (tag 3): the fourth segment of a
/// recording whose budget deleted one segment of 5000 events, 120 events lost before it.
fn segment_example() -> event_format::wire::Segment {
    event_format::wire::Segment { index: 3, removed_segments: 1, removed_events: 5000, lost_between: 120 }
}

#[test]
fn format_md_segment_example_is_what_the_encoder_writes() {
    let doc = format_md();
    let examples = doc_section(&doc, "## Worked examples");
    let section = doc_section(examples, "### A segment's header property");
    let mut header = tiny_header(Order::Little);
    header.properties.recording = None;
    header.properties.segment = Some(segment_example());
    let bytes = header.encode().unwrap();
    let end = bytes.len() - 4;
    let property = &bytes[end - 38..end];
    assert_eq!(fenced_bytes(section), [property.to_vec()], "the dump; the encoder writes\n{}", hex_dump(property));
    assert_eq!(assert_rows(section, property, "segment"), 6, "the table is read");
}

/// docs/FORMAT.md's labels and earlier properties (tags 5 and 6), and they read back in both
/// byte orders; a key given twice, an empty key or a short value is malformed.
#[test]
fn format_md_labels_example_is_what_the_encoder_writes() {
    use event_format::raw::TAG_LABELS;
    use event_format::wire::{Earlier, EarlierRemoval, HeaderError, RecordingId};
    let doc = format_md();
    let examples = doc_section(&doc, "## Worked examples");
    let section = doc_section(examples, "### Labels and earlier recordings");
    let example = |order| {
        let mut header = tiny_header(order);
        header.properties.recording = None;
        header.properties.labels =
            vec![("service".to_owned(), "api".to_owned()), ("version".to_owned(), "1.4".to_owned())];
        header.properties.earlier = Some(Earlier {
            recordings_removed: 1,
            segments_of_removed: 3,
            events_of_removed: 900,
            partly: vec![EarlierRemoval { recording: RecordingId([0x11; 16]), segments: 2, events: 600 }],
        });
        header
    };
    let bytes = example(Order::Little).encode().unwrap();
    let end = bytes.len() - 4;
    let properties = &bytes[end - 100..end];
    assert_eq!(fenced_bytes(section), [properties.to_vec()], "the dump; the encoder writes\n{}", hex_dump(properties));
    assert_eq!(assert_rows(section, properties, "labels"), 20, "the table is read");
    for order in [Order::Little, Order::Big] {
        let header = example(order);
        let read = Header::decode(&header.encode().unwrap(), false).unwrap();
        assert_eq!((&read.properties, read.skipped_bytes), (&header.properties, 0));
        assert_eq!(read.properties.label("version"), Some("1.4"));
    }
    // The labels rewritten: a key twice, an empty key, a value cut short.
    let relabel = |value: Vec<u8>| {
        let without = {
            let mut h = example(Order::Little);
            h.properties.labels.clear();
            h.properties.earlier = None;
            h.encode().unwrap()
        };
        let mut out = without[..without.len() - 4].to_vec();
        let mut p = Bytes::new(Order::Little);
        p.u16(TAG_LABELS).u32(value.len() as u32).raw(&value);
        out.extend(p.out);
        let len = out.len() as u32 + 4;
        out[16..20].copy_from_slice(&len.to_le_bytes());
        out.extend(crc32fast::hash(&out).to_le_bytes());
        Header::decode(&out, false)
    };
    let mut twice = Bytes::new(Order::Little);
    twice.u16(2).str("k").str("a").str("k").str("b");
    let e = relabel(twice.out).unwrap_err();
    assert!(matches!(&e, HeaderError::Malformed(m) if m.contains("twice")), "{e}");
    let mut empty = Bytes::new(Order::Little);
    empty.u16(1).str("").str("a");
    assert!(matches!(relabel(empty.out), Err(HeaderError::Malformed(_))));
    let mut short = Bytes::new(Order::Little);
    short.u16(2).str("k").str("a");
    assert!(matches!(relabel(short.out), Err(HeaderError::Malformed(_))));
    // A writer refuses what a reader would (a key it may not write).
    let mut bad = example(Order::Little);
    bad.properties.labels.push(("not a key".to_owned(), String::new()));
    assert!(bad.encode().unwrap_err().to_string().contains("not a key"));
}

/// The segment property reads back in both byte orders, beside the recording id; a value longer
/// than its 32 bytes is read by its fields (a later minor's appended field ignored), a shorter
/// one or a second one makes the header malformed.
#[test]
fn the_segment_property_reads_back_and_its_damage_is_malformed() {
    use event_format::raw::TAG_SEGMENT;
    use event_format::wire::HeaderError;
    for order in [Order::Little, Order::Big] {
        let mut header = tiny_header(order);
        header.properties.segment = Some(segment_example());
        let bytes = header.encode().unwrap();
        let read = Header::decode(&bytes, false).unwrap();
        assert_eq!(read.properties.segment, Some(segment_example()));
        assert_eq!(read.properties.recording, Some(TINY_RECORDING));
        assert_eq!(read.skipped_bytes, 0);
        assert_eq!(tiny_header(order).properties.segment, None, "no segment unless the writer says so");
        assert_eq!(Header::decode(&tiny_header(order).encode().unwrap(), false).unwrap().properties.segment, None);

        // The segment property rewritten: a longer value, a shorter one, a second one.
        let with_value = |value: Vec<u8>, twice: bool| {
            let body_end = bytes.len() - 4 - 38;
            let mut out = bytes[..body_end].to_vec();
            for _ in 0..if twice { 2 } else { 1 } {
                let mut p = Bytes::new(order);
                p.u16(TAG_SEGMENT).u32(value.len() as u32).raw(&value);
                out.extend(p.out);
            }
            let len = out.len() as u32 + 4;
            let mut l = Bytes::new(order);
            l.u32(len);
            out[16..20].copy_from_slice(&l.out);
            let mut crc = Bytes::new(order);
            crc.u32(crc32fast::hash(&out));
            out.extend(crc.out);
            Header::decode(&out, false)
        };
        let mut fields = Bytes::new(order);
        fields.u64(3).u64(1).u64(5000).u64(120);
        let mut longer = fields.out.clone();
        longer.extend([0xAB; 8]);
        assert_eq!(with_value(longer, false).unwrap().properties.segment, Some(segment_example()));
        assert_eq!(with_value(fields.out.clone(), false).unwrap().properties.segment, Some(segment_example()));
        let short = with_value(fields.out[..24].to_vec(), false).unwrap_err();
        assert!(matches!(&short, HeaderError::Malformed(m) if m.contains("segment")), "{short}");
        let twice = with_value(fields.out.clone(), true).unwrap_err();
        assert!(matches!(&twice, HeaderError::Malformed(m) if m.contains("twice")), "{twice}");
    }
}

/// docs/FORMAT.md's snapshot property example: the second snapshot of its recording, taken at
/// 2026-01-01 00:00:00 UTC at tick 5000 by the trigger `E if a >= 500` on wire code 2, with 3
/// declined by the rate policy; and it reads back.
#[test]
fn format_md_snapshot_example_is_what_the_encoder_writes() {
    use event_format::wire::{Snapshot, SnapshotCause};
    let doc = format_md();
    let examples = doc_section(&doc, "## Worked examples");
    let section = doc_section(examples, "### Snapshot property");
    let snapshot = Snapshot {
        taken_wall_ns: 1_767_225_600_000_000_000,
        taken_time: 5000,
        sequence: 2,
        not_taken: 3,
        cause: SnapshotCause::Event,
        trigger_code: 2,
        trigger_time: 4000,
        trigger: "E if a >= 500".into(),
    };
    let mut header = tiny_header(Order::Little);
    header.properties.recording = None;
    header.properties.snapshot = Some(snapshot.clone());
    let bytes = header.encode().unwrap();
    // The only property: it ends where the CRC starts.
    let end = bytes.len() - 4;
    let property = &bytes[end - 60..end];
    assert_eq!(fenced_bytes(section), [property.to_vec()], "the dump; the encoder writes\n{}", hex_dump(property));
    assert_eq!(assert_rows(section, property, "snapshot"), 10, "the table is read");
    let decoded = Header::decode(&bytes, false).unwrap();
    assert_eq!(decoded.properties.snapshot, Some(snapshot));
    assert_eq!(decoded.skipped_bytes, 0);
}

/// A snapshot property shorter than its fixed fields makes the header malformed; a cause of a
/// later minor is read as such.
#[test]
fn a_short_snapshot_property_is_malformed_and_an_unknown_cause_is_kept() {
    use event_format::wire::{Snapshot, SnapshotCause};
    let mut header = tiny_header(Order::Little);
    header.properties.snapshot = Some(Snapshot {
        taken_wall_ns: 0,
        taken_time: 1,
        sequence: 1,
        not_taken: 0,
        cause: SnapshotCause::Other(9),
        trigger_code: 0,
        trigger_time: 1,
        trigger: String::new(),
    });
    let bytes = header.encode().unwrap();
    let decoded = Header::decode(&bytes, false).unwrap();
    assert_eq!(decoded.properties.snapshot.unwrap().cause, SnapshotCause::Other(9));
    // Cut the value to 40 bytes: the trigger's length no longer fits.
    let end = bytes.len() - 4;
    let start = end - (6 + 41);
    let mut cut = bytes[..start].to_vec();
    cut.extend_from_slice(&[4, 0, 40, 0, 0, 0]);
    cut.extend_from_slice(&bytes[start + 6..start + 6 + 40]);
    let len = (cut.len() + 4) as u32;
    cut[16..20].copy_from_slice(&len.to_le_bytes());
    let crc = crc32fast::hash(&cut);
    cut.extend_from_slice(&crc.to_le_bytes());
    let e = Header::decode(&cut, false).unwrap_err();
    assert!(e.to_string().contains("snapshot property is 40 bytes long"), "{e}");
}

/// `BlockWriter::push_with` (a fill writes the arguments, as the generated code and the test
/// capture do) writes the same bytes as `push` of the same values: a word and a string cut to
/// `STRING_MAX`, a `TimeExtend` before a time that goes back, and `Full` (the fill uncalled)
/// exactly when `fits` says no.
#[test]
fn push_with_a_fill_writes_the_bytes_push_writes() {
    use event_format::wire::PushError;
    let long = "x".repeat(STRING_MAX + 10);
    let header = BlockHeader { thread: 3, base_time: 100, ..BlockHeader::default() };
    let (mut by_values, mut by_fill) =
        (BlockWriter::new(Order::Big, 4096, &header), BlockWriter::new(Order::Big, 4096, &header));
    let mut time = 100;
    let mut n = 0;
    loop {
        let strs = [Text::new(&long)];
        let fits = by_fill.fits(time, 8, &strs);
        let mut called = false;
        let filled = by_fill.push_with(0x30, time, 8, &strs, |w| {
            called = true;
            w.word(n);
            w.str(0);
        });
        let pushed = by_values.push(0x30, time, &[Value::Word(n), Value::Str(Text::new(&long))]);
        assert_eq!(filled, pushed, "record {n}");
        assert_eq!(fits, filled.is_ok());
        assert_eq!(called, filled.is_ok(), "the fill runs only when the record is written");
        if filled == Err(PushError::Full) {
            break;
        }
        // Every third record goes back in time: a TimeExtend record precedes it.
        time = if n % 3 == 2 { time - 50 } else { time + 7 };
        n += 1;
    }
    assert!(n > 2);
    assert_eq!(by_fill.finish(), by_values.finish());
}

/// docs/FORMAT.md's example of a `tracing` span's records (since 2.1.0, "Built-in events"):
/// a `SpanOpen`, the `SpanCurrent` marks around an event made inside the span, and its
/// `SpanClose`, is what the encoder writes, byte for byte.
#[test]
fn format_md_span_example_is_what_the_encoder_writes() {
    let doc = format_md();
    let section = doc_section(&doc, "## Built-in events");
    let at = section.find("**`tracing` spans as spans**").expect("the spans' part");
    let blocks = fenced_bytes(&section[at..]);
    let t = 0x1000;
    let header = BlockHeader { flags: 0, sequence: 0, thread: 1, base_time: t, lost: 0, used: 0, crc: 0 };
    let mut block = BlockWriter::new(Order::Little, 4096, &header);
    let s = |text: &'static str| Value::Str(Text::new(text));
    block.push(builtin::SPAN_OPEN, t, &[Value::Word(7), Value::Word(0), s("request"), s("id=1")]).expect("fits");
    block.push(builtin::SPAN_CURRENT, t + 0x10, &[Value::Word(7)]).expect("fits");
    block.push(0x0001, t + 0x10, &[Value::Word(5)]).expect("fits");
    block.push(builtin::SPAN_CURRENT, t + 0x30, &[Value::Word(0)]).expect("fits");
    block.push(0x0001, t + 0x30, &[Value::Word(6)]).expect("fits");
    block.push(builtin::SPAN_CLOSE, t + 0x40, &[Value::Word(7)]).expect("fits");
    let bytes = block.finish();
    let used = u32::from_le_bytes(
        bytes[event_format::raw::BLOCK_USED_AT..event_format::raw::BLOCK_USED_AT + 4].try_into().unwrap(),
    ) as usize;
    let records = &bytes[event_format::wire::BLOCK_HEADER_LEN..event_format::wire::BLOCK_HEADER_LEN + used];
    assert_eq!(blocks.first().map(Vec::as_slice), Some(records), "the encoder writes\n{}", hex_dump(records));
}

/// The events.def of docs/FORMAT.md's worked example of the histograms and limits properties.
const AGGREGATES_EXAMPLE: &str = "SET(web)\nVERSION(1, 0, 0)\nKIND(K)\n\
     RELATION(Send, 1, TRUE, K, W, size, limit=100/s)\nRELATION(Begin, 2, TRUE, K, 0)\nRELATION(End, 3, TRUE, K, 0, limit=1/10)\n\
     SPAN(req, Begin, End)\nHISTOGRAM(sizes, Send, size, HDR2)\nHISTOGRAM(req_ns, req, LOG2)\n";

/// docs/FORMAT.md's worked example of the histograms (tag 11) and limits (tag 12) properties:
/// their table rows and dump are the bytes the encoder writes, the header's last two
/// properties; and they read back.
#[test]
fn format_md_histograms_and_limits_example_is_what_the_encoder_writes() {
    let doc = format_md();
    let examples = doc_section(&doc, "## Worked examples");
    let section = doc_section(examples, "### Histograms and limits properties");
    let schema = event_format::def::parse(AGGREGATES_EXAMPLE, "web.def").unwrap();
    let mut header = tiny_header(Order::Little);
    header.properties.recording = None;
    header.sets = event_format::wire::SetEntry::assign([schema]);
    let bytes = header.encode().unwrap();
    let end = bytes.len() - 4;
    let properties = &bytes[end - 94..end];
    let dumps: Vec<Vec<u8>> = fenced_bytes(section).into_iter().filter(|b| !b.is_empty()).collect();
    assert_eq!(dumps, [properties.to_vec()], "the dump; the encoder writes\n{}", hex_dump(properties));
    assert_eq!(assert_rows(section, properties, "histograms and limits"), 27, "the table is read");
    assert_eq!(Header::decode(&bytes, false).unwrap(), header);
}

/// docs/FORMAT.md's worked example of a `Suppressed` and a `Histogram` record: the records
/// area the encoder writes for them.
#[test]
fn format_md_aggregate_records_example_is_what_the_encoder_writes() {
    let doc = format_md();
    let examples = doc_section(&doc, "## Worked examples");
    let section = doc_section(examples, "### A suppression and a histogram");
    let mut w =
        BlockWriter::new(Order::Little, 1024, &BlockHeader { thread: 1, base_time: 100, ..BlockHeader::default() });
    w.push(
        builtin::SUPPRESSED,
        105,
        &[Value::Word(1), Value::Unsigned(1), Value::Word(4900), Value::Word(990_000_000)],
    )
    .unwrap();
    let values = [
        Value::Word(1),
        Value::Unsigned(0),
        Value::Word(50),
        Value::Word(3),
        Value::Word(14),
        Value::Word(1),
        Value::Word(8),
        Value::Str(Text::new("1:1 5:1 8:1")),
    ];
    w.push(builtin::HISTOGRAM, 110, &values).unwrap();
    let block = w.finish();
    let used = Order::Little.u32(&block[event_format::raw::BLOCK_USED_AT..]) as usize;
    let records = &block[48..48 + used];
    assert_eq!(fenced_bytes(section), [records.to_vec()], "the records; the encoder writes\n{}", hex_dump(records));
    assert_eq!(assert_rows(section, records, "aggregate records"), 18, "the table is read");
}

/// The block of docs/FORMAT.md's zstd example: thread 1, block 0, base time 1000, blocks of
/// 1024 bytes, four records: three of code 1 (`WU`) and one of code 2 (`W`).
fn zstd_example_block(order: Order) -> Vec<u8> {
    let mut writer =
        BlockWriter::new(order, 1024, &BlockHeader { sequence: 0, thread: 1, base_time: 1000, ..Default::default() });
    writer.push(0x0001, 1000, &[Value::Word(0x1000), Value::Unsigned(7)]).unwrap();
    writer.push(0x0001, 1010, &[Value::Word(0x1008), Value::Unsigned(7)]).unwrap();
    writer.push(0x0001, 1030, &[Value::Word(0x1010), Value::Unsigned(9)]).unwrap();
    writer.push(0x0002, 1040, &[Value::Word(0x1000)]).unwrap();
    writer.finish()
}

/// docs/FORMAT.md's worked example of a zstd block in columns ("A zstd block in columns"):
/// the records, their column image and the packed block are the bytes the encoder and the
/// packer (libzstd 1.5.7 at level 3) write today, and the block reads back.
#[test]
fn format_md_zstd_example_is_what_the_packer_writes() {
    use event_format::raw::columns;
    use event_format::wire::{Packer, Packing, Unpacker};
    let order = Order::Little;
    let block = zstd_example_block(order);
    let used = order.u32(&block[40..]) as usize;
    let records = &block[48..48 + used];
    let mut image = Vec::new();
    assert!(columns::encode(order, records, &mut image));
    let mut packed = Vec::new();
    assert!(Packer::new(Packing { level: 3, ..Packing::ZSTD }).pack(order, &block, &mut packed));
    let doc = format_md();
    let section = doc_section(doc_section(&doc, "## Worked examples"), "### A zstd block in columns");
    let dumps = fenced_bytes(section);
    let explain = format!(
        "the records\n{}the image\n{}the packed block\n{}",
        hex_dump(records),
        hex_dump(&image),
        hex_dump(&packed)
    );
    assert_eq!(dumps, [records.to_vec(), image.clone(), packed.clone()], "{explain}");
    assert!(assert_rows(section, &packed, "zstd block") >= 8, "the packed block's table is read");
    let mut back = Vec::new();
    let packed_used = order.u32(&packed[40..]) as usize;
    Unpacker::new()
        .unpack_into(order, order.u16(&packed[4..]), &packed[48..48 + packed_used], 1024, &mut back)
        .unwrap();
    assert_eq!(back, records);
    // The same image as a frame of one raw block, as a writer without a compressor writes it.
    let mut raw = vec![0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x50, 0x81, 0x02, 0x00];
    raw.extend_from_slice(&image);
    assert_eq!(raw.len(), 89);
    Unpacker::new().unpack_into(order, 0x0007, &raw, 1024, &mut back).unwrap();
    assert_eq!(back, records);
}

/// docs/FORMAT.md's worked example of records by callsite ("A span by callsite"): a block's
/// `Callsite` and `SpanOpenAt` records are the bytes the encoder writes, and a reader expands
/// the `SpanOpenAt` into exactly the `SpanOpen` written without callsites.
#[test]
fn format_md_callsite_example_is_what_the_encoder_and_the_reader_write() {
    let order = Order::Little;
    let header = BlockHeader { thread: 1, base_time: 100, ..BlockHeader::default() };
    let mut w = BlockWriter::new(order, 1024, &header);
    let site = [
        Value::Word(1),
        Value::Unsigned(3),
        Value::Str(Text::new("request")),
        Value::Str(Text::new("app")),
        Value::Str(Text::new("id method")),
    ];
    w.push(builtin::CALLSITE, 100, &site).unwrap();
    let open = [Value::Word(7), Value::Word(0), Value::Word(1), Value::Str(Text::new("0=42 1=\"GET\""))];
    w.push(builtin::SPAN_OPEN_AT, 105, &open).unwrap();
    let block = w.finish();
    let used = order.u32(&block[event_format::raw::BLOCK_USED_AT..]) as usize;
    let records = block[48..48 + used].to_vec();
    let expanded = event_format::callsites::expand(order, &records, 1024).expect("a record by callsite");
    // What the bridge writes without callsites: the same `Callsite`, then the `SpanOpen`.
    let mut w = BlockWriter::new(order, 1024, &header);
    w.push(builtin::CALLSITE, 100, &site).unwrap();
    let plain = [
        Value::Word(7),
        Value::Word(0),
        Value::Str(Text::new("request")),
        Value::Str(Text::new("id=42 method=\"GET\"")),
    ];
    w.push(builtin::SPAN_OPEN, 105, &plain).unwrap();
    let block = w.finish();
    let used = order.u32(&block[event_format::raw::BLOCK_USED_AT..]) as usize;
    assert_eq!(expanded, block[48..48 + used], "expanded, the records written without callsites");
    let doc = format_md();
    let section = doc_section(doc_section(&doc, "## Worked examples"), "### A span by callsite");
    assert_eq!(
        fenced_bytes(section),
        [records.clone(), expanded.clone()],
        "the records, then as a reader reads them; the encoder writes\n{}\nexpanded\n{}",
        hex_dump(&records),
        hex_dump(&expanded)
    );
    assert_eq!(assert_rows(section, &records, "callsite records"), 15, "the table is read");
}
