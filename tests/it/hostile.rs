//! Hostile engines: answers that misbehave on the wire (resets, silence, a
//! body dripped a byte a second, a 10 MB body, truncated or mislabelled JSON,
//! redirect loops, absurd `Retry-After`s, a 5xx storm) and the same from the
//! key file and Google's token endpoint. Each run must end within its
//! timeouts, classify the failure, schedule a bounded retry (never 0, never
//! past the class's cap) and store at most 64 KiB of any body.

use crate::support::mock::MockResponse;
use crate::support::*;
use serde_json::Value;
use std::time::{Duration, Instant};

const NOW: &str = "2026-12-03T09:00:00Z";
/// Every run here has short timeouts, so a run that hangs shows at once.
const HTTP: &str = "[http]\ntimeout = \"2s\"\nconnect_timeout = \"1s\"\n";
/// The longest a run with these timeouts may take.
const RUN_LIMIT: Duration = Duration::from_secs(10);
/// The most of a response body the ledger keeps.
const BODY_CAP: usize = 65_536;
/// The default `[retry] transient_first` and `transient_cap`.
const TRANSIENT_FIRST: i64 = 30;
const TRANSIENT_CAP: i64 = 6 * 3600;
/// The cap on a quota `Retry-After`: 31 days.
const QUOTA_CAP: i64 = 31 * 24 * 3600;

/// Short HTTP timeouts plus `retry` (extra `[retry]` TOML, may be empty).
fn harden(sb: &mut Sandbox, retry: &str) {
    sb.extra = format!("{HTTP}\n{retry}\n");
    sb.write_config();
}

/// `submit --json --max-wait MAX_WAIT` of `paths` at `now`, timed; checks the exit code.
fn submit_timed(sb: &Sandbox, paths: &[&str], max_wait: &str, now: &str, code: i32) -> (Value, Duration) {
    let list = sb.urls("urls.txt", paths);
    let started = Instant::now();
    let done = sb.indexq(&["--json", "submit", "--max-wait", max_wait, list.to_str().unwrap()]).now(now).output();
    let elapsed = started.elapsed();
    let done = done.code(code);
    assert!(elapsed < RUN_LIMIT, "the run ends within its timeouts: took {elapsed:?}\n{}", done.stdout);
    (done.json(), elapsed)
}

/// The one result for `path` of a one-shot run (`--max-wait 0`, exit `code`).
fn one(sb: &Sandbox, path: &str, code: i32) -> Value {
    let (doc, _) = submit_timed(sb, &[path], "0", NOW, code);
    result_for(&results(&doc), &sb.url(path)).clone()
}

/// Asserts a transient verdict with a retry 1 s to `max` seconds away.
fn assert_transient(r: &Value, max: i64) -> i64 {
    assert_eq!(r["outcome"], "transient", "{r:#}");
    assert!(r["retry_at"].is_string(), "a retry is scheduled: {r:#}");
    let secs = r["retry_after_secs"].as_i64().unwrap_or_else(|| panic!("retry_after_secs: {r:#}"));
    assert!((1..=max).contains(&secs), "retry in {secs} s, expected 1..={max}: {r:#}");
    secs
}

/// The stored bodies of every attempt for `path` (`log --json --url`).
fn stored_bodies(sb: &Sandbox, path: &str) -> Vec<String> {
    let log = sb.indexq(&["--json", "log", "--url", &sb.url(path)]).now(NOW).output().code(0).log_doc();
    assert!(!log.attempts.is_empty(), "the attempt is logged: {log:#?}");
    log.attempts.into_iter().map(|a| a.body.unwrap_or_default()).collect()
}

// ---- 1-5: the transport misbehaves -------------------------------------

#[test]
fn a_reset_before_any_answer_is_transient() {
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).reset_before()]);
    let r = one(&sb, "/a", 0);
    assert_transient(&r, TRANSIENT_FIRST);
    // The connection was made, then dropped: `network` (not `connect`).
    assert_eq!(r["reason"], "network", "{r:#}");
    assert!(r.get("http_status").is_none(), "no answer came: {r:#}");
    assert_eq!(sb.engine.requests().len(), 1, "no retry within --max-wait 0");
}

#[test]
fn a_reset_in_the_middle_of_the_body_is_transient() {
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(503).body(&"x".repeat(4096)).reset_mid_body()]);
    let r = one(&sb, "/a", 0);
    assert_transient(&r, TRANSIENT_FIRST);
    assert_eq!(sb.engine.requests().len(), 1);
}

