//! A library instrumented with its own events.def (tests/sets): it includes them and records
//! them; its users need not know. A crate that depends on it may emit them itself:
//! `storage::event!(PageRead, page, true)`.

event_runtime::include_events!("events.def");

/// Writes `page`, taking `latency` seconds.
pub fn write_page(page: u64, latency: f64) {
    event!(PageWrite, page, latency);
}

/// Opens the store at `path`.
pub fn open(path: &str) {
    event!(Open, path);
}
