//! A clean stop on SIGINT or SIGTERM (`indexq submit`): nothing more is
//! claimed or read, requests in flight get `[submit] stop_grace` to be
//! answered, one left unanswered is recorded as `interrupted` (still
//! counted) and waits for its reservation's lease, the run prints its
//! report with one line about the stop (`-q` too; `interrupted` in
//! `--json`), writes its run record and metrics, and exits 130 or 143; a
//! second signal ends it at once. Each test signals the real binary while
//! the mock engine holds its request.
#![cfg(unix)]

use crate::support::mock::MockResponse;
use crate::support::*;
use std::io::Read;
use std::process::{Child, Output};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

const NOW: &str = "2026-12-03T09:00:00Z";
/// The longest any run here may take after its signal: a stopped run that
/// hangs fails its test instead of the suite.
const LIMIT: Duration = Duration::from_secs(20);

/// What a run wrote to one of its pipes so far.
type Captured = Arc<Mutex<Vec<u8>>>;

/// A spawned run whose stdout and stderr are read as they come.
pub(crate) struct Running {
    child: Child,
    stdout: Captured,
    stderr: Captured,
    readers: Vec<JoinHandle<()>>,
}

/// Reads `pipe` into `into` until it closes, on a thread of its own.
fn read_into(mut pipe: impl Read + Send + 'static, into: Captured) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = pipe.read(&mut buf) {
            into.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    })
}

impl Running {
    pub(crate) fn start(run: Run) -> Running {
        let mut child = run.spawn();
        let (stdout, stderr): (Captured, Captured) = (Arc::default(), Arc::default());
        let readers = vec![
            read_into(child.stdout.take().expect("stdout is piped"), Arc::clone(&stdout)),
            read_into(child.stderr.take().expect("stderr is piped"), Arc::clone(&stderr)),
        ];
        Running { child, stdout, stderr, readers }
    }

    /// Sends `signal` to the run.
    pub(crate) fn signal(&self, signal: libc::c_int) {
        let pid = libc::pid_t::try_from(self.child.id()).unwrap();
        // SAFETY: kill(2) on the child this test spawned and has not waited for.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill({pid}, {signal})");
    }

    /// What the run wrote to stderr so far.
    pub(crate) fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Waits until stderr holds `text` (at most `LIMIT`).
    pub(crate) fn wait_for_stderr(&self, text: &str) {
        let end = Instant::now() + LIMIT;
        while !String::from_utf8_lossy(&self.stderr.lock().unwrap()).contains(text) {
            assert!(
                Instant::now() < end,
                "stderr never said `{text}`:\n{}",
                String::from_utf8_lossy(&self.stderr.lock().unwrap())
            );
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits for the run to end (at most `LIMIT`, then kills it and fails).
    pub(crate) fn finish(mut self) -> Done {
        let end = Instant::now() + LIMIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "the run still ran {LIMIT:?} after it was stopped\n--- stdout\n{}\n--- stderr\n{}",
                    String::from_utf8_lossy(&self.stdout.lock().unwrap()),
                    String::from_utf8_lossy(&self.stderr.lock().unwrap())
                );
            }
            thread::sleep(Duration::from_millis(10));
        };
        for reader in self.readers {
            reader.join().unwrap();
        }
        let take = |pipe: &Captured| std::mem::take(&mut *pipe.lock().unwrap());
        Done::from(Output { status, stdout: take(&self.stdout), stderr: take(&self.stderr) })
    }
}

/// Waits until the mock engine has received `n` POSTs, to any path.
fn wait_for_posts(sb: &Sandbox, n: usize) {
    let end = Instant::now() + LIMIT;
    while sb.engine.requests().iter().filter(|r| r.method == "POST").count() < n {
        assert!(Instant::now() < end, "the engine never got {n} request(s): {:?}", sb.engine.requests());
        thread::sleep(Duration::from_millis(10));
    }
}

/// A sandbox whose `[submit] stop_grace` is `grace`.
fn with_grace(grace: &str) -> Sandbox {
    let mut sb = Sandbox::new();
    sb.extra.push_str(&format!("\n[submit]\nstop_grace = \"{grace}\"\n"));
    sb.write_config();
    sb
}

