//! The Google Indexing API (`urlNotifications:publish`) and the URL
//! Inspection API (`urlInspection/index:inspect`): by HTTP status and
//! google.rpc.Status (`status`, `message`, `details`). A publish's 2xx is
//! `ok` when Google recorded the notification it was sent (`latestUpdate`,
//! `latestRemove`), else `received`. `RESOURCE_EXHAUSTED` / 429 is
//! `daily_quota` (the per-project daily quota: the caller waits for the next
//! quota day, midnight America/Los_Angeles), `rate_limited` (per minute) or
//! `quota` (unnamed), the last two waiting `Retry-After` or
//! [`GOOGLE_SHORT_WAIT`]; 403 is `ownership_not_verified`, `api_disabled` or
//! `permission_denied`; 400 `invalid_argument`; 401 `unauthenticated`; 5xx
//! and `INTERNAL` / `UNAVAILABLE` / `DEADLINE_EXCEEDED` are transient. The
//! tables are on [`google`] and [`google_inspection`]. Search Console's
//! sitemaps (`sitemaps.submit`, `get`, `list`) are read by
//! [`search_console_submit`], [`search_console_report`] and
//! [`search_console_list`], their refusals by [`search_console_refusal`](sitemaps::search_console_refusal).
//! This file reads what all of them share and a publish; `inspection` an
//! inspection, `sitemaps` Search Console's sitemaps, `tests` the tables.

use super::{answered, excerpt, http_status, transient_answered, unrecognized_body, Response, RetryAfter, Verdict};
use crate::model::{AcceptedReason, EngineKind, HttpStatus, MisconfiguredReason, QuotaReason, TransientReason};
use crate::model::{Action, Period, SitemapReading};

mod inspection;
mod sitemaps;
#[cfg(test)]
mod tests;

pub use inspection::{google_inspection, InspectionContext};
pub use sitemaps::{search_console_list, search_console_report, search_console_submit, SitemapsContext};

/// How long indexq waits after a per-minute (or unexplained) Google quota answer without `Retry-After`.
pub const GOOGLE_SHORT_WAIT: u64 = 60;
/// The longest a per-minute (or unexplained) Google quota answer waits.
pub const GOOGLE_SHORT_WAIT_CAP: u64 = 15 * 60;

/// What indexq knows about a Google publish besides the response.
#[derive(Debug, Clone, Copy)]
pub struct GoogleContext<'a> {
    /// The URL published.
    pub url: &'a str,
    /// What the publish announced (`URL_UPDATED`, `URL_DELETED`): the
    /// notification a 2xx should say Google recorded.
    pub action: Action,
    /// The service account's `client_email` from the key file.
    pub client_email: &'a str,
    /// The key file's `project_id`: the Cloud project whose quota is spent.
    pub project_id: &'a str,
}

/// Whether a 2xx body is Google's own: a JSON object (`publish` answers
/// `{"urlNotificationMetadata": {…}}`). An empty, HTML or cut-off body is
/// not; what an object without `latestUpdate` means is read apart.
fn google_body(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body).is_ok_and(|v| v.is_object())
}

/// A google.rpc.Status error body (`{"error": {"code", "message", "status", "details"}}`), as far as it reads.
#[derive(Debug, Default)]
struct GoogleError {
    message: String,
    status: String,
    /// Texts that may name the quota limit: ErrorInfo `metadata.quota_limit`/`quota_metric`,
    /// QuotaFailure `violations[].description`/`quotaId`/`quotaMetric`.
    quota_texts: Vec<String>,
    /// `error.details[]` google.rpc.ErrorInfo `reason`s (`SERVICE_DISABLED`, `RATE_LIMIT_EXCEEDED`, …).
    infos: Vec<String>,
    /// The older `error.errors[].reason`s (`rateLimitExceeded`, `accessNotConfigured`, …).
    legacy: Vec<String>,
}

impl GoogleError {
    fn has_info(&self, reasons: &[&str]) -> bool {
        self.infos.iter().any(|r| reasons.contains(&r.as_str()))
    }

    fn has_legacy(&self, reasons: &[&str]) -> bool {
        self.legacy.iter().any(|r| reasons.iter().any(|l| l.eq_ignore_ascii_case(r)))
    }
}

