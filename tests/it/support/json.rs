//! Every `--json` document the binary prints, as the tests expect it: one
//! strict struct (tree) per document (`deny_unknown_fields`, the way `just`
//! tests its JSON), written from the contract (the README's *Output and
//! exit codes*) and not from the binary's own types, so that a
//! renamed, missing or extra field, a value outside its set or a wrong type
//! fails the test that reads the document.
//!
//! [`Done::json`](super::Done::json) checks every document it parses against
//! its struct ([`check_text`] tells the document by its distinctive field,
//! then parses it strictly and checks the rules that tie its fields
//! together); the typed readers (`Done::submit_doc`, `status_doc`, …) return
//! the structs.
//!
//! An optional field is one of two kinds, and the struct says which:
//! `#[serde(default, deserialize_with = "maybe")]` — left out when there is
//! nothing to say, never `null` — and `#[serde(deserialize_with =
//! "nullable")]` — always there, `null` when empty.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// A field left out when empty: absent is `None`, `null` is an error.
fn maybe<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A field always there, `null` when empty: absent is an error (serde treats
/// a missing `Option` as `None` unless the field has a `deserialize_with`).
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// A flag written only when it is set: present, it is `true`.
fn only_true<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match bool::deserialize(d)? {
        true => Ok(true),
        false => Err(serde::de::Error::custom("a flag written only when true is false")),
    }
}

// ---------------------------------------------------------------------------
// The closed sets.

/// A closed set of JSON names: an enum that takes only those names, its
/// members (`ALL`) and each one's name (`as_str`).
macro_rules! closed_set {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),*
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The JSON name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),*
                }
            }

            /// The member named `text` (panics on another name).
            pub fn named(text: &str) -> $name {
                let found = $name::ALL.iter().copied().find(|m| m.as_str() == text);
                found.unwrap_or_else(|| panic!(concat!("no ", stringify!($name), " `{}`"), text))
            }
        }
    };
}

closed_set! {
    /// A search engine.
    Engine { IndexNow = "indexnow", Bing = "bing", Google = "google", Baidu = "baidu", Yandex = "yandex" }
}

closed_set! {
    /// What an engine's answer means (README, *What each answer means*): the outcome of an attempt.
    Class {
        Accepted = "accepted",
        Quota = "quota",
        Transient = "transient",
        KeyPending = "key_pending",
        Misconfigured = "misconfigured",
    }
}

closed_set! {
    /// The outcome of one URL for one engine in one run (README, *Output and exit codes*).
    Outcome {
        Accepted = "accepted",
        Quota = "quota",
        Transient = "transient",
        KeyPending = "key_pending",
        Misconfigured = "misconfigured",
        Deferred = "deferred",
        Skipped = "skipped",
        Invalid = "invalid",
    }
}

closed_set! {
    /// A queue item's state as `queue list` shows it (queued splits into due and waiting).
    ItemState { Due = "due", Waiting = "waiting", InFlight = "in_flight", Parked = "parked", Accepted = "accepted" }
}

closed_set! {
    /// What a group's items are sent as: a sitemap's submission (absent: a URL).
    Channel { Sitemaps = "sitemaps" }
}

closed_set! {
    /// What needs a human: parked items, what an engine's report on a sitemap says, URL inspections
    /// Google refused, URLs outside the IndexNow key location's folder.
    NoticeKind { Parked = "parked", SitemapReport = "sitemap_report", Inspection = "inspection", KeyScope = "key_scope", Source = "source" }
}

closed_set! {
    /// Whom a budget rule binds: the property, or every property of a pool (a project, the engine).
    Scope { Property = "property", Pool = "pool" }
}

closed_set! {
    /// The length of a budget window.
    Period { Minute = "minute", Day = "day", Month = "month" }
}

closed_set! {
    /// Where a budget's limit comes from: what the engine reported, or the ledger's own rule.
    Source { Engine = "engine", Local = "local" }
}

// ---------------------------------------------------------------------------
// `submit --json` (and `submit --dry-run --json`).

