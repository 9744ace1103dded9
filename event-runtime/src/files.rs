//! The recorder's files inside somebody else's process: what a path pattern names (`%p`,
//! `%t`, `%h`, `%n`, `%r`, `%%`), whether the path holds a file of ours that may be replaced, and
//! the lock that says a file has a live writer.
//!
//! A tracer must never harm its host's files. So a path is used only when it holds nothing,
//! an empty regular file (what `mktemp` makes), or an event log or ring file of ours (its
//! first bytes are the stream's or the ring file's magic) that no live process writes;
//! anything else (a file of other content, a symbolic link, a device, a FIFO, a socket) is
//! refused with one line and left as it is. A directory at the path is refused as a path
//! under a missing directory is: no file can ever be made there, so the setting is wrong and
//! the start fails (an I/O error, `is a directory`), left as it is all the same. An older trace of ours is not
//! overwritten: it is renamed `NAME.old`, as perf keeps `perf.data.old`, and the new file is
//! created exclusively (`O_EXCL`, mode 0600) at the final name. Not at a temporary name
//! renamed at the end: a ring file must be at its name while the program runs, for
//! `event-dump follow` and `control`, and an event file must be there if the program
//! crashes, which is when it matters most.
//!
//! A recorder holds an exclusive advisory lock (`flock`) on each file it writes for as long
//! as it writes it. A second process given the same path finds the lock, leaves the file to
//! its writer and records to `STEM-PID.EXT` instead, saying where in one line (the case of a
//! program's children, which inherit `EVENT_FILE`). The lock is advisory: readers take none.

use event_format::ring::RING_MAGIC;
use event_format::wire::MAGIC;
use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The default event file of [`crate::start`]: one per recording. The recording id makes two
/// runs' names differ however fast a crash loop restarts, and whatever their pids (every
/// container's program is pid 1).
pub(crate) const DEFAULT_EVENT_FILE: &str = "%n-%p-%r.evt";

/// What a patterned path may contain, for messages.
const PATTERNS: &str =
    "%p (process id), %t (start time), %h (host name), %n (program name), %r (recording id) or %% (a %)";

/// What a recording gives a pattern's `%h` and `%r`: its host name (`EVENT_HOST`, else the
/// system's) and its recording id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Naming {
    /// The host name, as the header names it.
    pub(crate) host: String,
    /// The recording id, 32 hex digits.
    pub(crate) recording: String,
}

/// Which of the recorder's files a path is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// The event file (`EVENT_FILE`).
    EventFile,
    /// The ring file (`EVENT_RING`).
    RingFile,
}

impl Purpose {
    /// The environment variable that names the file.
    pub(crate) fn variable(self) -> &'static str {
        match self {
            Purpose::EventFile => "EVENT_FILE",
            Purpose::RingFile => "EVENT_RING",
        }
    }

    /// What the file is, for messages.
    pub(crate) fn what(self) -> &'static str {
        match self {
            Purpose::EventFile => "event file",
            Purpose::RingFile => "ring file",
        }
    }

    /// What a regular file of other content is, for the refusal.
    fn not_ours(self) -> &'static str {
        match self {
            Purpose::EventFile => "exists and is not an event log",
            Purpose::RingFile => "exists and is not a ring file or event log",
        }
    }
}

/// Checks that `pattern` has only the escapes [`expand`] knows; the error says which one it
/// does not and what it accepts.
pub(crate) fn check_pattern(pattern: &Path) -> Result<(), String> {
    expand_with(pattern, |c| matches!(c, 'p' | 't' | 'h' | 'n' | 'r').then(OsString::new)).map(drop)
}

/// `pattern` with `%p` (this process's id), `%t` (now, in seconds since 1970), `%h` (the
/// host name), `%n` (the program's name), `%r` (the recording id) and `%%` (a `%`)
/// replaced; another `%` escape, or a `%` at the end, is an error that says what is accepted.
/// A host or program name never brings a `/` into the path.
pub(crate) fn expand(pattern: &Path, naming: &Naming) -> Result<PathBuf, String> {
    expand_with(pattern, |c| {
        let value = match c {
            'h' => naming.host.clone(),
            'r' => naming.recording.clone(),
            c => process_value(c)?,
        };
        Some(OsString::from(value.replace('/', "_")))
    })
}

