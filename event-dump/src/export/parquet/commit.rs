//! The Parquet export's commit and durability: the run's lock file, and putting the run's
//! files in place (the marker, the renames, `logs` files last) with the files and
//! directories synced, and the temporary files of an interrupted run removed.

use super::errors::{Result, io_error};
use super::layout::{LAYOUT_VERSION, LOCK, MARKER};
use crate::log::DumpError;
use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// The lock file of a run, removed when dropped.
pub(super) struct Lock(PathBuf);

impl Lock {
    pub(super) fn take(out: &Path) -> Result<Lock> {
        let path = out.join(LOCK);
        match fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut f) => {
                let _ = writeln!(f, "{}", std::process::id());
                Ok(Lock(path))
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let pid = fs::read_to_string(&path).unwrap_or_default();
                Err(DumpError::new(format!(
                    "{}: another export is writing this dataset (pid {}); if none is, remove {} and run again",
                    out.display(),
                    pid.trim(),
                    path.display()
                )))
            }
            Err(e) => Err(io_error(&path, &e)),
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// A finished file of the run: (its temporary name, its name in the dataset).
pub(super) type Rename = (PathBuf, PathBuf);

/// The most threads that sync a log's files: syncs wait for the disk, not a core, and the
/// file system makes one commit of those that wait together, where syncs one after another
/// take a commit each.
const SYNC_THREADS: usize = 8;

/// Syncs the directories `dirs` (so that the entries made in them, files renamed in and
/// directories created, are on disk as the files' data are), [`sync_each`]. Where a
/// directory cannot be opened as a file (not on Unix), nothing.
fn sync_dirs(dirs: &BTreeSet<PathBuf>) -> Result<()> {
    if !cfg!(unix) {
        return Ok(());
    }
    let dirs: Vec<&PathBuf> = dirs.iter().collect();
    sync_each(&dirs, |dir| File::open(dir)?.sync_all(), |i| dirs.get(i).map_or_else(PathBuf::new, |d| d.to_path_buf()))
}

/// Syncs each of `items` by `sync` on up to [`SYNC_THREADS`] threads at once, each taking
/// the next item not yet taken; the first error, of the first item that failed (`shown`
/// names item `i`). Without a thread (the system refuses every one), one after another.
pub(super) fn sync_each<T: Sync>(
    items: &[T],
    sync: impl Fn(&T) -> io::Result<()> + Sync,
    shown: impl Fn(usize) -> PathBuf + Sync,
) -> Result<()> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let each = || {
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            if let Err(e) = sync(item)
                && let Ok(mut failures) = failures.lock()
            {
                failures.push((i, io_error(&shown(i), &e)));
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..SYNC_THREADS.min(items.len()) {
            if std::thread::Builder::new().name("parquet-sync".into()).spawn_scoped(scope, each).is_err() {
                break;
            }
        }
        // This thread syncs too, and alone when the system refused every other.
        each();
    });
    let failures = failures.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    match failures.into_iter().min_by_key(|(i, _)| *i) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// The directories a run made: the dataset `out` (`created`: by this run), and those
/// within it (`within`, the tables' and their partitions').
pub(super) struct Dirs<'a> {
    pub(super) out: &'a Path,
    pub(super) created: bool,
    pub(super) within: &'a [PathBuf],
}

/// Puts the run's files in place, durably: the marker first (synced, and the dataset's
/// directory, and its parent when the run created it), then the event, `threads` and
/// empty-table files renamed and their directories synced (and those of the directories the
/// run created), then each log's `logs` file renamed and its directory synced: a `logs` row
/// is never on disk before the files of its log, and when the run ends every file and
/// directory it made is. `renaming` is set once a file is renamed: from then on an error
/// leaves the files in place (and their directories).
pub(super) fn commit(dirs: &Dirs<'_>, files: &[Rename], logs_files: &[Rename], renaming: &mut bool) -> Result<()> {
    let out = dirs.out;
    let marker = out.join(MARKER);
    let mut to_sync = BTreeSet::new();
    if !marker.exists() {
        let text = format!("event-dump parquet dataset, layout {LAYOUT_VERSION}\n");
        let written = File::create(&marker).and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.sync_all()
        });
        written.map_err(|e| io_error(&marker, &e))?;
        to_sync.insert(out.to_path_buf());
    }
    if dirs.created
        && let Some(parent) = out.parent()
    {
        // `out` itself, `.` when it is a bare name.
        to_sync.insert(if parent.as_os_str().is_empty() { PathBuf::from(".") } else { parent.to_path_buf() });
    }
    let removed = remove_stale_temps(files.iter().chain(logs_files));
    if removed > 0 {
        eprintln!(
            "event-dump: {}: removed {removed} temporary file(s) that an interrupted export of these logs left",
            out.display()
        );
    }
    let mut renamed = |files: &[Rename], to_sync: &mut BTreeSet<PathBuf>| -> Result<()> {
        for (temp, path) in files {
            *renaming = true;
            if let Err(e) = fs::rename(temp, path) {
                let error = io_error(path, &e);
                return Err(DumpError::new(format!(
                    "{}; files of this run already renamed stay: export the same logs again to complete them",
                    error.0.trim_end_matches("; the dataset is as it was")
                )));
            }
            if let Some(dir) = path.parent() {
                to_sync.insert(dir.to_path_buf());
            }
        }
        sync_dirs(to_sync).map_err(|e| {
            DumpError::new(format!(
                "{}; the files of this run are in place but may not be on disk: export the same logs again to make sure",
                e.0.trim_end_matches("; the dataset is as it was")
            ))
        })
    };
    // A directory the run created is an entry of its parent (the dataset's or a table's).
    to_sync.extend(dirs.within.iter().filter_map(|d| d.parent()).map(Path::to_path_buf));
    renamed(files, &mut to_sync)?;
    renamed(logs_files, &mut BTreeSet::new())
}

/// Removes the temporary files that an interrupted export of the same files left beside
/// them (`.<id>.parquet.PID.tmp` of another run); returns how many.
fn remove_stale_temps<'a>(files: impl Iterator<Item = &'a Rename> + Clone) -> usize {
    let mut removed = 0;
    let dirs: BTreeSet<(&Path, String)> = files
        .clone()
        .filter_map(|(_, path)| Some((path.parent()?, format!(".{}.", path.file_name()?.to_str()?))))
        .collect();
    let ours: BTreeSet<&Path> = files.map(|(temp, _)| temp.as_path()).collect();
    for (dir, prefix) in dirs {
        let Ok(entries) = fs::read_dir(dir) else { continue };
        for e in entries.filter_map(std::result::Result::ok) {
            let path = e.path();
            let stale = e.file_name().to_str().is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".tmp"));
            if stale && !ours.contains(path.as_path()) && fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}
