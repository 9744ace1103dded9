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

/// What a reader passes to [`Patterns::compile`]: the schema's events and the built-ins.
fn events(schema: &Schema) -> Vec<(u16, &str, &str)> {
    schema
        .events
        .iter()
        .map(|e| (e.code, schema.kinds[usize::from(e.kind)].name.as_str(), e.name.as_str()))
        .chain(builtin::ALL.iter().map(|b| (b.code, BUILTIN_KIND, b.name)))
        .collect()
}

/// The names of the events `text` chooses, read with `word`.
fn chosen(text: &str, word: Word) -> Vec<String> {
    let schema = schema();
    let codes = Patterns::parse(text, word).unwrap_or_else(|e| panic!("{text:?}: {e}")).compile(events(&schema));
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
            let selection = select::from_env_text(text, &schema).unwrap();
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
        let codes = select::from_env_text("Seg:SegSplit", &schema).unwrap().compile(&schema);
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
        assert!(items[1].matches("Arena", "ArenaPoll") && !items[1].matches("Pool", "ArenaPoll"));
    }

    #[test]
    fn syntax_errors_are_the_control_grammars() {
        let e = error("Pool -", Word::Kind);
        assert_eq!((e.item.as_str(), e.column), ("-", 6));
        assert_eq!(
            e.message,
            "\"-\" at column 6 removes nothing; write a kind or an event right after the '-', such as \"-Kind\" or \"-Kind:Event\""
        );
        assert_eq!(
            error("Pool:PoolInit:x", Word::Event).message,
            "\"Pool:PoolInit:x\" at column 1 has more than one ':'; write one Kind:Event per item"
        );
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