/// ErrorInfo reasons of a spent quota (google.api.ErrorReason).
const GOOGLE_QUOTA_INFOS: &[&str] = &["RATE_LIMIT_EXCEEDED", "RESOURCE_QUOTA_EXCEEDED"];
/// The older `errors[].reason`s of a spent quota.
const GOOGLE_QUOTA_LEGACY: &[&str] =
    &["rateLimitExceeded", "userRateLimitExceeded", "dailyLimitExceeded", "quotaExceeded"];

/// Reads a google.rpc.Status body; tolerates anything (None when there is no `error` object to read).
fn google_error(body: &str) -> Option<GoogleError> {
    let value: serde_json::Value = serde_json::from_str(body.trim()).ok()?;
    // Some front ends wrap the error in a one-element array.
    let root = match &value {
        serde_json::Value::Array(items) => items.first()?,
        other => other,
    };
    let error = root.get("error")?;
    let text = |v: &serde_json::Value, key: &str| v.get(key).and_then(|t| t.as_str()).map(str::to_string);
    let mut found = GoogleError {
        message: text(error, "message").unwrap_or_default(),
        // `{"error": "SOME_STATUS"}`: the OAuth form, where only a code is given.
        status: text(error, "status").or_else(|| error.as_str().map(str::to_string)).unwrap_or_default(),
        ..GoogleError::default()
    };
    let details = error.get("details").and_then(|d| d.as_array()).into_iter().flatten();
    for detail in details {
        let kind = detail.get("@type").and_then(|t| t.as_str()).unwrap_or_default();
        if kind.ends_with("ErrorInfo") {
            found.infos.extend(text(detail, "reason"));
            if let Some(metadata) = detail.get("metadata") {
                found.quota_texts.extend(["quota_limit", "quota_metric"].iter().filter_map(|k| text(metadata, k)));
            }
        } else if kind.ends_with("QuotaFailure") {
            for violation in detail.get("violations").and_then(|v| v.as_array()).into_iter().flatten() {
                let texts = ["description", "quotaId", "quotaMetric"].iter().filter_map(|k| text(violation, k));
                found.quota_texts.extend(texts);
            }
        }
    }
    for legacy in error.get("errors").and_then(|e| e.as_array()).into_iter().flatten() {
        found.legacy.extend(text(legacy, "reason"));
    }
    Some(found)
}

/// Which limit a Google quota answer names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GoogleQuota {
    Day,
    Minute,
    Unknown,
}

/// Reads the limit from the structured fields first — the ErrorInfo metadata,
/// the QuotaFailure violations and the legacy reasons (`dailyLimitExceeded`)
/// — and only when they name none from the message, case-insensitively. A
/// per-day limit wins when both are named.
///
/// The message is free text, read because Google's per-day answer names its
/// limit nowhere else: `429 RESOURCE_EXHAUSTED "Quota exceeded for quota
/// metric 'Publish requests' and limit 'Publish requests per day' of service
/// 'indexing.googleapis.com' for consumer 'project_number:…'."` (fixture
/// `google-429-per-day`), and its "per minute" twin.
fn google_quota_kind(error: Option<&GoogleError>) -> GoogleQuota {
    let Some(error) = error else {
        return GoogleQuota::Unknown;
    };
    let kind = |texts: &[&String]| {
        let texts: Vec<String> = texts.iter().map(|t| t.to_ascii_lowercase()).collect();
        let names = |needles: &[&str]| texts.iter().any(|t| needles.iter().any(|n| t.contains(n)));
        if names(&["perday", "per day", "per_day", "per-day", "dailylimitexceeded"]) {
            GoogleQuota::Day
        } else if names(&["perminute", "per minute", "per_minute", "per-minute"]) {
            GoogleQuota::Minute
        } else {
            GoogleQuota::Unknown
        }
    };
    let structured: Vec<&String> = error.quota_texts.iter().chain(&error.legacy).collect();
    match kind(&structured) {
        GoogleQuota::Unknown => kind(&[&error.message]),
        named => named,
    }
}

