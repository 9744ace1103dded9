//! `export --to ctf`: a CTF 1.8 trace directory that babeltrace2 (and Trace Compass) read.
//!
//! What the directory holds (layout, clock, event classes, time order, what `DIR` may be) is
//! stated once, in docs/OUTPUT.md ("CTF").

use super::{Said, Window};
use crate::export::Item;
use crate::log::{DumpError, Log};
use event_format::decode::{Desc, Event};
use event_format::ledger::Ledger;
use event_format::letter::Letter;
use event_format::wire::{ClockSource, Header, Order, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The largest packet, unless one event is larger.
const PACKET_MAX: usize = 64 << 10;
/// When the packets being built hold more than this together, they are all written.
const BUFFERED_MAX: usize = 16 << 20;
/// The packet header and context: magic, stream id, two timestamps, two sizes, thread id.
const PACKET_PREFIX_LEN: usize = 4 + 4 + 5 * 8;
/// CTF's packet magic.
const MAGIC: u32 = 0xC1FC_1FC1;
/// The first line of the metadata text.
const METADATA_MAGIC: &str = "/* CTF 1.8 */";

pub(crate) fn export(logs: &mut [Log], out: &Path, window: &mut Window) -> Result<ExitCode, DumpError> {
    if logs.len() != 1 {
        return Err(DumpError::new(
            "export --to ctf takes one log (a CTF trace has one clock); export each log to a directory of its own",
        ));
    }
    let shown = out.display().to_string();
    prepare_dir(out)?;
    let header = logs[0].header().clone();
    let clock = clock_offset(&header).ok_or_else(|| {
        DumpError::new(format!("{}: its clock facts put the trace's origin out of CTF's range; the log's header is unusual, see `event-dump stats`", logs[0].path().display()))
    })?;
    let mut trace = Trace {
        dir: out.to_owned(),
        order: header.order,
        streams: BTreeMap::new(),
        buffered: 0,
        clamped: 0,
        builtins_seen: BTreeSet::new(),
        scratch: Vec::new(),
    };
    let result = read_into(&mut logs[0], &mut trace, window).and_then(|ledger| {
        trace.flush_all()?;
        let metadata = metadata(&header, logs[0].catalog(), &trace.builtins_seen, clock);
        fs::write(out.join("metadata"), metadata)?;
        Ok(ledger)
    });
    match result {
        Ok(ledger) => {
            let extra: Vec<String> = match trace.clamped {
                0 => Vec::new(),
                1 => vec!["1 event earlier than its thread's previous event was given that event's time".to_owned()],
                n => {
                    vec![format!("{n} events earlier than their thread's previous event were given that event's time")]
                }
            };
            Said::of([&ledger]).report("ctf", &extra, window);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            for stream in trace.streams.values() {
                let _ = fs::remove_file(&stream.path);
            }
            Err(DumpError::new(format!("{shown}: cannot write: {e}")))
        }
    }
}

/// Makes `dir` an empty directory: creates it, or empties an earlier export found there.
fn prepare_dir(dir: &Path) -> Result<(), DumpError> {
    let shown = dir.display();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return fs::create_dir_all(dir)
                .map_err(|e| DumpError::new(format!("{shown}: cannot create the directory: {e}")));
        }
        Err(_) if dir.exists() && !dir.is_dir() => {
            return Err(DumpError::new(format!(
                "{shown}: is not a directory; a CTF trace is a directory: give a new directory's name"
            )));
        }
        Err(e) => return Err(DumpError::new(format!("{shown}: cannot read the directory: {e}"))),
    };
    let mut ours = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| DumpError::new(format!("{shown}: cannot read the directory: {e}")))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if !is_file || (name != "metadata" && !name.starts_with("thread-")) {
            return Err(DumpError::new(format!(
                "{shown}: is not empty (it holds `{name}`); give a new directory, or an earlier CTF export to replace"
            )));
        }
        ours.push(entry.path());
    }
    if !ours.is_empty() {
        let metadata = fs::read(dir.join("metadata")).unwrap_or_default();
        if !metadata.starts_with(METADATA_MAGIC.as_bytes()) {
            return Err(DumpError::new(format!(
                "{shown}: is not empty and is not an earlier CTF export; give a new directory"
            )));
        }
        for path in ours {
            fs::remove_file(&path)
                .map_err(|e| DumpError::new(format!("{}: cannot remove the earlier export: {e}", path.display())))?;
        }
    }
    Ok(())
}

