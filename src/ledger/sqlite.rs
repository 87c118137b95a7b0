//! The SQLite ledger: one file (WAL, busy timeout, mode 0600), schema
//! versioned with `user_version`. Writes that decide anything (claim,
//! finish, reconcile) run in `BEGIN IMMEDIATE` transactions, so two
//! processes sharing the file serialize on them and can never both take the
//! last unit of a budget.

use super::plan::{cap_body, lease_until, ledger_now, ts_ceil, ClaimPlan, PaceState};
use super::*;
use rusqlite::{params, Connection, OptionalExtension, Row, Transaction, TransactionBehavior};
use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = 2;

const MIGRATIONS: &[&str] = &[
    r#"
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
"#,
    r#"
-- Version 2: each `submit` run that ended (the metrics of the last run, the
-- report). Times in milliseconds.
CREATE TABLE submit_runs (
    id         INTEGER PRIMARY KEY,
    host       TEXT NOT NULL,
    started_ms INTEGER NOT NULL,
    ended_ms   INTEGER NOT NULL,
    exit_code  INTEGER NOT NULL
);
"#,
];

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

impl SqliteLedger {
    /// Opens (creating if needed) the ledger file and brings its schema up to date.
    pub fn open(path: &Path) -> Result<SqliteLedger> {
        let open_err = |message: String, hint: Option<String>| LedgerError::Open {
            path: path.display().to_string(),
            message,
            hint,
            newer: false,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| open_err(format!("cannot create {}: {e}", dir.display()), None))?;
        }
        let conn = Connection::open(path).map_err(|e| open_err(e.to_string(), None))?;
        // New, or made by someone else (an empty file, a copy): private.
        restrict_mode(path).map_err(|e| open_err(format!("cannot set mode 0600: {e}"), None))?;
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
                e.to_string(),
                Some("if the file is damaged, move it aside: indexq starts a new ledger (queued URLs in it would need resubmitting)".into()),
            ),
        })?;
        Ok(ledger)
    }

    /// A private in-memory copy of the ledger at `path` (empty if there is
    /// none), for `--dry-run`: planning runs the same code, and nothing it
    /// writes reaches the file.
    pub fn open_snapshot(path: &Path) -> Result<SqliteLedger> {
        // An empty name: a private temporary database on disk, so a large
        // ledger is not copied into memory.
        let mut conn = Connection::open("")?;
        if path.exists() {
            conn.restore(rusqlite::MAIN_DB, path, None::<fn(rusqlite::backup::Progress)>).map_err(|e| {
                LedgerError::Open { path: path.display().to_string(), message: e.to_string(), hint: None, newer: false }
            })?;
        }
        let mut ledger = SqliteLedger { conn, groups: HashMap::new(), lease: owner::LEASE };
        ledger.configure(false)?;
        Ok(ledger)
    }

    fn configure(&mut self, on_disk: bool) -> Result<()> {
        self.conn.busy_timeout(std::time::Duration::from_secs(60))?;
        if on_disk {
            self.conn.pragma_update(None, "journal_mode", "WAL")?;
            self.conn.pragma_update(None, "synchronous", "FULL")?;
        } else {
            // A dry run's throwaway copy: nothing in it needs to survive a crash.
            self.conn.pragma_update(None, "journal_mode", "OFF")?;
            self.conn.pragma_update(None, "synchronous", "OFF")?;
        }
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        self.migrate()
    }

    fn migrate(&mut self) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(LedgerError::Newer { found: version, known: SCHEMA_VERSION });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
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
        .prepare_cached("SELECT id FROM groups WHERE property = ?1 AND engine = ?2 AND target = ?3")?
        .query_row(params![key.property, key.engine.as_str(), key.target], |r| r.get(0))
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
    tx.prepare_cached("INSERT INTO groups (property, engine, target) VALUES (?1, ?2, ?3)")?.execute(params![
        key.property,
        key.engine.as_str(),
        key.target
    ])?;
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

/// The columns `item_row` reads, from `items i JOIN groups g`.
const ITEM_COLUMNS: &str = "i.id, i.url, g.property, g.engine, g.target, i.state, i.next_attempt_at, i.attempts, i.last_class, i.last_reason, i.last_message, i.last_http_status, i.accepted_at";

