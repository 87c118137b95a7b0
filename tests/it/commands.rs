//! The commands a person runs between submits: `status`, `queue`, `log`,
//! and `submit --dry-run`; and the key never leaking through any of them.

use crate::support::json::{Class, Engine, Item, ItemState, Outcome, Status, Submit};
use crate::support::mock::MockResponse;
use crate::support::*;

/// 2026-12-03 10:00 in Shanghai.
const NOW: &str = "2026-12-03T02:00:00Z";

fn quota_sandbox(limit: u32) -> Sandbox {
    let mut sb = Sandbox::new();
    sb.indexnow_extra = format!(", daily_quota = {limit}, quota_timezone = \"Asia/Shanghai\"");
    sb.write_config();
    sb
}

fn submit(sb: &Sandbox, paths: &[&str], at: &str, code: i32) -> Submit {
    let list = sb.urls("urls.txt", paths);
    let run = sb.indexq(&["--json", "submit", "--max-wait", "0", list.to_str().unwrap()]);
    run.now(at).output().code(code).submit_doc()
}

fn status(sb: &Sandbox, at: &str) -> Status {
    sb.indexq(&["--json", "status"]).now(at).output().code(0).status_doc()
}

fn queue_items(sb: &Sandbox, args: &[&str], at: &str) -> Vec<Item> {
    let mut all = vec!["--json", "queue", "list"];
    all.extend_from_slice(args);
    sb.indexq(&all).now(at).output().code(0).queue_doc().items
}

/// (due, waiting, parked) of a `status --json` document.
fn counts(doc: &Status) -> (u64, u64, u64) {
    (doc.queue.due, doc.queue.waiting, doc.queue.parked)
}

fn state_of(items: &[Item], url: &str) -> ItemState {
    let found: Vec<&Item> = items.iter().filter(|i| i.url == url).collect();
    assert_eq!(found.len(), 1, "one item for {url}: {items:#?}");
    found[0].state
}

