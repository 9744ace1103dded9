//! The selection language over one or more event sets: one [`Selection`] per set, addressed
//! the way ftrace addresses subsystems (`set:Kind`, `set:Kind:Event`, `set:*`). A single set is
//! a list of one.
//!
//! With one set, names need no qualifier: `Pool`, `Pool:PoolInit` (the grammar of
//! [`super`]'s table). With several, an item is read as follows (its `-` aside):
//!
//! | item | meaning |
//! |---|---|
//! | `5`, `0x5`, `all`, `none` | in every set (a mask keeps the bits each set declares) |
//! | `set:Kind`, `set:*`, `set:0x5`, `set:all`, `set:none` | a kind (a mask, a keyword) of that set |
//! | `set:Kind:Event`, `set:Kind:*`, `set:*:Event` | events of that set |
//! | `Kind`, `Event`, `Kind:Event` | unqualified: resolved in the sets that have the names |
//!
//! Every part may be a glob; a set name may hold `-` (`storage-v1`). An unqualified name or
//! `Kind:Event` that more than one set defines is an error listing the qualified candidates
//! (it is not taken to mean both: the user says which, or writes a glob, `*:Pool` or
//! `*:*:PoolInit`, which means every set that matches). An unqualified glob (`Po*`,
//! `*:*Init`) applies in every set where it matches something. An `A:B` that reads both as
//! kind `A`'s event `B` and as set `A`'s `B`, with different effects, is an error naming both
//! spellings (`x:A:B`, `A:B:*`).

use super::glob::{is_glob, name_matches};
use super::grammar::{Action, Item, SelectError, Token, declared_mask, kind_bit, list, quoted, read_body};
use super::selection::{Selection, describe_one, from_env_text_one};
use event_def::def::closest;
use event_def::schema::Schema;

/// One item read against every set: its reading in each set, `None` where it names nothing.
type PerSet = Vec<Option<Item>>;

/// The selections of `sets`, in their order, that `text` gives at start-up (`EVENT_CONTROL`).
/// A text whose first item is a removal starts every set from all its kinds, else from none.
///
/// ```
/// use event_format::select;
///
/// let mut app = event_format::testing::sample_schema();
/// app.name = "app".into();
/// let mut storage = event_format::testing::sample_schema();
/// storage.name = "storage".into();
/// let sets = [&app, &storage];
/// let chosen = select::from_env_text("storage:Pool app:Arena:ArenaCreate", &sets)?;
/// assert_eq!(select::describe(&sets, &chosen), "app:Arena:ArenaCreate storage:Pool");
/// let error = select::from_env_text("Pool", &sets).unwrap_err();
/// assert!(error.message.contains("\"app:Pool\""), "{error}");
///
/// // One set is a list of one: its names need no qualifier.
/// let one = [&app];
/// let pools = select::from_env_text("-Pool:PoolInit", &one)?;
/// assert!(!pools[0].records(app.event("PoolInit").unwrap()) && pools[0].records(app.event("ArenaCreate").unwrap()));
/// assert_eq!(select::describe(&one, &pools), "all -Pool:PoolInit");
/// let error = select::from_env_text("Arena Pol", &one).unwrap_err();
/// assert_eq!(
///     format!("EVENT_CONTROL: {error}"),
///     "EVENT_CONTROL: unknown kind \"Pol\" at column 7 (did you mean \"Pool\"?); kinds are Arena, Pool"
/// );
/// assert_eq!((error.item.as_str(), error.column), ("Pol", 7));
/// # Ok::<(), select::SelectError>(())
/// ```
pub fn from_env_text(text: &str, sets: &[&Schema]) -> Result<Vec<Selection>, SelectError> {
    if let [schema] = sets {
        return Ok(vec![from_env_text_one(text, schema)?]);
    }
    let items = parse_per_set(text, sets)?;
    let start_all = items.first().and_then(|per| per.iter().flatten().next()).is_some_and(|item| item.removal);
    let mut selections: Vec<Selection> =
        sets.iter().map(|s| if start_all { Selection::all(s) } else { Selection::none() }).collect();
    apply_items(&items, &mut selections);
    Ok(selections)
}

