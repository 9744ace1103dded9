//! Reading a ring file with positioned reads: its header, its slots (copied, then checked
//! against a second read of the slot, docs/FORMAT.md "Reading a slot"), and its blocks as a
//! [`BlockSource`], or re-encoded as a stream for a stream sink ([`RingStream`]).

use super::layout::{
    Layout, PIN_ENTRY_HEADER, RECLAIMING, RingError, STATE_CREATING, at, pin_at, slot_at, split_position, tag,
};
use crate::codec::decode::{Block, BlockError, BlockSource, DecodeOptions, PendingBlock};
use crate::codec::wire::{
    BLOCK_HEADER_LEN, BLOCK_PACKED, BLOCK_SYNC, BlockHeader, BlockWriter, Damage, Header, Order, PushError,
    RECORD_HEADER_LEN, seal_block, verify_block,
};
use event_def::builtin::TIME_EXTEND;
use event_def::schema::Version;
use std::io;

pub use crate::codec::read_at::ReadAt;

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
    /// written is sealed by the reader at its committed end (and left out when empty). Their
    /// records are as the file holds them: records by callsite are not expanded (a reader
    /// expands them with [`callsites::expand_in_place`](crate::callsites::expand_in_place),
    /// as [`RingBlocks`] does; a copy keeps them, and fits its blocks).
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

/// A pinned record read from the pin area (docs/FORMAT.md, "Pin area").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinnedRecord {
    /// The thread that recorded it.
    pub thread: u64,
    /// Its time, in the stream's ticks.
    pub time: u64,
    /// The record as it is in a block: its header (code, length, a delta not to be read)
    /// and its arguments.
    pub record: Vec<u8>,
}

/// What [`RingReader::read_pins`] found in the pin area.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PinArea {
    /// The pinned records, in the order they were pinned (oldest first).
    pub records: Vec<PinnedRecord>,
    /// Pinned records the writer let go to make room (or that never fitted): the area's
    /// `PINS_DROPPED` word.
    pub dropped: u64,
    /// Why the area (or its entries from some point on) could not be read; the entries
    /// before the damage are in `records`.
    pub damage: Option<String>,
}

/// Reads a ring file, post mortem or while its program runs.
#[derive(Debug)]
pub struct RingReader<R> {
    source: R,
    layout: Layout,
    header: Header,
    header_bytes: Vec<u8>,
    /// Why the pin area's size was not taken (`Layout::decode_with_pins`): the pin area's
    /// damage, reported by [`read_pins`](RingReader::read_pins).
    pin_damage: Option<String>,
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
        // The fixed part and, since layout 1.0.2, the pin area's size after it.
        let mut page = vec![0u8; (at::PIN_HALF + 4).min(len as usize)];
        source.read_exact_at(&mut page, 0)?;
        let (layout, pin_damage) = Layout::decode_with_pins(&page, options.force)?;
        // The slots need the file up to the data area's end; a pin area cut short is the pin
        // area's damage (`read_pins`), not the file's.
        if len < layout.data_end() {
            return Err(RingError::Truncated { have: len, need: layout.data_end() });
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
        Ok(RingReader { source, layout, header, header_bytes, pin_damage })
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

    /// The pin area (since layout 1.0.2; docs/FORMAT.md, "Pin area"): the records pinned
    /// apart from the threads' rings, copied and checked as a slot is (the position read
    /// again after the copy; a copy raced by a compaction is read again). Empty when the file
    /// has no pin area; damaged, and empty, when its size at `PIN_HALF` breaks its rules, or
    /// is 0 while the area's words say that pins were kept (the size is outside page 0's CRC:
    /// a damaged one costs the pins, never the slots).
    pub fn read_pins(&self) -> io::Result<PinArea> {
        let layout = self.layout;
        let half = u64::from(layout.pin_half);
        if half == 0 {
            if let Some(why) = &self.pin_damage {
                let dropped = stable_u64(&self.source, layout.order, at::PINS_DROPPED as u64)?;
                return Ok(PinArea { dropped, damage: Some(format!("its size: {why}")), ..PinArea::default() });
            }
            if layout.version >= Version::new(1, 0, 2) {
                // Reserved before 1.0.2; since, 0 in a file without a pin area.
                let position = stable_u64(&self.source, layout.order, at::PIN_POSITION as u64)?;
                let dropped = stable_u64(&self.source, layout.order, at::PINS_DROPPED as u64)?;
                if position != 0 || dropped != 0 {
                    return Ok(PinArea {
                        dropped,
                        damage: Some(format!(
                            "its size reads 0 (no pin area), yet its position is {position:#x} and {dropped} pins were dropped"
                        )),
                        ..PinArea::default()
                    });
                }
            }
            return Ok(PinArea::default());
        }
        let area = layout.pin_area();
        if self.source.size()? < layout.file_len() {
            return Ok(PinArea {
                damage: Some(format!("the pin area is cut short (the file ends before byte {})", layout.file_len())),
                ..PinArea::default()
            });
        }
        let dropped = stable_u64(&self.source, layout.order, at::PINS_DROPPED as u64)?;
        for _ in 0..8 {
            let (epoch, end) = split_position(stable_u64(&self.source, layout.order, at::PIN_POSITION as u64)?);
            if u64::from(end) > half {
                return Ok(PinArea {
                    dropped,
                    damage: Some(format!("its committed end {end} is past its half of {half} bytes")),
                    ..PinArea::default()
                });
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            let mut bytes = vec![0u8; end as usize];
            self.source.read_exact_at(&mut bytes, area + u64::from(epoch % 2) * half)?;
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            let (again, _) = split_position(stable_u64(&self.source, layout.order, at::PIN_POSITION as u64)?);
            if again != epoch {
                continue; // the writer compacted the area meanwhile: read it again
            }
            let (records, damage) = pin_entries(layout.order, &bytes);
            return Ok(PinArea { records, dropped, damage });
        }
        Err(io::Error::other("the pin area kept changing while it was read"))
    }

    /// The blocks of slot `index` from sequence `from` on (the low 32 bits, as positions
    /// hold them), read consistently: a block the writer overwrote while it was being read
    /// is left out and counted as overwritten.
    pub fn read_slot(&self, index: u32, from: u32) -> io::Result<SlotBlocks> {
        if self.layout.pooled() {
            return self.read_pooled_slot(index, from);
        }
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
                self.take_copied(&mut out, &before, seq, &mut bytes, len, self.layout.block(index, seq % k));
            }
            return Ok(out);
        }
        Err(io::Error::other("the slot kept changing owner while it was read"))
    }

