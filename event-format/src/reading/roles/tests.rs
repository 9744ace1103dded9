use super::*;
use crate::codec::wire::{SetEntry, Text};

fn sets(defs: &[&str]) -> Vec<SetEntry> {
    SetEntry::assign(defs.iter().map(|d| event_def::def::parse(d, "events.def").expect("a good events.def")))
}

const CONVENTION: &str = "VERSION(1, 0, 0)\nKIND(K, \"k\")\n\
    RELATION(SweepBegin, 1, TRUE, K, W, pool)\nRELATION(SweepEnd, 2, TRUE, K, W, pool)\n\
    RELATION(JobBegin, 3, TRUE, K, WS, id, what)\nRELATION(JobEnd, 4, TRUE, K, W, id)\n\
    RELATION(Begin, 5, TRUE, K, 0)\nRELATION(Ending, 6, TRUE, K, 0)\nRELATION(LoneBegin, 7, TRUE, K, 0)\n\
    RELATION(SpanEnter, 8, TRUE, K, WS, span, name)\n";

const DECLARED: &str = "SET(app)\nVERSION(1, 0, 0)\nKIND(K, \"k\")\n\
    RELATION(SweepBegin, 1, TRUE, K, W, pool)\nRELATION(SweepEnd, 2, TRUE, K, W, pool)\n\
    RELATION(Accept, 3, TRUE, K, WU, conn, fd)\nRELATION(Handle, 4, TRUE, K, UW, fd, conn)\n\
    RELATION(Stats, 5, TRUE, K, WD, depth, load)\nRELATION(Phase, 6, TRUE, K, 0)\n\
    SPAN(request, Accept, Handle, conn)\nSPAN(first, SweepBegin, Phase)\nSPAN(second, Phase, SweepEnd)\n\
    COUNTER(depth, Stats, depth, \"items\")\nCOUNTER(load, Stats, load)\n\
    FLOW(conn, Accept, fd, BEGIN)\nFLOW(conn, Handle, fd, END)\n";

fn wire(sets: &[SetEntry], set: usize, code: u16) -> u16 {
    sets[set].wire_code_of(code).expect("an event of the set")
}

#[test]
fn a_set_that_declares_nothing_follows_the_convention() {
    let sets = sets(&[CONVENTION]);
    let roles = Roles::new(&sets);
    let sweep = roles.span_named("Sweep").expect("SweepBegin/SweepEnd");
    assert_eq!(roles.span(sweep).source, SpanSource::Convention);
    assert!(!roles.span(sweep).is_async);
    let begin = roles.of(wire(&sets, 0, 1)).expect("a role");
    assert_eq!(begin.begins, Some(SpanUse { span: sweep, pairing: Pairing::Thread }));
    assert_eq!(roles.of(wire(&sets, 0, 2)).unwrap().ends, Some(SpanUse { span: sweep, pairing: Pairing::Thread }));
    // Each event pairs by its own `id`: JobBegin and JobEnd have one, at different places.
    let job = roles.span_named("Job").expect("JobBegin/JobEnd");
    assert!(roles.span(job).is_async);
    assert_eq!(roles.of(wire(&sets, 0, 3)).unwrap().begins.unwrap().pairing, Pairing::Async { param: 0 });
    assert_eq!(roles.of(wire(&sets, 0, 4)).unwrap().ends.unwrap().pairing, Pairing::Async { param: 0 });
    // No name before Begin, a name that only contains End, and a Begin without an End: as
    // the Chrome export always read them, the last is a span that never ends.
    assert!(roles.of(wire(&sets, 0, 5)).is_none());
    assert!(roles.of(wire(&sets, 0, 6)).is_none());
    assert!(roles.of(wire(&sets, 0, 7)).is_some_and(|r| r.begins.is_some()));
    // A set's own SpanEnter of the tracing format pairs as the built-in one does.
    let tracing = roles.of(wire(&sets, 0, 8)).unwrap().begins.unwrap();
    assert_eq!(tracing.pairing, Pairing::Tracing);
    assert_eq!(roles.of(builtin::SPAN_ENTER).unwrap().begins, Some(tracing));
    assert_eq!(roles.of(builtin::SPAN_EXIT).unwrap().ends.unwrap().span, tracing.span);
    assert!(roles.of(builtin::MESSAGE).is_none());
    assert!(roles.counters().is_empty() && roles.flows().is_empty());
}

