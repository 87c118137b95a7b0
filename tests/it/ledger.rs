//! Nothing is lost: every URL is in the ledger before anything is sent, a
//! run killed mid-request is reconciled by the next one, and the ledger
//! file is private.

use crate::support::mock::MockResponse;
use crate::support::*;
use std::time::Duration;

#[test]
fn a_run_killed_in_flight_is_reconciled_without_loss_or_double_count() {
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", daily_quota = 5".into();
    sb.write_config();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).hang()]);
    let list = sb.urls("urls.txt", &["/a", "/b"]);
    let mut child = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now("2026-12-03T22:00:00Z").spawn();
    assert!(sb.engine.wait_for_requests("POST", ENDPOINT_PATH, 1, Duration::from_secs(10)), "the request is in flight");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    // The killed run's reservation is in the ledger: 2 used today, items in flight.
    let queue = sb.indexq(&["--json", "queue", "list"]).now("2026-12-03T22:01:00Z").output().code(0).queue_doc();
    let items = &queue.items;
    assert_eq!(items.len(), 2, "both URLs are in the ledger");
    assert!(items.iter().all(|i| i.state == json::ItemState::InFlight), "{items:?}");

    // Next day: the next run reconciles them and sends them again.
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-04T08:00:00Z").output().code(0).submit_doc();
    assert_eq!(doc.summary.accepted, 2);
    assert_eq!(doc.result_for(&sb.url("/a")).attempts, 2, "the interrupted attempt is counted");
    assert_eq!(sb.engine.requests().len(), 2);

    // The killed request counted against its own day, and the retry only once against the new day.
    let day1 = sb.indexq(&["--json", "status"]).now("2026-12-03T23:00:00Z").output().code(0).status_doc();
    assert_eq!(day1.budgets[0].used, 2);
    let day2 = sb.indexq(&["--json", "status"]).now("2026-12-04T09:00:00Z").output().code(0).status_doc();
    assert_eq!(day2.budgets[0].used, 2);
    assert_eq!(day2.budgets[0].window, "2026-12-04");
    assert_eq!(day2.queue.due, 0);
    assert_eq!(day2.queue.waiting, 0);

    // The log tells what happened.
    let log = sb.indexq(&["--json", "log", "--url", &sb.url("/a")]).now("2026-12-04T09:00:00Z").output().code(0);
    let reasons: Vec<String> = log.log_doc().attempts.into_iter().map(|a| a.reason).collect();
    assert_eq!(reasons, ["interrupted", "ok"]);
}

#[test]
fn a_killed_run_on_the_same_day_does_not_overspend() {
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", daily_quota = 2".into();
    sb.write_config();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).hang()]);
    let list = sb.urls("urls.txt", &["/a", "/b"]);
    let mut child = sb.indexq(&["submit", list.to_str().unwrap()]).now("2026-12-03T09:00:00Z").spawn();
    assert!(sb.engine.wait_for_requests("POST", ENDPOINT_PATH, 1, Duration::from_secs(10)));
    child.kill().unwrap();
    child.wait().unwrap();
    // Same day: the server may have seen both, so the budget is spent; they wait.
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T10:00:00Z").output().code(0).json();
    assert_eq!(count(&doc, "deferred"), 2);
    assert_eq!(sb.engine.requests().len(), 1);
    assert_eq!(result_for(&results(&doc), &sb.url("/a"))["retry_at"], "2026-12-04T00:00:00+00:00");
}

#[test]
fn every_url_is_in_the_ledger_before_the_first_request() {
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).hang()]);
    let names: Vec<String> = (0..25_000).map(|i| format!("/p{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let list = sb.urls("urls.txt", &refs);
    let mut child = sb.indexq(&["submit", list.to_str().unwrap()]).now("2026-12-03T09:00:00Z").spawn();
    assert!(sb.engine.wait_for_requests("POST", ENDPOINT_PATH, 1, Duration::from_secs(30)));
    child.kill().unwrap();
    child.wait().unwrap();
    let queue = sb.indexq(&["--json", "queue", "list"]).now("2026-12-03T09:00:00Z").output().code(0).queue_doc();
    assert_eq!(queue.items.len(), 10_000, "a listing shows the first 10,000");
    assert!(queue.truncated);
    let all = sb.indexq(&["--json", "queue", "list", "--limit", "30000"]).now("2026-12-03T09:00:00Z").output();
    let all = all.code(0).queue_doc();
    assert_eq!(all.items.len(), 25_000);
    assert!(!all.truncated);
    // The first POST carries at most 10,000 URLs.
    assert_eq!(sb.received_urls().len(), 10_000);
}

#[cfg(unix)]
#[test]
fn the_ledger_file_is_private_and_holds_no_secret() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(403).json(&format!(r#"{{"echo":"{KEY}"}}"#))]);
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb
        .indexq(&["--json", "submit", "--max-wait", "0", list.to_str().unwrap()])
        .now("2026-12-03T09:00:00Z")
        .output();
    assert!(!done.stdout.contains(KEY) && !done.stderr.contains(KEY));
    let mode = std::fs::metadata(sb.ledger()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let bytes = ledger_bytes(&sb.ledger());
    assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "the key is not in the ledger");
    let log = sb.indexq(&["--json", "log"]).now("2026-12-03T09:00:00Z").output().code(0);
    assert!(log.stdout.contains("[REDACTED]"), "the echoed key is masked in the stored body: {}", log.stdout);
}

#[test]
fn a_corrupt_ledger_is_exit_1_with_its_path() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.ledger().parent().unwrap()).unwrap();
    std::fs::write(
        sb.ledger(),
        b"this is not a database, just some bytes that are long enough to look like a header....",
    )
    .unwrap();
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now("2026-12-03T09:00:00Z").output().code(1);
    assert!(done.stderr.contains(&sb.ledger().display().to_string()), "{}", done.stderr);
    assert!(sb.engine.requests().is_empty());
}

