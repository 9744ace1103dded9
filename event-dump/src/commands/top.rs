//! `top`: a live view of a running recording, as top(1) shows processes: events per second by
//! kind and by event, the busiest threads, the spans' p50 and p99 over the last interval, and
//! what was lost (the ledger's findings, in its words) and suppressed; refreshed in place
//! until `q`, Esc or Ctrl-C, the terminal restored on every way out (a panic included:
//! ratatui's hook). `--once` prints the same view once, as plain text, for scripts.
//!
//! It reads through `follow`'s machinery ([`watch_ring`], [`watch_segments`]: event-format's
//! one opener, its ring follower and its growing-file tail), on a thread of its own, into a
//! [`Tally`] the screen is drawn from: a ring file from what it holds, a recording of
//! segments (or a stream) from its latest segment's start, across rotations.
//!
//! **Rates go by the events' own times**, mapped to wall time by the log's clock (its
//! header's calibration): events are counted in buckets of 100 ms of their time, and the
//! rate over the last interval is the events of the buckets in [now − lag − interval, now −
//! lag), lag being 200 ms (what a ring's records take to be read); once the recording ended,
//! the interval ends at its last event. So a burst read late (a stream's block written when
//! it fills) counts when it happened, not when it was read. The same rule gives the spans'
//! percentiles: the spans that ended in the interval, nearest rank.
//!
//! What the events' limits suppressed is the ledger's count of the `Suppressed` records read
//! (since `top` started: a ring's oldest were overwritten), drawn as `N suppressed` beside
//! the losses and, per event, in a line of its own.

use super::follow::{Watch, watch_ring};
use super::follow_segments::watch_segments;
use super::{Choice, Result, thread_names};
use crate::cli::{SortKey, TopArgs};
use crate::log::DumpError;
use event_format::builtins::BuiltinEvent;
use event_format::decode::{Block, BlockError, Catalog, Entry};
use event_format::ledger::{Findings, Ledger};
use event_format::ring::{RingFindings, STATE_RECORDING};
use event_format::roles::{Pairer, Roles};
use event_format::wire::{Clock, Header};
use std::collections::{BTreeMap, VecDeque};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The width of a bucket of event times, in ns.
const BUCKET_NS: i128 = 100_000_000;

/// How long the rates lag behind now, in ns: what a record takes to be read.
const LAG_NS: i128 = 200_000_000;

/// How many buckets are kept: a minute's.
const KEPT: i64 = 600;

/// The most span durations kept per span name (the oldest go first).
const MAX_DURATIONS: usize = 1 << 20;

/// How often the reading thread looks for new events.
const POLL: Duration = Duration::from_millis(50);

/// Events counted per bucket of their time, and in all.
#[derive(Default)]
struct Counter {
    total: u64,
    buckets: BTreeMap<i64, u64>,
}

impl Counter {
    fn add(&mut self, bucket: i64) {
        self.total += 1;
        *self.buckets.entry(bucket).or_default() += 1;
    }

    /// Forgets buckets before `oldest`.
    fn prune(&mut self, oldest: i64) {
        if self.buckets.first_key_value().is_some_and(|(b, _)| *b < oldest) {
            self.buckets = self.buckets.split_off(&oldest);
        }
    }

    /// Events in buckets `from..to`.
    fn within(&self, from: i64, to: i64) -> u64 {
        self.buckets.range(from..to).map(|(_, n)| n).sum()
    }
}

/// A span begun: its name and its begin's wall time.
struct Begun {
    name: String,
    wall: i128,
}

