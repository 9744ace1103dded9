//! `check` against real crashes and real rings (issue 17, docs/FORMAT.md "The clean stop"):
//! a `switch` recording killed with SIGKILL is "not stopped cleanly" (exit 1), the same
//! recording stopped is whole (exit 0); a ring file that wrapped as configured is whole with
//! its overwritten blocks reported in one line (exit 1 only with `--strict`); the events a
//! reused ring-file slot discarded are counted lost, in `check` and in `stats`; a stream whose
//! writer still runs is "still recording", not "killed" (issue 31: the recorder's lock on its
//! event file tells).

use crate::common::{DUMP, child, start_ready};
use std::process::{Command, Output};

fn dir(name: &str) -> crate::common::Scratch {
    crate::common::dir("clean-stop", name)
}

fn dump(args: &[&str]) -> Output {
    Command::new(DUMP).args(args).output().unwrap()
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_killed_switch_recording_is_not_stopped_cleanly_and_a_stopped_one_is_whole() {
    let d = dir("switch");
    // Killed while it holds its recording open: the writer never writes its stop block.
    let killed = d.join("killed.evt");
    let mut c = start_ready(child(&["hold", "20000"], &[("EVENT_FILE", killed.to_str().unwrap())]));
    c.kill().unwrap();
    assert!(!c.wait().unwrap().success());
    let check = dump(&["check", killed.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check));
    assert!(text(&check).contains("not stopped cleanly (killed or aborted)"), "{}", text(&check));
    let stats = dump(&["stats", killed.to_str().unwrap()]);
    assert!(stats.status.success());
    assert!(text(&stats).contains("not stopped cleanly (killed or aborted)"), "{}", text(&stats));

    // The same program, stopped: its standard input ends, it stops the recording and exits.
    let stopped = d.join("stopped.evt");
    let mut c = start_ready(child(&["hold", "20000"], &[("EVENT_FILE", stopped.to_str().unwrap())]));
    drop(c.stdin.take());
    assert!(c.wait().unwrap().success());
    let check = dump(&["check", stopped.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    assert!(text(&check).ends_with("  whole\n"), "{}", text(&check));
    let stats = text(&dump(&["stats", stopped.to_str().unwrap()]));
    assert!(stats.contains("stopped cleanly: the writer wrote"), "{stats}");
    // The marker's count of events is every event the log holds: 20000 and the built-ins.
    assert!(stats.contains(" events and counted 0 lost before its stop marker"), "{stats}");
}

/// Issue 31: a stream whose writer still runs has no stop marker yet; `check` and `stats` said
/// "killed or aborted". The recorder holds a lock on its event file while it writes it, which
/// the reader tests (and does not keep): "still recording", and the stopped recording is whole.
#[test]
fn a_stream_whose_writer_still_runs_is_still_recording() {
    let d = dir("running");
    let path = d.join("running.evt");
    let log = path.to_str().unwrap();
    let mut c = start_ready(child(&["hold", "100"], &[("EVENT_FILE", log)]));
    for command in ["check", "stats"] {
        let out = text(&dump(&[command, log]));
        assert!(out.contains("still recording: its writer is alive"), "{command}: {out}");
        assert!(!out.contains("killed or aborted"), "{command}: {out}");
    }
    // The lock was only tested: the writer goes on, stops cleanly and leaves a whole stream.
    drop(c.stdin.take());
    assert!(c.wait().unwrap().success());
    let check = dump(&["check", log]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    assert!(text(&check).ends_with("  whole\n"), "{}", text(&check));
}

/// A ring file whose writer was killed a moment ago still has a recent heartbeat: its
/// process being gone decides (`check` once called it "still recording" for two seconds).
#[test]
fn a_ring_file_whose_writer_was_just_killed_is_not_stopped_cleanly() {
    let d = dir("ring-killed");
    let ring = d.join("killed.ring");
    let mut c = start_ready(child(&["hold", "20000"], &[("EVENT_RING", ring.to_str().unwrap())]));
    c.kill().unwrap();
    assert!(!c.wait().unwrap().success());
    let check = dump(&["check", ring.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(1), "{}", text(&check));
    assert!(text(&check).contains("not stopped cleanly (killed or aborted)"), "{}", text(&check));
}

#[test]
fn a_ring_that_wrapped_as_configured_is_whole_unless_strict() {
    let d = dir("wrap");
    let ring = d.join("wrap.ring");
    let ring = ring.to_str().unwrap();
    // Two workers, 20000 events each, into a ring of 64 KiB: most blocks are overwritten.
    let mut c = start_ready(child(&["follow", ring, "2", "20000"], &[("EVENT_BUFSIZE", "64k")]));
    assert!(c.wait().unwrap().success());
    let check = dump(&["check", ring]);
    let out = text(&check);
    assert_eq!(check.status.code(), Some(0), "{out}");
    let overwritten: Vec<&str> = out.lines().filter(|l| l.trim_start().starts_with("overwritten: ")).collect();
    assert_eq!(overwritten.len(), 1, "one line: {out}");
    assert!(out.ends_with("  whole\n"), "{out}");
    let strict = dump(&["check", "--strict", ring]);
    assert_eq!(strict.status.code(), Some(1), "{}", text(&strict));
    assert!(text(&strict).contains("missing (overwritten by its ring)"), "{}", text(&strict));
    let stats = text(&dump(&["stats", ring]));
    assert!(stats.contains("stopped cleanly (ring file closed)"), "{stats}");
}

#[test]
fn events_a_reused_slot_discarded_are_counted_lost() {
    use event_runtime::{Policy, Recorder};
    let d = dir("reuse");
    let path = d.join("reuse.ring");
    // One slot: the second thread takes over the first one's, discarding its 50 messages
    // (and its ThreadName). The deterministic clock keeps the writer thread from recording.
    let recording = Recorder::new()
        .ring_file(&path)
        .policy(Policy::Ring)
        .block_size(1024)
        .buffer_size(8 * 1024)
        .ring_threads(1)
        .deterministic_clock()
        .start()
        .unwrap();
    std::thread::spawn(|| (0..50).for_each(|i| event_runtime::message(&format!("first {i}")))).join().unwrap();
    std::thread::spawn(|| (0..5).for_each(|i| event_runtime::message(&format!("second {i}")))).join().unwrap();
    recording.stop().unwrap();
    let path = path.to_str().unwrap();
    let check = dump(&["check", path]);
    let out = text(&check);
    assert_eq!(check.status.code(), Some(1), "{out}");
    let lost: Vec<u64> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("lost: no thread: "))
        .filter_map(|l| l.strip_suffix(" events")?.parse().ok())
        .collect();
    assert_eq!(lost.len(), 1, "{out}");
    assert!(lost[0] >= 50, "the first thread's 50 messages at least: {out}");
    let stats = text(&dump(&["stats", path]));
    assert!(
        stats.contains(&format!("1 slots reused ({} events discarded with them, counted lost)", lost[0])),
        "{stats}"
    );
    assert!(stats.contains(&format!("{} events lost", lost[0])), "{stats}");
}
