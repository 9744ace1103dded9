//! `export --to sqlite`: logs into an SQLite database, in the shape of MPS's mpseventsql.
//!
//! One table per event type, with one typed column per parameter, and four tables that
//! describe them: the kinds, the event types, their parameters and the logs imported. Several
//! logs go into one database, in one run or in several; each event row names its log.
//!
//! The schema, what each column holds, several logs in one database and transactions are
//! stated once, in docs/OUTPUT.md ("SQLite").

use super::tables::{ColumnType, Imported, Walked, column_type, fields_json, has_fields};
use super::{Said, Window};
use crate::log::{DumpError, Log};
use event_format::decode::Desc;
use event_format::letter::{self, Letter};
use event_format::schema::BUILTIN_KIND;
use event_format::wire::{Timebase, Value};
use rusqlite::{Connection, ErrorCode, Statement, Transaction, TransactionBehavior};
use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

type Result<T> = std::result::Result<T, DumpError>;

/// `PRAGMA application_id` of a database this exporter writes ("EvDB").
const APPLICATION_ID: i64 = 0x4576_4442;

/// `PRAGMA user_version`: the version of the table layout above. A change of the layout that
/// an older exporter would misread bumps it; an exporter refuses a database of a newer one.
/// Layout 2 added the `event_set` columns and made codes unique per set; a database of
/// layout 1 is brought to layout 2 when a log is exported into it ([`migrate`]).
const LAYOUT_VERSION: i64 = 2;

/// The columns before the parameters in every event table.
const FIXED_COLUMNS: [&str; 4] = ["log", "time", "seconds", "thread"];

/// The column after the parameters of the `tracing` bridge's events: their fields, as JSON.
const FIELDS_COLUMN: &str = "fields_json";

/// The most SELECTs SQLite joins with one UNION ALL (its SQLITE_MAX_COMPOUND_SELECT is 500):
/// the `events` view unions groups of at most this many tables.
const UNION_GROUP: usize = 400;

/// What to do about a log that disagrees with the database.
const ELSEWHERE: &str = "; export this log into another database (-o another.db)";

/// How long to wait for another program that holds the database.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The columns of `event_type` (layout 2): written once, for [`GLUE_TABLES`] and for the
/// migration from layout 1, which rebuilds the table with them.
macro_rules! event_type_columns {
    () => {
        "
    name       TEXT PRIMARY KEY,
    code       INTEGER NOT NULL,
    always     INTEGER NOT NULL,
    kind       TEXT NOT NULL REFERENCES event_kind(name),
    format     TEXT NOT NULL,
    table_name TEXT NOT NULL,
    event_set  TEXT NOT NULL DEFAULT '',
    UNIQUE (event_set, code)
"
    };
}

