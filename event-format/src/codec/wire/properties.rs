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

use super::errors::{EncodeError, HeaderError};
use super::sets::{SetEntry, put_str, take_str};
use super::{Put, Take};
use event_def::schema::{Buckets, Counter, Flow, FlowStep, Histogram, HistogramOf, Limit, Rate, Span};
use std::fmt;

/// Tag of [`Properties::recording`].
pub const TAG_RECORDING: u16 = 1;
/// Tag of the sets' meanings: the spans, counters and flows each set declares
/// ([`Schema::spans`](crate::schema::Schema::spans), ...), kept in the sets' schemas.
pub const TAG_MEANINGS: u16 = 2;

/// Tag of [`Properties::segment`] (since format 2.0.3).
pub const TAG_SEGMENT: u16 = 3;
/// Bytes of the segment property's value: four `u64`.
pub const SEGMENT_LEN: usize = 32;
/// Tag of [`Properties::snapshot`] (since format 2.0.3): the stream is a snapshot of a running
/// recording's rings, and why it was taken.
pub const TAG_SNAPSHOT: u16 = 4;

/// Tag of [`Properties::labels`] (since format 2.1.0): the recording's labels, `key=value`
/// pairs that name the service, its version and instance (docs/FORMAT.md, "Labels").
pub const TAG_LABELS: u16 = 5;
/// Tag of [`Properties::earlier`] (since format 2.1.0): what a directory's disk budget removed
/// of earlier recordings of the same program (docs/FORMAT.md, "Earlier recordings").
pub const TAG_EARLIER: u16 = 6;
/// Tag of the sets' declared histograms (since format 2.1.0): each set's `HISTOGRAM` lines
/// ([`Schema::histograms`](crate::schema::Schema::histograms)), kept in the sets' schemas. The
/// stream's `Histogram` records name a histogram by its place in this property's list.
pub const TAG_HISTOGRAMS: u16 = 11;
/// Tag of the sets' declared limits (since format 2.1.0): each set's `limit=` settings
/// ([`Schema::limits`](crate::schema::Schema::limits)), kept in the sets' schemas: what
/// events.def asked for, which `EVENT_LIMIT` and `event-dump control` may have changed (the
/// `Suppressed` records say what each limit did).
pub const TAG_LIMITS: u16 = 12;

/// The most labels a header holds.
pub const MAX_LABELS: usize = 64;
/// The longest label key, in bytes.
pub const MAX_LABEL_KEY: usize = 128;
/// The longest label value, in bytes.
pub const MAX_LABEL_VALUE: usize = 1024;

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

    /// The id of a log whose header has none (older than format 2.0.2, or a test stream): the
    /// 128-bit FNV-1a hash of the header's bytes as the log holds them (magic to CRC
    /// included; for a ring file, its embedded stream header), the hash's 16 bytes
    /// most significant first. The rule is docs/OUTPUT.md's ("Recording ids"), for a second
    /// implementation: offset basis `0x6c62272e07bb014262b821756295c58d`, prime
    /// `0x0000000001000000000000000000013b`, for each byte `hash = (hash ^ byte) * prime`
    /// modulo 2^128.
    ///
    /// ```
    /// use event_format::wire::RecordingId;
    /// assert_eq!(RecordingId::derived(b"").to_hex(), "6c62272e07bb014262b821756295c58d");
    /// assert_eq!(RecordingId::derived(b"a").to_hex(), "d228cb696f1a8caf78912b704e4a8964");
    /// ```
    pub fn derived(header: &[u8]) -> RecordingId {
        const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
        const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
        let hash = header.iter().fold(OFFSET, |h, &b| (h ^ u128::from(b)).wrapping_mul(PRIME));
        RecordingId(hash.to_be_bytes())
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

/// Where a stream stands in a recording written as a sequence of segments (the header's
/// segment property, [`TAG_SEGMENT`], since format 2.0.3; docs/FORMAT.md, "Segments"). Every
/// count is cumulative from the recording's start, so that one segment alone says what came
/// before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Segment {
    /// The segment's number: 0 for the recording's first, one more for each next.
    pub index: u64,
    /// Sealed segments of the recording that its disk budget deleted before this one started.
    pub removed_segments: u64,
    /// The events those deleted segments held (their stop markers' `events`).
    pub removed_events: u64,
    /// Events the recorder could not write between the previous segment's stop and this
    /// segment's start (while the disk was full, ...): in no segment's counts.
    pub lost_between: u64,
}

