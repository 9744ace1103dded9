//! The zstd packing and the records in columns (format 2.1): every packing reads back the same
//! records, in both byte orders; damage to a zstd or column block (its frame, its image, its
//! flags) costs that block only; Python's `zstandard` decodes the packing as docs/FORMAT.md
//! says (the test skips, saying so, where the package is missing, unless
//! `EVENT_REQUIRE_ZSTANDARD=1`, as CI sets it).

use event_format::decode::{Catalog, Decoder, Entry};
use event_format::raw::{columns, packed_len, seal_block};
use event_format::testing::sample_stream;
use event_format::text;
use event_format::wire::{
    BLOCK_COLUMNS, BLOCK_HEADER_LEN, BLOCK_PACKED, BLOCK_ZSTD, BlockHeader, Codec, Damage, Order, Packer, Packing,
    Unpacker,
};
use std::io::Write;
use std::process::{Command, Stdio};

/// Every packing a writer may use.
const PACKINGS: [Packing; 4] = [
    Packing::LZ4,
    Packing::ZSTD,
    Packing { columns: false, ..Packing::ZSTD },
    Packing { codec: Codec::Lz4, columns: true, level: 0 },
];

/// The sample stream's header bytes and its (whole) blocks.
fn sample(order: Order) -> (Vec<u8>, Vec<Vec<u8>>) {
    let bytes = sample_stream(order);
    let decoder = Decoder::new(&bytes[..]).unwrap();
    let start = decoder.header_len() as usize;
    let size = decoder.header().block_size as usize;
    (bytes[..start].to_vec(), bytes[start..].chunks(size).map(<[u8]>::to_vec).collect())
}

/// One line per event, `!` lines for damage.
fn lines(bytes: &[u8]) -> Vec<String> {
    let mut decoder = Decoder::new(bytes).unwrap();
    let clock = decoder.header().clock;
    let catalog = Catalog::new(&decoder.header().sets);
    let mut out = Vec::new();
    while let Some(block) = decoder.next_block() {
        match block {
            Err(e) => out.push(format!("! {}", e.damage)),
            Ok(block) => {
                for entry in block.entries(&catalog) {
                    match entry {
                        Entry::Event(e) => {
                            let mut line = String::new();
                            text::write_event(&mut line, &clock, &e).unwrap();
                            out.push(line);
                        }
                        other => out.push(format!("! {other:?}")),
                    }
                }
            }
        }
    }
    out
}

/// The sample stream with every block packed by `packing`.
fn packed_stream(order: Order, packing: Packing) -> Vec<u8> {
    let (head, blocks) = sample(order);
    let mut out = head;
    let mut packer = Packer::new(packing);
    for block in &blocks {
        assert!(packer.pack(order, block, &mut out), "the sample's blocks are worth packing ({packing:?})");
    }
    out
}

#[test]
fn every_packing_reads_back_the_same_records_in_both_orders() {
    for order in [Order::Little, Order::Big] {
        let whole = sample_stream(order);
        let expected = lines(&whole);
        let records: Vec<Vec<u8>> = Decoder::new(&whole[..]).unwrap().map(|b| b.unwrap().records).collect();
        for packing in PACKINGS {
            let stream = packed_stream(order, packing);
            assert_eq!(lines(&stream), expected, "{order:?} {packing:?}");
            let mut flags = BLOCK_PACKED;
            if packing.codec == Codec::Zstd {
                flags |= BLOCK_ZSTD;
            }
            if packing.columns {
                flags |= BLOCK_COLUMNS;
            }
            let blocks: Vec<_> = Decoder::new(&stream[..]).unwrap().map(|b| b.unwrap()).collect();
            assert!(blocks.iter().all(|b| b.header.flags == flags), "{packing:?}");
            assert!(blocks.iter().all(|b| b.stored_len as usize == packed_len(b.header.used)));
            // The records themselves, byte for byte.
            assert_eq!(blocks.into_iter().map(|b| b.records).collect::<Vec<_>>(), records, "{order:?} {packing:?}");
        }
    }
}

