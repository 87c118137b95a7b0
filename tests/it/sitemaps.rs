//! The sitemap channel (issue 25): a property's remote sitemap, when it
//! changed, goes to Search Console (`PUT …/webmasters/v3/sites/{siteUrl}/
//! sitemaps/{feedpath}`) and Bing (`SubmitFeed`) through the ledger — once
//! per change, a day after the last submission at the earliest, across
//! runs and processes — every answer classified with its fix; the
//! engines' reports (`sitemaps.get`, `GetFeeds`) are read back, shown by
//! `status`, and what they say a human must look at is said like a parked
//! item until it is resolved.

use crate::support::mock::{MockResponse, MockServer, Request};
use crate::support::sitemap::Sitemap;
use crate::support::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

const DAY1: &str = "2026-12-03T09:00:00Z";
const DAY1_LATER: &str = "2026-12-03T10:00:00Z";
const DAY1_EVENING: &str = "2026-12-03T20:00:00Z";
const DAY2: &str = "2026-12-04T09:00:01Z";
const DAY2_LATER: &str = "2026-12-04T10:00:00Z";

/// One path segment as Google's client libraries encode `siteUrl` and
/// `feedpath`: every byte but RFC 3986's unreserved characters as `%XX`
/// (written out here, apart from the binary's encoder).
fn segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The path of `sitemaps.submit` and `sitemaps.get`.
fn sitemaps_path(site_url: &str, sitemap: &str) -> String {
    format!("/webmasters/v3/sites/{}/sitemaps/{}", segment(site_url), segment(sitemap))
}

/// What a mock Search Console says of a sitemap: its `sitemaps.get`
/// resource (`None`: not listed, a 404) and the answer to the next PUTs.
struct SearchConsole {
    report: Arc<Mutex<Option<Value>>>,
}

