//! The order of a merge by time, whatever it merges: the one implementation of the chains,
//! the heap, the [`Watermark`], the window and the tie order that both merges of the
//! workspace use, [`Merge`](super::Merge) (decoded records: the exports, `latency`, the typed
//! reader) and `print`'s pipeline (lines rendered on worker threads).
//!
//! What is merged comes in [`Timed`] pieces (a block's records, a block's rendered lines):
//! items of one log and thread in time order, each with a position in its piece. An item's
//! [`Place`] is its key (ticks of one log, wall-clock nanoseconds of several) and then the tie
//! order of equal keys that docs/FORMAT.md ("Merging") states: the log's place in the list,
//! the thread id, the block's segment (of a recording of segments), the block's sequence
//! number, the block's place in its log and the item's position in its piece.
//!
//! [`Order`] holds the pieces in chains: the pieces of one thread of one log that follow one
//! another in time, one after another (a piece whose first item is not after its chain's last
//! opens a chain of its own, which its thread's next pieces go on), so that the heap that
//! picks the next item holds a chain per thread, not a piece per block, and items can be taken
//! from a chain in runs ([`Order::hand_on_due`]) or one at a time ([`Order::take`]). Its
//! [`Watermark`] says which items no later piece can precede; its window bounds the bytes it
//! holds (each piece says what it counts, [`Timed::bytes`]).

use super::Watermark;
use crate::codec::wire::Clock;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::ops::ControlFlow;

/// An item's place in the merge's order: (key, log, thread, block's segment, block sequence,
/// block's place in its segment, position in its piece); see the module docs.
pub type Place = (i128, usize, u64, u32, u64, u64, usize);

/// Where an item is in its piece, and its time in ticks.
pub type At = (usize, u64);

/// Where a piece comes from: what the tie order of equal keys compares before the item's
/// position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tie {
    /// The log's place in the list merged.
    pub log: usize,
    /// The thread whose block it is.
    pub thread: u64,
    /// The block's segment in its log ([`Block::segment`](crate::decode::Block::segment)), 0
    /// for a log of one stream: sequence numbers restart in each segment, so of two blocks of
    /// one thread and equal times, the earlier segment's comes first (docs/FORMAT.md,
    /// "Merging").
    pub segment: u32,
    /// The block's sequence number.
    pub sequence: u64,
    /// The block's place among its log's blocks ([`Block::index`](crate::decode::Block::index)):
    /// of a block repeated, the copies in the order they come.
    pub index: u64,
}

/// A piece the merge holds: a block's items, at least one, in time order (equal times in the
/// order of their positions).
pub trait Timed {
    /// Its block, as the tie order of equal keys compares it.
    fn tie(&self) -> Tie;
    /// Its first item.
    fn first(&self) -> At;
    /// The item after the one `at`; `None` after the last.
    fn next(&self, at: At) -> Option<At>;
    /// Its last item.
    fn last(&self) -> At;
    /// The bytes it holds, as the window counts them.
    fn bytes(&self) -> usize;
}

/// How an item's time becomes its key: its ticks when one log is merged, the wall-clock
/// nanoseconds of its log's clock when several are.
#[derive(Clone, Debug)]
pub struct Keys {
    wall: Option<Vec<Clock>>,
}

impl Keys {
    /// Keys by `wall`'s clocks (one per log) when several logs are merged, by ticks for `None`.
    pub fn new(wall: Option<Vec<Clock>>) -> Keys {
        Keys { wall }
    }

    /// The key of `time` in log `log`.
    #[inline]
    pub fn key(&self, log: usize, time: u64) -> i128 {
        match &self.wall {
            Some(clocks) => clocks[log].wall_ns(time),
            None => i128::from(time),
        }
    }

    /// The place of `piece`'s item `at`.
    #[inline]
    pub fn place<T: Timed>(&self, piece: &T, (pos, time): At) -> Place {
        let o = piece.tie();
        (self.key(o.log, time), o.log, o.thread, o.segment, o.sequence, o.index, pos)
    }

