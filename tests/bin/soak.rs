//! The crash soak: COUNT times, `recorder-child` records numbered events into a ring file
//! from several threads and is ended at a random moment, by SIGKILL, by SIGABRT sent to one
//! of its threads, or by a panic on one of its workers (the three in turn); then the ring
//! file is checked (`event_tests::check_ring`: every worker's events a gap-free run, no
//! damaged block, the state the ending leaves, overwrites counted) and `event-dump check`
//! and `event-dump stats` must say the same: counts, overwritten blocks as one note (a ring
//! does that as configured), a writer killed or aborted as "not stopped cleanly" (exit 1),
//! losses as problems (exit 1).
//!
//! ```text
//! cargo build --release -p event-tests -p event-dump
//! target/release/soak --count 100            # prints its seed
//! target/release/soak --seed S --round R     # replays round R of seed S
//! ```
//!
//! Options: `--count N` (default 100), `--seed S` (default: from the clock), `--round R`
//! (only that round), `--bin-dir DIR` (where `recorder-child` and `event-dump` are; default:
//! beside this program), `--dir DIR` (for the ring files; default: a new directory in the
//! system's temporary directory), `--keep` (keep every ring file).
//!
//! One line per round, a summary at the end; on the first failure, the seed and the round
//! that replay it, the ring file kept, and exit code 1. A replay repeats the round's choices
//! (ending, threads, ring size, delay, victim), not the scheduler's timing.

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    soak::main()
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    eprintln!("soak: needs a Unix system (it sends signals)");
    std::process::ExitCode::from(2)
}

#[cfg(unix)]
mod soak {
    use event_format::ring::{STATE_CLOSED, STATE_RECORDING};
    use event_tests::{RingCheck, check_ring, state_name};
    use std::io::{BufRead, BufReader, Read};
    use std::os::unix::process::ExitStatusExt;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    /// How long a child may take to start, and to end once told to.
    const PATIENCE: Duration = Duration::from_secs(30);

    const USAGE: &str = "usage: soak [--count N] [--seed S] [--round R] [--bin-dir DIR] [--dir DIR] [--keep]";

    struct Options {
        count: u64,
        seed: u64,
        round: Option<u64>,
        bin_dir: PathBuf,
        dir: Option<PathBuf>,
        keep: bool,
    }

