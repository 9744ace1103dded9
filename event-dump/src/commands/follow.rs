//! `follow`: a running program's events from its ring file as they are committed (ftrace's
//! `trace_pipe`), until the program stops or dies; or from its recording of segments, across
//! rotations ([`segments`](super::follow_segments)).

use super::{Choice, Colors, Result, out_line, thread_names};
use crate::cli::FollowArgs;
use crate::log::DumpError;
use crate::render::{Annotations, CsvColumns, Format, Origin, Renderer, Templates};
use event_format::decode::{Block, Catalog, Entry, Event};
use event_format::log::WriterLiveness;
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
        self.choice.learn(0, event);
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

/// What follows a live log: `follow`'s printer, `top`'s tally. The followers of a ring file
/// ([`watch_ring`]) and of a recording of segments (`follow_segments::watch_segments`) hand
/// it what they read, in the order they read it, and say in [`note`](Watch::note) what
/// following met, in `follow`'s words.
pub(crate) trait Watch {
    /// A file of the log is opened: the ring file (once), or each segment (a stream's
    /// blocks restart their numbers in each): its path, header and catalog.
    fn open(&mut self, path: &std::path::Path, header: &Header, catalog: &Catalog) -> Result<()>;
    /// A verified block, whose records from `from` (a byte offset in its records) come next;
    /// `from` is 0 the first time the block is met.
    fn block(&mut self, _block: &Block, _from: usize) {}
    /// A record of the block of `thread` numbered `sequence`.
    fn entry(&mut self, thread: u64, sequence: u64, entry: &Entry<'_>) -> Result<ControlFlow<()>>;
    /// A block that failed its checks (a stream's), or a ring file's block left out
    /// (`error` none: `line` says which).
    fn damaged(&mut self, _error: Option<&event_format::decode::BlockError>, line: String) {
        self.note(line);
    }
    /// What following met, in one line (without the `event-dump: ` before it).
    fn note(&mut self, line: String);
    /// After what one poll (or one block) brought: `Break` stops following.
    fn flush(&mut self) -> ControlFlow<()>;
}

/// `follow`'s [`Watch`]: its printer, made once the log's header is known, and stdout.
pub(super) struct Printing<'a, W: Write> {
    args: &'a FollowArgs,
    colors: Colors,
    printer: Option<Printer>,
    out: W,
}

impl<'a, W: Write> Printing<'a, W> {
    pub(super) fn new(args: &'a FollowArgs, colors: Colors, out: W) -> Printing<'a, W> {
        Printing { args, colors, printer: None, out }
    }
}

impl<W: Write> Watch for Printing<'_, W> {
    fn open(&mut self, path: &std::path::Path, header: &Header, catalog: &Catalog) -> Result<()> {
        if self.printer.is_none() {
            // Thread names are those the file holds when following starts (and those named
            // later that `--thread`'s names match: `Choice::learn`).
            let names = || thread_names(std::slice::from_ref(&path.to_owned()), false);
            let printer = Printer::new(self.args, self.colors, header, catalog, names)?;
            printer.start(&mut self.out)?;
            self.printer = Some(printer);
        }
        Ok(())
    }

    fn entry(&mut self, _thread: u64, _sequence: u64, entry: &Entry<'_>) -> Result<ControlFlow<()>> {
        match (entry, self.printer.as_mut()) {
            (Entry::Event(event), Some(printer)) => printer.event(&mut self.out, event),
            _ => Ok(ControlFlow::Continue(())),
        }
    }

    fn note(&mut self, line: String) {
        eprintln!("event-dump: {line}");
    }

    fn flush(&mut self) -> ControlFlow<()> {
        if self.out.flush().is_err() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    }
}

/// `follow` of a ring file: prints what its program commits, until it stops (a recording of
/// segments is `follow_segments`', which `follow` in mod.rs chooses).
pub(crate) fn follow_ring(args: &FollowArgs, colors: Colors) -> Result<ExitCode> {
    let stdout = io::stdout();
    let mut printing = Printing::new(args, colors, io::BufWriter::new(stdout.lock()));
    watch_ring(&args.ring, args.from_now, Duration::from_millis(args.interval.max(1)), &mut printing)?;
    Ok(ExitCode::SUCCESS)
}

