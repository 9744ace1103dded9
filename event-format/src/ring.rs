//! The ring file: a memory-mapped flight recorder that survives the crash of the program
//! writing it, and that another process can read while it runs (Devel::RingBuffer, LTTng's
//! shm-path). docs/FORMAT.md, "The ring file", is the normative description; this module
//! holds its layout and its reader. The writer is event-runtime's.
//!
//! ```text
//! page 0      file header: magic, byte-order mark, layout version, geometry, CRC;
//!             then the live words: state, heartbeat, events lost unattributed
//! page 1      control page: a monitor's request (`event-dump control`) and the reply
//! page 2..    the stream header, exactly as a stream starts (schema, clock, producer)
//! then        the slot table: one 64-byte slot per thread (owner, position, live, refused)
//! then        the data: slots × blocks_per_slot blocks of block_size bytes
//! ```
//!
//! Each thread owns one slot and writes its blocks round the slot's ring, oldest
//! overwritten. A slot's `position` word packs the sequence number of the block being
//! written (low 32 bits) and the end of its committed records: the writer stores the
//! records' bytes, then `position` with release ordering, so a reader that loads `position`
//! with acquire ordering sees every byte it covers. Sealed blocks (sequence below the
//! position's) carry their CRC; the block being written is sealed by the reader, up to the
//! committed end. A crash at any instant therefore leaves every committed record readable.
//!
//! The reader uses positioned reads (`pread`), never a mapping: a file truncated under it
//! gives an error, not a `SIGBUS`.

use crate::decode::{Block, DecodeOptions};
use crate::schema::Version;
use crate::wire::{
    BLOCK_HEADER_LEN, BLOCK_PACKED, BLOCK_SYNC, BlockHeader, Header, HeaderError, MAX_BLOCK_SIZE, MAX_HEADER_LEN,
    MIN_BLOCK_SIZE, Order, seal_block, verify_block,
};
use std::fmt;
use std::io;

/// The 8 bytes every ring file starts with (a stream's magic with `R` for `T`).
pub const RING_MAGIC: [u8; 8] = [0x89, b'E', b'V', b'R', b'\r', b'\n', 0x1A, b'\n'];

/// The ring file layout version this crate writes and reads. Its rules are the stream's:
/// another major is refused; a newer median is refused unless forced; a newer minor is read.
///
/// What forces a bump: **major**, a change of any offset or field size below; **median**, a
/// new meaning for a field; **minor**, a use for a reserved byte that an older reader may
/// ignore.
pub const RING_VERSION: Version = Version::new(1, 0, 0);

/// The unit of the layout: the header, control page and tables start on multiples of it.
pub const PAGE: u64 = 4096;
/// Bytes per slot in the slot table: one cache line, so threads do not share one.
pub const SLOT_LEN: u64 = 64;
/// The most slots a ring file may have.
pub const MAX_SLOTS: u32 = 1 << 16;
/// The most blocks per slot.
pub const MAX_BLOCKS_PER_SLOT: u32 = 1 << 20;
/// The longest control request, in bytes.
pub const REQUEST_MAX: usize = 2032;
/// The longest control reply, in bytes.
pub const REPLY_MAX: usize = 1024;

/// Byte offsets in page 0. The fixed part (`..CRC + 4`) is written once, before `STATE`
/// becomes [`STATE_RECORDING`]; the words from `STATE` on change while the program runs.
pub mod at {
    /// `[u8; 8]`: [`RING_MAGIC`](super::RING_MAGIC).
    pub const MAGIC: usize = 0;
    /// `u16`: `0xFEFF` in the writer's byte order.
    pub const ORDER: usize = 8;
    /// `3 × u16`: the layout version, major, median, minor.
    pub const VERSION: usize = 10;
    /// `u32`: bytes per block.
    pub const BLOCK_SIZE: usize = 16;
    /// `u32`: slots in the slot table.
    pub const SLOTS: usize = 20;
    /// `u32`: blocks per slot.
    pub const BLOCKS_PER_SLOT: usize = 24;
    /// `u32`: bytes of the stream header at page 2.
    pub const HEADER_LEN: usize = 28;
    /// `u64`: the writing process's id.
    pub const PID: usize = 32;
    /// `i64`: when the file was created, nanoseconds since the Unix epoch.
    pub const CREATED_NS: usize = 40;
    /// `u32`: CRC-32 of bytes `0..48`.
    pub const CRC: usize = 48;
    /// `u32`, atomic: [`STATE_CREATING`](super::STATE_CREATING), `RECORDING` or `CLOSED`.
    pub const STATE: usize = 64;
    /// `u64`, atomic: wall time of the writer's last sign of life, ns since the epoch.
    pub const HEARTBEAT_NS: usize = 72;
    /// `u64`, atomic: events the writer could not attribute to any slot (no free slot, a
    /// thread exiting, an event recorded from inside the recording of another).
    pub const LOST: usize = 80;
    /// `u64`, atomic: threads that found every slot taken and recorded nothing.
    pub const THREADS_WITHOUT_SLOT: usize = 88;
    /// `u64`, atomic: slots taken over from exited threads; each discarded what was left of
    /// its previous thread's ring.
    pub const SLOTS_REUSED: usize = 96;
}

