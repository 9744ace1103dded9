//! The allocation replayer (design.mps.telemetry `.replayer`): reads the tour's log with the
//! typed reader that `include_events!` generates from the same events.def that wrote it, and
//! replays its allocation sequence (`ObjectAlloc`, `ObjectFree`, `ObjectResize`) into a model
//! of the pools, checking what the log claims:
//!
//! - a free or a resize is of an address the pool holds live, with the size it was allocated
//!   with; an allocation is not of an address already live;
//! - every `PoolStats` agrees with the model at that point: objects allocated, freed and live,
//!   and the live bytes (live objects times the pool's object size, `PoolInit`'s `align`);
//! - `PoolFinish` says as many live objects as the model holds.
//!
//! The tour's allocator resizes an object in place, within the slot of its size class: a
//! resize changes no pool's live bytes, and the replay counts it without applying it.
//!
//! The typed reader hands out each thread's events in order, not the threads merged by time;
//! the replay needs no more, since each of the tour's pools is used by one thread (it checks
//! that too).
//!
//! Run the tour first, then `cargo run --release --example replay [LOG]` (the log is
//! `target/tour.evt`, or the path in `EVENT_FILE`). It exits with 1 and one line when a claim
//! fails or the log cannot be read.

event_runtime::include_events!("../events.def");

use event_runtime::read::Item;
use events::Event;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::ExitCode;

/// What the replay knows of one pool.
#[derive(Default)]
struct Pool {
    class: String,
    /// Its object size (`PoolInit`'s `align`), 0 until `PoolInit`.
    size: u64,
    /// The thread that uses it.
    thread: Option<u64>,
    /// Live objects: address and allocated size.
    live: HashMap<u64, u64>,
    live_bytes: u64,
    allocated: u64,
    freed: u64,
    resized: u64,
    /// The last `PoolStats` (seconds, live objects), checked when it came.
    last_stats: Option<(f64, u64)>,
    finished: bool,
}

struct Replay {
    pools: BTreeMap<u64, Pool>,
    /// Claims that failed, in the order found.
    failures: Vec<String>,
    stats_checked: u64,
    object_events: u64,
}

impl Replay {
    fn pool(&mut self, pool: u64, thread: u64) -> &mut Pool {
        let p = self.pools.entry(pool).or_default();
        if *p.thread.get_or_insert(thread) != thread {
            self.failures.push(format!(
                "pool {pool:#x} is used by threads T{} and T{thread}: a per-thread replay cannot order it",
                p.thread.unwrap_or_default()
            ));
        }
        p
    }

    fn event(&mut self, thread: u64, seconds: f64, event: Event<'_>) {
        let at = format!("at {seconds:.9} s, T{thread}");
        let mut fail = Vec::new();
        match event {
            Event::PoolInit { pool, class, align, .. } => {
                let p = self.pool(pool, thread);
                p.class = class.to_string_lossy().into_owned();
                p.size = u64::from(align);
            }
            Event::ObjectAlloc { pool, addr, size, .. } => {
                self.object_events += 1;
                let p = self.pool(pool, thread);
                if p.live.insert(addr, size).is_some() {
                    fail.push(format!("{at}: pool {pool:#x} allocates {addr:#x}, which is live"));
                } else {
                    p.live_bytes += size;
                }
                p.allocated += 1;
            }
            Event::ObjectFree { pool, addr, size } => {
                self.object_events += 1;
                let p = self.pool(pool, thread);
                match p.live.remove(&addr) {
                    None => fail.push(format!("{at}: pool {pool:#x} frees {addr:#x}, which is not live")),
                    Some(had) if had != size => {
                        fail.push(format!(
                            "{at}: pool {pool:#x} frees {addr:#x} as {size} bytes; it was allocated with {had}"
                        ));
                        p.live_bytes -= had;
                    }
                    Some(had) => p.live_bytes -= had,
                }
                p.freed += 1;
            }
            Event::ObjectResize { pool, addr, old_size, .. } => {
                self.object_events += 1;
                let p = self.pool(pool, thread);
                match p.live.get(&addr) {
                    None => fail.push(format!("{at}: pool {pool:#x} resizes {addr:#x}, which is not live")),
                    Some(&had) if had != old_size => fail.push(format!(
                        "{at}: pool {pool:#x} resizes {addr:#x} from {old_size} bytes; it was allocated with {had}"
                    )),
                    Some(_) => {}
                }
                p.resized += 1;
            }
            Event::PoolStats { pool, allocated, freed, live, .. } => {
                self.stats_checked += 1;
                let p = self.pool(pool, thread);
                let model = (p.allocated, p.freed, p.live.len() as u64, p.live_bytes);
                let claimed = (allocated, freed, live, live * p.size);
                if model != claimed {
                    fail.push(format!(
                        "{at}: PoolStats of pool {pool:#x} claims {allocated} allocated, {freed} freed, {live} live \
                         ({} bytes); the replay has {} allocated, {} freed, {} live ({} bytes)",
                        claimed.3, model.0, model.1, model.2, model.3
                    ));
                }
                p.last_stats = Some((seconds, live));
            }
            Event::PoolFinish { pool, live } => {
                let p = self.pool(pool, thread);
                p.finished = true;
                if p.live.len() as u64 != live {
                    fail.push(format!(
                        "{at}: PoolFinish of pool {pool:#x} claims {live} live objects; the replay has {}",
                        p.live.len()
                    ));
                }
            }
            _ => {}
        }
        self.failures.append(&mut fail);
    }
}

