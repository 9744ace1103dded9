//! `--filter EXPR`: ftrace's filter language, comparisons of an event's values (its
//! parameters and the built-ins, by name) joined with `&&`, `||`, `!` and parentheses.
//! ftrace calls what a comparison reads a "field"; here it is a *name*, since "field" is a
//! `tracing` field (`fields.NAME`, [`crate::fields`]).
//!
//! ```text
//! expr    := or
//! or      := and ( "||" and )*
//! and     := unary ( "&&" unary )*
//! unary   := "!" unary | "(" expr ")" | compare
//! compare := NAME OP VALUE
//! NAME    := built-in | parameter | "args." parameter | "fields." tracing-field
//! OP      := "==" | "!=" | "<" | "<=" | ">" | ">=" | "~" | "!~"
//! VALUE   := number | "string" | word
//! ```
//!
//! Reading:
//! - `!` binds tightest, then `&&`, then `||`: `!a == 1 || b == 2 && c == 3` is
//!   `(!(a == 1)) || ((b == 2) && (c == 3))`. Parentheses group; whitespace is free.
//! - A NAME is one of the built-ins `time` (seconds since the start, a float), `thread` (its
//!   id, or its name), `code` (an integer), `name` (the event's name), `kind` (its kind's
//!   name), `set` (its event set's name; empty for built-in events and 1.x logs; an event's
//!   own parameter named `set` comes first), or a parameter name the caller passes to
//!   [`Filter::parse`]. Any other name is an error that lists the names and suggests the
//!   closest.
//! - `args.NAME` is always the parameter `NAME`, also where a built-in has its name: the
//!   `name` of a tracing span (`SpanEnter`) is `args.name`, while `name` is the event's name.
//!   (`args` is where `print --format json` puts the parameters.)
//! - `fields.NAME` is the `tracing` field `NAME` of a `TraceEvent` or `SpanEnter`, read from
//!   its text by [`crate::fields`] with its type: `fields.id == 7` matches `id=7` and
//!   not `id=70`. Any name is accepted; an event without that field does not match.
//! - `name` and `kind` compared with a string or word that holds a `:` are compared in their
//!   form qualified by the event's set, `set:Name` and `set:Kind` (`name == storage:PageWrite`,
//!   `kind ~ "storage:*"`), through [`Filterable::qualified`]; `name` with a value that holds a
//!   `.` in the form `print` writes, `Kind.Name` (`set:Kind.Name` with a `:` too).
//! - A number is a decimal integer (`42`, `-7`), a hexadecimal one (`0x1f`, `-0x10`) or a
//!   float (`1.5`, `-.5`, `2e-3`, `1E+6`). A word that starts like a number (a digit, or `-`
//!   or `.` before a digit) must be one: `0xZZ` and `1.2.3` are errors; quote them to mean
//!   text. `NaN`, `inf` and `-inf` are floats where the name's values are.
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
//! Types: the caller gives each parameter's types ([`ValueType`]; a name several event
//! types share may have several). **A comparison that cannot match because of its type is an
//! error**, with a caret under the value or the operator: a number with a string parameter
//! (`class == 5`: quote it), text or a boolean with a numeric one, anything but `true`,
//! `false`, `1` and `0` with a boolean, `~` with a number or a boolean, `<` with a boolean
//! or a thread's name. A name whose types the caller does not know ([`ValueType::Any`]), and
//! `fields.NAME`, are checked event by event.
//!
//! Matching:
//! - **A comparison of a name the event does not have is false**, whatever the operator:
//!   `x != 1` and `x !~ "a*"` are false for an event without `x`, and `!(x == 1)` is true.
//! - So is a comparison with an event whose value of the name has another type than the
//!   value compared (a name that different events give different types). A string that
//!   reads as a number (`"0x10"`, `"1.5"`) compares with a numeric value as that number.
//! - Numbers compare exactly as `i128` when both sides are integers, as `f64` otherwise
//!   (IEEE rules: a NaN value is `!=` to everything and nothing else, but for the value
//!   `NaN`, which `==` matches a NaN value as `print` shows it). Booleans compare as 0 and 1.
//! - Strings: `==` and `!=` exact, `<`, `<=`, `>`, `>=` lexicographic by code point, `~` a
//!   glob match over the whole string, `!~` its negation.

mod check;
mod eval;
mod event;
mod lex;
mod parse;
#[cfg(test)]
mod tests;
mod value;

pub use event::FilterEvent;

use eval::{Node, Target};
use lex::Tok;
use parse::{Parser, expected_join};
use std::borrow::Cow;
use std::fmt;
use value::{Op, Value};

/// The built-in names: values every event has, whatever the caller passes to
/// [`Filter::parse`].
pub const BUILTIN_NAMES: [&str; 6] = ["time", "thread", "code", "name", "kind", "set"];

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

/// The value of one name of one event, as a [`Filterable`] implementation gives it: the
/// values of tracing fields, of parameters and of the built-ins are one type (integers of every letter as
/// `Int`, `time` as `Float`, booleans compare with `true`/`false` and as 0 and 1 with
/// numbers, text for `name`, `kind` and string parameters).
pub use crate::codec::fields::FieldValue;

/// The type of a name's values (a parameter's, or a built-in's), as [`Filter::parse_typed`]
/// checks a comparison against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ValueType {
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

