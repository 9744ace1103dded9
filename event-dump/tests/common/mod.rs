//! What the event-dump tests share (`cli` and the modules of `it`): logs recorded here
//! (deterministic clock) or written byte by byte (a schema of our own, unknown codes, extreme
//! values), one builder per log, each named for what it holds; running event-dump; and
//! `print --format json` read back as the reference the exports are checked against.

#![allow(dead_code)]

use event_format::raw;
use event_format::wire::{BlockHeader, BlockWriter, Clock, ClockSource, Header, Order, Producer, Text, Value};
use event_runtime::{Policy, Recorder};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;
pub(crate) use test_scratch::Scratch;

pub(crate) const DUMP: &str = env!("CARGO_BIN_EXE_event-dump");

/// One recording per process at a time: every test that records takes it.
pub(crate) static SERIAL: Mutex<()> = Mutex::new(());

/// An empty directory of the test `test`'s own, under `CARGO_TARGET_TMPDIR` (one per
/// process, and no two tests of a process may name the same one: tests that run at once
/// would share it, and the first to pass would remove it under the other), removed when the
/// test passes and kept when it fails ([`Scratch`]).
pub(crate) fn dir(test: &str) -> Scratch {
    Scratch::named(env!("CARGO_TARGET_TMPDIR"), test)
}

/// A directory of its own ([`dir`]) for a test of the module `module`, numbered in the
/// order they are asked for (`cli-3-PID`): for the modules whose helpers make their files in
/// the test's directory. A number, not the test's name: the name says what the test checks,
/// and a path holding it would show in the outputs the test searches.
pub(crate) fn numbered_dir(module: &str) -> Scratch {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    dir(&format!("{module}-{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)))
}

pub(crate) fn run(args: &[&str]) -> Output {
    Command::new(DUMP).args(args).output().unwrap()
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Seconds as `print` writes them (`-`? digits `.` 9 digits) in nanoseconds, exactly.
pub(crate) fn seconds_to_ns(text: &str) -> i128 {
    let (sign, text) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text),
    };
    let (whole, frac) = text.split_once('.').unwrap();
    assert_eq!(frac.len(), 9, "{text}");
    sign * (whole.parse::<i128>().unwrap() * 1_000_000_000 + frac.parse::<i128>().unwrap())
}

/// One line of `print --format json`.
#[derive(Debug, Clone)]
pub(crate) struct Printed {
    /// Its time since the start, in ns (exact, from the text).
    pub(crate) ns: i128,
    /// `T3`, or `pid:T3` when several logs are printed.
    pub(crate) thread: String,
    pub(crate) kind: String,
    pub(crate) event: String,
    pub(crate) args: serde_json::Map<String, serde_json::Value>,
    pub(crate) labels: serde_json::Map<String, serde_json::Value>,
}

/// `print --format json` of `logs`, parsed.
pub(crate) fn print_json(logs: &[&str]) -> Vec<Printed> {
    let mut args = vec!["print"];
    args.extend_from_slice(logs);
    args.extend_from_slice(&["--format", "json"]);
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|line| {
            let time = line.strip_prefix("{\"time\":").unwrap().split(',').next().unwrap();
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let object = |key: &str| v.get(key).and_then(|a| a.as_object()).cloned().unwrap_or_default();
            Printed {
                ns: seconds_to_ns(time),
                thread: v["thread"].as_str().unwrap().to_owned(),
                kind: v["kind"].as_str().unwrap().to_owned(),
                event: v["event"].as_str().unwrap().to_owned(),
                args: object("args"),
                labels: object("labels"),
            }
        })
        .collect()
}

/// A log of the tour's kinds: the main thread and two named workers one after the other;
/// labels, an interned string, a message, every letter, a word and a signed integer too
/// large for a double, and slices: `SweepBegin`/`SweepEnd` pairs nested on each worker, an
/// unmatched `SweepEnd` on worker-1, and a `SweepBegin` on the main thread never ended.
/// The chrome and CTF exports' tests read it.
pub(crate) fn sample_log(path: &Path) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let recording = Recorder::new().file(path).block_size(1024).deterministic_clock().start().unwrap();
    let arena = 0x7f00_0000_1000usize;
    event_runtime::label(arena, "main \"arena\"");
    event!(ArenaCreate, arena, arena, 1u64 << 20);
    event_runtime::message("two \"workers\"\n\tand a tab");
    for w in 0..2u64 {
        std::thread::Builder::new()
            .name(format!("worker-{w}"))
            .spawn(move || {
                let pool = 0x1000 + w as usize;
                if w == 1 {
                    event!(SweepEnd, pool, 0u64, false); // nothing began: an instant
                }
                event!(PoolInit, pool, arena, "AMC", 16u32);
                event!(SweepBegin, pool, 1u64, "pool \"full\"");
                for i in 0..12u64 {
                    event!(ObjectAlloc, pool, 0x2000 + i as usize, 16 * i, 3u32);
                }
                event!(SweepBegin, pool, 2u64, "nested");
                event!(SweepReclaim, pool, 2u64, 480u64, -5);
                event!(SweepEnd, pool, 2u64, true);
                event!(SweepEnd, pool, 1u64, true);
                event!(ClientCheck, true, "balance", "ok");
                event!(ArenaPoll, arena, u64::MAX, 0.25);
                event!(ClientPhase, "φ", 9_007_199_254_740_993u64, i64::MIN);
            })
            .unwrap()
            .join()
            .unwrap();
    }
    event!(SweepBegin, 0x1000usize, 3u64, "never ends");
    event!(ClientMark);
    event!(ArenaDestroy, arena, 0u64);
    recording.stop().unwrap();
}

/// A log whose single thread refuses events: `fill` with a budget of four 1 KiB blocks, so
/// it holds `Dropped` events. The three exports' tests read it.
pub(crate) fn dropping_log(path: &Path) {
    small_buffer_log(path, Policy::Fill);
}

