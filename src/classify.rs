//! Classification: what an engine's answer means. This module maps one HTTP
//! response (status, headers, body) plus what indexq knows about the request
//! (for IndexNow: the key, the key location and, after a 403, what the key
//! location served when indexq fetched it; for Bing the site; for Google the
//! URL, the service account and its Cloud project, or the key id) to one of the classes of DESIGN §1,
//! with a machine-readable `reason`, a human `message` (what happened, then what
//! indexq does about it), a `hint` (the fix, for every `misconfigured` verdict)
//! and the server's `Retry-After`, if any. It is pure: no HTTP client, no clock,
//! no ledger, no I/O. Callers fetch, time and store; this module only reads.
//!
//! IndexNow, status by status:
//!
//! | status | class | reason |
//! |---|---|---|
//! | 200, other 2xx | accepted | `ok` |
//! | 202 | accepted | `key_validation_pending` |
//! | 3xx | misconfigured | `redirect` (the endpoint setting is wrong) |
//! | 400 | misconfigured | `bad_request` |
//! | 403 | from the key file check, see [`key_file`]; no check: misconfigured `forbidden` |
//! | 408 | transient | `http_408` (the server timed out reading the request) |
//! | 413 | misconfigured | `too_large` |
//! | 422 | misconfigured | `url_not_on_host` (also when the key breaks the schema) |
//! | 429 | quota | `rate_limited` |
//! | other 4xx | misconfigured | `http_<status>` |
//! | 5xx | transient | `server_error` (the status is in the message) |
//! | anything else (1xx, ≥ 600) | transient | `unexpected_status` |
//!
//! A 403 is decided by the key file, never by the body (which is only quoted):
//! exactly the key, give or take surrounding whitespace, is `key_pending`; a 404
//! or 410 is `key_file_missing`; another status is `key_file_status`; a UTF-8
//! byte order mark before the key is `key_file_bom`; the key inside HTML or other
//! text is `key_file_html`; anything else (another key, an empty file, the key in
//! other letter case, UTF-16 text) is `key_file_wrong`; a failed fetch is
//! `key_file_unreachable`. Without a response at all, [`network`] gives
//! `transient` with `timeout`, `connect` or `network`.
//!
//! Secrets: `message` and `hint` never contain the IndexNow key, in any letter
//! case or encoding (`redact::mask`). Wherever it would appear (the key
//! location, a served body, an error) it is replaced by `[key]`. [`network`]
//! has no key to hide: its `detail` must already be redacted by the caller.
//!
//! Other engines get their own `pub fn <engine>(resp, ctx) -> Verdict` beside
//! [`indexnow`], sharing the engine-neutral helpers below, each with its table:
//!
//! - Bing Webmaster ([`bing`]): by `ErrorCode`; quota messages under a generic
//!   code are `daily_quota` / `monthly_quota`, throttles wait `Retry-After` or
//!   [`BING_THROTTLE_WAIT`].
//! - Google Indexing API ([`google`], for `urlNotifications:publish` and the URL
//!   Inspection API): by HTTP status and google.rpc.Status (`status`, `message`,
//!   `details`). `RESOURCE_EXHAUSTED` / 429 is `daily_quota` (the per-project
//!   daily quota: the caller waits for the next quota day, midnight
//!   America/Los_Angeles), `rate_limited` (per minute) or `quota` (unnamed),
//!   the last two waiting `Retry-After` or [`GOOGLE_SHORT_WAIT`]; 403 is
//!   `ownership_not_verified`, `api_disabled` or `permission_denied`; 400
//!   `invalid_argument`; 401 `unauthenticated`; 5xx and `INTERNAL` /
//!   `UNAVAILABLE` / `DEADLINE_EXCEEDED` are transient.
//!
//! Structured fields are read before free text, for every engine: a code,
//! a status or a `google.rpc.ErrorInfo` reason decides; the message is read
//! only where the engine gives nothing structured, and each such rule names
//! the real answer it matches. A body is never searched as a whole.
//! - Google's OAuth2 token endpoint ([`google_token`]): RFC 6749 §5.2 error
//!   codes (`invalid_grant`, …) are misconfigured with that code as reason,
//!   naming the key id and the service account, never key material; 429 and
//!   5xx are `token_server_error`.

use crate::clock::Period;
use crate::model::{Class, EngineKind};
use chrono::{DateTime, Utc};
use std::fmt;

/// What replaces the IndexNow key wherever a message would show it.
const REDACTED_KEY: &str = "[key]";

/// How many characters of a body [`excerpt`] keeps before the ellipsis.
const EXCERPT_CHARS: usize = 200;

/// The schema of an IndexNow key, as a person reads it.
const KEY_SCHEMA: &str = "8–128 characters of a–z, A–Z, 0–9 and '-'";

/// One HTTP response as received (body already capped and decoded lossily as UTF-8).
#[derive(Debug, Clone, Copy)]
pub struct Response<'a> {
    pub status: u16,
    pub headers: &'a [(String, String)],
    pub body: &'a str,
}

impl<'a> Response<'a> {
    /// The first value of the header `name`, which is compared case-insensitively.
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The server's `Retry-After`, if present and well-formed.
    pub fn retry_after(&self) -> Option<RetryAfter> {
        self.header("retry-after").and_then(parse_retry_after)
    }
}

/// What the key location served when indexq fetched it itself after a 403.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyFileCheck {
    Fetched { status: u16, body: String },
    Failed { error: String },
}

/// What indexq knows about an IndexNow submission besides the response.
pub struct IndexNowContext<'a> {
    pub key: &'a str,
    /// The `keyLocation` sent, else `https://HOST/KEY.txt`.
    pub key_location: &'a str,
    /// The key file check, when indexq made one (after a 403).
    pub key_file: Option<&'a KeyFileCheck>,
}

impl fmt::Debug for IndexNowContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key_file = redact(&format!("{:?}", self.key_file), self.key);
        f.debug_struct("IndexNowContext")
            .field("key", &format_args!("{REDACTED_KEY}"))
            .field("key_location", &redact(self.key_location, self.key))
            .field("key_file", &format_args!("{key_file}"))
            .finish()
    }
}

/// When the server asked to be called again (`Retry-After`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    Seconds(u64),
    At(DateTime<Utc>),
}

impl fmt::Display for RetryAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryAfter::Seconds(secs) => write!(f, "after {secs} s"),
            RetryAfter::At(at) => write!(f, "at {}", at.format("%Y-%m-%d %H:%M:%S UTC")),
        }
    }
}

/// The meaning of one answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub class: Class,
    pub reason: String,
    pub message: String,
    pub hint: Option<String>,
    pub retry_after: Option<RetryAfter>,
    /// For `quota` without `Retry-After`: which window the engine said is
    /// spent (a daily quota unless it said monthly).
    pub quota_window: Period,
}

impl Verdict {
    pub fn new(class: Class, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Verdict {
            class,
            reason: reason.into(),
            message: message.into(),
            hint: None,
            retry_after: None,
            quota_window: Period::Day,
        }
    }

    pub fn misconfigured(reason: impl Into<String>, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Verdict { hint: Some(hint.into()), ..Verdict::new(Class::Misconfigured, reason, message) }
    }

    /// The verdict with its human texts passed through a redactor.
    pub fn redacted_with(self, redactor: &crate::redact::Redactor) -> Self {
        Verdict { message: redactor.redact(&self.message), hint: self.hint.map(|h| redactor.redact(&h)), ..self }
    }

