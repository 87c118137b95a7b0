//! Structured fields before free text, through the binary: a Bing answer is
//! read by its `ErrorCode` before its message, a Google answer by its
//! ErrorInfo reason and status before its message (`src/classify.rs` has the
//! full tables).

use crate::support::mock::MockResponse;
use crate::support::*;

const NOW: &str = "2026-12-03T09:00:00Z";

#[test]
fn a_bing_invalid_api_key_that_mentions_a_quota_is_misconfigured_not_a_quota() {
    let sb = Sandbox::bing("");
    sb.bing_quota(100, 1000);
    sb.engine.on(
        "POST",
        BING_SUBMIT,
        vec![MockResponse::status(400)
            .json(r#"{"ErrorCode":3,"Message":"ERROR!!! InvalidApiKey. Quota remaining for today: 0"}"#)],
    );
    let urls = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!((r["outcome"].as_str(), r["reason"].as_str()), (Some("misconfigured"), Some("InvalidApiKey")), "{r}");
    assert!(r.get("retry_at").is_none(), "parked, not waiting for tomorrow: {r}");
    assert!(r["hint"].as_str().unwrap().contains("API key"), "{r}");

    // The same wording under a generic code (8 InvalidParameter, fixture bing-400-quota-remaining-code8) is a quota.
    let sb = Sandbox::bing("");
    sb.bing_quota(100, 1000);
    sb.engine.on(
        "POST",
        BING_SUBMIT,
        vec![MockResponse::status(400)
            .json(r#"{"ErrorCode":8,"Message":"ERROR!!! Quota remaining for today: 0, Submitted: 100"}"#)],
    );
    let urls = sb.urls("urls.txt", &["/a"]);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let r = result_for(&results(&doc), &sb.url("/a")).clone();
    assert_eq!((r["outcome"].as_str(), r["reason"].as_str()), (Some("quota"), Some("daily_quota")), "{r}");
    assert_eq!(r["retry_at"], "2026-12-04T00:00:00+00:00");
}

#[test]
fn a_google_400_quoting_a_url_with_service_disabled_in_it_is_invalid_argument() {
    let sb = Sandbox::google("");
    let body = r#"{"error": {"code": 400, "message": "Invalid attribute. 'url' is not in standard URL format: https://example.com/docs/service_disabled", "status": "INVALID_ARGUMENT"}}"#;
    sb.engine.on("POST", GOOGLE_PUBLISH, vec![MockResponse::status(400).json(body)]);
    let urls = sb.urls("urls.txt", &["/docs/service_disabled"]);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let r = result_for(&results(&done.json()), &sb.url("/docs/service_disabled")).clone();
    assert_eq!((r["outcome"].as_str(), r["reason"].as_str()), (Some("misconfigured"), Some("invalid_argument")), "{r}");

    // SERVICE_DISABLED in error.details[].reason is the disabled API, whatever the message says.
    let sb = Sandbox::google("");
    let body = r#"{"error": {"code": 403, "message": "Permission denied.", "status": "PERMISSION_DENIED", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED", "domain": "googleapis.com", "metadata": {"service": "indexing.googleapis.com", "consumer": "projects/875626095483"}}]}}"#;
    sb.engine.on("POST", GOOGLE_PUBLISH, vec![MockResponse::status(403).json(body)]);
    let urls = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!((r["outcome"].as_str(), r["reason"].as_str()), (Some("misconfigured"), Some("api_disabled")), "{r}");
    assert!(r["hint"].as_str().unwrap().contains("indexing.googleapis.com"), "{r}");
}
