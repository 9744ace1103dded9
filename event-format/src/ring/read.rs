//! Reading a ring file with positioned reads: its header, its slots (copied, then checked
//! against a second read of the slot, docs/FORMAT.md "Reading a slot"), and its blocks as a
//! [`BlockSource`], or re-encoded as a stream for a stream sink ([`RingStream`]).

use super::layout::{Layout, RECLAIMING, RingError, STATE_CREATING, at, slot_at, split_position};
use crate::decode::{Block, BlockError, BlockSource, DecodeOptions};
use crate::schema::Version;
use crate::wire::{
    BLOCK_HEADER_LEN, BLOCK_PACKED, BLOCK_SYNC, BlockHeader, Damage, Header, Order, seal_block, verify_block,
};
use std::io;

pub use crate::read_at::ReadAt;

/// One slot as read at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotState {
    /// The slot's index.
    pub index: u32,
    /// The owning thread's id; 0 when the slot was never used.
    pub thread: u64,
    /// The block being written: the low 32 bits of its sequence number.
    pub sequence: u32,
    /// The end of its committed records.
    pub end: u32,
    /// Whether the owning thread was running.
    pub live: bool,
    /// Events the owner refused because its ring was full.
    pub refused: u64,
}

/// The live words of page 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// [`STATE_CREATING`], [`STATE_RECORDING`](super::STATE_RECORDING) or
    /// [`STATE_CLOSED`](super::STATE_CLOSED) (or a newer value).
    pub state: u32,
    /// The writer's last sign of life, ns since the Unix epoch.
    pub heartbeat_ns: u64,
    /// Events no slot holds (see [`at::LOST`]).
    pub lost: u64,
    /// Threads that found no free slot.
    pub threads_without_slot: u64,
    /// Slots taken over from exited threads (their remaining blocks discarded).
    pub slots_reused: u64,
    /// Events discarded with reused slots (see [`at::DISCARDED`]; 0 before layout 1.0.1).
    pub discarded: u64,
}

/// What [`RingReader::read_slot`] found in one slot.
#[derive(Clone, Debug, Default)]
pub struct SlotBlocks {
    /// The slot as read.
    pub slot: Option<SlotState>,
    /// The blocks still in the ring, oldest first, each sealed and checked; the block being
    /// written is sealed by the reader at its committed end (and left out when empty).
    pub blocks: Vec<Block>,
    /// Blocks of this thread overwritten before they could be read: the first sequence
    /// number still there. Sequences below it (from the reader's starting point) are gone.
    pub first_sequence: u64,
    /// Blocks in the ring that failed their checks, with why.
    pub damaged: Vec<(u64, String)>,
    /// The sequence of the block that was being written, when it is among `blocks`: the
    /// reader sealed it at its committed end, and later reads may find more records in it.
    pub partial: Option<u64>,
}

/// Reads a ring file, post mortem or while its program runs.
#[derive(Debug)]
pub struct RingReader<R> {
    source: R,
    layout: Layout,
    header: Header,
    header_bytes: Vec<u8>,
}

/// Reads an atomic word twice until two reads agree: a positioned read is not one load, so
/// a word written meanwhile could come back torn. The fence between the reads is a load
/// barrier between two system calls, not an ordering of atomics (module docs, "Memory").
fn stable_u64<R: ReadAt + ?Sized>(source: &R, order: Order, offset: u64) -> io::Result<u64> {
    let mut last = read_u64(source, order, offset)?;
    for _ in 0..16 {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        let again = read_u64(source, order, offset)?;
        if again == last {
            return Ok(again);
        }
        last = again;
    }
    Ok(last)
}

fn read_u64<R: ReadAt + ?Sized>(source: &R, order: Order, offset: u64) -> io::Result<u64> {
    let mut b = [0u8; 8];
    source.read_exact_at(&mut b, offset)?;
    Ok(order.u64(&b))
}

fn read_u32<R: ReadAt + ?Sized>(source: &R, order: Order, offset: u64) -> io::Result<u32> {
    let mut b = [0u8; 4];
    source.read_exact_at(&mut b, offset)?;
    Ok(order.u32(&b))
}

