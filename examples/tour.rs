//! The tour: an arena allocator with pools, segments and objects, on four threads, records a
//! trace of the workspace's events.def; then the trace is decoded and shown.
//!
//! Run it with `cargo run --release --example tour`.
//!
//! Recording here goes through `event-format`'s reference block writer, one per thread, and
//! the stream is decoded with its streaming decoder: the stream format end to end.

use event_format::decode::{Catalog, Decoder, Entry};
use event_format::schema::Schema;
use event_format::wire::{
    BlockHeader, BlockWriter, Clock, ClockSource, Header, Order, Producer, Text, Value,
};
use event_format::{builtin, text};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

const BLOCK_SIZE: u32 = 64 * 1024;
const SEGMENT_SIZE: usize = 64 * 1024;
const SEGMENTS: usize = 96;
const WORKERS: u64 = 4;
const OPERATIONS: u64 = 40_000;

// ---------------------------------------------------------------------------------------
// A small recorder: one block writer per thread, sealed blocks collected in order.

struct Recorder {
    schema: Schema,
    start: Instant,
    blocks: Mutex<Vec<Vec<u8>>>,
}

struct ThreadLog {
    recorder: Arc<Recorder>,
    thread: u64,
    sequence: u64,
    writer: BlockWriter,
}

impl Recorder {
    fn code(&self, name: &str) -> u16 {
        match self.schema.event(name) {
            Some(event) => event.code,
            None => panic!("events.def has no event `{name}`"),
        }
    }

    fn ticks(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn thread(self: &Arc<Self>, thread: u64, name: &str) -> ThreadLog {
        let header = BlockHeader { thread, base_time: self.ticks(), ..Default::default() };
        let mut log = ThreadLog {
            recorder: Arc::clone(self),
            thread,
            sequence: 0,
            writer: BlockWriter::new(Order::NATIVE, BLOCK_SIZE, &header),
        };
        log.emit(builtin::THREAD_NAME, &[Value::Word(thread), Value::Str(Text::new(name))]);
        log
    }
}

impl ThreadLog {
    fn emit(&mut self, code: u16, values: &[Value<'_>]) {
        let time = self.recorder.ticks();
        if self.writer.push(code, time, values).is_err() {
            self.sequence += 1;
            let header = BlockHeader { thread: self.thread, sequence: self.sequence, base_time: time, ..Default::default() };
            let full = std::mem::replace(&mut self.writer, BlockWriter::new(Order::NATIVE, BLOCK_SIZE, &header));
            self.recorder.blocks.lock().expect("no thread panics holding it").push(full.finish());
            // An empty block takes any record: the writer cuts strings to fit.
            let _ = self.writer.push(code, time, values);
        }
    }
}

impl Drop for ThreadLog {
    fn drop(&mut self) {
        if !self.writer.is_empty() {
            let empty = BlockWriter::new(Order::NATIVE, BLOCK_SIZE, &BlockHeader::default());
            let last = std::mem::replace(&mut self.writer, empty);
            self.recorder.blocks.lock().expect("no thread panics holding it").push(last.finish());
        }
    }
}

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

    fn alloc(&mut self, log: &mut ThreadLog, rng: &mut Rng) -> Option<u64> {
        let r = log.recorder.clone();
        if let Some(addr) = self.free.pop() {
            self.live.push(addr);
            self.allocated += 1;
            log.emit(r.code("ObjectAlloc"), &[Value::Pointer(self.id), Value::Address(addr), Value::Word(self.size as u64), Value::Unsigned(0)]);
            return Some(addr);
        }
        let per_segment = SEGMENT_SIZE / self.size;
        if self.segments.is_empty() || self.next == per_segment {
            if let Some(seg) = self.arena.segment() {
                log.emit(r.code("SegAlloc"), &[Value::Pointer(self.object(seg, 0)), Value::Pointer(self.id), Value::Address(self.object(seg, 0)), Value::Word(SEGMENT_SIZE as u64)]);
                self.segments.push(seg);
                self.next = 0;
            } else if !self.sweep(log, rng, "arena exhausted") {
                log.emit(r.code("AllocFail"), &[Value::Pointer(self.id), Value::Word(self.size as u64), Value::Str(Text::new("arena exhausted, nothing to reclaim"))]);
                return None;
            } else {
                return self.alloc(log, rng);
            }
        }
        let seg = *self.segments.last()?;
        let addr = self.object(seg, self.next * self.size);
        self.next += 1;
        self.live.push(addr);
        self.allocated += 1;
        log.emit(r.code("ObjectAlloc"), &[Value::Pointer(self.id), Value::Address(addr), Value::Word(self.size as u64), Value::Unsigned(1)]);
        Some(addr)
    }

