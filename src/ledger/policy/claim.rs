//! The claim: from the rules' usage, the number of due items, the batch
//! size and the pace, how many items go now, how many wait for their paced
//! slot, and when the rest may go; the ledger's clock and a claim's lease;
//! the order windows are held in; a grant of units without a queue item;
//! which reservations a reconcile returns; and a dry run's forecast of a
//! claim. Each backend takes the steps (`ClaimSteps`) in one transaction.

use super::super::{
    Claim, ClaimForecast, ClaimQuery, ClaimSpec, LedgerError, LedgerTime, Now, Owner, Pace, Reconciled, Result,
    RuleWindow, Slots, Usage,
};
use super::steps::{ClaimSteps, Kept, Taken};
use crate::model::{Channel, GroupKey, Report, RuleFamily, SubmitOrder};
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

/// The ledger's clock (`Budget::now`): `ledger_now` of its own clock and
/// the latest instant recorded; with `record`, that instant (to the whole
/// second, as the ledger keeps times) recorded as the latest.
pub fn clock(steps: &mut (impl ClaimSteps + ?Sized), now: Now, record: bool) -> Result<LedgerTime> {
    let clock = steps.own_clock(now)?;
    let latest = steps.latest(record)?;
    let now = ledger_now(clock, latest);
    let second = DateTime::from_timestamp(now.timestamp(), 0).unwrap_or(now);
    if record && latest.is_none_or(|l| second > l) {
        steps.record_latest(second)?;
    }
    Ok(LedgerTime { now, latest, clock })
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
        self.slots().at(n)
    }

    /// When each send from now is expected.
    pub fn slots(&self) -> Slots {
        Slots { first: self.tat - self.tolerance(), interval: self.pace.interval, now: self.now }
    }
}

/// One key of the order a claim takes due items in; each backend writes
/// it in its dialect's `ORDER BY` (`DueOrder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DueKey {
    /// Retries before the others: items an engine's answer (or an
    /// interrupted request) sent back to the queue, whose last class is
    /// not `accepted`.
    RetriesFirst,
    /// Retries by due time (the others tie on it).
    RetryDue,
    /// By due time (`next_attempt_at`).
    Due,
    /// The newest `lastmod` first, the time the URL was queued where it
    /// has none.
    Newest,
    /// By id: as the URLs were first read.
    Id,
}

/// The order a claim takes a group's due items in, its keys from the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DueOrder(pub &'static [DueKey]);

impl DueOrder {
    /// By due time, then as first read: `order = "oldest"`, and every
    /// group with no daily quota.
    pub const BY_DUE: DueOrder = DueOrder(&[DueKey::Due, DueKey::Id]);
    /// `order = "newest"`: retries keep their place by due time, ahead of
    /// the rest, which go newest first; equals as first read.
    pub const NEWEST: DueOrder = DueOrder(&[DueKey::RetriesFirst, DueKey::RetryDue, DueKey::Newest, DueKey::Id]);

    /// Whether this is the order by due time (a place in it is a due time
    /// and an id: `ClaimSteps::nth_due`).
    pub fn by_due(self) -> bool {
        self == DueOrder::BY_DUE
    }

    /// The order a group's claims take: the configured one for the URLs of
    /// an engine with a daily quota, where the budget decides which URLs
    /// wait for days; by due time for the others (IndexNow, whose
    /// endpoints set no daily quota, and the sitemaps an engine is told of).
    pub fn of(group: &GroupKey, order: SubmitOrder) -> DueOrder {
        match (order, group.engine.daily_quota() && group.channel == Channel::Urls) {
            (SubmitOrder::Newest, true) => DueOrder::NEWEST,
            _ => DueOrder::BY_DUE,
        }
    }
}

