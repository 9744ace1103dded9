//! The command line: what each subcommand takes, its help and its examples (clap's derive),
//! and the one check clap cannot make: a first word that is neither a subcommand nor a log
//! but a subcommand mistyped ([`mistyped_subcommand`]). Nothing here reads a log;
//! [`crate::run`] hands each parsed command to its module.
//!
//! The values the options take (`--format`, `--sort`, `--weight`, `--to`) are defined here
//! too, and the commands import them: the command line imports no command.

use crate::color::ColorChoice;
use crate::render::Format;
use clap::{Args, CommandFactory, Parser, Subcommand};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// `event-dump -V`: the version and the commit it was built from (build.rs).
fn version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| match env!("EVENT_DUMP_COMMIT") {
        "" => format!("{} (commit unknown: not built from a git checkout or a package)", env!("CARGO_PKG_VERSION")),
        commit => format!("{} (commit {commit})", env!("CARGO_PKG_VERSION")),
    })
}

/// `event-dump --version`: [`version`], and what it reads: the stream formats and the ring
/// file layouts (docs/FORMAT.md, "Versions", "Ring layout versions").
fn long_version() -> &'static str {
    use event_format::ring::RING_VERSION;
    use event_format::wire::{FORMAT_VERSION, LAST_V1};
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{}\nreads stream formats {}.0 to {}.{} and {}.0 to {}.{} (newer minors too; a newer median with --force)\nreads ring file layouts {}.0 to {}.{} (newer minors too; a newer median with --force)",
            version(),
            LAST_V1.major,
            LAST_V1.major,
            LAST_V1.median,
            FORMAT_VERSION.major,
            FORMAT_VERSION.major,
            FORMAT_VERSION.median,
            RING_VERSION.major,
            RING_VERSION.major,
            RING_VERSION.median,
        )
    })
}

