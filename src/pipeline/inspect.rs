//! URL inspections before publishing (Google `skip_indexed`): how many of a
//! claim may be inspected (its `URL_UPDATED` items only, within the
//! property's inspection budget: a removal is always announced and never
//! spends an inspection), and afterwards what the inspections came to — in
//! the ledger (counted per class, the units not used given back, a quota
//! answer blocking the inspection window it names) and in the run's report
//! (each refusal, quota or failure said once per run, with what indexq
//! did: the URL was published all the same).

use super::findings::Findings;
use super::Run;
use crate::budget_rules;
use crate::engines::Inspected;
use crate::ledger::{Block, Claim, InspectionAnswer, Inspections};
use crate::model::{Action, Class, GroupKey, LocalReason, Outcome, Reason, RuleWindow};
use crate::output::summary::InspectionNote;
use chrono::{DateTime, Utc};

/// The inspection units a claim took from its property's budget.
#[derive(Debug, Clone)]
pub(super) struct InspectionUnits {
    rules: Vec<budget_rules::Rule>,
    windows: Vec<RuleWindow>,
    /// The claim's `URL_UPDATED` items: what would be inspected.
    wanted: u64,
    /// What the budget allowed.
    units: u64,
}

impl InspectionUnits {
    pub(super) fn units(taken: Option<&InspectionUnits>) -> u64 {
        taken.map_or(0, |t| t.units)
    }
}

impl Run<'_> {
    /// The inspection units for a claim of `group`: one per `URL_UPDATED`
    /// item, as many as the property's inspection rules allow (`None`: the
    /// group inspects nothing).
    pub(super) fn take_inspections(
        &mut self,
        group: &GroupKey,
        claim: &Claim,
        now: DateTime<Utc>,
    ) -> anyhow::Result<Option<InspectionUnits>> {
        let wanted = claim.items.iter().filter(|i| i.action == Action::Updated).count() as u64;
        if wanted == 0 || !self.engines[&group.engine].inspects(group) {
            return Ok(None);
        }
        let Some(property) = self.settings.property(&group.property) else { return Ok(None) };
        let rules = budget_rules::inspection_rules(property);
        let windows = budget_rules::windows(&rules, now);
        let units = self.ledger.take_units(&windows, wanted, now)?;
        Ok(Some(InspectionUnits { rules, windows, wanted, units }))
    }

    /// Records what the inspections of a request came to: the answers
    /// counted in the ledger with the units not used given back and a
    /// quota's block; each answer that did not say indexed or not, and the
    /// budget when it ran out, noted for the report.
    pub(super) fn record_inspections(
        &mut self,
        findings: &mut Findings,
        group: &GroupKey,
        taken: Option<InspectionUnits>,
        at: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        let Some(taken) = taken else { return Ok(()) };
        let inspected = self.engines[&group.engine].inspections(group);
        let answers: Vec<InspectionAnswer> = inspected
            .iter()
            .filter(|i| i.asked)
            .map(|i| InspectionAnswer {
                at,
                class: i.verdict.class(),
                reason: i.verdict.reason(),
                message: i.verdict.message.clone(),
                hint: i.verdict.hint.clone(),
                http_status: i.http_status,
            })
            .collect();
        let reached = inspected.iter().filter(|i| i.reached).count() as u64;
        let blocks = inspection_blocks(&taken, &inspected, at);
        self.ledger.record_inspections(&Inspections {
            property: &group.property,
            answers: &answers,
            windows: &taken.windows,
            unused: taken.units.saturating_sub(reached),
            blocks: &blocks,
        })?;
        for i in inspected.iter().filter(|i| i.verdict.class() != Class::Accepted) {
            let until = blocks.first().map(|b| (b.until, rule_tz(&taken, &b.rule)));
            let until = until.filter(|_| i.verdict.class() == Class::Quota);
            note_inspection(
                findings,
                InspectionNote {
                    property: group.property.clone(),
                    outcome: i.verdict.class().into(),
                    reason: i.verdict.reason(),
                    message: i.verdict.message.clone(),
                    hint: i.verdict.hint.clone(),
                    http_status: i.http_status,
                    inspections: u64::from(i.asked),
                    uninspected: 1,
                    until,
                },
            );
        }
        let unbudgeted = taken.wanted.saturating_sub(taken.units);
        let quota_said = |n: &&mut InspectionNote| n.property == group.property && n.outcome == Outcome::Quota;
        if let Some(quota) = findings.inspection_notes.iter_mut().find(quota_said) {
            // Blocked by the quota answer this run said: the same note.
            quota.uninspected += unbudgeted;
        } else if unbudgeted > 0 {
            let note = self.budget_note(group, &taken, unbudgeted, at)?;
            note_inspection(findings, note);
        }
        Ok(())
    }

    /// The note for URLs the inspection budget had no room for: what it
    /// says, and when it reopens.
    fn budget_note(
        &mut self,
        group: &GroupKey,
        taken: &InspectionUnits,
        uninspected: u64,
        at: DateTime<Utc>,
    ) -> anyhow::Result<InspectionNote> {
        let mut said = Vec::new();
        let mut until: Option<(DateTime<Utc>, chrono_tz::Tz)> = None;
        for state in budget_rules::states(&taken.rules, self.ledger.as_mut(), at)? {
            let Some(free) = state.usage.available_at(&state.window, at) else { continue };
            let period = state.rule.period.as_str();
            said.push(match (state.blocked, state.limit) {
                (Some(_), _) => format!("Google said the {period}'s inspections are spent"),
                (None, Some(limit)) => format!("{}/{limit} this {period}", state.usage.used),
                (None, None) => format!("the {period}'s inspections are spent"),
            });
            if until.is_none_or(|(t, _)| free > t) {
                until = Some((free, state.rule.tz));
            }
        }
        Ok(InspectionNote {
            property: group.property.clone(),
            outcome: Outcome::Deferred,
            reason: Reason::Local(LocalReason::Budget),
            message: format!(
                "the URL inspection budget of {} is used ({}; Google allows {} inspections a day and {} a minute per \
                 property)",
                group.property,
                said.join(", "),
                budget_rules::INSPECTIONS_PER_DAY,
                budget_rules::INSPECTIONS_PER_MINUTE
            ),
            hint: None,
            http_status: None,
            inspections: 0,
            uninspected,
            until,
        })
    }
}