#[test]
fn a_200_whose_body_is_cut_off_is_not_taken_as_accepted_silently() {
    // The status line said 200 but the connection died mid-body: the answer is
    // incomplete, so the submission is retried (transient), never lost.
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).json(&"x".repeat(4096)).reset_mid_body()]);
    let r = one(&sb, "/a", 0);
    assert_transient(&r, TRANSIENT_FIRST);
    assert_eq!(r["reason"], "network", "the body read failed: {r:#}");
    assert_eq!(sb.engine.requests().len(), 1);
}

#[test]
fn a_200_with_a_truncated_body_is_transient() {
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).json(r#"{"ok":true}"#).truncated()]);
    let r = one(&sb, "/a", 0);
    assert_transient(&r, TRANSIENT_FIRST);
    assert_eq!(r["reason"], "network", "the body read failed: {r:#}");
    assert_eq!(sb.engine.requests().len(), 1);
}

#[test]
fn a_truncated_body_is_transient() {
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(503).body("<html>busy").truncated()]);
    let r = one(&sb, "/a", 0);
    assert_transient(&r, TRANSIENT_FIRST);
    assert_eq!(sb.engine.requests().len(), 1);
}

#[test]
fn a_server_that_accepts_and_never_answers_times_out() {
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).hang()]);
    let list = sb.urls("urls.txt", &["/a"]);
    let started = Instant::now();
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0", list.to_str().unwrap()]).now(NOW).output().code(0);
    let elapsed = started.elapsed();
    // timeout 2 s + a margin for start-up and the ledger.
    assert!(elapsed < Duration::from_secs(7), "ends within timeout + margin: {elapsed:?}");
    assert!(elapsed >= Duration::from_millis(1500), "it did wait for the timeout: {elapsed:?}");
    let r = result_for(&results(&done.json()), &sb.url("/a")).clone();
    assert_transient(&r, TRANSIENT_FIRST);
    assert_eq!(r["reason"], "timeout", "{r:#}");
    assert_eq!(sb.engine.requests().len(), 1);
}

#[test]
fn a_body_dripped_a_byte_a_second_times_out() {
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    let body = format!("{{\"message\":\"{}\"}}", "y".repeat(16));
    assert_eq!(body.len(), 30);
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).json(&body).drip(Duration::from_secs(1))]);
    let (doc, elapsed) = submit_timed(&sb, &["/a"], "0", NOW, 0);
    assert!(elapsed < Duration::from_secs(7), "the 2 s timeout covers the body, not just the head: {elapsed:?}");
    let r = result_for(&results(&doc), &sb.url("/a")).clone();
    assert_transient(&r, TRANSIENT_FIRST);
    assert_eq!(r["reason"], "timeout", "{r:#}");
    assert_eq!(sb.engine.requests().len(), 1);
}

#[test]
fn a_10_mb_body_with_a_503_is_transient_and_stored_capped_at_64_kib() {
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(503).bytes(&vec![b'x'; 10_000_000])]);
    let r = one(&sb, "/a", 0);
    assert_transient(&r, TRANSIENT_FIRST);
    assert_eq!(r["http_status"], 503);
    assert_eq!(sb.engine.requests().len(), 1);
    let bodies = stored_bodies(&sb, "/a");
    assert_eq!(bodies.len(), 1);
    assert!(bodies[0].len() <= BODY_CAP, "stored body is {} bytes", bodies[0].len());
    assert!(bodies[0].starts_with("xxxx"), "the start of the body is kept");
}

// ---- 6-9: the answer is malformed -------------------------------------

#[test]
fn indexnow_200_with_truncated_json_is_accepted() {
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).json(r#"{"a":"#)]);
    let r = one(&sb, "/a", 0);
    assert_eq!(r["outcome"], "accepted", "{r:#}");
    assert_eq!(r["http_status"], 200);
    assert!(r.get("retry_at").is_none());
}