/// Reads event logs: streams written by event-runtime and its ring files.
#[derive(Parser, Debug)]
#[command(
    name = "event-dump",
    version = version(),
    long_version = long_version(),
    about,
    args_conflicts_with_subcommands = true
)]
#[command(
    after_help = "Examples:\n  event-dump trace.evt                      every event, threads merged by time\n  event-dump stats trace.evt                counts per event, kind and thread\n  event-dump check trace.evt                exit code 0 only when the log is whole\n  event-dump follow program.ring            live, while the program runs\n  event-dump top program.ring               events/s by kind, event and thread, live"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    #[command(flatten)]
    pub(crate) print: PrintArgs,
    /// When to color the output: `auto` colors on a terminal unless NO_COLOR is set;
    /// `never` writes exactly the plain text.
    #[arg(long, value_name = "WHEN", value_enum, global = true, default_value_t = ColorChoice::Auto)]
    pub(crate) color: ColorChoice,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// One line per event, threads (and logs) merged by time (the default).
    #[command(
        after_help = "Examples:\n  event-dump print trace.evt --kind Pool,Seg --limit 20\n  event-dump print trace.evt --filter 'size >= 4096 && name ~ \"Object*\"'\n  event-dump print a.evt b.evt --format json     two processes, merged on wall-clock time"
    )]
    Print(PrintArgs),
    /// Counts per event, kind and thread; time span, rates, bytes per event, losses.
    #[command(
        after_help = "Examples:\n  event-dump stats trace.evt\n  event-dump stats trace.evt --kind Pool --thread compactor --since 1.5"
    )]
    Stats(StatsArgs),
    /// The embedded schema as events.def text; with --against, how it differs.
    #[command(
        after_help = "Examples:\n  event-dump schema trace.evt > events.def\n  event-dump schema trace.evt --against events.def"
    )]
    Schema(SchemaArgs),
    /// Integrity: damaged blocks, sequence gaps, drops, unknown codes, and whether the
    /// recording stopped cleanly. Exit code 0 only when the log is whole; the oldest blocks a
    /// ring overwrote are reported in one line and are not a problem (unless --strict).
    #[command(after_help = "Example:\n  event-dump check trace.evt && echo whole")]
    Check(LogsArgs),
    /// Prints a running program's events from its ring file as they are committed
    /// (like ftrace's trace_pipe); ends when the program stops.
    #[command(
        after_help = "Examples:\n  EVENT_RING=prog.ring ./prog &  event-dump follow prog.ring --kind Pool\n  event-dump follow prog.ring --from-now          only what comes next\n  event-dump follow traces/ --otlp --endpoint http://collector:4318   spans to a collector, segment by segment"
    )]
    Follow(FollowArgs),
    /// A live view of a running recording, as top(1): events per second by kind, event and
    /// thread, spans' p50 and p99, losses and suppressions; `--once` prints it once as text.
    #[command(
        after_help = "Examples:\n  EVENT_RING=prog.ring ./prog &  event-dump top prog.ring\n  event-dump top traces/                     a recording of segments, across rotations\n  event-dump top prog.ring --once --interval 2000    one view of 2 s, as text, for a script\n  event-dump top prog.ring --thread 'tokio-runtime-*' --sort total\n\nKeys: q, Esc or Ctrl-C quit; s sorts by rate, total or name; r reverses; + and - double or\nhalve the interval. Rates go by the events' own times: the events of the last interval,\nending 0.2 s before now (at the last event once the recording ended), per second. Losses are\nthe ledger's findings, as `stats` counts them, for what top read."
    )]
    Top(TopArgs),
    /// Writes a log in another tool's format: Perfetto, Chrome JSON, SQLite, CTF, Parquet, or
    /// folded stacks for flame graphs.
    #[command(
        after_help = "Examples:\n  event-dump export --to perfetto trace.evt -o trace.pftrace  open in ui.perfetto.dev\n  event-dump export --to chrome trace.evt -o trace.json\n  event-dump export --to sqlite a.evt b.evt -o logs.db\n  event-dump export --to ctf trace.evt -o trace-ctf && babeltrace2 trace-ctf\n  event-dump export --to parquet host1/*.evt host2/*.evt -o fleet/\n  event-dump export --to perfetto trace.evt --since 41.5 --until 52 -o incident.pftrace\n  event-dump export --to folded trace.evt -o - | inferno-flamegraph > spans.svg\n  event-dump export --to otlp trace.evt -o spans.pb           OTLP protobuf (spans.json: OTLP JSON)\n  OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 event-dump export --to otlp trace.evt\n\nThe events exported are chosen as `print` chooses them (--kind, --event, --thread,\n--since, --until, --filter); what is left out is counted on stderr, and in SQLite's\nevent_log.left_out. A span is chosen by its begin (as `latency` chooses): one begun in the\nselection is exported whole, its end included even when after --until; an end whose begin\nwas left out (before --since) is an instant.\n\nperfetto, chrome: a process per log, a track per thread; the spans events.def declares\n(SPAN; without declarations, events named FooBegin and FooEnd), tracing's spans\n(SpanOpen/SpanClose, async; SpanEnter/SpanExit) are slices, its counters (COUNTER) counter tracks, its flows (FLOW) arrows; other events are\ninstants.\nctf: OUT is a directory: metadata and one stream file per thread.\nparquet: OUT is a dataset directory, one table (directory) per event type, appended to.\nfolded: a line per stack of nested spans, `outer;inner NS`, NS the self time (--weight\ntotal: the whole duration), threads merged (--per-thread: a stack per thread).\notlp: the spans (ids derived from the recording id: the same log sent twice gives the same\nids) and counters; to an endpoint in batches, retried on 429/502/503/504; says what was sent\nand refused (exit 1 when anything was refused)."
    )]
    Export(ExportArgs),
    /// How long spans last: count, min, percentiles, max and a histogram per span (or per
    /// value of a parameter), then the slowest spans and where they start.
    #[command(
        after_help = "Examples:\n  event-dump latency trace.evt\n  event-dump latency trace.evt --span Sweep --by pool --top 5\n  event-dump latency trace.evt --by pool,epoch --percentiles 50,99,99.9,99.99\n  event-dump latency a.evt b.evt --since 1.5 --format json\n\nSpans are those events.def declares (SPAN), else events named FooBegin and FooEnd, and\ntracing's spans (SpanOpen/SpanClose across threads: a request's whole life; SpanEnter/\nSpanExit), paired as the exports pair them. --kind, --event, --thread,\n--since, --until and --filter choose spans by their begin event (ends are always read, so\nthat pairing stays right); --span by their names. Percentiles (--percentiles, default\n50,90,99) are exact, by nearest rank (the p-th of n durations is the ceil(p*n/100)-th\nsmallest); every duration is kept until the end (8 bytes a span). A span never ended, and an end that closes nothing,\nare counted, never given a time. Each slow span's start and end are seconds as print shows\nthem: `event-dump print LOG --since START --until END` shows what happened in it."
    )]
    Latency(LatencyArgs),
    /// A stable, versioned summary for scripts that compare runs: counts per event and kind,
    /// losses and damage, spans' percentiles, time span, program and host.
    #[command(
        after_help = "Examples:\n  event-dump summary trace.evt\n  event-dump summary trace.evt --format json > run.json     compare with the last run's\n  event-dump summary traces/ --format json --percentiles 50,99,99.9,99.99\n\nThe JSON is stated in docs/OUTPUT.md (\"summary\"), versioned by its `summary_version`; two\nreads of one log give the same bytes. Losses and damage are the ledger's findings, as\n`stats` and `check` count them; spans are paired as `latency` pairs them."
    )]
    Summary(SummaryArgs),
    /// The histograms the recorder kept (events.def's HISTOGRAM), merged over threads,
    /// segments and logs: count, min, percentiles, max and one line per bucket.
    #[command(
        after_help = "Examples:\n  event-dump hist trace.evt\n  event-dump hist traces/ --name 'request_ns,sizes' --per-thread\n  event-dump hist host1/ host2/ --format json\n\nThe recorder counts each value of a declared histogram on the thread that records it,\nwhether or not a limit keeps the event, and writes what it counted every period, before a\nsegment is sealed and at the stop: a segment holds its period's distributions however many\nof its events were suppressed or deleted. Percentiles are the buckets': the p-th value of n\n(nearest rank) lies in a bucket, whose largest value is shown (exact below the bucket\nlayout's first power of two, else at most one bucket's width above). `latency` shows them\ntoo, after the spans it times."
    )]
    Hist(HistArgs),
    /// Uploads a recording's sealed segments to object storage (S3 or a store that speaks
    /// its protocol), each once, under a key its header decides, with create-only puts.
    #[command(
        after_help = "Examples:\n  event-dump ship /var/log/app s3://fleet/traces          each sealed segment once\n  event-dump ship /var/log/app s3://fleet/traces --delete     ... then removes it here\n  event-dump ship /var/log/app s3://fleet/traces --watch      as segments are sealed, until SIGTERM or Ctrl-C\n\nEach segment goes to PREFIX/<recording id>/<segment index>.evt, both from its header (never its\nfile name), with a create-only put (If-None-Match: *): a second shipper, or a run again after a\nrestart, finds it there and writes nothing. Segments still being written (`*.open`) are never\ntaken. --delete removes a segment here only once the store holds an object of the same size and\nSHA-256. Credentials, region and endpoint come from the AWS variables (AWS_ACCESS_KEY_ID,\nAWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL; web identity, container\nand instance roles too). The last line counts what was shipped, already there, still being\nwritten and failed; exit 1 when a segment failed."
    )]
    Ship(ShipArgs),
    /// Shows or changes what a running program records, through its ring file.
    #[command(
        after_help = "Examples:\n  event-dump control prog.ring                        what it records now\n  event-dump control prog.ring --disable Object\n  event-dump control prog.ring --enable 'Pool,Seg:SegAlloc' --disable 'Sweep'\n  event-dump control prog.ring --snapshot incident.evt      the program writes what its rings hold now\n  event-dump control prog.ring --limit 'Net:Retry=10/s'      at most 10 a second on each thread"
    )]
    Control(ControlArgs),
    /// Prints a shell completion script for event-dump.
    #[command(
        after_help = "Examples:\n  event-dump completions bash > ~/.local/share/bash-completion/completions/event-dump\n  event-dump completions zsh > ~/.zfunc/_event-dump          (with fpath+=~/.zfunc)\n  event-dump completions fish > ~/.config/fish/completions/event-dump.fish"
    )]
    Completions(CompletionsArgs),
}

