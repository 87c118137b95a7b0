//! The PostgreSQL ledger: one database (one schema in it) shared by any
//! number of machines, so that they share one set of budgets and one queue.
//!
//! - Reservation: a claim locks the rows of its rule windows (`FOR UPDATE`,
//!   in rule order), decides from them, then takes the units with one
//!   conditional upsert per rule and window (`... DO UPDATE ... WHERE used +
//!   n <= limit RETURNING used`): if any of them finds no room, nothing is
//!   taken and nothing is sent.
//! - Queue items are claimed with `FOR UPDATE SKIP LOCKED`, so runners
//!   draining one queue never take the same item.
//! - A reservation carries its owner (host, pid, start time) and a lease; an
//!   owner on another host is trusted until its lease ends.
//! - Migrations run under an advisory lock; the connection has connect,
//!   statement and lock timeouts, so a lost server ends the run, never hangs it.
//!
//! - The decisions are `policy`'s; this file stores them with set-based
//!   statements over arrays (`unnest`): a batch of URLs is looked up,
//!   inserted and updated with a statement each, a claim marks its items with
//!   one, and an answer moves every item it names with one.
//!
//! The `postgres` client runs its own small runtime: called from inside
//! the tokio runtime of `submit`, each call hops to a plain thread.

use super::ids::{self, url_key};
use super::policy::{self, cap_body, lease_until, ledger_now, ts_ceil, AdmitPlan, ClaimPlan, Existing, PaceState};
use super::*;
use ::postgres as pg;
use pg::error::SqlState;
use pg::{Client, GenericClient, NoTls, Row, Transaction};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = 5;

/// Schema 3, over schema 2: the sitemaps read for sources, and reminders.
const SCHEMA_3: &str = include_str!("postgres_schema_3.sql");
/// Schema 4, over schema 3: Google URL inspections per property and class, and
/// the items `queue drop` removed that requests name.
const SCHEMA_4: &str = include_str!("postgres_schema_4.sql");
/// Schema 5, over schema 4: groups have a channel (sitemap groups), the sitemaps read
/// keep when they last changed, and what the engines report of the sitemaps submitted.
const SCHEMA_5: &str = include_str!("postgres_schema_5.sql");

/// Schema 2, over schema 1: items are found by (group, url_key) — an
/// integer key of the URL — and attempts are recorded per request: one row
/// names every item the request carried. `upgrade_to_2` fills the keys and
/// copies the attempts between the two halves.
const SCHEMA_2_BEFORE: &str = r#"
DROP INDEX items_group;
ALTER TABLE items DROP CONSTRAINT items_url_group_id_key;
ALTER TABLE items ADD COLUMN url_key bigint, ADD COLUMN last_request_id bigint;

CREATE TABLE requests (
    id          bigserial PRIMARY KEY,
    group_id    bigint NOT NULL REFERENCES groups (id),
    at          timestamptz NOT NULL,
    class       text NOT NULL CHECK (class IN ('accepted', 'quota', 'transient', 'key_pending', 'misconfigured')),
    reason      text NOT NULL,
    message     text NOT NULL,
    http_status integer,
    body        text,
    retry_at    timestamptz,
    n           integer NOT NULL CHECK (n > 0),
    first_item  bigint NOT NULL,
    last_item   bigint NOT NULL,
    -- The items' ids, ascending (`ids::encode`); NULL when it names one, `first_item`.
    items       bytea
);
"#;
const SCHEMA_2_AFTER: &str = r#"
DROP TABLE attempts;
DROP TABLE responses;
ALTER TABLE items ALTER COLUMN url_key SET NOT NULL,
    DROP COLUMN last_reason, DROP COLUMN last_message, DROP COLUMN last_http_status,
    ADD CONSTRAINT items_state_known CHECK (state IN ('queued', 'in_flight', 'accepted', 'parked')),
    ADD CONSTRAINT items_action_known CHECK (action IN ('updated', 'deleted')),
    ADD CONSTRAINT items_class_known
        CHECK (last_class IN ('accepted', 'quota', 'transient', 'key_pending', 'misconfigured')),
    ADD CONSTRAINT items_key UNIQUE (group_id, url_key);
-- The queue by group and due time, what is in flight by reservation, and
-- what is parked by group: partial indexes, so that an item leaves them
-- once answered (an accepted item, the bulk of a ledger, is in no index but
-- its key's and its id's).
DROP INDEX items_reservation;
CREATE INDEX items_queued ON items (group_id, next_attempt_at, id) WHERE state = 'queued';
CREATE INDEX items_in_flight ON items (reservation_id) WHERE state = 'in_flight';
CREATE INDEX items_parked ON items (group_id) WHERE state = 'parked';
CREATE INDEX requests_group ON requests (group_id, at, id);
CREATE INDEX requests_rejected ON requests (group_id, at, id) WHERE class <> 'accepted';
CREATE INDEX requests_at ON requests (at, id);

-- Each `submit` run that ended, on any machine (the metrics of the last
-- run, the report).
CREATE TABLE submit_runs (
    id         bigserial PRIMARY KEY,
    host       text NOT NULL,
    started_at timestamptz NOT NULL,
    ended_at   timestamptz NOT NULL,
    exit_code  integer NOT NULL
);
"#;

/// Schema 1, the first migration of every ledger.
const SCHEMA_1: &str = r#"
CREATE TABLE groups (
    id       bigserial PRIMARY KEY,
    property text NOT NULL,
    engine   text NOT NULL,
    target   text NOT NULL,
    UNIQUE (property, engine, target)
);

CREATE TABLE items (
    id                 bigserial PRIMARY KEY,
    url                text NOT NULL,
    group_id           bigint NOT NULL REFERENCES groups (id),
    state              text NOT NULL,
    action             text NOT NULL DEFAULT 'updated',
    lastmod            timestamptz,
    next_attempt_at    timestamptz,
    enqueued_at        timestamptz NOT NULL,
    attempts           integer NOT NULL DEFAULT 0,
    last_class         text,
    last_reason        text,
    last_message       text,
    last_http_status   integer,
    streak             integer NOT NULL DEFAULT 0,
    streak_started_at  timestamptz,
    accepted_at        timestamptz,
    parked_fingerprint text,
    reservation_id     bigint,
    UNIQUE (url, group_id)
);
CREATE INDEX items_group ON items (group_id, state, next_attempt_at, id);
CREATE INDEX items_reservation ON items (reservation_id) WHERE reservation_id IS NOT NULL;

-- Items by group and state, kept by statement triggers (counting a queue of a
-- million would read all of it). One row per group and state; a statement
-- writes only the rows whose count it changes, in key order (so that
-- transactions touching several wait for each other, never deadlock).
CREATE TABLE group_counts (
    group_id bigint NOT NULL REFERENCES groups (id),
    state    text NOT NULL,
    n        bigint NOT NULL,
    PRIMARY KEY (group_id, state)
);
CREATE FUNCTION count_items() RETURNS trigger LANGUAGE plpgsql AS $count$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO group_counts AS c (group_id, state, n)
        SELECT group_id, state, count(*) FROM new_items GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (group_id, state) DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO group_counts AS c (group_id, state, n)
        SELECT group_id, state, -count(*) FROM old_items GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (group_id, state) DO UPDATE SET n = c.n + excluded.n;
    ELSE
        INSERT INTO group_counts AS c (group_id, state, n)
        SELECT group_id, state, sum(d) FROM (
            SELECT group_id, state, -1 AS d FROM old_items
            UNION ALL SELECT group_id, state, 1 FROM new_items
        ) AS changes GROUP BY 1, 2 HAVING sum(d) <> 0 ORDER BY 1, 2
        ON CONFLICT (group_id, state) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    RETURN NULL;
END
$count$;
CREATE TRIGGER items_inserted AFTER INSERT ON items REFERENCING NEW TABLE AS new_items
    FOR EACH STATEMENT EXECUTE FUNCTION count_items();
CREATE TRIGGER items_updated AFTER UPDATE ON items REFERENCING OLD TABLE AS old_items NEW TABLE AS new_items
    FOR EACH STATEMENT EXECUTE FUNCTION count_items();
CREATE TRIGGER items_deleted AFTER DELETE ON items REFERENCING OLD TABLE AS old_items
    FOR EACH STATEMENT EXECUTE FUNCTION count_items();

CREATE TABLE responses (
    id          bigserial PRIMARY KEY,
    http_status integer,
    body        text
);

CREATE TABLE attempts (
    id          bigserial PRIMARY KEY,
    item_id     bigint NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    at          timestamptz NOT NULL,
    class       text NOT NULL,
    reason      text NOT NULL,
    message     text NOT NULL,
    response_id bigint REFERENCES responses (id),
    retry_at    timestamptz
);
CREATE INDEX attempts_item ON attempts (item_id, at);
CREATE INDEX attempts_at ON attempts (at, id);
CREATE INDEX attempts_rejected ON attempts (at, id) WHERE class <> 'accepted';
CREATE INDEX attempts_response ON attempts (response_id);

CREATE TABLE budget_usage (
    rule               text NOT NULL,
    window_key         text NOT NULL,
    period             text NOT NULL,
    used               bigint NOT NULL DEFAULT 0,
    limit_value        bigint,
    resets_at          timestamptz NOT NULL,
    reported_at        timestamptz,
    reported_remaining bigint,
    PRIMARY KEY (rule, window_key)
);

CREATE TABLE blocks (
    rule  text PRIMARY KEY,
    until timestamptz NOT NULL
);

CREATE TABLE reservations (
    id          bigserial PRIMARY KEY,
    host        text NOT NULL,
    pid         bigint NOT NULL,
    started     bigint NOT NULL,
    created_at  timestamptz NOT NULL,
    lease_until timestamptz NOT NULL,
    units       bigint NOT NULL
);

CREATE TABLE reservation_rules (
    reservation_id bigint NOT NULL REFERENCES reservations (id) ON DELETE CASCADE,
    rule           text NOT NULL,
    window_key     text NOT NULL,
    units          bigint NOT NULL
);
CREATE INDEX reservation_rules_rule ON reservation_rules (rule, window_key);
CREATE INDEX reservation_rules_reservation ON reservation_rules (reservation_id);

CREATE TABLE pacing (
    key    text PRIMARY KEY,
    tat_ms bigint NOT NULL
);

CREATE TABLE credentials (
    fingerprint   text PRIMARY KEY,
    first_used_at timestamptz NOT NULL
);

CREATE TABLE runs (
    id         integer PRIMARY KEY CHECK (id = 1),
    latest_now timestamptz NOT NULL
);
"#;

/// What to check when the database cannot be reached.
pub const CONNECT_HINT: &str = "check that the server is up and reachable from here, and the user, database and \
     password (`ledger_password_env`, `ledger_password_file`, $PGPASSWORD or ~/.pgpass)";

/// How to reach the database.
#[derive(Clone)]
pub struct PgOptions {
    /// The connection URL as configured (it may hold a password: never shown).
    pub url: String,
    /// The schema that holds the tables.
    pub schema: String,
    /// From `ledger_password_env`/`_file`, `$PGPASSWORD` or a pgpass file.
    pub password: Option<String>,
    /// Connect, statement and lock timeout.
    pub timeout: Duration,
    pub lease: TimeDelta,
}

impl std::fmt::Debug for PgOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgOptions({}, schema {})", crate::redact::connection_url(&self.url), self.schema)
    }
}

/// Runs `f` where the blocking `postgres` client may run: on this thread,
/// or, inside a tokio runtime, on a plain thread of its own.
fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| s.spawn(f).join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
}

pub struct PgLedger {
    /// Always `Some` but while dropping (the client's drop blocks, so it
    /// too must happen off the runtime).
    client: Option<Client>,
    /// The redacted URL, for messages.
    place: String,
    schema: String,
    lease: TimeDelta,
    groups: HashMap<GroupKey, i64>,
}

/// Whole seconds, as the SQLite ledger keeps them (so that a copy between
/// the two is exact).
fn sec(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(t.timestamp(), 0).unwrap_or(t)
}

fn opt_sec(t: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    t.map(sec)
}

fn is_retryable(err: &pg::Error) -> bool {
    matches!(err.code(), Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED)
}

impl PgLedger {
    /// Connects and brings the schema up to date (under an advisory lock).
    pub fn open(options: &PgOptions) -> Result<PgLedger> {
        let mut ledger = PgLedger::connect(options)?;
        ledger.migrate()?;
        Ok(ledger)
    }

    /// Connects without touching the schema (for `doctor`).
    pub fn connect(options: &PgOptions) -> Result<PgLedger> {
        let place = crate::redact::connection_url(&options.url);
        let client = off_runtime(|| connect(options)).map_err(|e| LedgerError::Open {
            path: place.clone(),
            message: e,
            hint: Some(CONNECT_HINT.into()),
            newer: false,
            source: None,
        })?;
        Ok(PgLedger {
            client: Some(client),
            place,
            schema: options.schema.clone(),
            lease: options.lease,
            groups: HashMap::new(),
        })
    }

    /// The database as messages name it (no password).
    pub fn place(&self) -> &str {
        &self.place
    }

