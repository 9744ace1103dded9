//! `export`: a log in another tool's format.
//!
//! - [`chrome`]: Chrome trace-event JSON, which Perfetto's UI and chrome://tracing open.
//! - [`sqlite`]: a database in the shape of MPS's mpseventsql.
//! - [`ctf`]: a CTF 1.8 trace that babeltrace2 reads.

mod chrome;
mod ctf;
mod sqlite;

use crate::ExportArgs;
use crate::commands::open_all;
use crate::log::DumpError;
use std::process::ExitCode;

/// The formats `export` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// Chrome trace-event JSON (Perfetto's UI, chrome://tracing).
    Chrome,
    /// SQLite, one table per event type (MPS mpseventsql's shape).
    Sqlite,
    /// CTF 1.8 (babeltrace2, Trace Compass).
    Ctf,
}

pub(crate) fn export(args: &ExportArgs) -> Result<ExitCode, DumpError> {
    let mut logs = open_all(&args.logs, args.force)?;
    match args.to {
        Target::Chrome => chrome::export(&mut logs, &args.out),
        Target::Sqlite => sqlite::export(&mut logs, &args.out),
        Target::Ctf => ctf::export(&mut logs, &args.out),
    }
}
