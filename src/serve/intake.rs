//! A request's URLs into the ledger. The body is read (JSON
//! `{"urls": [...], "action": "updated"|"deleted", "lastmod": …}`, or
//! `text/plain` one URL a line); every URL is checked first — a URL that is
//! none or of no property makes the request a `422`, one of a property the
//! token may not write a `403`, and then nothing is written. Otherwise each
//! URL is routed and admitted by submit's own code (`pipeline::Routes`,
//! `Ledger::admit` in one transaction, `pipeline::admission_results`), and the `202` says
//! what the ledger made of it per engine: queued (and when it is planned to
//! go, from the ledger's claim forecast over the group's budget), waiting,
//! skipped, parked or in flight — an engine's quota is never an intake
//! error: a URL beyond today's budget is queued with the time it will go.

use super::auth::Caller;
use super::refusal::{ErrorCode, Refusal, Refused, RefusedReason};
use super::State;
use crate::ledger::{Admission, AdmitRule, ClaimQuery, NewItem};
use crate::model::{Action, EngineKind, GroupKey, Position, Reason};
use crate::output::printer::rfc3339;
use crate::output::results::ResultEntry;
use crate::pipeline;
use axum::http::StatusCode;
use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The longest URL taken, as `submit` takes them (8 KiB).
const MAX_URL: usize = 8 * 1024;

/// Where a request's URLs are said to come from.
const BODY: &str = "body";

