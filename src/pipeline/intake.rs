//! The intake: every input URL (URL lists, then sitemaps — or, with no
//! input, each property's configured `sources`, read with `--changed`)
//! read, routed to each engine and target of its property, and written to
//! the ledger in batches before anything is sent — `policy::admit` (in the ledger)
//! decides whether it is queued, and this file what the report says of it:
//! an `invalid` line, a URL left out by `--since`, one counted as new,
//! changed or unchanged (`--changed`), one skipped as accepted before, or
//! one already waiting, parked or in flight. What admission makes of a
//! batch is asked of the admission seam (`admission::Admit`): the ledger's
//! writing in a run, the `Plan` in a dry run. Once the run is stopped (`stop`), reading ends — a list at
//! the end of the line being read, a sitemap at once — and what was read
//! still goes to the ledger. Nothing here sends or classifies.

use super::admission::{Admit, Seat};
use super::findings::admitted::{admission_results, skipped_text};
use super::findings::Findings;
use super::findings::{base_entry, invalid};
use super::routes::Routes;
use super::stop::UntilStopped;
use super::Run;
use crate::budget_rules;
use crate::cli::SubmitArgs;
use crate::config::PropertySource;
use crate::engines;
use crate::ingest::{self, sitemap, StoredUrl};
use crate::ledger::{Admission, AdmitRule, NewItem};
use crate::model::lastmod::InFuture;
use crate::model::{
    Action, Channel, DocumentKind, EngineKind, GroupKey, LocalReason, Outcome, Position, SourceDocument, SourceFailure,
};
use crate::output::printer::Printer;
use crate::output::results::{Key, Template};
use crate::output::summary::PlanCounts;
use anyhow::Context as _;
use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// URLs written to the ledger per transaction while reading inputs.
const ADMIT_BATCH: usize = 10_000;

/// The variable that makes host names resolve to chosen addresses
/// (`name=address,…`), for tests and what-ifs.
const RESOLVE_VAR: &str = "INDEXQ_RESOLVE";

/// A sitemap reader for a run: `[http]`'s timeouts, host names resolved
/// through `INDEXQ_RESOLVE` first, `[sitemap] max_bytes`.
fn sitemap_reader(settings: &crate::config::Settings) -> anyhow::Result<sitemap::Reader> {
    let overrides = match std::env::var(RESOLVE_VAR) {
        Ok(text) => crate::net::resolve_overrides(&text)?,
        Err(std::env::VarError::NotPresent) => Default::default(),
        Err(e) => anyhow::bail!("{RESOLVE_VAR}: {e}"),
    };
    let client = engines::fetch_client_builder(&settings.http);
    let client = sitemap::FetchClient::new(client, sitemap::Pins::new(overrides))?;
    Ok(sitemap::Reader::new(client, settings.sitemap.max_bytes))
}

/// The intake phase: the run it reads for, the report that says what came
/// of each URL, the admission it asks (the ledger's writing, or a dry
/// run's plan), where each
/// property's URLs go, the batch being filled, the rule for URLs accepted
/// before, and the plan's counts.
pub(super) struct Admitting<'r, 'a> {
    run: &'r mut Run<'a>,
    findings: &'r mut Findings,
    /// What admission makes of each URL: written to the ledger, or (a dry
    /// run) planned.
    admission: &'r mut dyn Admit,
    routes: Routes,
    /// Only these properties' sources (`serve`'s `POST /v1/sources`).
    pub(super) only: Option<Vec<String>>,
    /// Whether reading the sources notes a property that has none and
    /// nothing queued (`submit`; not `serve`, whose properties may take
    /// their URLs from its API alone).
    hint_no_sources: bool,
    batch: Vec<NewItem>,
    rule: AdmitRule,
    since: Option<DateTime<Utc>>,
    /// What input URLs announce (Google: `--deleted`).
    action: Action,
    /// Per engine: the input's new, changed and unchanged URLs.
    pub(super) counts: BTreeMap<EngineKind, PlanCounts>,
    /// URLs left out by `--since`.
    pub(super) before_since: u64,
    /// The lastmods read later than the moment they were read
    /// (`say_in_future`).
    in_future: InFuture,
    /// The result the last URL skipped had, but for its URL (`skip`).
    skipped: Option<Skipped>,
    /// `--baseline`: what each batch queued is recorded as announced.
    baseline: bool,
}

