//! The events.def parser and renderer: a file with every feature parses to the exact schema;
//! each kind of mistake gives the error messages in tests/snapshots; rendering parses back to
//! the same schema; no input makes the parser panic.

use event_def::def::{self, DefError, DefErrors};
use event_def::{EventType, Kind, Letter, Retired, Schema, Version};
use proptest::prelude::*;

fn errors(source: &str) -> DefErrors {
    match def::parse(source, "events.def") {
        Ok(schema) => panic!("expected errors, parsed {schema:?}"),
        Err(errors) => errors,
    }
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

mod good {
    //! Files that parse, and the exact schema they give.
    use super::*;
    use Letter::*;

    const EVERY_FEATURE: &str = r#"# A comment line.
VERSION(2, 0x10, 7)   # a comment after a statement

KIND(Arena, "per \"arena\",\\ global\n\tand more")
RELATION(ArenaCreate, 0x0001, TRUE, Arena, PAW, arena, base, size)
RELATION(PoolInit,    2,      FALSE, Pool,  PPS)   # Pool is declared below
RELATION(
    Everything,
    0X00aB,
    TRUE,
    Pool,
    PAWUIDBS,
    p, a, w, u, i, d, b, s,    # a trailing comma
)
RELATION(Poll, 65279, FALSE, Arena, 0,)
KIND(Pool)
  KIND ( Spaced , "" )
RETIRED(OldThing, 0x0005)
RETIRED(Older,7)
"#;

    #[test]
    fn every_feature() {
        let schema = def::parse(EVERY_FEATURE, "events.def").unwrap();
        let expected = Schema {
            name: "events".into(),
            version: Version::new(2, 16, 7),
            kinds: vec![
                Kind { name: "Arena".into(), doc: "per \"arena\",\\ global\n\tand more".into() },
                Kind { name: "Pool".into(), doc: "".into() },
                Kind { name: "Spaced".into(), doc: "".into() },
            ],
            events: vec![
                EventType {
                    name: "ArenaCreate".into(),
                    code: 1,
                    always: true,
                    kind: 0,
                    format: vec![Pointer, Address, Word],
                    params: names(&["arena", "base", "size"]),
                },
                EventType {
                    name: "PoolInit".into(),
                    code: 2,
                    always: false,
                    kind: 1,
                    format: vec![Pointer, Pointer, String],
                    params: names(&["f0", "f1", "f2"]),
                },
                EventType {
                    name: "Everything".into(),
                    code: 0xAB,
                    always: true,
                    kind: 1,
                    format: vec![Pointer, Address, Word, Unsigned, Signed, Double, Bool, String],
                    params: names(&["p", "a", "w", "u", "i", "d", "b", "s"]),
                },
                EventType { name: "Poll".into(), code: 0xFEFF, always: false, kind: 0, format: vec![], params: vec![] },
            ],
            retired: vec![Retired { name: "OldThing".into(), code: 5 }, Retired { name: "Older".into(), code: 7 }],
            ..Schema::default()
        };
        assert_eq!(schema, expected);
        assert_eq!(def::parse(&def::render(&schema), "rendered").unwrap(), schema);
    }

    const MEANINGS: &str = r#"VERSION(1, 0, 0)
KIND(Req)
SPAN(request, ReqBegin, ReqEnd)              # declared before its events: fine
SPAN(job, JobStart, JobDone, id)
COUNTER(queue, QueueDepth, depth, "items")
COUNTER(load, QueueDepth, load)              # no unit
FLOW(conn, ReqBegin, fd, BEGIN)
FLOW(conn, JobStart, fd, STEP)
FLOW(conn, ReqEnd, fd, END)
RELATION(ReqBegin,   1, TRUE, Req, WS, fd, path)
RELATION(ReqEnd,     2, TRUE, Req, WU, fd, status)
RELATION(JobStart,   3, TRUE, Req, WW, id, fd)
RELATION(JobDone,    4, TRUE, Req, W, id)
RELATION(QueueDepth, 5, TRUE, Req, UD, depth, load)
"#;

    /// SPAN, COUNTER and FLOW lines: events by name (declared anywhere in the file), kept by
    /// code, in declaration order; they render and parse back.
    #[test]
    fn spans_counters_and_flows() {
        use event_def::schema::{Counter, Flow, FlowStep, Span};
        let schema = def::parse(MEANINGS, "events.def").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            schema.spans,
            [
                Span { name: "request".into(), begin: 1, end: 2, id: None },
                Span { name: "job".into(), begin: 3, end: 4, id: Some("id".into()) },
            ]
        );
        assert_eq!(
            schema.counters,
            [
                Counter { name: "queue".into(), event: 5, value: "depth".into(), unit: "items".into() },
                Counter { name: "load".into(), event: 5, value: "load".into(), unit: "".into() },
            ]
        );
        let flow = |event, step| Flow { name: "conn".into(), event, id: "fd".into(), step };
        assert_eq!(schema.flows, [flow(1, FlowStep::Begin), flow(3, FlowStep::Step), flow(2, FlowStep::End)]);
        let text = def::render(&schema);
        assert!(text.contains("SPAN(job,     JobStart, JobDone, id)"), "{text}");
        assert!(text.contains("COUNTER(queue, QueueDepth, depth, \"items\")"), "{text}");
        assert!(text.contains("FLOW(conn, ReqEnd,   fd, END)"), "{text}");
        assert_eq!(def::parse(&text, "rendered").unwrap(), schema);
    }

    /// `limit=` on RELATION rows and HISTOGRAM lines: kept by code, in declaration order;
    /// they render and parse back.
    #[test]
    fn limits_and_histograms() {
        use event_def::schema::{Buckets, Histogram, HistogramOf, Limit, Rate};
        let source = format!(
            "{MEANINGS}RELATION(Tick, 6, TRUE, Req, W, n, limit=1000/s)\nRELATION(Tock, 7, TRUE, Req, 0, limit=1/100)\n\
             HISTOGRAM(request_ns, request, HDR3)\nHISTOGRAM(depths, QueueDepth, depth, LOG2)\n"
        );
        let schema = def::parse(&source, "events.def").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            schema.limits,
            [
                Limit { event: 6, rate: Rate::PerPeriod { count: 1000, period_ns: 1_000_000_000 } },
                Limit { event: 7, rate: Rate::Sample { keep: 1, of: 100 } },
            ]
        );
        assert_eq!(
            schema.histograms,
            [
                Histogram {
                    name: "request_ns".into(),
                    of: HistogramOf::Span("request".into()),
                    buckets: Buckets { precision: 3 }
                },
                Histogram {
                    name: "depths".into(),
                    of: HistogramOf::Param { event: 5, param: "depth".into() },
                    buckets: Buckets::LOG2
                },
            ]
        );
        let text = def::render(&schema);
        assert!(text.contains("W,     n, limit=1000/s)"), "{text}");
        assert!(text.contains("0,     limit=1/100)"), "{text}");
        assert!(text.contains("HISTOGRAM(depths,     QueueDepth, depth, LOG2)"), "{text}");
        assert_eq!(def::parse(&text, "rendered").unwrap(), schema);
    }

    #[test]
    fn minimal_files() {
        let schema = def::parse("VERSION(0,0,0)", "events.def").unwrap();
        assert_eq!(schema, Schema { name: "events".into(), ..Schema::default() });
        // A byte-order mark and CRLF line ends are fine.
        let schema = def::parse("\u{feff}VERSION(1, 2, 3)\r\nKIND(A)\r\n", "events.def").unwrap();
        assert_eq!(schema.version, Version::new(1, 2, 3));
        assert_eq!(schema.kinds.len(), 1);
    }

    #[test]
    fn words_of_the_grammar_are_names_where_names_go() {
        let source = "VERSION(1, 0, 0)\nKIND(KIND)\nRELATION(TRUE, 1, FALSE, KIND, P, RELATION)\n";
        let schema = def::parse(source, "events.def").unwrap();
        assert_eq!(schema.kinds[0].name, "KIND");
        assert_eq!(schema.events[0].name, "TRUE");
        assert_eq!(schema.events[0].params, ["RELATION"]);
    }

    #[test]
    fn the_workspace_events_def() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../events.def");
        let source = std::fs::read_to_string(path).unwrap();
        let schema = def::parse(&source, path).unwrap_or_else(|e| panic!("{e}"));
        assert!(!schema.events.is_empty());
        assert_eq!(def::parse(&def::render(&schema), "rendered").unwrap(), schema);
    }
}