/// 500 `ObjectFree` events of one thread under `policy` with four 1 KiB blocks: `fill`
/// refuses most of them, `ring` overwrites most of its blocks. [`dropping_log`] and the
/// sqlite export's tests.
pub(crate) fn small_buffer_log(path: &Path, policy: Policy) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let recording = Recorder::new()
        .file(path)
        .policy(policy)
        .block_size(1024)
        .buffer_size(4096)
        .deterministic_clock()
        .start()
        .unwrap();
    for i in 0..500u64 {
        event!(ObjectFree, 0x1000usize, 0x2000 + i as usize, 16u64);
    }
    recording.stop().unwrap();
}

/// A log of `n` `ObjectAlloc` events on one thread. The CTF export's tests.
pub(crate) fn many_events_log(path: &Path, n: u64) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let recording = Recorder::new().file(path).deterministic_clock().start().unwrap();
    for i in 0..n {
        event!(ObjectAlloc, 0x1000usize, 0x2000 + i as usize, i, 3u32);
    }
    recording.stop().unwrap();
}

/// The log of cli's snapshots: the tour's kinds on two threads, one after the other, with a
/// label, an interned string, a message, and every letter; deterministic, so its dump is too.
/// Those snapshots show its every byte, so it stays as it is.
pub(crate) fn two_workers_log(path: &Path) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let recording = Recorder::new().file(path).block_size(1024).deterministic_clock().start().unwrap();
    let arena = 0x7f00_0000_1000usize;
    event_runtime::label(arena, "main arena");
    event!(ArenaCreate, arena, arena, 1u64 << 20);
    event_runtime::message("two \"workers\"\n");
    for w in 0..2u64 {
        std::thread::Builder::new()
            .name(format!("worker-{w}"))
            .spawn(move || {
                event!(PoolInit, 0x1000 + w as usize, arena, "AMC", 16u32);
                for i in 0..30u64 {
                    event!(ObjectAlloc, 0x1000 + w as usize, 0x2000 + i as usize, 16 * i, 3u32);
                }
                event!(SweepReclaim, 0x1000 + w as usize, 1u64, 480u64, -5);
                event!(ClientCheck, true, "balance", "ok");
                event!(ArenaPoll, arena, 4096u64, 0.25);
            })
            .unwrap()
            .join()
            .unwrap();
    }
    event!(ArenaDestroy, arena, 0u64);
    recording.stop().unwrap();
}

/// [`dropping_log`] with every block whole, as cli's snapshots of drops need it: with a
/// four-block budget, whether the writer packs a block depends on timing.
pub(crate) fn whole_block_dropping_log(path: &Path) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let recording = Recorder::new()
        .file(path)
        .policy(Policy::Fill)
        .block_size(1024)
        .buffer_size(4096)
        // With a 4-block budget, whether the writer packs a block depends on timing.
        .pack(false)
        .deterministic_clock()
        .start()
        .unwrap();
    for i in 0..500u64 {
        event!(ObjectFree, 0x1000usize, 0x2000 + i as usize, 16u64);
    }
    recording.stop().unwrap();
}

/// A string with quotes, a backslash, a newline and characters outside ASCII.
pub(crate) const AWKWARD: &str = "it's \"quoted\" \\ and\nünïcødé ✓ 🦀";
/// A word above `i64::MAX`.
pub(crate) const BIG: u64 = u64::MAX - 41;

/// The log of the sqlite export's tests: the tour's kinds on `workers` threads, one after the
/// other, with a label, an interned string, a message, every letter, [`AWKWARD`] strings and
/// [`BIG`] words, so that two calls with different counts give different logs.
pub(crate) fn awkward_log(path: &Path, workers: u64) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let recording = Recorder::new().file(path).block_size(1024).deterministic_clock().start().unwrap();
    let arena = 0x7f00_0000_1000usize;
    event_runtime::label(arena, "main arena");
    event!(ArenaCreate, arena, arena, BIG);
    event_runtime::message("two \"workers\"\n");
    for w in 0..workers {
        std::thread::Builder::new()
            .name(format!("worker-{w}"))
            .spawn(move || {
                event!(PoolInit, 0x1000 + w as usize, arena, "AMC", 16u32);
                for i in 0..30u64 {
                    event!(ObjectAlloc, 0x1000 + w as usize, 0x2000 + i as usize, 16 * i, 3u32);
                }
                event!(SweepReclaim, 0x1000 + w as usize, 1u64, 480u64, -5);
                event!(ClientCheck, true, "balance", AWKWARD);
                event!(ArenaPoll, arena, 4096u64, 0.25);
            })
            .unwrap()
            .join()
            .unwrap();
    }
    event!(AllocFail, 0x1000usize, u64::MAX, AWKWARD);
    event!(ArenaDestroy, arena, 0u64);
    recording.stop().unwrap();
}

/// The log of hostile's tests: two threads, 150 events each over several 1 KiB blocks, no
/// labels or interned strings (so that each line's text does not depend on other blocks);
/// deterministic. `packed`: the writer packs its blocks (format 1.1), else every block is whole.
pub(crate) fn two_threads_log(path: &Path, packed: bool) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let recording = Recorder::new().file(path).block_size(1024).pack(packed).deterministic_clock().start().unwrap();
    let work = |base: u64| {
        for i in 0..150u64 {
            if i % 10 == 0 {
                event!(AllocFail, 0x1000usize, base + i, "out of \"memory\"");
            } else {
                event!(ObjectAlloc, 0x1000usize, 0x2000 + i as usize, base + i, 3u32);
            }
        }
    };
    work(0);
    std::thread::spawn(move || work(1000)).join().unwrap();
    recording.stop().unwrap();
}

/// The ring file of hostile's tests: a small one whose program has stopped (state closed),
/// with overwritten blocks.
pub(crate) fn tiny_ring(path: &Path) {
    tiny_ring_and_snapshot(path, None);
}

