//! The schema: the event set that events.def declares and every stream embeds.
//!
//! A [`Schema`] is plain data. [`Schema::check`] applies every rule of the event set
//! (unique names and codes, code ranges, declared kinds, parameter names...) and is used
//! both by the events.def parser and by the stream decoder on the schema a stream embeds,
//! so a hand-written file and a hostile stream are held to the same rules.

use crate::letter::{self, Letter};
pub use crate::meaning::{Buckets, Counter, Flow, FlowStep, Histogram, HistogramOf, Limit, Rate, Span};
use std::collections::{HashMap, HashSet};
use std::fmt;

mod meanings;

/// The most kinds an event set can declare: one bit each in a 64-bit control mask.
pub const MAX_KINDS: usize = 64;
/// The most parameters one event can have.
pub const MAX_PARAMS: usize = 64;
/// The longest name (event, kind or parameter), in bytes.
pub const MAX_NAME_LEN: usize = 255;
/// The longest kind description, in bytes.
pub const MAX_DOC_LEN: usize = 4096;
/// The lowest code an event set may use.
pub const FIRST_USER_CODE: u16 = 0x0001;
/// The highest code an event set may use; `0xFF00..=0xFFFF` belong to the runtime.
pub const LAST_USER_CODE: u16 = 0xFEFF;
/// The kind name under which the runtime's built-in events are shown; reserved.
pub const BUILTIN_KIND: &str = "Builtin";

/// A three-part version, `major.median.minor`, with MPS's rules (`.sol.version`):
/// a reader refuses another major, refuses a newer median unless forced, and reads a newer minor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Version {
    /// Incompatible changes.
    pub major: u16,
    /// Changes an older reader may misread: it must be forced to try.
    pub median: u16,
    /// Additions an older reader skips safely.
    pub minor: u16,
}

impl Version {
    /// A version from its three parts.
    pub const fn new(major: u16, median: u16, minor: u16) -> Version {
        Version { major, median, minor }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.median, self.minor)
    }
}

/// A kind of events: one bit of the control mask, in declaration order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Kind {
    /// The kind's name, an identifier.
    pub name: String,
    /// What the kind covers, free text (may be empty).
    pub doc: String,
}

/// One event type: a `RELATION` row of events.def.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventType {
    /// The event's name, an identifier.
    pub name: String,
    /// Its 16-bit code, in `FIRST_USER_CODE..=LAST_USER_CODE`.
    pub code: u16,
    /// `TRUE` in events.def: kept in the `hot` variety.
    pub always: bool,
    /// Index of its kind in [`Schema::kinds`]; also its bit in the control mask.
    pub kind: u8,
    /// The parameters' types, in order.
    pub format: Vec<Letter>,
    /// The parameters' names, one per letter (`f0`, `f1`, ... when events.def gives none).
    pub params: Vec<String>,
}

/// A retired event: its name and code stay reserved and are never reused.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Retired {
    /// The name the event had.
    pub name: String,
    /// The code it had.
    pub code: u16,
}

/// An event set: what events.def declares, and what every stream header embeds (one per set
/// it records, docs/EVENT-SETS.md).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Schema {
    /// The set's name (the `SET` line of events.def, or a default its reader chose, such as
    /// the package name of the crate that includes it); empty for the one set of a 1.x
    /// stream, which has none. See [`set_name_problem`].
    pub name: String,
    /// The event set's version (`VERSION` line).
    pub version: Version,
    /// The kinds, in declaration order (index = control-mask bit).
    pub kinds: Vec<Kind>,
    /// The event types, in declaration order.
    pub events: Vec<EventType>,
    /// The retired event types.
    pub retired: Vec<Retired>,
    /// The spans its events begin and end (`SPAN` lines), in declaration order.
    pub spans: Vec<Span>,
    /// The counters its events sample (`COUNTER` lines), in declaration order.
    pub counters: Vec<Counter>,
    /// The flows its events take part in (`FLOW` lines), in declaration order.
    pub flows: Vec<Flow>,
    /// The histograms the recorder keeps of its spans and parameters (`HISTOGRAM` lines), in
    /// declaration order (since format 2.1.0).
    pub histograms: Vec<Histogram>,
    /// The limits its events' rows declare (`limit=`), in the order of the rows (since format
    /// 2.1.0): the recorder's defaults, which `EVENT_LIMIT` and `event-dump control` change.
    pub limits: Vec<Limit>,
}

