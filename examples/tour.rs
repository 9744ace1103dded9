//! The tour: an arena allocator with pools, segments and objects, on four threads, annotated
//! with the events of the workspace's events.def; it records a trace, then decodes it and
//! shows an excerpt and statistics.
//!
//! Run it with `cargo run --release --example tour`.

event_runtime::include_events!("../events.def");

use event_format::decode::{Catalog, Decoder, Entry};
use event_format::text;
use event_format::wire::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

const SEGMENT_SIZE: usize = 64 * 1024;
const SEGMENTS: usize = 96;
const WORKERS: u64 = 4;
const OPERATIONS: u64 = 40_000;

// ---------------------------------------------------------------------------------------
// The arena allocator: the arena hands out segments; each pool carves objects of one size
// class out of its segments, keeps a free list, and sweeps dead objects when it runs out.

struct Arena {
    memory: Box<[u8]>,
    free_segments: Mutex<Vec<usize>>,
}

impl Arena {
    fn base(&self) -> u64 {
        self.memory.as_ptr() as u64
    }

    fn segment(&self) -> Option<usize> {
        self.free_segments.lock().expect("no thread panics holding it").pop()
    }

    fn release(&self, index: usize) {
        self.free_segments.lock().expect("no thread panics holding it").push(index);
    }

    /// Records the arena's state: the bytes of its segments in use, and their share
    /// (`ArenaPoll`, whose `committed` and `load` events.def declares counters).
    fn poll(&self) {
        let free = self.free_segments.lock().expect("no thread panics holding it").len();
        let committed = ((SEGMENTS - free) * SEGMENT_SIZE) as u64;
        event!(ArenaPoll, self.base() as usize, committed, (SEGMENTS - free) as f64 / SEGMENTS as f64);
    }
}

struct Pool<'a> {
    arena: &'a Arena,
    id: u64,
    size: usize,
    segments: Vec<usize>,
    free: Vec<u64>,
    live: Vec<u64>,
    next: usize,
    allocated: u64,
    freed: u64,
}

/// A deterministic xorshift generator: the tour does the same work every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

impl<'a> Pool<'a> {
    fn object(&self, segment: usize, offset: usize) -> u64 {
        self.arena.base() + (segment * SEGMENT_SIZE + offset) as u64
    }

    fn alloc(&mut self, rng: &mut Rng) -> Option<u64> {
        if let Some(addr) = self.free.pop() {
            self.live.push(addr);
            self.allocated += 1;
            event!(ObjectAlloc, self.id as usize, addr, self.size as u64, 0u32);
            return Some(addr);
        }
        let per_segment = SEGMENT_SIZE / self.size;
        if self.segments.is_empty() || self.next == per_segment {
            if let Some(seg) = self.arena.segment() {
                let base = self.object(seg, 0);
                event!(SegAlloc, base as usize, self.id as usize, base, SEGMENT_SIZE as u64);
                self.segments.push(seg);
                self.next = 0;
            } else if !self.sweep(rng, "arena exhausted") {
                event!(AllocFail, self.id as usize, self.size as u64, "arena exhausted, nothing to reclaim");
                return None;
            } else {
                return self.alloc(rng);
            }
        }
        let seg = *self.segments.last()?;
        let addr = self.object(seg, self.next * self.size);
        self.next += 1;
        self.live.push(addr);
        self.allocated += 1;
        event!(ObjectAlloc, self.id as usize, addr, self.size as u64, 1u32);
        Some(addr)
    }

    fn free_one(&mut self, index: usize) {
        let addr = self.live.swap_remove(index);
        self.free.push(addr);
        self.freed += 1;
        event!(ObjectFree, self.id as usize, addr, self.size as u64);
    }

