//! The PostgreSQL ledger: many machines share one quota and one queue
//! through it, a killed runner on another machine is trusted until its lease
//! ends, a server that goes away mid-run stops the run (exit 1, naming the
//! host) with nothing sent unreserved while `serve` waits for it and goes on,
//! `ledger copy` round-trips with SQLite,
//! the password never shows, and migrations run once and refuse a newer
//! schema. Each test has its own schema. They need a server: ignored with that reason,
//! they run with `cargo test -- --include-ignored` after `eval "$(.ci/postgres
//! start)"` (`.ci/run` does), and fail without one.

use crate::serve::Served;
use crate::support::mock::MockResponse;
use crate::support::pg::{self, PgLedger, PgProxy, PgServer};
use crate::support::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

const NOW: &str = "2026-12-03T09:00:00Z";

fn paths(n: usize, prefix: &str) -> Vec<String> {
    (1..=n).map(|i| format!("/{prefix}{i}")).collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn bing_ok() -> MockResponse {
    MockResponse::status(200).json(r#"{"d":null}"#)
}

/// The `urlList` of each Bing POST, in order.
fn bing_batches(sb: &Sandbox) -> Vec<Vec<String>> {
    sb.engine
        .requests_to("POST", BING_SUBMIT)
        .iter()
        .map(|r| r.json()["urlList"].as_array().unwrap().iter().map(|u| u.as_str().unwrap().to_string()).collect())
        .collect()
}

fn sorted_unique(v: &[String]) -> Vec<String> {
    let set: BTreeSet<&String> = v.iter().collect();
    set.into_iter().cloned().collect()
}

// ---------------------------------------------------------------------------
// many machines, one quota, one queue

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_eight_machines_share_one_daily_quota() {
    let pg = pg::server();
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", daily_quota = 11".into();
    // Slow answers make the runs overlap.
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).delay(Duration::from_millis(150))]);
    sb.use_pg(pg.ledger());
    let machines: Vec<_> = (0..8).map(|i| sb.machine(&format!("machine-{i}"))).collect();
    let lists: Vec<_> =
        machines.iter().enumerate().map(|(i, m)| m.urls("urls.txt", &paths(40, &format!("m{i}-")))).collect();
    // All eight at once, on a schema none of them has created yet.
    let children: Vec<_> = machines
        .iter()
        .zip(&lists)
        .map(|(m, l)| m.indexq(&["--json", "submit", l.to_str().unwrap()]).now(NOW).spawn())
        .collect();
    let (mut accepted, mut deferred) = (0, 0);
    let mut retry_at = BTreeSet::new();
    for child in children {
        let doc = pg::wait_at_most(child, Duration::from_secs(60), "a machine's submit").code(0).json();
        accepted += count(&doc, "accepted");
        deferred += count(&doc, "deferred");
        for r in results(&doc).iter().filter(|r| r["outcome"] == "deferred") {
            retry_at.insert(r["retry_at"].as_str().unwrap().to_string());
        }
    }
    let received = sb.received_urls();
    assert_eq!(received.len(), 11, "the engine saw exactly the quota, over all machines: {received:?}");
    assert_eq!(sorted_unique(&received).len(), 11, "no URL was sent twice");
    assert_eq!(accepted, 11);
    assert_eq!(deferred, 8 * 40 - 11);
    assert_eq!(
        retry_at.into_iter().collect::<Vec<_>>(),
        ["2026-12-04T00:00:00+00:00"],
        "every deferred URL waits for the same reset"
    );

    // Any machine sees the one shared budget and queue.
    let status = machines[5].indexq(&["--json", "status"]).now(NOW).output().code(0).json();
    let budget = &status["budgets"][0];
    assert_eq!(budget["used"], 11, "{status:#}");
    assert_eq!(budget["remaining"], 0, "{status:#}");
    assert_eq!(status["queue"]["waiting"], 309, "{status:#}");
    assert_eq!(status["queue"]["accepted"], 11, "{status:#}");
    assert_eq!(status["queue"]["in_flight"], 0, "{status:#}");
    pg::assert_no_sqlite(&sb, &machines.iter().map(|m| m.dir.path()).collect::<Vec<_>>());
}

