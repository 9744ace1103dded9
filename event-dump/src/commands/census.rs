//! `stats` and `check`: one pass over each log that counts what it holds (a census) and
//! what is wrong with it, then one report per log.

use super::{Colors, Result, Selection, thread_names, write_all};
use crate::cli::{LogsArgs, Select, StatsArgs};
use crate::color::{Palette, Style};
use crate::log::{Log, open_all};
use crate::progress::Progress;
use event_format::builtin;
use event_format::decode::{Block, BlockError, Catalog, Entry};
use event_format::ring::{self, STATE_CLOSED};
use event_format::wire::{Clock, Header, Stop, Value, records_stop};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::mpsc;

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
    /// The events the selection keeps (all of them without one), and the first and last
    /// of their times; `per_event`, `per_kind` and `per_thread` count only these.
    selected: u64,
    selected_first: Option<u64>,
    selected_last: u64,
    per_event: BTreeMap<String, u64>,
    per_kind: BTreeMap<String, u64>,
    /// Events per set, when the log holds more than one set (built-in events in none).
    per_set: BTreeMap<String, u64>,
    per_thread: BTreeMap<u64, u64>,
    names: BTreeMap<u64, String>,
    first: Option<u64>,
    last: u64,
    /// thread -> events lost (Dropped events, block `lost` fields).
    lost: BTreeMap<u64, u64>,
    damaged: Vec<String>,
    bad: Vec<String>,
    unknown: BTreeMap<u16, u64>,
    /// thread -> block sequence numbers seen, in stream order.
    sequences: BTreeMap<u64, Vec<u64>>,
    /// The clean-stop marker (format 2.0.1), from the last block of thread 0 that ends with
    /// one; its block is not counted in `blocks`.
    stop: Option<Stop>,
    /// Verified blocks after the marker's block (none in a stream stopped cleanly).
    after_stop: u64,
    /// The block counted last, for its buffer to be reused.
    spare: Option<Block>,
}

/// How a log's recording ended, as far as the log can tell (docs/FORMAT.md, "The clean stop").
enum Ending {
    /// The writer stopped cleanly: a stream's marker (its counts), or a ring file's state
    /// `closed` (`None`).
    Clean(Option<Stop>),
    /// A stream of format 2.0.1 or later without the marker, or a ring file still marked
    /// recording whose writer is dead: killed or aborted.
    Killed,
    /// A ring file whose writer is alive: still recording.
    Recording,
    /// A stream whose format has no marker (before 2.0.1): nothing to tell.
    Unrecorded,
}

/// A ring file's writer is alive when its heartbeat is this recent (it beats every 20 ms)
/// and its process exists where that can be asked (`follow::writer_alive`): a writer killed
/// a moment ago has a recent heartbeat and no process.
const ALIVE_NS: u64 = 2_000_000_000;

impl Census {
    /// How the recording of `log` ended.
    fn ending(&self, header: &Header, ring: Option<&ring::RingSummary>) -> Ending {
        if let Some(summary) = ring {
            let now =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
            return match summary.state {
                STATE_CLOSED => Ending::Clean(None),
                _ if now.saturating_sub(summary.heartbeat_ns) < ALIVE_NS
                    && super::follow::writer_alive(header.producer.pid, summary.heartbeat_ns) =>
                {
                    Ending::Recording
                }
                _ => Ending::Killed,
            };
        }
        match self.stop {
            Some(stop) if self.after_stop == 0 => Ending::Clean(Some(stop)),
            _ if records_stop(header.format) => Ending::Killed,
            _ => Ending::Unrecorded,
        }
    }

    /// Each thread's oldest blocks missing (a gap from sequence 0): blocks its ring
    /// overwrote, as the `ring` policy is configured to. (thread, count) pairs.
    fn overwritten(&self) -> Vec<(u64, u64)> {
        self.sequences.iter().filter_map(|(t, s)| gaps(s).first().filter(|g| g.0 == 0).map(|g| (*t, g.1))).collect()
    }
}