mod bad {
    //! One snapshot of the error messages for each kind of mistake; the snapshot's
    //! description is the file.
    use super::*;

    fn check(name: &str, source: &str) {
        let errors = errors(source);
        insta::with_settings!({ description => source, omit_expression => true }, {
            insta::assert_snapshot!(name, errors.to_string());
        });
    }

    const HEAD: &str = "VERSION(1, 0, 0)\nKIND(Arena)\nKIND(Pool)\n";

    #[test]
    fn duplicate_code() {
        check(
            "duplicate_code",
            &format!("{HEAD}RELATION(A, 0x0001, TRUE, Arena, 0)\nRELATION(B, 1, TRUE, Arena, 0)\n"),
        );
    }

    #[test]
    fn duplicate_code_with_retired() {
        check(
            "duplicate_code_with_retired",
            &format!("{HEAD}RELATION(A, 0x0001, TRUE, Arena, 0)\nRETIRED(Gone, 0x0001)\n"),
        );
    }

    #[test]
    fn duplicate_name() {
        check(
            "duplicate_name",
            &format!("{HEAD}RELATION(A, 1, TRUE, Arena, 0)\nRELATION(A, 2, TRUE, Pool, 0)\nRETIRED(A, 3)\n"),
        );
    }

    #[test]
    fn unknown_kind() {
        check("unknown_kind", &format!("{HEAD}RELATION(A, 1, TRUE, Pol, 0)\nRELATION(B, 2, TRUE, Segment, 0)\n"));
    }