/// Applies `text`, in order, to `current`, the selections of `sets` in their order (what a
/// monitor does with a control text: `Pool -Seg` adds Pool and removes Seg, leaving the other
/// kinds as they are). An error leaves `current` as it was; so does a `current` whose length
/// is not the number of sets (an error too).
pub fn apply(text: &str, sets: &[&Schema], current: &mut [Selection]) -> Result<(), SelectError> {
    if current.len() != sets.len() {
        return Err(SelectError {
            item: String::new(),
            column: 1,
            message: format!("{} selections for {} event sets; give one selection per set", current.len(), sets.len()),
        });
    }
    if let ([schema], [selection]) = (sets, &mut *current) {
        let items = super::grammar::parse(text, schema)?;
        selection.apply(&items);
        return Ok(());
    }
    let items = parse_per_set(text, sets)?;
    apply_items(&items, current);
    Ok(())
}

/// A text that [`from_env_text`] reads back to `current` (the selections of `sets`, in their
/// order), as far as the sets declare them. With one set: `all` or `none`, or the recorded
/// kinds' names, then each override as `Kind:Event` or `-Kind:Event`. With several every word
/// is qualified: `set:Kind` (or `set:*`, or `set:0x5` where a name would be ambiguous or is a
/// keyword), then each override as `set:Kind:Event` or `-set:Kind:Event`; `none` when
/// nothing is chosen.
///
/// ```
/// use event_format::select::{self, Selection};
///
/// let schema = event_format::testing::sample_schema();
/// assert_eq!(select::describe(&[&schema], &[Selection::none()]), "none");
/// assert_eq!(select::describe(&[&schema], &[Selection::all(&schema)]), "all");
/// let mut selection = Selection { kinds: 0b10, ..Selection::none() };
/// selection.overrides.insert(0x0004, true);
/// assert_eq!(select::describe(&[&schema], &[selection]), "Pool Arena:Poll");
/// ```
pub fn describe(sets: &[&Schema], current: &[Selection]) -> String {
    if let ([schema], [selection]) = (sets, current) {
        return describe_one(selection, schema);
    }
    let mut words: Vec<String> = Vec::new();
    for (i, (schema, selection)) in sets.iter().zip(current).enumerate() {
        let declared = declared_mask(schema);
        let kinds = selection.kinds & declared;
        let set = &schema.name;
        if kinds != 0 {
            let reads_kinds = |word: &str, mask: u64| {
                reads_as(word, sets, i, |a| matches!(a, Action::Kinds { mask: m, on: true, .. } if *m == mask))
            };
            let all = format!("{set}:*");
            if kinds == declared && reads_kinds(&all, declared) {
                words.push(all);
            } else {
                let names: Vec<String> = schema
                    .kinds
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| kinds & kind_bit(k) != 0)
                    .map(|(k, kind)| (k, format!("{set}:{}", kind.name)))
                    .filter(|(k, word)| reads_kinds(word, kind_bit(*k)))
                    .map(|(_, word)| word)
                    .collect();
                if names.len() == kinds.count_ones() as usize {
                    words.extend(names);
                } else {
                    words.push(format!("{set}:0x{kinds:X}"));
                }
            }
        }
        let mut overrides = selection.overrides.clone();
        for event in &schema.events {
            let Some(kind) = schema.kinds.get(usize::from(event.kind)) else { continue };
            if let Some(on) = overrides.remove(&event.code) {
                let sign = if on { "" } else { "-" };
                words.push(format!("{sign}{set}:{}:{}", kind.name, event.name));
            }
        }
    }
    if words.first().is_none_or(|w| w.starts_with('-')) {
        words.insert(0, "none".to_owned());
    }
    words.join(" ")
}

/// Whether `word`, read alone against `sets`, does something in set `index` only, and that
/// something satisfies `expect`.
fn reads_as(word: &str, sets: &[&Schema], index: usize, expect: impl Fn(&Action) -> bool) -> bool {
    let token = Token { item: word, column: 1 };
    match read_token(&token, sets) {
        Ok(per) => per.iter().enumerate().all(|(i, item)| match item {
            Some(item) => i == index && expect(&item.action),
            None => i != index,
        }),
        Err(_) => false,
    }
}

