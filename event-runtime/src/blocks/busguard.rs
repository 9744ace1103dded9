//! The ring file's guard against SIGBUS: no recording thread dies because someone cut the
//! ring file short under its mapping (docs/guide/guarantees.md; SECURITY.md, "Files").
//!
//! A ring file is allocated on the disk before it is mapped (`ringfile::back`), so a disk
//! that fills later cannot take its pages. But a file can still be truncated while it is
//! mapped (`truncate -s 0`, a log rotation's `copytruncate`, a shell's `>`), and a page of the
//! mapping past the file's new end then answers every access with SIGBUS, whose default action
//! kills the process. So, while a ring file is mapped, a SIGBUS handler
//! (`SA_SIGINFO | SA_ONSTACK`) looks at the fault's address:
//!
//! - inside a guarded mapping, it maps anonymous memory over the whole mapping (`MAP_FIXED`,
//!   one `mmap` call: only system calls, async-signal-safe), marks the ring file lost, and
//!   returns: the access is retried and lands in the new memory. The whole mapping, not the
//!   faulting page: the cut took every record past the file's new end, and from that one
//!   instant on, everything the threads write is whole again (a block begun after it is
//!   intact; one begun before is not, and is counted lost: `ringfile::block_is_intact`). A
//!   fault that meets the replacement under way returns and is retried until it is done.
//! - anywhere else (or a SIGBUS sent with `kill`), it does what the kernel would have done
//!   with the action it found when it was installed: std's handler (which reports a stack
//!   overflow) or another function is called, with or without `SA_SIGINFO`, under its mask;
//!   for the default action it restores it and returns, so that the fault repeats and kills
//!   the process as it would have (a sent signal is raised again); an ignored one is restored
//!   and, for a fault, the kernel then kills the process as it always does.
//!
//! The writer thread (or the stop) says the loss on stderr, once (`ringfile::RingFile::lost`).
//!
//! The handler is installed when the first guarded mapping is registered, and the previous
//! action restored when the last one goes, unless a program installed its own over ours
//! meanwhile: then ours is left where it is, reached through that handler if it chains (with
//! no mapping registered it only passes the signal on). `Signals::None` (`EVENT_SIGNALS=none`)
//! installs nothing: a truncated ring file then kills the program.
//!
//! This is one of the crate's modules with `unsafe` code: the handler, `sigaction` and `mmap`.
#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

/// Mappings guarded at once: a recording's ring file, and in a forked child its parent's too.
const ENTRIES: usize = 4;

/// An entry's states. `FREE` -> `ARMED` (registered) -> `REPLACING` -> `REPLACED` (lost), or
/// `FAILED` when the replacement could not be mapped (the fault then takes its course).
const FREE: u32 = 0;
const ARMED: u32 = 1;
const REPLACING: u32 = 2;
const REPLACED: u32 = 3;
const FAILED: u32 = 4;

/// Faults after the replacement that the handler retries at most (each thread that faulted
/// while it was under way retries once); past that something else is wrong, and the fault
/// takes its course.
const LATE_FAULTS: u32 = 1 << 12;

/// A guarded mapping: `len` bytes from `base`, valid while `state` is not `FREE`.
struct Entry {
    /// Taken by a registration (`register`), given back when it is dropped.
    used: AtomicBool,
    base: AtomicUsize,
    len: AtomicUsize,
    state: AtomicU32,
    late: AtomicU32,
}

#[allow(clippy::declare_interior_mutable_const)] // a template for the array below, never shared
const ENTRY: Entry = Entry {
    used: AtomicBool::new(false),
    base: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    state: AtomicU32::new(FREE),
    late: AtomicU32::new(0),
};

static TABLE: [Entry; ENTRIES] = [ENTRY; ENTRIES];

/// The action SIGBUS had when ours was installed, for the handler to pass other faults on
/// to: two slots, the live one named by `LIVE`. An install writes the other slot, then names
/// it, so a handler that is reading the live one (a fault elsewhere at that instant) reads a
/// whole action.
struct Saved(UnsafeCell<MaybeUninit<libc::sigaction>>);

// SAFETY: a slot is written only under `INSTALL`'s lock while it is not the live one, and read
// (copied) by the handler only once `LIVE` names it (release/acquire).
unsafe impl Sync for Saved {}

static PREVIOUS: [Saved; 2] =
    [Saved(UnsafeCell::new(MaybeUninit::uninit())), Saved(UnsafeCell::new(MaybeUninit::uninit()))];