fn url_not_on_host() -> MockResponse {
    MockResponse::status(422).json(r#"{"code":"UrlNotOnHost","message":"URL does not belong to the host"}"#)
}

/// A ledger with one parked URL (/bad), four accepted (of five allowed per
/// Shanghai day) and one waiting for Shanghai midnight. Returns the waiting URL.
fn parked_accepted_and_waiting(sb: &Sandbox) -> String {
    sb.engine.on("POST", ENDPOINT_PATH, vec![url_not_on_host()]);
    let doc = submit(sb, &["/bad"], NOW, 3);
    assert_eq!(doc.result_for(&sb.url("/bad")).outcome, Outcome::Misconfigured);
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let doc = submit(sb, &["/a", "/b", "/c", "/d", "/e"], "2026-12-03T02:10:00Z", 0);
    assert_eq!(doc.summary.accepted, 4, "{doc:#?}");
    assert_eq!(doc.summary.deferred, 1, "{doc:#?}");
    let waiting = doc.with_outcome(Outcome::Deferred)[0];
    assert_eq!(waiting.retry_at.as_deref(), Some("2026-12-04T00:00:00+08:00"));
    let url = waiting.url.clone();
    assert!(!sb.received_urls().contains(&url));
    url
}

// ---------------------------------------------------------------------------
// status

#[test]
fn status_json_shows_each_budget_with_its_window_and_the_queue() {
    let sb = quota_sandbox(5);
    // Before anything ran: the rule is there, unused.
    let doc = status(&sb, NOW);
    let b = &doc.budgets[0];
    assert_eq!(b.used, 0, "{doc:#?}");
    assert_eq!(b.limit, Some(5), "{doc:#?}");
    assert_eq!(b.remaining, Some(5), "{doc:#?}");

    let doc = submit(&sb, &["/a", "/b"], NOW, 0);
    assert_eq!(doc.summary.accepted, 2);
    let doc = status(&sb, "2026-12-03T03:00:00Z");
    assert!(doc.now.starts_with("2026-12-03T03:00:0"), "{doc:#?}");
    assert!(doc.now.ends_with("+00:00"), "now is in the user's timezone (TZ=UTC): {doc:#?}");
    assert_eq!(doc.budgets.len(), 1, "one rule for one property × engine × endpoint: {doc:#?}");
    let b = &doc.budgets[0];
    assert_eq!(b.property, "site");
    assert_eq!(b.engine, Engine::IndexNow);
    assert_eq!(b.window, "2026-12-03");
    assert_eq!(b.used, 2);
    assert_eq!(b.limit, Some(5));
    assert_eq!(b.remaining, Some(3));
    assert_eq!(b.resets_at, "2026-12-04T00:00:00+08:00", "the reset carries the rule's offset");
    assert_eq!(b.timezone, "Asia/Shanghai");
    assert_eq!(counts(&doc), (0, 0, 0), "{doc:#?}");
}

#[test]
fn status_json_counts_due_waiting_and_parked_and_follows_the_window() {
    let sb = quota_sandbox(5);
    parked_accepted_and_waiting(&sb);
    let doc = status(&sb, "2026-12-03T03:00:00Z");
    let b = &doc.budgets[0];
    assert_eq!(b.used, 5, "every URL sent counts, accepted or not: {doc:#?}");
    assert_eq!(b.remaining, Some(0));
    assert_eq!(counts(&doc), (0, 1, 1), "(due, waiting, parked): {doc:#?}");

    // After Shanghai midnight: a new window, and the waiting URL is due.
    let doc = status(&sb, "2026-12-03T16:00:01Z");
    let b = &doc.budgets[0];
    assert_eq!(b.window, "2026-12-04");
    assert_eq!(b.used, 0);
    assert_eq!(b.remaining, Some(5));
    assert_eq!(b.resets_at, "2026-12-05T00:00:00+08:00");
    assert_eq!(counts(&doc), (1, 0, 1), "(due, waiting, parked): {doc:#?}");

    // `queue retry` makes the parked one due as well.
    let retried = sb
        .indexq(&["--json", "queue", "retry", "--state", "parked"])
        .now("2026-12-03T16:00:01Z")
        .output()
        .code(0)
        .queue_retry_doc();
    assert_eq!(retried.retried, 1);
    assert_eq!(counts(&status(&sb, "2026-12-03T16:00:02Z")), (2, 0, 0));
    assert!(sb.engine.requests().len() == 2, "status and queue never send");
}

#[test]
fn status_names_the_rule_timezone_and_the_users_own() {
    let sb = quota_sandbox(5);
    submit(&sb, &["/a", "/b"], NOW, 0);
    // 03:00Z is 04:00 in Berlin; Shanghai midnight is 17:00 in Berlin.
    let done = sb.indexq(&["status"]).now("2026-12-03T03:00:00Z").env("TZ", "Europe/Berlin").output().code(0);
    let out = &done.stdout;
    assert!(out.contains("Europe/Berlin"), "{out}");
    assert!(out.contains("2026-12-04 00:00 Asia/Shanghai"), "{out}");
    assert!(out.contains("(17:00 in your timezone, +01:00)"), "{out}");
    let line = out.lines().find(|l| l.contains("Asia/Shanghai")).unwrap();
    assert!(
        line.contains("2 used of 5") || line.contains("2/5") || line.contains("used 2 of 5"),
        "used/limit shown: {line}"
    );
    assert!(!out.contains(KEY) && !done.stderr.contains(KEY));

    // In Shanghai itself there is only one timezone to name.
    let done = sb.indexq(&["status"]).now("2026-12-03T03:00:00Z").env("TZ", "Asia/Shanghai").output().code(0);
    assert!(done.stdout.contains("2026-12-04 00:00 Asia/Shanghai"), "{}", done.stdout);
    assert!(!done.stdout.contains("in your timezone"), "{}", done.stdout);
    // No rejection yet, so none is shown.
    assert!(!done.stdout.contains("last rejection"), "{}", done.stdout);
}

#[test]
fn status_shows_the_last_rejection_after_a_429() {
    let sb = Sandbox::new();
    sb.engine.on(
        "POST",
        ENDPOINT_PATH,
        vec![MockResponse::status(429).header("Retry-After", "600").body("Too Many Requests: slow down")],
    );
    let doc = submit(&sb, &["/a"], "2026-12-03T09:00:00Z", 0);
    assert_eq!(doc.result_for(&sb.url("/a")).outcome, Outcome::Quota);

    let done = sb.indexq(&["status"]).now("2026-12-03T09:01:00Z").output().code(0);
    let line = done
        .stdout
        .lines()
        .find(|l| l.contains("last rejection"))
        .unwrap_or_else(|| panic!("no last rejection:\n{}", done.stdout));
    assert!(line.contains("quota"), "{line}");
    assert!(line.contains("429"), "{line}");
    assert!(!done.stdout.to_lowercase().contains("error"), "a quota is never printed as a failure:\n{}", done.stdout);
    // The server said no until 09:10: status says so.
    assert!(done.stdout.contains("09:10"), "{}", done.stdout);

    let doc = status(&sb, "2026-12-03T09:01:00Z");
    let rejection = doc.groups.iter().find_map(|g| g.last_rejection.as_ref());
    let rejection = rejection.unwrap_or_else(|| panic!("no last rejection in {doc:#?}"));
    assert_eq!(rejection.outcome, Class::Quota);
    assert_eq!(rejection.http_status, Some(429));
    assert_eq!(rejection.url, sb.url("/a"));
    assert_eq!(doc.queue.waiting, 1, "{doc:#?}");
}

// ---------------------------------------------------------------------------
// queue

#[test]
fn queue_list_shows_due_waiting_and_parked_items() {
    let sb = quota_sandbox(5);
    let waiting = parked_accepted_and_waiting(&sb);

    let items = queue_items(&sb, &[], "2026-12-03T03:00:00Z");
    assert_eq!(items.len(), 2, "accepted items are not listed by default: {items:#?}");
    assert_eq!(state_of(&items, &sb.url("/bad")), ItemState::Parked);
    assert_eq!(state_of(&items, &waiting), ItemState::Waiting);
    let bad = items.iter().find(|i| i.url == sb.url("/bad")).unwrap();
    assert_eq!(bad.http_status, Some(422), "{bad:?}");
    assert_eq!(bad.last_outcome, Some(Class::Misconfigured), "{bad:?}");
    let w = items.iter().find(|i| i.url == waiting).unwrap();
    assert_eq!(w.next_attempt_at.as_deref(), Some("2026-12-03T16:00:00+00:00"), "{w:?}");
    assert_eq!(w.property, "site");
    assert_eq!(w.engine, Engine::IndexNow);

    // After Shanghai midnight the waiting item is due.
    let items = queue_items(&sb, &[], "2026-12-03T16:00:01Z");
    assert_eq!(state_of(&items, &waiting), ItemState::Due);
    assert_eq!(state_of(&items, &sb.url("/bad")), ItemState::Parked);

    // Filters.
    let items = queue_items(&sb, &["--state", "parked"], "2026-12-03T03:00:00Z");
    assert_eq!(items.len(), 1, "{items:#?}");
    assert_eq!(items[0].url, sb.url("/bad"));
    let items = queue_items(&sb, &["--state", "accepted"], "2026-12-03T03:00:00Z");
    assert_eq!(items.len(), 4, "{items:#?}");
    assert!(items.iter().all(|i| i.state == ItemState::Accepted));
    let items = queue_items(&sb, &["--url", &waiting], "2026-12-03T03:00:00Z");
    assert_eq!(items.len(), 1);

    // Human listing.
    let done = sb.indexq(&["queue", "list"]).now("2026-12-03T03:00:00Z").output().code(0);
    assert!(done.stdout.contains(&sb.url("/bad")) && done.stdout.contains("parked"), "{}", done.stdout);
    assert!(done.stdout.contains(&waiting) && done.stdout.contains("waiting"), "{}", done.stdout);
    assert!(sb.engine.requests().len() == 2, "queue never sends");
}

#[test]
fn queue_list_says_what_it_left_out_when_nothing_matches() {
    let sb = Sandbox::new();
    submit(&sb, &["/a", "/b"], NOW, 0);
    let list = |args: &[&str]| {
        let mut all = vec!["queue", "list"];
        all.extend_from_slice(args);
        sb.indexq(&all).now(NOW).output().code(0).stdout
    };
    let text = list(&[]);
    assert!(!text.contains("empty"), "two items are accepted: the ledger is not empty:\n{text}");
    assert!(text.contains("No items due, waiting, parked or in flight; 2 accepted"), "{text}");
    assert!(text.contains("`indexq status`") && text.contains("--state accepted"), "where to look:\n{text}");
    let text = list(&["--state", "parked,in_flight"]);
    assert!(text.contains("No items parked or in flight; 2 accepted"), "says what was asked:\n{text}");
    // Within the filter's scope: another property has nothing at all.
    assert_eq!(list(&["--property", "elsewhere"]).trim(), "The queue is empty.");
    assert!(list(&["--state", "accepted", "--property", "elsewhere"]).contains("No items accepted, and none"));
    // The JSON listing is the same as ever: no items.
    let doc = sb.indexq(&["--json", "queue", "list"]).now(NOW).output().code(0).queue_doc();
    assert!(doc.items.is_empty(), "{doc:#?}");
}

#[test]
fn an_item_in_flight_reads_in_flight_in_words_and_in_flight_in_json() {
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).hang()]);
    let list = sb.urls("urls.txt", &["/a"]);
    let mut child = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).spawn();
    let sent = sb.engine.wait_for_requests("POST", ENDPOINT_PATH, 1, std::time::Duration::from_secs(10));
    let human = sb.indexq(&["queue", "list"]).now(NOW).output().code(0).stdout;
    let status = sb.indexq(&["status"]).now(NOW).output().code(0).stdout;
    let by_state: Vec<Vec<Item>> =
        ["in_flight", "in-flight"].iter().map(|s| queue_items(&sb, &["--state", s], NOW)).collect();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(sent, "the request is in flight");
    for text in [&human, &status] {
        assert!(text.contains("in flight"), "{text}");
        assert!(!text.contains("in_flight") && !text.contains("in-flight"), "one spelling in words:\n{text}");
    }
    for items in by_state {
        assert_eq!(items.len(), 1, "{items:#?}");
        assert_eq!(items[0].state, ItemState::InFlight, "`in_flight` in JSON");
    }
    let help = sb.indexq(&["queue", "list", "--help"]).output().code(0).stdout;
    assert!(help.contains("in_flight") && !help.contains("in-flight"), "--state takes JSON's spelling:\n{help}");
}

