//! IndexNow, status by status:
//!
//! | status | class | reason |
//! |---|---|---|
//! | 200, other 2xx | accepted | `ok` |
//! | 202 | accepted | `key_validation_pending` |
//! | 2xx whose body is neither empty nor JSON (an HTML page, plain text) | accepted | `unrecognized_body` |
//! | 3xx | misconfigured | `redirect` (the endpoint setting is wrong) |
//! | 400 or 422 whose `details[].target` is `keyLocation` | misconfigured | `key_location_invalid` |
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
//! An error body is read by its fields (`errorCode`, or `code`, and
//! `details[].target`), never searched as a whole. A 403 is decided by the
//! key file; its `errorCode` only words the verdict: `UserForbiddedToAccessSite`
//! with an exact key file stays `key_pending`, and when the scheduler gives
//! up on it a day later [`key_never_accepted`] names the causes reported for
//! it (`user_forbidden`). The key never shows in a text: it is masked
//! wherever it would appear.

use super::key_file::{check_indexnow_key, key_file, KeyFileCheck, KEY_SCHEMA};
use super::{answered, excerpt, http_status, transient, unrecognized_body, Response, Verdict};
use crate::model::{AcceptedReason, Class, EngineKind, HttpStatus, MisconfiguredReason, QuotaReason, TransientReason};
use crate::redact::{mask, MASK};
use std::fmt;

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
        let key_file = mask(&format!("{:?}", self.key_file), self.key);
        f.debug_struct("IndexNowContext")
            .field("key", &format_args!("{MASK}"))
            .field("key_location", &mask(self.key_location, self.key))
            .field("key_file", &format_args!("{key_file}"))
            .finish()
    }
}

/// The `errorCode` of Bing's (and api.indexnow.org's) 403 when the key is
/// refused for the site, as sent: `{"errorCode":"UserForbiddedToAccessSite",
/// "message":"User is unauthorized to access the site. Please verify the site
/// using the key and try again","details":null}` (fixture
/// `indexnow-403-user-forbidden-key-ok`).
pub const USER_FORBIDDEN: &str = "UserForbiddedToAccessSite";

/// What an IndexNow error body states, read by its fields: `errorCode`
/// (some answers name it `code`), `message` and `details[]` (`target`,
/// `message`), as Bing and api.indexnow.org send them, e.g.
/// `{"errorCode":"InvalidRequestParameters","message":"Invalid request",
/// "details":[{"target":"keyLocation","message":"Keylocation url is invalid."}]}`.
#[derive(Debug, Default, PartialEq, Eq)]
struct IndexNowError {
    code: Option<String>,
    message: Option<String>,
    /// `details[]`: each one's `target` and `message`.
    details: Vec<(String, String)>,
}

impl IndexNowError {
    /// The body's error, if it is a JSON object.
    fn read(body: &str) -> Option<IndexNowError> {
        let value: serde_json::Value = serde_json::from_str(body).ok()?;
        let object = value.as_object()?;
        let text = |field: &str| object.get(field).and_then(|v| v.as_str()).map(str::to_string);
        let details = object
            .get("details")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten()
            .filter_map(|d| {
                let target = d.get("target")?.as_str()?.to_string();
                let message = d.get("message").and_then(|m| m.as_str()).unwrap_or_default().to_string();
                Some((target, message))
            })
            .collect();
        Some(IndexNowError { code: text("errorCode").or_else(|| text("code")), message: text("message"), details })
    }

    /// The message of the `details[]` entry whose `target` is `target` (any letter case).
    fn about(&self, target: &str) -> Option<&str> {
        self.details.iter().find(|(t, _)| t.eq_ignore_ascii_case(target)).map(|(_, m)| m.as_str())
    }

    fn code_is(&self, code: &str) -> bool {
        self.code.as_deref() == Some(code)
    }
}

/// Whether a 2xx body is IndexNow's own: the protocol documents none (200
/// and 202 come with an empty body from Bing and api.indexnow.org), and
/// Yandex documents `content-type: application/json`: empty or JSON.
fn indexnow_body(body: &str) -> bool {
    body.trim().is_empty() || serde_json::from_str::<serde_json::Value>(body).is_ok()
}

