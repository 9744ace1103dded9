//! The recorder in the process models and faults a host program meets (`recorder-child`):
//! `fork()` without `exec` while threads record (and a child that returns from `main`),
//! buffers larger than the machine (`EVENT_BUFRESIZE`), a full disk (under the event file,
//! and under the ring file), a ring file removed or truncated while recording, a directory
//! that cannot be written. Each checks the exit status, stderr and the files afterwards.

use event_tests::{Numbered, numbered, read_ring};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::DUMP;

fn dir(name: &str) -> crate::common::Scratch {
    crate::common::dir("process", name)
}

fn child(args: &[&str], env: &[(&str, &str)]) -> Command {
    crate::common::child(args, env)
}

fn run(mut c: Command) -> Output {
    c.output().unwrap()
}

fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr).lines().map(str::to_owned).collect()
}

/// `event-dump check` on `paths`: its exit code and output.
fn check(paths: &[&Path]) -> (i32, String) {
    let out = Command::new(DUMP).arg("check").args(paths).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// The numbered events of the event file at `path`, which must decode whole.
fn events_in(path: &Path) -> Numbered {
    numbered(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Asserts that each of `workers` has a gap-free run of events from 0 (`len` long if given).
fn assert_runs(n: &Numbered, workers: &[u64], len: Option<u64>) {
    for w in workers {
        let ns = n.by_worker.get(w).unwrap_or_else(|| panic!("worker {w}: no events in {:?}", n.by_worker.keys()));
        assert!(!ns.is_empty() && ns[0] == 0, "worker {w} starts at {:?}", ns.first());
        assert!(ns.windows(2).all(|p| p[1] == p[0] + 1), "worker {w}: a gap or a repeat");
        if let Some(len) = len {
            assert_eq!(ns.len() as u64, len, "worker {w}: every event");
        }
    }
}

/// Runs `fork` mode (with `return` among `extra`, the child returns from `main`); returns the
/// child's pid, after checking both processes exited 0.
fn fork_run(path: &Path, kind: &str, extra: &[&str]) -> (u32, Output) {
    let mut args = vec!["fork", path.to_str().unwrap(), "3", "3000", kind];
    args.extend_from_slice(extra);
    let out = run(child(&args, &[("EVENT_BUFSIZE", "1m")]));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the parent exits 0: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout.lines().find(|l| l.starts_with("child ")).unwrap_or_else(|| panic!("no child line: {stdout}"));
    let parts: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(parts[2], "0", "the forked child exits 0 (101 is a panic): {}", String::from_utf8_lossy(&out.stderr));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "nothing panics: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (parts[1].parse().unwrap(), out)
}

#[test]
fn a_forked_child_records_into_its_own_event_file_and_the_parents_stays_whole() {
    let d = dir("fork-file");
    let path = d.join("trace.evt");
    let (pid, _) = fork_run(&path, "file", &[]);
    let parent = events_in(&path);
    assert_runs(&parent, &[0, 1, 2], None);
    assert!(parent.by_worker.keys().all(|w| *w < 3), "no event of the child in the parent's file");
    let own = d.join(format!("trace-{pid}.evt"));
    let child = events_in(&own);
    assert_runs(&child, &[1000, 1001], Some(3000));
    assert!(child.by_worker.keys().all(|w| *w >= 1000), "none of the parent's events in the child's file");
    let header = event_format::decode::Decoder::new(&std::fs::read(&own).unwrap()[..]).unwrap().header().clone();
    assert_eq!(header.producer.pid, u64::from(pid), "the child's file has its own header");
    for p in [&path, &own] {
        let (code, text) = check(&[p]);
        assert_eq!(code, 0, "{}: {text}", p.display());
    }
}

#[test]
fn a_forked_child_records_into_its_own_ring_file_and_the_parents_stays_whole() {
    let d = dir("fork-ring");
    let path = d.join("trace.ring");
    let (pid, _) = fork_run(&path, "ring", &[]);
    // The parent's ring file: closed, no damage, every worker a gap-free run.
    event_tests::check_ring(&path, event_format::ring::STATE_CLOSED, 3).unwrap_or_else(|e| panic!("parent: {e}"));
    let own = d.join(format!("trace-{pid}.ring"));
    let (stream, findings) = read_ring(&own).unwrap();
    assert_eq!(findings.state, event_format::ring::STATE_CLOSED, "the child closed its own ring file");
    assert!(findings.damaged.is_empty(), "{:?}", findings.damaged);
    let child = numbered(&stream).unwrap();
    assert!(child.by_worker.keys().all(|w| *w >= 1000), "none of the parent's events in the child's file");
    let ns = &child.by_worker[&1000];
    assert!(ns.windows(2).all(|p| p[1] == p[0] + 1) && ns.last() == Some(&2999), "the child's last events");
    let (code, text) = check(&[&own]);
    assert!(code == 0 || text.contains("gap"), "{text}");
}

#[test]
fn a_forked_child_that_returns_from_main_exits_0_and_both_logs_are_whole() {
    // The child drops the `Recording` it inherited from its parent's `main` as its own `main`
    // returns: that stops the child's own recording, and nothing of the parent's is joined
    // or touched (it panicked with `failed to join thread: Invalid argument`, exit 101).
    let d = dir("fork-return");
    let path = d.join("trace.evt");
    let (pid, _) = fork_run(&path, "file", &["return"]);
    assert_runs(&events_in(&path), &[0, 1, 2], None);
    let own = d.join(format!("trace-{pid}.evt"));
    assert_runs(&events_in(&own), &[1000, 1001], Some(3000));
    for p in [&path, &own] {
        let (code, text) = check(&[p]);
        assert_eq!(code, 0, "{}: {text}", p.display());
    }
    let path = d.join("trace.ring");
    let (pid, _) = fork_run(&path, "ring", &["return"]);
    event_tests::check_ring(&path, event_format::ring::STATE_CLOSED, 3).unwrap_or_else(|e| panic!("parent: {e}"));
    let (stream, findings) = read_ring(&d.join(format!("trace-{pid}.ring"))).unwrap();
    assert_eq!(findings.state, event_format::ring::STATE_CLOSED, "the child closed its own ring file");
    let child = numbered(&stream).unwrap();
    assert_eq!(child.by_worker[&1000].last(), Some(&2999), "the child's last events");
}

#[test]
fn a_forked_child_records_nothing_when_told_not_to() {
    let d = dir("fork-off");
    let path = d.join("trace.evt");
    let (pid, _) = fork_run(&path, "off", &[]);
    assert_runs(&events_in(&path), &[0, 1, 2], None);
    assert!(!d.join(format!("trace-{pid}.evt")).exists(), "no file for the child");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "the parent's file only");
}

#[test]
fn an_oversized_buffer_is_lowered_to_what_the_machine_holds() {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: the machine's memory is read on Linux only");
        return;
    }
    let d = dir("bufresize");
    for (name, extra) in [("switch", None), ("ring", Some("ring"))] {
        let path = d.join(format!("{name}.evt"));
        let mut env = vec![("EVENT_BUFSIZE", "1000g")];
        let ring = d.join(format!("{name}.ring"));
        if extra.is_some() {
            env.extend([("EVENT_POLICY", "ring"), ("EVENT_RING", ring.to_str().unwrap())]);
        } else {
            env.push(("EVENT_FILE", path.to_str().unwrap()));
        }
        let out = run(child(&["go-on", "5000"], &env));
        assert!(out.status.success(), "{name}: exit 0: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
        let lines = stderr_lines(&out);
        assert_eq!(lines.len(), 1, "{name}: one line: {lines:?}");
        assert!(
            lines[0].starts_with("event-runtime: buffer size lowered from 1000g to ") && lines[0].ends_with(')'),
            "{name}: {}",
            lines[0]
        );
        let trace = if extra.is_some() { ring.clone() } else { path.clone() };
        let (code, text) = check(&[&trace]);
        assert_eq!(code, 0, "{name}: a whole trace: {text}");
        let events = if extra.is_some() { numbered(&read_ring(&trace).unwrap().0).unwrap() } else { events_in(&trace) };
        assert_runs(&events, &[0], Some(5000));
        let _ = std::fs::remove_file(&ring);
    }
    // manual: refused, with the reason, and the program goes on.
    let path = d.join("manual.evt");
    let out = run(child(
        &["go-on", "10"],
        &[("EVENT_BUFSIZE", "1000g"), ("EVENT_BUFRESIZE", "manual"), ("EVENT_FILE", path.to_str().unwrap())],
    ));
    assert!(out.status.success());
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("error: EVENT_BUFSIZE=\"1000g\": buffer size 1000g is more than this machine can spare"),
        "{}",
        lines[0]
    );
    assert!(!path.exists(), "nothing created");
}

#[test]
fn a_full_disk_costs_the_rest_of_the_trace_not_the_program() {
    let d = dir("fsize");
    let path = d.join("trace.evt");
    // 256 KiB: the header and two blocks of 64 KiB fit, with the room kept for the stop block
    // (tests/it/segments.rs checks that block and its counts).
    let out = run(child(
        &["fsize", "262144", "200000"],
        &[("EVENT_FILE", path.to_str().unwrap()), ("EVENT_PACK", "off"), ("EVENT_BUFSIZE", "1m")],
    ));
    assert!(out.status.success(), "exit 0: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(
        lines[0].starts_with("event-runtime: no room on the disk for the event file")
            && lines[0].contains("it ends here, its stop marker says so"),
        "{}",
        lines[0]
    );
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() as u64 <= 262144);
    // Every block before the fault decodes, a run from event 0, and the file ends whole.
    let mut decoder = event_format::decode::Decoder::new(&bytes[..]).unwrap();
    let catalog = event_format::decode::Catalog::new(&decoder.header().sets);
    let mut last = None;
    let mut whole = 0;
    while let Some(Ok(block)) = decoder.next_block() {
        whole += 1;
        for entry in block.entries(&catalog) {
            if let event_format::decode::Entry::Event(e) = entry
                && e.desc.code == event_tests::NUMBERED
            {
                let i = match e.values().nth(1) {
                    Some(event_format::wire::Value::Word(i)) => i,
                    v => panic!("{v:?}"),
                };
                assert_eq!(i, last.map_or(0, |l: u64| l + 1), "a gap-free run");
                last = Some(i);
            }
        }
    }
    assert!(whole >= 2 && last.is_some(), "what was written before the fault is there: {whole} blocks");
}

