//! Keeping the incident: a server whose slow requests make the flight recorder write a
//! snapshot of what led to them (docs/guide/keeping-the-incident.md).
//!
//! Four workers serve 20 000 requests, recording under `ring` (the latest events only, in
//! memory). A request slower than 50 ms is the incident: the trigger
//! `Req:ReqEnd if micros >= 50000` writes a snapshot of the rings, with the next 50 events of
//! that worker after it, to `target/incident-N.evt`, at most one a second.
//!
//! Run it with `cargo run --release --example incident`, then read a snapshot with
//! `event-dump stats target/incident-1.evt` and `event-dump print target/incident-1.evt --since S`.

event_runtime::include_events!("incident.def");

use event_runtime::{Policy, Recorder};
use std::time::{Duration, Instant};

const WORKERS: u64 = 4;
const REQUESTS: u64 = 20_000;
/// Every request of this number is slow: its query waits on a lock for 60 ms.
const SLOW: u64 = 7_777;

fn serve(id: u64) {
    let start = Instant::now();
    let path = if id.is_multiple_of(3) { "/api/orders" } else { "/api/items" };
    event!(ReqBegin, id, path);
    let table = if id.is_multiple_of(3) { "orders" } else { "items" };
    let query = Instant::now();
    if id == SLOW {
        std::thread::sleep(Duration::from_millis(60));
    }
    event!(DbQuery, id, table, query.elapsed().as_micros() as u64);
    let status = if id == SLOW { 504u32 } else { 200 };
    event!(ReqEnd, id, status, start.elapsed().as_micros() as u64);
}

fn main() {
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    for n in 1..10 {
        // Snapshots never write over a file: the last run's go first.
        let _ = std::fs::remove_file(target.join(format!("incident-{n}.evt")));
    }
    let recording = Recorder::new()
        .policy(Policy::Ring)
        .buffer_size(4 << 20)
        .trigger("Req:ReqEnd if micros >= 50000, post=50, every=1/1s")
        .snapshots(target.join("incident-%s.evt"))
        .from_env()
        .expect("the environment's settings parse")
        .start()
        .expect("the recording starts");
    std::thread::scope(|s| {
        for w in 0..WORKERS {
            std::thread::Builder::new()
                .name(format!("worker-{w}"))
                .spawn_scoped(s, move || {
                    for id in (w..REQUESTS).step_by(WORKERS as usize) {
                        serve(id);
                    }
                })
                .expect("a worker starts");
        }
    });
    recording.stop().expect("the recording stops");
    for n in 1..10 {
        let path = target.join(format!("incident-{n}.evt"));
        if path.exists() {
            println!("snapshot: {}", path.display());
        }
    }
}
