//! What the stop collects (`stop-child`): the events of threads that are still alive when the
//! recording stops (a tokio runtime's workers, a thread never joined and blocked, threads
//! recording at that moment, scoped threads whose destructors run late), read back from the
//! stream; and the memory a large buffer costs a program that records little.

use crate::common::{DUMP, program};
use event_format::decode::{Catalog, Decoder, Entry};
use event_format::wire::Value;
use event_tests::{NUMBERED, Numbered, numbered};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

const CHILD: &str = env!("CARGO_BIN_EXE_stop-child");

fn dir(name: &str) -> crate::common::Scratch {
    crate::common::dir("stop", name)
}

/// Runs `stop-child` with `args` and `env` (no other `EVENT_*` setting inherited); asserts
/// that it exited 0 and returns its output.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let out = program(CHILD, args, env).output().unwrap();
    assert!(
        out.status.success(),
        "stop-child {args:?}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The value of the child's line `key N`.
fn printed(out: &Output, key: &str) -> u64 {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = stdout.lines().find_map(|l| l.strip_prefix(key).and_then(|v| v.trim().parse().ok()));
    value.unwrap_or_else(|| panic!("no `{key} N` line in {stdout:?}"))
}

/// Asserts that `event-dump check` finds the event file whole and `stats` no event lost.
fn checked(path: &Path) {
    let check = Command::new(DUMP).arg("check").arg(path).output().unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "check: {text}{}", String::from_utf8_lossy(&check.stderr));
    let stats = Command::new(DUMP).arg("stats").arg(path).output().unwrap();
    let stats = String::from_utf8_lossy(&stats.stdout);
    assert!(stats.contains("\n  0 events lost,"), "stats counts no loss: {stats}");
}

/// The event file's numbered events, after [`checked`].
fn whole(path: &Path) -> Numbered {
    checked(path);
    numbered(&std::fs::read(path).unwrap()).unwrap()
}

/// Per task, the numbers of its events, sorted: tasks move between threads, so their events
/// are spread over several threads' blocks.
fn by_task(path: &Path) -> BTreeMap<u64, Vec<u64>> {
    let stream = std::fs::read(path).unwrap();
    let mut decoder = Decoder::new(&stream[..]).unwrap();
    let catalog = Catalog::new(&decoder.header().sets);
    let mut tasks: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    while let Some(block) = decoder.next_block() {
        for entry in block.unwrap().entries(&catalog) {
            let Entry::Event(e) = entry else { panic!("a record that does not decode: {entry:?}") };
            if e.desc.code == NUMBERED {
                let v: Vec<Value<'_>> = e.values().collect();
                let (Some(Value::Pointer(task)), Some(Value::Word(i))) = (v.first(), v.get(1)) else { panic!("{v:?}") };
                tasks.entry(*task).or_default().push(*i);
            }
        }
    }
    for run in tasks.values_mut() {
        run.sort_unstable();
    }
    tasks
}

/// Asserts that workers `0..workers` each have the run `0..len` (every event, in order).
fn every_event(n: &Numbered, workers: u64, len: u64) {
    for w in 0..workers {
        let run = n.by_worker.get(&w).map_or(&[][..], Vec::as_slice);
        assert_eq!(run.len() as u64, len, "worker {w}: {} of its {len} events", run.len());
        assert!(run.iter().enumerate().all(|(i, &v)| v == i as u64), "worker {w}: in order, no gap");
    }
}

fn tokio(when: &str) {
    let d = dir(&format!("tokio-{when}"));
    let path = d.join("t.evt");
    let out = run(&["tokio", path.to_str().unwrap(), when, "30", "50"], &[]);
    assert_eq!(printed(&out, "lost"), 0, "nothing lost unattributed");
    checked(&path);
    let tasks = by_task(&path);
    assert_eq!(tasks.len(), 30, "every task");
    for (task, run) in tasks {
        assert_eq!(run, (0..50).collect::<Vec<u64>>(), "task {task}: every event once");
    }
}

#[test]
fn a_tokio_runtime_alive_at_the_stop_has_every_tasks_events_in_the_stream() {
    // Before the lanes, the recording dropped inside the runtime kept main's events only: the
    // workers' partial blocks were never handed on.
    tokio("before");
}

#[test]
fn a_tokio_runtime_dropped_before_the_stop_has_every_tasks_events_in_the_stream() {
    tokio("after");
}

