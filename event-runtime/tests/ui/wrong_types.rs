event_runtime::include_events!("events.def");

fn main() {
    let pool = 0u64;
    event!(PoolInit, &pool, "AMC", 16u64); // a u64 for U
    event!(PoolStats, "live", 1i64, 0.5f64, true); // a &str for W
    event!(PoolStats, 1u64, 1i64, 3u32, true); // a u32 for D
    event!(PoolStats, 1u64, 1u64, 0.5, 1u8); // a u64 for I, a u8 for B
    event!(PoolInit, &pool, 42u32, 16u32); // a u32 for S
    event!(ArenaCreate, pool, 0usize, 1u64); // a u64 by value for P
}