/// Bing takes at most 500 URLs a request (IndexNow 10,000, which one runner
/// would claim in one go), so 3,000 URLs are six batches the three runners
/// take turns at.
/// Issue 26 on the shared ledger: a Bing throttle's units go back to the
/// day (all 7 go at the retry), and a batch larger than what Bing has left
/// sends that much at once while the rest waits for tomorrow.
#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_bing_gives_back_what_it_refused_and_sends_its_remainder() {
    let pg = pg::server();
    let mut sb = Sandbox::bing("daily_quota = 10");
    sb.use_pg(pg.ledger());
    sb.engine.on(
        "POST",
        BING_SUBMIT,
        vec![MockResponse::status(400).json(r#"{"ErrorCode":4,"Message":"ERROR!!! ThrottleUser"}"#), bing_ok()],
    );
    let urls = sb.urls("throttled.txt", &refs(&paths(7, "t")));
    let doc =
        sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "quota"), 7, "{doc:#}");
    let later = "2026-12-03T09:02:00Z";
    let doc = sb.indexq(&["--json", "submit", "--max-wait", "0"]).now(later).output().code(0).json();
    assert_eq!((count(&doc, "accepted"), count(&doc, "deferred")), (7, 0), "{doc:#}");

    // 3 left of the configured 10; Bing itself has 2 left, not the 100 it said.
    crate::bing::bing_with_real_quota(&sb, 2, "today");
    let urls = sb.urls("partial.txt", &refs(&paths(3, "p")));
    let doc = sb
        .indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()])
        .now("2026-12-03T09:03:00Z")
        .output()
        .code(0)
        .json();
    assert_eq!((count(&doc, "accepted"), count(&doc, "deferred"), count(&doc, "misconfigured")), (2, 1, 0), "{doc:#}");
    let sizes: Vec<usize> = bing_batches(&sb).iter().map(Vec::len).collect();
    assert_eq!(sizes, [7, 7, 3, 2]);
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_three_runners_drain_one_queue_once() {
    let pg = pg::server();
    let mut sb = Sandbox::bing("daily_quota = 5000");
    // Today Bing has no room: every URL is admitted and waits.
    sb.bing_quota(0, 100_000);
    sb.use_pg(pg.ledger());
    let all: Vec<String> = paths(3000, "q");
    let files: Vec<_> = all.chunks(1000).enumerate().map(|(i, c)| sb.urls(&format!("urls{i}.txt"), &refs(c))).collect();
    let mut args = vec!["--json", "submit"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let doc = sb.indexq(&args).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "deferred"), 3000, "{}", doc["summary"]);
    assert!(sb.bing_received().is_empty());

    // The next day three runners on three machines drain the one queue.
    sb.bing_quota(10_000, 100_000);
    sb.engine.on("POST", BING_SUBMIT, vec![bing_ok().delay(Duration::from_millis(300))]);
    let machines: Vec<_> = (0..3).map(|i| sb.machine(&format!("runner-{i}"))).collect();
    let children: Vec<_> =
        machines.iter().map(|m| m.indexq(&["--json", "submit"]).now("2026-12-04T09:00:00Z").spawn()).collect();
    let mut per_runner = Vec::new();
    for child in children {
        let doc = pg::wait_at_most(child, Duration::from_secs(60), "a runner").code(0).json();
        per_runner.push(count(&doc, "accepted"));
    }
    eprintln!("accepted per runner: {per_runner:?}");
    assert_eq!(per_runner.iter().sum::<u64>(), 3000, "each URL is reported by one runner: {per_runner:?}");

    let batches = bing_batches(&sb);
    assert!(batches.iter().all(|b| !b.is_empty() && b.len() <= 500), "batches of at most 500");
    let received = sb.bing_received();
    assert_eq!(received.len(), 3000, "each URL reached the engine once, none twice");
    let expected: Vec<String> = sorted_unique(&all.iter().map(|p| sb.url(p)).collect::<Vec<_>>());
    assert_eq!(sorted_unique(&received), expected, "every URL reached the engine");

    let status = sb.indexq(&["--json", "status"]).now("2026-12-04T09:30:00Z").output().code(0).json();
    for (k, v) in [("accepted", 3000), ("due", 0), ("waiting", 0), ("in_flight", 0), ("parked", 0)] {
        assert_eq!(status["queue"][k], v, "queue.{k}: {status:#}");
    }
    pg::assert_no_sqlite(&sb, &machines.iter().map(|m| m.dir.path()).collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------
// owners on other machines: the lease

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_killed_runner_is_reconciled_after_its_lease() {
    let pg = pg::server();
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", daily_quota = 10".into();
    // A lease must outlast a request (`[http] timeout`): 3 s and 2 s.
    sb.extra = "[retry]\nkey_pending_first = \"1s\"\n\n[http]\nconnect_timeout = \"2s\"\ntimeout = \"2s\"\n".into();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).hang()]);
    sb.use_pg(pg.ledger().lease("3s"));
    let list = sb.urls("urls.txt", &["/a", "/b"]);

    // Runner A, on machine-a, is killed while its request hangs.
    let mut a =
        sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).env("INDEXQ_HOST", "machine-a").spawn();
    assert!(sb.engine.wait_for_requests("POST", ENDPOINT_PATH, 1, Duration::from_secs(15)), "A's request is in flight");
    a.kill().unwrap(); // SIGKILL
    a.wait().unwrap();
    let killed = Instant::now();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);

    // Runner B, on machine-b, at the same pinned instant: A's pid cannot be
    // checked from another host and its lease has not ended, so its items
    // stay in flight and nothing is sent.
    let b = |at: &str, args: &[&str]| sb.indexq(args).now(at).env("INDEXQ_HOST", "machine-b").output();
    b(NOW, &["--json", "submit"]).code(0);
    assert_eq!(sb.engine.requests().len(), 1, "B did not touch A's items within the lease");
    let queue = b(NOW, &["--json", "queue", "list"]).code(0).queue_doc();
    let items = &queue.items;
    assert_eq!(items.len(), 2, "{queue:#?}");
    assert!(items.iter().all(|i| i.state == json::ItemState::InFlight), "{items:?}");
    let status = b(NOW, &["--json", "status"]).code(0).status_doc();
    assert_eq!(status.budgets[0].used, 2, "A's reservation is spent: {status:#?}");

    // After the lease (5 minutes later on the pinned clock; and more than
    // the lease in real time too, should leases be judged by the server's
    // clock), B reconciles A's items and sends them once more.
    if let Some(rest) = Duration::from_millis(4000).checked_sub(killed.elapsed()) {
        std::thread::sleep(rest);
    }
    let later = "2026-12-03T09:05:00Z";
    // doctor lists the expired lease, and checks the server's clock.
    let doctor = b(later, &["--json", "doctor"]).doctor_doc();
    let checks = &doctor.checks;
    let lease = checks.iter().find(|c| c.check == "ledger_lease").unwrap_or_else(|| panic!("{doctor:#?}"));
    assert!(lease.message.contains("machine-a"), "{lease:?}");
    assert!(checks.iter().any(|c| c.check == "ledger_clock" && c.ok), "{doctor:#?}");
    let doc = b(later, &["--json", "submit"]).code(0).json();
    assert_eq!(count(&doc, "accepted"), 2, "{doc:#}");
    let r = result_for(&results(&doc), &sb.url("/a")).clone();
    assert_eq!(r["attempts"], 2, "the killed attempt is counted: {r}");
    assert_eq!(sb.engine.requests().len(), 2, "sent once more, once");
    let mut received = sb.received_urls();
    received.sort();
    assert_eq!(received, [sb.url("/a"), sb.url("/a"), sb.url("/b"), sb.url("/b")]);

    // The killed request counts once (the engine may have seen it), and the resend once.
    let status = b(later, &["--json", "status"]).code(0).status_doc();
    assert_eq!(status.budgets[0].used, 4, "{status:#?}");
    assert_eq!(status.queue.in_flight, 0, "{status:#?}");
    assert_eq!(status.queue.accepted, 2, "{status:#?}");
    let log = b(later, &["--json", "log", "--url", &sb.url("/a")]).code(0).log_doc();
    let reasons: Vec<&str> = log.attempts.iter().map(|a| a.reason.as_str()).collect();
    assert_eq!(reasons, ["interrupted", "ok"]);
    pg::assert_no_sqlite(&sb, &[]);
}