    /// Replaces every occurrence of `key` in the human texts.
    fn redacted(self, key: &str) -> Self {
        Verdict { message: redact(&self.message, key), hint: self.hint.map(|hint| redact(&hint, key)), ..self }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkFailure {
    Timeout,
    Connect,
    Other,
}

/// Classifies an IndexNow answer. See the module documentation for the rules.
pub fn indexnow(resp: &Response, ctx: &IndexNowContext) -> Verdict {
    let engine = EngineKind::IndexNow;
    let title = engine.title();
    let status = resp.status;
    let location = redact(ctx.key_location, ctx.key);
    let answered = answered(engine, resp, ctx.key);
    let verdict = match status {
        200 => {
            Verdict::new(Class::Accepted, "ok", format!("{title} accepted the submission ({}).", http_status(status)))
        }
        202 => Verdict::new(
            Class::Accepted,
            "key_validation_pending",
            format!(
                "{title} accepted the submission ({}) but has not validated the key yet; \
                 it will fetch the key file at {location}.",
                http_status(status)
            ),
        ),
        400 => Verdict::misconfigured(
            "bad_request",
            format!("{answered}: it could not read the submission."),
            format!(
                "Check that the key is {KEY_SCHEMA} and that the URLs are absolute http(s) \
                 URLs of one host; if they are, report this response as an indexq bug."
            ),
        ),
        403 => match ctx.key_file {
            Some(check) => {
                let found = key_file(ctx.key, ctx.key_location, check);
                Verdict { message: format!("{answered}. {}", found.message), ..found }
            }
            None => Verdict::misconfigured(
                "forbidden",
                format!(
                    "{answered}: it refused the key, and indexq could not check the key file \
                     at {location}. Usually that file is missing or does not serve exactly the key."
                ),
                format!(
                    "Check that {location} serves exactly the key as plain text and that \
                     `key_env`/`key_file` hold the same key; `indexq doctor` checks both."
                ),
            ),
        },
        408 => transient(engine, resp, ctx.key, "http_408", "the server gave up waiting for the request"),
        413 => Verdict::misconfigured(
            "too_large",
            format!("{answered}: the request is larger than the endpoint accepts."),
            "indexq sends at most 10,000 URLs per request; if a proxy in front of the endpoint \
             limits the request size, raise its limit or point `endpoints` in `[indexnow]` at \
             the engine itself.",
        ),
        422 => {
            let mut message = format!(
                "{answered}: the URLs do not belong to the host of the submission, \
                 or the key does not match the schema."
            );
            if !key_matches_schema(ctx.key) {
                message.push_str(&format!(" The configured key does not: keys are {KEY_SCHEMA}."));
            }
            Verdict::misconfigured(
                "url_not_on_host",
                message,
                format!(
                    "Submit only URLs under the property's host (one host per request) and use \
                     a key of {KEY_SCHEMA}; `indexq key generate` makes one."
                ),
            )
        }
        429 => rate_limited(engine, resp, ctx.key),
        201..=299 => {
            Verdict::new(Class::Accepted, "ok", format!("{title} accepted the submission ({}).", http_status(status)))
        }
        300..=399 => {
            let target =
                resp.header("location").map(|to| format!(" to {}", excerpt(&redact(to, ctx.key)))).unwrap_or_default();
            Verdict::misconfigured(
                "redirect",
                format!(
                    "{title} answered {}{target}: the endpoint redirects instead of taking \
                     the submission.",
                    http_status(status)
                ),
                "Set `endpoints` in `[indexnow]` to the URL that takes submissions, for example \
                 https://api.indexnow.org/indexnow.",
            )
        }
        401..=499 => Verdict::misconfigured(
            format!("http_{status}"),
            format!("{answered}: the endpoint refused the request, and waiting will not change that."),
            "Check `endpoints` in `[indexnow]` (for example https://api.indexnow.org/indexnow); \
             if it is right, report this response.",
        ),
        500..=599 => transient(engine, resp, ctx.key, "server_error", "the server failed"),
        _ => transient(engine, resp, ctx.key, "unexpected_status", "no engine documents that status"),
    };
    verdict.redacted(ctx.key)
}

/// How long a Bing throttle (ErrorCode 4/5, HTTP 429) waits without `Retry-After`.
pub const BING_THROTTLE_WAIT: u64 = 60;

/// Bing's ApiErrorCode values (DESIGN §1).
const BING_ERROR_CODES: &[(i64, &str)] = &[
    (0, "None"),
    (1, "InternalError"),
    (2, "UnknownError"),
    (3, "InvalidApiKey"),
    (4, "ThrottleUser"),
    (5, "ThrottleHost"),
    (6, "UserBlocked"),
    (7, "InvalidUrl"),
    (8, "InvalidParameter"),
    (9, "TooManySites"),
    (10, "UserNotFound"),
    (11, "NotFound"),
    (12, "AlreadyExists"),
    (13, "NotAllowed"),
    (14, "NotAuthorized"),
    (15, "UnexpectedState"),
    (16, "Deprecated"),
];

/// What indexq knows about a Bing submission besides the response.
#[derive(Debug, Clone, Copy)]
pub struct BingContext<'a> {
    /// The `siteUrl` sent.
    pub site_url: &'a str,
}

/// `{"ErrorCode": N, "Message": "..."}`, at the top level or under `d`.
fn bing_error(body: &str) -> Option<(i64, String)> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let obj = if value.get("ErrorCode").is_some() { &value } else { value.get("d")? };
    let code = obj.get("ErrorCode")?.as_i64()?;
    let message = obj.get("Message").and_then(|m| m.as_str()).unwrap_or_default().to_string();
    Some((code, message))
}

/// Whether a Bing `ErrorCode` says nothing indexq can act on by itself: 0
/// `None`, 2 `UnknownError`, 8 `InvalidParameter`, or a code Bing has not
/// documented. Only under such a code is the message read for a quota.
fn bing_generic_code(code: i64) -> bool {
    matches!(code, 0 | 2 | 8) || !BING_ERROR_CODES.iter().any(|(c, _)| *c == code)
}

/// Which quota a Bing message says is spent, if it is a quota message.
///
/// Free text, read only under a generic code ([`bing_generic_code`]): Bing
/// gives its quota answers no code of their own. The real answers matched:
/// `{"ErrorCode":2,"Message":"ERROR!!! You have exceeded your daily url
/// submission quota : 100"}` and `{"ErrorCode":8,"Message":"ERROR!!! Quota
/// remaining for today: 0, Submitted: 100"}` (both HTTP 400; fixtures
/// `bing-400-daily-quota`, `bing-400-quota-remaining-code8`), and their
/// monthly forms.
fn bing_quota_message(message: &str) -> Option<Period> {
    let m = message.to_ascii_lowercase();
    let spent = m.contains("quota remaining for today: 0")
        || m.contains("quota remaining for this month: 0")
        || (m.contains("exceeded") && m.contains("quota"));
    if !spent {
        return None;
    }
    Some(if m.contains("month") { Period::Month } else { Period::Day })
}

/// Classifies a Bing Webmaster API answer (`SubmitUrlBatch`), table-driven
/// over `ErrorCode`:
///
/// | answer | class | reason |
/// |---|---|---|
/// | 200 without an error | accepted | `ok` (an unexpected body is kept and said) |
/// | a quota message ("Quota remaining for today: 0", "exceeded your daily url submission quota") under a generic code (0 `None`, 2 `UnknownError`, 8 `InvalidParameter`, or an undocumented one) | quota | `daily_quota` / `monthly_quota` (the window is spent) |
/// | ErrorCode 4 `ThrottleUser`, 5 `ThrottleHost`, HTTP 429 | quota | `ThrottleUser` / `ThrottleHost` / `rate_limited`; `Retry-After`, else 60 s |
/// | ErrorCode 1 `InternalError`, 15 `UnexpectedState`, HTTP 5xx (JSON or not), 408 | transient | the code's name, or `server_error` |
/// | ErrorCode 12 `AlreadyExists` | accepted | `AlreadyExists` |
/// | every other ErrorCode (a quota message under it included), any other 4xx | misconfigured | the code's name (`InvalidApiKey`, `NotAuthorized`, …) or `http_<status>` |
pub fn bing(resp: &Response, ctx: &BingContext) -> Verdict {
    let engine = EngineKind::Bing;
    let status = resp.status;
    let error = bing_error(resp.body);
    let answered = answered(engine, resp, "");
    // The code first: a quota message under a code that means something else
    // (3 `InvalidApiKey` mentioning a quota, 4 `ThrottleUser`, …) is that code.
    let quota_text =
        error.as_ref().filter(|(code, _)| bing_generic_code(*code)).and_then(|(_, m)| bing_quota_message(m));
    if let Some(window) = quota_text {
        let (reason, which) = match window {
            // `bing_quota_message` names only days and months.
            Period::Day | Period::Minute => ("daily_quota", "today's"),
            Period::Month => ("monthly_quota", "this month's"),
        };
        return Verdict {
            quota_window: window,
            ..Verdict::new(
                Class::Quota,
                reason,
                format!(
                    "{answered}: {which} URL submission quota for {} is used. indexq waits for the next window.",
                    ctx.site_url
                ),
            )
        };
    }
    let Some((code, message)) = error else {
        return match status {
            200..=299 => {
                let body = resp.body.trim();
                let plain = body.is_empty() || body.replace(char::is_whitespace, "") == r#"{"d":null}"#;
                let note = if plain { String::new() } else { format!(" with an unexpected body: {}", excerpt(body)) };
                Verdict::new(
                    Class::Accepted,
                    "ok",
                    format!("Bing accepted the submission ({}){note}.", http_status(status)),
                )
            }
            429 => bing_throttle(resp, "rate_limited", &answered),
            408 => transient(engine, resp, "", "http_408", "the server gave up waiting for the request"),
            500..=599 => transient(engine, resp, "", "server_error", "the server failed"),
            _ => Verdict::misconfigured(
                format!("http_{status}"),
                format!("{answered}: the Bing API refused the request, and waiting will not change that."),
                "Check `endpoint` in `[bing]` (https://ssl.bing.com/webmaster/api.svc/json) and the API key.",
            ),
        };
    };
    let name = BING_ERROR_CODES.iter().find(|(c, _)| *c == code).map_or("UnknownErrorCode", |(_, n)| *n);
    let site = ctx.site_url;
    let said = excerpt(&message);
    let misconfigured =
        |fix: String| Verdict::misconfigured(name, format!("{answered}: ErrorCode {code} {name}."), fix);
    match code {
        4 | 5 => bing_throttle(resp, name, &answered),
        1 | 15 => transient(engine, resp, "", name, "Bing failed on its side"),
        _ if status >= 500 => transient(engine, resp, "", name, "the server failed"),
        12 => Verdict::new(Class::Accepted, name, format!("Bing already has these URLs ({said}).")),
        3 => misconfigured(
            "The API key is not valid: generate one in Bing Webmaster Tools (Settings → API access) and put it \
             in the variable named by `api_key_env` (or the file of `api_key_file`) in `[bing]`."
                .into(),
        ),
        14 => misconfigured(format!(
            "Verify {site} in Bing Webmaster Tools for the account that owns this API key, or set the \
             property's `bing.site_url` to the site as Bing lists it."
        )),
        7 => misconfigured(format!(
            "Bing rejected a URL as invalid: submit only URLs of {site}, absolute and well-formed."
        )),
        6 | 10 => misconfigured(
            "The Bing account of this API key is blocked or unknown: check it in Bing Webmaster Tools.".into(),
        ),
        9 => misconfigured(
            "The account has too many sites in Bing Webmaster Tools: remove some, or use another account.".into(),
        ),
        11 | 13 => misconfigured(format!(
            "Bing does not allow URL submission for {site} with this key: check the site in Bing Webmaster Tools \
             and the property's `bing.site_url`."
        )),
        16 => misconfigured("Bing says this API is deprecated: update indexq.".into()),
        _ => misconfigured(format!(
            "Bing refused the request ({said}); check `bing.site_url` ({site}) and the URLs, then `indexq queue retry`."
        )),
    }
}

