//! The selection language through the public API: a selection compiled to its code bitmap
//! agrees with the selection, and a reader's patterns (event-dump's `--kind`/`--event`)
//! read and compile as the language says, old spellings included.

use event_format::builtin;
use event_format::schema::{BUILTIN_KIND, Schema};
use event_format::select::{self, CodeSet, Patterns, SelectError, Selection, Word};
use proptest::prelude::*;

const DEF: &str = r#"VERSION(1, 0, 0)
KIND(Arena, "arena")
KIND(Pool, "pools")
KIND(Seg, "segments")
RELATION(ArenaCreate, 0x0001, TRUE, Arena, PAW, arena, base, size)
RELATION(ArenaPoll, 0x0004, FALSE, Arena, 0)
RELATION(PoolInit, 0x0010, TRUE, Pool, 0)
RELATION(PoolFinish, 0x0011, TRUE, Pool, 0)
RELATION(SegAlloc, 0x0020, TRUE, Seg, 0)
RELATION(SegSplit, 0x0022, FALSE, Seg, 0)
"#;

fn schema() -> Schema {
    event_format::def::parse(DEF, "test.def").unwrap()
}

/// What a reader passes to [`Patterns::compile`]: the schema's events, of its set, and the
/// built-ins, of none.
fn events(schema: &Schema) -> Vec<(u16, &str, &str, &str)> {
    schema
        .events
        .iter()
        .map(|e| (e.code, schema.name.as_str(), schema.kinds[usize::from(e.kind)].name.as_str(), e.name.as_str()))
        .chain(builtin::ALL.iter().map(|b| (b.code, "", BUILTIN_KIND, b.name)))
        .collect()
}

/// The names of the events `text` chooses, read with `word`, in a log of one set.
fn chosen(text: &str, word: Word) -> Vec<String> {
    let schema = schema();
    let events = events(&schema);
    let patterns = Patterns::parse(text, word).and_then(|p| p.resolve(events.iter().copied()));
    let codes = patterns.unwrap_or_else(|e| panic!("{text:?}: {e}")).compile(events.iter().copied());
    codes
        .iter()
        .map(|code| match schema.event_by_code(code) {
            Some(e) => e.name.clone(),
            None => builtin::ALL.iter().find(|b| b.code == code).unwrap().name.to_owned(),
        })
        .collect()
}

fn error(text: &str, word: Word) -> SelectError {
    Patterns::parse(text, word).unwrap_err()
}

mod compiled_selections {
    use super::*;

    #[test]
    fn the_bitmap_holds_exactly_the_recorded_events() {
        let schema = schema();
        for text in
            ["all", "none", "Pool", "-Pool", "Pool -Pool:PoolInit", "*:Seg*", "-SegSplit", "0x5", "A* Seg:SegAlloc"]
        {
            let selection = select::from_env_text(text, &[&schema]).unwrap().remove(0);
            let codes = selection.compile(&schema);
            for event in &schema.events {
                assert_eq!(codes.contains(event.code), selection.records(event), "{text:?}: {}", event.name);
            }
            assert_eq!(codes.len(), selection.enabled_codes(&schema).count(), "{text:?}");
            assert!(builtin::ALL.iter().all(|b| !codes.contains(b.code)), "built-ins are not the selection's");
        }
    }

    #[test]
    fn the_bitmap_is_the_recorders_layout() {
        let schema = schema();
        let codes = select::from_env_text("Seg:SegSplit", &[&schema]).unwrap()[0].compile(&schema);
        let mut words = [0u64; select::WORDS];
        words[0x22 >> 6] = 1 << (0x22 & 63);
        assert_eq!(codes.words(), &words);
    }

