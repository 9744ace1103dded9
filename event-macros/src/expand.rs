//! What `include_events!` generates: the module `events` (with the set's static, its control
//! bits and its registration), the `event!` macro, exported, and the hidden path through
//! which that macro reaches the runtime from any crate (`$crate::__event_runtime`).
//!
//! `event!` is `#[macro_export]`ed so that the crates that depend on this one can emit its
//! events (`storage::event!(...)`). A macro-expanded exported macro cannot be named by a path
//! in its own crate (rust-lang/rust#52234), so `event!` never re-enters itself: its one arm
//! hands the set's table of events and the user's tokens to `__emit_event`, which selects the
//! event by name and keeps the user's spans for its errors.
//!
//! Two mistakes get the project's own message rather than rustc's consequences of them: a call
//! outside the crate root stops the build with the rule (a `const` assertion on
//! `module_path!()`, since a proc-macro cannot see which module it expands in), and a call that
//! fails ([`failed`]) still defines an `event!` that expands to `()`, so that the error is not
//! followed by a "cannot find macro `event`" for every call of it in the crate.

use crate::load::Loaded;
use crate::naming::{event_doc, ident};
use event_def::letter::format_string;
use event_def::schema::Schema;
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;

/// The whole expansion of `include_events!` for `loaded`.
pub(crate) fn include_events(loaded: &Loaded) -> TokenStream {
    let path = loaded.path.display().to_string();
    let module = module(&loaded.schema, &path, &loaded.written, &loaded.package_version);
    let macro_rules = event_macro(&loaded.schema);
    quote! {
        // `event!` finds the set at `$crate::events`: the crate root is the only place where it
        // works, and anywhere else this says so, in the project's words.
        const _: () = ::core::assert!(
            ::event_runtime::__private::at_crate_root(::core::module_path!()),
            "include_events! must be called in the crate root (lib.rs or main.rs, or the file of a test, \
             example or bench), not in a module: the `event!` it generates finds the event set at \
             `crate::events`; move the call to the top of the crate root"
        );

        /// The runtime's bridge, as the exported `event!` reaches it from any crate. Not an API.
        #[doc(hidden)]
        pub mod __event_runtime {
            // A module, not `pub use ::event_runtime`: an extern crate that a doctest injects
            // cannot be re-exported, its items can.
            pub use ::event_runtime::__private;
        }
        #module
        #macro_rules
    }
}

/// What `include_events!` expands to when it fails (events.def missing or broken, a bad
/// invocation): the error, and an `event!` that expands to `()`, so that the error is the
/// only one and every `event!` of the crate does not add "cannot find macro `event`".
pub(crate) fn failed(error: &syn::Error) -> TokenStream {
    let error = error.to_compile_error();
    quote! {
        #error

        /// Stands in for the `event!` of an events.def that did not load: see the error above.
        #[macro_export]
        macro_rules! event {
            ($($args:tt)*) => {
                ()
            };
        }
    }
}

