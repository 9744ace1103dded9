//! `follow`: a running program's events from its ring file as they are committed (ftrace's
//! `trace_pipe`), until the program stops or dies; or from its recording of segments, across
//! rotations ([`segments`](super::follow_segments)).

use super::{Choice, Colors, Result, out_line, thread_names};
use crate::cli::FollowArgs;
use crate::log::DumpError;
use crate::render::{Annotations, CsvColumns, Format, Origin, Renderer, Templates};
use event_format::decode::{Catalog, Entry, Event};
use event_format::ring::{FollowItem, Follower, STATE_CLOSED};
use event_format::text::Seconds;
use event_format::wire::Header;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::time::Duration;

/// What `follow` prints with: the choice and the renderer, and what they learn on the way.
pub(super) struct Printer {
    choice: Choice,
    renderer: Renderer,
    header: Header,
    seconds: Seconds,
    ann: Annotations,
    templates: Templates,
    line: Vec<u8>,
    holes: Vec<crate::render::Hole>,
    filled: Vec<u8>,
}

impl Printer {
    /// The printer of `args`' choice and format for a log of `header`, named by `catalog` (the
    /// reader's own: no second one is built), whose thread names `names` reads (only when
    /// `--thread` or the filter names a thread).
    pub(super) fn new(
        args: &FollowArgs,
        colors: Colors,
        header: &Header,
        catalog: &Catalog,
        names: impl FnOnce() -> Result<crate::choice::ThreadNames>,
    ) -> Result<Printer> {
        let choice = Choice::new(&args.select, &[header], names)?;
        let csv = (args.format == Format::Csv).then(|| CsvColumns::new(&[catalog], |f, c| choice.may_show(f, c)));
        let renderer =
            Renderer { format: args.format, raw_ticks: false, labels: true, processes: None, palette: colors.out, csv };
        Ok(Printer {
            choice,
            renderer,
            header: header.clone(),
            seconds: Seconds::new(&header.clock),
            ann: Annotations::default(),
            templates: Templates::default(),
            line: Vec::new(),
            holes: Vec::new(),
            filled: Vec::new(),
        })
    }

    /// The CSV header line, if the format has one.
    pub(super) fn start(&self, out: &mut impl Write) -> Result<()> {
        if let Some(h) = self.renderer.header() {
            let _ = out_line(out, h)?;
        }
        Ok(())
    }

    /// Learns what `event` says (labels, interned strings) and prints it if it is selected;
    /// `Break` when stdout is closed.
    pub(super) fn event(&mut self, out: &mut impl Write, event: &Event<'_>) -> Result<ControlFlow<()>> {
        self.ann.learn(0, event);
        if !self.choice.keeps(0, event, &self.header.clock) {
            return Ok(ControlFlow::Continue(()));
        }
        self.line.clear();
        self.holes.clear();
        let thread = self.renderer.thread_text(0, event.thread);
        let origin = Origin { file: 0, thread: &thread, seconds: &self.seconds };
        let template = self.templates.get(&self.renderer, 0, event.desc);
        self.renderer.line(&mut self.line, &mut self.holes, &origin, template, event);
        self.filled.clear();
        self.renderer.fill(&mut self.filled, &self.line, &self.holes, &self.ann, 0, event.desc);
        self.filled.push(b'\n');
        out_bytes(out, &self.filled)
    }
}

/// `follow` of a ring file: prints what its program commits, until it stops (a recording of
/// segments is `follow_segments`', which `follow` in mod.rs chooses).
pub(crate) fn follow_ring(args: &FollowArgs, colors: Colors) -> Result<ExitCode> {
    let shown = args.ring.display().to_string();
    let reader = event_format::log::open_ring(&args.ring).map_err(|e| DumpError::new(e.to_string()))?;
    let header = reader.header().clone();
    let pid = reader.layout().pid;
    let catalog = Catalog::new(&header.sets);
    // Thread names are those the ring file holds when following starts.
    let mut printer =
        Printer::new(args, colors, &header, &catalog, || thread_names(std::slice::from_ref(&args.ring), false))?;
    let mut follower = if args.from_now { Follower::from_now(reader) } else { Follower::new(reader) };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    printer.start(&mut out)?;
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
                                if printer.event(&mut out, &event)?.is_break() {
                                    return Ok(ExitCode::SUCCESS);
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
                FollowItem::PinAreaDamaged { why } => {
                    eprintln!(
                        "event-dump: {shown}: the ring file's pin area is damaged ({why}): the pinned events from the damage on are not shown"
                    );
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
