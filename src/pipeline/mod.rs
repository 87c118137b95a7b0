//! The run of `indexq submit` (and, kept up, of `serve`'s worker): puts
//! every input URL in the ledger first, then sends all
//! due work within budget, group by group (property × engine × target):
//! claim (reserve before send) → send → classify → schedule → finish.
//! With `--max-wait`, sleeps for retries that fall due within it. With
//! `--dry-run`, nothing is written or sent: a `Plan` reads the ledger (the
//! claims it forecasts, `Budget::plan_claim`) and the intake asks it what
//! would become of each URL.
//!
//! The command (`commands::submit`) checks the arguments and opens the
//! inputs and the ledger; this file runs the phases in order. `Run` is what
//! every phase reads (settings, clock, engines, ledger, the stop), `Findings`
//! what they leave for the end; each phase is its own type, borrowing both
//! for as long as it runs, in its own file:
//! - `intake` (`Admitting`): the inputs (URL lists, sitemaps) into the ledger,
//!   and what the report says of each URL read (invalid, skipped, waiting,
//!   counted as new or changed);
//! - `send` (`Sender`): due items claimed in batches within budget and
//!   pace, sent to the engines, and the waits for retries within
//!   `--max-wait`;
//! - `next_steps`: what an engine's answers decide (another batch, quota
//!   blocks, each item's next step by the scheduler), before anything is
//!   recorded;
//! - `outcome` (`Recorder`): the answers and their decisions made into
//!   ledger records and results;
//! - `findings` (`Findings`): what the phases leave (a claim's deferrals
//!   handed over as events, `findings::deferrals`), and at the end the
//!   report and the exit status;
//! - `plan` (`Plan`): the dry run's plan, by reading the ledger;
//! - what needs a human across runs (fixes noticed by themselves before
//!   sending, each parked group said once per `[submit] remind` at the
//!   end) is `attention`'s: the run hands it its groups and what it met
//!   (`Run::attention`, `Findings::sightings`).
//! - `inspect`: Google's URL inspections before publishing (`skip_indexed`):
//!   what a claim may inspect, and what the inspections came to;
//! - `sitemap_reports`: after sending, the engines' reports on the sitemaps
//!   submitted to them, read when due (`[sitemap] read_interval`, and after
//!   each submission) and kept in the ledger;
//! - `stop`: SIGINT/SIGTERM — nothing more is claimed or read, requests in
//!   flight get `[submit] stop_grace`, and the run reports and exits 130/143.

mod admission;
mod findings;
mod inspect;
mod intake;
mod next_steps;
mod notify;
mod outcome;
mod plan;
mod routes;
mod send;
mod sitemap_reports;
mod stop;
#[cfg(test)]
mod testing;
mod worker;

pub(crate) use findings::admission_results;
pub(crate) use routes::Routes;
pub(crate) use stop::Stop;
pub(crate) use worker::{SourcesRead, Worker};

use crate::budget_rules;
use crate::cli::SubmitArgs;
use crate::clock::Clock;
use crate::config::Settings;
use crate::engines::{self, Engine};
use crate::error::ExitStatus;
use crate::ingest::Source;
use crate::ledger::{Ledger, LedgerError, LedgerTime, Owner};
use crate::model::{EngineKind, GroupKey, Reason, RunRecord};
use crate::output::printer::Printer;
use crate::output::progress::Progress;
use crate::output::results::Results;
use crate::redact::Redactor;
use anyhow::Context as _;
use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use findings::{Ending, Findings};
use intake::Admitting;
use plan::Plan;
use send::Sender;
use std::collections::{BTreeMap, HashMap};

/// What every phase of a run reads: the settings, the clock, the engines
/// and the ledger, and the stop.
pub(crate) struct Run<'a> {
    settings: &'a Settings,
    clock: &'a Clock,
    user_tz: Tz,
    engines: BTreeMap<EngineKind, Box<dyn Engine>>,
    ledger: Box<dyn Ledger + Send>,
    owner: Owner,
    /// The progress line: reading, sending, waiting.
    progress: Progress,
    /// SIGINT/SIGTERM: whether the run stops.
    stop: stop::Stop,
    /// Groups parked for a cause indexq checks by itself whose check failed
    /// again before sending (`attention::notice_fixes`), with that cause: nothing of
    /// theirs is claimed, since the check already predicts the answer. Their
    /// new URLs wait with the parked ones and are counted in their reminder.
    held: HashMap<GroupKey, Reason>,
}