/// The due items in their order (`DueOrder`): the first `take`
/// are claimed, those before `paced_until` wait for their slot, those
/// before `within` stay due (the budget covers them: the next batch takes
/// them), and the rest (if `retry_at`) wait until then, when budget frees
/// up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimPlan {
    pub take: usize,
    pub paced_until: usize,
    pub within: usize,
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
        // A rule whose engine says what is left in its answers, before it
        // has said so in this window (`RuleFamily::states_in_answers`):
        // its fallback bounds the take, never what waits — the answer to
        // this claim says how much more the next may take.
        let unstated = |(rule, usage): &(&RuleWindow, &Usage)| {
            rule.reported
                && usage.reported.is_none()
                && usage.remaining(rule, now).is_some_and(|left| left > 0)
                && RuleFamily::of_rule_id(&rule.rule).is_some_and(RuleFamily::states_in_answers)
        };
        let remaining = |(rule, usage): (&RuleWindow, &Usage)| usage.remaining(rule, now);
        let windows = || rules.iter().zip(usages);
        let budget = windows().filter(|w| !unstated(w)).filter_map(remaining).min();
        let first = windows().filter(|w| unstated(w)).filter_map(remaining).min();
        // Within budget: `avail`. Of those, the pace lets `take` go now
        // (never more than a batch); the rest of `avail` waits for its slot.
        let avail = budget.map_or(due_count, |b| (b as usize).min(due_count));
        let bounded = first.map_or(avail, |f| (f as usize).min(avail));
        let take = bounded.min(max_items).min(pacing.map_or(usize::MAX, |p| p.fitting(bounded)));
        let paced_until = match pacing {
            Some(_) if take < bounded.min(max_items) => bounded,
            _ => take,
        };
        let retry_at = (avail < due_count).then(|| {
            windows()
                .filter(|w| !unstated(w))
                .filter_map(|(rule, usage)| {
                    let after = Usage { used: usage.used + avail as u64, ..*usage };
                    after.available_at(rule, now)
                })
                .max()
                .unwrap_or(now)
        });
        ClaimPlan { take, paced_until, within: avail, retry_at }
    }
}

/// How far a claim counts the due items (`due_cap`), or none when no pace
/// spaces them and the group's whole queue (its kept count) fits what every
/// window allows: every due item is then within budget and nothing is deferred,
/// so the plan is a batch of what is due, and the take counts it (`claim`).
/// Counting first read the queue's head twice a claim. Where a million due
/// items were counted to a budget of millions, that second read was a large
/// share of a large submit; counted to the batch on PostgreSQL, it walked past
/// every entry the answers left in the queue's index until a vacuum, so each
/// claim grew slower as the run went on (docs/performance.md, *Measured
/// choices*).
fn count_cap(
    steps: &mut (impl ClaimSteps + ?Sized),
    group: i64,
    rules: &[RuleWindow],
    usages: &[Usage],
    max_items: usize,
    paced: bool,
    now: DateTime<Utc>,
) -> Result<Option<usize>> {
    let cap = due_cap(rules, usages, max_items, now);
    if paced {
        return Ok(Some(cap));
    }
    let fits = match room(rules, usages, now) {
        Some(budget) => steps.queued(group)? <= budget,
        None => true,
    };
    Ok((!fits).then_some(cap))
}

/// A time as the ledger keeps it: the whole second at or after it.
pub fn whole_second_after(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(ts_ceil(t), 0).unwrap_or(t)
}

/// What every window still allows at `now` (`None`: no window limits).
pub fn room(rules: &[RuleWindow], usages: &[Usage], now: DateTime<Utc>) -> Option<u64> {
    rules.iter().zip(usages).filter_map(|(rule, usage)| usage.remaining(rule, now)).min()
}

/// How far a claim counts the due items: past the budget and the batch,
/// more makes no difference to the plan.
pub fn due_cap(rules: &[RuleWindow], usages: &[Usage], max_items: usize, now: DateTime<Utc>) -> usize {
    room(rules, usages, now).map_or(max_items, |b| (b as usize).max(max_items)).saturating_add(1)
}

/// The windows in the one order every transaction takes them (rule, then
/// window): two transactions never wait for each other in a circle.
pub fn lock_order<'r>(rules: impl IntoIterator<Item = &'r RuleWindow>) -> Vec<&'r RuleWindow> {
    let mut sorted: Vec<&RuleWindow> = rules.into_iter().collect();
    sorted.sort_by(|a, b| (&a.rule, &a.window).cmp(&(&b.rule, &b.window)));
    sorted
}

/// Each window's usage, in `rules`' order, the windows held in lock order.
fn held_usages(steps: &mut (impl ClaimSteps + ?Sized), rules: &[RuleWindow]) -> Result<Vec<Usage>> {
    let mut usages = vec![Usage::default(); rules.len()];
    let mut order: Vec<usize> = (0..rules.len()).collect();
    order.sort_by(|&a, &b| (&rules[a].rule, &rules[a].window).cmp(&(&rules[b].rule, &rules[b].window)));
    for i in order {
        usages[i] = steps.window(&rules[i])?;
    }
    Ok(usages)
}

/// The ids of the due items a claim moved to when budget frees up
/// (`Claim::retry_at`). The caller is told of them once the claim has
/// committed.
pub type Deferred = Vec<i64>;

