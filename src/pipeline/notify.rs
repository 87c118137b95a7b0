//! `[notify]` at the end of a run (and of each of `serve`'s worker rounds):
//! each notice of what needs a human is notified once per group and reason
//! per `[submit] remind`, and once more when it no longer appears
//! (resolved). Each notification is claimed in the ledger first, beside the
//! reminders under a key `notify:<kind>:<reason>`, so that of two machines
//! sharing a PostgreSQL ledger only one notifies; a notification that fails
//! gives its claim back, so the next run tries again. A failure is said and
//! never changes the run's exit status.

use super::Run;
use crate::model::GroupKey;
use crate::model::{NoticeKind, ParkedNotice};
use crate::notify::{Event, Notifier};
use crate::output::printer::{group_title, rfc3339};
use chrono::{DateTime, TimeDelta, Utc};
use std::collections::HashSet;

/// The prefix of every notification's key among the reminders.
const PREFIX: &str = "notify:";

/// The key a notification of `notice` is kept under.
fn key_of(notice: &ParkedNotice) -> String {
    format!("{PREFIX}{}:{}", notice.kind.as_str(), notice.parked.reminder_key())
}

/// A key's kind and reason, if it is a notification's key.
fn parts(key: &str) -> Option<(&str, &str)> {
    key.strip_prefix(PREFIX)?.split_once(':')
}

/// Whether a notice of this kind, gone from a run's notices, is resolved.
/// The problems a run meets without parking anything (refused inspections,
/// URLs outside the key location) are seen only by the runs that meet
/// them: their absence says nothing, so they are never said resolved.
fn absence_resolves(kind: &str) -> bool {
    [NoticeKind::Parked, NoticeKind::SitemapReport].iter().any(|k| k.as_str() == kind)
}

impl Run<'_> {
    /// [`Run::notify`], its own failure (the ledger's) one more warning:
    /// notifying never stops a run.
    pub(super) async fn notify_all(&mut self, notices: &[ParkedNotice], now: DateTime<Utc>) -> Vec<String> {
        self.notify(notices, now).await.unwrap_or_else(|e| vec![format!("[notify]: cannot notify: {e:#}")])
    }

    /// Notifies what `notices` (all of this run's, told or not) say needs a
    /// human, and what was notified and no longer appears. Returns the
    /// warnings to say: one per notification that failed.
    pub(super) async fn notify(&mut self, notices: &[ParkedNotice], now: DateTime<Utc>) -> anyhow::Result<Vec<String>> {
        let notifier = match Notifier::new(&self.settings.notify, &self.settings.http) {
            None => return Ok(Vec::new()),
            Some(Ok(n)) => n,
            Some(Err(e)) => {
                return Ok(vec![format!(
                    "[notify]: cannot notify: {e}; nothing was notified, the next run tries again"
                )])
            }
        };
        let remind = TimeDelta::from_std(self.settings.submit.remind).unwrap_or(TimeDelta::MAX);
        let cutoff = now.checked_sub_signed(remind).unwrap_or(DateTime::<Utc>::MIN_UTC);
        let mut warnings = Vec::new();
        let mut current: HashSet<(GroupKey, String)> = HashSet::new();
        for notice in notices {
            let key = key_of(notice);
            if !current.insert((notice.parked.group.clone(), key.clone())) {
                continue;
            }
            let Some(claim) = self.ledger.claim_notice(&notice.parked.group, &key, now, cutoff)? else { continue };
            let event = self.needs_human(notice);
            if let Err(e) = notifier.send(&event).await {
                self.ledger.give_back_notice(&notice.parked.group, &key, Some(claim.at), claim.previous)?;
                warnings.push(failed(&notifier, &event, &e));
            }
        }
        let known: HashSet<GroupKey> = self.known_groups().into_iter().collect();
        for (group, key, at) in self.ledger.notices_sent(PREFIX)? {
            let Some((kind, reason)) = parts(&key) else { continue };
            if !known.contains(&group) || current.contains(&(group.clone(), key.clone())) || !absence_resolves(kind) {
                continue;
            }
            if !self.ledger.take_notice(&group, &key, at)? {
                continue;
            }
            let event = Event {
                event: "resolved",
                property: group.property.clone(),
                engine: group.engine.as_str(),
                reason: reason.to_string(),
                count: 0,
                since: None,
                fix: None,
                text: format!("resolved: {}: {reason} no longer needs a human.", group_title(&group)),
            };
            if let Err(e) = notifier.send(&event).await {
                self.ledger.give_back_notice(&group, &key, None, Some(at))?;
                warnings.push(failed(&notifier, &event, &e));
            }
        }
        Ok(warnings)
    }

    /// The event of a notice: its fields, and the line the reminder prints.
    fn needs_human(&self, notice: &ParkedNotice) -> Event {
        let p = &notice.parked;
        Event {
            event: "needs_human",
            property: p.group.property.clone(),
            engine: p.group.engine.as_str(),
            reason: p.reminder_key(),
            count: p.count,
            since: p.since.map(|t| rfc3339(t, self.user_tz)),
            fix: notice.fix.clone(),
            text: notice.line(self.user_tz),
        }
    }
}

/// The warning of a failed notification, its URL masked.
fn failed(notifier: &Notifier, event: &Event, e: &crate::notify::NotifyError) -> String {
    notifier.redactor.redact(&format!(
        "[notify]: the {} notification for {} ({}, {}) failed: {e}; the next run tries again",
        event.event, event.property, event.engine, event.reason
    ))
}
