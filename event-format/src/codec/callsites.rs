//! Callsites (docs/FORMAT.md, "Callsites"; since format 2.1.1): the `tracing` bridge names a
//! span's or an event's name, target, level and field names once in a block, in a
//! `Callsite` record, and its `SpanOpenAt`, `SpanRecordAt` and `TraceEventAt` records name
//! them by the callsite's id, with each field keyed by its index. A reader expands each such
//! record, before it reads the block, into the `SpanOpen`, `SpanRecord` or `TraceEvent` it
//! stands for, byte for byte what the bridge writes without callsites; every reader then
//! reads spans and events one way.
//!
//! A definition holds for its own block, before or after the records that name it, so that
//! any block read alone (a ring's latest, a snapshot's) expands. A record whose block does
//! not define its callsite, or whose values do not read as fields keyed by the callsite's
//! indexes, is left as it is: a reader shows it under its own name with its bare callsite,
//! never under a name it cannot know.

use crate::builtin::{
    self, CALLSITE, SPAN_OPEN, SPAN_OPEN_AT, SPAN_OPEN_FIXED, SPAN_RECORD, SPAN_RECORD_AT, SPAN_RECORD_FIXED,
    TRACE_EVENT, TRACE_EVENT_AT, TRACE_EVENT_FIXED,
};
use crate::codec::fields::grammar::{name_fields, write_event_text};
use crate::codec::wire::put::put_record_header;
use crate::codec::wire::value::fit_texts;
use crate::codec::wire::{
    ArgWriter, BLOCK_HEADER_LEN, MAX_RECORD_LEN, Order, RECORD_HEADER_LEN, Text, Value, ValueIter, body, validate_args,
};

/// One `Callsite` record's definition, borrowed from its block.
struct Site<'a> {
    id: u64,
    level: u32,
    name: &'a [u8],
    target: &'a [u8],
    /// The field names, by index.
    fields: Vec<&'a str>,
}

/// Whether `code` names a callsite (a record [`expand`] rewrites).
#[inline]
fn by_callsite(code: u16) -> bool {
    matches!(code, SPAN_OPEN_AT | SPAN_RECORD_AT | TRACE_EVENT_AT)
}

/// The records area `records` (in `order`, of a block of `block_size` bytes) with every record
/// that names a callsite its block defines written as the record it stands for; `None` when
/// it holds no such record (the common case: one walk of the record headers, nothing
/// copied). Records that do not delimit are left to the reader, which reports them: the walk
/// copies what follows the first of them as it is.
///
/// ```
/// use event_format::builtin;
/// use event_format::callsites::expand;
/// use event_format::raw::put_record_header;
/// use event_format::wire::{ArgWriter, Order, RecordIter, Text, body};
///
/// // A block's records: `Callsite(1, INFO, "request", "app", "id method")`, then
/// // `SpanOpenAt(7, 0, 1, "0=42 1=\"GET\"")`.
/// let order = Order::Little;
/// let mut records = Vec::new();
/// let mut put = |code: u16, fixed: usize, strs: &[Text<'_>], fill: &dyn Fn(&mut ArgWriter<'_>)| {
///     let len = 8 + fixed + strs.iter().map(|s| 2 + s.bytes.len()).sum::<usize>();
///     let at = records.len();
///     records.resize(at + len, 0);
///     put_record_header(order, &mut records, at, code, len as u16, 0);
///     fill(&mut ArgWriter::new(order, &mut records[at + 8..at + len], strs));
/// };
/// let site = [Text::new("request"), Text::new("app"), Text::new("id method")];
/// put(builtin::CALLSITE, builtin::CALLSITE_FIXED, &site, &|w| body::callsite(w, 1, 3));
/// let values = [Text::new("0=42 1=\"GET\"")];
/// put(builtin::SPAN_OPEN_AT, builtin::SPAN_OPEN_AT_FIXED, &values, &|w| body::span_open_at(w, 7, 0, 1));
///
/// let expanded = expand(order, &records, 4096).expect("a record names a callsite");
/// // The `Callsite` stays, and a reader consumes it as it delimits the records (as a
/// // `TimeExtend`); the `SpanOpenAt` is the `SpanOpen` the bridge writes without one.
/// let read: Vec<_> = RecordIter::new(&expanded, order, 0).map(Result::unwrap).collect();
/// assert_eq!(read.len(), 1);
/// assert_eq!(read[0].code, builtin::SPAN_OPEN);
/// let fields = "id=42 method=\"GET\"";
/// assert!(read[0].args.ends_with(&[&[7, 0][..], b"request", &[fields.len() as u8, 0], fields.as_bytes()].concat()));
/// ```
pub fn expand(order: Order, records: &[u8], block_size: u32) -> Option<Vec<u8>> {
    // The records that delimit, and whether any names a callsite.
    let mut end = 0;
    let mut named = false;
    while records.len() - end >= RECORD_HEADER_LEN {
        let len = usize::from(order.u16(&records[end + 2..]));
        if len < RECORD_HEADER_LEN || len > records.len() - end {
            break;
        }
        named |= by_callsite(order.u16(&records[end..]));
        end += len;
    }
    if !named {
        return None;
    }
    let sites = definitions(order, &records[..end]);
    let max_len = (block_size as usize).saturating_sub(BLOCK_HEADER_LEN).min(MAX_RECORD_LEN);
    let mut out = Vec::with_capacity(records.len() + records.len() / 2);
    let mut at = 0;
    let mut text = String::new();
    while at < end {
        let code = order.u16(&records[at..]);
        let len = usize::from(order.u16(&records[at + 2..]));
        let record = &records[at..at + len];
        at += len;
        if !by_callsite(code) || !expand_one(order, record, &sites, max_len, &mut text, &mut out) {
            out.extend_from_slice(record);
        }
    }
    out.extend_from_slice(&records[end..]);
    Some(out)
}