/// The properties of a header that this reader knows, each `None` when the header has none
/// (every header before format 2.0.2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Properties {
    /// The recording's id ([`TAG_RECORDING`]): 16 bytes.
    pub recording: Option<RecordingId>,
    /// Where the stream stands in a recording of segments ([`TAG_SEGMENT`], since 2.0.3):
    /// `None` in a stream that is not a segment.
    pub segment: Option<Segment>,
    /// What the stream is when it is a snapshot ([`TAG_SNAPSHOT`], since format 2.0.3):
    /// `None` for a whole recording's stream.
    pub snapshot: Option<Snapshot>,
    /// The recording's labels ([`TAG_LABELS`], since format 2.1.0), in the order given:
    /// `service`, `version`, `instance` and any others. Empty when the header has none.
    pub labels: Vec<(String, String)>,
    /// What the disk budget of the segments' directory removed of earlier recordings
    /// ([`TAG_EARLIER`], since format 2.1.0): `None` when it removed nothing of them.
    pub earlier: Option<Earlier>,
}

impl Properties {
    /// The value of the label `key`, if the header has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// What a recording's disk budget removed of *earlier* recordings whose segments share its
/// directory and name pattern (the header's earlier property, [`TAG_EARLIER`], since format
/// 2.1.0; docs/FORMAT.md, "Earlier recordings"). Every count is cumulative: a recording
/// carries forward what the earlier recordings' own headers said, so that the newest segment
/// of a directory says everything its budget ever removed of recordings before it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Earlier {
    /// Earlier recordings that the budget removed wholly (none of their segments is left).
    pub recordings_removed: u64,
    /// The segments of those recordings that the budget removed.
    pub segments_of_removed: u64,
    /// The events those segments accounted for.
    pub events_of_removed: u64,
    /// Earlier recordings of which some segments are left: for each, the segments (its
    /// lowest indexes) the budget of later recordings removed, and the events they accounted
    /// for, beyond what the recording's own segments count (`Segment::removed_segments`).
    pub partly: Vec<EarlierRemoval>,
}

/// Segments of one earlier recording that a later recording's budget removed ([`Earlier`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EarlierRemoval {
    /// The earlier recording.
    pub recording: RecordingId,
    /// Its segments removed by later recordings.
    pub segments: u64,
    /// The events they accounted for.
    pub events: u64,
}

/// The fixed fields of the earlier property's value, before its entries: three `u64` and a
/// `u16` count.
const EARLIER_FIXED: usize = 8 * 3 + 2;
/// The bytes of one of its entries: an id and two `u64`.
const EARLIER_ENTRY: usize = 16 + 8 + 8;
/// The most entries it holds (a writer folds older ones into nothing: it lists only
/// recordings with segments left, which a budget bounds).
pub const MAX_EARLIER: usize = u16::MAX as usize;

