//! Start-up with the README's `main` (`readme-main`, `event_runtime::start()?`): telemetry's
//! defaults never stop the program. Nothing in the environment records nothing and writes
//! nothing; `EVENT_CONTROL=none` writes nothing; `EVENT_CONTROL` alone records into
//! `<program>-<pid>-<recording id>.evt`, and where that cannot be created (a read-only working directory)
//! one line says so and the program runs; `EVENT_RING` alone writes the ring file and no
//! event file; a misspelt `EVENT_FLIE` is one line naming `EVENT_FILE`; a writer thread that
//! cannot be started (a thread limit) is one line, and the program runs.

#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

const MAIN: &str = env!("CARGO_BIN_EXE_readme-main");

/// An empty directory of its own for each case.
fn dir(name: &str) -> crate::common::Scratch {
    crate::common::dir("startup", name)
}

/// `readme-main` in `dir` with only the `EVENT_*` variables of `env`; its output, once it ran.
fn run(dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = crate::common::program(MAIN, &[], env);
    c.current_dir(dir);
    c.output().unwrap()
}

fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes).lines().map(str::to_owned).collect()
}

/// Asserts that the program ran to its end and exited 0; its stderr lines.
fn ran(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "exit 0: {:?} {:?}", out.status, lines(&out.stderr));
    assert_eq!(lines(&out.stdout), ["ran"]);
    lines(&out.stderr)
}

/// Asserts that `stderr` is one line, starting with `start` and ending with `end`.
fn one_line(stderr: &[String], start: &str, end: &str) {
    assert_eq!(stderr.len(), 1, "one line: {stderr:?}");
    assert!(stderr[0].starts_with(start) && stderr[0].ends_with(end), "{}", stderr[0]);
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn without_event_variables_nothing_is_recorded_or_written() {
    let d = dir("none");
    assert_eq!(ran(&run(&d, &[])), Vec::<String>::new());
    assert_eq!(files(&d), Vec::<String>::new());
}

#[test]
fn event_control_none_writes_nothing() {
    let d = dir("control-none");
    assert_eq!(ran(&run(&d, &[("EVENT_CONTROL", "none")])), Vec::<String>::new());
    assert_eq!(files(&d), Vec::<String>::new());
    // A selection that selects nothing is `none` too.
    assert_eq!(ran(&run(&d, &[("EVENT_CONTROL", "all -*")])), Vec::<String>::new());
    assert_eq!(files(&d), Vec::<String>::new());
}

#[test]
fn event_control_alone_records_into_the_default_file() {
    let d = dir("control");
    let out = run(&d, &[("EVENT_CONTROL", "Arena")]);
    assert_eq!(ran(&out), Vec::<String>::new());
    let found = files(&d);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("readme-main-") && found[0].ends_with(".evt"), "{found:?}");
    let stream = std::fs::read(d.join(&found[0])).unwrap();
    let numbered = event_tests::numbered(&stream).unwrap();
    assert_eq!(numbered.by_worker[&0], (0..100).collect::<Vec<u64>>());
}

#[test]
fn a_default_file_that_cannot_be_created_is_one_line_and_the_program_runs() {
    let d = dir("read-only");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o555)).unwrap();
    let mut c = crate::common::program(MAIN, &[], &[("EVENT_CONTROL", "all")]);
    c.current_dir(&d);
    // Root writes anywhere: the program runs as nobody there.
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if root {
        std::os::unix::process::CommandExt::uid(&mut c, 65534);
    }
    let out = c.output().unwrap();
    if root && !out.status.success() && out.stdout.is_empty() {
        eprintln!("skipped: the program cannot run as uid 65534 here");
        return;
    }
    one_line(
        &ran(&out),
        "event-runtime: not recording: cannot create the event file readme-main-",
        "; set EVENT_FILE to a writable path",
    );
    assert_eq!(files(&d), Vec::<String>::new());
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn event_ring_alone_writes_the_ring_file_only() {
    let d = dir("ring");
    let out = run(&d, &[("EVENT_RING", "trace.ring")]);
    assert_eq!(ran(&out), Vec::<String>::new());
    assert_eq!(files(&d), ["trace.ring"]);
    let (stream, _) = event_tests::read_ring(&d.join("trace.ring")).unwrap();
    assert_eq!(event_tests::numbered(&stream).unwrap().by_worker[&0].len(), 100);
}

#[test]
fn a_misspelt_variable_is_one_line_naming_the_setting() {
    let d = dir("misspelt");
    let out = run(&d, &[("EVENT_FLIE", "x.evt")]);
    assert_eq!(
        ran(&out),
        ["event-runtime: EVENT_FLIE is not a setting of the recorder and is ignored; did you mean EVENT_FILE?"]
    );
    assert_eq!(files(&d), Vec::<String>::new(), "nothing asked for a recording");
    // Beside a real setting, the recording goes on as that one says.
    let out = run(&d, &[("EVENT_FILE", "y.evt"), ("EVENT_CONTORL", "none")]);
    assert_eq!(
        ran(&out),
        ["event-runtime: EVENT_CONTORL is not a setting of the recorder and is ignored; did you mean EVENT_CONTROL?"]
    );
    assert_eq!(files(&d), ["y.evt"]);
    assert_eq!(event_tests::numbered(&std::fs::read(d.join("y.evt")).unwrap()).unwrap().by_worker[&0].len(), 100);
}

