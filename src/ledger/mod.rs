//! The ledger: everything that must survive a crash — the queue of
//! (url, property, engine, channel, target) items, every attempt with its
//! classified outcome and redacted response body, budget usage per rule and
//! window, and what unattended runs keep between them (the sitemaps read,
//! reminders, the engines' reports on the sitemaps submitted).
//!
//! `Ledger` is the interface in domain terms (admit, claim within budget,
//! finish, reconcile, copy); `sqlite` is its embedded backend and `postgres`
//! the one many machines share, and `open` picks the configured one. Both
//! decide a claim with `plan` and pass the same `story` tests. The ledger
//! knows nothing of HTTP or of how answers are classified: it stores
//! classes and times that the scheduler decided. Its errors (`LedgerError`)
//! live in `crate::error`, with the others that end a run.

mod ids;
mod owner;
pub mod policy;
mod postgres;
mod sqlite;
#[cfg(test)]
mod story;

pub use crate::error::LedgerError;
pub use ids::url_key;
pub use owner::Owner;
pub use policy::Existing;
pub use postgres::{PgLedger, PgOptions, CONNECT_HINT as PG_CONNECT_HINT, SCHEMA_VERSION as PG_SCHEMA_VERSION};
pub use sqlite::SqliteLedger;

use crate::config::{ConfigError, LedgerLocation, LedgerOptions};
use crate::model::{
    Action, Class, EngineKind, GroupKey, ItemState, NextStep, ParkedGroup, QueueCounts, ReadFailure, Reason, Report,
    RuleWindow, RunRecord, SitemapRead, SitemapReading, SitemapState, SourceDocument, StoredResponse, TransientReason,
    Usage,
};
use chrono::{DateTime, TimeDelta, Utc};
use postgres::pgpass_password;

pub type Result<T> = std::result::Result<T, LedgerError>;

/// Opens the ledger at `location` with the configuration's options, and
/// brings its schema up to date (under a lock: many runners, one
/// migration). The one place a backend is chosen: a path is a SQLite file,
/// a `postgres://` URL the schema `options.schema` of a database. The error
/// is a `LedgerError`, or a `ConfigError` when the configured password
/// cannot be read.
pub fn open(location: &LedgerLocation, options: &LedgerOptions) -> anyhow::Result<Box<dyn Ledger + Send>> {
    Ok(match location {
        LedgerLocation::Sqlite(path) => Box::new(SqliteLedger::open(path)?.with_lease(lease(options))),
        LedgerLocation::Postgres(url) => Box::new(PgLedger::open(&pg_options(url, options)?)?),
    })
}

/// `open`, for a dry run that only reads the ledger: a SQLite file that
/// does not exist yet is an empty ledger in memory (no file is made).
/// Opening brings an older schema up to date, as every run does.
pub fn open_to_read(location: &LedgerLocation, options: &LedgerOptions) -> anyhow::Result<Box<dyn Ledger + Send>> {
    match location {
        LedgerLocation::Sqlite(path) if !path.exists() => Ok(Box::new(SqliteLedger::in_memory()?)),
        _ => open(location, options),
    }
}

/// Connects to the PostgreSQL ledger at `url` without touching its schema
/// (doctor looks at a shared ledger as it is: its version, its clock).
pub fn connect_postgres(url: &str, options: &LedgerOptions) -> anyhow::Result<PgLedger> {
    Ok(PgLedger::connect(&pg_options(url, options)?)?)
}

/// How to reach the PostgreSQL ledger at `url`: the password from the
/// configuration (`ledger_password_env`/`_file`), else `$PGPASSWORD`, else
/// a pgpass file, else the URL's own.
fn pg_options(url: &str, options: &LedgerOptions) -> std::result::Result<PgOptions, ConfigError> {
    let password = match &options.password {
        Some(source) => Some(source.read()?.expose().to_string()),
        None => std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()).or_else(|| pgpass_password(url)),
    };
    Ok(PgOptions {
        url: url.to_string(),
        schema: options.schema.clone(),
        password,
        timeout: options.timeout,
        lease: lease(options),
    })
}

/// How long this process's reservations are trusted when their owner
/// cannot be checked.
fn lease(options: &LedgerOptions) -> TimeDelta {
    TimeDelta::from_std(options.lease).unwrap_or(TimeDelta::MAX)
}

