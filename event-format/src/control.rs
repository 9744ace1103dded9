//! The control grammar: which events a program records.
//!
//! One grammar serves the environment variable `EVENT_CONTROL`, read at start-up, and a
//! monitor process that changes a running program's choice (`event-dump control`), in the
//! spirit of the Memory Pool System's `MPS_TELEMETRY_CONTROL`. The state it acts on is a
//! [`Selection`]: a mask of kinds plus per-event overrides.
//!
//! A control text is a list of items separated by whitespace and/or commas:
//!
//! | item | meaning |
//! |---|---|
//! | `5`, `0x5` | the kind mask becomes this number; every override is cleared |
//! | `all`, `none` | every kind, no kind; every override is cleared |
//! | `Pool`, `Po*`, `?ool` | these kinds are recorded; their events' overrides are cleared |
//! | `Pool:PoolInit`, `Pool:*Init`, `*:*Begin` | these events are recorded, whatever their kind |
//! | `PoolInit`, `*Init` | a word that names no kind but names events: as `*:PoolInit` |
//! | `-` before any of these | removes instead: kinds off, events never recorded, `-all` is `none` |
//!
//! In a glob, `*` matches any run of characters and `?` exactly one. Names are
//! case-sensitive. `all` and `none` are keywords wherever they stand alone, even when a kind
//! has that name. Built-in events (kind `Builtin`) are always recorded and cannot be named.
//!
//! Items apply left to right, so the last one wins: `Pool -Pool:PoolInit` records every
//! Pool event but PoolInit, and `-Pool:PoolInit Pool` records every Pool event.
//!
//! [`parse`] resolves a text against a schema into [`Item`]s, which
//! [`Selection::apply`] applies to a current selection (what a monitor does).
//! [`from_env_text`] gives a text its start-up meaning, and [`describe`] writes a selection
//! back as a text that reads back to it.
//!
//! Every error is a [`ControlError`]: one line naming the item, its column and what to write
//! instead. No input makes these functions panic.

use crate::builtin;
use crate::def::closest;
use crate::schema::{BUILTIN_KIND, EventType, MAX_KINDS, MAX_NAME_LEN, Schema};
use std::collections::BTreeMap;
use std::fmt;

/// Which events are recorded: a kind mask plus per-event overrides.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Selection {
    /// Bit i: kind i (in events.def order, `schema.kinds[i]`) is recorded.
    pub kinds: u64,
    /// Per-event overrides by code: `true` records the event whatever its kind's bit says,
    /// `false` never records it. Events without an entry follow their kind.
    pub overrides: BTreeMap<u16, bool>,
}

impl Selection {
    /// Every kind that `schema` declares (the bits below `schema.kinds.len()`), no overrides.
    pub fn all(schema: &Schema) -> Selection {
        Selection { kinds: declared_mask(schema), overrides: BTreeMap::new() }
    }

    /// No kind, no overrides: nothing but the built-in events is recorded.
    pub fn none() -> Selection {
        Selection::default()
    }

    /// Whether `event` is recorded: its override if it has one, else its kind's bit.
    pub fn records(&self, event: &EventType) -> bool {
        match self.overrides.get(&event.code) {
            Some(&on) => on,
            None => self.kinds & kind_bit(usize::from(event.kind)) != 0,
        }
    }

    /// The codes of the events of `schema` that are recorded, in declaration order.
    pub fn enabled_codes<'a>(&'a self, schema: &'a Schema) -> impl Iterator<Item = u16> + 'a {
        schema.events.iter().filter(|e| self.records(e)).map(|e| e.code)
    }

    /// Applies `items`, in order, to this selection (what a monitor does with a control
    /// text: `Pool -Seg` adds Pool and removes Seg, leaving the other kinds as they are).
    pub fn apply(&mut self, items: &[Item]) {
        for item in items {
            match &item.action {
                Action::SetKinds(mask) => {
                    self.kinds = *mask;
                    self.overrides.clear();
                }
                Action::Kinds { mask, on, codes } => {
                    if *on {
                        self.kinds |= mask;
                    } else {
                        self.kinds &= !mask;
                    }
                    for code in codes {
                        self.overrides.remove(code);
                    }
                }
                Action::Events { codes, on } => {
                    for &code in codes {
                        self.overrides.insert(code, *on);
                    }
                }
            }
        }
    }
}

/// One item of a control text, resolved against a schema by [`parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// The item as written, with its `-` if it has one.
    pub text: String,
    /// Its column in the text: the 1-based position of its first character, counted in
    /// characters from the start of the text.
    pub column: usize,
    /// Whether it was written with a `-` (a removal). At start-up, a text whose first item
    /// is a removal starts from every kind ([`from_env_text`]).
    pub removal: bool,
    /// What it does to a [`Selection`].
    pub action: Action,
}

/// What an [`Item`] does to a [`Selection`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
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
/// Its [`Display`](fmt::Display) is [`message`](ControlError::message), one line that names
/// the item and its column, for example
/// `unknown kind "Pol" at column 6 (did you mean "Pool"?); kinds are Arena, Pool`.
/// Callers prefix where the text came from: `EVENT_CONTROL: ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlError {
    /// The offending item as written (empty when the text chooses nothing).
    pub item: String,
    /// The item's column: the 1-based position of its first character in the text, counted
    /// in characters (1 when the text chooses nothing).
    pub column: usize,
    /// What is wrong and what to write instead, on one line.
    pub message: String,
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ControlError {}