    #[test]
    fn unknown_kind_still_checks_the_row() {
        check(
            "unknown_kind_still_checks_the_row",
            &format!("{HEAD}RELATION(A, 1, TRUE, Arena, 0)\nRELATION(A, 1, TRUE, Pol, PXW, a, type, c)\n"),
        );
    }

    #[test]
    fn bad_letter() {
        check("bad_letter", &format!("{HEAD}RELATION(A, 1, TRUE, Arena, PAXW)\n"));
    }

    #[test]
    fn lower_case_letter() {
        check("lower_case_letter", &format!("{HEAD}RELATION(A, 1, TRUE, Arena, Paw)\n"));
    }

    #[test]
    fn wrong_name_count() {
        check(
            "wrong_name_count",
            &format!("{HEAD}RELATION(A, 1, TRUE, Arena, PAW, arena, base)\nRELATION(B, 2, TRUE, Arena, 0, x)\n"),
        );
    }

    #[test]
    fn reserved_code() {
        check("reserved_code", &format!("{HEAD}RELATION(A, 0xFF00, TRUE, Arena, 0)\n"));
    }

    #[test]
    fn code_zero() {
        check("code_zero", &format!("{HEAD}RELATION(A, 0, TRUE, Arena, 0)\n"));
    }

    #[test]
    fn number_too_large() {
        check(
            "number_too_large",
            "VERSION(1, 65536, 0)\nKIND(Arena)\nRELATION(A, 0x10000, TRUE, Arena, 0)\nRETIRED(B, 99999999999999999999999)\n",
        );
    }

    #[test]
    fn not_numbers() {
        check("not_numbers", "VERSION(1, 0x, 1_000)\nKIND(Arena)\nRELATION(A, x1, TRUE, Arena, 0)\n");
    }

    #[test]
    fn missing_version() {
        check("missing_version", "# no version\nKIND(Arena)\nRELATION(A, 1, TRUE, Arena, 0)\n");
    }

    #[test]
    fn empty_file() {
        check("empty_file", "");
    }

    #[test]
    fn duplicate_version() {
        check("duplicate_version", "VERSION(1, 0, 0)\nKIND(Arena)\nVERSION(1, 1, 0)\n");
    }

    #[test]
    fn unknown_keyword() {
        check(
            "unknown_keyword",
            &format!("{HEAD}RELATOIN(A, 1, TRUE, Arena, 0)\nkind(Seg)\nEVENT(B, 2)\nRETIRED(C, 3)\n"),
        );
    }

    #[test]
    fn unterminated_string() {
        check(
            "unterminated_string",
            "VERSION(1, 0, 0)\nKIND(Arena, \"no end)\nKIND(Pool, \"bad \\q escape\")\nRELATION(A, 1, TRUE, Pool, 0)\n",
        );
    }

    #[test]
    fn missing_paren_and_comma() {
        check(
            "missing_paren_and_comma",
            &format!(
                "{HEAD}RELATION(A, 1, TRUE, Arena, PAW, x, y, z\nRELATION(B 2, TRUE, Pool, 0)\nRELATION C, 3, TRUE, Pool, 0)\nRETIRED(D, 4"
            ),
        );
    }

    #[test]
    fn keyword_as_param_name() {
        check(
            "keyword_as_param_name",
            &format!("{HEAD}RELATION(A, 1, TRUE, Arena, PW, type, self)\nRELATION(fn, 2, TRUE, Arena, 0)\n"),
        );
    }

