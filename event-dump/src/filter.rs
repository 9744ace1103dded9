//! `--filter EXPR`: ftrace's filter language, comparisons of an event's fields joined with
//! `&&`, `||`, `!` and parentheses.
//!
//! ```text
//! expr    := or
//! or      := and ( "||" and )*
//! and     := unary ( "&&" unary )*
//! unary   := "!" unary | "(" expr ")" | compare
//! compare := FIELD OP VALUE
//! FIELD   := built-in | parameter | "args." parameter | "fields." tracing-field
//! OP      := "==" | "!=" | "<" | "<=" | ">" | ">=" | "~" | "!~"
//! VALUE   := number | "string" | word
//! ```
//!
//! Reading:
//! - `!` binds tightest, then `&&`, then `||`: `!a == 1 || b == 2 && c == 3` is
//!   `(!(a == 1)) || ((b == 2) && (c == 3))`. Parentheses group; whitespace is free.
//! - A FIELD is one of the built-ins `time` (seconds since the start, a float), `thread` (its
//!   id, or its name), `code` (an integer), `name` (the event's name), `kind` (its kind's
//!   name), `set` (its event set's name; empty for built-in events and 1.x logs; an event's
//!   own parameter named `set` comes first), or a parameter name the caller passes to
//!   [`Filter::parse`]. Any other name is an error that lists the fields and suggests the
//!   closest.
//! - `args.NAME` is always the parameter `NAME`, also where a built-in has its name: the
//!   `name` of a tracing span (`SpanEnter`) is `args.name`, while `name` is the event's name.
//!   (`args` is where `print --format json` puts the parameters.)
//! - `fields.NAME` is the `tracing` field `NAME` of a `TraceEvent` or `SpanEnter`, read from
//!   its text by [`event_format::fields`] with its type: `fields.id == 7` matches `id=7` and
//!   not `id=70`. Any name is accepted; an event without that field does not match.
//! - `name` and `kind` compared with a string or word that holds a `:` are compared in their
//!   form qualified by the event's set, `set:Name` and `set:Kind` (`name == storage:PageWrite`,
//!   `kind ~ "storage:*"`), through [`Fields::qualified`]; `name` with a value that holds a
//!   `.` in the form `print` writes, `Kind.Name` (`set:Kind.Name` with a `:` too).
//! - A number is a decimal integer (`42`, `-7`), a hexadecimal one (`0x1f`, `-0x10`) or a
//!   float (`1.5`, `-.5`, `2e-3`, `1E+6`). A word that starts like a number (a digit, or `-`
//!   or `.` before a digit) must be one: `0xZZ` and `1.2.3` are errors; quote them to mean
//!   text. `NaN`, `inf` and `-inf` are floats where the field is one.
//! - A string is double-quoted, with the escapes `print` and `--format json` write: `\"`,
//!   `\\`, `\n`, `\r`, `\t`, `\u{1b}`, `\u001b` and `\xNN` (a byte that is not UTF-8; such
//!   bytes compare as U+FFFD, as `from_utf8_lossy` reads them). The `...` that `print`
//!   writes after a string the writer cut may follow it, and changes nothing. A bare word
//!   (letters, digits and `_ . * ? - :`) is a string too: `name == PoolInit`.
//! - Every value as `print` and `--format json` show it reads back: `true` and `false` for a
//!   boolean (so do `1` and `0`), `T6` or `6` for a thread and its name as `stats` shows it
//!   (`thread == compactor`, `thread ~ "worker-*"`), hex for a pointer (`0x7f..`, also
//!   quoted as JSON writes it), quoted or bare text for a string, any float form.
//! - `~` and `!~` match a glob: `*` stands for any run of characters, `?` for one character;
//!   there is no escape. Their value must be a string or a word, never a number.
//! - Nesting of `(` and `!` is limited to 255 levels, so that no input can exhaust the stack;
//!   parsing takes time linear in the length of the expression.
//!
//! Types: the caller gives each parameter's types ([`FieldType`]; a name several event
//! types share may have several). **A comparison that cannot match because of its type is an
//! error**, with a caret under the value or the operator: a number with a string field
//! (`class == 5`: quote it), text or a boolean with a numeric one, anything but `true`,
//! `false`, `1` and `0` with a boolean, `~` with a number or a boolean, `<` with a boolean
//! or a thread's name. A name whose types the caller does not know ([`FieldType::Any`]), and
//! `fields.NAME`, are checked event by event.
//!
//! Matching:
//! - **A comparison of a field the event does not have is false**, whatever the operator:
//!   `x != 1` and `x !~ "a*"` are false for an event without `x`, and `!(x == 1)` is true.
//! - So is a comparison with an event whose field has another type than the value (a name
//!   that different events give different types). A string that reads as a number
//!   (`"0x10"`, `"1.5"`) compares with a numeric field as that number.
//! - Numbers compare exactly as `i128` when both sides are integers, as `f64` otherwise
//!   (IEEE rules: a NaN field is `!=` to everything and nothing else, but for the value
//!   `NaN`, which `==` matches a NaN field as `print` shows it). Booleans compare as 0 and 1.
//! - Strings: `==` and `!=` exact, `<`, `<=`, `>`, `>=` lexicographic by code point, `~` a
//!   glob match over the whole string, `!~` its negation.

use event_format::decode::Event;
use event_format::wire::{Clock, Value as WireValue};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

/// The fields every event has, whatever the caller passes to [`Filter::parse`].
pub const BUILTIN_FIELDS: [&str; 6] = ["time", "thread", "code", "name", "kind", "set"];

/// The deepest nesting of `(` and `!` a filter may have.
const MAX_NESTING: usize = 255;

/// The longest piece of the user's text a message repeats, in characters.
const SHOWN_MAX: usize = 40;

/// The operators, as messages list them.
const OPERATORS: &str = "==, !=, <, <=, >, >=, ~ and !~";

/// A parsed `--filter` expression: [`Filter::parse`] it once, then ask [`Filter::matches`]
/// of each event. Its `Display` writes it back with every grouping in parentheses.
#[derive(Debug, Clone)]
pub struct Filter {
    root: Node,
}

/// The value of one field of one event, as a [`Fields`] implementation gives it: the
/// values of tracing fields and of parameters are one type (integers of every letter as
/// `Int`, `time` as `Float`, booleans compare with `true`/`false` and as 0 and 1 with
/// numbers, text for `name`, `kind` and string parameters).
pub use event_format::fields::FieldValue;

/// The type of a field's values, as [`Filter::parse_typed`] checks a comparison against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FieldType {
    /// Integers: pointers and addresses (written in hex), words, signed and unsigned.
    Int,
    /// Doubles.
    Float,
    /// Booleans.
    Bool,
    /// Strings.
    Str,
    /// A thread: its id (`3`, `T3`) or its name (the built-in `thread`).
    Thread,
    /// Not known: every comparison is accepted and checked event by event.
    Any,
}

impl FieldType {
    /// The type of the values of a format letter.
    pub fn of_letter(letter: event_format::letter::Letter) -> FieldType {
        use event_format::letter::Letter;
        match letter {
            Letter::Pointer | Letter::Address | Letter::Word | Letter::Unsigned | Letter::Signed => FieldType::Int,
            Letter::Double => FieldType::Float,
            Letter::Bool => FieldType::Bool,
            Letter::String => FieldType::Str,
        }
    }

