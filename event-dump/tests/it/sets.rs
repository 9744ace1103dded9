//! event-dump on a stream of two event sets (`common::two_sets_log`: `app` and `storage-v2`,
//! which reuse each other's codes, a kind name and an event name), in both byte orders:
//! print (text, JSON, CSV), stats, check, schema, `--kind`/`--event`/`--filter` with
//! qualified names, and each export keeping the sets apart. The checked-in streams of
//! tests/data/sets/ are these; `UPDATE_FIXTURES=1 cargo test -p event-dump --test it sets::`
//! writes them again.

use crate::common::{self, *};
use event_format::wire::Order;
use std::path::{Path, PathBuf};

/// A directory of the test's own ([`common::numbered_dir`]).
fn dir() -> Scratch {
    common::numbered_dir("sets")
}

/// The checked-in stream of `order`, checked to be what [`common::two_sets_log`] makes
/// (written again when `UPDATE_FIXTURES` is set).
fn fixture(order: Order) -> PathBuf {
    let name = match order {
        Order::Little => "two-sets-le.evt",
        Order::Big => "two-sets-be.evt",
    };
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sets");
    // A file of its own for each call: the tests run side by side.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = dir();
    let made = d.join(name);
    common::two_sets_log(&made, order);
    let path = data.join(name);
    if std::env::var_os("UPDATE_FIXTURES").is_some() {
        std::fs::create_dir_all(&data).unwrap();
        // Renamed into place, so that a test reading it meanwhile sees a whole stream.
        let fresh = data.join(format!(".{call}-{name}"));
        std::fs::copy(&made, &fresh).unwrap();
        std::fs::rename(&fresh, &path).unwrap();
    }
    let checked_in = std::fs::read(&path).unwrap_or_else(|e| {
        panic!("{}: {e} (make it: UPDATE_FIXTURES=1 cargo test -p event-dump --test it sets::)", path.display())
    });
    assert_eq!(checked_in, std::fs::read(&made).unwrap(), "{name} is what the test makes");
    path
}

/// stdout of `event-dump args...` on both byte orders' streams, which must agree; the
/// path shows as LOG.
fn both(args: &[&str]) -> String {
    let mut texts = Vec::new();
    for order in [Order::Little, Order::Big] {
        let path = fixture(order);
        let p = path.to_str().unwrap();
        let mut all = vec![args[0], p];
        all.extend_from_slice(&args[1..]);
        let out = run(&all);
        assert!(out.status.code().is_some_and(|c| c <= 1), "{args:?}: {}", stderr(&out));
        // `stats` names the byte order, the one line where the two differ.
        texts
            .push(format!("{}{}", stdout(&out), stderr(&out)).replace(p, "LOG").replace("big-endian", "little-endian"));
    }
    assert_eq!(texts[0], texts[1], "{args:?}: both byte orders read the same");
    texts.swap_remove(0)
}

#[test]
fn print_qualifies_every_name_by_its_set() {
    insta::assert_snapshot!("two_sets_text", both(&["print"]));
    insta::assert_snapshot!("two_sets_json", both(&["print", "--format", "json"]));
    insta::assert_snapshot!("two_sets_csv", both(&["print", "--format", "csv"]));
}

#[test]
fn stats_counts_per_set_and_check_is_whole() {
    insta::assert_snapshot!("two_sets_stats", both(&["stats"]));
    let text = both(&["check"]);
    assert!(text.contains("2 blocks, 12 events\n  whole"), "{text}");
}