    #[test]
    fn bad_arguments() {
        check(
            "bad_arguments",
            &format!(
                "{HEAD}RELATION(A, 1, true, 0x1, P)\nRELATION(B, 2, YES, \"Arena\", \"P\")\nRELATION(C, 3, TRUE, Arena)\nKIND(\"Seg\", Seg)\nRELATION(D, 4, TRUE, Arena, P, 42, \"x\")\n"
            ),
        );
    }

    #[test]
    fn unexpected_characters() {
        check(
            "unexpected_characters",
            "VERSION(1, 0, 0);\nKIND(Arena, 'x') // comment\nRELATION(A, -1, TRUE, Arena, P\u{e9})\n\u{1}\u{2}\nKIND(Caf\u{e9})\n",
        );
    }

    #[test]
    fn bad_names() {
        check(
            "bad_names",
            "VERSION(1, 0, 0)\nKIND(Builtin)\nKIND(Arena)\nKIND(Arena)\nRELATION(Intern, 1, TRUE, Arena, 0)\nRELATION(_, 2, TRUE, Arena, P, na\u{ef}ve)\nRELATION(C, 3, TRUE, Arena, PP, a, a)\n",
        );
    }

    const REQ: &str = "VERSION(1, 0, 0)\nKIND(Req)\nRELATION(ReqBegin, 1, TRUE, Req, WSD, id, path, cost)\nRELATION(ReqEnd, 2, TRUE, Req, WB, id, ok)\nRELATION(Other, 3, TRUE, Req, 0)\n";

    #[test]
    fn span_errors() {
        check(
            "span_errors",
            &format!(
                "{REQ}SPAN(a, ReqBegn, ReqEnd)\nSPAN(b, ReqBegin, ReqBegin)\nSPAN(c, ReqBegin, ReqEnd, ok)\nSPAN(d, ReqBegin, Other, cost)\nSPAN(a, Other, ReqEnd)\nSPAN(e, ReqBegin)\nSPAN(f, ReqBegin, ReqEnd, id, more)\nSPAN(\"g\", ReqBegin, ReqEnd)\n"
            ),
        );
    }

    #[test]
    fn counter_errors() {
        check(
            "counter_errors",
            &format!(
                "{REQ}COUNTER(a, ReqBegin, path)\nCOUNTER(b, ReqBegin, size)\nCOUNTER(c, Nothing, cost)\nCOUNTER(a, ReqBegin, cost)\nCOUNTER(d, ReqBegin, cost, items)\nCOUNTER(e, ReqBegin)\n"
            ),
        );
    }

    #[test]
    fn flow_errors() {
        check(
            "flow_errors",
            &format!(
                "{REQ}FLOW(f, ReqBegin, id, begin)\nFLOW(f, ReqBegin, path, BEGIN)\nFLOW(f, ReqEnd, id, FINISH)\nFLOW(f, ReqEnd, id, END)\nFLOW(f, ReqEnd, id, END)\nFLOW(f, ReqEnd, id)\nFLOW(g, Unknown, id, STEP)\n"
            ),
        );
    }

    #[test]
    fn limit_errors() {
        check(
            "limit_errors",
            &format!(
                "{REQ}RELATION(A, 4, TRUE, Req, W, n, limit=100/parsec)\nRELATION(B, 5, TRUE, Req, W, n, limt=1/100)\nRELATION(C, 6, TRUE, Req, W, limit=1/s, n)\nRELATION(D, 7, TRUE, Req, 0, limit=0/s)\nRELATION(E, 8, TRUE, Req, 0, limit=5/3)\nRELATION(F, 9, TRUE, Req, 0, limit=1/s, limit=2/s)\nRELATION(G, 10, TRUE, Req, 0, limit=)\nKIND(Other, \"x\", limit=1/s)\n"
            ),
        );
    }

    #[test]
    fn histogram_errors() {
        check(
            "histogram_errors",
            &format!(
                "{REQ}SPAN(req, ReqBegin, ReqEnd)\nHISTOGRAM(a, reqq, LOG2)\nHISTOGRAM(b, ReqBegin, LOG2)\nHISTOGRAM(c, ReqBegin, cost, LOG2)\nHISTOGRAM(d, req, hdr3)\nHISTOGRAM(e, req, HDR9)\nHISTOGRAM(f, ReqBgin, id, LOG2)\nHISTOGRAM(g, ReqBegin, idd, LOG2)\nHISTOGRAM(h, ReqBegin, id)\nHISTOGRAM(i, req)\nHISTOGRAM(j, req, LOG2)\nHISTOGRAM(j, ReqEnd, id, HDR2)\n"
            ),
        );
    }

