//! What the phases leave for the end of the run (`Findings`: every result,
//! the budgets that stopped a group, the notes, what was parked, resumed or
//! cut), and at the end the report itself — on stdout, as JSON or for a
//! person — and the exit status `--fail-on` makes of it.

pub(super) mod admitted;
mod deferrals;

pub(crate) use admitted::admission_results;
#[cfg(test)]
pub(super) use deferrals::{budget_entry, paced_entry};
pub(super) use deferrals::{ClaimContext, Deferred};

use super::stop::StopCut;
use super::Run;
use crate::error::ExitStatus;
use crate::model::NoticeKind;
use crate::model::{AcceptedReason, EngineKind, GroupKey, LocalReason, Outcome, Position, Reason};
use crate::output::printer::{Printer, Verbosity};
use crate::output::results::{Key, ResultEntry, Results};
use crate::output::summary::{Deferral, InspectionNote, PlanCounts, Summary, Waiting};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use std::collections::{BTreeMap, HashSet};

/// What the phases leave for the report.
pub(super) struct Findings {
    pub(super) results: Results,
    pub(super) deferrals: Vec<Deferral>,
    /// Things the user should know about this run (e.g. a quota read failed).
    pub(super) notes: Vec<String>,
    /// Groups and reasons (`ParkedGroup::reminder_key`) whose items this run parked.
    pub(super) parked_now: HashSet<(GroupKey, String)>,
    /// Sitemap groups and reasons of the problems their engines' reports
    /// first showed in this run.
    pub(super) sitemap_problems_now: HashSet<(GroupKey, String)>,
    /// Input URLs whose items were parked before this run: said by the
    /// reminders, not counted as this run's failures.
    pub(super) parked_before: u64,
    /// Parked items sent again in this run: a fix noticed, or the
    /// configuration changed; and sources that read again.
    pub(super) resumed: Vec<String>,
    /// The properties' sources this run could not read, as the ledger keeps
    /// them (since when, when last said).
    pub(super) source_failures: Vec<crate::model::SourceFailure>,
    /// What URL inspections (Google `skip_indexed`) came to, when it was
    /// not "indexed" or "not indexed": said once per run.
    pub(super) inspection_notes: Vec<InspectionNote>,
    /// What the stop (SIGINT/SIGTERM) cut.
    pub(super) cut: StopCut,
    /// Input URLs read so far.
    pub(super) read: u64,
    /// Queue items (URL, property, engine, target) this run wrote to the ledger.
    pub(super) admitted: u64,
    /// `--baseline`: queue items recorded as announced, per engine.
    pub(super) announced: BTreeMap<EngineKind, u64>,
}

/// What the report says besides what the phases left: when the run started,
/// the input's counts, and whether it was a plan (a dry run).
pub(super) struct Ending<'e> {
    pub(super) started: DateTime<Utc>,
    pub(super) plan: &'e BTreeMap<EngineKind, PlanCounts>,
    pub(super) before_since: Option<u64>,
    pub(super) fail_on: &'e [Outcome],
    pub(super) dry_run: bool,
}