/// The subcommands' names, for [`mistyped_subcommand`].
fn subcommand_names() -> Vec<String> {
    Cli::command().get_subcommands().map(|c| c.get_name().to_owned()).collect()
}

/// The message for a command line whose first word is a mistyped subcommand: a word that is
/// not a subcommand, not an existing file (so not a log for the default `print`), and close
/// to a subcommand's name (`stast` for `stats`, `exprot` for `export`). `None` otherwise,
/// and clap reads the line as usual: `event-dump LOG` keeps working.
pub(crate) fn mistyped_subcommand(args: &[OsString]) -> Option<String> {
    let word = args.get(1)?.to_str()?;
    if word.starts_with('-') || Path::new(word).exists() {
        return None;
    }
    let names = subcommand_names();
    if names.iter().any(|n| n == word) {
        return None;
    }
    let near = event_format::def::closest(word, names.iter().map(String::as_str))?;
    Some(format!("unknown subcommand `{word}`; did you mean `{near}`?"))
}

/// Which events to show.
#[derive(Args, Debug, Default, Clone)]
pub(crate) struct Select {
    /// Only these kinds: names or globs, comma-separated (`Pool,Se*`); `-Kind` leaves one out,
    /// `Kind:Event` adds events (EVENT_CONTROL's language); in a log of several event sets,
    /// `set:Kind`, `set:*`, `set:Kind:Event`.
    #[arg(long, value_name = "KINDS", allow_hyphen_values = true)]
    pub(crate) kind: Option<String>,
    /// Only these events: names or globs, comma-separated, as `Name`, `Kind:Name` or `Kind.Name`
    /// (`set:Name`, `set:Kind:Name`, `set:Kind.Name` in a log of several event sets); `-`
    /// before one leaves it out (`-Object:*`).
    #[arg(long, value_name = "GLOBS", allow_hyphen_values = true)]
    pub(crate) event: Option<String>,
    #[command(flatten)]
    pub(crate) scope: Scope,
    /// Only events the expression selects (ftrace's filter language:
    /// `name op value`, `&&`, `||`, `!`, parentheses; names `time`, `thread`, `code`, `name`,
    /// `kind`, `set` and the parameters; `args.NAME` is always parameter NAME, as a span's
    /// `args.name`, and `fields.NAME` a tracing field, as `fields.id == 7`). Values as print
    /// shows them: `ok == true`, `thread == T6` or `thread == compactor`, hex, quoted strings
    /// with print's escapes; a comparison its types never let match is an error.
    #[arg(long, value_name = "EXPR")]
    pub(crate) filter: Option<String>,
}

