//! The hand-off between recording threads and the writer thread (the `switch` and `fill`
//! policies): a bounded pool of free blocks and a queue of full ones.
//!
//! A thread takes a free block, fills it with plain stores, and submits it; the writer thread
//! writes submitted blocks to the sinks and gives them back. The number of blocks is fixed
//! when the recording starts, so memory is bounded: when the writer falls behind, the pool
//! runs dry and threads refuse events (and count them) until it gives blocks back. This
//! happens once per block, not per event: the lock here is off the fast path.
//!
//! Blocks are made when first taken, not at the start: a large pool (`EVENT_BUFSIZE=2g`)
//! costs a program memory only for the blocks it fills. A block's bytes come zeroed from the
//! allocator, which takes pages of a large allocation lazily from the OS; nothing here writes
//! them before a thread does.
//!
//! Invariant: every block is in exactly one place: not yet made, the free list, the full
//! queue, a thread's buffer, or the writer's hands.
//! `unmade + free.len() + full.len() + held == total`.

use crate::sync::{Condvar, Mutex, MutexGuard};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A block's bytes.
pub(crate) type BlockBuf = Box<[u8]>;

/// Queued blocks the queue holds room for from the start (see `State::full`).
const QUEUE_ROOM: usize = 64;

#[derive(Debug)]
struct State {
    /// Blocks not made yet: a take makes one when the free list is empty.
    unmade: usize,
    /// The size of a block, to make one.
    block_size: usize,
    free: Vec<BlockBuf>,
    full: VecDeque<BlockBuf>,
    /// Blocks that may still be taken from the free list (`fill`: a budget that is never
    /// given back); `None`: unlimited (`switch`).
    budget: Option<u64>,
    /// No more blocks will be submitted; the writer drains the queue and ends.
    closed: bool,
    /// The writer is asked to take a turn now (a triggered snapshot is ready): its wait in
    /// `next_batch` ends at once.
    woken: bool,
    /// Blocks the writer took and has not given back yet.
    in_flight: usize,
    /// The tickets of the threads waiting for a free block, first come first: a freed block
    /// goes to the first of them, never to a thread that comes later (see `take`).
    queue: VecDeque<u64>,
    /// The next waiting thread's ticket.
    next_ticket: u64,
}

/// What the writer thread gets from [`Exchange::next_batch`].
#[derive(Debug)]
pub(crate) enum Batch {
    /// Full blocks to write, oldest first.
    Blocks(Vec<BlockBuf>),
    /// Nothing arrived within the timeout.
    Idle,
    /// Closed and drained: the writer is done.
    Closed,
}

/// The pool and the queue.
#[derive(Debug)]
pub(crate) struct Exchange {
    state: Mutex<State>,
    /// Signalled when a block is submitted or the exchange closes.
    to_writer: Condvar,
    /// Signalled when blocks are given back.
    to_threads: Condvar,
    /// Free blocks, as last seen under the lock: a refusing thread reads it (relaxed) to
    /// decide whether trying the lock is worth it. A stale value costs one useless try or
    /// one more refused event, nothing else.
    free_hint: AtomicUsize,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // Every update under the lock is complete before it is released; a panic elsewhere
    // cannot leave the state half-changed.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Exchange {
    /// A pool of `blocks` blocks of `block_size` bytes; with `budget`, at most that many takes.
    pub(crate) fn new(blocks: usize, block_size: usize, budget: Option<u64>) -> Exchange {
        let state = State {
            unmade: blocks,
            block_size,
            free: Vec::new(),
            // Room made up front for a few blocks, so that a fatal signal's flush can queue
            // one without allocating (`try_submit`); it grows as needed otherwise.
            full: VecDeque::with_capacity(blocks.min(QUEUE_ROOM)),
            budget,
            closed: false,
            woken: false,
            in_flight: 0,
            queue: VecDeque::new(),
            next_ticket: 0,
        };
        Exchange {
            free_hint: AtomicUsize::new(blocks),
            state: Mutex::new(state),
            to_writer: Condvar::new(),
            to_threads: Condvar::new(),
        }
    }