/// The census of `log`, the `file`th of the command line, counting the events `selection`
/// keeps (damage, losses and blocks are the whole log's).
fn census(log: &mut Log, file: usize, selection: &Selection) -> Census {
    let mut c = Census::default();
    let clock = log.header().clock;
    // Counted by code and by block while reading (no allocation per event), named at the end.
    let mut per_code = vec![0u64; 1 << 16];
    let mut progress = Progress::new(&format!("reading {}", log.path().display()), log.len());
    // Blocks are read (checked and unpacked) on a thread of their own while this one counts
    // the records of those before: two cores where a machine has them. Where no thread can
    // be made (a thread limit), this thread reads them too.
    let (source, catalog) = log.blocks_and_catalog();
    let how = Counting { catalog, file, selection, clock };
    let (block_tx, blocks) = mpsc::sync_channel::<std::result::Result<Block, BlockError>>(4);
    let (spent, spent_rx) = mpsc::channel::<Block>();
    let read_apart = std::thread::scope(|s| {
        let reader = &mut *source;
        let spawned = std::thread::Builder::new().name("event-dump-reader".into()).spawn_scoped(s, move || {
            loop {
                // A block counted gives its buffer to the next one read.
                if let Ok(block) = spent_rx.try_recv() {
                    reader.recycle(block);
                }
                let Some(block) = reader.next_block() else { return };
                if block_tx.send(block).is_err() {
                    return;
                }
            }
        });
        if spawned.is_err() {
            return false;
        }
        for block in blocks {
            count_block(&mut c, &mut per_code, &mut progress, &how, block);
            // (The reader may have stopped: the buffer is then dropped.)
            if let Some(block) = c.spare.take() {
                let _ = spent.send(block);
            }
        }
        true
    });
    if !read_apart {
        while let Some(block) = source.next_block() {
            count_block(&mut c, &mut per_code, &mut progress, &how, block);
            if let Some(block) = c.spare.take() {
                source.recycle(block);
            }
        }
    }
    // A ring file's damaged blocks are left out of its blocks by the ring reader, which lists
    // them: they are damage like a stream's.
    if let Some(summary) = log.ring_summary() {
        for (slot, sequence, why) in &summary.damaged {
            c.damaged.push(format!("slot {slot}, block {sequence}: {why}"));
        }
    }
    for desc in log.catalog().iter() {
        let n = per_code[usize::from(desc.wire)];
        if n > 0 {
            // `set:Kind.Name` and `set:Kind` when the log holds more than one set.
            c.per_event.insert(desc.full_name().to_string(), n);
            *c.per_kind.entry(desc.full_kind()).or_default() += n;
            if desc.qualified {
                *c.per_set.entry(desc.set.clone()).or_default() += n;
            }
        }
    }
    c
}

/// What the events of a log are counted by.
struct Counting<'a> {
    catalog: &'a Catalog,
    /// The log's place on the command line.
    file: usize,
    selection: &'a Selection,
    clock: Clock,
}

