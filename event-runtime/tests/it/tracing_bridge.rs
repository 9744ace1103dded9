//! The `tracing` bridge (feature `tracing`): tracing events and spans recorded through
//! `EventLayer` and decoded with event-format, with their levels, targets, texts, span ids,
//! parents, names, fields, records and the marks that name each record's span, on two
//! threads; a span's fields once however often it is entered (in a capture); entries and
//! exits only when asked for; follows-from; nothing recorded while no recording runs; long
//! texts cut and flagged; a field that logs while it is formatted; an empty event set; the
//! bridge and the program's own event set in one recording.
//!
//! A process has one recording at a time, so the tests take turns (`serial`).
#![cfg(feature = "tracing")]
#![deny(warnings)]

use crate::serial;
use event_format::builtin;
use event_format::decode::{Catalog, Decoder, Entry};
use event_format::wire::{STRING_MAX, Value};
use event_runtime::Recorder;
use event_runtime::tracing_bridge::{EVENTS, EventLayer};
use std::sync::{Arc, Barrier};
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt as _;

fn dispatch() -> Dispatch {
    Dispatch::new(tracing_subscriber::registry().with(EventLayer::new()))
}

/// A decoded tracing record.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Event { level: u32, target: String, text: String },
    Enter { span: u64, name: String, fields: String },
    Exit { span: u64, name: String },
    Open { span: u64, parent: u64, name: String, fields: String },
    Close { span: u64 },
    Record { span: u64, fields: String },
    Follows { span: u64, follows: u64 },
    Current { span: u64 },
}

/// The tracing records of `stream`, per thread in recording order, and the strings that were
/// flagged as cut.
fn decode(stream: &[u8]) -> (Vec<(u64, Seen)>, Vec<String>) {
    let mut decoder = Decoder::new(stream).expect("the recorder writes a valid header");
    let catalog = Catalog::new(&decoder.header().sets);
    let mut seen = Vec::new();
    let mut cut = Vec::new();
    while let Some(block) = decoder.next_block() {
        let block = block.expect("no damaged block");
        for entry in block.entries(&catalog) {
            let Entry::Event(event) = entry else { panic!("unexpected {entry:?}") };
            let values: Vec<Value<'_>> = event.values().collect();
            let s = |i: usize| match values[i] {
                Value::Str(t) => String::from_utf8(t.bytes.to_vec()).expect("UTF-8"),
                other => panic!("not a string: {other:?}"),
            };
            let w = |i: usize| match values[i] {
                Value::Word(w) => w,
                other => panic!("not a word: {other:?}"),
            };
            for v in &values {
                if let Value::Str(t) = v
                    && t.truncated
                {
                    cut.push(String::from_utf8(t.bytes.to_vec()).expect("UTF-8"));
                }
            }
            let record = match event.desc.code {
                builtin::TRACE_EVENT => {
                    let Value::Unsigned(level) = values[0] else { panic!("level is U") };
                    Seen::Event { level, target: s(1), text: s(2) }
                }
                builtin::SPAN_ENTER => Seen::Enter { span: w(0), name: s(1), fields: s(2) },
                builtin::SPAN_EXIT => Seen::Exit { span: w(0), name: s(1) },
                builtin::SPAN_OPEN => Seen::Open { span: w(0), parent: w(1), name: s(2), fields: s(3) },
                builtin::SPAN_CLOSE => Seen::Close { span: w(0) },
                builtin::SPAN_RECORD => Seen::Record { span: w(0), fields: s(1) },
                builtin::SPAN_FOLLOWS => Seen::Follows { span: w(0), follows: w(1) },
                builtin::SPAN_CURRENT => Seen::Current { span: w(0) },
                // Records by callsite read expanded (docs/FORMAT.md, "Callsites"); one left
                // as it is would fail below.
                builtin::THREAD_NAME => continue,
                other => panic!("unexpected event {other:#x} {}", event.desc.name),
            };
            seen.push((event.thread, record));
        }
    }
    (seen, cut)
}

fn event(level: u32, text: &str) -> Seen {
    Seen::Event { level, target: module_path!().to_owned(), text: text.to_owned() }
}

