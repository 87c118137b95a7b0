//! Classification: what an engine's answer means. This module maps one HTTP
//! response (status, headers, body) plus what indexq knows about the request
//! (for IndexNow: the key, the key location and, after a 403, what the key
//! location served when indexq fetched it; for Bing the site; for Google the
//! URL, the service account and its Cloud project, or the key id) to one of the classes of answer,
//! with a machine-readable `reason`, a human `message` (what happened, then what
//! indexq does about it), a `hint` (the fix, for every `misconfigured` verdict)
//! and the server's `Retry-After`, if any. It is pure: no HTTP client, no clock,
//! no ledger, no I/O. Callers fetch, time and store; this module only reads.
//!
//! One file per answer that is read, each with its table and the texts of its
//! rules:
//!
//! - `indexnow.rs` ([`indexnow()`]): IndexNow, by HTTP status; a 403 is decided
//!   by the key file check.
//! - `key_file.rs` ([`key_file()`]): what the key location served when indexq
//!   fetched it, and the rules for an IndexNow key ([`check_indexnow_key`]).
//! - `bing.rs` ([`bing()`]): Bing Webmaster, by `ErrorCode`.
//! - `google.rs` ([`google()`]): the Google Indexing API and the URL Inspection
//!   API, by HTTP status and google.rpc.Status.
//! - `token.rs` ([`google_token`]): Google's OAuth2 token endpoint, by the
//!   RFC 6749 §5.2 error code.
//! - `baidu.rs` ([`baidu()`]): Baidu's link push, by `error` and `message`;
//!   the URLs a success did not take ([`baidu_refused`]).
//! - `yandex.rs` ([`yandex()`]): Yandex Webmaster's recrawl queue and its
//!   quota read, by `error_code`.
//! - `sitemaps.rs` ([`sitemap_problems`]): what an engine's report on a
//!   sitemap submitted to it (Search Console's `sitemaps.get`, Bing's
//!   `GetFeeds`, read by `google.rs` and `bing.rs`) says a human must look
//!   at: errors, or no download in time.
//! - here: the engine-neutral parts — the response and the verdict,
//!   `Retry-After`, a failure without a response ([`network`]: `transient`
//!   with `timeout`, `connect` or `network`), the excerpt of a body and the
//!   shared shapes of a message.
//!
//! Structured fields are read before free text, for every engine: a code,
//! a status or a `google.rpc.ErrorInfo` reason decides; the message is read
//! only where the engine gives nothing structured, and each such rule names
//! the real answer it matches. A body is never searched as a whole.
//!
//! Secrets: `message` and `hint` never contain the IndexNow key, in any letter
//! case or encoding. Wherever it would appear (the key location, a served
//! body, an error) it is replaced by [`crate::redact::MASK`] through
//! [`crate::redact::mask`], the one masking function of the crate. [`network`]
//! has no key to hide: its `detail` must already be redacted by the caller.

mod baidu;
mod bing;
mod google;
mod indexnow;
mod key_file;
mod sitemaps;
mod token;
mod yandex;

#[cfg(test)]
mod test_support;

pub use baidu::{baidu, baidu_refused, BaiduContext};
pub use bing::{bing, bing_feed, bing_feeds, BingContext};
pub use google::{
    google, google_inspection, search_console_list, search_console_report, search_console_submit, GoogleContext,
    InspectionContext, SitemapsContext,
};
pub use indexnow::{indexnow, key_never_accepted, IndexNowContext, USER_FORBIDDEN};
pub use key_file::{check_indexnow_key, key_file, KeyFileCheck, KEY_LENGTH, KEY_SCHEMA};
pub use sitemaps::sitemap_problems;
pub use token::{google_token, GoogleTokenContext};
pub use yandex::{yandex, yandex_quota, YandexContext};

use crate::model::Period;
use crate::model::{AcceptedReason, Class, ClassReason, EngineKind, MisconfiguredReason, Reason, TransientReason};
use chrono::{DateTime, Utc};
use std::fmt;

/// How many characters of a body [`excerpt`] keeps before the ellipsis.
const EXCERPT_CHARS: usize = 200;

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