    /// Runs `f` in one transaction (again if the server aborts it for a
    /// deadlock).
    fn transaction<T: Send>(&mut self, f: impl FnMut(&mut Transaction<'_>) -> Result<T> + Send) -> Result<T> {
        in_transaction(&mut self.client, f)
    }

    /// `transaction`, with the ids of the groups known to be in the ledger.
    fn with_groups<T: Send>(
        &mut self,
        mut f: impl FnMut(&mut Transaction<'_>, &HashMap<GroupKey, i64>) -> Result<T> + Send,
    ) -> Result<T> {
        let groups = &self.groups;
        in_transaction(&mut self.client, |tx| f(tx, groups))
    }

    fn migrate(&mut self) -> Result<()> {
        let schema = self.schema.clone();
        self.transaction(|tx| {
            tx.execute("SELECT pg_advisory_xact_lock(hashtext('indexq migrate ' || $1)::bigint)", &[&schema])?;
            tx.batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {schema};
                 CREATE TABLE IF NOT EXISTS {schema}.schema_version (version bigint NOT NULL);"
            ))?;
            let version: Option<i64> =
                tx.query_opt(&format!("SELECT max(version) FROM {schema}.schema_version"), &[])?.and_then(|r| r.get(0));
            let version = version.unwrap_or(0);
            if version > SCHEMA_VERSION {
                return Err(LedgerError::Newer { found: version, known: SCHEMA_VERSION });
            }
            if version < SCHEMA_VERSION {
                tx.batch_execute(&format!("SET LOCAL search_path TO {schema}"))?;
            }
            if version < 1 {
                tx.batch_execute(SCHEMA_1)?;
            }
            if version < 2 {
                upgrade_to_2(tx)?;
            }
            if version < 3 {
                tx.batch_execute(SCHEMA_3)?;
            }
            if version < 4 {
                tx.batch_execute(SCHEMA_4)?;
            }
            if version < 5 {
                tx.batch_execute(SCHEMA_5)?;
            }
            if version < SCHEMA_VERSION {
                tx.execute(&format!("DELETE FROM {schema}.schema_version"), &[])?;
                tx.execute(&format!("INSERT INTO {schema}.schema_version VALUES ($1)"), &[&SCHEMA_VERSION])?;
            }
            Ok(())
        })
        .map_err(|e| match e {
            LedgerError::Newer { found, known } => LedgerError::newer(&self.place, found, known),
            e => e,
        })
    }

    /// The schema version in the database (`None`: no indexq schema yet).
    pub fn stored_version(&mut self) -> Result<Option<i64>> {
        let schema = self.schema.clone();
        self.transaction(|tx| {
            let exists: bool = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM information_schema.tables
                     WHERE table_schema = $1 AND table_name = 'schema_version')",
                    &[&schema],
                )?
                .get(0);
            if !exists {
                return Ok(None);
            }
            Ok(tx.query_one(&format!("SELECT max(version) FROM {schema}.schema_version"), &[])?.get(0))
        })
    }

    /// The server's clock.
    pub fn server_now(&mut self) -> Result<DateTime<Utc>> {
        self.transaction(|tx| Ok(tx.query_one("SELECT now()", &[])?.get(0)))
    }

    /// Every reservation: its owner and the end of its lease.
    pub fn reservations(&mut self) -> Result<Vec<(Owner, DateTime<Utc>)>> {
        self.transaction(|tx| {
            let rows = tx.query("SELECT host, pid, started, lease_until FROM reservations ORDER BY id", &[])?;
            Ok(rows.iter().map(|r| (owner_of(r, 0), r.get(3))).collect())
        })
    }
}

/// Runs `f` in one transaction of `client` (again if the server aborts it
/// for a deadlock), off the runtime.
fn in_transaction<T: Send>(
    client: &mut Option<Client>,
    mut f: impl FnMut(&mut Transaction<'_>) -> Result<T> + Send,
) -> Result<T> {
    let client = client.as_mut().expect("a ledger in use has its client");
    off_runtime(move || {
        retrying(|| {
            let mut tx = client.transaction()?;
            let value = f(&mut tx)?;
            tx.commit()?;
            Ok(value)
        })
    })
}

impl Drop for PgLedger {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            off_runtime(move || drop(client));
        }
    }
}

fn owner_of(r: &Row, at: usize) -> Owner {
    Owner { host: r.get(at), pid: r.get::<_, i64>(at + 1) as u32, started: r.get::<_, i64>(at + 2) as u64 }
}

/// A connection with the session set up: schema, timeouts, UTC.
fn connect(options: &PgOptions) -> std::result::Result<Client, String> {
    let mut config: pg::Config =
        options.url.parse().map_err(|e: pg::Error| format!("not a valid PostgreSQL URL ({})", e))?;
    if let Some(password) = &options.password {
        config.password(password);
    }
    let ms = options.timeout.as_millis().max(1);
    config
        .connect_timeout(options.timeout)
        .tcp_user_timeout(options.timeout)
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30))
        .application_name("indexq")
        .options(&format!(
            "-c search_path={} -c statement_timeout={ms} -c lock_timeout={ms} \
             -c idle_in_transaction_session_timeout={} -c TimeZone=UTC",
            options.schema,
            ms * 4
        ));
    let client = match config.get_ssl_mode() {
        pg::config::SslMode::Require => config.connect(tls()),
        _ => config.connect(NoTls),
    };
    client.map_err(|e| {
        let hosts: Vec<String> = config
            .get_hosts()
            .iter()
            .map(|h| match h {
                pg::config::Host::Tcp(h) => h.clone(),
                pg::config::Host::Unix(p) => p.display().to_string(),
            })
            .collect();
        let port = config.get_ports().first().copied().unwrap_or(5432);
        format!("cannot connect to {}:{port}: {}", hosts.join(","), describe(&e))
    })
}

/// TLS for `sslmode=require`: the server's certificate is checked against
/// the Mozilla roots.
fn tls() -> tokio_postgres_rustls::MakeRustlsConnect {
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let config =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("the ring provider supports the default protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
    tokio_postgres_rustls::MakeRustlsConnect::new(config)
}

/// An error's whole chain on one line (the driver's top message alone is
/// often just "error connecting to server").
fn describe(err: &pg::Error) -> String {
    if let Some(db) = err.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    crate::error::error_chain(err)
}

/// Runs `attempt` (one whole transaction) again while the server aborts it
/// for a deadlock or a serialization failure (nothing of it was kept).
fn retrying<T>(mut attempt: impl FnMut() -> Result<T>) -> Result<T> {
    let mut tries = 0;
    loop {
        match attempt() {
            Err(LedgerError::Retry) if tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(5 * tries));
            }
            Err(LedgerError::Retry) => return Err(LedgerError::Invalid("gave up after repeated deadlocks".into())),
            other => return other,
        }
    }
}

/// The place (the database) is added by the ledger's caller: `main` names
/// the ledger in every error.
impl From<pg::Error> for LedgerError {
    fn from(err: pg::Error) -> Self {
        if is_retryable(&err) {
            return LedgerError::Retry;
        }
        let timed_out =
            matches!(err.code(), Some(c) if *c == SqlState::LOCK_NOT_AVAILABLE || *c == SqlState::QUERY_CANCELED);
        if err.as_db_error().is_none() || timed_out {
            return LedgerError::Unavailable(describe(&err));
        }
        LedgerError::Postgres { message: describe(&err), source: err }
    }
}

fn group_id(tx: &mut impl GenericClient, cache: &HashMap<GroupKey, i64>, key: &GroupKey) -> Result<Option<i64>> {
    if let Some(id) = cache.get(key) {
        return Ok(Some(*id));
    }
    let row = tx.query_opt(
        "SELECT id FROM groups WHERE property = $1 AND engine = $2 AND target = $3 AND channel = $4",
        &[&key.property, &key.engine.as_str(), &key.target, &key.channel.as_str()],
    )?;
    Ok(row.map(|r| r.get(0)))
}

fn group_id_or_create(tx: &mut impl GenericClient, cache: &HashMap<GroupKey, i64>, key: &GroupKey) -> Result<i64> {
    if let Some(id) = group_id(tx, cache, key)? {
        return Ok(id);
    }
    tx.execute(
        "INSERT INTO groups (property, engine, target, channel) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        &[&key.property, &key.engine.as_str(), &key.target, &key.channel.as_str()],
    )?;
    Ok(group_id(tx, cache, key)?.expect("the group row was just written"))
}

fn usage_in(tx: &mut impl GenericClient, rule: &RuleWindow) -> Result<Usage> {
    let blocked: Option<DateTime<Utc>> =
        tx.query_opt("SELECT until FROM blocks WHERE rule = $1", &[&rule.rule])?.map(|r| r.get(0));
    let usage = tx
        .query_opt(
            "SELECT used, limit_value, reported_at, reported_remaining FROM budget_usage
             WHERE rule = $1 AND window_key = $2",
            &[&rule.rule, &rule.window],
        )?
        .map(|r| usage_row(&r))
        .unwrap_or_default();
    Ok(Usage { blocked_until: blocked, ..usage })
}

fn usage_row(r: &Row) -> Usage {
    let reported = match (r.get::<_, Option<DateTime<Utc>>>(2), r.get::<_, Option<i64>>(3), r.get::<_, Option<i64>>(1))
    {
        (Some(at), Some(remaining), Some(limit)) => {
            Some(Report { at, remaining: remaining.max(0) as u64, limit: limit.max(0) as u64 })
        }
        _ => None,
    };
    Usage { used: r.get::<_, i64>(0).max(0) as u64, blocked_until: None, reported }
}

/// Records, in the caller's transaction, that the engine says `remaining`
/// units are left in a reported rule's window (`policy::reported_limit`),
/// the window's row locked: in flight is what every reservation but
/// `answered` (the one whose answer said it, being finished) has counted in
/// the window.
fn report_in(
    tx: &mut impl GenericClient,
    rule: &RuleWindow,
    remaining: u64,
    now: DateTime<Utc>,
    answered: Option<i64>,
) -> Result<Report> {
    lock_window(tx, rule)?;
    let in_flight: i64 = tx
        .query_one(
            "SELECT COALESCE(SUM(units), 0)::bigint FROM reservation_rules
             WHERE rule = $1 AND window_key = $2 AND reservation_id IS DISTINCT FROM $3",
            &[&rule.rule, &rule.window, &answered],
        )?
        .get(0);
    let used = usage_in(tx, rule)?.used;
    let limit = policy::reported_limit(used, remaining, in_flight.max(0) as u64);
    tx.execute(
        "UPDATE budget_usage SET limit_value = $3, reported_at = $4, reported_remaining = $5
         WHERE rule = $1 AND window_key = $2",
        &[&rule.rule, &rule.window, &(limit as i64), &now, &(remaining as i64)],
    )?;
    Ok(Report { at: now, remaining, limit })
}

/// Counts `units` against a rule's window, unconditionally (usage the
/// server already saw, or none: a row for a block or a report).
fn add_usage(tx: &mut impl GenericClient, rule: &RuleWindow, units: u64) -> Result<()> {
    tx.execute(
        "INSERT INTO budget_usage (rule, window_key, period, used, limit_value, resets_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (rule, window_key) DO UPDATE SET used = budget_usage.used + excluded.used,
             limit_value = CASE WHEN budget_usage.reported_at IS NULL THEN excluded.limit_value
                                ELSE budget_usage.limit_value END,
             resets_at = excluded.resets_at",
        &[
            &rule.rule,
            &rule.window,
            &rule.period.as_str(),
            &(units as i64),
            &rule.limit.map(|l| l as i64),
            &sec(rule.resets_at),
        ],
    )?;
    Ok(())
}

/// Reserves `units` of a rule's window in one statement: the units are
/// added only if they fit the window's limit (the engine's reported one, if
/// any) and no block holds at `now`. Returns whether they were. The row
/// exists already (`lock_window`).
fn reserve(tx: &mut impl GenericClient, rule: &RuleWindow, units: u64, now: DateTime<Utc>) -> Result<bool> {
    let row = tx.query_opt(
        "INSERT INTO budget_usage AS u (rule, window_key, period, used, limit_value, resets_at)
         SELECT $1::text, $2::text, $3::text, $4::bigint, $5::bigint, $6::timestamptz
         WHERE NOT EXISTS (SELECT 1 FROM blocks WHERE rule = $1 AND until > $7::timestamptz)
         ON CONFLICT (rule, window_key) DO UPDATE SET used = u.used + excluded.used,
             limit_value = CASE WHEN u.reported_at IS NULL THEN excluded.limit_value ELSE u.limit_value END,
             resets_at = excluded.resets_at
         WHERE (CASE WHEN u.reported_at IS NULL THEN excluded.limit_value ELSE u.limit_value END) IS NULL
            OR u.used + excluded.used
               <= (CASE WHEN u.reported_at IS NULL THEN excluded.limit_value ELSE u.limit_value END)
         RETURNING u.used",
        &[
            &rule.rule,
            &rule.window,
            &rule.period.as_str(),
            &(units as i64),
            &rule.limit.map(|l| l as i64),
            &sec(rule.resets_at),
            &now,
        ],
    )?;
    Ok(row.is_some())
}

