//! Google's answers, table by table: publishes, inspections and Search
//! Console's sitemaps, with their messages and hints.

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
    let per_day_message = "Quota exceeded for quota metric 'Publish requests' and limit 'Publish requests per day' \
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
        &rpc(403, "PERMISSION_DENIED", "Indexing API has not been used in project 12 before or it is disabled.", ""),
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
    let read = |status: u16, body: &str| search_console_report(&Response { status, headers: &[], body }, &SITEMAPS_CTX);
    let resource = r#"{"path":"https://example.com/sitemap.xml","lastSubmitted":"2026-12-01T10:00:00.000Z","isPending":true,"isSitemapsIndex":false,"type":"sitemap","lastDownloaded":"2026-12-01T10:00:05.123Z","warnings":"1","errors":2,"contents":[{"type":"web","submitted":"12","indexed":"0"},{"type":"image","submitted":"3"}]}"#;
    let r = read(200, resource).unwrap();
    assert_eq!(
        (r.listed, r.pending, r.errors, r.warnings, r.urls, r.status.as_deref()),
        (true, true, 2, 1, Some(12), Some("sitemap"))
    );
    // Pages are the `web` entries only: 12 pages and 30 images read as 12.
    let pages_and_images = r#"{"path":"https://example.com/sitemap.xml","contents":[{"type":"web","submitted":"12"},{"type":"image","submitted":"30"}]}"#;
    assert_eq!(read(200, pages_and_images).unwrap().urls, Some(12));
    let images_only = r#"{"path":"https://example.com/sitemap.xml","contents":[{"type":"image","submitted":"30"}]}"#;
    assert_eq!(read(200, images_only).unwrap().urls, None, "no page count without a `web` entry");
    assert_eq!(r.submitted.unwrap().to_rfc3339(), "2026-12-01T10:00:00+00:00");
    assert_eq!(r.downloaded.unwrap().timestamp_millis() % 1000, 123);
    let r = read(200, r#"{"path":"https://example.com/sitemap.xml","lastSubmitted":"2026-12-01","isPending":true}"#)
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
