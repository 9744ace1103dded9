//! A program restarted into one directory (a deploy, a crash loop; docs/guide/long-running-
//! services.md, "Restarts"), by real children (`recorder-child`): every run records, names
//! never collide, a killed run's `.open` segment is sealed by the next start (by its magic and
//! recording id, never by its name alone), the disk budget holds for the directory across
//! runs and readers count what it removed, and `event-dump check DIR` tells a killed run from
//! a live one.

use crate::common::{DUMP, child, start_ready};
use event_format::decode::Decoder;
use event_format::wire::{Header, RecordingId};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn dir(name: &str) -> crate::common::Scratch {
    crate::common::dir("restarts", name)
}

/// The directory's entries, by name.
fn listing(d: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn header(path: &Path) -> Header {
    Decoder::new(&std::fs::read(path).unwrap()[..])
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .header()
        .clone()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `c` (in `d`) to its end; it must succeed.
fn run(mut c: Command, d: &Path) -> Output {
    let out = c.current_dir(d).stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

/// `event-dump ARGS`: its exit code and standard output.
fn dump(args: &[&str]) -> (i32, String) {
    let out = Command::new(DUMP).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Starts `recorder-child record-hold` (a worker records until told to stop) with `env` in
/// `d`, waits for it to be ready and for a few blocks to reach its file, then kills it.
fn killed_run(d: &Path, env: &[(&str, &str)]) -> u32 {
    let mut c = child(&["record-hold", "1000"], env);
    c.current_dir(d).stderr(Stdio::null());
    let mut c = start_ready(c);
    std::thread::sleep(Duration::from_millis(150));
    let pid = c.id();
    c.kill().unwrap();
    c.wait().unwrap();
    pid
}

/// Five clean starts and a crash loop of three SIGKILLed starts, one right after another,
/// into one directory with the default names (`start()`, `EVENT_CONTROL` alone: `%n-%p-%r.evt`):
/// eight files, each its own run's (its own recording id in its name and header), none
/// replaced or moved aside; the clean ones whole, the killed ones read up to the kill.
#[test]
fn restarts_with_the_default_names_never_collide() {
    let d = dir("default-names");
    let env = [("EVENT_CONTROL", "all")];
    for _ in 0..5 {
        let out = run(child(&["env"], &env), &d);
        assert_eq!(stderr(&out), "", "nothing to say: the name is this run's own");
    }
    let killed: Vec<u32> = (0..3).map(|_| killed_run(&d, &env)).collect();
    let names = listing(&d);
    assert_eq!(names.len(), 8, "one file per run, none kept aside: {names:?}");
    let mut ids = BTreeSet::new();
    for name in &names {
        let path = d.join(name);
        let id = header(&path).properties.recording.unwrap();
        assert!(name.starts_with("recorder-child-") && name.ends_with(&format!("-{id}.evt")), "{name}");
        assert!(ids.insert(id), "{name}: a recording id of its own");
        let pid: u32 = name["recorder-child-".len()..].split('-').next().unwrap().parse().unwrap();
        let (code, out) = dump(&["check", path.to_str().unwrap()]);
        if killed.contains(&pid) {
            assert_eq!(code, 1, "{out}");
            assert!(out.contains("not stopped cleanly (killed or aborted)"), "{out}");
        } else {
            assert_eq!(code, 0, "{out}");
        }
    }
}

/// The issue's first case: `EVENT_FILE=trace.evt EVENT_ROTATE=...`, started again and again,
/// a crash loop of three SIGKILLed starts among them. Every run records: its segments are
/// numbered after those of the runs before it; each killed run's `.open` segment is sealed by
/// the next start, which says so in one line naming the recording; `check DIR` reads the
/// directory as one log per run and names each killed run's last segment, one line each.
#[test]
fn restarts_into_one_segment_name_number_on_and_seal_what_a_kill_left() {
    let d = dir("fixed-name");
    let env = [("EVENT_FILE", "trace.evt"), ("EVENT_ROTATE", "1h")];
    let rotate = || child(&["rotate", "200", "1"], &env);
    let out = run(rotate(), &d);
    assert_eq!(stderr(&out), "");
    assert_eq!(listing(&d), ["trace.000000.evt", "trace.000001.evt"]);
    let first = header(&d.join("trace.000000.evt")).properties.recording.unwrap();

    // A crash loop: three starts killed while recording, one right after another.
    let mut killed: Vec<RecordingId> = Vec::new();
    for round in 0..3 {
        killed_run(&d, &env);
        let names = listing(&d);
        let open: Vec<&String> = names.iter().filter(|n| n.ends_with(".open")).collect();
        assert_eq!(open.len(), 1, "round {round}: the killed run's segment, and only it, is open: {names:?}");
        assert_eq!(*open[0], format!("trace.{:06}.evt.open", 2 + round), "numbered after the runs before it");
        killed.push(header(&d.join(open[0])).properties.recording.unwrap());
    }
    // The next start seals the last killed run's segment (each earlier one was sealed by the
    // start after it) and goes on after it.
    let out = run(rotate(), &d);
    let said = stderr(&out);
    assert_eq!(said.lines().count(), 1, "one line: {said}");
    assert!(
        said.contains("trace.000004.evt.open was left by recording")
            && said.contains(&killed[2].to_string())
            && said.contains("sealed as")
            && said.contains("trace.000004.evt"),
        "{said}"
    );
    assert_eq!(
        listing(&d),
        (0..7).map(|n| format!("trace.{n:06}.evt")).collect::<Vec<_>>(),
        "nothing open, nothing replaced, the numbers consecutive"
    );
    let recordings: Vec<RecordingId> =
        (0..7).map(|n| header(&d.join(format!("trace.{n:06}.evt"))).properties.recording.unwrap()).collect();
    assert_eq!(recordings[..2], [first, first]);
    assert_eq!(recordings[2..5], killed[..]);
    assert_eq!(recordings[5], recordings[6]);

    // Five logs; the three killed ones named, one line each, and the exit code says so.
    let (code, out) = dump(&["check", d.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let lines: Vec<&str> = out.lines().filter(|l| l.contains("not stopped cleanly")).collect();
    assert_eq!(lines.len(), 3, "{out}");
    for (line, n) in lines.iter().zip(2..5) {
        assert!(line.contains(&format!("trace.{n:06}.evt")), "{line}");
    }
    assert_eq!(out.matches("  whole").count(), 2, "the two clean runs: {out}");
    // Each run's report is titled by the directory and its recording id (the paths read the
    // same), and names the segments it holds: the first run's are trace.000000 and 000001.
    let titles: Vec<&str> = out.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(titles.len(), 5, "{out}");
    let mut ids: Vec<RecordingId> = recordings.clone();
    ids.dedup();
    for (title, id) in titles.iter().zip(&ids) {
        let hex = id.to_hex();
        assert!(title.starts_with(&format!("{} (recording {}): ", d.display(), &hex[..8])), "{title}");
    }
    assert!(out.contains("recording of segments: 2 here; trace.000000.evt to trace.000001.evt"), "{out}");
    assert!(out.contains("recording of segments: 1 here; trace.000002.evt"), "{out}");
}

/// `check DIR` after a SIGKILL, before any restart: the killed run's `.open` segment is read
/// as its recording's last (its writer is gone), and named: exit 1. While a writer records, its
/// `.open` segment is "still recording", not a problem: exit 0.
#[test]
fn check_tells_a_killed_run_from_a_live_one() {
    let d = dir("check");
    run(child(&["rotate", "200", "1"], &[("EVENT_FILE", "trace.evt"), ("EVENT_ROTATE", "1h")]), &d);
    // A live writer that has sealed a segment (every second) and writes the next.
    let mut c = child(&["record-hold", "1000"], &[("EVENT_FILE", "trace.evt"), ("EVENT_ROTATE", "1s")]);
    c.current_dir(&d).stderr(Stdio::null());
    let mut live = start_ready(c);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !d.join("trace.000002.evt").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let open: Vec<String> = listing(&d).into_iter().filter(|n| n.ends_with(".open")).collect();
    assert_eq!(open.len(), 1, "{:?}", listing(&d));
    let (code, out) = dump(&["check", d.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("still recording: {}", open[0])), "{out}");
    // Killed once the open segment holds some of the worker's events (a block of them is
    // written within two seconds; a segment just opened holds only the threads' names).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        let open = listing(&d).into_iter().find(|n| n.ends_with(".open"));
        if open.is_some_and(|o| dump(&["stats", d.join(o).to_str().unwrap()]).1.contains("ArenaDestroy")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    live.kill().unwrap();
    live.wait().unwrap();
    let open: Vec<String> = listing(&d).into_iter().filter(|n| n.ends_with(".open")).collect();
    let (code, out) = dump(&["check", d.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let lines: Vec<&str> = out.lines().filter(|l| l.contains("not stopped cleanly")).collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(lines[0].contains(&format!("(its last segment, {})", open[0])), "{out}");
    // `stats` reads the killed run's events too.
    let (_, stats) = dump(&["stats", d.join(&open[0]).to_str().unwrap()]);
    assert!(stats.contains("ArenaDestroy"), "{stats}");

    // A recording that has sealed no segment yet: its first, open, is read as it is so far.
    let only = dir("check-only-open");
    let mut c = child(&["record-hold", "1000"], &[("EVENT_FILE", "trace.evt"), ("EVENT_ROTATE", "1h")]);
    c.current_dir(&only).stderr(Stdio::null());
    let mut first = start_ready(c);
    std::thread::sleep(Duration::from_millis(150));
    let (code, out) = dump(&["check", only.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("still recording: its writer is alive"), "{out}");
    first.kill().unwrap();
    first.wait().unwrap();
    let (code, out) = dump(&["check", only.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not stopped cleanly (killed or aborted): no stop marker"), "{out}");
}

/// What a new start finds under a `.open` name of its family and does not seal: a file that
/// is not a segment of ours (left byte for byte), and a live writer's segment (another process
/// of the program writing the same names: left to it, and the new run's numbers go after it).
#[test]
fn a_start_seals_only_a_killed_writers_segment_of_ours() {
    let d = dir("not-ours");
    let env = [("EVENT_FILE", "trace.evt"), ("EVENT_ROTATE", "1h")];
    let foreign = d.join("trace.000000.evt.open");
    std::fs::write(&foreign, b"someone else's notes\n").unwrap();
    let mut c = child(&["record-hold", "1000"], &env);
    c.current_dir(&d).stderr(Stdio::piped());
    let mut live = start_ready(c);
    let names = listing(&d);
    assert_eq!(names, ["trace.000000.evt.open", "trace.000001.evt.open"], "the foreign name skipped");
    // A second process of the program, while the first records.
    let out = run(child(&["rotate", "200", "1"], &env), &d);
    assert_eq!(stderr(&out), "", "nothing sealed, nothing said");
    assert_eq!(
        listing(&d),
        ["trace.000000.evt.open", "trace.000001.evt.open", "trace.000002.evt", "trace.000003.evt"],
        "the live writer's segment left to it"
    );
    live.stdin.take().unwrap().write_all(b"\n").unwrap();
    let out = live.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(&foreign).unwrap(), b"someone else's notes\n", "the foreign file as it was");
    assert_eq!(
        listing(&d),
        ["trace.000000.evt.open", "trace.000001.evt", "trace.000002.evt", "trace.000003.evt"],
        "each run sealed its own"
    );
    let (code, out) = dump(&["check", d.to_str().unwrap()]);
    assert_eq!((code, out.matches("  whole").count()), (0, 2), "{out}");
}

/// The sealed segments of `d` (names not ending in `.open`).
fn sealed(d: &Path) -> Vec<PathBuf> {
    listing(d).into_iter().filter(|n| !n.ends_with(".open")).map(|n| d.join(n)).collect()
}

/// Four runs of `EVENT_FILE=trace-%p.evt EVENT_ROTATE=... EVENT_KEEP=3` (each run's names its
/// own, by pid), the fourth killed while recording, and a fifth: whichever run wrote them, the
/// directory holds at most 3 sealed segments beside the newest run's last segment (open while
/// it records; sealed when it stops, until the next start deletes the oldest: a recording's
/// last segment deletes nothing, as no later segment of it would count it); the oldest go
/// first, across runs; and readers count what the budget removed of the earlier runs.
#[test]
fn the_budget_holds_for_the_directory_across_runs() {
    let d = dir("budget");
    let env = [("EVENT_FILE", "trace-%p.evt"), ("EVENT_ROTATE", "1h"), ("EVENT_KEEP", "3")];
    let recording = |p: &PathBuf| header(p).properties.recording.unwrap();
    let mut last_run = None;
    for _ in 0..3 {
        // Three segments each: two rotations.
        let out = run(child(&["rotate", "300", "2"], &env), &d);
        assert_eq!(stderr(&out), "");
        let left = sealed(&d);
        assert_eq!(listing(&d).len(), left.len(), "nothing open");
        let newest = recording(&left[left.len() - 1]);
        let older: Vec<&PathBuf> = left.iter().filter(|p| recording(p) != newest).collect();
        assert_eq!(left.len() - older.len(), 3, "the newest run's three segments");
        assert!(older.len() <= 1, "at most 3 sealed besides the newest run's last: {:?}", listing(&d));
        assert!(last_run.is_none_or(|r| older.iter().all(|p| recording(p) == r)), "the run before's, if any");
        last_run = Some(newest);
    }
    // A fourth run, killed while recording: while it records, 3 sealed and its one open.
    let mut c = child(&["record-hold", "1000"], &env);
    c.current_dir(&d).stderr(Stdio::null());
    let mut fourth = start_ready(c);
    let names = listing(&d);
    assert_eq!(sealed(&d).len(), 3, "{names:?}");
    assert_eq!(names.iter().filter(|n| n.ends_with(".open")).count(), 1, "{names:?}");
    assert!(sealed(&d).iter().all(|p| Some(recording(p)) == last_run), "the oldest went first: {names:?}");
    std::thread::sleep(Duration::from_millis(150));
    fourth.kill().unwrap();
    fourth.wait().unwrap();
    // A fifth seals the fourth's segment and keeps the budget, the oldest (the third run's)
    // first.
    let out = run(child(&["rotate", "300", "2"], &env), &d);
    assert!(stderr(&out).contains("which ended without stopping (killed)"), "{}", stderr(&out));
    let left = sealed(&d);
    assert_eq!((left.len(), listing(&d).len()), (4, 4), "{:?}", listing(&d));
    let fifth = recording(&left[left.len() - 1]);
    let killed: Vec<&PathBuf> = left.iter().filter(|p| recording(p) != fifth).collect();
    assert_eq!(killed.len(), 1, "the fourth run's segment besides the fifth's three");
    // The fifth run's last segment says what the budget removed of earlier recordings: three
    // recordings wholly, 3 segments each.
    let newest =
        left.iter().filter(|p| recording(p) == fifth).max_by_key(|p| header(p).properties.segment.unwrap().index);
    let earlier = header(newest.unwrap()).properties.earlier.unwrap_or_else(|| panic!("the earlier property"));
    assert_eq!(
        (earlier.recordings_removed, earlier.segments_of_removed, earlier.partly.len()),
        (3, 9, 0),
        "{earlier:?}"
    );
    // `check`: the killed run named, one line; the fifth whole, and it says what was removed.
    let (code, out) = dump(&["check", d.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out.lines().filter(|l| l.contains("not stopped cleanly")).count(), 1, "{out}");
    assert_eq!(out.matches("  whole").count(), 1, "{out}");
    assert!(
        out.contains(
            "earlier recordings: 3 recordings of this directory removed wholly by the disk budget (9 segments"
        ),
        "{out}"
    );
}

/// The budget removes the oldest segments of an earlier run that is still partly there:
/// readers of that run count them as removed by the budget (the later run's earlier property
/// says how many), not as a gap.
#[test]
fn an_earlier_run_partly_removed_reads_as_removed_not_missing() {
    let d = dir("partly");
    let env = [("EVENT_FILE", "trace.evt"), ("EVENT_ROTATE", "1h"), ("EVENT_KEEP", "4")];
    // Run 1: four segments; run 2: two. Run 2's first seal removes run 1's oldest (5 > 4).
    run(child(&["rotate", "300", "3"], &env), &d);
    run(child(&["rotate", "300", "1"], &env), &d);
    let names = listing(&d);
    assert_eq!(names, (1..6).map(|n| format!("trace.{n:06}.evt")).collect::<Vec<_>>());
    let (code, out) = dump(&["check", d.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("gap:"), "{out}");
    assert!(out.contains("removed by the disk budget: segment 0, "), "{out}");
    let (_, stats) = dump(&["stats", d.to_str().unwrap()]);
    assert!(stats.contains("recording of segments: 3 here, 1 removed by the disk budget ("), "{stats}");
}

/// `EVENT_KEEP=free=3m` on a file system of 8 MiB (a tmpfs in a private mount namespace, where
/// this machine allows one): a service that writes far more than the file system holds keeps
/// the floor free by deleting its oldest sealed segments, never fills the disk (no `disk full`
/// marker), and `check` reads what is left as whole, with what the budget removed.
#[test]
fn the_floor_of_free_space_deletes_the_oldest_and_never_fills_the_disk() {
    let d = dir("floor");
    let small = d.join("small");
    std::fs::create_dir_all(&small).unwrap();
    let base = small.join("trace.evt");
    let env = [
        ("EVENT_FILE", base.to_str().unwrap()),
        ("EVENT_ROTATE", "256k"),
        ("EVENT_KEEP", "free=3m"),
        ("EVENT_PACK", "off"),
    ];
    let script = r#"mount -t tmpfs -o "size=$1" tmpfs "$2" || exit 97; dir=$2; dump=$3; shift 3; "$@" >/dev/null; rc=$?; echo files:; ls -A "$dir"; echo check:; "$dump" check "$dir"; echo "check-exit: $?"; echo used: $(du -sk "$dir" | cut -f1); exit $rc"#;
    let mut c =
        crate::common::program("unshare", &["-m", "--propagation", "private", "sh", "-c", script, "sh", "8m"], &env);
    // 2 threads, 300 000 events a second for 2 s, unpacked: about 20 MB, 2.5 times the disk.
    c.arg(&small).arg(DUMP).arg(crate::common::CHILD).args(["steady", "2", "300000", "2"]);
    let out = c.output().unwrap();
    if out.status.code() == Some(97) || (out.status.code() == Some(1) && out.stdout.is_empty()) {
        assert!(std::env::var_os("CI").is_none(), "CI must be able to mount a tmpfs (root, unshare -m)");
        eprintln!("skipped: cannot mount a small file system here (needs root and unshare -m)");
        return;
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "exit 0: {}\n{stdout}", stderr(&out));
    assert!(!stderr(&out).contains("no room"), "the disk never filled: {}", stderr(&out));
    let check = stdout.split("check:\n").nth(1).unwrap_or_default();
    assert!(check.contains("check-exit: 0"), "{stdout}");
    assert!(!check.contains("disk full"), "{stdout}");
    assert!(check.contains("removed by the disk budget: segments 0.."), "{stdout}");
    let used: u64 = stdout.split("used: ").nth(1).unwrap().trim().parse().unwrap();
    // The floor is kept at each seal: what is written after one, up to the next (a segment,
    // a block past it and its stop block's reserve), may go below it until then.
    assert!(
        used <= (5 << 10) + 256 + 2 * 64,
        "at most the 8 MiB less the 3 MiB floor, and a segment's growth: {used} KiB\n{stdout}"
    );
}

/// A run that sealed a segment and stopped: every reader judges its recording whole, the
/// merge by time of `summary` and the exports as `check` and `stats` do. The merge reads a
/// segment's next blocks before it has handed on the records of the one before, and held a
/// segment's stop marker to what it had handed on by then: `summary` said NOT whole (two
/// counts that disagree with their markers) and the exports said so on stderr.
#[test]
fn a_recording_of_segments_is_whole_to_every_reader() {
    let d = dir("whole-to-every-reader");
    let out = run(child(&["rotate", "200", "1"], &[("EVENT_FILE", "trace.evt"), ("EVENT_ROTATE", "1h")]), &d);
    assert_eq!(stderr(&out), "");
    assert_eq!(listing(&d), ["trace.000000.evt", "trace.000001.evt"]);
    let at = d.to_str().unwrap();
    let (code, check) = dump(&["check", at]);
    assert_eq!(code, 0, "{check}");
    let out = Command::new(DUMP).args(["summary", "--format", "json", at]).output().unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("summary's JSON");
    let findings = &summary["logs"][0]["findings"];
    assert_eq!(
        (findings["whole"].as_bool(), findings["marker_disagreements"].as_u64()),
        (Some(true), Some(0)),
        "{findings}"
    );
    let chrome = d.join("out.json");
    let out =
        Command::new(DUMP).args(["export", "--to", "chrome", at, "-o", chrome.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("NOT whole"), "{}", stderr(&out));
}
