//! What one `event!` call expands to.
//!
//! ```text
//! if $crate::__event_runtime::__private::HOT {
//!     match $crate::__event_runtime::__private::route(&$crate::events::__BITS, 0) {
//!         Route::Off => {}
//!         route => match (ArgP::arg_p(arena), ArgA::arg_a(base), ArgW::arg_w(size)) {
//!             (a0, a1, a2) => emit_routed(route, &$crate::events::__BITS, &$crate::events::SET, 0, 24, &[], move |w| { w.pointer(a0); w.address(a1); w.word(a2); }),
//!         },
//!     }
//! }
//! ```
//!
//! Every path starts at `$crate`, the crate that includes events.def, so that a dependent
//! crate's `storage::event!` names neither `event_runtime` nor anything the user could
//! shadow. `route` tests the event's bit (by its index) in its set's control bits, a
//! static whose address the linker knows, and, when it is on, the event's bit in the divert
//! word (`Route::Common` or `Route::Diverted`, the cold path's); `emit_routed` takes that
//! answer on, so that the divert word is loaded once an event, and passes the set and the
//! index, which the recording turns into the record's wire code (docs/EVENT-SETS.md,
//! decisions 1 and 4). Both are given the control bits (`__private::Bits`), which keep,
//! on their cache line, the address of the recorder's words that an enabled event reads:
//! reached from there, not through the global offset table.
//! The arguments are evaluated only inside the `if`, once each, in order; the `match` keeps
//! temporaries (e.g. a `format!` string) alive while the record is written. The closure that
//! writes them takes them by value (`move`: they are `Copy`, a string's `&str` too), so that
//! they stay in registers rather than on the stack for it to read back. Each conversion
//! is spanned on its argument, so a type error points at it. Each argument is written by the
//! method of its letter of event-format's `wire::ArgWriter` (the runtime's `Cursor`): the
//! bytes of each letter are defined there, once, not here.

use crate::input::{Emit, Invocation, Row};
use event_def::Letter;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt as _;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprUnary, Lit, LitInt, UnOp};

/// What one `event!` invocation expands to: the call, or the error that says why not.
pub(crate) fn invocation(input: Invocation) -> syn::Result<TokenStream> {
    let Some(name) = input.name else {
        return Err(syn::Error::new(
            proc_macro2::Span::call_site(),
            "event! takes the name of an event of events.def, then its arguments: event!(Name, args...)",
        ));
    };
    let wanted = name.unraw().to_string();
    let Some(at) = input.rows.iter().position(|r| r.name.unraw() == wanted) else {
        return Err(unknown(&name, &input.rows));
    };
    let row = input.rows.into_iter().nth(at).expect("found above");
    let (missing_comma, args) = syn::parse::Parser::parse2(crate::input::arguments, input.rest)?;
    emit(&Emit { krate: input.krate, name, row, args, missing_comma })
}

