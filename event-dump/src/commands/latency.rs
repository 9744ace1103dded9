//! `latency`: how long spans last. The logs' spans (declared in events.def, or by the naming
//! convention: [`event_format::roles`]) are paired as every reader pairs them, through the
//! merge (threads and logs in time order, as async spans need), and their durations are
//! summed up per span name, or per value of parameters (`--by`, one or several): count,
//! minimum, percentiles (`--percentiles`, default the 50th, 90th and 99th), maximum, total
//! and a histogram of powers of two (as bpftrace's `hist` prints it); then the slowest
//! spans, with their start as `print` shows it, so that `print --since START --until END`
//! opens the window around one.
//!
//! - **Durations** are the end's time minus the begin's, each in nanoseconds as `print`
//!   shows it (seconds with 9 decimals): two spans `print` shows alike last alike.
//! - **Percentiles are exact**, by nearest rank: the p-th of n durations is the
//!   ⌈p·n/100⌉-th smallest. To know them, every duration of the selected spans is kept
//!   until the end: 8 bytes per span (memory grows with the spans counted, and with
//!   nothing else but the merge's window and the spans open at once).
//! - **Selection.** `print`'s options choose spans by their begin event (`--kind`,
//!   `--event`, `--thread`, `--since`, `--until`, `--filter`), and `--span` by their names;
//!   ends are never left out, so that pairing stays right.
//! - **Nothing guessed.** A span still open at the end of its log, or cut by the end of a
//!   span that encloses it on its thread, is counted as unended and has no duration; an end
//!   that closes nothing is counted too. A span whose end is timed before its begin (a
//!   clock that stepped back) is counted and left out.

use super::distributions::{self, BAR, human, power};
use super::{Choice, Result, thread_names, write_all};
use crate::cli::LatencyArgs;
use crate::export::Item;
use crate::log::{DumpError, open_all, open_all_indexed};
use event_format::decode::Event;
use event_format::roles::{Pairer, Pairing, Roles, SpanKey, SpanSource, SpanUse};
use event_format::select::glob;
use event_format::text::{Seconds, write_value};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt::Write as _;
use std::process::ExitCode;

/// The percentiles shown without `--percentiles`.
const PERCENTILES: &str = "50,90,99";

/// A span begun: what its end needs to be counted.
struct Begun {
    /// Its start, in nanoseconds since its log's start (as `print` shows it).
    ns: i128,
    thread: u64,
    name: String,
    /// Its group's values of `--by`'s parameters (the begin's; else the end's give them).
    by: Vec<Option<String>>,
    /// Its id as `print` writes it: an async span's id, a `tracing` span's `span`.
    id: Option<String>,
    /// Whether the choice keeps it.
    selected: bool,
}

/// What is counted of one group: a span name, and a value of `--by`.
#[derive(Default)]
pub(crate) struct Group {
    /// The durations of the spans paired, in ns (sorted once counting is done).
    pub(crate) durations: Vec<u64>,
    pub(crate) unended: u64,
    pub(crate) unmatched: u64,
    pub(crate) backwards: u64,
}

/// One of the slowest spans.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Slow {
    duration: u64,
    /// The order it ended in: of equal durations, the earlier is kept.
    order: Reverse<u64>,
    start: String,
    end: String,
    thread: String,
    end_thread: String,
    span: String,
    by: Vec<Option<String>>,
    id: Option<String>,
}

/// What is counted per span name and values of `--by`.
type Groups = BTreeMap<(String, Vec<Option<String>>), Group>;

/// The spans of logs paired and counted, one event at a time in time order (what `latency`
/// and `summary` read through the merge).
pub(crate) struct Spans<'a> {
    roles: Vec<Roles>,
    seconds: Vec<Seconds>,
    clocks: Vec<event_format::wire::Clock>,
    /// Each log's prefix, when there are several (threads are written `host/service:Tn`,
    /// `crate::identity::prefixes`).
    processes: Option<Vec<String>>,
    pairers: Vec<Pairer<Begun>>,
    groups: Groups,
    slowest: BinaryHeap<Reverse<Slow>>,
    ended: u64,
    top: usize,
    by: &'a [String],
    names: Option<Vec<&'a str>>,
    choice: &'a Choice,
}

