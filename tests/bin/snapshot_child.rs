//! A program that takes snapshots of its rings (issue 32), for tests/it/snapshots.rs.
//! `snapshot-child MODE ARGS...`; settings not in the arguments come from the `EVENT_*`
//! environment variables.
//!
//! - `demand OUT THREADS N`: records, under `ring` in memory (256 KiB), N numbered
//!   events (`ArenaDestroy(thread, i)`) on each of THREADS threads (`worker-0`, ...), joins
//!   them, then writes a snapshot to OUT with `Recording::snapshot` and prints `snapshot
//!   EVENTS THREADS`, records one more event and stops.
//! - `stress DIR ROUNDS`: while rounds of 4 threads start, each record 500 numbered events
//!   and exit, the main thread takes snapshots into DIR (`s-1.evt`, ...) as fast as it can;
//!   once every thread has ended it takes a last one (`last.evt`) and prints `snapshots N`.
//!   The rings hold every event (nothing is overwritten).
//! - `trigger N AT`: under `ring` in memory, 64 KiB (`EVENT_TRIGGER` and
//!   `EVENT_SNAPSHOT` from the environment), `worker-0` records N numbered events and, right
//!   after number AT, `ClientPhase("incident", AT, 0)`; then the recording stops.
//! - `hot M`: as `trigger`, the main thread records M events `ClientPhase("hot", i, 0)` in a
//!   loop; then the recording stops.
//! - `full LIMIT OUT`: as `demand` with 3 threads of 20 000 events, but the files this
//!   process writes are limited to LIMIT bytes (RLIMIT_FSIZE, SIGXFSZ ignored: the disk is full
//!   from the recorder's point of view): prints `no snapshot: ERROR`, records on, stops and
//!   prints `stopped` (exit 0).
//! - `panic`: as `trigger` (`EVENT_TRIGGER=panic`), `worker-0` records 100 numbered events
//!   and panics; the main thread records on and stops (exit 0).
//! - `lost RING`: records into the ring file RING with one slot: the main thread records 10
//!   numbered events (it has the slot), `worker-1` 10 (it finds no slot: they are lost); then
//!   the recording stops (exit 0).
//! - `pin OUT`: as `trigger` (`EVENT_PIN` from the environment), the main thread records
//!   `ClientPhase("config", 42, 0)`, then 20 000 numbered events (its ring goes round), and
//!   writes a snapshot to OUT.
//! - `pin-ring RING`: records into the ring file RING (policy `ring`, 4 KiB blocks, 8 a
//!   slot; `EVENT_PIN` from the environment): `worker-0` records `ClientPhase("config", 42,
//!   0)`, then 20 000 numbered events (its ring goes round many times), then
//!   `ClientPhase("phase", 7, 1)` and 20 000 more; prints `ready` and waits to be killed
//!   (`kill -9`), never stopping the recording. With LIMIT (`pin-ring RING LIMIT`), the
//!   process's files are limited to LIMIT bytes first (RLIMIT_FSIZE, SIGXFSZ ignored).
//! - `flat N AT`: under `ring` (the defaults: 16 MiB in memory, `EVENT_RING` may name a ring
//!   file; `EVENT_TRIGGER` and `EVENT_SNAPSHOT` from the environment), `worker-0` and
//!   `worker-1` each record N numbered events as fast as they can, at once; `worker-0` records
//!   `ClientPhase("incident", AT, 0)` right after its number AT. Then the recording stops.
//! - `service N AT`: starts recording as the environment says (`event_runtime::start`: the
//!   test streams into segments under a budget, with a trigger and a pin); the main thread
//!   records `PoolInit(1, 2, "config", 42)` and flushes, then `worker-0` and `worker-1` each record N
//!   numbered events (a pause of a millisecond every 256), `worker-0` with
//!   `ClientPhase("incident", AT, 0)` right after its number AT; then the recording stops.
//! - `hold-ring PATH N`: records into the ring file PATH (policy `ring`), N numbered events
//!   on a thread `worker-0` that then waits; prints `ready`, and stops when its standard
//!   input ends.