/// Classifies an IndexNow answer. See the module documentation for the rules.
pub fn indexnow(resp: &Response, ctx: &IndexNowContext) -> Verdict {
    let engine = EngineKind::IndexNow;
    let title = engine.title();
    let status = resp.status;
    let location = mask(ctx.key_location, ctx.key);
    let answered = answered(engine, resp, ctx.key);
    let error = IndexNowError::read(resp.body).unwrap_or_default();
    let verdict = match status {
        200..=299 if !indexnow_body(resp.body) => {
            unrecognized_body(engine, resp, ctx.key, "a body that is neither empty nor JSON")
        }
        400 | 422 if error.about("keyLocation").is_some() => key_location_refused(ctx, &error, &answered),
        202 => Verdict::new(
            AcceptedReason::KeyValidationPending,
            format!(
                "{title} accepted the submission ({}) but has not validated the key yet; \
                 it will fetch the key file at {location}.",
                http_status(status)
            ),
        ),
        400 => Verdict::misconfigured(
            MisconfiguredReason::BadRequest,
            format!("{answered}: it could not read the submission."),
            format!(
                "Check that the key is {KEY_SCHEMA} and that the URLs are absolute http(s) \
                 URLs of one host; if they are, report this response as an indexq bug."
            ),
        ),
        403 => key_refused(ctx, &error, &answered),
        408 => transient(
            engine,
            resp,
            ctx.key,
            TransientReason::RequestTimeout,
            "the server gave up waiting for the request",
        ),
        413 => Verdict::misconfigured(
            MisconfiguredReason::TooLarge,
            format!("{answered}: the request is larger than the endpoint accepts."),
            "indexq sends at most 10,000 URLs per request; if a proxy in front of the endpoint \
             limits the request size, raise its limit or point `endpoints` in `[indexnow]` at \
             the engine itself.",
        ),
        422 => not_on_host(ctx, &answered),
        429 => rate_limited(resp, &answered),
        200..=299 => {
            Verdict::new(AcceptedReason::Ok, format!("{title} accepted the submission ({}).", http_status(status)))
        }
        300..=399 => redirected(resp, ctx.key),
        401..=499 => Verdict::misconfigured(
            MisconfiguredReason::Http(HttpStatus(status)),
            format!("{answered}: the endpoint refused the request, and waiting will not change that."),
            "Check `endpoints` in `[indexnow]` (for example https://api.indexnow.org/indexnow); \
             if it is right, report this response.",
        ),
        500..=599 => transient(engine, resp, ctx.key, TransientReason::ServerError, "the server failed"),
        _ => transient(engine, resp, ctx.key, TransientReason::UnexpectedStatus, "no engine documents that status"),
    };
    verdict.redacted(ctx.key)
}

/// A 400 or 422 whose `details[]` refuse the key location itself.
fn key_location_refused(ctx: &IndexNowContext, error: &IndexNowError, answered: &str) -> Verdict {
    let location = mask(ctx.key_location, ctx.key);
    Verdict::misconfigured(
        MisconfiguredReason::KeyLocationInvalid,
        format!(
            "{answered}: it refused the key location {location} itself ({}).",
            excerpt(&mask(error.about("keyLocation").unwrap_or_default(), ctx.key)).trim_end_matches('.')
        ),
        format!(
            "Make `key_location` in the property's `indexnow` table an absolute https:// URL on the \
             submitted host that answers 200 OK with exactly the key as plain text, without a redirect \
             (now {location}), or remove it so that indexq sends https://HOST/KEY.txt; `indexq doctor` \
             fetches it without spending quota."
        ),
    )
}

/// A 403: the key refused, read by what the key file served when indexq
/// checked it (`key_file`); without a check, `forbidden`.
fn key_refused(ctx: &IndexNowContext, error: &IndexNowError, answered: &str) -> Verdict {
    let location = mask(ctx.key_location, ctx.key);
    match ctx.key_file {
        Some(check) => {
            let found = key_file(ctx.key, ctx.key_location, check);
            let message = if found.class() == Class::KeyPending && error.code_is(USER_FORBIDDEN) {
                format!(
                    "{answered}. IndexNow says {USER_FORBIDDEN} although the key file at {location} serves \
                     exactly the configured key: usually it has not verified the key yet. indexq retries until \
                     a day after the key's first use, then says what else causes this answer."
                )
            } else {
                format!("{answered}. {}", found.message)
            };
            Verdict { message, ..found }
        }
        None => Verdict::misconfigured(
            MisconfiguredReason::Forbidden,
            format!(
                "{answered}: it refused the key, and indexq could not check the key file \
                 at {location}. Usually that file is missing or does not serve exactly the key."
            ),
            format!(
                "Check that {location} serves exactly the key as plain text and that \
                 `key_env`/`key_file` hold the same key; `indexq doctor` checks both."
            ),
        ),
    }
}