impl<R: ReadAt> RingReader<R> {
    /// Opens a ring file: checks its header, its length and the stream header inside.
    pub fn open(source: R, options: DecodeOptions) -> Result<RingReader<R>, RingError> {
        let len = source.size()?;
        let mut page = vec![0u8; (at::CRC + 4).min(len as usize)];
        source.read_exact_at(&mut page, 0)?;
        let layout = Layout::decode(&page, options.force)?;
        if len < layout.file_len() {
            return Err(RingError::Truncated { have: len, need: layout.file_len() });
        }
        let state = read_u32(&source, layout.order, at::STATE as u64)?;
        if state == STATE_CREATING {
            return Err(RingError::Creating);
        }
        let mut header_bytes = vec![0u8; layout.header_len as usize];
        source.read_exact_at(&mut header_bytes, layout.stream_header())?;
        let header = Header::decode(&header_bytes, options.force).map_err(RingError::Stream)?;
        let declared = Header::prefix(&header_bytes).map_err(RingError::Stream)?.header_len;
        if declared != layout.header_len {
            return Err(RingError::BadHeader(format!(
                "the stream header says it is {declared} bytes long, the ring file {}",
                layout.header_len
            )));
        }
        if header.block_size != layout.block_size || header.order != layout.order {
            return Err(RingError::BadHeader(format!(
                "the stream header says {} blocks of {} bytes, the ring file {} blocks of {} bytes",
                header.order.name(),
                header.block_size,
                layout.order.name(),
                layout.block_size
            )));
        }
        Ok(RingReader { source, layout, header, header_bytes })
    }

    /// The file's geometry.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The embedded stream header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The embedded stream header's bytes: a stream made of them and the blocks that
    /// [`read_slot`](Self::read_slot) returns decodes with [`Decoder`](crate::decode::Decoder).
    pub fn header_bytes(&self) -> &[u8] {
        &self.header_bytes
    }

    /// The source the reader reads.
    pub fn source(&self) -> &R {
        &self.source
    }

    /// The `u64` at `offset` of the file (in its byte order), read again until two reads
    /// agree: how to read a word the writer stores atomically (module docs, "Memory").
    pub fn read_u64(&self, offset: u64) -> io::Result<u64> {
        stable_u64(&self.source, self.layout.order, offset)
    }

    /// The `u32` at `offset` of the file, in its byte order.
    pub fn read_u32(&self, offset: u64) -> io::Result<u32> {
        read_u32(&self.source, self.layout.order, offset)
    }

    /// The live words of page 0.
    pub fn status(&self) -> io::Result<Status> {
        let o = self.layout.order;
        Ok(Status {
            state: read_u32(&self.source, o, at::STATE as u64)?,
            heartbeat_ns: stable_u64(&self.source, o, at::HEARTBEAT_NS as u64)?,
            lost: stable_u64(&self.source, o, at::LOST as u64)?,
            threads_without_slot: stable_u64(&self.source, o, at::THREADS_WITHOUT_SLOT as u64)?,
            slots_reused: stable_u64(&self.source, o, at::SLOTS_REUSED as u64)?,
            // The word was reserved before layout 1.0.1: readers ignore it there.
            discarded: if self.layout.version >= Version::new(1, 0, 1) {
                stable_u64(&self.source, o, at::DISCARDED as u64)?
            } else {
                0
            },
        })
    }

