//! Outcomes: what an engine's answer becomes — the scheduler's decision per
//! item, one ledger record per answer and decision (`finish`), the blocks a
//! quota answer puts on the budget, and each item's result; the results of
//! items a claim deferred (budget, pace) and the budgets the report names;
//! and at the end of the run, the report and the exit status. Nothing here
//! sends or reads input.

use super::{base_entry, Run};
use crate::budget;
use crate::commands::ExitStatus;
use crate::config::RetrySettings;
use crate::engines;
use crate::ledger::{Answered, Block, Claim, ClaimedItem, Finish};
use crate::model::{Class, EngineKind, GroupKey, NextStep, Outcome, RuleWindow, Usage};
use crate::report::{PlanCounts, Printer, ResultEntry, SubmitReport, Verbosity, Waiting};
use crate::schedule::{self, Decision, History, Inputs};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use std::collections::{BTreeMap, HashMap};

/// One request sent: what was claimed for it and what came back.
pub(super) struct Delivery<'a> {
    pub group: &'a GroupKey,
    pub rules: &'a [budget::Rule],
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

impl Run<'_> {
    /// Records what came back for a request: each item's result, and in the
    /// ledger its attempts, their next steps, the quota blocks and the
    /// budget given back; a credential that got an `accepted` is no longer
    /// pending.
    pub(super) fn record(&mut self, d: Delivery) -> anyhow::Result<()> {
        let blocks = quota_blocks(d.group, d.rules, &d.windows, d.sent, d.at);
        let quota_reset = blocks.iter().map(|b| b.until).max();
        let context = Settle {
            at: d.at,
            key_first_used: d.key_first_used,
            quota_reset,
            retry: &self.settings.retry,
            user_tz: self.user_tz,
            quota_tz: quota_tz(d.rules, &d.windows, &blocks),
            fingerprint: d.fingerprint,
        };
        let settled = settle(d.group, &d.claim.items, d.sent, &context, rand::random::<f64>);
        for (id, entry) in settled.entries {
            self.entry(id, entry)?;
        }
        let refund = refund(d.sent);
        self.ledger.finish(&Finish {
            reservation: d.reservation,
            answers: settled.answered,
            blocks,
            refund,
            windows: d.windows,
        })?;
        if let Some(c) = d.credential.filter(|_| d.sent.answers.iter().any(|a| a.verdict.class == Class::Accepted)) {
            self.ledger.credential_accepted(&c)?;
        }
        Ok(())
    }

    /// Results and the human report's notes for the items a claim deferred:
    /// past the budget (until the window reopens) or past the pace.
    pub(super) fn note_deferrals(
        &mut self,
        group: &GroupKey,
        rules: &[budget::Rule],
        windows: &[RuleWindow],
        claim: &Claim,
        now: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        if let Some(retry_at) = claim.retry_at {
            let (tz, window, usage) = self.binding_rule(rules, windows, retry_at)?;
            self.deferrals.push(crate::report::Deferral {
                group: group.clone(),
                rule_tz: tz,
                used: usage.used,
                limit: usage.limit(&window),
                retry_at,
                blocked: usage.blocked_until.is_some_and(|t| t > now),
            });
        }
        for (id, url, at) in &claim.paced {
            let e = paced_entry(url, group, *at, self.user_tz, now);
            self.entry(*id, e)?;
        }
        Ok(())
    }

    /// The rule that holds the budget until `retry_at`: one with nothing
    /// left that frees up then (the latest of the exhausted ones).
    fn binding_rule(
        &mut self,
        rules: &[budget::Rule],
        windows: &[RuleWindow],
        retry_at: DateTime<Utc>,
    ) -> anyhow::Result<(Tz, RuleWindow, Usage)> {
        let now = self.clock.now();
        let mut fallback = None;
        for (rule, window) in rules.iter().zip(windows) {
            let usage = self.ledger.usage(window)?;
            if usage.available_at(window, now) == Some(retry_at) {
                return Ok((rule.tz, window.clone(), usage));
            }
            fallback.get_or_insert((rule.tz, window.clone(), usage));
        }
        fallback.ok_or_else(|| anyhow::anyhow!("a budget deferral without a rule"))
    }

    /// The end of the run: the report (what is still waiting in each
    /// group, every result, the plan's counts) on stdout, and the exit
    /// status `--fail-on` makes of the results.
    pub(super) fn report(
        &mut self,
        started: DateTime<Utc>,
        plan: &BTreeMap<EngineKind, PlanCounts>,
        before_since: Option<u64>,
        fail_on: &[Outcome],
        printer: &Printer,
    ) -> anyhow::Result<ExitStatus> {
        self.progress.finish();
        let now = self.clock.now();
        let mut waiting = Vec::new();
        for group in self.known_groups() {
            let counts = self.ledger.queue_counts(&group, now)?;
            if let Some(next) = self.ledger.next_due(&group)?.filter(|_| counts.waiting > 0) {
                let tz = self.rule_timezone(&group).unwrap_or(self.user_tz);
                waiting.push(Waiting { group, count: counts.waiting, next, tz });
            }
        }
        self.results.flush()?;
        let report = SubmitReport {
            now: started,
            end: now,
            user_tz: self.user_tz,
            dry_run: self.dry_run,
            results: &self.results,
            deferrals: &self.deferrals,
            waiting: &waiting,
            notes: &self.notes,
            plan,
            before_since,
        };
        let mut out = std::io::BufWriter::new(printer.stdout());
        if printer.json {
            report.write_json(&mut out)?;
        } else {
            report.write_human(&mut out, printer.verbosity == Verbosity::Quiet)?;
        }
        std::io::Write::flush(&mut out)?;
        Ok(exit_status(fail_on, &self.results.summary()))
    }
}