/// A group as a backend stores it (the engine and the channel by name; a
/// name this indexq does not know is an error naming it).
fn stored_group(property: String, engine: &str, target: String, channel: &str) -> Result<GroupKey> {
    Ok(GroupKey {
        property,
        engine: stored("groups", "engine", engine)?,
        target,
        channel: stored("groups", "channel", channel)?,
    })
}

/// A value read back from the ledger as the type it stands for: a value
/// this indexq does not know (a newer one wrote it, or the file was
/// changed by hand) is an error naming the table, the column and the value.
fn stored<T: std::str::FromStr>(table: &str, column: &str, value: &str) -> Result<T> {
    value.parse().map_err(|_| {
        LedgerError::Invalid(format!(
            "the ledger's {table}.{column} holds `{value}`, which this indexq does not know (a newer indexq wrote it?)"
        ))
    })
}

/// A reason read back beside the class it was stored with (a request's):
/// a text this indexq does not know as a reason of that class is an error.
fn stored_reason(class: Class, text: &str) -> Result<Reason> {
    Reason::of_class(class, text).map_err(|_| {
        LedgerError::Invalid(format!(
            "the ledger's requests.reason holds `{text}`, which this indexq does not know as a reason of class \
             {class} (a newer indexq wrote it?)"
        ))
    })
}

/// The reason of an item's last request, if it has one.
fn stored_last_reason(class: Option<&str>, text: Option<&str>) -> Result<Option<Reason>> {
    match (class, text) {
        (Some(class), Some(text)) => Ok(Some(stored_reason(stored("requests", "class", class)?, text)?)),
        _ => Ok(None),
    }
}

/// A row of `inspections` read back: a class or a reason this indexq does
/// not know is an error naming it.
#[allow(clippy::too_many_arguments)]
fn stored_inspection(
    property: String,
    class: &str,
    count: i64,
    at: DateTime<Utc>,
    reason: &str,
    message: String,
    hint: Option<String>,
    http_status: Option<i32>,
) -> Result<InspectionCount> {
    let class: Class = stored("inspections", "class", class)?;
    let reason = Reason::of_class(class, reason).map_err(|_| {
        LedgerError::Invalid(format!(
            "the ledger's inspections.last_reason holds `{reason}`, which this indexq does not know as a reason of \
             class {class} (a newer indexq wrote it?)"
        ))
    })?;
    let http_status = http_status.and_then(|s| u16::try_from(s).ok());
    let last = InspectionAnswer { at, class, reason, message, hint, http_status };
    Ok(InspectionCount { property, class, count: count.max(0) as u64, last })
}

/// A sitemap group's row, as both backends read it: the group, its item's
/// state and acceptance, and the columns of `sitemap_reports` (all empty
/// when its report was never read).
struct StoredSitemap {
    group: GroupKey,
    item: String,
    submitted_at: Option<DateTime<Utc>>,
    read_at: Option<DateTime<Utc>>,
    read_ok_at: Option<DateTime<Utc>>,
    listed: Option<bool>,
    submitted: Option<DateTime<Utc>>,
    downloaded: Option<DateTime<Utc>>,
    pending: Option<bool>,
    errors: Option<i64>,
    warnings: Option<i64>,
    urls: Option<i64>,
    status: Option<String>,
    errors_since: Option<DateTime<Utc>>,
    failure_class: Option<String>,
    failure_reason: Option<String>,
    failure_message: Option<String>,
    failure_hint: Option<String>,
    failure_status: Option<i64>,
    failure_since: Option<DateTime<Utc>>,
}

impl StoredSitemap {
    /// The state it stands for; a value this indexq does not know is an
    /// error naming it.
    fn state(self, reminded: Vec<(String, DateTime<Utc>)>) -> Result<SitemapState> {
        let n = |v: Option<i64>| v.map(|n| n.max(0) as u64);
        let reading = self.read_ok_at.map(|_| SitemapReading {
            listed: self.listed.unwrap_or(false),
            submitted: self.submitted,
            downloaded: self.downloaded,
            pending: self.pending.unwrap_or(false),
            errors: n(self.errors).unwrap_or(0),
            warnings: n(self.warnings).unwrap_or(0),
            urls: n(self.urls),
            status: self.status,
        });
        let failure = match (self.failure_class.as_deref(), self.failure_reason.as_deref()) {
            (Some(class), Some(reason)) => {
                let class: Class = stored("sitemap_reports", "failure_class", class)?;
                let reason = Reason::of_class(class, reason).map_err(|_| {
                    LedgerError::Invalid(format!(
                        "the ledger's sitemap_reports.failure_reason holds `{reason}`, which this indexq does not \
                         know as a reason of class {class} (a newer indexq wrote it?)"
                    ))
                })?;
                Some(ReadFailure {
                    class,
                    reason,
                    message: self.failure_message.unwrap_or_default(),
                    hint: self.failure_hint,
                    http_status: self.failure_status.and_then(|s| u16::try_from(s).ok()),
                })
            }
            _ => None,
        };
        Ok(SitemapState {
            group: self.group,
            item: stored("items", "state", &self.item)?,
            submitted_at: self.submitted_at,
            read_at: self.read_at,
            reading,
            read_ok_at: self.read_ok_at,
            errors_since: self.errors_since,
            failure,
            failure_since: self.failure_since,
            reminded,
        })
    }
}

