//! The control grammar's behaviour, item by item and error by error, and its properties.

use super::grammar::{Action, Item, MAX_ITEM_LEN, declared_mask, parse};
// The one-set core that the list functions delegate to with one set.
use super::selection::{describe_one as describe, from_env_text_one as from_env_text};
use super::*;
use event_def::schema::{Kind, Schema};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// The workspace's event set, cut down, with a kind that has no events.
const DEF: &str = r#"VERSION(1, 0, 0)
KIND(Arena,  "arena")
KIND(Pool,   "pools")
KIND(Seg,    "segments")
KIND(Object, "objects")
KIND(Sweep,  "reclamation")
KIND(Client, "annotations")
KIND(Empty,  "no events")
RELATION(ArenaCreate,  0x0001, TRUE,  Arena,  PAW, arena, base, size)
RELATION(ArenaPoll,    0x0004, FALSE, Arena,  PWD, arena, committed, load)
RELATION(PoolInit,     0x0010, TRUE,  Pool,   PPSU, pool, arena, class, align)
RELATION(PoolFinish,   0x0011, TRUE,  Pool,   PW, pool, live)
RELATION(PoolStats,    0x0012, TRUE,  Pool,   PWWWD, pool, allocated, freed, live, fragmentation)
RELATION(SegAlloc,     0x0020, TRUE,  Seg,    PPAW, seg, pool, base, size)
RELATION(SegSplit,     0x0022, FALSE, Seg,    PPPA, seg, first, second, at)
RELATION(ObjectAlloc,  0x0030, FALSE, Object, PAWU, pool, addr, size, class)
RELATION(SweepBegin,   0x0040, TRUE,  Sweep,  PWS, pool, epoch, why)
RELATION(SweepEnd,     0x0044, TRUE,  Sweep,  PWB, pool, epoch, complete)
RELATION(ClientPhase,  0x0050, TRUE,  Client, SWI, phase, step, delta)
"#;

const ARENA: u64 = 1;
const POOL: u64 = 2;
const SEG: u64 = 4;
const OBJECT: u64 = 8;
const SWEEP: u64 = 16;
const CLIENT: u64 = 32;
const EMPTY: u64 = 64;
const ALL: u64 = 127;

fn schema() -> Schema {
    event_def::def::parse(DEF, "test.def").unwrap()
}

fn env(text: &str) -> Selection {
    match from_env_text(text, &schema()) {
        Ok(selection) => selection,
        Err(e) => panic!("{text:?}: {e}"),
    }
}

fn error(text: &str) -> SelectError {
    match from_env_text(text, &schema()) {
        Ok(selection) => panic!("{text:?} was read as {selection:?}"),
        Err(e) => {
            assert_eq!(e.to_string(), e.message);
            e
        }
    }
}

fn message(text: &str) -> String {
    error(text).message
}

fn sel(kinds: u64, overrides: &[(u16, bool)]) -> Selection {
    Selection { kinds, overrides: overrides.iter().copied().collect() }
}

fn names(selection: &Selection) -> Vec<String> {
    let schema = schema();
    selection.enabled_codes(&schema).map(|c| schema.event_by_code(c).unwrap().name.clone()).collect()
}

mod one_set_is_a_list_of_one {
    //! The public list functions with one set are the one-set language: the same selections,
    //! texts and errors as the core they delegate to.
    use super::*;

    #[test]
    fn the_list_functions_are_the_core_with_one_set() {
        let schema = schema();
        for text in ["all", "none", "Pool -Pool:PoolInit", "-Seg", "0x5", "*:Seg*", "A* Seg:SegSplit", "Seg:SegSplit"] {
            let one = from_env_text(text, &schema).unwrap();
            assert_eq!(super::super::from_env_text(text, &[&schema]).unwrap(), vec![one.clone()], "{text:?}");
            assert_eq!(super::super::describe(&[&schema], std::slice::from_ref(&one)), describe(&one, &schema));
            let mut current = vec![Selection::all(&schema)];
            super::super::apply(text, &[&schema], &mut current).unwrap();
            let mut expected = Selection::all(&schema);
            expected.apply(&parse(text, &schema).unwrap());
            assert_eq!(current, vec![expected], "{text:?}");
        }
        for text in ["Pol", "Pool:Nope", "", "-", "a:b:c", "storage:Pool"] {
            assert_eq!(
                super::super::from_env_text(text, &[&schema]).unwrap_err(),
                from_env_text(text, &schema).unwrap_err(),
                "{text:?}"
            );
        }
    }
}