/// What [`Spans`] counted.
pub(crate) struct Counted {
    /// Per span name and values of `--by`, the durations sorted.
    pub(crate) groups: Groups,
    /// The slowest, slowest first.
    pub(crate) slowest: Vec<Slow>,
    /// Spans given up unended to keep within the pairer's limits.
    pub(crate) given_up: u64,
}

impl<'a> Spans<'a> {
    /// The spans of `logs` that `choice` and `names` (globs of span names) choose, grouped by
    /// the values of `by`, keeping the `top` slowest.
    pub(crate) fn new(
        logs: &[crate::log::Log],
        choice: &'a Choice,
        names: Option<Vec<&'a str>>,
        by: &'a [String],
        top: usize,
    ) -> Result<Spans<'a>> {
        let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
        let roles: Vec<Roles> = headers.iter().map(|h| Roles::new(&h.sets)).collect();
        for param in by {
            check_by(param, logs, &roles)?;
        }
        Ok(Spans {
            seconds: headers.iter().map(|h| Seconds::new(&h.clock)).collect(),
            clocks: headers.iter().map(|h| h.clock).collect(),
            processes: (logs.len() > 1).then(|| crate::identity::prefixes(&headers)),
            pairers: logs.iter().map(|_| Pairer::new()).collect(),
            roles,
            groups: Groups::new(),
            slowest: BinaryHeap::new(),
            ended: 0,
            top,
            by,
            names,
            choice,
        })
    }

    fn thread_text(&self, file: usize, thread: u64) -> String {
        match &self.processes {
            Some(processes) => format!("{}:T{thread}", processes[file]),
            None => format!("T{thread}"),
        }
    }

    fn wanted(&self, name: &str) -> bool {
        self.names.as_ref().is_none_or(|s| s.iter().any(|g| glob::matches(g, name)))
    }

    /// Counts what `event`, of log `file`, begins or ends.
    pub(crate) fn event(&mut self, file: usize, event: &Event<'_>) {
        let Some(role) = self.roles[file].of(event.desc.wire) else { return };
        let role = role.clone();
        let ns = self.seconds[file].nanos(event.time);
        if let Some(end) = role.ends
            && let Some(key) = self.roles[file].key(&end, event)
        {
            match self.pairers[file].end(event.thread, &key) {
                Some(closed) => {
                    for cut in closed.cut.into_iter().filter(|c| c.selected) {
                        self.groups.entry((cut.name, cut.by)).or_default().unended += 1;
                    }
                    let begun = closed.begin;
                    if begun.selected {
                        let ended_by = by_values(self.by, event);
                        let by: Vec<Option<String>> =
                            begun.by.iter().zip(ended_by).map(|(b, e)| b.clone().or(e)).collect();
                        let group = self.groups.entry((begun.name.clone(), by.clone())).or_default();
                        match u64::try_from(ns - begun.ns) {
                            Err(_) => group.backwards += 1,
                            Ok(duration) => {
                                group.durations.push(duration);
                                self.ended += 1;
                                if self.top > 0 {
                                    let slow = Slow {
                                        duration,
                                        order: Reverse(self.ended),
                                        start: seconds_text(begun.ns),
                                        end: seconds_text(ns),
                                        thread: self.thread_text(file, begun.thread),
                                        end_thread: self.thread_text(file, event.thread),
                                        span: begun.name,
                                        by,
                                        id: begun.id,
                                    };
                                    self.slowest.push(Reverse(slow));
                                    if self.slowest.len() > self.top {
                                        self.slowest.pop();
                                    }
                                }
                            }
                        }
                    }
                }
                None => {
                    let name = end_name(&self.roles[file], &end, event);
                    if self.wanted(&name) && self.choice.keeps(file, event, &self.clocks[file]) {
                        self.groups.entry((name, by_values(self.by, event))).or_default().unmatched += 1;
                    }
                }
            }
        }
        if let Some(begin) = role.begins
            && let Some(key) = self.roles[file].key(&begin, event)
        {
            let name = self.roles[file].begin_name(&begin, event).into_owned();
            let selected = self.wanted(&name) && self.choice.keeps(file, event, &self.clocks[file]);
            let id = id_text(&begin, &key, event);
            let by = by_values(self.by, event);
            self.pairers[file].begin(event.thread, key, Begun { ns, thread: event.thread, name, by, id, selected });
        }
    }

    /// The spans counted: those still open are unended.
    pub(crate) fn finish(mut self) -> Counted {
        let mut given_up = 0;
        for pairer in std::mem::take(&mut self.pairers) {
            given_up += pairer.given_up();
            let left = pairer.finish();
            let open = left.threads.into_iter().flat_map(|(_, s)| s.into_iter().map(|(_, b)| b));
            for begun in open.chain(left.asyncs.into_iter().flat_map(|(_, s)| s)).filter(|b| b.selected) {
                self.groups.entry((begun.name, begun.by)).or_default().unended += 1;
            }
        }
        for group in self.groups.values_mut() {
            group.durations.sort_unstable();
        }
        let slowest = self.slowest.into_sorted_vec().into_iter().map(|Reverse(s)| s).collect();
        Counted { groups: self.groups, slowest, given_up }
    }
}