/// A quota answer by its structured fields: an ErrorInfo reason of a spent
/// quota, or a legacy `errors[].reason` (`rateLimitExceeded`, …), at any status.
fn google_structured_quota(error: Option<&GoogleError>) -> bool {
    error.is_some_and(|e| e.has_info(GOOGLE_QUOTA_INFOS) || e.has_legacy(GOOGLE_QUOTA_LEGACY))
}

/// A quota answer in the older form that carries nothing structured: a 403
/// whose message starts "Quota exceeded" — `403 PERMISSION_DENIED "Quota
/// exceeded for quota group 'default' and limit 'per_day' …"`, as Google's
/// APIs answered before ErrorInfo details — and no ErrorInfo reason saying
/// something else. Free text, read only then.
fn google_quota_text(status: u16, error: Option<&GoogleError>) -> bool {
    error.is_some_and(|e| {
        status == 403 && e.infos.is_empty() && e.message.to_ascii_lowercase().starts_with("quota exceeded")
    })
}

/// "Google answered HTTP 403 Forbidden, PERMISSION_DENIED (Permission denied. ...)": Google's own
/// status and message when the body has them, else the body's excerpt.
fn google_answered(resp: &Response, error: Option<&GoogleError>) -> String {
    let Some(error) = error.filter(|e| !e.message.is_empty() || !e.status.is_empty()) else {
        return answered(EngineKind::Google, resp, "");
    };
    let mut said = format!("Google answered {}", http_status(resp.status));
    if !error.status.is_empty() {
        said.push_str(&format!(", {}", excerpt(&error.status)));
    }
    if !error.message.is_empty() {
        said.push_str(&format!(" ({})", excerpt(&error.message)));
    }
    said
}

/// Classifies an Indexing API answer (`urlNotifications:publish`); the URL
/// Inspection API's are [`google_inspection`]'s.
///
/// | answer | class | reason |
/// |---|---|---|
/// | 2xx whose `urlNotificationMetadata` holds the notification sent (`latestUpdate` for `URL_UPDATED`, `latestRemove` for `URL_DELETED`), or with no `urlNotificationMetadata` | accepted | `ok` |
/// | 2xx whose `urlNotificationMetadata` lacks it | accepted | `received` |
/// | 2xx with any other body (empty, HTML, cut off) | accepted | `unrecognized_body` (the body is kept) |
/// | 429, `RESOURCE_EXHAUSTED`, an ErrorInfo reason `RATE_LIMIT_EXCEEDED` / `RESOURCE_QUOTA_EXCEEDED` or a legacy reason `rateLimitExceeded` / `dailyLimitExceeded` / … (any HTTP status), or a 403 without ErrorInfo whose message starts "Quota exceeded", naming a per-day limit (ErrorInfo `quota_limit`/`quota_metric`, QuotaFailure violations, legacy `dailyLimitExceeded`; else "per day", `PerDay`, `per_day` in the message) | quota | `daily_quota`: window [`Period::Day`], no `Retry-After` (the caller waits for the next quota day, midnight America/Los_Angeles) |
/// | the same, naming a per-minute limit | quota | `rate_limited`: window [`Period::Minute`], `Retry-After`, else [`GOOGLE_SHORT_WAIT`] s |
/// | the same, naming no limit (or not JSON) | quota | `quota`: window [`Period::Minute`], `Retry-After`, else [`GOOGLE_SHORT_WAIT`] s (never the next day unasked) |
/// | status `INTERNAL`, `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED` (any HTTP status) | transient | the status lower-cased (`internal`, `unavailable`, `deadline_exceeded`, `aborted`) |
/// | other 5xx (JSON or HTML) | transient | `server_error` |
/// | 408 | transient | `http_408` |
/// | 4xx or `PERMISSION_DENIED` with the ErrorInfo reason `SERVICE_DISABLED` (or that status, or the legacy reason `accessNotConfigured`); a 403 without ErrorInfo whose message says the API "has not been used in project" | misconfigured | `api_disabled` |
/// | 403 whose message says "Failed to verify the URL ownership" (Indexing API) or "does not have sufficient permission for site" (URL Inspection API) | misconfigured | `ownership_not_verified` |
/// | 401 or `UNAUTHENTICATED` (after the engine refreshed the token once) | misconfigured | `unauthenticated` |
/// | 400 or `INVALID_ARGUMENT` | misconfigured | `invalid_argument` |
/// | 404 | misconfigured | `http_404` |
/// | other 403 or `PERMISSION_DENIED` | misconfigured | `permission_denied` |
/// | other 3xx, 4xx | misconfigured | `http_<status>` |
/// | anything else (1xx, ≥ 600) | transient | `unexpected_status` |
///
/// Every transient verdict carries the server's `Retry-After`, if any. The
/// message quotes Google's `status` and `message` (or the body's excerpt).
pub fn google(resp: &Response, ctx: &GoogleContext) -> Verdict {
    let status = resp.status;
    let error = google_error(resp.body);
    let error = error.as_ref();
    let g_status = error.map_or("", |e| e.status.as_str());
    let answered = google_answered(resp, error);
    if (200..=299).contains(&status) && !google_body(resp.body) {
        return unrecognized_body(EngineKind::Google, resp, "", "a body that is not Google's JSON");
    }
    if (200..=299).contains(&status) {
        return google_accepted(resp, ctx);
    }
    if status == 429 || g_status == "RESOURCE_EXHAUSTED" || google_structured_quota(error) {
        return google_quota(resp, error, &answered, ctx.project_id);
    }
    if let Some(reason) = google_failure(status, g_status) {
        let what = match reason {
            TransientReason::RequestTimeout => "the server gave up waiting for the request",
            _ => "Google failed on its side",
        };
        return transient_answered(resp, &answered, reason, what);
    }
    google_refused(resp, ctx, error, &answered)
}

