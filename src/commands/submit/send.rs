//! Sending: what is due, group by group, claimed in batches within budget
//! and pace (the ledger reserves before anything is sent), each batch sent
//! to its engine; then, within `--max-wait`, sleeps until the next retry
//! falls due and sends again. Before the input is read, reservations left
//! by a run that stopped go back to the queue. What an answer becomes is
//! `outcome`'s; the claim itself (budget, pace) is the ledger's.

use super::outcome::{budget_entry, Delivery};
use super::Run;
use crate::budget;
use crate::engines;
use crate::ledger::{Claim, ClaimSpec, Pace};
use crate::model::{Class, GroupKey, RuleWindow};
use crate::report::Printer;
use crate::results::Key;
use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;

/// The shortest sleep for a retry: an item due now that the drain could not
/// take must not make the wait loop spin.
const MIN_PAUSE: TimeDelta = TimeDelta::milliseconds(100);

impl Run<'_> {
    /// Before the input is read: reservations left by a run that stopped go
    /// back to the queue, and items parked under another configuration are
    /// retried.
    pub(super) fn prepare(&mut self, now: DateTime<Utc>, printer: &Printer) -> anyhow::Result<()> {
        let reconciled = self.ledger.reconcile(now, &self.owner)?;
        if reconciled.items > 0 {
            printer.note(&returned_note(reconciled.items));
        }
        for group in self.known_groups() {
            let engine = &self.engines[&group.engine];
            let n = self.ledger.unpark_changed(&group, &engine.fingerprint(&group), now)?;
            if n > 0 {
                printer.note(&format!(
                    "{}: the configuration changed; {n} parked URLs are retried.",
                    crate::report::group_title(&group)
                ));
            }
        }
        Ok(())
    }

    /// Sends everything due now; then, while a retry falls due within
    /// `--max-wait`, waits for it and sends again.
    pub(super) async fn send_due(&mut self, printer: &Printer) -> anyhow::Result<()> {
        let wait_until = self.wait_until;
        loop {
            self.drain().await?;
            let now = self.clock.now();
            if now >= wait_until {
                break;
            }
            let groups = self.known_groups();
            let Some((pause, group)) = pause(self.ledger_next_due(&groups)?, now, wait_until) else { break };
            tracing::debug!(seconds = pause.num_seconds(), "waiting for retries due within --max-wait");
            if pause >= TimeDelta::seconds(1) {
                let what = self.waiting_for(&group, pause)?;
                if self.progress.visible() {
                    self.progress.waiting(&what);
                } else {
                    printer.note(&format!("{what}…"));
                }
            }
            tokio::time::sleep(pause.to_std().unwrap_or_default()).await;
        }
        Ok(())
    }

    /// The earliest retry among `groups`, and its group.
    fn ledger_next_due(&mut self, groups: &[GroupKey]) -> anyhow::Result<Option<(DateTime<Utc>, GroupKey)>> {
        let mut next: Option<(DateTime<Utc>, GroupKey)> = None;
        for g in groups {
            if let Some(t) = self.ledger.next_due(g)? {
                if next.as_ref().is_none_or(|(n, _)| t < *n) {
                    next = Some((t, g.clone()));
                }
            }
        }
        Ok(next)
    }

    /// What a wait within --max-wait is for: "waiting for IndexNow (host)
    /// for site (key_pending) — retry in 40 s".
    fn waiting_for(&mut self, group: &GroupKey, pause: TimeDelta) -> anyhow::Result<String> {
        let why = match self.ledger.last_rejection(group)? {
            Some(a) => format!(" ({})", a.reason),
            None => String::new(),
        };
        Ok(waiting_text(group, &why, pause))
    }

    /// Sends everything due now, group by group, batch by batch.
    async fn drain(&mut self) -> anyhow::Result<()> {
        let known = self.known_groups();
        let now = self.clock.now();
        let groups: Vec<GroupKey> = self.ledger.due_groups(now)?.into_iter().filter(|g| known.contains(g)).collect();
        for group in groups {
            while self.send_batch(&group).await? {}
        }
        Ok(())
    }

    /// Claims and sends one batch; returns whether to try another.
    async fn send_batch(&mut self, group: &GroupKey) -> anyhow::Result<bool> {
        let Some(rules) = self.rules(group) else { return Ok(false) };
        let now = self.clock.now();
        let windows = budget::windows(&rules, now);
        if !self.reported.contains(group) {
            self.reported.insert(group.clone());
            self.read_reported_quota(group, &windows).await?;
        }
        let engine = &self.engines[&group.engine];
        let max_batch = engine.max_batch();
        let pace = engine.pace(group).map(|(key, interval, burst)| Pace {
            key,
            interval,
            burst,
            horizon: self.wait_until.max(now),
        });
        // Each URL the budget has no room for is a `deferred` result, in the
        // timezone of the rule that reopens then.
        let mut failure = None;
        let results = &mut self.results;
        let user_tz = self.user_tz;
        let mut on_deferred = |id: i64, url: &str, retry_at: DateTime<Utc>| {
            let tz = deferral_tz(&rules, retry_at, user_tz);
            if let Err(err) = results.put(Key::Item(id), &budget_entry(url, group, retry_at, tz, now)) {
                failure.get_or_insert(err);
            }
        };
        let claim = self.ledger.claim(
            group,
            &ClaimSpec {
                windows: &rules,
                max_items: max_batch,
                pace: pace.as_ref(),
                now: crate::commands::now(self.clock),
            },
            &self.owner,
            &mut on_deferred,
        )?;
        if let Some(err) = failure {
            return Err(err.into());
        }
        // From here on, the instant and the windows the claim was counted in.
        let (now, windows) = (claim.now, claim.windows.clone());
        self.note_deferrals(group, &rules, &windows, &claim, now)?;
        let Some(reservation) = claim.reservation else { return Ok(false) };

        let engine = &self.engines[&group.engine];
        let credential = engine.credential(group);
        let key_first_used = match &credential {
            Some(c) => Some(self.ledger.first_use(c, now)?),
            None => None,
        };
        let batch = self.batch(group, &claim, now)?;
        let title = crate::report::group_title(group);
        tracing::info!(group = %title, urls = batch.urls.len(), "sending");
        let remaining = match soonest_limited(&rules, &windows) {
            Some(w) => self.ledger.usage(w)?.remaining(w, now),
            None => None,
        };
        let planned = batch.urls.len() as u64;
        self.progress.sending(&title, 0, planned, remaining);
        let engine = &self.engines[&group.engine];
        let sent = engine.send(group, &batch).await;
        let fingerprint = engine.fingerprint(group);
        self.progress.sending(&title, planned, planned, remaining);
        let at = self.clock.now();

        let more = another_batch(&claim, &sent, max_batch);
        self.record(Delivery {
            group,
            rules: &rules,
            windows,
            claim: &claim,
            reservation,
            sent: &sent,
            at,
            credential,
            key_first_used,
            fingerprint: &fingerprint,
        })?;
        Ok(more)
    }

    /// What goes in the request: the claimed URLs, their actions, their
    /// paced delays, and how many may be inspected first (within the
    /// inspection budget; an inspection that does not fit just publishes).
    fn batch(&mut self, group: &GroupKey, claim: &Claim, now: DateTime<Utc>) -> anyhow::Result<engines::Batch> {
        let mut inspect = 0;
        if self.engines[&group.engine].inspects(group) {
            if let Some(property) = self.settings.property(&group.property) {
                let windows = budget::windows(&budget::inspection_rules(property), now);
                inspect = self.ledger.take_units(&windows, claim.items.len() as u64, now)? as usize;
            }
        }
        Ok(request(claim, inspect, now))
    }

    /// Asks the engine what is left of its quota (once per group and run)
    /// and records it in the ledger; if it cannot say, the local rules
    /// decide, and the report says so.
    async fn read_reported_quota(&mut self, group: &GroupKey, windows: &[RuleWindow]) -> anyhow::Result<()> {
        let now = self.clock.now();
        for (period, remaining) in self.reported_quota(group, windows).await? {
            for w in windows.iter().filter(|w| w.reported && w.period == period) {
                self.ledger.record_report(w, remaining, now)?;
            }
        }
        Ok(())
    }

    /// What the engine says is left of its quota, per period (none for an
    /// engine that does not say); when it cannot say, a note for the report.
    pub(super) async fn reported_quota(
        &mut self,
        group: &GroupKey,
        windows: &[RuleWindow],
    ) -> anyhow::Result<Vec<(crate::clock::Period, u64)>> {
        let Some(answer) = self.engines[&group.engine].reported_quota(group).await else { return Ok(Vec::new()) };
        match answer {
            Ok(left) => Ok(left),
            Err(why) => {
                self.notes.push(unread_quota_note(group, &why, windows));
                Ok(Vec::new())
            }
        }
    }
}