    /// Slot `index` as it is now; `None` when it was never used.
    pub fn slot(&self, index: u32) -> io::Result<Option<SlotState>> {
        let o = self.layout.order;
        let base = self.layout.slot(index);
        let thread = stable_u64(&self.source, o, base + slot_at::THREAD as u64)?;
        if thread == 0 || thread == RECLAIMING {
            return Ok(None);
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        let (sequence, end) = split_position(stable_u64(&self.source, o, base + slot_at::POSITION as u64)?);
        let live = read_u32(&self.source, o, base + slot_at::LIVE as u64)? != 0;
        let refused = stable_u64(&self.source, o, base + slot_at::REFUSED as u64)?;
        Ok(Some(SlotState { index, thread, sequence, end, live, refused }))
    }

    /// The blocks of slot `index` from sequence `from` on (the low 32 bits, as positions
    /// hold them), read consistently: a block the writer overwrote while it was being read
    /// is left out and counted as overwritten.
    pub fn read_slot(&self, index: u32, from: u32) -> io::Result<SlotBlocks> {
        for _ in 0..8 {
            let Some(before) = self.slot(index)? else {
                return Ok(SlotBlocks { first_sequence: u64::from(from), ..SlotBlocks::default() });
            };
            let k = self.layout.blocks_per_slot;
            // The ring holds sequences `current - k + 1 ..= current`.
            let oldest = before.sequence.saturating_sub(k - 1).max(from);
            let mut raw = Vec::new();
            for seq in oldest..=before.sequence {
                let mut bytes = vec![0u8; self.layout.block_size as usize];
                let len = if seq == before.sequence { before.end as usize } else { bytes.len() };
                if len > bytes.len() || len < BLOCK_HEADER_LEN {
                    break;
                }
                self.source.read_exact_at(&mut bytes[..len], self.layout.block(index, seq % k))?;
                raw.push((seq, bytes, len));
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            let Some(after) = self.slot(index)? else { continue };
            if after.thread != before.thread {
                continue; // the slot changed owner while it was read: read it again
            }
            // Blocks the writer may have reused while they were copied are not trusted.
            let first_kept = after.sequence.saturating_sub(k - 1);
            let mut out = SlotBlocks {
                slot: Some(after),
                first_sequence: u64::from(first_kept.max(oldest)),
                ..SlotBlocks::default()
            };
            for (seq, mut bytes, len) in raw {
                if seq < first_kept {
                    continue;
                }
                let checked = if seq == before.sequence {
                    self.seal_current(&mut bytes, len, seq, before.thread)
                } else {
                    verify_block(self.layout.order, &bytes)
                        .map_err(|d| d.to_string())
                        .and_then(|header| in_place(&header, seq, before.thread).map(Some))
                };
                match checked {
                    Ok(None) => {}
                    // Ring-file slots are never packed (they have a fixed size).
                    Ok(Some(header)) if header.flags & BLOCK_PACKED != 0 => {
                        out.damaged.push((u64::from(seq), "a packed block in a ring file".to_owned()));
                    }
                    Ok(Some(header)) => {
                        if seq == before.sequence {
                            out.partial = Some(u64::from(seq));
                        }
                        let used = header.used as usize;
                        out.blocks.push(Block {
                            index: u64::from(seq),
                            segment: 0,
                            offset: self.layout.block(index, seq % k),
                            header,
                            records: bytes[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used].to_vec(),
                            order: self.layout.order,
                            stored_len: bytes.len() as u64,
                        });
                    }
                    Err(why) => out.damaged.push((u64::from(seq), why)),
                }
            }
            return Ok(out);
        }
        Err(io::Error::other("the slot kept changing owner while it was read"))
    }

    /// Seals a copy of the block being written at its committed end. `None` when it holds no
    /// record yet.
    fn seal_current(&self, bytes: &mut [u8], end: usize, seq: u32, thread: u64) -> Result<Option<BlockHeader>, String> {
        if end <= BLOCK_HEADER_LEN {
            return Ok(None);
        }
        let o = self.layout.order;
        let header = BlockHeader::read(o, bytes);
        if o.u32(bytes) != BLOCK_SYNC || header.sequence as u32 != seq || header.thread != thread || header.flags != 0 {
            return Err(format!(
                "the block being written has a bad header (sequence {}, thread {}, expected {seq} and {thread})",
                header.sequence, header.thread
            ));
        }
        seal_block(o, bytes, (end - BLOCK_HEADER_LEN) as u32);
        verify_block(o, bytes).map(Some).map_err(|d| d.to_string())
    }
}

/// Whether a sealed block's header is the block its slot holds at this place: sequence
/// `seq` (modulo 2^32, as positions hold it) of the slot's `owner`. A block that passed its
/// CRC elsewhere in the ring (a stale copy, a block of another thread) is damage, never
/// another thread's or another number's events (docs/FORMAT.md, "Reading a slot").
fn in_place(header: &BlockHeader, seq: u32, owner: u64) -> Result<BlockHeader, String> {
    if header.sequence as u32 == seq && header.thread == owner {
        return Ok(*header);
    }
    Err(format!(
        "the block says it is block {} of thread {}, where its slot holds block {seq} of thread {owner}",
        header.sequence, header.thread
    ))
}

/// What a [`RingBlocks`] (or [`RingStream`]) found, once read to its end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RingFindings {
    /// Slots that held a thread.
    pub threads: u64,
    /// Blocks read from the slots (the loss report's blocks of thread 0 not included).
    pub blocks: u64,
    /// Blocks overwritten by their threads' rings (sequence numbers no longer there).
    pub overwritten_blocks: u64,
    /// Blocks that failed their checks and were left out, with why: (slot, sequence, why).
    pub damaged: Vec<(u32, u64, String)>,
    /// Events refused because a ring was full, over all slots.
    pub refused: u64,
    /// Events no slot holds.
    pub lost: u64,
    /// Threads that found no free slot.
    pub threads_without_slot: u64,
    /// Slots taken over from exited threads (their remaining blocks discarded).
    pub slots_reused: u64,
    /// Events discarded with reused slots; reported, after `lost`, as a `Dropped(0, ..)`.
    pub discarded: u64,
    /// The file's state when it was read.
    pub state: u32,
    /// The writer's last sign of life, ns since the Unix epoch, when the file was read.
    pub heartbeat_ns: u64,
}

/// A ring file as a source of blocks (docs/FORMAT.md, "Reading a ring file as a stream"):
/// each slot's blocks oldest first, as [`RingReader::read_slot`] checks them, then, when
/// events were refused or lost, blocks of thread 0 whose `Dropped` events report them, so
/// that a reader counts every loss. Blocks that fail their checks are left out and listed
/// in its [`findings`](RingBlocks::findings). One slot's blocks are in memory at a time.
///
/// Nothing is re-encoded: the blocks are the ones the reader copied and checked.
#[derive(Debug)]
pub struct RingBlocks<R> {
    reader: RingReader<R>,
    next_slot: u32,
    pending: std::collections::VecDeque<Block>,
    findings: RingFindings,
    drops: Vec<(u64, u64)>,
    last_time: u64,
    finished: bool,
    /// How many blocks were handed out: the next one's index.
    handed: u64,
}

impl<R: ReadAt> RingBlocks<R> {
    /// The blocks of the ring file `reader` reads.
    pub fn new(reader: RingReader<R>) -> RingBlocks<R> {
        RingBlocks {
            reader,
            next_slot: 0,
            pending: std::collections::VecDeque::new(),
            findings: RingFindings::default(),
            drops: Vec::new(),
            last_time: 0,
            finished: false,
            handed: 0,
        }
    }

