//! The subcommands that read logs and write text: one module each, on the selection and
//! output helpers below. (`export` has its own module beside this one.)
//!
//! - [`print`]: events, threads and logs merged by time.
//! - [`census`]: `stats` and `check`, one pass over each log.
//! - [`schema`]: the embedded schema, and how it differs from an events.def.
//! - [`follow`]: a running program's ring file, live.
//! - [`latency`]: how long spans last.
//! - [`summary`]: a stable summary of logs for scripts.
//! - [`top`]: a live view of a running recording.
//! - [`hist`]: the histograms the recorder kept.
//! - [`distributions`]: how `hist`, `latency` and `summary` show a distribution.
//! - [`control`]: a request to a running program through its ring file.

pub(crate) mod census;
pub(crate) mod control;
mod distributions;
mod follow;
#[cfg(feature = "otlp")]
mod follow_otlp;
mod follow_segments;
pub(crate) mod hist;
pub(crate) mod latency;
pub(crate) mod print;
pub(crate) mod schema;
pub(crate) mod summary;
pub(crate) mod top;

pub(crate) use crate::choice::{Choice, thread_names};
use crate::color::Palette;
use crate::log::DumpError;
use std::io::{self, Write};
use std::ops::ControlFlow;

type Result<T> = std::result::Result<T, DumpError>;

/// The colors of stdout and stderr, as `--color` and the terminal decide.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Colors {
    pub(crate) out: Palette,
    pub(crate) err: Palette,
}

/// Writes a line to stdout; `Break` when stdout is closed (`| head`).
pub(crate) fn out_line(out: &mut impl Write, line: &str) -> Result<ControlFlow<()>> {
    match out.write_all(line.as_bytes()).and_then(|()| out.write_all(b"\n")) {
        Ok(()) => Ok(ControlFlow::Continue(())),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ControlFlow::Break(())),
        Err(e) => Err(DumpError::new(format!("cannot write the output: {e}"))),
    }
}

/// Writes `text` to stdout; a closed stdout (`| head`) is not an error.
pub(crate) fn write_all(text: &str) -> Result<()> {
    match io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(DumpError::new(format!("cannot write the output: {e}"))),
    }
}

/// `follow`: what a running program records, as it records it: from its ring file until it
/// stops, or from its recording of segments (a directory, or a segment), across rotations.
pub(crate) fn follow(args: &crate::cli::FollowArgs, colors: Colors) -> Result<std::process::ExitCode> {
    if args.otlp {
        #[cfg(feature = "otlp")]
        return follow_otlp::follow(args);
        #[cfg(not(feature = "otlp"))]
        return Err(DumpError::new(
            "this event-dump was built without OTLP; build it with `--features otlp` (on by default)".to_owned(),
        ));
    }
    if args.endpoint.is_some() || !args.header.is_empty() || args.state.is_some() {
        return Err(DumpError::new("--endpoint, --header and --state are for follow --otlp".to_owned()));
    }
    // What the path is, as the one opener reads it: a directory of segments or a stream is
    // followed across rotations; a ring file, or what cannot be read, by the ring's follower
    // (which says what is wrong with it).
    match event_format::log::kind(&args.ring) {
        Ok(event_format::log::Kind::Directory | event_format::log::Kind::Stream) => {
            follow_segments::follow(args, colors)
        }
        _ => follow::follow_ring(args, colors),
    }
}
