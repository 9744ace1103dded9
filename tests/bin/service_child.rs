//! A service that stops on SIGTERM and SIGINT, for the tests that the recorder never changes
//! how its host reacts to a signal (`it/signals.rs`). `service-child HANDLER ORDER`; the
//! recorder's settings come from the `EVENT_*` variables (`event_runtime::start`).
//!
//! HANDLER is how the service takes SIGTERM and SIGINT (and, for some, SIGABRT, which a
//! service may take to go on too):
//!
//! - `tokio`: `tokio::signal::unix::signal` on a multi-thread runtime for SIGTERM, SIGINT and
//!   SIGABRT (signal-hook's registry, which chains to the handler it finds installed);
//! - `ctrlc`: the `ctrlc` crate (with its `termination` feature: SIGINT, SIGTERM, SIGHUP);
//! - `sigaction`: a raw `sigaction` for SIGTERM, SIGINT and SIGABRT whose handler stores the
//!   signal in an atomic;
//! - `none`: nothing; the signal's default action ends the process.
//!
//! ORDER is `before` or `after`: the handler is installed before or after the recording starts.
//!
//! Two workers (`worker-0`, `worker-1`) record numbered events (`ArenaDestroy(worker, i)`, as
//! `recorder-child` does), a millisecond's pause every 64; the main thread records 1000 as
//! worker 100 (a partial block) and prints `ready`. When the signal comes the service drains:
//! it stops and joins its workers, records one more event as worker 100, prints `drained`, and
//! returns from `main`, which drops (stops) the recording: exit 0.
//!
//! `service-child fault overflow|bus PATH`: starts recording as the environment says, records
//! a few events, then overflows its main thread's stack (std reports it and aborts), or maps
//! the file PATH of its own, truncates it and writes through the mapping (a SIGBUS that is
//! not the recorder's).
//!
//! `service-child dispositions`: ignores SIGILL and installs a handler of its own for SIGFPE,
//! starts recording as the environment says, and prints, for SIGABRT, SIGILL, SIGFPE,
//! SIGSEGV, SIGBUS, SIGTERM and SIGINT, `NAME same` or `NAME changed`: whether the start
//! changed the signal's action; then stops and exits 0.

event_runtime::include_events!("../events.def");

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Set when the service drains: its workers stop.
static STOP: AtomicBool = AtomicBool::new(false);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_else(|| usage());
    if arg(0) == "dispositions" {
        return dispositions();
    }
    if arg(0) == "fault" {
        let _recording = event_runtime::start().unwrap_or_else(|e| fail(&e));
        for i in 0..100u64 {
            event!(ArenaDestroy, 0usize, i);
        }
        match arg(1).as_str() {
            "overflow" => {
                println!("{}", deep(0, &mut [0u8; 1024]));
            }
            "bus" => sys::bus_fault(&arg(2)),
            _ => usage(),
        }
        fail(&"the fault did not end the process");
    }
    let (handler, order) = (arg(0), arg(1));
    if !matches!(order.as_str(), "before" | "after") {
        usage();
    }
    let mut waiter = None;
    if order == "before" {
        waiter = Some(install(&handler));
    }
    let recording = event_runtime::start().unwrap_or_else(|e| fail(&e));
    if order == "after" {
        waiter = Some(install(&handler));
    }
    let Some(waiter) = waiter else { usage() };
    let started = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..2u64)
        .map(|w| {
            let started = Arc::clone(&started);
            std::thread::Builder::new()
                .name(format!("worker-{w}"))
                .spawn(move || {
                    for i in 0u64.. {
                        if STOP.load(Ordering::Relaxed) {
                            break;
                        }
                        event!(ArenaDestroy, w as usize, i);
                        if i == 0 {
                            started.fetch_add(1, Ordering::Release);
                        }
                        if i % 64 == 63 {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }
                })
                .unwrap_or_else(|e| fail(&e))
        })
        .collect();
    for i in 0..1000u64 {
        event!(ArenaDestroy, 100usize, i);
    }
    while started.load(Ordering::Acquire) < 2 {
        std::thread::yield_now();
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    waiter.wait();
    // The drain: the service's own shutdown.
    STOP.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap_or_else(|_| fail(&"a worker panicked"));
    }
    event!(ArenaDestroy, 100usize, 1000u64);
    println!("drained");
    let _ = std::io::stdout().flush();
    drop(recording);
}

/// `dispositions`: see the module docs.
fn dispositions() {
    sys::ignore(libc::SIGILL);
    sys::install_raw(&[libc::SIGFPE]);
    let signals = [
        ("SIGABRT", libc::SIGABRT),
        ("SIGILL", libc::SIGILL),
        ("SIGFPE", libc::SIGFPE),
        ("SIGSEGV", libc::SIGSEGV),
        ("SIGBUS", libc::SIGBUS),
        ("SIGTERM", libc::SIGTERM),
        ("SIGINT", libc::SIGINT),
    ];
    let before = signals.map(|(_, sig)| sys::action(sig));
    let recording = event_runtime::start().unwrap_or_else(|e| fail(&e));
    event!(ArenaDestroy, 0usize, 0u64);
    for ((name, sig), before) in signals.into_iter().zip(before) {
        println!("{name} {}", if sys::action(sig) == before { "same" } else { "changed" });
    }
    drop(recording);
}

