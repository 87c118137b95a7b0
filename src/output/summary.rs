//! What a `submit` run says at its end, rendered from its results as human
//! text and as the `--json` document (README, *Output and exit codes*): per
//! group what happened and what the user can do,
//! the budgets that stopped sends (`Deferral`), what waits in the queue
//! (`Waiting`) and the dry run's plan (`PlanCounts`). It reads the run's
//! `Results` (never the other way round). Rendering is generic over
//! `io::Write`, so tests can render into a `Vec<u8>`.

use super::printer::{self, group_title, rfc3339};
use super::results::Results;
use crate::model::GroupKey;
use crate::model::ParkedNotice;
use crate::model::{AcceptedReason, EngineKind, LocalReason, Outcome, Reason};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// What a run makes of its input, per engine (the dry run's plan).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct PlanCounts {
    /// New to the ledger for the engine.
    pub new: u64,
    /// Accepted before, and sent again (changed since, dedupe window over, or forced).
    pub changed: u64,
    /// Accepted before and not changed since (`--changed`): not sent.
    pub unchanged: u64,
}

/// A budget that stopped sends in this run, for the human report.
#[derive(Debug, Clone)]
pub struct Deferral {
    pub group: GroupKey,
    pub rule_tz: Tz,
    pub used: u64,
    pub limit: Option<u64>,
    pub retry_at: DateTime<Utc>,
    pub blocked: bool,
}

pub struct Summary<'a> {
    pub now: DateTime<Utc>,
    /// When the report is written: retry times are counted from here.
    pub end: DateTime<Utc>,
    pub user_tz: Tz,
    pub dry_run: bool,
    pub results: &'a Results,
    pub deferrals: &'a [Deferral],
    /// Groups with items waiting in the queue after the run.
    pub waiting: &'a [Waiting],
    /// What the user should know about the run itself.
    pub notes: &'a [String],
    /// Per engine: new, changed and unchanged URLs of the input.
    pub plan: &'a BTreeMap<EngineKind, PlanCounts>,
    /// URLs left out by `--since`.
    pub before_since: Option<u64>,
    /// What is parked (what needs a human), and whether this run says so.
    pub parked: &'a [ParkedNotice],
    /// Parked items that go again in this run, and why.
    pub resumed: &'a [String],
    /// The signal that stopped the run, and what the stop cut.
    pub interrupted: Option<&'a Interruption>,
    /// URL inspections (Google `skip_indexed`) that did not say whether a
    /// URL is indexed, and the local inspection budget when it ran out.
    pub inspections: &'a [InspectionNote],
}

/// What a run's URL inspections of one property came to, for one outcome
/// and reason other than an answer that said indexed or not: a refusal, a
/// quota, a failure (an inspection answer's class and reason), or the local
/// inspection budget spent (`deferred` / `budget`). Every URL it concerns
/// was published without inspection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectionNote {
    pub property: String,
    pub outcome: Outcome,
    pub reason: Reason,
    /// The first answer's message (or what the budget says).
    pub message: String,
    pub hint: Option<String>,
    pub http_status: Option<u16>,
    /// Inspections asked in this run that got this answer.
    pub inspections: u64,
    /// URLs published without inspection because of it.
    pub uninspected: u64,
    /// Until when inspections of the property are off (a quota, the
    /// budget), in the timezone of the rule that reopens then.
    pub until: Option<(DateTime<Utc>, Tz)>,
}

/// `InspectionNote` in the JSON document.
#[derive(Serialize)]
struct InspectionNoteJson<'a> {
    property: &'a str,
    engine: EngineKind,
    outcome: Outcome,
    reason: Reason,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    http_status: Option<u16>,
    inspections: u64,
    uninspected: u64,
    /// What indexq did, and does until the cause is gone.
    then: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    until: Option<String>,
}

impl InspectionNote {
    /// What indexq did about it: always published; after a refusal or a
    /// quota, without inspecting for the rest of the run (a quota: until
    /// its window reopens).
    fn then(&self, user_tz: Tz, now: DateTime<Utc>) -> String {
        let published = match self.uninspected {
            1 => "1 URL was published without inspection".to_string(),
            n => format!("{n} URLs were published without inspection"),
        };
        let until = self.until.map(|(t, tz)| printer::when(t, tz, user_tz, now));
        match (self.outcome, until) {
            (Outcome::Misconfigured, _) => format!(
                "{published}, and the rest of this run publishes without inspecting: `skip_indexed` is not working \
                 for {} until this is fixed (`indexq doctor` checks it)",
                self.property
            ),
            (Outcome::Quota | Outcome::Deferred, Some(until)) => {
                format!("{published}; URLs are published without inspection until {until}")
            }
            (Outcome::Quota, None) => format!("{published}, and the rest of this run publishes without inspecting"),
            _ => published,
        }
    }

