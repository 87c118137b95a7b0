//! What `indexq serve`'s worker asks of a run: the phases of `submit`
//! (`prepare`, the configured sources read with `--changed`, `drain`: due
//! work claimed, sent and recorded), called again and again by a process
//! that stays up. Each call starts on fresh results and says what it came
//! to on stderr, as a person or journald reads it; what is parked is said
//! when it is parked and again once per `[submit] remind`, as unattended
//! runs say it. Nothing here decides a claim or reads an answer: that is
//! `send` and `outcome`, the same code `submit` runs.

use super::findings::Findings;
use super::intake::Admitting;
use super::send::Sender;
use super::stop::Stop;
use super::Run;
use crate::clock::Clock;
use crate::config::Settings;
use crate::ledger::{AdmitRule, Finish};
use crate::model::{EngineKind, Outcome};
use crate::output::printer::{group_title, Printer};
use crate::output::results::Results;
use crate::output::summary::PlanCounts;
use chrono::{DateTime, TimeDelta, Utc};
use std::collections::BTreeMap;
use std::io::Write as _;

/// A run that stays up: `serve`'s sending side.
pub(crate) struct Worker<'a> {
    run: Run<'a>,
    /// What the current round says.
    findings: Findings,
    printer: Printer,
    /// An answer a round could not record for want of the ledger: recorded
    /// once it is back (`Run::recover`), so that its URLs are not sent again.
    unrecorded: Option<Finish>,
}

/// What a read of the configured sources put in the ledger.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub(crate) struct SourcesRead {
    /// Per engine: the URLs new to the ledger, changed (queued again) and unchanged.
    pub engines: BTreeMap<EngineKind, PlanCounts>,
    /// Lines or sitemaps that could not be read, or URLs of no property.
    pub invalid: u64,
}

