//! The commit `event-dump --version` names (`EVENT_DUMP_COMMIT`): the packaged crate's
//! (`.cargo_vcs_info.json`, which `cargo package` writes and `cargo vendor` keeps), else the
//! git checkout's it is built in (`git rev-parse HEAD`); empty when neither tells (no git, a
//! source tarball), and `--version` says so. Never fails the build.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let commit = packaged(Path::new(&dir)).or_else(|| checkout(Path::new(&dir))).unwrap_or_default();
    println!("cargo:rustc-env=EVENT_DUMP_COMMIT={commit}");
}

/// The commit a packaged crate was made from: `"sha1": "..."` in `.cargo_vcs_info.json`.
fn packaged(dir: &Path) -> Option<String> {
    let info = dir.join(".cargo_vcs_info.json");
    let text = std::fs::read_to_string(&info).ok()?;
    println!("cargo:rerun-if-changed={}", info.display());
    let at = text.find("\"sha1\"")?;
    let rest = &text[at + 6..];
    let start = rest.find('"')? + 1;
    let len = rest[start..].find('"')?;
    short(&rest[start..start + len])
}

/// The commit checked out where this crate is built, when git tracks this crate there.
fn checkout(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git").current_dir(dir).args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    // Built again when HEAD moves (a commit, a checkout): git logs every move of HEAD.
    for path in ["HEAD", "logs/HEAD"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={}", dir.join(p).display());
        }
    }
    short(&git(&["rev-parse", "HEAD"])?)
}

/// The first 12 hex digits of a commit id, if it is one.
fn short(sha: &str) -> Option<String> {
    (sha.len() >= 12 && sha.bytes().all(|b| b.is_ascii_hexdigit())).then(|| sha[..12].to_owned())
}
