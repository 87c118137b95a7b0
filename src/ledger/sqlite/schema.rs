//! The SQLite ledger's schema: each version a `.sql` file under `schema/`
//! (`include_str!`ed), applied in order by `migrate` in one transaction,
//! and the rows of schema 1 copied into schema 2 (`upgrade_to_2`: the URL
//! keys are computed here, so that step is Rust). The version is the file's
//! `user_version`.

use super::super::url_keys::{next_key, url_key};
use super::super::{stored, stored_opt, Action, Class, ItemState, LedgerError, Result};
use super::SqliteLedger;
use rusqlite::{params, Connection, TransactionBehavior};
use std::collections::{HashMap, HashSet};

/// The schema version this binary writes.
pub(super) const SCHEMA_VERSION: i64 = 13;
/// Schema 1, the first migration of every ledger.
const SCHEMA_1: &str = include_str!("schema/0001_ledger.sql");

/// Schema 2, over schema 1: SQL before and after `upgrade_to_2` copies the rows.
const SCHEMA_2: &str = include_str!("schema/0002_requests.sql");
/// Schema 3, over schema 2: the sitemaps read for sources, and reminders.
const SCHEMA_3: &str = include_str!("schema/0003_sources.sql");
/// Schema 4, over schema 3: Google URL inspections per property and class, and
/// the items `queue drop` removed that requests name.
const SCHEMA_4: &str = include_str!("schema/0004_inspections.sql");
/// Schema 5, over schema 4: groups have a channel (sitemap groups), the sitemaps read
/// keep when they last changed, and what the engines report of the sitemaps submitted.
const SCHEMA_5: &str = include_str!("schema/0005_sitemaps.sql");
/// Schema 6, over schema 5: `indexq serve`'s intake limits.
const SCHEMA_6: &str = include_str!("schema/0006_serve.sql");
/// Schema 7, over schema 6: the items' CHECK constraints as comparisons
/// (an `IN` list costs SQLite a temporary index for every row written).
const SCHEMA_7: &str = include_str!("schema/0007_checks.sql");
/// Schema 8, over schema 7: a reservation lists its items (no index of the
/// items in flight, which every claim and answer wrote).
const SCHEMA_8: &str = include_str!("schema/0008_reservation_items.sql");
/// Schema 9, over schema 8: a claim writes no item row (its runs of ids in
/// `in_flight` hold what it took); the view of the items' states.
const SCHEMA_9: &str = include_str!("schema/0009_in_flight.sql");
/// Schema 10, over schema 9: the public URL of each Ghost post or page
/// (`serve`'s Ghost hook).
const SCHEMA_10: &str = include_str!("schema/0010_ghost_urls.sql");
/// Schema 11, over schema 10: the sources that cannot be read, since when,
/// and when a run last said so.
const SCHEMA_11: &str = include_str!("schema/0011_source_failures.sql");
/// Schema 12, over schema 11: a ledger per batch (issue 48) — the
/// batches, spans and hash runs, filled from the items
/// (`batches::fill_from`); then `SCHEMA_12_ITEMS`.
const SCHEMA_12: &str = include_str!("schema/0012_batches.sql");
/// Schema 12's second step, once the batches, spans and changes are filled
/// from the items: the items dropped.
const SCHEMA_12_ITEMS: &str = include_str!("schema/0012_items.sql");
/// Schema 13, over schema 12: each hash run's stamp, which names it once
/// for the runs a process keeps in memory.
const SCHEMA_13: &str = include_str!("schema/0013_run_stamps.sql");
const COPY_ROWS: &str = "-- (upgrade_to_2 copies the rows here)";
/// A new ledger's schema at `SCHEMA_VERSION`, in one script: what the
/// steps above make of an empty file (`a_new_ledger_is_what_every_step_makes`
/// checks that the two agree).
const SCHEMA_NEW: &str = include_str!("schema/current.sql");

impl SqliteLedger {
    pub(super) fn migrate(&mut self) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(LedgerError::Newer { found: version, known: SCHEMA_VERSION });
        }
        upgrade(&tx, version, SCHEMA_VERSION)?;
        if version < SCHEMA_VERSION {
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        }
        super::commit(tx)?;
        // Schemas 7 and 12 rebuilt a ledger's items, leaving the old table's
        // pages free in the file, about half of it: they are given back
        // once. Only the file's size depends on it, so a failure (a
        // long-busy ledger) is said and the run goes on.
        if (1..12).contains(&version) {
            if let Err(e) = self.conn.execute_batch("VACUUM") {
                tracing::warn!("the ledger's schema is up to date, but its freed pages were not given back: {e}");
            }
        }
        Ok(())
    }
}

