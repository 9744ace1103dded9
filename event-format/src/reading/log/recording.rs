//! Which logs the paths of a command line name (docs/FORMAT.md, "Reading segments").
//!
//! A file named is a log: a stream, a ring file or a pipe, `*.open` included. A directory
//! names the files in it, and a path whose file name holds `*` or `?` (a glob the shell did
//! not expand, `'trace.*.evt'`) the files of its directory that match; of these, files that
//! are not event logs (no stream or ring-file magic) are passed over, and files whose name
//! ends in `.open` (a segment not sealed) are read as the others when their writer is gone
//! (killed: it will not change again; the reader's [`OpenOptions::writer_alive`] tells),
//! else left out, unless no sealed segment of their recording is found (a live writer's
//! first segment is read as the stream it is).
//!
//! [`OpenOptions::writer_alive`]: super::OpenOptions::writer_alive Then the segments of one
//! recording (streams whose headers have the segment property and the same recording id) are
//! one log, in the order of their index, at the place of the first of them; every other file
//! is a log of its own, and so is a segment named alone (read as the stream it is). Files of several recordings given together are several logs, each
//! read as one, as several files are.

use super::{Kind, OpenError};
use crate::codec::decode::{DecodeOptions, Decoder};
use crate::codec::wire::{Header, HeaderError, RecordingId, Segment};
use crate::reading::select::glob;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The suffix of a segment its recorder is still writing.
pub const OPEN_SUFFIX: &str = ".open";

/// One segment file of a recording of segments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentFile {
    /// Its path.
    pub path: PathBuf,
    /// Its header's segment property.
    pub segment: Segment,
    /// Its length in bytes when it was found.
    pub len: u64,
    /// Its header's length: where its first block starts.
    pub header_len: u64,
}

/// What to open for one log.
#[derive(Debug)]
pub(super) enum Plan {
    /// A file, opened as it is (a stream, a ring file, a pipe).
    File(PathBuf),
    /// A recording of segments: the path it is shown by (the directory or glob it was found
    /// by, else its first segment's), its segments in order of index, and its first
    /// segment's header.
    Recording {
        shown: PathBuf,
        files: Vec<SegmentFile>,
        header: Box<Header>,
        left_open: Vec<PathBuf>,
        /// What later recordings' budgets removed of it (segments, events), as the newest of
        /// the headers found says (docs/FORMAT.md, "Earlier recordings").
        removed_later: (u64, u64),
        /// The earlier recordings the directory's budget removed wholly (recordings,
        /// segments, events), when this recording's segments say the most of them.
        earlier_gone: Option<(u64, u64, u64)>,
    },
}

/// A segment of a recording being gathered: its file, its header, the directory or glob it
/// was found by.
type Member = (SegmentFile, Header, Option<PathBuf>);

/// A file found, and how: named, or found in a directory or by a glob (`from`).
struct Found {
    path: PathBuf,
    from: Option<PathBuf>,
}

