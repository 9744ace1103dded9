//! One span's cost, side by side in one run: a `tracing` span with three fields, created,
//! entered and left twice (an instrumented future polled twice) and closed, through
//!
//! - `registry`: tracing-subscriber's registry under a layer that does nothing
//!   (`shared/tracing_only.rs`: what any layer costs on top of);
//! - `bridge-off`: the registry and the bridge, no recording running;
//! - `bridge`: the registry and the bridge recording to a file (`switch`): `SpanOpen`,
//!   `SpanClose`;
//! - `bridge-entries`: the same with `EventLayer::with_entries(true)` (`SpanEnter` and
//!   `SpanExit` on every entry and exit);
//! - `fmt`: the registry and tracing-subscriber's `fmt` layer writing to `io::sink` (its
//!   formatting, without a file);
//! - `fastrace`: a fastrace root span with the same properties, set as the thread's local
//!   parent twice (its two polls) and dropped, to a reporter that drops what it gets
//!   (`shared/fastrace_request.rs`, which the callgrind probe `examples/span_probe.rs` runs too).
//!
//! `cargo bench -p event-benches --bench spans`

#[path = "shared/fastrace_request.rs"]
mod fastrace_request;
#[path = "shared/tracing_only.rs"]
mod tracing_only;

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt as _;

/// What each configuration does per iteration: one span's life.
fn one_span() {
    let span = tracing::info_span!("request", id = black_box(7u64), method = "GET", route = "/orders/{id}");
    for _ in 0..2 {
        let _entered = span.enter();
        black_box(&span);
    }
    drop(span);
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("span");
    let registry = Dispatch::new(tracing_only::registry());
    group.bench_function("registry", |b| tracing::dispatcher::with_default(&registry, || b.iter(one_span)));
    let bridge = Dispatch::new(tracing_subscriber::registry().with(event_runtime::tracing_bridge::EventLayer::new()));
    group.bench_function("bridge-off", |b| tracing::dispatcher::with_default(&bridge, || b.iter(one_span)));
    let dir = std::env::temp_dir().join(format!("event-spans-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    {
        let recording =
            event_runtime::Recorder::new().file(dir.join("spans.evt")).start().expect("the recording starts");
        group.bench_function("bridge", |b| tracing::dispatcher::with_default(&bridge, || b.iter(one_span)));
        let entries = Dispatch::new(
            tracing_subscriber::registry().with(event_runtime::tracing_bridge::EventLayer::new().with_entries(true)),
        );
        group.bench_function("bridge-entries", |b| tracing::dispatcher::with_default(&entries, || b.iter(one_span)));
        recording.stop().expect("the recording stops");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let fmt = Dispatch::new(
        tracing_subscriber::registry()
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::sink).with_ansi(false)),
    );
    group.bench_function("fmt", |b| tracing::dispatcher::with_default(&fmt, || b.iter(one_span)));
    fastrace::set_reporter(fastrace_request::Dropping, fastrace::collector::Config::default());
    group.bench_function("fastrace", |b| b.iter(|| fastrace_request::request(7)));
    group.finish();
    fastrace::flush();
}

criterion_group!(benches, bench);
criterion_main!(benches);
