//! Checked-in ring files of layout 1.0.2 with a pin area (tests/data/ring-1.0.2) and of layout
//! 1.1.0, whose slots share the data area (tests/data/ring-1.1.0): one little-endian, one
//! big-endian each, must keep decoding in every later reader with their pinned events put
//! back before their threads' rings (docs/FORMAT.md, "Pin area"); and a pin area whose size
//! at offset 52 (outside page 0's CRC) is damaged costs the pins, never the rings.
//!
//! The files are made by `generate` below from the frozen events.def of tests/data/v1.0.0,
//! by hand (not by the recorder): a closed file of 2 slots of 2 blocks of 1 KiB.
//!
//! - slot 0, thread 1 (`main`): its ring went round; it holds blocks 3 and 4 of
//!   `ArenaPoll`s. Its pinned `ThreadName`, `ClientPhase("config", 42, 0)` and
//!   `ClientPhase("phase", 7, 1)` are in the pin area only.
//! - slot 1, thread 2 (`worker-1`): its ring holds its block 0, with its pinned `ClientMark`
//!   (also in the pin area): nothing is put back.
//! - thread 3 (`gone`), in no slot (its slot was reused): its pinned `ThreadName` and
//!   `ClientPhase("gone", 3, 0)` are put back in a block 0 of its own.
//! - the pin area (halves of 384 bytes) is at epoch 1 (half 1 current) after a compaction
//!   that dropped one entry, thread 1's `ClientCheck` (`pins_dropped` 1); half 0 still holds
//!   the entries of epoch 0, which no reader reads.
//!
//! Run with `UPDATE_FIXTURES=1` to write them, once, when a new ring layout is released,
//! into a new directory: files already there, and every older layout's, stay as they are.

use crate::common::DUMP;
use event_format::builtin;
use event_format::decode::{BlockSource, Catalog, DecodeOptions, Entry};
use event_format::raw;
use event_format::ring::{self, Layout, RingBlocks, RingReader};
use event_format::text;
use event_format::wire::{BLOCK_HEADER_LEN, BlockHeader, BlockWriter, Header, Order, Text, Value};
use std::path::PathBuf;
use std::process::Command;

const BLOCK: u32 = 1024;
const K: u32 = 2;
/// The directory of layout 1.0.2's files.
const LAYOUT: &str = "ring-1.0.2";

fn header(order: Order) -> Header {
    let def = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/v1.0.0/events.def");
    crate::fixtures::frozen_header(&def, "ring-fixture", BLOCK, order)
}

/// A record's bytes as a block holds them (header and arguments), as the pin area keeps it.
fn record(order: Order, code: u16, time: u64, values: &[Value<'_>]) -> Vec<u8> {
    let mut w = BlockWriter::new(order, BLOCK, &BlockHeader { base_time: time, ..Default::default() });
    w.push(code, time, values).unwrap();
    let block = w.finish();
    let used = BlockHeader::read(order, &block).used as usize;
    block[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used].to_vec()
}

fn phase<'a>(name: &'a str, step: u64, delta: i64) -> Vec<Value<'a>> {
    vec![Value::Str(Text::new(name)), Value::Word(step), Value::Signed(delta)]
}

fn name(thread: u64, name: &str) -> Vec<Value<'_>> {
    vec![Value::Word(thread), Value::Str(Text::new(name))]
}

/// Where block `sequence` of `slot` lies in the data area of a layout 1.1 fixture (which
/// shares it): out of order, to show that readers go by the block table. Block 1 holds a stale
/// copy of thread 1's block 2 whose entry is 0 (let go): no slot's.
fn pooled_place(slot: u32, sequence: u64) -> u32 {
    match (slot, sequence) {
        (0, 3) => 2,
        (0, 4) => 0,
        (1, 0) => 3,
        _ => 1,
    }
}