mod selection {
    use super::*;

    #[test]
    fn all_and_none() {
        assert_eq!(Selection::all(&schema()), sel(ALL, &[]));
        assert_eq!(Selection::none(), sel(0, &[]));
        assert_eq!(Selection::all(&Schema::default()), sel(0, &[]));
        let many = Schema {
            kinds: (0..64).map(|i| Kind { name: format!("K{i}"), doc: String::new() }).collect(),
            ..Schema::default()
        };
        assert_eq!(Selection::all(&many).kinds, u64::MAX);
    }

    #[test]
    fn records_follows_overrides_then_kinds() {
        let schema = schema();
        let init = schema.event("PoolInit").unwrap();
        let stats = schema.event("PoolStats").unwrap();
        let seg = schema.event("SegAlloc").unwrap();
        let s = sel(POOL, &[(0x0010, false), (0x0020, true)]);
        assert!(!s.records(init));
        assert!(s.records(stats));
        assert!(s.records(seg));
        assert_eq!(names(&s), ["PoolFinish", "PoolStats", "SegAlloc"]);
        assert_eq!(names(&Selection::none()), Vec::<String>::new());
        assert_eq!(Selection::all(&schema).enabled_codes(&schema).count(), schema.events.len());
    }

    #[test]
    fn records_survives_a_kind_index_beyond_the_mask() {
        let mut event = schema().events[0].clone();
        event.kind = 200;
        assert!(!Selection { kinds: u64::MAX, ..Selection::none() }.records(&event));
    }

    #[test]
    fn apply_changes_the_current_selection() {
        let schema = schema();
        let mut s = sel(SEG | ARENA, &[(0x0020, false)]);
        s.apply(&parse("Pool -Seg", &schema).unwrap());
        assert_eq!(s, sel(ARENA | POOL, &[]));
        s.apply(&parse("-Pool:PoolInit, Sweep:SweepEnd", &schema).unwrap());
        assert_eq!(s, sel(ARENA | POOL, &[(0x0010, false), (0x0044, true)]));
        s.apply(&parse("Client", &schema).unwrap());
        assert_eq!(s, sel(ARENA | POOL | CLIENT, &[(0x0010, false), (0x0044, true)]));
        s.apply(&parse("-all", &schema).unwrap());
        assert_eq!(s, Selection::none());
        // A monitor's text that starts with a removal removes from the current state.
        let mut s = sel(POOL | SEG, &[]);
        s.apply(&parse("-Seg", &schema).unwrap());
        assert_eq!(s, sel(POOL, &[]));
    }
}

mod items {
    use super::*;

    #[test]
    fn items_carry_text_column_and_action() {
        let items = parse(" Pool,\t-Seg:SegSplit  0x3", &schema()).unwrap();
        assert_eq!(
            items,
            [
                Item {
                    text: "Pool".into(),
                    column: 2,
                    removal: false,
                    action: Action::Kinds { mask: POOL, on: true, codes: vec![0x10, 0x11, 0x12] },
                },
                Item {
                    text: "-Seg:SegSplit".into(),
                    column: 8,
                    removal: true,
                    action: Action::Events { codes: vec![0x22], on: false },
                },
                Item { text: "0x3".into(), column: 23, removal: false, action: Action::SetKinds(3) },
            ]
        );
    }

    #[test]
    fn separators_are_whitespace_and_commas() {
        assert_eq!(env("Pool,Seg"), sel(POOL | SEG, &[]));
        assert_eq!(env(",, Pool ,\n Seg,\r\n"), sel(POOL | SEG, &[]));
        assert_eq!(env("Pool\u{2003}Seg"), sel(POOL | SEG, &[]));
    }

