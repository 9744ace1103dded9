//! What the workspace tests (`it/runtime.rs`) and the crash soak (`bin/soak.rs`) share: decoding
//! the numbered events that `recorder-child` records, and checking the ring file a crashed
//! (or stopped) `recorder-child` left behind. The typed-reader tests of the examples and of
//! `tests/sets/app` share [`json_of`], the oracle they hold `event-dump`'s JSON against. The
//! tests of all three make their files in a [`Scratch`] directory, removed when they pass.
//!
//! Every check returns an error message instead of panicking, so that the soak can report a
//! failure as one line with the round that replays it.

use event_format::decode::{Catalog, Decoder, Entry};
use event_format::ring::{RingFindings, RingReader, RingStream, STATE_CLOSED, STATE_CREATING, STATE_RECORDING};
use event_format::wire::Value;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
pub use test_scratch::Scratch;

/// `ArenaDestroy`'s code in events.def: `recorder-child` records `ArenaDestroy(worker, i)`,
/// the `i`-th event (from 0) of worker `worker`.
pub const NUMBERED: u16 = 0x0002;

/// What a stream of `recorder-child` holds, as far as the crash checks care.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Numbered {
    /// Per worker, the numbers of its events in stream order.
    pub by_worker: BTreeMap<u64, Vec<u64>>,
    /// Per worker, the thread that recorded it.
    pub thread_of: BTreeMap<u64, u64>,
    /// Per thread, the sequence number of its first block in the stream (the blocks before
    /// it were overwritten, dropped or never written).
    pub first_block: BTreeMap<u64, u64>,
    /// Blocks in the stream.
    pub blocks: u64,
    /// Events in the stream, built-in events included (what `event-dump check` counts).
    pub events: u64,
}

impl Numbered {
    /// Numbered events, over all workers.
    pub fn numbered_events(&self) -> u64 {
        self.by_worker.values().map(|n| n.len() as u64).sum()
    }
}

/// Decodes `stream` and gathers its numbered events. An error names the first thing that is
/// not whole: a refused header, a damaged block, a bad or unknown record, a thread whose
/// blocks are not consecutive, a worker recorded by two threads.
pub fn numbered(stream: &[u8]) -> Result<Numbered, String> {
    let mut decoder = Decoder::new(stream).map_err(|e| format!("the stream's header is refused: {e}"))?;
    let catalog = Catalog::new(&decoder.header().sets);
    let mut out = Numbered::default();
    let mut last_block: BTreeMap<u64, u64> = BTreeMap::new();
    while let Some(block) = decoder.next_block() {
        let block = block.map_err(|e| format!("a damaged block: {e}"))?;
        let (thread, sequence) = (block.header.thread, block.header.sequence);
        out.blocks += 1;
        out.first_block.entry(thread).or_insert(sequence);
        if let Some(last) = last_block.insert(thread, sequence)
            && sequence != last + 1
        {
            return Err(format!("thread {thread}: block {sequence} follows block {last}"));
        }
        for entry in block.entries(&catalog) {
            let event = match entry {
                Entry::Event(e) => e,
                other => {
                    return Err(format!("thread {thread}, block {sequence}: a record that does not decode: {other:?}"));
                }
            };
            out.events += 1;
            if event.desc.code != NUMBERED {
                continue;
            }
            let v: Vec<Value<'_>> = event.values().collect();
            let (Some(Value::Pointer(w)), Some(Value::Word(i))) = (v.first(), v.get(1)) else {
                return Err(format!("thread {thread}, block {sequence}: a numbered event with arguments {v:?}"));
            };
            if let Some(t) = out.thread_of.insert(*w, thread)
                && t != thread
            {
                return Err(format!("worker {w} was recorded by threads {t} and {thread}"));
            }
            out.by_worker.entry(*w).or_default().push(*i);
        }
    }
    Ok(out)
}

/// Reads the ring file at `path` as a stream, as `event-dump` does, with what the reader
/// found on the way.
pub fn read_ring(path: &Path) -> Result<(Vec<u8>, RingFindings), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: cannot open: {e}", path.display()))?;
    let reader = RingReader::open(file, Default::default()).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut stream = RingStream::new(reader);
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    Ok((bytes, stream.findings().clone()))
}

/// The name of a ring file state, for messages.
pub fn state_name(state: u32) -> &'static str {
    match state {
        STATE_CREATING => "creating",
        STATE_RECORDING => "recording",
        STATE_CLOSED => "closed",
        _ => "unknown",
    }
}

/// What [`check_ring`] found in a ring file that passed.
#[derive(Clone, Debug)]
pub struct RingCheck {
    /// What the ring reader found.
    pub findings: RingFindings,
    /// The events.
    pub numbered: Numbered,
}