/// The default name of parameter `i` when events.def names none: `f0`, `f1`, ...
pub fn default_param_name(i: usize) -> String {
    format!("f{i}")
}

/// Which part of a schema a [`Problem`] is about, so that the events.def parser can point
/// at the right line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The `VERSION` line.
    Version,
    /// Kind `i`: its name.
    KindName(usize),
    /// Kind `i`: its description.
    KindDoc(usize),
    /// Event `i`: the whole row.
    Event(usize),
    /// Event `i`: its name.
    EventName(usize),
    /// Event `i`: its code.
    EventCode(usize),
    /// Event `i`: its kind.
    EventKind(usize),
    /// Event `i`: its format.
    EventFormat(usize),
    /// Event `i`, parameter name `j`.
    Param(usize, usize),
    /// Retired event `i`: its name.
    RetiredName(usize),
    /// Retired event `i`: its code.
    RetiredCode(usize),
    /// Span `i`: its name.
    SpanName(usize),
    /// Span `i`: the event that begins it.
    SpanBegin(usize),
    /// Span `i`: the event that ends it.
    SpanEnd(usize),
    /// Span `i`: its id parameter.
    SpanId(usize),
    /// Counter `i`: its name.
    CounterName(usize),
    /// Counter `i`: its event.
    CounterEvent(usize),
    /// Counter `i`: its value parameter.
    CounterValue(usize),
    /// Counter `i`: its unit.
    CounterUnit(usize),
    /// Flow line `i`: the flow's name.
    FlowName(usize),
    /// Flow line `i`: its event.
    FlowEvent(usize),
    /// Flow line `i`: its id parameter.
    FlowId(usize),
    /// Flow line `i`: its step.
    FlowStep(usize),
    /// Histogram `i`: its name.
    HistogramName(usize),
    /// Histogram `i`: the span or event it counts.
    HistogramOf(usize),
    /// Histogram `i`: its parameter.
    HistogramParam(usize),
    /// Histogram `i`: its buckets.
    HistogramBuckets(usize),
    /// Limit `i`: its `limit=` setting.
    Limit(usize),
}

/// A broken rule of the event set: what is wrong, where, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Where in the schema.
    pub place: Place,
    /// What is wrong, e.g. "duplicate event code 0x0003".
    pub message: String,
    /// What to do about it, e.g. "give this event an unused code, such as 0x0017".
    pub help: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {}", self.message, self.help)
    }
}

/// `n` followed by `noun`, made plural unless `n` is 1: "1 parameter", "0 parameters".
fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// The longest set name, in bytes.
pub const MAX_SET_NAME_LEN: usize = 255;

/// Which rules a schema is held to: the names a format version allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    /// Format 2.x and events.def: sets are namespaced, so an event may bear a built-in
    /// event's name, and a name may be a Rust keyword (the generated code uses raw
    /// identifiers) except `self`, `Self`, `super` and `crate`, which no raw identifier spells.
    V2,
    /// The one set of a 1.x stream, as a reader takes it: no name is a Rust keyword, and the
    /// names reserved for built-in events are not checked (a later 1.x format may have added
    /// built-in names that an older writer's events bear; codes tell them apart).
    V1Read,
}

/// The keywords that no raw identifier can spell (`r#self` is refused by Rust): never names.
pub const UNRAW_KEYWORDS: &[&str] = &["self", "Self", "super", "crate"];