/// A skipped URL's result made once for the URLs that share it: their
/// group, reason and message (`skipped_text`).
struct Skipped {
    group: Arc<GroupKey>,
    reason: LocalReason,
    message: String,
    template: Template,
}

impl<'r, 'a> Admitting<'r, 'a> {
    /// An intake for `run` that routes each property's URLs to the run's
    /// groups of URLs (a sitemap group takes its sitemap, `read_sources`)
    /// and admits them by `rule` through `admission`.
    pub(super) fn new(
        run: &'r mut Run<'a>,
        findings: &'r mut Findings,
        admission: &'r mut dyn Admit,
        rule: AdmitRule,
        since: Option<DateTime<Utc>>,
    ) -> Admitting<'r, 'a> {
        let routes = Routes::of(run.settings, run.known_groups());
        Admitting {
            run,
            findings,
            admission,
            routes,
            only: None,
            hint_no_sources: false,
            batch: Vec::with_capacity(ADMIT_BATCH),
            rule,
            since,
            action: Action::Updated,
            counts: BTreeMap::new(),
            before_since: 0,
            in_future: InFuture::default(),
            skipped: None,
            baseline: false,
        }
    }

    /// The intake of `submit`'s arguments: `--force`, `--changed`,
    /// `--since`, `--deleted`.
    pub(super) fn of_args(
        run: &'r mut Run<'a>,
        findings: &'r mut Findings,
        admission: &'r mut dyn Admit,
        args: &SubmitArgs,
    ) -> Admitting<'r, 'a> {
        // A baseline records what is new or changed since (the `--changed`
        // rule), which is what later runs of the sources compare with.
        let rule = AdmitRule {
            dedupe: TimeDelta::from_std(run.settings.submit.dedupe_window).unwrap_or(TimeDelta::MAX),
            force: args.force,
            changed: args.changed || args.baseline,
            resend_after: None,
        };
        let mut intake = Admitting::new(run, findings, admission, rule, args.since);
        intake.action = if args.deleted { Action::Deleted } else { Action::Updated };
        intake.hint_no_sources = true;
        intake.baseline = args.baseline;
        intake
    }
}

impl Admitting<'_, '_> {
    /// Reads every input into the ledger: the URL lists (opened already),
    /// then the sitemaps — or, given neither, the configured sources.
    pub(super) async fn read_inputs(
        &mut self,
        readers: Vec<(String, crate::ingest::Input)>,
        args: &SubmitArgs,
        printer: &Printer,
    ) -> anyhow::Result<()> {
        for (name, reader) in readers {
            if self.run.stop.requested() {
                self.findings.cut.input_cut = true;
                break;
            }
            self.ingest_list(&name, reader, printer)?;
        }
        // Sitemaps are fetched: no write lock held meanwhile (`begin_admissions`).
        self.run.ledger.end_admissions()?;
        if !args.sitemap.is_empty() {
            let settings = self.run.settings;
            let mut reader = sitemap_reader(settings)?;
            // A sitemap on the command line is no property's source: it may
            // reach its own host and what any property's sources may (all
            // of it the configuration's word).
            let hosts = settings.properties.iter().flat_map(|p| p.fetch_reach()).collect();
            reader.reach(sitemap::Reach::new(hosts, "the `fetch_hosts` of a property"));
            for source in &args.sitemap {
                if self.run.stop.requested() {
                    self.findings.cut.input_cut = true;
                    break;
                }
                self.ingest_sitemap(&mut reader, source, false, printer).await?;
            }
        }
        if reads_sources(args) {
            self.read_sources(printer).await?;
        }
        self.say_in_future(printer);
        Ok(())
    }

    /// Warns, once for all, of the lastmods read so far that were later
    /// than the moment they were read (admission takes each as that
    /// moment).
    pub(super) fn say_in_future(&mut self, printer: &Printer) {
        if let Some(warning) = self.in_future.take_warning() {
            printer.warn(&warning);
        }
    }