    #[test]
    fn numbers_set_the_mask_and_clear_overrides() {
        assert_eq!(env("5"), sel(ARENA | SEG, &[]));
        assert_eq!(env("0x5"), sel(ARENA | SEG, &[]));
        assert_eq!(env("0X7f"), sel(ALL, &[]));
        assert_eq!(env("0"), sel(0, &[]));
        assert_eq!(env("007"), sel(ARENA | POOL | SEG, &[]));
        assert_eq!(env("Pool:PoolInit -Seg:SegAlloc 2"), sel(POOL, &[]));
    }

    #[test]
    fn all_and_none_clear_overrides() {
        assert_eq!(env("all"), sel(ALL, &[]));
        assert_eq!(env("none"), sel(0, &[]));
        assert_eq!(env("-all"), sel(0, &[]));
        assert_eq!(env("Pool:PoolInit all"), sel(ALL, &[]));
        assert_eq!(env("all -Pool:PoolInit none"), sel(0, &[]));
        assert_eq!(env("Pool -all Seg"), sel(SEG, &[]));
    }

    #[test]
    fn kinds_and_their_globs() {
        assert_eq!(env("Pool"), sel(POOL, &[]));
        assert_eq!(env("Pool Arena"), sel(POOL | ARENA, &[]));
        assert_eq!(env("Po*"), sel(POOL, &[]));
        assert_eq!(env("?ool"), sel(POOL, &[]));
        assert_eq!(env("S*"), sel(SEG | SWEEP, &[]));
        assert_eq!(env("*e*"), sel(SEG | OBJECT | SWEEP | CLIENT | ARENA, &[]));
        assert_eq!(env("*"), sel(ALL, &[]));
        assert_eq!(env("Empty"), sel(EMPTY, &[]));
        assert_eq!(env("Pool Pool"), sel(POOL, &[]));
    }

    #[test]
    fn kinds_clear_their_events_overrides_only() {
        assert_eq!(env("none Pool:PoolInit Seg:SegAlloc Pool"), sel(POOL, &[(0x20, true)]));
        assert_eq!(env("-Pool:PoolInit -Seg:SegAlloc Pool"), sel(ALL, &[(0x20, false)]));
        assert_eq!(env("-Pool:PoolInit -Seg:SegAlloc -Pool"), sel(ALL & !POOL, &[(0x20, false)]));
    }

    #[test]
    fn kind_event_pairs_and_their_globs() {
        assert_eq!(env("Pool:PoolInit"), sel(0, &[(0x10, true)]));
        assert_eq!(env("Pool:*Init"), sel(0, &[(0x10, true)]));
        assert_eq!(env("Pool:Pool*"), sel(0, &[(0x10, true), (0x11, true), (0x12, true)]));
        assert_eq!(env("*:*Begin"), sel(0, &[(0x40, true)]));
        assert_eq!(env("S*:*e*"), sel(0, &[(0x20, true), (0x22, true), (0x40, true), (0x44, true)]));
        assert_eq!(env("Sweep:Sweep???"), sel(0, &[(0x44, true)]));
        assert_eq!(env("*:*"), sel(0, &schema().events.iter().map(|e| (e.code, true)).collect::<Vec<_>>()));
    }

    #[test]
    fn bare_event_names_mean_any_kind() {
        assert_eq!(env("PoolInit"), sel(0, &[(0x10, true)]));
        assert_eq!(env("*Init"), sel(0, &[(0x10, true)]));
        assert_eq!(env("*Alloc"), sel(0, &[(0x20, true), (0x30, true)]));
        assert_eq!(env("Pool -PoolInit"), sel(POOL, &[(0x10, false)]));
        // A word that matches a kind is a kind, even when it would match events too.
        assert_eq!(env("Pool*"), sel(POOL, &[]));
    }

    #[test]
    fn removals() {
        assert_eq!(env("all -Pool"), sel(ALL & !POOL, &[]));
        assert_eq!(env("all -S*"), sel(ALL & !(SEG | SWEEP), &[]));
        assert_eq!(env("all -Pool:PoolInit"), sel(ALL, &[(0x10, false)]));
        assert_eq!(env("all -*:Sweep*"), sel(ALL, &[(0x40, false), (0x44, false)]));
        assert_eq!(env("all -SegSplit"), sel(ALL, &[(0x22, false)]));
    }

