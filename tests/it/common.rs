//! What the workspace tests share: the programs they run (this package's bins) and starting
//! `recorder-child`, which `runtime` and `security` both record with.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// `recorder-child`: records numbered events as its arguments say (bin/recorder_child.rs).
pub(crate) const CHILD: &str = env!("CARGO_BIN_EXE_recorder-child");
/// `dump`: event-dump's CLI, built from this package (bin/dump.rs).
pub(crate) const DUMP: &str = env!("CARGO_BIN_EXE_dump");

/// A `recorder-child` command with `args`, none of the recorder's settings inherited from
/// this process's environment, and `env` set.
pub(crate) fn child(args: &[&str], env: &[(&str, &str)]) -> Command {
    program(CHILD, args, env)
}

/// The program `exe` with `args`, none of this process's `EVENT_*` variables inherited (the
/// recorder's settings, whatever the list is today), and `env` set.
pub(crate) fn program(exe: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(exe);
    c.args(args);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("EVENT_") {
            c.env_remove(name);
        }
    }
    c.envs(env.iter().copied());
    c
}

/// An empty directory of its own for the test `name` of the module `module` (one per
/// process: tests that run at once never share one, so no two calls in a process may name the
/// same one while both live), removed when the test passes and kept when it fails
/// ([`Scratch`]). One left by an earlier process of the same id is removed first.
pub(crate) fn dir(module: &str, name: &str) -> Scratch {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{module}-{name}-{}", std::process::id()));
    if d.exists() {
        remove_all(&d);
    }
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// A test's scratch directory ([`dir`]), which derefs to its path. Dropped, it removes the
/// directory and all in it if the test passed (some write a gigabyte of ring files a run),
/// and keeps it if the test is panicking, saying where on stderr, for whoever looks into the
/// failure. Declare it before any child process or recording that writes into it, so that
/// those are killed, waited for or stopped (dropped) before it goes.
#[derive(Debug)]
pub(crate) struct Scratch(PathBuf);

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

/// Starts a child and waits for its `ready` line. Its standard input is a pipe that this
/// process holds open until it drops `stdin` (or waits): a `hold` child runs until then. With
/// the test's own standard input inherited (often `/dev/null`), a `hold` child stopped and
/// exited as soon as it was ready, and a test that meant to kill it mid-recording raced it.
pub(crate) fn start_ready(mut c: Command) -> Child {
    let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "the child starts recording");
    child
}
