//! The streaming decoder: untrusted bytes in, blocks and events out.
//!
//! [`Decoder`] reads from any [`Read`], one block at a time, and never holds more than one block
//! beyond what it hands out. A damaged block is reported as a [`BlockError`] and skipped; the
//! blocks after it decode (blocks have a fixed size, so the next one is always found).
//! Buffers grow only as bytes arrive, so a lying length field costs no memory the input does
//! not back.
//!
//! ```
//! use event_format::decode::{Catalog, Decoder, Entry};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let bytes = event_format::testing::sample_stream(event_format::wire::Order::Little);
//! let mut decoder = Decoder::new(&bytes[..])?;
//! let catalog = Catalog::new(&decoder.header().sets);
//! let mut names = Vec::new();
//! while let Some(block) = decoder.next_block() {
//!     let block = block?; // or report the damaged block and go on
//!     for entry in block.entries(&catalog) {
//!         if let Entry::Event(event) = entry {
//!             names.push(event.desc.name.clone());
//!         }
//!     }
//! }
//! assert!(names.contains(&"ArenaCreate".to_string()));
//! # Ok(()) }
//! ```

use crate::codec::read_at::ReadAt;
use crate::codec::wire::{
    BLOCK_HEADER_LEN, BLOCK_PACKED, BLOCK_SYNC, BlockHeader, Damage, Header, HeaderError, Order, PREFIX_LEN,
    RECORD_HEADER_LEN, RawRecord, RecordError, RecordIter, SetEntry, Stop, Unpacker, ValueIter, packed_len,
    validate_args, verify_block,
};
use event_def::builtin;
use event_def::letter::Letter;
use event_def::schema::BUILTIN_KIND;
use std::fmt;
use std::io::{self, Read};

/// How to decode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Read a stream whose median version is newer than this reader's.
    pub force: bool,
}

/// A block that could not be decoded, and why. Decoding goes on with the next block found
/// (the next sync word; after a verified block whose records do not unpack, the block after
/// it), except after [`Damage::Unreadable`], which ends the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockError {
    /// The block's index in the stream, from 0.
    pub index: u64,
    /// The segment of the log it is in: its place among the segments of a recording of
    /// segments ([`crate::log`]), 0 for a log of one file. `index` and `offset` are the
    /// segment's own.
    pub segment: u32,
    /// The block's byte offset in the stream.
    pub offset: u64,
    /// What is wrong.
    pub damage: Damage,
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "block {} at offset {} skipped: {}", self.index, self.offset, self.damage)
    }
}

impl std::error::Error for BlockError {}

/// A block that passed its checks: its header and its records' bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// The block's index in the stream, from 0.
    pub index: u64,
    /// The segment of the log it is in: its place among the segments of a recording of
    /// segments ([`crate::log`]), 0 for a log of one file. `index` and `offset` are the
    /// segment's own.
    pub segment: u32,
    /// The block's byte offset in the stream.
    pub offset: u64,
    /// Its header.
    pub header: BlockHeader,
    /// Its records area (`header.used` bytes, or for a packed block, what they unpack to).
    pub records: Vec<u8>,
    /// The stream's byte order.
    pub order: Order,
    /// The bytes the block takes in the stream: the block size, or less for a packed block.
    pub stored_len: u64,
}

impl Block {
    /// Its records, delimited, with absolute times.
    pub fn records(&self) -> RecordIter<'_> {
        RecordIter::new(&self.records, self.order, self.header.base_time)
    }

    /// The clean-stop marker the block ends with, if it does (since format 2.0.1: the last
    /// block of a stream whose writer stopped cleanly; docs/FORMAT.md, "The clean stop").
    pub fn stop(&self) -> Option<Stop> {
        let mut records = self.records();
        records.by_ref().for_each(drop);
        records.stop()
    }

    /// Its records, named and checked against `catalog`.
    pub fn entries<'a>(&'a self, catalog: &'a Catalog) -> Entries<'a> {
        self.entries_from(catalog, 0)
    }

    /// Its entries from offset `from` of its records area on (records before it are still
    /// read, for their times, but not yielded): what a ring file
    /// [`Follower`](crate::ring::Follower) has not shown yet.
    pub fn entries_from<'a>(&'a self, catalog: &'a Catalog, from: usize) -> Entries<'a> {
        Entries { records: self.records(), catalog, thread: self.header.thread, order: self.order, from }
    }
}

