//! `indexq submit`: puts every input URL in the ledger first, then sends all
//! due work within budget, group by group (property × engine × target):
//! claim (reserve before send) → send → classify → schedule → finish.
//! With `--max-wait`, sleeps for retries that fall due within it. With
//! `--dry-run`, the same code runs on an in-memory copy of the ledger and
//! stops before sending.

mod plan;

use super::ExitStatus;
use crate::budget;
use crate::cli::SubmitArgs;
use crate::clock::Clock;
use crate::config::{ConfigError, Settings};
use crate::engines::{self, Engine};
use crate::error::UsageError;
use crate::ingest::{self, sitemap, Source};
use crate::ledger::{
    Admission, AdmitRule, Answered, Block, Claim, ClaimSpec, Finish, Ledger, LedgerError, NewItem, Owner, Pace,
};
use crate::model::{Action, GroupKey, NextStep, RuleWindow};
use crate::model::{Class, EngineKind, LocalReason, Outcome, Reason};
use crate::output::printer::{Printer, Verbosity};
use crate::output::progress::Progress;
use crate::output::report::{Deferral, PlanCounts, SubmitReport, Waiting};
use crate::output::results::{Key, ResultEntry, Results};
use crate::redact::Redactor;
use crate::schedule::{self, Decision, History, Inputs};
use anyhow::Context as _;
use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use std::collections::{BTreeMap, HashMap};

/// URLs written to the ledger per transaction while reading inputs.
const ADMIT_BATCH: usize = 10_000;

/// What reading the inputs needs: where each property's URLs go, the batch
/// being filled, the rule for URLs accepted before, and the plan's counts.
struct Intake {
    routes: HashMap<String, Vec<GroupKey>>,
    batch: Vec<NewItem>,
    rule: AdmitRule,
    since: Option<DateTime<Utc>>,
    counts: BTreeMap<EngineKind, PlanCounts>,
    before_since: u64,
}

struct Run<'a> {
    settings: &'a Settings,
    clock: &'a Clock,
    user_tz: Tz,
    engines: BTreeMap<EngineKind, Box<dyn Engine>>,
    ledger: Box<dyn Ledger + Send>,
    owner: Owner,
    results: Results,
    deferrals: Vec<Deferral>,
    /// Groups whose engine-reported quota was read in this run.
    reported: std::collections::HashSet<GroupKey>,
    /// Things the user should know about this run (e.g. a quota read failed).
    notes: Vec<String>,
    dry_run: bool,
    /// The end of what this run may wait for (`--max-wait`).
    wait_until: DateTime<Utc>,
    /// What input URLs announce (Google: `--deleted`).
    action: Action,
    progress: Progress,
    /// Input URLs read so far.
    read: u64,
    /// Queue items (URL, property, engine, target) this run wrote to the ledger.
    admitted: u64,
    /// A dry run's plan (nothing is written).
    plans: plan::Plans,
}

