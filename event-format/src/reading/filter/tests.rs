//! The filter language: parsing, type errors with their carets, and matching.

use super::eval::glob_matches;
use super::value::{Num, NumberError, parse_number};
use super::*;
use std::collections::HashMap;

/// The parameter names of a small schema.
const PARAMS: &[&str] = &["a", "b", "c", "size", "arena", "class", "ratio", "size", "label"];

/// An event: its values in a map, by name.
#[derive(Debug, Default)]
struct Event(HashMap<&'static str, FieldValue<'static>>);

impl Filterable for Event {
    fn get(&self, name: &str) -> Option<FieldValue<'_>> {
        self.0.get(name).cloned()
    }
}

fn int(v: i128) -> FieldValue<'static> {
    FieldValue::Int(v)
}

fn float(v: f64) -> FieldValue<'static> {
    FieldValue::Float(v)
}

fn string(v: &'static str) -> FieldValue<'static> {
    FieldValue::Str(Cow::Borrowed(v))
}

fn event(values: &[(&'static str, FieldValue<'static>)]) -> Event {
    Event(values.iter().cloned().collect())
}

/// An event of set `storage`: `name` and `kind` have qualified forms.
struct InSet;

impl Filterable for InSet {
    fn get(&self, name: &str) -> Option<FieldValue<'_>> {
        match name {
            "name" => Some(string("PageWrite")),
            "kind" => Some(string("Page")),
            "set" => Some(string("storage")),
            _ => None,
        }
    }

    fn qualified(&self, name: &str) -> Option<FieldValue<'_>> {
        match name {
            "name" => Some(string("storage:PageWrite")),
            "kind" => Some(string("storage:Page")),
            _ => None,
        }
    }
}

#[test]
fn name_and_kind_with_a_colon_compare_qualified() {
    let yes = |expr: &str| parse(expr).matches(&InSet);
    assert!(yes("name == PageWrite && kind == Page && set == storage"));
    assert!(yes("name == storage:PageWrite && kind == \"storage:Page\""));
    assert!(yes("name ~ \"stor*:Page*\" && kind != app:Page"));
    assert!(!yes("name == app:PageWrite") && !yes("kind ~ \"*:Pool\""));
    // Without a qualified form (a built-in event, a 1.x log), the plain value is compared.
    assert!(!parse("name == a:b").matches(&event(&[("name", string("b"))])));
    assert!(parse("name == a:b").matches(&event(&[("name", string("a:b"))])));
}

fn parse(expr: &str) -> Filter {
    Filter::parse(expr, PARAMS).unwrap_or_else(|e| panic!("{}", e.render(expr)))
}

/// A tracing span's entry: its parameter `name`, its tracing fields, its thread's name.
struct Span;

impl Filterable for Span {
    fn get(&self, name: &str) -> Option<FieldValue<'_>> {
        match name {
            "name" => Some(string("SpanEnter")),
            "thread" => Some(int(6)),
            "cut" => Some(string("abc")),
            "bytes" => Some(FieldValue::Str(String::from_utf8_lossy(b"a\xffb"))),
            "ok" => Some(FieldValue::Bool(true)),
            _ => None,
        }
    }

    fn param(&self, name: &str) -> Option<FieldValue<'_>> {
        (name == "name").then(|| string("fetch"))
    }

    fn tracing_field(&self, name: &str) -> Option<FieldValue<'_>> {
        match name {
            "id" => Some(int(7)),
            "user" => Some(string("ada")),
            "http.ok" => Some(FieldValue::Bool(false)),
            _ => None,
        }
    }

    fn thread_name(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed("compactor"))
    }

    fn printed_name(&self, with_set: bool) -> Option<Cow<'_, str>> {
        // A built-in event has no set.
        let _ = with_set;
        Some(Cow::Borrowed("Builtin.SpanEnter"))
    }
}