/// The slot of `PREVIOUS` that holds the action to pass on to; `NONE` before the first install.
static LIVE: AtomicUsize = AtomicUsize::new(NONE);
const NONE: usize = usize::MAX;

/// Whether the handler is installed, and for how many mappings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Installed {
    /// Not installed (or restored).
    No,
    /// Ours is SIGBUS's action.
    Yes,
    /// A program's handler replaced ours; ours stays reachable if it chains.
    Under,
}

static INSTALL: Mutex<(Installed, usize)> = Mutex::new((Installed::No, 0));

/// The guard's lock, held across `fork()` (`fork`'s *prepare*), so that a child never finds
/// it held by a thread that does not exist there (a ring file made or dropped on another
/// thread at that instant): its own ring file would wait for it for ever.
#[derive(Debug)]
pub(crate) struct ForkHold {
    _lock: std::sync::MutexGuard<'static, (Installed, usize)>,
}

/// Takes the guard's lock for a `fork()`.
pub(crate) fn hold_for_fork() -> ForkHold {
    ForkHold { _lock: crate::locks::lock(&INSTALL) }
}

/// A mapping under the guard, from [`register`] until dropped (which must come before the
/// mapping is unmapped).
#[derive(Debug)]
pub(crate) struct Guard {
    index: usize,
}

impl Guard {
    /// Whether the guard replaced the mapping: the file was cut short under it, and what it
    /// held is gone. Nothing written to the mapping from then on reaches the file.
    pub(crate) fn is_lost(&self) -> bool {
        // Acquire: a thread that sees the replacement done writes after it, into the new memory.
        TABLE[self.index].state.load(Ordering::Acquire) >= REPLACING
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let e = &TABLE[self.index];
        // The handler ignores the entry from here on; the mapping goes only after this.
        e.state.store(FREE, Ordering::Release);
        e.base.store(0, Ordering::Relaxed);
        e.len.store(0, Ordering::Relaxed);
        e.late.store(0, Ordering::Relaxed);
        e.used.store(false, Ordering::Release);
        let mut install = crate::locks::lock(&INSTALL);
        install.1 -= 1;
        if install.1 == 0 && install.0 == Installed::Yes {
            if is_ours() {
                restore_previous();
                install.0 = Installed::No;
            } else {
                install.0 = Installed::Under;
            }
        }
    }
}

/// Guards `len` bytes of a ring file's shared mapping from `base` (module docs), installing
/// the handler if it is not. `None` when the table is full (the mapping is then unguarded).
pub(crate) fn register(base: *mut u8, len: usize) -> Option<Guard> {
    let mut install = crate::locks::lock(&INSTALL);
    let index =
        TABLE.iter().position(|e| e.used.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok())?;
    let e = &TABLE[index];
    e.base.store(base as usize, Ordering::Relaxed);
    e.len.store(len, Ordering::Relaxed);
    e.late.store(0, Ordering::Relaxed);
    // Release: a handler that sees the entry armed sees its range.
    e.state.store(ARMED, Ordering::Release);
    install.1 += 1;
    match install.0 {
        Installed::Yes => {}
        Installed::Under if !is_ours() => {}
        Installed::Under => install.0 = Installed::Yes,
        Installed::No => {
            install_ours();
            install.0 = Installed::Yes;
        }
    }
    Some(Guard { index })
}

/// Whether our handler is SIGBUS's action now.
fn is_ours() -> bool {
    // SAFETY: a zeroed sigaction is a valid value to be overwritten; with a null new action,
    // sigaction only reads the current one.
    unsafe {
        let mut now: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut now) == 0
            && now.sa_sigaction == on_sigbus as *const () as usize
    }
}

/// Saves SIGBUS's action in the slot that is not live, names it, and installs ours.
fn install_ours() {
    let slot = if LIVE.load(Ordering::Relaxed) == 0 { 1 } else { 0 };
    // SAFETY: `slot` is not the live one and `INSTALL`'s lock is held (the only writer); a
    // zeroed sigaction is valid, and with a null new action sigaction only reads the
    // current one into it. Then ours: an `extern "C"` function of the SA_SIGINFO signature,
    // on the alternate stack where there is one (a fault may come from a stack overflow, as
    // std's handler knows), with an empty mask.
    unsafe {
        let saved = (*PREVIOUS[slot].0.get()).as_mut_ptr();
        saved.write(std::mem::zeroed());
        if libc::sigaction(libc::SIGBUS, std::ptr::null(), saved) != 0 {
            return;
        }
        LIVE.store(slot, Ordering::Release);
        let mut ours: libc::sigaction = std::mem::zeroed();
        ours.sa_sigaction = on_sigbus as *const () as usize;
        ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut ours.sa_mask);
        libc::sigaction(libc::SIGBUS, &ours, std::ptr::null_mut());
    }
}