#[test]
fn queue_drop_needs_a_filter_or_all() {
    let sb = quota_sandbox(5);
    let waiting = parked_accepted_and_waiting(&sb);
    let at = "2026-12-03T03:00:00Z";

    for args in [&["queue", "drop"][..], &["--json", "queue", "drop"][..]] {
        let done = sb.indexq(args).now(at).output().code(2);
        assert!(done.stderr.contains("--all"), "the error says how: {}", done.stderr);
    }
    assert_eq!(queue_items(&sb, &[], at).len(), 2, "nothing was dropped");

    let dropped = sb.indexq(&["--json", "queue", "drop", "--state", "parked"]).now(at).output().code(0);
    assert_eq!(dropped.queue_drop_doc().dropped, 1);
    let items = queue_items(&sb, &[], at);
    assert_eq!(items.len(), 1, "{items:#?}");
    assert_eq!(items[0].url, waiting);

    let done = sb.indexq(&["queue", "drop", "--all"]).now(at).output().code(0);
    assert!(done.stdout.contains("dropped"), "{}", done.stdout);
    assert!(queue_items(&sb, &[], at).is_empty());
    assert_eq!(counts(&status(&sb, at)), (0, 0, 0));
    // Nothing is left to send at midnight.
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T16:00:01Z").output().code(0).submit_doc();
    assert_eq!(doc.summary.accepted, 0);
    assert_eq!(sb.engine.requests().len(), 2);
}