/// A 422: URLs not on the submission's host, or a key not of the schema.
fn not_on_host(ctx: &IndexNowContext, answered: &str) -> Verdict {
    let location = mask(ctx.key_location, ctx.key);
    let mut message = format!(
        "{answered}: the URLs do not belong to the host of the submission, \
         or the key does not match the schema."
    );
    if check_indexnow_key(ctx.key).is_err() {
        message.push_str(&format!(" The configured key does not: keys are {KEY_SCHEMA}."));
    }
    Verdict::misconfigured(
        MisconfiguredReason::UrlNotOnHost,
        message,
        format!(
            "Submit only URLs under the property's host (one host per request) and use \
             a key of {KEY_SCHEMA}; `indexq key generate` makes one. The key location ({location}) \
             must answer without a redirect (a host that redirects to its www. twin fails), and a \
             key location below the root vouches only for URLs under its folder."
        ),
    )
}

/// A 3xx: the endpoint redirects (where to, the key masked).
fn redirected(resp: &Response, key: &str) -> Verdict {
    let title = EngineKind::IndexNow.title();
    let target = resp.header("location").map(|to| format!(" to {}", excerpt(&mask(to, key)))).unwrap_or_default();
    Verdict::misconfigured(
        MisconfiguredReason::Redirect,
        format!(
            "{title} answered {}{target}: the endpoint redirects instead of taking \
             the submission.",
            http_status(resp.status)
        ),
        "Set `endpoints` in `[indexnow]` to the URL that takes submissions, for example \
         https://api.indexnow.org/indexnow.",
    )
}

/// What it means that IndexNow still refused the key when the scheduler's
/// `key_pending` deadline (a day after the key's first use) passed, its
/// last answer being `body` (the 403; the key file served exactly the key):
/// the reason, message and fix the items are parked with.
///
/// A 403 whose `errorCode` is [`USER_FORBIDDEN`] is `user_forbidden`: the
/// causes public reports give for it lasting days with a byte-exact key
/// file come first — the site not verified in Bing Webmaster Tools, the key
/// first used for another host (IndexNow binds a key to it), the key file
/// redirected or not served as `text/plain` — then rotating the key. Any
/// other is `key_never_accepted`.
pub fn key_never_accepted(body: &str) -> Verdict {
    let error = IndexNowError::read(body).unwrap_or_default();
    if !error.code_is(USER_FORBIDDEN) {
        return Verdict::misconfigured(
            MisconfiguredReason::KeyNeverAccepted,
            "IndexNow kept refusing the key although the key file serves exactly the key",
            "check that key_location serves exactly the key, or rotate the key (`indexq key generate`)",
        );
    }
    Verdict::misconfigured(
        MisconfiguredReason::UserForbidden,
        format!(
            "IndexNow says {USER_FORBIDDEN}, and the causes reported for that with a key file that serves exactly \
             the key are, most common first, the site not verified in Bing Webmaster Tools, the key first used for \
             another host, and the key file redirected or not served as text/plain"
        ),
        "1) verify the site in Bing Webmaster Tools (bing.com/webmasters) with the account you use for it; \
         2) if this key was first used for another host (another site, or this one's www. or bare twin), IndexNow \
         keeps it bound to that host: give this site a key of its own; 3) make the key file answer 200 OK at \
         `key_location` itself, with Content-Type text/plain and no redirect (http to https, bare to www.); \
         then `indexq queue retry`. If it still fails, rotate the key: `indexq key generate`, publish the new \
         file and point `key_env`/`key_file` at it (the parked URLs go again when the key changes).",
    )
}

