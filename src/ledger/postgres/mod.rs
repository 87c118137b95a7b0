//! The PostgreSQL ledger: one database (one schema in it) shared by any
//! number of machines, so that they share one set of budgets and one queue.
//!
//! - Reservation: a claim locks the rows of its rule windows (`FOR UPDATE`,
//!   in rule order), decides from them, then takes the units with one
//!   conditional upsert per rule and window (`... DO UPDATE ... WHERE used +
//!   n <= limit RETURNING used`): if any of them finds no room, nothing is
//!   taken and nothing is sent.
//! - A claim holds its group's row (`FOR NO KEY UPDATE`) while it reads
//!   the due spans, and lists what it took in its reservation, so runners
//!   draining one queue never take the same item.
//! - A reservation carries its owner (host, pid, start time) and a lease; an
//!   owner on another host is trusted until its lease ends.
//! - Migrations run under an advisory lock; the connection has connect,
//!   statement and lock timeouts, so a lost server fails a transaction,
//!   never hangs it; the connection is reopened by the next (`Conn`).
//!
//! - The decisions are `policy`'s; this file stores them with set-based
//!   statements over arrays (`unnest`): a batch of URLs is looked up by hash
//!   a group (a long batch on two connections), its new items written as
//!   batch rows and spans (schema 12 keeps no table of items), a claim lists
//!   its items in the one row of its reservation, and an answer moves every
//!   item it names with one write of spans.
//!
//! The `postgres` client runs its own small runtime: called from inside
//! the tokio runtime of `submit`, each call hops to a plain thread.

use super::policy::{self, AdmitPlan, Backend, Existing, Steps};
use super::url_keys::url_key;
use super::{
    cap_body, kept_changes, stored, stored_group, stored_inspection, stored_last_reason, stored_opt, stored_reason,
    Action, Admission, AdmitRule, Answered, AttemptRow, Block, ClaimedItem, Class, Copied, CopyDropped, CopyItem,
    CopyRequest, CopyUsage, DateTime, GhostUrl, GroupKey, InspectionAnswer, InspectionCount, Intake, ItemFilter,
    ItemRow, LedgerError, Limits, NewItem, NoticeClaim, Now, Owner, ParkedGroup, Preview, Queue, QueueCounts,
    RateDecision, RateRequest, Reason, Recorded, Report, Result, Rows, RuleWindow, RunRecord, Runs, SitemapRead,
    SitemapReports, SitemapState, SourceDocument, SourceFailure, SpanCount, StateFilter, StoredResponse, StoredSitemap,
    TimeDelta, Usage, Utc,
};
use ::postgres as pg;
use pg::error::SqlState;
use pg::{Client, GenericClient, NoTls, Row, Transaction};
use std::collections::HashMap;
use std::time::Duration;

mod admit;
mod answer;
mod batches;
mod claim;
mod connect;
mod copy;
mod limits;
mod listing;
mod queue;
mod rows;
mod runs;
mod schema;
mod session;
mod sitemaps;
mod spans;

use admit::{
    ghost_urls, source_documents, source_failures, store_ghost_urls, store_source_documents, store_source_failures,
    Helper,
};
pub use connect::pgpass_password;
use connect::{connect, describe, Conn};
use session::Session;