fn item_row(r: &Row<'_>) -> rusqlite::Result<ItemRow> {
    let engine: String = r.get(3)?;
    let state: String = r.get(5)?;
    let last_class: Option<String> = r.get(8)?;
    Ok(ItemRow {
        id: r.get(0)?,
        url: r.get(1)?,
        group: GroupKey::stored(r.get(2)?, &engine, r.get(4)?),
        state: ItemState::parse(&state),
        next_attempt_at: opt_ts(r.get(6)?),
        attempts: r.get(7)?,
        last_class: last_class.and_then(|c| Class::from_str(&c).ok()),
        last_reason: r.get(9)?,
        last_message: r.get(10)?,
        last_http_status: r.get(11)?,
        accepted_at: opt_ts(r.get(12)?),
    })
}

/// The columns `attempt_row` reads, from `attempts a`, `items i`, `groups g`
/// and `responses r`.
const ATTEMPT_COLUMNS: &str =
    "a.at, i.url, g.property, g.engine, g.target, a.class, a.reason, a.message, r.http_status, r.body, a.retry_at";

fn attempt_row(r: &Row<'_>) -> rusqlite::Result<AttemptRow> {
    let engine: String = r.get(3)?;
    let class: String = r.get(5)?;
    Ok(AttemptRow {
        at: from_ts(r.get(0)?),
        url: r.get(1)?,
        group: GroupKey::stored(r.get(2)?, &engine, r.get(4)?),
        class: Class::from_str(&class).unwrap_or(Class::Transient),
        reason: r.get(6)?,
        message: r.get(7)?,
        http_status: r.get(8)?,
        body: r.get(9)?,
        retry_at: opt_ts(r.get(10)?),
    })
}

/// A WHERE clause and its parameters for an `ItemFilter` at `now`, over
/// `items` alone or (`joined`) over `groups g CROSS JOIN items`.
fn filter_sql(filter: &ItemFilter, now: DateTime<Utc>, joined: bool) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
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
        clauses.push(format!("url = ?{}", values.len()));
    }
    (clauses.join(" AND "), values)
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

impl Ledger for SqliteLedger {
    fn stale_reservations(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<u64> {
        Ok(stale_reservations(&self.conn, now, me)?.len() as u64)
    }

    fn reconcile(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<Reconciled> {
        let tx = self.write()?;
        let stale = stale_reservations(&tx, now, me)?;
        let mut done = Reconciled::default();
        for id in stale {
            let items: Vec<i64> = {
                let mut stmt = tx.prepare("SELECT id FROM items WHERE reservation_id = ?1 AND state = 'in_flight'")?;
                let ids = stmt.query_map([id], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
                ids
            };
            for item in &items {
                tx.execute(
                    "INSERT INTO attempts (item_id, at, class, reason, message, retry_at)
                     VALUES (?1, ?2, 'transient', 'interrupted', ?3, ?2)",
                    params![item, ts(now), INTERRUPTED_ATTEMPT],
                )?;
            }
            tx.execute(
                "UPDATE items SET state = 'queued', next_attempt_at = ?2, reservation_id = NULL,
                     attempts = attempts + 1, last_class = 'transient', last_reason = 'interrupted',
                     last_message = ?3, last_http_status = NULL
                 WHERE reservation_id = ?1 AND state = 'in_flight'",
                params![id, ts(now), INTERRUPTED_ITEM],
            )?;
            tx.execute("DELETE FROM reservations WHERE id = ?1", [id])?;
            done.reservations += 1;
            done.items += items.len() as u64;
        }
        tx.commit()?;
        Ok(done)
    }

    fn admit(&mut self, batch: &[NewItem], now: DateTime<Utc>, rule: &AdmitRule) -> Result<Vec<Admission>> {
        let tx = write(&mut self.conn)?;
        let mut out = Vec::with_capacity(batch.len());
        let mut created = Vec::new();
        {
            // A new URL costs one statement; only a URL already there is read.
            let mut insert = tx.prepare_cached(
                "INSERT INTO items (url, group_id, state, action, lastmod, next_attempt_at, enqueued_at)
                 VALUES (?1, ?2, 'queued', ?4, ?5, ?3, ?3) ON CONFLICT DO NOTHING",
            )?;
            let mut find = tx.prepare_cached(
                "SELECT id, state, accepted_at, next_attempt_at, action FROM items WHERE url = ?1 AND group_id = ?2",
            )?;
            let mut requeue = tx.prepare_cached(
                "UPDATE items SET state = 'queued', action = ?3, next_attempt_at = ?2, enqueued_at = ?2, streak = 0,
                     streak_started_at = NULL WHERE id = ?1",
            )?;
            let mut update = tx.prepare_cached(
                "UPDATE items SET action = CASE WHEN state = 'queued' THEN ?2 ELSE action END,
                     lastmod = COALESCE(?3, lastmod) WHERE id = ?1",
            )?;
            // Items inserted, by group (to be counted in `groups`). Batches
            // are mostly one group after another: the last one is kept.
            let mut inserted: Vec<(i64, i64)> = Vec::new();
            let mut last: Option<(&GroupKey, usize)> = None;
            for item in batch {
                let g = &item.group;
                let slot = match last {
                    Some((key, slot)) if key == g => slot,
                    _ => {
                        let id = group_id_or_create(&tx, &mut self.groups, &mut created, g)?;
                        let slot = inserted.iter().position(|(group, _)| *group == id).unwrap_or_else(|| {
                            inserted.push((id, 0));
                            inserted.len() - 1
                        });
                        last = Some((g, slot));
                        slot
                    }
                };
                let group = inserted[slot].0;
                let action = item.action.as_str();
                let lastmod = item.lastmod.map(ts);
                if insert.execute(params![item.url, group, ts(now), action, lastmod])? > 0 {
                    inserted[slot].1 += 1;
                    out.push(Admission::Queued { id: tx.last_insert_rowid(), fresh: true });
                    continue;
                }
                let (id, state, accepted_at, next, old_action) = find.query_row(params![item.url, group], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                        r.get::<_, Option<i64>>(3)?,
                        r.get::<_, String>(4)?,
                    ))
                })?;
                update.execute(params![id, action, lastmod])?;
                let admission = match ItemState::parse(&state) {
                    ItemState::Accepted => {
                        let accepted_at = opt_ts(accepted_at).unwrap_or(now);
                        let changed = item.lastmod.is_some_and(|l| l > accepted_at);
                        // A URL now deleted (or back) is news, whatever the window.
                        let news = old_action != action;
                        let again = if rule.changed { changed } else { now - accepted_at >= rule.dedupe };
                        if rule.force || news || again {
                            requeue.execute(params![id, ts(now), action])?;
                            Admission::Queued { id, fresh: false }
                        } else {
                            Admission::Skipped { id, accepted_at, unchanged: rule.changed }
                        }
                    }
                    ItemState::Queued => Admission::AlreadyQueued { id, next_attempt_at: opt_ts(next) },
                    ItemState::Parked => Admission::Parked { id },
                    ItemState::InFlight => Admission::InFlight { id },
                };
                out.push(admission);
            }
            let mut count = tx.prepare_cached("UPDATE groups SET queued = queued + ?2 WHERE id = ?1")?;
            for (group, n) in inserted.into_iter().filter(|(_, n)| *n > 0) {
                count.execute(params![group, n])?;
            }
        }
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
        tx.commit()?;
        Ok(n as u64)
    }