/// The meaning of one answer: its class is its reason's, and its reason
/// always has one (the constructors take a class reason, and the field is
/// private to `classify`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    reason: Reason,
    pub message: String,
    pub hint: Option<String>,
    pub retry_after: Option<RetryAfter>,
    /// For `quota` without `Retry-After`: which window the engine said is
    /// spent (a daily quota unless it said monthly).
    pub quota_window: Period,
    /// What the engine said is left of one of its windows, in a refusal
    /// (Bing's "Quota remaining for today: 10, Submitted: 32": the day, 10):
    /// recorded like a reading of the engine's quota.
    pub reported: Option<(Period, u64)>,
}

impl Verdict {
    pub fn new<R: ClassReason>(reason: R, message: impl Into<String>) -> Self {
        Verdict {
            reason: reason.into(),
            message: message.into(),
            hint: None,
            retry_after: None,
            quota_window: Period::Day,
            reported: None,
        }
    }

    /// A verdict of `reason`, if it is a class reason (`None` for a local one).
    pub fn of_reason(reason: Reason, message: impl Into<String>) -> Option<Self> {
        reason.class()?;
        Some(Verdict { reason, ..Verdict::new(crate::model::AcceptedReason::Ok, message) })
    }

    /// Why: a reason of the verdict's class.
    pub fn reason(&self) -> Reason {
        self.reason
    }

    /// The class of the answer: its reason's.
    pub fn class(&self) -> Class {
        // Every constructor takes a `ClassReason`, and `reason` is private to `classify`.
        self.reason.class().expect("a verdict's reason has a class")
    }

    pub fn misconfigured(reason: MisconfiguredReason, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Verdict { hint: Some(hint.into()), ..Verdict::new(reason, message) }
    }

    /// The verdict with its human texts passed through a redactor.
    pub fn redacted_with(self, redactor: &crate::redact::Redactor) -> Self {
        self.map_texts(|text| redactor.redact(text))
    }

    /// The verdict with every occurrence of `key` in its human texts masked.
    fn redacted(self, key: &str) -> Self {
        self.map_texts(|text| crate::redact::mask(text, key))
    }