/// The threads and the times a reader keeps: `Select`'s part that also chooses the
/// histograms the recorder kept (`hist`, `summary`, `latency`), which `--kind`, `--event` and
/// `--filter` leave whole.
#[derive(Args, Clone, Debug, Default)]
pub(crate) struct Scope {
    /// Only these threads, comma-separated: ids (`3` or `T3`), names (`compactor`, as the
    /// program named the thread; a name several threads share, as tokio names its workers,
    /// chooses all of them) or globs of names (`'worker-*'`).
    #[arg(long, value_name = "THREADS")]
    pub(crate) thread: Option<String>,
    /// Only events at or after this time (seconds since the start).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) since: Option<f64>,
    /// Only events before this time (seconds since the start).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) until: Option<f64>,
}

#[derive(Args, Debug, Default)]
pub(crate) struct PrintArgs {
    /// Logs to read: streams or ring files, or a recording of segments (its directory, a
    /// quoted glob, or its segment files: one log).
    #[arg(value_name = "LOG")]
    pub(crate) logs: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) select: Select,
    /// Output format; the JSON and CSV shapes are a stable output for scripts, versioned in
    /// docs/OUTPUT.md.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// Stop after this many events.
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<u64>,
    /// Times in raw clock ticks instead of seconds.
    #[arg(long)]
    pub(crate) raw_ticks: bool,
    /// Do not show labels beside addresses.
    #[arg(long)]
    pub(crate) no_labels: bool,
    /// Read a log whose median version is newer than this reader's.
    #[arg(long)]
    pub(crate) force: bool,
    /// Threads that decode and format blocks (default: `EVENT_DUMP_JOBS`, else one per
    /// core); 1 does it all on one thread. The output is the same whatever the number.
    #[arg(long, value_name = "N")]
    pub(crate) jobs: Option<usize>,
    /// The most memory, in MiB of formatted lines, that merging threads and logs by time may
    /// hold (default 64); a log more out of order than this holds is printed with a warning.
    #[arg(long, value_name = "MIB")]
    pub(crate) window: Option<usize>,
    /// Merge by the window alone, without first reading where each block starts and when its
    /// records do (for a log whose blocks hold records earlier than their header says; `print`
    /// says when one does).
    #[arg(long)]
    pub(crate) window_only: bool,
}

