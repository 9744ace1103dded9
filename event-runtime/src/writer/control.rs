//! Control: which events are recorded, by set, kind and event (design.mps.telemetry
//! `.control`; docs/EVENT-SETS.md, decision 4).
//!
//! The hot path reads one bit per event from its set's control bits (`EventSet`, one bit
//! per event by its index in the set): one relaxed atomic load and a bit test on a static.
//! Those bits are what the running [`Selection`] of each recorded set (a kind mask and
//! per-event overrides) says of its events; changing a selection writes the bits again,
//! under a lock, off the hot path. A set the recording does not hold keeps its bits clear.
//!
//! Relaxed loads suffice: an enable bit only decides whether to record; a thread that sees a
//! change a little late records (or skips) a few events more, and nothing else depends on it
//! (an event of a set that the recording does not hold is refused by the thread buffer).
//!
//! The selection is set in one language ([`event_format::select`]) wherever it comes from:
//! the environment at start-up (`EVENT_CONTROL`), [`apply`] in the program, and another
//! process through the ring file (`event-dump control`). The whole API:
//!
//! - [`apply`] changes the selection by a text (`"Pool -Pool:PoolInit"`), [`describe`]
//!   writes it as one;
//! - [`selection`] and [`set_selection`] read and replace it as data, for programs that
//!   compute kind masks (`events::Kind::Pool.mask()`) or per-event overrides: the
//!   recording's only set's, or ([`selection_of`], [`set_selection_of`]) one set's;
//! - [`is_enabled`] says whether an event is recorded now.

use crate::emit::session::Shared;
use crate::event_set::EventSet;
use crate::locks::lock;
use event_format::ring::{LIMIT_REQUEST, ROTATE_REQUEST, SNAPSHOT_REQUEST};
use event_format::schema::Schema;
pub use event_format::select::{SelectError, Selection};
use std::sync::Mutex;

/// A recorded set: its static (whose bits are written here) and its schema, as the
/// stream's header names it.
#[derive(Debug)]
pub(crate) struct Recorded {
    pub(crate) set: &'static EventSet,
    pub(crate) schema: Schema,
}

/// What the enable bits are derived from.
#[derive(Debug)]
struct State {
    /// Whether a recording runs (every bit is 0 when none does).
    running: bool,
    /// The sets of the running (or last) recording, in the header's order.
    sets: Vec<Recorded>,
    /// One selection per set of `sets`.
    selections: Vec<Selection>,
}

static STATE: Mutex<State> = Mutex::new(State { running: false, sets: Vec::new(), selections: Vec::new() });

fn state() -> std::sync::MutexGuard<'static, State> {
    // The state is plain data whose every update is complete before the lock is released;
    // a panic elsewhere while holding it cannot leave it half-written.
    STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Writes every set's control bits from its selection (all clear when no recording runs).
fn publish(state: &State) {
    for (i, recorded) in state.sets.iter().enumerate() {
        match state.selections.get(i) {
            Some(selection) if state.running => {
                let events = &recorded.schema.events;
                recorded.set.set_bits(events.len(), |j| selection.records(&events[j]));
            }
            _ => recorded.set.clear_bits(),
        }
    }
}

/// The schemas of `sets`, in order, as the selection language takes them.
fn schemas(sets: &[Recorded]) -> Vec<&Schema> {
    sets.iter().map(|r| &r.schema).collect()
}

/// The selections that an `EVENT_CONTROL` text means for `sets`, one per set.
pub(crate) fn from_text(text: &str, sets: &[&Schema]) -> Result<Vec<Selection>, SelectError> {
    event_format::select::from_env_text(text, sets)
}