/// [`expand`] in place: `records` becomes its expansion when it names a callsite, and is
/// left as it is otherwise. What every block source of this crate calls on a block's records
/// before handing the block on.
#[inline]
pub fn expand_in_place(order: Order, records: &mut Vec<u8>, block_size: u32) {
    if let Some(expanded) = expand(order, records, block_size) {
        *records = expanded;
    }
}

/// [`expand_in_place`] of a block that a reader has shown up to `from` bytes of its records
/// as written (a record boundary, or the start of what does not delimit): returns where the
/// same place is in the expansion. Expanding maps each record to one record, so the place is
/// found by counting records; a record shown before its block's definition was read stays
/// shown as it was.
pub fn expand_in_place_from(order: Order, records: &mut Vec<u8>, from: usize, block_size: u32) -> usize {
    let (count, into) = records_before(order, records, from);
    let Some(expanded) = expand(order, records, block_size) else { return from };
    *records = expanded;
    // Each of the `count` records delimits in the expansion too (one record each); the walk
    // stops at the end all the same, so that no input makes it read past the records.
    let mut at = 0;
    for _ in 0..count {
        if records.len().saturating_sub(at) < RECORD_HEADER_LEN {
            break;
        }
        at += usize::from(order.u16(&records[at + 2..])).max(RECORD_HEADER_LEN);
    }
    (at + into).min(records.len())
}

/// How many whole records `records` holds before byte `from`, walked by their headers, and
/// how far `from` lies past the last of them (into what does not delimit).
fn records_before(order: Order, records: &[u8], from: usize) -> (usize, usize) {
    let (mut count, mut at) = (0, 0);
    while at < from && records.len() - at >= RECORD_HEADER_LEN {
        let len = usize::from(order.u16(&records[at + 2..]));
        if len < RECORD_HEADER_LEN || len > records.len() - at || at + len > from {
            break;
        }
        count += 1;
        at += len;
    }
    (count, from.saturating_sub(at))
}

/// Whether `records` (a records area, walked by its record headers) holds a `Callsite`:
/// whether [`expand`] may have made it longer than its block's `used` bytes.
pub fn defines_any(order: Order, records: &[u8]) -> bool {
    let mut at = 0;
    while records.len().saturating_sub(at) >= RECORD_HEADER_LEN {
        if order.u16(&records[at..]) == CALLSITE {
            return true;
        }
        at += usize::from(order.u16(&records[at + 2..])).max(RECORD_HEADER_LEN);
    }
    false
}

/// The block's `Callsite` definitions, the first of each id (a later one of the same id is a
/// writer's mistake, and ignored). One whose strings the writer cut, or that does not read,
/// defines nothing.
fn definitions<'a>(order: Order, records: &'a [u8]) -> Vec<Site<'a>> {
    let format = builtin_format(CALLSITE);
    let mut sites: Vec<Site<'a>> = Vec::new();
    let mut at = 0;
    while at < records.len() {
        let code = order.u16(&records[at..]);
        let len = usize::from(order.u16(&records[at + 2..]));
        let args = &records[at + RECORD_HEADER_LEN..at + len];
        at += len;
        if code != CALLSITE || validate_args(format, args, order).is_err() {
            continue;
        }
        let mut values = ValueIter::new(format, args, order);
        let (
            Some(Value::Word(id)),
            Some(Value::Unsigned(level)),
            Some(Value::Str(name)),
            Some(Value::Str(target)),
            Some(Value::Str(names)),
        ) = (values.next(), values.next(), values.next(), values.next(), values.next())
        else {
            continue;
        };
        if name.truncated || target.truncated || names.truncated || sites.iter().any(|s| s.id == id) {
            continue;
        }
        let Some(names) = names.to_str() else { continue };
        let fields = if names.is_empty() { Vec::new() } else { names.split(' ').collect() };
        sites.push(Site { id, level, name: name.bytes, target: target.bytes, fields });
    }
    sites
}

