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
    let body = |path: &str| serde_json::json!({"host": host(&sb), "key": KEY, "urlList": [sb.url(path), sb.url(&format!("{path}/2"))]});
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

const GHOST_SECRET: &str = "ghost-signing-secret-5b1e9c7d";
const VERCEL_SECRET: &str = "vercel-signing-secret-3a2f4e6b";
const NETLIFY_SECRET: &str = "netlify-signing-secret-8c0d1e2f";

/// `serve` with every platform's signing secret set, and a bearer token for
/// the other hooks.
fn signed_serve(sb: &mut Sandbox) -> Served {
    sb.extra.push_str(
        "\n[serve.webhooks]\nghost_secret_env = \"GHOST_SECRET\"\nvercel_secret_env = \"VERCEL_SECRET\"\n\
         netlify_secret_env = \"NETLIFY_SECRET\"\n\n[[serve.token]]\nid = \"ci\"\ntoken_env = \"CI_TOKEN\"\n\
         properties = [\"site\"]\n",
    );
    sb.write_config();
    let run = sb.indexq(&["-v", "serve", "--listen", "127.0.0.1:0"]).now(NOW);
    Served::start_run(
        run.env("GHOST_SECRET", GHOST_SECRET)
            .env("VERCEL_SECRET", VERCEL_SECRET)
            .env("NETLIFY_SECRET", NETLIFY_SECRET)
            .env("CI_TOKEN", GHOST_TOKEN),
    )
}

fn fixture(sb: &Sandbox, name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/webhooks").join(name);
    std::fs::read_to_string(path).unwrap().replace("{{SITE}}", &sb.site.url())
}