/// `stored` for a column that may be empty.
fn stored_opt<T: std::str::FromStr>(table: &str, column: &str, value: Option<&str>) -> Result<Option<T>> {
    value.map(|v| stored(table, column, v)).transpose()
}

/// One URL to put in the queue.
#[derive(Debug, Clone)]
pub struct NewItem {
    pub url: String,
    pub group: GroupKey,
    /// What the engine is told about the URL (Google: updated or deleted).
    pub action: Action,
    /// When the site says the page last changed (sitemap `lastmod`).
    pub lastmod: Option<DateTime<Utc>>,
}

/// When a URL accepted before is sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmitRule {
    /// Not within this long after its acceptance...
    pub dedupe: TimeDelta,
    /// ...unless forced...
    pub force: bool,
    /// ...and with `--changed`, only if its `lastmod` is later than its
    /// last acceptance (the dedupe window then does not apply)...
    pub changed: bool,
    /// ...and, unless forced, not due before this long after its last
    /// acceptance (a sitemap: at most one submission a day).
    pub resend_after: Option<TimeDelta>,
}

/// What the ledger did with a URL it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// New (`fresh`), or resubmitted (accepted long enough ago, changed
    /// since, or forced): due now.
    Queued { fresh: bool },
    /// Accepted before and queued again, but due only at `due`: the rule
    /// spaces the group's resubmissions (`AdmitRule::resend_after`).
    Requeued { id: i64, due: DateTime<Utc> },
    /// Already in the queue (waiting or due); left as it was.
    AlreadyQueued { id: i64, next_attempt_at: Option<DateTime<Utc>> },
    /// Accepted within the dedupe window, or (`unchanged`) not changed
    /// since its last acceptance.
    Skipped { id: i64, accepted_at: DateTime<Utc>, unchanged: bool },
    /// Parked by an earlier run; waits for a human.
    Parked { id: i64 },
    /// Another process is sending it right now.
    InFlight { id: i64 },
}

/// An item claimed for sending.
#[derive(Debug, Clone)]
pub struct ClaimedItem {
    pub id: i64,
    pub url: String,
    pub action: Action,
    pub attempts: u32,
    pub last_class: Option<Class>,
    /// Consecutive attempts that ended in `last_class`.
    pub streak: u32,
    pub streak_started_at: Option<DateTime<Utc>>,
}

/// The result of a claim: items reserved (budget taken, marked in flight)
/// and due items that did not fit, now waiting until `retry_at`.
#[derive(Debug, Clone, Default)]
pub struct Claim {
    /// The instant the claim was decided at (the ledger's clock).
    pub now: DateTime<Utc>,
    /// The rules' windows at `now`: what the claim was counted against.
    pub windows: Vec<RuleWindow>,
    pub reservation: Option<i64>,
    pub items: Vec<ClaimedItem>,
    /// With pacing: when each claimed item may be sent (same order).
    pub slots: Vec<DateTime<Utc>>,
    /// How many due items the budget has no room for (each was passed to
    /// the claim's `deferred` callback); they wait until `retry_at`.
    pub deferred: u64,
    pub retry_at: Option<DateTime<Utc>>,
    /// Due items within budget that the pace puts after the horizon (or in
    /// the next window), each with the time it is expected to be sent.
    pub paced: Vec<(i64, String, DateTime<Utc>)>,
}

/// What "now" is made of when the ledger decides: this machine's clock,
/// and how far `INDEXQ_NOW` shifted it (a ledger with a clock of its own,
/// a database server's, shifts that one the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    pub local: DateTime<Utc>,
    pub shift: TimeDelta,
}

impl Now {
    /// A clock pinned at `at`, as `INDEXQ_NOW` pins it (tests).
    #[cfg(test)]
    pub fn pinned(at: DateTime<Utc>) -> Now {
        Now { local: at, shift: at - crate::clock::wall_now() }
    }
}