impl SearchConsole {
    /// Serves `sitemaps.submit` (204, or `submit` in order) and
    /// `sitemaps.get` at the path of `site_url` and `sitemap` on `engine`.
    fn serve(engine: &MockServer, site_url: &str, sitemap: &str, submit: Vec<MockResponse>) -> SearchConsole {
        let path = sitemaps_path(site_url, sitemap);
        engine.on("PUT", &path, submit);
        let report: Arc<Mutex<Option<Value>>> = Arc::default();
        let served = Arc::clone(&report);
        engine.respond_with("GET", &path, move |_| match served.lock().unwrap().clone() {
            Some(resource) => MockResponse::status(200).json(&resource.to_string()),
            None => MockResponse::status(404)
                .json(r#"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}"#),
        });
        SearchConsole { report }
    }

    /// From now on `sitemaps.get` answers this resource (as Google documents
    /// it, counts as int64 strings).
    fn reports(&self, submitted: &str, downloaded: Option<&str>, errors: u64, warnings: u64) {
        let mut resource = json!({
            "path": "set by the caller",
            "lastSubmitted": submitted,
            "isPending": downloaded.is_none(),
            "isSitemapsIndex": false,
            "type": "sitemap",
            "warnings": warnings.to_string(),
            "errors": errors.to_string(),
            "contents": [{ "type": "web", "submitted": "2", "indexed": "0" }],
        });
        if let Some(at) = downloaded {
            resource["lastDownloaded"] = json!(at);
        }
        *self.report.lock().unwrap() = Some(resource);
    }
}

/// A property that sends nothing but its sitemap to Google (`indexing =
/// false`, `google` table extra: `table`), its source the site's sitemap
/// with two pages; Search Console takes it (204) and lists it downloaded.
fn google_sandbox(table: &str) -> (Sandbox, Sitemap, SearchConsole, String) {
    let mut sb = Sandbox::google(&format!("indexing = false{table}"));
    let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
    sitemap.add("/a", Some("2026-12-01"));
    sitemap.add("/b", None);
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.write_config();
    let site_url = table
        .split("site_url = \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map_or_else(|| sb.site_url(), str::to_string);
    let console = SearchConsole::serve(&sb.engine, &site_url, &sb.url("/sitemap.xml"), vec![MockResponse::status(204)]);
    console.reports("2026-12-03T09:00:00.000Z", Some("2026-12-03T09:00:03.000Z"), 0, 0);
    (sb, sitemap, console, site_url)
}

fn puts(sb: &Sandbox, site_url: &str) -> Vec<Request> {
    sb.engine.requests_to("PUT", &sitemaps_path(site_url, &sb.url("/sitemap.xml")))
}

#[test]
fn a_sitemap_goes_to_search_console_at_its_exact_path_once_per_change_a_day_apart() {
    let (sb, sitemap, _console, site_url) = google_sandbox("");
    let done = sb.indexq(&["--json", "submit"]).now(DAY1).output().code(0);
    let doc = done.submit_doc();
    let r = doc.result_for(&sb.url("/sitemap.xml"));
    assert_eq!(
        (r.outcome, r.reason.as_str(), r.channel),
        (json::Outcome::Accepted, "ok", Some(json::Channel::Sitemaps))
    );
    assert_eq!(r.engine, Some(json::Engine::Google));
    // The exact path: both segments percent-encoded, `:` and `/` included.
    let expected = format!(
        "/webmasters/v3/sites/http%3A%2F%2F127.0.0.1%3A{port}%2F/sitemaps/http%3A%2F%2F127.0.0.1%3A{port}%2Fsitemap.xml",
        port = sb.site.port()
    );
    assert_eq!(sitemaps_path(&site_url, &sb.url("/sitemap.xml")), expected);
    let [put] = puts(&sb, &site_url).try_into().unwrap();
    assert_eq!(put.path, expected, "no query, nothing decoded");
    assert_eq!(put.header("authorization"), Some(format!("Bearer {GOOGLE_ACCESS_TOKEN}").as_str()));
    assert_eq!((put.body.as_str(), put.header("content-length")), ("", Some("0")), "no body");
    // The token asked only for Search Console (no Indexing API for this property), nothing published.
    let token = &sb.engine.requests_to("POST", GOOGLE_TOKEN)[0];
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(token.body.as_bytes()).into_owned().collect();
    let claims = form["assertion"].split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(&base64url(claims)).unwrap();
    assert_eq!(claims["scope"], "https://www.googleapis.com/auth/webmasters");
    assert!(sb.google_published().is_empty(), "a sitemap property publishes no URL");

    // Unchanged, an hour later: a 304, nothing submitted.
    sb.indexq(&["submit"]).now(DAY1_LATER).output().code(0);
    assert_eq!(puts(&sb, &site_url).len(), 1);
    // Changed the same day: it waits for the day after the submission,
    // and a second change meanwhile goes with it.
    sitemap.add("/c", Some("2026-12-03"));
    let done = sb.indexq(&["--json", "submit"]).now(DAY1_LATER).output().code(0);
    assert!(done.submit_doc().results.iter().all(|r| r.channel.is_none()), "nothing to say of a waiting sitemap");
    sitemap.touch("/a", "2026-12-03T19:00:00Z");
    sb.indexq(&["submit"]).now(DAY1_EVENING).output().code(0);
    assert_eq!(puts(&sb, &site_url).len(), 1, "a day apart at the least");
    let status = sb.indexq(&["--json", "status"]).now(DAY1_EVENING).output().code(0).status_doc();
    let sitemap_group = status.groups.iter().find(|g| g.queue.waiting == 1).expect("the sitemap waits");
    assert_eq!(sitemap_group.engine, json::Engine::Google);
    // A day after the submission it goes, once, with both changes.
    sb.indexq(&["submit"]).now(DAY2).output().code(0);
    assert_eq!(puts(&sb, &site_url).len(), 2);
    for _ in 0..3 {
        sb.indexq(&["submit"]).now(DAY2_LATER).output().code(0);
    }
    assert_eq!(puts(&sb, &site_url).len(), 2, "once per change, however many runs");
}

/// The payload of a JWT part.
fn base64url(part: &str) -> Vec<u8> {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bits: u32 = 0;
    let mut n = 0;
    let mut out = Vec::new();
    for c in part.bytes().filter(|c| *c != b'=') {
        let v = alphabet.iter().position(|a| *a == c).unwrap() as u32;
        bits = (bits << 6) | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    out
}

#[test]
fn a_domain_property_is_sc_domain_in_the_path() {
    let (sb, _sitemap, _console, site_url) = google_sandbox(r#", site_url = "sc-domain:example.com""#);
    assert_eq!(site_url, "sc-domain:example.com");
    sb.indexq(&["submit"]).now(DAY1).output().code(0);
    let [put] = puts(&sb, &site_url).try_into().unwrap();
    let expected = format!(
        "/webmasters/v3/sites/sc-domain%3Aexample.com/sitemaps/http%3A%2F%2F127.0.0.1%3A{}%2Fsitemap.xml",
        sb.site.port()
    );
    assert_eq!(put.path, expected);
}

#[test]
fn a_property_with_indexing_and_sitemaps_asks_for_both_scopes_and_publishes_its_urls_too() {
    let mut sb = Sandbox::google("");
    let _sitemap = {
        let s = Sitemap::serve(&sb.site, "/sitemap.xml");
        s.add("/a", None);
        s
    };
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.write_config();
    let _console =
        SearchConsole::serve(&sb.engine, &sb.site_url(), &sb.url("/sitemap.xml"), vec![MockResponse::status(204)]);
    sb.indexq(&["submit"]).now(DAY1).output().code(0);
    assert_eq!(sb.google_published(), [(sb.url("/a"), "URL_UPDATED".to_string())]);
    assert_eq!(puts(&sb, &sb.site_url()).len(), 1);
    let tokens = sb.engine.requests_to("POST", GOOGLE_TOKEN);
    assert_eq!(tokens.len(), 1, "one token for both APIs");
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(tokens[0].body.as_bytes()).into_owned().collect();
    let claims: Value = serde_json::from_slice(&base64url(form["assertion"].split('.').nth(1).unwrap())).unwrap();
    assert_eq!(claims["scope"], "https://www.googleapis.com/auth/indexing https://www.googleapis.com/auth/webmasters");
}

#[test]
fn the_channel_is_opt_out_per_engine_and_property() {
    let (sb, _sitemap, _console, site_url) = google_sandbox(", sitemaps = true");
    // `sitemaps = false` with `indexing = false` sends nothing: refused.
    let mut off = Sandbox::google("indexing = false, sitemaps = false");
    off.property_extra = format!("sources = [\"{}\"]\n", off.url("/sitemap.xml"));
    off.write_config();
    let done = off.indexq(&["submit"]).now(DAY1).output().code(2);
    assert!(
        done.stderr.contains("`property[0].google`") && done.stderr.contains("sends nothing to Google"),
        "{}",
        done.stderr
    );
    // Off for the property (indexing on): its URLs go, its sitemap does not.
    let mut sb2 = Sandbox::google("sitemaps = false");
    let s = Sitemap::serve(&sb2.site, "/sitemap.xml");
    s.add("/a", None);
    sb2.property_extra = format!("sources = [\"{}\"]\n", sb2.url("/sitemap.xml"));
    sb2.write_config();
    sb2.indexq(&["submit"]).now(DAY1).output().code(0);
    assert_eq!(sb2.google_published().len(), 1);
    assert!(sb2.engine.requests().iter().all(|r| r.method != "PUT"), "no sitemap submitted");
    let status = sb2.indexq(&["--json", "status"]).now(DAY1).output().code(0).status_doc();
    assert!(status.sitemaps.is_empty());
    // Off under [google]: the same for every property.
    let mut sb3 = Sandbox::google("");
    sb3.google_extra = "sitemaps = false".into();
    let s3 = Sitemap::serve(&sb3.site, "/sitemap.xml");
    s3.add("/a", None);
    sb3.property_extra = format!("sources = [\"{}\"]\n", sb3.url("/sitemap.xml"));
    sb3.write_config();
    sb3.indexq(&["submit"]).now(DAY1).output().code(0);
    assert!(sb3.engine.requests().iter().all(|r| r.method != "PUT"));
    // On (the default, said outright here): submitted.
    sb.indexq(&["submit"]).now(DAY1).output().code(0);
    assert_eq!(puts(&sb, &site_url).len(), 1);
}

#[test]
fn bing_takes_the_sitemap_as_submit_feed_json_with_the_key_in_its_query() {
    let mut sb = Sandbox::bing("");
    let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
    sitemap.add("/a", None);
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.write_config();
    let doc = sb.indexq(&["--json", "submit"]).now(DAY1).output().code(0).submit_doc();
    let r = doc.result_for(&sb.url("/sitemap.xml"));
    assert_eq!(
        (r.engine, r.channel, r.outcome),
        (Some(json::Engine::Bing), Some(json::Channel::Sitemaps), json::Outcome::Accepted)
    );
    let [feed] = sb.engine.requests_to("POST", BING_SUBMIT_FEED).try_into().unwrap();
    assert_eq!(feed.json(), json!({ "siteUrl": sb.site_url(), "feedUrl": sb.url("/sitemap.xml") }));
    assert!(feed.header("content-type").is_some_and(|c| c.starts_with("application/json")));
    let query = feed.path.split_once('?').map(|(_, q)| q).unwrap_or_default();
    assert_eq!(query, format!("apikey={BING_KEY}"), "the key in the query string, as for SubmitUrlBatch");
    assert_eq!(sb.bing_received(), [sb.url("/a")], "the URLs still go by SubmitUrlBatch");
    // Read back: GetFeeds for the site, its entry shown by status.
    let [feeds] = sb.engine.requests_to("GET", BING_GET_FEEDS).try_into().unwrap();
    let params: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(feeds.path.split_once('?').unwrap().1.as_bytes()).into_owned().collect();
    assert_eq!((params["siteUrl"].as_str(), params["apikey"].as_str()), (sb.site_url().as_str(), BING_KEY));
    let status = sb.indexq(&["--json", "status"]).now(DAY1_LATER).output().code(0).status_doc();
    let [s] = status.sitemaps.as_slice() else { panic!("{:?}", status.sitemaps) };
    assert_eq!((s.engine, s.sitemap.as_str()), (json::Engine::Bing, sb.url("/sitemap.xml").as_str()));
    assert_eq!((s.listed, s.errors, s.urls, s.status.as_deref()), (Some(true), Some(0), Some(3), Some("Success")));
    assert_eq!(s.downloaded_at.as_deref(), Some("2100-01-01T00:00:00+00:00"));
}

#[test]
fn two_processes_submit_a_changed_sitemap_once() {
    let (sb, sitemap, _console, site_url) = google_sandbox("");
    sb.indexq(&["submit"]).now(DAY1).output().code(0);
    sitemap.add("/c", None);
    // Search Console takes its time: both runs overlap.
    let path = sitemaps_path(&site_url, &sb.url("/sitemap.xml"));
    sb.engine.on("PUT", &path, vec![MockResponse::status(204).delay(std::time::Duration::from_millis(700))]);
    let fetched = sb.site.requests_to("GET", "/sitemap.xml").len();
    let runs: Vec<_> = (0..2).map(|_| sb.indexq(&["-q", "submit"]).now(DAY2).spawn()).collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(sb.site.requests_to("GET", "/sitemap.xml").len(), fetched + 2, "both runs read the changed sitemap");
    assert_eq!(puts(&sb, &site_url).len(), 2, "the first submission, and one for the change");
    // Both read the new sitemap; what the ledger keeps of it says one change.
    sb.indexq(&["submit"]).now("2026-12-05T10:00:00Z").output().code(0);
    assert_eq!(puts(&sb, &site_url).len(), 2);
}

/// Every Search Console and Bing answer to a sitemap submission in the
/// fixtures, through the binary: its class, its reason, its fix, its exit.
#[test]
fn every_sitemap_answer_of_the_fixtures_gets_its_class_and_fix() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rejections");
    let mut seen = 0;
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let fixture: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let phase = fixture["phase"].as_str().unwrap_or_default();
        if !matches!(phase, "sitemaps" | "feed") {
            continue;
        }
        seen += 1;
        let id = fixture["id"].as_str().unwrap();
        let mut response = MockResponse::status(fixture["status"].as_u64().unwrap() as u16);
        for (k, v) in fixture["headers"].as_object().into_iter().flatten() {
            response = response.header(k, v.as_str().unwrap());
        }
        let response = response.body(fixture["body"].as_str().unwrap());
        let sb = if phase == "sitemaps" {
            let (sb, _sitemap, _console, site_url) = google_sandbox("");
            sb.engine.on("PUT", &sitemaps_path(&site_url, &sb.url("/sitemap.xml")), vec![response]);
            sb
        } else {
            let mut sb = Sandbox::bing("");
            let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
            sitemap.add("/a", None);
            sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
            sb.write_config();
            sb.engine.on("POST", BING_SUBMIT_FEED, vec![response]);
            sb
        };
        let expect = fixture["expect"].as_str().unwrap();
        let done = sb.indexq(&["--json", "submit", "--max-wait", "0"]).now(DAY1).output();
        let doc = done.submit_doc();
        let r = doc.result_for(&sb.url("/sitemap.xml"));
        assert_eq!(r.outcome.as_str(), expect, "{id}: {r:#?}");
        if let Some(reason) = fixture["reason"].as_str() {
            assert_eq!(r.reason, reason, "{id}: {r:#?}");
        }
        assert_eq!(done.code, if expect == "misconfigured" { 3 } else { 0 }, "{id}: {}", done.stderr);
        match expect {
            "misconfigured" => {
                assert!(r.retry_at.is_none() && r.hint.is_some(), "{id}: parked with its fix: {r:#?}");
                let parked = doc.parked.clone().unwrap_or_default();
                let [p] = parked.as_slice() else { panic!("{id}: {parked:#?}") };
                assert_eq!(
                    (p.kind, p.sitemap.as_deref()),
                    (json::NoticeKind::Parked, Some(sb.url("/sitemap.xml").as_str()))
                );
                let retry = format!("--url {}", sb.url("/sitemap.xml"));
                assert!(p.retry.as_deref().is_some_and(|c| c.ends_with(&retry)), "{id}: {p:#?}");
            }
            "accepted" => assert!(r.retry_at.is_none(), "{id}"),
            _ => assert!(r.retry_at.is_some(), "{id}: a retry is scheduled: {r:#?}"),
        }
        let hint = r.hint.clone().unwrap_or_default();
        match r.reason.as_str() {
            "not_property_user" => {
                assert!(hint.contains(&format!("Add {GOOGLE_EMAIL} as an Owner or Full user")), "{id}: {hint}");
                assert!(hint.contains("sc-domain:127.0.0.1"), "{id}: {hint}");
            }
            "property_not_found" => {
                assert!(hint.contains("as Search Console lists it") || hint.contains("Bing lists it"), "{id}: {hint}")
            }
            "NotAuthorized" => {
                assert!(hint.contains("sitemap") && hint.contains("Bing Webmaster Tools"), "{id}: {hint}")
            }
            _ => {}
        }
    }
    assert!(seen >= 8, "the sitemap fixtures: {seen}");
}

#[test]
fn a_refused_submission_is_parked_said_once_a_day_and_sent_again_by_queue_retry() {
    let (sb, _sitemap, _console, site_url) = google_sandbox("");
    let path = sitemaps_path(&site_url, &sb.url("/sitemap.xml"));
    let refused = r#"{"error":{"errors":[{"domain":"global","reason":"forbidden","message":"User does not have sufficient permission for site 'http://127.0.0.1/'."}],"code":403,"message":"User does not have sufficient permission for site 'http://127.0.0.1/'."}}"#;
    sb.engine.on("PUT", &path, vec![MockResponse::status(403).json(refused)]);
    let done = sb.indexq(&["-q", "submit"]).now(DAY1).output().code(3);
    assert!(done.stdout.contains("(not_property_user)"), "{}", done.stdout);
    // Said again once a day, not every hour; the engine's report is not read for a parked submission.
    let quiet = sb.indexq(&["-q", "submit"]).now(DAY1_LATER).output().code(0);
    assert_eq!(quiet.stdout, "");
    assert!(sb.engine.requests_to("GET", &path).is_empty(), "nothing to read of a parked submission");
    let reminded = sb.indexq(&["-q", "submit"]).now(DAY2).output().code(3);
    let line = reminded.stdout.lines().find(|l| l.starts_with("needs a human:")).expect(&reminded.stdout);
    assert!(
        line.starts_with(&format!(
            "needs a human: Google sitemap {} for site: its submission parked since",
            sb.url("/sitemap.xml")
        )),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "run `indexq queue retry --state parked --property site --engine google --url {}`",
            sb.url("/sitemap.xml")
        )),
        "{line}"
    );
    let status = sb.indexq(&["status"]).now(DAY2).output().code(0);
    assert!(
        status.stdout.lines().nth(1).is_some_and(|l| l.starts_with("needs a human: Google sitemap")),
        "status shows it first:\n{}",
        status.stdout
    );
    let doctor = sb.indexq(&["--json", "doctor"]).now(DAY2).output().code(3).doctor_doc();
    assert!(doctor.checks.iter().any(|c| c.check == "parked" && c.message.contains("sitemap.xml")), "{doctor:#?}");
    // Fixed in Search Console: `queue retry` sends it again.
    sb.engine.on("PUT", &path, vec![MockResponse::status(204)]);
    let retry =
        format!("indexq queue retry --state parked --property site --engine google --url {}", sb.url("/sitemap.xml"));
    let args: Vec<&str> = retry.split(' ').skip(1).collect();
    sb.indexq(&args).now(DAY2).output().code(0);
    sb.indexq(&["-q", "submit"]).now(DAY2).output().code(0);
    assert_eq!(sb.engine.requests_to("PUT", &path).len(), 2);
}