/// Reads a stream: its header on creation, then one block per call.
#[derive(Debug)]
pub struct Decoder<R> {
    reader: R,
    header: Header,
    header_len: u64,
    /// The header's bytes as read, CRC included.
    header_bytes: Vec<u8>,
    /// Bytes read and not yet consumed are `buf[pos..]`; it grows only as bytes arrive, and
    /// holds at most a block and a read step.
    buf: Vec<u8>,
    pos: usize,
    /// The stream offset of `buf[pos]`.
    offset: u64,
    /// The reader has ended.
    eof: bool,
    /// The last block was damaged: look for the next sync word before reading on.
    resync: bool,
    next_index: u64,
    done: bool,
    /// A block's records buffer given back ([`BlockSource::recycle`]), for the next block's.
    spare: Vec<u8>,
    /// Unpacks packed blocks, whatever their packing; its zstd context is kept.
    unpacker: Unpacker,
}

/// Below this many bytes, buffers grow by doubling what has arrived, not by whole reads.
const FIRST_STEP: usize = 4096;

/// Reads until `buf` holds `n` bytes or the input ends; returns how many it holds. The
/// buffer grows at most to twice what has arrived (plus [`FIRST_STEP`]), whatever `n` says.
fn read_up_to<R: Read>(reader: &mut R, buf: &mut Vec<u8>, n: usize) -> io::Result<usize> {
    buf.clear();
    append_up_to(reader, buf, n)?;
    Ok(buf.len())
}

/// Appends to `buf` until it holds `n` bytes or the input ends; returns whether the input
/// ended. Grows as [`read_up_to`] does.
fn append_up_to<R: Read>(reader: &mut R, buf: &mut Vec<u8>, n: usize) -> io::Result<bool> {
    while buf.len() < n {
        let step = (n - buf.len()).min(buf.len().max(FIRST_STEP));
        // Room for the step first, so that reading reserves no more; `read_to_end` reads
        // into it without zeroing it first (which cost as much as the reading), retries
        // when interrupted, and keeps what it read before an error.
        buf.reserve_exact(step);
        let got = reader.by_ref().take(step as u64).read_to_end(buf)?;
        if got < step {
            return Ok(true);
        }
    }
    Ok(false)
}

impl<R: Read> Decoder<R> {
    /// Reads the header, refusing another major version and a newer median.
    pub fn new(reader: R) -> Result<Decoder<R>, HeaderError> {
        Decoder::with_options(reader, DecodeOptions::default())
    }

    /// Reads the header with `options`.
    pub fn with_options(mut reader: R, options: DecodeOptions) -> Result<Decoder<R>, HeaderError> {
        let mut buf = Vec::new();
        read_up_to(&mut reader, &mut buf, PREFIX_LEN)?;
        let header_len = Header::prefix(&buf)?.header_len;
        let mut rest = Vec::new();
        // prefix() refused anything shorter than PREFIX_LEN, and header_len > PREFIX_LEN.
        let need = header_len as usize - buf.len();
        read_up_to(&mut reader, &mut rest, need)?;
        buf.extend_from_slice(&rest);
        let header = Header::decode(&buf, options.force)?;
        rest.clear();
        Ok(Decoder {
            reader,
            header,
            header_len: u64::from(header_len),
            header_bytes: buf,
            buf: rest,
            pos: 0,
            offset: u64::from(header_len),
            eof: false,
            resync: false,
            next_index: 0,
            done: false,
            spare: Vec::new(),
            unpacker: Unpacker::new(),
        })
    }

    /// The stream's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The header's length: the offset of the first block.
    pub fn header_len(&self) -> u64 {
        self.header_len
    }

    /// The header's bytes as the stream holds them, CRC included.
    pub fn header_bytes(&self) -> &[u8] {
        &self.header_bytes
    }

    /// Makes `n` bytes available at `pos` if the input has them; returns how many are.
    fn fill(&mut self, n: usize) -> io::Result<usize> {
        if self.buf.len() - self.pos < n && !self.eof {
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            self.eof = append_up_to(&mut self.reader, &mut self.buf, n)?;
        }
        Ok(self.buf.len() - self.pos)
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
        self.offset += n as u64;
    }