// ---------------------------------------------------------------------------
// log

#[test]
fn log_url_shows_each_attempt_with_the_stored_body() {
    let sb = Sandbox::new();
    sb.engine.on(
        "POST",
        ENDPOINT_PATH,
        vec![
            MockResponse::status(503).header("Retry-After", "60").body("<html><h1>Service busy, try later</h1></html>"),
            MockResponse::status(200),
        ],
    );
    let doc = submit(&sb, &["/a", "/b"], "2026-12-03T09:00:00Z", 0);
    assert_eq!(doc.summary.transient, 2);
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T09:05:00Z").output().code(0).submit_doc();
    assert_eq!(doc.summary.accepted, 2);

    let log = sb.indexq(&["--json", "log", "--url", &sb.url("/a")]).now("2026-12-03T09:06:00Z").output().code(0);
    let log = log.log_doc();
    let attempts = &log.attempts;
    assert_eq!(attempts.len(), 2, "{log:#?}");
    assert!(attempts.iter().all(|a| a.url == sb.url("/a")), "only /a: {log:#?}");
    assert_eq!(attempts[0].outcome, Class::Transient);
    assert_eq!(attempts[0].http_status, Some(503));
    assert_eq!(attempts[0].at, "2026-12-03T09:00:00+00:00");
    assert_eq!(attempts[0].retry_at.as_deref(), Some("2026-12-03T09:01:00+00:00"));
    assert!(attempts[0].body.as_deref().unwrap().contains("Service busy, try later"), "{log:#?}");
    assert_eq!(attempts[1].outcome, Class::Accepted);
    assert_eq!(attempts[1].http_status, Some(200));

    // Without --url, one entry a request, with how many URLs it carried.
    let all = sb.indexq(&["--json", "log"]).now("2026-12-03T09:06:00Z").output().code(0).log_doc();
    let requests = &all.attempts;
    assert_eq!(requests.len(), 2, "{all:#?}");
    assert!(requests.iter().all(|a| a.urls == 2), "{all:#?}");
    assert_eq!((requests[0].outcome, requests[1].outcome), (Class::Transient, Class::Accepted));

    let human = sb.indexq(&["log", "--url", &sb.url("/a")]).now("2026-12-03T09:06:00Z").output().code(0);
    assert!(human.stdout.contains("Service busy, try later"), "{}", human.stdout);
    assert!(human.stdout.contains("503") && human.stdout.contains("transient"), "{}", human.stdout);
    assert!(!human.stdout.contains(&sb.url("/b")), "{}", human.stdout);

    let none = sb.indexq(&["--json", "log", "--url", &sb.url("/never")]).now("2026-12-03T09:06:00Z").output();
    assert!(none.code(0).log_doc().attempts.is_empty());
}

