//! What the events' limits suppressed (events.def's `limit=`, `EVENT_LIMIT`; docs/FORMAT.md,
//! "Limits"), in the lines that `stats` and `check` say of it: a note, never a loss, since
//! the program asked for it.

use super::Ledger;
use crate::codec::decode::Catalog;

/// One line per event whose limit suppressed some of it: `suppressed by its limit: NAME, N
/// events (T1 n1, T2 n2)`, the busiest threads first (the first five; the others summed),
/// events in the order of their wire codes. Names come from `catalog` (a code it does not
/// know is shown as such). Empty when nothing was suppressed.
///
/// ```
/// use event_format::decode::{Catalog, Decoder};
/// use event_format::ledger::{Ledger, describe_suppressed};
/// let bytes = event_format::testing::sample_stream(event_format::wire::Order::Little);
/// let decoder = Decoder::new(&bytes[..]).unwrap();
/// let catalog = Catalog::new(&decoder.header().sets);
/// assert!(describe_suppressed(&Ledger::new(decoder.header().format), &catalog).is_empty());
/// ```
pub fn describe_suppressed(ledger: &Ledger, catalog: &Catalog) -> Vec<String> {
    const SHOWN: usize = 5;
    let mut lines = Vec::new();
    for (code, total) in ledger.suppressed_by_code() {
        let mut threads: Vec<(u64, u64)> =
            ledger.suppressed().range((code, 0)..=(code, u64::MAX)).map(|(&(_, t), &n)| (t, n)).collect();
        threads.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut parts: Vec<String> = threads.iter().take(SHOWN).map(|(t, n)| format!("T{t} {n}")).collect();
        if threads.len() > SHOWN {
            let rest = threads[SHOWN..].iter().map(|t| t.1).fold(0u64, u64::saturating_add);
            parts.push(format!("{} more threads {rest}", threads.len() - SHOWN));
        }
        let name = catalog.get(code).map_or_else(|| format!("code {code:#06x}"), |d| d.full_name().to_string());
        lines.push(format!(
            "suppressed by its limit: {name}, {total} event{} ({})",
            if total == 1 { "" } else { "s" },
            parts.join(", ")
        ));
    }
    lines
}
