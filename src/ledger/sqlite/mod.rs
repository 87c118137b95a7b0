//! The SQLite ledger: one file (WAL, busy timeout, mode 0600), schema
//! versioned with `user_version`. Writes that decide anything (admit, claim,
//! finish, reconcile) run in `BEGIN IMMEDIATE` transactions, so two
//! processes sharing the file serialize on them and can never both take the
//! last unit of a budget. The decisions are `policy`'s; this file stores
//! them with set-based statements: a batch of URLs is looked up, inserted or
//! updated with a statement per few hundred rows, a claim marks its items
//! with one statement, and an answer moves every item it names with one.

use super::policy::{self, AdmitPlan, Backend, Existing, Steps};
use super::url_keys::url_key;
use super::{
    cap_body, kept_changes, owner, stored, stored_group, stored_inspection, stored_last_reason, stored_opt,
    stored_reason, Admission, AdmitRule, Answered, AttemptRow, Block, ClaimedItem, Class, Copied, CopyDropped,
    CopyItem, CopyRequest, CopyUsage, DateTime, GhostUrl, GroupKey, InspectionAnswer, InspectionCount, Intake,
    ItemFilter, ItemRow, ItemState, LedgerError, Limits, NewItem, NoticeClaim, Now, Owner, ParkedGroup, Preview, Queue,
    QueueCounts, RateDecision, RateRequest, Reason, Recorded, Report, Result, Rows, RuleWindow, RunRecord, Runs,
    SitemapRead, SitemapReports, SitemapState, SourceDocument, SourceFailure, SpanCount, StateFilter, StoredResponse,
    StoredSitemap, TimeDelta, Usage, Utc,
};
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row, ToSql, Transaction, TransactionBehavior};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

mod admit;
mod answer;
mod batches;
mod claim;
mod copy;
mod limits;
mod listing;
mod queue;
mod runs;
mod schema;
mod sitemaps;
mod spans;

use admit::{
    file_id, ghost_urls, next_item_id, source_documents, source_failures, store_ghost_urls, store_source_documents,
    store_source_failures, Admitting, Helper,
};

/// Rows a multi-row statement takes at a time (5 values a row stay well
/// under SQLite's limit of 32,766 parameters).
const CHUNK: usize = 500;

pub struct SqliteLedger {
    /// A second connection to the file that only reads, beside `conn`
    /// (`admit::look_up`). (Declared first, so closed first: the last
    /// connection to close, `conn`, copies the write-ahead log back.)
    helper: Helper,
    conn: Connection,
    /// Ids of groups known to be in the ledger (committed). A group row is
    /// never deleted or changed, so an id once read stays valid.
    groups: HashMap<GroupKey, i64>,
    /// How long this process's reservations are trusted without a live owner.
    lease: TimeDelta,
    /// Admissions sharing write transactions, between `begin_admissions`
    /// and `end_admissions` (`admit.rs`).
    admitting: Option<Admitting>,
}

/// The statements a connection keeps prepared (rusqlite's default is 16;
/// the ledger has about a hundred).
const STATEMENTS_KEPT: usize = 256;

/// The page size of a new ledger file, in bytes.
const PAGE_SIZE: i64 = 16 * 1024;

fn ts(t: DateTime<Utc>) -> i64 {
    t.timestamp()
}

fn from_ts(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(secs, 0).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

fn opt_ts(secs: Option<i64>) -> Option<DateTime<Utc>> {
    secs.map(from_ts)
}

/// A list of values for `rarray(?)`.
fn array<T: Into<Value> + Copy>(values: &[T]) -> Rc<Vec<Value>> {
    Rc::new(values.iter().map(|v| (*v).into()).collect())
}

/// Ids as runs of consecutive ids, `(first, last)`, ascending (as a
/// reservation holds its items: a row of `in_flight` a run).
#[derive(Debug, PartialEq)]
struct IdRuns(Vec<(i64, i64)>);

impl IdRuns {
    /// The runs of `ids` (distinct, in any order).
    fn of(ids: &[i64]) -> IdRuns {
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        let mut runs: Vec<(i64, i64)> = Vec::new();
        for id in sorted {
            match runs.last_mut() {
                Some(run) if run.1 + 1 == id => run.1 = id,
                _ => runs.push((id, id)),
            }
        }
        IdRuns(runs)
    }

    /// The ids, ascending.
    fn ids(&self) -> Vec<i64> {
        self.0.iter().flat_map(|&(first, last)| first..=last).collect()
    }

    /// Every run of `in_flight`: the items reservations hold.
    fn in_flight(tx: &Connection) -> Result<IdRuns> {
        let mut stmt = tx.prepare_cached("SELECT first, last FROM in_flight ORDER BY first")?;
        let runs = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(IdRuns(runs.collect::<rusqlite::Result<_>>()?))
    }

    /// Whether a run holds `id`: the run with the greatest `first` at or
    /// before it reaches it (as `queue::held` asks in SQL).
    fn holds(&self, id: i64) -> bool {
        let after = self.0.partition_point(|&(first, _)| first <= id);
        after > 0 && self.0[after - 1].1 >= id
    }
}

/// Runs `sql_head VALUES (..), (..), ...` over `rows` (each `width`
/// values), `CHUNK` rows a statement (the statement for a full chunk is
/// prepared once). `sql_tail` follows the values.
fn insert_rows(tx: &Connection, sql_head: &str, sql_tail: &str, width: usize, rows: &[impl ToSql]) -> Result<usize> {
    let tuple = format!("({})", vec!["?"; width].join(", "));
    let mut changed = 0;
    for chunk in rows.chunks(CHUNK * width) {
        let n = chunk.len() / width;
        let sql = format!("{sql_head} VALUES {}{sql_tail}", vec![tuple.as_str(); n].join(", "));
        changed += tx.prepare_cached(&sql)?.execute(params_from_iter(chunk.iter()))?;
    }
    Ok(changed)
}

/// SQLite's process-wide settings, made once before the first connection:
/// no memory statistics (kept by default, they take a global mutex on
/// every allocation SQLite makes; indexq reads none).
fn global_config() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: SQLITE_CONFIG_MEMSTATUS takes one int. Called before any
        // connection of this process is opened (or it returns SQLITE_MISUSE
        // and changes nothing), with no other thread inside SQLite: the
        // `Once` runs it first, on the thread opening the first ledger.
        let _ = unsafe { rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0 as std::ffi::c_int) };
    });
}

