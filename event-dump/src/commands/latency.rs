//! `latency`: how long spans last. The logs' spans (declared in events.def, or by the naming
//! convention: [`event_format::roles`]) are paired as every reader pairs them, through the
//! merge (threads and logs in time order, as async spans need), and their durations are
//! summed up per span name, or per value of a parameter (`--by`): count, minimum, the
//! 50th, 90th and 99th percentiles, maximum and a histogram of powers of two (as
//! bpftrace's `hist` prints it); then the slowest spans, with their start as `print` shows
//! it, so that `print --since START --until END` opens the window around one.
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

use super::{Choice, Result, thread_names, write_all};
use crate::cli::LatencyArgs;
use crate::export::Item;
use crate::log::{DumpError, open_all, open_all_indexed};
use event_format::decode::Event;
use event_format::roles::{Pairer, Pairing, Roles, SpanKey, SpanUse};
use event_format::select::glob;
use event_format::text::{Seconds, write_value};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt::Write as _;
use std::process::ExitCode;

/// The percentiles shown.
const PERCENTILES: [u64; 3] = [50, 90, 99];

/// The width of a histogram's bar, as bpftrace draws it.
const BAR: usize = 52;

/// A span begun: what its end needs to be counted.
struct Begun {
    /// Its start, in nanoseconds since its log's start (as `print` shows it).
    ns: i128,
    thread: u64,
    name: String,
    /// Its group's value of `--by` (the begin's; else the end's gives it).
    by: Option<String>,
    /// Its id as `print` writes it: an async span's id, a `tracing` span's `span`.
    id: Option<String>,
    /// Whether the choice keeps it.
    selected: bool,
}

/// What is counted of one group: a span name, and a value of `--by`.
#[derive(Default)]
struct Group {
    durations: Vec<u64>,
    unended: u64,
    unmatched: u64,
    backwards: u64,
}

/// One of the slowest spans.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Slow {
    duration: u64,
    /// The order it ended in: of equal durations, the earlier is kept.
    order: Reverse<u64>,
    start: String,
    end: String,
    thread: String,
    end_thread: String,
    span: String,
    by: Option<String>,
    id: Option<String>,
}