    /// The type as a message names it, with an article.
    fn described(self) -> &'static str {
        match self {
            FieldType::Int => "an integer",
            FieldType::Float => "a float",
            FieldType::Bool => "a boolean",
            FieldType::Str => "a string",
            FieldType::Thread => "a thread",
            FieldType::Any => "any value",
        }
    }

    /// What to write instead, for a value of the wrong type.
    fn hint(self) -> &'static str {
        match self {
            FieldType::Int => "write an integer such as 42, -7 or 0x1f",
            FieldType::Float => "write a number such as 1.5, 2e-3, NaN or inf",
            FieldType::Bool => "write true or false (or 1, 0)",
            FieldType::Str => "quote the value to compare text",
            FieldType::Thread => "write a thread as print shows it, T3 or 3, or its name",
            FieldType::Any => "",
        }
    }
}

/// An event as a filter sees it: its fields by name.
pub trait Fields {
    /// The value of `field` in this event, or `None` when the event has no such field (a
    /// comparison of it is then false). `thread` is the thread's id.
    fn get(&self, field: &str) -> Option<FieldValue<'_>>;

    /// The value of `name` or `kind` qualified by the event's set (`storage:PageWrite`,
    /// `storage:Page`), which a comparison with a value that holds a `:` uses; `None` (the
    /// default) when the event has no set (built-in events, 1.x logs): the plain value is
    /// compared then.
    fn qualified(&self, field: &str) -> Option<FieldValue<'_>> {
        let _ = field;
        None
    }

    /// The event's parameter `name`, for `args.NAME`, even where a built-in field has its
    /// name. The default is [`Fields::get`].
    fn param(&self, name: &str) -> Option<FieldValue<'_>> {
        self.get(name)
    }

    /// The `tracing` field `name` of the event, for `fields.NAME`; `None` (the default) when
    /// it has none.
    fn tracing_field(&self, name: &str) -> Option<FieldValue<'_>> {
        let _ = name;
        None
    }

    /// The name of the event's thread, for `thread` compared with a name; `None` (the
    /// default) when it has none.
    fn thread_name(&self) -> Option<Cow<'_, str>> {
        None
    }

    /// The event's name as `print` writes it, `Kind.Name`, or `set:Kind.Name` when
    /// `with_set` (and the event has a set), for `name` compared with a value that holds a
    /// `.`; `None` (the default) when unknown.
    fn printed_name(&self, with_set: bool) -> Option<Cow<'_, str>> {
        let _ = with_set;
        None
    }
}

/// Why an expression is not a filter, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    /// The column of the offending token, 1-based, in characters: one past the last token
    /// when something is missing at the end.
    pub column: usize,
    /// What is wrong and what would be right, one line.
    pub message: String,
}

