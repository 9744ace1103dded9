//! The side-by-side comparison (scripts/bench runs it): every case and its baselines in the
//! same process, interleaved round by round so that a noisy neighbour slows all of them
//! alike; every figure is the median of the rounds, every ratio is of two medians of the
//! same run. Prints markdown tables for BENCHMARKS.md.
//!
//! `cargo bench -p event-benches --bench compare -- [--quick] [--skip-stream] [--skip-dump]`;
//! with `--features rash`, only the compiled-out case and its baseline. `-- --streaming-floor`
//! measures only the floor, the streaming floor and the default configuration (and the same
//! packed with LZ4 and not packed: what the writer's packing on the other core costs the
//! recording thread; the floor with its state in memory: what keeping a thread's state
//! between events costs; and the streaming floor whose writer packs each block as the
//! default's does: what a writer that slow costs a thread without the recorder; and the
//! streaming floor by steps towards a recorder: its state in a thread-local, a commit word,
//! the tests a recorder with this one's guarantees makes), in one run (issue 43: how far the
//! default is from what streaming costs at the least, and where the rest goes).

event_runtime::include_events!("bench.def");

mod common;

use common::{Case, peers};
use std::hint::black_box;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// How each case is sampled.
struct Plan {
    rounds: usize,
    /// The time one sample of one case should take.
    sample: Duration,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// Events per sample so that one sample of `run` takes about `plan.sample`.
fn calibrate(run: fn(u64) -> Duration, plan: &Plan) -> u64 {
    let mut n = 1000u64;
    loop {
        let t = run(n);
        if t >= plan.sample / 4 || n >= 1 << 34 {
            let per = t.as_secs_f64() / n as f64;
            return ((plan.sample.as_secs_f64() / per.max(1e-12)) as u64).max(1000);
        }
        n *= 4;
    }
}

/// Nanoseconds per event of each case: medians (and min, max) over the rounds.
fn measure(cases: &[Case], plan: &Plan) -> Vec<(f64, f64, f64)> {
    let sizes: Vec<u64> = cases.iter().map(|c| calibrate(c.run, plan)).collect();
    let mut samples = vec![Vec::new(); cases.len()];
    for _ in 0..plan.rounds {
        for (i, case) in cases.iter().enumerate() {
            let t = (case.run)(sizes[i]);
            samples[i].push(t.as_nanos() as f64 / sizes[i] as f64);
        }
    }
    samples
        .iter_mut()
        .map(|s| {
            let lo = s.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = s.iter().copied().fold(0.0, f64::max);
            (median(s), lo, hi)
        })
        .collect()
}

fn table(cases: &[Case], figures: &[(f64, f64, f64)]) {
    println!("| case | ns/event (median) | min .. max | events/s (median) |");
    println!("|---|---:|---:|---:|");
    for (case, &(m, lo, hi)) in cases.iter().zip(figures) {
        println!("| {} | {m:.2} | {lo:.2} .. {hi:.2} | {:.1} M |", case.name, 1e3 / m);
    }
    println!();
}

fn ratio_line(what: &str, a: f64, b: f64, target: &str) {
    println!("| {what} | {:.2} | {target} |", a / b);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let plan = if quick {
        Plan { rounds: 5, sample: Duration::from_millis(10) }
    } else {
        Plan { rounds: 11, sample: Duration::from_millis(30) }
    };
    println!("# event-benches compare ({} rounds per case, ~{} ms per sample)\n", plan.rounds, plan.sample.as_millis());
    if cfg!(feature = "rash") {
        rash(&plan);
        return;
    }
    if args.iter().any(|a| a == "--streaming-floor") {
        configurations(&plan, true);
        return;
    }
    micro(&plan);
    configurations(&plan, false);
    common::unpin();
    if !args.iter().any(|a| a == "--skip-stream") {
        streaming(quick);
    }
    if !args.iter().any(|a| a == "--skip-dump") {
        dumper(quick);
    }
    memory();
}

/// The compiled-out case: the `rash` variety leaves nothing of `event!`.
fn rash(plan: &Plan) {
    let _recording = common::start_ring();
    let cases = [
        Case { name: "empty loop", run: common::empty_loop },
        Case { name: "compiled-out event (rash), 3 words", run: common::compiled_out },
    ];
    let f = measure(&cases, plan);
    println!("## The `rash` variety\n");
    table(&cases, &f);
    println!("| ratio | value | target |\n|---|---:|---|");
    ratio_line("compiled out / empty loop", f[1].0, f[0].0, "= 1");
    println!();
}

/// Cost to the recording thread, one thread and two. The measuring thread is pinned to CPU 0
/// (and the two threads of the two-thread case to CPUs 0 and 1) where the platform allows.
fn micro(plan: &Plan) {
    let pinned = common::pin(0);
    println!(
        "Threads pinned: {}.\n",
        if pinned {
            "the measuring thread to CPU 0, the two threads of the two-thread case to CPUs 0 and 1"
        } else {
            "no (the platform does not allow it)"
        }
    );
    let recording = common::start_ring();
    let cases = [
        Case { name: "empty loop", run: common::empty_loop },
        Case { name: "relaxed-load loop", run: common::relaxed_load_loop },
        Case { name: "floor: cycle counter + store, 0 words", run: common::floor::<0> },
        Case { name: "floor: cycle counter + store, 1 word", run: common::floor::<1> },
        Case { name: "floor: cycle counter + store, 3 words", run: common::floor::<3> },
        Case { name: "floor: cycle counter + store, 6 words", run: common::floor::<6> },
        Case { name: "event!, 0 words", run: common::word0 },
        Case { name: "event!, 1 word", run: common::word1 },
        Case { name: "event!, 3 words", run: common::word3 },
        Case { name: "event!, 6 words", run: common::word6 },
        Case { name: "event!, 16-byte string", run: common::text16 },
        Case { name: "event!, disabled kind", run: common::disabled },
        Case { name: "tracing info!, 3 fields, null subscriber", run: peers::null },
        Case { name: "tracing info!, 3 fields, binary subscriber", run: peers::binary },
    ];
    let f = measure(&cases, plan);
    println!("## One thread (ring policy: the recording thread's cost, no writer)\n");
    table(&cases, &f);
    println!("| ratio (same run) | value | target |\n|---|---:|---|");
    for (k, (floor, event)) in [(0, (2, 6)), (1, (3, 7)), (3, (4, 8)), (6, (5, 9))] {
        let target = if k == 3 { "≤ 1.3" } else { "" };
        ratio_line(&format!("event!, {k} words / floor, {k} words"), f[event].0, f[floor].0, target);
    }
    ratio_line("event!, disabled kind / relaxed-load loop", f[11].0, f[1].0, "≤ 1.5");
    ratio_line("tracing, binary subscriber / event!, 3 words", f[13].0, f[8].0, "> 1");
    ratio_line("tracing, null subscriber / event!, 3 words (context, not a target)", f[12].0, f[8].0, "");
    println!();

    // Two threads at once, each its own rate, against one thread alone; the floor's own
    // two-thread ratio shows what the machine (two cores, shared) allows.
    let mut one = Vec::new();
    let mut two = Vec::new();
    let mut floor_one = Vec::new();
    let mut floor_two = Vec::new();
    let n = calibrate(common::word3, plan);
    let nf = calibrate(common::floor::<3>, plan);
    for _ in 0..plan.rounds {
        one.push(common::word3(n).as_nanos() as f64 / n as f64);
        two.extend(concurrently(2, common::word3, n).into_iter().map(|t| t.as_nanos() as f64 / n as f64));
        floor_one.push(common::floor::<3>(nf).as_nanos() as f64 / nf as f64);
        floor_two.extend(concurrently(2, common::floor::<3>, nf).into_iter().map(|t| t.as_nanos() as f64 / nf as f64));
    }
    let (one, two, floor_one, floor_two) =
        (median(&mut one), median(&mut two), median(&mut floor_one), median(&mut floor_two));
    println!("## Two threads at once (each thread's rate)\n");
    println!(
        "| case | 1 thread, ns/event | 2 threads, ns/event per thread | per-thread rate, 2 threads / 1 | target |"
    );
    println!("|---|---:|---:|---:|---|");
    println!("| event!, 3 words | {one:.2} | {two:.2} | {:.2} | ≥ 0.9 |", one / two);
    println!(
        "| floor, 3 words (what the machine allows) | {floor_one:.2} | {floor_two:.2} | {:.2} | |",
        floor_one / floor_two
    );
    println!();
    drop(recording);
}

/// Removes the segments a rotating configuration wrote beside `path` (`config.000000.evt`, ...).
fn remove_segments(path: &Path) {
    let (Some(dir), Some(stem)) = (path.parent(), path.file_stem()) else { return };
    let prefix = format!("{}.", stem.to_string_lossy());
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&prefix) && name.contains(".evt") && name != format!("{prefix}evt") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// How a configuration's sample is taken (see [`configurations`]).
#[derive(Clone, Copy)]
enum Sample {
    /// Records the sample's `n` events once (pages touched, pipeline full), then times `n`.
    AfterOnce,
    /// Records this many events and flushes (the pool has gone round), then times `n`.
    AfterRound(u64),
    /// Records a pool's worth (`.0` events) and flushes, then times bursts of `.1` events,
    /// each followed by a flush (untimed), until `n` are timed: a program whose bursts fit in
    /// the buffer, so that the writer keeps up.
    Bursts(u64, u64),
}

/// `event!` with 3 words in every configuration a user runs (issue 19), against the floor,
/// in one run: each round starts each configuration's recording (unpinned, so that its
/// writer thread may run on the other core), pins the measuring thread to CPU 0, takes the
/// configuration's [`Sample`] and stops; the floor is timed in the same round. A file
/// configuration's share of events refused (counted lost) is given beside its time: a
/// refused event takes the refusal path, which is timed with the rest.
fn configurations(plan: &Plan, only_default: bool) {
    use event_runtime::{Policy, Recorder};
    type Make = fn(&Path) -> Recorder;
    const EVENT: u64 = 32;
    const DEFAULT_ROUND: u64 = (16 << 20) / EVENT;
    const BIG_ROUND: u64 = (256 << 20) / EVENT;
    // (name, writes a file, sample, make)
    let configs: [(&str, bool, Sample, Make); 13] = [
        (
            "**`switch` to a file, the defaults (16 MiB buffer, packed), bursts of 12 MiB: the writer keeps up**",
            true,
            Sample::Bursts(DEFAULT_ROUND, (12 << 20) / EVENT),
            |p| Recorder::new().file(p),
        ),
        // The same with the writer packing less (LZ4) or not at all: what the writer's
        // packing on the other core costs the recording thread (issue 43).
        (
            "the same, packed with LZ4 (`EVENT_PACK=lz4`)",
            true,
            Sample::Bursts(DEFAULT_ROUND, (12 << 20) / EVENT),
            |p| Recorder::new().file(p).packing(event_runtime::Packing::LZ4),
        ),
        ("the same, not packed (`EVENT_PACK=off`)", true, Sample::Bursts(DEFAULT_ROUND, (12 << 20) / EVENT), |p| {
            Recorder::new().file(p).pack(false)
        }),
        (
            "**the same, rotating: segments of 4 MiB (`EVENT_ROTATE=4m`), 4 kept (`EVENT_KEEP=4`)**",
            false,
            Sample::Bursts(DEFAULT_ROUND, (12 << 20) / EVENT),
            |p| {
                Recorder::new()
                    .file(p)
                    .rotate(event_runtime::Rotate { size: Some(4 << 20), age: None })
                    .keep(event_runtime::Keep { segments: Some(4), ..Default::default() })
            },
        ),
        (
            "`switch` to a file, the defaults, without a pause: the thread outruns the writer",
            true,
            Sample::AfterOnce,
            |p| Recorder::new().file(p),
        ),
        ("`switch` to a file, 256 MiB buffer, first use of its blocks", true, Sample::AfterOnce, |p| {
            Recorder::new().file(p).buffer_size(256 << 20)
        }),
        (
            "`switch` to a file, 256 MiB buffer, its blocks made and reused (pool gone round)",
            true,
            Sample::AfterRound(BIG_ROUND),
            |p| Recorder::new().file(p).buffer_size(256 << 20),
        ),
        ("`switch` to a file, 1 MiB buffer (the writer falls behind)", true, Sample::AfterOnce, |p| {
            Recorder::new().file(p).buffer_size(1 << 20)
        }),
        ("`wait` (`switch`, waiting up to 1 s) to a file", true, Sample::AfterOnce, |p| {
            Recorder::new().file(p).wait(Duration::from_secs(1))
        }),
        ("`ring` in memory (64 MiB)", false, Sample::AfterOnce, |_| {
            Recorder::new().policy(Policy::Ring).buffer_size(64 << 20)
        }),
        ("`ring` in the ring file (64 MiB)", false, Sample::AfterOnce, |p| {
            Recorder::new().policy(Policy::Ring).ring_file(p.with_extension("ring")).buffer_size(64 << 20)
        }),
        // Issue 46: a limit on another event leaves this one's path as it was; a limited one
        // is decided on the cold side (99 of 100 suppressed: no record, no arguments).
        ("`ring` in memory (64 MiB), another event limited (`Bench:Word1=10/s`)", false, Sample::AfterOnce, |_| {
            Recorder::new().policy(Policy::Ring).buffer_size(64 << 20).limit("Bench:Word1=10/s")
        }),
        (
            "`ring` in memory (64 MiB), this event limited to 1/100 (`Bench:Word3=1/100`)",
            false,
            Sample::AfterOnce,
            |_| Recorder::new().policy(Policy::Ring).buffer_size(64 << 20).limit("Bench:Word3=1/100"),
        ),
    ];
    // Calibrated while a recording runs: with none, `event!` is a disabled event and `n`
    // would be fifty times too large for the buffers.
    let n = {
        let _recording = common::start_ring();
        calibrate(common::word3, plan)
    };
    let nf = calibrate(common::floor::<3>, plan);
    // The default and its two other packings (the first three).
    let configs = if only_default { &configs[..3] } else { &configs[..] };
    let mut floor = Vec::new();
    let mut floor_mem = Vec::new();
    let mut stream_floor = Vec::new();
    let mut stream_floor_packed = Vec::new();
    // The streaming floor's steps towards a recorder (`--streaming-floor` only).
    let mut steps: [Vec<f64>; 3] = Default::default();
    let mut pages = Vec::new();
    let mut times = vec![Vec::new(); configs.len()];
    let mut lost = vec![(0u64, 0u64); configs.len()];
    let path = out_dir().join("config.evt");
    for _ in 0..plan.rounds {
        floor.push(common::floor::<3>(nf).as_nanos() as f64 / nf as f64);
        if only_default {
            floor_mem.push(common::floor_in_memory(nf).as_nanos() as f64 / nf as f64);
        }
        pages.push(fresh_page());
        // The streaming floor, sampled as the default configuration is (bursts the writer keeps
        // up with, after a pool's worth): its writer thread started unpinned, as the recorder's.
        // With `--streaming-floor`, the same with a writer that packs as the default's does.
        // And the streaming floor with its state in a thread-local, then a commit word, then
        // a recorder's tests (`StreamFloor::run_thread_local`).
        type Floor = (fn(&Path) -> common::StreamFloor, fn(&mut common::StreamFloor, u64) -> Duration);
        let floors: &[Floor] = if only_default {
            &[
                (common::StreamFloor::new, common::StreamFloor::run),
                (common::StreamFloor::packing, common::StreamFloor::run),
                (common::StreamFloor::new, common::StreamFloor::run_thread_local::<false, false>),
                (common::StreamFloor::new, common::StreamFloor::run_thread_local::<true, false>),
                (common::StreamFloor::new, common::StreamFloor::run_thread_local::<true, true>),
            ]
        } else {
            &[(common::StreamFloor::new, common::StreamFloor::run)]
        };
        for (k, (make_floor, run)) in floors.iter().enumerate() {
            common::unpin();
            let floor_path = path.with_extension("floor");
            let mut s = make_floor(&floor_path);
            common::pin(0);
            run(&mut s, DEFAULT_ROUND);
            s.drain();
            let (mut t, mut timed) = (Duration::ZERO, 0);
            while timed < n {
                t += run(&mut s, (12 << 20) / EVENT);
                timed += (12 << 20) / EVENT;
                s.drain();
            }
            drop(s);
            let _ = std::fs::remove_file(&floor_path);
            let ns = t.as_nanos() as f64 / timed as f64;
            match k {
                0 => stream_floor.push(ns),
                1 => stream_floor_packed.push(ns),
                _ => steps[k - 2].push(ns),
            }
        }
        for (i, (_, file, sample, make)) in configs.iter().enumerate() {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(path.with_extension("ring"));
            // Started unpinned: the writer thread takes the affinity of the thread that starts
            // the recording, and pinned to CPU 0 it would share the measured thread's core.
            common::unpin();
            let recording = make(&path).control("all -Off").start().expect("the recording starts");
            common::pin(0);
            let (t, timed) = match *sample {
                Sample::AfterOnce => {
                    common::word3(n);
                    (common::word3(n), n)
                }
                Sample::AfterRound(w) => {
                    common::word3(w);
                    event_runtime::flush();
                    (common::word3(n), n)
                }
                Sample::Bursts(w, burst) => {
                    common::word3(w);
                    event_runtime::flush();
                    let (mut t, mut timed) = (Duration::ZERO, 0);
                    while timed < n {
                        t += common::word3(burst);
                        timed += burst;
                        event_runtime::flush();
                    }
                    (t, timed)
                }
            };
            recording.stop().expect("the recording stops");
            remove_segments(&path);
            times[i].push(t.as_nanos() as f64 / timed as f64);
            if *file {
                let (events, refused) = census(&path);
                lost[i].0 += events;
                lost[i].1 += refused;
            }
        }
    }
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(path.with_extension("ring"));
    let floor = median(&mut floor);
    let stream_floor = median(&mut stream_floor);
    println!("## Every configuration (`event!`, 3 words, one thread)\n");
    println!("| configuration | ns/event (median) | ratio to the floor | share refused (counted lost) |");
    println!("|---|---:|---:|---:|");
    println!("| floor: cycle counter + store, 3 words | {floor:.2} | 1.00 | |");
    if only_default {
        let m = median(&mut floor_mem);
        println!(
            "| the floor with its state in memory (position, last time, record count, commit word: loaded and stored each event) | {m:.2} | {:.2} | |",
            m / floor
        );
    }
    println!(
        "| streaming floor: the same into 64 KiB blocks of a 16 MiB pool, another thread writing them to a file, bursts of 12 MiB | {stream_floor:.2} | {:.2} | |",
        stream_floor / floor
    );
    let packed_floor = (!stream_floor_packed.is_empty()).then(|| median(&mut stream_floor_packed));
    if let Some(p) = packed_floor {
        println!(
            "| the streaming floor, its writer packing each block as the default's does (columns, zstd) | {p:.2} | {:.2} | |",
            p / floor
        );
    }
    const STEPS: [&str; 3] = [
        "the streaming floor, its state in a thread-local (loaded and stored each event)",
        "the same and a commit word (a release store, for a reader of the block being written)",
        "**the same and a recorder's tests** (the event's bit, a flag against a record inside another, the generation, the delta's 32 bits)",
    ];
    let steps: Vec<f64> = steps.iter_mut().filter(|s| !s.is_empty()).map(|s| median(s)).collect();
    for (name, m) in STEPS.iter().zip(&steps) {
        println!("| {name} | {m:.2} | {:.2} | |", m / floor);
    }
    let guarded_floor = steps.last().copied();
    let mut medians = Vec::new();
    for (i, (name, file, _, _)) in configs.iter().enumerate() {
        let m = median(&mut times[i]);
        let share = if *file {
            format!("{:.2} %", 100.0 * lost[i].1 as f64 / (lost[i].0 + lost[i].1).max(1) as f64)
        } else {
            String::new()
        };
        println!("| {name} | {m:.2} | {:.2} | {share} |", m / floor);
        medians.push(m);
    }
    println!(
        "\nThe default configuration / the streaming floor: **{:.2}** (target ≤ 1.2); the streaming floor / the floor: {:.2}.",
        medians[0] / stream_floor,
        stream_floor / floor
    );
    println!(
        "The same packed with LZ4 / the streaming floor: {:.2}; not packed / the streaming floor: {:.2}.",
        medians[1] / stream_floor,
        medians[2] / stream_floor
    );
    if let Some(p) = packed_floor {
        println!(
            "The streaming floor whose writer packs / the streaming floor: {:.2}; the default / the streaming floor whose writer packs: {:.2}.",
            p / stream_floor,
            medians[0] / p
        );
    }
    if let Some(g) = guarded_floor {
        println!(
            "The streaming floor's steps / the streaming floor: its state in a thread-local {:.2}, and a commit word {:.2}, and a recorder's tests **{:.2}**; the default / the last: {:.2}; not packed / the last: {:.2}.",
            steps[0] / stream_floor,
            steps[1] / stream_floor,
            g / stream_floor,
            medians[0] / g,
            medians[2] / g
        );
    }
    let page = median(&mut pages);
    println!(
        "\nFresh memory on this machine: {page:.0} ns to touch a 4 KiB page the program never used \
         ({:.2} ns per 32-byte event written into it, {:.2} times the floor): what a first use of \
         buffer memory costs the thread.",
        page / 128.0,
        page / 128.0 / floor
    );
    println!();
}

/// Nanoseconds to touch one 4 KiB page of memory this process never used: 64 MiB from the
/// allocator (large enough to be mapped fresh, its pages untouched), one write per page.
fn fresh_page() -> f64 {
    const LEN: usize = 64 << 20;
    let mut memory = vec![0u8; LEN];
    let start = Instant::now();
    for page in memory.chunks_mut(4096) {
        page[0] = 1;
        black_box(&mut page[0]);
    }
    let t = start.elapsed();
    black_box(&memory);
    t.as_nanos() as f64 / (LEN / 4096) as f64
}

/// Runs `run(n)` on `threads` threads started together; each thread's time.
fn concurrently(threads: usize, run: fn(u64) -> Duration, n: u64) -> Vec<Duration> {
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                common::pin(i);
                barrier.wait();
                let t = run(n);
                event_runtime::flush();
                t
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("a benchmark thread panicked")).collect()
}

fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench");
    std::fs::create_dir_all(&dir).expect("target/bench can be created");
    dir
}

/// Events recorded and lost in a stream: (events of the `Bench` kind, events lost).
fn census(path: &Path) -> (u64, u64) {
    use event_format::decode::{Catalog, Decoder, Entry};
    use event_format::wire::Value;
    let file = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(path).expect("the stream exists"));
    let mut decoder = Decoder::new(file).expect("the stream has a header");
    let catalog = Catalog::new(&decoder.header().sets);
    let (mut events, mut lost) = (0, 0);
    while let Some(block) = decoder.next_block() {
        let Ok(block) = block else { continue };
        lost += block.header.lost;
        for entry in block.entries(&catalog) {
            if let Entry::Event(e) = entry {
                if e.desc.code == event_format::builtin::DROPPED {
                    if let Some(Value::Word(n)) = e.values().nth(1) {
                        lost += n;
                    }
                } else if !e.desc.is_builtin() {
                    events += 1;
                }
            }
        }
    }
    (events, lost)
}

/// The `switch` policy streaming to a file with the default buffer size: 10 s at 20 million
/// events/s (paced), and 10 s as fast as one thread goes; and tracing-appender beside it.
fn streaming(quick: bool) {
    let secs = if quick { 2 } else { 10 };
    println!("## Streaming to a file (`switch`, default 16 MiB buffer, 64 KiB blocks)\n");
    println!("| run | events recorded | events lost | share lost | events/s | file bytes/event |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (label, pace) in [("paced at 20 M events/s", Some(20_000_000u64)), ("one thread, unpaced", None)] {
        let path = out_dir().join("stream.evt");
        let recording = event_runtime::Recorder::new().file(&path).start().expect("the stream recording starts");
        let (n, elapsed) = stream_for(Duration::from_secs(secs), pace);
        event_runtime::flush();
        recording.stop().expect("the stream is written");
        let (events, lost) = census(&path);
        let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
        assert_eq!(events + lost, n, "every event is recorded or counted as lost");
        println!(
            "| {label}, {secs} s | {events} | {lost} | {:.4} % | {:.1} M | {:.1} |",
            100.0 * lost as f64 / n as f64,
            n as f64 / elapsed.as_secs_f64() / 1e6,
            bytes as f64 / events.max(1) as f64
        );
        let _ = std::fs::remove_file(&path);
    }
    println!();
    appender(quick);
}