    proptest! {
        #[test]
        fn compile_agrees_with_records(kinds in 0u64..8, overrides in prop::collection::btree_map(
            prop::sample::select(vec![0x0001u16, 0x0004, 0x0010, 0x0011, 0x0020, 0x0022]), any::<bool>(), 0..6)
        ) {
            let schema = schema();
            let selection = Selection { kinds, overrides };
            let codes = selection.compile(&schema);
            for event in &schema.events {
                prop_assert_eq!(codes.contains(event.code), selection.records(event));
            }
            prop_assert_eq!(codes, selection.enabled_codes(&schema).collect::<CodeSet>());
        }
    }
}

mod patterns {
    use super::*;

    #[test]
    fn bare_words_name_what_the_option_says() {
        assert_eq!(chosen("Pool", Word::Kind), ["PoolInit", "PoolFinish"]);
        assert_eq!(chosen("PoolInit", Word::Event), ["PoolInit"]);
        // A kind's name is no event's name, and the other way round.
        assert!(chosen("Pool", Word::Event).is_empty());
        assert!(chosen("PoolInit", Word::Kind).is_empty());
    }

    #[test]
    fn lists_globs_and_separators() {
        assert_eq!(chosen("Pool,Se*", Word::Kind), ["PoolInit", "PoolFinish", "SegAlloc", "SegSplit"]);
        assert_eq!(chosen("Pool Seg", Word::Kind), ["PoolInit", "PoolFinish", "SegAlloc", "SegSplit"]);
        assert_eq!(chosen(" Pool ,, Seg ", Word::Kind).len(), 4);
        assert_eq!(chosen("*Init,Seg?plit", Word::Event), ["PoolInit", "SegSplit"]);
        assert_eq!(chosen("?", Word::Kind), Vec::<String>::new());
    }

    #[test]
    fn kind_and_event_with_a_colon_or_a_dot() {
        for word in [Word::Kind, Word::Event] {
            assert_eq!(chosen("Arena:*", word), ["ArenaCreate", "ArenaPoll"]);
            assert_eq!(chosen("Arena.*", word), ["ArenaCreate", "ArenaPoll"], "the old spelling");
            assert_eq!(chosen("Pool.PoolInit,Seg:SegSplit", word), ["PoolInit", "SegSplit"]);
            assert_eq!(chosen("*.*Alloc", word), ["SegAlloc"]);
            assert!(chosen("Seg:PoolInit", word).is_empty(), "the kind must match too");
        }
    }

    #[test]
    fn built_in_events_can_be_named() {
        let builtins: Vec<&str> = builtin::ALL.iter().map(|b| b.name).collect();
        assert_eq!(chosen("Builtin", Word::Kind), builtins);
        assert_eq!(chosen("Dropped", Word::Event), ["Dropped"]);
        assert_eq!(chosen("Builtin.Intern", Word::Event), ["Intern"]);
    }

    #[test]
    fn removals_and_the_last_item_wins() {
        let all = events(&schema()).len();
        assert_eq!(chosen("-Pool", Word::Kind).len(), all - 2, "a first removal starts from every event");
        assert_eq!(chosen("-Pool,-Builtin", Word::Kind), ["ArenaCreate", "ArenaPoll", "SegAlloc", "SegSplit"]);
        assert_eq!(chosen("Pool,-Pool:PoolInit", Word::Kind), ["PoolFinish"]);
        assert_eq!(chosen("-Pool:PoolInit,Pool", Word::Kind).len(), all);
        assert_eq!(chosen("*,-Arena.*,-Builtin:*", Word::Event), ["PoolInit", "PoolFinish", "SegAlloc", "SegSplit"]);
        assert!(chosen("Pool -Pool", Word::Kind).is_empty());
    }

    #[test]
    fn an_empty_list_chooses_nothing() {
        assert!(chosen("", Word::Kind).is_empty());
        assert!(chosen(" , ", Word::Event).is_empty());
    }

