//! A program whose threads are alive, blocked or unjoined when its recording stops, for the
//! tests of what the stop collects (`it/stop.rs`). `stop-child MODE ARGS...`; the recorder's
//! other settings come from the `EVENT_*` variables. Every mode records numbered events
//! (`ArenaDestroy(worker, i)`, as `recorder-child` does) and prints, after the stop,
//! `lost N`: the events the process counted as lost unattributed.
//!
//! - `tokio PATH before|after TASKS STEPS`: a multi-thread tokio runtime of 4 workers runs
//!   TASKS tasks (worker = task), each recording STEPS events inside a `tracing` span through
//!   the bridge, yielding and sleeping so that tasks move between the runtime's threads; the
//!   recording (to the event file PATH) is dropped `before` the runtime (its worker threads
//!   alive and parked) or `after` it.
//! - `detached PATH N`: a thread never joined records N events as worker 0 and then blocks
//!   for good; the main thread stops the recording meanwhile.
//! - `running PATH THREADS MS`: THREADS threads record events as fast as the pace allows (a
//!   millisecond's sleep every 64 events), never stopping; after MS milliseconds the main
//!   thread stops the recording while they record.
//! - `scoped ROUNDS THREADS N [LATE_US]`: ROUNDS times, a recording into memory, THREADS
//!   scoped threads recording N events each (no flush), and the stop right after the scope;
//!   each round's stream is decoded, and a round where a worker's run is not whole is printed
//!   as `round R: ...` with exit code 1. With LATE_US, each thread's exit flush (its
//!   thread-local destructor) is delayed by up to that many microseconds, so that it runs
//!   while the stop takes the threads' lanes.
//! - `rss PATH N`: records N events from the main thread, prints `rss KB`, the process's
//!   resident memory (`VmRSS`) while the recording runs, and stops.

event_runtime::include_events!("../events.def");

