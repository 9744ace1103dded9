//! The macros and the recorder together: every event of the workspace's events.def recorded
//! and decoded with the right values; arguments evaluated only when enabled; control by kind
//! and by event; several threads, each event exactly once and in order; the recorder's bytes,
//! for every letter and every built-in it writes, are those of the reference encoder.
//!
//! A process has one recording at a time, so the tests take turns (`serial`).
#![deny(warnings)]

use crate::{events, serial};
use event_format::builtin;
use event_format::decode::{Catalog, Decoder, Entry};
use event_format::wire::{BLOCK_HEADER_LEN, BlockHeader, BlockWriter, Value};
use event_runtime::{Policy, Recorder};
use std::collections::BTreeSet;
use std::time::Duration;

/// A decoded event: thread, name and values as text (strings quoted).
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    thread: u64,
    name: String,
    values: Vec<String>,
}

fn decode(stream: &[u8]) -> Vec<Seen> {
    let mut decoder = Decoder::new(stream).expect("the recorder writes a valid header");
    let catalog = Catalog::new(&decoder.header().sets);
    let mut seen = Vec::new();
    while let Some(block) = decoder.next_block() {
        let block = block.expect("no damaged block");
        for entry in block.entries(&catalog) {
            let Entry::Event(event) = entry else { panic!("unexpected {entry:?}") };
            let values = event
                .values()
                .map(|v| {
                    let mut s = String::new();
                    event_format::text::write_value(&mut s, &v).unwrap();
                    s
                })
                .collect();
            seen.push(Seen { thread: event.thread, name: event.desc.name.clone(), values });
        }
    }
    seen
}

