//! The choice of events that `print`, `stats`, `follow`, `latency` and `export` share:
//! `--kind`, `--event`, `--thread`, `--since`, `--until` and `--filter` (parsed once, by
//! [`crate::cli::Select`]), compiled against the logs' schemas with event-format's selection
//! and filter languages (`event_format::select`, `event_format::filter`).

use crate::cli::Select;
use crate::log::DumpError;
use event_format::builtin;
use event_format::builtins::BuiltinEvent;
use event_format::decode::{BlockSource, Catalog};
use event_format::decode::{Entry, Event};
use event_format::filter::FilterEvent;
use event_format::filter::{Filter, FilterError, ValueType};
use event_format::schema::{BUILTIN_KIND, Schema};
use event_format::select::{CodeSet, Pattern, Patterns, Word, glob};
use event_format::wire::{Clock, Header};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

type Result<T> = std::result::Result<T, DumpError>;

/// Each log's thread names: thread id -> the name its last `ThreadName` event gave.
pub(crate) type ThreadNames = Vec<BTreeMap<u64, String>>;

/// Which events `print`, `stats`, `follow`, `latency` and `export` read (their `--kind`,
/// `--event`, `--thread`, `--since`, `--until` and `--filter`), compiled against the logs'
/// schemas: a choice of events to read, named apart from [`event_format::select::Selection`]
/// (which events a program records).
pub(crate) struct Choice {
    /// For each log, the codes that `--kind` and `--event` choose (both, when both are
    /// given), compiled once against its schema; `None` when neither is given.
    codes: Option<Vec<CodeSet>>,
    threads: Option<Threads>,
    since: Option<f64>,
    until: Option<f64>,
    filter: Option<Filter>,
    /// Each log's thread names, where the filter compares threads by name.
    filter_names: Option<ThreadNames>,
}

/// The threads `--thread` chooses: ids, in every log, and the threads named so, per log.
struct Threads {
    ids: BTreeSet<u64>,
    /// For each log, the ids of the threads that the names given name in it.
    named: Vec<BTreeSet<u64>>,
    /// The names and globs given, for threads named as a live log is read ([`Choice::learn`]).
    wanted: Vec<String>,
}

/// Reads the thread names of each log of `paths` (as `open_all` makes them logs): one more
/// pass over them, made only when `--thread` names a thread.
pub(crate) fn thread_names(paths: &[PathBuf], force: bool) -> Result<ThreadNames> {
    let logs = crate::log::open_all(paths, force)?;
    let mut all = Vec::with_capacity(logs.len());
    for mut log in logs {
        let mut names = BTreeMap::new();
        while let Some(block) = log.next_block() {
            let Ok(block) = block else { continue };
            for entry in block.entries(log.catalog()) {
                if let Entry::Event(e) = entry
                    && let Some(BuiltinEvent::ThreadName { thread, name }) = BuiltinEvent::of(&e)
                {
                    names.insert(thread, name.to_string_lossy().into_owned());
                }
            }
        }
        all.push(names);
    }
    Ok(all)
}

/// A log's named threads, as messages list them.
fn thread_listing(log: &BTreeMap<u64, String>) -> String {
    let all: Vec<String> = log.iter().map(|(t, n)| format!("T{t} ({})", n.escape_debug())).collect();
    if all.is_empty() {
        "none of its threads is named".to_owned()
    } else {
        format!("its threads are {}", all.join(", "))
    }
}

/// `--thread`'s items: numbers (`3`, `T3`) for every log, names and globs of names
/// (`worker-*`) looked up in each log's names (read by `names` only when an item is a name).
/// A name chooses every thread of that name (tokio names all its workers alike), in each log;
/// a name or glob that no thread of any log has is an error that lists the threads.
fn threads(value: &str, logs: usize, names: impl FnOnce() -> Result<ThreadNames>) -> Result<Threads> {
    let items: Vec<&str> = value.split(',').map(str::trim).filter(|x| !x.is_empty()).collect();
    let number = |t: &str| t.strip_prefix('T').unwrap_or(t).parse::<u64>().ok();
    let ids: BTreeSet<u64> = items.iter().filter_map(|t| number(t)).collect();
    let wanted: Vec<String> = items.iter().filter(|t| number(t).is_none()).map(|t| (*t).to_owned()).collect();
    let mut named = vec![BTreeSet::new(); logs];
    if wanted.is_empty() {
        return Ok(Threads { ids, named, wanted });
    }
    let names = names()?;
    for name in &wanted {
        let mut found = false;
        for (file, log) in names.iter().enumerate() {
            let matching: Vec<u64> = log.iter().filter(|(_, n)| glob::matches(name, n)).map(|(t, _)| *t).collect();
            found |= !matching.is_empty();
            named[file].extend(matching);
        }
        if !found {
            let of = names.first().map(thread_listing).unwrap_or_default();
            return Err(DumpError::new(format!(
                "--thread {}: no thread is named so ({of}); give names, globs or ids such as worker-*,1,T3",
                name.escape_debug()
            )));
        }
    }
    Ok(Threads { ids, named, wanted })
}