    /// Frees about a third of the live objects, chosen at random: the "dead" ones.
    fn sweep(&mut self, rng: &mut Rng, why: &str) -> bool {
        let epoch = self.freed;
        event!(SweepBegin, self.id as usize, epoch, why);
        let condemned = self.live.len() as u64;
        event!(SweepCondemn, self.id as usize, epoch, condemned, 1.0 / 3.0);
        for &seg in &self.segments {
            let base = self.object(seg, 0);
            event!(SweepScan, base as usize, base, SEGMENT_SIZE as u64, (SEGMENT_SIZE / self.size) as u32);
        }
        let before = self.freed;
        let mut i = 0;
        while i < self.live.len() {
            if rng.next().is_multiple_of(3) { self.free_one(i) } else { i += 1 }
        }
        let reclaimed = self.freed - before;
        event!(SweepReclaim, self.id as usize, epoch, reclaimed, self.live.len() as i64 - condemned as i64);
        event!(SweepEnd, self.id as usize, epoch, reclaimed > 0);
        reclaimed > 0
    }
}

/// A worker's pool churns objects, then finishes: its segments go back to the arena, which
/// the main thread frees (`SegFree`): each segment's `Segment` span of events.def begins on
/// the worker and ends on the main thread, and the `release` flow leads from the pool's
/// `PoolFinish` to them. Returns the pool and its segments.
fn worker(arena: &Arena, index: u64) -> (u64, Vec<usize>) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (index + 1));
    let class = ["small", "medium", "large", "huge"][index as usize % 4];
    let mut pool = Pool {
        arena,
        id: 0x1000 + index,
        size: [16, 48, 128, 512][index as usize % 4],
        segments: Vec::new(),
        free: Vec::new(),
        live: Vec::new(),
        next: 0,
        allocated: 0,
        freed: 0,
    };
    event_runtime::label(pool.id as usize, &format!("{class} pool"));
    event!(PoolInit, pool.id as usize, arena.base() as usize, class, pool.size as u32);
    event!(ClientPhase, "churn", index, 0);
    for op in 0..OPERATIONS {
        match rng.next() % 10 {
            0..=5 => {
                pool.alloc(&mut rng);
            }
            6..=8 if !pool.live.is_empty() => {
                let i = (rng.next() % pool.live.len() as u64) as usize;
                pool.free_one(i);
            }
            _ => {
                if let Some(&addr) = pool.live.last() {
                    let moved = rng.next().is_multiple_of(2);
                    event!(ObjectResize, pool.id as usize, addr, pool.size as u64, pool.size as u64 * 2, moved);
                }
            }
        }
        if op % 5000 == 4999 {
            let fragmentation = pool.free.len() as f64 / (pool.live.len() + pool.free.len()).max(1) as f64;
            event!(PoolStats, pool.id as usize, pool.allocated, pool.freed, pool.live.len() as u64, fragmentation);
        }
    }
    let ok = pool.allocated - pool.freed == pool.live.len() as u64;
    event!(ClientCheck, ok, "balance", if ok { "allocated - freed = live" } else { "MISMATCH" });
    event!(PoolFinish, pool.id as usize, pool.live.len() as u64);
    (pool.id, std::mem::take(&mut pool.segments))
}

