//! Proc-macros of event-runtime. Use them through `event_runtime`: `include_events!` reads
//! events.def and generates the typed `event!` emitters; the `__`-prefixed macros are what
//! `event!` expands to and are not a stable API.
//!
//! This file only dispatches: `input` parses invocations, `load` reads events.def, `expand`
//! generates what `include_events!` gives (`reader` its typed reader, `naming` the names and
//! docs both give items), `emit` generates one `event!` call.

mod emit;
mod expand;
mod input;
mod load;
mod naming;
mod reader;

use proc_macro::TokenStream;

/// Reads events.def (the path is relative to the crate's Cargo.toml) and generates, where it
/// is called: the `event!` macro and the module `events` (kinds, codes, version, event set).
/// See `event_runtime` for the whole contract.
#[proc_macro]
pub fn include_events(input: TokenStream) -> TokenStream {
    match syn::parse::<input::Include>(input).and_then(|input| load::load(&input)) {
        Ok(loaded) => expand::include_events(&loaded).into(),
        Err(e) => expand::failed(&e).into(),
    }
}

#[doc(hidden)]
#[proc_macro]
pub fn __emit_event(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as input::Invocation);
    emit::invocation(input).unwrap_or_else(syn::Error::into_compile_error).into()
}