// ---------------------------------------------------------------------------
// the server goes away

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_server_stopped_mid_run() {
    let pg = pg::server();
    let mut sb = Sandbox::bing("daily_quota = 5000");
    sb.bing_quota(10_000, 100_000);
    // The first batch is slow: the server goes away while it is in flight.
    sb.engine.on("POST", BING_SUBMIT, vec![bing_ok().delay(Duration::from_millis(1500)), bing_ok()]);
    let mut proxy = PgProxy::new(pg.addr());
    let via = proxy.addr().to_string();
    sb.use_pg(pg.ledger().via(&pg.url_via(proxy.addr())).timeout("3s"));
    let all = paths(1200, "s");
    let list = sb.urls("urls.txt", &refs(&all));

    // The run may wait 4 s for its ledger (`--max-wait`); it stays away.
    let child = sb.indexq(&["--json", "submit", "--max-wait", "4s", list.to_str().unwrap()]).now(NOW).spawn();
    assert!(sb.engine.wait_for_requests("POST", BING_SUBMIT, 1, Duration::from_secs(20)), "the first batch is sent");
    proxy.stop();
    let done = pg::wait_at_most(child, Duration::from_secs(30), "the run that lost its database").code(1);
    assert!(done.stderr.contains("the ledger cannot be reached; the run waits for it"), "{}", done.stderr);
    assert!(done.stderr.contains(&via), "the error names the server ({via}): {}", done.stderr);
    assert!(
        done.stderr.contains("writing 1200 queue item(s) to the ledger, which keeps them for the next run"),
        "the error says what was left queued: {}",
        done.stderr
    );
    pg::assert_absent(&done.stderr, &pg.password, "stderr");
    // Give a run that (wrongly) went on a moment to show it.
    std::thread::sleep(Duration::from_millis(300));
    let batches = bing_batches(&sb);
    assert_eq!(batches.len(), 1, "nothing was sent after the database went away");
    let interrupted = batches[0].clone();
    assert_eq!(interrupted.len(), 500);

    // Without the server, other commands fail the same way.
    let done = sb.indexq(&["status"]).now(NOW).output().code(1);
    assert!(done.stderr.contains(&via), "{}", done.stderr);

    // The server is back: the next run finishes the work. The interrupted
    // batch goes again (the engine may or may not have seen it).
    proxy.start();
    let later = "2026-12-03T10:00:00Z";
    sb.indexq(&["--json", "submit"]).now(later).output().code(0);
    let received = sb.bing_received();
    let expected: Vec<String> = sorted_unique(&all.iter().map(|p| sb.url(p)).collect::<Vec<_>>());
    assert_eq!(sorted_unique(&received), expected, "every URL reached the engine");
    assert_eq!(received.len(), 1200 + interrupted.len(), "only the interrupted batch went twice");
    let mut twice: BTreeMap<&String, usize> = BTreeMap::new();
    for u in &received {
        *twice.entry(u).or_default() += 1;
    }
    let twice: BTreeSet<&String> = twice.into_iter().filter(|(_, n)| *n > 1).map(|(u, _)| u).collect();
    assert_eq!(twice, interrupted.iter().collect::<BTreeSet<_>>());

    let status = sb.indexq(&["--json", "status"]).now(later).output().code(0).status_doc();
    for (k, v) in [("accepted", 1200), ("due", 0), ("waiting", 0), ("in_flight", 0), ("parked", 0)] {
        assert_eq!(status.queue.get(k), v, "queue.{k}: {status:#?}");
    }
    // Each URL is accepted exactly once in the ledger: 1,200 items accepted,
    // by accepted requests that carried 1,200 URLs in all.
    let log = sb.indexq(&["--json", "log", "--limit", "100000"]).now(later).output().code(0).log_doc();
    let accepted: u64 = log.attempts.iter().filter(|a| a.outcome == json::Class::Accepted).map(|a| a.urls).sum();
    assert_eq!(accepted, 1200, "one accepted attempt per URL");
    pg::assert_no_sqlite(&sb, &[]);
}

