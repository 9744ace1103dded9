//! The streaming decoder on good, damaged, skewed and hostile input, and round trips of
//! random schemas and events through the encoder and decoder in both byte orders.

use event_format::decode::{BlockError, Catalog, DecodeOptions, Decoder, Entry};
use event_format::schema::{EventType, Kind, Retired, Schema, Version};
use event_format::testing::{sample_header, sample_stream};
use event_format::wire::{
    BLOCK_HEADER_LEN, BlockHeader, BlockWriter, Damage, FORMAT_VERSION, Header, HeaderError, MIN_BLOCK_SIZE, Order,
    RecordError, RecordingId, SetEntry, Text, Value, WireCodes,
};
use event_format::{Letter, text};
use proptest::prelude::*;

/// Everything a stream decodes to, as text: one line per event, unknown record or error.
fn dump(bytes: &[u8], options: DecodeOptions) -> Result<String, HeaderError> {
    let mut decoder = Decoder::with_options(bytes, options)?;
    let header = decoder.header().clone();
    let catalog = Catalog::new(&header.sets);
    let mut out = String::new();
    while let Some(block) = decoder.next_block() {
        match block {
            Err(e) => out.push_str(&format!("! {e}\n")),
            Ok(block) => {
                if block.header.lost > 0 {
                    out.push_str(&format!("! {} events lost on thread {}\n", block.header.lost, block.header.thread));
                }
                for entry in block.entries(&catalog) {
                    match entry {
                        Entry::Event(event) => {
                            text::write_event(&mut out, &header.clock, &event).unwrap();
                            out.push('\n');
                        }
                        Entry::Unknown { code, len, .. } => {
                            out.push_str(&format!("? unknown code {code:#06x}, {len} bytes\n"))
                        }
                        Entry::Bad(e) => out.push_str(&format!("! {e}\n")),
                    }
                }
            }
        }
    }
    Ok(out)
}

fn blocks_start(bytes: &[u8]) -> usize {
    Decoder::new(bytes).expect("valid").header_len() as usize
}

#[test]
fn both_byte_orders_decode_to_the_same_text() {
    let le = dump(&sample_stream(Order::Little), DecodeOptions::default()).unwrap();
    let be = dump(&sample_stream(Order::Big), DecodeOptions::default()).unwrap();
    assert_eq!(le, be);
    insta::assert_snapshot!("sample_stream_text", le);
}

#[test]
fn the_sample_spans_several_blocks() {
    let bytes = sample_stream(Order::Little);
    let blocks = (bytes.len() - blocks_start(&bytes)) / MIN_BLOCK_SIZE as usize;
    assert!(blocks >= 3, "thread 1 needs more than one block, thread 2 one: {blocks}");
}

#[test]
fn a_damaged_block_is_reported_and_the_others_decode() {
    let good = sample_stream(Order::Little);
    let start = blocks_start(&good);
    let size = MIN_BLOCK_SIZE as usize;
    let mut bad = good.clone();
    bad[start + size + BLOCK_HEADER_LEN + 20] ^= 0x40; // a record byte of block 1

    let mut decoder = Decoder::new(&bad[..]).unwrap();
    let mut good_decoder = Decoder::new(&good[..]).unwrap();
    let mut index = 0;
    while let Some(block) = decoder.next_block() {
        let expected = good_decoder.next_block().expect("same number of blocks").expect("good");
        if index == 1 {
            let err = block.expect_err("block 1 is damaged");
            assert_eq!(err.index, 1);
            assert_eq!(err.offset, (start + size) as u64);
            assert!(matches!(err.damage, Damage::CrcMismatch { .. }), "{err}");
        } else {
            assert_eq!(block.expect("undamaged blocks decode"), expected);
        }
        index += 1;
    }
    assert!(good_decoder.next_block().is_none());
}

#[test]
fn a_bad_sync_word_is_reported() {
    let mut bytes = sample_stream(Order::Big);
    let start = blocks_start(&bytes);
    bytes[start] = 0;
    let err = Decoder::new(&bytes[..]).unwrap().next_block().unwrap().unwrap_err();
    assert!(matches!(err.damage, Damage::BadSync(_)), "{err}");
    assert_eq!(
        err.to_string(),
        format!("block 0 at offset {start} skipped: no block sync word (found 0010c4ed, expected eb10c4ed)")
    );
}

fn encode_with(version: Version) -> Vec<u8> {
    let mut header = sample_header(Order::Little);
    header.format = version;
    let mut bytes = header.encode().unwrap();
    let sample = sample_stream(Order::Little);
    bytes.extend_from_slice(&sample[blocks_start(&sample)..]);
    bytes
}

#[test]
fn another_major_version_is_refused_with_the_versions_read() {
    let err = Decoder::new(&encode_with(Version::new(3, 0, 0))[..]).unwrap_err();
    assert!(matches!(err, HeaderError::UnsupportedMajor(v) if v == Version::new(3, 0, 0)));
    assert_eq!(
        err.to_string(),
        "stream format 3.0.0 is not supported: this reader reads format 2.x (up to 2.1.x, and newer minors) and format 1.x (up to 1.1.x); use a reader built for format 3.x"
    );
    let older_major = encode_with(Version::new(0, 9, 0));
    let forced = Decoder::with_options(&older_major[..], DecodeOptions { force: true });
    assert!(matches!(forced, Err(HeaderError::UnsupportedMajor(_))), "force does not cross majors");
}