    #[test]
    fn several_errors() {
        check(
            "several_errors",
            "KIND(Arena, \"a\")\nKIND(Pool)\n\nRELATION(A, 1, TRUE, Arena, PAW, a, b)\nRELATION(B, 1, TRUE, Poool, PAW)\nRELATION(C, 0xFFFF, maybe, Arena, PAw)\nRELATION(D, 2, FALSE, Arena, P, type)\nRETIRED(A, 3)\n",
        );
    }
}

mod recovery {
    //! Error recovery: how many errors come out, and where.
    use super::*;

    #[test]
    fn a_missing_paren_costs_one_error() {
        let source = "VERSION(1, 0, 0)\nKIND(Arena\nRELATION(A, 1, TRUE, Arena, 0)\n";
        let errors = errors(source).0;
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!((errors[0].line, errors[0].column), (2, 11));
    }

    #[test]
    fn skipping_stops_at_the_statement_close() {
        // The names on the continuation line must not read as a statement.
        let source = "VERSION(1, 0, 0)\nKIND(Arena)\nRELATION(A, 1, TRUE, Arena, PAW, (x),\n  b, c)\nRELATION(B, 2, TRUE, Arena, 0)\n";
        let errors = errors(source).0;
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!((errors[0].line, errors[0].column), (3, 34));
    }

    #[test]
    fn columns_count_characters() {
        let source =
            "VERSION(1, 0, 0)\nKIND(\u{e9}\u{e9}\u{e9}, \"\u{e9}\") KIND(Arena)\nRELATION(A, 1, TRUE, Arena, Px)\n";
        let errors = errors(source).0;
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!((errors[0].line, errors[0].column), (2, 6));
        assert_eq!((errors[1].line, errors[1].column), (3, 30));
    }

    #[test]
    fn display() {
        let error =
            DefError { file: "a/events.def".into(), line: 3, column: 7, message: "what".into(), help: "how".into() };
        assert_eq!(error.to_string(), "a/events.def:3:7: what; how");
        let errors = DefErrors(vec![error.clone(), error]);
        assert_eq!(errors.to_string(), "a/events.def:3:7: what; how\na/events.def:3:7: what; how");
    }

    #[test]
    fn deep_nesting_and_huge_input() {
        for source in [
            "(".repeat(200_000),
            format!("VERSION(1, 0, 0)\nKIND({}", "(".repeat(200_000)),
            format!("VERSION(1, 0, 0)\nKIND(A{}", ")".repeat(200_000)),
            format!("VERSION(1, 0, 0)\nKIND({})", "9".repeat(100_000)),
            "\"".repeat(100_001),
            "RELATION(".repeat(10_000),
        ] {
            let errors = errors(&source);
            assert!(!errors.0.is_empty());
        }
    }
}

mod render {
    //! The text `render` writes.
    use super::*;

    #[test]
    fn small_schema() {
        let schema = Schema {
            name: "events".into(),
            version: Version::new(1, 2, 3),
            kinds: vec![
                Kind { name: "Arena".into(), doc: "per arena".into() },
                Kind { name: "Pool".into(), doc: "say \"hi\"\\\n\tthere".into() },
                Kind { name: "Bare".into(), doc: "".into() },
            ],
            events: vec![
                EventType {
                    name: "ArenaCreate".into(),
                    code: 0x1F,
                    always: true,
                    kind: 0,
                    format: vec![Letter::Pointer, Letter::Address, Letter::Word],
                    params: names(&["arena", "base", "size"]),
                },
                EventType {
                    name: "PoolAlloc".into(),
                    code: 0x200,
                    always: false,
                    kind: 1,
                    format: vec![Letter::Pointer, Letter::Unsigned],
                    params: names(&["f0", "f1"]),
                },
                EventType { name: "Poll".into(), code: 0xFEFF, always: true, kind: 2, format: vec![], params: vec![] },
            ],
            retired: vec![
                Retired { name: "OldThing".into(), code: 5 },
                Retired { name: "Ancient".into(), code: 0x1234 },
            ],
            ..Schema::default()
        };
        let text = def::render(&schema);
        insta::assert_snapshot!("render_small_schema", text);
        assert_eq!(def::parse(&text, "rendered").unwrap(), schema);
    }

