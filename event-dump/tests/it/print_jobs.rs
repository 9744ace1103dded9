//! `print`'s pipeline: the output is the same, byte for byte, with any number of workers
//! (`--jobs`) and any merge window, and with or without the block index (`--window-only`),
//! on every fixture, merges of several logs and damaged logs (a packed block that does not
//! unpack among them: its workers unpack), in every format; and `print` warns when, and only
//! when, a log's disorder is more than its merge window holds, or a block's records start
//! before its header says.

use crate::common::{self, dir, run, stderr, stdout};
use event_format::wire::{BlockHeader, BlockWriter, Header, Order, Text, Value};
use std::path::{Path, PathBuf};

/// Every stream of tests/data (the fixtures), by path.
fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    let mut all = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "evt") {
                all.push(path);
            }
        }
    }
    all.sort();
    assert!(all.len() >= 10, "the fixtures are found: {all:?}");
    all
}

/// `print ARGS` with the block index (the default) and with `--window-only` (and `extra`
/// options each time): the same stdout, stderr and exit status.
fn same_with_or_without_the_index(args: &[&str], extra: &[&str]) {
    let with = |only: bool| {
        let mut all = vec!["print"];
        all.extend(only.then_some("--window-only"));
        all.extend_from_slice(extra);
        all.extend_from_slice(args);
        run(&all)
    };
    let (indexed, window) = (with(false), with(true));
    assert_eq!(stdout(&indexed), stdout(&window), "stdout of {args:?} {extra:?}");
    assert_eq!(stderr(&indexed), stderr(&window), "stderr of {args:?} {extra:?}");
    assert_eq!(indexed.status.code(), window.status.code(), "status of {args:?} {extra:?}");
}

/// `print ARGS` with `--jobs 1` and with more workers (and `extra` options each time): the
/// same stdout, stderr and exit status.
fn same_with_any_jobs(args: &[&str], extra: &[&str]) {
    let with = |jobs: &str| {
        let mut all = vec!["print", "--jobs", jobs];
        all.extend_from_slice(extra);
        all.extend_from_slice(args);
        run(&all)
    };
    let one = with("1");
    for jobs in ["2", "3", "8"] {
        let many = with(jobs);
        assert_eq!(stdout(&one), stdout(&many), "stdout of {args:?} {extra:?} with --jobs {jobs}");
        assert_eq!(stderr(&one), stderr(&many), "stderr of {args:?} {extra:?} with --jobs {jobs}");
        assert_eq!(one.status.code(), many.status.code(), "status of {args:?} {extra:?} with --jobs {jobs}");
    }
}

#[test]
fn every_fixture_prints_the_same_with_any_number_of_workers() {
    for fixture in fixtures() {
        let f = fixture.to_str().unwrap();
        for format in ["text", "json", "csv"] {
            same_with_any_jobs(&[f, "--force"], &["--format", format]);
            same_with_or_without_the_index(&[f, "--force"], &["--format", format]);
        }
    }
}

#[test]
fn merges_and_damaged_logs_print_the_same_with_any_number_of_workers() {
    let d = dir("print-jobs-merges");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    let fixture = |p: &str| data.join(p).to_str().unwrap().to_owned();
    let sample = d.join("sample.evt");
    common::sample_log(&sample);
    let two = d.join("two.evt");
    common::two_workers_log(&two);
    let many = d.join("many.evt");
    common::many_events_log(&many, 20_000);
    let damaged = d.join("many-damaged.evt");
    common::damaged_copy(&many, &damaged, 3);
    let awkward = d.join("awkward.evt");
    common::awkward_log(&awkward, 3);
    let unpackable = d.join("unpackable.evt");
    common::unpackable_block_log(&unpackable);
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let sets: Vec<Vec<String>> = vec![
        vec![s(&sample)],
        vec![s(&two), s(&sample)],
        vec![s(&many), s(&two)],
        vec![s(&damaged)],
        vec![s(&awkward)],
        vec![s(&unpackable), s(&two)],
        vec![fixture("v2.0.0/tour-le.evt"), fixture("v2.0.0/tour-be.evt"), fixture("v1.0.0/tour-le-damaged.evt")],
        vec![fixture("damaged/bad-records-le.evt"), fixture("damaged/bad-records-be.evt"), s(&sample)],
        vec![fixture("sets/two-sets-le.evt"), s(&many)],
    ];
    for logs in &sets {
        let logs: Vec<&str> = logs.iter().map(String::as_str).collect();
        for format in ["text", "json", "csv"] {
            same_with_any_jobs(&logs, &["--format", format]);
            // The smallest window: lines are written while blocks still come in.
            same_with_any_jobs(&logs, &["--format", format, "--window", "1"]);
            same_with_or_without_the_index(&logs, &["--format", format]);
            same_with_or_without_the_index(&logs, &["--format", format, "--window", "1"]);
        }
        same_with_any_jobs(&logs, &["--no-labels", "--format", "json"]);
        same_with_any_jobs(&logs, &["--limit", "100", "--event", "Object*,Message"]);
    }
    // The environment's number of workers gives the same output too.
    let l = s(&sample);
    let by_env = std::process::Command::new(common::DUMP).args(["print", &l]).env("EVENT_DUMP_JOBS", "4").output();
    assert_eq!(stdout(&by_env.unwrap()), stdout(&run(&["print", "--jobs", "1", &l])));
}