#[test]
fn queue_states_can_be_filtered_as_they_are_shown() {
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", daily_quota = 1".into();
    sb.write_config();
    let list = sb.urls("urls.txt", &["/a", "/b"]);
    sb.indexq(&["submit", list.to_str().unwrap()]).now("2026-12-03T09:00:00Z").output().code(0);
    let waiting = sb.indexq(&["--json", "queue", "list", "--state", "waiting"]).now("2026-12-03T09:00:00Z").output();
    let items = waiting.code(0).queue_doc().items;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].url, sb.url("/b"));
    assert_eq!(items[0].state, json::ItemState::Waiting);
    let accepted = sb.indexq(&["--json", "queue", "list", "--state", "accepted"]).now("2026-12-03T09:00:00Z").output();
    assert_eq!(accepted.code(0).queue_doc().items[0].url, sb.url("/a"));
    let due = sb.indexq(&["--json", "queue", "list", "--state", "due"]).now("2026-12-03T09:00:00Z").output();
    assert!(due.code(0).queue_doc().items.is_empty());
}

/// Issue 14, item 12: a ledger file someone else made (empty, or copied
/// with a loose mode) is made private when indexq opens it.
#[cfg(unix)]
#[test]
fn an_existing_ledger_file_others_can_read_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.ledger().parent().unwrap()).unwrap();
    std::fs::write(sb.ledger(), b"").unwrap();
    std::fs::set_permissions(sb.ledger(), std::fs::Permissions::from_mode(0o644)).unwrap();
    sb.indexq(&["status"]).now("2026-12-03T09:00:00Z").output().code(0);
    let mode = || std::fs::metadata(sb.ledger()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(), 0o600, "an empty file");
    std::fs::set_permissions(sb.ledger(), std::fs::Permissions::from_mode(0o664)).unwrap();
    let list = sb.urls("urls.txt", &["/a"]);
    sb.indexq(&["submit", list.to_str().unwrap()]).now("2026-12-03T09:00:00Z").output().code(0);
    assert_eq!(mode(), 0o600, "a ledger in use");
}

/// Issue 14, item 11: queue items under a property that was renamed, or an
/// endpoint that was respelled, are listed by `status` and `doctor` with
/// the commands that deal with them, and those commands work.
#[test]
fn queue_items_nothing_sends_any_more_are_shown_with_what_to_do() {
    let mut sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(503)]);
    let list = sb.urls("urls.txt", &["/a", "/b"]);
    let now = "2026-12-03T09:00:00Z";
    sb.indexq(&["submit", "--max-wait", "0", list.to_str().unwrap()]).now(now).output().code(0);
    let old_endpoint = sb.endpoints[0].clone();

    // The endpoint respelled with a trailing slash: its two items are stranded.
    sb.endpoints = vec![format!("{old_endpoint}/")];
    sb.write_config();
    let status = sb.indexq(&["--json", "status"]).now(now).output().code(0).status_doc();
    let stranded = &status.stranded;
    assert_eq!(stranded.len(), 1, "{status:#?}");
    assert_eq!(stranded[0].endpoint.as_deref(), Some(old_endpoint.as_str()));
    assert_eq!(stranded[0].queue.waiting, 2, "{status:#?}");
    let hint = &stranded[0].hint;
    assert!(hint.contains(&format!("indexq queue drop --property site --engine indexnow --endpoint {old_endpoint}")));
    let human = sb.indexq(&["status"]).now(now).output().code(0);
    assert!(human.stdout.contains("not configured any more: 2 queued"), "{}", human.stdout);
    let doctor = sb.indexq(&["--json", "doctor"]).now(now).output().code(3).doctor_doc();
    let check = doctor.checks.iter().find(|c| c.check == "ledger_stranded").unwrap_or_else(|| panic!("{doctor:#?}"));
    assert!(check.fix.as_deref().unwrap().contains("indexq queue list --property site"), "{check:#?}");

    // The commands the hint gives: list, then drop, only that endpoint's items.
    let listed = sb
        .indexq(&["--json", "queue", "list", "--property", "site", "--engine", "indexnow", "--endpoint", &old_endpoint])
        .now(now)
        .output()
        .code(0)
        .queue_doc();
    assert_eq!(listed.items.len(), 2, "{listed:#?}");
    sb.indexq(&["queue", "drop", "--property", "site", "--engine", "indexnow", "--endpoint", &old_endpoint])
        .now(now)
        .output()
        .code(0);
    let status = sb.indexq(&["--json", "status"]).now(now).output().code(0).status_doc();
    assert_eq!(status.stranded.len(), 0, "{status:#?}");
    sb.indexq(&["doctor"]).now(now).output().code(0);
}

