//! What the unit tests of the phases share: a run on a SQLite ledger in a
//! temporary directory, whose engine answers from a script (no HTTP; the
//! integration tests in `tests/it` run the real engines against mock
//! servers), and its results read back as JSON.

use super::admission::Writing;
use super::findings::Findings;
use super::intake::Admitting;
use super::send::Sender;
use super::Run;
use crate::budget_rules::{Rule, Scope};
use crate::classify::Verdict;
use crate::clock::Clock;
use crate::config::Settings;
use crate::engines::{Answer, Batch, Engine, Sent, StopSignal};
use crate::ledger::{AdmitRule, ItemFilter, ItemRow, NewItem, Owner, SqliteLedger};
use crate::model::{Action, Class, EngineKind, GroupKey, Period, Reason, StoredResponse};
use crate::output::printer::{Printer, Verbosity};
use crate::output::results::Results;
use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One property, `site`, on `https://site.example/`, sent to IndexNow's
/// default endpoint; `extra` goes in its `indexnow` table.
pub(super) fn settings(extra: &str) -> Settings {
    let text = format!(
        "[[property]]\nname = \"site\"\nsite = \"https://site.example/\"\nindexnow = {{ key_env = \"K\"{extra} }}\n"
    );
    crate::config::parse(std::path::Path::new("indexq.toml"), &text).expect("the test configuration parses")
}

/// The group of `settings`' property.
pub(super) fn group(settings: &Settings) -> GroupKey {
    crate::budget_rules::groups(settings).remove(0)
}

/// The group of `settings("")`.
pub(super) fn site_group() -> GroupKey {
    group(&settings(""))
}

pub(super) fn at(text: &str) -> DateTime<Utc> {
    text.parse().expect("an RFC 3339 instant")
}

pub(super) const PRINTER: Printer = Printer { json: true, verbosity: Verbosity::Quiet };

/// An IndexNow stand-in: batches of at most `max_batch`, each answered as
/// `answer` says, and every batch's URLs kept.
pub(super) struct Scripted {
    pub max_batch: usize,
    pub answer: Box<dyn Fn(&Batch) -> Sent + Send + Sync>,
    pub batches: Arc<Mutex<Vec<Vec<String>>>>,
}

impl Scripted {
    /// Every batch answered with one verdict of `class` (`reason`).
    pub(super) fn answering(class: Class, reason: &'static str, max_batch: usize) -> Scripted {
        Scripted { max_batch, answer: Box::new(move |b| whole(class, reason, b)), batches: Arc::default() }
    }
}

/// A verdict of `class` whose reason is named `reason` (one of that class).
pub(super) fn verdict(class: Class, reason: &str) -> Verdict {
    let of_class = Reason::of_class(class, reason).expect("a reason of the class");
    Verdict::of_reason(of_class, format!("the engine said {reason}")).expect("a class reason")
}

/// One answer (HTTP 200 for `accepted`, else 500) for the whole batch.
pub(super) fn whole(class: Class, reason: &str, batch: &Batch) -> Sent {
    let status = if class == Class::Accepted { 200 } else { 500 };
    let answer = Answer {
        verdict: verdict(class, reason),
        response: StoredResponse { http_status: Some(status), body: None },
        reached: true,
        skipped: false,
    };
    Sent::whole(answer, batch.urls.len())
}

#[async_trait]
impl Engine for Scripted {
    fn max_batch(&self) -> usize {
        self.max_batch
    }

    fn fingerprint(&self, _group: &GroupKey) -> String {
        "fingerprint".into()
    }

    fn credential(&self, _group: &GroupKey) -> Option<String> {
        None
    }

    async fn send(&self, _group: &GroupKey, batch: &Batch, _stop_signal: &StopSignal) -> Sent {
        self.batches.lock().expect("not poisoned").push(batch.urls.clone());
        (self.answer)(batch)
    }
}

/// What a test run lives on: its settings (those of `settings(extra)`),
/// its clock (started at `NOW`), and a temporary directory for its ledger.
pub(super) struct Fixture {
    pub settings: Settings,
    pub clock: Clock,
    dir: tempfile::TempDir,
}

/// The instant test runs start at.
pub(super) const NOW: &str = "2026-03-02T10:00:00Z";

impl Fixture {
    pub(super) fn new(extra: &str) -> Fixture {
        Fixture {
            settings: settings(extra),
            clock: Clock::starting_at(at(NOW)),
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    /// A run on a new SQLite ledger, with `engine` as its IndexNow.
    pub(super) fn run(&self, engine: Scripted) -> Trial<'_> {
        let ledger = SqliteLedger::open(&self.dir.path().join("ledger.sqlite")).expect("a new ledger opens");
        let mut engines: BTreeMap<EngineKind, Box<dyn Engine>> = BTreeMap::new();
        engines.insert(EngineKind::IndexNow, Box::new(engine));
        let run = Run {
            settings: &self.settings,
            clock: &self.clock,
            user_tz: chrono_tz::UTC,
            engines,
            ledger: Box::new(ledger),
            owner: Owner::current(),
            progress: crate::output::progress::Progress::new(&PRINTER),
            stop: super::stop::Stop::new(self.settings.submit.stop_grace),
            held: Default::default(),
        };
        let findings = Findings::new(Results::new(true).expect("a temporary file"));
        Trial { run, findings, writing: Writing { baseline: false } }
    }

    /// A run as `run` makes it, whose ledger holds `n` due URLs of the
    /// property: `https://site.example/0`, `/1`, …
    pub(super) fn queued(&self, engine: Scripted, n: usize) -> Trial<'_> {
        let mut trial = self.run(engine);
        let g = group(&self.settings);
        let batch: Vec<NewItem> = (0..n).map(|i| new_item(&g, &format!("https://site.example/{i}"))).collect();
        trial.run.ledger.admit(&batch, self.clock.now(), &admit_rule()).expect("the ledger admits the URLs");
        trial
    }
}