    /// Reads each property's configured `sources` (those of properties this
    /// run sends for), with `--changed`: a URL goes again only if its
    /// `lastmod` is later than its last acceptance. A remote `<urlset>`
    /// sitemap read before for the same groups is fetched conditionally
    /// (not with `--force`, `--since` or `--baseline`, which must see every
    /// URL): unchanged, it costs one 304 and no parse. What was read is kept
    /// in the ledger once its URLs are.
    pub(super) async fn read_sources(&mut self, printer: &Printer) -> anyhow::Result<()> {
        let settings = self.run.settings;
        self.rule.changed = true;
        let known = self.run.known_groups();
        let routes = routes_digest(&known);
        let conditional = !self.rule.force && self.since.is_none() && !self.baseline;
        let mut reader = sitemap_reader(settings)?;
        let stored = self.run.ledger.source_documents()?;
        if conditional {
            reader.remember(known_documents(stored.clone(), &routes));
        }
        let sitemap_groups: Vec<&GroupKey> = known.iter().filter(|g| g.channel == Channel::Sitemaps).collect();
        let only = self.only.clone();
        let sending: Vec<_> = settings
            .properties
            .iter()
            .filter(|p| self.routes.routes_property(&p.name) || sitemap_groups.iter().any(|g| g.property == p.name))
            .filter(|p| only.as_ref().is_none_or(|o| o.contains(&p.name)))
            .collect();
        for property in sending {
            let listed_in = format!("`fetch_hosts` of property `{}`", property.name);
            reader.reach(sitemap::Reach::new(property.fetch_reach(), listed_in));
            if property.sources.is_empty() && self.hint_no_sources {
                self.no_sources(property)?;
            }
            for source in &property.sources {
                match source {
                    PropertySource::List(path) => {
                        let name = path.display().to_string();
                        let failed = match ingest::Source::File(path.clone()).open() {
                            Ok(reader) => {
                                self.ingest_list(&name, reader, printer)?;
                                None
                            }
                            Err(e) => Some((LocalReason::SourceUnreadable, e.to_string())),
                        };
                        self.source_read(&property.name, &name, failed)?;
                    }
                    // Told by its content: XML (gzipped or not) is a sitemap, text a URL list.
                    PropertySource::File(path) => {
                        let name = path.display().to_string();
                        let failed = match sitemap::open_by_content(path) {
                            Ok(sitemap::FileContent::Text(reader)) => {
                                self.ingest_list(&name, reader, printer)?;
                                None
                            }
                            Ok(sitemap::FileContent::Sitemap) => {
                                let source =
                                    SitemapSource { property: &property.name, sitemap: &name, routes: &routes };
                                self.read_sitemap_source(&mut reader, source, &stored, &sitemap_groups, printer).await?
                            }
                            Err(e) => Some((LocalReason::SourceUnreadable, e.to_string())),
                        };
                        self.source_read(&property.name, &name, failed)?;
                    }
                    PropertySource::Sitemap(sitemap) => {
                        let source = SitemapSource { property: &property.name, sitemap, routes: &routes };
                        let failed =
                            self.read_sitemap_source(&mut reader, source, &stored, &sitemap_groups, printer).await?;
                        self.source_read(&property.name, sitemap, failed)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// What a read of a property's source came to (`failed`: the reason
    /// and message of a read that failed as a whole), kept by the admission
    /// (in the ledger; a dry run keeps nothing): a failure for the reminders (`Findings::source_failures`,
    /// said once per `[submit] remind`), a read that works again for one
    /// `resumed:` line.
    fn source_read(
        &mut self,
        property: &str,
        source: &str,
        failed: Option<(LocalReason, String)>,
    ) -> anyhow::Result<()> {
        let now = self.run.clock.now();
        match failed {
            Some((reason, message)) => {
                let failure = SourceFailure {
                    property: property.to_string(),
                    source: source.to_string(),
                    reason,
                    message,
                    since: now,
                    failed_at: now,
                    reminded_at: None,
                };
                let kept = self.admission.source_failed(self.run.ledger.as_mut(), failure)?;
                self.findings.source_failures.push(kept);
            }
            None => {
                if let Some(was) = self.admission.source_read(self.run.ledger.as_mut(), property, source)? {
                    self.findings.resumed.push(format!(
                        "the source {source} of {property} reads again (it could not be read since {}, {}).",
                        crate::clock::format_local(was.since, self.run.user_tz),
                        was.reason
                    ));
                }
            }
        }
        Ok(())
    }

    /// A property with no `sources` whose groups have nothing queued: a
    /// run that reads the sources has nothing of it to send, and says so
    /// with the line to add.
    fn no_sources(&mut self, property: &crate::config::Property) -> anyhow::Result<()> {
        let now = self.run.clock.now();
        let groups: Vec<GroupKey> =
            self.run.known_groups().into_iter().filter(|g| g.property == property.name).collect();
        for group in &groups {
            let counts = self.run.ledger.queue_counts(group, now)?;
            if counts.due + counts.waiting > 0 {
                return Ok(());
            }
        }
        let sitemap = property.site.join("sitemap.xml").map_or_else(|_| "https://…/sitemap.xml".into(), String::from);
        self.findings.notes.push(format!(
            "{} has no `sources` and nothing queued: add `sources = [\"{sitemap}\"]` to its [[property]] in {} \
             (a sitemap, a robots.txt or a URL-list file), or give `indexq submit` the URLs",
            property.name,
            self.run.settings.file.display()
        ));
        Ok(())
    }

    /// Reads a property's configured sitemap, keeps what was read of it
    /// (once its URLs are in the ledger; a plan, or a run with `--since`,
    /// reckons the changes as a run would from what the ledger keeps,
    /// `stored`), and when it changed puts its submission in the queue of
    /// its `sitemap_groups`.
    async fn read_sitemap_source(
        &mut self,
        reader: &mut sitemap::Reader,
        source: SitemapSource<'_>,
        stored: &[SourceDocument],
        sitemap_groups: &[&GroupKey],
        printer: &Printer,
    ) -> anyhow::Result<Option<(LocalReason, String)>> {
        let SitemapSource { property, sitemap, routes } = source;
        let (latest, failed) = self.ingest_sitemap(reader, sitemap, true, printer).await?;
        let fetched = reader.take_fetched();
        let now = self.run.clock.now();
        let documents: Vec<SourceDocument> =
            fetched.into_iter().filter(|f| f.clean).map(|f| document(f, routes, now)).collect();
        // Kept once its URLs are in the ledger; a run that
        // keeps nothing reckons the changes as a run would.
        let recorded = match self.since.is_none() && !documents.is_empty() {
            true => self.admission.keep_documents(self.run.ledger.as_mut(), &documents)?,
            false => None,
        };
        let kept = recorded.unwrap_or_else(|| {
            crate::model::kept_changes(&documents, |url| {
                stored.iter().find(|d| d.url == url).map(|d| (d.digest.as_str(), d.changed_at))
            })
        });
        let groups: Vec<GroupKey> = sitemap_groups
            .iter()
            .filter(|g| g.property == property && g.target == *sitemap)
            .map(|g| (*g).clone())
            .collect();
        if let Some(changed) = sitemap_changed(&kept, latest, now) {
            self.admit_sitemap(&groups, sitemap, changed, now)?;
        }
        Ok(failed.map(|(failure, message)| (source_reason(failure), message)))
    }

    /// Reads a URL list into the ledger (until the end of the line being
    /// read when the run is stopped).
    fn ingest_list(&mut self, name: &str, reader: crate::ingest::Input, printer: &Printer) -> anyhow::Result<()> {
        let mut error = None;
        let mut reader = UntilStopped::new(reader, self.run.stop.stop_signal().clone());
        let read = ingest::read_lines(name, &mut reader, |line| {
            if error.is_none() {
                if let Err(e) = self.take_url(line.text.as_deref(), &line.place, line.url, None, printer) {
                    error = Some(e);
                }
            }
        });
        self.findings.cut.input_cut |= reader.cut;
        if let Some(e) = error {
            return Err(e);
        }
        read.with_context(|| format!("reading {name}"))?;
        self.flush()
    }

    /// Reads a sitemap (index, robots.txt) into the ledger. A problem with
    /// one sitemap is an `invalid` result naming its place; the rest goes on.
    /// A stop ends the reading at once (the URLs read so far are kept).
    /// Returns the latest `lastmod` read and, for a property's source
    /// (`configured`), how it failed as a whole if it did: such a failure
    /// is the source's problem, said by the reminders, not an `invalid`
    /// result of every run that reads it.
    async fn ingest_sitemap(
        &mut self,
        reader: &mut sitemap::Reader,
        source: &str,
        configured: bool,
        printer: &Printer,
    ) -> anyhow::Result<(Option<DateTime<Utc>>, Option<(sitemap::Failure, String)>)> {
        let mut error = None;
        let mut latest: Option<DateTime<Utc>> = None;
        let stop_signal = self.run.stop.stop_signal().clone();
        let mut take = |entry: sitemap::Entry| {
            latest = latest.max(entry.lastmod);
            if error.is_none() {
                let (loc, url) = ingest::parse_line(entry.loc);
                if let Err(e) = self.take_url(loc.as_deref(), &entry.place, url, entry.lastmod, printer) {
                    error = Some(e);
                }
            }
        };
        let problems = tokio::select! {
            problems = reader.read(source, &mut take) => Some(problems),
            () = stop_signal.stopped() => None,
        };
        let Some(problems) = problems else {
            self.findings.cut.input_cut = true;
            return match error {
                Some(e) => Err(e),
                None => self.flush().map(|()| (latest, None)),
            };
        };
        if let Some(e) = error {
            return Err(e);
        }
        let failed = reader.take_failure().filter(|_| configured);
        // A source that failed as a whole: its problems are its failure's.
        for problem in problems.into_iter().filter(|_| failed.is_none()) {
            printer.invalid(&problem.to_string());
            let sitemap = problem.place.source.clone();
            self.findings.line(invalid(&sitemap, &problem.place, LocalReason::Sitemap, problem.message))?;
        }
        self.flush().map(|()| (latest, failed))
    }

    /// Puts a sitemap's submission in the queue of each of its `groups`
    /// (the engines it goes to), as of `changed` (when it last changed):
    /// new to a group, it goes now; accepted before and changed since, it
    /// goes again — not sooner than `SITEMAP_RESUBMIT_AFTER` after its last
    /// submission (unless `--force`), the changes meanwhile going with it;
    /// queued, it stays so. Nothing is said of it here: what comes of its
    /// submission is its result, and an unchanged sitemap has none.
    fn admit_sitemap(
        &mut self,
        groups: &[GroupKey],
        sitemap: &str,
        changed: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        if groups.is_empty() {
            return Ok(());
        }
        let rule = AdmitRule { changed: true, resend_after: Some(budget_rules::SITEMAP_RESUBMIT_AFTER), ..self.rule };
        let batch: Vec<NewItem> = groups
            .iter()
            .map(|g| NewItem {
                url: sitemap.to_string(),
                group: g.clone().into(),
                action: Action::Updated,
                lastmod: Some(changed),
                zone: self.routes.zone(&g.property),
            })
            .collect();
        let seat = Seat { ledger: self.run.ledger.as_mut(), findings: self.findings, user_tz: self.run.user_tz };
        self.admission.admit_sitemap(seat, &batch, &rule, now)
    }

    /// Takes one input URL: an invalid one is reported (once: on stderr as
    /// it is read, or with `-q` at the report's end, or in the `--json`
    /// document), a valid one is routed to each engine and target of its
    /// property and batched into the ledger.
    /// `text` is the input as read, `None` when it is the URL's own text.
    fn take_url(
        &mut self,
        text: Option<&str>,
        place: &Position,
        url: Result<StoredUrl, String>,
        lastmod: Option<DateTime<Utc>>,
        printer: &Printer,
    ) -> anyhow::Result<()> {
        self.findings.read += 1;
        self.run.progress.reading(self.findings.read);
        let url = match url {
            Ok(url) => url,
            Err(why) => {
                let text = text.unwrap_or_default();
                printer.invalid(&format!("{place}: `{text}`: {why}"));
                return self.findings.line(invalid(text, place, LocalReason::InvalidUrl, why));
            }
        };
        let Some(property) = self.run.settings.property_for(url.as_str()) else {
            let text = text.unwrap_or(url.as_str());
            let why = "the URL is under no configured property's site".to_string();
            printer.invalid(&format!("{place}: `{text}`: {why}"));
            return self.findings.line(invalid(text, place, LocalReason::NoProperty, why));
        };
        // A lastmod later than now is taken as now, for `--since` as for
        // admission (`policy::changed_since`).
        let lastmod_now = lastmod.map(|l| {
            let now = self.run.clock.now();
            self.in_future.note(url.as_str(), Some(l), property.timezone, now);
            l.min(now)
        });
        if before_since(self.since, lastmod_now) {
            self.before_since += 1;
            return Ok(());
        }
        let routed = (self.action, lastmod);
        if let Some(e) = self.routes.route(&property.name, url, routed, (text, place), &mut self.batch) {
            printer.invalid(&format!("{place}: `{}`: {}", e.url, e.message));
            self.findings.line(e)?;
        }
        if self.batch.len() >= ADMIT_BATCH {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the batched URLs to the ledger (one transaction).
    fn flush(&mut self) -> anyhow::Result<()> {
        let batch = std::mem::take(&mut self.batch);
        self.admit(&batch, self.run.clock.now())
    }

    /// Admits a batch (written to the ledger, or a dry run's plan), counts
    /// what it made of each URL and says what the report needs to.
    fn admit(&mut self, batch: &[NewItem], now: DateTime<Utc>) -> anyhow::Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let seat = Seat { ledger: self.run.ledger.as_mut(), findings: self.findings, user_tz: self.run.user_tz };
        let admissions = self.admission.admit(seat, batch, &self.rule, now)?;
        let mut admitted = Vec::with_capacity(batch.len());
        for (item, admission) in batch.iter().zip(admissions) {
            // A URL a dry run met before in this run: the same item.
            let Some(admission) = admission else { continue };
            if matches!(admission, Admission::Queued { .. }) {
                let seat =
                    Seat { ledger: self.run.ledger.as_mut(), findings: self.findings, user_tz: self.run.user_tz };
                self.admission.queued(seat, item, now)?;
            }
            count(self.counts.entry(item.group.engine).or_default(), &admission);
            admitted.push((item, admission));
        }
        if self.baseline {
            // What the batch left queued is announced now (`announce`): not
            // waiting, and not this run's to tell.
            let queued = |a: &Admission| {
                matches!(a, Admission::Queued { .. } | Admission::Requeued { .. } | Admission::AlreadyQueued { .. })
            };
            admitted.retain(|(_, a)| !queued(a));
        }
        self.tell_admitted(&admitted, now)
    }

    /// Says what the report needs to of the admitted URLs, in their order
    /// (`admission_results`; a skipped URL of a group of URLs by `skip`): a quota wait in
    /// the timezone of its group's rule.
    fn tell_admitted(&mut self, admitted: &[(&NewItem, Admission)], now: DateTime<Utc>) -> anyhow::Result<()> {
        let shared = |item: &NewItem, a: &Admission| {
            matches!(a, Admission::Skipped { .. }) && item.group.channel == Channel::Urls
        };
        let others: Vec<(&NewItem, Admission)> =
            admitted.iter().filter(|(item, a)| !shared(item, a)).map(|(item, a)| (*item, a.clone())).collect();
        let mut tzs: FxHashMap<&GroupKey, Option<Tz>> = FxHashMap::default();
        // Each group once: the URLs of a group come in runs, each URL's the
        // same `Arc` as the one before (not a hash of its strings a URL).
        let mut last: Option<&Arc<GroupKey>> = None;
        for (item, _) in &others {
            if last.is_some_and(|last| Arc::ptr_eq(last, &item.group)) {
                continue;
            }
            last = Some(&item.group);
            tzs.entry(&item.group).or_insert_with(|| self.run.rule_timezone(&item.group));
        }
        let rule_tz = |g: &GroupKey| tzs.get(g).copied().flatten();
        let mut told =
            admission_results(self.run.ledger.as_mut(), &others, now, self.run.user_tz, &rule_tz)?.into_iter();
        // The last skipped URL's text, made again only for another instant
        // (the URLs of a batch were accepted at one).
        let mut text: Option<(TimeDelta, bool, (LocalReason, String))> = None;
        for (item, admission) in admitted {
            if let (true, Admission::Skipped { id, accepted_at, unchanged }) = (shared(item, admission), admission) {
                let ago = now - *accepted_at;
                let (_, _, (reason, message)) = match text {
                    Some((at, u, _)) if at == ago && u == *unchanged => text.as_ref().expect("matched"),
                    _ => text.insert((ago, *unchanged, skipped_text(ago, *unchanged))),
                };
                self.skip(item, *id, *reason, message)?;
                continue;
            }
            let Some((id, e)) = told.next().flatten() else { continue };
            // Parked before this run: said by the reminders.
            if e.outcome == Outcome::Misconfigured {
                self.findings.parked_before += 1;
            }
            self.findings.found(id, *e)?;
        }
        Ok(())
    }

    /// A skipped URL's result: the last one's, but for its URL, when they
    /// share group, reason and message (a run again over 100k URLs accepted
    /// together makes one); else made anew.
    fn skip(&mut self, item: &NewItem, id: i64, reason: LocalReason, message: &str) -> anyhow::Result<()> {
        let results = &mut self.findings.results;
        // A group's URLs share one `Arc`: its strings are compared only
        // where another group's might be the same.
        let same_group = |s: &Skipped| Arc::ptr_eq(&s.group, &item.group) || s.group == item.group;
        let same = |s: &&Skipped| s.reason == reason && s.message == message && same_group(s);
        let template = match self.skipped.as_ref().filter(same) {
            Some(last) => &last.template,
            None => {
                let mut e = base_entry(&item.url, &item.group, Outcome::Skipped, reason);
                e.message = message.to_string();
                let template = results.template(&e)?;
                let (group, message) = (item.group.clone(), e.message);
                &self.skipped.insert(Skipped { group, reason, message, template }).template
            }
        };
        Ok(results.put_like_over(template, Key::Item(id), &item.url)?)
    }
}

/// The reason a property's source failed as a whole: the status it
/// answered with, or how it could not be fetched or read.
fn source_reason(failure: sitemap::Failure) -> LocalReason {
    match failure {
        sitemap::Failure::Status(404 | 410) => LocalReason::SourceNotFound,
        sitemap::Failure::Status(500..=599) => LocalReason::SourceServerError,
        sitemap::Failure::Status(_) => LocalReason::SourceRefused,
        sitemap::Failure::Timeout => LocalReason::SourceTimeout,
        sitemap::Failure::Dns => LocalReason::SourceDns,
        sitemap::Failure::Tls => LocalReason::SourceTls,
        sitemap::Failure::Connect => LocalReason::SourceUnreachable,
        sitemap::Failure::NotAllowed => LocalReason::SourceNotAllowed,
        sitemap::Failure::Unreadable => LocalReason::SourceUnreadable,
        sitemap::Failure::NotASitemap => LocalReason::SourceNotASitemap,
    }
}

/// A property's configured sitemap, as `read_sources` reads it: the
/// property, the sitemap's address, and the routes' digest its documents
/// are kept with.
struct SitemapSource<'s> {
    property: &'s str,
    sitemap: &'s str,
    routes: &'s str,
}

/// Whether a run reads the configured sources: given no input, unless
/// `--no-sources`.
fn reads_sources(args: &SubmitArgs) -> bool {
    args.inputs.is_empty() && args.sitemap.is_empty() && !args.no_sources
}

/// The groups a run routes URLs to, as a digest: a sitemap read for other
/// groups is read again in full.
fn routes_digest(groups: &[GroupKey]) -> String {
    let mut parts: Vec<String> = groups
        .iter()
        .filter(|g| g.channel == Channel::Urls)
        .map(|g| format!("{}\t{}\t{}", g.property, g.engine.as_str(), g.target))
        .collect();
    parts.sort();
    engines::digest(&parts.iter().map(String::as_str).collect::<Vec<_>>())
}

/// What earlier runs read, for a reader: the `<urlset>` sitemaps read for
/// the same groups (an index is always read in full: a child may change
/// while the index does not).
fn known_documents(documents: Vec<SourceDocument>, routes: &str) -> HashMap<String, sitemap::Known> {
    documents
        .into_iter()
        .filter(|d| d.kind == DocumentKind::Urlset && d.routes == routes)
        .map(|d| (d.url, sitemap::Known { etag: d.etag, last_modified: d.last_modified, digest: d.digest }))
        .collect()
}

/// A sitemap fetched, as the ledger keeps it.
fn document(f: sitemap::Fetched, routes: &str, now: DateTime<Utc>) -> SourceDocument {
    SourceDocument {
        url: f.url,
        etag: f.etag,
        last_modified: f.last_modified,
        digest: f.digest,
        kind: if f.index { DocumentKind::Index } else { DocumentKind::Urlset },
        routes: routes.to_string(),
        fetched_at: now,
        changed_at: now,
    }
}

/// When a sitemap read for a source last changed, from what was read of
/// it (`kept`: the sitemap and the sitemaps under it, as the ledger keeps
/// them) and the latest `lastmod` in it (`latest`, never later than `now`):
/// the later of the two. `None` when nothing of it was read.
fn sitemap_changed(
    kept: &[SourceDocument],
    latest: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let documents = kept.iter().map(|d| d.changed_at).max()?;
    Some(latest.map_or(documents, |l| documents.max(l.min(now))))
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
        Admission::Queued { fresh: false } | Admission::Requeued { .. } => counts.changed += 1,
        Admission::Skipped { unchanged: true, .. } => counts.unchanged += 1,
        Admission::AlreadyQueued { .. }
        | Admission::Skipped { unchanged: false, .. }
        | Admission::Parked { .. }
        | Admission::InFlight { .. } => {}
    }
}

#[cfg(test)]
mod tests;
