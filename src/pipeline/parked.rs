//! What needs a human, across runs. Before sending, each parked group
//! whose cause indexq can check without spending quota (the IndexNow key
//! file, Bing's API key, Google's service-account key) is checked once; a
//! fix found makes its items due, and the run says so. At the end, every
//! parked group of the run's engines is told when it was parked in this run
//! or when its reminder is due (`[submit] remind`, kept in the ledger), so
//! that an hourly job says it once a day until it is fixed; and so is what
//! the engines' reports on the run's sitemaps say a human must look at.

use super::findings::Findings;
use super::Run;
use crate::model::{Check, EngineKind, GroupKey, LocalReason, Outcome, ParkedGroup, Reason, SitemapState};
use crate::output::parked::{reminder_due, NoticeKind, ParkedNotice};
use chrono::{DateTime, TimeDelta, Utc};
use std::collections::HashMap;

impl Run<'_> {
    /// Checks, once per group and kind of check, the causes of parked items
    /// that can be checked without sending; a fix found makes the items of
    /// that cause due at `now`, with the group's new URLs held meanwhile
    /// (they go in the same `resumed:` line). A check that fails again
    /// holds the group (`Run::held`): nothing of it is claimed in this run.
    /// Returns what the report says resumed.
    pub(super) async fn notice_fixes(&mut self, now: DateTime<Utc>) -> anyhow::Result<Vec<String>> {
        let known = self.known_groups();
        let mut resumed = Vec::new();
        let mut checked: HashMap<(GroupKey, Check), Result<String, String>> = HashMap::new();
        self.held.clear();
        for parked in self.ledger.parked()? {
            let (Some(reason), true) = (parked.reason, known.contains(&parked.group)) else { continue };
            let Some(check) = reason.check() else { continue };
            let key = (parked.group.clone(), check);
            if !checked.contains_key(&key) {
                let Some(found) = self.engines[&parked.group.engine].check(&parked.group, check).await else {
                    continue;
                };
                checked.insert(key.clone(), found);
            }
            match &checked[&key] {
                Ok(found) => {
                    // What was held with them before this run: the group's
                    // URLs due now (a sitemap group has no others).
                    let held = match parked.group.sitemap_url() {
                        Some(_) => 0,
                        None => self.ledger.queue_counts(&parked.group, now)?.due,
                    };
                    let n = self.ledger.unpark_fixed(&parked.group, &[reason], now)?;
                    if n > 0 {
                        resumed.push(format!(
                            "{}: {found}: {} ({reason}) go again.",
                            crate::output::printer::group_title(&parked.group),
                            urls_parked(n + held)
                        ));
                    }
                }
                Err(why) => {
                    tracing::info!(group = ?parked.group, %reason, why, "still parked: its new URLs wait with it");
                    self.held.entry(parked.group.clone()).or_insert(reason);
                }
            }
        }
        Ok(resumed)
    }

    /// Every parked group of the run's engines, then what the engines'
    /// reports on the run's sitemaps say a human must look at (at the end
    /// of the run), each told if this run parked it (or first saw it) or
    /// its reminder is due at `started` (`report` says what this run parked
    /// and first saw); with `keep` (not a dry run), the ledger keeps when
    /// they were told.
    pub(super) fn parked_notices(
        &mut self,
        findings: &Findings,
        started: DateTime<Utc>,
        keep: bool,
    ) -> anyhow::Result<Vec<ParkedNotice>> {
        let known = self.known_groups();
        let remind = TimeDelta::from_std(self.settings.submit.remind).unwrap_or(TimeDelta::MAX);
        let mut notices = Vec::new();
        for mut parked in self.ledger.parked()?.into_iter().filter(|p| known.contains(&p.group)) {
            // The new URLs held with a group are counted with its parked ones.
            if parked.reason.is_some() && self.held.get(&parked.group) == parked.reason.as_ref() {
                parked.count += self.ledger.queue_counts(&parked.group, self.clock.now())?.due;
            }
            let fresh = findings.parked_now.contains(&(parked.group.clone(), parked.reminder_key()));
            let told = fresh || reminder_due(&parked, started, remind);
            let fix = parked.reason.and_then(|r| crate::queue::fix(self.settings, &parked.group, r, &parked.url));
            notices.push(ParkedNotice { kind: NoticeKind::Parked, parked, fix, fresh, told });
        }
        let states: Vec<SitemapState> =
            self.ledger.sitemap_states()?.into_iter().filter(|s| known.contains(&s.group)).collect();
        for mut notice in crate::queue::sitemap_notices(self.settings, &states, self.clock.now()) {
            notice.fresh =
                findings.sitemap_problems_now.contains(&(notice.parked.group.clone(), notice.parked.reminder_key()));
            notice.told = notice.fresh || reminder_due(&notice.parked, started, remind);
            notices.push(notice);
        }
        notices.extend(self.run_problem_notices(findings, started, remind)?);
        // The sources this run could not read go first, as `status` shows them.
        let sources = source_notices(self.settings, &known, &findings.source_failures, started, remind);
        let told_sources: Vec<(String, String)> = sources
            .iter()
            .filter(|n| n.told)
            .map(|n| (n.parked.group.property.clone(), n.parked.url.clone()))
            .collect();
        if keep && !told_sources.is_empty() {
            self.ledger.record_source_reminders(&told_sources, started)?;
        }
        notices.splice(0..0, sources);
        let told: Vec<(GroupKey, String)> = notices
            .iter()
            .filter(|n| n.told && n.kind != NoticeKind::Source)
            .map(|n| (n.parked.group.clone(), n.parked.reminder_key()))
            .collect();
        if keep && !told.is_empty() {
            self.ledger.record_reminders(&told, started)?;
        }
        Ok(notices)
    }
}

