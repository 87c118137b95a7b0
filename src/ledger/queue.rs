//! The queue's part of the ledger: URLs put in it (`Intake`: admission,
//! and the sitemaps read for sources) and the items as commands see and
//! move them (`Queue`: counts, lists, retry and drop, what is parked), and
//! what the engines report of the sitemaps submitted (`SitemapReports`).

use super::Result;
use crate::model::EngineKind;
use crate::model::{
    Action, Class, GroupKey, ItemState, ParkedGroup, QueueCounts, Reason, SitemapRead, SitemapState, SourceDocument,
    SourceFailure,
};
use chrono::{DateTime, TimeDelta, Utc};
use std::sync::Arc;

/// One URL to put in the queue.
#[derive(Debug, Clone)]
pub struct NewItem {
    pub url: String,
    /// Shared by the run's items of one group: a URL costs no copy of it.
    pub group: Arc<GroupKey>,
    /// What the engine is told about the URL (Google: updated or deleted).
    pub action: Action,
    /// When the site says the page last changed (sitemap `lastmod`, as
    /// written: a date as `model::lastmod` keeps it, a time in the future
    /// as it is — admission reads it as the moment it is read).
    pub lastmod: Option<DateTime<Utc>>,
    /// Its property's timezone: the day a date-only `lastmod` names.
    pub zone: chrono_tz::Tz,
}

/// When a URL accepted before is sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmitRule {
    /// Not within this long after its acceptance...
    pub dedupe: TimeDelta,
    /// ...unless forced...
    pub force: bool,
    /// ...and with `--changed`, only if its `lastmod` is later than the
    /// one recorded at its last acceptance (`policy::changed_since`; the
    /// dedupe window then does not apply)...
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

/// What `admit` would make of a URL (`Intake::preview`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    /// The id of its item, when the ledger holds one.
    pub held: Option<i64>,
    pub admission: Admission,
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

/// The public URL a Ghost post or page was last announced at (`serve`'s
/// Ghost hook, on `published` and `published.edited`): what its
/// `unpublished` and `deleted`, whose payloads carry none, announce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GhostUrl {
    pub property: String,
    /// Ghost's id of the post or page (they share one table in Ghost: one
    /// id names one of either).
    pub ghost_id: String,
    pub url: String,
    pub announced_at: DateTime<Utc>,
}

/// URLs into the queue: what `submit` reads goes here first, in batches.
/// Every method is one transaction.
pub trait Intake {
    /// What `admit` would make of each URL of `batch`, read only (a dry
    /// run), as `policy::admit` decides it from what the ledger holds.
    fn preview(&mut self, batch: &[NewItem], rule: &AdmitRule, now: DateTime<Utc>) -> Result<Vec<Preview>>;

    /// Puts URLs in the queue (one transaction for the whole batch), as
    /// `policy::admit` decides for each from what the ledger holds of it: a
    /// URL accepted within the dedupe window costs a lookup, no write.
    fn admit(&mut self, batch: &[NewItem], now: DateTime<Utc>, rule: &AdmitRule) -> Result<Vec<Admission>>;

    /// `submit --baseline`: the URLs of `batch`, admitted already, that are
    /// queued recorded as accepted at `now` with no request sent
    /// (`policy::announced` says which); how many. Outside
    /// `begin_admissions`.
    fn announce(&mut self, batch: &[NewItem], now: DateTime<Utc>) -> Result<u64>;

    /// From here to `end_admissions`, batches admitted may share write
    /// transactions (a whole input read before anything is sent: fewer
    /// commits, each writing fewer pages again). A URL `admit` took is in
    /// the ledger once `end_admissions` returns, or once any other write
    /// of the ledger begins — never later than before anything is sent.
    /// Not for an intake that answers for each batch (`serve`), nor while
    /// waiting on the network or a pipe (the write lock is held).
    fn begin_admissions(&mut self) {}

    /// Commits what `admit` took since `begin_admissions`, and admits batch
    /// by batch again.
    fn end_admissions(&mut self) -> Result<()> {
        Ok(())
    }

    /// What the ledger keeps of the remote sitemaps read for sources.
    fn source_documents(&mut self) -> Result<Vec<SourceDocument>>;

    /// Records sitemaps read for sources (replacing what it kept of each
    /// URL), once every URL read from them is in the ledger, and returns
    /// them as kept: a document whose digest the ledger holds already keeps
    /// the `changed_at` it had (`policy::kept_changes`), in the same
    /// transaction, so that two runs reading one new body agree on when it
    /// changed.
    fn record_source_documents(&mut self, documents: &[SourceDocument]) -> Result<Vec<SourceDocument>>;