impl SqliteLedger {
    /// Opens (creating if needed) the ledger file and brings its schema up to date.
    pub fn open(path: &Path) -> Result<SqliteLedger> {
        global_config();
        let open_err = |message: String, hint: Option<String>, source: Option<LedgerError>| LedgerError::Open {
            path: path.display().to_string(),
            message,
            hint,
            newer: false,
            source: source.map(Box::new),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| open_err(format!("cannot create {}: {e}", dir.display()), None, None))?;
        }
        let before = file_id(path);
        let conn = Connection::open(path).map_err(|e| open_err("cannot open it".into(), None, Some(e.into())))?;
        // The file opened, for the helper (`admit::Helper`): the one at the
        // path before and after (a new file: after).
        let opened = file_id(path).filter(|id| before.is_none_or(|b| b == *id));
        // New, or made by someone else (an empty file, a copy): private.
        restrict_mode(path).map_err(|e| open_err(format!("cannot set mode 0600: {e}"), None, None))?;
        let mut ledger = SqliteLedger {
            conn,
            groups: HashMap::new(),
            lease: owner::LEASE,
            admitting: None,
            helper: Helper::new(path, opened),
        };
        // Switching a new file to WAL needs a moment alone with it: several
        // runs starting at once on a new ledger take turns (the busy timeout
        // does not cover that switch).
        let mut tries = 0;
        let configured = loop {
            match ledger.configure(true) {
                Err(LedgerError::Busy(_)) if tries < 100 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                other => break other,
            }
        };
        configured.map_err(|e| match e {
            LedgerError::Newer { found, known } => LedgerError::newer(&path.display().to_string(), found, known),
            // (A new ledger's tables are small, so the full disk's own hint
            // is the right one.)
            e if crate::error::is_disk_full(&e) => open_err("cannot use it".into(), None, Some(e)),
            e => open_err(
                "cannot use it".into(),
                Some("if the file is damaged, move it aside: indexq starts a new ledger (queued URLs in it would need resubmitting)".into()),
                Some(e),
            ),
        })?;
        Ok(ledger)
    }

    /// `open`, and from now on every commit of this thread's SQLite
    /// ledgers checks that the spans and the item changes keep their rules
    /// against the batch rows (the conformance suite's ledgers; issue 48).
    #[cfg(test)]
    pub fn open_checking_spans(path: &Path) -> Result<SqliteLedger> {
        CHECK_SPANS.with(|c| c.set(true));
        SqliteLedger::open(path)
    }

    /// An empty ledger in memory, for a dry run where there is no ledger
    /// file yet: nothing it holds survives the run.
    pub fn in_memory() -> Result<SqliteLedger> {
        global_config();
        let mut ledger = SqliteLedger {
            conn: Connection::open_in_memory()?,
            groups: HashMap::new(),
            lease: owner::LEASE,
            admitting: None,
            helper: Helper::none(),
        };
        ledger.configure(false)?;
        Ok(ledger)
    }

    fn configure(&mut self, on_disk: bool) -> Result<()> {
        self.conn.busy_handler(Some(wait_a_moment))?;
        // Every statement of a batch's admission, claim and answer stays
        // prepared (`prepare_cached`): with rusqlite's sixteen, they pushed
        // each other out, and each batch parsed them again.
        self.conn.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
        // Pages stay in memory up to 16 MiB, about a 100k ledger's whole file;
        // a larger cache cost memory and saved no CPU, because a page read
        // again comes from the system's cache (docs/performance.md, *Measured
        // choices*). The write-ahead log is copied back every 40 MiB rather
        // than every 4.
        //
        // A new ledger's pages are 16 KiB (SQLite's default is 4): a B-tree of
        // a quarter the pages, each claim and answer walking and writing fewer
        // of them (docs/performance.md, *Measured choices*). A ledger's page
        // size is fixed once its first table is written, so this comes first,
        // and changes nothing in an existing one; and before the cache's size,
        // which SQLite counts in pages of the size set when it is given: set
        // after, a cache sized in small pages would hold four times as much.
        if on_disk {
            self.conn.pragma_update(None, "page_size", PAGE_SIZE)?;
        }
        self.conn.pragma_update(None, "cache_size", -16 * 1024)?;
        if on_disk {
            self.conn.pragma_update(None, "journal_mode", "WAL")?;
            self.conn.pragma_update(None, "synchronous", "FULL")?;
            let page: i64 = self.conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
            self.conn.pragma_update(None, "wal_autocheckpoint", (40 << 20) / page.max(512))?;
        } else {
            // A dry run's empty ledger: nothing in it needs to survive a crash.
            self.conn.pragma_update(None, "journal_mode", "OFF")?;
            self.conn.pragma_update(None, "synchronous", "OFF")?;
        }
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        rusqlite::vtab::array::load_module(&self.conn)?;
        self.migrate()
    }

    /// Sets how long this process's reservations are trusted when their
    /// owner cannot be checked.
    pub fn with_lease(mut self, lease: TimeDelta) -> SqliteLedger {
        self.lease = lease;
        self
    }

    /// The schema version of the file (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<i64> {
        Ok(self.conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    /// A write transaction (`BEGIN IMMEDIATE`), after the admissions
    /// written so far are committed.
    fn begin(&mut self) -> Result<Transaction<'_>> {
        Ok(self.begin_with_groups()?.0)
    }

    /// `begin`, with the cache of group ids beside the transaction (it
    /// reads and adds to them).
    fn begin_with_groups(&mut self) -> Result<(Transaction<'_>, &mut HashMap<GroupKey, i64>)> {
        self.settle()?;
        Ok((write(&mut self.conn)?, &mut self.groups))
    }

    /// The id of an existing group (read outside any transaction: group
    /// rows never change once written).
    fn existing_group(&mut self, key: &GroupKey) -> Result<Option<i64>> {
        group_id(&self.conn, &mut self.groups, key)
    }
}