    /// Whether a take might succeed now (a hint, see `free_hint`).
    #[inline]
    pub(crate) fn may_have_free(&self) -> bool {
        self.free_hint.load(Ordering::Relaxed) > 0
    }

    /// Free blocks, as last seen (see `free_hint`).
    pub(crate) fn free_hint(&self) -> usize {
        self.free_hint.load(Ordering::Relaxed)
    }

    /// Takes a free block; when there is none, waits for one up to `wait` (zero: not at all).
    ///
    /// Fair to the threads that wait: while any thread waits, a freed block goes to the
    /// first of them, and a thread that comes later (waiting or not) queues behind it or,
    /// not waiting, goes without. Otherwise the thread already running, which takes the lock
    /// first, would take every block given back while a waiting thread starved.
    pub(crate) fn take(&self, wait: Duration) -> Option<BlockBuf> {
        let mut s = lock(&self.state);
        if s.budget == Some(0) || s.closed {
            return None;
        }
        if s.free.is_empty() && s.unmade > 0 {
            s.unmade -= 1;
            let block_size = s.block_size;
            s.free.push(vec![0u8; block_size].into_boxed_slice());
        }
        if !s.queue.is_empty() || s.free.is_empty() {
            if wait.is_zero() {
                return None;
            }
            let ticket = s.next_ticket;
            s.next_ticket += 1;
            s.queue.push_back(ticket);
            let deadline = std::time::Instant::now() + wait;
            while !s.closed && (s.queue.front() != Some(&ticket) || s.free.is_empty()) {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                s = self.to_threads.wait_timeout(s, left).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
            }
            let served = !s.closed && s.queue.front() == Some(&ticket) && !s.free.is_empty();
            s.queue.retain(|&t| t != ticket);
            // The next in the queue may take a block now (this one's turn is over).
            self.to_threads.notify_all();
            if !served || s.budget == Some(0) {
                return None;
            }
        }
        let block = s.free.pop()?;
        if let Some(b) = &mut s.budget {
            // Cannot underflow: a spent budget returned above.
            *b -= 1;
        }
        // A spent budget reads as an empty pool, so refusing threads stop trying the lock.
        let free = if s.budget == Some(0) { 0 } else { s.free.len() + s.unmade };
        self.free_hint.store(free, Ordering::Relaxed);
        Some(block)
    }

    /// Queues a full block for the writer; `false` (and the block dropped) once closed.
    pub(crate) fn submit(&self, block: BlockBuf) -> bool {
        let mut s = lock(&self.state);
        if s.closed {
            return false;
        }
        s.full.push_back(block);
        drop(s);
        self.to_writer.notify_one();
        true
    }

