//! Whether the writer thread shares a busy CPU with its program: what its packing yields by
//! (`write`'s pace).
//!
//! The writer runs below its program's priority (`thread`'s `WRITER_NICE`), so on a CPU that
//! the program keeps busy it runs in the time the program leaves it, and every block it packs
//! is time the program does not get there: on a service pinned to one CPU, zstd at level 5
//! took 4 to 6 % of that CPU, and the service's throughput lost as much (BENCHMARKS.md, "the
//! writer's packing on a busy CPU"). The kernel counts, for each thread,
//! the time it ran and the time it waited, runnable, for a CPU: the first two numbers of
//! `/proc/thread-self/schedstat`, in nanoseconds (Linux's `sched_info`, there without
//! `schedstats`). Over each [`WINDOW`], a writer that waited for a CPU longer than it ran,
//! and at least [`LEAST_WAIT`], shares a busy one: it then packs at zstd's fast level, in
//! less than half level 5's time a block, for about a tenth more bytes at rest. With a CPU of
//! its own (a program that leaves one idle), it waits only to be woken, and packs as
//! configured.
//!
//! Where the file cannot be opened or read (not Linux, no `/proc`), the writer is never
//! found sharing a busy CPU, and packs as configured; after a read that fails, none is tried
//! again.

use std::cell::RefCell;
use std::fs::File;
use std::time::{Duration, Instant};

/// How long each verdict stands: the counts are read once a window, when the writer has a
/// block to write (a file opened and read, a few microseconds, ten times a second at most).
const WINDOW: Duration = Duration::from_millis(100);

/// The least time waited for a CPU over a window (nanoseconds: a hundredth of the window) that
/// counts as sharing a busy one: a writer that runs for a few microseconds and is woken late
/// once has waited longer than it ran, on an idle machine too.
const LEAST_WAIT: u64 = 1_000_000;

/// A thread's scheduling counts at one time (nanoseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sample {
    /// On a CPU, in all.
    ran: u64,
    /// Runnable and waiting for a CPU, in all.
    waited: u64,
}

/// The writer thread's verdict and what it was drawn from.
struct Contention {
    /// The counts at the start of the window; `None` once they could not be read (or where
    /// they are not read at all), and then for good: no read is tried again.
    last: Option<Sample>,
    /// When the window started.
    since: Instant,
    /// The last window's verdict.
    busy: bool,
}

thread_local! {
    /// The calling thread's (the writer thread is its one user): made at its first question.
    static CONTENTION: RefCell<Option<Contention>> = const { RefCell::new(None) };
}

/// Whether the calling thread shared a busy CPU over the last window ([`shares_busy_cpu`]):
/// on the writer thread, before a block's packing.
pub(crate) fn this_thread_shares_busy_cpu() -> bool {
    CONTENTION
        .try_with(|c| {
            let mut c = c.borrow_mut();
            let c = c.get_or_insert_with(Contention::of_this_thread);
            if let Some(before) = c.last
                && c.since.elapsed() >= WINDOW
            {
                c.since = Instant::now();
                let now = read();
                c.busy = now.is_some_and(|after| shares_busy_cpu(before, after));
                c.last = now;
            }
            c.busy
        })
        .unwrap_or(false)
}

/// Whether a thread whose counts went from `before` to `after` shared a busy CPU meanwhile:
/// it waited for one longer than it ran, and at least [`LEAST_WAIT`].
fn shares_busy_cpu(before: Sample, after: Sample) -> bool {
    let ran = after.ran.saturating_sub(before.ran);
    let waited = after.waited.saturating_sub(before.waited);
    waited >= LEAST_WAIT && waited > ran
}

/// The counts in the text of a `schedstat` file: its first two numbers (the third, the
/// times it was given a CPU, is not needed).
fn parse(text: &[u8]) -> Option<Sample> {
    let text = std::str::from_utf8(text).ok()?;
    let mut numbers = text.split_ascii_whitespace().map(str::parse::<u64>);
    let ran = numbers.next()?.ok()?;
    let waited = numbers.next()?.ok()?;
    Some(Sample { ran, waited })
}

