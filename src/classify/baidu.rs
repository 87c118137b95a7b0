//! Baidu's link push (普通收录 API 提交, `POST …/urls?site=…&token=…`, one
//! URL a line): the answer to a push, by its `error` and `message`. A
//! success states what is left of today's quota (`remain`), which is
//! reported like Bing's quota read; the URLs it lists as `not_same_site` or
//! `not_valid` get verdicts of their own ([`baidu_refused`]). The table is
//! on [`baidu`].

use super::{answered, excerpt, http_status, transient, unrecognized_body, Response, Verdict};
use crate::model::{AcceptedReason, EngineKind, HttpStatus, MisconfiguredReason, Period, QuotaReason, TransientReason};
use serde::Deserialize;

/// What indexq knows about a push besides the response.
#[derive(Debug, Clone, Copy)]
pub struct BaiduContext<'a> {
    /// The `site` parameter sent.
    pub site: &'a str,
}

/// A success, as Baidu's help documents it: `remain` and `success` always,
/// `not_same_site` and `not_valid` when some URL was not taken.
#[derive(Deserialize)]
struct Pushed {
    remain: u64,
    success: u64,
    #[serde(default)]
    not_same_site: Vec<String>,
    #[serde(default)]
    not_valid: Vec<String>,
}

/// A refusal: `{"error": 400, "message": "over quota"}`.
#[derive(Deserialize)]
struct Refusal {
    error: i64,
    #[serde(default)]
    message: String,
}

