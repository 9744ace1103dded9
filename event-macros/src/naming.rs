//! How generated code names and documents an event set's items, shared by what
//! `include_events!` generates for emitting (`expand`) and for reading (`reader`).

use event_def::letter::format_string;
use event_def::schema::{EventType, Schema};
use proc_macro2::{Ident, Span};

/// `name` as an identifier of the generated code: raw (`r#type`) when it is a Rust keyword,
/// which format 2's names may be (Schema::check refuses the keywords no raw identifier spells).
pub(crate) fn ident(name: &str) -> Ident {
    if event_def::schema::is_rust_keyword(name) {
        Ident::new_raw(name, Span::call_site())
    } else {
        Ident::new(name, Span::call_site())
    }
}

/// The rustdoc of event `e` of `schema`: its code, kind, format, parameters and `always`.
pub(crate) fn event_doc(schema: &Schema, e: &EventType) -> String {
    format!(
        "`{}`: code 0x{:04X}, kind {}, format {}{}{}.",
        e.name,
        e.code,
        schema.kinds.get(usize::from(e.kind)).map_or("?", |k| k.name.as_str()),
        format_string(&e.format),
        if e.params.is_empty() { String::new() } else { format!(" ({})", e.params.join(", ")) },
        if e.always { ", always" } else { "" },
    )
}