    /// After a damaged block: skips to the next sync word at a block boundary (blocks start
    /// at the header's length plus a multiple of 8), or to the end.
    fn skip_to_sync(&mut self) -> io::Result<()> {
        let order = self.header.order;
        loop {
            let have = self.fill(FIRST_STEP)?;
            let mut at = 0;
            while at + 4 <= have {
                if order.u32(&self.buf[self.pos + at..]) == BLOCK_SYNC {
                    self.consume(at);
                    return Ok(());
                }
                at += 8;
            }
            if self.eof {
                self.consume(have);
                return Ok(());
            }
            self.consume(at);
        }
    }

    /// The next block, `Some(Err)` for a damaged one (skipped), `None` at the end.
    ///
    /// A damaged block is skipped by looking for the next sync word, so that one damaged
    /// block costs that block, whether blocks are whole or packed; a verified block whose
    /// packed records do not unpack is skipped by its length, which its CRC vouches for
    /// (docs/FORMAT.md, "Reading a block").
    pub fn next_block(&mut self) -> Option<Result<Block, BlockError>> {
        // Unpacked here, the block is never left packed.
        self.next(true).map(|block| block.map(|pending| pending.block))
    }

    /// The next block as [`next_block`](Decoder::next_block) gives it, except that a packed
    /// block comes with its records still packed, for the reader to unpack where it likes
    /// ([`PendingBlock::unpack`], on another thread): the blocks, and the damaged blocks
    /// among them, are the same either way, as are the places they are found at.
    pub fn next_pending(&mut self) -> Option<Result<PendingBlock, BlockError>> {
        self.next(false)
    }

    /// The next block, its records unpacked here when `unpack`.
    fn next(&mut self, unpack: bool) -> Option<Result<PendingBlock, BlockError>> {
        if self.done {
            return None;
        }
        match self.read_block(unpack) {
            Ok(Some(block)) => Some(block),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(BlockError {
                    index: self.next_index,
                    segment: 0,
                    offset: self.offset,
                    damage: Damage::Unreadable(e.to_string()),
                }))
            }
        }
    }

    /// Reads the next block, checks it and, when `unpack`, unpacks its records. A block that
    /// fails a check before its CRC vouches for its length leaves the decoder looking for the
    /// next sync word; one whose records do not unpack is consumed whole.
    fn read_block(&mut self, unpack: bool) -> io::Result<Option<Result<PendingBlock, BlockError>>> {
        let size = self.header.block_size as usize;
        let order = self.header.order;
        if self.resync {
            self.resync = false;
            // The damaged block's first word was a sync word or is not a block: skip it.
            if self.fill(8)? >= 8 {
                self.consume(8);
            } else {
                let have = self.buf.len() - self.pos;
                self.consume(have);
            }
            self.skip_to_sync()?;
        }
        let (index, offset) = (self.next_index, self.offset);
        let have = self.fill(BLOCK_HEADER_LEN)?;
        if have == 0 {
            return Ok(None);
        }
        self.next_index += 1;
        let damaged = |damage| Ok(Some(Err(BlockError { index, segment: 0, offset, damage })));
        // Until its CRC checks, nothing of the block is trusted, its length included.
        self.resync = true;
        if have < BLOCK_HEADER_LEN {
            return damaged(Damage::Truncated { have, need: size });
        }
        let head = BlockHeader::read(order, &self.buf[self.pos..]);
        let packed = head.flags & BLOCK_PACKED != 0;
        let len = stored_len(&head, size);
        let have = self.fill(len)?;
        if have < len {
            return damaged(Damage::Truncated { have, need: len });
        }
        let header = match verify_block(order, &self.buf[self.pos..self.pos + len]) {
            Ok(header) => header,
            Err(damage) => return damaged(damage),
        };
        // Verified: the block ends where its length says, whatever its records turn out to be.
        self.resync = false;
        let body = &self.buf[self.pos + BLOCK_HEADER_LEN..self.pos + BLOCK_HEADER_LEN + header.used as usize];
        let mut records = std::mem::take(&mut self.spare);
        let unpacked = if !packed {
            records.clear();
            records.extend_from_slice(body);
            Ok(())
        } else if unpack {
            self.unpacker.unpack_into(order, header.flags, body, self.header.block_size, &mut records)
        } else {
            // The packed bytes at the buffer's start, its length kept (the bytes after them
            // are an earlier block's): the buffer these records are unpacked into is this one
            // once it has gone round, and an unpacker zero-fills a buffer only where it grows.
            if records.len() < body.len() {
                records.resize(body.len(), 0);
            }
            records[..body.len()].copy_from_slice(body);
            Ok(())
        };
        self.consume(len);
        if let Err(damage) = unpacked {
            self.spare = records;
            return damaged(damage);
        }
        let block_size = self.header.block_size;
        // Records by callsite expanded where the records are final: here when unpacked here,
        // else by `PendingBlock::unpack`, on the thread that unpacks.
        if unpack {
            crate::codec::callsites::expand_in_place(order, &mut records, block_size);
        }
        let block = Block { index, segment: 0, offset, header, records, order, stored_len: len as u64 };
        Ok(Some(Ok(PendingBlock { block, pending: (!unpack).then_some(block_size) })))
    }
}

