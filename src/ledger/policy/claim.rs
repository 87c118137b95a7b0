//! The claim: from the rules' usage, the number of due items, the batch
//! size and the pace, how many items go now, how many wait for their paced
//! slot, and when the rest may go; the ledger's clock and a claim's lease.

use super::super::{Pace, RuleWindow, Usage};
use chrono::{DateTime, TimeDelta, Utc};

/// Whole seconds, rounded up: a paced item is never due before its slot.
pub fn ts_ceil(t: DateTime<Utc>) -> i64 {
    let secs = t.timestamp();
    if t.timestamp_subsec_nanos() > 0 {
        secs + 1
    } else {
        secs
    }
}

/// The instant the ledger decides with: its clock, but never earlier than
/// the latest instant a run recorded, so that a clock set back (or a
/// machine behind the others) never reopens a window that has closed.
pub fn ledger_now(clock: DateTime<Utc>, latest: Option<DateTime<Utc>>) -> DateTime<Utc> {
    latest.map_or(clock, |l| l.max(clock))
}

/// When a claim's reservation stops being trusted without a live owner:
/// `lease` after its last paced slot (or after `now`), so that a paced
/// claim is never reconciled while it still waits for a slot.
pub fn lease_until(now: DateTime<Utc>, slots: &[DateTime<Utc>], lease: TimeDelta) -> DateTime<Utc> {
    slots.iter().copied().fold(now, DateTime::max) + lease
}

/// A pace's theoretical arrival time (GCRA), loaded and stored by the
/// backend in a claim's transaction so that every process shares it.
pub struct PaceState<'p> {
    pace: &'p Pace,
    now: DateTime<Utc>,
    tat: DateTime<Utc>,
    /// The last instant a slot of this claim may take: the pace's horizon,
    /// and before the first of the claim's windows ends — a request is
    /// charged to the window it goes in, so a slot in the next window is
    /// claimed there, once it has opened.
    horizon: DateTime<Utc>,
}

impl<'p> PaceState<'p> {
    /// From the stored arrival time (milliseconds), if any, for a claim
    /// counted against `windows`.
    pub fn new(pace: &'p Pace, now: DateTime<Utc>, tat_ms: Option<i64>, windows: &[RuleWindow]) -> PaceState<'p> {
        let tat = tat_ms.and_then(DateTime::from_timestamp_millis).unwrap_or(now).max(now);
        let window_end = windows.iter().map(|w| w.resets_at - TimeDelta::milliseconds(1)).min();
        // A horizon already past (a claim decided a moment after it was
        // asked for) is the claim's own instant.
        let horizon = pace.horizon.max(now);
        let horizon = window_end.map_or(horizon, |end| end.min(horizon));
        PaceState { pace, now, tat, horizon }
    }

    /// The arrival time to store.
    pub fn tat_ms(&self) -> i64 {
        self.tat.timestamp_millis()
    }

    fn tolerance(&self) -> TimeDelta {
        self.pace.interval * self.pace.burst as i32
    }

    /// How many of `wanted` sends have a slot at or before the horizon.
    fn fitting(&self, wanted: usize) -> usize {
        let first = self.tat - self.tolerance();
        if first > self.horizon {
            return 0;
        }
        let span = (self.horizon - first).num_milliseconds();
        let step = self.pace.interval.num_milliseconds().max(1);
        usize::try_from(span / step + 1).unwrap_or(usize::MAX).min(wanted)
    }

    /// Takes the next slot.
    pub fn next_slot(&mut self) -> DateTime<Utc> {
        let slot = (self.tat - self.tolerance()).max(self.now);
        self.tat += self.pace.interval;
        slot
    }

    /// When the `n`-th send from now is expected, without taking it.
    pub fn estimate(&self, n: usize) -> DateTime<Utc> {
        (self.tat + self.pace.interval * n as i32 - self.tolerance()).max(self.now)
    }
}

/// The due items in their order (`next_attempt_at`, id): the first `take`
/// are claimed, those before `paced_until` wait for their slot, and the rest
/// (if `retry_at`) wait until then, when budget frees up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimPlan {
    pub take: usize,
    pub paced_until: usize,
    pub retry_at: Option<DateTime<Utc>>,
}

impl ClaimPlan {
    pub fn new(
        rules: &[RuleWindow],
        usages: &[Usage],
        due_count: usize,
        max_items: usize,
        pacing: Option<&PaceState>,
        now: DateTime<Utc>,
    ) -> ClaimPlan {
        let budget = rules.iter().zip(usages).filter_map(|(rule, usage)| usage.remaining(rule, now)).min();
        // Within budget: `avail`. Of those, the pace lets `take` go now
        // (never more than a batch); the rest of `avail` waits for its slot.
        let avail = budget.map_or(due_count, |b| (b as usize).min(due_count));
        let take = avail.min(max_items).min(pacing.map_or(usize::MAX, |p| p.fitting(avail)));
        let paced_until = match pacing {
            Some(_) if take < avail.min(max_items) => avail,
            _ => take,
        };
        let retry_at = (avail < due_count).then(|| {
            rules
                .iter()
                .zip(usages)
                .filter_map(|(rule, usage)| {
                    let after = Usage { used: usage.used + avail as u64, ..*usage };
                    after.available_at(rule, now)
                })
                .max()
                .unwrap_or(now)
        });
        ClaimPlan { take, paced_until, retry_at }
    }
}
