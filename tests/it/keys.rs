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

/// Bing's (and api.indexnow.org's) 403 when it will not take the key for the
/// site, as sent (fixture `indexnow-403-user-forbidden-key-ok`).
fn user_forbidden() -> MockResponse {
    MockResponse::status(403).json(
        r#"{"errorCode":"UserForbiddedToAccessSite","message":"User is unauthorized to access the site. Please verify the site using the key and try again","details":null}"#,
    )
}

#[test]
fn user_forbidden_with_an_exact_key_file_waits_a_day_then_names_its_causes_in_order() {
    let mut sb = Sandbox::new();
    sb.extra = "[retry]\nkey_pending_first = \"60s\"\n".into();
    sb.write_config();
    sb.engine.on("POST", ENDPOINT_PATH, vec![user_forbidden()]);
    let list = sb.urls("urls.txt", &["/a"]);
    // Its first day: key_pending, the errorCode read and named.
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0", list.to_str().unwrap()]).now(NOW).output().code(0);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!((r["outcome"].as_str(), r["reason"].as_str()), (Some("key_pending"), Some("key_pending")), "{r}");
    let message = r["message"].as_str().unwrap();
    assert!(message.contains("IndexNow says UserForbiddedToAccessSite although the key file"), "{message}");
    assert!(!message.contains("has not fetched it yet"), "{message}");
    let doc = sb.indexq(&["--json", "submit", "--max-wait", "0"]).now("2026-12-03T23:00:00Z").output().code(0).json();
    assert_eq!(result_for(&results(&doc), &sb.url("/a"))["outcome"], "key_pending", "still within its day");

    // A day after the key's first use: parked, the causes named in order, then the rotation.
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0"]).now("2026-12-04T09:00:00Z").output().code(3);
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_eq!((r["outcome"].as_str(), r["reason"].as_str()), (Some("misconfigured"), Some("user_forbidden")), "{r}");
    let message = r["message"].as_str().unwrap();
    assert!(
        message.contains("the site not verified in Bing Webmaster Tools, the key first used for another host"),
        "{message}"
    );
    let hint = r["hint"].as_str().unwrap();
    let order = [
        "Bing Webmaster Tools",
        "first used for another host",
        "text/plain",
        "indexq queue retry",
        "indexq key generate",
    ];
    let at: Vec<usize> = order.iter().map(|p| hint.find(p).unwrap_or_else(|| panic!("{p}: {hint}"))).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "in order: {hint}");
    let parked = done.submit_doc().parked.expect("what is parked");
    assert_eq!((parked[0].reason.as_str(), parked[0].checked_by_itself), ("user_forbidden", false));

    // The reminder a day later words the same fix; so does doctor.
    let human = sb.indexq(&["-q", "submit"]).now("2026-12-05T10:00:00Z").output().code(3);
    assert!(human.stdout.contains("(user_forbidden)"), "{}", human.stdout);
    assert!(human.stdout.contains("Fix: 1) verify the site in Bing Webmaster Tools"), "{}", human.stdout);
    let doctor = sb.indexq(&["--json", "doctor"]).now("2026-12-05T10:00:00Z").output().code(3).doctor_doc();
    let fix = doctor.check("parked").fix.clone().unwrap();
    assert!(fix.contains("Bing Webmaster Tools") && fix.contains("indexq key generate"), "{fix}");
}

/// A sandbox whose key file is served under `/static/` (`key_location`
/// below the root), whose property also uses Bing, and whose IndexNow
/// endpoints are `endpoints` paths of the engine mock.
fn scoped(endpoints: &[&str]) -> Sandbox {
    let mut sb = Sandbox::bing("");
    sb.indexnow = true;
    sb.endpoints = endpoints.iter().map(|p| format!("{}{p}", sb.engine.url())).collect();
    for path in endpoints {
        sb.engine.on("POST", path, vec![MockResponse::status(200)]);
    }
    sb.site.on("GET", &format!("/static/{KEY}.txt"), vec![MockResponse::status(200).body(KEY)]);
    let text = std::fs::read_to_string(sb.write_config())
        .unwrap()
        .replace(&sb.key_location(), &format!("{}/static/{KEY}.txt", sb.site.url()));
    std::fs::write(sb.config_path(), text).unwrap();
    sb
}

