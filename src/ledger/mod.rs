//! The ledger: everything that must survive a crash — the queue of
//! (url, property, engine, channel, target) items, every attempt with its
//! classified outcome and redacted response body, budget usage per rule and
//! window, and what unattended runs keep between them (the sitemaps read,
//! reminders, the engines' reports on the sitemaps submitted).
//!
//! `Ledger` is the interface in domain terms (admit, claim within budget,
//! finish, reconcile, copy); `sqlite` is its embedded backend and `postgres`
//! the one many machines share, and `open` picks the configured one. Both
//! store what `policy` decides (admission, the claim, what an answer gives
//! back) and pass the same conformance suite (`conformance`, tests only). The ledger
//! knows nothing of HTTP or of how answers are classified: it stores
//! classes and times that the scheduler decided. Its errors (`LedgerError`)
//! live in `crate::error`, with the others that end a run.
//!
//! Each backend's schema migrations (`sqlite/schema/` and
//! `postgres/schema/`, with `SCHEMA_VERSION` in each `schema.rs`) are an
//! independent history: a number names a step of that backend alone, and
//! the two backends' files of one number need not mean the same (7 to 9 do
//! not). A ledger records its own backend's version.

mod batch_groups;
pub(crate) mod batches;
mod budget;
#[cfg(test)]
mod conformance;
mod copy;
mod find_ids;
mod item_ids;
mod kept_runs;
mod limits;
mod look_up;
pub mod open;
mod owner;
mod policy;
mod postgres;
mod queue;
mod runs;
mod sql;
mod sqlite;
mod stored;
mod url_keys;

pub use crate::error::LedgerError;
pub use owner::Owner;
pub use postgres::{PgLedger, PgOptions, CONNECT_HINT as PG_CONNECT_HINT, SCHEMA_VERSION as PG_SCHEMA_VERSION};
pub use sqlite::SqliteLedger;
pub use url_keys::url_key;

pub use budget::{
    Answered, Block, Budget, Claim, ClaimForecast, ClaimQuery, ClaimSpec, ClaimedItem, Finish, InspectionAnswer,
    Inspections, LedgerTime, Now, Pace, Reconciled, Remainder, Slots, Windows,
};
pub use copy::{copy, Copied, CopyError, Rows};
use copy::{CopyDropped, CopyItem, CopyRequest, CopyUsage};
pub use limits::{Gcra, Limits, RateDecision, RateRequest};
pub use queue::{
    Admission, AdmitRule, GhostUrl, Intake, ItemFilter, ItemRow, NewItem, NoticeClaim, Preview, Queue, SitemapReports,
    StateFilter,
};
pub use runs::{AttemptRow, InspectionCount, Runs, SpanCount};
use stored::{
    cap_body, stored, stored_group, stored_inspection, stored_last_reason, stored_opt, stored_reason, Recorded,
    StoredSitemap,
};

use crate::config::{ConfigError, LedgerLocation, LedgerOptions};
use crate::model::{
    kept_changes, Action, Class, GroupKey, ItemState, ParkedGroup, QueueCounts, Reason, Report, RuleWindow, RunRecord,
    SitemapRead, SitemapState, SourceDocument, SourceFailure, StoredResponse, Usage,
};
// The tests of the backends' modules name engines through `crate::ledger::*`.
#[cfg(test)]
use crate::model::EngineKind;
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

/// The whole ledger, as `open` gives it: each part is a trait of its own
/// (`Intake`, `Queue`, `SitemapReports`, `Budget`, `Runs`, `Rows`,
/// `Limits`), and code that needs one part takes that part.
pub trait Ledger: Intake + Queue + SitemapReports + Budget + Runs + Rows + Limits {}

impl<T: Intake + Queue + SitemapReports + Budget + Runs + Rows + Limits> Ledger for T {}
