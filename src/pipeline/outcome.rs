//! Outcomes: what an engine's answer becomes — the scheduler's decision per
//! item, one ledger record per answer and decision (`finish`), the blocks a
//! quota answer puts on the budget, and each item's result. What a claim
//! deferred (budget, pace) is the findings' (`findings::deferrals`).
//! The sender borrows a `Recorder` for each claim. Nothing here sends or
//! reads input; `findings` writes the report at the end. A request the run's
//! stop cut (`stop`) is recorded here too, on the same path: unanswered, it
//! stays counted and goes again once its reservation's lease has ended;
//! unsent, its budget is given back.

use super::findings::{base_entry, Findings};
use crate::budget_rules;
use crate::config::RetrySettings;
use crate::engines;
use crate::ledger::{Answered, Block, Claim, ClaimedItem, Finish, Remainder};
use crate::model::{
    AcceptedReason, Class, EngineKind, GroupKey, MisconfiguredReason, NextStep, Outcome, Reason, RuleWindow,
};
use crate::output::results::ResultEntry;
use crate::schedule::{self, Decision, History, Inputs};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use std::collections::HashMap;

/// What the answers to a claim are recorded with: the retry settings, and
/// the findings that get the results (the ledger records the `Finish`
/// returned, with the group's next claim).
pub(super) struct Recorder<'r> {
    pub(super) retry: &'r RetrySettings,
    pub(super) user_tz: Tz,
    pub(super) findings: &'r mut Findings,
}

/// One request sent: what was claimed for it and what came back.
pub(super) struct Delivery<'a> {
    pub group: &'a GroupKey,
    pub rules: &'a [budget_rules::Rule],
    /// The windows the claim was counted in.
    pub windows: Vec<RuleWindow>,
    pub claim: &'a Claim,
    pub reservation: i64,
    pub sent: &'a engines::Sent,
    /// When the answer came.
    pub at: DateTime<Utc>,
    /// The credential whose first use starts the `key_pending` clock, and
    /// that first use.
    pub credential: Option<String>,
    pub key_first_used: Option<DateTime<Utc>>,
    /// The configuration a parked item waits for a change of.
    pub fingerprint: &'a str,
}

impl Recorder<'_> {
    /// Records what came back for a request: each item's result; and
    /// returns what the ledger records of it (`Budget::finish`, by itself or
    /// with the next claim) — its attempts, their next steps, the quota
    /// blocks and the budget given back, a credential that got an
    /// `accepted` no longer pending.
    pub(super) fn record(&mut self, d: Delivery) -> anyhow::Result<Finish> {
        let resend_now: Vec<bool> = (0..d.sent.answers.len()).map(|i| resends_now(d.sent, i, &d.windows)).collect();
        let blocks = quota_blocks(d.group, d.rules, &d.windows, d.sent, &resend_now, d.at);
        let quota_reset = blocks.iter().map(|b| b.until).max();
        // When the reservation stops being trusted (the ledger decided it
        // with the claim): a request the stop left unanswered is not sent
        // again before (the engine may have it).
        let lease_end = d.claim.lease_until.unwrap_or(d.claim.now);
        let context = Settle {
            at: d.at,
            key_first_used: d.key_first_used,
            quota_reset,
            retry: self.retry,
            user_tz: self.user_tz,
            quota_tz: quota_tz(d.rules, &d.windows, &blocks),
            fingerprint: d.fingerprint,
            lease_end,
            resend_now: &resend_now,
        };
        // What the engine did not count goes back in `finish`, decided by
        // the ledger's policy from each answer's class and whether it left.
        let reports = remainders(d.sent, &d.windows, d.at);
        let settled = settle(d.group, &d.claim.items, d.sent, &context, rand::random::<f64>);
        // What the findings are handed: what the stop cut, each item's
        // result, and the reasons this answer parked the group for.
        self.findings.interrupted(d.sent, lease_end);
        self.findings.answered(&d.claim.items, &settled.results, &settled.result_of)?;
        let parked = settled.answered.iter().filter(|a| matches!(a.next, NextStep::Park { .. }));
        self.findings.parked(d.group, parked.map(|a| a.reason));
        // An answer that is not the engine's own (`unrecognized_body`) says
        // nothing of the key: it does not count as the key accepted.
        let unrecognized = Reason::from(AcceptedReason::UnrecognizedBody);
        let accepted = |a: &engines::Answer| a.verdict.class() == Class::Accepted && a.verdict.reason() != unrecognized;
        Ok(Finish {
            reservation: d.reservation,
            answers: settled.answered,
            blocks,
            reports,
            windows: d.windows,
            accepted_credential: d.credential.filter(|_| d.sent.answers.iter().any(accepted)),
        })
    }
}