/// A failure on Google's side, to try again: its status (`INTERNAL`,
/// `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`, at any HTTP status), else
/// a 5xx or a 408.
fn google_failure(status: u16, g_status: &str) -> Option<TransientReason> {
    let failed = match g_status {
        "INTERNAL" => Some(TransientReason::Internal),
        "UNAVAILABLE" => Some(TransientReason::Unavailable),
        "DEADLINE_EXCEEDED" => Some(TransientReason::DeadlineExceeded),
        "ABORTED" => Some(TransientReason::Aborted),
        _ => None,
    };
    failed.or(match status {
        500..=599 => Some(TransientReason::ServerError),
        408 => Some(TransientReason::RequestTimeout),
        _ => None,
    })
}

/// An API the project has not enabled, as Google says it in structured
/// fields: the ErrorInfo reason (google.api.ErrorReason `SERVICE_DISABLED`,
/// with `metadata.service` and `metadata.consumer`), the status, or the
/// older `errors[].reason` `accessNotConfigured` — never the body as a
/// whole, which may quote a URL holding those words.
fn service_disabled(error: Option<&GoogleError>) -> bool {
    error.is_some_and(|e| {
        e.has_info(&["SERVICE_DISABLED"]) || e.status == "SERVICE_DISABLED" || e.has_legacy(&["accessNotConfigured"])
    })
}

/// A disabled API answered without its ErrorInfo: a refusal (`forbidden`)
/// whose message (lower-cased) is "… API has not been used in project
/// 875626095483 before or it is disabled. Enable it by visiting …".
fn api_not_used(forbidden: bool, error: Option<&GoogleError>, message: &str) -> bool {
    forbidden && error.is_some_and(|e| e.infos.is_empty()) && message.contains("has not been used in project")
}