/// A first run that queues more than this many days of a group's daily
/// budget says so (`Run::first_run_backlogs`): a week, as issue 44 asks.
const FIRST_RUN_BACKLOG_DAYS: u64 = 7;

/// The input lists of a run, opened, by name.
pub(crate) type Readers = Vec<(String, crate::ingest::Input)>;

/// A run of `indexq submit`, once the command has checked its arguments,
/// opened its inputs and built `run` (`commands::submit`): its phases, then
/// the metrics and the run's record (`finish`). `began` is when the command
/// started, for the run's record.
pub(crate) async fn submit(
    mut run: Run<'_>,
    readers: Readers,
    args: &SubmitArgs,
    printer: &Printer,
    began: std::time::Instant,
) -> anyhow::Result<ExitStatus> {
    let (settings, clock) = (run.settings, run.clock);
    let mut findings = Findings::new(Results::new(printer.json).context("cannot create the run's temporary results")?);
    let outcome = phases(&mut run, &mut findings, readers, args, printer).await;
    // The metrics (`--metrics-file`), and the run's record in the ledger.
    let outcome = finish(settings, run.ledger.as_mut(), clock, began, outcome, args, printer);
    // A database ledger lost mid-run: say what this run left in it.
    outcome.map_err(|e| {
        if !LedgerError::is_lost(&e) {
            return e;
        }
        e.context(format!(
            "the run stopped after reading {} input URL(s) and writing {} queue item(s) to the ledger, which keeps \
             them for the next run",
            findings.read, findings.admitted
        ))
    })
}

/// The run's phases in order, on the ledger's clock: before the input is
/// read, the plan (a dry run) or what a run prepares; the intake; then,
/// unless a dry run, sending and the engines' sitemap reports; the report.
async fn phases(
    run: &mut Run<'_>,
    findings: &mut Findings,
    readers: Readers,
    args: &SubmitArgs,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    // One clock for every window decision (docs/design.md, *One clock*): the ledger's.
    let local = run.clock.now();
    let time = crate::ledger::open::follow_ledger_clock(run.ledger.as_mut(), run.clock, !args.dry_run)?;
    for warning in clock_warnings(&time, local, run.user_tz) {
        printer.warn(&warning);
    }
    let started = run.clock.now();
    let max_wait = args.max_wait.unwrap_or(run.settings.submit.max_wait);
    let wait_until = started + TimeDelta::from_std(max_wait).unwrap_or(TimeDelta::MAX);
    if !args.dry_run {
        findings.results.final_after(wait_until);
    }
    let mut plan = if args.dry_run { Some(Plan::new(run, findings).await?) } else { None };
    if plan.is_none() {
        let resumed = run.prepare(started, printer).await?;
        findings.resumed.extend(resumed);
    }
    // The URLs of input files may share write transactions: all of them are
    // committed before anything else is read or sent (and after an input
    // that failed). Not stdin's: a pipe may keep the write lock waiting.
    // (Nor a baseline's: it records each batch as announced once admitted.)
    if !args.baseline && !args.inputs.iter().any(|arg| matches!(Source::parse(arg), Source::Stdin)) {
        run.ledger.begin_admissions();
    }
    let empty = if plan.is_none() && !args.baseline { run.empty_groups(started)? } else { Vec::new() };
    let mut writing = admission::Writing { baseline: args.baseline };
    let admission: &mut dyn admission::Admit = match plan.as_mut() {
        Some(plan) => plan,
        None => &mut writing,
    };
    let mut intake = Admitting::of_args(run, findings, admission, args);
    let read = intake.read_inputs(readers, args, printer).await;
    let (counts, before_since) = (std::mem::take(&mut intake.counts), intake.before_since);
    let admitted = run.ledger.end_admissions();
    read?;
    admitted?;
    for warning in run.first_run_backlogs(&empty, started)? {
        printer.warn(&warning);
    }
    if let Some(plan) = &plan {
        for (group, backlog) in plan.backlogs() {
            findings.notes.push(format!("{}: {backlog}", crate::output::printer::group_title(&group)));
        }
    }
    if args.baseline {
        // Said first, also with -q (it is what the command is for); in the
        // `--json` document, a note.
        let text = baseline_text(&findings.announced);
        match printer.json {
            true => findings.notes.push(text),
            false => {
                use std::io::Write as _;
                let _ = writeln!(printer.stdout(), "{text}");
            }
        }
    } else if plan.is_none() {
        Sender::new(run, findings, wait_until).send_due(printer).await?;
        let problems = run.read_sitemap_reports().await?;
        findings.sitemap_problems_now.extend(problems);
    }
    let before_since = args.since.map(|_| before_since);
    let ending = Ending { started, plan: &counts, before_since, fail_on: &args.fail_on, dry_run: plan.is_some() };
    findings.end(run, ending, printer).await
}

