//! What runs leave: the attempts (`log`, `status`), their counts over time
//! (metrics, the report), the inspections per class, the record of each
//! `submit` run. (The first use of each credential is kept by claims and
//! answers: `ClaimSpec::credential`, `Finish::accepted_credential`.)

use super::{InspectionAnswer, Result};
use crate::model::{Class, GroupKey, Reason, RunRecord};
use chrono::{DateTime, Utc};

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

/// A property's inspections of one class since the ledger began: how many,
/// and the last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectionCount {
    pub property: String,
    pub class: Class,
    pub count: u64,
    pub last: InspectionAnswer,
}

/// History and monitoring (`log`, `status`, `metrics`, `report`): read-only
/// summaries of the attempts, and the record of `submit` runs. Every method
/// is one transaction.
pub trait Runs {
    fn attempts(&mut self, url: Option<&str>, limit: usize) -> Result<Vec<AttemptRow>>;

    fn last_rejection(&mut self, group: &GroupKey) -> Result<Option<AttemptRow>>;

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

    /// Every property's inspections per class since the ledger began
    /// (`ledger copy` does not carry them), by property and class.
    fn inspections(&mut self) -> Result<Vec<InspectionCount>>;

    /// Records a `submit` run that ended (times kept to the millisecond).
    fn record_run(&mut self, run: &RunRecord) -> Result<()>;

    /// The last `submit` run recorded (by any machine sharing the ledger),
    /// or with `succeeded`, the last that exited 0.
    fn last_run(&mut self, succeeded: bool) -> Result<Option<RunRecord>>;
}