event_runtime::include_events!("../events.def");

use event_runtime::{Policy, Recorder};
use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_else(|| usage());
    let number = |i: usize| arg(i).parse::<u64>().unwrap_or_else(|_| usage());
    match arg(0).as_str() {
        "demand" => demand(&arg(1), number(2), number(3)),
        "stress" => stress(&arg(1), number(2)),
        "hold-ring" => hold_ring(&arg(1), number(2)),
        "trigger" => trigger(number(1), number(2)),
        "flat" => flat(number(1), number(2)),
        "service" => service(number(1), number(2)),
        "hot" => hot(number(1)),
        "full" => full(number(1), &arg(2)),
        "panic" => panic_mode(),
        "lost" => lost(&arg(1)),
        "pin" => pin(&arg(1)),
        "pin-ring" => pin_ring(&arg(1), args.get(2).map(|l| l.parse().unwrap_or_else(|_| usage()))),
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: snapshot-child demand OUT THREADS N | stress DIR ROUNDS | hold-ring PATH N | trigger N AT | flat N AT | service N AT | hot M | full LIMIT OUT | panic | lost RING | pin OUT | pin-ring RING [LIMIT]"
    );
    std::process::exit(2)
}

fn fail(e: &dyn std::fmt::Display) -> ! {
    eprintln!("snapshot-child: {e}");
    std::process::exit(1)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Records `n` numbered events on a thread named `worker-{w}`, and joins it.
fn worker(w: u64, n: u64) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(format!("worker-{w}"))
        .spawn(move || {
            for i in 0..n {
                event!(ArenaDestroy, w as usize, i);
            }
        })
        .unwrap_or_else(|e| fail(&e))
}

fn demand(out: &str, threads: u64, n: u64) {
    let recording = Recorder::new()
        .policy(Policy::Ring)
        .block_size(4096)
        .buffer_size(256 << 10)
        .from_env()
        .unwrap_or_else(|e| fail(&e))
        .start()
        .unwrap_or_else(|e| fail(&e));
    let handles: Vec<_> = (0..threads).map(|w| worker(w, n)).collect();
    for h in handles {
        h.join().unwrap_or_else(|_| fail(&"a worker panicked"));
    }
    let taken = recording.snapshot(out).unwrap_or_else(|e| fail(&e));
    say(&format!("snapshot {} {}", taken.events, taken.threads));
    event!(ArenaDestroy, 0usize, u64::MAX);
    recording.stop().unwrap_or_else(|e| fail(&e));
}

fn stress(dir: &str, rounds: u64) {
    let recording = Recorder::new()
        .policy(Policy::Ring)
        .block_size(4096)
        .buffer_size(64 << 20)
        .ring_threads(4 * rounds as u32 + 4)
        .from_env()
        .unwrap_or_else(|e| fail(&e))
        .start()
        .unwrap_or_else(|e| fail(&e));
    let done = std::sync::atomic::AtomicBool::new(false);
    let mut taken = 0u64;
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 0..rounds {
                let handles: Vec<_> = (0..4).map(|w| worker(round * 4 + w, 500)).collect();
                for h in handles {
                    h.join().unwrap_or_else(|_| fail(&"a worker panicked"));
                }
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        });
        while !done.load(std::sync::atomic::Ordering::Acquire) {
            taken += 1;
            recording.snapshot(format!("{dir}/s-{taken}.evt")).unwrap_or_else(|e| fail(&e));
        }
    });
    recording.snapshot(format!("{dir}/last.evt")).unwrap_or_else(|e| fail(&e));
    say(&format!("snapshots {taken}"));
    recording.stop().unwrap_or_else(|e| fail(&e));
}

