event_runtime::include_events!("bad.def");

fn main() {}
