//! Yandex Webmaster API v4's recrawl queue (`POST …/recrawl/queue`, one URL a
//! request) and its quota read (`GET …/recrawl/quota`), by `error_code`.
//! Every answer to a send states what is left of the host's day
//! (`quota_remainder`), reported like Bing's quota read. The table is on
//! [`yandex`].

use super::{answered, excerpt, http_status, transient, unrecognized_body, Response, RetryAfter, Verdict};
use crate::model::{AcceptedReason, EngineKind, HttpStatus, MisconfiguredReason, Period, QuotaReason, TransientReason};
use serde::Deserialize;

/// How long a 429 without `QUOTA_EXCEEDED` waits without `Retry-After`.
pub const YANDEX_THROTTLE_WAIT: u64 = 60;

/// What indexq knows about a recrawl request besides the response.
#[derive(Debug, Clone, Copy)]
pub struct YandexContext<'a> {
    /// The user id in the path.
    pub user_id: &'a str,
    /// The host id in the path (`https:example.com:443`).
    pub host_id: &'a str,
}

/// 202 `{"task_id", "quota_remainder"}`.
#[derive(Deserialize)]
struct Queued {
    // Never read, but required: a 202 without it is not Yandex's answer.
    #[allow(dead_code)]
    task_id: String,
    quota_remainder: u64,
}

/// `{"daily_quota", "quota_remainder"}`.
#[derive(Deserialize)]
struct Quota {
    daily_quota: u64,
    quota_remainder: u64,
}

/// `{"error_code", "error_message", …}`; `available_user_id` with
/// `INVALID_USER_ID`.
#[derive(Deserialize)]
struct Refusal {
    error_code: String,
    #[serde(default)]
    error_message: String,
    available_user_id: Option<serde_json::Value>,
}

fn refusal(body: &str) -> Option<Refusal> {
    serde_json::from_str(body.trim()).ok()
}

