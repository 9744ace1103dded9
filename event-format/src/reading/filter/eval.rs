//! Evaluating a parsed filter against one event: each comparison reads its name's value through
//! [`Filterable`] and compares it with its value.

use super::value::{Num, Op, Value};
use super::{FieldValue, Filterable};
use std::fmt;

/// A parsed expression. `&&` and `||` chains are flat lists, so that only `(` and `!` nest.
#[derive(Debug, Clone)]
pub(super) enum Node {
    Or(Vec<Node>),
    And(Vec<Node>),
    Not(Box<Node>),
    Compare(Compare),
}

impl Node {
    /// Recursion is as deep as the nesting of `(` and `!`, which [`MAX_NESTING`] bounds.
    pub(super) fn matches(&self, event: &dyn Filterable) -> bool {
        match self {
            Node::Or(terms) => terms.iter().any(|t| t.matches(event)),
            Node::And(terms) => terms.iter().all(|t| t.matches(event)),
            Node::Not(inner) => !inner.matches(event),
            Node::Compare(compare) => compare.matches(event),
        }
    }

    /// Calls `f` with each comparison.
    pub(super) fn visit<'n>(&'n self, f: &mut dyn FnMut(&'n Compare)) {
        match self {
            Node::Or(terms) | Node::And(terms) => terms.iter().for_each(|t| t.visit(f)),
            Node::Not(inner) => inner.visit(f),
            Node::Compare(compare) => f(compare),
        }
    }

    /// Writes the node; a nested `&&` or `||` chain in parentheses.
    pub(super) fn write(&self, f: &mut fmt::Formatter<'_>, nested: bool) -> fmt::Result {
        let (terms, join) = match self {
            Node::Or(terms) => (terms, " || "),
            Node::And(terms) => (terms, " && "),
            Node::Not(inner) => {
                return match **inner {
                    Node::Not(_) => {
                        f.write_str("!")?;
                        inner.write(f, true)
                    }
                    _ => {
                        f.write_str("!(")?;
                        inner.write(f, false)?;
                        f.write_str(")")
                    }
                };
            }
            Node::Compare(c) => return write!(f, "{} {} {}", c.target, c.op, c.value),
        };
        if nested {
            f.write_str("(")?;
        }
        for (i, term) in terms.iter().enumerate() {
            if i > 0 {
                f.write_str(join)?;
            }
            term.write(f, true)?;
        }
        if nested {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// What a comparison reads of an event.
#[derive(Debug, Clone)]
pub(super) enum Target {
    /// A built-in or a parameter, by its name.
    Name(String),
    /// `args.NAME`: the parameter, always.
    Param(String),
    /// `fields.NAME`: a `tracing` field.
    Tracing(String),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Name(name) => f.write_str(name),
            Target::Param(name) => write!(f, "args.{name}"),
            Target::Tracing(name) => write!(f, "fields.{name}"),
        }
    }
}

/// `NAME OP VALUE`.
#[derive(Debug, Clone)]
pub(super) struct Compare {
    pub(super) target: Target,
    pub(super) op: Op,
    pub(super) value: Value,
    /// The column of the value in the expression.
    pub(super) value_column: usize,
}

impl Compare {
    pub(super) fn matches(&self, event: &dyn Filterable) -> bool {
        let got = match &self.target {
            Target::Param(name) => event.param(name),
            Target::Tracing(name) => event.tracing_field(name),
            Target::Name(name) => {
                if name == "thread"
                    && let Some(FieldValue::Int(id)) = event.get("thread")
                {
                    return self.matches_thread(event, id);
                }
                let printed = match &self.value {
                    Value::Text { text, .. } if name == "name" && text.contains('.') => {
                        event.printed_name(text.contains(':')).map(FieldValue::Str)
                    }
                    Value::Text { text, .. } if matches!(name.as_str(), "name" | "kind") && text.contains(':') => {
                        event.qualified(name)
                    }
                    _ => None,
                };
                printed.or_else(|| event.get(name))
            }
        };
        got.is_some_and(|got| compare_value(self.op, &got, &self.value))
    }

    /// `thread` of an event on thread `id`: by id when the value is one (`3`, `T3`), else by
    /// the thread's name.
    pub(super) fn matches_thread(&self, event: &dyn Filterable, id: i128) -> bool {
        match (&self.value, self.value.thread()) {
            (_, Some(t)) => compare_numbers(self.op, Num::Int(id), t),
            (Value::Text { text, .. }, None) => {
                event.thread_name().is_some_and(|name| compare_strings(self.op, &name, text))
            }
            (Value::Num(_), None) => false,
        }
    }

    /// The thread name the comparison names, when it compares `thread` with one.
    pub(super) fn thread_name(&self) -> Option<&str> {
        match (&self.target, &self.value) {
            (Target::Name(f), Value::Text { text, .. }) if f == "thread" && self.value.thread().is_none() => Some(text),
            _ => None,
        }
    }
}

/// Whether `got op value` holds, for an event's value `got` of any type.
pub(super) fn compare_value(op: Op, got: &FieldValue<'_>, value: &Value) -> bool {
    match (got, value) {
        (FieldValue::Str(s), Value::Text { text, .. }) => compare_strings(op, s, text),
        (FieldValue::Str(_), Value::Num(_)) => false,
        (FieldValue::Bool(b), value) => {
            let b = Num::Int(i128::from(*b));
            match value.boolean() {
                Some(v) => compare_numbers(op, b, Num::Int(i128::from(v))),
                None => value.number().is_some_and(|n| compare_numbers(op, b, n)),
            }
        }
        (FieldValue::Int(i), value) => value.number().is_some_and(|n| compare_numbers(op, Num::Int(*i), n)),
        (FieldValue::Float(x), value) => value.number().is_some_and(|n| compare_numbers(op, Num::Float(*x), n)),
    }
}

pub(super) fn compare_numbers(op: Op, a: Num, b: Num) -> bool {
    // `NaN` written in a filter is the NaN `print` shows: it equals a NaN value.
    if let Num::Float(b) = b
        && b.is_nan()
    {
        let nan = a.to_f64().is_nan();
        return match op {
            Op::Eq => nan,
            Op::Ne => !nan,
            _ => false,
        };
    }
    if let (Num::Int(a), Num::Int(b)) = (a, b) {
        return op.holds(a.cmp(&b));
    }
    let (a, b) = (a.to_f64(), b.to_f64());
    match op {
        Op::Eq => a == b,
        Op::Ne => a != b,
        Op::Lt => a < b,
        Op::Le => a <= b,
        Op::Gt => a > b,
        Op::Ge => a >= b,
        Op::Glob | Op::NotGlob => false,
    }
}

pub(super) fn compare_strings(op: Op, got: &str, value: &str) -> bool {
    match op {
        Op::Glob => glob_matches(value, got),
        Op::NotGlob => !glob_matches(value, got),
        _ => op.holds(got.cmp(value)),
    }
}

/// Whether all of `text` matches `pattern`: `*` matches any run of characters, `?` exactly
/// one, anything else itself: the selection language's glob ([`crate::select::glob`]).
pub(super) fn glob_matches(pattern: &str, text: &str) -> bool {
    crate::reading::select::glob::matches(pattern, text)
}
