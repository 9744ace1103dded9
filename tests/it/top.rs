//! `event-dump top` in a real terminal: tmux runs it against a running child (send-keys to
//! type, capture-pane to read the screen). The screen shows the child's events per second
//! within 20 %, sorts on a key, and `q` and Ctrl-C each end it with the terminal restored
//! (the alternate screen left, exit status 0). Without tmux the test says it skipped, and
//! fails where `EVENT_REQUIRE_TMUX=1` (CI) asks for it.

use crate::common::{DUMP, child, dir, program};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// tmux on a server of its own (`-L`): the test never touches the user's sessions.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().expect("tmux runs")
    }

    fn capture(&self, target: &str) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", target]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `command` in a new detached session `name`, 120 by 40, whose pane stays when
    /// the command exits (to read its status and screen).
    fn session(&self, name: &str, command: &str) {
        let out = self.run(&["new-session", "-d", "-s", name, "-x", "120", "-y", "40", command]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        self.run(&["set-option", "-t", name, "remain-on-exit", "on"]);
    }

    /// Waits until `done` holds for the screen of `target`, at most `limit`; the last screen.
    fn wait_for(&self, target: &str, limit: Duration, done: impl Fn(&str) -> bool) -> String {
        let began = Instant::now();
        loop {
            let screen = self.capture(target);
            if done(&screen) || began.elapsed() > limit {
                return screen;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).stderr(Stdio::null()).output();
    }
}

/// Whether tmux is here; where it is not, says so, or fails when `EVENT_REQUIRE_TMUX=1`.
fn tmux_here() -> bool {
    let here = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    if !here {
        assert!(
            std::env::var("EVENT_REQUIRE_TMUX").as_deref() != Ok("1"),
            "tmux not found, and EVENT_REQUIRE_TMUX=1 requires it (apt-get install tmux)"
        );
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "skipped: tmux not found (apt-get install tmux)");
    }
    here
}

/// The rate `top`'s screen shows (`events/s N`), if it shows one.
fn shown_rate(screen: &str) -> Option<f64> {
    let line = screen.lines().find(|l| l.contains("events/s ") && l.contains("events read"))?;
    let after = line.split("events/s ").nth(1)?;
    after.split_whitespace().next()?.parse().ok()
}

#[test]
fn top_shows_a_running_childs_rate_sorts_and_quits_cleanly() {
    if !tmux_here() {
        return;
    }
    let d = dir("top", "rate");
    let ring = d.join("steady.ring");
    // 20 000 events a second from two workers, for long enough to read it several times.
    const RATE: f64 = 20_000.0;
    let program = recording(&["steady", "2", "20000", "20"], &ring);
    let tmux = Tmux { socket: format!("event-top-{}", std::process::id()) };
    // The shell writes top's exit status to a file: tmux's `#{pane_dead_status}` is sometimes
    // empty for a pane whose command exited 0, and a last line may miss its screen.
    let command = |extra: &str, status: &Path| {
        format!("{DUMP} top {} --interval 1000{extra}; echo $? > {}", shell_quoted(&ring), shell_quoted(status))
    };
    let exit_status = |status: &Path| {
        let began = Instant::now();
        while !status.exists() && began.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(100));
        std::fs::read_to_string(status).map(|s| s.trim().to_owned()).unwrap_or_default()
    };
    let (quit, interrupted) = (d.join("quit.status"), d.join("interrupted.status"));
    tmux.session("top", &command("", &quit));
    // A full interval past the child's start, the rate settles: read it three times.
    std::thread::sleep(Duration::from_millis(2500));
    let mut rates = Vec::new();
    let mut screen = String::new();
    for _ in 0..3 {
        screen = tmux.wait_for("top", Duration::from_secs(5), |s| shown_rate(s).is_some_and(|r| r > 0.0));
        rates.push(shown_rate(&screen).unwrap_or_else(|| panic!("no rate on the screen:\n{screen}")));
        std::thread::sleep(Duration::from_millis(1100));
    }
    for r in &rates {
        assert!(
            (r - RATE).abs() <= 0.2 * RATE,
            "the screen shows {r} events/s, the child records {RATE}: {rates:?}\n{screen}"
        );
    }
    assert!(screen.contains("T1") && screen.contains("Arena.ArenaDestroy"), "{screen}");
    assert!(screen.contains("0 events lost"), "{screen}");
    // `s` sorts by the next key, in place.
    tmux.run(&["send-keys", "-t", "top", "s"]);
    let sorted = tmux.wait_for("top", Duration::from_secs(3), |s| s.contains("sorted by total"));
    assert!(sorted.contains("sorted by total"), "{sorted}");
    // `q` ends it: status 0, the alternate screen left (its view gone from the pane).
    tmux.run(&["send-keys", "-t", "top", "q"]);
    assert_eq!(exit_status(&quit), "0", "q ends top with status 0");
    let after = tmux.capture("top");
    assert!(!after.contains("events/s"), "the terminal is restored: the view is gone\n{after}");
    // Ctrl-C too (raw mode: a key, not a signal).
    tmux.session("interrupted", &command(" --sort name", &interrupted));
    let shown = tmux.wait_for("interrupted", Duration::from_secs(10), |s| s.contains("sorted by name"));
    assert!(shown.contains("sorted by name"), "{shown}");
    tmux.run(&["send-keys", "-t", "interrupted", "C-c"]);
    assert_eq!(exit_status(&interrupted), "0", "Ctrl-C ends top with status 0");
    let after = tmux.capture("interrupted");
    assert!(!after.contains("events/s"), "the terminal is restored: the view is gone\n{after}");
    drop(program);
}