#[test]
fn log_keeps_the_engine_body_of_a_403_key_pending() {
    let sb = Sandbox::new();
    let body = r#"{"code":"SiteVerificationNotCompleted","message":"Site Verification is not completed. Please wait for some time for the verification to complete and try again."}"#;
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(403).json(body)]);
    let doc = submit(&sb, &["/a"], "2026-12-03T09:00:00Z", 0);
    assert_eq!(doc.result_for(&sb.url("/a")).outcome, Outcome::KeyPending);
    assert_eq!(sb.site.requests_to("GET", &format!("/{KEY}.txt")).len(), 1, "the key file was checked");

    let done = sb.indexq(&["--json", "log", "--url", &sb.url("/a")]).now("2026-12-03T09:00:30Z").output().code(0);
    let log = done.log_doc();
    assert_eq!(log.attempts.len(), 1, "{log:#?}");
    let a = &log.attempts[0];
    assert_eq!(a.outcome, Class::KeyPending);
    assert_eq!(a.http_status, Some(403));
    let stored = a.body.as_deref().unwrap();
    assert!(
        stored.contains("SiteVerificationNotCompleted") && stored.contains("Please wait for some time"),
        "the engine's body is kept: {stored}"
    );
    assert!(a.retry_at.is_some(), "{a:?}");
    assert!(!done.stdout.contains(KEY));

    let human = sb.indexq(&["log"]).now("2026-12-03T09:00:30Z").output().code(0);
    assert!(human.stdout.contains("SiteVerificationNotCompleted"), "{}", human.stdout);
    assert!(human.stdout.contains("key_pending"), "{}", human.stdout);
}

// ---------------------------------------------------------------------------
// submit --dry-run

