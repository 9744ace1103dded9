//! A probe for instruction counts per event (callgrind, deterministic): records N `Word3`
//! events (or N of the disabled `OffWord3`) on the main thread of a recording configured by
//! the `EVENT_*` variables, and stops. The marginal cost per event is the difference between
//! two runs' counts divided by the difference of their N:
//!
//! ```text
//! cargo build --release -p event-benches --example emit_probe
//! for n in 200000 400000; do EVENT_POLICY=switch EVENT_FILE=/tmp/p.evt \
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n \
//!   target/release/examples/emit_probe $n; done
//! ```
//!
//! `emit_probe N off` records the disabled kind instead (`-Off` in the control selection).
//!
//! `emit_probe N floor PATH` runs the streaming floor instead (no recording: a thread
//! writing 32-byte records with the cycle counter into 64 KiB blocks of a 16 MiB pool that
//! another thread writes to PATH and gives back, as `compare`'s streaming floor). Under
//! callgrind with `--toggle-collect=emit_probe::word3 --toggle-collect=emit_probe::floor`,
//! only the recording thread's own loop (and what it calls) is counted, whatever the writer
//! thread does: instructions and, with `--cache-sim=yes`, the cache misses of its stores.
//!
//! `emit_probe N steady W` records W events and flushes, then times N more and prints their
//! cost per event, by the wall clock and by the thread's own CPU time (which leaves out the
//! time another thread took its core): a steady state to compare configurations in, e.g.
//! `EVENT_FILE=/tmp/p.evt EVENT_BUFSIZE=256m emit_probe 7000000 steady 8388608` against the
//! same under `taskset -c 0` (the writer thread confined to the recording thread's core).
//!
//! `emit_probe N cold KB` asks what an event costs in a service, where the program's own work
//! between two requests has pushed the recorder's state out of the caches: N times, it writes
//! to every cache line of KB KiB of its own, then times five events (`Word3`, enabled) with the
//! cycle counter, and alternately five of the disabled `OffWord3` after the same sweep; it
//! prints both per event and their difference (what an enabled event costs after the sweep),
//! and the same without the sweep.

event_runtime::include_events!("bench.def");

#[path = "../benches/shared/cpu_clock.rs"]
mod cpu_clock;

use cpu_clock::cpu_clock;
use std::hint::black_box;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).expect("usage: emit_probe N [off | steady W]");
    let mode = args.next();
    if mode.as_deref() == Some("floor") {
        let path = args.next().expect("usage: emit_probe N floor PATH");
        floor(n, std::path::Path::new(&path));
        return;
    }
    if mode.as_deref() == Some("cold") {
        let kb: usize = args.next().and_then(|a| a.parse().ok()).expect("usage: emit_probe N cold KB");
        let recording = start();
        for sweep in [kb, 0] {
            let (on, off) = cold(n, sweep << 10);
            eprintln!(
                "sweep {sweep} KiB: enabled {on:.1}, disabled {off:.1}, difference {:.1} ticks an event",
                on - off
            );
        }
        recording.stop().expect("the probe's recording stops");
        return;
    }
    let off = mode.as_deref() == Some("off");
    let steady: Option<u64> =
        if mode.as_deref() == Some("steady") { args.next().and_then(|a| a.parse().ok()) } else { None };
    let recording = start();
    if off {
        word3_off(n);
    } else if let Some(w) = steady {
        word3(w);
        event_runtime::flush();
        let cpu = cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID);
        let t = std::time::Instant::now();
        word3(n);
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        let cpu_ns = (cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID) - cpu) as f64 / n as f64;
        eprintln!("{ns:.2} ns/event wall, {cpu_ns:.2} ns/event on the thread's CPU time");
    } else {
        word3(n);
    }
    recording.stop().expect("the probe's recording stops");
}

