//! Triggers: events (and a panic, and lost events) that make a recording write a snapshot of
//! the window around them by itself, under any policy (`EVENT_TRIGGER`,
//! [`Recorder::trigger`](crate::Recorder::trigger); docs/guide/keeping-the-incident.md).
//!
//! ```text
//! EVENT_TRIGGER = trigger ( ";" trigger )*
//! trigger       = what [ " if " condition ] ( "," option )*
//! what          = a selection (EVENT_CONTROL's grammar: `Req:ReqEnd`, `Req`) | "panic" | "lost"
//! condition     = event-dump's filter language (`status >= 500 && path ~ "/api/*"`)
//! option        = "post=" ( N | DURATION )          events of the triggering thread, or a time, to keep after it
//!               | "pre=" DURATION                    the time to keep before it (default: what the buffer holds)
//!               | "every=" ( N | "once" | N "/" DURATION )   the rate policy
//! DURATION      = digits and `us`, `ms` or `s` (at most 60 s)
//! ```
//!
//! The rate policy: `every=N` takes the 1st match, the (N+1)th, ...; `every=once` the first
//! only; `every=N/PERIOD` at most N in each PERIOD. Without one, `every=1/1s`. What it does
//! not take is counted, and the next snapshot it takes says how many (its header's
//! `not_taken`). Snapshots go to `EVENT_SNAPSHOT` ([`Recorder::snapshots`](crate::Recorder::snapshots)),
//! a pattern as `EVENT_FILE`'s with `%s`, the snapshot's sequence number.
//!
//! # Cost
//!
//! A recording without triggers and pins records every event as it did before triggers
//! existed: nothing on the path of an event looks at them. The events a trigger or a pin
//! names are *watched*: at the start each sets its bit (its index in its set, mod 64) in the
//! divert word that `event!` already tests (`capture`'s module docs, "The hook"), and only an
//! event whose bit is set there takes the cold path, where `ThreadBuffer::watched` looks its
//! wire code up, copies a pinned record into the pin ring (and the ring file's pin area),
//! decodes a trigger event, evaluates its condition and asks its rate policy. Events of other
//! sets, or of the same set at an index 64 apart, that share a watched event's bit take the
//! cold path too, find that they are not watched, and return (about 40 instructions). While
//! a thread counts its `post=N` events, the divert word is all ones, so that every event
//! takes the cold path to be counted; it goes back when the count is done.
//!
//! The diverted path is one call out of line (`__private`'s `diverted`), so that it takes no
//! register of the common path in the caller's code: callgrind on `benches/examples/emit_probe`
//! (`Word3`, `EVENT_POLICY=ring EVENT_PACK=off`) counts 88.97 instructions an event, with or
//! without a trigger on another event: fewer than before triggers existed (101.95 at
//! 4d39099), since `event!` loads the divert word once (`__private::route`) and the record's
//! room and commit take one match of the thread's home (`buffer`).
//!
//! Pinned events (`EVENT_PIN`, [`Recorder::pin`](crate::Recorder::pin)) are watched the same
//! way: the cold path copies their records into the pin ring (the latest [`PIN_RECORDS`]),
//! which every snapshot holds (`snapshot`'s `pinned_blocks`), and, in a recording with a ring
//! file, into the file's pin area (`RingFile::pin`, with the thread's `ThreadName` record
//! the first time a thread pins), which a reader of the file puts back before each thread's
//! ring (docs/FORMAT.md, "Pin area").
//!
//! The snapshot itself is written by the writer thread (or, for a panic, by the panicking
//! thread in the panic hook), never by the thread that recorded the trigger. That thread keeps
//! its own window, though: under `ring` it copies its ring when the trigger matches (and,
//! during a `post=N` window, each block as it finishes), so that nothing it records before the
//! writer comes can overwrite it (`buffer`'s `own_ring`, `trigger::Pending::held`); under a
//! streaming policy nothing needs copying, and the budget holds while the snapshot waits
//! (`pending_count`).

