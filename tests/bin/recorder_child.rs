//! A program that records, for the tests that need a process to kill, abort, panic or
//! follow. `recorder-child MODE ARGS...`; settings not in the arguments come from the
//! `EVENT_*` environment variables.
//!
//! - `ring PATH THREADS [BURST]`: records numbered events into the ring file PATH from
//!   THREADS threads (`worker-0`, ...), forever; prints `ready` once every thread has
//!   recorded. With BURST, each worker sleeps a millisecond after every BURST events.
//! - `panic-ring PATH THREADS DELAY_MS VICTIM [BURST]`: as `ring`; DELAY_MS after `ready`, worker
//!   VICTIM prints `panic after N events` (it recorded events 0..N) and panics; the main
//!   thread sees it and panics in turn, which drops (closes) the recording on its way out,
//!   while the other workers still record.
//! - `follow PATH THREADS N`: prints `ready` once recording, records N events per thread
//!   from THREADS threads, then stops and exits.
//! - `abort PATH N`: records N events to the event file PATH, then aborts.
//! - `abort-env N`: records N events as the environment says (`event_runtime::start`), then
//!   aborts.
//! - `panic N`: records N events into memory, then panics.
//! - `env`: starts recording as the environment says (`event_runtime::start`; nothing when
//!   it asks for nothing), records a few events and stops; a bad setting is reported on
//!   stderr with exit code 2.
//! - `hold N`: as `env`, but records N events, prints `ready`, and stops only when its
//!   standard input ends.
//! - `spawn N`: as `env`, but records N events, runs `recorder-child env` (which inherits
//!   the `EVENT_*` variables) to its end, then records N more and stops.
//! - `fork PATH THREADS N file|ring|off [return]`: records into the event file (or ring file)
//!   PATH from THREADS paced workers, and while they record, forks: the child records N
//!   numbered events as worker 1000 on the forking thread and N as worker 1001 on a thread of
//!   its own, then stops its recording (exit 3 if that fails) and exits 0; with `return`, it
//!   returns from `main` instead, which drops the `Recording` it inherited from its parent's
//!   `main`. `off`: an event file, and children record nothing. The parent prints `child PID
//!   STATUS` once the child ended, then stops its workers and its recording.
//! - `go-on N`: starts recording as the environment says; if it cannot, prints the error
//!   as `error: ...` and goes on without; records N numbered events, ends the recording by
//!   dropping it, prints `done` and exits 0 (a program that must not fail for its tracer).
//! - `fsize LIMIT N`: as `go-on`, with the file size limited to LIMIT bytes
//!   (RLIMIT_FSIZE, SIGXFSZ ignored): the disk is full from the recorder's point of view.
//! - `go-on-hold N`: as `go-on`, but after the N events prints `ready` and waits for a line on
//!   stdin before it ends the recording.
//! - `record-hold N`: starts recording as the environment says; a worker (`worker-1`)
//!   records numbered events, a millisecond's pause every 64, until the end; the main thread
//!   records N as worker 0, prints `ready`, waits for a line on stdin, records N more, stops
//!   the worker, ends the recording by dropping it and prints `done` (exit 0).
//! - `steady THREADS RATE SECONDS`: a service-like load: starts recording as the environment
//!   says; THREADS workers (`worker-0`, ...) record numbered events at RATE events a second in
//!   all, paced, for SECONDS; every second the main thread prints `sample RSS_KIB FDS` (its
//!   resident memory and open descriptors, from /proc/self); at the end it prints
//!   `emitted W N` for each worker, drops the recording and prints `done`.
//! - `rotate N K`: starts recording as the environment says (segments: `EVENT_ROTATE`);
//!   labels an address (an interned string), then K times: worker 0 (the main thread) and a
//!   worker (`worker-1`, a thread alive throughout) each record N numbered events, flush, and
//!   the main thread calls `Recording::rotate` and prints `rotated INDEX`; then both record N
//!   more, the recording is dropped and it prints `done`.
//! - `churn K ROUNDS N [NAME_LEN]`: starts recording as the environment says (segments:
//!   `EVENT_ROTATE`); ROUNDS times: K threads (`churn-R-I`, padded with `x` to NAME_LEN bytes
//!   when given) each record N numbered events as worker `R*K+I+1`, flush and end; the main
//!   thread records one as worker 0 (event R), joins them, calls `Recording::rotate` and
//!   prints `sample RSS_KIB` (its resident memory). Then the recording is dropped and it
//!   prints `done`: a program that runs many short threads over many segments.