/// One claim, in the caller's transaction (`Budget::claim`): at the
/// ledger's clock (recorded as the latest), the windows held and read, the
/// group's queue held, the plan made (`ClaimPlan`), its items taken under a
/// new reservation, the next ones moved to their paced slots and the rest
/// to when budget frees up; then the units counted against every window
/// and the lease set.
pub fn claim(
    steps: &mut (impl ClaimSteps + ?Sized),
    group: &GroupKey,
    spec: &ClaimSpec,
    me: &Owner,
    lease: TimeDelta,
) -> Result<(Claim, Deferred)> {
    let ClaimSpec { windows, max_items, pace, now, credential, order } = *spec;
    let order = DueOrder::of(group, order);
    let now = clock(steps, now, true)?.now;
    let rules = windows.at(now);
    let mut claim = Claim { now, windows: rules.clone(), ..Claim::default() };
    let Some(group) = steps.group(group)? else { return Ok((claim, Vec::new())) };
    let usages = held_usages(steps, &rules)?;
    steps.hold_queue(group)?;
    let pacing = match pace {
        Some(p) => Some(PaceState::new(p, now, steps.pace(&p.key, true)?, &rules)),
        None => None,
    };
    let (plan, taken) = match count_cap(steps, group, &rules, &usages, max_items, pace.is_some(), now)? {
        Some(cap) => {
            let due = steps.count_due(group, now, cap)?;
            let plan = ClaimPlan::new(&rules, &usages, due, max_items, pacing.as_ref(), now);
            let taken = if plan.take > 0 { steps.take_due(group, now, plan.take, order, me)? } else { None };
            (plan, taken)
        }
        None => {
            // The queue fits: a batch of what is due, counted by the take.
            let taken = steps.take_due(group, now, max_items, order, me)?;
            let due = taken.as_ref().map_or(0, |t| t.items.len());
            (ClaimPlan::new(&rules, &usages, due, max_items, pacing.as_ref(), now), taken)
        }
    };
    if let Some(Taken { reservation, mut items }) = taken {
        // By due time, the items go in that order; in another, as the
        // backend returned them, which is that order.
        if order.by_due() {
            items.sort_by_key(|(at, item)| (*at, item.id));
        }
        claim.items = items.into_iter().map(|(_, item)| item).collect();
        claim.reservation = Some(reservation);
    }
    let deferred = place_the_rest(steps, group, order, &plan, pacing.as_ref(), &mut claim)?;
    if let (Some(mut p), Some(pace)) = (pacing, pace) {
        claim.slots = (0..claim.items.len()).map(|_| p.next_slot()).collect();
        steps.set_pace(&pace.key, p.tat_ms())?;
    }
    if let Some(reservation) = claim.reservation {
        let units = claim.items.len() as u64;
        let held: Vec<RuleWindow> = lock_order(&rules).into_iter().cloned().collect();
        // The windows are held and were read above: this cannot fail
        // unless the ledger was changed behind the locks.
        if !steps.charge(&held, units, now)? {
            return Err(LedgerError::Invalid("the budget changed during a claim".into()));
        }
        let until = whole_second_after(lease_until(now, &claim.slots, lease));
        steps.hold(reservation, &held, units, until)?;
        claim.lease_until = Some(until);
        // The credential's first use, with the claim: one commit, before
        // the request goes.
        if let Some(fingerprint) = credential {
            claim.key_first_used = Some(steps.first_use(fingerprint, now)?);
        }
    }
    Ok((claim, deferred))
}

/// The due items a claim does not take: the next ones, within budget,
/// each due at its paced slot (as the ledger keeps times: the whole second
/// after), and the rest due when budget frees up (returned, to be told).
fn place_the_rest(
    steps: &mut (impl ClaimSteps + ?Sized),
    group: i64,
    order: DueOrder,
    plan: &ClaimPlan,
    pacing: Option<&PaceState>,
    claim: &mut Claim,
) -> Result<Deferred> {
    let paced = plan.paced_until.saturating_sub(plan.take);
    if let (Some(p), true) = (pacing, paced > 0) {
        for (position, (id, url)) in steps.next_due(group, claim.now, paced, order)?.into_iter().enumerate() {
            claim.paced.push((id, url, p.estimate(plan.take + position)));
        }
    }
    let mut deferred = Vec::new();
    if let Some(t) = plan.retry_at {
        // What the budget covers is not deferred: the due items after those
        // taken, up to `within` (the paced among them), keep their place.
        // By due time, the place of the last kept (found once, its index
        // read); in another order a place is no range of an index: the
        // kept items themselves, found by one sort of the due items, and
        // the rest found by the index as before.
        let kept = plan.within.saturating_sub(plan.take);
        let keep = match kept {
            0 => Some(Kept::None),
            _ if order.by_due() => steps.nth_due(group, claim.now, kept)?.map(Kept::After),
            _ => {
                let ids: Vec<i64> = steps.next_due(group, claim.now, kept, order)?.into_iter().map(|d| d.0).collect();
                (ids.len() == kept).then_some(Kept::Except(ids))
            }
        };
        // (Fewer due than the budget covers, no place found: none to defer.)
        if let Some(keep) = keep {
            deferred = defer_all(steps, group, claim.now, t, &keep)?;
        }
        claim.deferred = deferred.len() as u64;
    }
    claim.retry_at = plan.retry_at;
    if !claim.paced.is_empty() {
        let moved: Vec<(i64, DateTime<Utc>)> =
            claim.paced.iter().map(|(id, _, at)| (*id, whole_second_after(*at))).collect();
        steps.move_due(&moved)?;
    }
    Ok(deferred)
}

