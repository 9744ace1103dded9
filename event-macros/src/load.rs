//! Reading events.def: the path, the file, the parse.

use crate::input::Include;
use event_def::schema::Schema;
use std::path::PathBuf;

/// An events.def, read and checked.
pub(crate) struct Loaded {
    /// The absolute path read.
    pub(crate) path: PathBuf,
    /// The path as written in the invocation.
    pub(crate) written: String,
    pub(crate) schema: Schema,
    /// The version of the package that includes it (`CARGO_PKG_VERSION`), empty outside cargo.
    pub(crate) package_version: String,
}

/// Where to look for `written`: relative to the crate's Cargo.toml first, then relative to
/// the directory of the source file that calls the macro (a crate whose manifest lives
/// elsewhere, such as one that a test harness generates, still finds a file beside its code).
fn candidates(written: &str, span: proc_macro2::Span) -> Vec<PathBuf> {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_default();
    let mut paths = vec![manifest.join(written)];
    if let Some(dir) = source_dir(span) {
        paths.push(dir.join(written));
    }
    paths
}

fn source_dir(span: proc_macro2::Span) -> Option<PathBuf> {
    // Only inside a real macro expansion is there a source file (not in unit tests).
    if !proc_macro::is_available() {
        return None;
    }
    span.unwrap().local_file()?.parent().map(PathBuf::from)
}

/// The error for an events.def found at none of `candidates`: the first is beside the crate's
/// Cargo.toml, named by that rule rather than by its absolute path (the directory is the
/// user's own crate, and a path under a build's target directory, where a test harness puts
/// its crates, would differ from one machine to another); the others as paths.
fn not_found(written: &str, candidates: &[PathBuf]) -> String {
    let mut tried = vec!["beside the crate's Cargo.toml (`CARGO_MANIFEST_DIR`)".to_owned()];
    tried.extend(candidates.iter().skip(1).map(|p| format!("at {}", p.display())));
    format!(
        "cannot find events.def `{written}`: not {}; the path is relative to the crate's Cargo.toml",
        tried.join(", nor ")
    )
}

/// Reads and parses the events.def that `input` names, relative to the crate's Cargo.toml
/// (or, failing that, to the calling source file). Every problem is an error at the path
/// literal: a missing or unreadable file names the path tried; errors in the file are the
/// parser's, with their lines and columns.
pub(crate) fn load(input: &Include) -> syn::Result<Loaded> {
    let written = input.path.value();
    let candidates = candidates(&written, input.path.span());
    let Some(path) = candidates.iter().find(|p| p.exists()).cloned() else {
        return Err(syn::Error::new(input.path.span(), not_found(&written, &candidates)));
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        syn::Error::new(input.path.span(), format!("cannot read events.def at {}: {e}", path.display()))
    })?;
    // The set's default name: the package name of the crate being compiled, the one that
    // includes the file (cargo sets it for the compiler, which runs this macro).
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| event_def::def::DEFAULT_SET_NAME.to_owned());
    let schema = event_def::def::parse_set(&text, &path.display().to_string(), &package).map_err(|errors| {
        let mut iter = errors.0.iter();
        let first = iter.next().map_or_else(String::new, ToString::to_string);
        let mut err = syn::Error::new(input.path.span(), format!("events.def has errors:\n{first}"));
        for e in iter {
            err.combine(syn::Error::new(input.path.span(), e.to_string()));
        }
        err
    })?;
    let package_version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    Ok(Loaded { path, written, schema, package_version })
}