/// The line said when spans were given up unended to keep within the pairer's limits.
pub(crate) fn given_up_line(given_up: u64) -> Option<String> {
    (given_up > 0).then(|| {
        format!(
            "{given_up} spans were given up unended: more were open at once than latency holds ({} on a thread, {} \
             async)",
            event_format::roles::MAX_DEPTH,
            event_format::roles::MAX_OPEN
        )
    })
}

pub(crate) fn latency(args: &LatencyArgs) -> Result<ExitCode> {
    let points = Points::parse(args.percentiles.as_deref().unwrap_or(PERCENTILES))?;
    let mut logs =
        if args.window_only { open_all(&args.logs, args.force)? } else { open_all_indexed(&args.logs, args.force)? };
    let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
    let choice = Choice::new(&args.select, &headers, || thread_names(&args.logs, args.force))?;
    drop(headers);
    let names: Option<Vec<&str>> = args.span.as_deref().map(|s| s.split(',').map(str::trim).collect());
    let mut spans = Spans::new(&logs, &choice, names, &args.by, args.top)?;
    // The histograms the recorder kept (`hist`), shown after the spans.
    let mut histograms = event_format::histogram::Histograms::new();
    for (file, log) in logs.iter().enumerate() {
        histograms.add_log(file, log.header());
    }
    let clocks: Vec<_> = logs.iter().map(|l| l.header().clock).collect();
    let ledgers = crate::export::merge_all(&mut logs, "paired", |Item { file, event }| {
        // The histograms take the `Histogram` records of the threads and times chosen.
        if !choice.keeps_period(file, &event, &clocks[file]) || histograms.take(file, &event) {
            return Ok(());
        }
        spans.event(file, &event);
        Ok(())
    })
    .map_err(|e| DumpError::new(format!("cannot read the logs: {e}")))?;
    let Counted { groups, slowest, given_up } = spans.finish();
    if let Some(line) = given_up_line(given_up) {
        eprintln!("event-dump: {line}");
    }
    if groups.is_empty() && histograms.is_empty() {
        return Err(DumpError::new(if args.span.is_some() || !choice.is_everything() {
            "no span of the log is selected; `event-dump latency LOG` lists them all"
        } else {
            "no span in the log: declare one in events.def (SPAN(name, Begin, End)), or name two events FooBegin and FooEnd"
        }));
    }
    let kept: Vec<&event_format::histogram::Merged> = histograms.iter().map(|(_, m)| m).collect();
    let text = match args.format {
        LatencyFormat::Text => {
            let mut out = text(&groups, &slowest, &args.by, &points);
            if !kept.is_empty() {
                out.push_str("Kept by the recorder (events.def's HISTOGRAM; `event-dump hist` shows them alone):\n");
                out.push_str(&distributions::text(&kept, histograms.qualified(), false));
            }
            out
        }
        LatencyFormat::Json if kept.is_empty() => json(&groups, &slowest, &args.by, &points),
        LatencyFormat::Json => {
            let mut out = json(&groups, &slowest, &args.by, &points);
            // The declared histograms, as `hist --format json` writes them, before the end.
            out.truncate(out.trim_end().len() - 1);
            out.push_str(",\"histograms\":[");
            for (i, m) in kept.iter().enumerate() {
                out.push_str(if i > 0 { ",\n" } else { "\n" });
                distributions::json_one(&mut out, m, histograms.qualified());
            }
            out.push_str("\n]}\n");
            out
        }
    };
    write_all(&text)?;
    distributions::say_unreadable(&histograms);
    // What the merge could not hand on: the logs' damaged blocks, bad records, unknown codes,
    // in the ledger's words.
    let mut found = event_format::ledger::Findings::default();
    for l in &ledgers {
        found.add(&l.findings(|| true));
    }
    let left_out = found.said(&crate::export::UNREADABLE);
    if !left_out.is_empty() {
        eprintln!(
            "event-dump: left out what could not be read: {}; `event-dump check LOG` tells more",
            left_out.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The percentiles `--percentiles` asks for, each as written (`99.9`) and as a fraction.
pub(crate) struct Points(Vec<Point>);

/// One percentile: p = `num / den` percent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Point {
    /// As the keys and columns name it: `50`, `99.9` (no trailing zeros).
    pub(crate) text: String,
    num: u128,
    den: u128,
}

impl Points {
    /// `50,99,99.9`: each above 0 and at most 100, at most 9 decimals, in the order given.
    pub(crate) fn parse(list: &str) -> Result<Points> {
        let bad = |item: &str, why: &str| {
            DumpError::new(format!(
                "--percentiles {list}: `{item}` {why}; give percentiles above 0 and at most 100, such as 50,99,99.9"
            ))
        };
        let mut points: Vec<Point> = Vec::new();
        for item in list.split(',').map(str::trim) {
            let (whole, frac) = item.split_once('.').unwrap_or((item, ""));
            let frac = frac.trim_end_matches('0');
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            if !digits(whole) || !(frac.is_empty() || digits(frac)) || frac.len() > 9 || whole.len() > 3 {
                return Err(bad(item, "is not a number of at most 9 decimals"));
            }
            let den = 10u128.pow(frac.len() as u32);
            let num = whole.parse::<u128>().unwrap_or(u128::MAX / 2) * den + frac.parse::<u128>().unwrap_or(0);
            if num == 0 || num > 100 * den {
                return Err(bad(item, "is not above 0 and at most 100"));
            }
            let whole = whole.trim_start_matches('0');
            let whole = if whole.is_empty() { "0" } else { whole };
            let text = if frac.is_empty() { whole.to_owned() } else { format!("{whole}.{frac}") };
            if points.iter().any(|p| p.text == text) {
                return Err(bad(item, "is given twice"));
            }
            points.push(Point { text, num, den });
        }
        Ok(Points(points))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Point> {
        self.0.iter()
    }
}

pub(crate) use crate::cli::LatencyFormat;

/// Each of `--by`'s parameters must be one of some span's begin or end event.
fn check_by(by: &str, logs: &[crate::log::Log], roles: &[Roles]) -> Result<()> {
    let mut params = std::collections::BTreeSet::new();
    for (log, roles) in logs.iter().zip(roles) {
        for desc in log.catalog().iter() {
            if roles.of(desc.wire).is_some_and(|r| r.is_span()) {
                params.extend(desc.params.iter().map(String::as_str));
            }
        }
    }
    if params.contains(by) {
        return Ok(());
    }
    let list: Vec<&str> = params.into_iter().collect();
    let hint = event_format::def::closest(by, list.iter().copied())
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default();
    Err(DumpError::new(format!(
        "--by {by}: no span's begin or end event has a parameter `{by}`{hint}; theirs are {}",
        if list.is_empty() { "none".to_owned() } else { list.join(", ") }
    )))
}

/// The values of parameters `by` of `event`, as `print` writes them (`None` for one it has
/// not).
fn by_values(by: &[String], event: &Event<'_>) -> Vec<Option<String>> {
    by.iter().map(|b| by_value(b, event)).collect()
}

/// The value of parameter `by` of `event`, as `print` writes it.
fn by_value(by: &str, event: &Event<'_>) -> Option<String> {
    let i = event.desc.params.iter().position(|p| p == by)?;
    let mut text = String::new();
    write_value(&mut text, &event.values().nth(i)?).ok()?;
    Some(text)
}

/// A span's id as `print` writes it: an async span's id value, a `tracing` span's `span`.
fn id_text(used: &SpanUse, key: &SpanKey, event: &Event<'_>) -> Option<String> {
    let param = match (used.pairing, key) {
        (Pairing::Async { param }, _) => param,
        (Pairing::Tracing, _) => 0,
        (Pairing::Thread, _) => return None,
    };
    let mut text = String::new();
    write_value(&mut text, &event.values().nth(param)?).ok()?;
    Some(text)
}

/// The group of the `tracing` bridge's `SpanClose` records that closed nothing (a span
/// created before the recording started, or whose `SpanOpen` was lost): a close carries only
/// the span's id, not its name, so none of the named groups can count it (docs/OUTPUT.md,
/// "latency").
pub(crate) const UNOPENED: &str = "(unopened tracing span)";

/// The name of the span an end that closed nothing would have closed: the span's, or
/// [`UNOPENED`] for a `SpanClose`, which does not name its span.
fn end_name(roles: &Roles, used: &SpanUse, event: &Event<'_>) -> String {
    if roles.span(used.span).source == SpanSource::TracingSpan {
        return UNOPENED.to_owned();
    }
    roles.begin_name(used, event).into_owned()
}

/// Nanoseconds as `print` writes seconds: `-`? whole `.` 9 digits.
fn seconds_text(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let ns = ns.unsigned_abs();
    format!("{sign}{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// The nearest-rank percentile `p` of `sorted` (not empty): the ⌈p·n/100⌉-th smallest.
pub(crate) fn percentile(sorted: &[u64], p: &Point) -> u64 {
    let n = sorted.len() as u128;
    let rank = (p.num * n).div_ceil(100 * p.den).clamp(1, n);
    sorted[(rank - 1) as usize]
}

/// The sum of `durations`, in ns (a u128: no sum of u64 durations overflows it).
pub(crate) fn total(durations: &[u64]) -> u128 {
    durations.iter().map(|&d| u128::from(d)).sum()
}

/// The power-of-two bucket of `v`: 0 for 0, 1 for 1, then k + 1 for [2^k, 2^(k+1)).
fn bucket(v: u64) -> usize {
    if v == 0 { 0 } else { 64 - v.leading_zeros() as usize }
}

/// The bounds of bucket `b`: [from, to).
fn bucket_bounds(b: usize) -> (u64, u128) {
    match b {
        0 => (0, 1),
        b => (1 << (b - 1), 1u128 << b),
    }
}

/// The histogram's buckets from the first that holds a duration to the last: (bucket, count).
fn histogram(sorted: &[u64]) -> Vec<(usize, u64)> {
    let mut counts = [0u64; 65];
    for &d in sorted {
        counts[bucket(d)] += 1;
    }
    let first = counts.iter().position(|&c| c > 0);
    let last = counts.iter().rposition(|&c| c > 0);
    match (first, last) {
        (Some(f), Some(l)) => (f..=l).map(|b| (b, counts[b])).collect(),
        _ => Vec::new(),
    }
}

fn group_title(name: &str, by: &[String], values: &[Option<String>]) -> String {
    let mut title = name.to_owned();
    for (by, value) in by.iter().zip(values) {
        let _ = write!(title, " {by}={}", value.as_deref().unwrap_or("(none)"));
    }
    title
}

/// Values of `--by` as one column: each value, `(none)` for one the span has not, joined by
/// `,`.
fn values_text(values: &[Option<String>]) -> String {
    values.iter().map(|v| v.as_deref().unwrap_or("(none)")).collect::<Vec<_>>().join(",")
}

fn text(groups: &Groups, slowest: &[Slow], by: &[String], points: &Points) -> String {
    let mut out = String::new();
    for ((name, value), g) in groups {
        let mut notes = Vec::new();
        if g.unended > 0 {
            notes.push(format!("{} unended", g.unended));
        }
        if g.unmatched > 0 {
            notes.push(format!("{} {} with no begin", g.unmatched, if g.unmatched == 1 { "end" } else { "ends" }));
        }
        if g.backwards > 0 {
            notes.push(format!("{} ended before they began (left out)", g.backwards));
        }
        let notes = if notes.is_empty() { String::new() } else { format!("; {}", notes.join(", ")) };
        let n = g.durations.len();
        let _ = writeln!(out, "{}: {n} {}{notes}", group_title(name, by, value), if n == 1 { "span" } else { "spans" });
        if let (Some(&min), Some(&max)) = (g.durations.first(), g.durations.last()) {
            let mut line = format!("  min {}", human(min));
            for p in points.iter() {
                let _ = write!(line, "  p{} {}", p.text, human(percentile(&g.durations, p)));
            }
            let _ = writeln!(out, "{line}  max {}", human(max));
            let buckets = histogram(&g.durations);
            let most = buckets.iter().map(|b| b.1).max().unwrap_or(1).max(1);
            let _ = writeln!(out, "  durations in ns:");
            for (b, count) in buckets {
                let label = match bucket_bounds(b) {
                    (from, to) if to == u128::from(from) + 1 => format!("[{}]", power(u128::from(from))),
                    (from, to) => format!("[{}, {})", power(u128::from(from)), power(to)),
                };
                let bar = "@".repeat((count as usize * BAR).div_ceil(most as usize).min(BAR) * usize::from(count > 0));
                let _ = writeln!(out, "  {label:<16}{count:>8} |{bar:<BAR$}|");
            }
        }
        out.push('\n');
    }
    if !slowest.is_empty() {
        let _ = writeln!(out, "The {} slowest (start and end as print shows them):", slowest.len());
        let by_column = if by.is_empty() { String::new() } else { format!("  {}", by.join(",")) };
        let _ = writeln!(
            out,
            "  {:>14}  {:>14}  {:>14}  {:<14}  span{by_column}  id",
            "duration", "start", "end", "thread"
        );
        for s in slowest {
            let thread =
                if s.thread == s.end_thread { s.thread.clone() } else { format!("{}->{}", s.thread, s.end_thread) };
            let by = if by.is_empty() { String::new() } else { format!("  {}", values_text(&s.by)) };
            let _ = writeln!(
                out,
                "  {:>14}  {:>14}  {:>14}  {thread:<14}  {}{by}  {}",
                human(s.duration),
                s.start,
                s.end,
                s.span,
                s.id.as_deref().unwrap_or("-")
            );
        }
    }
    out
}

fn json(groups: &Groups, slowest: &[Slow], by: &[String], points: &Points) -> String {
    use crate::json::string;
    let mut out = String::from("{\"percentiles\":\"nearest rank\",\"unit\":\"ns\",\"by\":");
    match by {
        [] => out.push_str("null"),
        by => string(&mut out, &by.join(",")),
    }
    out.push_str(",\"by_params\":[");
    for (i, b) in by.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(&mut out, b);
    }
    out.push_str("],\"percentile_points\":[");
    for (i, p) in points.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(&mut out, &p.text);
    }
    out.push_str("],\"spans\":[");
    for (i, ((name, values), g)) in groups.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("\n{\"span\":");
        string(&mut out, name);
        value_keys(&mut out, values);
        let _ = write!(
            out,
            ",\"count\":{},\"unended\":{},\"unmatched_ends\":{},\"ended_before_begun\":{}",
            g.durations.len(),
            g.unended,
            g.unmatched,
            g.backwards
        );
        let d = &g.durations;
        let stat = |v: Option<u64>| v.map_or_else(|| "null".to_owned(), |v| v.to_string());
        let _ = write!(out, ",\"min_ns\":{}", stat(d.first().copied()));
        for p in points.iter() {
            let _ = write!(out, ",\"p{}_ns\":{}", p.text, stat((!d.is_empty()).then(|| percentile(d, p))));
        }
        let _ = write!(out, ",\"max_ns\":{},\"total_ns\":", stat(d.last().copied()));
        unsigned_wide(&mut out, total(d));
        out.push_str(",\"histogram\":[");
        for (j, (b, count)) in histogram(d).into_iter().enumerate() {
            let (from, to) = bucket_bounds(b);
            let _ =
                write!(out, "{}{{\"from_ns\":{from},\"to_ns\":{to},\"count\":{count}}}", if j > 0 { "," } else { "" });
        }
        out.push_str("]}");
    }
    out.push_str("\n],\"slowest\":[");
    for (i, s) in slowest.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "\n{{\"duration_ns\":{},\"span\":", s.duration);
        string(&mut out, &s.span);
        value_keys(&mut out, &s.by);
        let _ = write!(out, ",\"start\":\"{}\",\"end\":\"{}\",\"thread\":", s.start, s.end);
        string(&mut out, &s.thread);
        out.push_str(",\"end_thread\":");
        string(&mut out, &s.end_thread);
        out.push_str(",\"id\":");
        opt(&mut out, s.id.as_deref());
        out.push('}');
    }
    out.push_str("\n]}\n");
    out
}

