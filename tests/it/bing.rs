//! Bing Webmaster: batches of 500, the server's own quota as the authority,
//! a configured quota as a ceiling, ErrorCode classification, splitting a
//! batch with an invalid URL, and the API key never leaking.

use crate::support::mock::MockResponse;
use crate::support::*;

const NOW: &str = "2026-12-03T09:00:00Z";

fn list(sb: &Sandbox, name: &str, n: usize) -> std::path::PathBuf {
    let names: Vec<String> = (1..=n).map(|i| format!("/{name}{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    sb.urls(&format!("{name}.txt"), &refs)
}

#[test]
fn batches_of_500_with_the_key_in_the_query_and_the_site_in_the_body() {
    let sb = Sandbox::bing("daily_quota = 5000");
    sb.bing_quota(10_000, 100_000);
    let urls = list(&sb, "p", 1200);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 1200);
    let posts = sb.engine.requests_to("POST", BING_SUBMIT);
    let sizes: Vec<usize> = posts.iter().map(|r| r.json()["urlList"].as_array().unwrap().len()).collect();
    assert_eq!(sizes, [500, 500, 200]);
    for post in &posts {
        assert_eq!(post.path, format!("{BING_SUBMIT}?apikey={BING_KEY}"));
        assert_eq!(post.header("content-type"), Some("application/json; charset=utf-8"));
        assert_eq!(post.json()["siteUrl"], sb.site_url());
    }
    let mut received = sb.bing_received();
    received.sort();
    received.dedup();
    assert_eq!(received.len(), 1200, "each URL exactly once");
    // One quota read for the run, with the site and the key.
    let reads = sb.engine.requests_to("GET", BING_QUOTA);
    assert_eq!(reads.len(), 1);
    assert!(reads[0].path.contains("siteUrl=http%3A%2F%2F127.0.0.1"), "{}", reads[0].path);
    assert!(reads[0].path.contains(&format!("apikey={BING_KEY}")));
}

/// Two full batches and nothing after: each answer is recorded with the
/// next claim — the last one with a claim that finds nothing — and none is
/// left in flight.
#[test]
fn full_batches_each_recorded_with_the_next_claim_leave_nothing_in_flight() {
    let sb = Sandbox::bing("daily_quota = 5000");
    sb.bing_quota(10_000, 100_000);
    let urls = list(&sb, "p", 1000);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 1000);
    assert_eq!(sb.engine.requests_to("POST", BING_SUBMIT).len(), 2);
    let queue = sb.indexq(&["--json", "queue", "list", "--state", "in-flight,due"]).now(NOW).output().code(0).json();
    assert_eq!(queue["items"], serde_json::json!([]), "{queue:#}");
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    assert!(status.budgets.iter().any(|b| b.used == 1000), "{status:#?}");
}

/// A queue larger than the day's budget, the budget larger than a batch:
/// the run sends all the budget covers, batch after batch, and only the
/// rest waits for the next day — the report counting the day as used.
#[test]
fn a_queue_over_the_budget_sends_all_the_budget_covers_in_batches() {
    let sb = Sandbox::bing("daily_quota = 1100");
    sb.bing_quota(10_000, 100_000);
    let urls = list(&sb, "p", 1300);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!((count(&doc, "accepted"), count(&doc, "deferred")), (1100, 200));
    let posts = sb.engine.requests_to("POST", BING_SUBMIT);
    let sizes: Vec<usize> = posts.iter().map(|r| r.json()["urlList"].as_array().unwrap().len()).collect();
    assert_eq!(sizes, [500, 500, 100]);
    let r = result_for(&results(&doc), &sb.url("/p1300")).clone();
    assert_eq!((r["outcome"].as_str(), r["retry_at"].as_str()), (Some("deferred"), Some("2026-12-04T00:00:00+00:00")));
    // The report, of the same run: the day used, not what the first claim had.
    let sb = Sandbox::bing("daily_quota = 1100");
    sb.bing_quota(10_000, 100_000);
    let urls = list(&sb, "p", 1300);
    let human = sb.indexq(&["submit", urls.to_str().unwrap()]).now(NOW).output().code(0);
    assert!(human.stdout.contains("is used (1100/1100)"), "{}", human.stdout);
    assert!(human.stdout.contains("200 URLs are queued for then"), "{}", human.stdout);
}

