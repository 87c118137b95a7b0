//! The intake: every input URL (URL lists, then sitemaps) read, routed to
//! each engine and target of its property, and written to the ledger in
//! batches before anything is sent — `policy::admit` (in the ledger)
//! decides whether it is queued, and this file what the report says of it:
//! an `invalid` line, a URL left out by `--since`, one counted as new,
//! changed or unchanged (`--changed`), one skipped as accepted before, or
//! one already waiting, parked or in flight. A dry run asks `plan` instead
//! of writing. Nothing here sends or classifies.

use super::{base_entry, Run};
use crate::cli::SubmitArgs;
use crate::engines;
use crate::ingest::{self, sitemap};
use crate::ledger::{Admission, AdmitRule, ItemRow, NewItem};
use crate::model::{Class, EngineKind, GroupKey, ItemState, Outcome};
use crate::report::{PlanCounts, Printer, ResultEntry};
use anyhow::Context as _;
use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use std::collections::{BTreeMap, HashMap};

/// URLs written to the ledger per transaction while reading inputs.
const ADMIT_BATCH: usize = 10_000;

/// What reading the inputs needs: where each property's URLs go, the batch
/// being filled, the rule for URLs accepted before, and the plan's counts.
pub(super) struct Intake {
    routes: HashMap<String, Vec<GroupKey>>,
    batch: Vec<NewItem>,
    rule: AdmitRule,
    since: Option<DateTime<Utc>>,
    /// Per engine: the input's new, changed and unchanged URLs.
    pub(super) counts: BTreeMap<EngineKind, PlanCounts>,
    /// URLs left out by `--since`.
    pub(super) before_since: u64,
}

impl Intake {
    /// An intake that routes each property's URLs to its `groups`.
    fn new(groups: Vec<GroupKey>, rule: AdmitRule, since: Option<DateTime<Utc>>) -> Intake {
        let mut intake = Intake {
            routes: HashMap::new(),
            batch: Vec::with_capacity(ADMIT_BATCH),
            rule,
            since,
            counts: BTreeMap::new(),
            before_since: 0,
        };
        for group in groups {
            intake.routes.entry(group.property.clone()).or_default().push(group);
        }
        intake
    }
}

impl Run<'_> {
    /// Reads every input into the ledger: the URL lists (opened already),
    /// then the sitemaps.
    pub(super) async fn read_inputs(
        &mut self,
        readers: Vec<(String, Box<dyn std::io::BufRead>)>,
        args: &SubmitArgs,
        printer: &Printer,
    ) -> anyhow::Result<Intake> {
        let rule = AdmitRule {
            dedupe: TimeDelta::from_std(self.settings.submit.dedupe_window).unwrap_or(TimeDelta::MAX),
            force: args.force,
            changed: args.changed,
        };
        let mut intake = Intake::new(self.known_groups(), rule, args.since);
        for (name, reader) in readers {
            self.ingest_list(&mut intake, &name, reader, printer)?;
        }
        if !args.sitemap.is_empty() {
            let settings = self.settings;
            let mut reader = sitemap::Reader::new(engines::fetch_client(&settings.http)?, settings.sitemap.max_bytes);
            for source in &args.sitemap {
                self.ingest_sitemap(&mut intake, &mut reader, source, printer).await?;
            }
        }
        Ok(intake)
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
            self.invalid_line(invalid(sitemap, &problem.place, "sitemap", problem.message))?;
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
                return self.invalid_line(invalid(text, place, "invalid_url", why));
            }
        };
        let Some(property) = self.settings.property_for(&url) else {
            let why = "the URL is under no configured property's site".to_string();
            printer.warn(&format!("{place}: `{text}`: {why}"));
            return self.invalid_line(invalid(text, place, "no_property", why));
        };
        if before_since(intake.since, lastmod) {
            intake.before_since += 1;
            return Ok(());
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

    /// Writes a batch to the ledger (a dry run: plans it), counts what it
    /// made of each URL and says what the report needs to.
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
            count(intake.counts.entry(item.group.engine).or_default(), &admission);
            match told(item, admission, now) {
                Told::Nothing => {}
                Told::Result(id, e) => self.entry(id, *e)?,
                Told::FromRow(id) => look_up.push(id),
            }
        }
        for row in self.ledger.items_by_id(&look_up)? {
            let id = row.id;
            let e = row_entry(row, self.user_tz, |group| self.rule_timezone(group), now);
            self.entry(id, e)?;
        }
        Ok(())
    }
}