/// The clock's `(offset_s, offset)`: tick 0 of the log in seconds and ticks since the Unix
/// epoch, from the header's (counter, wall time) pair; `None` when out of range.
fn clock_offset(header: &Header) -> Option<(i64, u64)> {
    let clock = &header.clock;
    let freq = i128::from(clock.ticks_per_second.max(1));
    // Ticks from the epoch to tick 0: the wall time in ticks, less the counter.
    let cycles = (i128::from(clock.ref_wall_ns) * freq).div_euclid(1_000_000_000) - i128::from(clock.ref_ticks);
    let seconds = i64::try_from(cycles.div_euclid(freq)).ok()?;
    let ticks = u64::try_from(cycles.rem_euclid(freq)).ok()?;
    Some((seconds, ticks))
}

/// One thread's stream: the packet being built and where it goes.
#[derive(Debug)]
struct Stream {
    path: PathBuf,
    thread: u64,
    /// The packet: its header and context (filled when it is written), then events.
    packet: Vec<u8>,
    /// The time of the packet's first event.
    first: u64,
    /// The time of the stream's latest event (in the packet or written).
    last: Option<u64>,
}

#[derive(Debug)]
struct Trace {
    dir: PathBuf,
    order: Order,
    streams: BTreeMap<u64, Stream>,
    /// Bytes in the packets being built.
    buffered: usize,
    /// Events given their predecessor's time.
    clamped: u64,
    /// Built-in event codes that occurred: they get an event class.
    builtins_seen: BTreeSet<u16>,
    /// The event being encoded.
    scratch: Vec<u8>,
}

fn put16(order: Order, out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&match order {
        Order::Little => v.to_le_bytes(),
        Order::Big => v.to_be_bytes(),
    });
}

fn put32(order: Order, out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&match order {
        Order::Little => v.to_le_bytes(),
        Order::Big => v.to_be_bytes(),
    });
}

fn put64(order: Order, out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&match order {
        Order::Little => v.to_le_bytes(),
        Order::Big => v.to_be_bytes(),
    });
}

/// Appends `event` (its header and payload) to `out`.
fn encode_event(order: Order, out: &mut Vec<u8>, event: &Event<'_>, time: u64) {
    put16(order, out, class_id(event.desc));
    put64(order, out, time);
    for value in event.values() {
        match value {
            Value::Pointer(v) | Value::Address(v) | Value::Word(v) => put64(order, out, v),
            Value::Unsigned(v) => put32(order, out, v),
            Value::Signed(v) => put64(order, out, v as u64),
            Value::Double(v) => put64(order, out, v.to_bits()),
            Value::Bool(v) => out.push(u8::from(v)),
            Value::Str(text) => {
                let text = String::from_utf8_lossy(text.bytes);
                if text.contains('\0') {
                    out.extend_from_slice(text.replace('\0', "\u{FFFD}").as_bytes());
                } else {
                    out.extend_from_slice(text.as_bytes());
                }
                out.push(0);
            }
        }
    }
}

impl Trace {
    fn add(&mut self, event: &Event<'_>) -> io::Result<()> {
        if event.desc.is_builtin() {
            self.builtins_seen.insert(event.desc.code);
        }
        let order = self.order;
        let dir = &self.dir;
        let stream = self.streams.entry(event.thread).or_insert_with(|| Stream {
            path: dir.join(format!("thread-{}", event.thread)),
            thread: event.thread,
            packet: Vec::new(),
            first: 0,
            last: None,
        });
        let time = stream.last.map_or(event.time, |last| event.time.max(last));
        if time != event.time {
            self.clamped += 1;
        }
        self.scratch.clear();
        encode_event(order, &mut self.scratch, event, time);
        let before = stream.packet.len();
        if before > PACKET_PREFIX_LEN && before + self.scratch.len() > PACKET_MAX {
            // This packet is full: it ends with the previous event; this one starts the next.
            write_packet(order, stream)?;
        }
        if stream.packet.is_empty() {
            stream.packet.resize(PACKET_PREFIX_LEN, 0);
            stream.first = time;
        }
        stream.packet.extend_from_slice(&self.scratch);
        stream.last = Some(time);
        self.buffered = self.buffered - before + stream.packet.len();
        if self.buffered > BUFFERED_MAX {
            self.flush_all()?;
        }
        Ok(())
    }

    /// Writes every packet being built.
    fn flush_all(&mut self) -> io::Result<()> {
        for stream in self.streams.values_mut() {
            if stream.packet.len() > PACKET_PREFIX_LEN {
                write_packet(self.order, stream)?;
            }
        }
        self.buffered = 0;
        Ok(())
    }
}