use crate::config::ConfigError;
use event_format::filter::Filter;
use event_format::schema::Schema;
use event_format::wire::{Header, SnapshotCause};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Why a snapshot is taken, as its header says.
#[derive(Clone, Debug)]
pub(crate) struct Cause {
    pub(crate) cause: SnapshotCause,
    pub(crate) trigger_code: u16,
    /// When it fired, in the recording's ticks; `None` on demand (the snapshot's own time).
    pub(crate) trigger_time: Option<u64>,
    pub(crate) trigger: String,
    pub(crate) not_taken: u64,
    /// How long before the trigger the snapshot reaches (`pre=`); `None`: what the buffer
    /// holds.
    pub(crate) pre: Option<Duration>,
    /// The end of the window, in the recording's ticks: the time of the triggering thread's
    /// last `post=N` event, the trigger's time plus `post=DURATION`, or the trigger's time
    /// without `post=`; `None` on demand (the snapshot's own time). Blocks that start after it
    /// are left out (the writer thread may take the snapshot a while later).
    pub(crate) until: Option<u64>,
}

impl Cause {
    /// A snapshot asked for, from code or through the control page.
    pub(crate) fn on_demand() -> Cause {
        Cause {
            cause: SnapshotCause::OnDemand,
            trigger_code: 0,
            trigger_time: None,
            trigger: String::new(),
            not_taken: 0,
            pre: None,
            until: None,
        }
    }
}

/// The snapshot pattern without `EVENT_SNAPSHOT`.
pub(crate) const DEFAULT_SNAPSHOT: &str = "%n-%p-%r-snapshot-%s.evt";

/// What fires a trigger.
#[derive(Debug, Clone, PartialEq)]
enum What {
    /// Events, by wire code.
    Events(Vec<u16>),
    Panic,
    Lost,
}

/// How much to keep after the trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Post {
    /// Nothing: the snapshot is taken at once.
    None,
    /// The next N events of the thread that recorded the trigger.
    Events(u64),
    /// What is recorded in this time.
    Time(Duration),
}

/// The rate policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Every {
    Nth(u64),
    Once,
    Per(u64, Duration),
}

/// One trigger, as configured.
#[derive(Debug)]
struct Trigger {
    text: String,
    what: What,
    filter: Option<Filter>,
    post: Post,
    /// `pre=`: how long before the trigger the snapshot reaches; `None`, what the buffer
    /// holds (the rings, or as much of the stream).
    pre: Option<Duration>,
    every: Every,
    state: Mutex<RateState>,
}

#[derive(Debug, Default)]
struct RateState {
    matches: u64,
    declined: u64,
    window: Option<(Instant, u64)>,
}

/// The longest a snapshot waits for its `post=` window.
const MAX_POST: Duration = Duration::from_secs(60);

/// The pinned events a recording keeps apart in memory (the latest ones; older ones leave
/// the ring, counted).
pub(crate) const PIN_RECORDS: usize = 256;

/// The pin ring, in memory, and what the ring file's pin area holds: one lock for both, taken
/// only by a thread that records a pinned event (and by a snapshot, to copy it).
#[derive(Debug, Default)]
struct PinRing {
    memory: std::collections::VecDeque<Pinned>,
    /// Pinned records that left `memory` to make room.
    dropped: u64,
    file: crate::blocks::ringfile::FilePins,
    /// The names of the threads that pinned events, for the segments that repeat them after
    /// the thread ended (and the recording forgot its name).
    names: std::collections::BTreeMap<u64, String>,
}

/// A pinned event: a copy of its record (header and arguments), its thread and its time, and
/// the number of the block that holds it (its thread's, in the recording).
#[derive(Debug, Clone)]
pub(crate) struct Pinned {
    /// The number of the block of its thread that holds it: a new segment repeats the pinned
    /// events of blocks written before it (`sink::Sinks::repeat_pins`).
    pub(crate) sequence: u64,
    pub(crate) thread: u64,
    pub(crate) time: u64,
    pub(crate) record: Vec<u8>,
}

