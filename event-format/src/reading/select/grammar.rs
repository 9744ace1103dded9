//! Reading a control text: its items, each resolved against a schema into an [`Item`], and
//! the one-line errors ([`SelectError`]) with their did-you-means.
//!
//! The language itself is described in the [module above](super). This module knows the
//! syntax (items, `-`, `:`, numbers, keywords) and the names of a schema; it knows nothing
//! of a running selection, which [`Selection`](super::Selection) keeps.

use super::glob::{is_glob, name_matches};
use event_def::builtin;
use event_def::def::closest;
use event_def::schema::{BUILTIN_KIND, EventType, MAX_KINDS, MAX_NAME_LEN, Schema};
use std::fmt;

/// One item of a control text, resolved against a schema by [`parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    /// The item as written, with its `-` if it has one.
    pub text: String,
    /// Its column in the text: the 1-based position of its first character, counted in
    /// characters from the start of the text.
    pub column: usize,
    /// Whether it was written with a `-` (a removal). At start-up, a text whose first item
    /// is a removal starts from every kind ([`from_env_text`](super::from_env_text)).
    pub removal: bool,
    /// What it does to a [`Selection`](super::Selection).
    pub action: Action,
}

/// What an [`Item`] does to a [`Selection`](super::Selection).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// The kind mask becomes this mask and every override is cleared: a number, `all`,
    /// `none` or `-all`.
    SetKinds(u64),
    /// The kinds in `mask` are turned on (`on`) or off, and the overrides of their events,
    /// `codes`, are cleared: a kind name or a glob over kind names.
    Kinds {
        /// The kinds' bits.
        mask: u64,
        /// On (`Pool`) or off (`-Pool`).
        on: bool,
        /// The codes of every event of these kinds.
        codes: Vec<u16>,
    },
    /// Each event in `codes` gets the override `on`: `Kind:Event`, with globs, or an event
    /// name (or glob over event names) alone.
    Events {
        /// The events' codes, in declaration order.
        codes: Vec<u16>,
        /// Always recorded (`Pool:PoolInit`) or never (`-Pool:PoolInit`).
        on: bool,
    },
}

/// A control text that cannot be read: which item, where, and what to write instead.
///
/// Its [`Display`](fmt::Display) is [`message`](SelectError::message), one line that names
/// the item and its column, for example
/// `unknown kind "Pol" at column 6 (did you mean "Pool"?); kinds are Arena, Pool`.
/// Callers prefix where the text came from: `EVENT_CONTROL: ...`.
#[derive(Clone, PartialEq, Eq)]
pub struct SelectError {
    /// The offending item as written (empty when the text chooses nothing).
    pub item: String,
    /// The item's column: the 1-based position of its first character in the text, counted
    /// in characters (1 when the text chooses nothing).
    pub column: usize,
    /// What is wrong and what to write instead, on one line.
    pub message: String,
}

impl fmt::Display for SelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// `Debug` writes the one-line message that `Display` writes, not the variant and its
/// fields: an error returned from `main` (`fn main() -> Result<(), SelectError>`, or through
/// `Box<dyn Error>`) is printed by the standard library with `Debug`, as `Error: {:?}`, and
/// that line is what the program's user reads. A program that needs the parts matches on
/// them.
impl fmt::Debug for SelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for SelectError {}

/// Reads a control text: its items, resolved against `schema` (names to kind bits and
/// event codes), to be applied to a selection with `Selection::apply` (the one-set case of
/// [`apply`](super::apply) and [`from_env_text`](super::from_env_text)).
///
/// The first wrong item is an error; so is a text with no items, and a name or glob that
/// matches nothing.
pub(crate) fn parse(text: &str, schema: &Schema) -> Result<Vec<Item>, SelectError> {
    let tokens = tokens(text);
    if tokens.is_empty() {
        return Err(SelectError {
            item: String::new(),
            column: 1,
            message: format!(
                "nothing chosen at column 1: the text has no items; write \"all\", \"none\", kind names ({}) or Kind:Event",
                kind_list(schema)
            ),
        });
    }
    tokens.into_iter().map(|(column, item)| Reader { schema, token: Token { item, column }, qual: "" }.read()).collect()
}

