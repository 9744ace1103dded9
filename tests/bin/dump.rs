//! `event-dump` itself (its library's `run`), built in this package so that its tests can
//! run it: `CARGO_BIN_EXE_dump`.

fn main() -> std::process::ExitCode {
    event_dump::run()
}