#[test]
fn a_set_that_declares_follows_its_declarations_only() {
    let sets = sets(&[DECLARED, CONVENTION]);
    let roles = Roles::new(&sets);
    // Names are qualified by set in a log of two sets; app's SweepBegin/End are not the
    // convention's span but its declared `first` and `second`.
    assert_eq!(roles.span_named("app:Sweep"), None);
    let first = roles.span_named("app:first").unwrap();
    let second = roles.span_named("app:second").unwrap();
    let phase = roles.of(wire(&sets, 0, 6)).unwrap();
    assert_eq!(phase.ends.unwrap().span, first, "Phase ends `first`...");
    assert_eq!(phase.begins.unwrap().span, second, "... and begins `second`");
    let request = roles.span_named("app:request").unwrap();
    assert!(roles.span(request).is_async);
    assert_eq!(roles.of(wire(&sets, 0, 3)).unwrap().begins.unwrap().pairing, Pairing::Async { param: 0 });
    assert_eq!(roles.of(wire(&sets, 0, 4)).unwrap().ends.unwrap().pairing, Pairing::Async { param: 1 });
    let stats = roles.of(wire(&sets, 0, 5)).unwrap();
    assert!(!stats.is_span());
    let counters: Vec<(&str, &str, usize)> = stats
        .counters
        .iter()
        .map(|c| {
            (
                roles.counters()[c.counter as usize].name.as_str(),
                roles.counters()[c.counter as usize].unit.as_str(),
                c.param,
            )
        })
        .collect();
    assert_eq!(counters, [("app:depth", "items", 0), ("app:load", "", 1)]);
    let accept = &roles.of(wire(&sets, 0, 3)).unwrap().flows;
    let handle = &roles.of(wire(&sets, 0, 4)).unwrap().flows;
    assert_eq!(accept[0].flow, handle[0].flow, "one flow, by name");
    assert_eq!((accept[0].param, accept[0].step), (1, FlowStep::Begin));
    assert_eq!((handle[0].param, handle[0].step), (0, FlowStep::End));
    assert_eq!(roles.flows()[0].name, "app:conn");
    // By set and own code, as a typed reader knows its events.
    assert_eq!(roles.of_code("app", 6), Some(phase));
    assert_eq!(roles.of_code("app", 7), None);
    assert_eq!(
        roles.of_code(&sets[1].schema.name, 1).and_then(|r| r.begins).map(|b| b.span),
        Some(roles.of(wire(&sets, 1, 1)).unwrap().begins.unwrap().span)
    );
    // The other set still follows the convention, within itself.
    let theirs = roles.of(wire(&sets, 1, 1)).unwrap().begins.unwrap();
    assert_eq!(roles.span(theirs.span).source, SpanSource::Convention);
    assert_eq!(roles.span(theirs.span).name, format!("{}:Sweep", sets[1].schema.name));
}

#[test]
fn keys_come_from_values() {
    let sets = sets(&[DECLARED]);
    let roles = Roles::new(&sets);
    let begin = roles.of(wire(&sets, 0, 3)).unwrap().begins.unwrap();
    let end = roles.of(wire(&sets, 0, 4)).unwrap().ends.unwrap();
    let a = roles.key_of(&begin, &[Value::Word(7), Value::Unsigned(3)]).unwrap();
    let b = roles.key_of(&end, &[Value::Unsigned(3), Value::Word(7)]).unwrap();
    assert_eq!(a, b, "the same id, whatever its place");
    assert_eq!(IdValue::of(&Value::Signed(7)), IdValue::of(&Value::Pointer(7)), "equal values of two letters");
    assert_ne!(IdValue::of(&Value::Signed(-1)), IdValue::of(&Value::Word(u64::MAX)));
    assert_eq!(IdValue::of(&Value::Str(Text::new("x"))), IdValue::Bytes(b"x"[..].into()));
    let tracing = Roles::new(&[]);
    let enter = tracing.of(builtin::SPAN_ENTER).unwrap().begins.unwrap();
    let key = tracing.key_of(&enter, &[Value::Word(9), Value::Str(Text::new("fetch"))]);
    assert_eq!(key, Some(SpanKey::Tracing(9)));
    assert_eq!(tracing.key_of(&enter, &[Value::Word(9)]), None, "no name: no span");
}