/// A Bing throttle: `quota`, a short wait (not the next day).
fn bing_throttle(resp: &Response, reason: &str, answered: &str) -> Verdict {
    let retry_after = resp.retry_after().or(Some(RetryAfter::Seconds(BING_THROTTLE_WAIT)));
    let when = retry_after.map(|r| r.to_string()).unwrap_or_default();
    Verdict {
        retry_after,
        ..Verdict::new(
            Class::Quota,
            reason,
            format!("{answered}: Bing is throttling submissions; indexq retries {when}."),
        )
    }
}

/// How long indexq waits after a per-minute (or unexplained) Google quota answer without `Retry-After`.
pub const GOOGLE_SHORT_WAIT: u64 = 60;
/// The longest a per-minute (or unexplained) Google quota answer waits.
pub const GOOGLE_SHORT_WAIT_CAP: u64 = 15 * 60;

/// What indexq knows about a Google publish besides the response.
#[derive(Debug, Clone, Copy)]
pub struct GoogleContext<'a> {
    /// The URL published (or inspected).
    pub url: &'a str,
    /// The service account's `client_email` from the key file.
    pub client_email: &'a str,
    /// The key file's `project_id`: the Cloud project whose quota is spent.
    pub project_id: &'a str,
}

/// What indexq knows about a token request.
#[derive(Debug, Clone, Copy)]
pub struct GoogleTokenContext<'a> {
    /// The service account's `client_email` from the key file.
    pub client_email: &'a str,
    /// The key file's `private_key_id`: names the key, is no key material.
    pub key_id: &'a str,
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

/// `transient` with a prefix of the caller's making.
fn transient_answered(resp: &Response, answered: &str, reason: &str, what: &str) -> Verdict {
    let retry_after = resp.retry_after();
    let when = retry_after.map_or_else(|| "with backoff".to_string(), |r| r.to_string());
    Verdict {
        retry_after,
        ..Verdict::new(Class::Transient, reason, format!("{answered}: {what}. indexq retries {when}."))
    }
}

/// Classifies an Indexing API answer (`urlNotifications:publish`, also used for the URL Inspection API).
///
/// | answer | class | reason |
/// |---|---|---|
/// | 2xx | accepted | `ok` |
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
    let (url, email, project) = (ctx.url, ctx.client_email, ctx.project_id);
    if (200..=299).contains(&status) {
        return Verdict::new(
            Class::Accepted,
            "ok",
            format!("Google accepted the request for {url} ({}).", http_status(status)),
        );
    }
    if status == 429 || g_status == "RESOURCE_EXHAUSTED" || google_structured_quota(error) {
        return google_quota(resp, error, &answered, project);
    }
    if matches!(g_status, "INTERNAL" | "UNAVAILABLE" | "DEADLINE_EXCEEDED" | "ABORTED") {
        return transient_answered(resp, &answered, &g_status.to_ascii_lowercase(), "Google failed on its side");
    }
    match status {
        500..=599 => return transient_answered(resp, &answered, "server_error", "Google failed on its side"),
        408 => return transient_answered(resp, &answered, "http_408", "the server gave up waiting for the request"),
        _ => {}
    }
    let client_error = (400..=499).contains(&status);
    let forbidden = status == 403 || g_status == "PERMISSION_DENIED";
    let api_disabled = Verdict::misconfigured(
        "api_disabled",
        format!("{answered}: the Web Search Indexing API is not enabled for the Google Cloud project {project}."),
        format!(
            "Enable the Web Search Indexing API (indexing.googleapis.com) for the project {project} in the Google \
             Cloud console (APIs & Services → Library; for URL inspection also the Google Search Console API, \
             searchconsole.googleapis.com), wait a few minutes, then `indexq queue retry`."
        ),
    );
    // The ErrorInfo reason (google.api.ErrorReason `SERVICE_DISABLED`, with
    // `metadata.service` and `metadata.consumer`), the status, or the older
    // `errors[].reason` `accessNotConfigured`: never the body as a whole, which
    // may quote a URL holding those words.
    let disabled = error.is_some_and(|e| {
        e.has_info(&["SERVICE_DISABLED"]) || e.status == "SERVICE_DISABLED" || e.has_legacy(&["accessNotConfigured"])
    });
    if (client_error || forbidden) && disabled {
        return api_disabled;
    }
    // Below, free text where Google gives nothing structured but
    // `PERMISSION_DENIED`: the message (never the whole body) is read.
    let message = error.map(|e| e.message.to_ascii_lowercase()).unwrap_or_default();
    if forbidden && google_quota_text(status, error) {
        return google_quota(resp, error, &answered, project);
    }
    // "Web Search Indexing API has not been used in project 875626095483
    // before or it is disabled. Enable it by visiting …": a disabled API
    // answered without its ErrorInfo.
    if forbidden && error.is_some_and(|e| e.infos.is_empty()) && message.contains("has not been used in project") {
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
            "ownership_not_verified",
            format!("{answered}: Google does not see {email} as an owner of the Search Console property of {url}."),
            format!(
                "Add {email} as an Owner of the property in Search Console (Settings → Users and permissions), \
                 and check that the URL's scheme and host match the property (http vs https, www or not; a \
                 Domain property, sc-domain:, covers them all)."
            ),
        );
    }
    if status == 401 || g_status == "UNAUTHENTICATED" {
        return Verdict::misconfigured(
            "unauthenticated",
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
            "invalid_argument",
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
            "http_404",
            format!("{answered}: the endpoint does not know the request."),
            format!("{endpoint}."),
        );
    }
    if forbidden {
        return Verdict::misconfigured(
            "permission_denied",
            format!("{answered}: Google denied {email} permission for {url}."),
            format!(
                "Check that {email} is an Owner of the Search Console property of {url}, that the Web Search \
                 Indexing API is enabled for the project {project}, and that the service account is enabled."
            ),
        );
    }
    if (300..=499).contains(&status) {
        return Verdict::misconfigured(
            format!("http_{status}"),
            format!("{answered}: the Google API refused the request, and waiting will not change that."),
            format!("{endpoint}; if they are right, report this response."),
        );
    }
    transient_answered(resp, &answered, "unexpected_status", "no engine documents that status")
}