/// The ledger's clock at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerTime {
    /// The instant window decisions use (`policy::ledger_now`).
    pub now: DateTime<Utc>,
    /// The latest instant recorded before, by any run.
    pub latest: Option<DateTime<Utc>>,
    /// What the ledger's own clock said (the database server's, or this
    /// machine's), before the floor of `latest`.
    pub clock: DateTime<Utc>,
}

/// The budget rules a claim must fit, as windows at any instant: the claim
/// asks for them at the ledger's now.
pub trait Windows {
    fn at(&self, now: DateTime<Utc>) -> Vec<RuleWindow>;
}

/// Windows fixed in advance (whatever the instant).
impl Windows for Vec<RuleWindow> {
    fn at(&self, _now: DateTime<Utc>) -> Vec<RuleWindow> {
        self.clone()
    }
}

impl<const N: usize> Windows for [RuleWindow; N] {
    fn at(&self, _now: DateTime<Utc>) -> Vec<RuleWindow> {
        self.to_vec()
    }
}

/// What a claim may take: within the rules' windows at the ledger's now, at
/// most `max_items`, at the pace's slots (if any).
#[derive(Clone, Copy)]
pub struct ClaimSpec<'a> {
    pub windows: &'a (dyn Windows + Sync),
    pub max_items: usize,
    pub pace: Option<&'a Pace>,
    pub now: Now,
}

/// A shared rate (GCRA): one send per `interval` under `key`, with bursts
/// of up to `burst` sends ahead of it. A claim takes the slots that fall
/// before `horizon` (the end of what the run may wait for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pace {
    pub key: String,
    pub interval: TimeDelta,
    pub burst: u32,
    pub horizon: DateTime<Utc>,
}

/// One answer for some items of a reservation: a request to the engine
/// (or, where the engine answers per URL, the part of it about these URLs)
/// and what happens to those items next. The ledger records it once, as
/// one attempt of every item it names.
#[derive(Debug, Clone)]
pub struct Answered {
    pub items: Vec<i64>,
    pub at: DateTime<Utc>,
    pub class: Class,
    pub reason: Reason,
    pub message: String,
    pub response: StoredResponse,
    pub next: NextStep,
    /// Whether the request left this machine (false: provably never sent,
    /// e.g. a refused connection or a stop before it went). With the class,
    /// it decides what the request's units give back (`policy::given_back`).
    pub reached: bool,
}

/// Everything `finish` records for one reservation.
#[derive(Debug, Clone)]
pub struct Finish {
    pub reservation: i64,
    pub answers: Vec<Answered>,
    pub blocks: Vec<Block>,
    /// What the engine said is left of a reported rule's window in its
    /// answer (Bing's remainder), recorded as a reading of its quota.
    pub reports: Vec<Remainder>,
    /// The windows the reservation was counted in: what it gives back is
    /// decided per window by `policy::given_back`.
    pub windows: Vec<RuleWindow>,
}

/// What the engine said is left of a reported rule's window, at `at`, in
/// an answer (Bing's "Quota remaining for today: 10, Submitted: 32"). The
/// window's limit becomes what the ledger has counted (the refused units
/// given back) plus `remaining`, less what other reservations have in
/// flight — as `Ledger::record_report` makes it of a reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remainder {
    pub window: RuleWindow,
    pub remaining: u64,
    pub at: DateTime<Utc>,
}

/// A rule window the server said is spent, until `until`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub rule: RuleWindow,
    pub until: DateTime<Utc>,
}

/// One URL inspection's answer (Google `skip_indexed`), as the ledger
/// keeps it: classified like any answer, counted per property and class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectionAnswer {
    pub at: DateTime<Utc>,
    pub class: Class,
    pub reason: Reason,
    pub message: String,
    /// The fix, for `misconfigured`.
    pub hint: Option<String>,
    pub http_status: Option<u16>,
}

/// What one request's inspections of a property came to.
#[derive(Debug, Clone)]
pub struct Inspections<'a> {
    pub property: &'a str,
    /// The answers of the inspections asked.
    pub answers: &'a [InspectionAnswer],
    /// The inspection budget's windows the units were taken from
    /// (`take_units`), and how many of them go back: inspections not asked,
    /// or that provably never reached the engine.
    pub windows: &'a [RuleWindow],
    pub unused: u64,
    /// Inspection windows a quota answer spent, until when.
    pub blocks: &'a [Block],
}

