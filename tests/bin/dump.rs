//! `event-dump`, built in this package so that its tests can run it
//! (`CARGO_BIN_EXE_dump`): the same [`event_dump::run`] the `event-dump` binary calls.

fn main() -> std::process::ExitCode {
    event_dump::run()
}
