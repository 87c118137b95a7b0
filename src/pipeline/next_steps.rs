//! Next steps: what a request's answers decide, before anything is
//! recorded — whether another batch of the group may go now, which answers
//! are a partial remainder their request explains (due again at once), the
//! blocks a quota answer puts on the budget, and each item's next step (the
//! scheduler's, or the stop's). Nothing here records or reports: `outcome`
//! makes the ledger's records of these decisions and hands the findings
//! their part.

use crate::budget_rules;
use crate::config::RetrySettings;
use crate::engines;
use crate::ledger::{Block, Claim};
use crate::model::{Class, EngineKind, GroupKey, RuleWindow};
use crate::schedule::{self, Decision, History, Inputs};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;

/// One request answered, as its decisions need it: what was claimed for
/// it (its items, windows, lease and credential's first use), what came
/// back and when, and the retry settings.
pub(super) struct Answers<'a> {
    pub group: &'a GroupKey,
    pub rules: &'a [budget_rules::Rule],
    pub claim: &'a Claim,
    pub sent: &'a engines::Sent,
    /// When the answer came.
    pub at: DateTime<Utc>,
    pub retry: &'a RetrySettings,
}

/// What a request's answers decide.
#[derive(Debug)]
pub(super) struct NextSteps {
    /// The blocks a quota answer puts on the budget (`quota_blocks`).
    pub blocks: Vec<Block>,
    /// The timezone a quota retry without `Retry-After` is told in: that of
    /// a rule the answer blocked until its window ends.
    pub quota_tz: Option<Tz>,
    /// When the request's reservation stops being trusted (the ledger
    /// decided it with the claim): a request the stop left unanswered is
    /// not sent again before.
    pub lease_end: DateTime<Utc>,
    /// One decision per answer and item history, with its answer's index:
    /// items sent together retry together, with one jitter. Numbered in
    /// the order their first items come.
    pub decisions: Vec<(usize, Decision)>,
    /// Each claimed item's decision (its index in `decisions`), in the
    /// items' order.
    pub decision_of: Vec<usize>,
}

/// The blocks a quota answer puts on the budget, and the timezone of the
/// first rule it blocked until its window ends.
pub(super) struct QuotaBlocks {
    /// Each blocked window, with when it reopens; `None`: when the
    /// answer's `Retry-After` says (resolved by the scheduler).
    pub windows: Vec<(RuleWindow, Option<DateTime<Utc>>)>,
    pub tz: Option<Tz>,
    /// The quota answer that blocks them (its index in the answers).
    pub answer: Option<usize>,
}

/// The next steps after a request's answers: the quota blocks, then each
/// item's next step — the stop's for a request the stop cut, at once for a
/// partial remainder its request explains, else the scheduler's (`jitter`
/// draws a uniform sample in [0, 1) for each answer and history it
/// backs off).
pub(super) fn after(a: &Answers, mut jitter: impl FnMut() -> f64) -> NextSteps {
    let sent = a.sent;
    let resend_now: Vec<bool> = (0..sent.answers.len()).map(|i| resends_now(sent, i, &a.claim.windows)).collect();
    let quota = quota_blocks(a.group, a.rules, &a.claim.windows, sent, &resend_now);
    let lease_end = a.claim.lease_until.unwrap_or(a.claim.now);
    let stopped: Vec<Option<Decision>> =
        sent.answers.iter().map(|answer| stop_decision(answer, a.at, lease_end)).collect();
    // What follows is the scheduler's alone: the blocks' `Retry-After`
    // resolved, and each other answer and history's next step.
    let retry_after = quota.answer.and_then(|i| sent.answers[i].verdict.retry_after);
    let retry_after_until = retry_after.map(|ra| schedule::quota_retry_at(ra, a.at));
    let blocks: Vec<Block> = quota
        .windows
        .into_iter()
        .filter_map(|(rule, until)| Some(Block { rule, until: until.or(retry_after_until)? }))
        .collect();
    let quota_reset = blocks.iter().map(|b| b.until).max();
    let mut decisions: Vec<(usize, Decision)> = Vec::new();
    let mut decision_of = Vec::with_capacity(a.claim.items.len());
    // Looked up once an item, thousands a batch: a hasher for small keys
    // of the run's own values, not SipHash.
    let mut made: FxHashMap<(usize, History), usize> = FxHashMap::default();
    for (item, &answer_index) in a.claim.items.iter().zip(&sent.per_url) {
        let history =
            History { last_class: item.last_class, streak: item.streak, streak_started_at: item.streak_started_at };
        let index = match made.entry((answer_index, history)) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let answer = &sent.answers[answer_index];
                let decision = if let Some(stopped) = &stopped[answer_index] {
                    stopped.clone()
                } else if resend_now[answer_index] {
                    // Not a wait: what is left goes again now, within the
                    // remainder.
                    Decision::RetryAt(a.at)
                } else {
                    schedule::decide(
                        &Inputs {
                            class: answer.verdict.class(),
                            retry_after: answer.verdict.retry_after,
                            now: a.at,
                            history,
                            key_first_used: a.claim.key_first_used,
                            quota_reset,
                            settings: a.retry,
                        },
                        jitter(),
                    )
                };
                decisions.push((answer_index, decision));
                *e.insert(decisions.len() - 1)
            }
        };
        decision_of.push(index);
    }
    NextSteps { blocks, quota_tz: quota.tz, lease_end, decisions, decision_of }
}