/// Follows the ring file at `path` into `watch`, polling every `interval`, from what the
/// file holds (or, `from_now`, from what comes next), until its program stops or dies (its
/// writer gone: `event_format::log::liveness`), or `watch` says stop.
pub(crate) fn watch_ring(
    path: &std::path::Path,
    from_now: bool,
    interval: Duration,
    watch: &mut impl Watch,
) -> Result<()> {
    let shown = path.display().to_string();
    let reader = event_format::log::open_ring(path).map_err(|e| DumpError::new(e.to_string()))?;
    let header = reader.header().clone();
    let pid = reader.layout().pid;
    let catalog = Catalog::new(&header.sets);
    watch.open(path, &header, &catalog)?;
    let mut follower = if from_now { Follower::from_now(reader) } else { Follower::new(reader) };
    // Records of codes this reader does not know, by code: reported when following ends.
    let mut unknown: BTreeMap<u16, u64> = BTreeMap::new();
    let report_unknown = |unknown: &BTreeMap<u16, u64>, watch: &mut dyn FnMut(String)| {
        for (code, n) in unknown {
            watch(format!(
                "{shown}: {n} records of unknown code {code:#06x} skipped (a newer event set or format wrote them)"
            ));
        }
    };
    loop {
        let status = follower.reader().status().map_err(|e| DumpError::new(format!("{shown}: {e}")))?;
        let ended =
            status.state == STATE_CLOSED || !WriterLiveness::of_path(path, Some(status.heartbeat_ns)).is_running();
        let items = follower.poll().map_err(|e| DumpError::new(format!("{shown}: {e}")))?;
        for item in items {
            match item {
                FollowItem::Records { block, from, .. } => {
                    watch.block(&block, from);
                    let (thread, sequence) = (block.header.thread, block.header.sequence);
                    for entry in block.entries_from(&catalog, from) {
                        match &entry {
                            Entry::Unknown { code, .. } => *unknown.entry(*code).or_insert(0u64) += 1,
                            Entry::Bad(error) => watch.note(format!("thread {thread}, block {sequence}: {error}")),
                            Entry::Event(_) => {}
                        }
                        if watch.entry(thread, sequence, &entry)?.is_break() {
                            return Ok(());
                        }
                    }
                }
                // Gone before following started: not the follower's loss (`tail -f` does not
                // call the lines before where it starts lost).
                FollowItem::Before { .. } => {}
                FollowItem::Overwritten { thread, blocks } => {
                    watch.note(format!("thread {thread}: {blocks} blocks overwritten before they could be read"));
                }
                FollowItem::Damaged { thread, sequence, why } => {
                    watch.damaged(None, format!("thread {thread}, block {sequence}: {why}"));
                }
                FollowItem::PinAreaDamaged { why } => {
                    watch.note(format!(
                        "{shown}: the ring file's pin area is damaged ({why}): the pinned events from the damage on are not shown"
                    ));
                }
            }
        }
        if watch.flush().is_break() {
            return Ok(());
        }
        if ended {
            report_unknown(&unknown, &mut |line| watch.note(line));
            if status.state != STATE_CLOSED {
                watch.note(format!(
                    "the program (pid {pid}) ended without closing its ring file; everything it committed was shown"
                ));
            }
            // The ring file's verdict, as every reader gives it (`check`'s, in `print`'s
            // words): read whole once its program is done with it.
            if let Ok(mut log) = event_format::log::open(path, crate::log::options(false, false)) {
                let found = crate::log::ledger_of(&mut log).findings(|| log.writer_alive());
                if let Some(line) = crate::log::not_whole_line(&shown, &found) {
                    watch.note(line);
                }
            }
            return Ok(());
        }
        std::thread::sleep(interval);
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
