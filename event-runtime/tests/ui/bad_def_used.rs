// A broken events.def is its own errors only: the crate's `event!`s add none
// ("cannot find macro `event`"), whether as statements or as expressions.
event_runtime::include_events!("bad.def");

fn record() {
    event!(ArenaCreate, 0usize, 0usize, 1u64);
    let _unit = event!(Poll);
}

fn main() {
    record();
    event!(ArenaDestroy);
}