const GLUE_TABLES: &str = concat!(
    r#"
CREATE TABLE IF NOT EXISTS event_kind (
    name        TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    bit         INTEGER,
    event_set   TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS event_type ("#,
    event_type_columns!(),
    r#");
CREATE TABLE IF NOT EXISTS event_param (
    event       TEXT NOT NULL REFERENCES event_type(name),
    position    INTEGER NOT NULL,
    name        TEXT NOT NULL,
    letter      TEXT NOT NULL,
    sql_type    TEXT NOT NULL,
    column_name TEXT NOT NULL,
    PRIMARY KEY (event, position)
);
CREATE TABLE IF NOT EXISTS event_log (
    serial            INTEGER PRIMARY KEY AUTOINCREMENT,
    path              TEXT NOT NULL,
    size              INTEGER NOT NULL,
    identity          TEXT NOT NULL UNIQUE,
    program           TEXT NOT NULL,
    pid               INTEGER NOT NULL,
    arch              TEXT NOT NULL,
    os                TEXT NOT NULL,
    start_wall_ns     INTEGER NOT NULL,
    start             TEXT NOT NULL,
    format_version    TEXT NOT NULL,
    event_set_version TEXT NOT NULL,
    clock             TEXT NOT NULL,
    ticks_per_second  INTEGER NOT NULL,
    start_ticks       INTEGER NOT NULL,
    imported          TEXT NOT NULL,
    events            INTEGER NOT NULL DEFAULT 0,
    blocks            INTEGER NOT NULL DEFAULT 0,
    damaged_blocks    INTEGER NOT NULL DEFAULT 0,
    bad_records       INTEGER NOT NULL DEFAULT 0,
    unknown_records   INTEGER NOT NULL DEFAULT 0,
    lost_events       INTEGER NOT NULL DEFAULT 0,
    missing_blocks    INTEGER NOT NULL DEFAULT 0,
    truncated_strings INTEGER NOT NULL DEFAULT 0,
    host              TEXT,
    left_out          INTEGER NOT NULL DEFAULT 0,
    service           TEXT,
    labels            TEXT NOT NULL DEFAULT '{}',
    recording         TEXT
);
CREATE TABLE IF NOT EXISTS spans (
    log                INTEGER NOT NULL REFERENCES event_log(serial),
    Timestamp          INTEGER NOT NULL,
    TraceId            TEXT NOT NULL,
    SpanId             TEXT NOT NULL,
    ParentSpanId       TEXT NOT NULL,
    TraceState         TEXT NOT NULL,
    SpanName           TEXT NOT NULL,
    SpanKind           TEXT NOT NULL,
    ServiceName        TEXT NOT NULL,
    ResourceAttributes TEXT NOT NULL,
    ScopeName          TEXT NOT NULL,
    ScopeVersion       TEXT NOT NULL,
    SpanAttributes     TEXT NOT NULL,
    Duration           INTEGER NOT NULL,
    StatusCode         TEXT NOT NULL,
    StatusMessage      TEXT NOT NULL,
    Events             TEXT NOT NULL,
    Links              TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS histogram_bucket (
    log       INTEGER NOT NULL REFERENCES event_log(serial),
    time      INTEGER NOT NULL,
    seconds   REAL NOT NULL,
    thread    INTEGER NOT NULL,
    since     INTEGER NOT NULL,
    histogram TEXT NOT NULL,
    event_set TEXT NOT NULL,
    of        TEXT NOT NULL,
    unit      TEXT NOT NULL,
    layout    TEXT NOT NULL,
    bucket    INTEGER NOT NULL,
    low       INTEGER NOT NULL,
    high      INTEGER NOT NULL,
    count     INTEGER NOT NULL
);
"#
);

/// Exports `logs` into the database `out` (created when missing), all or nothing.
pub(crate) fn export(logs: &mut [Log], out: &Path, window: &mut Window) -> std::result::Result<ExitCode, DumpError> {
    if out.is_dir() {
        return Err(DumpError::new(format!(
            "{}: is a directory; give the database file to write, e.g. -o logs.db",
            out.display()
        )));
    }
    let existed = out.exists();
    let result = export_into(logs, out, window);
    if result.is_err() && !existed {
        // The run created the file and the transaction rolled back: leave nothing behind.
        let _ = std::fs::remove_file(out);
        let mut journal = out.as_os_str().to_owned();
        journal.push("-journal");
        let _ = std::fs::remove_file(journal);
    }
    let imported = result?;
    Ok(super::tables::report(&imported, out))
}

fn export_into(logs: &mut [Log], out: &Path, window: &mut Window) -> Result<Vec<Imported>> {
    let db = DbErrors(out);
    let mut conn = Connection::open(out).map_err(|e| db.error(&e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| db.error(&e))?;
    // The transaction's pages stay in memory longer before they spill to the file.
    conn.pragma_update(None, "cache_size", -65_536i64).map_err(|e| db.error(&e))?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| db.error(&e))?;
    prepare(&tx, &db)?;
    let mut glue = Glue::load(&tx).map_err(|e| db.error(&e))?;
    let mut imported = Vec::new();
    for (file, log) in logs.iter_mut().enumerate() {
        imported.push(import(&tx, &mut glue, log, (file, &mut *window), &db)?);
    }
    make_events_view(&tx).map_err(|e| db.error(&e))?;
    tx.commit().map_err(|e| db.error(&e))?;
    Ok(imported)
}

/// Turns SQLite's errors into one line that names the database and says what to do.
struct DbErrors<'a>(&'a Path);

impl DbErrors<'_> {
    fn error(&self, e: &rusqlite::Error) -> DumpError {
        let out = self.0.display();
        let hint = match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => {
                return DumpError::new(format!("{out}: not an SQLite database; give another -o path"));
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                "; another program is using the database: try again when it is done"
            }
            Some(ErrorCode::DiskFull) => "; free some space and run again",
            Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => {
                "; give a path you can write"
            }
            _ => "",
        };
        DumpError::new(format!("{out}: {e}{hint}; nothing was written"))
    }

    /// A refusal: `what` is wrong, then what to do, if anything.
    fn refuse(&self, what: String, fix: &str) -> DumpError {
        DumpError::new(format!("{what}; nothing was written{fix}"))
    }
}