/// A block that passed its checks, whose records may still be packed: what
/// [`BlockSource::next_pending`] gives, for a reader that unpacks blocks on other threads than
/// the one that reads them. [`unpack`](PendingBlock::unpack) makes it a [`Block`], or finds
/// it damaged ([`Damage::BadPacking`]), as [`BlockSource::next_block`] would have.
#[derive(Clone, Debug)]
pub struct PendingBlock {
    /// The block; while it is pending and packed, its `records` start with its packed bytes
    /// (`header.used` of them), and what follows them is an earlier block's.
    pub(crate) block: Block,
    /// The stream's block size while the records are not yet final: still packed (they
    /// unpack to at most this less the block header), and their records by callsite still to
    /// be expanded ([`callsites`](crate::callsites)); `None` once they are the records.
    pub(crate) pending: Option<u32>,
}

impl PendingBlock {
    /// A block whose records are unpacked (and their records by callsite expanded) already.
    pub fn ready(block: Block) -> PendingBlock {
        PendingBlock { block, pending: None }
    }

    /// Its header, verified.
    pub fn header(&self) -> &BlockHeader {
        &self.block.header
    }

    /// Whether its records are still packed.
    pub fn is_packed(&self) -> bool {
        self.pending.is_some() && self.block.header.flags & BLOCK_PACKED != 0
    }

    /// The block's index in the stream, as [`Block::index`].
    pub fn index(&self) -> u64 {
        self.block.index
    }

    /// The block's segment, as [`Block::segment`].
    pub fn segment(&self) -> u32 {
        self.block.segment
    }

    /// The block's byte offset in the stream, as [`Block::offset`].
    pub fn offset(&self) -> u64 {
        self.block.offset
    }

    /// The block with its records unpacked by `unpacker` into `spare` (a buffer the caller
    /// reuses from block to block: it gets the packed bytes' buffer back), or the damage that
    /// [`BlockSource::next_block`] would have reported for it, at its place.
    pub fn unpack(self, unpacker: &mut Unpacker, spare: &mut Vec<u8>) -> Result<Block, BlockError> {
        self.unpack_measured(unpacker, spare).map(|(block, _)| block)
    }

    /// [`unpack`](PendingBlock::unpack), and the length of the block's records as the writer
    /// wrote them, before its records by callsite were expanded: what they take in their
    /// block (`stats`' bytes per event in records). For a block made
    /// [`ready`](PendingBlock::ready), the length of its records as they were given.
    pub fn unpack_measured(self, unpacker: &mut Unpacker, spare: &mut Vec<u8>) -> Result<(Block, usize), BlockError> {
        let pending = self.pending;
        let mut block = self.unpack_as_written(unpacker, spare)?;
        let written = block.records.len();
        if let Some(block_size) = pending {
            crate::codec::callsites::expand_in_place(block.order, &mut block.records, block_size);
        }
        Ok((block, written))
    }

    /// The block with its records unpacked as [`unpack`](PendingBlock::unpack) unpacks them,
    /// but as the writer wrote them: records by callsite not expanded, so that they fit the
    /// block (docs/FORMAT.md, "Callsites"). What a program that copies blocks into blocks of
    /// the stream's size needs (a snapshot, a tool that packs them again); a reader reads
    /// [`unpack`](PendingBlock::unpack)'s. A block made [`ready`](PendingBlock::ready) is
    /// given back as it was made.
    pub fn unpack_as_written(self, unpacker: &mut Unpacker, spare: &mut Vec<u8>) -> Result<Block, BlockError> {
        let PendingBlock { mut block, pending } = self;
        let Some(block_size) = pending else { return Ok(block) };
        if block.header.flags & BLOCK_PACKED != 0 {
            let bytes = &block.records[..block.header.used as usize];
            if let Err(damage) = unpacker.unpack_into(block.order, block.header.flags, bytes, block_size, spare) {
                return Err(BlockError { index: block.index, segment: block.segment, offset: block.offset, damage });
            }
            std::mem::swap(&mut block.records, spare);
        }
        Ok(block)
    }
}