/// A long `submit` whose ledger goes away for a while and comes back
/// within `--max-wait`: the run waits for it instead of failing, records
/// the answer it got while the ledger was away, and goes on. Every URL
/// reaches the engine exactly once, and is accepted once in the ledger.
#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_submit_waits_for_its_ledger_within_max_wait() {
    let pg = pg::server();
    let mut sb = Sandbox::bing("daily_quota = 5000");
    sb.bing_quota(10_000, 100_000);
    // The first batch is slow: its answer comes while the ledger is away.
    sb.engine.on("POST", BING_SUBMIT, vec![bing_ok().delay(Duration::from_millis(1500)), bing_ok()]);
    let mut proxy = PgProxy::new(pg.addr());
    sb.use_pg(pg.ledger().via(&pg.url_via(proxy.addr())).timeout("3s"));
    let all = paths(1200, "s");
    let list = sb.urls("urls.txt", &refs(&all));

    let child = sb.indexq(&["--json", "submit", "--max-wait", "60s", list.to_str().unwrap()]).now(NOW).spawn();
    assert!(sb.engine.wait_for_requests("POST", BING_SUBMIT, 1, Duration::from_secs(20)), "the first batch is sent");
    proxy.stop();
    // Away for longer than the first batch takes to answer: the run meets it.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(bing_batches(&sb).len(), 1, "nothing is claimed while the ledger is away");
    proxy.start();
    let done = pg::wait_at_most(child, Duration::from_secs(40), "the run whose ledger came back").code(0);
    assert!(done.stderr.contains("the ledger cannot be reached; the run waits for it"), "{}", done.stderr);
    assert!(done.stderr.contains("the ledger answers again"), "{}", done.stderr);
    pg::assert_absent(&done.stderr, &pg.password, "stderr");

    let received = sb.bing_received();
    let expected: Vec<String> = sorted_unique(&all.iter().map(|p| sb.url(p)).collect::<Vec<_>>());
    assert_eq!(sorted_unique(&received), expected, "every URL reached the engine");
    assert_eq!(received.len(), 1200, "none went twice: the answer kept through the loss was recorded");
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    for (k, v) in [("accepted", 1200), ("due", 0), ("waiting", 0), ("in_flight", 0), ("parked", 0)] {
        assert_eq!(status.queue.get(k), v, "queue.{k}: {status:#?}");
    }
    let log = sb.indexq(&["--json", "log", "--limit", "100000"]).now(NOW).output().code(0).log_doc();
    let accepted: u64 = log.attempts.iter().filter(|a| a.outcome == json::Class::Accepted).map(|a| a.urls).sum();
    assert_eq!(accepted, 1200, "one accepted attempt per URL");
    pg::assert_no_sqlite(&sb, &[]);
}

