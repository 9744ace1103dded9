//! `index_blocks`: a stream's blocks found from their headers alone are the blocks the
//! decoder finds, whole or packed, in both byte orders; a block cut short by the end ends
//! the index, and a block that does not start with a sync word (where the decoder must look
//! for the next one) gives no index.

use event_format::decode::{BlockStart, Decoder, index_blocks};
use event_format::raw::pack_block;
use event_format::testing::sample_stream;
use event_format::wire::Order;

/// The blocks the decoder finds in `bytes`: (offset, base_time) of each good one, and the
/// offset of each damaged one.
fn decoded(bytes: &[u8]) -> (Vec<BlockStart>, Vec<u64>) {
    let mut decoder = Decoder::new(bytes).unwrap();
    let (mut good, mut damaged) = (Vec::new(), Vec::new());
    while let Some(block) = decoder.next_block() {
        match block {
            Ok(b) => good.push(BlockStart { offset: b.offset, base_time: b.header.base_time }),
            Err(e) => damaged.push(e.offset),
        }
    }
    (good, damaged)
}

fn index(bytes: &[u8]) -> Option<Vec<BlockStart>> {
    let decoder = Decoder::new(bytes).unwrap();
    index_blocks(bytes, decoder.header(), decoder.header_len(), bytes.len() as u64).unwrap()
}

/// The sample stream with every other block packed (the sample's blocks are worth packing).
fn mixed(order: Order) -> Vec<u8> {
    let bytes = sample_stream(order);
    let decoder = Decoder::new(&bytes[..]).unwrap();
    let start = decoder.header_len() as usize;
    let size = decoder.header().block_size as usize;
    let mut out = bytes[..start].to_vec();
    for (i, block) in bytes[start..].chunks(size).enumerate() {
        if i % 2 == 1 || !pack_block(order, block, &mut out) {
            out.extend_from_slice(block);
        }
    }
    out
}

#[test]
fn the_index_is_the_blocks_the_decoder_finds_whole_or_packed() {
    for order in [Order::Little, Order::Big] {
        for bytes in [sample_stream(order), mixed(order)] {
            let (good, damaged) = decoded(&bytes);
            assert!(damaged.is_empty());
            assert!(good.len() >= 2, "a stream of several blocks");
            assert_eq!(index(&bytes), Some(good));
        }
        let m = mixed(order);
        assert!(m.len() < sample_stream(order).len(), "some blocks are packed");
    }
}

#[test]
fn every_fixture_stream_indexes_to_its_decoded_blocks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    let mut dirs = vec![root];
    let mut streams = 0;
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            if path.extension().is_none_or(|e| e != "evt") || Decoder::new(&bytes[..]).is_err() {
                continue;
            }
            streams += 1;
            let (good, damaged) = decoded(&bytes);
            match index(&bytes) {
                // Undamaged: the same blocks. Damaged: every good block is in the index.
                Some(index) if damaged.is_empty() => assert_eq!(index, good, "{}", path.display()),
                Some(index) => assert!(good.iter().all(|b| index.contains(b)), "{}", path.display()),
                None => assert!(!damaged.is_empty(), "{}: no index, yet no damage", path.display()),
            }
        }
    }
    assert!(streams >= 10, "the fixtures are found");
}

#[test]
fn a_block_cut_short_ends_the_index_and_a_lost_sync_word_gives_none() {
    for order in [Order::Little, Order::Big] {
        let bytes = mixed(order);
        let (good, _) = decoded(&bytes);
        let last = good.last().unwrap().offset as usize;

        // The last block cut in half: the decoder reports it; the index stops before it.
        let cut = &bytes[..last + 30];
        let (cut_good, cut_damaged) = decoded(cut);
        assert_eq!(cut_damaged, vec![last as u64]);
        assert_eq!(index(cut), Some(cut_good.clone()));
        assert_eq!(cut_good.len(), good.len() - 1);
        // Cut inside the last block's header: the same.
        assert_eq!(index(&bytes[..last + 7]), Some(cut_good));

        // The second block's sync word overwritten: the decoder must look for the next.
        let mut lost = bytes.clone();
        lost[good[1].offset as usize] ^= 0xFF;
        assert_eq!(index(&lost), None);
        let (_, damaged) = decoded(&lost);
        assert_eq!(damaged, vec![good[1].offset]);
    }
}
