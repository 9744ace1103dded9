//! A probe for instruction counts per `tracing` span (callgrind, deterministic where the
//! machine is shared): N spans with three fields, each entered and left twice (an
//! instrumented future polled twice) and closed, through the configuration MODE:
//! `registry` (tracing-subscriber's registry alone), `off` (the registry and the bridge, no
//! recording), `bridge` (recording to a file), `entries` (the bridge with
//! `with_entries(true)`), `event` (the bridge, and one `event!` inside each entry: what the
//! `SpanCurrent` marks cost), `trace` (the bridge, and one `tracing::info!` with two fields
//! inside each entry: what a `tracing` event costs), `fmt` (the `fmt` layer to `io::sink`), `fastrace` (a fastrace
//! root span with the same three properties, set as the local parent twice and dropped, to a
//! reporter that drops what it gets; run inside the registry's dispatcher so that the same
//! `--toggle-collect` counts it). The marginal cost per
//! span is the difference between two runs' counts divided by the difference of their N:
//!
//! ```text
//! cargo build --release -p event-benches --example span_probe
//! for n in 20000 40000; do valgrind --tool=callgrind \
//!   --toggle-collect='tracing_core::dispatcher::with_default*' --callgrind-out-file=/tmp/cg.$n \
//!   target/release/examples/span_probe $n bridge; done
//! ```
//!
//! `--toggle-collect` counts the recording thread's loop only, not the writer thread's
//! packing (whose share depends on when it runs).

event_runtime::include_events!("bench.def");

#[path = "../benches/shared/fastrace_request.rs"]
mod fastrace_request;

use std::hint::black_box;
use tracing_subscriber::layer::SubscriberExt as _;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).expect("usage: span_probe N MODE");
    let mode = args.next().expect("usage: span_probe N MODE");
    let layer = event_runtime::tracing_bridge::EventLayer::new();
    let dispatch = match mode.as_str() {
        "registry" | "fastrace" => tracing::Dispatch::new(tracing_subscriber::registry()),
        "off" | "bridge" | "event" | "trace" => tracing::Dispatch::new(tracing_subscriber::registry().with(layer)),
        "entries" => tracing::Dispatch::new(tracing_subscriber::registry().with(layer.with_entries(true))),
        "fmt" => tracing::Dispatch::new(
            tracing_subscriber::registry()
                .with(tracing_subscriber::fmt::layer().with_writer(std::io::sink).with_ansi(false)),
        ),
        other => panic!("mode {other}"),
    };
    let path = std::env::temp_dir().join(format!("span-probe-{}.evt", std::process::id()));
    let recording = matches!(mode.as_str(), "bridge" | "entries" | "event" | "trace")
        .then(|| event_runtime::Recorder::new().file(&path).start().expect("the recording starts"));
    let with_event = mode == "event";
    let with_trace = mode == "trace";
    if mode == "fastrace" {
        fastrace::set_reporter(fastrace_request::Dropping, fastrace::collector::Config::default());
        tracing::dispatcher::with_default(&dispatch, || {
            for i in 0..n {
                fastrace_request::request(i);
            }
        });
        fastrace::flush();
        return;
    }
    tracing::dispatcher::with_default(&dispatch, || {
        for i in 0..n {
            let span = tracing::info_span!("request", id = black_box(i), method = "GET", route = "/orders/{id}");
            for _ in 0..2 {
                let _entered = span.enter();
                if with_event {
                    event!(Word1, i);
                }
                if with_trace {
                    tracing::info!(id = black_box(i), cached = true, "step");
                }
            }
            drop(span);
        }
    });
    if let Some(recording) = recording {
        recording.stop().expect("the recording stops");
        let _ = std::fs::remove_file(&path);
    }
}
