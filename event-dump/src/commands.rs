//! The subcommands.

use crate::filter::Filter;
use crate::log::{self, DumpError, Log};
use crate::merge::{self, Item};
use crate::progress::Progress;
use crate::render::{Annotations, EventFields, Renderer};
use crate::{ControlArgs, FollowArgs, LogsArgs, PrintArgs, SchemaArgs, Select};
use event_format::builtin;
use event_format::decode::{Catalog, Event};
use event_format::ring::{self, FollowItem, Follower, RingReader, STATE_CLOSED};
use event_format::schema::{BUILTIN_KIND, Schema};
use event_format::select::{CodeSet, Patterns, Word, glob};
use event_format::wire::{Clock, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, DumpError>;

/// The selection of `print` and `follow`, compiled against the logs' schemas.
struct Selection {
    /// For each log, the codes that `--kind` and `--event` choose (both, when both are
    /// given), compiled once against its schema; `None` when neither is given.
    codes: Option<Vec<CodeSet>>,
    threads: Option<BTreeSet<u64>>,
    since: Option<f64>,
    until: Option<f64>,
    filter: Option<Filter>,
}

/// `--kind` or `--event` read in the selection language (a bare word is a kind or an
/// event), each item checked against every log: an item that no log has is an error.
fn patterns(value: &Option<String>, word: Word, catalogs: &[Catalog], schemas: &[&Schema]) -> Result<Option<Patterns>> {
    let Some(value) = value else { return Ok(None) };
    let flag = match word {
        Word::Kind => "--kind",
        Word::Event => "--event",
    };
    let patterns = Patterns::parse(value, word).map_err(|e| DumpError::new(format!("{flag} {value}: {e}")))?;
    for p in patterns.items() {
        let known = match (&p.kind, &p.event) {
            // A kind alone: a kind of some log, even one without events, or the built-ins'.
            (Some(kind), None) => {
                schemas.iter().any(|s| s.kinds.iter().any(|k| glob::matches(kind, &k.name)))
                    || glob::matches(kind, BUILTIN_KIND)
            }
            _ => catalogs.iter().any(|c| c.iter().any(|d| p.matches(&d.kind_name, &d.name))),
        };
        if known {
            continue;
        }
        let text = &p.text;
        if let (Some(kind), None) = (&p.kind, &p.event) {
            let names: Vec<&str> = schemas[0].kinds.iter().map(|k| k.name.as_str()).collect();
            let hint = event_format::def::closest(kind, names.iter().copied())
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            return Err(DumpError::new(format!(
                "{flag} {text}: no such kind in the log{hint}; its kinds are {}, Builtin",
                names.join(", ")
            )));
        }
        let names: Vec<&str> = schemas[0].events.iter().map(|e| e.name.as_str()).collect();
        let hint = p
            .event
            .as_deref()
            .and_then(|e| event_format::def::closest(e, names.iter().copied()))
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default();
        return Err(DumpError::new(format!("{flag} {text}: no such event in the log{hint}")));
    }
    Ok(Some(patterns))
}

impl Selection {
    fn new(select: &Select, schemas: &[&Schema]) -> Result<Selection> {
        let list = |s: &Option<String>| {
            s.as_ref().map(|s| s.split(',').map(|x| x.trim().to_owned()).filter(|x| !x.is_empty()).collect::<Vec<_>>())
        };
        let catalogs: Vec<Catalog> = schemas.iter().map(|s| Catalog::new(s)).collect();
        let kinds = patterns(&select.kind, Word::Kind, &catalogs, schemas)?;
        let events = patterns(&select.event, Word::Event, &catalogs, schemas)?;
        let codes = (kinds.is_some() || events.is_some()).then(|| {
            catalogs
                .iter()
                .map(|catalog| {
                    let descs = || catalog.iter().map(|d| (d.code, d.kind_name.as_str(), d.name.as_str()));
                    let mut chosen = kinds.iter().chain(&events).map(|patterns| patterns.compile(descs()));
                    let mut codes = chosen.next().unwrap_or_default();
                    for other in chosen {
                        codes.intersect(&other);
                    }
                    codes
                })
                .collect()
        });
        let threads = match list(&select.thread) {
            None => None,
            Some(ids) => Some(
                ids.iter()
                    .map(|t| {
                        t.trim_start_matches('T').parse::<u64>().map_err(|_| {
                            DumpError::new(format!("--thread {t}: not a thread id; write numbers such as 1,3"))
                        })
                    })
                    .collect::<Result<BTreeSet<u64>>>()?,
            ),
        };
        let filter = match &select.filter {
            None => None,
            Some(expr) => {
                let mut fields: BTreeSet<String> = BTreeSet::new();
                for s in schemas {
                    for e in &s.events {
                        fields.extend(e.params.iter().cloned());
                    }
                }
                for b in builtin::ALL {
                    fields.extend(b.params.iter().map(|p| (*p).to_owned()));
                }
                let names: Vec<&str> = fields.iter().map(String::as_str).collect();
                Some(
                    Filter::parse(expr, &names)
                        .map_err(|e| DumpError::new(e.render(expr).replacen("error: ", "", 1)))?,
                )
            }
        };
        Ok(Selection { codes, threads, since: select.since, until: select.until, filter })
    }

    /// Whether `event`, of log `file`, is shown.
    fn keeps(&self, file: usize, event: &Event<'_>, clock: &Clock) -> bool {
        if let Some(codes) = &self.codes
            && !codes[file].contains(event.desc.code)
        {
            return false;
        }
        if let Some(threads) = &self.threads
            && !threads.contains(&event.thread)
        {
            return false;
        }
        let seconds = clock.seconds_since_start(event.time);
        if self.since.is_some_and(|s| seconds < s) || self.until.is_some_and(|u| seconds >= u) {
            return false;
        }
        match &self.filter {
            Some(f) => f.matches(&EventFields { event, clock }),
            None => true,
        }
    }
}

pub(crate) fn open_all(paths: &[std::path::PathBuf], force: bool) -> Result<Vec<Log>> {
    paths.iter().map(|p| log::open(p, force)).collect()
}

/// Writes a line to stdout; `Break` when stdout is closed (`| head`).
fn out_line(out: &mut impl Write, line: &str) -> Result<ControlFlow<()>> {
    match out.write_all(line.as_bytes()).and_then(|()| out.write_all(b"\n")) {
        Ok(()) => Ok(ControlFlow::Continue(())),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ControlFlow::Break(())),
        Err(e) => Err(DumpError::new(format!("cannot write the output: {e}"))),
    }
}

