//! A program instrumented with the `tracing` crate records its events and spans with
//! event-runtime: three lines in `main`, no events.def. It records to target/tracing.evt
//! (or the path in `EVENT_FILE`); read it with event-dump.
//!
//! Run it with `cargo run --example tracing`, then
//! `cargo run -p event-dump -- target/tracing.evt`.

use tracing_subscriber::layer::SubscriberExt as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::var_os("EVENT_FILE").unwrap_or_else(|| "target/tracing.evt".into());

    // The three lines a tracing user adds: the layer, the subscriber, the recording.
    let subscriber = tracing_subscriber::registry().with(event_runtime::tracing_bridge::EventLayer::new());
    tracing::subscriber::set_global_default(subscriber)?;
    let recording = event_runtime::Recorder::new().file(&path).from_env()?.start()?;

    // The program, instrumented as usual.
    tracing::info!(orders = 3, "shop open");
    let workers: Vec<_> = (1..=2u32)
        .map(|worker| {
            std::thread::Builder::new().name(format!("worker-{worker}")).spawn(move || {
                for order in 0..3u32 {
                    if order % 2 + 1 == worker {
                        pack(worker, order);
                    }
                }
            })
        })
        .collect::<Result<_, _>>()?;
    for worker in workers {
        let _ = worker.join();
    }
    tracing::info!("shop closed");

    recording.stop()?;
    eprintln!(
        "recorded {}; read it with `cargo run -p event-dump -- {}`",
        path.to_string_lossy(),
        path.to_string_lossy()
    );
    Ok(())
}

fn pack(worker: u32, order: u32) {
    let weight = 1.5 * f64::from(order + 1);
    let _entered = tracing::info_span!("pack", worker, order, weight).entered();
    if weight > 4.0 {
        tracing::warn!(weight, limit = 4.0, "heavy parcel");
    }
    let _sealing = tracing::debug_span!("seal").entered();
    tracing::debug!(box_size = "M", "packed");
}