/// Why `name` cannot name an event set, or `None` when it can: ASCII, a letter or `_` first,
/// then letters, digits, `_` and `-` (a package name), at most [`MAX_SET_NAME_LEN`] bytes.
pub fn set_name_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Some("a set name cannot be empty".to_owned());
    };
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Some(format!("set name `{name}` must start with an ASCII letter or `_`"));
    }
    if let Some(bad) = chars.find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-')) {
        return Some(format!(
            "set name `{name}` has `{bad}`, which is not allowed (ASCII letters, digits, `_` and `-` only)"
        ));
    }
    if name.len() > MAX_SET_NAME_LEN {
        return Some(format!("a set name is {} bytes long, more than the {MAX_SET_NAME_LEN} allowed", name.len()));
    }
    None
}

/// Rust's keywords (strict and reserved, 2015 to 2024): not allowed as names in 1.x streams,
/// and in 2.x only the [`UNRAW_KEYWORDS`] are refused (the macro writes the others as raw
/// identifiers, `r#type`).
const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self",
    "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract",
    "become", "box", "do", "final", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// Whether `name` is a Rust keyword (strict or reserved, any edition): the generated code
/// writes it as a raw identifier (`r#type`).
pub fn is_rust_keyword(name: &str) -> bool {
    RUST_KEYWORDS.contains(&name)
}

/// Why `name` is not a valid identifier for events.def (format 2.x rules), or `None` when it
/// is one.
///
/// An identifier is ASCII: a letter or `_` then letters, digits and `_`; not `_` alone,
/// not one of [`UNRAW_KEYWORDS`], at most [`MAX_NAME_LEN`] bytes.
pub fn identifier_problem(name: &str) -> Option<String> {
    identifier_problem_by(name, Rules::V2)
}

/// Why `name` is not a valid identifier under `rules`, or `None` when it is one.
pub fn identifier_problem_by(name: &str, rules: Rules) -> Option<String> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Some("a name cannot be empty".to_owned());
    };
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Some(format!("`{name}` is not an identifier: it must start with an ASCII letter or `_`"));
    }
    if let Some(bad) = chars.find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
        return Some(format!(
            "`{name}` is not an identifier: `{bad}` is not allowed (ASCII letters, digits and `_` only)"
        ));
    }
    if name == "_" {
        return Some("`_` alone is not a name".to_owned());
    }
    match rules {
        Rules::V1Read if RUST_KEYWORDS.contains(&name) => {
            return Some(format!("`{name}` is a Rust keyword and cannot be a name in a 1.x stream"));
        }
        Rules::V2 if UNRAW_KEYWORDS.contains(&name) => {
            return Some(format!("`{name}` is a Rust keyword that no raw identifier can spell, and cannot be a name"));
        }
        _ => {}
    }
    if name.len() > MAX_NAME_LEN {
        return Some(format!("a name is {} bytes long, more than the {MAX_NAME_LEN} allowed", name.len()));
    }
    None
}

impl Schema {
    /// The kind named `name`, with its index.
    pub fn kind(&self, name: &str) -> Option<(usize, &Kind)> {
        self.kinds.iter().enumerate().find(|(_, k)| k.name == name)
    }

    /// The event type named `name`.
    pub fn event(&self, name: &str) -> Option<&EventType> {
        self.events.iter().find(|e| e.name == name)
    }

    /// The event type with code `code`.
    pub fn event_by_code(&self, code: u16) -> Option<&EventType> {
        self.events.iter().find(|e| e.code == code)
    }

    /// The lowest code in `FIRST_USER_CODE..=LAST_USER_CODE` that no event or retired
    /// event uses, if any is left.
    pub fn next_free_code(&self) -> Option<u16> {
        let mut used: Vec<u16> =
            self.events.iter().map(|e| e.code).chain(self.retired.iter().map(|r| r.code)).collect();
        used.sort_unstable();
        used.dedup();
        let mut candidate = FIRST_USER_CODE;
        for code in used {
            if code < candidate {
                continue;
            }
            if code > candidate {
                break;
            }
            candidate = candidate.checked_add(1)?;
        }
        (candidate <= LAST_USER_CODE).then_some(candidate)
    }