/// A property's inspections of one class since the ledger began: how many,
/// and the last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectionCount {
    pub property: String,
    pub class: Class,
    pub count: u64,
    pub last: InspectionAnswer,
}

/// A queue item as `queue list` and reports see it.
#[derive(Debug, Clone)]
pub struct ItemRow {
    pub id: i64,
    pub url: String,
    pub group: GroupKey,
    pub state: ItemState,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub attempts: u32,
    pub last_class: Option<Class>,
    pub last_reason: Option<Reason>,
    pub last_message: Option<String>,
    pub last_http_status: Option<u16>,
    pub accepted_at: Option<DateTime<Utc>>,
}

/// A state as `queue` commands name it: queued items split into due now
/// and waiting for later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFilter {
    Due,
    Waiting,
    Parked,
    InFlight,
    Accepted,
}

/// Which items `queue list|retry|drop` act on.
#[derive(Debug, Clone, Default)]
pub struct ItemFilter {
    /// Any of these states; empty means every state the command acts on.
    pub states: Vec<StateFilter>,
    pub property: Option<String>,
    pub engine: Option<EngineKind>,
    /// The group's target (an IndexNow endpoint).
    pub target: Option<String>,
    pub url: Option<String>,
    pub limit: Option<usize>,
}

/// One stored attempt, for `log` and `status`: a request, and the URL it is
/// shown by (the one asked about, or its first).
#[derive(Debug, Clone)]
pub struct AttemptRow {
    pub at: DateTime<Utc>,
    pub url: String,
    /// The item of `url` is gone: `queue drop` removed it (its attempts
    /// stay). `url` is the one it had (empty when a ledger of schema 3 or
    /// older dropped it, and so did not keep it).
    pub dropped: bool,
    /// How many URLs the request carried.
    pub urls: u64,
    pub group: GroupKey,
    pub class: Class,
    pub reason: Reason,
    pub message: String,
    pub http_status: Option<u16>,
    pub body: Option<String>,
    pub retry_at: Option<DateTime<Utc>>,
}

/// Items returned to the queue by `reconcile`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciled {
    pub reservations: u64,
    pub items: u64,
}

/// A whole ledger's contents, for `ledger copy` (and a dry run's private
/// copy of a database ledger). Reservations are not in it: a copy is made
/// with none in flight.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dump {
    /// In the source's order (ids): a copy keeps the order of the queue.
    pub items: Vec<DumpItem>,
    /// Oldest first.
    pub requests: Vec<DumpRequest>,
    /// Items `queue drop` removed that requests name, in the source's
    /// order (ids).
    pub dropped: Vec<DumpDropped>,
    pub usage: Vec<DumpUsage>,
    pub blocks: Vec<(String, DateTime<Utc>)>,
    /// Pace key and its theoretical arrival time (ms).
    pub pacing: Vec<(String, i64)>,
    /// Credential fingerprint and its first use.
    pub credentials: Vec<(String, DateTime<Utc>)>,
    pub latest_run: Option<DateTime<Utc>>,
    /// Group, reason and when a run last said its items are parked.
    pub reminders: Vec<(GroupKey, String, DateTime<Utc>)>,
    /// The sitemaps read for sources.
    pub sources: Vec<SourceDocument>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DumpItem {
    pub url: String,
    pub group: GroupKey,
    pub state: ItemState,
    pub action: Action,
    pub lastmod: Option<DateTime<Utc>>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub enqueued_at: DateTime<Utc>,
    pub attempts: u32,
    pub last_class: Option<Class>,
    pub streak: u32,
    pub streak_started_at: Option<DateTime<Utc>>,
    pub accepted_at: Option<DateTime<Utc>>,
    pub parked_fingerprint: Option<String>,
    /// Index into `Dump::requests`: the item's last attempt.
    pub last_request: Option<usize>,
}

/// One recorded request (an attempt of every item it names).
#[derive(Debug, Clone, PartialEq)]
pub struct DumpRequest {
    pub group: GroupKey,
    pub at: DateTime<Utc>,
    pub class: Class,
    pub reason: Reason,
    pub message: String,
    pub response: StoredResponse,
    pub retry_at: Option<DateTime<Utc>>,
    /// Indexes into `Dump::items`, ascending.
    pub items: Vec<usize>,
    /// Indexes into `Dump::dropped`, ascending: the items it named that
    /// were dropped since.
    pub dropped: Vec<usize>,
}