#[test]
fn values_read_back_as_print_shows_them() {
    let params =
        [("cut", ValueType::Str), ("bytes", ValueType::Str), ("ok", ValueType::Bool), ("name", ValueType::Str)];
    let yes = |expr: &str| {
        let filter = Filter::parse_typed(expr, &params).unwrap_or_else(|e| panic!("{}", e.render(expr)));
        // The canonical form reads back as itself, and selects the same.
        let again = Filter::parse_typed(&filter.to_string(), &params).unwrap();
        assert_eq!(again.to_string(), filter.to_string());
        assert_eq!(again.matches(&Span), filter.matches(&Span), "{expr}");
        filter.matches(&Span)
    };
    for expr in [
        "name == SpanEnter",
        "name == Builtin.SpanEnter",
        "args.name == fetch",
        "args.name == \"fetch\"",
        "fields.id == 7",
        "fields.id == 0x7",
        "fields.user == ada",
        "fields.http.ok == false",
        "thread == T6",
        "thread == \"T6\"",
        "thread == 6",
        "thread == compactor",
        "thread ~ comp*",
        "thread != T7",
        "ok == true",
        "ok != false",
        "ok == 1",
        "cut == \"abc\"...",
        "bytes == \"a\\xffb\"",
        "bytes == \"a\\ufffdb\"",
        "bytes == \"a\\u{fffd}b\"",
    ] {
        assert!(yes(expr), "{expr}");
    }
    for expr in [
        "args.name == SpanEnter",
        "name == fetch",
        "fields.id == 70",
        "fields.id == \"7\" && fields.user == 7",
        "fields.missing == 1",
        "fields.missing != 1",
        "thread == T60",
        "thread == worker",
        "ok == false",
    ] {
        assert!(!yes(expr), "{expr}");
    }
    let shown = |expr: &str| Filter::parse_typed(expr, &params).unwrap().to_string();
    assert_eq!(shown("cut == \"abc\"..."), "cut == \"abc\"...");
    assert_eq!(shown("args.ok == 1 && fields.x.y != \"z\""), "args.ok == 1 && fields.x.y != \"z\"");
}

#[test]
fn type_errors_point_at_the_value_or_the_operator() {
    let params = [
        ("ok", ValueType::Bool),
        ("size", ValueType::Int),
        ("class", ValueType::Str),
        ("x", ValueType::Int),
        ("x", ValueType::Str),
    ];
    let column = |expr: &str| Filter::parse_typed(expr, &params).map(|_| 0).unwrap_or_else(|e| e.column);
    assert_eq!(column("ok == yes"), 7);
    assert_eq!(column("ok <= true"), 4);
    assert_eq!(column("size ~ \"4*\""), 6);
    assert_eq!(column("size == big"), 9);
    assert_eq!(column("class == 5"), 10);
    assert_eq!(column("class == \"5\""), 0);
    // A name of two types: an error only when neither can match.
    assert_eq!(column("x == 5"), 0);
    assert_eq!(column("x == five"), 0);
    assert_eq!(column("x ~ \"f*\""), 0);
    assert_eq!(column("args.ok == maybe"), 12);
    // fields.NAME is checked event by event.
    assert_eq!(column("fields.ok == maybe"), 0);
    // Untyped names (Filter::parse) accept every comparison.
    assert!(Filter::parse("ok == maybe", &["ok"]).is_ok());
}

fn matches(expr: &str, event: &Event) -> bool {
    parse(expr).matches(event)
}

fn parse_error(expr: &str) -> FilterError {
    match Filter::parse(expr, PARAMS) {
        Ok(filter) => panic!("`{expr}` parsed as `{filter}`"),
        Err(e) => e,
    }
}

#[test]
fn doc_example() {
    struct Alloc;
    impl Filterable for Alloc {
        fn get(&self, name: &str) -> Option<FieldValue<'_>> {
            match name {
                "name" => Some(FieldValue::Str(Cow::Borrowed("PoolAlloc"))),
                "size" => Some(FieldValue::Int(8192)),
                _ => None,
            }
        }
    }

    let filter = Filter::parse(r#"size >= 0x1000 && name ~ "Pool*""#, &["pool", "size"]).unwrap();
    assert!(filter.matches(&Alloc));
    // A name the event lacks makes its comparison false.
    assert!(!Filter::parse("pool == 1", &["pool"]).unwrap().matches(&Alloc));

    let err = Filter::parse("size = 4096", &["size"]).unwrap_err();
    assert_eq!(
        err.render("size = 4096"),
        "error: bad filter: unknown operator `=`; did you mean `==`?\n    size = 4096\n         ^",
    );
}