/// Whether `--since` leaves a URL out: it has no `lastmod`, or an earlier one.
fn before_since(since: Option<DateTime<Utc>>, lastmod: Option<DateTime<Utc>>) -> bool {
    since.is_some_and(|since| lastmod.is_none_or(|l| l < since))
}

/// Counts an admitted URL in the plan: new to the ledger, changed (sent
/// again), or unchanged (`--changed`, not sent).
fn count(counts: &mut PlanCounts, admission: &Admission) {
    match admission {
        Admission::Queued { fresh: true } => counts.new += 1,
        Admission::Queued { fresh: false } => counts.changed += 1,
        Admission::Skipped { unchanged: true, .. } => counts.unchanged += 1,
        Admission::AlreadyQueued { .. }
        | Admission::Skipped { unchanged: false, .. }
        | Admission::Parked { .. }
        | Admission::InFlight { .. } => {}
    }
}

/// What the report says of an admitted URL now.
#[derive(Debug)]
enum Told {
    /// Nothing yet: it is due, and this run sends it (or plans it).
    Nothing,
    /// Its result: accepted before and not sent again.
    Result(i64, Box<ResultEntry>),
    /// Its result is its ledger item's state: waiting for a later attempt,
    /// parked, or in flight.
    FromRow(i64),
}

fn told(item: &NewItem, admission: Admission, now: DateTime<Utc>) -> Told {
    match admission {
        Admission::Queued { .. } => Told::Nothing,
        Admission::AlreadyQueued { id, next_attempt_at } if next_attempt_at.is_some_and(|t| t > now) => {
            Told::FromRow(id)
        }
        Admission::AlreadyQueued { .. } => Told::Nothing,
        Admission::Skipped { id, accepted_at, unchanged } => {
            let mut e = base_entry(&item.url, &item.group, Outcome::Skipped);
            if unchanged {
                e.reason = "unchanged".into();
                e.message = format!(
                    "not changed since it was accepted {} ago (no later lastmod)",
                    crate::clock::humanize(now - accepted_at)
                );
            } else {
                e.reason = "already_accepted".into();
                e.message = format!("accepted {} ago", crate::clock::humanize(now - accepted_at));
            }
            Told::Result(id, Box::new(e))
        }
        Admission::Parked { id } | Admission::InFlight { id } => Told::FromRow(id),
    }
}

/// The result of a URL whose item the ledger holds already: parked (with
/// the answer that parked it), in flight in another run, or waiting for its
/// next attempt. A quota wait is told in the timezone of the group's rule
/// (`rule_tz`), any other in the user's.
fn row_entry(
    row: ItemRow,
    user_tz: Tz,
    rule_tz: impl FnOnce(&GroupKey) -> Option<Tz>,
    now: DateTime<Utc>,
) -> ResultEntry {
    let mut e = base_entry(&row.url, &row.group, Outcome::Deferred);
    e.attempts = row.attempts;
    e.http_status = row.last_http_status;
    match row.state {
        ItemState::Parked => {
            e.outcome = Outcome::Misconfigured;
            e.reason = row.last_reason.unwrap_or_else(|| "parked".into());
            e.message = row.last_message.unwrap_or_else(|| "parked by an earlier run".into());
            e.hint = Some(
                "fix the configuration (parked items are retried when it changes) or run `indexq queue retry`".into(),
            );
        }
        ItemState::InFlight => {
            e.reason = "in_flight".into();
            e.message = "another indexq run is sending it right now".into();
        }
        _ => {
            // A quota wait is told in the quota's own timezone.
            let tz = match row.last_class {
                Some(Class::Quota) | None => rule_tz(&row.group).unwrap_or(user_tz),
                _ => user_tz,
            };
            e.reason = row.last_reason.unwrap_or_else(|| "queued".into());
            e.message = row.last_message.unwrap_or_else(|| "waiting in the queue".into());
            if let Some(t) = row.next_attempt_at {
                e.set_retry(t, tz, now);
            }
        }
    }
    e
}

/// "https://e.com/s.xml:3:14" → "https://e.com/s.xml".
fn strip_position(place: &str) -> &str {
    let is_number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match place.rsplitn(3, ':').collect::<Vec<_>>().as_slice() {
        [col, line, rest] if is_number(col) && is_number(line) => rest,
        _ => place,
    }
}

/// The result of an input line that never became a queue item.
fn invalid(text: &str, place: &str, reason: &str, message: String) -> ResultEntry {
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