/// A snapshot a trigger decided to take, waiting for its `post` window.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) cause: Cause,
    /// `Some` while the triggering thread still counts its `post=N` events.
    pub(crate) counting: bool,
    pub(crate) at: Instant,
    pub(crate) post: Post,
    pub(crate) id: u64,
    /// The blocks the triggering thread copied of its own ring (`ring` policy): at the
    /// trigger, back to its ring's capacity, and, with `post=N`, when the N events are
    /// recorded (docs/guide/keeping-the-incident.md, "A trigger holds itself"). Finished,
    /// unsealed; the snapshot takes them with the rings it copies then.
    pub(crate) held: Vec<Box<[u8]>>,
}

/// A match that its trigger's rate policy took: the snapshot to make pending
/// ([`Triggers::push_admitted`]), once the triggering thread has copied its ring.
#[derive(Debug)]
pub(crate) struct Admitted {
    cause: Cause,
    post: Post,
}

impl Admitted {
    /// How long before the trigger its snapshot reaches (`pre=`).
    pub(crate) fn pre(&self) -> Option<Duration> {
        self.cause.pre
    }

    /// How many of its thread's events the snapshot waits for (`post=N`, N > 0).
    pub(crate) fn post_events(&self) -> Option<u64> {
        match self.post {
            Post::Events(n) if n > 0 => Some(n),
            _ => None,
        }
    }
}

/// A recording's triggers.
#[derive(Debug)]
pub(crate) struct Triggers {
    list: Vec<Trigger>,
    /// The wire codes of the pinned events (`EVENT_PIN`), and their ring: the latest
    /// [`PIN_RECORDS`] of them, each a copy of its record with its thread and time.
    pinned: Vec<u16>,
    pin_ring: Mutex<PinRing>,
    /// The wire codes of the events a trigger or a pin names, sorted.
    watched: Vec<u16>,
    /// Their bits in the divert word (`divert::watch`): bit `index % 64` of each, by its
    /// index in its set.
    pub(crate) mask: u64,
    /// Where snapshots go: a pattern (`%s` its sequence number, ...).
    pub(crate) pattern: PathBuf,
    pub(crate) pending: Mutex<Vec<Pending>>,
    /// Held while pending snapshots are taken: by the writer thread as it serves them
    /// (`snapshot::serve`, which tries it and leaves its turn when the stop holds it), and by
    /// the stop for the last ones (`snapshot::at_stop`, which waits for a writer that is
    /// taking some), so that the stop never turns a snapshot the writer took out of the list
    /// into one taken while the recording is stopping.
    pub(crate) serving: Mutex<()>,
    /// Snapshots made pending and not yet taken (or given up): while it is above 0, a
    /// streaming recording's history and its disk budget let nothing go (`history`,
    /// `segments`), so that the window of a snapshot that waits for its `post=` is still there
    /// when it is taken.
    pub(crate) pending_count: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    next_id: std::sync::atomic::AtomicU64,
    /// The losses counted at the last look (`snapshot::serve`), for the `lost` trigger.
    pub(crate) lost_seen: std::sync::atomic::AtomicU64,
}

/// Parses `text` (`EVENT_TRIGGER`'s grammar, module docs) and `pin` (`EVENT_PIN`: a
/// selection, the events kept in the pin ring) against the recording's header.
pub(crate) fn parse(
    text: Option<&str>,
    pin: Option<&str>,
    header: &Header,
    pattern: PathBuf,
) -> Result<Triggers, ConfigError> {
    let schemas: Vec<&Schema> = header.sets.iter().map(|s| &s.schema).collect();
    let mut list = Vec::new();
    if let Some(text) = text {
        let error = |message: String| ConfigError::env("EVENT_TRIGGER", text, message);
        for one in text.split(';').map(str::trim).filter(|t| !t.is_empty()) {
            list.push(parse_one(one, header, &schemas).map_err(error)?);
        }
        if list.is_empty() {
            return Err(error("names no trigger; write one such as `Req:ReqEnd if status >= 500`".into()));
        }
    }
    let pinned = match pin {
        Some(pin) => codes(pin, header, &schemas).map_err(|message| ConfigError::env("EVENT_PIN", pin, message))?,
        None => Vec::new(),
    };
    let mut watched: Vec<u16> = list
        .iter()
        .flat_map(|t| if let What::Events(c) = &t.what { c.clone() } else { Vec::new() })
        .chain(pinned.iter().copied())
        .collect();
    watched.sort_unstable();
    watched.dedup();
    // Each code's index in its set: the generated `event!` knows its event by that index.
    let mask = watched
        .iter()
        .filter_map(|&code| {
            header.sets.iter().find_map(|set| {
                let (first, last) = set.range()?;
                (first..=last).contains(&code).then(|| 1u64 << ((code - first) % 64))
            })
        })
        .fold(0, |mask, bit| mask | bit);
    Ok(Triggers {
        list,
        pinned,
        pin_ring: Mutex::default(),
        watched,
        mask,
        pattern,
        pending: Mutex::new(Vec::new()),
        serving: Mutex::new(()),
        pending_count: std::sync::Arc::default(),
        next_id: std::sync::atomic::AtomicU64::new(1),
        lost_seen: std::sync::atomic::AtomicU64::new(0),
    })
}