/// `submit --json`: `now`, `results`, `summary`, `notes`, `parked`,
/// `resumed` and `inspections` when there are any; a dry run adds
/// `dry_run`, `plan`, `plan_summary` and, with `--since`, `before_since`; a
/// run SIGINT or SIGTERM stopped adds `interrupted`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Submit {
    pub now: String,
    #[serde(default, deserialize_with = "maybe")]
    pub dry_run: Option<bool>,
    /// The URLs a dry run would send now.
    #[serde(default, deserialize_with = "maybe")]
    pub plan: Option<Vec<Planned>>,
    /// Per engine, what a dry run makes of the input.
    #[serde(default, deserialize_with = "maybe")]
    pub plan_summary: Option<BTreeMap<Engine, PlanSummary>>,
    /// URLs left out by `--since` (dry runs with `--since`).
    #[serde(default, deserialize_with = "maybe")]
    pub before_since: Option<u64>,
    pub results: Vec<SubmitResult>,
    pub summary: Summary,
    #[serde(default, deserialize_with = "maybe")]
    pub notes: Option<Vec<String>>,
    /// What is parked (needs a human), per group and reason.
    #[serde(default, deserialize_with = "maybe")]
    pub parked: Option<Vec<Parked>>,
    /// Parked items sent again in this run, and why.
    #[serde(default, deserialize_with = "maybe")]
    pub resumed: Option<Vec<String>>,
    #[serde(default, deserialize_with = "maybe")]
    pub interrupted: Option<Interrupted>,
    /// Google URL inspections (`skip_indexed`) that said neither indexed nor
    /// not, and the inspection budget when it ran out: per property, outcome
    /// and reason.
    #[serde(default, deserialize_with = "maybe")]
    pub inspections: Option<Vec<InspectionNote>>,
}

/// What a run's inspections of a property came to, for one outcome and reason.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InspectionNote {
    pub property: String,
    pub engine: Engine,
    /// The inspection answer's class, or `deferred` (reason `budget`) for the local inspection budget.
    pub outcome: Outcome,
    pub reason: String,
    pub message: String,
    /// The fix, for `misconfigured`.
    #[serde(default, deserialize_with = "maybe")]
    pub hint: Option<String>,
    #[serde(default, deserialize_with = "maybe")]
    pub http_status: Option<u16>,
    /// Inspections asked in the run that got this answer.
    pub inspections: u64,
    /// URLs published without inspection because of it.
    pub uninspected: u64,
    /// What indexq did about it.
    pub then: String,
    /// Until when URLs are published without inspection (a quota, the budget).
    #[serde(default, deserialize_with = "maybe")]
    pub until: Option<String>,
}

/// Parked items of one group and reason: what needs a human.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parked {
    pub kind: NoticeKind,
    pub property: String,
    pub engine: Engine,
    #[serde(default, deserialize_with = "maybe")]
    pub endpoint: Option<String>,
    /// The sitemap, for a sitemap group.
    #[serde(default, deserialize_with = "maybe")]
    pub sitemap: Option<String>,
    /// The source (URL or path), for a source that cannot be read.
    #[serde(default, deserialize_with = "maybe")]
    pub source: Option<String>,
    pub reason: String,
    pub urls: u64,
    #[serde(deserialize_with = "nullable")]
    pub since: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub message: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub fix: Option<String>,
    /// Whether indexq notices the fix by itself (else `retry` is needed).
    pub checked_by_itself: bool,
    /// The command that sends parked items again (none for a sitemap's report).
    #[serde(default, deserialize_with = "maybe")]
    pub retry: Option<String>,
    /// When a run said so before.
    #[serde(deserialize_with = "nullable")]
    pub reminded_at: Option<String>,
    /// Whether this run said so.
    pub told: bool,
}

closed_set! {
    /// A signal that stops `submit` cleanly.
    Signal { Int = "SIGINT", Term = "SIGTERM" }
}

/// What a signal cut short in a `submit` run.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interrupted {
    pub signal: Signal,
    /// `[submit] stop_grace`, in seconds.
    pub grace_secs: u64,
    /// Requests sent and not answered within the grace (recorded as `interrupted`, counted as used).
    pub unanswered_requests: u64,
    pub unanswered_urls: u64,
    /// Claimed URLs the stop kept from being sent (their budget given back).
    pub unsent_urls: u64,
    /// When the unanswered URLs are sent again: there when there are some.
    #[serde(default, deserialize_with = "maybe")]
    pub retry_at: Option<String>,
    /// The run's URLs still in the queue, the unanswered aside.
    pub queued: u64,
    /// Whether an input was left unread.
    pub input_cut: bool,
}