/// Byte offsets in the control page (page 1).
pub mod control_at {
    /// `u64`, atomic: bumped by a monitor after it wrote a request.
    pub const REQUEST_SEQ: usize = 0;
    /// `u32`: bytes of the request text.
    pub const REQUEST_LEN: usize = 8;
    /// The request text, UTF-8, [`REQUEST_MAX`](super::REQUEST_MAX) bytes at most: the
    /// `EVENT_CONTROL` grammar, applied to the running selection.
    pub const REQUEST: usize = 16;
    /// `u64`, atomic: the last request sequence the program answered.
    pub const ACK_SEQ: usize = 2048;
    /// `u32`: 0 when the request was applied, 1 when it was refused.
    pub const STATUS: usize = 2056;
    /// `u32`: bytes of the reply text.
    pub const REPLY_LEN: usize = 2060;
    /// The reply text, UTF-8: the selection now, or why the request was refused.
    pub const REPLY: usize = 2064;
}

/// The owner word of a slot whose previous owner exited and that a new thread is taking
/// over: readers treat the slot as empty for that instant.
pub const RECLAIMING: u64 = u64::MAX;

/// Byte offsets in a slot.
pub mod slot_at {
    /// `u64`, atomic: the id of the thread that owns the slot; 0 while never used,
    /// [`RECLAIMING`](super::RECLAIMING) while changing owner.
    pub const THREAD: usize = 0;
    /// `u64`, atomic: [`position`](super::position) of the block being written.
    pub const POSITION: usize = 8;
    /// `u32`, atomic: 1 while the owning thread runs.
    pub const LIVE: usize = 16;
    /// `u64`, atomic: events the owner refused because its ring was full (`fill` policy).
    pub const REFUSED: usize = 24;
}

/// `STATE` while the writer fills in the file: readers wait or refuse.
pub const STATE_CREATING: u32 = 0;
/// `STATE` while the program records.
pub const STATE_RECORDING: u32 = 1;
/// `STATE` after the program stopped recording cleanly.
pub const STATE_CLOSED: u32 = 2;

/// Packs a slot's position: the low 32 bits of the current block's sequence number and the
/// end of its committed records (`BLOCK_HEADER_LEN..=block_size`).
#[inline]
pub const fn position(sequence: u64, end: u32) -> u64 {
    (sequence << 32) | end as u64
}

/// Unpacks a slot's position into (sequence mod 2^32, end).
#[inline]
pub const fn split_position(position: u64) -> (u32, u32) {
    ((position >> 32) as u32, position as u32)
}

const fn align_up(n: u64) -> u64 {
    n.div_ceil(PAGE) * PAGE
}

/// The geometry of a ring file: where everything is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The writer's byte order, for every field of the file.
    pub order: Order,
    /// The layout version.
    pub version: Version,
    /// Bytes per block.
    pub block_size: u32,
    /// Slots (threads that can record at once).
    pub slots: u32,
    /// Blocks in each slot's ring.
    pub blocks_per_slot: u32,
    /// Bytes of the stream header at page 2.
    pub header_len: u32,
    /// The writing process's id.
    pub pid: u64,
    /// When the file was created, nanoseconds since the Unix epoch.
    pub created_ns: i64,
}

