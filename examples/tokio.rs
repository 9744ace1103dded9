//! A tokio service recorded whole: a multi-thread runtime, tasks that move between its worker
//! threads, `#[instrument]` spans and `tracing` events through the bridge, and `event!`s from
//! the project's events.def. The recording is held in `main` and stopped while the runtime's
//! worker threads are still alive: the stop takes what every thread recorded, so the trace is
//! whole. It records to target/tokio.evt (or the path in `EVENT_FILE`).
//!
//! Run it with `cargo run --example tokio`, then
//! `cargo run -p event-dump -- check target/tokio.evt` (whole) and
//! `cargo run -p event-dump -- stats target/tokio.evt` (every task's events, 0 lost).

event_runtime::include_events!("../events.def");

use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt as _;

/// Requests the service handles, each a task.
const REQUESTS: u64 = 40;
/// Steps per request: each awaits a timer or yields, so the task may resume on another thread.
const STEPS: u64 = 8;

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::var_os("EVENT_FILE").unwrap_or_else(|| "target/tokio.evt".into());
    let subscriber = tracing_subscriber::registry().with(event_runtime::tracing_bridge::EventLayer::new());
    tracing::subscriber::set_global_default(subscriber)?;
    let recording = event_runtime::Recorder::new().file(&path).from_env()?.start()?;

    let tasks: Vec<_> = (0..REQUESTS).map(|id| tokio::spawn(handle(id))).collect();
    for task in tasks {
        task.await?;
    }

    // Stopped here, inside the runtime: its worker threads are alive (parked) and hold
    // the last events they recorded. Nothing needs flushing or joining first.
    recording.stop()?;
    eprintln!(
        "recorded {} requests of {STEPS} steps to {}; read it with `cargo run -p event-dump -- stats {}`",
        REQUESTS,
        path.to_string_lossy(),
        path.to_string_lossy()
    );
    Ok(())
}

/// One request: a span (`#[instrument]`, entered and exited on whichever thread polls the
/// task), an `event!` per step, and a `tracing` event at the end.
#[tracing::instrument]
async fn handle(id: u64) {
    for step in 0..STEPS {
        event!(ClientPhase, "request", step, id as i64);
        if step % 2 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
    tracing::info!(id, steps = STEPS, "handled");
}
