//! `export --to chrome` as a user runs it: the JSON parses, and holds every event of
//! `print --format json` on its thread's track with the same name, kind, time and
//! arguments; tracks and processes are named; Begin/End pairs and spans are slices; what
//! cannot be exported is reported and the rest still is; errors are one line.

use crate::common::{self, *};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Exports `logs` to `out` and parses the trace.
fn export(logs: &[&str], out: &Path) -> Value {
    let mut args = vec!["export", "--to", "chrome"];
    args.extend_from_slice(logs);
    args.extend_from_slice(&["-o", out.to_str().unwrap()]);
    let run = run(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    let text = std::fs::read_to_string(out).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not valid JSON: {e}"))
}

fn events(trace: &Value) -> &Vec<Value> {
    trace["traceEvents"].as_array().expect("traceEvents is an array")
}

/// The non-metadata events per (pid, tid), in file order.
fn tracks(trace: &Value) -> BTreeMap<(u64, u64), Vec<Value>> {
    let mut tracks: BTreeMap<(u64, u64), Vec<Value>> = BTreeMap::new();
    for e in events(trace).iter().filter(|e| e["ph"] != "M") {
        tracks.entry((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap())).or_default().push(e.clone());
    }
    tracks
}

/// `metadata[name]` per (pid, tid).
fn names(trace: &Value, what: &str) -> BTreeMap<(u64, u64), String> {
    events(trace)
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == what)
        .map(|e| {
            ((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()), e["args"]["name"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// `ts` in nanoseconds.
fn ts_ns(e: &Value) -> i128 {
    (e["ts"].as_f64().unwrap() * 1000.0).round() as i128
}

/// Whether the exported `args` say what `print --format json` says: the same values,
/// integers a double cannot hold as decimal strings, labels under `"<param> (label)"`.
fn check_args(exported: &Value, printed: &Printed) -> Result<(), String> {
    let args = exported.as_object().ok_or("args is not an object")?;
    for (name, value) in &printed.args {
        let big = match value {
            Value::Number(n) => n
                .as_u64()
                .map(|u| u > MAX_SAFE_INTEGER)
                .or(n.as_i64().map(|i| i.unsigned_abs() > MAX_SAFE_INTEGER))
                .unwrap_or(false),
            _ => false,
        };
        let expected = if big { Value::String(value.to_string()) } else { value.clone() };
        if args.get(name) != Some(&expected) {
            return Err(format!("{name}: exported {:?}, printed {value}", args.get(name)));
        }
    }
    for (name, label) in &printed.labels {
        let key = format!("{name} (label)");
        if args.get(&key) != Some(label) {
            return Err(format!("{key}: exported {:?}, printed {label}", args.get(&key)));
        }
    }
    if args.len() != printed.args.len() + printed.labels.len() {
        return Err(format!(
            "exported {} args, printed {} and {} labels",
            args.len(),
            printed.args.len(),
            printed.labels.len()
        ));
    }
    Ok(())
}

/// `printed` with its argument `name` alone, and no labels.
fn only(printed: &Printed, name: &str) -> Printed {
    let mut one = printed.clone();
    one.args.retain(|k, _| k == name);
    one.labels.clear();
    assert_eq!(one.args.len(), 1, "{printed:?} has an argument {name}");
    one
}

/// Each exported event of each track is the printed event of its thread at the same
/// place: same name (`Foo` of a slice for `FooBegin`/`FooEnd`), kind, time and arguments.
/// Only the tracks of process `pid` are compared, with `printed` of its log alone. Slices
/// left open at the end (`"unended":true`) are left out of the comparison and returned.
fn compare(trace: &Value, pid: u64, printed: &[Printed]) -> Vec<Value> {
    let mut unended = Vec::new();
    let mut per_thread: BTreeMap<String, Vec<&Printed>> = BTreeMap::new();
    for p in printed {
        per_thread.entry(p.thread.clone()).or_default().push(p);
    }
    let tracks: BTreeMap<u64, Vec<Value>> =
        tracks(trace).into_iter().filter(|(k, _)| k.0 == pid).map(|(k, v)| (k.1, v)).collect();
    assert_eq!(tracks.len(), per_thread.len(), "one track per thread");
    for (tid, exported) in &tracks {
        let thread = format!("T{tid}");
        let printed = per_thread.get(&thread).unwrap_or_else(|| panic!("{thread}: printed no events"));
        let exported: Vec<&Value> = exported
            .iter()
            .filter(|e| {
                let open = e["args"]["unended"] == json!(true);
                if open {
                    unended.push((*e).clone());
                }
                !open
            })
            .collect();
        // The samples of events.def's counters (`ArenaPoll`'s `committed` and `load`, named
        // after their parameters) are `"ph":"C"` events beside the instant they sample: each
        // holds that event's values.
        let (counters, exported): (Vec<&Value>, Vec<&Value>) = exported.into_iter().partition(|e| e["ph"] == "C");
        for c in &counters {
            let sampled = printed.iter().find(|p| p.ns == ts_ns(c) && c["name"] == p.event.as_str());
            let sampled = sampled.unwrap_or_else(|| panic!("{thread}: a counter sample of no event: {c}"));
            for (series, value) in c["args"].as_object().unwrap() {
                assert_eq!(check_args(&json!({ series: value }), &only(sampled, series)), Ok(()), "{c}");
            }
        }
        assert_eq!(exported.len(), printed.len(), "{thread}: as many events as print shows");
        for (e, p) in exported.iter().zip(printed) {
            let name = e["name"].as_str().unwrap();
            let expected = match e["ph"].as_str().unwrap() {
                "B" => format!("{name}Begin"),
                "E" => format!("{name}End"),
                "i" => {
                    assert_eq!(e["s"], "t", "{e}: a thread-scoped instant");
                    name.to_owned()
                }
                ph => panic!("unexpected phase {ph}: {e}"),
            };
            assert_eq!(expected, p.event, "{thread}: {e}");
            assert_eq!(e["cat"], p.kind.as_str(), "{e}");
            assert_eq!(ts_ns(e), p.ns, "{e}: time of {p:?}");
            if let Err(why) = check_args(&e["args"], p) {
                panic!("{thread}: {e}: {why}");
            }
        }
    }
    unended
}

#[test]
fn a_log_exports_event_for_event_as_print_shows_it() {
    let d = dir("chrome-sample");
    let log = d.join("sample.evt");
    sample_log(&log);
    let log = log.to_str().unwrap();
    let trace = export(&[log], &d.join("trace.json"));
    assert_eq!(trace["displayTimeUnit"], "ns");
    let printed = print_json(&[log]);
    let pid = u64::from(std::process::id());
    let unended = compare(&trace, pid, &printed);

    // The process is named by its service (the program, as the log has no `service` label)
    // and its host.
    let processes = names(&trace, "process_name");
    assert_eq!(processes.len(), 1);
    let (&(p, _), name) = processes.iter().next().unwrap();
    assert_eq!(p, pid);
    let header = event_format::decode::Decoder::new(&std::fs::read(log).unwrap()[..]).unwrap().header().clone();
    assert_eq!(*name, format!("{} on {}", header.producer.program, header.producer.host));

    // Every track is named: by the log's ThreadName, or T<n>.
    let threads = names(&trace, "thread_name");
    let tracks = tracks(&trace);
    for &(p, tid) in tracks.keys() {
        let given = printed
            .iter()
            .find(|e| e.event == "ThreadName" && e.args["thread"] == json!(tid))
            .map(|e| e.args["name"].as_str().unwrap().to_owned());
        assert_eq!(threads.get(&(p, tid)), Some(&given.unwrap_or(format!("T{tid}"))));
    }
    let worker = |n: &str| threads.iter().find(|(_, name)| name.as_str() == n).map(|(k, _)| tracks[k].clone()).unwrap();

    // Begin/End pairs are nested B/E slices named Sweep; an End without a Begin stays
    // visible as an instant.
    let phases = |track: &[Value]| -> Vec<String> {
        track
            .iter()
            .filter(|e| e["name"].as_str().unwrap().starts_with("Sweep"))
            .map(|e| format!("{} {}", e["ph"].as_str().unwrap(), e["name"].as_str().unwrap()))
            .collect()
    };
    let expected = ["B Sweep", "B Sweep", "i SweepReclaim", "E Sweep", "E Sweep"];
    assert_eq!(phases(&worker("worker-0")), expected);
    let w1 = worker("worker-1");
    assert_eq!(phases(&w1)[0], "i SweepEnd", "an End with nothing open is an instant");
    assert_eq!(phases(&w1)[1..], expected);
    let unmatched = w1.iter().find(|e| e["name"] == "SweepEnd").unwrap();
    assert_eq!(unmatched["args"]["complete"], false, "an unmatched End keeps its args");
    let begin = w1.iter().find(|e| e["ph"] == "B").unwrap();
    assert_eq!(begin["args"]["why"], "pool \"full\"", "a Begin carries its args");

    // A Begin never ended is closed at its thread's last event.
    assert_eq!(unended.len(), 1, "{unended:?}");
    let open = &unended[0];
    assert_eq!((open["ph"].as_str(), open["name"].as_str()), (Some("E"), Some("Sweep")));
    let main = &tracks[&(open["pid"].as_u64().unwrap(), open["tid"].as_u64().unwrap())];
    let last = main.iter().rfind(|e| e["args"]["unended"] != json!(true)).unwrap();
    assert_eq!(last["name"], "ArenaDestroy");
    assert_eq!(ts_ns(open), ts_ns(last));

    // Values a double cannot hold keep every digit, as strings.
    let find = |name: &str| events(&trace).iter().find(|e| e["name"] == name).unwrap().clone();
    assert_eq!(find("ArenaPoll")["args"]["committed"], "18446744073709551615");
    assert_eq!(find("ClientPhase")["args"]["step"], "9007199254740993");
    assert_eq!(find("ClientPhase")["args"]["delta"], "-9223372036854775808");
    assert_eq!(find("ArenaCreate")["args"]["arena (label)"], "main \"arena\"");
    assert_eq!(find("Message")["args"]["text"], "two \"workers\"\n\tand a tab");
}

#[test]
fn two_logs_are_two_processes_on_one_time_line() {
    let d = dir("chrome-two");
    let (a, b) = (d.join("a.evt"), d.join("b.evt"));
    sample_log(&a);
    dropping_log(&b);
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let trace = export(&[a, b], &d.join("two.json"));
    let processes = names(&trace, "process_name");
    assert_eq!(processes.len(), 2, "{processes:?}");
    let pids: Vec<u64> = processes.keys().map(|k| k.0).collect();
    assert_ne!(pids[0], pids[1], "two logs of one pid still give two processes");
    let real = std::process::id();
    // Both logs read the same by service and host: the real pid, then the recording id.
    assert!(
        processes.values().all(|n| n.contains(&format!(" (pid {real}) ["))),
        "names keep the real pid: {processes:?}"
    );
    assert_ne!(processes.values().next(), processes.values().nth(1), "and differ: {processes:?}");
    // The first log keeps its pid, the second gets the next free one; each process holds
    // its log's events. Both logs' deterministic clocks start at wall time 0, so each
    // log's times are print's.
    assert_eq!(pids, [u64::from(real), u64::from(real) + 1]);
    assert_eq!(compare(&trace, pids[0], &print_json(&[a])).len(), 1, "the sample's unended slice");
    let printed_b = print_json(&[b]);
    assert!(compare(&trace, pids[1], &printed_b).is_empty());
    let threads = |p: &[Printed]| p.iter().map(|e| e.thread.clone()).collect::<std::collections::BTreeSet<_>>().len();
    assert_eq!(tracks(&trace).len(), threads(&print_json(&[a])) + threads(&printed_b));
    // Losses are events like any other.
    let dropped = events(&trace).iter().filter(|e| e["name"] == "Dropped").count();
    assert!(dropped > 0);
    assert_eq!(dropped, printed_b.iter().filter(|p| p.event == "Dropped").count());
}

#[test]
fn logs_started_at_different_times_share_the_wall_clock_time_line() {
    let d = dir("chrome-wall");
    let (first, later) = (d.join("first.evt"), d.join("later.evt"));
    handmade_log(&first, event_format::wire::Order::Little);
    backwards_log(&later, 1_500_000);
    let trace = export(&[first.to_str().unwrap(), later.to_str().unwrap()], &d.join("wall.json"));
    let tracks = tracks(&trace);
    // The first log's times are its own, since it started first.
    assert_eq!(tracks[&(4242, 2)][0]["ts"].as_f64(), Some(0.0), "{:?}", tracks[&(4242, 2)][0]);
    // The later log's: 1.5 ms later, plus its own time since its start (50 ticks at 3 GHz,
    // then 100 and 200: its events in time order).
    let later: Vec<f64> = tracks[&(7, 1)].iter().map(|e| e["ts"].as_f64().unwrap()).collect();
    assert_eq!(later, [1500.016, 1500.033, 1500.066]);
}

#[test]
fn spans_unknown_codes_and_damage() {
    let d = dir("chrome-handmade");
    let log = d.join("handmade.evt");
    handmade_log(&log, event_format::wire::Order::Big);
    let out = d.join("handmade.json");
    let run = run(&["export", "--to", "chrome", log.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    let err = stderr(&run);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("skipped 1 record of an unknown code"), "{err}");
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let printed = print_json(&[log.to_str().unwrap()]);
    // compare() maps B/E to FooBegin/FooEnd: spans are checked here instead.
    let all = tracks(&trace);
    let one = &all[&(4242, 1)];
    let shape: Vec<String> =
        one.iter().map(|e| format!("{} {}", e["ph"].as_str().unwrap(), e["name"].as_str().unwrap())).collect();
    assert_eq!(shape, ["B outer", "i Every", "B inner", "i Every", "E inner", "E outer", "i SpanExit"]);
    let on_one: Vec<&Printed> = printed.iter().filter(|p| p.thread == "T1").collect();
    assert_eq!(on_one.len(), one.len());
    for (e, p) in one.iter().zip(&on_one) {
        assert_eq!(ts_ns(e), p.ns, "{e}");
        check_args(&e["args"], p).unwrap_or_else(|why| panic!("{e}: {why}"));
    }
    let every = &one[1]["args"];
    assert_eq!(every["p"], "0xffffffffffffffff");
    assert_eq!(every["w"], "18446744073709551615");
    assert_eq!(every["u"], json!(u32::MAX));
    assert_eq!(every["i"], "-9223372036854775808");
    assert_eq!(every["d"], "NaN");
    assert_eq!(every["s"], "nul\u{0}here \u{FFFD} \"q\" \\");
    assert_eq!(one[1]["ts"].as_f64(), Some(0.003), "10 ticks at 3 GHz: 3 ns, truncated as print does");
    assert_eq!(one[2]["ts"].as_f64(), Some(1_000_000.0));
    assert_eq!(names(&trace, "thread_name")[&(4242, 2)], "io");
    // `a` exits while `b` (entered inside it) is open: `b` ends with it, marked unended,
    // and `b`'s own exit, with nothing open, stays an instant.
    let two: Vec<String> = all[&(4242, 2)]
        .iter()
        .filter(|e| e["name"] != "Poll")
        .map(|e| format!("{} {} {}", e["ph"].as_str().unwrap(), e["name"].as_str().unwrap(), ts_ns(e)))
        .collect();
    assert_eq!(two, ["i ThreadName 0", "B a 0", "B b 1", "E b 16", "E a 16", "i SpanExit 20"]);
    assert_eq!(all[&(4242, 2)].iter().find(|e| e["ph"] == "E").unwrap()["args"]["unended"], true);

    // A damaged block costs its events only.
    let damaged = d.join("damaged.evt");
    damaged_copy(&log, &damaged, 1);
    let out = d.join("damaged.json");
    let run = common::run(&["export", "--to", "chrome", damaged.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0));
    assert!(stderr(&run).contains("skipped 1 damaged block, 1 record of an unknown code"), "{}", stderr(&run));
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        tracks(&trace).keys().copied().collect::<Vec<_>>(),
        [(4242, 1)],
        "thread 2's block is lost, thread 1's is whole"
    );
}

/// The export merges by the log's block index as `print` does: a block whose records start
/// before its `base_time` puts one event out of time order, and the export says so (an
/// export once said nothing of events it could not put in order); every event is exported.
#[test]
fn events_exported_out_of_time_order_are_said() {
    let d = dir("chrome-early");
    let log = d.join("early.evt");
    early_record_log(&log);
    let out = d.join("early.json");
    let run = common::run(&["export", "--to", "chrome", log.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0), "a warning, not an error");
    assert!(
        stderr(&run)
            .contains("1 events exported out of time order: a block has records earlier than the time its header says"),
        "{}",
        stderr(&run)
    );
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let said: Vec<i128> = events(&trace).iter().filter(|e| e["name"] == "Message").map(ts_ns).collect();
    assert_eq!(said.len(), 7, "every event is exported");
    assert!(said.windows(2).any(|w| w[0] > w[1]), "{said:?}");
    // By the window alone, in order and nothing to say.
    let run =
        common::run(&["export", "--to", "chrome", "--window-only", log.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(run.status.success() && stderr(&run).is_empty(), "{}", stderr(&run));
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let said: Vec<i128> = events(&trace).iter().filter(|e| e["name"] == "Message").map(ts_ns).collect();
    assert_eq!(said.len(), 7);
    assert!(said.windows(2).all(|w| w[0] <= w[1]), "{said:?}");
    // An export in order says nothing.
    let sample = d.join("sample.evt");
    sample_log(&sample);
    let run =
        common::run(&["export", "--to", "chrome", sample.to_str().unwrap(), "-o", d.join("s.json").to_str().unwrap()]);
    assert!(!stderr(&run).contains("out of time order"), "{}", stderr(&run));
}

#[test]
fn errors_are_one_line_and_leave_no_file() {
    let d = dir("chrome-errors");
    let log = d.join("ok.evt");
    handmade_log(&log, event_format::wire::Order::Little);
    let out = d.join("never.json");
    let cases: [(&str, Vec<String>); 3] = [
        ("missing log", vec![d.join("missing.evt").display().to_string(), "-o".into(), out.display().to_string()]),
        (
            "not a log",
            vec![concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml").into(), "-o".into(), out.display().to_string()],
        ),
        ("out is a directory", vec![log.display().to_string(), "-o".into(), d.display().to_string()]),
    ];
    for (what, args) in cases {
        let mut all = vec!["export".to_owned(), "--to".into(), "chrome".into()];
        all.extend(args);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let run = run(&all);
        assert_eq!(run.status.code(), Some(1), "{what}");
        let err = stderr(&run);
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.starts_with("event-dump: ") && !err.contains("panicked"), "{what}: {err}");
    }
    assert!(!out.exists());
    assert!(std::fs::read_dir(&d).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().ends_with(".partial")));
}

/// Jobs that begin on one thread and end on another, interleaved (an async runtime's tasks,
/// a pool's jobs), are async slices paired by their `id`: every begin has its end, each
/// slice lasts exactly its own job's time, none is unended and no End is left an instant;
/// the `StepBegin`/`StepEnd` of each thread, without an `id`, stay per-thread slices.
#[test]
fn tasks_that_migrate_between_threads_are_async_slices_paired_by_id() {
    let dir = common::dir("chrome-jobs");
    let log = dir.join("jobs.evt");
    common::migrating_jobs_log(&log);
    let trace = export(&[log.to_str().unwrap()], &dir.join("jobs.json"));
    let all: Vec<&Value> = events(&trace).iter().filter(|e| e["ph"] != "M").collect();

    let begins: Vec<&Value> = all.iter().copied().filter(|e| e["ph"] == "b").collect();
    let ends: Vec<&Value> = all.iter().copied().filter(|e| e["ph"] == "e").collect();
    assert_eq!(begins.len() as u64, JOBS, "one async begin per job");
    assert_eq!(ends.len() as u64, JOBS, "one async end per job");
    assert!(all.iter().all(|e| e["ph"] != "i" || e["name"] == "ThreadName"), "no End left an instant");
    assert!(all.iter().all(|e| e["args"].get("unended").is_none()), "no unended slice");

    let mut by_id: BTreeMap<String, &Value> = BTreeMap::new();
    for b in &begins {
        assert_eq!(b["name"], "Job");
        assert_eq!(b["scope"], "Job");
        assert_eq!(b["cat"], "Job");
        let id = b["id2"]["local"].as_str().expect("a process-local id").to_owned();
        assert!(by_id.insert(id, b).is_none(), "each job its own id: {b}");
    }
    let mut migrated = 0;
    for e in &ends {
        let id = e["id2"]["local"].as_str().unwrap();
        let b = by_id.remove(id).unwrap_or_else(|| panic!("an end without its begin: {e}"));
        assert_eq!((&e["name"], &e["cat"], &e["pid"]), (&b["name"], &b["cat"], &b["pid"]));
        // The job's own id, in both events' args: the pairing is the right one.
        let job = b["args"]["id"].as_u64().unwrap();
        assert_eq!(e["args"]["id"].as_u64(), Some(job), "{b} paired with {e}");
        let (begin, end, on, off) = common::job_times(job);
        assert_eq!((ts_ns(b), ts_ns(e)), (i128::from(begin), i128::from(end)), "job {job}'s duration");
        assert_eq!((b["tid"].as_u64(), e["tid"].as_u64()), (Some(on), Some(off)));
        migrated += usize::from(on != off);
    }
    assert!(by_id.is_empty(), "begins never ended: {by_id:?}");
    assert_eq!(migrated as u64, JOBS, "every job moved to another thread");

    // Per-thread slices without an id are as before.
    for tid in 1..=4u64 {
        let steps: Vec<&Value> = all.iter().copied().filter(|e| e["name"] == "Step" && e["tid"] == tid).collect();
        assert_eq!(steps.len(), 2, "{steps:?}");
        assert_eq!((&steps[0]["ph"], &steps[1]["ph"]), (&json!("B"), &json!("E")));
        assert_eq!(steps[1]["args"]["n"], tid, "ended by its own thread's StepEnd");
    }
}

/// An async begin never ended ends at its log's last event, marked unended; an end whose
/// id nothing began is an instant.
#[test]
fn an_async_slice_never_ended_is_marked_and_an_unbegun_end_is_an_instant() {
    use event_format::wire::{BlockHeader, BlockWriter, Header, Order, Text, Value as Wire};
    let dir = common::dir("chrome-jobs-unended");
    let log = dir.join("unended.evt");
    let schema = event_format::def::parse(JOBS_DEF, "jobs.def").unwrap();
    let mut bytes =
        Header::with_sets(wire_is_own(schema), 1024, handmade_clock(), handmade_producer()).encode().unwrap();
    let t0 = handmade_clock().start_ticks;
    let mut block =
        BlockWriter::new(Order::NATIVE, 1024, &BlockHeader { thread: 1, base_time: t0, ..Default::default() });
    block.push(0x0001, t0 + 3, &[Wire::Word(5), Wire::Unsigned(1), Wire::Str(Text::new("never ends"))]).unwrap();
    block.push(0x0002, t0 + 6, &[Wire::Word(6), Wire::Bool(true), Wire::Double(0.0)]).unwrap();
    block.push(0x0003, t0 + 3_000_000_000, &[Wire::Unsigned(1)]).unwrap();
    bytes.extend(block.finish());
    std::fs::write(&log, bytes).unwrap();
    let trace = export(&[log.to_str().unwrap()], &dir.join("unended.json"));
    let all: Vec<&Value> = events(&trace).iter().filter(|e| e["ph"] != "M").collect();
    let end = all.iter().find(|e| e["ph"] == "e").expect("the unended slice ends");
    assert_eq!(end["args"]["unended"], true);
    assert_eq!(ts_ns(end), 1_000_000_000, "at the log's last event");
    let instant = all.iter().find(|e| e["ph"] == "i" && e["name"] == "JobEnd").expect("an instant");
    assert_eq!(instant["args"]["id"], 6);
}

/// The `tracing` fixtures of format 2.1.1 and 2.1.2 (tests/data) hold the same span and
/// events; 2.1.1's writer put a `SpanCurrent(0)` before the span's `SpanClose`, 2.1.2's puts
/// it before the event after it (span records take no mark). The export reads both alike:
/// the same slices and events, the same `span` arguments, on every track.
#[test]
fn the_tracing_fixtures_of_2_1_1_and_2_1_2_export_alike() {
    let d = dir("chrome-tracing-versions");
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data");
    let traces: Vec<Value> = ["v2.1.1", "v2.1.2"]
        .iter()
        .map(|v| export(&[&format!("{data}/{v}/tracing-le.evt")], &d.join(format!("{v}.json"))))
        .collect();
    let (old, new) = (tracks(&traces[0]), tracks(&traces[1]));
    assert!(old.values().map(Vec::len).sum::<usize>() >= 5, "the fixture's events are exported: {old:?}");
    assert_eq!(old, new);
}
