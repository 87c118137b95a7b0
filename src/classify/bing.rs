//! Bing Webmaster (`SubmitUrlBatch`): by `ErrorCode`. Quota messages under a
//! generic code are `daily_quota` / `monthly_quota`, or `partial_quota` when
//! they say something is left (what is left is reported); throttles wait
//! `Retry-After` or [`BING_THROTTLE_WAIT`]. The table is on [`bing`].
//! `SubmitFeed` (a sitemap) is [`bing_feed`]'s, `GetFeeds` (what Bing did
//! with it) [`bing_feeds`]'s.

use super::{answered, excerpt, http_status, transient, unrecognized_body, Response, RetryAfter, Verdict};
use crate::model::Period;
use crate::model::{
    AcceptedReason, BingCode, EngineKind, HttpStatus, MisconfiguredReason, QuotaReason, Reason, SitemapReading,
    TransientReason,
};

/// How long a Bing throttle (ErrorCode 4/5, HTTP 429) waits without `Retry-After`.
pub const BING_THROTTLE_WAIT: u64 = 60;

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

/// Whether a 2xx body without an `ErrorCode` is Bing's own: the JSON object
/// every Bing Webmaster API method answers, its result under `d`
/// (`SubmitUrlBatch`: `{"d":null}`). Anything else — empty, an HTML page,
/// JSON of another shape, a cut-off body — is not.
fn bing_body(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body).is_ok_and(|v| v.get("d").is_some())
}

/// Whether a Bing `ErrorCode` says nothing indexq can act on by itself: 0
/// `None`, 2 `UnknownError`, 8 `InvalidParameter`, or a code Bing has not
/// documented. Only under such a code is the message read for a quota.
fn bing_generic_code(code: i64) -> bool {
    matches!(code, 0 | 2 | 8) || BingCode::from_number(code) == BingCode::UnknownErrorCode
}

/// What a Bing quota message says: the window it names and, when it says
/// so, what is left of it and how many URLs the refused request carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct QuotaMessage {
    period: Period,
    /// What is left of the window: `Some(0)` when it is spent ("exceeded"),
    /// `None` when the message names a remainder without a number indexq
    /// can read (the window is then taken as spent).
    left: Option<u64>,
    /// "Submitted: M": the URLs of the refused request.
    submitted: Option<u64>,
}

/// The number after `phrase` (and an optional colon) in `m`, if `m` has the
/// phrase: `Some(None)` when no number follows it.
fn number_after(m: &str, phrase: &str) -> Option<Option<u64>> {
    let rest = &m[m.find(phrase)? + phrase.len()..];
    let rest = rest.trim_start().strip_prefix(':').unwrap_or(rest).trim_start();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some(digits.parse().ok())
}

/// Which quota a Bing message speaks of, and what it says is left, if it is
/// a quota message.
///
/// Free text, read only under a generic code ([`bing_generic_code`]): Bing
/// gives its quota answers no code of their own. The real answers matched
/// (all HTTP 400):
/// - `{"ErrorCode":2,"Message":"ERROR!!! You have exceeded your daily url
///   submission quota : 100"}` (fixture `bing-400-daily-quota`): the day is
///   spent; its number is the quota's size, so 0 is left;
/// - `{"ErrorCode":8,"Message":"ERROR!!! Quota remaining for today: 0,
///   Submitted: 100"}` (fixture `bing-400-quota-remaining-code8`): 0 left;
/// - `{"ErrorCode":2,"Message":"ERROR!!! Quota remaining for today: 10,
///   Submitted: 32"}` (issue 26's measurement, fixture
///   `bing-400-quota-remaining-partial-today`): a batch larger than what is
///   left, 10;
/// - and their monthly forms ("your monthly url submission quota", "Quota
///   remaining for this month: N"; fixture
///   `bing-400-quota-remaining-partial-month`).
///
/// A message naming both windows is read for the one with less left (the
/// month on a tie: it lasts longer).
fn bing_quota_message(message: &str) -> Option<QuotaMessage> {
    let m = message.to_ascii_lowercase();
    let submitted = number_after(&m, "submitted").flatten();
    let remainders = [(Period::Day, "quota remaining for today"), (Period::Month, "quota remaining for this month")]
        .into_iter()
        .filter_map(|(period, phrase)| number_after(&m, phrase).map(|left| QuotaMessage { period, left, submitted }));
    // Unreadable (`None`) sorts first: the window is taken as spent.
    let binding = remainders.min_by_key(|q| (q.left, q.period != Period::Month));
    if binding.is_some() {
        return binding;
    }
    if m.contains("exceeded") && m.contains("quota") {
        let period = if m.contains("month") { Period::Month } else { Period::Day };
        return Some(QuotaMessage { period, left: Some(0), submitted });
    }
    None
}