/// Schema 1 → 2: items get their URL key (a URL whose key another of its
/// group holds takes the next free one), each attempt becomes a recorded
/// request naming its item, and each item points at its last one. Values
/// this indexq does not know stop the upgrade, naming them.
fn upgrade_to_2(tx: &mut Transaction<'_>) -> Result<()> {
    for (table, column, known) in [
        ("items", "state", "'queued', 'in_flight', 'accepted', 'parked'"),
        ("items", "action", "'updated', 'deleted'"),
        ("items", "last_class", CLASSES),
        ("attempts", "class", CLASSES),
    ] {
        let sql = format!("SELECT {column} FROM {table} WHERE {column} NOT IN ({known}) LIMIT 1");
        if let Some(r) = tx.query_opt(&sql, &[])? {
            return Err(stored::<Class>(table, column, r.get::<_, &str>(0)).err().unwrap_or_else(|| {
                LedgerError::Invalid(format!("the ledger's {table}.{column} holds a value this indexq does not know"))
            }));
        }
    }
    tx.batch_execute(SCHEMA_2_BEFORE)?;
    let (mut ids, mut keys) = (Vec::new(), Vec::new());
    let mut taken = HashSet::new();
    for r in tx.query("SELECT id, group_id, url FROM items ORDER BY id", &[])? {
        let group: i64 = r.get(1);
        let mut key = url_key(r.get(2));
        while !taken.insert((group, key)) {
            key = ids::next_key(key);
        }
        ids.push(r.get::<_, i64>(0));
        keys.push(key);
    }
    tx.execute(
        "UPDATE items SET url_key = k.key FROM unnest($1::bigint[], $2::bigint[]) AS k (id, key) WHERE items.id = k.id",
        &[&ids, &keys],
    )?;
    tx.batch_execute(
        "INSERT INTO requests (group_id, at, class, reason, message, http_status, body, retry_at, n, first_item,
             last_item)
         SELECT i.group_id, a.at, a.class, a.reason, a.message, r.http_status, r.body, a.retry_at, 1, a.item_id,
             a.item_id
         FROM attempts a JOIN items i ON i.id = a.item_id LEFT JOIN responses r ON r.id = a.response_id
         ORDER BY a.at, a.id;
         UPDATE items SET last_request_id = last.id
         FROM (SELECT DISTINCT ON (first_item) first_item, id FROM requests ORDER BY first_item, at DESC, id DESC)
             AS last
         WHERE items.id = last.first_item;",
    )?;
    tx.batch_execute(SCHEMA_2_AFTER)?;
    Ok(())
}

/// The classes, as the schema's checks list them.
const CLASSES: &str = "'accepted', 'quota', 'transient', 'key_pending', 'misconfigured'";

/// The columns `item_row` reads, from `items i JOIN groups g LEFT JOIN
/// requests r ON r.id = i.last_request_id`.
const ITEM_COLUMNS: &str = "i.id, i.url, g.property, g.engine, g.target, i.state, i.next_attempt_at, i.attempts, \
     i.last_class, r.reason, r.message, r.http_status, i.accepted_at, r.class, g.channel";
const ITEM_FROM: &str = "items i JOIN groups g ON g.id = i.group_id LEFT JOIN requests r ON r.id = i.last_request_id";

fn item_row(r: &Row) -> Result<ItemRow> {
    Ok(ItemRow {
        id: r.get(0),
        url: r.get(1),
        group: stored_group(r.get(2), r.get(3), r.get(4), r.get(14))?,
        state: stored("items", "state", r.get(5))?,
        next_attempt_at: r.get(6),
        attempts: r.get::<_, i32>(7) as u32,
        last_class: stored_opt("items", "last_class", r.get(8))?,
        last_reason: stored_last_reason(r.get(13), r.get(9))?,
        last_message: r.get(10),
        last_http_status: r.get::<_, Option<i32>>(11).map(|s| s as u16),
        accepted_at: r.get(12),
    })
}

/// The columns `attempt_row` reads, from `requests r JOIN groups g`.
const REQUEST_COLUMNS: &str =
    "r.at, r.n, g.property, g.engine, g.target, r.class, r.reason, r.message, r.http_status, r.body, r.retry_at, \
     g.channel";

/// A request's first item, whether in the queue or dropped: joined after
/// `requests r`, for `FIRST_URL`.
const FIRST_ITEM: &str = "LEFT JOIN items i ON i.id = r.first_item LEFT JOIN dropped_items d ON d.id = r.first_item";
/// The URL of a request's first item, and whether `queue drop` removed it.
const FIRST_URL: &str = "COALESCE(i.url, d.url, ''), i.id IS NULL";

fn attempt_row(r: &Row, url: String, dropped: bool) -> Result<AttemptRow> {
    Ok(AttemptRow {
        at: r.get(0),
        url,
        dropped,
        urls: r.get::<_, i32>(1).max(0) as u64,
        group: stored_group(r.get(2), r.get(3), r.get(4), r.get(11))?,
        class: stored("requests", "class", r.get(5))?,
        reason: stored_reason(stored("requests", "class", r.get(5))?, r.get(6))?,
        message: r.get(7),
        http_status: r.get::<_, Option<i32>>(8).map(|s| s as u16),
        body: r.get(9),
        retry_at: r.get(10),
    })
}

/// Records a request; returns its id.
fn insert_request(tx: &mut impl GenericClient, r: &Recorded) -> Result<i64> {
    let (first, last, list) = r.stored_items();
    Ok(tx
        .query_one(
            "INSERT INTO requests (group_id, at, class, reason, message, http_status, body, retry_at, n, first_item,
                 last_item, items)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
            &[
                &r.group,
                &sec(r.at),
                &r.class.as_str(),
                &r.reason.to_string(),
                &r.message,
                &r.response.http_status.map(i32::from),
                &r.response.body.as_deref().map(cap_body),
                &opt_sec(r.retry_at),
                &(r.items.len() as i32),
                &first,
                &last,
                &list,
            ],
        )?
        .get(0))
}

/// `Existing` from columns `id, state, action, lastmod, accepted_at,
/// next_attempt_at` starting at `at`.
fn existing_row(r: &Row, at: usize) -> Result<Existing> {
    Ok(Existing {
        id: r.get(at),
        state: stored("items", "state", r.get(at + 1))?,
        action: stored("items", "action", r.get(at + 2))?,
        lastmod: r.get(at + 3),
        accepted_at: r.get(at + 4),
        next_attempt_at: r.get(at + 5),
    })
}

/// What the ledger holds of each URL of `batch` (whose items are in the
/// groups `group_ids`, same order): the item, or, for a URL new to its
/// group, the key it takes (`ids::resolve`), with one statement a round.
/// With `lock`, the rows found are locked, in (group, key) order.
fn look_up(
    tx: &mut impl GenericClient,
    batch: &[NewItem],
    group_ids: &[i64],
    lock: bool,
) -> Result<Vec<std::result::Result<Existing, i64>>> {
    let urls: Vec<&str> = batch.iter().map(|i| i.url.as_str()).collect();
    let sql = format!(
        "SELECT i.group_id, i.url_key, i.url, i.id, i.state, i.action, i.lastmod, i.accepted_at, i.next_attempt_at
         FROM items i JOIN unnest($1::bigint[], $2::bigint[]) AS w (group_id, url_key)
             ON i.group_id = w.group_id AND i.url_key = w.url_key
         ORDER BY i.group_id, i.url_key{}",
        if lock { " FOR UPDATE OF i" } else { "" }
    );
    ids::resolve(&urls, group_ids, |wanted| {
        let (groups, keys): (Vec<i64>, Vec<i64>) = wanted.iter().copied().unzip();
        tx.query(&sql, &[&groups, &keys])?
            .iter()
            .map(|r| Ok((r.get(0), r.get(1), r.get(2), existing_row(r, 3)?)))
            .collect()
    })
}

type Params = Vec<Box<dyn pg::types::ToSql + Sync + Send>>;

/// A WHERE clause over `items i JOIN groups g` and its parameters.
fn filter_sql(filter: &ItemFilter, now: DateTime<Utc>) -> (String, Params) {
    // `$1` is "now", named once even when no state needs it (a statement
    // must use every parameter it is given).
    let mut values: Params = vec![Box::new(sec(now))];
    let mut clauses = vec!["$1::timestamptz IS NOT NULL".to_string()];
    if !filter.states.is_empty() {
        let any: Vec<&str> = filter
            .states
            .iter()
            .map(|s| match s {
                StateFilter::Due => "(i.state = 'queued' AND i.next_attempt_at <= $1)",
                StateFilter::Waiting => "(i.state = 'queued' AND i.next_attempt_at > $1)",
                StateFilter::Parked => "i.state = 'parked'",
                StateFilter::InFlight => "i.state = 'in_flight'",
                StateFilter::Accepted => "i.state = 'accepted'",
            })
            .collect();
        clauses.push(format!("({})", any.join(" OR ")));
    }
    if let Some(p) = &filter.property {
        values.push(Box::new(p.clone()));
        clauses.push(format!("g.property = ${}", values.len()));
    }
    if let Some(e) = filter.engine {
        values.push(Box::new(e.as_str().to_string()));
        clauses.push(format!("g.engine = ${}", values.len()));
    }
    if let Some(t) = &filter.target {
        values.push(Box::new(t.clone()));
        clauses.push(format!("g.target = ${}", values.len()));
    }
    if let Some(u) = &filter.url {
        values.push(Box::new(u.clone()));
        clauses.push(format!("i.url = ${}", values.len()));
    }
    (clauses.join(" AND "), values)
}

fn refs(values: &Params) -> Vec<&(dyn pg::types::ToSql + Sync)> {
    values.iter().map(|v| v.as_ref() as &(dyn pg::types::ToSql + Sync)).collect()
}

/// The ids of reservations whose owner is gone, locked (others skip them).
fn stale_reservations(tx: &mut impl GenericClient, now: DateTime<Utc>, me: &Owner, lock: bool) -> Result<Vec<i64>> {
    let sql = format!(
        "SELECT id, host, pid, started, lease_until FROM reservations ORDER BY id{}",
        if lock { " FOR UPDATE SKIP LOCKED" } else { "" }
    );
    let rows = tx.query(&sql, &[])?;
    Ok(rows.iter().filter(|r| !owner_of(r, 1).may_be_alive(me, r.get(4), now)).map(|r| r.get::<_, i64>(0)).collect())
}

