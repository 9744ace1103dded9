//! The typed readers of the three sets of one log (the application's and its libraries',
//! whose codes and names overlap) each give their own set's events, typed, and agree with
//! `event-dump print --format json` event for event, thread by thread; the application's
//! events named like built-ins (`Intern`, `Label`) and parameters named like Rust keywords
//! (`r#ref`, `r#type`) come back as fields of its `events::Event`.

event_runtime::include_events!("events.def");

use event_runtime::format::BlockSource;
use event_runtime::read::{Item, Reader, TypedEvent, TypedSet};
use event_tests::json_of;
use serde_json::json;
use std::collections::BTreeMap;
use std::process::Command;

const THREADS: u64 = 3;
const ROUNDS: u64 = 50;

/// An event as compared: its line's JSON without `time` and `kind`, and its time apart
/// (serde_json's default parse of a double may miss by an ulp; the JSON has 9 decimals).
type Seen = (f64, serde_json::Value);

/// The events of set `S` in the log, per thread, as JSON objects of event-dump's shape.
fn typed<S: TypedSet, B: BlockSource>(mut reader: Reader<S, B>, set: &str) -> BTreeMap<String, Vec<Seen>> {
    let mut seen: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
    while let Some(item) = reader.next_item() {
        match item {
            Item::Event(at, e) => {
                let args: serde_json::Map<String, serde_json::Value> =
                    (0..).map_while(|i| Some((e.params().get(i)?.to_string(), json_of(e.value(i)?)))).collect();
                let thread = format!("T{}", at.thread);
                let line = json!({ "thread": thread, "set": set, "event": e.name(), "args": args });
                seen.entry(thread).or_default().push((at.seconds, line));
            }
            Item::Other(_) => {}
            other => panic!("the log is whole: {other:?}"),
        }
    }
    assert!(reader.summary().is_whole() && reader.summary().unknown == 0, "{}", reader.summary());
    seen
}

fn agree(typed: &BTreeMap<String, Vec<Seen>>, dumped: &BTreeMap<String, Vec<Seen>>, set: &str) {
    assert_eq!(typed.keys().collect::<Vec<_>>(), dumped.keys().collect::<Vec<_>>(), "{set}: the same threads");
    for (thread, events) in typed {
        let other = &dumped[thread];
        assert_eq!(events.len(), other.len(), "{set}, {thread}: as many events");
        for (a, b) in events.iter().zip(other) {
            assert!(
                (a.0 - b.0).abs() < 1e-9 && a.1 == b.1,
                "{set}, {thread}: the reader gives {a:?}, event-dump {b:?}"
            );
        }
    }
}

#[test]
fn each_sets_typed_reader_agrees_with_event_dump_json_on_a_log_of_three_sets() {
    let dir = event_tests::Scratch::new(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sets-typed-{}", std::process::id())),
    );
    let file = dir.join("app.evt");
    let out = Command::new(env!("CARGO_BIN_EXE_sets-app"))
        .args([THREADS.to_string(), ROUNDS.to_string()])
        .env("EVENT_FILE", &file)
        .env_remove("EVENT_CONTROL")
        .output()
        .unwrap();
    assert!(out.status.success(), "sets-app: {}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new(env!("CARGO_BIN_EXE_sets-dump"))
        .args(["print", file.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "event-dump: {}", String::from_utf8_lossy(&out.stderr));
    let mut dumped: BTreeMap<&str, BTreeMap<String, Vec<Seen>>> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        let Some(set) = v.get("set").and_then(|s| s.as_str()).map(str::to_owned) else { continue };
        let set: &str = ["app", "storage", "net"].into_iter().find(|s| *s == set).expect("one of the three sets");
        let time = v["time"].as_f64().unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("time");
        o.remove("kind");
        let thread = v["thread"].as_str().unwrap().to_owned();
        dumped.entry(set).or_default().entry(thread).or_default().push((time, v));
    }
    agree(&typed(events::read(&file).unwrap(), "app"), &dumped["app"], "app");
    agree(&typed(storage::events::read(&file).unwrap(), "storage"), &dumped["storage"], "storage");
    agree(&typed(net::events::read(&file).unwrap(), "net"), &dumped["net"], "net");

    // The application's own reader, typed: a built-in's name and keyword parameters.
    let mut reader = events::read(&file).unwrap();
    let mut found = Vec::new();
    while let Some(item) = reader.next_item() {
        match item {
            Item::Event(_, events::Event::Intern { stringId, string }) => {
                found.push(format!("Intern {stringId} {}", string.to_string_lossy()))
            }
            Item::Event(_, events::Event::Label { address, stringId }) => {
                found.push(format!("Label {address:#x} {stringId}"))
            }
            Item::Event(_, events::Event::Fix { r#ref, r#gen, r#type, r#match }) => {
                found.push(format!("Fix {:#x} {:#x} {} {}", r#ref, r#gen, r#type, r#match.to_string_lossy()))
            }
            _ => {}
        }
    }
    assert_eq!(found, ["Intern 7 gc", "Label 0x1000 7", "Fix 0x2000 0x3000 2 weak"]);
}