/// Reads a control text: its items, resolved against `schema` (names to kind bits and
/// event codes), to be applied to a selection with [`Selection::apply`].
///
/// The first wrong item is an error; so is a text with no items, and a name or glob that
/// matches nothing.
///
/// ```
/// use event_format::control::{self, Selection};
///
/// let schema = event_format::testing::sample_schema();
/// let mut selection = Selection::all(&schema);
/// selection.apply(&control::parse("-Arena, Arena:Poll", &schema).unwrap());
/// assert_eq!(control::describe(&selection, &schema), "Pool Arena:Poll");
/// ```
pub fn parse(text: &str, schema: &Schema) -> Result<Vec<Item>, ControlError> {
    let tokens = tokens(text);
    if tokens.is_empty() {
        return Err(ControlError {
            item: String::new(),
            column: 1,
            message: format!(
                "nothing chosen at column 1: the text has no items; write \"all\", \"none\", kind names ({}) or Kind:Event",
                kind_list(schema)
            ),
        });
    }
    tokens.into_iter().map(|(column, text)| Reader { schema, item: text, column }.read()).collect()
}

/// Gives a control text its start-up meaning (`EVENT_CONTROL`): when the first item is a
/// removal (`-X`), the text starts from every kind ([`Selection::all`]), otherwise from
/// nothing ([`Selection::none`]); then its items apply in order.
///
/// So `Pool Arena` records only those kinds, `-Seg` everything but Seg, `none Pool:PoolInit`
/// only PoolInit, and `all -Pool:PoolInit` everything but PoolInit.
///
/// ```
/// use event_format::control;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let schema = event_format::testing::sample_schema();
/// let init = schema.event("PoolInit").unwrap();
/// let create = schema.event("ArenaCreate").unwrap();
///
/// let pools = control::from_env_text("Pool", &schema)?;
/// assert!(pools.records(init) && !pools.records(create));
///
/// let all_but_init = control::from_env_text("-Pool:PoolInit", &schema)?;
/// assert!(!all_but_init.records(init) && all_but_init.records(create));
/// assert_eq!(control::describe(&all_but_init, &schema), "all -Pool:PoolInit");
///
/// let error = control::from_env_text("Arena Pol", &schema).unwrap_err();
/// assert_eq!(
///     format!("EVENT_CONTROL: {error}"),
///     "EVENT_CONTROL: unknown kind \"Pol\" at column 7 (did you mean \"Pool\"?); kinds are Arena, Pool"
/// );
/// assert_eq!((error.item.as_str(), error.column), ("Pol", 7));
/// # Ok(()) }
/// ```
pub fn from_env_text(text: &str, schema: &Schema) -> Result<Selection, ControlError> {
    let items = parse(text, schema)?;
    let mut selection = match items.first() {
        Some(item) if item.removal => Selection::all(schema),
        _ => Selection::none(),
    };
    selection.apply(&items);
    Ok(selection)
}

/// A short text of `selection` in the control grammar, which [`from_env_text`] reads back
/// to the same selection: `all` or `none`, or the recorded kinds' names, then each override
/// as `Kind:Event` or `-Kind:Event`, e.g. `Arena Pool -Pool:PoolInit Seg:SegSplit`.
///
/// Only what `schema` declares is written: kind bits beyond its kinds and overrides of codes
/// it has no event for are left out. When a recorded kind is named `all` or `none`, the
/// kinds are written as a hex mask (`0x5`) instead of names.
///
/// ```
/// use event_format::control::{self, Selection};
///
/// let schema = event_format::testing::sample_schema();
/// assert_eq!(control::describe(&Selection::none(), &schema), "none");
/// assert_eq!(control::describe(&Selection::all(&schema), &schema), "all");
/// let mut selection = Selection { kinds: 0b10, ..Selection::none() };
/// selection.overrides.insert(0x0004, true);
/// assert_eq!(control::describe(&selection, &schema), "Pool Arena:Poll");
/// ```
pub fn describe(selection: &Selection, schema: &Schema) -> String {
    let declared = declared_mask(schema);
    let kinds = selection.kinds & declared;
    let mut words: Vec<String> = Vec::new();
    if kinds == 0 {
        words.push("none".to_owned());
    } else if kinds == declared {
        words.push("all".to_owned());
    } else {
        let names: Vec<&str> = schema
            .kinds
            .iter()
            .enumerate()
            .filter(|&(i, _)| kinds & kind_bit(i) != 0)
            .map(|(_, k)| k.name.as_str())
            .collect();
        if names.iter().any(|n| matches!(*n, "all" | "none")) {
            words.push(format!("0x{kinds:X}"));
        } else {
            words.extend(names.into_iter().map(str::to_owned));
        }
    }
    let mut overrides = selection.overrides.clone();
    for event in &schema.events {
        let Some(kind) = schema.kinds.get(usize::from(event.kind)) else { continue };
        // `remove`, so that an event set with a code twice (which no checked schema has)
        // describes each override once.
        if let Some(on) = overrides.remove(&event.code) {
            let sign = if on { "" } else { "-" };
            words.push(format!("{sign}{}:{}", kind.name, event.name));
        }
    }
    words.join(" ")
}

/// The longest item read, in bytes: two names of [`MAX_NAME_LEN`] bytes, a `:` and a `-`,
/// and room for globs. Longer items are refused before any matching is done.
const MAX_ITEM_LEN: usize = 4 * MAX_NAME_LEN;

/// The longest piece of user text a message repeats, in characters.
const SHOWN_MAX: usize = 40;

/// At most this many names are listed in a message.
const LISTED_MAX: usize = 16;

/// The bits of the kinds `schema` declares.
fn declared_mask(schema: &Schema) -> u64 {
    match schema.kinds.len() {
        n if n >= MAX_KINDS => u64::MAX,
        n => (1u64 << n) - 1,
    }
}

/// The control-mask bit of kind `index`; 0 for an index no mask can hold.
fn kind_bit(index: usize) -> u64 {
    u32::try_from(index).ok().and_then(|i| 1u64.checked_shl(i)).unwrap_or(0)
}