impl Ledger for PgLedger {
    fn stale_reservations(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<u64> {
        self.transaction(|tx| Ok(stale_reservations(tx, now, me, false)?.len() as u64))
    }

    fn reconcile(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<Reconciled> {
        let now = sec(now);
        self.transaction(|tx| {
            let stale = stale_reservations(tx, now, me, true)?;
            let mut done = Reconciled::default();
            for id in stale {
                let rows = tx.query(
                    "SELECT id, group_id FROM items WHERE reservation_id = $1 AND state = 'in_flight' ORDER BY id",
                    &[&id],
                )?;
                if let Some(first) = rows.first() {
                    let items: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                    let group: i64 = first.get(1);
                    let request = insert_request(tx, &Recorded::interrupted(group, now, &items))?;
                    tx.execute(
                        "UPDATE items SET state = 'queued', next_attempt_at = $2, reservation_id = NULL,
                             attempts = attempts + 1, last_class = 'transient', last_request_id = $3
                         WHERE reservation_id = $1 AND state = 'in_flight'",
                        &[&id, &now, &request],
                    )?;
                }
                tx.execute("DELETE FROM reservations WHERE id = $1", &[&id])?;
                done.reservations += 1;
                done.items += rows.len() as u64;
            }
            Ok(done)
        })
    }

    fn now(&mut self, now: Now, record: bool) -> Result<LedgerTime> {
        self.transaction(|tx| ledger_time(tx, now.shift, record))
    }

    fn look_up(&mut self, batch: &[NewItem]) -> Result<Vec<Option<Existing>>> {
        self.with_groups(|tx, groups| {
            let mut group_ids = Vec::with_capacity(batch.len());
            let mut last: Option<(&GroupKey, i64)> = None;
            for item in batch {
                let id = match last {
                    Some((key, id)) if *key == item.group => id,
                    // A group the ledger has never seen holds none of them.
                    _ => group_id(tx, groups, &item.group)?.unwrap_or(-1),
                };
                last = Some((&item.group, id));
                group_ids.push(id);
            }
            Ok(look_up(tx, batch, &group_ids, false)?.into_iter().map(|found| found.ok()).collect())
        })
    }

    fn admit(&mut self, batch: &[NewItem], now: DateTime<Utc>, rule: &AdmitRule) -> Result<Vec<Admission>> {
        let now = sec(now);
        let cache = &self.groups;
        let client = self.client.as_mut().expect("a ledger in use has its client");
        let (out, created) = off_runtime(|| retrying(|| admit_once(client, cache, batch, now, rule)))?;
        self.groups.extend(created);
        Ok(out)
    }

    fn unpark_changed(&mut self, group: &GroupKey, fingerprint: &str, now: DateTime<Utc>) -> Result<u64> {
        let now = sec(now);
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(0) };
            Ok(tx.execute(
                "UPDATE items SET state = 'queued', next_attempt_at = $3, streak = 0, streak_started_at = NULL,
                     parked_fingerprint = NULL
                 WHERE group_id = $1 AND state = 'parked' AND parked_fingerprint IS DISTINCT FROM $2",
                &[&group, &fingerprint, &now],
            )?)
        })
    }

    fn stored_groups(&mut self) -> Result<Vec<GroupKey>> {
        self.transaction(|tx| {
            tx.query("SELECT property, engine, target, channel FROM groups ORDER BY property, engine, target", &[])?
                .iter()
                .map(|r| stored_group(r.get(0), r.get(1), r.get(2), r.get(3)))
                .collect()
        })
    }

    fn due_groups(&mut self, now: DateTime<Utc>) -> Result<Vec<GroupKey>> {
        let now = sec(now);
        self.transaction(|tx| {
            tx.query(
                "SELECT property, engine, target, channel FROM groups g
                 WHERE EXISTS (SELECT 1 FROM items WHERE group_id = g.id AND state = 'queued' AND next_attempt_at <= $1)
                 ORDER BY property, engine, target",
                &[&now],
            )?
            .iter()
            .map(|r| stored_group(r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect()
        })
    }

    fn claim(
        &mut self,
        group: &GroupKey,
        spec: &ClaimSpec,
        me: &Owner,
        deferred: &mut dyn FnMut(i64, &str, DateTime<Utc>),
    ) -> Result<Claim> {
        let lease = self.lease;
        let (claim, moved) = self.with_groups(|tx, groups| claim_once(tx, groups, group, spec, me, lease))?;
        for (id, url, at) in &moved {
            deferred(*id, url, *at);
        }
        Ok(claim)
    }

    fn take_units(&mut self, rules: &[RuleWindow], n: u64, now: DateTime<Utc>) -> Result<u64> {
        self.transaction(|tx| {
            let mut sorted: Vec<&RuleWindow> = rules.iter().collect();
            sorted.sort_by(|a, b| (&a.rule, &a.window).cmp(&(&b.rule, &b.window)));
            let mut granted = n;
            for rule in &sorted {
                lock_window(tx, rule)?;
                if let Some(left) = usage_in(tx, rule)?.remaining(rule, now) {
                    granted = granted.min(left);
                }
            }
            if granted > 0 {
                for rule in &sorted {
                    if !reserve(tx, rule, granted, now)? {
                        return Err(LedgerError::Retry);
                    }
                }
            }
            Ok(granted)
        })
    }

    fn record_inspections(&mut self, done: &Inspections) -> Result<()> {
        self.transaction(|tx| {
            // Budget rows first, in rule order, as a claim takes them.
            if done.unused > 0 {
                let mut windows: Vec<&RuleWindow> = done.windows.iter().collect();
                windows.sort_by(|a, b| (&a.rule, &a.window).cmp(&(&b.rule, &b.window)));
                for w in windows {
                    tx.execute(
                        "UPDATE budget_usage SET used = GREATEST(used - $3, 0) WHERE rule = $1 AND window_key = $2",
                        &[&w.rule, &w.window, &(done.unused as i64)],
                    )?;
                }
            }
            let mut blocks: Vec<&Block> = done.blocks.iter().collect();
            blocks.sort_by(|a, b| (&a.rule.rule, &a.rule.window).cmp(&(&b.rule.rule, &b.rule.window)));
            for block in blocks {
                add_usage(tx, &block.rule, 0)?;
                tx.execute(
                    "INSERT INTO blocks (rule, until) VALUES ($1, $2)
                     ON CONFLICT (rule) DO UPDATE SET until = GREATEST(blocks.until, excluded.until)",
                    &[&block.rule.rule, &sec(block.until)],
                )?;
            }
            for (class, answers) in policy::inspections_by_class(done.answers) {
                let last = answers.last().expect("a class with answers");
                tx.execute(
                    "INSERT INTO inspections AS i
                         (property, class, count, last_at, last_reason, last_message, last_hint, last_status)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                     ON CONFLICT (property, class) DO UPDATE SET count = i.count + excluded.count,
                         last_reason = CASE WHEN excluded.last_at >= i.last_at THEN excluded.last_reason
                                            ELSE i.last_reason END,
                         last_message = CASE WHEN excluded.last_at >= i.last_at THEN excluded.last_message
                                             ELSE i.last_message END,
                         last_hint = CASE WHEN excluded.last_at >= i.last_at THEN excluded.last_hint
                                          ELSE i.last_hint END,
                         last_status = CASE WHEN excluded.last_at >= i.last_at THEN excluded.last_status
                                            ELSE i.last_status END,
                         last_at = GREATEST(i.last_at, excluded.last_at)",
                    &[
                        &done.property,
                        &class.as_str(),
                        &(answers.len() as i64),
                        &sec(last.at),
                        &last.reason.to_string(),
                        &last.message,
                        &last.hint,
                        &last.http_status.map(i32::from),
                    ],
                )?;
            }
            Ok(())
        })
    }

    fn inspections(&mut self) -> Result<Vec<InspectionCount>> {
        self.transaction(|tx| {
            let rows = tx.query(
                "SELECT property, class, count, last_at, last_reason, last_message, last_hint, last_status
                 FROM inspections ORDER BY property, class",
                &[],
            )?;
            rows.iter()
                .map(|r| {
                    let (property, class, count, at): (String, String, i64, DateTime<Utc>) =
                        (r.get(0), r.get(1), r.get(2), r.get(3));
                    let (reason, message, hint, status): (String, String, Option<String>, Option<i32>) =
                        (r.get(4), r.get(5), r.get(6), r.get(7));
                    stored_inspection(property, &class, count, at, &reason, message, hint, status)
                })
                .collect()
        })
    }

    fn finish(&mut self, done: &Finish) -> Result<()> {
        let Finish { reservation, answers, blocks, reports, windows } = done;
        self.transaction(|tx| {
            // Budget rows first, in rule order, as a claim takes them (then
            // the items): two transactions never wait for each other in a
            // circle. What the engine did not count goes back, window by
            // window; then the engine's remainders are recorded.
            let mut windows: Vec<&RuleWindow> = windows.iter().collect();
            windows.sort_by(|a, b| (&a.rule, &a.window).cmp(&(&b.rule, &b.window)));
            for w in windows {
                let back = policy::given_back(answers, w);
                if back > 0 {
                    tx.execute(
                        "UPDATE budget_usage SET used = GREATEST(used - $3, 0) WHERE rule = $1 AND window_key = $2",
                        &[&w.rule, &w.window, &(back as i64)],
                    )?;
                }
            }
            let mut reports: Vec<&Remainder> = reports.iter().collect();
            reports.sort_by(|a, b| (&a.window.rule, &a.window.window).cmp(&(&b.window.rule, &b.window.window)));
            for r in reports {
                report_in(tx, &r.window, r.remaining, sec(r.at), Some(*reservation))?;
            }
            let mut blocks: Vec<&Block> = blocks.iter().collect();
            blocks.sort_by(|a, b| (&a.rule.rule, &a.rule.window).cmp(&(&b.rule.rule, &b.rule.window)));
            for block in blocks {
                add_usage(tx, &block.rule, 0)?;
                tx.execute(
                    "INSERT INTO blocks (rule, until) VALUES ($1, $2)
                     ON CONFLICT (rule) DO UPDATE SET until = GREATEST(blocks.until, excluded.until)",
                    &[&block.rule.rule, &sec(block.until)],
                )?;
            }
            for answer in answers.iter().filter(|a| !a.items.is_empty()) {
                let group: i64 = tx.query_one("SELECT group_id FROM items WHERE id = $1", &[&answer.items[0]])?.get(0);
                let (state, next, fingerprint) = match &answer.next {
                    NextStep::Accepted => ("accepted", None, None),
                    NextStep::RetryAt(t) => ("queued", Some(sec(*t)), None),
                    NextStep::Park { fingerprint } => ("parked", None, Some(fingerprint.as_str())),
                };
                let request = insert_request(tx, &Recorded::answer(group, answer))?;
                // Every item the answer names, in one statement.
                tx.execute(
                    "UPDATE items SET
                         state = $2, next_attempt_at = $3, reservation_id = NULL,
                         attempts = attempts + 1,
                         streak = CASE WHEN last_class IS NOT DISTINCT FROM $4 THEN streak + 1 ELSE 1 END,
                         streak_started_at = CASE WHEN last_class IS NOT DISTINCT FROM $4
                                                       AND streak_started_at IS NOT NULL
                                                  THEN streak_started_at ELSE $5 END,
                         last_class = $4,
                         accepted_at = CASE WHEN $2 = 'accepted' THEN $5 ELSE accepted_at END,
                         parked_fingerprint = $6, last_request_id = $7
                     WHERE id = ANY($1)",
                    &[&answer.items, &state, &next, &answer.class.as_str(), &sec(answer.at), &fingerprint, &request],
                )?;
            }
            tx.execute("DELETE FROM reservations WHERE id = $1", &[reservation])?;
            Ok(())
        })
    }

    fn next_due(&mut self, group: &GroupKey) -> Result<Option<DateTime<Utc>>> {
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(None) };
            Ok(tx
                .query_one(
                    "SELECT MIN(next_attempt_at) FROM items WHERE group_id = $1 AND state = 'queued'",
                    &[&group],
                )?
                .get(0))
        })
    }

    fn pace_tat(&mut self, key: &str) -> Result<Option<i64>> {
        // A pace row written with 0 by a claim is one without a time yet.
        self.transaction(|tx| {
            Ok(tx
                .query_opt("SELECT tat_ms FROM pacing WHERE key = $1", &[&key])?
                .map(|r| r.get::<_, i64>(0))
                .filter(|t| *t > 0))
        })
    }

    fn first_use(&mut self, fingerprint: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
        let now = sec(now);
        self.transaction(|tx| {
            tx.execute(
                "INSERT INTO credentials (fingerprint, first_used_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&fingerprint, &now],
            )?;
            Ok(tx.query_one("SELECT first_used_at FROM credentials WHERE fingerprint = $1", &[&fingerprint])?.get(0))
        })
    }

    fn credential_accepted(&mut self, fingerprint: &str) -> Result<()> {
        self.transaction(|tx| {
            tx.execute("DELETE FROM credentials WHERE fingerprint = $1", &[&fingerprint])?;
            Ok(())
        })
    }

    fn usage(&mut self, rule: &RuleWindow) -> Result<Usage> {
        self.transaction(|tx| usage_in(tx, rule))
    }

    fn record_report(&mut self, rule: &RuleWindow, remaining: u64, now: DateTime<Utc>) -> Result<Report> {
        let now = sec(now);
        self.transaction(|tx| report_in(tx, rule, remaining, now, None))
    }

    fn queue_counts(&mut self, group: &GroupKey, now: DateTime<Utc>) -> Result<QueueCounts> {
        let now = sec(now);
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(QueueCounts::default()) };
            // The counts by state are kept; only the due items are counted
            // (one statement: one snapshot).
            let r = tx.query_one(
                "SELECT COALESCE(SUM(n) FILTER (WHERE state = 'queued'), 0)::bigint,
                        COALESCE(SUM(n) FILTER (WHERE state = 'parked'), 0)::bigint,
                        COALESCE(SUM(n) FILTER (WHERE state = 'in_flight'), 0)::bigint,
                        COALESCE(SUM(n) FILTER (WHERE state = 'accepted'), 0)::bigint,
                        (SELECT COUNT(*) FROM items WHERE group_id = $1 AND state = 'queued' AND next_attempt_at <= $2)
                 FROM group_counts WHERE group_id = $1",
                &[&group, &now],
            )?;
            let n = |i: usize| r.get::<_, i64>(i).max(0) as u64;
            let (queued, due) = (n(0), n(4));
            Ok(QueueCounts { due, waiting: queued.saturating_sub(due), parked: n(1), in_flight: n(2), accepted: n(3) })
        })
    }

    fn last_rejection(&mut self, group: &GroupKey) -> Result<Option<AttemptRow>> {
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(None) };
            let sql = format!(
                "SELECT {REQUEST_COLUMNS}, {FIRST_URL} FROM requests r JOIN groups g ON g.id = r.group_id {FIRST_ITEM}
                 WHERE r.group_id = $1 AND r.class <> 'accepted'
                 ORDER BY r.at DESC, r.id DESC LIMIT 1"
            );
            tx.query_opt(&sql, &[&group])?.map(|r| attempt_row(&r, r.get(12), r.get(13))).transpose()
        })
    }

    fn items(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<Vec<ItemRow>> {
        let (clause, values) = filter_sql(filter, now);
        let limit = filter.limit.map_or(String::new(), |n| format!(" LIMIT {n}"));
        let sql = format!(
            "SELECT {ITEM_COLUMNS} FROM {ITEM_FROM} WHERE {clause}
             ORDER BY g.property COLLATE \"C\", g.engine COLLATE \"C\", g.target COLLATE \"C\", i.state COLLATE \"C\",
                 i.next_attempt_at NULLS FIRST, i.id{limit}"
        );
        self.transaction(|tx| tx.query(&sql, &refs(&values))?.iter().map(item_row).collect())
    }

    fn items_by_id(&mut self, ids: &[i64]) -> Result<Vec<ItemRow>> {
        self.transaction(|tx| {
            let sql = format!(
                "SELECT {ITEM_COLUMNS} FROM unnest($1::bigint[]) WITH ORDINALITY AS wanted (id, n)
                     JOIN items i ON i.id = wanted.id JOIN groups g ON g.id = i.group_id
                     LEFT JOIN requests r ON r.id = i.last_request_id
                 ORDER BY wanted.n"
            );
            tx.query(&sql, &[&ids])?.iter().map(item_row).collect()
        })
    }

    fn retry(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<u64> {
        let filter = policy::retry_states(filter);
        let (clause, values) = filter_sql(&filter, now);
        self.transaction(|tx| {
            Ok(tx.execute(
                &format!(
                    "UPDATE items AS i SET state = 'queued', next_attempt_at = $1, streak = 0, streak_started_at = NULL,
                         parked_fingerprint = NULL FROM groups g WHERE g.id = i.group_id AND {clause}"
                ),
                &refs(&values),
            )?)
        })
    }

    fn drop_items(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<u64> {
        let filter = policy::drop_states(filter);
        let (clause, values) = filter_sql(&filter, now);
        self.transaction(|tx| {
            let rows = tx.query(
                &format!(
                    "DELETE FROM items AS i USING groups g WHERE g.id = i.group_id AND {clause}
                     RETURNING i.id, i.group_id, i.url, i.last_request_id IS NOT NULL"
                ),
                &refs(&values),
            )?;
            // A drop removes items, not history: their requests stay, and an
            // item a request names (it has a last one) keeps its URL and id.
            let (mut ids, mut groups, mut keys, mut urls) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for r in rows.iter().filter(|r| r.get::<_, bool>(3)) {
                let url: String = r.get(2);
                ids.push(r.get::<_, i64>(0));
                groups.push(r.get::<_, i64>(1));
                keys.push(url_key(&url));
                urls.push(url);
            }
            tx.execute(
                "INSERT INTO dropped_items (id, group_id, url_key, url, dropped_at)
                 SELECT id, group_id, url_key, url, $5
                 FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[]) AS d (id, group_id, url_key, url)",
                &[&ids, &groups, &keys, &urls, &now],
            )?;
            Ok(rows.len() as u64)
        })
    }

    fn attempts(&mut self, url: Option<&str>, limit: usize) -> Result<Vec<AttemptRow>> {
        let limit = limit as i64;
        self.transaction(|tx| {
            let mut out: Vec<(i64, AttemptRow)> = Vec::new();
            match url {
                Some(u) => {
                    // The URL's item in each group and its items `queue drop`
                    // removed, then the requests that name each.
                    let groups: Vec<i64> = tx.query("SELECT id FROM groups", &[])?.iter().map(|r| r.get(0)).collect();
                    let batch: Vec<NewItem> = groups
                        .iter()
                        .map(|_| NewItem {
                            url: u.to_string(),
                            group: GroupKey::urls("", EngineKind::IndexNow, ""),
                            action: Action::Updated,
                            lastmod: None,
                        })
                        .collect();
                    let found = look_up(tx, &batch, &groups, false)?;
                    for (group, found) in groups.iter().zip(found) {
                        let gone: Vec<i64> = tx
                            .query(
                                "SELECT id FROM dropped_items WHERE group_id = $1 AND url_key = $2 AND url = $3 ORDER BY id",
                                &[group, &url_key(u), &u],
                            )?
                            .iter()
                            .map(|r| r.get(0))
                            .collect();
                        let item = found.ok().map(|item| (item.id, false));
                        for (item, dropped) in item.into_iter().chain(gone.into_iter().map(|id| (id, true))) {
                            let sql = format!(
                                "SELECT {REQUEST_COLUMNS}, r.id, r.first_item, r.items FROM requests r
                                     JOIN groups g ON g.id = r.group_id
                                 WHERE r.group_id = $1 AND r.first_item <= $2 AND r.last_item >= $2"
                            );
                            for r in tx.query(&sql, &[group, &item])? {
                                if ids::named(r.get::<_, i32>(1).into(), r.get(13), r.get(14))?.binary_search(&item).is_ok() {
                                    out.push((r.get(12), attempt_row(&r, u.to_string(), dropped)?));
                                }
                            }
                        }
                    }
                    out.sort_by_key(|(id, a)| std::cmp::Reverse((a.at, *id)));
                    out.truncate(limit as usize);
                }
                None => {
                    let sql = format!(
                        "SELECT {REQUEST_COLUMNS}, {FIRST_URL}, r.id FROM requests r JOIN groups g ON g.id = r.group_id
                             {FIRST_ITEM}
                         ORDER BY r.at DESC, r.id DESC LIMIT $1"
                    );
                    for r in tx.query(&sql, &[&limit])? {
                        out.push((r.get(14), attempt_row(&r, r.get(12), r.get(13))?));
                    }
                }
            }
            out.reverse();
            Ok(out.into_iter().map(|(_, a)| a).collect())
        })
    }

    fn schema_version(&mut self) -> Result<i64> {
        Ok(self.stored_version()?.unwrap_or(0))
    }

    fn export(&mut self, in_flight_ok: bool) -> Result<Dump> {
        self.transaction(|tx| export(tx, in_flight_ok))
    }

    fn import(&mut self, dump: &Dump) -> Result<Copied> {
        self.with_groups(|tx, groups| import(tx, groups, dump))
    }

    // History and monitoring: short read-only queries over the attempts,
    // and the record of `submit` runs (table `submit_runs`, migration 2).

    /// One per URL attempted: the attempts table has a row per item and attempt.
    fn outcome_counts(&mut self) -> Result<Vec<(GroupKey, Class, u64)>> {
        // One per URL a request named: the requests' sizes, summed.
        self.transaction(|tx| {
            tx.query(
                "SELECT g.property, g.engine, g.target, r.class, sum(r.n)::bigint, g.channel
                 FROM requests r JOIN groups g ON g.id = r.group_id
                 GROUP BY g.property, g.engine, g.target, g.channel, r.class",
                &[],
            )?
            .iter()
            .map(|r| {
                let group = stored_group(r.get(0), r.get(1), r.get(2), r.get(5))?;
                Ok((group, stored("requests", "class", r.get(3))?, r.get::<_, i64>(4).max(0) as u64))
            })
            .collect()
        })
    }

    /// The spans as two arrays (starts, ends) unnested with their ordinal,
    /// joined to the requests by time, their sizes summed per group and class.
    fn attempt_history(&mut self, bounds: &[DateTime<Utc>]) -> Result<Vec<SpanCount>> {
        if bounds.len() < 2 {
            return Ok(Vec::new());
        }
        let starts: Vec<DateTime<Utc>> = bounds[..bounds.len() - 1].to_vec();
        let stops: Vec<DateTime<Utc>> = bounds[1..].to_vec();
        self.transaction(|tx| {
            tx.query(
                "SELECT s.n, g.property, g.engine, g.target, r.class, sum(r.n)::bigint, g.channel
                 FROM unnest($1::timestamptz[], $2::timestamptz[]) WITH ORDINALITY AS s (start, stop, n)
                     JOIN requests r ON r.at >= s.start AND r.at < s.stop JOIN groups g ON g.id = r.group_id
                 GROUP BY s.n, g.property, g.engine, g.target, g.channel, r.class",
                &[&starts, &stops],
            )?
            .iter()
            .map(|r| {
                Ok(SpanCount {
                    // WITH ORDINALITY counts from 1.
                    span: (r.get::<_, i64>(0) - 1).max(0) as usize,
                    group: stored_group(r.get(1), r.get(2), r.get(3), r.get(6))?,
                    class: stored("requests", "class", r.get(4))?,
                    urls: r.get::<_, i64>(5).max(0) as u64,
                })
            })
            .collect()
        })
    }

    fn record_run(&mut self, run: &RunRecord) -> Result<()> {
        let (started, ended) = (RunRecord::millis(run.started_at), RunRecord::millis(run.ended_at));
        let code = i32::from(run.exit_code);
        self.transaction(|tx| {
            tx.execute(
                "INSERT INTO submit_runs (host, started_at, ended_at, exit_code) VALUES ($1, $2, $3, $4)",
                &[&run.host, &started, &ended, &code],
            )?;
            Ok(())
        })
    }

    /// The latest row recorded (the highest id), of all or of those that exited 0.
    fn last_run(&mut self, succeeded: bool) -> Result<Option<RunRecord>> {
        let only_ok = if succeeded { "WHERE exit_code = 0" } else { "" };
        let sql =
            format!("SELECT host, started_at, ended_at, exit_code FROM submit_runs {only_ok} ORDER BY id DESC LIMIT 1");
        self.transaction(|tx| {
            Ok(tx.query_opt(&sql, &[])?.map(|r| RunRecord {
                host: r.get(0),
                started_at: r.get(1),
                ended_at: r.get(2),
                exit_code: r.get::<_, i32>(3).clamp(0, 255) as u8,
            }))
        })
    }

    fn unpark_fixed(&mut self, group: &GroupKey, reasons: &[Reason], now: DateTime<Utc>) -> Result<u64> {
        let now = sec(now);
        let texts: Vec<String> = reasons.iter().map(|r| r.to_string()).collect();
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(0) };
            Ok(tx.execute(
                "UPDATE items SET state = 'queued', next_attempt_at = $3, streak = 0, streak_started_at = NULL,
                     parked_fingerprint = NULL
                 WHERE group_id = $1 AND state = 'parked' AND last_request_id IN (
                     SELECT id FROM requests WHERE class = 'misconfigured' AND reason = ANY($2))",
                &[&group, &texts, &now],
            )?)
        })
    }

    fn parked(&mut self) -> Result<Vec<ParkedGroup>> {
        self.transaction(|tx| {
            // Per group and last answer: how many, since when, the latest
            // answer's URL and message, and the reminder kept under its reason.
            let rows = tx.query(
                "SELECT g.property, g.engine, g.target, p.class, p.reason, p.n, p.since, r.message, fi.url, p.url,
                        m.reminded_at, g.channel
                 FROM (SELECT i.group_id, r.class, r.reason, count(*) AS n, min(r.at) AS since,
                              max(r.id) AS latest, min(i.url) AS url
                       FROM items i LEFT JOIN requests r ON r.id = i.last_request_id
                       WHERE i.state = 'parked'
                       GROUP BY i.group_id, r.class, r.reason) p
                 JOIN groups g ON g.id = p.group_id
                 LEFT JOIN requests r ON r.id = p.latest
                 LEFT JOIN items fi ON fi.id = r.first_item
                 LEFT JOIN reminders m ON m.group_id = p.group_id AND m.reason = coalesce(p.reason, 'parked')
                 ORDER BY g.property, g.engine, g.target, p.reason",
                &[],
            )?;
            rows.iter()
                .map(|r| {
                    let class: Option<String> = r.get(3);
                    let reason: Option<String> = r.get(4);
                    Ok(ParkedGroup {
                        group: stored_group(r.get(0), r.get(1), r.get(2), r.get(11))?,
                        reason: stored_last_reason(class.as_deref(), reason.as_deref())?,
                        count: r.get::<_, i64>(5) as u64,
                        since: r.get(6),
                        message: r.get(7),
                        url: r.get::<_, Option<String>>(8).unwrap_or_else(|| r.get(9)),
                        reminded_at: r.get(10),
                    })
                })
                .collect()
        })
    }

    fn record_reminders(&mut self, reminded: &[(GroupKey, String)], at: DateTime<Utc>) -> Result<()> {
        let at = sec(at);
        self.with_groups(|tx, groups| {
            for (group, reason) in reminded {
                let Some(group) = group_id(tx, groups, group)? else { continue };
                tx.execute(
                    "INSERT INTO reminders (group_id, reason, reminded_at) VALUES ($1, $2, $3)
                     ON CONFLICT (group_id, reason) DO UPDATE SET reminded_at = excluded.reminded_at",
                    &[&group, reason, &at],
                )?;
            }
            Ok(())
        })
    }

    fn source_documents(&mut self) -> Result<Vec<SourceDocument>> {
        self.transaction(|tx| source_documents(tx))
    }

    fn record_sitemap_read(&mut self, group: &GroupKey, read: &SitemapRead, at: DateTime<Utc>) -> Result<()> {
        let at = sec(at);
        self.with_groups(|tx, groups| {
            let id = group_id_or_create(tx, groups, group)?;
            // Two runs reading at once: the second waits for the first's marks.
            let before = tx.query_opt(
                "SELECT errors_since, failure_reason, failure_since FROM sitemap_reports WHERE group_id = $1 FOR UPDATE",
                &[&id],
            )?;
            let (marks, failed): (policy::SitemapMarks, Option<String>) = match before {
                Some(r) => (policy::SitemapMarks { errors_since: r.get(0), failure_since: r.get(2) }, r.get(1)),
                None => (policy::SitemapMarks::default(), None),
            };
            let marks = policy::sitemap_marks(&marks, failed.as_deref(), read, at);
            match read {
                SitemapRead::Read(r) => {
                    let big = |n: u64| n.min(i64::MAX as u64) as i64;
                    tx.execute(
                        "INSERT INTO sitemap_reports (group_id, read_at, read_ok_at, listed, submitted, downloaded,
                             pending, errors, warnings, urls, status, errors_since)
                         VALUES ($1, $2, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                         ON CONFLICT (group_id) DO UPDATE SET read_at = excluded.read_at,
                             read_ok_at = excluded.read_ok_at, listed = excluded.listed,
                             submitted = excluded.submitted, downloaded = excluded.downloaded,
                             pending = excluded.pending, errors = excluded.errors, warnings = excluded.warnings,
                             urls = excluded.urls, status = excluded.status, errors_since = excluded.errors_since,
                             failure_class = NULL, failure_reason = NULL, failure_message = NULL,
                             failure_hint = NULL, failure_status = NULL, failure_since = NULL",
                        &[
                            &id,
                            &at,
                            &r.listed,
                            &opt_sec(r.submitted),
                            &opt_sec(r.downloaded),
                            &r.pending,
                            &big(r.errors),
                            &big(r.warnings),
                            &r.urls.map(big),
                            &r.status,
                            &opt_sec(marks.errors_since),
                        ],
                    )?;
                }
                SitemapRead::Failed(f) => {
                    tx.execute(
                        "INSERT INTO sitemap_reports (group_id, read_at, failure_class, failure_reason,
                             failure_message, failure_hint, failure_status, failure_since)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                         ON CONFLICT (group_id) DO UPDATE SET read_at = excluded.read_at,
                             failure_class = excluded.failure_class, failure_reason = excluded.failure_reason,
                             failure_message = excluded.failure_message, failure_hint = excluded.failure_hint,
                             failure_status = excluded.failure_status, failure_since = excluded.failure_since",
                        &[
                            &id,
                            &at,
                            &f.class.as_str(),
                            &f.reason.to_string(),
                            &f.message,
                            &f.hint,
                            &f.http_status.map(i32::from),
                            &opt_sec(marks.failure_since),
                        ],
                    )?;
                }
            }
            Ok(())
        })
    }

    fn sitemap_states(&mut self) -> Result<Vec<SitemapState>> {
        self.transaction(|tx| {
            let mut reminded: HashMap<i64, Vec<(String, DateTime<Utc>)>> = HashMap::new();
            for r in tx.query(
                "SELECT m.group_id, m.reason, m.reminded_at FROM reminders m JOIN groups g ON g.id = m.group_id
                 WHERE g.channel = 'sitemaps' ORDER BY m.reason COLLATE \"C\"",
                &[],
            )? {
                reminded.entry(r.get(0)).or_default().push((r.get(1), r.get(2)));
            }
            let rows = tx.query(
                "SELECT g.id, g.property, g.engine, g.target, g.channel, i.state, i.accepted_at, s.read_at,
                     s.read_ok_at, s.listed, s.submitted, s.downloaded, s.pending, s.errors, s.warnings, s.urls,
                     s.status, s.errors_since, s.failure_class, s.failure_reason, s.failure_message, s.failure_hint,
                     s.failure_status, s.failure_since
                 FROM groups g JOIN items i ON i.group_id = g.id LEFT JOIN sitemap_reports s ON s.group_id = g.id
                 WHERE g.channel = 'sitemaps'
                 ORDER BY g.property COLLATE \"C\", g.engine COLLATE \"C\", g.target COLLATE \"C\", i.id",
                &[],
            )?;
            rows.iter()
                .map(|r| {
                    let id: i64 = r.get(0);
                    let row = StoredSitemap {
                        group: stored_group(r.get(1), r.get(2), r.get(3), r.get(4))?,
                        item: r.get(5),
                        submitted_at: r.get(6),
                        read_at: r.get(7),
                        read_ok_at: r.get(8),
                        listed: r.get(9),
                        submitted: r.get(10),
                        downloaded: r.get(11),
                        pending: r.get(12),
                        errors: r.get(13),
                        warnings: r.get(14),
                        urls: r.get(15),
                        status: r.get(16),
                        errors_since: r.get(17),
                        failure_class: r.get(18),
                        failure_reason: r.get(19),
                        failure_message: r.get(20),
                        failure_hint: r.get(21),
                        failure_status: r.get::<_, Option<i32>>(22).map(i64::from),
                        failure_since: r.get(23),
                    };
                    row.state(reminded.remove(&id).unwrap_or_default())
                })
                .collect()
        })
    }

    fn record_source_documents(&mut self, documents: &[SourceDocument]) -> Result<Vec<SourceDocument>> {
        self.transaction(|tx| {
            // Two runs reading the same new body agree on when it changed:
            // the second waits here for the first, then finds its digest.
            tx.batch_execute("LOCK TABLE sources IN SHARE ROW EXCLUSIVE MODE")?;
            let urls: Vec<&str> = documents.iter().map(|d| d.url.as_str()).collect();
            let stored: HashMap<String, (String, DateTime<Utc>)> = tx
                .query("SELECT url, digest, changed_at FROM sources WHERE url = ANY($1)", &[&urls])?
                .iter()
                .map(|r| (r.get(0), (r.get(1), r.get(2))))
                .collect();
            let documents = policy::kept_changes(documents, |url| stored.get(url).map(|(d, at)| (d.as_str(), *at)));
            store_source_documents(tx, &documents, false)?;
            Ok(documents)
        })
    }
}

