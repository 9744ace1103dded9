//! A probe for instruction counts per event (callgrind, deterministic): records N `Word3`
//! events (or N of the disabled `OffWord3`) on the main thread of a recording configured by
//! the `EVENT_*` variables, and stops. The marginal cost per event is the difference between
//! two runs' counts divided by the difference of their N:
//!
//! ```text
//! cargo build --release -p event-benches --example emit_probe
//! for n in 200000 400000; do EVENT_POLICY=switch EVENT_FILE=/tmp/p.evt \
//!   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n \
//!   target/release/examples/emit_probe $n; done
//! ```
//!
//! `emit_probe N off` records the disabled kind instead (`-Off` in the control selection).

event_runtime::include_events!("bench.def");

use std::hint::black_box;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).expect("usage: emit_probe N [off]");
    let off = args.next().is_some_and(|a| a == "off");
    let recording = event_runtime::Recorder::new()
        .control("all -Off")
        .from_env()
        .expect("the EVENT_* settings")
        .start()
        .expect("the probe's recording starts");
    if off {
        for i in 0..n {
            event!(OffWord3, black_box(i), i + 1, i + 2);
        }
    } else {
        for i in 0..n {
            event!(Word3, black_box(i), i + 1, i + 2);
        }
    }
    recording.stop().expect("the probe's recording stops");
}