/// The verdict of a Bing quota message (`q`): a window with nothing left is
/// spent (`daily_quota` / `monthly_quota`, until it ends); with some left,
/// the request was larger than that (`partial_quota`): the engine's
/// remainder is recorded and that much goes again at once. A remainder at
/// least as large as the refused request explains nothing: indexq waits as
/// for a throttle.
fn bing_quota_verdict(resp: &Response, q: QuotaMessage, answered: &str, site: &str) -> Verdict {
    let (spent, which) = match q.period {
        // `bing_quota_message` names only days and months.
        Period::Day | Period::Minute => (QuotaReason::DailyQuota, "today's"),
        Period::Month => (QuotaReason::MonthlyQuota, "this month's"),
    };
    let base = |reason: QuotaReason, message: String| Verdict {
        quota_window: q.period,
        reported: q.left.map(|left| (q.period, left)),
        ..Verdict::new(reason, message)
    };
    match q.left {
        Some(left) if left > 0 => {
            let what = format!("{left} URLs are left of {which} URL submission quota for {site}");
            if q.submitted.is_some_and(|submitted| submitted <= left) {
                let retry_after = resp.retry_after().or(Some(RetryAfter::Seconds(BING_THROTTLE_WAIT)));
                let when = retry_after.map(|r| r.to_string()).unwrap_or_default();
                let message = format!(
                    "{answered}: {what}, yet Bing refused a request no larger than that; indexq retries {when}."
                );
                return Verdict { retry_after, ..base(QuotaReason::PartialQuota, message) };
            }
            let message = format!(
                "{answered}: the request was larger than what is left: {what}. indexq sends that many again now; \
                 the rest waits for the next window."
            );
            base(QuotaReason::PartialQuota, message)
        }
        _ => base(
            spent,
            format!("{answered}: {which} URL submission quota for {site} is used. indexq waits for the next window."),
        ),
    }
}

