//! The Parquet dataset's layout and naming: the marker and lock files, the logs' ids, the
//! `date=` partitions, the tables' names, and reading what a dataset already holds (its
//! logs and its tables' event types).

use super::errors::{Result, io_error};
use crate::log::{DumpError, Log};
use event_format::decode::Desc;
use event_format::letter;
use parquet::file::reader::{FileReader, SerializedFileReader};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

/// The layout version written into the marker file. A change that an older exporter would
/// misread bumps it; an exporter refuses a dataset of another layout. Layout 2: files named
/// by recording id in `date=` partitions (layout 1 numbered logs and files per run).
pub(super) const LAYOUT_VERSION: u32 = 2;

/// The file that marks a directory as a dataset of this exporter.
pub(super) const MARKER: &str = "_event-dump";

/// The lock file of a run.
pub(super) const LOCK: &str = "_event-dump.lock";

/// Key-value metadata: what an event table's file holds.
pub(super) const KEY_EVENT: &str = "event-dump.event";

/// Key-value metadata of a `logs` file: the log's recording id and size in bytes, `id size`.
pub(super) const KEY_LOG: &str = "event-dump.log";

/// The logs to export, a recording of segments as its segments, each opened alone: each is a
/// log of the dataset, named by its recording id and its index (`id_of`), so that a recording
/// exported whole and one exported a sealed segment at a time give the same files.
pub(super) fn one_per_segment(logs: Vec<Log>) -> Result<Vec<Log>> {
    let mut each = Vec::with_capacity(logs.len());
    for log in logs {
        if log.segments().is_empty() {
            each.push(log);
            continue;
        }
        let files: Vec<PathBuf> = log.files().into_iter().map(Path::to_path_buf).collect();
        for file in files {
            let one = event_format::log::open(&file, event_format::log::OpenOptions::default())
                .map_err(|e| DumpError::new(e.to_string()))?;
            each.push(one);
        }
    }
    Ok(each)
}

/// A log's name in the dataset: its recording id (32 hex digits), and for a segment, `-` and
/// its index in six digits (`0f1e...f0-000003`).
pub(super) fn id_of(log: &Log) -> String {
    let id = log.recording_id().to_hex();
    match log.header().properties.segment {
        Some(segment) => format!("{id}-{:06}", segment.index),
        None => id,
    }
}

/// Microseconds in a day.
pub(super) const DAY_MICROS: i64 = 86_400_000_000;

/// `2026-11-26` for day 20783 since the Unix epoch (the proleptic Gregorian calendar, UTC).
/// Days before year 1 or after year 9999 are those years' ends, which every engine's DATE
/// reads.
fn date(days: i64) -> String {
    let (year, month, day) = event_format::text::civil_date(days.clamp(-719_162, 2_932_896));
    format!("{year:04}-{month:02}-{day:02}")
}

/// The partition directory name of day `days`.
pub(super) fn partition(days: i64) -> String {
    format!("date={}", date(days))
}

/// The day (since the Unix epoch, UTC) of `micros` since the epoch.
pub(super) fn day_of(micros: i64) -> i64 {
    micros.div_euclid(DAY_MICROS)
}

/// The key-value metadata `key` of the Parquet file at `path`.
fn file_key(path: &Path, key: &str) -> Result<Option<String>> {
    let file = File::open(path).map_err(|e| io_error(path, &e))?;
    let reader = SerializedFileReader::new(file).map_err(|e| {
        DumpError::new(format!(
            "{}: not a Parquet file of this exporter ({e}); remove it or give a new -o",
            path.display()
        ))
    })?;
    let metadata = reader.metadata().file_metadata();
    Ok(metadata.key_value_metadata().and_then(|kv| kv.iter().find(|k| k.key == key)).and_then(|k| k.value.clone()))
}

/// The `.parquet` files (not hidden) in the partitions of table directory `dir`, sorted.
fn table_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(partitions) = fs::read_dir(dir) else { return files };
    for p in partitions.filter_map(std::result::Result::ok) {
        let Ok(entries) = fs::read_dir(p.path()) else { continue };
        for e in entries.filter_map(std::result::Result::ok) {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".parquet") && !name.starts_with('.') {
                files.push(e.path());
            }
        }
    }
    files.sort();
    files
}

