//! Where everything is in a ring file: page 0's fixed part and live words, the control
//! page, the slot table and the data area (docs/FORMAT.md, "Ring layout"), and the checks
//! a reader makes before it trusts a file's geometry.

use crate::codec::wire::{HeaderError, MAX_BLOCK_SIZE, MAX_HEADER_LEN, MIN_BLOCK_SIZE, Order};
use event_def::schema::Version;
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
///
/// 1.1.0 (a median change) shares the data area between the slots: the `u32` at
/// [`at::BLOCKS_PER_SLOT`] counts the blocks of the whole area, and a block table after the
/// slot table says which slot's ring holds each ([`Layout::pooled`]). A reader of 1.0 would
/// misread it, and refuses it unless forced.
pub const RING_VERSION: Version = Version::new(1, 1, 0);

/// The first layout whose slots share the data area ([`Layout::pooled`]).
pub const POOLED_VERSION: Version = Version::new(1, 1, 0);

/// The unit of the layout: the header, control page and tables start on multiples of it.
pub const PAGE: u64 = 4096;
/// Bytes per slot in the slot table: one cache line, so threads do not share one.
pub const SLOT_LEN: u64 = 64;
/// The most slots a ring file may have.
pub const MAX_SLOTS: u32 = 1 << 16;
/// The most blocks per slot (layout 1.0).
pub const MAX_BLOCKS_PER_SLOT: u32 = 1 << 20;
/// The most blocks of a shared data area (layout 1.1 and later): `EVENT_BUFSIZE`'s largest,
/// 1024 GiB, in blocks of 64 KiB.
pub const MAX_POOL_BLOCKS: u32 = 1 << 24;
/// Bytes per entry of the block table (layout 1.1 and later): a [`tag`].
pub const TAG_LEN: u64 = 8;
/// The longest control request, in bytes.
pub const REQUEST_MAX: usize = 2032;
/// The control request that asks a recording of segments to seal the segment it writes and
/// start the next (since format 2.0.3; docs/FORMAT.md, "Control protocol"): outside the
/// selection language, so that a recorder that predates it refuses it.
pub const ROTATE_REQUEST: &str = "!rotate";

/// The prefix of a control request that asks for a snapshot (docs/FORMAT.md, "Control
/// protocol"): `@snapshot ` and the absolute path of the new file. `@` begins no selection
/// item, so a program of an older runtime refuses it as a bad selection.
pub const SNAPSHOT_REQUEST: &str = "@snapshot ";
/// The control request that sets limits (since the runtime of format 2.1.0): this prefix,
/// then `EVENT_LIMIT`'s grammar (`Test:Seq=100/s;Net=1/100`, `off` to remove one); alone, it
/// reads them. The reply is every limit now, as `EVENT_LIMIT` writes them (docs/FORMAT.md,
/// "Control protocol").
pub const LIMIT_REQUEST: &str = "%limit";
/// The longest control reply, in bytes.
pub const REPLY_MAX: usize = 1024;

/// Byte offsets in page 0. The fixed part (`..CRC + 4`) is written once, before `STATE`
/// becomes [`STATE_RECORDING`]; the words from `STATE` on change while the program runs.
pub mod at {
    /// `[u8; 8]`: [`RING_MAGIC`](crate::ring::RING_MAGIC).
    pub const MAGIC: usize = 0;
    /// `u16`: `0xFEFF` in the writer's byte order.
    pub const ORDER: usize = 8;
    /// `3 × u16`: the layout version, major, median, minor.
    pub const VERSION: usize = 10;
    /// `u32`: bytes per block.
    pub const BLOCK_SIZE: usize = 16;
    /// `u32`: slots in the slot table.
    pub const SLOTS: usize = 20;
    /// `u32`: blocks per slot (layout 1.0); since 1.1, blocks of the data area, which the
    /// slots share.
    pub const BLOCKS_PER_SLOT: usize = 24;
    /// `u32`: bytes of the stream header at page 2.
    pub const HEADER_LEN: usize = 28;
    /// `u64`: the writing process's id.
    pub const PID: usize = 32;
    /// `i64`: when the file was created, nanoseconds since the Unix epoch.
    pub const CREATED_NS: usize = 40;
    /// `u32`: CRC-32 of bytes `0..48`.
    pub const CRC: usize = 48;
    /// `u32` (since layout 1.0.2, written once with the fixed part, outside its CRC): bytes
    /// in each of the two halves of the [pin area](crate::ring::Layout::pin_area); 0 when the
    /// file has none. Reserved (ignored) in older files.
    pub const PIN_HALF: usize = 52;
    /// `u32`, atomic: [`STATE_CREATING`](crate::ring::STATE_CREATING), `RECORDING` or `CLOSED`.
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
    /// `u64`, atomic (since layout 1.0.1): events discarded with reused slots: what each
    /// slot's previous thread had left in its ring (events, and the losses its blocks
    /// reported) and its `refused` count, added up when the slot was reused. 0 in an older
    /// file, whose writer left the word reserved.
    pub const DISCARDED: usize = 104;
    /// `u64`, atomic (since layout 1.0.2, with a pin area): the pin area's
    /// `position`: its epoch (which half holds the entries, `epoch`
    /// mod 2) in the high 32 bits, the end of its committed entries in that half in the low 32.
    pub const PIN_POSITION: usize = 112;
    /// `u64`, atomic (since layout 1.0.2, with a pin area): pinned records that left the pin
    /// area to make room for newer ones, or that never fitted in it.
    pub const PINS_DROPPED: usize = 120;
}