impl Fixture {
    /// `queued`'s run after its sending phase, and the URLs of each batch
    /// its engine got.
    pub(super) async fn sent(&self, engine: Scripted, n: usize) -> (Trial<'_>, Vec<Vec<String>>) {
        let batches = engine.batches.clone();
        let mut trial = self.queued(engine, n);
        trial.sender().send_due(&PRINTER).await.expect("the sending phase runs");
        let batches = batches.lock().expect("not poisoned").clone();
        (trial, batches)
    }
}

/// A test run and its report.
pub(super) struct Trial<'a> {
    pub run: Run<'a>,
    pub findings: Findings,
    /// The admission its intake writes with.
    writing: Writing,
}

impl<'a> Trial<'a> {
    /// Its sending phase, waiting for nothing.
    pub(super) fn sender(&mut self) -> Sender<'_, 'a> {
        let now = self.run.clock.now();
        Sender::new(&mut self.run, &mut self.findings, now)
    }

    /// Its intake, admitting by `rule` (and `--since`).
    pub(super) fn intake(&mut self, rule: AdmitRule, since: Option<DateTime<Utc>>) -> Admitting<'_, 'a> {
        Admitting::new(&mut self.run, &mut self.findings, &mut self.writing, rule, since)
    }
}

/// An input URL of `group` (no lastmod).
pub(super) fn new_item(group: &GroupKey, url: &str) -> NewItem {
    NewItem {
        url: url.into(),
        group: group.clone().into(),
        action: Action::Updated,
        lastmod: None,
        zone: chrono_tz::Tz::UTC,
    }
}

/// A URL accepted within a day is not sent again.
pub(super) fn admit_rule() -> AdmitRule {
    AdmitRule { dedupe: TimeDelta::days(1), force: false, changed: false, resend_after: None }
}

/// A budget rule (not a reported one).
pub(super) fn rule(id: &str, scope: Scope, period: Period, tz: Tz, limit: Option<u64>) -> Rule {
    Rule { id: id.into(), scope, period, tz, limit, reported: false }
}

/// Every item in the run's ledger.
pub(super) fn items(trial: &mut Trial) -> Vec<ItemRow> {
    let run = &mut trial.run;
    run.ledger.items(&ItemFilter::default(), run.clock.now()).expect("the ledger lists its items")
}

/// Every result of the run as (url, outcome, reason), in order.
pub(super) fn results(trial: &mut Trial) -> Vec<(String, String, String)> {
    let results = &mut trial.findings.results;
    results.flush().expect("the results flush");
    let mut out = Vec::new();
    results
        .each_result_json(trial.run.clock.now(), |line| {
            let v: serde_json::Value = serde_json::from_slice(&line.concat()).expect("a result is JSON");
            let field = |name: &str| v[name].as_str().unwrap_or_default().to_string();
            out.push((field("url"), field("outcome"), field("reason")));
            Ok(())
        })
        .expect("the results read back");
    out
}

/// The next steps after `sent` answered `items` of `group`, claimed at
/// `NOW` against `rules`' windows with a lease until ten minutes later,
/// with the default retry settings.
pub(super) fn next_steps_after(
    group: &GroupKey,
    rules: &[Rule],
    items: &[crate::ledger::ClaimedItem],
    sent: &Sent,
    jitter: impl FnMut() -> f64,
) -> super::next_steps::NextSteps {
    let (now, settings) = (at(NOW), settings(""));
    let claim = crate::ledger::Claim {
        now,
        windows: crate::budget_rules::windows(rules, now),
        items: items.to_vec(),
        lease_until: Some(now + TimeDelta::minutes(10)),
        ..crate::ledger::Claim::default()
    };
    let answers = super::next_steps::Answers { group, rules, claim: &claim, sent, at: now, retry: &settings.retry };
    super::next_steps::after(&answers, jitter)
}

/// A property's daily rule in Shanghai, its monthly one, and the pool's day.
pub(super) fn three_rules() -> Vec<Rule> {
    vec![
        rule("day", Scope::Property, Period::Day, chrono_tz::Asia::Shanghai, Some(10)),
        rule("month", Scope::Property, Period::Month, Tz::UTC, Some(10)),
        rule("pool", Scope::Pool, Period::Day, chrono_tz::America::Los_Angeles, Some(10)),
    ]
}

/// An engine's answer of `class` and `reason`: HTTP 200 if accepted, else 429.
pub(super) fn answer(class: Class, reason: &str) -> Answer {
    Answer {
        verdict: verdict(class, reason),
        response: StoredResponse { http_status: Some(if class == Class::Accepted { 200 } else { 429 }), body: None },
        reached: true,
        skipped: false,
    }
}

/// A quota answer to one URL, with its `Retry-After` and the window it names.
pub(super) fn quota(retry_after: Option<crate::classify::RetryAfter>, window: Period) -> Sent {
    let mut a = answer(Class::Quota, "rate_limited");
    a.verdict.retry_after = retry_after;
    a.verdict.quota_window = window;
    Sent::whole(a, 1)
}

/// Each block's rule and until when.
pub(super) fn blocked(blocks: &[crate::ledger::Block]) -> Vec<(&str, DateTime<Utc>)> {
    blocks.iter().map(|b| (b.rule.rule.as_str(), b.until)).collect()
}