event_runtime::include_events!("../events.def");

use event_runtime::{Policy, Recorder};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_else(|| usage());
    let number = |i: usize| arg(i).parse::<u64>().unwrap_or_else(|_| usage());
    let burst = |i: usize| args.get(i).map(|_| number(i).max(1));
    match arg(0).as_str() {
        "ring" => {
            let recording = ring_recorder(&arg(1), number(2)).start().unwrap_or_else(|e| fail(&e));
            workers(number(2), u64::MAX, true, burst(3));
            drop(recording);
        }
        "panic-ring" => {
            let recording = ring_recorder(&arg(1), number(2)).start().unwrap_or_else(|e| fail(&e));
            panic_ring(number(2), Duration::from_millis(number(3)), number(4), burst(5));
            drop(recording);
        }
        "follow" => {
            let recording = ring_recorder(&arg(1), number(2)).start().unwrap_or_else(|e| fail(&e));
            ready();
            workers(number(2), number(3), false, None);
            recording.stop().unwrap_or_else(|e| fail(&e));
        }
        "abort" => {
            // Kept alive: the abort comes while it records.
            let _recording = Recorder::new().file(arg(1)).block_size(4096).start().unwrap_or_else(|e| fail(&e));
            for i in 0..number(2) {
                event!(ArenaDestroy, 0usize, i);
            }
            std::process::abort();
        }
        "abort-env" => {
            // Kept alive: the abort comes while it records.
            let _recording = event_runtime::start().unwrap_or_else(|e| fail(&e));
            for i in 0..number(1) {
                event!(ArenaDestroy, 0usize, i);
            }
            std::process::abort();
        }
        "panic" => {
            let _recording = Recorder::new().memory().start().unwrap_or_else(|e| fail(&e));
            for i in 0..number(1) {
                event!(ArenaDestroy, 0usize, i);
            }
            panic!("the child panics on purpose");
        }
        "env" => {
            let recording = event_runtime::start().unwrap_or_else(|e| fail(&e));
            for i in 0..1000u64 {
                event!(ArenaDestroy, 0usize, i);
            }
            stop(recording);
            println!("ok");
        }
        "hold" => {
            let recording = event_runtime::start().unwrap_or_else(|e| fail(&e));
            for i in 0..number(1) {
                event!(ArenaDestroy, 0usize, i);
            }
            ready();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
            stop(recording);
            println!("ok");
        }
        "spawn" => {
            let recording = event_runtime::start().unwrap_or_else(|e| fail(&e));
            let n = number(1);
            for i in 0..n {
                event!(ArenaDestroy, 0usize, i);
            }
            let exe = std::env::current_exe().unwrap_or_else(|e| fail(&e));
            let status = std::process::Command::new(exe)
                .arg("env")
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap_or_else(|e| fail(&e));
            if !status.success() {
                fail(&format!("the child ended with {status}"));
            }
            for i in n..2 * n {
                event!(ArenaDestroy, 0usize, i);
            }
            stop(recording);
            println!("ok");
        }
        "fork" => {
            let returns = match args.get(5).map(String::as_str) {
                None => false,
                Some("return") => true,
                Some(_) => usage(),
            };
            // In a child that returns, its parent's `Recording`, dropped as `main` returns.
            let _inherited = fork_mode(&arg(1), number(2), number(3), &arg(4), returns);
        }
        "go-on" => go_on(number(1), false),
        "fsize" => {
            sys::limit_file_size(number(1));
            go_on(number(2), false);
        }
        "go-on-hold" => go_on(number(1), true),
        "record-hold" => record_hold(number(1)),
        "rotate" => rotate(number(1), number(2)),
        "steady" => steady(number(1), number(2), number(3)),
        "churn" => churn(number(1), number(2), number(3), args.get(4).map(|_| number(4) as usize)),
        _ => usage(),
    }
}

