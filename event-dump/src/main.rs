//! The `event-dump` command; see the library's docs.

fn main() -> std::process::ExitCode {
    event_dump::run()
}