#[test]
fn the_engines_report_is_read_back_and_shown_by_status() {
    let (sb, _sitemap, console, site_url) = google_sandbox("");
    console.reports("2026-12-03T09:00:00.000Z", Some("2026-12-03T09:00:04.000Z"), 0, 1);
    sb.indexq(&["submit"]).now(DAY1).output().code(0);
    let path = sitemaps_path(&site_url, &sb.url("/sitemap.xml"));
    let [get] = sb.engine.requests_to("GET", &path).try_into().unwrap();
    assert_eq!(get.header("authorization"), Some(format!("Bearer {GOOGLE_ACCESS_TOKEN}").as_str()));
    let status = sb.indexq(&["--json", "status"]).now(DAY1_LATER).output().code(0).status_doc();
    let [s] = status.sitemaps.as_slice() else { panic!("{:?}", status.sitemaps) };
    assert_eq!((s.engine, s.property.as_str()), (json::Engine::Google, "site"));
    assert_eq!(s.submitted_at.as_deref(), Some("2026-12-03T09:00:00+00:00"));
    assert_eq!(s.read_at.as_deref(), Some("2026-12-03T09:00:00+00:00"));
    assert_eq!(s.engine_submitted_at.as_deref(), Some("2026-12-03T09:00:00+00:00"));
    assert_eq!(s.downloaded_at.as_deref(), Some("2026-12-03T09:00:04+00:00"));
    assert_eq!(
        (s.listed, s.pending, s.errors, s.warnings, s.urls),
        (Some(true), Some(false), Some(0), Some(1), Some(2))
    );
    assert_eq!((s.status.as_deref(), &s.read_failure), (Some("sitemap"), &None));
    let human = sb.indexq(&["status"]).now(DAY1_LATER).output().code(0).stdout;
    assert!(human.contains(&format!("Google sitemap {} for site", sb.url("/sitemap.xml"))), "{human}");
    assert!(human.contains("submitted to Google: 2026-12-03 09:00 UTC"), "{human}");
    assert!(
        human.contains("Google's report (read 2026-12-03 09:00 UTC): submitted 2026-12-03 09:00 UTC, downloaded 2026-12-03 09:00 UTC, 0 errors, 1 warnings, 2 URLs (sitemap)"),
        "{human}"
    );
    // Read again only after `read_interval` (6 h): not at 10:00, at 15:01.
    sb.indexq(&["submit"]).now(DAY1_LATER).output().code(0);
    assert_eq!(sb.engine.requests_to("GET", &path).len(), 1);
    sb.indexq(&["submit"]).now("2026-12-03T15:00:01Z").output().code(0);
    assert_eq!(sb.engine.requests_to("GET", &path).len(), 2);
}