    fn json(&self, user_tz: Tz, now: DateTime<Utc>) -> InspectionNoteJson<'_> {
        InspectionNoteJson {
            property: &self.property,
            engine: EngineKind::Google,
            outcome: self.outcome,
            reason: self.reason,
            message: &self.message,
            hint: self.hint.as_deref(),
            http_status: self.http_status,
            inspections: self.inspections,
            uninspected: self.uninspected,
            then: self.then(user_tz, now),
            until: self.until.map(|(t, tz)| rfc3339(t, tz)),
        }
    }

    /// The human lines: what happened, what indexq did, and the fix.
    fn lines(&self, user_tz: Tz, now: DateTime<Utc>) -> String {
        let what = match (self.outcome, self.inspections) {
            (Outcome::Deferred, _) => "URL inspection budget used".to_string(),
            (Outcome::Misconfigured, _) => "URL inspection refused".to_string(),
            (Outcome::Quota, _) => "URL inspection quota".to_string(),
            (_, 1) => "1 URL inspection failed".to_string(),
            (_, n) => format!("{n} URL inspections failed"),
        };
        let mut text = format!(
            "Google for {}: {what} ({}): {}. {}.",
            self.property,
            self.reason,
            self.message,
            self.then(user_tz, now)
        );
        if let Some(hint) = &self.hint {
            text.push_str(&format!("\n  hint: {hint}"));
        }
        text
    }
}

/// A run stopped by SIGINT or SIGTERM: what it left unanswered, unsent and
/// unread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interruption {
    /// `SIGINT` or `SIGTERM`.
    pub signal: &'static str,
    /// How long requests in flight were given (`[submit] stop_grace`).
    pub grace: std::time::Duration,
    /// Requests sent but not answered within the grace: counted as used,
    /// recorded as `interrupted`.
    pub unanswered_requests: u64,
    pub unanswered_urls: u64,
    /// Claimed URLs the stop kept from being sent: their budget given back.
    pub unsent_urls: u64,
    /// When the unanswered URLs go again (their reservations' lease ends).
    pub retry_at: Option<DateTime<Utc>>,
    /// The run's URLs still in the queue (due or waiting), the unanswered
    /// aside.
    pub queued: u64,
    /// Whether an input was left unread (a list at a line's end, a sitemap).
    pub input_cut: bool,
}

/// `Interruption` in the JSON document.
#[derive(Serialize)]
struct InterruptionJson {
    signal: &'static str,
    grace_secs: u64,
    unanswered_requests: u64,
    unanswered_urls: u64,
    unsent_urls: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_at: Option<String>,
    queued: u64,
    input_cut: bool,
}

impl Interruption {
    fn json(&self, user_tz: Tz) -> InterruptionJson {
        InterruptionJson {
            signal: self.signal,
            grace_secs: self.grace.as_secs(),
            unanswered_requests: self.unanswered_requests,
            unanswered_urls: self.unanswered_urls,
            unsent_urls: self.unsent_urls,
            retry_at: self.retry_at.map(|t| rfc3339(t, user_tz)),
            queued: self.queued,
            input_cut: self.input_cut,
        }
    }