#[derive(Args, Debug)]
pub(crate) struct LogsArgs {
    /// Logs to read: streams, ring files, or a recording of segments (its directory, a quoted
    /// glob, or its segment files: one log).
    #[arg(value_name = "LOG", required = true)]
    pub(crate) logs: Vec<PathBuf>,
    /// Count the blocks a ring overwrote (a thread's oldest, missing as the `ring` policy
    /// keeps only the latest) as problems: exit 1 when there are any.
    #[arg(long)]
    pub(crate) strict: bool,
    /// Read a log whose median version is newer than this reader's.
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Args, Debug)]
pub(crate) struct StatsArgs {
    /// Logs to read: streams, ring files, or a recording of segments (its directory, a quoted
    /// glob, or its segment files: one log).
    #[arg(value_name = "LOG", required = true)]
    pub(crate) logs: Vec<PathBuf>,
    /// The events counted (as `print` selects them); the log's blocks, bytes and losses are
    /// reported whole.
    #[command(flatten)]
    pub(crate) select: Select,
    /// Read a log whose median version is newer than this reader's.
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Args, Debug)]
pub(crate) struct SchemaArgs {
    /// The log.
    #[arg(value_name = "LOG")]
    pub(crate) log: PathBuf,
    /// An events.def to compare with: what differs, and whether they are compatible.
    #[arg(long, value_name = "EVENTS_DEF")]
    pub(crate) against: Option<PathBuf>,
    /// Read a log whose median version is newer than this reader's.
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Args, Debug)]
pub(crate) struct FollowArgs {
    /// The running program's ring file; or its recording of segments (the directory, or a
    /// segment), followed across rotations; or an event stream.
    #[arg(value_name = "RINGFILE")]
    pub(crate) ring: PathBuf,
    #[command(flatten)]
    pub(crate) select: Select,
    /// Output format; the JSON and CSV shapes are a stable output for scripts, versioned in
    /// docs/OUTPUT.md.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// How often to look for new events, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 50)]
    pub(crate) interval: u64,
    /// Show only what the program commits from now on (as `tail -f -n 0`); without it, what
    /// the ring file holds is shown first. Blocks its rings overwrote before following
    /// started are not reported as lost either way: they were gone before `follow` came.
    #[arg(long)]
    pub(crate) from_now: bool,
    /// Send the recording's spans and counters to an OTLP/HTTP endpoint instead of printing:
    /// each segment once its recorder seals it, resuming after a restart where it stopped
    /// (RINGFILE is the recording's directory; the endpoint as `export --to otlp` takes it).
    #[arg(long)]
    pub(crate) otlp: bool,
    /// `--otlp`: the endpoint's base URL (`http://collector:4318`); without it,
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (default `http://localhost:4318`).
    #[arg(long, value_name = "URL")]
    pub(crate) endpoint: Option<String>,
    /// `--otlp`: a header of every request, `NAME=VALUE` (repeat it for more).
    #[arg(long, value_name = "NAME=VALUE")]
    pub(crate) header: Vec<String>,
    /// `--otlp`: the file that says how far the sending got (default: `.event-dump-otlp` in
    /// the recording's directory).
    #[arg(long, value_name = "FILE")]
    pub(crate) state: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    /// The format to write.
    #[arg(long, value_enum)]
    pub(crate) to: Target,
    /// Logs to export (`sqlite` and `parquet` take several; `perfetto` and `chrome` merge
    /// several, one process each; `ctf` takes one).
    #[arg(value_name = "LOG", required = true)]
    pub(crate) logs: Vec<PathBuf>,
    /// Where to write: a file (`perfetto`, `chrome`, `sqlite`, `folded`; `-` for stdout with
    /// `folded`) or a directory (`ctf`, `parquet`). `otlp`: a file (protobuf; OTLP JSON for a
    /// name ending in `.json` or `.jsonl`), or an OTLP/HTTP endpoint (`http://HOST:4318`);
    /// without `-o`, the endpoint of `OTEL_EXPORTER_OTLP_ENDPOINT` (default
    /// `http://localhost:4318`).
    #[arg(
        short,
        long,
        value_name = "OUT",
        required_if_eq_any = [("to", "perfetto"), ("to", "chrome"), ("to", "sqlite"), ("to", "ctf"), ("to", "parquet"), ("to", "folded")]
    )]
    pub(crate) out: Option<PathBuf>,
    /// `otlp` to an endpoint: a header of every request, `NAME=VALUE` (repeat it for more),
    /// beside those of `OTEL_EXPORTER_OTLP_HEADERS`.
    #[arg(long, value_name = "NAME=VALUE")]
    pub(crate) header: Vec<String>,
    /// The events exported, as `print` selects them. Every format leaves the rest out and
    /// says how many it left out (not as losses). `perfetto` and `chrome` choose a span by its
    /// begin: a span begun in the selection is exported whole, its end included; an end whose
    /// begin was left out is an instant.
    #[command(flatten)]
    pub(crate) select: Select,
    /// Read a log whose median version is newer than this reader's.
    #[arg(long)]
    pub(crate) force: bool,
    /// `perfetto`, `chrome` and `ctf`, which merge events by time: merge by the window alone, without first
    /// reading where each block starts and when its records do (for a log whose blocks hold
    /// records earlier than their header says; the export says when one does).
    #[arg(long)]
    pub(crate) window_only: bool,
    /// `perfetto`: write the packets as they are, not deflated in `compressed_packets` (for a
    /// reader that does not inflate them; ui.perfetto.dev and trace_processor do). About four
    /// times the size.
    #[arg(long)]
    pub(crate) uncompressed: bool,
    /// `folded`: each stack's weight, in nanoseconds: `self`, a span's time less that of the
    /// spans it encloses (what a flame graph draws), or `total`, its whole duration.
    #[arg(long, value_enum, value_name = "WEIGHT")]
    pub(crate) weight: Option<Weight>,
    /// `folded`: a stack per thread, under a frame naming it (`T3 (worker-1)`), instead of
    /// the threads' stacks merged.
    #[arg(long)]
    pub(crate) per_thread: bool,
}