#[test]
fn precedence_shows_in_the_canonical_form() {
    let cases = [
        ("a == 1 || b == 2 && c == 3", "a == 1 || (b == 2 && c == 3)"),
        ("a == 1 && b == 2 || c == 3", "(a == 1 && b == 2) || c == 3"),
        ("a == 1 && b == 2 && c == 3", "a == 1 && b == 2 && c == 3"),
        ("a == 1 || b == 2 || c == 3", "a == 1 || b == 2 || c == 3"),
        ("(a == 1 || b == 2) && c == 3", "(a == 1 || b == 2) && c == 3"),
        ("a == 1 || (b == 2 || c == 3)", "a == 1 || (b == 2 || c == 3)"),
        ("!a == 1 && b == 2", "!(a == 1) && b == 2"),
        ("!(a == 1 && b == 2)", "!(a == 1 && b == 2)"),
        ("!!a == 1", "!!(a == 1)"),
        ("! ! ( ( a == 1 ) )", "!!(a == 1)"),
        ("((((a == 1))))", "a == 1"),
        ("a==1||b==2&&!c==3", "a == 1 || (b == 2 && !(c == 3))"),
        ("time>1.5&&thread==0x10||name~\"Pool*\"", "(time > 1.5 && thread == 16) || name ~ \"Pool*\""),
        (
            r#"name == PoolInit && class != "a \"q\" \\ \n\t" && size <= -7"#,
            r#"name == "PoolInit" && class != "a \"q\" \\ \n\t" && size <= -7"#,
        ),
        ("ratio >= 2e-3 || ratio < -.5 || ratio > 1E+6", "ratio >= 0.002 || ratio < -0.5 || ratio > 1000000.0"),
    ];
    for (expr, canonical) in cases {
        let filter = parse(expr);
        assert_eq!(filter.to_string(), canonical, "{expr}");
        // The canonical form reads back as itself.
        assert_eq!(parse(canonical).to_string(), canonical, "{expr}");
    }
}

