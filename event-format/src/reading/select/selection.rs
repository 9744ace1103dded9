//! [`Selection`]: which events a program records, as the control texts leave it; what a text
//! means at start-up ([`from_env_text`]), a selection written back as a text ([`describe`]),
//! and a selection compiled to the bitmap the recorder tests ([`Selection::compile`]).

use super::codes::CodeSet;
use super::grammar::{Action, Item, SelectError, declared_mask, kind_bit, parse};
use event_def::schema::{EventType, Schema};
use std::collections::BTreeMap;

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

    /// The codes of the events of `schema` this selection records, as a [`CodeSet`]: what
    /// the recorder tests on its hot path, compiled once whenever the selection changes.
    /// Built-in events are not in it (they are recorded whatever the selection says).
    ///
    /// ```
    /// use event_format::select::{self, Selection};
    ///
    /// let schema = event_format::testing::sample_schema();
    /// let codes = select::from_env_text("Arena -Arena:Poll", &[&schema])?[0].compile(&schema);
    /// assert_eq!(codes.iter().collect::<Vec<_>>(), [schema.event("ArenaCreate").unwrap().code]);
    /// assert!(Selection::none().compile(&schema).is_empty());
    /// # Ok::<(), select::SelectError>(())
    /// ```
    pub fn compile(&self, schema: &Schema) -> CodeSet {
        self.enabled_codes(schema).collect()
    }

    /// Applies `items`, in order, to this selection (what a monitor does with a control
    /// text: `Pool -Seg` adds Pool and removes Seg, leaving the other kinds as they are).
    pub(crate) fn apply(&mut self, items: &[Item]) {
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

/// The selection of one set that `text` gives at start-up: the one-set case of
/// [`from_env_text`](super::from_env_text). A text whose first item is a removal starts from
/// every kind, else from none.
pub(super) fn from_env_text_one(text: &str, schema: &Schema) -> Result<Selection, SelectError> {
    let items = parse(text, schema)?;
    let mut selection = match items.first() {
        Some(item) if item.removal => Selection::all(schema),
        _ => Selection::none(),
    };
    selection.apply(&items);
    Ok(selection)
}

/// A short text of one set's `selection` in the control grammar, which
/// [`from_env_text_one`] reads back to the same selection: `all` or `none`, or the recorded
/// kinds' names, then each override as `Kind:Event` or `-Kind:Event`, e.g. `Arena Pool
/// -Pool:PoolInit Seg:SegSplit`: the one-set case of [`describe`](super::describe).
///
/// Only what `schema` declares is written: kind bits beyond its kinds and overrides of codes
/// it has no event for are left out. When a recorded kind is named `all` or `none`, the
/// kinds are written as a hex mask (`0x5`) instead of names.
pub(super) fn describe_one(selection: &Selection, schema: &Schema) -> String {
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