/// A stream of 1 KiB blocks (the handmade schema) from `blocks`.
fn stream(path: &Path, blocks: &[Vec<u8>]) {
    let (schema, _, _) = common::handmade_schema();
    let header =
        Header::with_sets(common::wire_is_own(schema), 1024, common::handmade_clock(), common::handmade_producer());
    let mut bytes = header.encode().unwrap();
    for block in blocks {
        bytes.extend_from_slice(block);
    }
    std::fs::write(path, bytes).unwrap();
}

/// A block of `thread`, numbered `sequence`, of `Message` events at `times` (ticks after
/// the clock's start), starting at its first, as the reference writer's blocks do.
fn messages(thread: u64, sequence: u64, times: impl IntoIterator<Item = u64>) -> Vec<u8> {
    let t0 = common::handmade_clock().start_ticks;
    let mut times = times.into_iter().peekable();
    let base_time = t0 + times.peek().copied().unwrap_or(0);
    let mut w =
        BlockWriter::new(Order::Little, 1024, &BlockHeader { thread, sequence, base_time, ..Default::default() });
    for t in times {
        w.push(event_format::builtin::MESSAGE, t0 + t, &[Value::Str(Text::new("a message of some length"))]).unwrap();
    }
    w.finish()
}

/// A log whose thread 2 is late: thread 1's `blocks` blocks (20 messages each, one tick
/// apart, from tick 1000), then thread 2's block of one message at tick 1500, which goes
/// back in time before all but the first 25 of them.
fn late_thread_log(path: &Path, blocks: u64) {
    let mut all: Vec<Vec<u8>> = (0..blocks).map(|b| messages(1, b, (0..20).map(|i| 1000 + b * 20 + i))).collect();
    all.push(messages(2, 0, [1025]));
    stream(path, &all);
}

fn warned(out: &std::process::Output) -> bool {
    stderr(out).contains("printed out of time order")
}

/// The times of `print`'s lines, as they come.
fn times(out: &std::process::Output) -> Vec<i128> {
    stdout(out).lines().map(|l| common::seconds_to_ns(l.split(' ').next().unwrap())).collect()
}

#[test]
fn print_warns_when_and_only_when_the_disorder_is_more_than_the_window() {
    let d = dir("print-jobs-disorder");
    // About 2 KiB of lines per block of thread 1: 200 blocks (~0.4 MiB) fit in a 1 MiB
    // window, 2000 (~4 MiB) do not.
    let within = d.join("within.evt");
    late_thread_log(&within, 200);
    let beyond = d.join("beyond.evt");
    late_thread_log(&beyond, 2000);
    for jobs in ["1", "2"] {
        let out = run(&["print", "--jobs", jobs, "--window", "1", within.to_str().unwrap()]);
        assert!(out.status.success());
        assert!(!warned(&out), "{}", stderr(&out));
        let t = times(&out);
        assert_eq!(t.len(), 200 * 20 + 1);
        assert!(t.windows(2).all(|w| w[0] <= w[1]), "in time order");

        let out = run(&["print", "--jobs", jobs, "--window", "1", beyond.to_str().unwrap()]);
        assert!(out.status.success(), "a warning, not an error");
        assert!(warned(&out), "{}", stderr(&out));
        assert!(stderr(&out).contains("1 events printed out of time order"), "{}", stderr(&out));
        assert!(stderr(&out).contains("merge window (1 MiB)"), "{}", stderr(&out));
        let t = times(&out);
        assert_eq!(t.len(), 2000 * 20 + 1, "every event is printed all the same");
        assert!(t.windows(2).any(|w| w[0] > w[1]));

        // The default window holds it.
        let out = run(&["print", "--jobs", jobs, beyond.to_str().unwrap()]);
        assert!(!warned(&out), "{}", stderr(&out));
        assert!(times(&out).windows(2).all(|w| w[0] <= w[1]));
    }
}

