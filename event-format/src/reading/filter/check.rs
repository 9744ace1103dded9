//! The type check: a comparison that can never match because of its name's type is an
//! error where the filter is parsed, with a caret under the value or the operator.

use super::value::{Num, Op, Value};
use super::{ValueType, shown};

/// Why `name op value` can never match where `name` has type `ty` (`types` names all its
/// types, for the message): whether the fault is the operator's (else the value's), and the
/// message. `None` when it can match.
pub(super) fn mismatch(
    ty: ValueType,
    types: &str,
    name: &str,
    op: Op,
    value: &Value,
    raw: &str,
) -> Option<(bool, String)> {
    let glob = matches!(op, Op::Glob | Op::NotGlob);
    let ordering = matches!(op, Op::Lt | Op::Le | Op::Gt | Op::Ge);
    let raw = shown(raw);
    let never = "the comparison can never match";
    let value_fault = |what: &str| {
        let hint = match ty {
            ValueType::Str => format!("quote it to compare text: \"{raw}\""),
            ty => ty.hint().to_owned(),
        };
        Some((false, format!("`{name}` is {types} and `{raw}` is {what}: {never}; {hint}")))
    };
    match ty {
        ValueType::Any => None,
        ValueType::Str => match value {
            Value::Num(_) => value_fault("a number"),
            Value::Text { .. } => None,
        },
        ValueType::Int | ValueType::Float if glob => Some((
            true,
            format!(
                "`{op}` matches text against a glob, and `{name}` is {types}: {never}; compare it with ==, !=, <, <=, > or >="
            ),
        )),
        ValueType::Int | ValueType::Float => match value.number() {
            Some(_) => None,
            None if value.boolean().is_some() => value_fault("a boolean"),
            None => value_fault("text"),
        },
        ValueType::Bool if glob || ordering => Some((
            true,
            format!(
                "`{op}` {}, and `{name}` is {types}: {never}; compare it with == or !=",
                if glob { "matches text against a glob" } else { "orders numbers and text" }
            ),
        )),
        ValueType::Bool => match (value.boolean(), value.number()) {
            (Some(_), _) | (None, Some(Num::Int(0 | 1))) => None,
            (None, Some(_)) => value_fault("a number other than 0 and 1"),
            (None, None) => value_fault("text"),
        },
        ValueType::Thread => match (value, value.thread()) {
            (_, Some(_)) => None,
            (Value::Num(_), None) => value_fault("not a thread id"),
            (Value::Text { .. }, None) if ordering => Some((
                true,
                format!(
                    "`{op}` orders thread ids, and `{raw}` is a thread's name: {never}; compare a name with ==, !=, ~ or !~"
                ),
            )),
            (Value::Text { .. }, None) => None,
        },
    }
}