/// A request's URLs, read.
#[derive(Debug)]
pub(super) struct Submission {
    /// Each URL as written, and where.
    pub urls: Vec<(String, Position)>,
    pub action: Action,
    /// When the pages changed: with it, a URL accepted before goes again
    /// only if it changed since (`--changed`); without, within the dedupe
    /// window it is skipped.
    pub lastmod: Option<DateTime<Utc>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UrlsJson {
    urls: Vec<String>,
    #[serde(default)]
    action: ActionJson,
    #[serde(default)]
    lastmod: Option<DateTime<Utc>>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum ActionJson {
    #[default]
    Updated,
    Deleted,
}

/// Reads a body by its media type.
pub(super) fn read(content_type: Option<&str>, body: &[u8]) -> Result<Submission, Refusal> {
    let submission = match content_type {
        Some("application/json") => {
            let json: UrlsJson = serde_json::from_slice(body).map_err(|e| {
                Refusal::bad_request(format!("the body is not the JSON this endpoint takes: {e}"))
                    .hint(r#"send {"urls": ["https://…"], "action": "updated"} (action: updated or deleted)"#)
            })?;
            let action = match json.action {
                ActionJson::Updated => Action::Updated,
                ActionJson::Deleted => Action::Deleted,
            };
            let urls =
                json.urls.into_iter().enumerate().map(|(i, u)| (u, Position::of(format!("urls[{i}]")))).collect();
            Submission { urls, action, lastmod: json.lastmod }
        }
        Some("text/plain") => {
            let text = std::str::from_utf8(body).map_err(|e| {
                Refusal::bad_request(format!("the body is not UTF-8 text (byte {})", e.valid_up_to() + 1))
            })?;
            let urls = text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(n, l)| (l.trim().to_string(), Position::line(BODY, n as u64 + 1)))
                .collect();
            Submission { urls, action: Action::Updated, lastmod: None }
        }
        other => {
            let said = other.map_or("no Content-Type".to_string(), |t| format!("Content-Type {t}"));
            return Err(Refusal::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ErrorCode::UnsupportedMediaType,
                format!("{said}: this endpoint takes application/json or text/plain"),
            )
            .hint(r#"send JSON ({"urls": [...]}) with Content-Type: application/json, or one URL a line with Content-Type: text/plain"#));
        }
    };
    if submission.urls.is_empty() {
        return Err(Refusal::bad_request("the request has no URL"));
    }
    Ok(submission)
}

/// What the ledger made of a request's URLs.
#[derive(Debug, Serialize)]
pub(super) struct Admitted {
    /// URLs taken.
    pub urls: usize,
    /// Queue items due (one per URL and engine, and IndexNow endpoint).
    pub queued: usize,
    pub results: Vec<UrlAdmitted>,
    /// A Ghost hook's: where the URL it announced came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url_from: Option<UrlFrom>,
}

/// Where a Ghost hook's URL came from (the `202`'s `url_from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum UrlFrom {
    /// The payload's `current.url` (`published`, `published.edited`).
    Payload,
    /// The public URL the post's last `published` or `published.edited`
    /// gave (`unpublished`, `deleted`).
    Remembered,
    /// None was remembered: the property's site and the post's slug,
    /// Ghost's default permalink `/{slug}/` (a site with other permalinks
    /// gets a URL it does not serve).
    Slug,
}

#[derive(Debug, Serialize)]
pub(super) struct UrlAdmitted {
    pub url: String,
    pub property: String,
    pub engines: Vec<EngineAdmitted>,
}

/// What the ledger made of a URL for one engine (and IndexNow endpoint).
#[derive(Debug, Serialize)]
pub(super) struct EngineAdmitted {
    pub engine: EngineKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    pub admission: AdmissionKind,
    pub reason: Reason,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Queued: when it is planned to go (now, or when the budget frees up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_at: Option<String>,
    /// Waiting: when it is tried again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<i64>,
}

/// What the ledger made of a URL for an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum AdmissionKind {
    /// Due: it goes when the budget allows (`planned_at`).
    Queued,
    /// In the queue already, tried again at `retry_at`.
    Waiting,
    /// Accepted before and not sent again (dedupe window, or unchanged).
    Skipped,
    /// Parked by an earlier answer: it waits for a human.
    Parked,
    /// Another process is sending it.
    InFlight,
    /// Not for this engine (outside the IndexNow key location's folder).
    Invalid,
}

impl AdmissionKind {
    fn of(admission: &Admission) -> AdmissionKind {
        match admission {
            Admission::Queued { .. } => AdmissionKind::Queued,
            // Queued again but due later (a sitemap's spacing; URLs have none).
            Admission::AlreadyQueued { .. } | Admission::Requeued { .. } => AdmissionKind::Waiting,
            Admission::Skipped { .. } => AdmissionKind::Skipped,
            Admission::Parked { .. } => AdmissionKind::Parked,
            Admission::InFlight { .. } => AdmissionKind::InFlight,
        }
    }
}

/// A request's URLs, each checked: its URL, its property, as written, where.
pub(super) struct Checked {
    urls: Vec<(crate::ingest::StoredUrl, String, String, Position)>,
    action: Action,
    lastmod: Option<DateTime<Utc>>,
}

impl Checked {
    pub(super) fn len(&self) -> usize {
        self.urls.len()
    }
}

/// Checks every URL of `submission` for `caller`: all must be URLs of a
/// property it may write.
pub(super) fn check(state: &State, caller: &Caller, submission: Submission) -> Result<Checked, Refusal> {
    let settings = &state.settings;
    let mut invalid = Vec::new();
    let mut forbidden = Vec::new();
    let mut taken: Vec<(crate::ingest::StoredUrl, String, String, Position)> = Vec::new();
    for (text, place) in submission.urls {
        // A serve token in a URL (a webhook's URL pasted with its
        // `?token=`) is masked before anything reads or keeps the URL.
        let text = state.tokens.mask(&text);
        let parsed = if text.len() > MAX_URL {
            Err(format!("longer than {MAX_URL} bytes"))
        } else {
            crate::ingest::parse_url(&text)
        };
        let url = match parsed {
            Ok(url) => url,
            Err(why) => {
                invalid.push(refused(text, place, RefusedReason::InvalidUrl, why));
                continue;
            }
        };
        let Some(property) = settings.property_for(url.as_str()) else {
            let why = "the URL is under no configured property's site".to_string();
            invalid.push(refused(text, place, RefusedReason::NoProperty, why));
            continue;
        };
        if !caller.may_write(&property.name) {
            let why = format!("token `{}` may not write {}", caller.id(), property_named(caller, &property.name));
            forbidden.push(refused(text, place, RefusedReason::NotAllowed, why));
            continue;
        }
        taken.push((url, property.name.clone(), text, place));
    }
    if !forbidden.is_empty() {
        let mut r = Refusal::new(
            StatusCode::FORBIDDEN,
            ErrorCode::Forbidden,
            format!(
                "{} URL(s) of a property token `{}` may not write: nothing was taken",
                forbidden.len(),
                caller.id()
            ),
        )
        .hint("use the token of that property, or add the property to this token's `properties`");
        r.urls = forbidden;
        return Err(r);
    }
    if !invalid.is_empty() {
        let mut r = Refusal::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::InvalidUrls,
            format!("{} URL(s) cannot be taken: nothing was taken", invalid.len()),
        )
        .hint("send absolute http(s) URLs under a configured property's site");
        r.urls = invalid;
        return Err(r);
    }
    Ok(Checked { urls: taken, action: submission.action, lastmod: submission.lastmod })
}

/// A property as a refusal to `caller` names it: by its name when the
/// caller may read it, else without (a token never learns others' names).
pub(super) fn property_named(caller: &Caller, property: &str) -> String {
    if caller.may_read(property) {
        format!("property `{property}`")
    } else {
        "this URL's property".to_string()
    }
}

fn refused(url: String, source: Position, reason: RefusedReason, message: String) -> Refused {
    Refused { url, source, reason, message }
}

/// Admits the checked URLs of many requests (those with a `lastmod` and
/// those without: at most two transactions, whatever their number), and
/// tells each request what the ledger made of its URLs: the committer's
/// group commit.
pub(super) fn admit_all(
    state: &State,
    ledger: &mut dyn crate::ledger::Ledger,
    now: DateTime<Utc>,
    requests: Vec<Checked>,
) -> anyhow::Result<Vec<Admitted>> {
    let mut answers: Vec<Option<Admitted>> = (0..requests.len()).map(|_| None).collect();
    for changed in [false, true] {
        let (indices, group): (Vec<usize>, Vec<&Checked>) =
            requests.iter().enumerate().filter(|(_, c)| c.lastmod.is_some() == changed).unzip();
        if group.is_empty() {
            continue;
        }
        for (i, admitted) in indices.into_iter().zip(admit_group(state, ledger, now, &group, changed)?) {
            answers[i] = Some(admitted);
        }
    }
    Ok(answers.into_iter().map(|a| a.expect("every request is in one group")).collect())
}

/// Per request, per URL: the URL, its property and the range of its items
/// in the batch, and a result for an engine it does not go to.
type Routed = (String, String, std::ops::Range<usize>, Option<ResultEntry>);

/// When each group with URLs queued by a request plans to send them, per
/// URL: the plan the worker follows (the ledger's claim forecast over the
/// group's due items in its claim order).
type Planned<'b> = HashMap<&'b GroupKey, GroupPlan>;

/// A group's forecast claim: where each due URL stands in it.
#[derive(Debug, Default)]
struct GroupPlan {
    /// The URLs within the budget, and when each goes: now, or at its paced
    /// slot.
    within: HashMap<String, DateTime<Utc>>,
    /// When the others go (the binding rule reopens), in whose timezone; none
    /// when nothing ever frees up.
    rest: Option<(DateTime<Utc>, chrono_tz::Tz)>,
    /// Every due URL goes now.
    all_now: bool,
}

impl GroupPlan {
    /// When the queued `url` is planned to go, in whose timezone.
    fn at(&self, url: &str, now: DateTime<Utc>, user_tz: chrono_tz::Tz) -> Option<(DateTime<Utc>, chrono_tz::Tz)> {
        if self.all_now {
            return Some((now, user_tz));
        }
        match self.within.get(url) {
            Some(at) => Some((*at, user_tz)),
            None => self.rest,
        }
    }
}

/// Routes and admits the URLs of `requests` (one transaction), and tells
/// each request what became of each of its URLs.
fn admit_group(
    state: &State,
    ledger: &mut dyn crate::ledger::Ledger,
    now: DateTime<Utc>,
    requests: &[&Checked],
    changed: bool,
) -> anyhow::Result<Vec<Admitted>> {
    let settings = &state.settings;
    let rule = AdmitRule {
        dedupe: TimeDelta::from_std(settings.submit.dedupe_window).unwrap_or(TimeDelta::MAX),
        force: false,
        changed,
        resend_after: None,
    };
    let mut batch: Vec<NewItem> = Vec::new();
    let mut routed: Vec<Vec<Routed>> = Vec::with_capacity(requests.len());
    // A `lastmod` (a Ghost post's `updated_at`) later than now is taken as
    // now by admission; the log says so once for the requests admitted
    // together.
    let mut in_future = crate::model::lastmod::InFuture::default();
    for request in requests {
        let mut urls = Vec::with_capacity(request.urls.len());
        for (url, property, text, place) in &request.urls {
            in_future.note(url.as_str(), request.lastmod, state.routes.zone(property), now);
            let first = batch.len();
            let item = (request.action, request.lastmod);
            let outside = state.routes.route(property, url.clone(), item, (Some(text), place), &mut batch);
            urls.push((url.to_string(), property.clone(), first..batch.len(), outside));
        }
        routed.push(urls);
    }
    if let Some(warning) = in_future.take_warning() {
        tracing::warn!("{warning}");
    }
    let admissions = ledger.admit(&batch, now, &rule)?;
    let admitted: Vec<(&NewItem, Admission)> = batch.iter().zip(admissions).collect();
    let rules = |g: &GroupKey| crate::budget_rules::group_rules(settings, g, state.google_project.as_deref());
    let rule_tz = |g: &GroupKey| rules(g).and_then(|r| r.first().map(|r| r.tz));
    let told = pipeline::admission_results(ledger, &admitted, now, state.user_tz, &rule_tz)?;
    let planned = planned(state, ledger, now, &admitted)?;
    Ok(routed.into_iter().map(|urls| answer(urls, &admitted, &told, &planned, now, state.user_tz)).collect())
}

/// When each group with queued URLs plans to send each of them: the first
/// `take` due items of its claim order go now, those up to `paced_until` at
/// their paced slots, the rest when the binding rule reopens (`retry_at`).
fn planned<'b>(
    state: &State,
    ledger: &mut dyn crate::ledger::Ledger,
    now: DateTime<Utc>,
    admitted: &[(&'b NewItem, Admission)],
) -> anyhow::Result<Planned<'b>> {
    let mut planned = Planned::new();
    for (item, admission) in admitted {
        if AdmissionKind::of(admission) != AdmissionKind::Queued || planned.contains_key(&*item.group) {
            continue;
        }
        let rules = crate::budget_rules::group_rules(&state.settings, &item.group, state.google_project.as_deref());
        let Some(rules) = rules else { continue };
        let windows = crate::budget_rules::windows(&rules, now);
        let forecast = ledger.plan_claim(&ClaimQuery { windows: &windows, reported: &[], pace: None, now })?;
        let due = ledger.queue_counts(&item.group, now)?.due as usize;
        let mut plan = GroupPlan {
            rest: forecast.retry_at.map(|t| (t, forecast.binding.map_or(state.user_tz, |i| rules[i].tz))),
            all_now: due <= forecast.take,
            ..GroupPlan::default()
        };
        if !plan.all_now {
            // Only the places within the budget are read: the rest all go
            // at `retry_at`.
            let places = forecast.paced_until.max(forecast.take).min(due);
            let order = state.settings.submit.order;
            for (n, (_, url)) in ledger.due_in_order(&item.group, now, places, order)?.into_iter().enumerate() {
                let at = match forecast.slots {
                    Some(slots) if n >= forecast.take => slots.at(n),
                    _ => now,
                };
                plan.within.insert(url, at);
            }
        }
        planned.insert(&item.group, plan);
    }
    Ok(planned)
}

/// What became of one request's URLs, per engine.
fn answer(
    urls: Vec<Routed>,
    admitted: &[(&NewItem, Admission)],
    told: &[Option<(i64, Box<ResultEntry>)>],
    planned: &Planned<'_>,
    now: DateTime<Utc>,
    user_tz: chrono_tz::Tz,
) -> Admitted {
    let mut queued = 0;
    let mut results = Vec::with_capacity(urls.len());
    for (url, property, range, outside) in urls {
        let mut engines = Vec::new();
        if let Some(e) = outside {
            engines.push(EngineAdmitted {
                engine: EngineKind::IndexNow,
                endpoint: None,
                admission: AdmissionKind::Invalid,
                reason: e.reason,
                message: e.message,
                planned_at: None,
                retry_at: None,
                retry_after_secs: None,
            });
        }
        for n in range {
            let (item, admission) = &admitted[n];
            let endpoint = (!item.group.target.is_empty()).then(|| item.group.target.clone());
            let mut e = EngineAdmitted {
                engine: item.group.engine,
                endpoint,
                admission: AdmissionKind::of(admission),
                reason: crate::model::LocalReason::Queued.into(),
                message: String::new(),
                planned_at: None,
                retry_at: None,
                retry_after_secs: None,
            };
            match &told[n] {
                Some((_, entry)) => {
                    e.reason = entry.reason;
                    e.message = entry.message.clone();
                    e.retry_at = entry.retry_at.clone();
                    e.retry_after_secs = entry.retry_after_secs;
                }
                None => {
                    // Due now: queued (a URL already queued and due is as good).
                    e.admission = AdmissionKind::Queued;
                    queued += 1;
                    if let Some((at, tz)) = planned.get(&*item.group).and_then(|p| p.at(&item.url, now, user_tz)) {
                        e.planned_at = Some(rfc3339(at, tz));
                    }
                }
            }
            engines.push(e);
        }
        results.push(UrlAdmitted { url, property, engines });
    }
    Admitted { urls: results.len(), queued, results, url_from: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_text_bodies_are_read_and_anything_else_refused() {
        let s = read(Some("application/json"), br#"{"urls":["https://a.example/1"],"action":"deleted"}"#).unwrap();
        assert_eq!((s.urls[0].0.as_str(), s.action), ("https://a.example/1", Action::Deleted));
        assert_eq!(s.urls[0].1.to_string(), "urls[0]");
        let s = read(Some("text/plain"), b"https://a.example/1\n\n  https://a.example/2  \n").unwrap();
        let urls: Vec<String> = s.urls.iter().map(|(u, p)| format!("{p} {u}")).collect();
        assert_eq!(urls, ["body:1 https://a.example/1", "body:3 https://a.example/2"]);
        for (ct, body, status) in [
            (Some("application/xml"), &b"<urls/>"[..], 415),
            (None, b"https://a.example/", 415),
            (Some("application/json"), b"{\"urls\":", 400),
            (Some("application/json"), b"{\"urls\":[],\"colour\":1}", 400),
            (Some("application/json"), b"{\"urls\":[],\"action\":\"moved\"}", 400),
            (Some("application/json"), b"{\"urls\":[]}", 400),
            (Some("text/plain"), b"https://a.example/\xff", 400),
            (Some("text/plain"), b"\n \n", 400),
        ] {
            let r = read(ct, body).unwrap_err();
            assert_eq!(r.status.as_u16(), status, "{ct:?} {:?}: {}", String::from_utf8_lossy(body), r.message);
        }
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(read(Some("application/json"), deep.as_bytes()).unwrap_err().status.as_u16(), 400);
    }
}