/// The bytes before each pinned record in a half of the pin area (docs/FORMAT.md, "Pin
/// area"): `u32` entry length, `u32` CRC, `u64` thread, `u64` time.
pub const PIN_ENTRY_HEADER: usize = 24;
/// The largest half of a pin area a reader accepts.
pub const MAX_PIN_HALF: u32 = 1 << 24;

/// A pin area entry (docs/FORMAT.md, "Pin area") of `thread`'s `record` (its bytes as in a
/// block: header and arguments) at `time`: the entry header, the record, zeros up to a
/// multiple of 8.
pub fn pin_entry(order: Order, thread: u64, time: u64, record: &[u8]) -> Vec<u8> {
    let len = (PIN_ENTRY_HEADER + record.len()).next_multiple_of(8);
    let mut e = vec![0u8; len];
    order.put_u32(&mut e[pin_at::LEN..], len as u32);
    order.put_u64(&mut e[pin_at::THREAD..], thread);
    order.put_u64(&mut e[pin_at::TIME..], time);
    e[pin_at::RECORD..pin_at::RECORD + record.len()].copy_from_slice(record);
    let crc = crc32fast::hash(&e[pin_at::THREAD..pin_at::RECORD + record.len()]);
    order.put_u32(&mut e[pin_at::CRC..], crc);
    e
}

/// Byte offsets in a pin area entry.
pub mod pin_at {
    /// `u32`: the entry's length, this header included, a multiple of 8.
    pub const LEN: usize = 0;
    /// `u32`: CRC-32 of the entry's bytes from [`THREAD`] to the end of its record.
    pub const CRC: usize = 4;
    /// `u64`: the thread that recorded the event.
    pub const THREAD: usize = 8;
    /// `u64`: the record's time, in the stream's ticks.
    pub const TIME: usize = 16;
    /// The record, as it is in a block (its delta field is not read), then zeros up to `LEN`.
    pub const RECORD: usize = 24;
}

/// Byte offsets in the control page (page 1).
pub mod control_at {
    /// `u64`, atomic: bumped by a monitor after it wrote a request.
    pub const REQUEST_SEQ: usize = 0;
    /// `u32`: bytes of the request text.
    pub const REQUEST_LEN: usize = 8;
    /// The request text, UTF-8, [`REQUEST_MAX`](crate::ring::REQUEST_MAX) bytes at most: the
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
    /// `RECLAIMING` while changing owner.
    pub const THREAD: usize = 0;
    /// `u64`, atomic: `position` of the block being written.
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

/// A block table entry (layout 1.1 and later; docs/FORMAT.md, "Block table"): the block
/// holds block `sequence` (its low 32 bits) of the ring of slot `slot`. 0 is a block that no
/// ring holds.
#[inline]
pub const fn tag(slot: u32, sequence: u64) -> u64 {
    ((slot as u64 + 1) << 32) | (sequence as u32) as u64
}

/// Unpacks a block table entry into (slot, sequence mod 2^32); `None` for 0 (no ring's).
#[inline]
pub const fn split_tag(tag: u64) -> Option<(u32, u32)> {
    if tag >> 32 == 0 { None } else { Some(((tag >> 32) as u32 - 1, tag as u32)) }
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
    /// Layout 1.0: blocks in each slot's ring. Since 1.1 ([`pooled`](Self::pooled)):
    /// blocks of the data area, which the slots' rings share.
    pub blocks_per_slot: u32,
    /// Bytes of the stream header at page 2.
    pub header_len: u32,
    /// The writing process's id.
    pub pid: u64,
    /// When the file was created, nanoseconds since the Unix epoch.
    pub created_ns: i64,
    /// Bytes in each half of the pin area (since layout 1.0.2); 0: the file has none (always
    /// 0 in an older file).
    pub pin_half: u32,
}

/// Why a ring file cannot be read (or written).
#[non_exhaustive]
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

/// `Debug` writes the one-line message that `Display` writes, not the variant and its
/// fields: an error returned from `main` (`fn main() -> Result<(), RingError>`, or through
/// `Box<dyn Error>`) is printed by the standard library with `Debug`, as `Error: {:?}`, and
/// that line is what the program's user reads. A program that needs the parts matches on
/// them.
impl fmt::Debug for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
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