impl RingCheck {
    /// Threads whose first blocks were overwritten.
    pub fn threads_overwritten(&self) -> usize {
        self.numbered.first_block.values().filter(|&&s| s > 0).count()
    }
}

/// Checks the ring file that `recorder-child` (modes `ring` and `crash`) left at `path`
/// after it was killed, aborted or panicked while `workers` workers recorded:
///
/// - the file is in `state` ([`STATE_RECORDING`] after a kill or an abort, which close
///   nothing; [`STATE_CLOSED`] when the program unwound and dropped its recording);
/// - no block is damaged and every record decodes;
/// - every worker has events, and they form a gap-free run: from 0 when nothing of its
///   thread was overwritten, and otherwise consecutive from where its thread's first block
///   still in the file begins, the overwrite counted by the reader;
/// - the reader's count of overwritten blocks is the sum of the blocks missing before each
///   thread's first block;
/// - nothing was refused or lost (the child gives every worker a slot), except, in a closed
///   file, events that threads recorded while the recording stopped: those are counted as
///   lost (the file's `lost` word).
pub fn check_ring(path: &Path, state: u32, workers: u64) -> Result<RingCheck, String> {
    let (stream, findings) = read_ring(path)?;
    if findings.state != state {
        return Err(format!("the file's state is {}, expected {}", state_name(findings.state), state_name(state)));
    }
    if let Some((slot, sequence, why)) = findings.damaged.first() {
        return Err(format!(
            "{} damaged blocks; the first: slot {slot}, block {sequence}: {why}",
            findings.damaged.len()
        ));
    }
    let numbered = numbered(&stream)?;
    for w in 0..workers {
        let Some(ns) = numbered.by_worker.get(&w) else {
            return Err(format!("worker {w}: no event in the file, though it recorded before the crash"));
        };
        if let Some(p) = ns.windows(2).find(|p| p[1] != p[0] + 1) {
            return Err(format!("worker {w}: event {} follows event {}: a gap or a repeat", p[1], p[0]));
        }
        let thread = numbered.thread_of[&w];
        let first_block = numbered.first_block.get(&thread).copied().unwrap_or(0);
        match (ns[0] == 0, first_block == 0) {
            (true, true) | (false, false) => {}
            (false, true) => {
                return Err(format!(
                    "worker {w}: starts at event {} though block 0 of its thread {thread} is in the file",
                    ns[0]
                ));
            }
            (true, false) => {
                return Err(format!(
                    "worker {w}: starts at event 0 though its thread {thread} starts at block {first_block}"
                ));
            }
        }
    }
    if let Some(w) = numbered.by_worker.keys().find(|&&w| w >= workers) {
        return Err(format!("events of a worker {w} that does not exist"));
    }
    let missing: u64 = numbered.first_block.values().sum();
    if missing != findings.overwritten_blocks {
        return Err(format!(
            "the reader counts {} overwritten blocks, but the threads' first blocks say {missing}",
            findings.overwritten_blocks
        ));
    }
    // Events recorded while the recording stops (other threads still run when a panic
    // unwinds `main`) are counted as lost; anything else would be a loss to explain.
    let lost_allowed = state == STATE_CLOSED;
    if findings.refused != 0 || (findings.lost != 0 && !lost_allowed) || findings.threads_without_slot != 0 {
        return Err(format!(
            "losses where there should be none: {} refused, {} lost, {} threads without a slot",
            findings.refused, findings.lost, findings.threads_without_slot
        ));
    }
    Ok(RingCheck { findings, numbered })
}

/// A value as docs/OUTPUT.md says `event-dump`'s JSON writes it, written here independently
/// of event-dump's writer: the typed reader's values, put through this, must equal what
/// `event-dump print --format json` printed for the same event.
pub fn json_of(v: Value<'_>) -> serde_json::Value {
    const EXACT: u64 = (1 << 53) - 1;
    match v {
        Value::Pointer(x) | Value::Address(x) => json!(format!("{x:#x}")),
        Value::Word(x) if x <= EXACT => json!(x),
        Value::Word(x) => json!(x.to_string()),
        Value::Unsigned(x) => json!(x),
        Value::Signed(x) if x.unsigned_abs() <= EXACT => json!(x),
        Value::Signed(x) => json!(x.to_string()),
        Value::Double(x) if x.is_nan() => json!("NaN"),
        Value::Double(x) if x.is_infinite() => json!(if x > 0.0 { "inf" } else { "-inf" }),
        Value::Double(x) => json!(x),
        Value::Bool(x) => json!(x),
        Value::Str(t) => json!(t.to_string_lossy()),
    }
}
