//! `stats` and `check`: one pass over each log that counts what it holds (a census) and
//! what is wrong with it, then one report per log, planned and then written. Whether a log
//! is whole is its ledger's findings' one verdict (`Findings::is_whole`), which `stats` says
//! last of its findings and `check`'s problems detail, line by line.

use super::{Choice, Colors, Result, thread_names, write_all};
use crate::cli::{LogsArgs, Select, StatsArgs};
use crate::color::{Palette, Style};
use crate::log::{Log, open_all};
use crate::progress::Progress;
use event_format::builtins::BuiltinEvent;
use event_format::decode::{Block, BlockError, BlockSource, Catalog, Entry};
use event_format::ledger::{Damaged, Ending, Ledger, Marker, describe_suppressed};
use event_format::ring::{self, STATE_CLOSED};
use event_format::wire::{Clock, Header, StopCause, Unpacker};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::mpsc;

/// What one log holds, for `stats` and `check`: what is wrong with it or lost is the
/// [`Ledger`]'s (the one tally every reader keeps); the rest (counts of the choice, rates,
/// names, bytes) is the census's own.
struct Census {
    /// Blocks that were packed in the stream, bytes the blocks take in the stream, and bytes
    /// of their records: of the blocks the ledger counts (the stop marker's not).
    packed: u64,
    stored_bytes: u64,
    record_bytes: u64,
    /// The last block's (packed, stored bytes, record bytes) while it may be the stop marker,
    /// counted when a block of its segment follows it, with its segment (a segment's last
    /// stop block is that segment's marker).
    held: Option<(u32, (u64, u64, u64))>,
    /// The events the choice keeps (all of them without one), and the first and last
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
    /// Each thread's earliest and latest event times, and its events (all of them, the
    /// choice's or not): how long a ring file's ring held at the rate it recorded.
    threads: BTreeMap<u64, (u64, u64, u64)>,
    ledger: Ledger,
    /// The block counted last, for its buffer to be reused.
    spare: Option<Block>,
}

/// How the recording of `log` ended (docs/FORMAT.md, "The clean stop"), by its ledger. A log
/// without its stop marker may have a writer still at work ([`Log::writer_alive`]).
pub(crate) fn ending(ledger: &Ledger, log: &Log) -> Ending {
    ledger.ending(|| log.writer_alive())
}