/// Applies each item's readings to the selection of its set.
fn apply_items(items: &[PerSet], selections: &mut [Selection]) {
    for per in items {
        for (item, selection) in per.iter().zip(selections.iter_mut()) {
            if let Some(item) = item {
                selection.apply(std::slice::from_ref(item));
            }
        }
    }
}

/// Reads every item of `text` against several sets.
fn parse_per_set(text: &str, sets: &[&Schema]) -> Result<Vec<PerSet>, SelectError> {
    let tokens = Token::all(text);
    if tokens.is_empty() {
        return Err(SelectError {
            item: String::new(),
            column: 1,
            message: format!(
                "nothing chosen at column 1: the text has no items; write \"all\", \"none\", set:Kind or set:Kind:Event; {}",
                set_list(sets)
            ),
        });
    }
    tokens.iter().map(|token| read_token(token, sets)).collect()
}

/// "sets are a, b".
fn set_list(sets: &[&Schema]) -> String {
    format!("sets are {}", list(sets.iter().map(|s| s.name.as_str())))
}

/// "sets are a (kinds A, B), b (kinds C)".
fn set_kind_list(sets: &[&Schema]) -> String {
    let each: Vec<String> = sets
        .iter()
        .map(|s| {
            if s.kinds.is_empty() {
                format!("{} (no kinds)", s.name)
            } else {
                format!("{} (kinds {})", s.name, list(s.kinds.iter().map(|k| k.name.as_str())))
            }
        })
        .collect();
    format!("sets are {}", each.join(", "))
}

/// Whether `part` can name sets: a set name or a glob over set names.
fn is_set_pattern(part: &str) -> bool {
    !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '?'))
}

/// The indices of the sets whose names `pattern` matches.
fn sets_matching(pattern: &str, sets: &[&Schema]) -> Vec<usize> {
    sets.iter().enumerate().filter(|(_, s)| name_matches(pattern, &s.name)).map(|(i, _)| i).collect()
}

/// One item read against several sets.
fn read_token(token: &Token<'_>, sets: &[&Schema]) -> Result<PerSet, SelectError> {
    let (removal, body) = token.sign_and_body()?;
    if body.starts_with(|c: char| c.is_ascii_digit()) {
        return number(token, sets, removal, body);
    }
    if matches!(body, "all" | "none") {
        return sets.iter().map(|s| read_body(s, token, "", removal, body).map(Some)).collect();
    }
    let parts: Vec<&str> = body.split(':').collect();
    match parts[..] {
        [word] => word_item(token, sets, removal, word),
        [a, b] => two_parts(token, sets, removal, a, b),
        [set, kind, event] => three_parts(token, sets, removal, set, kind, event),
        _ => Err(token.error(format!("{} has more than two ':'; write one set:Kind:Event per item", token.at()))),
    }
}

/// A mask in every set: each set keeps the bits it declares. A bit no set declares is an
/// error, the one the set with the most kinds gives.
fn number(token: &Token<'_>, sets: &[&Schema], removal: bool, body: &str) -> Result<PerSet, SelectError> {
    let Some(widest) = sets.iter().max_by_key(|s| s.kinds.len()) else { return Ok(Vec::new()) };
    let item = read_body(widest, token, "", removal, body)?;
    Ok(sets
        .iter()
        .map(|s| {
            let action = match item.action {
                Action::SetKinds(mask) => Action::SetKinds(mask & declared_mask(s)),
                ref other => other.clone(),
            };
            Some(Item { action, ..item.clone() })
        })
        .collect())
}

/// How `word` (a name, not a glob) is written qualified in `schema`: `set:Kind` for a kind,
/// `set:Kind:Event` for an event.
fn qualified_word(schema: &Schema, sign: &str, word: &str) -> String {
    if schema.kinds.iter().any(|k| k.name == word) {
        return format!("{sign}{}:{word}", schema.name);
    }
    match schema.event(word).and_then(|e| schema.kinds.get(usize::from(e.kind))) {
        Some(kind) => format!("{sign}{}:{}:{word}", schema.name, kind.name),
        None => format!("{sign}{}:{word}", schema.name),
    }
}