/// The most items one statement defers (`defer_all`). One statement that
/// deferred a million items ran past the default `ledger_timeout` on
/// PostgreSQL, because each row becomes a new version with its index entries,
/// and it held SQLite's page cache at twice its size. This bound keeps a
/// statement to about a second's work on PostgreSQL (docs/performance.md,
/// *Measured choices*). A test build uses 3, so that the conformance suite,
/// which defers 7 items, defers them in several statements.
pub const DEFERRED_A_STATEMENT: usize = if cfg!(test) { 3 } else { 50_000 };

/// Every due item of `group` but those `keep` names, due again at `until`, a statement of `DEFERRED_A_STATEMENT` at a time until
/// fewer come back: a deferred item is due after `now`, so the next
/// statement does not find it again. (Due again at or before `now`, it
/// would be: one statement.)
fn defer_all(
    steps: &mut (impl ClaimSteps + ?Sized),
    group: i64,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    keep: &Kept,
) -> Result<Deferred> {
    // (As the ledger keeps times: whole seconds.)
    let limit = if until.timestamp() > now.timestamp() { DEFERRED_A_STATEMENT } else { usize::MAX };
    let mut deferred = Vec::new();
    loop {
        let ids = steps.defer_due(group, now, until, keep, limit)?;
        let last = ids.len() < limit;
        deferred.extend(ids);
        if last {
            return Ok(deferred);
        }
    }
}

/// Up to `n` units of `rules` that need no queue item (`Budget::take_units`):
/// as many as every window allows, counted against each.
pub fn take_units(
    steps: &mut (impl ClaimSteps + ?Sized),
    rules: &[RuleWindow],
    n: u64,
    now: DateTime<Utc>,
) -> Result<u64> {
    let held: Vec<RuleWindow> = lock_order(rules).into_iter().cloned().collect();
    let usages = held.iter().map(|rule| steps.window(rule)).collect::<Result<Vec<_>>>()?;
    let granted = room(&held, &usages, now).map_or(n, |left| left.min(n));
    // Another transaction changed a window between the read and the count
    // (a block): decided again, from the start.
    if granted > 0 && !steps.charge(&held, granted, now)? {
        return Err(LedgerError::Retry);
    }
    Ok(granted)
}

/// The reservations whose owner is gone: a dead process on this host, or
/// a lease that has ended (`Owner::may_be_alive`); with `mine`, this
/// process's own too.
pub fn stale(
    steps: &mut (impl ClaimSteps + ?Sized),
    now: DateTime<Utc>,
    me: &Owner,
    hold: bool,
    mine: bool,
) -> Result<Vec<i64>> {
    let all = steps.reservations(hold)?;
    Ok(all
        .into_iter()
        .filter(|(_, owner, lease_until)| (mine && owner == me) || !owner.may_be_alive(me, *lease_until, now))
        .map(|r| r.0)
        .collect())
}

/// Returns the items of stale reservations to the queue, due at `now`
/// (`Budget::reconcile`); their budget stays counted.
/// With `mine`, this process's own reservations go back too
/// (`Budget::reconcile_mine`).
pub fn reconcile(
    steps: &mut (impl ClaimSteps + ?Sized),
    now: DateTime<Utc>,
    me: &Owner,
    mine: bool,
) -> Result<Reconciled> {
    let mut done = Reconciled::default();
    for reservation in stale(steps, now, me, true, mine)? {
        if let Some((group, items)) = steps.in_flight(reservation)? {
            steps.interrupted(group, &items, now)?;
            done.items += items.len() as u64;
        }
        steps.end(reservation)?;
        done.reservations += 1;
    }
    Ok(done)
}

