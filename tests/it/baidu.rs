//! Baidu's link push (issue 47): pushes of at most 2,000 URLs, one a line,
//! the token in the query string; `remain` in each answer bounding the rest
//! of the day; `over quota` waiting for midnight China time with what Baidu
//! did not count given back; the URLs a push lists as `not_same_site` or
//! `not_valid` parked with their fix; `site error` and `token is not valid`
//! with theirs. The mock keeps Baidu's books (`support::quota_engines`).

use crate::support::mock::MockResponse;
use crate::support::*;

/// 17:00 in Shanghai: seven hours before Baidu's next quota day.
const NOW: &str = "2026-12-03T09:00:00Z";

fn list(sb: &Sandbox, name: &str, n: usize) -> std::path::PathBuf {
    let names: Vec<String> = (1..=n).map(|i| format!("/{name}{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    sb.urls(&format!("{name}.txt"), &refs)
}

/// The `site` Baidu is told: the property's scheme and host.
fn site_param(sb: &Sandbox) -> String {
    sb.site.url()
}

#[test]
fn pushes_of_at_most_2000_one_url_a_line_with_the_site_and_token_in_the_query() {
    let (sb, book) = Sandbox::baidu("daily_quota = 5000", 10_000);
    let urls = list(&sb, "p", 4500);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    assert_eq!(doc.with_outcome(json::Outcome::Accepted).len(), 4500);
    let pushes = sb.engine.requests_to("POST", BAIDU_PUSH);
    let sizes: Vec<usize> = pushes.iter().map(|r| quota_engines::pushed(r).len()).collect();
    // The first push of the day is Baidu's least quota; its `remain`
    // bounds the next, each at most 2,000.
    assert_eq!(sizes, [10, 2000, 2000, 490]);
    let site: String = url::form_urlencoded::byte_serialize(site_param(&sb).as_bytes()).collect();
    for push in &pushes {
        assert_eq!(push.path, format!("{BAIDU_PUSH}?site={site}&token={BAIDU_TOKEN}"));
        assert_eq!(push.header("content-type"), Some("text/plain"));
    }
    let mut taken = book.taken();
    taken.sort();
    taken.dedup();
    assert_eq!(taken.len(), 4500, "each URL exactly once");
    assert_eq!(book.left(), 5500);
}

/// Nothing said yet today: the first push is Baidu's least quota (10), its
/// answer's `remain` (15) bounds the next, so exactly 25 go and no push is
/// refused; the rest waits for midnight in Shanghai, as do the URLs of a
/// later run that day.
#[test]
fn remain_bounds_the_rest_of_the_day() {
    let (sb, book) = Sandbox::baidu("", 25);
    let urls = list(&sb, "p", 40);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    assert_eq!(
        (doc.with_outcome(json::Outcome::Accepted).len(), doc.with_outcome(json::Outcome::Deferred).len()),
        (25, 15)
    );
    let sizes: Vec<usize> =
        sb.engine.requests_to("POST", BAIDU_PUSH).iter().map(|r| quota_engines::pushed(r).len()).collect();
    assert_eq!(sizes, [10, 15]);
    assert!(book.state().received.iter().all(|(_, ok)| *ok), "no push over what was left");
    let deferred = doc.with_outcome(json::Outcome::Deferred)[0];
    assert_eq!(deferred.retry_at.as_deref(), Some("2026-12-04T00:00:00+08:00"), "Baidu's day is China's");
    // A later run that day: Baidu's statement (0 left) holds its URLs back.
    let more = list(&sb, "q", 2);
    let doc = sb.indexq(&["--json", "submit", "--max-wait", "0", more.to_str().unwrap()]).now(NOW).output().code(0);
    let doc = doc.submit_doc();
    assert_eq!(doc.with_outcome(json::Outcome::Deferred).len(), 2, "{doc:#?}");
    assert_eq!(sb.engine.requests_to("POST", BAIDU_PUSH).len(), 2, "nothing pushed");

    // `status` says the limit is Baidu's own statement.
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    let reported: Vec<_> = status.budgets.iter().filter(|b| b.source == json::Source::Engine).collect();
    assert_eq!(reported.len(), 1, "{status:#?}");
    assert_eq!((reported[0].engine, reported[0].used, reported[0].remaining), (json::Engine::Baidu, 25, Some(0)));
    assert_eq!(reported[0].resets_at, "2026-12-04T00:00:00+08:00");
    // The metrics and the report list the engine.
    let metrics = sb.indexq(&["status", "--format", "prometheus"]).now(NOW).output().code(0).stdout;
    assert!(
        metrics.lines().any(|l| l.contains("engine=\"baidu\"") && l.contains("baidu-reported:site:day")),
        "{metrics}"
    );
    let page = sb.indexq(&["report", "--html", "-", "--days", "2"]).now(NOW).output().code(0).stdout;
    assert!(page.contains("Baidu"), "the report names Baidu");
}

/// `over quota`: the pushed URLs are `quota` until midnight China time and
/// their units are given back; a run a minute before midnight sends
/// nothing, the run at midnight sends them all.
#[test]
fn over_quota_waits_for_midnight_china_time_and_gives_the_units_back() {
    let (sb, book) = Sandbox::baidu("daily_quota = 100", 0);
    let urls = list(&sb, "p", 3);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    let r = doc.result_for(&sb.url("/p1"));
    assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Quota, "over_quota"), "{r:#?}");
    assert_eq!(r.retry_at.as_deref(), Some("2026-12-04T00:00:00+08:00"));
    assert_eq!(sb.engine.requests_to("POST", BAIDU_PUSH).len(), 1);
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    assert!(status.budgets.iter().all(|b| b.used == 0), "what Baidu did not count is given back: {status:#?}");

    book.set_left(100);
    let before = "2026-12-03T15:59:00Z";
    let doc = sb.indexq(&["--json", "submit", "--max-wait", "0"]).now(before).output().code(0).submit_doc();
    assert!(doc.with_outcome(json::Outcome::Accepted).is_empty(), "23:59 in Shanghai is still the spent day: {doc:#?}");
    assert_eq!(sb.engine.requests_to("POST", BAIDU_PUSH).len(), 1);
    let midnight = "2026-12-03T16:00:00Z";
    let doc = sb.indexq(&["--json", "submit"]).now(midnight).output().code(0).submit_doc();
    assert_eq!(doc.with_outcome(json::Outcome::Accepted).len(), 3);
    assert_eq!(book.taken().len(), 3);
}