    fn map_texts(self, f: impl Fn(&str) -> String) -> Self {
        Verdict { message: f(&self.message), hint: self.hint.as_deref().map(&f), ..self }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkFailure {
    Timeout,
    Connect,
    Other,
}

/// No response at all (timeout, connection refused/reset, TLS, DNS): always transient; reason "timeout" / "connect" / "network".
///
/// `detail` (the client's error) is quoted as given: redact it first.
pub fn network(failure: NetworkFailure, detail: &str) -> Verdict {
    let (reason, what) = match failure {
        NetworkFailure::Timeout => (TransientReason::Timeout, "the request timed out"),
        NetworkFailure::Connect => (TransientReason::Connect, "indexq could not connect"),
        NetworkFailure::Other => (TransientReason::Network, "the request failed"),
    };
    let detail = excerpt(detail);
    let detail = if detail.is_empty() { String::new() } else { format!(" ({detail})") };
    Verdict::new(reason, format!("No response: {what}{detail}. indexq retries with backoff."))
}

/// An instant as the engines write it in their reports: RFC 3339 (Search
/// Console, with or without fractions), a date alone (`yyyy-mm-dd`, the
/// start of that day in UTC), or WCF's JSON date `/Date(ms)/` or
/// `/Date(ms+zzzz)/` (Bing: milliseconds since the epoch, the offset only
/// telling the writer's zone). `None` for anything else, and for
/// Microsoft's "never" dates ([`never_before`]).
pub fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    parse_any_time(text.trim()).filter(|t| *t >= never_before())
}

/// Microsoft's APIs write "never" as a date: .NET's `DateTime.MinValue`
/// (0001-01-01) or the Windows FILETIME epoch (1601-01-01). No engine
/// reports a real event that old, so anything before the day after the
/// FILETIME epoch (with room for a timezone offset) reads as no date.
fn never_before() -> DateTime<Utc> {
    DateTime::from_timestamp(-11_644_473_600 + 86_400, 0).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

fn parse_any_time(text: &str) -> Option<DateTime<Utc>> {
    if let Some(inner) = text.strip_prefix("/Date(").and_then(|t| t.strip_suffix(")/")) {
        let end = inner.char_indices().skip(1).find(|(_, c)| *c == '+' || *c == '-').map_or(inner.len(), |(i, _)| i);
        return inner[..end].parse::<i64>().ok().and_then(DateTime::from_timestamp_millis);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)).map(|t| t.and_utc())
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

/// "IndexNow answered HTTP 403 Forbidden (response: ...)", the body with `key` masked.
fn answered(engine: EngineKind, resp: &Response, key: &str) -> String {
    let body = excerpt(&crate::redact::mask(resp.body, key));
    let status = http_status(resp.status);
    if body.is_empty() {
        format!("{} answered {status}", engine.title())
    } else {
        format!("{} answered {status} (response: {body})", engine.title())
    }
}

/// A 2xx whose body is not the engine's own (`other`: what such a body is,
/// for one that is neither empty nor HTML):
/// `accepted` with the reason `unrecognized_body`. The engine may well have
/// taken the request, but what answered may be a proxy or a captive portal
/// (an HTML page), or the answer was cut off (an empty or truncated body):
/// the message says which, and the caller keeps the body.
fn unrecognized_body(engine: EngineKind, resp: &Response, key: &str, other: &str) -> Verdict {
    let body = excerpt(&crate::redact::mask(resp.body, key));
    let trimmed = resp.body.trim_start().to_ascii_lowercase();
    let what = if body.is_empty() {
        "an empty body".to_string()
    } else if trimmed.starts_with("<!doctype") || trimmed.starts_with("<html") || trimmed.contains("<body") {
        format!("an HTML page ({body})")
    } else {
        format!("{other} ({body})")
    };
    Verdict::new(
        AcceptedReason::UnrecognizedBody,
        format!(
            "{} answered {} with {what}: counted as accepted, but the answer may not come from {} (a proxy, \
             a captive portal) or was cut off; `indexq log` shows it, and `--force` sends the URLs \
             again within the dedupe window.",
            engine.title(),
            http_status(resp.status),
            engine.title()
        ),
    )
}

/// The server failed: `transient`, with the server's `Retry-After` if any.
fn transient(engine: EngineKind, resp: &Response, key: &str, reason: TransientReason, what: &str) -> Verdict {
    transient_answered(resp, &answered(engine, resp, key), reason, what)
}

/// [`transient`] with a prefix of the caller's making.
fn transient_answered(resp: &Response, answered: &str, reason: TransientReason, what: &str) -> Verdict {
    let retry_after = resp.retry_after();
    let when = retry_after.map_or_else(|| "with backoff".to_string(), |r| r.to_string());
    Verdict { retry_after, ..Verdict::new(reason, format!("{answered}: {what}. indexq retries {when}.")) }
}

/// "HTTP 503 Service Unavailable", or "HTTP 599" for a status without a
/// standard reason phrase.
fn http_status(status: u16) -> String {
    match http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()) {
        Some(reason) => format!("HTTP {status} {reason}"),
        None => format!("HTTP {status}"),
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use crate::model::Class;
    use chrono::TimeZone;
    use serde::Deserialize;
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    // ---- fixtures ---------------------------------------------------------

    /// The fixtures of the repository: required.
    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/rejections");
    /// A shared collection beside the repository: read too when it exists.
    const SHARED_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures/rejections");
    /// The IndexNow fixtures of the repository (at least).
    const MIN_INDEXNOW_FIXTURES: usize = 12;

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
        /// The reason expected too, where the fixture names one.
        reason: Option<String>,
        retry: Option<String>,
        /// "token": the answer came from the OAuth2 token endpoint;
        /// "inspection": from the URL Inspection API.
        phase: Option<String>,
    }

    #[derive(Debug, Clone, Deserialize)]
    struct FixtureKeyFile {
        status: u16,
        #[serde(default)]
        body: String,
    }

    /// The `*.json` fixtures of one directory, sorted by path.
    fn fixtures_in(dir: &Path) -> Vec<(PathBuf, Fixture)> {
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read fixture directory {}: {e}", dir.display()));
        let mut paths: Vec<PathBuf> = entries
            .map(|entry| entry.expect("read fixture directory entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        paths.sort();
        paths
            .into_iter()
            .map(|path| {
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
                let fixture: Fixture =
                    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()));
                (path, fixture)
            })
            .collect()
    }

    /// Every fixture of the shared collection when it is there, then those of
    /// the repository (a missing directory fails the test) whose id it lacks:
    /// on an id in both the shared copy wins, as in `tests/it/google.rs`.
    fn load_fixtures() -> BTreeMap<String, (PathBuf, Fixture)> {
        let mut fixtures = BTreeMap::new();
        let shared = Path::new(SHARED_FIXTURES);
        let shared = if shared.is_dir() { fixtures_in(shared) } else { Vec::new() };
        let repository = fixtures_in(Path::new(FIXTURES));
        for (path, fixture) in shared.into_iter().chain(repository) {
            fixtures.entry(fixture.id.clone()).or_insert((path, fixture));
        }
        fixtures
    }

    /// "120 s" → 120; other forms ("next midnight ...") are not checked here.
    fn retry_seconds(retry: &str) -> Option<u64> {
        retry.strip_suffix(" s")?.trim().parse().ok()
    }

    fn classify_fixture(engine: EngineKind, fixture: &Fixture) -> Verdict {
        let headers: Vec<(String, String)> = fixture.headers.iter().map(|(n, v)| (n.clone(), v.clone())).collect();
        let resp = Response { status: fixture.status, headers: &headers, body: &fixture.body };
        match engine {
            EngineKind::IndexNow => {
                let check = fixture.key_file.as_ref().map(|kf| fetched(kf.status, &kf.body));
                let location = location();
                indexnow(&resp, &IndexNowContext { key: KEY, key_location: &location, key_file: check.as_ref() })
            }
            EngineKind::Bing if fixture.phase.as_deref() == Some("feed") => bing_feed(&resp, &BING_CTX, BING_FEED),
            EngineKind::Bing if fixture.phase.as_deref() == Some("report") => {
                report_verdict(bing_feeds(&resp, &BING_CTX, BING_FEED))
            }
            EngineKind::Bing => bing(&resp, &BING_CTX),
            EngineKind::Google if fixture.phase.as_deref() == Some("sitemaps") => {
                search_console_submit(&resp, &SITEMAPS_CTX)
            }
            EngineKind::Google if fixture.phase.as_deref() == Some("report") => {
                report_verdict(search_console_report(&resp, &SITEMAPS_CTX))
            }
            EngineKind::Google if fixture.phase.as_deref() == Some("token") => google_token(&resp, &GOOGLE_TOKEN_CTX),
            EngineKind::Google if fixture.phase.as_deref() == Some("inspection") => {
                google_inspection(&resp, &INSPECTION_CTX)
            }
            EngineKind::Google => google(&resp, &GOOGLE_CTX),
            EngineKind::Baidu => baidu_fixture(&resp),
            EngineKind::Yandex if fixture.phase.as_deref() == Some("quota") => yandex_quota(&resp, &YANDEX_CTX)
                .map_or_else(|v| v, |q| Verdict::new(AcceptedReason::Ok, format!("{q:?}"))),
            EngineKind::Yandex => yandex(&resp, &YANDEX_CTX),
        }
    }

    /// A push's verdict, or, when the push was taken but some URLs were
    /// not, the first of theirs: what a fixture of a listed URL expects.
    fn baidu_fixture(resp: &Response) -> Verdict {
        let whole = baidu(resp, &BAIDU_CTX);
        baidu_refused(resp, &BAIDU_CTX).into_iter().next().map_or(whole, |(_, v)| v)
    }

    /// A report read (`accepted`, `ok`), or the verdict on what kept it
    /// from being read.
    fn report_verdict(read: Result<crate::model::SitemapReading, Verdict>) -> Verdict {
        read.map_or_else(|v| v, |r| Verdict::new(AcceptedReason::Ok, format!("read: {r:?}")))
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
            let verdict = classify_fixture(engine, fixture);
            *classified.entry(engine).or_default() += 1;
            eprintln!(
                "{id}: {} {} retry={:?} — {}",
                verdict.class(),
                verdict.reason,
                verdict.retry_after,
                verdict.message
            );
            assert_no_secret(&verdict, KEY, id);
            match fixture.expect.parse::<Class>() {
                Ok(expect) if expect == verdict.class() => {}
                Ok(expect) => failures.push(format!(
                    "{id}: expected {expect}, got {} ({}): {}",
                    verdict.class(),
                    verdict.reason,
                    verdict.message
                )),
                Err(e) => failures.push(format!("{id}: {e}")),
            }
            if let Some(reason) = fixture.reason.as_deref().filter(|r| *r != verdict.reason.to_string()) {
                failures.push(format!("{id}: expected the reason {reason}, got {}", verdict.reason));
            }
            if let Some(secs) = fixture.retry.as_deref().and_then(retry_seconds) {
                if verdict.retry_after != Some(RetryAfter::Seconds(secs)) {
                    failures.push(format!("{id}: expected retry after {secs} s, got {:?}", verdict.retry_after));
                }
            }
            // Bing's partial remainder (issue 26): what is left is read, and no wait.
            let partial = [
                ("bing-400-quota-remaining-partial-today", Period::Day, 10),
                ("bing-400-quota-remaining-partial-month", Period::Month, 5),
            ];
            if let Some((_, period, left)) = partial.iter().find(|(p, _, _)| p == id) {
                let reason = verdict.reason.to_string();
                let got = (reason.as_str(), verdict.reported, verdict.retry_after);
                if got != ("partial_quota", Some((*period, *left)), None) {
                    failures
                        .push(format!("{id}: expected partial_quota with {left} left of the {period}, got {got:?}"));
                }
            }
            if id == "google-429-per-day" {
                let reason = verdict.reason.to_string();
                let got = (reason.as_str(), verdict.quota_window, verdict.retry_after);
                if got != ("daily_quota", Period::Day, None) {
                    failures.push(format!("{id}: expected daily_quota for the day window, got {got:?}"));
                }
            }
        }
        eprintln!("classified: {classified:?}");
        let indexnow_count = classified.get(&EngineKind::IndexNow).copied().unwrap_or(0);
        assert!(
            indexnow_count >= MIN_INDEXNOW_FIXTURES,
            "found {indexnow_count} IndexNow fixtures in {FIXTURES} and {SHARED_FIXTURES}, \
             expected at least {MIN_INDEXNOW_FIXTURES}"
        );
        // Every engine's answers are held to their fixtures: a new engine's
        // fixtures are loaded like the rest (issue 47: Baidu, Yandex).
        for engine in EngineKind::ALL {
            assert!(classified.get(&engine).is_some_and(|n| *n >= 3), "too few {engine} fixtures: {classified:?}");
        }
        assert!(failures.is_empty(), "fixtures failed:\n{}", failures.join("\n"));
    }