/// One URL's result for one engine.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitResult {
    pub url: String,
    /// `null` for an input line that names no property (an invalid one).
    #[serde(deserialize_with = "nullable")]
    pub property: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub engine: Option<Engine>,
    /// The IndexNow endpoint.
    #[serde(default, deserialize_with = "maybe")]
    pub endpoint: Option<String>,
    /// `sitemaps`: the submission of a sitemap (`url`), not a URL.
    #[serde(default, deserialize_with = "maybe")]
    pub channel: Option<Channel>,
    pub outcome: Outcome,
    pub reason: String,
    pub message: String,
    /// The fix, for `misconfigured`.
    #[serde(default, deserialize_with = "maybe")]
    pub hint: Option<String>,
    #[serde(default, deserialize_with = "maybe")]
    pub http_status: Option<u16>,
    #[serde(default, deserialize_with = "maybe")]
    pub retry_at: Option<String>,
    #[serde(default, deserialize_with = "maybe")]
    pub retry_after_secs: Option<i64>,
    pub attempts: u32,
    /// `file:line` of an invalid input line.
    #[serde(default, deserialize_with = "maybe")]
    pub source: Option<String>,
}

/// Counts per outcome: every outcome, always.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub accepted: u64,
    pub quota: u64,
    pub transient: u64,
    pub key_pending: u64,
    pub misconfigured: u64,
    pub deferred: u64,
    pub skipped: u64,
    pub invalid: u64,
}

impl Summary {
    pub fn get(&self, outcome: Outcome) -> u64 {
        match outcome {
            Outcome::Accepted => self.accepted,
            Outcome::Quota => self.quota,
            Outcome::Transient => self.transient,
            Outcome::KeyPending => self.key_pending,
            Outcome::Misconfigured => self.misconfigured,
            Outcome::Deferred => self.deferred,
            Outcome::Skipped => self.skipped,
            Outcome::Invalid => self.invalid,
        }
    }
}

/// A URL a dry run would send now.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Planned {
    pub url: String,
    pub property: String,
    pub engine: Engine,
    #[serde(default, deserialize_with = "maybe")]
    pub endpoint: Option<String>,
    #[serde(default, deserialize_with = "maybe")]
    pub channel: Option<Channel>,
}

/// A dry run's plan for one engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanSummary {
    pub new: u64,
    pub changed: u64,
    pub unchanged: u64,
    /// Within the input, URLs that wait for budget.
    pub waiting: u64,
}

impl Submit {
    /// The one result for `url` (panics unless there is exactly one).
    pub fn result_for(&self, url: &str) -> &SubmitResult {
        let found: Vec<&SubmitResult> = self.results.iter().filter(|r| r.url == url).collect();
        assert_eq!(found.len(), 1, "expected one result for {url}: {:#?}", self.results);
        found[0]
    }

    /// The results with `outcome`.
    pub fn with_outcome(&self, outcome: Outcome) -> Vec<&SubmitResult> {
        self.results.iter().filter(|r| r.outcome == outcome).collect()
    }