fn export(tx: &mut Transaction<'_>, in_flight_ok: bool) -> Result<Dump> {
    // A consistent snapshot of every table.
    tx.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")?;
    let in_flight: i64 = tx.query_one("SELECT COUNT(*) FROM reservations", &[])?.get(0);
    if in_flight > 0 && !in_flight_ok {
        return Err(in_flight_error(in_flight));
    }
    let mut dump = Dump::default();
    let mut item_index = HashMap::new();
    let mut last_request = Vec::new();
    for r in tx.query(
        "SELECT i.id, i.url, g.property, g.engine, g.target, i.state, i.action, i.lastmod, i.next_attempt_at,
             i.enqueued_at, i.attempts, i.last_class, i.streak, i.streak_started_at, i.accepted_at,
             i.parked_fingerprint, i.last_request_id, g.channel
         FROM items i JOIN groups g ON g.id = i.group_id ORDER BY i.id",
        &[],
    )? {
        item_index.insert(r.get::<_, i64>(0), dump.items.len());
        last_request.push(r.get::<_, Option<i64>>(16));
        dump.items.push(DumpItem {
            url: r.get(1),
            group: stored_group(r.get(2), r.get(3), r.get(4), r.get(17))?,
            state: stored("items", "state", r.get(5))?,
            action: stored("items", "action", r.get(6))?,
            lastmod: r.get(7),
            next_attempt_at: r.get(8),
            enqueued_at: r.get(9),
            attempts: r.get::<_, i32>(10) as u32,
            last_class: stored_opt("items", "last_class", r.get(11))?,
            streak: r.get::<_, i32>(12) as u32,
            streak_started_at: r.get(13),
            accepted_at: r.get(14),
            parked_fingerprint: r.get(15),
            last_request: None,
        });
    }
    let mut dropped_index = HashMap::new();
    for r in tx.query(
        "SELECT d.id, d.url, g.property, g.engine, g.target, d.dropped_at, g.channel
         FROM dropped_items d JOIN groups g ON g.id = d.group_id ORDER BY d.id",
        &[],
    )? {
        dropped_index.insert(r.get::<_, i64>(0), dump.dropped.len());
        dump.dropped.push(DumpDropped {
            url: r.get(1),
            group: stored_group(r.get(2), r.get(3), r.get(4), r.get(6))?,
            dropped_at: r.get(5),
        });
    }
    let mut request_index = HashMap::new();
    for r in tx.query(
        "SELECT r.id, g.property, g.engine, g.target, r.at, r.class, r.reason, r.message, r.http_status, r.body,
             r.retry_at, r.n, r.first_item, r.items, g.channel
         FROM requests r JOIN groups g ON g.id = r.group_id ORDER BY r.at, r.id",
        &[],
    )? {
        let named = ids::named(r.get::<_, i32>(11).into(), r.get(12), r.get(13))?;
        let items: Vec<usize> = named.iter().filter_map(|id| item_index.get(id).copied()).collect();
        let dropped: Vec<usize> = named.iter().filter_map(|id| dropped_index.get(id).copied()).collect();
        if items.is_empty() && dropped.is_empty() {
            continue;
        }
        request_index.insert(r.get::<_, i64>(0), dump.requests.len());
        dump.requests.push(DumpRequest {
            group: stored_group(r.get(1), r.get(2), r.get(3), r.get(14))?,
            at: r.get(4),
            class: stored("requests", "class", r.get(5))?,
            reason: stored_reason(stored("requests", "class", r.get(5))?, r.get(6))?,
            message: r.get(7),
            response: StoredResponse { http_status: r.get::<_, Option<i32>>(8).map(|s| s as u16), body: r.get(9) },
            retry_at: r.get(10),
            items,
            dropped,
        });
    }
    for (item, request) in dump.items.iter_mut().zip(last_request) {
        item.last_request = request.and_then(|r| request_index.get(&r).copied());
    }
    dump.usage = tx
        .query(
            "SELECT rule, window_key, period, used, limit_value, resets_at, reported_at, reported_remaining
             FROM budget_usage ORDER BY rule COLLATE \"C\", window_key COLLATE \"C\"",
            &[],
        )?
        .iter()
        .map(|r| DumpUsage {
            rule: r.get(0),
            window: r.get(1),
            period: r.get(2),
            used: r.get::<_, i64>(3).max(0) as u64,
            limit: r.get::<_, Option<i64>>(4).map(|l| l.max(0) as u64),
            resets_at: r.get(5),
            reported_at: r.get(6),
            reported_remaining: r.get::<_, Option<i64>>(7).map(|l| l.max(0) as u64),
        })
        .collect();
    dump.blocks =
        tx.query("SELECT rule, until FROM blocks ORDER BY rule", &[])?.iter().map(|r| (r.get(0), r.get(1))).collect();
    dump.pacing =
        tx.query("SELECT key, tat_ms FROM pacing ORDER BY key", &[])?.iter().map(|r| (r.get(0), r.get(1))).collect();
    dump.credentials = tx
        .query("SELECT fingerprint, first_used_at FROM credentials ORDER BY fingerprint", &[])?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    dump.latest_run = tx.query_opt("SELECT latest_now FROM runs WHERE id = 1", &[])?.map(|r| r.get(0));
    for r in tx.query(
        "SELECT g.property, g.engine, g.target, m.reason, m.reminded_at, g.channel
         FROM reminders m JOIN groups g ON g.id = m.group_id ORDER BY g.property, g.engine, g.target, m.reason",
        &[],
    )? {
        dump.reminders.push((stored_group(r.get(0), r.get(1), r.get(2), r.get(5))?, r.get(3), r.get(4)));
    }
    dump.sources = source_documents(tx)?;
    Ok(dump)
}