    /// Checks every rule of the event set, by the rules of format 2.x and events.def
    /// ([`Rules::V2`]). Returns all the problems found, in the order of the items they
    /// concern, or `Ok(())` when there are none. The set's name is not checked here: it is
    /// a rule of the stream's list of sets ([`set_name_problem`]).
    pub fn check(&self) -> Result<(), Vec<Problem>> {
        self.check_by(Rules::V2)
    }

    /// Checks the rules a reader needs of a 1.x stream's embedded schema ([`Rules::V1Read`]):
    /// the 1.x rules but the names reserved for built-in events, which a later format
    /// version may add (an older writer's event may bear a name a newer reader reserves;
    /// codes tell them apart).
    pub fn check_as_read(&self) -> Result<(), Vec<Problem>> {
        self.check_by(Rules::V1Read)
    }

    /// Checks every rule of the event set under `rules`.
    pub fn check_by(&self, rules: Rules) -> Result<(), Vec<Problem>> {
        let mut problems = Vec::new();
        self.check_kinds(&mut problems, rules);
        self.check_names_and_codes(&mut problems, rules);
        self.check_rows(&mut problems, rules);
        self.check_meanings(&mut problems, rules);
        if problems.is_empty() { Ok(()) } else { Err(problems) }
    }

    fn check_kinds(&self, problems: &mut Vec<Problem>, rules: Rules) {
        // First index of each name: duplicates are found in linear time, whatever the input.
        let mut first: HashMap<&str, usize> = HashMap::with_capacity(self.kinds.len());
        for (i, kind) in self.kinds.iter().enumerate() {
            if let Some(why) = identifier_problem_by(&kind.name, rules) {
                problems.push(Problem {
                    place: Place::KindName(i),
                    message: format!("bad kind name: {why}"),
                    help: "name kinds with identifiers such as `Arena`".to_owned(),
                });
            } else if kind.name == BUILTIN_KIND {
                problems.push(Problem {
                    place: Place::KindName(i),
                    message: format!("kind name `{BUILTIN_KIND}` is reserved for the runtime's built-in events"),
                    help: "choose another name for this kind".to_owned(),
                });
            }
            if let Some(&j) = first.get(kind.name.as_str()) {
                problems.push(Problem {
                    place: Place::KindName(i),
                    message: format!("kind `{}` is declared twice (its first KIND line gives it bit {j})", kind.name),
                    help: "remove one of the declarations or rename this kind".to_owned(),
                });
            } else {
                first.insert(&kind.name, i);
            }
            if kind.doc.len() > MAX_DOC_LEN {
                problems.push(Problem {
                    place: Place::KindDoc(i),
                    message: format!(
                        "kind description is {} bytes long, more than the {MAX_DOC_LEN} allowed",
                        kind.doc.len()
                    ),
                    help: "shorten the description".to_owned(),
                });
            }
            if i == MAX_KINDS {
                problems.push(Problem {
                    place: Place::KindName(i),
                    message: format!(
                        "too many kinds: {} declared, at most {MAX_KINDS} (one bit each in the control mask)",
                        self.kinds.len()
                    ),
                    help: "merge some kinds".to_owned(),
                });
            }
        }
    }