/// [`tiny_ring`], and a snapshot of it to `snapshot` taken before its stop.
pub(crate) fn tiny_ring_and_snapshot(path: &Path, snapshot: Option<&Path>) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let recording = Recorder::new()
        .ring_file(path)
        .policy(Policy::Ring)
        .block_size(1024)
        .buffer_size(8 * 1024)
        .ring_threads(2)
        .deterministic_clock()
        .start()
        .unwrap();
    // 400 events of 32 bytes: more than the 8 KiB the threads' rings share (layout 1.1).
    for i in 0..400u64 {
        event!(ObjectFree, 0x1000usize, 0x2000 + i as usize, i);
    }
    if let Some(snapshot) = snapshot {
        recording.snapshot(snapshot).unwrap();
    }
    recording.stop().unwrap();
}

/// The events.def of [`handmade_log`], without the spans (see [`handmade_schema`]).
pub(crate) const HANDMADE_DEF: &str = r#"VERSION(1, 0, 0)
KIND(Trace, "spans and values")
RELATION(Every, 0x0102, TRUE, Trace, PAWUIDBS, p, a, w, u, i, d, b, s)
RELATION(Poll, 0x0103, TRUE, Trace, 0)
"#;

/// The schema of [`handmade_log`] and the codes of `SpanEnter(span W, name S, fields S)`
/// and `SpanExit(span W, name S)`: the runtime's built-in events where this format version
/// has them, else events of the schema (the exporters match spans by name and format).
pub(crate) fn handmade_schema() -> (event_format::schema::Schema, u16, u16) {
    use event_format::builtin::by_name;
    if let (Some(enter), Some(exit)) = (by_name("SpanEnter"), by_name("SpanExit")) {
        return (event_format::def::parse(HANDMADE_DEF, "handmade.def").unwrap(), enter.code, exit.code);
    }
    let def = format!(
        "{HANDMADE_DEF}RELATION(SpanEnter, 0x0100, TRUE, Trace, WSS, span, name, fields)\nRELATION(SpanExit, 0x0101, TRUE, Trace, WS, span, name)\n"
    );
    (event_format::def::parse(&def, "handmade.def").unwrap(), 0x0100, 0x0101)
}

/// The code in [`handmade_log`] that its schema does not know.
pub(crate) const UNKNOWN_CODE: u16 = 0x0200;

/// The clock of [`handmade_log`]: a 3 GHz counter whose tick 5e9 was 1700000000.123456789 s
/// after the epoch; recording started at tick 6e9.
pub(crate) fn handmade_clock() -> Clock {
    Clock {
        source: ClockSource::Tsc,
        ticks_per_second: 3_000_000_000,
        ref_ticks: 5_000_000_000,
        ref_wall_ns: 1_700_000_000_123_456_789,
        start_ticks: 6_000_000_000,
    }
}

/// A stream written here, in `order`, with [`HANDMADE_DEF`]: on thread 1, spans (`outer`
/// around `inner`, then an exit of a span never entered), `Every` with extreme values
/// (u64::MAX, i64::MIN, NaN, -inf, a string with a NUL and a byte that is not UTF-8) and a
/// record of [`UNKNOWN_CODE`]; on thread 2 (named `io`), in a second block, spans `a` and
/// `b` that overlap without nesting, then `Poll`s.
pub(crate) fn handmade_log(path: &Path, order: Order) {
    let (schema, enter, exit) = handmade_schema();
    let mut header = Header::with_sets(wire_is_own(schema), 1024, handmade_clock(), handmade_producer());
    header.order = order;
    let mut bytes = header.encode().unwrap();
    let t0 = 6_000_000_000u64;
    let s = |text: &'static str| Value::Str(Text::new(text));
    let mut one = BlockWriter::new(order, 1024, &BlockHeader { thread: 1, base_time: t0, ..Default::default() });
    let rows: Vec<(u16, u64, Vec<Value<'_>>)> = vec![
        (enter, t0 + 3, vec![Value::Word(1), s("outer"), s("")]),
        (
            0x0102,
            t0 + 10,
            vec![
                Value::Pointer(u64::MAX),
                Value::Address(0x10),
                Value::Word(u64::MAX),
                Value::Unsigned(u32::MAX),
                Value::Signed(i64::MIN),
                Value::Double(f64::NAN),
                Value::Bool(true),
                Value::Str(Text { bytes: b"nul\0here \xff \"q\" \\", truncated: false }),
            ],
        ),
        (enter, t0 + 3_000_000_001, vec![Value::Word(2), s("inner"), s("k=v")]),
        (UNKNOWN_CODE, t0 + 3_000_000_002, vec![]),
        (
            0x0102,
            t0 + 3_000_000_005,
            vec![
                Value::Pointer(0),
                Value::Address(0),
                Value::Word(0),
                Value::Unsigned(0),
                Value::Signed(-7),
                Value::Double(f64::NEG_INFINITY),
                Value::Bool(false),
                s("é"),
            ],
        ),
        (exit, t0 + 3_000_000_007, vec![Value::Word(2), s("inner")]),
        (exit, t0 + 6_000_000_000, vec![Value::Word(1), s("outer")]),
        (exit, t0 + 6_000_000_300, vec![Value::Word(99), s("nobody")]),
    ];
    for (code, time, values) in &rows {
        one.push(*code, *time, values).unwrap();
    }
    bytes.extend(one.finish());
    let mut two = BlockWriter::new(order, 1024, &BlockHeader { thread: 2, base_time: t0, ..Default::default() });
    two.push(event_format::builtin::THREAD_NAME, t0 + 1, &[Value::Word(2), s("io")]).unwrap();
    // Spans that overlap without nesting: `a` exits while `b`, entered inside it, is open.
    two.push(enter, t0 + 2, &[Value::Word(10), s("a"), s("")]).unwrap();
    two.push(enter, t0 + 4, &[Value::Word(11), s("b"), s("")]).unwrap();
    two.push(exit, t0 + 50, &[Value::Word(10), s("a")]).unwrap();
    two.push(exit, t0 + 60, &[Value::Word(11), s("b")]).unwrap();
    for i in 0..5u64 {
        two.push(0x0103, t0 + 100 + i * 1_000_000_000, &[]).unwrap();
    }
    bytes.extend(two.finish());
    std::fs::write(path, bytes).unwrap();
}