#[test]
fn a_newer_median_is_refused_unless_forced() {
    let newer = Version::new(FORMAT_VERSION.major, FORMAT_VERSION.median + 1, 0);
    let bytes = encode_with(newer);
    let err = Decoder::new(&bytes[..]).unwrap_err();
    assert!(matches!(err, HeaderError::NewerMedian(v) if v == newer), "{err}");
    assert!(err.to_string().contains("--force"), "{err}");
    let forced = dump(&bytes, DecodeOptions { force: true }).expect("forced");
    assert_eq!(forced, dump(&sample_stream(Order::Little), DecodeOptions::default()).unwrap());
}

#[test]
fn a_damaged_median_field_is_damage_not_a_newer_version() {
    let mut bytes = sample_stream(Order::Little);
    bytes[12] ^= 0x04; // the median version field, without fixing the CRC
    assert!(matches!(Decoder::new(&bytes[..]), Err(HeaderError::CrcMismatch { .. })));
}

/// `header` (encoded, little-endian) with `extra` inserted before its CRC, its length and CRC
/// made good.
fn with_extra(header: &[u8], extra: &[u8]) -> Vec<u8> {
    let mut bytes = header[..header.len() - 4].to_vec();
    bytes.extend_from_slice(extra);
    let len = bytes.len() as u32 + 4;
    bytes[16..20].copy_from_slice(&len.to_le_bytes());
    let crc = crc32fast::hash(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}

#[test]
fn a_newer_minor_is_read_and_its_extra_header_bytes_skipped() {
    let newer = Version::new(FORMAT_VERSION.major, FORMAT_VERSION.median, FORMAT_VERSION.minor + 1);
    let mut header = sample_header(Order::Little);
    header.format = newer;
    header.properties.recording = Some(RecordingId([7; 16]));
    // Since 2.0.2 a newer minor adds header properties: one this reader does not know (tag
    // 0x7F01, 5 bytes) between the ones it knows and the CRC.
    let mut bytes = with_extra(&header.encode().unwrap(), &[0x01, 0x7F, 5, 0, 0, 0, 1, 2, 3, 4, 5]);
    let sample = sample_stream(Order::Little);
    bytes.extend_from_slice(&sample[blocks_start(&sample)..]);

    let decoder = Decoder::new(&bytes[..]).expect("a newer minor is read");
    assert_eq!(decoder.header().format, newer);
    assert_eq!(decoder.header().properties.recording, Some(RecordingId([7; 16])), "the known property is read");
    assert_eq!(decoder.header().skipped_bytes, 11, "the unknown property, its tag and length included");
    assert_eq!(dump(&bytes, DecodeOptions::default()).unwrap(), dump(&sample, DecodeOptions::default()).unwrap());
}

#[test]
fn the_recording_id_is_a_header_property_since_2_0_2() {
    let mut header = sample_header(Order::Little);
    assert_eq!(header.format, FORMAT_VERSION, "the current writer's header, which has properties");
    let without = header.encode().unwrap();
    let id = RecordingId(*b"0123456789abcdef");
    header.properties.recording = Some(id);
    let bytes = header.encode().unwrap();
    // The property follows the host: tag 1, length 16, the id; then the CRC.
    let end = bytes.len() - 4;
    assert_eq!(&bytes[end - 22..end], b"\x01\x00\x10\x00\x00\x000123456789abcdef");
    assert_eq!(bytes.len(), without.len() + 22);
    let decoded = Header::decode(&bytes, false).unwrap();
    assert_eq!((decoded.properties.recording, decoded.skipped_bytes), (Some(id), 0));
    assert_eq!(decoded, header);

    // A 2.0.1 reader skips the properties as extension bytes: read as 2.0.1, 22 of them.
    let mut as_old = bytes.clone();
    (as_old[12], as_old[14]) = (0, 1);
    let crc = crc32fast::hash(&as_old[..end]);
    as_old[end..].copy_from_slice(&crc.to_le_bytes());
    let read = Header::decode(&as_old, false).unwrap();
    assert_eq!((read.properties.recording, read.skipped_bytes), (None, 22));

    // A longer id value (a later minor's appended fields) reads its first 16 bytes.
    let longer = with_extra(
        &without,
        &[
            1, 0, 18, 0, 0, 0, b'0', b'1', b'2', b'3', b'4', b'5', b'6', b'7', b'8', b'9', b'a', b'b', b'c', b'd',
            b'e', b'f', 0xAA, 0xBB,
        ],
    );
    assert_eq!(Header::decode(&longer, false).unwrap().properties.recording, Some(id));

    // Malformed: a value shorter than 16 bytes, a known tag twice, a length past the CRC, a
    // tag and length cut short.
    let malformed = |extra: &[u8]| {
        let bytes = with_extra(&without, extra);
        match Header::decode(&bytes, false) {
            Err(HeaderError::Malformed(why)) => why,
            other => panic!("{extra:?}: expected malformed, got {other:?}"),
        }
    };
    assert!(malformed(&[1, 0, 2, 0, 0, 0, 1, 2]).contains("shorter than its 16"));
    let mut twice = Vec::new();
    for _ in 0..2 {
        twice.extend_from_slice(&[1, 0, 16, 0, 0, 0]);
        twice.extend_from_slice(&[9; 16]);
    }
    assert!(malformed(&twice).contains("twice"));
    assert!(malformed(&[9, 0, 200, 0, 0, 0, 1]).contains("more than the header holds"));
    assert!(malformed(&[9, 0, 1]).contains("run past the end"));
}

/// The length of [`declaring_header`]'s meanings property value: the set count; set 1's index;
/// its span (count, name, begin, end, id), counter (count, name, event, value, unit) and flow
/// (count, name, event, id, step).
const MEANINGS_LEN: usize =
    2 + 2 + (2 + 2 + 7 + 2 + 2 + 2 + 2) + (2 + 2 + 5 + 2 + 2 + 5 + 2 + 5) + (2 + 2 + 4 + 2 + 2 + 2 + 1);

/// Two sets, the second of which declares a span, a counter and a flow.
fn declaring_header() -> Header {
    let app =
        event_format::def::parse("SET(app)\nVERSION(1, 0, 0)\nKIND(K)\nRELATION(Tick, 1, TRUE, K, 0)\n", "app.def")
            .unwrap();
    let net = event_format::def::parse(
        "SET(net)\nVERSION(1, 0, 0)\nKIND(Req)\n\
         RELATION(Begin, 1, TRUE, Req, WS, id, path)\nRELATION(End, 2, TRUE, Req, WU, id, status)\n\
         RELATION(Depth, 3, TRUE, Req, D, depth)\n\
         SPAN(request, Begin, End, id)\nCOUNTER(queue, Depth, depth, \"items\")\nFLOW(work, Begin, id, BEGIN)\n",
        "net.def",
    )
    .unwrap();
    let mut header = sample_header(Order::Little);
    header.sets = SetEntry::assign([app, net]);
    header
}

#[test]
fn spans_counters_and_flows_travel_in_a_header_property_since_2_0_2() {
    let header = declaring_header();
    let bytes = header.encode().unwrap();
    let decoded = Header::decode(&bytes, false).unwrap();
    assert_eq!(decoded, header, "the declarations read back into their set");
    assert!(!decoded.sets[0].schema.declares_meanings());
    assert_eq!(decoded.sets[1].schema.spans[0].id.as_deref(), Some("id"));

    // The property: tag 2, then one set (index 1) with 1 span, 1 counter and 1 flow.
    let end = bytes.len() - 4;
    let net = &decoded.sets[1].schema;
    let value_len = MEANINGS_LEN;
    let start = end - 6 - value_len;
    assert_eq!(&bytes[start..start + 6], &[2, 0, value_len as u8, 0, 0, 0], "tag 2 and its length");
    assert_eq!(&bytes[start + 6..start + 12], &[1, 0, 1, 0, 1, 0], "one set: set 1, one span");
    assert_eq!(net.flows[0].step, event_format::schema::FlowStep::Begin);

    // A 2.0.1 writer cannot carry them.
    let mut older = header.clone();
    older.format = Version::new(2, 0, 1);
    assert!(older.encode().unwrap_err().to_string().contains("cannot carry spans"));
    // A 2.0.1 reader skips them as extension bytes: the events read, undeclared.
    let mut as_old = bytes.clone();
    (as_old[12], as_old[14]) = (0, 1);
    let crc = crc32fast::hash(&as_old[..end]);
    as_old[end..].copy_from_slice(&crc.to_le_bytes());
    let read = Header::decode(&as_old, false).unwrap();
    assert!(!read.sets[1].schema.declares_meanings());
    assert_eq!(read.skipped_bytes as usize, 6 + value_len);
}

#[test]
fn declarations_a_stream_embeds_are_held_to_the_set_rules() {
    let mut header = declaring_header();
    let good = header.encode().unwrap();
    // The rules apply to what a stream embeds as they do to events.def: a span whose end
    // event does not exist, written by hand past the encoder's own check.
    header.sets[1].schema.spans[0].end = 9;
    let mut bytes = good.clone();
    let at = good.windows(9).position(|w| w == b"\x07\x00request").unwrap() + 9 + 2;
    bytes[at] = 9;
    let crc = crc32fast::hash(&bytes[..bytes.len() - 4]);
    let n = bytes.len();
    bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
    match Header::decode(&bytes, false) {
        Err(HeaderError::BadSchema(problems)) => {
            assert!(problems[0].message.contains("no RELATION of the set declares"), "{}", problems[0])
        }
        other => panic!("expected a bad schema, got {other:?}"),
    }
    assert!(header.encode().is_err(), "the encoder refuses it too");

    // Layout faults are malformed: a set index past the sets, a step that is not 0..=2.
    let malformed = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = good.clone();
        edit(&mut bytes);
        let n = bytes.len();
        let crc = crc32fast::hash(&bytes[..n - 4]);
        bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
        match Header::decode(&bytes, false) {
            Err(HeaderError::Malformed(why)) => why,
            other => panic!("expected malformed, got {other:?}"),
        }
    };
    let value = good.len() - 4 - MEANINGS_LEN;
    assert!(malformed(&|b| b[value + 2] = 7).contains("the header has 2 sets"));
    assert!(
        malformed(&|b| {
            let n = b.len();
            b[n - 5] = 3
        })
        .contains("step 3")
    );
}

