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
//!
//! [`Patterns::parse`] reads items qualified by set too (`set:Kind:Event`, `set:Kind.Event`
//! as event-dump prints an event of a stream of several sets, `set:*`); an unqualified name
//! matches in every set that has it (a reader shows more, it never records less), and an
//! `A:B` that reads both as a kind's event and as a set's kind or event is an error once
//! [`Patterns::resolve`] sees the logs. A log of one set is a list of one: its names need no
//! qualifier.

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
    /// The name or glob its events' set must match; `None`: any set (an unqualified item).
    pub set: Option<String>,
    /// Written `A:B`: `A` may be a kind (`kind` is `A`, `event`
    /// is `B`) or a set (then `B` names what a bare word names); [`Patterns::resolve`]
    /// decides against the logs.
    pub set_or_kind: bool,
    /// What a bare word names in the list this item was read in: what `B` names when `A:B`
    /// reads as set `A`'s `B`.
    pub word_of_set: Word,
}

impl Pattern {
    /// Whether an event named `event` of the kind named `kind` matches this item, the
    /// `-` and the set aside.
    fn matches(&self, kind: &str, event: &str) -> bool {
        self.kind.as_deref().is_none_or(|k| glob::matches(k, kind))
            && self.event.as_deref().is_none_or(|e| glob::matches(e, event))
    }

    /// Whether an event named `event` of the kind named `kind` of the set named `set` (empty
    /// for built-in events and 1.x streams) matches this item, the `-` aside. An `A:B` not
    /// yet [resolved](Patterns::resolve) matches in either reading.
    pub fn matches_in(&self, set: &str, kind: &str, event: &str) -> bool {
        let own = self.set.as_deref().is_none_or(|s| glob::matches(s, set)) && self.matches(kind, event);
        own || (self.set_or_kind && self.as_set().matches_in(set, kind, event))
    }

    /// An `A:B` read as set `A`'s `B`.
    fn as_set(&self) -> Pattern {
        let (kind, event) = match self.word_of_set {
            Word::Kind => (self.event.clone(), None),
            Word::Event => (None, self.event.clone()),
        };
        Pattern { set: self.kind.clone(), kind, event, set_or_kind: false, ..self.clone() }
    }

    /// An `A:B` read as kind `A`'s event `B`.
    fn as_kind_event(&self) -> Pattern {
        Pattern { set_or_kind: false, ..self.clone() }
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
/// // Code, set (empty for the built-in events), kind and event names.
/// let events = [(0x0001, "app", "Arena", "ArenaCreate"), (0x0002, "app", "Pool", "PoolInit"), (0xFF03, "", "Builtin", "Dropped")];
/// let kinds = Patterns::parse("Pool, Builtin", Word::Kind)?.resolve(events)?;
/// assert_eq!(kinds.compile(events).iter().collect::<Vec<_>>(), [0x0002, 0xFF03]);
/// let names = Patterns::parse("-Pool.PoolInit", Word::Event)?.resolve(events)?;
/// assert_eq!(names.compile(events).iter().collect::<Vec<_>>(), [0x0001, 0xFF03]);
/// # Ok::<(), event_format::select::SelectError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Patterns {
    /// The items, in the order written.
    items: Vec<Pattern>,
}

impl Patterns {
    /// Reads a list of patterns, as event-dump prints and takes them: a word, `Kind:Event` or
    /// `Kind.Event`, `set:Kind:Event` or `set:Kind.Event`, `set:*`, each part a glob. `A:B`
    /// is kind `A`'s event `B` or set `A`'s `B` (what a bare word names):
    /// [`resolve`](Patterns::resolve) decides against the logs. An unqualified name matches
    /// in every set that has it. An empty list is no error: it matches no event.
    ///
    /// The errors are the control grammar's for the same mistakes: a `-` with nothing after
    /// it, more than two `:`, a `:` with nothing on one side, an item too long to be
    /// a name.
    ///
    /// ```
    /// use event_format::select::{Patterns, Word};
    ///
    /// let events = [
    ///     (0x0001, "app", "Pool", "PoolInit"),
    ///     (0x0002, "storage", "Pool", "PoolInit"),
    ///     (0x0003, "storage", "Page", "PageWrite"),
    /// ];
    /// let chosen = |text: &str, word| {
    ///     let p = Patterns::parse(text, word)?.resolve(events)?;
    ///     Ok::<_, event_format::select::SelectError>(p.compile(events).iter().collect::<Vec<_>>())
    /// };
    /// assert_eq!(chosen("storage:*", Word::Kind)?, [0x0002, 0x0003]);
    /// assert_eq!(chosen("Pool", Word::Kind)?, [0x0001, 0x0002]);
    /// assert_eq!(chosen("storage:Pool.PoolInit", Word::Event)?, [0x0002]);
    /// assert_eq!(chosen("-storage:Page:PageWrite", Word::Event)?, [0x0001, 0x0002]);
    /// assert_eq!(chosen("storage:PageWrite", Word::Event)?, [0x0003]);
    /// # Ok::<(), event_format::select::SelectError>(())
    /// ```
    pub fn parse(text: &str, word: Word) -> Result<Patterns, SelectError> {
        let items = Token::all(text).into_iter().map(|token| read(&token, word)).collect::<Result<_, _>>()?;
        Ok(Patterns { items })
    }

