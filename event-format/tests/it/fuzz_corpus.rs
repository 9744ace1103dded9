//! Replays the committed fuzz corpora and crash regressions (`fuzz/corpus/<target>`,
//! `fuzz/regressions/<target>`) through the bodies the cargo-fuzz targets run
//! (`event_format::fuzzing`), on stable and without libFuzzer: every input that once found
//! new coverage, or crashed a reader, must go through without a panic.

use std::path::{Path, PathBuf};

/// The files of `fuzz/{corpus,regressions}/<target>`, sorted; the corpus must not be empty.
fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files = Vec::new();
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join(target)) else { continue };
        files.extend(entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()));
    }
    files.sort();
    assert!(files.len() > 10, "fuzz/corpus/{target} holds the minimised corpus; found {} files", files.len());
    files
}

fn replay(target: &str, body: fn(&[u8])) {
    for path in inputs(target) {
        let bytes = std::fs::read(&path).unwrap();
        let outcome = std::panic::catch_unwind(|| body(&bytes));
        assert!(outcome.is_ok(), "{} fails `{target}`", path.display());
    }
}

#[test]
fn def_parse_corpus() {
    replay("def_parse", event_format::fuzzing::fuzz_def);
}

#[test]
fn decode_stream_corpus() {
    replay("decode_stream", event_format::fuzzing::fuzz_decode);
}

#[test]
fn filter_parse_corpus() {
    replay("filter_parse", event_format::fuzzing::fuzz_filter);
}
