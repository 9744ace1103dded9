//! `export --to ctf` as a user runs it: babeltrace2 reads the trace, and its default text
//! output (with `--clock-seconds`) shows every event of `print --format json`, in order,
//! with the same name, thread, field values and time, in both byte orders; packets stay
//! bounded; what cannot be exported is reported; the output directory is checked.
//!
//! Without babeltrace2 the tests that need it print "skipped" and pass, unless
//! `EVENT_REQUIRE_BABELTRACE=1` (CI) makes its absence a failure.

use crate::common::*;
use event_format::wire::Order;
use serde_json::Value;
use std::io::Write as _;
use std::path::Path;
use std::process::Command;

/// Whether babeltrace2 can be run; when it cannot, says so (past the test harness's
/// capture) or fails when `EVENT_REQUIRE_BABELTRACE=1`.
fn babeltrace_available() -> bool {
    if Command::new("babeltrace2").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    assert!(
        std::env::var("EVENT_REQUIRE_BABELTRACE").as_deref() != Ok("1"),
        "babeltrace2 not found, and EVENT_REQUIRE_BABELTRACE=1 requires it (apt-get install babeltrace2)"
    );
    let _ = writeln!(std::io::stderr(), "skipped: babeltrace2 not found (apt-get install babeltrace2)");
    false
}

/// Exports `log` to `dir`; the run's stderr.
fn export(log: &Path, dir: &Path) -> String {
    let run = run(&["export", "--to", "ctf", log.to_str().unwrap(), "-o", dir.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    stderr(&run)
}

/// One line of babeltrace2's text output.
#[derive(Debug)]
struct Line {
    /// Nanoseconds since the Unix epoch.
    ns: i128,
    name: String,
    context: Vec<(String, String)>,
    /// Values as printed; strings unquoted and unescaped.
    fields: Vec<(String, Field)>,
}

#[derive(Debug, PartialEq)]
enum Field {
    Str(String),
    Token(String),
}

/// Reads `{ name = value, ... }` from the start of `s`; the fields and the rest.
fn parse_struct(s: &str) -> (Vec<(String, Field)>, &str) {
    let mut rest = s.strip_prefix("{ ").unwrap_or_else(|| panic!("a struct: {s}"));
    let mut fields = Vec::new();
    if let Some(after) = rest.strip_prefix('}') {
        return (fields, after);
    }
    loop {
        let (name, after) = rest.split_once(" = ").unwrap();
        rest = after;
        let value = if let Some(quoted) = rest.strip_prefix('"') {
            let mut text = String::new();
            let mut chars = quoted.char_indices();
            let end = loop {
                let (i, c) = chars.next().unwrap_or_else(|| panic!("an unterminated string: {s}"));
                match c {
                    '"' => break i + 1,
                    '\\' => {
                        let (_, e) = chars.next().unwrap();
                        text.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            other => other,
                        });
                    }
                    c => text.push(c),
                }
            };
            rest = &quoted[end..];
            Field::Str(text)
        } else {
            let end = rest.find([',', ' ']).unwrap();
            let token = rest[..end].to_owned();
            rest = &rest[end..];
            Field::Token(token)
        };
        fields.push((name.to_owned(), value));
        if let Some(after) = rest.strip_prefix(", ") {
            rest = after;
        } else {
            return (fields, rest.strip_prefix(" }").unwrap_or_else(|| panic!("the end of a struct: {rest}")));
        }
    }
}

fn parse_line(line: &str) -> Line {
    let (time, rest) = line.strip_prefix('[').and_then(|l| l.split_once("] ")).unwrap_or_else(|| panic!("{line}"));
    let (_, rest) = rest.split_once(") ").unwrap();
    let (name, rest) = rest.split_once(": ").unwrap();
    let (context, rest) = parse_struct(rest);
    let (fields, rest) =
        parse_struct(rest.strip_prefix(", ").unwrap_or_else(|| panic!("fields after the context: {line}")));
    assert!(rest.is_empty(), "{line}");
    let context =
        context.into_iter().map(|(n, v)| (n, if let Field::Token(t) = v { t } else { panic!("{line}") })).collect();
    Line { ns: seconds_to_ns(time), name: name.to_owned(), context, fields }
}

/// `babeltrace2 --clock-seconds DIR`, parsed.
fn babeltrace(dir: &Path) -> Vec<Line> {
    let out = Command::new("babeltrace2").arg("--clock-seconds").arg(dir).output().unwrap();
    assert!(out.status.success(), "babeltrace2 failed: {}", stderr(&out));
    stdout(&out).lines().map(parse_line).collect()
}

