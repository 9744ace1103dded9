//! The workspace's shape, as a build sees it: what compiling the proc macro, the recorder and
//! the reader pull in.

use std::path::Path;
use std::process::Command;

/// The packages that building `package` compiles (normal and build dependencies), by name.
fn dependencies(package: &str) -> Vec<String> {
    tree(package, "normal,build")
}

/// The packages of `package`'s dependency graph along the `edges` kinds (`cargo tree -e`).
fn tree(package: &str, edges: &str) -> Vec<String> {
    tree_with(package, edges, &[])
}

/// [`tree`] with more arguments for `cargo tree` (`--no-default-features`, `--features`).
fn tree_with(package: &str, edges: &str, more: &[&str]) -> Vec<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(cargo)
        .current_dir(root)
        .args(["tree", "--offline", "--locked", "-p", package, "-e", edges, "--prefix", "none"])
        .args(more)
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("cargo tree writes UTF-8");
    text.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_owned).collect()
}

/// The proc macro needs the events.def language alone (event-def), as defmt's macros need
/// defmt-parser: every crate that expands `include_events!` compiles no codec for it.
#[test]
fn the_proc_macro_compiles_the_grammar_and_no_codec() {
    let deps = dependencies("event-macros");
    assert!(deps.iter().any(|d| d == "event-def"), "event-macros depends on event-def: {deps:?}");
    for codec in ["event-format", "lz4_flex", "crc32fast", "zmij"] {
        assert!(!deps.iter().any(|d| d == codec), "event-macros compiles {codec}: {deps:?}");
    }
}

/// The recorder's tests build without the reader: event-dump is not among its dependencies of
/// any kind, so that building and testing the recorder never compiles the exporters (the test
/// of control through the ring file, which needs both, is event-dump's).
#[test]
fn the_recorder_does_not_depend_on_the_reader() {
    let deps = tree("event-runtime", "normal,build,dev");
    assert!(!deps.iter().any(|d| d == "event-dump"), "event-runtime depends on event-dump: {deps:?}");
}

/// The table exports are features of event-dump (on by default): a build without them
/// compiles neither SQLite (C, built with the crate) nor the `parquet` crate, and one with a
/// feature compiles what that export needs.
#[test]
fn the_table_exports_are_features_of_the_reader() {
    let all = tree_with("event-dump", "normal,build", &[]);
    let none = tree_with("event-dump", "normal,build", &["--no-default-features"]);
    let sqlite = tree_with("event-dump", "normal,build", &["--no-default-features", "--features", "sqlite"]);
    for (deps, has_sqlite, has_parquet) in [(&all, true, true), (&none, false, false), (&sqlite, true, false)] {
        assert_eq!(deps.iter().any(|d| d == "rusqlite"), has_sqlite, "{deps:?}");
        assert_eq!(deps.iter().any(|d| d == "parquet"), has_parquet, "{deps:?}");
    }
}