    fn check_names_and_codes(&self, problems: &mut Vec<Problem>, rules: Rules) {
        // Events and retired events share one space of names and one of codes.
        let names: Vec<(&str, u16, Place, Place)> = self
            .events
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.as_str(), e.code, Place::EventName(i), Place::EventCode(i)))
            .chain(
                self.retired
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (r.name.as_str(), r.code, Place::RetiredName(i), Place::RetiredCode(i))),
            )
            .collect();
        let mut by_code: Vec<(u16, usize)> = names.iter().enumerate().map(|(n, item)| (item.1, n)).collect();
        by_code.sort_unstable();
        let mut by_name: Vec<(&str, usize)> = names.iter().enumerate().map(|(n, item)| (item.0, n)).collect();
        by_name.sort_unstable();
        let first_with =
            |sorted: &[(u16, usize)], code: u16| -> usize { sorted[sorted.partition_point(|(c, _)| *c < code)].1 };
        let first_named =
            |sorted: &[(&str, usize)], name: &str| -> usize { sorted[sorted.partition_point(|(s, _)| *s < name)].1 };
        let free = self.next_free_code();
        let free_hint = match free {
            Some(code) => format!("give it an unused code, such as 0x{code:04X}"),
            None => "every code in 0x0001..=0xFEFF is taken (retired codes stay taken)".to_owned(),
        };
        for (n, &(name, code, name_place, code_place)) in names.iter().enumerate() {
            // Built-in events' names are not reserved: in 2.x sets are namespaced and codes
            // tell built-in events apart; a 1.x reader does not check them (see Rules::V1Read).
            if let Some(why) = identifier_problem_by(name, rules) {
                problems.push(Problem {
                    place: name_place,
                    message: format!("bad event name: {why}"),
                    help: "name events with identifiers such as `ArenaCreate`".to_owned(),
                });
            }
            let first = first_named(&by_name, name);
            if first != n {
                problems.push(Problem {
                    place: name_place,
                    message: format!("event name `{name}` is used twice"),
                    help: "rename one of them; retired names stay reserved too".to_owned(),
                });
            }
            if !(FIRST_USER_CODE..=LAST_USER_CODE).contains(&code) {
                let why = if code == 0 {
                    "code 0x0000 is not a valid event code".to_owned()
                } else {
                    format!(
                        "code 0x{code:04X} is in the range 0xFF00..=0xFFFF reserved for the runtime's built-in events"
                    )
                };
                problems.push(Problem {
                    place: code_place,
                    message: why,
                    help: format!("use a code in 0x0001..=0xFEFF; {free_hint}"),
                });
            }
            let first = first_with(&by_code, code);
            if first != n {
                problems.push(Problem {
                    place: code_place,
                    message: format!("event code 0x{code:04X} of `{name}` is already used by `{}`", names[first].0),
                    help: format!("codes are never reused, retired ones included: {free_hint}"),
                });
            }
        }
    }

    fn check_rows(&self, problems: &mut Vec<Problem>, rules: Rules) {
        for (i, event) in self.events.iter().enumerate() {
            if usize::from(event.kind) >= self.kinds.len() {
                problems.push(Problem {
                    place: Place::EventKind(i),
                    message: format!(
                        "event `{}` has kind {} but only {} kinds are declared",
                        event.name,
                        event.kind,
                        self.kinds.len()
                    ),
                    help: "declare the kind with a KIND line".to_owned(),
                });
            }
            if event.format.len() > MAX_PARAMS {
                problems.push(Problem {
                    place: Place::EventFormat(i),
                    message: format!(
                        "event `{}` has {} parameters, more than the {MAX_PARAMS} allowed",
                        event.name,
                        event.format.len()
                    ),
                    help: "split it into several events".to_owned(),
                });
            }
            if event.params.len() != event.format.len() {
                problems.push(Problem {
                    place: Place::Event(i),
                    message: format!(
                        "event `{}` has format {} ({}) but {}",
                        event.name,
                        letter::format_string(&event.format),
                        plural(event.format.len(), "parameter"),
                        plural(event.params.len(), "parameter name"),
                    ),
                    help: "give one name per format letter, or none at all".to_owned(),
                });
            }
            let mut seen: HashSet<&str> = HashSet::with_capacity(event.params.len());
            for (j, param) in event.params.iter().enumerate() {
                if let Some(why) = identifier_problem_by(param, rules) {
                    problems.push(Problem {
                        place: Place::Param(i, j),
                        message: format!("bad parameter name: {why}"),
                        help: "name parameters with identifiers such as `size`".to_owned(),
                    });
                }
                if !seen.insert(param) {
                    problems.push(Problem {
                        place: Place::Param(i, j),
                        message: format!("parameter name `{param}` is used twice in `{}`", event.name),
                        help: "give each parameter of an event its own name".to_owned(),
                    });
                }
            }
        }
    }
}
