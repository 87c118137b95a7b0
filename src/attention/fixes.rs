//! The fix for a parked item, in the words `classify` gives it when the
//! answer comes (a verdict's `hint`). The ledger keeps a parked item's
//! engine and reason, not the hint; so the answers that give that reason
//! are classified again — made up from the reason, with what the
//! configuration says of the property (its key location, Bing site, Google
//! service account) — and the hint of the one that gives the same reason is
//! kept. `classify` stays the one place where fixes are worded.
//!
//! Three reasons come from the scheduler, not from an answer: `gave_up`
//! (transient for too long), and `key_never_accepted` or `user_forbidden`
//! (key_pending for too long, the latter IndexNow's 403
//! `UserForbiddedToAccessSite`); their fixes are the ones `submit` reports.

use crate::classify::{self, BingContext, GoogleContext, GoogleTokenContext, IndexNowContext, KeyFileCheck, Response};
use crate::model::{EngineKind, HttpStatus, MisconfiguredReason, Reason, TokenHttpStatus};

/// What the fixes name, from the configuration. Nothing secret: the key
/// location comes with the key already masked.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// IndexNow: where the key file is served (the key masked as `[REDACTED]`).
    pub key_location: String,
    /// Bing: the site as Bing lists it.
    pub site_url: String,
    /// Google: the service account, its Cloud project and key id.
    pub client_email: String,
    pub project_id: String,
    pub key_id: String,
}

/// The fix `submit` gives for items parked by the scheduler.
const GAVE_UP: &str = "check the endpoint and the network, then `indexq queue retry`";

/// A key of the right form for made-up key-file answers (only the hint is
/// kept, and the key location is already masked).
const SOME_KEY: &str = "0123456789abcdef";