pub use schema::SCHEMA_VERSION;

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
    /// The connection, reopened when lost (`Conn`). Its client is always
    /// there but while dropping (the client's drop blocks, so it too must
    /// happen off the runtime).
    client: Conn,
    /// The redacted URL, for messages.
    place: String,
    schema: String,
    lease: TimeDelta,
    groups: HashMap<GroupKey, i64>,
    /// A second connection for a batch's look-up (`admit::Helper`).
    helper: Helper,
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
        let client = off_runtime(|| connect(options, false)).map_err(|e| LedgerError::Open {
            path: place.clone(),
            message: e,
            hint: Some(CONNECT_HINT.into()),
            newer: false,
            source: None,
        })?;
        Ok(PgLedger {
            client: Conn::new(client, options),
            place,
            schema: options.schema.clone(),
            lease: options.lease,
            groups: HashMap::new(),
            helper: Helper::new(options),
        })
    }

    /// From now on, every commit of this ledger checks the spans' rules
    /// against the batch rows, and the item changes (the conformance
    /// suite's ledgers; issue 48).
    #[cfg(test)]
    pub fn check_spans(mut self) -> PgLedger {
        self.client.check_spans = true;
        self
    }

    /// The number of batch rows, and of the groups they hold.
    #[cfg(test)]
    pub fn batch_rows(&mut self) -> Result<(i64, i64)> {
        self.transaction(|tx| {
            let r = tx.query_one("SELECT count(*), count(DISTINCT group_id) FROM batches", &[])?;
            Ok((r.get(0), r.get(1)))
        })
    }

    /// The database as messages name it (no password).
    pub fn place(&self) -> &str {
        &self.place
    }

    /// Runs `f` in one transaction (again if the server aborts it for a
    /// deadlock).
    fn transaction<T: Send>(
        &mut self,
        f: impl FnMut(&mut Session<'_, Transaction<'_>>) -> Result<T> + Send,
    ) -> Result<T> {
        in_transaction(&mut self.client, f)
    }

    /// `transaction`, with the ids of the groups known to be in the ledger.
    fn with_groups<T: Send>(
        &mut self,
        mut f: impl FnMut(&mut Session<'_, Transaction<'_>>, &HashMap<GroupKey, i64>) -> Result<T> + Send,
    ) -> Result<T> {
        let groups = &self.groups;
        in_transaction(&mut self.client, |tx| f(tx, groups))
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

/// The ledger in one transaction, as policy's steps take it (`claim.rs`,
/// `answer.rs`).
struct Tx<'t, 's, 'c> {
    tx: &'t mut Session<'s, Transaction<'c>>,
    groups: &'t HashMap<GroupKey, i64>,
}

/// Every transaction is a real one: reading, it sees one snapshot.
impl Backend for PgLedger {
    fn lease(&self) -> TimeDelta {
        self.lease
    }

    fn write<T: Send>(&mut self, mut f: impl FnMut(&mut dyn Steps) -> Result<T> + Send) -> Result<T> {
        self.with_groups(|tx, groups| f(&mut Tx { tx, groups }))
    }

    fn read<T: Send>(&mut self, f: impl FnMut(&mut dyn Steps) -> Result<T> + Send) -> Result<T> {
        self.write(f)
    }
}

/// Runs `f` in one transaction of `client` (again if the server aborts it
/// for a deadlock), off the runtime; a connection the server closed is
/// reopened first (`Conn::live`).
fn in_transaction<T: Send>(
    client: &mut Conn,
    mut f: impl FnMut(&mut Session<'_, Transaction<'_>>) -> Result<T> + Send,
) -> Result<T> {
    off_runtime(move || {
        let check = client.checks_spans();
        let (client, statements) = client.live()?;
        retrying(|| {
            let mut tx = client.transaction()?;
            let value = f(&mut Session::new(&mut tx, statements))?;
            commit(tx, check)?;
            Ok(value)
        })
    })
}