#[test]
fn a_sitemap_with_errors_is_reminded_until_it_is_clean() {
    let (mut sb, _sitemap, console, _site_url) = google_sandbox("");
    sb.extra.push_str("\n[sitemap]\nread_interval = \"1h\"\n");
    sb.write_config();
    console.reports("2026-12-03T09:00:00.000Z", Some("2026-12-03T09:00:04.000Z"), 2, 0);
    let done = sb.indexq(&["-q", "submit"]).now(DAY1).output().code(3);
    let line = done.stdout.lines().find(|l| l.starts_with("needs a human:")).expect(&done.stdout);
    assert!(
        line.starts_with(&format!("needs a human: Google sitemap {} for site: said since 2026-12-03 09:00 UTC (sitemap_errors). Google reports 2 errors and 0 warnings in the sitemap", sb.url("/sitemap.xml"))),
        "{line}"
    );
    assert!(
        line.contains("Fix: Open") && line.contains("indexq reads Google's report on the sitemap again by itself"),
        "{line}"
    );
    let json = sb.indexq(&["--json", "status"]).now(DAY1_LATER).output().code(0).status_doc();
    let [p] = json.parked.as_slice() else { panic!("{:?}", json.parked) };
    assert_eq!(
        (p.kind, p.reason.as_str(), p.urls, p.retry.as_deref()),
        (json::NoticeKind::SitemapReport, "sitemap_errors", 1, None)
    );
    assert!(p.checked_by_itself);
    // Read again each hour, still errors: said once a day (`[submit] remind`).
    for at in ["2026-12-03T10:00:01Z", "2026-12-03T15:00:00Z", "2026-12-04T08:59:59Z"] {
        let quiet = sb.indexq(&["-q", "submit"]).now(at).output().code(0);
        assert_eq!(quiet.stdout, "", "{at}");
    }
    let again = sb.indexq(&["-q", "submit"]).now("2026-12-04T09:00:00Z").output().code(3);
    assert!(again.stdout.contains("(sitemap_errors)"), "{}", again.stdout);
    let doctor = sb.indexq(&["--json", "doctor"]).now("2026-12-04T09:30:00Z").output().code(3).doctor_doc();
    let c = doctor.check("sitemap_report");
    assert!(c.message.contains("sitemap.xml") && c.message.contains("sitemap_errors"), "{c:?}");
    // The sitemap fixed: the next read finds it clean, and nothing is said any more.
    console.reports("2026-12-03T09:00:00.000Z", Some("2026-12-04T09:40:00.000Z"), 0, 0);
    sb.indexq(&["-q", "submit"]).now("2026-12-04T10:00:01Z").output().code(0);
    let later = sb.indexq(&["-q", "submit"]).now("2026-12-05T10:00:02Z").output().code(0);
    assert_eq!(later.stdout, "");
    let status = sb.indexq(&["--json", "status"]).now("2026-12-05T10:00:03Z").output().code(0).status_doc();
    assert!(status.parked.is_empty(), "{:?}", status.parked);
    assert_eq!(status.sitemaps[0].errors, Some(0));
}