/// The logs `paths` name, in order; `alive` tells whether a `.open` segment's writer still
/// writes it (module docs).
pub(super) fn plan(
    paths: &[PathBuf],
    decode: DecodeOptions,
    alive: Option<fn(&Path) -> bool>,
) -> Result<Vec<Plan>, OpenError> {
    let (mut found, mut open) = (Vec::new(), Vec::new());
    for path in paths {
        expand(path, &mut found, &mut open)?;
    }
    // The `.open` segments a directory or glob found: a killed writer's are read as the
    // others; a live writer's are left out, by recording, and said by the readers.
    let mut left_open: BTreeMap<RecordingId, Vec<(PathBuf, PathBuf)>> = BTreeMap::new();
    // The directories and globs given, and whether a log was found by each.
    let mut searched: Vec<(PathBuf, bool)> = Vec::new();
    for f in open {
        if let Some(from) = &f.from
            && !searched.iter().any(|(p, _)| p == from)
        {
            searched.push((from.clone(), false));
        }
        if alive.is_some_and(|alive| !alive(&f.path)) {
            found.push(f);
            continue;
        }
        if let Ok(Peek::Segment { recording, .. }) = peek(&f.path, decode, true) {
            left_open.entry(recording).or_default().push((f.path, f.from.unwrap_or_default()));
        }
    }
    // Recording id -> its place in `plans` and its segments (with the header of each).
    let mut plans: Vec<Option<Plan>> = Vec::new();
    let mut recordings: BTreeMap<RecordingId, (usize, Vec<Member>)> = BTreeMap::new();
    for Found { path, from } in found {
        let peeked = peek(&path, decode, from.is_some())?;
        if let Some(from) = &from {
            let found_one = !matches!(peeked, Peek::NotALog);
            match searched.iter_mut().find(|(p, _)| p == from) {
                Some(entry) => entry.1 |= found_one,
                None => searched.push((from.clone(), found_one)),
            }
        }
        match peeked {
            Peek::NotALog => {}
            Peek::Other => plans.push(Some(Plan::File(path))),
            Peek::Segment { recording, segment, len, header_len, header } => {
                let file = SegmentFile { path, segment, len, header_len };
                let entry = recordings.entry(recording).or_insert_with(|| {
                    plans.push(None);
                    (plans.len() - 1, Vec::new())
                });
                entry.1.push((file, *header, from));
            }
        }
    }
    // A live writer's segments of a recording of which no sealed segment was found: when the
    // reader can tell a live writer (`alive`), each is read as the stream it is so far.
    if alive.is_some() {
        for (recording, paths) in std::mem::take(&mut left_open) {
            if recordings.contains_key(&recording) {
                left_open.insert(recording, paths);
                continue;
            }
            for (path, from) in paths {
                if let Some(entry) = searched.iter_mut().find(|(p, _)| *p == from) {
                    entry.1 = true;
                }
                plans.push(Some(Plan::File(path)));
            }
        }
    }
    if let Some((path, _)) = searched.iter().find(|(_, found)| !found) {
        return Err(OpenError::NoLog(path.clone()));
    }
    // What the segments found say of earlier recordings (docs/FORMAT.md, "Earlier
    // recordings"): per recording the most any says its budget removed of it, and the most
    // earlier recordings removed wholly.
    let mut later: BTreeMap<RecordingId, (u64, u64)> = BTreeMap::new();
    let mut gone: Option<(RecordingId, (u64, u64, u64))> = None;
    for (recording, (_, files)) in &recordings {
        for (_, header, _) in files {
            let Some(earlier) = &header.properties.earlier else { continue };
            for e in &earlier.partly {
                let entry = later.entry(e.recording).or_default();
                *entry = (entry.0.max(e.segments), entry.1.max(e.events));
            }
            let counts = (earlier.recordings_removed, earlier.segments_of_removed, earlier.events_of_removed);
            if counts.0 > 0 && gone.is_none_or(|(_, g)| counts > g) {
                gone = Some((*recording, counts));
            }
        }
    }
    for (recording, (at, mut files)) in recordings {
        // One segment named alone is read as the stream it is, without the accounting of a
        // recording (whose other segments were not asked for).
        if let [(file, _, None)] = &files[..] {
            plans[at] = Some(Plan::File(file.path.clone()));
            continue;
        }
        files.sort_by_key(|(f, _, _)| (f.segment.index, f.path.to_string_lossy().ends_with(OPEN_SUFFIX)));
        // A segment found both sealed and `.open` (its writer killed between the seal's link
        // and its unlink): the sealed name.
        files.dedup_by(|later, earlier| {
            later.0.segment.index == earlier.0.segment.index && later.0.path.to_string_lossy().ends_with(OPEN_SUFFIX)
        });
        for pair in files.windows(2) {
            let ((a, _, _), (b, _, _)) = (&pair[0], &pair[1]);
            if a.segment.index == b.segment.index {
                return Err(OpenError::Segments(format!(
                    "{} and {}: both are segment {} of recording {recording}; give one of them",
                    a.path.display(),
                    b.path.display(),
                    a.segment.index
                )));
            }
        }
        let first = &files[0];
        let shown = match &first.2 {
            Some(from) if files.iter().all(|f| f.2.as_ref() == Some(from)) => from.clone(),
            _ => first.0.path.clone(),
        };
        // Every segment's events are named by the first one's sets: they must be the same.
        let header = first.1.clone();
        if let Some((other, _, _)) = files.iter().find(|(_, h, _)| h.sets != header.sets) {
            return Err(OpenError::Segments(format!(
                "{}: its event sets differ from those of {}, an earlier segment of the same recording; read it apart",
                other.path.display(),
                first.0.path.display()
            )));
        }
        let files = files.into_iter().map(|(f, _, _)| f).collect();
        let left_open = left_open.remove(&recording).unwrap_or_default().into_iter().map(|(p, _)| p).collect();
        plans[at] = Some(Plan::Recording {
            shown,
            files,
            header: Box::new(header),
            left_open,
            removed_later: later.get(&recording).copied().unwrap_or_default(),
            earlier_gone: gone.filter(|(r, _)| *r == recording).map(|(_, g)| g),
        });
    }
    Ok(plans.into_iter().flatten().collect())
}