fn main() {
    // The trace goes to target/tour.evt unless EVENT_FILE says otherwise; every other
    // EVENT_* variable applies too (docs/guide/configuration.md).
    let path = PathBuf::from(std::env::var_os("EVENT_FILE").unwrap_or_else(|| "target/tour.evt".into()));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::create_dir_all(dir);
    }
    let recording = match event_runtime::Recorder::new().file(&path).from_env() {
        Ok(recorder) => recorder.start(),
        Err(e) => Err(e.into()),
    };
    let recording = match recording {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tour: {e}");
            std::process::exit(1);
        }
    };
    let arena = Arena {
        memory: vec![0u8; SEGMENTS * SEGMENT_SIZE].into_boxed_slice(),
        free_segments: Mutex::new((0..SEGMENTS).rev().collect()),
    };
    let began = Instant::now();
    event_runtime::label(arena.base() as usize, "the tour's arena");
    event!(ArenaCreate, arena.base() as usize, arena.base(), arena.memory.len() as u64);
    event_runtime::message("starting 4 workers");
    let finished = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|i| {
                let arena = &arena;
                std::thread::Builder::new()
                    .name(format!("worker-{i}"))
                    // No flush needed: the stop takes what a thread recorded even when its
                    // thread-local destructors run after the scope ends.
                    .spawn_scoped(s, move || worker(arena, i))
                    .expect("the tour can start its threads")
            })
            .collect();
        // The main thread polls the arena while the workers run: the counters' samples.
        while !handles.iter().all(|h| h.is_finished()) {
            arena.poll();
            std::thread::sleep(std::time::Duration::from_micros(250));
        }
        handles.into_iter().map(|h| h.join().expect("workers do not panic")).collect::<Vec<_>>()
    });
    // The finished pools' segments go back to the arena.
    for (pool, segments) in finished {
        for seg in segments {
            let base = arena.base() + (seg * SEGMENT_SIZE) as u64;
            event!(SegFree, base as usize, pool as usize, SEGMENT_SIZE as u64);
            arena.release(seg);
        }
        arena.poll();
    }
    let free = arena.free_segments.lock().expect("workers are done").len();
    let committed = ((SEGMENTS - free) * SEGMENT_SIZE) as u64;
    event!(ClientMark);
    event!(ArenaDestroy, arena.base() as usize, committed);
    let elapsed = began.elapsed();
    // The file as written: EVENT_FILE may be a pattern (`trace-%p.evt`).
    let path = recording.file_path().unwrap_or(path);
    if let Err(e) = recording.stop() {
        eprintln!("tour: {e}");
        std::process::exit(1);
    }
    show(&path, elapsed);
}

