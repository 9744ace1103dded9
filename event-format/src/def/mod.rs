//! The events.def language: [`parse`] it into a [`Schema`], [`render`] a schema back into it.
//!
//! ```text
//! # comments run from '#' to the end of the line
//! VERSION(1, 0, 0)
//!
//! KIND(Arena, "per space or arena or global")
//! KIND(Pool)
//!
//! RELATION(ArenaCreate, 0x0001, TRUE,  Arena, PAW, arena, base, size)
//! RELATION(PoolAlloc,   0x0003, FALSE, Pool,  PAW)
//! RELATION(Poll,        4,      TRUE,  Arena, 0)
//! RETIRED(OldThing, 0x0005)
//! ```
//!
//! The parser reports every error it can find in one pass: it recovers from a syntax error by
//! skipping to the statement's closing `)` or to the next line that starts a statement, and
//! then holds the schema it built to [`Schema::check`], the one place where the rules of an
//! event set live, pointing each problem at the token it concerns.
//!
//! The parser never panics and never recurses, whatever the input.

mod build;
mod lex;
mod parse;
mod render;
pub(crate) mod suggest;

pub use suggest::closest;

use crate::schema::Schema;
use std::fmt;

pub use render::render;

/// Parses events.def text. `file` is the path to show in messages.
///
/// Returns the schema, which passes [`Schema::check`], or every error found, in the order of
/// their positions in the text.
///
/// ```
/// let schema = event_format::def::parse(
///     "VERSION(1, 0, 0)\nKIND(Arena)\nRELATION(ArenaCreate, 0x0001, TRUE, Arena, PAW)\n",
///     "events.def",
/// )
/// .unwrap();
/// assert_eq!(schema.events[0].params, ["f0", "f1", "f2"]);
///
/// let errors = event_format::def::parse("KIND(Arena)\n", "events.def").unwrap_err();
/// assert_eq!(
///     errors.to_string(),
///     "events.def:1:1: missing VERSION line; add `VERSION(1, 0, 0)` at the top"
/// );
/// ```
pub fn parse(source: &str, file: &str) -> Result<Schema, DefErrors> {
    build::parse(source).map_err(|diags| {
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
