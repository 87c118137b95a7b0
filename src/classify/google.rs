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
//! [`search_console_list`], their refusals by [`search_console_refusal`].

use super::{answered, excerpt, http_status, transient_answered, unrecognized_body, Response, RetryAfter, Verdict};
use crate::model::{AcceptedReason, EngineKind, HttpStatus, MisconfiguredReason, QuotaReason, TransientReason};
use crate::model::{Action, Period, SitemapReading};

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

/// What indexq knows about a URL inspection besides the response.
#[derive(Debug, Clone, Copy)]
pub struct InspectionContext<'a> {
    /// The URL inspected (`inspectionUrl`).
    pub url: &'a str,
    /// The Search Console property asked (`siteUrl`: the property's
    /// `google.site_url`, `https://…/` or `sc-domain:…`).
    pub site_url: &'a str,
    pub client_email: &'a str,
    pub project_id: &'a str,
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
    let kind = google_quota_kind(error);
    if kind == GoogleQuota::Day {
        return Verdict {
            quota_window: Period::Day,
            ..Verdict::new(
                QuotaReason::DailyQuota,
                format!(
                    "{answered}: Google's per-project daily quota of the Indexing API (project {project}) is used; \
                     it resets at midnight Pacific time. indexq waits for the next quota day."
                ),
            )
        };
    }
    // A short limit waits a short while: the server's Retry-After, at most
    // GOOGLE_SHORT_WAIT_CAP seconds (an HTTP date is trusted as it is).
    let retry_after = match resp.retry_after() {
        Some(RetryAfter::Seconds(s)) => Some(RetryAfter::Seconds(s.min(GOOGLE_SHORT_WAIT_CAP))),
        Some(at) => Some(at),
        None => Some(RetryAfter::Seconds(GOOGLE_SHORT_WAIT)),
    };
    let when = retry_after.map(|r| r.to_string()).unwrap_or_default();
    let (reason, what) = match kind {
        GoogleQuota::Minute => {
            (QuotaReason::RateLimited, format!("the per-minute request limit of the project {project} is reached"))
        }
        _ => (QuotaReason::Quota, format!("a quota of the project {project} is used, and Google did not say which")),
    };
    // A short wait: the minute's window is spent, never the day's.
    Verdict {
        retry_after,
        quota_window: Period::Minute,
        ..Verdict::new(reason, format!("{answered}: {what}. indexq retries {when}."))
    }
}

/// Classifies a URL Inspection API answer (`urlInspection/index:inspect`,
/// for `skip_indexed`). The classes are any answer's; what indexq does with
/// them (publish anyway, or stop inspecting for a while) is the caller's:
/// the messages say what Google said, not what happens next.
///
/// | answer | class | reason |
/// |---|---|---|
/// | 2xx whose `inspectionResult.indexStatusResult.verdict` is `PASS` | accepted | `already_indexed` |
/// | other 2xx | accepted | `ok` (not indexed, or nothing said) |
/// | 429, `RESOURCE_EXHAUSTED`, an ErrorInfo quota reason or a legacy quota reason, naming a per-day limit | quota | `daily_quota`: window [`Period::Day`] |
/// | the same, naming a per-minute limit, or none ("Quota exceeded for sc-domain:….") | quota | `rate_limited` / `quota`: window [`Period::Minute`], `Retry-After`, else [`GOOGLE_SHORT_WAIT`] s |
/// | `INTERNAL`, `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`; other 5xx; 408 | transient | as [`google`] |
/// | the ErrorInfo reason `SERVICE_DISABLED` (or that status, or `accessNotConfigured`); a 403 without ErrorInfo saying the API "has not been used in project" | misconfigured | `api_disabled` (the Google Search Console API) |
/// | 403 "You do not own this site, or the inspected URL is not part of this property" or "User does not have sufficient permission for site" | misconfigured | `inspection_not_owner` (with the `sc-domain:` hint for a URL-prefix `site_url`) |
/// | 401 or `UNAUTHENTICATED` | misconfigured | `unauthenticated` |
/// | 400 or `INVALID_ARGUMENT` | misconfigured | `invalid_argument` |
/// | other 403 or `PERMISSION_DENIED` | misconfigured | `permission_denied` |
/// | other 3xx, 4xx | misconfigured | `http_<status>` |
/// | anything else (1xx, ≥ 600) | transient | `unexpected_status` |
pub fn google_inspection(resp: &Response, ctx: &InspectionContext) -> Verdict {
    let status = resp.status;
    let error = google_error(resp.body);
    let error = error.as_ref();
    let g_status = error.map_or("", |e| e.status.as_str());
    let answered = google_answered(resp, error).replacen("Google answered", "The URL Inspection API answered", 1);
    if (200..=299).contains(&status) {
        return inspection_result(resp, ctx.url, &answered);
    }
    if status == 429
        || g_status == "RESOURCE_EXHAUSTED"
        || google_structured_quota(error)
        || google_quota_text(status, error)
    {
        return inspection_quota(resp, error, &answered, ctx.site_url);
    }
    if let Some(reason) = google_failure(status, g_status) {
        return Verdict {
            retry_after: resp.retry_after(),
            ..Verdict::new(reason, format!("{answered}: Google failed on its side"))
        };
    }
    inspection_refused(resp, ctx, error, &answered)
}

/// What an inspection answered 2xx says of the URL. The documented result:
/// {"inspectionResult": {"indexStatusResult": {"verdict": "PASS" |
/// "PARTIAL" | "FAIL" | "NEUTRAL" | …, "coverageState": …}}}.
fn inspection_result(resp: &Response, url: &str, answered: &str) -> Verdict {
    let result = serde_json::from_str::<serde_json::Value>(resp.body.trim()).ok();
    let index = result.as_ref().map(|v| &v["inspectionResult"]["indexStatusResult"]);
    let said = |key: &str| index.and_then(|i| i[key].as_str()).map(excerpt);
    let coverage = said("coverageState").map(|c| format!(", \"{c}\"")).unwrap_or_default();
    match said("verdict") {
        Some(verdict) if verdict == "PASS" => Verdict::new(
            AcceptedReason::AlreadyIndexed,
            format!("the URL Inspection API says Google has indexed {url} (PASS{coverage})"),
        ),
        Some(verdict) => Verdict::new(
            AcceptedReason::Ok,
            format!("the URL Inspection API says {url} is not indexed ({verdict}{coverage})"),
        ),
        None => Verdict::new(
            AcceptedReason::Ok,
            format!("{answered} without an index status for {url}: it is taken as not indexed"),
        ),
    }
}

