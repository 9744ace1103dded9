//! fastrace's side of the per-span comparison, one copy for the criterion bench
//! (`benches/spans.rs`) and the callgrind probe (`examples/span_probe.rs`).

use std::hint::black_box;

/// One request as fastrace records it: a root span with the `tracing` span's three
/// properties, set as the thread's local parent twice (an instrumented future's two polls)
/// and dropped. (A `LocalSpan` under one root held for a whole run measures a no-op after the
/// first 10 240 spans: fastrace stops collecting a thread's local spans there until the root
/// ends.)
pub(crate) fn request(id: u64) {
    let span = fastrace::Span::root("request", fastrace::collector::SpanContext::random()).with_properties(|| {
        [("id", black_box(id).to_string()), ("method", "GET".to_owned()), ("route", "/orders/{id}".to_owned())]
    });
    for _ in 0..2 {
        let _entered = span.set_local_parent();
        black_box(&span);
    }
    drop(span);
}

/// A fastrace reporter that drops the spans it gets.
pub(crate) struct Dropping;

impl fastrace::collector::Reporter for Dropping {
    fn report(&mut self, spans: Vec<fastrace::prelude::SpanRecord>) {
        black_box(spans);
    }
}