/// Reads `body` (an item's text after its `-` and after any set qualifier) against one set's
/// `schema`, with the errors naming `token` and the suggestions written with `qual` (`"set:"`
/// or empty) after their `-`: how [`sets`](super::sets) reads each part of a qualified item.
pub(super) fn read_body(
    schema: &Schema,
    token: &Token<'_>,
    qual: &str,
    removal: bool,
    body: &str,
) -> Result<Item, SelectError> {
    Reader { schema, token: Token { item: token.item, column: token.column }, qual }.read_body(removal, body)
}

/// The longest item read, in bytes: two names of [`MAX_NAME_LEN`] bytes, a `:` and a `-`,
/// and room for globs. Longer items are refused before any matching is done.
pub(super) const MAX_ITEM_LEN: usize = 4 * MAX_NAME_LEN;

/// The longest piece of user text a message repeats, in characters.
const SHOWN_MAX: usize = 40;

/// At most this many names are listed in a message.
const LISTED_MAX: usize = 16;

/// The bits of the kinds `schema` declares.
pub(super) fn declared_mask(schema: &Schema) -> u64 {
    match schema.kinds.len() {
        n if n >= MAX_KINDS => u64::MAX,
        n => (1u64 << n) - 1,
    }
}

/// The control-mask bit of kind `index`; 0 for an index no mask can hold.
pub(super) fn kind_bit(index: usize) -> u64 {
    u32::try_from(index).ok().and_then(|i| 1u64.checked_shl(i)).unwrap_or(0)
}