/// Schema `version` brought up to schema `upto`, in `tx`: a new ledger
/// made at once, at the current schema (`SCHEMA_NEW`), any other by each
/// step. Each step parses its script and has SQLite read the whole schema
/// again after each change: made step by step, a new ledger's schema took
/// a tenth of a fresh 100k submit (docs/performance.md, *Measured choices*).
fn upgrade(tx: &Connection, version: i64, upto: i64) -> Result<()> {
    if version == 0 && upto == SCHEMA_VERSION {
        tx.execute_batch(SCHEMA_NEW)?;
        return Ok(());
    }
    steps(tx, version, upto)
}

/// The steps from schema `version` up to schema `upto`, in `tx`.
fn steps(tx: &Connection, version: i64, upto: i64) -> Result<()> {
    if version < 1 && upto >= 1 {
        tx.execute_batch(SCHEMA_1)?;
    }
    if version < 2 && upto >= 2 {
        upgrade_to_2(tx)?;
    }
    if version < 3 && upto >= 3 {
        tx.execute_batch(SCHEMA_3)?;
    }
    if version < 4 && upto >= 4 {
        tx.execute_batch(SCHEMA_4)?;
    }
    if version < 5 && upto >= 5 {
        tx.execute_batch(SCHEMA_5)?;
    }
    if version < 6 && upto >= 6 {
        tx.execute_batch(SCHEMA_6)?;
    }
    if version < 7 && upto >= 7 {
        tx.execute_batch(SCHEMA_7)?;
    }
    if version < 8 && upto >= 8 {
        tx.execute_batch(SCHEMA_8)?;
    }
    if version < 9 && upto >= 9 {
        tx.execute_batch(SCHEMA_9)?;
    }
    if version < 10 && upto >= 10 {
        tx.execute_batch(SCHEMA_10)?;
    }
    if version < 11 && upto >= 11 {
        tx.execute_batch(SCHEMA_11)?;
    }
    if version < 12 && upto >= 12 {
        tx.execute_batch(SCHEMA_12)?;
    }
    // Before the items of a ledger older than 12 are filled into runs
    // below: a run is written with its stamp.
    if version < 13 && upto >= 13 {
        tx.execute_batch(SCHEMA_13)?;
    }
    if version < 12 && upto >= 12 {
        super::batches::fill_from(tx, super::batches::ITEMS_OF_SCHEMA_11, 0)?;
        // Every item's lastmod and action went into its batch row just
        // now, so this finds none to keep apart; it is the rule that
        // holds the table equal to the items before they go.
        super::batches::changes_from_items(tx, i64::MIN, i64::MAX)?;
        tx.execute_batch(SCHEMA_12_ITEMS)?;
    }
    Ok(())
}

/// A new ledger of schema `version` (11 at most) at `path`: the tests' way
/// to make a ledger of a schema before this branch's, its items in the
/// shape of that schema.
#[cfg(test)]
pub(super) fn new_schema(path: &std::path::Path, version: i64) -> Connection {
    let mut conn = Connection::open(path).unwrap();
    rusqlite::vtab::array::load_module(&conn).unwrap();
    let tx = conn.transaction().unwrap();
    upgrade(&tx, 0, version).unwrap();
    tx.pragma_update(None, "user_version", version).unwrap();
    tx.commit().unwrap();
    conn
}

/// Schema 1 → 2: items get their URL key, each attempt becomes a recorded
/// request naming its item, and each item points at its last one.
fn upgrade_to_2(tx: &Connection) -> Result<()> {
    let (before, after) = SCHEMA_2.split_once(COPY_ROWS).expect("the schema-2 script marks where the rows are copied");
    tx.execute_batch(before)?;
    copy_items_v1(tx)?;
    copy_attempts_v1(tx)?;
    tx.execute_batch(after)?;
    // The kept counts of schema 2, from its items' own states.
    tx.execute_batch(
        "UPDATE groups SET
             queued = (SELECT COUNT(*) FROM items WHERE group_id = groups.id AND state = 'queued'),
             in_flight = (SELECT COUNT(*) FROM items WHERE group_id = groups.id AND state = 'in_flight'),
             parked = (SELECT COUNT(*) FROM items WHERE group_id = groups.id AND state = 'parked'),
             accepted = (SELECT COUNT(*) FROM items WHERE group_id = groups.id AND state = 'accepted');",
    )?;
    Ok(())
}