/// Whether another batch of the group may go now: this one was full, or
/// its answer said what is left of a reported window, and nothing (the
/// pace, a quota answer) said to stop — or every quota answer
/// was a partial remainder its request explains (`resends_now`):
/// what is left goes at once, the next claim bounded by it. A claim that
/// deferred what the budget cannot cover left due what it can: the next
/// claim takes that (or nothing, the budget spent).
pub(super) fn another_batch(claim: &Claim, sent: &engines::Sent, max_batch: usize) -> bool {
    let mut quota = (0..sent.answers.len()).filter(|&i| sent.answers[i].verdict.class() == Class::Quota).peekable();
    if quota.peek().is_some() {
        return quota.all(|i| resends_now(sent, i, &claim.windows));
    }
    // An answer that says what is left of a reported window (Baidu's
    // `remain`) sets the budget the claim was bounded by: the next claim
    // takes what it covers, or defers what it does not.
    let said = sent.answers.iter().any(|a| {
        a.verdict.reported.is_some_and(|(period, _)| claim.windows.iter().any(|w| w.reported && w.period == period))
    });
    claim.paced.is_empty() && (claim.items.len() == max_batch || said)
}

/// Whether the `index`-th answer of `sent` is a partial remainder that its
/// request explains: a quota answer naming what is left (more than 0) of a
/// window the group's rules report (Bing's "Quota remaining for today: 10,
/// Submitted: 32"), without `Retry-After`, to a request that carried more
/// URLs than that. Its items are due again at once and the group goes on:
/// the remainder, recorded in the same transaction (`outcome`'s
/// `remainders`), bounds the next claim to at most that many — each resend
/// smaller than the request before, so it ends.
pub(super) fn resends_now(sent: &engines::Sent, index: usize, windows: &[RuleWindow]) -> bool {
    let Some(answer) = sent.answers.get(index) else { return false };
    let Some((period, left)) = answer.verdict.reported else { return false };
    let urls = sent.per_url.iter().filter(|&&i| i == index).count() as u64;
    answer.verdict.class() == Class::Quota
        && answer.verdict.retry_after.is_none()
        && left > 0
        && urls > left
        && windows.iter().any(|w| w.reported && w.period == period)
}

/// What a quota answer blocks, and until when: with `Retry-After`, the
/// group's own rules until then; without, the rules of the window the engine
/// named until that window ends — for Google, whose daily quota is the
/// Cloud project's, the shared pool too. A partial remainder its request
/// explains (`resend_now`, by answer) blocks nothing: the window is not
/// spent, and the remainder recorded bounds the next claim.
pub(super) fn quota_blocks(
    group: &GroupKey,
    rules: &[budget_rules::Rule],
    windows: &[RuleWindow],
    sent: &engines::Sent,
    resend_now: &[bool],
) -> QuotaBlocks {
    let mut blocked = QuotaBlocks { windows: Vec::new(), tz: None, answer: None };
    let quota = (0..sent.answers.len())
        .filter(|&i| sent.answers[i].verdict.class() == Class::Quota)
        .filter(|&i| !resend_now.get(i).copied().unwrap_or(false))
        .min();
    let Some(index) = quota else { return blocked };
    let answer = &sent.answers[index];
    blocked.answer = Some(index);
    for (rule, w) in rules.iter().zip(windows) {
        let pool = rule.scope == budget_rules::Scope::Pool;
        let until = match answer.verdict.retry_after {
            Some(_) if pool => continue,
            Some(_) => None,
            None if pool && group.engine != EngineKind::Google => continue,
            None if w.period == answer.verdict.quota_window => {
                blocked.tz.get_or_insert(rule.tz);
                Some(w.resets_at)
            }
            None => continue,
        };
        blocked.windows.push((w.clone(), until));
    }
    blocked
}

/// The next step of an item whose request the run's stop cut
/// (`schedule::after_stop`); `None`: an engine's answer, for the scheduler.
fn stop_decision(answer: &engines::Answer, at: DateTime<Utc>, lease_end: DateTime<Utc>) -> Option<Decision> {
    answer.cut_by_stop().then(|| schedule::after_stop(answer.reached, at, lease_end))
}

#[cfg(test)]
mod tests;