/// The fix for items of `engine` parked with `reason` (`url`: one of them,
/// which some fixes name); `None` if no answer gives that reason.
pub fn hint(engine: EngineKind, reason: Reason, url: &str, ctx: &Context) -> Option<String> {
    // A status named by the reason (`http_418`, `token_http_400`), else the
    // statuses that carry misconfigured reasons.
    let named = match reason {
        Reason::Misconfigured(MisconfiguredReason::GaveUp) => return Some(GAVE_UP.into()),
        Reason::Misconfigured(MisconfiguredReason::KeyNeverAccepted | MisconfiguredReason::UserForbidden) => {
            // As `submit` words them: from IndexNow's last 403, by its `errorCode`.
            let forbidden = format!(r#"{{"errorCode":"{}"}}"#, classify::USER_FORBIDDEN);
            let verdicts = ["", forbidden.as_str()].map(classify::key_never_accepted);
            return verdicts.into_iter().find(|v| v.reason() == reason).and_then(|v| v.hint);
        }
        Reason::Misconfigured(
            MisconfiguredReason::Http(HttpStatus(status)) | MisconfiguredReason::TokenHttp(TokenHttpStatus(status)),
        ) => Some(status),
        _ => None,
    };
    let statuses: Vec<u16> = named.into_iter().chain([400, 401, 403, 404, 413, 422, 301]).collect();
    let verdicts = match engine {
        EngineKind::IndexNow => indexnow_verdicts(&statuses, ctx),
        EngineKind::Bing => bing_verdicts(&statuses, ctx),
        EngineKind::Google => google_verdicts(&statuses, url, reason, ctx),
        EngineKind::Baidu => baidu_verdicts(&statuses, ctx),
        EngineKind::Yandex => yandex_verdicts(&statuses, ctx),
    };
    verdicts.into_iter().find(|v| v.reason() == reason).and_then(|v| v.hint)
}

/// IndexNow's answers and the key file checks that carry a misconfigured reason.
fn indexnow_verdicts(statuses: &[u16], ctx: &Context) -> Vec<classify::Verdict> {
    let with = |check| IndexNowContext { key: SOME_KEY, key_location: &ctx.key_location, key_file: check };
    let mut verdicts: Vec<_> = statuses.iter().map(|&s| classify::indexnow(&answer(s, ""), &with(None))).collect();
    // A refused key location is named by the answer's `details[].target`, as IndexNow sends it.
    let key_location = r#"{"errorCode":"InvalidRequestParameters","details":[{"target":"keyLocation"}]}"#;
    verdicts.push(classify::indexnow(&answer(400, key_location), &with(None)));
    let checks = [
        KeyFileCheck::Failed { error: String::new() },
        KeyFileCheck::Fetched { status: 404, body: String::new() },
        KeyFileCheck::Fetched { status: 500, body: String::new() },
        KeyFileCheck::Fetched { status: 200, body: format!("\u{FEFF}{SOME_KEY}") },
        KeyFileCheck::Fetched { status: 200, body: format!("<html>{SOME_KEY}</html>") },
        KeyFileCheck::Fetched { status: 200, body: "another key".into() },
    ];
    verdicts.extend(checks.iter().map(|c| classify::key_file(SOME_KEY, &ctx.key_location, c)));
    verdicts
}

/// Bing's answers: every `ErrorCode`, and the statuses.
fn bing_verdicts(statuses: &[u16], ctx: &Context) -> Vec<classify::Verdict> {
    let bing = BingContext { site_url: &ctx.site_url };
    // Bing's reasons are its ErrorCode names: try every code.
    let mut verdicts: Vec<_> = (0..=20)
        .chain([99])
        .map(|code| {
            let body = format!(r#"{{"ErrorCode":{code},"Message":"ERROR!!!"}}"#);
            classify::bing(&answer(400, &body), &bing)
        })
        .collect();
    verdicts.extend(statuses.iter().map(|&s| classify::bing(&answer(s, ""), &bing)));
    verdicts
}

/// Google's answers, the Indexing API's and its token endpoint's.
fn google_verdicts(statuses: &[u16], url: &str, reason: Reason, ctx: &Context) -> Vec<classify::Verdict> {
    let google = GoogleContext {
        url,
        action: crate::model::Action::Updated,
        client_email: &ctx.client_email,
        project_id: &ctx.project_id,
    };
    let error = |code: u16, status: &str, message: &str| {
        format!(r#"{{"error":{{"code":{code},"message":"{message}","status":"{status}"}}}}"#)
    };
    // A disabled API is named by its ErrorInfo reason, as Google sends it.
    let disabled = r#"{"error":{"code":403,"message":"Web Search Indexing API has not been used.","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"SERVICE_DISABLED"}]}}"#;
    let bodies = [
        (403, disabled.to_string()),
        (403, error(403, "PERMISSION_DENIED", "Failed to verify the URL ownership.")),
        (403, error(403, "PERMISSION_DENIED", "Permission denied.")),
        (401, error(401, "UNAUTHENTICATED", "Invalid credentials.")),
        (400, error(400, "INVALID_ARGUMENT", "Invalid argument.")),
    ];
    let mut verdicts: Vec<_> = bodies.iter().map(|(s, b)| classify::google(&answer(*s, b), &google)).collect();
    verdicts.extend(statuses.iter().map(|&s| classify::google(&answer(s, ""), &google)));
    let token = GoogleTokenContext { client_email: &ctx.client_email, key_id: &ctx.key_id };
    let body = format!(r#"{{"error":"{reason}"}}"#);
    verdicts.push(classify::google_token(&answer(400, &body), &token));
    verdicts.extend(statuses.iter().map(|&s| classify::google_token(&answer(s, ""), &token)));
    verdicts
}

/// Baidu's refusals by their messages, and the URLs a success did not take.
fn baidu_verdicts(statuses: &[u16], ctx: &Context) -> Vec<classify::Verdict> {
    let baidu = classify::BaiduContext { site: &ctx.site_url };
    // Baidu's refusals are its messages, and a success lists the URLs it did not take.
    let messages = ["site error", "token is not valid", "only 2000 urls are allowed once", "empty content"];
    let mut verdicts: Vec<_> = messages
        .iter()
        .map(|m| classify::baidu(&answer(400, &format!(r#"{{"error":400,"message":"{m}"}}"#)), &baidu))
        .collect();
    let listed = r#"{"remain":1,"success":0,"not_same_site":["u"],"not_valid":["u"]}"#;
    verdicts.extend(classify::baidu_refused(&answer(200, listed), &baidu).into_iter().map(|(_, v)| v));
    verdicts.extend(statuses.iter().map(|&s| classify::baidu(&answer(s, ""), &baidu)));
    verdicts
}

/// Yandex's refusals by their `error_code`, and the statuses.
fn yandex_verdicts(statuses: &[u16], ctx: &Context) -> Vec<classify::Verdict> {
    let yandex = classify::YandexContext { user_id: "of the token", host_id: &ctx.site_url };
    let codes = [(400, "INVALID_URL"), (403, "INVALID_USER_ID"), (404, "HOST_NOT_VERIFIED")];
    let mut verdicts: Vec<_> = codes
        .iter()
        .map(|(s, c)| classify::yandex(&answer(*s, &format!(r#"{{"error_code":"{c}"}}"#)), &yandex))
        .collect();
    verdicts.extend(statuses.iter().map(|&s| classify::yandex(&answer(s, ""), &yandex)));
    verdicts
}

fn answer(status: u16, body: &str) -> Response<'_> {
    Response { status, headers: &[], body }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context {
            key_location: "https://example.com/[REDACTED].txt".into(),
            site_url: "https://example.com/".into(),
            client_email: "indexer@my-proj.iam.gserviceaccount.com".into(),
            project_id: "my-proj".into(),
            key_id: "a1b2c3".into(),
        }
    }

    /// A misconfigured reason by its stored text.
    fn misconfigured(text: &str) -> Reason {
        Reason::of_class(crate::model::Class::Misconfigured, text).unwrap()
    }

    /// Every misconfigured reason `classify` gives has its fix, the same
    /// words the answer had.
    #[test]
    fn every_misconfigured_reason_has_its_fix() {
        let url = "https://example.com/a";
        let indexnow = [
            "bad_request",
            "forbidden",
            "too_large",
            "url_not_on_host",
            "redirect",
            "http_418",
            "key_file_unreachable",
            "key_file_missing",
            "key_file_status",
            "key_file_bom",
            "key_file_html",
            "key_file_wrong",
            "gave_up",
            "key_never_accepted",
            "user_forbidden",
            "key_location_invalid",
        ];
        for reason in indexnow {
            let fix =
                hint(EngineKind::IndexNow, misconfigured(reason), url, &ctx()).unwrap_or_else(|| panic!("{reason}"));
            assert!(!fix.contains(SOME_KEY), "{reason}: {fix}");
        }
        let forbidden = hint(EngineKind::IndexNow, misconfigured("user_forbidden"), url, &ctx()).unwrap();
        assert!(forbidden.contains("Bing Webmaster Tools") && forbidden.contains("indexq key generate"), "{forbidden}");
        let never = hint(EngineKind::IndexNow, misconfigured("key_never_accepted"), url, &ctx()).unwrap();
        assert!(!never.contains("Bing Webmaster Tools"), "{never}");
        let location = hint(EngineKind::IndexNow, misconfigured("key_location_invalid"), url, &ctx()).unwrap();
        assert!(location.contains("https://example.com/[REDACTED].txt"), "{location}");
        let missing = hint(EngineKind::IndexNow, misconfigured("key_file_missing"), url, &ctx()).unwrap();
        assert!(missing.contains("https://example.com/[REDACTED].txt"), "{missing}");
        let bing = [
            "InvalidApiKey",
            "UserBlocked",
            "InvalidUrl",
            "InvalidParameter",
            "TooManySites",
            "UserNotFound",
            "NotFound",
            "NotAllowed",
            "NotAuthorized",
            "Deprecated",
            "UnknownErrorCode",
            "http_404",
        ];
        for reason in bing {
            assert!(hint(EngineKind::Bing, misconfigured(reason), url, &ctx()).is_some(), "{reason}");
        }
        let key = hint(EngineKind::Bing, misconfigured("InvalidApiKey"), url, &ctx()).unwrap();
        assert!(key.contains("api_key_env"), "{key}");
        let google = [
            "api_disabled",
            "ownership_not_verified",
            "unauthenticated",
            "invalid_argument",
            "http_404",
            "permission_denied",
            "http_409",
            "invalid_grant",
            "invalid_client",
            "unauthorized_client",
            "access_denied",
            "invalid_scope",
            "token_http_400",
        ];
        for reason in google {
            assert!(hint(EngineKind::Google, misconfigured(reason), url, &ctx()).is_some(), "{reason}");
        }
        let owner = hint(EngineKind::Google, misconfigured("ownership_not_verified"), url, &ctx()).unwrap();
        assert!(owner.contains("indexer@my-proj.iam.gserviceaccount.com") && owner.contains("Owner"), "{owner}");
        // A reason indexq itself gives, no answer.
        assert_eq!(hint(EngineKind::IndexNow, misconfigured("not_configured"), url, &ctx()), None);
    }
}
