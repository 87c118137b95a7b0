//! The rendering of a `submit` run's results as human text and as the JSON
//! `--json` document (README, *Output and exit codes*): per group what happened and what the user can do,
//! the budgets that stopped sends (`Deferral`), what waits in the queue
//! (`Waiting`) and the dry run's plan (`PlanCounts`). It reads the run's
//! `Results` (never the other way round). Rendering is generic over
//! `io::Write`, so tests can render into a `Vec<u8>`.

use super::printer::{self, group_title, rfc3339};
use super::results::Results;
use crate::model::GroupKey;
use crate::model::{EngineKind, LocalReason, Outcome, Reason};
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

pub struct SubmitReport<'a> {
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

    /// An element already in JSON.
    fn push_raw(&mut self, text: &str) -> io::Result<()> {
        write!(self.out, "{}\n    {text}", if self.first { "" } else { "," })?;
        self.first = false;
        Ok(())
    }

    fn end(self) -> io::Result<()> {
        write!(self.out, "{}]", if self.first { "" } else { "\n  " })
    }
}

impl SubmitReport<'_> {
    /// The `--json` document (README, *Output and exit codes*), streamed: `now`, (`dry_run`, `plan`),
    /// `results`, `summary`, (`notes`).
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
        writeln!(out, "\n}}")?;
        Ok(())
    }

    fn plan_summary(&self) -> BTreeMap<EngineKind, PlanSummary> {
        let waiting = self.results.deferred_per_engine();
        self.plan
            .iter()
            .map(|(e, c)| (*e, PlanSummary { counts: *c, waiting: waiting.get(e).copied().unwrap_or(0) }))
            .collect()
    }

    /// Human text: per group what happened and what the user can do; the
    /// invalid lines; a summary. With `quiet`, only what needs a human.
    pub fn write_human(&self, out: &mut impl Write, quiet: bool) -> anyhow::Result<()> {
        if !quiet {
            for note in self.notes {
                writeln!(out, "note: {note}")?;
            }
        }
        if self.dry_run {
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
        }
        let aggregates = self.results.aggregates();
        let when = |at: Option<(DateTime<Utc>, Tz)>| at.map(|(t, tz)| printer::when(t, tz, self.user_tz, self.end));
        for a in &aggregates {
            let title = group_title(&a.group);
            let n = a.count;
            match a.outcome {
                Outcome::Misconfigured => {
                    writeln!(out, "error: {title}: {} ({})", a.message, a.reason)?;
                    if let Some(hint) = &a.hint {
                        writeln!(out, "  hint: {hint}")?;
                    }
                    writeln!(
                        out,
                        "  {} parked until the configuration changes or `indexq queue retry`.",
                        plural(n, "URL is", "URLs are")
                    )?;
                }
                _ if quiet => {}
                Outcome::Accepted => writeln!(out, "{title}: {} accepted.", plural(n, "URL", "URLs"))?,
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
                Outcome::Deferred if a.reason == Reason::Local(LocalReason::Budget) => {
                    let Some((retry_at, _)) = a.next_retry else { continue };
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
                        plural(n, "URL is", "URLs are")
                    )?;
                }
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
        let (invalid, all) = self.results.invalid();
        for r in invalid {
            let place = r.source.as_deref().unwrap_or("input");
            writeln!(out, "invalid: {place}: `{}`: {}", r.url, r.message)?;
        }
        if all > invalid.len() as u64 {
            writeln!(out, "invalid: … and {} more (each is named in a warning above).", all - invalid.len() as u64)?;
        }
        let summary = self.results.summary();
        let needs_human = summary["misconfigured"] + summary["invalid"] > 0;
        if !quiet || needs_human {
            let parts: Vec<String> =
                summary.into_iter().filter(|(_, n)| *n > 0).map(|(o, n)| format!("{n} {o}")).collect();
            if parts.is_empty() && self.dry_run {
                // The plan above says what would go.
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
}