    #[test]
    fn items_carry_text_column_and_sides() {
        let p = Patterns::parse("Pool, -Arena.Arena*", Word::Event).unwrap();
        let items = p.items();
        assert_eq!((items[0].text.as_str(), items[0].column, items[0].removal), ("Pool", 1, false));
        assert_eq!((items[0].kind.as_deref(), items[0].event.as_deref()), (None, Some("Pool")));
        assert_eq!((items[1].text.as_str(), items[1].column, items[1].removal), ("-Arena.Arena*", 7, true));
        assert_eq!((items[1].kind.as_deref(), items[1].event.as_deref()), (Some("Arena"), Some("Arena*")));
        assert!(items[1].matches_in("test", "Arena", "ArenaPoll") && !items[1].matches_in("test", "Pool", "ArenaPoll"));
    }

    #[test]
    fn syntax_errors_are_the_control_grammars() {
        let e = error("Pool -", Word::Kind);
        assert_eq!((e.item.as_str(), e.column), ("-", 6));
        assert_eq!(
            e.message,
            "\"-\" at column 6 removes nothing; write a kind or an event right after the '-', such as \"-Kind\" or \"-Kind:Event\""
        );
        // Two ':' name a set's kind's events (`set:Kind:Event`); a third is too many.
        assert!(error("Pool:PoolInit:x:y", Word::Event).message.contains("more than one ':'"));
        assert_eq!(
            error(".PoolInit", Word::Event).message,
            "\".PoolInit\" at column 1 names no kind before the ':'; write \"*:PoolInit\" for an event of any kind"
        );
        assert_eq!(
            error("-Pool:", Word::Kind).message,
            "\"-Pool:\" at column 1 names no event after the ':'; write \"-Pool:*\" for every event of the kind, or \"-Pool\" for the kind itself"
        );
        assert!(error(&"x".repeat(2000), Word::Kind).message.contains("longer than any item can usefully be"));
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in any::<String>(), kind in any::<bool>()) {
            let word = if kind { Word::Kind } else { Word::Event };
            let schema = schema();
            match Patterns::parse(&text, word) {
                Ok(p) => { p.compile(events(&schema)); }
                Err(e) => {
                    let at = format!(" at column {}", e.column);
                    prop_assert!(!e.message.contains('\n') && e.message.contains(&at), "{:?}", e.message);
                }
            }
        }
    }
}

/// Several sets ([`select::from_env_text`] and its kin): two sets that reuse each other's
/// codes, kind names and event names, and a third named like a kind.
mod several_sets {
    use super::*;

    const APP: &str = r#"VERSION(1, 0, 0)
SET(app)
KIND(Arena, "arena")
KIND(Pool, "pools")
RELATION(ArenaCreate, 0x0001, TRUE, Arena, 0)
RELATION(PoolInit, 0x0002, TRUE, Pool, 0)
RELATION(Poll, 0x0003, TRUE, Arena, 0)
"#;

    const STORAGE: &str = r#"VERSION(2, 0, 0)
SET(storage)
KIND(Pool, "buffer pool")
KIND(Page, "pages")
RELATION(PoolInit, 0x0001, TRUE, Pool, 0)
RELATION(PageWrite, 0x0002, TRUE, Page, 0)
RELATION(PageRead, 0x0003, FALSE, Page, 0)
"#;

    /// A set named like app's kind `Pool`, with a kind named like app's event `PoolInit`.
    const POOL: &str = r#"VERSION(1, 0, 0)
SET(Pool)
KIND(PoolInit, "pool setup")
RELATION(Setup, 0x0001, TRUE, PoolInit, 0)
"#;

    fn set(def: &str) -> Schema {
        event_format::def::parse(def, "test.def").unwrap()
    }

    /// The names (`set:Event`) that `selections` record.
    fn recorded(sets: &[&Schema], selections: &[Selection]) -> Vec<String> {
        sets.iter()
            .zip(selections)
            .flat_map(|(s, sel)| s.events.iter().filter(|e| sel.records(e)).map(|e| format!("{}:{}", s.name, e.name)))
            .collect()
    }

