//! `follow` of a recording of segments (or of one event stream): the events its recorder
//! writes, as it writes them, across rotations.
//!
//! Following starts at the recording's latest segment (the directory's; or the segment
//! named), from its start (or, with `--from-now`, from where it ends now). A segment still
//! being written (`*.open`) is read as it grows: at its end the reader waits for more, until
//! the file is renamed (sealed) or its writer is gone (its lock free:
//! `event_format::log::liveness`). A segment ends at its stop
//! marker: cause `rotated` goes on with the next segment of the same recording (the
//! directory is polled until it appears), `stopped` ends following, and a full disk or a
//! write error is said on stderr (with the events not written) and following waits for the
//! segment the recorder resumes in. A file that is not a segment is followed alone, until
//! its stop marker or until its writer no longer holds it (the same lock).
//!
//! Each file is opened through event-format's one opener: a growing one with
//! `event_format::log::open_growing` (this module says only whether its writer is at work), a
//! sealed segment with `event_format::log::open`.

use super::follow::{Printing, Watch};
use super::{Colors, Result};
use crate::cli::FollowArgs;
use crate::log::DumpError;
use event_format::decode::Entry;
use event_format::log::{
    self, FoundSegment, Growing, OPEN_SUFFIX, OpenOptions, WriterLiveness, segment_at, segments_in,
};
use event_format::wire::{RecordingId, StopCause};
use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The segment to start with: the one named, or the latest of the directory's one recording.
fn first(path: &Path) -> Result<(PathBuf, Option<FoundSegment>)> {
    let options = OpenOptions::default();
    if path.is_dir() {
        let found = segments_in(path, options).map_err(|e| DumpError::new(format!("{}: {e}", path.display())))?;
        let recordings: BTreeSet<_> = found.iter().map(|f| f.recording).collect();
        if recordings.len() > 1 {
            return Err(DumpError::new(format!(
                "{}: holds segments of {} recordings; follow one of its segment files",
                path.display(),
                recordings.len()
            )));
        }
        let latest = found.into_iter().last().ok_or_else(|| {
            DumpError::new(format!(
                "{}: no segment of a recording in it; follow a ring file, a stream or a directory of segments",
                path.display()
            ))
        })?;
        return Ok((path.to_owned(), Some(latest)));
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_owned();
    // The file named, if it is a segment; only its own header is read.
    Ok((dir, segment_at(path, options)))
}

/// `follow` of a recording of segments, or of a stream.
pub(super) fn follow(args: &FollowArgs, colors: Colors) -> Result<ExitCode> {
    let stdout = io::stdout();
    let mut printing = Printing::new(args, colors, io::BufWriter::new(stdout.lock()));
    watch_segments(&args.ring, args.from_now, Duration::from_millis(args.interval.max(1)), &mut printing)?;
    Ok(ExitCode::SUCCESS)
}

/// Follows the recording of segments (or the stream) at `ring` into `watch`, looking for
/// more every `interval`, from the start of its latest segment (or, `from_now`, from where it
/// ends now), across rotations, until its recorder stops or dies, or `watch` says stop.
pub(crate) fn watch_segments(ring: &Path, from_now: bool, interval: Duration, watch: &mut impl Watch) -> Result<()> {
    let (dir, start) = first(ring)?;
    let mut path = start.as_ref().map_or_else(|| ring.to_owned(), |s| s.path.clone());
    let mut segment = start;
    let mut skip_before = if from_now { std::fs::metadata(&path).map_or(0, |m| m.len()) } else { 0 };
    loop {
        let shown = path.display().to_string();
        let open = shown.ends_with(OPEN_SUFFIX);
        // A segment being written is live until it is renamed or its writer is known gone; a
        // stream named alone, while its writer is known running (its lock:
        // `event_format::log::liveness`); a sealed segment is read as it is.
        let mut log = if open || segment.is_none() {
            let writing: Box<dyn FnMut(&Path) -> bool + Send> = if open {
                Box::new(|path| WriterLiveness::of_path(path, None) != WriterLiveness::Gone)
            } else {
                Box::new(log::liveness::writer_running)
            };
            log::open_growing(&path, OpenOptions::default(), Growing { writing, interval })
        } else {
            log::open(&path, OpenOptions::default())
        }
        .map_err(|e| DumpError::new(e.to_string()))?;
        let header = log.header().clone();
        let pid = header.producer.pid;
        watch.open(&path, &header, log.catalog())?;
        let (blocks, catalog) = log.blocks_and_catalog();
        let mut stop = None;
        while let Some(block) = blocks.next_block() {
            let block = match block {
                Ok(block) => block,
                Err(e) => {
                    watch.damaged(Some(&e), format!("{shown}: {e}"));
                    continue;
                }
            };
            if block.offset >= skip_before {
                watch.block(&block, 0);
                let (thread, sequence) = (block.header.thread, block.header.sequence);
                for entry in block.entries(catalog) {
                    match &entry {
                        Entry::Event(_) => {}
                        Entry::Unknown { code, .. } => {
                            watch.note(format!("{shown}: a record of unknown code {code:#06x} skipped"))
                        }
                        Entry::Bad(error) => {
                            watch.note(format!("{shown}: thread {thread}, block {sequence}: {error}"));
                        }
                    }
                    if watch.entry(thread, sequence, &entry)?.is_break() {
                        return Ok(());
                    }
                }
            }
            if watch.flush().is_break() {
                return Ok(());
            }
            // The stop marker ends the segment: nothing is written after it.
            if block.header.thread == 0
                && let Some(s) = block.stop()
            {
                stop = Some(s);
                break;
            }
        }
        skip_before = 0;
        let Some(current) = segment.take() else {
            if stop.is_none() {
                watch.note(format!("{shown}: its writer stopped holding it without a stop marker (killed or aborted)"));
            }
            drop(log);
            say_verdict(&path, None, watch);
            return Ok(());
        };
        match stop.map(|s| (s.cause, s.unwritten)) {
            Some((StopCause::Rotated, _)) => {}
            Some((cause @ (StopCause::DiskFull | StopCause::WriteError), unwritten)) => {
                watch.note(format!(
                    "{shown}: the recorder stopped writing it: {cause}: {unwritten} events not written; waiting for it to resume"
                ));
            }
            Some(_) => {
                say_verdict(&dir, Some(current.recording), watch);
                return Ok(());
            }
            None => {
                watch.note(format!(
                    "{shown}: the program (pid {pid}) ended without sealing it; everything it wrote was shown"
                ));
                say_verdict(&dir, Some(current.recording), watch);
                return Ok(());
            }
        }
        // The next segment of the recording, once it exists.
        let next = current.segment.index.saturating_add(1);
        loop {
            let found = segments_in(&dir, OpenOptions::default()).unwrap_or_default();
            let later = found.into_iter().find(|f| f.recording == current.recording && f.segment.index >= next);
            if let Some(s) = later {
                if s.segment.index > next {
                    watch.note(format!(
                        "segments {next}..{} of the recording are not there (removed before they could be followed)",
                        s.segment.index - 1
                    ));
                }
                path = s.path.clone();
                segment = Some(s);
                break;
            }
            // No file of the writer's to ask between two segments: its process (it wrote the
            // segment just followed, on this machine).
            if pid != 0 && WriterLiveness::of_process(pid) == WriterLiveness::Gone {
                watch.note(format!("the program (pid {pid}) ended after {shown}; no next segment"));
                say_verdict(&dir, Some(current.recording), watch);
                return Ok(());
            }
            std::thread::sleep(interval);
        }
    }
}

/// Once the followed recording ended: its verdict as `check` gives it for `path` (the
/// recording `recording` among the logs of its directory, or the stream followed alone), in
/// `print`'s words, where it is not whole.
fn say_verdict(path: &Path, recording: Option<RecordingId>, watch: &mut impl Watch) {
    let Ok(logs) = log::open_all(&[path.to_owned()], crate::log::options(false, false)) else { return };
    let shown = path.display().to_string();
    for mut log in logs {
        if recording.is_some_and(|r| log.header().properties.recording != Some(r)) {
            continue;
        }
        let found = crate::log::ledger_of(&mut log).findings(|| log.writer_alive());
        if let Some(line) = crate::log::not_whole_line(&shown, &found) {
            watch.note(line);
        }
    }
}