/// Runs `f` on `client` outside a transaction (each statement at its own
/// snapshot, as in one of `READ COMMITTED`), off the runtime, reopening a
/// connection the server closed first: for reads that hold nothing and
/// need no one snapshot, which then cost no `BEGIN` and `COMMIT` (two
/// round trips).
fn without_transaction<T: Send>(
    client: &mut Conn,
    f: impl FnOnce(&mut Session<'_, Client>) -> Result<T> + Send,
) -> Result<T> {
    off_runtime(move || {
        let (client, statements) = client.live()?;
        f(&mut Session::new(client, statements))
    })
}

/// Commits `tx`; with `check` (a test's ledger that asked for it:
/// `PgLedger::check_spans`), the spans' rules and the item changes are
/// checked first (`batches::spans_agree`, `changes_agree`), and a break
/// panics (issue 48).
fn commit(mut tx: Transaction<'_>, check: bool) -> Result<()> {
    #[cfg(test)]
    if check {
        let mut statements = Default::default();
        let mut tx = Session::new(&mut tx, &mut statements);
        if let Err(e) = batches::spans_agree(&mut tx).and_then(|()| batches::changes_agree(&mut tx)) {
            panic!("at a commit, {e}");
        }
    }
    #[cfg(not(test))]
    let _ = (check, &mut tx);
    Ok(tx.commit()?)
}

impl Drop for PgLedger {
    fn drop(&mut self) {
        let clients = [self.client.take(), self.helper.take()];
        if clients.iter().any(Option::is_some) {
            off_runtime(move || drop(clients));
        }
    }
}

fn owner_of(r: &Row, at: usize) -> Owner {
    Owner { host: r.get(at), pid: r.get::<_, i64>(at + 1) as u32, started: r.get::<_, i64>(at + 2) as u64 }
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
        if err.as_db_error().is_none() || timed_out || ends_the_session(&err) {
            return LedgerError::Unavailable { message: describe(&err), source: Box::new(err) };
        }
        LedgerError::Postgres { message: describe(&err), source: err }
    }
}

/// Whether the server ended the session with `err`: a shutdown or restart
/// (`57P01`–`57P03`, said as a `FATAL` error before it closes the
/// connection), or a connection exception (class `08`), or the connection
/// is closed. The ledger is then unreachable, not refusing: the connection
/// is reopened (`Conn`) and the caller waits, as for a network error.
fn ends_the_session(err: &pg::Error) -> bool {
    let code = err.code().map(SqlState::code).unwrap_or_default();
    err.is_closed() || code.starts_with("57P") || code.starts_with("08")
}

fn group_id(
    tx: &mut Session<'_, impl GenericClient>,
    cache: &HashMap<GroupKey, i64>,
    key: &GroupKey,
) -> Result<Option<i64>> {
    if let Some(id) = cache.get(key) {
        return Ok(Some(*id));
    }
    let row = tx.query_opt(
        "SELECT id FROM groups WHERE property = $1 AND engine = $2 AND target = $3 AND channel = $4",
        &[&key.property, &key.engine.as_str(), &key.target, &key.channel.as_str()],
    )?;
    Ok(row.map(|r| r.get(0)))
}

/// The groups `ids` (all, with `None`) held `FOR SHARE` until the
/// transaction ends, in id order: a claim holds its group's row `FOR NO KEY
/// UPDATE` (`hold_queue`), so none commits meanwhile, and what a writer
/// then reads of which items are in flight stays true while it writes.
fn hold_groups(tx: &mut Session<'_, impl GenericClient>, ids: Option<&[i64]>) -> Result<()> {
    let ids: Option<Vec<i64>> = ids.map(|ids| {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        ids
    });
    tx.query("SELECT 1 FROM groups WHERE $1::bigint[] IS NULL OR id = ANY($1) ORDER BY id FOR SHARE", &[&ids])?;
    Ok(())
}

fn group_id_or_create(
    tx: &mut Session<'_, impl GenericClient>,
    cache: &HashMap<GroupKey, i64>,
    key: &GroupKey,
) -> Result<i64> {
    if let Some(id) = group_id(tx, cache, key)? {
        return Ok(id);
    }
    tx.execute(
        "INSERT INTO groups (property, engine, target, channel) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        &[&key.property, &key.engine.as_str(), &key.target, &key.channel.as_str()],
    )?;
    Ok(group_id(tx, cache, key)?.expect("the group row was just written"))
}