/// Schema 1's items into schema 2's, each with its URL key (a URL whose key
/// another of its group holds takes the next free one). Values this indexq
/// does not know stop the upgrade, naming them.
fn copy_items_v1(tx: &Connection) -> Result<()> {
    let mut read = tx.prepare(
        "SELECT id, group_id, url, state, action, lastmod, next_attempt_at, enqueued_at, attempts, last_class,
                 streak, streak_started_at, accepted_at, parked_fingerprint, reservation_id
             FROM items_v1 ORDER BY id",
    )?;
    let mut insert = tx.prepare(
        "INSERT INTO items (id, group_id, url_key, url, state, action, lastmod, next_attempt_at, enqueued_at,
                 attempts, last_class, streak, streak_started_at, accepted_at, parked_fingerprint, reservation_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    )?;
    let mut taken = HashSet::new();
    let mut rows = read.query([])?;
    while let Some(r) = rows.next()? {
        let (group, url): (i64, String) = (r.get(1)?, r.get(2)?);
        let mut key = url_key(&url);
        while !taken.insert((group, key)) {
            key = next_key(key);
        }
        // Values this indexq does not know stop the upgrade, naming them.
        let state: String = r.get(3)?;
        let action: String = r.get(4)?;
        let class: Option<String> = r.get(9)?;
        stored::<ItemState>("items", "state", &state)?;
        stored::<Action>("items", "action", &action)?;
        stored_opt::<Class>("items", "last_class", class.as_deref())?;
        insert.execute(params![
            r.get::<_, i64>(0)?,
            group,
            key,
            url,
            state,
            action,
            r.get::<_, Option<i64>>(5)?,
            r.get::<_, Option<i64>>(6)?,
            r.get::<_, i64>(7)?,
            r.get::<_, i64>(8)?,
            class,
            r.get::<_, i64>(10)?,
            r.get::<_, Option<i64>>(11)?,
            r.get::<_, Option<i64>>(12)?,
            r.get::<_, Option<String>>(13)?,
            r.get::<_, Option<i64>>(14)?,
        ])?;
    }
    Ok(())
}