fn parse_one(text: &str, header: &Header, schemas: &[&Schema]) -> Result<Trigger, String> {
    // Options from the end: a condition may hold commas (in quotes), an option never does.
    let mut head = text;
    let (mut post, mut every, mut pre) = (Post::None, Every::Per(1, Duration::from_secs(1)), None);
    while let Some((before, after)) = head.rsplit_once(',') {
        let option = after.trim();
        if let Some(v) = option.strip_prefix("post=") {
            post = parse_post(v.trim())?;
        } else if let Some(v) = option.strip_prefix("pre=") {
            let d = crate::config::parse_duration(v.trim()).map_err(|e| format!("pre={}: {e}", v.trim()))?;
            if d.is_zero() {
                return Err(format!("pre={} keeps nothing before the trigger; write a duration above 0", v.trim()));
            }
            pre = Some(d);
        } else if let Some(v) = option.strip_prefix("every=") {
            every = parse_every(v.trim())?;
        } else {
            break;
        }
        head = before;
    }
    let (what_text, condition) = match head.split_once(" if ") {
        Some((w, c)) => (w.trim(), Some(c.trim())),
        None => (head.trim(), None),
    };
    let what = match what_text {
        "panic" => What::Panic,
        "lost" => What::Lost,
        _ => What::Events(codes(what_text, header, schemas)?),
    };
    let filter = match condition {
        Some(c) => {
            let What::Events(codes) = &what else {
                return Err(format!("`{what_text}` takes no condition; a condition is for events"));
            };
            let catalog = event_format::decode::Catalog::new(&header.sets);
            let mut params: Vec<&str> = Vec::new();
            for code in codes {
                if let Some(d) = catalog.get(*code) {
                    params.extend(d.params.iter().map(String::as_str));
                }
            }
            Some(Filter::parse(c, &params).map_err(|e| format!("its condition `{c}`, {e}"))?)
        }
        None => None,
    };
    if what == What::Panic && post != Post::None {
        return Err("`panic` takes no post=: the snapshot is taken as the thread panics".into());
    }
    Ok(Trigger { text: text.to_owned(), what, filter, post, pre, every, state: Mutex::default() })
}

/// The wire codes of the events `selection` names (EVENT_CONTROL's grammar).
fn codes(selection: &str, header: &Header, schemas: &[&Schema]) -> Result<Vec<u16>, String> {
    let selections = event_format::select::from_env_text(selection, schemas).map_err(|e| e.to_string())?;
    let mut codes = Vec::new();
    for (set, selection) in header.sets.iter().zip(&selections) {
        for event in &set.schema.events {
            if selection.records(event)
                && let Some(wire) = set.wire_code_of(event.code)
            {
                codes.push(wire);
            }
        }
    }
    if codes.is_empty() {
        return Err(format!("`{selection}` names no event; name one as EVENT_CONTROL does (`Set:Event`, `Kind`)"));
    }
    Ok(codes)
}

fn parse_post(v: &str) -> Result<Post, String> {
    if v.bytes().all(|b| b.is_ascii_digit()) && !v.is_empty() {
        return v.parse().map(Post::Events).map_err(|_| format!("post={v} is too large"));
    }
    crate::config::parse_duration(v).map(Post::Time).map_err(|e| format!("post={v}: {e}"))
}