pub(crate) fn print(args: &PrintArgs) -> Result<ExitCode> {
    let mut logs = open_all(&args.logs, args.force)?;
    let schemas: Vec<&Schema> = logs.iter().map(|l| &l.header().schema).collect();
    let selection = Selection::new(&args.select, &schemas)?;
    let renderer = Renderer {
        format: args.format,
        raw_ticks: args.raw_ticks,
        labels: !args.no_labels,
        pids: (logs.len() > 1).then(|| logs.iter().map(|l| l.header().producer.pid).collect()),
    };
    let clocks: Vec<Clock> = logs.iter().map(|l| l.header().clock).collect();
    let total: u64 = logs.iter().map(|l| l.len).sum();
    let mut progress = Progress::new("reading", total);
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    if let Some(h) = renderer.header() {
        let _ = out_line(&mut out, h)?;
    }
    let mut ann = Annotations::default();
    let mut shown = 0u64;
    let mut line = String::new();
    let mut problems: Vec<String> = Vec::new();
    let mut failure: Option<DumpError> = None;
    let paths: Vec<String> = logs.iter().map(|l| l.path.display().to_string()).collect();
    let mut seen = 0u64;
    let mut unknown: BTreeMap<(usize, u16), u64> = BTreeMap::new();
    merge::merge(&mut logs, |item| {
        seen += 1;
        if seen.is_multiple_of(1 << 16) {
            progress.update(seen * 32);
        }
        match item {
            Item::Event { file, event } => {
                ann.learn(file, &event);
                if !selection.keeps(file, &event, &clocks[file]) {
                    return ControlFlow::Continue(());
                }
                if args.limit.is_some_and(|l| shown >= l) {
                    return ControlFlow::Break(());
                }
                shown += 1;
                line.clear();
                renderer.line(&mut line, &ann, file, &clocks[file], &event);
                match out_line(&mut out, &line) {
                    Ok(flow) => flow,
                    Err(e) => {
                        failure = Some(e);
                        ControlFlow::Break(())
                    }
                }
            }
            Item::Unknown { file, code } => {
                *unknown.entry((file, code)).or_insert(0u64) += 1;
                ControlFlow::Continue(())
            }
            Item::Bad { file, thread, error } => {
                problems.push(format!("{}: thread {thread}: {error}", paths[file]));
                ControlFlow::Continue(())
            }
            Item::Damaged { file, error } => {
                problems.push(format!("{}: {error}", paths[file]));
                ControlFlow::Continue(())
            }
        }
    })?;
    progress.finish();
    if let Some(e) = failure {
        return Err(e);
    }
    let _ = out.flush();
    for ((file, code), n) in &unknown {
        problems.push(format!(
            "{}: {n} records of unknown code {code:#06x} skipped (a newer event set or format wrote them)",
            paths[*file]
        ));
    }
    for p in &problems {
        eprintln!("event-dump: {p}");
    }
    Ok(ExitCode::SUCCESS)
}

