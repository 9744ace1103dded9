//! Bytes a request of the service benchmark's requests through the `tracing` bridge, at rest,
//! written by callsite (the default: docs/FORMAT.md, "Callsites") and without (issue 42).
//!
//! One thread serves requests as examples/service.rs's handler does, without the network: an
//! `info_span!("request", id, method, route)` around a future polled twice (it yields once),
//! five `event!`s inside it. Each is recorded to an event file unpacked, then its blocks are
//! packed as the writer packs them (zstd, the default, and LZ4), in these variants:
//!
//! - `event!` only: no span (the registry under a layer that does nothing, without the
//!   bridge: `shared/tracing_only.rs`);
//! - the bridge, by callsite (the default): a `Callsite` a block for `request` and its field
//!   names, and a `SpanOpenAt` a request with the ids and `0=.. 1="GET" 2="/orders/{id}"`;
//! - the bridge without callsites (`EventLayer::with_callsites(false)`, format 2.1.0's
//!   records): `SpanOpen` carries `request` and `id=.. method="GET" route="/orders/{id}"`;
//! - the same with one-letter names (the span `r`, its fields `a`, `b` and `c`): what the
//!   names cost, at most;
//! - the bridge with the five steps as `tracing::info!(id, step, "step")` (`TraceEvent`s, as
//!   the service's `fmt` mode records them), by callsite, without, and without with one-letter
//!   names (the target `t`, the fields `a` and `b`).
//!
//! `cargo run --release -p event-benches --example service_span_sizes [-- REQUESTS]` (100 000 by
//! default). Sizes are exact up to the events' times (a few percent between runs); no time is
//! measured.

event_runtime::include_events!("service.def");

#[path = "../benches/shared/tracing_only.rs"]
mod tracing_only;

use event_runtime::{Packing, Recorder};
use std::path::{Path, PathBuf};
use tracing_subscriber::layer::SubscriberExt as _;

/// Computation standing for a request's work: `n` rounds of a hash.
fn work(n: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for i in 0..n {
        h = (h ^ i).wrapping_mul(0x100_0000_01b3);
    }
    std::hint::black_box(h)
}

/// Which spans a request has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    /// No span: `event!` only.
    Events,
    /// The service's span and field names.
    Names,
    /// One-letter names.
    Short,
    /// The service's span, and its five steps as `tracing::info!`s (as the service's `fmt`
    /// mode records them) instead of `event!`s.
    Traced,
    /// As `Traced` with one-letter names: the span's, its fields', the events' target and
    /// fields'.
    TracedShort,
}

/// A future that is pending once: the request's second poll.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            std::task::Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    }
}

/// A request: five steps, a yield between the second and the third.
async fn request(id: u64, variant: Variant) {
    step(variant, id, 0);
    work(200);
    step(variant, id, 1);
    YieldOnce(false).await;
    step(variant, id, 2);
    work(400);
    step(variant, id, 3);
    step(variant, id, 4);
}

/// One step of a request: an `event!`, or a `tracing::info!` in the `Traced` variants.
fn step(variant: Variant, id: u64, step: u32) {
    match (variant, step) {
        (Variant::Traced, _) => tracing::info!(id, step, "step"),
        (Variant::TracedShort, _) => tracing::info!(target: "t", a = id, b = step, "step"),
        (_, 0) => event!(ReqParsed, id, 1u64),
        (_, 1) => event!(CacheLookup, id, id.is_multiple_of(3)),
        (_, 2) => event!(DbQuery, id, 3u64),
        (_, 3) => event!(Rendered, id, 24u64),
        _ => event!(Replied, id, 200u32),
    }
}

