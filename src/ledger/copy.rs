//! `ledger copy`: a whole ledger out of one backend and into another.

use super::{LedgerError, Result};
use crate::model::{Action, Class, GroupKey, ItemState, Reason, SourceDocument, StoredResponse};
use chrono::{DateTime, Utc};

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

/// Why a ledger with reservations in flight is not copied.
pub(super) fn in_flight_error(n: i64) -> LedgerError {
    LedgerError::Invalid(format!(
        "{n} reservation(s) are in flight: wait for the running `submit` to end (a stopped run's are \
         reconciled by the next `submit`), then copy"
    ))
}

/// The ledger as rows: its schema, and everything in it for a copy.
pub trait Rows {
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
}