/// `pattern` with the escapes that do not depend on a recording replaced (`%p`, `%t`, `%n`,
/// `%%`): what a snapshot's pattern holds once [`pre_expand`] gave it the recording's.
pub(crate) fn expand_process(pattern: &Path) -> Result<PathBuf, String> {
    expand_with(pattern, |c| process_value(c).map(|v| OsString::from(v.replace('/', "_"))))
}

/// `pattern` with only `%h` and `%r` replaced by `naming`'s; every other escape kept as
/// written (for [`expand_process`] to replace later, or to refuse), a snapshot's `%s` too.
pub(crate) fn pre_expand(pattern: &Path, naming: &Naming) -> PathBuf {
    let host = naming.host.replace(['/', '%'], "_");
    let mut out = OsString::new();
    let mut rest = pattern.as_os_str().as_encoded_bytes();
    while let Some(at) = rest.iter().position(|&b| b == b'%') {
        out.push(from_bytes(&rest[..at]));
        let end = (at + 2).min(rest.len());
        match rest.get(at + 1) {
            Some(b'h') => out.push(&host),
            Some(b'r') => out.push(&naming.recording),
            // An escape cut inside a character is left for `expand_process` to refuse.
            Some(c) if !c.is_ascii() => {
                out.push(from_bytes(&rest[at..]));
                rest = &[];
                break;
            }
            _ => out.push(from_bytes(&rest[at..end])),
        }
        rest = &rest[end..];
    }
    out.push(from_bytes(rest));
    PathBuf::from(out)
}

/// What `%p`, `%t` and `%n` give in this process now.
fn process_value(c: char) -> Option<String> {
    Some(match c {
        'p' => std::process::id().to_string(),
        't' => {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()).to_string()
        }
        'n' => program_name(),
        _ => return None,
    })
}

/// The program's name: its executable's file name without extension (`%n`).
pub(crate) fn program_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "events".to_owned())
}

fn expand_with(pattern: &Path, value: impl Fn(char) -> Option<OsString>) -> Result<PathBuf, String> {
    let bytes = pattern.as_os_str().as_encoded_bytes();
    if !bytes.contains(&b'%') {
        return Ok(pattern.to_owned());
    }
    let mut out = OsString::new();
    let mut rest = bytes;
    while let Some(at) = rest.iter().position(|&b| b == b'%') {
        out.push(from_bytes(&rest[..at]));
        let escape = rest.get(at + 1).copied();
        match escape {
            Some(b'%') => out.push("%"),
            Some(c) if c.is_ascii() => match value(c as char) {
                Some(v) => out.push(v),
                None => return Err(format!("unknown pattern %{}; write {PATTERNS}", c as char)),
            },
            _ => return Err(format!("a % that is not a pattern; write {PATTERNS}")),
        }
        rest = &rest[at + 2..];
    }
    out.push(from_bytes(rest));
    Ok(PathBuf::from(out))
}

/// The `OsStr` of `bytes`, a piece of a path's bytes cut at ASCII `%` escapes.
fn from_bytes(bytes: &[u8]) -> &OsStr {
    #[cfg(unix)]
    {
        std::os::unix::ffi::OsStrExt::from_bytes(bytes)
    }
    #[cfg(not(unix))]
    {
        // Elsewhere the encoding is WTF-8, cut at ASCII: valid UTF-8 wherever the path was.
        OsStr::new(std::str::from_utf8(bytes).unwrap_or("_"))
    }
}

/// `path` with `-PID` added to its stem: `trace.evt` -> `trace-4242.evt`.
pub(crate) fn with_pid(path: &Path, pid: u32) -> PathBuf {
    let stem = path.file_stem().unwrap_or_else(|| OsStr::new("events"));
    let mut name = stem.to_owned();
    name.push(format!("-{pid}"));
    if let Some(ext) = path.extension() {
        name.push(".");
        name.push(ext);
    }
    path.with_file_name(name)
}