#[test]
fn the_server_says_5_left_today_so_exactly_5_go() {
    let sb = Sandbox::bing("site_url = \"https://example.com/\"");
    sb.bing_quota(5, 1000);
    let urls = list(&sb, "p", 8);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 5);
    assert_eq!(count(&doc, "deferred"), 3);
    assert_eq!(sb.bing_received().len(), 5);
    assert_eq!(sb.engine.requests_to("POST", BING_SUBMIT)[0].json()["siteUrl"], "https://example.com/");
    let r = result_for(&results(&doc), &sb.url("/p8")).clone();
    assert_eq!(r["retry_at"], "2026-12-04T00:00:00+00:00", "Bing's day is UTC unless configured");

    // status says where the numbers come from.
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    let reported: Vec<_> = status.budgets.iter().filter(|b| b.source == json::Source::Engine).collect();
    assert_eq!(reported.len(), 2, "{status:#?}");
    assert_eq!(reported[0].period, json::Period::Day);
    assert_eq!(reported[0].used, 5);
    assert_eq!(reported[0].remaining, Some(0));
    assert!(reported[0].reported_at.is_some());
    let human = sb.indexq(&["status"]).now(NOW).env("TZ", "Asia/Tokyo").output().code(0);
    assert!(human.stdout.contains("as Bing reports it (5 left at"), "{}", human.stdout);
    assert!(human.stdout.contains("in your timezone"), "{}", human.stdout);
}

#[test]
fn nothing_left_this_month_waits_for_the_first_of_next_month() {
    let sb = Sandbox::bing("quota_timezone = \"America/Los_Angeles\"");
    sb.bing_quota(10, 0);
    let urls = list(&sb, "p", 2);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "deferred"), 2);
    assert!(sb.bing_received().is_empty());
    let r = result_for(&results(&doc), &sb.url("/p1")).clone();
    assert_eq!(r["retry_at"], "2027-01-01T00:00:00-08:00");
}

#[test]
fn a_configured_daily_quota_stays_a_ceiling() {
    let sb = Sandbox::bing("daily_quota = 3");
    sb.bing_quota(100, 1000);
    let urls = list(&sb, "p", 5);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 3);
    assert_eq!(sb.bing_received().len(), 3);
}