/// Counts `block` into `c` (events by wire code into `per_code`); leaves the block in
/// `c.spare`, for its buffer to be reused.
fn count_block(
    c: &mut Census,
    per_code: &mut [u64],
    progress: &mut Progress,
    how: &Counting<'_>,
    block: std::result::Result<Block, BlockError>,
) {
    let Counting { catalog, file, selection, ref clock } = *how;
    let block = match block {
        Ok(b) => b,
        Err(e) => {
            c.damaged.push(e.to_string());
            return;
        }
    };
    progress.update(block.offset + block.stored_len);
    // The clean-stop marker's block (thread 0, ending with a Stop record) is the end of
    // the stream, not a block of events: not counted (its records, if any, still are).
    let stop = if block.header.thread == 0 { block.stop() } else { None };
    if stop.is_some() {
        c.stop = stop;
        c.after_stop = 0;
    } else {
        if c.stop.is_some() {
            c.after_stop += 1;
        }
        c.blocks += 1;
        c.stored_bytes += block.stored_len;
        if block.header.flags & event_format::wire::BLOCK_PACKED != 0 {
            c.packed += 1;
        }
        c.record_bytes += block.records.len() as u64;
        c.sequences.entry(block.header.thread).or_default().push(block.header.sequence);
    }
    if block.header.lost > 0 {
        add_lost(&mut c.lost, block.header.thread, block.header.lost);
    }
    // Without a selection every event is kept: no test per event (`check`'s case).
    let everything = selection.is_everything();
    let (mut in_block, mut kept) = (0u64, 0u64);
    // The block's earliest and latest times, of all events and of those kept: folded
    // into the census once per block.
    let (mut first, mut last) = (u64::MAX, 0u64);
    let (mut kept_first, mut kept_last) = (u64::MAX, 0u64);
    for entry in block.entries(catalog) {
        match entry {
            Entry::Event(e) => {
                in_block += 1;
                first = first.min(e.time);
                last = last.max(e.time);
                if everything || selection.keeps(file, &e, clock) {
                    kept += 1;
                    kept_first = kept_first.min(e.time);
                    kept_last = kept_last.max(e.time);
                    // By wire code: sets may reuse each other's own codes.
                    per_code[usize::from(e.desc.wire)] += 1;
                }
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
            Entry::Unknown { code, .. } => *c.unknown.entry(code).or_default() += 1,
            Entry::Bad(e) => {
                c.bad.push(format!("thread {}, block {}: {e}", block.header.thread, block.header.sequence))
            }
        }
    }
    if in_block > 0 {
        c.first = Some(c.first.map_or(first, |f| f.min(first)));
        c.last = c.last.max(last);
    }
    c.events += in_block;
    if kept > 0 {
        c.selected_first = Some(c.selected_first.map_or(kept_first, |f| f.min(kept_first)));
        c.selected_last = c.selected_last.max(kept_last);
        c.selected += kept;
        *c.per_thread.entry(block.header.thread).or_default() += kept;
    }
    c.spare = Some(block);
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

/// A thread's blocks out of order (docs/FORMAT.md, "Block order"), from its sequence numbers
/// in stream order: each block whose number an earlier block of the thread already had (a
/// repeat), and each block whose number is lower than the previous block's and new (a
/// backwards step, as (previous, this)). Reported like a gap; the blocks are read all the same.
fn disorder(sequences: &[u64]) -> (Vec<u64>, Vec<(u64, u64)>) {
    let mut seen = std::collections::HashSet::with_capacity(sequences.len());
    let (mut repeats, mut backwards) = (Vec::new(), Vec::new());
    let mut previous: Option<u64> = None;
    for &n in sequences {
        if !seen.insert(n) {
            repeats.push(n);
        } else if let Some(p) = previous.filter(|&p| n < p) {
            backwards.push((p, n));
        }
        previous = Some(n);
    }
    (repeats, backwards)
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

/// `text` in `style`, padded with spaces to `width` characters as `{text:<width}` pads.
fn padded(palette: Palette, style: Style, text: &str, width: usize) -> String {
    let pad = width.saturating_sub(text.chars().count());
    format!("{}{}", palette.paint(style, text), " ".repeat(pad))
}

/// `stats`: what each log holds; with a selection, its counts are of the events selected.
pub(crate) fn stats(args: &StatsArgs, colors: Colors) -> Result<ExitCode> {
    let mut logs = open_all(&args.logs, args.force)?;
    let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
    let selection = Selection::new(&args.select, &headers, || thread_names(&args.logs, args.force))?;
    let palette = colors.out;
    let mut text = String::new();
    for (i, log) in logs.iter_mut().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        let c = census(log, i, &selection);
        let h = log.header().clone();
        let span = c.first.map_or(0.0, |f| seconds(&h.clock, f, c.last));
        let _ = writeln!(text, "log {}", log.path().display());
        let _ = writeln!(
            text,
            "  format {}, {}, blocks of {} bytes; {} (pid {}{}, {} {}); clock {} at {} ticks/s",
            h.format,
            h.order.name(),
            h.block_size,
            h.producer.program,
            h.producer.pid,
            host_part(&h),
            h.producer.arch,
            h.producer.os,
            h.clock.source.name(),
            h.clock.ticks_per_second
        );
        for set in &h.sets {
            let s = &set.schema;
            // A one-set stream reads as before; several sets are named, with their counts.
            let (name, counted) = if h.sets.len() > 1 {
                let n = c.per_set.get(&s.name).copied().unwrap_or(0);
                (format!("{} ", s.name), format!(", {n} recorded"))
            } else {
                (String::new(), String::new())
            };
            let _ = writeln!(
                text,
                "  event set {name}{}: {} kinds, {} events{counted}",
                s.version,
                s.kinds.len(),
                s.events.len()
            );
        }
        let rate =
            if span > 0.0 { format!("{:.0} events/s", c.events as f64 / span) } else { "no time span".to_owned() };
        let _ = writeln!(text, "  {} events in {} blocks over {span:.9} s ({rate})", c.events, c.blocks);
        if !selection.is_everything() {
            let span = c.selected_first.map_or(0.0, |f| seconds(&h.clock, f, c.selected_last));
            let rate = if span > 0.0 {
                format!("{:.0} events/s", c.selected as f64 / span)
            } else {
                "no time span".to_owned()
            };
            let _ = writeln!(
                text,
                "  selected: {} of these events, over {span:.9} s ({rate}); the counts below are of these",
                c.selected
            );
        }
        let per_event_bytes = if c.events > 0 { c.record_bytes as f64 / c.events as f64 } else { 0.0 };
        let file_bytes = if c.events > 0 { c.stored_bytes as f64 / c.events as f64 } else { 0.0 };
        let _ = writeln!(
            text,
            "  {per_event_bytes:.1} bytes per event in records, {file_bytes:.1} in blocks ({} of {} blocks packed)",
            c.packed, c.blocks
        );
        let lost = saturating_sum(c.lost.values().copied());
        let gaps = saturating_sum(c.sequences.values().flat_map(|s| gaps(s)).map(|g| g.1));
        let unknown = c.unknown.values().sum::<u64>();
        let losses = format!(
            "{lost} events lost, {gaps} blocks missing (overwritten or dropped), {} damaged blocks, {} bad records, {unknown} records of unknown codes",
            c.damaged.len(),
            c.bad.len(),
        );
        let whole = lost == 0 && gaps == 0 && c.damaged.is_empty() && c.bad.is_empty() && unknown == 0;
        let losses = if whole { losses } else { palette.paint(Style::Warning, &losses) };
        let _ = writeln!(text, "  {losses}");
        let (repeats, backwards) =
            c.sequences.values().map(|s| disorder(s)).fold((0, 0), |(r, b), (rs, bs)| (r + rs.len(), b + bs.len()));
        if repeats + backwards > 0 {
            let _ = writeln!(
                text,
                "  {repeats} blocks repeated, {backwards} blocks out of order (a thread's block numbered as an earlier one, or lower than the one before it)"
            );
        }
        if let Some(summary) = log.ring_summary() {
            let state = match summary.state {
                ring::STATE_RECORDING => "recording (or its program died)",
                STATE_CLOSED => "closed",
                _ => "unknown",
            };
            let _ = writeln!(
                text,
                "  ring file: {state}; {} threads, {} overwritten blocks, {} threads without a slot, {} slots reused ({} events discarded with them, counted lost)",
                summary.threads,
                summary.overwritten_blocks,
                summary.threads_without_slot,
                summary.slots_reused,
                summary.discarded
            );
        }
        let ending = c.ending(&h, log.ring_summary());
        let ended = ending_line(&ending, &h, &c);
        let ended = if matches!(ending, Ending::Killed) { palette.paint(Style::Warning, &ended) } else { ended };
        let _ = writeln!(text, "  {ended}");
        // Names qualified by their sets may be longer than the usual column.
        let width = c.per_event.keys().chain(c.per_kind.keys()).map(|n| n.chars().count()).max().unwrap_or(0).max(24);
        let _ = writeln!(text, "  per kind:");
        for (k, n) in &c.per_kind {
            let _ = writeln!(text, "    {k:<width$} {n:>12}");
        }
        let _ = writeln!(text, "  per event:");
        let mut events: Vec<_> = c.per_event.iter().collect();
        events.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (e, n) in events {
            let _ = writeln!(text, "    {} {n:>12}", padded(palette, Style::Event, e, width));
        }
        let _ = writeln!(text, "  per thread:");
        for (t, n) in &c.per_thread {
            let name = c.names.get(t).map(|n| format!(" ({n})")).unwrap_or_default();
            let lost = c.lost.get(t).map(|l| format!(", {l} lost")).unwrap_or_default();
            let _ = writeln!(text, "    {}{name:<20} {n:>12}{lost}", palette.paint(Style::Thread, &format!("T{t}")));
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

/// `, on HOST` after the pid when the header names the host (format 2.0.1).
fn host_part(h: &Header) -> String {
    if h.producer.host.is_empty() { String::new() } else { format!(" on {}", h.producer.host) }
}

/// How the recording ended, in one line (`stats`; `check` says the same in its problems).
fn ending_line(ending: &Ending, h: &Header, c: &Census) -> String {
    match ending {
        Ending::Clean(Some(stop)) => format!(
            "stopped cleanly: the writer wrote {} blocks, {} events and counted {} lost before its stop marker",
            stop.blocks, stop.events, stop.lost
        ),
        Ending::Clean(None) => "stopped cleanly (ring file closed)".to_owned(),
        Ending::Killed if c.after_stop > 0 => {
            format!("not stopped cleanly: {} blocks come after its stop marker", c.after_stop)
        }
        Ending::Killed => "not stopped cleanly (killed or aborted): no stop marker".to_owned(),
        Ending::Recording => "still recording: its writer is alive".to_owned(),
        Ending::Unrecorded => format!("format {} records no clean stop", h.format),
    }
}

/// `check`: what is wrong with each log; exit code 1 unless every log is whole.
pub(crate) fn check(args: &LogsArgs) -> Result<ExitCode> {
    let mut logs = open_all(&args.logs, args.force)?;
    let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
    let everything = Selection::new(&Select::default(), &headers, || Ok(Vec::new()))?;
    let mut text = String::new();
    let mut whole = true;
    for (i, log) in logs.iter_mut().enumerate() {
        let c = census(log, i, &everything);
        let mut problems = Vec::new();
        for d in &c.damaged {
            problems.push(format!("damaged: {d}"));
        }
        for b in &c.bad {
            problems.push(format!("bad record: {b}"));
        }
        let overwritten = c.overwritten();
        for (t, seqs) in &c.sequences {
            for (first, n) in gaps(seqs) {
                let what = if n == 1 { format!("block {first}") } else { format!("blocks {first}..{}", first + n - 1) };
                // A thread's oldest blocks are what a ring overwrites: normal unless --strict.
                if first == 0 && !args.strict {
                    continue;
                }
                let why = if first == 0 { "overwritten by its ring" } else { "overwritten, dropped or damaged" };
                problems.push(format!("gap: thread {t}: {what} missing ({why})"));
            }
            let (repeats, backwards) = disorder(seqs);
            for n in repeats {
                problems.push(format!("repeat: thread {t}: block {n} appears again (its events are read twice)"));
            }
            for (previous, n) in backwards {
                problems.push(format!("backwards: thread {t}: block {n} comes after block {previous}"));
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
        let header = log.header().clone();
        let ending = c.ending(&header, log.ring_summary());
        let mut notes = Vec::new();
        match &ending {
            Ending::Killed => problems.push(ending_line(&ending, &header, &c)),
            Ending::Clean(Some(stop)) => {
                let (blocks, events, lost) = (c.blocks, c.events, saturating_sum(c.lost.values().copied()));
                if stop.blocks != blocks {
                    problems.push(format!(
                        "blocks: the writer wrote {} before its stop marker, {blocks} are here",
                        stop.blocks
                    ));
                }
                if stop.events != events {
                    problems.push(format!("events: the writer wrote {}, {events} are here", stop.events));
                }
                if stop.lost != lost {
                    problems.push(format!("losses: the writer counted {} lost, the log reports {lost}", stop.lost));
                }
            }
            Ending::Clean(None) => {}
            Ending::Recording | Ending::Unrecorded => notes.push(ending_line(&ending, &header, &c)),
        }
        if !overwritten.is_empty() && !args.strict {
            let blocks = saturating_sum(overwritten.iter().map(|o| o.1));
            notes.push(format!(
                "overwritten: {blocks} blocks of {} threads, the oldest, as a ring keeps only the latest (--strict makes this a problem)",
                overwritten.len()
            ));
        }
        let _ = writeln!(text, "{}: {} blocks, {} events", log.path().display(), c.blocks, c.events);
        for n in &notes {
            let _ = writeln!(text, "  {n}");
        }
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