/// "3 URLs left in flight by a run that stopped were returned to the queue".
fn returned_note(items: u64) -> String {
    format!(
        "{} left in flight by a run that stopped were returned to the queue (counted as used).",
        if items == 1 { "1 URL".to_string() } else { format!("{items} URLs") }
    )
}

/// How long to sleep for the next retry (`next`, with its group), if it
/// falls due by `wait_until`; at least `MIN_PAUSE`.
fn pause(
    next: Option<(DateTime<Utc>, GroupKey)>,
    now: DateTime<Utc>,
    wait_until: DateTime<Utc>,
) -> Option<(TimeDelta, GroupKey)> {
    match next {
        Some((next, group)) if next <= wait_until => Some(((next - now).max(MIN_PAUSE), group)),
        _ => None,
    }
}

/// "waiting for IndexNow (host) for site (key_pending) — retry in 40 s";
/// `why` is the " (reason)" of the group's last rejection, or empty.
fn waiting_text(group: &GroupKey, why: &str, pause: TimeDelta) -> String {
    format!("waiting for {}{why} — retry in {}", crate::report::group_title(group), crate::clock::humanize(pause))
}

/// The timezone a budget deferral until `retry_at` is told in: that of the
/// rule whose window ends then, else the user's.
fn deferral_tz(rules: &[budget::Rule], retry_at: DateTime<Utc>, user_tz: Tz) -> Tz {
    let before = retry_at - TimeDelta::milliseconds(1);
    rules.iter().find(|r| r.window(before).resets_at == retry_at).map_or(user_tz, |r| r.tz)
}