/// A stream of [`HANDMADE_DEF`] whose thread 1 goes back in time: `Poll` 100 ticks after
/// the start, then 50 (earlier), then 200. Its clock is [`handmade_clock`]'s, started
/// `later_ns` later on the wall clock.
pub(crate) fn backwards_log(path: &Path, later_ns: i64) {
    let (schema, _, _) = handmade_schema();
    let producer = Producer {
        pointer_width: 8,
        arch: "x86_64".into(),
        os: "linux".into(),
        pid: 7,
        program: "back".into(),
        host: "handmade-host".into(),
        start_wall_ns: 0,
    };
    let clock = Clock { ref_wall_ns: handmade_clock().ref_wall_ns + later_ns, ..handmade_clock() };
    let header = Header::with_sets(wire_is_own(schema), 1024, clock, producer);
    let mut bytes = header.encode().unwrap();
    let t0 = handmade_clock().start_ticks;
    let mut block =
        BlockWriter::new(header.order, 1024, &BlockHeader { thread: 1, base_time: t0, ..Default::default() });
    for dt in [100, 50, 200] {
        block.push(0x0103, t0 + dt, &[]).unwrap();
    }
    bytes.extend(block.finish());
    std::fs::write(path, bytes).unwrap();
}

/// A log of 1 KiB blocks whose thread 2's block says it starts at tick 200 (after the clock's
/// start) and holds a `Message` at 50 (between ones at 200 and 210): a block whose records
/// start before its `base_time`, which a reader merging by the blocks' indexes learns only
/// once it has written thread 1's lines before 200 (at 100, 110, 120; thread 1 goes on at 300).
/// Each message says `at T`. Each thread's blocks are numbered from 0 (a whole log, but for
/// its block's early record).
pub(crate) fn early_record_log(path: &Path) {
    let (schema, _, _) = handmade_schema();
    let header = Header::with_sets(wire_is_own(schema), 1024, handmade_clock(), handmade_producer());
    let mut bytes = header.encode().unwrap();
    let t0 = handmade_clock().start_ticks;
    let block = |thread: u64, sequence: u64, base: u64, times: &[u64]| {
        let header = BlockHeader { thread, sequence, base_time: t0 + base, ..Default::default() };
        let mut w = BlockWriter::new(Order::Little, 1024, &header);
        for &t in times {
            let text = format!("at {t}");
            w.push(event_format::builtin::MESSAGE, t0 + t, &[Value::Str(Text::new(&text))]).unwrap();
        }
        w.finish()
    };
    for b in [block(1, 0, 100, &[100, 110, 120]), block(2, 0, 200, &[200, 50, 210]), block(1, 1, 300, &[300])] {
        bytes.extend(b);
    }
    std::fs::write(path, bytes).unwrap();
}

/// A copy of the log at `from` with a byte of its block `block` (0 first) flipped: the 13th
/// byte of its records (or its last), which its CRC covers, whether the writer packed the
/// block or wrote it whole. (A byte at a block size's multiple missed the block it meant
/// where blocks were packed, and could fall in a packed block's padding, which no CRC
/// covers, as the writer's load decided.)
pub(crate) fn damaged_copy(from: &Path, to: &Path, block: usize) {
    let mut bytes = std::fs::read(from).unwrap();
    let (offset, used) = {
        let mut decoder = event_format::decode::Decoder::new(&bytes[..]).unwrap();
        let b = decoder.nth(block).expect("the log has the block").expect("an undamaged block");
        (b.offset as usize, b.header.used as usize)
    };
    assert!(used > 0, "block {block} holds records");
    bytes[offset + event_format::wire::BLOCK_HEADER_LEN + 12.min(used - 1)] ^= 0x40;
    std::fs::write(to, bytes).unwrap();
}

/// [`two_threads_log`] packed (zstd), with its block 1's packed bytes replaced by eight bytes
/// that are no zstd frame and then a copy of its block 2, and the block resealed: its CRC
/// holds, its records do not unpack, and its bytes hold a sync word at an aligned offset, the
/// start of what looks like a whole block (docs/FORMAT.md, "Reading a block": a CRC-checked
/// block's length is trusted, so that copy is not read). Returns block 1's offset and the
/// events of the good log's block 1.
pub(crate) fn unpackable_block_log(path: &Path) -> (u64, usize) {
    two_threads_log(path, true);
    let (bytes, offset, lost) = unpackable_block(&std::fs::read(path).unwrap());
    std::fs::write(path, bytes).unwrap();
    (offset, lost)
}

/// The packed log `good` with its block 1 made as [`unpackable_block_log`] makes it: the bytes,
/// block 1's offset and its events in `good`.
pub(crate) fn unpackable_block(good: &[u8]) -> (Vec<u8>, u64, usize) {
    use event_format::decode::{Catalog, Decoder, Entry};
    use event_format::wire::BLOCK_HEADER_LEN;
    let decoder = Decoder::new(good).unwrap();
    let (order, catalog) = (decoder.header().order, Catalog::new(&decoder.header().sets));
    let blocks: Vec<_> = decoder.map(Result::unwrap).collect();
    assert!(blocks.len() > 3 && blocks.iter().all(|b| b.stored_len < 1024), "packed blocks");
    let (one, two) = (&blocks[1], &blocks[2]);
    let lost = one.entries(&catalog).filter(|e| matches!(e, Entry::Event(_))).count();
    let (start, end) = (one.offset as usize, (one.offset + one.stored_len) as usize);
    let mut block = good[start..start + BLOCK_HEADER_LEN].to_vec();
    block.extend_from_slice(b"not zstd");
    block.extend_from_slice(&good[two.offset as usize..(two.offset + two.stored_len) as usize]);
    let used = (block.len() - BLOCK_HEADER_LEN) as u32;
    block.resize(raw::packed_len(used), 0);
    raw::seal_block(order, &mut block, used);
    let mut bytes = good[..start].to_vec();
    bytes.extend_from_slice(&block);
    bytes.extend_from_slice(&good[end..]);
    (bytes, one.offset, lost)
}

