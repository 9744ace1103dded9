//! Placeholder: the sqlite export is being written (issue 6); it refuses until then.

use crate::log::{DumpError, Log};
use std::path::Path;
use std::process::ExitCode;

pub(crate) fn export(_logs: &mut [Log], _out: &Path) -> Result<ExitCode, DumpError> {
    Err(DumpError::new("export --to sqlite: not available in this build yet"))
}