    fn rules(&self) -> Result<(), String> {
        time(&self.now)?;
        ensure(self.dry_run != Some(false), "`dry_run` is there only when true")?;
        let dry = self.dry_run.is_some();
        ensure(self.plan.is_some() == dry, "`plan` goes with `dry_run`")?;
        ensure(self.plan_summary.is_some() == dry, "`plan_summary` goes with `dry_run`")?;
        ensure(dry || self.before_since.is_none(), "`before_since` only in a dry run")?;
        ensure(self.notes.as_ref().is_none_or(|n| !n.is_empty()), "`notes` is left out when there are none")?;
        ensure(self.parked.as_ref().is_none_or(|n| !n.is_empty()), "`parked` is left out when there is none")?;
        ensure(self.resumed.as_ref().is_none_or(|n| !n.is_empty()), "`resumed` is left out when there is none")?;
        ensure(self.inspections.as_ref().is_none_or(|n| !n.is_empty()), "`inspections` is left out when none")?;
        for n in self.inspections.iter().flatten() {
            n.until.as_deref().map_or(Ok(()), time)?;
            ensure(n.engine == Engine::Google, &format!("only Google inspects: {n:?}"))?;
            ensure(n.uninspected > 0, &format!("a note is about URLs published without inspection: {n:?}"))?;
            let known = [Outcome::Quota, Outcome::Transient, Outcome::Misconfigured, Outcome::Deferred];
            ensure(known.contains(&n.outcome), &format!("an inspection note's outcome: {n:?}"))?;
            ensure(n.hint.is_some() == (n.outcome == Outcome::Misconfigured), &format!("a refusal has a fix: {n:?}"))?;
        }
        for p in self.parked.iter().flatten() {
            p.since.as_deref().map_or(Ok(()), time)?;
            p.reminded_at.as_deref().map_or(Ok(()), time)?;
            let source = p.kind == NoticeKind::Source;
            ensure((p.urls > 0) != source, &format!("a parked group has URLs, a source none: {p:?}"))?;
            ensure(p.source.is_some() == source, &format!("a source's notice names it: {p:?}"))?;
            let retry = p.retry.as_deref().is_some_and(|r| r.starts_with("indexq queue retry --state parked"));
            ensure(retry == (p.kind == NoticeKind::Parked), &format!("parked items have the retry command: {p:?}"))?;
            ensure(
                p.sitemap.is_some() || p.kind != NoticeKind::SitemapReport,
                &format!("a report is a sitemap's: {p:?}"),
            )?;
        }
        if let Some(i) = &self.interrupted {
            let unanswered = i.unanswered_requests > 0;
            ensure(unanswered == (i.unanswered_urls > 0), "unanswered requests carry unanswered URLs")?;
            ensure(unanswered == i.retry_at.is_some(), "`retry_at` is there with unanswered requests")?;
            i.retry_at.as_deref().map_or(Ok(()), time)?;
        }
        for r in &self.results {
            let together = r.retry_at.is_some() == r.retry_after_secs.is_some();
            ensure(together, &format!("`retry_at` and `retry_after_secs` go together: {r:?}"))?;
            r.retry_at.as_deref().map_or(Ok(()), time)?;
            ensure(r.retry_after_secs.is_none_or(|s| s >= 0), &format!("a retry in the past: {r:?}"))?;
        }
        for &outcome in Outcome::ALL {
            let listed = self.results.iter().filter(|r| r.outcome == outcome).count() as u64;
            let counted = self.summary.get(outcome) == listed;
            ensure(counted, &format!("`summary` counts the {} results ({listed})", outcome.as_str()))?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// `status --json` (`status --format json`).

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Status {
    pub now: String,
    /// The user's timezone.
    pub timezone: String,
    pub budgets: Vec<Budget>,
    /// Over every group.
    pub queue: QueueCounts,
    pub groups: Vec<Group>,
    /// Queue items of groups the configuration no longer has.
    pub stranded: Vec<Stranded>,
    /// What needs a human: parked items per group and reason.
    pub parked: Vec<Parked>,
    /// Per Google property with `skip_indexed`: its URL inspections.
    pub inspections: Vec<Inspections>,
    /// Per sitemap and engine it is submitted to: when, and what the engine reports of it.
    pub sitemaps: Vec<SitemapStatus>,
}

/// A sitemap submitted to an engine, and the engine's last report on it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SitemapStatus {
    pub property: String,
    pub engine: Engine,
    pub sitemap: String,
    #[serde(deserialize_with = "nullable")]
    pub submitted_at: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub read_at: Option<String>,
    #[serde(default, deserialize_with = "maybe")]
    pub listed: Option<bool>,
    #[serde(default, deserialize_with = "maybe")]
    pub engine_submitted_at: Option<String>,
    #[serde(default, deserialize_with = "maybe")]
    pub downloaded_at: Option<String>,
    #[serde(default, deserialize_with = "maybe")]
    pub pending: Option<bool>,
    #[serde(default, deserialize_with = "maybe")]
    pub errors: Option<u64>,
    #[serde(default, deserialize_with = "maybe")]
    pub warnings: Option<u64>,
    #[serde(default, deserialize_with = "maybe")]
    pub urls: Option<u64>,
    #[serde(default, deserialize_with = "maybe")]
    pub status: Option<String>,
    #[serde(default, deserialize_with = "maybe")]
    pub read_failure: Option<InspectionFailure>,
}

/// A Google property's URL inspections.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inspections {
    pub property: String,
    pub site_url: String,
    /// The inspection budget: the property's rules (a day, a minute).
    pub budgets: Vec<Budget>,
    /// Inspections per class of answer since the ledger began: `accepted`,
    /// `quota`, `transient`, `misconfigured`, always.
    pub answers: BTreeMap<Class, u64>,
    /// The latest answer that said neither indexed nor not.
    #[serde(deserialize_with = "nullable")]
    pub last_failure: Option<InspectionFailure>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InspectionFailure {
    pub at: String,
    pub outcome: Class,
    pub reason: String,
    pub message: String,
    #[serde(default, deserialize_with = "maybe")]
    pub hint: Option<String>,
    #[serde(default, deserialize_with = "maybe")]
    pub http_status: Option<u16>,
}

/// One budget rule of one group in its current window.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub property: String,
    pub engine: Engine,
    #[serde(default, deserialize_with = "maybe")]
    pub endpoint: Option<String>,
    /// The rule's id (as the metrics label it).
    pub rule: String,
    pub scope: Scope,
    pub period: Period,
    /// The window's local date (`2026-12-03`), month (`2026-12`) or minute.
    pub window: String,
    pub used: u64,
    #[serde(deserialize_with = "nullable")]
    pub limit: Option<u64>,
    #[serde(deserialize_with = "nullable")]
    pub remaining: Option<u64>,
    pub source: Source,
    /// When the engine reported the limit (`source` `engine`).
    #[serde(default, deserialize_with = "maybe")]
    pub reported_at: Option<String>,
    /// In the rule's timezone.
    pub resets_at: String,
    /// The same moment in the user's timezone.
    pub resets_at_local: String,
    pub resets_in_secs: i64,
    /// The rule's timezone.
    pub timezone: String,
    /// Until when the engine refuses (its quota answer).
    #[serde(default, deserialize_with = "maybe")]
    pub blocked_until: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueCounts {
    pub due: u64,
    pub waiting: u64,
    pub parked: u64,
    pub in_flight: u64,
    pub accepted: u64,
}

impl QueueCounts {
    /// The count of `state` (`due`, `waiting`, `parked`, `in_flight`, `accepted`).
    pub fn get(&self, state: &str) -> u64 {
        match state {
            "due" => self.due,
            "waiting" => self.waiting,
            "parked" => self.parked,
            "in_flight" => self.in_flight,
            "accepted" => self.accepted,
            other => panic!("no queue state `{other}`"),
        }
    }
}

/// A property × engine (× endpoint): its queue and its last rejection.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    pub property: String,
    pub engine: Engine,
    #[serde(default, deserialize_with = "maybe")]
    pub endpoint: Option<String>,
    pub queue: QueueCounts,
    #[serde(deserialize_with = "nullable")]
    pub last_rejection: Option<Rejection>,
    /// How long the queued URLs take at the group's daily budget (only
    /// where it has one and more URLs wait than a day of it covers).
    #[serde(default, deserialize_with = "maybe")]
    pub backlog: Option<Backlog>,
}

/// `status`'s estimate of a group's waiting backlog.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backlog {
    pub urls: u64,
    pub per_day: u64,
    pub days: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rejection {
    pub at: String,
    pub url: String,
    pub outcome: Class,
    pub reason: String,
    pub message: String,
    #[serde(default, deserialize_with = "maybe")]
    pub http_status: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stranded {
    pub property: String,
    pub engine: Engine,
    #[serde(default, deserialize_with = "maybe")]
    pub endpoint: Option<String>,
    pub queue: QueueCounts,
    pub hint: String,
}

impl Status {
    /// The budgets of `engine`.
    pub fn budgets_of(&self, engine: Engine) -> Vec<&Budget> {
        self.budgets.iter().filter(|b| b.engine == engine).collect()
    }

    /// The one group of `property` and `engine` (panics unless there is exactly one).
    pub fn group(&self, property: &str, engine: Engine) -> &Group {
        let found: Vec<&Group> = self.groups.iter().filter(|g| g.property == property && g.engine == engine).collect();
        assert_eq!(found.len(), 1, "expected one {engine:?} group of {property}: {:#?}", self.groups);
        found[0]
    }

    fn rules(&self) -> Result<(), String> {
        time(&self.now)?;
        for i in &self.inspections {
            let classes: Vec<Class> = i.answers.keys().copied().collect();
            let all = [Class::Accepted, Class::Quota, Class::Transient, Class::Misconfigured];
            ensure(classes == all, &format!("every class an inspection answer can have: {i:?}"))?;
            ensure(i.budgets.len() == 2, &format!("a day and a minute: {i:?}"))?;
            if let Some(f) = &i.last_failure {
                time(&f.at)?;
                ensure(f.outcome != Class::Accepted, &format!("an answer is no failure: {f:?}"))?;
                ensure(f.hint.is_some() == (f.outcome == Class::Misconfigured), &format!("a refusal's fix: {f:?}"))?;
            }
        }
        for b in self.budgets.iter().chain(self.inspections.iter().flat_map(|i| &i.budgets)) {
            for at in [&b.resets_at, &b.resets_at_local].into_iter().chain(&b.reported_at).chain(&b.blocked_until) {
                time(at)?;
            }
            let reported = b.reported_at.is_some() == (b.source == Source::Engine);
            ensure(reported, &format!("`reported_at` goes with `source` `engine`: {b:?}"))?;
        }
        for r in self.groups.iter().filter_map(|g| g.last_rejection.as_ref()) {
            time(&r.at)?;
            ensure(r.outcome != Class::Accepted, &format!("an acceptance is no rejection: {r:?}"))?;
        }
        let sum = |f: fn(&QueueCounts) -> u64| self.groups.iter().map(|g| f(&g.queue)).sum::<u64>();
        let total = QueueCounts {
            due: sum(|q| q.due),
            waiting: sum(|q| q.waiting),
            parked: sum(|q| q.parked),
            in_flight: sum(|q| q.in_flight),
            accepted: sum(|q| q.accepted),
        };
        ensure(self.queue == total, "`queue` sums the groups' queues")
    }
}

// ---------------------------------------------------------------------------
// `queue list --json`, `queue retry --json`, `queue drop --json`.

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueList {
    pub now: String,
    pub items: Vec<Item>,
    /// Whether more items matched than are listed (`--limit`).
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    pub url: String,
    pub property: String,
    pub engine: Engine,
    #[serde(default, deserialize_with = "maybe")]
    pub endpoint: Option<String>,
    pub state: ItemState,
    #[serde(deserialize_with = "nullable")]
    pub next_attempt_at: Option<String>,
    pub attempts: u32,
    #[serde(deserialize_with = "nullable")]
    pub last_outcome: Option<Class>,
    #[serde(deserialize_with = "nullable")]
    pub reason: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub message: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub http_status: Option<u16>,
    #[serde(deserialize_with = "nullable")]
    pub accepted_at: Option<String>,
}

impl QueueList {
    /// The one item of `url` (panics unless there is exactly one).
    pub fn item(&self, url: &str) -> &Item {
        let found: Vec<&Item> = self.items.iter().filter(|i| i.url == url).collect();
        assert_eq!(found.len(), 1, "expected one item for {url}: {:#?}", self.items);
        found[0]
    }

    fn rules(&self) -> Result<(), String> {
        time(&self.now)?;
        self.items.iter().flat_map(|i| i.next_attempt_at.iter().chain(&i.accepted_at)).try_for_each(|at| time(at))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueRetry {
    pub retried: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueDrop {
    pub dropped: u64,
}

// ---------------------------------------------------------------------------
// `log --json`.

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Log {
    pub now: String,
    /// Oldest first.
    pub attempts: Vec<Attempt>,
}

/// One request (with `--url`, one attempt of that URL).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attempt {
    pub at: String,
    /// The URL asked about, or the request's first.
    pub url: String,
    /// How many URLs the request carried.
    pub urls: u64,
    pub property: String,
    pub engine: Engine,
    #[serde(default, deserialize_with = "maybe")]
    pub endpoint: Option<String>,
    pub outcome: Class,
    pub reason: String,
    pub message: String,
    #[serde(deserialize_with = "nullable")]
    pub http_status: Option<u16>,
    #[serde(deserialize_with = "nullable")]
    pub retry_at: Option<String>,
    /// The stored (redacted, capped) response body.
    #[serde(deserialize_with = "nullable")]
    pub body: Option<String>,
    /// The URL shown is of an item `queue drop` removed (written only when true).
    #[serde(default, deserialize_with = "only_true")]
    pub dropped: bool,
}

impl Log {
    fn rules(&self) -> Result<(), String> {
        time(&self.now)?;
        for a in &self.attempts {
            time(&a.at)?;
            a.retry_at.as_deref().map_or(Ok(()), time)?;
            ensure(a.urls >= 1, &format!("a request carries a URL: {a:?}"))?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// `doctor --json`.

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Doctor {
    pub checks: Vec<Check>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// What was checked (`config`, `ledger`, `indexnow_key`, …).
    pub check: String,
    #[serde(deserialize_with = "nullable")]
    pub property: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub engine: Option<Engine>,
    pub ok: bool,
    /// Nothing to fix, but likely not what was meant (`ok`, with a `fix`).
    pub warning: bool,
    pub message: String,
    /// The fix, for a problem or a warning.
    #[serde(deserialize_with = "nullable")]
    pub fix: Option<String>,
}

impl Doctor {
    /// The one check named `name` (panics unless there is exactly one).
    pub fn check(&self, name: &str) -> &Check {
        let found: Vec<&Check> = self.checks.iter().filter(|c| c.check == name).collect();
        assert_eq!(found.len(), 1, "expected one `{name}` check: {:#?}", self.checks);
        found[0]
    }

    fn rules(&self) -> Result<(), String> {
        for c in &self.checks {
            ensure(
                c.fix.is_some() == (!c.ok || c.warning),
                &format!("a problem or a warning has a fix, a pass none: {c:?}"),
            )?;
            ensure(c.ok || !c.warning, &format!("a warning is no problem: {c:?}"))?;
            // A property's source is its property's, whatever the engine.
            let about = if c.check == "source" {
                c.property.is_some() && c.engine.is_none()
            } else {
                c.property.is_some() == c.engine.is_some()
            };
            ensure(
                about,
                &format!("a check is about a property's engine (a source its property's), or neither: {c:?}"),
            )?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// `key generate --json`, `init --json`, `ledger migrate|copy --json`, `report --json`.

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyGenerate {
    pub key_file: String,
    pub key: String,
    /// Where the file must be served: each configured property's origin, once.
    pub urls: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Init {
    pub config: String,
    pub site: String,
    /// Whether `site` is still the example's placeholder.
    pub placeholder: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerMigrate {
    /// The ledger's path, or its database URL without the password.
    pub ledger: String,
    pub schema_version: i64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerCopy {
    pub from: String,
    pub to: String,
    pub copied: Copied,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Copied {
    pub items: u64,
    pub attempts: u64,
    pub budget_windows: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub now: String,
    pub html: String,
    pub days: u64,
    pub parked: u64,
}

// ---------------------------------------------------------------------------
// Telling the documents apart.

/// Any document the binary prints.
#[derive(Debug, Clone)]
pub enum Doc {
    Submit(Submit),
    Status(Status),
    QueueList(QueueList),
    QueueRetry(QueueRetry),
    QueueDrop(QueueDrop),
    Log(Log),
    Doctor(Doctor),
    KeyGenerate(KeyGenerate),
    Init(Init),
    LedgerMigrate(LedgerMigrate),
    LedgerCopy(LedgerCopy),
    Report(Report),
}

/// Each document by the top-level field only it has.
const KINDS: [(&str, &str); 12] = [
    ("results", "submit"),
    ("budgets", "status"),
    ("items", "queue list"),
    ("retried", "queue retry"),
    ("dropped", "queue drop"),
    ("attempts", "log"),
    ("checks", "doctor"),
    ("key_file", "key generate"),
    ("placeholder", "init"),
    ("schema_version", "ledger migrate"),
    ("copied", "ledger copy"),
    ("html", "report"),
];

/// `text` parsed strictly as `T`; panics with the document on a mismatch.
pub fn parse<T: DeserializeOwned>(text: &str, what: &str) -> T {
    serde_json::from_str(text).unwrap_or_else(|e| {
        panic!("the `{what}` document does not match tests/it/support/json.rs: {e}\n--- document\n{text}")
    })
}

/// Which document `doc` is (by its distinctive field), parsed strictly and
/// checked; panics if it is none of them, or does not match its struct.
pub fn check(doc: &Value) -> Doc {
    check_text(&serde_json::to_string_pretty(doc).unwrap())
}

/// `check` on a document as printed (a mismatch names its line and column
/// in `text`; a field given twice is one).
pub fn check_text(text: &str) -> Doc {
    let doc: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}):\n{text}"));
    let Some(fields) = doc.as_object() else { panic!("not a JSON object:\n{text}") };
    let kinds: Vec<&str> =
        KINDS.iter().filter(|(field, _)| fields.contains_key(*field)).map(|(_, kind)| *kind).collect();
    let [kind] = kinds[..] else {
        panic!("not one document the binary prints (by its fields, {kinds:?}):\n{text}");
    };
    let doc = match kind {
        "submit" => Doc::Submit(parse(text, kind)),
        "status" => Doc::Status(parse(text, kind)),
        "queue list" => Doc::QueueList(parse(text, kind)),
        "queue retry" => Doc::QueueRetry(parse(text, kind)),
        "queue drop" => Doc::QueueDrop(parse(text, kind)),
        "log" => Doc::Log(parse(text, kind)),
        "doctor" => Doc::Doctor(parse(text, kind)),
        "key generate" => Doc::KeyGenerate(parse(text, kind)),
        "init" => Doc::Init(parse(text, kind)),
        "ledger migrate" => Doc::LedgerMigrate(parse(text, kind)),
        "ledger copy" => Doc::LedgerCopy(parse(text, kind)),
        "report" => Doc::Report(parse(text, kind)),
        _ => unreachable!("every kind is parsed"),
    };
    let rules = match &doc {
        Doc::Submit(d) => d.rules(),
        Doc::Status(d) => d.rules(),
        Doc::QueueList(d) => d.rules(),
        Doc::Log(d) => d.rules(),
        Doc::Doctor(d) => d.rules(),
        Doc::Report(d) => time(&d.now),
        _ => Ok(()),
    };
    if let Err(why) = rules {
        panic!("the `{kind}` document breaks a rule of tests/it/support/json.rs: {why}\n--- document\n{text}");
    }
    doc
}

fn ensure(rule: bool, why: &str) -> Result<(), String> {
    if rule {
        Ok(())
    } else {
        Err(why.to_string())
    }
}

/// An instant as the documents write it: RFC 3339 to the second, with the offset.
fn time(at: &str) -> Result<(), String> {
    let to_the_second = at.len() == "2026-12-03T09:00:00+00:00".len();
    ensure(
        chrono::DateTime::parse_from_rfc3339(at).is_ok() && to_the_second,
        &format!("not an RFC 3339 instant to the second: {at:?}"),
    )
}

/// The document a `[notify] command` reads on its standard input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyEvent {
    pub event: String,
    pub property: String,
    pub engine: String,
    pub reason: String,
    pub count: u64,
    #[serde(deserialize_with = "nullable")]
    pub since: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub fix: Option<String>,
    pub text: String,
}

impl NotifyEvent {
    /// Parses one event strictly and checks its rules: a known event, and
    /// `since` an instant.
    pub fn parse(text: &str) -> NotifyEvent {
        let e: NotifyEvent =
            serde_json::from_str(text).unwrap_or_else(|why| panic!("a notify event: {why}\n--- document\n{text}"));
        assert!(["needs_human", "resolved"].contains(&e.event.as_str()), "{e:?}");
        if let Some(since) = &e.since {
            time(since).unwrap();
        }
        e
    }
}
