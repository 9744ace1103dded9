//! Whether a log's writer is still at work: one answer ([`WriterLiveness`]) by one rule, for
//! every reader that asks (event-dump's `check` and `stats`, `follow`, `control`, and the
//! opener's `.open` segments through [`OpenOptions::writer_alive`](super::OpenOptions)).
//!
//! The rule, in the order of what a reader can know:
//!
//! 1. **The lock.** A recorder holds an exclusive advisory lock (`flock`) on each file it
//!    writes, ring file, event file or segment, for as long as it writes it (event-runtime's
//!    `files`); the system releases it however the process ends. Where the lock can be
//!    asked, it decides: held, [`Running`](WriterLiveness::Running); free,
//!    [`Gone`](WriterLiveness::Gone). A writer stopped or hung still holds it: it is running.
//! 2. **The heartbeat.** Where no lock can be asked (Windows, where the recorder takes none;
//!    a Unix system without file locks; a file the reader cannot open), a ring file's
//!    heartbeat (docs/FORMAT.md, "Ring file": refreshed about every 20 ms) decides by its
//!    age: younger than [`HEARTBEAT_FRESH_NS`], running; older, gone.
//! 3. **The process**, only where the caller knows the writer is of this machine and has no
//!    file of it to ask (`follow` between two segments of a recording it has followed): the
//!    process of its pid exists or not, where the system tells (`/proc`).
//!
//! Anything else is [`Unknown`](WriterLiveness::Unknown), and each reader says what it takes
//! it for (`check` a writer gone, `follow` one that may still write).

use std::fs::File;
use std::path::Path;

/// How recent a ring file's heartbeat must be, in nanoseconds, for its writer to count as
/// running where no lock tells (rule 2 of the module docs): a hundred times the writer's
/// period, so that a writer thread a loaded machine keeps waiting is not taken for dead.
pub const HEARTBEAT_FRESH_NS: u64 = 2_000_000_000;

/// Whether a log's writer is still at work, by the one rule of the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriterLiveness {
    /// Its writer holds the file (or, without a lock to ask, beat its heart a moment ago):
    /// the log may still grow.
    Running,
    /// No writer holds it (or its heartbeat stopped): the log will not change again; without
    /// a clean stop, the writer was killed.
    Gone,
    /// Nothing tells: no lock to ask, no heartbeat, no process.
    Unknown,
}

/// What a reader knows of a writer, for [`WriterLiveness::decide`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Evidence {
    /// Whether another open file holds the recorder's lock on the file ([`lock_held`]);
    /// `None` where that cannot be asked.
    pub lock: Option<bool>,
    /// A ring file's heartbeat, ns since the Unix epoch; `None` for a stream (which has none).
    pub heartbeat_ns: Option<u64>,
    /// Whether the writer's process exists ([`process_exists`]); `None` where the system
    /// does not tell, or where the pid may be another machine's.
    pub process: Option<bool>,
}

impl WriterLiveness {
    /// The one rule (module docs) over `evidence`, at the wall time `now_ns` (ns since the
    /// Unix epoch).
    pub fn decide(evidence: Evidence, now_ns: u64) -> WriterLiveness {
        let running = |yes: bool| if yes { WriterLiveness::Running } else { WriterLiveness::Gone };
        if let Some(held) = evidence.lock {
            return running(held);
        }
        if let Some(beat) = evidence.heartbeat_ns {
            return running(now_ns.saturating_sub(beat) < HEARTBEAT_FRESH_NS);
        }
        evidence.process.map_or(WriterLiveness::Unknown, running)
    }

    /// The writer of the file at `path` (a stream, a segment or a ring file, whose heartbeat
    /// `heartbeat_ns` is), now: its lock, else its heartbeat.
    pub fn of_path(path: &Path, heartbeat_ns: Option<u64>) -> WriterLiveness {
        let lock = match open_regular(path) {
            Some(file) => lock_held(&file),
            None => None,
        };
        WriterLiveness::decide(Evidence { lock, heartbeat_ns, process: None }, now_ns())
    }

    /// The writer of `file`, open here (a ring file `control` writes to), now: its lock, else
    /// its heartbeat `heartbeat_ns`.
    pub fn of_file(file: &File, heartbeat_ns: Option<u64>) -> WriterLiveness {
        let lock = if file.metadata().is_ok_and(|m| m.is_file()) { lock_held(file) } else { None };
        WriterLiveness::decide(Evidence { lock, heartbeat_ns, process: None }, now_ns())
    }

    /// The writer that is process `pid` of this machine, when no file of it can be asked
    /// (rule 3 of the module docs).
    pub fn of_process(pid: u64) -> WriterLiveness {
        WriterLiveness::decide(Evidence { process: process_exists(pid), ..Evidence::default() }, now_ns())
    }

    /// Whether it is [`Running`](WriterLiveness::Running).
    pub fn is_running(self) -> bool {
        self == WriterLiveness::Running
    }
}