    fn chosen(text: &str) -> Vec<String> {
        let (app, storage) = (set(APP), set(STORAGE));
        let sets = [&app, &storage];
        let selections = select::from_env_text(text, &sets).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        recorded(&sets, &selections)
    }

    fn error(text: &str) -> String {
        let (app, storage) = (set(APP), set(STORAGE));
        select::from_env_text(text, &[&app, &storage]).unwrap_err().message
    }

    #[test]
    fn qualified_items_choose_in_their_set() {
        assert_eq!(chosen("storage:*"), ["storage:PoolInit", "storage:PageWrite", "storage:PageRead"]);
        assert_eq!(chosen("storage:Pool"), ["storage:PoolInit"]);
        assert_eq!(chosen("app:Pool"), ["app:PoolInit"]);
        assert_eq!(chosen("storage:Page:PageWrite"), ["storage:PageWrite"]);
        assert_eq!(chosen("storage:Page:*"), ["storage:PageWrite", "storage:PageRead"]);
        assert_eq!(chosen("storage:*:Page*"), ["storage:PageWrite", "storage:PageRead"]);
        assert_eq!(chosen("s*:Pa*"), ["storage:PageWrite", "storage:PageRead"]);
        assert_eq!(chosen("*:Pool"), ["app:PoolInit", "storage:PoolInit"]);
        assert_eq!(chosen("*:*:PoolInit"), ["app:PoolInit", "storage:PoolInit"]);
        assert_eq!(chosen("storage:0x2"), ["storage:PageWrite", "storage:PageRead"]);
        assert_eq!(chosen("storage:all -storage:Pool"), ["storage:PageWrite", "storage:PageRead"]);
        assert_eq!(chosen("all storage:none"), ["app:ArenaCreate", "app:PoolInit", "app:Poll"]);
    }

    #[test]
    fn removals_numbers_and_keywords_apply_to_every_set() {
        assert_eq!(chosen("-storage:*"), ["app:ArenaCreate", "app:PoolInit", "app:Poll"]);
        assert_eq!(
            chosen("-storage:Page:PageRead"),
            ["app:ArenaCreate", "app:PoolInit", "app:Poll", "storage:PoolInit", "storage:PageWrite"]
        );
        assert_eq!(chosen("all -app:*"), ["storage:PoolInit", "storage:PageWrite", "storage:PageRead"]);
        assert!(chosen("none").is_empty());
        assert_eq!(chosen("0x1"), ["app:ArenaCreate", "app:Poll", "storage:PoolInit"]);
        assert_eq!(chosen("all").len(), 6);
        assert!(chosen("-all").is_empty());
    }

    #[test]
    fn unqualified_names_resolve_where_they_are_unambiguous() {
        assert_eq!(chosen("Arena"), ["app:ArenaCreate", "app:Poll"]);
        assert_eq!(chosen("Page"), ["storage:PageWrite", "storage:PageRead"]);
        assert_eq!(chosen("PageWrite Arena:Poll"), ["app:Poll", "storage:PageWrite"]);
        // A glob applies in every set where it matches.
        assert_eq!(chosen("Po*"), ["app:PoolInit", "storage:PoolInit"]);
        assert_eq!(chosen("*:*Init"), ["app:PoolInit", "storage:PoolInit"]);
        // A plain name two sets define is an error with the qualified candidates.
        assert_eq!(
            error("Pool"),
            "\"Pool\" at column 1 is ambiguous: 2 sets define it; write \"app:Pool\" or \"storage:Pool\""
        );
        assert_eq!(
            error("-PoolInit"),
            "\"-PoolInit\" at column 1 is ambiguous: 2 sets define it; write \"-app:Pool:PoolInit\" or \"-storage:Pool:PoolInit\""
        );
        assert_eq!(
            error("Arena Pool:PoolInit"),
            "\"Pool:PoolInit\" at column 7 is ambiguous: 2 sets define it; write \"app:Pool:PoolInit\" or \"storage:Pool:PoolInit\""
        );
    }