/// The thread 1 block of [`damaged_records_log`] and [`damaged_records_ring`], in `order`:
/// `Poll` at t0 + 1, then a `TimeExtend` with no argument bytes (delta 1, so the running time
/// is t0 + 2), `Poll` at t0 + 3, an `Every` whose bool byte is 2 (t0 + 4), and `Poll` at t0 + 5
/// and t0 + 6. docs/FORMAT.md: both bad records are reported and skipped by their length, and
/// the four `Poll`s are events.
pub(crate) fn damaged_records_block(order: Order, sequence: u64) -> Vec<u8> {
    let t0 = handmade_clock().start_ticks;
    let header = BlockHeader { thread: 1, sequence, base_time: t0, ..Default::default() };
    let mut w = BlockWriter::new(order, 1024, &header);
    let every = [
        Value::Pointer(1),
        Value::Address(2),
        Value::Word(3),
        Value::Unsigned(4),
        Value::Signed(5),
        Value::Double(6.0),
        Value::Bool(true),
        Value::Str(Text::new("x")),
    ];
    for (code, dt) in [(0x0103, 1), (0x0103, 2), (0x0103, 3)] {
        w.push(code, t0 + dt, &[]).unwrap();
    }
    w.push(0x0102, t0 + 4, &every).unwrap();
    for dt in [5, 6] {
        w.push(0x0103, t0 + dt, &[]).unwrap();
    }
    let mut block = w.finish();
    let records = event_format::wire::BLOCK_HEADER_LEN;
    // The second record (8 bytes, no arguments) becomes a TimeExtend without its time.
    order.put_u16(&mut block[records + 8..], event_format::builtin::TIME_EXTEND);
    // The `Every` record is the fourth: its bool follows P, A, W (8 each), U (4), I, D (8 each).
    block[records + 3 * 8 + 8 + 44] = 2;
    let used = BlockHeader::read(order, &block).used;
    event_format::raw::seal_block(order, &mut block, used);
    block
}

/// A stream of [`HANDMADE_DEF`] in `order` whose one block has two bad records between good
/// ones ([`damaged_records_block`]), then a whole block of thread 2 with one `Poll`.
pub(crate) fn damaged_records_log(path: &Path, order: Order) {
    let (schema, _, _) = handmade_schema();
    let mut header = Header::with_sets(wire_is_own(schema), 1024, handmade_clock(), handmade_producer());
    header.order = order;
    // Frozen as checked in (tests/data/damaged): a stream of format 2.0.1.
    header.format = event_format::schema::Version::new(2, 0, 1);
    let mut bytes = header.encode().unwrap();
    bytes.extend(damaged_records_block(order, 0));
    let t0 = handmade_clock().start_ticks;
    let mut two = BlockWriter::new(order, 1024, &BlockHeader { thread: 2, base_time: t0, ..Default::default() });
    two.push(0x0103, t0 + 7, &[]).unwrap();
    bytes.extend(two.finish());
    end_with_stop_counting(&mut bytes, Counting::Events);
    std::fs::write(path, bytes).unwrap();
}

/// The producer of [`handmade_log`], [`damaged_records_log`] and [`damaged_records_ring`].
pub(crate) fn handmade_producer() -> Producer {
    Producer {
        pointer_width: 8,
        arch: "x86_64".to_owned(),
        os: "linux".to_owned(),
        pid: 4242,
        program: "handmade".to_owned(),
        host: "handmade-host".to_owned(),
        start_wall_ns: 1_700_000_000_456_790_122,
    }
}

/// A closed ring file in `order` (one slot of 2 blocks, thread 1) whose block 0 is
/// [`damaged_records_block`]: what `print` and `follow` read from a ring file.
pub(crate) fn damaged_records_ring(path: &Path, order: Order) {
    handmade_ring(path, order, &[&damaged_records_block(order, 0)], 0, 0);
}

/// A closed ring file in `order` with [`HANDMADE_DEF`]'s set and one slot (thread 1) of two
/// 1 KiB blocks: `blocks` at sequences 0, 1.. as given, the last being written, committed up to
/// its end; the slot's `refused` and page 0's `lost` as given.
pub(crate) fn handmade_ring(path: &Path, order: Order, blocks: &[&[u8]], refused: u64, lost: u64) {
    use event_format::ring::{self, Layout};
    let (schema, _, _) = handmade_schema();
    let mut header = Header::with_sets(wire_is_own(schema), 1024, handmade_clock(), handmade_producer());
    header.order = order;
    let header = header.encode().unwrap();
    let layout = Layout {
        order,
        version: event_format::schema::Version::new(1, 0, 2),
        block_size: 1024,
        slots: 1,
        blocks_per_slot: 2,
        header_len: header.len() as u32,
        pid: 4242,
        created_ns: 0,
        pin_half: 0,
    };
    let mut file = vec![0u8; layout.file_len() as usize];
    file[..raw::at::CRC + 4].copy_from_slice(&layout.encode());
    order.put_u32(&mut file[raw::at::STATE..], ring::STATE_CLOSED);
    order.put_u64(&mut file[raw::at::LOST..], lost);
    let at = layout.stream_header() as usize;
    file[at..at + header.len()].copy_from_slice(&header);
    let slot = layout.slot(0) as usize;
    order.put_u64(&mut file[slot + raw::slot_at::THREAD..], 1);
    order.put_u64(&mut file[slot + raw::slot_at::REFUSED..], refused);
    let (last, current) = (blocks.len() - 1, blocks[blocks.len() - 1]);
    let end = event_format::wire::BLOCK_HEADER_LEN as u32 + BlockHeader::read(order, current).used;
    order.put_u64(&mut file[slot + raw::slot_at::POSITION..], raw::position(last as u64, end));
    for (seq, block) in blocks.iter().enumerate() {
        let b = layout.block(0, seq as u32) as usize;
        file[b..b + block.len()].copy_from_slice(block);
    }
    std::fs::write(path, file).unwrap();
}

