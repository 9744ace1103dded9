//! event-dump as a user runs it, on logs this test records with the deterministic clock:
//! every subcommand's output (insta snapshots), labels, interned strings, drops, a damaged
//! block, the checked-in logs of both byte orders, follow and control on a live ring file,
//! and the one-line errors.

event_runtime::include_events!("../events.def");

mod common;

use common::{DUMP, SERIAL, run, stderr, stdout};
use event_runtime::{Policy, Recorder};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A directory of the test's own ([`common::numbered_dir`]).
fn dir() -> common::Scratch {
    common::numbered_dir("cli")
}

/// stdout, with what differs from run to run replaced: the log's path, the producer's pid
/// and program name (this test binary's, which has a hash in it).
fn clean(text: &str, log: &str) -> String {
    let pid = std::process::id().to_string();
    let program = std::env::current_exe().unwrap().file_stem().unwrap().to_string_lossy().into_owned();
    let text = replace_number(&text.replace(log, "LOG").replace(&program, "[program]"), &pid, "[pid]");
    // The host this runs on (format 2.0.1 records it): `[program] on HOST (pid [pid], ...`.
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        match line.split_once("[program] on ").and_then(|(a, b)| b.split_once(" (pid ").map(|(_, c)| (a, c))) {
            Some((before, after)) => out.push_str(&format!("{before}[program] on [host] (pid {after}")),
            None => out.push_str(line),
        }
    }
    // Offsets of blocks count from the header, whose length holds the host's name: shown
    // from the header's end (`at offset [header]+N`).
    if let Some(header_len) = std::fs::read(log)
        .ok()
        .filter(|b| b.len() >= 20)
        .map(|b| u64::from(u32::from_le_bytes(b[16..20].try_into().unwrap())))
    {
        let mut rest = out.as_str();
        let mut shifted = String::new();
        while let Some(at) = rest.find("at offset ") {
            let (head, tail) = rest.split_at(at + "at offset ".len());
            shifted.push_str(head);
            let digits = tail.chars().take_while(char::is_ascii_digit).count();
            match tail[..digits].parse::<u64>() {
                Ok(n) if n >= header_len => shifted.push_str(&format!("[header]+{}", n - header_len)),
                _ => shifted.push_str(&tail[..digits]),
            }
            rest = &tail[digits..];
        }
        shifted.push_str(rest);
        out = shifted;
    }
    out
}

/// `text` with every `number` that is not part of a longer number (no digit before or after
/// it) replaced by `with`.
fn replace_number(text: &str, number: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(number) {
        let (head, tail) = rest.split_at(at);
        let after = &tail[number.len()..];
        out.push_str(head);
        // What comes before is all in `out` (a number kept whole just before, too).
        let alone = !out.ends_with(|c: char| c.is_ascii_digit()) && !after.starts_with(|c: char| c.is_ascii_digit());
        out.push_str(if alone { with } else { number });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The pid is replaced where it stands as a number of its own, never inside another: a
/// figure such as `239520958 events/s` stays as it is when the pid is 3952.
#[test]
fn clean_replaces_the_pid_only_as_a_whole_number() {
    let pid = std::process::id();
    let text = format!(
        "over 0.5 s (2{pid}9 events/s, {pid}0 and 7{pid}, {pid}{pid}); [program] on h (pid {pid}, x86_64 linux)\n"
    );
    assert_eq!(
        clean(&text, "/no/such/log"),
        format!(
            "over 0.5 s (2{pid}9 events/s, {pid}0 and 7{pid}, {pid}{pid}); [program] on [host] (pid [pid], x86_64 linux)\n"
        )
    );
}

/// [`common::two_workers_log`] in the test's directory `d`.
fn sample_log(d: &Path, name: &str) -> PathBuf {
    let path = d.join(name);
    common::two_workers_log(&path);
    path
}

/// [`common::whole_block_dropping_log`] in the test's directory `d`.
fn dropping_log(d: &Path) -> PathBuf {
    let path = d.join("drops.evt");
    common::whole_block_dropping_log(&path);
    path
}

#[test]
fn print_text_json_csv() {
    let d = dir();
    let log = sample_log(&d, "print.evt");
    let log = log.to_str().unwrap();
    let text = run(&[log]);
    assert!(text.status.success(), "{}", stderr(&text));
    insta::assert_snapshot!("print_text", stdout(&text));
    assert_eq!(stdout(&run(&["print", log])), stdout(&text), "print is the default");
    insta::assert_snapshot!("print_json", stdout(&run(&["print", log, "--format", "json", "--limit", "6"])));
    insta::assert_snapshot!("print_csv", stdout(&run(&["print", log, "--format", "csv", "--limit", "6"])));
    insta::assert_snapshot!(
        "print_raw_ticks_no_labels",
        stdout(&run(&["print", log, "--raw-ticks", "--no-labels", "--limit", "5"]))
    );
}

/// `event-dump ARGS` with `bytes` written to its standard input through a pipe, from another
/// thread (a pipe holds less than a log).
#[cfg(unix)]
fn through_a_pipe(args: &[&str], bytes: Vec<u8>) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(DUMP)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The reader may stop early (a refusal): the rest of the write fails, and that is fine.
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

/// A log read from a pipe (`zcat log.evt.gz | event-dump print /dev/stdin`) prints as the
/// file does, as do `stats` and `check`. Each once refused it ("cannot open: Illegal seek"):
/// the reader read the magic, then seeked back to the start, which a pipe cannot.
#[cfg(unix)]
#[test]
fn a_log_from_a_pipe_reads_as_the_file_does() {
    let d = dir();
    let log = sample_log(&d, "piped.evt");
    let bytes = std::fs::read(&log).unwrap();
    let log = log.to_str().unwrap();
    for command in ["print", "stats", "check"] {
        let piped = through_a_pipe(&[command, "/dev/stdin"], bytes.clone());
        assert!(piped.status.success(), "{command}: {}", stderr(&piped));
        let file = run(&[command, log]);
        let shown = |o: &Output| stdout(o).replace(log, "LOG").replace("/dev/stdin", "LOG");
        if command == "print" {
            assert_eq!(stdout(&piped), stdout(&file), "print from a pipe");
        } else {
            // The log's length is not known ahead from a pipe: stats and check name the same events.
            let events = |o: &Output| shown(o).lines().find(|l| l.contains(" events")).map(str::to_owned);
            assert_eq!(events(&piped), events(&file), "{command}: {}", shown(&piped));
        }
    }
    // A ring file cannot come from a pipe: one line says so (it once said "not a ring file").
    let ring = d.join("piped.ring");
    common::tiny_ring(&ring);
    let out = through_a_pipe(&["print", "/dev/stdin"], std::fs::read(&ring).unwrap());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "event-dump: /dev/stdin: a ring file is read at positions, which a pipe cannot give; read the ring file \
         itself, or a copy of it\n"
    );
}

#[test]
fn print_selects() {
    let d = dir();
    let log = sample_log(&d, "select.evt");
    let log = log.to_str().unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("kind", &["--kind", "Pool,Sw*"]),
        ("event", &["--event", "Arena.*,ClientCheck"]),
        ("thread", &["--thread", "3", "--limit", "3"]),
        ("since_until", &["--since", "0.000000040", "--until", "0.000000044"]),
        ("filter", &["--filter", "(size >= 400 && size < 464) || name ~ \"Sweep*\" || !(thread != 1)"]),
    ];
    for (name, args) in cases {
        let mut all = vec!["print", log];
        all.extend_from_slice(args);
        let out = run(&all);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        insta::assert_snapshot!(format!("select_{name}"), stdout(&out));
    }
}

#[test]
fn bad_selections_are_one_clear_line() {
    let d = dir();
    let log = sample_log(&d, "bad-select.evt");
    let log = log.to_str().unwrap();
    let mut errors = String::new();
    for args in [
        &["--filter", "size >= 4096 && nme == x"][..],
        &["--filter", "size => 4"],
        &["--kind", "Pol"],
        &["--event", "PoolInt"],
        &["--thread", "main"],
    ] {
        let mut all = vec![log];
        all.extend_from_slice(args);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        errors.push_str(&format!("$ event-dump LOG {}\n{}\n", args.join(" "), stderr(&out)));
    }
    insta::assert_snapshot!(errors);
}

#[test]
fn stats_and_check() {
    let d = dir();
    let log = sample_log(&d, "stats.evt");
    let log = log.to_str().unwrap();
    let stats = run(&["stats", log]);
    assert!(stats.status.success());
    insta::assert_snapshot!("stats", clean(&stdout(&stats), log));
    let check = run(&["check", log]);
    assert_eq!(check.status.code(), Some(0), "a whole log: {}", stdout(&check));
    insta::assert_snapshot!("check_whole", clean(&stdout(&check), log));
}