/// What one log holds, for `stats` and `check`.
#[derive(Default)]
struct Census {
    blocks: u64,
    /// Blocks that were packed in the stream.
    packed: u64,
    /// Bytes the blocks take in the stream.
    stored_bytes: u64,
    record_bytes: u64,
    events: u64,
    per_event: BTreeMap<String, u64>,
    per_kind: BTreeMap<String, u64>,
    per_thread: BTreeMap<u64, u64>,
    names: BTreeMap<u64, String>,
    first: Option<u64>,
    last: u64,
    /// thread -> events lost (Dropped events, block `lost` fields).
    lost: BTreeMap<u64, u64>,
    damaged: Vec<String>,
    bad: Vec<String>,
    unknown: BTreeMap<u16, u64>,
    /// thread -> block sequence numbers seen.
    sequences: BTreeMap<u64, Vec<u64>>,
}

fn census(log: &mut Log) -> Census {
    let mut c = Census::default();
    // Counted by code and by block while reading (no allocation per event), named at the end.
    let mut per_code = vec![0u64; 1 << 16];
    let mut progress = Progress::new(&format!("reading {}", log.path.display()), log.len);
    while let Some(block) = log.decoder.next_block() {
        let block = match block {
            Ok(b) => b,
            Err(e) => {
                c.damaged.push(e.to_string());
                continue;
            }
        };
        progress.update(block.offset + block.stored_len);
        c.blocks += 1;
        c.stored_bytes += block.stored_len;
        if block.header.flags & event_format::wire::BLOCK_PACKED != 0 {
            c.packed += 1;
        }
        c.record_bytes += block.records.len() as u64;
        c.sequences.entry(block.header.thread).or_default().push(block.header.sequence);
        if block.header.lost > 0 {
            add_lost(&mut c.lost, block.header.thread, block.header.lost);
        }
        let mut in_block = 0u64;
        for entry in block.entries(&log.catalog) {
            match entry {
                event_format::decode::Entry::Event(e) => {
                    in_block += 1;
                    c.first = Some(c.first.map_or(e.time, |f| f.min(e.time)));
                    c.last = c.last.max(e.time);
                    per_code[usize::from(e.desc.code)] += 1;
                    match e.desc.code {
                        builtin::DROPPED => {
                            let mut v = e.values();
                            if let (Some(Value::Word(t)), Some(Value::Word(n))) = (v.next(), v.next()) {
                                add_lost(&mut c.lost, t, n);
                            }
                        }
                        builtin::THREAD_NAME => {
                            let mut v = e.values();
                            if let (Some(Value::Word(t)), Some(Value::Str(s))) = (v.next(), v.next()) {
                                c.names.insert(t, String::from_utf8_lossy(s.bytes).into_owned());
                            }
                        }
                        _ => {}
                    }
                }
                event_format::decode::Entry::Unknown { code, .. } => *c.unknown.entry(code).or_default() += 1,
                event_format::decode::Entry::Bad(e) => {
                    c.bad.push(format!("thread {}, block {}: {e}", block.header.thread, block.header.sequence))
                }
            }
        }
        if in_block > 0 {
            c.events += in_block;
            *c.per_thread.entry(block.header.thread).or_default() += in_block;
        }
    }
    for desc in log.catalog.iter() {
        let n = per_code[usize::from(desc.code)];
        if n > 0 {
            c.per_event.insert(format!("{}.{}", desc.kind_name, desc.name), n);
            *c.per_kind.entry(desc.kind_name.clone()).or_default() += n;
        }
    }
    c
}