#[test]
fn dry_run_sends_nothing_and_creates_no_ledger() {
    let sb = quota_sandbox(2);
    let list = sb.urls("urls.txt", &["/a", "/b", "/c"]);
    let done = sb.indexq(&["--json", "submit", "--dry-run", list.to_str().unwrap()]).now(NOW).output().code(0);
    let doc = done.submit_doc();
    assert_eq!(doc.dry_run, Some(true), "{doc:#?}");
    assert!(sb.engine.requests().is_empty(), "a dry run sends nothing");
    assert!(sb.site.requests().is_empty(), "a dry run fetches nothing");
    assert!(!sb.ledger().exists(), "a dry run creates no ledger");
    assert!(!sb.ledger().with_extension("db-wal").exists());
    assert_eq!(doc.summary.accepted, 0, "nothing was accepted: {doc:#?}");
    // With room for 2, the third waits for Shanghai midnight.
    assert_eq!(doc.summary.deferred, 1, "{doc:#?}");
    let c = doc.result_for(&sb.url("/c"));
    assert_eq!(c.outcome, Outcome::Deferred);
    assert_eq!(c.retry_at.as_deref(), Some("2026-12-04T00:00:00+08:00"));
    assert_eq!(c.retry_after_secs, Some(14 * 3600));
    assert_eq!(c.http_status, None);

    // Human: what goes now and what waits until when.
    let done = sb
        .indexq(&["submit", "--dry-run", list.to_str().unwrap()])
        .now(NOW)
        .env("TZ", "Europe/Berlin")
        .output()
        .code(0);
    assert!(done.stdout.to_lowercase().contains("dry run"), "{}", done.stdout);
    assert!(done.stdout.contains("2 URLs"), "says 2 would go now: {}", done.stdout);
    assert!(
        done.stdout.contains("2026-12-04 00:00 Asia/Shanghai") && done.stdout.contains("in your timezone"),
        "{}",
        done.stdout
    );
    assert!(sb.engine.requests().is_empty());
    assert!(!sb.ledger().exists());

    // The real run then does what the plan said.
    let doc = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    assert_eq!(doc.dry_run, None, "{doc:#?}");
    assert_eq!(doc.summary.accepted, 2);
    assert_eq!(doc.result_for(&sb.url("/c")).retry_at.as_deref(), Some("2026-12-04T00:00:00+08:00"));
}

#[test]
fn dry_run_lists_every_input_url_in_its_plan() {
    // The dry run shows the plan (docs/usage.md): what goes now as well as what waits.
    let sb = quota_sandbox(2);
    let list = sb.urls("urls.txt", &["/a", "/b", "/c"]);
    let run = sb.indexq(&["--json", "submit", "--dry-run", list.to_str().unwrap()]);
    let doc = run.now(NOW).output().code(0).submit_doc();
    let plan = doc.plan.as_ref().unwrap();
    let urls: Vec<&str> = plan.iter().map(|p| p.url.as_str()).collect();
    assert_eq!(urls, [sb.url("/a"), sb.url("/b")], "what goes now: {doc:#?}");
    assert_eq!(plan[0].engine, Engine::IndexNow);
    assert_eq!(doc.result_for(&sb.url("/c")).outcome, Outcome::Deferred, "what waits");
    assert!(sb.engine.requests().is_empty());
}

#[test]
fn dry_run_leaves_an_existing_ledger_unchanged() {
    let sb = quota_sandbox(2);
    sb.engine.on("POST", ENDPOINT_PATH, vec![url_not_on_host(), MockResponse::status(200)]);
    submit(&sb, &["/bad"], NOW, 3);
    submit(&sb, &["/a"], "2026-12-03T02:05:00Z", 0);
    let at = "2026-12-03T02:10:00Z";
    let before = status(&sb, at);
    let queue_before = queue_items(&sb, &["--state", "queued,parked,accepted"], at);
    let log_before = sb.indexq(&["--json", "log"]).now(at).output().code(0).log_doc();
    assert_eq!(before.budgets[0].used, 2, "{before:#?}");

    // The budget is spent: the dry run says the new URLs wait.
    let list = sb.urls("more.txt", &["/x", "/y"]);
    let doc = sb.indexq(&["--json", "submit", "--dry-run", list.to_str().unwrap()]).now(at).output().code(0);
    let doc = doc.submit_doc();
    assert_eq!(doc.dry_run, Some(true));
    for p in ["/x", "/y"] {
        let r = doc.result_for(&sb.url(p));
        assert_eq!(r.outcome, Outcome::Deferred, "{r:?}");
        assert_eq!(r.retry_at.as_deref(), Some("2026-12-04T00:00:00+08:00"), "{r:?}");
    }
    // After the window reopens, the dry run plans to send them.
    let doc = sb
        .indexq(&["--json", "submit", "--dry-run", list.to_str().unwrap()])
        .now("2026-12-03T16:00:01Z")
        .output()
        .code(0)
        .submit_doc();
    assert_eq!(doc.summary.deferred, 0, "{doc:#?}");

    assert_eq!(stable(status(&sb, at)), stable(before), "status is unchanged by dry runs");
    assert_eq!(queue_items(&sb, &["--state", "queued,parked,accepted"], at), queue_before);
    assert_eq!(sb.indexq(&["--json", "log"]).now(at).output().code(0).log_doc(), log_before);
    assert_eq!(sb.engine.requests().len(), 2, "only the two real runs sent");
    // /x and /y are not in the ledger: a real run later treats them as new.
    let doc = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now("2026-12-03T16:00:01Z").output().code(0);
    let doc = doc.submit_doc();
    assert_eq!(doc.summary.accepted, 2, "{doc:#?}");
}

