//! The typed reader on the tour's log: it agrees with `event-dump print --format json` event
//! for event (thread by thread, since the reader keeps each thread's order and the dump merges
//! threads by time), and the replayer (examples/replay.rs) finds every claim of the log true.
//!
//! The tour and the replayer are examples, which no test can name as binaries: the test runs
//! them with cargo, as README does.

event_runtime::include_events!("../events.def");

use event_runtime::read::Item;
use event_tests::json_of;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `cargo run -q -p PACKAGE ARGS` in the workspace, without the `EVENT_*` variables of the
/// test's environment.
fn cargo_run(package_and_args: &[&str], log: &Path) -> std::process::Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut command = Command::new(env!("CARGO"));
    command.current_dir(root).args(["run", "-q", "-p"]).args(package_and_args).env("EVENT_FILE", log);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("EVENT_") && k != "EVENT_FILE" {
            command.env_remove(k);
        }
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{package_and_args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Equal, doubles within a rounding of each other (serde_json's default parse of a double
/// may miss by an ulp).
fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_f64() || b.is_f64() => (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs()),
        _ => a == b,
    }
}

/// An event as compared: time in seconds, name, parameter names and values.
type Seen = (f64, String, Vec<(String, serde_json::Value)>);

fn compare(typed: &BTreeMap<String, Vec<Seen>>, dumped: &BTreeMap<String, Vec<Seen>>) {
    assert_eq!(typed.keys().collect::<Vec<_>>(), dumped.keys().collect::<Vec<_>>(), "the same threads");
    for (thread, events) in typed {
        let other = &dumped[thread];
        assert_eq!(events.len(), other.len(), "{thread}: as many events");
        for (a, b) in events.iter().zip(other) {
            // serde_json's objects sort their keys.
            let mut a = a.clone();
            a.2.sort_by(|x, y| x.0.cmp(&y.0));
            let agree = (a.0 - b.0).abs() < 1e-9
                && a.1 == b.1
                && a.2.len() == b.2.len()
                && a.2.iter().zip(&b.2).all(|(x, y)| x.0 == y.0 && same(&x.1, &y.1));
            assert!(agree, "{thread}: the reader gives {a:?}, event-dump {b:?}");
        }
    }
}

#[test]
fn the_typed_reader_and_event_dump_json_agree_and_the_replay_holds_on_the_tours_log() {
    let dir = event_tests::Scratch::new(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("typed-tour-{}", std::process::id())),
    );
    let log: PathBuf = dir.join("tour.evt");
    cargo_run(&["examples", "--example", "tour"], &log);

    let mut typed: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
    let mut reader = events::read(&log).unwrap();
    while let Some(item) = reader.next_item() {
        match item {
            Item::Event(at, e) => {
                let args = (0..).map_while(|i| Some((e.params().get(i)?.to_string(), json_of(e.value(i)?)))).collect();
                typed.entry(format!("T{}", at.thread)).or_default().push((at.seconds, e.name().to_owned(), args));
            }
            Item::Other(e) => assert!(e.desc.is_builtin(), "{e:?}"),
            other => panic!("the tour's log is whole: {other:?}"),
        }
    }
    let summary = reader.summary();
    assert!(summary.is_whole() && summary.unknown == 0 && summary.events > 100_000, "{summary}");

    let out = cargo_run(&["event-dump", "--", "print", log.to_str().unwrap(), "--format", "json"], &log);
    let mut dumped: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
    let mut builtin = 0;
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["kind"] == "Builtin" {
            builtin += 1;
            continue;
        }
        let args = v["args"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let seen = (v["time"].as_f64().unwrap(), v["event"].as_str().unwrap().to_owned(), args);
        dumped.entry(v["thread"].as_str().unwrap().to_owned()).or_default().push(seen);
    }
    compare(&typed, &dumped);
    assert_eq!(summary.other, builtin, "the built-in events too");

    let out = cargo_run(&["examples", "--example", "replay", "--", log.to_str().unwrap()], &log);
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(report.contains("Every claim holds: 32 PoolStats"), "{report}");
}
