//! What only a writer needs, and the ring file's byte offsets: the recorder's side of the
//! codec, hidden from the docs. A reader never needs these (it reads through
//! [`crate::decode`], [`crate::ring`] and [`crate::log`]); they may change in any release,
//! with docs/FORMAT.md, which is their specification.
//!
//! - Sealing, packing and stopping a block: [`seal_block_in_place`], [`seal_block`],
//!   [`pack_block`], [`stop_block`], [`dropped_report`], the used-bytes offset
//!   [`BLOCK_USED_AT`].
//! - A record's header and arguments as the generated code writes them: [`put_record_header`],
//!   [`encode_value`], the strings' cut ([`fit_strings`], [`fit_texts`], [`record_len`]).
//! - The header's property tags ([`TAG_RECORDING`] and the rest).
//! - The ring file: the offsets of its header ([`at`]), control area ([`control_at`]), slots
//!   ([`slot_at`]) and pins ([`pin_at`], [`pin_entry`]), and how a slot's position and tag
//!   pack a sequence and an offset ([`position`], [`tag`]).

pub use crate::codec::ring::layout::{
    MAX_BLOCKS_PER_SLOT, MAX_PIN_HALF, PAGE, PIN_ENTRY_HEADER, RECLAIMING, SLOT_LEN, TAG_LEN, at, control_at, pin_at,
    pin_entry, position, slot_at, split_position, split_tag, tag,
};
pub use crate::codec::wire::block::{
    BLOCK_USED_AT, dropped_report, packed_len, seal_block, seal_block_in_place, stop_block, stop_block_of,
};
pub use crate::codec::wire::pack::{ZSTD_MAGIC, columns, pack_block};
pub use crate::codec::wire::properties::{
    PROPERTY_HEAD, SEGMENT_LEN, TAG_EARLIER, TAG_HISTOGRAMS, TAG_LABELS, TAG_LIMITS, TAG_MEANINGS, TAG_RECORDING,
    TAG_SEGMENT, TAG_SNAPSHOT,
};
pub use crate::codec::wire::put::{encode_value, put_record_header};
pub use crate::codec::wire::value::{fit_strings, fit_texts, record_len};