#[test]
fn drops_are_reported_by_stats_check_and_print() {
    let d = dir();
    let log = dropping_log(&d);
    let log = log.to_str().unwrap();
    insta::assert_snapshot!("stats_drops", clean(&stdout(&run(&["stats", log])), log));
    let check = run(&["check", log]);
    assert_eq!(check.status.code(), Some(1), "drops make a log not whole");
    insta::assert_snapshot!("check_drops", clean(&stdout(&check), log));
    insta::assert_snapshot!("print_drops", stdout(&run(&["print", log, "--event", "Dropped"])));
}

#[test]
fn a_damaged_block_costs_only_itself() {
    let d = dir();
    let log = sample_log(&d, "damaged.evt");
    let mut bytes = std::fs::read(&log).unwrap();
    // A byte of the second block (blocks are packed: their lengths vary with the packing).
    let second = event_format::decode::Decoder::new(&bytes[..]).unwrap().nth(1).unwrap().unwrap();
    bytes[second.offset as usize + 60] ^= 0x40;
    let damaged = d.join("damaged-flipped.evt");
    std::fs::write(&damaged, &bytes).unwrap();
    let d = damaged.to_str().unwrap();
    let check = run(&["check", d]);
    assert_eq!(check.status.code(), Some(1));
    insta::assert_snapshot!("check_damaged", clean(&stdout(&check), d));
    let print = run(&["print", d]);
    assert!(print.status.success());
    insta::assert_snapshot!("print_damaged_stderr", clean(&stderr(&print), d));
    let whole = stdout(&run(&[log.to_str().unwrap()])).lines().count();
    let kept = stdout(&print).lines().count();
    assert!(kept > 0 && kept < whole, "the other blocks still print: {kept} of {whole}");
}

#[test]
fn schema_and_against() {
    let d = dir();
    let log = sample_log(&d, "schema.evt");
    let log = log.to_str().unwrap();
    let schema = run(&["schema", log]);
    assert!(schema.status.success());
    let def = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../events.def")).unwrap();
    // The set is named after the package that includes the file (it has no SET line).
    let parsed = event_format::def::parse_set(&def, "events.def", "event-dump").unwrap();
    assert_eq!(event_format::def::parse(&stdout(&schema), "dumped").unwrap(), parsed, "the dump is the relation");
    let same = run(&["schema", log, "--against", concat!(env!("CARGO_MANIFEST_DIR"), "/../events.def")]);
    assert_eq!(same.status.code(), Some(0));
    insta::assert_snapshot!("schema_against_same", stdout(&same));
    let changed = d.join("changed.def");
    let text = def.replace("VERSION(1, 0, 0)", "VERSION(1, 1, 0)").replace(
        "RELATION(ClientMark,      0x0052, TRUE,   Client, 0)",
        "RELATION(ClientMark,      0x0052, TRUE,   Client, W, n)\nRELATION(ClientNote, 0x0053, TRUE, Client, S, text)",
    );
    std::fs::write(&changed, text).unwrap();
    let differs = run(&["schema", log, "--against", changed.to_str().unwrap()]);
    insta::assert_snapshot!("schema_against_changed", stdout(&differs));
}

#[test]
fn checked_in_logs_of_both_byte_orders_print_the_same() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/v1.0.0");
    let le = run(&[&format!("{data}/tour-le.evt")]);
    let be = run(&[&format!("{data}/tour-be.evt")]);
    assert!(le.status.success() && be.status.success());
    assert_eq!(stdout(&le), stdout(&be));
    insta::assert_snapshot!("fixture_print", stdout(&le));
}

