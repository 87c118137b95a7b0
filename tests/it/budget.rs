//! The budget is never overspent: not the 12th URL, not on a rerun, not
//! from four processes at once; and windows follow the rule's timezone.

use crate::support::mock::MockResponse;
use crate::support::*;

fn quota_sandbox(limit: u32) -> Sandbox {
    let mut sb = Sandbox::new();
    sb.indexnow_extra = format!(", daily_quota = {limit}, quota_timezone = \"Asia/Shanghai\"");
    sb.write_config();
    sb
}

fn paths(n: usize, prefix: &str) -> Vec<String> {
    (1..=n).map(|i| format!("/{prefix}{i}")).collect()
}

#[test]
fn eleven_of_twelve_go_and_the_twelfth_waits_for_shanghai_midnight() {
    let sb = quota_sandbox(11);
    let names = paths(12, "page");
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let list = sb.urls("urls.txt", &refs);
    // 2026-12-03 10:00 in Shanghai.
    let done = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now("2026-12-03T02:00:00Z").output().code(0);
    let doc = done.json();
    let results = results(&doc);
    assert_eq!(count(&doc, "accepted"), 11);
    assert_eq!(count(&doc, "deferred"), 1);
    assert_eq!(sb.received_urls().len(), 11, "exactly 11 URLs reach the engine");
    let last = result_for(&results, &sb.url("/page12"));
    assert_eq!(last["outcome"], "deferred");
    assert_eq!(last["retry_at"], "2026-12-04T00:00:00+08:00");
    assert_eq!(last["retry_after_secs"], 14 * 3600);
    assert!(last.get("http_status").is_none(), "deferred never left the machine");

    // The human text says whose midnight it is and when that is locally.
    let human = sb.indexq(&["submit"]).now("2026-12-03T03:00:00Z").env("TZ", "Europe/Berlin").output().code(0);
    assert!(
        human.stdout.contains("2026-12-04 00:00 Asia/Shanghai")
            && human.stdout.contains("(17:00 in your timezone, +01:00)"),
        "{}",
        human.stdout
    );
    assert!(!human.stdout.to_lowercase().contains("fail"), "{}", human.stdout);

    // Later the same (Shanghai) day: nothing is sent.
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T15:00:00Z").output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 0);
    assert_eq!(sb.received_urls().len(), 11);

    // After Shanghai midnight the twelfth goes, and only it.
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T16:00:01Z").output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 1);
    let received = sb.received_urls();
    assert_eq!(received.len(), 12);
    assert_eq!(received[11], sb.url("/page12"));

    let status = sb.indexq(&["--json", "status"]).now("2026-12-03T16:00:02Z").output().code(0).json();
    let budget = &status["budgets"][0];
    assert_eq!(budget["window"], "2026-12-04");
    assert_eq!(budget["used"], 1);
    assert_eq!(budget["limit"], 11);
    assert_eq!(budget["remaining"], 10);
    assert_eq!(budget["timezone"], "Asia/Shanghai");
}

#[test]
fn a_quota_answer_blocks_the_window_whatever_the_local_count_says() {
    let sb = quota_sandbox(100);
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(429)]);
    let list = sb.urls("urls.txt", &["/a"]);
    let doc =
        sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now("2026-12-03T02:00:00Z").output().code(0).json();
    let r = result_for(&results(&doc), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "quota");
    assert_eq!(r["retry_at"], "2026-12-04T00:00:00+08:00");
    // 1 of 100 used locally, but the server said no: the rest of the day waits.
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let more = sb.urls("more.txt", &["/b"]);
    let doc =
        sb.indexq(&["--json", "submit", more.to_str().unwrap()]).now("2026-12-03T05:00:00Z").output().code(0).json();
    assert_eq!(result_for(&results(&doc), &sb.url("/b"))["outcome"], "deferred");
    assert_eq!(sb.engine.requests().len(), 1);
    let status = sb.indexq(&["--json", "status"]).now("2026-12-03T05:00:00Z").output().code(0).json();
    assert_eq!(status["budgets"][0]["remaining"], 0);
}

/// An IndexNow 429 refused the request without counting it: the day shows
/// it unused, yet stays spent (the block holds) until Shanghai midnight.
#[test]
fn a_429_is_not_counted_as_used_but_its_day_stays_spent() {
    let sb = quota_sandbox(11);
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(429)]);
    let list = sb.urls("urls.txt", &["/a", "/b", "/c"]);
    sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now("2026-12-03T02:00:00Z").output().code(0);
    let status = sb.indexq(&["--json", "status"]).now("2026-12-03T05:00:00Z").output().code(0).json();
    let budget = &status["budgets"][0];
    assert_eq!((budget["used"].as_u64(), budget["remaining"].as_u64()), (Some(0), Some(0)), "{status:#}");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T05:00:00Z").output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 0);
    // After midnight in Shanghai all 3 go, and the new day counts 3.
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T16:00:01Z").output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 3);
}

#[test]
fn four_processes_sharing_a_ledger_send_exactly_the_quota() {
    let sb = quota_sandbox(11);
    // Slow answers make the runs overlap.
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).delay(std::time::Duration::from_millis(150))]);
    let lists: Vec<_> = (0..4)
        .map(|p| {
            let names = paths(10, &format!("p{p}-"));
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            sb.urls(&format!("list{p}.txt"), &refs)
        })
        .collect();
    let children: Vec<_> = lists
        .iter()
        .map(|l| sb.indexq(&["--json", "submit", l.to_str().unwrap()]).now("2026-12-03T02:00:00Z").spawn())
        .collect();
    let mut accepted = 0;
    let mut deferred = 0;
    for child in children {
        let done = Done::from(child.wait_with_output().unwrap()).code(0);
        let doc = done.json();
        accepted += count(&doc, "accepted");
        deferred += count(&doc, "deferred");
    }
    let received = sb.received_urls();
    assert_eq!(received.len(), 11, "the engine saw exactly the quota: {received:?}");
    assert_eq!(accepted, 11);
    assert_eq!(deferred, 29);
    let mut unique = received.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 11, "no URL was sent twice");
}