/// Why a ring file cannot be read (or written).
#[derive(Debug)]
pub enum RingError {
    /// Reading failed.
    Io(io::Error),
    /// The file does not start with [`RING_MAGIC`].
    NotARing,
    /// The file is shorter than its layout says.
    Truncated {
        /// Bytes there are.
        have: u64,
        /// Bytes the layout needs.
        need: u64,
    },
    /// The fixed part of the file header fails its checks.
    BadHeader(String),
    /// The layout's major version is not one this reader reads, or its median is newer.
    Version(Version),
    /// The writer has not finished creating the file.
    Creating,
    /// The embedded stream header is refused.
    Stream(HeaderError),
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingError::Io(e) => write!(f, "cannot read the ring file: {e}"),
            RingError::NotARing => {
                write!(f, "not a ring file (no ring magic); if it is an event stream, read it with `event-dump print`")
            }
            RingError::Truncated { have, need } => {
                write!(f, "the ring file is truncated ({have} of {need} bytes); it was cut after its writer created it")
            }
            RingError::BadHeader(why) => write!(f, "the ring file's header is damaged: {why}"),
            RingError::Version(v) => write!(
                f,
                "ring file layout {v} is not readable by this reader (it reads {}.{}.x); install a matching event-dump",
                RING_VERSION.major, RING_VERSION.median
            ),
            RingError::Creating => {
                write!(f, "the ring file is still being created by its program; try again in a moment")
            }
            RingError::Stream(e) => write!(f, "the ring file's stream header: {e}"),
        }
    }
}

impl std::error::Error for RingError {}

impl From<io::Error> for RingError {
    fn from(e: io::Error) -> RingError {
        RingError::Io(e)
    }
}

impl Layout {
    /// Offset of the control page.
    pub const fn control(&self) -> u64 {
        PAGE
    }

    /// Offset of the stream header.
    pub const fn stream_header(&self) -> u64 {
        2 * PAGE
    }

    /// Offset of the slot table.
    pub const fn slot_table(&self) -> u64 {
        align_up(2 * PAGE + self.header_len as u64)
    }

    /// Offset of slot `i`.
    pub const fn slot(&self, i: u32) -> u64 {
        self.slot_table() + i as u64 * SLOT_LEN
    }

    /// Offset of the data area.
    pub const fn data(&self) -> u64 {
        align_up(self.slot_table() + self.slots as u64 * SLOT_LEN)
    }

    /// Offset of block `index` of slot `slot`.
    pub const fn block(&self, slot: u32, index: u32) -> u64 {
        self.data() + (slot as u64 * self.blocks_per_slot as u64 + index as u64) * self.block_size as u64
    }

    /// The whole file's length.
    pub const fn file_len(&self) -> u64 {
        self.data() + self.slots as u64 * self.blocks_per_slot as u64 * self.block_size as u64
    }