    fn free_one(&mut self, log: &mut ThreadLog, index: usize) {
        let addr = self.live.swap_remove(index);
        self.free.push(addr);
        self.freed += 1;
        log.emit(log.recorder.code("ObjectFree"), &[Value::Pointer(self.id), Value::Address(addr), Value::Word(self.size as u64)]);
    }

    /// Frees about a third of the live objects, chosen at random: the "dead" ones.
    fn sweep(&mut self, log: &mut ThreadLog, rng: &mut Rng, why: &str) -> bool {
        let r = log.recorder.clone();
        let epoch = self.freed;
        log.emit(r.code("SweepBegin"), &[Value::Pointer(self.id), Value::Word(epoch), Value::Str(Text::new(why))]);
        let condemned = self.live.len() as u64;
        log.emit(r.code("SweepCondemn"), &[Value::Pointer(self.id), Value::Word(epoch), Value::Word(condemned), Value::Double(1.0 / 3.0)]);
        for &seg in &self.segments {
            log.emit(r.code("SweepScan"), &[Value::Pointer(self.object(seg, 0)), Value::Address(self.object(seg, 0)), Value::Word(SEGMENT_SIZE as u64), Value::Unsigned((SEGMENT_SIZE / self.size) as u32)]);
        }
        let before = self.freed;
        let mut i = 0;
        while i < self.live.len() {
            if rng.next().is_multiple_of(3) { self.free_one(log, i) } else { i += 1 }
        }
        let reclaimed = self.freed - before;
        log.emit(r.code("SweepReclaim"), &[Value::Pointer(self.id), Value::Word(epoch), Value::Word(reclaimed), Value::Signed(self.live.len() as i64 - condemned as i64)]);
        log.emit(r.code("SweepEnd"), &[Value::Pointer(self.id), Value::Word(epoch), Value::Bool(reclaimed > 0)]);
        reclaimed > 0
    }
}

fn worker(recorder: Arc<Recorder>, arena: &Arena, index: u64) {
    let mut log = recorder.thread(index + 2, &format!("worker-{index}"));
    let r = &recorder;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (index + 1));
    let class = ["small", "medium", "large", "huge"][index as usize % 4];
    let mut pool = Pool { arena, id: 0x1000 + index, size: [16, 48, 128, 512][index as usize % 4], segments: Vec::new(), free: Vec::new(), live: Vec::new(), next: 0, allocated: 0, freed: 0 };
    log.emit(r.code("PoolInit"), &[Value::Pointer(pool.id), Value::Pointer(arena.base()), Value::Str(Text::new(class)), Value::Unsigned(pool.size as u32)]);
    log.emit(r.code("ClientPhase"), &[Value::Str(Text::new("churn")), Value::Word(index), Value::Signed(0)]);
    for op in 0..OPERATIONS {
        match rng.next() % 10 {
            0..=5 => { pool.alloc(&mut log, &mut rng); }
            6..=8 if !pool.live.is_empty() => {
                let i = (rng.next() % pool.live.len() as u64) as usize;
                pool.free_one(&mut log, i);
            }
            _ => {
                if let Some(&addr) = pool.live.last() {
                    let moved = rng.next().is_multiple_of(2);
                    log.emit(r.code("ObjectResize"), &[Value::Pointer(pool.id), Value::Address(addr), Value::Word(pool.size as u64), Value::Word(pool.size as u64 * 2), Value::Bool(moved)]);
                }
            }
        }
        if op % 5000 == 4999 {
            let fragmentation = pool.free.len() as f64 / (pool.live.len() + pool.free.len()).max(1) as f64;
            log.emit(r.code("PoolStats"), &[Value::Pointer(pool.id), Value::Word(pool.allocated), Value::Word(pool.freed), Value::Word(pool.live.len() as u64), Value::Double(fragmentation)]);
        }
    }
    let ok = pool.allocated - pool.freed == pool.live.len() as u64;
    log.emit(r.code("ClientCheck"), &[Value::Bool(ok), Value::Str(Text::new("balance")), Value::Str(Text::new(if ok { "allocated - freed = live" } else { "MISMATCH" }))]);
    for seg in std::mem::take(&mut pool.segments) {
        log.emit(r.code("SegFree"), &[Value::Pointer(pool.object(seg, 0)), Value::Pointer(pool.id), Value::Word(SEGMENT_SIZE as u64)]);
        arena.release(seg);
    }
    log.emit(r.code("PoolFinish"), &[Value::Pointer(pool.id), Value::Word(pool.live.len() as u64)]);
}