/// The sitemaps read for sources, by URL.
fn source_documents(tx: &mut impl GenericClient) -> Result<Vec<SourceDocument>> {
    tx.query(
        "SELECT url, etag, last_modified, digest, kind, routes, fetched_at, changed_at FROM sources ORDER BY url",
        &[],
    )?
    .iter()
    .map(|r| {
        Ok(SourceDocument {
            url: r.get(0),
            etag: r.get(1),
            last_modified: r.get(2),
            digest: r.get(3),
            kind: stored("sources", "kind", r.get(4))?,
            routes: r.get(5),
            fetched_at: r.get(6),
            changed_at: r.get(7),
        })
    })
    .collect()
}

/// Keeps sitemaps read, replacing what was kept of each URL (with `later`,
/// only by a later read: a copy merges).
fn store_source_documents(tx: &mut impl GenericClient, documents: &[SourceDocument], later: bool) -> Result<()> {
    let only = if later { " WHERE excluded.fetched_at >= sources.fetched_at" } else { "" };
    let sql = format!(
        "INSERT INTO sources (url, etag, last_modified, digest, kind, routes, fetched_at, changed_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, last_modified = excluded.last_modified,
             digest = excluded.digest, kind = excluded.kind, routes = excluded.routes,
             fetched_at = excluded.fetched_at, changed_at = excluded.changed_at{only}"
    );
    for d in documents {
        tx.execute(
            &sql,
            &[
                &d.url,
                &d.etag,
                &d.last_modified,
                &d.digest,
                &d.kind.as_str(),
                &d.routes,
                &sec(d.fetched_at),
                &sec(d.changed_at),
            ],
        )?;
    }
    Ok(())
}