/// What `--baseline` recorded, per engine, in one sentence.
fn baseline_text(announced: &BTreeMap<EngineKind, u64>) -> String {
    let engines: Vec<String> = announced.iter().map(|(e, n)| format!("{n} to {}", e.title())).collect();
    let total: u64 = announced.values().sum();
    let to = if engines.is_empty() { String::new() } else { format!(" ({})", engines.join(", ")) };
    let plural = if total == 1 { "" } else { "s" };
    format!("Baseline: recorded {total} URL{plural} as already announced{to}; nothing was sent and no quota spent.")
}

/// What a run does as it ends (one call, whatever happened): with
/// `--metrics-file`, writes the metrics, then records the run in the ledger
/// — start, end and exit code. A dry run is not recorded. A file that cannot
/// be written is an error (exit 1, recorded so) after a run that went well,
/// a warning otherwise. (A path no run could write — its folder missing or
/// read-only, a device, a FIFO — was refused before the run began:
/// `files::check_writable`.) A database lost mid-run is not asked again (each
/// try would wait for its timeout): the run goes unrecorded.
fn finish(
    settings: &Settings,
    ledger: &mut dyn Ledger,
    clock: &Clock,
    began: std::time::Instant,
    outcome: anyhow::Result<ExitStatus>,
    args: &SubmitArgs,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    if args.dry_run {
        return outcome;
    }
    let ended_at = RunRecord::millis(clock.now());
    let took = TimeDelta::from_std(began.elapsed()).unwrap_or_default();
    let mut run = RunRecord {
        host: Owner::current().host,
        started_at: RunRecord::millis(ended_at - took),
        ended_at,
        exit_code: match &outcome {
            Ok(status) => status.code(),
            Err(e) => crate::error::exit_status_of(e).code(),
        },
    };
    let mut outcome = outcome;
    let lost = matches!(&outcome, Err(e) if LedgerError::is_lost(e));
    if let Some(path) = args.metrics_file.as_deref() {
        if let Err(e) = crate::metrics::write_file(settings, ledger, path, &run, lost, outcome.is_err(), printer) {
            match outcome {
                Ok(_) => {
                    run.exit_code = ExitStatus::Failure.code();
                    outcome = Err(e.context("--metrics-file"));
                }
                Err(_) => printer.warn(&format!("--metrics-file: {e:#}")),
            }
        }
    }
    if lost {
        return outcome;
    }
    if let Err(e) = ledger.record_run(&run) {
        // A run that failed for the ledger's sake has said so already.
        if outcome.is_ok() {
            printer.warn(&format!("could not record this run in the ledger: {e}"));
        }
    }
    outcome
}