    /// A block of slot `before` copied while it stood (`len` bytes of `bytes`, from
    /// `offset`), checked and filed in `out`: the block being written sealed as it is so far
    /// (its sequence is `before`'s), any other verified; damage and a packed block (ring-file
    /// blocks have a fixed size, never packed) go to `out.damaged`.
    fn take_copied(
        &self,
        out: &mut SlotBlocks,
        before: &SlotState,
        seq: u32,
        bytes: &mut [u8],
        len: usize,
        offset: u64,
    ) {
        let checked = if seq == before.sequence {
            self.seal_current(bytes, len, seq, before.thread)
        } else {
            verify_block(self.layout.order, bytes)
                .map_err(|d| d.to_string())
                .and_then(|header| in_place(&header, seq, before.thread).map(Some))
        };
        match checked {
            Ok(None) => {}
            Ok(Some(header)) if header.flags & BLOCK_PACKED != 0 => {
                out.damaged.push((u64::from(seq), "a packed block in a ring file".to_owned()));
            }
            Ok(Some(header)) => {
                if seq == before.sequence {
                    out.partial = Some(u64::from(seq));
                }
                let used = header.used as usize;
                // As written: a block source expands records by callsite where it hands the
                // block on (`RingBlocks`, the follower); a copy keeps them as they are.
                let records = bytes[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used].to_vec();
                out.blocks.push(Block {
                    index: u64::from(seq),
                    segment: 0,
                    offset,
                    header,
                    records,
                    order: self.layout.order,
                    stored_len: bytes.len() as u64,
                });
            }
            Err(why) => out.damaged.push((u64::from(seq), why)),
        }
    }

