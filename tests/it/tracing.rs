//! A program instrumented with `tracing` alone (`tracing-only`, no events.def) records a log
//! through `event_runtime::tracing_bridge`, and event-dump (`dump`, the CLI's own code)
//! prints, checks and filters it.

use crate::common::DUMP;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PROGRAM: &str = env!("CARGO_BIN_EXE_tracing-only");

/// Runs `tracing-only`, recording to a fresh file, and returns the file.
fn record(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tracing-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("tracing-only.evt");
    let mut program = Command::new(PROGRAM);
    for var in ["EVENT_RING", "EVENT_CONTROL", "EVENT_POLICY", "EVENT_BUFSIZE"] {
        program.env_remove(var);
    }
    let out = program.env("EVENT_FILE", &log).output().unwrap();
    assert!(out.status.success(), "tracing-only: {}", String::from_utf8_lossy(&out.stderr));
    log
}

fn dump(args: &[&str], log: &Path) -> Output {
    Command::new(DUMP).args(args).arg(log).output().unwrap()
}

/// `dump print`'s lines without their time (the program's clock is real), each span entry
/// numbered S1, S2, ... in order and each exit given the number of the latest open entry of
/// its id (tracing chooses the ids and may reuse one), and without the `ClockSync` events the
/// recorder adds once a second.
fn lines(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "dump: {}", String::from_utf8_lossy(&out.stderr));
    let mut entries = 0;
    let mut open: Vec<(String, String)> = Vec::new();
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .filter(|line| !line.contains(" Builtin.ClockSync "))
        .map(|line| {
            let (time, rest) = line.split_once(' ').unwrap();
            assert!(time.parse::<f64>().is_ok(), "a line starts with its time: {line}");
            let enter = rest.contains(" Builtin.SpanEnter ");
            rest.split(' ')
                .map(|word| match word.strip_prefix("span=") {
                    Some(id) if enter => {
                        entries += 1;
                        open.push((id.to_owned(), format!("S{entries}")));
                        format!("span=S{entries}")
                    }
                    Some(id) => match open.iter().rposition(|(open_id, _)| open_id == id) {
                        Some(at) => format!("span={}", open.remove(at).1),
                        None => format!("span=unentered-{id}"),
                    },
                    None => word.to_owned(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn a_tracing_only_program_gets_a_log_that_event_dump_prints() {
    let log = record("print");
    let got = lines(&dump(&["print"], &log));
    let expected = [
        r#"T1 Builtin.ThreadName thread=1 name="main""#,
        r#"T1 Builtin.TraceEvent level=3 target="tracing_only" text="starting version=\"1.2\"""#,
        r#"T1 Builtin.SpanEnter span=S1 name="request" fields="id=1 user=\"ada\"""#,
        r#"T1 Builtin.TraceEvent level=4 target="tracing_only" text="read bytes=512""#,
        r#"T1 Builtin.SpanEnter span=S2 name="query" fields="table=\"users\"""#,
        r#"T1 Builtin.TraceEvent level=5 target="tracing_only" text="rows=1""#,
        r#"T1 Builtin.SpanExit span=S2 name="query""#,
        r#"T1 Builtin.SpanExit span=S1 name="request""#,
        r#"T1 Builtin.SpanEnter span=S3 name="request" fields="id=2 user=\"ada\"""#,
        r#"T1 Builtin.TraceEvent level=4 target="tracing_only" text="read bytes=1024""#,
        r#"T1 Builtin.TraceEvent level=2 target="tracing_only" text="slow elapsed_ms=1500""#,
        r#"T1 Builtin.SpanEnter span=S4 name="query" fields="table=\"users\"""#,
        r#"T1 Builtin.TraceEvent level=5 target="tracing_only" text="rows=2""#,
        r#"T1 Builtin.SpanExit span=S4 name="query""#,
        r#"T1 Builtin.SpanExit span=S3 name="request""#,
        r#"T1 Builtin.TraceEvent level=1 target="tracing_only" text="giving up code=503 reason=\"overloaded\"""#,
    ];
    assert_eq!(got, expected);
}

#[test]
fn event_dump_checks_filters_and_describes_the_log() {
    let log = record("check");
    let check = dump(&["check"], &log);
    assert!(check.status.success(), "check: {}", String::from_utf8_lossy(&check.stdout));

    let warnings = lines(&dump(&["print", "--filter", "level <= 2"], &log));
    assert_eq!(
        warnings,
        [
            r#"T1 Builtin.TraceEvent level=2 target="tracing_only" text="slow elapsed_ms=1500""#,
            r#"T1 Builtin.TraceEvent level=1 target="tracing_only" text="giving up code=503 reason=\"overloaded\"""#,
        ]
    );
    let exits = lines(&dump(&["print", "--event", "SpanExit"], &log));
    assert_eq!(exits.len(), 4, "{exits:?}");

    let schema = dump(&["schema"], &log);
    let schema = String::from_utf8(schema.stdout).unwrap();
    assert!(schema.lines().any(|l| l == "VERSION(1, 0, 0)"), "{schema}");
    assert!(!schema.contains("KIND(") && !schema.contains("RELATION("), "no user kinds or events: {schema}");
}