/// A writer behind its threads packs with `pack_fast`: for zstd above level 1, the bytes of a
/// packer at level 1 (the same packing but for the level, which the format does not record);
/// otherwise the bytes of `pack`. Every block reads back the same.
#[test]
fn packing_fast_is_the_packing_at_level_one() {
    for order in [Order::Little, Order::Big] {
        let (_, blocks) = sample(order);
        for packing in PACKINGS {
            let fast = Packing { level: packing.level.min(Packing::FAST_ZSTD_LEVEL), ..packing };
            let (mut packer, mut at_fast) = (Packer::new(packing), Packer::new(fast));
            let mut differs = false;
            for block in &blocks {
                let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
                assert!(packer.pack_fast(order, block, &mut a));
                assert!(at_fast.pack(order, block, &mut b));
                assert!(packer.pack(order, block, &mut c));
                assert_eq!(a, b, "{order:?} {packing:?}");
                differs |= a != c;
                let used = order.u32(&a[40..]) as usize;
                let flags = order.u16(&a[4..]);
                let mut records = Vec::new();
                Unpacker::new()
                    .unpack_into(order, flags, &a[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used], 1 << 16, &mut records)
                    .expect("unpacks");
                let whole_used = order.u32(&block[40..]) as usize;
                assert_eq!(records, block[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + whole_used]);
            }
            let slower = packing.codec == Codec::Zstd && packing.level > Packing::FAST_ZSTD_LEVEL;
            assert_eq!(
                differs, slower,
                "{order:?} {packing:?}: the level changes the bytes exactly when it is lowered"
            );
        }
    }
}

#[test]
fn zstd_packs_smaller_than_lz4() {
    let size = |packing| packed_stream(Order::Little, packing).len();
    let (lz4, zstd, rows) =
        (size(Packing::LZ4), size(Packing::ZSTD), size(Packing { columns: false, ..Packing::ZSTD }));
    assert!(zstd < lz4 && rows < lz4, "zstd over columns {zstd}, over rows {rows}, LZ4 {lz4} bytes");
}

/// The sample stream packed with the default packing, with block `i`'s packed bytes changed by
/// `damage` (the block then resealed, so that its CRC holds and the damage is the codec's to
/// find): the lines, and the events of the damaged block in the good stream.
fn with_damage(i: usize, damage: impl Fn(&mut Vec<u8>)) -> (Vec<String>, usize) {
    let (stream, lost) = damaged_stream(i, damage);
    (lines(&stream), lost)
}

/// The stream of [`with_damage`], and the events of the damaged block in the good stream.
fn damaged_stream(i: usize, damage: impl Fn(&mut Vec<u8>)) -> (Vec<u8>, usize) {
    let order = Order::Little;
    let (head, blocks) = sample(order);
    let mut packer = Packer::new(Packing::ZSTD);
    let mut out = head.clone();
    let mut lost = 0;
    for (n, block) in blocks.iter().enumerate() {
        let mut one = Vec::new();
        assert!(packer.pack(order, block, &mut one));
        if n == i {
            let mut alone = head.clone();
            alone.extend_from_slice(block);
            lost = lines(&alone).len();
            let used = order.u32(&one[40..]) as usize;
            let mut body = one[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used].to_vec();
            damage(&mut body);
            one.truncate(BLOCK_HEADER_LEN);
            one.extend_from_slice(&body);
            one.resize(packed_len(body.len() as u32), 0);
            seal_block(order, &mut one, body.len() as u32);
        }
        out.extend_from_slice(&one);
    }
    (out, lost)
}

/// Asserts that `damage` to block 1 costs block 1's events and nothing else, reported as bad
/// packing whose words contain `why`.
fn costs_the_block_only(damage: impl Fn(&mut Vec<u8>), why: &str) {
    let whole = lines(&sample_stream(Order::Little));
    let (got, lost) = with_damage(1, damage);
    let bad: Vec<&String> = got.iter().filter(|l| l.starts_with('!')).collect();
    assert_eq!(bad.len(), 1, "{got:?}");
    assert!(bad[0].contains("bad packing") || bad[0].contains(why), "{}", bad[0]);
    assert!(bad[0].contains(why), "{} (wanted {why:?})", bad[0]);
    assert_eq!(got.len() - 1, whole.len() - lost, "the damaged block's {lost} events, no more");
}