/// An item `queue drop` removed, kept because a request names it: the URL
/// that request was about.
#[derive(Debug, Clone, PartialEq)]
pub struct DumpDropped {
    pub url: String,
    pub group: GroupKey,
    pub dropped_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DumpUsage {
    pub rule: String,
    pub window: String,
    pub period: String,
    pub used: u64,
    pub limit: Option<u64>,
    pub resets_at: DateTime<Utc>,
    pub reported_at: Option<DateTime<Utc>>,
    pub reported_remaining: Option<u64>,
}

/// What `import` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Copied {
    /// Items written (new, or updated to the source's state).
    pub items: u64,
    /// Recorded requests (attempts) the target did not have yet.
    pub attempts: u64,
    pub budget_windows: u64,
}

/// Attempts of one group in one span of time, of one class
/// (`Ledger::attempt_history`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanCount {
    pub group: GroupKey,
    /// The span: `[bounds[span], bounds[span + 1])` of the bounds asked for.
    pub span: usize,
    pub class: Class,
    /// URLs attempted: one per URL, however many URLs a request named.
    pub urls: u64,
}

/// A request as a backend records it: the items it named (its group's),
/// when, and what came of it.
struct Recorded<'a> {
    group: i64,
    at: DateTime<Utc>,
    class: Class,
    reason: Reason,
    message: &'a str,
    response: &'a StoredResponse,
    retry_at: Option<DateTime<Utc>>,
    items: &'a [i64],
}

