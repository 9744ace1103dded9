//! Records what the recorder aggregates (tests/aggregates.def: a limited event, histograms),
//! for it/aggregates.rs. The recorder's settings come from the `EVENT_*` variables
//! (`event_runtime::start`).
//!
//! - `aggregate-child limit EVENT N SECONDS THREADS`: each of THREADS threads records N events
//!   `EVENT` (`Seq`, limited to 100/s by events.def, or `Sample`, unlimited unless
//!   `EVENT_LIMIT` says), in 100 batches evenly over SECONDS; prints `emitted TOTAL` and stops.
//! - `aggregate-child hist SEGMENTS VALUES`: for each of SEGMENTS periods, two threads record
//!   VALUES `Size` events each, of sizes the child chooses, and a `work` span each; then the
//!   recording seals its segment (`Recording::rotate`, which returns once the next is being
//!   written). For each period it prints `segment INDEX COUNT SUM MIN MAX BUCKETS`: the
//!   distribution of the sizes it recorded there, as it measured them itself (the buckets'
//!   text as a `Histogram` record writes it, HDR3), and `spans INDEX N` the spans it ended;
//!   a `job` span (async, by its id) begins on the first thread and ends on the main one.
//! - `aggregate-child hold`: prints `ready`, then records `Plain` events (one every 50 µs)
//!   until its standard input ends; prints `emitted N` and stops.

event_runtime::include_events!("aggregates.def");

use event_format::histogram::Distribution;
use event_format::schema::Buckets;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_else(|| usage());
    let number = |i: usize| arg(i).parse::<u64>().unwrap_or_else(|_| usage());
    let recording = match event_runtime::start() {
        Ok(Some(r)) => r,
        Ok(None) => fail("the environment asks for no recording"),
        Err(e) => fail(&e.to_string()),
    };
    match arg(0).as_str() {
        "limit" => {
            let (event, n, seconds, threads) = (arg(1), number(2), number(3), number(4));
            let sample = match event.as_str() {
                "Seq" => false,
                "Sample" => true,
                _ => usage(),
            };
            let batch = n.div_ceil(100).max(1);
            let pause = Duration::from_secs(seconds) / 100;
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    std::thread::Builder::new()
                        .name(format!("limited-{t}"))
                        .spawn(move || {
                            let start = Instant::now();
                            let mut i = 0;
                            for round in 0..100u32 {
                                for _ in 0..batch {
                                    if i == n {
                                        break;
                                    }
                                    if sample {
                                        event!(Sample, i);
                                    } else {
                                        event!(Seq, i);
                                    }
                                    i += 1;
                                }
                                // Evenly over the time asked for, whatever each batch took.
                                let due = pause * (round + 1);
                                if let Some(wait) = due.checked_sub(start.elapsed()) {
                                    std::thread::sleep(wait);
                                }
                            }
                            i
                        })
                        .unwrap()
                })
                .collect();
            let total: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
            println!("emitted {total}");
        }
        "hist" => {
            let (segments, values) = (number(1), number(2));
            let mut index = recording.rotate().unwrap_or_else(|| fail("no segments: set EVENT_ROTATE"));
            let mut seed = 0x2545_f491_4f6c_dd1du64;
            for _ in 0..segments {
                let mut mine = Distribution::new(Buckets { precision: 3 });
                let mut sizes: Vec<Vec<u64>> = Vec::new();
                for _ in 0..2 {
                    let mut v = Vec::new();
                    for _ in 0..values {
                        // xorshift: sizes over many powers of two, below 2^52.
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        v.push((seed >> 12) >> (seed % 44));
                    }
                    for &s in &v {
                        mine.record(s);
                    }
                    sizes.push(v);
                }
                let workers: Vec<_> = sizes
                    .into_iter()
                    .enumerate()
                    .map(|(t, v)| {
                        std::thread::spawn(move || {
                            if t == 0 {
                                // An async span: begun here, ended by the main thread.
                                event!(JobStart, index);
                            }
                            event!(WorkBegin, t as u64);
                            for s in v {
                                event!(Size, s, 7u32);
                            }
                            std::thread::sleep(Duration::from_millis(2));
                            event!(WorkEnd, t as u64);
                        })
                    })
                    .collect();
                for w in workers {
                    w.join().unwrap();
                }
                event!(JobDone, index);
                println!(
                    "segment {index} {} {} {} {} {}",
                    mine.count(),
                    mine.sum(),
                    mine.min().unwrap_or(0),
                    mine.max().unwrap_or(0),
                    mine.buckets_text()
                );
                println!("spans {index} 2");
                let next = recording.rotate().unwrap_or_else(|| fail("the rotation did not happen"));
                if next != index + 1 {
                    fail(&format!("segment {index} was followed by {next}"));
                }
                index = next;
            }
        }
        "hold" => {
            println!("ready");
            let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let watcher = {
                let done = std::sync::Arc::clone(&done);
                std::thread::spawn(move || {
                    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
                    done.store(true, std::sync::atomic::Ordering::Relaxed);
                })
            };
            let mut n = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                event!(Plain, n);
                n += 1;
                std::thread::sleep(Duration::from_micros(50));
            }
            let _ = watcher.join();
            println!("emitted {n}");
        }
        _ => usage(),
    }
    drop(recording);
}

fn usage() -> ! {
    fail("usage: aggregate-child limit Seq|Sample N SECONDS THREADS | hist SEGMENTS VALUES | hold")
}

fn fail(why: &str) -> ! {
    eprintln!("aggregate-child: {why}");
    std::process::exit(2)
}
