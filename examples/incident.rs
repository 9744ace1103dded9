//! Keeping the incident: a server that streams its events into segments under a disk budget,
//! and whose slow requests make the recording keep what led to them, apart, in a snapshot
//! (docs/guide/keeping-the-incident.md).
//!
//! Four workers serve 100 000 requests. The recording streams into segments of 256 KiB in
//! `target/incident/` and keeps the newest 4 (`EVENT_ROTATE=256k EVENT_KEEP=4`, the fleet's
//! dataset). A request slower than 50 ms is the incident: the trigger
//! `Req:ReqEnd if micros >= 50000, pre=200ms, post=50` writes the 200 ms before it and the next
//! 50 events of its worker to `target/incident/incident-N.evt`, which the budget never
//! deletes. The service's configuration (`Life:Config`) is pinned: every segment repeats it.
//!
//! Run it with `cargo run --release --example incident`, then read the snapshot with
//! `event-dump stats target/incident/incident-1.evt` and `event-dump print ... --since S`.

event_runtime::include_events!("incident.def");

use event_runtime::{Keep, Recorder, Rotate};
use std::time::{Duration, Instant};

const WORKERS: u64 = 4;
const REQUESTS: u64 = 100_000;
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
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/incident");
    // The last run's segments and snapshots go first: a recording never writes over a file.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("target/incident is made");
    let recording = Recorder::new()
        .file(dir.join("trace.evt"))
        .rotate(Rotate { size: Some(256 << 10), age: None })
        .keep(Keep { segments: Some(4), ..Keep::default() })
        .trigger("Req:ReqEnd if micros >= 50000, pre=200ms, post=50, every=1/1s")
        .pin("Life:Config")
        .snapshots(dir.join("incident-%s.evt"))
        .from_env()
        .expect("the environment's settings parse")
        .start()
        .expect("the recording starts");
    event!(Config, "incident-example", WORKERS);
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
    event!(Phase, "draining");
    recording.stop().expect("the recording stops");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("target/incident").flatten().map(|e| e.path()).collect();
    files.sort();
    for path in files {
        println!("{}", path.display());
    }
}