/// The block index writes lines before the window fills (here, every line before the late
/// thread's block's start), and changes no line of a log whose disorder the window holds. Of
/// one it does not hold, the late line is written where the window lets it, which is not the
/// same place when the index wrote lines early: the same lines and the same warning.
#[test]
fn the_block_index_changes_no_line_of_a_log_the_window_orders() {
    let d = dir("print-jobs-index");
    let within = d.join("within.evt");
    late_thread_log(&within, 200);
    let beyond = d.join("beyond.evt");
    late_thread_log(&beyond, 2000);
    let (within, beyond) = (within.to_str().unwrap(), beyond.to_str().unwrap());
    for window in ["1", "64"] {
        same_with_or_without_the_index(&[within], &["--window", window]);
    }
    same_with_or_without_the_index(&[beyond], &["--window", "64"]);
    let (indexed, window) =
        (run(&["print", "--window", "1", beyond]), run(&["print", "--window", "1", "--window-only", beyond]));
    assert_eq!(stderr(&indexed), stderr(&window));
    assert!(stderr(&indexed).contains("1 events printed out of time order"), "{}", stderr(&indexed));
    let sorted = |o: &std::process::Output| {
        let mut lines: Vec<String> = stdout(o).lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    assert_eq!(sorted(&indexed), sorted(&window));
}

/// A block whose records start before its header's `base_time` breaks what the index says of
/// it: a line of it can come after lines `print` wrote early. The lines are all printed,
/// and `print` says which log broke the rule and how to print it in order; `--window-only`
/// does.
#[test]
fn a_block_whose_records_start_before_its_base_time_is_said_and_the_window_orders_it() {
    let d = dir("print-jobs-early");
    let log = d.join("early.evt");
    common::early_record_log(&log);
    let l = log.to_str().unwrap();
    for jobs in ["1", "2"] {
        let out = run(&["print", "--jobs", jobs, l]);
        assert!(out.status.success(), "a warning, not an error");
        assert_eq!(times(&out).len(), 7, "every event is printed");
        let err = stderr(&out);
        assert!(err.contains("1 events printed out of time order"), "the record at 50: {err}");
        assert!(err.contains(&format!("a block of {l} has records earlier than the time its header says")), "{err}");
        assert!(err.contains("`--window-only`"), "{err}");

        let out = run(&["print", "--jobs", jobs, "--window-only", l]);
        assert!(!warned(&out), "{}", stderr(&out));
        let t = times(&out);
        assert_eq!(t.len(), 7);
        assert!(t.windows(2).all(|w| w[0] <= w[1]), "in time order: {t:?}");
    }
}

/// A thread whose blocks come in order but overlap in time (a clock that stepped back
/// between blocks) still prints in time order, within the window: its block goes back in
/// time before its chain's last and merges on a chain of its own.
#[test]
fn a_thread_whose_blocks_overlap_in_time_prints_in_order() {
    let d = dir("print-jobs-overlap");
    let log = d.join("overlap.evt");
    stream(
        &log,
        &[messages(1, 0, [10, 20, 30]), messages(1, 1, [15, 25, 35]), messages(1, 2, [40]), messages(2, 0, [5, 50])],
    );
    for jobs in ["1", "2"] {
        let out = run(&["print", "--jobs", jobs, log.to_str().unwrap()]);
        let ticks = times(&out);
        assert_eq!(ticks.len(), 9, "{}", stdout(&out));
        assert!(ticks.windows(2).all(|w| w[0] <= w[1]), "{ticks:?}");
        assert!(!warned(&out));
    }
}

/// A block whose records go back in time (a clock that stepped back within it) prints its
/// lines in time order, each line whole (its text is not where the line before it ended),
/// among another thread's.
#[test]
fn a_block_whose_times_go_back_prints_whole_lines_in_order() {
    let d = dir("print-jobs-back");
    let log = d.join("back.evt");
    let t0 = common::handmade_clock().start_ticks;
    let block = |thread: u64, times: &[u64]| {
        let header = BlockHeader { thread, sequence: 0, base_time: t0, ..Default::default() };
        let mut w = BlockWriter::new(Order::Little, 1024, &header);
        for &t in times {
            let text = format!("at {t}");
            w.push(event_format::builtin::MESSAGE, t0 + t, &[Value::Str(Text::new(&text))]).unwrap();
        }
        w.finish()
    };
    stream(&log, &[block(1, &[30, 10, 40, 20, 50]), block(2, &[15, 35])]);
    for jobs in ["1", "2"] {
        let out = run(&["print", "--jobs", jobs, log.to_str().unwrap()]);
        let text = stdout(&out);
        let said: Vec<&str> = text.lines().map(|l| l.rsplit("\"at ").next().unwrap()).collect();
        assert_eq!(said, ["10\"", "15\"", "20\"", "30\"", "35\"", "40\"", "50\""], "{text}");
        assert!(!warned(&out));
    }
}

/// `event-dump ARGS` as user 65534 allowed one process (`prlimit --nproc=1`), so that no
/// thread can be made; `None` where this test cannot arrange that (not root, no prlimit),
/// which CI, running as root on Debian, always can.
#[cfg(unix)]
fn without_threads(args: &[&str]) -> Option<std::process::Output> {
    use std::os::unix::process::CommandExt;
    let root = std::process::Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let prlimit = ["/usr/bin/prlimit", "/bin/prlimit"].into_iter().find(|p| Path::new(p).exists());
    let (true, Some(prlimit)) = (root, prlimit) else {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root with prlimit (util-linux)");
        eprintln!("skipped: needs root and prlimit to run event-dump with no thread to be had");
        return None;
    };
    let mut c = std::process::Command::new(prlimit);
    c.arg("--nproc=1:1").arg(common::DUMP).args(args).uid(65534);
    let out = c.output().unwrap();
    // 126: prlimit could not run event-dump as user 65534 (a build directory only root may
    // enter), as the other tests that run as 65534 skip.
    if out.status.code() == Some(126) {
        eprintln!("skipped: event-dump cannot run as uid 65534 here: {}", stderr(&out));
        return None;
    }
    Some(out)
}

/// Where no thread can be made (a thread limit), `print`, `check` and `stats` do their work
/// on one thread: the same output, no panic (each once panicked on spawning its threads).
#[cfg(unix)]
#[test]
fn with_no_thread_to_be_had_print_check_and_stats_work_on_one_thread() {
    use std::os::unix::fs::PermissionsExt;
    let d = dir("no-threads");
    let log = d.join("sample.evt");
    common::sample_log(&log);
    // User 65534 reads the log.
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    let log = log.to_str().unwrap();
    for args in [&["print", log][..], &["print", "--jobs", "4", log], &["check", log], &["stats", log]] {
        let Some(out) = without_threads(args) else { return };
        let normal = run(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), stdout(&normal), "{args:?}");
        assert_eq!(stderr(&out), stderr(&normal), "{args:?}");
    }
}

/// Records by callsite (stream format 2.1.1) read expanded whichever thread unpacks their
/// block: the tracing fixture's packed block (thread 2) is unpacked and expanded by a worker,
/// its whole block (thread 1) by the same code on the reading side; one record whose block
/// does not define its callsite is shown as it is.
#[test]
fn records_by_callsite_print_expanded_with_any_number_of_workers() {
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/v2.1.1/tracing-le.evt");
    let log = log.to_str().unwrap();
    for jobs in ["1", "2", "3"] {
        let out = run(&["print", "--jobs", jobs, log]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        for line in [
            r#"T1 Builtin.SpanOpen span=7 parent=0 name="request" fields="id=42 method=\"GET\"""#,
            r#"T2 Builtin.TraceEvent level=2 target="app::db" text="slow query rows=1200""#,
            r#"T1 Builtin.TraceEventAt callsite=9 message="no callsite" values="0=1""#,
        ] {
            assert!(text.contains(line), "--jobs {jobs}: {line}\n{text}");
        }
        assert_eq!(text.matches("TraceEventAt").count(), 1, "--jobs {jobs}: {text}");
        assert!(!text.contains("Callsite "), "definitions are consumed: {text}");
    }
}