/// `--once` prints one view as text, without a terminal; an error (no such file) is one
/// line and exit 1, and `top` without `--once` off a terminal says to use it.
#[test]
fn once_prints_one_view_and_errors_are_one_line() {
    let d = dir("top", "once");
    let ring = d.join("steady.ring");
    let mut program = recording(&["steady", "1", "5000", "4"], &ring);
    let out = Command::new(DUMP).args(["top", ring.to_str().unwrap(), "--once"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // Who records, named as every reader names a log: its service (the program, without a
    // `service` label) on its host, then its pid.
    assert!(text.lines().next().is_some_and(|l| l.contains(": recorder-child on ") && l.contains(" (pid ")), "{text}");
    assert!(shown_rate(&text).is_some(), "{text}");
    assert!(text.contains("\nkind ") && text.contains("\nthread ") && text.contains("\nevent "), "{text}");
    program.wait();
    // The recording ended: the view is of its last interval.
    let out = Command::new(DUMP).args(["top", ring.to_str().unwrap(), "--once"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.lines().next().is_some_and(|l| l.contains(", ended, ")), "{text}");
    let rate = shown_rate(&text).unwrap();
    assert!((rate - 5000.0).abs() <= 1000.0, "{text}");
    let none = d.join("none.ring");
    for (args, says) in [
        (["top", none.to_str().unwrap()], "no such file"),
        (["top", ring.to_str().unwrap()], "`top --once` prints one view"),
    ] {
        let out = Command::new(DUMP).args(args).stdout(Stdio::piped()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
}

/// A `recorder-child` with `args` recording into the ring file `ring`, once it records (its
/// first `sample` line is printed after the recording started).
fn recording(args: &[&str], ring: &Path) -> Recording {
    let mut program = child(args, &[("EVENT_RING", ring.to_str().unwrap())]).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(program.stdout.as_mut().unwrap()), &mut line).unwrap();
    assert!(line.starts_with("sample "), "{line}");
    Recording(program)
}

/// A recording child, killed when the test ends (passed or not).
struct Recording(std::process::Child);

impl Recording {
    /// Waits until it ends by itself.
    fn wait(&mut self) {
        // Its stdout is read to the end (it writes a line a second), so it never blocks.
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(self.0.stdout.as_mut().unwrap(), &mut rest);
        self.0.wait().unwrap();
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `path` quoted for the shell tmux runs the command in.
fn shell_quoted(path: &Path) -> String {
    format!("'{}'", path.to_str().unwrap().replace('\'', "'\\''"))
}

/// A recording of segments (a directory the recorder rotates in) is read through `follow`'s
/// segment follower: live, then once it ended, from its latest segment.
#[test]
fn a_recording_of_segments_is_followed() {
    let d = dir("top", "segments");
    let base = d.join("trace.evt");
    let mut program =
        child(&["steady", "1", "5000", "3"], &[("EVENT_FILE", base.to_str().unwrap()), ("EVENT_ROTATE", "1s")])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(program.stdout.as_mut().unwrap()), &mut line).unwrap();
    let program = Recording(program);
    let once = || {
        let out = Command::new(DUMP).args(["top", d.to_str().unwrap(), "--once"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let live = once();
    assert!(
        live.lines().next().is_some_and(|l| l.contains(": recorder-child on ") && l.contains(", live, ")),
        "{live}"
    );
    let mut program = program;
    program.wait();
    let ended = once();
    assert!(ended.lines().next().is_some_and(|l| l.contains(", ended, ")), "{ended}");
    let read: u64 =
        ended.lines().find_map(|l| l.split("events read ").nth(1)?.split(')').next()?.parse().ok()).unwrap();
    assert!(read > 0, "{ended}");
    assert!(ended.contains("Arena.ArenaDestroy") && ended.contains("\n0 events lost, 0 blocks missing"), "{ended}");
}

/// What the events' limits suppressed is in the view: the ledger's count of the `Suppressed`
/// records, in all beside the losses and per event, the numbers `stats` gives.
#[test]
fn once_shows_what_limits_suppressed() {
    let d = dir("top", "suppressed");
    let log = d.join("limited.evt");
    let out = program(
        env!("CARGO_BIN_EXE_aggregate-child"),
        &["limit", "Seq", "2000", "1", "2"],
        &[("EVENT_FILE", log.to_str().unwrap())],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats = Command::new(DUMP).args(["stats", log.to_str().unwrap()]).output().unwrap();
    let stats = String::from_utf8_lossy(&stats.stdout).into_owned();
    let suppressed: u64 = stats
        .lines()
        .find_map(|l| l.split("suppressed by its limit: Test.Seq, ").nth(1)?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{stats}"));
    assert!(suppressed > 0, "{stats}");
    let out = Command::new(DUMP).args(["top", log.to_str().unwrap(), "--once"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains(" events lost, ") && text.contains(&format!("; {suppressed} suppressed\n")), "{text}");
    assert!(text.contains(&format!("\nsuppressed by their limits: Test.Seq {suppressed}\n")), "{text}");
}