/// Gaps in a thread's block sequence numbers: (first missing, count).
fn gaps(sequences: &[u64]) -> Vec<(u64, u64)> {
    let mut s = sequences.to_vec();
    s.sort_unstable();
    s.dedup();
    let mut out = Vec::new();
    let mut expect = 0;
    for n in s {
        if n > expect {
            out.push((expect, n - expect));
        }
        // A block numbered u64::MAX (a hostile one) is the last there can be.
        let Some(next) = n.checked_add(1) else { break };
        expect = next;
    }
    out
}

/// Adds `n` lost events to `thread`'s count. Counts come from the log, which may lie: they
/// saturate at u64::MAX rather than wrap round to a small number (or panic).
fn add_lost(lost: &mut BTreeMap<u64, u64>, thread: u64, n: u64) {
    let count = lost.entry(thread).or_default();
    *count = count.saturating_add(n);
}

/// The sum of `counts`, saturating at u64::MAX: counts from a log may lie.
fn saturating_sum(counts: impl Iterator<Item = u64>) -> u64 {
    counts.fold(0, u64::saturating_add)
}

fn seconds(clock: &Clock, from: u64, to: u64) -> f64 {
    (clock.seconds_since_start(to) - clock.seconds_since_start(from)).max(0.0)
}

pub(crate) fn stats(args: &LogsArgs) -> Result<ExitCode> {
    let mut logs = open_all(&args.logs, args.force)?;
    let mut text = String::new();
    for (i, log) in logs.iter_mut().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        let c = census(log);
        let h = log.header().clone();
        let span = c.first.map_or(0.0, |f| seconds(&h.clock, f, c.last));
        let _ = writeln!(text, "log {}", log.path.display());
        let _ = writeln!(
            text,
            "  format {}, {}, blocks of {} bytes; {} (pid {}, {} {}); clock {} at {} ticks/s",
            h.format,
            h.order.name(),
            h.block_size,
            h.producer.program,
            h.producer.pid,
            h.producer.arch,
            h.producer.os,
            h.clock.source.name(),
            h.clock.ticks_per_second
        );
        let _ = writeln!(
            text,
            "  event set {}: {} kinds, {} events",
            h.schema.version,
            h.schema.kinds.len(),
            h.schema.events.len()
        );
        let rate =
            if span > 0.0 { format!("{:.0} events/s", c.events as f64 / span) } else { "no time span".to_owned() };
        let _ = writeln!(text, "  {} events in {} blocks over {span:.9} s ({rate})", c.events, c.blocks);
        let per_event_bytes = if c.events > 0 { c.record_bytes as f64 / c.events as f64 } else { 0.0 };
        let file_bytes = if c.events > 0 { c.stored_bytes as f64 / c.events as f64 } else { 0.0 };
        let _ = writeln!(
            text,
            "  {per_event_bytes:.1} bytes per event in records, {file_bytes:.1} in blocks ({} of {} blocks packed)",
            c.packed, c.blocks
        );
        let lost = saturating_sum(c.lost.values().copied());
        let gaps = saturating_sum(c.sequences.values().flat_map(|s| gaps(s)).map(|g| g.1));
        let _ = writeln!(
            text,
            "  {lost} events lost, {gaps} blocks missing (overwritten or dropped), {} damaged blocks, {} bad records, {} records of unknown codes",
            c.damaged.len(),
            c.bad.len(),
            c.unknown.values().sum::<u64>()
        );
        if let Some(summary) = log.ring.as_ref().and_then(|r| r.lock().ok().and_then(|s| s.clone())) {
            let state = match summary.state {
                ring::STATE_RECORDING => "recording (or its program died)",
                STATE_CLOSED => "closed",
                _ => "unknown",
            };
            let _ = writeln!(
                text,
                "  ring file: {state}; {} threads, {} overwritten blocks, {} threads without a slot, {} slots reused",
                summary.threads, summary.overwritten_blocks, summary.threads_without_slot, summary.slots_reused
            );
        }
        let _ = writeln!(text, "  per kind:");
        for (k, n) in &c.per_kind {
            let _ = writeln!(text, "    {k:<24} {n:>12}");
        }
        let _ = writeln!(text, "  per event:");
        let mut events: Vec<_> = c.per_event.iter().collect();
        events.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (e, n) in events {
            let _ = writeln!(text, "    {e:<24} {n:>12}");
        }
        let _ = writeln!(text, "  per thread:");
        for (t, n) in &c.per_thread {
            let name = c.names.get(t).map(|n| format!(" ({n})")).unwrap_or_default();
            let lost = c.lost.get(t).map(|l| format!(", {l} lost")).unwrap_or_default();
            let _ = writeln!(text, "    T{t}{name:<20} {n:>12}{lost}");
        }
        for (t, l) in &c.lost {
            if !c.per_thread.contains_key(t) {
                let who = if *t == 0 { "no thread".to_owned() } else { format!("T{t}") };
                let _ = writeln!(text, "    {who}: {l} lost");
            }
        }
    }
    write_all(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn write_all(text: &str) -> Result<()> {
    match io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(DumpError::new(format!("cannot write the output: {e}"))),
    }
}