/// Recurses until the stack overflows (the bound is never reached).
fn deep(n: u64, pad: &mut [u8; 1024]) -> u64 {
    pad[(n % 1024) as usize] = n as u8;
    if n == u64::MAX {
        return 0;
    }
    let mut next = [0u8; 1024];
    u64::from(pad[0]) + deep(std::hint::black_box(n + 1), std::hint::black_box(&mut next))
}

/// How the service waits for its signal.
enum Waiter {
    /// Tokio's signal streams, each awaited by a task that sends on the channel; the runtime
    /// is kept alive until the service ends.
    Tokio(tokio::runtime::Runtime, std::sync::mpsc::Receiver<()>),
    /// ctrlc's handler thread sends on the channel.
    Channel(std::sync::mpsc::Receiver<()>),
    /// The raw handler stores the signal here.
    Raw,
    /// Nothing handles the signal: wait for it to end the process.
    Nothing,
}

/// The signal the raw `sigaction` handler received (0: none yet).
static RECEIVED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

fn install(handler: &str) -> Waiter {
    match handler {
        "tokio" => {
            use tokio::signal::unix::{SignalKind, signal};
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap_or_else(|e| fail(&e));
            let (tx, rx) = std::sync::mpsc::channel();
            // The handlers are installed here, when the streams are made (in the runtime).
            let streams = {
                let _in_runtime = runtime.enter();
                [SignalKind::terminate(), SignalKind::interrupt(), SignalKind::from_raw(libc::SIGABRT)]
                    .map(|kind| signal(kind).unwrap_or_else(|e| fail(&e)))
            };
            for mut stream in streams {
                let tx = tx.clone();
                runtime.spawn(async move {
                    if stream.recv().await.is_some() {
                        let _ = tx.send(());
                    }
                });
            }
            Waiter::Tokio(runtime, rx)
        }
        "ctrlc" => {
            let (tx, rx) = std::sync::mpsc::channel();
            ctrlc::set_handler(move || {
                let _ = tx.send(());
            })
            .unwrap_or_else(|e| fail(&e));
            Waiter::Channel(rx)
        }
        "sigaction" => {
            sys::install_raw(&[libc::SIGTERM, libc::SIGINT, libc::SIGABRT]);
            Waiter::Raw
        }
        "none" => Waiter::Nothing,
        _ => usage(),
    }
}

impl Waiter {
    fn wait(self) {
        match self {
            Waiter::Tokio(runtime, rx) => {
                rx.recv().unwrap_or_else(|e| fail(&e));
                drop(runtime);
            }
            Waiter::Channel(rx) => rx.recv().unwrap_or_else(|e| fail(&e)),
            Waiter::Raw => {
                while RECEIVED.load(Ordering::Acquire) == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            Waiter::Nothing => loop {
                std::thread::sleep(Duration::from_secs(1));
            },
        }
    }
}

mod sys {
    #![allow(unsafe_code)]

    extern "C" fn on_signal(sig: libc::c_int) {
        super::RECEIVED.store(sig, std::sync::atomic::Ordering::Release);
    }

    /// The signal's action now: its handler (or `SIG_DFL`, `SIG_IGN`) and flags.
    pub(super) fn action(sig: libc::c_int) -> (usize, libc::c_int) {
        // SAFETY: a zeroed sigaction is a valid value to be overwritten; with a null new
        // action, sigaction only reads the current one.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old);
            (old.sa_sigaction, old.sa_flags)
        }
    }

    /// Maps the file `path` (made here, 16 KiB), truncates it to nothing and writes through
    /// the mapping: SIGBUS.
    pub(super) fn bus_fault(path: &str) {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .unwrap_or_else(|e| super::fail(&e));
        file.set_len(16 << 10).unwrap_or_else(|e| super::fail(&e));
        // SAFETY: a shared mapping of a file this process made and holds open; the write
        // below is the fault the caller asks for.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                16 << 10,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            );
            if map == libc::MAP_FAILED {
                super::fail(&std::io::Error::last_os_error());
            }
            file.set_len(0).unwrap_or_else(|e| super::fail(&e));
            std::ptr::write_volatile(map.cast::<u8>().add(8192), 1);
        }
    }

    /// Ignores `sig`.
    pub(super) fn ignore(sig: libc::c_int) {
        // SAFETY: setting a signal's action to SIG_IGN has no preconditions.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }

    /// Installs `on_signal` for `signals` with a plain `sigaction` (no chaining).
    pub(super) fn install_raw(signals: &[libc::c_int]) {
        for &sig in signals {
            // SAFETY: a zeroed sigaction is a valid value; the handler is an `extern "C"`
            // function of the one-argument signature (no SA_SIGINFO), and it only stores to
            // an atomic, which is async-signal-safe.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as usize;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(sig, &action, std::ptr::null_mut()) != 0 {
                    super::fail(&std::io::Error::last_os_error());
                }
            }
        }
    }
}

fn fail(e: &dyn std::fmt::Display) -> ! {
    eprintln!("service-child: {e}");
    std::process::exit(2)
}

fn usage() -> ! {
    eprintln!(
        "usage: service-child tokio|ctrlc|sigaction|none before|after | service-child fault overflow|bus PATH | service-child dispositions"
    );
    std::process::exit(2)
}