/// What a folded stack's weight is (`export --to folded --weight`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Weight {
    /// A span's duration less that of the spans it encloses: what a flame graph draws.
    #[default]
    #[value(name = "self")]
    Own,
    /// A span's whole duration (a flame graph of these counts nested time twice).
    Total,
}

#[derive(Args, Debug)]
pub(crate) struct LatencyArgs {
    /// Logs to read: streams or ring files.
    #[arg(value_name = "LOG", required = true)]
    pub(crate) logs: Vec<PathBuf>,
    /// The spans counted, by their begin event (as `print` selects events); their ends are
    /// always read.
    #[command(flatten)]
    pub(crate) select: Select,
    /// Only the spans of these names (comma-separated, globs: `Sweep,req*`).
    #[arg(long, value_name = "NAMES")]
    pub(crate) span: Option<String>,
    /// Counts per value of these parameters of the span's begin (or, for one the begin has
    /// not, its end): `--by pool`; several, comma-separated or repeated, count per
    /// combination of their values (`--by pool,epoch`).
    #[arg(long, value_name = "PARAMS", value_delimiter = ',')]
    pub(crate) by: Vec<String>,
    /// The percentiles shown, comma-separated, each above 0 and at most 100, with decimals
    /// where wanted (`50,99,99.9,99.99`); default 50,90,99.
    #[arg(long, value_name = "LIST")]
    pub(crate) percentiles: Option<String>,
    /// How many of the slowest spans to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub(crate) top: usize,
    /// Output format; the JSON shape is documented in docs/OUTPUT.md.
    #[arg(long, value_enum, default_value_t = LatencyFormat::Text)]
    pub(crate) format: LatencyFormat,
    /// Read a log whose median version is newer than this reader's.
    #[arg(long)]
    pub(crate) force: bool,
    /// Merge by the window alone, without first reading where each block starts (as `print`).
    #[arg(long)]
    pub(crate) window_only: bool,
}