/// Classifies Yandex's answer to `POST …/recrawl/queue`:
///
/// | answer | class | reason |
/// |---|---|---|
/// | 202 `{"task_id", "quota_remainder"}` | accepted | `ok`; `quota_remainder` is what is left today (reported) |
/// | 202 with any other body | accepted | `unrecognized_body` |
/// | 409 (the URL was already added for reindexing) | accepted | `already_added` |
/// | 429 `QUOTA_EXCEEDED` | quota | `QUOTA_EXCEEDED`: 0 left today (reported) |
/// | any other 429 | quota | `rate_limited`; `Retry-After`, else [`YANDEX_THROTTLE_WAIT`] |
/// | 400 `INVALID_URL` | misconfigured | `INVALID_URL` |
/// | 403 `INVALID_USER_ID` | misconfigured | `INVALID_USER_ID` (the hint names `available_user_id`) |
/// | 404 `HOST_NOT_VERIFIED` | misconfigured | `HOST_NOT_VERIFIED` |
/// | 5xx, 408 | transient | `server_error` / `http_408` |
/// | any other 4xx | misconfigured | `http_<status>` |
pub fn yandex(resp: &Response, ctx: &YandexContext) -> Verdict {
    let engine = EngineKind::Yandex;
    let status = resp.status;
    if (200..300).contains(&status) {
        return match serde_json::from_str::<Queued>(resp.body.trim()) {
            Ok(q) => Verdict {
                reported: Some((Period::Day, q.quota_remainder)),
                ..Verdict::new(
                    AcceptedReason::Ok,
                    format!(
                        "Yandex queued the URL for recrawl ({}); {} are left of today's recrawl quota for {}.",
                        http_status(status),
                        q.quota_remainder,
                        ctx.host_id
                    ),
                )
            },
            Err(_) => unrecognized_body(engine, resp, "", r#"a body that is not Yandex's JSON ({"task_id", …})"#),
        };
    }
    if status == 409 {
        return Verdict::new(
            AcceptedReason::AlreadyAdded,
            format!("Yandex already has the URL in its recrawl queue ({}).", http_status(status)),
        );
    }
    match refusal(resp.body) {
        Some(r) => yandex_refusal(resp, &r, ctx),
        None => by_status(resp, ctx),
    }
}

/// A refusal with an `error_code`, on any of the recrawl resources.
fn yandex_refusal(resp: &Response, r: &Refusal, ctx: &YandexContext) -> Verdict {
    let answered = answered(EngineKind::Yandex, resp, "");
    let host = ctx.host_id;
    match r.error_code.as_str() {
        "QUOTA_EXCEEDED" => Verdict {
            reported: Some((Period::Day, 0)),
            ..Verdict::new(
                QuotaReason::QuotaExceeded,
                format!(
                    "{answered}: today's recrawl quota for {host} is used. indexq waits for the next quota day \
                     (Europe/Moscow, assumed; what Yandex says is left corrects it)."
                ),
            )
        },
        "INVALID_URL" => Verdict::misconfigured(
            MisconfiguredReason::YandexInvalidUrl,
            format!("{answered}: Yandex refused the URL as wrong."),
            format!(
                "Send only complete URLs of the host {host} (its scheme and host as Yandex lists them); fix the \
                 URL at its source, then `indexq queue retry`, or `indexq queue drop` it."
            ),
        ),
        "INVALID_USER_ID" => {
            let right = r.available_user_id.as_ref().map(|v| excerpt(&v.to_string().replace('"', "")));
            let hint = match &right {
                Some(right) => format!(
                    "The OAuth token belongs to the user {right}, not {}: indexq reads the user from `GET /v4/user` \
                     with the same token, so check that `[yandex]`'s token is the one meant, and that `endpoint` \
                     is the Webmaster API.",
                    ctx.user_id
                ),
                None => "The OAuth token belongs to another user: check `[yandex]`'s token.".to_string(),
            };
            Verdict::misconfigured(
                MisconfiguredReason::InvalidUserId,
                format!("{answered}: the user id {} is not the token's.", ctx.user_id),
                hint,
            )
        }
        "HOST_NOT_VERIFIED" => Verdict::misconfigured(
            MisconfiguredReason::HostNotVerified,
            format!("{answered}: the rights to manage {host} are not verified for this token's user."),
            format!(
                "Verify {host} in Yandex Webmaster (webmaster.yandex.com → the site → Settings → Access rights) \
                 for the user of the OAuth token, or set the property's `yandex.host_id` to the host as Yandex \
                 lists it."
            ),
        ),
        _ => {
            let said = excerpt(&format!("{} {}", r.error_code, r.error_message));
            match by_status(resp, ctx) {
                v if v.class() == crate::model::Class::Misconfigured => {
                    Verdict { message: format!("{answered}: Yandex refused the request ({said})."), ..v }
                }
                v => v,
            }
        }
    }
}

/// An answer without a known `error_code`, by its status.
fn by_status(resp: &Response, ctx: &YandexContext) -> Verdict {
    let engine = EngineKind::Yandex;
    let status = resp.status;
    let answered = answered(engine, resp, "");
    match status {
        429 => {
            let retry_after = resp.retry_after().or(Some(RetryAfter::Seconds(YANDEX_THROTTLE_WAIT)));
            let when = retry_after.map(|r| r.to_string()).unwrap_or_default();
            Verdict {
                retry_after,
                ..Verdict::new(
                    QuotaReason::RateLimited,
                    format!("{answered}: too many requests. indexq retries {when}."),
                )
            }
        }
        408 => transient(engine, resp, "", TransientReason::RequestTimeout, "the server gave up waiting"),
        500..=599 => transient(engine, resp, "", TransientReason::ServerError, "the server failed"),
        401 | 403 => Verdict::misconfigured(
            MisconfiguredReason::Http(HttpStatus(status)),
            format!("{answered}: Yandex did not take the OAuth token."),
            "Get an OAuth token for the Webmaster API (https://oauth.yandex.com, the scopes `webmaster:hostinfo` \
             and `webmaster:verify`) and put it in the variable named by `token_env` (or the file of \
             `token_file`) in `[yandex]`.",
        ),
        _ => Verdict::misconfigured(
            MisconfiguredReason::Http(HttpStatus(status)),
            format!("{answered}: the request was refused, and waiting will not change that."),
            format!(
                "Check `endpoint` in `[yandex]` (https://api.webmaster.yandex.net) and the property's \
                 `yandex.host_id` ({}), then `indexq queue retry`.",
                ctx.host_id
            ),
        ),
    }
}

/// Reads Yandex's answer to `GET …/recrawl/quota`: `(daily_quota,
/// quota_remainder)`, or the verdict on what kept it from being read
/// (classified as a send's refusal would be).
pub fn yandex_quota(resp: &Response, ctx: &YandexContext) -> Result<(u64, u64), Verdict> {
    if resp.status == 200 {
        return serde_json::from_str::<Quota>(resp.body.trim()).map(|q| (q.daily_quota, q.quota_remainder)).map_err(
            |_| unrecognized_body(EngineKind::Yandex, resp, "", r#"a body that is not Yandex's ({"daily_quota", …})"#),
        );
    }
    Err(match refusal(resp.body) {
        Some(r) => yandex_refusal(resp, &r, ctx),
        None => by_status(resp, ctx),
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::model::Class;

    fn resp(status: u16, body: &str) -> Response<'_> {
        Response { status, headers: &[], body }
    }

    #[test]
    fn codes_before_statuses_and_the_right_user_named() {
        #[rustfmt::skip]
        let table: &[(u16, &str, Class, &str)] = &[
            (202, r#"{"task_id":"t","quota_remainder":3}"#, Class::Accepted, "ok"),
            (202, "", Class::Accepted, "unrecognized_body"),
            (409, "", Class::Accepted, "already_added"),
            (429, r#"{"error_code":"QUOTA_EXCEEDED"}"#, Class::Quota, "QUOTA_EXCEEDED"),
            (429, "", Class::Quota, "rate_limited"),
            (400, r#"{"error_code":"INVALID_URL"}"#, Class::Misconfigured, "INVALID_URL"),
            (404, r#"{"error_code":"HOST_NOT_VERIFIED"}"#, Class::Misconfigured, "HOST_NOT_VERIFIED"),
            (403, r#"{"error_code":"INVALID_USER_ID","available_user_id":9}"#, Class::Misconfigured, "INVALID_USER_ID"),
            (403, r#"{"error_code":"SOMETHING_ELSE"}"#, Class::Misconfigured, "http_403"),
            (401, "", Class::Misconfigured, "http_401"),
            (503, "", Class::Transient, "server_error"),
        ];
        for &(status, body, class, reason) in table {
            let v = yandex(&resp(status, body), &YANDEX_CTX);
            assert_eq!((v.class(), v.reason().to_string().as_str()), (class, reason), "{status} {body}");
        }
        let ok = yandex(&resp(202, r#"{"task_id":"t","quota_remainder":3}"#), &YANDEX_CTX);
        assert_eq!(ok.reported, Some((Period::Day, 3)));
        let user = yandex(&resp(403, r#"{"error_code":"INVALID_USER_ID","available_user_id":9}"#), &YANDEX_CTX);
        assert!(user.hint.as_deref().unwrap_or_default().contains("the user 9"), "{user:?}");
        assert_eq!(yandex_quota(&resp(200, r#"{"daily_quota":5,"quota_remainder":2}"#), &YANDEX_CTX), Ok((5, 2)));
    }
}