fn user_events(seen: &[Seen]) -> Vec<(String, Vec<String>)> {
    seen.iter().filter(|s| s.name != "ThreadName").map(|s| (s.name.clone(), s.values.clone())).collect()
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn every_event_of_events_def_round_trips_with_its_values() {
    let _serial = serial();
    let recording = Recorder::new().deterministic_clock().start().unwrap();
    let arena = [0u8; 16];
    let pool = 7u64;
    let class = String::from("AMC");
    event!(ArenaCreate, &arena, 0x7f00_0000_0000usize, 1u64 << 20);
    event!(ArenaDestroy, &arena as *const _, 4096usize);
    event!(ArenaExtend, &arena, 0x7f00_0010_0000u64, 65536u32);
    event!(ArenaPoll, &arena, 12u8, 0.75f32);
    event!(PoolInit, &pool, &arena, &class, 16u16);
    event!(PoolFinish, &pool, 0u64);
    event!(PoolStats, &pool, 10u64, 4u64, 6u64, 0.25);
    event!(SegAlloc, 0x1000usize, &pool, 0x2000usize, 65536u64);
    event!(SegFree, 0x1000usize, &pool, 65536u64);
    event!(SegSplit, 0x1000usize, 0x1000usize, 0x1800usize, 0x1800usize);
    event!(SegMerge, 0x1000usize, 0x1000usize, 0x1800usize);
    event!(ObjectAlloc, &pool, 0x2010usize, 48u64, 3u32);
    event!(ObjectFree, &pool, 0x2010usize, 48u64);
    event!(ObjectResize, &pool, 0x2010usize, 48u64, 96u64, true);
    event!(AllocFail, &pool, 1u64 << 40, format!("needed {} bytes", 1u64 << 40));
    event!(SweepBegin, &pool, 1u64, "full");
    event!(SweepCondemn, &pool, 1u64, 60u64, 0.5);
    event!(SweepScan, 0x1000usize, 0x2000usize, 65536u64, 12u32);
    event!(SweepReclaim, &pool, 1u64, 30u64, -30i64);
    event!(SweepEnd, &pool, 1u64, false);
    event!(ClientPhase, "run", 2u64, -1i32);
    event!(ClientCheck, true, "balance", "ok");
    event!(ClientMark);
    let stream = recording.stop().unwrap();

    let arena_at = format!("{:#x}", arena.as_ptr() as usize);
    let pool_at = format!("{:#x}", &pool as *const u64 as usize);
    let seen = decode(&stream);
    assert_eq!(seen[0].name, "ThreadName", "a thread names itself first");
    let got = user_events(&seen);
    let expected: Vec<(&str, Vec<String>)> = vec![
        ("ArenaCreate", vec![arena_at.clone(), "0x7f0000000000".into(), "1048576".into()]),
        ("ArenaDestroy", vec![arena_at.clone(), "4096".into()]),
        ("ArenaExtend", vec![arena_at.clone(), "0x7f0000100000".into(), "65536".into()]),
        ("ArenaPoll", vec![arena_at.clone(), "12".into(), "0.75".into()]),
        ("PoolInit", vec![pool_at.clone(), arena_at.clone(), "\"AMC\"".into(), "16".into()]),
        ("PoolFinish", vec![pool_at.clone(), "0".into()]),
        ("PoolStats", vec![pool_at.clone(), "10".into(), "4".into(), "6".into(), "0.25".into()]),
        ("SegAlloc", strings(&["0x1000", &pool_at, "0x2000", "65536"])),
        ("SegFree", strings(&["0x1000", &pool_at, "65536"])),
        ("SegSplit", strings(&["0x1000", "0x1000", "0x1800", "0x1800"])),
        ("SegMerge", strings(&["0x1000", "0x1000", "0x1800"])),
        ("ObjectAlloc", strings(&[&pool_at, "0x2010", "48", "3"])),
        ("ObjectFree", strings(&[&pool_at, "0x2010", "48"])),
        ("ObjectResize", strings(&[&pool_at, "0x2010", "48", "96", "true"])),
        ("AllocFail", strings(&[&pool_at, "1099511627776", "\"needed 1099511627776 bytes\""])),
        ("SweepBegin", strings(&[&pool_at, "1", "\"full\""])),
        ("SweepCondemn", strings(&[&pool_at, "1", "60", "0.5"])),
        ("SweepScan", strings(&["0x1000", "0x2000", "65536", "12"])),
        ("SweepReclaim", strings(&[&pool_at, "1", "30", "-30"])),
        ("SweepEnd", strings(&[&pool_at, "1", "false"])),
        ("ClientPhase", strings(&["\"run\"", "2", "-1"])),
        ("ClientCheck", strings(&["true", "\"balance\"", "\"ok\""])),
        ("ClientMark", vec![]),
    ];
    let expected: Vec<(String, Vec<String>)> = expected.into_iter().map(|(n, v)| (n.to_owned(), v)).collect();
    assert_eq!(got, expected);
    let schema = events::SET.schema().unwrap();
    assert_eq!(got.len(), schema.events.len(), "every event of events.def is covered");
}

#[test]
fn unsuffixed_literals_take_their_letters_types() {
    // A capture: this thread's events alone, in parallel with the other tests.
    let captured = event_runtime::capture(|| {
        event!(ClientPhase, "literals", 5, -3);
        event!(SweepCondemn, 0x10, 2, 3, 1);
        event!(ObjectAlloc, 0x20, 0x30, 48, 7);
    });
    let got = user_events(&decode(captured.bytes()));
    assert_eq!(got[0].1, strings(&["\"literals\"", "5", "-3"]));
    assert_eq!(got[1].1, strings(&["0x10", "2", "3", "1.0"]));
    assert_eq!(got[2].1, strings(&["0x20", "0x30", "48", "7"]));
}

#[test]
fn arguments_are_evaluated_only_when_enabled() {
    let _serial = serial();
    let mut evaluated = 0;
    let mut arg = || {
        evaluated += 1;
        9u64
    };
    // Not recording: nothing is enabled.
    event!(PoolFinish, 0usize, arg());
    let recording = Recorder::new().kinds(events::Kind::Arena.mask()).start().unwrap();
    event!(PoolFinish, 0usize, arg()); // kind Pool is off
    event!(ArenaDestroy, 0usize, arg()); // kind Arena is on
    event_runtime::control::apply("Pool").unwrap();
    event!(PoolFinish, 0usize, arg());
    event_runtime::control::apply("-Pool:PoolFinish").unwrap();
    event!(PoolFinish, 0usize, arg()); // turned off by itself
    let got = user_events(&decode(&recording.stop().unwrap()));
    assert_eq!(evaluated, 2, "only the two recorded events evaluated their arguments");
    assert_eq!(got.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["ArenaDestroy", "PoolFinish"]);
}

#[test]
fn control_reads_back_what_was_set() {
    let _serial = serial();
    let recording = Recorder::new().kinds(0).start().unwrap();
    use event_runtime::control::{self, Selection};
    use events::Kind;
    let selection = || control::selection_of(&events::SET).expect("the recording holds the set");
    assert_eq!(selection().kinds, 0);
    assert_eq!(control::describe().as_deref(), Some("none"));
    assert!(!control::is_enabled(events::code::SegAlloc));
    // A program that computes kind masks sets them as data.
    let mask = Kind::Seg.mask() | Kind::Pool.mask();
    control::set_selection_of(&events::SET, Selection { kinds: selection().kinds | mask, ..selection() });
    assert_eq!(selection().kinds, Kind::Seg.mask() | Kind::Pool.mask());
    assert!(control::is_enabled(events::code::SegAlloc));
    assert!(!control::is_enabled(events::code::ArenaCreate));
    assert_eq!(control::apply("-Pool").unwrap(), "Seg");
    let all = Selection { kinds: u64::MAX, ..Selection::none() };
    assert_eq!(control::set_selection_of(&events::SET, all).unwrap().kinds, Kind::Seg.mask());
    assert!(control::is_enabled(events::code::ArenaCreate));
    assert_eq!(control::describe().as_deref(), Some("all"));
    drop(recording);
    assert!(!control::is_enabled(events::code::ArenaCreate), "nothing is enabled once stopped");
    assert_eq!(Kind::ALL.len(), 6);
    assert_eq!(Kind::Sweep.name(), "Sweep");
    assert_eq!(events::VERSION, event_format::Version::new(1, 0, 0));
}

#[test]
fn every_event_of_every_thread_is_decoded_once_in_order() {
    let _serial = serial();
    const THREADS: u64 = 4;
    const EACH: u64 = 20_000;
    // Small blocks: many hand-offs.
    let recording = Recorder::new().block_size(1024).start().unwrap();
    // Joined threads have run their thread-local destructors, which hand the last blocks on.
    let joined: Vec<_> = (0..THREADS / 2)
        .map(|t| {
            std::thread::spawn(move || {
                for n in 0..EACH {
                    event!(SweepScan, t as usize, 0usize, n, 0u32);
                }
            })
        })
        .collect();
    // Scoped threads may still be running those destructors when the scope ends: they flush.
    std::thread::scope(|s| {
        for t in THREADS / 2..THREADS {
            s.spawn(move || {
                for n in 0..EACH {
                    event!(SweepScan, t as usize, 0usize, n, 0u32);
                }
                event_runtime::flush();
            });
        }
    });
    for handle in joined {
        handle.join().unwrap();
    }
    let seen = decode(&recording.stop().unwrap());
    let mut per_thread: std::collections::BTreeMap<u64, (String, Vec<u64>)> = Default::default();
    for s in &seen {
        match s.name.as_str() {
            "ThreadName" => {}
            "SweepScan" => {
                let entry = per_thread.entry(s.thread).or_default();
                entry.0 = s.values[0].clone();
                entry.1.push(s.values[2].parse().unwrap());
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(per_thread.len(), THREADS as usize);
    for (thread, (_, numbers)) in per_thread {
        assert_eq!(numbers, (0..EACH).collect::<Vec<_>>(), "thread {thread}: every event once, in order");
    }
}

#[test]
fn long_strings_are_cut_and_marked() {
    let _serial = serial();
    let recording = Recorder::new().block_size(1024).start().unwrap();
    let long = "x".repeat(3000);
    event!(ClientCheck, true, &long, &long);
    let stream = recording.stop().unwrap();
    let mut decoder = Decoder::new(&stream[..]).unwrap();
    let catalog = Catalog::new(&decoder.header().sets);
    let mut found = false;
    while let Some(block) = decoder.next_block() {
        for entry in block.unwrap().entries(&catalog) {
            let Entry::Event(event) = entry else { continue };
            if event.desc.name == "ClientCheck" {
                let values: Vec<Value<'_>> = event.values().collect();
                let (Value::Str(a), Value::Str(b)) = (values[1], values[2]) else { panic!() };
                assert!(a.truncated && b.truncated);
                assert_eq!(a.bytes.len() + b.bytes.len() + 8 + 1 + 4, 1024 - 48, "the record fills the block");
                found = true;
            }
        }
    }
    assert!(found);
}

#[test]
fn messages_interned_strings_and_labels() {
    let _serial = serial();
    assert_eq!(event_runtime::intern("idle"), 0, "no recording: nothing is interned");
    event_runtime::message("not recorded");
    // Every kind off: built-in events are recorded all the same.
    let recording = Recorder::new().kinds(0).start().unwrap();
    let a = event_runtime::intern("arena one");
    let b = event_runtime::intern("arena two");
    assert_eq!(event_runtime::intern("arena one"), a, "interning again gives the same id");
    assert_ne!(a, b);
    event_runtime::label(0x7000, "arena two");
    event_runtime::message("hello \"world\"");
    let got = user_events(&decode(&recording.stop().unwrap()));
    let expected: Vec<(String, Vec<String>)> = vec![
        ("Intern".into(), vec![a.to_string(), "\"arena one\"".into()]),
        ("Intern".into(), vec![b.to_string(), "\"arena two\"".into()]),
        ("Label".into(), vec!["0x7000".into(), b.to_string()]),
        ("Message".into(), vec!["\"hello \\\"world\\\"\"".into()]),
    ];
    assert_eq!(got, expected, "each string is recorded once");
}

/// The stream of 20 000 numbered events from this thread, with packing on or off.
fn numbered(pack: bool) -> Vec<u8> {
    let recording = Recorder::new().memory().block_size(4096).deterministic_clock().pack(pack).start().unwrap();
    for i in 0..20_000u64 {
        event!(ArenaDestroy, 0x1000usize, i);
    }
    event_runtime::flush();
    recording.stop().unwrap()
}

#[test]
fn packed_streams_hold_the_same_events_in_less_space() {
    let _serial = serial();
    let whole = numbered(false);
    let packed = numbered(true);
    let flags = |stream: &[u8]| -> Vec<u16> {
        Decoder::new(stream).unwrap().map(|b| b.expect("no damaged block").header.flags).collect()
    };
    assert!(flags(&whole).iter().all(|&f| f == 0), "pack(false) writes whole blocks");
    let packed_flags = flags(&packed);
    use event_format::wire::{BLOCK_COLUMNS, BLOCK_PACKED, BLOCK_ZSTD};
    assert!(
        packed_flags.iter().all(|&f| f == BLOCK_PACKED | BLOCK_ZSTD | BLOCK_COLUMNS),
        "an idle writer packs every block, by default with zstd over columns: {packed_flags:?}"
    );
    assert_eq!(decode(&packed), decode(&whole));
    assert_eq!(decode(&whole).iter().filter(|s| s.name == "ArenaDestroy").count(), 20_000);
    assert!(packed.len() * 3 < whole.len(), "{} bytes packed, {} whole", packed.len(), whole.len());
    // LZ4, as `EVENT_PACK=lz4` asks: what format 1.1 readers read.
    let recording = Recorder::new()
        .memory()
        .block_size(4096)
        .deterministic_clock()
        .packing(event_runtime::Packing::LZ4)
        .start()
        .unwrap();
    for i in 0..20_000u64 {
        event!(ArenaDestroy, 0x1000usize, i);
    }
    event_runtime::flush();
    let lz4 = recording.stop().unwrap();
    assert!(flags(&lz4).iter().all(|&f| f == BLOCK_PACKED), "{:?}", flags(&lz4));
    assert_eq!(decode(&lz4), decode(&whole));
    assert!(packed.len() < lz4.len(), "zstd {} bytes, LZ4 {}", packed.len(), lz4.len());
}

/// A record the program asked for: its code and values.
type Record = (u16, Vec<Value<'static>>);

/// Re-encodes every block of `stream` (unpacked) with `BlockWriter`, the reference encoder: the
/// same block header, then for each record at its decoded time the values `expect` gives for
/// it (what the program passed, known apart from the recorder), or its decoded values when
/// `expect` gives none. Asserts that the result is the recorder's block, byte for byte
/// (header, records, CRC and padding), and returns the codes of the records compared. The
/// times are the decoded ones, so a thread's `Dropped` record is also checked to be the first
/// of its block, at the block's base time.
fn assert_blocks_are_the_reference_encoders(
    stream: &[u8],
    mut expect: impl FnMut(&event_format::decode::Event<'_>) -> Option<Record>,
) -> BTreeSet<u16> {
    let mut decoder = Decoder::new(stream).expect("the recorder writes a valid header");
    let block_size = decoder.header().block_size;
    let catalog = Catalog::new(&decoder.header().sets);
    let mut codes = BTreeSet::new();
    while let Some(block) = decoder.next_block() {
        let block = block.expect("no damaged block");
        assert_eq!(block.header.flags, 0, "a whole block, not packed");
        if let Some(stop) = block.stop() {
            // The clean-stop marker's block (format 2.0.1), the last: the reference's own.
            let reference = event_format::raw::stop_block(
                block.order,
                block_size,
                block.header.sequence,
                block.header.base_time,
                &stop,
            );
            assert_eq!(&stream[block.offset as usize..], &reference[..], "the stop block ends the stream");
            assert_eq!(block.header.thread, 0);
            continue;
        }
        let header = BlockHeader { used: 0, crc: 0, ..block.header };
        let mut writer = BlockWriter::new(block.order, block_size, &header);
        for (i, entry) in block.entries(&catalog).enumerate() {
            let Entry::Event(event) = entry else { panic!("unexpected {entry:?}") };
            let name = &event.desc.name;
            if event.desc.code == builtin::DROPPED && block.header.thread != 0 {
                // A thread's own refusals open its next block (docs/FORMAT.md, "Counting losses").
                let start = (i, event.time);
                assert_eq!(start, (0, block.header.base_time), "block {}: Dropped opens the block", block.index);
            }
            let values = match expect(&event) {
                Some((code, values)) => {
                    assert_eq!(code, event.desc.code, "block {}: {name} is not the record expected", block.index);
                    values
                }
                None => event.values().collect(),
            };
            writer
                .push(event.desc.wire, event.time, &values)
                .unwrap_or_else(|e| panic!("block {}: {name} at {} does not fit again: {e}", block.index, event.time));
            codes.insert(event.desc.code);
        }
        let reference = writer.finish();
        let recorded = &stream[block.offset as usize..][..block.stored_len as usize];
        // The first difference in the records, else in the header (whose CRC covers them).
        let differs =
            |from: usize| reference.iter().zip(recorded).skip(from).position(|(a, b)| a != b).map(|i| i + from);
        if let Some(at) = differs(BLOCK_HEADER_LEN).or_else(|| differs(0)) {
            let around = at.saturating_sub(8)..(at + 8).min(recorded.len());
            panic!(
                "block {} (thread {}) differs at byte {at}: recorded {:02x?}, reference {:02x?}",
                block.index,
                block.header.thread,
                &recorded[around.clone()],
                &reference[around]
            );
        }
        assert_eq!(reference.len(), recorded.len(), "block {}'s size", block.index);
    }
    codes
}

/// Records events with every letter at its extremes, empty and cut strings, and the built-ins a
/// program records itself; returns them, as the program passed them, in order.
fn every_letter_and_the_programs_builtins() -> Vec<Record> {
    use Value::{Address, Bool, Double, Pointer, Signed, Str, Unsigned, Word};
    use event_format::wire::Text;
    use events::code;
    let s = |text: &'static str| Str(Text::new(text));
    let long: &'static str = "x".repeat(3000).leak();
    // Cut at STRING_MAX falls inside a two-byte character: the cut moves back one byte.
    let accented: &'static str = format!("a{}", "é".repeat(600)).leak();
    let mut expected: Vec<Record> = Vec::new();
    for (p, w) in [(0usize, 0u64), (usize::MAX, u64::MAX), (1, 1 << 63)] {
        event!(ArenaDestroy, p, w);
        expected.push((code::ArenaDestroy, vec![Pointer(p as u64), Word(w)]));
        event!(ArenaCreate, p, w, w);
        expected.push((code::ArenaCreate, vec![Pointer(p as u64), Address(w), Word(w)]));
        event!(SegSplit, p, p, p, p);
        expected
            .push((code::SegSplit, vec![Pointer(p as u64), Pointer(p as u64), Pointer(p as u64), Address(p as u64)]));
    }
    let here = 7u64;
    let at = &here as *const u64 as u64;
    event!(PoolFinish, &here, 1u64);
    event!(PoolFinish, &here as *const u64, 2u64);
    event!(PoolFinish, &here as *const u64 as *mut u64, 3u64);
    for w in 1..=3 {
        expected.push((code::PoolFinish, vec![Pointer(at), Word(w)]));
    }
    for u in [0u32, 1, u32::MAX] {
        event!(ObjectAlloc, 1usize, 2usize, 3u64, u);
        expected.push((code::ObjectAlloc, vec![Pointer(1), Address(2), Word(3), Unsigned(u)]));
    }
    event!(ObjectAlloc, 1usize, 2usize, 3u64, u8::MAX);
    expected.push((code::ObjectAlloc, vec![Pointer(1), Address(2), Word(3), Unsigned(255)]));
    for i in [i64::MIN, -1, 0, 1, i64::MAX] {
        event!(SweepReclaim, 1usize, 2u64, 3u64, i);
        expected.push((code::SweepReclaim, vec![Pointer(1), Word(2), Word(3), Signed(i)]));
    }
    event!(SweepReclaim, 1usize, 2u64, 3u64, i8::MIN);
    event!(SweepReclaim, 1usize, 2u64, 3u64, isize::MIN);
    expected.push((code::SweepReclaim, vec![Pointer(1), Word(2), Word(3), Signed(-128)]));
    expected.push((code::SweepReclaim, vec![Pointer(1), Word(2), Word(3), Signed(isize::MIN as i64)]));
    for d in [0.0, -0.0, 1.0 / 3.0, f64::MIN_POSITIVE, 5e-324, f64::MAX, f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
        event!(ArenaPoll, 1usize, 2u64, d);
        expected.push((code::ArenaPoll, vec![Pointer(1), Word(2), Double(d)]));
    }
    event!(ArenaPoll, 1usize, 2u64, 0.1f32);
    event!(ArenaPoll, 1usize, 2u64, f32::NAN);
    expected.push((code::ArenaPoll, vec![Pointer(1), Word(2), Double(f64::from(0.1f32))]));
    expected.push((code::ArenaPoll, vec![Pointer(1), Word(2), Double(f64::from(f32::NAN))]));
    for b in [false, true] {
        event!(SweepEnd, 1usize, 2u64, b);
        expected.push((code::SweepEnd, vec![Pointer(1), Word(2), Bool(b)]));
        event!(ObjectResize, 1usize, 2usize, 3u64, 4u64, b);
        expected.push((code::ObjectResize, vec![Pointer(1), Address(2), Word(3), Word(4), Bool(b)]));
    }
    for text in ["", "é", "full", long, accented] {
        event!(SweepBegin, 1usize, 2u64, text);
        expected.push((code::SweepBegin, vec![Pointer(1), Word(2), s(text)]));
        event!(ClientPhase, text, u64::MAX, i64::MIN);
        expected.push((code::ClientPhase, vec![s(text), Word(u64::MAX), Signed(i64::MIN)]));
    }
    // Two strings cut to fit the block (1 KiB), not only to STRING_MAX.
    event!(ClientCheck, true, long, long);
    event!(ClientCheck, false, "", accented);
    event!(ClientMark);
    event!(PoolInit, usize::MAX, 0usize, "AMC", u16::MAX);
    expected.push((code::ClientCheck, vec![Bool(true), s(long), s(long)]));
    expected.push((code::ClientCheck, vec![Bool(false), s(""), s(accented)]));
    expected.push((code::ClientMark, vec![]));
    expected.push((code::PoolInit, vec![Pointer(u64::MAX), Pointer(0), s("AMC"), Unsigned(65535)]));
    for text in ["", "hello", long] {
        event_runtime::message(text);
        expected.push((builtin::MESSAGE, vec![s(text)]));
    }
    let one = event_runtime::intern("arena one");
    let two = event_runtime::intern(accented);
    event_runtime::label(usize::MAX, "arena one");
    event_runtime::label(0, "arena two");
    let three = event_runtime::intern("arena two");
    expected.push((builtin::INTERN, vec![Word(one), s("arena one")]));
    expected.push((builtin::INTERN, vec![Word(two), s(accented)]));
    expected.push((builtin::LABEL, vec![Address(usize::MAX as u64), Word(one)]));
    expected.push((builtin::INTERN, vec![Word(three), s("arena two")]));
    expected.push((builtin::LABEL, vec![Address(0), Word(three)]));
    expected
}

#[test]
fn the_recorders_bytes_are_the_reference_encoders_for_every_letter_and_builtin() {
    let _serial = serial();
    let recording = Recorder::new().memory().block_size(1024).deterministic_clock().pack(false).start().unwrap();
    // A thread of a long, non-ASCII name: its ThreadName is cut too.
    let name: &'static str = format!("worker {}", "é".repeat(600)).leak();
    let expected = std::thread::Builder::new().name(name.to_owned()).spawn(every_letter_and_the_programs_builtins);
    let expected = expected.unwrap().join().unwrap();
    let mut expected = expected.into_iter();
    let codes = assert_blocks_are_the_reference_encoders(&recording.stop().unwrap(), |event| {
        if event.desc.code == builtin::THREAD_NAME {
            let text = event_format::wire::Text::new(name);
            return Some((builtin::THREAD_NAME, vec![Value::Word(event.thread), Value::Str(text)]));
        }
        Some(expected.next().expect("no more records than the program asked for"))
    });
    assert_eq!(expected.len(), 0, "every record the program asked for was recorded");
    let schema = events::SET.schema().unwrap();
    let letters: BTreeSet<char> = schema
        .events
        .iter()
        .filter(|e| codes.contains(&e.code))
        .flat_map(|e| e.format.iter().map(|l| l.as_char()))
        .collect();
    assert_eq!(letters.into_iter().collect::<String>(), "ABDIPSUW", "every letter compared");
    for code in [builtin::THREAD_NAME, builtin::MESSAGE, builtin::INTERN, builtin::LABEL] {
        assert!(codes.contains(&code), "built-in {code:#06x} compared");
    }
}

#[test]
fn the_recorders_dropped_and_clock_sync_records_are_the_reference_encoders() {
    let _serial = serial();
    // A pool of four 1 KiB blocks, and bursts of events faster than the writer thread can
    // take them: the pool runs dry, and the events refused meanwhile are counted and written
    // as a Dropped record at the start of the thread's next block. The monotonic clock and a
    // run of more than a second give a ClockSync record.
    let mut codes = BTreeSet::new();
    for _ in 0..5 {
        let recording = Recorder::new()
            .memory()
            .policy(Policy::Switch)
            .block_size(1024)
            .buffer_size(4 * 1024)
            .monotonic_clock()
            .pack(false)
            .start()
            .unwrap();
        for burst in 0..20u64 {
            for i in 0..5000 {
                event!(ArenaDestroy, 1usize, burst * 5000 + i);
            }
            let pause = if burst == 10 { 1100 } else { 2 };
            std::thread::sleep(Duration::from_millis(pause));
        }
        codes.extend(assert_blocks_are_the_reference_encoders(&recording.stop().unwrap(), |_| None));
        if codes.contains(&builtin::DROPPED) && codes.contains(&builtin::CLOCK_SYNC) {
            break;
        }
    }
    assert!(codes.contains(&builtin::DROPPED), "a dry pool refused events at least once in five runs");
    assert!(codes.contains(&builtin::CLOCK_SYNC), "the writer synchronised the clock");
}

#[cfg(feature = "tracing")]
#[test]
fn the_recorders_tracing_records_are_the_reference_encoders() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let _serial = serial();
    // The records of format 2.1.0: a block is rebuilt from what a reader reads, which is
    // those records also where the bridge writes by callsite (the default); that the two read
    // the same is `tracing_bridge::records_by_callsite_read_as_the_records_without_them`.
    let layer = event_runtime::tracing_bridge::EventLayer::new().with_callsites(false);
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let recording = Recorder::new().memory().block_size(1024).deterministic_clock().pack(false).start().unwrap();
    let long = "y".repeat(3000);
    tracing::dispatcher::with_default(&dispatch, || {
        let span = tracing::info_span!("outer", n = 1, text = long.as_str());
        let _entered = span.enter();
        tracing::error!(count = 3, "it failed");
        tracing::trace!(target: "", "");
        tracing::warn!("{long}");
        span.record("n", 2);
        let inner = tracing::debug_span!("inner");
        inner.follows_from(&span);
        inner.in_scope(|| tracing::info!(done = true));
    });
    let codes = assert_blocks_are_the_reference_encoders(&recording.stop().unwrap(), |_| None);
    let spans =
        [builtin::SPAN_OPEN, builtin::SPAN_CLOSE, builtin::SPAN_RECORD, builtin::SPAN_FOLLOWS, builtin::SPAN_CURRENT];
    for code in [builtin::TRACE_EVENT].into_iter().chain(spans) {
        assert!(codes.contains(&code), "built-in {code:#06x} compared");
    }
}

/// Two semver-incompatible versions of one library, each registering a set named `storage`:
/// both are recorded, as `storage-v0_3` and `storage-v1`, each event under its own set.
#[test]
fn two_versions_of_one_set_are_both_recorded_under_their_major_versions() {
    use event_runtime::EventSet;
    use std::sync::atomic::AtomicU64;
    static BITS_0_3: [AtomicU64; 1] = [const { AtomicU64::new(0) }];
    static BITS_1: [AtomicU64; 1] = [const { AtomicU64::new(0) }];
    static OLD: EventSet = EventSet::__new(
        "SET(storage)\nVERSION(0, 3, 0)\nKIND(Page)\nRELATION(PageWrite, 1, TRUE, Page, W, page)\n",
        "old.def",
        "storage",
        "0.3.4",
        &BITS_0_3,
    );
    static NEW: EventSet = EventSet::__new(
        "SET(storage)\nVERSION(1, 0, 0)\nKIND(Page)\nRELATION(PageWrite, 1, TRUE, Page, WU, page, bytes)\n",
        "new.def",
        "storage",
        "1.0.2",
        &BITS_1,
    );
    let _serial = serial();
    let recording = Recorder::new().sets(&[&OLD, &NEW]).memory().deterministic_clock().start().unwrap();
    event_runtime::__private::emit(&OLD, 0, 8, &[], |w| w.word(3));
    event_runtime::__private::emit(&NEW, 0, 12, &[], |w| {
        w.word(4);
        w.unsigned(512);
    });
    let stream = recording.stop().unwrap();
    let decoder = Decoder::new(&stream[..]).unwrap();
    let names: Vec<&str> = decoder.header().sets.iter().map(|s| s.schema.name.as_str()).collect();
    assert_eq!(names, ["storage-v0_3", "storage-v1"]);
    let seen: Vec<(String, Vec<String>)> =
        decode(&stream).into_iter().filter(|s| s.name == "PageWrite").map(|s| (s.name, s.values)).collect();
    assert_eq!(
        seen,
        [
            ("PageWrite".to_owned(), vec!["3".to_owned()]),
            ("PageWrite".to_owned(), vec!["4".to_owned(), "512".to_owned()])
        ]
    );
}

/// Two sets of one name that their versions cannot tell apart: the start refuses them in
/// one line.
#[test]
fn two_sets_of_one_name_and_compatible_versions_are_refused() {
    use event_runtime::EventSet;
    use std::sync::atomic::AtomicU64;
    static BITS_A: [AtomicU64; 1] = [const { AtomicU64::new(0) }];
    static BITS_B: [AtomicU64; 1] = [const { AtomicU64::new(0) }];
    static A: EventSet = EventSet::__new("SET(x)\nVERSION(1, 0, 0)\n", "a.def", "x", "1.0.0", &BITS_A);
    static B: EventSet = EventSet::__new("SET(x)\nVERSION(1, 0, 0)\n", "b.def", "x", "1.2.0", &BITS_B);
    let _serial = serial();
    let error = Recorder::new().sets(&[&A, &B]).memory().start().unwrap_err().to_string();
    assert!(error.contains("two event sets are named `x`") && error.contains("SET(name)"), "{error}");
}

/// `Recording::file_path` is the event file as written, its pattern expanded: the path a
/// program reads its trace back from (the tour once opened `EVENT_FILE` as given, `%p` and
/// all, and failed).
#[test]
fn the_recording_names_its_event_file_with_the_pattern_expanded() {
    let _serial = serial();
    let dir = crate::dir("record-path");
    let recording = Recorder::new().file(dir.join("trace-%p.evt")).start().unwrap();
    let path = recording.file_path().unwrap();
    assert_eq!(path, dir.join(format!("trace-{}.evt", std::process::id())));
    recording.stop().unwrap();
    assert!(path.is_file());
    let memory = Recorder::new().memory().start().unwrap();
    assert_eq!(memory.file_path(), None);
    memory.stop().unwrap();
}