    /// Where the run of `piece`'s items from `at` that come no later than `bound` in the
    /// order ends: the first item after it, or `None` when the run reaches the piece's end
    /// (always, without a bound). Of one log, a key is a time: times before the bound's are
    /// compared alone, and only an equal time needs the whole place.
    #[inline]
    fn run_end<T: Timed>(&self, piece: &T, mut at: At, bound: Option<Place>) -> Option<At> {
        let bound = bound?;
        if self.wall.is_none() {
            loop {
                let time = i128::from(at.1);
                if time > bound.0 || (time == bound.0 && self.place(piece, at) > bound) {
                    return Some(at);
                }
                at = piece.next(at)?;
            }
        }
        loop {
            if self.place(piece, at) > bound {
                return Some(at);
            }
            at = piece.next(at)?;
        }
    }
}

/// A chain: pieces of one thread of one log whose items follow one another in the order.
#[derive(Debug)]
struct Chain<T> {
    pieces: VecDeque<T>,
    /// The next item of the front piece.
    at: At,
    /// The place of the back piece's last item.
    last: Option<Place>,
    /// The chain of its thread that its next piece goes on (not freed while it is).
    primary: bool,
}

impl<T> Default for Chain<T> {
    fn default() -> Chain<T> {
        Chain { pieces: VecDeque::new(), at: (0, 0), last: None, primary: false }
    }
}

/// The order of a merge: pieces in chains, the next item of each chain on a heap, the
/// watermark and the window; see the module docs.
#[derive(Debug)]
pub struct Order<T> {
    keys: Keys,
    chains: Vec<Chain<T>>,
    free: Vec<usize>,
    /// The chain of each (log, thread) that its next piece goes on when it follows.
    primary: HashMap<(usize, u64), usize>,
    heap: BinaryHeap<Reverse<(Place, usize)>>,
    held: usize,
    window: usize,
    mark: Watermark,
    /// Pieces whose every item was handed on: for their buffers to be reused, or dropped.
    spent: Vec<T>,
}

impl<T: Timed> Order<T> {
    /// An order that holds at most `window` bytes, keys items by `keys` and hands on every
    /// item before `mark`'s key as soon as it has it.
    pub fn new(keys: Keys, window: usize, mark: Watermark) -> Order<T> {
        Order {
            keys,
            chains: Vec::new(),
            free: Vec::new(),
            primary: HashMap::new(),
            heap: BinaryHeap::new(),
            held: 0,
            window,
            mark,
            spent: Vec::new(),
        }
    }

    /// How times become keys.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The block of log `log` at `at` in its index is merged ([`Watermark::merged`]):
    /// `block` gives its `base_time` and the time of its earliest item, or is `None` for a
    /// damaged block.
    pub fn merged(&mut self, log: usize, at: u64, block: Option<(u64, Option<u64>)>) {
        self.mark.merged(log, at, block);
    }

    /// Whether a block of log `log` had an item earlier than its `base_time`.
    pub fn early(&self, log: usize) -> bool {
        self.mark.early(log)
    }