#[test]
fn a_sitemap_not_downloaded_in_time_is_said() {
    let (mut sb, _sitemap, console, _site_url) = google_sandbox("");
    sb.extra.push_str("\n[sitemap]\nread_interval = \"1h\"\ndownload_deadline = \"2h\"\n");
    sb.write_config();
    console.reports("2026-12-03T09:00:00.000Z", None, 0, 0);
    sb.indexq(&["-q", "submit"]).now(DAY1).output().code(0);
    sb.indexq(&["-q", "submit"]).now("2026-12-03T10:00:01Z").output().code(0);
    let done = sb.indexq(&["-q", "submit"]).now("2026-12-03T11:00:02Z").output().code(3);
    let line = done.stdout.lines().find(|l| l.starts_with("needs a human:")).expect(&done.stdout);
    assert!(line.contains("said since 2026-12-03 11:00 UTC (sitemap_not_downloaded)"), "{line}");
    assert!(line.contains("has never downloaded it"), "{line}");
    // Google downloads it: the next read ends it.
    console.reports("2026-12-03T09:00:00.000Z", Some("2026-12-03T11:30:00.000Z"), 0, 0);
    sb.indexq(&["-q", "submit"]).now("2026-12-03T12:00:03Z").output().code(0);
    let status = sb.indexq(&["--json", "status"]).now("2026-12-03T12:00:04Z").output().code(0).status_doc();
    assert!(status.parked.is_empty(), "{:?}", status.parked);
}

