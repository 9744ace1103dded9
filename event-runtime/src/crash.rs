//! Exit and crash: a panic hook that prints the panicking thread's last events (MPS
//! `.sol.traceback`) and flushes, and a best-effort flush of the file sink on fatal signals.
//! The ring file needs neither: every committed record is already in it.
#![allow(unsafe_code)]

use crate::buffer;
use crate::session::{self, Shared};
use std::sync::Once;
use std::time::Duration;

/// How many events the traceback shows.
pub const TRACEBACK_EVENTS: usize = 16;

static INSTALL: Once = Once::new();

/// Installs the panic hook and the signal handlers, once per process.
pub(crate) fn install(shared: &std::sync::Arc<Shared>) {
    #[cfg(unix)]
    signals::publish(shared);
    #[cfg(not(unix))]
    let _ = shared;
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            on_panic();
        }));
        #[cfg(unix)]
        signals::install();
    });
}

/// Forgets the recording that is stopping (the signal handlers must not reach it).
pub(crate) fn uninstall() {
    #[cfg(unix)]
    signals::publish_none();
}

fn on_panic() {
    if !session::is_running() {
        return;
    }
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("<unnamed>");
    match buffer::last_events_of_this_thread(TRACEBACK_EVENTS) {
        Some(lines) if !lines.is_empty() => {
            let mut text =
                format!("event-runtime: the last {} events of thread '{name}' before it panicked:\n", lines.len());
            for line in lines {
                text.push_str("    ");
                text.push_str(&line);
                text.push('\n');
            }
            eprint!("{text}");
        }
        _ => eprintln!("event-runtime: thread '{name}' recorded no events before it panicked"),
    }
    // If the panic ends the process (panic = "abort", or the main thread), what this thread
    // recorded is handed on and written first.
    buffer::flush_this_thread();
    if !buffer::is_writer()
        && let Some(shared) = session::try_current()
    {
        shared.exchange.wait_drained(Duration::from_secs(1));
    }
}