impl FilterError {
    /// Three lines (no final line break): `error: bad filter: {message}`, then `expr`
    /// indented by 4, then a caret `^` under [`column`](FilterError::column), same indent.
    /// Control characters in `expr` (a tab, a line break) show as one space each so that
    /// the caret stays under its character.
    pub fn render(&self, expr: &str) -> String {
        let line: String = expr.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        let pad = " ".repeat(self.column.saturating_sub(1));
        format!("error: bad filter: {}\n    {line}\n    {pad}^", self.message)
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for FilterError {}

impl Filter {
    /// Parses `expr` (see the [module documentation](self) for the language). `fields` are
    /// the parameter names the log's events have (repeats are fine); the built-ins
    /// [`BUILTIN_FIELDS`] are always known. Never panics; linear time.
    ///
    /// ```
    /// use event_dump::filter::{FieldValue, Fields, Filter};
    /// use std::borrow::Cow;
    ///
    /// struct Alloc;
    /// impl Fields for Alloc {
    ///     fn get(&self, field: &str) -> Option<FieldValue<'_>> {
    ///         match field {
    ///             "name" => Some(FieldValue::Str(Cow::Borrowed("PoolAlloc"))),
    ///             "size" => Some(FieldValue::Int(8192)),
    ///             _ => None,
    ///         }
    ///     }
    /// }
    ///
    /// let filter = Filter::parse(r#"size >= 0x1000 && name ~ "Pool*""#, &["pool", "size"]).unwrap();
    /// assert!(filter.matches(&Alloc));
    /// // A field the event lacks makes its comparison false.
    /// assert!(!Filter::parse("pool == 1", &["pool"]).unwrap().matches(&Alloc));
    ///
    /// let err = Filter::parse("size = 4096", &["size"]).unwrap_err();
    /// assert_eq!(
    ///     err.render("size = 4096"),
    ///     "error: bad filter: unknown operator `=`; did you mean `==`?\n    size = 4096\n         ^",
    /// );
    /// ```
    pub fn parse(expr: &str, fields: &[&str]) -> Result<Filter, FilterError> {
        let typed: Vec<(&str, FieldType)> = fields.iter().map(|f| (*f, FieldType::Any)).collect();
        Filter::parse_typed(expr, &typed)
    }

    /// Parses `expr` as [`Filter::parse`] does, with each parameter's type: a comparison
    /// that no event can match because of its type is an error (a name may come with several
    /// types, from several event types; it is an error only when every type refuses the
    /// comparison). The built-ins' types are known.
    ///
    /// ```
    /// use event_dump::filter::{FieldType, Filter};
    ///
    /// let fields = [("ok", FieldType::Bool), ("size", FieldType::Int), ("class", FieldType::Str)];
    /// assert!(Filter::parse_typed("ok == true && size > 0x10 && class == AMC", &fields).is_ok());
    /// let err = Filter::parse_typed("class == 5", &fields).unwrap_err();
    /// assert_eq!(err.column, 10);
    /// ```
    pub fn parse_typed(expr: &str, fields: &[(&str, FieldType)]) -> Result<Filter, FilterError> {
        let mut parser = Parser::new(expr, fields);
        if matches!(parser.peek()?.tok, Tok::End) {
            return Err(error(1, "empty filter: write a condition such as `name == PoolInit` or `size >= 4096`"));
        }
        let root = parser.or("at the start")?;
        let token = parser.bump()?;
        match token.tok {
            Tok::End => Ok(Filter { root }),
            Tok::RParen => Err(error(token.column, "unmatched `)`: no `(` opens it; remove it or add a `(` before")),
            _ => Err(expected_join(&token, false)),
        }
    }

    /// Whether `event` is selected. A comparison of a field `event` does not have, or of a
    /// value of another type, is false; see the [module documentation](self).
    pub fn matches(&self, event: &dyn Fields) -> bool {
        self.root.matches(event)
    }

    /// The thread names the filter compares `thread` with by `==` or `!=`, each with the
    /// column of its value: a caller checks that a thread has each name, and reports one
    /// that none has with [`FilterError::render`].
    pub fn thread_names(&self) -> Vec<(&str, usize)> {
        let mut out = Vec::new();
        self.root.visit(&mut |c| {
            if let Some(name) = c.thread_name()
                && matches!(c.op, Op::Eq | Op::Ne)
            {
                out.push((name, c.value_column));
            }
        });
        out
    }

    /// The event names the filter compares `name` with by `==` or `!=` (unqualified, not in
    /// `print`'s `Kind.Name` form), each with the column of its value: a caller checks that
    /// an event has each name, so that `name == fetch`, meant for a parameter `name`
    /// (`args.name`), is an error rather than an empty result.
    pub fn event_names(&self) -> Vec<(&str, usize)> {
        let mut out = Vec::new();
        self.root.visit(&mut |c| {
            if let (Target::Field(f), Value::Text { text, .. }) = (&c.target, &c.value)
                && f == "name"
                && matches!(c.op, Op::Eq | Op::Ne)
                && !text.contains([':', '.'])
            {
                out.push((text.as_str(), c.value_column));
            }
        });
        out
    }

    /// Whether the filter compares `thread` with a name or a glob: then [`Fields::thread_name`]
    /// must give the names.
    pub fn uses_thread_names(&self) -> bool {
        let mut uses = false;
        self.root.visit(&mut |c| uses |= c.thread_name().is_some());
        uses
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.root.write(f, false)
    }
}

/// A parsed expression. `&&` and `||` chains are flat lists, so that only `(` and `!` nest.
#[derive(Debug, Clone)]
enum Node {
    Or(Vec<Node>),
    And(Vec<Node>),
    Not(Box<Node>),
    Compare(Compare),
}

impl Node {
    /// Recursion is as deep as the nesting of `(` and `!`, which [`MAX_NESTING`] bounds.
    fn matches(&self, event: &dyn Fields) -> bool {
        match self {
            Node::Or(terms) => terms.iter().any(|t| t.matches(event)),
            Node::And(terms) => terms.iter().all(|t| t.matches(event)),
            Node::Not(inner) => !inner.matches(event),
            Node::Compare(compare) => compare.matches(event),
        }
    }

    /// Calls `f` with each comparison.
    fn visit<'n>(&'n self, f: &mut dyn FnMut(&'n Compare)) {
        match self {
            Node::Or(terms) | Node::And(terms) => terms.iter().for_each(|t| t.visit(f)),
            Node::Not(inner) => inner.visit(f),
            Node::Compare(compare) => f(compare),
        }
    }

    /// Writes the node; a nested `&&` or `||` chain in parentheses.
    fn write(&self, f: &mut fmt::Formatter<'_>, nested: bool) -> fmt::Result {
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
enum Target {
    /// A built-in or a parameter, by its name.
    Field(String),
    /// `args.NAME`: the parameter, always.
    Param(String),
    /// `fields.NAME`: a `tracing` field.
    Tracing(String),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Field(name) => f.write_str(name),
            Target::Param(name) => write!(f, "args.{name}"),
            Target::Tracing(name) => write!(f, "fields.{name}"),
        }
    }
}

/// `FIELD OP VALUE`.
#[derive(Debug, Clone)]
struct Compare {
    target: Target,
    op: Op,
    value: Value,
    /// The column of the value in the expression.
    value_column: usize,
}

impl Compare {
    fn matches(&self, event: &dyn Fields) -> bool {
        let field = match &self.target {
            Target::Param(name) => event.param(name),
            Target::Tracing(name) => event.tracing_field(name),
            Target::Field(name) => {
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
        field.is_some_and(|field| compare_value(self.op, &field, &self.value))
    }

    /// `thread` of an event on thread `id`: by id when the value is one (`3`, `T3`), else by
    /// the thread's name.
    fn matches_thread(&self, event: &dyn Fields, id: i128) -> bool {
        match (&self.value, self.value.thread()) {
            (_, Some(t)) => compare_numbers(self.op, Num::Int(id), t),
            (Value::Text { text, .. }, None) => {
                event.thread_name().is_some_and(|name| compare_strings(self.op, &name, text))
            }
            (Value::Num(_), None) => false,
        }
    }

    /// The thread name the comparison names, when it compares `thread` with one.
    fn thread_name(&self) -> Option<&str> {
        match (&self.target, &self.value) {
            (Target::Field(f), Value::Text { text, .. }) if f == "thread" && self.value.thread().is_none() => {
                Some(text)
            }
            _ => None,
        }
    }
}

/// Whether `field op value` holds, for a field of any type.
fn compare_value(op: Op, field: &FieldValue<'_>, value: &Value) -> bool {
    match (field, value) {
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

/// Why `field op value` can never match where `field` has type `ty` (`types` names all its
/// types, for the message): whether the fault is the operator's (else the value's), and the
/// message. `None` when it can match.
fn mismatch(ty: FieldType, types: &str, field: &str, op: Op, value: &Value, raw: &str) -> Option<(bool, String)> {
    let glob = matches!(op, Op::Glob | Op::NotGlob);
    let ordering = matches!(op, Op::Lt | Op::Le | Op::Gt | Op::Ge);
    let raw = shown(raw);
    let never = "the comparison can never match";
    let value_fault = |what: &str| {
        let hint = match ty {
            FieldType::Str => format!("quote it to compare text: \"{raw}\""),
            ty => ty.hint().to_owned(),
        };
        Some((false, format!("`{field}` is {types} and `{raw}` is {what}: {never}; {hint}")))
    };
    match ty {
        FieldType::Any => None,
        FieldType::Str => match value {
            Value::Num(_) => value_fault("a number"),
            Value::Text { .. } => None,
        },
        FieldType::Int | FieldType::Float if glob => Some((
            true,
            format!(
                "`{op}` matches text against a glob, and `{field}` is {types}: {never}; compare it with ==, !=, <, <=, > or >="
            ),
        )),
        FieldType::Int | FieldType::Float => match value.number() {
            Some(_) => None,
            None if value.boolean().is_some() => value_fault("a boolean"),
            None => value_fault("text"),
        },
        FieldType::Bool if glob || ordering => Some((
            true,
            format!(
                "`{op}` {}, and `{field}` is {types}: {never}; compare it with == or !=",
                if glob { "matches text against a glob" } else { "orders numbers and text" }
            ),
        )),
        FieldType::Bool => match (value.boolean(), value.number()) {
            (Some(_), _) | (None, Some(Num::Int(0 | 1))) => None,
            (None, Some(_)) => value_fault("a number other than 0 and 1"),
            (None, None) => value_fault("text"),
        },
        FieldType::Thread => match (value, value.thread()) {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Glob,
    NotGlob,
}

impl Op {
    fn from_text(text: &str) -> Option<Op> {
        Some(match text {
            "==" => Op::Eq,
            "!=" => Op::Ne,
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "~" => Op::Glob,
            "!~" => Op::NotGlob,
            _ => return None,
        })
    }

    fn text(self) -> &'static str {
        match self {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Glob => "~",
            Op::NotGlob => "!~",
        }
    }

    /// Whether the operator holds between two values that compare as `order`.
    fn holds(self, order: Ordering) -> bool {
        match self {
            Op::Eq => order.is_eq(),
            Op::Ne => order.is_ne(),
            Op::Lt => order.is_lt(),
            Op::Le => order.is_le(),
            Op::Gt => order.is_gt(),
            Op::Ge => order.is_ge(),
            Op::Glob | Op::NotGlob => false,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn to_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(x) => x,
        }
    }
}

/// The right-hand side of a comparison.
#[derive(Debug, Clone)]
enum Value {
    /// A number as written.
    Num(Num),
    /// A string or a bare word, with the number it reads as, if any, and whether `print`'s
    /// `...` of a cut string followed it.
    Text { text: String, num: Option<Num>, cut: bool },
}

impl Value {
    fn text(text: String, cut: bool) -> Value {
        let num = parse_number(&text).ok().or_else(|| special_float(&text));
        Value::Text { text, num, cut }
    }

    /// The value as a number: for a numeric field.
    fn number(&self) -> Option<Num> {
        match self {
            Value::Num(n) => Some(*n),
            Value::Text { num, .. } => *num,
        }
    }

    /// The value as a boolean, as `print` writes one: `true` or `false`.
    fn boolean(&self) -> Option<bool> {
        match self {
            Value::Text { text, .. } if text == "true" => Some(true),
            Value::Text { text, .. } if text == "false" => Some(false),
            _ => None,
        }
    }

    /// The value as a thread id: an integer, or `T` and digits as `print` writes a thread.
    fn thread(&self) -> Option<Num> {
        let id = match self.number() {
            Some(Num::Int(id)) => Some(id),
            Some(Num::Float(_)) => None,
            None => match self {
                Value::Text { text, .. } => text
                    .strip_prefix('T')
                    .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|d| d.parse::<u64>().ok())
                    .map(i128::from),
                Value::Num(_) => None,
            },
        };
        id.map(Num::Int)
    }
}

/// `NaN`, `inf` and `-inf` (and `+inf`), as `print` writes those doubles: floats where the
/// field is one.
fn special_float(text: &str) -> Option<Num> {
    Some(Num::Float(match text {
        "NaN" => f64::NAN,
        "inf" | "+inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        _ => return None,
    }))
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Num(Num::Int(i)) => write!(f, "{i}"),
            // Debug keeps a `.0` or an exponent, so the float reads back as a float.
            Value::Num(Num::Float(x)) => write!(f, "{x:?}"),
            Value::Text { text, cut, .. } => {
                f.write_str("\"")?;
                for c in text.chars() {
                    match c {
                        '"' => f.write_str("\\\"")?,
                        '\\' => f.write_str("\\\\")?,
                        '\n' => f.write_str("\\n")?,
                        '\r' => f.write_str("\\r")?,
                        '\t' => f.write_str("\\t")?,
                        c if c.is_control() => write!(f, "\\u{{{:x}}}", c as u32)?,
                        c => write!(f, "{c}")?,
                    }
                }
                f.write_str(if *cut { "\"..." } else { "\"" })
            }
        }
    }
}

fn compare_numbers(op: Op, a: Num, b: Num) -> bool {
    // `NaN` written in a filter is the NaN `print` shows: it equals a NaN field.
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

fn compare_strings(op: Op, field: &str, value: &str) -> bool {
    match op {
        Op::Glob => glob_matches(value, field),
        Op::NotGlob => !glob_matches(value, field),
        _ => op.holds(field.cmp(value)),
    }
}

/// Whether all of `text` matches `pattern`: `*` matches any run of characters, `?` exactly
/// one, anything else itself: the selection language's glob ([`event_format::select::glob`]).
fn glob_matches(pattern: &str, text: &str) -> bool {
    event_format::select::glob::matches(pattern, text)
}

/// Why a word that looks like a number is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumberError {
    /// `0x` without hexadecimal digits after it.
    Hex,
    /// Neither an integer nor a float.
    Syntax,
    /// Too large for an `i128` or an `f64`.
    Range,
}

impl NumberError {
    fn message(self, word: &str) -> String {
        let word = shown(word);
        match self {
            NumberError::Hex => format!(
                "bad number `{word}`: after `0x` come hexadecimal digits (0-9, a-f); to mean text, quote it: \"{word}\""
            ),
            NumberError::Syntax => format!(
                "bad number `{word}`: write an integer (42, -7, 0x1f) or a float (1.5, 2e-3); to mean text, quote it: \"{word}\""
            ),
            NumberError::Range => {
                format!("number `{word}` is out of range: an integer must fit in 128 bits, a float in an f64")
            }
        }
    }
}

/// Whether `word` starts like a number: a digit, or `-` or `.` (or `-.`) before one.
fn looks_numeric(word: &str) -> bool {
    let unsigned = word.strip_prefix('-').unwrap_or(word);
    let digits = unsigned.strip_prefix('.').unwrap_or(unsigned);
    digits.starts_with(|c: char| c.is_ascii_digit())
}

/// Reads a whole number: `-`?, then `0x` and hex digits, decimal digits, or a float.
fn parse_number(word: &str) -> Result<Num, NumberError> {
    let (negative, unsigned) = match word.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, word),
    };
    let hex = unsigned.strip_prefix("0x").or_else(|| unsigned.strip_prefix("0X"));
    let magnitude = match hex {
        Some(digits) if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) => {
            return Err(NumberError::Hex);
        }
        Some(digits) => u128::from_str_radix(digits, 16).map_err(|_| NumberError::Range)?,
        None if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) => {
            unsigned.parse::<u128>().map_err(|_| NumberError::Range)?
        }
        None if is_float(unsigned) => {
            let x: f64 = word.parse().map_err(|_| NumberError::Syntax)?;
            return if x.is_finite() { Ok(Num::Float(x)) } else { Err(NumberError::Range) };
        }
        None => return Err(NumberError::Syntax),
    };
    let value = if negative && magnitude == 1 << 127 {
        i128::MIN
    } else {
        let value = i128::try_from(magnitude).map_err(|_| NumberError::Range)?;
        if negative { -value } else { value }
    };
    Ok(Num::Int(value))
}