    #[test]
    fn empty_schema() {
        let text = def::render(&Schema::default());
        assert_eq!(text, "# The event set, version 0.0.0. Written by event-format.\nVERSION(0, 0, 0)\n");
        // Without a SET line, the set is named after the file.
        assert_eq!(def::parse(&text, "rendered").unwrap(), Schema { name: "rendered".into(), ..Schema::default() });
    }
}

mod props {
    //! Properties over generated input: valid schemas survive render and parse; nothing
    //! makes parse panic, and every error is one line at a real position.
    use super::*;
    use std::collections::HashSet;

    /// Identifiers, including words of the grammar, which are names where names go.
    fn identifier() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[A-Za-z_][A-Za-z0-9_]{0,12}",
            1 => prop::sample::select(vec!["TRUE", "FALSE", "KIND", "RELATION", "RETIRED", "VERSION", "f0", "f1", "Pool"])
                .prop_map(str::to_owned),
        ]
    }

    /// Makes `name` a valid name not in `taken`, and takes it.
    fn fresh(name: String, taken: &mut HashSet<String>) -> String {
        let mut name = name;
        while name == "_"
            || event_def::schema::identifier_problem(&name).is_some()
            || event_def::builtin::by_name(&name).is_some()
            || name == event_def::schema::BUILTIN_KIND
            || taken.contains(&name)
        {
            name.push('_');
        }
        taken.insert(name.clone());
        name
    }

    fn fresh_code(code: u16, taken: &mut HashSet<u16>) -> u16 {
        let mut code = code;
        while taken.contains(&code) {
            code = if code >= 0xFEFF { 1 } else { code + 1 };
        }
        taken.insert(code);
        code
    }

    type RawEvent = (String, u16, bool, usize, Vec<Letter>, Option<Vec<String>>);

    fn raw_event() -> impl Strategy<Value = RawEvent> {
        (
            identifier(),
            1u16..=0xFEFF,
            any::<bool>(),
            any::<usize>(),
            prop::collection::vec(prop::sample::select(Letter::ALL.to_vec()), 0..10),
            prop::option::of(prop::collection::vec(identifier(), 10)),
        )
    }

    fn schema() -> impl Strategy<Value = Schema> {
        (
            any::<(u16, u16, u16)>(),
            prop::collection::vec((identifier(), any::<String>()), 1..6),
            prop::collection::vec(raw_event(), 0..8),
            prop::collection::vec((identifier(), 1u16..=0xFEFF), 0..4),
            prop::collection::vec(any::<bool>(), 1..12),
        )
            .prop_map(|(version, raw_kinds, raw_events, raw_retired, choices)| {
                let mut kind_names = HashSet::new();
                let kinds: Vec<Kind> =
                    raw_kinds.into_iter().map(|(name, doc)| Kind { name: fresh(name, &mut kind_names), doc }).collect();
                let (mut taken, mut codes) = (HashSet::new(), HashSet::new());
                let events = raw_events
                    .into_iter()
                    .map(|(name, code, always, kind, format, params)| {
                        let params = match params {
                            None => (0..format.len()).map(event_def::schema::default_param_name).collect(),
                            Some(raw) => {
                                let mut seen = HashSet::new();
                                raw.into_iter().take(format.len()).map(|p| fresh(p, &mut seen)).collect()
                            }
                        };
                        EventType {
                            name: fresh(name, &mut taken),
                            code: fresh_code(code, &mut codes),
                            always,
                            kind: (kind % kinds.len()) as u8,
                            format,
                            params,
                        }
                    })
                    .collect();
                let retired = raw_retired
                    .into_iter()
                    .map(|(name, code)| Retired { name: fresh(name, &mut taken), code: fresh_code(code, &mut codes) })
                    .collect();
                let mut schema = Schema {
                    name: "events".into(),
                    version: Version::new(version.0, version.1, version.2),
                    kinds,
                    events,
                    retired,
                    ..Schema::default()
                };
                declare(&mut schema, &choices);
                schema
            })
    }

    /// Declares spans, counters and flows over `schema`'s events, valid by construction,
    /// where `choices` say so: consecutive events pair into spans (async by a shared first
    /// parameter when its letters allow), events with a number sample a counter, events with
    /// an integer take part in a flow.
    fn declare(schema: &mut Schema, choices: &[bool]) {
        use event_def::meaning::{is_counter_letter, is_flow_id_letter, is_histogram_letter, is_span_id_letter};
        use event_def::schema::{Buckets, Counter, Flow, FlowStep, Histogram, HistogramOf, Limit, Rate, Span};
        let mut choice = choices.iter().copied().cycle();
        let events = schema.events.clone();
        for (i, pair) in events.chunks_exact(2).enumerate() {
            if choice.next() == Some(true) {
                let (b, e) = (&pair[0], &pair[1]);
                let id = (!b.params.is_empty() && b.params.first() == e.params.first())
                    .then(|| b.params[0].clone())
                    .filter(|_| is_span_id_letter(b.format[0]) && is_span_id_letter(e.format[0]))
                    .filter(|_| choice.next() == Some(true));
                schema.spans.push(Span { name: format!("span{i}"), begin: b.code, end: e.code, id });
            }
        }
        for (i, e) in events.iter().enumerate() {
            if let Some(j) = e.format.iter().position(|l| is_counter_letter(*l))
                && choice.next() == Some(true)
            {
                let unit = if choice.next() == Some(true) { "bytes \"x\"" } else { "" };
                schema.counters.push(Counter {
                    name: format!("counter{i}"),
                    event: e.code,
                    value: e.params[j].clone(),
                    unit: unit.into(),
                });
            }
            if let Some(j) = e.format.iter().position(|l| is_flow_id_letter(*l))
                && choice.next() == Some(true)
            {
                let step = [FlowStep::Begin, FlowStep::Step, FlowStep::End][i % 3];
                schema.flows.push(Flow { name: "flow".into(), event: e.code, id: e.params[j].clone(), step });
            }
            if choice.next() == Some(true) {
                let rate = if i % 2 == 0 {
                    Rate::PerPeriod { count: i as u64 + 1, period_ns: [1_000, 1_000_000_000, 7][i % 3] }
                } else {
                    Rate::Sample { keep: 1, of: i as u64 + 1 }
                };
                schema.limits.push(Limit { event: e.code, rate });
            }
            if let Some(j) = e.format.iter().position(|l| is_histogram_letter(*l))
                && choice.next() == Some(true)
            {
                let buckets = Buckets { precision: (i % 8) as u8 };
                let of = HistogramOf::Param { event: e.code, param: e.params[j].clone() };
                schema.histograms.push(Histogram { name: format!("hist{i}"), of, buckets });
            }
        }
        let spans: Vec<String> = schema.spans.iter().map(|s| s.name.clone()).collect();
        for span in spans {
            if choice.next() == Some(true) {
                let of = HistogramOf::Span(span.clone());
                schema.histograms.push(Histogram { name: format!("{span}_ns"), of, buckets: Buckets::LOG2 });
            }
        }
    }

    /// Checks what every result of `parse` must satisfy.
    fn check_result(source: &str) {
        match def::parse(source, "fuzz.def") {
            Ok(schema) => {
                assert_eq!(schema.check(), Ok(()));
                assert_eq!(def::parse(&def::render(&schema), "rendered").as_ref(), Ok(&schema));
            }
            Err(DefErrors(errors)) => {
                assert!(!errors.is_empty());
                let lines = u32::try_from(source.split('\n').count()).unwrap();
                for e in &errors {
                    let shown = e.to_string();
                    assert!(!shown.contains(['\n', '\r']), "not one line: {shown:?}");
                    assert!(e.line >= 1 && e.line <= lines, "{shown}");
                    assert!(e.column >= 1, "{shown}");
                    assert!(!e.message.is_empty() && !e.help.is_empty(), "{shown}");
                }
            }
        }
    }

    fn grammar_token() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "VERSION",
            "KIND",
            "RELATION",
            "RETIRED",
            "SPAN",
            "COUNTER",
            "FLOW",
            "HISTOGRAM",
            "LOG2",
            "HDR3",
            "limit=1/s",
            "limit=",
            "x=1",
            "=",
            "/",
            "BEGIN",
            "END",
            "(",
            ")",
            ",",
            ",",
            " ",
            "\n",
            "\"",
            "\"doc\"",
            "\"a\\",
            "\\",
            "#",
            "# c\n",
            "0",
            "1",
            "0x",
            "0x0001",
            "0XFeFf",
            "0xFF00",
            "65535",
            "65536",
            "99999999999999999999999",
            "TRUE",
            "FALSE",
            "true",
            "PAW",
            "PAWUIDBS",
            "paw",
            "Px",
            "Arena",
            "Pool",
            "type",
            "_",
            "\u{e9}",
            "\u{feff}",
            "\r\n",
            "\t",
            ";",
            "-",
            "{",
            "\u{0}",
        ])
    }

    proptest! {
        #[test]
        fn valid_schemas_round_trip(schema in schema()) {
            prop_assert_eq!(schema.check(), Ok(()));
            let text = def::render(&schema);
            let parsed = def::parse(&text, "rendered");
            prop_assert_eq!(parsed.as_ref(), Ok(&schema), "{}", text);
        }

        #[test]
        fn arbitrary_text_never_panics(source in any::<String>()) {
            check_result(&source);
        }

        #[test]
        fn grammar_soup_never_panics(tokens in prop::collection::vec(grammar_token(), 0..60)) {
            check_result(&tokens.concat());
        }

        #[test]
        fn edited_valid_files_never_panic(
            schema in schema(),
            edits in prop::collection::vec((any::<prop::sample::Index>(), prop::option::of(grammar_token())), 1..4),
        ) {
            let mut text: Vec<char> = def::render(&schema).chars().collect();
            for (at, insert) in edits {
                let i = at.index(text.len() + 1);
                match insert {
                    Some(token) => { text.splice(i..i, token.chars()); }
                    None if i < text.len() => { text.remove(i); }
                    None => {}
                }
            }
            check_result(&text.into_iter().collect::<String>());
        }
    }
}