/// A publish refused for what waiting will not change: the API disabled,
/// a quota said only in words, the property not the service account's, or
/// by status ([`google_refused_by_status`]).
fn google_refused(resp: &Response, ctx: &GoogleContext, error: Option<&GoogleError>, answered: &str) -> Verdict {
    let status = resp.status;
    let (url, email, project) = (ctx.url, ctx.client_email, ctx.project_id);
    let g_status = error.map_or("", |e| e.status.as_str());
    let client_error = (400..=499).contains(&status);
    let forbidden = status == 403 || g_status == "PERMISSION_DENIED";
    let api_disabled = Verdict::misconfigured(
        MisconfiguredReason::ApiDisabled,
        format!("{answered}: the Web Search Indexing API is not enabled for the Google Cloud project {project}."),
        format!(
            "Enable the Web Search Indexing API (indexing.googleapis.com) for the project {project} in the Google \
             Cloud console (APIs & Services → Library; for URL inspection also the Google Search Console API, \
             searchconsole.googleapis.com), wait a few minutes, then `indexq queue retry`."
        ),
    );
    if (client_error || forbidden) && service_disabled(error) {
        return api_disabled;
    }
    // Below, free text where Google gives nothing structured but
    // `PERMISSION_DENIED`: the message (never the whole body) is read.
    let message = error.map(|e| e.message.to_ascii_lowercase()).unwrap_or_default();
    if forbidden && google_quota_text(status, error) {
        return google_quota(resp, error, answered, project);
    }
    if api_not_used(forbidden, error, &message) {
        return api_disabled;
    }
    // "Permission denied. Failed to verify the URL ownership." (Indexing API,
    // fixture `google-403-ownership`) and "User does not have sufficient
    // permission for site '…'." (URL Inspection API): both come with
    // `PERMISSION_DENIED` and no ErrorInfo reason of their own.
    let ownership = message.contains("failed to verify the url ownership")
        || message.contains("does not have sufficient permission for site");
    if forbidden && ownership {
        return Verdict::misconfigured(
            MisconfiguredReason::OwnershipNotVerified,
            format!("{answered}: Google does not see {email} as an owner of the Search Console property of {url}."),
            format!(
                "Add {email} as an Owner of the property in Search Console (Settings → Users and permissions), \
                 and check that the URL's scheme and host match the property (http vs https, www or not; a \
                 Domain property, sc-domain:, covers them all)."
            ),
        );
    }
    google_refused_by_status(resp, ctx, forbidden, g_status, answered)
}

/// A publish refused, by its status: 401, 400, 404, another 403, another
/// 3xx or 4xx; anything else is a status no engine documents.
fn google_refused_by_status(
    resp: &Response,
    ctx: &GoogleContext,
    forbidden: bool,
    g_status: &str,
    answered: &str,
) -> Verdict {
    let status = resp.status;
    let (url, email, project) = (ctx.url, ctx.client_email, ctx.project_id);
    if status == 401 || g_status == "UNAUTHENTICATED" {
        return Verdict::misconfigured(
            MisconfiguredReason::Unauthenticated,
            format!(
                "{answered}: Google did not accept the access token of {email}, even after indexq fetched a new one."
            ),
            format!(
                "Check that the service account {email} and its key still exist and are enabled in the project \
                 {project}, that `token_uri` in the key file is Google's (https://oauth2.googleapis.com/token), \
                 and that the machine's clock is right."
            ),
        );
    }
    if status == 400 || g_status == "INVALID_ARGUMENT" {
        return Verdict::misconfigured(
            MisconfiguredReason::InvalidArgument,
            format!("{answered}: Google refused the request for {url} as invalid."),
            format!(
                "Check that {url} is a complete, well-formed http(s) URL of the property; if it is, report \
                 this response as an indexq bug."
            ),
        );
    }
    let endpoint = "Check `endpoint` in `[google]` (https://indexing.googleapis.com) and, for URL inspection, \
                    `inspection_endpoint` (https://searchconsole.googleapis.com)";
    if status == 404 {
        return Verdict::misconfigured(
            MisconfiguredReason::Http(HttpStatus(404)),
            format!("{answered}: the endpoint does not know the request."),
            format!("{endpoint}."),
        );
    }
    if forbidden {
        return Verdict::misconfigured(
            MisconfiguredReason::PermissionDenied,
            format!("{answered}: Google denied {email} permission for {url}."),
            format!(
                "Check that {email} is an Owner of the Search Console property of {url}, that the Web Search \
                 Indexing API is enabled for the project {project}, and that the service account is enabled."
            ),
        );
    }
    if (300..=499).contains(&status) {
        return Verdict::misconfigured(
            MisconfiguredReason::Http(HttpStatus(status)),
            format!("{answered}: the Google API refused the request, and waiting will not change that."),
            format!("{endpoint}; if they are right, report this response."),
        );
    }
    transient_answered(resp, answered, TransientReason::UnexpectedStatus, "no engine documents that status")
}