/// Every assignment of true and false to `a`, `b`, `c` (as `x == 1`).
fn truth_table(expr: &str, expected: impl Fn(bool, bool, bool) -> bool) {
    let filter = parse(expr);
    for bits in 0..8 {
        let (a, b, c) = (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
        let e = event(&[("a", int(i128::from(a))), ("b", int(i128::from(b))), ("c", int(i128::from(c)))]);
        assert_eq!(filter.matches(&e), expected(a, b, c), "{expr} with a={a} b={b} c={c}");
    }
}

#[test]
fn precedence_and_associativity() {
    truth_table("a == 1 || b == 1 && c == 1", |a, b, c| a || (b && c));
    truth_table("a == 1 && b == 1 || c == 1", |a, b, c| (a && b) || c);
    truth_table("(a == 1 || b == 1) && c == 1", |a, b, c| (a || b) && c);
    truth_table("a == 1 && (b == 1 || c == 1)", |a, b, c| a && (b || c));
    truth_table("!a == 1 && b == 1", |a, b, _| !a && b);
    truth_table("!a == 1 || b == 1", |a, b, _| !a || b);
    truth_table("!(a == 1 || b == 1)", |a, b, _| !(a || b));
    truth_table("!!a == 1", |a, _, _| a);
    truth_table("!!!a == 1", |a, _, _| !a);
    truth_table("a == 1 || b == 1 || c == 1", |a, b, c| a || b || c);
    truth_table("a == 1 && b == 1 && c == 1", |a, b, c| a && b && c);
    truth_table("a == 1 && !b == 1 || !c == 1 && a == 0", |a, b, c| (a && !b) || (!c && !a));
    truth_table("a != 1 || b == 1 && !(c == 1 && b == 1)", |a, b, c| !a || (b && !c));
}

#[test]
fn integers() {
    let e = event(&[("size", int(4096)), ("a", int(-3))]);
    for (expr, expected) in [
        ("size == 4096", true),
        ("size != 4096", false),
        ("size < 4096", false),
        ("size <= 4096", true),
        ("size > 4095", true),
        ("size >= 4097", false),
        ("size == 0x1000", true),
        ("size == 0X1000", true),
        ("size < 0xFFFF", true),
        ("a == -3", true),
        ("a < -2", true),
        ("a > -0x4", true),
        ("a<-2", true),
        ("a == 3", false),
        ("size == 4096.0", true),
        ("size < 4096.5", true),
        ("size > 4.096e3", false),
        ("size == 00004096", true),
    ] {
        assert_eq!(matches(expr, &e), expected, "{expr}");
    }
}

#[test]
fn integers_compare_exactly() {
    // 2^60 + 1 is not a double: as doubles the two would be equal.
    let e = event(&[("size", int((1 << 60) + 1)), ("a", int(i128::MIN)), ("b", int(i128::MAX))]);
    assert!(!matches("size == 1152921504606846976", &e));
    assert!(matches("size > 1152921504606846976", &e));
    assert!(matches("size == 1152921504606846977", &e));
    assert!(matches("a == -170141183460469231731687303715884105728", &e));
    assert!(matches("a == -0x80000000000000000000000000000000", &e));
    assert!(matches("b == 170141183460469231731687303715884105727", &e));
    assert!(matches("b == 0x7fffffffffffffffffffffffffffffff", &e));
    // u64::MAX, as an address would be.
    let e = event(&[("arena", int(i128::from(u64::MAX)))]);
    assert!(matches("arena == 0xffffffffffffffff", &e));
    assert!(matches("arena == 18446744073709551615", &e));
}

#[test]
fn floats() {
    let e = event(&[("time", float(1.5)), ("ratio", float(-0.002))]);
    for (expr, expected) in [
        ("time == 1.5", true),
        ("time != 1.5", false),
        ("time > 1", true),
        ("time < 2", true),
        ("time >= 1.5", true),
        ("time <= 1.4999", false),
        ("time == 15e-1", true),
        ("time == .15e1", true),
        ("time == 1.", false),
        ("ratio == -2e-3", true),
        ("ratio < 0", true),
        ("ratio > -0.0021", true),
        ("ratio >= -0x1", true),
    ] {
        assert_eq!(matches(expr, &e), expected, "{expr}");
    }
    // NaN: unequal to everything, comparable with nothing.
    let e = event(&[("ratio", float(f64::NAN))]);
    assert!(matches("ratio != 0", &e));
    for expr in ["ratio == 0", "ratio < 0", "ratio <= 0", "ratio > 0", "ratio >= 0"] {
        assert!(!matches(expr, &e), "{expr}");
    }
    assert!(matches("ratio == -0.0", &event(&[("ratio", float(0.0))])));
}

#[test]
fn strings() {
    let e = event(&[("name", string("PoolInit")), ("class", string("a \"b\"\\\n\tc"))]);
    for (expr, expected) in [
        ("name == PoolInit", true),
        ("name == \"PoolInit\"", true),
        ("name == poolinit", false),
        ("name != PoolInit", false),
        ("name != Pool", true),
        ("name < PoolInits", true),
        ("name < Pool", false),
        ("name > Pool", true),
        ("name >= PoolInit", true),
        ("name <= PoolInit", true),
        ("name > Q", false),
        ("name < a", true),
        (r#"class == "a \"b\"\\\n\tc""#, true),
        (r#"class == "a \"b\"\\\n\tC""#, false),
    ] {
        assert_eq!(matches(expr, &e), expected, "{expr}");
    }
    let e = event(&[("label", string("größe")), ("kind", string("a:b-c.d"))]);
    assert!(matches("label == größe", &e));
    assert!(matches("label == \"größe\"", &e));
    assert!(matches("kind == a:b-c.d", &e));
}

#[test]
fn globs() {
    let e = event(&[("name", string("PoolAlloc")), ("label", string("größe")), ("class", string(""))]);
    for (expr, expected) in [
        ("name ~ Pool*", true),
        ("name ~ \"Pool*\"", true),
        ("name ~ *Alloc", true),
        ("name ~ *ool*", true),
        ("name ~ *", true),
        ("name ~ Pool", false),
        ("name ~ P?olAlloc", true),
        ("name ~ P?lAlloc", false),
        ("name ~ ?????????", true),
        ("name ~ ??????????", false),
        ("name ~ P*l*c", true),
        ("name ~ P*l*x", false),
        ("name ~ pool*", false),
        ("name !~ Pool*", false),
        ("name !~ Seg*", true),
        ("name ~ **Pool**", true),
        ("label ~ gr?ße", true),
        ("label ~ ?????", true),
        ("label ~ *ß*", true),
        ("class ~ *", true),
        ("class ~ ?", false),
        ("class ~ \"\"", true),
        ("class !~ ?*", true),
    ] {
        assert_eq!(matches(expr, &e), expected, "{expr}");
    }
}

#[test]
fn glob_matching_is_not_exponential() {
    let text = "a".repeat(2000);
    let pattern = format!("{}b", "*a".repeat(50));
    assert!(!glob_matches(&pattern, &text));
    assert!(glob_matches(&format!("{}*", "*a".repeat(50)), &text));
}

#[test]
fn missing_names_make_comparisons_false() {
    let e = event(&[("size", int(1))]);
    for op in ["==", "!=", "<", "<=", ">", ">="] {
        assert!(!matches(&format!("a {op} 1"), &e), "{op}");
        assert!(!matches(&format!("name {op} x"), &e), "{op}");
        // ... so their negation is true.
        assert!(matches(&format!("!(a {op} 1)"), &e), "{op}");
    }
    assert!(!matches("name ~ *", &e));
    assert!(!matches("name !~ x", &e));
    assert!(matches("!(name ~ *)", &e));
    assert!(matches("a == 1 || size == 1", &e));
    assert!(!matches("a == 1 && size == 1", &e));
}

#[test]
fn type_mismatches_make_comparisons_false() {
    // Parameters whose types are not known (`ValueType::Any`, as a name that event types
    // give different types is for some of them): checked event by event.
    let e = event(&[("name", string("12")), ("label", string("12")), ("size", int(12)), ("ratio", float(0.5))]);
    // A string parameter with a number: false, even when the text is the number's.
    for op in ["==", "!=", "<", "<=", ">", ">="] {
        assert!(!matches(&format!("label {op} 12"), &e), "{op}");
        // A built-in whose type is known: an error, never an empty result.
        assert_eq!(parse_error(&format!("name {op} 12")).column, 7 + op.len(), "{op}");
        assert!(!matches(&format!("size {op} twelve"), &e), "{op}");
        assert!(!matches(&format!("ratio {op} \"half\""), &e), "{op}");
    }
    // Text with a string parameter, of course, compares as text.
    assert!(matches("name == \"12\"", &e));
    assert!(matches("name < \"9\"", &e));
    // A numeric parameter with a string that reads as a number: as that number.
    assert!(matches("size == \"12\"", &e));
    assert!(matches("size == \"0xc\"", &e));
    assert!(matches("size < \"12.5\"", &e));
    assert!(matches("ratio == \"5e-1\"", &e));
    assert!(!matches("size == \" 12\"", &e));
    // Globs never match numbers.
    assert!(!matches("size ~ \"1*\"", &e));
    assert!(!matches("size !~ \"1*\"", &e));
    assert!(!matches("size ~ \"12\"", &e));
    assert!(!matches("size ~ *", &e));
}

#[test]
fn names_are_known() {
    // Built-ins are known without being passed; repeats and built-ins among the
    // parameter names are harmless.
    for name in BUILTIN_NAMES {
        // Each with a value of its type: `name == 1` can never match.
        let value = if matches!(name, "name" | "kind" | "set") { "x" } else { "1" };
        assert!(Filter::parse(&format!("{name} == {value}"), &[]).is_ok(), "{name}");
    }
    assert!(Filter::parse("x == 1", &["x", "x", "name", "x"]).is_ok());
    assert!(Filter::parse("X == 1", &["x"]).is_err());
}

#[test]
fn numbers() {
    let ok = [
        ("0", Num::Int(0)),
        ("-0", Num::Int(0)),
        ("42", Num::Int(42)),
        ("-7", Num::Int(-7)),
        ("0x1f", Num::Int(31)),
        ("0X1F", Num::Int(31)),
        ("-0x10", Num::Int(-16)),
        ("1.5", Num::Float(1.5)),
        ("1.", Num::Float(1.0)),
        (".5", Num::Float(0.5)),
        ("-.5", Num::Float(-0.5)),
        ("2e-3", Num::Float(0.002)),
        ("2E+3", Num::Float(2000.0)),
        ("1e3", Num::Float(1000.0)),
        ("1.5e3", Num::Float(1500.0)),
    ];
    for (text, num) in ok {
        assert_eq!(parse_number(text), Ok(num), "{text}");
    }
    let bad = [
        ("", NumberError::Syntax),
        ("-", NumberError::Syntax),
        (".", NumberError::Syntax),
        ("0x", NumberError::Hex),
        ("0xZZ", NumberError::Hex),
        ("0x1.5", NumberError::Hex),
        ("1e", NumberError::Syntax),
        ("1e+", NumberError::Syntax),
        ("1.2.3", NumberError::Syntax),
        ("12ab", NumberError::Syntax),
        ("inf", NumberError::Syntax),
        ("nan", NumberError::Syntax),
        ("--1", NumberError::Syntax),
        ("1_000", NumberError::Syntax),
        ("1e999", NumberError::Range),
        ("170141183460469231731687303715884105728", NumberError::Range),
        ("-170141183460469231731687303715884105729", NumberError::Range),
        ("0x100000000000000000000000000000000", NumberError::Range),
    ];
    for (text, err) in bad {
        assert_eq!(parse_number(text), Err(err), "{text}");
    }
}

#[test]
fn nesting_is_bounded() {
    let deep = |n: usize| format!("{}a == 1{}", "(".repeat(n), ")".repeat(n));
    assert!(Filter::parse(&deep(MAX_NESTING), PARAMS).is_ok());
    let err = parse_error(&deep(MAX_NESTING + 1));
    assert_eq!(err.column, MAX_NESTING + 1);
    assert!(err.message.starts_with("nested too deeply"), "{}", err.message);

    let nots = |n: usize| format!("{}a == 1", "!".repeat(n));
    // An odd number of `!`.
    assert!(!parse(&nots(MAX_NESTING)).matches(&event(&[("a", int(1))])));
    assert_eq!(parse_error(&nots(MAX_NESTING + 1)).column, MAX_NESTING + 1);
    let mixed = "!(".repeat(200);
    assert_eq!(parse_error(&mixed).column, 2 * 128);

    // Hostile input: far deeper than any stack would take.
    for hostile in ["(".repeat(1_000_000), "!".repeat(1_000_000), "!(".repeat(500_000)] {
        assert_eq!(parse_error(&hostile).column, MAX_NESTING + 1);
    }
}

#[test]
fn long_chains_are_flat() {
    let n = 100_000;
    let chain = vec!["a == 1"; n].join(" && ");
    assert!(parse(&chain).matches(&event(&[("a", int(1))])));
    let chain = vec!["a == 1"; n].join(" || ");
    assert!(!parse(&chain).matches(&event(&[("a", int(2))])));
    let mixed: String = (0..n).map(|i| if i % 2 == 0 { "a == 1 && " } else { "b == 1 || " }).collect();
    assert!(parse(&format!("{mixed}c == 1")).matches(&event(&[("c", int(1))])));
}

#[test]
fn errors_point_at_their_token() {
    let cases = [
        ("sise > 1", 1),
        ("a == 1 && sise > 1", 11),
        ("a = 1", 3),
        ("a ==", 5),
        ("a ==   ", 5),
        ("  a == \"x", 8),
        ("(a == 1", 1),
        ("a == 1)", 7),
        ("a == 1 b", 8),
        ("", 1),
        ("   ", 1),
        ("a == 1 & b == 1", 8),
        ("name ~ 1", 8),
        ("a == 0xZZ", 6),
        ("größe == 1", 1),
        ("name == größe && sïze > 1", 18),
        ("name == \"größe\" && a = 1", 22),
    ];
    for (expr, column) in cases {
        let err = parse_error(expr);
        assert_eq!(err.column, column, "{expr}: {}", err.message);
    }
}

#[test]
fn errors_render_with_a_caret() {
    let max_nesting = format!("{}a == 1{}", "(".repeat(MAX_NESTING + 1), ")".repeat(MAX_NESTING + 1));
    let long_name = format!("{} == 1", "x".repeat(60));
    let cases: Vec<(&str, &str)> = vec![
        // Names.
        ("unknown_name", "sise > 4096"),
        ("unknown_name_case", "Name == PoolInit"),
        ("unknown_name_no_suggestion", "colour == red"),
        ("unknown_name_after_others", "size > 1 && clas == \"x\""),
        ("unknown_name_long", &long_name),
        ("unknown_name_not", "not a == 1"),
        ("name_is_a_number", "1 == a"),
        ("name_is_a_string", "\"name\" == PoolInit"),
        ("name_missing_before_operator", "== 1"),
        // Operators.
        ("operator_single_equals", "a = 1"),
        ("operator_reversed", "a =< 1"),
        ("operator_angle_brackets", "a <> 1"),
        ("operator_perl_match", "name =~ \"Pool*\""),
        ("operator_unknown", "a << 1"),
        ("operator_missing", "a 1"),
        ("operator_missing_at_end", "size"),
        ("ampersand_alone", "a == 1 & b == 2"),
        ("pipe_alone", "a == 1 | b == 2"),
        // Values.
        ("value_missing", "a =="),
        ("value_missing_trailing_space", "a ==   "),
        ("value_missing_before_and", "a == && b == 1"),
        ("value_missing_before_paren", "(a == )"),
        ("glob_with_number", "size ~ 12"),
        ("not_glob_with_hex", "name !~ 0x1f"),
        ("bad_hex", "a == 0xZZ"),
        ("bad_number", "a == 12ab"),
        ("bad_float", "ratio > 1.5.2"),
        ("integer_out_of_range", "a == 0x100000000000000000000000000000000"),
        ("float_out_of_range", "ratio < 1e999"),
        // Strings.
        ("unterminated_string", "name == \"Pool && b == 1"),
        ("unterminated_after_backslash", "name == \"Pool\\"),
        ("bad_escape", "name == \"a\\qb\""),
        ("single_quotes", "name == 'Pool'"),
        // Parentheses.
        ("unclosed_paren", "(a == 1 || (b == 2)"),
        ("unclosed_inner_paren", "(a == 1) && (b == 2 || (c == 3)"),
        ("unmatched_close", "a == 1)"),
        ("unmatched_close_later", "(a == 1)) && b == 2"),
        ("empty_parens", "a == 1 || ()"),
        ("paren_then_junk", "(a == 1 b == 2)"),
        ("open_paren_at_end", "a == 1 && ("),
        // Joining.
        ("trailing_input", "a == 1 b == 2"),
        ("word_and", "a == 1 and b == 2"),
        ("dangling_and", "a == 1 &&"),
        ("dangling_or", "a == 1 ||  "),
        ("leading_and", "&& a == 1"),
        ("double_and", "a == 1 && && b == 1"),
        ("not_at_end", "a == 1 && !"),
        // Everything else.
        ("empty", ""),
        ("blank", "   "),
        ("unexpected_character", "a == 1; b == 2"),
        ("control_character", "a == 1 \u{0}"),
        ("tab_keeps_the_caret_aligned", "a\t==\t1\t)"),
        ("columns_count_characters", "name == \"größe\" && a = 1"),
        ("nested_too_deeply", &max_nesting),
    ];
    for (name, expr) in cases {
        let err = parse_error(expr);
        insta::assert_snapshot!(name, err.render(expr));
    }
}

/// A little xorshift generator: the fuzzing below needs no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// What must hold of any input: no panic; an error has a one-line message and a column
/// within the input (or just after it); a filter reads back from its canonical form and
/// can match any event.
fn check(expr: &str, events: &[Event]) {
    match Filter::parse(expr, PARAMS) {
        Err(e) => {
            let chars = expr.chars().count();
            assert!((1..=chars + 1).contains(&e.column), "{expr:?}: {e:?}");
            assert!(!e.message.is_empty() && !e.message.contains('\n'), "{expr:?}: {e:?}");
            assert_eq!(e.render(expr).lines().count(), 3, "{expr:?}: {e:?}");
        }
        Ok(filter) => {
            let canonical = filter.to_string();
            let again =
                Filter::parse(&canonical, PARAMS).unwrap_or_else(|e| panic!("{expr:?} -> {canonical:?}: {e:?}"));
            assert_eq!(again.to_string(), canonical, "{expr:?}");
            for e in events {
                assert_eq!(filter.matches(e), again.matches(e), "{expr:?}");
            }
        }
    }
}

fn fuzz_events() -> Vec<Event> {
    vec![
        event(&[]),
        event(&[("a", int(1)), ("b", int(0)), ("c", int(-1)), ("name", string("PoolInit"))]),
        event(&[("a", float(1.0)), ("size", float(f64::NAN)), ("class", string("1"))]),
        event(&[("a", string("1")), ("b", string("")), ("label", string("größe*?"))]),
    ]
}

#[test]
fn arbitrary_text_never_panics() {
    let alphabet: Vec<char> = "ab size name ()!&|=<>~\"\\'-.:*?_0x1eE+9;\t\n\u{0}é€𝄞".chars().collect();
    let events = fuzz_events();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..20_000 {
        let len = rng.below(24);
        let expr: String = (0..len).map(|_| alphabet[rng.below(alphabet.len())]).collect();
        check(&expr, &events);
    }
}

#[test]
fn grammar_soup_never_panics() {
    let tokens = [
        "a",
        "b",
        "size",
        "name",
        "time",
        "sise",
        "(",
        ")",
        "!",
        "&&",
        "||",
        "&",
        "|",
        "==",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "~",
        "!~",
        "=",
        "=<",
        "<>",
        "1",
        "-1",
        "0x1f",
        "0xZZ",
        "1.5",
        "2e-3",
        "1e999",
        "Pool*",
        "?",
        "\"x\"",
        "\"a\\\"b\"",
        "\"",
        "'",
        "\\",
        ";",
        " ",
        "größe",
    ];
    let events = fuzz_events();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut parsed = 0;
    for _ in 0..50_000 {
        let len = rng.below(12);
        let picked: Vec<&str> = (0..len).map(|_| tokens[rng.below(tokens.len())]).collect();
        let glue = if rng.below(2) == 0 { " " } else { "" };
        let expr = picked.join(glue);
        parsed += usize::from(Filter::parse(&expr, PARAMS).is_ok());
        check(&expr, &events);
    }
    // The soup makes some valid filters too, whose canonical forms were checked.
    assert!(parsed > 20, "{parsed}");
}

/// A random valid filter, `depth` levels deep at most.
fn valid_filter(rng: &mut Rng, depth: usize, out: &mut String) {
    let space = |rng: &mut Rng, out: &mut String| out.push_str(["", " ", "  ", "\t"][rng.below(4)]);
    match if depth == 0 { 0 } else { rng.below(5) } {
        0 | 1 => {
            let target = ["a", "b", "size", "name", "time", "label"][rng.below(6)];
            // The built-ins have their types: `time` a float, `name` a string.
            let ops: &[&str] = if target == "time" {
                &["==", "!=", "<", "<=", ">", ">="]
            } else {
                &["==", "!=", "<", "<=", ">", ">=", "~", "!~"]
            };
            let op = ops[rng.below(ops.len())];
            let value = if op.contains('~') {
                ["*", "P*", "\"?\"", "a", "\"x y\"", "größe*"][rng.below(6)]
            } else if target == "name" {
                ["PoolInit", "\"1\"", "\"a\\\"b\"", "\"\""][rng.below(4)]
            } else if target == "time" {
                ["1", "-1", "0x1f", "1.5", "-2e-3", "\"1\""][rng.below(6)]
            } else {
                ["1", "-1", "0x1f", "1.5", "-2e-3", "PoolInit", "\"1\"", "\"a\\\"b\"", "\"\""][rng.below(9)]
            };
            out.push_str(target);
            space(rng, out);
            out.push_str(op);
            space(rng, out);
            out.push_str(value);
        }
        2 => {
            out.push('!');
            space(rng, out);
            valid_filter(rng, depth - 1, out);
        }
        3 => {
            out.push('(');
            space(rng, out);
            valid_filter(rng, depth - 1, out);
            space(rng, out);
            out.push(')');
        }
        _ => {
            valid_filter(rng, depth - 1, out);
            space(rng, out);
            out.push_str(if rng.below(2) == 0 { "&&" } else { "||" });
            space(rng, out);
            valid_filter(rng, depth - 1, out);
        }
    }
}

#[test]
fn valid_filters_read_back_from_their_canonical_form() {
    let events = fuzz_events();
    let mut rng = Rng(0xd1b5_4a32_d192_ed03);
    for _ in 0..5_000 {
        let mut expr = String::new();
        valid_filter(&mut rng, 6, &mut expr);
        assert!(Filter::parse(&expr, PARAMS).is_ok(), "{expr:?}");
        check(&expr, &events);
    }
}