pub(crate) fn check(args: &LogsArgs) -> Result<ExitCode> {
    let mut logs = open_all(&args.logs, args.force)?;
    let mut text = String::new();
    let mut whole = true;
    for log in &mut logs {
        let c = census(log);
        let mut problems = Vec::new();
        for d in &c.damaged {
            problems.push(format!("damaged: {d}"));
        }
        for b in &c.bad {
            problems.push(format!("bad record: {b}"));
        }
        for (t, seqs) in &c.sequences {
            for (first, n) in gaps(seqs) {
                let what = if n == 1 { format!("block {first}") } else { format!("blocks {first}..{}", first + n - 1) };
                problems.push(format!("gap: thread {t}: {what} missing (overwritten, dropped or damaged)"));
            }
        }
        for (t, n) in &c.lost {
            let who = if *t == 0 { "no thread".to_owned() } else { format!("thread {t}") };
            problems.push(format!("lost: {who}: {n} events"));
        }
        for (code, n) in &c.unknown {
            problems.push(format!(
                "unknown code {code:#06x}: {n} records skipped (a newer event set or format wrote them)"
            ));
        }
        let _ = writeln!(text, "{}: {} blocks, {} events", log.path.display(), c.blocks, c.events);
        for p in &problems {
            let _ = writeln!(text, "  {p}");
        }
        if problems.is_empty() {
            let _ = writeln!(text, "  whole");
        } else {
            whole = false;
            let n = problems.len();
            let _ = writeln!(text, "  NOT whole: {n} problem{}", if n == 1 { "" } else { "s" });
        }
    }
    write_all(&text)?;
    Ok(if whole { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

pub(crate) fn schema(args: &SchemaArgs) -> Result<ExitCode> {
    let log = log::open(&args.log, args.force)?;
    let schema = log.header().schema.clone();
    let Some(against) = &args.against else {
        write_all(&event_format::def::render(&schema))?;
        return Ok(ExitCode::SUCCESS);
    };
    let text = std::fs::read_to_string(against)
        .map_err(|e| DumpError::new(format!("{}: cannot read: {e}", against.display())))?;
    let def = event_format::def::parse(&text, &against.display().to_string())
        .map_err(|e| DumpError::new(e.to_string().lines().next().unwrap_or("").to_owned()))?;
    let mut out = String::new();
    let (changes, additions) = diff(&schema, &def);
    let (lv, dv) = (schema.version, def.version);
    let verdict = if lv.major != dv.major {
        format!("incompatible: the log's event set is {lv}, events.def is {dv}: another major version")
    } else if !changes.is_empty() {
        format!(
            "incompatible: events with the same code mean different things (the log's event set is {lv}, events.def is {dv}; such a change needs a new major version)"
        )
    } else if lv.median != dv.median {
        format!("not compatible without care: the log's event set is {lv}, events.def is {dv}: another median version")
    } else if lv == dv && !additions.is_empty() {
        format!("incompatible: both say version {lv} but they differ; the newer one should have a higher minor version")
    } else {
        format!("compatible: the log's event set is {lv}, events.def is {dv}; only additions differ")
    };
    let _ = writeln!(out, "{verdict}");
    if changes.is_empty() && additions.is_empty() {
        let _ = writeln!(out, "no differences in kinds or events");
    }
    for d in changes.iter().chain(&additions) {
        let _ = writeln!(out, "  {d}");
    }
    write_all(&out)?;
    Ok(if verdict.starts_with("compatible") { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// What differs between the log's schema and an events.def, one line each: changes of
/// meaning (a kind's bit, an event's name, format, kind or parameters under the same code),
/// then additions (in one and not the other).
fn diff(log: &Schema, def: &Schema) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let mut added = Vec::new();
    let kind = |s: &Schema, i: u8| s.kinds.get(i as usize).map_or("?", |k| k.name.as_str()).to_owned();
    for (i, k) in log.kinds.iter().enumerate() {
        match def.kinds.iter().position(|d| d.name == k.name) {
            None => added.push(format!("kind {} is in the log, not in events.def", k.name)),
            Some(j) if j != i => out.push(format!("kind {} is bit {i} in the log, bit {j} in events.def", k.name)),
            _ => {}
        }
    }
    for k in &def.kinds {
        if !log.kinds.iter().any(|l| l.name == k.name) {
            added.push(format!("kind {} is in events.def, not in the log", k.name));
        }
    }
    for e in &log.events {
        match def.events.iter().find(|d| d.code == e.code) {
            None => added.push(format!("event {} ({:#06x}) is in the log, not in events.def", e.name, e.code)),
            Some(d) => {
                if d.name != e.name {
                    out.push(format!("code {:#06x} is {} in the log, {} in events.def", e.code, e.name, d.name));
                }
                let (lf, df) =
                    (event_format::letter::format_string(&e.format), event_format::letter::format_string(&d.format));
                if lf != df {
                    out.push(format!("event {} has format {lf} in the log, {df} in events.def", e.name));
                }
                if kind(log, e.kind) != kind(def, d.kind) {
                    out.push(format!(
                        "event {} is of kind {} in the log, {} in events.def",
                        e.name,
                        kind(log, e.kind),
                        kind(def, d.kind)
                    ));
                }
                if e.params != d.params {
                    out.push(format!(
                        "event {} has parameters ({}) in the log, ({}) in events.def",
                        e.name,
                        e.params.join(", "),
                        d.params.join(", ")
                    ));
                }
            }
        }
    }
    for d in &def.events {
        if !log.events.iter().any(|e| e.code == d.code) {
            added.push(format!("event {} ({:#06x}) is in events.def, not in the log", d.name, d.code));
        }
    }
    (out, added)
}

pub(crate) fn follow(args: &FollowArgs) -> Result<ExitCode> {
    let shown = args.ring.display().to_string();
    let file = std::fs::File::open(&args.ring).map_err(|e| DumpError::new(format!("{shown}: cannot open: {e}")))?;
    let reader = RingReader::open(file, Default::default()).map_err(|e| DumpError::new(format!("{shown}: {e}")))?;
    let header = reader.header().clone();
    let pid = reader.layout().pid;
    let catalog = Catalog::new(&header.schema);
    let selection = Selection::new(&args.select, &[&header.schema])?;
    let renderer = Renderer { format: args.format, raw_ticks: false, labels: true, pids: None };
    let mut follower = Follower::new(reader);
    let mut ann = Annotations::default();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    if let Some(h) = renderer.header() {
        let _ = out_line(&mut out, h)?;
    }
    let mut line = String::new();
    loop {
        let status = follower.reader().status().map_err(|e| DumpError::new(format!("{shown}: {e}")))?;
        let ended = status.state == STATE_CLOSED || !writer_alive(pid, status.heartbeat_ns);
        let items = follower.poll().map_err(|e| DumpError::new(format!("{shown}: {e}")))?;
        for item in items {
            match item {
                FollowItem::Records { block, from, .. } => {
                    for entry in block.entries_from(&catalog, from) {
                        if let event_format::decode::Entry::Event(event) = entry {
                            ann.learn(0, &event);
                            if selection.keeps(0, &event, &header.clock) {
                                line.clear();
                                renderer.line(&mut line, &ann, 0, &header.clock, &event);
                                if out_line(&mut out, &line)?.is_break() {
                                    return Ok(ExitCode::SUCCESS);
                                }
                            }
                        }
                    }
                }
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

/// Whether the ring file's writer still runs: its process exists (where that can be
/// asked) and its heartbeat is recent.
fn writer_alive(pid: u64, heartbeat_ns: u64) -> bool {
    let proc = std::path::Path::new("/proc");
    if proc.is_dir() {
        return proc.join(pid.to_string()).exists();
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    now.saturating_sub(heartbeat_ns) < 5_000_000_000
}

pub(crate) fn control(args: &ControlArgs) -> Result<ExitCode> {
    let shown = args.ring.display().to_string();
    if args.enable.is_empty() && args.disable.is_empty() {
        return Err(DumpError::new(
            "nothing to change; give --enable ITEMS and/or --disable ITEMS (e.g. --disable Object)",
        ));
    }
    let mut items: Vec<String> = Vec::new();
    for e in &args.enable {
        items.extend(e.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned));
    }
    for d in &args.disable {
        items.extend(d.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| format!("-{s}")));
    }
    let text = items.join(" ");
    let file = std::fs::OpenOptions::new().read(true).write(true).open(&args.ring).map_err(|e| {
        DumpError::new(format!(
            "{shown}: cannot open for writing: {e}; only the ring file's owner can change what its program records"
        ))
    })?;
    let began = Instant::now();
    #[cfg(unix)]
    let answer = ring::send_request(&file, &text, Duration::from_millis(args.timeout));
    #[cfg(not(unix))]
    let answer: std::result::Result<(bool, String), ring::RingError> =
        Err(ring::RingError::Io(io::Error::other("control needs a Unix system")));
    match answer {
        Ok((true, now)) => {
            write_all(&format!("now recording: {now} (answered in {} ms)\n", began.elapsed().as_millis()))?;
            Ok(ExitCode::SUCCESS)
        }
        Ok((false, why)) => Err(DumpError::new(format!("{shown}: the program refused `{text}`: {why}"))),
        Err(e) => Err(DumpError::new(format!("{shown}: {e}"))),
    }
}