/// What `top` shows, as the reading thread counts it.
pub(crate) struct Tally {
    /// The log's header, once its first file is opened.
    header: Option<Header>,
    catalog: Option<Catalog>,
    roles: Roles,
    pairer: Pairer<Begun>,
    choice: Option<Choice>,
    /// Per event (by wire code), per thread.
    events: BTreeMap<u16, Counter>,
    threads: BTreeMap<u64, Counter>,
    thread_names: BTreeMap<u64, String>,
    /// Per span name, the durations of spans ended, with their end's bucket.
    spans: BTreeMap<String, VecDeque<(i64, u64)>>,
    /// The latest bucket an event fell in.
    latest: Option<i64>,
    /// The ledger of the file being read, and the findings of those read before it (a
    /// recording's earlier segments, whose blocks restart their numbers).
    ledger: Option<Ledger>,
    done: Findings,
    /// What the events' limits suppressed in the files read before the one being read, per
    /// (wire code, thread), as their ledgers counted it ([`Ledger::suppressed`]).
    suppressed_before: BTreeMap<(u16, u64), u64>,
    /// The last lines following met.
    notes: VecDeque<String>,
    /// Whether the recording ended (the reading thread returned), and its error.
    ended: bool,
    error: Option<String>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            header: None,
            catalog: None,
            roles: Roles::default(),
            pairer: Pairer::new(),
            choice: None,
            events: BTreeMap::new(),
            threads: BTreeMap::new(),
            thread_names: BTreeMap::new(),
            spans: BTreeMap::new(),
            latest: None,
            ledger: None,
            done: Findings::default(),
            suppressed_before: BTreeMap::new(),
            notes: VecDeque::new(),
            ended: false,
            error: None,
        }
    }

    fn clock(&self) -> Option<Clock> {
        self.header.as_ref().map(|h| h.clock)
    }

    /// What the events' limits suppressed, per event (wire code), the most first: the files
    /// read before, and the one being read.
    fn suppressed(&self) -> Vec<(u16, u64)> {
        let mut by_code: BTreeMap<u16, u64> = BTreeMap::new();
        let current = self.ledger.as_ref().map(|l| l.suppressed());
        for (&(code, _), &n) in self.suppressed_before.iter().chain(current.into_iter().flatten()) {
            let c = by_code.entry(code).or_default();
            *c = c.saturating_add(n);
        }
        let mut out: Vec<(u16, u64)> = by_code.into_iter().collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }

    /// The ledger's findings: the files read before, and the one being read.
    fn findings(&self) -> Findings {
        let mut f = self.done.clone();
        if let Some(l) = &self.ledger {
            // The file being read is the one a live recording writes.
            f.add(&l.findings(|| true));
        }
        f
    }

    fn event(&mut self, event: &event_format::decode::Event<'_>) {
        let Some(clock) = self.clock() else { return };
        if let Some(BuiltinEvent::ThreadName { thread, name }) = BuiltinEvent::of(event) {
            self.thread_names.insert(thread, name.to_string_lossy().into_owned());
        }
        if let Some(choice) = &mut self.choice {
            choice.learn(0, event);
        }
        let wall = clock.wall_ns(event.time);
        let bucket = (wall.div_euclid(BUCKET_NS)) as i64;
        let kept = self.choice.as_ref().is_none_or(|c| c.keeps(0, event, &clock));
        if kept {
            self.events.entry(event.desc.wire).or_default().add(bucket);
            self.threads.entry(event.thread).or_default().add(bucket);
        }
        if self.latest.is_none_or(|l| bucket > l) {
            self.latest = Some(bucket);
            for c in self.events.values_mut().chain(self.threads.values_mut()) {
                c.prune(bucket - KEPT);
            }
            for d in self.spans.values_mut() {
                while d.front().is_some_and(|(b, _)| *b < bucket - KEPT) {
                    d.pop_front();
                }
            }
        }
        let Some(role) = self.roles.of(event.desc.wire).cloned() else { return };
        if let Some(end) = role.ends
            && let Some(key) = self.roles.key(&end, event)
            && let Some(closed) = self.pairer.end(event.thread, &key)
            && let Ok(duration) = u64::try_from(wall - closed.begin.wall)
        {
            let durations = self.spans.entry(closed.begin.name).or_default();
            if durations.len() >= MAX_DURATIONS {
                durations.pop_front();
            }
            durations.push_back((bucket, duration));
        }
        if let Some(begin) = role.begins
            && let Some(key) = self.roles.key(&begin, event)
            && kept
        {
            let name = self.roles.begin_name(&begin, event).into_owned();
            self.pairer.begin(event.thread, key, Begun { name, wall });
        }
    }

    fn note(&mut self, line: String) {
        if self.notes.len() >= 3 {
            self.notes.pop_front();
        }
        self.notes.push_back(line);
    }
}