#[test]
fn the_host_name_follows_the_sets_since_2_0_1_and_a_2_0_header_has_none() {
    let mut header = sample_header(Order::Little);
    header.format = Version::new(2, 0, 1);
    let bytes = header.encode().unwrap();
    // The host is the last field before the CRC: a str16.
    let end = bytes.len() - 4;
    assert_eq!(&bytes[end - 13..end], b"\x0b\x00sample-host");
    let decoded = Header::decode(&bytes, false).unwrap();
    assert_eq!((decoded.producer.host.as_str(), decoded.skipped_bytes), ("sample-host", 0));

    // The same header as 2.0.0 writes no host, and reads none back.
    let mut older = header.clone();
    older.format = Version::new(2, 0, 0);
    let old_bytes = older.encode().unwrap();
    assert_eq!(old_bytes.len(), bytes.len() - 13);
    assert_eq!(Header::decode(&old_bytes, false).unwrap().producer.host, "");
    // A 2.0 reader skips the host as extension bytes: this header read as 2.0 keeps 13 of them.
    let mut as_old = bytes.clone();
    (as_old[12], as_old[14]) = (0, 0);
    let crc = crc32fast::hash(&as_old[..end]);
    as_old[end..].copy_from_slice(&crc.to_le_bytes());
    let read = Header::decode(&as_old, false).unwrap();
    assert_eq!((read.producer.host.as_str(), read.skipped_bytes), ("", 13));

    // A 2.0.1 header that ends with its sets has no host (read as empty); one whose host
    // runs past the CRC is malformed.
    let mut bare = old_bytes.clone();
    bare[14] = 1;
    let reseal = |b: &mut Vec<u8>| {
        let at = b.len() - 4;
        let len = b.len() as u32;
        b[16..20].copy_from_slice(&len.to_le_bytes());
        let crc = crc32fast::hash(&b[..at]);
        b[at..].copy_from_slice(&crc.to_le_bytes());
    };
    reseal(&mut bare);
    assert_eq!(Header::decode(&bare, false).unwrap().producer.host, "");
    let mut cut = bare.clone();
    cut.insert(cut.len() - 4, 9); // one byte of a host length
    reseal(&mut cut);
    assert!(matches!(Header::decode(&cut, false), Err(HeaderError::Malformed(_))), "{:?}", Header::decode(&cut, false));
}