    /// Whether a block of any log had an item earlier than its `base_time`.
    pub fn any_early(&self) -> bool {
        self.mark.any_early()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Whether more than the window is held.
    pub fn over_window(&self) -> bool {
        self.held > self.window
    }

    /// Whether the earliest item held is before the watermark: no later piece can precede
    /// it. (The least place held only grows as items are handed on, so this holds until the
    /// next piece comes, as when it was checked right after it.)
    pub fn below_mark(&self) -> bool {
        self.mark.key().is_some_and(|key| self.heap.peek().is_some_and(|Reverse((top, _))| top.0 < key))
    }

    /// Pieces whose every item was handed on.
    pub fn spent(&mut self) -> &mut Vec<T> {
        &mut self.spent
    }

    /// Holds `piece`, on its thread's chain when it follows the chain's last item, else on a
    /// chain of its own.
    pub fn hold(&mut self, piece: T) {
        let first = self.keys.place(&piece, piece.first());
        let last = self.keys.place(&piece, piece.last());
        self.held += piece.bytes();
        let key = (first.1, first.2);
        let chain = match self.primary.get(&key) {
            Some(&c) if self.chains[c].last.is_none_or(|end| first > end) => c,
            before => {
                // A piece before its chain's last (a clock stepped back, or a ring read from
                // the middle of its wrap) opens a chain that its thread's next pieces go on.
                let c = self.free.pop().unwrap_or_else(|| {
                    self.chains.push(Chain::default());
                    self.chains.len() - 1
                });
                if let Some(&old) = before {
                    self.chains[old].primary = false;
                }
                self.primary.insert(key, c);
                self.chains[c].primary = true;
                c
            }
        };
        let at = piece.first();
        let ch = &mut self.chains[chain];
        ch.last = Some(last);
        ch.pieces.push_back(piece);
        if ch.pieces.len() == 1 {
            ch.at = at;
            self.heap.push(Reverse((first, chain)));
        }
    }

    /// Takes the earliest item held: its piece, where it is there, and its place.
    pub fn take(&mut self) -> Option<(&T, At, Place)> {
        let &Reverse((place, c)) = self.heap.peek()?;
        let ch = &mut self.chains[c];
        let piece = ch.pieces.front()?;
        let at = ch.at;
        if let Some(next) = piece.next(at) {
            ch.at = next;
            let next = self.keys.place(piece, next);
            if let Some(mut top) = self.heap.peek_mut() {
                *top = Reverse((next, c));
            }
            return Some((&self.chains[c].pieces[0], at, place));
        }
        let piece = ch.pieces.pop_front()?;
        self.held -= piece.bytes();
        self.spent.push(piece);
        self.after_front(c);
        Some((self.spent.last()?, at, place))
    }

    /// Hands to `emit` every item that no later piece can precede (by the watermark), then the
    /// earliest items while more than the window is held: in runs, each a piece's items
    /// `from` up to the one `to` (`None`: to its end), as [`Order::finish`].
    pub fn hand_on_due<F>(&mut self, emit: &mut F) -> ControlFlow<()>
    where
        F: FnMut(&Keys, &T, At, Option<At>) -> ControlFlow<()>,
    {
        if let Some(key) = self.mark.key() {
            // Every item of a key below the mark's (ties wait: a later piece may hold an item
            // of the same time that comes first).
            let limit = (key.saturating_sub(1), usize::MAX, u64::MAX, u32::MAX, u64::MAX, u64::MAX, usize::MAX);
            while self.heap.peek().is_some_and(|Reverse((first, _))| first.0 < key) {
                self.run(emit, Some(limit))?;
            }
        }
        while self.held > self.window {
            self.run(emit, None)?;
        }
        ControlFlow::Continue(())
    }

    /// Hands every item held to `emit`, in runs as [`Order::hand_on_due`].
    pub fn finish<F>(&mut self, emit: &mut F) -> ControlFlow<()>
    where
        F: FnMut(&Keys, &T, At, Option<At>) -> ControlFlow<()>,
    {
        while !self.heap.is_empty() {
            self.run(emit, None)?;
        }
        ControlFlow::Continue(())
    }

    /// Hands on the earliest chain's items up to the next chain's earliest item (and none
    /// after `limit`).
    fn run<F>(&mut self, emit: &mut F, limit: Option<Place>) -> ControlFlow<()>
    where
        F: FnMut(&Keys, &T, At, Option<At>) -> ControlFlow<()>,
    {
        let Some(&Reverse((_, c))) = self.heap.peek() else { return ControlFlow::Continue(()) };
        // The next chain's earliest item: the earlier of the top's children (the heap's slice
        // is its tree, level by level). The top stays on the heap, to be replaced below with
        // one sifting instead of a pop and a push: runs are short where threads interleave.
        let children = self.heap.as_slice().get(1..).unwrap_or_default();
        let next = children.iter().take(2).max().map(|Reverse((place, _))| *place);
        let bound = match (next, limit) {
            (Some(next), Some(limit)) => Some(next.min(limit)),
            (next, limit) => next.or(limit),
        };
        let ch = &mut self.chains[c];
        let mut flow = ControlFlow::Continue(());
        while let Some(piece) = ch.pieces.front() {
            let from = ch.at;
            let to = self.keys.run_end(piece, from, bound);
            if to != Some(from) {
                flow = emit(&self.keys, piece, from, to);
            }
            match to {
                Some(to) => {
                    ch.at = to;
                    break;
                }
                None => {
                    self.held -= piece.bytes();
                    self.spent.extend(ch.pieces.pop_front());
                    if let Some(piece) = ch.pieces.front() {
                        ch.at = piece.first();
                    }
                }
            }
            if flow.is_break() {
                break;
            }
        }
        self.after_run(c);
        flow
    }

    /// The heap's top (chain `c`) after its front piece was handed on whole.
    fn after_front(&mut self, c: usize) {
        if let Some(piece) = self.chains[c].pieces.front() {
            self.chains[c].at = piece.first();
        }
        self.after_run(c);
    }

    /// The heap's top (chain `c`) after items of it were handed on: its next item's place, or
    /// off the heap when it has none.
    fn after_run(&mut self, c: usize) {
        let ch = &mut self.chains[c];
        match ch.pieces.front() {
            Some(piece) => {
                let next = self.keys.place(piece, ch.at);
                if let Some(mut top) = self.heap.peek_mut() {
                    *top = Reverse((next, c));
                }
            }
            None => {
                self.heap.pop();
                ch.last = None;
                if !ch.primary {
                    self.free.push(c);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A piece of times, its positions their indexes.
    struct Times {
        tie: Tie,
        times: Vec<u64>,
    }

    impl Timed for Times {
        fn tie(&self) -> Tie {
            self.tie
        }
        fn first(&self) -> At {
            (0, self.times[0])
        }
        fn next(&self, (i, _): At) -> Option<At> {
            self.times.get(i + 1).map(|&t| (i + 1, t))
        }
        fn last(&self) -> At {
            (self.times.len() - 1, self.times[self.times.len() - 1])
        }
        fn bytes(&self) -> usize {
            self.times.len()
        }
    }

    fn piece(thread: u64, sequence: u64, times: &[u64]) -> Times {
        Times { tie: Tie { log: 0, thread, segment: 0, sequence, index: sequence }, times: times.to_vec() }
    }

    /// What `take` hands on, one at a time, and what runs hand on, agree, in the tie order.
    #[test]
    fn runs_and_single_items_hand_on_the_same_order() {
        let pieces = || {
            vec![
                piece(2, 0, &[1, 3, 5]),
                piece(1, 1, &[1, 2, 5]),
                // Before its thread's last: a chain of its own.
                piece(1, 2, &[0, 4]),
                piece(2, 3, &[6, 7]),
            ]
        };
        let mark = || Watermark::new(vec![None], None);
        let mut one = Order::new(Keys::new(None), usize::MAX, mark());
        let mut taken: Vec<(u64, u64, Place)> = Vec::new();
        for p in pieces() {
            one.hold(p);
        }
        while let Some((p, (_, time), place)) = one.take() {
            taken.push((time, p.tie.thread, place));
        }
        assert_eq!(one.spent().len(), 4);
        let mut runs = Order::new(Keys::new(None), usize::MAX, mark());
        for p in pieces() {
            runs.hold(p);
        }
        let mut ran: Vec<(u64, u64, Place)> = Vec::new();
        let _ = runs.finish(&mut |keys: &Keys, p: &Times, from: At, to: Option<At>| {
            let mut at = Some(from);
            while let Some(a) = at
                && Some(a) != to
            {
                ran.push((a.1, p.tie.thread, keys.place(p, a)));
                at = p.next(a);
            }
            ControlFlow::Continue(())
        });
        assert_eq!(taken, ran);
        let times: Vec<(u64, u64)> = taken.iter().map(|&(t, thread, _)| (t, thread)).collect();
        assert_eq!(times, [(0, 1), (1, 1), (1, 2), (2, 1), (3, 2), (4, 1), (5, 1), (5, 2), (6, 2), (7, 2)]);
        assert!(taken.windows(2).all(|w| w[0].2 < w[1].2), "places strictly increase");
    }

    /// The window: more than it holds hands on the earliest items; the mark: items before it.
    #[test]
    fn the_mark_and_the_window_say_what_is_due() {
        let mut o = Order::new(Keys::new(None), 4, Watermark::new(vec![None], None));
        o.hold(piece(1, 0, &[5, 6, 7]));
        assert!(!o.over_window() && !o.below_mark());
        o.hold(piece(2, 1, &[1, 2]));
        assert!(o.over_window());
        let mut out: Vec<u64> = Vec::new();
        let _ = o.hand_on_due(&mut |_: &Keys, p: &Times, from: At, to: Option<At>| {
            let end = to.map_or(p.times.len(), |t| t.0);
            out.extend(&p.times[from.0..end]);
            ControlFlow::Continue(())
        });
        // The earliest run (thread 2's, which comes whole before thread 1's first) brings it
        // under the window.
        assert_eq!(out, [1, 2]);
        assert!(!o.over_window());
        let mut o = Order::new(Keys::new(None), usize::MAX, Watermark::new(vec![Some(Vec::new())], None));
        o.hold(piece(1, 0, &[5, 6]));
        assert!(o.below_mark(), "an indexed log with no block left: everything is due");
    }
}
