//! `submit --dry-run`: the plan, by reading. The input is read and
//! normalised as a real run reads it, and the intake's admission seam
//! (`admission::Admit`) is this `Plan` instead of the ledger's writing: the
//! ledger says what admission would make of each URL
//! (`ledger::Intake::preview`); nothing is written. A URL new to the ledger
//! seen twice is one item (a set of (group, key) pairs in memory). Each
//! group's due items — the ledger's, then this run's new and changed URLs —
//! go now while the budget and the pace allow (the claim the ledger
//! forecasts over the group's windows, usage and pace as they are now, as
//! many claims in a row would take them: `Budget::plan_claim`); the rest
//! would wait for their paced slot, or until the budget frees up.

use super::admission::{Admit, Seat};
use super::findings::base_entry;
use super::findings::Findings;
use super::Run;
use crate::budget_rules;
use crate::ledger::{
    url_key, Admission, AdmitRule, ClaimForecast, ClaimQuery, ItemFilter, Ledger, NewItem, Pace, Preview, StateFilter,
};
use crate::model::{GroupKey, SourceDocument, SourceFailure};
use crate::model::{LocalReason, Outcome};
use crate::output::results::Template;
use crate::output::summary::Deferral;
use crate::seen::Seen;
use chrono::{DateTime, Utc};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// A dry run's plan: what it knows of its groups and of the URLs it has seen.
#[derive(Default)]
pub(super) struct Plan {
    /// Each group's plan, by its number (`None`: a group no rule limits),
    /// found per URL without hashing its group.
    groups: Vec<Option<GroupPlan>>,
    /// URLs new to the ledger seen so far (`seen`: group and key), and
    /// items queued again: a second sight of either is the same item.
    new: Seen,
    requeued: FxHashSet<i64>,
    /// Each group's number, for `new`, and the last group asked for.
    numbers: FxHashMap<GroupKey, usize>,
    last: Option<(Arc<GroupKey>, usize)>,
}

