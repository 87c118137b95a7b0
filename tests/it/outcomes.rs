//! What each kind of answer becomes: accepted, quota, transient — with the
//! request indexq sent and the retry it scheduled.

use crate::support::mock::MockResponse;
use crate::support::*;

const NOW: &str = "2026-12-03T09:00:00Z";

#[test]
fn accepted_200_sends_one_post_with_the_indexnow_body() {
    let sb = Sandbox::new();
    let list = sb.urls("urls.txt", &["/a", "/b"]);
    let done = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(0);
    let doc = done.json();
    let results = results(&doc);
    assert_eq!(count(&doc, "accepted"), 2);
    let a = result_for(&results, &sb.url("/a"));
    assert_eq!(a["outcome"], "accepted");
    assert_eq!(a["reason"], "ok");
    assert_eq!(a["http_status"], 200);
    assert_eq!(a["attempts"], 1);
    assert_eq!(a["property"], "site");
    assert_eq!(a["engine"], "indexnow");
    assert!(a.get("retry_at").is_none());
    assert_eq!(doc["now"], "2026-12-03T09:00:00+00:00");

    let posts = sb.engine.requests_to("POST", ENDPOINT_PATH);
    assert_eq!(posts.len(), 1, "one POST per host and endpoint");
    let req = &posts[0];
    assert_eq!(req.header("content-type"), Some("application/json; charset=utf-8"));
    let body = req.json();
    assert_eq!(body["host"], "127.0.0.1");
    assert_eq!(body["key"], KEY);
    assert_eq!(body["keyLocation"], sb.key_location());
    assert_eq!(body["urlList"], serde_json::json!([sb.url("/a"), sb.url("/b")]));
    // No key-file check on an acceptance.
    assert!(sb.site.requests().is_empty());
}

#[test]
fn accepted_202_is_key_validation_pending_and_not_resent_within_the_dedupe_window() {
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(202)]);
    let list = sb.urls("urls.txt", &["/a"]);
    let doc = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(0).json();
    let r = result_for(&results(&doc), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "accepted");
    assert_eq!(r["reason"], "key_validation_pending");
    assert_eq!(r["http_status"], 202);

    // Same URL an hour later: skipped, nothing sent.
    let doc =
        sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now("2026-12-03T10:00:00Z").output().code(0).json();
    assert_eq!(result_for(&results(&doc), &sb.url("/a"))["outcome"], "skipped");
    assert_eq!(sb.engine.requests().len(), 1);
    // --force resubmits.
    let doc = sb
        .indexq(&["--json", "submit", "--force", list.to_str().unwrap()])
        .now("2026-12-03T10:00:00Z")
        .output()
        .code(0)
        .json();
    assert_eq!(result_for(&results(&doc), &sb.url("/a"))["outcome"], "accepted");
    assert_eq!(sb.engine.requests().len(), 2);
    // After the dedupe window (24 h) it goes again without --force.
    let doc =
        sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now("2026-12-04T10:00:01Z").output().code(0).json();
    assert_eq!(result_for(&results(&doc), &sb.url("/a"))["outcome"], "accepted");
    assert_eq!(sb.engine.requests().len(), 3);
}

#[test]
fn rate_limited_429_with_retry_after_waits_that_long() {
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(429).header("Retry-After", "600")]);
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0", list.to_str().unwrap()]).now(NOW).output().code(0);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "quota");
    assert_eq!(r["http_status"], 429);
    assert_eq!(r["retry_at"], "2026-12-03T09:10:00+00:00");
    assert_eq!(r["retry_after_secs"], 600);

    // Within those 10 minutes nothing is sent, even for a new URL of the same property.
    let more = sb.urls("more.txt", &["/b"]);
    let doc =
        sb.indexq(&["--json", "submit", more.to_str().unwrap()]).now("2026-12-03T09:05:00Z").output().code(0).json();
    let b = result_for(&results(&doc), &sb.url("/b")).clone();
    assert_eq!(b["outcome"], "deferred");
    assert_eq!(b["retry_at"], "2026-12-03T09:10:00+00:00");
    assert_eq!(sb.engine.requests().len(), 1);

    // After it, both go.
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T09:10:01Z").output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 2);
}

#[test]
fn rate_limited_429_without_retry_after_waits_for_the_next_window() {
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(429)]);
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(0);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "quota");
    // IndexNow's quota day is UTC unless configured.
    assert_eq!(r["retry_at"], "2026-12-04T00:00:00+00:00");
    assert_eq!(r["retry_after_secs"], 15 * 3600);
    // Human text: a quota is never a failure, and names the timezone.
    let done = sb
        .indexq(&["submit", list.to_str().unwrap()])
        .now("2026-12-03T09:30:00Z")
        .env("TZ", "Asia/Tokyo")
        .output()
        .code(0);
    assert!(!done.stdout.contains("error"), "{}", done.stdout);
    assert!(done.stdout.contains("2026-12-04 00:00 UTC"), "{}", done.stdout);
    assert!(done.stdout.contains("in your timezone, +09:00"), "{}", done.stdout);
}

