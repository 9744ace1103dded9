//! Writes the log of the table exports' benchmark (scripts/bench-export, BENCHMARKS.md, "The
//! Parquet export"): `EVENTS` events (default 4 M) on 2 threads, a mix of 3-, 4- and
//! 5-parameter events with doubles, a bool and strings, recorded without a loss (`switch`
//! with waiting).
//!
//! `cargo run --release --example export_bench_log -- PATH [EVENTS]`

event_runtime::include_events!("../events.def");

use event_runtime::{Policy, Recorder};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: export_bench_log PATH [EVENTS]");
        std::process::exit(2);
    };
    let n: u64 = match args.next().map(|a| a.parse()) {
        None => 4_000_000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("export_bench_log: EVENTS: {e}");
            std::process::exit(2);
        }
    };
    // The environment's settings apply over these (`EVENT_BUFSIZE=512m` keeps the writer
    // from falling behind, so that every block is packed as a writer that keeps up packs it).
    let recorder = Recorder::new().file(&path).policy(Policy::Switch).wait(std::time::Duration::from_secs(1));
    let recording =
        match recorder.from_env().map_err(|e| e.to_string()).and_then(|r| r.start().map_err(|e| e.to_string())) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("export_bench_log: {e}");
                std::process::exit(1);
            }
        };
    std::thread::scope(|s| {
        for t in 0..2usize {
            s.spawn(move || {
                for i in 0..n / 2 {
                    let pool = 0x1000 + t;
                    match i % 4 {
                        0 => event!(ObjectAlloc, pool, 0x2000 + i as usize, i % 4096, (i % 7) as u32),
                        1 => event!(ObjectFree, pool, 0x2000 + i as usize, i % 4096),
                        2 => event!(ArenaPoll, pool, i * 8, i as f64 / 3.0),
                        _ => event!(ClientCheck, i % 3 == 0, "balance", "sixteen bytes!!!"),
                    }
                }
                event_runtime::flush();
            });
        }
    });
    if let Err(e) = recording.stop() {
        eprintln!("export_bench_log: {e}");
        std::process::exit(1);
    }
}