impl ValueType {
    /// The type of the values of a format letter.
    pub fn of_letter(letter: event_def::letter::Letter) -> ValueType {
        use event_def::letter::Letter;
        match letter {
            Letter::Pointer | Letter::Address | Letter::Word | Letter::Unsigned | Letter::Signed => ValueType::Int,
            Letter::Double => ValueType::Float,
            Letter::Bool => ValueType::Bool,
            Letter::String => ValueType::Str,
        }
    }

    /// The type as a message names it, with an article.
    fn described(self) -> &'static str {
        match self {
            ValueType::Int => "an integer",
            ValueType::Float => "a float",
            ValueType::Bool => "a boolean",
            ValueType::Str => "a string",
            ValueType::Thread => "a thread",
            ValueType::Any => "any value",
        }
    }

    /// What to write instead, for a value of the wrong type.
    fn hint(self) -> &'static str {
        match self {
            ValueType::Int => "write an integer such as 42, -7 or 0x1f",
            ValueType::Float => "write a number such as 1.5, 2e-3, NaN or inf",
            ValueType::Bool => "write true or false (or 1, 0)",
            ValueType::Str => "quote the value to compare text",
            ValueType::Thread => "write a thread as print shows it, T3 or 3, or its name",
            ValueType::Any => "",
        }
    }
}

/// An event as a filter sees it: the values its comparisons name, by name (`time`, `thread`,
/// `name`, the parameters, `args.NAME`, a `tracing` event's `fields.NAME`). Named apart from
/// the `tracing` fields ([`crate::fields`]), which are one kind of value it gives.
pub trait Filterable {
    /// The value of `name` in this event (a built-in or a parameter), or `None` when the
    /// event has none (a comparison of it is then false). `thread` is the thread's id.
    fn get(&self, name: &str) -> Option<FieldValue<'_>>;

    /// The value of `name` or `kind` qualified by the event's set (`storage:PageWrite`,
    /// `storage:Page`), which a comparison with a value that holds a `:` uses; `None` (the
    /// default) when the event has no set (built-in events, 1.x logs): the plain value is
    /// compared then.
    fn qualified(&self, name: &str) -> Option<FieldValue<'_>> {
        let _ = name;
        None
    }

    /// The event's parameter `name`, for `args.NAME`, even where a built-in has its
    /// name. The default is [`Filterable::get`].
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
    /// Parses `expr` (see the [module documentation](self) for the language). `params` are
    /// the parameter names the log's events have (repeats are fine); the built-ins
    /// [`BUILTIN_NAMES`] are always known. Never panics; linear time.
    ///
    /// ```
    /// use event_format::filter::{FieldValue, Filterable, Filter};
    /// use std::borrow::Cow;
    ///
    /// struct Alloc;
    /// impl Filterable for Alloc {
    ///     fn get(&self, name: &str) -> Option<FieldValue<'_>> {
    ///         match name {
    ///             "name" => Some(FieldValue::Str(Cow::Borrowed("PoolAlloc"))),
    ///             "size" => Some(FieldValue::Int(8192)),
    ///             _ => None,
    ///         }
    ///     }
    /// }
    ///
    /// let filter = Filter::parse(r#"size >= 0x1000 && name ~ "Pool*""#, &["pool", "size"]).unwrap();
    /// assert!(filter.matches(&Alloc));
    /// // A name the event lacks makes its comparison false.
    /// assert!(!Filter::parse("pool == 1", &["pool"]).unwrap().matches(&Alloc));
    ///
    /// let err = Filter::parse("size = 4096", &["size"]).unwrap_err();
    /// assert_eq!(
    ///     err.render("size = 4096"),
    ///     "error: bad filter: unknown operator `=`; did you mean `==`?\n    size = 4096\n         ^",
    /// );
    /// ```
    pub fn parse(expr: &str, params: &[&str]) -> Result<Filter, FilterError> {
        let typed: Vec<(&str, ValueType)> = params.iter().map(|p| (*p, ValueType::Any)).collect();
        Filter::parse_typed(expr, &typed)
    }

    /// Parses `expr` as [`Filter::parse`] does, with each parameter's type: a comparison
    /// that no event can match because of its type is an error (a name may come with several
    /// types, from several event types; it is an error only when every type refuses the
    /// comparison). The built-ins' types are known.
    ///
    /// ```
    /// use event_format::filter::{ValueType, Filter};
    ///
    /// let params = [("ok", ValueType::Bool), ("size", ValueType::Int), ("class", ValueType::Str)];
    /// assert!(Filter::parse_typed("ok == true && size > 0x10 && class == AMC", &params).is_ok());
    /// let err = Filter::parse_typed("class == 5", &params).unwrap_err();
    /// assert_eq!(err.column, 10);
    /// ```
    pub fn parse_typed(expr: &str, params: &[(&str, ValueType)]) -> Result<Filter, FilterError> {
        let mut parser = Parser::new(expr, params);
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

    /// Whether `event` is selected. A comparison of a name `event` does not have, or of a
    /// value of another type, is false; see the [module documentation](self).
    pub fn matches(&self, event: &dyn Filterable) -> bool {
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
            if let (Target::Name(f), Value::Text { text, .. }) = (&c.target, &c.value)
                && f == "name"
                && matches!(c.op, Op::Eq | Op::Ne)
                && !text.contains([':', '.'])
            {
                out.push((text.as_str(), c.value_column));
            }
        });
        out
    }

    /// Whether the filter compares `thread` with a name or a glob: then [`Filterable::thread_name`]
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

/// `text` as a message repeats it: cut short when long.
pub(super) fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN_MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

pub(super) fn error(column: usize, message: impl Into<String>) -> FilterError {
    FilterError { column, message: message.into() }
}