fn main() -> ExitCode {
    let path = std::env::args_os()
        .nth(1)
        .or_else(|| std::env::var_os("EVENT_FILE"))
        .map_or_else(|| PathBuf::from("target/tour.evt"), PathBuf::from);
    let shown = path.display();
    let mut reader = match events::read(&path) {
        Ok(reader) => reader,
        Err(e) => {
            eprintln!("replay: {shown}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut replay = Replay { pools: BTreeMap::new(), failures: Vec::new(), stats_checked: 0, object_events: 0 };
    while let Some(item) = reader.next_item() {
        match item {
            Item::Event(at, event) => replay.event(at.thread, at.seconds, event),
            Item::Damaged(e) => eprintln!("replay: {shown}: {e}"),
            Item::Bad { thread, error } => eprintln!("replay: {shown}: T{thread}: {error}"),
            // Losses are counted in the summary; other sets, built-in events and events this
            // program does not know play no part in the allocation sequence.
            _ => {}
        }
    }
    // A ring file's blocks its reader left out are counted as damaged, once the log is read.
    let summary = reader.summary();
    let set = events::SET.name();
    println!("Replayed {shown}: {} events of set `{set}` ({} others)", summary.events, summary.other);
    for (id, p) in &replay.pools {
        let stats = p.last_stats.map_or_else(
            || "no PoolStats".to_owned(),
            |(s, live)| format!("its last PoolStats, at {s:.6} s, said {live} live"),
        );
        println!(
            "  pool {id:#x} {:?} ({}-byte objects, T{}): {} allocated, {} freed, {} resized, {} live ({} bytes){}; {stats}",
            p.class,
            p.size,
            p.thread.unwrap_or_default(),
            p.allocated,
            p.freed,
            p.resized,
            p.live.len(),
            p.live_bytes,
            if p.finished { ", finished" } else { "" },
        );
    }
    let whole = summary.is_whole();
    if !whole {
        println!(
            "The log is not whole: {} events lost, {} blocks missing, {} damaged blocks, {} bad records: \
             the replay may disagree with it.",
            summary.lost, summary.missing_blocks, summary.damaged_blocks, summary.bad_records
        );
    }
    if replay.object_events == 0 && replay.stats_checked > 0 {
        replay.failures.insert(0, format!(
            "the log holds no Object events (recorded without kind Object?), so its {} PoolStats cannot be replayed",
            replay.stats_checked
        ));
    }
    if let Some(first) = replay.failures.first() {
        let more = replay.failures.len() - 1;
        let more = if more > 0 { format!(" (and {more} more claims fail)") } else { String::new() };
        eprintln!("replay: {shown}: {first}{more}");
        return ExitCode::FAILURE;
    }
    println!(
        "Every claim holds: {} PoolStats and {} frees, resizes and allocations replayed without a contradiction.",
        replay.stats_checked, replay.object_events
    );
    ExitCode::SUCCESS
}