    #[test]
    fn the_last_item_wins() {
        assert_eq!(names(&env("Pool -Pool:PoolInit")), ["PoolFinish", "PoolStats"]);
        assert_eq!(names(&env("-Pool:PoolInit Pool")).len(), schema().events.len());
        assert_eq!(env("Pool:PoolInit -Pool:PoolInit"), sel(0, &[(0x10, false)]));
        assert_eq!(env("Pool -Pool"), sel(0, &[]));
    }

    #[test]
    fn start_rules() {
        // The brief's four examples.
        assert_eq!(env("Pool Arena"), sel(POOL | ARENA, &[]));
        assert_eq!(env("-Seg"), sel(ALL & !SEG, &[]));
        assert_eq!(env("none Pool:PoolInit"), sel(0, &[(0x10, true)]));
        assert_eq!(env("all -Pool:PoolInit"), sel(ALL, &[(0x10, false)]));
        assert_eq!(names(&env("none Pool:PoolInit")), ["PoolInit"]);
        // Only the first item decides where to start.
        assert_eq!(env("-Seg -Pool"), sel(ALL & !(SEG | POOL), &[]));
        assert_eq!(env("Pool -Seg"), sel(POOL, &[]));
        assert_eq!(env("-Pool:PoolInit"), sel(ALL, &[(0x10, false)]));
        assert_eq!(env("-PoolInit"), sel(ALL, &[(0x10, false)]));
    }
}

mod errors {
    use super::*;

    #[test]
    fn nothing_chosen() {
        for text in ["", "   ", ",, ,\t\n"] {
            let e = error(text);
            assert_eq!((e.item.as_str(), e.column), ("", 1));
            assert_eq!(
                e.message,
                "nothing chosen at column 1: the text has no items; write \"all\", \"none\", kind names (kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty) or Kind:Event"
            );
        }
        assert!(parse("", &schema()).is_err());
    }

    #[test]
    fn unknown_kinds() {
        let e = error("Arena Pol");
        assert_eq!((e.item.as_str(), e.column), ("Pol", 7));
        assert_eq!(
            e.message,
            "unknown kind \"Pol\" at column 7 (did you mean \"Pool\"?); kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
        );
        assert_eq!(
            message("-pool"),
            "unknown kind \"pool\" in \"-pool\" at column 1 (did you mean \"-Pool\"?); kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
        );
        assert_eq!(
            message("Nothing"),
            "unknown kind or event \"Nothing\" at column 1; kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty, and one event is named as Kind:Event"
        );
        assert_eq!(
            message("Pol:PoolInit"),
            "unknown kind \"Pol\" in \"Pol:PoolInit\" at column 1 (did you mean \"Pool:PoolInit\"?); kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
        );
        assert_eq!(
            message("all:PoolInit"),
            "unknown kind \"all\" in \"all:PoolInit\" at column 1 (write \"*:PoolInit\" for an event of any kind); kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
        );
        assert_eq!(
            from_env_text("Arena", &Schema::default()).unwrap_err().message,
            "unknown kind or event \"Arena\" at column 1; no kinds are declared, and one event is named as Kind:Event"
        );
    }

    #[test]
    fn unknown_events() {
        assert_eq!(message("PolInit"), "unknown event \"PolInit\" at column 1 (did you mean \"PoolInit\"?)");
        assert_eq!(
            message("Pool:Nope"),
            "\"Pool:Nope\" at column 1 matches no event of kind Pool; its events are PoolInit, PoolFinish, PoolStats"
        );
        assert_eq!(
            message("Pool:PoolInt"),
            "\"Pool:PoolInt\" at column 1 matches no event of kind Pool (did you mean \"Pool:PoolInit\"?)"
        );
        assert_eq!(
            message("all -Pool:Poolinit"),
            "\"-Pool:Poolinit\" at column 5 matches no event of kind Pool (did you mean \"-Pool:PoolInit\"?)"
        );
        assert_eq!(
            message("Seg:PoolInit"),
            "\"Seg:PoolInit\" at column 1 matches no event of kind Seg; PoolInit is of kind Pool: write \"Pool:PoolInit\""
        );
        assert_eq!(
            message("Empty:Anything"),
            "\"Empty:Anything\" at column 1 matches no event of kind Empty; kind Empty has no events"
        );
        assert_eq!(
            message("*:Nope"),
            "\"*:Nope\" at column 1 matches no event of any kind; the events are ArenaCreate, ArenaPoll, PoolInit, PoolFinish, PoolStats, SegAlloc, SegSplit, ObjectAlloc, SweepBegin, SweepEnd, ClientPhase"
        );
        assert_eq!(
            message("S*:PoolInt"),
            "\"S*:PoolInt\" at column 1 matches no event of kinds Seg, Sweep; their events are SegAlloc, SegSplit, SweepBegin, SweepEnd"
        );
    }