/// Classifies Baidu's answer to a push:
///
/// | answer | class | reason |
/// |---|---|---|
/// | 200 `{"remain", "success", …}` | accepted | `ok`; `remain` is what is left of today (reported) |
/// | 200 with any other body | accepted | `unrecognized_body` |
/// | `"over quota"` | quota | `over_quota`: 0 left today (reported); the rest waits for midnight China time |
/// | 401 `"token is not valid"` | misconfigured | `token_not_valid` |
/// | `"site error"` | misconfigured | `site_error` |
/// | `"only 2000 urls are allowed once"` | misconfigured | `too_large` (indexq never sends more) |
/// | `"empty content"`, any other 4xx | misconfigured | `bad_request` / `http_<status>` |
/// | 5xx, 408 | transient | `server_error` / `http_408` |
///
/// `not_same_site` and `not_valid` in a success are [`baidu_refused`]'s.
pub fn baidu(resp: &Response, ctx: &BaiduContext) -> Verdict {
    let engine = EngineKind::Baidu;
    let status = resp.status;
    let answered = answered(engine, resp, "");
    let site = ctx.site;
    if (200..300).contains(&status) {
        return match serde_json::from_str::<Pushed>(resp.body.trim()) {
            Ok(p) => Verdict {
                reported: Some((Period::Day, p.remain)),
                ..Verdict::new(
                    AcceptedReason::Ok,
                    format!(
                        "Baidu took {} URL{} ({}); {} are left of today's push quota for {site}.",
                        p.success,
                        if p.success == 1 { "" } else { "s" },
                        http_status(status),
                        p.remain
                    ),
                )
            },
            Err(_) => unrecognized_body(engine, resp, "", r#"a body that is not Baidu's JSON ({"remain", "success"})"#),
        };
    }
    let message = serde_json::from_str::<Refusal>(resp.body.trim())
        .ok()
        .filter(|r| r.error != 0)
        .map(|r| r.message.trim().to_ascii_lowercase());
    match (status, message.as_deref()) {
        (_, Some("over quota")) => Verdict {
            reported: Some((Period::Day, 0)),
            ..Verdict::new(
                QuotaReason::OverQuota,
                format!(
                    "{answered}: today's push quota for {site} is used. indexq waits for midnight China time \
                     (Asia/Shanghai); what Baidu did not count is given back."
                ),
            )
        },
        (_, Some("token is not valid")) => Verdict::misconfigured(
            MisconfiguredReason::TokenNotValid,
            format!("{answered}: Baidu does not take this push token for {site}."),
            "Take the token from 搜索资源平台's push tool page (普通收录 → 资源提交 → API 提交: the `token=` of \
             the interface address) for this site, and put it in the variable named by `token_env` (or the \
             file of `token_file`) in `[baidu]`.",
        ),
        (_, Some("site error")) => Verdict::misconfigured(
            MisconfiguredReason::SiteError,
            format!("{answered}: Baidu has no verified site {site} for this token."),
            format!(
                "Verify {site} in 搜索资源平台 (ziyuan.baidu.com → 用户中心 → 站点管理) for the account of this \
                 token, or set the property's `baidu.site` to the site as the push tool page writes it."
            ),
        ),
        (_, Some("only 2000 urls are allowed once")) => Verdict::misconfigured(
            MisconfiguredReason::TooLarge,
            format!("{answered}: Baidu takes at most 2,000 URLs a push."),
            "indexq sends at most 2,000 a push: check `endpoint` in `[baidu]` names Baidu's push, then \
             `indexq queue retry`.",
        ),
        (_, Some("empty content")) => Verdict::misconfigured(
            MisconfiguredReason::BadRequest,
            format!("{answered}: Baidu received no URL."),
            "Check `endpoint` in `[baidu]` (https://data.zz.baidu.com) and any proxy between, then `indexq queue retry`.",
        ),
        (408, _) => transient(engine, resp, "", TransientReason::RequestTimeout, "the server gave up waiting"),
        (500..=599, _) => transient(engine, resp, "", TransientReason::ServerError, "the server failed"),
        _ => Verdict::misconfigured(
            MisconfiguredReason::Http(HttpStatus(status)),
            format!("{answered}: the push was refused, and waiting will not change that."),
            format!(
                "Check `endpoint` in `[baidu]` (https://data.zz.baidu.com), the token and the property's \
                 `baidu.site` ({site}), then `indexq queue retry`."
            ),
        ),
    }
}

/// The URLs a success lists as not taken, each with its verdict:
/// `not_same_site` (not of the pushed site) and `not_valid` (a URL Baidu
/// does not take). Both are `misconfigured`: waiting does not change them;
/// the item is parked with its fix.
pub fn baidu_refused(resp: &Response, ctx: &BaiduContext) -> Vec<(String, Verdict)> {
    let Ok(p) = serde_json::from_str::<Pushed>(resp.body.trim()) else { return Vec::new() };
    if !(200..300).contains(&resp.status) {
        return Vec::new();
    }
    let site = ctx.site;
    let not_same_site = p.not_same_site.into_iter().map(|url| {
        let said = excerpt(&url);
        let verdict = Verdict::misconfigured(
            MisconfiguredReason::NotSameSite,
            format!("Baidu did not take {said}: it is not a URL of the pushed site {site} (`not_same_site`)."),
            format!(
                "Push only URLs of {site}: set the property's `baidu.site` to the site these URLs are on, or \
                 give them to the property of their site; then `indexq queue retry`."
            ),
        );
        (url, verdict)
    });
    let not_valid = p.not_valid.into_iter().map(|url| {
        let said = excerpt(&url);
        let verdict = Verdict::misconfigured(
            MisconfiguredReason::NotValid,
            format!("Baidu did not take {said}: it calls it not valid (`not_valid`)."),
            "Check the URL (complete, well-formed, of the site), fix it at its source, then `indexq queue retry`, \
             or `indexq queue drop` it.",
        );
        (url, verdict)
    });
    not_same_site.chain(not_valid).collect()
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
    fn remain_is_reported_and_listed_urls_get_their_own_verdicts() {
        let body = r#"{"remain":7,"success":1,"not_same_site":["https://a.example/x"],"not_valid":["bad"]}"#;
        let whole = baidu(&resp(200, body), &BAIDU_CTX);
        assert_eq!((whole.class(), whole.reported), (Class::Accepted, Some((Period::Day, 7))));
        let refused = baidu_refused(&resp(200, body), &BAIDU_CTX);
        let got: Vec<(&str, String)> = refused.iter().map(|(u, v)| (u.as_str(), v.reason().to_string())).collect();
        assert_eq!(got, [("https://a.example/x", "not_same_site".to_string()), ("bad", "not_valid".to_string())]);
        assert!(refused.iter().all(|(_, v)| v.hint.is_some()));
        // A refusal lists nothing, even with the fields.
        assert!(baidu_refused(&resp(400, body), &BAIDU_CTX).is_empty());
        // Over quota says 0 is left.
        let over = baidu(&resp(400, r#"{"error":400,"message":"over quota"}"#), &BAIDU_CTX);
        assert_eq!((over.class(), over.reported), (Class::Quota, Some((Period::Day, 0))));
        // A 200 that is not Baidu's JSON states nothing.
        let html = baidu(&resp(200, "<html>portal</html>"), &BAIDU_CTX);
        assert_eq!((html.reason().to_string().as_str(), html.reported), ("unrecognized_body", None));
    }
}