/// Whether `text` is `digits [. digits] [e|E [+|-] digits]` or `. digits [...]`: a float
/// without its sign, in the form Rust's `f64::from_str` reads too.
fn is_float(text: &str) -> bool {
    let b = text.as_bytes();
    let digits_from = |i: usize| b[i.min(b.len())..].iter().take_while(|c| c.is_ascii_digit()).count();
    let whole = digits_from(0);
    let mut i = whole;
    let mut fraction = 0;
    if b.get(i) == Some(&b'.') {
        fraction = digits_from(i + 1);
        i += 1 + fraction;
    }
    if whole + fraction == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exponent = digits_from(i);
        if exponent == 0 {
            return false;
        }
        i += exponent;
    }
    i == b.len()
}

/// `text` as a message repeats it: cut short when long.
fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN_MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

fn error(column: usize, message: impl Into<String>) -> FilterError {
    FilterError { column, message: message.into() }
}

#[derive(Debug)]
enum Tok<'a> {
    /// The end of the expression.
    End,
    LParen,
    RParen,
    /// `!` not followed by `=` or `~`.
    Not,
    AndAnd,
    OrOr,
    /// A run of `= < > ~ !` (starting with `!` only as `!=` or `!~`): an operator, or not.
    Op(&'a str),
    /// A bare word: a field name, a number or a string.
    Word(&'a str),
    /// A double-quoted string, unescaped; `cut` when `print`'s `...` followed it.
    Str {
        text: String,
        cut: bool,
    },
}

#[derive(Debug)]
struct Token<'a> {
    tok: Tok<'a>,
    /// Where it starts; for [`Tok::End`], just after the last token.
    column: usize,
}