pub(crate) fn emit(input: &Emit) -> syn::Result<TokenStream> {
    let name = input.name.unraw().to_string();
    let format = input.row.format.value();
    let letters: Vec<Letter> = format.chars().filter(|c| *c != '0').filter_map(Letter::from_char).collect();
    let params: Vec<String> = input.row.params.iter().map(|p| p.unraw().to_string()).collect();
    let describe = || {
        let list = if params.is_empty() { String::new() } else { format!(": {}", params.join(", ")) };
        format!(
            "event `{name}` has format {format} ({} argument{}{list})",
            letters.len(),
            if letters.len() == 1 { "" } else { "s" }
        )
    };
    if let Some(span) = input.missing_comma {
        return Err(syn::Error::new(span, format!("expected `,` after the event name; {}", describe())));
    }
    let args: Vec<&Expr> = input.args.iter().collect();
    if args.len() != letters.len() {
        // Too many: the first extra argument; too few: the event's name.
        let span = args.get(letters.len()).map_or_else(|| input.name.span(), |a| a.span());
        return Err(syn::Error::new(
            span,
            format!("wrong number of arguments for `{name}`: {} given, but {}", args.len(), describe()),
        ));
    }

    let krate = &input.krate;
    let index = &input.row.index;
    let keep = &input.row.keep;
    let p = quote!(#krate::__event_runtime::__private);
    let mut convs = Vec::new();
    let mut binds = Vec::new();
    let mut strs = Vec::new();
    let mut writes = Vec::new();
    let mut fixed = 0usize;
    for (i, (letter, arg)) in letters.iter().zip(&args).enumerate() {
        let bind = format_ident!("__event_arg{}", i, span = Span::mixed_site());
        let arg = suffixed(arg, *letter);
        let span = arg.span();
        // The bridge by a name spanned on the argument (imported below): a type error then
        // points at the argument alone, not at the `$crate` that would start the path.
        let p = Ident::new(BRIDGE, span);
        convs.push(match letter {
            Letter::Pointer => quote_spanned!(span=> #p::ArgP::arg_p(#arg)),
            Letter::Address => quote_spanned!(span=> #p::ArgA::arg_a(#arg)),
            Letter::Word => quote_spanned!(span=> #p::ArgW::arg_w(#arg)),
            Letter::Unsigned => quote_spanned!(span=> #p::ArgU::arg_u(#arg)),
            Letter::Signed => quote_spanned!(span=> #p::ArgI::arg_i(#arg)),
            Letter::Double => quote_spanned!(span=> #p::ArgD::arg_d(#arg)),
            Letter::Bool => quote_spanned!(span=> #p::ArgB::arg_b(#arg)),
            Letter::String => quote_spanned!(span=> #p::ArgS::arg_s(&(#arg))),
        });
        let w = format_ident!("__event_w", span = Span::mixed_site());
        writes.push(match letter {
            Letter::Pointer => quote!(#w.pointer(#bind);),
            Letter::Address => quote!(#w.address(#bind);),
            Letter::Word => quote!(#w.word(#bind);),
            Letter::Unsigned => quote!(#w.unsigned(#bind);),
            Letter::Signed => quote!(#w.signed(#bind);),
            Letter::Double => quote!(#w.double(#bind);),
            Letter::Bool => quote!(#w.bool(#bind);),
            Letter::String => {
                let k = strs.len();
                strs.push(quote!(#p::text(#bind)));
                quote!(#w.str(#k);)
            }
        });
        fixed += letter.fixed_size().unwrap_or(0);
        binds.push(bind);
    }
    let w = format_ident!("__event_w", span = Span::mixed_site());
    let route = format_ident!("__event_route", span = Span::mixed_site());
    let bridge = Ident::new(BRIDGE, Span::call_site());
    Ok(quote! {
        if #p::#keep {
            match #p::route(&#krate::events::__BITS, #index) {
                #p::Route::Off => {}
                #route => {
                    #[allow(unused_imports)]
                    use #krate::__event_runtime::__private as #bridge;
                    match (#(#convs,)*) {
                        (#(#binds,)*) => #p::emit_routed(
                            #route,
                            &#krate::events::__BITS,
                            &#krate::events::SET,
                            #index,
                            #fixed,
                            &[#(#strs),*],
                            move |#w: &mut #p::Cursor<'_>| { #(#writes)* },
                        ),
                    }
                }
            }
        }
    })
}

/// The name under which the expansion imports `__private` for the argument conversions.
const BRIDGE: &str = "__event_private";

/// An unsuffixed integer literal gets the suffix of its letter's wire type, so that
/// `event!(E, 0)` means what it says instead of failing as an `i32`.
fn suffixed(arg: &Expr, letter: Letter) -> Expr {
    let suffix = match letter {
        Letter::Pointer | Letter::Address => "usize",
        Letter::Word => "u64",
        Letter::Unsigned => "u32",
        Letter::Signed => "i64",
        Letter::Double => "f64",
        Letter::Bool | Letter::String => return arg.clone(),
    };
    let with_suffix = |lit: &LitInt| -> Option<Lit> {
        lit.suffix().is_empty().then(|| Lit::Int(LitInt::new(&format!("{}{suffix}", lit.base10_digits()), lit.span())))
    };
    match arg {
        Expr::Lit(ExprLit { lit: Lit::Int(lit), attrs }) => match with_suffix(lit) {
            Some(lit) => Expr::Lit(ExprLit { lit, attrs: attrs.clone() }),
            None => arg.clone(),
        },
        Expr::Unary(ExprUnary { op: UnOp::Neg(neg), expr, attrs })
            if matches!(letter, Letter::Signed | Letter::Double) =>
        {
            match &**expr {
                Expr::Lit(ExprLit { lit: Lit::Int(lit), attrs: inner }) => match with_suffix(lit) {
                    Some(lit) => Expr::Unary(ExprUnary {
                        op: UnOp::Neg(*neg),
                        expr: Box::new(Expr::Lit(ExprLit { lit, attrs: inner.clone() })),
                        attrs: attrs.clone(),
                    }),
                    None => arg.clone(),
                },
                _ => arg.clone(),
            }
        }
        _ => arg.clone(),
    }
}

/// The error of an `event!` whose name the set does not have.
fn unknown(name: &syn::Ident, rows: &[Row]) -> syn::Error {
    let span = name.span();
    let name = name.unraw().to_string();
    let known: Vec<String> = rows.iter().map(|r| r.name.unraw().to_string()).collect();
    let hint = match event_def::def::closest(&name, known.iter().map(String::as_str)) {
        Some(close) => format!("did you mean `{close}`?"),
        None if known.is_empty() => "events.def declares no events".to_owned(),
        None => "declare it with a RELATION line in events.def".to_owned(),
    };
    syn::Error::new(span, format!("no event `{name}` in events.def; {hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_of_one_call() {
        let input: Invocation = syn::parse_str(
            r#"krate [Other 0 "" [] HOT PoolInit 4 "PSUD" [pool class align load] COOL] PoolInit, &pool, format!("{}", 1), 16, -1"#,
        )
        .unwrap();
        let body = invocation(input).unwrap();
        let file: syn::File = syn::parse2(quote!(fn call_site() { #body })).unwrap();
        insta::assert_snapshot!(prettyplease::unparse(&file));
    }
}