/// A publish Google answered 2xx, read by the notification it says it
/// recorded. Google documents its success as `{"urlNotificationMetadata":
/// {"url", "latestUpdate": {"url", "type": "URL_UPDATED", "notifyTime"}}}`
/// (`latestRemove` for `URL_DELETED`), and since 2024 answers a page the
/// Indexing API is not documented for (only pages with `JobPosting` or
/// `BroadcastEvent` in a `VideoObject` are) with `{"urlNotificationMetadata":
/// {"url": "…"}}` alone (googleapis/google-api-nodejs-client issue 3560,
/// fixture `google-200-received`): `received`, so that a user sees how many
/// notifications Google merely took. A body without `urlNotificationMetadata`
/// (an empty 204) says nothing either way: `ok`.
fn google_accepted(resp: &Response, ctx: &GoogleContext) -> Verdict {
    let (url, status) = (ctx.url, http_status(resp.status));
    let field = match ctx.action {
        Action::Updated => "latestUpdate",
        Action::Deleted => "latestRemove",
    };
    let metadata = serde_json::from_str::<serde_json::Value>(resp.body.trim())
        .ok()
        .and_then(|v| v.get("urlNotificationMetadata").filter(|m| m.is_object()).cloned());
    let Some(metadata) = metadata else {
        return Verdict::new(AcceptedReason::Ok, format!("Google accepted the request for {url} ({status})."));
    };
    match metadata.get(field).filter(|n| n.is_object()) {
        Some(notification) => {
            let at = notification.get("notifyTime").and_then(|t| t.as_str()).map(excerpt);
            let at = at.map(|t| format!(", notified at {t}")).unwrap_or_default();
            Verdict::new(AcceptedReason::Ok, format!("Google accepted the request for {url} ({status}{at})."))
        }
        None => Verdict::new(
            AcceptedReason::Received,
            format!(
                "Google received the notification for {url} ({status}) but its answer records no `{field}`: \
                 Google answers so for pages the Indexing API is not documented for (only pages with JobPosting \
                 or BroadcastEvent in a VideoObject structured data are), and says nothing of crawling them."
            ),
        ),
    }
}

/// A Google quota answer: the per-day quota (next quota day), a per-minute limit, or one it did not name.
fn google_quota(resp: &Response, error: Option<&GoogleError>, answered: &str, project: &str) -> Verdict {
    quota_verdict(
        resp,
        error,
        || {
            format!(
                "{answered}: Google's per-project daily quota of the Indexing API (project {project}) is used; it \
                 resets at midnight Pacific time. indexq waits for the next quota day."
            )
        },
        |minute, when| {
            let what = match minute {
                true => format!("the per-minute request limit of the project {project} is reached"),
                false => format!("a quota of the project {project} is used, and Google did not say which"),
            };
            format!("{answered}: {what}. indexq retries {when}.")
        },
    )
}

/// A quota answer of any Google API: a per-day limit named is the day's
/// window (`day` says it); anything else — a per-minute limit named
/// (`rate_limited`) or none (`quota`) — spends the minute's, never the
/// day's, and waits a short while: the server's Retry-After, at most
/// `GOOGLE_SHORT_WAIT_CAP` seconds (an HTTP date is trusted as it is), else
/// `GOOGLE_SHORT_WAIT` s. `short` says it, told whether a per-minute limit
/// was named and when indexq retries.
fn quota_verdict(
    resp: &Response,
    error: Option<&GoogleError>,
    day: impl FnOnce() -> String,
    short: impl FnOnce(bool, &str) -> String,
) -> Verdict {
    let kind = google_quota_kind(error);
    if kind == GoogleQuota::Day {
        return Verdict { quota_window: Period::Day, ..Verdict::new(QuotaReason::DailyQuota, day()) };
    }
    let retry_after = match resp.retry_after() {
        Some(RetryAfter::Seconds(s)) => Some(RetryAfter::Seconds(s.min(GOOGLE_SHORT_WAIT_CAP))),
        Some(at) => Some(at),
        None => Some(RetryAfter::Seconds(GOOGLE_SHORT_WAIT)),
    };
    let when = retry_after.map(|r| r.to_string()).unwrap_or_default();
    let minute = kind == GoogleQuota::Minute;
    let reason = if minute { QuotaReason::RateLimited } else { QuotaReason::Quota };
    Verdict { retry_after, quota_window: Period::Minute, ..Verdict::new(reason, short(minute, &when)) }
}
