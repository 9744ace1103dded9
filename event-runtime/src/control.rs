//! Control: which events are recorded, by kind and by event (design.mps.telemetry `.control`).
//!
//! The hot path reads one bit per event code from [`ENABLED`]: one relaxed atomic load and a
//! bit test. That bit is derived: it is set when the event's kind is in the kind mask *and*
//! the event itself is not disabled. Changing the mask or an event recomputes the bits under a
//! lock, off the hot path.
//!
//! Relaxed loads suffice: an enable bit only decides whether to record; a thread that sees a
//! change a little late records (or skips) a few events more, and nothing else depends on it.

use event_format::schema::{LAST_USER_CODE, Schema};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

const WORDS: usize = (LAST_USER_CODE as usize >> 6) + 1;

/// One bit per user event code: set when the event is recorded now.
pub(crate) static ENABLED: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];

/// What the enable bits are derived from.
#[derive(Debug)]
struct State {
    /// (code, kind index) of every event of the schema being recorded.
    events: Vec<(u16, u8)>,
    /// Bit i: kind i is on.
    kinds: u64,
    /// Codes of events turned off one by one, whatever their kind.
    disabled: Vec<u16>,
    /// Whether a recorder is running; when not, every bit is 0.
    running: bool,
}

static STATE: Mutex<State> = Mutex::new(State { events: Vec::new(), kinds: 0, disabled: Vec::new(), running: false });

fn state() -> std::sync::MutexGuard<'static, State> {
    // The state is plain data whose every update is complete before the lock is released;
    // a panic elsewhere while holding it cannot leave it half-written.
    STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn publish(state: &State) {
    let mut words = [0u64; WORDS];
    if state.running {
        for &(code, kind) in &state.events {
            if state.kinds & (1 << kind) != 0 && !state.disabled.contains(&code) {
                words[usize::from(code >> 6)] |= 1 << (code & 63);
            }
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
    ENABLED
        .get(usize::from(code >> 6))
        .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (code & 63)) != 0)
}

pub(crate) fn install(schema: &Schema, kinds: u64) {
    let mut s = state();
    s.events = schema.events.iter().map(|e| (e.code, e.kind)).collect();
    s.kinds = kinds;
    s.disabled.clear();
    s.running = true;
    publish(&s);
}

pub(crate) fn uninstall() {
    let mut s = state();
    s.running = false;
    publish(&s);
}

/// The kind mask: bit `i` is on when kind `i` (in events.def order) is recorded.
pub fn kinds() -> u64 {
    state().kinds
}

/// Sets the kind mask; returns the previous one.
pub fn set_kinds(mask: u64) -> u64 {
    let mut s = state();
    let old = std::mem::replace(&mut s.kinds, mask);
    publish(&s);
    old
}

/// Turns on the kinds in `mask` (and leaves the others as they are); returns the previous mask.
pub fn enable_kinds(mask: u64) -> u64 {
    let mut s = state();
    let old = s.kinds;
    s.kinds |= mask;
    publish(&s);
    old
}

/// Turns off the kinds in `mask`; returns the previous mask.
pub fn disable_kinds(mask: u64) -> u64 {
    let mut s = state();
    let old = s.kinds;
    s.kinds &= !mask;
    publish(&s);
    old
}

/// Turns one event on or off, whatever its kind says: an event is recorded when its kind is on
/// and it is not turned off.
pub fn set_event(code: u16, on: bool) {
    let mut s = state();
    s.disabled.retain(|&c| c != code);
    if !on {
        s.disabled.push(code);
    }
    publish(&s);
}

/// Whether the event with `code` is recorded now.
pub fn is_enabled(code: u16) -> bool {
    enabled(code)
}
