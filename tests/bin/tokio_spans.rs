//! A tokio program whose requests are instrumented futures, for the bridge's spans
//! (tests/it/async_spans.rs): a multi-thread runtime of four workers runs 16 concurrent
//! `request` spans, each with a nested `query` span, that sleep and yield so that they move
//! between the workers. Inside each span it records a `tracing` event, and inside `request`
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
    let measured: Vec<Measured> = runtime.block_on(async {
        let tasks: Vec<_> = (1..=16u64).map(|task| tokio::spawn(request(task))).collect();
        let mut measured = Vec::new();
        for task in tasks {
            measured.extend(task.await.unwrap_or_else(|e| fail(&e)));
        }
        measured
    });
    recording.stop().unwrap_or_else(|e| fail(&e));
    drop(runtime);
    for (name, task, inner, outer) in measured {
        println!("span {name} {task} {inner} {outer}");
    }
}

/// One request: its span, around a future that records, sleeps, runs a query and yields.
async fn request(task: u64) -> Vec<Measured> {
    let before = Instant::now();
    let span = tracing::info_span!("request", task);
    let created = Instant::now();
    let (query, ended) = async move {
        tracing::info!(task, "accepted");
        event!(ArenaDestroy, task as usize, task);
        tokio::time::sleep(Duration::from_millis(2)).await;
        let query = query(task).await;
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        tracing::info!(task, "answered");
        (query, Instant::now())
    }
    .instrument(span)
    .await;
    let dropped = Instant::now();
    vec![("request", task, (ended - created).as_nanos(), (dropped - before).as_nanos()), query]
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