    /// Checks the geometry: block size, slot and block counts, header length.
    pub fn check(&self) -> Result<(), String> {
        if !self.block_size.is_power_of_two() || !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&self.block_size) {
            return Err(format!(
                "block size {} is not a power of two in {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}",
                self.block_size
            ));
        }
        if !(1..=MAX_SLOTS).contains(&self.slots) {
            return Err(format!("{} slots is not in 1..={MAX_SLOTS}", self.slots));
        }
        if !(2..=MAX_BLOCKS_PER_SLOT).contains(&self.blocks_per_slot) {
            return Err(format!("{} blocks per slot is not in 2..={MAX_BLOCKS_PER_SLOT}", self.blocks_per_slot));
        }
        if self.header_len == 0 || self.header_len > MAX_HEADER_LEN {
            return Err(format!("stream header length {} is not in 1..={MAX_HEADER_LEN}", self.header_len));
        }
        Ok(())
    }

    /// The fixed part of page 0 (`0..52`), with its CRC.
    pub fn encode(&self) -> [u8; at::CRC + 4] {
        let mut b = [0u8; at::CRC + 4];
        let o = self.order;
        b[at::MAGIC..at::MAGIC + 8].copy_from_slice(&RING_MAGIC);
        o.put_u16(&mut b[at::ORDER..], 0xFEFF);
        o.put_u16(&mut b[at::VERSION..], self.version.major);
        o.put_u16(&mut b[at::VERSION + 2..], self.version.median);
        o.put_u16(&mut b[at::VERSION + 4..], self.version.minor);
        o.put_u32(&mut b[at::BLOCK_SIZE..], self.block_size);
        o.put_u32(&mut b[at::SLOTS..], self.slots);
        o.put_u32(&mut b[at::BLOCKS_PER_SLOT..], self.blocks_per_slot);
        o.put_u32(&mut b[at::HEADER_LEN..], self.header_len);
        o.put_u64(&mut b[at::PID..], self.pid);
        o.put_u64(&mut b[at::CREATED_NS..], self.created_ns as u64);
        let crc = crc32fast::hash(&b[..at::CRC]);
        o.put_u32(&mut b[at::CRC..], crc);
        b
    }

    /// Reads and checks the fixed part of page 0. `force` reads a newer median version.
    pub fn decode(b: &[u8], force: bool) -> Result<Layout, RingError> {
        if b.len() < at::CRC + 4 || b[..8] != RING_MAGIC {
            return Err(RingError::NotARing);
        }
        let order = match [b[at::ORDER], b[at::ORDER + 1]] {
            [0xFF, 0xFE] => Order::Little,
            [0xFE, 0xFF] => Order::Big,
            other => return Err(RingError::BadHeader(format!("byte-order mark {:02x} {:02x}", other[0], other[1]))),
        };
        let o = order;
        let crc = crc32fast::hash(&b[..at::CRC]);
        if crc != o.u32(&b[at::CRC..]) {
            return Err(RingError::BadHeader("checksum mismatch".into()));
        }
        let version =
            Version::new(o.u16(&b[at::VERSION..]), o.u16(&b[at::VERSION + 2..]), o.u16(&b[at::VERSION + 4..]));
        if version.major != RING_VERSION.major || (version.median > RING_VERSION.median && !force) {
            return Err(RingError::Version(version));
        }
        let layout = Layout {
            order,
            version,
            block_size: o.u32(&b[at::BLOCK_SIZE..]),
            slots: o.u32(&b[at::SLOTS..]),
            blocks_per_slot: o.u32(&b[at::BLOCKS_PER_SLOT..]),
            header_len: o.u32(&b[at::HEADER_LEN..]),
            pid: o.u64(&b[at::PID..]),
            created_ns: o.u64(&b[at::CREATED_NS..]) as i64,
        };
        layout.check().map_err(RingError::BadHeader)?;
        Ok(layout)
    }
}

/// Positioned reads, from a file or from bytes.
pub trait ReadAt {
    /// Fills `buf` from `offset`; an error if the source ends first.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// The source's length in bytes.
    fn size(&self) -> io::Result<u64>;
}

impl ReadAt for [u8] {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).ok().filter(|&s| s <= self.len());
        match start.and_then(|s| self.get(s..s.checked_add(buf.len())?)) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end")),
        }
    }
    fn size(&self) -> io::Result<u64> {
        Ok(<[u8]>::len(self) as u64)
    }
}

impl ReadAt for Vec<u8> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.as_slice().len() as u64)
    }
}

