//! A program instrumented with `tracing` alone (`tracing-only`, no events.def) records a log
//! through `event_runtime::tracing_bridge`, and event-dump (`dump`, the CLI's own code)
//! prints, checks and filters it.

use crate::common::{DUMP, Scratch};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PROGRAM: &str = env!("CARGO_BIN_EXE_tracing-only");

/// Runs `tracing-only`, recording to a fresh file in the test `name`'s directory, and returns
/// the directory (removed when dropped, if the test passed) and the file.
fn record(name: &str) -> (Scratch, PathBuf) {
    let dir = crate::common::dir("tracing", name);
    let log = dir.join("tracing-only.evt");
    let log_text = log.to_string_lossy();
    let out = crate::common::program(PROGRAM, &[], &[("EVENT_FILE", &log_text)]).output().unwrap();
    assert!(out.status.success(), "tracing-only: {}", String::from_utf8_lossy(&out.stderr));
    (dir, log)
}

fn dump(args: &[&str], log: &Path) -> Output {
    Command::new(DUMP).args(args).arg(log).output().unwrap()
}

/// `dump print`'s lines without their time (the program's clock is real), each span
/// numbered S1, S2, ... in the order of their `SpanOpen`, and every later `span=` and
/// `parent=` of its id given its number (tracing chooses the ids and may reuse one), and
/// without the `ClockSync` events the recorder adds once a second.
fn lines(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "dump: {}", String::from_utf8_lossy(&out.stderr));
    let mut opened = 0;
    let mut open: Vec<(String, String)> = Vec::new();
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .filter(|line| !line.contains(" Builtin.ClockSync "))
        .map(|line| {
            let (time, rest) = line.split_once(' ').unwrap();
            assert!(time.parse::<f64>().is_ok(), "a line starts with its time: {line}");
            let opens = rest.contains(" Builtin.SpanOpen ");
            rest.split(' ')
                .map(|word| {
                    let (key, id) = match (word.strip_prefix("span="), word.strip_prefix("parent=")) {
                        (Some(id), _) => ("span", id),
                        (_, Some(id)) => ("parent", id),
                        _ => return word.to_owned(),
                    };
                    if opens && key == "span" {
                        opened += 1;
                        open.push((id.to_owned(), format!("S{opened}")));
                        return format!("span=S{opened}");
                    }
                    match open.iter().rposition(|(open_id, _)| open_id == id) {
                        Some(at) => format!("{key}={}", open[at].1),
                        None if id == "0" => word.to_owned(),
                        None => format!("{key}=unopened-{id}"),
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn a_tracing_only_program_gets_a_log_that_event_dump_prints() {
    let (_dir, log) = record("print");
    let got = lines(&dump(&["print"], &log));
    let expected = [
        r#"T1 Builtin.ThreadName thread=1 name="main""#,
        r#"T1 Builtin.TraceEvent level=3 target="tracing_only" text="starting version=\"1.2\"""#,
        r#"T1 Builtin.SpanOpen span=S1 parent=0 name="request" fields="id=1""#,
        r#"T1 Builtin.SpanRecord span=S1 fields="user=\"ada\"""#,
        r#"T1 Builtin.SpanCurrent span=S1"#,
        r#"T1 Builtin.TraceEvent level=4 target="tracing_only" text="read bytes=512""#,
        r#"T1 Builtin.SpanOpen span=S2 parent=S1 name="query" fields="table=\"users\"""#,
        r#"T1 Builtin.SpanCurrent span=S2"#,
        r#"T1 Builtin.TraceEvent level=5 target="tracing_only" text="rows=1""#,
        // Span records name their span and take no `SpanCurrent` (format 2.1.2).
        r#"T1 Builtin.SpanClose span=S2"#,
        r#"T1 Builtin.SpanClose span=S1"#,
        r#"T1 Builtin.SpanOpen span=S3 parent=0 name="request" fields="id=2""#,
        r#"T1 Builtin.SpanRecord span=S3 fields="user=\"ada\"""#,
        r#"T1 Builtin.SpanCurrent span=S3"#,
        r#"T1 Builtin.TraceEvent level=4 target="tracing_only" text="read bytes=1024""#,
        r#"T1 Builtin.TraceEvent level=2 target="tracing_only" text="slow elapsed_ms=1500""#,
        r#"T1 Builtin.SpanOpen span=S4 parent=S3 name="query" fields="table=\"users\"""#,
        r#"T1 Builtin.SpanCurrent span=S4"#,
        r#"T1 Builtin.TraceEvent level=5 target="tracing_only" text="rows=2""#,
        r#"T1 Builtin.SpanClose span=S4"#,
        r#"T1 Builtin.SpanClose span=S3"#,
        // The next record outside every span is marked.
        r#"T1 Builtin.SpanCurrent span=0"#,
        r#"T1 Builtin.TraceEvent level=1 target="tracing_only" text="giving up code=503 reason=\"overloaded\"""#,
    ];
    assert_eq!(got, expected);
}

#[test]
fn event_dump_checks_filters_and_describes_the_log() {
    let (_dir, log) = record("check");
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
    let closes = lines(&dump(&["print", "--event", "SpanClose"], &log));
    assert_eq!(closes.len(), 4, "{closes:?}");

    let schema = dump(&["schema"], &log);
    let schema = String::from_utf8(schema.stdout).unwrap();
    assert!(schema.lines().any(|l| l == "VERSION(1, 0, 0)"), "{schema}");
    assert!(!schema.contains("KIND(") && !schema.contains("RELATION("), "no user kinds or events: {schema}");
}

/// Runs `tracing-only fields`, recording to a fresh file of the test `name`; the directory
/// and the file, as [`record`].
fn record_fields(name: &str) -> (Scratch, PathBuf) {
    let dir = crate::common::dir("tracing-fields", name);
    let log = dir.join("fields.evt");
    let log_text = log.to_string_lossy();
    let out = crate::common::program(PROGRAM, &["fields"], &[("EVENT_FILE", &log_text)]).output().unwrap();
    assert!(out.status.success(), "tracing-only: {}", String::from_utf8_lossy(&out.stderr));
    (dir, log)
}

/// The lines `print --filter EXPR` selects, without times and span ids.
fn selected(log: &Path, expr: &str) -> Vec<String> {
    lines(&dump(&["print", "--filter", expr], log))
}

#[test]
fn tracing_fields_are_filtered_by_name_exactly() {
    let (_dir, log) = record_fields("filter");
    // `id == 7` matches the span and events of job 7, never those of job 70.
    let seven = selected(&log, "fields.id == 7");
    assert_eq!(
        seven,
        [
            r#"T1 Builtin.SpanOpen span=S1 parent=0 name="job" fields="id=7 attempt=1 user=\"ada \\\"l\\\"\"""#,
            r#"T1 Builtin.TraceEvent level=3 target="tracing_only" text="job done id=7 ratio=0.5 ok=true""#,
            r#"T1 Builtin.TraceEvent level=4 target="tracing_only" text="id=7 parts=\"[1, 2]\" addr=\"127.0.0.1:80\"""#,
        ]
    );
    assert_eq!(selected(&log, "fields.id == 70").len(), 3);
    // A text match cannot tell them apart: `*id=7*` matches `id=70` too.
    assert_eq!(selected(&log, r#"fields ~ "*id=7*""#).len(), 2, "the old way matches both spans");
    // Every type reads back: float, boolean, a string with a space and quotes, Debug and
    // Display values as strings, and the span's name beside the event's.
    assert_eq!(selected(&log, "fields.ratio == 0.5").len(), 2);
    assert_eq!(selected(&log, "fields.ok == true && fields.id == 7").len(), 1);
    assert_eq!(selected(&log, r#"fields.user == "ada \"l\"""#).len(), 2);
    assert_eq!(selected(&log, r#"fields.parts == "[1, 2]" && fields.addr ~ "127.*""#).len(), 2);
    assert_eq!(selected(&log, "args.name == job && fields.attempt == 1").len(), 2);
    // A message that reads like a field stays the message.
    assert_eq!(selected(&log, "fields.count == 3"), Vec::<String>::new());
    assert_eq!(
        selected(&log, r#"fields.message ~ "done*""#),
        [r#"T1 Builtin.TraceEvent level=2 target="tracing_only" text="message=\"done count=3\"""#]
    );
}

#[test]
fn tracing_fields_are_an_object_in_the_chrome_export() {
    let (_dir, log) = record_fields("chrome");
    let out = log.with_extension("json");
    let run = Command::new(DUMP).args(["export", "--to", "chrome"]).arg(&log).arg("-o").arg(&out).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let trace = std::fs::read_to_string(&out).unwrap();
    let line = |needle: &str| trace.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}: {trace}"));
    let span = line(r#""name":"job","cat":"Builtin","ph":"b""#);
    assert!(span.contains(r#""fields":{"id":7,"attempt":1,"user":"ada \"l\""}"#), "{span}");
    let done = line(r#""text":"job done id=7 ratio=0.5 ok=true""#);
    assert!(done.contains(r#""fields":{"id":7,"ratio":0.5,"ok":true}"#), "{done}");
    // Recorded inside the span: it names it; the `SpanCurrent` marks are no events here.
    let id = span.split(r#""span":"#).nth(1).and_then(|r| r.split([',', '}']).next()).expect("the span's id");
    assert!(done.contains(&format!(r#""span":{id}"#)), "{done}\n{span}");
    assert!(!trace.contains("SpanCurrent"), "{trace}");
}
