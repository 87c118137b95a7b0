//! `serve` in the protocols the tools around it already speak: IndexNow's
//! own (`[serve] indexnow = true`: `GET` and `POST /indexnow`, authenticated
//! by the property's IndexNow key), asked by reqwest and by a published
//! IndexNow client library; and the signed webhooks of Ghost, Vercel and
//! Netlify (`[serve.webhooks]`).
#![cfg(unix)]

use crate::serve::{admitted, refusal, wait_for, Served};
use crate::support::mock::MockResponse;
use crate::support::*;
use std::time::Duration;

const NOW: &str = "2026-12-03T09:00:00Z";

/// A sandbox whose one property goes to IndexNow and Bing, with `serve`
/// speaking IndexNow and `serve_extra` in its `[serve]` table.
fn indexnow_sandbox(serve_extra: &str) -> Sandbox {
    let mut sb = Sandbox::new();
    sb.bing = Some("daily_quota = 5000".into());
    sb.bing_quota(100, 1000);
    sb.engine.on("POST", BING_SUBMIT, vec![MockResponse::status(200).json(r#"{"d":null}"#)]);
    sb.extra.push_str(&format!("\n[serve]\nindexnow = true\n{serve_extra}\n"));
    sb.write_config();
    sb
}

/// The site's host, as IndexNow's `host` names it.
fn host(sb: &Sandbox) -> String {
    url::Url::parse(&sb.site_url()).unwrap().host_str().unwrap().to_string()
}

fn indexnow_post(served: &Served, body: &serde_json::Value) -> reqwest::blocking::Response {
    served.post("/indexnow", Some("application/json; charset=utf-8"), serde_json::to_vec(body).unwrap())
}

#[test]
fn indexnow_requests_with_the_propertys_key_go_to_every_engine_and_others_are_refused() {
    let sb = indexnow_sandbox("");
    let served = Served::start_run(sb.indexq(&["-v", "serve", "--listen", "127.0.0.1:0"]).now(NOW));
    let (a, b) = (sb.url("/a"), sb.url("/b"));
    // The protocol's POST, as indexnow.org/documentation writes it.
    let body = serde_json::json!({
        "host": host(&sb), "key": KEY, "keyLocation": sb.key_location(), "urlList": [a, b],
    });
    let doc = admitted(indexnow_post(&served, &body));
    assert_eq!((doc.urls, doc.queued), (2, 4), "each URL to IndexNow and Bing: {doc:?}");
    wait_for(&sb, ENDPOINT_PATH, 1);
    wait_for(&sb, BING_SUBMIT, 1);
    let mut sent = sb.received_urls();
    sent.sort();
    assert_eq!(sent, [a.clone(), b.clone()]);
    // The protocol's GET: one URL, no keyLocation.
    let c = sb.url("/c");
    let query = format!("/indexnow?url={}&key={KEY}", urlencode(&c));
    let response = served.get(&query);
    assert_eq!(response.status(), 202, "{}", response.text().unwrap());

    let refused = |body: serde_json::Value| {
        let (status, r, _) = refusal(indexnow_post(&served, &body));
        (status, r.error)
    };
    let other_key = "fedcba9876543210fedcba9876543210";
    let d = sb.url("/d");
    assert_eq!(
        refused(serde_json::json!({"host": host(&sb), "key": other_key, "urlList": [d]})),
        (403, "forbidden".into()),
        "a key that is not the property's"
    );
    assert_eq!(
        refused(serde_json::json!({
            "host": host(&sb), "key": KEY, "keyLocation": format!("{}/elsewhere/{KEY}.txt", sb.site.url()), "urlList": [d],
        })),
        (403, "forbidden".into()),
        "a key location that is not the property's"
    );
    assert_eq!(
        refused(serde_json::json!({"host": "other.example", "key": KEY, "urlList": [d]})),
        (422, "invalid_urls".into()),
        "a URL not on the host"
    );
    assert_eq!(
        refused(serde_json::json!({"host": "other.example", "key": KEY, "urlList": ["https://other.example/x"]})),
        (422, "invalid_urls".into()),
        "a URL of no property"
    );
    assert_eq!(refused(serde_json::json!({"host": host(&sb), "key": KEY})), (400, "bad_request".into()));
    assert_eq!(
        refused(serde_json::json!({"host": host(&sb), "key": "short", "urlList": [d]})).0,
        422,
        "a key outside the protocol's schema"
    );
    let (status, _, _) = refusal(served.get(&format!("/indexnow?url={}", urlencode(&d))));
    assert_eq!(status, 400, "a GET without its key");
    let done = served.stop().code(0);
    assert!(done.stderr.contains("POST /indexnow 202 token=-"), "{}", done.stderr);
    assert!(!done.stderr.contains(KEY), "the key is never logged: {}", done.stderr);
    let q = sb.indexq(&["--json", "queue", "list"]).now(NOW).output().code(0).json();
    let listed = q.to_string();
    assert!(!listed.contains(&d), "nothing refused was taken: {listed}");
}

#[test]
fn indexnow_requests_over_the_intake_limits_are_429_with_retry_after() {
    let sb = indexnow_sandbox("urls_per_minute = 1\nurl_burst = 2\n");
    let served = Served::start(&sb, &[]);
    let body = |path: &str| {
        serde_json::json!({"host": host(&sb), "key": KEY, "urlList": [sb.url(path), sb.url(&format!("{path}/2"))]})
    };
    admitted(indexnow_post(&served, &body("/a")));
    let (status, r, retry) = refusal(indexnow_post(&served, &body("/b")));
    assert_eq!((status, r.error.as_str(), r.limit.as_deref()), (429, "rate_limited", Some("urls_per_minute")));
    let retry: u64 = retry.expect("Retry-After").parse().unwrap();
    // Two URLs more at one a minute, none left: two minutes.
    assert_eq!(retry, 120);
    served.stop().code(0);
}

/// `index-now-for-python` (PyPI, the version `.ci/run` installs), pointed at
/// `serve` as its docs show a custom endpoint: its GET and its POST are
/// taken. Gated: `.ci/run` provides the interpreter with it installed.
#[test]
#[ignore = "needs index-now-for-python: $INDEXQ_TEST_INDEXNOW_PYTHON (a python with it); .ci/run provides it"]
fn a_published_indexnow_client_submits_through_serve() {
    let python = std::env::var("INDEXQ_TEST_INDEXNOW_PYTHON")
        .expect("$INDEXQ_TEST_INDEXNOW_PYTHON: a python with index-now-for-python installed (.ci/run makes one)");
    let sb = indexnow_sandbox("");
    let served = Served::start(&sb, &[]);
    let script = r#"
import sys
from index_now import IndexNowAuthentication, submit_url_to_index_now, submit_urls_to_index_now
endpoint, host, key, location, one, *many = sys.argv[1:]
auth = IndexNowAuthentication(host=host, api_key=key, api_key_location=location)
print(submit_urls_to_index_now(auth, many, endpoint=endpoint))
print(submit_url_to_index_now(auth, one, endpoint=endpoint))
wrong = IndexNowAuthentication(host=host, api_key="fedcba9876543210fedcba9876543210", api_key_location=location)
print(submit_url_to_index_now(wrong, one, endpoint=endpoint))
"#;
    let (one, many) = (sb.url("/one"), [sb.url("/a"), sb.url("/b")]);
    let endpoint = format!("{}/indexnow", served.base);
    let out = std::process::Command::new(&python)
        .args(["-c", script, &endpoint, &host(&sb), KEY, &sb.key_location(), &one, &many[0], &many[1]])
        .output()
        .expect("run the python of $INDEXQ_TEST_INDEXNOW_PYTHON");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let codes: Vec<&str> = stdout.lines().filter(|l| l.chars().all(|c| c.is_ascii_digit())).collect();
    assert_eq!(codes, ["202", "202", "403"], "{stdout}");
    wait_for(&sb, BING_SUBMIT, 1);
    std::thread::sleep(Duration::from_millis(500));
    let done = served.stop().code(0);
    let mut sent = sb.received_urls();
    sent.sort();
    assert_eq!(sent, [many[0].clone(), many[1].clone(), one], "{}", done.stderr);
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