pub(crate) fn latency(args: &LatencyArgs) -> Result<ExitCode> {
    let mut logs =
        if args.window_only { open_all(&args.logs, args.force)? } else { open_all_indexed(&args.logs, args.force)? };
    let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
    let choice = Choice::new(&args.select, &headers, || thread_names(&args.logs, args.force))?;
    let roles: Vec<Roles> = headers.iter().map(|h| Roles::new(&h.sets)).collect();
    if let Some(by) = &args.by {
        check_by(by, &logs, &roles)?;
    }
    let spans: Option<Vec<&str>> = args.span.as_deref().map(|s| s.split(',').map(str::trim).collect());
    let seconds: Vec<Seconds> = headers.iter().map(|h| Seconds::new(&h.clock)).collect();
    let clocks: Vec<_> = headers.iter().map(|h| h.clock).collect();
    let processes: Option<Vec<String>> = (logs.len() > 1).then(|| crate::identity::prefixes(&headers));
    let thread_text = |file: usize, thread: u64| match &processes {
        Some(processes) => format!("{}:T{thread}", processes[file]),
        None => format!("T{thread}"),
    };
    drop(headers);

    let mut pairers: Vec<Pairer<Begun>> = logs.iter().map(|_| Pairer::new()).collect();
    let mut groups: BTreeMap<(String, Option<String>), Group> = BTreeMap::new();
    let mut slowest: BinaryHeap<Reverse<Slow>> = BinaryHeap::new();
    let mut ended = 0u64;
    let wanted = |name: &str| spans.as_ref().is_none_or(|s| s.iter().any(|g| glob::matches(g, name)));
    let ledgers = crate::export::merge_all(&mut logs, "paired", |Item { file, event }| {
        let roles = &roles[file];
        let Some(role) = roles.of(event.desc.wire) else { return Ok(()) };
        let ns = seconds[file].nanos(event.time);
        if let Some(end) = role.ends
            && let Some(key) = roles.key(&end, &event)
        {
            match pairers[file].end(event.thread, &key) {
                Some(closed) => {
                    for cut in closed.cut.into_iter().filter(|c| c.selected) {
                        groups.entry((cut.name, cut.by)).or_default().unended += 1;
                    }
                    let begun = closed.begin;
                    if begun.selected {
                        let by = begun.by.clone().or_else(|| by_value(args.by.as_deref(), &event));
                        let group = groups.entry((begun.name.clone(), by.clone())).or_default();
                        match u64::try_from(ns - begun.ns) {
                            Err(_) => group.backwards += 1,
                            Ok(duration) => {
                                group.durations.push(duration);
                                ended += 1;
                                if args.top > 0 {
                                    slowest.push(Reverse(Slow {
                                        duration,
                                        order: Reverse(ended),
                                        start: seconds_text(begun.ns),
                                        end: seconds_text(ns),
                                        thread: thread_text(file, begun.thread),
                                        end_thread: thread_text(file, event.thread),
                                        span: begun.name,
                                        by,
                                        id: begun.id,
                                    }));
                                    if slowest.len() > args.top {
                                        slowest.pop();
                                    }
                                }
                            }
                        }
                    }
                }
                None => {
                    let name = end_name(roles, &end, &event);
                    if wanted(&name) && choice.keeps(file, &event, &clocks[file]) {
                        groups.entry((name, by_value(args.by.as_deref(), &event))).or_default().unmatched += 1;
                    }
                }
            }
        }
        if let Some(begin) = role.begins
            && let Some(key) = roles.key(&begin, &event)
        {
            let name = roles.begin_name(&begin, &event).into_owned();
            let selected = wanted(&name) && choice.keeps(file, &event, &clocks[file]);
            let id = id_text(&begin, &key, &event);
            let by = by_value(args.by.as_deref(), &event);
            pairers[file].begin(event.thread, key, Begun { ns, thread: event.thread, name, by, id, selected });
        }
        Ok(())
    })
    .map_err(|e| DumpError::new(format!("cannot read the logs: {e}")))?;
    // What the merge could not hand on: the logs' damaged blocks, bad records, unknown codes.
    let unreadable: u64 = ledgers
        .iter()
        .map(|l| (l.damaged_blocks().len() + l.bad_records().len()) as u64 + l.unknown_records())
        .fold(0, u64::saturating_add);

    for pairer in pairers {
        let given_up = pairer.given_up();
        let left = pairer.finish();
        let open = left.threads.into_iter().flat_map(|(_, s)| s.into_iter().map(|(_, b)| b));
        for begun in open.chain(left.asyncs.into_iter().flat_map(|(_, s)| s)).filter(|b| b.selected) {
            groups.entry((begun.name, begun.by)).or_default().unended += 1;
        }
        if given_up > 0 {
            eprintln!(
                "event-dump: {given_up} spans were given up unended: more were open at once than latency holds \
                 ({} on a thread, {} async)",
                event_format::roles::MAX_DEPTH,
                event_format::roles::MAX_OPEN
            );
        }
    }
    if groups.is_empty() {
        return Err(DumpError::new(if args.span.is_some() || !choice.is_everything() {
            "no span of the log is selected; `event-dump latency LOG` lists them all"
        } else {
            "no span in the log: declare one in events.def (SPAN(name, Begin, End)), or name two events FooBegin and FooEnd"
        }));
    }
    for group in groups.values_mut() {
        group.durations.sort_unstable();
    }
    let slowest: Vec<Slow> = slowest.into_sorted_vec().into_iter().map(|Reverse(s)| s).collect();
    let text = match args.format {
        LatencyFormat::Text => text(&groups, &slowest, args.by.as_deref()),
        LatencyFormat::Json => json(&groups, &slowest, args.by.as_deref()),
    };
    write_all(&text)?;
    if unreadable > 0 {
        eprintln!(
            "event-dump: {unreadable} records could not be read (damaged blocks, bad records or unknown codes) and \
             were left out; `event-dump check LOG` tells more"
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) use crate::cli::LatencyFormat;

/// `--by`'s parameter must be one of some span's begin or end event.
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

/// The value of parameter `by` of `event`, as `print` writes it.
fn by_value(by: Option<&str>, event: &Event<'_>) -> Option<String> {
    let by = by?;
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

/// The name of the span an end that closed nothing would have closed.
fn end_name(roles: &Roles, used: &SpanUse, event: &Event<'_>) -> String {
    roles.begin_name(used, event).into_owned()
}

/// Nanoseconds as `print` writes seconds: `-`? whole `.` 9 digits.
fn seconds_text(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let ns = ns.unsigned_abs();
    format!("{sign}{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// The nearest-rank p-th percentile of `sorted` (not empty).
fn percentile(sorted: &[u64], p: u64) -> u64 {
    let n = sorted.len() as u64;
    let rank = (p * n).div_ceil(100).max(1);
    sorted[(rank - 1) as usize]
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

/// A power of two as bpftrace writes it: `512`, `1K`, `2M`, `4G`...
fn power(v: u128) -> String {
    const SUFFIXES: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
    let mut v = v;
    let mut i = 0;
    while v >= 1024 && v.is_multiple_of(1024) && i + 1 < SUFFIXES.len() {
        v /= 1024;
        i += 1;
    }
    format!("{v}{}", SUFFIXES[i])
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

/// A duration for people: `850 ns`, `12.345 µs`, `3.210 ms`, `1.500000 s`.
fn human(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{}.{:03} µs", ns / 1_000, ns % 1_000),
        1_000_000..1_000_000_000 => format!("{}.{:03} ms", ns / 1_000_000, ns / 1_000 % 1_000),
        _ => format!("{}.{:06} s", ns / 1_000_000_000, ns / 1_000 % 1_000_000),
    }
}

fn group_title(name: &str, by: Option<&str>, value: Option<&str>) -> String {
    match by {
        Some(by) => format!("{name} {by}={}", value.unwrap_or("(none)")),
        None => name.to_owned(),
    }
}

fn text(groups: &BTreeMap<(String, Option<String>), Group>, slowest: &[Slow], by: Option<&str>) -> String {
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
        let _ = writeln!(
            out,
            "{}: {n} {}{notes}",
            group_title(name, by, value.as_deref()),
            if n == 1 { "span" } else { "spans" }
        );
        if let (Some(&min), Some(&max)) = (g.durations.first(), g.durations.last()) {
            let mut line = format!("  min {}", human(min));
            for p in PERCENTILES {
                let _ = write!(line, "  p{p} {}", human(percentile(&g.durations, p)));
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
        let by_column = by.map(|b| format!("  {b}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "  {:>14}  {:>14}  {:>14}  {:<14}  span{by_column}  id",
            "duration", "start", "end", "thread"
        );
        for s in slowest {
            let thread =
                if s.thread == s.end_thread { s.thread.clone() } else { format!("{}->{}", s.thread, s.end_thread) };
            let by = if by.is_some() { format!("  {}", s.by.as_deref().unwrap_or("(none)")) } else { String::new() };
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

fn json(groups: &BTreeMap<(String, Option<String>), Group>, slowest: &[Slow], by: Option<&str>) -> String {
    use crate::json::string;
    let mut out = String::from("{\"percentiles\":\"nearest rank\",\"unit\":\"ns\",\"by\":");
    match by {
        Some(by) => string(&mut out, by),
        None => out.push_str("null"),
    }
    out.push_str(",\"spans\":[");
    let opt = |out: &mut String, v: Option<&str>| match v {
        Some(v) => string(out, v),
        None => out.push_str("null"),
    };
    for (i, ((name, value), g)) in groups.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("\n{\"span\":");
        string(&mut out, name);
        out.push_str(",\"value\":");
        opt(&mut out, value.as_deref());
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
        for p in PERCENTILES {
            let _ = write!(out, ",\"p{p}_ns\":{}", stat((!d.is_empty()).then(|| percentile(d, p))));
        }
        let _ = write!(out, ",\"max_ns\":{},\"histogram\":[", stat(d.last().copied()));
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
        out.push_str(",\"value\":");
        opt(&mut out, s.by.as_deref());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_by_nearest_rank() {
        let d: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile(&d, 50), 5);
        assert_eq!(percentile(&d, 90), 9);
        assert_eq!(percentile(&d, 99), 10);
        assert_eq!(percentile(&[7], 50), 7);
        let d: Vec<u64> = (1..=200).collect();
        assert_eq!((percentile(&d, 50), percentile(&d, 90), percentile(&d, 99)), (100, 180, 198));
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
