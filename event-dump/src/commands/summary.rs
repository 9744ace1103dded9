//! `summary`: one stable, versioned summary of logs, for scripts that compare runs (a
//! regression check in CI): counts per event and kind, what was lost and what is wrong
//! (the ledger's [`Findings`], in its words and under its names), the spans' percentiles
//! and totals (`latency`'s pairing and numbers), what the events' limits suppressed (the
//! ledger's count of the `Suppressed` records), the histograms the recorder kept (its
//! `Histogram` records merged as `hist` merges them), the time span, and who recorded
//! (service, host, labels, program; named as every reader names a log, `crate::identity`).
//! Its JSON is stated in docs/OUTPUT.md ("summary"), with its own version ([`VERSION`]); the
//! text form says the same for people.
//!
//! Two reads of one log give the same bytes: everything is ordered by name, and nothing of
//! the reading (the time now, the machine that reads) is in it.

use super::latency::{self, Counted, Points, Spans};
use super::{Choice, Result, thread_names, write_all};
use crate::cli::{SummaryArgs, SummaryFormat};
use crate::export::Item;
use crate::json::{string, unsigned};
use crate::log::{DumpError, Log, open_all, open_all_indexed};
use event_format::histogram::{Histograms, Merged};
use event_format::ledger::{Ending, FINDINGS, Findings, Ledger, describe_suppressed};
use event_format::wire::Header;
#[cfg(test)]
use event_format::wire::StopCause;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

/// The summary's version (docs/OUTPUT.md, "summary"): major.median.minor as the output's
/// versions go: a key removed or retyped is a major, a value written otherwise a median, a
/// key added a minor. 1.1.0: `logs[].service`, `logs[].suppressed`, and the elements of
/// `suppressed` and `histograms` (empty arrays in 1.0.0). 1.2.0: `findings.whole` is the one
/// verdict of every reader (a ring's overwritten blocks are whole; blocks repeated or out of
/// order, a recording not stopped cleanly, a disagreeing stop marker or a damaged pin area
/// are not), and `findings` gains the ledger's other findings under their keys. 1.3.0:
/// `histograms` merges only the `Histogram` records of the threads `--thread` chooses and of
/// the periods that overlap `--since`/`--until` (it merged them all).
pub(crate) const VERSION: &str = "1.3.0";

/// The percentiles of spans without `--percentiles`.
const PERCENTILES: &str = "50,90,99,99.9";

/// What one event's limit suppressed in one log, as the ledger counts its `Suppressed`
/// records.
struct Suppressed {
    /// The event, as `per_event` names it (`code 0x0001` for a code the log does not describe).
    event: String,
    count: u64,
    /// Thread -> events suppressed there.
    by_thread: BTreeMap<u64, u64>,
}

/// What the log read by `ledger` suppressed, per event, ordered by name.
fn suppressed_of(ledger: &Ledger, log: &Log) -> Vec<Suppressed> {
    let mut out: BTreeMap<String, Suppressed> = BTreeMap::new();
    for (&(code, thread), &n) in ledger.suppressed() {
        let event = log.catalog().get(code).map_or_else(|| format!("code {code:#06x}"), |d| d.full_name().to_string());
        let s = out.entry(event.clone()).or_insert_with(|| Suppressed { event, count: 0, by_thread: BTreeMap::new() });
        s.count = s.count.saturating_add(n);
        let t = s.by_thread.entry(thread).or_default();
        *t = t.saturating_add(n);
    }
    out.into_values().collect()
}

/// What the logs read together hold beside their counts: what limits suppressed, the
/// histograms the recorder kept.
struct Kept<'a> {
    /// Per log, per event.
    suppressed: Vec<Vec<Suppressed>>,
    /// Per log, the ledger's lines of what was suppressed, as `stats` writes them.
    suppressed_lines: Vec<Vec<String>>,
    histograms: &'a Histograms,
}

/// What one log holds, beside its ledger.
#[derive(Default)]
struct Counts {
    /// Events the choice keeps, by `Kind.Name` (`set:Kind.Name` in a log of several sets).
    per_event: BTreeMap<String, u64>,
    /// The earliest and latest event times, in ns since its start (all events).
    first_ns: Option<i128>,
    last_ns: i128,
}

