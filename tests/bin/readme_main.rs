//! The README's `main`, as a user writes it: `event_runtime::start()?`, a few events, and the
//! recording dropped at the end. Prints `ran` when the program's own work is done, so that a
//! test sees that telemetry did not stop it; a start error is `error: ...` and exit code 1,
//! as `?` in `main` gives.

event_runtime::include_events!("../events.def");

fn main() -> Result<(), event_runtime::StartError> {
    let _recording = event_runtime::start()?;
    for i in 0..100u64 {
        event!(ArenaDestroy, 0usize, i);
    }
    println!("ran");
    Ok(())
}