/// A machine out of threads (the recorder's writer thread cannot be started) is nobody's
/// mistake in the environment: one line says so and the program runs. Before, `start()`
/// returned an error that the README's `main` passed on, and the program did not run. The
/// event file it had made is removed (it was left holding a header and a stop marker: a
/// trace of no events that said it stopped cleanly).
#[test]
fn a_writer_thread_that_cannot_be_started_is_one_line_and_the_program_runs() {
    let d = dir("no-threads");
    // User 65534 writes here.
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let prlimit = ["/usr/bin/prlimit", "/bin/prlimit"].into_iter().find(|p| Path::new(p).exists());
    let (true, Some(prlimit)) = (root, prlimit) else {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root with prlimit (util-linux)");
        eprintln!("skipped: needs root and prlimit to run a program that can make no thread");
        return;
    };
    let file = d.join("trace.evt");
    // One process for user 65534: the program itself, and no thread beside it.
    let mut c = crate::common::program(prlimit, &["--nproc=1:1", MAIN], &[("EVENT_FILE", file.to_str().unwrap())]);
    c.current_dir(&d);
    std::os::unix::process::CommandExt::uid(&mut c, 65534);
    let out = c.output().unwrap();
    // 126: prlimit could not run the program as user 65534 (a build directory only root may
    // enter), as the read-only directory's case skips.
    if out.status.code() == Some(126) {
        eprintln!("skipped: the program cannot run as uid 65534 here: {}", String::from_utf8_lossy(&out.stderr));
        return;
    }
    one_line(
        &ran(&out),
        "event-runtime: not recording: cannot start the recorder's writer thread: ",
        "; the process has reached a thread limit (ulimit -u, the cgroup's pids.max)",
    );
    assert!(files(&d).is_empty(), "no trace that recorded nothing is left: {:?}", files(&d));
}

/// An error returned from `main` with `?` is printed by the standard library with `Debug`:
/// the user reads one sentence, not `Config(ConfigError { variable: .. })`, and the exit code
/// is 1; with `start_or_warn`, the same sentence is one line and the program runs.
#[test]
fn an_error_returned_from_main_is_one_sentence_and_start_or_warn_runs() {
    let d = dir("main-error");
    let sentence = "EVENT_POLICY=\"wait=5parsecs\": \"5parsecs\": unknown unit \"parsecs\" (use us, ms or s); \
                    write switch, ring, fill, wait or wait=DURATION (e.g. wait=50ms)";
    let out = run(&d, &[("EVENT_POLICY", "wait=5parsecs"), ("EVENT_FILE", "t.evt")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "the program stopped at the start");
    assert_eq!(lines(&out.stderr), [format!("Error: {sentence}")]);
    let mut c = crate::common::program(MAIN, &["warn"], &[("EVENT_POLICY", "wait=5parsecs"), ("EVENT_FILE", "t.evt")]);
    c.current_dir(&d);
    let out = c.output().unwrap();
    assert_eq!(ran(&out), [format!("event-runtime: not recording: {sentence}")]);
    assert_eq!(files(&d), Vec::<String>::new());
}

/// One rule for a path that can hold no file: under a missing directory, or a directory
/// itself, `EVENT_FILE` and `EVENT_RING` fail the start with one sentence (exit 1 from the
/// README's `main`), and the directory is left as it was; `start_or_warn` says the same in
/// one line and runs.
#[test]
fn a_path_that_can_hold_no_file_fails_the_start_whatever_the_reason() {
    let d = dir("no-file");
    std::fs::create_dir(d.join("adir")).unwrap();
    std::fs::write(d.join("adir").join("inside"), "x").unwrap();
    for variable in ["EVENT_FILE", "EVENT_RING"] {
        let what = if variable == "EVENT_FILE" { "event file" } else { "ring file" };
        for (path, why) in [("no/such/dir/a.evt", "No such file or directory (os error 2)"), ("adir", "is a directory")]
        {
            let sentence = format!("cannot create the {what} {path}: {why}; choose a writable path");
            let out = run(&d, &[(variable, path)]);
            assert_eq!(out.status.code(), Some(1), "{variable}={path}");
            assert_eq!(lines(&out.stderr), [format!("Error: {sentence}")], "{variable}={path}");
            let mut c = crate::common::program(MAIN, &["warn"], &[(variable, path)]);
            c.current_dir(&d);
            assert_eq!(ran(&c.output().unwrap()), [format!("event-runtime: not recording: {sentence}")]);
            assert_eq!(files(&d), ["adir"]);
            assert_eq!(files(&d.join("adir")), ["inside"], "the directory is left as it was");
        }
    }
}
