//! What one `event!` call expands to.
//!
//! ```text
//! if ::event_runtime::__private::HOT && ::event_runtime::__private::enabled(1) {
//!     match (ArgP::arg_p(arena), ArgA::arg_a(base), ArgW::arg_w(size)) {
//!         (a0, a1, a2) => emit(0, 24, &[], |w| { w.pointer(a0); w.address(a1); w.word(a2); }),
//!     }
//! }
//! ```
//!
//! `enabled` takes the event's own code (control is by code); `emit` its index in the set,
//! which the recorder turns into the record's wire code (docs/EVENT-SETS.md, decision 1).
//! The arguments are evaluated only inside the `if`, once each, in order; the `match` keeps
//! temporaries (e.g. a `format!` string) alive while the record is written. Each conversion
//! is spanned on its argument, so a type error points at it. Each argument is written by the
//! method of its letter of `event_format::wire::ArgWriter` (the runtime's `Cursor`): the
//! bytes of each letter are defined there, once, not here.

use crate::input::{Emit, Unknown};
use event_format::Letter;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ExprUnary, Lit, LitInt, UnOp};

pub(crate) fn emit(input: &Emit) -> syn::Result<TokenStream> {
    let name = input.name.to_string();
    let format = input.format.value();
    let letters: Vec<Letter> = format.chars().filter(|c| *c != '0').filter_map(Letter::from_char).collect();
    let params: Vec<String> = input.params.iter().map(ToString::to_string).collect();
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

    let code = &input.code;
    let index = &input.index;
    let keep = &input.keep;
    let mut convs = Vec::new();
    let mut binds = Vec::new();
    let mut strs = Vec::new();
    let mut writes = Vec::new();
    let mut fixed = 0usize;
    for (i, (letter, arg)) in letters.iter().zip(&args).enumerate() {
        let bind = format_ident!("__event_arg{}", i, span = Span::mixed_site());
        let arg = suffixed(arg, *letter);
        let span = arg.span();
        let p = quote_spanned!(span=> ::event_runtime::__private);
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
                strs.push(quote!(::event_runtime::__private::text(#bind)));
                quote!(#w.str(#k);)
            }
        });
        fixed += letter.fixed_size().unwrap_or(0);
        binds.push(bind);
    }
    let w = format_ident!("__event_w", span = Span::mixed_site());
    Ok(quote! {
        if ::event_runtime::__private::#keep && ::event_runtime::__private::enabled(#code) {
            match (#(#convs,)*) {
                (#(#binds,)*) => ::event_runtime::__private::emit(
                    #index,
                    #fixed,
                    &[#(#strs),*],
                    |#w: &mut ::event_runtime::__private::Cursor<'_>| { #(#writes)* },
                ),
            }
        }
    })
}

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

pub(crate) fn unknown(input: &Unknown) -> syn::Error {
    let name = input.name.to_string();
    let known: Vec<String> = input.known.iter().map(ToString::to_string).collect();
    let hint = match event_format::def::closest(&name, known.iter().map(String::as_str)) {
        Some(close) => format!("did you mean `{close}`?"),
        None if known.is_empty() => "events.def declares no events".to_owned(),
        None => "declare it with a RELATION line in events.def".to_owned(),
    };
    syn::Error::new(input.name.span(), format!("no event `{name}` in events.def; {hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expansion_of_one_call() {
        let input: Emit =
            syn::parse_str(r#"PoolInit 16 4 "PSUD" [pool class align load] COOL ; , &pool, format!("{}", 1), 16, -1"#)
                .unwrap();
        let body = emit(&input).unwrap();
        let file: syn::File = syn::parse2(quote!(fn call_site() { #body })).unwrap();
        insta::assert_snapshot!(prettyplease::unparse(&file));
    }
}
