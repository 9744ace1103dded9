//! What the workspace tests share: the programs they run (this package's bins) and starting
//! `recorder-child`, which `runtime` and `security` both record with.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// `recorder-child`: records numbered events as its arguments say (bin/recorder_child.rs).
pub(crate) const CHILD: &str = env!("CARGO_BIN_EXE_recorder-child");
/// `dump`: event-dump's CLI, built from this package (bin/dump.rs).
pub(crate) const DUMP: &str = env!("CARGO_BIN_EXE_dump");

/// A `recorder-child` command with `args`, none of the recorder's settings inherited from
/// this process's environment, and `env` set.
pub(crate) fn child(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(CHILD);
    c.args(args);
    for var in ["EVENT_FILE", "EVENT_RING", "EVENT_CONTROL", "EVENT_POLICY", "EVENT_BUFSIZE"] {
        c.env_remove(var);
    }
    c.envs(env.iter().copied());
    c
}

/// Starts a child and waits for its `ready` line.
pub(crate) fn start_ready(mut c: Command) -> Child {
    let mut child = c.stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "the child starts recording");
    child
}