/// `--kind` or `--event` read in the selection language (a bare word is a kind or an
/// event; `set:Kind`, `set:Kind:Event`, `set:Kind.Event` and `set:*` name sets), each item
/// checked against every log: an item that no log has is an error, and so is an `A:B` that
/// reads both as a kind's event and as a set's kind or event.
fn patterns(value: &Option<String>, word: Word, catalogs: &[Catalog], schemas: &[&Schema]) -> Result<Option<Patterns>> {
    let Some(value) = value else { return Ok(None) };
    let flag = match word {
        Word::Kind => "--kind",
        Word::Event => "--event",
    };
    let bad = |e: event_format::select::SelectError| DumpError::new(format!("{flag} {value}: {e}"));
    let descs: Vec<(u16, &str, &str, &str)> = catalogs
        .iter()
        .flat_map(|c| c.iter().map(|d| (d.wire, d.set.as_str(), d.kind_name.as_str(), d.name.as_str())))
        .collect();
    let patterns = Patterns::parse(value, word).map_err(bad)?.resolve(descs.iter().copied()).map_err(bad)?;
    // Names are qualified in messages when some log holds more than one set.
    let qualified = catalogs.iter().any(Catalog::qualified);
    for p in patterns.items() {
        let in_set = |name: &str| p.set.as_deref().is_none_or(|s| glob::matches(s, name));
        let known = match (&p.kind, &p.event) {
            // A kind alone: a kind of some log, even one without events, or the built-ins'.
            (Some(kind), None) => {
                schemas.iter().any(|s| in_set(&s.name) && s.kinds.iter().any(|k| glob::matches(kind, &k.name)))
                    || (in_set("") && glob::matches(kind, BUILTIN_KIND))
            }
            _ => descs.iter().any(|&(_, s, k, e)| p.matches_in(s, k, e)),
        };
        if known {
            continue;
        }
        let text = &p.text;
        if qualified || p.set.is_some() {
            return Err(unknown_in_sets(flag, p, schemas));
        }
        if let (Some(kind), None) = (&p.kind, &p.event) {
            let names: Vec<&str> = schemas[0].kinds.iter().map(|k| k.name.as_str()).collect();
            let hint = event_format::def::closest(kind, names.iter().copied())
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            return Err(DumpError::new(format!(
                "{flag} {text}: no such kind in the log{hint}; its kinds are {}, Builtin",
                names.join(", ")
            )));
        }
        let names: Vec<&str> = schemas[0].events.iter().map(|e| e.name.as_str()).collect();
        let hint = p
            .event
            .as_deref()
            .and_then(|e| event_format::def::closest(e, names.iter().copied()))
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default();
        return Err(DumpError::new(format!("{flag} {text}: no such event in the log{hint}")));
    }
    Ok(Some(patterns))
}

/// The error for an item of `--kind` or `--event` that no log has, when some log holds more
/// than one set: the nearest name, qualified by its set, and the kinds as `set:Kind`.
fn unknown_in_sets(flag: &str, p: &Pattern, schemas: &[&Schema]) -> DumpError {
    let text = &p.text;
    let sets: Vec<&Schema> = match &p.set {
        Some(set) => schemas.iter().copied().filter(|s| glob::matches(set, &s.name)).collect(),
        None => schemas.to_vec(),
    };
    // An `A:B` that matched nothing either way: a misspelt set is the likelier mistake when
    // `A` is near a set's name.
    let names: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    if p.set_or_kind
        && let Some(near) = p.kind.as_deref().and_then(|a| event_format::def::closest(a, names.iter().copied()))
    {
        return DumpError::new(format!(
            "{flag} {text}: no such set in the log (did you mean `{near}`?); its sets are {}",
            names.join(", ")
        ));
    }
    if sets.is_empty() {
        let set = p.set.as_deref().unwrap_or_default();
        let hint = event_format::def::closest(set, names.iter().copied())
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default();
        return DumpError::new(format!(
            "{flag} {text}: no such set in the log{hint}; its sets are {}",
            names.join(", ")
        ));
    }
    let kinds: Vec<String> =
        sets.iter().flat_map(|s| s.kinds.iter().map(move |k| format!("{}:{}", s.name, k.name))).collect();
    if let (Some(kind), None) = (&p.kind, &p.event) {
        let near = sets
            .iter()
            .flat_map(|s| s.kinds.iter().map(move |k| (s, k)))
            .map(|(s, k)| (format!("{}:{}", s.name, k.name), k.name.as_str()))
            .find(|(_, name)| event_format::def::closest(kind, [*name]).is_some());
        let hint = near.map(|(q, _)| format!(" (did you mean `{q}`?)")).unwrap_or_default();
        return DumpError::new(format!(
            "{flag} {text}: no such kind in the log{hint}; its kinds are {}, Builtin",
            kinds.join(", ")
        ));
    }
    let events: Vec<(String, &str)> = sets
        .iter()
        .flat_map(|s| {
            s.events.iter().map(move |e| {
                let kind = s.kinds.get(usize::from(e.kind)).map_or("?", |k| k.name.as_str());
                (format!("{}:{kind}.{}", s.name, e.name), e.name.as_str())
            })
        })
        .collect();
    let near = p.event.as_deref().and_then(|event| {
        let best = event_format::def::closest(event, events.iter().map(|(_, n)| *n))?;
        events.iter().find(|(_, n)| *n == best).map(|(q, _)| q.clone())
    });
    let hint = near.map(|q| format!(" (did you mean `{q}`?)")).unwrap_or_default();
    DumpError::new(format!("{flag} {text}: no such event in the log{hint}"))
}