#[derive(Args, Debug)]
pub(crate) struct HistArgs {
    /// Logs to read: streams, ring files, recordings of segments.
    #[arg(value_name = "LOG", required = true)]
    pub(crate) logs: Vec<PathBuf>,
    /// Only the histograms of these names (comma-separated, globs: `req*,sizes`).
    #[arg(long, value_name = "NAMES")]
    pub(crate) name: Option<String>,
    /// The histograms of these threads (the threads that counted the values) and of the
    /// periods that overlap these times, each period whole, as `summary` and `latency` keep them.
    #[command(flatten)]
    pub(crate) scope: Scope,
    /// Each thread's distribution too, under the merged one.
    #[arg(long)]
    pub(crate) per_thread: bool,
    /// Output format; the JSON shape is documented in docs/OUTPUT.md.
    #[arg(long, value_enum, default_value_t = HistFormat::Text)]
    pub(crate) format: HistFormat,
    /// Read a log whose median version is newer than this reader's.
    #[arg(long)]
    pub(crate) force: bool,
}

/// `hist`'s output formats.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HistFormat {
    /// Each histogram as `latency` shows a span's durations.
    Text,
    /// One JSON document (docs/OUTPUT.md, "hist").
    Json,
}

/// `latency`'s output formats.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LatencyFormat {
    /// A summary per span, with histograms, then the slowest spans.
    Text,
    /// One JSON document (docs/OUTPUT.md, "latency").
    Json,
}

#[derive(Args, Debug)]
pub(crate) struct TopArgs {
    /// The running program's ring file; or its recording of segments (the directory, or a
    /// segment), followed across rotations; or an event stream.
    #[arg(value_name = "RING|DIR")]
    pub(crate) log: PathBuf,
    /// The events counted (as `print` selects them); losses are the whole log's.
    #[command(flatten)]
    pub(crate) select: Select,
    /// The interval the rates and percentiles are over, and the screen's refresh, in
    /// milliseconds (at least 100).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub(crate) interval: u64,
    /// What the rows are sorted by, the most first (names in order).
    #[arg(long, value_enum, default_value_t = SortKey::Rate)]
    pub(crate) sort: SortKey,
    /// The other way round.
    #[arg(long)]
    pub(crate) reverse: bool,
    /// Print one view, after one interval, as plain text, and exit (for scripts).
    #[arg(long)]
    pub(crate) once: bool,
}

/// What the rows are sorted by (`s` cycles through them, `r` reverses).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum SortKey {
    /// Events per second over the last interval, the most first.
    #[default]
    Rate,
    /// Events read since `top` started, the most first.
    Total,
    /// Names, in order.
    Name,
}

impl SortKey {
    /// The key after this one, as `s` cycles through them.
    pub(crate) fn next(self) -> SortKey {
        match self {
            SortKey::Rate => SortKey::Total,
            SortKey::Total => SortKey::Name,
            SortKey::Name => SortKey::Rate,
        }
    }

