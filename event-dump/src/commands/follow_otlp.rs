//! `follow --otlp`: a running recording of segments sent to an OTLP/HTTP endpoint as its
//! recorder seals them: each sealed segment read in time order (the spans that end in it, with
//! what earlier segments began: the span model of `crate::spans`, the same as `export --to
//! otlp` and the tables), its spans and counter samples sent in batches ([`Batcher`]), then
//! the next one, until the recording stops.
//!
//! **Resuming.** After each batch the receiver accepted, a state file (`--state`, by default
//! `.event-dump-otlp` in the recording's directory) says how far the sending got: the
//! recording, the segment being sent, and how many of its spans and points were sent (a
//! segment's spans end in one order whenever it is read). A `follow --otlp` started again
//! reads it, reads the earlier segments again without sending (so that the spans open across
//! the rotation pair), skips what was sent of that segment and goes on: no span is sent twice,
//! unless the process dies between the receiver's answer and the state's write (one batch,
//! whose spans then come again with the same ids). The file is written under a temporary name
//! and renamed.
//!
//! A span is sent once the segment holding its end is sealed: `EVENT_ROTATE`'s age bounds how
//! late (`64m,1min`: within a minute).

use super::Result;
use crate::cli::FollowArgs;
use crate::export::otlp::{Batcher, Encoding, Sink, Source, environment_resource, say_counts};
use crate::export::otlp_http::HttpSink;
use crate::log::DumpError;
use crate::spans::SpanModel;
use event_format::log::{OpenOptions, WriterLiveness, segments_in};
use event_format::wire::{RecordingId, StopCause};
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The state file's name in the recording's directory.
pub(crate) const STATE: &str = ".event-dump-otlp";

/// How far the sending got: the segment `segment` of `recording` is being sent, its first
/// `spans` spans and `points` points sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct State {
    recording: RecordingId,
    segment: u64,
    spans: u64,
    points: u64,
}

impl State {
    fn text(&self) -> String {
        format!(
            "event-dump otlp 1\nrecording {}\nsegment {}\nspans {}\npoints {}\n",
            self.recording, self.segment, self.spans, self.points
        )
    }

