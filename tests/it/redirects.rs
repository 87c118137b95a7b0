//! Redirects: a key file is read where it is (no redirect is followed,
//! so none can lead from https to plain http); a sitemap fetch follows up
//! to 5 redirects but never one from https to http (the tests in
//! `src/ingest/sitemap/tests/` check that against a TLS server, which the
//! binary cannot be made to trust).

use crate::support::mock::MockResponse;
use crate::support::*;

const NOW: &str = "2026-12-03T09:00:00Z";

fn forbidden() -> MockResponse {
    MockResponse::status(403).json(r#"{"errorCode":"SiteVerificationNotCompleted"}"#)
}

#[test]
fn a_key_file_that_redirects_is_not_followed_and_says_the_redirect_was_refused() {
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![forbidden()]);
    // Followed, the redirect would find the key; a downgrade elsewhere would find anything.
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![MockResponse::status(301).header("Location", "/moved.txt")]);
    sb.site.on("GET", "/moved.txt", vec![MockResponse::status(200).body(KEY)]);
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(3);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!((r["outcome"].as_str(), r["reason"].as_str()), (Some("misconfigured"), Some("key_file_status")), "{r}");
    let message = r["message"].as_str().unwrap();
    assert!(message.contains("HTTP 301") && message.contains("refused to follow"), "{message}");
    assert!(r["hint"].as_str().unwrap().contains("https:// URL it redirects to"), "{r}");
    assert!(sb.site.requests_to("GET", "/moved.txt").is_empty(), "the redirect was not followed");

    // `doctor` says the same, spending nothing.
    let doc = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(3).json();
    let text = doc.to_string();
    assert!(text.contains("refused to follow"), "{text}");
    assert!(sb.site.requests_to("GET", "/moved.txt").is_empty());
}
