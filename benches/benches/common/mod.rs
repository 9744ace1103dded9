//! The cases both bench targets measure, each `fn(n) -> Duration` for `n` events, and the
//! baselines and peers beside them. `compare` runs them side by side; `emit` runs them under
//! criterion. The bench target includes `bench.def` at its root, before this module.

#![allow(dead_code, unreachable_pub)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How to run `n` events of a case: its time.
pub type Run = fn(u64) -> Duration;

/// A case: its name and how to run `n` events of it.
pub struct Case {
    pub name: &'static str,
    pub run: Run,
}

// ---- baselines ---------------------------------------------------------------------------

/// An empty loop: the floor of a compiled-out event.
pub fn empty_loop(n: u64) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        black_box(i);
    }
    start.elapsed()
}

/// Pins the calling thread to CPU `cpu` (modulo the CPUs this process may use), so that a
/// measured thread does not migrate between cores mid-sample; `false` where the platform
/// does not allow it (the figures are then unpinned, and the tables say so).
pub fn pin(cpu: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        let cpus = online_cpus();
        // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes within it for a
        // CPU below CPU_SETSIZE (cpus is at most the process's CPUs, far below 1024), and
        // sched_setaffinity(0, ..) reads the set for the calling thread only.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu % cpus, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        false
    }
}

/// Lets the calling thread run on every CPU again (child processes inherit the affinity:
/// the dumper's parallel `print` must not be confined to one core).
pub fn unpin() {
    #[cfg(target_os = "linux")]
    {
        let cpus = online_cpus();
        // SAFETY: as in `pin`: a valid set, CPUs below CPU_SETSIZE, this thread only.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for cpu in 0..cpus {
                libc::CPU_SET(cpu, &mut set);
            }
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
}

/// The CPUs online: not `available_parallelism`, which counts only those the calling
/// thread's affinity allows (one, once pinned).
#[cfg(target_os = "linux")]
fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).clamp(1, libc::CPU_SETSIZE as usize)
}

static MASK: AtomicU64 = AtomicU64::new(0);

/// A loop with one relaxed load and a bit test: the floor of a disabled event.
pub fn relaxed_load_loop(n: u64) -> Duration {
    // The mask's address escapes, so that the compiler cannot know it is never written: a
    // static nothing stores to is a constant to it, and the loop was the empty loop (the
    // two functions were folded into one, at one address).
    black_box(&MASK);
    let start = Instant::now();
    for i in 0..n {
        if MASK.load(Ordering::Relaxed) & 2 != 0 {
            black_box(i);
        }
        black_box(i);
    }
    start.elapsed()
}

/// The cycle counter, as the recorder reads it where it is invariant.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86_64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// What a perfect tracer costs: read the cycle counter and store a record of the same size
/// as the recorder's (8-byte header of code, length and time delta, then `WORDS` words) into
/// a preallocated buffer, wrapping around.
pub fn floor<const WORDS: usize>(n: u64) -> Duration {
    let len = 8 + 8 * WORDS;
    let mut buf = vec![0u8; 64 << 10];
    let mut at = 0;
    let mut last = ticks();
    let start = Instant::now();
    for i in 0..n {
        let now = ticks();
        if at + len > buf.len() {
            at = 0;
            black_box(&mut buf);
        }
        let record = &mut buf[at..at + len];
        record[..2].copy_from_slice(&3u16.to_ne_bytes());
        record[2..4].copy_from_slice(&(len as u16).to_ne_bytes());
        record[4..8].copy_from_slice(&(now.wrapping_sub(last) as u32).to_ne_bytes());
        for w in 0..WORDS {
            record[8 + 8 * w..16 + 8 * w].copy_from_slice(&(i + w as u64).to_ne_bytes());
        }
        last = now;
        at += len;
    }
    black_box(&buf);
    start.elapsed()
}

/// What a thread buffer keeps between two events, in memory: where the next record goes,
/// the last time, the records of the block, and the word that commits them.
#[derive(Default)]
pub struct FloorState {
    at: usize,
    last: u64,
    records: u64,
    committed: u64,
}