fn hold_ring(path: &str, n: u64) {
    let recording = Recorder::new()
        .policy(Policy::Ring)
        .ring_file(path)
        .block_size(4096)
        .buffer_size(1 << 20)
        .ring_threads(4)
        .from_env()
        .unwrap_or_else(|e| fail(&e))
        .start()
        .unwrap_or_else(|e| fail(&e));
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (recorded_tx, recorded) = std::sync::mpsc::channel::<()>();
    let handle = std::thread::Builder::new()
        .name("worker-0".into())
        .spawn(move || {
            for i in 0..n {
                event!(ArenaDestroy, 0usize, i);
            }
            // Every event committed: a thread's records are in the ring file as it commits
            // them. Then alive, with its slot, until the end.
            let _ = recorded_tx.send(());
            let _ = rx.recv();
        })
        .unwrap_or_else(|e| fail(&e));
    let _ = recorded.recv();
    say("ready");
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
        line.clear();
    }
    drop(tx);
    handle.join().unwrap_or_else(|_| fail(&"the worker panicked"));
    recording.stop().unwrap_or_else(|e| fail(&e));
}

/// The recorder of `trigger` and `hot`: `ring` in memory, 64 KiB that the threads' rings
/// share (one thread that records alone has it all).
fn small_rings() -> event_runtime::Recording {
    Recorder::new()
        .policy(Policy::Ring)
        .block_size(4096)
        .buffer_size(64 << 10)
        .from_env()
        .unwrap_or_else(|e| fail(&e))
        .start()
        .unwrap_or_else(|e| fail(&e))
}

fn trigger(n: u64, at: u64) {
    let recording = small_rings();
    std::thread::Builder::new()
        .name("worker-0".into())
        .spawn(move || {
            for i in 0..n {
                event!(ArenaDestroy, 0usize, i);
                if i == at {
                    event!(ClientPhase, "incident", at, 0);
                }
            }
        })
        .unwrap_or_else(|e| fail(&e))
        .join()
        .unwrap_or_else(|_| fail(&"the worker panicked"));
    recording.stop().unwrap_or_else(|e| fail(&e));
}

fn flat(n: u64, at: u64) {
    let recording = Recorder::new()
        .policy(Policy::Ring)
        .from_env()
        .unwrap_or_else(|e| fail(&e))
        .start()
        .unwrap_or_else(|e| fail(&e));
    let go = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        for w in 0..2u64 {
            let go = &go;
            std::thread::Builder::new()
                .name(format!("worker-{w}"))
                .spawn_scoped(s, move || {
                    go.wait();
                    for i in 0..n {
                        event!(ArenaDestroy, w as usize, i);
                        if w == 0 && i == at {
                            event!(ClientPhase, "incident", at, 0);
                        }
                    }
                })
                .unwrap_or_else(|e| fail(&e));
        }
    });
    recording.stop().unwrap_or_else(|e| fail(&e));
}

fn service(n: u64, at: u64) {
    let recording = event_runtime::start().unwrap_or_else(|e| fail(&e)).unwrap_or_else(|| fail(&"not recording"));
    event!(PoolInit, 1usize, 2usize, "config", 42u32);
    // Its block in the first segment now (the writer's idle flush would put it there within
    // two seconds).
    event_runtime::flush();
    std::thread::scope(|s| {
        for w in 0..2u64 {
            std::thread::Builder::new()
                .name(format!("worker-{w}"))
                .spawn_scoped(s, move || {
                    for i in 0..n {
                        event!(ArenaDestroy, w as usize, i);
                        if w == 0 && i == at {
                            event!(ClientPhase, "incident", at, 0);
                        }
                        if i % 256 == 255 {
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                    }
                })
                .unwrap_or_else(|e| fail(&e));
        }
    });
    recording.stop().unwrap_or_else(|e| fail(&e));
}

fn hot(m: u64) {
    let recording = small_rings();
    for i in 0..m {
        event!(ClientPhase, "hot", i, 0);
    }
    recording.stop().unwrap_or_else(|e| fail(&e));
}

fn full(limit: u64, out: &str) {
    let recording = Recorder::new()
        .policy(Policy::Ring)
        .block_size(4096)
        .buffer_size(1 << 20)
        .from_env()
        .unwrap_or_else(|e| fail(&e))
        .start()
        .unwrap_or_else(|e| fail(&e));
    let handles: Vec<_> = (0..3).map(|w| worker(w, 20_000)).collect();
    for h in handles {
        h.join().unwrap_or_else(|_| fail(&"a worker panicked"));
    }
    let bytes = limit as libc::rlim_t;
    // SAFETY: ignoring SIGXFSZ and setting a resource limit from a valid struct have no
    // other preconditions.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let limit = libc::rlimit { rlim_cur: bytes, rlim_max: libc::RLIM_INFINITY };
        if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
            fail(&std::io::Error::last_os_error());
        }
    }
    match recording.snapshot(out) {
        Ok(taken) => say(&format!("snapshot {}", taken.events)),
        Err(e) => say(&format!("no snapshot: {e}")),
    }
    for i in 0..1000u64 {
        event!(ArenaDestroy, 9usize, i);
    }
    recording.stop().unwrap_or_else(|e| fail(&e));
    say("stopped");
}