fn posts(sb: &Sandbox) -> usize {
    sb.engine.requests().iter().filter(|r| r.method == "POST").count()
}

#[test]
fn sigterm_waits_for_an_answer_within_the_grace_records_it_and_claims_nothing_more() {
    let mut sb = Sandbox::new();
    // Two endpoints: two groups due, the second never claimed.
    sb.endpoints.push(format!("{}/indexnow2", sb.engine.url()));
    sb.write_config();
    let slow = MockResponse::status(200).delay(Duration::from_millis(1500));
    sb.engine.on("POST", ENDPOINT_PATH, vec![slow.clone()]);
    sb.engine.on("POST", "/indexnow2", vec![slow]);
    let list = sb.urls("urls.txt", &["/a", "/b"]);
    let metrics = sb.dir.path().join("indexq.prom");
    let args = ["submit", "--metrics-file", metrics.to_str().unwrap(), list.to_str().unwrap()];
    let run = Running::start(sb.indexq(&args).now(NOW));
    wait_for_posts(&sb, 1);
    run.signal(libc::SIGTERM);
    let done = run.finish().code(143);

    assert_eq!(posts(&sb), 1, "the second group, due, was not claimed");
    assert!(done.stdout.contains(": 2 URLs accepted."), "the answer is reported:\n{}", done.stdout);
    assert!(
        done.stdout.contains(
            "interrupted by SIGTERM: claimed nothing more; every request sent was answered; 2 URLs stay in the queue."
        ),
        "{}",
        done.stdout
    );
    assert!(done.stderr.contains("indexq: SIGTERM: stopping — nothing more is claimed"), "{}", done.stderr);

    // The ledger: the answer recorded as in any run, the rest due.
    let queue = sb.indexq(&["--json", "queue", "list", "--state", "accepted,due"]).now(NOW).output().code(0);
    let states: Vec<json::ItemState> = queue.queue_doc().items.iter().map(|i| i.state).collect();
    assert_eq!(states.iter().filter(|s| **s == json::ItemState::Accepted).count(), 2, "{states:?}");
    assert_eq!(states.iter().filter(|s| **s == json::ItemState::Due).count(), 2, "{states:?}");
    // The run record and the metrics file say how it ended.
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(text.contains("\nindexq_last_run_exit_code 143\n"), "{text}");
    let prom = sb.indexq(&["status", "--format", "prometheus"]).now(NOW).output().code(0);
    assert!(prom.stdout.contains("\nindexq_last_run_exit_code 143\n"), "{}", prom.stdout);
}

#[test]
fn an_answer_not_come_within_the_grace_is_interrupted_counted_and_waits_for_the_lease() {
    let sb = with_grace("1s");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).hang()]);
    let list = sb.urls("urls.txt", &["/a", "/b"]);
    let run = Running::start(sb.indexq(&["-q", "submit", list.to_str().unwrap()]).now(NOW));
    wait_for_posts(&sb, 1);
    let signalled = Instant::now();
    run.signal(libc::SIGTERM);
    let done = run.finish().code(143);
    let took = signalled.elapsed();
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(8), "about the grace: {took:?}");

    // Quiet, and still said.
    assert!(
        done.stdout.contains(
            "interrupted by SIGTERM: claimed nothing more; 1 request (2 URLs) not answered within 1 s is recorded as \
             interrupted (counted as used; sent again after 2026-12-03 09:10"
        ),
        "{}",
        done.stdout
    );
    assert!(done.stdout.trim_end().ends_with("; 0 URLs stay in the queue."), "{}", done.stdout);
    assert!(!done.stderr.contains("stopping"), "-q: no acknowledgement on stderr: {}", done.stderr);

    // Recorded as interrupted, counted against the day.
    let log = sb.indexq(&["--json", "log", "--url", &sb.url("/a")]).now(NOW).output().code(0).log_doc();
    let reasons: Vec<(json::Class, &str)> = log.attempts.iter().map(|a| (a.outcome, a.reason.as_str())).collect();
    assert_eq!(reasons, [(json::Class::Transient, "interrupted")]);
    let status = sb.indexq(&["--json", "status"]).now("2026-12-03T09:01:00Z").output().code(0).status_doc();
    assert_eq!(status.budgets[0].used, 2, "the engine may have them: counted");
    assert_eq!((status.queue.due, status.queue.waiting), (0, 2));

    // A run right after does not send them again: they wait for the lease (10 min).
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T09:01:00Z").output().code(0).submit_doc();
    assert_eq!(posts(&sb), 1, "not sent again within the lease");
    assert_eq!(doc.interrupted, None, "no signal, no `interrupted`");
    let queue = sb.indexq(&["--json", "queue", "list"]).now("2026-12-03T09:01:00Z").output().code(0).queue_doc();
    for item in &queue.items {
        let at = item.next_attempt_at.as_deref().unwrap();
        assert!(at > "2026-12-03T09:10:00" && at < "2026-12-03T09:10:59", "the lease's end: {item:?}");
    }
    // Past the lease's end they go.
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T09:12:00Z").output().code(0).submit_doc();
    assert_eq!(doc.summary.accepted, 2);
    assert_eq!(doc.result_for(&sb.url("/a")).attempts, 2);
    assert_eq!(posts(&sb), 2);
    // Still counted once each in the day.
    let status = sb.indexq(&["--json", "status"]).now("2026-12-03T09:13:00Z").output().code(0).status_doc();
    assert_eq!(status.budgets[0].used, 4, "the interrupted request and the one that was answered");
}

