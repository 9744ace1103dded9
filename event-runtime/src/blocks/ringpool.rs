//! The blocks that the rings of a recording share (`ring` policy): the whole buffer
//! (`EVENT_BUFSIZE`) is one pool of blocks, and each thread's ring draws its blocks from it,
//! so that the threads that record share the budget between them, however many the program
//! runs (docs/guide/keeping-the-incident.md, "Sizing a flight recorder").
//!
//! A ring holds a list of (sequence, block) pairs, oldest first; its last pair is the block
//! its thread is writing. When the thread moves on to its next block, [`BlockPool::next`]
//! gives it, in this order:
//!
//! 1. a block nobody holds (never used, or let go by a ring whose slot was reused);
//! 2. when it holds fewer than its fair share (the pool's blocks over the rings of running
//!    threads, at least 2): the oldest block of another ring, the ring of a thread that ended
//!    first (down to its last block), else the live ring that holds the most, when that one
//!    holds more than its fair share (`spare_for` has the whole order): so that a thread that
//!    starts late gets room, and the early ones give up their oldest blocks, never the one
//!    they write;
//! 3. else its own oldest block: the ring goes round.
//!
//! A ring keeps its blocks after its thread ends, for the stop and for snapshots, until
//! another ring needs them. The policy is the same for the rings on the heap
//! (`lane::HeapRings`) and for the ring file's slots (`ringfile`); only where the blocks are
//! differs. Everything here happens under one lock, taken by a thread once per block (its
//! cold path), never per event.

use std::collections::{BTreeMap, VecDeque};

/// A ring's blocks: (sequence, block index), oldest first.
pub(crate) type RingBlocks = VecDeque<(u64, u32)>;

/// Where [`BlockPool::next`] found a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// A block nobody held.
    Free,
    /// The oldest block of the ring's own (the ring went round): it held `sequence`.
    Own { sequence: u64 },
    /// The oldest block (of `sequence`) of the ring `from`, which held more than it needs.
    Taken { from: u64, sequence: u64 },
}

/// The allocation state of a pool of `blocks` blocks.
#[derive(Debug)]
pub(crate) struct BlockPool {
    blocks: u32,
    /// Whether a ring may take other rings' blocks and go round (`ring`); without, a ring
    /// only grows, from blocks nobody holds, and stops when there is none (`fill`).
    reuse: bool,
    /// Blocks never handed out: `fresh..blocks`.
    fresh: u32,
    /// Blocks let go (a reused slot's ring).
    free: Vec<u32>,
    /// The rings, by id (a thread's id for the heap, a slot's index for the ring file).
    rings: BTreeMap<u64, PoolRing>,
    /// Rings whose thread runs.
    live: u32,
}

#[derive(Debug, Default)]
struct PoolRing {
    blocks: RingBlocks,
    live: bool,
}

impl BlockPool {
    /// A pool of `blocks` blocks, none handed out. With `reuse` (`ring`), rings go round and
    /// give blocks up to each other; without (`fill`), each ring only grows.
    pub(crate) fn new(blocks: u32, reuse: bool) -> BlockPool {
        BlockPool { blocks, reuse, fresh: 0, free: Vec::new(), rings: BTreeMap::new(), live: 0 }
    }

    /// Whether rings go round and give blocks up to each other (`ring`), or only grow
    /// (`fill`).
    pub(crate) fn set_reuse(&mut self, reuse: bool) {
        self.reuse = reuse;
    }

    /// The pool's size in blocks.
    pub(crate) fn blocks(&self) -> u32 {
        self.blocks
    }

    /// A new ring `id`, live, holding no block (a ring of that id that ended is replaced:
    /// its blocks are let go first, and returned).
    pub(crate) fn open(&mut self, id: u64) -> RingBlocks {
        let old = self.release(id);
        self.rings.insert(id, PoolRing { blocks: VecDeque::new(), live: true });
        self.live += 1;
        old
    }

    /// Ring `id`'s thread ended: it keeps its blocks until other rings need them.
    pub(crate) fn close(&mut self, id: u64) {
        if let Some(ring) = self.rings.get_mut(&id)
            && std::mem::replace(&mut ring.live, false)
        {
            self.live -= 1;
        }
    }