/// The one set of a handmade log, its wire codes equal to its own codes (its codes run on
/// from the first, in declaration order), so that a handmade record's code is the event's.
pub(crate) fn wire_is_own(schema: event_format::schema::Schema) -> Vec<event_format::wire::SetEntry> {
    let first = schema.events.first().map_or(0, |e| e.code);
    assert!(schema.events.iter().enumerate().all(|(j, e)| usize::from(e.code) == usize::from(first) + j));
    vec![event_format::wire::SetEntry::new(schema, first)]
}

/// The first set of [`two_sets_log`]: an application's.
pub(crate) const APP_DEF: &str = r#"VERSION(1, 2, 0)
SET(app)
KIND(Req, "requests")
KIND(Pool, "the app's pools")
RELATION(ReqStart, 0x0001, TRUE, Req, WS, id, path)
RELATION(ReqDone, 0x0002, TRUE, Req, WU, id, status)
RELATION(PoolInit, 0x0003, TRUE, Pool, P, pool)
"#;

/// The second set of [`two_sets_log`]: a library's, which reuses the app's codes, its kind
/// `Pool` and its event name `PoolInit` with another format; its set name holds a `-`.
pub(crate) const STORAGE_DEF: &str = r#"VERSION(2, 0, 1)
SET("storage-v2")
KIND(Page, "pages")
KIND(Pool, "the buffer pool")
RELATION(PageWrite, 0x0001, TRUE, Page, WD, page, latency)
RELATION(PoolInit, 0x0002, TRUE, Pool, PW, pool, frames)
RELATION(FlushBegin, 0x0003, FALSE, Page, W, pages)
RELATION(FlushEnd, 0x0004, FALSE, Page, W, pages)
"#;