/// `top`'s [`Watch`]: the tally, shared with the screen.
struct Collector {
    tally: Arc<Mutex<Tally>>,
    select: crate::cli::Select,
}

fn lock(tally: &Mutex<Tally>) -> MutexGuard<'_, Tally> {
    tally.lock().unwrap_or_else(|p| p.into_inner())
}

impl Watch for Collector {
    fn open(&mut self, path: &Path, header: &Header, catalog: &Catalog) -> Result<()> {
        let mut t = lock(&self.tally);
        if t.header.is_none() {
            let names = || thread_names(std::slice::from_ref(&path.to_owned()), false);
            t.choice = Some(Choice::new(&self.select, &[header], names)?);
            t.roles = Roles::new(&header.sets);
            t.header = Some(header.clone());
            t.catalog = Some(catalog.clone());
        }
        // A segment's blocks restart their numbers: a ledger of its own.
        if let Some(done) = t.ledger.take() {
            let f = done.findings(|| false);
            t.done.add(&f);
            for (&key, &n) in done.suppressed() {
                let s = t.suppressed_before.entry(key).or_default();
                *s = s.saturating_add(n);
            }
        }
        t.ledger = Some(Ledger::new(header.format));
        Ok(())
    }

    fn block(&mut self, block: &Block, from: usize) {
        if from == 0
            && let Some(l) = &mut lock(&self.tally).ledger
        {
            l.block(block);
        }
    }

    fn entry(&mut self, thread: u64, sequence: u64, entry: &Entry<'_>) -> Result<ControlFlow<()>> {
        let mut t = lock(&self.tally);
        if let Some(l) = &mut t.ledger {
            l.entry(thread, sequence, entry);
        }
        if let Entry::Event(event) = entry {
            t.event(event);
        }
        Ok(ControlFlow::Continue(()))
    }

    fn damaged(&mut self, error: Option<&BlockError>, line: String) {
        let mut t = lock(&self.tally);
        if let Some(l) = &mut t.ledger {
            match error {
                Some(e) => l.damaged(e),
                // A ring file's block left out: the ledger counts it as the ring reader's.
                None => l.ring_file(&RingFindings {
                    damaged: vec![(0, 0, line.clone())],
                    state: STATE_RECORDING,
                    ..RingFindings::default()
                }),
            }
        }
    }

    fn note(&mut self, line: String) {
        lock(&self.tally).note(line);
    }

