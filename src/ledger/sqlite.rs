//! The SQLite ledger: one file (WAL, busy timeout, mode 0600), schema
//! versioned with `user_version`. Writes that decide anything (admit, claim,
//! finish, reconcile) run in `BEGIN IMMEDIATE` transactions, so two
//! processes sharing the file serialize on them and can never both take the
//! last unit of a budget. The decisions are `policy`'s; this file stores
//! them with set-based statements: a batch of URLs is looked up, inserted or
//! updated with a statement per few hundred rows, a claim marks its items
//! with one statement, and an answer moves every item it names with one.

use super::ids::{self, next_key, url_key};
use super::policy::{self, cap_body, lease_until, ledger_now, ts_ceil, AdmitPlan, ClaimPlan, Existing, PaceState};
use super::*;
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row, Transaction, TransactionBehavior};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = 5;

/// Schema 2, over schema 1: SQL before and after `upgrade_to_2` copies the rows.
const SCHEMA_2: &str = include_str!("sqlite_schema.sql");
/// Schema 3, over schema 2: the sitemaps read for sources, and reminders.
const SCHEMA_3: &str = include_str!("sqlite_schema_3.sql");
/// Schema 4, over schema 3: Google URL inspections per property and class, and
/// the items `queue drop` removed that requests name.
const SCHEMA_4: &str = include_str!("sqlite_schema_4.sql");
/// Schema 5, over schema 4: groups have a channel (sitemap groups), the sitemaps read
/// keep when they last changed, and what the engines report of the sitemaps submitted.
const SCHEMA_5: &str = include_str!("sqlite_schema_5.sql");
const COPY_ROWS: &str = "-- (upgrade_to_2 copies the rows here)";

/// Rows a multi-row statement takes at a time (5 values a row stay well
/// under SQLite's limit of 32,766 parameters).
const CHUNK: usize = 500;

/// Schema 1, the first migration of every ledger.
const SCHEMA_1: &str = r#"
CREATE TABLE groups (
    id        INTEGER PRIMARY KEY,
    property  TEXT NOT NULL,
    engine    TEXT NOT NULL,
    target    TEXT NOT NULL,
    -- The group's items by state (counting a queue of a million would read
    -- all of it): `admit` counts the items it inserts (a trigger per row
    -- would slow a large intake), the triggers below every other change.
    queued    INTEGER NOT NULL DEFAULT 0,
    in_flight INTEGER NOT NULL DEFAULT 0,
    parked    INTEGER NOT NULL DEFAULT 0,
    accepted  INTEGER NOT NULL DEFAULT 0,
    UNIQUE (property, engine, target)
);

CREATE TABLE items (
    id                 INTEGER PRIMARY KEY,
    url                TEXT NOT NULL,
    group_id           INTEGER NOT NULL REFERENCES groups (id),
    state              TEXT NOT NULL,
    action             TEXT NOT NULL DEFAULT 'updated',
    lastmod            INTEGER,
    next_attempt_at    INTEGER,
    enqueued_at        INTEGER NOT NULL,
    attempts           INTEGER NOT NULL DEFAULT 0,
    last_class         TEXT,
    last_reason        TEXT,
    last_message       TEXT,
    last_http_status   INTEGER,
    streak             INTEGER NOT NULL DEFAULT 0,
    streak_started_at  INTEGER,
    accepted_at        INTEGER,
    parked_fingerprint TEXT,
    reservation_id     INTEGER,
    UNIQUE (url, group_id)
);
CREATE INDEX items_group ON items (group_id, state, next_attempt_at);
CREATE INDEX items_reservation ON items (reservation_id) WHERE reservation_id IS NOT NULL;

CREATE TRIGGER items_uncounted AFTER DELETE ON items BEGIN
    UPDATE groups SET queued = queued - (OLD.state = 'queued'), in_flight = in_flight - (OLD.state = 'in_flight'),
        parked = parked - (OLD.state = 'parked'), accepted = accepted - (OLD.state = 'accepted')
    WHERE id = OLD.group_id;
END;
CREATE TRIGGER items_recounted AFTER UPDATE OF state, group_id ON items
WHEN OLD.state IS NOT NEW.state OR OLD.group_id IS NOT NEW.group_id BEGIN
    UPDATE groups SET queued = queued - (OLD.state = 'queued'), in_flight = in_flight - (OLD.state = 'in_flight'),
        parked = parked - (OLD.state = 'parked'), accepted = accepted - (OLD.state = 'accepted')
    WHERE id = OLD.group_id;
    UPDATE groups SET queued = queued + (NEW.state = 'queued'), in_flight = in_flight + (NEW.state = 'in_flight'),
        parked = parked + (NEW.state = 'parked'), accepted = accepted + (NEW.state = 'accepted')
    WHERE id = NEW.group_id;
END;

CREATE TABLE responses (
    id          INTEGER PRIMARY KEY,
    http_status INTEGER,
    body        TEXT
);

CREATE TABLE attempts (
    id          INTEGER PRIMARY KEY,
    item_id     INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    at          INTEGER NOT NULL,
    class       TEXT NOT NULL,
    reason      TEXT NOT NULL,
    message     TEXT NOT NULL,
    response_id INTEGER REFERENCES responses (id),
    retry_at    INTEGER
);
CREATE INDEX attempts_item ON attempts (item_id, at);
CREATE INDEX attempts_at ON attempts (at);
CREATE INDEX attempts_rejected ON attempts (at, id) WHERE class != 'accepted';

CREATE TABLE budget_usage (
    rule               TEXT NOT NULL,
    window_key         TEXT NOT NULL,
    period             TEXT NOT NULL,
    used               INTEGER NOT NULL DEFAULT 0,
    limit_value        INTEGER,
    resets_at          INTEGER NOT NULL,
    reported_at        INTEGER,
    reported_remaining INTEGER,
    PRIMARY KEY (rule, window_key)
);

CREATE TABLE blocks (
    rule  TEXT PRIMARY KEY,
    until INTEGER NOT NULL
);

CREATE TABLE reservations (
    id          INTEGER PRIMARY KEY,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    started     INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    lease_until INTEGER NOT NULL,
    units       INTEGER NOT NULL
);

CREATE TABLE reservation_rules (
    reservation_id INTEGER NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
    rule           TEXT NOT NULL,
    window_key     TEXT NOT NULL,
    units          INTEGER NOT NULL
);
CREATE INDEX reservation_rules_rule ON reservation_rules (rule, window_key);

CREATE TABLE pacing (
    key    TEXT PRIMARY KEY,
    tat_ms INTEGER NOT NULL
);

CREATE TABLE credentials (
    fingerprint   TEXT PRIMARY KEY,
    first_used_at INTEGER NOT NULL
);

CREATE TABLE runs (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    latest_now INTEGER NOT NULL
);
"#;

pub struct SqliteLedger {
    conn: Connection,
    /// Ids of groups known to be in the ledger (committed). A group row is
    /// never deleted or changed, so an id once read stays valid.
    groups: HashMap<GroupKey, i64>,
    /// How long this process's reservations are trusted without a live owner.
    lease: TimeDelta,
}

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

fn load_pace<'p>(tx: &Connection, pace: &'p Pace, now: DateTime<Utc>, windows: &[RuleWindow]) -> Result<PaceState<'p>> {
    let tat_ms: Option<i64> =
        tx.query_row("SELECT tat_ms FROM pacing WHERE key = ?1", [&pace.key], |r| r.get(0)).optional()?;
    Ok(PaceState::new(pace, now, tat_ms, windows))
}

/// The ledger's clock: this machine's (`local`), never earlier than the
/// latest instant recorded; with `record`, recorded as the latest.
fn ledger_time(conn: &Connection, local: DateTime<Utc>, record: bool) -> Result<LedgerTime> {
    let latest: Option<i64> =
        conn.query_row("SELECT latest_now FROM runs WHERE id = 1", [], |r| r.get(0)).optional()?;
    let latest = opt_ts(latest);
    let now = ledger_now(local, latest);
    if record && latest.is_none_or(|l| ts(now) > ts(l)) {
        conn.execute(
            "INSERT INTO runs (id, latest_now) VALUES (1, ?1)
             ON CONFLICT (id) DO UPDATE SET latest_now = MAX(latest_now, excluded.latest_now)",
            [ts(now)],
        )?;
    }
    Ok(LedgerTime { now, latest, clock: local })
}

fn store_pace(tx: &Connection, key: &str, state: &PaceState) -> Result<()> {
    tx.execute(
        "INSERT INTO pacing (key, tat_ms) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET tat_ms = excluded.tat_ms",
        params![key, state.tat_ms()],
    )?;
    Ok(())
}

/// Runs `sql_head VALUES (..), (..), ...` over `rows` (each `width`
/// values), `CHUNK` rows a statement (the statement for a full chunk is
/// prepared once). `sql_tail` follows the values.
fn insert_rows(tx: &Connection, sql_head: &str, sql_tail: &str, width: usize, rows: &[Value]) -> Result<usize> {
    let tuple = format!("({})", vec!["?"; width].join(", "));
    let mut changed = 0;
    for chunk in rows.chunks(CHUNK * width) {
        let n = chunk.len() / width;
        let sql = format!("{sql_head} VALUES {}{sql_tail}", vec![tuple.as_str(); n].join(", "));
        changed += tx.prepare_cached(&sql)?.execute(params_from_iter(chunk.iter()))?;
    }
    Ok(changed)
}

/// The id the next new item takes: after every item's and every dropped
/// item's, so that an id a request names is never another URL's (the
/// write lock is held).
fn next_item_id(tx: &Connection) -> Result<i64> {
    let sql =
        "SELECT MAX(COALESCE((SELECT MAX(id) FROM items), 0), COALESCE((SELECT MAX(id) FROM dropped_items), 0)) + 1";
    Ok(tx.query_row(sql, [], |r| r.get(0))?)
}

impl SqliteLedger {
    /// Opens (creating if needed) the ledger file and brings its schema up to date.
    pub fn open(path: &Path) -> Result<SqliteLedger> {
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
        let conn = Connection::open(path).map_err(|e| open_err("cannot open it".into(), None, Some(e.into())))?;
        // New, or made by someone else (an empty file, a copy): private.
        restrict_mode(path).map_err(|e| open_err(format!("cannot set mode 0600: {e}"), None, None))?;
        let mut ledger = SqliteLedger { conn, groups: HashMap::new(), lease: owner::LEASE };
        // Switching a new file to WAL needs a moment alone with it: several
        // runs starting at once on a new ledger take turns (the busy timeout
        // does not cover that switch).
        let mut tries = 0;
        let configured = loop {
            match ledger.configure(true) {
                Err(LedgerError::Busy) if tries < 100 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                other => break other,
            }
        };
        configured.map_err(|e| match e {
            LedgerError::Newer { found, known } => LedgerError::newer(&path.display().to_string(), found, known),
            e => open_err(
                "cannot use it".into(),
                Some("if the file is damaged, move it aside: indexq starts a new ledger (queued URLs in it would need resubmitting)".into()),
                Some(e),
            ),
        })?;
        Ok(ledger)
    }

    /// An empty ledger in memory, for a dry run where there is no ledger
    /// file yet: nothing it holds survives the run.
    pub fn in_memory() -> Result<SqliteLedger> {
        let mut ledger =
            SqliteLedger { conn: Connection::open_in_memory()?, groups: HashMap::new(), lease: owner::LEASE };
        ledger.configure(false)?;
        Ok(ledger)
    }