#[test]
fn schema_prints_every_set_and_compares_by_name() {
    let d = dir();
    insta::assert_snapshot!("two_sets_schema", both(&["schema"]));
    let storage = d.join("storage.def");
    std::fs::write(&storage, STORAGE_DEF.replace("VERSION(2, 0, 1)", "VERSION(2, 0, 2)")).unwrap();
    let text = both(&["schema", "--against", storage.to_str().unwrap()]);
    assert!(text.starts_with("compatible: the log's event set is 2.0.1, events.def is 2.0.2"), "{text}");
    let app = d.join("app.def");
    std::fs::write(&app, APP_DEF.replace("WU, id, status", "WW, id, status")).unwrap();
    let text = both(&["schema", "--against", app.to_str().unwrap()]);
    assert!(text.starts_with("incompatible: events with the same code mean different things"), "{text}");
    let other = d.join("other.def");
    std::fs::write(&other, APP_DEF.replace("SET(app)", "SET(other)")).unwrap();
    let out = run(&["schema", fixture(Order::Little).to_str().unwrap(), "--against", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("the log has no set named `other`; its sets are app, storage-v2\n"),
        "{}",
        stderr(&out)
    );
    let unnamed = d.join("events.def");
    std::fs::write(&unnamed, APP_DEF.replace("SET(app)\n", "")).unwrap();
    let out = run(&["schema", fixture(Order::Little).to_str().unwrap(), "--against", unnamed.to_str().unwrap()]);
    assert!(
        stderr(&out).contains("the log has no set named `events`; its sets are app, storage-v2 (name the set to compare with a SET line in the events.def)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn kind_event_and_filter_take_qualified_names() {
    let mut text = String::new();
    for args in [
        &["--kind", "storage-v2:*"][..],
        &["--kind", "storage-v2:Pool"],
        &["--kind", "Pool"],
        &["--kind", "*:Pool,-app:*"],
        &["--event", "storage-v2:Page:PageWrite"],
        &["--event", "storage-v2:Page.PageWrite,app:Req.ReqDone"],
        &["--event", "storage-v2:PoolInit"],
        &["--event", "PoolInit"],
        &["--event", "Req.ReqStart"],
        &["--kind", "storage-v2:Page", "--event", "-*:*:Flush*"],
        &["--filter", "set == app"],
        &["--filter", "name == storage-v2:PoolInit"],
        &["--filter", "kind ~ \"storage-v2:P*\" && thread == 2"],
        &["--filter", "name == PoolInit && set != app"],
        &["--kind", "Pgae"],
        &["--kind", "stroage-v2:*"],
        &["--event", "storage-v2:Page:PageWirte"],
        &["--event", ":Page:PageWrite"],
    ] {
        let mut all = vec!["print"];
        all.extend_from_slice(args);
        text.push_str(&format!("$ event-dump print LOG {}\n{}\n", args.join(" "), both(&all)));
    }
    insta::assert_snapshot!("two_sets_selections", text);
}

#[test]
fn sqlite_keeps_the_sets_apart() {
    use rusqlite::Connection;
    let d = dir();
    let log = fixture(Order::Big);
    let db_path = d.join("two-sets.db");
    let _ = std::fs::remove_file(&db_path);
    let out = run(&["export", "--to", "sqlite", log.to_str().unwrap(), "-o", db_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = Connection::open(&db_path).unwrap();
    let rows = |sql: &str| -> Vec<String> {
        let mut stmt = db.prepare(sql).unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| {
            Ok((0..n)
                .map(|i| match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Null => "NULL".to_owned(),
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Real(v) => v.to_string(),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    rusqlite::types::ValueRef::Blob(_) => "BLOB".to_owned(),
                })
                .collect::<Vec<_>>()
                .join(" | "))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let mut text = String::new();
    for sql in [
        "SELECT name, event_set, bit FROM event_kind ORDER BY event_set, name",
        "SELECT name, event_set, code, kind, format, table_name FROM event_type WHERE event_set != '' ORDER BY event_set, code",
        "SELECT event_set_version FROM event_log",
        "SELECT pool, frames FROM EVENT_storage_v2_PoolInit",
        "SELECT pool FROM \"EVENT_app_PoolInit\"",
        "SELECT thread, page, latency FROM EVENT_storage_v2_PageWrite ORDER BY time",
        "SELECT id, status FROM EVENT_app_ReqDone",
    ] {
        text.push_str(&format!("{sql}\n"));
        for row in rows(sql) {
            text.push_str(&format!("  {row}\n"));
        }
    }
    insta::assert_snapshot!("two_sets_sqlite", text);
    // The other byte order's stream is another log of the same sets: it joins the tables.
    let le = fixture(Order::Little);
    let out = run(&["export", "--to", "sqlite", le.to_str().unwrap(), "-o", db_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(rows("SELECT count(*) FROM EVENT_storage_v2_PageWrite"), ["8"]);
}

#[test]
fn a_layout_1_database_is_brought_to_layout_2() {
    use rusqlite::Connection;
    let d = dir();
    let db_path = d.join("layout-1.db");
    let _ = std::fs::remove_file(&db_path);
    // What an event-dump of layout 1 wrote: its glue tables, without event_set.
    let old = Connection::open(&db_path).unwrap();
    old.execute_batch(
        "PRAGMA application_id = 1165378626; PRAGMA user_version = 1;
         CREATE TABLE event_kind (name TEXT PRIMARY KEY, description TEXT NOT NULL, bit INTEGER);
         CREATE TABLE event_type (name TEXT PRIMARY KEY, code INTEGER NOT NULL UNIQUE, always INTEGER NOT NULL,
             kind TEXT NOT NULL REFERENCES event_kind(name), format TEXT NOT NULL, table_name TEXT NOT NULL);
         INSERT INTO event_kind VALUES ('Old', 'old kind', 0);
         INSERT INTO event_type VALUES ('OldThing', 9, 1, 'Old', '0', 'EVENT_OldThing');",
    )
    .unwrap();
    drop(old);
    let log = fixture(Order::Little);
    let out = run(&["export", "--to", "sqlite", log.to_str().unwrap(), "-o", db_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = Connection::open(&db_path).unwrap();
    let layout: i64 = db.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(layout, 2);
    let old: (String, i64, String) = db
        .query_row("SELECT name, code, event_set FROM event_type WHERE name = 'OldThing'", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(old, ("OldThing".to_owned(), 9, String::new()));
    let both: i64 =
        db.query_row("SELECT count(*) FROM event_type WHERE code = 1 AND event_set != ''", [], |r| r.get(0)).unwrap();
    assert_eq!(both, 2, "app's and storage-v2's code 1 side by side");
}

#[test]
fn chrome_names_events_and_slices_by_set() {
    let d = dir();
    let log = fixture(Order::Little);
    let out = d.join("two-sets.json");
    let run = run(&["export", "--to", "chrome", log.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let events: Vec<String> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] != "M")
        .map(|e| {
            format!(
                "{} {} {} {}",
                e["tid"],
                e["ph"].as_str().unwrap(),
                e["cat"].as_str().unwrap(),
                e["name"].as_str().unwrap()
            )
        })
        .collect();
    insta::assert_snapshot!("two_sets_chrome", events.join("\n"));
}

#[test]
fn ctf_event_classes_are_qualified_and_distinct() {
    let d = dir();
    let log = fixture(Order::Big);
    let out = d.join("two-sets-ctf");
    let _ = std::fs::remove_dir_all(&out);
    let run = run(&["export", "--to", "ctf", log.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    let metadata = std::fs::read_to_string(out.join("metadata")).unwrap();
    let classes: Vec<String> = metadata
        .split("\nevent {")
        .skip(1)
        .map(|class| {
            let field =
                |key: &str| class.split(&format!("\t{key} = ")).nth(1).unwrap().split(';').next().unwrap().to_owned();
            format!("{} {}", field("id"), field("name"))
        })
        .collect();
    insta::assert_snapshot!("two_sets_ctf_classes", classes.join("\n"));
    let mut ids: Vec<&str> = classes.iter().map(|c| c.split(' ').next().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), classes.len(), "every class has its own id");
    assert!(metadata.contains("event_set = \"app:1.2.0 storage-v2:2.0.1\""), "{metadata}");
}