    /// [`read_slot`](Self::read_slot) of a file whose slots share the data area (layout 1.1
    /// and later; docs/FORMAT.md, "Reading a slot of a shared data area"): the slot's blocks
    /// are those the block table names its, each copied and then kept only when its entry
    /// still names it (the writer changes a block's entry before it changes any of its
    /// bytes).
    fn read_pooled_slot(&self, index: u32, from: u32) -> io::Result<SlotBlocks> {
        let layout = self.layout;
        let o = layout.order;
        for _ in 0..8 {
            let Some(before) = self.slot(index)? else {
                return Ok(SlotBlocks { first_sequence: u64::from(from), ..SlotBlocks::default() });
            };
            // The entries naming this slot, at or before the block being written (modulo
            // 2^32: an entry just made for the next block is read next time).
            let table = self.read_table()?;
            let mut mine: Vec<(u32, u32)> = table
                .iter()
                .enumerate()
                .filter_map(|(b, &t)| {
                    let (slot, seq) = super::layout::split_tag(t)?;
                    let behind = before.sequence.wrapping_sub(seq);
                    (slot == index && behind < 1 << 31 && seq >= from).then_some((seq, b as u32))
                })
                .collect();
            mine.sort_by_key(|&(seq, _)| before.sequence.wrapping_sub(seq));
            mine.reverse();
            let mut raw = Vec::new();
            for &(seq, block) in &mine {
                let mut bytes = vec![0u8; layout.block_size as usize];
                let len = if seq == before.sequence { before.end as usize } else { bytes.len() };
                if len > bytes.len() || len < BLOCK_HEADER_LEN {
                    continue;
                }
                self.source.read_exact_at(&mut bytes[..len], layout.pool_block(block))?;
                raw.push((seq, block, bytes, len));
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            let Some(after) = self.slot(index)? else { continue };
            if after.thread != before.thread {
                continue; // the slot changed owner while it was read: read it again
            }
            let mut out = SlotBlocks { slot: Some(after), ..SlotBlocks::default() };
            let mut first = None;
            for (seq, block, mut bytes, len) in raw {
                // A block whose entry changed meanwhile was taken for another block (of this
                // ring or another's) and may have been written over: not trusted.
                if stable_u64(&self.source, o, layout.tag_at(block))? != tag(index, u64::from(seq)) {
                    continue;
                }
                first.get_or_insert(seq);
                self.take_copied(&mut out, &before, seq, &mut bytes, len, layout.pool_block(block));
            }
            // A ring's blocks run without a gap up to its newest (damaged ones count as there):
            // an older block beyond a gap (its entry not yet renamed when its writer stopped
            // between taking it from the ring and renaming it) was let go by its ring, and is
            // not the ring's: left out, as overwritten.
            let mut present: Vec<u64> =
                out.blocks.iter().map(|b| b.index).chain(out.damaged.iter().map(|d| d.0)).collect();
            present.sort_unstable();
            present.dedup();
            let mut start = present.len().saturating_sub(1);
            while start > 0 && present[start - 1] + 1 == present[start] {
                start -= 1;
            }
            if let Some(&cut) = present.get(start)
                && start > 0
            {
                out.blocks.retain(|b| b.index >= cut);
                out.damaged.retain(|(s, _)| *s >= cut);
                first = Some(cut as u32);
            }
            // The ring's blocks before its oldest still there were overwritten (or taken by
            // other rings), as a ring of its own size would have overwritten them.
            out.first_sequence = u64::from(first.unwrap_or(before.sequence.max(from)).max(from));
            return Ok(out);
        }
        Err(io::Error::other("the slot kept changing owner while it was read"))
    }

    /// The block table (layout 1.1 and later): every block's entry, each read as an atomic
    /// word is (module docs, "Memory"): a torn entry is no entry, and the check after the
    /// copy catches a block whose entry changed.
    fn read_table(&self) -> io::Result<Vec<u64>> {
        let layout = self.layout;
        let mut bytes = vec![0u8; (layout.blocks() * super::layout::TAG_LEN) as usize];
        self.source.read_exact_at(&mut bytes, layout.block_table())?;
        Ok(bytes.chunks_exact(8).map(|w| layout.order.u64(w)).collect())
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

/// The entries of a copy of the pin area's current half, up to its committed end; the first
/// that fails its checks ends them, and says why.
fn pin_entries(order: Order, bytes: &[u8]) -> (Vec<PinnedRecord>, Option<String>) {
    let mut records = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let damage = |why: String| Some(format!("its entry at byte {at}: {why}"));
        if rest.len() < PIN_ENTRY_HEADER + RECORD_HEADER_LEN {
            return (records, damage(format!("{} bytes are too few for an entry", rest.len())));
        }
        let len = order.u32(&rest[pin_at::LEN..]) as usize;
        if len > rest.len() || !len.is_multiple_of(8) || len < PIN_ENTRY_HEADER + RECORD_HEADER_LEN {
            return (records, damage(format!("length {len} is not a multiple of 8 in the {} bytes left", rest.len())));
        }
        let record_len = usize::from(order.u16(&rest[pin_at::RECORD + 2..]));
        if record_len < RECORD_HEADER_LEN || PIN_ENTRY_HEADER + record_len > len {
            return (records, damage(format!("its record's length {record_len} does not fit its {len} bytes")));
        }
        let end = PIN_ENTRY_HEADER + record_len;
        if crc32fast::hash(&rest[pin_at::THREAD..end]) != order.u32(&rest[pin_at::CRC..]) {
            return (records, damage("checksum mismatch".to_owned()));
        }
        if order.u16(&rest[pin_at::RECORD..]) == TIME_EXTEND {
            return (records, damage("a TimeExtend record is never pinned".to_owned()));
        }
        records.push(PinnedRecord {
            thread: order.u64(&rest[pin_at::THREAD..]),
            time: order.u64(&rest[pin_at::TIME..]),
            record: rest[pin_at::RECORD..end].to_vec(),
        });
        at += len;
    }
    (records, None)
}

/// Sealed blocks of `thread` that hold `records` (pinned records of that thread, in time
/// order), as many as they need, numbered 0 (the caller numbers them), each one's records
/// before the next one's.
fn pinned_blocks(order: Order, block_size: u32, thread: u64, records: &[PinnedRecord]) -> Vec<Vec<u8>> {
    let mut blocks = Vec::new();
    let mut writer: Option<BlockWriter> = None;
    for r in records {
        let code = order.u16(&r.record);
        let args = &r.record[RECORD_HEADER_LEN..];
        loop {
            let w = writer.get_or_insert_with(|| {
                let header = BlockHeader { thread, base_time: r.time, ..BlockHeader::default() };
                BlockWriter::new(order, block_size, &header)
            });
            match w.push_record(code, r.time, args) {
                Err(PushError::Full) if !w.is_empty() => {
                    blocks.extend(writer.take().map(BlockWriter::finish));
                }
                // Written, or a record no block of this size holds (a writer of bigger blocks'):
                // left out.
                _ => break,
            }
        }
    }
    blocks.extend(writer.take().filter(|w| !w.is_empty()).map(BlockWriter::finish));
    blocks
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
    /// Pinned records (since layout 1.0.2, docs/FORMAT.md "Pin area") that the threads'
    /// rings no longer held, put back in blocks of their threads; and those blocks.
    pub pinned: u64,
    /// The blocks that hold them (not counted in `blocks`).
    pub pinned_blocks: u64,
    /// Pinned records the writer let go of to make room (the pin area's `PINS_DROPPED`),
    /// and any that did not fit the blocks numbered below their thread's oldest.
    pub pins_dropped: u64,
    /// Why the pin area (or its entries from some point on) could not be read.
    pub pin_damage: Option<String>,
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
    /// The pin area's records by thread, once read (at the first slot); a thread's are taken
    /// out when its slot is read.
    pins: Option<std::collections::BTreeMap<u64, Vec<PinnedRecord>>>,
}

/// The pin area's records by thread, each thread's in time order (stable: pin order among
/// equal times).
pub(crate) fn pins_by_thread(area: PinArea) -> std::collections::BTreeMap<u64, Vec<PinnedRecord>> {
    let mut by_thread: std::collections::BTreeMap<u64, Vec<PinnedRecord>> = std::collections::BTreeMap::new();
    for r in area.records {
        by_thread.entry(r.thread).or_default().push(r);
    }
    for list in by_thread.values_mut() {
        list.sort_by_key(|r| r.time);
    }
    by_thread
}

/// The blocks that put `thread`'s pinned records back before its ring (docs/FORMAT.md,
/// "Reading a ring file as a stream", step 2): those older than `oldest`, the
/// (sequence, base time) of the oldest block its slot still holds (`None`: no block), in
/// blocks numbered up to just below it; none when the ring still holds its block 0. Returns
/// the blocks, checked (their records as put back: records by callsite not expanded), and
/// the records that did not fit below the oldest block's number.
pub(crate) fn put_back(
    layout: &Layout,
    thread: u64,
    records: &[PinnedRecord],
    oldest: Option<(u64, u64)>,
) -> (Vec<Block>, u64) {
    let (below, base) = match oldest {
        Some((0, _)) => return (Vec::new(), 0),
        Some((sequence, base)) => (sequence, base),
        None => (0, u64::MAX),
    };
    let older: Vec<PinnedRecord> = records.iter().filter(|r| r.time < base).cloned().collect();
    let mut sealed = pinned_blocks(layout.order, layout.block_size, thread, &older);
    let mut left_out = 0;
    // Numbered up to `below - 1`; without a block of the thread, from 0.
    let room = if oldest.is_some() { below } else { u64::MAX };
    while sealed.len() as u64 > room {
        let first = sealed.remove(0);
        let h = BlockHeader::read(layout.order, &first);
        let records = &first[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + h.used as usize];
        left_out += crate::codec::wire::RecordIter::new(records, layout.order, 0)
            .flatten()
            .filter(|r| r.code != TIME_EXTEND)
            .count() as u64;
    }
    let first_number = if oldest.is_some() { below - sealed.len() as u64 } else { 0 };
    let mut blocks = Vec::new();
    for (i, mut bytes) in sealed.into_iter().enumerate() {
        let mut header = BlockHeader::read(layout.order, &bytes);
        header.sequence = first_number + i as u64;
        header.write(layout.order, &mut bytes);
        seal_block(layout.order, &mut bytes, header.used);
        // Blocks just built here: they pass their checks.
        if let Ok(header) = verify_block(layout.order, &bytes) {
            let used = header.used as usize;
            let records = bytes[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + used].to_vec();
            blocks.push(Block {
                index: header.sequence,
                segment: 0,
                offset: layout.pin_area(),
                header,
                records,
                order: layout.order,
                stored_len: bytes.len() as u64,
            });
        }
    }
    (blocks, left_out)
}

impl<R: ReadAt> RingBlocks<R> {
    /// The blocks of the ring file `reader` reads.
    pub fn new(reader: RingReader<R>) -> RingBlocks<R> {
        RingBlocks {
            pins: None,
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
        if self.pins.is_none() {
            let area = self.reader.read_pins()?;
            self.findings.pins_dropped = area.dropped;
            self.findings.pin_damage = area.damage.clone();
            self.pins = Some(pins_by_thread(area));
        }
        while self.pending.is_empty() && self.next_slot < layout.slots {
            let index = self.next_slot;
            self.next_slot += 1;
            let found = self.reader.read_slot(index, 0)?;
            let Some(slot) = found.slot else { continue };
            if let Some(records) = self.pins.as_mut().and_then(|p| p.remove(&slot.thread)) {
                let oldest = match found.blocks.first() {
                    Some(b) => Some((b.header.sequence, b.header.base_time)),
                    // No block of the thread left: the pinned ones go below the first
                    // sequence its ring still had.
                    None if found.first_sequence > 0 => Some((found.first_sequence, u64::MAX)),
                    None => None,
                };
                self.put_back(slot.thread, &records, oldest);
            }
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
            // The pinned records of threads no slot holds now (their slots were reused).
            for (thread, records) in std::mem::take(self.pins.get_or_insert_with(Default::default)) {
                self.put_back(thread, &records, None);
            }
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
            let report =
                crate::codec::wire::dropped_report(layout.order, layout.block_size, 0, self.last_time, &self.drops);
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
    /// Queues the blocks that put `thread`'s pinned records back ([`put_back`]).
    fn put_back(&mut self, thread: u64, records: &[PinnedRecord], oldest: Option<(u64, u64)>) {
        let (blocks, left_out) = put_back(&self.reader.layout, thread, records, oldest);
        self.findings.pins_dropped = self.findings.pins_dropped.saturating_add(left_out);
        for block in blocks {
            self.findings.pinned += block.records().flatten().filter(|r| r.code != TIME_EXTEND).count() as u64;
            self.findings.pinned_blocks += 1;
            self.last_time = self.last_time.max(block.header.base_time);
            self.pending.push_back(block);
        }
    }

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

    /// The next block, its records by callsite expanded. A read error ends the blocks, as it
    /// ends a stream.
    fn next_block(&mut self) -> Option<Result<Block, BlockError>> {
        let block_size = self.reader.layout.block_size;
        self.next_as_read().map(|block| {
            block.map(|mut block| {
                crate::codec::callsites::expand_in_place(block.order, &mut block.records, block_size);
                block
            })
        })
    }

    /// The next block with its records as the file holds them, for
    /// [`PendingBlock::unpack`] to expand (or [`PendingBlock::unpack_as_written`] to keep):
    /// a ring file's blocks are never packed.
    fn next_pending(&mut self) -> Option<Result<PendingBlock, BlockError>> {
        let block_size = self.reader.layout.block_size;
        self.next_as_read().map(|block| block.map(|block| PendingBlock { block, pending: Some(block_size) }))
    }
}

impl<R: ReadAt> RingBlocks<R> {
    /// The next block as read, its records as the file holds them. A read error ends the
    /// blocks, as it ends a stream.
    fn next_as_read(&mut self) -> Option<Result<Block, BlockError>> {
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