impl Run<'_> {
    /// What this run met that needs a human without parking anything, told
    /// once per `[submit] remind` like a parked group (kept under its
    /// group and reason): Google's refusal of the URL inspections, and URLs
    /// left out of IndexNow by the key location's folder. A run that does
    /// not tell them still notes them in its full report.
    fn run_problem_notices(
        &mut self,
        findings: &Findings,
        started: DateTime<Utc>,
        remind: TimeDelta,
    ) -> anyhow::Result<Vec<ParkedNotice>> {
        let known = self.known_groups();
        let mut found: Vec<(NoticeKind, ParkedGroup, Option<String>)> = Vec::new();
        for note in findings.inspection_notes.iter().filter(|n| n.outcome == Outcome::Misconfigured) {
            let is_google = |g: &&GroupKey| {
                g.property == note.property && g.engine == EngineKind::Google && g.sitemap_url().is_none()
            };
            let Some(group) = known.iter().find(is_google) else { continue };
            let parked = ParkedGroup {
                group: group.clone(),
                reason: Some(note.reason),
                count: note.uninspected,
                since: Some(started),
                url: String::new(),
                message: Some(note.message.clone()),
                reminded_at: None,
            };
            found.push((NoticeKind::Inspection, parked, note.hint.clone()));
        }
        let outside = Reason::Local(LocalReason::OutsideKeyLocation);
        for a in findings.results.aggregates().into_iter().filter(|a| a.reason == outside) {
            // The result names no endpoint: its reminder is kept under the
            // property's first IndexNow group (the ledger keeps reminders
            // for groups it holds).
            let is_indexnow = |g: &&GroupKey| {
                g.property == a.group.property && g.engine == EngineKind::IndexNow && g.sitemap_url().is_none()
            };
            let Some(group) = known.iter().find(is_indexnow) else { continue };
            let parked = ParkedGroup {
                group: group.clone(),
                reason: Some(a.reason),
                count: a.count,
                since: Some(started),
                url: String::new(),
                message: Some(a.message),
                reminded_at: None,
            };
            found.push((NoticeKind::KeyScope, parked, a.hint));
        }
        let mut notices = Vec::with_capacity(found.len());
        for (kind, mut parked, fix) in found {
            parked.reminded_at = self.ledger.reminded_at(&parked.group, &parked.reminder_key())?;
            let told = reminder_due(&parked, started, remind);
            notices.push(ParkedNotice { kind, parked, fix, fresh: false, told });
        }
        Ok(notices)
    }
}

/// The sources a run could not read (`failures`, as the ledger keeps
/// them) as notices, each told when it is new to failing or its reminder
/// is due at `started`. A notice names one of its property's groups (of
/// `known`), since every notice belongs to a group.
fn source_notices(
    settings: &crate::config::Settings,
    known: &[GroupKey],
    failures: &[crate::model::SourceFailure],
    started: DateTime<Utc>,
    remind: TimeDelta,
) -> Vec<ParkedNotice> {
    let mut notices = Vec::new();
    for failure in failures {
        let Some(mut notice) = crate::queue::source_notice(settings, known, failure) else { continue };
        notice.told = reminder_due(&notice.parked, started, remind);
        notices.push(notice);
    }
    notices
}

/// "1 parked URL", "3 parked URLs".
pub(super) fn urls_parked(n: u64) -> String {
    if n == 1 {
        "1 parked URL".to_string()
    } else {
        format!("{n} parked URLs")
    }
}
