//! `submit --dry-run`: the plan, by reading. The input is read and
//! normalised as a real run reads it, each URL is looked up in the ledger
//! and `policy::admit` decides what would become of it; nothing is written.
//! A URL new to the ledger seen twice is one item (a set of (group, key)
//! pairs in memory). Each group's due items — the ledger's, then this run's
//! new and changed URLs — go now while the budget and the pace allow
//! (`ClaimPlan` over the group's windows, usage and pace as they are now,
//! as many claims in a row would take them); the rest would wait for their
//! paced slot, or until the budget frees up.

use super::{base_entry, Run};
use crate::budget;
use crate::ledger::policy::{self, ClaimPlan, PaceState};
use crate::ledger::{url_key, Admission, AdmitRule, ItemFilter, NewItem, Pace, StateFilter};
use crate::model::{GroupKey, Report, RuleWindow};
use crate::model::{LocalReason, Outcome};
use crate::output::results::Planned;
use crate::output::summary::Deferral;
use chrono::{DateTime, Utc};
use rustc_hash::FxHashSet;
use std::collections::HashMap;

/// What a dry run knows of its groups and of the URLs it has seen.
#[derive(Default)]
pub(super) struct Plans {
    groups: HashMap<GroupKey, GroupPlan>,
    /// URLs new to the ledger seen so far (group, key), and items queued
    /// again: a second sight of either is the same item.
    new: FxHashSet<(usize, i64)>,
    requeued: FxHashSet<i64>,
    /// Each group's number, for `new`.
    numbers: HashMap<GroupKey, usize>,
}

/// One group's plan: the claim over an unbounded queue at the run's start,
/// and how many due items it has placed.
struct GroupPlan {
    plan: ClaimPlan,
    windows: Vec<RuleWindow>,
    pace: Option<(Pace, Option<i64>)>,
    /// The budget that stops the plan, and whether the human report has its
    /// line yet.
    deferral: Option<Deferral>,
    told: bool,
    placed: usize,
}

/// More due items than any queue holds: the plan of "as many as fit".
const UNBOUNDED: usize = usize::MAX / 4;

/// Where a due item goes in the plan.
enum Place {
    Now,
    Paced(DateTime<Utc>),
    Budget(Deferral),
}

impl Plans {
    fn number(&mut self, group: &GroupKey) -> usize {
        let next = self.numbers.len();
        match self.numbers.get(group) {
            Some(n) => *n,
            None => *self.numbers.entry(group.clone()).or_insert(next),
        }
    }
}

impl GroupPlan {
    fn place(&mut self, now: DateTime<Utc>) -> Option<Place> {
        let n = self.placed;
        self.placed += 1;
        if n < self.plan.take {
            return Some(Place::Now);
        }
        if let (true, Some((pace, tat))) = (n < self.plan.paced_until, &self.pace) {
            return Some(Place::Paced(PaceState::new(pace, now, *tat, &self.windows).estimate(n)));
        }
        self.deferral.clone().map(Place::Budget)
    }
}