/// Polls `f` to its end on this thread.
fn run<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// Serves `requests` requests in `variant`.
fn serve(requests: u64, variant: Variant) {
    use tracing::Instrument as _;
    for id in 0..requests {
        let r = request(id, variant);
        match variant {
            Variant::Events => run(r),
            Variant::Names | Variant::Traced => {
                run(r.instrument(tracing::info_span!("request", id, method = "GET", route = "/orders/{id}")))
            }
            Variant::Short | Variant::TracedShort => {
                run(r.instrument(tracing::info_span!("r", a = id, b = "GET", c = "/orders/{id}")))
            }
        }
    }
    event_runtime::flush();
}

/// The bytes of the stream at `path` (written unpacked): its header and each block's header
/// and records (`used`: what a block holds, where the file holds whole blocks, partly empty
/// when the writer handed one on before it was full), and the stream with each of its blocks
/// packed by `packing` where that makes it smaller, as the writer packs when it keeps up:
/// exact, where the bytes of a recording packed on the fly depend on how often its writer
/// fell behind and wrote blocks whole.
fn sizes(path: &Path, packings: &[Packing]) -> Vec<u64> {
    use event_format::wire::Packer;
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let decoder = event_format::decode::Decoder::new(&bytes[..]).expect("a stream");
    let (order, block_size) = (decoder.header().order, decoder.header().block_size as usize);
    let header_len = decoder.header_len() as usize;
    let used = |block: &[u8]| order.u32(&block[event_format::raw::BLOCK_USED_AT..]) as u64;
    let records: u64 = bytes[header_len..].chunks(block_size).map(|b| 48 + used(b)).sum();
    let mut out = vec![header_len as u64 + records];
    for &packing in packings {
        let mut packer = Packer::new(packing);
        let mut total = header_len as u64;
        let mut packed = Vec::new();
        for block in bytes[header_len..].chunks(block_size) {
            packed.clear();
            total += if packer.pack(order, block, &mut packed) { packed.len() } else { block.len() } as u64;
        }
        out.push(total);
    }
    out
}

fn main() {
    let requests: u64 = std::env::args().nth(1).map_or(100_000, |a| a.parse().expect("a number of requests"));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench/service-span-sizes");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("a scratch directory");
    let layer = event_runtime::tracing_bridge::EventLayer::new();
    let by_callsite = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    let without = tracing::Dispatch::new(tracing_subscriber::registry().with(layer.with_callsites(false)));
    let plain = tracing::Dispatch::new(tracing_only::registry());
    let packings = [Packing::ZSTD, Packing::LZ4];
    let mut columns = Vec::new();
    let runs = [
        (Variant::Events, &plain),
        (Variant::Names, &by_callsite),
        (Variant::Names, &without),
        (Variant::Short, &without),
        (Variant::Traced, &by_callsite),
        (Variant::Traced, &without),
        (Variant::TracedShort, &without),
    ];
    for (variant, dispatch) in runs {
        let path = root.join("service.evt");
        let _ = std::fs::remove_file(&path);
        // A buffer that holds the whole run: a writer slowed by the machine's load never
        // drops an event, which would make the bytes smaller.
        let recording =
            Recorder::new().file(&path).pack(false).buffer_size(1 << 28).start().expect("the recording starts");
        tracing::dispatcher::with_default(dispatch, || serve(requests, variant));
        recording.stop().expect("the stream is written");
        let lost = event_format::decode::Decoder::new(&std::fs::read(&path).expect("the stream")[..])
            .expect("a stream")
            .filter_map(Result::ok)
            .map(|b| b.header.lost)
            .sum::<u64>();
        assert_eq!(lost, 0, "the recording lost events: its bytes would not be a request's");
        columns.push(sizes(&path, &packings));
    }
    println!(
        "| packing | `event!` only | the bridge, by callsite | without callsites | without, one-letter names \
         | `info!` steps, by callsite | without callsites | without, one-letter names |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (row, name) in ["off (records)", "zstd (default)", "lz4"].iter().enumerate() {
        let cells: Vec<String> = columns.iter().map(|c| format!("{:.1}", c[row] as f64 / requests as f64)).collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    let _ = std::fs::remove_dir_all(&root);
}