impl Findings {
    /// What the run met that its reminders weigh (`attention`).
    pub(super) fn sightings(&self) -> crate::attention::Sightings<'_> {
        crate::attention::Sightings {
            parked_now: &self.parked_now,
            sitemap_problems_now: &self.sitemap_problems_now,
            inspection_notes: &self.inspection_notes,
            results: &self.results,
            source_failures: &self.source_failures,
        }
    }

    /// A report with nothing said yet, its results kept in `results`.
    pub(super) fn new(results: Results) -> Findings {
        Findings {
            results,
            deferrals: Vec::new(),
            notes: Vec::new(),
            parked_now: HashSet::new(),
            sitemap_problems_now: HashSet::new(),
            parked_before: 0,
            resumed: Vec::new(),
            source_failures: Vec::new(),
            inspection_notes: Vec::new(),
            cut: StopCut::default(),
            read: 0,
            admitted: 0,
            announced: BTreeMap::new(),
        }
    }

    /// A request the run's stop cut: what it counts of it (answered or
    /// not, given back at `lease_end`).
    pub(super) fn interrupted(&mut self, sent: &crate::engines::Sent, lease_end: DateTime<Utc>) {
        self.cut.count(sent, lease_end);
    }

    /// A request answered: each claimed item's result (`results`, by
    /// `result_of` in the items' order, numbered in the order their first
    /// items come), made into a report row once and put once for each run
    /// of items that share it (a batch with one answer: one row for 10,000).
    pub(super) fn answered(
        &mut self,
        group: &GroupKey,
        items: &[crate::ledger::ClaimedItem],
        results: &[AnswerResult],
        result_of: &[usize],
        at: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        let mut rows: Vec<ResultEntry> = Vec::with_capacity(results.len());
        for (item, &result) in items.iter().zip(result_of) {
            if result == rows.len() {
                rows.push(answer_row(&item.url, group, item.attempts + 1, &results[result], at));
            }
        }
        let mut first = 0;
        while first < items.len() {
            let result = result_of[first];
            let n = result_of[first..].iter().take_while(|r| **r == result).count();
            let keys = items[first..first + n].iter().map(|i| (Key::Item(i.id), i.url.as_str(), i.attempts + 1));
            self.results.put_all(keys, &rows[result])?;
            first += n;
        }
        Ok(())
    }

    /// Items of `group` an answer parked, for these reasons: the reminders
    /// tell such a group in this run.
    pub(super) fn parked(&mut self, group: &GroupKey, reasons: impl Iterator<Item = Reason>) {
        for reason in reasons {
            self.parked_now.insert((group.clone(), reason.to_string()));
        }
    }

    /// Records the result of a ledger item.
    pub(super) fn put_item(&mut self, id: i64, entry: ResultEntry) -> anyhow::Result<()> {
        Ok(self.results.put(Key::Item(id), &entry)?)
    }

    /// Records the result of an item found in the ledger as the input is
    /// read (`Results::put_waiting`).
    pub(super) fn found(&mut self, id: i64, entry: ResultEntry) -> anyhow::Result<()> {
        Ok(self.results.put_waiting(Key::Item(id), &entry)?)
    }

    /// Records a result that has no ledger item: a bad input line, or a
    /// URL a dry run plans.
    pub(super) fn line(&mut self, entry: ResultEntry) -> anyhow::Result<()> {
        let key = self.results.line_key();
        Ok(self.results.put(key, &entry)?)
    }

    /// The end of the run: the report (what is still waiting in each
    /// group, every result, the plan's counts, a stop) on stdout, and the
    /// exit status `--fail-on` makes of the results — or, for a run a signal
    /// stopped, the signal's.
    pub(super) async fn end(
        &mut self,
        run: &mut Run<'_>,
        ending: Ending<'_>,
        printer: &Printer,
    ) -> anyhow::Result<ExitStatus> {
        run.progress.finish();
        // The signal that stopped the run, if one did: the report says so and
        // the exit status is its (130, 143).
        let signal = run.stop.signal();
        let now = run.clock.now();
        let (waiting, queued) = waiting(run, now)?;
        let parked = run.parked_notices(self, ending.started, !ending.dry_run)?;
        self.notes.extend(held_notes(run, now)?);
        if let Some(note) = unrecognized_note(&self.results) {
            self.notes.push(note);
        }
        self.results.flush()?;
        let interruption = signal.map(|s| self.cut.interruption(s, run.stop.grace(), queued));
        let summary = Summary {
            now: ending.started,
            end: now,
            user_tz: run.user_tz,
            dry_run: ending.dry_run,
            results: &self.results,
            deferrals: &self.deferrals,
            waiting: &waiting,
            notes: &self.notes,
            plan: ending.plan,
            before_since: ending.before_since,
            parked: &parked,
            resumed: &self.resumed,
            interrupted: interruption.as_ref(),
            inspections: &self.inspection_notes,
        };
        let mut out = std::io::BufWriter::new(printer.stdout());
        if printer.json {
            summary.write_json(&mut out)?;
        } else {
            let mut err = crate::output::escape::stderr();
            summary.write_human(&mut out, &mut err, printer.verbosity == Verbosity::Quiet)?;
        }
        std::io::Write::flush(&mut out)?;
        // What needs a human reaches `[notify]` too (not from a dry run); a
        // failure is said and changes nothing else of the run.
        if !ending.dry_run {
            for warning in run.notify_all(&parked, ending.started).await {
                printer.warn(&warning);
            }
        }
        let mut summary = self.results.summary();
        // Items parked before this run are said by their reminders, not as this run's failures.
        let misconfigured = summary.entry(Outcome::Misconfigured.as_str()).or_default();
        *misconfigured = misconfigured.saturating_sub(self.parked_before);
        // URLs outside the key location's folder need a human once per
        // reminder, not on every run that reads them again.
        let untold: u64 =
            parked.iter().filter(|n| n.kind == NoticeKind::KeyScope && !n.told).map(|n| n.parked.count).sum();
        let invalid = summary.entry(Outcome::Invalid.as_str()).or_default();
        *invalid = invalid.saturating_sub(untold);
        // A dry run shows what is parked; only a run that says it (and keeps that it did) needs a human for it.
        let reminded = !ending.dry_run && parked.iter().any(|n| n.told);
        Ok(match signal {
            Some(signal) => signal.exit_status(),
            None => exit_status(ending.fail_on, &summary, reminded),
        })
    }
}