#[test]
fn sigint_exits_130_with_the_interruption_in_the_json_document() {
    let sb = with_grace("1s");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).hang()]);
    let list = sb.urls("urls.txt", &["/a", "/b", "/c"]);
    let run = Running::start(sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW));
    wait_for_posts(&sb, 1);
    run.signal(libc::SIGINT);
    let done = run.finish().code(130);
    let doc = done.submit_doc();
    let interrupted = doc.interrupted.clone().expect("the `interrupted` field");
    assert_eq!(
        (interrupted.signal, interrupted.grace_secs, interrupted.unanswered_requests, interrupted.unanswered_urls),
        (json::Signal::Int, 1, 1, 3)
    );
    assert_eq!((interrupted.unsent_urls, interrupted.queued, interrupted.input_cut), (0, 0, false));
    let retry_at = interrupted.retry_at.expect("when they go again");
    assert!(retry_at.starts_with("2026-12-03T09:10:"), "{retry_at}");
    assert_eq!(doc.summary.transient, 3);
    let a = doc.result_for(&sb.url("/a"));
    assert_eq!(
        (a.outcome, a.reason.as_str(), a.retry_at.as_deref()),
        (json::Outcome::Transient, "interrupted", Some(&*retry_at))
    );
}

#[test]
fn a_second_signal_ends_the_run_at_once_and_the_next_run_reconciles() {
    let sb = with_grace("60s");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).hang()]);
    let list = sb.urls("urls.txt", &["/a"]);
    let run = Running::start(sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW));
    wait_for_posts(&sb, 1);
    run.signal(libc::SIGINT);
    run.wait_for_stderr("indexq: SIGINT: stopping");
    let again = Instant::now();
    run.signal(libc::SIGTERM);
    let done = run.finish().code(130);
    assert!(again.elapsed() < Duration::from_secs(10), "at once, not after the 60 s grace: {:?}", again.elapsed());
    assert!(done.stderr.contains("indexq: a second signal (SIGTERM): stopping at once"), "{}", done.stderr);
    // The request is still in flight in the ledger: the next run reconciles it.
    let queue = sb.indexq(&["--json", "queue", "list"]).now(NOW).output().code(0).queue_doc();
    assert_eq!(queue.items[0].state, json::ItemState::InFlight);
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let next = sb.indexq(&["submit"]).now("2026-12-03T09:01:00Z").output().code(0);
    assert!(next.stderr.contains("1 URL left in flight by a run that stopped"), "{}", next.stderr);
}