/// A Google quota answer: the per-day quota (next quota day), a per-minute limit, or one it did not name.
fn google_quota(resp: &Response, error: Option<&GoogleError>, answered: &str, project: &str) -> Verdict {
    let kind = google_quota_kind(error);
    if kind == GoogleQuota::Day {
        return Verdict {
            quota_window: Period::Day,
            ..Verdict::new(
                Class::Quota,
                "daily_quota",
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
            ("rate_limited", format!("the per-minute request limit of the project {project} is reached"))
        }
        _ => ("quota", format!("a quota of the project {project} is used, and Google did not say which")),
    };
    // A short wait: the minute's window is spent, never the day's.
    Verdict {
        retry_after,
        quota_window: Period::Minute,
        ..Verdict::new(Class::Quota, reason, format!("{answered}: {what}. indexq retries {when}."))
    }
}

/// The OAuth2 error codes (RFC 6749 §5.2) that a service-account key or its JWT causes.
const GOOGLE_TOKEN_ERRORS: &[&str] =
    &["invalid_grant", "invalid_client", "unauthorized_client", "access_denied", "invalid_scope"];

/// Classifies an OAuth2 token endpoint answer (RFC 6749 §5.2 errors). 200 → accepted "ok" (the caller parses the token).
///
/// | answer | class | reason |
/// |---|---|---|
/// | 2xx | accepted | `ok` (the body, which holds the token, is never quoted) |
/// | 429, 5xx, 408 | transient | `token_server_error` (`Retry-After` honoured) |
/// | 4xx with `error` `invalid_grant`, `invalid_client`, `unauthorized_client`, `access_denied`, `invalid_scope` | misconfigured | that code |
/// | anything else (another code such as `invalid_request`, 3xx, no JSON) | misconfigured | `token_http_<status>` |
///
/// Messages name the key by its id and the service account by its email, quote
/// Google's `error_description`, and never hold key material.
pub fn google_token(resp: &Response, ctx: &GoogleTokenContext) -> Verdict {
    let status = resp.status;
    let (email, key_id) = (ctx.client_email, ctx.key_id);
    if (200..=299).contains(&status) {
        return Verdict::new(
            Class::Accepted,
            "ok",
            format!("Google's token endpoint issued an access token for {email} ({}).", http_status(status)),
        );
    }
    let value: Option<serde_json::Value> = serde_json::from_str(resp.body.trim()).ok();
    let field = |key: &str| value.as_ref().and_then(|v| v.get(key)).and_then(|t| t.as_str()).map(excerpt);
    let code = field("error");
    let said = match (&code, field("error_description").filter(|d| !d.is_empty())) {
        (Some(code), Some(description)) => format!("{code}: {description}"),
        (Some(code), None) => code.clone(),
        (None, _) => excerpt(resp.body),
    };
    let answered = if said.is_empty() {
        format!("Google's token endpoint answered {}", http_status(status))
    } else {
        format!("Google's token endpoint answered {} ({said})", http_status(status))
    };
    if status == 429 || status == 408 || (500..=599).contains(&status) {
        return transient_answered(resp, &answered, "token_server_error", "it failed to issue an access token");
    }
    let known = code.as_deref().filter(|c| GOOGLE_TOKEN_ERRORS.contains(c));
    match known {
        Some(code) if (400..=499).contains(&status) => {
            let specific = match code {
                "invalid_scope" => "indexq asks for the scope https://www.googleapis.com/auth/indexing; ",
                "unauthorized_client" | "access_denied" => "The service account may be disabled; ",
                _ => "",
            };
            Verdict::misconfigured(
                code,
                format!("{answered}: it refused the service-account key {key_id} of {email}."),
                format!(
                    "{specific}The service-account key {key_id} was revoked, deleted or is wrong: create a new JSON \
                     key for {email} (Google Cloud console → IAM & Admin → Service accounts → Keys) and point \
                     `credentials` in `[google]` at it. Or the machine's clock is off by minutes (the JWT's iat/exp): \
                     synchronise it."
                ),
            )
        }
        _ => Verdict::misconfigured(
            format!("token_http_{status}"),
            format!("{answered}: it did not issue an access token for {email} (key {key_id})."),
            "Check `token_uri` in the key file (https://oauth2.googleapis.com/token) and that the file is an \
             unchanged service-account JSON key; if both are right, report this response.",
        ),
    }
}

/// No response at all (timeout, connection refused/reset, TLS, DNS): always transient; reason "timeout" / "connect" / "network".
///
/// `detail` (the client's error) is quoted as given: redact it first.
pub fn network(failure: NetworkFailure, detail: &str) -> Verdict {
    let (reason, what) = match failure {
        NetworkFailure::Timeout => ("timeout", "the request timed out"),
        NetworkFailure::Connect => ("connect", "indexq could not connect"),
        NetworkFailure::Other => ("network", "the request failed"),
    };
    let detail = excerpt(detail);
    let detail = if detail.is_empty() { String::new() } else { format!(" ({detail})") };
    Verdict::new(Class::Transient, reason, format!("No response: {what}{detail}. indexq retries with backoff."))
}

/// Retry-After: delta-seconds or HTTP-date (httpdate crate). None for garbage/negative.
pub fn parse_retry_after(value: &str) -> Option<RetryAfter> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        // Only digits: delta-seconds (None if it overflows u64).
        return value.parse().ok().map(RetryAfter::Seconds);
    }
    httpdate::parse_http_date(value).ok().map(|at| RetryAfter::At(DateTime::<Utc>::from(at)))
}

/// The verdict on a key file check alone (used by indexnow on 403, and later by `doctor`).
pub fn key_file(key: &str, key_location: &str, check: &KeyFileCheck) -> Verdict {
    let location = redact(key_location, key);
    let set_location = "or set `key_location` in the property's `indexnow` table to where the \
                        key file is served";
    let verdict = match check {
        KeyFileCheck::Failed { error } => Verdict::misconfigured(
            "key_file_unreachable",
            format!(
                "indexq could not fetch the key file at {location}: {}.",
                excerpt(&redact(error, key)).trim_end_matches('.')
            ),
            format!(
                "Make sure {location} is publicly reachable and answers 200 with exactly the key \
                 as plain text; `indexq doctor` checks it without spending quota."
            ),
        ),
        KeyFileCheck::Fetched { status: status @ (404 | 410), .. } => Verdict::misconfigured(
            "key_file_missing",
            format!("The key file at {location} is missing ({}).", http_status(*status)),
            format!("Serve exactly the key as plain text at {location}, {set_location}."),
        ),
        KeyFileCheck::Fetched { status: 200, body } => key_file_content(key, &location, body),
        KeyFileCheck::Fetched { status: status @ 300..=399, .. } => Verdict::misconfigured(
            "key_file_status",
            format!(
                "The key file at {location} answered {}, a redirect, which indexq refused to follow: the key must \
                 be served at the key location itself (and a redirect may lead from https to plain http, where \
                 anyone on the way can change it).",
                http_status(*status)
            ),
            format!(
                "Serve the key file at {location} itself, answering 200 OK with exactly the key, or set \
                 `key_location` in the property's `indexnow` table to the https:// URL it redirects to, on the \
                 property's host."
            ),
        ),
        KeyFileCheck::Fetched { status, .. } => Verdict::misconfigured(
            "key_file_status",
            format!("The key file at {location} answered {} instead of 200 OK.", http_status(*status)),
            format!("Make {location} answer 200 with exactly the key as plain text, {set_location}."),
        ),
    };
    verdict.redacted(key)
}

/// What a key file that answered 200 holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyContent {
    /// Exactly the key, give or take surrounding whitespace.
    Exact,
    /// A UTF-8 byte order mark, then the key.
    Bom,
    /// The key inside an HTML page.
    Html,
    /// The key with other text around it.
    InText,
    /// Nothing but whitespace.
    Empty,
    /// The key in other letter case (keys are case-sensitive).
    OtherCase,
    /// The key saved as UTF-16 (a NUL byte between the letters).
    Utf16,
    /// Something else.
    Other,
}

fn key_content(key: &str, body: &str) -> KeyContent {
    let trimmed = body.trim();
    if key.is_empty() {
        return KeyContent::Other;
    }
    if trimmed == key {
        return KeyContent::Exact;
    }
    if trimmed.strip_prefix('\u{FEFF}').is_some_and(|rest| rest.trim() == key) {
        return KeyContent::Bom;
    }
    if trimmed.contains(key) {
        let lower = trimmed.to_ascii_lowercase();
        let html = trimmed.starts_with('<') || ["<html", "<body", "<!doctype"].iter().any(|tag| lower.contains(tag));
        return if html { KeyContent::Html } else { KeyContent::InText };
    }
    if trimmed.is_empty() {
        return KeyContent::Empty;
    }
    if trimmed.to_ascii_lowercase().contains(&key.to_ascii_lowercase()) {
        return KeyContent::OtherCase;
    }
    if body.contains('\0') {
        let narrowed: String = body.chars().filter(|c| !matches!(c, '\0' | '\u{FEFF}' | '\u{FFFD}')).collect();
        if narrowed.trim() == key {
            return KeyContent::Utf16;
        }
    }
    KeyContent::Other
}

/// The verdict on a key file that answered 200. `location` is already redacted.
fn key_file_content(key: &str, location: &str, body: &str) -> Verdict {
    let served = excerpt(&redact(body, key));
    let only_the_key = format!(
        "Make the key file at {location} contain exactly the key that `key_env`/`key_file` in \
         the property's `indexnow` table provide, or point `key_env`/`key_file` at the key the \
         site serves."
    );
    let wrong = |what: String| {
        Verdict::misconfigured(
            "key_file_wrong",
            format!("The key file at {location} does not contain the configured key: {what}."),
            only_the_key.clone(),
        )
    };
    match key_content(key, body) {
        KeyContent::Exact => Verdict::new(
            Class::KeyPending,
            "key_pending",
            format!(
                "The key file at {location} serves exactly the configured key, so the key is \
                 published correctly and IndexNow has not fetched it yet; indexq retries \
                 automatically."
            ),
        ),
        KeyContent::Bom => Verdict::misconfigured(
            "key_file_bom",
            format!(
                "The key file at {location} starts with a byte order mark (U+FEFF) before the key, \
                 so it does not serve exactly the key."
            ),
            format!(
                "Save the key file at {location} as plain text without a byte order mark \
                 (UTF-8 without BOM, or ASCII), containing only the key."
            ),
        ),
        content @ (KeyContent::Html | KeyContent::InText) => {
            let around = if content == KeyContent::Html { "inside an HTML page" } else { "with other text around it" };
            Verdict::misconfigured(
                "key_file_html",
                format!(
                    "The key file at {location} contains the configured key {around}, \
                     not the key alone: {served}"
                ),
                format!(
                    "Serve the key file at {location} as a static plain-text file containing only \
                     the key, not through a page template or with other text."
                ),
            )
        }
        KeyContent::Empty => wrong("it is empty".to_string()),
        KeyContent::OtherCase => {
            wrong("it serves the key in other upper/lower case, and keys are case-sensitive".to_string())
        }
        KeyContent::Utf16 => {
            wrong("it is saved as UTF-16 text (a NUL byte between the letters); save it as UTF-8 or ASCII".to_string())
        }
        KeyContent::Other => wrong(format!("it serves {served}")),
    }
}