/// The selection, held across `fork()` (`fork`'s module docs), so that the child never finds
/// it locked by a thread that does not exist there.
#[derive(Debug)]
pub(crate) struct ForkHold(std::sync::MutexGuard<'static, State>);

/// Takes the selection for a `fork()`.
pub(crate) fn hold_for_fork() -> ForkHold {
    ForkHold(state())
}

impl ForkHold {
    /// In the child just after `fork()`: a child that records nothing (`EVENT_FORK=off`)
    /// turns every event off, so that each costs one branch. Atomic stores only (the sets
    /// are read, never moved or freed).
    pub(crate) fn in_child(self, records: bool) {
        if !records {
            for recorded in &self.0.sets {
                recorded.set.clear_bits_after_fork();
            }
        }
    }
}

/// Makes `sets` the recorded ones, each with its selection, and writes their bits.
pub(crate) fn install(sets: Vec<Recorded>, selections: Vec<Selection>) {
    let mut s = state();
    // The previous recording's sets are clear already (`uninstall`).
    s.sets = sets;
    s.selections = selections;
    s.running = true;
    publish(&s);
}

/// Clears every recorded set's bits: the recording stops.
pub(crate) fn uninstall() {
    let mut s = state();
    s.running = false;
    publish(&s);
}

/// The selections of the running recording's sets, in order (a forked child starts from
/// them).
pub(crate) fn selections() -> Vec<Selection> {
    state().selections.clone()
}

/// Whether an event with `code` (its code in events.def) is recorded now: in a program
/// with several sets, whose codes may overlap, whether any recorded set records its event
/// of that code.
pub fn is_enabled(code: u16) -> bool {
    let s = state();
    s.sets.iter().any(|r| r.schema.events.iter().position(|e| e.code == code).is_some_and(|j| r.set.index_enabled(j)))
}

/// The running selection of the recording's only set (of its first, when it holds several:
/// see [`selection_of`]): kind mask (bit `i` records kind `i` of events.def) and per-event
/// overrides. The empty selection when no recording ran.
#[deprecated(note = "reads the first set only when a program records several: use `selection_of(&events::SET)`")]
pub fn selection() -> Selection {
    state().selections.first().cloned().unwrap_or_default()
}

/// The running selection of `set` (`storage::events::SET`); `None` when the running (or
/// last) recording does not hold it.
pub fn selection_of(set: &EventSet) -> Option<Selection> {
    let s = state();
    let i = s.sets.iter().position(|r| std::ptr::eq(r.set, set))?;
    s.selections.get(i).cloned()
}

/// Replaces the whole selection of the recording's only set (of its first, when it holds
/// several: see [`set_selection_of`]); returns the previous one. With no recording
/// running, the selection is kept for nothing: the next recording starts from its own
/// (`Recorder::kinds`, `Recorder::control`, `EVENT_CONTROL`).
///
/// Kind masks are data here: `set_selection(Selection { kinds: mask, ..selection() })`
/// records the kinds of `mask` and keeps the per-event overrides.
#[deprecated(
    note = "replaces the first set's only when a program records several: use `set_selection_of(&events::SET, ..)`"
)]
pub fn set_selection(selection: Selection) -> Selection {
    let mut s = state();
    let old = match s.selections.first_mut() {
        Some(first) => std::mem::replace(first, selection),
        None => Selection::default(),
    };
    publish(&s);
    old
}

/// Replaces the selection of `set`; returns the previous one, or `None` (and changes
/// nothing) when the running recording does not hold `set`.
pub fn set_selection_of(set: &EventSet, selection: Selection) -> Option<Selection> {
    let mut s = state();
    let i = s.sets.iter().position(|r| std::ptr::eq(r.set, set))?;
    let old = std::mem::replace(s.selections.get_mut(i)?, selection);
    publish(&s);
    Some(old)
}

/// Applies a control text in the `EVENT_CONTROL` grammar to the running selection
/// (`"Pool -Seg Arena:ArenaCreate"`: Pool on, Seg off, that one event on; `storage:Page`
/// names a kind of the set `storage`) and returns the selection that results, described in
/// the same grammar. An error when no recording runs or the text does not parse; nothing
/// changes then.
///
/// ```
/// event_runtime::include_events!("../events.def");
///
/// fn main() {
///     let recording = event_runtime::Recorder::new().memory().kinds(0).start().unwrap();
///     assert_eq!(event_runtime::control::apply("Pool -Pool:PoolFinish").unwrap(), "Pool -Pool:PoolFinish");
///     assert!(event_runtime::control::is_enabled(events::code::PoolInit));
///     assert!(!event_runtime::control::is_enabled(events::code::PoolFinish));
///     assert!(event_runtime::control::apply("Pol").unwrap_err().to_string().contains("did you mean \"Pool\""));
///     recording.stop().unwrap();
/// }
/// ```
pub fn apply(text: &str) -> Result<String, SelectError> {
    let mut guard = state();
    if !guard.running {
        return Err(SelectError {
            item: String::new(),
            column: 1,
            message: "no recording runs; start one first".into(),
        });
    }
    let State { sets, selections, .. } = &mut *guard;
    let schemas = schemas(sets);
    event_format::select::apply(text, &schemas, selections)?;
    let now = event_format::select::describe(&schemas, selections);
    publish(&guard);
    Ok(now)
}

