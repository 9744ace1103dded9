//! `follow`: a running program's events from its ring file as they are committed (ftrace's
//! `trace_pipe`), until the program stops or dies.

use super::{Choice, Colors, Result, out_line, thread_names};
use crate::cli::FollowArgs;
use crate::log::DumpError;
use crate::render::{Annotations, CsvColumns, Format, Origin, Renderer, Templates};
use event_format::decode::{Catalog, Entry};
use event_format::ring::{FollowItem, Follower, STATE_CLOSED};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::time::Duration;

/// `follow`: prints what the ring file's program commits, until it stops.
pub(crate) fn follow(args: &FollowArgs, colors: Colors) -> Result<ExitCode> {
    let shown = args.ring.display().to_string();
    let reader = event_format::log::open_ring(&args.ring).map_err(|e| DumpError::new(e.to_string()))?;
    let header = reader.header().clone();
    let pid = reader.layout().pid;
    let catalog = Catalog::new(&header.sets);
    // Thread names are those the ring file holds when following starts.
    let selection = Choice::new(&args.select, &[&header], || thread_names(std::slice::from_ref(&args.ring), false))?;
    let csv = (args.format == Format::Csv).then(|| CsvColumns::new(&[&catalog], |f, c| selection.may_show(f, c)));
    let renderer =
        Renderer { format: args.format, raw_ticks: false, labels: true, pids: None, palette: colors.out, csv };
    let mut follower = if args.from_now { Follower::from_now(reader) } else { Follower::new(reader) };
    let mut ann = Annotations::default();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    if let Some(h) = renderer.header() {
        let _ = out_line(&mut out, h)?;
    }
    let mut line = Vec::new();
    let seconds = event_format::text::Seconds::new(&header.clock);
    let mut templates = Templates::default();
    let (mut holes, mut filled) = (Vec::new(), Vec::new());
    // Records of codes this reader does not know, by code: reported when following ends.
    let mut unknown: BTreeMap<u16, u64> = BTreeMap::new();
    let report_unknown = |unknown: &BTreeMap<u16, u64>| {
        for (code, n) in unknown {
            eprintln!(
                "event-dump: {shown}: {n} records of unknown code {code:#06x} skipped (a newer event set or format wrote them)"
            );
        }
    };
    loop {
        let status = follower.reader().status().map_err(|e| DumpError::new(format!("{shown}: {e}")))?;
        let ended = status.state == STATE_CLOSED || !writer_alive(pid, status.heartbeat_ns);
        let items = follower.poll().map_err(|e| DumpError::new(format!("{shown}: {e}")))?;
        for item in items {
            match item {
                FollowItem::Records { block, from, .. } => {
                    for entry in block.entries_from(&catalog, from) {
                        match entry {
                            Entry::Event(event) => {
                                ann.learn(0, &event);
                                if selection.keeps(0, &event, &header.clock) {
                                    line.clear();
                                    holes.clear();
                                    let thread = renderer.thread_text(0, event.thread);
                                    let origin = Origin { file: 0, thread: &thread, seconds: &seconds };
                                    let template = templates.get(&renderer, 0, event.desc);
                                    renderer.line(&mut line, &mut holes, &origin, template, &event);
                                    filled.clear();
                                    renderer.fill(&mut filled, &line, &holes, &ann, 0, event.desc);
                                    filled.push(b'\n');
                                    if out_bytes(&mut out, &filled)?.is_break() {
                                        return Ok(ExitCode::SUCCESS);
                                    }
                                }
                            }
                            Entry::Unknown { code, .. } => *unknown.entry(code).or_insert(0u64) += 1,
                            Entry::Bad(error) => {
                                let (thread, sequence) = (block.header.thread, block.header.sequence);
                                eprintln!("event-dump: thread {thread}, block {sequence}: {error}");
                            }
                        }
                    }
                }
                // Gone before following started: not the follower's loss (`tail -f` does not
                // call the lines before where it starts lost).
                FollowItem::Before { .. } => {}
                FollowItem::Overwritten { thread, blocks } => {
                    eprintln!("event-dump: thread {thread}: {blocks} blocks overwritten before they could be read");
                }
                FollowItem::Damaged { thread, sequence, why } => {
                    eprintln!("event-dump: thread {thread}, block {sequence}: {why}");
                }
            }
        }
        if out.flush().is_err() {
            return Ok(ExitCode::SUCCESS);
        }
        if ended {
            report_unknown(&unknown);
            if status.state != STATE_CLOSED {
                eprintln!(
                    "event-dump: the program (pid {pid}) ended without closing its ring file; everything it committed was shown"
                );
            }
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(Duration::from_millis(args.interval.max(1)));
    }
}

/// Writes `bytes` to stdout; `Break` when stdout is closed (`| head`).
fn out_bytes(out: &mut impl Write, bytes: &[u8]) -> Result<ControlFlow<()>> {
    match out.write_all(bytes) {
        Ok(()) => Ok(ControlFlow::Continue(())),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ControlFlow::Break(())),
        Err(e) => Err(DumpError::new(format!("cannot write the output: {e}"))),
    }
}

/// Whether the ring file's writer still runs: its process exists (where that can be
/// asked) and its heartbeat is recent.
pub(crate) fn writer_alive(pid: u64, heartbeat_ns: u64) -> bool {
    let proc = std::path::Path::new("/proc");
    if proc.is_dir() {
        return proc.join(pid.to_string()).exists();
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    now.saturating_sub(heartbeat_ns) < 5_000_000_000
}
