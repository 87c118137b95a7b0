//! The decision of a batch: what the engine says is left of its quota
//! (once per group and run), then the claim the ledger makes within the
//! budget and the pace. What the claim deferred goes to the findings as
//! events; nothing here sends.

use super::Sender;
use crate::budget_rules;
use crate::ledger::{Claim, ClaimSpec, Pace};
use crate::model::{GroupKey, RuleWindow};
use crate::pipeline::findings::{ClaimContext, Deferred};
use crate::pipeline::Run;
use chrono::{DateTime, Utc};

impl Run<'_> {
    /// What the engine says is left of its quota, per period (none for an
    /// engine that does not say); when it cannot say, a note for the report.
    pub(in crate::pipeline) async fn reported_quota(
        &self,
        group: &GroupKey,
        windows: &[RuleWindow],
        notes: &mut Vec<String>,
    ) -> anyhow::Result<Vec<(crate::model::Period, u64)>> {
        let Some(answer) = self.engines[&group.engine].reported_quota(group).await else { return Ok(Vec::new()) };
        match answer {
            Ok(left) => Ok(left),
            Err(why) => {
                notes.push(unread_quota_note(group, &why, windows));
                Ok(Vec::new())
            }
        }
    }
}

/// The decision of `send_batch`: what the engine says is left of its
/// quota (read once per group), then a batch of `group` claimed within
/// its budget and pace (the ledger reserves it), with the credential
/// it goes with. Each URL the budget has no room for is handed to the
/// findings as it comes (`Deferred`), and the claim's budget and pace
/// once it is made. `None`: the run stopped before a claim (a quota
/// read it waits for is let go).
pub(super) async fn decide(
    sender: &mut Sender<'_, '_>,
    group: &GroupKey,
    rules: &Vec<budget_rules::Rule>,
) -> anyhow::Result<Option<(Claim, Option<String>)>> {
    let now = sender.run.clock.now();
    if !read_quota_once(sender, group, &budget_rules::windows(rules, now)).await? || sender.run.stop.requested() {
        return Ok(None);
    }
    let engine = &sender.run.engines[&group.engine];
    // Its first use is recorded with the claim (`key_pending`'s clock).
    let credential = engine.credential(group);
    let pace = engine.pace(group).map(|(key, interval, burst)| Pace {
        key,
        interval,
        burst,
        horizon: sender.wait_until.max(now),
    });
    // Each URL the budget defers is handed to the findings as it comes:
    // the report's rows are theirs to make.
    let context = ClaimContext { group, rules, user_tz: sender.run.user_tz, wait_until: sender.wait_until, now };
    let mut deferrals = sender.findings.claim_deferrals(context);
    let mut on_deferred = |id: i64, url: &str, retry_at: DateTime<Utc>| {
        deferrals.deferred(Deferred { id, url, retry_at });
    };
    let spec = ClaimSpec {
        windows: rules,
        max_items: engine.max_batch(),
        pace: pace.as_ref(),
        now: crate::ledger::open::now(sender.run.clock),
        credential: credential.as_deref(),
        order: sender.run.settings.submit.order,
    };
    // The kept answer is let go only once the transaction that records
    // it has committed: a failed one keeps it for `Run::recover`.
    let claim = match &sender.answered {
        Some(done) => sender.run.ledger.finish_and_claim(done, group, &spec, &sender.run.owner, &mut on_deferred)?,
        None => sender.run.ledger.claim(group, &spec, &sender.run.owner, &mut on_deferred)?,
    };
    sender.answered = None;
    deferrals.finish()?;
    // From here on, the instant and the windows the claim was counted
    // in (`claim.now`, `claim.windows`).
    let context = ClaimContext { now: claim.now, ..context };
    sender.findings.claimed(sender.run.ledger.as_mut(), sender.run.clock, &context, &claim.windows, &claim)?;
    Ok(Some((claim, credential)))
}

/// Asks the engine what is left of its quota, once per group, unless
/// the run is stopped meanwhile; returns whether it was not.
async fn read_quota_once(
    sender: &mut Sender<'_, '_>,
    group: &GroupKey,
    windows: &[RuleWindow],
) -> anyhow::Result<bool> {
    if sender.reported.insert(group.clone()) {
        let stop_signal = sender.run.stop.stop_signal().clone();
        tokio::select! {
            read = read_reported_quota(sender, group, windows) => read?,
            () = stop_signal.stopped() => return Ok(false),
        }
    }
    Ok(true)
}

/// Asks the engine what is left of its quota (once per group and run)
/// and records it in the ledger; if it cannot say, the local rules
/// decide, and the report says so.
async fn read_reported_quota(
    sender: &mut Sender<'_, '_>,
    group: &GroupKey,
    windows: &[RuleWindow],
) -> anyhow::Result<()> {
    let now = sender.run.clock.now();
    for (period, remaining) in sender.run.reported_quota(group, windows, &mut sender.findings.notes).await? {
        for w in windows.iter().filter(|w| w.reported && w.period == period) {
            sender.run.ledger.record_report(w, remaining, now)?;
        }
    }
    Ok(())
}

/// The report's note when the engine cannot say what is left of its quota.
pub(super) fn unread_quota_note(group: &GroupKey, why: &str, windows: &[RuleWindow]) -> String {
    format!(
        "{}: could not read the quota {} reports ({why}); the local ledger decides this run{}.",
        crate::output::printer::group_title(group),
        group.engine.title(),
        if windows.iter().any(|w| w.reported && w.limit.is_some()) {
            format!(
                " (with no local daily rule: {} a day, indexq's conservative default)",
                budget_rules::BING_NEW_SITE_DAILY
            )
        } else {
            String::new()
        }
    )
}
