//! event-runtime's integration tests, gathered in one test binary: one binary per file linked
//! the crate and its dev-dependencies once each. Each module's first line says what it covers.
//!
//! `tests/big.rs` stays a binary of its own: it includes another events.def, and
//! `include_events!` belongs at a crate's root (the `event!` it generates finds its set
//! through `$crate::events`), so one crate holds one event set's macro.
//!
//! `tracing_bridge` is compiled with feature `tracing` only (its `#![cfg]`, which was the
//! binary's `required-features`): `cargo test --workspace` turns the feature on through the
//! workspace tests' dependency, `cargo test -p event-runtime --features tracing` here.

event_runtime::include_events!("../events.def");

mod capture;
mod policies;
mod record;
mod tracing_bridge;
mod typed;
mod ui;

use std::sync::{Mutex, MutexGuard};

/// A process has one recording at a time: every test that records, in any module, holds this
/// while it does.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// An empty directory of the test `name`'s own, under `CARGO_TARGET_TMPDIR` (one per
/// process: no two tests of a process may name the same one, or the first to pass would
/// remove it under the other), removed when the test passes and kept when it fails
/// ([`Scratch`]). One left by an earlier process of the same id is removed first.
pub(crate) fn dir(name: &str) -> Scratch {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let fresh = LIVE.lock().unwrap_or_else(|p| p.into_inner()).insert(d.clone());
    assert!(fresh, "two tests at once in one scratch directory, {}: give each a name of its own", d.display());
    if d.exists() {
        remove_all(&d);
    }
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// The scratch directories of this process's running tests ([`dir`]).
static LIVE: Mutex<std::collections::BTreeSet<std::path::PathBuf>> = Mutex::new(std::collections::BTreeSet::new());

/// A test's scratch directory ([`dir`]), which derefs to its path. Dropped, it removes the
/// directory and all in it if the test passed, and keeps it if the test is panicking, saying
/// where on stderr, for whoever looks into the failure. Declare it before any recording or
/// child process that writes into it, so that those are stopped or waited for (dropped)
/// before it goes.
#[derive(Debug)]
pub(crate) struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;

    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
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
fn remove_all(d: &std::path::Path) {
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
fn writable(d: &std::path::Path) {
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