/// How a token is named in "found ..." messages.
fn describe(tok: &Tok<'_>) -> String {
    match tok {
        Tok::End => "the end of the filter".to_owned(),
        Tok::LParen => "`(`".to_owned(),
        Tok::RParen => "`)`".to_owned(),
        Tok::Not => "`!`".to_owned(),
        Tok::AndAnd => "`&&`".to_owned(),
        Tok::OrOr => "`||`".to_owned(),
        Tok::Op(text) | Tok::Word(text) => format!("`{}`", shown(text)),
        Tok::Str { .. } => "a string".to_owned(),
    }
}

/// The error for `token` where a condition has ended and `&&`, `||` (or, `in_parens`, `)`)
/// must follow.
fn expected_join(token: &Token<'_>, in_parens: bool) -> FilterError {
    let wanted = if in_parens { "`&&`, `||` or `)`" } else { "`&&` or `||`" };
    let hint = match token.tok {
        Tok::Word("and" | "AND") => "; write `&&` for and",
        Tok::Word("or" | "OR") => "; write `||` for or",
        _ => "",
    };
    let found = describe(&token.tok);
    error(token.column, format!("expected {wanted} after a condition, found {found}{hint}"))
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '*' | '?' | '-' | ':')
}

fn is_operator_char(c: char) -> bool {
    matches!(c, '=' | '<' | '>' | '~' | '!')
}

/// Cuts the expression into tokens, one at a time, as the parser asks.
struct Lexer<'a> {
    text: &'a str,
    /// The byte offset of the next character.
    at: usize,
    /// Its column.
    column: usize,
    /// The column just after the last token.
    end_column: usize,
}

impl<'a> Lexer<'a> {
    fn peek_char(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn bump_char(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.at += c.len_utf8();
        self.column += 1;
        Some(c)
    }

    fn next(&mut self) -> Result<Token<'a>, FilterError> {
        while self.peek_char().is_some_and(char::is_whitespace) {
            self.bump_char();
        }
        let (start, column) = (self.at, self.column);
        let Some(c) = self.bump_char() else {
            return Ok(Token { tok: Tok::End, column: self.end_column });
        };
        let tok = match c {
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '&' | '|' if self.peek_char() == Some(c) => {
                self.bump_char();
                if c == '&' { Tok::AndAnd } else { Tok::OrOr }
            }
            '&' | '|' => {
                return Err(error(column, format!("`{c}` alone is not an operator; did you mean `{c}{c}`?")));
            }
            '!' if !matches!(self.peek_char(), Some('=' | '~')) => Tok::Not,
            c if is_operator_char(c) => {
                while self.peek_char().is_some_and(is_operator_char) {
                    self.bump_char();
                }
                Tok::Op(&self.text[start..self.at])
            }
            '"' => {
                let text = self.string(column)?;
                // `print` marks a string the writer cut with `...` after its closing quote.
                let cut = self.text[self.at..].starts_with("...");
                if cut {
                    for _ in 0..3 {
                        self.bump_char();
                    }
                }
                Tok::Str { text, cut }
            }
            '\'' => {
                return Err(error(column, "strings take double quotes, as in \"text\", not `'`"));
            }
            c if is_word_char(c) => {
                self.word(start, c);
                Tok::Word(&self.text[start..self.at])
            }
            c => {
                return Err(error(
                    column,
                    format!(
                        "unexpected character `{}`; a filter is conditions FIELD OP VALUE joined by `&&`, `||`, `!` and parentheses",
                        c.escape_debug()
                    ),
                ));
            }
        };
        self.end_column = self.column;
        Ok(Token { tok, column })
    }

    /// The rest of a word that started with `first` at `start`. A `+` belongs to it after
    /// the `e` of a number's exponent (`1e+6`).
    fn word(&mut self, start: usize, first: char) {
        let mut last = first;
        loop {
            match self.peek_char() {
                Some(c) if is_word_char(c) => {}
                Some('+') if matches!(last, 'e' | 'E') && looks_numeric(&self.text[start..self.at]) => {}
                _ => return,
            }
            if let Some(c) = self.bump_char() {
                last = c;
            }
        }
    }

    /// The rest of a string whose `"` is at column `open`, unescaped: the escapes of
    /// `print`'s text and of JSON strings. `\xNN` escapes bytes; those that are not UTF-8
    /// read as U+FFFD, as a field's do.
    fn string(&mut self, open: usize) -> Result<String, FilterError> {
        let unterminated = || error(open, "unterminated string: add a closing `\"`");
        let mut out: Vec<u8> = Vec::new();
        let push = |out: &mut Vec<u8>, c: char| out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        loop {
            let column = self.column;
            match self.bump_char().ok_or_else(unterminated)? {
                '"' => return Ok(String::from_utf8_lossy(&out).into_owned()),
                '\\' => match self.bump_char().ok_or_else(unterminated)? {
                    '"' => out.push(b'"'),
                    '\\' => out.push(b'\\'),
                    'n' => out.push(b'\n'),
                    'r' => out.push(b'\r'),
                    't' => out.push(b'\t'),
                    'u' => {
                        let c = self.unicode_escape().ok_or_else(|| bad_escape(column, "\\u"))?;
                        push(&mut out, c);
                    }
                    'x' => {
                        let hex: String = (0..2).filter_map(|_| self.bump_char()).collect();
                        match u8::from_str_radix(&hex, 16) {
                            Ok(b) if hex.len() == 2 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => out.push(b),
                            _ => return Err(bad_escape(column, &format!("\\x{}", hex.escape_debug()))),
                        }
                    }
                    c => return Err(bad_escape(column, &format!("\\{}", c.escape_debug()))),
                },
                c => push(&mut out, c),
            }
        }
    }

    /// After `\u`: `{` hex digits `}` (as `print` writes) or four hex digits (as JSON does).
    fn unicode_escape(&mut self) -> Option<char> {
        let digits: String = if self.peek_char() == Some('{') {
            self.bump_char();
            let mut digits = String::new();
            loop {
                match self.bump_char()? {
                    '}' => break,
                    c if c.is_ascii_hexdigit() && digits.len() < 6 => digits.push(c),
                    _ => return None,
                }
            }
            digits
        } else {
            let digits: String = (0..4)
                .map_while(|_| self.peek_char().filter(char::is_ascii_hexdigit).and_then(|_| self.bump_char()))
                .collect();
            if digits.len() != 4 {
                return None;
            }
            digits
        };
        char::from_u32(u32::from_str_radix(&digits, 16).ok()?)
    }
}

/// The error for an unknown or malformed escape `what` at `column`.
fn bad_escape(column: usize, what: &str) -> FilterError {
    error(
        column,
        format!(
            "unknown escape `{what}` in a string; the escapes are \\\", \\\\, \\n, \\r, \\t, \\u{{1b}}, \\u001b and \\xNN"
        ),
    )
}