/// The window the progress line counts down: of the rules with a limit,
/// the one that resets first.
fn soonest_limited<'w>(rules: &[budget::Rule], windows: &'w [RuleWindow]) -> Option<&'w RuleWindow> {
    windows.iter().zip(rules).filter(|(_, r)| r.limit.is_some()).map(|(w, _)| w).min_by_key(|w| w.resets_at)
}

/// The request for a claim: its URLs and actions, each URL's delay to its
/// paced slot, and how many may be inspected first.
fn request(claim: &Claim, inspect: usize, now: DateTime<Utc>) -> engines::Batch {
    engines::Batch {
        urls: claim.items.iter().map(|i| i.url.clone()).collect(),
        actions: claim.items.iter().map(|i| i.action).collect(),
        delays: claim.slots.iter().map(|t| (*t - now).to_std().unwrap_or_default()).collect(),
        inspect,
    }
}

/// Whether another batch of the group may go now: this one was full, and
/// nothing (the budget, the pace, a quota answer) said to stop.
fn another_batch(claim: &Claim, sent: &engines::Sent, max_batch: usize) -> bool {
    let quota_answer = sent.answers.iter().any(|a| a.verdict.class == Class::Quota);
    claim.retry_at.is_none() && claim.paced.is_empty() && !quota_answer && claim.items.len() == max_batch
}

/// The report's note when the engine cannot say what is left of its quota.
fn unread_quota_note(group: &GroupKey, why: &str, windows: &[RuleWindow]) -> String {
    format!(
        "{}: could not read the quota {} reports ({why}); the local ledger decides this run{}.",
        crate::report::group_title(group),
        group.engine.title(),
        if windows.iter().any(|w| w.reported && w.limit.is_some()) {
            format!(" (with no local daily rule: {} a day, Bing's default for a new site)", budget::BING_NEW_SITE_DAILY)
        } else {
            String::new()
        }
    )
}