/// Whether `key` may name a label: 1 to [`MAX_LABEL_KEY`] bytes of ASCII letters, digits,
/// `_`, `.` and `-` (OpenTelemetry's attribute names, `service.name`, fit).
pub fn valid_label_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_LABEL_KEY
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Why a snapshot was taken ([`Snapshot::cause`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SnapshotCause {
    /// Asked for: from code (`Recording::snapshot`) or from outside (`event-dump control
    /// --snapshot`). Byte 0.
    OnDemand,
    /// A trigger event was recorded ([`Snapshot::trigger_code`] names it). Byte 1.
    Event,
    /// The program panicked. Byte 2.
    Panic,
    /// Events were lost (`Dropped`). Byte 3.
    Lost,
    /// A cause of a later minor version (its byte): shown as such, read as the others.
    Other(u8),
}

impl SnapshotCause {
    /// The cause's byte on the wire.
    pub fn to_byte(self) -> u8 {
        match self {
            SnapshotCause::OnDemand => 0,
            SnapshotCause::Event => 1,
            SnapshotCause::Panic => 2,
            SnapshotCause::Lost => 3,
            SnapshotCause::Other(b) => b,
        }
    }

    /// The cause of a byte on the wire (an unknown one is [`SnapshotCause::Other`]).
    pub fn from_byte(b: u8) -> SnapshotCause {
        match b {
            0 => SnapshotCause::OnDemand,
            1 => SnapshotCause::Event,
            2 => SnapshotCause::Panic,
            3 => SnapshotCause::Lost,
            b => SnapshotCause::Other(b),
        }
    }
}

/// The snapshot property ([`TAG_SNAPSHOT`], since format 2.0.3): the stream holds what a running
/// recording's rings held at one moment, not the whole recording (docs/FORMAT.md, "Header
/// properties"). Blocks before the window were overwritten in the rings: a reader judges the
/// stream as it judges a ring.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Snapshot {
    /// When it was taken: nanoseconds since the Unix epoch (0 under a deterministic clock).
    pub taken_wall_ns: i64,
    /// When it was taken, in the stream's clock (ticks, as a record's time): the records of
    /// the rings end at or before it, but for those of its `post` window.
    pub taken_time: u64,
    /// Its number among the snapshots of its recording, from 1.
    pub sequence: u32,
    /// Snapshots that a rate policy did not take since the previous one was taken.
    pub not_taken: u64,
    /// Why it was taken.
    pub cause: SnapshotCause,
    /// Under [`SnapshotCause::Event`], the wire code of the trigger event; else 0.
    pub trigger_code: u16,
    /// When the trigger fired, in the stream's ticks: the trigger event's time, the panic's,
    /// or when the loss was noticed; on demand, `taken_time`. What `print --since` starts
    /// near to see what led to it.
    pub trigger_time: u64,
    /// The trigger as configured (`Req:ReqEnd if status >= 500`); empty when on demand.
    pub trigger: String,
}

/// The fixed fields of the snapshot property's value, before its trigger text.
const SNAPSHOT_FIXED: usize = 8 + 8 + 4 + 8 + 1 + 2 + 8;

impl Properties {
    /// Writes every property that is set, in the order of their tags; the sets' meanings
    /// come from `sets`.
    pub(crate) fn encode(&self, sets: &[SetEntry], put: &mut Put<'_>) -> Result<(), EncodeError> {
        if let Some(id) = &self.recording {
            put.u16(TAG_RECORDING);
            put.u32(id.0.len() as u32);
            put.bytes(&id.0);
        }
        if sets.iter().any(|s| s.schema.declares_meanings()) {
            let mut value = Vec::new();
            encode_meanings(sets, &mut Put { out: &mut value, order: put.order })?;
            put.u16(TAG_MEANINGS);
            put.u32(u32::try_from(value.len()).map_err(|_| EncodeError("the meanings do not fit a header".into()))?);
            put.bytes(&value);
        }
        if let Some(segment) = &self.segment {
            put.u16(TAG_SEGMENT);
            put.u32(SEGMENT_LEN as u32);
            put.u64(segment.index);
            put.u64(segment.removed_segments);
            put.u64(segment.removed_events);
            put.u64(segment.lost_between);
        }
        if let Some(snapshot) = &self.snapshot {
            let mut value = Vec::new();
            let mut v = Put { out: &mut value, order: put.order };
            v.u64(snapshot.taken_wall_ns as u64);
            v.u64(snapshot.taken_time);
            v.u32(snapshot.sequence);
            v.u64(snapshot.not_taken);
            v.u8(snapshot.cause.to_byte());
            v.u16(snapshot.trigger_code);
            v.u64(snapshot.trigger_time);
            put_str(&mut v, &snapshot.trigger, "a snapshot's trigger")?;
            put.u16(TAG_SNAPSHOT);
            put.u32(value.len() as u32);
            put.bytes(&value);
        }
        if !self.labels.is_empty() {
            if self.labels.len() > MAX_LABELS {
                return Err(EncodeError(format!("{} labels, at most {MAX_LABELS} fit", self.labels.len())));
            }
            let mut value = Vec::new();
            let mut v = Put { out: &mut value, order: put.order };
            v.u16(self.labels.len() as u16);
            for (i, (key, text)) in self.labels.iter().enumerate() {
                if !valid_label_key(key) {
                    return Err(EncodeError(format!(
                        "label key {key:?} is not 1 to {MAX_LABEL_KEY} letters, digits, `_`, `.` or `-`"
                    )));
                }
                if self.labels[..i].iter().any(|(k, _)| k == key) {
                    return Err(EncodeError(format!("label key {key:?} is given twice")));
                }
                if text.len() > MAX_LABEL_VALUE {
                    return Err(EncodeError(format!(
                        "label {key}'s value is {} bytes long, at most {MAX_LABEL_VALUE}",
                        text.len()
                    )));
                }
                put_str(&mut v, key, "a label key")?;
                put_str(&mut v, text, "a label value")?;
            }
            put.u16(TAG_LABELS);
            put.u32(value.len() as u32);
            put.bytes(&value);
        }
        if let Some(earlier) = &self.earlier {
            if earlier.partly.len() > MAX_EARLIER {
                return Err(EncodeError(format!(
                    "{} earlier recordings, at most {MAX_EARLIER} fit",
                    earlier.partly.len()
                )));
            }
            let len = EARLIER_FIXED + EARLIER_ENTRY * earlier.partly.len();
            put.u16(TAG_EARLIER);
            put.u32(len as u32);
            put.u64(earlier.recordings_removed);
            put.u64(earlier.segments_of_removed);
            put.u64(earlier.events_of_removed);
            put.u16(earlier.partly.len() as u16);
            for e in &earlier.partly {
                put.bytes(&e.recording.0);
                put.u64(e.segments);
                put.u64(e.events);
            }
        }
        for (tag, declares) in
            [(TAG_HISTOGRAMS, declares_histograms as fn(&SetEntry) -> bool), (TAG_LIMITS, declares_limits)]
        {
            if !sets.iter().any(declares) {
                continue;
            }
            let mut value = Vec::new();
            let mut v = Put { out: &mut value, order: put.order };
            if tag == TAG_HISTOGRAMS {
                encode_histograms(sets, &mut v)?;
            } else {
                encode_limits(sets, &mut v)?;
            }
            put.u16(tag);
            put.u32(u32::try_from(value.len()).map_err(|_| EncodeError("a header property does not fit".into()))?);
            put.bytes(&value);
        }
        Ok(())
    }

    /// Reads properties from `take` until it is empty; returns them and the bytes of the
    /// properties this reader does not know (skipped). The sets' meanings go into `sets`. A
    /// property that runs past the end, a known one whose value is shorter than its fields,
    /// or a known tag given twice, makes the header malformed.
    pub(crate) fn decode(take: &mut Take<'_>, sets: &mut [SetEntry]) -> Result<(Properties, u32), HeaderError> {
        let mut properties = Properties::default();
        let mut skipped = 0u32;
        let (mut meanings, mut histograms, mut limits, mut labels) = (false, false, false, false);
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
                TAG_MEANINGS => {
                    if std::mem::replace(&mut meanings, true) {
                        return Err(malformed("the sets' meanings are given twice".into()));
                    }
                    decode_meanings(&mut Take { rest: value, order: take.order }, sets)?;
                }
                TAG_SEGMENT => {
                    if properties.segment.is_some() {
                        return Err(malformed("the segment property is given twice".into()));
                    }
                    let mut fields = Take { rest: value, order: take.order };
                    let mut field = || {
                        fields.u64().ok_or_else(|| {
                            malformed(format!(
                                "the segment property is {len} bytes long, shorter than its {SEGMENT_LEN}"
                            ))
                        })
                    };
                    properties.segment = Some(Segment {
                        index: field()?,
                        removed_segments: field()?,
                        removed_events: field()?,
                        lost_between: field()?,
                    });
                }
                TAG_SNAPSHOT => {
                    if properties.snapshot.is_some() {
                        return Err(malformed("the snapshot property is given twice".into()));
                    }
                    properties.snapshot = Some(decode_snapshot(&mut Take { rest: value, order: take.order })?);
                }
                TAG_HISTOGRAMS => {
                    if std::mem::replace(&mut histograms, true) {
                        return Err(malformed("the sets' histograms are given twice".into()));
                    }
                    decode_histograms(&mut Take { rest: value, order: take.order }, sets)?;
                }
                TAG_LIMITS => {
                    if std::mem::replace(&mut limits, true) {
                        return Err(malformed("the sets' limits are given twice".into()));
                    }
                    decode_limits(&mut Take { rest: value, order: take.order }, sets)?;
                }
                TAG_LABELS => {
                    if std::mem::replace(&mut labels, true) {
                        return Err(malformed("the labels are given twice".into()));
                    }
                    properties.labels = decode_labels(&mut Take { rest: value, order: take.order })?;
                }
                TAG_EARLIER => {
                    if properties.earlier.is_some() {
                        return Err(malformed("the earlier recordings' property is given twice".into()));
                    }
                    properties.earlier = Some(decode_earlier(&mut Take { rest: value, order: take.order })?);
                }
                _ => skipped = skipped.saturating_add((PROPERTY_HEAD + value.len()) as u32),
            }
        }
        Ok((properties, skipped))
    }
}