/// A stream of two sets ([`APP_DEF`] and [`STORAGE_DEF`], wire codes 1.. and 4..) written
/// here in `order`: on thread 1 (named `main`), requests, both sets' `PoolInit`, a storage
/// `FlushBegin`/`FlushEnd` slice around `PageWrite`s; on thread 2 (named `io`), in a second
/// block, `PageWrite`s and the app's `ReqDone`. The checked-in tests/data/sets/ streams.
pub(crate) fn two_sets_log(path: &Path, order: Order) {
    let app = event_format::def::parse(APP_DEF, "app.def").unwrap();
    let storage = event_format::def::parse(STORAGE_DEF, "storage.def").unwrap();
    let sets = event_format::wire::SetEntry::assign([app, storage]);
    let producer = Producer { program: "two-sets".to_owned(), ..handmade_producer() };
    let mut header = Header::with_sets(sets, 1024, handmade_clock(), producer);
    header.order = order;
    // Frozen as checked in (tests/data/sets): a stream of format 2.0.1.
    header.format = event_format::schema::Version::new(2, 0, 1);
    let mut bytes = header.encode().unwrap();
    let wire = |set: usize, code: u16| header.sets[set].wire_code_of(code).unwrap();
    let (app, storage) = (0, 1);
    let t0 = handmade_clock().start_ticks;
    let s = |text: &'static str| Value::Str(Text::new(text));
    let mut one = BlockWriter::new(order, 1024, &BlockHeader { thread: 1, base_time: t0, ..Default::default() });
    let rows: Vec<(u16, u64, Vec<Value<'_>>)> = vec![
        (event_format::builtin::THREAD_NAME, t0 + 1, vec![Value::Word(1), s("main")]),
        (wire(app, 0x0001), t0 + 3_000, vec![Value::Word(7), s("/index")]),
        (wire(app, 0x0003), t0 + 3_100, vec![Value::Pointer(0x1000)]),
        (wire(storage, 0x0002), t0 + 3_200, vec![Value::Pointer(0x2000), Value::Word(64)]),
        (wire(storage, 0x0003), t0 + 6_000, vec![Value::Word(2)]),
        (wire(storage, 0x0001), t0 + 6_300, vec![Value::Word(11), Value::Double(0.5)]),
        (wire(storage, 0x0001), t0 + 6_600, vec![Value::Word(12), Value::Double(0.25)]),
        (wire(storage, 0x0004), t0 + 9_000, vec![Value::Word(2)]),
    ];
    for (code, time, values) in &rows {
        one.push(*code, *time, values).unwrap();
    }
    bytes.extend(one.finish());
    let mut two = BlockWriter::new(order, 1024, &BlockHeader { thread: 2, base_time: t0, ..Default::default() });
    two.push(event_format::builtin::THREAD_NAME, t0 + 2, &[Value::Word(2), s("io")]).unwrap();
    two.push(wire(storage, 0x0001), t0 + 4_000, &[Value::Word(13), Value::Double(1.5)]).unwrap();
    two.push(wire(storage, 0x0001), t0 + 7_000, &[Value::Word(14), Value::Double(2.0)]).unwrap();
    two.push(wire(app, 0x0002), t0 + 12_000, &[Value::Word(7), Value::Unsigned(200)]).unwrap();
    bytes.extend(two.finish());
    end_with_stop(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

/// Ends the stream `bytes` as a writer that stops cleanly does (format 2.0.1, docs/FORMAT.md
/// "The clean stop"): a block of thread 0 with the `Stop` record counting the blocks, records
/// (every record the walk yields, as the recorder counts them) and losses before it.
pub(crate) fn end_with_stop(bytes: &mut Vec<u8>) {
    end_with_stop_counting(bytes, Counting::Records);
}

/// What a hand-made stop marker counts as its `events`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counting {
    /// Every record other than `TimeExtend` and `Stop`: what docs/FORMAT.md says and the
    /// recorder writes.
    Records,
    /// Decoded events only: what this helper wrote before the rule was made precise (issue
    /// 30, S1), kept so that it still makes the checked-in `tests/data/damaged/` streams
    /// byte for byte (their marker says 5 where their records are 6).
    Events,
}

/// [`end_with_stop`], the marker's `events` counted as `counting` says.
pub(crate) fn end_with_stop_counting(bytes: &mut Vec<u8>, counting: Counting) {
    use event_format::decode::{Catalog, Decoder, Entry};
    use event_format::raw::stop_block_of;
    use event_format::wire::{Stop, Value};
    let mut decoder = Decoder::new(&bytes[..]).unwrap();
    let header = decoder.header().clone();
    let catalog = Catalog::new(&header.sets);
    let (mut stop, mut time, mut sequence) = (Stop::default(), 0, 0);
    for block in decoder.by_ref().flatten() {
        stop.blocks += 1;
        stop.lost += block.header.lost;
        if block.header.thread == 0 {
            sequence = sequence.max(block.header.sequence + 1);
        }
        if counting == Counting::Records {
            stop.events += block.records().flatten().count() as u64;
        }
        for entry in block.entries(&catalog) {
            if let Entry::Event(e) = entry {
                if counting == Counting::Events {
                    stop.events += 1;
                }
                time = time.max(e.time);
                if e.desc.code == event_format::builtin::DROPPED
                    && let Some(Value::Word(n)) = e.values().nth(1)
                {
                    stop.lost += n;
                }
            }
        }
    }
    bytes.extend(stop_block_of(header.format, header.order, header.block_size, sequence, time, &stop));
}

/// The schema of [`migrating_jobs_log`]: jobs paired by `id` across threads, and steps
/// without one, paired on their thread.
pub(crate) const JOBS_DEF: &str = r#"VERSION(1, 0, 0)
KIND(Job, "jobs of a pool of threads")
RELATION(JobBegin, 0x0001, TRUE, Job, WUS, id, worker, what)
RELATION(JobEnd, 0x0002, TRUE, Job, WBD, id, ok, ratio)
RELATION(StepBegin, 0x0003, TRUE, Job, U, n)
RELATION(StepEnd, 0x0004, TRUE, Job, U, n)
"#;

/// How many jobs [`migrating_jobs_log`] holds.
pub(crate) const JOBS: u64 = 200;

/// When job `j` of [`migrating_jobs_log`] begins and ends (ns since the start), on which
/// thread each (1 to 4): it begins on thread `j % 4 + 1` and ends on the next one, after
/// jobs `j + 1` to `j + 3` have begun.
pub(crate) fn job_times(j: u64) -> (u64, u64, u64, u64) {
    let begin = 1_000 + 10 * j;
    (begin, begin + 35 + (j % 7) * 3, j % 4 + 1, (j + 1) % 4 + 1)
}

/// A stream written here in which tasks migrate between threads, as those of an async
/// runtime do: [`JOBS`] jobs, each `JobBegin(id)` on one thread and `JobEnd(id)` on another
/// ([`job_times`]), interleaved; each thread also nests a `StepBegin`/`StepEnd` (no `id`)
/// around its events. Thread 2 is named `compactor`, the others `worker-N`; `JobEnd`'s `ok`
/// is true for even ids, its `ratio` `id / 4`; `JobBegin`'s `what` is `job "N"`. Blocks of
/// 1 KiB, a clock of 1 tick per ns, so that times are exact.
pub(crate) fn migrating_jobs_log(path: &Path) {
    let schema = event_format::def::parse(JOBS_DEF, "jobs.def").unwrap();
    let clock = Clock {
        source: ClockSource::Tsc,
        ticks_per_second: 1_000_000_000,
        ref_ticks: 0,
        ref_wall_ns: 1_700_000_000_000_000_000,
        start_ticks: 0,
    };
    let header = Header::with_sets(wire_is_own(schema), 1024, clock, handmade_producer());
    let mut bytes = header.encode().unwrap();
    let mut per_thread: Vec<Vec<(u64, u16, Vec<Value<'static>>)>> = vec![Vec::new(); 5];
    let whats: Vec<String> = (0..JOBS).map(|j| format!("job \"{j}\"")).collect();
    let whats: &'static [String] = whats.leak();
    for t in 1..=4u64 {
        let name = if t == 2 { "compactor".to_owned() } else { format!("worker-{t}") };
        let name: &'static str = name.leak();
        per_thread[t as usize].push((
            1,
            event_format::builtin::THREAD_NAME,
            vec![Value::Word(t), Value::Str(Text::new(name))],
        ));
        per_thread[t as usize].push((2, 0x0003, vec![Value::Unsigned(t as u32)]));
        per_thread[t as usize].push((1_000_000, 0x0004, vec![Value::Unsigned(t as u32)]));
    }
    for j in 0..JOBS {
        let (begin, end, on, off) = job_times(j);
        let what = Value::Str(Text::new(&whats[j as usize]));
        per_thread[on as usize].push((begin, 0x0001, vec![Value::Word(j), Value::Unsigned(on as u32), what]));
        let ratio = Value::Double(j as f64 / 4.0);
        per_thread[off as usize].push((end, 0x0002, vec![Value::Word(j), Value::Bool(j % 2 == 0), ratio]));
    }
    for (t, events) in per_thread.iter_mut().enumerate().skip(1) {
        events.sort_by_key(|e| e.0);
        let mut sequence = 0;
        let mut block: Option<BlockWriter> = None;
        for (time, code, values) in events.iter() {
            loop {
                let writer = block.get_or_insert_with(|| {
                    let header = BlockHeader { thread: t as u64, sequence, base_time: *time, ..Default::default() };
                    BlockWriter::new(Order::NATIVE, 1024, &header)
                });
                if writer.push(*code, *time, values).is_ok() {
                    break;
                }
                bytes.extend(block.take().unwrap().finish());
                sequence += 1;
            }
        }
        if let Some(writer) = block {
            bytes.extend(writer.finish());
        }
    }
    end_with_stop(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

/// The size of a segment in [`meanings_log`].
pub(crate) const SEGMENT: u64 = 65_536;

/// The test program of what events.def declares (its `SPAN`, `COUNTER` and `FLOW` lines),
/// recorded here: four workers, one after the other, each with nested `Sweep` spans (their
/// durations differing by worker), `SegAlloc`s that begin `Segment` spans ended by the next
/// worker's `SegFree`s (async spans that migrate between threads), `ArenaPoll` samples of
/// the `committed` and `load` counters on every thread, and a `PoolFinish` that begins the
/// `release` flow its segments' `SegFree`s step through, on the next thread. The main thread
/// begins with an end never begun of each kind (`SweepEnd`, `SegFree`), frees the last
/// worker's segments but one (never ended), and ends with a `Sweep` never ended.
pub(crate) fn meanings_log(path: &Path) {
    program_log(path, true);
}

/// [`meanings_log`] with its spans never ended and ends never begun (`loose`), or without:
/// every span ends, and a thread's spans nest.
pub(crate) fn program_log(path: &Path, loose: bool) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let recording = Recorder::new().file(path).block_size(1024).deterministic_clock().start().unwrap();
    let arena = 0x7f00_0000_1000usize;
    event_runtime::label(arena, "the arena");
    event!(ArenaCreate, arena, arena, 1u64 << 24);
    if loose {
        event!(SweepEnd, 0x1usize, 0u64, false);
        event!(SegFree, 0xdead_0000usize, 0x1usize, SEGMENT);
    }
    let mut handed: Vec<(usize, usize)> = Vec::new();
    let mut committed = 0u64;
    for w in 0..4u64 {
        let previous = std::mem::take(&mut handed);
        let mut used = committed;
        let (mine, now) = std::thread::Builder::new()
            .name(format!("worker-{w}"))
            .spawn(move || {
                let pool = 0x1000 + w as usize;
                event!(PoolInit, pool, arena, "AMC", 16u32);
                for (seg, owner) in previous {
                    event!(SegFree, seg, owner, SEGMENT);
                    used -= SEGMENT;
                }
                event!(SweepBegin, pool, 1u64, "outer");
                for i in 0..3 * w + 2 {
                    event!(ObjectAlloc, pool, 0x2000 + i as usize, 16 * i, 1u32);
                }
                event!(SweepBegin, pool, 2u64, "inner");
                for _ in 0..w {
                    event!(SweepReclaim, pool, 2u64, 48u64, -1);
                }
                event!(SweepEnd, pool, 2u64, true);
                event!(SweepEnd, pool, 1u64, true);
                let mut mine = Vec::new();
                for k in 0..=w as usize {
                    let seg = 0x10_0000 * (w as usize + 1) + 0x1_0000 * k;
                    event!(SegAlloc, seg, pool, seg as u64, SEGMENT);
                    used += SEGMENT;
                    event!(ArenaPoll, arena, used, used as f64 / (1u64 << 24) as f64);
                    mine.push((seg, pool));
                }
                event!(PoolFinish, pool, 0u64);
                (mine, used)
            })
            .unwrap()
            .join()
            .unwrap();
        handed = mine;
        committed = now;
    }
    if loose {
        handed.pop();
    }
    for (seg, owner) in handed {
        event!(SegFree, seg, owner, SEGMENT);
        committed -= SEGMENT;
    }
    event!(ArenaPoll, arena, committed, committed as f64 / (1u64 << 24) as f64);
    if loose {
        event!(SweepBegin, 0x1usize, 9u64, "never ends");
    }
    event!(ClientMark);
    event!(ArenaDestroy, arena, committed);
    recording.stop().unwrap();
}

/// A log written byte by byte: a set that declares `sizes` (a parameter's histogram, HDR2)
/// and `req_ns` (a span's), with `Histogram` records of two threads and one of thread 0; the
/// header's labels `labels`, and a `Suppressed` record for each (thread, wire code, count)
/// of `suppressed` (code 1 is `K.Size`), after the histograms.
pub(crate) fn histogram_log(path: &Path, labels: &[(&str, &str)], suppressed: &[(u64, u16, u64)]) {
    let schema = event_format::def::parse(
        "SET(h)\nVERSION(1, 0, 0)\nKIND(K)\nRELATION(Size, 1, TRUE, K, W, size)\n\
         RELATION(ReqBegin, 2, TRUE, K, 0)\nRELATION(ReqEnd, 3, TRUE, K, 0)\nSPAN(req, ReqBegin, ReqEnd)\n\
         HISTOGRAM(sizes, Size, size, HDR2)\nHISTOGRAM(req_ns, req, LOG2)\n",
        "h.def",
    )
    .unwrap();
    let mut header = Header::new(schema, 1024, handmade_clock(), handmade_producer());
    header.order = Order::Little;
    header.properties.labels = labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    let mut out = header.encode().unwrap();
    let hist = |thread: u64, h: u32, count, sum, min, max, text: &'static str| {
        vec![
            Value::Word(thread),
            Value::Unsigned(h),
            Value::Word(1000),
            Value::Word(count),
            Value::Word(sum),
            Value::Word(min),
            Value::Word(max),
            Value::Str(Text::new(text)),
        ]
    };
    let mut b =
        BlockWriter::new(Order::Little, 1024, &BlockHeader { thread: 0, base_time: 5000, ..Default::default() });
    // sizes (HDR2): thread 1 counted 1, 5, 5 and 100; thread 2 counted 6 and 7.
    b.push(event_format::builtin::HISTOGRAM, 5000, &hist(1, 0, 4, 111, 1, 100, "1:1 5:2 22:1")).unwrap();
    b.push(event_format::builtin::HISTOGRAM, 5000, &hist(2, 0, 2, 13, 6, 7, "6:1 7:1")).unwrap();
    // req_ns (LOG2): thread 1's one request of 3 µs.
    b.push(event_format::builtin::HISTOGRAM, 6000, &hist(1, 1, 1, 3000, 3000, 3000, "12:1")).unwrap();
    for &(thread, code, count) in suppressed {
        let values =
            [Value::Word(thread), Value::Unsigned(u32::from(code)), Value::Word(count), Value::Word(1_000_000)];
        b.push(event_format::builtin::SUPPRESSED, 7000, &values).unwrap();
    }
    out.extend(b.finish());
    end_with_stop(&mut out);
    std::fs::write(path, out).unwrap();
}