/// A PostgreSQL restart under `serve` (a private cluster: the shared
/// server is never restarted). While the server is down, `/readyz` and the
/// intake answer 503 with `Retry-After`, and the worker, whose retry falls
/// due then, waits instead of exiting; within seconds of the server's
/// return the intake takes URLs again, `/readyz` is ready, and the worker
/// sends. Every URL is accepted exactly once, and nothing is sent twice.
#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_serve_comes_back_after_a_restart() {
    let cluster = pg::PrivateCluster::start();
    let mut sb = Sandbox::new();
    // The first answer is a 503 with `Retry-After: 3`: its retry falls due
    // while the server is down, so the worker meets the outage.
    sb.engine.on(
        "POST",
        ENDPOINT_PATH,
        vec![MockResponse::status(503).header("Retry-After", "3"), MockResponse::status(200)],
    );
    sb.use_pg(cluster.server.ledger().timeout("2s"));
    sb.write_config();
    let served = Served::start_run(sb.indexq(&["serve", "--listen", "127.0.0.1:0"]).now(NOW));
    let urls = |paths: &[&str]| serde_json::json!({ "urls": paths.iter().map(|p| sb.url(p)).collect::<Vec<_>>() });
    assert_eq!(served.post_json("/v1/urls", None, &urls(&["/a"])).status(), 202);
    assert!(sb.engine.wait_for_requests("POST", ENDPOINT_PATH, 1, Duration::from_secs(20)), "/a is sent");
    // The answer is recorded (its retry planned) before the server goes.
    let planned = Instant::now() + Duration::from_secs(20);
    while sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc().queue.get("waiting") != 1 {
        assert!(Instant::now() < planned, "the 503's retry is never in the ledger");
        std::thread::sleep(Duration::from_millis(100));
    }

    cluster.stop();
    let (status, r, retry) = crate::serve::refusal(served.get("/readyz"));
    assert_eq!((status, r.error.as_str(), retry.as_deref()), (503, "ledger_unavailable", Some("5")));
    let (status, r, retry) = crate::serve::refusal(served.post_json("/v1/urls", None, &urls(&["/b"])));
    assert_eq!((status, r.error.as_str(), retry.as_deref()), (503, "ledger_unavailable", Some("5")));
    // The retry of /a falls due: the worker waits for the ledger, and is
    // still there.
    served.run.wait_for_stderr("the ledger cannot be reached, the worker waits for it");
    let (status, _, _) = crate::serve::refusal(served.post_json("/v1/urls", None, &urls(&["/b"])));
    assert_eq!(status, 503, "still down");

    cluster.start_again();
    let back = Instant::now();
    let ready = |path: &str, ok: u16, send: &dyn Fn() -> reqwest::blocking::Response| loop {
        let status = send().status().as_u16();
        if status == ok {
            return back.elapsed();
        }
        assert_eq!(status, 503, "{path} while the ledger comes back");
        assert!(back.elapsed() < Duration::from_secs(10), "{path} is not back 10 s after the server");
        std::thread::sleep(Duration::from_millis(100));
    };
    let intake = ready("/v1/urls", 202, &|| served.post_json("/v1/urls", None, &urls(&["/b"])));
    let readyz = ready("/readyz", 200, &|| served.get("/readyz"));
    assert!(intake.max(readyz) < Duration::from_secs(10), "intake {intake:?}, readyz {readyz:?}");
    served.run.wait_for_stderr("the ledger answers again: the worker goes on");
    let accepted = Instant::now() + Duration::from_secs(20);
    loop {
        let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
        if status.queue.get("accepted") == 2 {
            for (k, v) in [("due", 0), ("waiting", 0), ("in_flight", 0), ("parked", 0)] {
                assert_eq!(status.queue.get(k), v, "queue.{k}: {status:#?}");
            }
            break;
        }
        assert!(Instant::now() < accepted, "the worker never sent after the outage: {status:#?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let done = served.stop().code(0);
    pg::assert_absent(&done.stderr, &cluster.server.password, "stderr");
    // /a twice (refused with 503, then accepted), /b once: nothing else.
    let mut received = sb.received_urls();
    received.sort();
    assert_eq!(received, [sb.url("/a"), sb.url("/a"), sb.url("/b")], "{}", done.stderr);
    let log = sb.indexq(&["--json", "log", "--limit", "100"]).now(NOW).output().code(0).log_doc();
    let accepted: u64 = log.attempts.iter().filter(|a| a.outcome == json::Class::Accepted).map(|a| a.urls).sum();
    assert_eq!(accepted, 2, "one accepted attempt per URL");
}

// ---------------------------------------------------------------------------
// ledger copy

/// `status`, `log` and `queue list` of a ledger, without the fields that
/// move with the real time elapsed since the pinned instant.
fn views(run: impl Fn(&[&str]) -> Done) -> Value {
    let mut status = run(&["--json", "status"]).code(0).json();
    status.as_object_mut().unwrap().remove("now");
    for b in status["budgets"].as_array_mut().unwrap() {
        b.as_object_mut().unwrap().remove("resets_in_secs");
    }
    let mut log = run(&["--json", "log", "--limit", "100000"]).code(0).json();
    log.as_object_mut().unwrap().remove("now");
    let mut queue =
        run(&["--json", "queue", "list", "--limit", "100000", "--state", "queued,parked,accepted"]).code(0).json();
    queue.as_object_mut().unwrap().remove("now");
    serde_json::json!({ "status": status, "log": log, "queue": queue })
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_ledger_copy_round_trip() {
    let pg = pg::server();
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", daily_quota = 5".into();
    sb.write_config();
    let submit = |sb: &Sandbox, name: &str, urls: &[&str], at: &str, code: i32| {
        let list = sb.urls(name, urls);
        sb.indexq(&["--json", "submit", "--max-wait", "0", list.to_str().unwrap()]).now(at).output().code(code).json()
    };
    // A history in SQLite: parked, a transient retry, accepted, deferred.
    sb.engine.on(
        "POST",
        ENDPOINT_PATH,
        vec![MockResponse::status(422).json(r#"{"code":"UrlNotOnHost","message":"URL does not belong to the host"}"#)],
    );
    let doc = submit(&sb, "bad.txt", &["/bad"], NOW, 3);
    assert_eq!(result_for(&results(&doc), &sb.url("/bad"))["outcome"], "misconfigured");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(503).header("Retry-After", "3600")]);
    let doc = submit(&sb, "t.txt", &["/t"], "2026-12-03T09:05:00Z", 0);
    assert_eq!(result_for(&results(&doc), &sb.url("/t"))["outcome"], "transient");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let doc = submit(&sb, "more.txt", &["/a", "/b", "/c", "/d", "/e"], "2026-12-03T09:10:00Z", 0);
    assert!(count(&doc, "accepted") >= 1 && count(&doc, "deferred") >= 1, "{}", doc["summary"]);

    let at = "2026-12-03T09:30:00Z";
    let sqlite = sb.ledger();
    let original = views(|args| sb.indexq(args).now(at).output());
    assert_eq!(original["status"]["queue"]["parked"], 1, "{original:#}");
    assert!(original["status"]["queue"]["waiting"].as_u64().unwrap() >= 2, "the retry and the deferred: {original:#}");
    // One entry a request: the 422, the 503 and the accepted batch.
    assert!(original["log"]["attempts"].as_array().unwrap().len() >= 3, "{original:#}");

    // SQLite → PostgreSQL, twice (the target password from $PGPASSWORD).
    let schema = pg.schema();
    let to_pg = |sb: &Sandbox| {
        sb.indexq(&["--json", "ledger", "copy", "--to", &pg.url, "--schema", &schema])
            .env("INDEXQ_LEDGER", &sqlite)
            .env("PGPASSWORD", &pg.password)
            .now(at)
            .output()
            .code(0)
            .copy_doc()
    };
    let first = to_pg(&sb);
    assert_eq!((first.from.as_str(), first.to.as_str()), (sqlite.to_str().unwrap(), pg.url.as_str()), "{first:#?}");
    let requests = original["log"]["attempts"].as_array().unwrap().len() as u64;
    assert_eq!(first.copied.attempts, requests, "{first:#?}");
    sb.use_pg(PgLedger { schema: schema.clone(), ..pg.ledger() });
    let in_pg = views(|args| sb.indexq(args).now(at).output());
    assert_eq!(in_pg, original, "PostgreSQL holds the same ledger");
    let again = to_pg(&sb);
    assert_eq!(again.copied.attempts, 0, "no attempt twice: {again:#?}");
    assert_eq!(views(|args| sb.indexq(args).now(at).output()), original, "copying again changes nothing");
    let from_sqlite = views(|args| sb.indexq(args).env("INDEXQ_LEDGER", &sqlite).now(at).output());
    assert_eq!(from_sqlite, original, "the source is unchanged");

    // PostgreSQL → a new SQLite file, twice.
    let copy = sb.dir.path().join("copy").join("ledger.db");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    for _ in 0..2 {
        sb.indexq(&["ledger", "copy", "--to", copy.to_str().unwrap()]).now(at).output().code(0);
        let back = views(|args| sb.indexq(args).env("INDEXQ_LEDGER", &copy).now(at).output());
        assert_eq!(back, original, "the round trip gives the same ledger");
    }
    assert_eq!(views(|args| sb.indexq(args).now(at).output()), original, "copying out leaves PostgreSQL unchanged");
    assert_no_secret(&ledger_bytes(&copy), &copy.display().to_string());

    // The copy is a working ledger: the next run goes on from it (and a day later, says again what is parked).
    let doc = sb.indexq(&["--json", "submit"]).env("INDEXQ_LEDGER", &copy).now("2026-12-04T09:00:00Z").output();
    let doc = doc.code(3).submit_doc();
    assert!(doc.summary.accepted >= 2, "the deferred and the transient go: {:?}", doc.summary);
    let parked = doc.parked.expect("the parked URL, said again");
    assert_eq!((parked[0].reason.as_str(), parked[0].urls, parked[0].told), ("url_not_on_host", 1, true));
}

// ---------------------------------------------------------------------------
// the password

/// Runs `args` (with `-vv`, human and `--json`) expecting `code`; returns
/// both outputs joined. `Done` already checks the real password is absent.
fn outputs(sb: &Sandbox, args: &[&str], code: i32, env: &[(&str, &str)]) -> String {
    let mut text = String::new();
    for json in [false, true] {
        let mut all = vec!["-vv"];
        if json {
            all.push("--json");
        }
        all.extend_from_slice(args);
        let mut run = sb.indexq(&all).now(NOW);
        for (k, v) in env {
            run = run.env(k, v);
        }
        let done = run.output().code(code);
        text.push_str(&done.stdout);
        text.push_str(&done.stderr);
    }
    text
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_password_never_shown() {
    let pg = pg::server();
    assert!(!pg.password.is_empty(), "the test server has a password to look for: set INDEXQ_TEST_PG_PASSWORD");
    let host = pg.host_port();
    let mut sb = Sandbox::new();
    let list = sb.urls("urls.txt", &["/a"]);
    let in_url = PgLedger { url: pg.url_with_password(&pg.password), password_env: false, ..pg.ledger() };

    // The password in the URL, and nowhere else: everything works.
    sb.use_pg(in_url.clone());
    let doc = sb.indexq(&["-vv", "--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 1);
    outputs(&sb, &["status"], 0, &[]);
    outputs(&sb, &["log"], 0, &[]);
    outputs(&sb, &["queue", "list"], 0, &[]);
    outputs(&sb, &["ledger", "migrate"], 0, &[]);
    let doctor = outputs(&sb, &["doctor"], 0, &[]);
    assert!(doctor.contains(&host), "doctor names the ledger's server: {doctor}");
    // From the environment (`ledger_password_env`) as well.
    sb.use_pg(pg.ledger());
    outputs(&sb, &["status"], 0, &[]);

    // A wrong password, in the URL or in the variable: exit 1, the host named.
    let wrong = "Wrong-Pass-8Hd2x";
    sb.use_pg(PgLedger { url: pg.url_with_password(wrong), ..in_url.clone() });
    let text = outputs(&sb, &["status"], 1, &[]);
    assert!(text.contains(&host), "{text}");
    pg::assert_absent(&text, wrong, "a failed run");
    let text = outputs(&sb, &["doctor"], 3, &[]);
    assert!(text.contains(&host), "{text}");
    pg::assert_absent(&text, wrong, "doctor");
    sb.use_pg(pg.ledger());
    let text = outputs(&sb, &["submit", list.to_str().unwrap()], 1, &[(pg::PASSWORD_ENV, wrong)]);
    assert!(text.contains(&host), "{text}");
    pg::assert_absent(&text, wrong, "a failed submit");

    // Nothing listens on the port.
    let port = pg::free_port();
    let nowhere = pg::url_with_addr(&in_url.url, format!("127.0.0.1:{port}").parse().unwrap());
    sb.use_pg(PgLedger { url: nowhere, ..in_url.clone() }.timeout("3s"));
    let text = outputs(&sb, &["status"], 1, &[]);
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    outputs(&sb, &["doctor"], 3, &[]);

    // TLS required of a server without it.
    sb.use_pg(PgLedger { url: format!("{}?sslmode=require", in_url.url), ..in_url.clone() });
    let text = outputs(&sb, &["status"], 1, &[]);
    assert!(text.contains(&host), "{text}");

    // A schema name that is not a plain identifier: a configuration error.
    sb.use_pg(PgLedger { schema: "no such\"; schema".into(), ..in_url.clone() });
    let text = outputs(&sb, &["status"], 2, &[]);
    assert!(text.contains("ledger_schema"), "{text}");

    assert_eq!(sb.engine.requests().len(), 1, "only the one good submit sent anything");
}

// ---------------------------------------------------------------------------
// migrations

/// The schema version `ledger migrate --json` reports.
fn migrated_version(done: &Done) -> i64 {
    done.migrate_doc().schema_version
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_migrate_once_and_refuse_newer() {
    let pg = pg::server();
    let mut sb = Sandbox::new();
    let ledger = pg.ledger();
    let schema = ledger.schema.clone();
    sb.use_pg(ledger);
    let children: Vec<_> = (0..10).map(|_| sb.indexq(&["--json", "ledger", "migrate"]).now(NOW).spawn()).collect();
    let mut versions = BTreeSet::new();
    for child in children {
        let done = pg::wait_at_most(child, Duration::from_secs(60), "ledger migrate").code(0);
        versions.insert(migrated_version(&done));
    }
    assert_eq!(versions.len(), 1, "every migrate reports the same version: {versions:?}");
    let version = *versions.first().unwrap();
    assert!(version >= 1);
    let in_db = pg.psql(&format!("SELECT version FROM {schema}.schema_version"));
    assert_eq!(in_db, version.to_string(), "one row, the version printed");
    sb.indexq(&["--json", "status"]).now(NOW).output().code(0);
    // Migrating an up-to-date schema is a no-op.
    let done = sb.indexq(&["--json", "ledger", "migrate"]).now(NOW).output().code(0);
    assert_eq!(migrated_version(&done), version);

    // A dry run plans on a private copy: the shared ledger is not written.
    let list = sb.urls("plan.txt", &["/p1", "/p2"]);
    let plan = sb.indexq(&["--json", "submit", "--dry-run", list.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(plan["plan"].as_array().map(Vec::len), Some(2), "{plan:#}");
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).json();
    assert_eq!(status["queue"]["due"], 0, "a dry run wrote to the shared ledger: {status:#}");
    assert!(sb.engine.requests().is_empty(), "a dry run sends nothing");

    // A newer indexq wrote this schema: refuse, say what to do, send nothing.
    pg.psql(&format!("UPDATE {schema}.schema_version SET version = 99"));
    let done = sb.indexq(&["submit", "--dry-run", list.to_str().unwrap()]).now(NOW).output().code(2);
    assert!(done.stderr.contains("upgrade indexq"), "{}", done.stderr);
    let done = sb.indexq(&["status"]).now(NOW).output().code(2);
    assert!(done.stderr.contains("99"), "{}", done.stderr);
    assert!(done.stderr.contains("upgrade indexq"), "{}", done.stderr);
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output();
    assert_ne!(done.code, 0, "{}", done.stderr);
    assert!(sb.engine.requests().is_empty(), "nothing sent");
    let done = sb.indexq(&["ledger", "migrate"]).now(NOW).output();
    assert_ne!(done.code, 0, "migrate does not downgrade: {}", done.stdout);
    assert_eq!(pg.psql(&format!("SELECT version FROM {schema}.schema_version")), "99");
}

/// The helpers themselves, so that a broken proxy or URL rewrite shows as
/// such and not as a ledger bug.
#[test]
fn pg_proxy_drops_and_restores_connections() {
    use std::io::{Read, Write};
    // An echo server stands in for PostgreSQL.
    let echo = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let upstream = echo.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in echo.incoming().flatten() {
            std::thread::spawn(move || {
                let mut conn = conn;
                let mut buf = [0u8; 64];
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 || conn.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    let mut proxy = PgProxy::new(upstream);
    let mut c = std::net::TcpStream::connect(proxy.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(b"ping").unwrap();
    let mut buf = [0u8; 4];
    c.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"ping");
    proxy.stop();
    let mut rest = Vec::new();
    assert_eq!(c.read_to_end(&mut rest).unwrap_or(0), 0, "an open connection is closed");
    assert!(std::net::TcpStream::connect(proxy.addr()).is_err(), "no one listens");
    proxy.start();
    let mut c = std::net::TcpStream::connect(proxy.addr()).unwrap();
    c.write_all(b"pong").unwrap();
    c.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"pong");

    let server = PgServer {
        url: "postgres://u@db.example:5433/d?sslmode=require".into(),
        password: "p@ss:w/rd".into(),
        host: "db.example".into(),
        port: 5433,
    };
    assert_eq!(server.url_via(proxy.addr()), format!("postgres://u@{}/d?sslmode=require", proxy.addr()));
    assert_eq!(server.url_with_password("p@ss:w/rd"), "postgres://u:p%40ss%3Aw%2Frd@db.example:5433/d?sslmode=require");
    let a = server.schema();
    let b = server.schema();
    assert_ne!(a, b);
    assert!(a.len() < 64 && a.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'), "{a}");
}

/// Needs no server: names are checked before anything connects.
#[test]
fn ledger_copy_refuses_a_bad_schema_name_and_itself() {
    let sb = Sandbox::new();
    sb.indexq(&["status"]).now(NOW).output().code(0);
    let to = "postgres://indexq@127.0.0.1:9/nowhere";
    let done = sb.indexq(&["ledger", "copy", "--to", to, "--schema", "x; DROP TABLE items"]).now(NOW).output().code(2);
    assert!(done.stderr.contains("schema name"), "{}", done.stderr);
    let own = sb.ledger().display().to_string();
    let done = sb.indexq(&["ledger", "copy", "--to", &own]).now(NOW).output().code(2);
    assert!(done.stderr.contains("itself"), "{}", done.stderr);
    // A mistyped database URL is not a file named after its password.
    let done = sb.indexq(&["ledger", "copy", "--to", "postgres:indexq:Typo-Pw-3x9@db/x"]).now(NOW).output().code(2);
    assert!(done.stderr.contains("--to") && done.stderr.contains("with a host"), "{}", done.stderr);
    assert!(!done.stderr.contains("Typo-Pw-3x9"), "{}", done.stderr);
    assert!(!sb.dir.path().join("postgres:indexq:Typo-Pw-3x9@db").exists(), "no file was created");
}

/// Baidu on PostgreSQL (issue 47): the first push of the day is Baidu's
/// least quota, its `remain` bounds the next, and the rest waits for
/// midnight in Shanghai — as on SQLite (`baidu::remain_bounds_the_rest_of_the_day`).
#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_baidu_remain_bounds_the_day() {
    let pg = pg::server();
    let (mut sb, book) = Sandbox::baidu("", 25);
    sb.use_pg(pg.ledger());
    let urls = sb.urls("urls.txt", &refs(&paths(40, "b")));
    let doc = sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output().code(0);
    let doc = doc.submit_doc();
    assert_eq!(doc.with_outcome(json::Outcome::Accepted).len(), 25);
    let deferred = doc.with_outcome(json::Outcome::Deferred);
    assert_eq!(deferred.len(), 15);
    assert_eq!(deferred[0].retry_at.as_deref(), Some("2026-12-04T00:00:00+08:00"));
    let sizes: Vec<usize> =
        sb.engine.requests_to("POST", BAIDU_PUSH).iter().map(|r| quota_engines::pushed(r).len()).collect();
    assert_eq!(sizes, [10, 15]);
    assert!(book.state().received.iter().all(|(_, ok)| *ok));
}
