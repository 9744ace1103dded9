//! A second library instrumented with its own events.def (tests/sets).

event_runtime::include_events!("events.def");

/// Opens connection `conn` to `peer`.
pub fn connect(conn: u64, peer: &str) {
    event!(Open, conn, peer);
}

/// Sends `bytes` on `conn`.
pub fn send(conn: u64, bytes: u32) {
    event!(Send, conn, bytes);
}