/// A JSON string, or null.
fn opt(out: &mut String, v: Option<&str>) {
    match v {
        Some(v) => crate::json::string(out, v),
        None => out.push_str("null"),
    }
}

/// A group's `"value"` and `"values"` keys: the one value of `--by` (null without it, or
/// for a span without the parameter), or with several parameters their values as the text
/// shows them (`0x1000,(none)`); and each value apart.
fn value_keys(out: &mut String, values: &[Option<String>]) {
    out.push_str(",\"value\":");
    match values {
        [] => out.push_str("null"),
        [one] => opt(out, one.as_deref()),
        several => crate::json::string(out, &values_text(several)),
    }
    out.push_str(",\"values\":[");
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        opt(out, v.as_deref());
    }
    out.push(']');
}

/// A sum of durations: a number while a double holds it exactly, a decimal string beyond
/// (as `json::unsigned` writes a u64).
pub(crate) fn unsigned_wide(out: &mut String, v: u128) {
    match u64::try_from(v) {
        Ok(v) => crate::json::unsigned(out, v),
        Err(_) => {
            let _ = write!(out, "\"{v}\"");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_by_nearest_rank() {
        let p = |list: &str| Points::parse(list).unwrap().0;
        let [p50, p90, p99] = <[Point; 3]>::try_from(p("50,90,99")).unwrap();
        let d: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile(&d, &p50), 5);
        assert_eq!(percentile(&d, &p90), 9);
        assert_eq!(percentile(&d, &p99), 10);
        assert_eq!(percentile(&[7], &p50), 7);
        let d: Vec<u64> = (1..=200).collect();
        assert_eq!((percentile(&d, &p50), percentile(&d, &p90), percentile(&d, &p99)), (100, 180, 198));
        // Fractions: the 99.9th of 10 000 is the 9 990th; of 1 000 the 999th; 99.99 of 10 000
        // the 9 999th; 100 the largest.
        let [p999, p9999, p100] = <[Point; 3]>::try_from(p("99.90, 99.99,100")).unwrap();
        assert_eq!((p999.text.as_str(), p9999.text.as_str(), p100.text.as_str()), ("99.9", "99.99", "100"));
        let d: Vec<u64> = (1..=10_000).collect();
        assert_eq!((percentile(&d, &p999), percentile(&d, &p9999), percentile(&d, &p100)), (9_990, 9_999, 10_000));
        assert_eq!(percentile(&d[..1000], &p999), 999);
        assert_eq!(percentile(&d[..3], &p9999), 3);
        for bad in ["0", "100.5", "abc", "", "50,50", "-1", "1e2", "99.0000000001"] {
            assert!(Points::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn buckets_are_bpftraces() {
        assert_eq!(
            (bucket(0), bucket(1), bucket(2), bucket(3), bucket(4), bucket(1023), bucket(1024)),
            (0, 1, 2, 2, 3, 10, 11)
        );
        assert_eq!(bucket_bounds(11), (1024, 2048));
        assert_eq!(
            (power(512), power(1024), power(2048), power(1 << 20), power(1 << 30)),
            ("512".into(), "1K".into(), "2K".into(), "1M".into(), "1G".into())
        );
        assert_eq!(histogram(&[0, 5, 5, 40]), vec![(0, 1), (1, 0), (2, 0), (3, 2), (4, 0), (5, 0), (6, 1)]);
        assert_eq!(seconds_text(-1_500), "-0.000001500");
        assert_eq!(human(12_345), "12.345 µs");
    }
}