/// The probe's recording: every kind but `Off`, configured by the `EVENT_*` variables.
fn start() -> event_runtime::Recording {
    event_runtime::Recorder::new()
        .control("all -Off")
        .from_env()
        .expect("the EVENT_* settings")
        .start()
        .expect("the probe's recording starts")
}

// Each loop is a function of its own, never inlined: what the compiler makes of a loop does
// not change with what else `main` holds.

/// `n` events `Word3`.
#[inline(never)]
fn word3(n: u64) {
    for i in 0..n {
        event!(Word3, black_box(i), i + 1, i + 2);
    }
}

/// The streaming floor: `n` 32-byte records with the cycle counter into blocks of a pool,
/// each full block handed to a thread that writes it to `path` and gives it back (most
/// recently given back first, as the recorder's pool).
#[inline(never)]
fn floor(n: u64, path: &std::path::Path) {
    use std::io::Write;
    const BLOCK: usize = 64 << 10;
    const BLOCKS: usize = 256;
    const LEN: usize = 32;
    let (full, to_write) = std::sync::mpsc::channel::<Box<[u8]>>();
    let (give_back, free) = std::sync::mpsc::channel::<Box<[u8]>>();
    let mut file = std::fs::File::create(path).expect("the floor's file");
    let writer = std::thread::spawn(move || {
        for block in to_write {
            file.write_all(&block).expect("the floor's file is written");
            let _ = give_back.send(block);
        }
    });
    let mut spare: Vec<Box<[u8]>> = (0..BLOCKS - 1).map(|_| vec![0u8; BLOCK].into_boxed_slice()).collect();
    let mut block = vec![0u8; BLOCK].into_boxed_slice();
    let (mut at, mut last) = (0, ticks());
    for i in 0..n {
        let now = ticks();
        if at + LEN > BLOCK {
            spare.extend(free.try_iter());
            let next = spare.pop().unwrap_or_else(|| free.recv().expect("the writer runs"));
            full.send(std::mem::replace(&mut block, next)).expect("the writer runs");
            at = 0;
        }
        let record = &mut block[at..at + LEN];
        record[..2].copy_from_slice(&3u16.to_ne_bytes());
        record[2..4].copy_from_slice(&(LEN as u16).to_ne_bytes());
        record[4..8].copy_from_slice(&(now.wrapping_sub(last) as u32).to_ne_bytes());
        for w in 0..3 {
            record[8 + 8 * w..16 + 8 * w].copy_from_slice(&black_box(i + w as u64).to_ne_bytes());
        }
        last = now;
        at += LEN;
    }
    drop(full);
    let _ = writer.join();
}

/// The cycle counter (the monotonic clock where there is none).
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `rdtsc` has no preconditions; it reads the time-stamp counter.
    unsafe {
        std::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::time::UNIX_EPOCH.elapsed().map_or(0, |d| d.as_nanos() as u64)
    }
}

/// `n` rounds of a sweep over `bytes` of the program's own memory, then five events timed by
/// the cycle counter, enabled and disabled in turn: ticks an event of each, on average.
#[inline(never)]
fn cold(n: u64, bytes: usize) -> (f64, f64) {
    let mut memory = vec![0u8; bytes.max(64)];
    let (mut on, mut off) = (0u64, 0u64);
    for i in 0..2 * n {
        for line in memory.chunks_mut(64) {
            line[0] = line[0].wrapping_add(1);
        }
        black_box(&mut memory);
        let start = ticks();
        if i % 2 == 0 {
            for k in 0..5u64 {
                event!(Word3, black_box(i), k, i + 2);
            }
            on += ticks() - start;
        } else {
            for k in 0..5u64 {
                event!(OffWord3, black_box(i), k, i + 2);
            }
            off += ticks() - start;
        }
    }
    (on as f64 / (5 * n) as f64, off as f64 / (5 * n) as f64)
}

/// `n` events `OffWord3` (a disabled kind).
#[inline(never)]
fn word3_off(n: u64) {
    for i in 0..n {
        event!(OffWord3, black_box(i), i + 1, i + 2);
    }
}