/// A push whose answer lists one URL as `not_same_site` and one as
/// `not_valid`: those two are parked, each with its reason and fix; the
/// rest are accepted.
#[test]
fn not_same_site_and_not_valid_urls_are_parked_with_their_reason() {
    let (sb, _book) = Sandbox::baidu("daily_quota = 100", 100);
    let other = sb.url("/other");
    let bad = sb.url("/bad");
    let (o, b) = (other.clone(), bad.clone());
    sb.engine.respond_with("POST", BAIDU_PUSH, move |r| {
        let n = quota_engines::pushed(r).len() - 2;
        let body = serde_json::json!({ "remain": 97, "success": n, "not_same_site": [o], "not_valid": [b] });
        MockResponse::status(200).json(&body.to_string())
    });
    let urls = sb.urls("urls.txt", &["/a", "/other", "/bad", "/b"]);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3).submit_doc();
    for path in ["/a", "/b"] {
        assert_eq!(doc.result_for(&sb.url(path)).outcome, json::Outcome::Accepted);
    }
    let r = doc.result_for(&other);
    assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Misconfigured, "not_same_site"), "{r:#?}");
    assert!(r.hint.as_deref().unwrap_or_default().contains("`baidu.site`"), "{r:#?}");
    let r = doc.result_for(&bad);
    assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Misconfigured, "not_valid"), "{r:#?}");
    let queue = sb.indexq(&["--json", "queue", "list", "--state", "parked"]).now(NOW).output().code(0).queue_doc();
    assert_eq!(queue.items.len(), 2, "{queue:#?}");
}

/// Each misconfiguration Baidu names, with its fix: the site not verified
/// in 搜索资源平台, and a token Baidu does not take. Nothing more is pushed
/// while they hold.
#[test]
fn site_error_and_token_not_valid_say_their_fix() {
    let cases =
        [(400, "site error", "site_error", "Verify"), (401, "token is not valid", "token_not_valid", "push tool page")];
    for (status, message, reason, fix) in cases {
        let (sb, _book) = Sandbox::baidu("daily_quota = 100", 100);
        let body = format!(r#"{{"error":{status},"message":"{message}"}}"#);
        sb.engine.on("POST", BAIDU_PUSH, vec![MockResponse::status(status).json(&body)]);
        let urls = list(&sb, "p", 3);
        let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3).submit_doc();
        let r = doc.result_for(&sb.url("/p1"));
        assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Misconfigured, reason), "{r:#?}");
        assert!(r.hint.as_deref().unwrap_or_default().contains(fix), "{reason}: {r:#?}");
        let human = sb.indexq(&["status"]).now(NOW).output().code(0);
        assert!(human.stdout.contains(fix), "{reason}: `status` says the fix:\n{}", human.stdout);
        sb.indexq(&["submit"]).now(NOW).output().code(0);
        assert_eq!(sb.engine.requests_to("POST", BAIDU_PUSH).len(), 1, "{reason}: parked, not pushed again");
    }
}

/// `doctor` reads the token and pushes nothing: Baidu has no call that
/// spends nothing.
#[test]
fn doctor_reads_the_token_and_pushes_nothing() {
    let (sb, _book) = Sandbox::baidu("", 10);
    let doc = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(0).doctor_doc();
    let check = doc.checks.iter().find(|c| c.check == "baidu_token").expect("a Baidu check");
    assert!(check.ok, "{check:#?}");
    assert!(check.message.contains("without pushing, so the first push's answer"), "{check:#?}");
    assert!(sb.engine.requests_to("POST", BAIDU_PUSH).is_empty());
    let config = doc.checks.iter().find(|c| c.check == "config").unwrap();
    assert!(config.message.contains("baidu"), "{config:#?}");

    let sb = Sandbox::baidu("", 10).0;
    let done = sb.indexq(&["--json", "doctor"]).now(NOW).env_remove("BAIDU_TOKEN").output().code(3);
    let check = done.doctor_doc().checks.into_iter().find(|c| c.check == "baidu_token").unwrap();
    assert!(!check.ok && check.message.contains("BAIDU_TOKEN"), "{check:#?}");
}