    fn options() -> Result<Options, String> {
        let mut o =
            Options { count: 100, seed: clock_seed(), round: None, bin_dir: PathBuf::new(), dir: None, keep: false };
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
        o.bin_dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value; {USAGE}"));
            let number =
                |name: &str, v: String| v.parse::<u64>().map_err(|_| format!("{name} {v}: not a number; {USAGE}"));
            match arg.as_str() {
                "--count" => o.count = number("--count", value("--count")?)?,
                "--seed" => o.seed = number("--seed", value("--seed")?)?,
                "--round" => o.round = Some(number("--round", value("--round")?)?),
                "--bin-dir" => o.bin_dir = PathBuf::from(value("--bin-dir")?),
                "--dir" => o.dir = Some(PathBuf::from(value("--dir")?)),
                "--keep" => o.keep = true,
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other}; {USAGE}")),
            }
        }
        Ok(o)
    }

    fn clock_seed() -> u64 {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        splitmix(nanos ^ u64::from(std::process::id()).rotate_left(32)) % 1_000_000_000
    }

    /// SplitMix64: one step.
    fn splitmix(x: u64) -> u64 {
        let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A seeded generator of small numbers.
    struct Rng(u64);

    impl Rng {
        /// A number in `0..n`.
        fn below(&mut self, n: u64) -> u64 {
            self.0 = splitmix(self.0);
            self.0 % n
        }
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Ending {
        /// SIGKILL to the process.
        Kill,
        /// SIGABRT to one of its threads (Linux; elsewhere to the process).
        Abort,
        /// A worker panics; the main thread panics in turn and unwinds.
        Panic,
    }

    /// One round's choices, all from the seed and the round number.
    #[derive(Debug)]
    struct Plan {
        ending: Ending,
        threads: u64,
        ring_kib: u64,
        delay_ms: u64,
        /// The panicking worker; for an abort, which of the threads gets the signal.
        victim: u64,
        /// Full speed, or a millisecond's sleep after every `burst` events.
        burst: Option<u64>,
    }

    fn plan(seed: u64, round: u64) -> Plan {
        let mut rng = Rng(splitmix(seed ^ splitmix(round)));
        let ending = [Ending::Kill, Ending::Abort, Ending::Panic][(round % 3) as usize];
        let threads = 1 + rng.below(6);
        let ring_kib = [128, 256, 1024, 4096, 16384][rng.below(5) as usize];
        // Mostly soon after the start (rings not yet full), sometimes long after.
        let delay_ms = match rng.below(4) {
            0 => rng.below(3),
            1 | 2 => rng.below(40),
            _ => rng.below(300),
        };
        let victim = rng.below(64);
        // Half the rounds at full speed (rings overwritten within milliseconds), half paced.
        let burst = [None, None, None, Some(10), Some(100), Some(1000)][rng.below(6) as usize];
        Plan { ending, threads, ring_kib, delay_ms, victim, burst }
    }

    /// What a round that passed found.
    struct Outcome {
        check: RingCheck,
        dump_check_exit: i32,
    }

    pub(crate) fn main() -> ExitCode {
        let o = match options() {
            Ok(o) => o,
            Err(e) => {
                eprintln!("soak: {e}");
                return ExitCode::from(2);
            }
        };
        let exe = |name: &str| o.bin_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        let (child, dump) = (exe("recorder-child"), exe("event-dump"));
        for bin in [&child, &dump] {
            if !bin.is_file() {
                eprintln!(
                    "soak: {} not found; build it beside the soak first: cargo build -p event-tests -p event-dump (with --release for a release soak), or pass --bin-dir",
                    bin.display()
                );
                return ExitCode::from(2);
            }
        }
        let made_dir = o.dir.is_none();
        let dir =
            o.dir.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("event-soak-{}", std::process::id())));
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("soak: cannot create {}: {e}", dir.display());
            return ExitCode::from(2);
        }
        no_core_dumps();
        let rounds: Vec<u64> = match o.round {
            Some(r) => vec![r],
            None => (0..o.count).collect(),
        };
        println!(
            "soak: seed {} (replay a round with --seed {} --round R); {} rounds; ring files in {}",
            o.seed,
            o.seed,
            rounds.len(),
            dir.display()
        );
        let began = Instant::now();
        let (mut events, mut overwritten, mut whole) = (0u64, 0u64, 0u64);
        let mut by_ending = [0u64; 3];
        for &round in &rounds {
            let p = plan(o.seed, round);
            let ring = dir.join(format!("round-{round}.ring"));
            let started = Instant::now();
            let what = format!(
                "{:<5} {} thread{}, {:<10} ring {:>5}k, after {:>3} ms",
                format!("{:?}", p.ending).to_lowercase(),
                p.threads,
                if p.threads == 1 { " " } else { "s" },
                p.burst.map_or("full speed".to_owned(), |b| format!("bursts {b}")) + ",",
                p.ring_kib,
                p.delay_ms
            );
            match run_round(&child, &dump, &ring, &p) {
                Ok(out) => {
                    let s = &out.check.findings;
                    println!(
                        "round {round:>4} {what}: {:>9} events, {:>5} blocks overwritten ({} threads), {} lost, {}, check exit {} [{:.2} s]",
                        out.check.numbered.numbered_events(),
                        s.overwritten_blocks,
                        out.check.threads_overwritten(),
                        s.lost,
                        state_name(s.state),
                        out.dump_check_exit,
                        started.elapsed().as_secs_f64()
                    );
                    events += out.check.numbered.numbered_events();
                    overwritten += u64::from(s.overwritten_blocks > 0);
                    whole += u64::from(out.dump_check_exit == 0);
                    by_ending[p.ending as usize] += 1;
                    if !o.keep {
                        let _ = std::fs::remove_file(&ring);
                    }
                }
                Err(why) => {
                    println!("round {round:>4} {what}: FAILED");
                    eprintln!("soak: round {round} failed: {why}");
                    eprintln!("soak: the ring file is kept at {}", ring.display());
                    eprintln!("soak: replay with: soak --seed {} --round {round}", o.seed);
                    return ExitCode::from(1);
                }
            }
        }
        if made_dir && !o.keep {
            let _ = std::fs::remove_dir(&dir);
        }
        println!(
            "soak: all {} rounds passed in {:.1} s ({} kill, {} abort, {} panic; {overwritten} with overwritten blocks, {whole} whole; {events} events checked); seed {}",
            rounds.len(),
            began.elapsed().as_secs_f64(),
            by_ending[0],
            by_ending[1],
            by_ending[2],
            o.seed
        );
        ExitCode::SUCCESS
    }

    /// A running child with its stdout lines and its stderr gathered by threads.
    struct Running {
        child: Child,
        lines: mpsc::Receiver<String>,
        stderr: Option<std::thread::JoinHandle<String>>,
    }

    impl Running {
        fn line(&self, within: Duration, what: &str) -> Result<String, String> {
            match self.lines.recv_timeout(within) {
                Ok(line) => Ok(line),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    Err(format!("no {what} from the child within {} s", within.as_secs()))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => Err(format!("the child ended before its {what}")),
            }
        }

        /// Waits for the child to end; kills it when it takes too long.
        fn wait(&mut self) -> Result<(ExitStatus, String), String> {
            let deadline = Instant::now() + PATIENCE;
            loop {
                match self.child.try_wait() {
                    Ok(Some(status)) => {
                        let stderr = self.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
                        return Ok((status, stderr));
                    }
                    Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
                    Ok(None) => return Err(format!("the child did not end within {} s", PATIENCE.as_secs())),
                    Err(e) => return Err(format!("cannot wait for the child: {e}")),
                }
            }
        }
    }

    impl Drop for Running {
        fn drop(&mut self) {
            if let Ok(None) = self.child.try_wait() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
    }

    fn start(child: &Path, ring: &Path, p: &Plan) -> Result<Running, String> {
        let ring = ring.to_str().ok_or("the ring file's path is not UTF-8")?;
        let threads = p.threads.to_string();
        let (delay, victim) = (p.delay_ms.to_string(), (p.victim % p.threads).to_string());
        let mut args: Vec<&str> = match p.ending {
            Ending::Panic => vec!["panic-ring", ring, &threads, &delay, &victim],
            Ending::Kill | Ending::Abort => vec!["ring", ring, &threads],
        };
        let burst = p.burst.map(|b| b.to_string());
        args.extend(burst.as_deref());
        let mut c = Command::new(child);
        c.args(&args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        for var in ["EVENT_FILE", "EVENT_RING", "EVENT_CONTROL", "EVENT_POLICY", "EVENT_BUFSIZE"] {
            c.env_remove(var);
        }
        c.env("EVENT_BUFSIZE", format!("{}k", p.ring_kib));
        let mut spawned = c.spawn().map_err(|e| format!("cannot start {}: {e}", child.display()))?;
        let (stdout, mut stderr) = (spawned.stdout.take(), spawned.stderr.take());
        let (send, lines) = mpsc::channel();
        if let Some(stdout) = stdout {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if send.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let stderr = stderr.take().map(|mut s| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = s.read_to_string(&mut text);
                text
            })
        });
        Ok(Running { child: spawned, lines, stderr })
    }

    fn run_round(child: &Path, dump: &Path, ring: &Path, p: &Plan) -> Result<Outcome, String> {
        let _ = std::fs::remove_file(ring);
        let mut running = start(child, ring, p)?;
        let ready = running.line(PATIENCE, "`ready` line")?;
        if ready != "ready" {
            return Err(format!("the child said {ready:?} instead of `ready`"));
        }
        let pid = running.child.id();
        let mut recorded_by_victim = None;
        match p.ending {
            Ending::Kill => {
                std::thread::sleep(Duration::from_millis(p.delay_ms));
                signal(pid, None, libc::SIGKILL)?;
            }
            Ending::Abort => {
                std::thread::sleep(Duration::from_millis(p.delay_ms));
                signal(pid, Some(p.victim), libc::SIGABRT)?;
            }
            Ending::Panic => {
                let line = running.line(PATIENCE + Duration::from_millis(p.delay_ms), "`panic after N events` line")?;
                let n = line
                    .strip_prefix("panic after ")
                    .and_then(|l| l.strip_suffix(" events"))
                    .and_then(|n| n.parse::<u64>().ok())
                    .ok_or_else(|| format!("the child said {line:?} instead of `panic after N events`"))?;
                recorded_by_victim = Some(n);
            }
        }
        let (status, stderr) = running.wait()?;
        let (expected, state) = match p.ending {
            Ending::Kill => (format!("killed by signal {}", libc::SIGKILL), STATE_RECORDING),
            Ending::Abort => (format!("killed by signal {}", libc::SIGABRT), STATE_RECORDING),
            Ending::Panic => ("exit code 101".to_owned(), STATE_CLOSED),
        };
        let got = match (status.code(), status.signal()) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => format!("{status}"),
        };
        if got != expected {
            return Err(format!("the child ended with {got}, expected {expected}; its stderr: {}", stderr.trim()));
        }
        let check = check_ring(ring, state, p.threads)?;
        if let Some(n) = recorded_by_victim {
            check_panic(&check, p.victim % p.threads, n, &stderr)?;
        }
        let dump_check_exit = agree_with_dump(dump, ring, &check)?;
        Ok(Outcome { check, dump_check_exit })
    }

    /// Sends `sig` to the process `pid`, or, with `thread` and on Linux, to one of its
    /// threads other than the main thread (chosen by `thread`), so that the signal handler
    /// interrupts a thread that is recording.
    fn signal(pid: u32, thread: Option<u64>, sig: libc::c_int) -> Result<(), String> {
        #[cfg(target_os = "linux")]
        if let Some(k) = thread {
            let mut tids: Vec<i64> = std::fs::read_dir(format!("/proc/{pid}/task"))
                .map_err(|e| format!("cannot list the child's threads: {e}"))?
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .filter(|&t: &i64| t != i64::from(pid))
                .collect();
            tids.sort_unstable();
            if !tids.is_empty() {
                let tid = tids[(k % tids.len() as u64) as usize];
                // SAFETY: tgkill takes plain integers; a thread that has gone meanwhile makes it
                // fail with ESRCH, which is reported.
                let r = unsafe {
                    libc::syscall(libc::SYS_tgkill, pid as libc::c_long, tid as libc::c_long, sig as libc::c_long)
                };
                return if r == 0 {
                    Ok(())
                } else {
                    Err(format!("tgkill({pid}, {tid}, {sig}): {}", std::io::Error::last_os_error()))
                };
            }
        }
        let _ = thread;
        // SAFETY: kill takes plain integers.
        let r = unsafe { libc::kill(pid as libc::pid_t, sig) };
        if r == 0 { Ok(()) } else { Err(format!("kill({pid}, {sig}): {}", std::io::Error::last_os_error())) }
    }

    /// A panicking worker's events are all in the file, up to its last, and the traceback
    /// on stderr ends with that event.
    fn check_panic(check: &RingCheck, victim: u64, recorded: u64, stderr: &str) -> Result<(), String> {
        let last = check.numbered.by_worker.get(&victim).and_then(|n| n.last()).copied();
        if last != recorded.checked_sub(1) {
            return Err(format!(
                "worker {victim} recorded events 0..{recorded} before it panicked, but the file's last is {last:?}"
            ));
        }
        let head = format!("events of thread 'worker-{victim}' before it panicked:");
        let at = stderr
            .find(&head)
            .ok_or_else(|| format!("no traceback of worker-{victim} on stderr: {}", stderr.trim()))?;
        let traceback: Vec<&str> = stderr[at..].lines().skip(1).take_while(|l| l.starts_with("    ")).collect();
        let expected = format!("committed={}", recorded - 1);
        match traceback.last() {
            Some(line) if line.ends_with(&expected) => Ok(()),
            other => Err(format!("the traceback's last event is {other:?}, expected one ending with {expected}")),
        }
    }

    /// The integers among a line's words (punctuation around them ignored).
    fn integers(line: &str) -> Vec<u64> {
        line.split_whitespace()
            .filter_map(|w| w.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok().filter(|_| !w.contains('.')))
            .collect()
    }

    fn run_dump(dump: &Path, args: &[&str]) -> Result<(i32, String), String> {
        let out = Command::new(dump).args(args).output().map_err(|e| format!("cannot run {}: {e}", dump.display()))?;
        let code = out.status.code().ok_or_else(|| format!("event-dump {} ended by {}", args.join(" "), out.status))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("panicked") {
            return Err(format!("event-dump {} panicked: {stderr}", args.join(" ")));
        }
        // What it said on stderr goes with its output, for the failure message.
        Ok((code, format!("{}{stderr}", String::from_utf8_lossy(&out.stdout))))
    }

    /// `event-dump check` and `stats` say what the checks found; returns `check`'s exit code.
    fn agree_with_dump(dump: &Path, ring: &Path, check: &RingCheck) -> Result<i32, String> {
        let path = ring.to_str().ok_or("the ring file's path is not UTF-8")?;
        let (s, n) = (&check.findings, &check.numbered);
        let disagree = |what: &str, output: &str| Err(format!("event-dump {what}; it printed:\n{output}"));

        let (check_code, out) = run_dump(dump, &["check", path])?;
        // A ring that overwrote its oldest blocks did as configured: one note, not a problem
        // (docs/OUTPUT.md, `check`). A writer that did not close the file (killed, aborted)
        // and lost events are problems.
        let killed = s.state != STATE_CLOSED;
        let expected_code = i32::from(killed || s.lost > 0);
        if check_code != expected_code {
            return disagree(&format!("check exited {check_code}, expected {expected_code}"), &out);
        }
        let first = out.lines().next().and_then(|l| l.strip_prefix(path)).unwrap_or_default();
        if integers(first) != [n.blocks, n.events] {
            return disagree(&format!("check counts differ from {} blocks, {} events", n.blocks, n.events), &out);
        }
        let said: Vec<&str> = out
            .lines()
            .skip(1)
            .map(str::trim)
            .filter(|l| !l.starts_with("whole") && !l.starts_with("NOT whole"))
            .collect();
        let overwritten: Vec<&&str> = said.iter().filter(|l| l.starts_with("overwritten: ")).collect();
        let overwritten_right = match overwritten.as_slice() {
            [] => s.overwritten_blocks == 0,
            [line] => integers(line) == [s.overwritten_blocks, check.threads_overwritten() as u64],
            _ => false,
        };
        let not_clean = said.iter().filter(|l| l.starts_with("not stopped cleanly (killed or aborted)")).count();
        let lost = format!("lost: no thread: {} events", s.lost);
        let expected_lines = overwritten.len() + usize::from(killed) + usize::from(s.lost > 0);
        if !overwritten_right
            || not_clean != usize::from(killed)
            || said.len() != expected_lines
            || (s.lost > 0 && !said.contains(&lost.as_str()))
        {
            return disagree(
                &format!(
                    "check should note {} blocks of {} threads overwritten, say {}, report {} lost events, and nothing else",
                    s.overwritten_blocks,
                    check.threads_overwritten(),
                    if killed { "not stopped cleanly" } else { "nothing of the stop (closed)" },
                    s.lost
                ),
                &out,
            );
        }

        let (code, out) = run_dump(dump, &["stats", path])?;
        if code != 0 {
            return disagree(&format!("stats exited {code}"), &out);
        }
        let line =
            |start: &str| out.lines().map(str::trim).find(|l| l.starts_with(start)).map(integers).unwrap_or_default();
        let counts = line(&format!("{} events in", n.events));
        if counts.get(1) != Some(&n.blocks) {
            return disagree(&format!("stats should count {} events in {} blocks", n.events, n.blocks), &out);
        }
        if line(&format!("{} events lost,", s.lost)) != [s.lost, s.overwritten_blocks, 0, 0, 0] {
            return disagree(
                &format!(
                    "stats should count {} lost, {} blocks missing and nothing damaged",
                    s.lost, s.overwritten_blocks
                ),
                &out,
            );
        }
        let state = match s.state {
            STATE_CLOSED => "ring file: closed;",
            _ => "ring file: recording",
        };
        if line(state) != [s.threads, s.overwritten_blocks, s.threads_without_slot, s.slots_reused, s.discarded] {
            return disagree(
                &format!(
                    "stats should say `{state}` with {} threads, {} overwritten blocks, {} threads without a slot, \
                     {} slots reused and {} events discarded",
                    s.threads, s.overwritten_blocks, s.threads_without_slot, s.slots_reused, s.discarded
                ),
                &out,
            );
        }
        if line("Arena.ArenaDestroy").first() != Some(&n.numbered_events()) {
            return disagree(&format!("stats should count {} Arena.ArenaDestroy events", n.numbered_events()), &out);
        }
        Ok(check_code)
    }

    /// Killed children leave no core files behind (the limit is inherited).
    fn no_core_dumps() {
        let zero = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: setrlimit reads the struct passed; lowering a limit needs no privilege.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &zero) };
    }
}