/// `path` with `.old` added: where the previous trace is kept.
pub(crate) fn old_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".old");
    PathBuf::from(name)
}

/// A file the recorder may write: created (or, when it was empty, opened) by us, locked, at
/// `path`.
#[derive(Debug)]
pub(crate) struct Claimed {
    /// Where it is: the path asked for, or its `-PID` alternative.
    pub(crate) path: PathBuf,
    /// The file, open for reading and writing and locked for as long as it stays open.
    pub(crate) file: File,
    /// One line for stderr when it is not at the path asked for.
    pub(crate) notice: Option<String>,
}

/// Why a path was not claimed.
#[derive(Debug)]
pub(crate) enum ClaimError {
    /// The path holds something that is not ours, or a live writer's file (and so does its
    /// `-PID` alternative): one line, naming the path and what to do. Nothing was changed.
    Refused(String),
    /// The file could not be created (a missing directory, permission denied, ...).
    Io(io::Error),
}

impl From<io::Error> for ClaimError {
    fn from(e: io::Error) -> ClaimError {
        ClaimError::Io(e)
    }
}

/// Claims `path` for `purpose` (module docs): a new file created there, an empty file used in
/// place, or an older trace of ours moved to `NAME.old` and a new file created. When a live
/// process holds the file, `STEM-PID.EXT` is claimed instead.
pub(crate) fn claim(path: &Path, purpose: Purpose) -> Result<Claimed, ClaimError> {
    match claim_here(path, purpose)? {
        Some((file, kept)) => Ok(Claimed { path: path.to_owned(), file, notice: kept.then(|| kept_line(path)) }),
        None => {
            let instead = with_pid(path, std::process::id());
            match claim_here(&instead, purpose)? {
                Some((file, kept)) if kept => Ok(Claimed { notice: Some(kept_line(&instead)), path: instead, file }),
                Some((file, _)) => Ok(Claimed {
                    notice: Some(format!(
                        "{} is being written by another live process; recording to {} instead",
                        path.display(),
                        instead.display()
                    )),
                    path: instead,
                    file,
                }),
                None => Err(ClaimError::Refused(format!(
                    "not recording to {}: it and {} are being written by other live processes; choose another {}",
                    path.display(),
                    instead.display(),
                    purpose.variable()
                ))),
            }
        }
    }
}

/// The line that says an earlier trace at `path` was kept aside.
fn kept_line(path: &Path) -> String {
    format!(
        "{} held an earlier run's trace: it is kept as {}, and this run records to {}",
        path.display(),
        old_path(path).display(),
        path.display()
    )
}