    #[test]
    fn globs_that_match_nothing() {
        assert_eq!(
            message("Q*"),
            "\"Q*\" at column 1 matches no kind and no event; kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
        );
        assert_eq!(
            message("-?"),
            "\"?\" in \"-?\" at column 1 matches no kind and no event; kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
        );
        assert_eq!(
            message("Q*:*"),
            "\"Q*\" in \"Q*:*\" at column 1 matches no kind; kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
        );
        assert_eq!(
            message("Pool:*Begin"),
            "\"Pool:*Begin\" at column 1 matches no event of kind Pool; its events are PoolInit, PoolFinish, PoolStats"
        );
        assert_eq!(message("E*:*"), "\"E*:*\" at column 1 matches no event of kind Empty; kind Empty has no events");
    }

    #[test]
    fn numbers() {
        assert_eq!(
            message("0x80"),
            "mask \"0x80\" at column 1 sets bit 7, but there are only 7 kinds (Arena, Pool, Seg, Object, Sweep, Client, Empty); write a mask of at most 0x7F"
        );
        assert_eq!(
            message("Pool 0xFFFFFFFFFFFFFFFF"),
            "mask \"0xFFFFFFFFFFFFFFFF\" at column 6 sets bit 63, but there are only 7 kinds (Arena, Pool, Seg, Object, Sweep, Client, Empty); write a mask of at most 0x7F"
        );
        assert_eq!(
            message("0x10000000000000000"),
            "mask \"0x10000000000000000\" at column 1 is too large for 64 bits; write a mask of at most 0x7F"
        );
        assert_eq!(
            message("12a"),
            "\"12a\" at column 1 is not a number; write a mask in decimal, such as 5, or in hex, such as 0x5 (names cannot start with a digit)"
        );
        assert!(message("0x").contains("\"0x\" at column 1 is not a number"));
        assert!(message("0x1g").contains("is not a number"));
        assert!(message("1*").contains("is not a number"));
        assert_eq!(
            message("-5"),
            "\"-5\" at column 1: a mask cannot be removed; write the mask to record, such as 5, or remove kinds by name, such as \"-Kind\""
        );
        let one = event_def::def::parse("VERSION(1, 0, 0)\nKIND(Arena)\n", "one.def").unwrap();
        assert_eq!(
            from_env_text("2", &one).unwrap_err().message,
            "mask \"2\" at column 1 sets bit 1, but there is only 1 kind (Arena); write a mask of at most 0x1"
        );
        assert_eq!(
            from_env_text("1", &Schema::default()).unwrap_err().message,
            "mask \"1\" at column 1 sets bit 0, but no kinds are declared; write 0 or \"none\""
        );
        assert_eq!(from_env_text("0", &Schema::default()), Ok(Selection::none()));
    }

    #[test]
    fn removals() {
        assert_eq!(
            message("Pool -none"),
            "\"-none\" at column 6: removing nothing changes nothing; write \"all\" to record every kind, or \"none\" to record none"
        );
        assert_eq!(
            message("Pool - Seg"),
            "\"-\" at column 6 removes nothing; write a kind or an event right after the '-', such as \"-Kind\" or \"-Kind:Event\""
        );
        assert_eq!(
            message("--Pool"),
            "bad character '-' in \"--Pool\" at column 1; names are ASCII letters, digits and '_', with '*' and '?' as wildcards; separate items with spaces or commas"
        );
    }