/// The fixture ring file in `order`, of layout `version`: 1.0.2 (2 slots of 2 blocks) or
/// 1.1.0 (2 slots that share a data area of 4 blocks, placed by [`pooled_place`]).
fn generate(order: Order, version: event_format::schema::Version) -> Vec<u8> {
    let header = header(order);
    let set = header.sets[0].clone();
    let wire = |own: u16| set.wire_code_of(own).unwrap();
    let (client_phase, client_mark, arena_poll) = (wire(0x0050), wire(0x0052), wire(0x0004));
    let header_bytes = header.encode().unwrap();
    let pooled = version >= ring::POOLED_VERSION;
    let layout = Layout {
        order,
        version,
        block_size: BLOCK,
        slots: 2,
        blocks_per_slot: if pooled { 2 * K } else { K },
        header_len: header_bytes.len() as u32,
        pid: 31337,
        created_ns: 1_763_700_000_000_000_000,
        // Smaller than the reference writer's (a block's records), so that a few entries
        // make it compact.
        pin_half: 384,
    };
    assert!(["1.0.2", "1.1.0"].contains(&version.to_string().as_str()), "a new layout gets a new directory");
    let mut file = vec![0u8; layout.file_len() as usize];
    file[..raw::at::CRC + 4].copy_from_slice(&layout.encode());
    file[raw::at::PIN_HALF..raw::at::PIN_HALF + 4].copy_from_slice(&layout.encode_pin_half());
    order.put_u32(&mut file[raw::at::STATE..], ring::STATE_CLOSED);
    order.put_u64(&mut file[raw::at::HEARTBEAT_NS..], 1_763_700_001_000_000_000);
    let at = layout.stream_header() as usize;
    file[at..at + header_bytes.len()].copy_from_slice(&header_bytes);

    // Slot 0, thread 1: blocks 3 and 4 of ArenaPolls, from time 5000 on.
    let write_block = |file: &mut Vec<u8>,
                       slot: u32,
                       thread: u64,
                       sequence: u64,
                       records: &[(u16, u64, Vec<Value<'_>>)]| {
        let base = records[0].1;
        let mut w =
            BlockWriter::new(order, BLOCK, &BlockHeader { thread, sequence, base_time: base, ..Default::default() });
        for (code, time, values) in records {
            w.push(*code, *time, values).unwrap();
        }
        let block = w.finish();
        let used = BlockHeader::read(order, &block).used;
        let b = if pooled {
            let at = pooled_place(slot, sequence);
            order.put_u64(&mut file[layout.tag_at(at) as usize..], raw::tag(slot, sequence));
            layout.pool_block(at) as usize
        } else {
            layout.block(slot, (sequence % u64::from(K)) as u32) as usize
        };
        file[b..b + BLOCK as usize].copy_from_slice(&block);
        used
    };
    let polls = |from: u64| -> Vec<(u16, u64, Vec<Value<'static>>)> {
        (0..20)
            .map(|i| {
                (arena_poll, from + i * 10, vec![Value::Pointer(0x5500), Value::Word(from + i), Value::Double(0.5)])
            })
            .collect()
    };
    if pooled {
        // Thread 1's block 2, let go (its entry 0): stale bytes no reader takes.
        write_block(&mut file, 0, 1, 2, &polls(4000));
        order.put_u64(&mut file[layout.tag_at(1) as usize..], 0);
    }
    write_block(&mut file, 0, 1, 3, &polls(5000));
    let used = write_block(&mut file, 0, 1, 4, &polls(6000));
    let s = layout.slot(0) as usize;
    order.put_u64(&mut file[s + raw::slot_at::THREAD..], 1);
    order.put_u64(&mut file[s + raw::slot_at::POSITION..], raw::position(4, BLOCK_HEADER_LEN as u32 + used));
    // Slot 1, thread 2: its block 0, with its name and its pinned ClientMark.
    let used = write_block(
        &mut file,
        1,
        2,
        0,
        &[
            (builtin::THREAD_NAME, 1500, name(2, "worker-1")),
            (client_mark, 1500, vec![]),
            (arena_poll, 1600, vec![Value::Pointer(0x5500), Value::Word(2), Value::Double(0.25)]),
        ],
    );
    let s = layout.slot(1) as usize;
    order.put_u64(&mut file[s + raw::slot_at::THREAD..], 2);
    order.put_u64(&mut file[s + raw::slot_at::POSITION..], raw::position(0, BLOCK_HEADER_LEN as u32 + used));

    // The pin area. Epoch 0 (half 0) held, in pin order: thread 1's ClientCheck, name and
    // config phase, thread 2's name and mark, thread 3's name; then thread 3's phase did not
    // fit, the oldest entry (the ClientCheck) left, counted dropped, and the rest with it
    // went to half 1, epoch 1; then thread 1's second phase was appended there.
    let entry = |thread, time, code, values: &[Value<'_>]| {
        raw::pin_entry(order, thread, time, &record(order, code, time, values))
    };
    let detail = "x".repeat(90);
    let check = vec![Value::Bool(true), Value::Str(Text::new("startup")), Value::Str(Text::new(&detail))];
    let epoch0 = [
        entry(1, 900, wire(0x0051), &check),
        entry(1, 1000, builtin::THREAD_NAME, &name(1, "main")),
        entry(1, 1000, client_phase, &phase("config", 42, 0)),
        entry(2, 1500, builtin::THREAD_NAME, &name(2, "worker-1")),
        entry(2, 1500, client_mark, &[]),
        entry(3, 2000, builtin::THREAD_NAME, &name(3, "gone")),
    ];
    let later =
        [entry(3, 2100, client_phase, &phase("gone", 3, 0)), entry(1, 4000, client_phase, &phase("phase", 7, 1))];
    let half = layout.pin_half as usize;
    let area = layout.pin_area() as usize;
    let put = |file: &mut Vec<u8>, h: usize, entries: &[&Vec<u8>]| {
        let mut at = area + h * half;
        for e in entries {
            file[at..at + e.len()].copy_from_slice(e);
            at += e.len();
        }
        at - (area + h * half)
    };
    let all0: Vec<&Vec<u8>> = epoch0.iter().collect();
    let end0 = put(&mut file, 0, &all0);
    assert!(end0 <= half && end0 + later[0].len() > half, "the seventh entry does not fit: a compaction");
    let kept: Vec<&Vec<u8>> = epoch0[1..].iter().chain(later.iter()).collect();
    let end1 = put(&mut file, 1, &kept);
    assert!(end1 <= half);
    order.put_u64(&mut file[raw::at::PIN_POSITION..], raw::position(1, end1 as u32));
    order.put_u64(&mut file[raw::at::PINS_DROPPED..], 1);
    file
}

/// The checked-in file `name` of the directory `layout`; written first by `make` when
/// `UPDATE_FIXTURES` is set, `layout` is the current ring layout's (`ring-X.Y.Z` of
/// `ring::RING_VERSION`) and the file is not there yet: a released file is never written
/// again. (Before, a stream format's release, which sets the variable for its own fixtures,
/// wrote every layout's files again with its new header.)
fn read(layout: &str, name: &str, make: impl FnOnce() -> Vec<u8>) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data").join(layout).join(name);
    if std::env::var_os("UPDATE_FIXTURES").is_some()
        && layout == format!("ring-{}", ring::RING_VERSION)
        && !path.exists()
    {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, make()).unwrap();
    }
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (UPDATE_FIXTURES=1 writes it)", path.display()))
}