/// Fills the packet's header and context, appends it to its stream file and empties it.
fn write_packet(order: Order, stream: &mut Stream) -> io::Result<()> {
    let end = stream.last.unwrap_or(stream.first);
    let len = stream.packet.len();
    let mut prefix = Vec::with_capacity(PACKET_PREFIX_LEN);
    put32(order, &mut prefix, MAGIC);
    put32(order, &mut prefix, 0);
    put64(order, &mut prefix, stream.first);
    put64(order, &mut prefix, end);
    put64(order, &mut prefix, len as u64 * 8);
    put64(order, &mut prefix, len as u64 * 8);
    put64(order, &mut prefix, stream.thread);
    stream.packet[..PACKET_PREFIX_LEN].copy_from_slice(&prefix);
    let mut file = OpenOptions::new().create(true).append(true).open(&stream.path)?;
    file.write_all(&stream.packet)?;
    stream.packet.clear();
    Ok(())
}

/// Reads the log through the merge and adds each event the window selects to its thread's
/// stream; the log's ledger.
fn read_into(log: &mut Log, trace: &mut Trace, window: &mut Window) -> io::Result<Ledger> {
    let mut ledgers = super::merge_all(std::slice::from_mut(log), "exported", |Item { file, event }| {
        if window.keeps(file, &event) { trace.add(&event) } else { Ok(()) }
    })?;
    Ok(ledgers.pop().unwrap_or_else(|| log.ledger()))
}

/// `text` as a TSDL string literal: printable ASCII, `"` and `\` escaped, anything else `?`.
fn tsdl_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('?'),
        }
    }
    out.push('"');
    out
}

/// The TSDL type of a letter (aliases declared in the metadata's preamble).
fn tsdl_type(letter: Letter) -> &'static str {
    match letter {
        Letter::Pointer | Letter::Address => "hex64_t",
        Letter::Word => "uint64_t",
        Letter::Unsigned => "uint32_t",
        Letter::Signed => "int64_t",
        Letter::Double => "double_t",
        Letter::Bool => "uint8_t",
        Letter::String => "string",
    }
}

/// The metadata text: types, trace, environment, clock, stream and one event class per
/// event of the schema and per built-in event in `builtins`.
fn metadata(
    header: &Header,
    catalog: &event_format::decode::Catalog,
    builtins: &BTreeSet<u16>,
    (offset_s, offset): (i64, u64),
) -> String {
    let mut m = String::new();
    let producer = &header.producer;
    let clock = &header.clock;
    let order = match header.order {
        Order::Little => "le",
        Order::Big => "be",
    };
    let _ = writeln!(m, "{METADATA_MAGIC}");
    let _ = writeln!(
        m,
        "/* Written by event-dump {} from an event stream of format {}. */",
        env!("CARGO_PKG_VERSION"),
        header.format
    );
    m.push_str(concat!(
        "\n",
        "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n",
        "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n",
        "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n",
        "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n",
        "typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n",
        "typealias integer { size = 64; align = 8; signed = false; base = 16; } := hex64_t;\n",
        "typealias floating_point { exp_dig = 11; mant_dig = 53; align = 8; } := double_t;\n",
        "\n",
    ));
    let _ = writeln!(m, "trace {{\n\tmajor = 1;\n\tminor = 8;\n\tbyte_order = {order};");
    m.push_str("\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint32_t stream_id;\n\t};\n};\n\n");
    m.push_str("env {\n\ttracer_name = \"event-dump\";\n");
    let _ = writeln!(m, "\tprogram = {};", tsdl_string(&producer.program));
    // Only when the header records it (format 2.0.1). Not LTTng's `hostname`, which
    // babeltrace2's text output writes before every event.
    if !producer.host.is_empty() {
        let _ = writeln!(m, "\thost = {};", tsdl_string(&producer.host));
    }
    // The recording's labels (format 2.1.0): `service`, then each as `label_KEY` (the key's
    // characters that an identifier cannot hold made `_`).
    if let Some(service) = header.properties.label("service") {
        let _ = writeln!(m, "\tservice = {};", tsdl_string(service));
    }
    let mut keys = std::collections::BTreeSet::new();
    for (key, value) in &header.properties.labels {
        let key: String = key.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        // Two keys that read the same once made identifiers (`a.b`, `a_b`): the first.
        if keys.insert(key.clone()) {
            let _ = writeln!(m, "\tlabel_{key} = {};", tsdl_string(value));
        }
    }
    match i64::try_from(producer.pid) {
        Ok(pid) => {
            let _ = writeln!(m, "\tpid = {pid};");
        }
        Err(_) => {
            let _ = writeln!(m, "\tpid = \"{}\";", producer.pid);
        }
    }
    let _ = writeln!(m, "\tarch = {};\n\tos = {};", tsdl_string(&producer.arch), tsdl_string(&producer.os));
    let _ = writeln!(
        m,
        "\tevent_set = \"{}\";\n\tclock_source = {};\n}};\n",
        super::set_versions(header),
        tsdl_string(&clock.source.name())
    );
    let absolute = !matches!(clock.source, ClockSource::Deterministic);
    let _ = writeln!(
        m,
        "clock {{\n\tname = event_clock;\n\tdescription = {};\n\tfreq = {};\n\tprecision = 1;\n\toffset_s = {offset_s};\n\toffset = {offset};\n\tabsolute = {absolute};\n}};\n",
        tsdl_string(&format!("the producer's {} clock", clock.source.name())),
        clock.ticks_per_second.max(1)
    );
    m.push_str(
        "typealias integer { size = 64; align = 8; signed = false; map = clock.event_clock.value; } := clock64_t;\n\n",
    );
    m.push_str(concat!(
        "stream {\n",
        "\tid = 0;\n",
        "\tpacket.context := struct {\n",
        "\t\tclock64_t timestamp_begin;\n",
        "\t\tclock64_t timestamp_end;\n",
        "\t\tuint64_t content_size;\n",
        "\t\tuint64_t packet_size;\n",
        "\t\tuint64_t thread_id;\n",
        "\t};\n",
        "\tevent.header := struct {\n",
        "\t\tuint16_t id;\n",
        "\t\tclock64_t timestamp;\n",
        "\t};\n",
        "};\n",
    ));
    for desc in catalog.iter().filter(|d| !d.is_builtin() || builtins.contains(&d.code)) {
        event_class(&mut m, desc);
    }
    m
}