/// Records a request; returns its id.
fn insert_request(tx: &mut Session<'_, impl GenericClient>, r: &Recorded) -> Result<i64> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::*;

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
                    rows::fill_item_rows(tx, "item_rows")?;
                    let r = tx.query_one(
                        "SELECT COUNT(*) FILTER (WHERE state = 'queued' AND next_attempt_at <= $2),
                                COUNT(*) FILTER (WHERE state = 'queued' AND NOT (next_attempt_at <= $2)),
                                COUNT(*) FILTER (WHERE state = 'parked'),
                                COUNT(*) FILTER (WHERE state = 'in_flight'),
                                COUNT(*) FILTER (WHERE state = 'accepted')
                         FROM item_rows i JOIN groups g ON g.id = i.group_id
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

    /// A claim writes no item row (schema 8): the rows it takes keep their
    /// version, and are in flight by their reservation — counted and listed
    /// so, and taken by no other claim — until the answer moves them.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn a_claim_writes_no_item_row() {
        use super::super::conformance;
        let mut ledger = conformance::test_postgres();
        let now: DateTime<Utc> = "2026-12-03T09:00:00Z".parse().unwrap();
        ledger.admit(&conformance::items(3), now, &conformance::dedupe_day()).unwrap();
        let versions = |ledger: &mut PgLedger| {
            ledger
                .transaction(|tx| {
                    // Schema 12 keeps no item rows: the batch rows and the
                    // spans are what a claim would write.
                    let rows = tx.query(
                        "SELECT 'batch ' || first_id, xmin::text FROM batches
                         UNION ALL SELECT 'span ' || first, xmin::text FROM spans ORDER BY 1",
                        &[],
                    )?;
                    Ok(rows.iter().map(|r| (r.get::<_, String>(0), r.get::<_, String>(1))).collect::<Vec<_>>())
                })
                .unwrap()
        };
        let before = versions(&mut ledger);
        let spec = |max_items| ClaimSpec {
            windows: &[],
            max_items,
            pace: None,
            now: Now::pinned(now),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        };
        let me = Owner::current();
        let first = ledger.claim(&conformance::group(), &spec(2), &me, &mut |_, _, _| {}).unwrap();
        assert_eq!(first.items.len(), 2);
        assert_eq!(versions(&mut ledger), before, "no batch row or span written");
        let counts = ledger.queue_counts(&conformance::group(), now).unwrap();
        assert_eq!((counts.due, counts.in_flight), (1, 2), "{counts:?}");
        let listed = ledger.items(&ItemFilter { states: vec![StateFilter::InFlight], ..ItemFilter::default() }, now);
        let listed: Vec<i64> = listed.unwrap().iter().map(|i| i.id).collect();
        assert_eq!(listed, first.items.iter().map(|i| i.id).collect::<Vec<_>>());
        let again = ledger.admit(&conformance::items(3), now, &conformance::dedupe_day()).unwrap();
        let in_flight = again.iter().filter(|a| matches!(a, Admission::InFlight { .. })).count();
        assert_eq!(in_flight, 2, "{again:?}");
        let second = ledger.claim(&conformance::group(), &spec(10), &me, &mut |_, _, _| {}).unwrap();
        let third_id = second.items.iter().map(|i| i.id).collect::<Vec<_>>();
        assert_eq!(third_id.len(), 1, "only the item no reservation lists");
        assert!(!first.items.iter().any(|i| i.id == third_id[0]));
        assert_counts(&mut ledger, now);
    }

    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn kept_counts_follow_every_change() {
        let mut ledger = super::super::conformance::test_postgres();
        let now: DateTime<Utc> = "2026-12-10T10:00:00Z".parse().unwrap();
        super::super::conformance::story(&mut ledger);
        assert_counts(&mut ledger, now);
        // A copy in (inserts and updates in one statement), twice.
        let mut copy = super::super::conformance::test_postgres();
        crate::ledger::copy(&mut ledger, &mut copy, true).unwrap();
        assert_counts(&mut copy, now);
        crate::ledger::copy(&mut ledger, &mut copy, true).unwrap();
        assert_counts(&mut copy, now);
        // Queue commands.
        let all = ItemFilter::default();
        ledger.retry(&all, now).unwrap();
        assert_counts(&mut ledger, now);
        assert!(ledger.drop_items(&ItemFilter { states: vec![StateFilter::Accepted], ..all }, now).unwrap() > 0);
        assert_counts(&mut ledger, now);
    }
}
