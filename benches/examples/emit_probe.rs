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
//! `emit_probe N steady W` records W events and flushes, then times N more and prints their
//! cost per event, by the wall clock and by the thread's own CPU time (which leaves out the
//! time another thread took its core): a steady state to compare configurations in, e.g.
//! `EVENT_FILE=/tmp/p.evt EVENT_BUFSIZE=256m emit_probe 7000000 steady 8388608` against the
//! same under `taskset -c 0` (the writer thread confined to the recording thread's core).

event_runtime::include_events!("bench.def");

use std::hint::black_box;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).expect("usage: emit_probe N [off | steady W]");
    let mode = args.next();
    let off = mode.as_deref() == Some("off");
    let steady: Option<u64> =
        if mode.as_deref() == Some("steady") { args.next().and_then(|a| a.parse().ok()) } else { None };
    let recording = event_runtime::Recorder::new()
        .control("all -Off")
        .from_env()
        .expect("the EVENT_* settings")
        .start()
        .expect("the probe's recording starts");
    if off {
        word3_off(n);
    } else if let Some(w) = steady {
        word3(w);
        event_runtime::flush();
        let cpu = thread_cpu();
        let t = std::time::Instant::now();
        word3(n);
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        let cpu_ns = (thread_cpu() - cpu) as f64 / n as f64;
        eprintln!("{ns:.2} ns/event wall, {cpu_ns:.2} ns/event on the thread's CPU time");
    } else {
        word3(n);
    }
    recording.stop().expect("the probe's recording stops");
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

/// `n` events `OffWord3` (a disabled kind).
#[inline(never)]
fn word3_off(n: u64) {
    for i in 0..n {
        event!(OffWord3, black_box(i), i + 1, i + 2);
    }
}

/// This thread's CPU time, in nanoseconds.
fn thread_cpu() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill; the clock id is a constant that
    // Linux supports (on failure `ts` stays zero, and the figure is wrong, not unsafe).
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
