//! `tracing` installed with nothing recording it: the subscriber that the benchmarks'
//! baselines and their `event!`-only cases install (`benches/spans.rs`,
//! `examples/service.rs`, `examples/span_probe.rs`, `examples/service_span_sizes.rs`).
//!
//! tracing-subscriber's registry frees a closed span's data only when a layer sits on it
//! (`Layered::try_close` runs the registry's close guard; tokio-rs/tracing#900): installed
//! alone, it keeps every span it ever made, and each new one takes a slot of its growing
//! slab, on pages the kernel zeroes first. A service always has a layer on its registry, so
//! the benchmarks put one that does nothing there (`Identity`), and a span's slot is reused
//! as in the service. With the registry alone, the service benchmark's `event!`-only mode
//! paid for that growth on its thread and counted it as `event!`'s (BENCHMARKS.md, "the
//! `event!`-only baseline without the registry's leak").

use tracing_subscriber::layer::{Identity, Layered, SubscriberExt};

/// tracing-subscriber's registry under a layer that does nothing, as a service installs it
/// under its own layers.
pub(crate) fn registry() -> Layered<Identity, tracing_subscriber::Registry> {
    tracing_subscriber::registry().with(Identity::new())
}