/// A short, single-line excerpt of a body for messages (trimmed, whitespace collapsed, at most ~200 chars with an ellipsis).
///
/// Control characters (such as terminal escapes) become U+FFFD.
pub fn excerpt(body: &str) -> String {
    let collapsed = body.split_whitespace().collect::<Vec<_>>().join(" ").replace(char::is_control, "\u{FFFD}");
    if collapsed.chars().count() <= EXCERPT_CHARS {
        return collapsed;
    }
    let cut: String = collapsed.chars().take(EXCERPT_CHARS).collect();
    format!("{}…", cut.trim_end())
}

/// "IndexNow answered HTTP 403 Forbidden (response: ...)", the body redacted.
fn answered(engine: EngineKind, resp: &Response, key: &str) -> String {
    let body = excerpt(&redact(resp.body, key));
    let status = http_status(resp.status);
    if body.is_empty() {
        format!("{} answered {status}", engine.title())
    } else {
        format!("{} answered {status} (response: {body})", engine.title())
    }
}

/// A rate limit said no: `quota`, with the server's `Retry-After` if any.
fn rate_limited(engine: EngineKind, resp: &Response, key: &str) -> Verdict {
    let retry_after = resp.retry_after();
    let when = match retry_after {
        Some(retry) => retry.to_string(),
        None => "when the budget window reopens".to_string(),
    };
    Verdict {
        retry_after,
        ..Verdict::new(
            Class::Quota,
            "rate_limited",
            format!(
                "{}: it is throttling submissions (too many requests, possibly judged as spam). \
                 indexq waits and retries {when}.",
                answered(engine, resp, key)
            ),
        )
    }
}

/// The server failed: `transient`, with the server's `Retry-After` if any.
fn transient(engine: EngineKind, resp: &Response, key: &str, reason: &str, what: &str) -> Verdict {
    let retry_after = resp.retry_after();
    let when = match retry_after {
        Some(retry) => retry.to_string(),
        None => "with backoff".to_string(),
    };
    Verdict {
        retry_after,
        ..Verdict::new(
            Class::Transient,
            reason,
            format!("{}: {what}. indexq retries {when}.", answered(engine, resp, key)),
        )
    }
}

/// "HTTP 503 Service Unavailable", or "HTTP 599" for a status without a common name.
fn http_status(status: u16) -> String {
    let name = match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        410 => "Gone",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => return format!("HTTP {status}"),
    };
    format!("HTTP {status} {name}")
}

