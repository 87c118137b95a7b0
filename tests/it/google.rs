//! Google Indexing API: the service account's JWT, one token for many
//! publishes, publish bodies, the per-project pool and per-property shares
//! in Pacific time, classification of Google's answers, pacing, inspection.

use crate::support::mock::MockResponse;
use crate::support::*;

const NOW: &str = "2026-12-03T09:30:00+08:00";

fn list(sb: &Sandbox, name: &str, n: usize) -> std::path::PathBuf {
    let names: Vec<String> = (1..=n).map(|i| format!("/{name}{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    sb.urls(&format!("{name}.txt"), &refs)
}

#[test]
fn the_jwt_is_signed_by_the_service_account_and_one_token_serves_many_publishes() {
    let sb = Sandbox::google("daily_quota = 50");
    let public = sb.write_google_key();
    let urls = list(&sb, "p", 3);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 3);
    let tokens = sb.engine.requests_to("POST", GOOGLE_TOKEN);
    assert_eq!(tokens.len(), 1, "one token per run");
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(tokens[0].body.as_bytes()).into_owned().collect();
    assert_eq!(form["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer");
    let assertion = &form["assertion"];
    let header = jsonwebtoken::decode_header(assertion).unwrap();
    assert_eq!(header.alg, jsonwebtoken::Algorithm::RS256);
    assert_eq!(header.kid.as_deref(), Some(GOOGLE_KEY_ID));
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    validation.set_audience(&[format!("{}{GOOGLE_TOKEN}", sb.engine.url())]);
    let key = jsonwebtoken::DecodingKey::from_rsa_pem(public.as_bytes()).unwrap();
    let claims = jsonwebtoken::decode::<serde_json::Value>(assertion, &key, &validation).unwrap().claims;
    assert_eq!(claims["iss"], GOOGLE_EMAIL);
    assert_eq!(claims["scope"], "https://www.googleapis.com/auth/indexing");
    let (iat, exp) = (claims["iat"].as_i64().unwrap(), claims["exp"].as_i64().unwrap());
    assert!(exp > iat && exp - iat <= 3600);
    for publish in sb.engine.requests_to("POST", GOOGLE_PUBLISH) {
        assert_eq!(publish.header("authorization"), Some(format!("Bearer {GOOGLE_ACCESS_TOKEN}").as_str()));
    }
    let published = sb.google_published();
    assert_eq!(published.len(), 3);
    assert!(published.iter().all(|(_, kind)| kind == "URL_UPDATED"));
}

/// The fixture's per-day answer (google-429-per-day), compact.
const PER_DAY: &str = r#"{"error":{"code":429,"message":"Quota exceeded for quota metric 'Publish requests' and limit 'Publish requests per day' of service 'indexing.googleapis.com' for consumer 'project_number:875626095483'.","status":"RESOURCE_EXHAUSTED"}}"#;
const PER_MINUTE: &str = r#"{"error":{"code":429,"message":"Quota exceeded for quota metric 'Publish requests' and limit 'Publish requests per minute' of service 'indexing.googleapis.com' for consumer 'project_number:875626095483'.","status":"RESOURCE_EXHAUSTED"}}"#;
const OWNERSHIP: &str = r#"{"error":{"code":403,"message":"Permission denied. Failed to verify the URL ownership.","status":"PERMISSION_DENIED"}}"#;
const INTERNAL: &str = r#"{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}"#;
const INVALID_GRANT: &str = r#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#;

/// Seconds since the epoch of an RFC 3339 timestamp `YYYY-MM-DDTHH:MM:SS(Z|±HH:MM)`
/// (no chrono in the tests).
fn epoch(text: &str) -> i64 {
    let num = |range: std::ops::Range<usize>| -> i64 {
        text.get(range.clone()).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not RFC 3339: {text:?}"))
    };
    let (y, m, d) = (num(0..4), num(5..7), num(8..10));
    let (hh, mm, ss) = (num(11..13), num(14..16), num(17..19));
    let zone = &text[19..];
    let offset = if zone == "Z" {
        0
    } else {
        let sign = if zone.starts_with('-') { -1 } else { 1 };
        sign * (zone[1..3].parse::<i64>().unwrap() * 3600 + zone[4..6].parse::<i64>().unwrap() * 60)
    };
    // Days from civil (Howard Hinnant).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + hh * 3600 + mm * 60 + ss - offset
}

#[test]
fn epoch_helper_reads_offsets() {
    assert_eq!(epoch("1970-01-01T00:00:00Z"), 0);
    assert_eq!(epoch("2026-12-03T09:30:00+08:00"), epoch("2026-12-03T01:30:00Z"));
    assert_eq!(epoch("2026-12-03T00:00:00-08:00") - epoch(NOW), 23_400);
}

/// The Google day budgets of `status --json`.
fn google_day_budgets(status: &json::Status) -> Vec<json::Budget> {
    status
        .budgets
        .iter()
        .filter(|b| b.engine == json::Engine::Google && b.period == json::Period::Day)
        .cloned()
        .collect()
}

#[test]
fn publish_bodies_say_updated_or_deleted_for_the_url_with_the_bearer_token() {
    let sb = Sandbox::google("");
    let updated = sb.urls("updated.txt", &["/a", "/b"]);
    let doc = sb.indexq(&["--json", "submit", updated.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 2);
    let deleted = sb.urls("deleted.txt", &["/gone"]);
    let doc = sb
        .indexq(&["--json", "submit", "--deleted", deleted.to_str().unwrap()])
        .now("2026-12-03T09:31:00+08:00")
        .output()
        .code(0)
        .json();
    assert_eq!(count(&doc, "accepted"), 1);
    let r = result_for(&results(&doc), &sb.url("/gone")).clone();
    assert_eq!(r["engine"], "google");
    assert_eq!(r["outcome"], "accepted");
    assert_eq!(r["http_status"], 200);

    let mut published = sb.google_published();
    published.sort();
    assert_eq!(
        published,
        vec![
            (sb.url("/a"), "URL_UPDATED".to_string()),
            (sb.url("/b"), "URL_UPDATED".to_string()),
            (sb.url("/gone"), "URL_DELETED".to_string()),
        ]
    );
    for req in sb.engine.requests_to("POST", GOOGLE_PUBLISH) {
        assert_eq!(req.header("authorization"), Some(format!("Bearer {GOOGLE_ACCESS_TOKEN}").as_str()), "{req:?}");
        assert!(req.header("content-type").is_some_and(|c| c.starts_with("application/json")), "{req:?}");
        let body = req.json();
        let mut keys: Vec<&String> = body.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["type", "url"], "the publish body is {{url, type}}: {body}");
    }
}

/// A sandbox whose publish endpoint answers the per-day 429 to everything.
fn per_day_sandbox() -> Sandbox {
    let sb = Sandbox::google("");
    sb.engine.on("POST", GOOGLE_PUBLISH, vec![MockResponse::status(429).json(PER_DAY)]);
    sb
}

#[test]
fn the_seed_case_a_per_day_429_waits_for_pacific_midnight_and_says_whose() {
    let sb = per_day_sandbox();
    let urls = list(&sb, "p", 1);
    let doc = sb
        .indexq(&["--json", "submit", urls.to_str().unwrap()])
        .now(NOW)
        .env("TZ", "Asia/Shanghai")
        .output()
        .code(0)
        .json();
    let r = result_for(&results(&doc), &sb.url("/p1")).clone();
    assert_eq!(r["engine"], "google");
    assert_eq!(r["outcome"], "quota", "{r:#}");
    assert_eq!(r["http_status"], 429);
    assert_eq!(r["retry_at"], "2026-12-03T00:00:00-08:00", "{r:#}");
    assert_eq!(r["retry_after_secs"], 23_400, "{r:#}");
    assert_eq!(count(&doc, "quota"), 1);
    assert_eq!(count(&doc, "misconfigured"), 0);
    assert_eq!(sb.google_published().len(), 1);

    // The same in words, in a fresh ledger.
    let sb = per_day_sandbox();
    let urls = list(&sb, "p", 1);
    let done = sb.indexq(&["submit", urls.to_str().unwrap()]).now(NOW).env("TZ", "Asia/Shanghai").output().code(0);
    let out = &done.stdout;
    assert!(out.contains("2026-12-03 00:00 America/Los_Angeles"), "{out}\n--- stderr\n{}", done.stderr);
    // The pinned clock advances with the run: on a loaded machine a run
    // that takes over a second reads the reset a minute nearer.
    assert!(out.contains("in 6 h 30 min") || out.contains("in 6 h 29 min"), "{out}");
    assert!(out.contains("16:00 in your timezone"), "{out}");
    let all = format!("{}{}", done.stdout, done.stderr).to_lowercase();
    assert!(!all.lines().any(|l| l.trim_start().starts_with("error")), "a quota is not an error:\n{all}");
    assert!(!all.contains("fail"), "a quota is not a failure:\n{all}");
}

#[test]
fn per_day_429s_around_the_dst_changes_wait_for_the_right_midnight() {
    // (now, expected retry_at, seconds until then)
    let cases = [
        // Spring forward on 2027-03-14 (a 23-hour day).
        ("2027-03-13T12:00:00-08:00", "2027-03-14T00:00:00-08:00", 12 * 3600),
        ("2027-03-14T00:30:00-08:00", "2027-03-15T00:00:00-07:00", 22 * 3600 + 1800),
        ("2027-03-14T12:00:00-07:00", "2027-03-15T00:00:00-07:00", 12 * 3600),
        // Fall back on 2027-11-07 (a 25-hour day).
        ("2027-11-06T12:00:00-07:00", "2027-11-07T00:00:00-07:00", 12 * 3600),
        ("2027-11-07T00:30:00-07:00", "2027-11-08T00:00:00-08:00", 24 * 3600 + 1800),
        ("2027-11-07T12:00:00-08:00", "2027-11-08T00:00:00-08:00", 12 * 3600),
    ];
    for (now, retry_at, secs) in cases {
        let sb = per_day_sandbox();
        let urls = list(&sb, "p", 1);
        let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(now).output().code(0).json();
        let r = result_for(&results(&doc), &sb.url("/p1")).clone();
        assert_eq!(r["outcome"], "quota", "at {now}: {r:#}");
        assert_eq!(r["retry_at"], retry_at, "at {now}: {r:#}");
        assert_eq!(r["retry_after_secs"], secs, "at {now}: {r:#}");
    }
}

#[test]
fn three_properties_share_a_pool_of_20_so_exactly_20_go() {
    let mut sb = Sandbox::google("daily_quota = 11");
    sb.google_extra = "daily_quota = 20\nrequests_per_minute = 6000\n".into();
    for name in ["b", "c"] {
        sb.more_properties.push_str(&format!(
            "\n[[property]]\nname = \"{name}\"\nsite = \"https://{name}.example/\"\ngoogle = {{ daily_quota = 11 }}\n"
        ));
    }
    sb.write_config();
    let mut text: String = (1..=11).map(|i| format!("{}\n", sb.url(&format!("/a{i}")))).collect();
    for name in ["b", "c"] {
        text.extend((1..=11).map(|i| format!("https://{name}.example/{name}{i}\n")));
    }
    let urls = sb.file("urls.txt", &text);
    let doc =
        sb.indexq(&["--json", "submit", "--max-wait", "30s", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let results = results(&doc);
    assert_eq!(results.len(), 33);
    assert_eq!(count(&doc, "accepted"), 20, "the pool of 20");
    assert_eq!(count(&doc, "deferred"), 13);
    let published = sb.google_published();
    assert_eq!(published.len(), 20, "exactly the pool reaches Google");
    let mut unique: Vec<_> = published.iter().map(|(u, _)| u.clone()).collect();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 20, "no URL twice");
    for name in ["site", "b", "c"] {
        let sent = results.iter().filter(|r| r["property"] == name && r["outcome"] == "accepted").count();
        assert!(sent <= 11, "{name} went over its share: {sent}");
    }
    for r in results.iter().filter(|r| r["outcome"] == "deferred") {
        assert_eq!(r["retry_at"], "2026-12-03T00:00:00-08:00", "the next Pacific midnight: {r:#}");
        assert_eq!(r["retry_after_secs"], 23_400, "{r:#}");
        assert!(r.get("http_status").is_none(), "deferred never left the machine: {r:#}");
    }
    // The pool shows 20 of 20 used.
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    let pools: Vec<_> = google_day_budgets(&status).into_iter().filter(|b| b.limit == Some(20)).collect();
    assert!(!pools.is_empty(), "{status:#?}");
    for pool in pools {
        assert_eq!(pool.used, 20, "{pool:#?}");
        assert_eq!(pool.remaining, Some(0), "{pool:#?}");
    }
}

#[test]
fn a_per_minute_429_waits_a_minute_and_leaves_the_day_open() {
    let sb = Sandbox::google("");
    sb.engine.on("POST", GOOGLE_PUBLISH, vec![MockResponse::status(429).json(PER_MINUTE)]);
    let urls = list(&sb, "p", 1);
    let doc =
        sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let r = result_for(&results(&doc), &sb.url("/p1")).clone();
    assert_eq!(r["outcome"], "quota", "{r:#}");
    assert_eq!(r["http_status"], 429);
    assert_eq!(r["retry_after_secs"], 60, "no Retry-After: about a minute: {r:#}");
    assert_eq!(epoch(r["retry_at"].as_str().unwrap()) - epoch(NOW), 60, "{r:#}");

    // The day budgets are not blocked.
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    let days = google_day_budgets(&status);
    assert_eq!(days.len(), 2, "the property's share and the project pool: {status:#?}");
    for b in &days {
        assert_ne!(b.blocked_until.as_ref(), Some(&b.resets_at), "the day is not spent: {b:#?}");
        if let Some(until) = &b.blocked_until {
            assert!(epoch(until) <= epoch(NOW) + 60, "the day is blocked past the minute: {b:#?}");
        }
    }
    // Once the minute is over, the day budgets are open again.
    let status = sb.indexq(&["--json", "status"]).now("2026-12-03T09:31:01+08:00").output().code(0).status_doc();
    let days = google_day_budgets(&status);
    assert_eq!(days.len(), 2, "{status:#?}");
    for b in &days {
        assert!(b.blocked_until.is_none(), "{b:#?}");
        assert!(b.remaining.unwrap() > 0, "{b:#?}");
    }
    // Two minutes later a new URL goes (and so does the one waiting).
    sb.engine.on("POST", GOOGLE_PUBLISH, vec![MockResponse::status(200).json("{}")]);
    let more = list(&sb, "q", 1);
    let doc = sb
        .indexq(&["--json", "submit", "--max-wait", "0", more.to_str().unwrap()])
        .now("2026-12-03T09:32:00+08:00")
        .output()
        .code(0)
        .json();
    assert_eq!(result_for(&results(&doc), &sb.url("/q1"))["outcome"], "accepted", "{doc:#}");
    assert_eq!(result_for(&results(&doc), &sb.url("/p1"))["outcome"], "accepted", "{doc:#}");

    // A Retry-After is honoured.
    let sb = Sandbox::google("");
    sb.engine.on("POST", GOOGLE_PUBLISH, vec![MockResponse::status(429).header("Retry-After", "120").json(PER_MINUTE)]);
    let urls = list(&sb, "p", 1);
    let doc =
        sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let r = result_for(&results(&doc), &sb.url("/p1")).clone();
    assert_eq!(r["outcome"], "quota", "{r:#}");
    assert_eq!(r["retry_after_secs"], 120, "{r:#}");
    assert!(r["retry_after_secs"].as_i64().unwrap() <= 900, "within 15 min");
}

/// Three publishes refused for the per-minute limit (429
/// `RESOURCE_EXHAUSTED`) were not counted by Google: their units go back to
/// the property's 11 a day and to the project's pool, so after the minute all
/// 11 are accepted the same Pacific day, not 8 (issue 26).
#[test]
fn per_minute_429s_are_not_charged_so_all_11_go_the_same_pacific_day() {
    let mut sb = Sandbox::google("daily_quota = 11");
    sb.google_extra = "requests_per_minute = 6000\n".into();
    sb.write_config();
    let per_minute = MockResponse::status(429).json(PER_MINUTE);
    sb.engine.on(
        "POST",
        GOOGLE_PUBLISH,
        vec![per_minute.clone(), per_minute.clone(), per_minute, MockResponse::status(200).json("{}")],
    );
    let urls = list(&sb, "p", 11);
    let doc =
        sb.indexq(&["--json", "submit", "--max-wait", "30s", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!((count(&doc, "accepted"), count(&doc, "quota")), (8, 3), "{doc:#}");
    // The share and the pool count what Google took, not what it refused.
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    let days = google_day_budgets(&status);
    assert_eq!(days.len(), 2, "{status:#?}");
    for b in &days {
        assert_eq!(b.used, 8, "{b:#?}");
    }
    // After the minute, the 3 go, the same Pacific day.
    let later = "2026-12-03T09:32:00+08:00";
    let doc = sb.indexq(&["--json", "submit", "--max-wait", "30s"]).now(later).output().code(0).json();
    assert_eq!((count(&doc, "accepted"), count(&doc, "deferred")), (3, 0), "{doc:#}");
    assert_eq!(sb.google_published().len(), 14);
    let status = sb.indexq(&["--json", "status"]).now(later).output().code(0).status_doc();
    let share: Vec<_> = google_day_budgets(&status).into_iter().filter(|b| b.limit == Some(11)).collect();
    assert_eq!((share[0].used, share[0].remaining), (11, Some(0)), "{status:#?}");
}

/// A per-day 429 gives its unit back too (Google did not count it), but the
/// day stays spent: the block holds until Pacific midnight.
#[test]
fn a_per_day_429_gives_its_unit_back_but_the_day_stays_spent() {
    let sb = per_day_sandbox();
    let urls = list(&sb, "p", 1);
    sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0);
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    let days = google_day_budgets(&status);
    assert_eq!(days.len(), 2, "{status:#?}");
    for b in &days {
        assert_eq!((b.used, b.remaining), (0, Some(0)), "{b:#?}");
        assert_eq!(b.blocked_until.as_deref(), Some(b.resets_at.as_str()), "{b:#?}");
    }
    sb.engine.on("POST", GOOGLE_PUBLISH, vec![MockResponse::status(200).json("{}")]);
    let more = list(&sb, "q", 1);
    let doc = sb
        .indexq(&["--json", "submit", "--max-wait", "0", more.to_str().unwrap()])
        .now("2026-12-03T12:00:00+08:00")
        .output()
        .code(0)
        .json();
    assert_eq!(result_for(&results(&doc), &sb.url("/q1"))["outcome"], "deferred", "{doc:#}");
    assert_eq!(sb.google_published().len(), 1);
}

#[test]
fn sixty_urls_at_30_a_minute_are_scheduled_2_s_apart_over_about_2_min() {
    let mut sb = Sandbox::google("daily_quota = 100");
    sb.google_extra = "daily_quota = 1000\nrequests_per_minute = 30\n".into();
    sb.write_config();
    let urls = list(&sb, "p", 60);
    let doc =
        sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let results = results(&doc);
    assert_eq!(count(&doc, "accepted"), 4, "a burst of 4 now");
    assert_eq!(count(&doc, "deferred"), 56);
    assert_eq!(sb.google_published().len(), 4);
    let deferred: Vec<&serde_json::Value> = results.iter().filter(|r| r["outcome"] == "deferred").collect();
    assert_eq!(deferred.len(), 56);
    let mut slots: Vec<i64> = deferred
        .iter()
        .map(|r| {
            assert_eq!(r["reason"], "paced", "{r:#}");
            let at = epoch(r["retry_at"].as_str().unwrap());
            let after = r["retry_after_secs"].as_i64().unwrap();
            assert!((at - epoch(NOW) - after).abs() <= 1, "retry_at and retry_after_secs agree: {r:#}");
            at - epoch(NOW)
        })
        .collect();
    slots.sort();
    for pair in slots.windows(2) {
        assert_eq!(pair[1] - pair[0], 2, "one send every 2 s: {slots:?}");
    }
    let last = *slots.last().unwrap();
    assert!((110..=114).contains(&last), "the last one about 2 min later (112 s): {slots:?}");
    assert!((1..=4).contains(&slots[0]), "the first paced one right after the burst: {slots:?}");
    let max_secs = deferred.iter().map(|r| r["retry_after_secs"].as_i64().unwrap()).max().unwrap();
    assert!((110..=114).contains(&max_secs), "{max_secs}");
}

#[test]
fn a_refused_key_makes_every_google_item_misconfigured_and_sends_nothing() {
    let sb = Sandbox::google("");
    sb.engine.on("POST", GOOGLE_TOKEN, vec![MockResponse::status(400).json(INVALID_GRANT)]);
    let urls = list(&sb, "p", 3);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let doc = done.json();
    let results = results(&doc);
    assert_eq!(results.len(), 3);
    assert_eq!(count(&doc, "misconfigured"), 3);
    for r in &results {
        assert_eq!(r["outcome"], "misconfigured", "{r:#}");
        assert_eq!(r["reason"], "invalid_grant", "{r:#}");
        let said = format!("{} {}", r["message"], r["hint"]);
        assert!(said.contains(GOOGLE_KEY_ID), "names the key id: {r:#}");
        assert!(said.contains(GOOGLE_EMAIL), "names the service account: {r:#}");
        assert!(r.get("retry_at").is_none(), "parked, not retried: {r:#}");
    }
    assert!(sb.google_published().is_empty(), "nothing published");
    assert!(sb.engine.requests_to("POST", GOOGLE_PUBLISH).is_empty());
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_TOKEN).len(), 1, "asked once, not once per URL");

    // A URL more, the same day: the key is checked again (a token) and
    // still refused, so the URL waits with the parked ones, unsent and
    // unsaid until the reminder (a day later), which says it in words.
    let more = list(&sb, "q", 1);
    let quiet = sb.indexq(&["-q", "submit", more.to_str().unwrap()]).now(NOW).output().code(0);
    assert_eq!(quiet.stdout, "");
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_TOKEN).len(), 2, "the check: one token request");
    let later = chrono::DateTime::parse_from_rfc3339(NOW).unwrap() + chrono::Duration::days(1);
    let done = sb.indexq(&["submit", "--no-sources"]).now(&later.to_rfc3339()).output().code(3);
    let out = format!("{}{}", done.stdout, done.stderr);
    assert!(out.contains(GOOGLE_KEY_ID) && out.contains(GOOGLE_EMAIL), "{out}");
    assert!(out.contains("4 URLs parked") && out.contains("invalid_grant"), "{out}");
    assert!(sb.engine.requests_to("POST", GOOGLE_PUBLISH).is_empty());
}