/// The bytes a block whose header is `head` takes in a stream of `block_size` blocks: a
/// packed block's header and compressed records (rounded up to 8), else the block size (a
/// packed block whose `used` is too large for a block is damaged, and skipped as a whole block
/// would be).
fn stored_len(head: &BlockHeader, block_size: usize) -> usize {
    let packed = head.flags & BLOCK_PACKED != 0;
    if packed && (head.used as usize) <= block_size - BLOCK_HEADER_LEN { packed_len(head.used) } else { block_size }
}

/// Where a block of a stream starts, and the time it says its records start from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockStart {
    /// The block's byte offset in the stream, as [`Block::offset`] and [`BlockError::offset`]
    /// give it.
    pub offset: u64,
    /// Its header's `base_time`, unchecked: the block's CRC is not verified here.
    pub base_time: u64,
}

/// The stream's blocks from their headers alone, as [`Decoder`] finds them: each block's
/// offset and `base_time`, read with one positioned read of [`BLOCK_HEADER_LEN`] bytes per
/// block (not its records), from `header_len` (where the first block starts) to `len`.
///
/// A reader that merges threads by time learns from it, before reading a block, the earliest
/// time every later block says it starts at (docs/FORMAT.md, "Merging"). The headers are not
/// verified: a reader checks each block as it decodes it. The walk stops at a block cut short
/// by the end (the decoder reports it there), and gives `None` where the decoder would have to
/// look for the next sync word (a block that does not start with one): the blocks after it
/// cannot be found from headers alone.
///
/// ```
/// use event_format::decode::{Decoder, index_blocks};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let bytes = event_format::testing::sample_stream(event_format::wire::Order::Little);
/// let mut decoder = Decoder::new(&bytes[..])?;
/// let index = index_blocks(&bytes[..], decoder.header(), decoder.header_len(), bytes.len() as u64)?
///     .expect("an undamaged stream");
/// let mut n = 0;
/// while let Some(block) = decoder.next_block() {
///     let block = block?;
///     assert_eq!((index[n].offset, index[n].base_time), (block.offset, block.header.base_time));
///     n += 1;
/// }
/// assert_eq!(n, index.len());
/// # Ok(()) }
/// ```
pub fn index_blocks<R: ReadAt + ?Sized>(
    source: &R,
    header: &Header,
    header_len: u64,
    len: u64,
) -> io::Result<Option<Vec<BlockStart>>> {
    let size = header.block_size as usize;
    let mut starts = Vec::new();
    let mut offset = header_len;
    let mut head = [0u8; BLOCK_HEADER_LEN];
    while len.saturating_sub(offset) >= BLOCK_HEADER_LEN as u64 {
        source.read_exact_at(&mut head, offset)?;
        if header.order.u32(&head) != BLOCK_SYNC {
            return Ok(None);
        }
        let block = BlockHeader::read(header.order, &head);
        let stored = stored_len(&block, size) as u64;
        if len - offset < stored {
            break;
        }
        starts.push(BlockStart { offset, base_time: block.base_time });
        offset += stored;
    }
    Ok(Some(starts))
}

/// Where a reader gets blocks from: a stream ([`Decoder`]) or a ring file
/// ([`RingBlocks`](crate::ring::RingBlocks)). A reader that walks blocks through this trait
/// reads both the same way, and a ring file's blocks are never re-encoded as a stream to be
/// decoded again.
pub trait BlockSource {
    /// The stream header the blocks are read by: schema, clock, byte order, block size.
    fn header(&self) -> &Header;

    /// The next block, `Some(Err)` for a damaged one (skipped; the blocks after it still
    /// come), `None` at the end.
    fn next_block(&mut self) -> Option<Result<Block, BlockError>>;

    /// The next block as [`next_block`](BlockSource::next_block) gives it, or still packed
    /// where the source can hand it on so ([`Decoder::next_pending`]): a reader that unpacks
    /// blocks on threads of its own ([`PendingBlock::unpack`]). By default, unpacked.
    fn next_pending(&mut self) -> Option<Result<PendingBlock, BlockError>> {
        self.next_block().map(|block| block.map(PendingBlock::ready))
    }

    /// Gives back a block this source read, done with, for its buffer to hold a later block's
    /// records: a reader that walks millions of blocks then allocates and zero-fills once.
    /// Optional; by default the block is dropped.
    fn recycle(&mut self, block: Block) {
        drop(block);
    }

