//! The workspace's shape, as a build sees it: what compiling the proc macro pulls in.

use std::path::Path;
use std::process::Command;

/// The packages that building `package` compiles (normal and build dependencies), by name.
fn dependencies(package: &str) -> Vec<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(cargo)
        .current_dir(root)
        .args(["tree", "--offline", "--locked", "-p", package, "-e", "normal,build", "--prefix", "none"])
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
