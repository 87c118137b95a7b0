//! What needs a human, across runs. Before sending, each parked group
//! whose cause indexq can check without spending quota (the IndexNow key
//! file, Bing's API key, Google's service-account key) is checked once; a
//! fix found makes its items due, and the run says so. At the end, every
//! parked group of the run's engines is told when it was parked in this run
//! or when its reminder is due (`[submit] remind`, kept in the ledger), so
//! that an hourly job says it once a day until it is fixed; and so is what
//! the engines' reports on the run's sitemaps say a human must look at.
//! The run (`pipeline`) hands over what it knows; nothing here sends.

use crate::config::Settings;
use crate::engines::Engine;
use crate::ledger::Ledger;
use crate::model::{
    Check, EngineKind, GroupKey, LocalReason, NoticeKind, Outcome, ParkedGroup, ParkedNotice, Reason, SitemapState,
    SourceFailure,
};
use crate::output::results::Results;
use crate::output::summary::InspectionNote;
use chrono::{DateTime, TimeDelta, Utc};
use std::collections::{BTreeMap, HashMap, HashSet};

/// What a run checks and reminds with: its settings, its ledger, the
/// groups of its engines (`known`), and the groups it holds with their
/// parked items until their cause is fixed (`held`).
pub(crate) struct RunGroups<'r> {
    pub(crate) settings: &'r Settings,
    pub(crate) ledger: &'r mut dyn Ledger,
    pub(crate) known: Vec<GroupKey>,
    pub(crate) held: &'r mut HashMap<GroupKey, Reason>,
}

/// What a run met that its reminders weigh: the groups and reasons it
/// parked, the sitemap problems it first saw, its inspections' notes, its
/// results, and the sources it could not read.
pub(crate) struct Sightings<'f> {
    pub(crate) parked_now: &'f HashSet<(GroupKey, String)>,
    pub(crate) sitemap_problems_now: &'f HashSet<(GroupKey, String)>,
    pub(crate) inspection_notes: &'f [InspectionNote],
    pub(crate) results: &'f Results,
    pub(crate) source_failures: &'f [SourceFailure],
}

/// Whether a group's reminder is due at `now` (every `remind`).
pub(crate) fn reminder_due(parked: &ParkedGroup, now: DateTime<Utc>, remind: TimeDelta) -> bool {
    parked.reminded_at.is_none_or(|at| now >= at + remind)
}

/// Checks, once per group and kind of check, the causes of parked items
/// that can be checked without sending; a fix found makes the items of
/// that cause due at `now`, with the group's new URLs held meanwhile (they
/// go in the same `resumed:` line). A check that fails again holds the
/// group (`RunGroups::held`): nothing of it is claimed in this run.
/// Returns what the report says resumed.
pub(crate) async fn notice_fixes(
    run: RunGroups<'_>,
    engines: &BTreeMap<EngineKind, Box<dyn Engine>>,
    now: DateTime<Utc>,
) -> anyhow::Result<Vec<String>> {
    let mut resumed = Vec::new();
    let mut checked: HashMap<(GroupKey, Check), Result<String, String>> = HashMap::new();
    run.held.clear();
    for parked in run.ledger.parked()? {
        let (Some(reason), true) = (parked.reason, run.known.contains(&parked.group)) else { continue };
        let Some(check) = reason.check() else { continue };
        let key = (parked.group.clone(), check);
        if !checked.contains_key(&key) {
            let Some(found) = engines[&parked.group.engine].check(&parked.group, check).await else {
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
                    None => run.ledger.queue_counts(&parked.group, now)?.due,
                };
                let n = run.ledger.unpark_fixed(&parked.group, &[reason], now)?;
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
                run.held.entry(parked.group.clone()).or_insert(reason);
            }
        }
    }
    Ok(resumed)
}