fn one_block(order: Order, build: impl FnOnce(&mut BlockWriter)) -> Vec<u8> {
    let header = sample_header(order);
    let mut bytes = header.encode().unwrap();
    let mut block =
        BlockWriter::new(order, header.block_size, &BlockHeader { thread: 9, base_time: 1000, ..Default::default() });
    build(&mut block);
    bytes.extend(block.finish());
    bytes
}

#[test]
fn unknown_codes_are_skipped_by_length_and_counted() {
    let bytes = one_block(Order::Little, |b| {
        b.push(0x0004, 1000, &[]).unwrap();
        b.push(0xFF7F, 1001, &[Value::Word(1), Value::Str(Text::new("future"))]).unwrap();
        b.push(0x0005, 1002, &[Value::Word(2)]).unwrap(); // a retired code
        b.push(0x0004, 1003, &[]).unwrap();
    });
    let text = dump(&bytes, DecodeOptions::default()).unwrap();
    assert_eq!(
        text,
        "0.000000000 T9 Arena.Poll\n? unknown code 0xff7f, 24 bytes\n? unknown code 0x0005, 16 bytes\n0.000000003 T9 Arena.Poll\n"
    );
}

#[test]
fn arguments_that_do_not_match_the_format_are_reported_and_skipped() {
    let bytes = one_block(Order::Little, |b| {
        // ArenaCreate is PAW (24 bytes of arguments); give it one word.
        b.push(0x0001, 1000, &[Value::Word(1)]).unwrap();
        // PoolStats is PIDB; a U of 2 in the B's place puts byte 2 where a bool must be 0 or 1.
        b.push(0x0003, 1001, &[Value::Pointer(1), Value::Signed(-1), Value::Double(0.5), Value::Unsigned(2)]).unwrap();
        b.push(0x0004, 1002, &[]).unwrap();
    });
    let text = dump(&bytes, DecodeOptions::default()).unwrap();
    assert_eq!(
        text,
        "! record at offset 0 (code 0x0001): the arguments run past the record; the record is skipped\n\
         ! record at offset 16 (code 0x0003): a bool is neither 0 nor 1; the record is skipped\n\
         0.000000002 T9 Arena.Poll\n"
    );
}

#[test]
fn a_bad_record_length_ends_the_block_and_keeps_what_came_before() {
    let header = sample_header(Order::Little);
    let mut bytes = header.encode().unwrap();
    let mut block = BlockWriter::new(
        Order::Little,
        header.block_size,
        &BlockHeader { thread: 3, base_time: 1000, ..Default::default() },
    );
    block.push(0x0004, 1000, &[]).unwrap();
    block.push(0x0004, 1001, &[]).unwrap();
    let mut raw = block.finish();
    // Make the second record's length 4 (below the 8-byte header), then re-seal so the CRC holds.
    raw[BLOCK_HEADER_LEN + 8 + 2] = 4;
    event_format::raw::seal_block(Order::Little, &mut raw, 16);
    bytes.extend(raw);
    let text = dump(&bytes, DecodeOptions::default()).unwrap();
    assert_eq!(
        text,
        "0.000000000 T3 Arena.Poll\n! record at offset 8 (code 0x0004): length 4 is not in 8..=8; the rest of the block is skipped\n"
    );
}

#[test]
fn block_flags_from_a_newer_writer_skip_the_block() {
    let header = sample_header(Order::Little);
    let mut bytes = header.encode().unwrap();
    // Flag 0x0002 is not defined (0x0001 is BLOCK_PACKED, since 1.1).
    let mut block =
        BlockWriter::new(Order::Little, header.block_size, &BlockHeader { flags: 2, thread: 3, ..Default::default() });
    block.push(0x0004, 0, &[]).unwrap();
    bytes.extend(block.finish());
    let err: BlockError = Decoder::new(&bytes[..]).unwrap().next_block().unwrap().unwrap_err();
    assert_eq!(err.damage, Damage::UnknownFlags(2));
}