/// The format letters of built-in `code`.
fn builtin_format(code: u16) -> &'static [crate::Letter] {
    builtin::by_code(code).map_or(&[], |b| b.format)
}

/// Appends to `out` the record `record` (of a code [`by_callsite`]) stands for; `false`, with
/// nothing appended, when its arguments do not read, its block does not define its callsite,
/// or its values are not fields keyed by the callsite's indexes.
fn expand_one(
    order: Order,
    record: &[u8],
    sites: &[Site<'_>],
    max_len: usize,
    text: &mut String,
    out: &mut Vec<u8>,
) -> bool {
    let code = order.u16(record);
    let delta = order.u32(&record[4..]);
    let args = &record[RECORD_HEADER_LEN..];
    let format = builtin_format(code);
    if validate_args(format, args, order).is_err() {
        return false;
    }
    let mut values = ValueIter::new(format, args, order);
    let mut word = || match values.next() {
        Some(Value::Word(w)) => Some(w),
        _ => None,
    };
    // The words before the strings, by code: (span, parent) of a span's open, the span of a
    // record, nothing for an event; then the callsite.
    let (first, second) = match code {
        SPAN_OPEN_AT => (word(), word()),
        SPAN_RECORD_AT => (word(), Some(0)),
        _ => (Some(0), Some(0)),
    };
    let (Some(first), Some(second), Some(callsite)) = (first, second, word()) else { return false };
    let mut strs = || match values.next() {
        Some(Value::Str(t)) if !t.truncated => t.to_str(),
        _ => None,
    };
    let Some(site) = sites.iter().find(|s| s.id == callsite) else { return false };
    text.clear();
    match code {
        SPAN_OPEN_AT | SPAN_RECORD_AT => {
            let Some(values) = strs() else { return false };
            if !name_fields(values, &site.fields, text) {
                return false;
            }
            if code == SPAN_OPEN_AT {
                let mut texts = [Text { bytes: site.name, truncated: false }, Text::new(text)];
                put(order, out, SPAN_OPEN, delta, SPAN_OPEN_FIXED, &mut texts, max_len, |w| {
                    body::span_open(w, first, second)
                })
            } else {
                let mut texts = [Text::new(text)];
                put(order, out, SPAN_RECORD, delta, SPAN_RECORD_FIXED, &mut texts, max_len, |w| {
                    body::span_record(w, first)
                })
            }
        }
        _ => {
            let (Some(message), Some(values)) = (strs(), strs()) else { return false };
            let mut named = String::new();
            if !name_fields(values, &site.fields, &mut named) {
                return false;
            }
            write_event_text(text, message, &named);
            let mut texts = [Text { bytes: site.target, truncated: false }, Text::new(text)];
            put(order, out, TRACE_EVENT, delta, TRACE_EVENT_FIXED, &mut texts, max_len, |w| {
                body::trace_event(w, site.level)
            })
        }
    }
}

/// Appends one record of `code` at `delta`, whose fixed arguments take `fixed` bytes and whose
/// strings are `texts`, cut as every writer cuts them to at most `max_len` bytes
/// ([`fit_texts`]); `false`, with nothing appended, when even cut strings do not fit.
#[allow(clippy::too_many_arguments)]
fn put(
    order: Order,
    out: &mut Vec<u8>,
    code: u16,
    delta: u32,
    fixed: usize,
    texts: &mut [Text<'_>],
    max_len: usize,
    fill: impl FnOnce(&mut ArgWriter<'_>),
) -> bool {
    let base = RECORD_HEADER_LEN + fixed;
    if !fit_texts(texts, base, max_len) {
        return false;
    }
    let len = base + texts.iter().map(|t| 2 + t.bytes.len()).sum::<usize>();
    let at = out.len();
    out.resize(at + len, 0);
    put_record_header(order, out, at, code, len as u16, delta);
    fill(&mut ArgWriter::new(order, &mut out[at + RECORD_HEADER_LEN..], texts));
    true
}
