//! A 403 from IndexNow is never guessed: indexq fetches the key file and
//! decides between `key_pending` (retry) and `misconfigured` (park).

use crate::support::mock::MockResponse;
use crate::support::*;

const NOW: &str = "2026-12-03T09:00:00Z";

fn forbidden() -> MockResponse {
    MockResponse::status(403).json(r#"{"errorCode":"SiteVerificationNotCompleted"}"#)
}

#[test]
fn key_pending_then_accepted_within_max_wait() {
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![forbidden(), MockResponse::status(200)]);
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", "--max-wait", "20s", list.to_str().unwrap()]).now(NOW).output().code(0);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "accepted", "{r}");
    assert_eq!(r["attempts"], 2);
    assert_eq!(sb.engine.requests().len(), 2);
    assert_eq!(sb.site.requests_to("GET", &format!("/{KEY}.txt")).len(), 1, "the key file was checked once");
    // The log keeps both attempts, with the engine's body.
    let log = sb.indexq(&["--json", "log", "--url", &sb.url("/a")]).now(NOW).output().code(0).log_doc();
    let attempts = &log.attempts;
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0].outcome, json::Class::KeyPending);
    assert_eq!(attempts[0].http_status, Some(403));
    assert!(attempts[0].body.as_deref().unwrap().contains("SiteVerificationNotCompleted"));
    assert_eq!(attempts[1].outcome, json::Class::Accepted);
}

#[test]
fn key_pending_is_queued_with_its_retry_when_max_wait_is_over() {
    let mut sb = Sandbox::new();
    sb.extra = "[retry]\nkey_pending_first = \"60s\"\n".into();
    sb.write_config();
    sb.engine.on("POST", ENDPOINT_PATH, vec![forbidden()]);
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0", list.to_str().unwrap()]).now(NOW).output().code(0);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "key_pending");
    assert_eq!(r["http_status"], 403);
    assert_eq!(r["retry_after_secs"], 60);
    assert_eq!(r["retry_at"], "2026-12-03T09:01:00+00:00");
    // The second key_pending doubles the wait.
    let doc = sb.indexq(&["--json", "submit", "--max-wait", "0"]).now("2026-12-03T09:01:00Z").output().code(0).json();
    assert_eq!(result_for(&results(&doc), &sb.url("/a"))["retry_after_secs"], 120);
    // A day after the key's first use, indexq stops and says so.
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0"]).now("2026-12-04T09:00:00Z").output().code(3);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "misconfigured");
    assert_eq!(r["reason"], "key_never_accepted");
    assert!(r["hint"].as_str().unwrap().contains("key"));
}

fn parks_with(key_file: MockResponse, reason: &str) {
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![forbidden()]);
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![key_file]);
    let list = sb.urls("urls.txt", &["/a", "/b"]);
    let done = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(3);
    let doc = done.json();
    let r = result_for(&results(&doc), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "misconfigured");
    assert_eq!(r["reason"], reason);
    assert!(r.get("retry_at").is_none(), "parked items have no retry time");
    assert!(r["hint"].is_string());
    assert!(!done.stdout.contains(KEY), "the key never appears in output");
    assert_eq!(count(&doc, "misconfigured"), 2);
    let parked = done.submit_doc().parked.expect("what is parked");
    assert_eq!((parked[0].reason.as_str(), parked[0].urls, parked[0].told), (reason, 2, true));
    assert!(parked[0].checked_by_itself, "the key file is checked on every run");

    // Said again only when its reminder is due: not five minutes later, with the same input...
    let again = sb.indexq(&["submit", list.to_str().unwrap()]).now("2026-12-03T09:05:00Z").output().code(0);
    assert!(!again.stdout.contains("parked"), "{}", again.stdout);
    // ...but after a day, with what to do; not retried (the key file still fails its check).
    let human = sb.indexq(&["-q", "submit"]).now("2026-12-05T09:00:00Z").output().code(3);
    assert!(human.stdout.contains("needs a human: "), "{}", human.stdout);
    assert!(human.stdout.contains(&format!("2 URLs parked since 2026-12-03 09:00 UTC ({reason})")), "{}", human.stdout);
    assert!(human.stdout.contains("Fix: "), "{}", human.stdout);
    assert!(human.stdout.contains("indexq checks the key file on every run"), "{}", human.stdout);
    assert_eq!(sb.engine.requests().len(), 1);
    let queue = sb.indexq(&["--json", "queue", "list"]).now(NOW).output().code(0).queue_doc();
    assert_eq!(queue.items.len(), 2);
    assert!(queue.items.iter().all(|i| i.state == json::ItemState::Parked));

    // `queue retry` makes them due; fixed, they are accepted.
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let retried = sb.indexq(&["--json", "queue", "retry"]).now("2026-12-05T09:00:00Z").output().code(0);
    assert_eq!(retried.queue_retry_doc().retried, 2);
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-05T09:00:00Z").output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 2);
}