impl Choice {
    /// Compiles `select` against the logs' sets; `names` gives the logs' thread names, and is
    /// called only when `--thread` names a thread.
    pub(crate) fn new(
        select: &Select,
        headers: &[&Header],
        names: impl FnOnce() -> Result<ThreadNames>,
    ) -> Result<Choice> {
        // Every set of every log: their kinds, events and parameters.
        let schemas: Vec<&Schema> = headers.iter().flat_map(|h| h.sets.iter().map(|s| &s.schema)).collect();
        let schemas = &schemas[..];
        let catalogs: Vec<Catalog> = headers.iter().map(|h| Catalog::new(&h.sets)).collect();
        let kinds = patterns(&select.kind, Word::Kind, &catalogs, schemas)?;
        let events = patterns(&select.event, Word::Event, &catalogs, schemas)?;
        let codes = (kinds.is_some() || events.is_some()).then(|| {
            catalogs
                .iter()
                .map(|catalog| {
                    // Compiled to wire codes: what a record carries.
                    let descs =
                        || catalog.iter().map(|d| (d.wire, d.set.as_str(), d.kind_name.as_str(), d.name.as_str()));
                    let mut chosen = kinds.iter().chain(&events).map(|patterns| patterns.compile(descs()));
                    let mut codes = chosen.next().unwrap_or_default();
                    for other in chosen {
                        codes.intersect(&other);
                    }
                    codes
                })
                .collect()
        });
        // The logs' thread names, read once, for `--thread` and the filter alike.
        let mut names = Some(names);
        let mut read: Option<ThreadNames> = None;
        let mut thread_names = || -> Result<ThreadNames> {
            if let Some(f) = names.take() {
                read = Some(f()?);
            }
            Ok(read.clone().unwrap_or_default())
        };
        let filter = match &select.filter {
            None => None,
            Some(expr) => {
                let mut params: BTreeSet<(String, ValueType)> = BTreeSet::new();
                for s in schemas {
                    for e in &s.events {
                        let types = e.format.iter().map(|l| ValueType::of_letter(*l));
                        params.extend(e.params.iter().cloned().zip(types));
                    }
                }
                for b in builtin::ALL {
                    let types = b.format.iter().map(|l| ValueType::of_letter(*l));
                    params.extend(b.params.iter().map(|p| (*p).to_owned()).zip(types));
                }
                let typed: Vec<(&str, ValueType)> = params.iter().map(|(n, t)| (n.as_str(), *t)).collect();
                let bad = |e: FilterError| DumpError::new(e.render(expr).replacen("error: ", "", 1));
                let filter = Filter::parse_typed(expr, &typed).map_err(bad)?;
                for (name, column) in filter.event_names() {
                    let mut events = catalogs.iter().flat_map(|c| c.iter());
                    if !events.any(|d| d.name == name) {
                        let all: BTreeSet<&str> =
                            catalogs.iter().flat_map(|c| c.iter().map(|d| d.name.as_str())).collect();
                        let hint = if params.iter().any(|(p, _)| p == "name") {
                            "; an event's parameter called `name` is `args.name`".to_owned()
                        } else {
                            event_format::def::closest(name, all.iter().copied())
                                .map(|near| format!("; did you mean `{near}`?"))
                                .unwrap_or_default()
                        };
                        let message = format!("no event is named `{}` in the log{hint}", name.escape_debug());
                        return Err(bad(FilterError { column, message }));
                    }
                }
                if filter.uses_thread_names() {
                    let logs = thread_names()?;
                    for (name, column) in filter.thread_names() {
                        if !logs.iter().any(|log| log.values().any(|n| n == name)) {
                            let of = logs.first().map(thread_listing).unwrap_or_default();
                            let message = format!(
                                "no thread is named `{}` ({of}); write a name or an id such as T3",
                                name.escape_debug()
                            );
                            return Err(bad(FilterError { column, message }));
                        }
                    }
                }
                Some(filter)
            }
        };
        let threads = match &select.scope.thread {
            None => None,
            Some(value) => Some(threads(value, headers.len(), &mut thread_names)?),
        };
        let filter_names = filter.as_ref().is_some_and(Filter::uses_thread_names).then(|| read.unwrap_or_default());
        Ok(Choice { codes, threads, since: select.scope.since, until: select.scope.until, filter, filter_names })
    }