    /// The one line that says it, `-q` included: "interrupted by SIGTERM:
    /// claimed nothing more; 1 request (500 URLs) not answered within 10 s
    /// is recorded as interrupted (…); 9489 URLs stay in the queue."
    fn line(&self, dry_run: bool, user_tz: Tz, now: DateTime<Utc>) -> String {
        let signal = self.signal;
        if dry_run {
            return match self.input_cut {
                true => format!(
                    "interrupted by {signal}: the input was not read to its end; the plan covers what was read."
                ),
                false => format!("interrupted by {signal}: the input was read; the plan is whole."),
            };
        }
        let mut parts = vec!["claimed nothing more".to_string()];
        if self.input_cut {
            parts.push("the input was not read to its end (what was read is in the ledger)".into());
        }
        if self.unanswered_requests > 0 {
            let retry = self
                .retry_at
                .map(|t| format!("; sent again after {}", printer::when(t, user_tz, user_tz, now)))
                .unwrap_or_default();
            parts.push(format!(
                "{} ({}) not answered within {} {} recorded as interrupted (counted as used{retry})",
                plural(self.unanswered_requests, "request", "requests"),
                plural(self.unanswered_urls, "URL", "URLs"),
                crate::clock::humanize(chrono::TimeDelta::from_std(self.grace).unwrap_or(chrono::TimeDelta::MAX)),
                if self.unanswered_requests == 1 { "is" } else { "are" },
            ));
        } else {
            parts.push("every request sent was answered".into());
        }
        if self.unsent_urls > 0 {
            parts.push(format!(
                "{} claimed but not sent went back to the queue (not counted)",
                plural(self.unsent_urls, "URL", "URLs")
            ));
        }
        parts.push(format!("{} in the queue", plural(self.queued, "URL stays", "URLs stay")));
        format!("interrupted by {signal}: {}.", parts.join("; "))
    }
}

/// The dry run's plan for one engine, as JSON.
#[derive(Serialize)]
struct PlanSummary {
    #[serde(flatten)]
    counts: PlanCounts,
    /// Within the input, URLs that wait for budget.
    waiting: u64,
}

/// Items of a group that wait for a later time.
#[derive(Debug, Clone)]
pub struct Waiting {
    pub group: GroupKey,
    pub count: u64,
    pub next: DateTime<Utc>,
    pub tz: Tz,
}

