//! A viewer's trace file (Chrome JSON, Perfetto protobuf), written whole or not at all: under
//! the name asked for with `.partial` added, renamed when complete, removed on a failure.

use crate::log::DumpError;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

/// Writes the trace `out` with `write`, which returns what the caller reports; `example` is
/// a file name the messages suggest (`trace.json`).
pub(crate) fn write_whole<R>(
    out: &Path,
    example: &str,
    write: impl FnOnce(BufWriter<File>) -> io::Result<R>,
) -> Result<R, DumpError> {
    let shown = out.display().to_string();
    if out.is_dir() {
        return Err(DumpError::new(format!(
            "{shown}: is a directory; give a file name for the trace, such as {example}"
        )));
    }
    let partial = partial_path(out, example)?;
    let file =
        File::create(&partial).map_err(|e| DumpError::new(format!("{}: cannot create: {e}", partial.display())))?;
    match write(BufWriter::with_capacity(1 << 16, file)) {
        Ok(result) => {
            std::fs::rename(&partial, out).map_err(|e| {
                let _ = std::fs::remove_file(&partial);
                DumpError::new(format!("{shown}: cannot write: {e}"))
            })?;
            Ok(result)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(DumpError::new(format!("{shown}: cannot write: {e}")))
        }
    }
}

/// `out` with `.partial` added: the trace is written there, then renamed, so that a failed
/// export never leaves half a trace under the name asked for.
fn partial_path(out: &Path, example: &str) -> Result<PathBuf, DumpError> {
    let Some(name) = out.file_name() else {
        return Err(DumpError::new(format!("{}: not a file name; give one such as {example}", out.display())));
    };
    let mut partial = name.to_os_string();
    partial.push(".partial");
    Ok(out.with_file_name(partial))
}
