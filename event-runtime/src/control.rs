//! Control: which events are recorded, by kind and by event (design.mps.telemetry `.control`).
//!
//! The hot path reads one bit per event code from [`ENABLED`]: one relaxed atomic load and a
//! bit test. That bit is derived from a [`Selection`]: the kind mask and per-event
//! overrides. Changing the selection recomputes the bits under a lock, off the hot path.
//!
//! Relaxed loads suffice: an enable bit only decides whether to record; a thread that sees a
//! change a little late records (or skips) a few events more, and nothing else depends on it.
//!
//! The selection can be set from code (these functions), from the environment at start-up
//! (`EVENT_CONTROL`), and from another process through the ring file (`event-dump control`);
//! the last two use [`event_format::control`]'s grammar, as does [`apply`].

pub use event_format::control::{ControlError, Selection};
use event_format::schema::{LAST_USER_CODE, Schema};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

const WORDS: usize = (LAST_USER_CODE as usize >> 6) + 1;

/// One bit per user event code: set when the event is recorded now.
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

fn publish(state: &State) {
    let mut words = [0u64; WORDS];
    if let Some(schema) = &state.schema {
        for code in state.selection.enabled_codes(schema) {
            words[usize::from(code >> 6)] |= 1 << (code & 63);
        }
    }
    for (word, bits) in ENABLED.iter().zip(words) {
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

/// The kind mask: bit `i` is on when kind `i` (in events.def order) is recorded.
pub fn kinds() -> u64 {
    state().selection.kinds
}

/// Sets the kind mask (per-event overrides stay); returns the previous mask.
pub fn set_kinds(mask: u64) -> u64 {
    let mut s = state();
    let old = std::mem::replace(&mut s.selection.kinds, mask);
    publish(&s);
    old
}

/// Turns on the kinds in `mask` (and leaves the others as they are); returns the previous mask.
pub fn enable_kinds(mask: u64) -> u64 {
    let mut s = state();
    let old = s.selection.kinds;
    s.selection.kinds |= mask;
    publish(&s);
    old
}

/// Turns off the kinds in `mask`; returns the previous mask.
pub fn disable_kinds(mask: u64) -> u64 {
    let mut s = state();
    let old = s.selection.kinds;
    s.selection.kinds &= !mask;
    publish(&s);
    old
}

/// Turns one event on or off, whatever its kind says.
pub fn set_event(code: u16, on: bool) {
    let mut s = state();
    s.selection.overrides.insert(code, on);
    publish(&s);
}

/// Lets one event follow its kind again (undoes [`set_event`]).
pub fn reset_event(code: u16) {
    let mut s = state();
    s.selection.overrides.remove(&code);
    publish(&s);
}

/// Whether the event with `code` is recorded now.
pub fn is_enabled(code: u16) -> bool {
    enabled(code)
}

/// The whole selection: kind mask and per-event overrides.
pub fn selection() -> Selection {
    state().selection.clone()
}

/// Replaces the whole selection; returns the previous one.
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
pub fn apply(text: &str) -> Result<String, ControlError> {
    let mut s = state();
    let Some(schema) = &s.schema else {
        return Err(ControlError {
            item: String::new(),
            column: 1,
            message: "no recording runs; start one first".into(),
        });
    };
    let items = event_format::control::parse(text, schema)?;
    let schema = schema.clone();
    s.selection.apply(&items);
    publish(&s);
    Ok(event_format::control::describe(&s.selection, &schema))
}

/// The running selection described in the `EVENT_CONTROL` grammar; `None` when no recording
/// runs.
pub fn describe() -> Option<String> {
    let s = state();
    s.schema.as_ref().map(|schema| event_format::control::describe(&s.selection, schema))
}