/// IndexNow keys are 8–128 characters of `a-zA-Z0-9-`.
fn key_matches_schema(key: &str) -> bool {
    (8..=128).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// `text` with every occurrence of `key` — in any ASCII letter case,
/// percent-encoded, HTML- or JSON-escaped — replaced by `[key]`.
fn redact(text: &str, key: &str) -> String {
    crate::redact::mask(text, key, REDACTED_KEY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde::Deserialize;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    const KEY: &str = "3f8a1c9e7b2d4f6a8c0e1b3d5f7a9c2e";

    fn location() -> String {
        format!("https://example.com/{KEY}.txt")
    }

    /// Every verdict a test makes goes through here: no message or hint may
    /// show the key, in any letter case.
    fn assert_no_secret(verdict: &Verdict, key: &str, case: &str) {
        let key = key.to_ascii_lowercase();
        let message = verdict.message.to_ascii_lowercase();
        assert!(!message.contains(&key), "{case}: message shows the key: {}", verdict.message);
        if let Some(hint) = &verdict.hint {
            assert!(!hint.to_ascii_lowercase().contains(&key), "{case}: hint shows the key: {hint}");
        }
        assert!(!verdict.message.is_empty(), "{case}: empty message");
        if verdict.class == Class::Misconfigured {
            assert!(verdict.hint.is_some(), "{case}: misconfigured without a hint");
        }
    }

    fn classify(status: u16, headers: &[(&str, &str)], body: &str, check: Option<&KeyFileCheck>) -> Verdict {
        let headers: Vec<(String, String)> = headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        let resp = Response { status, headers: &headers, body };
        let location = location();
        let ctx = IndexNowContext { key: KEY, key_location: &location, key_file: check };
        let verdict = indexnow(&resp, &ctx);
        assert_no_secret(&verdict, KEY, &format!("status {status} body {body:?}"));
        verdict
    }

    fn fetched(status: u16, body: &str) -> KeyFileCheck {
        KeyFileCheck::Fetched { status, body: body.replace("KEY", KEY) }
    }

    // ---- fixtures ---------------------------------------------------------

    const SHARED_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/rejections");
    const LOCAL_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/rejections");
    /// The IndexNow fixtures that existed when this test was written.
    const MIN_INDEXNOW_FIXTURES: usize = 8;

    #[derive(Debug, Clone, Deserialize)]
    struct Fixture {
        id: String,
        engine: String,
        status: u16,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        #[serde(default)]
        body: String,
        key_file: Option<FixtureKeyFile>,
        expect: String,
        retry: Option<String>,
        /// "token": the answer came from the OAuth2 token endpoint.
        phase: Option<String>,
    }

    #[derive(Debug, Clone, Deserialize)]
    struct FixtureKeyFile {
        status: u16,
        #[serde(default)]
        body: String,
    }

    /// Every `*.json` fixture of both directories, by id (the shared copy wins).
    fn load_fixtures() -> BTreeMap<String, (PathBuf, Fixture)> {
        let mut fixtures = BTreeMap::new();
        for dir in [SHARED_FIXTURES, LOCAL_FIXTURES] {
            let Ok(entries) = std::fs::read_dir(dir) else {
                eprintln!("fixture directory {dir} not found");
                continue;
            };
            let mut paths: Vec<PathBuf> = entries
                .map(|entry| entry.expect("read fixture directory entry").path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
                .collect();
            paths.sort();
            for path in paths {
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
                let fixture: Fixture =
                    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()));
                fixtures.entry(fixture.id.clone()).or_insert((path, fixture));
            }
        }
        fixtures
    }

    /// "120 s" → 120; other forms ("next midnight ...") are not checked here.
    fn retry_seconds(retry: &str) -> Option<u64> {
        retry.strip_suffix(" s")?.trim().parse().ok()
    }

    fn classify_fixture(fixture: &Fixture) -> Verdict {
        let headers: Vec<(String, String)> = fixture.headers.iter().map(|(n, v)| (n.clone(), v.clone())).collect();
        let resp = Response { status: fixture.status, headers: &headers, body: &fixture.body };
        let check = fixture.key_file.as_ref().map(|kf| fetched(kf.status, &kf.body));
        let location = location();
        let ctx = IndexNowContext { key: KEY, key_location: &location, key_file: check.as_ref() };
        indexnow(&resp, &ctx)
    }

    #[test]
    fn fixtures_get_their_expected_class() {
        let fixtures = load_fixtures();
        let mut failures = Vec::new();
        let mut classified: BTreeMap<EngineKind, usize> = BTreeMap::new();
        for (id, (path, fixture)) in &fixtures {
            let engine: EngineKind = match fixture.engine.parse() {
                Ok(engine) => engine,
                Err(e) => {
                    failures.push(format!("{id} ({}): {e}", path.display()));
                    continue;
                }
            };
            let verdict = match engine {
                EngineKind::IndexNow => classify_fixture(fixture),
                EngineKind::Bing => {
                    let headers: Vec<(String, String)> =
                        fixture.headers.iter().map(|(n, v)| (n.clone(), v.clone())).collect();
                    let resp = Response { status: fixture.status, headers: &headers, body: &fixture.body };
                    bing(&resp, &BingContext { site_url: "https://example.com/" })
                }
                EngineKind::Google => {
                    let headers: Vec<(String, String)> =
                        fixture.headers.iter().map(|(n, v)| (n.clone(), v.clone())).collect();
                    let resp = Response { status: fixture.status, headers: &headers, body: &fixture.body };
                    if fixture.phase.as_deref() == Some("token") {
                        google_token(&resp, &GOOGLE_TOKEN_CTX)
                    } else {
                        google(&resp, &GOOGLE_CTX)
                    }
                }
            };
            *classified.entry(engine).or_default() += 1;
            eprintln!(
                "{id}: {} {} retry={:?} — {}",
                verdict.class, verdict.reason, verdict.retry_after, verdict.message
            );
            assert_no_secret(&verdict, KEY, id);
            match fixture.expect.parse::<Class>() {
                Ok(expect) if expect == verdict.class => {}
                Ok(expect) => failures.push(format!(
                    "{id}: expected {expect}, got {} ({}): {}",
                    verdict.class, verdict.reason, verdict.message
                )),
                Err(e) => failures.push(format!("{id}: {e}")),
            }
            if let Some(secs) = fixture.retry.as_deref().and_then(retry_seconds) {
                if verdict.retry_after != Some(RetryAfter::Seconds(secs)) {
                    failures.push(format!("{id}: expected retry after {secs} s, got {:?}", verdict.retry_after));
                }
            }
            if id == "google-429-per-day" {
                let got = (verdict.reason.as_str(), verdict.quota_window, verdict.retry_after);
                if got != ("daily_quota", Period::Day, None) {
                    failures.push(format!("{id}: expected daily_quota for the day window, got {got:?}"));
                }
            }
        }
        eprintln!("classified: {classified:?}");
        let indexnow_count = classified.get(&EngineKind::IndexNow).copied().unwrap_or(0);
        assert!(
            indexnow_count >= MIN_INDEXNOW_FIXTURES,
            "found {indexnow_count} IndexNow fixtures in {SHARED_FIXTURES} and {LOCAL_FIXTURES}, \
             expected at least {MIN_INDEXNOW_FIXTURES}"
        );
        assert!(failures.is_empty(), "fixtures failed:\n{}", failures.join("\n"));
    }

    // ---- Bing ---------------------------------------------------------------

    fn bing_verdict(status: u16, headers: &[(&str, &str)], body: &str) -> Verdict {
        let headers: Vec<(String, String)> = headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        bing(&Response { status, headers: &headers, body }, &BingContext { site_url: "https://example.com/" })
    }

    #[test]
    fn bing_error_codes() {
        let err = |code: i64, message: &str| format!(r#"{{"ErrorCode":{code},"Message":"{message}"}}"#);
        #[rustfmt::skip]
        let table: Vec<(u16, String, Class, &str)> = vec![
            (200, r#"{"d":null}"#.into(), Class::Accepted, "ok"),
            (200, "".into(), Class::Accepted, "ok"),
            (200, r#"{"d":"something new"}"#.into(), Class::Accepted, "ok"),
            (400, err(12, "AlreadyExists"), Class::Accepted, "AlreadyExists"),
            (400, err(2, "ERROR!!! You have exceeded your daily url submission quota : 10"), Class::Quota, "daily_quota"),
            (400, err(8, "ERROR!!! Quota remaining for today: 0, Submitted: 10"), Class::Quota, "daily_quota"),
            (400, err(2, "ERROR!!! You have exceeded your monthly url submission quota : 300"), Class::Quota, "monthly_quota"),
            (400, err(4, "ThrottleUser"), Class::Quota, "ThrottleUser"),
            (400, err(5, "ThrottleHost"), Class::Quota, "ThrottleHost"),
            (429, "".into(), Class::Quota, "rate_limited"),
            (500, err(1, "InternalError"), Class::Transient, "InternalError"),
            (400, err(15, "UnexpectedState"), Class::Transient, "UnexpectedState"),
            (503, "<html><body>Service Unavailable</body></html>".into(), Class::Transient, "server_error"),
            (500, err(3, "InvalidApiKey"), Class::Transient, "InvalidApiKey"),
            (400, err(3, "InvalidApiKey"), Class::Misconfigured, "InvalidApiKey"),
            (400, err(6, "UserBlocked"), Class::Misconfigured, "UserBlocked"),
            (400, err(7, "InvalidUrl"), Class::Misconfigured, "InvalidUrl"),
            (400, err(8, "InvalidParameter"), Class::Misconfigured, "InvalidParameter"),
            (400, err(9, "TooManySites"), Class::Misconfigured, "TooManySites"),
            (400, err(10, "UserNotFound"), Class::Misconfigured, "UserNotFound"),
            (400, err(11, "NotFound"), Class::Misconfigured, "NotFound"),
            (400, err(13, "NotAllowed"), Class::Misconfigured, "NotAllowed"),
            (400, err(14, "NotAuthorized"), Class::Misconfigured, "NotAuthorized"),
            (400, err(16, "Deprecated"), Class::Misconfigured, "Deprecated"),
            (400, err(2, "ERROR!!! Something else"), Class::Misconfigured, "UnknownError"),
            (401, "".into(), Class::Misconfigured, "http_401"),
            (400, r#"{"d":{"ErrorCode":14,"Message":"NotAuthorized"}}"#.into(), Class::Misconfigured, "NotAuthorized"),
        ];
        for (status, body, class, reason) in table {
            let v = bing_verdict(status, &[], &body);
            assert_eq!((v.class, v.reason.as_str()), (class, reason), "HTTP {status} {body}: {}", v.message);
            if v.class == Class::Misconfigured {
                assert!(v.hint.is_some(), "misconfigured has a fix: {body}");
            }
        }
    }

    #[test]
    fn bing_quota_windows_and_throttle_waits() {
        let monthly =
            bing_verdict(400, &[], r#"{"ErrorCode":2,"Message":"exceeded your monthly url submission quota"}"#);
        assert_eq!(monthly.quota_window, Period::Month);
        let daily = bing_verdict(400, &[], r#"{"ErrorCode":8,"Message":"Quota remaining for today: 0"}"#);
        assert_eq!((daily.quota_window, daily.retry_after), (Period::Day, None));
        let throttle = bing_verdict(400, &[], r#"{"ErrorCode":4,"Message":"ThrottleUser"}"#);
        assert_eq!(throttle.retry_after, Some(RetryAfter::Seconds(BING_THROTTLE_WAIT)));
        let told = bing_verdict(429, &[("Retry-After", "300")], "");
        assert_eq!(told.retry_after, Some(RetryAfter::Seconds(300)));
        let not_authorized = bing_verdict(400, &[], r#"{"ErrorCode":14,"Message":"NotAuthorized"}"#);
        assert!(not_authorized.hint.unwrap().contains("Verify https://example.com/ in Bing Webmaster Tools"));
    }

    // ---- Google -------------------------------------------------------------

    const GOOGLE_CTX: GoogleContext<'static> = GoogleContext {
        url: "https://example.com/a",
        client_email: "indexer@my-proj.iam.gserviceaccount.com",
        project_id: "my-proj",
    };
    const GOOGLE_TOKEN_CTX: GoogleTokenContext<'static> =
        GoogleTokenContext { client_email: "indexer@my-proj.iam.gserviceaccount.com", key_id: "0123abcd" };

    fn owned_headers(headers: &[(&str, &str)]) -> Vec<(String, String)> {
        headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    /// Every Google verdict: a message, and a hint when misconfigured.
    fn google_verdict(status: u16, headers: &[(&str, &str)], body: &str) -> Verdict {
        let headers = owned_headers(headers);
        let v = google(&Response { status, headers: &headers, body }, &GOOGLE_CTX);
        assert_no_secret(&v, KEY, &format!("google {status} {body}"));
        v
    }

    fn google_token_verdict(status: u16, headers: &[(&str, &str)], body: &str) -> Verdict {
        let headers = owned_headers(headers);
        let v = google_token(&Response { status, headers: &headers, body }, &GOOGLE_TOKEN_CTX);
        assert_no_secret(&v, KEY, &format!("google token {status} {body}"));
        v
    }

    /// `{"error": {"code", "message", "status", "details"}}`.
    fn rpc(code: u16, status: &str, message: &str, details: &str) -> String {
        let message = serde_json::Value::String(message.to_string());
        let details = if details.is_empty() { String::new() } else { format!(r#", "details": [{details}]"#) };
        format!(r#"{{"error": {{"code": {code}, "message": {message}, "status": "{status}"{details}}}}}"#)
    }

    #[test]
    fn google_statuses() {
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
        let disabled_message = "Web Search Indexing API has not been used in project 875626095483 before or it is \
                                disabled. Enable it by visiting https://console.developers.google.com/apis/api/\
                                indexing.googleapis.com/overview?project=875626095483 then retry.";
        let disabled_info = r#"{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED", "domain": "googleapis.com", "metadata": {"service": "indexing.googleapis.com", "consumer": "projects/875626095483"}}"#;
        let exhausted = "Resource has been exhausted (e.g. check quota).";
        type Row = (u16, Vec<(&'static str, &'static str)>, String, Class, &'static str, Option<RetryAfter>);
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            (200, vec![], r#"{"urlNotificationMetadata": {"url": "https://example.com/a"}}"#.into(), Class::Accepted, "ok", None),
            (204, vec![], "".into(), Class::Accepted, "ok", None),
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
        for (status, headers, body, class, reason, retry) in &table {
            let v = google_verdict(*status, headers, body);
            assert_eq!(
                (v.class, v.reason.as_str(), v.retry_after),
                (*class, *reason, *retry),
                "HTTP {status} {headers:?} {body}: {}",
                v.message
            );
            if v.class == Class::Quota {
                let window = if *reason == "daily_quota" { Period::Day } else { Period::Minute };
                assert_eq!(v.quota_window, window, "{body}");
                assert!(v.message.contains("my-proj"), "{}", v.message);
            }
        }
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

    #[test]
    fn google_token_errors() {
        let err =
            |code: &str, description: &str| format!(r#"{{"error": "{code}", "error_description": "{description}"}}"#);
        type Row = (u16, Vec<(&'static str, &'static str)>, String, Class, &'static str, Option<RetryAfter>);
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            (200, vec![], r#"{"access_token": "ya29.secret-token", "expires_in": 3599, "token_type": "Bearer"}"#.into(), Class::Accepted, "ok", None),
            (400, vec![], err("invalid_grant", "Invalid JWT Signature."), Class::Misconfigured, "invalid_grant", None),
            (400, vec![], err("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."), Class::Misconfigured, "invalid_grant", None),
            (401, vec![], err("invalid_client", "The OAuth client was not found."), Class::Misconfigured, "invalid_client", None),
            (401, vec![], err("unauthorized_client", "Client is unauthorized to retrieve access tokens using this method."), Class::Misconfigured, "unauthorized_client", None),
            (403, vec![], err("access_denied", "Account disabled."), Class::Misconfigured, "access_denied", None),
            (400, vec![], err("invalid_scope", "Invalid OAuth scope."), Class::Misconfigured, "invalid_scope", None),
            (400, vec![], r#"{"error": "invalid_grant"}"#.into(), Class::Misconfigured, "invalid_grant", None),
            (400, vec![], err("invalid_request", "Missing required parameter: assertion"), Class::Misconfigured, "token_http_400", None),
            (404, vec![], "<html>Not Found</html>".into(), Class::Misconfigured, "token_http_404", None),
            (500, vec![], err("internal_failure", "Backend Error"), Class::Transient, "token_server_error", None),
            (503, vec![("Retry-After", "30")], "".into(), Class::Transient, "token_server_error", Some(RetryAfter::Seconds(30))),
            (429, vec![], "".into(), Class::Transient, "token_server_error", None),
        ];
        for (status, headers, body, class, reason, retry) in &table {
            let v = google_token_verdict(*status, headers, body);
            assert_eq!(
                (v.class, v.reason.as_str(), v.retry_after),
                (*class, *reason, *retry),
                "HTTP {status} {body}: {}",
                v.message
            );
            assert!(!v.message.contains("ya29"), "{}", v.message);
            if v.class == Class::Misconfigured {
                assert!(v.message.contains(GOOGLE_TOKEN_CTX.key_id), "{}", v.message);
                assert!(v.message.contains(GOOGLE_TOKEN_CTX.client_email), "{}", v.message);
            }
            if GOOGLE_TOKEN_ERRORS.contains(&v.reason.as_str()) {
                let hint = v.hint.as_deref().expect("hint");
                assert!(hint.contains("new JSON key") && hint.contains(GOOGLE_TOKEN_CTX.client_email), "{hint}");
                assert!(hint.contains("clock"), "{hint}");
            }
        }
        let grant = google_token_verdict(400, &[], &err("invalid_grant", "Invalid JWT Signature."));
        assert!(grant.message.contains("Invalid JWT Signature."), "{}", grant.message);
    }

    // ---- status table -----------------------------------------------------

    #[test]
    fn statuses() {
        type Headers<'a> = &'a [(&'a str, &'a str)];
        type Row<'a> = (u16, Headers<'a>, &'a str, Option<&'a KeyFileCheck>, Class, &'a str, Option<RetryAfter>);
        let pending = fetched(200, "KEY");
        #[rustfmt::skip]
        let table: &[Row] = &[
            (200, &[], "", None, Class::Accepted, "ok", None),
            (204, &[], "", None, Class::Accepted, "ok", None),
            (202, &[], "", None, Class::Accepted, "key_validation_pending", None),
            (400, &[], "Invalid format", None, Class::Misconfigured, "bad_request", None),
            (403, &[], r#"{"errorCode":"SiteVerificationNotCompleted"}"#, Some(&pending), Class::KeyPending, "key_pending", None),
            (403, &[], r#"{"errorCode":"InvalidKey"}"#, None, Class::Misconfigured, "forbidden", None),
            (422, &[], "", None, Class::Misconfigured, "url_not_on_host", None),
            (429, &[], "", None, Class::Quota, "rate_limited", None),
            (429, &[("Retry-After", "120")], "", None, Class::Quota, "rate_limited", Some(RetryAfter::Seconds(120))),
            (429, &[("retry-after", "30")], "", None, Class::Quota, "rate_limited", Some(RetryAfter::Seconds(30))),
            (429, &[("RETRY-AFTER", "soon")], "", None, Class::Quota, "rate_limited", None),
            (500, &[], "", None, Class::Transient, "server_error", None),
            (502, &[], "<html>Bad Gateway</html>", None, Class::Transient, "server_error", None),
            (503, &[("Retry-After", "120")], "", None, Class::Transient, "server_error", Some(RetryAfter::Seconds(120))),
            (599, &[], "", None, Class::Transient, "server_error", None),
            (408, &[], "", None, Class::Transient, "http_408", None),
            (413, &[], "", None, Class::Misconfigured, "too_large", None),
            (404, &[], "Not Found", None, Class::Misconfigured, "http_404", None),
            (405, &[], "", None, Class::Misconfigured, "http_405", None),
            (401, &[], "", None, Class::Misconfigured, "http_401", None),
            (301, &[("Location", "https://api.indexnow.org/indexnow")], "", None, Class::Misconfigured, "redirect", None),
            (307, &[], "", None, Class::Misconfigured, "redirect", None),
            (101, &[], "", None, Class::Transient, "unexpected_status", None),
            (600, &[], "", None, Class::Transient, "unexpected_status", None),
        ];
        for &(status, headers, body, check, class, reason, retry) in table {
            let verdict = classify(status, headers, body, check);
            eprintln!("{status}: {verdict:?}");
            assert_eq!(
                (verdict.class, verdict.reason.as_str(), verdict.retry_after),
                (class, reason, retry),
                "status {status} headers {headers:?}: {}",
                verdict.message
            );
        }
    }

    #[test]
    fn messages_name_status_body_and_retry() {
        let v = classify(503, &[("Retry-After", "120")], "down\n  for\tmaintenance", None);
        assert!(v.message.contains("HTTP 503"), "{}", v.message);
        assert!(v.message.contains("down for maintenance"), "{}", v.message);
        assert!(v.message.contains("after 120 s"), "{}", v.message);

        let v = classify(301, &[("location", "https://api.indexnow.org/indexnow")], "", None);
        assert!(v.message.contains("to https://api.indexnow.org/indexnow"), "{}", v.message);

        let v = classify(422, &[], "", None);
        assert!(v.message.contains("do not belong to the host"), "{}", v.message);
        assert!(!v.message.contains("The configured key does not"), "{}", v.message);
    }

    #[test]
    fn url_not_on_host_says_when_the_key_breaks_the_schema() {
        let headers = Vec::new();
        let resp = Response { status: 422, headers: &headers, body: "" };
        let ctx = IndexNowContext { key: "bad_key!", key_location: "https://example.com/bad_key!.txt", key_file: None };
        let v = indexnow(&resp, &ctx);
        assert_no_secret(&v, ctx.key, "422 bad key");
        assert_eq!(v.reason, "url_not_on_host");
        assert!(v.message.contains("The configured key does not"), "{}", v.message);
    }

    // ---- 403 and the key file ---------------------------------------------

    #[test]
    fn key_file_checks() {
        let utf16: String =
            std::iter::once("\u{FFFD}\u{FFFD}".to_string()).chain(KEY.chars().map(|c| format!("{c}\0"))).collect();
        let upper = KEY.to_ascii_uppercase();
        let failed =
            KeyFileCheck::Failed { error: format!("error sending request for url ({}): dns error", location()) };
        #[rustfmt::skip]
        let table: Vec<(KeyFileCheck, Class, &str)> = vec![
            (fetched(200, "KEY"), Class::KeyPending, "key_pending"),
            (fetched(200, "KEY\n"), Class::KeyPending, "key_pending"),
            (fetched(200, "KEY\r\n"), Class::KeyPending, "key_pending"),
            (fetched(200, "  KEY \t\n\n"), Class::KeyPending, "key_pending"),
            (fetched(200, "\u{FEFF}KEY"), Class::Misconfigured, "key_file_bom"),
            (fetched(200, "\u{FEFF}KEY\r\n"), Class::Misconfigured, "key_file_bom"),
            (fetched(200, "<html><body>KEY</body></html>"), Class::Misconfigured, "key_file_html"),
            (fetched(200, "<!DOCTYPE html>\n<p>KEY</p>"), Class::Misconfigured, "key_file_html"),
            (fetched(200, "indexnow key: KEY"), Class::Misconfigured, "key_file_html"),
            (fetched(200, "KEY\nKEY"), Class::Misconfigured, "key_file_html"),
            (fetched(200, "some-other-key-0000"), Class::Misconfigured, "key_file_wrong"),
            (fetched(200, ""), Class::Misconfigured, "key_file_wrong"),
            (fetched(200, "\n"), Class::Misconfigured, "key_file_wrong"),
            (fetched(200, &upper), Class::Misconfigured, "key_file_wrong"),
            (fetched(200, &utf16), Class::Misconfigured, "key_file_wrong"),
            (fetched(404, "<html><body>Not Found</body></html>"), Class::Misconfigured, "key_file_missing"),
            (fetched(410, ""), Class::Misconfigured, "key_file_missing"),
            (fetched(301, ""), Class::Misconfigured, "key_file_status"),
            (fetched(302, "KEY"), Class::Misconfigured, "key_file_status"),
            (fetched(403, ""), Class::Misconfigured, "key_file_status"),
            (fetched(500, "KEY"), Class::Misconfigured, "key_file_status"),
            (fetched(204, ""), Class::Misconfigured, "key_file_status"),
            (failed, Class::Misconfigured, "key_file_unreachable"),
        ];
        for (check, class, reason) in &table {
            let alone = key_file(KEY, &location(), check);
            assert_no_secret(&alone, KEY, &format!("{check:?}"));
            assert_eq!((alone.class, alone.reason.as_str()), (*class, *reason), "{check:?}: {}", alone.message);
            // On a 403 the key file decides, whatever the engine said.
            for body in [
                r#"{"errorCode":"SiteVerificationNotCompleted"}"#,
                r#"{"code":"UserForbiddedToAccessSite","message":"User is unauthorized to access the site. Please verify the site using the key and try again"}"#,
                "",
            ] {
                let v = classify(403, &[], body, Some(check));
                assert_eq!((v.class, v.reason.as_str()), (*class, *reason), "{check:?} / {body}");
                assert_eq!(v.hint, alone.hint);
                assert!(v.message.ends_with(&alone.message), "{}", v.message);
                assert!(v.message.contains(&excerpt(body)), "{}", v.message);
            }
        }
    }

    #[test]
    fn key_file_messages_say_what_was_found() {
        let loc = location();
        let v = key_file(KEY, &loc, &fetched(301, ""));
        assert!(v.message.contains("HTTP 301") && v.message.contains("refused to follow"), "{}", v.message);
        assert!(v.hint.as_deref().is_some_and(|h| h.contains("https:// URL it redirects to")));
        let v = key_file(KEY, &loc, &fetched(500, ""));
        assert!(v.message.contains("instead of 200 OK") && !v.message.contains("redirect"), "{}", v.message);

        let v = key_file(KEY, &loc, &fetched(200, "some-other-key-0000"));
        assert!(v.message.contains("does not contain the configured key"), "{}", v.message);
        assert!(v.message.contains("some-other-key-0000"), "{}", v.message);
        assert!(v.message.contains("https://example.com/[key].txt"), "{}", v.message);

        let v = key_file(KEY, &loc, &fetched(200, "<html><body>KEY</body></html>"));
        assert!(v.message.contains("<html><body>[key]</body></html>"), "{}", v.message);

        let v = key_file(KEY, &loc, &fetched(200, "KEY\r\n"));
        assert!(v.message.contains("published correctly"), "{}", v.message);
        assert!(v.message.contains("retries"), "{}", v.message);
        assert_eq!(v.hint, None);

        let custom = "https://example.com/.well-known/indexnow.txt";
        let v = key_file(KEY, custom, &fetched(404, ""));
        assert!(v.message.contains(custom), "{}", v.message);
        assert!(v.hint.as_deref().is_some_and(|h| h.contains("key_location")));
    }

    // ---- Retry-After, network, excerpt ------------------------------------

    #[test]
    fn retry_after_values() {
        let date = Utc.with_ymd_and_hms(2026, 10, 21, 7, 28, 0).single().expect("valid date");
        let table: &[(&str, Option<RetryAfter>)] = &[
            ("120", Some(RetryAfter::Seconds(120))),
            (" 120 ", Some(RetryAfter::Seconds(120))),
            ("0", Some(RetryAfter::Seconds(0))),
            ("Wed, 21 Oct 2026 07:28:00 GMT", Some(RetryAfter::At(date))),
            ("Wednesday, 21-Oct-26 07:28:00 GMT", Some(RetryAfter::At(date))),
            ("-5", None),
            ("+5", None),
            ("1.5", None),
            ("soon", None),
            ("", None),
            ("99999999999999999999999", None),
        ];
        for &(value, expect) in table {
            assert_eq!(parse_retry_after(value), expect, "Retry-After: {value:?}");
        }
    }

    #[test]
    fn retry_after_date_is_kept_and_shown() {
        let v = classify(429, &[("Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT")], "", None);
        assert!(matches!(v.retry_after, Some(RetryAfter::At(_))));
        assert!(v.message.contains("at 2026-10-21 07:28:00 UTC"), "{}", v.message);
    }

    #[test]
    fn network_failures_are_transient() {
        let table = [
            (NetworkFailure::Timeout, "timeout"),
            (NetworkFailure::Connect, "connect"),
            (NetworkFailure::Other, "network"),
        ];
        for (failure, reason) in table {
            let v = network(failure, "operation timed out\nafter 30s");
            assert_no_secret(&v, KEY, reason);
            assert_eq!((v.class, v.reason.as_str()), (Class::Transient, reason));
            assert!(v.message.contains("operation timed out after 30s"), "{}", v.message);
            assert_eq!(network(failure, "").message.matches('(').count(), 0);
        }
    }

    #[test]
    fn excerpts() {
        assert_eq!(excerpt("  a\n\n b\t c  "), "a b c");
        assert_eq!(excerpt(""), "");
        assert_eq!(excerpt("bell\u{7}esc\u{1b}[31m"), "bell\u{FFFD}esc\u{FFFD}[31m");
        let long = "é".repeat(500);
        let short = excerpt(&long);
        assert!(short.ends_with('…'));
        assert_eq!(short.chars().count(), EXCERPT_CHARS + 1);
        let exact = "x".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&exact), exact);
    }

    // ---- secrets ----------------------------------------------------------

    #[test]
    fn no_secret_in_any_message() {
        let upper = KEY.to_ascii_uppercase();
        let json = format!(r#"{{"key":"{KEY}","errorCode":"InvalidKey"}}"#);
        let long = format!("{}{KEY}", "x".repeat(EXCERPT_CHARS - 10));
        let bodies = ["", KEY, upper.as_str(), json.as_str(), long.as_str()];
        let mut checks: Vec<Option<KeyFileCheck>> = vec![None];
        for status in [200, 301, 404, 500] {
            for body in bodies {
                checks.push(Some(KeyFileCheck::Fetched { status, body: body.to_string() }));
            }
        }
        checks.push(Some(fetched(200, "\u{FEFF}KEY")));
        checks.push(Some(fetched(200, "<html>KEY</html>")));
        checks.push(Some(KeyFileCheck::Failed { error: format!("GET {} failed: {KEY}", location()) }));
        let location_header = format!("https://api.indexnow.org/indexnow?key={KEY}");
        let headers: &[(&str, &str)] = &[("Location", &location_header), ("Retry-After", "5")];
        let mut count = 0;
        for status in [101, 200, 202, 204, 301, 400, 401, 403, 404, 408, 413, 422, 429, 500, 503, 600] {
            for body in bodies {
                for check in &checks {
                    // `classify` asserts that neither message nor hint shows the key.
                    classify(status, headers, body, check.as_ref());
                    count += 1;
                }
            }
        }
        for check in checks.iter().flatten() {
            assert_no_secret(&key_file(KEY, &location(), check), KEY, &format!("{check:?}"));
            count += 1;
        }
        assert!(count > 1000);

        let check = fetched(200, "KEY");
        let loc = location();
        let ctx = IndexNowContext { key: KEY, key_location: &loc, key_file: Some(&check) };
        let debug = format!("{ctx:?}");
        assert!(!debug.contains(KEY), "{debug}");
    }

    #[test]
    fn redaction_ignores_case_and_keeps_the_rest() {
        assert_eq!(redact("a KEY b key c", "key"), "a [key] b [key] c");
        assert_eq!(redact("naïve key", "KEY"), "naïve [key]");
        assert_eq!(redact("nothing", ""), "nothing");
    }

    // ---- structured fields before free text -------------------------------

    /// A code, a status or an ErrorInfo reason decides; the message is read
    /// only where the engine says nothing structured.
    #[test]
    fn structured_fields_before_free_text() {
        let bing_err = |code: i64, message: &str| format!(r#"{{"ErrorCode":{code},"Message":"{message}"}}"#);
        #[rustfmt::skip]
        let bing_table: Vec<(u16, String, Class, &str)> = vec![
            // A quota wording under a code that means something else is that code.
            (400, bing_err(3, "ERROR!!! InvalidApiKey: the key is not valid; Quota remaining for today: 0"), Class::Misconfigured, "InvalidApiKey"),
            (400, bing_err(14, "ERROR!!! You have exceeded your daily url submission quota : 10"), Class::Misconfigured, "NotAuthorized"),
            (400, bing_err(7, "Quota remaining for today: 0"), Class::Misconfigured, "InvalidUrl"),
            (400, bing_err(4, "ERROR!!! Quota remaining for today: 0"), Class::Quota, "ThrottleUser"),
            (500, bing_err(1, "ERROR!!! exceeded quota"), Class::Transient, "InternalError"),
            // Under a generic code (0, 2, 8, or one Bing never documented) the wording is all there is.
            (400, bing_err(0, "ERROR!!! Quota remaining for today: 0, Submitted: 10"), Class::Quota, "daily_quota"),
            (400, bing_err(2, "ERROR!!! You have exceeded your daily url submission quota : 10"), Class::Quota, "daily_quota"),
            (400, bing_err(8, "ERROR!!! Quota remaining for this month: 0"), Class::Quota, "monthly_quota"),
            (400, bing_err(42, "Quota remaining for today: 0"), Class::Quota, "daily_quota"),
            (400, bing_err(42, "Something new"), Class::Misconfigured, "UnknownErrorCode"),
        ];
        for (status, body, class, reason) in &bing_table {
            let v = bing_verdict(*status, &[], body);
            assert_eq!((v.class, v.reason.as_str()), (*class, *reason), "HTTP {status} {body}: {}", v.message);
        }

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
                (v.class, v.reason.as_str(), v.retry_after),
                (*class, *reason, *retry),
                "HTTP {status} {body}: {}",
                v.message
            );
        }
    }
}
