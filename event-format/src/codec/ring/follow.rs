//! Following a ring file while its program writes it (docs/FORMAT.md, "Following a ring
//! file"): each poll yields what was committed since the last, once.

use super::read::{PinnedRecord, ReadAt, RingReader, pins_by_thread, put_back};
use crate::codec::decode::Block;
use crate::codec::wire::BLOCK_HEADER_LEN;
use std::io;

/// What [`Follower::poll`] found.
#[derive(Clone, Debug)]
pub enum FollowItem {
    /// New records of a block: those at offsets `from..` of its records area.
    Records {
        /// The slot.
        slot: u32,
        /// The block, checked (sealed by the reader when it is being written).
        block: Block,
        /// Offset in `block.records` of the first record not yet yielded.
        from: usize,
    },
    /// Blocks of a thread its ring overwrote before following started: gone before the
    /// follower came, so not a loss of the follower's (`tail -f` does not call the lines it
    /// starts after lost). Reported once, on the first read of each thread there at the start.
    Before {
        /// The thread.
        thread: u64,
        /// How many blocks.
        blocks: u64,
    },
    /// Blocks of a thread overwritten after following started, before the follower could read
    /// them: events the follower lost.
    Overwritten {
        /// The thread.
        thread: u64,
        /// How many blocks.
        blocks: u64,
    },
    /// A block that failed its checks.
    Damaged {
        /// The thread.
        thread: u64,
        /// The block's sequence number.
        sequence: u64,
        /// Why.
        why: String,
    },
    /// The pin area (since layout 1.0.2) could not be read whole, on the first poll from the
    /// oldest block: the pinned records before the damage are put back as usual, those after
    /// it are lost. Reported once.
    PinAreaDamaged {
        /// Why.
        why: String,
    },
}

#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    thread: u64,
    /// The sequence of the next block to read: at most 2^32, one past the largest sequence
    /// a position can hold (a file that claims block 2^32 − 1 has nothing after it).
    next: u64,
    /// Bytes of block `next`'s records already yielded.
    shown: usize,
    /// Its thread was there when following started and has not been read yet: blocks its ring
    /// lost before it are [`FollowItem::Before`], not overwritten under the follower.
    there_at_start: bool,
}

/// Where following starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    /// At the oldest block the file holds: what is there is shown first.
    Oldest,
    /// After what is committed when following starts: only what comes next is shown.
    Now,
}

/// Follows a ring file while its program writes it, like ftrace's `trace_pipe`: each
/// [`poll`](Follower::poll) yields what was committed since the last, in order per thread,
/// and reports what the writer overwrote after following started before it could be read.
#[derive(Debug)]
pub struct Follower<R> {
    reader: RingReader<R>,
    cursors: Vec<Cursor>,
    start: Start,
    /// Whether the first poll, which finds the threads there at the start, has run.
    started: bool,
    /// The pin area's records by thread (since layout 1.0.2), read at the first poll when
    /// following from the oldest block: a thread there at the start whose ring lost its
    /// pinned records gets them first, in blocks below its oldest (as `RingBlocks` does).
    pins: std::collections::BTreeMap<u64, Vec<PinnedRecord>>,
}

impl<R: ReadAt> Follower<R> {
    /// Follows from the oldest block still in the file: the first poll yields what the file
    /// holds, then each poll what came since. Blocks the rings overwrote before the first
    /// poll are [`FollowItem::Before`].
    pub fn new(reader: RingReader<R>) -> Follower<R> {
        Follower::starting(reader, Start::Oldest)
    }

    /// Follows from now: the first poll yields nothing that was committed before it (as
    /// `tail -f -n 0`), then each poll what came since.
    pub fn from_now(reader: RingReader<R>) -> Follower<R> {
        Follower::starting(reader, Start::Now)
    }

    fn starting(reader: RingReader<R>, start: Start) -> Follower<R> {
        let slots = reader.layout().slots as usize;
        Follower {
            reader,
            cursors: vec![Cursor::default(); slots],
            start,
            started: false,
            pins: std::collections::BTreeMap::new(),
        }
    }

    /// The reader.
    pub fn reader(&self) -> &RingReader<R> {
        &self.reader
    }