    fn flush(&mut self) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

/// Starts the thread that follows `path` into a new tally.
fn start_reading(path: PathBuf, select: crate::cli::Select) -> Result<Arc<Mutex<Tally>>> {
    let tally = Arc::new(Mutex::new(Tally::new()));
    let mut collector = Collector { tally: Arc::clone(&tally), select };
    let ring = matches!(event_format::log::kind(&path), Ok(event_format::log::Kind::Ring));
    std::thread::Builder::new()
        .name("event-dump-top".into())
        .spawn(move || {
            let result = if ring {
                watch_ring(&path, false, POLL, &mut collector)
            } else {
                watch_segments(&path, false, POLL, &mut collector)
            };
            let mut t = lock(&collector.tally);
            t.ended = true;
            t.error = result.err().map(|e| e.to_string());
        })
        .map_err(|e| DumpError::new(format!("cannot start a thread to read the recording: {e}")))?;
    Ok(tally)
}

/// One row of a table: its name, its events in the interval and in all.
struct Row {
    name: String,
    rate: f64,
    total: u64,
}

/// What the screen shows, computed from the tally at one instant.
struct View {
    title: String,
    rate: f64,
    read: u64,
    losses: String,
    /// What the events' limits suppressed, per event (its name), the most first.
    suppressed: Vec<(String, u64)>,
    kinds: Vec<Row>,
    events: Vec<Row>,
    threads: Vec<Row>,
    /// Per span name: ended in the interval, p50, p99, max (ns).
    spans: Vec<(String, usize, u64, u64, u64)>,
    notes: Vec<String>,
    ended: bool,
}

impl View {
    fn of(t: &Tally, path: &Path, interval: Duration, sort: SortKey, reverse: bool) -> View {
        let buckets = (interval.as_millis() as i128 * 1_000_000 / BUCKET_NS).max(1) as i64;
        let seconds = buckets as f64 * BUCKET_NS as f64 / 1e9;
        // The interval ends `LAG` before now while the program records, at its last event
        // once it ended.
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128);
        let to = if t.ended { t.latest.map_or(0, |l| l + 1) } else { ((now - LAG_NS).div_euclid(BUCKET_NS)) as i64 };
        let from = to - buckets;
        let row = |name: String, c: &Counter| Row { name, rate: c.within(from, to) as f64 / seconds, total: c.total };
        let mut events = Vec::new();
        let mut kinds: BTreeMap<String, Row> = BTreeMap::new();
        if let Some(catalog) = &t.catalog {
            for (wire, c) in &t.events {
                let Some(desc) = catalog.get(*wire) else { continue };
                let r = row(desc.full_name().to_string(), c);
                let kind = kinds.entry(desc.full_kind()).or_insert_with(|| Row {
                    name: desc.full_kind(),
                    rate: 0.0,
                    total: 0,
                });
                kind.rate += r.rate;
                kind.total += r.total;
                events.push(r);
            }
        }
        let mut threads: Vec<Row> = t
            .threads
            .iter()
            .map(|(id, c)| {
                let name = match t.thread_names.get(id) {
                    Some(n) => format!("T{id} ({n})"),
                    None => format!("T{id}"),
                };
                row(name, c)
            })
            .collect();
        let mut kinds: Vec<Row> = kinds.into_values().collect();
        for rows in [&mut kinds, &mut events, &mut threads] {
            sort_rows(rows, sort, reverse);
        }
        let spans = t
            .spans
            .iter()
            .filter_map(|(name, d)| {
                let mut in_window: Vec<u64> =
                    d.iter().filter(|(b, _)| (from..to).contains(b)).map(|(_, d)| *d).collect();
                if in_window.is_empty() {
                    return None;
                }
                in_window.sort_unstable();
                let rank = |p: usize| in_window[(p * in_window.len()).div_ceil(100).max(1) - 1];
                Some((name.clone(), in_window.len(), rank(50), rank(99), in_window[in_window.len() - 1]))
            })
            .collect();
        let title = match &t.header {
            // Who records, as every reader names a log: `api on host-a (pid 1)`.
            Some(h) => format!("{}: {}", path.display(), crate::identity::described(h)),
            None => format!("{}: opening", path.display()),
        };
        View {
            title,
            rate: events.iter().map(|r| r.rate).sum(),
            read: events.iter().map(|r| r.total).sum(),
            losses: t.findings().losses_line(),
            suppressed: t
                .suppressed()
                .into_iter()
                .map(|(code, n)| {
                    let name = t.catalog.as_ref().and_then(|c| c.get(code)).map(|d| d.full_name().to_string());
                    (name.unwrap_or_else(|| format!("code {code:#06x}")), n)
                })
                .collect(),
            kinds,
            events,
            threads,
            spans,
            notes: t.notes.iter().cloned().chain(t.error.clone()).collect(),
            ended: t.ended,
        }
    }

