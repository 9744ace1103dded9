//! The header's properties (since format 2.0.2): facts of the recording after the host, each a
//! tagged, length-delimited value, so that a later minor version adds one without a reader
//! of this one misreading anything (docs/FORMAT.md, "Header properties").
//!
//! ```text
//! property: tag u16, length u32, value (length bytes)
//! ```
//!
//! A reader reads the properties it knows and skips the others by their length; a known
//! property's value may grow in a later minor (fields appended), and a reader reads the fields
//! it knows from the value's start.

use super::{Put, Take};
use crate::wire::HeaderError;
use std::fmt;

/// Tag of [`Properties::recording`].
pub const TAG_RECORDING: u16 = 1;

/// Bytes of a property's tag and length, before its value.
pub const PROPERTY_HEAD: usize = 6;

/// A recording's id: 128 bits chosen at random when the recording starts, written into the
/// header of every stream it writes (since format 2.0.2), so that logs of many hosts and runs
/// are told apart without any coordination. Shown as 32 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordingId(pub [u8; 16]);

impl RecordingId {
    /// The id as 32 lowercase hex digits (what [`Display`](fmt::Display) writes).
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// Reads 32 hex digits (either case) back into an id.
    pub fn from_hex(text: &str) -> Option<RecordingId> {
        let digits = text.as_bytes();
        if digits.len() != 32 {
            return None;
        }
        let mut id = [0u8; 16];
        for (byte, pair) in id.iter_mut().zip(digits.chunks_exact(2)) {
            let hi = char::from(pair[0]).to_digit(16)?;
            let lo = char::from(pair[1]).to_digit(16)?;
            *byte = (hi << 4 | lo) as u8;
        }
        Some(RecordingId(id))
    }
}

impl fmt::Display for RecordingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for RecordingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RecordingId({self})")
    }
}

/// The properties of a header that this reader knows, each `None` when the header has none
/// (every header before format 2.0.2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Properties {
    /// The recording's id ([`TAG_RECORDING`]): 16 bytes.
    pub recording: Option<RecordingId>,
}

impl Properties {
    /// Writes every property that is set, in the order of their tags.
    pub(crate) fn encode(&self, put: &mut Put<'_>) {
        if let Some(id) = &self.recording {
            put.u16(TAG_RECORDING);
            put.u32(id.0.len() as u32);
            put.bytes(&id.0);
        }
    }

    /// Reads properties from `take` until it is empty; returns them and the bytes of the
    /// properties this reader does not know (skipped). A property that runs past the end, a
    /// known one whose value is shorter than its fields, or a known tag given twice, makes the
    /// header malformed.
    pub(crate) fn decode(take: &mut Take<'_>) -> Result<(Properties, u32), HeaderError> {
        let mut properties = Properties::default();
        let mut skipped = 0u32;
        while !take.rest.is_empty() {
            let malformed = |what: String| HeaderError::Malformed(what);
            let (Some(tag), Some(len)) = (take.u16(), take.u32()) else {
                return Err(malformed("a header property's tag and length run past the end of the header".into()));
            };
            let Some(value) = take.bytes(len as usize) else {
                return Err(malformed(format!(
                    "header property {tag} is {len} bytes long, more than the header holds after it"
                )));
            };
            match tag {
                TAG_RECORDING => {
                    if properties.recording.is_some() {
                        return Err(malformed("the recording id is given twice".into()));
                    }
                    let id: [u8; 16] = value.get(..16).and_then(|v| v.try_into().ok()).ok_or_else(|| {
                        malformed(format!("the recording id property is {len} bytes long, shorter than its 16"))
                    })?;
                    properties.recording = Some(RecordingId(id));
                }
                _ => skipped = skipped.saturating_add((PROPERTY_HEAD + value.len()) as u32),
            }
        }
        Ok((properties, skipped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_reads_back_from_its_hex() {
        let id = RecordingId([0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0, 1, 2, 3, 0xfc, 0xfd, 0xfe, 0xff]);
        assert_eq!(id.to_string(), "0123456789abcdef00010203fcfdfeff");
        assert_eq!(RecordingId::from_hex(&id.to_hex()), Some(id));
        assert_eq!(RecordingId::from_hex("0123456789ABCDEF00010203FCFDFEFF"), Some(id));
        assert_eq!(RecordingId::from_hex("0123"), None);
        assert_eq!(RecordingId::from_hex("g123456789abcdef00010203fcfdfeff"), None);
    }
}