/// Stops a recording of `event_runtime::start` (which is `None` when the environment asks
/// for none).
fn stop(recording: Option<event_runtime::Recording>) {
    if let Some(recording) = recording {
        recording.stop().unwrap_or_else(|e| fail(&e));
    }
}

/// `fork`: see the module docs. Returns, in a child told to `return`, the recording it
/// inherited, for `main` to drop.
fn fork_mode(path: &str, threads: u64, n: u64, kind: &str, returns: bool) -> Option<event_runtime::Recording> {
    let recorder = match kind {
        "ring" => ring_recorder(path, threads),
        "file" | "off" => Recorder::new()
            .file(path)
            .block_size(4096)
            .record_forks(kind != "off")
            .from_env()
            .unwrap_or_else(|e| fail(&e)),
        _ => usage(),
    };
    let recording = recorder.start().unwrap_or_else(|e| fail(&e));
    static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let started = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|w| {
            let started = Arc::clone(&started);
            spawn_worker(w, move || {
                for i in 0u64.. {
                    if STOP.load(Ordering::Relaxed) {
                        break;
                    }
                    event!(ArenaDestroy, w as usize, i);
                    if i == 0 {
                        started.fetch_add(1, Ordering::Release);
                    }
                    pace(i, Some(16));
                }
            })
        })
        .collect();
    while started.load(Ordering::Acquire) < threads {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(20));
    match sys::fork() {
        0 => {
            // The child: only this thread exists; the workers' buffers are copies.
            for i in 0..n {
                event!(ArenaDestroy, 1000usize, i);
            }
            std::thread::Builder::new()
                .name("child-worker".into())
                .spawn(move || {
                    for i in 0..n {
                        event!(ArenaDestroy, 1001usize, i);
                    }
                })
                .unwrap_or_else(|e| fail(&e))
                .join()
                .unwrap_or_else(|_| std::process::exit(4));
            if returns {
                return Some(recording);
            }
            match recording.stop() {
                Ok(_) => std::process::exit(0),
                Err(e) => {
                    eprintln!("child: {e}");
                    std::process::exit(3)
                }
            }
        }
        pid => {
            let status = sys::wait(pid);
            println!("child {pid} {status}");
            std::thread::sleep(Duration::from_millis(20));
            STOP.store(true, Ordering::Relaxed);
            for h in handles {
                h.join().expect("a worker finishes");
            }
            recording.stop().unwrap_or_else(|e| fail(&e));
            None
        }
    }
}

/// `record-hold`: see the module docs.
fn record_hold(n: u64) {
    static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let recording = event_runtime::start().unwrap_or_else(|e| fail(&e));
    let worker = spawn_worker(1, || {
        for i in 0u64.. {
            if STOP.load(Ordering::Relaxed) {
                break;
            }
            event!(ArenaDestroy, 1usize, i);
            pace(i, Some(64));
        }
    });
    for i in 0..n {
        event!(ArenaDestroy, 0usize, i);
    }
    ready();
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    for i in n..2 * n {
        event!(ArenaDestroy, 0usize, i);
    }
    STOP.store(true, Ordering::Relaxed);
    worker.join().expect("the worker finishes");
    drop(recording);
    println!("done");
}

/// `steady`: see the module docs.
fn steady(threads: u64, rate: u64, seconds: u64) {
    let recording = event_runtime::start().unwrap_or_else(|e| fail(&e));
    let started = Instant::now();
    let end = started + Duration::from_secs(seconds);
    let per_thread = (rate / threads.max(1)).max(1);
    let workers: Vec<_> = (0..threads)
        .map(|w| {
            let worker = std::thread::Builder::new().name(format!("worker-{w}"));
            worker
                .spawn(move || {
                    let mut i = 0u64;
                    loop {
                        let now = Instant::now();
                        if now >= end {
                            return i;
                        }
                        // Where the schedule says this worker should be; a batch at a time.
                        let due = (now - started).as_nanos() as u64 * per_thread / 1_000_000_000;
                        if i >= due {
                            std::thread::sleep(Duration::from_micros(500));
                            continue;
                        }
                        for _ in 0..(due - i).min(1000) {
                            event!(ArenaDestroy, w as usize, i);
                            i += 1;
                        }
                    }
                })
                .unwrap_or_else(|e| fail(&e))
        })
        .collect();
    while Instant::now() < end {
        let rss = resident_kib();
        let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
        println!("sample {rss} {fds}");
        let _ = std::io::stdout().flush();
        std::thread::sleep(Duration::from_secs(1));
    }
    for (w, h) in workers.into_iter().enumerate() {
        let n = h.join().expect("a worker finishes");
        println!("emitted {w} {n}");
    }
    drop(recording);
    println!("done");
}

