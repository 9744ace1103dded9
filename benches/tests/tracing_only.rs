//! The subscriber the benchmarks install for `tracing` with nothing recording it
//! (`benches/shared/tracing_only.rs`) frees each span when it closes, as a service's does.

#[path = "../benches/shared/tracing_only.rs"]
mod tracing_only;

use tracing_subscriber::registry::LookupSpan;

#[test]
fn a_closed_span_leaves_the_benchmarks_registry() {
    let dispatch = tracing::Dispatch::new(tracing_only::registry());
    let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>().expect("the registry");
    tracing::dispatcher::with_default(&dispatch, || {
        let span = tracing::info_span!("request", id = 7u64);
        let id = span.id().expect("the span is enabled");
        {
            let _entered = span.enter();
        }
        assert!(registry.span_data(&id).is_some(), "an open span is in the registry");
        drop(span);
        assert!(registry.span_data(&id).is_none(), "a closed span is no longer in the registry");
    });
}