/// Adds a note, or counts it in the run's note of the same property,
/// outcome and reason (the first message and hint stay; the latest
/// `until`).
fn note_inspection(findings: &mut Findings, note: InspectionNote) {
    let same =
        |n: &&mut InspectionNote| n.property == note.property && n.outcome == note.outcome && n.reason == note.reason;
    match findings.inspection_notes.iter_mut().find(same) {
        Some(n) => {
            n.inspections += note.inspections;
            n.uninspected += note.uninspected;
            n.http_status = n.http_status.or(note.http_status);
            if note.until.is_some_and(|(t, _)| n.until.is_none_or(|(u, _)| t > u)) {
                n.until = note.until;
            }
        }
        None => findings.inspection_notes.push(note),
    }
}

/// Which of the claim's items may be inspected: the first `units`
/// `URL_UPDATED` ones.
pub(super) fn marks(claim: &Claim, units: u64) -> Vec<bool> {
    let mut left = units;
    claim
        .items
        .iter()
        .map(|i| {
            let inspect = i.action == Action::Updated && left > 0;
            left -= u64::from(inspect);
            inspect
        })
        .collect()
}

/// What a quota answer to an inspection blocks: the inspection rule of the
/// window it names (the day's until the day ends; a minute's, or one it did
/// not name, until `Retry-After` or a minute), never the publish budget.
fn inspection_blocks(taken: &InspectionUnits, inspected: &[Inspected], at: DateTime<Utc>) -> Vec<Block> {
    let Some(quota) = inspected.iter().find(|i| i.asked && i.verdict.class() == Class::Quota) else {
        return Vec::new();
    };
    let verdict = &quota.verdict;
    taken
        .rules
        .iter()
        .zip(&taken.windows)
        .filter(|(rule, _)| rule.period == verdict.quota_window)
        .map(|(_, w)| Block {
            rule: w.clone(),
            until: match verdict.retry_after {
                Some(ra) => crate::schedule::quota_retry_at(ra, at),
                None => w.resets_at,
            },
        })
        .collect()
}