impl ReadAt for std::fs::File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
        }
        #[cfg(windows)]
        {
            let mut done = 0;
            while done < buf.len() {
                match std::os::windows::fs::FileExt::seek_read(self, &mut buf[done..], offset + done as u64) {
                    Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end")),
                    Ok(n) => done += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }
    fn size(&self) -> io::Result<u64> {
        (**self).size()
    }
}

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
    /// [`STATE_CREATING`], [`STATE_RECORDING`] or [`STATE_CLOSED`] (or a newer value).
    pub state: u32,
    /// The writer's last sign of life, ns since the Unix epoch.
    pub heartbeat_ns: u64,
    /// Events no slot holds (see [`at::LOST`]).
    pub lost: u64,
    /// Threads that found no free slot.
    pub threads_without_slot: u64,
    /// Slots taken over from exited threads (their remaining blocks discarded).
    pub slots_reused: u64,
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
/// a word written meanwhile could come back torn.
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

    /// The live words of page 0.
    pub fn status(&self) -> io::Result<Status> {
        let o = self.layout.order;
        Ok(Status {
            state: read_u32(&self.source, o, at::STATE as u64)?,
            heartbeat_ns: stable_u64(&self.source, o, at::HEARTBEAT_NS as u64)?,
            lost: stable_u64(&self.source, o, at::LOST as u64)?,
            threads_without_slot: stable_u64(&self.source, o, at::THREADS_WITHOUT_SLOT as u64)?,
            slots_reused: stable_u64(&self.source, o, at::SLOTS_REUSED as u64)?,
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
                    verify_block(self.layout.order, &bytes).map(Some).map_err(|d| d.to_string())
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

/// What a [`RingStream`] found, once read to its end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RingSummary {
    /// Slots that held a thread.
    pub threads: u64,
    /// Blocks in the stream.
    pub blocks: u64,
    /// Blocks overwritten by their threads' rings (sequence numbers no longer there).
    pub overwritten_blocks: u64,
    /// Blocks that failed their checks and were left out, with why.
    pub damaged: Vec<(u32, u64, String)>,
    /// Events refused because a ring was full, over all slots.
    pub refused: u64,
    /// Events no slot holds.
    pub lost: u64,
    /// Threads that found no free slot.
    pub threads_without_slot: u64,
    /// Slots taken over from exited threads (their remaining blocks discarded).
    pub slots_reused: u64,
    /// The file's state when it was read.
    pub state: u32,
}

/// A ring file read as a stream: the stream header, then each slot's blocks oldest first,
/// then (when events were refused or lost) one block of thread 0 whose `Dropped` events
/// report them, so that a [`Decoder`](crate::decode::Decoder) counts every loss. One slot's
/// blocks are in memory at a time.
#[derive(Debug)]
pub struct RingStream<R> {
    reader: RingReader<R>,
    next_slot: u32,
    pending: std::collections::VecDeque<Vec<u8>>,
    at: usize,
    summary: RingSummary,
    drops: Vec<(u64, u64)>,
    last_time: u64,
    finished: bool,
}

impl<R: ReadAt> RingStream<R> {
    /// A stream of the ring file `reader` reads.
    pub fn new(reader: RingReader<R>) -> RingStream<R> {
        let header = reader.header_bytes.clone();
        let mut pending = std::collections::VecDeque::new();
        pending.push_back(header);
        RingStream {
            reader,
            next_slot: 0,
            pending,
            at: 0,
            summary: RingSummary::default(),
            drops: Vec::new(),
            last_time: 0,
            finished: false,
        }
    }

    /// What was found so far; complete once the stream has been read to its end.
    pub fn summary(&self) -> &RingSummary {
        &self.summary
    }

    /// The reader.
    pub fn reader(&self) -> &RingReader<R> {
        &self.reader
    }

    fn refill(&mut self) -> io::Result<()> {
        let layout = self.reader.layout;
        while self.pending.is_empty() && self.next_slot < layout.slots {
            let index = self.next_slot;
            self.next_slot += 1;
            let found = self.reader.read_slot(index, 0)?;
            let Some(slot) = found.slot else { continue };
            self.summary.threads += 1;
            self.summary.overwritten_blocks += found.first_sequence;
            // The counts come from the file, which may lie: saturate rather than wrap.
            self.summary.refused = self.summary.refused.saturating_add(slot.refused);
            if slot.refused > 0 {
                self.drops.push((slot.thread, slot.refused));
            }
            for (seq, why) in found.damaged {
                self.summary.damaged.push((index, seq, why));
            }
            for block in found.blocks {
                self.last_time = self.last_time.max(block.header.base_time);
                let mut bytes = vec![0u8; layout.block_size as usize];
                block.header.write(layout.order, &mut bytes);
                bytes[BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + block.records.len()].copy_from_slice(&block.records);
                seal_block(layout.order, &mut bytes, block.records.len() as u32);
                self.summary.blocks += 1;
                self.pending.push_back(bytes);
            }
        }
        if self.pending.is_empty() && !self.finished {
            self.finished = true;
            let status = self.reader.status()?;
            self.summary.state = status.state;
            self.summary.lost = status.lost;
            self.summary.threads_without_slot = status.threads_without_slot;
            self.summary.slots_reused = status.slots_reused;
            if status.lost > 0 {
                self.drops.push((0, status.lost));
            }
            self.pending.extend(crate::wire::dropped_report(
                layout.order,
                layout.block_size,
                0,
                self.last_time,
                &self.drops,
            ));
        }
        Ok(())
    }
}

impl<R: ReadAt> io::Read for RingStream<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Some(front) = self.pending.front() {
                if self.at < front.len() {
                    let n = buf.len().min(front.len() - self.at);
                    buf[..n].copy_from_slice(&front[self.at..self.at + n]);
                    self.at += n;
                    return Ok(n);
                }
                self.pending.pop_front();
                self.at = 0;
                continue;
            }
            self.refill()?;
            if self.pending.is_empty() {
                return Ok(0);
            }
        }
    }
}