pub async fn run(
    settings: &Settings,
    args: &SubmitArgs,
    printer: &Printer,
    clock: &Clock,
) -> anyhow::Result<ExitStatus> {
    let began = std::time::Instant::now();
    let selected: Vec<EngineKind> = if args.engine.is_empty() { EngineKind::ALL.to_vec() } else { args.engine.clone() };
    let mut redactor = Redactor::new();
    let client = engines::client(&settings.http).context("cannot set up the HTTP client")?;
    let mut built: BTreeMap<EngineKind, Box<dyn Engine>> = BTreeMap::new();
    for kind in &selected {
        if !settings.properties.iter().any(|p| p.uses(*kind)) {
            continue;
        }
        match kind {
            EngineKind::IndexNow => {
                built.insert(
                    *kind,
                    Box::new(engines::indexnow::IndexNow::new(settings, client.clone(), &mut redactor)?),
                );
            }
            EngineKind::Bing => {
                built.insert(*kind, Box::new(engines::bing::Bing::new(settings, client.clone(), &mut redactor)?));
            }
            EngineKind::Google => {
                built.insert(*kind, Box::new(engines::google::Google::new(settings, client.clone(), &mut redactor)?));
            }
        }
    }
    if built.is_empty() && !(args.inputs.is_empty() && args.sitemap.is_empty()) {
        return Err(ConfigError {
            place: settings.file.display().to_string(),
            message: "no property uses an engine this run can submit to".into(),
            hint: Some(
                "add an `indexnow = { key_env = \"INDEXNOW_KEY\" }` table to a [[property]], or check --engine".into(),
            ),
        }
        .into());
    }

    // Every input must open before anything is written or sent.
    let mut readers = Vec::new();
    for arg in &args.inputs {
        let source = Source::parse(arg);
        let reader = source.open().map_err(|e| UsageError(e.to_string()))?;
        readers.push((source.name(), reader));
    }

    let ledger = if args.dry_run { super::open_ledger_to_read(settings)? } else { super::open_ledger(settings)? };
    let mut run = Run {
        settings,
        clock,
        user_tz: crate::clock::user_timezone(),
        engines: built,
        ledger,
        owner: Owner::current(),
        results: Results::new(printer.json).context("cannot create the run's temporary results")?,
        deferrals: Vec::new(),
        reported: Default::default(),
        notes: Vec::new(),
        dry_run: args.dry_run,
        wait_until: clock.now(),
        action: if args.deleted { Action::Deleted } else { Action::Updated },
        progress: Progress::new(printer),
        read: 0,
        admitted: 0,
        plans: Default::default(),
    };
    let outcome: anyhow::Result<ExitStatus> = async {
        // One clock for every window decision (DESIGN §2): the ledger's.
        let local = clock.now();
        let time = super::follow_ledger_clock(run.ledger.as_mut(), clock, !run.dry_run)?;
        if let Some(latest) = time.latest.filter(|t| *t > time.clock + TimeDelta::minutes(1)) {
            printer.warn(&format!(
                "the clock says {}, earlier than a previous run ({}): windows are decided at {}, so no window \
                 reopens and nothing is counted twice, but check the system clock or INDEXQ_NOW",
                crate::output::printer::rfc3339(time.clock, run.user_tz),
                crate::output::printer::rfc3339(latest, run.user_tz),
                crate::output::printer::rfc3339(time.now, run.user_tz)
            ));
        }
        if (time.clock - local).abs() > TimeDelta::minutes(1) {
            printer.warn(&format!(
                "this machine's clock is {} {} the database server's: windows and leases use the server's; \
                 sync the clocks (NTP)",
                crate::clock::humanize((time.clock - local).abs()),
                if time.clock > local { "behind" } else { "ahead of" }
            ));
        }
        let started = clock.now();
        let max_wait = args.max_wait.unwrap_or(settings.submit.max_wait);
        run.wait_until = started + TimeDelta::from_std(max_wait).unwrap_or(TimeDelta::MAX);
        if run.dry_run {
            run.plan_groups().await?;
        } else {
            run.prepare(started, printer)?;
        }

        let mut intake = Intake {
            routes: HashMap::new(),
            batch: Vec::with_capacity(ADMIT_BATCH),
            rule: AdmitRule {
                dedupe: TimeDelta::from_std(settings.submit.dedupe_window).unwrap_or(TimeDelta::MAX),
                force: args.force,
                changed: args.changed,
            },
            since: args.since,
            counts: BTreeMap::new(),
            before_since: 0,
        };
        for group in run.known_groups() {
            intake.routes.entry(group.property.clone()).or_default().push(group);
        }
        for (name, reader) in readers {
            run.ingest_list(&mut intake, &name, reader, printer)?;
        }
        if !args.sitemap.is_empty() {
            let mut reader = sitemap::Reader::new(engines::fetch_client(&settings.http)?, settings.sitemap.max_bytes);
            for source in &args.sitemap {
                run.ingest_sitemap(&mut intake, &mut reader, source, printer).await?;
            }
        }

        let wait_until = run.wait_until;
        while !run.dry_run {
            run.drain().await?;
            let now = clock.now();
            if now >= wait_until {
                break;
            }
            let groups = run.known_groups();
            match run.ledger_next_due(&groups)? {
                Some((next, group)) if next <= wait_until => {
                    // A short floor: an item due now that the drain could not take
                    // must not make this loop spin.
                    let pause = (next - now).max(TimeDelta::milliseconds(100));
                    tracing::debug!(seconds = pause.num_seconds(), "waiting for retries due within --max-wait");
                    if pause >= TimeDelta::seconds(1) {
                        let what = run.waiting_for(&group, pause)?;
                        if run.progress.visible() {
                            run.progress.waiting(&what);
                        } else {
                            printer.note(&format!("{what}…"));
                        }
                    }
                    tokio::time::sleep(pause.to_std().unwrap_or_default()).await;
                }
                _ => break,
            }
        }

        run.progress.finish();
        let now = clock.now();
        let mut waiting = Vec::new();
        for group in run.known_groups() {
            let counts = run.ledger.queue_counts(&group, now)?;
            if let Some(next) = run.ledger.next_due(&group)?.filter(|_| counts.waiting > 0) {
                let tz = run.rule_timezone(&group).unwrap_or(run.user_tz);
                waiting.push(Waiting { group, count: counts.waiting, next, tz });
            }
        }
        run.results.flush()?;
        let report = SubmitReport {
            now: started,
            end: now,
            user_tz: run.user_tz,
            dry_run: run.dry_run,
            results: &run.results,
            deferrals: &run.deferrals,
            waiting: &waiting,
            notes: &run.notes,
            plan: &intake.counts,
            before_since: args.since.map(|_| intake.before_since),
        };
        let mut out = std::io::BufWriter::new(printer.stdout());
        if printer.json {
            report.write_json(&mut out)?;
        } else {
            report.write_human(&mut out, printer.verbosity == Verbosity::Quiet)?;
        }
        std::io::Write::flush(&mut out)?;
        let summary = run.results.summary();
        let needs_human = args.fail_on.iter().any(|o| summary[o.as_str()] > 0);
        Ok(if needs_human { ExitStatus::NeedsHuman } else { ExitStatus::Ok })
    }
    .await;
    // The run's record in the ledger, and the metrics (`--metrics-file`).
    let outcome = crate::metrics::after_submit(settings, run.ledger.as_mut(), clock, began, outcome, args, printer);
    // A database ledger lost mid-run: say what this run left in it.
    outcome.map_err(|e| {
        if !LedgerError::is_lost(&e) {
            return e;
        }
        e.context(format!(
            "the run stopped after reading {} input URL(s) and writing {} queue item(s) to the ledger, which keeps \
             them for the next run",
            run.read, run.admitted
        ))
    })
}