/// The id of `desc`'s event class: its own code, or its wire code when the log holds more
/// than one set (whose own codes may repeat).
fn class_id(desc: &Desc) -> u16 {
    if desc.qualified { desc.wire } else { desc.code }
}

fn event_class(m: &mut String, desc: &Desc) {
    // `set:Kind:Name` when the log holds more than one set, as the selection language names it.
    let set = if desc.qualified { format!("{}:", desc.set) } else { String::new() };
    let _ = write!(
        m,
        "\nevent {{\n\tname = \"{set}{}:{}\";\n\tid = {};\n\tstream_id = 0;\n\tfields := struct {{\n",
        desc.kind_name,
        desc.name,
        class_id(desc)
    );
    let mut names = BTreeSet::new();
    for (i, (letter, param)) in desc.format.iter().zip(&desc.params).enumerate() {
        // A parameter name used twice (the schema forbids it) still makes a valid struct.
        let name = if names.insert(param.as_str()) { format!("_{param}") } else { format!("_{param}_{i}") };
        let _ = writeln!(m, "\t\t{} {name};", tsdl_type(*letter));
    }
    m.push_str("\t};\n};\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_earlier_than_its_predecessor_gets_its_time() {
        let dir = std::env::temp_dir().join(format!("ctf-clamp-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let desc = Desc {
            code: 0x10,
            wire: 0x10,
            set: String::new(),
            qualified: false,
            name: "Tick".into(),
            kind_name: "K".into(),
            kind: Some(0),
            format: vec![],
            params: vec![],
            strings: false,
        };
        let mut trace = Trace {
            dir: dir.clone(),
            order: Order::Little,
            streams: BTreeMap::new(),
            buffered: 0,
            clamped: 0,
            builtins_seen: BTreeSet::new(),
            scratch: Vec::new(),
        };
        for time in [100, 50, 200] {
            trace.add(&Event { desc: &desc, time, thread: 3, args: &[], order: Order::Little }).unwrap();
        }
        trace.flush_all().unwrap();
        assert_eq!(trace.clamped, 1);
        let bytes = fs::read(dir.join("thread-3")).unwrap();
        let _ = fs::remove_dir_all(&dir);
        // One packet: begin 100, end 200; events of 10 bytes (id, timestamp) after the prefix.
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        assert_eq!((u64_at(8), u64_at(16)), (100, 200));
        assert_eq!(bytes.len(), PACKET_PREFIX_LEN + 3 * 10);
        let times: Vec<u64> = (0..3).map(|i| u64_at(PACKET_PREFIX_LEN + i * 10 + 2)).collect();
        assert_eq!(times, [100, 100, 200]);
    }
}
