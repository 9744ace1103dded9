//! The README's `main`, as a user writes it: `event_runtime::start()?`, a few events, and the
//! recording dropped at the end. Prints `ran` when the program's own work is done, so that a
//! test sees that telemetry did not stop it; a start error is `Error: ` and its sentence, exit code 1,
//! as `?` in `main` gives. With the argument `warn`, it starts as a service that must run
//! does: `event_runtime::start_or_warn()`.

event_runtime::include_events!("../events.def");

fn main() -> Result<(), event_runtime::StartError> {
    let _recording = if std::env::args().nth(1).as_deref() == Some("warn") {
        event_runtime::start_or_warn()
    } else {
        event_runtime::start()?
    };
    for i in 0..100u64 {
        event!(ArenaDestroy, 0usize, i);
    }
    println!("ran");
    Ok(())
}
