//! `filter_parse`: the filter language on arbitrary text.

use crate::reading::filter::{FieldValue, Filter, Filterable, ValueType};
use std::borrow::Cow;

/// The parameter names the fuzzed filters may use, beside the built-in names, with their
/// types (`f0` of unknown type, so that comparisons of every type parse).
const PARAMS: [(&str, ValueType); 6] = [
    ("pool", ValueType::Int),
    ("size", ValueType::Int),
    ("class", ValueType::Str),
    ("load", ValueType::Float),
    ("full", ValueType::Bool),
    ("f0", ValueType::Any),
];

/// An event with one parameter of each type, and some missing.
struct Sample;

impl Filterable for Sample {
    fn get(&self, name: &str) -> Option<FieldValue<'_>> {
        Some(match name {
            "time" => FieldValue::Float(0.25),
            "thread" => FieldValue::Int(1),
            "code" => FieldValue::Int(2),
            "name" => FieldValue::Str(Cow::Borrowed("PoolInit")),
            "kind" => FieldValue::Str(Cow::Borrowed("Pool")),
            "pool" => FieldValue::Int(0x7f00_0000_1000),
            "size" => FieldValue::Int(-4096),
            "class" => FieldValue::Str(Cow::Borrowed("AMC \"mobile\"\t*?")),
            "load" => FieldValue::Float(f64::NAN),
            _ => return None,
        })
    }
}

/// `filter_parse`: [`Filter::parse_typed`] on `data` as UTF-8 (lossy). When it parses, its
/// `Display` must parse again to a filter with the same `Display` that selects the same
/// sample event; when it does not, the error must point inside the expression (or one past
/// its end) and render as three lines.
pub fn fuzz_filter(data: &[u8]) {
    let expr = String::from_utf8_lossy(data);
    match Filter::parse_typed(&expr, &PARAMS) {
        Ok(filter) => {
            let shown = filter.to_string();
            match Filter::parse_typed(&shown, &PARAMS) {
                Ok(again) => {
                    assert_eq!(again.to_string(), shown, "Display then parse changed the filter `{expr}`");
                    assert_eq!(
                        again.matches(&Sample),
                        filter.matches(&Sample),
                        "`{shown}` selects otherwise than `{expr}`"
                    );
                }
                Err(e) => panic!("the Display `{shown}` of `{expr}` does not parse: {e}"),
            }
        }
        Err(e) => {
            let columns = expr.chars().count() + 1;
            assert!((1..=columns).contains(&e.column), "column {} outside 1..={columns} for `{expr}`", e.column);
            assert!(!e.message.contains('\n'), "a multi-line message: {}", e.message);
            assert_eq!(e.render(&expr).lines().count(), 3, "a rendered error is not three lines");
        }
    }
}
