//! A program instrumented with `tracing` alone, without an events.def: the three lines that
//! record its events with event-runtime, then ordinary tracing code. It records as the
//! `EVENT_*` environment variables say (the tests set `EVENT_FILE`).

use tracing_subscriber::layer::SubscriberExt as _;

fn main() {
    let subscriber = tracing_subscriber::registry().with(event_runtime::tracing_bridge::EventLayer::new());
    tracing::subscriber::set_global_default(subscriber).unwrap_or_else(|e| fail(&e));
    let recording = event_runtime::start().unwrap_or_else(|e| fail(&e));

    tracing::info!(version = "1.2", "starting");
    for id in 1..=2u32 {
        handle(id);
    }
    tracing::error!(code = 503, reason = "overloaded", "giving up");

    if let Some(recording) = recording {
        recording.stop().unwrap_or_else(|e| fail(&e));
    }
}

fn handle(id: u32) {
    let span = tracing::info_span!("request", id, user = tracing::field::Empty);
    span.record("user", "ada");
    let _entered = span.enter();
    tracing::debug!(bytes = 512 * id, "read");
    if id == 2 {
        tracing::warn!(elapsed_ms = 1500, "slow");
    }
    let _query = tracing::trace_span!("query", table = "users").entered();
    tracing::trace!(rows = id);
}

fn fail(e: &dyn std::fmt::Display) -> ! {
    eprintln!("error: {e}");
    std::process::exit(2)
}
