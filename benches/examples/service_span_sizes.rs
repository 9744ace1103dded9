//! Bytes a request of the service benchmark's requests through the `tracing` bridge, at rest,
//! and what interning span and field names could save of them (issue 42).
//!
//! One thread serves requests as examples/service.rs's handler does, without the network: an
//! `info_span!("request", id, method, route)` around a future polled twice (it yields once),
//! five `event!`s inside it. Each is recorded to an event file unpacked, then its blocks are
//! packed as the writer packs them (zstd, the default, and LZ4), in three variants:
//!
//! - `event!` only: no span (the registry without the bridge);
//! - the bridge, the names as the service writes them: `SpanOpen` carries `request` and
//!   `id=.. method="GET" route="/orders/{id}"`;
//! - the bridge, one-letter names: the span is `r`, its fields `a`, `b` and `c`. Its bytes
//!   stand for those of an interned layout, in which a `SpanOpen` would carry an 8-byte id of
//!   its callsite for the name and the field values alone: that saves 17 bytes of a record
//!   (a 9-byte name for an 8-byte id, 16 bytes of `key=`), one-letter names save 19;
//! - the bridge with the five steps as `tracing::info!(id, step, "step")` (`TraceEvent`s, as
//!   the service's `fmt` mode records them), with the names as they are and one-letter ones
//!   (the target `t`, the fields `a` and `b`; an interned target and field names would save
//!   a few bytes less).
//!
//! `cargo run --release -p event-benches --example service_span_sizes [-- REQUESTS]` (100 000 by
//! default). Sizes are exact up to the events' times (a few percent between runs); no time is
//! measured.

event_runtime::include_events!("service.def");

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
    /// One-letter names, standing for interned ones.
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

/// The bytes of the stream at `path` (written unpacked) as it is, and with each of its blocks
/// packed by `packing` where that makes it smaller, as the writer packs when it keeps up:
/// exact, where the bytes of a recording packed on the fly depend on how often its writer
/// fell behind and wrote blocks whole.
fn sizes(path: &Path, packings: &[Packing]) -> Vec<u64> {
    use event_format::wire::Packer;
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let decoder = event_format::decode::Decoder::new(&bytes[..]).expect("a stream");
    let (order, block_size) = (decoder.header().order, decoder.header().block_size as usize);
    let header_len = decoder.header_len() as usize;
    let mut out = vec![bytes.len() as u64];
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
    let bridge =
        tracing::Dispatch::new(tracing_subscriber::registry().with(event_runtime::tracing_bridge::EventLayer::new()));
    let plain = tracing::Dispatch::new(tracing_subscriber::registry());
    let packings = [Packing::ZSTD, Packing::LZ4];
    let mut columns = Vec::new();
    let variants = [Variant::Events, Variant::Names, Variant::Short, Variant::Traced, Variant::TracedShort];
    for variant in variants {
        let path = root.join("service.evt");
        let _ = std::fs::remove_file(&path);
        let recording = Recorder::new().file(&path).pack(false).start().expect("the recording starts");
        let dispatch = if variant == Variant::Events { &plain } else { &bridge };
        tracing::dispatcher::with_default(dispatch, || serve(requests, variant));
        recording.stop().expect("the stream is written");
        columns.push(sizes(&path, &packings));
    }
    println!(
        "| packing | `event!` only | the bridge, the service's names | the bridge, one-letter names \
         | the bridge, `info!` steps | the bridge, `info!` steps, one-letter names |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (row, name) in ["off (records)", "zstd (default)", "lz4"].iter().enumerate() {
        let cells: Vec<String> = columns.iter().map(|c| format!("{:.1}", c[row] as f64 / requests as f64)).collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    let _ = std::fs::remove_dir_all(&root);
}
