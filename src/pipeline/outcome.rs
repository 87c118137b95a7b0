//! Outcomes: what an engine's answer and its decisions (`next_steps`)
//! become — one ledger record per answer and outcome (`finish`), with the
//! quota blocks and remainders, and each item's result handed to the
//! findings. What a claim deferred (budget, pace) is the findings'
//! (`findings::deferrals`). The sender borrows a `Recorder` for each claim.
//! Nothing here sends, reads input or decides; `findings` writes the report
//! at the end. A request the run's stop cut (`stop`) is recorded here too,
//! on the same path: unanswered, it stays counted and goes again once its
//! reservation's lease has ended; unsent, its budget is given back.

use super::findings::{AnswerResult, Findings};
use super::next_steps::NextSteps;
use crate::engines;
use crate::ledger::{Answered, Claim, ClaimedItem, Finish, Remainder};
use crate::model::{AcceptedReason, Class, GroupKey, MisconfiguredReason, NextStep, Outcome, Reason, RuleWindow};
use crate::schedule::{Decision, GaveUp};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use std::collections::HashMap;

/// What the answers to a claim are recorded with: the user's timezone, and
/// the findings that get the results (the ledger records the `Finish`
/// returned, with the group's next claim).
pub(super) struct Recorder<'r> {
    pub(super) user_tz: Tz,
    pub(super) findings: &'r mut Findings,
}

/// One request sent: what was claimed for it and what came back.
pub(super) struct Delivery<'a> {
    pub group: &'a GroupKey,
    pub claim: &'a Claim,
    pub reservation: i64,
    pub sent: &'a engines::Sent,
    /// When the answer came.
    pub at: DateTime<Utc>,
    /// The credential whose first use starts the `key_pending` clock.
    pub credential: Option<String>,
    /// The configuration a parked item waits for a change of.
    pub fingerprint: &'a str,
}

impl Recorder<'_> {
    /// Records what came back for a request, with what its answers decided
    /// (`next_steps`): each item's result; and returns what the ledger
    /// records of it (`Budget::finish`, by itself or with the next claim) —
    /// its attempts, their next steps, the quota blocks and the budget given
    /// back, a credential that got an `accepted` no longer pending.
    pub(super) fn record(&mut self, d: Delivery, steps: NextSteps) -> anyhow::Result<Finish> {
        // What the engine did not count goes back in `finish`, decided by
        // the ledger's policy from each answer's class and whether it left.
        let reports = remainders(d.sent, &d.claim.windows, d.at);
        let context = Settle { at: d.at, user_tz: self.user_tz, quota_tz: steps.quota_tz, fingerprint: d.fingerprint };
        let settled = settle(&d.claim.items, d.sent, &steps, &context);
        // What the findings are handed: what the stop cut, each item's
        // result, and the reasons this answer parked the group for.
        self.findings.interrupted(d.sent, steps.lease_end);
        self.findings.answered(d.group, &d.claim.items, &settled.results, &steps.decision_of, d.at)?;
        let parked = settled.answered.iter().filter(|a| matches!(a.next, NextStep::Park { .. }));
        self.findings.parked(d.group, parked.map(|a| a.reason));
        // An answer that is not the engine's own (`unrecognized_body`) says
        // nothing of the key: it does not count as the key accepted.
        let unrecognized = Reason::from(AcceptedReason::UnrecognizedBody);
        let accepted = |a: &engines::Answer| a.verdict.class() == Class::Accepted && a.verdict.reason() != unrecognized;
        Ok(Finish {
            reservation: d.reservation,
            answers: settled.answered,
            blocks: steps.blocks,
            reports,
            windows: d.claim.windows.clone(),
            accepted_credential: d.credential.filter(|_| d.sent.answers.iter().any(accepted)),
        })
    }
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

/// What settling a request's answers needs besides the answers and their
/// decisions.
struct Settle<'a> {
    at: DateTime<Utc>,
    user_tz: Tz,
    /// The timezone of a quota answer's retry without `Retry-After`.
    quota_tz: Option<Tz>,
    fingerprint: &'a str,
}

/// A request's answers, settled: the ledger's records and the results,
/// one per decision (`NextSteps::decisions`): the same for each item it
/// stands for but for the item's URL and attempts.
#[derive(Debug)]
struct Settled {
    answered: Vec<Answered>,
    results: Vec<AnswerResult>,
}