/// The room the writer takes on the disk before its writes (`fallocate`, the files' sizes
/// unchanged), a block further ahead than a write needs, is given back when each file is
/// closed: an event file and every sealed segment take on the disk no more than their bytes
/// (the disk budget counts files' lengths). Where the file system keeps room past a file's end
/// through a cut at its length, at most the two blocks taken while it was written stay.
#[test]
fn the_room_taken_ahead_of_the_writes_is_given_back_when_a_file_closes() {
    use std::os::unix::fs::MetadataExt;
    let d = dir("room-ahead");
    let path = d.join("trace.evt");
    let out = run(child(&["go-on", "400000"], &[("EVENT_FILE", path.to_str().unwrap())]));
    assert!(out.status.success(), "exit 0: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
    let segments = d.join("segments");
    std::fs::create_dir_all(&segments).unwrap();
    let base = segments.join("trace.evt");
    let out = run(child(&["go-on", "400000"], &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "32k")]));
    assert!(out.status.success(), "exit 0: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
    let mut files = vec![path];
    files.extend(std::fs::read_dir(&segments).unwrap().map(|e| e.unwrap().path()));
    assert!(files.len() > 3, "several segments: {files:?}");
    let frees = frees_room_on_a_cut(&d);
    if !frees {
        eprintln!("this file system keeps room past a file's end through a cut: the looser bound");
    }
    for file in &files {
        let meta = std::fs::metadata(file).unwrap();
        // The blocks the file system holds for the file, its last one whole, and one of its
        // own (ext4 counts a block of the file's extent index when the room taken ahead has
        // split the file into more extents than its inode holds).
        let taken = meta.blocks() * 512;
        let bound = meta.len().next_multiple_of(4096) + 4096 + if frees { 0 } else { 2 * 65536 };
        assert!(taken <= bound, "{}: {taken} bytes taken on the disk for {} in the file", file.display(), meta.len());
    }
    // The event file holds every event.
    assert_eq!(events_in(&files[0]).numbered_events(), 400_000);
}