fn hmac_hex(algorithm: ring::hmac::Algorithm, secret: &str, data: &[u8]) -> String {
    let key = ring::hmac::Key::new(algorithm, secret.as_bytes());
    ring::hmac::sign(&key, data).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Ghost's `X-Ghost-Signature` for `body` sent at `ms` (its webhook trigger:
/// tests/fixtures/webhooks/README.md, "Signatures").
fn ghost_signature(secret: &str, body: &str, ms: i64) -> String {
    let mac = hmac_hex(ring::hmac::HMAC_SHA256, secret, format!("{body}{ms}").as_bytes());
    format!("sha256={mac}, t={ms}")
}

/// Netlify's `X-Webhook-Signature`: a JWS (HS256), `iss` netlify and the
/// body's SHA-256.
fn netlify_signature(secret: &str, body: &str) -> String {
    use sha2::Digest as _;
    let sha: String = sha2::Sha256::digest(body.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let claims = serde_json::json!({ "iss": "netlify", "sha256": sha });
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap()
}

fn signed_post(served: &Served, path: &str, header: Option<(&str, &str)>, body: &str) -> reqwest::blocking::Response {
    let mut req = served
        .client
        .post(format!("{}{path}", served.base))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some((name, value)) = header {
        req = req.header(name, value);
    }
    req.send().unwrap()
}

#[test]
fn a_signed_ghost_hook_is_taken_once_and_an_unsigned_stale_or_forged_one_is_401() {
    let mut sb = Sandbox::new();
    let served = signed_serve(&mut sb);
    let now_ms = chrono::DateTime::parse_from_rfc3339(NOW).unwrap().timestamp_millis();
    let body = fixture(&sb, "ghost-post.published.json");
    let path = "/v1/hooks/ghost/post.published";
    let unauthorized = |response: reqwest::blocking::Response| {
        let (status, r, _) = refusal(response);
        assert_eq!((status, r.error.as_str()), (401, "unauthorized"), "{}", r.message);
        r.message
    };
    // Unsigned, even with a good bearer token (in the query, as the old recipe had it).
    let with_token = format!("{path}?token={GHOST_TOKEN}");
    assert!(unauthorized(signed_post(&served, &with_token, None, &body)).contains("no signature"));
    let forged = ghost_signature("not-the-secret", &body, now_ms);
    assert!(unauthorized(signed_post(&served, path, Some(("X-Ghost-Signature", &forged)), &body)).contains("match"));
    let stale_ms = now_ms - 6 * 60 * 1000;
    let stale = ghost_signature(GHOST_SECRET, &body, stale_ms);
    assert!(unauthorized(signed_post(&served, path, Some(("X-Ghost-Signature", &stale)), &body)).contains("5 minutes"));
    let other_body = body.replace("webhookz", "webhookz-forged");
    let good = ghost_signature(GHOST_SECRET, &body, now_ms);
    assert!(unauthorized(signed_post(&served, path, Some(("X-Ghost-Signature", &good)), &other_body)).contains("match"));

    let doc = admitted(signed_post(&served, path, Some(("X-Ghost-Signature", &good)), &body));
    assert_eq!(doc.results[0].url, sb.url("/webhookz/"));
    assert!(unauthorized(signed_post(&served, path, Some(("X-Ghost-Signature", &good)), &body)).contains("replay"));
    // A signed hook that is not taken (a URL of no property: 422) is not
    // remembered: Ghost's retry of it gets the same answer, not a replay's 401.
    let elsewhere = body.replace(&sb.site.url(), "https://elsewhere.example");
    let signed = ghost_signature(GHOST_SECRET, &elsewhere, now_ms);
    for _ in 0..2 {
        let (status, r, _) = refusal(signed_post(&served, path, Some(("X-Ghost-Signature", &signed)), &elsewhere));
        assert_eq!((status, r.error.as_str()), (422, "invalid_urls"), "{}", r.message);
    }
    // The other hooks still take the bearer token.
    let generic = serde_json::json!({ "url": sb.url("/generic") });
    admitted(served.post_json("/v1/hooks/url", Some(GHOST_TOKEN), &generic));
    let done = served.stop().code(0);
    assert!(done.stderr.contains("POST /v1/hooks/ghost/post.published 202 token=ghost-signature"), "{}", done.stderr);
    for secret in [GHOST_SECRET, GHOST_TOKEN] {
        assert!(!done.stderr.contains(secret), "a secret in the log: {}", done.stderr);
    }
}

#[test]
fn vercel_and_netlify_hooks_need_their_signature_when_their_secret_is_set() {
    let mut sb = Sandbox::new();
    let served = signed_serve(&mut sb);
    // Preview deploys: answered 200 (ignored) once the signature holds.
    let vercel =
        fixture(&sb, "vercel-deployment-succeeded.json").replace("\"target\": \"production\"", "\"target\": null");
    let netlify = fixture(&sb, "netlify-deploy-succeeded.json")
        .replace("\"context\": \"production\"", "\"context\": \"deploy-preview\"");
    let status = |r: reqwest::blocking::Response| r.status().as_u16();

    let signature = hmac_hex(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, VERCEL_SECRET, vercel.as_bytes());
    let forged = hmac_hex(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, "another", vercel.as_bytes());
    assert_eq!(status(signed_post(&served, "/v1/hooks/vercel", None, &vercel)), 401);
    assert_eq!(status(signed_post(&served, "/v1/hooks/vercel", Some(("x-vercel-signature", &forged)), &vercel)), 401);
    assert_eq!(
        status(signed_post(&served, "/v1/hooks/vercel", Some(("x-vercel-signature", &signature)), &vercel)),
        200
    );
    assert_eq!(
        status(signed_post(&served, "/v1/hooks/vercel", Some(("x-vercel-signature", &signature)), &vercel)),
        401,
        "a replay"
    );

    let jws = netlify_signature(NETLIFY_SECRET, &netlify);
    let forged = netlify_signature("another", &netlify);
    let of_other_body = netlify_signature(NETLIFY_SECRET, "{}");
    assert_eq!(status(signed_post(&served, "/v1/hooks/netlify", None, &netlify)), 401);
    for bad in [&forged, &of_other_body, &"not.a.jws".to_string()] {
        assert_eq!(
            status(signed_post(&served, "/v1/hooks/netlify", Some(("X-Webhook-Signature", bad)), &netlify)),
            401
        );
    }
    assert_eq!(status(signed_post(&served, "/v1/hooks/netlify", Some(("X-Webhook-Signature", &jws)), &netlify)), 200);
    assert_eq!(status(signed_post(&served, "/v1/hooks/netlify", Some(("X-Webhook-Signature", &jws)), &netlify)), 401);
    served.stop().code(0);
}