fn panic_mode() {
    let recording = small_rings();
    let worker = std::thread::Builder::new()
        .name("worker-0".into())
        .spawn(|| {
            for i in 0..100u64 {
                event!(ArenaDestroy, 0usize, i);
            }
            panic!("the incident");
        })
        .unwrap_or_else(|e| fail(&e));
    assert!(worker.join().is_err(), "the worker panicked");
    event!(ArenaDestroy, 1usize, 0u64);
    recording.stop().unwrap_or_else(|e| fail(&e));
}

fn lost(ring: &str) {
    let recording = Recorder::new()
        .policy(Policy::Ring)
        .ring_file(ring)
        .block_size(4096)
        .buffer_size(1 << 20)
        .ring_threads(1)
        .from_env()
        .unwrap_or_else(|e| fail(&e))
        .start()
        .unwrap_or_else(|e| fail(&e));
    for i in 0..10u64 {
        event!(ArenaDestroy, 0usize, i);
    }
    worker(1, 10).join().unwrap_or_else(|_| fail(&"the worker panicked"));
    recording.stop().unwrap_or_else(|e| fail(&e));
}

fn pin(out: &str) {
    let recording = small_rings();
    event!(ClientPhase, "config", 42u64, 0);
    for i in 0..20_000u64 {
        event!(ArenaDestroy, 0usize, i);
    }
    recording.snapshot(out).unwrap_or_else(|e| fail(&e));
    recording.stop().unwrap_or_else(|e| fail(&e));
}

fn pin_ring(ring: &str, limit: Option<u64>) {
    if let Some(bytes) = limit {
        // SAFETY: ignoring SIGXFSZ and setting a resource limit from a valid struct have no
        // other preconditions.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: libc::RLIM_INFINITY };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                fail(&std::io::Error::last_os_error());
            }
        }
    }
    let _recording = Recorder::new()
        .policy(Policy::Ring)
        .ring_file(ring)
        .block_size(4096)
        .buffer_size(32 << 10)
        .ring_threads(4)
        .from_env()
        .unwrap_or_else(|e| fail(&e))
        .start()
        .unwrap_or_else(|e| fail(&e));
    std::thread::Builder::new()
        .name("worker-0".into())
        .spawn(|| {
            event!(ClientPhase, "config", 42u64, 0);
            for i in 0..20_000u64 {
                event!(ArenaDestroy, 0usize, i);
            }
            event!(ClientPhase, "phase", 7u64, 1);
            for i in 20_000..40_000u64 {
                event!(ArenaDestroy, 0usize, i);
            }
        })
        .unwrap_or_else(|e| fail(&e))
        .join()
        .unwrap_or_else(|_| fail(&"the worker panicked"));
    say("ready");
    // Killed here: the recording never stops.
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}