    fn parse(text: &str) -> Option<State> {
        let mut lines = text.lines();
        if lines.next()? != "event-dump otlp 1" {
            return None;
        }
        let mut field = |name: &str| lines.next()?.strip_prefix(name)?.trim().to_owned().into();
        let hex: String = field("recording ")?;
        let mut id = [0u8; 16];
        for (i, b) in id.iter_mut().enumerate() {
            *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        let number = |s: Option<String>| s?.parse::<u64>().ok();
        Some(State {
            recording: RecordingId(id),
            segment: number(field("segment "))?,
            spans: number(field("spans "))?,
            points: number(field("points "))?,
        })
    }

    fn write(&self, path: &Path) -> io::Result<()> {
        let mut temp = path.as_os_str().to_owned();
        temp.push(".tmp");
        let temp = PathBuf::from(temp);
        std::fs::write(&temp, self.text())?;
        std::fs::File::open(&temp)?.sync_all()?;
        std::fs::rename(&temp, path)
    }
}

/// `follow --otlp DIR`.
pub(crate) fn follow(args: &FollowArgs) -> Result<ExitCode> {
    let dir = &args.ring;
    if !dir.is_dir() {
        return Err(DumpError::new(format!(
            "{}: follow --otlp reads a recording of segments: give its directory (EVENT_ROTATE writes one)",
            dir.display()
        )));
    }
    let state_path = args.state.clone().unwrap_or_else(|| dir.join(STATE));
    let sink = HttpSink::from_environment(args.endpoint.as_deref(), &args.header)?;
    let shown = sink.shown();
    let interval = Duration::from_millis(args.interval.max(1));
    let (service, extra) = environment_resource();
    let mut state = match std::fs::read_to_string(&state_path) {
        Ok(text) => Some(State::parse(&text).ok_or_else(|| {
            DumpError::new(format!(
                "{}: not a state file of follow --otlp; remove it to send the recording from its start",
                state_path.display()
            ))
        })?),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(DumpError::new(format!("{}: cannot read: {e}", state_path.display()))),
    };
    let mut batcher: Option<Batcher<HttpSink>> = None;
    let mut sink = Some(sink);
    let mut model: Option<SpanModel> = None;
    let mut totals = crate::export::otlp::Counts::default();
    loop {
        let found =
            segments_in(dir, OpenOptions::default()).map_err(|e| DumpError::new(format!("{}: {e}", dir.display())))?;
        let recording = match state {
            Some(s) => s.recording,
            None => match latest(&found) {
                Some(r) => r,
                None => {
                    std::thread::sleep(interval);
                    continue;
                }
            },
        };
        if state.is_some() && !found.iter().any(|f| f.recording == recording) {
            return Err(DumpError::new(format!(
                "{}: names recording {recording}, of which {} holds no segment; remove it to send the directory's \
                 recordings from their start",
                state_path.display(),
                dir.display()
            )));
        }
        let next = state.map_or(0, |s| s.segment);
        let sealed = found.iter().find(|f| f.recording == recording && !f.open && f.segment.index >= next);
        let Some(segment) = sealed else {
            // Nothing sealed to send: wait, unless the recording is over (stopped, or its
            // writer gone), when a later recording in the directory is followed next.
            let open = found.iter().find(|f| f.recording == recording && f.open);
            let over = match open {
                Some(f) => !writing(&f.path),
                None => finished(dir, recording, next),
            };
            if over {
                match later(&found, recording) {
                    Some(r) => {
                        state = Some(State { recording: r, segment: 0, spans: 0, points: 0 });
                        model = None;
                        continue;
                    }
                    None => break,
                }
            }
            std::thread::sleep(interval);
            continue;
        };
        let segment = segment.clone();
        if segment.segment.index > next && state.is_some_and(|s| s.spans + s.points > 0) {
            eprintln!(
                "event-dump: segment {next} of the recording is gone before it was all sent (the disk budget?); going on with {}",
                segment.segment.index
            );
        }
        let log = event_format::log::open(&segment.path, OpenOptions::default())
            .map_err(|e| DumpError::new(e.to_string()))?;
        if batcher.is_none() {
            let source = Source::new(&log, service.as_deref(), &extra);
            let Some(sink) = sink.take() else { break };
            batcher = Some(Batcher::new(vec![source], sink, Encoding::Proto));
        }
        let Some(b) = batcher.as_mut() else { break };
        // The model: carried from the segment before, or made by reading the earlier ones again.
        let mut m = match model.take() {
            Some(m) => m,
            None => {
                let mut m = SpanModel::of(&log);
                for earlier in found
                    .iter()
                    .filter(|f| f.recording == recording && !f.open && f.segment.index < segment.segment.index)
                {
                    send_segment::<HttpSink>(&earlier.path, &mut m, None, (u64::MAX, u64::MAX))
                        .map_err(|e| DumpError::new(format!("{}: {e}", earlier.path.display())))?;
                }
                m
            }
        };
        let skip = match state {
            Some(s) if s.segment == segment.segment.index => (s.spans, s.points),
            _ => (0, 0),
        };
        let mut here = State { recording, segment: segment.segment.index, spans: skip.0, points: skip.1 };
        let sent = send_segment(&segment.path, &mut m, Some((b, &state_path, &mut here)), skip);
        let ending = match sent {
            Ok(ending) => ending,
            Err(e) => {
                let c = b.counts;
                return Err(DumpError::new(format!(
                    "{shown}: {e}; {} spans and {} data points were sent; run it again to go on from there",
                    totals.spans + c.spans,
                    totals.points + c.points
                )));
            }
        };
        let done = State { recording, segment: segment.segment.index + 1, spans: 0, points: 0 };
        done.write(&state_path).map_err(|e| DumpError::new(format!("{}: cannot write: {e}", state_path.display())))?;
        state = Some(done);
        model = Some(m);
        if ending.is_some_and(|cause| cause != StopCause::Rotated) {
            match later(&found, recording) {
                Some(r) => {
                    let first = State { recording: r, segment: 0, spans: 0, points: 0 };
                    state = Some(first);
                    model = None;
                }
                None => break,
            }
        }
    }
    if let Some(mut b) = batcher {
        b.finish().map_err(|e| DumpError::new(format!("{shown}: {e}")))?;
        totals = b.counts;
    }
    say_counts(&shown, totals);
    Ok(if totals.spans_refused + totals.points_refused > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// When the recording of `found` segment started (its header's start), by recording.
fn starts(found: &[event_format::log::FoundSegment]) -> Vec<(RecordingId, i64)> {
    let mut out: Vec<(RecordingId, i64)> = Vec::new();
    for f in found {
        if out.iter().any(|(r, _)| *r == f.recording) {
            continue;
        }
        if let Ok(log) = event_format::log::open(&f.path, OpenOptions::default()) {
            out.push((f.recording, log.header().producer.start_wall_ns));
        }
    }
    out
}

/// The recording that started last.
fn latest(found: &[event_format::log::FoundSegment]) -> Option<RecordingId> {
    starts(found).into_iter().max_by_key(|(_, t)| *t).map(|(r, _)| r)
}

/// The first recording that started after `recording` (a restart of its program).
fn later(found: &[event_format::log::FoundSegment], recording: RecordingId) -> Option<RecordingId> {
    let starts = starts(found);
    let at = starts.iter().find(|(r, _)| *r == recording).map(|(_, t)| *t)?;
    starts.into_iter().filter(|(_, t)| *t > at).min_by_key(|(_, t)| *t).map(|(r, _)| r)
}

/// Whether the writer of the segment being written at `path` may still be at work: not
/// known gone (`event_format::log::liveness`; a segment sealed meanwhile is found sealed on
/// the next turn).
fn writing(path: &Path) -> bool {
    WriterLiveness::of_path(path, None) != WriterLiveness::Gone
}

/// Whether the recording has nothing more to send from segment `next` on: a sealed segment
/// before it ended the recording (a stop that is not a rotation).
fn finished(dir: &Path, recording: RecordingId, next: u64) -> bool {
    let Some(index) = next.checked_sub(1) else { return false };
    let found = segments_in(dir, OpenOptions::default()).unwrap_or_default();
    let Some(last) = found.iter().find(|f| f.recording == recording && f.segment.index == index && !f.open) else {
        return false;
    };
    let Ok(mut log) = crate::log::open_all_indexed(std::slice::from_ref(&last.path), true) else { return false };
    let ledger = crate::export::merge_all(&mut log, "read", |_| Ok(())).ok().and_then(|mut l| l.pop());
    matches!(ledger.map(|l| l.ending(|| true)), Some(event_format::ledger::Ending::Clean(Some(stop))) if stop.cause != StopCause::Rotated)
}

/// Reads the sealed segment `path` into `model`, and with `sending`, sends the spans that end
/// in it and its counter samples (the first `skip` of each left out: sent before), writing the
/// state after each batch; its stop marker's cause.
fn send_segment<S: Sink>(
    path: &Path,
    model: &mut SpanModel,
    mut sending: Option<(&mut Batcher<S>, &Path, &mut State)>,
    skip: (u64, u64),
) -> io::Result<Option<StopCause>> {
    let mut logs = crate::log::open_all_indexed(&[path.to_owned()], true).map_err(|e| io::Error::other(e.0))?;
    let roles = event_format::roles::Roles::new(&logs[0].header().sets);
    let clock = logs[0].header().clock;
    let (mut spans_seen, mut points_seen) = (0u64, 0u64);
    let mut failed = None;
    let ledgers = crate::export::merge_all(&mut logs, "sent", |crate::export::Item { event, .. }| {
        let mut ended = Vec::new();
        model.event(&event, true, &mut |span| ended.push(span));
        let Some((batcher, state_path, state)) = sending.as_mut() else { return Ok(()) };
        let before = batcher.counts;
        for span in ended {
            spans_seen += 1;
            if spans_seen > skip.0 {
                batcher.span(0, span)?;
            }
        }
        let ns = u64::try_from(clock.wall_ns(event.time).max(0)).unwrap_or(u64::MAX);
        let points = roles.of(event.desc.wire).map_or(0, |r| r.counters.len() as u64);
        if points > 0 {
            points_seen += points;
            if points_seen > skip.1 {
                batcher.samples(&roles, 0, &event, ns)?;
            }
        }
        let after = batcher.counts;
        if after != before {
            // A batch went: what of this segment is sent now.
            let (pending_spans, pending_points) = batcher.pending();
            state.spans = spans_seen.max(skip.0) - pending_spans as u64;
            state.points = points_seen.max(skip.1) - pending_points as u64;
            if let Err(e) = state.write(state_path) {
                failed = Some(e);
            }
        }
        failed.take().map_or(Ok(()), Err)
    })?;
    if let Some((batcher, state_path, state)) = sending {
        batcher.flush_all()?;
        state.spans = spans_seen.max(skip.0);
        state.points = points_seen.max(skip.1);
        state.write(state_path)?;
    }
    let ending = ledgers.first().map(|l| l.ending(|| false));
    Ok(match ending {
        Some(event_format::ledger::Ending::Clean(Some(stop))) => Some(stop.cause),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_reads_back() {
        let s = State { recording: RecordingId([0xab; 16]), segment: 3, spans: 1024, points: 7 };
        assert_eq!(State::parse(&s.text()), Some(s));
        assert_eq!(State::parse("something else"), None);
    }
}