/// The items of `text` with their 1-based columns (in characters): runs of characters
/// other than whitespace and commas.
pub(super) fn tokens(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<(usize, usize)> = None; // (byte offset, column)
    for (column, (offset, c)) in text.char_indices().enumerate() {
        let separator = c.is_whitespace() || c == ',';
        match (separator, start) {
            (false, None) => start = Some((offset, column + 1)),
            (true, Some((from, col))) => {
                out.push((col, &text[from..offset]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some((from, col)) = start {
        out.push((col, &text[from..]));
    }
    out
}

/// `text` quoted as a message repeats it: cut short when long, escaped so that it stays on
/// one line.
pub(super) fn quoted(text: &str) -> String {
    match text.char_indices().nth(SHOWN_MAX) {
        Some((cut, _)) => format!("{:?}...", &text[..cut]),
        None => format!("{text:?}"),
    }
}

/// `names` separated by commas, at most [`LISTED_MAX`] of them, each escaped so that the
/// list stays on one line.
pub(super) fn list<'n>(names: impl IntoIterator<Item = &'n str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    let mut out: Vec<String> = names.iter().take(LISTED_MAX).map(|n| n.escape_debug().to_string()).collect();
    if names.len() > LISTED_MAX {
        out.push(format!("and {} more", names.len() - LISTED_MAX));
    }
    out.join(", ")
}

/// "kinds are A, B" or "no kinds are declared": the kinds a text can name.
fn kind_list(schema: &Schema) -> String {
    if schema.kinds.is_empty() {
        "no kinds are declared".to_owned()
    } else {
        format!("kinds are {}", list(schema.kinds.iter().map(|k| k.name.as_str())))
    }
}

/// One item of a text as written, before its names are looked up: what the control grammar
/// and a reader's patterns ([`Patterns`](super::Patterns)) share, its syntax and how its
/// errors name it.
pub(super) struct Token<'a> {
    /// The item as written.
    pub(super) item: &'a str,
    /// Its column: 1-based, in characters.
    pub(super) column: usize,
}

impl<'a> Token<'a> {
    /// The items of `text`: runs of characters other than whitespace and commas.
    pub(super) fn all(text: &'a str) -> Vec<Token<'a>> {
        tokens(text).into_iter().map(|(column, item)| Token { item, column }).collect()
    }

    /// An error about this item.
    pub(super) fn error(&self, message: String) -> SelectError {
        SelectError { item: self.item.to_owned(), column: self.column, message }
    }

    /// `"item" at column N`.
    pub(super) fn at(&self) -> String {
        format!("{} at column {}", quoted(self.item), self.column)
    }

    /// `"part" in "item" at column N`, or `"item" at column N` when the part is the item.
    pub(super) fn part_at(&self, part: &str) -> String {
        if part == self.item { self.at() } else { format!("{} in {}", quoted(part), self.at()) }
    }

    /// Whether the item is a removal, and its body after the `-`: an error when it is too
    /// long to be a name or has nothing after its `-`.
    pub(super) fn sign_and_body(&self) -> Result<(bool, &'a str), SelectError> {
        if self.item.len() > MAX_ITEM_LEN {
            return Err(self.error(format!(
                "{} is {} bytes long, longer than any item can usefully be; names are at most {MAX_NAME_LEN} bytes",
                self.at(),
                self.item.len()
            )));
        }
        let (removal, body) = match self.item.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, self.item),
        };
        if body.is_empty() {
            return Err(self.error(format!(
                "{} removes nothing; write a kind or an event right after the '-', such as \"-Kind\" or \"-Kind:Event\"",
                self.at()
            )));
        }
        Ok((removal, body))
    }

    /// Checks the two sides of `Kind:Event` (split at the first `:`): one `:` only, and a
    /// name or glob on each side.
    pub(super) fn check_sides(&self, removal: bool, kind: &str, event: &str) -> Result<(), SelectError> {
        let sign = if removal { "-" } else { "" };
        if event.contains(':') {
            return Err(self.error(format!("{} has more than one ':'; write one Kind:Event per item", self.at())));
        }
        if kind.is_empty() && event.is_empty() {
            return Err(self.error(format!(
                "{} names neither a kind nor an event; write Kind:Event, such as \"{sign}*:*\" for every event",
                self.at()
            )));
        }
        if kind.is_empty() {
            return Err(self.error(format!(
                "{} names no kind before the ':'; write {} for an event of any kind",
                self.at(),
                quoted(&format!("{sign}*:{event}"))
            )));
        }
        if event.is_empty() {
            return Err(self.error(format!(
                "{} names no event after the ':'; write {} for every event of the kind, or {} for the kind itself",
                self.at(),
                quoted(&format!("{sign}{kind}:*")),
                quoted(&format!("{sign}{kind}"))
            )));
        }
        Ok(())
    }
}

/// Reads one item of a control text against a schema.
struct Reader<'a> {
    schema: &'a Schema,
    /// The item.
    token: Token<'a>,
    /// What suggestions write after their `-`: `"set:"` when the item is read in one set of
    /// several, else empty.
    qual: &'a str,
}

impl<'a> std::ops::Deref for Reader<'a> {
    type Target = Token<'a>;

    fn deref(&self) -> &Token<'a> {
        &self.token
    }
}