/// A recursive descent over the grammar, with one token of lookahead.
struct Parser<'a, 'f> {
    lexer: Lexer<'a>,
    peeked: Option<Token<'a>>,
    /// The caller's field names, sorted, without repeats or built-ins.
    fields: Vec<&'f str>,
    /// Every parameter name the caller gave (built-ins' names too) with its types.
    types: BTreeMap<&'f str, Vec<FieldType>>,
    /// How many `(` and `!` enclose the token being read.
    depth: usize,
}

impl<'a, 'f> Parser<'a, 'f> {
    fn new(text: &'a str, given: &[(&'f str, FieldType)]) -> Parser<'a, 'f> {
        let mut fields: Vec<&str> = given.iter().map(|(f, _)| *f).filter(|f| !BUILTIN_FIELDS.contains(f)).collect();
        fields.sort_unstable();
        fields.dedup();
        let mut types: BTreeMap<&str, Vec<FieldType>> = BTreeMap::new();
        for &(name, ty) in given {
            let known = types.entry(name).or_default();
            if !known.contains(&ty) {
                known.push(ty);
            }
        }
        Parser { lexer: Lexer { text, at: 0, column: 1, end_column: 1 }, peeked: None, fields, types, depth: 0 }
    }

    /// The types of field `name` as a comparison reads it (a built-in's, but for `set`,
    /// which an event's own parameter of that name overrides).
    fn types_of(&self, target: &Target) -> Vec<FieldType> {
        let given = |name: &str| self.types.get(name).cloned().unwrap_or_default();
        match target {
            Target::Tracing(_) => vec![FieldType::Any],
            Target::Param(name) => given(name),
            Target::Field(name) => match name.as_str() {
                "time" => vec![FieldType::Float],
                "thread" => vec![FieldType::Thread],
                "code" => vec![FieldType::Int],
                "name" | "kind" => vec![FieldType::Str],
                "set" => {
                    let mut types = given("set");
                    if !types.contains(&FieldType::Str) {
                        types.insert(0, FieldType::Str);
                    }
                    types
                }
                name => given(name),
            },
        }
    }

    fn peek(&mut self) -> Result<&Token<'a>, FilterError> {
        let token = match self.peeked.take() {
            Some(token) => token,
            None => self.lexer.next()?,
        };
        Ok(self.peeked.insert(token))
    }

    fn bump(&mut self) -> Result<Token<'a>, FilterError> {
        match self.peeked.take() {
            Some(token) => Ok(token),
            None => self.lexer.next(),
        }
    }

    /// `or := and ( "||" and )*`; `after` says where it starts, for messages.
    fn or(&mut self, after: &str) -> Result<Node, FilterError> {
        let first = self.and(after)?;
        if !matches!(self.peek()?.tok, Tok::OrOr) {
            return Ok(first);
        }
        let mut terms = vec![first];
        while matches!(self.peek()?.tok, Tok::OrOr) {
            self.bump()?;
            terms.push(self.and("after `||`")?);
        }
        Ok(Node::Or(terms))
    }

    /// `and := unary ( "&&" unary )*`.
    fn and(&mut self, after: &str) -> Result<Node, FilterError> {
        let first = self.unary(after)?;
        if !matches!(self.peek()?.tok, Tok::AndAnd) {
            return Ok(first);
        }
        let mut terms = vec![first];
        while matches!(self.peek()?.tok, Tok::AndAnd) {
            self.bump()?;
            terms.push(self.unary("after `&&`")?);
        }
        Ok(Node::And(terms))
    }

    /// `unary := "!" unary | "(" expr ")" | compare`.
    fn unary(&mut self, after: &str) -> Result<Node, FilterError> {
        let token = self.bump()?;
        let column = token.column;
        match token.tok {
            Tok::Not => {
                self.enter(column)?;
                let inner = self.unary("after `!`")?;
                self.depth -= 1;
                Ok(Node::Not(Box::new(inner)))
            }
            Tok::LParen => {
                self.enter(column)?;
                let next = self.peek()?;
                if matches!(next.tok, Tok::RParen) {
                    return Err(error(next.column, "empty parentheses: put a condition between `(` and `)`"));
                }
                let inner = self.or("after `(`")?;
                let close = self.bump()?;
                match close.tok {
                    Tok::RParen => {}
                    Tok::End => {
                        return Err(error(column, "unclosed `(`: add a `)` to close it"));
                    }
                    _ => return Err(expected_join(&close, true)),
                }
                self.depth -= 1;
                Ok(inner)
            }
            Tok::Word(word) => self.compare(word, column),
            Tok::Str { .. } => Err(error(column, "expected a field name, found a string; field names are not quoted")),
            Tok::Op(op) => Err(error(
                column,
                format!("expected a field name before `{}`; a condition is FIELD OP VALUE", shown(op)),
            )),
            Tok::End | Tok::RParen | Tok::AndAnd | Tok::OrOr => {
                Err(error(column, format!("expected a condition {after}, found {}", describe(&token.tok))))
            }
        }
    }

    /// One more level of `(` or `!`, at `column`.
    fn enter(&mut self, column: usize) -> Result<(), FilterError> {
        if self.depth >= MAX_NESTING {
            return Err(error(
                column,
                format!("nested too deeply: at most {MAX_NESTING} levels of `(` and `!`; simplify the filter"),
            ));
        }
        self.depth += 1;
        Ok(())
    }

    /// `compare := FIELD OP VALUE`, after the field `word` at `column`.
    fn compare(&mut self, word: &str, column: usize) -> Result<Node, FilterError> {
        if looks_numeric(word) {
            return Err(error(
                column,
                format!(
                    "expected a field name, found the number `{}`; a condition is FIELD OP VALUE, as in `size > 4096`",
                    shown(word)
                ),
            ));
        }
        let target = if let Some(param) = word.strip_prefix("args.") {
            if !self.types.contains_key(param) {
                return Err(error(column, self.unknown_param(param)));
            }
            Target::Param(param.to_owned())
        } else if let Some(field) = word.strip_prefix("fields.") {
            if field.is_empty() {
                return Err(error(
                    column,
                    "`fields.` names a tracing field: write its name after the dot, as in `fields.id == 7`",
                ));
            }
            Target::Tracing(field.to_owned())
        } else {
            if !BUILTIN_FIELDS.contains(&word) && self.fields.binary_search(&word).is_err() {
                return Err(error(column, self.unknown_field(word)));
            }
            Target::Field(word.to_owned())
        };

        let token = self.bump()?;
        let op_column = token.column;
        let op = match token.tok {
            Tok::Op(text) => match Op::from_text(text) {
                Some(op) => op,
                None => return Err(error(token.column, unknown_operator(text))),
            },
            _ => {
                return Err(error(
                    token.column,
                    format!(
                        "expected an operator after `{}`, found {}; the operators are {OPERATORS}",
                        shown(word),
                        describe(&token.tok)
                    ),
                ));
            }
        };

        let token = self.bump()?;
        let value_column = token.column;
        let (value, raw) = match token.tok {
            Tok::Word(number) if looks_numeric(number) => {
                if matches!(op, Op::Glob | Op::NotGlob) {
                    let number = shown(number);
                    return Err(error(
                        token.column,
                        format!(
                            "`{op}` matches text against a glob, and `{number}` is a number; quote it (\"{number}\") or compare with `==`"
                        ),
                    ));
                }
                (
                    Value::Num(parse_number(number).map_err(|e| error(token.column, e.message(number)))?),
                    number.to_owned(),
                )
            }
            Tok::Word(text) => (Value::text(text.to_owned(), false), text.to_owned()),
            Tok::Str { text, cut } => {
                // Escaped as the filter writes it back: a message stays one line.
                let value = Value::text(text, cut);
                let raw = value.to_string();
                (value, raw)
            }
            Tok::End => {
                return Err(error(
                    token.column,
                    format!("missing value after `{op}`: write a number, a \"string\" or a word"),
                ));
            }
            _ => {
                return Err(error(
                    token.column,
                    format!(
                        "expected a value after `{op}`, found {}; write a number, a \"string\" or a word",
                        describe(&token.tok)
                    ),
                ));
            }
        };
        let types = self.types_of(&target);
        let names: Vec<&str> = types.iter().map(|t| t.described()).collect();
        let named = names.join(" or ");
        let field = target.to_string();
        let faults: Vec<Option<(bool, String)>> =
            types.iter().map(|&ty| mismatch(ty, &named, &field, op, &value, &raw)).collect();
        if let Some(Some((at_op, message))) = faults.first()
            && faults.iter().all(Option::is_some)
        {
            return Err(error(if *at_op { op_column } else { value_column }, message.clone()));
        }
        Ok(Node::Compare(Compare { target, op, value, value_column }))
    }

    /// The message for an unknown parameter after `args.`.
    fn unknown_param(&self, word: &str) -> String {
        let params: Vec<&str> = self.types.keys().copied().collect();
        let hint = event_format::def::closest(word, params.iter().copied())
            .map(|near| format!("did you mean `args.{}`? ", near.escape_debug()))
            .unwrap_or_default();
        let all: Vec<String> = params.iter().map(|f| f.escape_debug().to_string()).collect();
        format!("no parameter is named `{}`; {hint}the parameters are {}", shown(word), all.join(", "))
    }

    /// The message for an unknown field: a suggestion, and the fields there are.
    fn unknown_field(&self, word: &str) -> String {
        let mut builtins = BUILTIN_FIELDS;
        builtins.sort_unstable();
        let all: Vec<&str> = builtins.iter().copied().chain(self.fields.iter().copied()).collect();
        let hint = match (event_format::def::closest(word, all.iter().copied()), word) {
            (Some(near), _) => format!("did you mean `{}`?", near.escape_debug()),
            (None, "not" | "NOT") => "to negate a condition, write `!`;".to_owned(),
            (None, _) => String::new(),
        };
        let word = shown(word);
        // Escaped, so that names from a damaged log cannot break the line.
        let all: Vec<String> = all.iter().map(|f| f.escape_debug().to_string()).collect();
        let all = all.join(", ");
        if hint.is_empty() {
            format!("unknown field `{word}`; the fields are {all}")
        } else {
            format!("unknown field `{word}`; {hint} the fields are {all}")
        }
    }
}

