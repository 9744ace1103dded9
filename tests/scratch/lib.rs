//! A test's scratch directory, one implementation for every crate of the workspace (a
//! dev-dependency of event-format, event-runtime and event-dump, and re-exported by the
//! workspace tests' `event_tests`): made empty when a test starts, removed when it passes
//! (some tests write a gigabyte of ring files a run), kept when it fails.

pub mod imports;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A test's scratch directory, which derefs to its path. Made empty by [`Scratch::new`] (one
/// left by an earlier process of the same id is removed first); dropped, it removes itself
/// and all in it if the test passed, and is kept if the test is panicking, with one line on
/// stderr saying where, for whoever looks into the failure. Declare it before any child
/// process or recording that writes into it, so that those are killed, waited for or stopped
/// (dropped) before it goes. Tests that run at once must each have a directory of their own:
/// the first to pass would remove a shared one under the other, so asking for one that a
/// running test of the process holds panics.
#[derive(Debug)]
pub struct Scratch(PathBuf);

/// The scratch directories of this process's running tests.
static LIVE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

impl Scratch {
    /// The directory `path`, made empty: the test's own.
    pub fn new(path: PathBuf) -> Scratch {
        let fresh = LIVE.lock().unwrap_or_else(|p| p.into_inner()).insert(path.clone());
        assert!(fresh, "two tests at once in one scratch directory, {}: give each a name of its own", path.display());
        if path.exists() {
            remove_all(&path);
        }
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Scratch(path)
    }

    /// The directory `{name}-{process id}` under `base` (a test crate's
    /// `env!("CARGO_TARGET_TMPDIR")`), made empty: one per process, so that suites that run
    /// at once never share one.
    pub fn named(base: &str, name: &str) -> Scratch {
        Scratch::new(Path::new(base).join(format!("{name}-{}", std::process::id())))
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("scratch directory kept (the test failed): {}", self.0.display());
        } else {
            remove_all(&self.0);
        }
        LIVE.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.0);
    }
}

/// Removes `d` and all in it, directories a test left read-only included (each is made
/// writable again first). What cannot be removed is left, with one line on stderr: the test
/// passed, and its leftovers are no reason to fail it.
fn remove_all(d: &Path) {
    if std::fs::remove_dir_all(d).is_ok() {
        return;
    }
    writable(d);
    if let Err(e) = std::fs::remove_dir_all(d)
        && d.exists()
    {
        eprintln!("scratch directory {} not removed: {e}", d.display());
    }
}

/// Makes `d` and every directory under it writable and searchable by its owner.
fn writable(d: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::symlink_metadata(d)
            && meta.is_dir()
        {
            let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(meta.permissions().mode() | 0o700));
            for entry in std::fs::read_dir(d).into_iter().flatten().flatten() {
                writable(&entry.path());
            }
        }
    }
}