#[test]
fn a_refused_google_key_leaves_the_indexnow_items_of_the_same_run_alone() {
    let mut sb = Sandbox::google("");
    sb.indexnow = true;
    sb.write_config();
    sb.engine.on("POST", GOOGLE_TOKEN, vec![MockResponse::status(400).json(INVALID_GRANT)]);
    let urls = list(&sb, "p", 3);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let doc = done.json();
    let results = results(&doc);
    let google: Vec<_> = results.iter().filter(|r| r["engine"] == "google").collect();
    let indexnow: Vec<_> = results.iter().filter(|r| r["engine"] == "indexnow").collect();
    assert_eq!(google.len(), 3, "{doc:#}");
    assert_eq!(indexnow.len(), 3, "{doc:#}");
    assert!(google.iter().all(|r| r["outcome"] == "misconfigured" && r["reason"] == "invalid_grant"), "{doc:#}");
    assert!(indexnow.iter().all(|r| r["outcome"] == "accepted"), "{doc:#}");
    let mut received = sb.received_urls();
    received.sort();
    assert_eq!(received, vec![sb.url("/p1"), sb.url("/p2"), sb.url("/p3")]);
    assert!(sb.google_published().is_empty());
}

#[test]
fn a_401_refreshes_the_token_once() {
    let sb = Sandbox::google("");
    sb.engine.on(
        "POST",
        GOOGLE_PUBLISH,
        vec![
            MockResponse::status(401).json(
                r#"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#,
            ),
            MockResponse::status(200).json("{}"),
        ],
    );
    let urls = list(&sb, "p", 1);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let r = result_for(&results(&doc), &sb.url("/p1")).clone();
    assert_eq!(r["outcome"], "accepted", "{r:#}");
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_TOKEN).len(), 2, "one refresh");
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_PUBLISH).len(), 2);

    // Still 401 after the refresh: misconfigured, no loop.
    let sb = Sandbox::google("");
    sb.engine.on("POST", GOOGLE_PUBLISH, vec![MockResponse::status(401)]);
    let urls = list(&sb, "p", 1);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let r = result_for(&results(&done.json()), &sb.url("/p1")).clone();
    assert_eq!(r["outcome"], "misconfigured", "{r:#}");
    assert_eq!(r["reason"], "unauthenticated", "{r:#}");
    assert_eq!(r["http_status"], 401);
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_TOKEN).len(), 2, "exactly one refresh");
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_PUBLISH).len(), 2, "exactly one retry");
}