/// An inspection refused for what waiting will not change: the API
/// disabled, the URL not in a property the service account may inspect, or
/// by status ([`inspection_refused_by_status`]).
fn inspection_refused(
    resp: &Response,
    ctx: &InspectionContext,
    error: Option<&GoogleError>,
    answered: &str,
) -> Verdict {
    let status = resp.status;
    let (url, site, email, project) = (ctx.url, ctx.site_url, ctx.client_email, ctx.project_id);
    let g_status = error.map_or("", |e| e.status.as_str());
    let forbidden = status == 403 || g_status == "PERMISSION_DENIED";
    let client_error = (400..=499).contains(&status);
    let message = error.map(|e| e.message.to_ascii_lowercase()).unwrap_or_default();
    // The ErrorInfo reason, the status or the legacy reason first; a 403
    // without ErrorInfo whose message is "Google Search Console API has not
    // been used in project 311386532115 before or it is disabled. Enable it
    // by visiting …" (googleworkspace/apps-script-oauth2 issue 443, fixture
    // `google-inspection-403-api-disabled`) only then.
    let disabled = service_disabled(error) || api_not_used(forbidden, error, &message);
    if (client_error || forbidden) && disabled {
        return Verdict::misconfigured(
            MisconfiguredReason::ApiDisabled,
            format!("{answered}: the Google Search Console API is not enabled for the Google Cloud project {project}"),
            format!(
                "Enable the Google Search Console API (searchconsole.googleapis.com) for the project {project} in \
                 the Google Cloud console (APIs & Services → Library), wait a few minutes; `indexq doctor` checks it."
            ),
        );
    }
    // "You do not own this site, or the inspected URL is not part of this
    // property." (403 PERMISSION_DENIED, goenning/google-indexing-script
    // issue 52, fixture `google-inspection-403-not-owner`: a service account
    // that is no user of the property, or a `siteUrl` that names another
    // property than the one the URL is in), and the Search Console API's
    // "User does not have sufficient permission for site '…'." — both with
    // no ErrorInfo reason of their own.
    let not_owner = message.contains("you do not own this site")
        || message.contains("not part of this property")
        || message.contains("does not have sufficient permission for site");
    if forbidden && not_owner {
        return Verdict::misconfigured(
            MisconfiguredReason::InspectionNotOwner,
            format!("{answered}: Google does not let {email} inspect {url} in the Search Console property {site}"),
            inspection_owner_hint(site, email),
        );
    }
    inspection_refused_by_status(status, ctx, forbidden, g_status, answered)
}

/// An inspection refused, by its status: 401, 400, another 403, another
/// 3xx or 4xx; anything else is a status no engine documents.
fn inspection_refused_by_status(
    status: u16,
    ctx: &InspectionContext,
    forbidden: bool,
    g_status: &str,
    answered: &str,
) -> Verdict {
    let (url, site, email, project) = (ctx.url, ctx.site_url, ctx.client_email, ctx.project_id);
    if status == 401 || g_status == "UNAUTHENTICATED" {
        return Verdict::misconfigured(
            MisconfiguredReason::Unauthenticated,
            format!("{answered}: Google did not accept the access token of {email} for URL inspection"),
            format!(
                "Check that the service account {email} and its key still exist and are enabled in the project \
                 {project}, and that the machine's clock is right."
            ),
        );
    }
    if status == 400 || g_status == "INVALID_ARGUMENT" {
        return Verdict::misconfigured(
            MisconfiguredReason::InvalidArgument,
            format!("{answered}: Google refused to inspect {url} in {site} as invalid"),
            format!(
                "Check the property's `google.site_url` ({site}): it must name the Search Console property exactly \
                 as Search Console does (`https://example.com/` with its trailing slash, or `sc-domain:example.com`), \
                 and {url} must be in it."
            ),
        );
    }
    if forbidden {
        return Verdict::misconfigured(
            MisconfiguredReason::PermissionDenied,
            format!("{answered}: Google denied {email} the inspection of {url}"),
            inspection_owner_hint(site, email),
        );
    }
    if (300..=499).contains(&status) {
        return Verdict::misconfigured(
            MisconfiguredReason::Http(HttpStatus(status)),
            format!("{answered}: the URL Inspection API refused the request"),
            "Check `inspection_endpoint` in `[google]` (https://searchconsole.googleapis.com).",
        );
    }
    Verdict::new(TransientReason::UnexpectedStatus, format!("{answered}: no engine documents that status"))
}

/// The fix for an inspection Google refused as not the property's: add the
/// service account to the property, and name the property as Search
/// Console does — with the `sc-domain:` form when `site_url` is a URL
/// prefix, the usual mistake for a Domain property.
fn inspection_owner_hint(site: &str, email: &str) -> String {
    let mut hint = format!(
        "Add {email} as a user (an Owner, which publishing needs too) of the Search Console property {site} \
         (Settings → Users and permissions), and check that the property's `google.site_url` names that property \
         exactly as Search Console lists it."
    );
    if let Some(host) = url::Url::parse(site)
        .ok()
        .filter(|u| u.scheme().starts_with("http"))
        .and_then(|u| u.host_str().map(|h| h.strip_prefix("www.").unwrap_or(h).to_string()))
    {
        hint.push_str(&format!(
            " `{site}` is a URL-prefix property: if the site is verified as a Domain property, set \
             `site_url = \"sc-domain:{host}\"` in the property's google table."
        ));
    }
    hint
}

/// An inspection quota answer. Google's per-property limits on URL
/// inspections are 2,000 a day and 600 a minute; its answer often names
/// neither — `429 RESOURCE_EXHAUSTED "Quota exceeded for sc-domain:….`"
/// (goenning/google-indexing-script issue 45, fixture
/// `google-inspection-429-quota`) — and is then taken as the minute's, as a
/// publish's is: a wrong guess costs an inspection a minute, never a day of
/// inspections.
fn inspection_quota(resp: &Response, error: Option<&GoogleError>, answered: &str, site: &str) -> Verdict {
    let kind = google_quota_kind(error);
    if kind == GoogleQuota::Day {
        return Verdict {
            quota_window: Period::Day,
            ..Verdict::new(
                QuotaReason::DailyQuota,
                format!(
                    "{answered}: the daily URL inspection quota of {site} is used (it resets at midnight Pacific time)"
                ),
            )
        };
    }
    let retry_after = match resp.retry_after() {
        Some(RetryAfter::Seconds(s)) => Some(RetryAfter::Seconds(s.min(GOOGLE_SHORT_WAIT_CAP))),
        Some(at) => Some(at),
        None => Some(RetryAfter::Seconds(GOOGLE_SHORT_WAIT)),
    };
    let (reason, what) = match kind {
        GoogleQuota::Minute => (QuotaReason::RateLimited, "the per-minute URL inspection limit"),
        _ => (QuotaReason::Quota, "a URL inspection quota (Google did not say which)"),
    };
    Verdict {
        retry_after,
        quota_window: Period::Minute,
        ..Verdict::new(reason, format!("{answered}: {what} of {site} is used"))
    }
}

/// What indexq knows about a Search Console sitemaps request
/// (`sitemaps.submit`, `get`, `list`) besides the response.
#[derive(Debug, Clone, Copy)]
pub struct SitemapsContext<'a> {
    /// The sitemap submitted or read (`feedpath`); empty for `list`.
    pub sitemap: &'a str,
    /// The Search Console property asked (`siteUrl`: `google.site_url`).
    pub site_url: &'a str,
    pub client_email: &'a str,
    pub project_id: &'a str,
}