/// What one worker records: two nested spans, events at every level.
fn work(n: u64, both_inside: &Barrier) {
    let outer = tracing::info_span!("outer", worker = n);
    let _outer = outer.enter();
    tracing::error!(code = 7, "failed {}", n);
    {
        let inner = tracing::debug_span!("inner", step = "load", r#type = tracing::field::Empty);
        inner.record("type", tracing::field::debug('x'));
        let _inner = inner.enter();
        // Both threads are inside both spans here: their ids are live at once.
        both_inside.wait();
        tracing::warn!(path = "/tmp/a b", ok = true, "slow");
        tracing::trace!(n, ratio = 0.5);
    }
    tracing::info!(message = "done");
    tracing::debug!("quoted \"text\" stays as written");
}

#[test]
fn events_and_spans_on_two_threads_are_recorded_with_their_nesting() {
    let _serial = serial();
    let dispatch = dispatch();
    let recording = Recorder::new().sets(&[&EVENTS]).deterministic_clock().memory().start().expect("starts");
    let both_inside = Arc::new(Barrier::new(2));
    let workers: Vec<_> = (1..=2u64)
        .map(|n| {
            let dispatch = dispatch.clone();
            let both_inside = Arc::clone(&both_inside);
            std::thread::spawn(move || tracing::dispatcher::with_default(&dispatch, || work(n, &both_inside)))
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let (seen, cut) = decode(&recording.stop().expect("stops"));
    assert!(cut.is_empty());

    let mut threads: Vec<u64> = seen.iter().map(|(t, _)| *t).collect();
    threads.dedup();
    threads.sort_unstable();
    threads.dedup();
    assert_eq!(threads.len(), 2, "two threads recorded: {seen:?}");
    let mut spans = Vec::new();
    for thread in threads {
        let got: Vec<Seen> = seen.iter().filter(|(t, _)| *t == thread).map(|(_, s)| s.clone()).collect();
        let Seen::Open { span: outer, fields, .. } = &got[0] else { panic!("opens first: {got:?}") };
        let n: u64 = fields.strip_prefix("worker=").and_then(|n| n.parse().ok()).expect("worker=N");
        let Seen::Open { span: inner, .. } = &got[3] else { panic!("opens inner fourth: {got:?}") };
        let (outer, inner) = (*outer, *inner);
        let expected = vec![
            Seen::Open { span: outer, parent: 0, name: "outer".into(), fields: format!("worker={n}") },
            // Entered: the next record is marked with it.
            Seen::Current { span: outer },
            event(1, &format!("failed {n} code=7")),
            // Created inside `outer`: its child, with the fields given (the empty one is not).
            Seen::Open { span: inner, parent: outer, name: "inner".into(), fields: "step=\"load\"".into() },
            Seen::Record { span: inner, fields: "type='x'".into() },
            Seen::Current { span: inner },
            event(2, "slow path=\"/tmp/a b\" ok=true"),
            event(5, &format!("n={n} ratio=0.5")),
            // Left, then dropped: a span record names its span and takes no mark (format
            // 2.1.2); the next event is marked with `outer`, current again.
            Seen::Close { span: inner },
            Seen::Current { span: outer },
            event(3, "done"),
            event(4, "quoted \"text\" stays as written"),
            // Closed outside every span: no `SpanCurrent(0)` before it, no record after it.
            Seen::Close { span: outer },
        ];
        assert_eq!(got, expected, "thread {thread}");
        spans.extend([outer, inner]);
    }
    spans.sort_unstable();
    spans.dedup();
    assert_eq!(spans.len(), 4, "spans alive at once have distinct ids");
}

/// The codes of a block's records as they lie in it, `Callsite`s included (which a reader
/// consumes, as it does `TimeExtend`): a walk of the record headers.
fn raw_codes(block: &event_format::decode::Block) -> Vec<u16> {
    let (records, order) = (&block.records, block.order);
    let mut codes = Vec::new();
    let mut at = 0;
    while records.len().saturating_sub(at) >= 8 {
        codes.push(order.u16(&records[at..]));
        at += usize::from(order.u16(&records[at + 2..])).max(8);
    }
    codes
}

/// The codes of every record of `stream` as they lie in its blocks ([`raw_codes`]).
fn codes(stream: &[u8]) -> Vec<u16> {
    let mut decoder = Decoder::new(stream).expect("the recorder writes a valid header");
    let mut codes = Vec::new();
    while let Some(block) = decoder.next_block() {
        codes.extend(raw_codes(&block.expect("no damaged block")));
    }
    codes
}

/// The raw codes of each block of `stream`, with the block's thread.
fn blocks_codes(stream: &[u8]) -> Vec<(u64, Vec<u16>)> {
    let mut decoder = Decoder::new(stream).expect("the recorder writes a valid header");
    let mut blocks = Vec::new();
    while let Some(block) = decoder.next_block() {
        let block = block.expect("no damaged block");
        blocks.push((block.header.thread, raw_codes(&block)));
    }
    blocks
}

/// Whether a record of `code` belongs to a span by the `SpanCurrent` before it: not a span
/// record, nor one a reader consumes or the recorder writes to open a block.
fn takes_a_mark(code: u16) -> bool {
    !builtin::is_span_record(code)
        && !matches!(code, builtin::CALLSITE | builtin::SPAN_CURRENT | builtin::TIME_EXTEND | builtin::DROPPED)
}

/// Every block of a thread that names spans names its span before its first record that
/// belongs to one, also when that record is the one that filled the block before (a block
/// read alone, a ring's or a segment's, knows its span); and no `SpanCurrent` stands right
/// before a span record or a `Callsite`, which take none (format 2.1.2). Small blocks, a
/// span with many events in it, by callsite and without.
#[test]
fn every_block_names_its_span_before_its_first_record_in_one() {
    let _serial = serial();
    for layer in [EventLayer::new(), EventLayer::new().with_callsites(false)] {
        let dispatch = Dispatch::new(tracing_subscriber::registry().with(layer));
        let recording = Recorder::new()
            .sets(&[&EVENTS])
            .deterministic_clock()
            .block_size(4096)
            .buffer_size(4 << 20)
            .memory()
            .start()
            .expect("starts");
        tracing::dispatcher::with_default(&dispatch, || {
            for round in 0..3u64 {
                let span = tracing::info_span!("request", round);
                let _entered = span.enter();
                for n in 0..700u64 {
                    tracing::info!(n, round, "a step with some text to fill blocks");
                }
            }
        });
        let blocks = blocks_codes(&recording.stop().expect("stops"));
        let mine: Vec<&Vec<u16>> = blocks.iter().filter(|(t, _)| *t == 1).map(|(_, c)| c).collect();
        assert!(mine.len() > 10, "the events fill many blocks: {}", mine.len());
        let mut marked = false;
        for (i, codes) in mine.iter().enumerate() {
            if marked && let Some(first) = codes.iter().position(|&c| takes_a_mark(c)) {
                assert!(
                    codes[..first].contains(&builtin::SPAN_CURRENT),
                    "block {i} of thread 1: its first record in a span comes before its mark: {codes:x?}"
                );
            }
            marked |= codes.contains(&builtin::SPAN_CURRENT);
            for pair in codes.windows(2) {
                assert!(
                    pair[0] != builtin::SPAN_CURRENT || takes_a_mark(pair[1]),
                    "block {i}: a SpanCurrent before {:#x}, which takes none: {codes:x?}",
                    pair[1]
                );
            }
        }
        assert!(marked, "the span was named");
    }
}

/// Spans and events written by callsite (the default) read back as exactly the records the
/// bridge writes without callsites: the same names, targets, levels and fields, byte for
/// byte, with one `Callsite` a callsite and block; every record that names one is expanded.
#[test]
fn records_by_callsite_read_as_the_records_without_them() {
    let _serial = serial();
    let record = |layer: EventLayer| {
        let dispatch = Dispatch::new(tracing_subscriber::registry().with(layer));
        let recording = Recorder::new().sets(&[&EVENTS]).deterministic_clock().memory().start().expect("starts");
        let one = Barrier::new(1);
        tracing::dispatcher::with_default(&dispatch, || {
            for n in 1..=3 {
                work(n, &one);
            }
        });
        recording.stop().expect("stops")
    };
    let by_callsite = record(EventLayer::new());
    let without = record(EventLayer::new().with_callsites(false));
    let strip = |seen: Vec<(u64, Seen)>| seen.into_iter().map(|(_, s)| s).collect::<Vec<_>>();
    let (with_seen, with_cut) = decode(&by_callsite);
    let (without_seen, without_cut) = decode(&without);
    assert!(with_cut.is_empty() && without_cut.is_empty());
    assert_eq!(with_seen.len(), 3 * 13, "{with_seen:?}");
    assert_eq!(strip(with_seen), strip(without_seen));
    // outer, inner, and the five events' callsites, each defined once in the one block.
    let callsites = |stream: &[u8]| codes(stream).iter().filter(|&&c| c == builtin::CALLSITE).count();
    assert_eq!(callsites(&by_callsite), 7);
    assert_eq!(callsites(&without), 0);
}

/// Over many blocks, every block that holds a record by callsite defines that callsite, also
/// where the record itself opened the block and the block ends before the callsite's next
/// record: no record is left unexpanded, so a ring's or a snapshot's blocks read alone. Each
/// round is a 1 KiB event and a block's worth of `event!`s of another size each round, so
/// that the boundary falls between a definition and its event in some rounds.
#[test]
fn every_block_defines_the_callsites_it_names() {
    let _serial = serial();
    let dispatch = dispatch();
    let recording =
        Recorder::new().deterministic_clock().block_size(4096).buffer_size(1 << 22).memory().start().expect("starts");
    let long = "x".repeat(900);
    tracing::dispatcher::with_default(&dispatch, || {
        for n in 0..300u64 {
            tracing::info!(n, "{long}");
            for _ in 0..(180 + n % 41) {
                event!(ArenaDestroy, 0x10usize, n);
            }
        }
    });
    let stream = recording.stop().expect("stops");
    let mut decoder = Decoder::new(&stream[..]).expect("a header");
    let (mut events, mut blocks, mut alone) = (0, 0, 0);
    while let Some(block) = decoder.next_block() {
        let block = block.expect("no damaged block");
        blocks += 1;
        let codes = raw_codes(&block);
        for at in [builtin::SPAN_OPEN_AT, builtin::SPAN_RECORD_AT, builtin::TRACE_EVENT_AT] {
            assert!(!codes.contains(&at), "block {}: a record by callsite left as it is", block.index);
        }
        let here = codes.iter().filter(|&&c| c == builtin::TRACE_EVENT).count();
        events += here;
        // The event opened the block: its definition comes after it.
        let first = codes.iter().position(|&c| c == builtin::TRACE_EVENT);
        let defined = codes.iter().position(|&c| c == builtin::CALLSITE);
        alone += usize::from(matches!((first, defined), (Some(f), Some(d)) if d > f));
    }
    assert_eq!(events, 300);
    assert!(blocks > 300, "{blocks} blocks");
    assert!(alone > 0, "no round put the boundary between a definition and its event");
}

/// A span entered many times (a future polled again and again) has its fields recorded once,
/// at its open, and its later fields once, at their `record()`: in a capture, as a test of a
/// program's own instrumentation would look.
#[test]
fn a_spans_fields_are_recorded_once_however_often_it_is_entered() {
    let _serial = serial();
    tracing::dispatcher::with_default(&dispatch(), || {
        let captured = event_runtime::capture(|| {
            let span = tracing::info_span!("request", id = 7u64, route = "/orders", status = tracing::field::Empty);
            for poll in 0..10u64 {
                let _entered = span.enter();
                tracing::debug!(poll, "polled");
            }
            span.record("status", 200u64);
            for _ in 0..10 {
                let _entered = span.enter();
            }
        });
        // The bridge's records are built-in events: `entries` has them (`names` and
        // `events` are the program's own `event!`s).
        let records: Vec<(String, Vec<Value<'_>>)> = captured
            .entries()
            .into_iter()
            .filter_map(|e| match e {
                Entry::Event(e) => Some((e.desc.name.clone(), e.values().collect())),
                _ => None,
            })
            .collect();
        let named = |name: &str| records.iter().filter(|(n, _)| n == name).map(|(_, v)| v).collect::<Vec<_>>();
        let texts = |values: &Vec<Value<'_>>| -> Vec<String> {
            values
                .iter()
                .filter_map(|v| match v {
                    Value::Str(t) => Some(String::from_utf8_lossy(t.bytes).into_owned()),
                    _ => None,
                })
                .collect()
        };
        let names: Vec<&str> = records.iter().map(|(n, _)| n.as_str()).collect();
        let with_fields: Vec<&str> =
            names.iter().copied().filter(|n| matches!(*n, "SpanOpen" | "SpanRecord" | "SpanEnter")).collect();
        assert_eq!(with_fields, ["SpanOpen", "SpanRecord"], "{names:?}");
        let open = named("SpanOpen")[0];
        assert_eq!(texts(open), ["request", "id=7 route=\"/orders\""]);
        assert_eq!(texts(named("SpanRecord")[0]), ["status=200"]);
        let every_text: Vec<String> = records.iter().flat_map(|(_, v)| texts(v)).collect();
        assert_eq!(every_text.iter().filter(|t| t.contains("route=")).count(), 1, "the fields once: {every_text:?}");
        assert_eq!(named("TraceEvent").len(), 10);
        assert_eq!(named("SpanClose"), [&vec![open[0]]]);
        // The events inside the span name it: each follows a mark of it.
        let mut current = Value::Word(0);
        for (name, values) in &records {
            match name.as_str() {
                "SpanCurrent" => current = values[0],
                "TraceEvent" => assert_eq!(current, open[0], "{names:?}"),
                _ => {}
            }
        }
        // One mark, before the first event: the `SpanRecord` and `SpanClose` made outside the
        // span name it themselves and take none (format 2.1.2), as in a recording.
        assert_eq!(names.iter().filter(|n| **n == "SpanCurrent").count(), 1, "{names:?}");
    });
}

/// With entries asked for, each entry and exit is a `SpanEnter` (with no fields: they are
/// the open's) and a `SpanExit`.
#[test]
fn entries_and_exits_are_recorded_only_when_asked_for() {
    let _serial = serial();
    let dispatch = Dispatch::new(tracing_subscriber::registry().with(EventLayer::new().with_entries(true)));
    tracing::dispatcher::with_default(&dispatch, || {
        let recording = Recorder::new().sets(&[&EVENTS]).deterministic_clock().memory().start().expect("starts");
        let span = tracing::info_span!("poll", n = 1);
        for _ in 0..3 {
            span.in_scope(|| {});
        }
        let id = span.id().expect("enabled").into_u64();
        drop(span);
        let (seen, _) = decode(&recording.stop().expect("stops"));
        let got: Vec<Seen> = seen.into_iter().map(|(_, s)| s).collect();
        // Span records name their span: no `SpanCurrent` around them (format 2.1.2).
        let entry = [
            Seen::Enter { span: id, name: "poll".into(), fields: String::new() },
            Seen::Exit { span: id, name: "poll".into() },
        ];
        let mut expected = vec![Seen::Open { span: id, parent: 0, name: "poll".into(), fields: "n=1".into() }];
        for _ in 0..3 {
            expected.extend(entry.iter().cloned());
        }
        expected.push(Seen::Close { span: id });
        assert_eq!(got, expected);
    });
}

#[test]
fn follows_from_and_explicit_parents_are_recorded() {
    let _serial = serial();
    tracing::dispatcher::with_default(&dispatch(), || {
        let recording = Recorder::new().sets(&[&EVENTS]).deterministic_clock().memory().start().expect("starts");
        let cause = tracing::info_span!("cause");
        let effect = tracing::info_span!(parent: None, "effect");
        effect.follows_from(&cause);
        let child = tracing::info_span!(parent: &cause, "child");
        tracing::info!(parent: &effect, "about the effect");
        let ids: Vec<u64> = [&cause, &effect, &child].map(|s| s.id().expect("enabled").into_u64()).to_vec();
        drop((cause, effect, child));
        let (seen, _) = decode(&recording.stop().expect("stops"));
        let got: Vec<Seen> = seen.into_iter().map(|(_, s)| s).collect();
        let (cause, effect, child) = (ids[0], ids[1], ids[2]);
        assert_eq!(
            &got[..6],
            &[
                Seen::Open { span: cause, parent: 0, name: "cause".into(), fields: String::new() },
                Seen::Open { span: effect, parent: 0, name: "effect".into(), fields: String::new() },
                Seen::Follows { span: effect, follows: cause },
                Seen::Open { span: child, parent: cause, name: "child".into(), fields: String::new() },
                // An event with an explicit parent is marked with it, and the mark undone.
                Seen::Current { span: effect },
                event(3, "about the effect"),
            ]
        );
        // The closes follow, without a `SpanCurrent(0)` before them: span records take none.
        assert!(got[6..].iter().all(|s| matches!(s, Seen::Close { .. })), "{got:?}");
        assert_eq!(got.len(), 9, "{got:?}");
    });
}

#[test]
fn nothing_is_recorded_while_no_recording_runs() {
    let _serial = serial();
    tracing::dispatcher::with_default(&dispatch(), || {
        let before = tracing::info_span!("before", early = 1);
        tracing::info!("not recorded");
        let recording = Recorder::new().sets(&[&EVENTS]).deterministic_clock().memory().start().expect("starts");
        before.in_scope(|| tracing::info!(late = 2, "recorded"));
        let (seen, _) = decode(&recording.stop().expect("stops"));
        tracing::error!("not recorded either");
        let got: Vec<Seen> = seen.into_iter().map(|(_, s)| s).collect();
        let id = before.id().expect("enabled").into_u64();
        assert_eq!(
            got,
            vec![
                // Created before the recording: no open, but its events name it.
                Seen::Current { span: id },
                event(3, "recorded late=2"),
            ]
        );
    });
}

#[test]
fn a_long_text_is_cut_and_flagged() {
    let _serial = serial();
    tracing::dispatcher::with_default(&dispatch(), || {
        let recording = Recorder::new().sets(&[&EVENTS]).deterministic_clock().memory().start().expect("starts");
        let long = "é".repeat(STRING_MAX);
        tracing::info!(extra = 1, "{long}");
        tracing::info_span!("wide", value = long.as_str()).in_scope(|| {});
        let (seen, cut) = decode(&recording.stop().expect("stops"));
        assert_eq!(cut.len(), 2, "the event's text and the span's fields are flagged: {seen:?}");
        for text in &cut {
            assert!(text.len() <= STRING_MAX && text.len() > STRING_MAX - 4, "cut near the maximum: {}", text.len());
        }
        assert!(cut[0].chars().all(|c| c == 'é'), "the message comes first");
        assert!(cut[1].starts_with("value=\"éé"));
    });
}

/// A value whose formatting logs a tracing event itself.
struct Chatty;

impl std::fmt::Debug for Chatty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        tracing::warn!("formatting");
        f.write_str("chatty")
    }
}

#[test]
fn a_field_that_logs_while_formatted_does_not_disturb_the_event() {
    let _serial = serial();
    tracing::dispatcher::with_default(&dispatch(), || {
        let recording = Recorder::new().sets(&[&EVENTS]).deterministic_clock().memory().start().expect("starts");
        tracing::info!(value = ?Chatty, "outer");
        let (seen, _) = decode(&recording.stop().expect("stops"));
        let got: Vec<Seen> = seen.into_iter().map(|(_, s)| s).collect();
        // tracing-core itself does not dispatch an event raised inside a subscriber's
        // callback; the outer event must still come out whole, without a panic.
        // A `Debug` text that is not an integer, float, boolean or string is quoted
        // (event_format::fields), so that `value` reads back by name as one string.
        assert_eq!(got, vec![event(3, "outer value=\"chatty\"")]);
    });
}

#[test]
fn an_empty_event_set_writes_a_stream_that_decodes() {
    let _serial = serial();
    let recording = Recorder::new().sets(&[&EVENTS]).deterministic_clock().memory().start().expect("starts");
    let stream = recording.stop().expect("stops");
    let decoder = Decoder::new(stream.as_slice()).expect("header decodes");
    let schema = &decoder.header().single_set().expect("one set").schema;
    assert_eq!(schema.name, "tracing");
    assert!(schema.kinds.is_empty() && schema.events.is_empty());
    assert_eq!(schema, &EVENTS.schema().expect("parses"));
}

/// A program with an events.def and the bridge records both in one stream: its set (the
/// bridge's events are built-in and need none; its empty set is not registered).
#[test]
fn the_bridge_and_the_programs_event_set_record_together() {
    let _serial = serial();
    let dispatch = dispatch();
    let recording = Recorder::new().deterministic_clock().memory().start().expect("starts");
    tracing::dispatcher::with_default(&dispatch, || {
        event!(ArenaDestroy, 0x10usize, 2u64);
        tracing::warn!("slow");
    });
    let stream = recording.stop().expect("stops");
    let mut decoder = Decoder::new(&stream[..]).expect("the recorder writes a valid header");
    let sets: Vec<String> = decoder.header().sets.iter().map(|s| s.schema.name.clone()).collect();
    assert_eq!(sets, ["event-runtime"], "the program's set alone: EVENTS is not registered");
    let catalog = Catalog::new(&decoder.header().sets);
    let mut names = Vec::new();
    while let Some(block) = decoder.next_block() {
        for entry in block.expect("no damaged block").entries(&catalog) {
            if let Entry::Event(e) = entry
                && e.desc.code != builtin::THREAD_NAME
            {
                names.push(e.desc.name.clone());
            }
        }
    }
    // The event's callsite's definition is consumed as the block is read, as a `TimeExtend`.
    assert_eq!(names, ["ArenaDestroy", "TraceEvent"]);
}

/// A fresh scratch directory of this process's, `name` telling the test's apart.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("event-bridge-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// A `tracing::info!` for each of `numbers`, whose long field names make its record by
/// callsite about a third as long as the record it stands for: a block of them expands past
/// the block.
fn long_infos(numbers: std::ops::Range<u64>) {
    for n in numbers {
        tracing::info!(a_rather_long_field_name = n, another_long_field_name = true, "step");
    }
}

/// Under `ring` with a ring file, a stop copies the file's blocks to the stream sinks (and a
/// snapshot copies them to its file): blocks of `tracing::info!`s by callsite, whose records
/// of format 2.1.0 would not fit a block, are copied as they were written, and read back
/// whole. Before, the copy expanded them and overran the block (a panic in the program).
#[test]
fn a_ring_files_blocks_by_callsite_are_copied_as_written() {
    let _serial = serial();
    let dir = scratch("ring");
    let path = dir.join("trace.ring");
    let dispatch = dispatch();
    let recording = Recorder::new()
        .sets(&[&EVENTS])
        .ring_file(&path)
        .policy(event_runtime::Policy::Ring)
        .block_size(4096)
        .memory()
        .start()
        .expect("starts");
    tracing::dispatcher::with_default(&dispatch, || long_infos(0..2_000));
    let snapshot = dir.join("snap.evt");
    recording.snapshot(&snapshot).expect("a snapshot");
    let stream = recording.stop().expect("stops");
    for bytes in [std::fs::read(&snapshot).expect("the snapshot"), stream] {
        let (seen, cut) = decode(&bytes);
        assert!(cut.is_empty());
        assert_eq!(seen.len(), 2_000, "every event, expanded");
        assert!(seen.iter().all(|(_, s)| matches!(s, Seen::Event { .. })));
    }
    // The ring file itself, read block by block and pending (as `print` reads it): every
    // event expanded either way, and its records as written fit their blocks.
    use event_format::decode::BlockSource as _;
    use event_format::ring::{RingBlocks, RingReader};
    let open = || RingBlocks::new(RingReader::open(std::fs::File::open(&path).unwrap(), Default::default()).unwrap());
    let traced = |block: &event_format::decode::Block| {
        block.records().flatten().filter(|r| r.code == builtin::TRACE_EVENT).count()
    };
    let mut blocks = open();
    let (mut read, mut pending) = (0, 0);
    while let Some(block) = blocks.next_block() {
        read += traced(&block.expect("no damaged block"));
    }
    let mut blocks = open();
    let (mut unpacker, mut spare) = (event_format::wire::Unpacker::new(), Vec::new());
    while let Some(block) = blocks.next_pending() {
        let block = block.expect("no damaged block");
        let written = block.clone().unpack_as_written(&mut unpacker, &mut spare).unwrap();
        assert!(written.records.len() <= 4096 - 48, "as written, the records fit their block");
        pending += traced(&block.unpack(&mut unpacker, &mut spare).unwrap());
    }
    assert_eq!((read, pending), (2_000, 2_000));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A follower of a live ring file shows each `tracing::info!` by callsite once, expanded, at
/// the poll after it was recorded: its place in the block being written is counted in the
/// records as written. Before, it was counted in the expanded records, longer than the
/// file's, and the events of the next polls waited until the block grew past that length.
#[test]
fn a_follower_shows_events_by_callsite_as_they_are_recorded() {
    use event_format::ring::{FollowItem, Follower, RingReader};
    let _serial = serial();
    let dir = scratch("follow");
    let path = dir.join("trace.ring");
    let dispatch = dispatch();
    let recording =
        Recorder::new().sets(&[&EVENTS]).ring_file(&path).policy(event_runtime::Policy::Ring).start().expect("starts");
    let reader = RingReader::open(std::fs::File::open(&path).unwrap(), Default::default()).expect("a ring file");
    let catalog = Catalog::new(&reader.header().sets);
    let mut follower = Follower::new(reader);
    let mut shown = Vec::new();
    tracing::dispatcher::with_default(&dispatch, || {
        for poll in 0..10u64 {
            long_infos(poll * 3..poll * 3 + 3);
            let mut now = Vec::new();
            for item in follower.poll().expect("the ring file reads") {
                if let FollowItem::Records { block, from, .. } = item {
                    for entry in block.entries_from(&catalog, from) {
                        let Entry::Event(event) = entry else { panic!("unexpected {entry:?}") };
                        assert_ne!(event.desc.wire, builtin::TRACE_EVENT_AT, "expanded");
                        if event.desc.wire != builtin::TRACE_EVENT {
                            continue; // the thread's name
                        }
                        let Some(Value::Str(text)) = event.values().nth(2) else { panic!("no text") };
                        now.push(String::from_utf8_lossy(text.bytes).into_owned());
                    }
                }
            }
            assert_eq!(now.len(), 3, "poll {poll}: the three events just recorded, each once: {now:?}");
            shown.extend(now);
        }
    });
    recording.stop().expect("stops");
    for (i, text) in shown.iter().enumerate() {
        assert!(text.contains(&format!("a_rather_long_field_name={i} ")), "{i}: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A snapshot of a streaming recording reads its window back from the event file and copies
/// each block: blocks of `tracing::info!`s by callsite, whose records of format 2.1.0 would not
/// fit a block, are copied as written. Before, the copy took the expanded records and cut
/// them at the block's size: the snapshot's blocks ended in the middle of a record.
#[test]
fn a_streams_snapshot_copies_blocks_by_callsite_as_written() {
    let _serial = serial();
    let dir = scratch("snap");
    let dispatch = dispatch();
    let recording = Recorder::new()
        .sets(&[&EVENTS])
        .file(dir.join("trace.evt"))
        .block_size(4096)
        .buffer_size(1 << 20)
        .start()
        .expect("starts");
    tracing::dispatcher::with_default(&dispatch, || long_infos(0..2_000));
    let snapshot = dir.join("snap.evt");
    let taken = recording.snapshot(&snapshot).expect("a snapshot");
    recording.stop().expect("stops");
    let bytes = std::fs::read(&snapshot).expect("the snapshot");
    let (seen, cut) = decode(&bytes);
    assert!(cut.is_empty());
    let mut decoder = Decoder::new(&bytes[..]).expect("a header");
    let catalog = Catalog::new(&decoder.header().sets);
    let mut events = 0;
    while let Some(block) = decoder.next_block() {
        for entry in block.expect("no damaged block").entries(&catalog) {
            assert!(matches!(entry, Entry::Event(_)), "{entry:?}");
            events += 1;
        }
    }
    assert_eq!(events, taken.events, "every event the snapshot counts reads");
    assert_eq!(seen.len(), 2_000, "the buffer's worth holds them all");
    for (i, (_, s)) in seen.iter().enumerate() {
        let Seen::Event { text, .. } = s else { panic!("{s:?}") };
        assert!(text.starts_with(&format!("step a_rather_long_field_name={i} ")), "{i}: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