/// Whether babeltrace's `field` shows `printed` (a value of `print --format json`).
fn same_value(field: &Field, printed: &Value) -> bool {
    match (field, printed) {
        // Strings: CTF strings end at a NUL, so the export writes U+FFFD for one.
        (Field::Str(s), Value::String(p)) => *s == p.replace('\0', "\u{FFFD}"),
        (Field::Str(_), _) => false,
        (Field::Token(t), Value::Bool(b)) => t == if *b { "1" } else { "0" },
        (Field::Token(t), Value::String(p)) if p.starts_with("0x") => t.to_lowercase() == *p,
        // Doubles: babeltrace shows 6 significant digits (%g); NaN and infinities by name.
        (Field::Token(t), Value::String(p)) => {
            t.parse::<f64>().ok().zip(p.parse::<f64>().ok()).is_some_and(|(a, b)| (a.is_nan() && b.is_nan()) || a == b)
        }
        (Field::Token(t), Value::Number(n)) if n.is_f64() => {
            let (Ok(a), Some(b)) = (t.parse::<f64>(), n.as_f64()) else { return false };
            a == b || (a - b).abs() <= 1e-5 * b.abs()
        }
        (Field::Token(t), Value::Number(n)) => *t == n.to_string(),
        _ => false,
    }
}

/// Babeltrace shows `printed` event for event: order, `Kind:Name`, thread, fields, and time
/// (`start_wall_ns` + print's time since the start, to `tolerance_ns`).
fn check(lines: &[Line], printed: &[Printed], start_wall_ns: i128, tolerance_ns: i128) {
    assert_eq!(lines.len(), printed.len(), "as many events as print shows");
    for (line, p) in lines.iter().zip(printed) {
        assert_eq!(line.name, format!("{}:{}", p.kind, p.event), "{line:?}");
        assert_eq!(line.context, [("thread_id".to_owned(), p.thread.trim_start_matches('T').to_owned())], "{line:?}");
        let expected = start_wall_ns + p.ns;
        assert!((line.ns - expected).abs() <= tolerance_ns, "{line:?}: time {} ns, print says {expected}", line.ns);
        assert_eq!(line.fields.len(), p.args.len(), "{line:?} {p:?}");
        for (name, field) in &line.fields {
            let pvalue =
                p.args.get(name).unwrap_or_else(|| panic!("{}.{name}: print has no such argument: {p:?}", line.name));
            assert!(same_value(field, pvalue), "{}.{name}: babeltrace shows {field:?}, print {pvalue}", line.name);
        }
    }
}

#[test]
fn babeltrace_reads_every_event_as_print_shows_it() {
    if !babeltrace_available() {
        return;
    }
    let d = dir("ctf-sample");
    let log = d.join("sample.evt");
    sample_log(&log);
    let trace = d.join("trace");
    assert_eq!(export(&log, &trace), "", "a whole log exports silently");
    let metadata = std::fs::read_to_string(trace.join("metadata")).unwrap();
    assert!(metadata.starts_with("/* CTF 1.8 */\n"), "{metadata}");
    let printed = print_json(&[log.to_str().unwrap()]);
    // The deterministic clock's tick 0 is the epoch, at 1 GHz: exact.
    check(&babeltrace(&trace), &printed, 0, 0);
    // One stream file per thread.
    let mut files: Vec<String> =
        std::fs::read_dir(&trace).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    let mut threads: Vec<String> = printed.iter().map(|p| format!("thread-{}", &p.thread[1..])).collect();
    threads.push("metadata".to_owned());
    threads.sort();
    threads.dedup();
    assert_eq!(files, threads);

    // Losses are events too.
    let drops = d.join("drops.evt");
    dropping_log(&drops);
    let trace = d.join("drops");
    export(&drops, &trace);
    let lines = babeltrace(&trace);
    check(&lines, &print_json(&[drops.to_str().unwrap()]), 0, 0);
    assert!(lines.iter().any(|l| l.name == "Builtin:Dropped"));
}