/// What a quota answer blocks, and until when: with `Retry-After`, the
/// group's own rules until then; without, the rules of the window the engine
/// named until that window ends — for Google, whose daily quota is the
/// Cloud project's, the shared pool too. A partial remainder its request
/// explains (`resend_now`, by answer) blocks nothing: the window is not
/// spent, and the remainder recorded bounds the next claim.
fn quota_blocks(
    group: &GroupKey,
    rules: &[budget_rules::Rule],
    windows: &[RuleWindow],
    sent: &engines::Sent,
    resend_now: &[bool],
    at: DateTime<Utc>,
) -> Vec<Block> {
    let quota = sent
        .answers
        .iter()
        .enumerate()
        .find(|(i, a)| a.verdict.class() == Class::Quota && !resend_now.get(*i).copied().unwrap_or(false));
    let Some((_, answer)) = quota else { return Vec::new() };
    let mut blocks = Vec::new();
    for (rule, w) in rules.iter().zip(windows) {
        let pool = rule.scope == budget_rules::Scope::Pool;
        let until = match answer.verdict.retry_after {
            Some(_) if pool => continue,
            Some(ra) => schedule::quota_retry_at(ra, at),
            None if pool && group.engine != EngineKind::Google => continue,
            None if w.period == answer.verdict.quota_window => w.resets_at,
            None => continue,
        };
        blocks.push(Block { rule: w.clone(), until });
    }
    blocks
}

/// The timezone a quota retry without `Retry-After` is told in: that of a
/// rule the answer blocked until its window ends.
fn quota_tz(rules: &[budget_rules::Rule], windows: &[RuleWindow], blocks: &[Block]) -> Option<Tz> {
    rules
        .iter()
        .zip(windows)
        .find(|(_, w)| blocks.iter().any(|b| b.rule.rule == w.rule && b.until == w.resets_at))
        .map(|(r, _)| r.tz)
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
/// the remainder, recorded in the same transaction (`remainders`), bounds
/// the next claim to at most that many — each resend smaller than the
/// request before, so it ends.
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

/// What the engine said is left of its windows in its answers (Bing's
/// remainder, 0 when it said a window is spent), for each of the group's
/// reported windows of that period: the last answer that said so wins.
fn remainders(sent: &engines::Sent, windows: &[RuleWindow], at: DateTime<Utc>) -> Vec<Remainder> {
    let said: Vec<(crate::model::Period, u64)> = sent.answers.iter().filter_map(|a| a.verdict.reported).collect();
    windows
        .iter()
        .filter(|w| w.reported)
        .filter_map(|w| {
            let (_, remaining) = said.iter().rev().find(|(period, _)| *period == w.period)?;
            Some(Remainder { window: w.clone(), remaining: *remaining, at })
        })
        .collect()
}

/// What settling a request's answers needs besides the answers.
struct Settle<'a> {
    at: DateTime<Utc>,
    key_first_used: Option<DateTime<Utc>>,
    /// When the windows a quota answer blocked reopen.
    quota_reset: Option<DateTime<Utc>>,
    retry: &'a RetrySettings,
    user_tz: Tz,
    /// The timezone of a quota answer's retry without `Retry-After`.
    quota_tz: Option<Tz>,
    fingerprint: &'a str,
    /// When the request's reservation would have been reconciled.
    lease_end: DateTime<Utc>,
    /// By answer: a partial remainder its request explains (`resends_now`),
    /// whose items are due again at once.
    resend_now: &'a [bool],
}

/// A request's answers, settled: the ledger's records and each item's result.
#[derive(Debug)]
struct Settled {
    answered: Vec<Answered>,
    /// The results, one per answer and item history: the same for each
    /// item it stands for but for the item's URL and attempts.
    results: Vec<ResultEntry>,
    /// Each claimed item's result (its index in `results`), in the items'
    /// order.
    result_of: Vec<usize>,
}