fn parse_every(v: &str) -> Result<Every, String> {
    if v == "once" {
        return Ok(Every::Once);
    }
    if let Some((n, period)) = v.split_once('/') {
        let n: u64 = n.trim().parse().map_err(|_| format!("every={v}: `{n}` is not a count"))?;
        let period = crate::config::parse_duration(period.trim()).map_err(|e| format!("every={v}: {e}"))?;
        if n == 0 || period.is_zero() {
            return Err(format!("every={v} takes nothing; write at least 1 per a period above 0"));
        }
        return Ok(Every::Per(n, period));
    }
    match v.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Every::Nth(n)),
        _ => Err(format!("every={v}: write a count (every=10), `once`, or a rate (every=2/1s)")),
    }
}

impl Trigger {
    /// A match: whether the rate policy takes it, and how many it declined before it.
    fn admit(&self, now: Instant) -> Option<u64> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.matches += 1;
        let take = match self.every {
            Every::Nth(n) => (s.matches - 1).is_multiple_of(n),
            Every::Once => s.matches == 1,
            Every::Per(n, period) => {
                let (start, count) = match s.window {
                    Some((start, count)) if now.duration_since(start) < period => (start, count),
                    _ => (now, 0),
                };
                let take = count < n;
                s.window = Some((start, if take { count + 1 } else { count }));
                take
            }
        };
        if take {
            Some(std::mem::take(&mut s.declined))
        } else {
            s.declined += 1;
            None
        }
    }

    fn cause(&self, cause: SnapshotCause, code: u16, time: u64, declined: u64) -> Cause {
        Cause {
            cause,
            trigger_code: code,
            trigger_time: Some(time),
            trigger: self.text.clone(),
            not_taken: declined,
            pre: self.pre,
            until: None,
        }
    }
}

impl Triggers {
    /// One line (without a prefix) for each trigger and pin that cannot take effect as the
    /// recording starts: a trigger whose events the selection records none of (it cannot
    /// fire until `event-dump control` enables one), pinned events the selection does not
    /// record. The start says them on stderr; the recording goes on (the selection may change
    /// while it runs).
    pub(crate) fn ineffective(&self, header: &Header, selections: &[event_format::select::Selection]) -> Vec<String> {
        let name_of = |code: u16| -> Option<(String, bool)> {
            header.sets.iter().zip(selections).find_map(|(set, selection)| {
                let event = set.schema.events.iter().find(|e| set.wire_code_of(e.code) == Some(code))?;
                let kind = set.schema.kinds.get(usize::from(event.kind)).map_or("", |k| k.name.as_str());
                let name = if header.sets.len() > 1 {
                    format!("{}:{kind}:{}", set.schema.name, event.name)
                } else {
                    format!("{kind}:{}", event.name)
                };
                Some((name, selection.records(event)))
            })
        };
        let unrecorded = |codes: &[u16]| -> (Vec<String>, bool) {
            let named: Vec<(String, bool)> = codes.iter().filter_map(|&c| name_of(c)).collect();
            let any = named.iter().any(|(_, on)| *on);
            (named.into_iter().filter(|(_, on)| !on).map(|(n, _)| n).collect(), any)
        };
        let mut lines = Vec::new();
        for trigger in &self.list {
            if let What::Events(codes) = &trigger.what
                && let (off, false) = unrecorded(codes)
            {
                lines.push(format!(
                    "EVENT_TRIGGER `{}` cannot fire: the selection (EVENT_CONTROL) records none of its events ({}); enable them (EVENT_CONTROL, event-dump control RING --enable) or change the trigger",
                    trigger.text,
                    off.join(", ")
                ));
            }
        }
        let (off, _) = unrecorded(&self.pinned);
        if !off.is_empty() {
            lines.push(format!(
                "EVENT_PIN keeps nothing of {}: the selection (EVENT_CONTROL) does not record them; enable them or change the pin",
                off.join(", ")
            ));
        }
        lines
    }

    /// Whether any trigger is configured (not only pins): snapshots may be written.
    pub(crate) fn fires(&self) -> bool {
        !self.list.is_empty()
    }

    /// Whether `code` is a trigger event's.
    pub(crate) fn is_trigger(&self, code: u16) -> bool {
        self.for_code(code).is_some()
    }