/// What an engine's answer and its decision came to for the items of one
/// history (`outcome`), as the report says it: the same for each item but
/// for its URL and attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AnswerResult {
    pub outcome: Outcome,
    pub reason: Reason,
    pub message: String,
    pub hint: Option<String>,
    pub http_status: Option<u16>,
    /// When the items go again, and the timezone that is told in.
    pub retry: Option<(DateTime<Utc>, Tz)>,
}

/// The report's row of an answered item: `url`, at its `attempts`th
/// attempt, with what its answer came to, answered `at`.
pub(super) fn answer_row(
    url: &str,
    group: &GroupKey,
    attempts: u32,
    r: &AnswerResult,
    at: DateTime<Utc>,
) -> ResultEntry {
    let mut e = base_entry(url, group, r.outcome, r.reason);
    e.message = r.message.clone();
    e.hint = r.hint.clone();
    e.http_status = r.http_status;
    e.attempts = attempts;
    if let Some((t, tz)) = r.retry {
        e.set_retry(t, tz, at);
    }
    e
}

/// A result for `url` in `group`, with nothing said yet: where every row
/// of the report starts.
pub(super) fn base_entry(url: &str, group: &GroupKey, outcome: Outcome, reason: impl Into<Reason>) -> ResultEntry {
    ResultEntry {
        url: url.to_string(),
        property: Some(group.property.clone()),
        engine: Some(group.engine),
        endpoint: group.endpoint().map(str::to_string),
        channel: group.sitemap_url().map(|_| crate::model::Channel::Sitemaps),
        outcome,
        reason: reason.into(),
        message: String::new(),
        hint: None,
        http_status: None,
        retry_at: None,
        retry_after_secs: None,
        attempts: 0,
        source: None,
        retry: None,
    }
}

/// The result of an input line that never became a queue item.
pub(super) fn invalid(text: &str, place: &Position, reason: LocalReason, message: String) -> ResultEntry {
    ResultEntry {
        url: text.to_string(),
        property: None,
        engine: None,
        endpoint: None,
        channel: None,
        outcome: Outcome::Invalid,
        reason: reason.into(),
        message,
        hint: None,
        http_status: None,
        retry_at: None,
        retry_after_secs: None,
        attempts: 0,
        source: Some(place.clone()),
        retry: None,
    }
}

