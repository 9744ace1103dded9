//! `event-dump`: reads any event stream or ring file. Subcommands `print` (the default),
//! `stats`, `schema`, `check`, `follow`, `top`, `export`, `latency`, `hist`, `summary`,
//! `control`, `ship` and `completions`; each `--help` shows an example.
//!
//! Errors are one line on stderr and a non-zero exit: 1 for a log that cannot be read (or,
//! for `check`, that is not whole), 2 for a command line that does not parse (a mistyped
//! subcommand gets a did-you-mean).
//!
//! The binary is [`run`]; the library exists for it, and exposes [`send_request`] (a ring
//! file's control request) for the tests. It is not a stable API. The filter language of
//! `--filter` is event-format's (`event_format::filter`), shared with the recorder.
//!
//! The modules: [`run`] wires the command line (`cli`) to the subcommands (`commands`,
//! `export`, `ship`). They open logs through `log` (event-format's one opener, and the one
//! line an error is), choose events with `choice` (`--kind`, `--thread`, `--since`,
//! `--filter`, ...), count what each log lost or holds that is wrong with event-format's one
//! ledger (`event_format::ledger`), and ask its one rule (`event_format::log::liveness`)
//! whether a log's writer still runs. `print` decodes and renders blocks on worker threads and merges them by time in
//! `pipeline`; the span-handing readers build their spans with `spans`; `identity` names who
//! wrote a log. Output is written with `render` (text, JSON, CSV lines) and `json`, colored
//! on a terminal by `color`, with `progress` on stderr for long work.

mod choice;
mod cli;
mod color;
mod commands;
mod export;
mod identity;
mod json;
mod log;
mod pipeline;
mod progress;
mod render;
#[cfg(feature = "s3")]
mod ship;
mod spans;

pub use commands::control::{ControlError, send_request};

use clap::Parser;
use cli::{Cli, Command};
use color::{Palette, Style};
use std::process::ExitCode;

/// Runs `event-dump` on the process's arguments; what `main` does.
pub fn run() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(message) = cli::mistyped_subcommand(&args) {
        eprintln!("event-dump: {message}");
        return ExitCode::from(2);
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let colors = commands::Colors { out: Palette::stdout(cli.color), err: Palette::stderr(cli.color) };
    let result = match cli.command {
        None => {
            if cli.print.logs.is_empty() {
                eprintln!("event-dump: no log given; try `event-dump LOG` or `event-dump --help`");
                return ExitCode::from(2);
            }
            commands::print::print(&cli.print, colors)
        }
        Some(Command::Print(args)) => {
            if args.logs.is_empty() {
                eprintln!("event-dump: no log given; try `event-dump print LOG`");
                return ExitCode::from(2);
            }
            commands::print::print(&args, colors)
        }
        Some(Command::Stats(args)) => commands::census::stats(&args, colors),
        Some(Command::Schema(args)) => commands::schema::schema(&args),
        Some(Command::Check(args)) => commands::census::check(&args),
        Some(Command::Follow(args)) => commands::follow(&args, colors),
        Some(Command::Export(args)) => export::export(&args),
        Some(Command::Latency(args)) => commands::latency::latency(&args),
        Some(Command::Summary(args)) => commands::summary::summary(&args),
        Some(Command::Top(args)) => commands::top::top(&args),
        Some(Command::Hist(args)) => commands::hist::hist(&args),
        Some(Command::Control(args)) => commands::control::control(&args),
        #[cfg(feature = "s3")]
        Some(Command::Ship(args)) => ship::ship(&args),
        #[cfg(not(feature = "s3"))]
        Some(Command::Ship(_)) => Err(log::DumpError::new(
            "this event-dump was built without `ship`; build it with `--features s3` (on by default)",
        )),
        Some(Command::Completions(args)) => {
            cli::completions(args.shell, &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}: {e}", colors.err.paint(Style::Error, "event-dump"));
            ExitCode::from(1)
        }
    }
}