#[test]
fn a_url_outside_the_key_locations_folder_is_invalid_for_indexnow_alone_and_said_once() {
    let sb = scoped(&[ENDPOINT_PATH, "/second"]);
    let list = sb.urls("urls.txt", &["/static/a", "/blog/b"]);
    let done = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(3);
    let doc = done.submit_doc();
    // Never sent to IndexNow, at either endpoint; Bing gets both.
    for path in [ENDPOINT_PATH, "/second"] {
        let sent: Vec<String> = sb
            .engine
            .requests_to("POST", path)
            .iter()
            .flat_map(|r| {
                r.json()["urlList"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|u| u.as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(sent, [sb.url("/static/a")], "{path}");
    }
    assert_eq!(sb.bing_received(), [sb.url("/static/a"), sb.url("/blog/b")]);
    // One result for the URL outside, naming its place; the others accepted.
    let outside: Vec<_> = doc.results.iter().filter(|r| r.url == sb.url("/blog/b")).collect();
    let mut engines: Vec<_> = outside.iter().map(|r| (r.engine, r.outcome, r.reason.as_str())).collect();
    engines.sort_by_key(|(e, _, _)| format!("{e:?}"));
    assert_eq!(
        engines,
        [
            (Some(json::Engine::Bing), json::Outcome::Accepted, "ok"),
            (Some(json::Engine::IndexNow), json::Outcome::Invalid, "outside_key_location"),
        ],
        "{outside:#?}"
    );
    let invalid = outside.iter().find(|r| r.outcome == json::Outcome::Invalid).unwrap();
    assert_eq!(invalid.source.as_deref(), Some(format!("{}:2", list.display()).as_str()));
    assert_eq!((invalid.property.as_deref(), invalid.endpoint.as_deref()), (Some("site"), None));
    assert!(invalid.message.contains(&format!("outside {}/static/", sb.site.url())), "{invalid:?}");
    assert!(invalid.hint.as_deref().is_some_and(|h| h.contains("key_location")), "{invalid:?}");
    assert_eq!(doc.summary.invalid, 1);
    assert_eq!(doc.summary.accepted, 4, "/static/a at two endpoints and Bing, /blog/b at Bing");
    let notices = doc.parked.clone().unwrap_or_default();
    let [notice] = notices.as_slice() else { panic!("the key scope's notice: {doc:#?}") };
    assert_eq!(
        (notice.kind, notice.reason.as_str(), notice.urls, notice.told),
        (json::NoticeKind::KeyScope, "outside_key_location", 1, true)
    );

    // In human output, told once on stderr as it is read, with its place;
    // a need for a human (exit 3) once per `[submit] remind`, not every run.
    let again = sb.urls("again.txt", &["/blog/c"]);
    let human = sb.indexq(&["submit", again.to_str().unwrap()]).now(NOW).output().code(0);
    let lines: Vec<&str> = human.stderr.lines().filter(|l| l.contains("/blog/c")).collect();
    assert_eq!(lines.len(), 1, "{}", human.stderr);
    assert!(lines[0].starts_with(&format!("invalid: {}:1: ", again.display())), "{}", lines[0]);
    assert!(lines[0].contains("not sent to IndexNow (its other engines still get it)"), "{}", lines[0]);
    let quiet = sb.indexq(&["-q", "submit", again.to_str().unwrap(), "--force"]).now(NOW).output().code(0);
    assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", ""), "not due: nothing to say");
    let next_day = "2026-12-04T09:30:00Z";
    let quiet = sb.indexq(&["-q", "submit", again.to_str().unwrap(), "--force"]).now(next_day).output().code(3);
    assert!(
        quiet.stdout.starts_with("needs a human: ") && quiet.stdout.contains("(outside_key_location)"),
        "{}",
        quiet.stdout
    );
    assert!(
        quiet.stdout.contains("1 URL not sent to IndexNow") && quiet.stdout.contains("key_location"),
        "{}",
        quiet.stdout
    );
    assert_eq!(quiet.stderr, "", "said by its notice, not as invalid lines");
}

#[test]
fn doctor_says_what_a_key_below_the_root_vouches_for_and_a_wider_site_is_to_fix() {
    let sb = scoped(&[ENDPOINT_PATH]);
    // A site wider than the key's folder is a configuration problem: exit 3.
    let done = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(3);
    let doctor = done.doctor_doc();
    let c = doctor.check("indexnow_key_scope");
    assert!(!c.ok && !c.warning, "{c:?}");
    assert!(c.message.contains(&format!("vouches only for URLs under {}/static/", sb.site.url())), "{c:?}");
    assert!(c.fix.as_deref().unwrap().contains("remove `key_location`"), "{c:?}");
    let human = sb.indexq(&["doctor"]).now(NOW).output().code(3);
    assert!(human.stdout.contains("FIX indexnow_key_scope [IndexNow site]:"), "{}", human.stdout);
    assert!(human.stdout.contains("1 to fix"), "{}", human.stdout);

    // A site inside the folder: said, no warning.
    let text = std::fs::read_to_string(sb.config_path())
        .unwrap()
        .replace(&format!("site = \"{}\"", sb.site_url()), &format!("site = \"{}/static/\"", sb.site.url()));
    std::fs::write(sb.config_path(), text).unwrap();
    let doctor = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(0).doctor_doc();
    let c = doctor.check("indexnow_key_scope");
    assert!(c.ok && !c.warning && c.message.contains("which holds the site"), "{c:?}");
}

#[test]
fn an_answer_that_is_not_the_engines_own_does_not_count_as_the_key_accepted() {
    let mut sb = Sandbox::new();
    sb.extra = "[retry]\nkey_pending_first = \"60s\"\n".into();
    sb.endpoints.push(format!("{}/portal", sb.engine.url()));
    sb.write_config();
    sb.engine.on("POST", ENDPOINT_PATH, vec![user_forbidden()]);
    sb.engine.on("POST", "/portal", vec![MockResponse::status(200).body("<html><body>Sign in</body></html>")]);
    let list = sb.urls("urls.txt", &["/a"]);
    sb.indexq(&["--json", "submit", "--max-wait", "0", list.to_str().unwrap()]).now(NOW).output().code(0);
    // The portal's 200 came with the first 403: the key's day still ends a day after its first use.
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0"]).now("2026-12-04T09:00:00Z").output().code(3);
    let doc = done.submit_doc();
    let parked = doc.results.iter().find(|r| r.outcome == json::Outcome::Misconfigured).expect("parked");
    assert_eq!(parked.reason, "user_forbidden", "{parked:?}");
}