/// The floor (as [`floor`]`::<3>`) with its state in memory (a [`FloorState`] that the
/// compiler must load and store each event, as a recorder's thread buffer is): the position,
/// the last time and a record count read and written each event, and a commit word stored.
/// What keeping a thread's state between events costs beside the cycle counter and the
/// record's stores (issue 43: where the default's time goes, beside its instructions).
pub fn floor_in_memory(n: u64) -> Duration {
    const LEN: usize = 32;
    let mut buf = vec![0u8; 64 << 10];
    let mut state = FloorState { last: ticks(), ..FloorState::default() };
    let start = Instant::now();
    for i in 0..n {
        // Reached through an opaque reference, as a thread-local is: loaded and stored each
        // event, never kept in registers across events.
        let state = black_box(&mut state);
        let now = ticks();
        let mut at = state.at;
        if at + LEN > buf.len() {
            at = 0;
            black_box(&mut buf);
        }
        let record = &mut buf[at..at + LEN];
        record[..2].copy_from_slice(&3u16.to_ne_bytes());
        record[2..4].copy_from_slice(&(LEN as u16).to_ne_bytes());
        record[4..8].copy_from_slice(&(now.wrapping_sub(state.last) as u32).to_ne_bytes());
        for w in 0..3 {
            record[8 + 8 * w..16 + 8 * w].copy_from_slice(&(i + w as u64).to_ne_bytes());
        }
        state.at = at + LEN;
        state.last = now;
        state.records += 1;
        state.committed = state.records << 32 | state.at as u64;
    }
    black_box(&buf);
    black_box(&state);
    start.elapsed()
}

/// The streaming floor (issue 43): what streaming events to a file costs the recording thread
/// at the least. The thread reads the cycle counter and stores a 32-byte record (as
/// [`floor`]`::<3>`) into a block of a fixed pool (256 blocks of 64 KiB: the default's 16 MiB);
/// a full block goes to another thread, which writes it to a file and gives it back; the
/// thread takes the next free block. No lock on the record's path, one hand-off a block, the
/// file written as it is: the physical limit that any streaming recorder pays, against which
/// the default configuration (`switch` to a file) is compared in the same run.
///
/// [`StreamFloor::packing`] is the same with a writer that packs each block as the recorder's
/// writer does by default (a block header, then [`event_format::wire::Packer`] with the
/// default packing: columns and zstd) before it writes it: what a writer as slow as the
/// default's costs the recording thread, without the recorder (issue 43's "where the rest
/// goes").
pub struct StreamFloor {
    /// Full blocks and the end of their records.
    full: Option<std::sync::mpsc::Sender<(Box<[u8]>, usize)>>,
    /// Blocks the writer gave back.
    free: std::sync::mpsc::Receiver<Box<[u8]>>,
    /// Free blocks at hand, taken back from `free`.
    spare: Vec<Box<[u8]>>,
    writer: Option<std::thread::JoinHandle<()>>,
    block: Box<[u8]>,
    /// Where the block's records start: 0, or after the block header a packing writer fills.
    first: usize,
    at: usize,
    last: u64,
    /// The commit word [`run_thread_local`](Self::run_thread_local) stores.
    committed: Box<AtomicU64>,
}

/// What [`StreamFloor::run_thread_local`]'s thread keeps between events.
struct Guard {
    busy: std::cell::Cell<bool>,
    generation: std::cell::Cell<u64>,
    at: std::cell::Cell<usize>,
    limit: std::cell::Cell<usize>,
    block: std::cell::Cell<*mut u8>,
    last: std::cell::Cell<u64>,
    records: std::cell::Cell<u64>,
    lane: std::cell::Cell<*const AtomicU64>,
}

thread_local! {
    /// [`StreamFloor::run_thread_local`]'s thread state: without a destructor, as the recorder's.
    static GUARD: Guard = const {
        Guard {
            busy: std::cell::Cell::new(false),
            generation: std::cell::Cell::new(0),
            at: std::cell::Cell::new(0),
            limit: std::cell::Cell::new(0),
            block: std::cell::Cell::new(std::ptr::null_mut()),
            last: std::cell::Cell::new(0),
            records: std::cell::Cell::new(0),
            lane: std::cell::Cell::new(std::ptr::null()),
        }
    };
}

/// [`StreamFloor::run_thread_local`]'s control word: the event's bit, set.
static GUARD_BITS: AtomicU64 = AtomicU64::new(1);
/// [`StreamFloor::run_thread_local`]'s recording generation, which its thread's must match.
static GUARD_GENERATION: AtomicU64 = AtomicU64::new(1);

impl StreamFloor {
    /// Block size and count: the recorder's defaults.
    const BLOCK: usize = 64 << 10;
    const BLOCKS: usize = 256;

    /// A pool whose writer thread writes full blocks to `path` (created, truncated).
    pub fn new(path: &std::path::Path) -> StreamFloor {
        StreamFloor::start(path, false)
    }