use event_runtime::Recorder;
use std::time::Duration;
use tracing::Instrument as _;
use tracing_subscriber::layer::SubscriberExt as _;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_else(|| usage());
    let number = |i: usize| arg(i).parse::<u64>().unwrap_or_else(|_| usage());
    let recorder = |path: &str| Recorder::new().file(path).from_env().unwrap_or_else(|e| fail(&e));
    match arg(0).as_str() {
        "tokio" => {
            let subscriber = tracing_subscriber::registry().with(event_runtime::tracing_bridge::EventLayer::new());
            tracing::subscriber::set_global_default(subscriber).unwrap_or_else(|e| fail(&e));
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(4)
                .enable_time()
                .build()
                .unwrap_or_else(|e| fail(&e));
            let recording = recorder(&arg(1)).start().unwrap_or_else(|e| fail(&e));
            let (tasks, steps) = (number(3), number(4));
            runtime.block_on(async move {
                let handles: Vec<_> = (0..tasks)
                    .map(|task| tokio::spawn(numbered_task(task, steps).instrument(tracing::info_span!("task", task))))
                    .collect();
                for handle in handles {
                    handle.await.unwrap_or_else(|e| fail(&e));
                }
            });
            match arg(2).as_str() {
                "before" => {
                    recording.stop().unwrap_or_else(|e| fail(&e));
                    drop(runtime);
                }
                "after" => {
                    drop(runtime);
                    recording.stop().unwrap_or_else(|e| fail(&e));
                }
                _ => usage(),
            }
        }
        "detached" => {
            let recording = recorder(&arg(1)).start().unwrap_or_else(|e| fail(&e));
            let n = number(2);
            let (done, recorded) = std::sync::mpsc::channel();
            std::thread::Builder::new()
                .name("detached".into())
                .spawn(move || {
                    for i in 0..n {
                        event!(ArenaDestroy, 0usize, i);
                    }
                    let _ = done.send(());
                    loop {
                        std::thread::park();
                    }
                })
                .unwrap_or_else(|e| fail(&e));
            recorded.recv().unwrap_or_else(|e| fail(&e));
            recording.stop().unwrap_or_else(|e| fail(&e));
        }
        "running" => {
            let recording = recorder(&arg(1)).start().unwrap_or_else(|e| fail(&e));
            for w in 0..number(2) {
                std::thread::Builder::new()
                    .name(format!("worker-{w}"))
                    .spawn(move || {
                        for i in 0u64.. {
                            event!(ArenaDestroy, w as usize, i);
                            if i % 64 == 63 {
                                std::thread::sleep(Duration::from_millis(1));
                            }
                        }
                    })
                    .unwrap_or_else(|e| fail(&e));
            }
            std::thread::sleep(Duration::from_millis(number(3)));
            recording.stop().unwrap_or_else(|e| fail(&e));
        }
        "scoped" => {
            let (rounds, threads, n) = (number(1), number(2), number(3));
            let late_us = args.get(4).map_or(0, |_| number(4));
            for round in 0..rounds {
                let recording = Recorder::new().memory().from_env().unwrap_or_else(|e| fail(&e));
                let recording = recording.start().unwrap_or_else(|e| fail(&e));
                std::thread::scope(|scope| {
                    for w in 0..threads {
                        scope.spawn(move || {
                            for i in 0..n {
                                event!(ArenaDestroy, w as usize, i);
                            }
                            if late_us > 0 {
                                // Spread over 0..late_us, varying by round and worker.
                                let us = (round * 7 + w * 13) % 16 * late_us / 16;
                                LATE.with(|late| late.set(Duration::from_micros(us)));
                            }
                        });
                    }
                });
                let stream = recording.stop().unwrap_or_else(|e| fail(&e));
                let found = event_tests::numbered(&stream).unwrap_or_else(|e| {
                    println!("round {round}: {e}");
                    std::process::exit(1)
                });
                for w in 0..threads {
                    let run = found.by_worker.get(&w).map_or(&[][..], Vec::as_slice);
                    if run.len() as u64 != n || run.iter().enumerate().any(|(i, &v)| v != i as u64) {
                        println!(
                            "round {round}: worker {w} has {} of its {n} events (lost {})",
                            run.len(),
                            event_runtime::lost_unattributed()
                        );
                        std::process::exit(1);
                    }
                }
            }
            println!("rounds {rounds}");
        }
        "rss" => {
            let recording = recorder(&arg(1)).start().unwrap_or_else(|e| fail(&e));
            for i in 0..number(2) {
                event!(ArenaDestroy, 0usize, i);
            }
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_else(|e| fail(&e));
            let rss =
                status.lines().find_map(|l| l.strip_prefix("VmRSS:")).map_or("?", |v| v.trim_end_matches("kB").trim());
            println!("rss {rss}");
            recording.stop().unwrap_or_else(|e| fail(&e));
        }
        _ => usage(),
    }
    println!("lost {}", event_runtime::lost_unattributed());
}

/// A delay in a thread-local destructor that runs before the recorder's (registered after
/// it, on the thread's first event; they run last registered first): the thread's exit
/// flush then meets the stop that follows the scope (`scoped` with `LATE_US`).
struct Late(std::cell::Cell<Duration>);

impl Late {
    fn set(&self, delay: Duration) {
        self.0.set(delay);
    }
}

impl Drop for Late {
    fn drop(&mut self) {
        // A spin, not a sleep: delays of a few microseconds.
        let until = std::time::Instant::now() + self.0.get();
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

thread_local! {
    static LATE: Late = const { Late(std::cell::Cell::new(Duration::ZERO)) };
}

/// Task `task`'s numbered events, with the task moving between the runtime's threads.
async fn numbered_task(task: u64, steps: u64) {
    for i in 0..steps {
        event!(ArenaDestroy, task as usize, i);
        tracing::info!(i, "step");
        if i % 4 == 3 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
}

fn fail(e: &dyn std::fmt::Display) -> ! {
    eprintln!("stop-child: {e}");
    std::process::exit(2)
}

fn usage() -> ! {
    eprintln!("usage: stop-child tokio|detached|running|scoped ARGS... (see its source)");
    std::process::exit(2)
}