    /// Whether `code` is a pinned event's.
    pub(crate) fn is_pinned(&self, code: u16) -> bool {
        self.pinned.contains(&code)
    }

    /// Whether `code` is watched: a trigger event's or a pinned event's.
    pub(crate) fn watches(&self, code: u16) -> bool {
        self.watched.binary_search(&code).is_ok()
    }

    /// Whether any event is pinned (`EVENT_PIN`): a ring file then gets a pin area.
    pub(crate) fn pins_any(&self) -> bool {
        !self.pinned.is_empty()
    }

    /// Keeps a pinned event's record in the pin ring (the oldest leaves when it is full,
    /// counted) and, with a ring file that has a pin area, in that area, after the thread's
    /// `ThreadName` record (`name`: the record's bytes) when the area holds none of it.
    pub(crate) fn pin(
        &self,
        pinned: Pinned,
        file: Option<&crate::blocks::ringfile::RingFile>,
        name: impl FnOnce() -> Option<Vec<u8>>,
        thread_name: impl FnOnce() -> Option<String>,
    ) {
        let mut ring = self.pin_ring.lock().unwrap_or_else(|p| p.into_inner());
        let ring = &mut *ring;
        if !ring.names.contains_key(&pinned.thread)
            && let Some(n) = thread_name()
        {
            ring.names.insert(pinned.thread, n);
        }
        if let Some(file) = file.filter(|f| f.has_pins() && !f.is_lost()) {
            if !ring.file.holds(pinned.thread, event_format::builtin::THREAD_NAME)
                && let Some(name) = name()
            {
                file.pin(&mut ring.file, pinned.thread, pinned.time, &name);
            }
            file.pin(&mut ring.file, pinned.thread, pinned.time, &pinned.record);
        }
        if ring.memory.len() == PIN_RECORDS {
            ring.memory.pop_front();
            ring.dropped += 1;
        }
        ring.memory.push_back(pinned);
    }

    /// The pinned events kept now, oldest first.
    pub(crate) fn pinned_now(&self) -> Vec<Pinned> {
        self.pin_ring.lock().unwrap_or_else(|p| p.into_inner()).memory.iter().cloned().collect()
    }

    /// The names of the threads whose pinned events the pin ring holds.
    pub(crate) fn pinned_names(&self) -> Vec<(u64, String)> {
        let ring = self.pin_ring.lock().unwrap_or_else(|p| p.into_inner());
        let threads: std::collections::BTreeSet<u64> = ring.memory.iter().map(|p| p.thread).collect();
        ring.names.iter().filter(|(t, _)| threads.contains(t)).map(|(t, n)| (*t, n.clone())).collect()
    }

    /// Pinned events that left the in-memory pin ring to make room for newer ones.
    pub(crate) fn pins_dropped(&self) -> u64 {
        self.pin_ring.lock().unwrap_or_else(|p| p.into_inner()).dropped
    }

    /// The event trigger that `code` fires, if any.
    fn for_code(&self, code: u16) -> Option<&Trigger> {
        self.list.iter().find(|t| matches!(&t.what, What::Events(c) if c.contains(&code)))
    }

    /// A trigger event was recorded (`event`, decoded): whether it matches and its rate
    /// policy takes it. The triggering thread then copies its ring (under `ring`) and makes
    /// the snapshot pending ([`push_admitted`](Self::push_admitted)).
    pub(crate) fn on_event(
        &self,
        event: &event_format::decode::Event<'_>,
        clock: &event_format::wire::Clock,
    ) -> Option<Admitted> {
        let trigger = self.for_code(event.desc.wire)?;
        if let Some(filter) = &trigger.filter {
            let seen = event_format::filter::FilterEvent { event, clock, names: None };
            if !filter.matches(&seen) {
                return None;
            }
        }
        let declined = trigger.admit(Instant::now())?;
        Some(Admitted {
            cause: trigger.cause(SnapshotCause::Event, event.desc.wire, event.time, declined),
            post: trigger.post,
        })
    }