impl<'a> Recorded<'a> {
    /// An answer, for the items of `group` it names.
    fn answer(group: i64, answer: &'a Answered) -> Recorded<'a> {
        let retry_at = match answer.next {
            NextStep::RetryAt(t) => Some(t),
            _ => None,
        };
        Recorded {
            group,
            at: answer.at,
            class: answer.class,
            reason: answer.reason,
            message: &answer.message,
            response: &answer.response,
            retry_at,
            items: &answer.items,
        }
    }

    /// The reservation of a run that stopped before the answer came:
    /// retried now (`reconcile`).
    fn interrupted(group: i64, now: DateTime<Utc>, items: &'a [i64]) -> Recorded<'a> {
        const NO_RESPONSE: &StoredResponse = &StoredResponse { http_status: None, body: None };
        Recorded {
            group,
            at: now,
            class: Class::Transient,
            reason: Reason::Transient(TransientReason::Interrupted),
            message: INTERRUPTED,
            response: NO_RESPONSE,
            retry_at: Some(now),
            items,
        }
    }

    /// A request of a copied ledger, for the items it names here.
    fn copied(group: i64, request: &'a DumpRequest, items: &'a [i64]) -> Recorded<'a> {
        Recorded {
            group,
            at: request.at,
            class: request.class,
            reason: request.reason,
            message: &request.message,
            response: &request.response,
            retry_at: request.retry_at,
            items,
        }
    }

    /// The items as the `requests` table keeps them: the first, the last,
    /// and the whole list (none when it is one item).
    fn stored_items(&self) -> (i64, i64, Option<Vec<u8>>) {
        let (first, last) = (self.items.iter().min(), self.items.iter().max());
        let list = (self.items.len() > 1).then(|| ids::encode(self.items));
        (first.copied().unwrap_or(0), last.copied().unwrap_or(0), list)
    }
}

/// What `reconcile` records of a reservation whose run stopped mid-request.
const INTERRUPTED: &str =
    "the run that sent this stopped before the answer came; the request counts against the budget and the URL is retried";

/// Why a ledger with reservations in flight is not copied.
fn in_flight_error(n: i64) -> LedgerError {
    LedgerError::Invalid(format!(
        "{n} reservation(s) are in flight: wait for the running `submit` to end (a stopped run's are \
         reconciled by the next `submit`), then copy"
    ))
}

/// The ledger interface. Every method is one transaction.
pub trait Ledger {
    /// Returns items of reservations whose owner is gone (dead process, or
    /// lease expired) to the queue, due now. Their budget stays counted: the
    /// server may have seen the request.
    fn reconcile(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<Reconciled>;

    /// The ledger's clock (`policy::ledger_now`): the later of its own clock
    /// — SQLite: this machine's; PostgreSQL: the database server's, shifted
    /// like `now` — and the latest instant any run recorded. With `record`,
    /// that instant is recorded as the latest.
    fn now(&mut self, now: Now, record: bool) -> Result<LedgerTime>;

    /// How many reservations `reconcile` would return to the queue.
    fn stale_reservations(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<u64>;

    /// What the ledger holds of each URL of `batch` in its group (`None`:
    /// new to it), read only: what `admit` would decide from (a dry run).
    fn look_up(&mut self, batch: &[NewItem]) -> Result<Vec<Option<Existing>>>;

    /// Puts URLs in the queue (one transaction for the whole batch), as
    /// `policy::admit` decides for each from what the ledger holds of it: a
    /// URL accepted within the dedupe window costs a lookup, no write.
    fn admit(&mut self, batch: &[NewItem], now: DateTime<Utc>, rule: &AdmitRule) -> Result<Vec<Admission>>;

    /// Requeues parked items of `group` that were parked under another
    /// configuration fingerprint. Returns how many.
    fn unpark_changed(&mut self, group: &GroupKey, fingerprint: &str, now: DateTime<Utc>) -> Result<u64>;

    /// Makes the parked items of `group` whose last answer gave one of
    /// `reasons` (a cause a check found fixed) due at `now`. Returns how
    /// many.
    fn unpark_fixed(&mut self, group: &GroupKey, reasons: &[Reason], now: DateTime<Utc>) -> Result<u64>;

    /// The parked items, per group and reason of their last answer, with
    /// when a run last said so.
    fn parked(&mut self) -> Result<Vec<ParkedGroup>>;

    /// Records that a run said, at `at`, that the items of each group are
    /// parked for a reason (`ParkedGroup::reminder_key`).
    fn record_reminders(&mut self, reminded: &[(GroupKey, String)], at: DateTime<Utc>) -> Result<()>;

    /// What the ledger keeps of the remote sitemaps read for sources.
    fn source_documents(&mut self) -> Result<Vec<SourceDocument>>;

    /// Records sitemaps read for sources (replacing what it kept of each
    /// URL), once every URL read from them is in the ledger, and returns
    /// them as kept: a document whose digest the ledger holds already keeps
    /// the `changed_at` it had (`policy::kept_changes`), in the same
    /// transaction, so that two runs reading one new body agree on when it
    /// changed.
    fn record_source_documents(&mut self, documents: &[SourceDocument]) -> Result<Vec<SourceDocument>>;

    /// Records one read of an engine's report on a sitemap group (`read`,
    /// at `at`): the report (or, failed, the answer; the last report
    /// stands), and since when its problems hold (`policy::sitemap_marks`).
    fn record_sitemap_read(&mut self, group: &GroupKey, read: &SitemapRead, at: DateTime<Utc>) -> Result<()>;

    /// Every sitemap group with an item (its submission): the item's state
    /// and last acceptance, what was last read of the engine's report, and
    /// when each of its problems was last said.
    fn sitemap_states(&mut self) -> Result<Vec<SitemapState>>;

    /// Every group the ledger holds items for (or ever did).
    fn stored_groups(&mut self) -> Result<Vec<GroupKey>>;

    /// Groups that have items due at `now`.
    fn due_groups(&mut self, now: DateTime<Utc>) -> Result<Vec<GroupKey>>;

    /// Reserve-before-send: in one transaction, at the ledger's clock (and
    /// records it as the latest), takes up to `max_items` due items of
    /// `group` that fit every rule's window at that instant, counts them against every rule,
    /// marks them in flight under a new reservation owned by `me`, and
    /// moves due items that do not fit to the time budget frees up (telling
    /// `deferred` of each, with that time) or, with a pace, to their slot.
    fn claim(
        &mut self,
        group: &GroupKey,
        spec: &ClaimSpec,
        me: &Owner,
        deferred: &mut dyn FnMut(i64, &str, DateTime<Utc>),
    ) -> Result<Claim>;

    /// Takes up to `n` units of `rules` that need no queue item (e.g. URL
    /// inspections): as many as every rule allows. Returns how many.
    fn take_units(&mut self, rules: &[RuleWindow], n: u64, now: DateTime<Utc>) -> Result<u64>;

    /// Records a request's URL inspections (Google `skip_indexed`), in one
    /// transaction: each answer counted under its property and class (the
    /// last one of each kept), the unused units given back to `windows`,
    /// and the blocks a quota answer puts on inspection windows.
    fn record_inspections(&mut self, done: &Inspections) -> Result<()>;

    /// Every property's inspections per class since the ledger began
    /// (`ledger copy` does not carry them), by property and class.
    fn inspections(&mut self) -> Result<Vec<InspectionCount>>;

    /// Records the attempts of a reservation, moves its items on, applies
    /// the server's blocks, gives back to each of the reservation's windows
    /// what `policy::given_back` decides (requests that never left, and
    /// those the engine refused for rate or quota, which it did not count:
    /// to the day and month windows only), records the engine's remainders
    /// (`Remainder`), and ends the reservation — in one transaction. A
    /// window a block holds stays spent whatever is given back.
    fn finish(&mut self, reservation: &Finish) -> Result<()>;

    /// The earliest time a queued item of `group` becomes due, if any.
    fn next_due(&mut self, group: &GroupKey) -> Result<Option<DateTime<Utc>>>;

    /// A pace's stored theoretical arrival time (ms), if it has one (read
    /// only: a dry run's estimate of the slots).
    fn pace_tat(&mut self, key: &str) -> Result<Option<i64>>;

    /// When a credential (by fingerprint) was first used; records `now` if never.
    fn first_use(&mut self, fingerprint: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>>;

    /// The engine accepted the credential: its next use starts a new
    /// `key_pending` clock.
    fn credential_accepted(&mut self, fingerprint: &str) -> Result<()>;

    fn usage(&mut self, rule: &RuleWindow) -> Result<Usage>;

    /// The engine says `remaining` units are left in a reported rule's
    /// window. Sets the window's limit to what the ledger has counted plus
    /// that, less what is in flight right now (which the engine may not
    /// have counted yet). Returns the report as stored.
    fn record_report(&mut self, rule: &RuleWindow, remaining: u64, now: DateTime<Utc>) -> Result<Report>;

    fn queue_counts(&mut self, group: &GroupKey, now: DateTime<Utc>) -> Result<QueueCounts>;
    fn last_rejection(&mut self, group: &GroupKey) -> Result<Option<AttemptRow>>;

    fn items(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<Vec<ItemRow>>;
    fn items_by_id(&mut self, ids: &[i64]) -> Result<Vec<ItemRow>>;
    /// Makes matching parked or waiting items due now. Returns how many.
    fn retry(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<u64>;
    /// Removes matching items (not those in flight) from the queue. Their
    /// attempts stay: a drop removes items, not history (the counts of
    /// `outcome_counts` never go down). An item a request names keeps its
    /// URL and its id, which no other item is given, as a dropped item.
    /// Returns how many were removed.
    fn drop_items(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<u64>;

    fn attempts(&mut self, url: Option<&str>, limit: usize) -> Result<Vec<AttemptRow>>;

    /// The schema version the ledger has.
    fn schema_version(&mut self) -> Result<i64>;

    /// Everything in the ledger. Unless `in_flight_ok`, refused while a
    /// reservation is in flight: a copy must not carry URLs being sent.
    fn export(&mut self, in_flight_ok: bool) -> Result<Dump>;

    /// Merges a dump in, idempotently (in one transaction): items take the
    /// dump's state (except those in flight here), attempts the ledger
    /// already has are not added twice, budget usage takes the larger count,
    /// blocks and paces the later time, credentials the earlier first use,
    /// reminders and sitemaps read the later time.
    fn import(&mut self, dump: &Dump) -> Result<Copied>;

    // History and monitoring (`metrics`, `history`): read-only summaries of
    // the attempts, and the record of `submit` runs. Each is one short
    // query in each backend, at the end of its `impl Ledger`.

    /// Attempts since the ledger began, per group and class, counting one
    /// per URL attempted (a request that named many URLs counts once for
    /// each). Pairs with no attempt are left out. Items removed by
    /// `drop_items` leave their attempts: a count never goes down (it is a
    /// Prometheus counter).
    fn outcome_counts(&mut self) -> Result<Vec<(GroupKey, Class, u64)>>;

    /// Attempts per group, span of time and class, counted like
    /// `outcome_counts`: span `i` is `[bounds[i], bounds[i + 1])` (`bounds`
    /// ascending, e.g. the starts of a report's days in a rule's timezone
    /// and the end of the last). Only counts above zero; fewer than two
    /// bounds, none.
    fn attempt_history(&mut self, bounds: &[DateTime<Utc>]) -> Result<Vec<SpanCount>>;

    /// Records a `submit` run that ended (times kept to the millisecond).
    fn record_run(&mut self, run: &RunRecord) -> Result<()>;

    /// The last `submit` run recorded (by any machine sharing the ledger),
    /// or with `succeeded`, the last that exited 0.
    fn last_run(&mut self, succeeded: bool) -> Result<Option<RunRecord>>;
}
