event_runtime::include_events!("bad_aggregates.def");

fn main() {}