    /// Makes an admitted match's snapshot pending, with the blocks its thread `held` (its
    /// own ring's, copied on its cold path); returns its id. With `post=N`, the snapshot
    /// waits until the thread says it [`counted`](Self::counted) its N events; otherwise it
    /// is ready (at once, or after `post=DURATION`), and the writer thread is woken (`wake`)
    /// to take it now rather than at its next turn.
    pub(crate) fn push_admitted(
        &self,
        admitted: Admitted,
        held: Vec<Box<[u8]>>,
        ticks_per_second: u64,
        wake: impl FnOnce(),
    ) -> u64 {
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let counting = admitted.post_events().is_some();
        let now_ready = admitted.post == Post::None;
        let mut cause = admitted.cause;
        let at = cause.trigger_time.unwrap_or(0);
        cause.until = match admitted.post {
            Post::None | Post::Events(0) => Some(at),
            Post::Time(d) => {
                Some(at.saturating_add((d.as_nanos() * u128::from(ticks_per_second) / 1_000_000_000) as u64))
            }
            // Set when the thread counted its events (`counted`).
            Post::Events(_) => None,
        };
        self.push(Pending { cause, counting, at: Instant::now(), post: admitted.post, id, held });
        if now_ready {
            wake();
        }
        id
    }

    /// The triggering thread has recorded its `post=N` events for snapshot `id`, the last at
    /// `last` (ticks), and copied the blocks of its ring that hold them (`held`, from the
    /// trigger's block on; empty when the recording streams).
    pub(crate) fn counted(&self, id: u64, last: u64, held: Vec<Box<[u8]>>) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pending.iter_mut().find(|p| p.id == id) {
            p.counting = false;
            p.cause.until = Some(last);
            p.held.extend(held);
        }
    }

    /// Events were lost: the `lost` trigger's snapshot, if there is one and its policy takes it.
    pub(crate) fn on_lost(&self, now: u64) {
        if let Some(trigger) = self.list.iter().find(|t| t.what == What::Lost)
            && let Some(declined) = trigger.admit(Instant::now())
        {
            let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.push(Pending {
                cause: trigger.cause(SnapshotCause::Lost, 0, now, declined),
                counting: false,
                at: Instant::now(),
                post: trigger.post,
                id,
                held: Vec::new(),
            });
        }
    }

    /// The `panic` trigger's cause, when there is one and its policy takes this panic.
    pub(crate) fn on_panic(&self, now: u64) -> Option<Cause> {
        let trigger = self.list.iter().find(|t| t.what == What::Panic)?;
        let declined = trigger.admit(Instant::now())?;
        Some(trigger.cause(SnapshotCause::Panic, 0, now, declined))
    }

    /// Every pending snapshot, ready or not (the stop takes them: their `post` windows end
    /// with the recording).
    pub(crate) fn all_pending(&self) -> Vec<Pending> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// One line per trigger whose rate policy declined snapshots that no later snapshot
    /// counted (the stop says them: `every=once`'s, or those after the last one taken).
    pub(crate) fn declined_lines(&self) -> Vec<String> {
        self.list
            .iter()
            .filter_map(|t| {
                let declined = t.state.lock().unwrap_or_else(|p| p.into_inner()).declined;
                (declined > 0).then(|| {
                    format!(
                        "the trigger `{}` matched {declined} more times than its rate policy took snapshots",
                        t.text
                    )
                })
            })
            .collect()
    }

    /// Whether a `lost` trigger is configured.
    pub(crate) fn watches_losses(&self) -> bool {
        self.list.iter().any(|t| t.what == What::Lost)
    }

    fn push(&self, pending: Pending) {
        // Relaxed: read by the writer thread as a hint that holds the history and the budget;
        // the pending list itself is under its lock.
        self.pending_count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).push(pending);
    }

    /// A pending snapshot was taken (or could not be): the history and the budget may let
    /// its window go.
    pub(crate) fn taken(&self) {
        let _ = self.pending_count.fetch_update(
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
            |n| n.checked_sub(1),
        );
    }

    /// The longest `pre=` of the triggers, if any gives one.
    pub(crate) fn longest_pre(&self) -> Option<Duration> {
        self.list.iter().filter_map(|t| t.pre).max()
    }

    /// The pending snapshots whose `post` window is over, taken out.
    pub(crate) fn ready(&self, now: Instant) -> Vec<Pending> {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let (ready, waiting): (Vec<Pending>, Vec<Pending>) = pending.drain(..).partition(|p| match p.post {
            Post::None => true,
            // A thread that never records its N events holds the window (and a streaming
            // recording's budget) for a minute at most, as `post=DURATION` may.
            Post::Events(_) => !p.counting || now.duration_since(p.at) >= MAX_POST,
            Post::Time(d) => now.duration_since(p.at) >= d,
        });
        *pending = waiting;
        ready
    }

    /// The path of snapshot `sequence`: the pattern expanded, `%s` the sequence number (or,
    /// without `%s`, `.N` before the extension).
    pub(crate) fn path(&self, sequence: u32) -> Result<PathBuf, String> {
        snapshot_path(&self.pattern, sequence)
    }
}

