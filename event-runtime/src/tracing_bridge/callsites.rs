//! The bridge's callsites (docs/FORMAT.md, "Callsites"): each thread numbers the `tracing`
//! callsites it records and writes a callsite's `Callsite` record (its name, target, level and
//! field names) once in each block that names it, so that its spans and events are written by
//! callsite (`SpanOpenAt`, `SpanRecordAt`, `TraceEventAt`), with each field keyed by its index,
//! and every block still reads alone: a ring's latest blocks, a snapshot's, a segment's.
//!
//! Nothing here is shared between threads: a block is one thread's, so a callsite's id only
//! has to mean one thing in the blocks of its thread. A thread keeps, per callsite (keyed by
//! its `&'static Metadata`), its id and the block it last defined it in
//! ([`buffer::block_now`], the count of blocks the thread started). A record by callsite is written after its definition when the
//! block has none; when the record itself opened a new block (the old one was full, or taken
//! by the writer), the definition is written again after it, in the new block: a definition
//! holds for its whole block, before or after the records that name it.

use crate::emit::buffer;
use event_format::builtin;
use event_format::wire::{ArgWriter, STRING_MAX, Text, body};
use std::cell::RefCell;
use std::collections::BTreeMap;
use tracing_core::Metadata;

/// A callsite's field keys in its records: the index of each field, as text. tracing gives a
/// callsite at most 32 fields.
pub(super) const INDEXES: [&str; 32] = [
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18", "19", "20",
    "21", "22", "23", "24", "25", "26", "27", "28", "29", "30", "31",
];

/// What this thread knows of one callsite.
struct Site {
    /// Its id in this thread's blocks, from 1.
    id: u64,
    /// Its field names (`r#` left out), separated by one space: its `Callsite`'s `fields`.
    /// `None` when it is not written by callsite: a name the fields grammar does not read as
    /// a key, or a name, target or list too long to be written whole.
    names: Option<Box<str>>,
    /// The block ([`buffer::block_now`]) it was last defined in; 0: none.
    defined: u64,
}

/// Direct-mapped slots of the sites a thread used last, by address: most records find their
/// site in one compare, without hashing.
const RECENT: usize = 64;

/// This thread's callsites.
struct Sites {
    /// Every site this thread met, in the order it met them (a site's id is its place + 1).
    list: Vec<Site>,
    /// Each site's place in `list`, by the address of its `Metadata` (a `BTreeMap`, which a
    /// `const` thread-local can start with: no state test on each access).
    by_address: BTreeMap<usize, usize>,
    /// `(address, place)` of a recent site in each slot ([`slot`]); address 0: empty.
    recent: [(usize, usize); RECENT],
}

thread_local! {
    static SITES: RefCell<Sites> =
        const { RefCell::new(Sites { list: Vec::new(), by_address: BTreeMap::new(), recent: [(0, 0); RECENT] }) };
}

/// The slot of `address` among the recent sites: Fibonacci hashing, the high bits of the
/// product, which every bit of the address reaches.
#[inline]
fn slot(address: usize) -> usize {
    ((address as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - RECENT.trailing_zeros())) as usize
}

/// Whether `name` (its `r#` left out) is a key of the fields grammar and a name of a
/// `Callsite`'s list: not empty, without a space, `=` or `"`.
fn listable(name: &str) -> bool {
    !name.is_empty() && !name.bytes().any(|b| matches!(b, b' ' | b'=' | b'"'))
}

/// The site of `meta` in `sites`, made on first use.
#[inline]
fn site<'s>(sites: &'s mut Sites, meta: &'static Metadata<'static>) -> &'s mut Site {
    let address = std::ptr::from_ref(meta) as usize;
    let at = slot(address);
    let (recent, place) = sites.recent[at];
    let place = if recent == address { place } else { find(sites, meta, address, at) };
    &mut sites.list[place]
}

/// [`site`] when `meta` is not in its slot: looked up by address, or made.
#[cold]
#[inline(never)]
fn find(sites: &mut Sites, meta: &'static Metadata<'static>, address: usize, at: usize) -> usize {
    let place = match sites.by_address.get(&address) {
        Some(&place) => place,
        None => {
            let names: Vec<&str> =
                meta.fields().iter().map(|f| f.name()).map(|n| n.strip_prefix("r#").unwrap_or(n)).collect();
            let list = names.join(" ");
            let whole = names.iter().all(|n| listable(n))
                && names.len() <= INDEXES.len()
                && [meta.name(), meta.target(), &list].iter().all(|s| s.len() <= STRING_MAX);
            let place = sites.list.len();
            sites.list.push(Site { id: place as u64 + 1, names: whole.then(|| list.into_boxed_str()), defined: 0 });
            sites.by_address.insert(address, place);
            place
        }
    };
    sites.recent[at] = (address, place);
    place
}

/// Writes `meta`'s `Callsite` record with id `id` and field names `names`.
fn define(meta: &'static Metadata<'static>, id: u64, names: &str) -> bool {
    let level = super::level_code(*meta.level());
    let strs = [Text::new(meta.name()), Text::new(meta.target()), Text::new(names)];
    buffer::emit_checked(builtin::CALLSITE, builtin::CALLSITE_FIXED, &strs, |w| body::callsite(w, id, level))
}

/// One callsite of this thread whose names can be listed, while [`with_site`] lends it.
pub(super) struct SiteRef<'s> {
    meta: &'static Metadata<'static>,
    id: u64,
    /// Its `Callsite`'s field names.
    names: &'s str,
    /// The block it was last defined in ([`Site::defined`]).
    defined: &'s mut u64,
}

impl SiteRef<'_> {
    /// Records a record of `code` by the callsite, with its definition in its block: `fill`
    /// gets the callsite's id. `false`, with nothing recorded, when the definition could not
    /// be written (the caller then records the record as it stands without callsites).
    pub(super) fn emit(
        &mut self,
        code: u16,
        fixed: usize,
        strs: &[Text<'_>],
        fill: impl FnOnce(&mut ArgWriter<'_>, u64),
    ) -> bool {
        let (meta, id, names) = (self.meta, self.id, self.names);
        // 0: this thread has started no block yet, and whatever it defined was in none.
        let now = buffer::block_now();
        if now == 0 || *self.defined != now {
            if !define(meta, id, names) {
                return false;
            }
            *self.defined = buffer::block_now();
        }
        buffer::emit(code, fixed, strs, |w| fill(w, id));
        if buffer::block_now() != *self.defined {
            // The record opened a block: defined there too, after it. Refused (no room left
            // for it, which a block just opened has), the record reads as it is.
            define(meta, id, names);
            *self.defined = buffer::block_now();
        }
        true
    }
}

/// Calls `f` with `meta`'s callsite on this thread, when its records are written by
/// callsite: not while a capture may run ([`crate::capture`] reads records as they are
/// written), nor for a callsite whose names cannot be listed, nor while this thread's
/// callsites are lent already (a field's `Debug` that records a `tracing` event). `None`
/// otherwise: the caller records without callsites.
#[inline]
pub(super) fn with_site<R>(meta: &'static Metadata<'static>, f: impl FnOnce(&mut SiteRef<'_>) -> R) -> Option<R> {
    if crate::emit::divert::capturing() {
        return None;
    }
    SITES
        .try_with(|cell| {
            let mut sites = cell.try_borrow_mut().ok()?;
            let Site { id, names, defined } = site(&mut sites, meta);
            Some(f(&mut SiteRef { meta, id: *id, names: names.as_deref()?, defined }))
        })
        .ok()
        .flatten()
}