pub(crate) fn summary(args: &SummaryArgs) -> Result<ExitCode> {
    let points = Points::parse(args.percentiles.as_deref().unwrap_or(PERCENTILES))?;
    let mut logs =
        if args.window_only { open_all(&args.logs, args.force)? } else { open_all_indexed(&args.logs, args.force)? };
    let headers: Vec<&Header> = logs.iter().map(|l| l.header()).collect();
    let choice = Choice::new(&args.select, &headers, || thread_names(&args.logs, args.force))?;
    let clocks: Vec<_> = headers.iter().map(|h| h.clock).collect();
    let seconds: Vec<_> = headers.iter().map(|h| event_format::text::Seconds::new(&h.clock)).collect();
    drop(headers);
    let mut spans = Spans::new(&logs, &choice, None, &[], 0)?;
    // The histograms the recorder kept, merged as `hist` merges them.
    let mut histograms = Histograms::new();
    for (file, log) in logs.iter().enumerate() {
        histograms.add_log(file, log.header());
    }
    let mut counts: Vec<Counts> = logs.iter().map(|_| Counts::default()).collect();
    // Counted by wire code, named at the end.
    let mut per_code: Vec<Vec<u64>> = logs.iter().map(|_| vec![0u64; 1 << 16]).collect();
    let ledgers = crate::export::merge_all(&mut logs, "summed", |Item { file, event }| {
        let c = &mut counts[file];
        let ns = seconds[file].nanos(event.time);
        c.first_ns = Some(c.first_ns.map_or(ns, |f| f.min(ns)));
        c.last_ns = c.last_ns.max(ns);
        if choice.keeps(file, &event, &clocks[file]) {
            per_code[file][usize::from(event.desc.wire)] += 1;
        }
        // A `Histogram` record is an event like any other for the counts above; the
        // histograms take those of the threads and times chosen.
        if !choice.keeps_period(file, &event, &clocks[file]) {
            return Ok(());
        }
        if !histograms.take(file, &event) {
            spans.event(file, &event);
        }
        Ok(())
    })
    .map_err(|e| DumpError::new(format!("cannot read the logs: {e}")))?;
    let counted = spans.finish();
    if let Some(line) = latency::given_up_line(counted.given_up) {
        eprintln!("event-dump: {line}");
    }
    for ((c, codes), log) in counts.iter_mut().zip(&per_code).zip(&logs) {
        for desc in log.catalog().iter() {
            let n = codes[usize::from(desc.wire)];
            if n > 0 {
                *c.per_event.entry(desc.full_name().to_string()).or_default() += n;
            }
        }
    }
    let findings: Vec<Findings> = ledgers.iter().zip(&logs).map(|(l, log)| l.findings(|| log.writer_alive())).collect();
    let endings: Vec<Ending> = ledgers.iter().zip(&logs).map(|(l, log)| super::census::ending(l, log)).collect();
    let kept = Kept {
        suppressed: ledgers.iter().zip(&logs).map(|(l, log)| suppressed_of(l, log)).collect(),
        suppressed_lines: ledgers.iter().zip(&logs).map(|(l, log)| describe_suppressed(l, log.catalog())).collect(),
        histograms: &histograms,
    };
    let text = match args.format {
        SummaryFormat::Json => json(&logs, &counts, &findings, &endings, &counted, &points, &kept),
        SummaryFormat::Text => text(&logs, &counts, &findings, &endings, &counted, &points, &kept),
    };
    write_all(&text)?;
    super::distributions::say_unreadable(&histograms);
    Ok(ExitCode::SUCCESS)
}

/// How a log's recording ended, as one word: `stopped`, `rotated`, `disk full`, `write
/// error`, `cause N` (a clean stop's cause), `closed` (a ring file's), `killed`, `running`,
/// `unrecorded` (a format without the marker).
fn ending_word(ending: &Ending) -> String {
    match ending {
        Ending::Clean(Some(stop)) => stop.cause.to_string(),
        Ending::Clean(None) => "closed".to_owned(),
        Ending::Killed { .. } => "killed".to_owned(),
        Ending::Running => "running".to_owned(),
        Ending::Unrecorded => "unrecorded".to_owned(),
    }
}