    /// The view as lines of text: `--once`'s output, and the screen's content.
    fn lines(&self, interval: Duration, sort: SortKey, threads: usize) -> Vec<String> {
        let state = if self.ended { "ended" } else { "live" };
        let mut out = vec![
            format!("{}, {state}, over the last {:.1} s", self.title, interval.as_secs_f64()),
            format!("events/s {:.0}  (events read {})  sorted by {}", self.rate, self.read, sort.word()),
            format!(
                "{}; {} suppressed",
                self.losses,
                self.suppressed.iter().map(|s| s.1).fold(0u64, u64::saturating_add)
            ),
        ];
        // Per event, as `stats` names them: what each limit did not keep.
        if !self.suppressed.is_empty() {
            let each: Vec<String> = self.suppressed.iter().map(|(name, n)| format!("{name} {n}")).collect();
            out.push(format!("suppressed by their limits: {}", each.join(", ")));
        }
        out.push(String::new());
        let table = |out: &mut Vec<String>, head: &str, rows: &[Row], limit: usize| {
            let width = rows.iter().map(|r| r.name.chars().count()).max().unwrap_or(0).max(head.len());
            out.push(format!("{head:<width$}  {:>12}  {:>12}", "events/s", "total"));
            for r in rows.iter().take(limit) {
                out.push(format!("{:<width$}  {:>12.0}  {:>12}", r.name, r.rate, r.total));
            }
            out.push(String::new());
        };
        table(&mut out, "kind", &self.kinds, usize::MAX);
        table(&mut out, "thread", &self.threads, threads);
        if !self.spans.is_empty() {
            let width = self.spans.iter().map(|s| s.0.chars().count()).max().unwrap_or(0).max(4);
            out.push(format!(
                "{:<width$}  {:>8}  {:>12}  {:>12}  {:>12}",
                "span", "ended", "p50 ns", "p99 ns", "max ns"
            ));
            for (name, n, p50, p99, max) in &self.spans {
                out.push(format!("{name:<width$}  {n:>8}  {p50:>12}  {p99:>12}  {max:>12}"));
            }
            out.push(String::new());
        }
        table(&mut out, "event", &self.events, usize::MAX);
        out.extend(self.notes.iter().map(|n| format!("note: {n}")));
        out
    }
}

fn sort_rows(rows: &mut [Row], sort: SortKey, reverse: bool) {
    match sort {
        SortKey::Rate => rows.sort_by(|a, b| b.rate.total_cmp(&a.rate).then_with(|| a.name.cmp(&b.name))),
        SortKey::Total => rows.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.name.cmp(&b.name))),
        SortKey::Name => rows.sort_by(|a, b| a.name.cmp(&b.name)),
    }
    if reverse {
        rows.reverse();
    }
}