    /// Whether its writer is still at work, for its ledger's findings (a log without its stop
    /// marker whose writer is alive is still recording: [`Ledger::findings`](crate::ledger::Ledger::findings)).
    /// By default `false`: bytes handed to a reader have no writer it can ask; a
    /// [`Log`](crate::log::Log) asks its file ([`Log::writer_alive`](crate::log::Log::writer_alive)).
    fn writer_alive(&self) -> bool {
        false
    }
}

impl<R: Read> BlockSource for Decoder<R> {
    fn header(&self) -> &Header {
        Decoder::header(self)
    }

    fn next_block(&mut self) -> Option<Result<Block, BlockError>> {
        Decoder::next_block(self)
    }

    fn next_pending(&mut self) -> Option<Result<PendingBlock, BlockError>> {
        Decoder::next_pending(self)
    }

    fn recycle(&mut self, block: Block) {
        if block.records.capacity() > self.spare.capacity() {
            self.spare = block.records;
        }
    }
}

impl<S: BlockSource + ?Sized> BlockSource for &mut S {
    fn header(&self) -> &Header {
        (**self).header()
    }

    fn next_block(&mut self) -> Option<Result<Block, BlockError>> {
        (**self).next_block()
    }

    fn next_pending(&mut self) -> Option<Result<PendingBlock, BlockError>> {
        (**self).next_pending()
    }

    fn recycle(&mut self, block: Block) {
        (**self).recycle(block);
    }

    fn writer_alive(&self) -> bool {
        (**self).writer_alive()
    }
}

impl<S: BlockSource + ?Sized> BlockSource for Box<S> {
    fn header(&self) -> &Header {
        (**self).header()
    }

    fn next_block(&mut self) -> Option<Result<Block, BlockError>> {
        (**self).next_block()
    }

    fn next_pending(&mut self) -> Option<Result<PendingBlock, BlockError>> {
        (**self).next_pending()
    }

    fn recycle(&mut self, block: Block) {
        (**self).recycle(block);
    }

    fn writer_alive(&self) -> bool {
        (**self).writer_alive()
    }
}

impl<R: Read> Iterator for Decoder<R> {
    type Item = Result<Block, BlockError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_block()
    }
}

/// What a reader knows of one wire code: an event of one of the stream's sets, or a
/// built-in event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desc {
    /// The event's own code, as its events.def gives it (what `code` means in filters and in
    /// `schema` output); a built-in event's code.
    pub code: u16,
    /// The code its records carry in this stream (docs/FORMAT.md, "Wire codes"): what the
    /// catalog is indexed by. Equal to `code` in a 1.x stream and for built-in events.
    pub wire: u16,
    /// The name of its set; empty for built-in events and for the one set of a 1.x stream.
    pub set: String,
    /// Whether its name is shown qualified by its set (`set:Kind.Name`): the stream holds
    /// more than one set. Never for built-in events.
    pub qualified: bool,
    /// The event's name.
    pub name: String,
    /// Its kind's name ([`BUILTIN_KIND`] for built-in events).
    pub kind_name: String,
    /// Its kind's index in the schema, `None` for built-in events.
    pub kind: Option<u8>,
    /// Its parameters' types.
    pub format: Vec<Letter>,
    /// Its parameters' names.
    pub params: Vec<String>,
    /// Whether `format` has a string (`S`): kept beside it, so that a reader that looks at
    /// every record's strings (the ledger counts the cut ones) tests one flag for the events
    /// that have none instead of scanning their letters. [`Catalog::new`] sets it from `format`.
    pub strings: bool,
}

impl Desc {
    /// Whether this is one of the runtime's built-in events.
    #[inline]
    pub fn is_builtin(&self) -> bool {
        self.kind.is_none()
    }

    /// Its name as text shows it: `Kind.Name`, or `set:Kind.Name` when [`qualified`](Desc::qualified).
    pub fn full_name(&self) -> FullName<'_> {
        FullName(self)
    }

    /// Its kind's name as text shows it: `Kind`, or `set:Kind` when qualified.
    pub fn full_kind(&self) -> String {
        if self.qualified { format!("{}:{}", self.set, self.kind_name) } else { self.kind_name.clone() }
    }
}

/// A [`Desc`]'s name as text shows it; see [`Desc::full_name`].
#[derive(Clone, Copy, Debug)]
pub struct FullName<'a>(&'a Desc);

