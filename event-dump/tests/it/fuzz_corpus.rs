//! Replays the committed `filter_parse` fuzz corpus and crash regressions
//! (`fuzz/corpus/filter_parse`, `fuzz/regressions/filter_parse`) through the body the
//! cargo-fuzz target runs (`event_dump::fuzzing::fuzz_filter`), on stable and without
//! libFuzzer.

use std::path::Path;

#[test]
fn filter_parse_corpus() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files = Vec::new();
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join("filter_parse")) else { continue };
        files.extend(entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()));
    }
    files.sort();
    assert!(files.len() > 10, "fuzz/corpus/filter_parse holds the minimised corpus; found {} files", files.len());
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let outcome = std::panic::catch_unwind(|| event_dump::fuzzing::fuzz_filter(&bytes));
        assert!(outcome.is_ok(), "{} fails `filter_parse`", path.display());
    }
}
