//! Parsing the macros' invocations.

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

/// What an `event!` arm passes on: the event's description from events.def, then the
/// user's arguments.
///
/// `Name 0x0001 "PAW" [arena base size] HOT ; , arg, arg, arg`
pub(crate) struct Emit {
    pub(crate) name: Ident,
    /// The event's own code: what control tests.
    pub(crate) code: LitInt,
    /// The event's index in its set: what the recorder turns into its wire code.
    pub(crate) index: LitInt,
    pub(crate) format: LitStr,
    pub(crate) params: Vec<Ident>,
    /// `COOL` or `HOT`: the constant of `__private` that says whether the event is compiled in.
    pub(crate) keep: Ident,
    pub(crate) args: Punctuated<Expr, Token![,]>,
    /// A comma after the name when there are arguments: its absence is an error.
    pub(crate) missing_comma: Option<proc_macro2::Span>,
}

impl Parse for Emit {
    fn parse(input: ParseStream<'_>) -> syn::Result<Emit> {
        let name = input.parse()?;
        let code = input.parse()?;
        let index = input.parse()?;
        let format = input.parse()?;
        let content;
        bracketed!(content in input);
        let mut params = Vec::new();
        while !content.is_empty() {
            params.push(content.parse()?);
        }
        let keep = input.parse()?;
        input.parse::<Token![;]>()?;
        let mut missing_comma = None;
        if !input.is_empty() && !input.peek(Token![,]) {
            missing_comma = Some(input.span());
        } else if input.peek(Token![,]) {
            input.parse::<Token![,]>()?;
        }
        let args = Punctuated::parse_terminated(input)?;
        Ok(Emit { name, code, index, format, params, keep, args, missing_comma })
    }
}

/// `Name [Known Names ...]`: an `event!` whose name events.def does not have.
pub(crate) struct Unknown {
    pub(crate) name: Ident,
    pub(crate) known: Vec<Ident>,
}

impl Parse for Unknown {
    fn parse(input: ParseStream<'_>) -> syn::Result<Unknown> {
        let name = input.parse()?;
        let content;
        bracketed!(content in input);
        let mut known = Vec::new();
        while !content.is_empty() {
            known.push(content.parse()?);
        }
        Ok(Unknown { name, known })
    }
}