/// A `status --json` document without the fields that move with the real
/// milliseconds elapsed since the pinned instant.
fn stable(mut doc: Status) -> Status {
    doc.now.clear();
    for b in &mut doc.budgets {
        b.resets_in_secs = 0;
    }
    doc
}

// ---------------------------------------------------------------------------
// secrets

fn assert_no_key(what: &str, text: &str) {
    assert!(!text.contains(KEY), "the key appears in {what}:\n{text}");
}

fn assert_key_never_leaks(key_file: MockResponse, engine_body: &str, expect_outcome: Outcome) {
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(403).json(engine_body)]);
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![key_file]);
    let list = sb.urls("urls.txt", &["/a", "/b"]);
    let at = "2026-12-03T09:00:00Z";
    let mut outputs = Vec::new();
    let done = sb.indexq(&["--json", "-vv", "submit", "--max-wait", "0", list.to_str().unwrap()]).now(at).output();
    let doc = done.submit_doc();
    assert_eq!(doc.result_for(&sb.url("/a")).outcome, expect_outcome, "{doc:#?}");
    assert_eq!(sb.site.requests_to("GET", &format!("/{KEY}.txt")).len(), 1, "the key file was checked");
    outputs.push(("submit --json -vv", done));
    // The key did go to the engine (that is where it belongs).
    assert_eq!(sb.engine.requests_to("POST", ENDPOINT_PATH)[0].json()["key"], KEY);

    outputs.push((
        "submit (human)",
        sb.indexq(&["-v", "submit", "--max-wait", "0", list.to_str().unwrap()]).now("2026-12-03T09:30:00Z").output(),
    ));
    for args in [
        &["status"][..],
        &["--json", "status"][..],
        &["log"][..],
        &["--json", "log"][..],
        &["queue", "list"][..],
        &["--json", "queue", "list"][..],
    ] {
        let done = sb.indexq(args).now("2026-12-03T09:31:00Z").output().code(0);
        outputs.push(("a command", done));
    }
    for (what, done) in &outputs {
        assert_no_key(&format!("{what} stdout"), &done.stdout);
        assert_no_key(&format!("{what} stderr"), &done.stderr);
    }
    let bytes = ledger_bytes(&sb.ledger());
    assert!(!bytes.is_empty());
    assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "the key is not in the ledger file");
    // Nor in the ledger's other files.
    for entry in std::fs::read_dir(sb.ledger().parent().unwrap()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "the key is not in any ledger file");
    }
}

#[test]
fn the_key_never_leaks_after_a_403_and_a_key_check_that_finds_it() {
    assert_key_never_leaks(
        MockResponse::status(200).body(&format!("{KEY}\n")),
        &format!(r#"{{"code":"SiteVerificationNotCompleted","key":"{KEY}"}}"#),
        Outcome::KeyPending,
    );
}

#[test]
fn the_key_never_leaks_when_the_key_file_wraps_it_in_html() {
    assert_key_never_leaks(
        MockResponse::status(200).body(&format!("<html><body><p>{KEY}</p></body></html>")),
        r#"{"code":"UserForbiddedToAccessSite"}"#,
        Outcome::Misconfigured,
    );
}

#[test]
fn the_key_never_leaks_when_the_key_file_has_a_bom() {
    assert_key_never_leaks(
        MockResponse::status(200).body(&format!("\u{feff}{KEY}")),
        r#"{"code":"UserForbiddedToAccessSite"}"#,
        Outcome::Misconfigured,
    );
}
