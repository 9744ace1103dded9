//! A program instrumented with `tracing` alone, without an events.def: the three lines that
//! record its events with event-runtime, then ordinary tracing code. It records as the
//! `EVENT_*` environment variables say (the tests set `EVENT_FILE`). With the argument
//! `fields`, it records instead jobs whose fields a reader finds by name: spans and events
//! with `id` 7 and 70, every kind of value, and a message that reads like a field.

use tracing_subscriber::layer::SubscriberExt as _;

fn main() {
    let subscriber = tracing_subscriber::registry().with(event_runtime::tracing_bridge::EventLayer::new());
    tracing::subscriber::set_global_default(subscriber).unwrap_or_else(|e| fail(&e));
    let recording = event_runtime::start().unwrap_or_else(|e| fail(&e));
    if std::env::args().nth(1).as_deref() == Some("fields") {
        fields();
        if let Some(recording) = recording {
            recording.stop().unwrap_or_else(|e| fail(&e));
        }
        return;
    }

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

/// Spans and events whose fields are found by name: `id` 7 and 70 (which a text match of
/// `id=7` would confuse), a float, a boolean, a string with a space and a quote, a `Debug`
/// value, a `Display` value, and a message that ends as a field would.
fn fields() {
    for id in [7u64, 70] {
        let span = tracing::info_span!("job", id, attempt = 1, user = "ada \"l\"");
        let _entered = span.enter();
        tracing::info!(id, ratio = 0.5, ok = id == 7, "job done");
        tracing::debug!(id, parts = ?[1, 2], addr = %"127.0.0.1:80");
    }
    tracing::warn!("done count=3");
}

fn fail(e: &dyn std::fmt::Display) -> ! {
    eprintln!("error: {e}");
    std::process::exit(2)
}
