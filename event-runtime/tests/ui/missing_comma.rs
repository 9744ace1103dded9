event_runtime::include_events!("events.def");

fn main() {
    let pool = 0u64;
    event!(PoolInit &pool, "AMC", 16u32);
}
