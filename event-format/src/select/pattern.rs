//! [`Patterns`]: the selection language as a reader takes it (event-dump's `--kind` and
//! `--event`), compiled per log to a [`CodeSet`].
//!
//! A reader differs from a recorder in three ways, and only these: it shows what a log
//! holds, so the built-in events (kind `Builtin`) can be named like any other; the option
//! says what a bare word names (`--kind Pool` a kind, `--event PoolInit` an event) where a
//! control text tries kinds first; and it reads logs of several event sets at once, so a
//! name that one log lacks is not an error here (the caller says which names no log has).
//! There are no numbers and no `all`/`none` keywords: `*` chooses everything. `Kind.Event`
//! is read as `Kind:Event`, the way event-dump prints an event.

use super::codes::CodeSet;
use super::glob;
use super::grammar::{SelectError, Token};

/// What a bare word (an item without `:` or `.`) names in a list of [`Patterns`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Word {
    /// Kinds: `Pool` is `Pool:*`.
    Kind,
    /// Events of any kind: `PoolInit` is `*:PoolInit`.
    Event,
}

/// One item of a list of [`Patterns`]: `Kind:Event` (or `Kind.Event`), either side a glob,
/// or a bare word, with a `-` to remove.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The item as written, with its `-` if it has one.
    pub text: String,
    /// Its column in the text: 1-based, in characters.
    pub column: usize,
    /// Whether it was written with a `-`: the events it matches are taken out.
    pub removal: bool,
    /// The name or glob its events' kind must match; `None`: any kind (a bare event name).
    pub kind: Option<String>,
    /// The name or glob its events' names must match; `None`: any event (a bare kind name).
    pub event: Option<String>,
}

impl Pattern {
    /// Whether an event named `event` of the kind named `kind` matches this item, the
    /// `-` aside.
    pub fn matches(&self, kind: &str, event: &str) -> bool {
        self.kind.as_deref().is_none_or(|k| glob::matches(k, kind))
            && self.event.as_deref().is_none_or(|e| glob::matches(e, event))
    }
}

/// A list of patterns as a reader takes it, read once and compiled once per log's schema.
///
/// Items are separated by commas and/or whitespace and apply left to right, as in a control
/// text: the last item that matches an event decides, and a list whose first item is a
/// removal starts from every event (`-Object` shows everything but kind Object).
///
/// ```
/// use event_format::select::{Patterns, Word};
///
/// let events = [(0x0001, "Arena", "ArenaCreate"), (0x0002, "Pool", "PoolInit"), (0xFF03, "Builtin", "Dropped")];
/// let kinds = Patterns::parse("Pool, Builtin", Word::Kind)?;
/// assert_eq!(kinds.compile(events).iter().collect::<Vec<_>>(), [0x0002, 0xFF03]);
/// let names = Patterns::parse("-Pool.PoolInit", Word::Event)?;
/// assert_eq!(names.compile(events).iter().collect::<Vec<_>>(), [0x0001, 0xFF03]);
/// # Ok::<(), event_format::select::SelectError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Patterns {
    /// The items, in the order written.
    items: Vec<Pattern>,
}

impl Patterns {
    /// Reads a list of patterns. An empty list is no error: it matches no event.
    ///
    /// The errors are the control grammar's for the same mistakes: a `-` with nothing after
    /// it, more than one `:`, a `:` with nothing on one side, an item too long to be a name.
    pub fn parse(text: &str, word: Word) -> Result<Patterns, SelectError> {
        let items = Token::all(text).into_iter().map(|token| read(&token, word)).collect::<Result<_, _>>()?;
        Ok(Patterns { items })
    }

    /// The items, in the order written.
    pub fn items(&self) -> &[Pattern] {
        &self.items
    }

    /// The codes of `events` (code, kind name, event name) that the list chooses: for each
    /// event, the last item that matches it decides; an event no item matches is chosen
    /// when the first item is a removal.
    pub fn compile<'a>(&self, events: impl IntoIterator<Item = (u16, &'a str, &'a str)>) -> CodeSet {
        let start = self.items.first().is_some_and(|p| p.removal);
        let mut codes = CodeSet::new();
        for (code, kind, event) in events {
            let last = self.items.iter().rev().find(|p| p.matches(kind, event));
            if last.map_or(start, |p| !p.removal) {
                codes.insert(code);
            }
        }
        codes
    }
}

fn read(token: &Token<'_>, word: Word) -> Result<Pattern, SelectError> {
    let (removal, body) = token.sign_and_body()?;
    let split = body.split_once(':').or_else(|| body.split_once('.'));
    let (kind, event) = match split {
        Some((kind, event)) => {
            // `Kind.Event` spelled with a colon, so that the checks and their messages are
            // the control grammar's.
            token.check_sides(removal, kind, &event.replace('.', ":"))?;
            (Some(kind), Some(event))
        }
        None => match word {
            Word::Kind => (Some(body), None),
            Word::Event => (None, Some(body)),
        },
    };
    Ok(Pattern {
        text: token.item.to_owned(),
        column: token.column,
        removal,
        kind: kind.map(str::to_owned),
        event: event.map(str::to_owned),
    })
}
