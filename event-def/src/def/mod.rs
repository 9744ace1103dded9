//! The events.def language: [`parse`] it into a [`Schema`], [`render`] a schema back into it.
//!
//! ```text
//! # comments run from '#' to the end of the line
//! SET(mps)                 # the set's name (optional: its reader gives a default)
//! VERSION(1, 0, 0)
//!
//! KIND(Arena, "per space or arena or global")
//! KIND(Pool)
//!
//! RELATION(ArenaCreate, 0x0001, TRUE,  Arena, PAW, arena, base, size)
//! RELATION(PoolAlloc,   0x0003, FALSE, Pool,  PAW)
//! RELATION(Poll,        4,      TRUE,  Arena, 0)
//! RETIRED(OldThing, 0x0005)
//! RELATION(Retry,       6,      TRUE,  Arena, W,   n, limit=100/s)   # a limit: at most 100/s a thread
//! SPAN(poll, Poll, Retry)
//! HISTOGRAM(poll_ns, poll, LOG2)                 # the recorder keeps poll's durations
//! ```
//!
//! The parser reports every error it can find in one pass: it recovers from a syntax error by
//! skipping to the statement's closing `)` or to the next line that starts a statement, and
//! then holds the schema it built to [`Schema::check`], the one place where the rules of an
//! event set live, pointing each problem at the token it concerns.
//!
//! The parser never panics and never recurses, whatever the input.
//!
//! `SET(name)` names the set (docs/EVENT-SETS.md): at most once, anywhere in the file (its
//! place does not matter, as VERSION's does not). The name is a word, or a string for names
//! with `-`, such as a package name: `SET("my-crate")`. Without it, the set takes the name
//! its reader gives ([`parse_set`]): `include_events!` gives the package name of the crate
//! that includes the file. Names follow format 2's rules: an event may be named like a
//! built-in event, and names may be Rust keywords except `self`, `Self`, `super`, `crate`.

mod build;
mod lex;
mod parse;
mod render;
pub(crate) mod suggest;

pub use suggest::closest;

use crate::schema::Schema;
use std::fmt;

pub use render::render;

/// Parses events.def text. `file` is the path to show in messages. The set's name is its
/// `SET` line, else `file`'s stem (`events` for `path/events.def`) when that is a valid set
/// name, else [`DEFAULT_SET_NAME`]; [`parse_set`] takes the default from its caller.
///
/// Returns the schema, which passes [`Schema::check`], or every error found, in the order of
/// their positions in the text.
///
/// ```
/// let schema = event_def::def::parse(
///     "VERSION(1, 0, 0)\nKIND(Arena)\nRELATION(ArenaCreate, 0x0001, TRUE, Arena, PAW)\n",
///     "events.def",
/// )
/// .unwrap();
/// assert_eq!(schema.events[0].params, ["f0", "f1", "f2"]);
///
/// let errors = event_def::def::parse("KIND(Arena)\n", "events.def").unwrap_err();
/// assert_eq!(
///     errors.to_string(),
///     "events.def:1:1: missing VERSION line; add `VERSION(1, 0, 0)` at the top"
/// );
/// ```
pub fn parse(source: &str, file: &str) -> Result<Schema, DefErrors> {
    let stem = std::path::Path::new(file).file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let default = if crate::schema::set_name_problem(stem).is_none() { stem } else { DEFAULT_SET_NAME };
    parse_set(source, file, default)
}

/// The name of a set whose events.def has no `SET` line when [`parse`] can make none of its
/// file name.
pub const DEFAULT_SET_NAME: &str = "events";

/// Parses events.def text as [`parse`] does, naming the set `default_name` when the text
/// has no `SET` line (an error when `default_name` is not a valid set name).
///
/// ```
/// let def = "VERSION(1, 0, 0)\nKIND(Page)\nRELATION(PageWrite, 1, TRUE, Page, 0)\n";
/// let schema = event_def::def::parse_set(def, "events.def", "storage").unwrap();
/// assert_eq!(schema.name, "storage");
/// let named = event_def::def::parse_set(&format!("SET(disk)\n{def}"), "events.def", "storage").unwrap();
/// assert_eq!(named.name, "disk");
/// ```
pub fn parse_set(source: &str, file: &str, default_name: &str) -> Result<Schema, DefErrors> {
    build::parse(source, default_name).map_err(|diags| {
        DefErrors(
            diags
                .into_iter()
                .map(|d| DefError {
                    file: file.to_owned(),
                    line: d.pos.line,
                    column: d.pos.column,
                    message: d.message,
                    help: d.help,
                })
                .collect(),
        )
    })
}

/// One error in an events.def file: where, what is wrong, and how to fix it.
///
/// Its [`Display`](fmt::Display) is one line: `{file}:{line}:{column}: {message}; {help}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefError {
    /// The path of the file, as given to [`parse`].
    pub file: String,
    /// The line, counted from 1.
    pub line: u32,
    /// The column, counted from 1 in characters (not bytes).
    pub column: u32,
    /// What is wrong; one line.
    pub message: String,
    /// How to fix it; one line.
    pub help: String,
}

impl fmt::Display for DefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}; {}", self.file, self.line, self.column, self.message, self.help)
    }
}

impl std::error::Error for DefError {}

/// Every error found in an events.def file, in the order of their positions.
///
/// Its [`Display`](fmt::Display) shows each error on its own line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefErrors(pub Vec<DefError>);

impl fmt::Display for DefErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DefErrors {}

/// A position in the text: line and column, both counted from 1, the column in characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
struct Pos {
    line: u32,
    column: u32,
}

impl Pos {
    /// The start of the text.
    const START: Pos = Pos { line: 1, column: 1 };

    /// The position `n` characters to the right on the same line.
    fn right(self, n: usize) -> Pos {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        Pos { line: self.line, column: self.column.saturating_add(n) }
    }
}

/// An error before it is given a file name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Diag {
    pos: Pos,
    message: String,
    help: String,
}

impl Diag {
    fn new(pos: Pos, message: impl Into<String>, help: impl Into<String>) -> Diag {
        Diag { pos, message: message.into(), help: help.into() }
    }
}