/// Records `Word3` for `time`, at `pace` events/s (in 1 ms bursts) or as fast as it goes.
fn stream_for(time: Duration, pace: Option<u64>) -> (u64, Duration) {
    let start = Instant::now();
    let mut n = 0u64;
    let burst = pace.map_or(10_000, |p| p / 1000);
    let mut next = start;
    while start.elapsed() < time {
        for _ in 0..burst {
            event!(Word3, black_box(n), n + 1, n + 2);
            n += 1;
        }
        if pace.is_some() {
            next += Duration::from_millis(1);
            while Instant::now() < next {
                std::hint::spin_loop();
            }
        }
    }
    (n, start.elapsed())
}

/// tracing with tracing-appender's non-blocking file writer and the fmt layer, lossless and
/// lossy (its default), against this recorder streaming `Word3` to a file.
fn appender(quick: bool) {
    use tracing_subscriber::layer::SubscriberExt;
    let n: u64 = if quick { 200_000 } else { 1_000_000 };
    let rounds = if quick { 3 } else { 5 };
    let mut ours = Vec::new();
    let mut results: Vec<(&str, Vec<f64>, Vec<f64>)> =
        vec![("lossless", Vec::new(), Vec::new()), ("lossy (default)", Vec::new(), Vec::new())];
    for _ in 0..rounds {
        let path = out_dir().join("ours.evt");
        let recording = event_runtime::Recorder::new().file(&path).start().expect("starts");
        let t = common::word3(n);
        event_runtime::flush();
        recording.stop().expect("written");
        let (events, lost) = census(&path);
        assert_eq!(events + lost, n);
        ours.push(t.as_nanos() as f64 / n as f64);
        for (mode, times, lost_shares) in results.iter_mut() {
            let dir = out_dir().join("appender");
            let _ = std::fs::remove_dir_all(&dir);
            let file_appender = tracing_appender::rolling::never(&dir, "log.txt");
            let lossy = *mode != "lossless";
            let (writer, guard) =
                tracing_appender::non_blocking::NonBlockingBuilder::default().lossy(lossy).finish(file_appender);
            let subscriber = tracing_subscriber::registry()
                .with(tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false));
            let t = peers::under(subscriber, || peers::info3(n));
            drop(guard); // flushes what was queued
            let lines = std::fs::File::open(dir.join("log.txt"))
                .map_or(0, |f| std::io::BufReader::new(f).lines().count() as u64);
            times.push(t.as_nanos() as f64 / n as f64);
            lost_shares.push(100.0 * (n - lines.min(n)) as f64 / n as f64);
        }
    }
    let ours = median(&mut ours);
    println!("## Against tracing-appender (non-blocking file writer, fmt layer), {n} events, median of {rounds}\n");
    println!("| case | ns/event | lines lost | ratio to event! → file |");
    println!("|---|---:|---:|---:|");
    println!("| event!, 3 words, `switch` → file | {ours:.1} | 0 % (counted if any) | 1.00 |");
    for (mode, times, lost) in results.iter_mut() {
        let t = median(times);
        println!(
            "| tracing info!, 3 fields → tracing-appender, {mode} | {t:.1} | {:.2} % | {:.1} |",
            median(lost),
            t / ours
        );
    }
    println!("\nTarget: tracing-appender lossless at least 10 times slower than event! → file.\n");
    // The last round's files (the other rounds' were written over): some 100 MB of lines.
    let _ = std::fs::remove_file(out_dir().join("ours.evt"));
    let _ = std::fs::remove_dir_all(out_dir().join("appender"));
}

