//! Regression tests for what fuzzing and the hostile-log tests found in the readers: each
//! builds the smallest input that broke a reader and checks what it does now.

use event_format::decode::DecodeOptions;
use event_format::raw;
use event_format::ring::{self, FollowItem, Follower, Layout, RingReader, RingStream};
use event_format::testing::sample_header;
use event_format::wire::{BlockHeader, BlockWriter, Order, Value};
use std::io::Read;

const BLOCK: u32 = 1024;

/// A closed ring file of one slot of 2 blocks, owned by thread 1: block `sequences[i]` at
/// ring index `sequences[i] % 2`, each with one `Poll` event; the slot's position is
/// `position` and its `refused` count `refused`; page 0's `lost` is `lost`.
fn ring_file(slots: u32, sequences: &[u64], position: u64, refused: u64, lost: u64) -> Vec<u8> {
    let o = Order::NATIVE;
    let header = sample_header(o).encode().unwrap();
    let layout = Layout {
        order: o,
        version: event_format::schema::Version::new(1, 0, 2),
        block_size: BLOCK,
        slots,
        blocks_per_slot: 2,
        header_len: header.len() as u32,
        pid: 1,
        created_ns: 0,
        pin_half: 0,
    };
    let mut file = vec![0u8; layout.file_len() as usize];
    file[..raw::at::CRC + 4].copy_from_slice(&layout.encode());
    o.put_u32(&mut file[raw::at::STATE..], ring::STATE_CLOSED);
    o.put_u64(&mut file[raw::at::LOST..], lost);
    let at = layout.stream_header() as usize;
    file[at..at + header.len()].copy_from_slice(&header);
    for slot in 0..slots {
        let s = layout.slot(slot) as usize;
        o.put_u64(&mut file[s + raw::slot_at::THREAD..], u64::from(slot) + 1);
        o.put_u64(&mut file[s + raw::slot_at::POSITION..], position);
        o.put_u64(&mut file[s + raw::slot_at::REFUSED..], refused);
        for &sequence in sequences {
            let mut w = BlockWriter::new(
                o,
                BLOCK,
                &BlockHeader { thread: u64::from(slot) + 1, sequence, base_time: 1000, ..Default::default() },
            );
            w.push(0x0004, 1000 + sequence % 1000, &[] as &[Value<'_>]).unwrap();
            let b = layout.block(slot, (sequence % 2) as u32) as usize;
            file[b..b + BLOCK as usize].copy_from_slice(&w.finish());
        }
    }
    file
}

/// A ring file whose slot claims the largest sequence a position holds, 2^32 − 1, with a
/// block being written that is not that block: the follower reported it as damaged and then
/// computed the next sequence as 2^32 in 32 bits (a panic in debug builds, a wrap to 0 and
/// every block shown again in release builds).
#[test]
fn a_follower_at_the_last_sequence_neither_wraps_nor_repeats() {
    let last = u64::from(u32::MAX);
    // Block 2^32 − 2 is sealed at ring index 0; index 1 holds block 1, not 2^32 − 1.
    let file = ring_file(1, &[last - 1, 1], raw::position(last, 48 + 8), 0, 0);
    let mut follower = Follower::new(RingReader::open(&file[..], DecodeOptions::default()).unwrap());
    let first = follower.poll().unwrap();
    let records = first.iter().filter(|i| matches!(i, FollowItem::Records { .. })).count();
    let damaged: Vec<u64> = first
        .iter()
        .filter_map(|i| match i {
            FollowItem::Damaged { sequence, .. } => Some(*sequence),
            _ => None,
        })
        .collect();
    assert_eq!(records, 1, "the sealed block 2^32 - 2 is shown: {first:?}");
    assert_eq!(damaged, [last], "the block being written is not block 2^32 - 1: {first:?}");
    assert!(follower.poll().unwrap().is_empty(), "nothing new: nothing shown again");
}

/// Slots whose `refused` counts (and page 0's `lost`) are u64::MAX: the ring summary added
/// them in 64 bits (a panic in debug builds, a small wrong number in release builds).
#[test]
fn lying_refused_counts_saturate() {
    let file = ring_file(2, &[0], raw::position(0, 48 + 8), u64::MAX, u64::MAX);
    let mut stream = RingStream::new(RingReader::open(&file[..], DecodeOptions::default()).unwrap());
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).unwrap();
    assert_eq!(stream.findings().refused, u64::MAX);
    assert_eq!(stream.findings().lost, u64::MAX);
}

/// A block whose second record is a `TimeExtend` without its time: the walk reports it and
/// goes on (docs/FORMAT.md, "Delimiting records"), and a follower that resumes past it
/// (`entries_from`) did report it again at every poll.
#[test]
fn a_bad_record_is_skipped_once_and_not_repeated_when_resuming() {
    use event_format::decode::{Catalog, Decoder, Entry};
    use event_format::raw::seal_block;
    use event_format::wire::BLOCK_HEADER_LEN;
    for o in [Order::Little, Order::Big] {
        let header = sample_header(o);
        let mut stream = header.encode().unwrap();
        let mut w = BlockWriter::new(o, BLOCK, &BlockHeader { thread: 1, base_time: 1000, ..Default::default() });
        for t in 1001..=1004 {
            w.push(0x0004, t, &[] as &[Value<'_>]).unwrap();
        }
        let mut block = w.finish();
        o.put_u16(&mut block[BLOCK_HEADER_LEN + 8..], event_format::builtin::TIME_EXTEND);
        let used = BlockHeader::read(o, &block).used;
        seal_block(o, &mut block, used);
        stream.extend(block);
        let mut decoder = Decoder::new(&stream[..]).unwrap();
        let catalog = Catalog::new(&decoder.header().sets);
        let block = decoder.next_block().unwrap().unwrap();
        let kinds = |from| {
            block
                .entries_from(&catalog, from)
                .map(|e| match e {
                    Entry::Event(e) => format!("event at {}", e.time),
                    Entry::Bad(_) => "bad".to_owned(),
                    Entry::Unknown { .. } => "unknown".to_owned(),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(kinds(0), ["event at 1001", "bad", "event at 1003", "event at 1004"], "{o:?}");
        assert_eq!(kinds(16), ["event at 1003", "event at 1004"], "{o:?}: resumed past the bad record");
    }
}