/// The ledger in one transaction (or, reading, on the connection), as
/// policy's steps take it (`claim.rs`, `answer.rs`).
struct Tx<'a> {
    conn: &'a Connection,
    groups: &'a mut HashMap<GroupKey, i64>,
    /// Items an answer of this transaction moved already (Bing's halves of
    /// a batch): their state is read before they move again.
    answered: HashSet<i64>,
}

impl Backend for SqliteLedger {
    fn lease(&self) -> TimeDelta {
        self.lease
    }

    fn write<T: Send>(&mut self, mut f: impl FnMut(&mut dyn Steps) -> Result<T> + Send) -> Result<T> {
        let (tx, groups) = self.begin_with_groups()?;
        let value = f(&mut Tx { conn: &tx, groups, answered: HashSet::new() })?;
        commit(tx)?;
        Ok(value)
    }

    fn read<T: Send>(&mut self, mut f: impl FnMut(&mut dyn Steps) -> Result<T> + Send) -> Result<T> {
        f(&mut Tx { conn: &self.conn, groups: &mut self.groups, answered: HashSet::new() })
    }
}

/// The kept counts of every group, counted again: each span's length,
/// summed by group and state (the spans hold every item once).
fn recount(tx: &Connection) -> Result<()> {
    tx.execute_batch(
        "UPDATE groups SET
             queued = (SELECT COALESCE(SUM(last - first + 1), 0) FROM spans
                       WHERE group_id = groups.id AND state = 'queued'),
             in_flight = (SELECT COALESCE(SUM(last - first + 1), 0) FROM spans
                          WHERE group_id = groups.id AND state = 'in_flight'),
             parked = (SELECT COALESCE(SUM(last - first + 1), 0) FROM spans
                       WHERE group_id = groups.id AND state = 'parked'),
             accepted = (SELECT COALESCE(SUM(last - first + 1), 0) FROM spans
                         WHERE group_id = groups.id AND state = 'accepted');",
    )?;
    Ok(())
}

/// The kept count column of a state.
fn count_column(state: ItemState) -> &'static str {
    match state {
        ItemState::Queued => "queued",
        ItemState::InFlight => "in_flight",
        ItemState::Accepted => "accepted",
        ItemState::Parked => "parked",
    }
}

/// Counts `n` items of `group` moved from state `from` (`None`: new) to
/// `to` (`None`: gone) in the group's kept counts: one statement.
fn counted(tx: &Connection, group: i64, from: Option<ItemState>, to: Option<ItemState>, n: u64) -> Result<()> {
    if n == 0 || from == to {
        return Ok(());
    }
    let mut sets = Vec::new();
    if let Some(from) = from {
        sets.push(format!("{0} = {0} - {n}", count_column(from)));
    }
    if let Some(to) = to {
        sets.push(format!("{0} = {0} + {n}", count_column(to)));
    }
    tx.execute(&format!("UPDATE groups SET {} WHERE id = ?1", sets.join(", ")), [group])?;
    Ok(())
}

/// The states of the items `ids`, counted (before a statement moves them
/// all to another state): each id's span's, read a run at a time.
fn states_of(tx: &Connection, ids: &[i64]) -> Result<Vec<(ItemState, u64)>> {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    let mut spans = spans::Cursor::new(tx)?;
    let mut counts: Vec<(ItemState, u64)> = Vec::new();
    for id in sorted {
        let Some(span) = spans.at(id)? else { continue };
        let state: ItemState = stored("spans", "state", &span.state)?;
        match counts.iter_mut().find(|(s, _)| *s == state) {
            Some((_, n)) => *n += 1,
            None => counts.push((state, 1)),
        }
    }
    Ok(counts)
}

/// Runs `f` with foreign keys off, and turns them on again whatever it returns.
/// With a foreign key to check, a multi-row statement that writes a table may
/// stop halfway even with `OR FAIL`, so SQLite journals every page it touches
/// in a temporary file, to undo that statement alone. For admission's inserts
/// that journal was most of what a fresh run wrote (docs/performance.md,
/// *Measured choices*). `f` checks what the key would (`admit::groups_exist`).
/// The pragma does nothing inside a transaction: `f` begins and ends its own.
/// (Changing it makes SQLite prepare cached statements again: a few a batch.)
fn without_foreign_keys<T>(conn: &mut Connection, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
    conn.pragma_update(None, "foreign_keys", false)?;
    let out = f(conn);
    conn.pragma_update(None, "foreign_keys", true)?;
    out
}