    /// The same, its writer packing each block as the recorder's default does before writing
    /// it (a block whose packing is not smaller is written whole, as the recorder's).
    pub fn packing(path: &std::path::Path) -> StreamFloor {
        StreamFloor::start(path, true)
    }

    fn start(path: &std::path::Path, packs: bool) -> StreamFloor {
        use event_format::raw::seal_block;
        use event_format::wire::{BLOCK_HEADER_LEN, BlockHeader, Order, Packer, Packing};
        use std::io::Write;
        let (full, to_write) = std::sync::mpsc::channel::<(Box<[u8]>, usize)>();
        let (give_back, free) = std::sync::mpsc::channel::<Box<[u8]>>();
        let mut file = std::fs::File::create(path).expect("the floor's file can be created");
        let writer = std::thread::spawn(move || {
            let mut packer = Packer::new(Packing::default());
            let mut out = Vec::new();
            for (sequence, (mut block, end)) in to_write.into_iter().enumerate() {
                if packs {
                    let header = BlockHeader {
                        flags: 0,
                        sequence: sequence as u64,
                        thread: 1,
                        base_time: 0,
                        lost: 0,
                        used: 0,
                        crc: 0,
                    };
                    header.write(Order::NATIVE, &mut block);
                    seal_block(Order::NATIVE, &mut block, (end - BLOCK_HEADER_LEN) as u32);
                    out.clear();
                    let packed = packer.pack(Order::NATIVE, &block, &mut out);
                    file.write_all(if packed { &out } else { &block }).expect("the floor's file is written");
                } else {
                    file.write_all(&block).expect("the floor's file is written");
                }
                if give_back.send(block).is_err() {
                    break;
                }
            }
        });
        let first = if packs { BLOCK_HEADER_LEN } else { 0 };
        StreamFloor {
            full: Some(full),
            free,
            spare: (0..Self::BLOCKS - 1).map(|_| vec![0u8; Self::BLOCK].into_boxed_slice()).collect(),
            writer: Some(writer),
            block: vec![0u8; Self::BLOCK].into_boxed_slice(),
            first,
            at: first,
            last: ticks(),
            committed: Box::new(AtomicU64::new(0)),
        }
    }

    /// Records `n` events; the time it took.
    pub fn run(&mut self, n: u64) -> Duration {
        const LEN: usize = 32;
        let start = Instant::now();
        for i in 0..n {
            let now = ticks();
            if self.at + LEN > self.block.len() {
                self.hand_on();
            }
            let record = &mut self.block[self.at..self.at + LEN];
            record[..2].copy_from_slice(&3u16.to_ne_bytes());
            record[2..4].copy_from_slice(&(LEN as u16).to_ne_bytes());
            record[4..8].copy_from_slice(&(now.wrapping_sub(self.last) as u32).to_ne_bytes());
            for w in 0..3 {
                record[8 + 8 * w..16 + 8 * w].copy_from_slice(&(i + w as u64).to_ne_bytes());
            }
            self.last = now;
            self.at += LEN;
        }
        start.elapsed()
    }

    /// Hands the current block to the writer and takes a free one, most recently given back
    /// first, as the recorder's pool does (waiting for one: the floor loses nothing).
    #[cold]
    #[inline(never)]
    fn hand_on(&mut self) {
        self.spare.extend(self.free.try_iter());
        let next = match self.spare.pop() {
            Some(b) => b,
            None => self.free.recv().expect("the floor's writer runs"),
        };
        let full = std::mem::replace(&mut self.block, next);
        self.full.as_ref().expect("not stopped").send((full, self.at)).expect("the floor's writer runs");
        self.at = self.first;
    }