/// `pattern` expanded for snapshot `sequence` (module docs).
pub(crate) fn snapshot_path(pattern: &Path, sequence: u32) -> Result<PathBuf, String> {
    let text = pattern.to_string_lossy();
    let with_sequence = if text.contains("%s") {
        PathBuf::from(text.replace("%s", &sequence.to_string()))
    } else {
        match (pattern.file_stem(), pattern.extension()) {
            (Some(stem), Some(ext)) => {
                pattern.with_file_name(format!("{}.{sequence}.{}", stem.to_string_lossy(), ext.to_string_lossy()))
            }
            _ => PathBuf::from(format!("{text}.{sequence}")),
        }
    };
    crate::files::expand_process(&with_sequence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_policies() {
        let t0 = Instant::now();
        let trigger = |every| Trigger {
            text: String::new(),
            what: What::Panic,
            filter: None,
            post: Post::None,
            pre: None,
            every,
            state: Mutex::default(),
        };
        let nth = trigger(Every::Nth(3));
        let taken: Vec<Option<u64>> = (0..7).map(|_| nth.admit(t0)).collect();
        assert_eq!(taken, [Some(0), None, None, Some(2), None, None, Some(2)]);
        let once = trigger(Every::Once);
        let taken: Vec<Option<u64>> = (0..3).map(|_| once.admit(t0)).collect();
        assert_eq!(taken, [Some(0), None, None]);
        let per = trigger(Every::Per(2, Duration::from_secs(1)));
        let at = |ms| t0 + Duration::from_millis(ms);
        let taken: Vec<Option<u64>> = [0, 10, 20, 999, 1000, 1001].into_iter().map(|ms| per.admit(at(ms))).collect();
        assert_eq!(taken, [Some(0), Some(0), None, None, Some(2), Some(0)]);
    }

    #[test]
    fn options_and_paths() {
        assert_eq!(parse_post("100").unwrap(), Post::Events(100));
        assert_eq!(parse_post("50ms").unwrap(), Post::Time(Duration::from_millis(50)));
        assert!(parse_post("5m").is_err());
        assert_eq!(parse_every("once").unwrap(), Every::Once);
        let header = Header::with_sets(
            Vec::new(),
            1024,
            event_format::wire::Clock::deterministic(),
            event_format::wire::Producer::current(0),
        );
        let schemas: Vec<&Schema> = Vec::new();
        assert!(parse_one("panic, pre=0s", &header, &schemas).unwrap_err().contains("keeps nothing"));
        assert!(parse_one("panic, pre=2m", &header, &schemas).unwrap_err().contains("pre=2m"));
        assert_eq!(parse_one("panic, pre=250ms", &header, &schemas).unwrap().pre, Some(Duration::from_millis(250)));
        assert_eq!(parse_every("10").unwrap(), Every::Nth(10));
        assert_eq!(parse_every("2/1s").unwrap(), Every::Per(2, Duration::from_secs(1)));
        assert!(parse_every("0").is_err() && parse_every("0/1s").is_err() && parse_every("x").is_err());
        assert_eq!(snapshot_path(Path::new("/t/s-%s.evt"), 3).unwrap(), PathBuf::from("/t/s-3.evt"));
        assert_eq!(snapshot_path(Path::new("/t/s.evt"), 3).unwrap(), PathBuf::from("/t/s.3.evt"));
    }
}
