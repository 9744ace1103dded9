// include_events! belongs in the crate root: in a module, the build stops with the rule.
mod telemetry {
    event_runtime::include_events!("events.def");
}

fn main() {}