/// Classifies a Bing Webmaster API answer (`SubmitUrlBatch`), table-driven
/// over `ErrorCode`:
///
/// | answer | class | reason |
/// |---|---|---|
/// | 200 with Bing's JSON (`{"d": …}`) without an error | accepted | `ok` |
/// | 200 with any other body (empty, HTML, other JSON, cut off) | accepted | `unrecognized_body` (the body is kept) |
/// | a quota message ("Quota remaining for today: 0", "exceeded your daily url submission quota") under a generic code (0 `None`, 2 `UnknownError`, 8 `InvalidParameter`, or an undocumented one) | quota | `daily_quota` / `monthly_quota` (the window is spent; 0 left is reported) |
/// | "Quota remaining for today: N, Submitted: M" (or "this month"), N > 0, under a generic code | quota | `partial_quota`: N is reported; N < M (or no M): no wait, that many go again at once; else `Retry-After`, else [`BING_THROTTLE_WAIT`] |
/// | ErrorCode 4 `ThrottleUser`, 5 `ThrottleHost`, HTTP 429 | quota | `ThrottleUser` / `ThrottleHost` / `rate_limited`; `Retry-After`, else [`BING_THROTTLE_WAIT`] |
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
    if let Some(q) = quota_text {
        return bing_quota_verdict(resp, q, &answered, ctx.site_url);
    }
    let Some((code, message)) = error else {
        return match status {
            200..=299 if !bing_body(resp.body) => {
                unrecognized_body(engine, resp, "", r#"a body that is not Bing's JSON ({"d": …})"#)
            }
            200..=299 => {
                Verdict::new(AcceptedReason::Ok, format!("Bing accepted the submission ({}).", http_status(status)))
            }
            429 => bing_throttle(resp, QuotaReason::RateLimited, &answered),
            408 => transient(
                engine,
                resp,
                "",
                TransientReason::RequestTimeout,
                "the server gave up waiting for the request",
            ),
            500..=599 => transient(engine, resp, "", TransientReason::ServerError, "the server failed"),
            _ => Verdict::misconfigured(
                MisconfiguredReason::Http(HttpStatus(status)),
                format!("{answered}: the Bing API refused the request, and waiting will not change that."),
                "Check `endpoint` in `[bing]` (https://ssl.bing.com/webmaster/api.svc/json) and the API key.",
            ),
        };
    };
    let name = BingCode::from_number(code);
    let site = ctx.site_url;
    let said = excerpt(&message);
    let misconfigured = |fix: String| {
        Verdict::misconfigured(MisconfiguredReason::Bing(name), format!("{answered}: ErrorCode {code} {name}."), fix)
    };
    match code {
        4 | 5 => bing_throttle(resp, QuotaReason::Bing(name), &answered),
        1 | 15 => transient(engine, resp, "", TransientReason::Bing(name), "Bing failed on its side"),
        _ if status >= 500 => transient(engine, resp, "", TransientReason::Bing(name), "the server failed"),
        12 => Verdict::new(AcceptedReason::Bing(name), format!("Bing already has these URLs ({said}).")),
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

/// Classifies Bing's answer to `SubmitFeed` (`{"siteUrl", "feedUrl"}`):
/// as [`bing`] classifies `SubmitUrlBatch` (`{"d":null}` is the success),
/// with the fixes worded for a sitemap: an HTTP 404 is `property_not_found`
/// (Bing has no site by that `siteUrl`), and a refusal of the site (11
/// `NotFound`, 13 `NotAllowed`, 14 `NotAuthorized`) or of the feed's URL
/// (7 `InvalidUrl`, 8 `InvalidParameter`) names the sitemap and the site.
pub fn bing_feed(resp: &Response, ctx: &BingContext, feed: &str) -> Verdict {
    let verdict = bing(resp, ctx);
    let site = ctx.site_url;
    let hint = |hint: String| Some(hint);
    match verdict.reason {
        Reason::Misconfigured(MisconfiguredReason::Http(HttpStatus(404))) => Verdict::misconfigured(
            MisconfiguredReason::PropertyNotFound,
            format!("{}: Bing has no site {site} to take the sitemap {feed}.", answered(EngineKind::Bing, resp, "")),
            format!(
                "Add and verify {site} in Bing Webmaster Tools for the account of this API key, or set the \
                 property's `bing.site_url` to the site as Bing lists it; check `endpoint` in `[bing]` \
                 (https://ssl.bing.com/webmaster/api.svc/json)."
            ),
        ),
        Reason::Misconfigured(MisconfiguredReason::Bing(
            BingCode::NotFound | BingCode::NotAllowed | BingCode::NotAuthorized,
        )) => Verdict {
            hint: hint(format!(
                "Verify {site} in Bing Webmaster Tools for the account that owns this API key, or set the \
                 property's `bing.site_url` to the site as Bing lists it; the sitemap {feed} must be on that site."
            )),
            ..verdict
        },
        Reason::Misconfigured(MisconfiguredReason::Bing(BingCode::InvalidUrl | BingCode::InvalidParameter)) => {
            Verdict {
                hint: hint(format!(
                    "Bing refused the sitemap's URL {feed}: it must be a complete http(s) URL on the site {site} \
                     (`bing.site_url`)."
                )),
                ..verdict
            }
        }
        _ => verdict,
    }
}

/// Reads Bing's answer to `GetFeeds` (`GET …/GetFeeds?siteUrl=…`): the
/// site's top-level feeds, `{"d": [{"__type": "Feed:#…", "Compressed",
/// "FileSize", "LastCrawled", "Status", "Submitted", "Type", "Url",
/// "UrlCount"}]}` with WCF dates (`"/Date(1316213995040-0700)/"`), and in
/// it the one whose `Url` is `feed` (not listed: Bing does not have it).
/// `Status` is Bing's word, and Bing documents none of its values (the
/// `Feed` class of its API reference lists the property without them):
/// "Success" is a clean read, "Pending" or "Processing" (any status naming
/// either) not read yet, and any other word is shown as Bing wrote it,
/// never counted as an error, since indexq cannot tell a failure from a
/// state it has not seen. Any other answer is the refusal [`bing_feed`]
/// words; a 2xx that is not Bing's JSON is `accepted` / `unrecognized_body`
/// (no report was read).
pub fn bing_feeds(resp: &Response, ctx: &BingContext, feed: &str) -> Result<SitemapReading, Verdict> {
    let parsed = serde_json::from_str::<serde_json::Value>(resp.body.trim()).ok();
    let feeds = parsed.as_ref().and_then(|v| v.get("d")).filter(|d| d.is_array() || d.is_null());
    match (resp.status, feeds) {
        (200..=299, Some(feeds)) if bing_error(resp.body).is_none() => {
            let wanted = url::Url::parse(feed).ok();
            let same = |url: &str| url == feed || (wanted.is_some() && url::Url::parse(url).ok() == wanted);
            let found = feeds.as_array().into_iter().flatten().find(|f| f["Url"].as_str().is_some_and(same));
            let Some(f) = found else { return Ok(SitemapReading::default()) };
            let status = f["Status"].as_str().map(excerpt);
            let word = status.as_deref().unwrap_or_default().to_ascii_lowercase();
            let pending = word.contains("pending") || word.contains("processing");
            Ok(SitemapReading {
                listed: true,
                submitted: f["Submitted"].as_str().and_then(super::parse_time),
                downloaded: f["LastCrawled"].as_str().and_then(super::parse_time),
                pending,
                errors: 0,
                warnings: 0,
                urls: f["UrlCount"].as_u64(),
                status,
            })
        }
        (200..=299, _) if bing_error(resp.body).is_none() => {
            Err(unrecognized_body(EngineKind::Bing, resp, "", r#"a body that is not Bing's JSON ({"d": […]})"#))
        }
        _ => Err(bing_feed(resp, ctx, feed)),
    }
}

/// A Bing throttle: `quota`, a short wait (not the next day).
fn bing_throttle(resp: &Response, reason: QuotaReason, answered: &str) -> Verdict {
    let retry_after = resp.retry_after().or(Some(RetryAfter::Seconds(BING_THROTTLE_WAIT)));
    let when = retry_after.map(|r| r.to_string()).unwrap_or_default();
    Verdict {
        retry_after,
        ..Verdict::new(reason, format!("{answered}: Bing is throttling submissions; indexq retries {when}."))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::model::Class;

    #[test]
    fn bing_error_codes() {
        let err = |code: i64, message: &str| format!(r#"{{"ErrorCode":{code},"Message":"{message}"}}"#);
        #[rustfmt::skip]
        let table: Vec<(u16, String, Class, &str)> = vec![
            (200, r#"{"d":null}"#.into(), Class::Accepted, "ok"),
            (200, "".into(), Class::Accepted, "unrecognized_body"),
            (200, r#"{"d":"something new"}"#.into(), Class::Accepted, "ok"),
            (200, "<html><body>Please log in to the Wi-Fi</body></html>".into(), Class::Accepted, "unrecognized_body"),
            (200, r#"{"d":nu"#.into(), Class::Accepted, "unrecognized_body"),
            (200, r#"{"result":"ok"}"#.into(), Class::Accepted, "unrecognized_body"),
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
            assert_eq!(
                (v.class(), v.reason.to_string().as_str()),
                (class, reason),
                "HTTP {status} {body}: {}",
                v.message
            );
            if v.class() == Class::Misconfigured {
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

    /// Every Bing quota wording with a number is read for that number: what
    /// is left (the window is spent at 0), and whether the refused request
    /// explains the refusal (issue 26).
    #[test]
    fn bing_quota_wordings_are_read_for_what_is_left() {
        let err = |code: i64, message: &str| format!(r#"{{"ErrorCode":{code},"Message":"{message}"}}"#);
        let throttle = Some(RetryAfter::Seconds(BING_THROTTLE_WAIT));
        // (body, reason, quota window, what is left, retry)
        type Row = (String, &'static str, Period, Option<(Period, u64)>, Option<RetryAfter>);
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            // The real partial refusal (fixture bing-400-quota-remaining-partial-today): 10 go again at once.
            (err(2, "ERROR!!! Quota remaining for today: 10, Submitted: 32"), "partial_quota", Period::Day, Some((Period::Day, 10)), None),
            (err(2, "ERROR!!! Quota remaining for this month: 5, Submitted: 8"), "partial_quota", Period::Month, Some((Period::Month, 5)), None),
            (err(8, "Quota remaining for today:7"), "partial_quota", Period::Day, Some((Period::Day, 7)), None),
            // A remainder no smaller than the request explains nothing: a throttle's wait.
            (err(2, "ERROR!!! Quota remaining for today: 40, Submitted: 32"), "partial_quota", Period::Day, Some((Period::Day, 40)), throttle),
            (err(2, "ERROR!!! Quota remaining for today: 32, Submitted: 32"), "partial_quota", Period::Day, Some((Period::Day, 32)), throttle),
            // Nothing left: the window is spent, and 0 is what is left.
            (err(8, "ERROR!!! Quota remaining for today: 0, Submitted: 100"), "daily_quota", Period::Day, Some((Period::Day, 0)), None),
            (err(2, "ERROR!!! Quota remaining for this month: 0, Submitted: 3"), "monthly_quota", Period::Month, Some((Period::Month, 0)), None),
            (err(2, "ERROR!!! You have exceeded your daily url submission quota : 100"), "daily_quota", Period::Day, Some((Period::Day, 0)), None),
            (err(2, "ERROR!!! You have exceeded your monthly url submission quota : 300"), "monthly_quota", Period::Month, Some((Period::Month, 0)), None),
            // Both windows named: the one with less left binds.
            (err(2, "Quota remaining for today: 10, Quota remaining for this month: 4, Submitted: 32"), "partial_quota", Period::Month, Some((Period::Month, 4)), None),
            (err(2, "Quota remaining for today: 0, Quota remaining for this month: 0"), "monthly_quota", Period::Month, Some((Period::Month, 0)), None),
            // A remainder without a number indexq can read: the window is taken as spent.
            (err(2, "ERROR!!! Quota remaining for today: unknown"), "daily_quota", Period::Day, None, None),
        ];
        for (body, reason, window, reported, retry_after) in table {
            let v = bing_verdict(400, &[], &body);
            assert_eq!(
                (v.class(), v.reason.to_string().as_str(), v.quota_window, v.reported, v.retry_after),
                (Class::Quota, reason, window, reported, retry_after),
                "{body}: {}",
                v.message
            );
        }
        let partial = bing_verdict(400, &[], &err(2, "ERROR!!! Quota remaining for today: 10, Submitted: 32"));
        assert!(partial.message.contains("10 URLs are left of today's URL submission quota"), "{}", partial.message);
        // Under a code that decides, a remainder is not read.
        let throttled = bing_verdict(400, &[], &err(4, "Quota remaining for today: 10, Submitted: 32"));
        assert_eq!((throttled.reason.to_string(), throttled.reported), ("ThrottleUser".to_string(), None));
    }

    /// A code decides; the message is read only where Bing says nothing
    /// structured.
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
            assert_eq!(
                (v.class(), v.reason.to_string().as_str()),
                (*class, *reason),
                "HTTP {status} {body}: {}",
                v.message
            );
        }
    }

    /// `SubmitFeed`'s answers: as `SubmitUrlBatch`'s, with fixes about the
    /// sitemap; a 404 is a site Bing does not have.
    #[test]
    fn feed_answers() {
        let feed = |status: u16, body: &str| {
            let v = bing_feed(&Response { status, headers: &[], body }, &BING_CTX, BING_FEED);
            assert_no_secret(&v, KEY, body);
            v
        };
        let err = |code: i64| format!(r#"{{"ErrorCode":{code},"Message":"ERROR!!!"}}"#);
        #[rustfmt::skip]
        let table: Vec<(u16, String, Class, &str)> = vec![
            (200, r#"{"d":null}"#.into(), Class::Accepted, "ok"),
            (404, "".into(), Class::Misconfigured, "property_not_found"),
            (400, err(14), Class::Misconfigured, "NotAuthorized"),
            (400, err(11), Class::Misconfigured, "NotFound"),
            (400, err(7), Class::Misconfigured, "InvalidUrl"),
            (400, err(3), Class::Misconfigured, "InvalidApiKey"),
            (400, err(4), Class::Quota, "ThrottleUser"),
            (429, "".into(), Class::Quota, "rate_limited"),
            (500, err(1), Class::Transient, "InternalError"),
            (503, "".into(), Class::Transient, "server_error"),
        ];
        for (status, body, class, reason) in table {
            let v = feed(status, &body);
            assert_eq!((v.class(), v.reason().to_string().as_str()), (class, reason), "HTTP {status} {body}");
        }
        let hint = feed(400, &err(14)).hint.unwrap();
        assert!(hint.contains("the sitemap https://example.com/sitemap.xml must be on that site"), "{hint}");
        assert!(feed(404, "").hint.unwrap().contains("Add and verify https://example.com/ in Bing Webmaster Tools"));
    }

    /// `GetFeeds`: the feed's entry read (WCF dates, its status), a feed
    /// Bing does not list, and a refusal.
    #[test]
    fn feeds_are_read() {
        let feeds =
            |status: u16, body: &str| bing_feeds(&Response { status, headers: &[], body }, &BING_CTX, BING_FEED);
        let entry = |status: &str| {
            format!(
                r#"{{"d":[{{"__type":"Feed:#Microsoft.Bing.Webmaster.Api","Compressed":false,"FileSize":1024,"LastCrawled":"\/Date(1315781995040-0700)\/","Status":"{status}","Submitted":"\/Date(1316213995040-0700)\/","Type":"Sitemap","Url":"https:\/\/example.com\/sitemap.xml","UrlCount":1023}}]}}"#
            )
        };
        let r = feeds(200, &entry("Success")).unwrap();
        assert_eq!(
            (r.listed, r.pending, r.errors, r.urls, r.status.as_deref()),
            (true, false, 0, Some(1023), Some("Success"))
        );
        assert_eq!(r.downloaded.unwrap().timestamp_millis(), 1_315_781_995_040);
        assert_eq!(r.submitted.unwrap().timestamp_millis(), 1_316_213_995_040);
        let pending = feeds(200, &entry("Pending")).unwrap();
        assert_eq!((pending.pending, pending.errors), (true, 0));
        // A word Bing does not document is shown as it is, not counted as an error.
        let other_word = feeds(200, &entry("Couldn't fetch")).unwrap();
        assert_eq!(
            (other_word.pending, other_word.errors, other_word.status.as_deref()),
            (false, 0, Some("Couldn't fetch"))
        );
        // Microsoft's "never" (DateTime.MinValue; the FILETIME epoch) is no date.
        let never = entry("Pending")
            .replace("1315781995040-0700", "-62135596800000")
            .replace("1316213995040-0700", "-11644473600000+0000");
        let never = feeds(200, &never).unwrap();
        assert_eq!((never.downloaded, never.submitted), (None, None));
        let other = bing_feeds(
            &Response { status: 200, headers: &[], body: &entry("Success") },
            &BING_CTX,
            "https://example.com/other.xml",
        );
        assert_eq!(other.unwrap(), SitemapReading::default(), "a feed Bing does not list");
        assert_eq!(feeds(200, r#"{"d":[]}"#).unwrap(), SitemapReading::default());
        assert_eq!(
            feeds(400, r#"{"ErrorCode":14,"Message":"NotAuthorized"}"#).unwrap_err().reason.to_string(),
            "NotAuthorized"
        );
        assert_eq!(feeds(200, "<html></html>").unwrap_err().reason.to_string(), "unrecognized_body");
    }
}