#[test]
fn bing_400_with_truncated_json_is_misconfigured_http_400() {
    let mut sb = Sandbox::bing("");
    harden(&mut sb, "");
    sb.engine.on("POST", BING_SUBMIT, vec![MockResponse::status(400).json(r#"{"a":"#)]);
    let r = one(&sb, "/a", 3);
    assert_eq!(r["outcome"], "misconfigured", "{r:#}");
    assert_eq!(r["reason"], "http_400", "{r:#}");
    assert!(r.get("retry_at").is_none(), "parked, not retried: {r:#}");
    assert_eq!(sb.engine.requests_to("POST", BING_SUBMIT).len(), 1);
}

#[test]
fn google_500_with_truncated_json_is_transient() {
    let mut sb = Sandbox::google("");
    harden(&mut sb, "");
    sb.engine.on("POST", GOOGLE_PUBLISH, vec![MockResponse::status(500).json(r#"{"a":"#)]);
    let r = one(&sb, "/a", 0);
    assert_transient(&r, TRANSIENT_FIRST);
    assert_eq!(r["http_status"], 500);
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_PUBLISH).len(), 1);
}

#[test]
fn bing_200_with_an_html_page_is_accepted_and_the_body_stored() {
    let mut sb = Sandbox::bing("");
    harden(&mut sb, "");
    let html = "<!DOCTYPE html><html><body><h1>Bing maintenance page 4471</h1></body></html>";
    sb.engine.on(
        "POST",
        BING_SUBMIT,
        vec![MockResponse::status(200).header("Content-Type", "text/html; charset=utf-8").body(html)],
    );
    let r = one(&sb, "/a", 0);
    assert_eq!(r["outcome"], "accepted", "{r:#}");
    assert_eq!(r["http_status"], 200);
    let bodies = stored_bodies(&sb, "/a");
    assert!(bodies.iter().any(|b| b.contains("Bing maintenance page 4471")), "{bodies:?}");
    let human = sb.indexq(&["log", "--url", &sb.url("/a")]).now(NOW).output().code(0);
    assert!(human.stdout.contains("Bing maintenance page 4471"), "{}", human.stdout);
}

#[test]
fn bing_error_code_is_read_whatever_the_content_type() {
    let mut sb = Sandbox::bing("");
    harden(&mut sb, "");
    sb.engine.on(
        "POST",
        BING_SUBMIT,
        vec![MockResponse::status(400)
            .header("Content-Type", "text/plain")
            .body(r#"{"ErrorCode":3,"Message":"ERROR!!! InvalidApiKey"}"#)],
    );
    let r = one(&sb, "/a", 3);
    assert_eq!(r["outcome"], "misconfigured", "{r:#}");
    assert_eq!(r["reason"], "InvalidApiKey", "{r:#}");
    assert!(r["hint"].is_string(), "{r:#}");
}

#[test]
fn a_redirect_loop_on_the_endpoint_is_misconfigured_and_not_followed() {
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    let endpoint = sb.endpoints[0].clone();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(302).header("Location", &endpoint)]);
    let r = one(&sb, "/a", 3);
    assert_eq!(r["outcome"], "misconfigured", "{r:#}");
    assert_eq!(r["reason"], "redirect", "{r:#}");
    assert_eq!(r["http_status"], 302);
    assert_eq!(sb.engine.requests().len(), 1, "the redirect is not followed");
}

// ---- 10: Retry-After, parsed and bounded ------------------------------

/// The retry scheduled after one `status` answer with `Retry-After: value`.
fn retry_after(status: u16, value: &str) -> Value {
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(status).header("Retry-After", value)]);
    let r = one(&sb, "/a", 0);
    assert_eq!(sb.engine.requests().len(), 1);
    r
}

#[test]
fn retry_after_in_seconds_is_used() {
    let r = retry_after(503, "120");
    assert_eq!(assert_transient(&r, TRANSIENT_CAP), 120, "{r:#}");
    // 120 s after the answer came: the pinned clock moves on with the run (a second or two on a busy machine).
    let retry_at: chrono::DateTime<chrono::Utc> = r["retry_at"].as_str().unwrap().parse().unwrap();
    let pinned: chrono::DateTime<chrono::Utc> = "2026-12-03T09:02:00Z".parse().unwrap();
    assert!((0..=5).contains(&(retry_at - pinned).num_seconds()), "{r:#}");
}

#[test]
fn retry_after_as_an_http_date_is_used() {
    let r = retry_after(503, "Thu, 03 Dec 2026 10:00:00 GMT");
    let secs = assert_transient(&r, TRANSIENT_CAP);
    assert!((3598..=3600).contains(&secs), "an hour after the pinned clock: {r:#}");
    assert_eq!(r["retry_at"], "2026-12-03T10:00:00+00:00", "{r:#}");
}

#[test]
fn an_absurd_retry_after_on_a_503_is_capped_at_the_transient_cap() {
    for value in ["315360000", "Wed, 03 Dec 2036 09:00:00 GMT"] {
        let r = retry_after(503, value);
        let secs = assert_transient(&r, TRANSIENT_CAP);
        assert!(secs >= TRANSIENT_CAP - 2, "ten years ({value}) is capped at 6 h, not ignored: {r:#}");
    }
}

#[test]
fn a_negative_retry_after_is_ignored() {
    let r = retry_after(503, "-5");
    assert_transient(&r, TRANSIENT_FIRST);
}

#[test]
fn a_garbage_retry_after_is_ignored() {
    let r = retry_after(503, "soon");
    assert_transient(&r, TRANSIENT_FIRST);
}

#[test]
fn an_absurd_retry_after_on_a_429_is_capped_at_31_days() {
    for value in ["315360000", "Wed, 03 Dec 2036 09:00:00 GMT"] {
        let r = retry_after(429, value);
        assert_eq!(r["outcome"], "quota", "{r:#}");
        let secs = r["retry_after_secs"].as_i64().unwrap_or_else(|| panic!("{r:#}"));
        assert!((QUOTA_CAP - 2..=QUOTA_CAP).contains(&secs), "ten years ({value}) is capped at 31 days: {r:#}");
    }
}

// ---- 11: a 5xx storm ---------------------------------------------------

#[test]
fn a_5xx_storm_retries_a_bounded_number_of_times_then_gives_up_after_3_days() {
    let mut sb = Sandbox::new();
    harden(&mut sb, "[retry]\ntransient_first = \"1s\"\n");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(503)]);
    let (doc, elapsed) = submit_timed(&sb, &["/a"], "5s", NOW, 0);
    let r = result_for(&results(&doc), &sb.url("/a")).clone();
    let sent = sb.engine.requests().len();
    assert!((2..=8).contains(&sent), "a bounded number of attempts, no busy loop: {sent}");
    assert_eq!(r["attempts"].as_u64(), Some(sent as u64), "{r:#}");
    assert!(elapsed < Duration::from_secs(9), "max-wait 5 s + timeouts: {elapsed:?}");
    assert_transient(&r, TRANSIENT_CAP);

    // Two days on it is still retried, not parked.
    let (doc, _) = submit_timed(&sb, &[], "0", "2026-12-05T09:00:00Z", 0);
    let r = result_for(&results(&doc), &sb.url("/a")).clone();
    assert_transient(&r, TRANSIENT_CAP);
    assert_eq!(sb.engine.requests().len(), sent + 1);

    // Past the 3-day deadline it is parked for a human.
    let (doc, _) = submit_timed(&sb, &[], "0", "2026-12-06T09:00:10Z", 3);
    let r = result_for(&results(&doc), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "misconfigured", "{r:#}");
    assert_eq!(r["reason"], "gave_up", "{r:#}");
    assert!(r.get("retry_at").is_none(), "parked: {r:#}");
}