/// `f`, its commits not waiting for the disk (`synchronous = NORMAL` for
/// them alone, the ledger's own level after), for a write no promise rests
/// on: a power cut may lose it, a crash of the process may not. A run that
/// wrote nothing else (the run again) paid a commit's fsyncs for its last
/// line alone (docs/performance.md, *Measured choices*). The next commit
/// that waits makes the write durable with its own. (SQLite refuses the
/// pragma inside a transaction: `f` begins and ends its own.)
fn without_waiting_for_disk<T>(conn: &mut Connection, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
    let level: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
    // 0 (OFF, a dry run's ledger in memory) and 1 (NORMAL) wait already no more.
    if level <= 1 {
        return f(conn);
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    let out = f(conn);
    conn.pragma_update(None, "synchronous", level)?;
    out
}

fn write(conn: &mut Connection) -> Result<Transaction<'_>> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

/// Commits `tx`. In a test that asked for it (`SqliteLedger::open_checking_spans`),
/// the spans' rules and the item changes' are checked against the batch
/// rows first (issue 48: `batches::spans_agree`, `changes_agree`).
fn commit(tx: Transaction<'_>) -> Result<()> {
    check_spans(&tx);
    Ok(tx.commit()?)
}

#[cfg(test)]
thread_local! {
    /// Whether this thread's commits check the spans (`open_checking_spans`).
    static CHECK_SPANS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Panics, in a test that asked for it, if the spans or the item changes
/// break a rule against the batch rows, in `conn`'s transaction.
fn check_spans(conn: &Connection) {
    #[cfg(test)]
    if CHECK_SPANS.with(|c| c.get()) {
        if let Err(e) = batches::spans_agree(conn).and_then(|()| batches::changes_agree(conn)) {
            panic!("at a commit, {e}");
        }
    }
    #[cfg(not(test))]
    let _ = conn;
}

/// Groups a transaction made, with their ids: cached once it commits.
type Created = Vec<(GroupKey, i64)>;

/// The id of group `key` if it is in the ledger, from `cache` or from the
/// `groups` table (then cached: a committed group row never changes).
fn group_id(conn: &Connection, cache: &mut HashMap<GroupKey, i64>, key: &GroupKey) -> Result<Option<i64>> {
    if let Some(id) = cache.get(key) {
        return Ok(Some(*id));
    }
    let id: Option<i64> = conn
        .prepare_cached("SELECT id FROM groups WHERE property = ?1 AND engine = ?2 AND target = ?3 AND channel = ?4")?
        .query_row(params![key.property, key.engine.as_str(), key.target, key.channel.as_str()], |r| r.get(0))
        .optional()?;
    if let Some(id) = id {
        cache.insert(key.clone(), id);
    }
    Ok(id)
}

/// The id of group `key`, inserting its row (in the caller's transaction
/// `tx`) on first use. A group created here goes in `created`, to be cached
/// only once `tx` commits.
fn group_id_or_create(
    tx: &Connection,
    cache: &mut HashMap<GroupKey, i64>,
    created: &mut Created,
    key: &GroupKey,
) -> Result<i64> {
    // Created earlier in this transaction: not in `cache` until it commits.
    if let Some((_, id)) = created.iter().find(|(k, _)| k == key) {
        return Ok(*id);
    }
    if let Some(id) = group_id(tx, cache, key)? {
        return Ok(id);
    }
    tx.prepare_cached("INSERT INTO groups (property, engine, target, channel) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![key.property, key.engine.as_str(), key.target, key.channel.as_str()])?;
    let id = tx.last_insert_rowid();
    created.push((key.clone(), id));
    Ok(id)
}

/// Takes every permission from group and others, if they have any.
#[cfg(unix)]
fn restrict_mode(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)?.permissions().mode();
    if mode & 0o077 == 0 {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o700))
}

#[cfg(not(unix))]
fn restrict_mode(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

/// Records a request; returns its id.
fn insert_request(tx: &Connection, r: &Recorded) -> Result<i64> {
    let (first, last, list) = r.stored_items();
    tx.prepare_cached(
        "INSERT INTO requests (group_id, at, class, reason, message, http_status, body, retry_at, n, first_item,
             last_item, items)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        r.group,
        ts(r.at),
        r.class.as_str(),
        r.reason.to_string(),
        r.message,
        r.response.http_status,
        r.response.body.as_deref().map(cap_body),
        r.retry_at.map(ts),
        r.items.len() as i64,
        first,
        last,
        list
    ])?;
    Ok(tx.last_insert_rowid())
}

/// The ids of the items a statement returned in its first column.
fn ids_of(stmt: &mut rusqlite::Statement<'_>, params: impl rusqlite::Params) -> Result<Vec<i64>> {
    let ids = stmt.query_map(params, |r| r.get(0))?.collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(ids)
}