/// The timezone of the inspection rule of `window`.
fn rule_tz(taken: &InspectionUnits, window: &RuleWindow) -> chrono_tz::Tz {
    taken.rules.iter().find(|r| r.id == window.rule).map_or(chrono_tz::UTC, |r| r.tz)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{RetryAfter, Verdict};
    use crate::ledger::ClaimedItem;
    use crate::model::{Period, QuotaReason};
    use crate::pipeline::testing::{at, NOW};

    fn claim(actions: &[Action]) -> Claim {
        let items = actions
            .iter()
            .enumerate()
            .map(|(i, &action)| ClaimedItem {
                id: i as i64,
                url: format!("https://site.example/{i}"),
                action,
                attempts: 0,
                last_class: None,
                streak: 0,
                streak_started_at: None,
            })
            .collect();
        Claim { items, ..Claim::default() }
    }

    #[test]
    fn only_updates_are_inspected_within_the_units() {
        use Action::{Deleted, Updated};
        let c = claim(&[Deleted, Updated, Deleted, Updated, Updated]);
        assert_eq!(marks(&c, 2), [false, true, false, true, false]);
        assert_eq!(marks(&c, 9), [false, true, false, true, true]);
        assert_eq!(marks(&c, 0), [false; 5]);
    }

    fn taken() -> InspectionUnits {
        let settings = crate::pipeline::testing::settings("");
        let mut property = settings.properties[0].clone();
        property.google = Some(crate::config::PropertyGoogle {
            site_url: "sc-domain:site.example".into(),
            daily_quota: 11,
            skip_indexed: true,
            quota_timezone: chrono_tz::America::Los_Angeles,
            indexing: true,
            sitemaps: false,
        });
        let rules = budget_rules::inspection_rules(&property);
        let windows = budget_rules::windows(&rules, at(NOW));
        InspectionUnits { rules, windows, wanted: 2, units: 2 }
    }

    fn quota(window: Period, retry_after: Option<RetryAfter>) -> Inspected {
        let mut verdict = Verdict::new(QuotaReason::Quota, "Quota exceeded for sc-domain:site.example.");
        verdict.quota_window = window;
        verdict.retry_after = retry_after;
        Inspected { verdict, http_status: Some(429), asked: true, reached: true }
    }

    #[test]
    fn an_inspection_quota_blocks_the_inspection_window_it_names() {
        let (t, now) = (taken(), at(NOW));
        let minute = inspection_blocks(&t, &[quota(Period::Minute, Some(RetryAfter::Seconds(60)))], now);
        let blocked: Vec<_> = minute.iter().map(|b| (b.rule.rule.as_str(), b.until)).collect();
        assert_eq!(blocked, [("google-inspect:site:minute", now + chrono::TimeDelta::seconds(60))]);
        let day = inspection_blocks(&t, &[quota(Period::Day, None)], now);
        let blocked: Vec<_> = day.iter().map(|b| (b.rule.rule.as_str(), b.until)).collect();
        assert_eq!(blocked, [("google-inspect:site:day", t.windows[0].resets_at)]);
        let mut not_asked = quota(Period::Day, None);
        not_asked.asked = false;
        assert!(inspection_blocks(&t, &[not_asked], now).is_empty(), "an answer of before is blocked already");
    }
}