    fn stored_groups(&mut self) -> Result<Vec<GroupKey>> {
        let mut stmt =
            self.conn.prepare("SELECT property, engine, target FROM groups ORDER BY property, engine, target")?;
        let rows =
            stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)))?;
        let mut groups = Vec::new();
        for row in rows {
            let (property, engine, target) = row?;
            groups.push(GroupKey::stored(property, &engine, target));
        }
        Ok(groups)
    }

    fn due_groups(&mut self, now: DateTime<Utc>) -> Result<Vec<GroupKey>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT property, engine, target FROM groups g
             WHERE EXISTS (SELECT 1 FROM items WHERE group_id = g.id AND state = 'queued' AND next_attempt_at <= ?1)
             ORDER BY property, engine, target",
        )?;
        let rows = stmt
            .query_map([ts(now)], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)))?;
        let mut groups = Vec::new();
        for row in rows {
            let (property, engine, target) = row?;
            if let Ok(engine) = EngineKind::from_str(&engine) {
                groups.push(GroupKey { property, engine, target });
            }
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
        // A group never seen has no items: the claim goes on with none.
        let group = group_id(&tx, &mut self.groups, group)?.unwrap_or(-1);
        let usages = rules.iter().map(|r| usage_in(&tx, r)).collect::<Result<Vec<_>>>()?;
        let due_count: i64 = tx.query_row(
            "SELECT COUNT(*) FROM items WHERE group_id = ?1 AND state = 'queued' AND next_attempt_at <= ?2",
            params![group, ts(now)],
            |r| r.get(0),
        )?;
        let pacing = match pace {
            Some(p) => Some(load_pace(&tx, p, now, rules)?),
            None => None,
        };
        let ClaimPlan { take, paced_until, retry_at } =
            ClaimPlan::new(rules, &usages, due_count.max(0) as usize, max_items, pacing.as_ref(), now);
        let mut claim = Claim { now, windows: rules.to_vec(), ..Claim::default() };
        let mut taken = Vec::with_capacity(take);
        // Paced items moved to their slot, applied after the scan (moving
        // them while scanning in next_attempt_at order could meet them twice).
        let mut moves = Vec::new();
        // The last item scanned that the budget has room for: every due item
        // after it (in scan order) is deferred, in one statement.
        let mut cut: Option<(Option<i64>, i64)> = None;
        {
            let mut stmt = tx.prepare_cached(
                "SELECT id, url, attempts, last_class, streak, streak_started_at, action, next_attempt_at FROM items
                 WHERE group_id = ?1 AND state = 'queued' AND next_attempt_at <= ?2
                 ORDER BY next_attempt_at, id",
            )?;
            let mut rows = stmt.query(params![group, ts(now)])?;
            let mut defer = tx.prepare_cached("UPDATE items SET next_attempt_at = ?2 WHERE id = ?1")?;
            let mut position = 0usize;
            while let Some(r) = rows.next()? {
                if position >= paced_until && retry_at.is_none() {
                    break;
                }
                let id: i64 = r.get(0)?;
                let url: String = r.get(1)?;
                if position < take {
                    let class: Option<String> = r.get(3)?;
                    let action: String = r.get(6)?;
                    taken.push(ClaimedItem {
                        id,
                        url,
                        action: Action::parse(&action),
                        attempts: r.get(2)?,
                        last_class: class.and_then(|c| Class::from_str(&c).ok()),
                        streak: r.get(4)?,
                        streak_started_at: opt_ts(r.get(5)?),
                    });
                } else if position < paced_until {
                    if let Some(p) = &pacing {
                        // Counted from before this claim's own slots.
                        let at = p.estimate(position);
                        moves.push((id, ts_ceil(at)));
                        claim.paced.push((id, url, at));
                    }
                } else if let Some(t) = retry_at {
                    deferred(id, &url, t);
                    claim.deferred += 1;
                }
                if position + 1 == paced_until {
                    cut = Some((r.get(7)?, id));
                }
                position += 1;
            }
            drop(rows);
            if let (Some(t), true) = (retry_at, claim.deferred > 0) {
                // Before the paced moves, so that the rows after the cut are
                // still those the scan saw.
                let moved = match cut {
                    None => tx
                        .prepare_cached(
                            "UPDATE items SET next_attempt_at = ?3
                             WHERE group_id = ?1 AND state = 'queued' AND next_attempt_at <= ?2",
                        )?
                        .execute(params![group, ts(now), ts(t)])?,
                    Some((at, id)) => tx
                        .prepare_cached(
                            "UPDATE items SET next_attempt_at = ?3
                             WHERE group_id = ?1 AND state = 'queued' AND next_attempt_at <= ?2
                               AND (next_attempt_at, id) > (?4, ?5)",
                        )?
                        .execute(params![group, ts(now), ts(t), at, id])?,
                };
                debug_assert_eq!(moved as u64, claim.deferred);
            }
            for (id, at) in moves {
                defer.execute(params![id, at])?;
            }
        }
        if let (Some(mut p), Some(pace)) = (pacing, pace) {
            claim.slots = (0..take).map(|_| p.next_slot()).collect();
            store_pace(&tx, &pace.key, &p)?;
        }
        claim.retry_at = retry_at;
        let due = taken;

        if take > 0 {
            tx.execute(
                "INSERT INTO reservations (host, pid, started, created_at, lease_until, units) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    me.host,
                    me.pid,
                    me.started as i64,
                    ts(now),
                    ts(lease_until(now, &claim.slots, self.lease)),
                    take as i64
                ],
            )?;
            let reservation = tx.last_insert_rowid();
            for rule in rules {
                add_usage(&tx, rule, take as u64)?;
                tx.execute(
                    "INSERT INTO reservation_rules (reservation_id, rule, window_key, units) VALUES (?1, ?2, ?3, ?4)",
                    params![reservation, rule.rule, rule.window, take as i64],
                )?;
            }
            {
                let mut mark =
                    tx.prepare_cached("UPDATE items SET state = 'in_flight', reservation_id = ?2 WHERE id = ?1")?;
                for item in &due[..take] {
                    mark.execute(params![item.id, reservation])?;
                }
            }
            claim.reservation = Some(reservation);
            claim.items = due.into_iter().take(take).collect();
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

    fn finish(&mut self, done: &Finish) -> Result<()> {
        let Finish { reservation, responses, records, blocks, refund, windows } = done;
        let tx = self.write()?;
        {
            let mut response_ids = Vec::with_capacity(responses.len());
            let mut insert_response = tx.prepare_cached("INSERT INTO responses (http_status, body) VALUES (?1, ?2)")?;
            for r in responses {
                insert_response.execute(params![r.http_status, r.body.as_deref().map(cap_body)])?;
                response_ids.push(tx.last_insert_rowid());
            }
            let mut insert_attempt = tx.prepare_cached(
                "INSERT INTO attempts (item_id, at, class, reason, message, response_id, retry_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            let mut update = tx.prepare_cached(
                "UPDATE items SET
                     state = ?2, next_attempt_at = ?3, reservation_id = NULL,
                     attempts = attempts + 1,
                     streak = CASE WHEN last_class IS ?4 THEN streak + 1 ELSE 1 END,
                     streak_started_at = CASE WHEN last_class IS ?4 AND streak_started_at IS NOT NULL THEN streak_started_at ELSE ?5 END,
                     last_class = ?4, last_reason = ?6, last_message = ?7, last_http_status = ?8,
                     accepted_at = CASE WHEN ?2 = 'accepted' THEN ?5 ELSE accepted_at END,
                     parked_fingerprint = ?9
                 WHERE id = ?1",
            )?;
            for rec in records {
                let response = responses.get(rec.response);
                let response_id = response_ids.get(rec.response).copied();
                let (state, next, fingerprint) = match &rec.next {
                    NextStep::Accepted => ("accepted", None, None),
                    NextStep::RetryAt(t) => ("queued", Some(ts(*t)), None),
                    NextStep::Park { fingerprint } => ("parked", None, Some(fingerprint.as_str())),
                };
                insert_attempt.execute(params![
                    rec.item_id,
                    ts(rec.at),
                    rec.class.as_str(),
                    rec.reason,
                    rec.message,
                    response_id,
                    next
                ])?;
                update.execute(params![
                    rec.item_id,
                    state,
                    next,
                    rec.class.as_str(),
                    ts(rec.at),
                    rec.reason,
                    rec.message,
                    response.and_then(|r| r.http_status),
                    fingerprint
                ])?;
            }
        }
        if *refund > 0 {
            for w in windows {
                tx.execute(
                    "UPDATE budget_usage SET used = MAX(used - ?3, 0) WHERE rule = ?1 AND window_key = ?2",
                    params![w.rule, w.window, *refund as i64],
                )?;
            }
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
        let in_flight: i64 = tx.query_row(
            "SELECT COALESCE(SUM(units), 0) FROM reservation_rules WHERE rule = ?1 AND window_key = ?2",
            params![rule.rule, rule.window],
            |r| r.get(0),
        )?;
        add_usage(&tx, rule, 0)?;
        let used = usage_in(&tx, rule)?.used;
        let limit = (used + remaining).saturating_sub(in_flight.max(0) as u64);
        tx.execute(
            "UPDATE budget_usage SET limit_value = ?3, reported_at = ?4, reported_remaining = ?5
             WHERE rule = ?1 AND window_key = ?2",
            params![rule.rule, rule.window, limit as i64, ts(now), remaining as i64],
        )?;
        tx.commit()?;
        Ok(Report { at: now, remaining, limit })
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
        // Newest rejections first, from their own partial index (CROSS JOIN
        // keeps that order): accepted attempts, however many, are not read.
        let sql = format!(
            "SELECT {ATTEMPT_COLUMNS} FROM attempts a CROSS JOIN items i ON i.id = a.item_id
                 JOIN groups g ON g.id = i.group_id LEFT JOIN responses r ON r.id = a.response_id
             WHERE i.group_id = ?1 AND a.class != 'accepted'
             ORDER BY a.at DESC, a.id DESC LIMIT 1"
        );
        Ok(self.conn.prepare_cached(&sql)?.query_row([group], attempt_row).optional()?)
    }

    fn items(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<Vec<ItemRow>> {
        let (clause, values) = filter_sql(filter, now, true);
        let limit = filter.limit.map_or(String::new(), |n| format!(" LIMIT {n}"));
        // Group by group (CROSS JOIN: the groups, few, in their index order
        // outside), each group's items in the order of its index: no sort.
        let sql = format!(
            "SELECT {ITEM_COLUMNS} FROM groups g CROSS JOIN items i ON i.group_id = g.id WHERE {clause}
             ORDER BY g.property, g.engine, g.target, i.state, i.next_attempt_at, i.id{limit}"
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(values), item_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn items_by_id(&mut self, ids: &[i64]) -> Result<Vec<ItemRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {ITEM_COLUMNS} FROM items i JOIN groups g ON g.id = i.group_id WHERE i.id = ?1"
        ))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(row) = stmt.query_row([id], item_row).optional()? {
                out.push(row);
            }
        }
        Ok(out)
    }

    fn retry(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<u64> {
        let mut filter = filter.clone();
        filter.states.retain(|s| matches!(s, StateFilter::Parked | StateFilter::Waiting | StateFilter::Due));
        if filter.states.is_empty() {
            filter.states = vec![StateFilter::Parked, StateFilter::Waiting];
        }
        let (clause, mut values) = filter_sql(&filter, now, false);
        values.push(rusqlite::types::Value::Integer(ts(now)));
        let n = values.len();
        let tx = self.write()?;
        let changed = tx.execute(
            &format!(
                "UPDATE items SET state = 'queued', next_attempt_at = ?{n}, streak = 0, streak_started_at = NULL,
                     parked_fingerprint = NULL WHERE {clause}"
            ),
            rusqlite::params_from_iter(values),
        )?;
        tx.commit()?;
        Ok(changed as u64)
    }

    fn drop_items(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<u64> {
        let mut filter = filter.clone();
        filter.states.retain(|s| *s != StateFilter::InFlight);
        if filter.states.is_empty() {
            filter.states = vec![StateFilter::Due, StateFilter::Waiting, StateFilter::Parked, StateFilter::Accepted];
        }
        let (clause, values) = filter_sql(&filter, now, false);
        let tx = self.write()?;
        let changed = tx.execute(&format!("DELETE FROM items WHERE {clause}"), rusqlite::params_from_iter(values))?;
        tx.execute(
            "DELETE FROM responses WHERE id NOT IN (SELECT response_id FROM attempts WHERE response_id IS NOT NULL)",
            [],
        )?;
        tx.commit()?;
        Ok(changed as u64)
    }

    fn attempts(&mut self, url: Option<&str>, limit: usize) -> Result<Vec<AttemptRow>> {
        let from = "FROM attempts a JOIN items i ON i.id = a.item_id JOIN groups g ON g.id = i.group_id
             LEFT JOIN responses r ON r.id = a.response_id";
        let (sql, values): (String, Vec<rusqlite::types::Value>) = match url {
            Some(u) => (
                format!("SELECT {ATTEMPT_COLUMNS} {from} WHERE i.url = ?1 ORDER BY a.at DESC, a.id DESC LIMIT {limit}"),
                vec![rusqlite::types::Value::Text(u.to_string())],
            ),
            None => (format!("SELECT {ATTEMPT_COLUMNS} {from} ORDER BY a.at DESC, a.id DESC LIMIT {limit}"), vec![]),
        };
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(values), attempt_row)?;
        let mut out: Vec<AttemptRow> = rows.collect::<rusqlite::Result<_>>()?;
        out.reverse();
        Ok(out)
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
        {
            let mut stmt = tx.prepare(
                "SELECT i.id, i.url, g.property, g.engine, g.target, i.state, i.action, i.lastmod, i.next_attempt_at,
                     i.enqueued_at, i.attempts, i.last_class, i.last_reason, i.last_message, i.last_http_status,
                     i.streak, i.streak_started_at, i.accepted_at, i.parked_fingerprint
                 FROM items i JOIN groups g ON g.id = i.group_id ORDER BY i.id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let engine: String = r.get(3)?;
                let (state, action): (String, String) = (r.get(5)?, r.get(6)?);
                item_index.insert(r.get::<_, i64>(0)?, dump.items.len());
                dump.items.push(DumpItem {
                    url: r.get(1)?,
                    group: GroupKey::stored(r.get(2)?, &engine, r.get(4)?),
                    state: ItemState::parse(&state),
                    action: Action::parse(&action),
                    lastmod: opt_ts(r.get(7)?),
                    next_attempt_at: opt_ts(r.get(8)?),
                    enqueued_at: from_ts(r.get(9)?),
                    attempts: r.get(10)?,
                    last_class: r.get(11)?,
                    last_reason: r.get(12)?,
                    last_message: r.get(13)?,
                    last_http_status: r.get(14)?,
                    streak: r.get(15)?,
                    streak_started_at: opt_ts(r.get(16)?),
                    accepted_at: opt_ts(r.get(17)?),
                    parked_fingerprint: r.get(18)?,
                });
            }
        }
        {
            let mut response_index = HashMap::new();
            let mut responses = tx.prepare("SELECT http_status, body FROM responses WHERE id = ?1")?;
            let mut stmt = tx.prepare(
                "SELECT item_id, at, class, reason, message, response_id, retry_at FROM attempts ORDER BY at, id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let Some(&item) = item_index.get(&r.get::<_, i64>(0)?) else { continue };
                let response = match r.get::<_, Option<i64>>(5)? {
                    None => None,
                    Some(id) => Some(match response_index.get(&id) {
                        Some(&index) => index,
                        None => {
                            let (http_status, body) = responses.query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
                            dump.responses.push(StoredResponse { http_status, body });
                            response_index.insert(id, dump.responses.len() - 1);
                            dump.responses.len() - 1
                        }
                    }),
                };
                dump.attempts.push(DumpAttempt {
                    item,
                    at: from_ts(r.get(1)?),
                    class: r.get(2)?,
                    reason: r.get(3)?,
                    message: r.get(4)?,
                    response,
                    retry_at: opt_ts(r.get(6)?),
                });
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
        }
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
            let mut upsert = tx.prepare(
                "INSERT INTO items (url, group_id, state, action, lastmod, next_attempt_at, enqueued_at, attempts,
                     last_class, last_reason, last_message, last_http_status, streak, streak_started_at, accepted_at,
                     parked_fingerprint)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
                 ON CONFLICT (url, group_id) DO UPDATE SET state = excluded.state, action = excluded.action,
                     lastmod = excluded.lastmod, next_attempt_at = excluded.next_attempt_at,
                     enqueued_at = excluded.enqueued_at, attempts = excluded.attempts, last_class = excluded.last_class,
                     last_reason = excluded.last_reason, last_message = excluded.last_message,
                     last_http_status = excluded.last_http_status, streak = excluded.streak,
                     streak_started_at = excluded.streak_started_at, accepted_at = excluded.accepted_at,
                     parked_fingerprint = excluded.parked_fingerprint
                 WHERE items.state != 'in_flight'",
            )?;
            let mut find = tx.prepare("SELECT id FROM items WHERE url = ?1 AND group_id = ?2")?;
            for item in &dump.items {
                let group = group_id_or_create(&tx, &mut self.groups, &mut created, &item.group)?;
                copied.items += upsert.execute(params![
                    item.url,
                    group,
                    item.state.as_str(),
                    item.action.as_str(),
                    item.lastmod.map(ts),
                    item.next_attempt_at.map(ts),
                    ts(item.enqueued_at),
                    item.attempts,
                    item.last_class,
                    item.last_reason,
                    item.last_message,
                    item.last_http_status,
                    item.streak,
                    item.streak_started_at.map(ts),
                    item.accepted_at.map(ts),
                    item.parked_fingerprint,
                ])? as u64;
                ids.push(find.query_row(params![item.url, group], |r| r.get::<_, i64>(0))?);
            }
            let mut known = tx.prepare(
                "SELECT 1 FROM attempts WHERE item_id = ?1 AND at = ?2 AND class = ?3 AND reason = ?4 AND message = ?5
                     AND retry_at IS ?6",
            )?;
            let mut insert_response = tx.prepare("INSERT INTO responses (http_status, body) VALUES (?1, ?2)")?;
            let mut insert = tx.prepare(
                "INSERT INTO attempts (item_id, at, class, reason, message, response_id, retry_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            let mut response_ids: HashMap<usize, i64> = HashMap::new();
            for a in &dump.attempts {
                let item = ids[a.item];
                let key = params![item, ts(a.at), a.class, a.reason, a.message, a.retry_at.map(ts)];
                if known.exists(key)? {
                    continue;
                }
                let response = match a.response {
                    None => None,
                    Some(index) => Some(match response_ids.get(&index) {
                        Some(id) => *id,
                        None => {
                            let r = &dump.responses[index];
                            insert_response.execute(params![r.http_status, r.body])?;
                            response_ids.insert(index, tx.last_insert_rowid());
                            tx.last_insert_rowid()
                        }
                    }),
                };
                insert.execute(params![item, ts(a.at), a.class, a.reason, a.message, response, a.retry_at.map(ts)])?;
                copied.attempts += 1;
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
            if let Some(latest) = dump.latest_run {
                tx.execute(
                    "INSERT INTO runs (id, latest_now) VALUES (1, ?1)
                     ON CONFLICT (id) DO UPDATE SET latest_now = MAX(latest_now, excluded.latest_now)",
                    [ts(latest)],
                )?;
            }
            // The kept counts, recounted once (inserted rows are not counted
            // by the triggers).
            tx.execute_batch(
                "UPDATE groups SET
                     queued = (SELECT COUNT(*) FROM items WHERE group_id = groups.id AND state = 'queued'),
                     in_flight = (SELECT COUNT(*) FROM items WHERE group_id = groups.id AND state = 'in_flight'),
                     parked = (SELECT COUNT(*) FROM items WHERE group_id = groups.id AND state = 'parked'),
                     accepted = (SELECT COUNT(*) FROM items WHERE group_id = groups.id AND state = 'accepted');",
            )?;
        }
        tx.commit()?;
        self.groups.extend(created);
        Ok(copied)
    }

    // History and monitoring: short read-only queries over the attempts,
    // and the record of `submit` runs (table `submit_runs`, migration 2).

    /// One per URL attempted: the attempts table has a row per item and attempt.
    fn outcome_counts(&mut self) -> Result<Vec<(GroupKey, Class, u64)>> {
        let mut stmt = self.conn.prepare(
            "SELECT g.property, g.engine, g.target, a.class, COUNT(*)
             FROM attempts a JOIN items i ON i.id = a.item_id JOIN groups g ON g.id = i.group_id
             GROUP BY g.property, g.engine, g.target, a.class",
        )?;
        let rows = stmt.query_map([], |r| {
            let engine: String = r.get(1)?;
            let class: String = r.get(3)?;
            Ok((GroupKey::stored(r.get(0)?, &engine, r.get(2)?), class, r.get::<_, i64>(4)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (group, class, n) = row?;
            if let Ok(class) = Class::from_str(&class) {
                out.push((group, class, n.max(0) as u64));
            }
        }
        Ok(out)
    }

    /// The spans as a VALUES list joined to the attempts by time (the index
    /// on `attempts (at)` serves each span), counted per group and class.
    fn attempt_history(&mut self, bounds: &[DateTime<Utc>]) -> Result<Vec<SpanCount>> {
        if bounds.len() < 2 {
            return Ok(Vec::new());
        }
        let spans: Vec<String> =
            (0..bounds.len() - 1).map(|n| format!("({n}, ?{}, ?{})", 2 * n + 1, 2 * n + 2)).collect();
        let values: Vec<i64> = bounds.windows(2).flat_map(|w| [ts(w[0]), ts(w[1])]).collect();
        let sql = format!(
            "WITH spans (n, start, stop) AS (VALUES {})
             SELECT s.n, g.property, g.engine, g.target, a.class, COUNT(*)
             FROM spans s JOIN attempts a ON a.at >= s.start AND a.at < s.stop
                 JOIN items i ON i.id = a.item_id JOIN groups g ON g.id = i.group_id
             GROUP BY s.n, g.property, g.engine, g.target, a.class",
            spans.join(", ")
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(values), |r| {
            let engine: String = r.get(2)?;
            let class: String = r.get(4)?;
            Ok((r.get::<_, i64>(0)?, GroupKey::stored(r.get(1)?, &engine, r.get(3)?), class, r.get::<_, i64>(5)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (span, group, class, n) = row?;
            if let Ok(class) = Class::from_str(&class) {
                out.push(SpanCount { group, span: span as usize, class, urls: n.max(0) as u64 });
            }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn group(property: &str, engine: EngineKind) -> GroupKey {
        GroupKey { property: property.into(), engine, target: format!("https://{property}/endpoint") }
    }

    /// A ledger written by an indexq of schema version 1 gets the run
    /// records on open, and keeps what it had.
    #[test]
    fn a_version_1_ledger_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
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
            .prepare("SELECT id, property, engine, target FROM groups")
            .unwrap()
            .query_map([], |r| {
                let engine: String = r.get(2)?;
                Ok((
                    r.get(0)?,
                    GroupKey { property: r.get(1)?, engine: EngineKind::from_str(&engine).unwrap(), target: r.get(3)? },
                ))
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
                match (ItemState::parse(&state), due) {
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

    fn record(item: &ClaimedItem, at: DateTime<Utc>, class: Class, next: NextStep) -> AttemptRecord {
        AttemptRecord { item_id: item.id, at, class, reason: "r".into(), message: "m".into(), response: 0, next }
    }

    fn finish(ledger: &mut SqliteLedger, claim: &Claim, records: Vec<AttemptRecord>) {
        let done = Finish {
            reservation: claim.reservation.unwrap(),
            responses: vec![StoredResponse { http_status: Some(400), body: Some("no".into()) }],
            records,
            blocks: vec![],
            refund: 0,
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
        let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false };
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
            period: crate::clock::Period::Day,
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
        assert!(ledger.last_rejection(&a).unwrap().is_none(), "its attempts went with its items");
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