    #[test]
    fn builtin_events_are_not_controllable() {
        let help = "which are always recorded and cannot be chosen; leave it out";
        assert_eq!(message("Builtin"), format!("\"Builtin\" at column 1 names the runtime's built-in events, {help}"));
        assert_eq!(
            message("all -Builtin"),
            format!("\"Builtin\" in \"-Builtin\" at column 5 names the runtime's built-in events, {help}")
        );
        assert_eq!(
            message("Builtin:Intern"),
            format!("\"Builtin\" in \"Builtin:Intern\" at column 1 names the runtime's built-in events, {help}")
        );
        assert_eq!(
            message("Builtin:*"),
            format!("\"Builtin\" in \"Builtin:*\" at column 1 names the runtime's built-in events, {help}")
        );
        assert_eq!(message("-Dropped"), format!("\"Dropped\" in \"-Dropped\" at column 1 is a built-in event, {help}"));
        assert_eq!(
            message("*:Message"),
            format!("\"Message\" in \"*:Message\" at column 1 is a built-in event, {help}")
        );
    }

    #[test]
    fn malformed_items() {
        assert_eq!(
            message("Pool:PoolInit:x"),
            "\"Pool:PoolInit:x\" at column 1 has more than one ':'; write one Kind:Event per item"
        );
        assert_eq!(
            message("-:"),
            "\"-:\" at column 1 names neither a kind nor an event; write Kind:Event, such as \"-*:*\" for every event"
        );
        assert_eq!(
            message(":PoolInit"),
            "\":PoolInit\" at column 1 names no kind before the ':'; write \"*:PoolInit\" for an event of any kind"
        );
        assert_eq!(
            message("-Pool:"),
            "\"-Pool:\" at column 1 names no event after the ':'; write \"-Pool:*\" for every event of the kind, or \"-Pool\" for the kind itself"
        );
        assert_eq!(
            message("Pool.PoolInit"),
            "bad character '.' in \"Pool.PoolInit\" at column 1 (did you mean \"Pool:PoolInit\"?); name one event as Kind:Event, with a colon"
        );
        assert_eq!(
            message("-Pool.PoolInit"),
            "bad character '.' in \"-Pool.PoolInit\" at column 1 (did you mean \"-Pool:PoolInit\"?); name one event as Kind:Event, with a colon"
        );
        assert_eq!(
            message("Pool;Seg"),
            "bad character ';' in \"Pool;Seg\" at column 1; names are ASCII letters, digits and '_', with '*' and '?' as wildcards; separate items with spaces or commas"
        );
        assert_eq!(
            message("Pool Pöol"),
            "bad character 'ö' in \"Pöol\" at column 6; names are ASCII letters, digits and '_', with '*' and '?' as wildcards; separate items with spaces or commas"
        );
        // Control characters are escaped: the message stays on one line.
        assert_eq!(
            message("a\u{7}b"),
            "bad character '\\u{7}' in \"a\\u{7}b\" at column 1; names are ASCII letters, digits and '_', with '*' and '?' as wildcards; separate items with spaces or commas"
        );
    }

    #[test]
    fn long_items_are_cut_in_messages() {
        let long = "x".repeat(300);
        let e = error(&format!("Pool {long}"));
        assert_eq!((e.item.as_str(), e.column), (long.as_str(), 6));
        assert_eq!(
            e.message,
            format!(
                "unknown kind or event {:?}... at column 6; kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty, and one event is named as Kind:Event",
                "x".repeat(40)
            )
        );
        let huge = "*".repeat(MAX_ITEM_LEN + 1);
        assert_eq!(
            message(&huge),
            format!(
                "{:?}... at column 1 is {} bytes long, longer than any item can usefully be; names are at most 255 bytes",
                "*".repeat(40),
                MAX_ITEM_LEN + 1
            )
        );
    }

    #[test]
    fn columns_count_characters() {
        let e = error("é, ü Pol");
        // 'é' is column 1, but it is a bad character; the first bad item is reported.
        assert_eq!(e.column, 1);
        let e = error("Pool\u{3000}\u{3000}Pol");
        assert_eq!((e.item.as_str(), e.column), ("Pol", 7));
    }