    #[test]
    fn a_set_named_like_a_kind_is_an_ambiguity_with_both_spellings() {
        let (app, pool) = (set(APP), set(POOL));
        let sets = [&app, &pool];
        let error = select::from_env_text("Pool:PoolInit", &sets).unwrap_err();
        assert_eq!(
            error.message,
            "\"Pool:PoolInit\" at column 1 is ambiguous: it reads as kind Pool's event PoolInit and as set Pool's PoolInit; write set:Kind:Event, \"app:Pool:PoolInit\" or \"Pool:PoolInit:*\""
        );
        for (text, names) in [
            ("app:Pool:PoolInit", vec!["app:PoolInit"]),
            ("Pool:PoolInit:*", vec!["Pool:Setup"]),
            ("Pool:all", vec!["Pool:Setup"]),
            ("Pool:0x1", vec!["Pool:Setup"]),
            ("Pool:Setup", vec!["Pool:Setup"]),
        ] {
            let selections = select::from_env_text(text, &sets).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(recorded(&sets, &selections), names, "{text:?}");
            assert_eq!(select::from_env_text(&select::describe(&sets, &selections), &sets).unwrap(), selections);
        }
    }

    #[test]
    fn did_you_mean_across_sets() {
        assert_eq!(
            error("stroage:Page"),
            "unknown set \"stroage\" in \"stroage:Page\" at column 1 (did you mean \"storage:Page\"?); sets are app, storage"
        );
        assert_eq!(
            error("stroage:Page:PageWrite"),
            "unknown set \"stroage\" in \"stroage:Page:PageWrite\" at column 1 (did you mean \"storage:Page:PageWrite\"?); sets are app, storage"
        );
        assert!(error("storage:Pgae").contains("(did you mean \"storage:Page\"?)"), "{}", error("storage:Pgae"));
        assert!(
            error("storage:Page:PageWirte").contains("(did you mean \"storage:Page:PageWrite\"?)"),
            "{}",
            error("storage:Page:PageWirte")
        );
        assert!(error("Pgae").contains("(did you mean \"storage:Page\"?)"), "{}", error("Pgae"));
        assert!(error("-ArenaCraete").contains("(did you mean \"-app:ArenaCreate\"?)"), "{}", error("-ArenaCraete"));
        assert_eq!(
            error("Nothing"),
            "\"Nothing\" at column 1 names nothing in any set; sets are app (kinds Arena, Pool), storage (kinds Pool, Page)"
        );
        assert_eq!(
            error("x*:Page"),
            "\"x*:Page\" at column 1 names nothing in any set; sets are app (kinds Arena, Pool), storage (kinds Pool, Page)"
        );
        assert_eq!(
            error("a:b:c:d"),
            "\"a:b:c:d\" at column 1 has more than two ':'; write one set:Kind:Event per item"
        );
        assert_eq!(
            error(""),
            "nothing chosen at column 1: the text has no items; write \"all\", \"none\", set:Kind or set:Kind:Event; sets are app, storage"
        );
        assert!(error("Builtin").contains("built-in"), "{}", error("Builtin"));
        assert!(error("-0x1").contains("cannot be removed"));
        assert!(error("0x8").contains("sets bit 3"), "{}", error("0x8"));
    }

    #[test]
    fn describe_reads_back() {
        let (app, storage) = (set(APP), set(STORAGE));
        let sets = [&app, &storage];
        for (text, described) in [
            ("none", "none"),
            ("all", "app:* storage:*"),
            ("storage:Page", "storage:Page"),
            ("-storage:Page:PageRead", "app:* storage:* -storage:Page:PageRead"),
            ("none -app:Arena:Poll", "none -app:Arena:Poll"),
            ("app:Pool storage:Page:PageWrite", "app:Pool storage:Page:PageWrite"),
        ] {
            let selections = select::from_env_text(text, &sets).unwrap();
            assert_eq!(select::describe(&sets, &selections), described, "{text:?}");
            assert_eq!(select::from_env_text(described, &sets).unwrap(), selections, "{text:?}");
        }
    }

