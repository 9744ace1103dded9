//! Parsing the macros' invocations.

use proc_macro2::{TokenStream, TokenTree};
use syn::ext::IdentExt as _;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, LitInt, LitStr, Token, bracketed};

/// `include_events!("path/to/events.def")`
pub(crate) struct Include {
    pub(crate) path: LitStr,
}

impl Parse for Include {
    fn parse(input: ParseStream<'_>) -> syn::Result<Include> {
        let path: LitStr = input.parse().map_err(|e| {
            syn::Error::new(e.span(), "include_events! takes the path of events.def as a string literal, relative to the crate's Cargo.toml: include_events!(\"events.def\")")
        })?;
        if !input.is_empty() {
            return Err(input.error("include_events! takes one argument: the path of events.def"));
        }
        Ok(Include { path })
    }
}

/// One event of a set as the generated `event!` passes it to `__emit_event`:
/// `Name 0 "PAW" [arena base size] HOT`.
pub(crate) struct Row {
    pub(crate) name: Ident,
    /// The event's index in its set: what control tests and the recorder turns into its
    /// wire code.
    pub(crate) index: LitInt,
    pub(crate) format: LitStr,
    pub(crate) params: Vec<Ident>,
    /// `COOL` or `HOT`: the constant of `__private` that says whether the event is compiled in.
    pub(crate) keep: Ident,
}

impl Parse for Row {
    fn parse(input: ParseStream<'_>) -> syn::Result<Row> {
        let name = input.call(Ident::parse_any)?;
        let index = input.parse()?;
        let format = input.parse()?;
        let content;
        bracketed!(content in input);
        let mut params = Vec::new();
        while !content.is_empty() {
            params.push(content.call(Ident::parse_any)?);
        }
        let keep = input.parse()?;
        Ok(Row { name, index, format, params, keep })
    }
}

/// What the generated `event!` passes on: the crate that defines it (`$crate`), every event
/// of its set, then the user's tokens.
///
/// `$crate [Row Row ...] Name, arg, arg`
pub(crate) struct Invocation {
    /// `$crate` of the crate that includes events.def: every path of the expansion starts
    /// there, so a dependent crate's `storage::event!` never names `event_runtime` itself.
    pub(crate) krate: TokenTree,
    pub(crate) rows: Vec<Row>,
    /// The user's event name; `None` when the invocation does not start with one.
    pub(crate) name: Option<Ident>,
    /// The user's tokens after the name.
    pub(crate) rest: TokenStream,
}

impl Parse for Invocation {
    fn parse(input: ParseStream<'_>) -> syn::Result<Invocation> {
        let krate = input.parse()?;
        let content;
        bracketed!(content in input);
        let mut rows = Vec::new();
        while !content.is_empty() {
            rows.push(content.parse()?);
        }
        let name = if input.peek(Ident::peek_any) { Some(input.call(Ident::parse_any)?) } else { None };
        let rest = input.parse()?;
        Ok(Invocation { krate, rows, name, rest })
    }
}

/// One `event!` call of an event of the set: the event's description, then the user's
/// arguments.
pub(crate) struct Emit {
    pub(crate) krate: TokenTree,
    /// The name as the user wrote it (its span is the user's).
    pub(crate) name: Ident,
    pub(crate) row: Row,
    pub(crate) args: Punctuated<Expr, Token![,]>,
    /// A comma after the name when there are arguments: its absence is an error.
    pub(crate) missing_comma: Option<proc_macro2::Span>,
}

/// Parses the user's tokens after the name: `, arg, arg` (the comma's absence noted).
pub(crate) fn arguments(
    input: ParseStream<'_>,
) -> syn::Result<(Option<proc_macro2::Span>, Punctuated<Expr, Token![,]>)> {
    let mut missing_comma = None;
    if !input.is_empty() && !input.peek(Token![,]) {
        missing_comma = Some(input.span());
    } else if input.peek(Token![,]) {
        input.parse::<Token![,]>()?;
    }
    let args = Punctuated::parse_terminated(input)?;
    Ok((missing_comma, args))
}