#[test]
fn a_flipped_byte_in_a_zstd_block_costs_that_block() {
    let whole = lines(&sample_stream(Order::Little));
    let mut stream = packed_stream(Order::Little, Packing::ZSTD);
    let second = Decoder::new(&stream[..]).unwrap().nth(1).unwrap().unwrap();
    let lost = second.entries(&Catalog::new(&Decoder::new(&stream[..]).unwrap().header().sets)).count();
    stream[second.offset as usize + BLOCK_HEADER_LEN + 20] ^= 0x55;
    let got = lines(&stream);
    assert_eq!(got.iter().filter(|l| l.starts_with("! checksum mismatch")).count(), 1, "{got:?}");
    assert_eq!(got.len() - 1, whole.len() - lost);
}

/// A zstd block whose frame was changed and the block resealed (its CRC holds: crafted, or
/// damaged before it was sealed) is refused where the frame is not one whole frame: its
/// magic, bytes after it, a second frame, a frame cut short.
#[test]
fn a_damaged_zstd_frame_costs_that_block_only() {
    // The magic number.
    costs_the_block_only(|b| b[0] ^= 1, "not a zstd frame");
    // Bytes after the frame; a second frame after it.
    costs_the_block_only(|b| b.extend_from_slice(&[0; 5]), "follow its zstd frame");
    costs_the_block_only(
        |b| {
            let copy = b.clone();
            b.extend_from_slice(&copy);
        },
        "follow its zstd frame",
    );
    // Cut short.
    costs_the_block_only(|b| b.truncate(b.len() - 3), "damaged zstd frame");
}

/// A block found: its index, offset and records; or a damaged one: its index, offset and damage.
type Found = Result<(u64, u64, Vec<u8>), (u64, u64, Damage)>;

/// What a decoder finds, block by block: each block's place and records, or its damage at
/// its place; read with every block unpacked as it is read (`next_block`), or with packed
/// blocks handed on packed and unpacked after (`next_pending`, then `PendingBlock::unpack`,
/// as `print`'s workers do).
fn found(stream: &[u8], pending: bool) -> Vec<Found> {
    let mut decoder = Decoder::new(stream).unwrap();
    let (mut unpacker, mut spare) = (Unpacker::new(), Vec::new());
    let mut found = Vec::new();
    loop {
        let block = if pending {
            match decoder.next_pending() {
                None => break,
                Some(block) => block.and_then(|b| b.unpack(&mut unpacker, &mut spare)),
            }
        } else {
            match decoder.next_block() {
                None => break,
                Some(block) => block,
            }
        };
        found.push(block.map(|b| (b.index, b.offset, b.records)).map_err(|e| (e.index, e.offset, e.damage)));
    }
    found
}

/// A block whose CRC holds over packed bytes that do not unpack is skipped by its length
/// (docs/FORMAT.md, "Reading a block": a CRC-checked block's length is trusted), even where
/// those bytes hold, at an aligned offset, the sync word of what looks like a block (here a
/// whole copy of the next block): that is not read as a block. Unpacked as it is read or
/// after, on another thread, every block and every damaged one is the same, at the same place.
#[test]
fn a_sync_word_inside_a_block_that_does_not_unpack_is_not_a_block() {
    let good = packed_stream(Order::Little, Packing::ZSTD);
    let blocks: Vec<_> = Decoder::new(&good[..]).unwrap().map(Result::unwrap).collect();
    let next = &blocks[2];
    let copy = good[next.offset as usize..(next.offset + next.stored_len) as usize].to_vec();
    // Eight bytes that are no zstd frame, then the copy: its sync word at an aligned offset.
    let (stream, lost) = damaged_stream(1, |body| {
        body.clear();
        body.extend_from_slice(b"not zstd");
        body.extend_from_slice(&copy);
    });
    let inside = blocks[1].offset + BLOCK_HEADER_LEN as u64 + 8;
    assert_eq!(&stream[inside as usize..inside as usize + copy.len()], &copy[..], "the copy is at an aligned offset");
    assert_eq!((inside - blocks[1].offset) % 8, 0);

    let eager = found(&stream, false);
    assert_eq!(eager, found(&stream, true), "unpacked as read, or after");
    let damaged: Vec<_> = eager.iter().filter_map(|b| b.as_ref().err()).collect();
    assert_eq!(damaged.len(), 1, "{damaged:?}");
    let (index, offset, damage) = damaged[0];
    assert_eq!((*index, *offset), (1, blocks[1].offset));
    assert!(matches!(damage, Damage::BadPacking(why) if why.contains("not a zstd frame")), "{damage:?}");
    // Every other block, at its place: none found inside the damaged one.
    let offsets: Vec<u64> = eager.iter().filter_map(|b| b.as_ref().ok()).map(|b| b.1).collect();
    let after = stream.len() - good.len();
    let expected: Vec<u64> = blocks
        .iter()
        .filter(|b| b.index != 1)
        .map(|b| if b.index > 1 { b.offset + after as u64 } else { b.offset })
        .collect();
    assert_eq!(offsets, expected);
    let whole = lines(&sample_stream(Order::Little));
    let got = lines(&stream);
    assert_eq!(got.len() - 1, whole.len() - lost, "the damaged block's {lost} events, no more");
}