#[test]
fn an_ownership_403_is_misconfigured_with_the_fix() {
    let sb = Sandbox::google("");
    sb.engine.on("POST", GOOGLE_PUBLISH, vec![MockResponse::status(403).json(OWNERSHIP)]);
    let urls = list(&sb, "p", 1);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let r = result_for(&results(&done.json()), &sb.url("/p1")).clone();
    assert_eq!(r["outcome"], "misconfigured", "{r:#}");
    assert_eq!(r["reason"], "ownership_not_verified", "{r:#}");
    assert_eq!(r["http_status"], 403);
    let hint = r["hint"].as_str().unwrap_or_default();
    assert!(hint.contains(GOOGLE_EMAIL) && hint.contains("Owner"), "{r:#}");
    assert!(r.get("retry_at").is_none(), "parked: {r:#}");
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_PUBLISH).len(), 1, "not retried");
}

#[test]
fn a_500_internal_is_transient_with_a_retry() {
    let sb = Sandbox::google("");
    sb.engine.on("POST", GOOGLE_PUBLISH, vec![MockResponse::status(500).json(INTERNAL)]);
    let urls = list(&sb, "p", 1);
    let doc =
        sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let r = result_for(&results(&doc), &sb.url("/p1")).clone();
    assert_eq!(r["outcome"], "transient", "{r:#}");
    assert_eq!(r["http_status"], 500);
    let secs = r["retry_after_secs"].as_i64().expect("a retry is scheduled");
    assert!((1..=6 * 3600).contains(&secs), "{r:#}");
    assert!(r["retry_at"].is_string());
}