/// A URL new to the ledger as `Plan::new` holds it: its key, mixed with
/// its group's number (the key itself in the first group), 8 bytes where a
/// pair took 16, so that the set takes about half the memory. Two URLs of one
/// group with the same key were one item to a dry run already (about one
/// chance in 10^8 for a million URLs); other groups now take the same odds.
fn seen(group: usize, key: i64) -> u64 {
    (key as u64) ^ (group as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// One group's plan: the claim over an unbounded queue at the run's start,
/// and how many due items it has placed.
struct GroupPlan {
    group: GroupKey,
    /// The URLs the ledger holds queued (due or waiting), and each rule's
    /// period and limit: the backlog's estimate (`Plan::backlogs`).
    queued: u64,
    limits: Vec<(crate::model::Period, Option<u64>)>,
    /// The ledger's due items, placed first: `placed` beyond them are new.
    due: usize,
    plan: ClaimForecast,
    /// The budget that stops the plan, and whether the human report has its
    /// line yet.
    deferral: Option<Deferral>,
    told: bool,
    placed: usize,
    /// The result of every URL of the group that waits for the budget but
    /// for its URL, made at the first (`Results::template`).
    waits: Option<Template>,
}

/// Where a due item goes in the plan.
enum Place {
    Now,
    Paced(DateTime<Utc>),
    Budget(Deferral),
}

impl Plan {
    fn number(&mut self, group: &Arc<GroupKey>) -> usize {
        // Most URLs are of the group the last one was, the same `Arc`. (Not
        // `==`: an equal group behind another `Arc` compared every string of
        // it for every URL, and was never taken as the last.)
        if let Some((last, n)) = &self.last {
            if Arc::ptr_eq(last, group) {
                return *n;
            }
        }
        let next = self.numbers.len();
        let n = match self.numbers.get(&**group) {
            Some(n) => *n,
            None => *self.numbers.entry((**group).clone()).or_insert(next),
        };
        self.last = Some((Arc::clone(group), n));
        n
    }
}

impl Plan {
    /// Per group with a daily budget, how long what would be queued takes
    /// at it: the ledger's queue and the URLs this run would add.
    pub(super) fn backlogs(&self) -> Vec<(GroupKey, budget_rules::Backlog)> {
        let backlog = |g: &GroupPlan| {
            let urls = g.queued + g.placed.saturating_sub(g.due) as u64;
            budget_rules::Backlog::of(urls, g.limits.iter().copied()).map(|b| (g.group.clone(), b))
        };
        self.groups.iter().flatten().filter_map(backlog).collect()
    }
}

impl GroupPlan {
    fn place(&mut self) -> Option<Place> {
        let n = self.placed;
        self.placed += 1;
        if n < self.plan.take {
            return Some(Place::Now);
        }
        if let (true, Some(slots)) = (n < self.plan.paced_until, &self.plan.slots) {
            return Some(Place::Paced(slots.at(n)));
        }
        self.deferral.clone().map(Place::Budget)
    }
}

impl Plan {
    /// Before the input is read: each group's plan from the ledger as it
    /// is (usage, the engine's reported quota, the pace), its due items
    /// placed first (their results, and a budget that holds the rest, in
    /// `report`).
    pub(super) async fn new(run: &mut Run<'_>, findings: &mut Findings) -> anyhow::Result<Plan> {
        let mut plan = Plan::default();
        let now = run.clock.now();
        for group in run.known_groups() {
            let Some(rules) = run.rules(&group) else { continue };
            let windows = budget_rules::windows(&rules, now);
            // What the engine says is left, as the real run would record it.
            let reported = run.reported_quota(&group, &windows, &mut findings.notes).await?;
            let pace = run.engines[&group.engine].pace(&group).map(|(key, interval, burst)| Pace {
                key,
                interval,
                burst,
                horizon: now,
            });
            let query = ClaimQuery { windows: &windows, reported: &reported, pace: pace.as_ref(), now };
            let forecast = run.ledger.plan_claim(&query)?;
            // The rule that holds the budget until then.
            let deferral = forecast.retry_at.zip(forecast.binding).map(|(retry_at, i)| Deferral {
                group: group.clone(),
                rule_tz: rules[i].tz,
                used: forecast.usages[i].used,
                limit: forecast.usages[i].limit(&windows[i]),
                retry_at,
                blocked: forecast.usages[i].blocked_until.is_some_and(|t| t > now),
            });
            let limits =
                rules.iter().zip(&windows).zip(&forecast.usages).map(|((r, w), u)| (r.period, u.limit(w))).collect();
            let counts = run.ledger.queue_counts(&group, now)?;
            let mut g = GroupPlan {
                group: group.clone(),
                queued: counts.due + counts.waiting,
                limits,
                due: counts.due as usize,
                plan: forecast,
                deferral,
                told: false,
                placed: 0,
                waits: None,
            };
            // The ledger's due items come first; those that go now are planned.
            let due = g.due;
            let going = due.min(g.plan.take);
            g.placed = due;
            if going > 0 {
                let filter = ItemFilter {
                    states: vec![StateFilter::Due],
                    property: Some(group.property.clone()),
                    engine: Some(group.engine),
                    target: Some(group.target.clone()),
                    url: None,
                    limit: Some(going),
                };
                for row in run.ledger.items(&filter, now)? {
                    findings.results.plan(&row.url, &group)?;
                }
            }
            if due > going {
                g.told = true;
                findings.deferrals.extend(g.deferral.clone());
            }
            let n = plan.number(&Arc::new(group));
            if plan.groups.len() <= n {
                plan.groups.resize_with(n + 1, || None);
            }
            plan.groups[n] = Some(g);
        }
        Ok(plan)
    }

    /// What would become of a batch: what admission would make of each
    /// URL, as `ledger` says (`ledger::Intake::preview`); `None` for a URL
    /// this run has met already (the same item).
    pub(super) fn admissions(
        &mut self,
        ledger: &mut dyn Ledger,
        batch: &[NewItem],
        rule: &AdmitRule,
        now: DateTime<Utc>,
    ) -> anyhow::Result<Vec<Option<Admission>>> {
        let previews = ledger.preview(batch, rule, now)?;
        let seens: Vec<u64> = batch.iter().map(|item| seen(self.number(&item.group), url_key(&item.url))).collect();
        self.new.warm(&seens);
        let mut out = Vec::with_capacity(batch.len());
        for (Preview { held, admission }, seen) in previews.into_iter().zip(seens) {
            let admission = match held {
                Some(id) if self.requeued.contains(&id) => None,
                Some(id) => {
                    if matches!(admission, Admission::Queued { .. }) {
                        self.requeued.insert(id);
                    }
                    Some(admission)
                }
                None if self.new.insert(seen) => Some(admission),
                None => None,
            };
            out.push(admission);
        }
        Ok(out)
    }

    /// Places a URL this run would queue now (new, or changed) in its
    /// group's plan: it goes now, waits for its paced slot, or waits for
    /// the budget — its result in `report`, a paced wait told in `user_tz`.
    pub(super) fn place(
        &mut self,
        item: &NewItem,
        now: DateTime<Utc>,
        findings: &mut Findings,
        user_tz: chrono_tz::Tz,
    ) -> anyhow::Result<()> {
        let n = self.number(&item.group);
        let Some(g) = self.groups.get_mut(n).and_then(Option::as_mut) else { return Ok(()) };
        let place = g.place();
        let untold = matches!(place, Some(Place::Budget(_))) && !std::mem::replace(&mut g.told, true);
        let e = match place {
            None => return Ok(()),
            Some(Place::Now) => return Ok(findings.results.plan(&item.url, &item.group)?),
            Some(Place::Paced(at)) => {
                let mut e = base_entry(&item.url, &item.group, Outcome::Deferred, LocalReason::Paced);
                e.message = format!(
                    "within budget, but {} requests are paced to the configured rate; it would go at its slot",
                    item.group.engine.title()
                );
                e.set_retry(at, user_tz, now);
                e
            }
            Some(Place::Budget(d)) => {
                if untold {
                    findings.deferrals.push(d.clone());
                }
                // The same result for each URL but its own: made once.
                if g.waits.is_none() {
                    let mut e = base_entry(&item.url, &item.group, Outcome::Deferred, LocalReason::Budget);
                    e.message = format!(
                        "the {} budget for {} is spent until its window reopens",
                        item.group.engine.title(),
                        item.group.property
                    );
                    e.set_retry(d.retry_at, d.rule_tz, now);
                    g.waits = Some(findings.results.template(&e)?);
                }
                let waits = g.waits.as_ref().expect("made above");
                return Ok(findings.results.put_like(waits, &item.url)?);
            }
        };
        findings.line(e)
    }
}

/// The dry run's side of the admission seam: the ledger is asked, never
/// written; a URL queued is placed in its group's plan, and a source's
/// read is reckoned from what the ledger keeps.
impl Admit for Plan {
    fn admit(
        &mut self,
        seat: Seat<'_>,
        batch: &[NewItem],
        rule: &AdmitRule,
        now: DateTime<Utc>,
    ) -> anyhow::Result<Vec<Option<Admission>>> {
        self.admissions(seat.ledger, batch, rule, now)
    }

    fn queued(&mut self, seat: Seat<'_>, item: &NewItem, now: DateTime<Utc>) -> anyhow::Result<()> {
        self.place(item, now, seat.findings, seat.user_tz)
    }

    fn admit_sitemap(
        &mut self,
        seat: Seat<'_>,
        batch: &[NewItem],
        rule: &AdmitRule,
        now: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        for (item, admission) in batch.iter().zip(self.admissions(seat.ledger, batch, rule, now)?) {
            if matches!(admission, Some(Admission::Queued { .. })) {
                self.place(item, now, seat.findings, seat.user_tz)?;
            }
        }
        Ok(())
    }

    fn source_failed(&mut self, ledger: &mut dyn Ledger, failure: SourceFailure) -> anyhow::Result<SourceFailure> {
        let mut kept = ledger.source_failures()?.into_iter();
        Ok(match kept.find(|f| f.property == failure.property && f.source == failure.source) {
            Some(b) => SourceFailure { since: b.since, reminded_at: b.reminded_at, ..failure },
            None => failure,
        })
    }

    fn source_read(
        &mut self,
        _ledger: &mut dyn Ledger,
        _property: &str,
        _source: &str,
    ) -> anyhow::Result<Option<SourceFailure>> {
        Ok(None)
    }

    fn keep_documents(
        &mut self,
        _ledger: &mut dyn Ledger,
        _documents: &[SourceDocument],
    ) -> anyhow::Result<Option<Vec<SourceDocument>>> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{Budget, SqliteLedger};
    use crate::model::{Class, Period, RuleWindow};
    use crate::pipeline::testing::{self, admit_rule, at, new_item, site_group, Fixture, Scripted, NOW};
    use chrono::TimeDelta;
    use chrono_tz::Tz;

    fn deferral(g: &GroupKey) -> Deferral {
        Deferral {
            group: g.clone(),
            rule_tz: Tz::UTC,
            used: 4,
            limit: Some(4),
            retry_at: at("2026-03-03T00:00:00Z"),
            blocked: false,
        }
    }

    fn placed(g: &mut GroupPlan, now: DateTime<Utc>) -> String {
        match g.place() {
            None => "none".into(),
            Some(Place::Now) => "now".into(),
            Some(Place::Paced(t)) => format!("paced {}", (t - now).num_seconds()),
            Some(Place::Budget(d)) => format!("budget {}", d.retry_at),
        }
    }

    #[test]
    fn due_items_go_now_then_at_their_paced_slots_then_wait_for_the_budget() {
        let now = at(NOW);
        let g = site_group();
        // The ledger's forecast: a day of 4, at one send per 10 s after the first.
        let day = RuleWindow {
            rule: "day".into(),
            period: Period::Day,
            window: "2026-03-02".into(),
            limit: Some(4),
            reported: false,
            resets_at: at("2026-03-03T00:00:00Z"),
        };
        let pace = Pace { key: "k".into(), interval: TimeDelta::seconds(10), burst: 1, horizon: now };
        let windows = [day];
        let query = ClaimQuery { windows: &windows, reported: &[], pace: Some(&pace), now };
        let plan = SqliteLedger::in_memory().unwrap().plan_claim(&query).unwrap();
        assert_eq!((plan.take, plan.paced_until, plan.retry_at), (2, 4, Some(at("2026-03-03T00:00:00Z"))));
        assert_eq!(plan.binding, Some(0));
        let of = |plan, deferral, placed| GroupPlan {
            group: g.clone(),
            queued: 0,
            limits: Vec::new(),
            due: 0,
            plan,
            deferral,
            told: false,
            placed,
            waits: None,
        };
        let mut p = of(plan.clone(), Some(deferral(&g)), 0);
        let places: Vec<String> = (0..6).map(|_| placed(&mut p, now)).collect();
        let budget = "budget 2026-03-03 00:00:00 UTC";
        assert_eq!(places, ["now", "now", "paced 10", "paced 20", budget, budget]);
        // Without a budget that stops it, an item past the plan is not placed.
        let plan = ClaimForecast { slots: None, binding: None, ..plan };
        let mut p = of(plan, None, 1);
        let places: Vec<String> = (0..3).map(|_| placed(&mut p, now)).collect();
        assert_eq!(places, ["now", "none", "none"], "no pace: nothing is paced");
    }

    #[test]
    fn groups_are_numbered_in_the_order_first_met() {
        let mut plans = Plan::default();
        let a = Arc::new(site_group());
        let b = Arc::new(GroupKey { target: "https://other.example/indexnow".into(), ..(*a).clone() });
        assert_eq!((plans.number(&a), plans.number(&b), plans.number(&a), plans.number(&b)), (0, 1, 0, 1));
    }

    #[tokio::test]
    async fn a_dry_run_plans_what_fits_the_budget_and_writes_nothing() {
        let f = Fixture::new(", daily_quota = 2");
        let mut run = f.run(Scripted::answering(Class::Accepted, "ok", 10));
        let mut plan = Plan::new(&mut run.run, &mut run.findings).await.unwrap();
        let g = site_group();
        let batch = ["a", "b", "a", "c", "d"].map(|path| new_item(&g, &format!("https://site.example/{path}")));
        let now = f.clock.now();
        let admissions = plan.admissions(run.run.ledger.as_mut(), &batch, &admit_rule(), now).unwrap();
        let fresh = Some(Admission::Queued { fresh: true });
        assert_eq!(
            admissions,
            [fresh.clone(), fresh.clone(), None, fresh.clone(), fresh],
            "a URL met twice is one item"
        );
        for (item, admission) in batch.iter().zip(&admissions) {
            if admission.is_some() {
                plan.place(item, now, &mut run.findings, run.run.user_tz).unwrap();
            }
        }
        assert_eq!(run.findings.results.planned_counts(), [(g.clone(), 2)]);
        let deferred: Vec<_> = testing::results(&mut run).into_iter().map(|(url, _, reason)| (url, reason)).collect();
        assert_eq!(
            deferred,
            [
                ("https://site.example/c".to_string(), "budget".to_string()),
                ("https://site.example/d".into(), "budget".into())
            ]
        );
        assert_eq!(run.findings.deferrals.len(), 1, "the budget is told once");
        assert!(testing::items(&mut run).is_empty(), "nothing is written");
    }

    #[tokio::test]
    async fn an_item_of_the_ledger_queued_again_is_one_item_however_often_it_is_read() {
        let f = Fixture::new("");
        let (mut run, _) = f.sent(Scripted::answering(Class::Accepted, "ok", 10), 1).await;
        let mut plan = Plan::new(&mut run.run, &mut run.findings).await.unwrap();
        let item = new_item(&site_group(), "https://site.example/0");
        let force = AdmitRule { force: true, ..admit_rule() };
        let ledger = run.run.ledger.as_mut();
        let admissions = plan.admissions(ledger, &[item.clone(), item.clone()], &force, f.clock.now()).unwrap();
        assert_eq!(admissions, [Some(Admission::Queued { fresh: false }), None]);
        let admissions = plan.admissions(ledger, &[item], &force, f.clock.now()).unwrap();
        assert_eq!(admissions, [None], "in a later batch too");
    }
}