/// URLs accepted: as the engine said it, or, for an answer that was not
/// the engine's own or that records no notification, what that means.
fn write_accepted(out: &mut impl Write, a: &super::results::Aggregate) -> io::Result<()> {
    let (title, n) = (group_title(&a.group), a.count);
    if a.reason == Reason::Accepted(AcceptedReason::UnrecognizedBody) {
        writeln!(
            out,
            "{title}: {} accepted, the answer not {}'s own (unrecognized_body).",
            plural(n, "URL", "URLs"),
            a.group.engine.title()
        )
    } else if a.reason == Reason::Accepted(AcceptedReason::Received) {
        writeln!(
            out,
            "{title}: {} received only: Google's answer records no notification of {} (Google documents \
             the Indexing API for pages with JobPosting or BroadcastEvent in a VideoObject only).",
            plural(n, "URL", "URLs"),
            if n == 1 { "it" } else { "them" }
        )
    } else {
        writeln!(out, "{title}: {} accepted.", plural(n, "URL", "URLs"))
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A JSON array written element by element (one per line), so that a
/// million results are never one value in memory.
struct JsonArray<'w, W: Write> {
    out: &'w mut W,
    first: bool,
}

impl<'w, W: Write> JsonArray<'w, W> {
    fn start(out: &'w mut W) -> io::Result<Self> {
        write!(out, "[")?;
        Ok(JsonArray { out, first: true })
    }

    /// An element already in JSON, in parts.
    fn push_raw(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        // (Writes of the parts, not `write!`: a million elements through the
        // formatting machinery cost more than the copies.)
        let between: &[u8] = if self.first { b"\n    " } else { b",\n    " };
        self.out.write_all(between)?;
        for part in parts {
            self.out.write_all(part)?;
        }
        self.first = false;
        Ok(())
    }

    fn end(self) -> io::Result<()> {
        write!(self.out, "{}]", if self.first { "" } else { "\n  " })
    }
}

impl Summary<'_> {
    /// The `--json` document (README, *Output and exit codes*), streamed:
    /// `now`, (`dry_run`, `plan`), `results`, `summary`, (`notes`),
    /// (`parked`), (`resumed`), (`interrupted`), (`inspections`).
    pub fn write_json(&self, out: &mut impl Write) -> anyhow::Result<()> {
        write!(out, "{{\n  \"now\": {}", serde_json::to_string(&rfc3339(self.now, self.user_tz))?)?;
        if self.dry_run {
            write!(out, ",\n  \"dry_run\": true,\n  \"plan\": ")?;
            let mut plan = JsonArray::start(out)?;
            self.results.each_planned_json(|p| plan.push_raw(p))?;
            plan.end()?;
            write!(out, ",\n  \"plan_summary\": {}", serde_json::to_string(&self.plan_summary())?)?;
            if let Some(n) = self.before_since {
                write!(out, ",\n  \"before_since\": {n}")?;
            }
        }
        write!(out, ",\n  \"results\": ")?;
        let mut results = JsonArray::start(out)?;
        self.results.each_result_json(self.end, |r| results.push_raw(r))?;
        results.end()?;
        write!(out, ",\n  \"summary\": {}", serde_json::to_string(&self.results.summary())?)?;
        if !self.notes.is_empty() {
            write!(out, ",\n  \"notes\": {}", serde_json::to_string(self.notes)?)?;
        }
        if !self.parked.is_empty() {
            let parked: Vec<_> = self.parked.iter().map(|p| p.json(self.user_tz)).collect();
            write!(out, ",\n  \"parked\": {}", serde_json::to_string(&parked)?)?;
        }
        if !self.resumed.is_empty() {
            write!(out, ",\n  \"resumed\": {}", serde_json::to_string(self.resumed)?)?;
        }
        if let Some(i) = self.interrupted {
            write!(out, ",\n  \"interrupted\": {}", serde_json::to_string(&i.json(self.user_tz))?)?;
        }
        if !self.inspections.is_empty() {
            let notes: Vec<_> = self.inspections.iter().map(|n| n.json(self.user_tz, self.end)).collect();
            write!(out, ",\n  \"inspections\": {}", serde_json::to_string(&notes)?)?;
        }
        writeln!(out, "\n}}")?;
        Ok(())
    }

    /// The notice of a misconfigured aggregate whose items this run parked.
    fn parked_in_this_run(&self, a: &super::results::Aggregate) -> Option<&ParkedNotice> {
        self.parked.iter().find(|p| p.fresh && p.parked.group == a.group && p.parked.reason == Some(a.reason))
    }

    /// Whether a notice was said above, with the answer that parked its items in this run.
    fn told_above(&self, notice: &ParkedNotice, aggregates: &[super::results::Aggregate]) -> bool {
        notice.fresh
            && aggregates.iter().any(|a| {
                a.outcome == Outcome::Misconfigured
                    && a.group == notice.parked.group
                    && Some(a.reason) == notice.parked.reason
            })
    }

    fn plan_summary(&self) -> BTreeMap<EngineKind, PlanSummary> {
        let waiting = self.results.deferred_per_engine();
        self.plan
            .iter()
            .map(|(e, c)| (*e, PlanSummary { counts: *c, waiting: waiting.get(e).copied().unwrap_or(0) }))
            .collect()
    }

    /// Human text: per group what happened and what the user can do, and a
    /// summary, on `out`; the interruption. With `quiet`, only what needs a
    /// human — and on `err` the invalid lines, counted, with the first few
    /// named (without `quiet` each was named on stderr as it was read: each
    /// is told once).
    pub fn write_human(&self, out: &mut impl Write, err: &mut impl Write, quiet: bool) -> anyhow::Result<()> {
        self.write_notes(out, quiet)?;
        if self.dry_run {
            self.write_plan(out)?;
        }
        let aggregates = self.results.aggregates();
        for a in &aggregates {
            self.write_aggregate(out, a, quiet)?;
        }
        if !quiet {
            for w in self.waiting.iter().filter(|w| !aggregates.iter().any(|a| a.group == w.group)) {
                writeln!(
                    out,
                    "{}: {} in the queue; the next goes {}.",
                    group_title(&w.group),
                    plural(w.count, "URL waits", "URLs wait"),
                    printer::when(w.next, w.tz, self.user_tz, self.end)
                )?;
            }
        }
        // What needs a human and was parked before this run: once per reminder interval.
        for notice in self.parked.iter().filter(|p| p.told && !self.told_above(p, &aggregates)) {
            writeln!(out, "{}", notice.line(self.user_tz))?;
        }
        if quiet {
            self.write_invalid(err)?;
        }
        self.write_totals(out, quiet)?;
        if let Some(i) = self.interrupted {
            writeln!(out, "{}", i.line(self.dry_run, self.user_tz, self.end))?;
        }
        Ok(())
    }

    /// The notes (not with `quiet`), and the fixes noticed (always).
    fn write_notes(&self, out: &mut impl Write, quiet: bool) -> io::Result<()> {
        if !quiet {
            for note in self.notes {
                writeln!(out, "note: {note}")?;
            }
            // Nothing was held back by them (every URL was published): not
            // for -q, which says only what needs a human; `status`,
            // `doctor` and the metrics keep them.
            for note in self.inspections {
                writeln!(out, "note: {}", note.lines(self.user_tz, self.end))?;
            }
        }
        // A fix noticed closes what a reminder said: told even with -q.
        for resumed in self.resumed {
            writeln!(out, "resumed: {resumed}")?;
        }
        Ok(())
    }

    /// A dry run's plan: per engine what is new, changed and unchanged, and
    /// per group what would go now.
    fn write_plan(&self, out: &mut impl Write) -> io::Result<()> {
        writeln!(out, "Dry run: nothing is sent and the ledger is not changed.")?;
        for (engine, p) in self.plan_summary() {
            writeln!(
                out,
                "{}: {} new, {} changed, {} unchanged (not sent), {} wait for budget.",
                engine.title(),
                p.counts.new,
                p.counts.changed,
                p.counts.unchanged,
                p.waiting
            )?;
        }
        if let Some(n) = self.before_since.filter(|n| *n > 0) {
            writeln!(out, "{} left out: their lastmod is before --since.", plural(n, "URL is", "URLs are"))?;
        }
        for (g, n) in self.results.planned_counts() {
            writeln!(out, "{}: {} would go now.", group_title(&g), plural(n, "URL", "URLs"))?;
        }
        Ok(())
    }

    /// What happened to one group's URLs of one outcome and reason, and
    /// what the user can do (with `quiet`, only what was parked).
    fn write_aggregate(&self, out: &mut impl Write, a: &super::results::Aggregate, quiet: bool) -> io::Result<()> {
        let title = group_title(&a.group);
        let n = a.count;
        let when = |at: Option<(DateTime<Utc>, Tz)>| at.map(|(t, tz)| printer::when(t, tz, self.user_tz, self.end));
        match a.outcome {
            Outcome::Misconfigured => {
                // Parked before this run: said by its notice below, when due.
                let Some(notice) = self.parked_in_this_run(a) else { return Ok(()) };
                writeln!(out, "error: {title}: {} ({})", a.message, a.reason)?;
                if let Some(hint) = &a.hint {
                    writeln!(out, "  hint: {hint}")?;
                }
                writeln!(out, "  {} parked.{}", plural(n, "URL is", "URLs are"), notice.who())?;
            }
            _ if quiet => {}
            Outcome::Accepted => write_accepted(out, a)?,
            Outcome::Skipped => {
                let why = match a.reason {
                    Reason::Local(LocalReason::AlreadyAccepted) => {
                        "already accepted within the dedupe window (--force resubmits)"
                    }
                    Reason::Local(LocalReason::Unchanged) => {
                        "unchanged since their last accepted submission (--changed)"
                    }
                    _ => a.message.as_str(),
                };
                writeln!(out, "{title}: {} skipped: {why}.", plural(n, "URL", "URLs"))?;
            }
            Outcome::Deferred if a.reason == Reason::Local(LocalReason::Budget) => self.write_budget_wait(out, a)?,
            Outcome::Deferred => {
                let next = when(a.next_retry).map(|w| format!(" The next goes {w}.")).unwrap_or_default();
                writeln!(out, "{title}: {} waiting ({}).{next}", plural(n, "URL is", "URLs are"), a.message)?;
            }
            Outcome::Quota | Outcome::Transient | Outcome::KeyPending => {
                let retry = when(a.next_retry)
                    .map(|w| format!(" {} queued for {w}.", plural(n, "URL is", "URLs are")))
                    .unwrap_or_default();
                writeln!(out, "{title}: {}{retry}", a.message)?;
            }
            Outcome::Invalid => {}
        }
        Ok(())
    }

    /// URLs the budget had no room for: whose quota, how much of it is
    /// used, and when its next window opens.
    fn write_budget_wait(&self, out: &mut impl Write, a: &super::results::Aggregate) -> io::Result<()> {
        let Some((retry_at, _)) = a.next_retry else { return Ok(()) };
        let d = self.deferrals.iter().filter(|d| d.group == a.group).max_by_key(|d| d.retry_at);
        let (used, what, tz) = match d {
            Some(d) => (
                d.limit.map(|l| format!(" ({}/{l})", d.used)).unwrap_or_default(),
                if d.blocked { "was refused by the server" } else { "is used" },
                d.rule_tz,
            ),
            None => (String::new(), "is used", self.user_tz),
        };
        writeln!(
            out,
            "{} quota for {} {what}{used}. Next window opens {}. {} queued for then.",
            a.group.engine.title(),
            a.group.property,
            printer::when(retry_at, tz, self.user_tz, self.end),
            plural(a.count, "URL is", "URLs are")
        )
    }

    /// The run's counts on one line (with `quiet`, only when something
    /// needs a human), or that there was nothing to send.
    fn write_totals(&self, out: &mut impl Write, quiet: bool) -> io::Result<()> {
        let summary = self.results.summary();
        let needs_human = self.results.invalid().1 > 0 || self.parked.iter().any(|p| p.fresh || p.told);
        if !quiet || needs_human {
            let parts: Vec<String> =
                summary.into_iter().filter(|(_, n)| *n > 0).map(|(o, n)| format!("{n} {o}")).collect();
            if parts.is_empty() && (self.dry_run || self.interrupted.is_some()) {
                // The plan above says what would go; the interruption what stays.
            } else if parts.is_empty() && self.waiting.is_empty() {
                writeln!(out, "Nothing to send.")?;
            } else if parts.is_empty() {
                writeln!(out, "Nothing is due now.")?;
            } else {
                writeln!(out, "{}.", parts.join(", "))?;
            }
        }
        Ok(())
    }

    /// With `-q`: how many input lines were invalid, and the first few.
    fn write_invalid(&self, err: &mut impl Write) -> io::Result<()> {
        let (invalid, all) = self.results.invalid();
        if all == 0 {
            return Ok(());
        }
        let first = if all > invalid.len() as u64 { format!("; the first {}", invalid.len()) } else { String::new() };
        writeln!(err, "invalid: {} not submitted{first}:", plural(all, "input line was", "input lines were"))?;
        for r in invalid {
            let place = r.source.as_ref().map_or_else(|| "input".to_string(), |p| p.to_string());
            writeln!(err, "  {place}: `{}`: {}", r.url, r.message)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn stopped() -> Interruption {
        Interruption {
            signal: "SIGTERM",
            grace: std::time::Duration::from_secs(10),
            unanswered_requests: 0,
            unanswered_urls: 0,
            unsent_urls: 0,
            retry_at: None,
            queued: 9489,
            input_cut: false,
        }
    }

    #[test]
    fn the_interruption_line_says_what_was_cut_and_what_stays() {
        let now = at("2026-12-03T09:00:30Z");
        let mut i = stopped();
        assert_eq!(
            i.line(false, Tz::UTC, now),
            "interrupted by SIGTERM: claimed nothing more; every request sent was answered; 9489 URLs stay in the \
             queue."
        );
        i.unanswered_requests = 1;
        i.unanswered_urls = 500;
        i.retry_at = Some(at("2026-12-03T09:10:01Z"));
        i.unsent_urls = 3;
        i.input_cut = true;
        assert_eq!(
            i.line(false, Tz::UTC, now),
            "interrupted by SIGTERM: claimed nothing more; the input was not read to its end (what was read is in \
             the ledger); 1 request (500 URLs) not answered within 10 s is recorded as interrupted (counted as used; \
             sent again after 2026-12-03 09:10 UTC — in 9 min); 3 URLs claimed but not sent went back to the queue \
             (not counted); 9489 URLs stay in the queue."
        );
        i.unanswered_requests = 2;
        assert!(i.line(false, Tz::UTC, now).contains("2 requests (500 URLs) not answered within 10 s are recorded"));
        assert_eq!(
            i.line(true, Tz::UTC, now),
            "interrupted by SIGTERM: the input was not read to its end; the plan covers what was read."
        );
    }

    #[test]
    fn the_interruption_in_json_has_its_retry_only_with_unanswered_requests() {
        let json = serde_json::to_value(stopped().json(chrono_tz::Asia::Shanghai)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"signal": "SIGTERM", "grace_secs": 10, "unanswered_requests": 0,
                "unanswered_urls": 0, "unsent_urls": 0, "queued": 9489, "input_cut": false})
        );
        let i = Interruption {
            unanswered_requests: 1,
            unanswered_urls: 2,
            retry_at: Some(at("2026-12-03T09:10:01Z")),
            ..stopped()
        };
        assert_eq!(i.json(chrono_tz::Asia::Shanghai).retry_at.as_deref(), Some("2026-12-03T17:10:01+08:00"));
    }
}