/// The items of `text` with their 1-based columns (in characters): runs of characters
/// other than whitespace and commas.
fn tokens(text: &str) -> Vec<(usize, &str)> {
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
fn quoted(text: &str) -> String {
    match text.char_indices().nth(SHOWN_MAX) {
        Some((cut, _)) => format!("{:?}...", &text[..cut]),
        None => format!("{text:?}"),
    }
}

/// `names` separated by commas, at most [`LISTED_MAX`] of them, each escaped so that the
/// list stays on one line.
fn list<'n>(names: impl IntoIterator<Item = &'n str>) -> String {
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

/// Whether `text` is a glob rather than a plain name.
fn is_glob(text: &str) -> bool {
    text.contains(['*', '?'])
}

/// Whether `name` matches `pattern`: `*` matches any run of bytes, `?` exactly one, anything
/// else itself. Patterns are ASCII (the reader refuses other characters), so bytes suffice.
/// Iterative, in time proportional to the product of the lengths at worst.
fn glob_matches(pattern: &str, name: &str) -> bool {
    let (p, s) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut si) = (0, 0);
    // The last `*` seen, and the position in `name` its run now ends at.
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) && p[pi] != b'*' {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&b| b == b'*')
}

/// Whether `name` is matched by `pattern`, a plain name or a glob.
fn name_matches(pattern: &str, name: &str) -> bool {
    if is_glob(pattern) { glob_matches(pattern, name) } else { pattern == name }
}

/// Reads one item.
struct Reader<'a> {
    schema: &'a Schema,
    /// The item as written.
    item: &'a str,
    /// Its column.
    column: usize,
}