/// Checks that `out` is empty or a dataset of this layout, and lists its logs: recording id
/// (hex) -> its `logs` file.
pub(super) fn read_dataset(out: &Path) -> Result<HashMap<String, PathBuf>> {
    let marker = out.join(MARKER);
    let shown = out.display();
    match fs::read_to_string(&marker) {
        Ok(text) => {
            let layout: Option<u32> = text.split_whitespace().last().and_then(|v| v.parse().ok());
            match layout {
                Some(LAYOUT_VERSION) => {}
                Some(l) if l < LAYOUT_VERSION => {
                    return Err(DumpError::new(format!(
                        "{shown}: a dataset of layout {l}, which numbered logs per dataset (this event-dump writes layout {LAYOUT_VERSION}, files named by recording id); export into a new -o directory"
                    )));
                }
                Some(l) => {
                    return Err(DumpError::new(format!(
                        "{shown}: written by a newer event-dump (dataset layout {l}, this one writes {LAYOUT_VERSION}); use that event-dump or give a new -o directory"
                    )));
                }
                None => {
                    return Err(DumpError::new(format!(
                        "{}: not a marker of this exporter; give a new -o directory",
                        marker.display()
                    )));
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let others = fs::read_dir(out)
                .map_err(|e| io_error(out, &e))?
                .filter_map(std::result::Result::ok)
                .any(|entry| entry.file_name() != LOCK);
            if others {
                return Err(DumpError::new(format!(
                    "{shown}: a directory that event-dump did not write (no {MARKER} in it); give an empty or new -o directory"
                )));
            }
            return Ok(HashMap::new());
        }
        Err(e) => return Err(io_error(&marker, &e)),
    }
    let mut logs = HashMap::new();
    for path in table_files(&out.join("logs")) {
        if let Some(id) = path.file_stem().and_then(|s| s.to_str()) {
            logs.insert(id.to_owned(), path.clone());
        }
    }
    Ok(logs)
}

/// The directory name of the table of event type `desc`: its name qualified by its kind,
/// `<Kind>.<Event>`, and by its set, `<set>.<Kind>.<Event>`, when the log holds more than
/// one set ([`Desc::qualified`], as `print` shows `set:Kind.Name`). `None` for a name that
/// is not a plain identifier (a hostile header's), which no directory gets.
///
/// SET QUALIFIER: this is the one place that decides it. A set recorded alone in one log and
/// beside other sets in another lands in two tables (`Kind.Event` and `set.Kind.Event`), as
/// the other outputs name its events differently too.
pub(super) fn table_name(desc: &Desc) -> Option<String> {
    let safe = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !(safe(&desc.kind_name) && safe(&desc.name)) {
        return None;
    }
    if desc.qualified {
        // Set names may hold `-` (`storage-v2`), which a directory name and every engine's
        // quoted table path take as it is.
        let set_safe =
            !desc.set.is_empty() && desc.set.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        return set_safe.then(|| format!("{}.{}.{}", desc.set, desc.kind_name, desc.name));
    }
    Some(format!("{}.{}", desc.kind_name, desc.name))
}

/// What must agree between the logs that share a table.
pub(super) fn event_meaning(desc: &Desc) -> String {
    format!(
        "code {:#06x}, kind {}, format {}, parameters ({})",
        desc.code,
        desc.kind_name,
        letter::format_string(&desc.format),
        desc.params.join(", ")
    )
}

/// The recording id and size in bytes that a `logs` file says it holds.
pub(super) fn logged(path: &Path) -> Result<Option<(String, u64)>> {
    let value = file_key(path, KEY_LOG)?;
    Ok(value.and_then(|v| {
        let (id, size) = v.split_once(' ')?;
        Some((id.to_owned(), size.parse().ok()?))
    }))
}

/// The meaning recorded in a file of table `name`, if the dataset has one.
pub(super) fn existing_meaning(out: &Path, name: &str) -> Result<Option<String>> {
    match table_files(&out.join(name)).first() {
        Some(path) => file_key(path, KEY_EVENT),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_dates_of_the_gregorian_calendar() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(-1), "1969-12-31");
        assert_eq!(date(20_418), "2025-11-26");
        assert_eq!(date(20_783), "2026-11-26");
        assert_eq!(date(11_016), "2000-02-29");
        assert_eq!(date(i64::MIN), "0001-01-01");
        assert_eq!(date(i64::MAX), "9999-12-31");
        assert_eq!(day_of(-1), -1, "a microsecond before 1970 is on 1969-12-31");
        assert_eq!(day_of(DAY_MICROS), 1);
        assert_eq!(partition(20_783), "date=2026-11-26");
    }
}