/// While another connection writes: try again every millisecond, for a
/// minute. (SQLite's own busy timeout sleeps longer and longer — 25, 50,
/// 100 ms — so a writer that waited behind a 20 ms transaction could wake
/// 30 ms after it ended; `serve`'s intake answers within milliseconds.)
fn wait_a_moment(tries: i32) -> bool {
    std::thread::sleep(std::time::Duration::from_millis(1));
    tries < 60_000
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::*;
    use crate::model::NextStep;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn group(property: &str, engine: EngineKind) -> GroupKey {
        GroupKey::urls(property, engine, format!("https://{property}/endpoint"))
    }

    /// Without a run of `in_flight`, each state is read on its own; the
    /// listing keeps its order (group, state by name, due time, id) and its
    /// limit, and a row in flight of its own (one a copy brought) is listed.
    #[test]
    fn a_listing_reads_state_by_state_in_its_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
        let now = t("2026-12-03T10:00:00Z");
        let rule = AdmitRule { dedupe: chrono::TimeDelta::hours(24), force: false, changed: false, resend_after: None };
        ledger.admit(&super::super::conformance::items(5), now, &rule).unwrap();
        super::batches::expand_items(&ledger.conn).unwrap();
        let set = |ending: &str, sql: &str| {
            let id: i64 = ledger
                .conn
                .query_row("SELECT id FROM item_rows WHERE url LIKE '%/' || ?1", [ending], |r| r.get(0))
                .unwrap();
            spans::set_state(&ledger.conn, id, id, sql).unwrap();
        };
        set("3", "state = 'in_flight'");
        set("1", "state = 'parked'");
        set("4", "state = 'accepted'");
        set("0", &format!("next_attempt_at = {}", ts(now + chrono::TimeDelta::hours(1))));
        // The kept counts, as a copy leaves them.
        recount(&ledger.conn).unwrap();
        let listed = |ledger: &mut SqliteLedger, states: Vec<StateFilter>, limit: Option<usize>| -> Vec<String> {
            let filter = ItemFilter { states, limit, ..Default::default() };
            ledger
                .items(&filter, now)
                .unwrap()
                .into_iter()
                .map(|r| r.url.rsplit('/').next().unwrap().to_string())
                .collect()
        };
        let default = vec![StateFilter::Due, StateFilter::Waiting, StateFilter::InFlight, StateFilter::Parked];
        assert_eq!(listed(&mut ledger, default.clone(), None), ["3", "1", "2", "0"]);
        assert_eq!(listed(&mut ledger, default, Some(3)), ["3", "1", "2"]);
        assert_eq!(listed(&mut ledger, vec![StateFilter::Waiting], None), ["0"]);
        assert_eq!(listed(&mut ledger, vec![StateFilter::Due, StateFilter::Accepted], None), ["4", "2"]);
    }

    /// A reason read back that this indexq does not know as one of its
    /// request's class is an error naming it, never a default.
    #[test]
    fn an_unknown_reason_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
        super::super::conformance::story(&mut ledger);
        assert!(!ledger.attempts(None, 10).unwrap().is_empty());
        let now = t("2026-12-10T10:00:00Z");
        assert!(!ledger.items(&ItemFilter::default(), now).unwrap().is_empty());
        // A reason of another class, then a text no class has.
        for text in ["ok", "from_a_newer_indexq"] {
            ledger.conn.execute("UPDATE requests SET reason = ?1 WHERE class <> 'accepted'", [text]).unwrap();
            let err = ledger.attempts(None, 10).unwrap_err().to_string();
            assert!(err.contains(&format!("requests.reason holds `{text}`")), "{err}");
            let err = ledger.items(&ItemFilter::default(), now).unwrap_err().to_string();
            assert!(err.contains(&format!("`{text}`")), "{err}");
        }
    }

    /// Ids become their runs of consecutive ids, whatever their order.
    #[test]
    fn ids_become_their_runs() {
        assert_eq!(IdRuns::of(&[12, 3, 4, 5, 10, 11]), IdRuns(vec![(3, 5), (10, 12)]));
        assert_eq!(IdRuns::of(&[9, 1, 3, 5, 7]).0.len(), 5);
        assert_eq!(IdRuns::of(&[]), IdRuns(vec![]));
    }

    fn new_items(group: &GroupKey, range: std::ops::Range<usize>) -> Vec<NewItem> {
        range
            .map(|i| NewItem {
                url: format!("https://{}/{i}", group.property),
                group: group.clone().into(),
                action: Action::Updated,
                lastmod: None,
                zone: chrono_tz::Tz::UTC,
            })
            .collect()
    }

    /// The kept counts equal a count of the rows by their state, and
    /// `queue_counts` a count of every item as readers see it, at `now`.
    fn assert_counts(ledger: &mut SqliteLedger, now: DateTime<Utc>) {
        // The kept counts themselves: the items by their own state, each
        // item read through its span (the ledger expanded into rows).
        super::batches::expand_items(&ledger.conn).unwrap();
        let kept = "SELECT id, queued, in_flight, parked, accepted FROM groups ORDER BY id";
        let counted = "SELECT g.id,
                (SELECT COUNT(*) FROM item_rows WHERE group_id = g.id AND state = 'queued'),
                (SELECT COUNT(*) FROM item_rows WHERE group_id = g.id AND state = 'in_flight'),
                (SELECT COUNT(*) FROM item_rows WHERE group_id = g.id AND state = 'parked'),
                (SELECT COUNT(*) FROM item_rows WHERE group_id = g.id AND state = 'accepted')
            FROM groups g ORDER BY g.id";
        let rows = |sql: &str| -> Vec<[i64; 5]> {
            let mut stmt = ledger.conn.prepare(sql).unwrap();
            let rows = stmt.query_map([], |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?])).unwrap();
            rows.collect::<rusqlite::Result<_>>().unwrap()
        };
        assert_eq!(rows(kept), rows(counted), "kept counts (group, queued, in flight, parked, accepted)");
        let groups: Vec<(i64, GroupKey)> = ledger
            .conn
            .prepare("SELECT id, property, engine, target, channel FROM groups")
            .unwrap()
            .query_map([], |r| {
                let (engine, channel): (String, String) = (r.get(2)?, r.get(4)?);
                let key = stored_group(r.get(1)?, &engine, r.get(3)?, &channel).unwrap();
                Ok((r.get(0)?, key))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        for (id, key) in groups {
            let mut expected = QueueCounts::default();
            let mut stmt = ledger
                .conn
                .prepare(
                    "SELECT state, next_attempt_at <= ?2, COUNT(*) FROM item_states WHERE group_id = ?1 GROUP BY 1, 2",
                )
                .unwrap();
            let rows = stmt
                .query_map(params![id, ts(now)], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, Option<bool>>(1)?, r.get::<_, i64>(2)? as u64))
                })
                .unwrap();
            for row in rows {
                let (state, due, n) = row.unwrap();
                match (state.parse::<ItemState>().unwrap(), due) {
                    (ItemState::Queued, Some(true)) => expected.due += n,
                    (ItemState::Queued, _) => expected.waiting += n,
                    (ItemState::Parked, _) => expected.parked += n,
                    (ItemState::InFlight, _) => expected.in_flight += n,
                    (ItemState::Accepted, _) => expected.accepted += n,
                }
            }
            drop(stmt);
            assert_eq!(ledger.queue_counts(&key, now).unwrap(), expected, "{key:?} at {now}");
        }
    }

    fn record(item: &ClaimedItem, at: DateTime<Utc>, class: Class, next: NextStep) -> Answered {
        Answered {
            items: vec![item.id],
            at,
            class,
            reason: super::super::conformance::some_reason(class),
            message: "m".into(),
            response: StoredResponse { http_status: Some(400), body: Some("no".into()) },
            next,
            reached: true,
        }
    }

    fn finish(ledger: &mut SqliteLedger, claim: &Claim, answers: Vec<Answered>) {
        let done = Finish {
            reservation: claim.reservation.unwrap(),
            answers,
            blocks: vec![],
            reports: vec![],
            windows: vec![],
            accepted_credential: None,
        };
        ledger.finish(&done).unwrap();
    }

    /// Admission runs with foreign keys off (no statement journal) and
    /// checks its groups itself: the keys are on again after it, whether it
    /// failed or not, and an item of a group not in the ledger is refused.
    #[test]
    fn admission_checks_its_groups_and_leaves_foreign_keys_on() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
        let now = t("2026-12-11T09:00:00Z");
        let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
        let foreign_keys =
            |l: &SqliteLedger| l.conn.query_row("PRAGMA foreign_keys", [], |r| r.get::<_, i64>(0)).unwrap();
        let a = group("a.example", EngineKind::IndexNow);
        ledger.admit(&new_items(&a, 0..3), now, &rule).unwrap();
        assert_eq!(foreign_keys(&ledger), 1);
        // A group this process believes is in the ledger, which is not.
        let b = group("b.example", EngineKind::IndexNow);
        ledger.groups.insert(b.clone(), 999);
        let err = ledger.admit(&new_items(&b, 0..3), now, &rule).unwrap_err().to_string();
        assert!(err.contains("not in the ledger"), "{err}");
        assert_eq!(foreign_keys(&ledger), 1);
        super::batches::expand_items(&ledger.conn).unwrap();
        let items: i64 = ledger.conn.query_row("SELECT COUNT(*) FROM item_rows", [], |r| r.get(0)).unwrap();
        assert_eq!(items, 3, "nothing of the refused batch is kept");
        let rows: i64 = ledger.conn.query_row("SELECT COUNT(*) FROM batches", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 1, "no batch row of the refused batch");
    }

    /// An answer to be recorded with the next claim whose claim fails is
    /// recorded on its own, and the claim's error returned: here the claim
    /// reads its pace from a table taken away, which the answer does not.
    #[test]
    fn an_answer_whose_next_claim_fails_is_recorded_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
        let now = t("2026-12-11T09:00:00Z");
        let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
        let g = group("a.example", EngineKind::IndexNow);
        ledger.admit(&new_items(&g, 0..4), now, &rule).unwrap();
        let me = Owner::current();
        let spec = ClaimSpec {
            windows: &[],
            max_items: 2,
            pace: None,
            now: Now::pinned(now),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        };
        let first = ledger.claim(&g, &spec, &me, &mut |_, _, _| {}).unwrap();
        let response = StoredResponse { http_status: Some(200), body: None };
        let done = Finish {
            reservation: first.reservation.unwrap(),
            answers: vec![super::super::conformance::answer(
                &first,
                now,
                Class::Accepted,
                response,
                NextStep::Accepted,
            )],
            blocks: vec![],
            reports: vec![],
            windows: vec![],
            accepted_credential: None,
        };
        ledger.conn.execute_batch("DROP TABLE pacing").unwrap();
        let pace = Pace { key: "p".into(), interval: TimeDelta::seconds(1), burst: 1, horizon: now };
        let paced = ClaimSpec { pace: Some(&pace), ..spec };
        let err = ledger.finish_and_claim(&done, &g, &paced, &me, &mut |_, _, _| {}).unwrap_err();
        assert!(format!("{err:?}").contains("no such table: pacing"), "{err:?}");
        let counts = ledger.queue_counts(&g, now).unwrap();
        assert_eq!((counts.accepted, counts.in_flight, counts.due), (2, 0, 2), "{counts:?}");
    }

    /// A new ledger's pages are `PAGE_SIZE`; a ledger written before keeps
    /// its own (the schema-6 fixture's 4 KiB). Either copies its log back
    /// every 40 MiB.
    #[test]
    fn a_new_ledger_has_large_pages_and_an_older_one_keeps_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let pragma = |l: &SqliteLedger, name: &str| {
            l.conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0)).unwrap()
        };
        let new = SqliteLedger::open(&dir.path().join("new.db")).unwrap();
        assert_eq!((pragma(&new, "page_size"), pragma(&new, "wal_autocheckpoint")), (16_384, 2_560));
        let older = dir.path().join("older.db");
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ledger-v6/ledger.db");
        std::fs::copy(fixture, &older).unwrap();
        let older = SqliteLedger::open(&older).unwrap();
        assert_eq!(SqliteLedger::schema_version(&older).unwrap(), schema::SCHEMA_VERSION);
        assert_eq!((pragma(&older, "page_size"), pragma(&older, "wal_autocheckpoint")), (4_096, 10_240));
    }

    /// A run's line is committed without waiting for the disk, and the
    /// ledger waits again after it (a claim's commit must), also after a
    /// write that failed; a ledger that never waits (in memory) is left so.
    #[test]
    fn a_runs_line_does_not_wait_for_the_disk_and_what_follows_does() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = SqliteLedger::open(&dir.path().join("l.db")).unwrap();
        let level = |l: &SqliteLedger| l.conn.query_row("PRAGMA synchronous", [], |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(level(&ledger), 2, "FULL");
        let at = DateTime::from_timestamp_millis(1_765_000_000_000).unwrap();
        let run = RunRecord { host: "h".into(), started_at: at, ended_at: at, exit_code: 0 };
        let during = without_waiting_for_disk(&mut ledger.conn, |conn| {
            Ok(conn.query_row("PRAGMA synchronous", [], |r| r.get::<_, i64>(0))?)
        });
        assert_eq!(during.unwrap(), 1, "NORMAL");
        ledger.record_run(&run).unwrap();
        assert_eq!(level(&ledger), 2);
        let failed = without_waiting_for_disk(&mut ledger.conn, |conn| Ok(conn.execute_batch("NOT SQL")?));
        assert!(failed.is_err());
        assert_eq!(level(&ledger), 2);
        assert_eq!(ledger.last_run(false).unwrap(), Some(run.clone()));
        let mut memory = SqliteLedger::in_memory().unwrap();
        memory.record_run(&run).unwrap();
        assert_eq!(level(&memory), 0, "OFF");
    }

    /// A schema-7 ledger killed with a reservation in flight (the fixture,
    /// written by that binary) holds the reservation's items in runs of
    /// `in_flight` once upgraded (schemas 8 and 9), their rows queued, and a
    /// later run puts them back in the queue from those runs.
    #[test]
    fn a_reservation_in_flight_before_schema_9_is_reconciled_from_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ledger-v7/ledger.db");
        std::fs::copy(fixture, &path).unwrap();
        let mut ledger = SqliteLedger::open(&path).unwrap();
        let one = |l: &SqliteLedger, sql: &str| l.conn.query_row(sql, [], |r| r.get::<_, Option<String>>(0)).unwrap();
        let runs = "SELECT group_concat(first || '-' || last) FROM (SELECT * FROM in_flight ORDER BY first)";
        assert_eq!(one(&ledger, runs).as_deref(), Some("2-2,4-4,6-6,8-8"));
        assert_eq!(one(&ledger, "SELECT MAX(name) FROM sqlite_master WHERE name = 'items_in_flight'"), None);
        let states = |l: &SqliteLedger, table: &str| -> Vec<(i64, String)> {
            super::batches::expand_items(&l.conn).unwrap();
            let mut stmt = l.conn.prepare(&format!("SELECT id, state FROM {table} ORDER BY id")).unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().collect::<rusqlite::Result<_>>().unwrap()
        };
        assert_eq!(states(&ledger, "item_states").iter().filter(|(_, s)| s == "in_flight").count(), 4);
        assert_eq!(states(&ledger, "item_rows").iter().filter(|(_, s)| s == "in_flight").count(), 0);
        let done = ledger.reconcile(t("2026-12-04T10:00:00Z"), &Owner::current()).unwrap();
        assert_eq!((done.reservations, done.items), (1, 4));
        let expected: Vec<(i64, String)> =
            (1..=8).map(|id| (id, if id % 2 == 0 { "queued" } else { "accepted" }.to_string())).collect();
        assert_eq!(states(&ledger, "item_states"), expected);
        assert_counts(&mut ledger, t("2026-12-04T10:00:00Z"));
    }

    /// A claim writes no item row (schema 9) and no span (schema 12): what
    /// it takes is not written (a trigger would see it, as it sees the
    /// reconcile's write of their span), and is in flight by their
    /// reservation's runs — counted and listed so, and taken by no other
    /// claim — until a reconcile (or an answer) moves them.
    #[test]
    fn a_claim_writes_no_item_row() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
        let now = t("2026-12-11T09:00:00Z");
        let b = group("b.example", EngineKind::Bing);
        let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
        ledger.admit(&new_items(&b, 0..5), now, &rule).unwrap();
        ledger
            .conn
            .execute_batch(
                "CREATE TEMP TABLE touched (id INTEGER);
                 CREATE TEMP TRIGGER touched AFTER INSERT ON main.item_changes BEGIN INSERT INTO touched VALUES (new.id); END;
                 CREATE TEMP TRIGGER batch AFTER INSERT ON main.batches BEGIN INSERT INTO touched VALUES (new.first_id); END;
                 CREATE TEMP TRIGGER span_cut AFTER INSERT ON main.spans BEGIN INSERT INTO touched VALUES (new.first); END;
                 CREATE TEMP TRIGGER span_set AFTER UPDATE ON main.spans BEGIN INSERT INTO touched VALUES (new.first); END;
                 CREATE TEMP TRIGGER span_gone AFTER DELETE ON main.spans BEGIN INSERT INTO touched VALUES (old.first); END;",
            )
            .unwrap();
        let me = Owner::current();
        let dead = Owner { host: me.host.clone(), pid: u32::MAX - 1, started: 1 };
        let spec = |max_items| ClaimSpec {
            windows: &[],
            max_items,
            pace: None,
            now: Now::pinned(now),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        };
        let first = ledger.claim(&b, &spec(3), &dead, &mut |_, _, _| {}).unwrap();
        assert_eq!(first.items.len(), 3);
        let touched: i64 = ledger.conn.query_row("SELECT COUNT(*) FROM touched", [], |r| r.get(0)).unwrap();
        assert_eq!(touched, 0, "no item row or span written");
        let counts = ledger.queue_counts(&b, now).unwrap();
        assert_eq!((counts.due, counts.in_flight), (2, 3), "{counts:?}");
        let listed = ledger.items(&ItemFilter { states: vec![StateFilter::InFlight], ..ItemFilter::default() }, now);
        let listed: Vec<i64> = listed.unwrap().iter().map(|i| i.id).collect();
        assert_eq!(listed, first.items.iter().map(|i| i.id).collect::<Vec<_>>());
        assert_counts(&mut ledger, now);
        // Admitted again, the three are in flight and the other two queued.
        let again = ledger.admit(&new_items(&b, 0..5), now, &rule).unwrap();
        let in_flight = again.iter().filter(|a| matches!(a, Admission::InFlight { .. })).count();
        assert_eq!(in_flight, 3, "{again:?}");
        let second = ledger.claim(&b, &spec(10), &me, &mut |_, _, _| {}).unwrap();
        assert_eq!(second.items.len(), 2, "only the items no reservation holds");
        assert!(second.items.iter().all(|i| !first.items.iter().any(|f| f.id == i.id)));
        // The dead owner's three go back to the queue.
        let touched: i64 = ledger.conn.query_row("SELECT COUNT(*) FROM touched", [], |r| r.get(0)).unwrap();
        assert_eq!(touched, 0, "no item row or span written by either claim");
        assert_eq!(ledger.reconcile(now, &me).unwrap().items, 3);
        let touched: i64 = ledger.conn.query_row("SELECT COUNT(*) FROM touched", [], |r| r.get(0)).unwrap();
        assert!(touched > 0, "a reconcile writes their span, which the triggers see");
        let runs: i64 = ledger.conn.query_row("SELECT COUNT(*) FROM in_flight", [], |r| r.get(0)).unwrap();
        assert_eq!(runs, 1, "the second claim's run");
        assert_counts(&mut ledger, now);
    }

    #[test]
    fn kept_counts_follow_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
        super::super::conformance::story(&mut ledger);
        assert_counts(&mut ledger, t("2026-12-10T10:00:00Z"));

        let now = t("2026-12-11T09:00:00Z");
        let (a, b) = (group("a.example", EngineKind::IndexNow), group("b.example", EngineKind::Bing));
        admit_two_groups_interleaved(&mut ledger, &a, &b, now);
        park_retry_and_accept(&mut ledger, &a, now);
        reconcile_a_dead_owners_claim(&mut ledger, &b, now);
        defer_for_a_budget_and_a_pace(&mut ledger, &b, now);
        queue_commands_keep_the_counts(&mut ledger, &a, &b, now);
    }

    /// One batch, two groups interleaved, a URL twice.
    fn admit_two_groups_interleaved(ledger: &mut SqliteLedger, a: &GroupKey, b: &GroupKey, now: DateTime<Utc>) {
        let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
        let mut batch: Vec<NewItem> =
            new_items(a, 0..6).into_iter().zip(new_items(b, 0..6)).flat_map(|(x, y)| [x, y]).collect();
        batch.push(new_items(a, 0..1).remove(0));
        let admitted = ledger.admit(&batch, now, &rule).unwrap();
        assert_eq!(admitted.iter().filter(|a| matches!(a, Admission::Queued { fresh: true, .. })).count(), 12);
        assert!(matches!(admitted[12], Admission::AlreadyQueued { .. }));
        assert_counts(ledger, now);
        let due = ledger.due_groups(now).unwrap();
        assert_eq!(due.iter().filter(|g| *g == a || *g == b).count(), 2, "{due:?}");
    }

    /// Parked, retried later, accepted.
    fn park_retry_and_accept(ledger: &mut SqliteLedger, a: &GroupKey, now: DateTime<Utc>) {
        let me = Owner::current();
        let claim = ledger
            .claim(
                a,
                &ClaimSpec {
                    windows: &[],
                    max_items: 3,
                    pace: None,
                    now: Now::pinned(now),
                    credential: None,
                    order: crate::model::SubmitOrder::Oldest,
                },
                &me,
                &mut |_, _, _| {},
            )
            .unwrap();
        assert_counts(ledger, now);
        let park = NextStep::Park { fingerprint: "one".into() };
        let records = vec![
            record(&claim.items[0], now, Class::Misconfigured, park.clone()),
            record(&claim.items[1], now, Class::Transient, NextStep::RetryAt(now + TimeDelta::hours(1))),
            record(&claim.items[2], now, Class::Accepted, NextStep::Accepted),
        ];
        finish(ledger, &claim, records);
        assert_counts(ledger, now);
        assert_counts(ledger, now + TimeDelta::hours(2));
        let last = ledger.last_rejection(a).unwrap().unwrap();
        assert_eq!((last.class, last.group.clone()), (Class::Transient, a.clone()));
        assert_eq!(ledger.unpark_changed(a, "one", now).unwrap(), 0);
        assert_eq!(ledger.unpark_changed(a, "two", now).unwrap(), 1);
        assert_counts(ledger, now);
    }

    /// A dead owner's claim, reconciled.
    fn reconcile_a_dead_owners_claim(ledger: &mut SqliteLedger, b: &GroupKey, now: DateTime<Utc>) {
        let me = Owner::current();
        let dead = Owner { host: me.host.clone(), pid: u32::MAX - 1, started: 1 };
        let claim = ledger
            .claim(
                b,
                &ClaimSpec {
                    windows: &[],
                    max_items: 2,
                    pace: None,
                    now: Now::pinned(now),
                    credential: None,
                    order: crate::model::SubmitOrder::Oldest,
                },
                &dead,
                &mut |_, _, _| {},
            )
            .unwrap();
        assert_eq!(claim.items.len(), 2);
        assert_counts(ledger, now);
        assert_eq!(ledger.reconcile(now, &me).unwrap().items, 2);
        assert_counts(ledger, now);
    }

    /// A budget and a pace: 2 go, 2 wait for their slot, the rest for the budget.
    fn defer_for_a_budget_and_a_pace(ledger: &mut SqliteLedger, b: &GroupKey, now: DateTime<Utc>) {
        let me = Owner::current();
        let day = RuleWindow {
            rule: "b:day".into(),
            period: crate::model::Period::Day,
            window: "2026-12-11".into(),
            limit: Some(4),
            reported: false,
            resets_at: t("2026-12-12T00:00:00Z"),
        };
        let pace = Pace { key: "b".into(), interval: TimeDelta::seconds(10), burst: 1, horizon: now };
        let mut deferred = Vec::new();
        let claim = ledger
            .claim(
                b,
                &ClaimSpec {
                    windows: &vec![day.clone()],
                    max_items: 10,
                    pace: Some(&pace),
                    now: Now::pinned(now),
                    credential: None,
                    order: crate::model::SubmitOrder::Oldest,
                },
                &me,
                &mut |id, _, at| deferred.push((id, at)),
            )
            .unwrap();
        assert_eq!((claim.items.len(), claim.paced.len(), claim.deferred), (2, 2, 2));
        assert!(deferred.iter().all(|(_, at)| *at == day.resets_at));
        let next: Vec<(i64, Option<DateTime<Utc>>)> = ledger
            .items_by_id(&deferred.iter().map(|d| d.0).chain(claim.paced.iter().map(|p| p.0)).collect::<Vec<_>>())
            .unwrap()
            .into_iter()
            .map(|row| (row.id, row.next_attempt_at))
            .collect();
        let expected: Vec<(i64, Option<DateTime<Utc>>)> = deferred
            .iter()
            .map(|(id, at)| (*id, Some(*at)))
            .chain(claim.paced.iter().map(|(id, _, at)| (*id, Some(from_ts(policy::ts_ceil(*at))))))
            .collect();
        assert_eq!(next, expected);
        assert_counts(ledger, now);
    }

    /// Queue commands: `items` sorted and filtered, `retry`, `drop` (which
    /// keeps the attempts), and a group the ledger does not know.
    fn queue_commands_keep_the_counts(ledger: &mut SqliteLedger, a: &GroupKey, b: &GroupKey, now: DateTime<Utc>) {
        let me = Owner::current();
        let all = ItemFilter::default();
        let listed = ledger.items(&all, now).unwrap();
        let mut sorted = listed.clone();
        sorted.sort_by_key(|r| {
            (
                r.group.property.clone(),
                r.group.engine.as_str(),
                r.group.target.clone(),
                r.state.as_str(),
                r.next_attempt_at,
                r.id,
            )
        });
        assert_eq!(listed.iter().map(|r| r.id).collect::<Vec<_>>(), sorted.iter().map(|r| r.id).collect::<Vec<_>>());
        let only_b = ItemFilter { property: Some("b.example".into()), engine: Some(EngineKind::Bing), ..all.clone() };
        assert!(ledger.items(&only_b, now).unwrap().iter().all(|r| r.group == *b));
        assert_eq!(ledger.items(&ItemFilter { limit: Some(3), ..all.clone() }, now).unwrap().len(), 3);
        let retried = ledger.retry(&ItemFilter { states: vec![StateFilter::Waiting], ..only_b.clone() }, now).unwrap();
        assert_eq!(retried, 4);
        assert_counts(ledger, now);
        let dropped =
            ledger.drop_items(&ItemFilter { property: Some("a.example".into()), ..all.clone() }, now).unwrap();
        assert_eq!(dropped, 6);
        assert_counts(ledger, now);
        let last = ledger.last_rejection(a).unwrap().expect("a drop removes items, not their attempts");
        assert!(last.dropped && !last.url.is_empty(), "{last:?}");
        let unknown = group("c.example", EngineKind::Google);
        assert_eq!(ledger.queue_counts(&unknown, now).unwrap(), QueueCounts::default());
        assert_eq!(ledger.next_due(&unknown).unwrap(), None);
        assert!(ledger
            .claim(
                &unknown,
                &ClaimSpec {
                    windows: &[],
                    max_items: 10,
                    pace: None,
                    now: Now::pinned(now),
                    credential: None,
                    order: crate::model::SubmitOrder::Oldest
                },
                &me,
                &mut |_, _, _| {}
            )
            .unwrap()
            .items
            .is_empty());
    }
}