/// Whether `bytes` start like a ring file (its magic).
pub fn is_ring(bytes: &[u8]) -> bool {
    bytes.starts_with(&RING_MAGIC)
}

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
    /// Blocks of a thread overwritten before the follower could read them.
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
}

#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    thread: u64,
    /// The sequence of the next block to read: at most 2^32, one past the largest sequence
    /// a position can hold (a file that claims block 2^32 − 1 has nothing after it).
    next: u64,
    /// Bytes of block `next`'s records already yielded.
    shown: usize,
}

/// Follows a ring file while its program writes it, like ftrace's `trace_pipe`: each
/// [`poll`](Follower::poll) yields what was committed since the last, in order per thread,
/// and reports what the writer overwrote before it could be read.
#[derive(Debug)]
pub struct Follower<R> {
    reader: RingReader<R>,
    cursors: Vec<Cursor>,
}

impl<R: ReadAt> Follower<R> {
    /// Follows from the oldest block still in the file.
    pub fn new(reader: RingReader<R>) -> Follower<R> {
        let slots = reader.layout.slots as usize;
        Follower { reader, cursors: vec![Cursor::default(); slots] }
    }

    /// The reader.
    pub fn reader(&self) -> &RingReader<R> {
        &self.reader
    }

    /// What was committed since the last poll.
    pub fn poll(&mut self) -> io::Result<Vec<FollowItem>> {
        let mut out = Vec::new();
        for index in 0..self.reader.layout.slots {
            let Some(slot) = self.reader.slot(index)? else { continue };
            let cursor = &mut self.cursors[index as usize];
            if cursor.thread != slot.thread {
                *cursor = Cursor { thread: slot.thread, next: 0, shown: 0 };
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
            if found.first_sequence > cursor.next {
                out.push(FollowItem::Overwritten { thread: now.thread, blocks: found.first_sequence - cursor.next });
                cursor.next = found.first_sequence;
                cursor.shown = 0;
            }
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
                    out.push(FollowItem::Records { slot: index, block, from });
                }
            }
            skip_damaged(cursor, &mut out, u64::MAX);
        }
        Ok(out)
    }
}

/// Sends a control request to the program writing the ring file `file` (opened for reading
/// and writing) and waits up to `timeout` for its answer: whether it applied the request,
/// and its reply (the selection now, or why it refused). The request is `text` in the
/// `EVENT_CONTROL` grammar, applied to the program's running selection. One monitor at a
/// time: two at once may see each other's replies.
#[cfg(unix)]
pub fn send_request(
    file: &std::fs::File,
    text: &str,
    timeout: std::time::Duration,
) -> Result<(bool, String), RingError> {
    use std::os::unix::fs::FileExt;
    if text.len() > REQUEST_MAX {
        return Err(RingError::BadHeader(format!("the request is {} bytes; the most is {REQUEST_MAX}", text.len())));
    }
    let reader = RingReader::open(file, DecodeOptions::default())?;
    let (o, base) = (reader.layout.order, reader.layout.control());
    if reader.status()?.state != STATE_RECORDING {
        return Err(RingError::BadHeader("its program is not recording any more (the file is closed)".into()));
    }
    let seq = stable_u64(file, o, base + control_at::REQUEST_SEQ as u64)? + 1;
    file.write_all_at(text.as_bytes(), base + control_at::REQUEST as u64)?;
    let mut b = [0u8; 8];
    o.put_u32(&mut b, text.len() as u32);
    file.write_all_at(&b[..4], base + control_at::REQUEST_LEN as u64)?;
    // Release: the program that sees the new sequence number sees the text.
    std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
    o.put_u64(&mut b, seq);
    file.write_all_at(&b, base + control_at::REQUEST_SEQ as u64)?;
    let deadline = std::time::Instant::now() + timeout;
    while stable_u64(file, o, base + control_at::ACK_SEQ as u64)? != seq {
        if std::time::Instant::now() >= deadline {
            return Err(RingError::Io(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the program did not answer within {} ms; is it still running?", timeout.as_millis()),
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    let status = read_u32(file, o, base + control_at::STATUS as u64)?;
    let len = (read_u32(file, o, base + control_at::REPLY_LEN as u64)? as usize).min(REPLY_MAX);
    let mut reply = vec![0u8; len];
    ReadAt::read_exact_at(file, &mut reply, base + control_at::REPLY as u64)?;
    Ok((status == 0, String::from_utf8_lossy(&reply).into_owned()))
}