/// The labels property's value: a count, then each label's key and value (strings of a
/// 16-bit length). A key that is empty or given twice makes the header malformed.
fn decode_labels(take: &mut Take<'_>) -> Result<Vec<(String, String)>, HeaderError> {
    let short = || HeaderError::Malformed("the labels run past the end of their property".into());
    let n = take.u16().ok_or_else(short)?;
    // Each label takes at least 4 bytes: nothing is reserved that the bytes could not fill.
    let mut labels: Vec<(String, String)> = Vec::with_capacity(usize::from(n).min(take.rest.len() / 4));
    for _ in 0..n {
        let key = take_str(take, "a label key")?;
        let value = take_str(take, "a label value")?;
        if key.is_empty() {
            return Err(HeaderError::Malformed("a label key is empty".into()));
        }
        if labels.iter().any(|(k, _)| *k == key) {
            return Err(HeaderError::Malformed(format!("the label key {key:?} is given twice")));
        }
        labels.push((key, value));
    }
    Ok(labels)
}

/// The earlier property's value ([`Earlier`]).
fn decode_earlier(take: &mut Take<'_>) -> Result<Earlier, HeaderError> {
    let len = take.rest.len();
    let short = || {
        HeaderError::Malformed(format!("the earlier recordings' property is {len} bytes long, shorter than its fields"))
    };
    let recordings_removed = take.u64().ok_or_else(short)?;
    let segments_of_removed = take.u64().ok_or_else(short)?;
    let events_of_removed = take.u64().ok_or_else(short)?;
    let n = usize::from(take.u16().ok_or_else(short)?);
    if take.rest.len() < n * EARLIER_ENTRY {
        return Err(short());
    }
    let mut partly = Vec::with_capacity(n);
    for _ in 0..n {
        let id: [u8; 16] = take.bytes(16).and_then(|b| b.try_into().ok()).ok_or_else(short)?;
        let segments = take.u64().ok_or_else(short)?;
        let events = take.u64().ok_or_else(short)?;
        partly.push(EarlierRemoval { recording: RecordingId(id), segments, events });
    }
    Ok(Earlier { recordings_removed, segments_of_removed, events_of_removed, partly })
}

