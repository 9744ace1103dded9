//! A probe for instruction counts per `tracing` span (callgrind, deterministic where the
//! machine is shared): N spans with three fields, each entered and left twice (an
//! instrumented future polled twice) and closed, through the configuration MODE:
//! `registry` (tracing-subscriber's registry under a layer that does nothing:
//! `shared/tracing_only.rs`), `off` (the registry and the bridge, no
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
//! packing (whose share depends on when it runs). `CALLSITES=off` in the environment records
//! through `EventLayer::with_callsites(false)` (format 2.1.0's records) instead of the
//! default, by callsite.
//!
//! The modes `request-off`, `request-event` and `request-bridge` count, instead of a span, the
//! service benchmark's request without the network (examples/service.rs's handler): an
//! `info_span!("request", id, method, route)` instrumenting a future that records five
//! `event!`s and yields once, polled until it is ready, under the service's `off` (the
//! registry and the bridge, no recording), `event` (the registry under a layer that does
//! nothing, a recording) and `bridge` (the registry and the bridge, a recording) modes. What
//! the bridge adds to a request's instructions is exact here, where the service's own figures
//! (a closed loop's throughput, CPU time) move with the machine's load; the network's share of
//! a request, the kernel's work above all, is not counted.

event_runtime::include_events!("bench.def");

#[path = "../benches/shared/fastrace_request.rs"]
mod fastrace_request;
#[path = "../benches/shared/tracing_only.rs"]
mod tracing_only;

use std::hint::black_box;
use tracing_subscriber::layer::SubscriberExt as _;

/// The bridge's layer: by callsite unless `CALLSITES=off`.
fn bridge_layer() -> event_runtime::tracing_bridge::EventLayer {
    let callsites = std::env::var("CALLSITES").map_or(true, |v| v != "off");
    event_runtime::tracing_bridge::EventLayer::new().with_callsites(callsites)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).expect("usage: span_probe N MODE");
    let mode = args.next().expect("usage: span_probe N MODE");
    if let Some(service_mode) = mode.strip_prefix("request-") {
        return requests(n, service_mode);
    }
    let layer = bridge_layer();
    let dispatch = match mode.as_str() {
        "registry" | "fastrace" => tracing::Dispatch::new(tracing_only::registry()),
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

/// `n` of the service's requests, without the network, in the service's mode `mode`.
fn requests(n: u64, mode: &str) {
    let layer = bridge_layer();
    let dispatch = match mode {
        "off" | "bridge" => tracing::Dispatch::new(tracing_subscriber::registry().with(layer)),
        "event" => tracing::Dispatch::new(tracing_only::registry()),
        other => panic!("mode request-{other}"),
    };
    let path = std::env::temp_dir().join(format!("span-probe-{}.evt", std::process::id()));
    let recording =
        (mode != "off").then(|| event_runtime::Recorder::new().file(&path).start().expect("the recording starts"));
    tracing::dispatcher::with_default(&dispatch, || {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        for i in 0..n {
            let mut request = std::pin::pin!(request(black_box(i)));
            while request.as_mut().poll(&mut cx).is_pending() {}
        }
    });
    if let Some(recording) = recording {
        recording.stop().expect("the recording stops");
        let _ = std::fs::remove_file(&path);
    }
}

/// The service's handler (examples/service.rs's `order`), its five steps `event!`s of this
/// benchmark's set.
async fn request(id: u64) -> u64 {
    use tracing::Instrument as _;
    let span = tracing::info_span!("request", id, method = "GET", route = "/orders/{id}");
    async move {
        event!(Word3, id, 1u64, 0u64);
        event!(Word3, id, u64::from(id.is_multiple_of(3)), 1u64);
        YieldOnce(false).await;
        event!(Word3, id, 3u64, 2u64);
        event!(Word3, id, 24u64, 3u64);
        event!(Word3, id, 200u64, 4u64);
        id
    }
    .instrument(span)
    .await
}

/// A future that is pending once: the request's second poll (the service's `yield_now`).
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}