fn import(tx: &mut Transaction<'_>, cache: &HashMap<GroupKey, i64>, dump: &Dump) -> Result<Copied> {
    let mut copied = Copied::default();
    let mut groups: HashMap<GroupKey, i64> = HashMap::new();
    let mut group_of = |tx: &mut Transaction<'_>, key: &GroupKey| -> Result<i64> {
        if let Some(id) = groups.get(key) {
            return Ok(*id);
        }
        let id = group_id_or_create(tx, cache, key)?;
        groups.insert(key.clone(), id);
        Ok(id)
    };
    // Each item by its group and URL: updated to the dump's state (unless in
    // flight here), or inserted.
    let mut item_groups = Vec::with_capacity(dump.items.len());
    for item in &dump.items {
        item_groups.push(group_of(tx, &item.group)?);
    }
    let batch: Vec<NewItem> = dump
        .items
        .iter()
        .map(|i| NewItem { url: i.url.clone(), group: i.group.clone(), action: i.action, lastmod: i.lastmod })
        .collect();
    let found = look_up(tx, &batch, &item_groups, true)?;
    let insert = tx.prepare(
        "INSERT INTO items (group_id, url_key, url, state, action, lastmod, next_attempt_at, enqueued_at, attempts,
             last_class, streak, streak_started_at, accepted_at, parked_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id",
    )?;
    let update = tx.prepare(
        "UPDATE items SET state = $2, action = $3, lastmod = $4, next_attempt_at = $5, enqueued_at = $6,
             attempts = $7, last_class = $8, streak = $9, streak_started_at = $10, accepted_at = $11,
             parked_fingerprint = $12
         WHERE id = $1 AND state <> 'in_flight'",
    )?;
    let mut ids = Vec::with_capacity(dump.items.len());
    // Items in flight here keep what they have.
    let mut written = Vec::with_capacity(dump.items.len());
    for ((item, found), group) in dump.items.iter().zip(found).zip(item_groups) {
        let (attempts, streak) = (item.attempts as i32, item.streak as i32);
        let class = item.last_class.map(|c| c.as_str());
        let values: [&(dyn pg::types::ToSql + Sync); 11] = [
            &item.state.as_str(),
            &item.action.as_str(),
            &item.lastmod,
            &item.next_attempt_at,
            &item.enqueued_at,
            &attempts,
            &class,
            &streak,
            &item.streak_started_at,
            &item.accepted_at,
            &item.parked_fingerprint,
        ];
        match found {
            Ok(existing) => {
                let mut all: Vec<&(dyn pg::types::ToSql + Sync)> = vec![&existing.id];
                all.extend_from_slice(&values);
                copied.items += tx.execute(&update, &all)?;
                ids.push(existing.id);
                written.push(existing.state != ItemState::InFlight);
            }
            Err(key) => {
                let mut all: Vec<&(dyn pg::types::ToSql + Sync)> = vec![&group, &key, &item.url];
                all.extend_from_slice(&values);
                ids.push(tx.query_one(&insert, &all)?.get(0));
                copied.items += 1;
                written.push(true);
            }
        }
    }
    // Dropped items: the same group, URL and time of the drop, or new (an
    // id from the items' sequence).
    let mut dropped_ids = Vec::with_capacity(dump.dropped.len());
    for d in &dump.dropped {
        let group = group_of(tx, &d.group)?;
        let key = url_key(&d.url);
        let same = tx.query_opt(
            "SELECT id FROM dropped_items WHERE group_id = $1 AND url_key = $2 AND url = $3 AND dropped_at = $4",
            &[&group, &key, &d.url, &d.dropped_at],
        )?;
        let id: i64 = match same {
            Some(row) => row.get(0),
            None => tx
                .query_one(
                    "INSERT INTO dropped_items (id, group_id, url_key, url, dropped_at)
                     VALUES (nextval(pg_get_serial_sequence('items', 'id')), $1, $2, $3, $4) RETURNING id",
                    &[&group, &key, &d.url, &d.dropped_at],
                )?
                .get(0),
        };
        dropped_ids.push(id);
    }
    // Requests the ledger does not have yet (the same group, time, outcome
    // and items).
    let mut request_ids = Vec::with_capacity(dump.requests.len());
    for r in &dump.requests {
        let group = group_of(tx, &r.group)?;
        let mut items: Vec<i64> =
            r.items.iter().map(|&i| ids[i]).chain(r.dropped.iter().map(|&i| dropped_ids[i])).collect();
        items.sort_unstable();
        let mut same = None;
        for row in tx.query(
            "SELECT id, n, first_item, items FROM requests WHERE group_id = $1 AND at = $2 AND class = $3
                 AND reason = $4 AND message = $5 AND retry_at IS NOT DISTINCT FROM $6",
            &[&group, &r.at, &r.class.as_str(), &r.reason.to_string(), &r.message, &r.retry_at],
        )? {
            if ids::named(row.get::<_, i32>(1).into(), row.get(2), row.get(3))? == items {
                same = Some(row.get::<_, i64>(0));
            }
        }
        let id = match same {
            Some(id) => id,
            None => {
                copied.attempts += 1;
                insert_request(tx, &Recorded::copied(group, r, &items))?
            }
        };
        request_ids.push(id);
    }
    let (pointed, pointers): (Vec<i64>, Vec<i64>) = dump
        .items
        .iter()
        .zip(&ids)
        .zip(&written)
        .filter_map(|((item, id), written)| item.last_request.filter(|_| *written).map(|r| (*id, request_ids[r])))
        .unzip();
    tx.execute(
        "UPDATE items SET last_request_id = p.request FROM unnest($1::bigint[], $2::bigint[]) AS p (id, request)
         WHERE items.id = p.id",
        &[&pointed, &pointers],
    )?;
    for u in &dump.usage {
        tx.execute(
            "INSERT INTO budget_usage AS b (rule, window_key, period, used, limit_value, resets_at, reported_at,
                 reported_remaining)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (rule, window_key) DO UPDATE SET used = GREATEST(b.used, excluded.used),
                 limit_value = excluded.limit_value, resets_at = excluded.resets_at,
                 reported_at = excluded.reported_at, reported_remaining = excluded.reported_remaining",
            &[
                &u.rule,
                &u.window,
                &u.period,
                &(u.used as i64),
                &u.limit.map(|l| l as i64),
                &u.resets_at,
                &u.reported_at,
                &u.reported_remaining.map(|r| r as i64),
            ],
        )?;
        copied.budget_windows += 1;
    }
    for (rule, until) in &dump.blocks {
        tx.execute(
            "INSERT INTO blocks (rule, until) VALUES ($1, $2)
             ON CONFLICT (rule) DO UPDATE SET until = GREATEST(blocks.until, excluded.until)",
            &[rule, until],
        )?;
    }
    for (key, tat) in &dump.pacing {
        tx.execute(
            "INSERT INTO pacing (key, tat_ms) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET tat_ms = GREATEST(pacing.tat_ms, excluded.tat_ms)",
            &[key, tat],
        )?;
    }
    for (fingerprint, at) in &dump.credentials {
        tx.execute(
            "INSERT INTO credentials (fingerprint, first_used_at) VALUES ($1, $2)
             ON CONFLICT (fingerprint) DO UPDATE SET first_used_at = LEAST(credentials.first_used_at, excluded.first_used_at)",
            &[fingerprint, at],
        )?;
    }
    for (group, reason, at) in &dump.reminders {
        let group = group_of(tx, group)?;
        tx.execute(
            "INSERT INTO reminders (group_id, reason, reminded_at) VALUES ($1, $2, $3)
             ON CONFLICT (group_id, reason) DO UPDATE SET reminded_at = GREATEST(reminders.reminded_at, excluded.reminded_at)",
            &[&group, reason, &sec(*at)],
        )?;
    }
    store_source_documents(tx, &dump.sources, true)?;
    if let Some(latest) = dump.latest_run {
        tx.execute(
            "INSERT INTO runs (id, latest_now) VALUES (1, $1)
             ON CONFLICT (id) DO UPDATE SET latest_now = GREATEST(runs.latest_now, excluded.latest_now)",
            &[&latest],
        )?;
    }
    Ok(copied)
}

/// Groups a transaction created, with their ids.
type CreatedGroups = Vec<(GroupKey, i64)>;

/// One attempt at admitting a batch, in one transaction: the groups, a
/// lookup of every URL (its rows locked, in (group, key) order, so that two
/// runners admitting overlapping lists wait for each other, never
/// deadlock), `policy::admit` for each, then one statement for the new
/// items, one per action for the requeued, one for the updated. A URL
/// another runner inserted meanwhile runs the whole transaction again.
fn admit_once(
    client: &mut Client,
    cache: &HashMap<GroupKey, i64>,
    batch: &[NewItem],
    now: DateTime<Utc>,
    rule: &AdmitRule,
) -> Result<(Vec<Admission>, CreatedGroups)> {
    let mut tx = client.transaction()?;
    let mut ids: HashMap<GroupKey, i64> = HashMap::new();
    let mut group_ids = Vec::with_capacity(batch.len());
    let mut last: Option<(&GroupKey, i64)> = None;
    for item in batch {
        let group = match (last, ids.get(&item.group)) {
            (Some((key, id)), _) if *key == item.group => id,
            (_, Some(id)) => *id,
            (_, None) => {
                let id = group_id_or_create(&mut tx, cache, &item.group)?;
                ids.insert(item.group.clone(), id);
                id
            }
        };
        last = Some((&item.group, group));
        group_ids.push(group);
    }
    let found = look_up(&mut tx, batch, &group_ids, true)?;
    let plan = AdmitPlan::new(batch, &group_ids, &found, rule, now);
    let fresh = &plan.inserts;
    let groups: Vec<i64> = fresh.iter().map(|f| f.1).collect();
    let keys: Vec<i64> = fresh.iter().map(|f| f.2).collect();
    let urls: Vec<&str> = fresh.iter().map(|f| batch[f.0].url.as_str()).collect();
    let new_actions: Vec<&str> = fresh.iter().map(|f| batch[f.0].action.as_str()).collect();
    let new_lastmods: Vec<Option<DateTime<Utc>>> = fresh.iter().map(|f| opt_sec(batch[f.0].lastmod)).collect();
    let inserted: HashMap<(i64, i64), i64> = tx
        .query(
            "INSERT INTO items (group_id, url_key, url, action, lastmod, state, next_attempt_at, enqueued_at)
             SELECT t.group_id, t.url_key, t.url, t.action, t.lastmod, 'queued', $6, $6
             FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[]) WITH ORDINALITY
                 AS t (group_id, url_key, url, action, lastmod, n)
             ORDER BY t.n
             ON CONFLICT DO NOTHING RETURNING group_id, url_key, id",
            &[&groups, &keys, &urls, &new_actions, &new_lastmods, &now],
        )?
        .iter()
        .map(|r| ((r.get(0), r.get(1)), r.get(2)))
        .collect();
    if inserted.len() != fresh.len() {
        // Another runner admitted some of these URLs meanwhile: decide again.
        return Err(LedgerError::Retry);
    }
    let new_ids: Vec<i64> = fresh.iter().map(|(_, group, key)| inserted[&(*group, *key)]).collect();
    for ((_, action, due), ids) in &plan.requeued {
        tx.execute(
            "UPDATE items SET state = 'queued', action = $2, next_attempt_at = $4, enqueued_at = $3, streak = 0,
                 streak_started_at = NULL WHERE id = ANY($1)",
            &[ids, &action.as_str(), &now, &sec(*due)],
        )?;
    }
    if !plan.updates.is_empty() {
        let updated: Vec<i64> = plan.updates.iter().map(|u| u.0).collect();
        let actions: Vec<&str> = plan.updates.iter().map(|u| u.1.as_str()).collect();
        let lastmods: Vec<Option<DateTime<Utc>>> = plan.updates.iter().map(|u| opt_sec(u.2)).collect();
        tx.execute(
            "UPDATE items SET action = u.action, lastmod = u.lastmod
             FROM unnest($1::bigint[], $2::text[], $3::timestamptz[]) AS u (id, action, lastmod) WHERE items.id = u.id",
            &[&updated, &actions, &lastmods],
        )?;
    }
    let out = plan.admissions(&new_ids, now);
    tx.commit()?;
    let created = ids.into_iter().filter(|(key, _)| !cache.contains_key(key)).collect();
    Ok((out, created))
}

/// Due items a claim moved to when budget frees up: id, URL, time.
type Deferred = Vec<(i64, String, DateTime<Utc>)>;