/// The running selection described in the `EVENT_CONTROL` grammar; `None` when no recording
/// runs.
pub fn describe() -> Option<String> {
    let s = state();
    s.running.then(|| event_format::select::describe(&schemas(&s.sets), &s.selections))
}

/// Why [`limit`] changed nothing: no recording runs, or the text does not read (one line
/// saying what is wrong and what is accepted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitError(pub String);

impl std::fmt::Display for LimitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LimitError {}

/// Changes the running recording's limits (`EVENT_LIMIT`'s grammar: entries
/// `SELECTION=LIMIT` separated by `;`, the limit `N/UNIT`, `K/N` or `off`; docs/guide/aggregates.md)
/// and returns every limit now, in the same grammar (`none` when there is none). The entries
/// apply over the limits now; each thread's limit of an event starts afresh when it changes.
/// `event-dump control RINGFILE --limit TEXT` asks the same of a running program.
///
/// ```
/// event_runtime::include_events!("../events.def");
///
/// fn main() {
///     let recording = event_runtime::Recorder::new().memory().start().unwrap();
///     assert_eq!(event_runtime::control::limits().unwrap(), "none");
///     assert_eq!(event_runtime::control::limit("Client:ClientMark=100/s").unwrap(), "Client:ClientMark=100/s");
///     assert_eq!(event_runtime::control::limit("ClientMark=off").unwrap(), "none");
///     assert!(event_runtime::control::limit("ClientMark=5/parsec").unwrap_err().to_string().contains("unknown unit"));
///     recording.stop().unwrap();
/// }
/// ```
pub fn limit(text: &str) -> Result<String, LimitError> {
    let generation = crate::emit::session::generation();
    let shared = crate::emit::session::current(generation)
        .ok_or_else(|| LimitError("no recording runs; start one first".into()))?;
    let aggregates = shared.aggregates.as_ref().ok_or_else(|| LimitError("this recording takes no limits".into()))?;
    let now = aggregates.set_limits(&shared.header, text).map_err(LimitError)?;
    crate::emit::divert::aggregate(generation, Some(aggregates.mask()));
    Ok(now)
}

/// The running recording's limits, as [`limit`] returns them; `None` when no recording runs.
pub fn limits() -> Option<String> {
    let shared = crate::emit::session::current(crate::emit::session::generation())?;
    shared.aggregates.as_ref().map(|a| a.describe(&shared.header))
}

/// The answer to a control request that another process wrote into the ring file's control
/// page (docs/FORMAT.md, "Control protocol"), on the writer thread: an empty request reads
/// the selection; `ROTATE`, `SNAPSHOT`, `LIMIT` ask for a rotation, a snapshot and the
/// limits; any other text is a selection to [`apply`]. `Ok` carries what the request made of
/// the recording, `Err` why it changed nothing.
pub(crate) fn answer(shared: &Shared, text: &str) -> Result<String, String> {
    match text.trim() {
        "" => describe().ok_or_else(|| "no recording runs".to_owned()),
        ROTATE_REQUEST => match lock(&shared.writer.sinks).request_rotation() {
            Some(index) => Ok(format!("segment {index} is being sealed; the next one starts")),
            None => Err("this recording writes no segments (EVENT_ROTATE is not set)".to_owned()),
        },
        t if t.starts_with(SNAPSHOT_REQUEST.trim_end()) => crate::writer::snapshot::requested(shared, t),
        t if t.starts_with(LIMIT_REQUEST) => {
            let limits = t[LIMIT_REQUEST.len()..].trim();
            if limits.is_empty() {
                self::limits().ok_or_else(|| "no recording runs".to_owned())
            } else {
                limit(limits).map_err(|e| e.to_string())
            }
        }
        _ => apply(text).map_err(|e| e.to_string()),
    }
}