mod sets {
    //! The `SET` line, the default set name, and format 2's relaxed names (docs/EVENT-SETS.md).
    use super::*;

    const MPS: &str = "VERSION(1, 0, 0)\nKIND(Arena)\nRELATION(Intern, 1, TRUE, Arena, WS, id, gen)\nRELATION(Label, 2, TRUE, Arena, AW, ref, type)\nRELATION(match, 3, FALSE, Arena, 0)\n";

    #[test]
    fn the_set_line_names_the_set_anywhere_else_the_caller_does() {
        assert_eq!(def::parse_set(MPS, "events.def", "mps-sys").unwrap().name, "mps-sys");
        assert_eq!(def::parse(MPS, "path/to/arena.def").unwrap().name, "arena");
        assert_eq!(def::parse(MPS, "1.def").unwrap().name, def::DEFAULT_SET_NAME);
        let named = format!("{MPS}SET(mps)\n");
        assert_eq!(def::parse_set(&named, "events.def", "other").unwrap().name, "mps");
        let quoted = format!("SET(\"my-crate\")\n{MPS}");
        let schema = def::parse(&quoted, "events.def").unwrap();
        assert_eq!(schema.name, "my-crate");
        assert!(
            def::render(&schema)
                .starts_with("# The event set, version 1.0.0. Written by event-format.\nSET(\"my-crate\")\n")
        );
        assert_eq!(def::parse(&def::render(&schema), "x.def").unwrap(), schema);
    }