#[test]
fn a_handmade_log_in_both_byte_orders_with_extreme_values() {
    if !babeltrace_available() {
        return;
    }
    let d = dir("ctf-handmade");
    let clock = handmade_clock();
    for order in [Order::Little, Order::Big] {
        let log = d.join(format!("{order:?}.evt"));
        handmade_log(&log, order);
        let trace = d.join(format!("{order:?}"));
        let err = export(&log, &trace);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("skipped 1 record of an unknown code"), "{err}");
        let metadata = std::fs::read_to_string(trace.join("metadata")).unwrap();
        let expected_order = if order == Order::Little { "byte_order = le;" } else { "byte_order = be;" };
        assert!(metadata.contains(expected_order), "{metadata}");
        let lines = babeltrace(&trace);
        // A 3 GHz clock: babeltrace's nanoseconds and print's may round a tick apart.
        check(&lines, &print_json(&[log.to_str().unwrap()]), clock.wall_ns(clock.start_ticks), 1);
        let every = lines.iter().find(|l| l.name == "Trace:Every").unwrap();
        let field = |n: &str| every.fields.iter().find(|(name, _)| name == n).map(|(_, f)| f).unwrap();
        assert_eq!(field("p"), &Field::Token("0xFFFFFFFFFFFFFFFF".to_owned()));
        assert_eq!(field("w"), &Field::Token(u64::MAX.to_string()));
        assert_eq!(field("i"), &Field::Token(i64::MIN.to_string()));
        assert_eq!(
            field("s"),
            &Field::Str("nul\u{FFFD}here \u{FFFD} \"q\" \\".to_owned()),
            "a NUL does not end the string"
        );
        // Absolute time: tick 6e9 + 10 is 1700000000.123456789 s + (1e9 + 10) / 3 ns.
        assert_eq!(every.ns, 1_700_000_000_456_790_125);
    }
}

#[test]
fn packets_are_bounded_and_well_formed() {
    let d = dir("ctf-packets");
    let log = d.join("big.evt");
    many_events_log(&log, 6000);
    let printed = print_json(&[log.to_str().unwrap()]);
    let thread = printed.iter().find(|p| p.event == "ObjectAlloc").unwrap().thread[1..].parse::<u64>().unwrap();
    let trace = d.join("trace");
    export(&log, &trace);
    let bytes = std::fs::read(trace.join(format!("thread-{thread}"))).unwrap();
    // Each packet: magic, stream id, begin, end, content size, packet size (bits), thread,
    // in the log's byte order (the recorder's: this machine's).
    let (mut at, mut packets, mut previous_end) = (0usize, 0, 0u64);
    let u64_at = |i: usize| u64::from_ne_bytes(bytes[i..i + 8].try_into().unwrap());
    while at < bytes.len() {
        assert_eq!(u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap()), 0xC1FC_1FC1, "packet {packets} at {at}");
        let (begin, end, content, size) = (u64_at(at + 8), u64_at(at + 16), u64_at(at + 24), u64_at(at + 32));
        assert_eq!(content, size);
        assert!(size / 8 <= 64 << 10, "packet {packets}: {} bytes", size / 8);
        assert!(begin <= end && previous_end <= begin, "packet {packets}: {begin}..{end} after {previous_end}");
        assert_eq!(u64_at(at + 40), thread);
        previous_end = end;
        at += size as usize / 8;
        packets += 1;
    }
    assert_eq!(at, bytes.len(), "the packets fill the file exactly");
    assert!(packets > 1, "{} bytes of events make more than one packet", bytes.len());
    if babeltrace_available() {
        check(&babeltrace(&trace), &printed, 0, 0);
    }
}

#[test]
fn the_output_directory_and_the_logs_are_checked() {
    let d = dir("ctf-errors");
    let log = d.join("ok.evt");
    handmade_log(&log, Order::Little);
    let log = log.to_str().unwrap();
    let one_line_error = |args: &[&str], says: &str| {
        let mut all = vec!["export", "--to", "ctf"];
        all.extend_from_slice(args);
        let run = run(&all);
        assert_eq!(run.status.code(), Some(1), "{args:?}");
        let err = stderr(&run);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    };
    // A directory that holds something else is refused, and left alone.
    let busy = d.join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "mine").unwrap();
    one_line_error(&[log, "-o", busy.to_str().unwrap()], "is not empty");
    assert!(busy.join("notes.txt").exists());
    one_line_error(&[log, "-o", busy.join("notes.txt").to_str().unwrap()], "is not a directory");
    one_line_error(&[log, log, "-o", d.join("two").to_str().unwrap()], "takes one log");
    one_line_error(&[d.join("missing.evt").to_str().unwrap(), "-o", d.join("x").to_str().unwrap()], "cannot open");
    // An earlier export is replaced, whole.
    let trace = d.join("again");
    export(Path::new(log), &trace);
    std::fs::write(trace.join("thread-77"), b"stale").unwrap();
    export(Path::new(log), &trace);
    assert!(!trace.join("thread-77").exists(), "the earlier export's streams are gone");
    assert!(trace.join("thread-1").exists() && trace.join("thread-2").exists());
}

#[test]
fn a_thread_that_goes_back_in_time_is_exported_in_time_order() {
    let d = dir("ctf-backwards");
    let log = d.join("back.evt");
    backwards_log(&log, 0);
    let trace = d.join("trace");
    assert_eq!(export(&log, &trace), "", "the merge puts the thread's events in time order");
    if babeltrace_available() {
        let clock = handmade_clock();
        check(&babeltrace(&trace), &print_json(&[log.to_str().unwrap()]), clock.wall_ns(clock.start_ticks), 1);
    }
}