/// What a path holds, as far as the recorder cares.
enum Found {
    /// Nothing.
    Nothing,
    /// A regular file of ours (or an empty one), open read-only, its lock taken.
    Ours { file: File, empty: bool },
    /// A regular file of ours that a live process has locked.
    Busy,
    /// Something that is not ours: what it is, e.g. `is a FIFO` (`None`: a regular file of
    /// other content).
    Foreign(Option<&'static str>),
}

/// Claims `path` itself: `Ok(None)` when a live writer holds it; with the file, whether an
/// earlier trace at the path was kept aside as `NAME.old`.
fn claim_here(path: &Path, purpose: Purpose) -> Result<Option<(File, bool)>, ClaimError> {
    let foreign = |what: Option<&'static str>| what.unwrap_or(purpose.not_ours());
    let mut kept = false;
    // Each turn either ends or finds that the path changed under us; a few are plenty.
    for _ in 0..4 {
        match inspect(path)? {
            Found::Nothing => match create_new(path) {
                Ok(file) => return Ok(try_lock(&file)?.then_some((file, kept))),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e.into()),
            },
            // A directory at the path: no file can ever be made there, as under a missing
            // directory; the setting is wrong, and the start fails as it does for that one
            // (README, "Configuration": one rule for a path that can hold no file).
            Found::Foreign(Some(DIRECTORY)) => return Err(ClaimError::Io(io::ErrorKind::IsADirectory.into())),
            Found::Foreign(what) => {
                return Err(ClaimError::Refused(format!(
                    "not recording to {}: it {}; remove it or choose another {}",
                    path.display(),
                    foreign(what),
                    purpose.variable()
                )));
            }
            Found::Busy => return Ok(None),
            Found::Ours { file, empty: true } => {
                // Used in place: nothing is lost, and whoever made it (mktemp) meant it for us.
                drop(file);
                let Ok(file) = open_existing(path, true) else { continue };
                if !try_lock(&file)? {
                    return Ok(None);
                }
                let meta = file.metadata()?;
                if meta.is_file() && meta.len() == 0 {
                    set_private(&file)?;
                    return Ok(Some((file, kept)));
                }
            }
            Found::Ours { file, empty: false } => {
                let old = old_path(path);
                let refused = |what: &str| {
                    ClaimError::Refused(format!(
                        "not recording to {}: its previous trace would be kept as {}, which {what}; remove {} or choose another {}",
                        path.display(),
                        old.display(),
                        old.display(),
                        purpose.variable()
                    ))
                };
                match inspect(&old)? {
                    Found::Nothing | Found::Ours { .. } => {}
                    Found::Busy => return Err(refused("a live process is writing")),
                    Found::Foreign(what) => return Err(refused(foreign(what))),
                }
                std::fs::rename(path, &old)?;
                kept = true;
                // Released after the rename, so that no other process of ours claims the old
                // trace meanwhile.
                drop(file);
            }
        }
    }
    Err(ClaimError::Io(io::Error::other("the path keeps changing while it is claimed")))
}

/// What `path` holds. A regular file is opened (never a device or a FIFO: opening one can
/// have effects) and locked to be read.
fn inspect(path: &Path) -> io::Result<Found> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => return Err(e),
    };
    if let Some(kind) = not_regular(&meta) {
        return Ok(Found::Foreign(Some(kind)));
    }
    let file = match open_existing(path, false) {
        Ok(f) => f,
        // It went between the look and the open: nothing there now.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(e) => return Err(e),
    };
    // It may have been replaced between the look and the open (by a link: O_NOFOLLOW refused
    // it above; by a FIFO: O_NONBLOCK opened it without waiting).
    if let Some(kind) = not_regular(&file.metadata()?) {
        return Ok(Found::Foreign(Some(kind)));
    }
    if !try_lock(&file)? {
        return Ok(Found::Busy);
    }
    // Under the lock: no recorder of ours writes it now, so its first bytes stay as read.
    let mut first = Vec::with_capacity(MAGIC.len());
    (&file).take(MAGIC.len() as u64).read_to_end(&mut first)?;
    if first.is_empty() {
        return Ok(Found::Ours { file, empty: true });
    }
    // A prefix of a magic counts: a header cut short is still a trace of ours.
    if MAGIC.starts_with(&first) || RING_MAGIC.starts_with(&first) {
        Ok(Found::Ours { file, empty: false })
    } else {
        Ok(Found::Foreign(None))
    }
}

/// What a directory is, in [`not_regular`]'s words.
const DIRECTORY: &str = "is a directory";

/// What `meta` is when it is not a regular file: "is a symbolic link (not followed)", ...
fn not_regular(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_symlink() {
        return Some("is a symbolic link (not followed)");
    }
    if t.is_dir() {
        return Some(DIRECTORY);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("is a FIFO");
        }
        if t.is_socket() {
            return Some("is a socket");
        }
        if t.is_char_device() || t.is_block_device() {
            return Some("is a device");
        }
    }
    Some("is not a regular file")
}

/// Opens the existing regular file at `path` without following a link and without blocking
/// (should it have become a FIFO), for reading and, when `write`, writing. Never truncates.
fn open_existing(path: &Path, write: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(write);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    options.open(path)
}

