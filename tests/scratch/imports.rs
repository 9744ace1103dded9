//! A crate's source read for its imports, one reader for the tests that hold a crate's modules
//! to their layers (event-format's `layers`, event-runtime's `floors`): its `.rs` files, their
//! code lines (comments and unit tests left out) and the `crate::` names each line uses.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted.
pub fn sources(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("the source folder reads") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    files
}

/// The first segments of the `crate::` paths that `code` names (one line, comments cut off):
/// `crate::emit::session` gives `emit`, `crate::{Policy, Recorder}` gives both names.
pub fn crate_names(code: &str) -> Vec<String> {
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

/// The code lines of a source file with their numbers, without comments and without its
/// unit tests (a test may reach the crate through any of its faces): the `mod tests` that a
/// `#[cfg(...test...)]` opens ends the file's code.
pub fn code_lines(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut code = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(") && trimmed.contains("test") {
            let next = lines.get(i + 1).map_or("", |l| l.trim_start());
            if next.starts_with("mod tests") {
                break;
            }
        }
        if trimmed.starts_with("//") {
            continue;
        }
        code.push((i + 1, line.split(" // ").next().unwrap_or(line)));
    }
    code
}