    fn configure(&mut self, on_disk: bool) -> Result<()> {
        self.conn.busy_timeout(std::time::Duration::from_secs(60))?;
        // A batch's index pages stay in memory (32 MiB at most), and the
        // write-ahead log is copied back every 40 MiB rather than every 4.
        self.conn.pragma_update(None, "cache_size", -32 * 1024)?;
        if on_disk {
            self.conn.pragma_update(None, "journal_mode", "WAL")?;
            self.conn.pragma_update(None, "synchronous", "FULL")?;
            self.conn.pragma_update(None, "wal_autocheckpoint", 10_000)?;
        } else {
            // A dry run's empty ledger: nothing in it needs to survive a crash.
            self.conn.pragma_update(None, "journal_mode", "OFF")?;
            self.conn.pragma_update(None, "synchronous", "OFF")?;
        }
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        rusqlite::vtab::array::load_module(&self.conn)?;
        self.migrate()
    }

    fn migrate(&mut self) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(LedgerError::Newer { found: version, known: SCHEMA_VERSION });
        }
        if version < 1 {
            tx.execute_batch(SCHEMA_1)?;
        }
        if version < 2 {
            upgrade_to_2(&tx)?;
        }
        if version < 3 {
            tx.execute_batch(SCHEMA_3)?;
        }
        if version < 4 {
            tx.execute_batch(SCHEMA_4)?;
        }
        if version < 5 {
            tx.execute_batch(SCHEMA_5)?;
        }
        if version < SCHEMA_VERSION {
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        }
        tx.commit()?;
        Ok(())
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

    fn write(&mut self) -> Result<Transaction<'_>> {
        write(&mut self.conn)
    }

    /// The id of an existing group (read outside any transaction: group
    /// rows never change once written).
    fn existing_group(&mut self, key: &GroupKey) -> Result<Option<i64>> {
        group_id(&self.conn, &mut self.groups, key)
    }
}

/// Schema 1 → 2: items get their URL key (a URL whose key another of its
/// group holds takes the next free one), each attempt becomes a recorded
/// request naming its item, and each item points at its last one.
fn upgrade_to_2(tx: &Connection) -> Result<()> {
    let (before, after) = SCHEMA_2.split_once(COPY_ROWS).expect("the schema-2 script marks where the rows are copied");
    tx.execute_batch(before)?;
    {
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
    }
    tx.execute_batch(after)?;
    recount(tx)
}

/// The kept counts of every group, counted again.
fn recount(tx: &Connection) -> Result<()> {
    tx.execute_batch(
        "UPDATE groups SET
             queued = (SELECT COUNT(*) FROM items WHERE group_id = groups.id AND state = 'queued'),
             in_flight = (SELECT COUNT(*) FROM items WHERE group_id = groups.id AND state = 'in_flight'),
             parked = (SELECT COUNT(*) FROM items WHERE group_id = groups.id AND state = 'parked'),
             accepted = (SELECT COUNT(*) FROM items WHERE group_id = groups.id AND state = 'accepted');",
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
/// all to another state).
fn states_of(tx: &Connection, ids: &[i64]) -> Result<Vec<(ItemState, u64)>> {
    let mut stmt = tx.prepare_cached("SELECT state, COUNT(*) FROM items WHERE id IN rarray(?1) GROUP BY state")?;
    let mut rows = stmt.query([array(ids)])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push((stored("items", "state", &r.get::<_, String>(0)?)?, r.get::<_, i64>(1)?.max(0) as u64));
    }
    Ok(out)
}

fn write(conn: &mut Connection) -> Result<Transaction<'_>> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

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
    created: &mut Vec<(GroupKey, i64)>,
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

fn usage_in(tx: &Connection, rule: &RuleWindow) -> Result<Usage> {
    let blocked: Option<i64> =
        tx.query_row("SELECT until FROM blocks WHERE rule = ?1", params![rule.rule], |r| r.get(0)).optional()?;
    let usage = tx
        .query_row(
            "SELECT used, limit_value, reported_at, reported_remaining FROM budget_usage
             WHERE rule = ?1 AND window_key = ?2",
            params![rule.rule, rule.window],
            |r| {
                let reported =
                    match (r.get::<_, Option<i64>>(2)?, r.get::<_, Option<i64>>(3)?, r.get::<_, Option<i64>>(1)?) {
                        (Some(at), Some(remaining), Some(limit)) => Some(Report {
                            at: from_ts(at),
                            remaining: remaining.max(0) as u64,
                            limit: limit.max(0) as u64,
                        }),
                        _ => None,
                    };
                Ok(Usage { used: r.get::<_, i64>(0)?.max(0) as u64, blocked_until: None, reported })
            },
        )
        .optional()?
        .unwrap_or_default();
    Ok(Usage { blocked_until: opt_ts(blocked), ..usage })
}

/// Records, in the caller's transaction, that the engine says `remaining`
/// units are left in a reported rule's window (`policy::reported_limit`):
/// in flight is what every reservation but `answered` (the one whose answer
/// said it, being finished) has counted in the window.
fn report_in(
    tx: &Connection,
    rule: &RuleWindow,
    remaining: u64,
    now: DateTime<Utc>,
    answered: Option<i64>,
) -> Result<Report> {
    let in_flight: i64 = tx.query_row(
        "SELECT COALESCE(SUM(units), 0) FROM reservation_rules
         WHERE rule = ?1 AND window_key = ?2 AND reservation_id IS NOT ?3",
        params![rule.rule, rule.window, answered],
        |r| r.get(0),
    )?;
    add_usage(tx, rule, 0)?;
    let used = usage_in(tx, rule)?.used;
    let limit = policy::reported_limit(used, remaining, in_flight.max(0) as u64);
    tx.execute(
        "UPDATE budget_usage SET limit_value = ?3, reported_at = ?4, reported_remaining = ?5
         WHERE rule = ?1 AND window_key = ?2",
        params![rule.rule, rule.window, limit as i64, ts(now), remaining as i64],
    )?;
    Ok(Report { at: now, remaining, limit })
}

/// Counts `units` against a rule's window. The limit stored is the rule's,
/// unless the engine reported one in this window.
fn add_usage(tx: &Connection, rule: &RuleWindow, units: u64) -> Result<()> {
    tx.execute(
        "INSERT INTO budget_usage (rule, window_key, period, used, limit_value, resets_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (rule, window_key) DO UPDATE SET used = used + excluded.used,
             limit_value = CASE WHEN reported_at IS NULL THEN excluded.limit_value ELSE limit_value END,
             resets_at = excluded.resets_at",
        params![
            rule.rule,
            rule.window,
            rule.period.as_str(),
            units as i64,
            rule.limit.map(|l| l as i64),
            ts(rule.resets_at)
        ],
    )?;
    Ok(())
}

/// What the ledger holds of each URL of `batch` (whose items are in the
/// groups `group_ids`, same order): the item, or, for a URL new to its
/// group, the key it takes (`ids::resolve`). Keys are read a group and up
/// to 10,000 at a time, with one statement.
fn look_up(tx: &Connection, batch: &[NewItem], group_ids: &[i64]) -> Result<Vec<std::result::Result<Existing, i64>>> {
    let urls: Vec<&str> = batch.iter().map(|i| i.url.as_str()).collect();
    let mut stmt = tx.prepare_cached(
        "SELECT url_key, url, id, url, state, action, lastmod, accepted_at, next_attempt_at FROM items
         WHERE group_id = ?1 AND url_key IN rarray(?2)",
    )?;
    ids::resolve(&urls, group_ids, |wanted| {
        let mut by_group: HashMap<i64, Vec<i64>> = HashMap::new();
        for (group, key) in wanted {
            by_group.entry(*group).or_default().push(*key);
        }
        let mut found = Vec::new();
        // (A group the ledger has never seen, -1, holds nothing.)
        for (group, keys) in by_group.into_iter().filter(|(g, _)| *g >= 0) {
            for chunk in keys.chunks(10_000) {
                let mut rows = stmt.query(params![group, array(chunk)])?;
                while let Some(r) = rows.next()? {
                    found.push((group, r.get(0)?, r.get(1)?, existing_row(r, 2)?));
                }
            }
        }
        Ok(found)
    })
}

/// `Existing` from columns `id, url, state, action, lastmod, accepted_at,
/// next_attempt_at` starting at `at` (the url is skipped).
fn existing_row(r: &Row<'_>, at: usize) -> Result<Existing> {
    let state: String = r.get(at + 2)?;
    let action: String = r.get(at + 3)?;
    Ok(Existing {
        id: r.get(at)?,
        state: stored("items", "state", &state)?,
        action: stored("items", "action", &action)?,
        lastmod: opt_ts(r.get(at + 4)?),
        accepted_at: opt_ts(r.get(at + 5)?),
        next_attempt_at: opt_ts(r.get(at + 6)?),
    })
}

/// The columns `item_row` reads, from `items i JOIN groups g LEFT JOIN
/// requests r ON r.id = i.last_request_id`.
const ITEM_COLUMNS: &str = "i.id, i.url, g.property, g.engine, g.target, i.state, i.next_attempt_at, i.attempts, \
     i.last_class, r.reason, r.message, r.http_status, i.accepted_at, r.class, g.channel";
const ITEM_FROM: &str = "items i JOIN groups g ON g.id = i.group_id LEFT JOIN requests r ON r.id = i.last_request_id";

fn item_row(r: &Row<'_>) -> Result<ItemRow> {
    let engine: String = r.get(3)?;
    let state: String = r.get(5)?;
    let last_class: Option<String> = r.get(8)?;
    Ok(ItemRow {
        id: r.get(0)?,
        url: r.get(1)?,
        group: stored_group(r.get(2)?, &engine, r.get(4)?, &r.get::<_, String>(14)?)?,
        state: stored("items", "state", &state)?,
        next_attempt_at: opt_ts(r.get(6)?),
        attempts: r.get(7)?,
        last_class: stored_opt("items", "last_class", last_class.as_deref())?,
        last_reason: stored_last_reason(
            r.get::<_, Option<String>>(13)?.as_deref(),
            r.get::<_, Option<String>>(9)?.as_deref(),
        )?,
        last_message: r.get(10)?,
        last_http_status: r.get(11)?,
        accepted_at: opt_ts(r.get(12)?),
    })
}

/// The columns `attempt_row` reads, from `requests r JOIN groups g`, then
/// the URL it is shown by.
const REQUEST_COLUMNS: &str =
    "r.at, r.n, g.property, g.engine, g.target, r.class, r.reason, r.message, r.http_status, r.body, r.retry_at, \
     g.channel";

/// A request's first item, whether in the queue or dropped: joined after
/// `requests r`, for `FIRST_URL`.
const FIRST_ITEM: &str = "LEFT JOIN items i ON i.id = r.first_item LEFT JOIN dropped_items d ON d.id = r.first_item";
/// The URL of a request's first item, and whether `queue drop` removed it.
const FIRST_URL: &str = "COALESCE(i.url, d.url, ''), i.id IS NULL";

fn attempt_row(r: &Row<'_>, url: String, dropped: bool) -> Result<AttemptRow> {
    let engine: String = r.get(3)?;
    let class: String = r.get(5)?;
    let class = stored("requests", "class", &class)?;
    Ok(AttemptRow {
        at: from_ts(r.get(0)?),
        url,
        dropped,
        urls: r.get::<_, i64>(1)?.max(0) as u64,
        group: stored_group(r.get(2)?, &engine, r.get(4)?, &r.get::<_, String>(11)?)?,
        class,
        reason: stored_reason(class, &r.get::<_, String>(6)?)?,
        message: r.get(7)?,
        http_status: r.get(8)?,
        body: r.get(9)?,
        retry_at: opt_ts(r.get(10)?),
    })
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

/// A WHERE clause and its parameters for an `ItemFilter` at `now`, over
/// `items` alone or (`joined`) over `groups g CROSS JOIN items`.
fn filter_sql(filter: &ItemFilter, now: DateTime<Utc>, joined: bool) -> (String, Vec<Value>) {
    let mut clauses = vec!["1 = 1".to_string()];
    let mut values = Vec::new();
    if !filter.states.is_empty() {
        let any: Vec<String> = filter
            .states
            .iter()
            .map(|s| match s {
                StateFilter::Due => format!("(state = 'queued' AND next_attempt_at <= {})", ts(now)),
                StateFilter::Waiting => format!("(state = 'queued' AND next_attempt_at > {})", ts(now)),
                StateFilter::Parked => "state = 'parked'".to_string(),
                StateFilter::InFlight => "state = 'in_flight'".to_string(),
                StateFilter::Accepted => "state = 'accepted'".to_string(),
            })
            .collect();
        clauses.push(format!("({})", any.join(" OR ")));
    }
    // By group. Joined, a plain test on the (few) groups, which keeps them
    // scanned in their index order (`+`: no index search on them, which
    // would lose it), so the join needs no sort. Alone, the group ids from
    // a subquery, even with no test on them: the index on (group_id, state)
    // then serves a state.
    let mut by_group = Vec::new();
    let by_column = [
        ("property", filter.property.clone()),
        ("engine", filter.engine.map(|e| e.as_str().into())),
        ("target", filter.target.clone()),
    ];
    for (column, value) in by_column {
        if let Some(value) = value {
            values.push(Value::Text(value));
            by_group.push(format!("{}{column} = ?{}", if joined { "+g." } else { "" }, values.len()));
        }
    }
    if joined {
        clauses.extend(by_group);
    } else {
        by_group.insert(0, "1 = 1".into());
        clauses.push(format!("group_id IN (SELECT id FROM groups WHERE {})", by_group.join(" AND ")));
    }
    if let Some(u) = &filter.url {
        values.push(Value::Text(u.clone()));
        clauses.push(format!("{}url = ?{}", if joined { "i." } else { "" }, values.len()));
    }
    (clauses.join(" AND "), values)
}

/// The sitemaps read for sources, by URL.
fn source_documents(conn: &Connection) -> Result<Vec<SourceDocument>> {
    let mut stmt = conn.prepare(
        "SELECT url, etag, last_modified, digest, kind, routes, fetched_at, changed_at FROM sources ORDER BY url",
    )?;
    let mut rows = stmt.query([])?;
    let mut documents = Vec::new();
    while let Some(r) = rows.next()? {
        documents.push(SourceDocument {
            url: r.get(0)?,
            etag: r.get(1)?,
            last_modified: r.get(2)?,
            digest: r.get(3)?,
            kind: stored("sources", "kind", &r.get::<_, String>(4)?)?,
            routes: r.get(5)?,
            fetched_at: from_ts(r.get(6)?),
            changed_at: from_ts(r.get(7)?),
        });
    }
    Ok(documents)
}

/// Keeps sitemaps read, replacing what was kept of each URL (with `later`,
/// only by a later read: a copy merges).
fn store_source_documents(tx: &Connection, documents: &[SourceDocument], later: bool) -> Result<()> {
    let only = if later { " WHERE excluded.fetched_at >= sources.fetched_at" } else { "" };
    let sql = format!(
        "INSERT INTO sources (url, etag, last_modified, digest, kind, routes, fetched_at, changed_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, last_modified = excluded.last_modified,
             digest = excluded.digest, kind = excluded.kind, routes = excluded.routes,
             fetched_at = excluded.fetched_at, changed_at = excluded.changed_at{only}"
    );
    let mut stmt = tx.prepare(&sql)?;
    for d in documents {
        stmt.execute(params![
            d.url,
            d.etag,
            d.last_modified,
            d.digest,
            d.kind.as_str(),
            d.routes,
            ts(d.fetched_at),
            ts(d.changed_at)
        ])?;
    }
    Ok(())
}

/// What the ledger kept of the sitemaps at `urls` (the digest and when it
/// changed), by URL, in the caller's transaction.
fn stored_changes(tx: &Connection, urls: &[&str]) -> Result<HashMap<String, (String, DateTime<Utc>)>> {
    let urls: Rc<Vec<Value>> = Rc::new(urls.iter().map(|u| Value::Text(u.to_string())).collect());
    let mut stmt = tx.prepare_cached("SELECT url, digest, changed_at FROM sources WHERE url IN rarray(?1)")?;
    let mut rows = stmt.query([urls])?;
    let mut out = HashMap::new();
    while let Some(r) = rows.next()? {
        out.insert(r.get(0)?, (r.get(1)?, from_ts(r.get(2)?)));
    }
    Ok(out)
}

/// Reservations whose owner is gone (dead process, or lease expired).
fn stale_reservations(conn: &Connection, now: DateTime<Utc>, me: &Owner) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare("SELECT id, host, pid, started, lease_until FROM reservations")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            Owner { host: r.get(1)?, pid: r.get(2)?, started: r.get::<_, i64>(3)? as u64 },
            from_ts(r.get(4)?),
        ))
    })?;
    let mut stale = Vec::new();
    for row in rows {
        let (id, owner, lease_until) = row?;
        if !owner.may_be_alive(me, lease_until, now) {
            stale.push(id);
        }
    }
    Ok(stale)
}