/// A rate limit said no: `quota`, with the server's `Retry-After` if any.
fn rate_limited(resp: &Response, answered: &str) -> Verdict {
    let retry_after = resp.retry_after();
    let when = match retry_after {
        Some(retry) => retry.to_string(),
        None => "when the budget window reopens".to_string(),
    };
    Verdict {
        retry_after,
        ..Verdict::new(
            QuotaReason::RateLimited,
            format!(
                "{answered}: it is throttling submissions (too many requests, possibly judged as spam). \
                 indexq waits and retries {when}."
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::{RetryAfter, EXCERPT_CHARS};
    use super::*;
    use crate::model::Class;

    /// Bing's 400 for a refused key location, as sent (fixture `indexnow-400-key-location-invalid`).
    const KEY_LOCATION_400: &str = r#"{"errorCode":"InvalidRequestParameters","message":"Invalid request","details":[{"target":"keyLocation","message":"Keylocation url is invalid."}]}"#;
    /// Bing's 422 for URLs outside the key location's folder (fixture `indexnow-422-outside-key-location`).
    const OUTSIDE_422: &str = r#"{"errorCode":"InvalidRequestParameters","message":"One or more URLs are not related to your site verified through the keylocation parameter. Please verify URLs before submitting.","details":null}"#;
    /// Bing's 403 for a key it will not take for the site (fixture `indexnow-403-user-forbidden-key-ok`).
    const USER_FORBIDDEN_403: &str = r#"{"errorCode":"UserForbiddedToAccessSite","message":"User is unauthorized to access the site. Please verify the site using the key and try again","details":null}"#;

    #[test]
    fn error_bodies_are_read_by_their_fields() {
        let read = |body: &str| IndexNowError::read(body);
        let e = read(KEY_LOCATION_400).unwrap();
        assert_eq!(e.code.as_deref(), Some("InvalidRequestParameters"));
        assert_eq!(e.message.as_deref(), Some("Invalid request"));
        assert_eq!(e.about("keyLocation"), Some("Keylocation url is invalid."));
        assert_eq!(e.about("urlList"), None);
        let e = read(USER_FORBIDDEN_403).unwrap();
        assert!(e.code_is(USER_FORBIDDEN) && e.details.is_empty());
        assert!(read(r#"{"code":"UserForbiddedToAccessSite"}"#).unwrap().code_is(USER_FORBIDDEN), "`code` too");
        assert!(read(r#"{"errorCode":"userforbiddedtoaccesssite"}"#).is_some_and(|e| !e.code_is(USER_FORBIDDEN)));
        assert_eq!(read("<html>UserForbiddedToAccessSite</html>"), None);
        assert_eq!(read(r#"["UserForbiddedToAccessSite"]"#), None);
        assert_eq!(read(r#"{"errorCode":7,"details":"keyLocation"}"#), Some(IndexNowError::default()));
    }

    #[test]
    fn a_refused_key_location_names_itself_and_its_fix() {
        let v = indexnow_verdict(400, &[], KEY_LOCATION_400, None);
        assert!(
            v.message.contains("refused the key location https://example.com/[REDACTED].txt itself"),
            "{}",
            v.message
        );
        assert!(v.message.contains("(Keylocation url is invalid)"), "{}", v.message);
        let hint = v.hint.unwrap();
        assert!(hint.contains("`key_location`") && hint.contains("without a redirect"), "{hint}");
    }

    #[test]
    fn an_unrecognized_body_says_what_came_and_that_it_is_kept() {
        let v = indexnow_verdict(200, &[], "<html><body>Sign in to continue</body></html>", None);
        assert!(
            v.message.contains("with an HTML page (<html><body>Sign in to continue</body></html>)"),
            "{}",
            v.message
        );
        assert!(v.message.contains("counted as accepted") && v.message.contains("indexq log"), "{}", v.message);
        let v = indexnow_verdict(200, &[], "OK", None);
        assert!(v.message.contains("a body that is neither empty nor JSON (OK)"), "{}", v.message);
        let key = format!("<html>{KEY}</html>");
        indexnow_verdict(200, &[], &key, None);
    }

    #[test]
    fn a_key_refused_past_its_day_names_the_causes_of_user_forbidden() {
        let v = key_never_accepted(USER_FORBIDDEN_403);
        assert_eq!((v.class(), v.reason.to_string().as_str()), (Class::Misconfigured, "user_forbidden"));
        let hint = v.hint.unwrap();
        let order = ["Bing Webmaster Tools", "another host", "text/plain", "indexq queue retry", "indexq key generate"];
        let at: Vec<usize> = order.iter().map(|p| hint.find(p).unwrap_or_else(|| panic!("{p}: {hint}"))).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "the causes in order, then rotation: {hint}");
        for cause in ["Bing Webmaster Tools", "another host", "redirected"] {
            assert!(v.message.contains(cause), "{cause}: {}", v.message);
        }
        for other in ["", "<html>", r#"{"errorCode":"SiteVerificationNotCompleted"}"#] {
            let v = key_never_accepted(other);
            assert_eq!(v.reason.to_string(), "key_never_accepted", "{other}");
            assert!(v.hint.unwrap().contains("indexq key generate"));
        }
        assert_eq!(key_never_accepted(r#"{"code":"UserForbiddedToAccessSite"}"#).reason.to_string(), "user_forbidden");
    }

    #[test]
    fn statuses() {
        type Headers<'a> = &'a [(&'a str, &'a str)];
        type Row<'a> = (u16, Headers<'a>, &'a str, Option<&'a KeyFileCheck>, Class, &'a str, Option<RetryAfter>);
        let pending = fetched(200, "KEY");
        #[rustfmt::skip]
        let table: &[Row] = &[
            (200, &[], "", None, Class::Accepted, "ok", None),
            (200, &[], " \r\n", None, Class::Accepted, "ok", None),
            (200, &[], r#"{"success":true}"#, None, Class::Accepted, "ok", None),
            (200, &[], "<html><body>Sign in to continue</body></html>", None, Class::Accepted, "unrecognized_body", None),
            (200, &[], "OK", None, Class::Accepted, "unrecognized_body", None),
            (202, &[], "<!DOCTYPE html><title>Portal</title>", None, Class::Accepted, "unrecognized_body", None),
            (204, &[], "", None, Class::Accepted, "ok", None),
            (202, &[], "", None, Class::Accepted, "key_validation_pending", None),
            (400, &[], "Invalid format", None, Class::Misconfigured, "bad_request", None),
            (400, &[], KEY_LOCATION_400, None, Class::Misconfigured, "key_location_invalid", None),
            (400, &[], r#"{"code":"InvalidRequestParameters","details":[{"target":"KEYLOCATION","message":""}]}"#, None, Class::Misconfigured, "key_location_invalid", None),
            (400, &[], r#"{"errorCode":"InvalidRequestParameters","message":"Invalid request","details":[{"target":"urlList","message":"keyLocation"}]}"#, None, Class::Misconfigured, "bad_request", None),
            (400, &[], r#"{"errorCode":"InvalidRequestParameters","message":"Keylocation url is invalid.","details":null}"#, None, Class::Misconfigured, "bad_request", None),
            (422, &[], KEY_LOCATION_400, None, Class::Misconfigured, "key_location_invalid", None),
            (422, &[], OUTSIDE_422, None, Class::Misconfigured, "url_not_on_host", None),
            (403, &[], USER_FORBIDDEN_403, Some(&pending), Class::KeyPending, "key_pending", None),
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
            let verdict = indexnow_verdict(status, headers, body, check);
            eprintln!("{status}: {verdict:?}");
            assert_eq!(
                (verdict.class(), verdict.reason.to_string().as_str(), verdict.retry_after),
                (class, reason, retry),
                "status {status} headers {headers:?}: {}",
                verdict.message
            );
        }
    }

    #[test]
    fn messages_name_status_body_and_retry() {
        let v = indexnow_verdict(503, &[("Retry-After", "120")], "down\n  for\tmaintenance", None);
        assert!(v.message.contains("HTTP 503"), "{}", v.message);
        assert!(v.message.contains("down for maintenance"), "{}", v.message);
        assert!(v.message.contains("after 120 s"), "{}", v.message);

        let v = indexnow_verdict(301, &[("location", "https://api.indexnow.org/indexnow")], "", None);
        assert!(v.message.contains("to https://api.indexnow.org/indexnow"), "{}", v.message);

        let v = indexnow_verdict(422, &[], "", None);
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
        assert_eq!(v.reason.to_string(), "url_not_on_host");
        assert!(v.message.contains("The configured key does not"), "{}", v.message);
    }

    // ---- 403 and the key file ---------------------------------------------
    #[test]
    fn retry_after_date_is_kept_and_shown() {
        let v = indexnow_verdict(429, &[("Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT")], "", None);
        assert!(matches!(v.retry_after, Some(RetryAfter::At(_))));
        assert!(v.message.contains("at 2026-10-21 07:28:00 UTC"), "{}", v.message);
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
                    indexnow_verdict(status, headers, body, check.as_ref());
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
}
