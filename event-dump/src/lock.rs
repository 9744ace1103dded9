//! Whether a stream's writer is still at work: the recorder holds an exclusive advisory lock
//! (`flock`) on each event file for as long as it writes it (event-runtime's `files`). The one
//! system call of event-dump that needs `unsafe`.

use std::path::Path;

/// Whether another process holds the recorder's lock on the regular file at `path`: a shared
/// lock cannot be had without waiting. The lock is tested, not kept: when it can be had, it
/// is released at once, so that a recorder that starts meanwhile finds the file free. `false`
/// where the file cannot be opened, is not a regular file (a pipe has no writer to ask), or
/// the system has no `flock`.
pub(crate) fn held_by_writer(path: &Path) -> bool {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(file) = std::fs::File::open(path) else { return false };
    sys::locked_elsewhere(&file)
}

#[cfg(unix)]
mod sys {
    use std::fs::File;
    use std::os::fd::AsRawFd;

    pub(super) fn locked_elsewhere(file: &File) -> bool {
        // SAFETY: `flock` only reads its arguments; the descriptor is open for the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0 {
            // SAFETY: as above; the lock just taken goes at once.
            unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
            return false;
        }
        std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
    }
}

#[cfg(not(unix))]
mod sys {
    pub(super) fn locked_elsewhere(_file: &std::fs::File) -> bool {
        false
    }
}