/// A block handed on packed and unpacked after is the block `next_block` gives, for every
/// packing and both byte orders, and a whole block is handed on unpacked.
#[test]
fn a_block_unpacked_after_it_is_read_is_the_block_read_unpacked() {
    for order in [Order::Little, Order::Big] {
        for packing in PACKINGS {
            let stream = packed_stream(order, packing);
            let mut decoder = Decoder::new(&stream[..]).unwrap();
            assert!(decoder.next_pending().unwrap().unwrap().is_packed(), "{packing:?}");
            assert_eq!(found(&stream, true), found(&stream, false), "{packing:?} {order:?}");
        }
        let whole = sample_stream(order);
        let mut decoder = Decoder::new(&whole[..]).unwrap();
        assert!(!decoder.next_pending().unwrap().unwrap().is_packed());
        assert_eq!(found(&whole, true), found(&whole, false));
    }
}

#[test]
fn a_zstd_frame_larger_than_a_block_is_bad_packing() {
    // A frame of 70 000 zero bytes, in a stream of 64 KiB blocks: its header says so, and it
    // is refused before anything is decompressed; without the size in its header, the
    // decompression stops at the block's size.
    let big = vec![0u8; 70_000];
    for content_size in [true, false] {
        let mut cctx = zstd::zstd_safe::CCtx::create();
        cctx.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(content_size)).unwrap();
        let mut frame = vec![0u8; 1 << 12];
        let n = cctx.compress2(&mut frame[..], &big).unwrap();
        frame.truncate(n);
        let mut records = Vec::new();
        let err = Unpacker::new()
            .unpack_into(Order::Little, BLOCK_PACKED | BLOCK_ZSTD, &frame, 1 << 16, &mut records)
            .unwrap_err();
        assert!(matches!(err, Damage::BadPacking(_)), "{err:?}");
        assert!(records.is_empty());
    }
}

#[test]
fn a_column_image_that_does_not_add_up_is_bad_packing() {
    let order = Order::Little;
    let records = {
        let (_, blocks) = sample(order);
        let used = order.u32(&blocks[0][40..]) as usize;
        blocks[0][BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used].to_vec()
    };
    let mut image = Vec::new();
    assert!(columns::encode(order, &records, &mut image));
    let mut back = Vec::new();
    columns::decode(order, &image, 4096 - 48, &mut back).unwrap();
    assert_eq!(back, records);
    let refuse = |image: &[u8], why: &str| {
        let err = columns::decode(order, image, 4096 - 48, &mut Vec::new()).unwrap_err();
        assert!(err.contains(why), "{err} (wanted {why:?})");
    };
    // A byte more or less than the records' lengths say; a count that runs past the image.
    refuse(&[&image[..], &[0]].concat(), "its records' arguments are");
    refuse(&image[..image.len() - 1], "its records' arguments are");
    let mut more = image.clone();
    order.put_u32(&mut more[..4], u32::MAX);
    refuse(&more, "records do not fit");
    // A record's length below 8.
    let mut short = image.clone();
    order.put_u16(&mut short[6..], 7);
    refuse(&short, "a record of length 7");
    // Records more than a block holds.
    let err = columns::decode(order, &image, 64, &mut back).unwrap_err();
    assert!(err.contains("records do not fit") || err.contains("more than a block"), "{err}");
    assert!(columns::decode(order, &[1, 2], 4096, &mut back).is_err());
}