#[test]
fn a_stop_while_reading_a_sitemap_keeps_what_was_read_and_sends_nothing() {
    let sb = Sandbox::new();
    sb.site.on("GET", "/sitemap.xml", vec![MockResponse::status(200).hang()]);
    let list = sb.urls("urls.txt", &["/a"]);
    let sitemap = format!("{}/sitemap.xml", sb.site.url());
    let args = ["submit", list.to_str().unwrap(), "--sitemap", &sitemap];
    let run = Running::start(sb.indexq(&args).now(NOW));
    assert!(sb.site.wait_for_requests("GET", "/sitemap.xml", 1, LIMIT), "the sitemap is being read");
    run.signal(libc::SIGTERM);
    let done = run.finish().code(143);
    assert!(
        done.stdout.contains(
            "interrupted by SIGTERM: claimed nothing more; the input was not read to its end (what was read is in \
             the ledger); every request sent was answered; 1 URL stays in the queue."
        ),
        "{}",
        done.stdout
    );
    assert!(!done.stdout.contains("Nothing to send"), "there was, but the run stopped: {}", done.stdout);
    assert_eq!(posts(&sb), 0, "nothing claimed after the stop");
    let queue = sb.indexq(&["--json", "queue", "list"]).now(NOW).output().code(0).queue_doc();
    let items: Vec<(&str, json::ItemState)> = queue.items.iter().map(|i| (i.url.as_str(), i.state)).collect();
    assert_eq!(items, [(sb.url("/a").as_str(), json::ItemState::Due)], "the URL read is in the ledger");
}

#[test]
fn a_dry_run_stops_cleanly_with_the_plan_of_what_was_read() {
    let sb = Sandbox::new();
    sb.site.on("GET", "/sitemap.xml", vec![MockResponse::status(200).hang()]);
    let list = sb.urls("urls.txt", &["/a"]);
    let sitemap = format!("{}/sitemap.xml", sb.site.url());
    let run =
        Running::start(sb.indexq(&["submit", "--dry-run", list.to_str().unwrap(), "--sitemap", &sitemap]).now(NOW));
    assert!(sb.site.wait_for_requests("GET", "/sitemap.xml", 1, LIMIT), "the sitemap is being read");
    run.signal(libc::SIGINT);
    let done = run.finish().code(130);
    assert!(done.stdout.contains("Dry run: nothing is sent"), "{}", done.stdout);
    assert!(done.stdout.contains(": 1 URL would go now."), "{}", done.stdout);
    assert!(
        done.stdout
            .contains("interrupted by SIGINT: the input was not read to its end; the plan covers what was read."),
        "{}",
        done.stdout
    );
    assert_eq!(posts(&sb), 0);
}

#[test]
fn google_urls_whose_paced_slot_had_not_come_are_not_sent_and_cost_nothing() {
    let mut sb = Sandbox::google("daily_quota = 100");
    // A burst of 4 now, then one every 6 s: the stop comes before the fifth.
    sb.google_extra = "daily_quota = 1000\nrequests_per_minute = 10\n".into();
    sb.write_config();
    let paths: Vec<String> = (1..=8).map(|i| format!("/g{i}")).collect();
    let list = sb.urls("urls.txt", &paths.iter().map(String::as_str).collect::<Vec<_>>());
    let run = Running::start(sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW));
    assert!(sb.engine.wait_for_requests("POST", GOOGLE_PUBLISH, 4, LIMIT), "the burst went");
    run.signal(libc::SIGTERM);
    let doc = run.finish().code(143).submit_doc();
    assert_eq!(sb.google_published().len(), 4, "no paced slot was used after the stop");
    assert_eq!(doc.summary.accepted, 4, "the burst's answers are recorded");
    let interrupted = doc.interrupted.clone().expect("the `interrupted` field");
    assert_eq!((interrupted.unanswered_requests, interrupted.unsent_urls, interrupted.queued), (0, 4, 4));
    let unsent = doc.with_outcome(json::Outcome::Transient);
    assert_eq!(unsent.len(), 4);
    assert!(unsent.iter().all(|r| r.reason == "interrupted" && r.message.starts_with("not sent")), "{unsent:#?}");

    // Their budget is given back, and they are due again.
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    let day = status.budgets.iter().find(|b| b.scope == json::Scope::Property && b.period == json::Period::Day);
    assert_eq!(day.expect("the property's day").used, 4, "only what was sent counts");
    assert_eq!(status.queue.due, 4);
}