    /// Whether the slots share the data area (layout 1.1 and later): a block's slot is its
    /// block table entry's, not its place.
    pub fn pooled(&self) -> bool {
        self.version >= POOLED_VERSION
    }

    /// Offset of the block table (layout 1.1 and later): entry `i`, block `i`'s [`tag`], at
    /// `block_table() + 8 × i`. In a 1.0 file, where the data area starts.
    pub fn block_table(&self) -> u64 {
        align_up(self.slot_table() + self.slots as u64 * SLOT_LEN)
    }

    /// Offset of block `index`'s entry of the block table (layout 1.1 and later).
    pub fn tag_at(&self, index: u32) -> u64 {
        self.block_table() + index as u64 * TAG_LEN
    }

    /// Offset of the data area.
    pub fn data(&self) -> u64 {
        if self.pooled() {
            align_up(self.block_table() + self.blocks_per_slot as u64 * TAG_LEN)
        } else {
            self.block_table()
        }
    }

    /// Blocks in the data area: every slot's ring (1.0), or the area the slots share (1.1).
    pub fn blocks(&self) -> u64 {
        if self.pooled() { self.blocks_per_slot as u64 } else { self.slots as u64 * self.blocks_per_slot as u64 }
    }

    /// Offset of block `index` of slot `slot` (layout 1.0).
    pub fn block(&self, slot: u32, index: u32) -> u64 {
        self.data() + (slot as u64 * self.blocks_per_slot as u64 + index as u64) * self.block_size as u64
    }

    /// Offset of block `index` of the data area (layout 1.1 and later: the block the block
    /// table's entry `index` describes).
    pub fn pool_block(&self, index: u32) -> u64 {
        self.data() + index as u64 * self.block_size as u64
    }

    /// The end of the data area: what a reader of the slots needs the file to hold.
    pub fn data_end(&self) -> u64 {
        self.data() + self.blocks() * self.block_size as u64
    }

    /// Offset of the pin area (since layout 1.0.2; meaningful when `pin_half` is not 0): the
    /// end of the data area rounded up to a page. Its half `h` (0 or 1) starts at
    /// `pin_area() + h × pin_half`.
    pub fn pin_area(&self) -> u64 {
        align_up(self.data_end())
    }

    /// The whole file's length: up to the end of the pin area when there is one, else of
    /// the data area.
    pub fn file_len(&self) -> u64 {
        if self.pin_half == 0 { self.data_end() } else { self.pin_area() + 2 * self.pin_half as u64 }
    }

    /// Checks the geometry: block size, slot and block counts, header length, and the pin
    /// area's size ([`check_pin_half`](Self::check_pin_half)).
    pub fn check(&self) -> Result<(), String> {
        self.check_slots()?;
        self.check_pin_half()
    }