/// The message for an operator that is not one of [`OPERATORS`].
fn unknown_operator(text: &str) -> String {
    let meant = match text {
        "=" | "===" => Some("=="),
        "=<" => Some("<="),
        "=>" => Some(">="),
        "<>" | "=!" | "!==" => Some("!="),
        "=~" | "~=" | "==~" => Some("~"),
        "~!" | "!=~" => Some("!~"),
        _ => None,
    };
    match meant {
        Some(meant) => format!("unknown operator `{text}`; did you mean `{meant}`?"),
        None => format!("unknown operator `{}`; the operators are {OPERATORS}", shown(text)),
    }
}

/// An event of a log as the filter sees it.
pub(crate) struct EventFields<'a> {
    pub(crate) event: &'a Event<'a>,
    pub(crate) clock: &'a Clock,
    /// The names of the log's threads, where the filter compares threads by name.
    pub(crate) names: Option<&'a BTreeMap<u64, String>>,
}

/// A decoded value as the filter compares it; a string's bytes that are not UTF-8 as U+FFFD.
fn field_value<'a>(value: &WireValue<'a>) -> FieldValue<'a> {
    match *value {
        WireValue::Pointer(v) | WireValue::Address(v) | WireValue::Word(v) => FieldValue::Int(i128::from(v)),
        WireValue::Unsigned(v) => FieldValue::Int(i128::from(v)),
        WireValue::Signed(v) => FieldValue::Int(i128::from(v)),
        WireValue::Double(v) => FieldValue::Float(v),
        WireValue::Bool(v) => FieldValue::Bool(v),
        WireValue::Str(t) => FieldValue::Str(String::from_utf8_lossy(t.bytes)),
    }
}

