//! Yandex Webmaster's recrawl queue (issue 47): one URL a request with
//! `Authorization: OAuth`, the user and host found once a run, the quota
//! read before sending and each answer's `quota_remainder` bounding the
//! day, `QUOTA_EXCEEDED` waiting for midnight in Moscow, `INVALID_URL`
//! parking that URL alone, and `HOST_NOT_VERIFIED` and `INVALID_USER_ID`
//! with their fixes. The mock keeps Yandex's books
//! (`support::quota_engines`).

use crate::support::mock::MockResponse;
use crate::support::*;

/// 12:00 in Moscow.
const NOW: &str = "2026-12-03T09:00:00Z";

fn list(sb: &Sandbox, name: &str, n: usize) -> std::path::PathBuf {
    let names: Vec<String> = (1..=n).map(|i| format!("/{name}{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    sb.urls(&format!("{name}.txt"), &refs)
}

#[test]
fn one_url_a_request_with_the_oauth_token_to_the_host_found_by_the_site() {
    let (sb, book) = Sandbox::yandex("", 20, 20);
    let urls = list(&sb, "p", 3);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    assert_eq!(doc.with_outcome(json::Outcome::Accepted).len(), 3);
    let posts = sb.engine.requests_to("POST", &yandex_recrawl_path(&sb.site, "queue"));
    assert_eq!(posts.len(), 3, "one URL a request");
    for (i, post) in posts.iter().enumerate() {
        assert_eq!(post.json(), serde_json::json!({ "url": sb.url(&format!("/p{}", i + 1)) }));
        assert_eq!(post.header("authorization"), Some(format!("OAuth {YANDEX_TOKEN}").as_str()));
    }
    // The user and the host once, the quota once, for the run.
    assert_eq!(sb.engine.requests_to("GET", "/v4/user").len(), 1);
    assert_eq!(sb.engine.requests_to("GET", &format!("/v4/user/{YANDEX_USER}/hosts")).len(), 1);
    assert_eq!(sb.engine.requests_to("GET", &yandex_recrawl_path(&sb.site, "quota")).len(), 1);
    assert_eq!(book.left(), 17);
}

/// The quota read says 4 left: 4 go, the rest waits for midnight in
/// Moscow, and no request is refused.
#[test]
fn quota_remainder_bounds_the_day() {
    let (sb, book) = Sandbox::yandex("", 100, 4);
    let urls = list(&sb, "p", 6);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    assert_eq!(
        (doc.with_outcome(json::Outcome::Accepted).len(), doc.with_outcome(json::Outcome::Deferred).len()),
        (4, 2)
    );
    assert!(book.state().received.iter().all(|(_, ok)| *ok), "nothing sent over what was left");
    let deferred = doc.with_outcome(json::Outcome::Deferred)[0];
    assert_eq!(deferred.retry_at.as_deref(), Some("2026-12-04T00:00:00+03:00"), "Moscow's day (assumed)");
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    let reported: Vec<_> = status.budgets.iter().filter(|b| b.source == json::Source::Engine).collect();
    assert_eq!(reported.len(), 1, "{status:#?}");
    assert_eq!((reported[0].engine, reported[0].used, reported[0].remaining), (json::Engine::Yandex, 4, Some(0)));
    // The metrics and the report list the engine.
    let metrics = sb.indexq(&["status", "--format", "prometheus"]).now(NOW).output().code(0).stdout;
    assert!(
        metrics.lines().any(|l| l.contains("engine=\"yandex\"") && l.contains("yandex-reported:site:day")),
        "{metrics}"
    );
    let page = sb.indexq(&["report", "--html", "-", "--days", "2"]).now(NOW).output().code(0).stdout;
    assert!(page.contains("Yandex"), "the report names Yandex");
}

/// The quota read says some are left, the queue answers 429
/// `QUOTA_EXCEEDED`: the URL is `quota` until midnight in Moscow, the
/// others wait with it; a run a minute before sends nothing, the run at
/// midnight sends them.
#[test]
fn quota_exceeded_waits_for_midnight_in_moscow() {
    let (sb, book) = Sandbox::yandex("daily_quota = 50", 50, 50);
    let queue = yandex_recrawl_path(&sb.site, "queue");
    sb.engine.on(
        "POST",
        &queue,
        vec![MockResponse::status(429).json(r#"{"error_code":"QUOTA_EXCEEDED","error_message":"some string"}"#)],
    );
    let urls = list(&sb, "p", 3);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    let r = doc.result_for(&sb.url("/p1"));
    assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Quota, "QUOTA_EXCEEDED"), "{r:#?}");
    assert_eq!(r.retry_at.as_deref(), Some("2026-12-04T00:00:00+03:00"));
    assert_eq!(sb.engine.requests_to("POST", &queue).len(), 1, "nothing after QUOTA_EXCEEDED");

    let b = book.clone();
    sb.engine.respond_with("POST", &queue, move |r| quota_engines::yandex_answer(&b, r));
    let doc =
        sb.indexq(&["--json", "submit", "--max-wait", "0"]).now("2026-12-03T20:59:00Z").output().code(0).submit_doc();
    assert!(doc.with_outcome(json::Outcome::Accepted).is_empty(), "23:59 in Moscow is still the spent day");
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T21:00:00Z").output().code(0).submit_doc();
    assert_eq!(doc.with_outcome(json::Outcome::Accepted).len(), 3);
    assert_eq!(book.taken().len(), 3);
}

/// `INVALID_URL` parks that URL alone, with its fix.
#[test]
fn invalid_url_parks_that_url_alone() {
    let (sb, book) = Sandbox::yandex("", 20, 20);
    let b = book.clone();
    sb.engine.respond_with("POST", &yandex_recrawl_path(&sb.site, "queue"), move |r| {
        if r.json()["url"].as_str().unwrap_or_default().ends_with("/bad") {
            return MockResponse::status(400).json(r#"{"error_code":"INVALID_URL","error_message":"some string"}"#);
        }
        quota_engines::yandex_answer(&b, r)
    });
    let urls = sb.urls("urls.txt", &["/a", "/bad", "/b"]);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3).submit_doc();
    let r = doc.result_for(&sb.url("/bad"));
    assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Misconfigured, "INVALID_URL"), "{r:#?}");
    assert!(r.hint.as_deref().unwrap_or_default().contains("queue drop"), "{r:#?}");
    assert_eq!(book.taken().len(), 2);
}