/// The snapshot property's value ([`Snapshot`]).
fn decode_snapshot(take: &mut Take<'_>) -> Result<Snapshot, HeaderError> {
    let len = take.rest.len();
    if len < SNAPSHOT_FIXED + 2 {
        return Err(HeaderError::Malformed(format!(
            "the snapshot property is {len} bytes long, shorter than its {}",
            SNAPSHOT_FIXED + 2
        )));
    }
    let short = || HeaderError::Malformed("the snapshot property runs past its end".into());
    let taken_wall_ns = take.u64().ok_or_else(short)? as i64;
    let taken_time = take.u64().ok_or_else(short)?;
    let sequence = take.u32().ok_or_else(short)?;
    let not_taken = take.u64().ok_or_else(short)?;
    let cause = SnapshotCause::from_byte(take.u8().ok_or_else(short)?);
    let trigger_code = take.u16().ok_or_else(short)?;
    let trigger_time = take.u64().ok_or_else(short)?;
    let trigger = take_str(take, "a snapshot's trigger")?;
    Ok(Snapshot { taken_wall_ns, taken_time, sequence, not_taken, cause, trigger_code, trigger_time, trigger })
}

/// The meanings property's value: the sets that declare any, each with its spans, counters
/// and flows (docs/FORMAT.md, "Meanings").
fn encode_meanings(sets: &[SetEntry], put: &mut Put<'_>) -> Result<(), EncodeError> {
    let count = |n: usize, what: &str| {
        u16::try_from(n).map_err(|_| EncodeError(format!("{n} {what} do not fit in a 16-bit count")))
    };
    let declaring: Vec<(usize, &SetEntry)> =
        sets.iter().enumerate().filter(|(_, s)| s.schema.declares_meanings()).collect();
    put.u16(count(declaring.len(), "sets")?);
    for (index, set) in declaring {
        let schema = &set.schema;
        put.u16(count(index, "sets")?);
        put.u16(count(schema.spans.len(), "spans")?);
        for span in &schema.spans {
            put_str(put, &span.name, "a span name")?;
            put.u16(span.begin);
            put.u16(span.end);
            put_str(put, span.id.as_deref().unwrap_or(""), "a span's id parameter")?;
        }
        put.u16(count(schema.counters.len(), "counters")?);
        for counter in &schema.counters {
            put_str(put, &counter.name, "a counter name")?;
            put.u16(counter.event);
            put_str(put, &counter.value, "a counter's value parameter")?;
            put_str(put, &counter.unit, "a counter's unit")?;
        }
        put.u16(count(schema.flows.len(), "flows")?);
        for flow in &schema.flows {
            put_str(put, &flow.name, "a flow name")?;
            put.u16(flow.event);
            put_str(put, &flow.id, "a flow's id parameter")?;
            put.u8(flow.step.to_byte());
        }
    }
    Ok(())
}