/// The rejection fixtures by id: the repository's (`tests/fixtures/rejections`,
/// which must be there), then those of `../shared/fixtures/rejections` when
/// that directory exists (a shared copy of an id replaces the repository's).
fn rejection_fixtures() -> std::collections::BTreeMap<String, serde_json::Value> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut fixtures = std::collections::BTreeMap::new();
    for (dir, required) in
        [(root.join("tests/fixtures/rejections"), true), (root.join("../shared/fixtures/rejections"), false)]
    {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if required => panic!("the rejection fixtures: {}: {e}", dir.display()),
            Err(_) => continue,
        };
        let mut paths: Vec<_> =
            entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).unwrap();
            let fixture: serde_json::Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let id = fixture["id"].as_str().unwrap_or_else(|| panic!("{}: no id", path.display())).to_string();
            fixtures.insert(id, fixture);
        }
    }
    fixtures
}

#[test]
fn every_google_fixture_gets_its_expected_class() {
    let mut seen = 0;
    for (id, fixture) in rejection_fixtures() {
        // Search Console's sitemap answers are `sitemaps.rs`'s.
        if fixture["engine"] != "google" || matches!(fixture["phase"].as_str(), Some("sitemaps" | "report")) {
            continue;
        }
        seen += 1;
        let mut response = MockResponse::status(fixture["status"].as_u64().unwrap() as u16);
        for (k, v) in fixture["headers"].as_object().into_iter().flatten() {
            response = response.header(k, v.as_str().unwrap());
        }
        let response = response.body(fixture["body"].as_str().unwrap());
        let expect = fixture["expect"].as_str().unwrap();
        if fixture["phase"] == "inspection" {
            inspection_fixture(&id, &fixture, response, expect);
            continue;
        }
        let sb = Sandbox::google("");
        let route = if fixture["phase"] == "token" { GOOGLE_TOKEN } else { GOOGLE_PUBLISH };
        sb.engine.on("POST", route, vec![response]);
        let urls = list(&sb, "p", 1);
        let done = sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output();
        let doc = done.json();
        let r = result_for(&results(&doc), &sb.url("/p1")).clone();
        if let Some(reason) = fixture["reason"].as_str() {
            assert_eq!(r["reason"], reason, "{id}: {r:#}");
        }
        assert_eq!(r["outcome"], expect, "{id}: {r:#}");
        let want_code = if expect == "misconfigured" { 3 } else { 0 };
        assert_eq!(done.code, want_code, "{id}: exit code\n{}", done.stderr);
        if fixture["retry"].as_str().is_some_and(|s| s.contains("midnight America/Los_Angeles")) {
            assert_eq!(r["retry_at"], "2026-12-03T00:00:00-08:00", "{id}: {r:#}");
        }
        match expect {
            "misconfigured" => assert!(r.get("retry_at").is_none(), "{id}: parked: {r:#}"),
            "accepted" => assert!(r.get("retry_at").is_none(), "{id}: done: {r:#}"),
            _ => assert!(r.get("retry_at").is_some(), "{id}: a retry is scheduled: {r:#}"),
        }
    }
    assert!(seen >= 9, "the Google fixtures were found in tests/fixtures/rejections: {seen}");
}

