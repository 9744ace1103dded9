//! The varieties (MPS cool/hot/rash): event-runtime's default compiles every event in, `hot`
//! compiles out those whose `always` flag is FALSE, `rash` compiles out all; a compiled-out
//! event records nothing and evaluates no argument.
//!
//! Features unify within one cargo invocation, so each variety of tests/varieties is built by
//! a cargo of its own, into a target directory of its own.

use std::path::PathBuf;
use std::process::Command;

fn run_variety(features: &[&str]) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from).join("varieties");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(&root).args(["run", "--quiet", "--package", "event-varieties", "--target-dir"]).arg(&target);
    for feature in features {
        command.args(["--features", feature]);
    }
    let output = command.output().expect("cargo runs");
    assert!(output.status.success(), "{features:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("UTF-8").trim().to_owned()
}

#[test]
fn each_variety_records_what_it_keeps_and_evaluates_nothing_else() {
    assert_eq!(
        run_variety(&[]),
        r#"recorded=["ArenaCreate", "ObjectAlloc"] evaluated=["ArenaCreate", "ObjectAlloc"]"#,
        "the default keeps every event"
    );
    assert_eq!(
        run_variety(&["event-runtime/hot"]),
        r#"recorded=["ArenaCreate"] evaluated=["ArenaCreate"]"#,
        "hot keeps only always events"
    );
    assert_eq!(run_variety(&["event-runtime/rash"]), r#"recorded=[] evaluated=[]"#, "rash keeps none");
}
