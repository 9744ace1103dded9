event_runtime::include_events!("no-such-events.def");

fn main() {}