/// The engines of `selected` that some property uses.
pub(crate) fn build_engines(
    settings: &Settings,
    selected: &[EngineKind],
) -> anyhow::Result<BTreeMap<EngineKind, Box<dyn Engine>>> {
    let mut redactor = Redactor::new();
    let client = engines::client(&settings.http).context("cannot set up the HTTP client")?;
    let mut built: BTreeMap<EngineKind, Box<dyn Engine>> = BTreeMap::new();
    for kind in selected {
        if !settings.properties.iter().any(|p| p.uses(*kind)) {
            continue;
        }
        built.insert(*kind, engines::build(*kind, settings, client.clone(), &mut redactor)?);
    }
    Ok(built)
}

/// What to warn about the clocks once the run follows the ledger's (`time`;
/// `local` is this machine's): a clock earlier than a previous run's, and a
/// machine clock more than a minute away from the database server's.
fn clock_warnings(time: &LedgerTime, local: DateTime<Utc>, user_tz: Tz) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(latest) = time.latest.filter(|t| *t > time.clock + TimeDelta::minutes(1)) {
        warnings.push(format!(
            "the clock says {}, earlier than a previous run ({}): windows are decided at {}, so no window \
             reopens and nothing is counted twice, but check the system clock or INDEXQ_NOW",
            crate::output::printer::rfc3339(time.clock, user_tz),
            crate::output::printer::rfc3339(latest, user_tz),
            crate::output::printer::rfc3339(time.now, user_tz)
        ));
    }
    if (time.clock - local).abs() > TimeDelta::minutes(1) {
        warnings.push(format!(
            "this machine's clock is {} {} the database server's: windows and leases use the server's; \
             sync the clocks (NTP)",
            crate::clock::humanize((time.clock - local).abs()),
            if time.clock > local { "behind" } else { "ahead of" }
        ));
    }
    warnings
}

impl<'a> Run<'a> {
    /// A run that sends with `engines` on `ledger`, and stops on `stop`.
    pub(crate) fn new(
        settings: &'a Settings,
        clock: &'a Clock,
        engines: BTreeMap<EngineKind, Box<dyn Engine>>,
        ledger: Box<dyn Ledger + Send>,
        printer: &Printer,
        stop: stop::Stop,
    ) -> Run<'a> {
        Run {
            settings,
            clock,
            user_tz: crate::clock::user_timezone(),
            engines,
            ledger,
            owner: Owner::current(),
            progress: Progress::new(printer),
            stop,
            held: HashMap::new(),
        }
    }
}

