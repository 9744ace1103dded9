//! `export --to perfetto` as a user runs it, read back with Perfetto's own Python classes
//! (`perfetto_trace_pb2` of the PyPI package `perfetto`, on `protobuf`): on the test
//! program of events.def's declarations ([`meanings_log`]), every event `print --format
//! json` shows is, in the same order, the packets its meaning makes (an instant, a slice's
//! begin or end on its thread's track or its span's async track, a sample of each counter),
//! at the same time, with the same name, category and arguments, and the flows link what
//! the declarations say; Chrome's slices and counters are Perfetto's; several logs are
//! processes on one time line; a log that declares nothing keeps the naming convention;
//! spans never ended and ends never begun are counted and said, never given a time; errors
//! are one line.
//!
//! The Python script resolves the trace as trace_processor does: packets deflated in a
//! packet's `compressed_packets` inflated (by Python's zlib) and read in its place, interned
//! strings by sequence (cleared with `SEQ_INCREMENTAL_STATE_CLEARED`), timestamps on the
//! sequence's incremental clock (or absolute on another), tracks by their descriptors; it
//! fails on a name or track used before it was given. Without the package (`pip install perfetto
//! protobuf`) the tests that need it print "skipped" and pass, unless
//! `EVENT_REQUIRE_PERFETTO=1` (CI) makes its absence a failure.

use crate::common::{self, *};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::Path;
use std::process::Command;

/// Resolves a trace (argv[1]) into JSON: `tracks` by uuid (the last description of each,
/// and how many it had), `cleared` (how many packets cleared the interned state),
/// `deflated` and `plain` (how many of the trace's own packets held deflated packets, and
/// how many did not) and `events` in packet order, each `[ts, type, track, name,
/// categories, args, flow_ids, terminating_flow_ids, counter]`; args are `[name, [kind,
/// value]]`, kind one of Perfetto's value fields (`pointer`, `uint`, `int`, `double` as its
/// `repr`, `bool`, `string`, `dict`).
const SCRIPT: &str = r#"
import json, sys, zlib
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

trace = pb.Trace()
with open(sys.argv[1], 'rb') as f:
    trace.ParseFromString(f.read())
deflated = sum(1 for p in trace.packet if p.HasField('compressed_packets'))
plain = len(trace.packet) - deflated

def packets(trace):
    # A packet of deflated packets is read as those packets, in its place (and nothing
    # else of it, as trace_processor does).
    for p in trace.packet:
        if p.HasField('compressed_packets'):
            inner = pb.Trace()
            inner.ParseFromString(zlib.decompress(p.compressed_packets))
            yield from packets(inner)
        else:
            yield p

INCREMENTAL = 64
tables = {}
defaults_clock = None
last = None
tracks = {}
events = []
cleared = 0

def need(table, iid):
    if iid not in tables.get(table, {}):
        raise SystemExit('%s iid %d used before it was interned' % (table, iid))
    return tables[table][iid]

def value(a):
    kind = a.WhichOneof('value')
    if kind is None and len(a.dict_entries) > 0:
        return ['dict', {e.name: value(e) for e in a.dict_entries}]
    if kind == 'string_value_iid':
        return ['string', need('strings', a.string_value_iid)]
    if kind == 'double_value':
        return ['double', repr(a.double_value)]
    return [kind[:-len('_value')], getattr(a, kind)]

for p in packets(trace):
    if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
        tables = {}
        cleared += 1
    if p.HasField('trace_packet_defaults'):
        defaults_clock = p.trace_packet_defaults.timestamp_clock_id
    if p.HasField('interned_data'):
        if not p.trusted_packet_sequence_id:
            raise SystemExit('interned data without a sequence')
        d = p.interned_data
        for table, entries, field in [('names', d.event_names, 'name'), ('categories', d.event_categories, 'name'),
                                      ('keys', d.debug_annotation_names, 'name'),
                                      ('strings', d.debug_annotation_string_values, 'str')]:
            for e in entries:
                v = getattr(e, field)
                tables.setdefault(table, {})[e.iid] = v.decode('utf-8') if isinstance(v, bytes) else v
    if p.HasField('clock_snapshot'):
        for c in p.clock_snapshot.clocks:
            if c.clock_id == INCREMENTAL and c.is_incremental:
                last = c.timestamp
        continue
    if p.HasField('track_descriptor'):
        d = p.track_descriptor
        t = tracks.setdefault(d.uuid, {'descriptions': 0})
        t['descriptions'] += 1
        t['name'] = d.name if d.HasField('name') else None
        t['parent'] = d.parent_uuid if d.HasField('parent_uuid') else None
        if d.HasField('process'):
            t['pid'], t['process_name'] = d.process.pid, d.process.process_name
        if d.HasField('thread'):
            t['pid'], t['tid'], t['thread_name'] = d.thread.pid, d.thread.tid, d.thread.thread_name
        if d.HasField('counter'):
            t['counter'] = True
            t['unit'] = pb.CounterDescriptor.Unit.Name(d.counter.unit)
            t['unit_name'] = d.counter.unit_name
        continue
    if not p.HasField('track_event'):
        continue
    clock = p.timestamp_clock_id or defaults_clock
    if clock == INCREMENTAL:
        last += p.timestamp
        ts = last
    else:
        ts = p.timestamp
    e = p.track_event
    if e.track_uuid not in tracks:
        raise SystemExit('track %d used before it was described' % e.track_uuid)
    name = need('names', e.name_iid) if e.HasField('name_iid') else None
    counter = None
    if e.HasField('counter_value'):
        counter = ['int', e.counter_value]
    elif e.HasField('double_counter_value'):
        counter = ['double', repr(e.double_counter_value)]
    events.append([ts, pb.TrackEvent.Type.Name(e.type), e.track_uuid, name,
                   [need('categories', i) for i in e.category_iids],
                   [[need('keys', a.name_iid), value(a)] for a in e.debug_annotations],
                   list(e.flow_ids), list(e.terminating_flow_ids), counter])