impl<'a> Worker<'a> {
    /// A worker on its own connection to the configured ledger, with every
    /// engine some property uses, stopped by `stop`.
    pub(crate) fn new(
        settings: &'a Settings,
        clock: &'a Clock,
        printer: &Printer,
        stop: Stop,
    ) -> anyhow::Result<Worker<'a>> {
        let engines = super::build_engines(settings, &EngineKind::ALL)?;
        let ledger = crate::ledger::open::open_ledger(settings)?;
        // No progress bar, and no per-URL results kept: a long-lived
        // process says each round's counts.
        let quiet = Printer { json: true, ..*printer };
        let run = Run::new(settings, clock, engines, ledger, &quiet, stop);
        let findings = Findings::new(Results::new(false)?);
        Ok(Worker { run, findings, printer: *printer, unrecorded: None })
    }

    /// Once, before the first round: reservations a stopped process left go
    /// back to the queue, items parked under another configuration go
    /// again, and so do those whose cause a check finds fixed.
    pub(crate) async fn prepare(&mut self) -> anyhow::Result<()> {
        self.fresh()?;
        let now = crate::ledger::open::follow_ledger_clock(self.run.ledger.as_mut(), self.run.clock, true)?.now;
        let resumed = self.run.prepare(now, &self.printer).await?;
        self.findings.resumed.extend(resumed);
        self.say(now).await
    }

    /// After rounds the ledger's loss cut short: the answer a round could
    /// not record is recorded (unless its commit went in), then this
    /// worker's own reservations go back to the queue, as a stopped
    /// process's would (a claim whose answer is lost is in none of its
    /// rounds any more, and would stay in flight while the process lives).
    pub(crate) fn reconcile_mine(&mut self) -> anyhow::Result<()> {
        self.run.recover(&mut self.unrecorded, &self.printer)
    }

    /// Sends everything due now, as `submit` does, and says what it came
    /// to. Stops claiming once the process is stopped; a request in flight
    /// gets `[submit] stop_grace` and its answer is recorded.
    pub(crate) async fn drain(&mut self) -> anyhow::Result<()> {
        self.fresh()?;
        let now = crate::ledger::open::follow_ledger_clock(self.run.ledger.as_mut(), self.run.clock, true)?.now;
        // Nothing is waited for inside a round: the worker sleeps between
        // rounds until the next item falls due.
        let mut sender = Sender::new(&mut self.run, &mut self.findings, now);
        let drained = sender.drain().await;
        if let Some(done) = sender.take_unrecorded() {
            self.unrecorded = Some(done);
        }
        drained?;
        self.say(now).await
    }

    /// Reads the configured sources (all, or `properties`') with `--changed`,
    /// conditionally as an unattended `submit` does; what it read is in
    /// the ledger when this returns.
    pub(crate) async fn read_sources(&mut self, properties: Option<&[String]>) -> anyhow::Result<SourcesRead> {
        self.fresh()?;
        let now = crate::ledger::open::follow_ledger_clock(self.run.ledger.as_mut(), self.run.clock, true)?.now;
        let rule = AdmitRule {
            dedupe: TimeDelta::from_std(self.run.settings.submit.dedupe_window).unwrap_or(TimeDelta::MAX),
            force: false,
            changed: true,
            resend_after: None,
        };
        let mut writing = super::admission::Writing { baseline: false };
        let mut intake = Admitting::new(&mut self.run, &mut self.findings, &mut writing, rule, None);
        intake.only = properties.map(<[String]>::to_vec);
        intake.read_sources(&self.printer).await?;
        intake.say_in_future(&self.printer);
        let engines = std::mem::take(&mut intake.counts);
        let (_, invalid) = self.findings.results.invalid();
        let read = SourcesRead { engines, invalid };
        self.say(now).await?;
        Ok(read)
    }

    /// When the next queued item of this worker's groups falls due (a
    /// retry, a budget window that reopens, a paced slot), if any.
    pub(crate) fn next_due(&mut self) -> anyhow::Result<Option<DateTime<Utc>>> {
        // A held group's new URLs are due but wait for its fix: not a reason to wake.
        let groups = self.run.sending_groups();
        Ok(self.run.next_due(&groups)?.map(|(t, _)| t))
    }

    /// The ledger's clock now (this process's, following the ledger's).
    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.run.clock.now()
    }

    /// A round starts with nothing said yet.
    fn fresh(&mut self) -> anyhow::Result<()> {
        self.findings = Findings::new(Results::new(false)?);
        Ok(())
    }

    /// What a round came to, on stderr: a line per group, outcome and
    /// reason, the notes, what resumed, and what is parked when it is to
    /// be said (this round parked it, or its reminder is due).
    async fn say(&mut self, started: DateTime<Utc>) -> anyhow::Result<()> {
        let now = self.run.clock.now();
        let user_tz = self.run.user_tz;
        for a in self.findings.results.aggregates() {
            let retry = match a.next_retry {
                Some((t, tz)) if a.outcome != Outcome::Accepted => {
                    format!(", next {}", crate::output::printer::when(t, tz, user_tz, now))
                }
                _ => String::new(),
            };
            let line = format!("{}: {} {} ({}){retry}", group_title(&a.group), a.count, a.outcome, a.reason);
            match a.outcome {
                Outcome::Misconfigured | Outcome::Invalid => self.printer.warn(&line),
                _ => self.printer.note(&line),
            }
        }
        for note in std::mem::take(&mut self.findings.notes) {
            self.printer.note(&format!("note: {note}"));
        }
        // What needs a human is said with -q too, as every run says it.
        let mut err = crate::output::escape::stderr();
        for resumed in std::mem::take(&mut self.findings.resumed) {
            writeln!(err, "resumed: {resumed}")?;
        }
        let notices = self.run.parked_notices(&self.findings, started, true)?;
        for notice in notices.iter().filter(|n| n.told) {
            writeln!(err, "{}", notice.line(user_tz))?;
        }
        for warning in self.run.notify_all(&notices, started).await {
            self.printer.warn(&warning);
        }
        Ok(())
    }
}