#[cfg(unix)]
mod signals {
    //! On a fatal signal, this thread's partial block joins the writer's queue and the
    //! handler waits (a second at most) for the writer thread to write the queue to the
    //! event file; what is left is written with `write(2)`; then the signal takes its
    //! course. Best effort: only locks that are free are taken (`try_lock`), and the wait is
    //! `nanosleep`. Other threads' partial blocks are not reached. On SIGSEGV and SIGBUS
    //! the handler runs on the thread's alternate signal stack and flushes only when that
    //! stack is large enough (std's is not); a ring file needs no flush at all.
    use super::*;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicPtr, Ordering};

    /// The running recording, for the handler. Holds one strong count of the `Arc` while set.
    static SHARED: AtomicPtr<Shared> = AtomicPtr::new(std::ptr::null_mut());

    const FATAL: [libc::c_int; 7] =
        [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGABRT, libc::SIGTERM, libc::SIGINT];

    /// The handlers that were installed before ours, by signal number (`None`: the default
    /// action, or a signal we leave alone). Set once, before the first of our handlers is
    /// installed, and never changed: a handler that runs finds it set.
    ///
    /// A `OnceLock`, not a `static mut`: reading it in the handler is one acquire load of its
    /// state and a shared reference, with no lock and no allocation, so it is
    /// async-signal-safe, and no code can write it while a handler reads it.
    static PREVIOUS: OnceLock<[Option<libc::sigaction>; 32]> = OnceLock::new();

    pub(super) fn publish(shared: &std::sync::Arc<Shared>) {
        let raw = std::sync::Arc::into_raw(std::sync::Arc::clone(shared)).cast_mut();
        let old = SHARED.swap(raw, Ordering::AcqRel);
        release(old);
    }

    pub(super) fn publish_none() {
        let old = SHARED.swap(std::ptr::null_mut(), Ordering::AcqRel);
        release(old);
    }

    fn release(old: *mut Shared) {
        if !old.is_null() {
            // SAFETY: `old` came from `Arc::into_raw` in `publish` and was swapped out, so this
            // is the only place that gives its count back. A handler running on another thread
            // at this instant could still be using it: a documented limit of best effort.
            drop(unsafe { std::sync::Arc::from_raw(old) });
        }
    }

    pub(super) fn install() {
        let mut previous = [None; 32];
        for sig in FATAL {
            // SAFETY: a zeroed sigaction is a valid value to be overwritten.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: with a null new action, sigaction only reads the current one into `old`.
            if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
                continue;
            }
            // A handler the program (or std, for SIGSEGV/SIGBUS) installed is kept and called
            // after ours; an ignored signal stays ignored.
            if old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            previous[sig as usize] = Some(old);
        }
        // Published before any handler of ours is installed (`install` runs once per process).
        let previous = PREVIOUS.get_or_init(|| previous);
        for sig in FATAL {
            if previous[sig as usize].is_none() {
                continue;
            }
            // SAFETY: a zeroed sigaction is a valid starting point; the fields set are the
            // handler, an empty mask and flags that libc documents.
            let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
            new.sa_sigaction = on_signal as *const () as usize;
            // SIGSEGV and SIGBUS may come from a stack overflow: they run on the thread's
            // alternate signal stack, as std's own handler does (`enough_stack`).
            let on_stack = if sig == libc::SIGSEGV || sig == libc::SIGBUS { libc::SA_ONSTACK } else { 0 };
            new.sa_flags = libc::SA_SIGINFO | on_stack;
            // SAFETY: `new` is a valid action whose handler is an `extern "C"` function of the
            // SA_SIGINFO signature.
            unsafe {
                libc::sigemptyset(&mut new.sa_mask);
                libc::sigaction(sig, &new, std::ptr::null_mut());
            }
        }
    }

    extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
        flush_for_signal();
        // Async-signal-safe: an acquire load and a copy (see `PREVIOUS`); set before this
        // handler was installed.
        let previous = PREVIOUS.get().and_then(|p| p.get(sig as usize).copied().flatten());
        match previous {
            Some(old) if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN => {
                if old.sa_flags & libc::SA_SIGINFO != 0 {
                    // SAFETY: the previous handler was installed with SA_SIGINFO, so it has
                    // this signature; we pass it what the kernel passed us.
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        unsafe { std::mem::transmute(old.sa_sigaction) };
                    f(sig, info, context);
                } else {
                    // SAFETY: installed without SA_SIGINFO: the one-argument signature.
                    let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(old.sa_sigaction) };
                    f(sig);
                }
            }
            _ => {
                // SAFETY: restoring the default action and raising the signal again are
                // async-signal-safe; the default action ends the process as it would have.
                unsafe {
                    libc::signal(sig, libc::SIG_DFL);
                    libc::raise(sig);
                }
            }
        }
    }

    /// Bytes of stack the last flush needs (sealing computes a CRC; an unoptimised build
    /// needs far more than an optimised one).
    const FLUSH_STACK: usize = 64 << 10;

    /// Whether there is room on the stack to flush: always on a thread's own stack; on an
    /// alternate signal stack (std's is a few KiB) only if it is large enough.
    fn enough_stack() -> bool {
        // SAFETY: a zeroed stack_t is a valid value to be overwritten.
        let mut ss: libc::stack_t = unsafe { std::mem::zeroed() };
        // SAFETY: with a null new stack, sigaltstack only reads the current one into `ss`.
        if unsafe { libc::sigaltstack(std::ptr::null(), &mut ss) } != 0 {
            return false;
        }
        if ss.ss_flags & libc::SS_ONSTACK == 0 {
            return true;
        }
        let here = std::ptr::addr_of!(ss) as usize;
        here.saturating_sub(ss.ss_sp as usize) >= FLUSH_STACK
    }

    fn flush_for_signal() {
        if !enough_stack() {
            return;
        }
        let ptr = SHARED.load(Ordering::Acquire);
        if ptr.is_null() {
            return;
        }
        // SAFETY: non-null means `publish` holds a strong count for it (see `release`).
        let shared = unsafe { &*ptr };
        if shared.pid != std::process::id() {
            // A child of `fork()` before its own recording: the queue and the file are the
            // parent's (`fork`'s module docs). getpid is async-signal-safe.
            return;
        }
        // This thread's partial block joins the queue, and the writer thread, still running,
        // writes the queue out in order; this thread waits for it, a second at most.
        let mut blocks = Vec::new();
        if let Some(block) = buffer::take_block_for_signal()
            && let Err(block) = shared.exchange.try_submit(block)
        {
            blocks.push(block);
        }
        if !buffer::is_writer() {
            for _ in 0..100 {
                if shared.exchange.try_drained() == Some(true) {
                    break;
                }
                let pause = libc::timespec { tv_sec: 0, tv_nsec: 10_000_000 };
                // SAFETY: nanosleep is async-signal-safe; `pause` is a valid duration.
                unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
            }
        }
        // What the writer did not write (it is stuck, or this is its thread) is written here.
        let Ok(sinks) = shared.sinks.try_lock() else { return };
        let Some(fd) = sinks.raw_fd() else { return };
        blocks.extend(shared.exchange.try_drain().unwrap_or_default());
        for block in &mut blocks {
            event_format::wire::seal_block_in_place(event_format::wire::Order::NATIVE, block);
            let mut done = 0;
            while done < block.len() {
                // SAFETY: writes from a live buffer to a descriptor the sinks own.
                let n = unsafe { libc::write(fd, block[done..].as_ptr().cast(), block.len() - done) };
                if n <= 0 {
                    break;
                }
                done += n as usize;
            }
        }
        // Leaked on purpose: the process is going down, and freeing is not signal-safe.
        std::mem::forget(blocks);
        drop(sinks);
    }
}