/// Whether the file system under `dir` frees room taken past a file's end (util-linux's
/// `fallocate --keep-size`) when the file is cut at its own length, as ext4 and tmpfs do;
/// `false` where it does not, or where the tool cannot take the room.
fn frees_room_on_a_cut(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let probe = dir.join("probe");
    std::fs::write(&probe, [1u8; 5000]).unwrap();
    let took = Command::new("fallocate")
        .args(["--keep-size", "--offset", "5000", "--length", "200000"])
        .arg(&probe)
        .status()
        .is_ok_and(|s| s.success());
    let before = std::fs::metadata(&probe).unwrap().blocks() * 512;
    std::fs::OpenOptions::new().write(true).open(&probe).unwrap().set_len(5000).unwrap();
    let after = std::fs::metadata(&probe).unwrap().blocks() * 512;
    std::fs::remove_file(&probe).unwrap();
    took && before >= 200000 && after <= 8192
}

#[test]
fn a_ring_files_directory_removed_while_recording_is_said_and_the_copy_kept() {
    let d = dir("rmdir");
    let rings = d.join("rings");
    std::fs::create_dir_all(&rings).unwrap();
    let ring = rings.join("trace.ring");
    let file = d.join("copy.evt");
    let mut c = child(
        &["go-on-hold", "3000"],
        &[
            ("EVENT_RING", ring.to_str().unwrap()),
            ("EVENT_FILE", file.to_str().unwrap()),
            ("EVENT_POLICY", "ring"),
            ("EVENT_BUFSIZE", "4m"),
        ],
    );
    let mut proc = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(proc.stdout.as_mut().unwrap()), &mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    std::fs::remove_dir_all(&rings).unwrap();
    proc.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    let out = proc.wait_with_output().unwrap();
    assert!(out.status.success(), "exit 0: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(lines[0].contains("was removed or replaced while recording"), "{}", lines[0]);
    // The copy in the event file is whole: it was read through the recorder's descriptor.
    assert_runs(&events_in(&file), &[0], Some(3000));
}

#[test]
fn a_file_that_cannot_be_created_is_one_line_and_the_program_goes_on() {
    let d = dir("cannot");
    let not_a_dir = d.join("plain");
    std::fs::write(&not_a_dir, b"text").unwrap();
    let mut cases = vec![("under a file", not_a_dir.join("trace.evt"), None)];
    // Permission denied: root writes anywhere, so the child runs as nobody.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let closed = d.join("closed");
        std::fs::create_dir_all(&closed).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o555)).unwrap();
        // SAFETY-free: getuid has no preconditions, but it is `unsafe` in libc; ask `id -u`.
        let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        cases.push(("permission denied", closed.join("trace.evt"), root.then_some(65534u32)));
    }
    for (name, path, uid) in cases {
        let mut c = child(&["go-on", "100"], &[("EVENT_FILE", path.to_str().unwrap())]);
        #[cfg(unix)]
        if let Some(uid) = uid {
            std::os::unix::process::CommandExt::uid(&mut c, uid);
        }
        let out = run(c);
        if uid.is_some() && !out.status.success() && out.stdout.is_empty() {
            eprintln!("skipped {name}: the child cannot run as uid 65534 here");
            continue;
        }
        assert!(out.status.success(), "{name}: exit 0: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
        let lines = stderr_lines(&out);
        assert_eq!(lines.len(), 1, "{name}: one line: {lines:?}");
        assert!(lines[0].starts_with("error: cannot create the event file"), "{name}: {}", lines[0]);
        assert!(!path.exists());
    }
    // A read-only directory: a read-only bind mount, where this test may mount one.
    let ro = d.join("ro");
    std::fs::create_dir_all(&ro).unwrap();
    let mounted =
        Command::new("mount").args(["--bind", "-o", "ro"]).arg(&ro).arg(&ro).status().is_ok_and(|s| s.success())
            && Command::new("mount").args(["-o", "remount,bind,ro"]).arg(&ro).status().is_ok_and(|s| s.success());
    if !mounted {
        let _ = Command::new("umount").arg(&ro).status();
        eprintln!("skipped the read-only directory: cannot mount one here");
        return;
    }
    let path = ro.join("trace.evt");
    let out = run(child(&["go-on", "100"], &[("EVENT_FILE", path.to_str().unwrap())]));
    let _ = Command::new("umount").arg(&ro).status();
    assert!(out.status.success());
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("Read-only file system"), "{}", lines[0]);
}