    #[test]
    fn apply_sets_changes_the_current_selections() {
        let (app, storage) = (set(APP), set(STORAGE));
        let sets = [&app, &storage];
        let mut current = vec![Selection::all(&app), Selection::none()];
        select::apply("-app:Arena storage:Page:PageRead", &sets, &mut current).unwrap();
        assert_eq!(recorded(&sets, &current), ["app:PoolInit", "storage:PageRead"]);
        let before = current.clone();
        assert!(select::apply("storage:Page Pool", &sets, &mut current).is_err());
        assert_eq!(current, before, "an error changes nothing");
        let error = select::apply("all", &sets, &mut current[..1]).unwrap_err();
        assert_eq!(error.message, "1 selections for 2 event sets; give one selection per set");
    }

    proptest! {
        #[test]
        fn any_selections_describe_and_read_back(app_kinds in 0u64..4, storage_kinds in 0u64..4, overrides in proptest::collection::vec((0usize..2, 0usize..3, any::<bool>()), 0..4)) {
            let (app, storage) = (set(APP), set(STORAGE));
            let sets = [&app, &storage];
            let mut selections = vec![Selection { kinds: app_kinds, ..Selection::none() }, Selection { kinds: storage_kinds, ..Selection::none() }];
            for (s, e, on) in overrides {
                selections[s].overrides.insert(sets[s].events[e].code, on);
            }
            let text = select::describe(&sets, &selections);
            prop_assert_eq!(select::from_env_text(&text, &sets).unwrap(), selections, "{}", text);
        }
    }
}

/// A reader's patterns over several sets ([`Patterns::parse`]): event-dump's `--kind`
/// and `--event` on a stream of two sets that reuse each other's names.
mod reader_patterns_over_sets {
    use super::*;

    const EVENTS: [(u16, &str, &str, &str); 6] = [
        (0x0001, "app", "Arena", "ArenaCreate"),
        (0x0002, "app", "Pool", "PoolInit"),
        (0x0003, "storage", "Pool", "PoolInit"),
        (0x0004, "storage", "Page", "PageWrite"),
        (0x0005, "Pool", "PoolInit", "Setup"),
        (0xFF03, "", "Builtin", "Dropped"),
    ];

    fn chosen(text: &str, word: Word) -> Result<Vec<u16>, SelectError> {
        let patterns = Patterns::parse(text, word)?.resolve(EVENTS)?;
        Ok(patterns.compile(EVENTS).iter().collect())
    }

    #[test]
    fn qualified_and_unqualified_items() {
        assert_eq!(chosen("storage:*", Word::Kind).unwrap(), [0x0003, 0x0004]);
        assert_eq!(chosen("storage:Page", Word::Kind).unwrap(), [0x0004]);
        assert_eq!(chosen("storage:PageWrite", Word::Event).unwrap(), [0x0004]);
        assert_eq!(chosen("storage:Page:PageWrite", Word::Kind).unwrap(), [0x0004]);
        assert_eq!(chosen("storage:Page.PageWrite", Word::Event).unwrap(), [0x0004]);
        assert_eq!(chosen("*:Pool:*", Word::Kind).unwrap(), [0x0002, 0x0003]);
        assert_eq!(chosen("Pool", Word::Kind).unwrap(), [0x0002, 0x0003], "an unqualified name: every set");
        assert_eq!(chosen("Pool.PoolInit", Word::Event).unwrap(), [0x0002, 0x0003], "the old spelling");
        assert_eq!(chosen("-storage:*", Word::Kind).unwrap(), [0x0001, 0x0002, 0x0005, 0xFF03]);
        assert_eq!(chosen("Builtin", Word::Kind).unwrap(), [0xFF03]);
        assert_eq!(chosen("Arena:ArenaCreate", Word::Event).unwrap(), [0x0001]);
    }