/// The first `n` due items of `group` at `now`, in the order its claims
/// take them (`DueOrder::of`): a forecast's `take` and `paced_until` are
/// places in this order (`Budget::due_in_order`).
pub fn due_in_order(
    steps: &mut (impl ClaimSteps + ?Sized),
    group: &GroupKey,
    now: DateTime<Utc>,
    n: usize,
    order: SubmitOrder,
) -> Result<Vec<super::steps::Due>> {
    let Some(id) = steps.group(group)? else { return Ok(Vec::new()) };
    steps.next_due(id, now, n, DueOrder::of(group, order))
}

/// More due items than any queue holds: a forecast of "as many as fit".
const UNBOUNDED: usize = usize::MAX / 4;

/// The claim a run would make now (`Budget::plan_claim`), read only: each
/// window's usage with what the engine says is left of the reported ones
/// (recorded as a real run would), and the pace's stored arrival time.
pub fn forecast(steps: &mut (impl ClaimSteps + ?Sized), query: &ClaimQuery) -> Result<ClaimForecast> {
    let ClaimQuery { windows, reported, pace, now } = *query;
    let mut usages = windows.iter().map(|w| steps.usage(w)).collect::<Result<Vec<_>>>()?;
    for &(period, remaining) in reported {
        for (_, u) in windows.iter().zip(&mut usages).filter(|(w, _)| w.reported && w.period == period) {
            let limit = super::reported_limit(u.used, remaining, 0);
            u.reported = Some(Report { at: now, remaining, limit });
        }
    }
    let pacing = match pace {
        Some(p) => Some(PaceState::new(p, now, steps.pace(&p.key, false)?, windows)),
        None => None,
    };
    let plan = ClaimPlan::new(windows, &usages, UNBOUNDED, usize::MAX, pacing.as_ref(), now);
    // The window that holds the budget until then: one with nothing left
    // that frees up then, else the first.
    let binding = plan.retry_at.and_then(|retry_at| {
        let frees = windows.iter().zip(&usages).position(|(w, u)| u.available_at(w, now) == Some(retry_at));
        frees.or((!windows.is_empty()).then_some(0))
    });
    let slots = pacing.as_ref().map(PaceState::slots);
    Ok(ClaimForecast {
        take: plan.take,
        paced_until: plan.paced_until,
        retry_at: plan.retry_at,
        binding,
        usages,
        slots,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Period;

    fn window(rule: &str, limit: Option<u64>, now: DateTime<Utc>) -> RuleWindow {
        RuleWindow {
            rule: rule.into(),
            period: Period::Day,
            window: "2026-12-03".into(),
            limit,
            reported: true,
            resets_at: now + TimeDelta::hours(7),
        }
    }

    /// Before the engine has said what is left in the window, a rule whose
    /// engine says it in its answers (Baidu) bounds the take by its
    /// fallback and defers nothing; Bing's, whose engine said nothing,
    /// defers the rest to the window's end; once said, Baidu's does too.
    #[test]
    fn an_unstated_rule_of_an_engine_that_answers_with_it_defers_nothing() {
        let now = DateTime::from_timestamp(1_796_288_400, 0).unwrap();
        let baidu = [window("baidu-reported:site:day", Some(10), now)];
        let plan = ClaimPlan::new(&baidu, &[Usage::default()], 40, 2000, None, now);
        assert_eq!((plan.take, plan.within, plan.retry_at), (10, 40, None));
        let bing = [window("bing-reported:site:day", Some(10), now)];
        let plan = ClaimPlan::new(&bing, &[Usage::default()], 40, 500, None, now);
        assert_eq!((plan.take, plan.within, plan.retry_at), (10, 10, Some(bing[0].resets_at)));
        let said = Usage { used: 10, reported: Some(Report { at: now, remaining: 15, limit: 25 }), ..Usage::default() };
        let plan = ClaimPlan::new(&baidu, &[said], 30, 2000, None, now);
        assert_eq!((plan.take, plan.within, plan.retry_at), (15, 15, Some(baidu[0].resets_at)));
        // A counted ceiling still defers what it cannot cover.
        let both = [window("baidu:site:day", Some(12), now), window("baidu-reported:site:day", Some(10), now)];
        let both = [RuleWindow { reported: false, ..both[0].clone() }, both[1].clone()];
        let plan = ClaimPlan::new(&both, &[Usage::default(), Usage::default()], 40, 2000, None, now);
        assert_eq!((plan.take, plan.within), (10, 12));
        assert_eq!(plan.retry_at, Some(both[0].resets_at));
    }
}