impl Run<'_> {
    /// Before the input is read: each group's plan from the ledger as it
    /// is (usage, the engine's reported quota, the pace), its due items
    /// placed first.
    pub(super) async fn plan_groups(&mut self) -> anyhow::Result<()> {
        let now = self.clock.now();
        for group in self.known_groups() {
            let Some(rules) = self.rules(&group) else { continue };
            let windows = budget::windows(&rules, now);
            let mut usages = Vec::with_capacity(windows.len());
            for w in &windows {
                usages.push(self.ledger.usage(w)?);
            }
            // What the engine says is left, as the real run would record it.
            for (period, remaining) in self.reported_quota(&group, &windows).await? {
                for (_, u) in windows.iter().zip(&mut usages).filter(|(w, _)| w.reported && w.period == period) {
                    let limit = policy::reported_limit(u.used, remaining, 0);
                    u.reported = Some(Report { at: now, remaining, limit });
                }
            }
            let pace = match self.engines[&group.engine].pace(&group) {
                Some((key, interval, burst)) => {
                    let tat = self.ledger.pace_tat(&key)?;
                    Some((Pace { key, interval, burst, horizon: now }, tat))
                }
                None => None,
            };
            let state = pace.as_ref().map(|(p, tat)| PaceState::new(p, now, *tat, &windows));
            let plan = ClaimPlan::new(&windows, &usages, UNBOUNDED, usize::MAX, state.as_ref(), now);
            // The rule that holds the budget until then: one with nothing left
            // that frees up then.
            let deferral = plan.retry_at.and_then(|retry_at| {
                let mut binding = rules.iter().zip(&windows).zip(&usages);
                let found = binding.clone().find(|((_, w), u)| u.available_at(w, now) == Some(retry_at));
                found.or_else(|| binding.next()).map(|((rule, window), usage)| Deferral {
                    group: group.clone(),
                    rule_tz: rule.tz,
                    used: usage.used,
                    limit: usage.limit(window),
                    retry_at,
                    blocked: usage.blocked_until.is_some_and(|t| t > now),
                })
            });
            let mut g = GroupPlan { plan, windows, pace, deferral, told: false, placed: 0 };
            // The ledger's due items come first; those that go now are planned.
            let due = self.ledger.queue_counts(&group, now)?.due as usize;
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
                for row in self.ledger.items(&filter, now)? {
                    self.results.plan(&Planned::new(&row.url, &group), &group)?;
                }
            }
            if due > going {
                g.told = true;
                self.deferrals.extend(g.deferral.clone());
            }
            self.plans.groups.insert(group, g);
        }
        Ok(())
    }

    /// What would become of a batch: the ledger's items looked up, and
    /// `policy::admit`'s decision for each; `None` for a URL this run has
    /// met already (the same item).
    pub(super) fn plan_admissions(
        &mut self,
        batch: &[NewItem],
        rule: &AdmitRule,
        now: DateTime<Utc>,
    ) -> anyhow::Result<Vec<Option<Admission>>> {
        let found = self.ledger.look_up(batch)?;
        let mut out = Vec::with_capacity(batch.len());
        for (item, existing) in batch.iter().zip(found) {
            let seen = (self.plans.number(&item.group), url_key(&item.url));
            let admission = match existing {
                Some(e) if self.plans.requeued.contains(&e.id) => None,
                Some(e) => {
                    let (admission, _) = policy::admit(Some(&e), item, rule, now);
                    if matches!(admission, Admission::Queued { .. }) {
                        self.plans.requeued.insert(e.id);
                    }
                    Some(admission)
                }
                None if self.plans.new.insert(seen) => Some(policy::admit(None, item, rule, now).0),
                None => None,
            };
            out.push(admission);
        }
        Ok(out)
    }

    /// Places a URL this run would queue now (new, or changed) in its
    /// group's plan: it goes now, waits for its paced slot, or waits for
    /// the budget.
    pub(super) fn plan_due(&mut self, item: &NewItem, now: DateTime<Utc>) -> anyhow::Result<()> {
        let Some(g) = self.plans.groups.get_mut(&item.group) else { return Ok(()) };
        let place = g.place(now);
        let untold = matches!(place, Some(Place::Budget(_))) && !std::mem::replace(&mut g.told, true);
        let e = match place {
            None => return Ok(()),
            Some(Place::Now) => return Ok(self.results.plan(&Planned::new(&item.url, &item.group), &item.group)?),
            Some(Place::Paced(at)) => {
                let mut e = base_entry(&item.url, &item.group, Outcome::Deferred, LocalReason::Paced);
                e.message = format!(
                    "within budget, but {} requests are paced to the configured rate; it would go at its slot",
                    item.group.engine.title()
                );
                e.set_retry(at, self.user_tz, now);
                e
            }
            Some(Place::Budget(d)) => {
                let mut e = base_entry(&item.url, &item.group, Outcome::Deferred, LocalReason::Budget);
                e.message = format!(
                    "the {} budget for {} is spent until its window reopens",
                    item.group.engine.title(),
                    item.group.property
                );
                e.set_retry(d.retry_at, d.rule_tz, now);
                if untold {
                    self.deferrals.push(d);
                }
                e
            }
        };
        let key = self.results.line_key();
        Ok(self.results.put(key, &e)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::submit::testing::{self, admit_rule, at, new_item, site_group, Fixture, Scripted, NOW};
    use crate::model::Class;
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
        match g.place(now) {
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
        let pace = Pace { key: "k".into(), interval: TimeDelta::seconds(10), burst: 1, horizon: now };
        let plan = ClaimPlan { take: 2, paced_until: 4, retry_at: Some(at("2026-03-03T00:00:00Z")) };
        let mut p = GroupPlan {
            plan,
            windows: Vec::new(),
            pace: Some((pace, None)),
            deferral: Some(deferral(&g)),
            told: false,
            placed: 0,
        };
        let places: Vec<String> = (0..6).map(|_| placed(&mut p, now)).collect();
        let budget = "budget 2026-03-03 00:00:00 UTC";
        assert_eq!(places, ["now", "now", "paced 10", "paced 20", budget, budget]);
        // Without a budget that stops it, an item past the plan is not placed.
        let mut p = GroupPlan { plan, windows: Vec::new(), pace: None, deferral: None, told: false, placed: 1 };
        let places: Vec<String> = (0..3).map(|_| placed(&mut p, now)).collect();
        assert_eq!(places, ["now", "none", "none"], "no pace: nothing is paced");
    }

    #[test]
    fn groups_are_numbered_in_the_order_first_met() {
        let mut plans = Plans::default();
        let a = site_group();
        let b = GroupKey { target: "https://other.example/indexnow".into(), ..a.clone() };
        assert_eq!((plans.number(&a), plans.number(&b), plans.number(&a), plans.number(&b)), (0, 1, 0, 1));
    }

    #[tokio::test]
    async fn a_dry_run_plans_what_fits_the_budget_and_writes_nothing() {
        let f = Fixture::new(", daily_quota = 2");
        let mut run = f.run(Scripted::answering(Class::Accepted, "ok", 10));
        run.dry_run = true;
        run.plan_groups().await.unwrap();
        let g = site_group();
        let batch = ["a", "b", "a", "c", "d"].map(|path| new_item(&g, &format!("https://site.example/{path}")));
        let now = f.clock.now();
        let admissions = run.plan_admissions(&batch, &admit_rule(), now).unwrap();
        let fresh = Some(Admission::Queued { fresh: true });
        assert_eq!(
            admissions,
            [fresh.clone(), fresh.clone(), None, fresh.clone(), fresh],
            "a URL met twice is one item"
        );
        for (item, admission) in batch.iter().zip(&admissions) {
            if admission.is_some() {
                run.plan_due(item, now).unwrap();
            }
        }
        assert_eq!(run.results.planned_counts(), [(g.clone(), 2)]);
        let deferred: Vec<_> = testing::results(&mut run).into_iter().map(|(url, _, reason)| (url, reason)).collect();
        assert_eq!(
            deferred,
            [
                ("https://site.example/c".to_string(), "budget".to_string()),
                ("https://site.example/d".into(), "budget".into())
            ]
        );
        assert_eq!(run.deferrals.len(), 1, "the budget is told once");
        assert!(testing::items(&mut run).is_empty(), "nothing is written");
    }

    #[tokio::test]
    async fn an_item_of_the_ledger_queued_again_is_one_item_however_often_it_is_read() {
        let f = Fixture::new("");
        let (mut run, _) = f.sent(Scripted::answering(Class::Accepted, "ok", 10), 1).await;
        run.dry_run = true;
        run.plan_groups().await.unwrap();
        let item = new_item(&site_group(), "https://site.example/0");
        let force = AdmitRule { force: true, ..admit_rule() };
        let admissions = run.plan_admissions(&[item.clone(), item.clone()], &force, f.clock.now()).unwrap();
        assert_eq!(admissions, [Some(Admission::Queued { fresh: false }), None]);
        let admissions = run.plan_admissions(&[item], &force, f.clock.now()).unwrap();
        assert_eq!(admissions, [None], "in a later batch too");
    }
}