    #[test]
    fn an_a_b_that_reads_both_ways_is_an_error() {
        let e = chosen("Pool:PoolInit", Word::Kind).unwrap_err();
        assert_eq!(
            e.message,
            "\"Pool:PoolInit\" at column 1 is ambiguous: it reads as kind Pool's event PoolInit and as set Pool's PoolInit; write \"app:Pool:PoolInit\", \"storage:Pool:PoolInit\" or \"Pool:PoolInit:*\""
        );
        // With --event, set Pool's `PoolInit` would be an event: it has none, so no ambiguity.
        assert_eq!(chosen("Pool:PoolInit", Word::Event).unwrap(), [0x0002, 0x0003]);
        assert_eq!(chosen("Pool:PoolInit:*", Word::Kind).unwrap(), [0x0005]);
        assert_eq!(chosen("Pool:Setup", Word::Event).unwrap(), [0x0005], "only the set reading matches");
    }

    #[test]
    fn the_syntax_errors() {
        assert_eq!(
            Patterns::parse(":Pool:PoolInit", Word::Kind).unwrap_err().message,
            "\":Pool:PoolInit\" at column 1 names no set before the first ':'; write \"*:Pool:PoolInit\" for the events of every set"
        );
        assert!(Patterns::parse("a:b:c:d", Word::Kind).unwrap_err().message.contains("more than one ':'"));
        assert!(Patterns::parse("app:Pool:", Word::Kind).unwrap_err().message.contains("names no event"));
        let p = Patterns::parse("-storage:Page.Page*", Word::Event).unwrap();
        let item = &p.items()[0];
        assert_eq!(
            (item.set.as_deref(), item.kind.as_deref(), item.event.as_deref(), item.removal),
            (Some("storage"), Some("Page"), Some("Page*"), true)
        );
        assert!(item.matches_in("storage", "Page", "PageRead") && !item.matches_in("app", "Page", "PageRead"));
    }
}

/// No text makes the several-set functions panic, and every error is one line naming its
/// column; whatever reads, describes back to the same selections.
mod several_sets_never_panic {
    use super::*;

    fn sets() -> Vec<Schema> {
        let mut app = schema();
        app.name = "app".to_owned();
        let mut storage = schema();
        storage.name = "storage-v2".to_owned();
        let mut pool = event_format::def::parse(
            "VERSION(1, 0, 0)\nKIND(PoolInit, \"k\")\nRELATION(Seg, 0x0001, TRUE, PoolInit, 0)\n",
            "Pool.def",
        )
        .unwrap();
        pool.name = "Pool".to_owned();
        vec![app, storage, pool]
    }

    proptest! {
        #[test]
        fn arbitrary_text(text in "[-a-zA-Z*?:., 0-9x_]{0,24}|\\PC{0,12}") {
            let owned = sets();
            let sets: Vec<&Schema> = owned.iter().collect();
            match select::from_env_text(&text, &sets) {
                Ok(selections) => {
                    let described = select::describe(&sets, &selections);
                    prop_assert_eq!(select::from_env_text(&described, &sets).unwrap(), selections, "{}", described);
                }
                Err(e) => {
                    let at = format!(" at column {}", e.column);
                    prop_assert!(!e.message.contains('\n') && (e.message.contains(&at) || e.item.is_empty()), "{:?}", e.message);
                }
            }
            let mut current = vec![Selection::none(); 3];
            let _ = select::apply(&text, &sets, &mut current);
            let _ = select::from_env_text(&text, &[]);
            if let Ok(p) = Patterns::parse(&text, Word::Kind) {
                let events = [(1u16, "app", "Pool", "PoolInit"), (2, "Pool", "PoolInit", "Seg"), (0xFF03, "", "Builtin", "Dropped")];
                if let Ok(p) = p.resolve(events) {
                    p.compile(events);
                }
            }
        }
    }
}
