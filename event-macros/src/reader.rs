//! What `include_events!` generates for reading: `events::Event`, one variant per event of the
//! set with its parameters typed by their format letters, and the entries of the typed reader
//! (`events::read`, `events::from_reader`, `events::from_blocks`), inside `events`.
//!
//! The runtime's `event_runtime::read` does the reading with event-format's codec; what is
//! generated here only names the variants and maps a record's checked values to them, so that
//! a program that matches on a variant or a field events.def does not have fails to compile.

use crate::naming::{event_doc, ident};
use event_def::letter::Letter;
use event_def::schema::Schema;
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;

/// A field's Rust type, and the runtime's function that takes it from a value.
fn letter(l: Letter) -> (TokenStream, &'static str, TokenStream) {
    let (ty, f, variant) = match l {
        Letter::Pointer => (quote!(u64), "p", quote!(Pointer)),
        Letter::Address => (quote!(u64), "a", quote!(Address)),
        Letter::Word => (quote!(u64), "w", quote!(Word)),
        Letter::Unsigned => (quote!(u32), "u", quote!(Unsigned)),
        Letter::Signed => (quote!(i64), "i", quote!(Signed)),
        Letter::Double => (quote!(f64), "d", quote!(Double)),
        Letter::Bool => (quote!(bool), "b", quote!(Bool)),
        Letter::String => (quote!(::event_runtime::read::Text<'a>), "s", quote!(Str)),
    };
    (ty, f, variant)
}

/// The typed reader's items, to go inside the module `events`.
pub(crate) fn reader(schema: &Schema) -> TokenStream {
    let borrows = schema.events.iter().any(|e| e.format.contains(&Letter::String));
    // The enum has a lifetime only when a field borrows a string.
    let (lt, value_lt) = if borrows { (quote!(<'a>), quote!('a)) } else { (quote!(), quote!('static)) };
    let mut variants = Vec::new();
    let mut decodes = Vec::new();
    let mut names = Vec::new();
    let mut codes = Vec::new();
    let mut params = Vec::new();
    let mut values = Vec::new();
    for (j, e) in schema.events.iter().enumerate() {
        let name = ident(&e.name);
        let text = e.name.as_str();
        let code = Literal::u16_unsuffixed(e.code);
        let index = Literal::u16_unsuffixed(j as u16);
        let doc = event_doc(schema, e);
        let fields: Vec<Ident> = e.params.iter().map(|p| ident(p)).collect();
        let typed: Vec<_> = e.format.iter().map(|&l| letter(l)).collect();
        let tys = typed.iter().map(|(ty, _, _)| ty);
        let takes = typed.iter().map(|(_, f, _)| Ident::new(f, Span::call_site()));
        let value_of = typed.iter().map(|(_, _, v)| v);
        let field_docs = e.format.iter().map(|l| format!("`{}`: {}", l.as_char(), l.describe()));
        let positions = (0..fields.len()).map(Literal::usize_unsuffixed);
        let param_names = e.params.iter().map(String::as_str);
        if fields.is_empty() {
            variants.push(quote! { #[doc = #doc] #name });
            decodes.push(quote! { #index => Event::#name });
            values.push(quote! { Event::#name => ::core::option::Option::None });
            names.push(quote! { Event::#name => #text });
            codes.push(quote! { Event::#name => #code });
            params.push(quote! { Event::#name => &[] });
        } else {
            variants.push(quote! { #[doc = #doc] #name { #( #[doc = #field_docs] #fields: #tys, )* } });
            decodes.push(quote! { #index => Event::#name { #( #fields: __v::#takes(__values.next())?, )* } });
            values.push(quote! {
                Event::#name { #(#fields),* } => match __index {
                    #( #positions => ::core::option::Option::Some(::event_runtime::read::Value::#value_of(*#fields)), )*
                    _ => ::core::option::Option::None,
                }
            });
            names.push(quote! { Event::#name { .. } => #text });
            codes.push(quote! { Event::#name { .. } => #code });
            params.push(quote! { Event::#name { .. } => &[#(#param_names),*] });
        }
    }
    // `match *self {}` on an enum without variants: a set without events.
    let (names, codes, params, values) = if schema.events.is_empty() {
        (quote!(match *self {}), quote!(match *self {}), quote!(match *self {}), quote!(match *self {}))
    } else {
        (
            quote!(match self { #(#names,)* }),
            quote!(match self { #(#codes,)* }),
            quote!(match self { #(#params,)* }),
            quote!(match self { #(#values,)* }),
        )
    };
    let event_doc = "An event of this set as the typed reader gives it (`read`, `from_reader`, `from_blocks`): \
         one variant per event of events.def, each parameter a field of its format letter's type \
         (P, A, W: `u64`; U: `u32`; I: `i64`; D: `f64`; B: `bool`; S: `event_runtime::read::Text`, \
         the log's bytes, borrowed). The thread and time come beside it, in `event_runtime::read::Item::Event`.";
    quote! {
        #[doc = #event_doc]
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub enum Event #lt {
            #(#variants,)*
        }

        impl #lt Event #lt {
            /// The event's name in events.def.
            pub const fn name(&self) -> &'static str {
                #names
            }

            /// The event's code in events.def.
            pub const fn code(&self) -> u16 {
                #codes
            }

            /// The names of its parameters, in format order.
            pub const fn params(&self) -> &'static [&'static str] {
                #params
            }

            /// The value of parameter `__index` (format order), as event-format types it.
            pub fn value(&self, __index: usize) -> ::core::option::Option<::event_runtime::read::Value<#value_lt>> {
                #values
            }
        }

        impl<'a> ::event_runtime::read::TypedEvent<'a> for Event #lt {
            fn name(&self) -> &'static str {
                Event::name(self)
            }
            fn code(&self) -> u16 {
                Event::code(self)
            }
            fn params(&self) -> &'static [&'static str] {
                Event::params(self)
            }
            fn value(&self, __index: usize) -> ::core::option::Option<::event_runtime::read::Value<'a>> {
                Event::value(self, __index)
            }
        }

        /// This set, for `event_runtime::read::Reader`: its typed reader reads `Event`.
        #[derive(Debug)]
        pub enum Typed {}

        impl ::event_runtime::read::TypedSet for Typed {
            type Event<'a> = Event #lt;

            fn set() -> &'static ::event_runtime::EventSet {
                &SET
            }

            #[allow(unused_mut, unused_variables, unreachable_code)]
            fn decode(
                __index: u16,
                mut __values: ::event_runtime::read::ValueIter<'_>,
            ) -> ::core::option::Option<Self::Event<'_>> {
                use ::event_runtime::__private::value as __v;
                ::core::option::Option::Some(match __index {
                    #(#decodes,)*
                    _ => return ::core::option::Option::None,
                })
            }
        }

        /// The typed reader of this set over the blocks `B`.
        pub type Reader<B> = ::event_runtime::read::Reader<Typed, B>;

        /// An item of the typed reader: an `Event` with its thread and time, or what else
        /// the log holds (other sets, built-in events, losses, damage).
        pub type Item<'a> = ::event_runtime::read::Item<'a, Typed>;

        /// Opens the log at `path` (a stream, a ring file, or a recording of segments: its
        /// directory or a glob, read as one log) and checks its event set against
        /// this one (`event_runtime::read`).
        pub fn read(
            path: impl ::core::convert::AsRef<::std::path::Path>,
        ) -> ::core::result::Result<Reader<::event_runtime::read::FileBlocks>, ::event_runtime::read::ReadError> {
            Reader::open(path)
        }

        /// Opens the log at `path` and reads its event set named `name` with this set's types:
        /// for a log whose set has another name (a writer's events.def without a SET line is
        /// named after its package). Every event of the log's set must be one of this set's,
        /// the same in code, name, kind, format and parameters (`event_runtime::read`).
        pub fn read_as(
            path: impl ::core::convert::AsRef<::std::path::Path>,
            name: &str,
        ) -> ::core::result::Result<Reader<::event_runtime::read::FileBlocks>, ::event_runtime::read::ReadError> {
            Reader::open_as(path, name)
        }

        /// Reads the stream `reader` gives, after checking its event set against this one.
        pub fn from_reader<R: ::std::io::Read>(
            reader: R,
        ) -> ::core::result::Result<
            Reader<::event_runtime::format::Decoder<R>>,
            ::event_runtime::read::ReadError,
        > {
            Reader::from_reader(reader)
        }

        /// Reads the blocks of any source (a stream's decoder, a ring file's blocks), after
        /// checking its event set against this one.
        pub fn from_blocks<B: ::event_runtime::format::BlockSource>(
            blocks: B,
        ) -> ::core::result::Result<Reader<B>, ::event_runtime::read::ReadError> {
            Reader::new(blocks)
        }
    }
}