/// Each set's reading of `body` (qualified suggestions), split into what it names and the
/// errors of the sets where it names nothing.
fn each_set(token: &Token<'_>, sets: &[&Schema], removal: bool, body: &str) -> (PerSet, Vec<SelectError>) {
    let mut per = Vec::new();
    let mut errors = Vec::new();
    for s in sets {
        match read_body(s, token, &format!("{}:", s.name), removal, body) {
            Ok(item) => per.push(Some(item)),
            Err(e) => {
                per.push(None);
                errors.push(e);
            }
        }
    }
    (per, errors)
}

/// The indices of the sets where an item names something.
fn named_in(per: &PerSet) -> Vec<usize> {
    per.iter().enumerate().filter(|(_, i)| i.is_some()).map(|(i, _)| i).collect()
}

/// `Kind` or `Event`, unqualified.
fn word_item(token: &Token<'_>, sets: &[&Schema], removal: bool, word: &str) -> Result<PerSet, SelectError> {
    let (per, errors) = each_set(token, sets, removal, word);
    let named = named_in(&per);
    if named.is_empty() {
        return Err(no_reading(token, sets, errors, None));
    }
    if named.len() > 1 && !is_glob(word) {
        let sign = if removal { "-" } else { "" };
        let candidates: Vec<String> = named.iter().map(|&i| quoted(&qualified_word(sets[i], sign, word))).collect();
        return Err(token.error(format!(
            "{} is ambiguous: {} sets define it; write {}",
            token.at(),
            named.len(),
            or_list(&candidates)
        )));
    }
    Ok(per)
}