/// Whether the writer of the file at `path` is running ([`WriterLiveness::of_path`], no
/// heartbeat): what [`OpenOptions::writer_alive`](super::OpenOptions) takes.
pub fn writer_running(path: &Path) -> bool {
    WriterLiveness::of_path(path, None).is_running()
}

/// Whether another open file (of any process) holds the recorder's lock on `file`: a shared
/// lock cannot be had without waiting. The lock is tested, not kept: when it can be had, it is
/// released at once, so that a recorder that starts meanwhile finds the file free. `None`
/// where the system has no file locks the recorder takes (Windows, where a lock is mandatory
/// and the recorder takes none; a Unix system where std has none) or the test fails.
pub fn lock_held(file: &File) -> Option<bool> {
    if cfg!(not(unix)) {
        return None;
    }
    loop {
        match file.try_lock_shared() {
            Ok(()) => {
                let _ = file.unlock();
                return Some(false);
            }
            Err(std::fs::TryLockError::WouldBlock) => return Some(true),
            Err(std::fs::TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(std::fs::TryLockError::Error(_)) => return None,
        }
    }
}

/// Whether a process `pid` exists on this machine; `None` where the system does not tell
/// (no `/proc`).
pub fn process_exists(pid: u64) -> Option<bool> {
    let proc = Path::new("/proc");
    proc.is_dir().then(|| proc.join(pid.to_string()).exists())
}

/// The regular file at `path`, opened for reading; `None` for anything else (a pipe has no
/// writer to ask) or what cannot be opened.
fn open_regular(path: &Path) -> Option<File> {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    File::open(path).ok()
}

/// The wall time now, ns since the Unix epoch.
fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000_000_000;

    fn decide(lock: Option<bool>, heartbeat_ns: Option<u64>, process: Option<bool>) -> WriterLiveness {
        WriterLiveness::decide(Evidence { lock, heartbeat_ns, process }, NOW)
    }

    #[test]
    fn the_lock_decides_whatever_the_heartbeat_says() {
        use WriterLiveness::*;
        assert_eq!(decide(Some(true), Some(0), Some(false)), Running, "a hung writer holds its lock");
        assert_eq!(decide(Some(false), Some(NOW), Some(true)), Gone, "killed a moment ago");
    }

    #[test]
    fn without_a_lock_the_heartbeat_decides_by_one_threshold() {
        use WriterLiveness::*;
        assert_eq!(decide(None, Some(NOW - HEARTBEAT_FRESH_NS + 1), None), Running);
        assert_eq!(decide(None, Some(NOW - HEARTBEAT_FRESH_NS), None), Gone);
        assert_eq!(decide(None, Some(NOW - HEARTBEAT_FRESH_NS), Some(true)), Gone, "before the process");
        // A heartbeat ahead of the reader's clock (another machine's) is fresh.
        assert_eq!(decide(None, Some(NOW + 1), None), Running);
    }

    #[test]
    fn without_a_lock_or_a_heartbeat_the_process_decides_else_nothing_does() {
        use WriterLiveness::*;
        assert_eq!(decide(None, None, Some(true)), Running);
        assert_eq!(decide(None, None, Some(false)), Gone);
        assert_eq!(decide(None, None, None), Unknown);
    }

    /// The lock is asked of the file itself: held by another open file, running; free, gone;
    /// a path with no regular file, nothing to ask.
    #[test]
    #[cfg(unix)]
    #[cfg_attr(miri, ignore = "opens files")]
    fn a_file_is_asked_its_lock_and_the_test_keeps_none() {
        let path = std::env::temp_dir().join(format!("liveness-{}.evt", std::process::id()));
        let writer = File::create(&path).unwrap();
        assert_eq!(WriterLiveness::of_path(&path, None), WriterLiveness::Gone);
        writer.lock().unwrap();
        assert_eq!(WriterLiveness::of_path(&path, None), WriterLiveness::Running);
        assert!(writer_running(&path));
        // A stale heartbeat changes nothing while the lock tells.
        assert_eq!(WriterLiveness::of_path(&path, Some(0)), WriterLiveness::Running);
        assert_eq!(WriterLiveness::of_file(&File::open(&path).unwrap(), Some(0)), WriterLiveness::Running);
        writer.unlock().unwrap();
        // The reader's test took no lock that stays: the writer can lock again at once.
        assert_eq!(WriterLiveness::of_path(&path, None), WriterLiveness::Gone);
        writer.try_lock().unwrap();
        drop(writer);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(WriterLiveness::of_path(&path, None), WriterLiveness::Unknown);
        assert_eq!(WriterLiveness::of_path(&path, Some(now_ns())), WriterLiveness::Running, "by its heartbeat");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn this_process_exists() {
        assert_eq!(process_exists(u64::from(std::process::id())), Some(true));
        assert_eq!(WriterLiveness::of_process(u64::from(std::process::id())), WriterLiveness::Running);
        assert_eq!(process_exists(u64::MAX), Some(false));
    }
}