    /// The key's name, as the view says what it is sorted by.
    pub(crate) fn word(self) -> &'static str {
        match self {
            SortKey::Rate => "rate",
            SortKey::Total => "total",
            SortKey::Name => "name",
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct SummaryArgs {
    /// Logs to read: streams, ring files, or a recording of segments (its directory, a quoted
    /// glob, or its segment files: one log).
    #[arg(value_name = "LOG", required = true)]
    pub(crate) logs: Vec<PathBuf>,
    /// The events counted and the spans timed (by their begin, as `latency` chooses them);
    /// losses and damage are the whole log's.
    #[command(flatten)]
    pub(crate) select: Select,
    /// The spans' percentiles, comma-separated (default 50,90,99,99.9).
    #[arg(long, value_name = "LIST")]
    pub(crate) percentiles: Option<String>,
    /// Output format; the JSON shape is documented in docs/OUTPUT.md ("summary").
    #[arg(long, value_enum, default_value_t = SummaryFormat::Text)]
    pub(crate) format: SummaryFormat,
    /// Read a log whose median version is newer than this reader's.
    #[arg(long)]
    pub(crate) force: bool,
    /// Merge by the window alone, without first reading where each block starts (as `print`).
    #[arg(long)]
    pub(crate) window_only: bool,
}

/// `summary`'s output formats.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SummaryFormat {
    /// For people: the same numbers, in lines.
    Text,
    /// One JSON document (docs/OUTPUT.md, "summary").
    Json,
}

#[derive(Args, Debug)]
pub(crate) struct ControlArgs {
    /// The running program's ring file; or its recording of segments (the directory, or a
    /// segment), followed across rotations; or an event stream.
    #[arg(value_name = "RINGFILE")]
    pub(crate) ring: PathBuf,
    /// Kinds or events to record from now on (EVENT_CONTROL grammar: `Pool`, `Seg:SegAlloc`,
    /// globs, `set:Kind` and `set:Kind:Event` with several event sets; comma-separated).
    /// Without --enable and --disable, the program's selection is shown and nothing changes.
    #[arg(long, value_name = "ITEMS")]
    pub(crate) enable: Vec<String>,
    /// Kinds or events to stop recording.
    #[arg(long, value_name = "ITEMS")]
    pub(crate) disable: Vec<String>,
    /// Asks a program that records segments (EVENT_ROTATE) to seal the segment it writes and
    /// start the next; a request of its own, without --enable and --disable.
    #[arg(long, conflicts_with = "snapshot")]
    pub(crate) rotate: bool,
    /// Asks the program to write a snapshot of its rings (policy `ring`) into the new file
    /// OUT, while it goes on recording, and waits until it is written.
    #[arg(long, value_name = "OUT", conflicts_with_all = ["enable", "disable"])]
    pub(crate) snapshot: Option<PathBuf>,
    /// Changes the program's limits (EVENT_LIMIT grammar: `Test:Seq=100/s;Net=1/100`, `off`
    /// removes one) and shows them all; `--limit ''` only shows them. A request of its own.
    #[arg(long, value_name = "LIMITS", conflicts_with_all = ["enable", "disable", "rotate", "snapshot"])]
    pub(crate) limit: Option<String>,
    /// How long to wait for the program's answer, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub(crate) timeout: u64,
}

#[derive(Args, Debug)]
pub(crate) struct ShipArgs {
    /// The directory the recorder writes its segments in (EVENT_FILE's, with EVENT_ROTATE).
    #[arg(value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// Where to: `s3://BUCKET/PREFIX` (the bucket must exist).
    #[arg(value_name = "s3://BUCKET/PREFIX")]
    pub(crate) to: String,
    /// Delete each segment here once the store holds an object of its size and SHA-256.
    #[arg(long)]
    pub(crate) delete: bool,
    /// Go on shipping segments as they are sealed, until SIGTERM or Ctrl-C (which let the
    /// segment being uploaded finish; a second one stops at once).
    #[arg(long)]
    pub(crate) watch: bool,
    /// With --watch: how often to look for newly sealed segments, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub(crate) interval: u64,
    /// Read segments whose median version is newer than this reader's.
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Args, Debug)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_name = "SHELL", value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

/// Writes the completion script for `shell` to `out`.
pub(crate) fn completions(shell: clap_complete::Shell, out: &mut dyn std::io::Write) {
    clap_complete::generate(shell, &mut Cli::command(), "event-dump", out);
}

/// The formats `export` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// Perfetto's protobuf trace (ui.perfetto.dev, trace_processor).
    Perfetto,
    /// Chrome trace-event JSON (Perfetto's UI, chrome://tracing).
    Chrome,
    /// SQLite, one table per event type (MPS mpseventsql's shape).
    Sqlite,
    /// CTF 1.8 (babeltrace2, Trace Compass).
    Ctf,
    /// A Parquet dataset, one table per event type (DuckDB, DataFusion, Polars, Spark);
    /// OUT is a directory, appended to.
    Parquet,
    /// Folded stacks of nested spans (`a;b;c NS`) for flame graphs: inferno, flamegraph.pl,
    /// speedscope; OUT `-` is stdout.
    Folded,
    /// OpenTelemetry's OTLP: spans and counters (gauges), to a file (protobuf, or JSON) or an
    /// OTLP/HTTP endpoint (a collector, Tempo, Jaeger, a vendor).
    Otlp,
}