/// A URL Inspection API answer of the fixtures: whatever its class, the URL
/// is published, and the run says what the inspection came to (an
/// `accepted` one says nothing: indexed or not is no failure).
fn inspection_fixture(id: &str, fixture: &serde_json::Value, response: MockResponse, expect: &str) {
    let sb = Sandbox::google("skip_indexed = true");
    sb.engine.on("POST", GOOGLE_INSPECT, vec![response]);
    let urls = list(&sb, "p", 1);
    // A refusal (misconfigured) needs a human: said, and the run exits 3.
    let code = if expect == "misconfigured" { 3 } else { 0 };
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output().code(code);
    let doc = done.submit_doc();
    assert_eq!(doc.result_for(&sb.url("/p1")).outcome, json::Outcome::Accepted, "{id}: published all the same");
    assert_eq!(sb.google_published(), vec![(sb.url("/p1"), "URL_UPDATED".to_string())], "{id}");
    let notes = doc.inspections.unwrap_or_default();
    if expect == "accepted" {
        assert!(notes.is_empty(), "{id}: {notes:#?}");
        return;
    }
    let [note] = notes.as_slice() else { panic!("{id}: one note: {notes:#?}") };
    assert_eq!(note.outcome.as_str(), expect, "{id}: {note:#?}");
    if let Some(reason) = fixture["reason"].as_str() {
        assert_eq!(note.reason, reason, "{id}: {note:#?}");
    }
    assert_eq!((note.inspections, note.uninspected), (1, 1), "{id}: {note:#?}");
    assert!(note.then.contains("published without inspection"), "{id}: {note:#?}");
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    let failure = status.inspections[0].last_failure.clone().expect("the last failure");
    assert_eq!(failure.outcome.as_str(), expect, "{id}: {failure:#?}");
}

/// An inspection answer with this verdict.
fn inspection(verdict: &str) -> MockResponse {
    MockResponse::status(200).json(&format!(
        r#"{{"inspectionResult":{{"indexStatusResult":{{"verdict":"{verdict}","coverageState":"Submitted and indexed"}}}}}}"#
    ))
}

#[test]
fn an_indexed_url_is_skipped_and_not_published() {
    let sb = Sandbox::google(r#"skip_indexed = true, site_url = "sc-domain:example.com""#);
    let indexed = sb.url("/indexed");
    let indexed_in_mock = indexed.clone();
    sb.engine.respond_with("POST", GOOGLE_INSPECT, move |req| {
        if req.json()["inspectionUrl"] == indexed_in_mock.as_str() {
            inspection("PASS")
        } else {
            inspection("NEUTRAL")
        }
    });
    let urls = sb.urls("urls.txt", &["/indexed", "/new"]);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let results = results(&doc);
    let skipped = result_for(&results, &indexed);
    assert_eq!(skipped["outcome"], "skipped", "{skipped:#}");
    assert_eq!(skipped["reason"], "already_indexed", "{skipped:#}");
    assert_eq!(result_for(&results, &sb.url("/new"))["outcome"], "accepted");
    assert_eq!(sb.google_published(), vec![(sb.url("/new"), "URL_UPDATED".to_string())]);

    let inspections = sb.engine.requests_to("POST", GOOGLE_INSPECT);
    assert_eq!(inspections.len(), 2);
    let mut inspected: Vec<String> = Vec::new();
    for req in &inspections {
        let body = req.json();
        assert_eq!(body["siteUrl"], "sc-domain:example.com", "{body}");
        assert_eq!(req.header("authorization"), Some(format!("Bearer {GOOGLE_ACCESS_TOKEN}").as_str()));
        inspected.push(body["inspectionUrl"].as_str().unwrap().to_string());
    }
    inspected.sort();
    assert_eq!(inspected, vec![indexed.clone(), sb.url("/new")]);

    // The token asks for the inspection scope too.
    let tokens = sb.engine.requests_to("POST", GOOGLE_TOKEN);
    assert_eq!(tokens.len(), 1);
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(tokens[0].body.as_bytes()).into_owned().collect();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    validation.insecure_disable_signature_validation();
    validation.validate_aud = false;
    let claims = jsonwebtoken::decode::<serde_json::Value>(
        &form["assertion"],
        &jsonwebtoken::DecodingKey::from_secret(b""),
        &validation,
    )
    .unwrap()
    .claims;
    let scopes: Vec<&str> = claims["scope"].as_str().unwrap().split_whitespace().collect();
    assert!(scopes.contains(&"https://www.googleapis.com/auth/webmasters.readonly"), "{scopes:?}");
    assert!(scopes.contains(&"https://www.googleapis.com/auth/indexing"), "{scopes:?}");
}

#[test]
fn a_failed_inspection_still_publishes() {
    let sb = Sandbox::google(r#"skip_indexed = true, site_url = "sc-domain:example.com""#);
    sb.engine.on("POST", GOOGLE_INSPECT, vec![MockResponse::status(500).json(INTERNAL)]);
    let urls = list(&sb, "p", 1);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    let r = result_for(&results(&doc), &sb.url("/p1")).clone();
    assert_eq!(r["outcome"], "accepted", "{r:#}");
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_INSPECT).len(), 1);
    assert_eq!(sb.google_published(), vec![(sb.url("/p1"), "URL_UPDATED".to_string())]);
}

