//! Whether a stream's writer is still at work: the recorder holds an exclusive advisory lock
//! (`flock`) on each event file for as long as it writes it (event-runtime's `files`).

use std::path::Path;

/// Whether another process holds the recorder's lock on the regular file at `path`: a shared
/// lock cannot be had without waiting. The lock is tested, not kept: when it can be had, it
/// is released at once, so that a recorder that starts meanwhile finds the file free. `false`
/// where the file cannot be opened, is not a regular file (a pipe has no writer to ask), or
/// the system has no file locks the recorder takes (Windows, where std's lock is mandatory
/// and the recorder takes none; a Unix system where std has none).
pub(crate) fn held_by_writer(path: &Path) -> bool {
    if cfg!(not(unix)) || !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(file) = std::fs::File::open(path) else { return false };
    loop {
        match file.try_lock_shared() {
            Ok(()) => {
                let _ = file.unlock();
                return false;
            }
            Err(std::fs::TryLockError::WouldBlock) => return true,
            Err(std::fs::TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(std::fs::TryLockError::Error(_)) => return false,
        }
    }
}