    /// What was committed since the last poll.
    pub fn poll(&mut self) -> io::Result<Vec<FollowItem>> {
        let mut out = Vec::new();
        let first = !std::mem::replace(&mut self.started, true);
        if first && self.start == Start::Oldest {
            // Damage of the pin area leaves the threads' rings as they are, and is said.
            match self.reader.read_pins() {
                Ok(area) => {
                    if let Some(why) = &area.damage {
                        out.push(FollowItem::PinAreaDamaged { why: why.clone() });
                    }
                    self.pins = pins_by_thread(area);
                }
                Err(e) => out.push(FollowItem::PinAreaDamaged { why: format!("it could not be read: {e}") }),
            }
        }
        for index in 0..self.reader.layout().slots {
            let Some(slot) = self.reader.slot(index)? else { continue };
            let cursor = &mut self.cursors[index as usize];
            if cursor.thread != slot.thread {
                *cursor = Cursor { thread: slot.thread, next: 0, shown: 0, there_at_start: first };
                if first && self.start == Start::Now {
                    // What it committed so far is behind the follower: its current block, to
                    // the committed end.
                    cursor.next = u64::from(slot.sequence);
                    cursor.shown = (slot.end as usize).saturating_sub(BLOCK_HEADER_LEN);
                    cursor.there_at_start = false;
                    continue;
                }
            }
            let sequence = u64::from(slot.sequence);
            if sequence < cursor.next
                || (sequence == cursor.next && slot.end as usize <= BLOCK_HEADER_LEN + cursor.shown)
            {
                continue; // nothing new
            }
            // cursor.next <= sequence, a u32.
            let found = self.reader.read_slot(index, cursor.next as u32)?;
            let Some(now) = found.slot else { continue };
            if now.thread != cursor.thread {
                continue; // changed owner meanwhile: the next poll starts it afresh
            }
            let blocks = found.first_sequence.saturating_sub(cursor.next);
            if cursor.there_at_start
                && let Some(records) = self.pins.remove(&now.thread)
            {
                let oldest = found.blocks.first().map(|b| (b.header.sequence, b.header.base_time));
                let oldest = oldest.or((found.first_sequence > 0).then_some((found.first_sequence, u64::MAX)));
                for mut block in put_back(self.reader.layout(), now.thread, &records, oldest).0 {
                    let block_size = self.reader.layout().block_size;
                    crate::codec::callsites::expand_in_place(block.order, &mut block.records, block_size);
                    out.push(FollowItem::Records { slot: index, block, from: 0 });
                }
            }
            if blocks > 0 {
                out.push(if cursor.there_at_start {
                    FollowItem::Before { thread: now.thread, blocks }
                } else {
                    FollowItem::Overwritten { thread: now.thread, blocks }
                });
                cursor.next = found.first_sequence;
                cursor.shown = 0;
            }
            cursor.there_at_start = false;
            // Damaged blocks and good ones in sequence order, so that moving the cursor past
            // a damaged block never skips a good block before it.
            let mut damaged = found.damaged.into_iter().peekable();
            let mut skip_damaged = |cursor: &mut Cursor, out: &mut Vec<FollowItem>, before: u64| {
                while let Some((sequence, why)) = damaged.next_if(|(s, _)| *s < before) {
                    out.push(FollowItem::Damaged { thread: now.thread, sequence, why });
                    if sequence >= cursor.next {
                        cursor.next = sequence + 1;
                        cursor.shown = 0;
                    }
                }
            };
            for block in found.blocks {
                let seq = block.index;
                skip_damaged(cursor, &mut out, seq);
                if seq < cursor.next {
                    continue;
                }
                let from = if seq == cursor.next { cursor.shown } else { 0 };
                let len = block.records.len();
                if Some(block.index) == found.partial {
                    cursor.next = seq;
                    cursor.shown = len;
                } else {
                    cursor.next = seq + 1;
                    cursor.shown = 0;
                }
                if len > from {
                    // The cursor counts the records as written; the reader gets them
                    // expanded, from the same record on.
                    let mut block = block;
                    let block_size = self.reader.layout().block_size;
                    let from = crate::codec::callsites::expand_in_place_from(
                        block.order,
                        &mut block.records,
                        from,
                        block_size,
                    );
                    out.push(FollowItem::Records { slot: index, block, from });
                }
            }
            skip_damaged(cursor, &mut out, u64::MAX);
        }
        Ok(out)
    }
}
