//! The request of a claimed batch: what goes to the engine (the URLs,
//! their actions and paced delays, the inspections first), sent with the
//! progress line counting it down, and what came back.

use super::Sender;
use crate::budget_rules;
use crate::engines;
use crate::ledger::Claim;
use crate::model::{GroupKey, RuleWindow};
use crate::pipeline::inspect;
use chrono::{DateTime, Utc};

/// A claimed batch sent: what came back, the configuration it was sent
/// with, when the answer came, and the inspection units taken for it.
pub(super) struct Request {
    pub(super) sent: engines::Sent,
    pub(super) fingerprint: String,
    pub(super) at: DateTime<Utc>,
    pub(super) inspections: Option<inspect::InspectionUnits>,
}

/// Sends a claimed batch, the progress line counting it down: the
/// request (the claimed URLs, their actions, their paced delays, and
/// which may be inspected first: `URL_UPDATED` only, within the
/// inspection budget; one that does not fit just publishes) and what
/// came back, with the configuration it was sent with (a parked item
/// waits for a change of it), when the answer came and the inspection
/// units taken.
pub(super) async fn send_claimed(
    sender: &mut Sender<'_, '_>,
    group: &GroupKey,
    rules: &[budget_rules::Rule],
    claim: &Claim,
) -> anyhow::Result<Request> {
    let mut batch = request(claim, Vec::new(), claim.now);
    let limited = soonest_limited(rules, &claim.windows);
    let inspections = sender.run.take_inspections(group, claim, claim.now)?;
    batch.inspect = inspect::marks(claim, inspect::InspectionUnits::units(inspections.as_ref()));
    let title = crate::output::printer::group_title(group);
    tracing::info!(group = %title, urls = batch.urls.len(), "sending");
    // What the window has left is read for the progress line alone: a
    // run with no line to draw (cron, CI, `--json`) reads nothing.
    let remaining = match limited.filter(|_| sender.run.progress.shown()) {
        Some(w) => sender.run.ledger.usage(w)?.remaining(w, claim.now),
        None => None,
    };
    let planned = batch.urls.len() as u64;
    sender.run.progress.sending(&title, 0, planned, remaining);
    let engine = &sender.run.engines[&group.engine];
    let sent = engine.send(group, &batch, sender.run.stop.stop_signal()).await;
    let fingerprint = engine.fingerprint(group);
    sender.run.progress.sending(&title, planned, planned, remaining);
    Ok(Request { sent, fingerprint, at: sender.run.clock.now(), inspections })
}

/// The window the progress line counts down: of the rules with a limit,
/// the one that resets first.
pub(super) fn soonest_limited<'w>(rules: &[budget_rules::Rule], windows: &'w [RuleWindow]) -> Option<&'w RuleWindow> {
    windows.iter().zip(rules).filter(|(_, r)| r.limit.is_some()).map(|(w, _)| w).min_by_key(|w| w.resets_at)
}

/// The request for a claim: its URLs and actions, each URL's delay to its
/// paced slot, and which may be inspected first.
pub(super) fn request(claim: &Claim, inspect: Vec<bool>, now: DateTime<Utc>) -> engines::Batch {
    engines::Batch {
        urls: claim.items.iter().map(|i| i.url.clone()).collect(),
        actions: claim.items.iter().map(|i| i.action).collect(),
        delays: claim.slots.iter().map(|t| (*t - now).to_std().unwrap_or_default()).collect(),
        inspect,
    }
}