impl Fields for EventFields<'_> {
    fn get(&self, field: &str) -> Option<FieldValue<'_>> {
        let e = self.event;
        match field {
            // An event's own parameter named `set` wins: it was there before sets were.
            "set" if !e.desc.params.iter().any(|p| p == "set") => {
                return Some(FieldValue::Str(Cow::Borrowed(&e.desc.set)));
            }
            "time" => return Some(FieldValue::Float(self.clock.seconds_since_start(e.time))),
            "thread" => return Some(FieldValue::Int(i128::from(e.thread))),
            "code" => return Some(FieldValue::Int(i128::from(e.desc.code))),
            "name" => return Some(FieldValue::Str(Cow::Borrowed(&e.desc.name))),
            "kind" => return Some(FieldValue::Str(Cow::Borrowed(&e.desc.kind_name))),
            _ => {}
        }
        self.param(field)
    }

    fn param(&self, name: &str) -> Option<FieldValue<'_>> {
        let e = self.event;
        let i = e.desc.params.iter().position(|p| p == name)?;
        Some(field_value(&e.values().nth(i)?))
    }

    fn qualified(&self, field: &str) -> Option<FieldValue<'_>> {
        let d = self.event.desc;
        if d.set.is_empty() {
            return None;
        }
        match field {
            "name" => Some(FieldValue::Str(Cow::Owned(format!("{}:{}", d.set, d.name)))),
            "kind" => Some(FieldValue::Str(Cow::Owned(format!("{}:{}", d.set, d.kind_name)))),
            _ => None,
        }
    }

    fn tracing_field(&self, name: &str) -> Option<FieldValue<'_>> {
        let fields = event_format::fields::of_event(self.event)?;
        fields.into_iter().find(|(k, _)| *k == name).map(|(_, value)| value)
    }

    fn thread_name(&self) -> Option<Cow<'_, str>> {
        self.names?.get(&self.event.thread).map(|n| Cow::Borrowed(n.as_str()))
    }

    fn printed_name(&self, with_set: bool) -> Option<Cow<'_, str>> {
        let d = self.event.desc;
        Some(Cow::Owned(if with_set && !d.set.is_empty() {
            format!("{}:{}.{}", d.set, d.kind_name, d.name)
        } else {
            format!("{}.{}", d.kind_name, d.name)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The parameter names of a small schema.
    const FIELDS: &[&str] = &["a", "b", "c", "size", "arena", "class", "ratio", "size", "label"];

    /// An event: its fields in a map.
    #[derive(Debug, Default)]
    struct Event(HashMap<&'static str, FieldValue<'static>>);

    impl Fields for Event {
        fn get(&self, field: &str) -> Option<FieldValue<'_>> {
            self.0.get(field).cloned()
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

    fn event(fields: &[(&'static str, FieldValue<'static>)]) -> Event {
        Event(fields.iter().cloned().collect())
    }

    /// An event of set `storage`: `name` and `kind` have qualified forms.
    struct InSet;

    impl Fields for InSet {
        fn get(&self, field: &str) -> Option<FieldValue<'_>> {
            match field {
                "name" => Some(string("PageWrite")),
                "kind" => Some(string("Page")),
                "set" => Some(string("storage")),
                _ => None,
            }
        }

        fn qualified(&self, field: &str) -> Option<FieldValue<'_>> {
            match field {
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
        Filter::parse(expr, FIELDS).unwrap_or_else(|e| panic!("{}", e.render(expr)))
    }

    /// A tracing span's entry: its parameter `name`, its fields, its thread's name.
    struct Span;

    impl Fields for Span {
        fn get(&self, field: &str) -> Option<FieldValue<'_>> {
            match field {
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
        let fields =
            [("cut", FieldType::Str), ("bytes", FieldType::Str), ("ok", FieldType::Bool), ("name", FieldType::Str)];
        let yes = |expr: &str| {
            let filter = Filter::parse_typed(expr, &fields).unwrap_or_else(|e| panic!("{}", e.render(expr)));
            // The canonical form reads back as itself, and selects the same.
            let again = Filter::parse_typed(&filter.to_string(), &fields).unwrap();
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
        let shown = |expr: &str| Filter::parse_typed(expr, &fields).unwrap().to_string();
        assert_eq!(shown("cut == \"abc\"..."), "cut == \"abc\"...");
        assert_eq!(shown("args.ok == 1 && fields.x.y != \"z\""), "args.ok == 1 && fields.x.y != \"z\"");
    }

    #[test]
    fn type_errors_point_at_the_value_or_the_operator() {
        let fields = [
            ("ok", FieldType::Bool),
            ("size", FieldType::Int),
            ("class", FieldType::Str),
            ("x", FieldType::Int),
            ("x", FieldType::Str),
        ];
        let column = |expr: &str| Filter::parse_typed(expr, &fields).map(|_| 0).unwrap_or_else(|e| e.column);
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
        match Filter::parse(expr, FIELDS) {
            Ok(filter) => panic!("`{expr}` parsed as `{filter}`"),
            Err(e) => e,
        }
    }

    #[test]
    fn doc_example() {
        struct Alloc;
        impl Fields for Alloc {
            fn get(&self, field: &str) -> Option<FieldValue<'_>> {
                match field {
                    "name" => Some(FieldValue::Str(Cow::Borrowed("PoolAlloc"))),
                    "size" => Some(FieldValue::Int(8192)),
                    _ => None,
                }
            }
        }

        let filter = Filter::parse(r#"size >= 0x1000 && name ~ "Pool*""#, &["pool", "size"]).unwrap();
        assert!(filter.matches(&Alloc));
        // A field the event lacks makes its comparison false.
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
    fn missing_fields_make_comparisons_false() {
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
        // Parameters whose types are not known (`FieldType::Any`, as a name that event types
        // give different types is for some of them): checked event by event.
        let e = event(&[("name", string("12")), ("label", string("12")), ("size", int(12)), ("ratio", float(0.5))]);
        // A string field with a number: false, even when the text is the number's.
        for op in ["==", "!=", "<", "<=", ">", ">="] {
            assert!(!matches(&format!("label {op} 12"), &e), "{op}");
            // A built-in whose type is known: an error, never an empty result.
            assert_eq!(parse_error(&format!("name {op} 12")).column, 7 + op.len(), "{op}");
            assert!(!matches(&format!("size {op} twelve"), &e), "{op}");
            assert!(!matches(&format!("ratio {op} \"half\""), &e), "{op}");
        }
        // Text with a string field, of course, compares as text.
        assert!(matches("name == \"12\"", &e));
        assert!(matches("name < \"9\"", &e));
        // A numeric field with a string that reads as a number: as that number.
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
    fn fields_are_known_by_name() {
        // Built-ins are known without being passed; repeats and built-ins among the
        // parameter names are harmless.
        for name in BUILTIN_FIELDS {
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
        assert!(Filter::parse(&deep(MAX_NESTING), FIELDS).is_ok());
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
        let long_field = format!("{} == 1", "x".repeat(60));
        let cases: Vec<(&str, &str)> = vec![
            // Fields.
            ("unknown_field", "sise > 4096"),
            ("unknown_field_case", "Name == PoolInit"),
            ("unknown_field_no_suggestion", "colour == red"),
            ("unknown_field_after_others", "size > 1 && clas == \"x\""),
            ("unknown_field_long", &long_field),
            ("unknown_field_not", "not a == 1"),
            ("field_is_a_number", "1 == a"),
            ("field_is_a_string", "\"name\" == PoolInit"),
            ("field_missing_before_operator", "== 1"),
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
        match Filter::parse(expr, FIELDS) {
            Err(e) => {
                let chars = expr.chars().count();
                assert!((1..=chars + 1).contains(&e.column), "{expr:?}: {e:?}");
                assert!(!e.message.is_empty() && !e.message.contains('\n'), "{expr:?}: {e:?}");
                assert_eq!(e.render(expr).lines().count(), 3, "{expr:?}: {e:?}");
            }
            Ok(filter) => {
                let canonical = filter.to_string();
                let again =
                    Filter::parse(&canonical, FIELDS).unwrap_or_else(|e| panic!("{expr:?} -> {canonical:?}: {e:?}"));
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
            parsed += usize::from(Filter::parse(&expr, FIELDS).is_ok());
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
                let field = ["a", "b", "size", "name", "time", "label"][rng.below(6)];
                // The built-ins have their types: `time` a float, `name` a string.
                let ops: &[&str] = if field == "time" {
                    &["==", "!=", "<", "<=", ">", ">="]
                } else {
                    &["==", "!=", "<", "<=", ">", ">=", "~", "!~"]
                };
                let op = ops[rng.below(ops.len())];
                let value = if op.contains('~') {
                    ["*", "P*", "\"?\"", "a", "\"x y\"", "größe*"][rng.below(6)]
                } else if field == "name" {
                    ["PoolInit", "\"1\"", "\"a\\\"b\"", "\"\""][rng.below(4)]
                } else if field == "time" {
                    ["1", "-1", "0x1f", "1.5", "-2e-3", "\"1\""][rng.below(6)]
                } else {
                    ["1", "-1", "0x1f", "1.5", "-2e-3", "PoolInit", "\"1\"", "\"a\\\"b\"", "\"\""][rng.below(9)]
                };
                out.push_str(field);
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
            assert!(Filter::parse(&expr, FIELDS).is_ok(), "{expr:?}");
            check(&expr, &events);
        }
    }
}