/// Classifies Search Console's answer to `sitemaps.submit` (`PUT
/// …/webmasters/v3/sites/{siteUrl}/sitemaps/{feedpath}`, which answers an
/// empty body on success); its refusals are [`search_console_refusal`]'s.
///
/// | answer | class | reason |
/// |---|---|---|
/// | 2xx, empty or JSON | accepted | `ok` |
/// | 2xx with any other body (HTML, cut off) | accepted | `unrecognized_body` |
/// | any other | as [`search_console_refusal`] | |
pub fn search_console_submit(resp: &Response, ctx: &SitemapsContext) -> Verdict {
    if (200..=299).contains(&resp.status) {
        let body = resp.body.trim();
        if !body.is_empty() && serde_json::from_str::<serde_json::Value>(body).is_err() {
            return unrecognized_body(EngineKind::Google, resp, "", "a body that is not Google's JSON");
        }
        return Verdict::new(
            AcceptedReason::Ok,
            format!(
                "Search Console took the sitemap {} for {} ({}).",
                ctx.sitemap,
                ctx.site_url,
                http_status(resp.status)
            ),
        );
    }
    search_console_refusal(resp, ctx)
}

/// Reads Search Console's answer to `sitemaps.get` (`GET
/// …/sites/{siteUrl}/sitemaps/{feedpath}`): the sitemap's report — its
/// documented resource `{"path", "lastSubmitted", "isPending",
/// "isSitemapsIndex", "type", "lastDownloaded", "warnings", "errors",
/// "contents": [{"type", "submitted", "indexed"}]}`, whose counts Google
/// sends as strings (int64) — or, for a 404, a sitemap Search Console does
/// not list. Any other answer is the refusal [`search_console_refusal`]
/// words; a 2xx that is not the resource is `accepted` /
/// `unrecognized_body` (no report was read).
pub fn search_console_report(resp: &Response, ctx: &SitemapsContext) -> Result<SitemapReading, Verdict> {
    if resp.status == 404 && google_error(resp.body).is_some() {
        return Ok(SitemapReading::default());
    }
    if !(200..=299).contains(&resp.status) {
        return Err(search_console_refusal(resp, ctx));
    }
    serde_json::from_str::<serde_json::Value>(resp.body.trim())
        .ok()
        .filter(|v| v.is_object())
        .map(|v| sitemap_resource(&v))
        .ok_or_else(|| unrecognized_body(EngineKind::Google, resp, "", "a body that is not Search Console's sitemap"))
}

/// Reads Search Console's answer to `sitemaps.list` (`GET
/// …/sites/{siteUrl}/sitemaps`): `{"sitemap": [resource, …]}` (the key is
/// absent when the property has none), each with its `path`.
pub fn search_console_list(resp: &Response, ctx: &SitemapsContext) -> Result<Vec<(String, SitemapReading)>, Verdict> {
    if !(200..=299).contains(&resp.status) {
        return Err(search_console_refusal(resp, ctx));
    }
    let value = serde_json::from_str::<serde_json::Value>(resp.body.trim())
        .ok()
        .filter(|v| v.is_object())
        .ok_or_else(|| unrecognized_body(EngineKind::Google, resp, "", "a body that is not Search Console's list"))?;
    Ok(value["sitemap"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| (s["path"].as_str().unwrap_or_default().to_string(), sitemap_resource(s)))
        .collect())
}

/// A Search Console sitemap resource, as indexq keeps it.
fn sitemap_resource(v: &serde_json::Value) -> SitemapReading {
    // int64 values come as strings ("12"); a number is read too.
    let count = |v: &serde_json::Value| v.as_u64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()));
    let urls: Option<u64> =
        v["contents"].as_array().map(|contents| contents.iter().filter_map(|c| count(&c["submitted"])).sum());
    SitemapReading {
        listed: true,
        submitted: v["lastSubmitted"].as_str().and_then(super::parse_time),
        downloaded: v["lastDownloaded"].as_str().and_then(super::parse_time),
        pending: v["isPending"].as_bool().unwrap_or(false),
        errors: count(&v["errors"]).unwrap_or(0),
        warnings: count(&v["warnings"]).unwrap_or(0),
        urls,
        status: v["type"].as_str().map(excerpt),
    }
}

/// Classifies a Search Console sitemaps refusal (any status but a 2xx),
/// structured fields first:
///
/// | answer | class | reason |
/// |---|---|---|
/// | 429, `RESOURCE_EXHAUSTED`, an ErrorInfo or legacy quota reason | quota | `daily_quota` when a per-day limit is named; else `rate_limited` / `quota` (a minute: `Retry-After`, else [`GOOGLE_SHORT_WAIT`] s) |
/// | `INTERNAL`, `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`; other 5xx; 408 | transient | as [`google`] |
/// | ErrorInfo `SERVICE_DISABLED` (or that status, or `accessNotConfigured`); a 403 without ErrorInfo saying the API "has not been used in project" | misconfigured | `api_disabled` (the Google Search Console API) |
/// | 403 "User does not have sufficient permission for site" (or "You do not own this site") | misconfigured | `not_property_user`: add the service account as an Owner or Full user of that exact property (the `sc-domain:` hint for a URL-prefix `site_url`) |
/// | 404 | misconfigured | `property_not_found`: no such property in Search Console under that name |
/// | 401 or `UNAUTHENTICATED` | misconfigured | `unauthenticated` |
/// | 400 or `INVALID_ARGUMENT` | misconfigured | `invalid_argument` |
/// | other 403 or `PERMISSION_DENIED` (e.g. "Request had insufficient authentication scopes") | misconfigured | `permission_denied` |
/// | other 3xx, 4xx | misconfigured | `http_<status>` |
/// | anything else (1xx, ≥ 600) | transient | `unexpected_status` |
pub fn search_console_refusal(resp: &Response, ctx: &SitemapsContext) -> Verdict {
    let status = resp.status;
    let error = google_error(resp.body);
    let error = error.as_ref();
    let g_status = error.map_or("", |e| e.status.as_str());
    let answered = google_answered(resp, error).replacen("Google answered", "Search Console answered", 1);
    let (site, email, project) = (ctx.site_url, ctx.client_email, ctx.project_id);
    if status == 429
        || g_status == "RESOURCE_EXHAUSTED"
        || google_structured_quota(error)
        || google_quota_text(status, error)
    {
        return sitemaps_quota(resp, error, &answered, email);
    }
    if let Some(reason) = google_failure(status, g_status) {
        return transient_answered(resp, &answered, reason, "Google failed on its side");
    }
    let forbidden = status == 403 || g_status == "PERMISSION_DENIED";
    let client_error = (400..=499).contains(&status);
    let message = error.map(|e| e.message.to_ascii_lowercase()).unwrap_or_default();
    let disabled = service_disabled(error) || api_not_used(forbidden, error, &message);
    if (client_error || forbidden) && disabled {
        return Verdict::misconfigured(
            MisconfiguredReason::ApiDisabled,
            format!("{answered}: the Google Search Console API is not enabled for the Google Cloud project {project}."),
            format!(
                "Enable the Google Search Console API (searchconsole.googleapis.com) for the project {project} in \
                 the Google Cloud console (APIs & Services → Library), wait a few minutes; `indexq doctor` checks it."
            ),
        );
    }
    // "User does not have sufficient permission for site 'https://…/'. See
    // also: https://support.google.com/webmasters/answer/2451999." (403,
    // `errors[].reason` "forbidden", no ErrorInfo: googleapis/
    // google-api-ruby-client issue 206, fixture
    // `google-sitemaps-403-permission`), and the inspection API's wording
    // of the same.
    let not_user = message.contains("does not have sufficient permission for site")
        || message.contains("you do not own this site");
    if forbidden && not_user {
        return Verdict::misconfigured(
            MisconfiguredReason::NotPropertyUser,
            format!("{answered}: {email} is no Owner or Full user of the Search Console property {site}."),
            sitemaps_owner_hint(site, email),
        );
    }
    search_console_refused_by_status(resp, ctx, forbidden, g_status, &answered)
}

