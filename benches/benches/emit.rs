//! The recorder's cases and their baselines under criterion, one benchmark each
//! (`cargo bench -p event-benches --bench emit`). The side-by-side table with ratios
//! measured in the same run is `compare`'s (scripts/bench).

event_runtime::include_events!("bench.def");

mod common;

use common::peers;
use criterion::{Criterion, criterion_group, criterion_main};

fn cases(c: &mut Criterion) {
    let _recording = common::start_ring();
    let mut group = c.benchmark_group("per event");
    let cases: &[(&str, common::Run)] = &[
        ("empty loop", common::empty_loop),
        ("relaxed load loop", common::relaxed_load_loop),
        ("floor, 3 words", common::floor::<3>),
        ("event, 0 words", common::word0),
        ("event, 1 word", common::word1),
        ("event, 3 words", common::word3),
        ("event, 6 words", common::word6),
        ("event, 16-byte string", common::text16),
        ("event, disabled kind", common::disabled),
        ("tracing, null subscriber", peers::null),
        ("tracing, binary subscriber", peers::binary),
    ];
    for &(name, run) in cases {
        group.bench_function(name, |b| b.iter_custom(run));
    }
    group.finish();
}

criterion_group!(benches, cases);
criterion_main!(benches);
