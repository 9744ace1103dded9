//! event-format's two layers (the crate's docs, "Two layers"): the codec (`src/codec/`) stands
//! on `event-def` alone and never names the reading policy (`src/reading/`), which stands on
//! it. A unit test at a file's end may read through either.

use std::path::{Path, PathBuf};

/// The reading policy's modules, as the crate root re-exports them.
const READING: &[&str] = &["reading", "filter", "histogram", "ledger", "log", "merge", "roles", "select", "text"];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the source folder reads") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The first segments of the `crate::` paths that a line of code names.
fn crate_names(code: &str) -> Vec<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            names.extend(inner.split(',').map(|n| ident(n.trim())).filter(|n| !n.is_empty()));
        } else {
            names.push(ident(rest));
        }
    }
    names
}

/// What `file` names of the reading policy, as `line: name`, in its code before its unit tests
/// (a line `#[cfg(test)]` at the start of a line) and outside comments.
fn reading_names(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in source.lines().enumerate() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        for name in crate_names(code) {
            if READING.contains(&name.as_str()) {
                found.push(format!("{}: crate::{name}", n + 1));
            }
        }
    }
    found
}

#[test]
fn the_codec_never_names_the_reading_policy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/codec");
    let mut files = Vec::new();
    sources(&root, &mut files);
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