/// Each block's thread and sequence, and each event as text, in the order the ring reader
/// gives them; and what it found.
fn blocks_and_events(bytes: &[u8]) -> (Vec<(u64, u64, Vec<String>)>, ring::RingFindings) {
    let reader = RingReader::open(bytes, DecodeOptions::default()).expect("the ring file opens");
    let header = reader.header().clone();
    let catalog = Catalog::new(&header.sets);
    let mut blocks = RingBlocks::new(reader);
    let mut out = Vec::new();
    while let Some(block) = blocks.next_block() {
        let block = block.expect("no damaged block");
        let mut events = Vec::new();
        for entry in block.entries(&catalog) {
            match entry {
                Entry::Event(event) => {
                    let mut line = String::new();
                    text::write_event(&mut line, &header.clock, &event).unwrap();
                    events.push(line);
                }
                other => panic!("{other:?}"),
            }
        }
        out.push((block.header.thread, block.header.sequence, events));
    }
    (out, blocks.findings().clone())
}

fn dump(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(DUMP).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_layout_1_0_2_ring_file_puts_its_pinned_events_back_before_their_rings() {
    let v = event_format::schema::Version::new(1, 0, 2);
    let le = read(LAYOUT, "pins-le.ring", || generate(Order::Little, v));
    let be = read(LAYOUT, "pins-be.ring", || generate(Order::Big, v));
    check_pins_fixture(&le, &be, "pins");
}

/// The files of layout 1.1.0 (tests/data/ring-1.1.0), whose slots share the data area: the
/// same events as 1.0.2's, its blocks placed out of order and a stale block let go in it;
/// every reader reads them as it reads 1.0.2's.
#[test]
fn a_layout_1_1_0_ring_file_reads_its_slots_by_the_block_table() {
    let v = event_format::schema::Version::new(1, 1, 0);
    let le = read("ring-1.1.0", "pins-le.ring", || generate(Order::Little, v));
    let be = read("ring-1.1.0", "pins-be.ring", || generate(Order::Big, v));
    let old = generate(Order::Little, event_format::schema::Version::new(1, 0, 2));
    assert_eq!(blocks_and_events(&le), blocks_and_events(&old), "read as the 1.0.2 file is");
    check_pins_fixture(&le, &be, "pins-1.1");
}

/// A writer stopped between taking a block from a ring and renaming it in the block table
/// (killed there): the block still names its old ring, beyond a gap from the ring's newest
/// blocks. Readers leave it out, as overwritten: the ring reads as it did.
#[test]
fn a_block_left_behind_a_gap_is_not_its_old_rings() {
    let v = event_format::schema::Version::new(1, 1, 0);
    let order = Order::Little;
    let good = generate(order, v);
    let mut bytes = good.clone();
    let layout = Layout::decode(&bytes, false).unwrap();
    // Block 1 of the data area: thread 1's block 1, sealed and whole, named slot 0's block 1
    // (its ring holds 3 and 4: 2 is gone).
    let mut w =
        BlockWriter::new(order, BLOCK, &BlockHeader { thread: 1, sequence: 1, base_time: 3000, ..Default::default() });
    w.push(wire_code_of(&header(order), 0x0004), 3000, &[Value::Pointer(0x5500), Value::Word(1), Value::Double(0.5)])
        .unwrap();
    let block = w.finish();
    let at = layout.pool_block(1) as usize;
    bytes[at..at + BLOCK as usize].copy_from_slice(&block);
    order.put_u64(&mut bytes[layout.tag_at(1) as usize..], raw::tag(0, 1));
    assert_eq!(blocks_and_events(&bytes), blocks_and_events(&good), "the block beyond the gap is left out");
}

fn wire_code_of(header: &Header, own: u16) -> u16 {
    header.sets[0].wire_code_of(own).unwrap()
}

/// What [`generate`]'s files hold, read in both byte orders (the checks of the 1.0.2 files,
/// which the 1.1.0 files pass too).
fn check_pins_fixture(le: &[u8], be: &[u8], name: &str) {
    assert_ne!(le, be);
    let (blocks, findings) = blocks_and_events(le);
    assert_eq!(blocks_and_events(be), (blocks.clone(), findings.clone()), "both byte orders read alike");
    let order: Vec<(u64, u64)> = blocks.iter().map(|b| (b.0, b.1)).collect();
    // Thread 1's pinned records in its block 2, just below its ring's oldest (3); thread 2's
    // ring has its block 0, so none; thread 3, in no slot, gets a block 0 after the slots.
    assert_eq!(order, [(1, 2), (1, 3), (1, 4), (2, 0), (3, 0)], "{blocks:#?}");
    let pinned = &blocks[0].2;
    assert_eq!(pinned.len(), 3, "{pinned:?}");
    assert!(pinned[0].contains("ThreadName") && pinned[0].contains("\"main\""), "{pinned:?}");
    assert!(pinned[1].contains("ClientPhase") && pinned[1].contains("phase=\"config\" step=42 delta=0"), "{pinned:?}");
    assert!(pinned[2].contains("ClientPhase") && pinned[2].contains("phase=\"phase\" step=7 delta=1"), "{pinned:?}");
    assert_eq!(blocks[1].2.len() + blocks[2].2.len(), 40, "the ring's ArenaPolls");
    assert_eq!(blocks[3].2.iter().filter(|e| e.contains("ClientMark")).count(), 1, "thread 2's mark, once");
    let gone = &blocks[4].2;
    assert_eq!(gone.len(), 2, "{gone:?}");
    assert!(gone[0].contains("\"gone\"") && gone[1].contains("phase=\"gone\" step=3 delta=0"), "{gone:?}");
    assert_eq!((findings.pinned, findings.pinned_blocks, findings.pins_dropped), (5, 2, 1), "{findings:?}");
    assert_eq!(findings.pin_damage, None);
    assert!(findings.damaged.is_empty(), "{findings:?}");

    // The dumper: the pinned events first, under their threads' names; stats and check say
    // what the pin area held.
    let dir = crate::common::dir("ring_fixtures", name);
    let path = dir.join("pins-le.ring");
    std::fs::write(&path, le).unwrap();
    let p = path.to_str().unwrap();
    let (code, print) = dump(&["print", p]);
    assert_eq!(code, Some(0), "{print}");
    let first = print.lines().find(|l| l.contains("ClientPhase") || l.contains("ArenaPoll")).unwrap();
    assert!(first.contains("config"), "{print}");
    let (_, stats) = dump(&["stats", p]);
    assert!(
        stats.contains(
            "  pin area: 5 pinned records put back in 2 blocks, 1 pins dropped (the area keeps the latest)\n"
        ),
        "{stats}"
    );
    let (code, check) = dump(&["check", p]);
    assert_eq!(code, Some(0), "{check}");
    assert!(check.contains("  pin area: 5 pinned records put back in 2 blocks, 1 pins dropped"), "{check}");
    assert!(check.ends_with("  whole\n"), "{check}");
}

/// The pin area's size (`pin_half`, offset 52) is outside page 0's CRC: garbage there (an
/// odd size, or one past the limits) makes the reader read the file without its pin area
/// and say that area is damaged, not refuse the file.
#[test]
fn a_damaged_pin_area_size_costs_the_pins_not_the_rings() {
    let good = read(LAYOUT, "pins-le.ring", || generate(Order::Little, event_format::schema::Version::new(1, 0, 2)));
    let (good_blocks, _) = blocks_and_events(&good);
    let dir = crate::common::dir("ring_fixtures", "pin-half");
    for garbage in [[0x11, 0x22, 0x33, 0x44], [0xd1, 0x03, 0x00, 0x00], [0x08, 0x00, 0x00, 0x00]] {
        let mut bad = good.clone();
        bad[raw::at::PIN_HALF..raw::at::PIN_HALF + 4].copy_from_slice(&garbage);
        let (blocks, findings) = blocks_and_events(&bad);
        // Every ring block, none of the pinned ones.
        let rings: Vec<_> = good_blocks.iter().filter(|b| !matches!((b.0, b.1), (1, 2) | (3, 0))).cloned().collect();
        assert_eq!(blocks, rings, "{garbage:x?}");
        assert_eq!((findings.pinned, findings.pinned_blocks, findings.pins_dropped), (0, 0, 1), "{garbage:x?}");
        let damage = findings.pin_damage.clone().expect("the pin area is damaged");
        assert!(damage.contains("its size"), "{damage}");
        let path = dir.join("bad-pin-half.ring");
        std::fs::write(&path, &bad).unwrap();
        let p = path.to_str().unwrap();
        let (code, print) = dump(&["print", p]);
        assert_eq!(code, Some(0), "{print}");
        assert_eq!(print.lines().filter(|l| l.contains("ArenaPoll")).count(), 41, "{print}");
        let (code, check) = dump(&["check", p]);
        assert_eq!(code, Some(1), "{check}");
        assert!(check.contains("damaged: the ring file's pin area: its size:"), "{check}");
        assert!(check.ends_with("  NOT whole: 1 problem\n"), "{check}");
        let (_, stats) = dump(&["stats", p]);
        assert!(stats.contains("pin area: damaged: its size"), "{stats}");
        // Following from the oldest block says so too, once, and shows the rings.
        let mut follower = ring::Follower::new(RingReader::open(&bad[..], DecodeOptions::default()).unwrap());
        let items = follower.poll().unwrap();
        let said: Vec<_> = items
            .iter()
            .filter_map(|i| match i {
                ring::FollowItem::PinAreaDamaged { why } => Some(why.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(said.len(), 1, "{items:?}");
        assert!(said[0].contains("its size"), "{said:?}");
        let records = items.iter().filter(|i| matches!(i, ring::FollowItem::Records { .. })).count();
        assert_eq!(records, 3, "the rings' blocks: {items:?}");
        assert!(follower.poll().unwrap().is_empty(), "said once");
        let (code, follow) = dump(&["follow", p]);
        assert_eq!(code, Some(0), "{follow}");
        assert!(follow.contains("the ring file's pin area is damaged (its size"), "{follow}");
        assert_eq!(follow.lines().filter(|l| l.contains("ArenaPoll")).count(), 41, "{follow}");
    }
}

/// A pin area cut short (the file ends inside it) is the pin area's damage; the rings read.
#[test]
fn a_ring_file_cut_inside_its_pin_area_keeps_its_rings() {
    let good = read(LAYOUT, "pins-le.ring", || generate(Order::Little, event_format::schema::Version::new(1, 0, 2)));
    let layout = Layout::decode(&good, false).unwrap();
    let cut = &good[..layout.pin_area() as usize + 100];
    let (blocks, findings) = blocks_and_events(cut);
    assert_eq!(blocks.len(), 3, "the rings' blocks: {blocks:?}");
    assert!(findings.pin_damage.expect("damaged").contains("cut short"));
}