/// Records of every argument length from 0 to 41 bytes (every remainder modulo 8 of a group's
/// columns) and 1 to 23 records of each (groups shorter and longer than the 8 rows the reader
/// transposes at a time), interleaved: the column image reads back byte for byte, into a
/// buffer that held a longer block's records before, and a shorter one's after; into a
/// buffer of its own, it takes no more room than the records. Laid out with an image and a
/// scratch kept from block to block (as a writer's `Packer` keeps them), each image is the
/// one a fresh encode makes.
#[test]
fn columns_of_every_length_and_count_read_back() {
    let order = Order::Little;
    let block = |lengths: std::ops::Range<usize>| {
        let mut kinds: Vec<(usize, usize)> = lengths.map(|l| (l, 1 + l * 7 % 23)).collect();
        let (mut records, mut x) = (Vec::new(), 0x9E37_79B9_7F4A_7C15u64);
        while kinds.iter().any(|&(_, m)| m > 0) {
            for (l, m) in kinds.iter_mut().filter(|(_, m)| *m > 0) {
                *m -= 1;
                let mut record = vec![0u8; 8 + *l];
                order.put_u16(&mut record[..], 0x100 + *l as u16);
                order.put_u16(&mut record[2..], 8 + *l as u16);
                for b in &mut record[4..] {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    *b = x as u8;
                }
                records.extend_from_slice(&record);
            }
        }
        records
    };
    let mut back = Vec::new();
    for records in [block(0..42), block(0..42), block(40..42), block(0..8)] {
        let mut image = Vec::new();
        assert!(columns::encode(order, &records, &mut image));
        columns::decode(order, &image, (1 << 16) - 48, &mut back).unwrap();
        assert!(back == records, "{} bytes of records read back differently", records.len());
    }
    // A writer's image and scratch, kept from block to block (longer, shorter, of other
    // kinds, and an image that starts as garbage): each image is the one a fresh encode
    // makes, byte for byte.
    let (mut kept, mut scratch) = (vec![0xA5u8; 3 << 16], columns::Scratch::default());
    for records in [block(0..42), block(40..42), block(0..42), block(0..8), block(3..5)] {
        let mut fresh = Vec::new();
        assert!(columns::encode(order, &records, &mut fresh));
        assert!(columns::encode_with(order, &records, &mut kept, &mut scratch));
        assert!(kept == fresh, "{} bytes of records laid out differently with a kept image", records.len());
    }
    // A buffer of its own holds no more than the records, whatever the block's limit.
    let records = block(0..8);
    let mut image = Vec::new();
    assert!(columns::encode(order, &records, &mut image));
    let mut fresh = Vec::new();
    columns::decode(order, &image, (1 << 20) - 48, &mut fresh).unwrap();
    assert!(fresh.capacity() < image.len(), "{} bytes taken for {} of records", fresh.capacity(), records.len());
}

#[test]
fn zstd_or_columns_without_the_packed_flag_is_a_newer_writers_block() {
    for flags in [BLOCK_ZSTD, BLOCK_COLUMNS, BLOCK_ZSTD | BLOCK_COLUMNS, 0x0008] {
        let (head, blocks) = sample(Order::Little);
        let mut bytes = head;
        let mut block = blocks[0].clone();
        Order::Little.put_u16(&mut block[4..], flags);
        let used = Order::Little.u32(&block[40..]);
        seal_block(Order::Little, &mut block, used);
        bytes.extend_from_slice(&block);
        bytes.extend_from_slice(&blocks[1]);
        let got = lines(&bytes);
        assert!(got[0].contains(&format!("{flags:#06x}")) || got[0].contains("flags"), "{flags:#x}: {}", got[0]);
        assert_eq!(got.iter().filter(|l| l.starts_with('!')).count(), 1, "{got:?}");
    }
}