    #[test]
    fn built_in_names_and_keywords_are_names_in_a_set() {
        let schema = def::parse(MPS, "events.def").expect("the MPS relation's names are accepted");
        assert_eq!(schema.events[0].params, ["id", "gen"]);
        assert_eq!(schema.events[1].params, ["ref", "type"]);
    }

    #[test]
    fn set_errors_point_at_the_set_line() {
        let errors = |text: &str| def::parse_set(text, "events.def", "app").unwrap_err().to_string();
        assert_eq!(
            errors(&format!("SET(a)\n{MPS}SET(b)\n")),
            "events.def:7:1: SET is given twice; keep one SET line; the first is on line 1"
        );
        assert_eq!(
            errors(&format!("SET(\"9lives\")\n{MPS}")),
            "events.def:1:5: bad set name: set name `9lives` must start with an ASCII letter or `_`; write SET(name), such as `SET(storage)`, or SET(\"my-crate\") for a name with '-'"
        );
        assert_eq!(
            errors(&format!("SET()\n{MPS}")),
            "events.def:1:5: SET needs the set's name; write SET(name), such as `SET(storage)`, or SET(\"my-crate\") for a name with '-'"
        );
        assert_eq!(
            def::parse_set(MPS, "events.def", "").unwrap_err().to_string(),
            "events.def:1:1: the set has no SET line, and its default name will not do: a set name cannot be empty; name the set with a SET line at the top, such as `SET(storage)`"
        );
        let self_param = "VERSION(1, 0, 0)\nKIND(A)\nRELATION(E, 1, TRUE, A, W, self)\n";
        assert!(errors(self_param).contains("`self` is a Rust keyword that no raw identifier can spell"));
    }
}