    /// Decides each `A:B` of a list read by [`parse`](Patterns::parse) against `events`
    /// (set, kind and event names, as [`compile`](Patterns::compile) takes them, the codes
    /// aside): kind `A`'s event `B` when only that reading matches an
    /// event, set `A`'s `B` when only that one does; when both match, and not the same
    /// events, the error names both spellings (`set:A:B`, `A:B:*`). An `A:B` that matches
    /// nothing either way is left undecided (it matches nothing).
    pub fn resolve<'a, C>(
        &self,
        events: impl IntoIterator<Item = (C, &'a str, &'a str, &'a str)>,
    ) -> Result<Patterns, SelectError> {
        let events: Vec<(&str, &str, &str)> = events.into_iter().map(|(_, s, k, e)| (s, k, e)).collect();
        let mut items = Vec::with_capacity(self.items.len());
        for item in &self.items {
            if !item.set_or_kind {
                items.push(item.clone());
                continue;
            }
            let (as_event, as_set) = (item.as_kind_event(), item.as_set());
            let matched = |p: &Pattern| -> Vec<(&str, &str, &str)> {
                events.iter().copied().filter(|&(s, k, e)| p.matches_in(s, k, e)).collect()
            };
            let (by_event, by_set) = (matched(&as_event), matched(&as_set));
            match (by_event.is_empty(), by_set.is_empty()) {
                (false, false) if by_event != by_set => {
                    let sign = if item.removal { "-" } else { "" };
                    let a = item.kind.as_deref().unwrap_or_default();
                    let b = item.event.as_deref().unwrap_or_default();
                    let mut candidates: Vec<String> = Vec::new();
                    for (s, _, _) in &by_event {
                        let c = format!("\"{sign}{s}:{a}:{b}\"");
                        if !candidates.contains(&c) {
                            candidates.push(c);
                        }
                    }
                    candidates.push(match item.word_of_set {
                        Word::Kind => format!("\"{sign}{a}:{b}:*\""),
                        Word::Event => format!("\"{sign}{a}:*:{b}\""),
                    });
                    let last = candidates.pop().unwrap_or_default();
                    let message = format!(
                        "{:?} at column {} is ambiguous: it reads as kind {a}'s event {b} and as set {a}'s {b}; write {} or {last}",
                        item.text,
                        item.column,
                        candidates.join(", ")
                    );
                    return Err(SelectError { item: item.text.clone(), column: item.column, message });
                }
                (true, false) => items.push(as_set),
                (false, _) => items.push(as_event),
                // Neither reading matches: left as written, for the caller's message.
                (true, true) => items.push(item.clone()),
            }
        }
        Ok(Patterns { items })
    }

    /// The codes of `events` (code, set, kind and event names; the set is empty for built-in
    /// events and for the one set of a 1.x stream) that the list chooses: for each event, the
    /// last item that matches it decides; an event no item matches is chosen when the first
    /// item is a removal.
    pub fn compile<'a>(&self, events: impl IntoIterator<Item = (u16, &'a str, &'a str, &'a str)>) -> CodeSet {
        let start = self.items.first().is_some_and(|p| p.removal);
        let mut codes = CodeSet::new();
        for (code, set, kind, event) in events {
            let last = self.items.iter().rev().find(|p| p.matches_in(set, kind, event));
            if last.map_or(start, |p| !p.removal) {
                codes.insert(code);
            }
        }
        codes
    }

    /// The items, in the order written.
    pub fn items(&self) -> &[Pattern] {
        &self.items
    }
}

/// An item without a set: a word, `Kind:Event` or `Kind.Event`.
fn read_unqualified(token: &Token<'_>, word: Word) -> Result<Pattern, SelectError> {
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
        set: None,
        set_or_kind: false,
        word_of_set: word,
    })
}

/// One item of [`Patterns::parse`]: `set:Kind:Event`, `set:Kind.Event`, `A:B` (kind and
/// event, or set and word), `Kind.Event`, a word.
fn read(token: &Token<'_>, word: Word) -> Result<Pattern, SelectError> {
    let (removal, body) = token.sign_and_body()?;
    let Some((head, rest)) = body.split_once(':') else { return read_unqualified(token, word) };
    let (set, kind, event, set_or_kind) = match rest.split_once(':').or_else(|| rest.split_once('.')) {
        Some((kind, event)) => {
            if head.is_empty() {
                return Err(token.error(format!(
                    "{} names no set before the first ':'; write {:?} for the events of every set",
                    token.at(),
                    format!("{}*:{rest}", if removal { "-" } else { "" })
                )));
            }
            token.check_sides(removal, kind, &event.replace('.', ":"))?;
            (Some(head), kind, event, false)
        }
        None => {
            token.check_sides(removal, head, rest)?;
            (None, head, rest, true)
        }
    };
    Ok(Pattern {
        text: token.item.to_owned(),
        column: token.column,
        removal,
        kind: Some(kind.to_owned()),
        event: Some(event.to_owned()),
        set: set.map(str::to_owned),
        set_or_kind,
        word_of_set: word,
    })
}