    /// Ring `id` goes away: its blocks are let go (and returned, oldest first).
    pub(crate) fn release(&mut self, id: u64) -> RingBlocks {
        let Some(ring) = self.rings.remove(&id) else { return VecDeque::new() };
        if ring.live {
            self.live -= 1;
        }
        self.free.extend(ring.blocks.iter().map(|&(_, b)| b));
        ring.blocks
    }

    /// Ring `id`'s blocks, oldest first (empty for a ring it does not know).
    pub(crate) fn ring(&self, id: u64) -> &RingBlocks {
        static EMPTY: RingBlocks = VecDeque::new();
        self.rings.get(&id).map_or(&EMPTY, |r| &r.blocks)
    }

    /// The rings, by id.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.rings.keys().copied()
    }

    /// The block that ring `id` writes its block `sequence` into, now its newest (module
    /// docs); `None` when it can have none (it holds none and no ring can spare one, or,
    /// without reuse, the pool is used up).
    pub(crate) fn next(&mut self, id: u64, sequence: u64) -> Option<(u32, Found)> {
        let (held, newest) = match self.rings.get(&id) {
            Some(r) => (r.blocks.len(), r.blocks.back().copied()),
            None => return None,
        };
        if let Some((seq, block)) = newest
            && seq == sequence
        {
            // The block is started again (it held no record: a thread whose clock stepped
            // back before its start begins it anew): the same block, never a second one of
            // that number, which a reader of the ring would take for it.
            return Some((block, Found::Own { sequence }));
        }
        // A ring closed while its thread still records (its ring file was cut under it, and
        // the thread goes on into the event file) is served as any other: a block, so that
        // its events go on; not a panic in the program (this was a debug assertion).
        let nobody = self.free.pop().or_else(|| {
            (self.fresh < self.blocks).then(|| {
                self.fresh += 1;
                self.fresh - 1
            })
        });
        let (block, found) = if let Some(block) = nobody {
            (block, Found::Free)
        } else if !self.reuse {
            return None;
        } else if let Some((from, sequence, block)) = self.spare_for(id, held) {
            (block, Found::Taken { from, sequence })
        } else {
            let own = self.rings.get_mut(&id)?;
            let (old, block) = own.blocks.pop_front()?;
            (block, Found::Own { sequence: old })
        };
        self.rings.get_mut(&id)?.blocks.push_back((sequence, block));
        Some((block, found))
    }

    /// The ring that gives ring `id` (holding `held` blocks) its oldest block, if one
    /// should: taken out of that ring.
    ///
    /// A ring below its fair share takes, in this order: from the ring of an ended thread
    /// that holds more than one block (the one that holds the most), down to its last block,
    /// which holds that thread's last events; from the live ring that holds the most, when
    /// that one holds more than its fair share and more than this ring plus one. A ring that
    /// holds fewer than 2 blocks also takes, when nothing else gives, from a live ring of 2 or
    /// more, and then an ended thread's last block (the lowest id: the longest ended, as
    /// threads are numbered as they start).
    fn spare_for(&mut self, id: u64, held: usize) -> Option<(u64, u64, u32)> {
        let fair = (self.blocks / self.live.max(1)).max(2) as usize;
        if held >= fair {
            return None;
        }
        let others = || self.rings.iter().filter(move |(r, ring)| **r != id && !ring.blocks.is_empty());
        let most = |floor: usize, live: bool| {
            others()
                .filter(|(_, ring)| ring.live == live && ring.blocks.len() > floor)
                .max_by_key(|(_, ring)| ring.blocks.len())
                .map(|(&r, _)| r)
        };
        let victim = most(1, false).or_else(|| most(fair.max(held + 1), true)).or_else(|| {
            (held < 2).then(|| most(1, true).or_else(|| others().find(|(_, ring)| !ring.live).map(|(&r, _)| r)))?
        })?;
        let (sequence, block) = self.rings.get_mut(&victim)?.blocks.pop_front()?;
        Some((victim, sequence, block))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn held(pool: &BlockPool, id: u64) -> usize {
        pool.ring(id).len()
    }

    /// A ring closed while its thread still records asks for a block: it gets one, as any
    /// ring does, not a panic (it was a debug assertion, tripped now and then by a ring file
    /// truncated while recording, whose thread goes on into the event file).
    #[test]
    fn a_ring_closed_while_its_thread_records_gets_a_block() {
        let mut pool = BlockPool::new(4, true);
        pool.open(1);
        assert_eq!(pool.next(1, 0), Some((0, Found::Free)));
        pool.close(1);
        assert_eq!(pool.next(1, 1), Some((1, Found::Free)));
    }

    #[test]
    fn one_ring_takes_the_whole_pool_then_goes_round() {
        let mut pool = BlockPool::new(4, true);
        pool.open(1);
        for seq in 0..4 {
            assert_eq!(pool.next(1, seq), Some((seq as u32, Found::Free)));
        }
        assert_eq!(pool.next(1, 4), Some((0, Found::Own { sequence: 0 })));
        let seqs: Vec<u64> = pool.ring(1).iter().map(|p| p.0).collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
    }

    #[test]
    fn a_late_ring_gets_its_fair_share_from_the_early_one() {
        let mut pool = BlockPool::new(8, true);
        pool.open(1);
        for seq in 0..20 {
            pool.next(1, seq).unwrap();
        }
        assert_eq!(held(&pool, 1), 8);
        pool.open(2);
        // Its first block comes from ring 1's oldest, and so on up to the fair share (4).
        let oldest = pool.ring(1)[0].1;
        assert_eq!(pool.next(2, 0), Some((oldest, Found::Taken { from: 1, sequence: 12 })));
        for seq in 1..10 {
            pool.next(2, seq).unwrap();
            pool.next(1, 20 + seq).unwrap();
        }
        assert_eq!((held(&pool, 1), held(&pool, 2)), (4, 4));
        // Ring 1's blocks are still consecutive, its newest the one it writes.
        let seqs: Vec<u64> = pool.ring(1).iter().map(|p| p.0).collect();
        assert_eq!(seqs, [26, 27, 28, 29]);
    }

    #[test]
    fn an_ended_threads_ring_gives_first_and_a_released_one_frees_everything() {
        let mut pool = BlockPool::new(6, true);
        pool.open(1);
        pool.open(2);
        for seq in 0..3 {
            pool.next(1, seq).unwrap();
            pool.next(2, seq).unwrap();
        }
        pool.close(1);
        pool.open(3);
        assert!(matches!(pool.next(3, 0), Some((_, Found::Taken { from: 1, .. }))));
        assert!(matches!(pool.next(3, 1), Some((_, Found::Taken { from: 1, .. }))));
        // Ring 1's last block stays, and ring 2 holds its fair share (3) and gives none: ring
        // 3 goes round in its own two.
        assert_eq!(held(&pool, 1), 1);
        assert!(matches!(pool.next(3, 2), Some((_, Found::Own { sequence: 0 }))));
        let old = pool.release(1);
        assert_eq!(old.len(), 1);
        assert!(matches!(pool.next(3, 3), Some((_, Found::Free))));
    }

    #[test]
    fn a_block_started_again_is_the_same_block() {
        let mut pool = BlockPool::new(4, true);
        pool.open(1);
        let (first, _) = pool.next(1, 0).unwrap();
        assert_eq!(pool.next(1, 0), Some((first, Found::Own { sequence: 0 })));
        assert_eq!(pool.ring(1).len(), 1, "one block of number 0");
    }

    #[test]
    fn without_reuse_rings_only_grow() {
        let mut pool = BlockPool::new(3, false);
        pool.open(1);
        pool.open(2);
        assert!(pool.next(1, 0).is_some() && pool.next(2, 0).is_some() && pool.next(1, 1).is_some());
        assert_eq!(pool.next(2, 1), None);
        assert_eq!(pool.next(1, 2), None);
    }

    #[test]
    fn a_ring_never_loses_its_newest_block() {
        // Many rings over a small pool: whatever the order, each live ring that holds blocks
        // still holds the one it writes (its newest), and no block is held twice.
        let mut pool = BlockPool::new(8, true);
        let mut seq = [0u64; 6];
        for round in 0..200u64 {
            let id = (round * 7 % 6) as usize;
            if pool.ring(id as u64).is_empty() && !pool.rings.contains_key(&(id as u64)) {
                pool.open(id as u64);
            }
            if let Some((block, _)) = pool.next(id as u64, seq[id]) {
                assert_eq!(pool.ring(id as u64).back(), Some(&(seq[id], block)));
                seq[id] += 1;
            }
            let mut all: Vec<u32> = pool.ids().flat_map(|r| pool.ring(r).iter().map(|p| p.1)).collect();
            let n = all.len();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), n, "no block held twice");
        }
    }
}