/// Runs `event-dump` (`dump`) with `args`, its output to /dev/null: its wall time, its peak
/// resident memory in bytes, and whether it succeeded. The peak is the child's own, as GNU
/// time reads it (`/usr/bin/time -f %M`): `wait4`'s `ru_maxrss` for a child of this process
/// counts this process's resident memory when it spawned the child (Linux keeps the high-water
/// mark across `exec`), and read 150 MB for a `check` whose own peak is 6 MB. `None` where
/// /usr/bin/time is missing.
fn run_measured(dump: &Path, args: &[&std::ffi::OsStr]) -> (Duration, Option<u64>, bool) {
    let time = Path::new("/usr/bin/time");
    let report = out_dir().join("dump-peak.txt");
    let _ = std::fs::remove_file(&report);
    let mut cmd = if time.exists() {
        let mut c = Command::new(time);
        c.arg("-f").arg("%M").arg("-o").arg(&report).arg(dump);
        c
    } else {
        Command::new(dump)
    };
    cmd.args(args).stdout(std::process::Stdio::null());
    let start = Instant::now();
    let ok = cmd.status().is_ok_and(|s| s.success());
    let elapsed = start.elapsed();
    let peak = std::fs::read_to_string(&report)
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| l.trim().parse::<u64>().ok()))
        .map(|kb| kb * 1024);
    (elapsed, peak, ok)
}

