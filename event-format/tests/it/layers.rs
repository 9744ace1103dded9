//! event-format's two layers (the crate's docs, "Two layers"): the codec (`src/codec/`) stands
//! on `event-def` alone and never names the reading policy (`src/reading/`), which stands on
//! it. A unit test at a file's end may read through either.

use std::path::Path;
use test_scratch::imports::{code_lines, crate_names, sources};

/// The reading policy's modules, as the crate root re-exports them.
const READING: &[&str] = &["reading", "filter", "histogram", "ledger", "log", "merge", "roles", "select", "text"];

/// What a source file names of the reading policy, as `line: crate::name`, in its code
/// ([`code_lines`]: comments and unit tests left out).
fn reading_names(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (n, code) in code_lines(source) {
        for name in crate_names(code) {
            if READING.contains(&name.as_str()) {
                found.push(format!("{n}: crate::{name}"));
            }
        }
    }
    found
}

#[test]
fn the_codec_never_names_the_reading_policy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/codec");
    let files = sources(&root);
    assert!(files.len() > 10, "the codec's files: {files:?}");
    let mut wrong = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).expect("a source file reads");
        for hit in reading_names(&source) {
            wrong.push(format!("{}:{hit}", file.display()));
        }
    }
    assert!(wrong.is_empty(), "the codec imports the reading policy:\n{}", wrong.join("\n"));
}

#[test]
fn a_reading_name_in_code_is_found_and_one_in_a_comment_or_a_unit_test_is_not() {
    let source = "use crate::wire::Value;\nuse crate::{ledger::Ledger, wire};\n/// see crate::log\n\
                  let x = 1; // crate::text\n#[cfg(test)]\nmod tests { use crate::merge; }\n";
    assert_eq!(reading_names(source), ["2: crate::ledger"]);
}