/// Every log's counts together, by event and by kind.
fn totals(counts: &[Counts]) -> (BTreeMap<&str, u64>, BTreeMap<String, u64>) {
    let mut per_event: BTreeMap<&str, u64> = BTreeMap::new();
    let mut per_kind: BTreeMap<String, u64> = BTreeMap::new();
    for c in counts {
        for (name, n) in &c.per_event {
            *per_event.entry(name.as_str()).or_default() += n;
            // `Kind.Name` or `set:Kind.Name`: the kind is before the last dot.
            let kind = name.rsplit_once('.').map_or(name.as_str(), |(k, _)| k);
            *per_kind.entry(kind.to_owned()).or_default() += n;
        }
    }
    (per_event, per_kind)
}

/// `"thread":count,...` of `by_thread`, thread ids as strings (as `lost_by_thread`).
fn threads_json(out: &mut String, by_thread: &BTreeMap<u64, u64>) {
    for (i, (t, n)) in by_thread.iter().enumerate() {
        let _ = write!(out, "{}\"{t}\":{n}", if i > 0 { "," } else { "" });
    }
}

/// The histograms the recorder kept, merged over every log, in `hist`'s order.
fn merged(histograms: &Histograms) -> Vec<&Merged> {
    histograms.iter().map(|(_, m)| m).collect()
}