fn module(schema: &Schema, path: &str, written: &str, package_version: &str) -> TokenStream {
    let def = event_def::def::render(schema);
    let v = schema.version;
    let (major, median, minor) = (v.major, v.median, v.minor);
    let kinds: Vec<Ident> = schema.kinds.iter().map(|k| ident(&k.name)).collect();
    let kind_docs: Vec<String> = schema
        .kinds
        .iter()
        .enumerate()
        .map(|(i, k)| {
            if k.doc.is_empty() {
                format!("Kind `{}`: bit {i} of the control mask.", k.name)
            } else {
                format!("{} (bit {i} of the control mask)", k.doc)
            }
        })
        .collect();
    let kind_names: Vec<&str> = schema.kinds.iter().map(|k| k.name.as_str()).collect();
    let kind_bits = (0..schema.kinds.len()).map(|i| Literal::u8_unsuffixed(i as u8));
    let n_kinds = schema.kinds.len();
    let repr = if kinds.is_empty() { quote!() } else { quote!(#[repr(u8)]) };
    let codes = schema.events.iter().map(|e| {
        let name = ident(&e.name);
        let code = Literal::u16_unsuffixed(e.code);
        let doc = event_doc(schema, e);
        quote! { #[doc = #doc] pub const #name: u16 = #code; }
    });
    let set_name = schema.name.as_str();
    // One control bit per event, by index; at least one word, so that the static exists.
    let words = schema.events.len().div_ceil(64).max(1);
    let set_doc = format!(
        "The event set of `{written}`, registered with every set linked into the program: \
         `event_runtime::Recorder::new()` records it; `Recorder::sets` lists sets explicitly."
    );
    let module_doc = format!("The events of `{written}`, generated by `event_runtime::include_events!`.");
    let reader = crate::reader::reader(schema);
    quote! {
        #[doc = #module_doc]
        #[allow(dead_code)]
        pub mod events {
            // Makes cargo rebuild this crate when events.def changes.
            const _: &[u8] = ::core::include_bytes!(#path);

            /// The control bits of the set, one per event by index, on the cache line
            /// that `event!` reaches the recorder's own words from. Not an API: the
            /// recorder sets them, `event!` tests them.
            #[doc(hidden)]
            pub static __BITS: ::event_runtime::__private::Bits<#words> = ::event_runtime::__private::Bits::new();

            #[doc = #set_doc]
            pub static SET: ::event_runtime::__private::EventSet =
                ::event_runtime::__private::EventSet::__new(#def, #written, #set_name, #package_version, &__BITS.words);

            // Registers the set with every set linked into the program.
            #[::event_runtime::__private::linkme::distributed_slice(::event_runtime::__private::SETS)]
            #[linkme(crate = ::event_runtime::__private::linkme)]
            static __REGISTER: &::event_runtime::__private::EventSet = &SET;

            /// The event set's version: the `VERSION` line of events.def.
            pub const VERSION: ::event_runtime::__private::Version =
                ::event_runtime::__private::Version::new(#major, #median, #minor);

            /// The kinds of events, in declaration order: kind `i` is bit `i` of the control mask.
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
            #repr
            pub enum Kind {
                #( #[doc = #kind_docs] #kinds = #kind_bits, )*
            }

            impl Kind {
                /// Every kind, in declaration order.
                pub const ALL: [Kind; #n_kinds] = [#(Kind::#kinds),*];

                /// The kind's bit in the control mask.
                pub const fn mask(self) -> u64 {
                    1u64 << (self as u8)
                }

                /// The kind's name in events.def.
                pub const fn name(self) -> &'static str {
                    match self {
                        #( Kind::#kinds => #kind_names, )*
                    }
                }
            }

            /// The code of every event, by name.
            #[allow(non_upper_case_globals)]
            pub mod code {
                #(#codes)*
            }

            #reader
        }
    }
}

fn event_macro(schema: &Schema) -> TokenStream {
    // The set's table, one row per event: `Name index "FMT" [params] HOT`.
    let rows = schema.events.iter().enumerate().map(|(j, e)| {
        let name = ident(&e.name);
        // Schema::check bounds a set's events by its 16-bit codes, so the index fits.
        let index = Literal::u16_unsuffixed(j as u16);
        let format = format_string(&e.format);
        let params = e.params.iter().map(|p| ident(p));
        let keep = Ident::new(if e.always { "HOT" } else { "COOL" }, Span::call_site());
        quote! { #name #index #format [#(#params)*] #keep }
    });
    quote! {
        /// Records an event of events.def: `event!(Name, args...)`, arguments in format order.
        /// Generated by `event_runtime::include_events!`; crates that depend on this one
        /// call it as `this_crate::event!(...)`.
        #[macro_export]
        macro_rules! event {
            ($($args:tt)*) => {
                $crate::__event_runtime::__private::emit_event! { $crate [#(#rows)*] $($args)* }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Loaded;

    #[test]
    fn expansion_of_a_small_events_def() {
        let schema = event_def::def::parse(
            "VERSION(1, 2, 3)\nKIND(Arena, \"arenas\")\nKIND(Pool)\n\
             RELATION(ArenaCreate, 0x0001, TRUE, Arena, PAW, arena, base, size)\n\
             RELATION(PoolNote, 0x0002, FALSE, Pool, SUB, note, count, ok)\n\
             RELATION(Poll, 0x0003, FALSE, Arena, 0)\n",
            "events.def",
        )
        .unwrap();
        let loaded = Loaded {
            path: "/crate/events.def".into(),
            written: "events.def".into(),
            schema,
            package_version: "0.3.1".into(),
        };
        let tokens = include_events(&loaded);
        let file: syn::File = syn::parse2(tokens).expect("the expansion is valid Rust");
        insta::assert_snapshot!(prettyplease::unparse(&file));
    }
}