print(json.dumps({'tracks': {str(k): v for k, v in tracks.items()}, 'events': events, 'cleared': cleared,
                  'deflated': deflated, 'plain': plain}))
"#;

/// Whether Perfetto's Python classes can be imported; when they cannot, says so (past the
/// test harness's capture) or fails when `EVENT_REQUIRE_PERFETTO=1`.
fn perfetto_available() -> bool {
    let import = "from perfetto.protos.perfetto.trace import perfetto_trace_pb2";
    let ok = Command::new("python3").args(["-c", import]).output().is_ok_and(|o| o.status.success());
    if ok {
        return true;
    }
    assert!(
        std::env::var("EVENT_REQUIRE_PERFETTO").as_deref() != Ok("1"),
        "Perfetto's Python package not found, and EVENT_REQUIRE_PERFETTO=1 requires it (pip install perfetto protobuf)"
    );
    let _ = writeln!(std::io::stderr(), "skipped: Perfetto's Python package not found (pip install perfetto protobuf)");
    false
}

/// A track of the trace.
#[derive(Debug, Clone, Default)]
struct Track {
    name: Option<String>,
    parent: Option<u64>,
    pid: Option<u64>,
    tid: Option<u64>,
    process_name: Option<String>,
    thread_name: Option<String>,
    counter: bool,
    unit: String,
    unit_name: String,
    descriptions: u64,
}

/// A track event of the trace, resolved.
#[derive(Debug, Clone)]
struct Ev {
    ts: i128,
    kind: String,
    track: u64,
    name: Option<String>,
    categories: Vec<String>,
    args: Vec<(String, Value)>,
    flows: Vec<u64>,
    terminating: Vec<u64>,
    counter: Option<Value>,
}