pub(crate) fn top(args: &TopArgs) -> Result<ExitCode> {
    let interval = Duration::from_millis(args.interval.max(100));
    // What the path is, as the opener reads it, said now rather than on the screen.
    event_format::log::kind(&args.log).map_err(|e| DumpError::new(e.to_string()))?;
    if !args.once && !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Err(DumpError::new(
            "top draws on a terminal, and stdout is not one; `top --once` prints one view as text",
        ));
    }
    let tally = start_reading(args.log.clone(), args.select.clone())?;
    if args.once {
        // One interval's events, then the view as text.
        let began = Instant::now();
        while began.elapsed() < interval + Duration::from_nanos(LAG_NS as u64) {
            if lock(&tally).ended {
                break;
            }
            std::thread::sleep(POLL);
        }
        let t = lock(&tally);
        if let Some(e) = &t.error {
            return Err(DumpError::new(e.clone()));
        }
        let view = View::of(&t, &args.log, interval, args.sort, args.reverse);
        drop(t);
        let mut text = view.lines(interval, args.sort, usize::MAX).join("\n");
        text.push('\n');
        super::write_all(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    screen(&tally, args, interval)
}

/// Leaves raw mode and the alternate screen when dropped: on `q`, on an error, on a panic
/// (ratatui's hook does it before the panic message).
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

/// The live screen, until `q`, Esc or Ctrl-C.
fn screen(tally: &Arc<Mutex<Tally>>, args: &TopArgs, interval: Duration) -> Result<ExitCode> {
    use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    use ratatui::style::{Modifier, Style};
    use ratatui::text::{Line, Text};
    use ratatui::widgets::{Block, Paragraph};
    let io = |e: std::io::Error| DumpError::new(format!("the terminal: {e}"));
    let mut terminal = ratatui::try_init().map_err(io)?;
    let _restore = Restore;
    let (mut sort, mut reverse, mut interval) = (args.sort, args.reverse, interval);
    let mut view = View::of(&lock(tally), &args.log, interval, sort, reverse);
    let mut next = Instant::now() + interval;
    loop {
        let lines = view.lines(interval, sort, 10);
        terminal
            .draw(|frame| {
                let mut text = Text::default();
                for (i, l) in lines.iter().enumerate() {
                    let bold = i < 2
                        || l.starts_with("kind ")
                        || l.starts_with("thread ")
                        || l.starts_with("span ")
                        || l.starts_with("event ");
                    let style = if bold { Style::default().add_modifier(Modifier::BOLD) } else { Style::default() };
                    text.lines.push(Line::styled(l.clone(), style));
                }
                let help = " q quit · s sort · r reverse · +/- interval ";
                let block = Block::bordered().title(" event-dump top ").title_bottom(help);
                frame.render_widget(Paragraph::new(text).block(block), frame.area());
            })
            .map_err(io)?;
        let wait = next.saturating_duration_since(Instant::now());
        let mut redraw = false;
        if event::poll(wait).map_err(io)?
            && let Event::Key(key) = event::read().map_err(io)?
            && key.kind == KeyEventKind::Press
        {
            match key.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(ExitCode::SUCCESS),
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                    return Ok(ExitCode::SUCCESS);
                }
                KeyCode::Char('s') => sort = sort.next(),
                KeyCode::Char('r') => reverse = !reverse,
                KeyCode::Char('+') => interval = (interval * 2).min(Duration::from_secs(60)),
                KeyCode::Char('-') => interval = (interval / 2).max(Duration::from_millis(100)),
                _ => {}
            }
            redraw = true;
        }
        if redraw || Instant::now() >= next {
            let t = lock(tally);
            if let Some(e) = &t.error {
                return Err(DumpError::new(e.clone()));
            }
            view = View::of(&t, &args.log, interval, sort, reverse);
            if Instant::now() >= next {
                next = Instant::now() + interval;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_count_per_bucket_and_forget_the_old() {
        let mut c = Counter::default();
        for b in [5, 3, 5, 9, 10] {
            c.add(b);
        }
        assert_eq!((c.total, c.within(3, 6), c.within(6, 11), c.within(0, 100)), (5, 3, 2, 5));
        c.prune(6);
        assert_eq!((c.total, c.within(0, 100)), (5, 2));
    }

    #[test]
    fn rows_sort_by_rate_total_or_name() {
        let rows = || {
            vec![
                Row { name: "b".into(), rate: 1.0, total: 30 },
                Row { name: "a".into(), rate: 5.0, total: 10 },
                Row { name: "c".into(), rate: 3.0, total: 20 },
            ]
        };
        let names = |rows: &[Row]| rows.iter().map(|r| r.name.as_str()).collect::<String>();
        let mut r = rows();
        sort_rows(&mut r, SortKey::Rate, false);
        assert_eq!(names(&r), "acb");
        sort_rows(&mut r, SortKey::Total, false);
        assert_eq!(names(&r), "bca");
        sort_rows(&mut r, SortKey::Name, true);
        assert_eq!(names(&r), "cba");
    }
}