/// Reads the meanings property's value into the sets it names. Its rules beyond the layout
/// (events and parameters that exist, ...) are the sets' schema rules, checked with them.
fn decode_meanings(take: &mut Take<'_>, sets: &mut [SetEntry]) -> Result<(), HeaderError> {
    let short = || HeaderError::Malformed("the sets' meanings run past the end of their property".into());
    let n = take.u16().ok_or_else(short)?;
    let mut last: Option<u16> = None;
    for _ in 0..n {
        let index = take.u16().ok_or_else(short)?;
        if last.is_some_and(|l| index <= l) {
            return Err(HeaderError::Malformed(format!("the meanings of set {index} are out of order or given twice")));
        }
        last = Some(index);
        let set_count = sets.len();
        let schema = &mut sets
            .get_mut(usize::from(index))
            .ok_or_else(|| {
                HeaderError::Malformed(format!(
                    "meanings are given for set {index}, and the header has {set_count} sets"
                ))
            })?
            .schema;
        // Each item takes at least 7 bytes: nothing is reserved that the bytes could not fill.
        let bounded = |n: u16, rest: usize| usize::from(n).min(rest / 7);
        let spans = take.u16().ok_or_else(short)?;
        schema.spans = Vec::with_capacity(bounded(spans, take.rest.len()));
        for _ in 0..spans {
            let name = take_str(take, "a span name")?;
            let (begin, end) = (take.u16().ok_or_else(short)?, take.u16().ok_or_else(short)?);
            let id = take_str(take, "a span's id parameter")?;
            schema.spans.push(Span { name, begin, end, id: (!id.is_empty()).then_some(id) });
        }
        let counters = take.u16().ok_or_else(short)?;
        schema.counters = Vec::with_capacity(bounded(counters, take.rest.len()));
        for _ in 0..counters {
            let name = take_str(take, "a counter name")?;
            let event = take.u16().ok_or_else(short)?;
            let value = take_str(take, "a counter's value parameter")?;
            let unit = take_str(take, "a counter's unit")?;
            schema.counters.push(Counter { name, event, value, unit });
        }
        let flows = take.u16().ok_or_else(short)?;
        schema.flows = Vec::with_capacity(bounded(flows, take.rest.len()));
        for _ in 0..flows {
            let name = take_str(take, "a flow name")?;
            let event = take.u16().ok_or_else(short)?;
            let id = take_str(take, "a flow's id parameter")?;
            let byte = take.u8().ok_or_else(short)?;
            let step = FlowStep::from_byte(byte)
                .ok_or_else(|| HeaderError::Malformed(format!("flow `{name}` has step {byte}, not 0, 1 or 2")))?;
            schema.flows.push(Flow { name, event, id, step });
        }
    }
    Ok(())
}