impl Reader<'_> {
    /// An error about this item.
    fn error(&self, message: String) -> ControlError {
        ControlError { item: self.item.to_owned(), column: self.column, message }
    }

    /// `"item" at column N`.
    fn at(&self) -> String {
        format!("{} at column {}", quoted(self.item), self.column)
    }

    /// `"part" in "item" at column N`, or `"item" at column N` when the part is the item.
    fn part_at(&self, part: &str) -> String {
        if part == self.item { self.at() } else { format!("{} in {}", quoted(part), self.at()) }
    }

    fn done(&self, removal: bool, action: Action) -> Result<Item, ControlError> {
        Ok(Item { text: self.item.to_owned(), column: self.column, removal, action })
    }

    fn read(&self) -> Result<Item, ControlError> {
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
    fn number(&self, removal: bool, body: &str) -> Result<Item, ControlError> {
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

    fn bad_character(&self, bad: char, body: &str) -> ControlError {
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
    fn builtin(&self, name: &str, kind: bool) -> ControlError {
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
    fn kind_event(&self, removal: bool, kind: &str, event: &str) -> Result<Item, ControlError> {
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
    fn word(&self, removal: bool, word: &str) -> Result<Item, ControlError> {
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
        let sign = if removal { "-" } else { "" };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Kind;
    use proptest::prelude::*;

    /// The workspace's event set, cut down, with a kind that has no events.
    const DEF: &str = r#"VERSION(1, 0, 0)
KIND(Arena,  "arena")
KIND(Pool,   "pools")
KIND(Seg,    "segments")
KIND(Object, "objects")
KIND(Sweep,  "reclamation")
KIND(Client, "annotations")
KIND(Empty,  "no events")
RELATION(ArenaCreate,  0x0001, TRUE,  Arena,  PAW, arena, base, size)
RELATION(ArenaPoll,    0x0004, FALSE, Arena,  PWD, arena, committed, load)
RELATION(PoolInit,     0x0010, TRUE,  Pool,   PPSU, pool, arena, class, align)
RELATION(PoolFinish,   0x0011, TRUE,  Pool,   PW, pool, live)
RELATION(PoolStats,    0x0012, TRUE,  Pool,   PWWWD, pool, allocated, freed, live, fragmentation)
RELATION(SegAlloc,     0x0020, TRUE,  Seg,    PPAW, seg, pool, base, size)
RELATION(SegSplit,     0x0022, FALSE, Seg,    PPPA, seg, first, second, at)
RELATION(ObjectAlloc,  0x0030, FALSE, Object, PAWU, pool, addr, size, class)
RELATION(SweepBegin,   0x0040, TRUE,  Sweep,  PWS, pool, epoch, why)
RELATION(SweepEnd,     0x0044, TRUE,  Sweep,  PWB, pool, epoch, complete)
RELATION(ClientPhase,  0x0050, TRUE,  Client, SWI, phase, step, delta)
"#;

    const ARENA: u64 = 1;
    const POOL: u64 = 2;
    const SEG: u64 = 4;
    const OBJECT: u64 = 8;
    const SWEEP: u64 = 16;
    const CLIENT: u64 = 32;
    const EMPTY: u64 = 64;
    const ALL: u64 = 127;

    fn schema() -> Schema {
        crate::def::parse(DEF, "test.def").unwrap()
    }

    fn env(text: &str) -> Selection {
        match from_env_text(text, &schema()) {
            Ok(selection) => selection,
            Err(e) => panic!("{text:?}: {e}"),
        }
    }

    fn error(text: &str) -> ControlError {
        match from_env_text(text, &schema()) {
            Ok(selection) => panic!("{text:?} was read as {selection:?}"),
            Err(e) => {
                assert_eq!(e.to_string(), e.message);
                e
            }
        }
    }

    fn message(text: &str) -> String {
        error(text).message
    }

    fn sel(kinds: u64, overrides: &[(u16, bool)]) -> Selection {
        Selection { kinds, overrides: overrides.iter().copied().collect() }
    }

    fn names(selection: &Selection) -> Vec<String> {
        let schema = schema();
        selection.enabled_codes(&schema).map(|c| schema.event_by_code(c).unwrap().name.clone()).collect()
    }

    mod selection {
        use super::*;

        #[test]
        fn all_and_none() {
            assert_eq!(Selection::all(&schema()), sel(ALL, &[]));
            assert_eq!(Selection::none(), sel(0, &[]));
            assert_eq!(Selection::all(&Schema::default()), sel(0, &[]));
            let many = Schema {
                kinds: (0..64).map(|i| Kind { name: format!("K{i}"), doc: String::new() }).collect(),
                ..Schema::default()
            };
            assert_eq!(Selection::all(&many).kinds, u64::MAX);
        }

        #[test]
        fn records_follows_overrides_then_kinds() {
            let schema = schema();
            let init = schema.event("PoolInit").unwrap();
            let stats = schema.event("PoolStats").unwrap();
            let seg = schema.event("SegAlloc").unwrap();
            let s = sel(POOL, &[(0x0010, false), (0x0020, true)]);
            assert!(!s.records(init));
            assert!(s.records(stats));
            assert!(s.records(seg));
            assert_eq!(names(&s), ["PoolFinish", "PoolStats", "SegAlloc"]);
            assert_eq!(names(&Selection::none()), Vec::<String>::new());
            assert_eq!(Selection::all(&schema).enabled_codes(&schema).count(), schema.events.len());
        }

        #[test]
        fn records_survives_a_kind_index_beyond_the_mask() {
            let mut event = schema().events[0].clone();
            event.kind = 200;
            assert!(!Selection { kinds: u64::MAX, ..Selection::none() }.records(&event));
        }

        #[test]
        fn apply_changes_the_current_selection() {
            let schema = schema();
            let mut s = sel(SEG | ARENA, &[(0x0020, false)]);
            s.apply(&parse("Pool -Seg", &schema).unwrap());
            assert_eq!(s, sel(ARENA | POOL, &[]));
            s.apply(&parse("-Pool:PoolInit, Sweep:SweepEnd", &schema).unwrap());
            assert_eq!(s, sel(ARENA | POOL, &[(0x0010, false), (0x0044, true)]));
            s.apply(&parse("Client", &schema).unwrap());
            assert_eq!(s, sel(ARENA | POOL | CLIENT, &[(0x0010, false), (0x0044, true)]));
            s.apply(&parse("-all", &schema).unwrap());
            assert_eq!(s, Selection::none());
            // A monitor's text that starts with a removal removes from the current state.
            let mut s = sel(POOL | SEG, &[]);
            s.apply(&parse("-Seg", &schema).unwrap());
            assert_eq!(s, sel(POOL, &[]));
        }
    }

    mod items {
        use super::*;

        #[test]
        fn items_carry_text_column_and_action() {
            let items = parse(" Pool,\t-Seg:SegSplit  0x3", &schema()).unwrap();
            assert_eq!(
                items,
                [
                    Item {
                        text: "Pool".into(),
                        column: 2,
                        removal: false,
                        action: Action::Kinds { mask: POOL, on: true, codes: vec![0x10, 0x11, 0x12] },
                    },
                    Item {
                        text: "-Seg:SegSplit".into(),
                        column: 8,
                        removal: true,
                        action: Action::Events { codes: vec![0x22], on: false },
                    },
                    Item { text: "0x3".into(), column: 23, removal: false, action: Action::SetKinds(3) },
                ]
            );
        }

        #[test]
        fn separators_are_whitespace_and_commas() {
            assert_eq!(env("Pool,Seg"), sel(POOL | SEG, &[]));
            assert_eq!(env(",, Pool ,\n Seg,\r\n"), sel(POOL | SEG, &[]));
            assert_eq!(env("Pool\u{2003}Seg"), sel(POOL | SEG, &[]));
        }

        #[test]
        fn numbers_set_the_mask_and_clear_overrides() {
            assert_eq!(env("5"), sel(ARENA | SEG, &[]));
            assert_eq!(env("0x5"), sel(ARENA | SEG, &[]));
            assert_eq!(env("0X7f"), sel(ALL, &[]));
            assert_eq!(env("0"), sel(0, &[]));
            assert_eq!(env("007"), sel(ARENA | POOL | SEG, &[]));
            assert_eq!(env("Pool:PoolInit -Seg:SegAlloc 2"), sel(POOL, &[]));
        }

        #[test]
        fn all_and_none_clear_overrides() {
            assert_eq!(env("all"), sel(ALL, &[]));
            assert_eq!(env("none"), sel(0, &[]));
            assert_eq!(env("-all"), sel(0, &[]));
            assert_eq!(env("Pool:PoolInit all"), sel(ALL, &[]));
            assert_eq!(env("all -Pool:PoolInit none"), sel(0, &[]));
            assert_eq!(env("Pool -all Seg"), sel(SEG, &[]));
        }

        #[test]
        fn kinds_and_their_globs() {
            assert_eq!(env("Pool"), sel(POOL, &[]));
            assert_eq!(env("Pool Arena"), sel(POOL | ARENA, &[]));
            assert_eq!(env("Po*"), sel(POOL, &[]));
            assert_eq!(env("?ool"), sel(POOL, &[]));
            assert_eq!(env("S*"), sel(SEG | SWEEP, &[]));
            assert_eq!(env("*e*"), sel(SEG | OBJECT | SWEEP | CLIENT | ARENA, &[]));
            assert_eq!(env("*"), sel(ALL, &[]));
            assert_eq!(env("Empty"), sel(EMPTY, &[]));
            assert_eq!(env("Pool Pool"), sel(POOL, &[]));
        }

        #[test]
        fn kinds_clear_their_events_overrides_only() {
            assert_eq!(env("none Pool:PoolInit Seg:SegAlloc Pool"), sel(POOL, &[(0x20, true)]));
            assert_eq!(env("-Pool:PoolInit -Seg:SegAlloc Pool"), sel(ALL, &[(0x20, false)]));
            assert_eq!(env("-Pool:PoolInit -Seg:SegAlloc -Pool"), sel(ALL & !POOL, &[(0x20, false)]));
        }

        #[test]
        fn kind_event_pairs_and_their_globs() {
            assert_eq!(env("Pool:PoolInit"), sel(0, &[(0x10, true)]));
            assert_eq!(env("Pool:*Init"), sel(0, &[(0x10, true)]));
            assert_eq!(env("Pool:Pool*"), sel(0, &[(0x10, true), (0x11, true), (0x12, true)]));
            assert_eq!(env("*:*Begin"), sel(0, &[(0x40, true)]));
            assert_eq!(env("S*:*e*"), sel(0, &[(0x20, true), (0x22, true), (0x40, true), (0x44, true)]));
            assert_eq!(env("Sweep:Sweep???"), sel(0, &[(0x44, true)]));
            assert_eq!(env("*:*"), sel(0, &schema().events.iter().map(|e| (e.code, true)).collect::<Vec<_>>()));
        }

        #[test]
        fn bare_event_names_mean_any_kind() {
            assert_eq!(env("PoolInit"), sel(0, &[(0x10, true)]));
            assert_eq!(env("*Init"), sel(0, &[(0x10, true)]));
            assert_eq!(env("*Alloc"), sel(0, &[(0x20, true), (0x30, true)]));
            assert_eq!(env("Pool -PoolInit"), sel(POOL, &[(0x10, false)]));
            // A word that matches a kind is a kind, even when it would match events too.
            assert_eq!(env("Pool*"), sel(POOL, &[]));
        }

        #[test]
        fn removals() {
            assert_eq!(env("all -Pool"), sel(ALL & !POOL, &[]));
            assert_eq!(env("all -S*"), sel(ALL & !(SEG | SWEEP), &[]));
            assert_eq!(env("all -Pool:PoolInit"), sel(ALL, &[(0x10, false)]));
            assert_eq!(env("all -*:Sweep*"), sel(ALL, &[(0x40, false), (0x44, false)]));
            assert_eq!(env("all -SegSplit"), sel(ALL, &[(0x22, false)]));
        }

        #[test]
        fn the_last_item_wins() {
            assert_eq!(names(&env("Pool -Pool:PoolInit")), ["PoolFinish", "PoolStats"]);
            assert_eq!(names(&env("-Pool:PoolInit Pool")).len(), schema().events.len());
            assert_eq!(env("Pool:PoolInit -Pool:PoolInit"), sel(0, &[(0x10, false)]));
            assert_eq!(env("Pool -Pool"), sel(0, &[]));
        }

        #[test]
        fn start_rules() {
            // The brief's four examples.
            assert_eq!(env("Pool Arena"), sel(POOL | ARENA, &[]));
            assert_eq!(env("-Seg"), sel(ALL & !SEG, &[]));
            assert_eq!(env("none Pool:PoolInit"), sel(0, &[(0x10, true)]));
            assert_eq!(env("all -Pool:PoolInit"), sel(ALL, &[(0x10, false)]));
            assert_eq!(names(&env("none Pool:PoolInit")), ["PoolInit"]);
            // Only the first item decides where to start.
            assert_eq!(env("-Seg -Pool"), sel(ALL & !(SEG | POOL), &[]));
            assert_eq!(env("Pool -Seg"), sel(POOL, &[]));
            assert_eq!(env("-Pool:PoolInit"), sel(ALL, &[(0x10, false)]));
            assert_eq!(env("-PoolInit"), sel(ALL, &[(0x10, false)]));
        }
    }

    mod errors {
        use super::*;

        #[test]
        fn nothing_chosen() {
            for text in ["", "   ", ",, ,\t\n"] {
                let e = error(text);
                assert_eq!((e.item.as_str(), e.column), ("", 1));
                assert_eq!(
                    e.message,
                    "nothing chosen at column 1: the text has no items; write \"all\", \"none\", kind names (kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty) or Kind:Event"
                );
            }
            assert!(parse("", &schema()).is_err());
        }

        #[test]
        fn unknown_kinds() {
            let e = error("Arena Pol");
            assert_eq!((e.item.as_str(), e.column), ("Pol", 7));
            assert_eq!(
                e.message,
                "unknown kind \"Pol\" at column 7 (did you mean \"Pool\"?); kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
            );
            assert_eq!(
                message("-pool"),
                "unknown kind \"pool\" in \"-pool\" at column 1 (did you mean \"-Pool\"?); kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
            );
            assert_eq!(
                message("Nothing"),
                "unknown kind or event \"Nothing\" at column 1; kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty, and one event is named as Kind:Event"
            );
            assert_eq!(
                message("Pol:PoolInit"),
                "unknown kind \"Pol\" in \"Pol:PoolInit\" at column 1 (did you mean \"Pool:PoolInit\"?); kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
            );
            assert_eq!(
                message("all:PoolInit"),
                "unknown kind \"all\" in \"all:PoolInit\" at column 1 (write \"*:PoolInit\" for an event of any kind); kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
            );
            assert_eq!(
                from_env_text("Arena", &Schema::default()).unwrap_err().message,
                "unknown kind or event \"Arena\" at column 1; no kinds are declared, and one event is named as Kind:Event"
            );
        }

        #[test]
        fn unknown_events() {
            assert_eq!(message("PolInit"), "unknown event \"PolInit\" at column 1 (did you mean \"PoolInit\"?)");
            assert_eq!(
                message("Pool:Nope"),
                "\"Pool:Nope\" at column 1 matches no event of kind Pool; its events are PoolInit, PoolFinish, PoolStats"
            );
            assert_eq!(
                message("Pool:PoolInt"),
                "\"Pool:PoolInt\" at column 1 matches no event of kind Pool (did you mean \"Pool:PoolInit\"?)"
            );
            assert_eq!(
                message("all -Pool:Poolinit"),
                "\"-Pool:Poolinit\" at column 5 matches no event of kind Pool (did you mean \"-Pool:PoolInit\"?)"
            );
            assert_eq!(
                message("Seg:PoolInit"),
                "\"Seg:PoolInit\" at column 1 matches no event of kind Seg; PoolInit is of kind Pool: write \"Pool:PoolInit\""
            );
            assert_eq!(
                message("Empty:Anything"),
                "\"Empty:Anything\" at column 1 matches no event of kind Empty; kind Empty has no events"
            );
            assert_eq!(
                message("*:Nope"),
                "\"*:Nope\" at column 1 matches no event of any kind; the events are ArenaCreate, ArenaPoll, PoolInit, PoolFinish, PoolStats, SegAlloc, SegSplit, ObjectAlloc, SweepBegin, SweepEnd, ClientPhase"
            );
            assert_eq!(
                message("S*:PoolInt"),
                "\"S*:PoolInt\" at column 1 matches no event of kinds Seg, Sweep; their events are SegAlloc, SegSplit, SweepBegin, SweepEnd"
            );
        }

        #[test]
        fn globs_that_match_nothing() {
            assert_eq!(
                message("Q*"),
                "\"Q*\" at column 1 matches no kind and no event; kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
            );
            assert_eq!(
                message("-?"),
                "\"?\" in \"-?\" at column 1 matches no kind and no event; kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
            );
            assert_eq!(
                message("Q*:*"),
                "\"Q*\" in \"Q*:*\" at column 1 matches no kind; kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty"
            );
            assert_eq!(
                message("Pool:*Begin"),
                "\"Pool:*Begin\" at column 1 matches no event of kind Pool; its events are PoolInit, PoolFinish, PoolStats"
            );
            assert_eq!(
                message("E*:*"),
                "\"E*:*\" at column 1 matches no event of kind Empty; kind Empty has no events"
            );
        }

        #[test]
        fn numbers() {
            assert_eq!(
                message("0x80"),
                "mask \"0x80\" at column 1 sets bit 7, but there are only 7 kinds (Arena, Pool, Seg, Object, Sweep, Client, Empty); write a mask of at most 0x7F"
            );
            assert_eq!(
                message("Pool 0xFFFFFFFFFFFFFFFF"),
                "mask \"0xFFFFFFFFFFFFFFFF\" at column 6 sets bit 63, but there are only 7 kinds (Arena, Pool, Seg, Object, Sweep, Client, Empty); write a mask of at most 0x7F"
            );
            assert_eq!(
                message("0x10000000000000000"),
                "mask \"0x10000000000000000\" at column 1 is too large for 64 bits; write a mask of at most 0x7F"
            );
            assert_eq!(
                message("12a"),
                "\"12a\" at column 1 is not a number; write a mask in decimal, such as 5, or in hex, such as 0x5 (names cannot start with a digit)"
            );
            assert!(message("0x").contains("\"0x\" at column 1 is not a number"));
            assert!(message("0x1g").contains("is not a number"));
            assert!(message("1*").contains("is not a number"));
            assert_eq!(
                message("-5"),
                "\"-5\" at column 1: a mask cannot be removed; write the mask to record, such as 5, or remove kinds by name, such as \"-Kind\""
            );
            let one = crate::def::parse("VERSION(1, 0, 0)\nKIND(Arena)\n", "one.def").unwrap();
            assert_eq!(
                from_env_text("2", &one).unwrap_err().message,
                "mask \"2\" at column 1 sets bit 1, but there is only 1 kind (Arena); write a mask of at most 0x1"
            );
            assert_eq!(
                from_env_text("1", &Schema::default()).unwrap_err().message,
                "mask \"1\" at column 1 sets bit 0, but no kinds are declared; write 0 or \"none\""
            );
            assert_eq!(from_env_text("0", &Schema::default()), Ok(Selection::none()));
        }

        #[test]
        fn removals() {
            assert_eq!(
                message("Pool -none"),
                "\"-none\" at column 6: removing nothing changes nothing; write \"all\" to record every kind, or \"none\" to record none"
            );
            assert_eq!(
                message("Pool - Seg"),
                "\"-\" at column 6 removes nothing; write a kind or an event right after the '-', such as \"-Kind\" or \"-Kind:Event\""
            );
            assert_eq!(
                message("--Pool"),
                "bad character '-' in \"--Pool\" at column 1; names are ASCII letters, digits and '_', with '*' and '?' as wildcards; separate items with spaces or commas"
            );
        }

        #[test]
        fn builtin_events_are_not_controllable() {
            let help = "which are always recorded and cannot be chosen; leave it out";
            assert_eq!(
                message("Builtin"),
                format!("\"Builtin\" at column 1 names the runtime's built-in events, {help}")
            );
            assert_eq!(
                message("all -Builtin"),
                format!("\"Builtin\" in \"-Builtin\" at column 5 names the runtime's built-in events, {help}")
            );
            assert_eq!(
                message("Builtin:Intern"),
                format!("\"Builtin\" in \"Builtin:Intern\" at column 1 names the runtime's built-in events, {help}")
            );
            assert_eq!(
                message("Builtin:*"),
                format!("\"Builtin\" in \"Builtin:*\" at column 1 names the runtime's built-in events, {help}")
            );
            assert_eq!(
                message("-Dropped"),
                format!("\"Dropped\" in \"-Dropped\" at column 1 is a built-in event, {help}")
            );
            assert_eq!(
                message("*:Message"),
                format!("\"Message\" in \"*:Message\" at column 1 is a built-in event, {help}")
            );
        }

        #[test]
        fn malformed_items() {
            assert_eq!(
                message("Pool:PoolInit:x"),
                "\"Pool:PoolInit:x\" at column 1 has more than one ':'; write one Kind:Event per item"
            );
            assert_eq!(
                message("-:"),
                "\"-:\" at column 1 names neither a kind nor an event; write Kind:Event, such as \"-*:*\" for every event"
            );
            assert_eq!(
                message(":PoolInit"),
                "\":PoolInit\" at column 1 names no kind before the ':'; write \"*:PoolInit\" for an event of any kind"
            );
            assert_eq!(
                message("-Pool:"),
                "\"-Pool:\" at column 1 names no event after the ':'; write \"-Pool:*\" for every event of the kind, or \"-Pool\" for the kind itself"
            );
            assert_eq!(
                message("Pool.PoolInit"),
                "bad character '.' in \"Pool.PoolInit\" at column 1 (did you mean \"Pool:PoolInit\"?); name one event as Kind:Event, with a colon"
            );
            assert_eq!(
                message("-Pool.PoolInit"),
                "bad character '.' in \"-Pool.PoolInit\" at column 1 (did you mean \"-Pool:PoolInit\"?); name one event as Kind:Event, with a colon"
            );
            assert_eq!(
                message("Pool;Seg"),
                "bad character ';' in \"Pool;Seg\" at column 1; names are ASCII letters, digits and '_', with '*' and '?' as wildcards; separate items with spaces or commas"
            );
            assert_eq!(
                message("Pool Pöol"),
                "bad character 'ö' in \"Pöol\" at column 6; names are ASCII letters, digits and '_', with '*' and '?' as wildcards; separate items with spaces or commas"
            );
            // Control characters are escaped: the message stays on one line.
            assert_eq!(
                message("a\u{7}b"),
                "bad character '\\u{7}' in \"a\\u{7}b\" at column 1; names are ASCII letters, digits and '_', with '*' and '?' as wildcards; separate items with spaces or commas"
            );
        }

        #[test]
        fn long_items_are_cut_in_messages() {
            let long = "x".repeat(300);
            let e = error(&format!("Pool {long}"));
            assert_eq!((e.item.as_str(), e.column), (long.as_str(), 6));
            assert_eq!(
                e.message,
                format!(
                    "unknown kind or event {:?}... at column 6; kinds are Arena, Pool, Seg, Object, Sweep, Client, Empty, and one event is named as Kind:Event",
                    "x".repeat(40)
                )
            );
            let huge = "*".repeat(MAX_ITEM_LEN + 1);
            assert_eq!(
                message(&huge),
                format!(
                    "{:?}... at column 1 is {} bytes long, longer than any item can usefully be; names are at most 255 bytes",
                    "*".repeat(40),
                    MAX_ITEM_LEN + 1
                )
            );
        }

        #[test]
        fn columns_count_characters() {
            let e = error("é, ü Pol");
            // 'é' is column 1, but it is a bad character; the first bad item is reported.
            assert_eq!(e.column, 1);
            let e = error("Pool\u{3000}\u{3000}Pol");
            assert_eq!((e.item.as_str(), e.column), ("Pol", 7));
        }

        #[test]
        fn long_lists_are_cut() {
            let mut def = String::from("VERSION(1, 0, 0)\n");
            for i in 0..20 {
                def.push_str(&format!("KIND(K{i})\n"));
            }
            let many = crate::def::parse(&def, "many.def").unwrap();
            assert_eq!(
                from_env_text("Nope", &many).unwrap_err().message,
                "unknown kind or event \"Nope\" at column 1; kinds are K0, K1, K2, K3, K4, K5, K6, K7, K8, K9, K10, K11, K12, K13, K14, K15, and 4 more, and one event is named as Kind:Event"
            );
        }

        #[test]
        fn error_is_an_error() {
            let e: Box<dyn std::error::Error> = Box::new(error("Pol"));
            assert!(e.to_string().starts_with("unknown kind \"Pol\""));
        }
    }

    mod globs {
        use super::*;

        #[test]
        fn matching() {
            for (pattern, name, expected) in [
                ("*", "", true),
                ("*", "Pool", true),
                ("", "", true),
                ("", "a", false),
                ("?", "", false),
                ("?", "a", true),
                ("??", "a", false),
                ("Po*", "Pool", true),
                ("Po*", "Po", true),
                ("Po*", "Arena", false),
                ("*ol", "Pool", true),
                ("*ol", "Poll", false),
                ("P*l", "Pool", true),
                ("P*l", "Pl", true),
                ("P*l*", "PoolInit", true),
                ("*Init", "PoolInit", true),
                ("*Init", "PoolInitX", false),
                ("*a*b*c", "xaxbxc", true),
                ("*a*b*c", "xaxbxcx", false),
                ("a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false),
                ("**", "x", true),
                ("?*?", "ab", true),
                ("?*?", "a", false),
                ("pool", "Pool", false),
            ] {
                assert_eq!(glob_matches(pattern, name), expected, "{pattern:?} vs {name:?}");
            }
        }
    }

    mod describing {
        use super::*;

        #[test]
        fn texts() {
            let schema = schema();
            let d = |s: &Selection| describe(s, &schema);
            assert_eq!(d(&Selection::none()), "none");
            assert_eq!(d(&Selection::all(&schema)), "all");
            assert_eq!(d(&sel(u64::MAX, &[])), "all");
            assert_eq!(d(&sel(POOL | ARENA, &[])), "Arena Pool");
            assert_eq!(d(&sel(ARENA | POOL, &[(0x10, false), (0x22, true)])), "Arena Pool -Pool:PoolInit Seg:SegSplit");
            assert_eq!(d(&sel(0, &[(0x10, true)])), "none Pool:PoolInit");
            assert_eq!(d(&sel(0, &[(0x10, false)])), "none -Pool:PoolInit");
            assert_eq!(d(&sel(ALL, &[(0x10, false)])), "all -Pool:PoolInit");
            // What the schema does not declare is left out.
            assert_eq!(d(&sel(POOL | 1 << 40, &[(0x0999, true)])), "Pool");
        }

        #[test]
        fn kinds_named_like_keywords_are_written_as_a_mask() {
            let schema = crate::def::parse(
                "VERSION(1, 0, 0)\nKIND(all)\nKIND(none)\nKIND(Pool)\nRELATION(PoolInit, 1, TRUE, Pool, 0)\n",
                "keywords.def",
            )
            .unwrap();
            let s = sel(0b101, &[(1, false)]);
            let text = describe(&s, &schema);
            assert_eq!(text, "0x5 -Pool:PoolInit");
            assert_eq!(from_env_text(&text, &schema), Ok(s));
            assert_eq!(describe(&sel(0b100, &[]), &schema), "Pool");
            // The keywords win over the kinds' names.
            assert_eq!(from_env_text("all", &schema), Ok(sel(0b111, &[])));
            assert_eq!(from_env_text("al?", &schema), Ok(sel(0b001, &[])));
        }
    }

    /// The schemas the properties are checked on.
    fn schemas() -> Vec<Schema> {
        let many = (0..64).map(|i| format!("KIND(K{i})\n")).collect::<String>();
        let many_events = (0..64).map(|i| format!("RELATION(E{i}, {}, TRUE, K{i}, 0)\n", i + 1)).collect::<String>();
        vec![
            schema(),
            crate::testing::sample_schema(),
            crate::def::parse("VERSION(1, 0, 0)\n", "empty.def").unwrap(),
            crate::def::parse(
                "VERSION(1, 0, 0)\nKIND(all)\nKIND(none)\nKIND(Pool)\nRELATION(PoolInit, 1, TRUE, Pool, 0)\nRELATION(All, 2, TRUE, all, 0)\n",
                "keywords.def",
            )
            .unwrap(),
            crate::def::parse(&format!("VERSION(1, 0, 0)\n{many}{many_events}"), "many.def").unwrap(),
        ]
    }

    /// A selection of `schema`: any declared kinds, overrides of any of its events.
    fn selection_of(schema: &Schema) -> impl Strategy<Value = Selection> + use<> {
        let declared = declared_mask(schema);
        let codes: Vec<u16> = schema.events.iter().map(|e| e.code).collect();
        let overrides = if codes.is_empty() {
            Just(BTreeMap::new()).boxed()
        } else {
            prop::collection::btree_map(prop::sample::select(codes), any::<bool>(), 0..8).boxed()
        };
        (any::<u64>(), prop::bool::weighted(0.2), prop::bool::weighted(0.2), overrides).prop_map(
            move |(kinds, all, none, overrides)| {
                let kinds = if all {
                    declared
                } else if none {
                    0
                } else {
                    kinds & declared
                };
                Selection { kinds, overrides }
            },
        )
    }

    fn schema_and_selection() -> impl Strategy<Value = (Schema, Selection)> {
        prop::sample::select(schemas()).prop_flat_map(|schema| (Just(schema.clone()), selection_of(&schema)))
    }

    /// Pieces of control texts, right and wrong.
    fn grammar_token() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            prop::sample::select(vec![
                "Arena",
                "Pool",
                "Seg",
                "Empty",
                "PoolInit",
                "SegSplit",
                "Pol",
                "all",
                "none",
                "Builtin",
                "Intern",
                "*",
                "?",
                "Po*",
                "*Init",
                "-",
                ":",
                ",",
                " ",
                "\t",
                "0x",
                "0",
                "5",
                "127",
                "128",
                ".",
                "é",
                "\u{3000}",
                "ArenaCreate",
                "Poll",
                "K1",
                "E63",
            ])
            .prop_map(str::to_owned),
            "[-*?:.,A-Za-z0-9 ]{1,6}",
        ]
    }

    /// Every error is one line that names the item and a column inside the text.
    fn check_error(text: &str, result: Result<Selection, ControlError>) -> Result<(), TestCaseError> {
        if let Err(e) = result {
            prop_assert!(!e.message.contains(['\n', '\r']), "{:?}", e.message);
            let chars = text.chars().count();
            prop_assert!(e.column >= 1 && e.column <= chars.max(1), "{} in {:?}", e.column, text);
            if !e.item.is_empty() {
                let at: String = text.chars().skip(e.column - 1).take(e.item.chars().count()).collect();
                prop_assert_eq!(at, e.item.clone());
            }
            let at = format!(" at column {}", e.column);
            prop_assert!(e.message.contains(&at), "{:?}", e.message);
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn describe_reads_back((schema, selection) in schema_and_selection()) {
            let text = describe(&selection, &schema);
            prop_assert_eq!(from_env_text(&text, &schema), Ok(selection.clone()), "{}", text);
            // A monitor that applies a description to nothing gets the selection too.
            let mut from_none = Selection::none();
            from_none.apply(&parse(&text, &schema).unwrap());
            prop_assert_eq!(from_none, selection);
        }

        #[test]
        fn reading_a_description_is_stable((schema, selection) in schema_and_selection()) {
            let once = from_env_text(&describe(&selection, &schema), &schema).unwrap();
            prop_assert_eq!(describe(&once, &schema), describe(&selection, &schema));
        }

        #[test]
        fn arbitrary_text_never_panics(text in any::<String>()) {
            for schema in schemas() {
                check_error(&text, from_env_text(&text, &schema))?;
            }
        }

        #[test]
        fn grammar_soup_never_panics(tokens in prop::collection::vec(grammar_token(), 0..12)) {
            let text = tokens.join(" ");
            for schema in schemas() {
                let result = from_env_text(&text, &schema);
                check_error(&text, result.clone())?;
                if let Ok(selection) = result {
                    // Whatever is read can be described and read back.
                    let described = describe(&selection, &schema);
                    let declared = declared_mask(&schema);
                    prop_assert_eq!(selection.kinds & !declared, 0);
                    prop_assert_eq!(from_env_text(&described, &schema), Ok(selection));
                }
            }
        }

        #[test]
        fn parse_and_apply_agree_with_from_env_text(tokens in prop::collection::vec(grammar_token(), 1..8)) {
            let text = tokens.join(",");
            let schema = schema();
            if let Ok(items) = parse(&text, &schema) {
                let mut selection = if items[0].removal { Selection::all(&schema) } else { Selection::none() };
                selection.apply(&items);
                prop_assert_eq!(from_env_text(&text, &schema), Ok(selection));
            }
        }
    }
}