#[test]
fn a_threads_spans_nest_and_an_end_cuts_what_it_encloses() {
    let (a, b) = (SpanKey::Thread(0), SpanKey::Thread(1));
    let mut p = Pairer::new();
    p.begin(1, a.clone(), "a1");
    p.begin(1, b.clone(), "b");
    p.begin(1, a.clone(), "a2");
    p.begin(2, a.clone(), "other thread");
    p.begin(2, SpanKey::Async(0, IdValue::Unsigned(1)), "async: on no thread");
    assert_eq!(p.innermost_mut(1).map(|s| *s), Some("a2"));
    assert_eq!(p.innermost_mut(2).map(|s| *s), Some("other thread"));
    assert_eq!(p.innermost_mut(3), None);
    // The innermost `a` of thread 1.
    assert_eq!(p.end(1, &a), Some(Ended { begin: "a2", cut: vec![] }));
    assert_eq!(p.innermost_mut(1).map(|s| *s), Some("b"), "what a2 was inside");
    // The outer `a` ends: `b`, begun inside it and open, is cut.
    assert_eq!(p.end(1, &a), Some(Ended { begin: "a1", cut: vec!["b"] }));
    assert_eq!(p.end(1, &b), None, "b was cut: its end closes nothing");
    assert_eq!(p.end(3, &a), None, "another thread's span is not this one's");
    assert_eq!(p.unmatched(), 2);
    let left = p.finish();
    assert_eq!(left.threads, vec![(2, vec![(a, "other thread")])]);
    assert_eq!(left.len(), 2);
}

#[test]
fn async_spans_pair_by_id_across_threads_latest_first() {
    let key = |id: u64| SpanKey::Async(0, IdValue::Unsigned(id));
    let mut p = Pairer::new();
    p.begin(1, key(5), "5 first");
    p.begin(2, key(5), "5 second");
    p.begin(1, key(6), "6");
    p.begin(1, SpanKey::Thread(1), "thread span");
    assert_eq!(p.end(3, &key(5)), Some(Ended { begin: "5 second", cut: vec![] }));
    // An async end cuts nothing on its thread.
    assert_eq!(p.end(1, &key(6)), Some(Ended { begin: "6", cut: vec![] }));
    assert_eq!(p.end(1, &key(7)), None);
    assert_eq!(p.open(), 2);
    let left = p.finish();
    assert_eq!(left.asyncs, vec![(key(5), vec!["5 first"])]);
    assert_eq!(left.threads.len(), 1);
}

#[test]
fn open_spans_are_bounded() {
    let mut p = Pairer::with_limits(4, 8);
    for i in 0..7u64 {
        p.begin(1, SpanKey::Thread(0), i);
    }
    assert_eq!((p.given_up(), p.open()), (3, 4), "a thread's oldest spans are given up");
    assert_eq!(p.end(1, &SpanKey::Thread(0)), Some(Ended { begin: 6, cut: vec![] }));
    let mut p = Pairer::with_limits(4, 8);
    for i in 0..10u64 {
        p.begin(1, SpanKey::Async(0, IdValue::Unsigned(i)), i);
    }
    assert_eq!((p.given_up(), p.open()), (2, 8));
    assert_eq!(p.end(2, &SpanKey::Async(0, IdValue::Unsigned(0))), None, "the oldest was given up");
    assert!(p.end(2, &SpanKey::Async(0, IdValue::Unsigned(2))).is_some());
}

#[test]
fn flows_link_pieces_of_work() {
    let id = |v: u64| IdValue::Unsigned(v);
    let mut f = Flows::new();
    let begin = f.step(0, id(1), FlowStep::Begin).unwrap();
    assert_eq!(begin, FlowLink { serial: 1, incoming: false, outgoing: true });
    assert_eq!(f.step(0, id(1), FlowStep::Step), Some(FlowLink { serial: 1, incoming: true, outgoing: true }));
    assert_eq!(f.step(1, id(1), FlowStep::End), None, "another flow of the same id has none open");
    assert_eq!(f.step(0, id(1), FlowStep::End), Some(FlowLink { serial: 1, incoming: true, outgoing: false }));
    assert_eq!(f.step(0, id(1), FlowStep::End), None, "ended");
    // A step with none open starts a piece; a later begin of the same id starts another.
    assert_eq!(f.step(0, id(1), FlowStep::Step).unwrap().serial, 2);
    assert_eq!(f.step(0, id(1), FlowStep::Begin).unwrap().serial, 3);
    assert_eq!(f.step(0, id(1), FlowStep::End).unwrap().serial, 3);
}

#[test]
fn open_pieces_of_work_are_bounded() {
    let mut f = Flows::with_limit(2);
    for id in 0..3 {
        f.step(0, IdValue::Unsigned(id), FlowStep::Begin);
    }
    assert_eq!(f.forgotten(), 1);
    assert_eq!(f.step(0, IdValue::Unsigned(0), FlowStep::End), None, "the oldest was forgotten");
    assert_eq!(f.step(0, IdValue::Unsigned(2), FlowStep::End).map(|l| l.serial), Some(3));
}
