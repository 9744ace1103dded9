//! `stats` and `check`: one pass over each log that counts what it holds (a census) and
//! what is wrong with it, then one report per log.

use super::{Choice, Colors, Result, thread_names, write_all};
use crate::cli::{LogsArgs, Select, StatsArgs};
use crate::color::{Palette, Style};
use crate::log::{Log, open_all};
use crate::progress::Progress;
use event_format::builtin;
use event_format::decode::{Block, BlockError, Catalog, Entry};
use event_format::ledger::{Ending, Ledger};
use event_format::ring::{self, STATE_CLOSED};
use event_format::wire::{Clock, Header, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::mpsc;

/// What one log holds, for `stats` and `check`: what is wrong with it or lost is the
/// [`Ledger`]'s (the one tally every reader keeps); the rest (counts of the selection, rates,
/// names, bytes) is the census's own.
struct Census {
    /// Blocks that were packed in the stream, bytes the blocks take in the stream, and bytes
    /// of their records: of the blocks the ledger counts (the stop marker's not).
    packed: u64,
    stored_bytes: u64,
    record_bytes: u64,
    /// The last block's (packed, stored bytes, record bytes) while it may be the stop marker,
    /// counted when a block follows it.
    held: Option<(u64, u64, u64)>,
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
    ledger: Ledger,
    /// The block counted last, for its buffer to be reused.
    spare: Option<Block>,
}

/// A ring file's writer is alive when its heartbeat is this recent (it beats every 20 ms)
/// and its process exists where that can be asked (`follow::writer_alive`): a writer killed
/// a moment ago has a recent heartbeat and no process.
const ALIVE_NS: u64 = 2_000_000_000;

/// How the recording of `log` ended (docs/FORMAT.md, "The clean stop"), by its ledger. A log
/// without its stop marker may have a writer still at work: a ring file's whose heartbeat is
/// recent and whose process exists, a stream's that holds the lock a recorder keeps on its
/// event file (`lock::held_by_writer`).
fn ending(ledger: &Ledger, log: &Log) -> Ending {
    ledger.ending(|| match log.ring_findings() {
        Some(ring) => {
            let now =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
            now.saturating_sub(ring.heartbeat_ns) < ALIVE_NS
                && super::follow::writer_alive(log.header().producer.pid, ring.heartbeat_ns)
        }
        None => crate::lock::held_by_writer(log.path()),
    })
}

/// The census of `log`, the `file`th of the command line, counting the events `selection`
/// keeps (damage, losses and blocks are the whole log's).
fn census(log: &mut Log, file: usize, selection: &Choice) -> Census {
    let mut c = Census {
        packed: 0,
        stored_bytes: 0,
        record_bytes: 0,
        held: None,
        selected: 0,
        selected_first: None,
        selected_last: 0,
        per_event: BTreeMap::new(),
        per_kind: BTreeMap::new(),
        per_set: BTreeMap::new(),
        per_thread: BTreeMap::new(),
        names: BTreeMap::new(),
        first: None,
        last: 0,
        ledger: Ledger::new(log.header().format),
        spare: None,
    };
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
    if let Some(findings) = log.ring_findings() {
        c.ledger.ring_file(findings);
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
    selection: &'a Choice,
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
            c.ledger.damaged(&e);
            return;
        }
    };
    progress.update(block.offset + block.stored_len);
    let (thread, sequence) = (block.header.thread, block.header.sequence);
    c.ledger.block(&block);
    // The stop marker's block (thread 0, ending with a Stop record, the last block) is the
    // end of the stream, not a block of events: its bytes are not counted (its records, if
    // any, still are). A stop block that another block follows is a block like any other.
    if let Some((packed, stored, records)) = c.held.take() {
        c.packed += packed;
        c.stored_bytes += stored;
        c.record_bytes += records;
    }
    let own = (
        u64::from(block.header.flags & event_format::wire::BLOCK_PACKED != 0),
        block.stored_len,
        block.records.len() as u64,
    );
    if c.ledger.ends_with_marker() {
        c.held = Some(own);
    } else {
        c.packed += own.0;
        c.stored_bytes += own.1;
        c.record_bytes += own.2;
    }
    // Without a selection every event is kept: no test per event (`check`'s case).
    let everything = selection.is_everything();
    let mut kept = 0u64;
    // The block's earliest and latest times, of all events and of those kept: folded
    // into the census once per block.
    let (mut first, mut last, mut in_block) = (u64::MAX, 0u64, 0u64);
    let (mut kept_first, mut kept_last) = (u64::MAX, 0u64);
    for entry in block.entries(catalog) {
        if let Entry::Event(e) = &entry {
            in_block += 1;
            first = first.min(e.time);
            last = last.max(e.time);
            if everything || selection.keeps(file, e, clock) {
                kept += 1;
                kept_first = kept_first.min(e.time);
                kept_last = kept_last.max(e.time);
                // By wire code: sets may reuse each other's own codes.
                per_code[usize::from(e.desc.wire)] += 1;
            }
            if e.desc.code == builtin::THREAD_NAME {
                let mut v = e.values();
                if let (Some(Value::Word(t)), Some(Value::Str(s))) = (v.next(), v.next()) {
                    c.names.insert(t, String::from_utf8_lossy(s.bytes).into_owned());
                }
            }
        }
        c.ledger.entry(thread, sequence, &entry);
    }
    if in_block > 0 {
        c.first = Some(c.first.map_or(first, |f| f.min(first)));
        c.last = c.last.max(last);
    }
    if kept > 0 {
        c.selected_first = Some(c.selected_first.map_or(kept_first, |f| f.min(kept_first)));
        c.selected_last = c.selected_last.max(kept_last);
        c.selected += kept;
        *c.per_thread.entry(thread).or_default() += kept;
    }
    c.spare = Some(block);
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
    let selection = Choice::new(&args.select, &headers, || thread_names(&args.logs, args.force))?;
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
        let (events, blocks) = (c.ledger.events(), c.ledger.blocks());
        let rate = if span > 0.0 { format!("{:.0} events/s", events as f64 / span) } else { "no time span".to_owned() };
        let _ = writeln!(text, "  {events} events in {blocks} blocks over {span:.9} s ({rate})");
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
        let per_event_bytes = if events > 0 { c.record_bytes as f64 / events as f64 } else { 0.0 };
        let file_bytes = if events > 0 { c.stored_bytes as f64 / events as f64 } else { 0.0 };
        let _ = writeln!(
            text,
            "  {per_event_bytes:.1} bytes per event in records, {file_bytes:.1} in blocks ({} of {blocks} blocks packed)",
            c.packed
        );
        let l = &c.ledger;
        let (lost, gaps, unknown) = (l.lost(), l.missing_blocks(), l.unknown_records());
        let (damaged, bad) = (l.damaged_blocks().len(), l.bad_records().len());
        let losses = format!(
            "{lost} events lost, {gaps} blocks missing (overwritten or dropped), {damaged} damaged blocks, {bad} bad records, {unknown} records of unknown codes",
        );
        let whole = lost == 0 && gaps == 0 && damaged == 0 && bad == 0 && unknown == 0;
        let losses = if whole { losses } else { palette.paint(Style::Warning, &losses) };
        let _ = writeln!(text, "  {losses}");
        let (repeats, late) = (l.repeated_blocks(), l.late_blocks());
        if repeats + late > 0 {
            let _ = writeln!(
                text,
                "  {repeats} blocks repeated, {late} blocks out of order (a thread's block numbered as an earlier one, or lower than one before it)"
            );
        }
        if let Some(summary) = log.ring_findings() {
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
        let ending = ending(&c.ledger, log);
        let ended = ending_line(&ending, &h);
        let ended = if matches!(ending, Ending::Killed { .. }) { palette.paint(Style::Warning, &ended) } else { ended };
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
            let lost = c.ledger.lost_by_thread().get(t).map(|l| format!(", {l} lost")).unwrap_or_default();
            let _ = writeln!(text, "    {}{name:<20} {n:>12}{lost}", palette.paint(Style::Thread, &format!("T{t}")));
        }
        for (t, l) in c.ledger.lost_by_thread() {
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
fn ending_line(ending: &Ending, h: &Header) -> String {
    match ending {
        Ending::Clean(Some(stop)) => format!(
            "stopped cleanly: the writer wrote {} blocks, {} events and counted {} lost before its stop marker",
            stop.blocks, stop.events, stop.lost
        ),
        Ending::Clean(None) => "stopped cleanly (ring file closed)".to_owned(),
        Ending::Killed { after_marker: 0 } => "not stopped cleanly (killed or aborted): no stop marker".to_owned(),
        Ending::Killed { after_marker } => {
            format!("not stopped cleanly: {after_marker} blocks come after its stop marker")
        }
        Ending::Running => "still recording: its writer is alive".to_owned(),
        Ending::Unrecorded => format!("format {} records no clean stop", h.format),
    }
}

/// `check`: what is wrong with each log; exit code 1 unless every log is whole.
pub(crate) fn check(args: &LogsArgs) -> Result<ExitCode> {
    let mut logs = open_all(&args.logs, args.force)?;
    let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
    let everything = Choice::new(&Select::default(), &headers, || Ok(Vec::new()))?;
    let mut text = String::new();
    let mut whole = true;
    for (i, log) in logs.iter_mut().enumerate() {
        let c = census(log, i, &everything);
        let l = &c.ledger;
        let mut problems = Vec::new();
        for d in l.damaged_blocks() {
            problems.push(format!("damaged: {d}"));
        }
        for b in l.bad_records() {
            problems.push(format!("bad record: {b}"));
        }
        for (t, seqs) in l.threads() {
            for (first, n) in seqs.gaps() {
                let what = if n == 1 { format!("block {first}") } else { format!("blocks {first}..{}", first + n - 1) };
                // A thread's oldest blocks are what a ring overwrites: normal unless --strict.
                // The recorder's own (thread 0) are never overwritten.
                let overwritten = first == 0 && *t != 0;
                if overwritten && !args.strict {
                    continue;
                }
                let why = match (overwritten, *t) {
                    (true, _) => "overwritten by its ring",
                    (false, 0) => "dropped or damaged",
                    (false, _) => "overwritten, dropped or damaged",
                };
                problems.push(format!("gap: thread {t}: {what} missing ({why})"));
            }
            for n in seqs.repeats() {
                problems.push(format!("repeat: thread {t}: block {n} appears again (its events are read twice)"));
            }
            for (highest, n) in seqs.late() {
                problems.push(format!("backwards: thread {t}: block {n} comes after block {highest}"));
            }
        }
        for (t, n) in l.lost_by_thread() {
            let who = if *t == 0 { "no thread".to_owned() } else { format!("thread {t}") };
            problems.push(format!("lost: {who}: {n} events"));
        }
        for (code, n) in l.unknown_codes() {
            problems.push(format!(
                "unknown code {code:#06x}: {n} records skipped (a newer event set or format wrote them)"
            ));
        }
        let header = log.header().clone();
        let ending = ending(l, log);
        let mut notes = Vec::new();
        match &ending {
            Ending::Killed { .. } => problems.push(ending_line(&ending, &header)),
            Ending::Clean(Some(_)) => {
                // What the writer wrote before its marker, against what is here: the records
                // every walk yields (an event, a record of an unknown code, or one with bad
                // arguments), the marker's block not counted (docs/FORMAT.md, "The clean stop").
                if let Some(m) = l.marker() {
                    let (written, read) = (m.written, m.read);
                    if written.blocks != read.blocks {
                        problems.push(format!(
                            "blocks: the writer wrote {} before its stop marker, {} are here",
                            written.blocks, read.blocks
                        ));
                    }
                    if written.events != read.events {
                        problems.push(format!("events: the writer wrote {}, {} are here", written.events, read.events));
                    }
                    if written.lost != read.lost {
                        problems.push(format!(
                            "losses: the writer counted {} lost, the log reports {}",
                            written.lost, read.lost
                        ));
                    }
                }
            }
            Ending::Clean(None) => {}
            Ending::Running | Ending::Unrecorded => notes.push(ending_line(&ending, &header)),
        }
        let overwritten: Vec<(u64, u64)> = l.overwritten().collect();
        if !overwritten.is_empty() && !args.strict {
            let blocks = overwritten.iter().map(|o| o.1).fold(0, u64::saturating_add);
            notes.push(format!(
                "overwritten: {blocks} blocks of {} threads, the oldest, as a ring keeps only the latest (--strict makes this a problem)",
                overwritten.len()
            ));
        }
        let _ = writeln!(text, "{}: {} blocks, {} events", log.path().display(), l.blocks(), l.events());
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
