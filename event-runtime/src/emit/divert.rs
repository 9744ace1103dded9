//! The divert word that `event!` tests an enabled event's bit in (`__private::route`, whose
//! answer `__private::emit_routed` takes on: one load an event): a set bit sends the event
//! down the cold path, to a test's capture (`capture`) or to the recording's look at a
//! watched event (`buffer`'s `watched`, the triggers and pins of `trigger`). Its own room,
//! below both: the capture and the thread buffers each change it, and neither imports the
//! other for it.

use crate::emit::line::{LINE, Line};
use std::sync::Mutex;
use std::sync::atomic::Ordering;

// The divert word (`line::Line::divert`, on the line the recorder's generation shares: an
// enabled event reads both): an enabled event whose bit (its index in its set, mod 64) is
// set there takes the cold path. All ones while any capture runs in the process (the sets'
// bits are then forced on) or while a thread counts a trigger's `post=N` events; else the
// watched events' bits of the running recording (its triggers and pins, `trigger`'s module
// docs, "Cost"); zero without either, as before triggers existed.

/// What the divert word is made of; it is written under this lock, so that a capture that
/// ends never clears it under one that starts, nor a recording's stop under a capture.
static DIVERT: Mutex<Divert> = Mutex::new(Divert { captures: 0, watch: None, aggregate: None });

/// What the divert word is made of.
#[derive(Debug)]
struct Divert {
    /// How many captures run (on any thread).
    captures: usize,
    /// The running recording's watched events: its generation, their bits, and how many of
    /// its threads count `post=N` events now.
    watch: Option<(u64, u64, usize)>,
    /// The running recording's limited and measured events (`aggregate`): its generation and
    /// their bits.
    aggregate: Option<(u64, u64)>,
}

impl Divert {
    /// Stores the word this state makes.
    fn publish(&self) {
        let word = match self.watch {
            _ if self.captures > 0 => u64::MAX,
            Some((_, _, windows)) if windows > 0 => u64::MAX,
            Some((_, mask, _)) => mask,
            None => 0,
        } | self.aggregate.map_or(0, |(_, mask)| mask);
        // Relaxed: see `any`.
        LINE.divert.store(word, Ordering::Relaxed);
    }
}

/// The recording of `generation` watches the events whose bits are `mask` (its triggers'
/// and pins'); `None` for `mask`: it stopped, and watches nothing more.
pub(crate) fn watch(generation: u64, mask: Option<u64>) {
    let mut divert = crate::locks::lock(&DIVERT);
    match mask {
        Some(mask) => divert.watch = Some((generation, mask, 0)),
        None if divert.watch.is_some_and(|w| w.0 == generation) => divert.watch = None,
        None => return,
    }
    divert.publish();
}

/// The recording of `generation` limits or measures the events whose bits are `mask`
/// (`aggregate`); `None`: it stopped.
pub(crate) fn aggregate(generation: u64, mask: Option<u64>) {
    let mut divert = crate::locks::lock(&DIVERT);
    match mask {
        Some(mask) => divert.aggregate = Some((generation, mask)),
        None if divert.aggregate.is_some_and(|a| a.0 == generation) => divert.aggregate = None,
        None => return,
    }
    divert.publish();
}

/// A thread of the recording of `generation` starts (`open`) or ends counting `post=N`
/// events: while any does, every event takes the cold path.
pub(crate) fn post_window(generation: u64, open: bool) {
    let mut divert = crate::locks::lock(&DIVERT);
    if let Some((g, _, windows)) = &mut divert.watch
        && *g == generation
    {
        *windows = if open { *windows + 1 } else { windows.saturating_sub(1) };
        divert.publish();
    }
}

/// In a child just after `fork()`, which waits for no lock: the parent's recording is not
/// the child's, and its watched events no longer divert (a capture's stay, as its forced
/// bits do).
pub(crate) fn unwatch_after_fork() {
    if let Ok(mut divert) = DIVERT.try_lock() {
        divert.watch = None;
        divert.aggregate = None;
        divert.publish();
    } else if !LINE.capturing.load(Ordering::Relaxed) {
        LINE.divert.store(0, Ordering::Relaxed);
    }
}

/// A capture starts (`capture::Capture::start`): the flag and the word first, then the sets'
/// bits forced on, under the lock: an event that passes the forced bits always finds the word
/// set.
pub(crate) fn capture_started() {
    let mut divert = crate::locks::lock(&DIVERT);
    divert.captures += 1;
    // Relaxed: the lock orders the stores; see `any`.
    LINE.capturing.store(true, Ordering::Relaxed);
    divert.publish();
    crate::event_set::force_all(true);
}

/// A capture ends: when it was the last, the selection back first, then the flag and the
/// word (as at the start, reversed).
pub(crate) fn capture_ended() {
    let mut divert = crate::locks::lock(&DIVERT);
    divert.captures = divert.captures.saturating_sub(1);
    if divert.captures == 0 {
        crate::event_set::force_all(false);
        LINE.capturing.store(false, Ordering::Relaxed);
        divert.publish();
    }
}

/// Whether a capture runs: the cold path of `event!`'s test asks the selection only then
/// (`line::Line::capturing`, on the line an enabled event reads anyway).
#[inline]
pub(crate) fn capturing() -> bool {
    // Relaxed: set before the bits are forced on (`capture_started`), as the divert word is.
    LINE.capturing.load(Ordering::Relaxed)
}

/// The divert word that `event!` tests an enabled event's bit in (`line::Line::divert`).
#[inline(always)]
pub(crate) fn any() -> u64 {
    any_at(&LINE)
}

/// The divert word, read through `line`, the address of [`LINE`] that a set's control bits
/// keep (`__private::Bits`: generated code reaches it without the global offset table).
#[inline(always)]
pub(crate) fn any_at(line: &Line) -> u64 {
    // Relaxed: the capturing thread itself stored it (program order); another thread that
    // sees it late or early only takes the cold path for nothing, or not at all.
    line.divert.load(Ordering::Relaxed)
}
