//! What a trigger costs the thread that records it (issue 40; BENCHMARKS.md, "A trigger on
//! its own thread"). Under `ring` that thread copies its own ring on its cold path, so that
//! nothing it records after can overwrite the window before the writer thread takes the
//! snapshot: the copy is the cost, and it grows with the ring (with one thread recording, its
//! ring is the whole buffer). Under a streaming policy nothing is copied (the window is read
//! back from what was written). Each configuration:
//!
//! 1. fills the thread's ring (twice the buffer's worth of `Word3` events);
//! 2. `ROUNDS` times: records 10 000 `Word3` events, then times, on this thread's clock, one
//!    `Word1` that the trigger `Bench:Word1, every=1` matches (the cold path, the decode, the
//!    condition, the rate policy and the ring's copy), and one `Word1` that a trigger with a
//!    condition it fails watches (the cold path and the decode, nothing copied);
//! 3. prints the medians, in microseconds, and the ring's size.
//!
//! `cargo bench -p event-benches --bench trigger`. The snapshots go to a directory under
//! target/ that is removed after each configuration.

event_runtime::include_events!("bench.def");

use event_runtime::{Policy, Recorder};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const ROUNDS: usize = 7;

fn main() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("trigger-bench-{}", std::process::id()));
    println!(
        "| configuration | ring (one thread) | a matching trigger, µs | a watched event that does not match, µs |"
    );
    println!("|---|---:|---:|---:|");
    let ring = || Recorder::new().policy(Policy::Ring);
    type Make = Box<dyn Fn(&PathBuf) -> Recorder>;
    let configurations: Vec<(&str, u64, &str, Make)> = vec![
        ("`ring` in memory, 1 MiB", 1 << 20, "", Box::new(move |_| ring().buffer_size(1 << 20))),
        ("`ring` in memory, 16 MiB (the default)", 16 << 20, "", Box::new(move |_| ring().buffer_size(16 << 20))),
        ("`ring` in memory, 64 MiB", 64 << 20, "", Box::new(move |_| ring().buffer_size(64 << 20))),
        (
            "`ring` in memory, 64 MiB, `pre=1ms` (the blocks of the last millisecond copied)",
            64 << 20,
            ", pre=1ms",
            Box::new(move |_| ring().buffer_size(64 << 20)),
        ),
        (
            "`ring` in a ring file, 16 MiB",
            16 << 20,
            "",
            Box::new(move |d: &PathBuf| ring().buffer_size(16 << 20).ring_file(d.join("bench.ring"))),
        ),
        (
            "`switch` to a file, 16 MiB (nothing copied)",
            16 << 20,
            "",
            Box::new(|d: &PathBuf| Recorder::new().buffer_size(16 << 20).file(d.join("bench.evt"))),
        ),
    ];
    for (name, size, pre, recorder) in configurations {
        std::fs::create_dir_all(&dir).expect("the bench's directory");
        let (matched, unmatched) = measure(recorder(&dir), &dir, size, pre);
        println!("| {name} | {} MiB | {matched:.1} | {unmatched:.1} |", size >> 20);
        std::fs::remove_dir_all(&dir).expect("the bench's directory removed");
    }
}

/// The medians of the matching trigger's and the unmatched watched event's times, in µs.
fn measure(recorder: Recorder, dir: &std::path::Path, size: u64, pre: &str) -> (f64, f64) {
    let recording = recorder
        .trigger(format!("Bench:Word1 if a != 7{pre}, every=1; Bench:Word6 if a == 7"))
        .snapshots(dir.join("s-%s.evt"))
        .start()
        .expect("the bench's recording starts");
    // Twice the buffer's worth of 32-byte records: the ring is full and went round.
    word3(2 * size / 32);
    let (mut matched, mut unmatched) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        word3(10_000);
        let t = Instant::now();
        event!(Word1, round as u64);
        matched.push(t.elapsed());
        let t = Instant::now();
        event!(Word6, 1u64, 2u64, 3u64, 4u64, 5u64, 6u64);
        unmatched.push(t.elapsed());
        // The writer thread takes the snapshot; the next round's copy does not race it.
        std::thread::sleep(Duration::from_millis(50));
    }
    recording.stop().expect("the bench's recording stops");
    (median_us(&mut matched), median_us(&mut unmatched))
}

#[inline(never)]
fn word3(n: u64) {
    for i in 0..n {
        event!(Word3, std::hint::black_box(i), i + 1, i + 2);
    }
}

fn median_us(v: &mut [Duration]) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}
