//! Built-in events the program records by calling a function: messages, interned strings,
//! labels (design.mps.telemetry `.sol.client`, `.sol.intern`). They are recorded whenever a
//! recording runs, whatever the control mask says, and cost nothing when none runs.

use crate::emit::buffer;
use crate::emit::session;
use event_format::builtin;
use event_format::wire::{Text, body};

/// Records a free-text `Message` event on this thread.
pub fn message(text: &str) {
    if session::is_running() {
        let strs = [Text::new(text)];
        buffer::emit(builtin::MESSAGE, builtin::MESSAGE_FIXED, &strs, body::message);
    }
}

/// The id of `text` in this recording's table of interned strings. The first time a string is
/// interned, an `Intern` event records it; later calls return the same id and record nothing.
/// Ids count from 1; 0 means no recording runs.
pub fn intern(text: &str) -> u64 {
    let Some(shared) = session::current(session::generation()) else {
        return 0;
    };
    let mut table = shared.writer.interned.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&id) = table.get(text) {
        return id;
    }
    let id = table.len() as u64 + 1;
    table.insert(text.to_owned(), id);
    // Recorded while the table is locked, so that no other thread can use the id first.
    let strs = [Text::new(text)];
    buffer::emit(builtin::INTERN, builtin::INTERN_FIXED, &strs, |w| body::intern(w, id));
    id
}

/// Labels `address` with `text` (interned): the dump shows the label beside the address.
pub fn label(address: usize, text: &str) {
    let id = intern(text);
    if id != 0 {
        if let Some(shared) = session::current(session::generation()) {
            crate::locks::lock(&shared.writer.labels).insert(address as u64, id);
        }
        buffer::emit(builtin::LABEL, builtin::LABEL_FIXED, &[], |w| body::label(w, address as u64, id));
    }
}

/// Records a `ClockSync` event: the clock's ticks now and the wall time, read together.
pub(crate) fn clock_sync(time: &crate::clock::TimeSource) {
    let (ticks, wall) = time.sync_pair();
    buffer::emit(builtin::CLOCK_SYNC, builtin::CLOCK_SYNC_FIXED, &[], |w| body::clock_sync(w, ticks, wall));
}