/// One record per answer and outcome (the ledger stores each once, for
/// every item it names) and one result per decision.
fn settle(items: &[ClaimedItem], sent: &engines::Sent, steps: &NextSteps, c: &Settle) -> Settled {
    let mut answered: Vec<Answered> = Vec::new();
    let mut results = Vec::with_capacity(steps.decisions.len());
    // Each decision's record (its index in `answered`).
    let mut record_for: Vec<usize> = Vec::with_capacity(steps.decisions.len());
    let mut record_of: HashMap<(usize, Recorded), usize> = HashMap::new();
    for (item, &decided) in items.iter().zip(&steps.decision_of) {
        // Decisions are numbered in the order their first items come: a
        // new one is the next to settle.
        if decided == results.len() {
            let (answer_index, decision) = &steps.decisions[decided];
            let answer = &sent.answers[*answer_index];
            let retry_tz = match c.quota_tz {
                Some(tz) if answer.verdict.class() == Class::Quota && answer.verdict.retry_after.is_none() => tz,
                _ => c.user_tz,
            };
            let (recorded, result) = answer_result(answer, decision, retry_tz, c.fingerprint);
            let index = *record_of.entry((*answer_index, recorded.clone())).or_insert_with(|| {
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
            record_for.push(index);
            results.push(result);
        }
        answered[record_for[decided]].items.push(item.id);
    }
    Settled { answered, results }
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

/// What the ledger records of an answer with its decision, and what the
/// report says of it (`retry_tz`: the timezone a retry is told in).
fn answer_result(
    answer: &engines::Answer,
    decision: &Decision,
    retry_tz: Tz,
    fingerprint: &str,
) -> (Recorded, AnswerResult) {
    let verdict = &answer.verdict;
    let mut r = AnswerResult {
        outcome: verdict.class().into(),
        reason: verdict.reason(),
        message: verdict.message.clone(),
        hint: verdict.hint.clone(),
        http_status: answer.response.http_status,
        retry: None,
    };
    let (class, next) = match decision {
        Decision::Accepted => {
            if answer.skipped {
                r.outcome = Outcome::Skipped;
            }
            (verdict.class(), NextStep::Accepted)
        }
        Decision::RetryAt(t) => {
            r.retry = Some((*t, retry_tz));
            (verdict.class(), NextStep::RetryAt(*t))
        }
        Decision::Park { gave_up } => {
            if let Some(gave_up) = gave_up {
                r.outcome = Outcome::Misconfigured;
                let message = gave_up_message(*gave_up);
                match verdict.class() {
                    // The key refused past its deadline: `classify` words why,
                    // from IndexNow's last answer (its `errorCode`).
                    Class::KeyPending => {
                        let refused =
                            crate::classify::key_never_accepted(answer.response.body.as_deref().unwrap_or(""));
                        r.message = match refused.reason() {
                            // Names what IndexNow said (its body stays in `log`).
                            Reason::Misconfigured(MisconfiguredReason::UserForbidden) => {
                                format!("{message}: {}", refused.message)
                            }
                            _ => format!("{message} (last answer: {})", verdict.message),
                        };
                        r.reason = refused.reason();
                        r.hint = refused.hint;
                    }
                    _ => {
                        r.reason = gave_up.reason().into();
                        r.message = format!("{message} (last answer: {})", verdict.message);
                        r.hint = Some("check the endpoint and the network, then `indexq queue retry`".into());
                    }
                }
            }
            (Class::Misconfigured, NextStep::Park { fingerprint: fingerprint.to_string() })
        }
    };
    (Recorded { class, reason: r.reason, message: r.message.clone(), next }, r)
}

/// The words for why the scheduler gave up on an item.
fn gave_up_message(gave_up: GaveUp) -> String {
    match gave_up {
        GaveUp::Failing { failing_for, attempts } => format!(
            "gave up after {} of failures ({attempts} attempts); the engine or the network kept failing",
            crate::clock::humanize(failing_for)
        ),
        GaveUp::KeyNeverAccepted { since_first_use } => format!(
            "the engine still refuses the key {} after its first use, although the key file is served correctly",
            crate::clock::humanize(since_first_use)
        ),
    }
}

#[cfg(test)]
mod tests;