impl Contention {
    fn of_this_thread() -> Contention {
        let last = if cfg!(all(target_os = "linux", not(miri))) { read() } else { None };
        Contention { last, since: Instant::now(), busy: false }
    }
}

/// The calling thread's counts now; `None` when they cannot be read. The file is opened for
/// each read (three system calls, ten times a second at most), so that no descriptor is held:
/// a child of `fork()` inherits none that names its parent's thread.
fn read() -> Option<Sample> {
    use std::io::Read as _;
    let mut buf = [0u8; 96];
    let read = File::open("/proc/thread-self/schedstat").and_then(|mut f| f.read(&mut buf));
    read.ok().and_then(|n| parse(&buf[..n]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counts_are_the_first_two_numbers() {
        assert_eq!(parse(b"331976364 373966 43\n"), Some(Sample { ran: 331_976_364, waited: 373_966 }));
        assert_eq!(parse(b"5 6"), Some(Sample { ran: 5, waited: 6 }));
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"12\n"), None);
        assert_eq!(parse(b"-1 2 3"), None);
        assert_eq!(parse(b"\xff\xfe"), None);
    }

    #[test]
    fn a_thread_shares_a_busy_cpu_when_it_waited_longer_than_it_ran() {
        let at = |ran, waited| Sample { ran, waited };
        // A writer of nice 10 beside a busy program: it waits about nine times what it runs.
        assert!(shares_busy_cpu(at(0, 0), at(4_000_000, 36_000_000)));
        // With a CPU of its own: woken at once.
        assert!(!shares_busy_cpu(at(0, 0), at(40_000_000, 200_000)));
        // Woken late once, having run for a few microseconds: not a busy CPU.
        assert!(!shares_busy_cpu(at(0, 0), at(20_000, 300_000)));
        // As long as it ran: not longer.
        assert!(!shares_busy_cpu(at(0, 0), at(5_000_000, 5_000_000)));
        // Counts that went back (a thread's counts never do): nothing waited.
        assert!(!shares_busy_cpu(at(10, 10_000_000), at(20, 5)));
    }

    /// Twice as many threads spin as there are CPUs to run on (so that the scheduler's
    /// balancing leaves no CPU to the asking thread alone), and a thread of a lower priority
    /// (as the writer is) asks for four windows: it waits for a CPU far longer than it runs,
    /// and says so.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_among_spinning_threads_says_it_shares_a_busy_cpu() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        if std::fs::read("/proc/thread-self/schedstat").is_err() {
            eprintln!("skipped: no /proc/thread-self/schedstat here");
            return;
        }
        // Every CPU this thread may run on, spinning: `available_parallelism` is lower than
        // that under a cgroup's quota.
        let allowed = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                let mask = s.lines().find_map(|l| l.strip_prefix("Cpus_allowed:"))?.trim().to_owned();
                Some(mask.chars().filter_map(|c| c.to_digit(16)).map(u32::count_ones).sum::<u32>() as usize)
            })
            .unwrap_or(0);
        let cpus = allowed.max(std::thread::available_parallelism().map_or(1, |n| n.get()));
        let stop = Arc::new(AtomicBool::new(false));
        let spinning: Vec<_> = (0..2 * cpus + 1)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        let said = std::thread::spawn(|| {
            crate::files::lower_this_thread(10);
            let start = Instant::now();
            let mut said = false;
            while start.elapsed() < WINDOW * 4 {
                said |= this_thread_shares_busy_cpu();
            }
            said
        })
        .join()
        .unwrap();
        stop.store(true, Ordering::Relaxed);
        for t in spinning {
            t.join().unwrap();
        }
        assert!(
            said,
            "a thread of nice 10 among {} spinning threads on {cpus} CPUs never found its CPU busy",
            2 * cpus + 1
        );
    }
}
