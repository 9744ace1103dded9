//! What the workspace tests share: the programs they run (this package's bins) and starting
//! `recorder-child`, which `runtime` and `security` both record with.

pub(crate) use event_tests::Scratch;
use std::io::{BufRead, BufReader};
use std::path::Path;
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
/// ([`Scratch`]).
pub(crate) fn dir(module: &str, name: &str) -> Scratch {
    Scratch::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{module}-{name}-{}", std::process::id())))
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