/// Creates a new file at `path`, exclusively (`O_EXCL`: never an existing file or a link's
/// target), readable and writable by its owner only.
fn create_new(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Makes `file` readable and writable by its owner only.
fn set_private(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    let _ = file;
    Ok(())
}

/// Whether `path` still names `file` (not removed, not replaced by another file or a
/// symbolic link). Where that cannot be told (not Unix), whether the path exists.
pub(crate) fn names(path: &Path, file: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(file) = file.metadata() else { return false };
        std::fs::symlink_metadata(path).is_ok_and(|p| p.dev() == file.dev() && p.ino() == file.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        path.exists()
    }
}

/// Removes `path`, a file the recorder claimed and then gave up before it held anything of a
/// trace, if the path still names `file` (not removed or replaced meanwhile). Called while
/// `file`, and so its lock, is still held: no other process of ours can have claimed it.
pub(crate) fn discard(path: &Path, file: &File) {
    if names(path, file) {
        let _ = std::fs::remove_file(path);
    }
}

/// Creates a segment file at `path` exclusively (`O_EXCL`, mode 0600: never an existing file
/// or a link's target) and locks it for as long as it is open (module docs).
pub(crate) fn create_segment(path: &Path) -> io::Result<File> {
    let file = create_new(path)?;
    if !try_lock(&file)? {
        return Err(io::Error::other("another process locked it at once"));
    }
    Ok(file)
}

/// Gives the file at `from` (ours) the name `to` without ever replacing a file at `to`: a
/// hard link made exclusively, then `from` removed; where the file system has no hard links,
/// a rename once `to` is found free. `AlreadyExists` when `to` names something.
pub(crate) fn rename_new(from: &Path, to: &Path) -> io::Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => std::fs::remove_file(from),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        Err(_) => match std::fs::symlink_metadata(to) {
            Ok(_) => Err(io::Error::new(io::ErrorKind::AlreadyExists, "the name is taken")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => std::fs::rename(from, to),
            Err(e) => Err(e),
        },
    }
}

/// Opens the regular file at `path` for reading, never following a link nor blocking on a
/// FIFO; an error for anything that is not a regular file.
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    let file = open_existing(path, false)?;
    if not_regular(&file.metadata()?).is_some() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// Takes the recorder's exclusive lock on `file` without waiting: `false` when a live
