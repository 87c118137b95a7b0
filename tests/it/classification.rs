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

#[test]
fn an_indexnow_400_that_names_key_location_is_key_location_invalid_with_its_own_fix() {
    let sb = Sandbox::new();
    // As Bing sends it (fixture indexnow-400-key-location-invalid).
    let body = r#"{"errorCode":"InvalidRequestParameters","message":"Invalid request","details":[{"target":"keyLocation","message":"Keylocation url is invalid."}]}"#;
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(400).json(body)]);
    let urls = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!(
        (r["outcome"].as_str(), r["reason"].as_str()),
        (Some("misconfigured"), Some("key_location_invalid")),
        "{r}"
    );
    let message = r["message"].as_str().unwrap();
    assert!(message.contains("refused the key location") && message.contains("Keylocation url is invalid"), "{r}");
    let hint = r["hint"].as_str().unwrap();
    assert!(hint.contains("`key_location`") && hint.contains("indexq doctor"), "{r}");
    // A 400 that names something else keeps the generic reason.
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(400).json(r#"{"errorCode":"InvalidRequestParameters","message":"Invalid request","details":[{"target":"urlList","message":"Invalid url"}]}"#)]);
    let urls = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    assert_eq!(result_for(&results(&done.json()), &sb.url("/a"))["reason"], "bad_request");
}

/// A captive portal's page, answered with 200 in the engine's place
/// (fixtures indexnow-200-html-portal, bing-200-html-proxy).
const PORTAL: &str =
    "<!DOCTYPE html><html><head><title>Network login</title></head><body>Sign in to use this network</body></html>";

#[test]
fn a_200_whose_body_is_not_indexnows_is_accepted_as_unrecognized_body_noted_once_and_logged() {
    let sb = Sandbox::new();
    sb.engine.on(
        "POST",
        ENDPOINT_PATH,
        vec![MockResponse::status(200).header("Content-Type", "text/html").body(PORTAL)],
    );
    let urls = sb.urls("urls.txt", &["/a", "/b"]);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0);
    let doc = done.submit_doc();
    for path in ["/a", "/b"] {
        let r = doc.result_for(&sb.url(path));
        assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Accepted, "unrecognized_body"), "{r:?}");
        assert!(r.message.contains("with an HTML page"), "{r:?}");
    }
    let notes = doc.notes.expect("a note");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("2 URLs were counted as accepted although the answer was not the engine's own"),
        "{notes:?}"
    );
    // `log` keeps the body and the reason.
    let log = sb.indexq(&["--json", "log", "--url", &sb.url("/a")]).now(NOW).output().code(0).log_doc();
    assert_eq!(log.attempts[0].reason, "unrecognized_body");
    assert!(log.attempts[0].body.as_deref().is_some_and(|b| b.contains("Sign in to use this network")), "{log:?}");
    // Said once in the human report, not with -q (nothing for a human to do).
    let human = sb.indexq(&["submit", "--force", urls.to_str().unwrap()]).now(NOW).output().code(0);
    assert_eq!(human.stdout.matches("note: 2 URLs were counted as accepted").count(), 1, "{}", human.stdout);
    assert!(
        human.stdout.contains("for site: 2 URLs accepted, the answer not IndexNow's own (unrecognized_body)."),
        "{}",
        human.stdout
    );
    let quiet = sb.indexq(&["-q", "submit", "--force", urls.to_str().unwrap()]).now(NOW).output().code(0);
    assert!(quiet.stdout.is_empty(), "{}", quiet.stdout);
    // An empty body, or JSON, is IndexNow's own.
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).json(r#"{"success":true}"#)]);
    let doc =
        sb.indexq(&["--json", "submit", "--force", urls.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    assert!(doc.notes.is_none() && doc.results.iter().all(|r| r.reason == "ok"), "{doc:#?}");
}

#[test]
fn a_200_from_bing_or_google_that_is_not_their_json_is_unrecognized_body() {
    let sb = Sandbox::bing("");
    sb.engine.on("POST", BING_SUBMIT, vec![MockResponse::status(200).header("Content-Type", "text/html").body(PORTAL)]);
    let urls = sb.urls("urls.txt", &["/a"]);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    let r = doc.result_for(&sb.url("/a"));
    assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Accepted, "unrecognized_body"), "{r:?}");
    assert!(doc.notes.is_some_and(|n| n[0].starts_with("1 URL was counted as accepted")));

    // Google: an empty body (fixture google-200-empty), and a cut-off one.
    for answer in [MockResponse::status(200), MockResponse::status(200).json(r#"{"urlNotificationMetadata": {"url""#)] {
        let sb = Sandbox::google("");
        sb.engine.on("POST", GOOGLE_PUBLISH, vec![answer]);
        let urls = sb.urls("urls.txt", &["/a"]);
        let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
        let r = doc.result_for(&sb.url("/a"));
        assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Accepted, "unrecognized_body"), "{r:?}");
        assert_eq!(doc.notes.map(|n| n.len()), Some(1));
    }
}
