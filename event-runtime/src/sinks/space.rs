//! Room on the disk for what the writer must still write: before each write to the event file
//! the writer makes sure the file system holds the bytes it writes *and* the stop block that
//! may have to follow them, so that a full disk always leaves a whole stream whose stop
//! marker says `disk full` (docs/FORMAT.md, "The clean stop"; docs/guide/long-running-services.md).
//!
//! The room is taken with `fallocate(FALLOC_FL_KEEP_SIZE)` beyond the end of the file (the
//! file's size does not change, so a reader sees nothing of it), and the process's file size
//! limit (`RLIMIT_FSIZE`) is honoured as a disk that ends there: a write past it would raise
//! SIGXFSZ, which the recorder never causes. Where the file system cannot allocate ahead
//! (`EOPNOTSUPP`), the write goes on without a reserve, as before. The sinks ask for a block
//! more than a write needs and ask again only when a write needs more (`Sinks::write_file`).
//!
//! The budget's floor of free space (`EVENT_KEEP`'s `free=`) asks the file system how much
//! is free (`statvfs`).
//!
//! This is one of the crate's modules with `unsafe` code: `getrlimit`, `fallocate` and
//! `statvfs`.
#![allow(unsafe_code)]

use std::fs::File;
use std::io;

/// Whether the file system (or the size limit) has no room for `len` more bytes at `at`.
#[derive(Debug)]
pub(crate) enum Room {
    /// The room is there (or cannot be reserved ahead on this file system).
    Made,
    /// No space: the disk is full, the quota is spent, or the file size limit is reached.
    Full(io::Error),
}

/// Makes room in `file` for `len` bytes at offset `at`.
pub(crate) fn make_room(file: &File, at: u64, len: u64) -> Room {
    if cfg!(miri) {
        // Miri has neither `getrlimit` nor `fallocate`: no reserve, as on a file system without.
        return Room::Made;
    }
    let end = at.saturating_add(len);
    if let Some(limit) = size_limit()
        && end > limit
    {
        return Room::Full(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("the file size limit (RLIMIT_FSIZE, {limit} bytes) is reached"),
        ));
    }
    allocate(file, at, len)
}

/// The bytes an unprivileged process may still write on the file system of `dir`
/// (`statvfs`'s available blocks), `None` where that cannot be told.
#[cfg(unix)]
// The fields' types differ between systems.
#[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
pub(crate) fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    if cfg!(miri) {
        return None;
    }
    let dir = if dir.as_os_str().is_empty() { std::path::Path::new(".") } else { dir };
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: all-zero bytes are a valid `statvfs` (integers only).
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `stat` a writable struct, both alive for
    // the call.
    let r = unsafe { libc::statvfs(path.as_ptr(), &mut stat) };
    (r == 0).then(|| (stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

#[cfg(not(unix))]
pub(crate) fn free_bytes(_dir: &std::path::Path) -> Option<u64> {
    None
}

/// Whether `e` says that the disk has no room: no space, no quota, the file too large.
pub(crate) fn is_no_space(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded | io::ErrorKind::FileTooLarge)
}

/// The process's file size limit in bytes, `None` when there is none.
#[cfg(unix)]
// `rlim_t` is `u64` here, narrower on some 32-bit systems.
#[allow(clippy::useless_conversion)]
fn size_limit() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `getrlimit` writes the limit into the struct we pass, which lives for the call.
    let r = unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) };
    (r == 0 && limit.rlim_cur != libc::RLIM_INFINITY).then_some(u64::from(limit.rlim_cur))
}

#[cfg(not(unix))]
fn size_limit() -> Option<u64> {
    None
}

#[cfg(target_os = "linux")]
fn allocate(file: &File, at: u64, len: u64) -> Room {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(length)) = (libc::off_t::try_from(at), libc::off_t::try_from(len)) else {
        return Room::Made;
    };
    loop {
        // SAFETY: `fallocate` only reads its arguments; the descriptor is open for the call
        // (borrowed from `file`). KEEP_SIZE leaves the file's size, and so its content, as is.
        let r = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, length) };
        if r == 0 {
            return Room::Made;
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            _ if is_no_space(&e) => return Room::Full(e),
            // Not supported here (tmpfs of old kernels, network file systems): no reserve.
            _ => return Room::Made,
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn allocate(_file: &File, _at: u64, _len: u64) -> Room {
    Room::Made
}
