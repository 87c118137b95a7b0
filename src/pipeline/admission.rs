//! The admission seam: what the intake (`Admitting`) asks when it has read
//! a batch of URLs, a sitemap to submit, or a source's read. Two
//! implementations answer it: `Writing`, a real run, writes to the ledger
//! (`Ledger::admit`, the sources' documents and failures); the dry run's
//! `Plan` asks the ledger what admission would make of each URL and writes
//! nothing. The intake itself never asks which one it has.

use super::findings::Findings;
use crate::ledger::{Admission, AdmitRule, Ledger, NewItem};
use crate::model::{SourceDocument, SourceFailure};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use std::sync::Arc;

/// What an admission works on besides its batch: the run's ledger, the
/// findings it counts in, and the user's timezone (a plan's paced waits
/// are told in it).
pub(super) struct Seat<'s> {
    pub(super) ledger: &'s mut dyn Ledger,
    pub(super) findings: &'s mut Findings,
    pub(super) user_tz: Tz,
}

/// Admission, as the intake asks for it (from a future that may move
/// between threads: `Send`).
pub(super) trait Admit: Send {
    /// What admission makes of each URL of `batch` read from the input, in
    /// its order; `None` for a URL this run met already (the same item).
    fn admit(
        &mut self,
        seat: Seat<'_>,
        batch: &[NewItem],
        rule: &AdmitRule,
        now: DateTime<Utc>,
    ) -> anyhow::Result<Vec<Option<Admission>>>;

    /// A URL of the input that admission queued: a plan places it (now,
    /// at its paced slot, or when the budget frees up); a run sends it.
    fn queued(&mut self, seat: Seat<'_>, item: &NewItem, now: DateTime<Utc>) -> anyhow::Result<()>;

    /// Puts a sitemap's submission in the queue of its groups (`batch`:
    /// one item a group).
    fn admit_sitemap(
        &mut self,
        seat: Seat<'_>,
        batch: &[NewItem],
        rule: &AdmitRule,
        now: DateTime<Utc>,
    ) -> anyhow::Result<()>;

    /// A source that could not be read: as the ledger keeps it (since
    /// when it fails, when it was last said).
    fn source_failed(&mut self, ledger: &mut dyn Ledger, failure: SourceFailure) -> anyhow::Result<SourceFailure>;

    /// A source that read: the failure it had until now, if any, which
    /// the ledger no longer keeps.
    fn source_read(
        &mut self,
        ledger: &mut dyn Ledger,
        property: &str,
        source: &str,
    ) -> anyhow::Result<Option<SourceFailure>>;

    /// The sitemaps read for a source, as the ledger keeps them once their
    /// URLs are in it (`None`: they are not kept, and the changes are
    /// reckoned from what the ledger holds).
    fn keep_documents(
        &mut self,
        ledger: &mut dyn Ledger,
        documents: &[SourceDocument],
    ) -> anyhow::Result<Option<Vec<SourceDocument>>>;
}

/// A real run's admission: written to the ledger. With `--baseline`, what
/// a batch of the input left queued is recorded as announced.
pub(super) struct Writing {
    pub(super) baseline: bool,
}

impl Writing {
    /// `--baseline`: what the batch left queued recorded as announced, one
    /// transaction a group (the count is said per engine).
    fn announce(seat: &mut Seat<'_>, batch: &[NewItem], now: DateTime<Utc>) -> anyhow::Result<()> {
        for chunk in batch.chunk_by(|a, b| Arc::ptr_eq(&a.group, &b.group) || a.group == b.group) {
            let n = seat.ledger.announce(chunk, now)?;
            *seat.findings.announced.entry(chunk[0].group.engine).or_default() += n;
        }
        Ok(())
    }
}

impl Admit for Writing {
    fn admit(
        &mut self,
        mut seat: Seat<'_>,
        batch: &[NewItem],
        rule: &AdmitRule,
        now: DateTime<Utc>,
    ) -> anyhow::Result<Vec<Option<Admission>>> {
        let admissions = seat.ledger.admit(batch, now, rule)?;
        seat.findings.admitted += batch.len() as u64;
        if self.baseline {
            Writing::announce(&mut seat, batch, now)?;
        }
        Ok(admissions.into_iter().map(Some).collect())
    }

    fn queued(&mut self, _seat: Seat<'_>, _item: &NewItem, _now: DateTime<Utc>) -> anyhow::Result<()> {
        Ok(())
    }

    fn admit_sitemap(
        &mut self,
        seat: Seat<'_>,
        batch: &[NewItem],
        rule: &AdmitRule,
        now: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        seat.ledger.admit(batch, now, rule)?;
        seat.findings.admitted += batch.len() as u64;
        Ok(())
    }

    fn source_failed(&mut self, ledger: &mut dyn Ledger, failure: SourceFailure) -> anyhow::Result<SourceFailure> {
        Ok(ledger.record_source_failure(&failure)?)
    }

    fn source_read(
        &mut self,
        ledger: &mut dyn Ledger,
        property: &str,
        source: &str,
    ) -> anyhow::Result<Option<SourceFailure>> {
        Ok(ledger.clear_source_failure(property, source)?)
    }

    fn keep_documents(
        &mut self,
        ledger: &mut dyn Ledger,
        documents: &[SourceDocument],
    ) -> anyhow::Result<Option<Vec<SourceDocument>>> {
        Ok(Some(ledger.record_source_documents(documents)?))
    }
}
