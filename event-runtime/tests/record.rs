#![deny(warnings)]
//! The macros and the recorder together: every event of the workspace's events.def recorded
//! and decoded with the right values; arguments evaluated only when enabled; control by kind
//! and by event; several threads, each event exactly once and in order.
//!
//! A process has one recording at a time, so the tests take turns (`serial`).

event_runtime::include_events!("../events.def");

use event_format::decode::{Catalog, Decoder, Entry};
use event_format::wire::Value;
use event_runtime::Recorder;
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A decoded event: thread, name and values as text (strings quoted).
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    thread: u64,
    name: String,
    values: Vec<String>,
}

fn decode(stream: &[u8]) -> Vec<Seen> {
    let mut decoder = Decoder::new(stream).expect("the recorder writes a valid header");
    let catalog = Catalog::new(&decoder.header().schema);
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
    let recording = Recorder::new(&events::SET).deterministic_clock().start().unwrap();
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
    let _serial = serial();
    let recording = Recorder::new(&events::SET).start().unwrap();
    event!(ClientPhase, "literals", 5, -3);
    event!(SweepCondemn, 0x10, 2, 3, 1);
    event!(ObjectAlloc, 0x20, 0x30, 48, 7);
    let got = user_events(&decode(&recording.stop().unwrap()));
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
    let recording = Recorder::new(&events::SET).kinds(events::Kind::Arena.mask()).start().unwrap();
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
    let recording = Recorder::new(&events::SET).kinds(0).start().unwrap();
    use event_runtime::control::{self, Selection};
    use events::Kind;
    assert_eq!(control::selection().kinds, 0);
    assert_eq!(control::describe().as_deref(), Some("none"));
    assert!(!control::is_enabled(events::code::SegAlloc));
    // A program that computes kind masks sets them as data.
    let mask = Kind::Seg.mask() | Kind::Pool.mask();
    control::set_selection(Selection { kinds: control::selection().kinds | mask, ..control::selection() });
    assert_eq!(control::selection().kinds, Kind::Seg.mask() | Kind::Pool.mask());
    assert!(control::is_enabled(events::code::SegAlloc));
    assert!(!control::is_enabled(events::code::ArenaCreate));
    assert_eq!(control::apply("-Pool").unwrap(), "Seg");
    let all = Selection { kinds: u64::MAX, ..Selection::none() };
    assert_eq!(control::set_selection(all).kinds, Kind::Seg.mask());
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
    let recording = Recorder::new(&events::SET).block_size(1024).start().unwrap();
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
    let recording = Recorder::new(&events::SET).block_size(1024).start().unwrap();
    let long = "x".repeat(3000);
    event!(ClientCheck, true, &long, &long);
    let stream = recording.stop().unwrap();
    let mut decoder = Decoder::new(&stream[..]).unwrap();
    let catalog = Catalog::new(&decoder.header().schema);
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
    let recording = Recorder::new(&events::SET).kinds(0).start().unwrap();
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
    let recording =
        Recorder::new(&events::SET).memory().block_size(4096).deterministic_clock().pack(pack).start().unwrap();
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
    assert!(
        packed_flags.iter().all(|&f| f == event_format::wire::BLOCK_PACKED),
        "an idle writer packs every block: {packed_flags:?}"
    );
    assert_eq!(decode(&packed), decode(&whole));
    assert_eq!(decode(&whole).iter().filter(|s| s.name == "ArenaDestroy").count(), 20_000);
    assert!(packed.len() * 3 < whole.len(), "{} bytes packed, {} whole", packed.len(), whole.len());
}