    /// What was found so far; complete once [`next_block`](BlockSource::next_block) has
    /// returned `None`.
    pub fn findings(&self) -> &RingFindings {
        &self.findings
    }

    /// The reader.
    pub fn reader(&self) -> &RingReader<R> {
        &self.reader
    }

    /// Reads slots until a block is pending or all are read; then the loss report.
    fn refill(&mut self) -> io::Result<()> {
        let layout = self.reader.layout;
        while self.pending.is_empty() && self.next_slot < layout.slots {
            let index = self.next_slot;
            self.next_slot += 1;
            let found = self.reader.read_slot(index, 0)?;
            let Some(slot) = found.slot else { continue };
            self.findings.threads += 1;
            self.findings.overwritten_blocks += found.first_sequence;
            // The counts come from the file, which may lie: saturate rather than wrap.
            self.findings.refused = self.findings.refused.saturating_add(slot.refused);
            if slot.refused > 0 {
                self.drops.push((slot.thread, slot.refused));
            }
            for (seq, why) in found.damaged {
                self.findings.damaged.push((index, seq, why));
            }
            for block in found.blocks {
                self.last_time = self.last_time.max(block.header.base_time);
                self.findings.blocks += 1;
                self.pending.push_back(block);
            }
        }
        if self.pending.is_empty() && !self.finished {
            self.finished = true;
            let status = self.reader.status()?;
            self.findings.state = status.state;
            self.findings.heartbeat_ns = status.heartbeat_ns;
            self.findings.lost = status.lost;
            self.findings.threads_without_slot = status.threads_without_slot;
            self.findings.slots_reused = status.slots_reused;
            self.findings.discarded = status.discarded;
            if status.lost > 0 {
                self.drops.push((0, status.lost));
            }
            if status.discarded > 0 {
                self.drops.push((0, status.discarded));
            }
            let report = crate::wire::dropped_report(layout.order, layout.block_size, 0, self.last_time, &self.drops);
            for bytes in report {
                // Blocks this module just wrote: they pass their checks.
                if let Ok(header) = verify_block(layout.order, &bytes) {
                    let used = header.used as usize;
                    self.pending.push_back(Block {
                        index: 0,
                        segment: 0,
                        offset: 0,
                        header,
                        records: bytes[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used].to_vec(),
                        order: layout.order,
                        stored_len: bytes.len() as u64,
                    });
                }
            }
        }
        Ok(())
    }
}

impl<R: ReadAt> RingBlocks<R> {
    /// The next block; an error when the file cannot be read.
    fn next_read(&mut self) -> io::Result<Option<Block>> {
        if self.pending.is_empty() && !self.finished {
            self.refill()?;
        }
        let Some(mut block) = self.pending.pop_front() else { return Ok(None) };
        // A block's index is its place among the blocks handed out, as in a stream.
        block.index = self.handed;
        self.handed += 1;
        Ok(Some(block))
    }
}

impl<R: ReadAt> BlockSource for RingBlocks<R> {
    fn header(&self) -> &Header {
        self.reader.header()
    }

