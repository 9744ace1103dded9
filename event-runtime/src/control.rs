//! Control: which events are recorded, by kind and by event (design.mps.telemetry `.control`).
//!
//! The hot path reads one bit per event code from `ENABLED`: one relaxed atomic load and a
//! bit test. Those bits are the [`CodeSet`] that the running [`Selection`] (a kind mask and
//! per-event overrides) compiles to against the schema being recorded
//! ([`Selection::compile`]); changing the selection compiles it again and copies the bits,
//! under a lock, off the hot path.
//!
//! Relaxed loads suffice: an enable bit only decides whether to record; a thread that sees a
//! change a little late records (or skips) a few events more, and nothing else depends on it.
//!
//! The selection is set in one language ([`event_format::select`]) wherever it comes from:
//! the environment at start-up (`EVENT_CONTROL`), [`apply`] in the program, and another
//! process through the ring file (`event-dump control`). The whole API:
//!
//! - [`apply`] changes the selection by a text (`"Pool -Pool:PoolInit"`), [`describe`]
//!   writes it as one;
//! - [`selection`] and [`set_selection`] read and replace it as data, for programs that
//!   compute kind masks (`events::Kind::Pool.mask()`) or per-event overrides;
//! - [`is_enabled`] says whether an event is recorded now.

use event_format::schema::{LAST_USER_CODE, Schema};
use event_format::select::CodeSet;
pub use event_format::select::{SelectError, Selection};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

const WORDS: usize = (LAST_USER_CODE as usize >> 6) + 1;

/// One bit per user event code: set when the event is recorded now. The first [`WORDS`]
/// words of the running selection's [`CodeSet`] (user codes end there).
pub(crate) static ENABLED: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];

/// What the enable bits are derived from.
#[derive(Debug)]
struct State {
    /// The schema being recorded; `None` when no recording runs (every bit is then 0).
    schema: Option<Schema>,
    selection: Selection,
}

static STATE: Mutex<State> =
    Mutex::new(State { schema: None, selection: Selection { kinds: 0, overrides: std::collections::BTreeMap::new() } });

fn state() -> std::sync::MutexGuard<'static, State> {
    // The state is plain data whose every update is complete before the lock is released;
    // a panic elsewhere while holding it cannot leave it half-written.
    STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Compiles the selection against the schema and copies the bits into [`ENABLED`].
fn publish(state: &State) {
    let codes = match &state.schema {
        Some(schema) => state.selection.compile(schema),
        None => CodeSet::new(),
    };
    for (word, &bits) in ENABLED.iter().zip(codes.words()) {
        word.store(bits, Ordering::Relaxed);
    }
}

/// Whether the event with `code` is recorded now: the hot path's test.
#[inline(always)]
pub(crate) fn enabled(code: u16) -> bool {
    // Codes above LAST_USER_CODE are never passed here (the macro only emits user codes);
    // `get` keeps a stray one from panicking.
    ENABLED.get(usize::from(code >> 6)).is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (code & 63)) != 0)
}

/// The selection, held across `fork()` (`fork`'s module docs), so that the child never finds
/// it locked by a thread that does not exist there.
#[derive(Debug)]
pub(crate) struct ForkHold(#[allow(dead_code)] std::sync::MutexGuard<'static, State>);

/// Takes the selection for a `fork()`.
pub(crate) fn hold_for_fork() -> ForkHold {
    ForkHold(state())
}

impl ForkHold {
    /// In the child just after `fork()`: a child that records nothing (`EVENT_FORK=off`)
    /// turns every event off, so that each costs one branch. Atomic stores only.
    pub(crate) fn in_child(self, records: bool) {
        if !records {
            for word in &ENABLED {
                word.store(0, Ordering::Relaxed);
            }
        }
    }
}

pub(crate) fn install(schema: &Schema, selection: Selection) {
    let mut s = state();
    s.schema = Some(schema.clone());
    s.selection = selection;
    publish(&s);
}

pub(crate) fn uninstall() {
    let mut s = state();
    s.schema = None;
    publish(&s);
}

/// Whether the event with `code` is recorded now.
pub fn is_enabled(code: u16) -> bool {
    enabled(code)
}

/// The running selection: kind mask (bit `i` records kind `i` of events.def) and per-event
/// overrides.
pub fn selection() -> Selection {
    state().selection.clone()
}

/// Replaces the whole selection; returns the previous one. With no recording running, the
/// selection is kept for nothing: the next recording starts from its own (`Recorder::kinds`,
/// `Recorder::control`, `EVENT_CONTROL`).
///
/// Kind masks are data here: `set_selection(Selection { kinds: mask, ..selection() })`
/// records the kinds of `mask` and keeps the per-event overrides.
pub fn set_selection(selection: Selection) -> Selection {
    let mut s = state();
    let old = std::mem::replace(&mut s.selection, selection);
    publish(&s);
    old
}

/// Applies a control text in the `EVENT_CONTROL` grammar to the running selection
/// (`"Pool -Seg Arena:ArenaCreate"`: Pool on, Seg off, that one event on) and returns the
/// selection that results, described in the same grammar. An error when no recording runs
/// or the text does not parse; nothing changes then.
///
/// ```
/// event_runtime::include_events!("../events.def");
///
/// fn main() {
///     let recording = event_runtime::Recorder::new(&events::SET).memory().kinds(0).start().unwrap();
///     assert_eq!(event_runtime::control::apply("Pool -Pool:PoolFinish").unwrap(), "Pool -Pool:PoolFinish");
///     assert!(event_runtime::control::is_enabled(events::code::PoolInit));
///     assert!(!event_runtime::control::is_enabled(events::code::PoolFinish));
///     assert!(event_runtime::control::apply("Pol").unwrap_err().to_string().contains("did you mean \"Pool\""));
///     recording.stop().unwrap();
/// }
/// ```
pub fn apply(text: &str) -> Result<String, SelectError> {
    let mut guard = state();
    let State { schema, selection } = &mut *guard;
    let Some(schema) = schema else {
        return Err(SelectError {
            item: String::new(),
            column: 1,
            message: "no recording runs; start one first".into(),
        });
    };
    selection.apply(&event_format::select::parse(text, schema)?);
    let now = event_format::select::describe(selection, schema);
    publish(&guard);
    Ok(now)
}

/// The running selection described in the `EVENT_CONTROL` grammar; `None` when no recording
/// runs.
pub fn describe() -> Option<String> {
    let s = state();
    s.schema.as_ref().map(|schema| event_format::select::describe(&s.selection, schema))
}