/// A peak for the tables: megabytes, or "n/a" without /usr/bin/time.
fn megabytes(peak: Option<u64>) -> String {
    peak.map_or_else(|| "n/a".to_owned(), |b| format!("{:.1}", b as f64 / 1e6))
}

/// Writes a log of `n` events: the tour's mix of sizes, on 2 threads.
fn write_log(path: &Path, n: u64, pack: bool) {
    let recording = event_runtime::Recorder::new()
        .file(path)
        .pack(pack)
        .policy(event_runtime::Policy::Switch)
        .wait(Duration::from_secs(1))
        .start()
        .expect("the log's recording starts");
    std::thread::scope(|s| {
        for t in 0..2u64 {
            s.spawn(move || {
                for i in 0..n / 2 {
                    match i % 4 {
                        0 => event!(Word1, i),
                        1 => event!(Word3, i, t, i * 8),
                        2 => event!(Word6, i, t, i, 1, 2, 3),
                        _ => event!(Text, "sixteen bytes!!!"),
                    }
                }
                event_runtime::flush();
            });
        }
    });
    recording.stop().expect("the log is written");
}

/// The dumper's throughput and memory.
fn dumper(quick: bool) {
    let dump = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/event-dump");
    if !dump.exists() {
        println!(
            "## The dumper\n\nskipped: build it first (`cargo build --release -p event-dump`; scripts/bench does)\n"
        );
        return;
    }
    let n: u64 = if quick { 1_000_000 } else { 10_000_000 };
    let packed = out_dir().join("dump-packed.evt");
    let whole = out_dir().join("dump-whole.evt");
    write_log(&packed, n, true);
    write_log(&whole, n, false);
    let runs = if quick { 1 } else { 3 };
    println!("## The dumper on a log of {n} events (median of {runs} runs; print to /dev/null)\n");
    println!("| command | log | file MB | s | file MB/s | events/s | peak RSS MB |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for (log, label) in [(&whole, "whole blocks"), (&packed, "packed")] {
        let mb = std::fs::metadata(log).map_or(0, |m| m.len()) as f64 / 1e6;
        for sub in ["check", "stats", "print"] {
            let mut times = Vec::new();
            let mut rss = None;
            for _ in 0..runs {
                let (t, peak, ok) = run_measured(&dump, &[sub.as_ref(), log.as_os_str()]);
                assert!(ok || sub == "check", "event-dump {sub} failed");
                times.push(t.as_secs_f64());
                rss = rss.max(peak);
            }
            let t = median(&mut times);
            println!(
                "| {sub} | {label} | {mb:.0} | {t:.2} | {:.0} | {:.2} M | {} |",
                mb / t,
                n as f64 / t / 1e6,
                megabytes(rss)
            );
        }
    }
    println!();
    // Memory must not grow with the log: `check` and `print` on 1 GB of whole blocks, and on a
    // tenth of it.
    let big = out_dir().join("dump-1g.evt");
    let events_per_gb = 1_000_000_000 / 34;
    let sizes: &[(u64, &str)] = if quick {
        &[(events_per_gb / 100, "10 MB"), (events_per_gb / 10, "100 MB")]
    } else {
        &[(events_per_gb / 10, "100 MB"), (events_per_gb, "1 GB")]
    };
    println!("| command | log | file MB | s | peak RSS MB |\n|---|---|---:|---:|---:|");
    for &(events, label) in sizes {
        write_log(&big, events, false);
        let mb = std::fs::metadata(&big).map_or(0, |m| m.len()) as f64 / 1e6;
        for sub in ["check", "print"] {
            let (t, peak, _) = run_measured(&dump, &[sub.as_ref(), big.as_os_str()]);
            println!("| {sub} | ~{label} | {mb:.0} | {:.2} | {} |", t.as_secs_f64(), megabytes(peak));
        }
    }
    println!();
    for p in [&packed, &whole, &big] {
        let _ = std::fs::remove_file(p);
    }
}

