//! Exit and crash: a panic hook that prints the panicking thread's last events (MPS
//! `.sol.traceback`, decoded by `traceback`) and flushes, and a best-effort flush of the
//! event file on the fatal signals whose action is the default (`signals`). The ring file
//! needs neither: every committed record is already in it.
#![allow(unsafe_code)]

use crate::emit::buffer;
use crate::emit::session::{self, Shared};
use crate::emit::traceback;
use std::sync::Once;
use std::time::Duration;

static INSTALL: Once = Once::new();

/// Installs the panic hook, once per process, and, when `signals` and the recording writes an
/// event file, the fatal signals' handlers (`signals`).
pub(crate) fn install(shared: &std::sync::Arc<Shared>, signals: bool) {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            on_panic();
        }));
    });
    #[cfg(unix)]
    if signals && crate::locks::lock(&shared.writer.sinks).raw_fd().is_some() {
        signals::publish(shared);
        signals::install();
    }
    #[cfg(not(unix))]
    let _ = (shared, signals);
}

/// The lock of the fatal signals' handlers, held across `fork()` (`fork`'s *prepare*), so
/// that a child never finds it held by a thread that does not exist there (a stop on another
/// thread at that instant): its own start would wait for it for ever.
#[derive(Debug)]
pub(crate) struct ForkHold {
    #[cfg(unix)]
    _lock: std::sync::MutexGuard<'static, [bool; 3]>,
}

/// Takes the fatal signals' lock for a `fork()`.
pub(crate) fn hold_for_fork() -> ForkHold {
    ForkHold {
        #[cfg(unix)]
        _lock: crate::locks::lock(&signals::INSTALLED),
    }
}

/// Forgets the recording that is stopping (the signal handlers must not reach it), and gives
/// the signals whose handler is still ours their default action back.
pub(crate) fn uninstall() {
    #[cfg(unix)]
    {
        signals::uninstall();
        signals::publish_none();
    }
}

