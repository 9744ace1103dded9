//! Packed blocks (format 1.1): they decode to what the unpacked blocks decode to, a stream
//! may mix both, and damage to a packed block (its bytes, its length, its flag) costs that
//! block only: the decoder finds the next block by its sync word.

use event_format::decode::{Catalog, Decoder, Entry};
use event_format::raw::{pack_block, packed_len, seal_block};
use event_format::testing::sample_stream;
use event_format::text;
use event_format::wire::{BLOCK_HEADER_LEN, BLOCK_PACKED, BlockHeader, BlockWriter, Damage, Order, Value};

/// The sample stream's header bytes and its blocks.
fn sample(order: Order) -> (Vec<u8>, Vec<Vec<u8>>, u32) {
    let bytes = sample_stream(order);
    let decoder = Decoder::new(&bytes[..]).unwrap();
    let start = decoder.header_len() as usize;
    let size = decoder.header().block_size;
    let blocks = bytes[start..].chunks(size as usize).map(<[u8]>::to_vec).collect();
    (bytes[..start].to_vec(), blocks, size)
}

/// One line per event, `!` lines for damage, as a reader shows them.
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

fn packed(order: Order, block: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    assert!(pack_block(order, block, &mut out), "the sample's blocks are worth packing");
    out
}

/// Events of one block, decoded alone.
fn events_of(head: &[u8], block: &[u8]) -> usize {
    let mut bytes = head.to_vec();
    bytes.extend_from_slice(block);
    lines(&bytes).len()
}

#[test]
fn packed_blocks_decode_to_the_same_events_in_both_orders() {
    for order in [Order::Little, Order::Big] {
        let (head, blocks, _) = sample(order);
        let whole = lines(&sample_stream(order));
        let mut all_packed = head.clone();
        let mut mixed = head.clone();
        for (i, block) in blocks.iter().enumerate() {
            let p = packed(order, block);
            assert_eq!(p.len() % 8, 0, "a packed block keeps the 8-byte alignment");
            assert!(p.len() < block.len());
            all_packed.extend_from_slice(&p);
            mixed.extend_from_slice(if i % 2 == 0 { &p } else { block });
        }
        assert_eq!(lines(&all_packed), whole);
        assert_eq!(lines(&mixed), whole);
        let mut decoder = Decoder::new(&all_packed[..]).unwrap();
        let first = decoder.next_block().unwrap().unwrap();
        assert_eq!(first.header.flags, BLOCK_PACKED);
        assert_eq!(first.stored_len as usize, packed_len(first.header.used));
    }
}

/// A reader that gives its blocks back (`BlockSource::recycle`) reads the same blocks: the
/// reused buffer holds each block's records and nothing of the block before, packed or
/// whole, after a damaged packed block too.
#[test]
fn recycled_buffers_read_the_same_blocks() {
    use event_format::decode::BlockSource;
    for order in [Order::Little, Order::Big] {
        let (head, blocks, _) = sample(order);
        let mut mixed = head.clone();
        for (i, block) in blocks.iter().enumerate() {
            let mut p = packed(order, block);
            if i == 2 {
                // Damage inside the compressed bytes: the block fails its checks.
                let at = p.len() / 2;
                p[at] ^= 0xff;
            }
            mixed.extend_from_slice(if i % 3 == 1 { block } else { &p });
        }
        let fresh: Vec<_> = Decoder::new(&mixed[..]).unwrap().collect();
        let mut decoder = Decoder::new(&mixed[..]).unwrap();
        let mut recycled = Vec::new();
        while let Some(block) = decoder.next_block() {
            recycled.push(block.clone());
            if let Ok(block) = block {
                decoder.recycle(block);
            }
        }
        assert!(fresh.iter().any(Result::is_err) && fresh.iter().filter(|b| b.is_ok()).count() > 2);
        assert_eq!(recycled, fresh);
    }
}

