//! What a claim deferred, as the findings keep it: the claim hands over
//! plain events (a URL past the budget, the claim's budget and pace
//! deferrals) and the rows of the report are made here, not while the
//! claim runs in `send`. A deferral past the run's wait is final in this
//! run: one result is made for every URL deferred to one instant and kept
//! for none of them, so a million deferred URLs do not each keep a result.

use super::base_entry;
use super::Findings;
use crate::budget_rules;
use crate::clock::Clock;
use crate::ledger::{Claim, Ledger};
use crate::model::{Channel, GroupKey, LocalReason, Outcome, RuleWindow, Usage};
use crate::output::results::{Key, ResultEntry, Results, Template};
use crate::output::summary::Deferral;
use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;

/// One URL a claim could not take because the budget has no room for it
/// until `retry_at`: the event the claim hands to the findings.
pub(in crate::pipeline) struct Deferred<'u> {
    pub(in crate::pipeline) id: i64,
    pub(in crate::pipeline) url: &'u str,
    pub(in crate::pipeline) retry_at: DateTime<Utc>,
}

/// What one claim of a group is told against: its rules (the timezone a
/// deferral is told in is that of the rule that reopens then), the user's
/// timezone, the end of the run's wait and the claim's instant.
#[derive(Clone, Copy)]
pub(in crate::pipeline) struct ClaimContext<'c> {
    pub(in crate::pipeline) group: &'c GroupKey,
    pub(in crate::pipeline) rules: &'c [budget_rules::Rule],
    pub(in crate::pipeline) user_tz: Tz,
    pub(in crate::pipeline) wait_until: DateTime<Utc>,
    pub(in crate::pipeline) now: DateTime<Utc>,
}

/// The deferrals of one claim as they come, kept in the run's results.
/// The first failure to keep one is held for `finish`: the ledger's
/// callback that hands the events over cannot fail.
pub(in crate::pipeline) struct ClaimDeferrals<'f> {
    results: &'f mut Results,
    context: ClaimContext<'f>,
    /// The result shared by the URLs deferred to one instant past the
    /// run's wait, and that instant.
    shared: Option<(DateTime<Utc>, Template)>,
    failure: Option<std::io::Error>,
}

impl Findings {
    /// Where one claim's deferrals go while it runs.
    pub(in crate::pipeline) fn claim_deferrals<'f>(&'f mut self, context: ClaimContext<'f>) -> ClaimDeferrals<'f> {
        ClaimDeferrals { results: &mut self.results, context, shared: None, failure: None }
    }

    /// After a claim: the budget that stopped it (or, for a later claim
    /// that took what the budget still covered, how much is used now) for
    /// the human report, and the result of each URL the pace holds for its
    /// slot.
    pub(in crate::pipeline) fn claimed(
        &mut self,
        ledger: &mut dyn Ledger,
        clock: &Clock,
        context: &ClaimContext,
        windows: &[RuleWindow],
        claim: &Claim,
    ) -> anyhow::Result<()> {
        let (group, now) = (context.group, context.now);
        if let Some(retry_at) = claim.retry_at {
            let (tz, window, usage) = binding_rule(ledger, context.rules, windows, retry_at, clock.now())?;
            self.deferrals.push(Deferral {
                group: group.clone(),
                rule_tz: tz,
                used: usage.used,
                limit: usage.limit(&window),
                retry_at,
                blocked: usage.blocked_until.is_some_and(|t| t > now),
            });
        } else if let Some(i) = self.deferrals.iter().rposition(|d| &d.group == group && !claim.items.is_empty()) {
            // A later claim took what the budget still covered after a
            // deferral: the note says how much is used now.
            let retry_at = self.deferrals[i].retry_at;
            let (_, window, usage) = binding_rule(ledger, context.rules, windows, retry_at, clock.now())?;
            let deferral = &mut self.deferrals[i];
            (deferral.used, deferral.limit) = (usage.used, usage.limit(&window));
        }
        for (id, url, at) in &claim.paced {
            self.put_item(*id, paced_entry(url, group, *at, context.user_tz, now))?;
        }
        Ok(())
    }
}