#[test]
fn a_quota_answer_spends_the_day_whatever_the_counts_say() {
    let sb = Sandbox::bing("daily_quota = 100");
    sb.engine.on(
        "POST",
        BING_SUBMIT,
        vec![MockResponse::status(400)
            .json(r#"{"ErrorCode":2,"Message":"ERROR!!! You have exceeded your daily url submission quota : 100"}"#)],
    );
    let urls = list(&sb, "p", 2);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let r = result_for(&results(&doc), &sb.url("/p1")).clone();
    assert_eq!(r["outcome"], "quota");
    assert_eq!(r["reason"], "daily_quota");
    assert_eq!(r["retry_at"], "2026-12-04T00:00:00+00:00");
    // Later that day Bing's quota read still says 100 left; nothing is sent.
    sb.engine.on("POST", BING_SUBMIT, vec![MockResponse::status(200).json(r#"{"d":null}"#)]);
    let more = list(&sb, "q", 1);
    let doc =
        sb.indexq(&["--json", "submit", more.to_str().unwrap()]).now("2026-12-03T15:00:00Z").output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 0);
    assert_eq!(sb.engine.requests_to("POST", BING_SUBMIT).len(), 1);
    // The next day they go.
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-04T00:00:01Z").output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 3);
}

#[test]
fn a_throttle_waits_a_short_while_not_a_day() {
    let sb = Sandbox::bing("");
    sb.engine.on(
        "POST",
        BING_SUBMIT,
        vec![MockResponse::status(400).json(r#"{"ErrorCode":4,"Message":"ThrottleUser"}"#)],
    );
    let urls = list(&sb, "p", 1);
    let doc =
        sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let r = result_for(&results(&doc), &sb.url("/p1")).clone();
    assert_eq!(r["outcome"], "quota");
    assert_eq!(r["reason"], "ThrottleUser");
    assert_eq!(r["retry_after_secs"], 60);
}

/// Bing's throttle (ErrorCode 4 `ThrottleUser`, HTTP 400) refused the batch
/// without counting it: its 7 units go back to the day (`daily_quota = 10`),
/// so at the retry a minute later all 7 go, not 3 (issue 26).
#[test]
fn a_throttled_batch_is_not_charged_so_all_of_it_goes_at_the_retry() {
    let sb = Sandbox::bing("daily_quota = 10");
    sb.engine.on(
        "POST",
        BING_SUBMIT,
        vec![
            MockResponse::status(400).json(r#"{"ErrorCode":4,"Message":"ERROR!!! ThrottleUser"}"#),
            MockResponse::status(200).json(r#"{"d":null}"#),
        ],
    );
    let urls = list(&sb, "p", 7);
    let doc =
        sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "quota"), 7, "{doc:#}");
    // `status` shows none of the refused units as used.
    let local_day = |at: &str| {
        let status = sb.indexq(&["--json", "status"]).now(at).output().code(0).status_doc();
        let day = status.budgets.iter().find(|b| b.source == json::Source::Local && b.period == json::Period::Day);
        day.cloned().unwrap_or_else(|| panic!("the configured day: {status:#?}"))
    };
    let day = local_day(NOW);
    assert_eq!((day.used, day.limit, day.remaining), (0, Some(10), Some(10)), "{day:#?}");
    // At the retry, all 7 go.
    let later = "2026-12-03T09:02:00Z";
    let doc = sb.indexq(&["--json", "submit", "--max-wait", "0"]).now(later).output().code(0).json();
    assert_eq!((count(&doc, "accepted"), count(&doc, "deferred")), (7, 0), "{doc:#}");
    assert_eq!(sb.bing_received().len(), 14, "the 7 refused, then the same 7 accepted");
    assert_eq!(local_day(later).used, 7, "what Bing took is counted");
}

/// A Bing mock whose real quota is `left` today: a batch larger than that is
/// refused as Bing refuses it (fixture bing-400-quota-remaining-partial-today:
/// ErrorCode 2, "Quota remaining for today: N, Submitted: M", HTTP 400); a
/// batch that fits is accepted and spends it. Returns what is left, to reset.
pub(crate) fn bing_with_real_quota(
    sb: &Sandbox,
    left: u64,
    period: &'static str,
) -> std::sync::Arc<std::sync::Mutex<u64>> {
    let state = std::sync::Arc::new(std::sync::Mutex::new(left));
    let shared = state.clone();
    sb.engine.respond_with("POST", BING_SUBMIT, move |req| {
        let submitted = req.json()["urlList"].as_array().unwrap().len() as u64;
        let mut left = shared.lock().unwrap();
        if submitted > *left {
            let message = format!("ERROR!!! Quota remaining for {period}: {left}, Submitted: {submitted}");
            return MockResponse::status(400)
                .json(&serde_json::json!({"ErrorCode": 2, "Message": message}).to_string());
        }
        *left -= submitted;
        MockResponse::status(200).json(r#"{"d":null}"#)
    });
    state
}

/// Issue 26: indexq's reading of `GetUrlSubmissionQuota` is stale (100 left;
/// another user of the key spent 90), so a batch of 32 meets "Quota remaining
/// for today: 10, Submitted: 32". The ledger learns the 10: they go now, the
/// 22 others wait for tomorrow; nothing is parked, exit 0.
#[test]
fn a_batch_larger_than_what_is_left_today_sends_the_remainder_and_the_rest_waits() {
    let sb = Sandbox::bing("");
    let left = bing_with_real_quota(&sb, 10, "today");
    let urls = list(&sb, "p", 32);
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output().code(0);
    let doc = done.json();
    assert_eq!((count(&doc, "accepted"), count(&doc, "deferred")), (10, 22), "{doc:#}");
    assert_eq!(count(&doc, "misconfigured"), 0, "{doc:#}");
    let posts: Vec<usize> = sb
        .engine
        .requests_to("POST", BING_SUBMIT)
        .iter()
        .map(|r| r.json()["urlList"].as_array().unwrap().len())
        .collect();
    assert_eq!(posts, [32, 10], "the batch, then the remainder at once");
    for r in results(&doc).iter().filter(|r| r["outcome"] == "deferred") {
        assert_eq!((r["reason"].as_str(), r["retry_at"].as_str()), (Some("budget"), Some("2026-12-04T00:00:00+00:00")));
    }
    // The ledger keeps Bing's number: 10 of 10 used today, as Bing reports it.
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    let day = status.budgets.iter().find(|b| b.source == json::Source::Engine && b.period == json::Period::Day);
    let day = day.unwrap_or_else(|| panic!("{status:#?}"));
    assert_eq!((day.used, day.limit, day.remaining), (10, Some(10), Some(0)), "{day:#?}");
    assert_eq!((status.queue.parked, status.queue.waiting, status.queue.accepted), (0, 22, 10), "{status:#?}");
    // Tomorrow Bing has 100 again: the 22 go.
    *left.lock().unwrap() = 100;
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-04T00:00:01Z").output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 22, "{doc:#}");
}

/// The same for the month (fixture bing-400-quota-remaining-partial-month):
/// 5 left this month, a batch of 8: 5 go now, 3 wait for the first of next
/// month in Bing's timezone.
#[test]
fn a_batch_larger_than_what_is_left_this_month_sends_the_remainder_and_the_rest_waits() {
    let sb = Sandbox::bing("");
    bing_with_real_quota(&sb, 5, "this month");
    let urls = list(&sb, "p", 8);
    let doc =
        sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!((count(&doc, "accepted"), count(&doc, "deferred")), (5, 3), "{doc:#}");
    let r = result_for(&results(&doc), &sb.url("/p8")).clone();
    assert_eq!((r["reason"].as_str(), r["retry_at"].as_str()), (Some("budget"), Some("2027-01-01T00:00:00+00:00")));
    assert_eq!(sb.bing_received().len(), 8 + 5);
}

#[test]
fn one_invalid_url_in_a_batch_parks_only_itself() {
    let sb = Sandbox::bing("");
    sb.bing_quota(1000, 10_000);
    let bad = sb.url("/p137");
    let bad_in_request = bad.clone();
    sb.engine.respond_with("POST", BING_SUBMIT, move |req| {
        let urls = req.json()["urlList"].as_array().unwrap().clone();
        if urls.iter().any(|u| u == bad_in_request.as_str()) {
            MockResponse::status(400).json(r#"{"ErrorCode":7,"Message":"ERROR!!! InvalidUrl"}"#)
        } else {
            MockResponse::status(200).json(r#"{"d":null}"#)
        }
    });
    let urls = list(&sb, "p", 500);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let doc = done.json();
    assert_eq!(count(&doc, "accepted"), 499);
    assert_eq!(count(&doc, "misconfigured"), 1);
    let r = result_for(&results(&doc), &bad).clone();
    assert_eq!(r["reason"], "InvalidUrl");
    assert!(r["hint"].is_string());
    let requests = sb.engine.requests_to("POST", BING_SUBMIT).len();
    assert!(requests <= 2 * 9 + 1, "a binary search, not one request per URL: {requests}");
    // The 499 were each accepted once.
    let mut accepted: Vec<String> = Vec::new();
    for req in sb.engine.requests_to("POST", BING_SUBMIT) {
        let urls = req.json()["urlList"].as_array().unwrap().clone();
        if !urls.iter().any(|u| u == bad.as_str()) {
            accepted.extend(urls.iter().map(|u| u.as_str().unwrap().to_string()));
        }
    }
    assert_eq!(accepted.len(), 499);
}

#[test]
fn a_failed_quota_read_falls_back_to_the_ledger_and_says_so() {
    let sb = Sandbox::bing("");
    sb.engine.on("GET", BING_QUOTA, vec![MockResponse::status(500).body("<html>oops</html>")]);
    let urls = list(&sb, "p", 12);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0);
    let doc = done.json();
    // No local rule: indexq's conservative default of 10 a day.
    assert_eq!(count(&doc, "accepted"), 10);
    assert_eq!(count(&doc, "deferred"), 2);
    let notes = done.submit_doc().notes.unwrap_or_default();
    assert!(notes[0].contains("could not read the quota"), "{notes:?}");
    // Bing documents no such figure (its quota is adaptive): the fallback is indexq's own.
    assert!(notes[0].contains("10 a day, indexq's conservative default"), "{notes:?}");
    assert!(!notes[0].contains("Bing's"), "{notes:?}");
    let more = list(&sb, "q", 1);
    let human = sb.indexq(&["submit", more.to_str().unwrap()]).now(NOW).output().code(0);
    assert!(human.stdout.contains("note:") && human.stdout.contains("could not read the quota"), "{}", human.stdout);
    assert!(human.stdout.contains("Bing quota for site is used (10/10)"), "{}", human.stdout);
}

#[test]
fn two_properties_with_one_key_have_their_own_windows() {
    let mut sb = Sandbox::bing("daily_quota = 2");
    let other = crate::support::mock::MockServer::start();
    sb.more_properties =
        format!("[[property]]\nname = \"other\"\nsite = \"{}/\"\nbing = {{ daily_quota = 2 }}\n", other.url());
    sb.write_config();
    let a = list(&sb, "p", 3);
    let b_urls: String = (1..=3).map(|i| format!("{}/o{i}\n", other.url())).collect();
    let b = sb.file("other.txt", &b_urls);
    let doc =
        sb.indexq(&["--json", "submit", a.to_str().unwrap(), b.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 4, "2 per property");
    assert_eq!(count(&doc, "deferred"), 2);
    let sites: Vec<String> = sb
        .engine
        .requests_to("POST", BING_SUBMIT)
        .iter()
        .map(|r| r.json()["siteUrl"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(sites.len(), 2);
    assert_ne!(sites[0], sites[1]);
    assert_eq!(sb.engine.requests_to("GET", BING_QUOTA).len(), 2, "one quota read per property");
}

#[test]
fn indexnow_and_bing_for_one_property_each_with_their_own_budget() {
    let mut sb = Sandbox::bing("daily_quota = 1");
    sb.indexnow = true;
    sb.indexnow_extra = ", daily_quota = 2".into();
    sb.write_config();
    let urls = list(&sb, "p", 3);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let results = results(&doc);
    let by = |engine: &str, outcome: &str| {
        results.iter().filter(|r| r["engine"] == engine && r["outcome"] == outcome).count()
    };
    assert_eq!(by("indexnow", "accepted"), 2);
    assert_eq!(by("indexnow", "deferred"), 1);
    assert_eq!(by("bing", "accepted"), 1);
    assert_eq!(by("bing", "deferred"), 2);
    assert_eq!(sb.received_urls().len(), 2);
    assert_eq!(sb.bing_received().len(), 1);
}

#[test]
fn the_api_key_never_leaks() {
    let mut sb = Sandbox::bing("");
    // An error answer that echoes the key, then a timeout, then a refused connection.
    sb.engine.on(
        "POST",
        BING_SUBMIT,
        vec![MockResponse::status(400)
            .json(&format!(r#"{{"ErrorCode":3,"Message":"ERROR!!! InvalidApiKey {BING_KEY}"}}"#))],
    );
    sb.extra = "[http]\ntimeout = \"1s\"\n".into();
    sb.write_config();
    let mut outputs = Vec::new();
    let urls = list(&sb, "p", 1);
    for args in [vec!["--json", "-vv", "submit"], vec!["-vv", "submit"]] {
        let mut args = args.clone();
        args.push(urls.to_str().unwrap());
        let done = sb.indexq(&args).now(NOW).output();
        outputs.push(done.stdout + &done.stderr);
    }
    sb.indexq(&["queue", "retry"]).now(NOW).output().code(0);
    sb.engine.on("POST", BING_SUBMIT, vec![MockResponse::status(200).hang()]);
    let done = sb.indexq(&["--json", "-vv", "submit", "--max-wait", "0"]).now("2026-12-03T10:00:00Z").output();
    outputs.push(done.stdout + &done.stderr);
    assert!(done.code == 0, "timeout is transient");
    // Connection refused: point the endpoint at a closed port.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let text = std::fs::read_to_string(sb.config_path())
        .unwrap()
        .replace(&sb.engine.url(), &format!("http://127.0.0.1:{port}"));
    std::fs::write(sb.config_path(), text).unwrap();
    let done = sb.indexq(&["--json", "-vv", "submit", "--max-wait", "0"]).now("2026-12-03T12:00:00Z").output();
    outputs.push(done.stdout + &done.stderr);
    for cmd in [vec!["--json", "log"], vec!["log"], vec!["status"], vec!["--json", "status"], vec!["queue", "list"]] {
        let done = sb.indexq(&cmd).now("2026-12-03T12:00:00Z").output().code(0);
        outputs.push(done.stdout + &done.stderr);
    }
    for (i, out) in outputs.iter().enumerate() {
        assert!(!out.contains(BING_KEY), "output {i} leaks the key:\n{out}");
    }
    assert!(outputs.iter().any(|o| o.contains("InvalidApiKey")), "the runs did reach the error");
    assert!(outputs.iter().any(|o| o.contains("timeout")), "the runs did reach the timeout");
    assert!(outputs.iter().any(|o| o.contains("connect")), "the runs did reach the refused connection");
    for suffix in ["db", "db-wal", "db-shm"] {
        let bytes = std::fs::read(sb.ledger().with_extension(suffix)).unwrap_or_default();
        assert!(!bytes.windows(BING_KEY.len()).any(|w| w == BING_KEY.as_bytes()), "ledger.{suffix} holds the key");
    }
}

#[test]
fn one_property_with_all_three_engines_goes_to_each_with_its_own_budget() {
    let mut sb = Sandbox::bing("daily_quota = 2");
    sb.indexnow = true;
    sb.indexnow_extra = ", daily_quota = 3".into();
    sb.google = Some("daily_quota = 1".into());
    sb.google_extra = "requests_per_minute = 6000".into();
    sb.write_google_key();
    sb.engine.on("POST", GOOGLE_TOKEN, vec![google_token_response(GOOGLE_ACCESS_TOKEN)]);
    sb.engine.on("POST", GOOGLE_PUBLISH, vec![MockResponse::status(200).json("{}")]);
    sb.write_config();
    let urls = list(&sb, "p", 4);
    let doc =
        sb.indexq(&["--json", "submit", "--max-wait", "5s", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let results = results(&doc);
    let accepted =
        |engine: &str| results.iter().filter(|r| r["engine"] == engine && r["outcome"] == "accepted").count();
    assert_eq!((accepted("indexnow"), accepted("bing"), accepted("google")), (3, 2, 1));
    assert_eq!(count(&doc, "deferred"), 1 + 2 + 3);
    assert_eq!(sb.received_urls().len(), 3);
    assert_eq!(sb.bing_received().len(), 2);
    assert_eq!(sb.google_published().len(), 1);
}