    /// The public URL last announced for Ghost's post or page `ghost_id`
    /// of `property`, if one was.
    fn ghost_url(&mut self, property: &str, ghost_id: &str) -> Result<Option<String>>;

    /// Remembers the public URL of a Ghost post or page, replacing what was
    /// kept of it unless that was announced later.
    fn record_ghost_url(&mut self, url: &GhostUrl) -> Result<()>;

    /// The sources whose last read failed, by property and source.
    fn source_failures(&mut self) -> Result<Vec<SourceFailure>>;

    /// Records a failed read of a source: its reason, message and
    /// `failed_at` replace those kept, while a source failing already keeps
    /// its `since` and `reminded_at` (those of `failure` are taken only for
    /// a source new to failing). Returns the failure as kept.
    fn record_source_failure(&mut self, failure: &SourceFailure) -> Result<SourceFailure>;

    /// A source of `property` read again: forgets its failure and returns
    /// it, if it had one.
    fn clear_source_failure(&mut self, property: &str, source: &str) -> Result<Option<SourceFailure>>;

    /// Keeps that a run said, at `at`, that these sources (property, source) cannot be read.
    fn record_source_reminders(&mut self, told: &[(String, String)], at: DateTime<Utc>) -> Result<()>;
}

/// What the engines report of the sitemaps submitted to them (sitemap
/// groups), read back after each submission. Every method is one
/// transaction.
pub trait SitemapReports {
    /// Records one read of an engine's report on a sitemap group (`read`,
    /// at `at`): the report (or, failed, the answer; the last report
    /// stands), and since when its problems hold (`policy::sitemap_marks`).
    fn record_sitemap_read(&mut self, group: &GroupKey, read: &SitemapRead, at: DateTime<Utc>) -> Result<()>;

    /// Every sitemap group with an item (its submission): the item's state
    /// and last acceptance, what was last read of the engine's report, and
    /// when each of its problems was last said.
    fn sitemap_states(&mut self) -> Result<Vec<SitemapState>>;
}

/// The items as the queue commands, `status` and reports see and move them.
/// Every method is one transaction.
pub trait Queue {
    /// Every group the ledger holds items for (or ever did).
    fn stored_groups(&mut self) -> Result<Vec<GroupKey>>;

    /// Groups that have items due at `now`.
    fn due_groups(&mut self, now: DateTime<Utc>) -> Result<Vec<GroupKey>>;

    /// The earliest time a queued item of `group` becomes due, if any.
    fn next_due(&mut self, group: &GroupKey) -> Result<Option<DateTime<Utc>>>;

    fn queue_counts(&mut self, group: &GroupKey, now: DateTime<Utc>) -> Result<QueueCounts>;

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

    /// When a run last said the problem kept under `key` for `group` (a
    /// reminder recorded by [`Queue::record_reminders`]), if one ever did.
    fn reminded_at(&mut self, group: &GroupKey, key: &str) -> Result<Option<DateTime<Utc>>>;

    /// Claims, at `at`, the notification of the problem kept under `key`
    /// for `group` (`[notify]`, kept beside the reminders): the one
    /// transaction whose conditional write finds no notification of it
    /// later than `cutoff` wins, and every other gets `None`, so that two
    /// machines sharing a ledger do not both notify. A group the ledger
    /// does not hold is never claimed.
    fn claim_notice(
        &mut self,
        group: &GroupKey,
        key: &str,
        at: DateTime<Utc>,
        cutoff: DateTime<Utc>,
    ) -> Result<Option<NoticeClaim>>;

    /// The notifications recorded under keys that start with `prefix`: the
    /// group, the key and when it was claimed.
    fn notices_sent(&mut self, prefix: &str) -> Result<Vec<(GroupKey, String, DateTime<Utc>)>>;

    /// Takes away the notification recorded at `at` (its problem is
    /// resolved): true for the one transaction that removes it.
    fn take_notice(&mut self, group: &GroupKey, key: &str, at: DateTime<Utc>) -> Result<bool>;

    /// Gives back a claim whose notification failed, so that the next run
    /// tries again: the record claimed at `claimed` (none: taken away by
    /// [`Queue::take_notice`]) is put back to `previous` (none: removed),
    /// unless another claim has replaced it meanwhile.
    fn give_back_notice(
        &mut self,
        group: &GroupKey,
        key: &str,
        claimed: Option<DateTime<Utc>>,
        previous: Option<DateTime<Utc>>,
    ) -> Result<()>;
}

/// A notification claimed by [`Queue::claim_notice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoticeClaim {
    /// When it was claimed.
    pub at: DateTime<Utc>,
    /// When it was notified before, if ever (what a give-back restores).
    pub previous: Option<DateTime<Utc>>,
}