/// Decodes the trace from its file and prints an excerpt and statistics.
fn show(path: &std::path::Path, elapsed: std::time::Duration) {
    let file = match std::fs::File::open(path) {
        Ok(f) => std::io::BufReader::new(f),
        Err(e) => {
            eprintln!("tour: cannot open {}: {e}", path.display());
            std::process::exit(1);
        }
    };
    let mut decoder = match Decoder::new(file) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("tour: {}: {e}", path.display());
            std::process::exit(1);
        }
    };
    let header = decoder.header().clone();
    let catalog = Catalog::new(&header.sets);
    // The earliest events by time, whatever block they are in: a max-heap of at most EXCERPT.
    const EXCERPT: usize = 16;
    let mut lines: std::collections::BinaryHeap<(u64, String)> = std::collections::BinaryHeap::new();
    let mut per_event: BTreeMap<String, u64> = BTreeMap::new();
    let mut per_kind: BTreeMap<String, u64> = BTreeMap::new();
    let mut per_thread: BTreeMap<u64, u64> = BTreeMap::new();
    let (mut blocks, mut damaged, mut events, mut record_bytes, mut lost) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut packed, mut stored_bytes) = (0u64, 0u64);
    // Per thread: lowest and highest block sequence number, and blocks seen: what is
    // missing below or between them was overwritten (ring policy) or dropped.
    let mut sequences: BTreeMap<u64, (u64, u64, u64)> = BTreeMap::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    while let Some(block) = decoder.next_block() {
        let block = match block {
            Ok(b) => b,
            Err(e) => {
                damaged += 1;
                eprintln!("tour: {e}");
                continue;
            }
        };
        blocks += 1;
        let seen = sequences.entry(block.header.thread).or_insert((u64::MAX, 0, 0));
        *seen = (seen.0.min(block.header.sequence), seen.1.max(block.header.sequence), seen.2 + 1);
        record_bytes += block.records.len() as u64;
        stored_bytes += block.stored_len;
        if block.header.flags & event_format::wire::BLOCK_PACKED != 0 {
            packed += 1;
        }
        lost += block.header.lost;
        for entry in block.entries(&catalog) {
            let Entry::Event(event) = entry else { continue };
            if event.desc.code == event_format::builtin::DROPPED {
                lost += event.values().nth(1).map_or(0, |v| if let Value::Word(n) = v { n } else { 0 });
            }
            events += 1;
            first = first.min(event.time);
            last = last.max(event.time);
            *per_event.entry(format!("{}.{}", event.desc.kind_name, event.desc.name)).or_default() += 1;
            *per_kind.entry(event.desc.kind_name.clone()).or_default() += 1;
            *per_thread.entry(event.thread).or_default() += 1;
            if lines.len() < EXCERPT || lines.peek().is_some_and(|(t, _)| event.time < *t) {
                let mut line = String::new();
                let _ = text::write_event(&mut line, &header.clock, &event);
                lines.push((event.time, line));
                if lines.len() > EXCERPT {
                    lines.pop();
                }
            }
        }
    }
    let lines = lines.into_sorted_vec();
    println!(
        "The tour ran an arena allocator on {WORKERS} threads for {:.1} ms and recorded {events} events.",
        elapsed.as_secs_f64() * 1e3
    );
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    println!(
        "Trace: {} ({size} bytes, format {}, {blocks} blocks of {} bytes, {packed} of them packed, {} byte order)\n",
        path.display(),
        header.format,
        header.block_size,
        header.order.name()
    );
    println!("The first events, threads merged by time (seconds since start, thread, Kind.Event, parameters):");
    for (_, line) in &lines {
        println!("  {line}");
    }
    println!("  ...\n");
    println!("Events per kind:");
    for (kind, n) in &per_kind {
        println!("  {kind:<8} {n:>9}");
    }
    println!("\nThe most frequent events:");
    let mut top: Vec<_> = per_event.iter().collect();
    top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (name, n) in top.iter().take(6) {
        println!("  {name:<22} {n:>9}");
    }
    println!(
        "\nEvents per thread: {}",
        per_thread.iter().map(|(t, n)| format!("T{t}={n}")).collect::<Vec<_>>().join(" ")
    );
    let span = header.clock.seconds_since_start(last) - header.clock.seconds_since_start(first.min(last));
    let missing: u64 = sequences.values().map(|&(lo, hi, n)| lo + (hi - lo + 1 - n)).sum();
    println!(
        "Time span {:.6} s, {:.1} bytes per event in records, {:.1} in the file, {lost} events lost, {missing} blocks overwritten or missing, {damaged} damaged blocks.",
        span,
        record_bytes as f64 / events.max(1) as f64,
        stored_bytes as f64 / events.max(1) as f64
    );
    let p = path.display();
    println!("\nExplore further:");
    println!("  cargo run -p event-dump -- {p} --limit 40                 every event, threads merged by time");
    println!("  cargo run -p event-dump -- stats {p}                      counts per event, kind and thread");
    println!("  cargo run -p event-dump -- print {p} --filter 'size >= 512 && name == ObjectAlloc' --limit 5");
    println!("  cargo run -p event-dump -- check {p}                      exit code 0 only when the trace is whole");
    println!("  cargo run -p event-dump -- latency {p} --by pool          how long Sweeps and Segments last");
    println!("  cargo run -p event-dump -- export --to perfetto {p} -o tour.pftrace    open it in ui.perfetto.dev");
    println!("  docs/guide/looking-at-a-trace.md   what the trace shows in Perfetto, and latency");
    println!("  docs/FORMAT.md            how every byte of {p} is laid out");
    println!("  EVENT_CONTROL='Pool Seg' cargo run --release --example tour    record only two kinds");
    println!(
        "  EVENT_POLICY=ring EVENT_BUFSIZE=1m cargo run --release --example tour    a flight recorder: the latest events"
    );
    println!("  EVENT_RING=target/tour.ring cargo run --release --example tour    also a crash-proof ring file");
}
