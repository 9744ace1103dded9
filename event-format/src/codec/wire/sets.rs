//! The header's list of event sets: each set's schema and the wire codes its records carry,
//! with the codec of the embedded schema and the rules of the list (docs/FORMAT.md, "Event
//! sets", "Embedded schema").

use super::errors::{EncodeError, HeaderError};
use super::{LAST_V1, Put, Take};
use event_def::letter::Letter;
use event_def::schema::{EventType, Kind, LAST_USER_CODE, Retired, Rules, Schema, Version, set_name_problem};

/// Bit 0 of an event's flags byte in the embedded schema: the `always` flag.
const EVENT_ALWAYS: u8 = 1;

/// How the records of one set name its events: the codes they carry (*wire codes*).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireCodes {
    /// Format 2.x: event *j* of the set (in declaration order) is written with code
    /// `first + j`; `first` is 0 when the set has no events.
    Range {
        /// The wire code of the set's first event.
        first: u16,
    },
    /// Format 1.x: each event is written with its own code.
    Own,
}

/// One event set of a stream: its schema (name, version, kinds, events) and the codes its
/// records carry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SetEntry {
    /// The set itself; `schema.name` is the set's name.
    pub schema: Schema,
    /// How its events are written.
    pub codes: WireCodes,
}

impl SetEntry {
    /// A 2.x set whose event *j* is written as `first + j` (`first` should be 0 when it has
    /// no events).
    pub fn new(schema: Schema, first: u16) -> SetEntry {
        SetEntry { schema, codes: WireCodes::Range { first } }
    }

    /// The sets of `schemas`, each given the next free range of wire codes from 1 on, in
    /// order: what a recorder writes. A set without events gets `first` 0. Ranges past
    /// 0xFEFF are not refused here: [`Header::encode`](super::Header::encode) refuses them.
    pub fn assign(schemas: impl IntoIterator<Item = Schema>) -> Vec<SetEntry> {
        let mut next: usize = 1;
        schemas
            .into_iter()
            .map(|schema| {
                let n = schema.events.len();
                let first = if n == 0 { 0 } else { u16::try_from(next).unwrap_or(u16::MAX) };
                next += n;
                SetEntry::new(schema, first)
            })
            .collect()
    }

    /// The wire code of event `j` (its index in `schema.events`), or `None` when the set has
    /// no such event or the code would not be a user code.
    pub fn wire_code(&self, j: usize) -> Option<u16> {
        let event = self.schema.events.get(j)?;
        match self.codes {
            WireCodes::Own => Some(event.code),
            WireCodes::Range { first } => {
                u16::try_from(usize::from(first) + j).ok().filter(|&c| c != 0 && c <= LAST_USER_CODE)
            }
        }
    }

    /// The wire code of the set's event whose own code is `code`.
    pub fn wire_code_of(&self, code: u16) -> Option<u16> {
        self.wire_code(self.schema.events.iter().position(|e| e.code == code)?)
    }

    /// The wire codes of its events, `first ..= last`, or `None` when it has no events or
    /// its codes are its own (1.x).
    pub fn range(&self) -> Option<(u16, u16)> {
        match self.codes {
            WireCodes::Range { first } if !self.schema.events.is_empty() => {
                let last = usize::from(first) + self.schema.events.len() - 1;
                Some((first, u16::try_from(last).unwrap_or(u16::MAX)))
            }
            _ => None,
        }
    }
}

pub(super) fn put_str(put: &mut Put<'_>, s: &str, what: &str) -> Result<(), EncodeError> {
    let len = u16::try_from(s.len())
        .map_err(|_| EncodeError(format!("{what} is {} bytes long, at most 65535 fit", s.len())))?;
    put.u16(len);
    put.bytes(s.as_bytes());
    Ok(())
}

pub(super) fn take_str(take: &mut Take<'_>, what: &str) -> Result<String, HeaderError> {
    let malformed = || HeaderError::Malformed(format!("{what} runs past the end of the header"));
    let len = take.u16().ok_or_else(malformed)?;
    let bytes = take.bytes(usize::from(len)).ok_or_else(malformed)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| HeaderError::Malformed(format!("{what} is not valid UTF-8")))
}

/// The smallest encoding of a 2.x set: name length, version, first, and three counts.
const MIN_SET_LEN: usize = 2 + 6 + 2 + 6;

pub(super) fn decode_sets(take: &mut Take<'_>) -> Result<Vec<SetEntry>, HeaderError> {
    let n = take.u16().ok_or_else(|| HeaderError::Malformed("the set count runs past the end of the header".into()))?;
    // Bounded by what remains, so that a lying count reserves nothing the input does not back.
    let mut sets = Vec::with_capacity(usize::from(n).min(take.rest.len() / MIN_SET_LEN));
    for i in 0..n {
        let short = || HeaderError::Malformed(format!("set {i} runs past the end of the header"));
        let name = take_str(take, "a set name")?;
        let mut word = || take.u16().ok_or_else(short);
        let version = Version::new(word()?, word()?, word()?);
        let first = word()?;
        let mut schema = decode_schema(take)?;
        schema.name = name;
        schema.version = version;
        sets.push(SetEntry { schema, codes: WireCodes::Range { first } });
    }
    Ok(sets)
}