    /// Checks what a reader of the slots needs: block size, slot and block counts, header
    /// length.
    pub fn check_slots(&self) -> Result<(), String> {
        if !self.block_size.is_power_of_two() || !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&self.block_size) {
            return Err(format!(
                "block size {} is not a power of two in {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}",
                self.block_size
            ));
        }
        if !(1..=MAX_SLOTS).contains(&self.slots) {
            return Err(format!("{} slots is not in 1..={MAX_SLOTS}", self.slots));
        }
        if self.pooled() {
            if !(2..=MAX_POOL_BLOCKS).contains(&self.blocks_per_slot) {
                return Err(format!("{} blocks is not in 2..={MAX_POOL_BLOCKS}", self.blocks_per_slot));
            }
        } else if !(2..=MAX_BLOCKS_PER_SLOT).contains(&self.blocks_per_slot) {
            return Err(format!("{} blocks per slot is not in 2..={MAX_BLOCKS_PER_SLOT}", self.blocks_per_slot));
        }
        if self.header_len == 0 || self.header_len > MAX_HEADER_LEN {
            return Err(format!("stream header length {} is not in 1..={MAX_HEADER_LEN}", self.header_len));
        }
        Ok(())
    }

    /// Checks the pin area's size (since layout 1.0.2): 0, or a multiple of 8 in
    /// `PIN_ENTRY_HEADER + 8 ..= MAX_PIN_HALF`.
    pub fn check_pin_half(&self) -> Result<(), String> {
        if self.pin_half != 0
            && (!self.pin_half.is_multiple_of(8)
                || !(PIN_ENTRY_HEADER as u32 + 8..=MAX_PIN_HALF).contains(&self.pin_half))
        {
            return Err(format!(
                "a pin area of halves of {} bytes is not a multiple of 8 in {}..={MAX_PIN_HALF}",
                self.pin_half,
                PIN_ENTRY_HEADER + 8
            ));
        }
        Ok(())
    }

    /// The fixed part of page 0 (`0..52`), with its CRC. The pin area's size (since layout
    /// 1.0.2) is outside it: [`encode_pin_half`](Self::encode_pin_half).
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

    /// The `u32` at [`at::PIN_HALF`], in the layout's byte order (written with the fixed
    /// part, before the file is marked recording).
    pub fn encode_pin_half(&self) -> [u8; 4] {
        let mut b = [0u8; 4];
        self.order.put_u32(&mut b, self.pin_half);
        b
    }

    /// Reads and checks the fixed part of page 0 and, for layout 1.0.2 and later when `b`
    /// holds it, the pin area's size at [`at::PIN_HALF`] (0 otherwise: the bytes are reserved
    /// in older files). `force` reads a newer median version. A pin area's size that breaks
    /// its rules is taken as 0: see [`decode_with_pins`](Self::decode_with_pins).
    pub fn decode(b: &[u8], force: bool) -> Result<Layout, RingError> {
        Layout::decode_with_pins(b, force).map(|(layout, _)| layout)
    }

    /// As [`decode`](Self::decode), and why the pin area's size at [`at::PIN_HALF`] was not
    /// taken, when it breaks its rules. That `u32` is outside the fixed part's CRC, so a
    /// damaged one costs the pin area (its `pin_half` is then 0 here), never the file's
    /// slots (docs/FORMAT.md, "Opening a ring file", step 5).
    pub fn decode_with_pins(b: &[u8], force: bool) -> Result<(Layout, Option<String>), RingError> {
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
        let mut layout = Layout {
            order,
            version,
            block_size: o.u32(&b[at::BLOCK_SIZE..]),
            slots: o.u32(&b[at::SLOTS..]),
            blocks_per_slot: o.u32(&b[at::BLOCKS_PER_SLOT..]),
            header_len: o.u32(&b[at::HEADER_LEN..]),
            pid: o.u64(&b[at::PID..]),
            created_ns: o.u64(&b[at::CREATED_NS..]) as i64,
            pin_half: if version >= Version::new(1, 0, 2) && b.len() >= at::PIN_HALF + 4 {
                o.u32(&b[at::PIN_HALF..])
            } else {
                0
            },
        };
        layout.check_slots().map_err(RingError::BadHeader)?;
        let pin_damage = layout.check_pin_half().err();
        if pin_damage.is_some() {
            layout.pin_half = 0;
        }
        Ok((layout, pin_damage))
    }
}

/// Whether `bytes` start like a ring file (its magic).
pub fn is_ring(bytes: &[u8]) -> bool {
    bytes.starts_with(&RING_MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/FORMAT.md, "Example geometry", layout 1.1.0: the offsets and the fixed part's
    /// bytes as the document gives them.
    #[test]
    fn the_example_geometry_of_a_shared_data_area() {
        let layout = Layout {
            order: Order::Little,
            version: Version::new(1, 1, 0),
            block_size: 4096,
            slots: 4,
            blocks_per_slot: 32,
            header_len: 1000,
            pid: 77,
            created_ns: 0x1122,
            pin_half: 0,
        };
        assert!(layout.pooled());
        assert_eq!(
            (layout.slot_table(), layout.slot(1), layout.block_table(), layout.tag_at(5)),
            (12288, 12352, 16384, 16424)
        );
        assert_eq!((layout.data(), layout.pool_block(5), layout.data_end()), (20480, 40960, 151552));
        assert_eq!(tag(1, 13), 0x0000_0002_0000_000D);
        assert_eq!(split_tag(tag(1, 13)), Some((1, 13)));
        assert_eq!(split_tag(0), None);
        let expected: [u8; 52] = [
            0x89, 0x45, 0x56, 0x52, 0x0D, 0x0A, 0x1A, 0x0A, 0xFF, 0xFE, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, //
            0x00, 0x10, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0xE8, 0x03, 0x00, 0x00, //
            0x4D, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x22, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
            0x5B, 0x33, 0x80, 0x9C,
        ];
        assert_eq!(layout.encode(), expected);
        assert_eq!(Layout::decode(&expected, false).unwrap(), layout);
        // A 1.0 layout of the same numbers is another geometry: 32 blocks a slot.
        let old = Layout { version: Version::new(1, 0, 2), ..layout };
        assert!(!old.pooled());
        assert_eq!((old.data(), old.data_end()), (16384, 16384 + 4 * 32 * 4096));
    }
}