/// The action ours replaced; `None` before the first install.
fn previous() -> Option<libc::sigaction> {
    let slot = LIVE.load(Ordering::Acquire);
    // SAFETY: a slot named by `LIVE` was written whole before it was named (release above,
    // acquire here) and is not written while it is live.
    (slot != NONE).then(|| unsafe { (*PREVIOUS[slot].0.get()).assume_init_read() })
}

/// Gives SIGBUS the action ours replaced.
fn restore_previous() {
    if let Some(previous) = previous() {
        // SAFETY: `previous` is an action sigaction returned, so a valid one to set again.
        unsafe { libc::sigaction(libc::SIGBUS, &previous, std::ptr::null_mut()) };
    }
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler (and a program that
    // chains to us passes the one it got).
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    // A fault the kernel raised (`si_code > 0`); one sent with `kill` names no address.
    if code > 0 {
        for e in &TABLE {
            let state = e.state.load(Ordering::Acquire);
            if state == FREE {
                continue;
            }
            let (base, len) = (e.base.load(Ordering::Relaxed), e.len.load(Ordering::Relaxed));
            if addr < base || addr - base >= len {
                continue;
            }
            match state {
                ARMED => {
                    if e.state.compare_exchange(ARMED, REPLACING, Ordering::AcqRel, Ordering::Acquire).is_err() {
                        // Another thread is replacing it: retry the access.
                        return;
                    }
                    // SAFETY: `base..base + len` is the ring file's mapping, registered and
                    // not unregistered (a registration is dropped before its mapping is
                    // unmapped, and this fault comes from an access to it). Mapping anonymous
                    // memory over it replaces it in one system call, which is
                    // async-signal-safe.
                    let mapped = unsafe {
                        libc::mmap(
                            base as *mut libc::c_void,
                            len,
                            libc::PROT_READ | libc::PROT_WRITE,
                            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                            -1,
                            0,
                        )
                    };
                    if mapped == libc::MAP_FAILED {
                        e.state.store(FAILED, Ordering::Release);
                        break;
                    }
                    // Release: a thread that sees the replacement done writes into it.
                    e.state.store(REPLACED, Ordering::Release);
                    return;
                }
                // The access is retried until the replacement is done, and then once by each
                // thread whose fault came while it was under way.
                REPLACING => return,
                REPLACED if e.late.fetch_add(1, Ordering::Relaxed) < LATE_FAULTS => return,
                _ => break,
            }
        }
    }
    pass_on(sig, info, context, code);
}

/// Does with a SIGBUS that is not the ring file's what the kernel would have done with the
/// action ours replaced (module docs).
fn pass_on(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void, code: libc::c_int) {
    let Some(previous) = previous() else {
        // Cannot happen (ours is installed only after saving one); the default's way.
        // SAFETY: restoring the default action and raising are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        return;
    };
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        if handler == libc::SIG_IGN && code <= 0 {
            // A sent SIGBUS, ignored.
            return;
        }
        // SAFETY: `previous` is an action sigaction returned. Restored, a fault repeats as
        // this handler returns and the kernel takes the default action (for an ignored
        // fault too, as it always does); a sent signal is raised again, delivered as the
        // handler returns.
        unsafe {
            libc::sigaction(sig, &previous, std::ptr::null_mut());
            if code <= 0 {
                libc::raise(sig);
            }
        }
        return;
    }
    // A function: called as the kernel would have, under its mask, once if one-shot.
    // SAFETY: pthread_sigmask and sigaction are async-signal-safe; the masks are valid sets.
    // The function was installed as SIGBUS's handler with these flags, so it has the
    // signature they say, and we pass it what we were passed.
    unsafe {
        if previous.sa_flags & libc::SA_RESETHAND != 0 {
            libc::signal(sig, libc::SIG_DFL);
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &previous.sa_mask, &mut old);
        if previous.sa_flags & libc::SA_NODEFER != 0 {
            let mut this: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut this);
            libc::sigaddset(&mut this, sig);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &this, std::ptr::null_mut());
        }
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(handler);
            f(sig, info, context);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(handler);
            f(sig);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}