fn on_panic() {
    if !session::is_running() {
        return;
    }
    let thread = std::thread::current();
    traceback::print(thread.name().unwrap_or("<unnamed>"));
    // A `panic` trigger: the snapshot is taken here, on the panicking thread, before the
    // panic may end the process (`trigger`).
    if let Some(shared) = session::try_current()
        && let Some(triggers) = &shared.incidents.triggers
        && let Some(cause) = triggers.on_panic(shared.time.now())
    {
        crate::writer::snapshot::triggered(&shared, triggers, cause, Vec::new());
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
    //! The fatal signals' flush of the event file (docs/guide/guarantees.md; SECURITY.md,
    //! "Signals"). The host's signals are the host's:
    //!
    //! - SIGINT, SIGTERM, SIGHUP, SIGQUIT and every other signal a program may handle to go
    //!   on (or to shut down its own way) are never taken.
    //! - A handler is installed for SIGABRT (`abort()`, `panic = "abort"`), SIGILL (`ud2`:
    //!   Rust's intrinsic abort, a corrupt jump) and SIGFPE (a division fault in C or
    //!   assembly) only when their action is the default one when the recording starts: the
    //!   action that ends the process with a core. One that a program handles or ignores
    //!   then is left completely alone. A program that uses them to go on (a JIT's or a
    //!   WebAssembly runtime's traps) installs a handler, before the start (left alone) or
    //!   after it (it replaces ours). SIGSEGV and SIGBUS are std's (its stack-overflow
    //!   report), and the flush would need more stack than std's alternate stack has; SIGBUS
    //!   gets the ring file's guard instead (`busguard`).
    //! - The handler acts only when it is the signal's action. Reached through a handler the
    //!   program installed over it and that chains to the one it found (signal-hook's
    //!   registry, tokio's signals), it returns at once: without the recorder that chain would
    //!   have found the default action, which it does not call.
    //! - Acting, it hands the interrupted thread's partial block to the writer's queue (a pool
    //!   block, or a copy of the ring-file block the thread is writing), waits for the writer
    //!   thread to write the queue, a second at most, writes with `write(2)` what it did not,
    //!   gives the signal its default action back and raises it again: the process ends as it
    //!   would have, killed by the signal.
    //! - Async-signal-safe: no allocation (the queue has room made up front, the blocks it
    //!   takes are forgotten, not freed), no lock waited for (`try_lock` only), no
    //!   thread-local's first use (`buffer::take_for_signal`), the wait is `nanosleep`. A
    //!   block it writes is taken from the thread and the queue, so no stop or writer writes
    //!   it again. Other threads' partial blocks are not reached.
    use super::*;
    use crate::emit::buffer::SignalTake;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicPtr, Ordering};

    /// The running recording, for the handler. Holds one strong count of the `Arc` while set.
    static SHARED: AtomicPtr<Shared> = AtomicPtr::new(std::ptr::null_mut());

    /// The signals the flush may be installed for (module docs).
    const FATAL: [libc::c_int; 3] = [libc::SIGABRT, libc::SIGILL, libc::SIGFPE];

    /// For each of `FATAL`, whether our handler was installed by the running recording; the
    /// lock keeps a start's install and a stop's uninstall apart.
    pub(super) static INSTALLED: Mutex<[bool; 3]> = Mutex::new([false; 3]);

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

    /// The signal's action now.
    fn action(sig: libc::c_int) -> Option<libc::sigaction> {
        // SAFETY: a zeroed sigaction is a valid value to be overwritten.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: with a null new action, sigaction only reads the current one into `old`.
        (unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0).then_some(old)
    }

    /// Whether our handler is `sig`'s action now. Async-signal-safe (`sigaction` is).
    fn is_ours(sig: libc::c_int) -> bool {
        action(sig).is_some_and(|a| a.sa_sigaction == on_signal as *const () as usize)
    }

    /// Sets `sig`'s action to `handler` (ours, or `SIG_DFL`).
    fn set(sig: libc::c_int, handler: usize) {
        // SAFETY: a zeroed sigaction is a valid starting point; the fields set are the
        // handler (ours, an `extern "C"` function of the SA_SIGINFO signature, or SIG_DFL),
        // an empty mask and flags that libc documents.
        unsafe {
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = handler;
            new.sa_flags = if handler == libc::SIG_DFL { 0 } else { libc::SA_SIGINFO };
            libc::sigemptyset(&mut new.sa_mask);
            libc::sigaction(sig, &new, std::ptr::null_mut());
        }
    }

    /// Installs our handler for each of `FATAL` whose action is the default one now.
    pub(super) fn install() {
        let mut installed = crate::locks::lock(&INSTALLED);
        for (i, sig) in FATAL.into_iter().enumerate() {
            if installed[i] || is_ours(sig) {
                installed[i] = true;
                continue;
            }
            if action(sig).is_some_and(|a| a.sa_sigaction == libc::SIG_DFL) {
                set(sig, on_signal as *const () as usize);
                installed[i] = true;
            }
        }
    }

    /// Gives each signal whose action is still our handler its default action back; one a
    /// program installed over ours meanwhile is left as it is (our handler, if it chains to
    /// it, does nothing without a recording).
    pub(super) fn uninstall() {
        let mut installed = crate::locks::lock(&INSTALLED);
        for (i, sig) in FATAL.into_iter().enumerate() {
            if std::mem::take(&mut installed[i]) && is_ours(sig) {
                set(sig, libc::SIG_DFL);
            }
        }
    }

    extern "C" fn on_signal(sig: libc::c_int, _info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
        if !is_ours(sig) {
            // Called by the program's own handler, which chains: the signal is the program's.
            return;
        }
        flush_for_signal();
        // The default action, as without the recorder: the signal is blocked while this
        // handler runs, so the one raised here is delivered, with that action, as it returns.
        set(sig, libc::SIG_DFL);
        // SAFETY: raise is async-signal-safe and has no preconditions.
        unsafe { libc::raise(sig) };
    }

    /// How long the flush waits for the writer thread, in pauses of `PAUSE_NS`.
    const PAUSES: u32 = 100;
    const PAUSE_NS: libc::c_long = 10_000_000;

    fn pause() {
        let pause = libc::timespec { tv_sec: 0, tv_nsec: PAUSE_NS };
        // SAFETY: nanosleep is async-signal-safe; `pause` is a valid duration.
        unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
    }

    /// Bytes of stack the flush needs (sealing computes a CRC; an unoptimised build needs far
    /// more than an optimised one).
    const FLUSH_STACK: usize = 64 << 10;

    /// Whether there is room on the stack to flush: always on a thread's own stack; on an
    /// alternate signal stack only if it is large enough. An abort from inside std's
    /// stack-overflow handler (`has overflowed its stack`) runs this handler on std's small
    /// alternate stack: flushing there would overflow it, and the process would die by
    /// SIGSEGV instead of SIGABRT.
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
        // writes the queue out in order; this thread waits for it, a second at most. A block
        // that cannot join the queue is written below, after the queue.
        let left = match buffer::take_for_signal() {
            Some(SignalTake::Pool(block)) => shared.exchange.try_submit(block).err().map(Left::Pool),
            Some(SignalTake::Slot { at, len }) => {
                // SAFETY: `at..at + len` is the sealed block in the ring file's mapping, which
                // `shared` (held, see above) keeps mapped; the thread that wrote it is this
                // one, interrupted, and the block is recorded as copied (no one writes it).
                let bytes = unsafe { std::slice::from_raw_parts(at, len) };
                match shared.exchange.try_take_free() {
                    Some(mut copy) if copy.len() == len => {
                        copy.copy_from_slice(bytes);
                        shared.exchange.try_submit(copy).err().map(Left::Pool)
                    }
                    other => {
                        // Not queued: forgotten (freeing is not signal-safe), written below.
                        std::mem::forget(other);
                        Some(Left::Slot(bytes))
                    }
                }
            }
            None => None,
        };
        if !buffer::is_writer() {
            for _ in 0..PAUSES {
                if shared.exchange.try_drained() == Some(true) {
                    break;
                }
                pause();
            }
        }
        // What the writer did not write (it is stuck, or this is its thread) is written here,
        // under the sinks' lock (the writer may hold it a moment: tried a while).
        let mut sinks = None;
        for _ in 0..PAUSES {
            if let Ok(s) = shared.writer.sinks.try_lock() {
                sinks = Some(s);
                break;
            }
            pause();
        }
        let Some(sinks) = sinks else { return };
        let Some(fd) = sinks.raw_fd() else { return };
        while let Some(mut block) = shared.exchange.try_pop() {
            event_format::raw::seal_block_in_place(event_format::wire::Order::NATIVE, &mut block);
            write_all(fd, &block);
            // Leaked on purpose: the process is going down, and freeing is not signal-safe.
            std::mem::forget(block);
        }
        match left {
            Some(Left::Pool(mut block)) => {
                event_format::raw::seal_block_in_place(event_format::wire::Order::NATIVE, &mut block);
                write_all(fd, &block);
                std::mem::forget(block);
            }
            Some(Left::Slot(bytes)) => write_all(fd, bytes),
            None => {}
        }
        drop(sinks);
    }

    /// This thread's block that could not join the queue.
    enum Left<'a> {
        Pool(crate::blocks::exchange::BlockBuf),
        /// Sealed, in the ring file's mapping.
        Slot(&'a [u8]),
    }

    /// Writes `bytes` to `fd`, as far as it goes.
    fn write_all(fd: libc::c_int, bytes: &[u8]) {
        let mut done = 0;
        while done < bytes.len() {
            // SAFETY: writes from a live buffer to a descriptor the sinks own (their lock held).
            let n = unsafe { libc::write(fd, bytes[done..].as_ptr().cast(), bytes.len() - done) };
            if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if n <= 0 {
                break;
            }
            done += n as usize;
        }
    }
}