/// 3 (needs a human) when some result is in a `--fail-on` outcome, else 0.
fn exit_status(fail_on: &[Outcome], summary: &BTreeMap<&'static str, u64>) -> ExitStatus {
    let needs_human = fail_on.iter().any(|o| summary[o.as_str()] > 0);
    if needs_human {
        ExitStatus::NeedsHuman
    } else {
        ExitStatus::Ok
    }
}

/// The result of a URL the budget has no room for until `retry_at` (told
/// in `tz`, the timezone of the rule that reopens then).
pub(super) fn budget_entry(
    url: &str,
    group: &GroupKey,
    retry_at: DateTime<Utc>,
    tz: Tz,
    now: DateTime<Utc>,
) -> ResultEntry {
    let mut e = base_entry(url, group, Outcome::Deferred);
    e.reason = "budget".into();
    e.message = format!("the {} budget for {} is spent until its window reopens", group.engine.title(), group.property);
    e.set_retry(retry_at, tz, now);
    e
}

/// The result of a URL within budget that the pace sends at its slot `at`.
fn paced_entry(url: &str, group: &GroupKey, at: DateTime<Utc>, user_tz: Tz, now: DateTime<Utc>) -> ResultEntry {
    let mut e = base_entry(url, group, Outcome::Deferred);
    e.reason = "paced".into();
    e.message = format!(
        "within budget, but {} requests are paced to the configured rate; it goes at its slot",
        group.engine.title()
    );
    e.set_retry(at, user_tz, now);
    e
}

/// What a quota answer blocks, and until when: with `Retry-After`, the
/// group's own rules until then; without, the rules of the window the engine
/// named until that window ends — for Google, whose daily quota is the
/// Cloud project's, the shared pool too.
fn quota_blocks(
    group: &GroupKey,
    rules: &[budget::Rule],
    windows: &[RuleWindow],
    sent: &engines::Sent,
    at: DateTime<Utc>,
) -> Vec<Block> {
    let Some(answer) = sent.answers.iter().find(|a| a.verdict.class == Class::Quota) else { return Vec::new() };
    let mut blocks = Vec::new();
    for (rule, w) in rules.iter().zip(windows) {
        let pool = rule.scope == budget::Scope::Pool;
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
fn quota_tz(rules: &[budget::Rule], windows: &[RuleWindow], blocks: &[Block]) -> Option<Tz> {
    rules
        .iter()
        .zip(windows)
        .find(|(_, w)| blocks.iter().any(|b| b.rule.rule == w.rule && b.until == w.resets_at))
        .map(|(r, _)| r.tz)
}

/// The budget given back: one unit per URL whose request never reached the
/// engine.
fn refund(sent: &engines::Sent) -> u64 {
    sent.per_url.iter().filter(|&&i| !sent.answers[i].reached).count() as u64
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
}

/// A request's answers, settled: the ledger's records and each item's result.
#[derive(Debug)]
struct Settled {
    answered: Vec<Answered>,
    /// In the order of the claimed items.
    entries: Vec<(i64, ResultEntry)>,
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
    let mut decisions: HashMap<(usize, History), Decision> = HashMap::new();
    let mut answered: Vec<Answered> = Vec::new();
    let mut entries = Vec::with_capacity(items.len());
    let mut record_of: HashMap<(usize, Recorded), usize> = HashMap::new();
    for (item, &answer_index) in items.iter().zip(&sent.per_url) {
        let answer = &sent.answers[answer_index];
        let history =
            History { last_class: item.last_class, streak: item.streak, streak_started_at: item.streak_started_at };
        let decision = decisions
            .entry((answer_index, history))
            .or_insert_with(|| {
                schedule::decide(
                    &Inputs {
                        class: answer.verdict.class,
                        retry_after: answer.verdict.retry_after,
                        now: c.at,
                        history,
                        key_first_used: c.key_first_used,
                        quota_reset: c.quota_reset,
                        settings: c.retry,
                    },
                    jitter(),
                )
            })
            .clone();
        let retry_tz = match c.quota_tz {
            Some(tz) if answer.verdict.class == Class::Quota && answer.verdict.retry_after.is_none() => tz,
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
            });
            answered.len() - 1
        });
        answered[index].items.push(item.id);
        entries.push((item.id, entry));
    }
    Settled { answered, entries }
}

/// What the ledger records of an answer for an item: the same for every
/// item of a request that got it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Recorded {
    class: Class,
    reason: String,
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
    let mut e = base_entry(&item.url, group, verdict.class.into());
    e.reason = verdict.reason.clone();
    e.message = verdict.message.clone();
    e.hint = verdict.hint.clone();
    e.http_status = answer.response.http_status;
    e.attempts = item.attempts + 1;
    let (class, next) = match decision {
        Decision::Accepted => {
            if answer.skipped {
                e.outcome = Outcome::Skipped;
            }
            (verdict.class, NextStep::Accepted)
        }
        Decision::RetryAt(t) => {
            e.set_retry(t, retry_tz, at);
            (verdict.class, NextStep::RetryAt(t))
        }
        Decision::Park { reason, message } => {
            if let Some(reason) = reason {
                e.outcome = Outcome::Misconfigured;
                e.reason = reason;
                e.message = format!("{} (last answer: {})", message.unwrap_or_default(), verdict.message);
                e.hint = Some(match verdict.class {
                    Class::KeyPending => {
                        "check that key_location serves exactly the key, or rotate the key (`indexq key generate`)"
                            .into()
                    }
                    _ => "check the endpoint and the network, then `indexq queue retry`".into(),
                });
            }
            (Class::Misconfigured, NextStep::Park { fingerprint: fingerprint.to_string() })
        }
    };
    (Recorded { class, reason: e.reason.clone(), message: e.message.clone(), next }, e)
}
