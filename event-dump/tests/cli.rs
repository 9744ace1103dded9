//! event-dump as a user runs it, on logs this test records with the deterministic clock:
//! every subcommand's output (insta snapshots), labels, interned strings, drops, a damaged
//! block, the checked-in logs of both byte orders, follow and control on a live ring file,
//! and the one-line errors.

event_runtime::include_events!("../events.def");

mod common;

use common::{DUMP, SERIAL, run, stderr, stdout};
use event_runtime::{Policy, Recorder};
use std::path::PathBuf;
use std::process::Command;

fn dir() -> PathBuf {
    common::dir("cli")
}

/// stdout, with what differs from run to run replaced: the log's path, the producer's pid
/// and program name (this test binary's, which has a hash in it).
fn clean(text: &str, log: &str) -> String {
    let pid = std::process::id().to_string();
    let program = std::env::current_exe().unwrap().file_stem().unwrap().to_string_lossy().into_owned();
    text.replace(log, "LOG").replace(&program, "[program]").replace(&pid, "[pid]")
}

/// [`common::two_workers_log`] in this test's directory.
fn sample_log(name: &str) -> PathBuf {
    let path = dir().join(name);
    common::two_workers_log(&path);
    path
}

/// [`common::whole_block_dropping_log`] in this test's directory.
fn dropping_log() -> PathBuf {
    let path = dir().join("drops.evt");
    common::whole_block_dropping_log(&path);
    path
}

#[test]
fn print_text_json_csv() {
    let log = sample_log("print.evt");
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

#[test]
fn print_selects() {
    let log = sample_log("select.evt");
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
    let log = sample_log("bad-select.evt");
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
    let log = sample_log("stats.evt");
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
    let log = dropping_log();
    let log = log.to_str().unwrap();
    insta::assert_snapshot!("stats_drops", clean(&stdout(&run(&["stats", log])), log));
    let check = run(&["check", log]);
    assert_eq!(check.status.code(), Some(1), "drops make a log not whole");
    insta::assert_snapshot!("check_drops", clean(&stdout(&check), log));
    insta::assert_snapshot!("print_drops", stdout(&run(&["print", log, "--event", "Dropped"])));
}

#[test]
fn a_damaged_block_costs_only_itself() {
    let log = sample_log("damaged.evt");
    let mut bytes = std::fs::read(&log).unwrap();
    let header_len = event_format::decode::Decoder::new(&bytes[..]).unwrap().header_len() as usize;
    bytes[header_len + 1024 + 100] ^= 0x40; // a byte of a block in the middle (blocks are packed)
    let damaged = dir().join("damaged-flipped.evt");
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
    let log = sample_log("schema.evt");
    let log = log.to_str().unwrap();
    let schema = run(&["schema", log]);
    assert!(schema.status.success());
    let def = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../events.def")).unwrap();
    let parsed = event_format::def::parse(&def, "events.def").unwrap();
    assert_eq!(event_format::def::parse(&stdout(&schema), "dumped").unwrap(), parsed, "the dump is the relation");
    let same = run(&["schema", log, "--against", concat!(env!("CARGO_MANIFEST_DIR"), "/../events.def")]);
    assert_eq!(same.status.code(), Some(0));
    insta::assert_snapshot!("schema_against_same", stdout(&same));
    let changed = dir().join("changed.def");
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
    let sample = std::fs::read(sample_log("to-truncate.evt")).unwrap();
    std::fs::write(&truncated, &sample[..40]).unwrap();
    let major = d.join("major.evt");
    let mut newer = sample.clone();
    newer[10] = 9; // the format's major version, in the fixed part
    std::fs::write(&major, &newer).unwrap();
    let mut report = String::new();
    for (name, path) in [
        ("not a log", not_a_log.clone()),
        ("truncated", truncated),
        ("missing", d.join("missing.evt")),
        ("a directory", d.clone()),
        ("another major", major),
    ] {
        for cmd in ["print", "stats", "check", "schema"] {
            let out = run(&[cmd, path.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(1), "{name} {cmd}");
            let err = stderr(&out);
            assert_eq!(err.lines().count(), 1, "{name} {cmd}: one line: {err}");
            assert!(!err.contains("panicked"), "{err}");
            if cmd == "print" {
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

#[test]
fn follow_and_control_a_running_program() {
    let stream_log = sample_log("not-ring.evt");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let ring = dir().join("live.ring");
    let recording = Recorder::new(&events::SET).ring_file(&ring).policy(Policy::Ring).start().unwrap();
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
    // Merged on wall-clock time: times never go back, and each thread is named with its
    // producer's pid.
    let times: Vec<f64> = lines.iter().map(|l| l.split(',').next().unwrap().parse().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
    assert!(lines.iter().all(|l| l.split(',').nth(1).unwrap().contains(":T")), "pid:thread");
    // The two logs hold the same events, so each line (without its log) comes twice.
    let mut merged: Vec<String> = lines.iter().map(|l| l.replacen(":T", "T", 1)).collect();
    let mut single: Vec<String> = stdout(&run(&[&le, "--format", "csv"]))
        .lines()
        .skip(1)
        .flat_map(|l| {
            let pid_line = l.replacen(",T", ",31337T", 1);
            [pid_line.clone(), pid_line]
        })
        .collect();
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
    let polls = |text: &str| text.lines().filter(|l| l.contains("Trace.Poll") || l.contains("\"Poll\"")).count();
    let bad = |text: &str| text.lines().filter(|l| l.contains("needs an 8-byte time") || l.contains("bool")).count();
    for order in [Order::Little, Order::Big] {
        let d = dir();
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
    let log = sample_log("spellings.evt");
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
    let log = sample_log("bad-spellings.evt");
    let log = log.to_str().unwrap();
    for (args, expected) in [
        (
            &["--kind", "Pool,-"][..],
            "event-dump: --kind Pool,-: \"-\" at column 6 removes nothing; write a kind or an event right after the '-', such as \"-Kind\" or \"-Kind:Event\"\n",
        ),
        (
            &["--event", "Pool:PoolInit:x"],
            "event-dump: --event Pool:PoolInit:x: \"Pool:PoolInit:x\" at column 1 has more than one ':'; write one Kind:Event per item\n",
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