/// A block whose records do not walk to their end is packed as it is (rows), never refused.
#[test]
fn records_that_do_not_delimit_are_packed_as_rows() {
    let order = Order::Little;
    let mut block = vec![0u8; 1024];
    BlockHeader { thread: 1, ..Default::default() }.write(order, &mut block);
    // A record whose length says 200 in 100 bytes.
    order.put_u16(&mut block[48..], 1);
    order.put_u16(&mut block[50..], 200);
    seal_block(order, &mut block, 100);
    let mut out = Vec::new();
    assert!(Packer::new(Packing::ZSTD).pack(order, &block, &mut out));
    assert_eq!(order.u16(&out[4..]), BLOCK_PACKED | BLOCK_ZSTD);
    let mut records = Vec::new();
    let used = order.u32(&out[40..]) as usize;
    Unpacker::new().unpack_into(order, BLOCK_PACKED | BLOCK_ZSTD, &out[48..48 + used], 1024, &mut records).unwrap();
    assert_eq!(records, block[48..148]);
}

/// What Python's `zstandard` makes of a stream: docs/FORMAT.md's "Packed blocks" and "Columns"
/// written again in Python, printing each block's records in hex, one line a block.
const PYTHON_READER: &str = r#"
import struct, sys, zstandard
data = sys.stdin.buffer.read()
order = '<' if data[8:10] == b'\xff\xfe' else '>'
header_length, block_size = struct.unpack_from(order + 'II', data, 16)
at = header_length
while at + 48 <= len(data):
    flags, = struct.unpack_from(order + 'H', data, at + 4)
    used, = struct.unpack_from(order + 'I', data, at + 40)
    body = data[at + 48:at + 48 + used]
    if flags & 1 == 0:
        records = body
        at += block_size
    else:
        assert flags & 2, 'this reader reads zstd blocks only'
        image = zstandard.ZstdDecompressor().decompress(body)
        if flags & 4:
            n, = struct.unpack_from(order + 'I', image, 0)
            heads = image[4:4 + 4 * n]
            deltas = image[4 + 4 * n:4 + 8 * n]
            args = image[4 + 8 * n:]
            groups = {}
            order_of = []
            for i in range(n):
                key = heads[4 * i:4 * i + 4]
                if key not in groups:
                    groups[key] = []
                    order_of.append(key)
                groups[key].append(i)
            rows = {}
            offset = 0
            for key in order_of:
                length, = struct.unpack_from(order + 'H', key, 2)
                l, m = length - 8, len(groups[key])
                cols = args[offset:offset + l * m]
                offset += l * m
                for k, i in enumerate(groups[key]):
                    rows[i] = bytes(cols[b * m + k] for b in range(l))
            assert offset == len(args)
            records = b''.join(heads[4 * i:4 * i + 4] + deltas[4 * i:4 * i + 4] + rows[i] for i in range(n))
        else:
            records = image
        at += (48 + used + 7) // 8 * 8
    print(records.hex())
"#;

/// Whether Python's `zstandard` can be imported; when it cannot, says so (past the test
/// harness's capture) or fails when `EVENT_REQUIRE_ZSTANDARD=1`.
fn zstandard_available() -> bool {
    let ok = Command::new("python3").args(["-c", "import zstandard"]).output().is_ok_and(|o| o.status.success());
    if ok {
        return true;
    }
    assert!(
        std::env::var("EVENT_REQUIRE_ZSTANDARD").as_deref() != Ok("1"),
        "Python's zstandard package not found, and EVENT_REQUIRE_ZSTANDARD=1 requires it (pip install zstandard)"
    );
    let _ = writeln!(std::io::stderr(), "skipped: Python's zstandard package not found (pip install zstandard)");
    false
}

#[test]
fn pythons_zstandard_reads_the_zstd_packing_as_format_md_says() {
    if !zstandard_available() {
        return;
    }
    for order in [Order::Little, Order::Big] {
        let whole = sample_stream(order);
        let expected: Vec<String> = Decoder::new(&whole[..])
            .unwrap()
            .map(|b| b.unwrap().records.iter().map(|x| format!("{x:02x}")).collect())
            .collect();
        for packing in [Packing::ZSTD, Packing { columns: false, ..Packing::ZSTD }] {
            let stream = packed_stream(order, packing);
            let mut child = Command::new("python3")
                .args(["-c", PYTHON_READER])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(&stream).unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let got: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect();
            assert_eq!(got, expected, "{order:?} {packing:?}");
        }
    }
}