#[test]
fn a_block_not_worth_packing_is_left_as_it_is() {
    let mut writer = BlockWriter::new(Order::Little, 1024, &BlockHeader { thread: 1, ..Default::default() });
    // Text that does not compress: pseudo-random letters.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    // 946 letters fill the block: the record is 8 + 8 + 8 + (2 + 946) + 4 = 976 bytes.
    let noise: String = (0..946)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'!' + (x % 90) as u8)
        })
        .collect();
    let values =
        [Value::Pointer(1), Value::Pointer(2), Value::Str(event_format::wire::Text::new(&noise)), Value::Unsigned(3)];
    writer.push(0x0002, 0, &values).unwrap();
    let block = writer.finish();
    let mut out = vec![1, 2, 3];
    assert!(!pack_block(Order::Little, &block, &mut out));
    assert_eq!(out, [1, 2, 3], "nothing appended");
}

/// Packed blocks of the sample, with block `i` changed by `damage`; returns the lines and
/// the lines the undamaged stream has without block `i`'s events.
fn with_damage(i: usize, damage: impl Fn(&mut Vec<u8>)) -> (Vec<String>, usize, usize) {
    let (head, blocks, _) = sample(Order::Little);
    let mut bytes = head.clone();
    let mut total = 0;
    let mut lost = 0;
    for (j, block) in blocks.iter().enumerate() {
        let mut p = packed(Order::Little, block);
        let n = events_of(&head, block);
        total += n;
        if j == i {
            lost = n;
            damage(&mut p);
        }
        bytes.extend_from_slice(&p);
    }
    (lines(&bytes), total, lost)
}

fn events(lines: &[String]) -> usize {
    lines.iter().filter(|l| !l.starts_with('!')).count()
}

#[test]
fn a_flipped_byte_in_a_packed_block_costs_that_block() {
    let (lines, total, lost) = with_damage(1, |p| p[BLOCK_HEADER_LEN + 20] ^= 0x10);
    assert!(lines.iter().any(|l| l.starts_with("! checksum mismatch")), "{lines:?}");
    assert_eq!(events(&lines), total - lost);
}

#[test]
fn a_wrong_length_in_a_packed_block_costs_that_block() {
    for used in [1u32, 200, 900, 975, 70_000, u32::MAX] {
        let (lines, total, lost) = with_damage(1, |p| p[40..44].copy_from_slice(&used.to_le_bytes()));
        assert_eq!(events(&lines), total - lost, "used = {used}: {lines:?}");
    }
}

#[test]
fn a_cleared_packed_flag_costs_that_block() {
    let (lines, total, lost) = with_damage(1, |p| p[4] &= !1);
    assert_eq!(events(&lines), total - lost, "{lines:?}");
    let (lines, total, lost) = with_damage(0, |p| p[0] ^= 0xFF);
    assert!(lines.iter().any(|l| l.starts_with("! no block sync word")), "{lines:?}");
    assert_eq!(events(&lines), total - lost);
}

#[test]
fn a_truncated_packed_block_at_the_end_is_reported() {
    let (head, blocks, _) = sample(Order::Little);
    let mut bytes = head.clone();
    let mut expected = 0;
    for block in &blocks {
        bytes.extend_from_slice(&packed(Order::Little, block));
        expected += events_of(&head, block);
    }
    let last = events_of(&head, blocks.last().unwrap());
    let last_len = packed(Order::Little, blocks.last().unwrap()).len();
    for cut in 1..last_len / 8 {
        let lines = lines(&bytes[..bytes.len() - cut * 8]);
        assert!(lines.last().unwrap().starts_with("! the stream ends inside the block"), "{lines:?}");
        assert_eq!(events(&lines), expected - last);
    }
}

#[test]
fn a_packed_block_that_unpacks_beyond_the_block_is_damage() {
    let (head, _, size) = sample(Order::Little);
    // LZ4: a literal of 8 bytes, then a match of offset 8 and length 4 + 15 + 255 * 8,
    // which unpacks to far more than a 1 KiB block holds.
    let mut payload = vec![0x8F, 1, 2, 3, 4, 5, 6, 7, 8, 8, 0];
    payload.extend_from_slice(&[255; 8]);
    payload.push(0);
    payload.extend_from_slice(&[0x00]);
    let mut block = vec![0u8; packed_len(payload.len() as u32)];
    BlockHeader { flags: BLOCK_PACKED, thread: 1, ..Default::default() }.write(Order::Little, &mut block);
    block[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + payload.len()].copy_from_slice(&payload);
    seal_block(Order::Little, &mut block, payload.len() as u32);
    let mut bytes = head.clone();
    bytes.extend_from_slice(&block);
    let mut decoder = Decoder::new(&bytes[..]).unwrap();
    let err = decoder.next_block().unwrap().unwrap_err();
    assert!(matches!(err.damage, Damage::BadPacking(_)), "{err}");
    assert!(size < 4096);
    assert!(decoder.next_block().is_none());
}