impl Run<'_> {
    /// The run's groups as `attention` checks and reminds them.
    fn attention(&mut self) -> crate::attention::RunGroups<'_> {
        let known = self.known_groups();
        crate::attention::RunGroups {
            settings: self.settings,
            ledger: self.ledger.as_mut(),
            known,
            held: &mut self.held,
        }
    }

    /// What needs a human at the end of the run (`attention::run_notices`),
    /// each told if this run met it or its reminder is due at `started`;
    /// with `keep` (not a dry run), the ledger keeps when they were told.
    fn parked_notices(
        &mut self,
        findings: &Findings,
        started: DateTime<Utc>,
        keep: bool,
    ) -> anyhow::Result<Vec<crate::model::ParkedNotice>> {
        let now = self.clock.now();
        crate::attention::run_notices(self.attention(), &findings.sightings(), now, started, keep)
    }

    /// Every (property, engine, target) this run can send to.
    fn known_groups(&self) -> Vec<GroupKey> {
        budget_rules::groups(self.settings).into_iter().filter(|g| self.engines.contains_key(&g.engine)).collect()
    }

    /// The groups this run sends to now: those it knows, less those held
    /// with their parked items (`held`).
    fn sending_groups(&self) -> Vec<GroupKey> {
        self.known_groups().into_iter().filter(|g| !self.held.contains_key(g)).collect()
    }

    /// The groups of URLs this run may send to that hold nothing yet: a
    /// first run of their property and engine.
    fn empty_groups(&mut self, now: DateTime<Utc>) -> anyhow::Result<Vec<GroupKey>> {
        let mut empty = Vec::new();
        for group in self.known_groups().into_iter().filter(|g| g.channel == crate::model::Channel::Urls) {
            if self.ledger.queue_counts(&group, now)? == crate::model::QueueCounts::default() {
                empty.push(group);
            }
        }
        Ok(empty)
    }

    /// Of the groups that were `empty`, those this run queued more than a
    /// week of their daily budget for: each said once (the next run finds
    /// its group holding them), with the way to record an archive as known.
    fn first_run_backlogs(&mut self, empty: &[GroupKey], now: DateTime<Utc>) -> anyhow::Result<Vec<String>> {
        let mut said = Vec::new();
        for group in empty {
            let Some(rules) = self.rules(group) else { continue };
            let counts = self.ledger.queue_counts(group, now)?;
            let limits: Vec<_> = budget_rules::states(&rules, self.ledger.as_mut(), now)?
                .into_iter()
                .map(|s| (s.rule.period, s.limit))
                .collect();
            let Some(backlog) = budget_rules::Backlog::of(counts.due + counts.waiting, limits) else { continue };
            if backlog.days > FIRST_RUN_BACKLOG_DAYS {
                said.push(format!(
                    "{}: this first run queued {} URLs, about {} days at {} a day, old pages and new alike. If most are an \
                     archive the engine knows already, record them as announced once with `indexq submit \
                     --baseline --engine {}` (nothing is sent): later runs then send only what is new or changed. \
                     A CI job that submits after deploys should ask a running `indexq serve` to read the sources \
                     (POST /v1/sources) rather than start a ledger of its own.",
                    crate::output::printer::group_title(group),
                    backlog.urls,
                    backlog.days,
                    backlog.per_day,
                    group.engine
                ));
            }
        }
        Ok(said)
    }

    /// The budget rules of a group, with the pool its engine's credentials share.
    fn rules(&self, group: &GroupKey) -> Option<Vec<budget_rules::Rule>> {
        let property = self.settings.property(&group.property)?;
        let pool = self.engines.get(&group.engine).and_then(|e| e.pool());
        Some(budget_rules::rules_for(self.settings, property, group, pool.as_deref()))
    }

    /// The timezone of the group's own daily rule.
    fn rule_timezone(&self, group: &GroupKey) -> Option<Tz> {
        self.rules(group)?.first().map(|r| r.tz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use testing::at;

    #[test]
    fn clocks_that_agree_need_no_warning() {
        let now = at("2026-03-02T10:00:00Z");
        let time = LedgerTime { now, latest: Some(now - TimeDelta::hours(1)), clock: now };
        assert!(clock_warnings(&time, now + TimeDelta::seconds(59), Tz::UTC).is_empty());
        let time = LedgerTime { latest: Some(now + TimeDelta::seconds(60)), ..time };
        assert!(clock_warnings(&time, now, Tz::UTC).is_empty(), "a minute back is within the tolerance");
    }

    #[test]
    fn a_clock_earlier_than_a_previous_run_is_warned_about_with_the_instant_decided() {
        let clock = at("2026-03-02T10:00:00Z");
        let latest = at("2026-03-02T11:00:00Z");
        let time = LedgerTime { now: latest, latest: Some(latest), clock };
        assert_eq!(
            clock_warnings(&time, clock, chrono_tz::Europe::Paris),
            ["the clock says 2026-03-02T11:00:00+01:00, earlier than a previous run (2026-03-02T12:00:00+01:00): \
              windows are decided at 2026-03-02T12:00:00+01:00, so no window reopens and nothing is counted twice, \
              but check the system clock or INDEXQ_NOW"]
        );
    }

    #[test]
    fn a_machine_clock_away_from_the_servers_is_warned_about() {
        let server = at("2026-03-02T10:00:00Z");
        let time = LedgerTime { now: server, latest: None, clock: server };
        let warnings = clock_warnings(&time, server - TimeDelta::minutes(5), Tz::UTC);
        assert_eq!(
            warnings,
            ["this machine's clock is 5 min behind the database server's: windows and leases use the server's; \
              sync the clocks (NTP)"]
        );
        let warnings = clock_warnings(&time, server + TimeDelta::minutes(2), Tz::UTC);
        assert!(warnings[0].starts_with("this machine's clock is 2 min ahead of the database server's"));
    }
}