#[test]
fn status_shows_the_project_pool_and_the_property_share_apart() {
    let sb = Sandbox::google("");
    let urls = list(&sb, "p", 2);
    sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0);
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    let days = google_day_budgets(&status);
    let pool: Vec<_> = days.iter().filter(|b| b.limit == Some(200)).collect();
    let share: Vec<_> = days.iter().filter(|b| b.limit == Some(11)).collect();
    assert_eq!(pool.len(), 1, "the project pool: {status:#?}");
    assert_eq!(share.len(), 1, "the property's share: {status:#?}");
    for b in [pool[0], share[0]] {
        assert_eq!(b.property, "site");
        assert_eq!(b.used, 2, "{b:#?}");
        assert_eq!(b.timezone, "America/Los_Angeles", "{b:#?}");
        assert_eq!(b.resets_at, "2026-12-03T00:00:00-08:00", "{b:#?}");
        assert_eq!(b.window, "2026-12-02", "{b:#?}");
    }
    assert_eq!(pool[0].scope, json::Scope::Pool);
    assert_eq!(share[0].scope, json::Scope::Property);
    assert_eq!(pool[0].remaining, Some(198));
    assert_eq!(share[0].remaining, Some(9));
    let human = sb.indexq(&["status"]).now(NOW).env("TZ", "Asia/Shanghai").output().code(0);
    assert!(human.stdout.contains(GOOGLE_PROJECT), "{}", human.stdout);
    assert!(human.stdout.contains("America/Los_Angeles"), "{}", human.stdout);
    assert!(human.stdout.contains("16:00 in your timezone"), "{}", human.stdout);
}