/// Each attempt of schema 1 as a request naming its one item, and each item
/// pointed at its last.
fn copy_attempts_v1(tx: &Connection) -> Result<()> {
    let mut read = tx.prepare(
        "SELECT a.item_id, i.group_id, a.at, a.class, a.reason, a.message, r.http_status, r.body, a.retry_at
             FROM attempts_v1 a JOIN items_v1 i ON i.id = a.item_id LEFT JOIN responses_v1 r ON r.id = a.response_id
             ORDER BY a.at, a.id",
    )?;
    let mut insert = tx.prepare(
        "INSERT INTO requests (group_id, at, class, reason, message, http_status, body, retry_at, n, first_item,
                 last_item)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, ?9, ?9)",
    )?;
    let mut last = HashMap::new();
    let mut rows = read.query([])?;
    while let Some(r) = rows.next()? {
        let item: i64 = r.get(0)?;
        let class: String = r.get(3)?;
        stored::<Class>("attempts", "class", &class)?;
        insert.execute(params![
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
            class,
            r.get::<_, String>(4)?,
            r.get::<_, String>(5)?,
            r.get::<_, Option<i64>>(6)?,
            r.get::<_, Option<String>>(7)?,
            r.get::<_, Option<i64>>(8)?,
            item,
        ])?;
        last.insert(item, tx.last_insert_rowid());
    }
    let mut point = tx.prepare("UPDATE items SET last_request_id = ?2 WHERE id = ?1")?;
    for (item, request) in last {
        point.execute(params![item, request])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    /// A new ledger made at once (`SCHEMA_NEW`) has the tables and indexes,
    /// each as written, that every step from schema 1 makes of an empty
    /// file. When they differ, the message is the script to put in
    /// `schema/current.sql`.
    #[test]
    fn a_new_ledger_is_what_every_step_makes() {
        let master = |conn: &Connection| -> Vec<(String, String, String, String)> {
            let mut stmt = conn
                .prepare(
                    "SELECT type, name, tbl_name, sql FROM sqlite_master
                     WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'
                     ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, rowid",
                )
                .unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .unwrap()
                .map(|r| r.unwrap())
                .collect()
        };
        let mut stepped = Connection::open_in_memory().unwrap();
        rusqlite::vtab::array::load_module(&stepped).unwrap();
        let tx = stepped.transaction().unwrap();
        steps(&tx, 0, SCHEMA_VERSION).unwrap();
        tx.commit().unwrap();
        let made = Connection::open_in_memory().unwrap();
        upgrade(&made, 0, SCHEMA_VERSION).unwrap();
        let (stepped, made) = (master(&stepped), master(&made));
        let sorted = |mut rows: Vec<(String, String, String, String)>| {
            rows.sort();
            rows
        };
        if sorted(stepped.clone()) != sorted(made) {
            let header: String =
                SCHEMA_NEW.lines().take_while(|l| l.starts_with("--")).map(|l| format!("{l}\n")).collect();
            let script: String = stepped.iter().map(|(_, _, _, sql)| format!("{sql};\n\n")).collect();
            panic!("schema/current.sql differs from what the steps make; it should read:\n{header}\n{script}");
        }
    }

    /// A group and two items of it, in the items' shape of schemas 7 to 11.
    const ITEMS_OF_SCHEMA_11: &str =
        "INSERT INTO groups (id, property, engine, target) VALUES (1, 'site', 'indexnow', 'https://engine.example/');
         INSERT INTO items (id, group_id, url_key, url, state, next_attempt_at, enqueued_at)
             VALUES (1, 1, 1, 'https://site.example/0', 'queued', 1, 1),
                    (2, 1, 2, 'https://site.example/1', 'accepted', NULL, 1);";

    /// A ledger written by an indexq of schema version 1 gets the run
    /// records on open, and keeps what it had.
    #[test]
    fn a_version_1_ledger_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(SCHEMA_1).unwrap();
            conn.execute("INSERT INTO groups (property, engine, target) VALUES ('site', 'bing', '')", []).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
        }
        let mut ledger = SqliteLedger::open(&path).unwrap();
        assert_eq!(SqliteLedger::schema_version(&ledger).unwrap(), SCHEMA_VERSION);
        assert_eq!(ledger.stored_groups().unwrap().len(), 1);
        let run = RunRecord {
            host: "h".into(),
            started_at: t("2026-12-03T09:00:00Z"),
            ended_at: t("2026-12-03T09:00:01Z"),
            exit_code: 0,
        };
        ledger.record_run(&run).unwrap();
        assert_eq!(ledger.last_run(true).unwrap(), Some(run));
    }

    /// A ledger of schema 4 (a group, a sitemap read for sources) gets
    /// schema 5 on open: its groups are URL groups, its sitemap read is
    /// taken to have changed when it was read, and it has no sitemap report
    /// yet.
    #[test]
    fn a_version_4_ledger_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            let tx = conn.transaction().unwrap();
            tx.execute_batch(SCHEMA_1).unwrap();
            upgrade_to_2(&tx).unwrap();
            tx.execute_batch(SCHEMA_3).unwrap();
            tx.execute_batch(SCHEMA_4).unwrap();
            tx.pragma_update(None, "user_version", 4).unwrap();
            tx.execute("INSERT INTO groups (property, engine, target) VALUES ('site', 'google', '')", []).unwrap();
            tx.execute(
                "INSERT INTO sources (url, etag, last_modified, digest, kind, routes, fetched_at)
                 VALUES ('https://site.example/sitemap.xml', '\"v1\"', NULL, 'd1', 'urlset', 'r', ?1)",
                [super::super::ts(t("2026-12-01T08:00:00Z"))],
            )
            .unwrap();
            tx.commit().unwrap();
        }
        let mut ledger = SqliteLedger::open(&path).unwrap();
        assert_eq!(SqliteLedger::schema_version(&ledger).unwrap(), SCHEMA_VERSION);
        assert_eq!(ledger.stored_groups().unwrap(), [GroupKey::urls("site", EngineKind::Google, "")]);
        let [source] = ledger.source_documents().unwrap().try_into().unwrap();
        assert_eq!((source.fetched_at, source.changed_at), (t("2026-12-01T08:00:00Z"), t("2026-12-01T08:00:00Z")));
        assert!(ledger.sitemap_states().unwrap().is_empty());
        // The same body read again keeps when it changed; another is a change.
        let again =
            SourceDocument { fetched_at: t("2026-12-02T08:00:00Z"), changed_at: t("2026-12-02T08:00:00Z"), ..source };
        let kept = ledger.record_source_documents(std::slice::from_ref(&again)).unwrap();
        assert_eq!(kept[0].changed_at, t("2026-12-01T08:00:00Z"));
        let other = SourceDocument { digest: "d2".into(), ..again };
        assert_eq!(ledger.record_source_documents(&[other]).unwrap()[0].changed_at, t("2026-12-02T08:00:00Z"));
    }

    /// A ledger of schema 9 (as it was before the Ghost hook remembered
    /// anything) gets schema 10 on open: no public URL of a Ghost post yet,
    /// one recorded then read back, and its items kept.
    #[test]
    fn a_version_9_ledger_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        new_schema(&path, 9).execute_batch(ITEMS_OF_SCHEMA_11).unwrap();
        let mut ledger = SqliteLedger::open(&path).unwrap();
        assert_eq!(SqliteLedger::schema_version(&ledger).unwrap(), SCHEMA_VERSION);
        assert_eq!(ledger.stored_groups().unwrap().len(), 1);
        assert_eq!(ledger.ghost_url("site", "6571c9d2a1b2c3d4e5f60718").unwrap(), None);
        let url = GhostUrl {
            property: "site".into(),
            ghost_id: "6571c9d2a1b2c3d4e5f60718".into(),
            url: "https://site.example/hello/".into(),
            announced_at: t("2026-12-03T09:00:00Z"),
        };
        ledger.record_ghost_url(&url).unwrap();
        assert_eq!(ledger.ghost_url("site", "6571c9d2a1b2c3d4e5f60718").unwrap(), Some(url.url));
    }

    /// A ledger of schema 10 (before a source that cannot be read was kept)
    /// gets schema 11 on open: no source failing, one recorded then read
    /// back, and its items kept.
    #[test]
    fn a_version_10_ledger_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        new_schema(&path, 10).execute_batch(ITEMS_OF_SCHEMA_11).unwrap();
        let mut ledger = SqliteLedger::open(&path).unwrap();
        assert_eq!(SqliteLedger::schema_version(&ledger).unwrap(), SCHEMA_VERSION);
        assert_eq!(ledger.stored_groups().unwrap().len(), 1);
        assert!(ledger.source_failures().unwrap().is_empty());
        let failure = SourceFailure {
            property: "site".into(),
            source: "https://site.example/sitemap.xml".into(),
            reason: crate::model::LocalReason::SourceTimeout,
            message: "cannot fetch: operation timed out".into(),
            since: t("2026-12-03T09:00:00Z"),
            failed_at: t("2026-12-03T09:00:00Z"),
            reminded_at: None,
        };
        assert_eq!(ledger.record_source_failure(&failure).unwrap(), failure);
    }

    /// Schema 7's items refuse what schema 6's did (a value no indexq
    /// writes, in each checked column), and no check of theirs is an `IN`
    /// list (SQLite builds one's index for every row written).
    #[test]
    fn the_items_checks_refuse_unknown_values_without_an_in_list() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
        let conn = &ledger.conn;
        // An item's action is checked where it is kept apart from its batch
        // row (`item_changes`); its state is the spans' (schema 12), which
        // check it the same way.
        for (table, check) in [("item_changes", "CHECK (action = 'updated'"), ("spans", "CHECK (state = 'queued'")] {
            let sql: String =
                conn.query_row("SELECT sql FROM sqlite_schema WHERE name = ?1", [table], |r| r.get(0)).unwrap();
            assert!(sql.contains(check) && !sql.contains(" IN ("), "{sql}");
        }
        conn.execute("INSERT INTO groups (property, engine, target) VALUES ('site', 'bing', '')", []).unwrap();
        let insert = |state: &str, action: &str, class: Option<&str>| {
            let id: i64 = conn.query_row("SELECT COALESCE(MAX(id), 0) + 1 FROM item_changes", [], |r| r.get(0))?;
            conn.execute("INSERT INTO item_changes (id, lastmod, action) VALUES (?1, NULL, ?2)", params![id, action])?;
            conn.execute(
                "INSERT INTO spans (first, last, group_id, state, enqueued_at, last_class) VALUES (?1, ?1, 1, ?2, 0, ?3)",
                params![id, state, class],
            )
        };
        insert("queued", "updated", None).unwrap();
        insert("parked", "deleted", Some("key_pending")).unwrap();
        for (state, action, class) in
            [("done", "updated", None), ("queued", "moved", None), ("queued", "updated", Some("failed"))]
        {
            let refused = insert(state, action, class).unwrap_err().to_string();
            assert!(refused.contains("CHECK constraint failed"), "{state} {action} {class:?}: {refused}");
        }
    }
}