#[test]
fn a_thread_never_joined_and_blocked_at_the_stop_loses_nothing() {
    for policy in ["switch", "ring", "fill"] {
        let d = dir(&format!("detached-{policy}"));
        let path = d.join("d.evt");
        let out = run(&["detached", path.to_str().unwrap(), "3000"], &[("EVENT_POLICY", policy)]);
        assert_eq!(printed(&out, "lost"), 0, "{policy}");
        every_event(&whole(&path), 1, 3000);
    }
}

#[test]
fn a_thread_alive_at_the_stop_with_a_ring_file_has_its_partial_block_in_the_event_file() {
    // With a ring file, the event file gets a copy of each block a thread finishes; the block
    // a live thread is writing at the stop was in the ring file only (2728 of 3000 events in
    // the event file, and `check` said whole): the stop copies its committed prefix.
    for policy in ["switch", "fill"] {
        let d = dir(&format!("ring-file-{policy}"));
        let (path, ring) = (d.join("d.evt"), d.join("d.ring"));
        let env = [("EVENT_POLICY", policy), ("EVENT_RING", ring.to_str().unwrap())];
        let out = run(&["detached", path.to_str().unwrap(), "3000"], &env);
        assert_eq!(printed(&out, "lost"), 0, "{policy}");
        every_event(&whole(&path), 1, 3000);
    }
}

#[test]
fn threads_recording_into_a_ring_file_at_the_stop_leave_no_gap_in_the_event_file() {
    let d = dir("running-ring-file");
    let (path, ring) = (d.join("r.evt"), d.join("r.ring"));
    run(&["running", path.to_str().unwrap(), "4", "150"], &[("EVENT_RING", ring.to_str().unwrap())]);
    let n = whole(&path);
    for w in 0..4 {
        let run = &n.by_worker[&w];
        assert!(!run.is_empty() && run.iter().enumerate().all(|(i, &v)| v == i as u64), "worker {w}: a gap-free run");
    }
}

#[test]
fn threads_recording_while_the_stop_takes_their_blocks_leave_no_gap() {
    // The stop takes each thread's committed records while the thread writes its next ones:
    // every run starts at 0 and has no gap (an event recorded as the stop took the thread's
    // block, or after, is counted, never a hole in the middle).
    let d = dir("running");
    let path = d.join("r.evt");
    run(&["running", path.to_str().unwrap(), "4", "150"], &[]);
    let n = whole(&path);
    for w in 0..4 {
        let run = &n.by_worker[&w];
        assert!(!run.is_empty() && run.iter().enumerate().all(|(i, &v)| v == i as u64), "worker {w}: a gap-free run");
    }
}

#[test]
fn scoped_threads_lose_nothing_in_a_hundred_rounds() {
    // `std::thread::scope` can return before its threads' thread-local destructors have run:
    // before the lanes, one round in a few lost a thread's events.
    let out = run(&["scoped", "100", "4", "500"], &[]);
    assert_eq!(printed(&out, "rounds"), 100);
    assert_eq!(printed(&out, "lost"), 0);
}

#[test]
fn scoped_threads_whose_exit_flush_meets_the_stop_lose_nothing() {
    // Each thread's thread-local destructor (its exit flush) delayed by up to 30 µs, so that
    // it runs while the stop takes the lanes: before the exit flush submitted its block under
    // the lane's lock, the stop could find the lane empty and close the exchange before the
    // block reached it, and a whole thread's events were refused (in about half the runs).
    let out = run(&["scoped", "300", "4", "500", "30"], &[]);
    assert_eq!(printed(&out, "rounds"), 300);
    assert_eq!(printed(&out, "lost"), 0);
}

#[test]
fn a_large_buffer_costs_a_small_program_only_what_it_records() {
    // Blocks are made, and their pages touched, as threads first use them: 1 GiB of buffer
    // costs a program that records 100 events a few MiB (before: all of it).
    let d = dir("rss");
    for policy in ["switch", "ring", "fill"] {
        let out = run(
            &["rss", d.join(format!("{policy}.evt")).to_str().unwrap(), "100"],
            &[("EVENT_BUFSIZE", "1g"), ("EVENT_POLICY", policy)],
        );
        let rss_kb = printed(&out, "rss");
        assert!(rss_kb < 64 << 10, "{policy}: {rss_kb} KiB resident with a 1 GiB buffer");
    }
}
