//! The host's signals are the host's (SECURITY.md, "Signals"): a service that handles SIGTERM
//! and SIGINT (tokio, `ctrlc`, a raw `sigaction`; installed before or after the recording
//! starts), or SIGABRT (tokio, `sigaction`), drains and exits 0 with a trace that `check`
//! calls whole, with an event file and with a ring file; a program that handles nothing dies by the signal as it does without the
//! recorder; the recorder installs its crash-time handler only where the action was the
//! default, and `EVENT_SIGNALS=none` installs nothing.

use crate::common::{DUMP, program};
use event_tests::{Numbered, numbered, read_ring};
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `service-child`: a service that drains on SIGTERM and SIGINT (bin/service_child.rs).
const SERVICE: &str = env!("CARGO_BIN_EXE_service-child");

fn dir(name: &str) -> crate::common::Scratch {
    crate::common::dir("signals", name)
}

/// Runs `service-child HANDLER ORDER` with `env`, sends it `signal` (`TERM`, `INT`) once it
/// is ready, and returns what it did.
fn serve(handler: &str, order: &str, signal: &str, env: &[(&str, &str)]) -> Output {
    let mut child = program(SERVICE, &[handler, order], env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "{handler} {order}: the service starts");
    let sent = Command::new("kill").arg(format!("-{signal}")).arg(child.id().to_string()).status().unwrap();
    assert!(sent.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let mut out = child.wait_with_output().unwrap();
    out.stdout = format!("{line}{rest}").into_bytes();
    out
}

/// `event-dump check` on `path`: its exit code and output.
fn check(path: &Path) -> (i32, String) {
    let out = Command::new(DUMP).arg("check").arg(path).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// The service's events, whole: its workers' runs from 0 without a gap or a repeat, and the
/// main thread's 1001 events (the last recorded by the drain, after the signal).
fn assert_service_events(found: &Numbered, what: &str) {
    for w in [0, 1] {
        let run = found.by_worker.get(&w).unwrap_or_else(|| panic!("{what}: worker {w} has no events"));
        assert!(run.iter().enumerate().all(|(i, &n)| n == i as u64), "{what}: worker {w}: a gap or a repeat");
    }
    let main = found.by_worker.get(&100).map_or(&[][..], Vec::as_slice);
    assert!(main.iter().copied().eq(0..=1000), "{what}: the main thread's 1001 events, the drain's last");
}

#[test]
fn a_service_that_handles_its_signals_drains_and_exits_0_with_a_whole_trace() {
    let d = dir("handled");
    for handler in ["tokio", "ctrlc", "sigaction"] {
        for order in ["before", "after"] {
            let signals: &[&str] = if handler == "ctrlc" { &["TERM", "INT"] } else { &["TERM", "INT", "ABRT"] };
            for signal in signals {
                for sink in ["file", "ring"] {
                    let what = format!("{handler}, installed {order} the start, SIG{signal}, {sink}");
                    let path =
                        d.join(format!("{handler}-{order}-{signal}.{}", if sink == "file" { "evt" } else { "ring" }));
                    let variable = if sink == "file" { "EVENT_FILE" } else { "EVENT_RING" };
                    let out =
                        serve(handler, order, signal, &[(variable, path.to_str().unwrap()), ("EVENT_BUFSIZE", "64m")]);
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    assert_eq!(
                        out.status.code(),
                        Some(0),
                        "{what}: the service's own drain, then exit 0 ({:?}): {stderr}",
                        out.status
                    );
                    assert!(String::from_utf8_lossy(&out.stdout).contains("drained"), "{what}: it drained");
                    assert!(stderr.is_empty(), "{what}: nothing said: {stderr}");
                    let (code, text) = check(&path);
                    assert_eq!(code, 0, "{what}: check calls it whole: {text}");
                    let stream =
                        if sink == "file" { std::fs::read(&path).unwrap() } else { read_ring(&path).unwrap().0 };
                    assert_service_events(&numbered(&stream).unwrap_or_else(|e| panic!("{what}: {e}")), &what);
                }
            }
        }
    }
}

#[test]
fn a_program_that_handles_nothing_dies_by_the_signal_as_without_the_recorder() {
    let d = dir("unhandled");
    for signal in ["TERM", "INT"] {
        let expected = serve("none", "after", signal, &[]).status.signal();
        let number = if signal == "TERM" { libc::SIGTERM } else { libc::SIGINT };
        assert_eq!(expected, Some(number), "without the recorder, SIG{signal} ends it");
        for (variable, name) in [("EVENT_FILE", "trace.evt"), ("EVENT_RING", "trace.ring")] {
            let path = d.join(format!("{signal}-{name}"));
            let out = serve("none", "after", signal, &[(variable, path.to_str().unwrap())]);
            assert_eq!(
                out.status.signal(),
                expected,
                "{variable}: ended by SIG{signal} as without the recorder: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(out.stderr.is_empty(), "{variable}: nothing said: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

/// What `service-child dispositions` says each signal's action became at the start.
fn dispositions(env: &[(&str, &str)]) -> Vec<String> {
    let out = program(SERVICE, &["dispositions"], env).output().unwrap();
    assert!(out.status.success(), "{:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

#[test]
fn the_recorder_takes_only_default_fatal_signals_and_none_when_told() {
    let d = dir("dispositions");
    let file = d.join("trace.evt");
    let ring = d.join("trace.ring");
    let file_env = ("EVENT_FILE", file.to_str().unwrap());
    let ring_env = ("EVENT_RING", ring.to_str().unwrap());
    // SIGILL is ignored and SIGFPE handled by the program before the start: left alone. SIGSEGV
    // is std's (stack overflows). SIGTERM and SIGINT are never the recorder's. SIGBUS is taken
    // only while a ring file is mapped (its guard).
    let expected = |abrt: &str, bus: &str| -> [String; 7] {
        [
            format!("SIGABRT {abrt}"),
            "SIGILL same".into(),
            "SIGFPE same".into(),
            "SIGSEGV same".into(),
            format!("SIGBUS {bus}"),
            "SIGTERM same".into(),
            "SIGINT same".into(),
        ]
    };
    assert_eq!(dispositions(&[file_env]), expected("changed", "same"), "an event file");
    // A ring file alone needs no flush: every committed record is in it.
    assert_eq!(dispositions(&[ring_env]), expected("same", "changed"), "a ring file");
    let _ = std::fs::remove_file(&ring);
    assert_eq!(dispositions(&[file_env, ring_env]), expected("changed", "changed"), "an event file and a ring file");
    let _ = std::fs::remove_file(&ring);
    assert_eq!(dispositions(&[file_env, ring_env, ("EVENT_SIGNALS", "none")]), expected("same", "same"), "none");
    assert_eq!(dispositions(&[]), expected("same", "same"), "no recording");
}

#[test]
fn the_ring_files_guard_passes_every_other_sigbus_and_stack_overflow_on() {
    // A SIGBUS of the program's own (a file it mapped, cut short) and a stack overflow (std's
    // handler reports it and aborts) end the program as they do without the recorder: the
    // guard passes the SIGBUS on to std's handler, and the abort's flush does not run on
    // std's small alternate stack (it would overflow it: killed by SIGSEGV instead).
    let d = dir("other-faults");
    for fault in ["bus", "overflow"] {
        let own = d.join(format!("{fault}.own"));
        let run =
            |env: &[(&str, &str)]| program(SERVICE, &["fault", fault, own.to_str().unwrap()], env).output().unwrap();
        let without = run(&[]);
        let stderr = String::from_utf8_lossy(&without.stderr).into_owned();
        let expected = if fault == "bus" { libc::SIGBUS } else { libc::SIGABRT };
        assert_eq!(without.status.signal(), Some(expected), "{fault}: without the recorder: {stderr}");
        let file = d.join(format!("{fault}.evt"));
        let ring = d.join(format!("{fault}.ring"));
        let with = run(&[("EVENT_FILE", file.to_str().unwrap()), ("EVENT_RING", ring.to_str().unwrap())]);
        assert_eq!(with.status.signal(), Some(expected), "{fault}: {}", String::from_utf8_lossy(&with.stderr));
        let lines: Vec<String> = String::from_utf8_lossy(&with.stderr).lines().map(str::to_owned).collect();
        assert!(
            !lines.iter().any(|l| l.starts_with("event-runtime:")),
            "{fault}: the ring file is not lost: {lines:?}"
        );
        if fault == "overflow" {
            assert!(lines.iter().any(|l| l.contains("has overflowed its stack")), "std's report: {lines:?}");
        }
    }
}