    /// Waits until every block submitted so far is written, up to `timeout`; `false` if
    /// it was not.
    pub(crate) fn wait_drained(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut s = lock(&self.state);
        while !s.full.is_empty() || s.in_flight > 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return s.full.is_empty() && s.in_flight == 0;
            }
            s = self.to_threads.wait_timeout(s, left).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
        true
    }

    /// The writer's wait: every queued block, or `Idle` after `timeout`, or `Closed` once
    /// closed and drained.
    pub(crate) fn next_batch(&self, timeout: Duration) -> Batch {
        let mut s = lock(&self.state);
        if s.full.is_empty() && !s.closed && !s.woken {
            s = self.to_writer.wait_timeout(s, timeout).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
        s.woken = false;
        if !s.full.is_empty() {
            s.in_flight += s.full.len();
            return Batch::Blocks(s.full.drain(..).collect());
        }
        if s.closed { Batch::Closed } else { Batch::Idle }
    }

    /// Gives written blocks back to the pool, zeroed where they were used.
    pub(crate) fn give_back(&self, blocks: Vec<BlockBuf>) {
        let mut s = lock(&self.state);
        // Saturating: the writer gives back only what it took, so this never clamps.
        s.in_flight = s.in_flight.saturating_sub(blocks.len());
        s.free.extend(blocks);
        let free = if s.budget == Some(0) { 0 } else { s.free.len() + s.unmade };
        self.free_hint.store(free, Ordering::Relaxed);
        drop(s);
        self.to_threads.notify_all();
    }

    /// Asks the writer thread for a turn now, rather than at the end of its wait: a snapshot
    /// a trigger made ready is taken as soon as the writer wakes, so that the other threads'
    /// rings are copied as close to the trigger as the design allows.
    pub(crate) fn wake_writer(&self) {
        lock(&self.state).woken = true;
        self.to_writer.notify_all();
    }

    /// No more takes; the writer drains what was submitted and ends.
    pub(crate) fn close(&self) {
        lock(&self.state).closed = true;
        self.to_writer.notify_all();
        self.to_threads.notify_all();
    }

    /// Queues a full block without waiting for the lock and without allocating (a fatal
    /// signal's last flush, which must neither wait on a lock the interrupted code may hold nor
    /// call the allocator). Gives the block back when the lock is held, the exchange closed,
    /// or the queue has no room left in what it has already allocated.
    pub(crate) fn try_submit(&self, block: BlockBuf) -> Result<(), BlockBuf> {
        let Ok(mut s) = self.state.try_lock() else { return Err(block) };
        if s.closed || s.full.len() == s.full.capacity() {
            return Err(block);
        }
        s.full.push_back(block);
        drop(s);
        self.to_writer.notify_one();
        Ok(())
    }

    /// A free block that is already made, without waiting and without allocating (a fatal
    /// signal's last flush); `None` when the lock is held, the pool is closed or spent, or no
    /// made block is free.
    pub(crate) fn try_take_free(&self) -> Option<BlockBuf> {
        let mut s = self.state.try_lock().ok()?;
        if s.closed || s.budget == Some(0) || !s.queue.is_empty() {
            return None;
        }
        let block = s.free.pop()?;
        if let Some(b) = &mut s.budget {
            // Cannot underflow: a spent budget returned above.
            *b -= 1;
        }
        let free = if s.budget == Some(0) { 0 } else { s.free.len() + s.unmade };
        self.free_hint.store(free, Ordering::Relaxed);
        Some(block)
    }

    /// Whether every submitted block is written; `None` when the lock is held.
    pub(crate) fn try_drained(&self) -> Option<bool> {
        let s = self.state.try_lock().ok()?;
        Some(s.full.is_empty() && s.in_flight == 0)
    }

    /// The oldest queued block, taken without waiting and without allocating (a fatal
    /// signal's last flush): the writer thread never gets it. `None` when the lock is held
    /// or nothing is queued.
    pub(crate) fn try_pop(&self) -> Option<BlockBuf> {
        self.state.try_lock().ok()?.full.pop_front()
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! The hand-off protocol under loom: every block submitted is written exactly once, none
    //! is lost or duplicated, and a closing exchange lets the writer end.
    use super::*;
    use loom::thread;
    use std::sync::Arc;

    #[test]
    fn loom_every_submitted_block_reaches_the_writer_once() {
        // The writer's wait can time out at any point (loom treats it as a spurious wake-up),
        // so the search is bounded by preemptions.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(|| {
            let ex = Arc::new(Exchange::new(2, 1, None));
            let producers: Vec<_> = (1..=2u8)
                .map(|id| {
                    let ex = Arc::clone(&ex);
                    thread::spawn(move || {
                        let mut sent = 0;
                        for _ in 0..2 {
                            if let Some(mut b) = ex.take(Duration::ZERO) {
                                b[0] = id;
                                if ex.submit(b) {
                                    sent += 1;
                                }
                            }
                        }
                        sent
                    })
                })
                .collect();
            let writer = {
                let ex = Arc::clone(&ex);
                thread::spawn(move || {
                    let mut seen = Vec::new();
                    loop {
                        match ex.next_batch(Duration::from_millis(1)) {
                            Batch::Blocks(bs) => {
                                seen.extend(bs.iter().map(|b| b[0]));
                                ex.give_back(bs);
                            }
                            Batch::Idle => {}
                            Batch::Closed => return seen,
                        }
                    }
                })
            };
            let sent: usize = producers.into_iter().map(|p| p.join().unwrap()).sum();
            ex.close();
            let seen = writer.join().unwrap();
            assert_eq!(seen.len(), sent, "every submitted block is written once");
            assert!(sent >= 2, "two blocks in the pool: at least two takes succeed");
            let s = lock(&ex.state);
            assert_eq!(s.unmade + s.free.len() + s.full.len(), 2, "no block is lost");
        });
    }
    #[test]
    fn loom_a_waiting_taker_and_a_later_one_lose_no_block() {
        // One block, held; a thread waits for it while another tries without waiting, and
        // the block comes back (and back again from the one that did not wait, if it got
        // it): the waiter gets it in the end, no block is taken twice or lost, and no ticket
        // is left in the queue. (Loom does not time waits out: the waiter waits until served.)
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(|| {
            let ex = Arc::new(Exchange::new(1, 1, None));
            let held = ex.take(Duration::ZERO).expect("the one block");
            let waiter = {
                let ex = Arc::clone(&ex);
                thread::spawn(move || ex.take(Duration::from_secs(60)))
            };
            let later = {
                let ex = Arc::clone(&ex);
                thread::spawn(move || ex.take(Duration::ZERO))
            };
            ex.give_back(vec![held]);
            if let Some(block) = later.join().unwrap() {
                ex.give_back(vec![block]);
            }
            let block = waiter.join().unwrap().expect("the waiter is served in the end");
            {
                let s = lock(&ex.state);
                assert_eq!(s.unmade + s.free.len() + s.full.len(), 0, "the one block is the waiter's");
                assert!(s.queue.is_empty(), "no ticket is left behind");
            }
            ex.give_back(vec![block]);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A thread that waits for a block gets the next one given back: a thread that comes
    /// later, without waiting, does not take it first. (Before, the block went to whoever
    /// took the lock first, which was nearly always the thread already running: with
    /// `wait`, a thread starved for 10 ms while another wrote 127 blocks.)
    #[test]
    fn a_waiting_thread_gets_the_block_given_back_before_a_later_taker() {
        for round in 0..50 {
            let ex = Arc::new(Exchange::new(1, 8, None));
            let held = ex.take(Duration::ZERO).expect("the one block");
            let waiter = {
                let ex = Arc::clone(&ex);
                std::thread::spawn(move || ex.take(Duration::from_secs(10)).is_some())
            };
            // Once the waiter is queued (within 10 s, however loaded the machine).
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while lock(&ex.state).queue.is_empty() {
                assert!(std::time::Instant::now() < deadline, "round {round}: the waiter never queued");
                std::thread::sleep(Duration::from_micros(100));
            }
            ex.give_back(vec![held]);
            let later = ex.take(Duration::ZERO);
            assert!(later.is_none(), "round {round}: a later taker took the block a waiting thread was queued for");
            assert!(waiter.join().unwrap(), "round {round}: the waiting thread got the block");
        }
    }

    /// A fatal signal's flush queues without allocating: `try_submit` refuses a block when
    /// the queue has no room left in what it has allocated, and `try_take_free` makes no block.
    #[test]
    fn the_signal_time_calls_never_allocate() {
        let ex = Exchange::new(2 * QUEUE_ROOM, 8, None);
        assert!(ex.try_take_free().is_none(), "no block is made for a signal");
        let room = lock(&ex.state).full.capacity();
        assert!(room >= QUEUE_ROOM);
        for i in 0..room {
            assert!(ex.try_submit(vec![0u8; 8].into_boxed_slice()).is_ok(), "block {i} fits the room made");
        }
        assert!(ex.try_submit(vec![0u8; 8].into_boxed_slice()).is_err(), "no room: refused, not grown");
        assert_eq!(lock(&ex.state).full.capacity(), room);
        assert!(ex.try_pop().is_some());
        let block = ex.take(Duration::ZERO).unwrap();
        ex.give_back(vec![block]);
        assert!(ex.try_take_free().is_some(), "a made, free block is taken");
    }
}