impl Ev {
    fn arg(&self, name: &str) -> Option<&Value> {
        self.args.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

struct Trace {
    tracks: BTreeMap<u64, Track>,
    events: Vec<Ev>,
    /// Packets that cleared the sequence's interned state (the first one included).
    cleared: u64,
    /// The trace's own packets that hold deflated packets, and those that do not.
    deflated: u64,
    plain: u64,
}

/// Exports `logs` to `out` (which must not exist) and returns the run's stderr.
fn export(logs: &[&Path], out: &Path) -> String {
    let mut args = vec!["export", "--to", "perfetto"];
    args.extend(logs.iter().map(|l| l.to_str().unwrap()));
    args.extend(["-o", out.to_str().unwrap()]);
    let run = run(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    stderr(&run)
}

/// Reads `out` with Perfetto's classes.
fn read(out: &Path) -> Trace {
    let run = Command::new("python3").args(["-c", SCRIPT, out.to_str().unwrap()]).output().unwrap();
    assert!(run.status.success(), "Perfetto's classes could not read {}: {}", out.display(), stderr(&run));
    let v: Value = serde_json::from_slice(&run.stdout).unwrap();
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let tracks = v["tracks"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(uuid, t)| {
            let track = Track {
                name: text(&t["name"]),
                parent: t["parent"].as_u64(),
                pid: t["pid"].as_u64(),
                tid: t["tid"].as_u64(),
                process_name: text(&t["process_name"]),
                thread_name: text(&t["thread_name"]),
                counter: t["counter"] == json!(true),
                unit: text(&t["unit"]).unwrap_or_default(),
                unit_name: text(&t["unit_name"]).unwrap_or_default(),
                descriptions: t["descriptions"].as_u64().unwrap(),
            };
            (uuid.parse().unwrap(), track)
        })
        .collect();
    let events = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| Ev {
            ts: i128::from(e[0].as_u64().unwrap()),
            kind: e[1].as_str().unwrap().trim_start_matches("TYPE_").to_owned(),
            track: e[2].as_u64().unwrap(),
            name: text(&e[3]),
            categories: e[4].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_owned()).collect(),
            args: e[5].as_array().unwrap().iter().map(|a| (a[0].as_str().unwrap().to_owned(), a[1].clone())).collect(),
            flows: e[6].as_array().unwrap().iter().map(|f| f.as_u64().unwrap()).collect(),
            terminating: e[7].as_array().unwrap().iter().map(|f| f.as_u64().unwrap()).collect(),
            counter: (!e[8].is_null()).then(|| e[8].clone()),
        })
        .collect();
    let count = |key: &str| v[key].as_u64().unwrap();
    Trace { tracks, events, cleared: count("cleared"), deflated: count("deflated"), plain: count("plain") }
}

/// Whether a Perfetto value (`[kind, value]`) says what `print --format json` printed.
fn same_value(perfetto: &Value, printed: &Value) -> bool {
    let (kind, v) = (perfetto[0].as_str().unwrap(), &perfetto[1]);
    let number = |p: &Value| p.as_str().map_or_else(|| p.to_string(), str::to_owned);
    match kind {
        "pointer" => printed.as_str() == Some(&format!("{:#x}", v.as_u64().unwrap())),
        "uint" | "int" => number(printed) == *v.to_string(),
        "double" => {
            let ours: f64 = v.as_str().unwrap().parse().unwrap();
            let theirs = match printed {
                Value::String(s) => match s.as_str() {
                    "NaN" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    _ => return false,
                },
                p => p.as_f64().unwrap(),
            };
            ours == theirs || (ours.is_nan() && theirs.is_nan())
        }
        "bool" => printed == v,
        "string" => printed == v,
        _ => false,
    }
}

/// Whether an event's annotations are `printed`'s arguments and labels (`print`'s JSON
/// holds them by name, not in order).
fn check_args(ev: &Ev, printed: &Printed) -> Result<(), String> {
    let mut expected: BTreeMap<String, Value> = BTreeMap::new();
    for (name, value) in &printed.args {
        expected.insert(name.clone(), value.clone());
        if let Some(label) = printed.labels.get(name) {
            expected.insert(format!("{name} (label)"), label.clone());
        }
    }
    if ev.args.len() != expected.len() {
        return Err(format!(
            "{} annotations, {} printed: {:?} against {:?}",
            ev.args.len(),
            expected.len(),
            ev.args,
            expected
        ));
    }
    for (name, value) in &ev.args {
        let Some(printed) = expected.get(name) else { return Err(format!("{name} was not printed")) };
        if !same_value(value, printed) {
            return Err(format!("{name} = {value} against {printed}"));
        }
    }
    Ok(())
}

/// What the test program's declarations (events.def) make of each printed event, checked
/// packet by packet, in order; returns the flows' ids by the events that begin them.
fn check_program(trace: &Trace, printed: &[Printed], pid: u64) -> BTreeMap<String, Vec<u64>> {
    let process = trace.tracks.iter().find(|(_, t)| t.pid == Some(pid) && t.process_name.is_some()).map(|(u, _)| *u);
    let process = process.expect("a process track");
    let thread_of = |track: u64| {
        let t = &trace.tracks[&track];
        assert_eq!(t.pid, Some(pid), "{t:?}: a thread of the process");
        format!("T{}", t.tid.unwrap())
    };
    let mut events = trace.events.iter().filter(|e| {
        trace.tracks[&e.track].pid == Some(pid) || {
            let t = &trace.tracks[&e.track];
            t.parent == Some(process)
        }
    });
    let mut sweeps: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut segments: BTreeMap<String, u64> = BTreeMap::new();
    let mut releases: BTreeMap<String, u64> = BTreeMap::new();
    let mut flows: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut seen_flows = BTreeSet::new();
    for p in printed {
        let mut next = || events.next().unwrap_or_else(|| panic!("no packet for {p:?}"));
        let e = next();
        assert_eq!(e.ts, p.ns, "{e:?}: the time of {p:?}");
        let instant = |e: &Ev| {
            assert_eq!((e.kind.as_str(), e.name.as_deref()), ("INSTANT", Some(p.event.as_str())), "{p:?}");
            assert_eq!(thread_of(e.track), p.thread, "{e:?}");
            assert_eq!(e.categories, std::slice::from_ref(&p.kind), "{e:?}");
        };
        match p.event.as_str() {
            "SweepBegin" => {
                assert_eq!((e.kind.as_str(), e.name.as_deref()), ("SLICE_BEGIN", Some("Sweep")), "{p:?}");
                assert_eq!(thread_of(e.track), p.thread);
                assert_eq!(e.categories, ["Sweep"]);
                sweeps.entry(p.thread.clone()).or_default().push(e.track);
            }
            "SweepEnd" => match sweeps.get_mut(&p.thread).and_then(Vec::pop) {
                Some(track) => {
                    assert_eq!((e.kind.as_str(), e.track, &e.name), ("SLICE_END", track, &None), "{p:?}");
                    assert!(e.categories.is_empty());
                }
                None => instant(e),
            },
            "SegAlloc" => {
                assert_eq!((e.kind.as_str(), e.name.as_deref()), ("SLICE_BEGIN", Some("Segment")), "{p:?}");
                let track = &trace.tracks[&e.track];
                assert_eq!((track.parent, track.name.as_deref()), (Some(process), Some("Segment")), "an async track");
                let seg = p.args["seg"].as_str().unwrap().to_owned();
                assert!(segments.values().all(|&t| t != e.track), "a track of its own while it is open");
                segments.insert(seg, e.track);
            }
            "SegFree" => {
                let seg = p.args["seg"].as_str().unwrap();
                match segments.remove(seg) {
                    Some(track) => assert_eq!((e.kind.as_str(), e.track), ("SLICE_END", track), "{p:?}"),
                    None => instant(e),
                }
                // A step of the `release` flow of its pool: the one its PoolFinish began.
                let pool = p.args["pool"].as_str().unwrap().to_owned();
                let id = *releases.entry(pool.clone()).or_insert_with(|| e.flows.first().copied().unwrap_or(0));
                assert_eq!((&e.flows, &e.terminating), (&vec![id], &vec![]), "{p:?}");
                flows.entry(pool).or_default().push(id);
            }
            "PoolFinish" => {
                instant(e);
                assert_eq!(e.flows.len(), 1, "{e:?}: the release flow begins");
                assert!(seen_flows.insert(e.flows[0]), "a new piece of work");
                releases.insert(p.args["pool"].as_str().unwrap().to_owned(), e.flows[0]);
            }
            "ArenaPoll" => {
                // Two counters: `committed` (with the event's arguments), then `load`.
                let track = &trace.tracks[&e.track];
                assert_eq!(
                    (e.kind.as_str(), track.name.as_deref(), track.parent),
                    ("COUNTER", Some("committed"), Some(process))
                );
                assert!(track.counter && track.unit == "UNIT_SIZE_BYTES", "{track:?}");
                assert!(same_value(&json!(["uint", e.counter.as_ref().unwrap()[1]]), &p.args["committed"]), "{e:?}");
                check_args(e, p).unwrap_or_else(|why| panic!("{p:?}: {why}"));
                let load = next();
                let track = &trace.tracks[&load.track];
                assert_eq!((load.kind.as_str(), track.name.as_deref(), load.ts), ("COUNTER", Some("load"), p.ns));
                assert_eq!((track.unit.as_str(), track.unit_name.as_str()), ("UNIT_UNSPECIFIED", ""));
                assert!(same_value(load.counter.as_ref().unwrap(), &p.args["load"]), "{load:?}");
                assert!(load.args.is_empty());
                continue;
            }
            _ => instant(e),
        }
        check_args(e, p).unwrap_or_else(|why| panic!("{p:?}: {why}"));
    }
    assert!(events.next().is_none(), "no packet more than print's events make");
    flows
}

#[test]
fn the_test_program_exports_packet_by_packet_as_print_shows_it() {
    if !perfetto_available() {
        return;
    }
    let d = common::dir("perfetto-program");
    let log = d.join("program.evt");
    meanings_log(&log);
    let out = d.join("program.pftrace");
    let err = export(&[&log], &out);
    // Never ended: main's last Sweep and the segment the main thread kept; never begun:
    // main's first SweepEnd and SegFree.
    assert!(err.contains("2 spans never ended") && err.contains("2 span ends with no open span"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let trace = read(&out);
    let printed = print_json(&[log.to_str().unwrap()]);
    let pid = u64::from(std::process::id());
    let flows = check_program(&trace, &printed, pid);
    // Each worker's pool's segments were freed on the next thread, stepping on the flow its
    // PoolFinish began (checked packet by packet); the SegFree of a pool that never finished
    // began a piece of its own.
    assert_eq!(flows.len(), 5, "{flows:?}");
    assert_eq!(flows.values().map(Vec::len).sum::<usize>(), 1 + 1 + 2 + 3 + 3);

    // Every thread is a track named by its ThreadName; the process by its program.
    let threads: BTreeSet<String> =
        trace.tracks.values().filter_map(|t| t.thread_name.clone()).filter(|n| n.starts_with("worker-")).collect();
    assert_eq!(threads.len(), 4, "{threads:?}");
    let process = trace.tracks.values().find(|t| t.process_name.is_some()).unwrap();
    assert_eq!((process.pid, process.descriptions), (Some(pid), 1));

    // Slices: each worker's inner Sweep nests in its outer one, lasting what print says.
    let slices = slices(&trace);
    for w in 0..4i128 {
        let thread =
            trace.tracks.iter().find(|(_, t)| t.thread_name.as_deref() == Some(&*format!("worker-{w}"))).unwrap();
        let tid = format!("T{}", thread.1.tid.unwrap());
        let on: Vec<&Printed> = printed.iter().filter(|p| p.thread == tid && p.event.starts_with("Sweep")).collect();
        let (outer, inner) = (on[0].ns, on[1].ns);
        let (inner_end, outer_end) = (on[on.len() - 2].ns, on[on.len() - 1].ns);
        let mine: Vec<&Slice> = slices.iter().filter(|s| s.track == *thread.0).collect();
        assert_eq!(mine.len(), 2, "{mine:?}");
        assert_eq!((mine[0].start, mine[0].end, mine[0].depth), (inner, Some(inner_end), 1));
        assert_eq!((mine[1].start, mine[1].end, mine[1].depth), (outer, Some(outer_end), 0));
        assert!(outer_end - outer > 3 * w + 2, "durations differ by worker");
    }
    // Segment spans begin on one worker and end on the next: their async tracks, no more
    // of them than were open at once.
    let segments: Vec<&Slice> = slices.iter().filter(|s| s.name == "Segment").collect();
    assert_eq!(segments.len(), 1 + 2 + 3 + 4);
    assert_eq!(segments.iter().filter(|s| s.end.is_none()).count(), 1, "one never ended: left open");
    let lanes: BTreeSet<u64> = segments.iter().map(|s| s.track).collect();
    assert_eq!(lanes.len(), 4, "as many tracks as segments open at once");
    // No slice was given a time it did not have: the unended ones have no end.
    let unended: Vec<&Slice> = slices.iter().filter(|s| s.end.is_none()).collect();
    assert_eq!(unended.len(), 2, "{unended:?}");
}

/// A slice of the trace: its track, name, start, end (none for one never ended), depth on
/// its track, and whether an enclosing end cut it.
#[derive(Debug, Clone, PartialEq)]
struct Slice {
    track: u64,
    name: String,
    start: i128,
    end: Option<i128>,
    depth: usize,
    cut: bool,
}

/// The slices of the trace, by its begin and end packets (a track's slices nest), in the
/// order they end (those never ended last).
fn slices(trace: &Trace) -> Vec<Slice> {
    let mut open: BTreeMap<u64, Vec<(String, i128)>> = BTreeMap::new();
    let mut done = Vec::new();
    for e in &trace.events {
        match e.kind.as_str() {
            "SLICE_BEGIN" => open.entry(e.track).or_default().push((e.name.clone().unwrap(), e.ts)),
            "SLICE_END" => {
                let stack = open.get_mut(&e.track).expect("an end on a track with a slice open");
                let (name, start) = stack.pop().expect("an end with a slice open");
                let cut = e.arg("unended") == Some(&json!(["bool", true]));
                done.push(Slice { track: e.track, name, start, end: Some(e.ts), depth: stack.len(), cut });
            }
            _ => {}
        }
    }
    for (track, stack) in open {
        for (depth, (name, start)) in stack.into_iter().enumerate() {
            done.push(Slice { track, name, start, end: None, depth, cut: false });
        }
    }
    done
}

/// Counter samples by counter: (time, value).
type Samples = BTreeMap<String, Vec<(i128, Value)>>;

/// The slices of a Chrome trace: (name, start, end) of those its events pair, by thread
/// track (`B`/`E`) or async id (`b`/`e`), leaving out those marked unended; and its counter
/// samples, by series.
fn chrome_slices(trace: &Value) -> (Vec<(String, i128, i128)>, Samples) {
    let ns = |e: &Value| (e["ts"].as_f64().unwrap() * 1000.0).round() as i128;
    let mut threads: BTreeMap<(u64, u64), Vec<&Value>> = BTreeMap::new();
    let mut asyncs: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    let mut slices = Vec::new();
    let mut counters = Samples::new();
    for e in trace["traceEvents"].as_array().unwrap() {
        let thread = || (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let begun = match e["ph"].as_str().unwrap() {
            "B" => {
                threads.entry(thread()).or_default().push(e);
                continue;
            }
            "b" => {
                asyncs.entry(e["id2"]["local"].as_str().unwrap().to_owned()).or_default().push(e);
                continue;
            }
            "E" => threads.get_mut(&thread()).and_then(Vec::pop).expect("an E with a B open"),
            "e" => asyncs.get_mut(e["id2"]["local"].as_str().unwrap()).and_then(Vec::pop).expect("an e with a b open"),
            "C" => {
                for (series, value) in e["args"].as_object().unwrap() {
                    counters.entry(series.clone()).or_default().push((ns(e), value.clone()));
                }
                continue;
            }
            _ => continue,
        };
        if e["args"]["unended"] != json!(true) {
            slices.push((begun["name"].as_str().unwrap().to_owned(), ns(begun), ns(e)));
        }
    }
    (slices, counters)
}

#[test]
fn chrome_shows_the_slices_and_counters_perfetto_shows() {
    if !perfetto_available() {
        return;
    }
    let d = common::dir("perfetto-chrome");
    let log = d.join("program.evt");
    meanings_log(&log);
    let out = d.join("program.pftrace");
    export(&[&log], &out);
    let trace = read(&out);
    let json_out = d.join("program.json");
    let run = run(&["export", "--to", "chrome", log.to_str().unwrap(), "-o", json_out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(stderr(&run).contains("2 spans never ended"), "{}", stderr(&run));
    let chrome: Value = serde_json::from_str(&std::fs::read_to_string(&json_out).unwrap()).unwrap();
    let (mut chrome_slices, chrome_counters) = chrome_slices(&chrome);
    let mut ours: Vec<(String, i128, i128)> =
        slices(&trace).into_iter().filter_map(|s| Some((s.name, s.start, s.end?))).collect();
    chrome_slices.sort();
    ours.sort();
    assert_eq!(chrome_slices, ours);
    assert_eq!(ours.len(), 8 + 9, "4 workers' 2 Sweeps, 9 of the 10 Segments");
    // Each counter's samples: Chrome's series against Perfetto's counter track.
    let mut samples = Samples::new();
    for e in trace.events.iter().filter(|e| e.kind == "COUNTER") {
        let name = trace.tracks[&e.track].name.clone().unwrap();
        samples.entry(name).or_default().push((e.ts, e.counter.clone().unwrap()));
    }
    assert_eq!(samples.keys().collect::<Vec<_>>(), ["committed", "load"]);
    assert_eq!(chrome_counters.keys().collect::<Vec<_>>(), ["committed", "load"]);
    for (name, values) in &samples {
        let theirs = &chrome_counters[name];
        assert_eq!(values.len(), theirs.len(), "{name}");
        assert_eq!(values.len(), 1 + 2 + 3 + 4 + 1, "{name}: every ArenaPoll");
        for ((ts, ours), (their_ts, theirs)) in values.iter().zip(theirs) {
            assert_eq!(ts, their_ts, "{name}");
            assert!(same_value(ours, theirs), "{name}: {ours} against {theirs}");
        }
    }
}

#[test]
fn several_logs_are_processes_on_one_time_line() {
    if !perfetto_available() {
        return;
    }
    let d = common::dir("perfetto-two");
    let (a, b) = (d.join("a.evt"), d.join("b.evt"));
    meanings_log(&a);
    sample_log(&b);
    let out = d.join("two.pftrace");
    export(&[&a, &b], &out);
    let trace = read(&out);
    let processes: Vec<&Track> = trace.tracks.values().filter(|t| t.process_name.is_some()).collect();
    assert_eq!(processes.len(), 2);
    let real = u64::from(std::process::id());
    // The first log keeps its pid; the second, of the same process, gets the next number
    // and its name says the real one (and, both logs being of one program, host and pid,
    // each name ends with its recording id: docs/OUTPUT.md, "Who wrote a log").
    let pids: Vec<u64> = processes.iter().map(|p| p.pid.unwrap()).collect();
    assert_eq!(pids, [real, real + 1]);
    let names: Vec<&str> = processes.iter().map(|p| p.process_name.as_deref().unwrap()).collect();
    assert!(names.iter().all(|n| n.contains(&format!(" (pid {real}) ["))), "{names:?}");
    assert_ne!(names[0], names[1]);
    // Each process holds its log's events, at its log's times (both deterministic clocks
    // start at wall time 0), in the order print merges them.
    check_program(&trace, &print_json(&[a.to_str().unwrap()]), real);
    let printed_b = print_json(&[b.to_str().unwrap()]);
    let theirs: Vec<&Ev> =
        trace.events.iter().filter(|e| trace.tracks[&e.track].pid == Some(real + 1) && e.kind == "INSTANT").collect();
    let spans = ["SweepBegin", "SweepEnd", "ArenaPoll"];
    let instants: Vec<&Printed> = printed_b.iter().filter(|p| !spans.contains(&p.event.as_str())).collect();
    assert_eq!(theirs.len(), instants.len() + 1, "and the SweepEnd that closed nothing");
    // The merged order is the time order of both.
    assert!(trace.events.windows(2).all(|w| w[0].ts <= w[1].ts));
}

#[test]
fn a_log_that_declares_nothing_keeps_the_convention() {
    if !perfetto_available() {
        return;
    }
    let d = common::dir("perfetto-jobs");
    let log = d.join("jobs.evt");
    common::migrating_jobs_log(&log);
    let out = d.join("jobs.pftrace");
    let err = export(&[&log], &out);
    assert!(err.is_empty(), "{err}");
    let trace = read(&out);
    let slices = slices(&trace);
    let jobs: Vec<&Slice> = slices.iter().filter(|s| s.name == "Job").collect();
    assert_eq!(jobs.len() as u64, JOBS);
    // Each job lasts exactly its own time, on an async track of its process named Job.
    let begins: Vec<&Ev> =
        trace.events.iter().filter(|e| e.kind == "SLICE_BEGIN" && e.name.as_deref() == Some("Job")).collect();
    for (job, begin) in begins.iter().enumerate() {
        let id = begin.arg("id").unwrap()[1].as_u64().unwrap();
        let (start, end, _, _) = job_times(id);
        let slice = jobs.iter().find(|s| s.start == i128::from(start) && s.track == begin.track).unwrap();
        assert_eq!(slice.end, Some(i128::from(end)), "job {job}");
        assert_eq!(trace.tracks[&begin.track].name.as_deref(), Some("Job"));
        assert!(trace.tracks[&begin.track].tid.is_none(), "an async track, not a thread's");
    }
    // Steps, without an id, are slices of their threads.
    let steps: Vec<&Slice> = slices.iter().filter(|s| s.name == "Step").collect();
    assert_eq!(steps.len(), 4);
    assert!(steps.iter().all(|s| trace.tracks[&s.track].tid.is_some() && s.end == Some(1_000_000)));
    // Thread 2 is named compactor.
    assert!(trace.tracks.values().any(|t| t.tid == Some(2) && t.thread_name.as_deref() == Some("compactor")));
}

#[test]
fn spans_cut_and_unmatched_are_said_and_never_given_a_time() {
    if !perfetto_available() {
        return;
    }
    let d = common::dir("perfetto-handmade");
    let log = d.join("handmade.evt");
    handmade_log(&log, event_format::wire::Order::Big);
    let out = d.join("handmade.pftrace");
    let err = export(&[&log], &out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("skipped 1 record of an unknown code"), "{err}");
    assert!(err.contains("1 span never ended") && err.contains("2 span ends with no open span"), "{err}");
    let trace = read(&out);
    let printed = print_json(&[log.to_str().unwrap()]);
    let slices = slices(&trace);
    let on = |tid: u64| -> Vec<&Slice> { slices.iter().filter(|s| trace.tracks[&s.track].tid == Some(tid)).collect() };
    // Thread 1: `inner` nests in `outer`, named by the spans' names; the exit of a span
    // never entered is an instant.
    let one = on(1);
    assert_eq!(one.iter().map(|s| (s.name.as_str(), s.depth)).collect::<Vec<_>>(), [("inner", 1), ("outer", 0)]);
    let exits: Vec<&Ev> =
        trace.events.iter().filter(|e| e.kind == "INSTANT" && e.name.as_deref() == Some("SpanExit")).collect();
    assert_eq!(exits.len(), 2);
    // Thread 2: `a` exits while `b`, entered inside it, is open: `b` is cut, ending with
    // `a` on the track (as its nesting requires), marked; its own exit is an instant.
    let two = on(2);
    assert_eq!(two.len(), 2);
    assert_eq!((two[0].name.as_str(), two[0].cut, two[0].end), ("b", true, Some(16)));
    assert_eq!((two[1].name.as_str(), two[1].cut, two[1].end), ("a", false, Some(16)));
    // Every event's time and arguments are print's (the double NaN and the bytes that are
    // not UTF-8 included).
    let instants: Vec<&Ev> =
        trace.events.iter().filter(|e| e.kind == "INSTANT" && e.name.as_deref() == Some("Every")).collect();
    let every: Vec<&Printed> = printed.iter().filter(|p| p.event == "Every").collect();
    assert_eq!(instants.len(), every.len());
    for (e, p) in instants.iter().zip(every) {
        assert_eq!(e.ts, p.ns);
        check_args(e, p).unwrap_or_else(|why| panic!("{why}"));
    }
}

/// More distinct strings than the interned tables hold (16 MiB): the sequence's state is
/// cleared and interning starts again, and every string still reads back as print shows it.
#[test]
fn the_interned_strings_are_bounded() {
    if !perfetto_available() {
        return;
    }
    let d = common::dir("perfetto-strings");
    let log = d.join("strings.evt");
    {
        let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        // 20 MB flat out: the thread waits for the writer rather than losing events when the
        // writer, sharing the machine with the rest of the suite, falls behind.
        let recording = event_runtime::Recorder::new()
            .file(&log)
            .deterministic_clock()
            .wait(std::time::Duration::from_secs(30))
            .start()
            .unwrap();
        for i in 0..20_000u64 {
            let phase = format!("{i:>1000}");
            event!(ClientPhase, phase.as_str(), i, -1);
        }
        recording.stop().unwrap();
    }
    let out = d.join("strings.pftrace");
    export(&[&log], &out);
    let trace = read(&out);
    assert!(trace.cleared >= 2, "the state was cleared once at least after the first: {}", trace.cleared);
    // 20 MB of strings: packets deflated a chunk (1 MiB) at a time, each chunk whole packets.
    assert!(trace.deflated >= 10 && trace.plain == 0, "{} deflated, {} plain", trace.deflated, trace.plain);
    let printed: Vec<Printed> =
        print_json(&[log.to_str().unwrap()]).into_iter().filter(|p| p.event == "ClientPhase").collect();
    let phases: Vec<&Ev> = trace.events.iter().filter(|e| e.name.as_deref() == Some("ClientPhase")).collect();
    assert_eq!(phases.len(), 20_000);
    for (e, p) in phases.iter().zip(&printed) {
        check_args(e, p).unwrap_or_else(|why| panic!("{why}"));
    }
}

/// Inflates the deflated packets of a trace (argv[1]) with Python's zlib and writes them,
/// as a `Trace`'s bytes, to argv[2].
const INFLATE: &str = r#"
import sys, zlib
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
trace = pb.Trace()
with open(sys.argv[1], 'rb') as f:
    trace.ParseFromString(f.read())
with open(sys.argv[2], 'wb') as f:
    for p in trace.packet:
        f.write(zlib.decompress(p.compressed_packets))
"#;

/// By default the packets are deflated, in packets of their own that hold nothing else;
/// `--uncompressed` writes the same packets as they are, byte for byte; deflated, a fifth
/// of the Chrome JSON of the same log at most (issue 34).
#[test]
fn the_packets_are_deflated_unless_uncompressed() {
    if !perfetto_available() {
        return;
    }
    let d = common::dir("perfetto-deflated");
    let log = d.join("program.evt");
    meanings_log(&log);
    let deflated = d.join("deflated.pftrace");
    export(&[&log], &deflated);
    let plain = d.join("plain.pftrace");
    let run_p =
        run(&["export", "--to", "perfetto", "--uncompressed", log.to_str().unwrap(), "-o", plain.to_str().unwrap()]);
    assert!(run_p.status.success(), "{}", stderr(&run_p));
    let (ours, theirs) = (read(&deflated), read(&plain));
    assert_eq!((ours.deflated, ours.plain), (1, 0), "one chunk of this small log");
    assert_eq!(theirs.deflated, 0);
    // Every packet: the state's, the tracks' descriptions, the events'.
    let descriptions: u64 = theirs.tracks.values().map(|t| t.descriptions).sum();
    assert_eq!(theirs.plain, theirs.cleared + descriptions + theirs.events.len() as u64);
    let inflated = d.join("inflated.pftrace");
    let args = ["-c", INFLATE, deflated.to_str().unwrap(), inflated.to_str().unwrap()];
    let run_i = Command::new("python3").args(args).output().unwrap();
    assert!(run_i.status.success(), "{}", stderr(&run_i));
    let (inflated, plain_bytes) = (std::fs::read(&inflated).unwrap(), std::fs::read(&plain).unwrap());
    assert!(inflated == plain_bytes, "the inflated packets are the uncompressed trace's bytes");
    let json_out = d.join("program.json");
    let run_c = run(&["export", "--to", "chrome", log.to_str().unwrap(), "-o", json_out.to_str().unwrap()]);
    assert!(run_c.status.success(), "{}", stderr(&run_c));
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    let (deflated, plain, chrome) = (size(&deflated), size(&plain), size(&json_out));
    assert!(deflated * 5 <= chrome, "{deflated} bytes against Chrome's {chrome}");
    // (The test program's log is small, its strings each said once: less than on a long log.)
    assert!(deflated * 2 < plain, "{deflated} bytes against {plain} uncompressed");
}

#[test]
fn errors_are_one_line_and_leave_no_file() {
    let d = common::dir("perfetto-errors");
    let log = d.join("ok.evt");
    handmade_log(&log, event_format::wire::Order::Little);
    let out = d.join("never.pftrace");
    for (what, args) in [
        ("missing log", vec![d.join("missing.evt").display().to_string(), "-o".into(), out.display().to_string()]),
        ("out is a directory", vec![log.display().to_string(), "-o".into(), d.display().to_string()]),
        (
            "uncompressed is perfetto's",
            vec!["--uncompressed".into(), log.display().to_string(), "-o".into(), out.display().to_string()],
        ),
    ] {
        let mut all = vec![
            "export".to_owned(),
            "--to".into(),
            if what.starts_with("uncompressed") { "chrome" } else { "perfetto" }.into(),
        ];
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

/// With a window (`--since` just at a thread's inner span, `--until` before the last spans
/// end), Perfetto's slices are Chrome's: a span by its begin, whole; the outer span begun
/// before `--since` has no slice and its end is an instant; no span is left open.
#[test]
fn a_window_gives_the_slices_chrome_gives() {
    if !perfetto_available() {
        return;
    }
    let d = common::dir("perfetto-window");
    let log = d.join("program.evt");
    program_log(&log, false);
    let printed = print_json(&[log.to_str().unwrap()]);
    let inner = printed.iter().find(|p| p.event == "SweepBegin" && p.args.values().any(|v| v == "inner")).unwrap();
    let seconds = |ns: i128| format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    let last = printed.iter().rev().find(|p| p.event == "SweepBegin").unwrap();
    let window = ["--since".to_owned(), seconds(inner.ns), "--until".to_owned(), seconds(last.ns + 1)];
    let window: Vec<&str> = window.iter().map(String::as_str).collect();
    let out = d.join("window.pftrace");
    let mut args = vec!["export", "--to", "perfetto", log.to_str().unwrap(), "-o", out.to_str().unwrap()];
    args.extend_from_slice(&window);
    let run_p = run(&args);
    assert!(run_p.status.success(), "{}", stderr(&run_p));
    assert!(stderr(&run_p).contains("1 span end whose begin the choice left out, exported as an instant"));
    let trace = read(&out);
    assert!(trace.events.iter().all(|e| e.ts >= inner.ns), "nothing before --since");
    let json_out = d.join("window.json");
    let mut args = vec!["export", "--to", "chrome", log.to_str().unwrap(), "-o", json_out.to_str().unwrap()];
    args.extend_from_slice(&window);
    let run_c = run(&args);
    assert!(run_c.status.success(), "{}", stderr(&run_c));
    let chrome: Value = serde_json::from_str(&std::fs::read_to_string(&json_out).unwrap()).unwrap();
    let (mut theirs, _) = chrome_slices(&chrome);
    let mut ours: Vec<(String, i128, i128)> =
        slices(&trace).into_iter().map(|s| (s.name, s.start, s.end.expect("every slice ends"))).collect();
    theirs.sort();
    ours.sort();
    assert_eq!(ours, theirs);
    assert!(ours.iter().any(|s| s.2 > last.ns + 1), "a span begun in the window ends after it: {ours:?}");
    let outer = printed.iter().find(|p| p.event == "SweepBegin" && p.thread == inner.thread).unwrap();
    assert!(!ours.iter().any(|s| s.1 == outer.ns), "the span begun before --since has no slice");
}