/// `a, b or c`.
fn or_list(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// `A:B`: kind `A`'s events `B` in the sets that have them, or set `A`'s `B` (a kind, an
/// event, a mask, a keyword).
fn two_parts(token: &Token<'_>, sets: &[&Schema], removal: bool, a: &str, b: &str) -> Result<PerSet, SelectError> {
    token.check_sides(removal, a, b)?;
    let sign = if removal { "-" } else { "" };
    let (as_event, event_errors) = each_set(token, sets, removal, &format!("{a}:{b}"));
    let mut as_set: PerSet = vec![None; sets.len()];
    let mut set_errors = Vec::new();
    let in_sets = if is_set_pattern(a) { sets_matching(a, sets) } else { Vec::new() };
    for &i in &in_sets {
        match read_body(sets[i], token, &format!("{a}:"), removal, b) {
            Ok(item) => as_set[i] = Some(item),
            Err(e) => set_errors.push(e),
        }
    }
    let events_in = named_in(&as_event);
    let sets_in = named_in(&as_set);
    let actions = |per: &PerSet| per.iter().map(|i| i.as_ref().map(|i| i.action.clone())).collect::<Vec<_>>();
    match (events_in.is_empty(), sets_in.is_empty()) {
        (false, false) if actions(&as_event) != actions(&as_set) => {
            let mut candidates: Vec<String> =
                events_in.iter().map(|&i| quoted(&format!("{sign}{}:{a}:{b}", sets[i].name))).collect();
            for &i in &sets_in {
                let s = sets[i];
                let spelled = if s.kinds.iter().any(|k| name_matches(b, &k.name)) {
                    format!("{sign}{}:{b}:*", s.name)
                } else {
                    format!("{sign}{}:*:{b}", s.name)
                };
                candidates.push(quoted(&spelled));
            }
            Err(token.error(format!(
                "{} is ambiguous: it reads as kind {a}'s event {b} and as set {a}'s {b}; write set:Kind:Event, {}",
                token.at(),
                or_list(&candidates)
            )))
        }
        (false, _) if events_in.len() > 1 && !is_glob(a) && !is_glob(b) => {
            let candidates: Vec<String> =
                events_in.iter().map(|&i| quoted(&format!("{sign}{}:{a}:{b}", sets[i].name))).collect();
            Err(token.error(format!(
                "{} is ambiguous: {} sets define it; write {}",
                token.at(),
                events_in.len(),
                or_list(&candidates)
            )))
        }
        (false, _) => Ok(as_event),
        (true, false) => Ok(as_set),
        (true, true) => {
            let mut errors = set_errors;
            errors.extend(event_errors);
            Err(no_reading(token, sets, errors, in_sets.is_empty().then_some((a, b))))
        }
    }
}

/// `set:Kind:Event`, each part a glob.
fn three_parts(
    token: &Token<'_>,
    sets: &[&Schema],
    removal: bool,
    set: &str,
    kind: &str,
    event: &str,
) -> Result<PerSet, SelectError> {
    let sign = if removal { "-" } else { "" };
    if set.is_empty() {
        return Err(token.error(format!(
            "{} names no set before the first ':'; write {} for the events of every set",
            token.at(),
            quoted(&format!("{sign}*:{kind}:{event}"))
        )));
    }
    if !is_set_pattern(set) {
        return Err(token.error(format!(
            "{}: set names are ASCII letters, digits, '_' and '-', with '*' and '?' as wildcards",
            token.part_at(set)
        )));
    }
    token.check_sides(removal, kind, event)?;
    let in_sets = sets_matching(set, sets);
    if in_sets.is_empty() {
        let rest = format!("{kind}:{event}");
        return Err(unknown_set(token, sets, removal, set, &rest));
    }
    let mut per: PerSet = vec![None; sets.len()];
    let mut errors = Vec::new();
    for &i in &in_sets {
        match read_body(sets[i], token, &format!("{set}:"), removal, &format!("{kind}:{event}")) {
            Ok(item) => per[i] = Some(item),
            Err(e) => errors.push(e),
        }
    }
    if named_in(&per).is_empty() {
        return Err(match errors.as_slice() {
            [one] => one.clone(),
            _ => no_reading(token, sets, errors, None),
        });
    }
    Ok(per)
}

/// The error for a set name that no set has, with the nearest set name.
fn unknown_set(token: &Token<'_>, sets: &[&Schema], removal: bool, set: &str, rest: &str) -> SelectError {
    let sign = if removal { "-" } else { "" };
    if is_glob(set) {
        return token.error(format!("{} matches no set; {}", token.part_at(set), set_list(sets)));
    }
    let help = match closest(set, sets.iter().map(|s| s.name.as_str())) {
        Some(near) => format!(" (did you mean {}?)", quoted(&format!("{sign}{near}:{rest}"))),
        None => String::new(),
    };
    token.error(format!("unknown set {}{help}; {}", token.part_at(set), set_list(sets)))
}

/// The error for an item that names nothing in any set, from the sets' own errors: the one
/// error when every set gives it (a mistake of syntax), else the first with a suggestion,
/// else the nearest set name for `A:B` (`unqualified`), else a list of the sets and kinds.
fn no_reading(
    token: &Token<'_>,
    sets: &[&Schema],
    errors: Vec<SelectError>,
    unqualified: Option<(&str, &str)>,
) -> SelectError {
    if let Some(first) = errors.first()
        && errors.iter().all(|e| e == first)
        && unqualified.is_none()
    {
        return first.clone();
    }
    if let Some(mut found) = errors.iter().find(|e| e.message.contains("(did you mean")).cloned() {
        if let Some(cut) = found.message.find("; kinds are ") {
            found.message.truncate(cut);
            found.message.push_str(&format!("; {}", set_list(sets)));
        }
        return found;
    }
    if let Some((a, b)) = unqualified
        && !is_glob(a)
        && closest(a, sets.iter().map(|s| s.name.as_str())).is_some()
    {
        return unknown_set(token, sets, token.item.starts_with('-'), a, b);
    }
    if let Some(first) = errors.first()
        && errors.iter().all(|e| e == first)
    {
        return first.clone();
    }
    token.error(format!("{} names nothing in any set; {}", token.at(), set_kind_list(sets)))
}