/// A sitemaps request refused, by its status: 401, 404 (no such property),
/// 400, another 403, another 3xx or 4xx; anything else is a status no
/// engine documents.
fn search_console_refused_by_status(
    resp: &Response,
    ctx: &SitemapsContext,
    forbidden: bool,
    g_status: &str,
    answered: &str,
) -> Verdict {
    let status = resp.status;
    let (sitemap, site, email, project) = (ctx.sitemap, ctx.site_url, ctx.client_email, ctx.project_id);
    let what = if sitemap.is_empty() { format!("the sitemaps of {site}") } else { format!("the sitemap {sitemap}") };
    if status == 401 || g_status == "UNAUTHENTICATED" {
        return Verdict::misconfigured(
            MisconfiguredReason::Unauthenticated,
            format!("{answered}: Google did not accept the access token of {email} for Search Console."),
            format!(
                "Check that the service account {email} and its key still exist and are enabled in the project \
                 {project}, and that the machine's clock is right."
            ),
        );
    }
    if status == 404 {
        return Verdict::misconfigured(
            MisconfiguredReason::PropertyNotFound,
            format!("{answered}: Search Console has no property {site} to take {what}."),
            format!(
                "Set the property's `google.site_url` to the property exactly as Search Console lists it — a \
                 URL-prefix property with its scheme and trailing slash (`https://example.com/`), a Domain property \
                 as `sc-domain:example.com` — and check `inspection_endpoint` in `[google]` \
                 (https://searchconsole.googleapis.com), which serves the sitemaps too; add {email} to that property \
                 as an Owner or Full user."
            ),
        );
    }
    if status == 400 || g_status == "INVALID_ARGUMENT" {
        return Verdict::misconfigured(
            MisconfiguredReason::InvalidArgument,
            format!("{answered}: Search Console refused {what} for {site} as invalid."),
            format!(
                "Check the property's `google.site_url` ({site}: `https://example.com/` with its trailing slash, or \
                 `sc-domain:example.com`) and that the sitemap's URL is a complete http(s) URL within that property."
            ),
        );
    }
    if forbidden {
        return Verdict::misconfigured(
            MisconfiguredReason::PermissionDenied,
            format!("{answered}: Google denied {email} {what} of {site}."),
            sitemaps_owner_hint(site, email),
        );
    }
    if (300..=499).contains(&status) {
        return Verdict::misconfigured(
            MisconfiguredReason::Http(HttpStatus(status)),
            format!("{answered}: Search Console refused the request, and waiting will not change that."),
            "Check `inspection_endpoint` in `[google]` (https://searchconsole.googleapis.com): it serves the \
             sitemaps too.",
        );
    }
    transient_answered(resp, answered, TransientReason::UnexpectedStatus, "no engine documents that status")
}

/// The fix for a sitemaps request Google refused as not the property's:
/// the service account as an Owner or Full user of that exact property,
/// with the `sc-domain:` form when `site_url` is a URL prefix.
fn sitemaps_owner_hint(site: &str, email: &str) -> String {
    let mut hint = format!(
        "Add {email} as an Owner or Full user of the Search Console property {site} (Settings → Users and \
         permissions) — that exact property: a URL-prefix property and a Domain property are two properties — and \
         check that the property's `google.site_url` names it as Search Console lists it."
    );
    if let Some(host) = url::Url::parse(site)
        .ok()
        .filter(|u| u.scheme().starts_with("http"))
        .and_then(|u| u.host_str().map(|h| h.strip_prefix("www.").unwrap_or(h).to_string()))
    {
        hint.push_str(&format!(
            " `{site}` is a URL-prefix property: if the site is verified as a Domain property, set \
             `site_url = \"sc-domain:{host}\"` in the property's google table."
        ));
    }
    hint
}