#[test]
fn unreadable_logs_are_one_line_and_exit_1() {
    let d = dir();
    let not_a_log = d.join("not-a-log.txt");
    std::fs::write(&not_a_log, "hello, world\n").unwrap();
    let truncated = d.join("truncated.evt");
    let sample = std::fs::read(sample_log(&d, "to-truncate.evt")).unwrap();
    std::fs::write(&truncated, &sample[..40]).unwrap();
    let no_logs = d.join("no-logs");
    std::fs::create_dir_all(&no_logs).unwrap();
    std::fs::write(no_logs.join("notes.txt"), "hello, world\n").unwrap();
    let major = d.join("major.evt");
    let mut newer = sample.clone();
    newer[10] = 9; // the format's major version, in the fixed part
    std::fs::write(&major, &newer).unwrap();
    let mut report = String::new();
    for (name, path) in [
        ("not a log", not_a_log.clone()),
        ("truncated", truncated),
        ("missing", d.join("missing.evt")),
        // A directory is read as the logs in it (a recording of segments): one without any
        // (its own, not this test's directory, which other tests write logs into) is refused.
        ("a directory", no_logs),
        ("another major", major),
    ] {
        for cmd in ["print", "stats", "check", "schema"] {
            let out = run(&[cmd, path.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(1), "{name} {cmd}");
            let err = stderr(&out);
            assert_eq!(err.lines().count(), 1, "{name} {cmd}: one line: {err}");
            assert!(!err.contains("panicked"), "{err}");
            if cmd == "print" {
                // The header's length depends on the host's name (format 2.0.1 records it).
                let header_len = u32::from_le_bytes(sample[16..20].try_into().unwrap());
                let err = err.replace(&format!("of {header_len} bytes"), "of [header length] bytes");
                report.push_str(&format!("{name}: {}", err.replace(path.to_str().unwrap(), "PATH")));
            }
        }
    }
    insta::assert_snapshot!(report);
    let usage = run(&["print"]);
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn every_subcommand_has_help_with_an_example() {
    for cmd in ["print", "stats", "schema", "check", "follow", "control"] {
        let out = run(&[cmd, "--help"]);
        assert!(out.status.success());
        assert!(stdout(&out).contains("Example"), "{cmd} --help shows an example");
    }
}

/// A monitor's request through the ring file's control page ([`event_dump::send_request`],
/// what `event-dump control` sends) changes the running program's selection and is answered
/// with what it records now; a request that does not read is refused with the reason.
#[test]
fn a_monitor_changes_the_selection_through_the_ring_file() {
    let d = dir();
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let path = d.join("monitor.ring");
    let recording = Recorder::new().ring_file(&path).policy(Policy::Ring).start().unwrap();
    let request = |text: &str| {
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        event_dump::send_request(&file, text, std::time::Duration::from_secs(10)).unwrap()
    };
    assert!(event_runtime::control::is_enabled(events::code::ArenaDestroy));
    assert_eq!(request("-Arena Pool:PoolInit"), (true, "Pool Seg Object Sweep Client Pool:PoolInit".to_owned()));
    assert!(!event_runtime::control::is_enabled(events::code::ArenaDestroy));
    assert!(event_runtime::control::is_enabled(events::code::PoolInit));
    let refused = request("Aren");
    assert!(!refused.0);
    assert!(refused.1.contains("did you mean \"Arena\""), "{}", refused.1);
    drop(recording);
}

/// `follow` attached to a ring whose blocks were overwritten before it started does not call
/// them lost (they were gone before it came, as `tail -f` does not call earlier lines lost):
/// it shows what the file holds, then what comes; `--from-now` shows only what comes.
#[test]
fn follow_of_a_ring_that_wrapped_before_it_loses_nothing_of_its_own() {
    use std::io::BufRead;
    let d = dir();
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let ring = d.join("wrapped.ring");
    let recording = Recorder::new()
        .ring_file(&ring)
        .policy(Policy::Ring)
        .block_size(4096)
        .buffer_size(64 << 10)
        .ring_threads(1)
        .start()
        .unwrap();
    // Far more than the ring holds: its oldest blocks are overwritten before anyone follows.
    for i in 0..20_000u64 {
        event!(ObjectFree, 0x1000usize, 0x2000usize, i);
    }
    let spawn = |extra: &[&str]| {
        let mut child = Command::new(DUMP)
            .args(["follow", ring.to_str().unwrap(), "--kind", "Object", "--interval", "5"])
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Lines as they come, on a thread of their own.
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        (child, rx)
    };
    let (all, all_lines) = spawn(&[]);
    let (now, now_lines) = spawn(&["--from-now"]);
    // Markers until each follower has shown one: then both have made their first poll.
    let marker = 1_000_000u64;
    let mut seen: [Vec<String>; 2] = Default::default();
    let mut marked = [false, false];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !(marked[0] && marked[1]) {
        assert!(std::time::Instant::now() < deadline, "both followers show a marker within a minute");
        event!(ObjectFree, 0x1000usize, 0x2000usize, marker);
        std::thread::sleep(std::time::Duration::from_millis(10));
        for (k, rx) in [&all_lines, &now_lines].into_iter().enumerate() {
            while let Ok(line) = rx.try_recv() {
                marked[k] |= line.ends_with(&format!("size={marker}"));
                seen[k].push(line);
            }
        }
    }
    for i in 0..100u64 {
        event!(ObjectFree, 0x1000usize, 0x2000usize, 2_000_000 + i);
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    recording.stop().unwrap();
    for (k, (child, rx)) in [(all, all_lines), (now, now_lines)].into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "follow ends when the program stops: {}", stderr(&out));
        assert!(!stderr(&out).contains("overwritten"), "nothing lost under the follower: {}", stderr(&out));
        seen[k].extend(rx.iter());
        let sizes: Vec<u64> = seen[k]
            .iter()
            .map(|l| l.rsplit_once("size=").and_then(|(_, n)| n.parse().ok()).expect("an ObjectFree line"))
            .collect();
        let before: Vec<u64> = sizes.iter().copied().filter(|&n| n < marker).collect();
        let after: Vec<u64> = sizes.iter().copied().filter(|&n| n >= 2_000_000).collect();
        assert_eq!(after, (2_000_000..2_000_100).collect::<Vec<_>>(), "what came after, every event in order");
        if k == 0 {
            // The ring's latest events, up to the last recorded before following started.
            assert!(!before.is_empty() && before.len() < 20_000, "{} of the ring's events", before.len());
            assert_eq!(before.last(), Some(&19_999));
            assert!(before.windows(2).all(|w| w[1] == w[0] + 1), "in order, none skipped");
        } else {
            assert!(before.is_empty(), "--from-now: nothing from before it: {before:?}");
        }
    }
}

#[test]
fn follow_and_control_a_running_program() {
    let d = dir();
    let stream_log = sample_log(&d, "not-ring.evt");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let ring = d.join("live.ring");
    let recording = Recorder::new().ring_file(&ring).policy(Policy::Ring).start().unwrap();
    let follower = Command::new(DUMP)
        .args(["follow", ring.to_str().unwrap(), "--kind", "Object", "--interval", "5"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for i in 0..100u64 {
        event!(ObjectFree, 0x1000usize, 0x2000 + i as usize, i);
    }
    // The selection changes through the ring file: Object off, then on again.
    let off = run(&["control", ring.to_str().unwrap(), "--disable", "Object"]);
    assert!(off.status.success(), "{}", stderr(&off));
    assert!(stdout(&off).starts_with("now recording: Arena Pool Seg Sweep Client"), "{}", stdout(&off));
    assert!(!event_runtime::control::is_enabled(events::code::ObjectFree));
    event!(ObjectFree, 0x1000usize, 0xdead_usize, 0u64); // not recorded
    let refused = run(&["control", ring.to_str().unwrap(), "--enable", "Objet"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(stderr(&refused).contains("did you mean \"Object\""), "{}", stderr(&refused));
    let on = run(&["control", ring.to_str().unwrap(), "--enable", "Object"]);
    assert!(on.status.success());
    for i in 100..200u64 {
        event!(ObjectFree, 0x1000usize, 0x2000 + i as usize, i);
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    recording.stop().unwrap();
    let out = follower.wait_with_output().unwrap();
    assert!(out.status.success(), "follow ends when the program stops: {}", stderr(&out));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 200, "every Object event, once: {lines:?}");
    for (i, line) in lines.iter().enumerate() {
        assert!(line.ends_with(&format!("size={i}")), "in order: {line}");
    }
    let not_ring = run(&["control", stream_log.to_str().unwrap(), "--disable", "Object"]);
    assert_eq!(not_ring.status.code(), Some(1));
    assert!(stderr(&not_ring).contains("not a ring file"), "{}", stderr(&not_ring));
}

#[test]
fn several_logs_merge_on_wall_clock_time() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/v1.0.0");
    let (le, be) = (format!("{data}/tour-le.evt"), format!("{data}/tour-be.evt"));
    let one = stdout(&run(&[&le])).lines().count();
    let both = run(&[&le, &be, "--format", "csv"]);
    assert!(both.status.success(), "{}", stderr(&both));
    let lines: Vec<String> = stdout(&both).lines().skip(1).map(str::to_owned).collect();
    assert_eq!(lines.len(), 2 * one, "every event of both logs");
    // Merged on wall-clock time: times never go back, and each thread is named with who
    // wrote its log: these two (format 1.0.0) name no host nor service, and have the same
    // program, pid and header, so the program, the pid and the log's place tell them apart.
    let times: Vec<f64> = lines.iter().map(|l| l.split(',').next().unwrap().parse().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
    for log in 1..=2 {
        let prefix = format!("fixture[31337]@{log}:T");
        assert_eq!(lines.iter().filter(|l| l.split(',').nth(1).unwrap().starts_with(&prefix)).count(), one);
    }
    // The two logs hold the same events, so each line (without its log) comes twice.
    let mut merged: Vec<String> =
        lines.iter().map(|l| l.replacen("fixture[31337]@1:T", "T", 1).replacen("fixture[31337]@2:T", "T", 1)).collect();
    let mut single: Vec<String> =
        stdout(&run(&[&le, "--format", "csv"])).lines().skip(1).flat_map(|l| [l.to_owned(), l.to_owned()]).collect();
    merged.sort();
    single.sort();
    assert_eq!(merged, single);
}

/// A record that breaks the format costs only itself (docs/FORMAT.md, "Delimiting records"):
/// after a `TimeExtend` without its time and an `Every` with a bool of 2, every reader goes
/// on with the block's next record, and all of them count the same events and bad records:
/// `print` (text and JSON), `stats`, `check`, the three exports, and a ring file holding the
/// same block read by `print`, `stats` and `follow`. Both byte orders.
#[test]
fn a_bad_record_costs_only_itself_in_every_reader() {
    use event_format::wire::Order;
    let d = dir();
    let polls = |text: &str| text.lines().filter(|l| l.contains("Trace.Poll") || l.contains("\"Poll\"")).count();
    let bad = |text: &str| text.lines().filter(|l| l.contains("needs an 8-byte time") || l.contains("bool")).count();
    for order in [Order::Little, Order::Big] {
        let log = d.join(format!("bad-records-{order:?}.evt"));
        common::damaged_records_log(&log, order);
        let l = log.to_str().unwrap();
        // Four Polls of thread 1 after the first bad record, one of thread 2.
        let print = run(&["print", l]);
        assert!(print.status.success(), "{}", stderr(&print));
        assert_eq!(polls(&stdout(&print)), 5, "{order:?}: {}", stdout(&print));
        assert_eq!(bad(&stderr(&print)), 2, "{order:?}: {}", stderr(&print));
        let json = run(&["print", l, "--format", "json"]);
        assert_eq!(polls(&stdout(&json)), 5, "{order:?}: {}", stdout(&json));
        let stats = stdout(&run(&["stats", l]));
        assert!(stats.contains("5 events in 2 blocks"), "{order:?}: {stats}");
        assert!(stats.contains("2 bad records"), "{order:?}: {stats}");
        let check = stdout(&run(&["check", l]));
        assert!(check.contains("2 blocks, 5 events"), "{order:?}: {check}");
        assert_eq!(check.lines().filter(|l| l.contains("bad record:")).count(), 2, "{order:?}: {check}");
        for (to, out) in [("chrome", "bad.json"), ("sqlite", "bad.db"), ("ctf", "bad-ctf")] {
            let out = d.join(format!("{order:?}-{out}"));
            let _ = std::fs::remove_file(&out);
            let _ = std::fs::remove_dir_all(&out);
            let export = run(&["export", "--to", to, l, "-o", out.to_str().unwrap()]);
            assert!(export.status.success(), "{to}: {}", stderr(&export));
            assert!(stderr(&export).contains("2 bad records"), "{order:?} {to}: {}", stderr(&export));
            if to == "chrome" {
                let trace = std::fs::read_to_string(&out).unwrap();
                assert_eq!(trace.matches("\"name\":\"Poll\"").count(), 5, "{order:?}: {trace}");
            }
        }
        let ring = d.join(format!("bad-records-{order:?}.ring"));
        common::damaged_records_ring(&ring, order);
        let r = ring.to_str().unwrap();
        let print = run(&["print", r]);
        assert_eq!(polls(&stdout(&print)), 4, "{order:?} ring: {}", stdout(&print));
        assert_eq!(bad(&stderr(&print)), 2, "{order:?} ring: {}", stderr(&print));
        let stats = stdout(&run(&["stats", r]));
        assert!(stats.contains("4 events in 1 blocks") && stats.contains("2 bad records"), "{order:?}: {stats}");
        let follow = run(&["follow", r]);
        assert!(follow.status.success(), "{}", stderr(&follow));
        assert_eq!(polls(&stdout(&follow)), 4, "{order:?} follow: {}", stdout(&follow));
        assert_eq!(bad(&stderr(&follow)), 2, "{order:?} follow: {}", stderr(&follow));
    }
}

/// The lines of `print LOG ARGS...`, which must succeed.
fn printed(log: &str, args: &[&str]) -> Vec<String> {
    let mut all = vec!["print", log];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out).lines().map(str::to_owned).collect()
}

#[test]
fn kind_and_event_take_the_selection_language_and_the_old_spellings() {
    let d = dir();
    let log = sample_log(&d, "spellings.evt");
    let log = log.to_str().unwrap();
    let every = printed(log, &[]);
    let of_kind = |kind: &str| -> Vec<String> {
        every
            .iter()
            .filter(|l| l.split(' ').nth(2).is_some_and(|n| n.starts_with(&format!("{kind}."))))
            .cloned()
            .collect()
    };
    // `Kind.Name` (as lines print it) and `Kind:Name` (as EVENT_CONTROL writes it) agree.
    let old = printed(log, &["--event", "Arena.*,ClientCheck"]);
    assert!(!old.is_empty());
    assert_eq!(printed(log, &["--event", "Arena:*,ClientCheck"]), old);
    assert_eq!(printed(log, &["--event", "Arena.*"]), of_kind("Arena"));
    // A bare word is a kind for --kind, an event for --event; either takes Kind:Event.
    let pools = of_kind("Pool");
    assert!(!pools.is_empty());
    for args in [
        &["--kind", "Pool"][..],
        &["--kind", "Pool:*"],
        &["--event", "Pool:*"],
        &["--event", "Pool.*"],
        &["--kind", "Po?l"],
    ] {
        assert_eq!(printed(log, args), pools, "{args:?}");
    }
    assert_eq!(printed(log, &["--event", "PoolInit"]), pools, "PoolInit is the only Pool event of the log");
    // `-` leaves out; a list that starts with one starts from every event.
    let no_objects: Vec<String> = every.iter().filter(|l| !of_kind("Object").contains(l)).cloned().collect();
    assert!(no_objects.len() < every.len());
    assert_eq!(printed(log, &["--kind", "-Object"]), no_objects);
    assert_eq!(printed(log, &["--event", "-Object:*"]), no_objects);
    assert_eq!(printed(log, &["--kind", "Pool,Object,-Object"]), pools);
    assert_eq!(printed(log, &["--event", "*,-ObjectAlloc"]), no_objects);
    // Built-in events can be named; --kind and --event together keep what both choose.
    assert_eq!(printed(log, &["--kind", "Builtin"]), of_kind("Builtin"));
    assert_eq!(
        printed(log, &["--kind", "Builtin", "--event", "Message"]),
        printed(log, &["--event", "Builtin.Message"])
    );
    assert_eq!(printed(log, &["--kind", "Arena,Pool", "--event", "*Init,*Create"]).len(), pools.len() + 1);
}

#[test]
fn bad_kind_and_event_items_are_one_clear_line() {
    let d = dir();
    let log = sample_log(&d, "bad-spellings.evt");
    let log = log.to_str().unwrap();
    for (args, expected) in [
        (
            &["--kind", "Pool,-"][..],
            "event-dump: --kind Pool,-: \"-\" at column 6 removes nothing; write a kind or an event right after the '-', such as \"-Kind\" or \"-Kind:Event\"\n",
        ),
        (
            &["--event", "Pool:PoolInit:x:y"],
            "event-dump: --event Pool:PoolInit:x:y: \"Pool:PoolInit:x:y\" at column 1 has more than one ':'; write one Kind:Event per item\n",
        ),
        // Three parts are set:Kind:Event (issue 14).
        (
            &["--event", "Pool:PoolInit:x"],
            "event-dump: --event Pool:PoolInit:x: no such set in the log; its sets are event-dump\n",
        ),
        (
            &["--kind", "Arena,-Pol"],
            "event-dump: --kind -Pol: no such kind in the log (did you mean `Pool`?); its kinds are Arena, Pool, Seg, Object, Sweep, Client, Builtin\n",
        ),
        (
            &["--event", "Pool.PoolInt"],
            "event-dump: --event Pool.PoolInt: no such event in the log (did you mean `PoolInit`?)\n",
        ),
        (&["--kind", "Seg:Nope"], "event-dump: --kind Seg:Nope: no such event in the log\n"),
    ] {
        let mut all = vec!["print", log];
        all.extend_from_slice(args);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&out), expected, "{args:?}");
    }
    // What the event set declares is no error, even when the log has none of those events.
    assert!(printed(log, &["--kind", "Seg"]).is_empty());
    assert!(printed(log, &["--event", "Seg:SegSplit"]).is_empty());
}

/// A stream of [`common::HANDMADE_DEF`] in `order` holding `blocks` as they are.
fn handmade_stream(path: &Path, order: event_format::wire::Order, blocks: &[Vec<u8>]) {
    let (schema, _, _) = common::handmade_schema();
    let mut header = event_format::wire::Header::with_sets(
        common::wire_is_own(schema),
        1024,
        common::handmade_clock(),
        common::handmade_producer(),
    );
    header.order = order;
    let mut bytes = header.encode().unwrap();
    for block in blocks {
        bytes.extend_from_slice(block);
    }
    // A stream stopped cleanly (format 2.0.1) ends with its stop marker.
    common::end_with_stop(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

/// A 1 KiB block of `thread`, numbered `sequence`, of `Message` events: (ticks after the
/// start, text).
fn message_block(order: event_format::wire::Order, thread: u64, sequence: u64, messages: &[(u64, &str)]) -> Vec<u8> {
    use event_format::wire::{BlockHeader, BlockWriter, Text, Value};
    let t0 = common::handmade_clock().start_ticks;
    let mut w = BlockWriter::new(order, 1024, &BlockHeader { thread, sequence, base_time: t0, ..Default::default() });
    for (dt, text) in messages {
        w.push(event_format::builtin::MESSAGE, t0 + dt, &[Value::Str(Text::new(text))]).unwrap();
    }
    w.finish()
}

/// The texts of the `Message` events `print ARGS...` shows, in its order.
fn messages(args: &[&str]) -> Vec<String> {
    let mut all = vec!["print"];
    all.extend_from_slice(args);
    let out = run(&all);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .filter_map(|l| l.split_once("text=\""))
        .map(|(_, t)| t.trim_end_matches('"').to_owned())
        .collect()
}

/// docs/FORMAT.md ("Block order"): a repeated or backwards block number is reported like a
/// gap, by `check` (a problem each: the log is not whole) and `stats` (counted), and the
/// blocks are read all the same.
#[test]
fn a_repeated_or_backwards_block_is_reported_by_check_and_stats() {
    use event_format::wire::Order;
    let d = dir();
    for order in [Order::Little, Order::Big] {
        // Thread 1's blocks in stream order 0, 2, 1, 2: no gap; block 1 comes after block 2,
        // and block 2 comes twice.
        let blocks: Vec<Vec<u8>> =
            [0u64, 2, 1, 2].iter().map(|&s| message_block(order, 1, s, &[(s, &format!("block {s}"))])).collect();
        let log = d.join(format!("disorder-{order:?}.evt"));
        handmade_stream(&log, order, &blocks);
        let l = log.to_str().unwrap();
        let check = run(&["check", l]);
        assert_eq!(check.status.code(), Some(1), "{}", stdout(&check));
        let problems: Vec<String> =
            stdout(&check).lines().filter(|l| l.starts_with("  ")).map(|l| l.trim().to_owned()).collect();
        assert_eq!(
            problems,
            [
                "repeat: thread 1: block 2 appears again (its events are read twice)",
                "backwards: thread 1: block 1 comes after block 2",
                "NOT whole: 2 problems",
            ],
            "{order:?}"
        );
        let stats = stdout(&run(&["stats", l]));
        assert!(stats.contains("4 events in 4 blocks"), "{stats}");
        assert!(stats.contains("0 blocks missing"), "{stats}");
        assert!(stats.contains("1 blocks repeated, 1 blocks out of order"), "{stats}");
        assert_eq!(messages(&[l]).len(), 4, "every block is read");
        // In order, none of it.
        let blocks: Vec<Vec<u8>> = (0..3u64).map(|s| message_block(order, 1, s, &[(s, "x")])).collect();
        handmade_stream(&log, order, &blocks);
        assert_eq!(run(&["check", l]).status.code(), Some(0));
        assert!(!stdout(&run(&["stats", l])).contains("repeated"));
    }
}

/// docs/FORMAT.md ("Block order", issue 30's S9): a block comes late when its number is new
/// and lower than the highest of its thread's earlier blocks, not only than the block just
/// before it: of blocks 0, 3, 1, 2, both 1 and 2 come after block 3 (`check` named only 1).
/// What is missing when a block comes is then what is missing at the end less the blocks
/// that came late, which a reader that reports gaps as it goes relies on.
#[test]
fn a_block_is_late_when_a_higher_block_of_its_thread_came_before_it() {
    use event_format::wire::Order;
    let d = dir();
    let order = Order::Little;
    let blocks: Vec<Vec<u8>> =
        [0u64, 3, 1, 2].iter().map(|&s| message_block(order, 1, s, &[(s, &format!("block {s}"))])).collect();
    let log = d.join("late.evt");
    handmade_stream(&log, order, &blocks);
    let l = log.to_str().unwrap();
    let problems: Vec<String> =
        stdout(&run(&["check", l])).lines().filter(|l| l.starts_with("  ")).map(|l| l.trim().to_owned()).collect();
    assert_eq!(
        problems,
        [
            "backwards: thread 1: block 1 comes after block 3",
            "backwards: thread 1: block 2 comes after block 3",
            "NOT whole: 2 problems",
        ]
    );
    let stats = stdout(&run(&["stats", l]));
    assert!(stats.contains("0 blocks missing"), "{stats}");
    assert!(stats.contains("0 blocks repeated, 2 blocks out of order"), "{stats}");
}

/// docs/FORMAT.md ("Merging", issue 30's S10): of two blocks of one thread and one number (a
/// repeated block, here with other records), the records of the one earlier in the stream
/// come first at equal times, in `print` and in the exports that merge. The Chrome export
/// broke the tie by where the merge happened to hold each block.
#[test]
fn a_repeated_blocks_records_come_after_the_first_copys_at_equal_times() {
    use event_format::wire::Order;
    let d = dir();
    let order = Order::Little;
    // Threads 3 and 4 first, whose records the merge hands on (and whose places it frees)
    // before the two copies come: each block starts at its record's time, so that the block
    // index lets the merge write what no later block can precede.
    let block = |thread: u64, at: u64, text: &str| {
        use event_format::wire::{BlockHeader, BlockWriter, Text, Value};
        let t0 = common::handmade_clock().start_ticks;
        let head = BlockHeader { thread, sequence: 0, base_time: t0 + at, ..Default::default() };
        let mut w = BlockWriter::new(order, 1024, &head);
        w.push(event_format::builtin::MESSAGE, t0 + at, &[Value::Str(Text::new(text))]).unwrap();
        w.finish()
    };
    let log = d.join("repeated-ties.evt");
    handmade_stream(
        &log,
        order,
        &[block(3, 0, "three"), block(4, 0, "four"), block(1, 10, "first copy"), block(1, 10, "second copy")],
    );
    let l = log.to_str().unwrap();
    let expected = ["three", "four", "first copy", "second copy"];
    assert_eq!(messages(&[l]), expected);
    let out = d.join("repeated-ties.json");
    let export = run(&["export", "--to", "chrome", l, "-o", out.to_str().unwrap()]);
    assert!(export.status.success(), "{}", stderr(&export));
    let trace = std::fs::read_to_string(&out).unwrap();
    let exported: Vec<&str> = expected.iter().copied().filter(|m| trace.contains(&format!("\"{m}\""))).collect();
    let mut at: Vec<(usize, &str)> = exported.iter().map(|m| (trace.find(&format!("\"{m}\"")).unwrap(), *m)).collect();
    at.sort();
    assert_eq!(at.iter().map(|(_, m)| *m).collect::<Vec<_>>(), expected, "{trace}");
}

/// docs/FORMAT.md ("Merging"): events of equal time come in the order of their log on the
/// command line, then of their thread id, then of their block's sequence number, then of
/// their place in the block; whatever order the blocks have in the stream.
#[test]
fn events_of_equal_time_merge_in_the_stated_order() {
    use event_format::wire::Order;
    let d = dir();
    for order in [Order::Little, Order::Big] {
        let a = d.join(format!("ties-a-{order:?}.evt"));
        handmade_stream(
            &a,
            order,
            &[
                message_block(order, 2, 0, &[(5, "a T2 first"), (5, "a T2 second")]),
                message_block(order, 1, 1, &[(5, "a T1 block 1")]),
                message_block(order, 1, 0, &[(5, "a T1 block 0 first"), (5, "a T1 block 0 second")]),
            ],
        );
        let b = d.join(format!("ties-b-{order:?}.evt"));
        handmade_stream(&b, order, &[message_block(order, 1, 0, &[(5, "b T1")])]);
        let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
        let in_a = ["a T1 block 0 first", "a T1 block 0 second", "a T1 block 1", "a T2 first", "a T2 second"];
        assert_eq!(messages(&[a]), in_a, "{order:?}");
        // Across logs (the same wall-clock time): the first log named first.
        assert_eq!(messages(&[a, b]), [&in_a[..], &["b T1"]].concat(), "{order:?}");
        assert_eq!(messages(&[b, a]), [&["b T1"][..], &in_a[..]].concat(), "{order:?}");
    }
}

/// A string that would reorder the line on a terminal (a right-to-left override, an isolate)
/// is shown escaped, and a string the writer cut is marked in JSON as in text: a sibling
/// `truncated` list, the value still a plain string.
#[test]
fn bidi_controls_are_escaped_and_cut_strings_are_marked() {
    use event_format::wire::{BlockHeader, BlockWriter, Order, Text, Value};
    let d = dir();
    let t0 = common::handmade_clock().start_ticks;
    let mut w = BlockWriter::new(Order::Little, 1024, &BlockHeader { thread: 1, base_time: t0, ..Default::default() });
    let spoof = "user=alice \u{202e}nimda=resu\u{202c} \u{2066}x\u{2069} \u{200f}\u{61c}";
    w.push(event_format::builtin::MESSAGE, t0 + 1, &[Value::Str(Text::new(spoof))]).unwrap();
    let every = [
        Value::Pointer(1),
        Value::Address(2),
        Value::Word(3),
        Value::Unsigned(4),
        Value::Signed(5),
        Value::Double(6.0),
        Value::Bool(true),
        Value::Str(Text { bytes: b"the beginning of a longer st", truncated: true }),
    ];
    w.push(0x0102, t0 + 2, &every).unwrap();
    let log = d.join("bidi-truncated.evt");
    handmade_stream(&log, Order::Little, &[w.finish()]);
    let l = log.to_str().unwrap();
    let text = run(&["print", l]);
    assert!(text.status.success());
    assert!(!stdout(&text).contains('\u{202e}'), "no raw override");
    insta::assert_snapshot!("print_bidi_and_truncated_text", stdout(&text));
    let json = run(&["print", l, "--format", "json"]);
    assert!(json.status.success());
    insta::assert_snapshot!("print_bidi_and_truncated_json", stdout(&json));
    let lines: Vec<serde_json::Value> =
        stdout(&json).lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect();
    assert_eq!(lines[0]["args"]["text"], spoof, "the same string to a JSON reader");
    assert!(lines[0].get("truncated").is_none(), "a whole string is not marked");
    assert_eq!(lines[1]["args"]["s"], "the beginning of a longer st");
    assert_eq!(lines[1]["truncated"], serde_json::json!(["s"]));
    insta::assert_snapshot!("print_bidi_and_truncated_csv", stdout(&run(&["print", l, "--format", "csv"])));
}

/// docs/FORMAT.md ("Reading a ring file as a stream"): a ring file's thread-0 block of
/// `Dropped` events exists only when a slot refused events or page 0 counts lost ones, and
/// holds `Dropped(owner, refused)` for each slot that refused some, then `Dropped(0, lost)`
/// only when `lost` is not 0.
#[test]
fn a_ring_file_reports_only_the_losses_it_has() {
    use event_format::wire::Order;
    let d = dir();
    for order in [Order::Little, Order::Big] {
        let sealed = message_block(order, 1, 0, &[(1, "one")]);
        let current = message_block(order, 1, 1, &[(2, "two")]);
        for (refused, lost, expected) in [
            (0, 0, &[][..]),
            (3, 0, &["thread=1 count=3"][..]),
            (0, 5, &["thread=0 count=5"][..]),
            (3, 5, &["thread=1 count=3", "thread=0 count=5"][..]),
        ] {
            let ring = d.join(format!("losses-{order:?}-{refused}-{lost}.ring"));
            common::handmade_ring(&ring, order, &[&sealed, &current], refused, lost);
            let r = ring.to_str().unwrap();
            let dropped: Vec<String> = printed(r, &["--event", "Dropped"])
                .iter()
                .map(|l| l.split_once("Builtin.Dropped ").expect(l).1.to_owned())
                .collect();
            assert_eq!(dropped, expected, "{order:?} refused {refused} lost {lost}");
            let blocks = if expected.is_empty() { 2 } else { 3 };
            let stats = stdout(&run(&["stats", r]));
            assert!(stats.contains(&format!("{} events in {blocks} blocks", 2 + expected.len())), "{stats}");
        }
    }
}

/// docs/FORMAT.md ("Packed blocks", "Reading a slot"): a ring file's blocks are never packed;
/// a reader reports a block with the PACKED flag as damaged and leaves it out, and the
/// other blocks of the slot are read.
#[test]
fn a_packed_block_in_a_ring_file_is_damage() {
    use event_format::raw::pack_block;
    use event_format::wire::Order;
    let d = dir();
    for order in [Order::Little, Order::Big] {
        let words: Vec<(u64, String)> = (0..20).map(|i| (i, "the same text again".to_owned())).collect();
        let words: Vec<(u64, &str)> = words.iter().map(|(i, s)| (*i, s.as_str())).collect();
        let whole = message_block(order, 1, 0, &words);
        let mut packed = Vec::new();
        assert!(pack_block(order, &whole, &mut packed), "worth packing");
        packed.resize(1024, 0);
        let current = message_block(order, 1, 1, &[(30, "after")]);
        let ring = d.join(format!("packed-{order:?}.ring"));
        common::handmade_ring(&ring, order, &[&packed, &current], 0, 0);
        let r = ring.to_str().unwrap();
        assert_eq!(messages(&[r]), ["after"], "{order:?}: the packed block is left out");
        let check = run(&["check", r]);
        assert_eq!(check.status.code(), Some(1));
        assert!(
            stdout(&check).contains("damaged: slot 0, block 0: a packed block in a ring file"),
            "{order:?}: {}",
            stdout(&check)
        );
        assert!(stdout(&run(&["stats", r])).contains("1 damaged blocks"), "{order:?}");
    }
}

/// docs/FORMAT.md ("Reading a slot", issue 30's S13): a sealed block of a ring file is the
/// block its slot holds at that place, sequence and thread, or it is damage: a block whose CRC
/// holds but that says it is another number (a stale copy) or another thread's was read as
/// that block, with its events.
#[test]
fn a_sealed_ring_block_of_another_number_or_thread_is_damage() {
    use event_format::wire::Order;
    let d = dir();
    for order in [Order::Little, Order::Big] {
        for (thread, sequence) in [(1, 5), (2, 0)] {
            let stale = message_block(order, thread, sequence, &[(1, "stale")]);
            let current = message_block(order, 1, 1, &[(2, "two")]);
            let ring = d.join(format!("misplaced-{order:?}-{thread}-{sequence}.ring"));
            common::handmade_ring(&ring, order, &[&stale, &current], 0, 0);
            let r = ring.to_str().unwrap();
            assert_eq!(messages(&[r]), ["two"], "{order:?}: the misplaced block is left out");
            let check = stdout(&run(&["check", r]));
            let says = format!(
                "damaged: slot 0, block 0: the block says it is block {sequence} of thread {thread}, \
                 where its slot holds block 0 of thread 1"
            );
            assert!(check.contains(&says), "{order:?}: {check}");
        }
    }
}

/// The checked-in streams of tests/data/damaged/ (both byte orders): one block of thread 1
/// with a `TimeExtend` too short to hold its time and a `B` byte of 2 between good records
/// (`common::damaged_records_log`), then a block of thread 2. A second implementation reads
/// them to the same five events and two bad records. Written again by
/// `UPDATE_FIXTURES=1 cargo test -p event-dump --test cli checked_in_damaged`.
#[test]
fn checked_in_damaged_record_streams_read_to_the_same_events() {
    use event_format::wire::Order;
    let d = dir();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/damaged");
    let mut texts = Vec::new();
    for (order, name) in [(Order::Little, "bad-records-le.evt"), (Order::Big, "bad-records-be.evt")] {
        let made = d.join(name);
        common::damaged_records_log(&made, order);
        let path = data.join(name);
        if std::env::var_os("UPDATE_FIXTURES").is_some() {
            std::fs::create_dir_all(&data).unwrap();
            std::fs::copy(&made, &path).unwrap();
        }
        assert_eq!(std::fs::read(&path).unwrap(), std::fs::read(&made).unwrap(), "{name} is what the test makes");
        let p = path.to_str().unwrap();
        let print = run(&["print", p]);
        assert!(print.status.success());
        let check = run(&["check", p]);
        assert_eq!(check.status.code(), Some(1));
        // Every reader counts the same five events.
        assert_eq!(stdout(&run(&["print", p, "--format", "json"])).lines().count(), 5, "{name}");
        assert_eq!(stdout(&run(&["print", p, "--format", "csv"])).lines().count(), 1 + 5, "{name}");
        assert!(stdout(&run(&["stats", p])).contains("5 events in 2 blocks"), "{name}");
        let out = d.join(format!("{name}.db"));
        let _ = std::fs::remove_file(&out);
        let sqlite = run(&["export", "--to", "sqlite", p, "-o", out.to_str().unwrap()]);
        assert!(stdout(&sqlite).contains(": 5 events as log 1"), "{name}: {}", stdout(&sqlite));
        let out = d.join(format!("{name}.json"));
        assert!(run(&["export", "--to", "chrome", p, "-o", out.to_str().unwrap()]).status.success());
        let trace = std::fs::read_to_string(&out).unwrap();
        assert_eq!(trace.matches("\"name\":\"Poll\"").count(), 5, "{name}");
        texts.push(format!(
            "$ event-dump print LOG\n{}$ event-dump print LOG (stderr)\n{}$ event-dump check LOG\n{}",
            stdout(&print),
            stderr(&print).replace(p, "LOG"),
            stdout(&check).replace(p, "LOG")
        ));
    }
    assert_eq!(texts[0], texts[1], "both byte orders read the same");
    insta::assert_snapshot!("damaged_records_fixture", texts[0]);
}

// Issue 21: the CLI's habits. Mistyped subcommands, CSV with a column per parameter, the
// selection in `stats`, threads by name, `control` without changes and on a dead program,
// `--color`, completions and a complete `--help`.

/// `event-dump ARGS...` run in `dir`.
fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(DUMP).args(args).current_dir(dir).output().unwrap()
}

#[test]
fn a_mistyped_subcommand_gets_did_you_mean_and_a_log_still_prints() {
    let d = dir();
    let log = sample_log(&d, "typo.evt");
    let l = log.to_str().unwrap();
    let d = d.join("typo-cwd");
    std::fs::create_dir_all(&d).unwrap();
    for (args, expected) in [
        (&["stast", l][..], "event-dump: unknown subcommand `stast`; did you mean `stats`?\n"),
        (
            &["exprot", "--to", "chrome", l, "-o", "x.json"],
            "event-dump: unknown subcommand `exprot`; did you mean `export`?\n",
        ),
        (&["chek", l], "event-dump: unknown subcommand `chek`; did you mean `check`?\n"),
    ] {
        let out = run_in(&d, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&out), expected, "{args:?}: one line");
        assert!(out.stdout.is_empty());
    }
    // A file of that name is a log, as `event-dump LOG` reads it.
    std::fs::copy(&log, d.join("stast")).unwrap();
    let out = run_in(&d, &["stast"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), stdout(&run(&[l])));
    // A word far from every subcommand is a log that is not there, as before.
    let out = run_in(&d, &["trace.evt"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "event-dump: trace.evt: cannot open: no such file\n");
}

/// The fields of one CSV row (RFC 4180: quoted fields, `""` inside them).
fn csv_fields(row: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let (mut quoted, mut chars) = (false, row.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', false) => quoted = true,
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().unwrap().push('"');
            }
            ('"', true) => quoted = false,
            (',', false) => fields.push(String::new()),
            (c, _) => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

/// docs/OUTPUT.md, "CSV": one row per event, a column per parameter name (the union over the
/// event types selected, `arg.NAME` for a name of a fixed column), each cell the value alone;
/// every row has the header's columns, and holds what the JSON line of the same event holds.
#[test]
fn csv_has_a_column_per_parameter() {
    let d = dir();
    let log = sample_log(&d, "csv-columns.evt");
    let l = log.to_str().unwrap();
    insta::assert_snapshot!(
        "csv_one_event_type",
        stdout(&run(&["print", l, "--format", "csv", "--event", "SweepReclaim,ClientCheck"]))
    );
    for select in [&[][..], &["--kind", "Pool,Object"], &["--event", "ObjectAlloc"]] {
        let mut args = vec!["print", l, "--format", "csv"];
        args.extend_from_slice(select);
        let csv = stdout(&run(&args));
        args[3] = "json";
        let json = stdout(&run(&args));
        let mut rows = csv.lines();
        let header = csv_fields(rows.next().unwrap());
        assert_eq!(header[..4], ["time", "thread", "kind", "event"], "{select:?}");
        assert_eq!(header[header.len() - 2..], ["labels", "truncated"], "{select:?}");
        let lines: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let rows: Vec<Vec<String>> = rows.map(csv_fields).collect();
        assert_eq!(rows.len(), lines.len(), "{select:?}: one row per event");
        for (row, line) in rows.iter().zip(&lines) {
            assert_eq!(row.len(), header.len(), "{select:?}: {row:?}");
            assert_eq!(row[3], line["event"].as_str().unwrap());
            let args = line["args"].as_object().unwrap();
            for (column, cell) in header.iter().zip(row).skip(4).take(header.len() - 6) {
                let name = column.strip_prefix("arg.").unwrap_or(column);
                let expected = match args.get(name) {
                    None => String::new(),
                    Some(serde_json::Value::String(s)) => s.replace('\\', "\\\\").replace('\n', "\\n"),
                    Some(v) => v.to_string(),
                };
                assert_eq!(cell, &expected, "{select:?}: column {column} of {row:?}");
            }
            let labels = row[header.len() - 2].clone();
            match line.get("labels").and_then(|l| l.as_object()) {
                None => assert_eq!(labels, "", "{row:?}"),
                Some(map) => {
                    let written: Vec<String> = map.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    assert_eq!(labels, written.join(" "), "{row:?}");
                }
            }
        }
    }
    // One event type: its parameters are the columns, and nothing else.
    let header = stdout(&run(&["print", l, "--format", "csv", "--event", "ObjectAlloc"]));
    assert_eq!(header.lines().next().unwrap(), "time,thread,kind,event,pool,addr,size,class,labels,truncated");
    // A parameter named as a fixed column gets `arg.`: the built-in Dropped's `thread`.
    let drops = dropping_log(&d);
    let dropped = stdout(&run(&["print", drops.to_str().unwrap(), "--format", "csv", "--event", "Dropped"]));
    assert_eq!(dropped.lines().next().unwrap(), "time,thread,kind,event,arg.thread,count,labels,truncated");
}

/// `stats` takes `print`'s selection: its counts are of the events `print` would show.
#[test]
fn stats_takes_the_selection_of_print() {
    let d = dir();
    let log = sample_log(&d, "stats-select.evt");
    let l = log.to_str().unwrap();
    let select = ["--kind", "Pool,Object", "--thread", "worker-1", "--filter", "size >= 128 || name == \"PoolInit\""];
    let mut args = vec!["stats", l];
    args.extend_from_slice(&select);
    let stats = run(&args);
    assert!(stats.status.success(), "{}", stderr(&stats));
    let text = clean(&stdout(&stats), l);
    insta::assert_snapshot!("stats_selected", text);
    let shown = printed(l, &select).len();
    assert!(shown > 0);
    assert!(text.contains(&format!("selected: {shown} of these events")), "{text}");
    let per_thread: u64 = text
        .lines()
        .skip_while(|l| !l.starts_with("  per thread:"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
        .sum();
    assert_eq!(per_thread, shown as u64, "{text}");
    // Without a selection, stats are what they were.
    assert!(!stdout(&run(&["stats", l])).contains("selected:"));
    for option in [&["--since", "0.00000005"][..], &["--until", "0.00000001"], &["--event", "ArenaPoll"]] {
        let mut args = vec!["stats", l];
        args.extend_from_slice(option);
        let out = run(&args);
        assert!(out.status.success(), "{option:?}: {}", stderr(&out));
        let n = printed(l, option).len();
        assert!(stdout(&out).contains(&format!("selected: {n} of these events")), "{option:?}: {}", stdout(&out));
    }
}

/// A log whose threads 1 and 2 are both named `twin` and thread 3 `compactor` (the test's
/// own thread records nothing), in the test's directory `d`.
fn twins_log(d: &Path) -> PathBuf {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let path = d.join("twins.evt");
    let recording = Recorder::new().file(&path).deterministic_clock().start().unwrap();
    for name in ["twin", "twin", "compactor"] {
        std::thread::Builder::new().name(name.to_owned()).spawn(|| event!(ClientMark)).unwrap().join().unwrap();
    }
    recording.stop().unwrap();
    path
}

/// `--thread` takes names as `stats` shows them, `T3` and `3`, in `print`, `stats` and
/// `follow`; a name two threads share chooses both (tokio names its workers alike), a glob
/// every thread it matches; a name or glob no thread has is an error that lists them.
#[test]
fn threads_by_name_or_number() {
    let d = dir();
    let log = sample_log(&d, "thread-names.evt");
    let l = log.to_str().unwrap();
    let by_number = printed(l, &["--thread", "3"]);
    assert!(!by_number.is_empty());
    assert!(by_number.iter().all(|line| line.split(' ').nth(1) == Some("T3")), "{by_number:?}");
    assert_eq!(printed(l, &["--thread", "T3"]), by_number);
    assert_eq!(printed(l, &["--thread", "worker-1"]), by_number);
    let both = printed(l, &["--thread", "worker-0,3"]);
    assert_eq!(both.len(), by_number.len() + printed(l, &["--thread", "2"]).len());
    let stats = stdout(&run(&["stats", l, "--thread", "worker-1"]));
    assert!(stats.contains("T3 (worker-1)") && !stats.contains("T2 (worker-0)"), "{stats}");
    let twins = twins_log(&d);
    let t = twins.to_str().unwrap();
    assert_eq!(printed(t, &["--thread", "compactor", "--event", "ClientMark"]).len(), 1);
    let twin = printed(t, &["--thread", "twin", "--event", "ClientMark"]);
    assert_eq!(twin.len(), 2, "{twin:?}");
    assert_eq!(twin, printed(t, &["--thread", "1,2", "--event", "ClientMark"]));
    assert_eq!(printed(t, &["--thread", "*", "--event", "ClientMark"]).len(), 3);
    assert_eq!(printed(t, &["--thread", "t?in,comp*", "--event", "ClientMark"]).len(), 3);
    let stats = stdout(&run(&["stats", t, "--thread", "tw*"]));
    assert!(stats.contains("T1 (twin)") && stats.contains("T2 (twin)") && !stats.contains("compactor"), "{stats}");
    let mut errors = String::new();
    for (cmd, name) in [("print", "nobody"), ("stats", "nob*")] {
        let out = run(&[cmd, t, "--thread", name]);
        assert_eq!(out.status.code(), Some(1), "{cmd} {name}");
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        errors.push_str(&format!("$ event-dump {cmd} LOG --thread {name}\n{}", stderr(&out)));
    }
    let program = std::env::current_exe().unwrap().file_stem().unwrap().to_string_lossy().into_owned();
    insta::assert_snapshot!("thread_names_errors", errors.replace(&program, "[program]"));
}

/// `control RING` without changes prints the program's selection and changes nothing; on a
/// ring file whose program died (state still "recording"), `control` says so at once.
#[test]
fn control_without_changes_shows_the_selection_and_a_dead_program_is_known_at_once() {
    use std::time::{Duration, Instant};
    let d = dir();
    let ring = d.join("show.ring");
    {
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let recording = Recorder::new().ring_file(&ring).policy(Policy::Ring).start().unwrap();
        let r = ring.to_str().unwrap();
        let show = run(&["control", r]);
        assert!(show.status.success(), "{}", stderr(&show));
        assert_eq!(stdout(&show), "recording: all\n");
        let off = run(&["control", r, "--disable", "Object,Seg:SegSplit"]);
        assert!(off.status.success(), "{}", stderr(&off));
        let show = run(&["control", r]);
        assert_eq!(stdout(&show), "recording: Arena Pool Seg Sweep Client -Seg:SegSplit\n");
        assert!(!event_runtime::control::is_enabled(events::code::ObjectFree), "unchanged by reading");
        recording.stop().unwrap();
        let closed = run(&["control", r]);
        assert_eq!(closed.status.code(), Some(1));
        assert!(stderr(&closed).contains("not recording any more"), "{}", stderr(&closed));
    }
    // A ring file left "recording" by a process that is gone.
    let mut child = Command::new(DUMP).arg("--version").stdout(std::process::Stdio::null()).spawn().unwrap();
    let gone = u64::from(child.id());
    child.wait().unwrap();
    let dead = d.join("dead.ring");
    dead_ring(&dead, gone);
    let began = Instant::now();
    let out = run(&["control", dead.to_str().unwrap(), "--disable", "Object"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(began.elapsed() < Duration::from_secs(2), "at once, not after --timeout's 5 s");
    assert_eq!(
        stderr(&out).replace(dead.to_str().unwrap(), "RING").replace(&gone.to_string(), "PID"),
        "event-dump: RING: its program (pid PID) is not running any more: it ended without closing the file; `event-dump` reads what it recorded\n"
    );
    assert_eq!(run(&["control", dead.to_str().unwrap()]).status.code(), Some(1));
    // A live writer that does not answer (this test holds the file's lock, as a recorder
    // does, and runs no writer for it) is waited for until the timeout.
    let silent = d.join("silent.ring");
    dead_ring(&silent, u64::from(std::process::id()));
    let held = std::fs::File::open(&silent).unwrap();
    held.lock().unwrap();
    let out = run(&["control", silent.to_str().unwrap(), "--timeout", "300"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("did not answer within 300 ms; is it still running?"), "{}", stderr(&out));
}

/// A ring file as [`handmade_ring`] makes it, but still "recording", by process `pid`.
fn dead_ring(path: &Path, pid: u64) {
    use event_format::raw;
    use event_format::ring::{self, Layout};
    use event_format::wire::{Header, Order};
    let order = Order::Little;
    let sealed = message_block(order, 1, 0, &[(1, "one")]);
    let current = message_block(order, 1, 1, &[(2, "two")]);
    common::handmade_ring(path, order, &[&sealed, &current], 0, 0);
    let (schema, _, _) = common::handmade_schema();
    let header = Header::new(schema, 1024, common::handmade_clock(), common::handmade_producer()).encode().unwrap();
    let layout = Layout {
        order,
        version: event_format::schema::Version::new(1, 0, 2),
        block_size: 1024,
        slots: 1,
        blocks_per_slot: 2,
        header_len: header.len() as u32,
        pid,
        created_ns: 0,
        pin_half: 0,
    };
    let mut file = std::fs::read(path).unwrap();
    file[..raw::at::CRC + 4].copy_from_slice(&layout.encode());
    order.put_u32(&mut file[raw::at::STATE..], ring::STATE_RECORDING);
    std::fs::write(path, file).unwrap();
}

/// One rule says whether a ring file's writer still runs, for `check`, `stats`, `follow` and
/// `control` alike (`event_format::log::liveness`): the lock its recorder holds, whatever its
/// heartbeat and its pid say. `check` once took a fresh heartbeat and a live pid for a live
/// writer (a pid reused by another program, a writer killed a moment ago) and `follow` a live
/// pid alone; a writer that holds its lock while its heartbeat stalls (stopped, or hung) was
/// "killed" to `check`.
#[test]
fn a_ring_files_writer_runs_while_it_holds_its_lock_whatever_its_heartbeat() {
    use std::time::{Duration, Instant};
    let d = dir();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let this = u64::from(std::process::id());
    // Its heartbeat fresh and its pid alive (this test's), its lock free: gone.
    let free = d.join("free.ring");
    dead_ring(&free, this);
    let mut bytes = std::fs::read(&free).unwrap();
    event_format::wire::Order::Little.put_u64(&mut bytes[event_format::raw::at::HEARTBEAT_NS..], now);
    std::fs::write(&free, bytes).unwrap();
    let f = free.to_str().unwrap();
    let check = run(&["check", f]);
    assert_eq!(check.status.code(), Some(1), "{}", stdout(&check));
    assert!(stdout(&check).contains("not stopped cleanly (killed or aborted)"), "{}", stdout(&check));
    assert!(stdout(&run(&["stats", f])).contains("not stopped cleanly (killed or aborted)"));
    assert!(stderr(&run(&["control", f])).contains("is not running any more"));
    let began = Instant::now();
    let follow = run(&["follow", f]);
    assert!(began.elapsed() < Duration::from_secs(10), "follow ends at once");
    assert_eq!(stdout(&follow).lines().count(), 2, "what it holds: {}", stdout(&follow));
    assert!(stderr(&follow).contains("ended without closing its ring file"), "{}", stderr(&follow));

    // Its heartbeat stale (0) and its lock held: running.
    let held = d.join("held.ring");
    dead_ring(&held, this);
    let h = held.to_str().unwrap();
    let lock = std::fs::File::open(&held).unwrap();
    lock.lock().unwrap();
    let check = run(&["check", h]);
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));
    assert!(stdout(&check).contains("still recording: its writer is alive"), "{}", stdout(&check));
    assert!(stdout(&run(&["stats", h])).contains("still recording: its writer is alive"));
    // `follow` goes on while the lock is held, and ends once it is free.
    let mut follow = Command::new(DUMP)
        .args(["follow", h, "--interval", "20"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(follow.try_wait().unwrap().is_none(), "still following");
    drop(lock);
    let deadline = Instant::now() + Duration::from_secs(10);
    while follow.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let Some(status) = follow.try_wait().unwrap() else {
        follow.kill().unwrap();
        panic!("follow did not end once the lock was free");
    };
    assert!(status.success());
    let mut said = String::new();
    std::io::Read::read_to_string(follow.stderr.as_mut().unwrap(), &mut said).unwrap();
    assert!(said.contains("ended without closing its ring file"), "{said}");
}

/// `--color`: `always` colors thread ids and event names of the text format (and only of
/// the text format); `never`, and the default into a pipe, write the plain bytes.
#[test]
fn color_always_never_and_auto() {
    let d = dir();
    let log = sample_log(&d, "color.evt");
    let l = log.to_str().unwrap();
    let plain = run(&[l]);
    assert!(!plain.stdout.contains(&0x1b), "no color into a pipe by default");
    assert_eq!(run(&[l, "--color", "never"]).stdout, plain.stdout);
    assert_eq!(run(&["print", l, "--color=never"]).stdout, plain.stdout);
    let colored = stdout(&run(&["--color", "always", l]));
    assert!(colored.contains("\x1b[35mT1\x1b[0m \x1b[36mArena.ArenaCreate\x1b[0m"), "{colored}");
    let strip = |s: &str| s.replace("\x1b[35m", "").replace("\x1b[36m", "").replace("\x1b[0m", "");
    assert_eq!(strip(&colored), stdout(&plain), "only escapes are added");
    for format in ["json", "csv"] {
        let out = run(&["print", l, "--format", format, "--color", "always"]);
        assert!(!out.stdout.contains(&0x1b), "{format} is never colored");
    }
    let stats = stdout(&run(&["stats", l, "--color", "always"]));
    assert!(stats.contains("\x1b[36mObject.ObjectAlloc\x1b[0m"), "{stats}");
    assert_eq!(strip(&stats), stdout(&run(&["stats", l])));
    // NO_COLOR turns off `auto` (even on a terminal; here, a pipe), not `always`.
    let no_color = Command::new(DUMP).args([l, "--color", "always"]).env("NO_COLOR", "1").output().unwrap();
    assert!(no_color.stdout.contains(&0x1b));
    let bad = run(&[l, "--color", "sometimes"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `completions SHELL` prints clap_complete's script, which names every subcommand.
#[test]
fn shell_completions() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        for cmd in ["print", "stats", "export", "control", "completions"] {
            assert!(script.contains(cmd), "{shell} completes {cmd}");
        }
    }
    assert!(stdout(&run(&["completions", "bash"])).contains("--color"));
    assert_eq!(run(&["completions", "tcsh"]).status.code(), Some(2));
}

/// The top-level `--help` lists every subcommand, one line each, and its summary names them.
#[test]
fn top_level_help_lists_every_subcommand() {
    let help = stdout(&run(&["--help"]));
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        commands,
        [
            "print",
            "stats",
            "schema",
            "check",
            "follow",
            "top",
            "export",
            "latency",
            "summary",
            "hist",
            "ship",
            "control",
            "completions",
            "help"
        ],
        "{help}"
    );
    let summary = help.lines().next().unwrap();
    for cmd in [
        "print",
        "stats",
        "schema",
        "check",
        "follow",
        "top",
        "export",
        "latency",
        "summary",
        "hist",
        "ship",
        "control",
        "completions",
    ] {
        assert!(summary.contains(cmd), "the summary names {cmd}: {summary}");
    }
    for cmd in ["export", "latency", "completions", "top", "summary", "ship"] {
        assert!(stdout(&run(&[cmd, "--help"])).contains("Example"), "{cmd} --help shows an example");
    }
}

/// `--version` names the commit event-dump was built from (the checkout's, here) and the
/// stream formats and ring file layouts it reads; `-V` the version and the commit alone.
#[test]
fn version_names_the_commit_and_what_it_reads() {
    use event_format::ring::RING_VERSION;
    use event_format::wire::{FORMAT_VERSION, LAST_V1};
    let long = stdout(&run(&["--version"]));
    let lines: Vec<&str> = long.lines().collect();
    assert_eq!(lines.len(), 3, "{long}");
    let first = format!("event-dump {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(lines[0].starts_with(&first), "{long}");
    let head =
        std::process::Command::new("git").args(["rev-parse", "HEAD"]).output().ok().filter(|o| o.status.success());
    if let Some(head) = head {
        let head = String::from_utf8_lossy(&head.stdout);
        assert_eq!(lines[0], format!("{first}{})", &head.trim()[..12]), "the checkout's commit");
    }
    assert_eq!(
        lines[1],
        format!(
            "reads stream formats {}.0 to {}.{} and {}.0 to {}.{} (newer minors too; a newer median with --force)",
            LAST_V1.major,
            LAST_V1.major,
            LAST_V1.median,
            FORMAT_VERSION.major,
            FORMAT_VERSION.major,
            FORMAT_VERSION.median
        )
    );
    assert!(
        lines[2].starts_with(&format!(
            "reads ring file layouts {}.0 to {}.{} ",
            RING_VERSION.major, RING_VERSION.major, RING_VERSION.median
        )),
        "{long}"
    );
    assert_eq!(stdout(&run(&["-V"])).trim(), lines[0]);
}