#[test]
fn server_error_503_with_retry_after_is_transient() {
    let sb = Sandbox::new();
    sb.engine.on(
        "POST",
        ENDPOINT_PATH,
        vec![MockResponse::status(503)
            .header("Retry-After", "120")
            .body("<html><body><h1>503 Service Unavailable</h1></body></html>")],
    );
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0", list.to_str().unwrap()]).now(NOW).output().code(0);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "transient");
    assert_eq!(r["http_status"], 503);
    assert_eq!(r["retry_after_secs"], 120);
    assert_eq!(r["retry_at"], "2026-12-03T09:02:00+00:00");
}

#[test]
fn server_error_then_success_within_max_wait_is_accepted_in_the_same_run() {
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(500), MockResponse::status(200)]);
    let list = sb.urls("urls.txt", &["/a"]);
    let mut sb = sb;
    sb.extra.push_str("[retry]\n");
    sb.extra = "[retry]\ntransient_first = \"1s\"\n\n[http]\ntimeout = \"3s\"\n".into();
    sb.write_config();
    let done = sb.indexq(&["--json", "submit", "--max-wait", "10s", list.to_str().unwrap()]).now(NOW).output().code(0);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "accepted");
    assert_eq!(r["attempts"], 2);
    assert_eq!(sb.engine.requests().len(), 2);
}

#[test]
fn connection_refused_is_transient_with_backoff() {
    let mut sb = Sandbox::new();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    sb.endpoints = vec![format!("http://127.0.0.1:{port}/indexnow")];
    sb.write_config();
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0", list.to_str().unwrap()]).now(NOW).output().code(0);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "transient");
    assert_eq!(r["reason"], "connect");
    assert!(r.get("http_status").is_none());
    let secs = r["retry_after_secs"].as_i64().unwrap();
    assert!((1..=30).contains(&secs), "first backoff is within 30 s: {secs}");
    // The request never reached the engine: its budget is given back.
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).json();
    assert_eq!(status["budgets"][0]["used"], 0);
}

#[test]
fn a_server_that_never_answers_times_out_as_transient() {
    let mut sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).hang()]);
    sb.extra = "[http]\ntimeout = \"1s\"\n".into();
    sb.write_config();
    let list = sb.urls("urls.txt", &["/a"]);
    let started = std::time::Instant::now();
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0", list.to_str().unwrap()]).now(NOW).output().code(0);
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "the run ends within its timeout");
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "transient");
    assert_eq!(r["reason"], "timeout");
    // The engine may have seen it: the budget stays spent.
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).json();
    assert_eq!(status["budgets"][0]["used"], 1);
    assert!(r["retry_after_secs"].as_i64().unwrap() >= 1);
}

#[test]
fn each_endpoint_has_its_own_state() {
    let mut sb = Sandbox::new();
    let second = crate::support::mock::MockServer::start();
    second.on("POST", "/other", vec![MockResponse::status(503)]);
    sb.endpoints.push(format!("{}/other", second.url()));
    sb.write_config();
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0", list.to_str().unwrap()]).now(NOW).output().code(0);
    let doc = done.json();
    let results = results(&doc);
    let mut outcomes: Vec<(String, String)> = results
        .iter()
        .map(|r| (r["endpoint"].as_str().unwrap().to_string(), r["outcome"].as_str().unwrap().to_string()))
        .collect();
    outcomes.sort();
    assert_eq!(outcomes.len(), 2);
    assert!(outcomes.contains(&(sb.endpoints[0].clone(), "accepted".into())));
    assert!(outcomes.contains(&(sb.endpoints[1].clone(), "transient".into())));
    // The next run retries only the endpoint that failed.
    second.on("POST", "/other", vec![MockResponse::status(200)]);
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T10:00:00Z").output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 1);
    assert_eq!(sb.engine.requests().len(), 1);
    assert_eq!(second.requests().len(), 2);
}

/// Progress appears on a terminal (a pseudo-terminal made by `script`), and
/// never in a pipe: no bar, no carriage return, no escape code.
#[test]
fn progress_only_on_a_terminal() {
    let sb = Sandbox::new();
    let names: Vec<String> = (0..1200).map(|i| format!("/p{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let list = sb.urls("urls.txt", &refs);
    let piped = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(0);
    for text in [&piped.stdout, &piped.stderr] {
        assert!(!text.contains('\r') && !text.contains('\u{1b}'), "{text:?}");
    }

    let names: Vec<String> = (0..1200).map(|i| format!("/q{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let list = sb.urls("more.txt", &refs);
    let tty = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).in_terminal();
    assert!(tty.stdout.contains("reading inputs"), "{:?}", tty.stdout);
    assert!(tty.stdout.contains('\r') || tty.stdout.contains('\u{1b}'));
}
