//! The Parquet export's errors: an I/O or Parquet error of a path as the run reports it
//! (with what to do, and that the dataset is as it was).

use crate::log::DumpError;
use parquet::errors::ParquetError;
use std::io;
use std::path::Path;

pub(super) type Result<T> = std::result::Result<T, DumpError>;

pub(super) fn io_error(path: &Path, e: &io::Error) -> DumpError {
    let hint = match e.kind() {
        io::ErrorKind::PermissionDenied => "; give a directory you can write",
        io::ErrorKind::StorageFull => "; free some space and run again",
        _ => "",
    };
    DumpError::new(format!("{}: {e}{hint}; the dataset is as it was", path.display()))
}

pub(super) fn parquet_error(path: &Path, e: &ParquetError) -> DumpError {
    match e {
        ParquetError::External(inner) => match inner.downcast_ref::<io::Error>() {
            Some(io) => io_error(path, io),
            None => DumpError::new(format!("{}: {e}; the dataset is as it was", path.display())),
        },
        _ => DumpError::new(format!("{}: {e}; the dataset is as it was", path.display())),
    }
}