/// Every parked group of the run's engines, then what the engines' reports
/// on the run's sitemaps say a human must look at (at the end of the run,
/// `now`), each told if this run parked it (or first saw it) or its
/// reminder is due at `started`; with `keep` (not a dry run), the ledger
/// keeps when they were told.
pub(crate) fn run_notices(
    run: RunGroups<'_>,
    seen: &Sightings,
    now: DateTime<Utc>,
    started: DateTime<Utc>,
    keep: bool,
) -> anyhow::Result<Vec<ParkedNotice>> {
    let RunGroups { settings, ledger, known, held } = run;
    let remind = TimeDelta::from_std(settings.submit.remind).unwrap_or(TimeDelta::MAX);
    let mut notices = Vec::new();
    for mut parked in ledger.parked()?.into_iter().filter(|p| known.contains(&p.group)) {
        // The new URLs held with a group are counted with its parked ones.
        if parked.reason.is_some() && held.get(&parked.group) == parked.reason.as_ref() {
            parked.count += ledger.queue_counts(&parked.group, now)?.due;
        }
        let fresh = seen.parked_now.contains(&(parked.group.clone(), parked.reminder_key()));
        let told = fresh || reminder_due(&parked, started, remind);
        let fix = parked.reason.and_then(|r| super::fix(settings, &parked.group, r, &parked.url));
        notices.push(ParkedNotice { kind: NoticeKind::Parked, parked, fix, fresh, told });
    }
    let states: Vec<SitemapState> = ledger.sitemap_states()?.into_iter().filter(|s| known.contains(&s.group)).collect();
    for mut notice in super::sitemap_notices(settings, &states, now) {
        notice.fresh = seen.sitemap_problems_now.contains(&(notice.parked.group.clone(), notice.parked.reminder_key()));
        notice.told = notice.fresh || reminder_due(&notice.parked, started, remind);
        notices.push(notice);
    }
    notices.extend(run_problem_notices(ledger, &known, seen, started, remind)?);
    // The sources this run could not read go first, as `status` shows them.
    let sources = source_notices(settings, &known, seen.source_failures, started, remind);
    let told_sources: Vec<(String, String)> =
        sources.iter().filter(|n| n.told).map(|n| (n.parked.group.property.clone(), n.parked.url.clone())).collect();
    if keep && !told_sources.is_empty() {
        ledger.record_source_reminders(&told_sources, started)?;
    }
    notices.splice(0..0, sources);
    let told: Vec<(GroupKey, String)> = notices
        .iter()
        .filter(|n| n.told && n.kind != NoticeKind::Source)
        .map(|n| (n.parked.group.clone(), n.parked.reminder_key()))
        .collect();
    if keep && !told.is_empty() {
        ledger.record_reminders(&told, started)?;
    }
    Ok(notices)
}

/// What this run met that needs a human without parking anything, told
/// once per `[submit] remind` like a parked group (kept under its group
/// and reason): Google's refusal of the URL inspections, and URLs left out
/// of IndexNow by the key location's folder. A run that does not tell them
/// still notes them in its full report.
fn run_problem_notices(
    ledger: &mut dyn Ledger,
    known: &[GroupKey],
    seen: &Sightings,
    started: DateTime<Utc>,
    remind: TimeDelta,
) -> anyhow::Result<Vec<ParkedNotice>> {
    let mut found: Vec<(NoticeKind, ParkedGroup, Option<String>)> = Vec::new();
    for note in seen.inspection_notes.iter().filter(|n| n.outcome == Outcome::Misconfigured) {
        let is_google =
            |g: &&GroupKey| g.property == note.property && g.engine == EngineKind::Google && g.sitemap_url().is_none();
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
    for a in seen.results.aggregates().into_iter().filter(|a| a.reason == outside) {
        // The result names no endpoint: its reminder is kept under the
        // property's first IndexNow group (the ledger keeps reminders for
        // groups it holds).
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
        parked.reminded_at = ledger.reminded_at(&parked.group, &parked.reminder_key())?;
        let told = reminder_due(&parked, started, remind);
        notices.push(ParkedNotice { kind, parked, fix, fresh: false, told });
    }
    Ok(notices)
}

/// The sources a run could not read (`failures`, as the ledger keeps
/// them) as notices, each told when it is new to failing or its reminder
/// is due at `started`. A notice names one of its property's groups (of
/// `known`), since every notice belongs to a group.
fn source_notices(
    settings: &Settings,
    known: &[GroupKey],
    failures: &[SourceFailure],
    started: DateTime<Utc>,
    remind: TimeDelta,
) -> Vec<ParkedNotice> {
    let mut notices = Vec::new();
    for failure in failures {
        let Some(mut notice) = super::source_notice(settings, known, failure) else { continue };
        notice.told = reminder_due(&notice.parked, started, remind);
        notices.push(notice);
    }
    notices
}

/// "1 parked URL", "3 parked URLs".
pub(crate) fn urls_parked(n: u64) -> String {
    if n == 1 {
        "1 parked URL".to_string()
    } else {
        format!("{n} parked URLs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::MisconfiguredReason;

    fn parked(reason: Reason, reminded_at: Option<&str>) -> ParkedGroup {
        ParkedGroup::example(reason, reminded_at)
    }

    #[test]
    fn a_reminder_is_due_once_per_interval() {
        let now: DateTime<Utc> = "2026-12-04T09:00:00Z".parse().unwrap();
        let day = TimeDelta::hours(24);
        let reason: Reason = MisconfiguredReason::KeyFileMissing.into();
        assert!(reminder_due(&parked(reason, None), now, day), "never said: due");
        assert!(reminder_due(&parked(reason, Some("2026-12-03T09:00:00Z")), now, day), "a day ago: due");
        assert!(!reminder_due(&parked(reason, Some("2026-12-03T09:00:01Z")), now, day));
        assert!(reminder_due(&parked(reason, Some("2026-12-04T09:00:00Z")), now, TimeDelta::zero()), "0: every run");
    }
}