#[test]
fn doctor_lists_the_propertys_sitemaps_and_says_what_to_fix_without_submitting() {
    let (sb, _sitemap, _console, site_url) = google_sandbox("");
    let list = format!("/webmasters/v3/sites/{}/sitemaps", segment(&site_url));
    let listed = json!({ "sitemap": [{ "path": sb.url("/sitemap.xml"), "lastSubmitted": "2026-12-02T09:00:00.000Z", "isPending": false, "isSitemapsIndex": false, "type": "sitemap", "lastDownloaded": "2026-12-02T09:10:00.000Z", "warnings": "0", "errors": "0" }] });
    sb.engine.on("GET", &list, vec![MockResponse::status(200).json(&listed.to_string())]);
    let doctor = sb.indexq(&["--json", "doctor"]).now(DAY1).output().code(0).doctor_doc();
    let c = doctor.check("sitemaps");
    assert!(c.ok, "{c:?}");
    assert!(
        c.message.contains(&format!("{} (downloaded 2026-12-02 09:10 UTC, 0 errors)", sb.url("/sitemap.xml"))),
        "{c:?}"
    );
    assert!(sb.engine.requests().iter().all(|r| r.method != "PUT"), "doctor submits nothing");
    let refused = r#"{"error":{"code":403,"message":"User does not have sufficient permission for site 'http://127.0.0.1/'.","status":"PERMISSION_DENIED"}}"#;
    sb.engine.on("GET", &list, vec![MockResponse::status(403).json(refused)]);
    let doctor = sb.indexq(&["--json", "doctor"]).now(DAY1).output().code(3).doctor_doc();
    let c = doctor.check("sitemaps");
    assert!(!c.ok, "{c:?}");
    let fix = c.fix.clone().unwrap();
    assert!(
        fix.contains(&format!("Add {GOOGLE_EMAIL} as an Owner or Full user of the Search Console property {site_url}")),
        "{fix}"
    );
    assert!(fix.contains("sc-domain:127.0.0.1"), "{fix}");
    // Bing: GetFeeds.
    let mut bing = Sandbox::bing("");
    let s = Sitemap::serve(&bing.site, "/sitemap.xml");
    s.add("/a", None);
    bing.property_extra = format!("sources = [\"{}\"]\n", bing.url("/sitemap.xml"));
    bing.write_config();
    bing.engine.on(
        "GET",
        BING_GET_FEEDS,
        vec![MockResponse::status(400).json(r#"{"ErrorCode":14,"Message":"ERROR!!! NotAuthorized"}"#)],
    );
    let doctor = bing.indexq(&["--json", "doctor"]).now(DAY1).output().code(3).doctor_doc();
    let c = doctor.check("sitemaps");
    assert!(
        !c.ok && c.fix.as_deref().is_some_and(|f| f.contains("Verify") && f.contains("Bing Webmaster Tools")),
        "{c:?}"
    );
    assert!(bing.engine.requests_to("POST", BING_SUBMIT_FEED).is_empty());
}

#[test]
fn a_dry_run_plans_the_submission_and_sends_nothing() {
    let (sb, _sitemap, _console, site_url) = google_sandbox("");
    let doc = sb.indexq(&["--json", "submit", "--dry-run"]).now(DAY1).output().code(0).submit_doc();
    let plan = doc.plan.clone().unwrap_or_default();
    assert!(
        plan.iter().any(|p| p.url == sb.url("/sitemap.xml") && p.channel == Some(json::Channel::Sitemaps)),
        "{plan:#?}"
    );
    assert!(puts(&sb, &site_url).is_empty());
}