/// A host the user has not verified: found so in the hosts list (nothing
/// is sent to the queue, nothing counted), or answered 404
/// `HOST_NOT_VERIFIED` for a configured `host_id`: misconfigured, the fix
/// names Yandex Webmaster's access rights. `doctor` says the same.
#[test]
fn host_not_verified_says_its_fix_and_spends_nothing() {
    let (sb, _book) = Sandbox::yandex("", 20, 20);
    let hosts = format!(
        r#"{{"hosts":[{{"host_id":"{}","ascii_host_url":"{}/","verified":false,"main_mirror":null}}]}}"#,
        yandex_host_id(&sb.site),
        sb.site.url()
    );
    sb.engine.on("GET", &format!("/v4/user/{YANDEX_USER}/hosts"), vec![MockResponse::status(200).json(&hosts)]);
    let urls = list(&sb, "p", 2);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3).submit_doc();
    let r = doc.result_for(&sb.url("/p1"));
    assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Misconfigured, "HOST_NOT_VERIFIED"), "{r:#?}");
    assert!(r.hint.as_deref().unwrap_or_default().contains("Access rights"), "{r:#?}");
    assert!(sb.engine.requests_to("POST", &yandex_recrawl_path(&sb.site, "queue")).is_empty());
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    assert!(status.budgets.iter().all(|b| b.used == 0), "nothing went: {status:#?}");
    let doctor = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(3).doctor_doc();
    let check = doctor.checks.iter().find(|c| c.check == "yandex_quota").unwrap();
    assert!(!check.ok && check.fix.as_deref().unwrap_or_default().contains("Access rights"), "{check:#?}");

    let (mut sb, _book) = Sandbox::yandex("", 20, 20);
    let host = yandex_host_id(&sb.site);
    sb.yandex = Some(format!("host_id = \"{host}\""));
    sb.write_config();
    let body = format!(r#"{{"error_code":"HOST_NOT_VERIFIED","host_id":"{host}","error_message":"some string"}}"#);
    sb.engine.on("POST", &yandex_recrawl_path(&sb.site, "queue"), vec![MockResponse::status(404).json(&body)]);
    sb.engine.on("GET", &yandex_recrawl_path(&sb.site, "quota"), vec![MockResponse::status(404).json(&body)]);
    let urls = list(&sb, "p", 1);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3).submit_doc();
    let r = doc.result_for(&sb.url("/p1"));
    assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Misconfigured, "HOST_NOT_VERIFIED"), "{r:#?}");
    assert!(
        sb.engine.requests_to("GET", &format!("/v4/user/{YANDEX_USER}/hosts")).is_empty(),
        "host_id is used as set"
    );
}

/// `INVALID_USER_ID`: the fix names the user Yandex says the token is
/// (`available_user_id`). Fixed, the parked URL is noticed by the quota
/// read (spending nothing) and sent.
#[test]
fn invalid_user_id_names_the_available_user() {
    let (sb, book) = Sandbox::yandex("", 20, 20);
    let body = r#"{"error_code":"INVALID_USER_ID","available_user_id":777,"error_message":"Invalid user id. 777 should be used."}"#;
    let queue = yandex_recrawl_path(&sb.site, "queue");
    sb.engine.on("POST", &queue, vec![MockResponse::status(403).json(body)]);
    let urls = list(&sb, "p", 1);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3).submit_doc();
    let r = doc.result_for(&sb.url("/p1"));
    assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Misconfigured, "INVALID_USER_ID"), "{r:#?}");
    assert!(r.hint.as_deref().unwrap_or_default().contains("777"), "{r:#?}");

    let b = book.clone();
    sb.engine.respond_with("POST", &queue, move |r| quota_engines::yandex_answer(&b, r));
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T10:00:00Z").output().code(0).submit_doc();
    assert_eq!(doc.with_outcome(json::Outcome::Accepted).len(), 1, "{doc:#?}");
    assert_eq!(book.taken(), [sb.url("/p1")]);
}

/// `doctor` reads the quota (spending nothing) and says what is left.
#[test]
fn doctor_reads_the_quota_and_sends_nothing() {
    let (sb, _book) = Sandbox::yandex("", 20, 12);
    let doc = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(0).doctor_doc();
    let check = doc.checks.iter().find(|c| c.check == "yandex_quota").expect("a Yandex check");
    assert!(check.ok && check.message.contains("12 of 20"), "{check:#?}");
    assert!(sb.engine.requests_to("POST", &yandex_recrawl_path(&sb.site, "queue")).is_empty());
}