/// `ledger copy` to another SQLite file: the copy holds the same ledger, and
/// `--json` says what was copied; copying again adds no attempt.
#[test]
fn ledger_copy_to_another_file_says_what_it_copied() {
    let sb = Sandbox::new();
    let now = "2026-12-03T09:00:00Z";
    let list = sb.urls("urls.txt", &["/a", "/b"]);
    sb.indexq(&["submit", list.to_str().unwrap()]).now(now).output().code(0);
    let copy = sb.dir.path().join("copy.db");
    let to = ["--json", "ledger", "copy", "--to", copy.to_str().unwrap()];
    let doc = sb.indexq(&to).now(now).output().code(0).copy_doc();
    assert_eq!(doc.from, sb.ledger().display().to_string());
    assert_eq!(doc.to, copy.display().to_string());
    // The two URLs, the one request that sent them, and IndexNow's day.
    let copied = json::Copied { items: 2, attempts: 1, budget_windows: 1 };
    assert_eq!(doc.copied, copied, "{doc:#?}");
    let accepted = |ledger: &std::path::Path| {
        let run = sb.indexq(&["--json", "queue", "list", "--state", "accepted"]).env("INDEXQ_LEDGER", ledger);
        run.now(now).output().code(0).queue_doc().items
    };
    assert_eq!(accepted(&copy), accepted(&sb.ledger()));
    assert_eq!(accepted(&copy).len(), 2);
    let again = sb.indexq(&to).now(now).output().code(0).copy_doc();
    assert_eq!(again.copied.attempts, 0, "{again:#?}");
}

/// `ledger copy` is one transaction of its target: killed (SIGKILL) at any
/// point, the target is left as it was — here empty: no item, request,
/// group or budget — or whole; copied again, it is whole.
#[test]
fn a_copy_killed_at_any_point_leaves_its_target_empty_or_whole() {
    let sb = Sandbox::new();
    let now = "2026-12-03T09:00:00Z";
    let list = sb.urls("urls.txt", &["/a"]);
    sb.indexq(&["submit", list.to_str().unwrap()]).now(now).output().code(0);
    let n = add_accepted_items(&sb.ledger(), 150_000, 1_764_752_400);
    let rows = |path: &std::path::Path| -> [i64; 4] {
        let Ok(conn) = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else {
            return [0; 4];
        };
        // The items: those the spans hold (schema 12 keeps no row an item).
        ["spans", "requests", "groups", "budget_usage"].map(|table| {
            let count = if table == "spans" { "COALESCE(SUM(last - first + 1), 0)" } else { "COUNT(*)" };
            conn.query_row(&format!("SELECT {count} FROM {table}"), [], |r| r.get(0)).unwrap_or(0)
        })
    };
    let status = |path: &std::path::Path| {
        let mut doc = sb.indexq(&["--json", "status"]).env("INDEXQ_LEDGER", path).now(now).output().code(0).json();
        doc["budgets"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .for_each(|b| drop(b.as_object_mut().unwrap().remove("resets_in_secs")));
        doc
    };
    let copy = |to: &std::path::Path| sb.indexq(&["ledger", "copy", "--to", to.to_str().unwrap()]).now(now);
    // A whole copy, timed.
    let whole = sb.dir.path().join("whole.db");
    let started = std::time::Instant::now();
    copy(&whole).output().code(0);
    let took = started.elapsed();
    let all = rows(&whole);
    assert_eq!(all[0], n, "{all:?}");
    let mut killed_midway = 0;
    for (k, fraction) in [0.2, 0.5, 0.8].into_iter().enumerate() {
        let target = sb.dir.path().join(format!("killed-{k}.db"));
        let mut child = copy(&target).spawn();
        std::thread::sleep(took.mul_f64(fraction));
        child.kill().unwrap();
        child.wait().unwrap();
        let left = rows(&target);
        assert!(left == [0; 4] || left == all, "killed at {fraction} of a copy: {left:?} (whole: {all:?})");
        if left == [0; 4] {
            killed_midway += 1;
        }
        copy(&target).output().code(0);
        assert_eq!(rows(&target), all, "copied again after a kill at {fraction}");
        assert_eq!(status(&target), status(&whole));
    }
    assert!(killed_midway > 0, "no kill landed during a copy ({took:?} each)");
}
