//! The recorder's floors: every source file of event-runtime stands on one floor (the ground
//! modules, a folder by role, or the crate root's faces) and imports only from its own floor
//! and the floors below it (README, "Contributing").

use std::path::Path;
use test_scratch::imports::{code_lines, crate_names, sources};

/// The floors, from the ground up, each named by the first segment of its modules' paths
/// (`crate::emit::buffer` stands on `emit`). The crate root's own items (`crate::Recorder`,
/// `crate::flush`) are the top floor's, with the generated code's bridge and the typed reader.
const FLOORS: &[&[&str]] = &[
    &["clock", "config", "event_set", "files", "locks", "machine", "sync"],
    &["blocks"],
    &["incident"],
    &["sinks"],
    &["emit"],
    // The `tracing` bridge records through the thread buffers; the recorder names its set.
    &["tracing_bridge"],
    &["writer"],
    &["setup"],
    &["lib", "__private", "read"],
];

/// The floor of a module path's first segment; a name that no floor lists is an item of the
/// crate root, on the top floor.
fn floor_of(name: &str) -> usize {
    FLOORS.iter().position(|floor| floor.contains(&name)).unwrap_or(FLOORS.len() - 1)
}

#[test]
fn every_runtime_module_imports_only_its_own_floor_and_those_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = sources(&src);
    assert!(files.len() > 30, "the sources were found: {files:?}");
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap().as_os_str().to_string_lossy();
        let first = first.trim_end_matches(".rs");
        let Some(own) = FLOORS.iter().position(|floor| floor.contains(&first)) else {
            wrong.push(format!("{}: stands on no floor (FLOORS lists none of it)", relative.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for (line, code) in code_lines(&text) {
            for name in crate_names(code) {
                let floor = floor_of(&name);
                if floor > own {
                    wrong.push(format!(
                        "{}:{line}: `crate::{name}` is on floor {floor} ({:?}), above its own {own} ({:?})",
                        relative.display(),
                        FLOORS[floor],
                        FLOORS[own]
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "imports that run back up a floor:\n{}", wrong.join("\n"));
}

#[test]
fn the_floor_check_reads_paths_and_groups() {
    assert_eq!(crate_names("use crate::emit::session::{self, Shared};"), ["emit"]);
    assert_eq!(crate_names("use crate::{Policy, Recorder};"), ["Policy", "Recorder"]);
    assert_eq!(crate_names("if crate::emit::divert::any() & crate::clock::x() {"), ["emit", "clock"]);
    assert_eq!(floor_of("Recorder"), FLOORS.len() - 1, "a root item is the faces'");
    assert!(floor_of("emit") < floor_of("writer"));
    let text =
        "use crate::emit::buffer;\n// crate::setup::recorder\n#[cfg(test)]\nmod tests {\n    use crate::Recorder;\n}\n";
    let lines: Vec<&str> = code_lines(text).into_iter().map(|(_, l)| l).collect();
    assert_eq!(lines, ["use crate::emit::buffer;"], "comments and unit tests are not the module's imports");
}