/// The files `path` names, onto `found`; the `.open` ones of a directory or glob, onto `open`.
fn expand(path: &Path, found: &mut Vec<Found>, open: &mut Vec<Found>) -> Result<(), OpenError> {
    let io_error = |error| OpenError::Io { path: path.to_owned(), error };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (dir, pattern) = match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => (path.to_owned(), None),
        Ok(_) => {
            found.push(Found { path: path.to_owned(), from: None });
            return Ok(());
        }
        Err(_) if glob::is_glob(&name) => {
            let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            (dir.to_owned(), Some(name))
        }
        Err(error) => return Err(io_error(error)),
    };
    let (mut names, mut opens) = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(&dir).map_err(|error| OpenError::Io { path: dir.clone(), error })? {
        let entry = entry.map_err(|error| OpenError::Io { path: dir.clone(), error })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let wanted = pattern.as_deref().is_none_or(|p| glob::matches(p, &name));
        let file = entry.file_type().is_ok_and(|t| t.is_file() || t.is_symlink());
        if wanted && file && !name.starts_with('.') {
            if name.ends_with(OPEN_SUFFIX) {
                opens.push(entry.path());
            } else {
                names.push(entry.path());
            }
        }
    }
    if names.is_empty() && opens.is_empty() {
        return Err(OpenError::NoLog(path.to_owned()));
    }
    names.sort();
    opens.sort();
    // Every directory and glob is searched (`plan`): one with only `.open` files too.
    found.extend(names.into_iter().map(|p| Found { path: p, from: Some(path.to_owned()) }));
    open.extend(opens.into_iter().map(|p| Found { path: p, from: Some(path.to_owned()) }));
    Ok(())
}

/// What a file is, by its first bytes and its header.
enum Peek {
    /// Found in a directory or by a glob, and not an event log: passed over.
    NotALog,
    /// A log of its own: a ring file, a pipe, a stream that is not a segment.
    Other,
    /// A segment of a recording.
    Segment { recording: RecordingId, segment: Segment, len: u64, header_len: u64, header: Box<Header> },
}

fn peek(path: &Path, decode: DecodeOptions, found: bool) -> Result<Peek, OpenError> {
    let io_error = |error| OpenError::Io { path: path.to_owned(), error };
    let meta = std::fs::metadata(path).map_err(io_error)?;
    if !meta.is_file() {
        // A pipe is read once, by the log that opens it.
        return Ok(Peek::Other);
    }
    let mut file = File::open(path).map_err(io_error)?;
    let mut magic = [0u8; 8];
    let got = super::read_up_to(&mut file, &mut magic).map_err(io_error)?;
    match super::kind_of(&magic[..got]) {
        Kind::Stream => {}
        Kind::Ring => return Ok(Peek::Other),
        _ => return Ok(if found { Peek::NotALog } else { Peek::Other }),
    }
    let rest = BufReader::with_capacity(1 << 16, (&magic[..]).chain(file));
    let (header, header_len) = match Decoder::with_options(rest, decode) {
        Ok(decoder) => (decoder.header().clone(), decoder.header_len()),
        // A damaged header is the opener's to report, as for any stream.
        Err(HeaderError::Io(error)) => return Err(io_error(error)),
        Err(_) => return Ok(Peek::Other),
    };
    match (header.properties.recording, header.properties.segment) {
        (Some(recording), Some(segment)) => {
            Ok(Peek::Segment { recording, segment, len: meta.len(), header_len, header: Box::new(header) })
        }
        _ => Ok(Peek::Other),
    }
}

/// A segment found in a directory, sealed or still being written (`*.open`): for a reader
/// that follows a recording live (`event-dump follow`) and looks for its next segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundSegment {
    /// Its path.
    pub path: PathBuf,
    /// Its recording's id.
    pub recording: RecordingId,
    /// Its header's segment property.
    pub segment: Segment,
    /// Whether its name says it is still being written (`*.open`).
    pub open: bool,
}

/// The segments in directory `dir`, sealed and `*.open` alike, by their headers (files that
/// are not segments, or whose header cannot be read yet, are passed over), in order of
/// recording id and index; of a segment found both open and sealed (renamed while the
/// directory was read), the sealed name.
pub fn segments_in(dir: &Path, options: super::OpenOptions) -> std::io::Result<Vec<FoundSegment>> {
    let decode = DecodeOptions { force: options.force };
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if let Ok(Peek::Segment { recording, segment, .. }) = peek(&entry.path(), decode, true) {
            found.push(FoundSegment { path: entry.path(), recording, segment, open: name.ends_with(OPEN_SUFFIX) });
        }
    }
    found.sort_by_key(|f| (f.recording.0, f.segment.index, f.open));
    found.dedup_by(|later, earlier| {
        later.recording == earlier.recording && later.segment.index == earlier.segment.index
    });
    Ok(found)
}

/// The segment at `path` (sealed, or `*.open` by its name), by its header; `None` when the
/// file is not a segment (or its header cannot be read yet).
pub fn segment_at(path: &Path, options: super::OpenOptions) -> Option<FoundSegment> {
    let decode = DecodeOptions { force: options.force };
    let open = path.file_name().is_some_and(|n| n.to_string_lossy().ends_with(OPEN_SUFFIX));
    match peek(path, decode, true) {
        Ok(Peek::Segment { recording, segment, .. }) => {
            Some(FoundSegment { path: path.to_owned(), recording, segment, open })
        }
        _ => None,
    }
}