/// A Search Console quota answer for sitemaps: its limits are per user (the
/// service account), 200 requests a minute; a per-day limit named is the
/// day's (until Pacific midnight), anything else a minute's.
fn sitemaps_quota(resp: &Response, error: Option<&GoogleError>, answered: &str, email: &str) -> Verdict {
    let kind = google_quota_kind(error);
    if kind == GoogleQuota::Day {
        return Verdict {
            quota_window: Period::Day,
            ..Verdict::new(
                QuotaReason::DailyQuota,
                format!("{answered}: a daily Search Console quota of {email} is used; indexq waits for the next day."),
            )
        };
    }
    let retry_after = match resp.retry_after() {
        Some(RetryAfter::Seconds(s)) => Some(RetryAfter::Seconds(s.min(GOOGLE_SHORT_WAIT_CAP))),
        Some(at) => Some(at),
        None => Some(RetryAfter::Seconds(GOOGLE_SHORT_WAIT)),
    };
    let when = retry_after.map(|r| r.to_string()).unwrap_or_default();
    let reason = if kind == GoogleQuota::Minute { QuotaReason::RateLimited } else { QuotaReason::Quota };
    Verdict {
        retry_after,
        quota_window: Period::Minute,
        ..Verdict::new(
            reason,
            format!("{answered}: Search Console's per-user limit of {email} is reached. indexq retries {when}."),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::model::Class;
    use chrono::{TimeZone, Utc};

    type Row = (u16, Vec<(&'static str, &'static str)>, String, Class, &'static str, Option<RetryAfter>);

    /// Each row's answer read by [`google`]: its class, reason and wait; a
    /// quota's window too, and its message names the project.
    fn check_google_table(table: &[Row]) {
        for (status, headers, body, class, reason, retry) in table {
            let v = google_verdict(*status, headers, body);
            assert_eq!(
                (v.class(), v.reason.to_string().as_str(), v.retry_after),
                (*class, *reason, *retry),
                "HTTP {status} {headers:?} {body}: {}",
                v.message
            );
            if v.class() == Class::Quota {
                let window = if *reason == "daily_quota" { Period::Day } else { Period::Minute };
                assert_eq!(v.quota_window, window, "{body}");
                assert!(v.message.contains("my-proj"), "{}", v.message);
            }
        }
    }

    #[test]
    fn google_statuses_accepted() {
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            (200, vec![], r#"{"urlNotificationMetadata": {"url": "https://example.com/a", "latestUpdate": {"url": "https://example.com/a", "type": "URL_UPDATED", "notifyTime": "2026-12-03T01:30:00.123456789Z"}}}"#.into(), Class::Accepted, "ok", None),
            (200, vec![], r#"{"urlNotificationMetadata": {"url": "https://example.com/a"}}"#.into(), Class::Accepted, "received", None),
            (204, vec![], "".into(), Class::Accepted, "unrecognized_body", None),
            (200, vec![], "".into(), Class::Accepted, "unrecognized_body", None),
            (200, vec![], "<!DOCTYPE html><html><body>Access denied by proxy</body></html>".into(), Class::Accepted, "unrecognized_body", None),
            (200, vec![], r#"{"urlNotificationMetadata": {"url": "https://exa"#.into(), Class::Accepted, "unrecognized_body", None),
        ];
        check_google_table(&table);
    }

    #[test]
    fn google_statuses_quota() {
        let short = Some(RetryAfter::Seconds(GOOGLE_SHORT_WAIT));
        let date = Utc.with_ymd_and_hms(2026, 10, 21, 7, 28, 0).single().expect("valid date");
        let per_day_message =
            "Quota exceeded for quota metric 'Publish requests' and limit 'Publish requests per day' \
                               of service 'indexing.googleapis.com' for consumer 'project_number:875626095483'.";
        let per_minute_message = "Quota exceeded for quota metric 'Publish requests' and limit 'Publish requests per \
                                  minute' of service 'indexing.googleapis.com' for consumer 'project_number:1'.";
        let quota_failure = |field: &str, value: &str| {
            format!(
                r#"{{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{{"subject": "project:1", "{field}": "{value}"}}]}}"#
            )
        };
        let error_info = |reason: &str, limit: &str| {
            format!(
                r#"{{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "{reason}", "domain": "googleapis.com", "metadata": {{"quota_limit": "{limit}", "quota_metric": "indexing.googleapis.com/v3_publish_requests", "service": "indexing.googleapis.com"}}}}"#
            )
        };
        let exhausted = "Resource has been exhausted (e.g. check quota).";
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            // per day: message, QuotaFailure (description, quotaId), ErrorInfo metadata, legacy
            (429, vec![], rpc(429, "RESOURCE_EXHAUSTED", per_day_message, ""), Class::Quota, "daily_quota", None),
            (429, vec![("Retry-After", "30")], rpc(429, "RESOURCE_EXHAUSTED", per_day_message, ""), Class::Quota, "daily_quota", None),
            (429, vec![], rpc(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", &quota_failure("description", "Publish requests PER DAY exceeded")), Class::Quota, "daily_quota", None),
            (429, vec![], rpc(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", &quota_failure("quotaId", "DefaultPublishRequestsPerDayPerProject")), Class::Quota, "daily_quota", None),
            (429, vec![], rpc(429, "RESOURCE_EXHAUSTED", exhausted, &error_info("RATE_LIMIT_EXCEEDED", "DefaultPublishRequestsPerDayPerProject")), Class::Quota, "daily_quota", None),
            (403, vec![], rpc(403, "PERMISSION_DENIED", "Quota exceeded for quota group 'default' and limit 'per_day'.", ""), Class::Quota, "daily_quota", None),
            // per minute
            (429, vec![], rpc(429, "RESOURCE_EXHAUSTED", per_minute_message, ""), Class::Quota, "rate_limited", short),
            (429, vec![("Retry-After", "17")], rpc(429, "RESOURCE_EXHAUSTED", per_minute_message, ""), Class::Quota, "rate_limited", Some(RetryAfter::Seconds(17))),
            (429, vec![("retry-after", "Wed, 21 Oct 2026 07:28:00 GMT")], rpc(429, "RESOURCE_EXHAUSTED", per_minute_message, ""), Class::Quota, "rate_limited", Some(RetryAfter::At(date))),
            (429, vec![], rpc(429, "RESOURCE_EXHAUSTED", exhausted, &error_info("RATE_LIMIT_EXCEEDED", "DefaultRequestsPerMinutePerProject")), Class::Quota, "rate_limited", short),
            // unknown: a short wait, never the next day unasked
            (429, vec![], rpc(429, "RESOURCE_EXHAUSTED", exhausted, ""), Class::Quota, "quota", short),
            (429, vec![("Retry-After", "300")], rpc(429, "RESOURCE_EXHAUSTED", exhausted, ""), Class::Quota, "quota", Some(RetryAfter::Seconds(300))),
            (503, vec![], rpc(503, "RESOURCE_EXHAUSTED", exhausted, ""), Class::Quota, "quota", short),
            (429, vec![], "<html><body>Too Many Requests</body></html>".into(), Class::Quota, "quota", short),
            (429, vec![], "".into(), Class::Quota, "quota", short),
        ];
        check_google_table(&table);
    }

    #[test]
    fn google_statuses_refused() {
        let disabled_message = "Web Search Indexing API has not been used in project 875626095483 before or it is \
                                disabled. Enable it by visiting https://console.developers.google.com/apis/api/\
                                indexing.googleapis.com/overview?project=875626095483 then retry.";
        let disabled_info = r#"{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED", "domain": "googleapis.com", "metadata": {"service": "indexing.googleapis.com", "consumer": "projects/875626095483"}}"#;
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            // 403
            (403, vec![], rpc(403, "PERMISSION_DENIED", "Permission denied. Failed to verify the URL ownership.", ""), Class::Misconfigured, "ownership_not_verified", None),
            (403, vec![], rpc(403, "PERMISSION_DENIED", "User does not have sufficient permission for site 'https://example.com/'.", ""), Class::Misconfigured, "ownership_not_verified", None),
            (403, vec![], rpc(403, "PERMISSION_DENIED", disabled_message, disabled_info), Class::Misconfigured, "api_disabled", None),
            (403, vec![], rpc(403, "PERMISSION_DENIED", "The API is off.", disabled_info), Class::Misconfigured, "api_disabled", None),
            (403, vec![], rpc(403, "PERMISSION_DENIED", disabled_message, ""), Class::Misconfigured, "api_disabled", None),
            (403, vec![], rpc(403, "PERMISSION_DENIED", "The caller does not have permission", ""), Class::Misconfigured, "permission_denied", None),
            (403, vec![], "<html>Forbidden</html>".into(), Class::Misconfigured, "permission_denied", None),
            // other 4xx
            (400, vec![], rpc(400, "INVALID_ARGUMENT", "Invalid attribute. 'url' is not in standard URL format: https://example.com/a", ""), Class::Misconfigured, "invalid_argument", None),
            (400, vec![], r#"{"error": 5}"#.into(), Class::Misconfigured, "invalid_argument", None),
            (401, vec![], rpc(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", ""), Class::Misconfigured, "unauthenticated", None),
            (404, vec![], "<html><body>Not Found</body></html>".into(), Class::Misconfigured, "http_404", None),
            (405, vec![], "".into(), Class::Misconfigured, "http_405", None),
            (302, vec![("Location", "https://accounts.google.com/")], "".into(), Class::Misconfigured, "http_302", None),
        ];
        check_google_table(&table);
    }

    #[test]
    fn google_statuses_transient() {
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            // transient
            (500, vec![], rpc(500, "INTERNAL", "Internal error encountered.", ""), Class::Transient, "internal", None),
            (503, vec![], "<html><head><title>503 Service Unavailable</title></head></html>".into(), Class::Transient, "server_error", None),
            (503, vec![("Retry-After", "120")], rpc(503, "UNAVAILABLE", "The service is currently unavailable.", ""), Class::Transient, "unavailable", Some(RetryAfter::Seconds(120))),
            (504, vec![], "".into(), Class::Transient, "server_error", None),
            (504, vec![], rpc(504, "DEADLINE_EXCEEDED", "Deadline exceeded.", ""), Class::Transient, "deadline_exceeded", None),
            (400, vec![], rpc(400, "UNAVAILABLE", "Try again.", ""), Class::Transient, "unavailable", None),
            (502, vec![], "not json at all {".into(), Class::Transient, "server_error", None),
            (408, vec![], "".into(), Class::Transient, "http_408", None),
            (600, vec![], "".into(), Class::Transient, "unexpected_status", None),
        ];
        check_google_table(&table);
    }

    #[test]
    fn google_messages_and_hints() {
        let daily = google_verdict(
            429,
            &[],
            &rpc(429, "RESOURCE_EXHAUSTED", "Quota exceeded for limit 'Publish requests per day'.", ""),
        );
        assert!(daily.message.contains("per-project daily quota"), "{}", daily.message);
        assert!(daily.message.contains("Pacific"), "{}", daily.message);
        assert!(daily.message.contains("indexq waits for the next quota day"), "{}", daily.message);
        assert!(daily.message.contains("Publish requests per day"), "{}", daily.message);

        let unknown = google_verdict(429, &[], &rpc(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted.", ""));
        assert!(unknown.message.contains("after 60 s"), "{}", unknown.message);

        let ownership = google_verdict(
            403,
            &[],
            &rpc(403, "PERMISSION_DENIED", "Permission denied. Failed to verify the URL ownership.", ""),
        );
        let hint = ownership.hint.as_deref().expect("hint");
        assert!(hint.contains(GOOGLE_CTX.client_email), "{hint}");
        assert!(hint.contains("Owner"), "{hint}");
        assert!(hint.contains("https"), "{hint}");
        assert!(ownership.message.contains("Failed to verify the URL ownership"), "{}", ownership.message);

        let disabled = google_verdict(
            403,
            &[],
            &rpc(
                403,
                "PERMISSION_DENIED",
                "Indexing API has not been used in project 12 before or it is disabled.",
                "",
            ),
        );
        assert!(disabled.message.contains("my-proj"), "{}", disabled.message);
        let hint = disabled.hint.as_deref().expect("hint");
        assert!(hint.contains("indexing.googleapis.com") && hint.contains("my-proj"), "{hint}");

        let invalid = google_verdict(400, &[], &rpc(400, "INVALID_ARGUMENT", "Invalid attribute.", ""));
        assert!(invalid.message.contains(GOOGLE_CTX.url), "{}", invalid.message);

        let not_found = google_verdict(404, &[], "");
        assert!(not_found.hint.as_deref().is_some_and(|h| h.contains("`endpoint` in `[google]`")));

        let html = google_verdict(
            503,
            &[],
            "<html>
<body>Service   Unavailable</body></html>",
        );
        assert!(html.message.contains("<html> <body>Service Unavailable</body></html>"), "{}", html.message);
    }

    /// A status or an ErrorInfo reason decides; the message is read only
    /// where Google says nothing structured.
    #[test]
    fn structured_fields_before_free_text() {
        let info = |reason: &str| {
            format!(
                r#"{{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "{reason}", "domain": "googleapis.com", "metadata": {{"service": "indexing.googleapis.com", "consumer": "projects/1"}}}}"#
            )
        };
        let legacy = |reason: &str, message: &str| {
            format!(
                r#"{{"error": {{"code": 403, "message": "{message}", "errors": [{{"message": "{message}", "domain": "usageLimits", "reason": "{reason}"}}]}}}}"#
            )
        };
        let quota_info = r#"{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED", "domain": "googleapis.com", "metadata": {"quota_limit": "DefaultRequestsPerMinutePerProject", "service": "indexing.googleapis.com"}}"#;
        let short = Some(RetryAfter::Seconds(GOOGLE_SHORT_WAIT));
        type Row = (u16, String, Class, &'static str, Option<RetryAfter>);
        #[rustfmt::skip]
        let google_table: Vec<Row> = vec![
            // A 400 quoting a URL that holds the words is about that URL.
            (400, rpc(400, "INVALID_ARGUMENT", "Invalid attribute. 'url' is not in standard URL format: https://example.com/SERVICE_DISABLED/x", ""), Class::Misconfigured, "invalid_argument", None),
            (400, rpc(400, "INVALID_ARGUMENT", "Invalid attribute. 'url' is not in standard URL format: https://example.com/it-is-disabled?has not been used in project", ""), Class::Misconfigured, "invalid_argument", None),
            (403, rpc(403, "PERMISSION_DENIED", "The caller does not have permission for https://example.com/service_disabled", ""), Class::Misconfigured, "permission_denied", None),
            // The ErrorInfo reason, the status, the legacy reason.
            (403, rpc(403, "PERMISSION_DENIED", "Quota exceeded? No: the API is off.", &info("SERVICE_DISABLED")), Class::Misconfigured, "api_disabled", None),
            (403, rpc(403, "SERVICE_DISABLED", "Disabled.", ""), Class::Misconfigured, "api_disabled", None),
            (403, legacy("accessNotConfigured", "Access Not Configured. Indexing API has not been used in project 1."), Class::Misconfigured, "api_disabled", None),
            (403, rpc(403, "PERMISSION_DENIED", "Quota exceeded for quota group 'default'.", &info("API_KEY_SERVICE_BLOCKED")), Class::Misconfigured, "permission_denied", None),
            (403, rpc(403, "PERMISSION_DENIED", "Rate limited.", &info("RATE_LIMIT_EXCEEDED")), Class::Quota, "quota", short),
            (403, legacy("rateLimitExceeded", "Rate Limit Exceeded"), Class::Quota, "quota", short),
            (403, legacy("dailyLimitExceeded", "Daily Limit Exceeded"), Class::Quota, "daily_quota", None),
            // The limit from the ErrorInfo metadata before the message.
            (429, rpc(429, "RESOURCE_EXHAUSTED", "Quota exceeded; try again per day or so.", quota_info), Class::Quota, "rate_limited", short),
            // Free text where nothing structured is given.
            (403, rpc(403, "PERMISSION_DENIED", "Web Search Indexing API has not been used in project 1 before or it is disabled.", ""), Class::Misconfigured, "api_disabled", None),
            (403, rpc(403, "PERMISSION_DENIED", "Quota exceeded for quota group 'default' and limit 'per_day'.", ""), Class::Quota, "daily_quota", None),
        ];
        for (status, body, class, reason, retry) in &google_table {
            let v = google_verdict(*status, &[], body);
            assert_eq!(
                (v.class(), v.reason.to_string().as_str(), v.retry_after),
                (*class, *reason, *retry),
                "HTTP {status} {body}: {}",
                v.message
            );
        }
    }

    /// A 2xx is `ok` when Google says it recorded the notification it was
    /// sent, `received` when its metadata lacks it.
    #[test]
    fn a_publish_200_is_read_by_the_notification_google_recorded() {
        let metadata =
            |fields: &str| format!(r#"{{"urlNotificationMetadata": {{"url": "https://example.com/a"{fields}}}}}"#);
        let update = r#", "latestUpdate": {"url": "https://example.com/a", "type": "URL_UPDATED", "notifyTime": "2026-12-03T01:30:00Z"}"#;
        let remove = r#", "latestRemove": {"url": "https://example.com/a", "type": "URL_DELETED", "notifyTime": "2026-12-03T01:31:00Z"}"#;
        let verdict = |action, body: &str| {
            let ctx = GoogleContext { action, ..GOOGLE_CTX };
            let v = google(&Response { status: 200, headers: &[], body }, &ctx);
            assert_eq!(v.class(), Class::Accepted, "{body}");
            v
        };
        #[rustfmt::skip]
        let table = [
            (Action::Updated, metadata(update), "ok"),
            (Action::Updated, metadata(""), "received"),
            (Action::Updated, metadata(remove), "received"),
            (Action::Deleted, metadata(remove), "ok"),
            (Action::Deleted, metadata(&format!("{update}{remove}")), "ok"),
            (Action::Deleted, metadata(update), "received"),
            (Action::Deleted, metadata(""), "received"),
            // A JSON object without `urlNotificationMetadata` says nothing either way.
            (Action::Updated, "{}".to_string(), "ok"),
            // Not Google's JSON at all.
            (Action::Updated, "".to_string(), "unrecognized_body"),
        ];
        for (action, body, reason) in &table {
            assert_eq!(verdict(*action, body).reason.to_string(), *reason, "{action:?} {body}");
        }
        let ok = verdict(Action::Updated, &metadata(update));
        assert!(ok.message.contains("notified at 2026-12-03T01:30:00Z"), "{}", ok.message);
        let received = verdict(Action::Updated, &metadata(""));
        assert!(
            received.message.contains("JobPosting") && received.message.contains("latestUpdate"),
            "{}",
            received.message
        );
    }

    #[test]
    fn inspection_answers() {
        let short = Some(RetryAfter::Seconds(GOOGLE_SHORT_WAIT));
        let result = |verdict: &str| {
            format!(
                r#"{{"inspectionResult": {{"inspectionResultLink": "https://search.google.com/search-console/inspect?resource_id=sc-domain:example.com&id=x", "indexStatusResult": {{"verdict": "{verdict}", "coverageState": "Submitted and indexed"}}}}}}"#
            )
        };
        let disabled_info = r#"{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED", "domain": "googleapis.com", "metadata": {"service": "searchconsole.googleapis.com", "consumer": "projects/311386532115"}}"#;
        type Row = (u16, Vec<(&'static str, &'static str)>, String, Class, &'static str, Option<RetryAfter>);
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            (200, vec![], result("PASS"), Class::Accepted, "already_indexed", None),
            (200, vec![], result("NEUTRAL"), Class::Accepted, "ok", None),
            (200, vec![], result("FAIL"), Class::Accepted, "ok", None),
            (200, vec![], "{}".into(), Class::Accepted, "ok", None),
            (429, vec![], rpc(429, "RESOURCE_EXHAUSTED", "Quota exceeded for sc-domain:example.com.", ""), Class::Quota, "quota", short),
            (429, vec![("Retry-After", "30")], rpc(429, "RESOURCE_EXHAUSTED", "Quota exceeded for sc-domain:example.com.", ""), Class::Quota, "quota", Some(RetryAfter::Seconds(30))),
            (429, vec![], rpc(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Inspections' and limit 'Inspections per day per site'.", ""), Class::Quota, "daily_quota", None),
            (429, vec![], rpc(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Inspections' and limit 'Inspections per minute per site'.", ""), Class::Quota, "rate_limited", short),
            (403, vec![], rpc(403, "PERMISSION_DENIED", "You do not own this site, or the inspected URL is not part of this property.", ""), Class::Misconfigured, "inspection_not_owner", None),
            (403, vec![], r#"{"error": {"code": 403, "message": "User does not have sufficient permission for site 'https://example.com/'. See also: https://support.google.com/webmasters/answer/2451999.", "errors": [{"domain": "global", "reason": "forbidden"}]}}"#.into(), Class::Misconfigured, "inspection_not_owner", None),
            (403, vec![], rpc(403, "PERMISSION_DENIED", "Google Search Console API has not been used in project 311386532115 before or it is disabled.", disabled_info), Class::Misconfigured, "api_disabled", None),
            (403, vec![], rpc(403, "PERMISSION_DENIED", "Google Search Console API has not been used in project 311386532115 before or it is disabled.", ""), Class::Misconfigured, "api_disabled", None),
            (403, vec![], rpc(403, "PERMISSION_DENIED", "The caller does not have permission", ""), Class::Misconfigured, "permission_denied", None),
            // A URL that holds the words is not the answer.
            (403, vec![], rpc(403, "PERMISSION_DENIED", "Forbidden: https://example.com/quota-exceeded/you-do-not-own", ""), Class::Misconfigured, "permission_denied", None),
            (400, vec![], rpc(400, "INVALID_ARGUMENT", "Invalid argument.", ""), Class::Misconfigured, "invalid_argument", None),
            (401, vec![], rpc(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", ""), Class::Misconfigured, "unauthenticated", None),
            (404, vec![], "<html>Not Found</html>".into(), Class::Misconfigured, "http_404", None),
            (500, vec![], rpc(500, "INTERNAL", "Internal error encountered.", ""), Class::Transient, "internal", None),
            (503, vec![("Retry-After", "120")], "".into(), Class::Transient, "server_error", Some(RetryAfter::Seconds(120))),
            (408, vec![], "".into(), Class::Transient, "http_408", None),
            (600, vec![], "".into(), Class::Transient, "unexpected_status", None),
        ];
        for (status, headers, body, class, reason, retry) in &table {
            let v = inspection_verdict(*status, headers, body);
            assert_eq!(
                (v.class(), v.reason.to_string().as_str(), v.retry_after),
                (*class, *reason, *retry),
                "HTTP {status} {headers:?} {body}: {}",
                v.message
            );
            if v.class() == Class::Quota {
                let window = if *reason == "daily_quota" { Period::Day } else { Period::Minute };
                assert_eq!(v.quota_window, window, "{body}");
            }
            assert!(!v.message.contains("indexq retries"), "an inspection is never retried: {}", v.message);
        }
    }

    #[test]
    fn a_refused_inspection_of_a_url_prefix_property_hints_at_sc_domain() {
        let not_owner = rpc(
            403,
            "PERMISSION_DENIED",
            "You do not own this site, or the inspected URL is not part of this property.",
            "",
        );
        let v = inspection_verdict(403, &[], &not_owner);
        let hint = v.hint.as_deref().expect("a hint");
        assert!(hint.contains(INSPECTION_CTX.client_email) && hint.contains("Owner"), "{hint}");
        assert!(hint.contains("site_url = \"sc-domain:example.com\""), "{hint}");
        assert!(v.message.contains("You do not own this site"), "{}", v.message);
        let ctx = InspectionContext { site_url: "sc-domain:example.com", ..INSPECTION_CTX };
        let domain = google_inspection(&Response { status: 403, headers: &[], body: &not_owner }, &ctx);
        assert_eq!(domain.reason.to_string(), "inspection_not_owner");
        assert!(!domain.hint.unwrap().contains("URL-prefix"), "a Domain property already");
        let www = InspectionContext { site_url: "https://www.example.com/", ..INSPECTION_CTX };
        let www = google_inspection(&Response { status: 403, headers: &[], body: &not_owner }, &www);
        assert!(www.hint.unwrap().contains("sc-domain:example.com\""), "www. is not the domain");
        let disabled = inspection_verdict(
            403,
            &[],
            &rpc(
                403,
                "PERMISSION_DENIED",
                "Google Search Console API has not been used in project 1 before or it is disabled.",
                "",
            ),
        );
        assert!(disabled.hint.unwrap().contains("searchconsole.googleapis.com"));
    }

    fn sitemaps_verdict(status: u16, headers: &[(&str, &str)], body: &str) -> Verdict {
        let headers = owned_headers(headers);
        let v = search_console_submit(&Response { status, headers: &headers, body }, &SITEMAPS_CTX);
        assert_no_secret(&v, KEY, &format!("sitemaps {status} {body}"));
        v
    }

    /// Search Console's answers to `sitemaps.submit`, and the fix of each
    /// refusal (issue 25: 403 → the property's users, 404 → the property's
    /// name, 429 → quota, 5xx → transient).
    #[test]
    fn sitemaps_answers() {
        let short = Some(RetryAfter::Seconds(GOOGLE_SHORT_WAIT));
        let permission = r#"{"error":{"errors":[{"domain":"global","reason":"forbidden","message":"User does not have sufficient permission for site 'https://example.com/'. See also: https://support.google.com/webmasters/answer/2451999."}],"code":403,"message":"User does not have sufficient permission for site 'https://example.com/'. See also: https://support.google.com/webmasters/answer/2451999."}}"#;
        let scopes = r#"{"error":{"code":403,"message":"Request had insufficient authentication scopes.","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"ACCESS_TOKEN_SCOPE_INSUFFICIENT"}]}}"#;
        let disabled = r#"{"error":{"code":403,"message":"Google Search Console API has not been used in project 1 before or it is disabled.","status":"PERMISSION_DENIED"}}"#;
        type Row = (u16, Vec<(&'static str, &'static str)>, String, Class, &'static str, Option<RetryAfter>);
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            (204, vec![], "".into(), Class::Accepted, "ok", None),
            (200, vec![], "".into(), Class::Accepted, "ok", None),
            (200, vec![], "{}".into(), Class::Accepted, "ok", None),
            (200, vec![], "<html><body>Sign in to the Wi-Fi</body></html>".into(), Class::Accepted, "unrecognized_body", None),
            (403, vec![], permission.into(), Class::Misconfigured, "not_property_user", None),
            (403, vec![], rpc(403, "PERMISSION_DENIED", "You do not own this site, or the inspected URL is not part of this property.", ""), Class::Misconfigured, "not_property_user", None),
            (403, vec![], scopes.into(), Class::Misconfigured, "permission_denied", None),
            (403, vec![], disabled.into(), Class::Misconfigured, "api_disabled", None),
            (404, vec![], rpc(404, "NOT_FOUND", "Requested entity was not found.", ""), Class::Misconfigured, "property_not_found", None),
            (404, vec![], "<html>Not Found</html>".into(), Class::Misconfigured, "property_not_found", None),
            (400, vec![], rpc(400, "INVALID_ARGUMENT", "Invalid value at 'feedpath'.", ""), Class::Misconfigured, "invalid_argument", None),
            (401, vec![], rpc(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.", ""), Class::Misconfigured, "unauthenticated", None),
            (429, vec![], rpc(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute per user'.", ""), Class::Quota, "rate_limited", short),
            (429, vec![("Retry-After", "30")], "".into(), Class::Quota, "quota", Some(RetryAfter::Seconds(30))),
            (429, vec![], rpc(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Queries' and limit 'Queries per day'.", ""), Class::Quota, "daily_quota", None),
            (500, vec![], rpc(500, "INTERNAL", "Internal error encountered.", ""), Class::Transient, "internal", None),
            (503, vec![("Retry-After", "120")], "".into(), Class::Transient, "server_error", Some(RetryAfter::Seconds(120))),
            (405, vec![], "".into(), Class::Misconfigured, "http_405", None),
            (600, vec![], "".into(), Class::Transient, "unexpected_status", None),
        ];
        for (status, headers, body, class, reason, retry) in &table {
            let v = sitemaps_verdict(*status, headers, body);
            assert_eq!(
                (v.class(), v.reason().to_string().as_str(), v.retry_after),
                (*class, *reason, *retry),
                "HTTP {status} {body}: {}",
                v.message
            );
        }
        // The permission's fix: an Owner or Full user of that exact property, and sc-domain: for a URL prefix.
        let v = sitemaps_verdict(403, &[], permission);
        let hint = v.hint.unwrap();
        assert!(hint.contains("indexer@my-proj.iam.gserviceaccount.com as an Owner or Full user"), "{hint}");
        assert!(hint.contains("site_url = \"sc-domain:example.com\""), "{hint}");
        let domain = SitemapsContext { site_url: "sc-domain:example.com", ..SITEMAPS_CTX };
        let v = search_console_submit(&Response { status: 403, headers: &[], body: permission }, &domain);
        assert!(!v.hint.unwrap().contains("set `site_url"), "a Domain property already");
        let v = sitemaps_verdict(404, &[], "");
        assert!(v.message.contains("Search Console has no property https://example.com/"), "{}", v.message);
        assert!(v.hint.unwrap().contains("`sc-domain:example.com`"));
    }

    /// `sitemaps.get`'s resource read (int64 counts as strings or numbers),
    /// a 404 as a sitemap Search Console does not list, and `sitemaps.list`.
    #[test]
    fn sitemap_reports_are_read() {
        let read =
            |status: u16, body: &str| search_console_report(&Response { status, headers: &[], body }, &SITEMAPS_CTX);
        let resource = r#"{"path":"https://example.com/sitemap.xml","lastSubmitted":"2026-12-01T10:00:00.000Z","isPending":true,"isSitemapsIndex":false,"type":"sitemap","lastDownloaded":"2026-12-01T10:00:05.123Z","warnings":"1","errors":2,"contents":[{"type":"web","submitted":"12","indexed":"0"},{"type":"image","submitted":"3"}]}"#;
        let r = read(200, resource).unwrap();
        assert_eq!(
            (r.listed, r.pending, r.errors, r.warnings, r.urls, r.status.as_deref()),
            (true, true, 2, 1, Some(15), Some("sitemap"))
        );
        assert_eq!(r.submitted.unwrap().to_rfc3339(), "2026-12-01T10:00:00+00:00");
        assert_eq!(r.downloaded.unwrap().timestamp_millis() % 1000, 123);
        let r =
            read(200, r#"{"path":"https://example.com/sitemap.xml","lastSubmitted":"2026-12-01","isPending":true}"#)
                .unwrap();
        assert_eq!(
            (r.submitted.unwrap().to_rfc3339(), r.downloaded, r.errors),
            ("2026-12-01T00:00:00+00:00".to_string(), None, 0)
        );
        assert_eq!(read(404, &rpc(404, "NOT_FOUND", "Sitemap not found.", "")).unwrap(), SitemapReading::default());
        assert_eq!(
            read(
                403,
                &rpc(
                    403,
                    "PERMISSION_DENIED",
                    "User does not have sufficient permission for site 'https://example.com/'.",
                    ""
                )
            )
            .unwrap_err()
            .reason
            .to_string(),
            "not_property_user"
        );
        assert_eq!(read(404, "<html>Not Found</html>").unwrap_err().reason.to_string(), "property_not_found");
        assert_eq!(read(200, "<html>portal</html>").unwrap_err().reason.to_string(), "unrecognized_body");
        let list = |body: &str| search_console_list(&Response { status: 200, headers: &[], body }, &SITEMAPS_CTX);
        let listed = list(&format!(r#"{{"sitemap":[{resource}]}}"#)).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].0.as_str(), listed[0].1.errors), ("https://example.com/sitemap.xml", 2));
        assert!(list("{}").unwrap().is_empty(), "a property without sitemaps");
    }
}