impl Reader<'_> {
    fn done(&self, removal: bool, action: Action) -> Result<Item, SelectError> {
        Ok(Item { text: self.item.to_owned(), column: self.column, removal, action })
    }

    fn read(&self) -> Result<Item, SelectError> {
        let (removal, body) = self.sign_and_body()?;
        self.read_body(removal, body)
    }

    /// The item's `body`, after its `-` (`removal`).
    fn read_body(&self, removal: bool, body: &str) -> Result<Item, SelectError> {
        if body.starts_with(|c: char| c.is_ascii_digit()) {
            return self.number(removal, body);
        }
        if let Some(bad) = body.chars().find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '*' | '?' | ':'))) {
            return Err(self.bad_character(bad, body));
        }
        match body {
            "all" if removal => self.done(true, Action::SetKinds(0)),
            "all" => self.done(false, Action::SetKinds(declared_mask(self.schema))),
            "none" if removal => Err(self.error(format!(
                "{}: removing nothing changes nothing; write \"all\" to record every kind, or \"none\" to record none",
                self.at()
            ))),
            "none" => self.done(false, Action::SetKinds(0)),
            _ => match body.split_once(':') {
                Some((kind, event)) => self.kind_event(removal, kind, event),
                None => self.word(removal, body),
            },
        }
    }

    /// A number: the kind mask.
    fn number(&self, removal: bool, body: &str) -> Result<Item, SelectError> {
        let kinds = self.schema.kinds.len();
        if removal {
            return Err(self.error(format!(
                "{}: a mask cannot be removed; write the mask to record, such as {}, or remove kinds by name, such as \"-Kind\"",
                self.at(),
                body
            )));
        }
        let (digits, radix) = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            Some(hex) => (hex, 16),
            None => (body, 10),
        };
        if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
            return Err(self.error(format!(
                "{} is not a number; write a mask in decimal, such as 5, or in hex, such as 0x5 (names cannot start with a digit)",
                self.at()
            )));
        }
        let Ok(mask) = u64::from_str_radix(digits, radix) else {
            return Err(self.error(format!(
                "mask {} is too large for 64 bits; write a mask of at most 0x{:X}",
                self.at(),
                declared_mask(self.schema)
            )));
        };
        let declared = declared_mask(self.schema);
        let beyond = mask & !declared;
        if beyond != 0 {
            let bit = 63 - beyond.leading_zeros();
            let why = match kinds {
                0 => "but no kinds are declared; write 0 or \"none\"".to_owned(),
                1 => format!(
                    "but there is only 1 kind ({}); write a mask of at most 0x1",
                    list(self.schema.kinds.iter().map(|k| k.name.as_str()))
                ),
                n => format!(
                    "but there are only {n} kinds ({}); write a mask of at most 0x{declared:X}",
                    list(self.schema.kinds.iter().map(|k| k.name.as_str()))
                ),
            };
            return Err(self.error(format!("mask {} sets bit {bit}, {why}", self.at())));
        }
        self.done(false, Action::SetKinds(mask))
    }

    fn bad_character(&self, bad: char, body: &str) -> SelectError {
        let help = if bad == '.' && body.matches('.').count() == 1 && !body.contains(':') {
            let prefix = if body.len() < self.item.len() { "-" } else { "" };
            format!(
                " (did you mean {}?); name one event as Kind:Event, with a colon",
                quoted(&format!("{prefix}{}", body.replace('.', ":")))
            )
        } else {
            "; names are ASCII letters, digits and '_', with '*' and '?' as wildcards; separate items with spaces or commas".to_owned()
        };
        self.error(format!("bad character {bad:?} in {}{help}", self.at()))
    }

    /// The error for the name of the built-in kind (`kind`) or of a built-in event.
    fn builtin(&self, name: &str, kind: bool) -> SelectError {
        let what = if kind { "names the runtime's built-in events" } else { "is a built-in event" };
        self.error(format!(
            "{} {what}, which are always recorded and cannot be chosen; leave it out",
            self.part_at(name)
        ))
    }

    /// The kinds that `pattern` matches, by index.
    fn kinds_matching(&self, pattern: &str) -> Vec<usize> {
        self.schema.kinds.iter().enumerate().filter(|(_, k)| name_matches(pattern, &k.name)).map(|(i, _)| i).collect()
    }

    /// `Kind:Event`, either side a glob.
    fn kind_event(&self, removal: bool, kind: &str, event: &str) -> Result<Item, SelectError> {
        self.check_sides(removal, kind, event)?;
        let sign = format!("{}{}", if removal { "-" } else { "" }, self.qual);
        if kind == BUILTIN_KIND {
            return Err(self.builtin(kind, true));
        }
        if !is_glob(event) && builtin::by_name(event).is_some() {
            return Err(self.builtin(event, false));
        }
        let kinds = self.kinds_matching(kind);
        if kinds.is_empty() {
            let names = self.schema.kinds.iter().map(|k| k.name.as_str());
            let kinds = kind_list(self.schema);
            if is_glob(kind) {
                return Err(self.error(format!("{} matches no kind; {kinds}", self.part_at(kind))));
            }
            let help = if let Some(near) = closest(kind, names) {
                format!(" (did you mean {}?)", quoted(&format!("{sign}{near}:{event}")))
            } else if matches!(kind, "all" | "none") {
                format!(" (write {} for an event of any kind)", quoted(&format!("{sign}*:{event}")))
            } else {
                String::new()
            };
            return Err(self.error(format!("unknown kind {}{help}; {kinds}", self.part_at(kind))));
        }
        let in_kinds = |e: &&EventType| kinds.contains(&usize::from(e.kind));
        let codes: Vec<u16> = self
            .schema
            .events
            .iter()
            .filter(in_kinds)
            .filter(|e| name_matches(event, &e.name))
            .map(|e| e.code)
            .collect();
        if !codes.is_empty() {
            return self.done(removal, Action::Events { codes, on: !removal });
        }
        let kind_names = list(kinds.iter().filter_map(|&i| self.schema.kinds.get(i)).map(|k| k.name.as_str()));
        let of = if kinds.len() == 1 {
            format!("of kind {kind_names}")
        } else if kinds.len() == self.schema.kinds.len() {
            "of any kind".to_owned()
        } else {
            format!("of kinds {kind_names}")
        };
        let candidates: Vec<&str> = self.schema.events.iter().filter(in_kinds).map(|e| e.name.as_str()).collect();
        let elsewhere = (!is_glob(event)).then(|| self.schema.event(event)).flatten();
        let help = if let Some(found) = elsewhere {
            let kind_name = self.schema.kinds.get(usize::from(found.kind)).map_or("?", |k| k.name.as_str());
            format!(
                "; {} is of kind {kind_name}: write {}",
                found.name,
                quoted(&format!("{sign}{kind_name}:{}", found.name))
            )
        } else if let Some(near) = (!is_glob(event)).then(|| closest(event, candidates.iter().copied())).flatten() {
            format!(" (did you mean {}?)", quoted(&format!("{sign}{kind}:{near}")))
        } else if candidates.is_empty() {
            if kinds.len() == 1 {
                format!("; kind {kind_names} has no events")
            } else {
                "; those kinds have no events".to_owned()
            }
        } else {
            let whose = match kinds.len() {
                1 => "its",
                _ if kinds.len() == self.schema.kinds.len() => "the",
                _ => "their",
            };
            format!("; {whose} events are {}", list(candidates.iter().copied()))
        };
        Err(self.error(format!("{} matches no event {of}{help}", self.at())))
    }

    /// A word without `:`: kinds first, then events.
    fn word(&self, removal: bool, word: &str) -> Result<Item, SelectError> {
        if word == BUILTIN_KIND {
            return Err(self.builtin(word, true));
        }
        if !is_glob(word) && builtin::by_name(word).is_some() {
            return Err(self.builtin(word, false));
        }
        let kinds = self.kinds_matching(word);
        if !kinds.is_empty() {
            let mask = kinds.iter().fold(0, |mask, &i| mask | kind_bit(i));
            let codes =
                self.schema.events.iter().filter(|e| kinds.contains(&usize::from(e.kind))).map(|e| e.code).collect();
            return self.done(removal, Action::Kinds { mask, on: !removal, codes });
        }
        let codes: Vec<u16> =
            self.schema.events.iter().filter(|e| name_matches(word, &e.name)).map(|e| e.code).collect();
        if !codes.is_empty() {
            return self.done(removal, Action::Events { codes, on: !removal });
        }
        let sign = format!("{}{}", if removal { "-" } else { "" }, self.qual);
        let kinds = kind_list(self.schema);
        if is_glob(word) {
            return Err(self.error(format!("{} matches no kind and no event; {kinds}", self.part_at(word))));
        }
        if let Some(near) = closest(word, self.schema.kinds.iter().map(|k| k.name.as_str())) {
            return Err(self.error(format!(
                "unknown kind {} (did you mean {}?); {kinds}",
                self.part_at(word),
                quoted(&format!("{sign}{near}"))
            )));
        }
        if let Some(near) = closest(word, self.schema.events.iter().map(|e| e.name.as_str())) {
            return Err(self.error(format!(
                "unknown event {} (did you mean {}?)",
                self.part_at(word),
                quoted(&format!("{sign}{near}"))
            )));
        }
        Err(self.error(format!(
            "unknown kind or event {}; {kinds}, and one event is named as Kind:Event",
            self.part_at(word)
        )))
    }
}
