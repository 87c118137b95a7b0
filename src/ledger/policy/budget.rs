//! `Budget`, implemented once for every backend: each method one
//! transaction of the backend's steps (`Backend`), its decisions policy's.
//! A claim's deferrals are told after the claim has committed, on every
//! backend alike: a caller never hears of a deferral that was rolled back.

use super::super::{
    Budget, Claim, ClaimForecast, ClaimQuery, ClaimSpec, Finish, Inspections, LedgerTime, Now, Owner, Reconciled,
    Result,
};
use super::steps::Backend;
use super::{answer, claim};
use crate::model::{GroupKey, Report, RuleWindow, Usage};
use chrono::{DateTime, Utc};

/// How many of a claim's deferred items are told from one read of their URLs.
const TOLD_A_READ: usize = 10_000;

/// Tells `deferred` of each item a committed claim moved to when budget
/// frees up, with their URLs read a chunk at a time: a million deferred
/// URLs are never held at once.
fn tell_deferred(
    backend: &mut impl Backend,
    (claim, moved): (Claim, claim::Deferred),
    deferred: &mut dyn FnMut(i64, &str, DateTime<Utc>),
) -> Result<Claim> {
    if let Some(at) = claim.retry_at {
        for ids in moved.chunks(TOLD_A_READ) {
            for (id, url) in backend.read(|steps| steps.urls(ids))? {
                deferred(id, &url, at);
            }
        }
    }
    Ok(claim)
}

impl<B: Backend> Budget for B {
    fn now(&mut self, now: Now, record: bool) -> Result<LedgerTime> {
        match record {
            true => self.write(|steps| claim::clock(steps, now, true)),
            false => self.read(|steps| claim::clock(steps, now, false)),
        }
    }

    fn reconcile(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<Reconciled> {
        self.write(|steps| claim::reconcile(steps, now, me, false))
    }

    fn reconcile_mine(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<Reconciled> {
        self.write(|steps| claim::reconcile(steps, now, me, true))
    }

    fn stale_reservations(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<u64> {
        self.read(|steps| Ok(claim::stale(steps, now, me, false, false)?.len() as u64))
    }

    fn claim(
        &mut self,
        group: &GroupKey,
        spec: &ClaimSpec,
        me: &Owner,
        deferred: &mut dyn FnMut(i64, &str, DateTime<Utc>),
    ) -> Result<Claim> {
        let lease = self.lease();
        let decided = self.write(|steps| claim::claim(steps, group, spec, me, lease))?;
        tell_deferred(self, decided, deferred)
    }

    fn finish_and_claim(
        &mut self,
        done: &Finish,
        group: &GroupKey,
        spec: &ClaimSpec,
        me: &Owner,
        deferred: &mut dyn FnMut(i64, &str, DateTime<Utc>),
    ) -> Result<Claim> {
        let lease = self.lease();
        let decided = self.write(|steps| {
            answer::finish(steps, done)?;
            claim::claim(steps, group, spec, me, lease)
        });
        match decided {
            Ok(decided) => tell_deferred(self, decided, deferred),
            Err(err) => {
                self.write(|steps| answer::finish(steps, done))?;
                Err(err)
            }
        }
    }

    fn take_units(&mut self, rules: &[RuleWindow], n: u64, now: DateTime<Utc>) -> Result<u64> {
        self.write(|steps| claim::take_units(steps, rules, n, now))
    }

    fn record_inspections(&mut self, done: &Inspections) -> Result<()> {
        self.write(|steps| answer::record_inspections(steps, done))
    }

    fn finish(&mut self, done: &Finish) -> Result<()> {
        self.write(|steps| answer::finish(steps, done))
    }

    fn finish_if_open(&mut self, done: &Finish) -> Result<bool> {
        self.write(|steps| answer::finish_if_open(steps, done))
    }

    fn plan_claim(&mut self, query: &ClaimQuery) -> Result<ClaimForecast> {
        self.read(|steps| claim::forecast(steps, query))
    }

    fn due_in_order(
        &mut self,
        group: &GroupKey,
        now: DateTime<Utc>,
        n: usize,
        order: crate::model::SubmitOrder,
    ) -> Result<Vec<(i64, String)>> {
        self.read(|steps| claim::due_in_order(steps, group, now, n, order))
    }

    fn usage(&mut self, rule: &RuleWindow) -> Result<Usage> {
        self.read(|steps| steps.usage(rule))
    }

    fn record_report(&mut self, rule: &RuleWindow, remaining: u64, now: DateTime<Utc>) -> Result<Report> {
        self.write(|steps| answer::report(steps, rule, remaining, now, None))
    }
}