/// What is still waiting in each group of the run, and how many URLs are
/// in their queues (due or waiting).
fn waiting(run: &mut Run, now: DateTime<Utc>) -> anyhow::Result<(Vec<Waiting>, u64)> {
    let mut waiting = Vec::new();
    let mut queued = 0;
    for group in run.known_groups() {
        let counts = run.ledger.queue_counts(&group, now)?;
        queued += counts.due + counts.waiting;
        if let Some(next) = run.ledger.next_due(&group)?.filter(|_| counts.waiting > 0) {
            let tz = run.rule_timezone(&group).unwrap_or(run.user_tz);
            waiting.push(Waiting { group, count: counts.waiting, next, tz });
        }
    }
    Ok((waiting, queued))
}

/// What waits in the groups held with their parked URLs (`Run::held`), a
/// note each (not said with `-q`: the group's reminder counts them).
fn held_notes(run: &mut Run, now: DateTime<Utc>) -> anyhow::Result<Vec<String>> {
    let mut held: Vec<(GroupKey, Reason)> = run.held.iter().map(|(g, r)| (g.clone(), *r)).collect();
    held.sort();
    let mut notes = Vec::new();
    for (group, reason) in held {
        let due = run.ledger.queue_counts(&group, now)?.due;
        let Some(check) = reason.check().filter(|_| due > 0) else { continue };
        notes.push(format!(
            "{}: {} not sent: {} still fails its check ({reason}), so {} with the parked ones and {} once it is \
             fixed",
            crate::output::printer::group_title(&group),
            if due == 1 { "1 new URL".to_string() } else { format!("{due} new URLs") },
            check.what(),
            if due == 1 { "it waits" } else { "they wait" },
            if due == 1 { "goes" } else { "go" },
        ));
    }
    Ok(notes)
}

/// The run's one note about answers counted as accepted whose body was not
/// the engine's (`unrecognized_body`), with how many URLs got one.
fn unrecognized_note(results: &Results) -> Option<String> {
    let unrecognized = Reason::from(AcceptedReason::UnrecognizedBody);
    let n: u64 = results.aggregates().iter().filter(|a| a.reason == unrecognized).map(|a| a.count).sum();
    (n > 0).then(|| {
        format!(
            "{n} {} counted as accepted although the answer was not the engine's own (unrecognized_body: an HTML \
             page from a proxy or a captive portal, or an empty or cut-off body): {} not sent again within the \
             dedupe window; `indexq log` shows each body, and `--force` sends them again",
            if n == 1 { "URL was" } else { "URLs were" },
            if n == 1 { "it is" } else { "they are" }
        )
    })
}

/// 3 (needs a human) when some result is in a `--fail-on` outcome, or
/// (`misconfigured` among them) the run said that items are parked; else 0.
fn exit_status(fail_on: &[Outcome], summary: &BTreeMap<&'static str, u64>, told_parked: bool) -> ExitStatus {
    let needs_human =
        fail_on.iter().any(|o| summary[o.as_str()] > 0) || (told_parked && fail_on.contains(&Outcome::Misconfigured));
    if needs_human {
        ExitStatus::NeedsHuman
    } else {
        ExitStatus::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_on_outcomes_make_the_exit_status_3() {
        let mut summary: BTreeMap<&'static str, u64> = Outcome::ALL.iter().map(|o| (o.as_str(), 0)).collect();
        summary.insert("accepted", 4);
        summary.insert("quota", 1);
        assert_eq!(exit_status(&[Outcome::Misconfigured, Outcome::Invalid], &summary, false), ExitStatus::Ok);
        assert_eq!(exit_status(&[Outcome::Misconfigured, Outcome::Quota], &summary, false), ExitStatus::NeedsHuman);
        assert_eq!(exit_status(&[], &summary, false), ExitStatus::Ok);
        // Parked items said (a reminder) need a human when misconfigured is a --fail-on outcome.
        assert_eq!(exit_status(&[Outcome::Misconfigured], &summary, true), ExitStatus::NeedsHuman);
        assert_eq!(exit_status(&[Outcome::Quota, Outcome::Invalid], &summary, true), ExitStatus::NeedsHuman);
        assert_eq!(exit_status(&[Outcome::Invalid], &summary, true), ExitStatus::Ok);
    }
}