impl fmt::Display for FullName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.qualified {
            write!(f, "{}:{}.{}", d.set, d.kind_name, d.name)
        } else {
            write!(f, "{}.{}", d.kind_name, d.name)
        }
    }
}

/// Every wire code a stream can contain, with what it means: the events of every set of its
/// header and the built-in events, looked up by wire code.
#[derive(Clone, PartialEq, Eq)]
pub struct Catalog {
    /// Sorted by wire code.
    descs: Vec<Desc>,
    /// For each wire code below its length, its index in `descs` plus one, or 0: a reader
    /// looks up every record. It covers the sets' codes when they are dense enough (its
    /// length is at most 16 entries per event, so it costs what the sets cost); other codes
    /// are searched in `descs`.
    index: Vec<u16>,
    /// The same for the built-in codes, `0xFF00 + i` at `i`.
    builtin_index: Vec<u16>,
    /// For each desc, the length of its arguments when its format has only fixed-size
    /// letters without a value to check (no string, no bool), else `None`: such arguments are
    /// checked by their length alone, which is what [`validate_args`] checks of them.
    fixed_len: Vec<Option<usize>>,
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Catalog").field("descs", &self.descs).finish_non_exhaustive()
    }
}

impl Catalog {
    /// The catalog of `sets` (a header's, [`Header::sets`]) plus the built-in events. An
    /// event whose wire code is not a user code (which no checked header has) is left out.
    pub fn new(sets: &[SetEntry]) -> Catalog {
        let qualified = sets.len() > 1;
        let mut descs: Vec<Desc> = sets
            .iter()
            .flat_map(|set| {
                let schema = &set.schema;
                schema.events.iter().enumerate().filter_map(move |(j, e)| {
                    Some(Desc {
                        code: e.code,
                        wire: set.wire_code(j)?,
                        set: schema.name.clone(),
                        qualified,
                        name: e.name.clone(),
                        kind_name: schema
                            .kinds
                            .get(usize::from(e.kind))
                            .map_or_else(|| format!("Kind{}", e.kind), |k| k.name.clone()),
                        kind: Some(e.kind),
                        format: e.format.clone(),
                        params: e.params.clone(),
                        strings: e.format.contains(&Letter::String),
                    })
                })
            })
            .chain(builtin::ALL.iter().map(|b| Desc {
                code: b.code,
                wire: b.code,
                set: String::new(),
                qualified: false,
                name: b.name.to_owned(),
                kind_name: BUILTIN_KIND.to_owned(),
                kind: None,
                format: b.format.to_vec(),
                params: b.params.iter().map(|p| (*p).to_owned()).collect(),
                strings: b.format.contains(&Letter::String),
            }))
            .collect();
        // Stable: of two descs with one wire code (no checked header has them), the first set's wins.
        descs.sort_by_key(|d| d.wire);
        descs.dedup_by_key(|d| d.wire);
        let user_end = descs.iter().filter(|d| d.kind.is_some()).map(|d| usize::from(d.wire) + 1).max().unwrap_or(0);
        let dense = user_end <= 16 * descs.len() + 64;
        let mut index = vec![0u16; if dense { user_end } else { 0 }];
        let mut builtin_index = vec![0u16; 256];
        for (i, d) in descs.iter().enumerate() {
            // i + 1 fits in u16 unless nearly every code is defined; a code left at 0 is
            // found by the search in `get`.
            let slot = u16::try_from(i + 1).unwrap_or(0);
            let code = usize::from(d.wire);
            if code < index.len() {
                index[code] = slot;
            } else if code >= 0xFF00 {
                builtin_index[code - 0xFF00] = slot;
            }
        }
        let fixed_len = descs
            .iter()
            .map(|d| {
                let plain = d.format.iter().all(|l| !matches!(l, Letter::String | Letter::Bool));
                plain.then(|| d.format.iter().map(|l| l.min_size()).sum())
            })
            .collect();
        Catalog { descs, index, builtin_index, fixed_len }
    }

    /// What wire code `code` means, if the stream's sets or the built-in events define it.
    pub fn get(&self, code: u16) -> Option<&Desc> {
        self.position(code).map(|i| &self.descs[i])
    }

    /// Where wire code `code`'s desc is in `descs`.
    #[inline]
    fn position(&self, code: u16) -> Option<usize> {
        let c = usize::from(code);
        let slot = if c < self.index.len() {
            self.index[c]
        } else if c >= 0xFF00 {
            self.builtin_index[c - 0xFF00]
        } else {
            0
        };
        match slot {
            0 => self.descs.binary_search_by_key(&code, |d| d.wire).ok(),
            i => Some(usize::from(i) - 1).filter(|&i| i < self.descs.len()),
        }
    }