#[test]
fn key_file_missing_parks() {
    parks_with(MockResponse::status(404).body("<html><body>Not Found</body></html>"), "key_file_missing");
}

#[test]
fn key_file_with_other_content_parks() {
    parks_with(MockResponse::status(200).body("some-other-key-0000"), "key_file_wrong");
}

#[test]
fn key_file_wrapped_in_html_parks() {
    parks_with(MockResponse::status(200).body(&format!("<html><body>{KEY}</body></html>")), "key_file_html");
}

#[test]
fn a_config_change_unparks() {
    let mut sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![forbidden()]);
    sb.site.on("GET", "/wrong.txt", vec![MockResponse::status(404)]);
    sb.indexnow_extra = String::new();
    // First with a key_location that 404s.
    let good = sb.key_location();
    let text =
        std::fs::read_to_string(sb.write_config()).unwrap().replace(&good, &format!("{}/wrong.txt", sb.site.url()));
    std::fs::write(sb.config_path(), text).unwrap();
    let list = sb.urls("urls.txt", &["/a"]);
    sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(3);
    // Fix the config: the parked item is retried by the next plain run.
    sb.write_config();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T09:10:00Z").output().code(0).json();
    assert_eq!(result_for(&results(&doc), &sb.url("/a"))["outcome"], "accepted");
    sb.indexnow_extra.clear();
}

#[test]
fn an_accepted_key_that_is_later_refused_gets_a_fresh_day() {
    let mut sb = Sandbox::new();
    sb.extra = "[retry]\nkey_pending_first = \"60s\"\n".into();
    sb.write_config();
    let first = sb.urls("first.txt", &["/a"]);
    sb.indexq(&["--json", "submit", first.to_str().unwrap()]).now(NOW).output().code(0);
    // A week later the engine refuses the (still correctly served) key.
    sb.engine.on("POST", ENDPOINT_PATH, vec![forbidden()]);
    let second = sb.urls("second.txt", &["/b"]);
    let done = sb
        .indexq(&["--json", "submit", "--max-wait", "0", second.to_str().unwrap()])
        .now("2026-12-10T09:00:00Z")
        .output();
    let r = result_for(&results(&done.code(0).json()), &sb.url("/b")).clone();
    assert_eq!(r["outcome"], "key_pending", "the 24 h count starts again after an acceptance: {r}");
    assert_eq!(r["retry_after_secs"], 60);
}

#[test]
fn a_wait_within_max_wait_says_what_it_waits_for() {
    let mut sb = Sandbox::new();
    sb.extra = "[retry]\nkey_pending_first = \"2s\"\n".into();
    sb.write_config();
    sb.engine.on("POST", ENDPOINT_PATH, vec![forbidden(), MockResponse::status(200)]);
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", "--max-wait", "20s", list.to_str().unwrap()]).now(NOW).output().code(0);
    assert!(done.stderr.contains("waiting for IndexNow") && done.stderr.contains("(key_pending)"), "{}", done.stderr);
    assert!(done.stdout.contains("1 URL accepted"), "{}", done.stdout);
}