fn json(
    logs: &[Log],
    counts: &[Counts],
    findings: &[Findings],
    endings: &[Ending],
    counted: &Counted,
    points: &Points,
    kept: &Kept<'_>,
) -> String {
    let mut out = format!("{{\"summary_version\":\"{VERSION}\",\"logs\":[");
    for (i, log) in logs.iter().enumerate() {
        let h = log.header();
        let c = &counts[i];
        out.push_str(if i > 0 { ",\n" } else { "\n" });
        out.push_str("{\"path\":");
        string(&mut out, &log.path().display().to_string());
        let _ = write!(out, ",\"format\":\"{}\",\"program\":", h.format);
        string(&mut out, &h.producer.program);
        let _ = write!(out, ",\"pid\":{},\"host\":", h.producer.pid);
        string(&mut out, &h.producer.host);
        out.push_str(",\"service\":");
        string(&mut out, crate::identity::service(h));
        out.push_str(",\"labels\":");
        out.push_str(&crate::identity::labels_json(h));
        let _ = write!(out, ",\"recording\":\"{}\",\"sets\":[", log.recording_id().to_hex());
        for (j, set) in h.sets.iter().enumerate() {
            out.push_str(if j > 0 { ",{\"name\":" } else { "{\"name\":" });
            string(&mut out, &set.schema.name);
            let _ = write!(out, ",\"version\":\"{}\"}}", set.schema.version);
        }
        let _ = write!(out, "],\"start_wall_ns\":{}", h.producer.start_wall_ns);
        match c.first_ns {
            Some(first) => {
                let _ =
                    write!(out, ",\"first_ns\":{first},\"last_ns\":{},\"span_ns\":{}", c.last_ns, c.last_ns - first);
            }
            None => out.push_str(",\"first_ns\":null,\"last_ns\":null,\"span_ns\":0"),
        }
        out.push_str(",\"ending\":");
        string(&mut out, &ending_word(&endings[i]));
        let events: u64 = c.per_event.values().sum();
        let _ = write!(out, ",\"events\":{events},\"findings\":");
        findings_json(&mut out, &findings[i]);
        out.push_str(",\"suppressed\":[");
        for (j, s) in kept.suppressed[i].iter().enumerate() {
            out.push_str(if j > 0 { ",{\"event\":" } else { "{\"event\":" });
            string(&mut out, &s.event);
            let _ = write!(out, ",\"count\":{},\"by_thread\":{{", s.count);
            threads_json(&mut out, &s.by_thread);
            out.push_str("}}");
        }
        out.push_str("]}");
    }
    let (per_event, per_kind) = totals(counts);
    let events: u64 = per_event.values().sum();
    let _ = write!(out, "\n],\"events\":{events},\"per_kind\":{{");
    map_json(&mut out, per_kind.iter().map(|(k, n)| (k.as_str(), *n)));
    out.push_str("},\"per_event\":{");
    map_json(&mut out, per_event.iter().map(|(k, n)| (*k, *n)));
    out.push_str("},\"findings\":");
    let mut all = Findings::default();
    for f in findings {
        all.add(f);
    }
    findings_json(&mut out, &all);
    // What limits suppressed, per event over every log.
    let mut suppressed: BTreeMap<&str, u64> = BTreeMap::new();
    for s in kept.suppressed.iter().flatten() {
        let n = suppressed.entry(s.event.as_str()).or_default();
        *n = n.saturating_add(s.count);
    }
    out.push_str(",\"suppressed\":[");
    for (i, (event, n)) in suppressed.iter().enumerate() {
        out.push_str(if i > 0 { ",{\"event\":" } else { "{\"event\":" });
        string(&mut out, event);
        let _ = write!(out, ",\"count\":{n}}}");
    }
    // The declared histograms, as `hist --format json` writes them.
    out.push_str("],\"histograms\":[");
    for (i, m) in merged(kept.histograms).iter().enumerate() {
        out.push_str(if i > 0 { ",\n" } else { "\n" });
        super::distributions::json_one(&mut out, m, kept.histograms.qualified());
    }
    out.push_str(if kept.histograms.is_empty() { "" } else { "\n" });
    out.push_str("],\"percentile_points\":[");
    for (i, p) in points.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(&mut out, &p.text);
    }
    out.push_str("],\"spans\":[");
    for (i, ((name, _), g)) in counted.groups.iter().enumerate() {
        out.push_str(if i > 0 { ",\n" } else { "\n" });
        out.push_str("{\"span\":");
        string(&mut out, name);
        let d = &g.durations;
        let _ = write!(
            out,
            ",\"count\":{},\"unended\":{},\"unmatched_ends\":{},\"ended_before_begun\":{}",
            d.len(),
            g.unended,
            g.unmatched,
            g.backwards
        );
        let stat = |v: Option<u64>| v.map_or_else(|| "null".to_owned(), |v| v.to_string());
        let _ = write!(out, ",\"min_ns\":{}", stat(d.first().copied()));
        for p in points.iter() {
            let _ = write!(out, ",\"p{}_ns\":{}", p.text, stat((!d.is_empty()).then(|| latency::percentile(d, p))));
        }
        let _ = write!(out, ",\"max_ns\":{},\"total_ns\":", stat(d.last().copied()));
        latency::unsigned_wide(&mut out, latency::total(d));
        out.push('}');
    }
    out.push_str("\n]}\n");
    out
}

/// `"name":count,...` of `items`.
fn map_json<'a>(out: &mut String, items: impl Iterator<Item = (&'a str, u64)>) {
    for (i, (name, n)) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, name);
        out.push(':');
        unsigned(out, n);
    }
}

/// The ledger's findings as a JSON object, under their names.
fn findings_json(out: &mut String, f: &Findings) {
    let _ = write!(
        out,
        "{{\"whole\":{},\"blocks\":{},\"events\":{},\"lost\":{},\"lost_by_thread\":{{",
        f.is_whole(false),
        f.blocks,
        f.events,
        f.lost
    );
    threads_json(out, &f.lost_by_thread);
    let _ = write!(
        out,
        "}},\"missing_blocks\":{},\"overwritten_blocks\":{},\"damaged_blocks\":{},\"bad_records\":{},\
         \"unknown_records\":{},\"truncated_strings\":{},\"removed_segments\":{},\"removed_events\":{},\
         \"segment_gaps\":{}",
        f.missing_blocks,
        f.overwritten_blocks,
        f.damaged_blocks,
        f.bad_records,
        f.unknown_records,
        f.truncated_strings,
        f.removed_segments,
        f.removed_events,
        f.segment_gaps
    );
    // The findings of the ledger's table that 1.1.0 did not write, under their keys.
    for d in FINDINGS.iter().filter(|d| !BEFORE_1_2.contains(&d.key)) {
        let _ = write!(out, ",\"{}\":{}", d.key, f.count(d.finding));
    }
    out.push('}');
}