// ---- 12: the key file misbehaves ---------------------------------------

fn forbidden_with_key_file(key_file: MockResponse) {
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(403)]);
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![key_file]);
    let r = one(&sb, "/a", 3);
    assert_eq!(r["outcome"], "misconfigured", "{r:#}");
    assert_eq!(r["reason"], "key_file_unreachable", "{r:#}");
    assert!(r["hint"].is_string(), "{r:#}");
    assert_eq!(sb.engine.requests().len(), 1);
    assert_eq!(sb.site.requests_to("GET", &format!("/{KEY}.txt")).len(), 1);
}

#[test]
fn a_403_with_a_hanging_key_file_is_key_file_unreachable() {
    forbidden_with_key_file(MockResponse::status(200).body(KEY).hang());
}

#[test]
fn a_403_with_a_key_file_that_resets_is_key_file_unreachable() {
    forbidden_with_key_file(MockResponse::status(200).body(KEY).reset_before());
}

// ---- 13: Google's token endpoint misbehaves ------------------------------

fn google_token(token: MockResponse) {
    let mut sb = Sandbox::google("");
    harden(&mut sb, "");
    sb.engine.on("POST", GOOGLE_TOKEN, vec![token]);
    let (doc, _) = submit_timed(&sb, &["/a", "/b"], "0", NOW, 0);
    let results = results(&doc);
    assert_eq!(results.len(), 2, "{results:#?}");
    for r in &results {
        assert_transient(r, TRANSIENT_FIRST);
    }
    assert!(sb.engine.requests_to("POST", GOOGLE_PUBLISH).is_empty(), "nothing published");
    let asked = sb.engine.requests_to("POST", GOOGLE_TOKEN).len();
    assert!((1..=2).contains(&asked), "the token is asked for once (or retried once), not per URL: {asked}");
}

#[test]
fn a_hanging_token_endpoint_makes_google_items_transient() {
    google_token(MockResponse::status(200).hang());
}