/// Checks that the database is empty or one this exporter wrote, and creates the glue tables.
fn prepare(tx: &Transaction<'_>, db: &DbErrors<'_>) -> Result<()> {
    let sql = |e: rusqlite::Error| db.error(&e);
    let app: i64 = tx.pragma_query_value(None, "application_id", |r| r.get(0)).map_err(sql)?;
    let layout: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(sql)?;
    let tables: i64 = tx.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0)).map_err(sql)?;
    let out = db.0.display();
    if app != APPLICATION_ID {
        if tables > 0 {
            return Err(DumpError::new(format!(
                "{out}: an SQLite database that event-dump did not write; give a new -o path"
            )));
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID).map_err(sql)?;
        tx.pragma_update(None, "user_version", LAYOUT_VERSION).map_err(sql)?;
    } else if layout > LAYOUT_VERSION {
        return Err(DumpError::new(format!(
            "{out}: written by a newer event-dump (table layout {layout}, this one writes {LAYOUT_VERSION}); use that event-dump or give a new -o path"
        )));
    } else if layout < LAYOUT_VERSION {
        migrate(tx).map_err(sql)?;
        tx.pragma_update(None, "user_version", LAYOUT_VERSION).map_err(sql)?;
    }
    tx.execute_batch(GLUE_TABLES).map_err(sql)?;
    // A database an exporter of before format 2.0.1 created has no `host` column.
    let has_host: i64 = tx
        .query_row("SELECT count(*) FROM pragma_table_info('event_log') WHERE name = 'host'", [], |r| r.get(0))
        .map_err(sql)?;
    if has_host == 0 {
        tx.execute_batch("ALTER TABLE event_log ADD COLUMN host TEXT").map_err(sql)?;
    }
    // Nor has a database of an exporter without `export`'s choice a `left_out` column.
    let has_left_out: i64 = tx
        .query_row("SELECT count(*) FROM pragma_table_info('event_log') WHERE name = 'left_out'", [], |r| r.get(0))
        .map_err(sql)?;
    if has_left_out == 0 {
        tx.execute_batch("ALTER TABLE event_log ADD COLUMN left_out INTEGER NOT NULL DEFAULT 0").map_err(sql)?;
    }
    // Nor has a database of an exporter before labels (format 2.1.0) `service` and `labels`.
    let has_labels: i64 = tx
        .query_row("SELECT count(*) FROM pragma_table_info('event_log') WHERE name = 'labels'", [], |r| r.get(0))
        .map_err(sql)?;
    if has_labels == 0 {
        tx.execute_batch(
            "ALTER TABLE event_log ADD COLUMN service TEXT; ALTER TABLE event_log ADD COLUMN labels TEXT NOT NULL DEFAULT '{}'",
        )
        .map_err(sql)?;
    }
    // Nor has a database of an exporter before the spans table a `recording` column.
    let has_recording: i64 = tx
        .query_row("SELECT count(*) FROM pragma_table_info('event_log') WHERE name = 'recording'", [], |r| r.get(0))
        .map_err(sql)?;
    if has_recording == 0 {
        tx.execute_batch("ALTER TABLE event_log ADD COLUMN recording TEXT").map_err(sql)?;
    }
    Ok(())
}

/// Brings a database of layout 1 to layout 2, in the run's transaction: `event_kind` and
/// `event_type` get their `event_set` column (empty for what is there), and `event_type`'s
/// codes become unique per set (SQLite changes a constraint by copying the table).
fn migrate(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let has = |table: &str| -> rusqlite::Result<bool> {
        tx.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |r| {
            r.get::<_, i64>(0)
        })
        .map(|n| n > 0)
    };
    if has("event_kind")? {
        tx.execute_batch("ALTER TABLE event_kind ADD COLUMN event_set TEXT NOT NULL DEFAULT ''")?;
    }
    if has("event_type")? {
        tx.execute_batch(concat!(
            "CREATE TABLE event_type_2 (",
            event_type_columns!(),
            ");
            INSERT INTO event_type_2 (name, code, always, kind, format, table_name)
                SELECT name, code, always, kind, format, table_name FROM event_type;
            DROP TABLE event_type;
            ALTER TABLE event_type_2 RENAME TO event_type;"
        ))?;
    }
    Ok(())
}

