//! The ring file: a memory-mapped flight recorder that survives the crash of the program
//! writing it, and that another process can read while it runs (Devel::RingBuffer, LTTng's
//! shm-path). docs/FORMAT.md, "The ring file", is the normative description; this module
//! holds its layout ([`layout`](self#layout)), its reader and its follower. The writer is
//! event-runtime's (`ringfile.rs`, `buffer.rs`); the control request a monitor sends is
//! event-dump's (`event-dump control`). Like the rest of this crate, the module reads bytes
//! it is given through [`ReadAt`]: it opens no file, starts no thread and never sleeps.
//!
//! # Layout
//!
//! ```text
//! page 0      file header: magic, byte-order mark, layout version, geometry, CRC;
//!             then the live words: state, heartbeat, events lost unattributed
//! page 1      control page: a monitor's request (`event-dump control`) and the reply
//! page 2..    the stream header, exactly as a stream starts (schema, clock, producer)
//! then        the slot table: one 64-byte slot per thread (owner, position, live, refused)
//! then        (since layout 1.1.0) the block table: one 8-byte entry per block of the data
//!             area, naming the slot whose ring holds it and its sequence (`tag`)
//! then        the data: the blocks the slots share (1.1.0), or slots × blocks_per_slot
//!             blocks, each slot's ring at its place (1.0.x), of block_size bytes
//! then        (since layout 1.0.2, optional) the pin area: two halves, one of which holds
//!             the pinned records (`EVENT_PIN`) of every thread, each with its thread and time
//! ```
//!
//! Each thread owns one slot and writes its blocks round the slot's ring, oldest
//! overwritten. Since layout 1.1.0 the rings share the data area: a ring's blocks are
//! wherever the block table says, and a writer stores a block's entry (then a release fence)
//! before it changes the block, so that a reader that copied it as another ring's block finds
//! the entry changed and drops the copy. A slot's `position` word packs the sequence number of the block being
//! written (low 32 bits) and the end of its committed records. Sealed blocks (sequence below
//! the position's) carry their CRC; the block being written is sealed by the reader, up to
//! the committed end. A crash at any instant therefore leaves every committed record
//! readable.
//!
//! # Memory: why a reader in another process sees what it should
//!
//! This is the one place the argument is written; the writer's modules and docs/FORMAT.md
//! point here.
//!
//! **The page cache is the guarantee.** The writer stores into a shared mapping of the
//! file; the reader reads the file with positioned reads (`pread`). Both reach the same
//! physical pages, the file's pages in the operating system's page cache: a `pread` copies
//! from the very memory the writer's stores go to, so it sees a store as soon as that store
//! is visible to the CPU the copy runs on, with no `msync` and no write-back. That is also
//! why a killed writer loses nothing it committed: its stores are already in the page cache,
//! which outlives the process. (A crash of the machine loses what was not written back.)
//! The reader never maps the file: a file truncated under it gives a read error, not a
//! `SIGBUS`.
//!
//! **Writer (mmap, atomics): the orderings that matter.** Plain stores write a record's
//! bytes, then an atomic store of the slot's `position` with *release* ordering publishes
//! them: any CPU that observes the new position observes the bytes below its end. Before a
//! block of the ring is reused, the writer stores the next position (release), then a
//! release *fence*, then the block's new bytes: on processors that reorder stores the fence
//! keeps the new bytes from becoming visible before the position that announces the reuse
//! (free on x86_64). Page 0's `state` = recording and a slot's owner changes are release
//! stores for the same reason; the counters (`heartbeat_ns`, `lost`, `refused`) are
//! informative and relaxed.
//!
//! **Reader (pread): no atomics, so the checks carry the weight.** A `pread` is a copy done
//! by the kernel, not an atomic load: the language's memory model gives it no ordering, and
//! a fence in the reader orders nothing *in that model*. What the reader relies on instead:
//!
//! 1. *Torn words.* A word copied while it is stored may come back half old, half new:
//!    every atomic word is read again until two reads agree ([`RingReader::read_u64`]).
//! 2. *Order between two reads.* The reader reads `position`, then the blocks it covers,
//!    then `position` again, each in its own system call, each copy complete before its call
//!    returns. On x86_64 loads are not reordered with loads, so that order is the order the
//!    memory is read in. On weakly ordered processors the reader's acquire fences between
//!    the calls compile to load barriers (`dmb ishld` on aarch64) that order the kernel's
//!    copies made on this CPU (a thread that moves to another CPU between two calls passes
//!    a full barrier in the scheduler): that is all they do, and why they stay.
//! 3. *Validation, not trust.* A block is kept only if the second read of `position` shows
//!    the writer had not started reusing its ring index (docs/FORMAT.md, "Reading a slot");
//!    sealed blocks must pass their CRC, and the block being written is resealed at the
//!    committed end, a record boundary. So a copy raced by the writer is dropped or caught,
//!    never shown as an event.
//!
//! The control page works the same way in the other direction (docs/FORMAT.md, "Control
//! protocol"): the monitor writes the request with `pwrite` and then `request_seq`, with a
//! release fence between the calls for the same reason as 2; the program loads
//! `request_seq` from its mapping with acquire ordering.

mod follow;
pub(crate) mod layout;
mod read;

pub use follow::{FollowItem, Follower};
pub use layout::{
    LIMIT_REQUEST, Layout, MAX_POOL_BLOCKS, MAX_SLOTS, POOLED_VERSION, REPLY_MAX, REQUEST_MAX, RING_MAGIC,
    RING_VERSION, ROTATE_REQUEST, RingError, SNAPSHOT_REQUEST, STATE_CLOSED, STATE_CREATING, STATE_RECORDING, is_ring,
};
// The file's byte offsets are public in `crate::raw`.
pub(crate) use layout::at;
pub use read::{
    PinArea, PinnedRecord, ReadAt, RingBlocks, RingFindings, RingReader, RingStream, SlotBlocks, SlotState, Status,
};