/// This process's resident memory in KiB (`VmRSS`), 0 where /proc says nothing.
fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .unwrap_or(0)
}

/// `rotate`: see the module docs.
fn rotate(n: u64, k: u64) {
    let recording = event_runtime::start().unwrap_or_else(|e| fail(&e)).unwrap_or_else(|| {
        eprintln!("rotate needs EVENT_FILE and EVENT_ROTATE");
        std::process::exit(2)
    });
    event_runtime::label(0x7f3a_0000_1000, "tour arena");
    let (to_worker, turns) = std::sync::mpsc::channel::<u64>();
    let (done_turn, turn_done) = std::sync::mpsc::channel::<()>();
    let worker = spawn_worker(1, move || {
        let mut i = 0u64;
        while turns.recv().is_ok() {
            for _ in 0..n {
                event!(ArenaDestroy, 1usize, i);
                i += 1;
            }
            event_runtime::flush();
            let _ = done_turn.send(());
        }
    });
    let mut i = 0u64;
    for turn in 0..=k {
        for _ in 0..n {
            event!(ArenaDestroy, 0usize, i);
            i += 1;
        }
        event_runtime::flush();
        to_worker.send(turn).expect("the worker runs");
        turn_done.recv().expect("the worker runs");
        if turn < k {
            match recording.rotate() {
                Some(index) => println!("rotated {index}"),
                None => {
                    eprintln!("the recording writes no segments");
                    std::process::exit(3)
                }
            }
        }
    }
    drop(to_worker);
    worker.join().expect("the worker finishes");
    drop(recording);
    println!("done");
}

/// `churn`: see the module docs.
fn churn(k: u64, rounds: u64, n: u64, name_len: Option<usize>) {
    let recording = event_runtime::start().unwrap_or_else(|e| fail(&e)).unwrap_or_else(|| {
        eprintln!("churn needs EVENT_FILE and EVENT_ROTATE");
        std::process::exit(2)
    });
    for round in 0..rounds {
        let threads: Vec<_> = (0..k)
            .map(|i| {
                let worker = (round * k + i + 1) as usize;
                std::thread::Builder::new()
                    .name(format!("{:x<1$}", format!("churn-{round}-{i}"), name_len.unwrap_or(0)))
                    .spawn(move || {
                        for e in 0..n {
                            event!(ArenaDestroy, worker, e);
                        }
                        event_runtime::flush();
                    })
                    .unwrap_or_else(|e| fail(&e))
            })
            .collect();
        event!(ArenaDestroy, 0usize, round);
        for t in threads {
            t.join().expect("a churn thread finishes");
        }
        if recording.rotate().is_none() {
            eprintln!("the recording writes no segments");
            std::process::exit(3)
        }
        println!("sample {}", resident_kib());
    }
    drop(recording);
    println!("done");
}

/// `go-on` and `hold`: see the module docs.
fn go_on(n: u64, hold: bool) {
    let recording = event_runtime::start().map_err(|e| eprintln!("error: {e}")).ok().flatten();
    for i in 0..n {
        event!(ArenaDestroy, 0usize, i);
    }
    if hold {
        ready();
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    }
    drop(recording);
    println!("done");
}

/// The system calls the fault modes make.
mod sys {
    #![allow(unsafe_code)]

    /// Forks; 0 in the child, the child's pid in the parent. Exits 2 if it fails.
    pub(super) fn fork() -> i32 {
        // SAFETY: the child only records events (the recorder's fork handlers make that
        // safe), spawns and joins a thread, and exits; it never returns into code that
        // expects the parent's other threads.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            super::fail(&std::io::Error::last_os_error());
        }
        pid
    }

    /// Waits for child `pid`; its exit status, or 128 + the signal that ended it.
    pub(super) fn wait(pid: i32) -> i32 {
        let mut status = 0;
        // SAFETY: `status` is a valid place for waitpid to write.
        if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
            super::fail(&std::io::Error::last_os_error());
        }
        if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) }
    }

    /// Limits the size of files this process writes to `bytes`; a write past it fails with
    /// EFBIG instead of raising SIGXFSZ.
    pub(super) fn limit_file_size(bytes: u64) {
        let limit = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: bytes as libc::rlim_t };
        // SAFETY: ignoring SIGXFSZ and setting a resource limit from a valid struct have no
        // other preconditions.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                super::fail(&std::io::Error::last_os_error());
            }
        }
    }
}

