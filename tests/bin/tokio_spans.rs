//! A tokio program whose requests are instrumented futures, for the bridge's spans
//! (tests/it/async_spans.rs): a multi-thread runtime of four workers runs 16 concurrent
//! `request` spans, each with a nested `query` span, that sleep, yield and hold their worker
//! a moment, so that the others steal them and they move between the workers. It runs
//! rounds of 16 until one of them saw a request polled on two threads (at most 10: a
//! scheduler may keep them all on one worker), and prints `rounds N`. Inside each span it records a `tracing` event, and inside `request`
//! an `event!` too. It records to the file its first argument names.
//!
//! It measures each span's life itself, with `Instant`: from just after the span was created
//! to the end of its future (which the span's close follows), and from just before it was
//! created to just after its future was dropped (which the close precedes). It prints, per
//! span, `span NAME TASK INNER_NS OUTER_NS`: the span's recorded duration is between them.

event_runtime::include_events!("../events.def");

use std::time::{Duration, Instant};
use tracing::Instrument as _;
use tracing_subscriber::layer::SubscriberExt as _;

/// A span's measured bracket: (name, task, inner ns, outer ns).
type Measured = (&'static str, u64, u128, u128);

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| fail(&"usage: tokio-spans FILE"));
    let subscriber = tracing_subscriber::registry().with(event_runtime::tracing_bridge::EventLayer::new());
    tracing::subscriber::set_global_default(subscriber).unwrap_or_else(|e| fail(&e));
    let recording = event_runtime::Recorder::new().file(&path).start().unwrap_or_else(|e| fail(&e));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap_or_else(|e| fail(&e));
    let (measured, rounds) = runtime.block_on(async {
        let mut measured = Vec::new();
        for round in 0..10u64 {
            let tasks: Vec<_> = (1..=16u64).map(|task| tokio::spawn(request(round * 16 + task))).collect();
            let mut moved = false;
            for task in tasks {
                let (spans, threads) = task.await.unwrap_or_else(|e| fail(&e));
                measured.extend(spans);
                moved |= threads > 1;
            }
            if moved {
                return (measured, round + 1);
            }
        }
        (measured, 10)
    });
    recording.stop().unwrap_or_else(|e| fail(&e));
    drop(runtime);
    println!("rounds {rounds}");
    for (name, task, inner, outer) in measured {
        println!("span {name} {task} {inner} {outer}");
    }
}

/// One request: its span, around a future that records, sleeps, runs a query and yields;
/// its two spans measured, and how many threads polled it.
async fn request(task: u64) -> (Vec<Measured>, usize) {
    let before = Instant::now();
    let span = tracing::info_span!("request", task);
    let created = Instant::now();
    let mut threads = std::collections::HashSet::new();
    let (query, ended) = async {
        threads.insert(std::thread::current().id());
        tracing::info!(task, "accepted");
        event!(ArenaDestroy, task as usize, task);
        // Holds the worker: the tasks queued behind this one are stolen by the others.
        std::thread::sleep(Duration::from_millis(1));
        tokio::time::sleep(Duration::from_millis(2)).await;
        threads.insert(std::thread::current().id());
        let query = query(task).await;
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        threads.insert(std::thread::current().id());
        tracing::info!(task, "answered");
        (query, Instant::now())
    }
    .instrument(span)
    .await;
    let dropped = Instant::now();
    (vec![("request", task, (ended - created).as_nanos(), (dropped - before).as_nanos()), query], threads.len())
}

/// A query inside the request: a span created inside the request's, so its child.
async fn query(task: u64) -> Measured {
    let before = Instant::now();
    let span = tracing::info_span!("query", task);
    let created = Instant::now();
    let ended = async move {
        tokio::time::sleep(Duration::from_millis(1)).await;
        tracing::debug!(task, "rows read");
        tokio::task::yield_now().await;
        Instant::now()
    }
    .instrument(span)
    .await;
    let dropped = Instant::now();
    ("query", task, (ended - created).as_nanos(), (dropped - before).as_nanos())
}

fn fail(e: &dyn std::fmt::Display) -> ! {
    eprintln!("error: {e}");
    std::process::exit(2)
}
