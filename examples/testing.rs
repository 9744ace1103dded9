//! Testing your instrumentation: a test records the events of the code it calls with
//! `event_runtime::capture` and asserts on them, while `cargo test` runs the other tests in
//! parallel (docs/guide/testing.md). Copy the `tests` module below into your
//! crate.
//!
//! Run it with `cargo test -p examples --example testing`.

event_runtime::include_events!("../events.def");

/// A bump allocator of `capacity` bytes: what the tests below check, and its events.
#[derive(Debug)]
pub struct Pool {
    base: usize,
    used: usize,
    capacity: usize,
}

impl Pool {
    pub fn new(capacity: usize) -> Pool {
        let pool = Pool { base: 0x1000, used: 0, capacity };
        event!(PoolInit, &pool, 0usize, "bump", 8u32);
        pool
    }

    /// `size` bytes, 8-aligned; `None` when the pool is full, which it records with the reason.
    pub fn alloc(&mut self, size: usize) -> Option<usize> {
        let rounded = size.next_multiple_of(8);
        if self.used + rounded > self.capacity {
            event!(AllocFail, &*self, size as u64, format!("{} bytes left", self.capacity - self.used));
            return None;
        }
        let addr = self.base + self.used;
        self.used += rounded;
        event!(ObjectAlloc, &*self, addr, rounded as u64, 0u32);
        Some(addr)
    }
}

fn main() {
    println!("run the tests of this example: cargo test -p examples --example testing");
}

#[cfg(test)]
mod tests {
    use super::Pool;
    use event_runtime::format::{Text, Value};

    /// The names, in order: the quickest assertion.
    #[test]
    fn a_full_pool_records_why_it_failed() {
        let events = event_runtime::capture(|| {
            let mut pool = Pool::new(32);
            assert!(pool.alloc(24).is_some());
            assert!(pool.alloc(16).is_none());
        });
        assert_eq!(events.names(), ["PoolInit", "ObjectAlloc", "AllocFail"]);
        // The values, as the decoder gives them (parameters in events.def's order).
        let failure = &events.values("AllocFail")[0];
        assert_eq!(failure[1..], [Value::Word(16), Value::Str(Text::new("8 bytes left"))]);
    }

    /// The text `event-dump print` shows, for assertions on several values at once. The
    /// capture's clock is one nanosecond per event, so the times are the same on every run.
    #[test]
    fn allocations_are_rounded_to_eight_bytes() {
        let capture = event_runtime::Capture::start();
        let mut pool = Pool::new(64);
        let addrs: Vec<Option<usize>> = (1..=3).map(|n| pool.alloc(n * 5)).collect();
        let events = capture.finish();
        assert_eq!(addrs, [Some(0x1000), Some(0x1008), Some(0x1018)]);
        let lines = events.lines();
        assert_eq!(lines.len(), 4);
        assert!(lines[1].starts_with("0.000000003 T1 Object.ObjectAlloc pool=0x"), "{}", lines[1]);
        assert!(lines[3].ends_with("addr=0x1018 size=16 class=0"), "{}", lines[3]);
    }

    /// Each test captures its own thread's events only: these run in parallel with the ones
    /// above and never see their events.
    #[test]
    fn tests_in_parallel_see_only_their_own_events() {
        for _ in 0..100 {
            let events = event_runtime::capture(|| {
                Pool::new(8);
            });
            assert_eq!(events.names(), ["PoolInit"]);
        }
    }
}