/// One decision per answer and item history (items sent together retry
/// together, with one `jitter`), and one record per answer and outcome:
/// the ledger stores each once, for every item it names.
fn settle(
    group: &GroupKey,
    items: &[ClaimedItem],
    sent: &engines::Sent,
    c: &Settle,
    mut jitter: impl FnMut() -> f64,
) -> Settled {
    let mut answered: Vec<Answered> = Vec::new();
    let mut results = Vec::new();
    let mut result_of = Vec::with_capacity(items.len());
    let mut record_of: HashMap<(usize, Recorded), usize> = HashMap::new();
    // The result and record of each answer and history, once decided.
    let mut made: HashMap<(usize, History), (usize, usize)> = HashMap::new();
    for (item, &answer_index) in items.iter().zip(&sent.per_url) {
        let answer = &sent.answers[answer_index];
        let history =
            History { last_class: item.last_class, streak: item.streak, streak_started_at: item.streak_started_at };
        if let Some(&(result, record)) = made.get(&(answer_index, history)) {
            answered[record].items.push(item.id);
            result_of.push(result);
            continue;
        }
        let decision = match stop_decision(answer, c.at, c.lease_end) {
            Some(decision) => decision,
            // Not a wait: what is left goes again now, within the remainder.
            None if c.resend_now.get(answer_index).copied().unwrap_or(false) => Decision::RetryAt(c.at),
            None => schedule::decide(
                &Inputs {
                    class: answer.verdict.class(),
                    retry_after: answer.verdict.retry_after,
                    now: c.at,
                    history,
                    key_first_used: c.key_first_used,
                    quota_reset: c.quota_reset,
                    settings: c.retry,
                },
                jitter(),
            ),
        };
        let retry_tz = match c.quota_tz {
            Some(tz) if answer.verdict.class() == Class::Quota && answer.verdict.retry_after.is_none() => tz,
            _ => c.user_tz,
        };
        let (recorded, entry) = item_result(group, item, answer, decision, c.at, retry_tz, c.fingerprint);
        let index = *record_of.entry((answer_index, recorded.clone())).or_insert_with(|| {
            answered.push(Answered {
                items: Vec::new(),
                at: c.at,
                class: recorded.class,
                reason: recorded.reason,
                message: recorded.message,
                response: answer.response.clone(),
                next: recorded.next,
                reached: answer.reached,
            });
            answered.len() - 1
        });
        answered[index].items.push(item.id);
        made.insert((answer_index, history), (results.len(), index));
        result_of.push(results.len());
        results.push(entry);
    }
    Settled { answered, results, result_of }
}

/// The next step of an item whose request the run's stop cut (`None`: an
/// engine's answer, for the scheduler): sent and not answered, it goes
/// again once its reservation's lease has ended, as a reconciled one would
/// (the engine may have it, so not sooner); never sent, it is due at once.
fn stop_decision(answer: &engines::Answer, at: DateTime<Utc>, lease_end: DateTime<Utc>) -> Option<Decision> {
    answer.cut_by_stop().then(|| Decision::RetryAt(if answer.reached { lease_end.max(at) } else { at }))
}

/// What the ledger records of an answer for an item: the same for every
/// item of a request that got it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Recorded {
    class: Class,
    reason: Reason,
    message: String,
    next: NextStep,
}

/// What the ledger records of one item's answer, and its result.
fn item_result(
    group: &GroupKey,
    item: &ClaimedItem,
    answer: &engines::Answer,
    decision: Decision,
    at: DateTime<Utc>,
    retry_tz: Tz,
    fingerprint: &str,
) -> (Recorded, ResultEntry) {
    let verdict = &answer.verdict;
    let mut e = base_entry(&item.url, group, verdict.class().into(), verdict.reason());
    e.message = verdict.message.clone();
    e.hint = verdict.hint.clone();
    e.http_status = answer.response.http_status;
    e.attempts = item.attempts + 1;
    let (class, next) = match decision {
        Decision::Accepted => {
            if answer.skipped {
                e.outcome = Outcome::Skipped;
            }
            (verdict.class(), NextStep::Accepted)
        }
        Decision::RetryAt(t) => {
            e.set_retry(t, retry_tz, at);
            (verdict.class(), NextStep::RetryAt(t))
        }
        Decision::Park { reason, message } => {
            if let Some(reason) = reason {
                e.outcome = Outcome::Misconfigured;
                let message = message.unwrap_or_default();
                match verdict.class() {
                    // The key refused past its deadline: `classify` words why,
                    // from IndexNow's last answer (its `errorCode`).
                    Class::KeyPending => {
                        let gave_up =
                            crate::classify::key_never_accepted(answer.response.body.as_deref().unwrap_or(""));
                        e.message = match gave_up.reason() {
                            // Names what IndexNow said (its body stays in `log`).
                            Reason::Misconfigured(MisconfiguredReason::UserForbidden) => {
                                format!("{message}: {}", gave_up.message)
                            }
                            _ => format!("{message} (last answer: {})", verdict.message),
                        };
                        e.reason = gave_up.reason();
                        e.hint = gave_up.hint;
                    }
                    _ => {
                        e.reason = reason.into();
                        e.message = format!("{message} (last answer: {})", verdict.message);
                        e.hint = Some("check the endpoint and the network, then `indexq queue retry`".into());
                    }
                }
            }
            (Class::Misconfigured, NextStep::Park { fingerprint: fingerprint.to_string() })
        }
    };
    (Recorded { class, reason: e.reason, message: e.message.clone(), next }, e)
}

#[cfg(test)]
mod tests;
