//! Sizes at rest of a service-like workload (BENCHMARKS.md, "Sizes at rest"): four worker
//! threads serve requests, each a `RequestBegin` and a `RequestEnd` (a span paired by its id,
//! with the route, the status and the duration in nanoseconds), half of them a `DbQuery`
//! between, and every 32nd a sample of the queue's depth (a counter); the work between the
//! events is a few hundred nanoseconds to a few microseconds of computation, so that the
//! events' times are a service's, not a loop's. The same workload is recorded to an event
//! file with each packing, to segments and to a snapshot of the flight recorder, and each
//! file's bytes on disk are divided by the events it holds.
//!
//! `cargo run --release -p event-benches --example service_sizes [-- REQUESTS]` (200 000 by
//! default). Sizes are deterministic enough to compare (the events' times vary from run to
//! run, a few percent of the size); the times are not measured.

event_runtime::include_events!("service_sizes.def");

use event_runtime::{Packing, Policy, Recorder, Rotate};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A small, fast pseudo-random generator (xorshift64*), one per thread.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Computation standing for a request's work: `n` rounds of a hash.
fn work(n: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for i in 0..n {
        h = (h ^ i).wrapping_mul(0x100_0000_01b3);
    }
    std::hint::black_box(h)
}

/// Serves `requests` requests on four threads; returns the events recorded.
fn serve(requests: u64) -> u64 {
    let next = AtomicU64::new(0);
    let events = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (next, events) = (&next, &events);
            s.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t + 1));
                let mut depth = 8u32;
                let mut mine = 0;
                loop {
                    let id = next.fetch_add(1, Ordering::Relaxed);
                    if id >= requests {
                        break;
                    }
                    let start = std::time::Instant::now();
                    let route = (rng.next() % 8) as u32;
                    event!(RequestBegin, id, route);
                    work(50 + rng.next() % 400);
                    mine += 2;
                    if rng.next().is_multiple_of(2) {
                        event!(DbQuery, id, (rng.next() % 100) as u32);
                        work(50 + rng.next() % 800);
                        mine += 1;
                    }
                    let status: u32 = if rng.next().is_multiple_of(50) { 500 } else { 200 };
                    event!(RequestEnd, id, status, start.elapsed().as_nanos() as u64);
                    if id % 32 == 0 {
                        depth = (depth as i64 + (rng.next() % 5) as i64 - 2).clamp(0, 64) as u32;
                        event!(QueueDepth, depth);
                        mine += 1;
                    }
                }
                event_runtime::flush();
                events.fetch_add(mine, Ordering::Relaxed);
            });
        }
    });
    events.into_inner()
}

/// Events (records other than `TimeExtend` and `Stop`, the built-in ones included) and bytes of
/// the streams at `paths`.
fn census(paths: &[PathBuf]) -> (u64, u64) {
    let (mut events, mut bytes) = (0, 0);
    for path in paths {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        bytes += data.len() as u64;
        let mut decoder = event_format::decode::Decoder::new(&data[..]).expect("a stream");
        let order = decoder.header().order;
        while let Some(block) = decoder.next_block() {
            let block = block.expect("no damaged block");
            events += event_format::wire::RecordIter::new(&block.records, order, 0).flatten().count() as u64;
        }
    }
    (events, bytes)
}

/// The files of `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

fn main() {
    let requests: u64 = std::env::args().nth(1).map_or(200_000, |a| a.parse().expect("a number of requests"));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench/service-sizes");
    let _ = std::fs::remove_dir_all(&root);
    println!("| where | packing | requests | events | bytes | bytes/event | bytes/request |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    // Bytes a request where the file holds every request (a snapshot holds what the rings
    // still held).
    let row = |place: &str, packing: &str, (events, bytes): (u64, u64), all: bool| {
        let per_request = if all { format!("{:.1}", bytes as f64 / requests as f64) } else { "–".to_owned() };
        println!(
            "| {place} | {packing} | {requests} | {events} | {bytes} | {:.2} | {per_request} |",
            bytes as f64 / events.max(1) as f64,
        );
    };
    for (name, packing) in [("zstd (default)", Some(Packing::ZSTD)), ("lz4", Some(Packing::LZ4)), ("off", None)] {
        let dir = root.join(format!("file-{}", name.split(' ').next().unwrap()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("service.evt");
        let recorder = Recorder::new().file(&path);
        let recorder = match packing {
            Some(p) => recorder.packing(p),
            None => recorder.pack(false),
        };
        let recording = recorder.start().expect("the recording starts");
        serve(requests);
        recording.stop().expect("the stream is written");
        row("event file", name, census(&[path]), true);
    }
    // Segments of 256 KiB, the default packing.
    let dir = root.join("segments");
    std::fs::create_dir_all(&dir).unwrap();
    let recording = Recorder::new()
        .file(dir.join("service.evt"))
        .rotate(Rotate { size: Some(256 << 10), age: None })
        .start()
        .expect("the recording starts");
    serve(requests);
    recording.stop().expect("the segments are written");
    let segments = files(&dir);
    row(&format!("{} segments of 256 KiB", segments.len()), "zstd (default)", census(&segments), true);
    // A snapshot of the flight recorder (`ring`, 64 MiB), taken at the end.
    let dir = root.join("snapshot");
    std::fs::create_dir_all(&dir).unwrap();
    let recording = Recorder::new().policy(Policy::Ring).buffer_size(64 << 20).start().expect("the recording starts");
    serve(requests);
    let snapshot = dir.join("incident.evt");
    recording.snapshot(&snapshot).expect("the snapshot is written");
    recording.stop().expect("the recording stops");
    row("a snapshot (`ring`, 64 MiB)", "zstd (default)", census(&[snapshot]), false);
    let _ = std::fs::remove_dir_all(&root);
}