fn declares_histograms(set: &SetEntry) -> bool {
    !set.schema.histograms.is_empty()
}

fn declares_limits(set: &SetEntry) -> bool {
    !set.schema.limits.is_empty()
}

/// A count of items as the properties write it: 16 bits.
fn count16(n: usize, what: &str) -> Result<u16, EncodeError> {
    u16::try_from(n).map_err(|_| EncodeError(format!("{n} {what} do not fit in a 16-bit count")))
}

/// The histograms property's value: the sets that declare any, each with its histograms
/// (docs/FORMAT.md, "Histograms").
fn encode_histograms(sets: &[SetEntry], put: &mut Put<'_>) -> Result<(), EncodeError> {
    let declaring: Vec<(usize, &SetEntry)> = sets.iter().enumerate().filter(|(_, s)| declares_histograms(s)).collect();
    put.u16(count16(declaring.len(), "sets")?);
    for (index, set) in declaring {
        put.u16(count16(index, "sets")?);
        put.u16(count16(set.schema.histograms.len(), "histograms")?);
        for h in &set.schema.histograms {
            put_str(put, &h.name, "a histogram name")?;
            match &h.of {
                HistogramOf::Span(span) => {
                    put.u8(0);
                    put_str(put, span, "a histogram's span")?;
                }
                HistogramOf::Param { event, param } => {
                    put.u8(1);
                    put.u16(*event);
                    put_str(put, param, "a histogram's parameter")?;
                }
            }
            put.u8(h.buckets.precision);
        }
    }
    Ok(())
}