fn ring_recorder(path: &str, threads: u64) -> Recorder {
    Recorder::new()
        .ring_file(path)
        .policy(Policy::Ring)
        .block_size(4096)
        .ring_threads(threads as u32 + 1)
        .from_env()
        .unwrap_or_else(|e| fail(&e))
}

/// Runs `threads` workers recording `n` numbered events each; with `announce`, prints
/// `ready` once every worker has recorded its first event.
fn workers(threads: u64, n: u64, announce: bool, burst: Option<u64>) {
    let started = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|w| {
            let started = Arc::clone(&started);
            spawn_worker(w, move || {
                for i in 0..n {
                    event!(ArenaDestroy, w as usize, i);
                    if i == 0 {
                        started.fetch_add(1, Ordering::Release);
                    }
                    pace(i, burst);
                }
            })
        })
        .collect();
    if announce {
        wait_started(&started, threads);
    }
    for h in handles {
        h.join().expect("a worker finishes");
    }
}

/// Runs `threads` workers recording numbered events until worker `victim` panics, `delay`
/// after every worker has started; then panics on this thread too, with the victim's payload.
fn panic_ring(threads: u64, delay: Duration, victim: u64, burst: Option<u64>) {
    // When the victim panics; set once every worker has started.
    static DEADLINE: OnceLock<Instant> = OnceLock::new();
    let started = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..threads)
        .map(|w| {
            let started = Arc::clone(&started);
            spawn_worker(w, move || {
                for i in 0u64.. {
                    // Looked at every 64 events: reading the clock costs more than an event.
                    if w == victim && i % 64 == 0 && DEADLINE.get().is_some_and(|d| Instant::now() >= *d) {
                        println!("panic after {i} events");
                        let _ = std::io::stdout().flush();
                        panic!("worker {w} panics on purpose after {i} events");
                    }
                    event!(ArenaDestroy, w as usize, i);
                    if i == 0 {
                        started.fetch_add(1, Ordering::Release);
                    }
                    pace(i, burst);
                }
            })
        })
        .collect();
    wait_started(&started, threads);
    let _ = DEADLINE.set(Instant::now() + delay);
    loop {
        if let Some(h) = handles.iter().position(std::thread::JoinHandle::is_finished) {
            if let Err(payload) = handles.into_iter().nth(h).map_or(Ok(()), std::thread::JoinHandle::join) {
                std::panic::resume_unwind(payload);
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// With a burst length, sleeps a millisecond after every `burst` events.
fn pace(i: u64, burst: Option<u64>) {
    if let Some(b) = burst
        && i % b == b - 1
    {
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn spawn_worker(w: u64, f: impl FnOnce() + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new().name(format!("worker-{w}")).spawn(f).unwrap_or_else(|e| fail(&e))
}

/// Prints `ready` once `threads` workers have started.
fn wait_started(started: &AtomicU64, threads: u64) {
    while started.load(Ordering::Acquire) < threads {
        std::thread::yield_now();
    }
    ready();
}

fn ready() {
    println!("ready");
    std::io::stdout().flush().expect("stdout");
}

fn fail(e: &dyn std::fmt::Display) -> ! {
    eprintln!("error: {e}");
    std::process::exit(2)
}

fn usage() -> ! {
    eprintln!(
        "usage: recorder-child ring PATH THREADS [BURST] | panic-ring PATH THREADS DELAY_MS VICTIM [BURST] | follow PATH THREADS N | abort PATH N | abort-env N | panic N | env | hold N | spawn N | fork PATH THREADS N file|ring|off [return] | go-on N | fsize LIMIT N | go-on-hold N | record-hold N"
    );
    std::process::exit(2)
}