#[test]
fn every_truncation_is_reported_without_panic() {
    let bytes = sample_stream(Order::Little);
    let start = blocks_start(&bytes);
    let size = MIN_BLOCK_SIZE as usize;
    for cut in 0..bytes.len() {
        let input = &bytes[..cut];
        match Decoder::new(input) {
            Err(HeaderError::Truncated { have, .. }) => {
                assert!(cut < start, "cut at {cut}");
                assert!(have <= cut as u64);
            }
            Err(e) => panic!("cut at {cut}: unexpected {e}"),
            Ok(mut decoder) => {
                assert!(cut >= start);
                let whole = (cut - start) / size;
                for i in 0..whole {
                    assert!(decoder.next_block().unwrap().is_ok(), "cut at {cut}: block {i} is whole");
                }
                match decoder.next_block() {
                    None => assert_eq!((cut - start) % size, 0),
                    Some(Err(BlockError { damage: Damage::Truncated { have, need }, .. })) => {
                        assert_eq!(have, (cut - start) % size);
                        assert_eq!(need, size);
                        assert!(decoder.next_block().is_none());
                    }
                    other => panic!("cut at {cut}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn not_a_stream_is_said_plainly() {
    let err = Decoder::new(&b"hello, world; this is not a stream at all"[..]).unwrap_err();
    assert!(matches!(err, HeaderError::NotAStream));
    assert_eq!(
        err.to_string(),
        "not an event stream: it does not start with the stream's magic bytes; check the file name"
    );
    assert!(matches!(Decoder::new(&[][..]), Err(HeaderError::Truncated { have: 0, .. })));
}

#[test]
fn a_damaged_header_is_refused_by_its_crc() {
    let mut bytes = sample_stream(Order::Little);
    bytes[100] ^= 1;
    assert!(matches!(Decoder::new(&bytes[..]), Err(HeaderError::CrcMismatch { .. })));
}

#[test]
fn a_hostile_block_size_is_refused() {
    let mut bytes = sample_stream(Order::Little);
    bytes[20..24].copy_from_slice(&(1u32 << 31).to_le_bytes());
    let err = Decoder::new(&bytes[..]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "block size 2147483648 is invalid: it must be a power of two in 1024..=16777216; the header is damaged"
    );
}

// ---- property tests ----

fn ident() -> impl Strategy<Value = String> {
    "[A-Z][a-zA-Z0-9_]{0,12}"
}

fn letter() -> impl Strategy<Value = Letter> {
    prop::sample::select(Letter::ALL.to_vec())
}

prop_compose! {
    fn schema()(
        version in (any::<u16>(), any::<u16>(), any::<u16>()),
        kind_names in prop::collection::btree_set(ident(), 1..8),
        docs in prop::collection::vec(".{0,20}", 8),
        rows in prop::collection::btree_map(1u16..=0xFEFF, (ident(), any::<bool>(), any::<u8>(), prop::collection::vec(letter(), 0..10)), 0..20),
        retired_codes in prop::collection::btree_set(1u16..=0xFEFF, 0..3),
    ) -> Schema {
        let kinds: Vec<Kind> = kind_names.into_iter().filter(|k| k != "Builtin").zip(docs).map(|(name, doc)| Kind { name, doc }).collect();
        let nkinds = kinds.len().max(1) as u8;
        let mut seen = std::collections::BTreeSet::new();
        let events = rows.into_iter().filter(|(_, (name, ..))| seen.insert(format!("E{name}"))).map(|(code, (name, always, kind, format))| EventType {
            name: format!("E{name}"),
            code,
            always,
            kind: kind % nkinds,
            params: (0..format.len()).map(|i| format!("p{i}")).collect(),
            format,
        }).collect::<Vec<_>>();
        let retired = retired_codes.into_iter().filter(|c| events.iter().all(|e| e.code != *c)).enumerate()
            .map(|(i, code)| Retired { name: format!("Gone{i}"), code }).collect();
        let kinds = if kinds.is_empty() { vec![Kind { name: "K".into(), doc: String::new() }] } else { kinds };
        Schema {
            name: "gen".into(),
            version: Version::new(version.0, version.1, version.2),
            kinds,
            events,
            retired,
            ..Schema::default()
        }
    }
}

fn value_for(letter: Letter) -> BoxedStrategy<OwnedValue> {
    match letter {
        Letter::Pointer => any::<u64>().prop_map(OwnedValue::Pointer).boxed(),
        Letter::Address => any::<u64>().prop_map(OwnedValue::Address).boxed(),
        Letter::Word => any::<u64>().prop_map(OwnedValue::Word).boxed(),
        Letter::Unsigned => any::<u32>().prop_map(OwnedValue::Unsigned).boxed(),
        Letter::Signed => any::<i64>().prop_map(OwnedValue::Signed).boxed(),
        Letter::Double => any::<f64>().prop_map(|d| OwnedValue::Double(d.to_bits())).boxed(),
        Letter::Bool => any::<bool>().prop_map(OwnedValue::Bool).boxed(),
        Letter::String => ".{0,40}".prop_map(OwnedValue::Str).boxed(),
    }
}

/// A value that owns its string, so strategies can produce it. Doubles are kept as bits so
/// NaNs compare equal.
#[derive(Clone, Debug, PartialEq)]
enum OwnedValue {
    Pointer(u64),
    Address(u64),
    Word(u64),
    Unsigned(u32),
    Signed(i64),
    Double(u64),
    Bool(bool),
    Str(String),
}

impl OwnedValue {
    fn borrow(&self) -> Value<'_> {
        match self {
            OwnedValue::Pointer(v) => Value::Pointer(*v),
            OwnedValue::Address(v) => Value::Address(*v),
            OwnedValue::Word(v) => Value::Word(*v),
            OwnedValue::Unsigned(v) => Value::Unsigned(*v),
            OwnedValue::Signed(v) => Value::Signed(*v),
            OwnedValue::Double(v) => Value::Double(f64::from_bits(*v)),
            OwnedValue::Bool(v) => Value::Bool(*v),
            OwnedValue::Str(s) => Value::Str(Text::new(s)),
        }
    }

    fn from_value(v: &Value<'_>) -> OwnedValue {
        match *v {
            Value::Pointer(v) => OwnedValue::Pointer(v),
            Value::Address(v) => OwnedValue::Address(v),
            Value::Word(v) => OwnedValue::Word(v),
            Value::Unsigned(v) => OwnedValue::Unsigned(v),
            Value::Signed(v) => OwnedValue::Signed(v),
            Value::Double(v) => OwnedValue::Double(v.to_bits()),
            Value::Bool(v) => OwnedValue::Bool(v),
            Value::Str(t) => {
                assert!(!t.truncated);
                OwnedValue::Str(String::from_utf8(t.bytes.to_vec()).expect("UTF-8 in, UTF-8 out"))
            }
        }
    }
}

prop_compose! {
    fn schema_and_events()(schema in schema())(
        events in prop::collection::vec(
            (0..schema.events.len().max(1), any::<u32>(), any::<bool>()).prop_flat_map({
                let schema = schema.clone();
                move |(i, dt, big_gap)| {
                    let format = schema.events.get(i).map(|e| e.format.clone()).unwrap_or_default();
                    let values: Vec<BoxedStrategy<OwnedValue>> = format.into_iter().map(value_for).collect();
                    (Just(i), Just(u64::from(dt % 5000) + if big_gap { 1 << 33 } else { 0 }), values)
                }
            }),
            0..150,
        ),
        schema in Just(schema),
        threads in 1u64..4,
    ) -> (Schema, Vec<GenEvent>, u64) {
        (schema, events, threads)
    }
}

/// One event as a test generates it: (index into the schema's events, time step, values).
type GenEvent = (usize, u64, Vec<OwnedValue>);
/// One event as a thread recorded it: (code, absolute time, values).
type Recorded = (u16, u64, Vec<OwnedValue>);

/// Encodes `events` round-robin over `threads` threads, a block writer each, new blocks as
/// they fill; returns the stream and, per thread, the events in order.
fn encode_stream(order: Order, schema: &Schema, events: &[GenEvent], threads: u64) -> (Vec<u8>, Vec<Vec<Recorded>>) {
    let mut header = sample_header(order);
    header.sets = SetEntry::assign([schema.clone()]);
    let size = header.block_size;
    let mut out = header.encode().expect("a valid schema encodes");
    let mut writers: Vec<(BlockWriter, u64)> = (0..threads)
        .map(|t| (BlockWriter::new(order, size, &BlockHeader { thread: t, base_time: 0, ..Default::default() }), 0))
        .collect();
    let mut expected = vec![Vec::new(); threads as usize];
    let mut time = 0u64;
    for (n, (i, dt, values)) in events.iter().enumerate() {
        if schema.events.is_empty() {
            break;
        }
        let t = n % threads as usize;
        time += dt;
        // Records carry wire codes; a reader gives back the event's own code.
        let code = header.sets[0].wire_code(*i).expect("a wire code");
        let borrowed: Vec<Value<'_>> = values.iter().map(OwnedValue::borrow).collect();
        let (writer, seq) = &mut writers[t];
        if writer.push(code, time, &borrowed).is_err() {
            *seq += 1;
            let next = BlockWriter::new(
                order,
                size,
                &BlockHeader { thread: t as u64, sequence: *seq, base_time: time, ..Default::default() },
            );
            out.extend(std::mem::replace(writer, next).finish());
            writer.push(code, time, &borrowed).expect("fits an empty block");
        }
        expected[t].push((schema.events[*i].code, time, values.clone()));
    }
    for (writer, _) in writers {
        out.extend(writer.finish());
    }
    (out, expected)
}

proptest! {
    #[test]
    fn random_schemas_round_trip_through_the_header(schema in schema(), big in any::<bool>()) {
        prop_assume!(schema.check().is_ok());
        let order = if big { Order::Big } else { Order::Little };
        let mut header = sample_header(order);
        header.sets = SetEntry::assign([schema]);
        let bytes = header.encode().unwrap();
        prop_assert_eq!(Header::decode(&bytes, false).unwrap(), header);
    }

    #[test]
    fn random_events_round_trip_in_both_orders((schema, events, threads) in schema_and_events()) {
        prop_assume!(schema.check().is_ok());
        for order in [Order::Little, Order::Big] {
            let (bytes, expected) = encode_stream(order, &schema, &events, threads);
            let mut decoder = Decoder::new(&bytes[..]).unwrap();
            let catalog = Catalog::new(&decoder.header().sets);
            let mut got = vec![Vec::new(); threads as usize];
            while let Some(block) = decoder.next_block() {
                let block = block.unwrap();
                for entry in block.entries(&catalog) {
                    let Entry::Event(event) = entry else { panic!("{entry:?}") };
                    let values: Vec<OwnedValue> = event.values().map(|v| OwnedValue::from_value(&v)).collect();
                    got[event.thread as usize].push((event.desc.code, event.time, values));
                }
            }
            prop_assert_eq!(&got, &expected);
        }
    }

    #[test]
    fn random_bytes_never_panic_the_decoder(bytes in prop::collection::vec(any::<u8>(), 0..3000)) {
        let _ = dump(&bytes, DecodeOptions { force: true });
    }

    #[test]
    fn random_bytes_after_a_valid_header_never_panic(tail in prop::collection::vec(any::<u8>(), 0..5000)) {
        let mut bytes = sample_header(Order::Big).encode().unwrap();
        bytes.extend(tail);
        prop_assert!(dump(&bytes, DecodeOptions::default()).is_ok());
    }

    #[test]
    fn bit_flips_cost_at_most_the_blocks_they_hit(flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4)) {
        let good = sample_stream(Order::Little);
        let start = blocks_start(&good);
        let size = MIN_BLOCK_SIZE as usize;
        let mut bad = good.clone();
        let mut hit = std::collections::BTreeSet::new();
        for (at, bit) in &flips {
            let i = start + at.index(good.len() - start);
            bad[i] ^= 1 << bit;
            hit.insert((i - start) / size);
        }
        // Every block the flips did not hit decodes as it did, at its offset; nothing else
        // decodes (a damaged block may hide the sync word of the next, hit one: the reader
        // skips both as one damaged run).
        let good_blocks: std::collections::BTreeMap<u64, _> =
            Decoder::new(&good[..]).unwrap().map(|b| b.unwrap()).map(|b| (b.offset, b)).collect();
        let mut seen = std::collections::BTreeSet::new();
        for block in Decoder::new(&bad[..]).unwrap().flatten() {
            // Its index counts the blocks read, so a damaged run may shift it.
            let expected = good_blocks.get(&block.offset).map(|b| (&b.header, &b.records));
            prop_assert_eq!(Some((&block.header, &block.records)), expected);
            seen.insert(block.offset);
        }
        for (offset, block) in &good_blocks {
            prop_assert!(seen.contains(offset) || hit.contains(&(block.index as usize)), "block {} was not hit but is missing", block.index);
        }
    }
}

#[test]
fn record_errors_display_one_line() {
    let e = RecordError::Truncated { offset: 3, remaining: 2 };
    assert_eq!(e.to_string(), "record at offset 3: only 2 bytes left, less than a record header");
}

#[test]
fn an_older_stream_may_name_an_event_like_a_later_built_in() {
    // Format 1.0 had no `SpanEnter` built-in: a 1.0 writer's event could bear the name. A
    // 1.1 writer refused it, but a reader reads it (codes tell them apart).
    let mut header = sample_header(Order::Little);
    header.format = event_format::wire::LAST_V1;
    header.sets = vec![SetEntry { schema: header.sets[0].schema.clone(), codes: WireCodes::Own }];
    header.sets[0].schema.name.clear();
    header.sets[0].schema.events[0].name = "SpanEntex".to_owned();
    let mut bytes = header.encode().unwrap();
    let at = bytes.windows(9).position(|w| w == b"SpanEntex").unwrap();
    bytes[at + 8] = b'r';
    let len = bytes.len();
    let crc = crc32fast::hash(&bytes[..len - 4]);
    bytes[len - 4..].copy_from_slice(&crc.to_le_bytes());
    let decoder = Decoder::new(&bytes[..]).expect("a reader does not reserve names");
    assert_eq!(decoder.header().sets[0].schema.events[0].name, "SpanEnter");
    assert_eq!(decoder.header().sets[0].codes, WireCodes::Own);
}

/// Two sets that reuse each other's codes and names: the header holds both, each with its
/// range of wire codes, and every rule of the list of sets is checked on read.
mod sets {
    use super::*;

    fn two_sets() -> Vec<SetEntry> {
        let storage = event_format::def::parse_set(
            "VERSION(2, 0, 0)\nKIND(Page)\nRELATION(PageWrite, 1, TRUE, Page, WD, page, latency)\nRELATION(Intern, 2, FALSE, Page, W, gen)\n",
            "storage.def",
            "storage",
        )
        .unwrap();
        let app = event_format::def::parse_set(
            "VERSION(1, 0, 0)\nKIND(Req)\nRELATION(Done, 1, TRUE, Req, S, ref)\n",
            "app.def",
            "app",
        )
        .unwrap();
        SetEntry::assign([storage, app])
    }

    /// `sets` encoded as the sample's header would be, with no check (a hostile writer):
    /// encoded with a valid list, then the set fields patched.
    fn header_with(sets: Vec<SetEntry>) -> Result<Header, HeaderError> {
        let mut header = sample_header(Order::Little);
        header.sets = sets;
        Header::decode(&header.encode().map_err(|e| HeaderError::Malformed(e.0))?, false)
    }

    #[test]
    fn two_sets_round_trip_with_their_ranges() {
        let sets = two_sets();
        assert_eq!(sets[0].range(), Some((1, 2)));
        assert_eq!(sets[1].range(), Some((3, 3)));
        for order in [Order::Little, Order::Big] {
            let mut header = sample_header(order);
            header.sets = sets.clone();
            let decoded = Header::decode(&header.encode().unwrap(), false).unwrap();
            assert_eq!(decoded, header);
            assert!(decoded.single_set().is_none(), "the convenience never hides a second set");
            let catalog = Catalog::new(&decoded.sets);
            let done = catalog.get(3).unwrap();
            assert_eq!(
                (done.set.as_str(), done.code, done.wire, done.full_name().to_string()),
                ("app", 1, 3, "app:Req.Done".into())
            );
            assert_eq!(catalog.get(1).unwrap().full_name().to_string(), "storage:Page.PageWrite");
        }
    }

    /// docs/FORMAT.md ("Event sets", issue 30's S5 and S11): the `first` of a set with no
    /// events claims no code, so any value is read; and such a set is a set all the same:
    /// with another, names are qualified by their sets.
    #[test]
    fn a_set_with_no_events_has_any_first_and_counts_as_a_set() {
        let mut empty = two_sets()[1].schema.clone();
        empty.name = "empty".into();
        empty.events.clear();
        empty.retired.clear();
        for first in [0, 0x1234, 0xFFFF] {
            let sets = vec![two_sets()[0].clone(), SetEntry::new(empty.clone(), first)];
            let header = header_with(sets).unwrap_or_else(|e| panic!("first {first:#x}: {e}"));
            let catalog = Catalog::new(&header.sets);
            assert!(catalog.qualified(), "first {first:#x}");
            assert_eq!(catalog.get(1).unwrap().full_name().to_string(), "storage:Page.PageWrite");
        }
    }

    #[test]
    fn bad_lists_of_sets_are_refused() {
        let mut overlap = two_sets();
        overlap[1] = SetEntry::new(overlap[1].schema.clone(), 2);
        let mut past = two_sets();
        past[0] = SetEntry::new(past[0].schema.clone(), 0xFEFF);
        let mut same_name = two_sets();
        same_name[1].schema.name = "storage".into();
        let mut bad_name = two_sets();
        bad_name[1].schema.name = "a b".into();
        let mut zero = two_sets();
        zero[0] = SetEntry::new(zero[0].schema.clone(), 0);
        for (what, sets, expected) in [
            ("overlap", overlap, "overlap"),
            ("past 0xFEFF", past, "not inside 0x0001..=0xFEFF"),
            ("duplicate names", same_name, "used by two sets"),
            ("bad name", bad_name, "not allowed"),
            ("first 0", zero, "not inside"),
        ] {
            let err = header_with(sets).unwrap_err().to_string();
            assert!(err.contains(expected), "{what}: {err}");
        }
    }

    #[test]
    fn a_lying_set_count_reserves_nothing() {
        // 65535 sets claimed, none there: refused as malformed, after reserving at most what
        // the remaining bytes could hold.
        let mut bytes = sample_header(Order::Little).encode().unwrap();
        let at = 80 + 2 + "x86_64".len() + 2 + "linux".len() + 2 + "sample".len();
        bytes[at..at + 2].copy_from_slice(&0xFFFFu16.to_le_bytes());
        let len = bytes.len();
        let crc = crc32fast::hash(&bytes[..len - 4]);
        bytes[len - 4..].copy_from_slice(&crc.to_le_bytes());
        let err = Header::decode(&bytes, false).unwrap_err();
        assert!(matches!(err, HeaderError::Malformed(_)), "{err}");
    }

    #[test]
    fn a_1_x_stream_is_one_unnamed_set_of_its_own_codes() {
        let mut header = sample_header(Order::Big);
        header.format = event_format::wire::LAST_V1;
        let mut schema = header.sets[0].schema.clone();
        schema.name.clear();
        header.sets = vec![SetEntry { schema, codes: WireCodes::Own }];
        // A 1.x header has no host name (format 2.0.1 added it).
        header.producer.host.clear();
        let decoded = Header::decode(&header.encode().unwrap(), false).unwrap();
        assert_eq!(decoded, header);
        assert_eq!(decoded.sets[0].wire_code(1), Some(decoded.sets[0].schema.events[1].code));
        // 1.x rules: keywords are not names there.
        header.sets[0].schema.events[0].params[0] = "type".into();
        assert!(header.encode().is_err());
    }
}

/// `Log::recording_id`: the header's id when it has one, else the FNV-1a 128 hash of the
/// header's bytes (docs/OUTPUT.md, "Recording ids"), the same for every copy of the log and
/// another for another header.
#[test]
fn a_log_without_a_recording_id_has_one_derived_from_its_header_bytes() {
    let dir = crate::dir("event-format-ids");
    let open = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        event_format::log::open(&path, event_format::log::OpenOptions::default()).unwrap().recording_id()
    };
    let without = sample_stream(Order::Little);
    let header_len = blocks_start(&without);
    let derived = open("without.evt", &without);
    assert_eq!(derived, RecordingId::derived(&without[..header_len]));
    // Written out by hand, as a second implementation would compute it.
    let mut hash: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for &b in &without[..header_len] {
        hash = (hash ^ u128::from(b)).wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    assert_eq!(derived.to_hex(), format!("{hash:032x}"));
    // A copy has the same id (the blocks do not count), another header another.
    let mut longer = without.clone();
    longer.truncate(header_len);
    assert_eq!(open("copy.evt", &longer), derived);
    assert_ne!(open("big.evt", &sample_stream(Order::Big)), derived);
    // A header with an id: that one.
    let mut header = sample_header(Order::Little);
    header.properties.recording = Some(RecordingId([9; 16]));
    assert_eq!(open("with.evt", &header.encode().unwrap()), RecordingId([9; 16]));
}