    /// What a record delimited by [`RecordIter`] is, read by this catalog: an event whose
    /// arguments match its format, an unknown code, or a record with bad arguments (docs/FORMAT.md,
    /// "Checking arguments"). Every reader classifies records with this, whichever order it
    /// walks them in.
    // Always inlined, as `ValueIter::next` is (its comment): out of line, the entry came
    // back through the stack to `print`'s render loop, read with wider loads than the
    // callee's stores.
    #[inline(always)]
    pub fn entry<'a>(&'a self, record: RawRecord<'a>, thread: u64, order: Order) -> Entry<'a> {
        let Some(i) = self.position(record.code) else {
            return Entry::Unknown { code: record.code, time: record.time, len: record.args.len() + RECORD_HEADER_LEN };
        };
        let desc = &self.descs[i];
        let checked = match self.fixed_len[i] {
            Some(len) if record.args.len() >= len => Ok(()),
            _ => validate_args(&desc.format, record.args, order),
        };
        match checked {
            Ok(()) => Entry::Event(Event { desc, time: record.time, thread, args: record.args, order }),
            Err(why) => Entry::Bad(RecordError::BadArguments { offset: record.offset, code: record.code, why }),
        }
    }

    /// Every wire code's desc, in order of wire codes.
    pub fn iter(&self) -> impl Iterator<Item = &Desc> {
        self.descs.iter()
    }

    /// Whether names are qualified by their sets: the stream holds more than one set.
    pub fn qualified(&self) -> bool {
        self.descs.iter().any(|d| d.qualified)
    }
}

/// A decoded event: what it is, when, on which thread, and its arguments.
#[derive(Clone, Copy, Debug)]
pub struct Event<'a> {
    /// What the code means.
    pub desc: &'a Desc,
    /// Its time in ticks.
    pub time: u64,
    /// The thread that recorded it.
    pub thread: u64,
    /// Its argument bytes, checked against its format.
    pub args: &'a [u8],
    /// The stream's byte order.
    pub order: Order,
}

impl<'a> Event<'a> {
    /// Its argument values, one per parameter.
    pub fn values(&self) -> ValueIter<'a> {
        ValueIter::new(&self.desc.format, self.args, self.order)
    }
}

/// One record of a block, as a reader sees it.
#[derive(Clone, Debug)]
pub enum Entry<'a> {
    /// A known event whose arguments match its format.
    Event(Event<'a>),
    /// A wire code that neither the sets nor this reader's built-in events define (a newer
    /// minor version's, or a retired event's): skipped by its length.
    Unknown {
        /// The wire code.
        code: u16,
        /// Its time in ticks.
        time: u64,
        /// Its length in bytes.
        len: usize,
    },
    /// A record that breaks the format. After [`RecordError::BadLength`] and
    /// [`RecordError::Truncated`] the block has no more entries; after
    /// [`RecordError::BadArguments`] (a `TimeExtend` without its time included) the next
    /// record follows.
    Bad(RecordError),
}

/// The entries of a block; see [`Block::entries`].
#[derive(Clone, Debug)]
pub struct Entries<'a> {
    /// Records before this offset are skipped.
    from: usize,
    records: RecordIter<'a>,
    catalog: &'a Catalog,
    thread: u64,
    order: Order,
}

impl<'a> Iterator for Entries<'a> {
    type Item = Entry<'a>;

    // Always inlined, as `Catalog::entry` is: out of line, the entry came back through the
    // stack to the table exports' walk, read with wider loads than the callee's stores
    // (46 % of the walk's samples on one load; BENCHMARKS.md).
    #[inline(always)]
    fn next(&mut self) -> Option<Entry<'a>> {
        let record = loop {
            match self.records.next()? {
                Ok(r) if r.offset < self.from => {}
                Ok(r) => break r,
                // A record before `from` was reported with the entries before it.
                Err(
                    RecordError::Truncated { offset, .. }
                    | RecordError::BadLength { offset, .. }
                    | RecordError::BadArguments { offset, .. },
                ) if offset < self.from => {}
                Err(e) => return Some(Entry::Bad(e)),
            }
        };
        Some(self.catalog.entry(record, self.thread, self.order))
    }
}