    /// The next block. A read error ends the blocks, as it ends a stream.
    fn next_block(&mut self) -> Option<Result<Block, BlockError>> {
        match self.next_read() {
            Ok(block) => block.map(Ok),
            Err(e) => {
                self.finished = true;
                self.pending.clear();
                let offset = self.reader.layout.slot(self.next_slot.saturating_sub(1));
                self.next_slot = self.reader.layout.slots;
                Some(Err(BlockError {
                    index: self.handed,
                    segment: 0,
                    offset,
                    damage: Damage::Unreadable(e.to_string()),
                }))
            }
        }
    }
}

/// A ring file re-encoded as a stream: the stream header, then the blocks of a
/// [`RingBlocks`], each written whole. What the runtime copies into a stream sink when a
/// recording with a ring file stops; readers use [`RingBlocks`] and decode nothing twice.
#[derive(Debug)]
pub struct RingStream<R> {
    blocks: RingBlocks<R>,
    /// The bytes not yet read: the header, then one block at a time.
    current: Vec<u8>,
    at: usize,
}

impl<R: ReadAt> RingStream<R> {
    /// A stream of the ring file `reader` reads.
    pub fn new(reader: RingReader<R>) -> RingStream<R> {
        let current = reader.header_bytes.clone();
        RingStream { blocks: RingBlocks::new(reader), current, at: 0 }
    }

    /// What was found so far; complete once the stream has been read to its end.
    pub fn findings(&self) -> &RingFindings {
        self.blocks.findings()
    }

    /// The reader.
    pub fn reader(&self) -> &RingReader<R> {
        self.blocks.reader()
    }
}

impl<R: ReadAt> io::Read for RingStream<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.current.len() {
            match self.blocks.next_read()? {
                None => return Ok(0),
                Some(block) => {
                    let layout = self.blocks.reader.layout;
                    let mut bytes = vec![0u8; layout.block_size as usize];
                    block.header.write(layout.order, &mut bytes);
                    bytes[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + block.records.len()].copy_from_slice(&block.records);
                    seal_block(layout.order, &mut bytes, block.records.len() as u32);
                    self.current = bytes;
                    self.at = 0;
                }
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