    // ---- Retry-After, network, excerpt, status line -----------------------

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
    fn engine_times_are_read() {
        let ms = |t: &str| parse_time(t).map(|t| t.timestamp_millis());
        assert_eq!(ms("/Date(1315781995040-0700)/"), Some(1_315_781_995_040));
        assert_eq!(ms("/Date(1315781995040+0100)/"), Some(1_315_781_995_040));
        assert_eq!(ms("/Date(1315781995040)/"), Some(1_315_781_995_040));
        assert_eq!(ms("/Date(-1000)/"), Some(-1000));
        assert_eq!(ms("2026-12-01T10:00:05.123Z"), Some(1_796_119_205_123));
        assert_eq!(ms("2026-12-01T11:00:05+01:00"), Some(1_796_119_205_000));
        assert_eq!(ms("2026-12-01"), Some(1_796_083_200_000));
        for bad in ["", "yesterday", "/Date(x)/", "2026-13-01"] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
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
            assert_eq!((v.class(), v.reason.to_string().as_str()), (Class::Transient, reason));
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

    #[test]
    fn status_lines_name_the_reason_phrase() {
        #[rustfmt::skip]
        let table = [
            (200, "HTTP 200 OK"),
            (202, "HTTP 202 Accepted"),
            (301, "HTTP 301 Moved Permanently"),
            (403, "HTTP 403 Forbidden"),
            (408, "HTTP 408 Request Timeout"),
            (413, "HTTP 413 Payload Too Large"),
            (422, "HTTP 422 Unprocessable Entity"),
            (429, "HTTP 429 Too Many Requests"),
            (503, "HTTP 503 Service Unavailable"),
            (599, "HTTP 599"),
            (600, "HTTP 600"),
            (1000, "HTTP 1000"),
            (0, "HTTP 0"),
        ];
        for (status, line) in table {
            assert_eq!(http_status(status), line);
        }
    }
}
