//! `event-dump`, built in this package so that its tests can run it (`CARGO_BIN_EXE_sets-dump`).

fn main() -> std::process::ExitCode {
    event_dump::run()
}