/// Checks the rules of a header's sets (docs/FORMAT.md, "Set rules"): for major 1, the one
/// set's schema by [`Rules::V1Read`]; for major 2, each set's name (valid, unique), its
/// schema by [`Rules::V2`], its range of wire codes inside `1..=0xFEFF`, and no two ranges
/// overlapping. Linear in the sets after one sort, whatever the input.
pub(super) fn check_sets(sets: &[SetEntry], major: u16) -> Result<(), HeaderError> {
    if major == LAST_V1.major {
        return match sets {
            [one] => one.schema.check_as_read().map_err(HeaderError::BadSchema),
            _ => Err(HeaderError::BadSets(format!("a 1.x stream holds exactly one set, not {}", sets.len()))),
        };
    }
    let mut names = std::collections::HashSet::with_capacity(sets.len());
    let mut ranges: Vec<(u16, u16, usize)> = Vec::with_capacity(sets.len());
    for (i, set) in sets.iter().enumerate() {
        let name = &set.schema.name;
        if let Some(why) = set_name_problem(name) {
            return Err(HeaderError::BadSets(format!("set {i}: {why}")));
        }
        if !names.insert(name.as_str()) {
            return Err(HeaderError::BadSets(format!("set name `{name}` is used by two sets")));
        }
        if let Err(mut problems) = set.schema.check_by(Rules::V2) {
            for p in &mut problems {
                p.message = format!("set `{name}`: {}", p.message);
            }
            return Err(HeaderError::BadSchema(problems));
        }
        let WireCodes::Range { first } = set.codes else {
            return Err(HeaderError::BadSets(format!("set `{name}` has no range of wire codes")));
        };
        let n = set.schema.events.len();
        if n == 0 {
            continue;
        }
        let last = usize::from(first) + n - 1;
        if first == 0 || last > usize::from(LAST_USER_CODE) {
            return Err(HeaderError::BadSets(format!(
                "set `{name}`'s wire codes 0x{first:04X}..=0x{last:04X} ({n} events) are not inside 0x0001..=0xFEFF"
            )));
        }
        ranges.push((first, last as u16, i));
    }
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        let ((a_first, a_last, a), (b_first, _, b)) = (pair[0], pair[1]);
        if b_first <= a_last {
            return Err(HeaderError::BadSets(format!(
                "the wire codes of sets `{}` (0x{a_first:04X}..=0x{a_last:04X}) and `{}` (from 0x{b_first:04X}) overlap",
                sets[a].schema.name, sets[b].schema.name
            )));
        }
    }
    Ok(())
}

pub(super) fn encode_schema(put: &mut Put<'_>, schema: &Schema) -> Result<(), EncodeError> {
    let count = |n: usize, what: &str| {
        u16::try_from(n).map_err(|_| EncodeError(format!("{n} {what} do not fit in a 16-bit count")))
    };
    put.u16(count(schema.kinds.len(), "kinds")?);
    for kind in &schema.kinds {
        put_str(put, &kind.name, "a kind name")?;
        put_str(put, &kind.doc, "a kind description")?;
    }
    put.u16(count(schema.events.len(), "events")?);
    for event in &schema.events {
        put.u16(event.code);
        put_str(put, &event.name, "an event name")?;
        put.u8(if event.always { EVENT_ALWAYS } else { 0 });
        put.u8(event.kind);
        // Schema::check bounds the parameter count by MAX_PARAMS (64).
        put.u8(event.format.len() as u8);
        for letter in &event.format {
            put.u8(letter.as_char() as u8);
        }
        for param in &event.params {
            put_str(put, param, "a parameter name")?;
        }
    }
    put.u16(count(schema.retired.len(), "retired events")?);
    for retired in &schema.retired {
        put.u16(retired.code);
        put_str(put, &retired.name, "a retired event name")?;
    }
    Ok(())
}

pub(super) fn decode_schema(take: &mut Take<'_>) -> Result<Schema, HeaderError> {
    let short = |what: &str| HeaderError::Malformed(format!("the schema's {what} run past the end of the header"));
    // Each count is checked against what remains before anything is reserved: a kind takes at
    // least 4 bytes, an event 7, a retired event 4.
    let bounded = |n: u16, min: usize, rest: usize| usize::from(n).min(rest / min);

    let n = take.u16().ok_or_else(|| short("kinds"))?;
    let mut kinds = Vec::with_capacity(bounded(n, 4, take.rest.len()));
    for _ in 0..n {
        let name = take_str(take, "kind name")?;
        let doc = take_str(take, "kind description")?;
        kinds.push(Kind { name, doc });
    }
    let n = take.u16().ok_or_else(|| short("events"))?;
    let mut events = Vec::with_capacity(bounded(n, 7, take.rest.len()));
    for _ in 0..n {
        let code = take.u16().ok_or_else(|| short("events"))?;
        let name = take_str(take, "event name")?;
        let flags = take.u8().ok_or_else(|| short("events"))?;
        let kind = take.u8().ok_or_else(|| short("events"))?;
        let count = take.u8().ok_or_else(|| short("events"))?;
        let letters = take.bytes(usize::from(count)).ok_or_else(|| short("events"))?;
        let format = letters
            .iter()
            .map(|&b| {
                Letter::from_char(char::from(b)).ok_or_else(|| {
                    HeaderError::Malformed(format!(
                        "event `{name}` has format letter {:?}, not one of {}",
                        char::from(b),
                        Letter::SPELLED
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut params = Vec::with_capacity(format.len());
        for _ in 0..count {
            params.push(take_str(take, "parameter name")?);
        }
        events.push(EventType { name, code, always: flags & EVENT_ALWAYS != 0, kind, format, params });
    }
    let n = take.u16().ok_or_else(|| short("retired events"))?;
    let mut retired = Vec::with_capacity(bounded(n, 4, take.rest.len()));
    for _ in 0..n {
        let code = take.u16().ok_or_else(|| short("retired events"))?;
        let name = take_str(take, "retired event name")?;
        retired.push(Retired { name, code });
    }
    Ok(Schema { name: String::new(), version: Version::default(), kinds, events, retired, ..Schema::default() })
}