#[test]
fn a_token_endpoint_500_makes_google_items_transient() {
    google_token(MockResponse::status(500).json(r#"{"error":"internal_failure"}"#));
}

// ---- 14: terminal control characters in what is shown --------------------

/// An OSC that retitles the window (ended by BEL), a clear-screen CSI, a C1
/// CSI (U+009B) and a carriage return that would overwrite the line.
const PWN: &str = "\x1b]0;pwned\x07\x1b[2J\u{9b}31m\rX";

/// Runs `run` and returns its stdout and stderr as bytes, checked for
/// secrets like every run's.
fn raw_output(mut run: Run) -> (Vec<u8>, Vec<u8>) {
    let out = run.cmd.output().unwrap();
    assert_no_secret(&out.stdout, "stdout");
    assert_no_secret(&out.stderr, "stderr");
    (out.stdout, out.stderr)
}

/// `PWN` as human output shows it.
const PWN_SHOWN: &str = "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{9b}31m\\u{d}X";

/// Asserts that human output holds no terminal control (but `\n` and `\t`),
/// raw or as a byte that is not UTF-8; returns it as text.
fn assert_no_control(bytes: &[u8], what: &str) -> String {
    let text = String::from_utf8(bytes.to_vec()).unwrap_or_else(|e| panic!("{what} is not UTF-8 (a raw byte): {e}"));
    let raw: Vec<char> = text.chars().filter(|c| c.is_control() && *c != '\n' && *c != '\t').collect();
    assert!(raw.is_empty(), "{what} holds raw control characters {raw:?}:\n{text}");
    text
}

/// `assert_no_control`, and `PWN` is shown escaped.
fn assert_escaped(bytes: &[u8], what: &str) -> String {
    let text = assert_no_control(bytes, what);
    assert!(text.contains(PWN_SHOWN), "{what} shows them escaped:\n{text}");
    text
}

#[test]
fn control_characters_from_lists_sitemaps_answers_and_the_ledger_are_shown_escaped() {
    let mut sb = Sandbox::new();
    harden(&mut sb, "");
    // An engine answer that parks the URL, its body full of control sequences.
    sb.engine.on(
        "POST",
        ENDPOINT_PATH,
        vec![MockResponse::status(400).body(&format!("{PWN} bad request\nline 2 {PWN}"))],
    );
    sb.file("urls.txt", &format!("{}\n{PWN}not-a-url\n", sb.url("/a")));
    let sitemap = format!(
        "<?xml version=\"1.0\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
         <url><loc>{PWN}sitemap-loc</loc></url>\n</urlset>\n"
    );
    sb.file("sitemap.xml", &sitemap);

    // submit: the list line and the <loc> (stderr), with and without -q.
    let (stdout, stderr) =
        raw_output(sb.indexq(&["submit", "--max-wait", "0", "urls.txt", "--sitemap", "sitemap.xml"]).now(NOW));
    // (An answer's message quotes its body with controls replaced already.)
    assert_no_control(&stdout, "submit's stdout");
    let told = assert_escaped(&stderr, "submit's stderr");
    assert!(told.contains("urls.txt:2:") && told.contains("sitemap.xml:3:"), "{told}");
    assert_eq!(told.matches(PWN_SHOWN).count(), 2, "the line and the <loc>, each once:\n{told}");
    assert_eq!(sb.engine.requests().len(), 1, "the good URL was sent");
    let (stdout, stderr) = raw_output(sb.indexq(&["-q", "submit", "urls.txt", "--sitemap", "sitemap.xml"]).now(NOW));
    assert_no_control(&stdout, "submit -q's stdout");
    let told = assert_escaped(&stderr, "submit -q's stderr");
    assert_eq!(told.matches(PWN_SHOWN).count(), 2, "{told}");

    // What the ledger holds is shown escaped too: the stored body (`log`)
    // as it came, and a message (on a ledger another machine or an older
    // indexq wrote).
    let (stdout, _) = raw_output(sb.indexq(&["log"]).now(NOW));
    let log = assert_escaped(&stdout, "log");
    assert!(log.contains("    | line 2 "), "a line break in the body stays one:\n{log}");
    let conn = rusqlite::Connection::open(sb.ledger()).unwrap();
    conn.execute("UPDATE requests SET message = ?1", [format!("refused: {PWN}")]).unwrap();
    drop(conn);
    for args in [&["log"][..], &["queue", "list"], &["status"]] {
        let (stdout, stderr) = raw_output(sb.indexq(args).now(NOW));
        assert_escaped(&stdout, &format!("`{}`", args.join(" ")));
        assert!(String::from_utf8(stderr).unwrap().is_empty());
    }
    // JSON keeps the text as it is, in JSON's own escapes.
    let doc = sb.indexq(&["--json", "queue", "list"]).now(NOW).output().code(0).json();
    assert_eq!(doc["items"][0]["message"], format!("refused: {PWN}"), "{doc:#}");
}