/// One claim, in the caller's transaction. Returns the claim and the items
/// deferred (told to the caller once the transaction has committed).
fn claim_once(
    tx: &mut Transaction<'_>,
    cache: &HashMap<GroupKey, i64>,
    group: &GroupKey,
    spec: &ClaimSpec,
    me: &Owner,
    lease: TimeDelta,
) -> Result<(Claim, Deferred)> {
    let ClaimSpec { windows, max_items, pace, now } = *spec;
    let now = ledger_time(tx, now.shift, true)?.now;
    let rules = windows.at(now);
    let rules = &rules[..];
    let now_s = sec(now);
    let mut claim = Claim { now, windows: rules.to_vec(), ..Claim::default() };
    let mut deferred = Vec::new();
    let Some(group) = group_id(tx, cache, group)? else { return Ok((claim, deferred)) };
    // Lock the rule windows (in one order for every runner), then read them.
    let mut sorted: Vec<&RuleWindow> = rules.iter().collect();
    sorted.sort_by(|a, b| (&a.rule, &a.window).cmp(&(&b.rule, &b.window)));
    for rule in &sorted {
        lock_window(tx, rule)?;
    }
    let usages = rules.iter().map(|r| usage_in(tx, r)).collect::<Result<Vec<_>>>()?;
    let pacing = match pace {
        Some(p) => {
            tx.execute("INSERT INTO pacing (key, tat_ms) VALUES ($1, 0) ON CONFLICT DO NOTHING", &[&p.key])?;
            let tat: i64 = tx.query_one("SELECT tat_ms FROM pacing WHERE key = $1 FOR UPDATE", &[&p.key])?.get(0);
            Some(PaceState::new(p, now, (tat > 0).then_some(tat), rules))
        }
        None => None,
    };
    // Due items are counted only as far as the plan can tell apart: past the
    // budget and the batch, more makes no difference.
    let budget = rules.iter().zip(&usages).filter_map(|(r, u)| u.remaining(r, now)).min();
    let cap = budget.map_or(max_items, |b| (b as usize).max(max_items)).saturating_add(1);
    let due_count: i64 = tx
        .query_one(
            "SELECT COUNT(*) FROM (SELECT 1 FROM items WHERE group_id = $1 AND state = 'queued' AND next_attempt_at <= $2
                 LIMIT $3) AS due",
            &[&group, &now_s, &(cap as i64)],
        )?
        .get(0);
    let plan = ClaimPlan::new(rules, &usages, due_count.max(0) as usize, max_items, pacing.as_ref(), now);
    // Due items another runner holds are skipped, never waited for.
    let due = "SELECT id FROM items WHERE group_id = $1 AND state = 'queued' AND next_attempt_at <= $2";
    if plan.take > 0 {
        let reservation: i64 = tx
            .query_one(
                "INSERT INTO reservations (host, pid, started, created_at, lease_until, units)
                 VALUES ($1, $2, $3, $4, $4, 0) RETURNING id",
                &[&me.host, &(me.pid as i64), &(me.started as i64), &now_s],
            )?
            .get(0);
        // The first `take` due items, in order, marked in flight: one statement.
        let rows = tx.query(
            &format!(
                "UPDATE items SET state = 'in_flight', reservation_id = $3
                 WHERE id IN ({due} ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
                 RETURNING id, url, attempts, last_class, streak, streak_started_at, action, next_attempt_at"
            ),
            &[&group, &now_s, &reservation, &(plan.take as i64)],
        )?;
        let mut taken = Vec::with_capacity(rows.len());
        for r in &rows {
            let item = ClaimedItem {
                id: r.get(0),
                url: r.get(1),
                action: stored("items", "action", r.get(6))?,
                attempts: r.get::<_, i32>(2) as u32,
                last_class: stored_opt("items", "last_class", r.get(3))?,
                streak: r.get::<_, i32>(4) as u32,
                streak_started_at: r.get(5),
            };
            taken.push((r.get::<_, Option<DateTime<Utc>>>(7), item));
        }
        taken.sort_by_key(|(at, item)| (*at, item.id));
        claim.items = taken.into_iter().map(|(_, item)| item).collect();
        if claim.items.is_empty() {
            // Other runners hold every due item: nothing to send.
            tx.execute("DELETE FROM reservations WHERE id = $1", &[&reservation])?;
        } else {
            claim.reservation = Some(reservation);
        }
    }
    // The next due items wait for their paced slot, each its own.
    let paced = plan.paced_until.saturating_sub(plan.take);
    if let (Some(p), true) = (&pacing, paced > 0) {
        let rows = tx.query(
            "SELECT id, url FROM items WHERE group_id = $1 AND state = 'queued' AND next_attempt_at <= $2
             ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED",
            &[&group, &now_s, &(paced as i64)],
        )?;
        for (position, r) in rows.iter().enumerate() {
            claim.paced.push((r.get(0), r.get(1), p.estimate(plan.take + position)));
        }
    }
    // The rest wait until the budget frees up: one statement.
    if let Some(t) = plan.retry_at {
        let paced_ids: Vec<i64> = claim.paced.iter().map(|p| p.0).collect();
        for r in tx.query(
            &format!(
                "UPDATE items SET next_attempt_at = $3
                 WHERE id IN ({due} AND id <> ALL($4) FOR UPDATE SKIP LOCKED) RETURNING id, url"
            ),
            &[&group, &now_s, &sec(t), &paced_ids],
        )? {
            deferred.push((r.get(0), r.get(1), t));
        }
        claim.deferred = deferred.len() as u64;
    }
    if !claim.paced.is_empty() {
        let ids: Vec<i64> = claim.paced.iter().map(|p| p.0).collect();
        let at: Vec<DateTime<Utc>> =
            claim.paced.iter().map(|(_, _, at)| DateTime::from_timestamp(ts_ceil(*at), 0).unwrap_or(*at)).collect();
        tx.execute(
            "UPDATE items SET next_attempt_at = moved.at FROM unnest($1::bigint[], $2::timestamptz[]) AS moved (id, at)
             WHERE items.id = moved.id",
            &[&ids, &at],
        )?;
    }
    if let (Some(mut p), Some(pace)) = (pacing, pace) {
        claim.slots = (0..claim.items.len()).map(|_| p.next_slot()).collect();
        tx.execute("UPDATE pacing SET tat_ms = $2 WHERE key = $1", &[&pace.key, &p.tat_ms()])?;
    }
    claim.retry_at = plan.retry_at;
    if let Some(reservation) = claim.reservation {
        let units = claim.items.len() as u64;
        for rule in &sorted {
            // The windows are locked and were read above: this cannot fail
            // unless the ledger was changed behind the locks.
            if !reserve(tx, rule, units, now)? {
                return Err(LedgerError::Invalid(format!("the budget of {} changed during a claim", rule.rule)));
            }
            tx.execute(
                "INSERT INTO reservation_rules (reservation_id, rule, window_key, units) VALUES ($1, $2, $3, $4)",
                &[&reservation, &rule.rule, &rule.window, &(units as i64)],
            )?;
        }
        tx.execute(
            "UPDATE reservations SET lease_until = $2, units = $3 WHERE id = $1",
            &[&reservation, &sec(lease_until(now, &claim.slots, lease)), &(units as i64)],
        )?;
    }
    Ok((claim, deferred))
}

fn lock_window(tx: &mut impl GenericClient, rule: &RuleWindow) -> Result<()> {
    add_usage(tx, rule, 0)?;
    tx.query_one(
        "SELECT used FROM budget_usage WHERE rule = $1 AND window_key = $2 FOR UPDATE",
        &[&rule.rule, &rule.window],
    )?;
    Ok(())
}

/// The ledger's clock: the database server's (shifted like this machine's
/// by `INDEXQ_NOW`), never earlier than the latest instant recorded; with
/// `record`, recorded as the latest (the row locked until commit, so that
/// claims see each other's instants in order).
fn ledger_time(tx: &mut impl GenericClient, shift: TimeDelta, record: bool) -> Result<LedgerTime> {
    let server: DateTime<Utc> = tx.query_one("SELECT clock_timestamp()", &[])?.get(0);
    let clock = server + shift;
    let lock = if record { " FOR UPDATE" } else { "" };
    let latest: Option<DateTime<Utc>> =
        tx.query_opt(&format!("SELECT latest_now FROM runs WHERE id = 1{lock}"), &[])?.map(|r| r.get(0));
    let now = ledger_now(clock, latest);
    if record && latest.is_none_or(|l| sec(now) > l) {
        tx.execute(
            "INSERT INTO runs (id, latest_now) VALUES (1, $1)
             ON CONFLICT (id) DO UPDATE SET latest_now = GREATEST(runs.latest_now, excluded.latest_now)",
            &[&sec(now)],
        )?;
    }
    Ok(LedgerTime { now, latest, clock })
}

/// The password for `url` in the pgpass file (`$PGPASSFILE`, else
/// `~/.pgpass`), as libpq reads it: host, port, database and user must
/// match; a file others may read is ignored with a warning.
pub fn pgpass_password(url: &str) -> Option<String> {
    let path = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".pgpass")))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if std::fs::metadata(&path).ok()?.permissions().mode() & 0o077 != 0 {
            tracing::warn!(file = %path.display(), "ignoring a pgpass file that others may read (chmod 0600)");
            return None;
        }
    }
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed.host_str().unwrap_or("localhost").to_string();
    let port = parsed.port().unwrap_or(5432).to_string();
    let database = parsed.path().trim_start_matches('/').to_string();
    let user = match parsed.username() {
        "" => std::env::var("PGUSER").or_else(|_| std::env::var("USER")).unwrap_or_default(),
        u => u.to_string(),
    };
    let database = if database.is_empty() { user.clone() } else { database };
    let wanted = [host, port, database, user];
    std::fs::read_to_string(&path).ok()?.lines().find_map(|line| pgpass_line(line, &wanted))
}

/// The password of one pgpass line if its four fields match `wanted`.
fn pgpass_line(line: &str, wanted: &[String; 4]) -> Option<String> {
    if line.starts_with('#') || line.trim().is_empty() {
        return None;
    }
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut()?.push(chars.next().unwrap_or('\\')),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut()?.push(c),
        }
    }
    if fields.len() != 5 {
        return None;
    }
    let matches = fields[..4].iter().zip(wanted).all(|(field, want)| field == "*" || field == want);
    matches.then(|| fields[4].clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `queue_counts` (kept counts) equals a count of every item, at `now`.
    fn assert_counts(ledger: &mut PgLedger, now: DateTime<Utc>) {
        let groups = ledger
            .transaction(|tx| {
                let rows = tx.query("SELECT property, engine, target, channel FROM groups", &[])?;
                Ok(rows
                    .iter()
                    .map(|r| GroupKey {
                        property: r.get(0),
                        engine: r.get::<_, &str>(1).parse().unwrap(),
                        target: r.get(2),
                        channel: r.get::<_, &str>(3).parse().unwrap(),
                    })
                    .collect::<Vec<_>>())
            })
            .unwrap();
        assert!(!groups.is_empty());
        for key in groups {
            let counted = ledger
                .transaction(|tx| {
                    let r = tx.query_one(
                        "SELECT COUNT(*) FILTER (WHERE state = 'queued' AND next_attempt_at <= $2),
                                COUNT(*) FILTER (WHERE state = 'queued' AND NOT (next_attempt_at <= $2)),
                                COUNT(*) FILTER (WHERE state = 'parked'),
                                COUNT(*) FILTER (WHERE state = 'in_flight'),
                                COUNT(*) FILTER (WHERE state = 'accepted')
                         FROM items i JOIN groups g ON g.id = i.group_id
                         WHERE g.property = $1 AND g.engine = $3 AND g.target = $4",
                        &[&key.property, &now, &key.engine.as_str(), &key.target],
                    )?;
                    let n = |i: usize| r.get::<_, i64>(i) as u64;
                    Ok(QueueCounts { due: n(0), waiting: n(1), parked: n(2), in_flight: n(3), accepted: n(4) })
                })
                .unwrap();
            assert_eq!(ledger.queue_counts(&key, now).unwrap(), counted, "{key:?} at {now}");
        }
    }

    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn kept_counts_follow_every_change() {
        let mut ledger = super::super::story::test_postgres();
        let now: DateTime<Utc> = "2026-12-10T10:00:00Z".parse().unwrap();
        super::super::story::story(&mut ledger);
        assert_counts(&mut ledger, now);
        // A copy in (inserts and updates in one statement), twice.
        let dump = ledger.export(true).unwrap();
        let mut copy = super::super::story::test_postgres();
        copy.import(&dump).unwrap();
        assert_counts(&mut copy, now);
        copy.import(&dump).unwrap();
        assert_counts(&mut copy, now);
        // Queue commands.
        let all = ItemFilter::default();
        ledger.retry(&all, now).unwrap();
        assert_counts(&mut ledger, now);
        assert!(ledger.drop_items(&ItemFilter { states: vec![StateFilter::Accepted], ..all }, now).unwrap() > 0);
        assert_counts(&mut ledger, now);
    }

    #[test]
    fn pgpass_lines_match_like_libpq() {
        let wanted = ["db.example".to_string(), "5432".into(), "indexq".into(), "runner".into()];
        assert_eq!(pgpass_line("db.example:5432:indexq:runner:s3cret", &wanted).as_deref(), Some("s3cret"));
        assert_eq!(pgpass_line("*:*:*:runner:a\\:b\\\\c", &wanted).as_deref(), Some("a:b\\c"));
        assert_eq!(pgpass_line("other:5432:indexq:runner:x", &wanted), None);
        assert_eq!(pgpass_line("# db.example:5432:indexq:runner:x", &wanted), None);
        assert_eq!(pgpass_line("db.example:5432:indexq", &wanted), None);
    }
}
