//! `fork()` without `exec`: the child never touches its parent's recording, and records into
//! its own file (or nothing, with `EVENT_FORK=off`).
//!
//! After `fork()` the child has one thread and a copy of the parent's memory: the parent's
//! thread buffers, pool, queue and writer thread's state, its locks as they were at that
//! instant (held, perhaps, by threads that do not exist in the child), the descriptor of its
//! event file and the shared mapping of its ring file. Writing any of it would corrupt the
//! parent's trace (its file offset and its ring-file slots are shared with the child), and
//! waiting for any of it would hang or panic (the writer thread is not there to join).
//!
//! So, as LTTng-UST (`lttng_ust_before_fork`, `lttng_ust_after_fork_child`) and jemalloc
//! (`prefork`/`postfork`) do, handlers registered with `pthread_atfork` keep the process's
//! own state consistent across the fork:
//!
//! - *prepare* (in the forking thread, before the fork) takes the process-wide locks the
//!   child needs, the session's recorder (`session::hold_for_fork`), the selection
//!   (`control::hold_for_fork`), the fatal signals' handlers (`crash::hold_for_fork`) and the
//!   ring file's SIGBUS guard (`busguard::hold_for_fork`), in that order, so that none is
//!   copied held;
//! - *parent* gives them back;
//! - *child* (on the child's only thread) makes the parent's recording no longer current,
//!   keeping it (never touched) for its settings, bumps the generation so that every thread
//!   buffer is stale, and gives the locks back. Only moves and atomic stores: no allocation,
//!   no I/O, nothing that could wait.
//!
//! The child starts its own recording lazily, on its first event (`buffer`'s `attach`, via
//! `session::start_after_fork`), so that a child that only calls `exec` creates no file and
//! starts no thread. Its sinks are the parent's with the child's pid in their names
//! ([`child_path`]), its header its own. The parent's `Recording`, copied into the child, stops
//! the child's recording instead of its own (`recording`). The cold paths that could still
//! meet the parent's state (a stale thread buffer dropped, flushed or at thread exit; the
//! `Recording`'s stop; a fatal signal's flush) compare the pid that started the recording with
//! `std::process::id()` and leave the parent's state alone (leaked, on purpose: it is not
//! ours to free). The hot path gains no load: it sees a new generation, as after any stop.
//!
//! Nothing in the recorder joins or signals a thread: the writer thread is detached as it
//! starts, and the stop waits for its end through a channel (`writer::thread::WriterEnd`). A child
//! of `fork()` gets the parent's threads' stacks back from the C library's cache for its own
//! new threads (the child's writer among them), and a program's `JoinHandle`s copied from the
//! parent, dropped in the child (returning from `main`), detach whatever thread now has that
//! descriptor: a join of the child's own writer then failed (`pthread_join`: EINVAL), and
//! std's join panicked, exit 101.
//!
//! This is one of the crate's modules with `unsafe` code: registering the handlers.
#![allow(unsafe_code)]

use crate::emit::session;
use crate::files;
use crate::setup::crash;
use crate::writer::control;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Once;

static INSTALL: Once = Once::new();

thread_local! {
    /// The locks *prepare* took, for *parent* or *child* to give back: all three handlers run
    /// on the forking thread (in the child, on its copy).
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// The locks *prepare* takes, in this order (module docs).
type Held = (session::ForkHold, control::ForkHold, crash::ForkHold, Guard);

#[cfg(unix)]
type Guard = crate::blocks::busguard::ForkHold;
#[cfg(not(unix))]
type Guard = ();

#[cfg(unix)]
fn hold_guard() -> Guard {
    crate::blocks::busguard::hold_for_fork()
}
/// Registers the fork handlers, once per process (at the first start).
pub(crate) fn install() {
    INSTALL.call_once(|| {
        #[cfg(unix)]
        {
            // SAFETY: the three handlers are `extern "C"` functions without arguments, as
            // pthread_atfork requires, and none can panic (poisoned locks are taken anyway,
            // the thread-local is reached with `try_with` and `try_borrow_mut`); registering
            // has no other precondition.
            let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
            if rc != 0 {
                eprintln!(
                    "event-runtime: cannot register the fork handlers (error {rc}); a forked child that records may damage this process's trace"
                );
            }
        }
    });
}

#[cfg(unix)]
extern "C" fn prepare() {
    let held = (session::hold_for_fork(), control::hold_for_fork(), crash::hold_for_fork(), hold_guard());
    let _ = HELD.try_with(|h| {
        if let Ok(mut h) = h.try_borrow_mut() {
            *h = Some(held);
        }
    });
}

#[cfg(unix)]
extern "C" fn parent() {
    let _ = HELD.try_with(|h| {
        if let Ok(mut h) = h.try_borrow_mut() {
            *h = None;
        }
    });
}

#[cfg(unix)]
extern "C" fn child() {
    let _ = HELD.try_with(|h| {
        if let Ok(mut h) = h.try_borrow_mut()
            && let Some((session, control, signals, guard)) = h.take()
        {
            let records = session.in_child();
            control.in_child(records);
            crate::emit::divert::unwatch_after_fork();
            drop((signals, guard));
        }
    });
}

/// The file pattern a forked child with pid `pid` records to when its parent recorded to
/// `parent` (a pattern, as configured): the same when it names the pid (`%p` gives the child
/// its own file), else the pattern with the child's pid inserted before the extension, as a
/// second live writer of one path is named (`trace.evt` -> `trace-4242.evt`).
pub(crate) fn child_path(parent: &Path, pid: u32) -> PathBuf {
    if parent.as_os_str().as_encoded_bytes().windows(2).any(|w| w == b"%p") {
        return parent.to_owned();
    }
    files::with_pid(parent, pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_path_has_the_pid_before_the_extension() {
        assert_eq!(child_path(Path::new("/tmp/trace.evt"), 42), Path::new("/tmp/trace-42.evt"));
        assert_eq!(child_path(Path::new("trace"), 42), Path::new("trace-42"));
        assert_eq!(child_path(Path::new("d/x.tar.ring"), 7), Path::new("d/x.tar-7.ring"));
        assert_eq!(child_path(Path::new("d/%n-%p.evt"), 7), Path::new("d/%n-%p.evt"));
    }
}