    #[test]
    fn long_lists_are_cut() {
        let mut def = String::from("VERSION(1, 0, 0)\n");
        for i in 0..20 {
            def.push_str(&format!("KIND(K{i})\n"));
        }
        let many = event_def::def::parse(&def, "many.def").unwrap();
        assert_eq!(
            from_env_text("Nope", &many).unwrap_err().message,
            "unknown kind or event \"Nope\" at column 1; kinds are K0, K1, K2, K3, K4, K5, K6, K7, K8, K9, K10, K11, K12, K13, K14, K15, and 4 more, and one event is named as Kind:Event"
        );
    }

    #[test]
    fn error_is_an_error() {
        let e: Box<dyn std::error::Error> = Box::new(error("Pol"));
        assert!(e.to_string().starts_with("unknown kind \"Pol\""));
    }
}

mod describing {
    use super::*;

    #[test]
    fn texts() {
        let schema = schema();
        let d = |s: &Selection| describe(s, &schema);
        assert_eq!(d(&Selection::none()), "none");
        assert_eq!(d(&Selection::all(&schema)), "all");
        assert_eq!(d(&sel(u64::MAX, &[])), "all");
        assert_eq!(d(&sel(POOL | ARENA, &[])), "Arena Pool");
        assert_eq!(d(&sel(ARENA | POOL, &[(0x10, false), (0x22, true)])), "Arena Pool -Pool:PoolInit Seg:SegSplit");
        assert_eq!(d(&sel(0, &[(0x10, true)])), "none Pool:PoolInit");
        assert_eq!(d(&sel(0, &[(0x10, false)])), "none -Pool:PoolInit");
        assert_eq!(d(&sel(ALL, &[(0x10, false)])), "all -Pool:PoolInit");
        // What the schema does not declare is left out.
        assert_eq!(d(&sel(POOL | 1 << 40, &[(0x0999, true)])), "Pool");
    }

    #[test]
    fn kinds_named_like_keywords_are_written_as_a_mask() {
        let schema = event_def::def::parse(
            "VERSION(1, 0, 0)\nKIND(all)\nKIND(none)\nKIND(Pool)\nRELATION(PoolInit, 1, TRUE, Pool, 0)\n",
            "keywords.def",
        )
        .unwrap();
        let s = sel(0b101, &[(1, false)]);
        let text = describe(&s, &schema);
        assert_eq!(text, "0x5 -Pool:PoolInit");
        assert_eq!(from_env_text(&text, &schema), Ok(s));
        assert_eq!(describe(&sel(0b100, &[]), &schema), "Pool");
        // The keywords win over the kinds' names.
        assert_eq!(from_env_text("all", &schema), Ok(sel(0b111, &[])));
        assert_eq!(from_env_text("al?", &schema), Ok(sel(0b001, &[])));
    }
}

/// The schemas the properties are checked on.
fn schemas() -> Vec<Schema> {
    let many = (0..64).map(|i| format!("KIND(K{i})\n")).collect::<String>();
    let many_events = (0..64).map(|i| format!("RELATION(E{i}, {}, TRUE, K{i}, 0)\n", i + 1)).collect::<String>();
    vec![
        schema(),
        crate::testing::sample_schema(),
        event_def::def::parse("VERSION(1, 0, 0)\n", "empty.def").unwrap(),
        event_def::def::parse(
            "VERSION(1, 0, 0)\nKIND(all)\nKIND(none)\nKIND(Pool)\nRELATION(PoolInit, 1, TRUE, Pool, 0)\nRELATION(All, 2, TRUE, all, 0)\n",
            "keywords.def",
        )
        .unwrap(),
        event_def::def::parse(&format!("VERSION(1, 0, 0)\n{many}{many_events}"), "many.def").unwrap(),
    ]
}