/// SQLite's type for a parameter of `letter`, from the exports' one mapping of letters.
fn sql_type(letter: Letter) -> &'static str {
    match column_type(letter) {
        // SQLite's INTEGER is signed 64-bit: unsigned words are stored as their bits.
        ColumnType::U64 | ColumnType::U32 | ColumnType::I64 | ColumnType::Bool => "INTEGER",
        ColumnType::F64 => "REAL",
        ColumnType::Utf8 => "TEXT",
    }
}

/// `name` as an SQL identifier, quoted.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The table of the event of `desc`: `EVENT_<Name>`, or `EVENT_<set>_<Name>` when its log
/// holds more than one set, with each `-` of the set's name written `_` (so that the name
/// needs no quotes in a query: `storage-v1` gives `EVENT_storage_v1_PageWrite`).
fn table_name(desc: &Desc) -> String {
    if desc.qualified {
        format!("EVENT_{}_{}", desc.set.replace('-', "_"), desc.name)
    } else {
        format!("EVENT_{}", desc.name)
    }
}

/// The name of the event of `desc` in `event_type`: `Name`, or `set:Name` when its log holds
/// more than one set.
fn type_name(desc: &Desc) -> String {
    if desc.qualified { format!("{}:{}", desc.set, desc.name) } else { desc.name.clone() }
}

/// The columns of parameters `params`, after the fixed ones.
fn param_columns(params: &[String]) -> Vec<String> {
    super::tables::param_columns(&FIXED_COLUMNS, params)
}

/// An event type as the glue tables hold it: what must agree between logs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct TypeRow {
    code: u16,
    kind: String,
    format: String,
    /// Parameter names, in order.
    params: Vec<String>,
    /// Its set's name (empty for built-in events and 1.x logs): codes are unique per set.
    set: String,
    /// Its table.
    table: String,
}

/// What the database's glue tables hold, kept in step as logs add to them.
struct Glue {
    /// Kind name -> bit (`None` for Builtin).
    kinds: HashMap<String, Option<i64>>,
    /// Event name -> its row.
    types: HashMap<String, TypeRow>,
}

impl Glue {
    fn load(tx: &Transaction<'_>) -> rusqlite::Result<Glue> {
        let mut kinds = HashMap::new();
        let mut stmt = tx.prepare("SELECT name, bit FROM event_kind")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            kinds.insert(row.get::<_, String>(0)?, row.get::<_, Option<i64>>(1)?);
        }
        let mut types = HashMap::new();
        let mut stmt = tx.prepare("SELECT name, code, kind, format, event_set, table_name FROM event_type")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let code: i64 = row.get(1)?;
            let name: String = row.get(0)?;
            // A code out of range is no code a log can have: it agrees with none.
            let code = u16::try_from(code).unwrap_or(0);
            types.insert(
                name,
                TypeRow {
                    code,
                    kind: row.get(2)?,
                    format: row.get(3)?,
                    params: Vec::new(),
                    set: row.get(4)?,
                    table: row.get(5)?,
                },
            );
        }
        let mut stmt = tx.prepare("SELECT event, name FROM event_param ORDER BY event, position")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let event: String = row.get(0)?;
            if let Some(t) = types.get_mut(&event) {
                t.params.push(row.get(1)?);
            }
        }
        Ok(Glue { kinds, types })
    }
}