/// Runs `recorder-child` with `args` and `env` in a private mount namespace where a tmpfs of
/// `size` is mounted on `at` (only the child sees it); what it wrote under `at` is listed on
/// stdout after `files:`. `None` where this machine cannot (not root, no `unshare`): the
/// caller skips with a message, and fails under CI (env `CI`).
fn on_small_tmpfs(at: &Path, size: &str, args: &[&str], env: &[(&str, &str)]) -> Option<Output> {
    std::fs::create_dir_all(at).unwrap();
    let script = r#"mount -t tmpfs -o "size=$1" tmpfs "$2" || exit 97; dir=$2; shift 2; "$@"; rc=$?; echo files:; ls -A "$dir"; exit $rc"#;
    let mut c =
        crate::common::program("unshare", &["-m", "--propagation", "private", "sh", "-c", script, "sh", size], env);
    c.arg(at).arg(crate::common::CHILD).args(args);
    let out =
        c.output().ok().filter(|o| o.status.code() != Some(97) && !(o.status.code() == Some(1) && o.stdout.is_empty()));
    if out.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI must be able to mount a tmpfs (root, unshare -m)");
        eprintln!("skipped: cannot mount a small file system here (needs root and unshare -m)");
    }
    out
}

#[test]
fn a_ring_file_on_a_full_file_system_is_refused_at_the_start_and_the_program_runs_on() {
    // A ring file was made sparse and mapped: the first page the file system could not back
    // killed the recording thread with SIGBUS (exit 135).
    let d = dir("ring-full");
    let small = d.join("small");
    let file = d.join("trace.evt");
    let ring = small.join("trace.ring");
    // 16 MiB of ring file (EVENT_BUFSIZE's default) on a 256 KiB file system; 50000 events go
    // round the main thread's slot (512 KiB) more than once.
    let env = [("EVENT_RING", ring.to_str().unwrap()), ("EVENT_FILE", file.to_str().unwrap())];
    let Some(out) = on_small_tmpfs(&small, "256k", &["go-on", "50000"], &env) else { return };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "exit 0: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(stdout.starts_with("done\n"), "the program ran on: {stdout}");
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(
        lines[0].starts_with(&format!("event-runtime: not recording to the ring file {}: ", ring.display()))
            && lines[0].contains("No space left on device"),
        "{}",
        lines[0]
    );
    assert_eq!(stdout.split("files:\n").nth(1), Some(""), "the refused ring file is removed");
    // The other sink records everything.
    assert_runs(&events_in(&file), &[0], Some(50000));
    let (code, text) = check(&[&file]);
    assert_eq!(code, 0, "{text}");
    // A ring file alone: refused, and the program runs on without a sink.
    let env = [("EVENT_RING", ring.to_str().unwrap())];
    let Some(out) = on_small_tmpfs(&small, "256k", &["go-on", "50000"], &env) else { return };
    assert!(out.status.success(), "alone: exit 0: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
    assert_eq!(stderr_lines(&out).len(), 1, "alone: one line: {:?}", stderr_lines(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("done\n"), "alone: the program ran on");
}

/// The `Dropped` counts of `stream`, by thread (thread 0: the recorder's own reports).
fn dropped_by_thread(stream: &[u8]) -> std::collections::BTreeMap<u64, u64> {
    use event_format::decode::{Catalog, Decoder, Entry};
    use event_format::wire::Value;
    let mut decoder = Decoder::new(stream).unwrap();
    let catalog = Catalog::new(&decoder.header().sets);
    let mut lost = std::collections::BTreeMap::new();
    while let Some(block) = decoder.next_block() {
        let block = block.unwrap();
        *lost.entry(block.header.thread).or_insert(0) += block.header.lost;
        for entry in block.entries(&catalog) {
            if let Entry::Event(e) = entry
                && e.desc.code == event_format::builtin::DROPPED
                && let [Value::Word(thread), Value::Word(n), ..] = e.values().collect::<Vec<_>>()[..]
            {
                *lost.entry(thread).or_insert(0) += n;
            }
        }
    }
    lost
}

#[test]
fn a_ring_file_truncated_while_recording_costs_the_ring_not_the_program() {
    // The pages cut off the mapping killed the first thread that touched them with SIGBUS.
    let d = dir("ring-truncated");
    for with_file in [true, false] {
        let ring = d.join(format!("trace-{with_file}.ring"));
        let file = d.join(format!("trace-{with_file}.evt"));
        let mut env = vec![("EVENT_RING", ring.to_str().unwrap()), ("EVENT_BUFSIZE", "1m")];
        if with_file {
            env.push(("EVENT_FILE", file.to_str().unwrap()));
        }
        let mut c = child(&["record-hold", "5000"], &env);
        let mut proc = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(proc.stdout.as_mut().unwrap()), &mut line).unwrap();
        assert_eq!(line.trim(), "ready");
        // Cut to nothing while the worker records; the main thread records 5000 more after.
        std::fs::OpenOptions::new().write(true).open(&ring).unwrap().set_len(0).unwrap();
        proc.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
        let out = proc.wait_with_output().unwrap();
        let what = if with_file { "with an event file" } else { "alone" };
        assert!(out.status.success(), "{what}: exit 0: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).ends_with("done\n"), "{what}: the program ran to its end");
        let lines = stderr_lines(&out);
        assert_eq!(lines.len(), 1, "{what}: one line: {lines:?}");
        assert!(
            lines[0]
                .starts_with(&format!("event-runtime: the ring file {} was truncated while recording", ring.display())),
            "{what}: {}",
            lines[0]
        );
        if with_file {
            // The event file decodes whole; each of the main thread's 10000 events is in it
            // or counted lost (the block being written when the ring file was cut).
            let bytes = std::fs::read(&file).unwrap();
            let found = numbered(&bytes).unwrap_or_else(|e| panic!("{what}: {e}"));
            let run = &found.by_worker[&0];
            assert!(run.windows(2).all(|p| p[1] > p[0]), "{what}: in order, no repeat");
            let thread = found.thread_of[&0];
            let lost = dropped_by_thread(&bytes).get(&thread).copied().unwrap_or(0);
            assert!(
                run.len() as u64 + lost >= 10_000 && run.len() < 10_000,
                "{what}: {} events of the main thread and {lost} counted lost",
                run.len()
            );
            assert!(run.ends_with(&[9_999]), "{what}: the events after the cut are all there");
            let (code, text) = check(&[&file]);
            assert!(text.contains("lost"), "{what}: check says the loss: {text}");
            assert_ne!(code, 0, "{what}: {text}");
        }
    }
}