/// Resident memory of this process, from /proc (Linux), in bytes.
fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
}

/// The recorder's memory: at start, and for each thread that records.
fn memory() {
    let Some(before) = rss() else {
        println!("## Memory\n\nskipped: no /proc/self/status\n");
        return;
    };
    let path = out_dir().join("memory.evt");
    let recording = event_runtime::Recorder::new().file(&path).start().expect("starts");
    let started = rss().unwrap_or(before);
    let threads = 8u64;
    let barrier = Arc::new(Barrier::new(threads as usize + 1));
    let release = Arc::new(Barrier::new(threads as usize + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (barrier, release) = (Arc::clone(&barrier), Arc::clone(&release));
            std::thread::spawn(move || {
                for i in 0..100_000u64 {
                    event!(Word3, i, i, i);
                }
                barrier.wait();
                release.wait();
            })
        })
        .collect();
    barrier.wait();
    let recording_threads = rss().unwrap_or(started);
    // The same threads without recording, for the cost of a thread itself.
    release.wait();
    for h in handles {
        let _ = h.join();
    }
    recording.stop().expect("written");
    let _ = std::fs::remove_file(&path);
    let barrier = Arc::new(Barrier::new(threads as usize + 1));
    let release = Arc::new(Barrier::new(threads as usize + 1));
    let base = rss().unwrap_or(before);
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (barrier, release) = (Arc::clone(&barrier), Arc::clone(&release));
            std::thread::spawn(move || {
                let mut x = 0u64;
                for i in 0..100_000u64 {
                    x = black_box(x + i);
                }
                barrier.wait();
                release.wait();
            })
        })
        .collect();
    barrier.wait();
    let plain_threads = rss().unwrap_or(base);
    release.wait();
    for h in handles {
        let _ = h.join();
    }
    println!("## Memory of the recorder (`switch`, default 16 MiB pool of 64 KiB blocks; resident, from /proc)\n");
    println!("| what | MB |\n|---|---:|");
    println!(
        "| the recording started (pool allocated, pages untouched until used) | {:.1} |",
        (started as f64 - before as f64) / 1e6
    );
    println!(
        "| per recording thread, beyond a thread that does not record ({threads} threads) | {:.2} |",
        ((recording_threads as f64 - started as f64) - (plain_threads as f64 - base as f64)) / threads as f64 / 1e6
    );
    println!();
    let _ = std::io::stdout().flush();
}
