//! `export`: a log in another tool's format.
//!
//! - [`chrome`]: Chrome trace-event JSON, which Perfetto's UI and chrome://tracing open.
//! - [`sqlite`]: a database in the shape of MPS's mpseventsql.
//! - [`ctf`]: a CTF 1.8 trace that babeltrace2 reads.
//!
//! The exporters read the logs through the merge (bounded memory, threads and logs in time
//! order) and write as they read. What they cannot export (damaged blocks, bad records,
//! unknown codes) they count and report in one line on stderr; the export still completes
//! and exits 0, as `print` does (`event-dump check` tells the details).

mod chrome;
mod ctf;
mod sqlite;

use crate::cli::{ExportArgs, Target};
use crate::log::{DumpError, Log, open_all};
use crate::merge::{self, Item};
use crate::progress::Progress;
use std::io;
use std::ops::ControlFlow;
use std::process::ExitCode;

/// Reads `logs` through the merge into `write`, with progress on stderr (on a terminal, for
/// big logs); the first error `write` returns stops the reading and is returned.
fn merge_all(logs: &mut [Log], mut write: impl FnMut(Item<'_>) -> io::Result<()>) -> io::Result<()> {
    let mut progress = Progress::new("exporting", logs.iter().map(|l| l.len).sum());
    let mut seen = 0u64;
    let mut failure = None;
    let merged = merge::merge(logs, |item| {
        seen += 1;
        if seen.is_multiple_of(1 << 16) {
            progress.update(seen * 32);
        }
        match write(item) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failure = Some(e);
                ControlFlow::Break(())
            }
        }
    });
    progress.finish();
    if let Some(e) = failure {
        return Err(e);
    }
    merged.map_err(|e| io::Error::other(e.0))
}

pub(crate) fn export(args: &ExportArgs) -> Result<ExitCode, DumpError> {
    let mut logs = open_all(&args.logs, args.force)?;
    match args.to {
        Target::Chrome => chrome::export(&mut logs, &args.out),
        Target::Sqlite => sqlite::export(&mut logs, &args.out),
        Target::Ctf => ctf::export(&mut logs, &args.out),
    }
}

/// What an export could not carry over, counted as it reads.
#[derive(Debug, Default)]
struct Skipped {
    damaged_blocks: u64,
    bad_records: u64,
    unknown_records: u64,
}

impl Skipped {
    /// Counts `item` when it is not an event; `true` when it was one of those.
    fn count(&mut self, item: &Item<'_>) -> bool {
        match item {
            Item::Event { .. } => return false,
            Item::Unknown { .. } => self.unknown_records += 1,
            Item::Bad { .. } => self.bad_records += 1,
            Item::Damaged { .. } => self.damaged_blocks += 1,
        }
        true
    }

    /// The one line that says what was skipped, if anything was; `extra` adds the exporter's
    /// own notes.
    fn report(&self, format: &str, extra: &[String]) {
        let mut parts = Vec::new();
        let mut part = |n: u64, one: &str, many: &str| {
            if n > 0 {
                parts.push(format!("{n} {}", if n == 1 { one } else { many }));
            }
        };
        part(self.damaged_blocks, "damaged block", "damaged blocks");
        part(self.bad_records, "bad record", "bad records");
        part(self.unknown_records, "record of an unknown code", "records of unknown codes");
        let skipped = (!parts.is_empty()).then(|| format!("skipped {}", parts.join(", ")));
        let all: Vec<String> = skipped.into_iter().chain(extra.iter().cloned()).collect();
        if !all.is_empty() {
            eprintln!(
                "event-dump: export --to {format}: {}; the rest was exported (`event-dump check LOG` tells more)",
                all.join("; ")
            );
        }
    }
}