/// docs/FORMAT.md ("Reading a block", issue 30's S12): a packed block with `used` = 0 holds
/// no LZ4 block at all (one holds at least its token byte, even for no records), so it is bad
/// packing, not an empty block; the block after it is read.
#[test]
fn a_packed_block_of_no_bytes_is_bad_packing() {
    let (head, blocks, _) = sample(Order::Little);
    let mut block = vec![0u8; packed_len(0)];
    BlockHeader { flags: BLOCK_PACKED, thread: 1, ..Default::default() }.write(Order::Little, &mut block);
    seal_block(Order::Little, &mut block, 0);
    let mut bytes = head.clone();
    bytes.extend_from_slice(&block);
    bytes.extend_from_slice(&blocks[0]);
    let mut decoder = Decoder::new(&bytes[..]).unwrap();
    let err = decoder.next_block().unwrap().unwrap_err();
    assert!(matches!(err.damage, Damage::BadPacking(_)), "{err}");
    assert!(decoder.next_block().unwrap().is_ok(), "the block after it");
}

/// docs/FORMAT.md ("Packed blocks"): what a packed block compresses is its records area, the
/// `used` bytes after the header in the stream's byte order, never the padding; the LZ4 block
/// format's own fields (a match's offset) are little-endian whatever the stream's order. Here
/// a packed block is written by hand, not by the reference encoder: four identical 10-byte
/// `Message("")` records as one LZ4 sequence of 10 literals and a 20-byte match at offset 10
/// (`0A 00`), then a last sequence of 10 literals. Both byte orders decode it to four events,
/// and the reference packer's bytes decompress to the records area exactly.
#[test]
fn a_packed_block_is_its_records_area_in_plain_lz4() {
    for order in [Order::Little, Order::Big] {
        let mut writer = BlockWriter::new(order, 1024, &BlockHeader { thread: 1, base_time: 5, ..Default::default() });
        for _ in 0..4 {
            writer.push(event_format::builtin::MESSAGE, 5, &[Value::Str(event_format::wire::Text::new(""))]).unwrap();
        }
        let whole = writer.finish();
        let used = BlockHeader::read(order, &whole).used as usize;
        assert_eq!(used, 40);
        let record = &whole[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + 10];
        // token: 10 literals, a match of 4 + 15 + 1 bytes; the literals; the offset, little-
        // endian; the match length's extra byte; token: 10 literals, no match; the literals.
        let mut lz4 = vec![0xAF];
        lz4.extend_from_slice(record);
        lz4.extend_from_slice(&[0x0A, 0x00, 0x01, 0xA0]);
        lz4.extend_from_slice(record);
        let mut by_hand = whole[..BLOCK_HEADER_LEN].to_vec();
        by_hand.extend_from_slice(&lz4);
        by_hand.resize(packed_len(lz4.len() as u32), 0);
        order.put_u16(&mut by_hand[4..], BLOCK_PACKED);
        seal_block(order, &mut by_hand, lz4.len() as u32);
        let (head, _, _) = sample(order);
        let mut hand_stream = head.clone();
        hand_stream.extend_from_slice(&by_hand);
        let mut whole_stream = head.clone();
        whole_stream.extend_from_slice(&whole);
        assert_eq!(lines(&hand_stream), lines(&whole_stream), "{order:?}");
        let events = lines(&hand_stream);
        assert!(events.len() == 4 && events.iter().all(|l| !l.starts_with('!')), "{order:?}: {events:?}");

        let reference = packed(order, &whole);
        let stored = BlockHeader::read(order, &reference).used as usize;
        let compressed = &reference[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + stored];
        let records = lz4_flex::block::decompress(compressed, 1024 - BLOCK_HEADER_LEN).unwrap();
        assert_eq!(records, whole[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used], "{order:?}: the records, no padding");
    }
}