fn main() {
    let schema = match event_format::def::parse(include_str!("../events.def"), "events.def") {
        Ok(schema) => schema,
        Err(errors) => {
            eprintln!("{errors}");
            std::process::exit(1);
        }
    };
    let start_wall = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64);
    let recorder = Arc::new(Recorder { schema, start: Instant::now(), blocks: Mutex::new(Vec::new()) });
    let clock = Clock { source: ClockSource::Monotonic, ticks_per_second: 1_000_000_000, ref_ticks: 0, ref_wall_ns: start_wall, start_ticks: 0 };
    let header = Header::new(recorder.schema.clone(), BLOCK_SIZE, clock, Producer::current(start_wall));

    let arena = Arena { memory: vec![0u8; SEGMENTS * SEGMENT_SIZE].into_boxed_slice(), free_segments: Mutex::new((0..SEGMENTS).rev().collect()) };
    let began = Instant::now();
    {
        let mut main_log = recorder.thread(1, "main");
        let r = &recorder;
        main_log.emit(builtin::INTERN, &[Value::Word(1), Value::Str(Text::new("the tour's arena"))]);
        main_log.emit(builtin::LABEL, &[Value::Address(arena.base()), Value::Word(1)]);
        main_log.emit(r.code("ArenaCreate"), &[Value::Pointer(arena.base()), Value::Address(arena.base()), Value::Word(arena.memory.len() as u64)]);
        main_log.emit(builtin::MESSAGE, &[Value::Str(Text::new("starting 4 workers"))]);
        std::thread::scope(|s| {
            for i in 0..WORKERS {
                let recorder = Arc::clone(&recorder);
                let arena = &arena;
                s.spawn(move || worker(recorder, arena, i));
            }
        });
        let free = arena.free_segments.lock().expect("workers are done").len();
        main_log.emit(r.code("ArenaPoll"), &[Value::Pointer(arena.base()), Value::Word(((SEGMENTS - free) * SEGMENT_SIZE) as u64), Value::Double((SEGMENTS - free) as f64 / SEGMENTS as f64)]);
        main_log.emit(r.code("ClientMark"), &[]);
        main_log.emit(r.code("ArenaDestroy"), &[Value::Pointer(arena.base()), Value::Word(((SEGMENTS - free) * SEGMENT_SIZE) as u64)]);
    }
    let elapsed = began.elapsed();

    // Write the stream: the header, then every block.
    let mut stream = match header.encode() {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("tour: {e}");
            std::process::exit(1);
        }
    };
    for block in recorder.blocks.lock().expect("all threads are done").iter() {
        stream.extend_from_slice(block);
    }
    let path = PathBuf::from(std::env::var_os("EVENT_FILE").unwrap_or_else(|| "target/tour.evt".into()));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = std::fs::write(&path, &stream) {
        eprintln!("tour: cannot write {}: {e}; set EVENT_FILE to a writable path", path.display());
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
    let catalog = Catalog::new(&header.schema);
    // The earliest events by time, whatever block they are in: a max-heap of at most EXCERPT.
    const EXCERPT: usize = 16;
    let mut lines: std::collections::BinaryHeap<(u64, String)> = std::collections::BinaryHeap::new();
    let mut per_event: BTreeMap<String, u64> = BTreeMap::new();
    let mut per_kind: BTreeMap<String, u64> = BTreeMap::new();
    let mut per_thread: BTreeMap<u64, u64> = BTreeMap::new();
    let (mut blocks, mut damaged, mut events, mut record_bytes) = (0u64, 0u64, 0u64, 0u64);
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
        record_bytes += u64::from(block.header.used);
        for entry in block.entries(&catalog) {
            let Entry::Event(event) = entry else { continue };
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
    println!("The tour ran an arena allocator on {WORKERS} threads for {:.1} ms and recorded {events} events.", elapsed.as_secs_f64() * 1e3);
    println!("Trace: {} ({} bytes, format {}, {} blocks of {} bytes, {} byte order)\n", path.display(), header.block_size as u64 * blocks, header.format, blocks, header.block_size, header.order.name());
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
    println!("\nEvents per thread: {}", per_thread.iter().map(|(t, n)| format!("T{t}={n}")).collect::<Vec<_>>().join(" "));
    let span = header.clock.seconds_since_start(last) - header.clock.seconds_since_start(first.min(last));
    println!("Time span {:.6} s, {:.1} bytes per event in records, {damaged} damaged blocks.", span, record_bytes as f64 / events.max(1) as f64);
    println!("\nExplore further:");
    println!("  docs/FORMAT.md            how every byte of {} is laid out", path.display());
    println!("  events.def                the event relation this trace embeds");
    println!("  cargo test --workspace    the format's tests, including checked-in streams in both byte orders");
}