/// Adds `log`'s kinds and event types to the glue tables (and creates their tables), or
/// refuses when they disagree with what the database holds.
fn register(tx: &Transaction<'_>, glue: &mut Glue, log: &Log, db: &DbErrors<'_>) -> Result<()> {
    let sql = |e: rusqlite::Error| db.error(&e);
    let path = log.path().display();
    let sets = &log.header().sets;
    // Kinds are qualified by their set (`set:Kind`) when the log holds more than one set.
    let kinds = sets
        .iter()
        .flat_map(|set| {
            set.schema.kinds.iter().enumerate().map(move |(bit, k)| {
                let name = if sets.len() > 1 { format!("{}:{}", set.schema.name, k.name) } else { k.name.clone() };
                (name, k.doc.as_str(), Some(bit as i64), set.schema.name.as_str())
            })
        })
        .chain(std::iter::once((BUILTIN_KIND.to_owned(), "the runtime's built-in events", None, "")));
    for (name, doc, bit, set) in kinds {
        let name = name.as_str();
        let out = db.0.display();
        match glue.kinds.get(name) {
            Some(known) if *known == bit => {}
            Some(known) => {
                let shown = |b: &Option<i64>| b.map_or_else(|| "none".to_owned(), |b| b.to_string());
                return Err(db.refuse(
                    format!("{path}: kind {name} is bit {} in this log but bit {} in {out}", shown(&bit), shown(known)),
                    ELSEWHERE,
                ));
            }
            None => {
                tx.execute(
                    "INSERT INTO event_kind (name, description, bit, event_set) VALUES (?1, ?2, ?3, ?4)",
                    (name, doc, bit, set),
                )
                .map_err(sql)?;
                glue.kinds.insert(name.to_owned(), bit);
            }
        }
    }
    for desc in log.catalog().iter() {
        // Qualified by its set (`set:Name`, `set:Kind`) when the log holds more than one set.
        let name = type_name(desc);
        let row = TypeRow {
            code: desc.code,
            kind: desc.full_kind(),
            format: letter::format_string(&desc.format),
            params: desc.params.clone(),
            set: desc.set.clone(),
            table: table_name(desc),
        };
        if let Some(known) = glue.types.get(&name) {
            if let Some(why) = disagreement(&name, known, &row, &db.0.display().to_string()) {
                return Err(db.refuse(format!("{path}: {why}"), ELSEWHERE));
            }
            continue;
        }
        // Codes (per set) and table names must stay unique too (SQLite ignores case in table
        // names; a set's `-` is written `_` in them).
        if let Some((other, _)) = glue.types.iter().find(|(_, t)| t.code == desc.code && t.set == row.set) {
            return Err(db.refuse(
                format!("{path}: code {:#06x} is {name} in this log but {other} in {}", desc.code, db.0.display()),
                ELSEWHERE,
            ));
        }
        if let Some((other, _)) = glue.types.iter().find(|(_, t)| t.table.eq_ignore_ascii_case(&row.table)) {
            return Err(db.refuse(
                format!(
                    "{path}: event {name} and event {other} of {} would share table {}, as SQLite's table names ignore case",
                    db.0.display(),
                    row.table
                ),
                ELSEWHERE,
            ));
        }
        add_type(tx, desc, &name, schema_always(log, desc), &row).map_err(sql)?;
        glue.types.insert(name, row);
    }
    Ok(())
}

/// Why `new` cannot share the tables of `known`, both event type `name`, if it cannot.
fn disagreement(name: &str, known: &TypeRow, new: &TypeRow, out: &str) -> Option<String> {
    let earlier = format!("in {out}");
    if known.format != new.format {
        return Some(format!("event {name} has format {} in this log but {} {earlier}", new.format, known.format));
    }
    if known.params != new.params {
        return Some(format!(
            "event {name} has parameters ({}) in this log but ({}) {earlier}",
            new.params.join(", "),
            known.params.join(", ")
        ));
    }
    if known.code != new.code {
        return Some(format!("event {name} has code {:#06x} in this log but {:#06x} {earlier}", new.code, known.code));
    }
    if known.kind != new.kind {
        return Some(format!("event {name} is of kind {} in this log but {} {earlier}", new.kind, known.kind));
    }
    None
}

/// The `always` flag of `desc`: TRUE for built-in events, which are recorded whatever the
/// control mask says.
fn schema_always(log: &Log, desc: &Desc) -> bool {
    desc.is_builtin()
        || log.header().set(&desc.set).is_some_and(|s| s.schema.events.iter().any(|e| e.code == desc.code && e.always))
}

/// Inserts the glue rows of a new event type and creates its table.
fn add_type(tx: &Transaction<'_>, desc: &Desc, name: &str, always: bool, row: &TypeRow) -> rusqlite::Result<()> {
    let table = &row.table;
    tx.execute(
        "INSERT INTO event_type (name, code, always, kind, format, table_name, event_set) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        (name, desc.code, always, &row.kind, &row.format, table, &row.set),
    )?;
    let columns = param_columns(&desc.params);
    let mut create = format!(
        "CREATE TABLE IF NOT EXISTS {} (log INTEGER NOT NULL REFERENCES event_log(serial), time INTEGER NOT NULL, seconds REAL NOT NULL, thread INTEGER NOT NULL",
        quoted(table)
    );
    let mut insert = tx.prepare(
        "INSERT INTO event_param (event, position, name, letter, sql_type, column_name) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (i, ((param, letter), column)) in desc.params.iter().zip(&desc.format).zip(&columns).enumerate() {
        let ty = sql_type(*letter);
        // A NaN double is stored as NULL; every other value is there.
        let null = if *letter == Letter::Double { "" } else { " NOT NULL" };
        create.push_str(&format!(", {} {ty}{null}", quoted(column)));
        insert.execute((name, i as i64, param, letter.as_char().to_string(), ty, column))?;
    }
    if has_fields(desc) {
        create.push_str(&format!(", {FIELDS_COLUMN} TEXT"));
    }
    create.push(')');
    tx.execute_batch(&create)?;
    // A table an exporter before `fields_json` made has not got it.
    if has_fields(desc) {
        let present: i64 =
            tx.query_row("SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2", (table, FIELDS_COLUMN), |r| {
                r.get(0)
            })?;
        if present == 0 {
            tx.execute_batch(&format!("ALTER TABLE {} ADD COLUMN {FIELDS_COLUMN} TEXT", quoted(table)))?;
        }
    }
    Ok(())
}