    /// Records `n` events as [`run`](Self::run) does, its state kept between events in a
    /// thread-local ([`GUARD`]: loaded and stored each event, as any recorder's must be, where
    /// [`run`](Self::run)'s loop keeps it in registers), and, by steps:
    ///
    /// - `COMMIT`: a commit word stored with release for a reader of the block being written
    ///   (a stop's, a ring file's reader);
    /// - `TESTS`: the tests that a recorder keeping this one's guarantees makes on each event,
    ///   and nothing else of it: the event's bit in a control word, a flag against a record
    ///   begun inside another (a signal handler's), the recording's generation against the
    ///   thread's, and a delta that fits the record's 32 bits and does not run backwards.
    ///
    /// With both, what is left of the default's distance from the streaming floor above this
    /// loop is the recorder's own (issue 43; BENCHMARKS.md, "the streaming floor by steps towards
    /// a recorder").
    pub fn run_thread_local<const COMMIT: bool, const TESTS: bool>(&mut self, n: u64) -> Duration {
        // Their addresses escape: the compiler cannot take the words for constants.
        black_box(&GUARD_BITS);
        black_box(&GUARD_GENERATION);
        let lane: *const AtomicU64 = &*self.committed;
        let _ = GUARD.try_with(|g| {
            g.block.set(self.block.as_mut_ptr());
            g.at.set(self.at);
            g.limit.set(self.block.len());
            g.last.set(self.last);
            g.records.set(0);
            g.lane.set(lane);
            g.generation.set(GUARD_GENERATION.load(Ordering::Relaxed));
        });
        let start = Instant::now();
        for i in 0..n {
            if !TESTS || GUARD_BITS.load(Ordering::Relaxed) & 1 != 0 {
                self.guarded_event::<COMMIT, TESTS>(i);
            }
        }
        let elapsed = start.elapsed();
        let _ = GUARD.try_with(|g| {
            self.at = g.at.get();
            self.last = g.last.get();
        });
        elapsed
    }

    /// One event of [`run_thread_local`](Self::run_thread_local).
    #[inline(always)]
    fn guarded_event<const COMMIT: bool, const TESTS: bool>(&mut self, i: u64) {
        const LEN: usize = 32;
        let _ = GUARD.try_with(|g| {
            // Loaded and stored each event without an opaque reference (as `floor_in_memory`
            // needs): the cold side's call, which takes `g`, keeps the compiler from holding
            // the state in registers across events, as a recorder's calls do.
            if TESTS {
                if g.busy.get() {
                    return;
                }
                g.busy.set(true);
                if g.generation.get() != GUARD_GENERATION.load(Ordering::Relaxed) {
                    g.busy.set(false);
                    return;
                }
            }
            let now = ticks();
            let last = g.last.get();
            let mut delta = now.wrapping_sub(last);
            let backwards = TESTS && (now < last || delta > u64::from(u32::MAX));
            if backwards || g.at.get() + LEN > g.limit.get() {
                self.guarded_room(g);
                delta = 0;
            }
            let at = g.at.get();
            // SAFETY: `block` is the current block's first byte, of `limit` bytes, and `at +
            // LEN <= limit` (tested above, or made so by `guarded_room`): in bounds. The block
            // is this `StreamFloor`'s, borrowed mutably for the call, and no other slice of it
            // lives.
            let record = unsafe { std::slice::from_raw_parts_mut(g.block.get().add(at), LEN) };
            record[..2].copy_from_slice(&3u16.to_ne_bytes());
            record[2..4].copy_from_slice(&(LEN as u16).to_ne_bytes());
            record[4..8].copy_from_slice(&(delta as u32).to_ne_bytes());
            for w in 0..3 {
                record[8 + 8 * w..16 + 8 * w].copy_from_slice(&(i + w as u64).to_ne_bytes());
            }
            let records = g.records.get() + 1;
            g.at.set(at + LEN);
            g.last.set(now);
            g.records.set(records);
            if COMMIT {
                // SAFETY: `lane` is `self.committed`'s address, set by `run_thread_local`,
                // which holds `self` borrowed for the whole loop.
                unsafe { &*g.lane.get() }.store(records << 32 | (at + LEN) as u64, Ordering::Release);
            }
            if TESTS {
                g.busy.set(false);
            }
        });
    }

    /// [`guarded_event`](Self::guarded_event)'s cold side: the next block when this one is
    /// full (a time that ran backwards or a delta too long for 32 bits starts one too, as
    /// the recorder's `TimeExtend` would, for the same test).
    #[cold]
    #[inline(never)]
    fn guarded_room(&mut self, g: &Guard) {
        self.at = g.at.get();
        self.hand_on();
        g.block.set(self.block.as_mut_ptr());
        g.at.set(self.at);
        g.records.set(0);
    }

    /// Hands on the current block and waits until the writer has written every block (untimed,
    /// as the recorder's `flush`).
    pub fn drain(&mut self) {
        if self.at > self.first {
            self.hand_on();
        }
        while self.spare.len() + 1 < Self::BLOCKS {
            self.spare.push(self.free.recv().expect("the floor's writer runs"));
        }
    }
}