/// The census of `log`, the `file`th of the command line, counting the events `choice`
/// keeps (damage, losses and blocks are the whole log's).
fn census(log: &mut Log, file: usize, choice: &Choice) -> Census {
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
        threads: BTreeMap::new(),
        ledger: log.ledger(),
        spare: None,
    };
    let clock = log.header().clock;
    // Counted by code and by block while reading (no allocation per event), named at the end.
    let mut per_code = vec![0u64; 1 << 16];
    let mut progress = Progress::new(&format!("reading {}", log.path().display()), log.len());
    // Blocks are read (checked and unpacked) on a thread of their own while this one counts
    // the records of those before: two cores where a machine has them. Where no thread can
    // be made (a thread limit), this thread reads them too.
    let starts = log.segment_starts();
    let (source, catalog) = log.blocks_and_catalog();
    let how = Counting { catalog, file, choice, clock, starts: &starts };
    let (block_tx, blocks) = mpsc::sync_channel::<Read>(4);
    let (spent, spent_rx) = mpsc::channel::<Block>();
    let read_apart = std::thread::scope(|s| {
        let reader = &mut *source;
        let spawned = std::thread::Builder::new().name("event-dump-reader".into()).spawn_scoped(s, move || {
            let mut unpacking = Unpacking::default();
            loop {
                // A block counted gives its buffer to the next one read.
                if let Ok(block) = spent_rx.try_recv() {
                    reader.recycle(block);
                }
                let Some(block) = unpacking.next(reader) else { return };
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
        let mut unpacking = Unpacking::default();
        while let Some(block) = unpacking.next(source) {
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

/// A block read, with the bytes of its records as the writer wrote them (records by
/// callsite not expanded: what they take in a block, `stats`' bytes per event in records).
type Read = std::result::Result<(Block, u64), BlockError>;

/// Reads a source's blocks as [`BlockSource::next_block`] does, measuring each one's records
/// as written ([`PendingBlock::unpack_measured`](event_format::decode::PendingBlock::unpack_measured)).
#[derive(Default)]
struct Unpacking {
    unpacker: Unpacker,
    spare: Vec<u8>,
}

impl Unpacking {
    fn next(&mut self, source: &mut (impl BlockSource + ?Sized)) -> Option<Read> {
        let pending = source.next_pending()?;
        Some(
            pending
                .and_then(|p| p.unpack_measured(&mut self.unpacker, &mut self.spare))
                .map(|(block, written)| (block, written as u64)),
        )
    }
}

/// What the events of a log are counted by.
struct Counting<'a> {
    catalog: &'a Catalog,
    /// The log's place on the command line.
    file: usize,
    choice: &'a Choice,
    clock: Clock,
    /// Where each segment starts among the log's bytes, for progress.
    starts: &'a [u64],
}

/// Counts `block` into `c` (events by wire code into `per_code`); leaves the block in
/// `c.spare`, for its buffer to be reused.
fn count_block(c: &mut Census, per_code: &mut [u64], progress: &mut Progress, how: &Counting<'_>, block: Read) {
    let Counting { catalog, file, choice, ref clock, starts } = *how;
    let (block, written) = match block {
        Ok(b) => b,
        Err(e) => {
            c.ledger.damaged(&e);
            return;
        }
    };
    let start = starts.get(block.segment as usize).copied().unwrap_or(0);
    progress.update(start + block.offset + block.stored_len);
    let (thread, sequence) = (block.header.thread, block.header.sequence);
    c.ledger.block(&block);
    // The stop marker's block (thread 0, ending with a Stop record, the last block) is the
    // end of the stream, not a block of events: its bytes are not counted (its records, if
    // any, still are). A stop block that another block follows is a block like any other.
    if let Some((segment, (packed, stored, records))) = c.held.take()
        && segment == block.segment
    {
        c.packed += packed;
        c.stored_bytes += stored;
        c.record_bytes += records;
    }
    let own = (u64::from(block.header.flags & event_format::wire::BLOCK_PACKED != 0), block.stored_len, written);
    if c.ledger.ends_with_marker() {
        c.held = Some((block.segment, own));
    } else {
        c.packed += own.0;
        c.stored_bytes += own.1;
        c.record_bytes += own.2;
    }
    // Without a choice every event is kept: no test per event (`check`'s case).
    let everything = choice.is_everything();
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
            if everything || choice.keeps(file, e, clock) {
                kept += 1;
                kept_first = kept_first.min(e.time);
                kept_last = kept_last.max(e.time);
                // By wire code: sets may reuse each other's own codes.
                per_code[usize::from(e.desc.wire)] += 1;
            }
            if let Some(BuiltinEvent::ThreadName { thread, name }) = BuiltinEvent::of(e) {
                c.names.insert(thread, name.to_string_lossy().into_owned());
            }
        }
        c.ledger.entry(thread, sequence, &entry);
    }
    if in_block > 0 {
        c.first = Some(c.first.map_or(first, |f| f.min(first)));
        c.last = c.last.max(last);
        let span = c.threads.entry(thread).or_insert((first, last, 0));
        *span = (span.0.min(first), span.1.max(last), span.2 + in_block);
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

/// `stats`: what each log holds; with a choice, its counts are of the events selected. For
/// each log, the census is taken and its report planned, section by section ([`about`],
/// [`counts`], [`findings`], [`tables`]), then written.
pub(crate) fn stats(args: &StatsArgs, colors: Colors) -> Result<ExitCode> {
    let mut logs = open_all(&args.logs, args.force)?;
    let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
    let choice = Choice::new(&args.select, &headers, || thread_names(&args.logs, args.force))?;
    let palette = colors.out;
    let mut text = String::new();
    for (i, log) in logs.iter_mut().enumerate() {
        let c = census(log, i, &choice);
        let sections = [about(log), counts(&c, log, &choice), findings(&c, log, palette), tables(&c, palette)];
        if i > 0 {
            text.push('\n');
        }
        let _ = writeln!(text, "log {}", log.path().display());
        for line in sections.iter().flatten() {
            let _ = writeln!(text, "{line}");
        }
    }
    write_all(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `stats`' lines of what the log is: its format, producer and clock, labels, what a
/// snapshot is, its event sets.
fn about(log: &Log) -> Vec<String> {
    let h = log.header();
    let mut lines = Vec::new();
    let service = crate::identity::service(h);
    let program =
        if service == h.producer.program { String::new() } else { format!(", program {}", h.producer.program) };
    lines.push(format!(
        "  format {}, {}, blocks of {} bytes; {service}{} (pid {}{program}, {} {}); clock {} at {} ticks/s",
        h.format,
        h.order.name(),
        h.block_size,
        host_part(h),
        h.producer.pid,
        h.producer.arch,
        h.producer.os,
        h.clock.source.name(),
        h.clock.ticks_per_second
    ));
    if let Some(labels) = crate::identity::labels_text(h) {
        lines.push(format!("  labels: {labels}"));
    }
    if let Some(line) = event_format::ledger::describe_snapshot(h) {
        lines.push(format!("  {line}"));
    }
    lines
}

/// `stats`' lines of what the log holds: its event sets (with their counts, for several),
/// events and blocks over its time span, the events the choice keeps, bytes per event.
fn counts(c: &Census, log: &Log, choice: &Choice) -> Vec<String> {
    let h = log.header();
    let mut lines = Vec::new();
    for set in &h.sets {
        let s = &set.schema;
        // A one-set stream reads as before; several sets are named, with their counts.
        let (name, counted) = if h.sets.len() > 1 {
            let n = c.per_set.get(&s.name).copied().unwrap_or(0);
            (format!("{} ", s.name), format!(", {n} recorded"))
        } else {
            (String::new(), String::new())
        };
        lines.push(format!(
            "  event set {name}{}: {} kinds, {} events{counted}",
            s.version,
            s.kinds.len(),
            s.events.len()
        ));
    }
    let rate = |events: u64, span: f64| {
        if span > 0.0 { format!("{:.0} events/s", events as f64 / span) } else { "no time span".to_owned() }
    };
    let (events, blocks) = (c.ledger.events(), c.ledger.blocks());
    let span = c.first.map_or(0.0, |f| seconds(&h.clock, f, c.last));
    lines.push(format!("  {events} events in {blocks} blocks over {span:.9} s ({})", rate(events, span)));
    if !choice.is_everything() {
        let span = c.selected_first.map_or(0.0, |f| seconds(&h.clock, f, c.selected_last));
        lines.push(format!(
            "  selected: {} of these events, over {span:.9} s ({}); the counts below are of these",
            c.selected,
            rate(c.selected, span)
        ));
    }
    let per_event_bytes = if events > 0 { c.record_bytes as f64 / events as f64 } else { 0.0 };
    let file_bytes = if events > 0 { c.stored_bytes as f64 / events as f64 } else { 0.0 };
    lines.push(format!(
        "  {per_event_bytes:.1} bytes per event in records, {file_bytes:.1} in blocks ({} of {blocks} blocks packed)",
        c.packed
    ));
    lines
}

/// `stats`' lines of what the log lost and what is wrong with it: the ledger's findings,
/// what limits suppressed, its segments, its ring file and its pin area, how it ended, and
/// last the verdict every reader gives ([`Findings::verdict`](event_format::ledger::Findings::verdict)).
fn findings(c: &Census, log: &Log, palette: Palette) -> Vec<String> {
    let (l, h) = (&c.ledger, log.header());
    let warn = |whole: bool, line: String| if whole { line } else { palette.paint(Style::Warning, &line) };
    let ending = ending(l, log);
    let found = l.findings(|| log.writer_alive());
    let whole = found.is_whole(false);
    let mut lines = vec![format!("  {}", warn(whole, found.losses_line()))];
    // What limits suppressed: counted, never a loss (docs/FORMAT.md, "Limits").
    let notes = [segments_line(l), left_open_line(log), earlier_line(log)];
    lines.extend(
        describe_suppressed(l, log.catalog()).into_iter().chain(notes.into_iter().flatten()).map(|n| format!("  {n}")),
    );
    lines.extend(unwritten_lines(l).iter().map(|line| format!("  {}", palette.paint(Style::Warning, line))));
    let (repeats, late) = (l.repeated_blocks(), l.late_blocks());
    if repeats + late > 0 {
        lines.push(format!(
            "  {repeats} blocks repeated, {late} blocks out of order (a thread's block numbered as an earlier one, or lower than one before it)"
        ));
    }
    lines.extend(ring_note(c, log).map(|note| format!("  {note}")));
    if let Some(findings) = log.ring_findings() {
        let state = match findings.state {
            ring::STATE_RECORDING => "recording (or its program died)",
            STATE_CLOSED => "closed",
            _ => "unknown",
        };
        lines.push(format!(
            "  ring file: {state}; {} threads, {} overwritten blocks, {} threads without a slot, {} slots reused ({} events discarded with them, counted lost)",
            findings.threads,
            findings.overwritten_blocks,
            findings.threads_without_slot,
            findings.slots_reused,
            findings.discarded
        ));
        lines.extend(pin_line(log, findings, true).map(|line| format!("  {line}")));
    }
    let ended = of_last_segment(l, ending_line(&ending, h));
    lines.push(format!("  {}", warn(!matches!(ending, Ending::Killed { .. }), ended)));
    lines.push(format!("  {}", warn(whole, found.verdict(false))));
    lines
}

/// `stats`' tables: the events counted per kind, per event and per thread (with each
/// thread's losses).
fn tables(c: &Census, palette: Palette) -> Vec<String> {
    let mut lines = Vec::new();
    // Names qualified by their sets may be longer than the usual column.
    let width = c.per_event.keys().chain(c.per_kind.keys()).map(|n| n.chars().count()).max().unwrap_or(0).max(24);
    lines.push("  per kind:".to_owned());
    lines.extend(c.per_kind.iter().map(|(k, n)| format!("    {k:<width$} {n:>12}")));
    lines.push("  per event:".to_owned());
    let mut events: Vec<_> = c.per_event.iter().collect();
    events.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    lines.extend(events.into_iter().map(|(e, n)| format!("    {} {n:>12}", padded(palette, Style::Event, e, width))));
    lines.push("  per thread:".to_owned());
    let lost = c.ledger.lost_by_thread();
    for (t, n) in &c.per_thread {
        let name = c.names.get(t).map(|n| format!(" ({n})")).unwrap_or_default();
        let lost = lost.get(t).map(|l| format!(", {l} lost")).unwrap_or_default();
        lines.push(format!("    {}{name:<20} {n:>12}{lost}", palette.paint(Style::Thread, &format!("T{t}"))));
    }
    for (t, l) in lost.iter().filter(|(t, _)| !c.per_thread.contains_key(t)) {
        let who = if *t == 0 { "no thread".to_owned() } else { format!("T{t}") };
        lines.push(format!("    {who}: {l} lost"));
    }
    lines
}

/// How long a ring file's rings held, when one overwrote blocks: the time that the events
/// left in the ring of the thread whose ring wrapped soonest cover (its rate decides), and
/// the `EVENT_BUFSIZE` that would hold [`RING_TARGET_S`] at that rate (layout 1.1: the rings
/// share the whole buffer, which scales with the time; 1.0: the buffer is divided equally,
/// a slot each: FORMAT.md's ring file layout). `None` for a stream, or a ring that overwrote
/// nothing.
fn ring_note(c: &Census, log: &Log) -> Option<String> {
    let layout = log.ring_layout()?;
    let clock = log.header().clock;
    // The wrapped threads' (seconds held, events held, thread), the shortest first.
    let (held, events, thread) = c
        .ledger
        .overwritten()
        .filter_map(|(thread, _)| {
            let &(first, last, events) = c.threads.get(&thread)?;
            Some((seconds(&clock, first, last), events, thread))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))?;
    let block = u64::from(layout.block_size);
    let rate = if held > 0.0 { format!("{:.0} events/s", events as f64 / held) } else { "no time span".to_owned() };
    if layout.pooled() {
        // Layout 1.1: the threads' rings share the whole data area, so the buffer that holds
        // 10 s is the buffer scaled by 10 s over what the soonest-wrapped ring held.
        let blocks = layout.blocks();
        let mut note = format!(
            "ring size: the threads' rings share {blocks} blocks of {} bytes (EVENT_BUFSIZE={}); they held about \
             {held:.3} s at the rate seen (T{thread}, the soonest to wrap: {events} events, {rate})",
            layout.block_size,
            size_text(blocks * block)
        );
        if held > 0.0 && held < RING_TARGET_S {
            let wanted = (blocks as f64 * RING_TARGET_S / held).ceil();
            if wanted <= f64::from(event_format::ring::MAX_POOL_BLOCKS) {
                let _ = write!(
                    note,
                    "; EVENT_BUFSIZE={} would hold about {RING_TARGET_S:.0} s",
                    size_text(wanted as u64 * block)
                );
            } else {
                let most = held * f64::from(event_format::ring::MAX_POOL_BLOCKS) / blocks as f64;
                let _ = write!(
                    note,
                    "; at the most a ring file holds ({} blocks) about {most:.1} s",
                    event_format::ring::MAX_POOL_BLOCKS
                );
            }
        }
        return Some(note);
    }
    let size = u64::from(layout.slots) * u64::from(layout.blocks_per_slot) * block;
    let mut note = format!(
        "ring size: each thread's ring ({} blocks of {} bytes; EVENT_BUFSIZE={} over {} threads) held \
         about {held:.3} s at the rate seen (T{thread}, the soonest to wrap: {events} events, {rate})",
        layout.blocks_per_slot,
        layout.block_size,
        size_text(size),
        layout.slots
    );
    if held > 0.0 && held < RING_TARGET_S {
        let per_slot = (f64::from(layout.blocks_per_slot) * RING_TARGET_S / held).ceil();
        if per_slot <= f64::from(event_format::raw::MAX_BLOCKS_PER_SLOT) {
            let wanted = u64::from(layout.slots) * per_slot as u64 * block;
            let _ = write!(note, "; EVENT_BUFSIZE={} would hold about {RING_TARGET_S:.0} s", size_text(wanted));
        } else {
            let most = held * f64::from(event_format::raw::MAX_BLOCKS_PER_SLOT) / f64::from(layout.blocks_per_slot);
            let _ = write!(
                note,
                "; at the most a ring holds ({} blocks a thread) about {most:.1} s",
                event_format::raw::MAX_BLOCKS_PER_SLOT
            );
        }
    }
    Some(note)
}

/// The time [`ring_note`] sizes a ring for: an incident's few seconds before and after.
const RING_TARGET_S: f64 = 10.0;

/// `bytes` as `EVENT_BUFSIZE` takes it, rounded up: `k`, `m` or `g` (powers of 1024).
fn size_text(bytes: u64) -> String {
    let units = [(1u64 << 30, "g"), (1 << 20, "m"), (1 << 10, "k")];
    for (unit, suffix) in units {
        if bytes >= unit {
            return format!("{}{suffix}", bytes.div_ceil(unit));
        }
    }
    format!("{bytes}")
}

/// ` on HOST` after the service when the header names the host (format 2.0.1).
fn host_part(h: &Header) -> String {
    if h.producer.host.is_empty() { String::new() } else { format!(" on {}", h.producer.host) }
}

/// For a recording of segments, what its segments are (`stats`): how many are here, how many
/// the disk budget removed (with their events), how many are missing for another reason.
fn segments_line(l: &Ledger) -> Option<String> {
    let segments = l.segments()?;
    let present = segments.present().len();
    let (removed, removed_events) = l.removed();
    let mut line = format!("recording of segments: {present} here");
    if removed > 0 {
        let _ = write!(line, ", {removed} removed by the disk budget ({removed_events} events)");
    }
    let gaps = l.segment_gaps();
    if gaps > 0 {
        let _ = write!(line, ", {gaps} missing (deleted, moved or not given)");
    }
    // Which files: a directory of several runs holds a recording for each.
    match segments.present() {
        [] => {}
        [one] => {
            let _ = write!(line, "; {}", one.name);
        }
        [first, .., last] => {
            let _ = write!(line, "; {} to {}", first.name, last.name);
        }
    }
    Some(line)
}

/// The `.open` segments of the recording its directory or glob left out, if any.
fn left_open_line(log: &Log) -> Option<String> {
    let names: Vec<String> = log
        .left_open()
        .iter()
        .map(|p| p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned()))
        .collect();
    (!names.is_empty()).then(|| {
        format!("still recording: {} (being written by a live writer: left out; name it to read it)", names.join(", "))
    })
}

/// What the directory's budget removed of earlier recordings wholly, said by the log whose
/// segments say the most of it (docs/FORMAT.md, "Earlier recordings").
fn earlier_line(log: &Log) -> Option<String> {
    let (recordings, segments, events) = log.earlier_removed()?;
    let s = if recordings == 1 { "" } else { "s" };
    Some(format!(
        "earlier recordings: {recordings} recording{s} of this directory removed wholly by the disk budget ({segments} segments, {events} events)"
    ))
}

/// What the recorder could not write (`stats` and `check`): between segments, and at a
/// stop for a full disk or another write error (counted lost).
fn unwritten_lines(l: &Ledger) -> Vec<String> {
    let mut lines = Vec::new();
    let full = l.unwritten_for_disk_full();
    if full > 0 {
        lines.push(format!("disk full: {full} events not written"));
    }
    let other = l.unwritten() - full;
    if other > 0 {
        lines.push(format!("write error: {other} events not written"));
    }
    let between = l.lost_between();
    if between > 0 {
        lines.push(format!("lost between segments: {between} events the recorder could not write"));
    }
    lines
}

/// `line`, said of a recording of segments' last segment, which says how it ended.
fn of_last_segment(l: &Ledger, line: String) -> String {
    match l.parts().last().and_then(|p| p.name) {
        Some(name) => format!("{line} (its last segment, {name})"),
        None => line,
    }
}

/// How the recording ended, in one line (`stats`; `check` says the same in its problems).
pub(crate) fn ending_line(ending: &Ending, h: &Header) -> String {
    // A snapshot (docs/FORMAT.md, "Snapshot") ends with the marker its writer wrote when it
    // had written the whole snapshot; the recording itself went on.
    if h.properties.snapshot.is_some() {
        match ending {
            Ending::Clean(Some(stop)) => {
                return format!(
                    "written whole: the snapshot's writer wrote {} blocks, {} events and counted {} lost before its stop marker",
                    stop.blocks, stop.events, stop.lost
                );
            }
            Ending::Killed { .. } => {
                return "not written whole: the snapshot has no stop marker (cut short)".to_owned();
            }
            _ => {}
        }
    }
    match ending {
        Ending::Clean(Some(stop)) => match stop.cause {
            StopCause::Stopped => format!(
                "stopped cleanly: the writer wrote {} blocks, {} events and counted {} lost before its stop marker",
                stop.blocks, stop.events, stop.lost
            ),
            StopCause::Rotated => "sealed segment (rotated): the recording goes on in the next segment, not read \
                                   (still being written, `*.open`, or not given)"
                .to_owned(),
            StopCause::DiskFull => format!("stopped writing: disk full: {} events not written", stop.unwritten),
            StopCause::WriteError => format!("stopped writing: write error: {} events not written", stop.unwritten),
            StopCause::Other(n) => format!("stopped (cause {n})"),
        },
        Ending::Clean(None) => "stopped cleanly (ring file closed)".to_owned(),
        Ending::Killed { after_marker: 0 } => "not stopped cleanly (killed or aborted): no stop marker".to_owned(),
        Ending::Killed { after_marker } => {
            format!("not stopped cleanly: {after_marker} blocks come after its stop marker")
        }
        Ending::Running => "still recording: its writer is alive".to_owned(),
        Ending::Unrecorded => format!("format {} records no clean stop", h.format),
    }
}

/// `check`: what is wrong with each log; exit code 1 unless every log is whole. For each log,
/// the census is taken and its report planned ([`CheckReport::of`]), then written.
pub(crate) fn check(args: &LogsArgs) -> Result<ExitCode> {
    let mut logs = open_all(&args.logs, args.force)?;
    let headers: Vec<&event_format::wire::Header> = logs.iter().map(|l| l.header()).collect();
    let everything = Choice::new(&Select::default(), &headers, || Ok(Vec::new()))?;
    // A directory of several runs is one log a run, each shown by the directory's path: the
    // recording id tells them apart where two paths read the same.
    let paths: Vec<String> = logs.iter().map(|l| l.path().display().to_string()).collect();
    let names: Vec<String> = logs
        .iter()
        .zip(&paths)
        .map(|(log, path)| match log.header().properties.recording {
            Some(id) if paths.iter().filter(|p| *p == path).count() > 1 => {
                format!("{path} (recording {})", &id.to_hex()[..8])
            }
            _ => path.clone(),
        })
        .collect();
    let mut text = String::new();
    let mut whole = true;
    for (i, (log, name)) in logs.iter_mut().zip(&names).enumerate() {
        let c = census(log, i, &everything);
        let report = CheckReport::of(&c.ledger, log, name, args.strict);
        report.write(&mut text);
        whole &= report.whole;
    }
    write_all(&text)?;
    Ok(if whole { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// What `check` says of one log: its notes (what is no problem), its problems one by one
/// (what makes it not whole, each where it is), and the verdict of its findings.
struct CheckReport {
    /// `PATH: N blocks, N events`, and for a recording of segments what its segments are.
    title: String,
    segments: Option<String>,
    notes: Vec<String>,
    problems: Vec<String>,
    /// The one verdict ([`Findings::is_whole`](event_format::ledger::Findings::is_whole)),
    /// which the problems listed detail.
    whole: bool,
}

impl CheckReport {
    /// The plan of `check`'s report of `log`, shown as `name`, whose ledger `l` counted it;
    /// `strict`: a ring's overwritten blocks are a problem.
    fn of(l: &Ledger, log: &Log, name: &str, strict: bool) -> CheckReport {
        let mut r = CheckReport {
            title: format!("{name}: {} blocks, {} events", l.blocks(), l.events()),
            segments: segments_line(l),
            // What a snapshot is comes first (docs/FORMAT.md, "Snapshot").
            notes: event_format::ledger::describe_snapshot(log.header()).into_iter().collect(),
            problems: Vec::new(),
            whole: l.findings(|| log.writer_alive()).is_whole(strict),
        };
        r.damage(l, log);
        r.sequences(l, strict);
        r.segments(l, log);
        r.problems.extend(unwritten_lines(l));
        for (t, n) in l.lost_by_thread() {
            let who = if *t == 0 { "no thread".to_owned() } else { format!("thread {t}") };
            r.problems.push(format!("lost: {who}: {n} events"));
        }
        for (code, n) in l.unknown_codes() {
            r.problems.push(format!(
                "unknown code {code:#06x}: {n} records skipped (a newer event set or format wrote them)"
            ));
        }
        r.ending(l, log);
        let overwritten: Vec<(u64, u64)> = l.overwritten().collect();
        if !overwritten.is_empty() && !strict {
            let blocks = overwritten.iter().map(|o| o.1).fold(0, u64::saturating_add);
            r.notes.push(format!(
                "overwritten: {blocks} blocks of {} threads, the oldest, as a ring keeps only the latest (--strict makes this a problem)",
                overwritten.len()
            ));
        }
        r.notes.extend(left_open_line(log));
        // What limits suppressed is a note, not a problem: the program asked for it.
        r.notes.extend(describe_suppressed(l, log.catalog()));
        r.notes.extend(earlier_line(log));
        // The problems listed are the findings' details: one rule decides, both agree.
        debug_assert_eq!(r.whole, r.problems.is_empty(), "{:?}", r.problems);
        r
    }

    /// Damaged blocks, bad records and a ring file's damaged pin area (with what it held).
    fn damage(&mut self, l: &Ledger, log: &Log) {
        for d in l.damaged_blocks() {
            let of = match d {
                Damaged::Block(e) => l.segment_name(e.segment).map(|n| format!("segment {n}: ")),
                Damaged::Slot { .. } => None,
            };
            self.problems.push(format!("damaged: {}{d}", of.unwrap_or_default()));
        }
        for b in l.bad_records() {
            self.problems.push(format!("bad record: {b}"));
        }
        if let Some(findings) = log.ring_findings() {
            if let Some(why) = &findings.pin_damage {
                self.problems.push(format!("damaged: the ring file's pin area: {why}"));
            }
            self.notes.extend(pin_line(log, findings, false));
        }
    }

    /// Each segment's threads' gaps, repeats and late blocks, and each segment but the last's
    /// own stop marker (the last one's is the log's: [`ending`](CheckReport::ending)).
    fn sequences(&mut self, l: &Ledger, strict: bool) {
        let problems = &mut self.problems;
        for part in l.parts() {
            let of = part.name.map(|n| format!("segment {n}: ")).unwrap_or_default();
            for (t, seqs) in part.threads {
                for (first, n) in seqs.gaps() {
                    let what =
                        if n == 1 { format!("block {first}") } else { format!("blocks {first}..{}", first + n - 1) };
                    // A thread's oldest blocks are what a ring overwrites: normal unless --strict.
                    // The recorder's own (thread 0) are never overwritten.
                    let overwritten = first == 0 && *t != 0;
                    if overwritten && !strict {
                        continue;
                    }
                    let why = match (overwritten, *t) {
                        (true, _) => "overwritten by its ring",
                        (false, 0) => "dropped or damaged",
                        (false, _) => "overwritten, dropped or damaged",
                    };
                    problems.push(format!("gap: {of}thread {t}: {what} missing ({why})"));
                }
                for n in seqs.repeats() {
                    problems
                        .push(format!("repeat: {of}thread {t}: block {n} appears again (its events are read twice)"));
                }
                for (highest, n) in seqs.late() {
                    problems.push(format!("backwards: {of}thread {t}: block {n} comes after block {highest}"));
                }
            }
            if part.last {
                continue;
            }
            match part.marker {
                Some(m) => marker_problems(&m, &of, problems),
                None if part.after_marker > 0 => problems
                    .push(format!("{of}not stopped cleanly: {} blocks come after its stop marker", part.after_marker)),
                None => {
                    problems.push(format!("{of}not stopped cleanly: no stop marker (cut, or its writer was killed)"))
                }
            }
        }
    }

    /// For a recording of segments, the segments the disk budget removed (a note) and those
    /// missing for another reason (a problem).
    fn segments(&mut self, l: &Ledger, log: &Log) {
        let Some(segments) = l.segments() else { return };
        let span = |first: u64, n: u64| if n == 1 { format!("{first}") } else { format!("{first}..{}", first + n - 1) };
        let removed: Vec<String> =
            segments.missing().iter().filter(|m| m.removed > 0).map(|m| span(m.first, m.removed)).collect();
        let (count, events) = segments.removed();
        if count > 0 {
            let last = segments.present().last().map_or("?", |e| e.name.as_str());
            let s = if count == 1 { "" } else { "s" };
            let by = if log.removed_by_later().0 > 0 { " and later recordings' segments count" } else { " counts" };
            self.notes.push(format!(
                "removed by the disk budget: segment{s} {}, {events} events (as {last}{by} them)",
                removed.join(", ")
            ));
        }
        for m in segments.missing().iter().filter(|m| m.gaps() > 0) {
            let next = segments.present().get(m.before).map_or("?", |e| e.name.as_str());
            let s = if m.gaps() == 1 { "" } else { "s" };
            self.problems.push(format!(
                "gap: segment{s} {} missing before {next} (deleted, moved or not given; not removed by the disk budget)",
                span(m.first_gap(), m.gaps())
            ));
        }
    }

    /// How the recording ended: killed (a problem), its marker against what is here (its
    /// disagreements are problems), or still recording, rotated, unrecorded (notes).
    fn ending(&mut self, l: &Ledger, log: &Log) {
        let header = log.header();
        let ending = ending(l, log);
        match &ending {
            Ending::Killed { .. } => self.problems.push(of_last_segment(l, ending_line(&ending, header))),
            Ending::Clean(Some(stop)) => {
                // What the writer wrote before its marker, against what is here: the records
                // every walk yields (an event, a record of an unknown code, or one with bad
                // arguments), the marker's block not counted (docs/FORMAT.md, "The clean stop").
                // (A full disk or a write error is a problem of its own, with its count.)
                if let Some(m) = l.marker() {
                    let of =
                        l.parts().last().and_then(|p| p.name).map(|n| format!("segment {n}: ")).unwrap_or_default();
                    marker_problems(&m, &of, &mut self.problems);
                }
                if let StopCause::Rotated | StopCause::Other(_) = stop.cause {
                    self.notes.push(ending_line(&ending, header));
                }
            }
            Ending::Clean(None) => {}
            Ending::Running | Ending::Unrecorded => self.notes.push(ending_line(&ending, header)),
        }
    }

    /// Writes the report: its title, notes, problems and verdict.
    fn write(&self, text: &mut String) {
        let _ = writeln!(text, "{}", self.title);
        for line in self.segments.iter().chain(&self.notes).chain(&self.problems) {
            let _ = writeln!(text, "  {line}");
        }
        if self.whole {
            let _ = writeln!(text, "  whole");
        } else {
            let n = self.problems.len();
            let _ = writeln!(text, "  NOT whole: {n} problem{}", if n == 1 { "" } else { "s" });
        }
    }
}

/// What a ring file's pin area (docs/FORMAT.md, "Pin area") held, for `stats` and `check`:
/// its records put back before their threads' rings, the pins dropped, its damage. `None`
/// for a file without a pin area (nor any sign of one). `check` says the damage as a problem
/// of its own (`with_damage` false).
fn pin_line(log: &Log, findings: &ring::RingFindings, with_damage: bool) -> Option<String> {
    let has_area = log.ring_layout().is_some_and(|l| l.pin_half > 0);
    if !has_area && findings.pin_damage.is_none() && findings.pins_dropped == 0 && findings.pinned == 0 {
        return None;
    }
    let damage = findings.pin_damage.as_ref().filter(|_| with_damage).map(|why| format!("damaged: {why}; "));
    let damage = damage.unwrap_or_default();
    Some(format!(
        "pin area: {damage}{} pinned records put back in {} blocks, {} pins dropped (the area keeps the latest)",
        findings.pinned, findings.pinned_blocks, findings.pins_dropped
    ))
}

/// What a stop marker's counts and what was read before it disagree in, as problems; `of`
/// names the segment (empty for a log of one file).
fn marker_problems(m: &Marker, of: &str, problems: &mut Vec<String>) {
    let (written, read) = (m.written, m.read);
    if written.blocks != read.blocks {
        problems.push(format!(
            "{of}blocks: the writer wrote {} before its stop marker, {} are here",
            written.blocks, read.blocks
        ));
    }
    if written.events != read.events {
        problems.push(format!("{of}events: the writer wrote {}, {} are here", written.events, read.events));
    }
    if written.lost != read.lost {
        problems.push(format!("{of}losses: the writer counted {} lost, the log reports {}", written.lost, read.lost));
    }
}