impl Run<'_> {
    /// Before the input is read: reservations left by a run that stopped go
    /// back to the queue, and items parked under another configuration are
    /// retried.
    fn prepare(&mut self, now: DateTime<Utc>, printer: &Printer) -> anyhow::Result<()> {
        let reconciled = self.ledger.reconcile(now, &self.owner)?;
        if reconciled.items > 0 {
            printer.note(&format!(
                "{} left in flight by a run that stopped were returned to the queue (counted as used).",
                if reconciled.items == 1 { "1 URL".to_string() } else { format!("{} URLs", reconciled.items) }
            ));
        }
        for group in self.known_groups() {
            let engine = &self.engines[&group.engine];
            let n = self.ledger.unpark_changed(&group, &engine.fingerprint(&group), now)?;
            if n > 0 {
                printer.note(&format!(
                    "{}: the configuration changed; {n} parked URLs are retried.",
                    crate::output::printer::group_title(&group)
                ));
            }
        }
        Ok(())
    }

    /// Every (property, engine, target) this run can send to.
    fn known_groups(&self) -> Vec<GroupKey> {
        budget::groups(self.settings).into_iter().filter(|g| self.engines.contains_key(&g.engine)).collect()
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
        Ok(format!(
            "waiting for {}{why} — retry in {}",
            crate::output::printer::group_title(group),
            crate::clock::humanize(pause)
        ))
    }

    /// Records the result of a ledger item.
    fn entry(&mut self, id: i64, entry: ResultEntry) -> anyhow::Result<()> {
        Ok(self.results.put(Key::Item(id), &entry)?)
    }

    /// Records a bad input line.
    fn invalid_line(&mut self, entry: ResultEntry) -> anyhow::Result<()> {
        let key = self.results.line_key();
        Ok(self.results.put(key, &entry)?)
    }

    /// Reads a URL list into the ledger.
    fn ingest_list(
        &mut self,
        intake: &mut Intake,
        name: &str,
        reader: Box<dyn std::io::BufRead>,
        printer: &Printer,
    ) -> anyhow::Result<()> {
        let mut error = None;
        let read = ingest::read_lines(name, reader, |line| {
            if error.is_none() {
                if let Err(e) = self.take_url(intake, &line.text, &line.place, line.url, None, printer) {
                    error = Some(e);
                }
            }
        });
        if let Some(e) = error {
            return Err(e);
        }
        read.with_context(|| format!("reading {name}"))?;
        self.flush(intake)
    }

    /// Reads a sitemap (index, robots.txt) into the ledger. A problem with
    /// one sitemap is an `invalid` result naming its place; the rest goes on.
    async fn ingest_sitemap(
        &mut self,
        intake: &mut Intake,
        reader: &mut sitemap::Reader,
        source: &str,
        printer: &Printer,
    ) -> anyhow::Result<()> {
        let mut error = None;
        let problems = reader
            .read(source, &mut |entry: sitemap::Entry| {
                if error.is_none() {
                    let url = ingest::parse_url(&entry.loc);
                    if let Err(e) = self.take_url(intake, &entry.loc, &entry.place, url, entry.lastmod, printer) {
                        error = Some(e);
                    }
                }
            })
            .await;
        if let Some(e) = error {
            return Err(e);
        }
        for problem in problems {
            printer.warn(&problem.to_string());
            let sitemap = strip_position(&problem.place);
            self.invalid_line(invalid(sitemap, &problem.place, LocalReason::Sitemap, problem.message))?;
        }
        self.flush(intake)
    }

    /// Takes one input URL: an invalid one is reported, a valid one is
    /// routed to each engine and target of its property and batched into
    /// the ledger.
    fn take_url(
        &mut self,
        intake: &mut Intake,
        text: &str,
        place: &str,
        url: Result<url::Url, String>,
        lastmod: Option<DateTime<Utc>>,
        printer: &Printer,
    ) -> anyhow::Result<()> {
        self.read += 1;
        self.progress.reading(self.read);
        let url = match url {
            Ok(url) => url,
            Err(why) => {
                printer.warn(&format!("{place}: `{text}`: {why}"));
                return self.invalid_line(invalid(text, place, LocalReason::InvalidUrl, why));
            }
        };
        let Some(property) = self.settings.property_for(&url) else {
            let why = "the URL is under no configured property's site".to_string();
            printer.warn(&format!("{place}: `{text}`: {why}"));
            return self.invalid_line(invalid(text, place, LocalReason::NoProperty, why));
        };
        if let Some(since) = intake.since {
            if lastmod.is_none_or(|l| l < since) {
                intake.before_since += 1;
                return Ok(());
            }
        }
        for group in intake.routes.get(&property.name).into_iter().flatten() {
            intake.batch.push(NewItem { url: url.to_string(), group: group.clone(), action: self.action, lastmod });
        }
        if intake.batch.len() >= ADMIT_BATCH {
            self.flush(intake)?;
        }
        Ok(())
    }

    /// Writes the batched URLs to the ledger (one transaction).
    fn flush(&mut self, intake: &mut Intake) -> anyhow::Result<()> {
        let batch = std::mem::take(&mut intake.batch);
        self.admit(&batch, intake, self.clock.now())
    }

    fn admit(&mut self, batch: &[NewItem], intake: &mut Intake, now: DateTime<Utc>) -> anyhow::Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let admissions: Vec<Option<Admission>> = if self.dry_run {
            self.plan_admissions(batch, &intake.rule, now)?
        } else {
            let admissions = self.ledger.admit(batch, now, &intake.rule)?;
            self.admitted += batch.len() as u64;
            admissions.into_iter().map(Some).collect()
        };
        let mut look_up = Vec::new();
        for (item, admission) in batch.iter().zip(admissions) {
            // A URL a dry run met before in this run: the same item.
            let Some(admission) = admission else { continue };
            if self.dry_run && matches!(admission, Admission::Queued { .. }) {
                self.plan_due(item, now)?;
            }
            let counts = intake.counts.entry(item.group.engine).or_default();
            match admission {
                Admission::Queued { fresh: true, .. } => counts.new += 1,
                Admission::Queued { fresh: false, .. } => counts.changed += 1,
                Admission::AlreadyQueued { id, next_attempt_at } if next_attempt_at.is_some_and(|t| t > now) => {
                    look_up.push(id)
                }
                Admission::AlreadyQueued { .. } => {}
                Admission::Skipped { id, accepted_at, unchanged } => {
                    let ago = crate::clock::humanize(now - accepted_at);
                    let (reason, message) = if unchanged {
                        counts.unchanged += 1;
                        (
                            LocalReason::Unchanged,
                            format!("not changed since it was accepted {ago} ago (no later lastmod)"),
                        )
                    } else {
                        (LocalReason::AlreadyAccepted, format!("accepted {ago} ago"))
                    };
                    let mut e = base_entry(&item.url, &item.group, Outcome::Skipped, reason);
                    e.message = message;
                    self.entry(id, e)?;
                }
                Admission::Parked { id } | Admission::InFlight { id } => look_up.push(id),
            }
        }
        for row in self.ledger.items_by_id(&look_up)? {
            let (outcome, reason) = match row.state {
                crate::model::ItemState::Parked => {
                    (Outcome::Misconfigured, row.last_reason.unwrap_or(LocalReason::Parked.into()))
                }
                crate::model::ItemState::InFlight => (Outcome::Deferred, LocalReason::InFlight.into()),
                _ => (Outcome::Deferred, row.last_reason.unwrap_or(LocalReason::Queued.into())),
            };
            let mut e = base_entry(&row.url, &row.group, outcome, reason);
            e.attempts = row.attempts;
            e.http_status = row.last_http_status;
            match row.state {
                crate::model::ItemState::Parked => {
                    e.message = row.last_message.unwrap_or_else(|| "parked by an earlier run".into());
                    e.hint = Some(
                        "fix the configuration (parked items are retried when it changes) or run `indexq queue retry`"
                            .into(),
                    );
                }
                crate::model::ItemState::InFlight => {
                    e.message = "another indexq run is sending it right now".into();
                }
                _ => {
                    // A quota wait is told in the quota's own timezone.
                    let tz = match row.last_class {
                        Some(Class::Quota) | None => self.rule_timezone(&row.group).unwrap_or(self.user_tz),
                        _ => self.user_tz,
                    };
                    e.message = row.last_message.unwrap_or_else(|| "waiting in the queue".into());
                    if let Some(t) = row.next_attempt_at {
                        e.set_retry(t, tz, now);
                    }
                }
            }
            self.entry(row.id, e)?;
        }
        Ok(())
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

    /// The budget rules of a group, with the pool its engine's credentials share.
    fn rules(&self, group: &GroupKey) -> Option<Vec<budget::Rule>> {
        let property = self.settings.property(&group.property)?;
        let pool = self.engines.get(&group.engine).and_then(|e| e.pool());
        Some(budget::rules_for(self.settings, property, group, pool.as_deref()))
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
        let mut on_deferred = |id: i64, url: &str, retry_at: DateTime<Utc>| {
            // The rule whose window ends then.
            let before = retry_at - TimeDelta::milliseconds(1);
            let tz = rules.iter().find(|r| r.window(before).resets_at == retry_at).map_or(self.user_tz, |r| r.tz);
            let mut e = base_entry(url, group, Outcome::Deferred, LocalReason::Budget);
            e.message =
                format!("the {} budget for {} is spent until its window reopens", group.engine.title(), group.property);
            e.set_retry(retry_at, tz, now);
            if let Err(err) = results.put(Key::Item(id), &e) {
                failure.get_or_insert(err);
            }
        };
        let claim = self.ledger.claim(
            group,
            &ClaimSpec { windows: &rules, max_items: max_batch, pace: pace.as_ref(), now: super::now(self.clock) },
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
        let title = crate::output::printer::group_title(group);
        tracing::info!(group = %title, urls = batch.urls.len(), "sending");
        let left =
            windows.iter().zip(&rules).filter(|(_, r)| r.limit.is_some()).map(|(w, _)| w).min_by_key(|w| w.resets_at);
        let remaining = match left {
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

        let blocks = quota_blocks(group, &rules, &windows, &sent, at);
        let quota_reset = blocks.iter().map(|b| b.until).max();
        let quota_tz = rules
            .iter()
            .zip(&windows)
            .find(|(_, w)| blocks.iter().any(|b| b.rule.rule == w.rule && b.until == w.resets_at))
            .map(|(r, _)| r.tz);

        // One decision per answer and item history (items sent together
        // retry together, with one jitter), and one record per answer and
        // outcome: the ledger stores each once, for every item it names.
        let mut decisions: HashMap<(usize, History), Decision> = HashMap::new();
        let mut answered: Vec<Answered> = Vec::new();
        let mut record_of: HashMap<(usize, Recorded), usize> = HashMap::new();
        for (item, &answer_index) in claim.items.iter().zip(&sent.per_url) {
            let answer = &sent.answers[answer_index];
            let history =
                History { last_class: item.last_class, streak: item.streak, streak_started_at: item.streak_started_at };
            let decision = decisions
                .entry((answer_index, history))
                .or_insert_with(|| {
                    schedule::decide(
                        &Inputs {
                            class: answer.verdict.class,
                            retry_after: answer.verdict.retry_after,
                            now: at,
                            history,
                            key_first_used,
                            quota_reset,
                            settings: &self.settings.retry,
                        },
                        rand::random::<f64>(),
                    )
                })
                .clone();
            let retry_tz = match quota_tz {
                Some(tz) if answer.verdict.class == Class::Quota && answer.verdict.retry_after.is_none() => tz,
                _ => self.user_tz,
            };
            let (recorded, entry) = outcome(group, item, answer, decision, at, retry_tz, &fingerprint);
            let index = *record_of.entry((answer_index, recorded.clone())).or_insert_with(|| {
                answered.push(Answered {
                    items: Vec::new(),
                    at,
                    class: recorded.class,
                    reason: recorded.reason,
                    message: recorded.message,
                    response: answer.response.clone(),
                    next: recorded.next,
                });
                answered.len() - 1
            });
            answered[index].items.push(item.id);
            self.entry(item.id, entry)?;
        }
        let refund = sent.per_url.iter().filter(|&&i| !sent.answers[i].reached).count() as u64;
        self.ledger.finish(&Finish { reservation, answers: answered, blocks, refund, windows })?;
        if let Some(c) = credential.filter(|_| sent.answers.iter().any(|a| a.verdict.class == Class::Accepted)) {
            self.ledger.credential_accepted(&c)?;
        }
        let quota_answer = sent.answers.iter().any(|a| a.verdict.class == Class::Quota);
        Ok(claim.retry_at.is_none() && claim.paced.is_empty() && !quota_answer && claim.items.len() == max_batch)
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
        Ok(engines::Batch {
            urls: claim.items.iter().map(|i| i.url.clone()).collect(),
            actions: claim.items.iter().map(|i| i.action).collect(),
            delays: claim.slots.iter().map(|t| (*t - now).to_std().unwrap_or_default()).collect(),
            inspect,
        })
    }

    /// Results and the human report's notes for the items a claim deferred:
    /// past the budget (until the window reopens) or past the pace.
    fn note_deferrals(
        &mut self,
        group: &GroupKey,
        rules: &[budget::Rule],
        windows: &[RuleWindow],
        claim: &Claim,
        now: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        if let Some(retry_at) = claim.retry_at {
            let (tz, window, usage) = self.binding_rule(rules, windows, retry_at)?;
            self.deferrals.push(Deferral {
                group: group.clone(),
                rule_tz: tz,
                used: usage.used,
                limit: usage.limit(&window),
                retry_at,
                blocked: usage.blocked_until.is_some_and(|t| t > now),
            });
        }
        for (id, url, at) in &claim.paced {
            let mut e = base_entry(url, group, Outcome::Deferred, LocalReason::Paced);
            e.message = format!(
                "within budget, but {} requests are paced to the configured rate; it goes at its slot",
                group.engine.title()
            );
            e.set_retry(*at, self.user_tz, now);
            self.entry(*id, e)?;
        }
        Ok(())
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
    async fn reported_quota(
        &mut self,
        group: &GroupKey,
        windows: &[RuleWindow],
    ) -> anyhow::Result<Vec<(crate::model::Period, u64)>> {
        let Some(answer) = self.engines[&group.engine].reported_quota(group).await else { return Ok(Vec::new()) };
        match answer {
            Ok(left) => Ok(left),
            Err(why) => {
                self.notes.push(format!(
                    "{}: could not read the quota {} reports ({why}); the local ledger decides this run{}.",
                    crate::output::printer::group_title(group),
                    group.engine.title(),
                    if windows.iter().any(|w| w.reported && w.limit.is_some()) {
                        format!(
                            " (with no local daily rule: {} a day, Bing's default for a new site)",
                            budget::BING_NEW_SITE_DAILY
                        )
                    } else {
                        String::new()
                    }
                ));
                Ok(Vec::new())
            }
        }
    }

    /// The timezone of the group's own daily rule.
    fn rule_timezone(&self, group: &GroupKey) -> Option<Tz> {
        self.rules(group)?.first().map(|r| r.tz)
    }

    /// The rule that holds the budget until `retry_at`: one with nothing
    /// left that frees up then (the latest of the exhausted ones).
    fn binding_rule(
        &mut self,
        rules: &[budget::Rule],
        windows: &[RuleWindow],
        retry_at: DateTime<Utc>,
    ) -> anyhow::Result<(Tz, RuleWindow, crate::model::Usage)> {
        let now = self.clock.now();
        let mut fallback = None;
        for (rule, window) in rules.iter().zip(windows) {
            let usage = self.ledger.usage(window)?;
            if usage.available_at(window, now) == Some(retry_at) {
                return Ok((rule.tz, window.clone(), usage));
            }
            fallback.get_or_insert((rule.tz, window.clone(), usage));
        }
        fallback.ok_or_else(|| anyhow::anyhow!("a budget deferral without a rule"))
    }
}

/// What a quota answer blocks, and until when: with `Retry-After`, the
/// group's own rules until then; without, the rules of the window the engine
/// named until that window ends — for Google, whose daily quota is the
/// Cloud project's, the shared pool too.
fn quota_blocks(
    group: &GroupKey,
    rules: &[budget::Rule],
    windows: &[RuleWindow],
    sent: &engines::Sent,
    at: DateTime<Utc>,
) -> Vec<Block> {
    let Some(answer) = sent.answers.iter().find(|a| a.verdict.class == Class::Quota) else { return Vec::new() };
    let mut blocks = Vec::new();
    for (rule, w) in rules.iter().zip(windows) {
        let pool = rule.scope == budget::Scope::Pool;
        let until = match answer.verdict.retry_after {
            Some(_) if pool => continue,
            Some(ra) => schedule::quota_retry_at(ra, at),
            None if pool && group.engine != EngineKind::Google => continue,
            None if w.period == answer.verdict.quota_window => w.resets_at,
            None => continue,
        };
        blocks.push(Block { rule: w.clone(), until });
    }
    blocks
}

/// What the ledger records of an answer for an item: the same for every
/// item of a request that got it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Recorded {
    class: Class,
    reason: Reason,
    message: String,
    next: NextStep,
}

/// What the ledger records of one item's answer, and its result.
fn outcome(
    group: &GroupKey,
    item: &crate::ledger::ClaimedItem,
    answer: &engines::Answer,
    decision: Decision,
    at: DateTime<Utc>,
    retry_tz: Tz,
    fingerprint: &str,
) -> (Recorded, ResultEntry) {
    let verdict = &answer.verdict;
    let mut e = base_entry(&item.url, group, verdict.class.into(), verdict.reason);
    e.message = verdict.message.clone();
    e.hint = verdict.hint.clone();
    e.http_status = answer.response.http_status;
    e.attempts = item.attempts + 1;
    let (class, next) = match decision {
        Decision::Accepted => {
            if answer.skipped {
                e.outcome = Outcome::Skipped;
            }
            (verdict.class, NextStep::Accepted)
        }
        Decision::RetryAt(t) => {
            e.set_retry(t, retry_tz, at);
            (verdict.class, NextStep::RetryAt(t))
        }
        Decision::Park { reason, message } => {
            if let Some(reason) = reason {
                e.outcome = Outcome::Misconfigured;
                e.reason = reason.into();
                e.message = format!("{} (last answer: {})", message.unwrap_or_default(), verdict.message);
                e.hint = Some(match verdict.class {
                    Class::KeyPending => {
                        "check that key_location serves exactly the key, or rotate the key (`indexq key generate`)"
                            .into()
                    }
                    _ => "check the endpoint and the network, then `indexq queue retry`".into(),
                });
            }
            (Class::Misconfigured, NextStep::Park { fingerprint: fingerprint.to_string() })
        }
    };
    (Recorded { class, reason: e.reason, message: e.message.clone(), next }, e)
}

/// "https://e.com/s.xml:3:14" → "https://e.com/s.xml".
fn strip_position(place: &str) -> &str {
    let is_number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match place.rsplitn(3, ':').collect::<Vec<_>>().as_slice() {
        [col, line, rest] if is_number(col) && is_number(line) => rest,
        _ => place,
    }
}

fn base_entry(url: &str, group: &GroupKey, outcome: Outcome, reason: impl Into<Reason>) -> ResultEntry {
    ResultEntry {
        url: url.to_string(),
        property: Some(group.property.clone()),
        engine: Some(group.engine),
        endpoint: (!group.target.is_empty()).then(|| group.target.clone()),
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

fn invalid(text: &str, place: &str, reason: LocalReason, message: String) -> ResultEntry {
    ResultEntry {
        url: text.to_string(),
        property: None,
        engine: None,
        endpoint: None,
        outcome: Outcome::Invalid,
        reason: reason.into(),
        message,
        hint: None,
        http_status: None,
        retry_at: None,
        retry_after_secs: None,
        attempts: 0,
        source: Some(place.to_string()),
        retry: None,
    }
}