impl ClaimDeferrals<'_> {
    /// Keeps the result of a URL the budget deferred, in the timezone of
    /// the rule that reopens then. A sitemap's result is told by its own
    /// URL, never shared.
    pub(in crate::pipeline) fn deferred(&mut self, d: Deferred) {
        let c = &self.context;
        let tz = deferral_tz(c.rules, d.retry_at, c.user_tz);
        let results = &mut *self.results;
        let put = match d.retry_at > c.wait_until && c.group.channel == Channel::Urls {
            true => match &self.shared {
                Some((at, template)) if *at == d.retry_at => results.put_like_over(template, Key::Item(d.id), d.url),
                _ => results.template(&budget_entry(d.url, c.group, d.retry_at, tz, c.now)).and_then(|template| {
                    let (_, template) = self.shared.insert((d.retry_at, template));
                    results.put_like_over(template, Key::Item(d.id), d.url)
                }),
            },
            false => results.put(Key::Item(d.id), &budget_entry(d.url, c.group, d.retry_at, tz, c.now)),
        };
        if let Err(err) = put {
            self.failure.get_or_insert(err);
        }
    }

    /// The first failure to keep a deferral, if any.
    pub(in crate::pipeline) fn finish(self) -> std::io::Result<()> {
        self.failure.map_or(Ok(()), Err)
    }
}

/// The rule that holds the budget until `retry_at`: one with nothing left
/// that frees up then (the latest of the exhausted ones), as of `now`.
fn binding_rule(
    ledger: &mut dyn Ledger,
    rules: &[budget_rules::Rule],
    windows: &[RuleWindow],
    retry_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> anyhow::Result<(Tz, RuleWindow, Usage)> {
    let mut fallback = None;
    for (rule, window) in rules.iter().zip(windows) {
        let usage = ledger.usage(window)?;
        if usage.available_at(window, now) == Some(retry_at) {
            return Ok((rule.tz, window.clone(), usage));
        }
        fallback.get_or_insert((rule.tz, window.clone(), usage));
    }
    fallback.ok_or_else(|| anyhow::anyhow!("a budget deferral without a rule"))
}

/// The timezone a budget deferral until `retry_at` is told in: that of the
/// rule whose window ends then, else the user's.
fn deferral_tz(rules: &[budget_rules::Rule], retry_at: DateTime<Utc>, user_tz: Tz) -> Tz {
    let before = retry_at - TimeDelta::milliseconds(1);
    rules.iter().find(|r| r.window(before).resets_at == retry_at).map_or(user_tz, |r| r.tz)
}

/// The result of a URL the budget has no room for until `retry_at` (told
/// in `tz`, the timezone of the rule that reopens then).
pub(in crate::pipeline) fn budget_entry(
    url: &str,
    group: &GroupKey,
    retry_at: DateTime<Utc>,
    tz: Tz,
    now: DateTime<Utc>,
) -> ResultEntry {
    let mut e = base_entry(url, group, Outcome::Deferred, LocalReason::Budget);
    e.message = format!("the {} budget for {} is spent until its window reopens", group.engine.title(), group.property);
    e.set_retry(retry_at, tz, now);
    e
}

/// The result of a URL within budget that the pace sends at its slot `at`.
pub(in crate::pipeline) fn paced_entry(
    url: &str,
    group: &GroupKey,
    at: DateTime<Utc>,
    user_tz: Tz,
    now: DateTime<Utc>,
) -> ResultEntry {
    let mut e = base_entry(url, group, Outcome::Deferred, LocalReason::Paced);
    e.message = format!(
        "within budget, but {} requests are paced to the configured rate; it goes at its slot",
        group.engine.title()
    );
    e.set_retry(at, user_tz, now);
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget_rules::Scope;
    use crate::model::Period;
    use crate::pipeline::testing::{at, rule};

    #[test]
    fn a_budget_deferral_is_told_in_the_timezone_of_the_rule_that_reopens_then() {
        let shanghai = chrono_tz::Asia::Shanghai;
        let paris = chrono_tz::Europe::Paris;
        let rules = [
            rule("day", Scope::Property, Period::Day, shanghai, Some(10)),
            rule("month", Scope::Property, Period::Month, Tz::UTC, Some(100)),
        ];
        // Midnight in Shanghai ends its day; the month ends at midnight UTC.
        assert_eq!(deferral_tz(&rules, at("2026-03-02T16:00:00Z"), paris), shanghai);
        assert_eq!(deferral_tz(&rules, at("2026-04-01T00:00:00Z"), paris), Tz::UTC);
        assert_eq!(deferral_tz(&rules, at("2026-03-02T16:30:00Z"), paris), paris, "no rule ends then");
    }
}