    /// Learns the name a `ThreadName` event gives its thread, for `--thread`'s names and
    /// globs: a reader of a live log (`follow`, `top`) calls it with each event, so that a
    /// thread named after reading began is chosen when its name matches. (The filter's
    /// thread names are those read at the start.)
    pub(crate) fn learn(&mut self, file: usize, event: &Event<'_>) {
        let Some(threads) = &mut self.threads else { return };
        if threads.wanted.is_empty() {
            return;
        }
        if let Some(BuiltinEvent::ThreadName { thread, name }) = BuiltinEvent::of(event) {
            let name = name.to_string_lossy();
            if threads.wanted.iter().any(|w| glob::matches(w, &name))
                && let Some(named) = threads.named.get_mut(file)
            {
                named.insert(thread);
            }
        }
    }

    /// Whether `--kind` and `--event` let events of `code`, of log `file`, be shown (the
    /// other choices are made event by event).
    pub(crate) fn may_show(&self, file: usize, wire: u16) -> bool {
        self.codes.as_ref().is_none_or(|codes| codes[file].contains(wire))
    }

    /// Whether anything is chosen: any of the options was given.
    pub(crate) fn is_everything(&self) -> bool {
        self.codes.is_none()
            && self.threads.is_none()
            && self.since.is_none()
            && self.until.is_none()
            && self.filter.is_none()
    }

    /// Whether `event`, of log `file`, counts in the histograms the recorder kept (`summary`,
    /// `latency`): every event but a `Histogram` record does (the caller takes it or not);
    /// a `Histogram` record does when `--thread` chooses the thread whose values it counted
    /// (its `thread`, not the writer's thread that wrote it) and its period, from its `since`
    /// to its time, overlaps `--since`/`--until` (it counts whole: a histogram cannot be cut
    /// within its period). `--kind`, `--event` and `--filter` choose events, not these
    /// periods, and leave them all.
    pub(crate) fn keeps_period(&self, file: usize, event: &Event<'_>, clock: &Clock) -> bool {
        let Some(BuiltinEvent::Histogram { thread, since, .. }) = BuiltinEvent::of(event) else { return true };
        if !self.chooses_thread(file, thread) {
            return false;
        }
        let (from, to) = (clock.seconds_since_start(since), clock.seconds_since_start(event.time));
        !(self.until.is_some_and(|u| from >= u) || self.since.is_some_and(|s| to < s))
    }

    /// Whether `--thread` chooses thread `thread` of log `file` (every thread without it).
    fn chooses_thread(&self, file: usize, thread: u64) -> bool {
        self.threads.as_ref().is_none_or(|t| t.ids.contains(&thread) || t.named[file].contains(&thread))
    }

    /// Whether `event`, of log `file`, is shown.
    pub(crate) fn keeps(&self, file: usize, event: &Event<'_>, clock: &Clock) -> bool {
        if let Some(codes) = &self.codes
            && !codes[file].contains(event.desc.wire)
        {
            return false;
        }
        if !self.chooses_thread(file, event.thread) {
            return false;
        }
        if self.since.is_some() || self.until.is_some() {
            // Only when asked: a division per event is a cost `check` and `stats` pay on
            // every record.
            let seconds = clock.seconds_since_start(event.time);
            if self.since.is_some_and(|s| seconds < s) || self.until.is_some_and(|u| seconds >= u) {
                return false;
            }
        }
        match &self.filter {
            Some(f) => {
                let names = self.filter_names.as_ref().and_then(|n| n.get(file));
                f.matches(&FilterEvent { event, clock, names })
            }
            None => true,
        }
    }
}
