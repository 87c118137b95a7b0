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
//! A 403 is decided by the key file, never by the body (which is only quoted).
//! The key never shows in a text: it is masked wherever it would appear.

use super::key_file::{check_indexnow_key, key_file, KeyFileCheck, KEY_SCHEMA};
use super::{answered, excerpt, http_status, transient, Response, Verdict};
use crate::model::{AcceptedReason, EngineKind, HttpStatus, MisconfiguredReason, QuotaReason, TransientReason};
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

/// Classifies an IndexNow answer. See the module documentation for the rules.
pub fn indexnow(resp: &Response, ctx: &IndexNowContext) -> Verdict {
    let engine = EngineKind::IndexNow;
    let title = engine.title();
    let status = resp.status;
    let location = mask(ctx.key_location, ctx.key);
    let answered = answered(engine, resp, ctx.key);
    let verdict = match status {
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
        403 => match ctx.key_file {
            Some(check) => {
                let found = key_file(ctx.key, ctx.key_location, check);
                Verdict { message: format!("{answered}. {}", found.message), ..found }
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
        },
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
        422 => {
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
                     a key of {KEY_SCHEMA}; `indexq key generate` makes one."
                ),
            )
        }
        429 => rate_limited(resp, &answered),
        200..=299 => {
            Verdict::new(AcceptedReason::Ok, format!("{title} accepted the submission ({}).", http_status(status)))
        }
        300..=399 => {
            let target =
                resp.header("location").map(|to| format!(" to {}", excerpt(&mask(to, ctx.key)))).unwrap_or_default();
            Verdict::misconfigured(
                MisconfiguredReason::Redirect,
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
            let verdict = indexnow_verdict(status, headers, body, check);
            eprintln!("{status}: {verdict:?}");
            assert_eq!(
                (verdict.class, verdict.reason.to_string().as_str(), verdict.retry_after),
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