/// process (a recorder writing it) holds it. The lock lasts until `file` is closed.
///
/// std's [`File::try_lock`], which is `flock(LOCK_EX | LOCK_NB)` on Linux, the BSDs and
/// macOS: the lock a reader tests. A Unix system where std has no file locks takes none, as
/// Windows does not: there `LockFileEx` is a mandatory lock that would fail a reader's reads
/// of the file, and a reader tells a live writer by the ring file's heartbeat instead.
#[cfg(unix)]
pub(crate) fn try_lock(file: &File) -> io::Result<bool> {
    use std::fs::TryLockError;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(true),
            Err(TryLockError::WouldBlock) => return Ok(false),
            Err(TryLockError::Error(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => return Ok(true),
            Err(TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Without file locks (Windows: module docs of `try_lock`), every file is ours to write.
#[cfg(not(unix))]
pub(crate) fn try_lock(_file: &File) -> io::Result<bool> {
    Ok(true)
}

/// Releases the lock on `file` before it is closed (a ring file whose recording has ended
/// while threads still hold its slots); an error changes nothing that matters (the lock
/// goes at the close).
pub(crate) fn unlock(file: &File) {
    if cfg!(unix) {
        let _ = file.unlock();
    }
}

/// This machine's name, for the stream header (format 2.0.1); `None` when the system does
/// not tell (or under Miri, which has no `gethostname`).
pub(crate) fn host_name() -> Option<String> {
    if cfg!(miri) { None } else { sys::host_name() }
}

/// Lowers the calling thread's scheduling priority by `steps` nice levels (to 19 at most),
/// on Linux, where a thread has a nice value of its own; elsewhere (where it is the
/// process's) nothing. What the writer thread does as it starts (`writer`).
pub(crate) fn lower_this_thread(steps: i32) {
    if !cfg!(miri) {
        sys::lower_this_thread(steps);
    }
}

/// The C calls the module needs, `gethostname` and (for the writer thread) `getpriority`
/// and `setpriority`, the only `unsafe` here.
#[allow(unsafe_code)]
mod sys {
    /// The host name, when the system tells it.
    #[cfg(unix)]
    pub(super) fn host_name() -> Option<String> {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer is writable for its whole length, which is what we pass.
        let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        if r != 0 {
            return None;
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        let name = String::from_utf8_lossy(&buf[..end]).into_owned();
        (!name.is_empty()).then_some(name)
    }

    /// See [`super::lower_this_thread`].
    #[cfg(target_os = "linux")]
    pub(super) fn lower_this_thread(steps: i32) {
        // SAFETY: `__errno_location` gives this thread's errno, which `getpriority` sets on
        // an error (its -1 is also a valid nice value); the calls only read their arguments.
        // `who` 0 is the calling thread on Linux (its nice value is its own).
        unsafe {
            *libc::__errno_location() = 0;
            let now = libc::getpriority(libc::PRIO_PROCESS, 0);
            if now == -1 && *libc::__errno_location() != 0 {
                return;
            }
            let _ = libc::setpriority(libc::PRIO_PROCESS, 0, (now + steps).min(19));
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn lower_this_thread(_steps: i32) {}

    #[cfg(not(unix))]
    pub(super) fn host_name() -> Option<String> {
        std::env::var("COMPUTERNAME").ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "calls gethostname, which Miri does not provide")]
    fn patterns_expand_and_unknown_ones_are_refused() {
        let pid = std::process::id().to_string();
        let naming = Naming { host: "host/a".into(), recording: "0123456789abcdef0123456789abcdef".into() };
        let expand = |p: &str| expand(Path::new(p), &naming);
        assert_eq!(expand("a-%p.evt").unwrap(), PathBuf::from(format!("a-{pid}.evt")));
        assert_eq!(expand("100%%-%n").unwrap(), PathBuf::from(format!("100%-{}", program_name())));
        assert_eq!(expand("plain.evt").unwrap(), PathBuf::from("plain.evt"));
        assert_eq!(expand("%h").unwrap(), PathBuf::from("host_a"), "a host name brings no `/`");
        assert_eq!(expand("t-%r.evt").unwrap(), PathBuf::from("t-0123456789abcdef0123456789abcdef.evt"));
        let t: u64 = expand("%t").unwrap().to_string_lossy().parse().unwrap();
        assert!(t > 1_600_000_000);
        // A snapshot's pattern: the recording's escapes now, the process's (and `%s`) later.
        let pre = pre_expand(Path::new("s-%h-%r-%p-%%r-%s.evt"), &naming);
        assert_eq!(pre, PathBuf::from("s-host_a-0123456789abcdef0123456789abcdef-%p-%%r-%s.evt"));
        assert_eq!(
            expand_process(&PathBuf::from(pre.to_string_lossy().replace("%s", "3"))).unwrap(),
            PathBuf::from(format!("s-host_a-0123456789abcdef0123456789abcdef-{pid}-%r-3.evt"))
        );
        assert_eq!(check_pattern(Path::new("x-%q.evt")).unwrap_err(), format!("unknown pattern %q; write {PATTERNS}"));
        assert!(check_pattern(Path::new("x-%")).unwrap_err().starts_with("a % that is not a pattern"));
        assert!(check_pattern(Path::new("x-%é")).is_err());
        assert!(check_pattern(Path::new(DEFAULT_EVENT_FILE)).is_ok());
    }

    #[test]
    fn alternative_and_old_names() {
        assert_eq!(with_pid(Path::new("d/trace.evt"), 42), PathBuf::from("d/trace-42.evt"));
        assert_eq!(with_pid(Path::new("trace"), 42), PathBuf::from("trace-42"));
        assert_eq!(old_path(Path::new("d/trace.evt")), PathBuf::from("d/trace.evt.old"));
    }
}