/// Makes the `events` view again, over every event table the database holds: one row per
/// event, its parameters as a JSON object by column name.
fn make_events_view(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let mut selects = Vec::new();
    {
        let mut types = tx.prepare("SELECT name, kind, table_name FROM event_type ORDER BY table_name")?;
        let mut columns = tx.prepare("SELECT column_name FROM event_param WHERE event = ?1 ORDER BY position")?;
        let mut rows = types.query([])?;
        while let Some(row) = rows.next()? {
            let (name, kind, table): (String, String, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
            let args: Vec<String> = columns
                .query_map([&name], |r| r.get::<_, String>(0))?
                .map(|c| c.map(|c| format!("{}, {}", sql_string(&c), quoted(&c))))
                .collect::<rusqlite::Result<_>>()?;
            selects.push(format!(
                "SELECT log, time, seconds, thread, {} AS event, {} AS kind, json_object({}) AS args FROM {}",
                sql_string(&name),
                sql_string(&kind),
                args.join(", "),
                quoted(&table)
            ));
        }
    }
    tx.execute_batch("DROP VIEW IF EXISTS events")?;
    if selects.is_empty() {
        return Ok(());
    }
    let groups: Vec<String> =
        selects.chunks(UNION_GROUP).map(|g| format!("SELECT * FROM ({})", g.join(" UNION ALL "))).collect();
    tx.execute_batch(&format!("CREATE VIEW events AS {}", groups.join(" UNION ALL ")))
}

/// `text` as an SQL string literal.
fn sql_string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The INSERT of a row of event type `desc`.
fn insert_sql(desc: &Desc) -> String {
    let columns = param_columns(&desc.params);
    let mut names: Vec<String> =
        FIXED_COLUMNS.iter().map(|c| (*c).to_owned()).chain(columns.iter().map(|c| quoted(c))).collect();
    if has_fields(desc) {
        names.push(FIELDS_COLUMN.to_owned());
    }
    let marks: Vec<String> = (1..=names.len()).map(|i| format!("?{i}")).collect();
    format!("INSERT INTO {} ({}) VALUES ({})", quoted(&table_name(desc)), names.join(", "), marks.join(", "))
}

/// A 64-bit value as SQLite stores it: its two's-complement bit pattern.
fn bits(value: u64) -> i64 {
    i64::from_ne_bytes(value.to_ne_bytes())
}

/// Imports one log (log `file` of the export): registers it and its event types, then
/// inserts the events `window` selects.
fn import(
    tx: &Transaction<'_>,
    glue: &mut Glue,
    log: &mut Log,
    window: (usize, &mut Window),
    db: &DbErrors<'_>,
) -> Result<Imported> {
    let sql = |e: rusqlite::Error| db.error(&e);
    let shown = log.path().display().to_string();
    let identity =
        super::tables::identity(&log.files()).map_err(|e| DumpError::new(format!("{shown}: cannot read: {e}")))?;
    let earlier: Option<(i64, String, String)> = tx
        .query_row("SELECT serial, path, imported FROM event_log WHERE identity = ?1", [&identity], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .map(Some)
        .or_else(|e| if matches!(e, rusqlite::Error::QueryReturnedNoRows) { Ok(None) } else { Err(e) })
        .map_err(sql)?;
    if let Some((serial, path, imported)) = earlier {
        return Err(db.refuse(
            format!("{shown}: already imported into {} as log {serial} ({path}, at {imported})", db.0.display()),
            "",
        ));
    }
    register(tx, glue, log, db)?;
    let path = std::fs::canonicalize(log.path()).unwrap_or_else(|_| log.path().to_path_buf());
    let header = log.header().clone();
    tx.execute(
        "INSERT INTO event_log (path, size, identity, program, pid, arch, os, start_wall_ns, start, format_version, event_set_version, \
         clock, ticks_per_second, start_ticks, imported, host, service, labels) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, \
         strftime('%Y-%m-%dT%H:%M:%fZ', ?8 / 1e9, 'unixepoch'), ?9, ?10, ?11, ?12, ?13, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), ?14, ?15, ?16)",
        (
            path.display().to_string(),
            bits(log.len()),
            &identity,
            &header.producer.program,
            bits(header.producer.pid),
            &header.producer.arch,
            &header.producer.os,
            header.producer.start_wall_ns,
            header.format.to_string(),
            super::set_versions(&header),
            header.clock.source.name(),
            bits(header.clock.ticks_per_second),
            bits(header.clock.start_ticks),
            (!header.producer.host.is_empty()).then_some(&header.producer.host),
            header.properties.label("service"),
            crate::identity::labels_json(&header),
        ),
    )
    .map_err(sql)?;
    let serial = tx.last_insert_rowid();
    tx.execute("UPDATE event_log SET recording = ?1 WHERE serial = ?2", (log.recording_id().to_hex(), serial))
        .map_err(sql)?;
    let (file, window) = window;
    let walked = insert_events(tx, log, (file, &mut *window), serial).map_err(sql)?;
    insert_spans(tx, log, (file, window), serial)
        .map_err(|e| DumpError::new(format!("{shown}: its spans: {e}; nothing was written")))?;
    let l = &walked.ledger;
    tx.execute(
        "UPDATE event_log SET events = ?1, blocks = ?2, damaged_blocks = ?3, bad_records = ?4, unknown_records = ?5, \
         lost_events = ?6, missing_blocks = ?7, truncated_strings = ?8, left_out = ?10 WHERE serial = ?9",
        (
            bits(l.events()),
            bits(l.blocks()),
            bits(l.damaged_blocks().len() as u64),
            bits(l.bad_records().len() as u64),
            bits(l.unknown_records()),
            bits(l.lost()),
            bits(l.missing_blocks()),
            bits(l.truncated_strings()),
            serial,
            bits(walked.left_out),
        ),
    )
    .map_err(sql)?;
    Ok(Imported {
        path: shown,
        log: serial.to_string(),
        events: walked.rows(),
        left_out: walked.left_out,
        said: Said::of([l]),
        already: false,
    })
}

/// Inserts the spans of `log` (the span model's, `crate::spans`; those whose begin `window`
/// selects) as rows of log `serial` of the `spans` table: `otel_traces`' columns, the maps
/// and the `Events` and `Links` as JSON (docs/OUTPUT.md, "SQLite").
fn insert_spans(
    tx: &Transaction<'_>,
    log: &Log,
    (file, window): (usize, &mut Window),
    serial: i64,
) -> std::io::Result<()> {
    use crate::spans::hex;
    let recording = log.recording_id().to_hex();
    let resource = crate::spans::resource(log.header(), &recording, None);
    let text = |list: &[(String, crate::spans::Attr)]| {
        let mut out = String::from("{");
        for (i, (k, v)) in list.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            crate::json::string(&mut out, k);
            out.push(':');
            crate::json::string(&mut out, &v.text());
        }
        out.push('}');
        out
    };
    let resource_json = text(&resource.attributes);
    let mut stmt = tx
        .prepare(
            "INSERT INTO spans (log, Timestamp, TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ServiceName, \
             ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes, Duration, StatusCode, StatusMessage, Events, Links) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        )
        .map_err(std::io::Error::other)?;
    let files: Vec<std::path::PathBuf> = log.files().into_iter().map(Path::to_path_buf).collect();
    let mut model = crate::spans::SpanModel::of(log);
    super::tables::spans_pass(
        &files,
        &mut model,
        |event| window.selects(file, event),
        |span| {
            let mut events = String::from("[");
            for (i, e) in span.events.iter().enumerate() {
                if i > 0 {
                    events.push(',');
                }
                events.push_str(&format!("{{\"Timestamp\":{},\"Name\":", e.time_ns));
                crate::json::string(&mut events, &e.name);
                events.push_str(",\"Attributes\":");
                events.push_str(&text(&e.attributes.list));
                events.push('}');
            }
            events.push(']');
            let mut links = String::from("[");
            for (i, l) in span.links.iter().enumerate() {
                if i > 0 {
                    links.push(',');
                }
                links.push_str(&format!(
                    "{{\"TraceId\":\"{}\",\"SpanId\":\"{}\",\"TraceState\":\"\",\"Attributes\":{}}}",
                    hex(&l.trace_id),
                    hex(&l.span_id),
                    text(&l.attributes())
                ));
            }
            links.push(']');
            let signed = |ns: u64| i64::try_from(ns).unwrap_or(i64::MAX);
            stmt.execute(rusqlite::params![
                serial,
                signed(span.start_ns),
                hex(&span.trace_id),
                hex(&span.span_id),
                span.parent.map(|p| hex(&p)).unwrap_or_default(),
                span.trace_state,
                span.name,
                span.kind.name(),
                resource.service,
                resource_json,
                span.scope.0,
                span.scope.1,
                text(&span.attributes.list),
                signed(span.duration_ns()),
                span.status.name(),
                span.status_message,
                events,
                links,
            ])
            .map(|_| ())
            .map_err(std::io::Error::other)
        },
    )
}

/// Inserts every event of `log` as a row of log `serial`, block by block.
fn insert_events(
    tx: &Transaction<'_>,
    log: &mut Log,
    (file, window): (usize, &mut Window),
    serial: i64,
) -> rusqlite::Result<Walked> {
    let mut statements: HashMap<u16, Statement<'_>> = HashMap::new();
    let time = Timebase::new(&log.header().clock);
    let declared = event_format::histogram::Declared::new(log.header());
    let mut buckets = tx.prepare(
        "INSERT INTO histogram_bucket (log, time, seconds, thread, since, histogram, event_set, of, unit, layout, \
         bucket, low, high, count) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    )?;
    super::tables::walk(log, file, window, |event| {
        // A histogram record's buckets, one row each, beside its row of its own table.
        for row in super::tables::histogram_rows(&declared, event).unwrap_or_default() {
            let h = &row.declared.histogram;
            buckets.execute((
                serial,
                bits(event.time),
                time.seconds(event.time),
                bits(row.thread),
                bits(row.since),
                &h.name,
                &row.declared.set,
                &row.declared.of,
                &row.declared.unit,
                h.buckets.word(),
                row.bucket as i64,
                bits(row.low),
                bits(row.high),
                bits(row.count),
            ))?;
        }
        // By wire code: sets may reuse each other's own codes.
        let stmt = match statements.entry(event.desc.wire) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(tx.prepare(&insert_sql(event.desc))?),
        };
        stmt.raw_bind_parameter(1, serial)?;
        stmt.raw_bind_parameter(2, bits(event.time))?;
        stmt.raw_bind_parameter(3, time.seconds(event.time))?;
        stmt.raw_bind_parameter(4, bits(event.thread))?;
        for (i, value) in event.values().enumerate() {
            let at = FIXED_COLUMNS.len() + 1 + i;
            match value {
                Value::Pointer(v) | Value::Address(v) | Value::Word(v) => stmt.raw_bind_parameter(at, bits(v))?,
                Value::Unsigned(v) => stmt.raw_bind_parameter(at, i64::from(v))?,
                Value::Signed(v) => stmt.raw_bind_parameter(at, v)?,
                Value::Double(v) => stmt.raw_bind_parameter(at, v)?,
                Value::Bool(v) => stmt.raw_bind_parameter(at, i64::from(v))?,
                Value::Str(text) => stmt.raw_bind_parameter(at, String::from_utf8_lossy(text.bytes))?,
            }
        }
        if has_fields(event.desc) {
            let at = FIXED_COLUMNS.len() + 1 + event.desc.format.len();
            let mut out = String::new();
            let json = fields_json(event, &mut out).then_some(out);
            stmt.raw_bind_parameter(at, json)?;
        }
        stmt.raw_execute()?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_columns_never_collide_as_sqlite_compares_names() {
        let params: Vec<String> = ["Thread", "x", "X", "x_", "count"].map(str::to_owned).to_vec();
        assert_eq!(param_columns(&params), ["Thread_", "x", "X_", "x__", "count"]);
    }

    #[test]
    fn words_keep_their_bits() {
        assert_eq!(bits(u64::MAX), -1);
        assert_eq!(bits(1 << 63), i64::MIN);
        assert_eq!(bits(42), 42);
    }
}