/// A selection of `schema`: any declared kinds, overrides of any of its events.
fn selection_of(schema: &Schema) -> impl Strategy<Value = Selection> + use<> {
    let declared = declared_mask(schema);
    let codes: Vec<u16> = schema.events.iter().map(|e| e.code).collect();
    let overrides = if codes.is_empty() {
        Just(BTreeMap::new()).boxed()
    } else {
        prop::collection::btree_map(prop::sample::select(codes), any::<bool>(), 0..8).boxed()
    };
    (any::<u64>(), prop::bool::weighted(0.2), prop::bool::weighted(0.2), overrides).prop_map(
        move |(kinds, all, none, overrides)| {
            let kinds = if all {
                declared
            } else if none {
                0
            } else {
                kinds & declared
            };
            Selection { kinds, overrides }
        },
    )
}

fn schema_and_selection() -> impl Strategy<Value = (Schema, Selection)> {
    prop::sample::select(schemas()).prop_flat_map(|schema| (Just(schema.clone()), selection_of(&schema)))
}

/// Pieces of control texts, right and wrong.
fn grammar_token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        prop::sample::select(vec![
            "Arena",
            "Pool",
            "Seg",
            "Empty",
            "PoolInit",
            "SegSplit",
            "Pol",
            "all",
            "none",
            "Builtin",
            "Intern",
            "*",
            "?",
            "Po*",
            "*Init",
            "-",
            ":",
            ",",
            " ",
            "\t",
            "0x",
            "0",
            "5",
            "127",
            "128",
            ".",
            "é",
            "\u{3000}",
            "ArenaCreate",
            "Poll",
            "K1",
            "E63",
        ])
        .prop_map(str::to_owned),
        "[-*?:.,A-Za-z0-9 ]{1,6}",
    ]
}

/// Every error is one line that names the item and a column inside the text.
fn check_error(text: &str, result: Result<Selection, SelectError>) -> Result<(), TestCaseError> {
    if let Err(e) = result {
        prop_assert!(!e.message.contains(['\n', '\r']), "{:?}", e.message);
        let chars = text.chars().count();
        prop_assert!(e.column >= 1 && e.column <= chars.max(1), "{} in {:?}", e.column, text);
        if !e.item.is_empty() {
            let at: String = text.chars().skip(e.column - 1).take(e.item.chars().count()).collect();
            prop_assert_eq!(at, e.item.clone());
        }
        let at = format!(" at column {}", e.column);
        prop_assert!(e.message.contains(&at), "{:?}", e.message);
    }
    Ok(())
}

proptest! {
    #[test]
    fn describe_reads_back((schema, selection) in schema_and_selection()) {
        let text = describe(&selection, &schema);
        prop_assert_eq!(from_env_text(&text, &schema), Ok(selection.clone()), "{}", text);
        // A monitor that applies a description to nothing gets the selection too.
        let mut from_none = Selection::none();
        from_none.apply(&parse(&text, &schema).unwrap());
        prop_assert_eq!(from_none, selection);
    }

    #[test]
    fn reading_a_description_is_stable((schema, selection) in schema_and_selection()) {
        let once = from_env_text(&describe(&selection, &schema), &schema).unwrap();
        prop_assert_eq!(describe(&once, &schema), describe(&selection, &schema));
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        for schema in schemas() {
            check_error(&text, from_env_text(&text, &schema))?;
        }
    }

    #[test]
    fn grammar_soup_never_panics(tokens in prop::collection::vec(grammar_token(), 0..12)) {
        let text = tokens.join(" ");
        for schema in schemas() {
            let result = from_env_text(&text, &schema);
            check_error(&text, result.clone())?;
            if let Ok(selection) = result {
                // Whatever is read can be described and read back.
                let described = describe(&selection, &schema);
                let declared = declared_mask(&schema);
                prop_assert_eq!(selection.kinds & !declared, 0);
                prop_assert_eq!(from_env_text(&described, &schema), Ok(selection));
            }
        }
    }

    #[test]
    fn parse_and_apply_agree_with_from_env_text(tokens in prop::collection::vec(grammar_token(), 1..8)) {
        let text = tokens.join(",");
        let schema = schema();
        if let Ok(items) = parse(&text, &schema) {
            let mut selection = if items[0].removal { Selection::all(&schema) } else { Selection::none() };
            selection.apply(&items);
            prop_assert_eq!(from_env_text(&text, &schema), Ok(selection));
        }
    }
}
