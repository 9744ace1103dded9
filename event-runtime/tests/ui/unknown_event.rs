event_runtime::include_events!("events.def");

fn main() {
    let arena = 0u64;
    event!(ArenaCreat, &arena, 0x1000usize, 4096u64);
}