#[test]
fn a_bad_service_account_key_file_is_a_config_error_naming_the_file_and_field() {
    let sb = Sandbox::google("");
    let path = sb.dir.path().join("service-account.json");
    let good: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let private_key = good["private_key"].as_str().unwrap().to_string();
    let urls = list(&sb, "p", 1);
    let mut cases: Vec<(String, &str)> =
        vec![("{ not json".into(), "not JSON"), (serde_json::json!({"type": "authorized_user"}).to_string(), "`type`")];
    let mut no_email = good.clone();
    no_email.as_object_mut().unwrap().remove("client_email");
    cases.push((no_email.to_string(), "`client_email`"));
    let mut bad_key = good.clone();
    bad_key["private_key"] = serde_json::json!("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
    cases.push((bad_key.to_string(), "`private_key`"));
    let mut remote_token = good.clone();
    remote_token["token_uri"] = serde_json::json!("http://oauth.example/token");
    cases.push((remote_token.to_string(), "`token_uri`"));
    for (text, field) in cases {
        std::fs::write(&path, &text).unwrap();
        let done = sb.indexq(&["submit", urls.to_str().unwrap()]).now(NOW).output().code(2);
        assert!(
            done.stderr.contains("service-account.json") && done.stderr.contains(field),
            "{field}: {}",
            done.stderr
        );
        assert!(!done.stderr.contains("BEGIN PRIVATE KEY") && !done.stderr.contains(&private_key[40..80]));
    }
    std::fs::remove_file(&path).unwrap();
    let done = sb.indexq(&["submit", urls.to_str().unwrap()]).now(NOW).output().code(2);
    assert!(done.stderr.contains("service-account.json"), "{}", done.stderr);
    assert!(sb.engine.requests().is_empty(), "nothing was sent");
}

/// A dry run plans by reading: the burst goes now, the next URLs wait for
/// their paced slots (2 s apart at 30 a minute), and those past the
/// property's share of 8 wait for Pacific midnight; nothing is sent and no
/// ledger is made.
#[test]
fn a_dry_run_plans_the_burst_the_paced_slots_and_the_budget() {
    let mut sb = Sandbox::google("daily_quota = 8");
    sb.google_extra = "daily_quota = 1000\nrequests_per_minute = 30\n".into();
    sb.write_config();
    let urls = list(&sb, "p", 12);
    let doc = sb.indexq(&["--json", "submit", "--dry-run", urls.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(doc["plan"].as_array().unwrap().len(), 4, "a burst of 4 now: {doc:#}");
    let results = results(&doc);
    let paced: Vec<i64> = results
        .iter()
        .filter(|r| r["reason"] == "paced")
        .map(|r| epoch(r["retry_at"].as_str().unwrap()) - epoch(NOW))
        .collect();
    assert_eq!(paced, [2, 4, 6, 8], "{doc:#}");
    let budget: Vec<&serde_json::Value> = results.iter().filter(|r| r["reason"] == "budget").collect();
    assert_eq!(budget.len(), 4, "{doc:#}");
    assert!(budget.iter().all(|r| r["retry_at"] == "2026-12-03T00:00:00-08:00"), "{doc:#}");
    assert_eq!(doc["plan_summary"]["google"]["new"], 12, "{doc:#}");
    assert_eq!(doc["plan_summary"]["google"]["waiting"], 8, "{doc:#}");
    assert!(sb.engine.requests().is_empty(), "nothing sent, no token asked for");
    assert!(!sb.ledger().exists(), "no ledger made");
}

/// The inspection mock answers `verdict` for every URL.
fn inspecting(sb: &Sandbox, verdict: &'static str) {
    sb.engine.respond_with("POST", GOOGLE_INSPECT, move |_| inspection(verdict));
}

/// Issue 26, item 2: with `skip_indexed`, a removed URL that Google has
/// indexed — when announcing the removal matters most — is published as
/// `URL_DELETED`, never inspected, and spends no inspection.
#[test]
fn a_deleted_url_is_announced_without_an_inspection() {
    let sb = Sandbox::google(r#"skip_indexed = true, site_url = "sc-domain:example.com""#);
    inspecting(&sb, "PASS");
    let gone = sb.urls("gone.txt", &["/gone", "/also-gone"]);
    let doc =
        sb.indexq(&["--json", "submit", "--deleted", gone.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    for path in ["/gone", "/also-gone"] {
        let r = doc.result_for(&sb.url(path));
        assert_eq!((r.outcome, r.reason.as_str()), (json::Outcome::Accepted, "ok"), "{r:#?}");
    }
    let mut published = sb.google_published();
    published.sort();
    let deleted = |p: &str| (sb.url(p), "URL_DELETED".to_string());
    assert_eq!(published, [deleted("/also-gone"), deleted("/gone")]);
    assert!(sb.engine.requests_to("POST", GOOGLE_INSPECT).is_empty(), "a removal is never inspected");
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    let [inspections] = status.inspections.as_slice() else { panic!("{status:#?}") };
    assert!(inspections.budgets.iter().all(|b| b.used == 0), "no inspection spent: {inspections:#?}");

    // In a run that updates too, only the update is inspected (and skipped: indexed).
    let updated = sb.urls("updated.txt", &["/kept"]);
    let doc = sb.indexq(&["--json", "submit", updated.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    assert_eq!(doc.result_for(&sb.url("/kept")).reason, "already_indexed");
    let inspected: Vec<String> = sb
        .engine
        .requests_to("POST", GOOGLE_INSPECT)
        .iter()
        .map(|r| r.json()["inspectionUrl"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(inspected, [sb.url("/kept")]);
}

/// The fixture's refusal (google-inspection-403-not-owner), compact.
const NOT_OWNER: &str = r#"{"error":{"code":403,"message":"You do not own this site, or the inspected URL is not part of this property.","status":"PERMISSION_DENIED"}}"#;

/// Issue 26, item 3: an inspection Google refuses is classified, the URL
/// published all the same, and the run says once what happened, what
/// indexq did and the fix (`sc-domain:` for a URL-prefix `site_url`);
/// inspections stop for the rest of the run; `status`, the metrics and
/// `doctor` say it too.
#[test]
fn a_refused_inspection_publishes_says_why_once_and_is_counted() {
    let mut sb = Sandbox::google("skip_indexed = true");
    // A burst of 4, then one a second: the refusals are in before the 5th.
    sb.google_extra = "requests_per_minute = 60\n".into();
    sb.write_config();
    sb.engine.on("POST", GOOGLE_INSPECT, vec![MockResponse::status(403).json(NOT_OWNER)]);
    let urls = list(&sb, "p", 6);
    // Said like any problem that needs a human: exit 3 on the run that says it.
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3).submit_doc();
    assert_eq!(doc.summary.accepted, 6, "every URL is published: {doc:#?}");
    assert_eq!(sb.google_published().len(), 6);
    let asked = sb.engine.requests_to("POST", GOOGLE_INSPECT).len() as u64;
    assert_eq!(asked, 1, "the first inspection goes alone; after its refusal, no more");
    let parked = doc.parked.clone().unwrap_or_default();
    let told: Vec<_> = parked.iter().filter(|p| p.kind == json::NoticeKind::Inspection).collect();
    let [told] = told.as_slice() else { panic!("one inspection notice: {doc:#?}") };
    assert!(told.told && told.reason == "inspection_not_owner" && told.fix.is_some(), "{told:#?}");
    let notes = doc.inspections.clone().unwrap_or_default();
    let [note] = notes.as_slice() else { panic!("one note for the run: {doc:#?}") };
    assert_eq!((note.outcome, note.reason.as_str()), (json::Outcome::Misconfigured, "inspection_not_owner"));
    assert_eq!((note.inspections, note.uninspected, note.http_status), (asked, 6, Some(403)), "{note:#?}");
    assert!(note.message.contains("You do not own this site"), "{note:#?}");
    let hint = note.hint.as_deref().unwrap();
    assert!(hint.contains(GOOGLE_EMAIL) && hint.contains("site_url = \"sc-domain:127.0.0.1\""), "{hint}");
    assert!(note.then.contains("`skip_indexed` is not working"), "{note:#?}");

    // In words: said once, with the fix.
    let more = list(&sb, "q", 3);
    let done = sb.indexq(&["submit", more.to_str().unwrap()]).now("2026-12-03T09:40:00+08:00").output().code(0);
    assert_eq!(done.stdout.matches("URL inspection refused").count(), 1, "{}", done.stdout);
    assert!(done.stdout.contains("`skip_indexed` is not working"), "{}", done.stdout);
    assert!(done.stdout.contains("hint: ") && done.stdout.contains("sc-domain:"), "{}", done.stdout);
    assert!(done.stdout.contains("3 URLs accepted"), "{}", done.stdout);
    let asked_twice = sb.engine.requests_to("POST", GOOGLE_INSPECT).len() as u64;
    assert_eq!(asked_twice, asked + 1, "each run asks once, and stops at the refusal");
    // -q says only what needs a human, once per `[submit] remind` (a day):
    // told at 09:30, quiet at 09:45, said again the next day with exit 3.
    let quiet = list(&sb, "r", 1);
    let done = sb.indexq(&["-q", "submit", quiet.to_str().unwrap()]).now("2026-12-03T09:45:00+08:00").output().code(0);
    assert_eq!(done.stdout, "", "{}", done.stdout);

    // status: the inspection budget (what reached Google), the answers, the last failure.
    let status = sb.indexq(&["--json", "status"]).now("2026-12-03T09:46:00+08:00").output().code(0).status_doc();
    let [inspections] = status.inspections.as_slice() else { panic!("{status:#?}") };
    let asked = sb.engine.requests_to("POST", GOOGLE_INSPECT).len() as u64;
    assert_eq!(inspections.answers[&json::Class::Misconfigured], asked, "{inspections:#?}");
    assert_eq!(inspections.answers[&json::Class::Accepted], 0);
    let day = inspections.budgets.iter().find(|b| b.period == json::Period::Day).unwrap();
    assert_eq!((day.used, day.limit), (asked, Some(2000)), "only inspections that went out count: {day:#?}");
    let failure = inspections.last_failure.as_ref().unwrap();
    assert_eq!((failure.reason.as_str(), failure.http_status), ("inspection_not_owner", Some(403)));
    assert!(failure.hint.as_deref().unwrap().contains("sc-domain:"), "{failure:#?}");
    let human = sb.indexq(&["status"]).now("2026-12-03T09:46:00+08:00").output().code(0);
    assert!(
        human.stdout.contains("last failure:") && human.stdout.contains("inspection_not_owner"),
        "{}",
        human.stdout
    );

    // The metrics count them by class.
    let metrics = sb.indexq(&["status", "--format", "prometheus"]).now(NOW).output().code(0).stdout;
    assert!(metrics.contains("# TYPE indexq_google_inspections_total counter"), "{metrics}");
    let sample = format!("indexq_google_inspections_total{{property=\"site\",class=\"misconfigured\"}} {asked}");
    assert!(metrics.lines().any(|l| l == sample), "{sample}\n{metrics}");
    assert!(metrics.contains("indexq_google_inspections_total{property=\"site\",class=\"accepted\"} 0"), "{metrics}");

    // doctor inspects the site itself (no publish) and says the fix.
    let before = sb.google_published().len();
    let doctor = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(3).doctor_doc();
    let check = doctor.check("google_inspection");
    assert!(!check.ok, "{check:#?}");
    assert!(check.message.contains("You do not own this site"), "{check:#?}");
    assert!(check.fix.as_deref().unwrap().contains("sc-domain:127.0.0.1"), "{check:#?}");
    let last = sb.engine.requests_to("POST", GOOGLE_INSPECT).pop().unwrap().json();
    assert_eq!(
        (last["inspectionUrl"].as_str(), last["siteUrl"].as_str()),
        (Some(sb.site_url().as_str()), Some(sb.site_url().as_str()))
    );
    assert_eq!(sb.google_published().len(), before, "doctor publishes nothing");

    // The next day, -q says it again (exit 3), with the fix.
    let quiet = list(&sb, "s", 1);
    let done = sb.indexq(&["-q", "submit", quiet.to_str().unwrap()]).now("2026-12-04T09:35:00+08:00").output().code(3);
    assert!(
        done.stdout.starts_with("needs a human: ") && done.stdout.contains("inspection_not_owner"),
        "{}",
        done.stdout
    );
    assert!(done.stdout.contains("sc-domain:"), "the fix: {}", done.stdout);
}

/// The fixture's inspection quota (google-inspection-429-quota), compact.
const INSPECTION_QUOTA: &str =
    r#"{"error":{"code":429,"message":"Quota exceeded for sc-domain:example.fr.","status":"RESOURCE_EXHAUSTED"}}"#;

/// Issue 26, item 3: an inspection quota answer spends the inspection
/// window it names (unnamed: a minute), never the publish budget; until it
/// reopens URLs are published without inspection, and each run says so.
#[test]
fn an_inspection_quota_publishes_without_inspecting_until_its_window_reopens() {
    let sb = Sandbox::google(r#"skip_indexed = true, site_url = "sc-domain:example.fr""#);
    sb.engine.on("POST", GOOGLE_INSPECT, vec![MockResponse::status(429).json(INSPECTION_QUOTA)]);
    let urls = list(&sb, "p", 2);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    assert_eq!(doc.summary.accepted, 2, "{doc:#?}");
    let notes = doc.inspections.clone().unwrap_or_default();
    let [note] = notes.as_slice() else { panic!("{doc:#?}") };
    assert_eq!((note.outcome, note.reason.as_str()), (json::Outcome::Quota, "quota"), "{note:#?}");
    let until = epoch(note.until.as_deref().expect("until when"));
    assert!((epoch(NOW) + 60..=epoch(NOW) + 61).contains(&until), "a minute: {note:#?}");
    assert!(note.then.contains("published without inspection until"), "{note:#?}");
    // The burst may ask both before the first answer, or one: after a quota, no more.
    let asked = sb.engine.requests_to("POST", GOOGLE_INSPECT).len();
    assert!((1..=2).contains(&asked), "{asked}");
    assert_eq!((note.inspections, note.uninspected), (asked as u64, 2), "{note:#?}");
    // The publish budget is not the inspections': both URLs count, nothing blocks it.
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    assert!(google_day_budgets(&status).iter().all(|b| b.used == 2 && b.blocked_until.is_none()), "{status:#?}");
    let minute = status.inspections[0].budgets.iter().find(|b| b.period == json::Period::Minute).unwrap().clone();
    assert!(minute.blocked_until.is_some(), "{minute:#?}");

    // Half a minute later: published, not inspected, and said.
    let more = list(&sb, "q", 1);
    let later = "2026-12-03T09:30:30+08:00";
    let doc = sb.indexq(&["--json", "submit", more.to_str().unwrap()]).now(later).output().code(0).submit_doc();
    assert_eq!(doc.result_for(&sb.url("/q1")).outcome, json::Outcome::Accepted);
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_INSPECT).len(), asked, "no inspection while the window is spent");
    let notes = doc.inspections.clone().unwrap_or_default();
    let [note] = notes.as_slice() else { panic!("{doc:#?}") };
    assert_eq!((note.outcome, note.reason.as_str(), note.uninspected), (json::Outcome::Deferred, "budget", 1));
    assert!(note.message.contains("Google said"), "{note:#?}");
    assert_eq!(note.until.as_deref().map(epoch), Some(until), "{note:#?}");

    // Once it reopens, inspections go again.
    sb.engine.on("POST", GOOGLE_INSPECT, vec![inspection("NEUTRAL")]);
    let again = list(&sb, "r", 1);
    let doc = sb
        .indexq(&["--json", "submit", again.to_str().unwrap()])
        .now("2026-12-03T09:32:00+08:00")
        .output()
        .code(0)
        .submit_doc();
    assert_eq!(doc.result_for(&sb.url("/r1")).outcome, json::Outcome::Accepted);
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_INSPECT).len(), asked + 1);
    assert!(doc.inspections.is_none(), "{doc:#?}");
}

/// Issue 26, item 3: a failure on Google's side publishes the URL and says
/// so; inspections go on.
#[test]
fn a_failed_inspection_is_said_and_the_url_published() {
    let sb = Sandbox::google("skip_indexed = true");
    sb.engine.on("POST", GOOGLE_INSPECT, vec![MockResponse::status(500).json(INTERNAL)]);
    let urls = list(&sb, "p", 2);
    let done = sb.indexq(&["submit", urls.to_str().unwrap()]).now(NOW).output().code(0);
    assert!(done.stdout.contains("2 URL inspections failed (internal)"), "{}", done.stdout);
    assert!(done.stdout.contains("2 URLs were published without inspection"), "{}", done.stdout);
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_INSPECT).len(), 2, "a failure does not stop inspections");
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).status_doc();
    assert_eq!(status.inspections[0].answers[&json::Class::Transient], 2);
}

/// Issue 26, item 8: Google's 200 without `latestUpdate` (a page the
/// Indexing API is not documented for) is accepted as `received`, told
/// apart from the documented success.
#[test]
fn a_publish_google_merely_received_is_accepted_as_received() {
    let sb = Sandbox::google("");
    let received = r#"{"urlNotificationMetadata":{"url":"https://www.theurlwesubmitted.com/path/page.html"}}"#;
    sb.engine.respond_with("POST", GOOGLE_PUBLISH, move |req| {
        if req.json()["url"].as_str().is_some_and(|u| u.ends_with("/job")) {
            google_published_response(req)
        } else {
            MockResponse::status(200).json(received)
        }
    });
    let urls = sb.urls("urls.txt", &["/job", "/blog-post", "/about"]);
    let doc = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(0).submit_doc();
    assert_eq!(doc.summary.accepted, 3);
    assert_eq!(doc.result_for(&sb.url("/job")).reason, "ok");
    for path in ["/blog-post", "/about"] {
        let r = doc.result_for(&sb.url(path));
        assert_eq!((r.outcome, r.reason.as_str(), r.http_status), (json::Outcome::Accepted, "received", Some(200)));
        assert!(r.message.contains("JobPosting") && r.message.contains("latestUpdate"), "{r:#?}");
    }
    let more = sb.urls("more.txt", &["/other"]);
    let done = sb.indexq(&["submit", more.to_str().unwrap()]).now("2026-12-03T09:31:00+08:00").output().code(0);
    assert!(done.stdout.contains("1 URL received only"), "{}", done.stdout);
    assert!(done.stdout.contains("JobPosting or BroadcastEvent"), "{}", done.stdout);
    assert!(!done.stdout.contains("URL accepted"), "{}", done.stdout);
}