/// The keys of [`FINDINGS`] that `findings` has had since 1.0.0.
const BEFORE_1_2: [&str; 8] = [
    "lost",
    "overwritten_blocks",
    "damaged_blocks",
    "bad_records",
    "unknown_records",
    "truncated_strings",
    "removed_segments",
    "segment_gaps",
];

fn text(
    logs: &[Log],
    counts: &[Counts],
    findings: &[Findings],
    endings: &[Ending],
    counted: &Counted,
    points: &Points,
    kept: &Kept<'_>,
) -> String {
    let mut out = String::new();
    for (i, log) in logs.iter().enumerate() {
        let h = log.header();
        let c = &counts[i];
        let span = c.first_ns.map_or(0, |f| c.last_ns - f);
        // Who wrote it, as every reader names a log: `api on host-a (pid 1)`.
        let _ = writeln!(
            out,
            "log {}: {}, format {}, {}.{:09} s",
            log.path().display(),
            crate::identity::described(h),
            h.format,
            span / 1_000_000_000,
            span % 1_000_000_000
        );
        let _ = writeln!(out, "  {}", super::census::ending_line(&endings[i], h));
        let f = &findings[i];
        let _ = writeln!(out, "  {}{}", f.losses_line(), if f.is_whole(false) { "" } else { " (NOT whole)" });
        if f.removed_segments > 0 {
            let _ = writeln!(
                out,
                "  {} segments removed by the disk budget ({} events)",
                f.removed_segments, f.removed_events
            );
        }
        for line in &kept.suppressed_lines[i] {
            let _ = writeln!(out, "  {line}");
        }
    }
    let (per_event, per_kind) = totals(counts);
    let events: u64 = per_event.values().sum();
    let _ = writeln!(out, "{events} events");
    let width = per_event.keys().map(|k| k.chars().count()).max().unwrap_or(0);
    let _ = writeln!(out, "  per kind:");
    for (kind, n) in &per_kind {
        let _ = writeln!(out, "    {kind:<width$}  {n:>12}");
    }
    let _ = writeln!(out, "  per event:");
    for (name, n) in &per_event {
        let _ = writeln!(out, "    {name:<width$}  {n:>12}");
    }
    if !counted.groups.is_empty() {
        let _ = writeln!(out, "spans (ns; percentiles by nearest rank):");
        for ((name, _), g) in &counted.groups {
            let d = &g.durations;
            let mut line = format!("  {name}: {} spans", d.len());
            if let (Some(min), Some(max)) = (d.first(), d.last()) {
                let _ = write!(line, ", min {min}");
                for p in points.iter() {
                    let _ = write!(line, ", p{} {}", p.text, latency::percentile(d, p));
                }
                let _ = write!(line, ", max {max}, total {}", latency::total(d));
            }
            if g.unended > 0 {
                let _ = write!(line, "; {} unended", g.unended);
            }
            if g.unmatched > 0 {
                let _ = write!(line, "; {} ends with no begin", g.unmatched);
            }
            let _ = writeln!(out, "{line}");
        }
    }
    let histograms = merged(kept.histograms);
    if !histograms.is_empty() {
        out.push_str("Kept by the recorder (events.def's HISTOGRAM; `event-dump hist` shows them alone):\n");
        out.push_str(&super::distributions::text(&histograms, kept.histograms.qualified(), false));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endings_are_one_word() {
        let stop = |cause| event_format::wire::Stop { blocks: 1, events: 2, lost: 0, cause, unwritten: 0 };
        assert_eq!(ending_word(&Ending::Clean(Some(stop(StopCause::Stopped)))), "stopped");
        assert_eq!(ending_word(&Ending::Clean(Some(stop(StopCause::DiskFull)))), "disk full");
        assert_eq!(ending_word(&Ending::Killed { after_marker: 0 }), "killed");
        assert_eq!(ending_word(&Ending::Clean(None)), "closed");
    }
}
