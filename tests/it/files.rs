//! The recorder's files, in a process of its own (`recorder-child`), checked on the file
//! system afterwards (SECURITY.md, "Faults", "Files"): nothing that is not a trace of ours is
//! ever overwritten or replaced (a file of other content, a symbolic link, a FIFO, a socket,
//! a directory, a device), each refusal is one line and the program goes on; an older trace
//! is kept as `NAME.old`; `EVENT_FILE` and `EVENT_RING` take patterns and the default gives
//! each process its own file; two live processes never write one file; a parent and the
//! child it runs each write a whole trace, which `event-dump print` merges.

#![cfg(unix)]

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::common::DUMP;

/// A directory of its own for each test.
fn dir(name: &str) -> crate::common::Scratch {
    crate::common::dir("files", name)
}

/// `recorder-child ARGS` in `dir`, with only the `EVENT_*` variables of `env`.
fn child(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = crate::common::child(args, env);
    c.current_dir(dir);
    c
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `c` to its end, within a minute: a recorder that opened a FIFO or a device and
/// waits on it would hang its host.
fn output(c: &mut Command) -> Output {
    let mut c = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while c.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = c.kill();
            panic!("the program hangs: {}", stderr(&c.wait_with_output().unwrap()));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    c.wait_with_output().unwrap()
}

/// Runs `recorder-child env` and expects it to succeed.
fn run_env(dir: &Path, env: &[(&str, &str)]) -> Output {
    let out = output(&mut child(dir, &["env"], env));
    assert!(out.status.success(), "{env:?}: {}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    out
}

/// The stream of the log or ring file at `path`.
fn stream(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if bytes.starts_with(&event_format::ring::RING_MAGIC) {
        event_tests::read_ring(path).unwrap_or_else(|e| panic!("{e}")).0
    } else {
        bytes
    }
}

/// Checks that `path` is whole (`event-dump check` agrees) and returns worker 0's numbers.
fn whole(path: &Path) -> Vec<u64> {
    let numbered = event_tests::numbered(&stream(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let check = Command::new(DUMP).arg("check").arg(path).output().unwrap();
    assert!(
        check.status.success(),
        "event-dump check {}: {}{}",
        path.display(),
        stderr(&check),
        String::from_utf8_lossy(&check.stdout)
    );
    numbered.by_worker.get(&0).cloned().unwrap_or_default()
}

/// What a path is, to compare before and after.
#[derive(Debug, PartialEq, Eq)]
struct Look {
    kind: &'static str,
    ino: u64,
    mode: u32,
    rdev: u64,
    link: Option<PathBuf>,
    bytes: Option<Vec<u8>>,
    entries: Option<Vec<PathBuf>>,
}

fn look(path: &Path) -> Look {
    let m = std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let t = m.file_type();
    let kind = if t.is_symlink() {
        "symlink"
    } else if t.is_file() {
        "file"
    } else if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "fifo"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "char device"
    } else {
        "other"
    };
    let mut entries = None;
    if t.is_dir() {
        let mut e: Vec<PathBuf> = std::fs::read_dir(path).unwrap().map(|e| e.unwrap().path()).collect();
        e.sort();
        entries = Some(e);
    }
    Look {
        kind,
        ino: m.ino(),
        mode: m.mode(),
        rdev: m.rdev(),
        link: t.is_symlink().then(|| std::fs::read_link(path).unwrap()),
        bytes: t.is_file().then(|| std::fs::read(path).unwrap()),
        entries,
    }
}

fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(st.success(), "mkfifo");
}

/// Makes a character device (the one of /dev/full) at `path` when this process may (as
/// root); `false`, with a message, otherwise.
fn mknod(path: &Path) -> bool {
    let ok = Command::new("mknod").arg(path).args(["c", "1", "7"]).status().is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipping the device node case: mknod needs root (the /dev/null case runs instead)");
    }
    ok
}

#[test]
fn what_is_not_a_trace_of_ours_is_left_alone_and_the_program_goes_on() {
    let d = dir("foreign");
    let notes = d.join("notes.txt");
    std::fs::write(&notes, "my notes, not a trace\n").unwrap();
    std::fs::set_permissions(&notes, std::fs::Permissions::from_mode(0o644)).unwrap();
    let target = d.join("target.txt");
    std::fs::write(&target, "the link's target\n").unwrap();
    let link = d.join("link.evt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let dangling = d.join("dangling.evt");
    std::os::unix::fs::symlink(d.join("nowhere.evt"), &dangling).unwrap();
    let fifo = d.join("fifo.evt");
    mkfifo(&fifo);
    let socket = d.join("socket.evt");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    // Not /dev/null as root: a recorder that writes there would change the system's node.
    let device = d.join("full.evt");
    let device = if mknod(&device) { device } else { PathBuf::from("/dev/null") };
    let cases = [
        (&notes, "exists and is not an event log", "exists and is not a ring file or event log"),
        (&link, "is a symbolic link (not followed)", ""),
        (&dangling, "is a symbolic link (not followed)", ""),
        (&fifo, "is a FIFO", ""),
        (&socket, "is a socket", ""),
        (&device, "is a device", ""),
    ];
    for (path, why, ring_why) in cases {
        for variable in ["EVENT_FILE", "EVENT_RING"] {
            let why = if variable == "EVENT_RING" && !ring_why.is_empty() { ring_why } else { why };
            let before = look(path);
            let target_before = look(&target);
            let out = run_env(&d, &[(variable, path.to_str().unwrap())]);
            assert_eq!(
                stderr(&out),
                format!(
                    "event-runtime: not recording to {}: it {why}; remove it or choose another {variable}\n",
                    path.display()
                ),
                "{variable}={}",
                path.display()
            );
            assert_eq!(look(path), before, "{variable}={}: left as it was", path.display());
            assert_eq!(look(&target), target_before, "the link's target is unchanged");
            assert!(!d.join("nowhere.evt").exists(), "nothing created through a dangling link");
            assert!(!d.join("link.evt.old").exists() && !d.join("notes.txt.old").exists(), "nothing moved aside");
        }
    }
}

#[test]
fn an_older_trace_is_kept_as_old_and_a_foreign_old_file_stops_the_replacement() {
    let d = dir("old");
    for (variable, name) in [("EVENT_FILE", "trace.evt"), ("EVENT_RING", "trace.ring")] {
        let path = d.join(name);
        let first = run_env(&d, &[(variable, name)]);
        assert_eq!(stderr(&first), "");
        let older = std::fs::read(&path).unwrap();
        assert_eq!(whole(&path).len(), 1000);
        let second = run_env(&d, &[(variable, name)]);
        let old = d.join(format!("{name}.old"));
        assert_eq!(
            stderr(&second),
            format!(
                "event-runtime: {name} held an earlier run's trace: it is kept as {name}.old, and this run records to {name}\n"
            ),
            "{variable}: one line says where the earlier trace went"
        );
        assert_eq!(
            std::fs::read(&old).unwrap(),
            older,
            "{variable}: the older trace is kept as {name}.old, byte for byte"
        );
        assert_eq!(whole(&path).len(), 1000, "{variable}: the new trace is whole");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        // A third run replaces the .old, which is a trace of ours.
        run_env(&d, &[(variable, name)]);
        assert_eq!(whole(&old).len(), 1000);
    }
    // A NAME.old that is not ours is not replaced: nothing is.
    let path = d.join("kept.evt");
    run_env(&d, &[("EVENT_FILE", "kept.evt")]);
    let old = d.join("kept.evt.old");
    std::fs::write(&old, "someone else's\n").unwrap();
    let (trace_before, old_before) = (look(&path), look(&old));
    let out = run_env(&d, &[("EVENT_FILE", "kept.evt")]);
    assert_eq!(
        stderr(&out),
        "event-runtime: not recording to kept.evt: its previous trace would be kept as kept.evt.old, which exists and is not an event log; remove kept.evt.old or choose another EVENT_FILE\n"
    );
    assert_eq!((look(&path), look(&old)), (trace_before, old_before));
}

#[test]
fn an_empty_file_is_recorded_into_in_place() {
    // What `mktemp` makes, and what a user hands over: nothing in it is lost.
    let d = dir("empty");
    let path = d.join("made-by-mktemp");
    std::fs::write(&path, "").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let ino = std::fs::metadata(&path).unwrap().ino();
    let out = run_env(&d, &[("EVENT_FILE", path.to_str().unwrap())]);
    assert_eq!(stderr(&out), "");
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!((meta.ino(), meta.permissions().mode() & 0o777), (ino, 0o600), "the same file, made private");
    assert_eq!(whole(&path).len(), 1000);
}

fn host_name() -> String {
    let out = Command::new("hostname").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().replace('/', "_")
}

#[test]
fn file_names_take_patterns_and_the_default_is_one_file_per_process() {
    let d = dir("patterns");
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    for variable in ["EVENT_FILE", "EVENT_RING"] {
        let before = now();
        let c = child(&d, &["env"], &[(variable, "%n-%p-%h-%t-100%%.x")]).stdout(Stdio::null()).spawn().unwrap();
        let pid = c.id();
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let after = now();
        let found: Vec<PathBuf> = (before..=after)
            .map(|t| d.join(format!("recorder-child-{pid}-{}-{t}-100%.x", host_name())))
            .filter(|p| p.exists())
            .collect();
        assert_eq!(found.len(), 1, "{variable}: {:?}", std::fs::read_dir(&d).unwrap().collect::<Vec<_>>());
        assert_eq!(whole(&found[0]).len(), 1000);
    }
    // `%r`, the recording id (the header's), and `%h` as EVENT_HOST gives it.
    let out = output(&mut child(&d, &["env"], &[("EVENT_FILE", "id-%h-%r.evt"), ("EVENT_HOST", "host-a")]));
    assert!(out.status.success(), "{}", stderr(&out));
    let named = only_file(&d, "id-host-a-");
    let id = header_of(&named).properties.recording.unwrap();
    assert_eq!(named, d.join(format!("id-host-a-{id}.evt")));
    // No sink named, but EVENT_CONTROL asks for a recording: `%n-%p-%r.evt`, one file per
    // recording. (Nothing in the environment records nothing: tests/it/startup.rs.)
    let c = child(&d, &["env"], &[("EVENT_CONTROL", "all")]).stdout(Stdio::null()).spawn().unwrap();
    let pid = c.id();
    assert!(c.wait_with_output().unwrap().status.success());
    let default = only_file(&d, &format!("recorder-child-{pid}-"));
    let id = header_of(&default).properties.recording.unwrap();
    assert_eq!(default, d.join(format!("recorder-child-{pid}-{id}.evt")));
    assert_eq!(whole(&default).len(), 1000);
    // An unknown pattern is a configuration error: one line, exit code 2, no file.
    for (variable, value, what) in
        [("EVENT_FILE", "a-%x.evt", "unknown pattern %x"), ("EVENT_RING", "b-%", "a % that is not a pattern")]
    {
        let out = output(&mut child(&d, &["env"], &[(variable, value)]));
        assert_eq!(out.status.code(), Some(2), "{variable}={value}");
        assert_eq!(
            stderr(&out),
            format!(
                "error: {variable}={value:?}: {what}; write %p (process id), %t (start time), %h (host name), %n (program name), %r (recording id) or %% (a %)\n"
            )
        );
    }
    assert!(!d.join("a-%x.evt").exists() && !d.join("b-%").exists());
}

/// The one file of `dir` whose name starts with `prefix`.
fn only_file(dir: &Path, prefix: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    assert_eq!(found.len(), 1, "one file {prefix}*: {found:?}");
    found.into_iter().next().unwrap()
}

/// The header of the stream at `path`.
fn header_of(path: &Path) -> event_format::wire::Header {
    event_format::decode::Decoder::new(&std::fs::read(path).unwrap()[..]).unwrap().header().clone()
}

/// A `recorder-child hold N` that has recorded and printed `ready`; it stops when its
/// standard input is closed. Killed when dropped.
struct Holding(Option<Child>);

impl Holding {
    fn start(dir: &Path, n: u64, env: &[(&str, &str)]) -> Holding {
        use std::io::BufRead;
        let mut c = child(dir, &["hold", &n.to_string()], env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(c.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        Holding(Some(c))
    }

    fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    /// Lets it stop; its stderr.
    fn finish(mut self) -> String {
        let mut c = self.0.take().unwrap();
        drop(c.stdin.take());
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stderr(&out)
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn two_live_processes_never_write_one_file() {
    let d = dir("two");
    for (variable, name, other) in
        [("EVENT_FILE", "shared.evt", "shared-{}.evt"), ("EVENT_RING", "shared.ring", "shared-{}.ring")]
    {
        let first = Holding::start(&d, 300, &[(variable, name)]);
        let second = Holding::start(&d, 500, &[(variable, name)]);
        let instead = other.replace("{}", &second.pid().to_string());
        let second_says = second.finish();
        assert_eq!(first.finish(), "");
        assert_eq!(
            second_says,
            format!("event-runtime: {name} is being written by another live process; recording to {instead} instead\n")
        );
        assert_eq!(
            whole(&d.join(name)),
            (0..300).collect::<Vec<_>>(),
            "{variable}: the first process's trace is whole"
        );
        assert_eq!(whole(&d.join(&instead)), (0..500).collect::<Vec<_>>(), "{variable}: the second's, beside it");
    }
    // Started at the same moment: whatever the order, every trace is whole and none is lost.
    for round in 0..4 {
        let name = format!("race-{round}.evt");
        let children: Vec<Child> = (0..2)
            .map(|_| {
                child(&d, &["env"], &[("EVENT_FILE", &name)])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut events = 0;
        for c in children {
            let pid = c.id();
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            let own = d.join(format!("race-{round}-{pid}.evt"));
            if own.exists() {
                assert!(stderr(&out).contains("being written by another live process"), "{}", stderr(&out));
                events += whole(&own).len();
            } else {
                // The one at the name, which kept the other's first trace aside if that ran
                // first, and said so.
                let said = stderr(&out);
                assert!(said.is_empty() || said.contains("held an earlier run's trace"), "round {round}: {said}");
            }
        }
        // The one at the name (the other's first trace, if it ran first, is its .old).
        events += whole(&d.join(&name)).len();
        if d.join(format!("{name}.old")).exists() {
            events += whole(&d.join(format!("{name}.old"))).len();
        }
        assert_eq!(events, 2000, "round {round}: both traces whole");
    }
}

#[test]
fn a_parent_and_the_child_it_runs_each_write_a_whole_trace_that_print_merges() {
    let d = dir("spawn");
    for (variable, pattern) in
        [("EVENT_FILE", "family.evt"), ("EVENT_FILE", "family-%p.evt"), ("EVENT_RING", "family.ring")]
    {
        for f in std::fs::read_dir(&d).unwrap() {
            std::fs::remove_file(f.unwrap().path()).unwrap();
        }
        let c = child(&d, &["spawn", "700"], &[(variable, pattern)])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = c.id();
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let parent = d.join(pattern.replace("%p", &pid.to_string()));
        let logs: Vec<PathBuf> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(logs.len(), 2, "{pattern}: one log each: {logs:?}");
        let child_log = logs.iter().find(|p| **p != parent).unwrap();
        assert_eq!(whole(&parent), (0..1400).collect::<Vec<_>>(), "{pattern}: the parent's trace is whole");
        assert_eq!(whole(child_log), (0..1000).collect::<Vec<_>>(), "{pattern}: the child's trace is whole");
        if !pattern.contains('%') {
            // The child found its parent's file live and said where it went instead.
            assert!(
                stderr(&out).starts_with(&format!(
                    "event-runtime: {pattern} is being written by another live process; recording to family-"
                )),
                "{}",
                stderr(&out)
            );
        }
        let print = Command::new(DUMP).arg("print").arg(&parent).arg(child_log).output().unwrap();
        assert!(print.status.success(), "{}", stderr(&print));
        let text = String::from_utf8_lossy(&print.stdout);
        assert_eq!(text.lines().filter(|l| l.contains("ArenaDestroy")).count(), 2400, "print merges both");
    }
}