/// The ids of the items a statement returned in its first column.
fn ids_of(stmt: &mut rusqlite::Statement<'_>, params: impl rusqlite::Params) -> Result<Vec<i64>> {
    let ids = stmt.query_map(params, |r| r.get(0))?.collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(ids)
}

impl Ledger for SqliteLedger {
    fn stale_reservations(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<u64> {
        Ok(stale_reservations(&self.conn, now, me)?.len() as u64)
    }

    fn reconcile(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<Reconciled> {
        let tx = self.write()?;
        let stale = stale_reservations(&tx, now, me)?;
        let mut done = Reconciled::default();
        for id in stale {
            let mut stmt = tx
                .prepare_cached("SELECT id FROM items WHERE reservation_id = ?1 AND state = 'in_flight' ORDER BY id")?;
            let items = ids_of(&mut stmt, [id])?;
            drop(stmt);
            if let Some(&first) = items.first() {
                let group: i64 = tx.query_row("SELECT group_id FROM items WHERE id = ?1", [first], |r| r.get(0))?;
                let request = insert_request(&tx, &Recorded::interrupted(group, now, &items))?;
                let n = tx.execute(
                    "UPDATE items SET state = 'queued', next_attempt_at = ?2, reservation_id = NULL,
                         attempts = attempts + 1, last_class = 'transient', last_request_id = ?3
                     WHERE reservation_id = ?1 AND state = 'in_flight'",
                    params![id, ts(now), request],
                )?;
                counted(&tx, group, Some(ItemState::InFlight), Some(ItemState::Queued), n as u64)?;
            }
            tx.execute("DELETE FROM reservations WHERE id = ?1", [id])?;
            done.reservations += 1;
            done.items += items.len() as u64;
        }
        tx.commit()?;
        Ok(done)
    }

    fn look_up(&mut self, batch: &[NewItem]) -> Result<Vec<Option<Existing>>> {
        let mut group_ids = Vec::with_capacity(batch.len());
        let mut last: Option<(&GroupKey, i64)> = None;
        for item in batch {
            let id = match last {
                Some((key, id)) if *key == item.group => id,
                // A group the ledger has never seen holds none of them.
                _ => group_id(&self.conn, &mut self.groups, &item.group)?.unwrap_or(-1),
            };
            last = Some((&item.group, id));
            group_ids.push(id);
        }
        Ok(look_up(&self.conn, batch, &group_ids)?.into_iter().map(|found| found.ok()).collect())
    }

    fn admit(&mut self, batch: &[NewItem], now: DateTime<Utc>, rule: &AdmitRule) -> Result<Vec<Admission>> {
        let tx = write(&mut self.conn)?;
        let mut created = Vec::new();
        let mut group_ids = Vec::with_capacity(batch.len());
        let mut last: Option<(&GroupKey, i64)> = None;
        for item in batch {
            let id = match last {
                Some((key, id)) if *key == item.group => id,
                _ => group_id_or_create(&tx, &mut self.groups, &mut created, &item.group)?,
            };
            last = Some((&item.group, id));
            group_ids.push(id);
        }
        let found = look_up(&tx, batch, &group_ids)?;
        let plan = AdmitPlan::new(batch, &group_ids, &found, rule, now);
        // New items take the ids after the last.
        let first_id = next_item_id(&tx)?;
        let ids: Vec<i64> = (first_id..).take(plan.inserts.len()).collect();
        let mut inserted: HashMap<i64, u64> = HashMap::new();
        let mut inserts = Vec::with_capacity(plan.inserts.len() * 6);
        for ((index, group, key), id) in plan.inserts.iter().zip(&ids) {
            let item = &batch[*index];
            *inserted.entry(*group).or_default() += 1;
            inserts.extend([
                Value::Integer(*id),
                Value::Integer(*group),
                Value::Integer(*key),
                Value::Text(item.url.clone()),
                Value::Text(item.action.as_str().into()),
                item.lastmod.map(ts).into(),
            ]);
        }
        insert_rows(
            &tx,
            &format!(
                "INSERT INTO items (id, group_id, url_key, url, action, lastmod, state, next_attempt_at, enqueued_at)
                 SELECT column1, column2, column3, column4, column5, column6, 'queued', {0}, {0} FROM (",
                ts(now)
            ),
            ")",
            6,
            &inserts,
        )?;
        for ((group, action, due), ids) in &plan.requeued {
            // Only accepted items are queued again.
            let n = tx
                .prepare_cached(
                    "UPDATE items SET state = 'queued', action = ?2, next_attempt_at = ?4, enqueued_at = ?3, streak = 0,
                         streak_started_at = NULL WHERE id IN rarray(?1)",
                )?
                .execute(params![array(ids), action.as_str(), ts(now), ts(*due)])?;
            counted(&tx, *group, Some(ItemState::Accepted), Some(ItemState::Queued), n as u64)?;
        }
        let updates: Vec<Value> = plan
            .updates
            .iter()
            .flat_map(|(id, action, lastmod)| {
                [Value::Integer(*id), Value::Text(action.as_str().into()), lastmod.map(ts).into()]
            })
            .collect();
        insert_rows(
            &tx,
            "UPDATE items SET action = v.column2, lastmod = v.column3 FROM (",
            ") AS v WHERE items.id = v.column1",
            3,
            &updates,
        )?;
        for (group, n) in inserted {
            counted(&tx, group, None, Some(ItemState::Queued), n)?;
        }
        let out = plan.admissions(&ids, now);
        tx.commit()?;
        self.groups.extend(created);
        Ok(out)
    }

    fn unpark_changed(&mut self, group: &GroupKey, fingerprint: &str, now: DateTime<Utc>) -> Result<u64> {
        let tx = write(&mut self.conn)?;
        let Some(group) = group_id(&tx, &mut self.groups, group)? else { return Ok(0) };
        let n = tx.execute(
            "UPDATE items SET state = 'queued', next_attempt_at = ?3, streak = 0, streak_started_at = NULL,
                 parked_fingerprint = NULL
             WHERE group_id = ?1 AND state = 'parked' AND parked_fingerprint IS NOT ?2",
            params![group, fingerprint, ts(now)],
        )?;
        counted(&tx, group, Some(ItemState::Parked), Some(ItemState::Queued), n as u64)?;
        tx.commit()?;
        Ok(n as u64)
    }

    fn stored_groups(&mut self) -> Result<Vec<GroupKey>> {
        let mut stmt = self
            .conn
            .prepare("SELECT property, engine, target, channel FROM groups ORDER BY property, engine, target")?;
        let mut rows = stmt.query([])?;
        let mut groups = Vec::new();
        while let Some(r) = rows.next()? {
            groups.push(stored_group(r.get(0)?, &r.get::<_, String>(1)?, r.get(2)?, &r.get::<_, String>(3)?)?);
        }
        Ok(groups)
    }

    fn due_groups(&mut self, now: DateTime<Utc>) -> Result<Vec<GroupKey>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT property, engine, target, channel FROM groups g
             WHERE EXISTS (SELECT 1 FROM items WHERE group_id = g.id AND state = 'queued' AND next_attempt_at <= ?1)
             ORDER BY property, engine, target",
        )?;
        let mut rows = stmt.query([ts(now)])?;
        let mut groups = Vec::new();
        while let Some(r) = rows.next()? {
            groups.push(stored_group(r.get(0)?, &r.get::<_, String>(1)?, r.get(2)?, &r.get::<_, String>(3)?)?);
        }
        Ok(groups)
    }

    fn claim(
        &mut self,
        group: &GroupKey,
        spec: &ClaimSpec,
        me: &Owner,
        deferred: &mut dyn FnMut(i64, &str, DateTime<Utc>),
    ) -> Result<Claim> {
        let ClaimSpec { windows, max_items, pace, now } = *spec;
        let tx = write(&mut self.conn)?;
        let now = ledger_time(&tx, now.local, true)?.now;
        let rules = windows.at(now);
        let rules = &rules[..];
        let mut claim = Claim { now, windows: rules.to_vec(), ..Claim::default() };
        // A group never seen has no items: the claim goes on with none.
        let group = group_id(&tx, &mut self.groups, group)?.unwrap_or(-1);
        let usages = rules.iter().map(|r| usage_in(&tx, r)).collect::<Result<Vec<_>>>()?;
        // Due items are counted only as far as the plan can tell apart:
        // past the budget and the batch, more makes no difference.
        let budget = rules.iter().zip(&usages).filter_map(|(r, u)| u.remaining(r, now)).min();
        let cap = budget.map_or(max_items, |b| (b as usize).max(max_items)).saturating_add(1);
        let due_count: i64 = tx.query_row(
            "SELECT COUNT(*) FROM (SELECT 1 FROM items WHERE group_id = ?1 AND state = 'queued' AND next_attempt_at <= ?2
                 LIMIT ?3)",
            params![group, ts(now), cap as i64],
            |r| r.get(0),
        )?;
        let pacing = match pace {
            Some(p) => Some(load_pace(&tx, p, now, rules)?),
            None => None,
        };
        let plan = ClaimPlan::new(rules, &usages, due_count.max(0) as usize, max_items, pacing.as_ref(), now);
        let due_scan = "FROM items WHERE group_id = ?1 AND state = 'queued' AND next_attempt_at <= ?2";
        if plan.take > 0 {
            tx.execute(
                "INSERT INTO reservations (host, pid, started, created_at, lease_until, units) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                params![me.host, me.pid, me.started as i64, ts(now), plan.take as i64],
            )?;
            let reservation = tx.last_insert_rowid();
            // The first `take` due items, in order, marked in flight.
            let mut stmt = tx.prepare_cached(&format!(
                "UPDATE items SET state = 'in_flight', reservation_id = ?3
                 WHERE id IN (SELECT id {due_scan} ORDER BY next_attempt_at, id LIMIT ?4)
                 RETURNING id, url, attempts, last_class, streak, streak_started_at, action, next_attempt_at"
            ))?;
            let mut rows = stmt.query(params![group, ts(now), reservation, plan.take as i64])?;
            let mut taken = Vec::with_capacity(plan.take);
            while let Some(r) = rows.next()? {
                let class: Option<String> = r.get(3)?;
                let action: String = r.get(6)?;
                let item = ClaimedItem {
                    id: r.get(0)?,
                    url: r.get(1)?,
                    action: stored("items", "action", &action)?,
                    attempts: r.get(2)?,
                    last_class: stored_opt("items", "last_class", class.as_deref())?,
                    streak: r.get(4)?,
                    streak_started_at: opt_ts(r.get(5)?),
                };
                taken.push((r.get::<_, Option<i64>>(7)?, item));
            }
            drop(rows);
            drop(stmt);
            taken.sort_by_key(|(at, item)| (*at, item.id));
            claim.items = taken.into_iter().map(|(_, item)| item).collect();
            claim.reservation = Some(reservation);
            counted(&tx, group, Some(ItemState::Queued), Some(ItemState::InFlight), claim.items.len() as u64)?;
        }
        // The next due items wait for their paced slot, each its own.
        let paced = plan.paced_until.saturating_sub(plan.take);
        if let (Some(p), true) = (&pacing, paced > 0) {
            let mut stmt =
                tx.prepare_cached(&format!("SELECT id, url {due_scan} ORDER BY next_attempt_at, id LIMIT ?3"))?;
            let rows = stmt.query_map(params![group, ts(now), paced as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
            for (position, row) in rows.enumerate() {
                let (id, url): (i64, String) = row?;
                claim.paced.push((id, url, p.estimate(plan.take + position)));
            }
        }
        // The rest wait until the budget frees up: one statement.
        if let Some(t) = plan.retry_at {
            let paced_ids: Vec<i64> = claim.paced.iter().map(|p| p.0).collect();
            let mut stmt = tx.prepare_cached(&format!(
                "UPDATE items SET next_attempt_at = ?3 WHERE id IN (SELECT id {due_scan}) AND id NOT IN rarray(?4)
                 RETURNING id, url"
            ))?;
            let mut rows = stmt.query(params![group, ts(now), ts(t), array(&paced_ids)])?;
            while let Some(r) = rows.next()? {
                deferred(r.get(0)?, &r.get::<_, String>(1)?, t);
                claim.deferred += 1;
            }
        }
        let moved: Vec<Value> =
            claim.paced.iter().flat_map(|(id, _, at)| [Value::Integer(*id), Value::Integer(ts_ceil(*at))]).collect();
        insert_rows(
            &tx,
            "UPDATE items SET next_attempt_at = v.column2 FROM (",
            ") AS v WHERE items.id = v.column1",
            2,
            &moved,
        )?;
        if let (Some(mut p), Some(pace)) = (pacing, pace) {
            claim.slots = (0..claim.items.len()).map(|_| p.next_slot()).collect();
            store_pace(&tx, &pace.key, &p)?;
        }
        claim.retry_at = plan.retry_at;
        if let Some(reservation) = claim.reservation {
            let units = claim.items.len() as i64;
            tx.execute(
                "UPDATE reservations SET lease_until = ?2, units = ?3 WHERE id = ?1",
                params![reservation, ts(lease_until(now, &claim.slots, self.lease)), units],
            )?;
            for rule in rules {
                add_usage(&tx, rule, units as u64)?;
                tx.execute(
                    "INSERT INTO reservation_rules (reservation_id, rule, window_key, units) VALUES (?1, ?2, ?3, ?4)",
                    params![reservation, rule.rule, rule.window, units],
                )?;
            }
        }
        tx.commit()?;
        Ok(claim)
    }

    fn take_units(&mut self, rules: &[RuleWindow], n: u64, now: DateTime<Utc>) -> Result<u64> {
        let tx = self.write()?;
        let mut granted = n;
        for rule in rules {
            if let Some(left) = usage_in(&tx, rule)?.remaining(rule, now) {
                granted = granted.min(left);
            }
        }
        if granted > 0 {
            for rule in rules {
                add_usage(&tx, rule, granted)?;
            }
        }
        tx.commit()?;
        Ok(granted)
    }

    fn record_inspections(&mut self, done: &Inspections) -> Result<()> {
        let tx = self.write()?;
        if done.unused > 0 {
            for w in done.windows {
                tx.execute(
                    "UPDATE budget_usage SET used = MAX(used - ?3, 0) WHERE rule = ?1 AND window_key = ?2",
                    params![w.rule, w.window, done.unused as i64],
                )?;
            }
        }
        for block in done.blocks {
            add_usage(&tx, &block.rule, 0)?;
            tx.execute(
                "INSERT INTO blocks (rule, until) VALUES (?1, ?2)
                 ON CONFLICT (rule) DO UPDATE SET until = MAX(until, excluded.until)",
                params![block.rule.rule, ts(block.until)],
            )?;
        }
        for (class, answers) in policy::inspections_by_class(done.answers) {
            let last = answers.last().expect("a class with answers");
            tx.prepare_cached(
                "INSERT INTO inspections
                     (property, class, count, last_at, last_reason, last_message, last_hint, last_status)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (property, class) DO UPDATE SET count = count + excluded.count,
                     last_reason = CASE WHEN excluded.last_at >= last_at THEN excluded.last_reason ELSE last_reason END,
                     last_message = CASE WHEN excluded.last_at >= last_at THEN excluded.last_message
                                         ELSE last_message END,
                     last_hint = CASE WHEN excluded.last_at >= last_at THEN excluded.last_hint ELSE last_hint END,
                     last_status = CASE WHEN excluded.last_at >= last_at THEN excluded.last_status ELSE last_status END,
                     last_at = MAX(last_at, excluded.last_at)",
            )?
            .execute(params![
                done.property,
                class.as_str(),
                answers.len() as i64,
                ts(last.at),
                last.reason.to_string(),
                last.message,
                last.hint,
                last.http_status
            ])?;
        }
        tx.commit()?;
        Ok(())
    }

    fn inspections(&mut self) -> Result<Vec<InspectionCount>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT property, class, count, last_at, last_reason, last_message, last_hint, last_status
             FROM inspections ORDER BY property, class",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, Option<String>>(6)?,
                r.get::<_, Option<i32>>(7)?,
            ))
        })?;
        let mut counts = Vec::new();
        for row in rows {
            let (property, class, count, at, reason, message, hint, status) = row?;
            counts.push(stored_inspection(property, &class, count, from_ts(at), &reason, message, hint, status)?);
        }
        Ok(counts)
    }

    fn finish(&mut self, done: &Finish) -> Result<()> {
        let Finish { reservation, answers, blocks, reports, windows } = done;
        let tx = self.write()?;
        // Items answered before in this finish (Bing's halves of a batch):
        // their state is read before they move again.
        let mut answered: HashSet<i64> = HashSet::new();
        for answer in answers.iter().filter(|a| !a.items.is_empty()) {
            let group: i64 =
                tx.query_row("SELECT group_id FROM items WHERE id = ?1", [answer.items[0]], |r| r.get(0))?;
            let (state, next, fingerprint) = match &answer.next {
                NextStep::Accepted => ("accepted", None, None),
                NextStep::RetryAt(t) => ("queued", Some(*t), None),
                NextStep::Park { fingerprint } => ("parked", None, Some(fingerprint.as_str())),
            };
            let request = insert_request(&tx, &Recorded::answer(group, answer))?;
            let again = answer.items.iter().any(|id| answered.contains(id));
            let before = match again {
                true => states_of(&tx, &answer.items)?,
                // Claimed by this reservation and not answered yet: in flight.
                false => vec![(ItemState::InFlight, answer.items.len() as u64)],
            };
            answered.extend(&answer.items);
            // Every item the answer names, in one statement.
            tx.prepare_cached(
                "UPDATE items SET
                     state = ?2, next_attempt_at = ?3, reservation_id = NULL,
                     attempts = attempts + 1,
                     streak = CASE WHEN last_class IS ?4 THEN streak + 1 ELSE 1 END,
                     streak_started_at = CASE WHEN last_class IS ?4 AND streak_started_at IS NOT NULL
                                              THEN streak_started_at ELSE ?5 END,
                     last_class = ?4,
                     accepted_at = CASE WHEN ?2 = 'accepted' THEN ?5 ELSE accepted_at END,
                     parked_fingerprint = ?6, last_request_id = ?7
                 WHERE id IN rarray(?1)",
            )?
            .execute(params![
                array(&answer.items),
                state,
                next.map(ts),
                answer.class.as_str(),
                ts(answer.at),
                fingerprint,
                request
            ])?;
            let to = stored("items", "state", state)?;
            for (from, n) in before {
                counted(&tx, group, Some(from), Some(to), n)?;
            }
        }
        // What the engine did not count goes back, window by window.
        for w in windows {
            let back = policy::given_back(answers, w);
            if back > 0 {
                tx.execute(
                    "UPDATE budget_usage SET used = MAX(used - ?3, 0) WHERE rule = ?1 AND window_key = ?2",
                    params![w.rule, w.window, back as i64],
                )?;
            }
        }
        for r in reports {
            report_in(&tx, &r.window, r.remaining, r.at, Some(*reservation))?;
        }
        for block in blocks {
            add_usage(&tx, &block.rule, 0)?;
            tx.execute(
                "INSERT INTO blocks (rule, until) VALUES (?1, ?2)
                 ON CONFLICT (rule) DO UPDATE SET until = MAX(until, excluded.until)",
                params![block.rule.rule, ts(block.until)],
            )?;
        }
        tx.execute("DELETE FROM reservations WHERE id = ?1", [reservation])?;
        tx.commit()?;
        Ok(())
    }

    fn next_due(&mut self, group: &GroupKey) -> Result<Option<DateTime<Utc>>> {
        let Some(group) = self.existing_group(group)? else { return Ok(None) };
        let t: Option<i64> = self
            .conn
            .prepare_cached("SELECT MIN(next_attempt_at) FROM items WHERE group_id = ?1 AND state = 'queued'")?
            .query_row([group], |r| r.get(0))?;
        Ok(opt_ts(t))
    }

    fn pace_tat(&mut self, key: &str) -> Result<Option<i64>> {
        Ok(self.conn.query_row("SELECT tat_ms FROM pacing WHERE key = ?1", [key], |r| r.get(0)).optional()?)
    }

    fn first_use(&mut self, fingerprint: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
        let tx = self.write()?;
        tx.execute(
            "INSERT INTO credentials (fingerprint, first_used_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            params![fingerprint, ts(now)],
        )?;
        let t: i64 =
            tx.query_row("SELECT first_used_at FROM credentials WHERE fingerprint = ?1", [fingerprint], |r| r.get(0))?;
        tx.commit()?;
        Ok(from_ts(t))
    }

    fn now(&mut self, now: Now, record: bool) -> Result<LedgerTime> {
        if !record {
            return ledger_time(&self.conn, now.local, false);
        }
        let tx = self.write()?;
        let time = ledger_time(&tx, now.local, true)?;
        tx.commit()?;
        Ok(time)
    }

    fn credential_accepted(&mut self, fingerprint: &str) -> Result<()> {
        let tx = self.write()?;
        tx.execute("DELETE FROM credentials WHERE fingerprint = ?1", [fingerprint])?;
        tx.commit()?;
        Ok(())
    }

    fn usage(&mut self, rule: &RuleWindow) -> Result<Usage> {
        usage_in(&self.conn, rule)
    }

    fn record_report(&mut self, rule: &RuleWindow, remaining: u64, now: DateTime<Utc>) -> Result<Report> {
        let tx = self.write()?;
        let report = report_in(&tx, rule, remaining, now, None)?;
        tx.commit()?;
        Ok(report)
    }

    fn queue_counts(&mut self, group: &GroupKey, now: DateTime<Utc>) -> Result<QueueCounts> {
        let Some(group) = self.existing_group(group)? else { return Ok(QueueCounts::default()) };
        // The counts by state are kept in `groups`; only the due items are
        // counted here (one statement: one snapshot).
        let (queued, in_flight, parked, accepted, due) = self
            .conn
            .prepare_cached(
                "SELECT queued, in_flight, parked, accepted,
                     (SELECT COUNT(*) FROM items WHERE group_id = g.id AND state = 'queued' AND next_attempt_at <= ?2)
                 FROM groups g WHERE id = ?1",
            )?
            .query_row(params![group, ts(now)], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                ))
            })?;
        let n = |v: i64| v.max(0) as u64;
        Ok(QueueCounts {
            due: n(due),
            waiting: n(queued - due),
            parked: n(parked),
            in_flight: n(in_flight),
            accepted: n(accepted),
        })
    }

    fn last_rejection(&mut self, group: &GroupKey) -> Result<Option<AttemptRow>> {
        let Some(group) = self.existing_group(group)? else { return Ok(None) };
        // The newest rejection, from its own partial index: accepted
        // requests, however many, are not read.
        let sql = format!(
            "SELECT {REQUEST_COLUMNS}, {FIRST_URL} FROM requests r JOIN groups g ON g.id = r.group_id {FIRST_ITEM}
             WHERE r.group_id = ?1 AND r.class != 'accepted'
             ORDER BY r.at DESC, r.id DESC LIMIT 1"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut rows = stmt.query([group])?;
        match rows.next()? {
            Some(r) => Ok(Some(attempt_row(r, r.get(12)?, r.get(13)?)?)),
            None => Ok(None),
        }
    }

    fn items(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<Vec<ItemRow>> {
        let (clause, values) = filter_sql(filter, now, true);
        let limit = filter.limit.map_or(String::new(), |n| format!(" LIMIT {n}"));
        // Group by group (CROSS JOIN: the groups, few, in their index order
        // outside), each group's items in the order of its index: no sort.
        let sql = format!(
            "SELECT {ITEM_COLUMNS} FROM groups g CROSS JOIN items i ON i.group_id = g.id
                 LEFT JOIN requests r ON r.id = i.last_request_id
             WHERE {clause}
             ORDER BY g.property, g.engine, g.target, i.state, i.next_attempt_at, i.id{limit}"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query(params_from_iter(values))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(item_row(r)?);
        }
        Ok(out)
    }

    fn items_by_id(&mut self, ids: &[i64]) -> Result<Vec<ItemRow>> {
        let mut stmt = self.conn.prepare_cached(&format!("SELECT {ITEM_COLUMNS} FROM {ITEM_FROM} WHERE i.id = ?1"))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let mut rows = stmt.query([id])?;
            if let Some(r) = rows.next()? {
                out.push(item_row(r)?);
            }
        }
        Ok(out)
    }

    fn retry(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<u64> {
        let filter = policy::retry_states(filter);
        let (clause, mut values) = filter_sql(&filter, now, false);
        values.push(Value::Integer(ts(now)));
        let n = values.len();
        let tx = self.write()?;
        let changed = tx.execute(
            &format!(
                "UPDATE items SET state = 'queued', next_attempt_at = ?{n}, streak = 0, streak_started_at = NULL,
                     parked_fingerprint = NULL WHERE {clause}"
            ),
            params_from_iter(values),
        )?;
        // A person's command, rare: the kept counts counted again.
        recount(&tx)?;
        tx.commit()?;
        Ok(changed as u64)
    }

    fn drop_items(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<u64> {
        let filter = policy::drop_states(filter);
        let (clause, values) = filter_sql(&filter, now, false);
        let tx = self.write()?;
        let mut dropped = 0;
        let mut gone: HashMap<(i64, ItemState), u64> = HashMap::new();
        // A drop removes items, not history: their requests stay, and an
        // item a request names (it has a last one) keeps its URL and id.
        let mut kept = Vec::new();
        {
            let mut stmt = tx.prepare(&format!(
                "DELETE FROM items WHERE {clause} RETURNING id, group_id, state, url, last_request_id IS NOT NULL"
            ))?;
            let mut rows = stmt.query(params_from_iter(values))?;
            while let Some(r) = rows.next()? {
                dropped += 1;
                let state = stored("items", "state", &r.get::<_, String>(2)?)?;
                *gone.entry((r.get(1)?, state)).or_default() += 1;
                if r.get(4)? {
                    let url: String = r.get(3)?;
                    kept.extend([
                        Value::Integer(r.get(0)?),
                        Value::Integer(r.get(1)?),
                        url_key(&url).into(),
                        url.into(),
                    ]);
                }
            }
        }
        for ((group, state), n) in gone {
            counted(&tx, group, Some(state), None, n)?;
        }
        insert_rows(
            &tx,
            &format!(
                "INSERT INTO dropped_items (id, group_id, url_key, url, dropped_at)
                 SELECT column1, column2, column3, column4, {} FROM (",
                ts(now)
            ),
            ")",
            4,
            &kept,
        )?;
        tx.commit()?;
        Ok(dropped)
    }

    fn attempts(&mut self, url: Option<&str>, limit: usize) -> Result<Vec<AttemptRow>> {
        let mut out: Vec<(i64, AttemptRow)> = Vec::new();
        match url {
            Some(u) => {
                // The URL's item in each group and its items `queue drop`
                // removed, then the requests that name each.
                let groups: Vec<i64> = ids_of(&mut self.conn.prepare("SELECT id FROM groups")?, [])?;
                let mut find =
                    self.conn.prepare_cached("SELECT id, url FROM items WHERE group_id = ?1 AND url_key = ?2")?;
                let mut gone = self.conn.prepare_cached(
                    "SELECT id FROM dropped_items WHERE group_id = ?1 AND url_key = ?2 AND url = ?3 ORDER BY id",
                )?;
                let mut requests = self.conn.prepare_cached(&format!(
                    "SELECT {REQUEST_COLUMNS}, r.id, r.first_item, r.items FROM requests r JOIN groups g ON g.id = r.group_id
                     WHERE r.group_id = ?1 AND r.first_item <= ?2 AND r.last_item >= ?2"
                ))?;
                for group in groups {
                    let mut key = url_key(u);
                    let item = loop {
                        match find
                            .query_row(params![group, key], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
                            .optional()?
                        {
                            Some((id, found)) if found == u => break Some(id),
                            Some(_) => key = next_key(key),
                            None => break None,
                        }
                    };
                    let dropped = ids_of(&mut gone, params![group, url_key(u), u])?;
                    let items = item.map(|id| (id, false)).into_iter().chain(dropped.into_iter().map(|id| (id, true)));
                    for (item, dropped) in items {
                        let mut rows = requests.query(params![group, item])?;
                        while let Some(r) = rows.next()? {
                            let named = ids::named(r.get(1)?, r.get(13)?, r.get(14)?)?;
                            if named.binary_search(&item).is_ok() {
                                out.push((r.get(12)?, attempt_row(r, u.to_string(), dropped)?));
                            }
                        }
                    }
                }
                out.sort_by_key(|(id, a)| std::cmp::Reverse((a.at, *id)));
                out.truncate(limit);
            }
            None => {
                let mut stmt = self.conn.prepare(&format!(
                    "SELECT {REQUEST_COLUMNS}, {FIRST_URL}, r.id FROM requests r JOIN groups g ON g.id = r.group_id
                         {FIRST_ITEM}
                     ORDER BY r.at DESC, r.id DESC LIMIT ?1"
                ))?;
                let mut rows = stmt.query([limit as i64])?;
                while let Some(r) = rows.next()? {
                    out.push((r.get(14)?, attempt_row(r, r.get(12)?, r.get(13)?)?));
                }
            }
        }
        out.reverse();
        Ok(out.into_iter().map(|(_, a)| a).collect())
    }

    fn schema_version(&mut self) -> Result<i64> {
        SqliteLedger::schema_version(self)
    }

    fn export(&mut self, in_flight_ok: bool) -> Result<Dump> {
        let tx = self.write()?;
        let in_flight: i64 = tx.query_row("SELECT COUNT(*) FROM reservations", [], |r| r.get(0))?;
        if in_flight > 0 && !in_flight_ok {
            return Err(in_flight_error(in_flight));
        }
        let mut dump = Dump::default();
        let mut item_index = HashMap::new();
        let mut last_request = Vec::new();
        {
            let mut stmt = tx.prepare(
                "SELECT i.id, i.url, g.property, g.engine, g.target, i.state, i.action, i.lastmod, i.next_attempt_at,
                     i.enqueued_at, i.attempts, i.last_class, i.streak, i.streak_started_at, i.accepted_at,
                     i.parked_fingerprint, i.last_request_id, g.channel
                 FROM items i JOIN groups g ON g.id = i.group_id ORDER BY i.id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let engine: String = r.get(3)?;
                let (state, action): (String, String) = (r.get(5)?, r.get(6)?);
                let class: Option<String> = r.get(11)?;
                item_index.insert(r.get::<_, i64>(0)?, dump.items.len());
                last_request.push(r.get::<_, Option<i64>>(16)?);
                dump.items.push(DumpItem {
                    url: r.get(1)?,
                    group: stored_group(r.get(2)?, &engine, r.get(4)?, &r.get::<_, String>(17)?)?,
                    state: stored("items", "state", &state)?,
                    action: stored("items", "action", &action)?,
                    lastmod: opt_ts(r.get(7)?),
                    next_attempt_at: opt_ts(r.get(8)?),
                    enqueued_at: from_ts(r.get(9)?),
                    attempts: r.get(10)?,
                    last_class: stored_opt("items", "last_class", class.as_deref())?,
                    streak: r.get(12)?,
                    streak_started_at: opt_ts(r.get(13)?),
                    accepted_at: opt_ts(r.get(14)?),
                    parked_fingerprint: r.get(15)?,
                    last_request: None,
                });
            }
        }
        let mut dropped_index = HashMap::new();
        {
            let mut stmt = tx.prepare(
                "SELECT d.id, d.url, g.property, g.engine, g.target, d.dropped_at, g.channel
                 FROM dropped_items d JOIN groups g ON g.id = d.group_id ORDER BY d.id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                dropped_index.insert(r.get::<_, i64>(0)?, dump.dropped.len());
                dump.dropped.push(DumpDropped {
                    url: r.get(1)?,
                    group: stored_group(r.get(2)?, &r.get::<_, String>(3)?, r.get(4)?, &r.get::<_, String>(6)?)?,
                    dropped_at: from_ts(r.get(5)?),
                });
            }
        }
        {
            let mut request_index = HashMap::new();
            let mut stmt = tx.prepare(
                "SELECT r.id, g.property, g.engine, g.target, r.at, r.class, r.reason, r.message, r.http_status,
                     r.body, r.retry_at, r.n, r.first_item, r.items, g.channel
                 FROM requests r JOIN groups g ON g.id = r.group_id ORDER BY r.at, r.id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let named = ids::named(r.get(11)?, r.get(12)?, r.get(13)?)?;
                let items: Vec<usize> = named.iter().filter_map(|id| item_index.get(id).copied()).collect();
                let dropped: Vec<usize> = named.iter().filter_map(|id| dropped_index.get(id).copied()).collect();
                if items.is_empty() && dropped.is_empty() {
                    continue;
                }
                let (engine, class): (String, String) = (r.get(2)?, r.get(5)?);
                let class = stored("requests", "class", &class)?;
                request_index.insert(r.get::<_, i64>(0)?, dump.requests.len());
                dump.requests.push(DumpRequest {
                    group: stored_group(r.get(1)?, &engine, r.get(3)?, &r.get::<_, String>(14)?)?,
                    at: from_ts(r.get(4)?),
                    class,
                    reason: stored_reason(class, &r.get::<_, String>(6)?)?,
                    message: r.get(7)?,
                    response: StoredResponse { http_status: r.get(8)?, body: r.get(9)? },
                    retry_at: opt_ts(r.get(10)?),
                    items,
                    dropped,
                });
            }
            for (item, request) in dump.items.iter_mut().zip(last_request) {
                item.last_request = request.and_then(|r| request_index.get(&r).copied());
            }
        }
        {
            let mut stmt = tx.prepare(
                "SELECT rule, window_key, period, used, limit_value, resets_at, reported_at, reported_remaining
                 FROM budget_usage ORDER BY rule, window_key",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok(DumpUsage {
                    rule: r.get(0)?,
                    window: r.get(1)?,
                    period: r.get(2)?,
                    used: r.get::<_, i64>(3)?.max(0) as u64,
                    limit: r.get::<_, Option<i64>>(4)?.map(|l| l.max(0) as u64),
                    resets_at: from_ts(r.get(5)?),
                    reported_at: opt_ts(r.get(6)?),
                    reported_remaining: r.get::<_, Option<i64>>(7)?.map(|l| l.max(0) as u64),
                })
            })?;
            dump.usage = rows.collect::<rusqlite::Result<_>>()?;
            let mut stmt = tx.prepare("SELECT rule, until FROM blocks ORDER BY rule")?;
            dump.blocks =
                stmt.query_map([], |r| Ok((r.get(0)?, from_ts(r.get(1)?))))?.collect::<rusqlite::Result<_>>()?;
            let mut stmt = tx.prepare("SELECT key, tat_ms FROM pacing ORDER BY key")?;
            dump.pacing = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
            let mut stmt = tx.prepare("SELECT fingerprint, first_used_at FROM credentials ORDER BY fingerprint")?;
            dump.credentials =
                stmt.query_map([], |r| Ok((r.get(0)?, from_ts(r.get(1)?))))?.collect::<rusqlite::Result<_>>()?;
            let mut stmt = tx.prepare(
                "SELECT g.property, g.engine, g.target, m.reason, m.reminded_at, g.channel
                 FROM reminders m JOIN groups g ON g.id = m.group_id ORDER BY g.property, g.engine, g.target, m.reason",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let group = stored_group(r.get(0)?, &r.get::<_, String>(1)?, r.get(2)?, &r.get::<_, String>(5)?)?;
                dump.reminders.push((group, r.get(3)?, from_ts(r.get(4)?)));
            }
        }
        dump.sources = source_documents(&tx)?;
        dump.latest_run =
            opt_ts(tx.query_row("SELECT latest_now FROM runs WHERE id = 1", [], |r| r.get(0)).optional()?);
        tx.commit()?;
        Ok(dump)
    }

    fn import(&mut self, dump: &Dump) -> Result<Copied> {
        let tx = write(&mut self.conn)?;
        let mut copied = Copied::default();
        let mut created = Vec::new();
        let mut ids = Vec::with_capacity(dump.items.len());
        {
            // Each item by its group and URL: updated to the dump's state
            // (unless in flight here), or inserted.
            let mut batch_groups = Vec::with_capacity(dump.items.len());
            for item in &dump.items {
                batch_groups.push(group_id_or_create(&tx, &mut self.groups, &mut created, &item.group)?);
            }
            let batch: Vec<NewItem> = dump
                .items
                .iter()
                .map(|i| NewItem { url: i.url.clone(), group: i.group.clone(), action: i.action, lastmod: i.lastmod })
                .collect();
            let found = look_up(&tx, &batch, &batch_groups)?;
            // New items (and dropped ones) take the ids after the last.
            let mut next_id = next_item_id(&tx)?;
            let mut insert = tx.prepare(
                "INSERT INTO items (id, group_id, url_key, url, state, action, lastmod, next_attempt_at, enqueued_at,
                     attempts, last_class, streak, streak_started_at, accepted_at, parked_fingerprint)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )?;
            let mut update = tx.prepare(
                "UPDATE items SET state = ?2, action = ?3, lastmod = ?4, next_attempt_at = ?5, enqueued_at = ?6,
                     attempts = ?7, last_class = ?8, streak = ?9, streak_started_at = ?10, accepted_at = ?11,
                     parked_fingerprint = ?12
                 WHERE id = ?1 AND state != 'in_flight'",
            )?;
            // Items in flight here keep what they have.
            let mut written = Vec::with_capacity(dump.items.len());
            for ((item, found), group) in dump.items.iter().zip(found).zip(batch_groups) {
                let values = params![
                    item.state.as_str(),
                    item.action.as_str(),
                    item.lastmod.map(ts),
                    item.next_attempt_at.map(ts),
                    ts(item.enqueued_at),
                    item.attempts,
                    item.last_class.map(|c| c.as_str()),
                    item.streak,
                    item.streak_started_at.map(ts),
                    item.accepted_at.map(ts),
                    item.parked_fingerprint,
                ];
                match found {
                    Ok(existing) => {
                        let mut all: Vec<&dyn rusqlite::ToSql> = vec![&existing.id];
                        all.extend_from_slice(values);
                        copied.items += update.execute(all.as_slice())? as u64;
                        ids.push(existing.id);
                        written.push(existing.state != ItemState::InFlight);
                    }
                    Err(key) => {
                        let mut all: Vec<&dyn rusqlite::ToSql> = vec![&next_id, &group, &key, &item.url];
                        all.extend_from_slice(values);
                        insert.execute(all.as_slice())?;
                        copied.items += 1;
                        ids.push(next_id);
                        next_id += 1;
                        written.push(true);
                    }
                }
            }
            // Dropped items: the same group, URL and time of the drop, or new.
            let mut dropped_ids = Vec::with_capacity(dump.dropped.len());
            {
                let mut same = tx.prepare(
                    "SELECT id FROM dropped_items WHERE group_id = ?1 AND url_key = ?2 AND url = ?3 AND dropped_at = ?4",
                )?;
                let mut keep = tx.prepare(
                    "INSERT INTO dropped_items (id, group_id, url_key, url, dropped_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                for d in &dump.dropped {
                    let group = group_id_or_create(&tx, &mut self.groups, &mut created, &d.group)?;
                    let key = params![group, url_key(&d.url), d.url, ts(d.dropped_at)];
                    let id = match same.query_row(key, |r| r.get(0)).optional()? {
                        Some(id) => id,
                        None => {
                            keep.execute(params![next_id, group, url_key(&d.url), d.url, ts(d.dropped_at)])?;
                            next_id += 1;
                            next_id - 1
                        }
                    };
                    dropped_ids.push(id);
                }
            }
            // Requests the ledger does not have yet (the same group, time,
            // outcome and items).
            let mut known = tx.prepare(
                "SELECT id, n, first_item, items FROM requests WHERE group_id = ?1 AND at = ?2 AND class = ?3
                     AND reason = ?4 AND message = ?5 AND retry_at IS ?6",
            )?;
            let mut request_ids = Vec::with_capacity(dump.requests.len());
            for r in &dump.requests {
                let group = group_id_or_create(&tx, &mut self.groups, &mut created, &r.group)?;
                let mut items: Vec<i64> =
                    r.items.iter().map(|&i| ids[i]).chain(r.dropped.iter().map(|&i| dropped_ids[i])).collect();
                items.sort_unstable();
                let key =
                    params![group, ts(r.at), r.class.as_str(), r.reason.to_string(), r.message, r.retry_at.map(ts)];
                let mut same = None;
                let mut rows = known.query(key)?;
                while let Some(row) = rows.next()? {
                    if ids::named(row.get(1)?, row.get(2)?, row.get(3)?)? == items {
                        same = Some(row.get::<_, i64>(0)?);
                    }
                }
                drop(rows);
                let id = match same {
                    Some(id) => id,
                    None => {
                        copied.attempts += 1;
                        insert_request(&tx, &Recorded::copied(group, r, &items))?
                    }
                };
                request_ids.push(id);
            }
            // An item points at its last request.
            let mut point = tx.prepare("UPDATE items SET last_request_id = ?2 WHERE id = ?1")?;
            for ((item, id), written) in dump.items.iter().zip(&ids).zip(&written) {
                if let Some(index) = item.last_request.filter(|_| *written) {
                    point.execute(params![id, request_ids[index]])?;
                }
            }
            let mut usage = tx.prepare(
                "INSERT INTO budget_usage (rule, window_key, period, used, limit_value, resets_at, reported_at,
                     reported_remaining)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (rule, window_key) DO UPDATE SET used = MAX(used, excluded.used),
                     limit_value = excluded.limit_value, resets_at = excluded.resets_at,
                     reported_at = excluded.reported_at, reported_remaining = excluded.reported_remaining",
            )?;
            for u in &dump.usage {
                usage.execute(params![
                    u.rule,
                    u.window,
                    u.period,
                    u.used as i64,
                    u.limit.map(|l| l as i64),
                    ts(u.resets_at),
                    u.reported_at.map(ts),
                    u.reported_remaining.map(|r| r as i64)
                ])?;
                copied.budget_windows += 1;
            }
            for (rule, until) in &dump.blocks {
                tx.execute(
                    "INSERT INTO blocks (rule, until) VALUES (?1, ?2)
                     ON CONFLICT (rule) DO UPDATE SET until = MAX(until, excluded.until)",
                    params![rule, ts(*until)],
                )?;
            }
            for (key, tat) in &dump.pacing {
                tx.execute(
                    "INSERT INTO pacing (key, tat_ms) VALUES (?1, ?2)
                     ON CONFLICT (key) DO UPDATE SET tat_ms = MAX(tat_ms, excluded.tat_ms)",
                    params![key, tat],
                )?;
            }
            for (fingerprint, at) in &dump.credentials {
                tx.execute(
                    "INSERT INTO credentials (fingerprint, first_used_at) VALUES (?1, ?2)
                     ON CONFLICT (fingerprint) DO UPDATE SET first_used_at = MIN(first_used_at, excluded.first_used_at)",
                    params![fingerprint, ts(*at)],
                )?;
            }
            for (group, reason, at) in &dump.reminders {
                let group = group_id_or_create(&tx, &mut self.groups, &mut created, group)?;
                tx.execute(
                    "INSERT INTO reminders (group_id, reason, reminded_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (group_id, reason) DO UPDATE SET reminded_at = MAX(reminded_at, excluded.reminded_at)",
                    params![group, reason, ts(*at)],
                )?;
            }
            store_source_documents(&tx, &dump.sources, true)?;
            if let Some(latest) = dump.latest_run {
                tx.execute(
                    "INSERT INTO runs (id, latest_now) VALUES (1, ?1)
                     ON CONFLICT (id) DO UPDATE SET latest_now = MAX(latest_now, excluded.latest_now)",
                    [ts(latest)],
                )?;
            }
            // The kept counts, recounted once (inserted rows are not counted
            // by the triggers).
            recount(&tx)?;
        }
        tx.commit()?;
        self.groups.extend(created);
        Ok(copied)
    }

    // History and monitoring: short read-only queries over the attempts,
    // and the record of `submit` runs (table `submit_runs`, migration 2).

    /// One per URL attempted: the attempts table has a row per item and attempt.
    fn outcome_counts(&mut self) -> Result<Vec<(GroupKey, Class, u64)>> {
        // One per URL a request named: the requests' sizes, summed.
        let mut stmt = self.conn.prepare(
            "SELECT g.property, g.engine, g.target, r.class, SUM(r.n), g.channel
             FROM requests r JOIN groups g ON g.id = r.group_id
             GROUP BY g.property, g.engine, g.target, g.channel, r.class",
        )?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let group = stored_group(r.get(0)?, &r.get::<_, String>(1)?, r.get(2)?, &r.get::<_, String>(5)?)?;
            let class = stored("requests", "class", &r.get::<_, String>(3)?)?;
            out.push((group, class, r.get::<_, i64>(4)?.max(0) as u64));
        }
        Ok(out)
    }

    /// The spans as a VALUES list joined to the requests by time (the index
    /// on `requests (at)` serves each span), their sizes summed per group
    /// and class.
    fn attempt_history(&mut self, bounds: &[DateTime<Utc>]) -> Result<Vec<SpanCount>> {
        if bounds.len() < 2 {
            return Ok(Vec::new());
        }
        let spans: Vec<String> =
            (0..bounds.len() - 1).map(|n| format!("({n}, ?{}, ?{})", 2 * n + 1, 2 * n + 2)).collect();
        let values: Vec<i64> = bounds.windows(2).flat_map(|w| [ts(w[0]), ts(w[1])]).collect();
        let sql = format!(
            "WITH spans (n, start, stop) AS (VALUES {})
             SELECT s.n, g.property, g.engine, g.target, r.class, SUM(r.n), g.channel
             FROM spans s JOIN requests r ON r.at >= s.start AND r.at < s.stop JOIN groups g ON g.id = r.group_id
             GROUP BY s.n, g.property, g.engine, g.target, g.channel, r.class",
            spans.join(", ")
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query(params_from_iter(values))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(SpanCount {
                span: r.get::<_, i64>(0)?.max(0) as usize,
                group: stored_group(r.get(1)?, &r.get::<_, String>(2)?, r.get(3)?, &r.get::<_, String>(6)?)?,
                class: stored("requests", "class", &r.get::<_, String>(4)?)?,
                urls: r.get::<_, i64>(5)?.max(0) as u64,
            });
        }
        Ok(out)
    }

    fn record_run(&mut self, run: &RunRecord) -> Result<()> {
        let tx = self.write()?;
        tx.execute(
            "INSERT INTO submit_runs (host, started_ms, ended_ms, exit_code) VALUES (?1, ?2, ?3, ?4)",
            params![run.host, run.started_at.timestamp_millis(), run.ended_at.timestamp_millis(), run.exit_code],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The latest row recorded (the highest id), of all or of those that exited 0.
    fn last_run(&mut self, succeeded: bool) -> Result<Option<RunRecord>> {
        let only_ok = if succeeded { "WHERE exit_code = 0" } else { "" };
        let sql =
            format!("SELECT host, started_ms, ended_ms, exit_code FROM submit_runs {only_ok} ORDER BY id DESC LIMIT 1");
        let ms = |v: i64| DateTime::from_timestamp_millis(v).unwrap_or(DateTime::<Utc>::MAX_UTC);
        Ok(self
            .conn
            .query_row(&sql, [], |r| {
                Ok(RunRecord {
                    host: r.get(0)?,
                    started_at: ms(r.get(1)?),
                    ended_at: ms(r.get(2)?),
                    exit_code: r.get::<_, i64>(3)?.clamp(0, 255) as u8,
                })
            })
            .optional()?)
    }

    fn unpark_fixed(&mut self, group: &GroupKey, reasons: &[Reason], now: DateTime<Utc>) -> Result<u64> {
        let texts: Rc<Vec<Value>> = Rc::new(reasons.iter().map(|r| Value::Text(r.to_string())).collect());
        let tx = write(&mut self.conn)?;
        let Some(group) = group_id(&tx, &mut self.groups, group)? else { return Ok(0) };
        let n = tx.execute(
            "UPDATE items SET state = 'queued', next_attempt_at = ?3, streak = 0, streak_started_at = NULL,
                 parked_fingerprint = NULL
             WHERE group_id = ?1 AND state = 'parked' AND last_request_id IN (
                 SELECT id FROM requests WHERE class = 'misconfigured' AND reason IN rarray(?2))",
            params![group, texts, ts(now)],
        )?;
        counted(&tx, group, Some(ItemState::Parked), Some(ItemState::Queued), n as u64)?;
        tx.commit()?;
        Ok(n as u64)
    }

    fn parked(&mut self) -> Result<Vec<ParkedGroup>> {
        // Per group and last answer: how many, since when, the latest answer
        // (then its URL and message), and the reminder kept under its reason.
        let mut stmt = self.conn.prepare(
            "SELECT g.property, g.engine, g.target, r.class, r.reason, count(*), min(r.at), max(r.id),
                    min(i.url), m.reminded_at, g.channel
             FROM items i JOIN groups g ON g.id = i.group_id
             LEFT JOIN requests r ON r.id = i.last_request_id
             LEFT JOIN reminders m ON m.group_id = i.group_id AND m.reason = coalesce(r.reason, 'parked')
             WHERE i.state = 'parked'
             GROUP BY i.group_id, r.class, r.reason
             ORDER BY g.property, g.engine, g.target, r.reason",
        )?;
        let mut rows = stmt.query([])?;
        let mut parked = Vec::new();
        while let Some(r) = rows.next()? {
            let class: Option<String> = r.get(3)?;
            let reason: Option<String> = r.get(4)?;
            parked.push((
                ParkedGroup {
                    group: stored_group(r.get(0)?, &r.get::<_, String>(1)?, r.get(2)?, &r.get::<_, String>(10)?)?,
                    reason: stored_last_reason(class.as_deref(), reason.as_deref())?,
                    count: r.get::<_, i64>(5)? as u64,
                    since: opt_ts(r.get(6)?),
                    url: r.get(8)?,
                    message: None,
                    reminded_at: opt_ts(r.get(9)?),
                },
                r.get::<_, Option<i64>>(7)?,
            ));
        }
        drop(rows);
        drop(stmt);
        let mut out = Vec::with_capacity(parked.len());
        for (mut p, request) in parked {
            if let Some(request) = request {
                let (message, url): (String, Option<String>) = self.conn.query_row(
                    "SELECT r.message, i.url FROM requests r LEFT JOIN items i ON i.id = r.first_item WHERE r.id = ?1",
                    [request],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?;
                p.message = Some(message);
                p.url = url.unwrap_or(p.url);
            }
            out.push(p);
        }
        Ok(out)
    }

    fn record_reminders(&mut self, reminded: &[(GroupKey, String)], at: DateTime<Utc>) -> Result<()> {
        let tx = write(&mut self.conn)?;
        for (group, reason) in reminded {
            let Some(group) = group_id(&tx, &mut self.groups, group)? else { continue };
            tx.execute(
                "INSERT INTO reminders (group_id, reason, reminded_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (group_id, reason) DO UPDATE SET reminded_at = excluded.reminded_at",
                params![group, reason, ts(at)],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    fn source_documents(&mut self) -> Result<Vec<SourceDocument>> {
        source_documents(&self.conn)
    }

    fn record_sitemap_read(&mut self, group: &GroupKey, read: &SitemapRead, at: DateTime<Utc>) -> Result<()> {
        let tx = write(&mut self.conn)?;
        let mut created = Vec::new();
        let id = group_id_or_create(&tx, &mut self.groups, &mut created, group)?;
        let before: Option<(Option<i64>, Option<String>, Option<i64>)> = tx
            .query_row(
                "SELECT errors_since, failure_reason, failure_since FROM sitemap_reports WHERE group_id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let (errors_since, failed, failure_since) = before.unwrap_or_default();
        let before = policy::SitemapMarks { errors_since: opt_ts(errors_since), failure_since: opt_ts(failure_since) };
        let marks = policy::sitemap_marks(&before, failed.as_deref(), read, at);
        match read {
            SitemapRead::Read(r) => {
                tx.execute(
                    "INSERT INTO sitemap_reports (group_id, read_at, read_ok_at, listed, submitted, downloaded,
                         pending, errors, warnings, urls, status, errors_since)
                     VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                     ON CONFLICT (group_id) DO UPDATE SET read_at = excluded.read_at,
                         read_ok_at = excluded.read_ok_at, listed = excluded.listed,
                         submitted = excluded.submitted, downloaded = excluded.downloaded,
                         pending = excluded.pending, errors = excluded.errors, warnings = excluded.warnings,
                         urls = excluded.urls, status = excluded.status, errors_since = excluded.errors_since,
                         failure_class = NULL, failure_reason = NULL, failure_message = NULL,
                         failure_hint = NULL, failure_status = NULL, failure_since = NULL",
                    params![
                        id,
                        ts(at),
                        r.listed,
                        r.submitted.map(ts),
                        r.downloaded.map(ts),
                        r.pending,
                        r.errors.min(i64::MAX as u64) as i64,
                        r.warnings.min(i64::MAX as u64) as i64,
                        r.urls.map(|n| n.min(i64::MAX as u64) as i64),
                        r.status,
                        marks.errors_since.map(ts)
                    ],
                )?;
            }
            SitemapRead::Failed(f) => {
                tx.execute(
                    "INSERT INTO sitemap_reports (group_id, read_at, failure_class, failure_reason, failure_message,
                         failure_hint, failure_status, failure_since)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                     ON CONFLICT (group_id) DO UPDATE SET read_at = excluded.read_at,
                         failure_class = excluded.failure_class, failure_reason = excluded.failure_reason,
                         failure_message = excluded.failure_message, failure_hint = excluded.failure_hint,
                         failure_status = excluded.failure_status, failure_since = excluded.failure_since",
                    params![
                        id,
                        ts(at),
                        f.class.as_str(),
                        f.reason.to_string(),
                        f.message,
                        f.hint,
                        f.http_status,
                        marks.failure_since.map(ts)
                    ],
                )?;
            }
        }
        tx.commit()?;
        self.groups.extend(created);
        Ok(())
    }

    fn sitemap_states(&mut self) -> Result<Vec<SitemapState>> {
        let mut reminded: HashMap<i64, Vec<(String, DateTime<Utc>)>> = HashMap::new();
        {
            let mut stmt = self.conn.prepare(
                "SELECT m.group_id, m.reason, m.reminded_at FROM reminders m JOIN groups g ON g.id = m.group_id
                 WHERE g.channel = 'sitemaps' ORDER BY m.reason",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                reminded.entry(r.get(0)?).or_default().push((r.get(1)?, from_ts(r.get(2)?)));
            }
        }
        let mut stmt = self.conn.prepare(
            "SELECT g.id, g.property, g.engine, g.target, g.channel, i.state, i.accepted_at, s.read_at, s.read_ok_at,
                 s.listed, s.submitted, s.downloaded, s.pending, s.errors, s.warnings, s.urls, s.status,
                 s.errors_since, s.failure_class, s.failure_reason, s.failure_message, s.failure_hint,
                 s.failure_status, s.failure_since
             FROM groups g JOIN items i ON i.group_id = g.id LEFT JOIN sitemap_reports s ON s.group_id = g.id
             WHERE g.channel = 'sitemaps'
             ORDER BY g.property, g.engine, g.target, i.id",
        )?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            let row = StoredSitemap {
                group: stored_group(r.get(1)?, &r.get::<_, String>(2)?, r.get(3)?, &r.get::<_, String>(4)?)?,
                item: r.get(5)?,
                submitted_at: opt_ts(r.get(6)?),
                read_at: opt_ts(r.get(7)?),
                read_ok_at: opt_ts(r.get(8)?),
                listed: r.get(9)?,
                submitted: opt_ts(r.get(10)?),
                downloaded: opt_ts(r.get(11)?),
                pending: r.get(12)?,
                errors: r.get(13)?,
                warnings: r.get(14)?,
                urls: r.get(15)?,
                status: r.get(16)?,
                errors_since: opt_ts(r.get(17)?),
                failure_class: r.get(18)?,
                failure_reason: r.get(19)?,
                failure_message: r.get(20)?,
                failure_hint: r.get(21)?,
                failure_status: r.get(22)?,
                failure_since: opt_ts(r.get(23)?),
            };
            out.push(row.state(reminded.remove(&id).unwrap_or_default())?);
        }
        Ok(out)
    }

    fn record_source_documents(&mut self, documents: &[SourceDocument]) -> Result<Vec<SourceDocument>> {
        let tx = write(&mut self.conn)?;
        let urls: Vec<&str> = documents.iter().map(|d| d.url.as_str()).collect();
        let stored = stored_changes(&tx, &urls)?;
        let documents = policy::kept_changes(documents, |url| stored.get(url).map(|(d, at)| (d.as_str(), *at)));
        store_source_documents(&tx, &documents, false)?;
        tx.commit()?;
        Ok(documents)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn group(property: &str, engine: EngineKind) -> GroupKey {
        GroupKey::urls(property, engine, format!("https://{property}/endpoint"))
    }

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

    /// A ledger of schema 4 (a group, a parked item, a sitemap read for
    /// sources) gets schema 5 on open: its groups are URL groups, its
    /// sitemap read is taken to have changed when it was read, and it has
    /// no sitemap report yet.
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
                [ts(t("2026-12-01T08:00:00Z"))],
            )
            .unwrap();
            tx.commit().unwrap();
        }
        let mut ledger = SqliteLedger::open(&path).unwrap();
        assert_eq!(SqliteLedger::schema_version(&ledger).unwrap(), 5);
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

    /// A reason read back that this indexq does not know as one of its
    /// request's class is an error naming it, never a default.
    #[test]
    fn an_unknown_reason_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
        super::super::story::story(&mut ledger);
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

    fn new_items(group: &GroupKey, range: std::ops::Range<usize>) -> Vec<NewItem> {
        range
            .map(|i| NewItem {
                url: format!("https://{}/{i}", group.property),
                group: group.clone(),
                action: Action::Updated,
                lastmod: None,
            })
            .collect()
    }

    /// `queue_counts` (kept counts) equals a count of every item, at `now`.
    fn assert_counts(ledger: &mut SqliteLedger, now: DateTime<Utc>) {
        let groups: Vec<(i64, GroupKey)> = ledger
            .conn
            .prepare("SELECT id, property, engine, target, channel FROM groups")
            .unwrap()
            .query_map([], |r| {
                let engine: String = r.get(2)?;
                let channel: String = r.get(4)?;
                let key = GroupKey {
                    property: r.get(1)?,
                    engine: engine.parse().unwrap(),
                    target: r.get(3)?,
                    channel: channel.parse().unwrap(),
                };
                Ok((r.get(0)?, key))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        for (id, key) in groups {
            let mut expected = QueueCounts::default();
            let mut stmt = ledger
                .conn
                .prepare("SELECT state, next_attempt_at <= ?2, COUNT(*) FROM items WHERE group_id = ?1 GROUP BY 1, 2")
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
            reason: super::super::story::some_reason(class),
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
        };
        ledger.finish(&done).unwrap();
    }

    #[test]
    fn kept_counts_follow_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
        super::super::story::story(&mut ledger);
        assert_counts(&mut ledger, t("2026-12-10T10:00:00Z"));

        let now = t("2026-12-11T09:00:00Z");
        let me = Owner::current();
        let (a, b) = (group("a.example", EngineKind::IndexNow), group("b.example", EngineKind::Bing));
        let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
        // One batch, two groups interleaved, a URL twice.
        let mut batch: Vec<NewItem> =
            new_items(&a, 0..6).into_iter().zip(new_items(&b, 0..6)).flat_map(|(x, y)| [x, y]).collect();
        batch.push(new_items(&a, 0..1).remove(0));
        let admitted = ledger.admit(&batch, now, &rule).unwrap();
        assert_eq!(admitted.iter().filter(|a| matches!(a, Admission::Queued { fresh: true, .. })).count(), 12);
        assert!(matches!(admitted[12], Admission::AlreadyQueued { .. }));
        assert_counts(&mut ledger, now);
        let due = ledger.due_groups(now).unwrap();
        assert_eq!(due.iter().filter(|g| **g == a || **g == b).count(), 2, "{due:?}");

        // Parked, retried later, accepted.
        let claim = ledger
            .claim(
                &a,
                &ClaimSpec { windows: &[], max_items: 3, pace: None, now: Now::pinned(now) },
                &me,
                &mut |_, _, _| {},
            )
            .unwrap();
        assert_counts(&mut ledger, now);
        let park = NextStep::Park { fingerprint: "one".into() };
        let records = vec![
            record(&claim.items[0], now, Class::Misconfigured, park.clone()),
            record(&claim.items[1], now, Class::Transient, NextStep::RetryAt(now + TimeDelta::hours(1))),
            record(&claim.items[2], now, Class::Accepted, NextStep::Accepted),
        ];
        finish(&mut ledger, &claim, records);
        assert_counts(&mut ledger, now);
        assert_counts(&mut ledger, now + TimeDelta::hours(2));
        let last = ledger.last_rejection(&a).unwrap().unwrap();
        assert_eq!((last.class, last.group.clone()), (Class::Transient, a.clone()));
        assert_eq!(ledger.unpark_changed(&a, "one", now).unwrap(), 0);
        assert_eq!(ledger.unpark_changed(&a, "two", now).unwrap(), 1);
        assert_counts(&mut ledger, now);

        // A dead owner's claim, reconciled.
        let dead = Owner { host: me.host.clone(), pid: u32::MAX - 1, started: 1 };
        let claim = ledger
            .claim(
                &b,
                &ClaimSpec { windows: &[], max_items: 2, pace: None, now: Now::pinned(now) },
                &dead,
                &mut |_, _, _| {},
            )
            .unwrap();
        assert_eq!(claim.items.len(), 2);
        assert_counts(&mut ledger, now);
        assert_eq!(ledger.reconcile(now, &me).unwrap().items, 2);
        assert_counts(&mut ledger, now);

        // A budget and a pace: 2 go, 2 wait for their slot, the rest for the budget.
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
                &b,
                &ClaimSpec { windows: &vec![day.clone()], max_items: 10, pace: Some(&pace), now: Now::pinned(now) },
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
            .chain(claim.paced.iter().map(|(id, _, at)| (*id, Some(from_ts(ts_ceil(*at))))))
            .collect();
        assert_eq!(next, expected);
        assert_counts(&mut ledger, now);

        // Queue commands.
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
        assert!(ledger.items(&only_b, now).unwrap().iter().all(|r| r.group == b));
        assert_eq!(ledger.items(&ItemFilter { limit: Some(3), ..all.clone() }, now).unwrap().len(), 3);
        let retried = ledger.retry(&ItemFilter { states: vec![StateFilter::Waiting], ..only_b.clone() }, now).unwrap();
        assert_eq!(retried, 4);
        assert_counts(&mut ledger, now);
        let dropped =
            ledger.drop_items(&ItemFilter { property: Some("a.example".into()), ..all.clone() }, now).unwrap();
        assert_eq!(dropped, 6);
        assert_counts(&mut ledger, now);
        let last = ledger.last_rejection(&a).unwrap().expect("a drop removes items, not their attempts");
        assert!(last.dropped && !last.url.is_empty(), "{last:?}");
        let unknown = group("c.example", EngineKind::Google);
        assert_eq!(ledger.queue_counts(&unknown, now).unwrap(), QueueCounts::default());
        assert_eq!(ledger.next_due(&unknown).unwrap(), None);
        assert!(ledger
            .claim(
                &unknown,
                &ClaimSpec { windows: &[], max_items: 10, pace: None, now: Now::pinned(now) },
                &me,
                &mut |_, _, _| {}
            )
            .unwrap()
            .items
            .is_empty());
    }
}