/// Reads the histograms property's value into the sets it names; their rules beyond the
/// layout are the sets' schema rules, checked with them.
fn decode_histograms(take: &mut Take<'_>, sets: &mut [SetEntry]) -> Result<(), HeaderError> {
    let short = || HeaderError::Malformed("the sets' histograms run past the end of their property".into());
    for_each_set(take, sets, "histograms", |take, schema| {
        let n = take.u16().ok_or_else(short)?;
        // Each takes at least 6 bytes: nothing is reserved that the bytes could not fill.
        schema.histograms = Vec::with_capacity(usize::from(n).min(take.rest.len() / 6));
        for _ in 0..n {
            let name = take_str(take, "a histogram name")?;
            let of = match take.u8().ok_or_else(short)? {
                0 => HistogramOf::Span(take_str(take, "a histogram's span")?),
                1 => {
                    let event = take.u16().ok_or_else(short)?;
                    HistogramOf::Param { event, param: take_str(take, "a histogram's parameter")? }
                }
                other => {
                    return Err(HeaderError::Malformed(format!(
                        "histogram `{name}` counts what {other} says, which is neither 0 (a span) nor 1 (a parameter)"
                    )));
                }
            };
            let precision = take.u8().ok_or_else(short)?;
            schema.histograms.push(Histogram { name, of, buckets: Buckets { precision } });
        }
        Ok(())
    })
}

/// The limits property's value: the sets that declare any, each with its limits
/// (docs/FORMAT.md, "Limits").
fn encode_limits(sets: &[SetEntry], put: &mut Put<'_>) -> Result<(), EncodeError> {
    let declaring: Vec<(usize, &SetEntry)> = sets.iter().enumerate().filter(|(_, s)| declares_limits(s)).collect();
    put.u16(count16(declaring.len(), "sets")?);
    for (index, set) in declaring {
        put.u16(count16(index, "sets")?);
        put.u16(count16(set.schema.limits.len(), "limits")?);
        for limit in &set.schema.limits {
            put.u16(limit.event);
            let (kind, a, b) = match limit.rate {
                Rate::PerPeriod { count, period_ns } => (0, count, period_ns),
                Rate::Sample { keep, of } => (1, keep, of),
            };
            put.u8(kind);
            put.u64(a);
            put.u64(b);
        }
    }
    Ok(())
}

/// Reads the limits property's value into the sets it names.
fn decode_limits(take: &mut Take<'_>, sets: &mut [SetEntry]) -> Result<(), HeaderError> {
    let short = || HeaderError::Malformed("the sets' limits run past the end of their property".into());
    for_each_set(take, sets, "limits", |take, schema| {
        let n = take.u16().ok_or_else(short)?;
        schema.limits = Vec::with_capacity(usize::from(n).min(take.rest.len() / 19));
        for _ in 0..n {
            let event = take.u16().ok_or_else(short)?;
            let kind = take.u8().ok_or_else(short)?;
            let (a, b) = (take.u64().ok_or_else(short)?, take.u64().ok_or_else(short)?);
            let rate = match kind {
                0 => Rate::PerPeriod { count: a, period_ns: b },
                1 => Rate::Sample { keep: a, of: b },
                other => {
                    return Err(HeaderError::Malformed(format!(
                        "the limit of event 0x{event:04X} is of kind {other}, neither 0 (N a period) nor 1 (K of N)"
                    )));
                }
            };
            schema.limits.push(Limit { event, rate });
        }
        Ok(())
    })
}

/// Reads a property laid out as the histograms' and limits' are: a count of sets, then for
/// each its index (increasing) and what `each` reads into its schema.
fn for_each_set(
    take: &mut Take<'_>,
    sets: &mut [SetEntry],
    what: &str,
    mut each: impl FnMut(&mut Take<'_>, &mut event_def::schema::Schema) -> Result<(), HeaderError>,
) -> Result<(), HeaderError> {
    let short = || HeaderError::Malformed(format!("the sets' {what} run past the end of their property"));
    let n = take.u16().ok_or_else(short)?;
    let mut last: Option<u16> = None;
    for _ in 0..n {
        let index = take.u16().ok_or_else(short)?;
        if last.is_some_and(|l| index <= l) {
            return Err(HeaderError::Malformed(format!("the {what} of set {index} are out of order or given twice")));
        }
        last = Some(index);
        let count = sets.len();
        let set = sets.get_mut(usize::from(index)).ok_or_else(|| {
            HeaderError::Malformed(format!("{what} are given for set {index}, and the header has {count} sets"))
        })?;
        each(take, &mut set.schema)?;
    }
    Ok(())
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