impl Drop for StreamFloor {
    fn drop(&mut self) {
        drop(self.full.take());
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

// ---- this recorder -----------------------------------------------------------------------

/// Starts the recording the recorder's cases run under: the `ring` policy (each thread
/// overwrites its own ring of blocks in memory, so no writer thread and no file is
/// involved: what is measured is the cost to the recording thread), kind `Off` turned off.
pub fn start_ring() -> event_runtime::Recording {
    event_runtime::Recorder::new()
        .policy(event_runtime::Policy::Ring)
        .buffer_size(64 << 20)
        .control("all -Off")
        .start()
        .expect("the benchmark recording starts")
}

pub fn word0(n: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        event!(Word0);
    }
    start.elapsed()
}

pub fn word1(n: u64) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        event!(Word1, black_box(i));
    }
    start.elapsed()
}

pub fn word3(n: u64) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        event!(Word3, black_box(i), i + 1, i + 2);
    }
    start.elapsed()
}

pub fn word6(n: u64) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        event!(Word6, black_box(i), i + 1, i + 2, i + 3, i + 4, i + 5);
    }
    start.elapsed()
}

pub fn text16(n: u64) -> Duration {
    let text = black_box("sixteen bytes!!!");
    let start = Instant::now();
    for _ in 0..n {
        event!(Text, text);
    }
    start.elapsed()
}

/// An event of a kind that is turned off.
pub fn disabled(n: u64) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        event!(OffWord3, black_box(i), i + 1, i + 2);
        black_box(i);
    }
    start.elapsed()
}

/// `Word3` in the `rash` variety: compiled out (only in a build with `--features rash`).
pub fn compiled_out(n: u64) -> Duration {
    let start = Instant::now();
    for i in 0..n {
        event!(Word3, black_box(i), i + 1, i + 2);
        black_box(i);
    }
    start.elapsed()
}

// ---- tracing -----------------------------------------------------------------------------

pub mod peers {
    use super::ticks;
    use std::cell::RefCell;
    use std::fmt;
    use std::hint::black_box;
    use std::time::{Duration, Instant};
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    /// A subscriber that is interested in everything and does nothing with it: tracing's
    /// own dispatch cost. It reads no clock and records nothing.
    pub struct Null;

    impl Subscriber for Null {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            black_box(event);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    thread_local! {
        /// The binary subscriber's per-thread buffer, preallocated, and where it writes.
        static BUFFER: RefCell<(Vec<u8>, usize)> = RefCell::new((vec![0u8; 64 << 10], 0));
    }

    /// A subscriber that does what this recorder does, the fair comparison: reads the cycle
    /// counter and writes a record (a callsite id, the timestamp and every integer field, in
    /// binary) into a preallocated per-thread buffer.
    pub struct Binary;

    struct Fields<'a> {
        buf: &'a mut [u8],
        at: usize,
    }

    impl Visit for Fields<'_> {
        fn record_u64(&mut self, _: &Field, value: u64) {
            if self.at + 8 <= self.buf.len() {
                self.buf[self.at..self.at + 8].copy_from_slice(&value.to_ne_bytes());
                self.at += 8;
            }
        }
        fn record_i64(&mut self, field: &Field, value: i64) {
            self.record_u64(field, value as u64);
        }
        fn record_debug(&mut self, _: &Field, _: &dyn fmt::Debug) {}
    }

    impl Subscriber for Binary {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let now = ticks();
            BUFFER.with(|b| {
                let mut b = b.borrow_mut();
                let (buf, at) = &mut *b;
                // The record: callsite (8), time (8), fields (8 each); at most 64 bytes here.
                if *at + 64 > buf.len() {
                    *at = 0;
                }
                let id = event.metadata() as *const Metadata<'_> as usize as u64;
                buf[*at..*at + 8].copy_from_slice(&id.to_ne_bytes());
                buf[*at + 8..*at + 16].copy_from_slice(&now.to_ne_bytes());
                let mut fields = Fields { buf: &mut buf[*at + 16..*at + 64], at: 0 };
                event.record(&mut fields);
                *at += 16 + fields.at;
            });
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    /// `tracing::info!` with 3 integer fields, under whatever subscriber is the default.
    pub fn info3(n: u64) -> Duration {
        let start = Instant::now();
        for i in 0..n {
            tracing::info!(a = black_box(i), b = i + 1, c = i + 2);
        }
        start.elapsed()
    }

    /// Runs `f` with `subscriber` as this thread's default.
    pub fn under<S: Subscriber + Send + Sync + 'static>(subscriber: S, f: impl FnOnce() -> Duration) -> Duration {
        tracing::subscriber::with_default(subscriber, f)
    }

    pub fn null(n: u64) -> Duration {
        under(Null, || info3(n))
    }

    pub fn binary(n: u64) -> Duration {
        under(Binary, || info3(n))
    }
}
