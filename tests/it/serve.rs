//! `indexq serve`: the real binary on a free port of 127.0.0.1, asked by a
//! real HTTP client (reqwest), in front of the mock engines. Every endpoint
//! and every refusal is checked with its status, its body (through the
//! strict structs below) and its headers; the worker sends what the intake
//! took, and SIGTERM loses nothing.
#![cfg(unix)]

use crate::signals::Running;
use crate::support::mock::MockResponse;
use crate::support::*;
use reqwest::blocking::{Client, Response};
use serde::Deserialize;
use std::time::{Duration, Instant};

const NOW: &str = "2026-12-03T09:00:00Z";

/// A refusal of indexq's own.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Refusal {
    pub error: String,
    pub message: String,
    #[serde(default)]
    pub hint: Option<String>,
    #[serde(default)]
    pub retry_after: Option<u64>,
    #[serde(default)]
    pub limit: Option<String>,
    #[serde(default)]
    pub urls: Vec<RefusedUrl>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefusedUrl {
    pub url: String,
    pub source: String,
    pub reason: String,
    pub message: String,
}

/// `POST /v1/urls`'s `202`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Admitted {
    pub urls: usize,
    pub queued: usize,
    pub results: Vec<UrlAdmitted>,
    /// A Ghost hook's: `payload`, `remembered` or `slug`.
    #[serde(default)]
    pub url_from: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UrlAdmitted {
    pub url: String,
    pub property: String,
    pub engines: Vec<EngineAdmitted>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineAdmitted {
    pub engine: String,
    #[serde(default)]
    pub endpoint: Option<String>,
    pub admission: String,
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub planned_at: Option<String>,
    #[serde(default)]
    pub retry_at: Option<String>,
    #[serde(default)]
    pub retry_after_secs: Option<i64>,
}

/// A `serve` process and the address it listens on.
pub struct Served {
    pub run: Running,
    pub base: String,
    pub client: Client,
}

impl Served {
    /// Starts `indexq serve --listen 127.0.0.1:0` (and `args`) in `sb`, and
    /// reads the address it picked from its first line.
    pub fn start(sb: &Sandbox, args: &[&str]) -> Served {
        Served::start_run(sb.indexq(&[&["serve", "--listen", "127.0.0.1:0"], args].concat()).now(NOW))
    }

    pub fn start_run(run: Run) -> Served {
        let run = Running::start(run);
        run.wait_for_stderr("indexq serve: listening on http://");
        // The whole line, to its end.
        let end = Instant::now() + Duration::from_secs(20);
        let text = loop {
            let text = run.stderr_text();
            let at = text.find("indexq serve: listening on ").unwrap();
            if text[at..].contains('\n') {
                break text;
            }
            assert!(Instant::now() < end, "the address line never ended: {text}");
            std::thread::sleep(Duration::from_millis(5));
        };
        // The first line says where (at -v and more, log lines may come before it).
        let line = text.lines().find(|l| l.starts_with("indexq serve: listening on ")).unwrap_or_default();
        if !text.contains("DEBUG") && !text.contains("INFO") {
            assert!(text.starts_with(line), "the first line names the address: {text}");
        }
        let base = line.strip_prefix("indexq serve: listening on ").unwrap().to_string();
        let client = Client::builder().timeout(Duration::from_secs(15)).build().unwrap();
        Served { run, base, client }
    }

    pub fn get(&self, path: &str) -> Response {
        self.sent(self.client.get(format!("{}{path}", self.base)))
    }

    /// POSTs `body` as JSON, with `token` as its bearer token if any.
    pub fn post_json(&self, path: &str, token: Option<&str>, body: &serde_json::Value) -> Response {
        let mut req = self.client.post(format!("{}{path}", self.base)).json(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        self.sent(req)
    }

    pub fn post(&self, path: &str, content_type: Option<&str>, body: impl Into<reqwest::blocking::Body>) -> Response {
        let mut req = self.client.post(format!("{}{path}", self.base)).body(body);
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        self.sent(req)
    }

    /// The answer to `req`; a request that gets none fails the test with
    /// what the server said (a server that stopped says why).
    fn sent(&self, req: reqwest::blocking::RequestBuilder) -> Response {
        req.send().unwrap_or_else(|e| panic!("{e}\nthe server said:\n{}", self.run.stderr_text()))
    }

    /// SIGTERM, then what the process said and its exit code.
    pub fn stop(self) -> Done {
        self.run.signal(libc::SIGTERM);
        self.run.finish()
    }
}

/// The status, the refusal's body, and `Retry-After`.
pub fn refusal(response: Response) -> (u16, Refusal, Option<String>) {
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    assert_eq!(response.headers()["content-type"], "application/json", "a refusal is JSON");
    let text = response.text().unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not a refusal ({e}): {text}"));
    (status, body, retry)
}

pub fn admitted(response: Response) -> Admitted {
    let status = response.status().as_u16();
    let text = response.text().unwrap();
    assert_eq!(status, 202, "{text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not the 202 document ({e}): {text}"))
}

/// Waits until the mock engine got `n` POSTs to `path`.
pub fn wait_for(sb: &Sandbox, path: &str, n: usize) {
    assert!(
        sb.engine.wait_for_requests("POST", path, n, Duration::from_secs(20)),
        "the engine never got {n} request(s) to {path}: {:?}",
        sb.engine.requests()
    );
}

/// Waits until the mock engine got `n` POSTs to `path` and the worker has
/// recorded their answers (no item in flight, asked over `GET /v1/queue`):
/// the engine has an answer before the ledger does.
pub fn wait_recorded(served: &Served, sb: &Sandbox, path: &str, n: usize) {
    wait_for(sb, path, n);
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let text = served.get("/v1/queue?state=in_flight").text().unwrap();
        let json::Doc::QueueList(q) = json::check_text(&text) else { panic!("not the queue document: {text}") };
        if q.items.is_empty() {
            return;
        }
        assert!(Instant::now() < end, "still in flight: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the ledger holds `n` accepted items (asked over `GET /v1/queue`).
pub fn wait_accepted(served: &Served, n: usize) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let text = served.get("/v1/queue?state=accepted").text().unwrap();
        let json::Doc::QueueList(q) = json::check_text(&text) else { panic!("not the queue document: {text}") };
        if q.items.len() >= n {
            return;
        }
        assert!(Instant::now() < end, "never {n} accepted: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn queue(sb: &Sandbox) -> json::QueueList {
    let every = "--state=due,waiting,parked,in_flight,accepted";
    sb.indexq(&["--json", "queue", "list", every]).now(NOW).output().code(0).queue_doc()
}

#[test]
fn health_and_readiness_answer_and_urls_posted_are_sent_at_once() {
    let sb = Sandbox::new();
    let served = Served::start(&sb, &[]);
    let health = served.get("/healthz");
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().unwrap(), r#"{"status":"ok"}"#);
    let ready = served.get("/readyz");
    assert_eq!(ready.status(), 200);
    assert_eq!(ready.text().unwrap(), r#"{"status":"ready"}"#);

    let (a, b) = (sb.url("/a"), sb.url("/b"));
    let doc = admitted(served.post_json("/v1/urls", None, &serde_json::json!({ "urls": [a, b] })));
    assert_eq!((doc.urls, doc.queued), (2, 2));
    let first = &doc.results[0];
    assert_eq!((first.url.as_str(), first.property.as_str()), (a.as_str(), "site"));
    let [e] = first.engines.as_slice() else { panic!("one engine: {first:?}") };
    assert_eq!((e.engine.as_str(), e.admission.as_str(), e.reason.as_str()), ("indexnow", "queued", "queued"));
    assert_eq!(e.endpoint.as_deref(), Some(sb.endpoints[0].as_str()));
    assert!(e.planned_at.as_deref().is_some_and(|t| t.starts_with("2026-12-03T09:00")), "{e:?}");
    // The worker woke for them: no poll, no wait.
    wait_accepted(&served, 2);
    assert_eq!(sb.received_urls(), [a.clone(), b.clone()]);

    // Posted again within the dedupe window: skipped, said so.
    let text = format!("{a}\n\n{b}\n");
    let doc = admitted(served.post("/v1/urls", Some("text/plain; charset=utf-8"), text));
    assert_eq!(doc.queued, 0);
    let e = &doc.results[1].engines[0];
    assert_eq!((e.admission.as_str(), e.reason.as_str()), ("skipped", "already_accepted"));
    assert!(e.message.starts_with("accepted "), "{e:?}");
    let done = served.stop().code(0);
    assert!(done.stderr.contains("IndexNow"), "each round says what it sent:\n{}", done.stderr);
    let q = queue(&sb);
    assert_eq!(q.items.len(), 2);
    assert!(q.items.iter().all(|i| i.state == json::ItemState::Accepted), "{:?}", q.items);
}

#[test]
fn each_refusal_has_its_status_reason_and_per_url_reasons() {
    let mut sb = Sandbox::new();
    sb.extra.push_str("\n[serve]\nmax_body = 2048\n");
    sb.write_config();
    let served = Served::start(&sb, &[]);

    let (status, r, _) = refusal(served.post("/v1/urls", Some("application/xml"), "<urls/>"));
    assert_eq!((status, r.error.as_str()), (415, "unsupported_media_type"));
    assert!(r.message.contains("application/xml"), "{}", r.message);
    let (status, r, _) = refusal(served.post("/v1/urls", None, sb.url("/a")));
    assert_eq!((status, r.error.as_str()), (415, "unsupported_media_type"));

    for (ct, body) in [
        ("application/json", b"{\"urls\": [".to_vec()),
        ("application/json", b"{\"urls\": [], \"colour\": 1}".to_vec()),
        ("application/json", b"{\"urls\": []}".to_vec()),
        ("application/json", format!("{}{}", "[".repeat(1000), "]".repeat(1000)).into_bytes()),
        ("text/plain", b"https://a.example/\xff\xfe".to_vec()),
        ("application/json", b"\x00\x01\x02garbage".to_vec()),
    ] {
        let (status, r, _) = refusal(served.post("/v1/urls", Some(ct), body.clone()));
        assert_eq!((status, r.error.as_str()), (400, "bad_request"), "{}", String::from_utf8_lossy(&body));
    }

    let body = serde_json::json!({ "urls": [sb.url("/a"), "https://elsewhere.example/x", "not a url"] });
    let (status, r, _) = refusal(served.post_json("/v1/urls", None, &body));
    assert_eq!((status, r.error.as_str()), (422, "invalid_urls"));
    let reasons: Vec<(&str, &str, &str)> =
        r.urls.iter().map(|u| (u.url.as_str(), u.source.as_str(), u.reason.as_str())).collect();
    assert_eq!(
        reasons,
        [("https://elsewhere.example/x", "urls[1]", "no_property"), ("not a url", "urls[2]", "invalid_url")]
    );
    assert!(r.message.contains("nothing was taken"), "{}", r.message);
    assert!(r.hint.is_some_and(|h| h.contains("under a configured property's site")));

    let big = format!("{}\n", sb.url("/a")).repeat(100);
    let (status, r, _) = refusal(served.post("/v1/urls", Some("text/plain"), big));
    assert_eq!((status, r.error.as_str()), (413, "payload_too_large"));
    assert!(r.message.contains("2048 bytes ([serve] max_body)"), "{}", r.message);

    let (status, r, _) = refusal(served.get("/v2/urls"));
    assert_eq!((status, r.error.as_str()), (404, "not_found"));
    // The hint names every endpoint, the webhooks and the IndexNow protocol's too.
    let hint = r.hint.unwrap_or_default();
    for endpoint in ["POST /v1/urls", "/v1/hooks/ghost/{event}", "/v1/hooks/cloudflare-pages", "GET and POST /indexnow"]
    {
        assert!(hint.contains(endpoint), "{endpoint} in {hint}");
    }
    let (status, r, _) = refusal(served.get("/v1/urls"));
    assert_eq!((status, r.error.as_str()), (405, "method_not_allowed"));

    served.stop().code(0);
    assert!(sb.engine.requests_to("POST", ENDPOINT_PATH).is_empty(), "nothing refused was sent");
    assert!(queue(&sb).items.is_empty(), "nothing refused was taken");
}

#[test]
fn serve_refuses_to_listen_beyond_loopback_without_a_token() {
    let sb = Sandbox::new();
    let done = sb.indexq(&["serve", "--listen", "0.0.0.0:0"]).now(NOW).output().code(2);
    assert!(done.stderr.contains("not loopback, with no [[serve.token]]"), "{}", done.stderr);
    assert!(done.stderr.contains("--listen"), "{}", done.stderr);
}

/// A sandbox with a second property (`shop`) and a token for each:
/// `ghost` writes the site, `shop` the shop.
pub fn with_tokens() -> Sandbox {
    let mut sb = Sandbox::new();
    sb.more_properties = format!(
        "[[property]]\nname = \"shop\"\nsite = \"{}/shop/\"\nindexnow = {{ key_env = \"INDEXNOW_KEY\", key_location = \"{}\" }}\n",
        sb.site.url().replace("127.0.0.1", "localhost"),
        sb.key_location().replace("127.0.0.1", "localhost"),
    );
    sb.extra.push_str(
        "\n[[serve.token]]\nid = \"ghost\"\ntoken_env = \"GHOST_TOKEN\"\nproperties = [\"site\"]\n\
         [[serve.token]]\nid = \"shop\"\ntoken_file = \"shop.token\"\nproperties = [\"shop\"]\n",
    );
    sb.file("shop.token", &format!("{SHOP_TOKEN}\n"));
    sb.write_config();
    sb
}

pub fn serve_with_tokens(sb: &Sandbox, args: &[&str]) -> Served {
    let run = sb.indexq(&[&["-v", "serve", "--listen", "127.0.0.1:0"], args].concat()).now(NOW);
    Served::start_run(run.env("GHOST_TOKEN", GHOST_TOKEN))
}

#[test]
fn a_token_writes_its_properties_and_nothing_else() {
    let sb = with_tokens();
    let served = serve_with_tokens(&sb, &[]);
    let ours = serde_json::json!({ "urls": [sb.url("/post")] });

    let (status, r, _) = refusal(served.post_json("/v1/urls", None, &ours));
    assert_eq!((status, r.error.as_str()), (401, "unauthorized"));
    let (status, r, _) = refusal(served.post_json("/v1/urls", Some("not-a-configured-token-123"), &ours));
    assert_eq!((status, r.error.as_str()), (401, "unauthorized"));
    let www = served.post_json("/v1/urls", None, &ours);
    assert_eq!(www.headers()["www-authenticate"], "Bearer realm=\"indexq\"");
    assert_eq!(served.get("/healthz").status(), 200, "health needs no token");

    // The shop's token may not write the site's URLs.
    let (status, r, _) = refusal(served.post_json("/v1/urls", Some(SHOP_TOKEN), &ours));
    assert_eq!((status, r.error.as_str()), (403, "forbidden"));
    assert_eq!(r.urls[0].reason, "not_allowed");
    assert!(r.urls[0].message.contains("token `shop` may not write this URL's property"), "{:?}", r.urls);
    assert!(!r.urls[0].message.contains("`site`"), "a token never learns others' property names: {:?}", r.urls);
    assert_eq!((r.retry_after, r.limit), (None, None), "waiting never fixes a 403");

    let doc = admitted(served.post_json("/v1/urls", Some(GHOST_TOKEN), &ours));
    assert_eq!(doc.queued, 1);
    wait_for(&sb, ENDPOINT_PATH, 1);
    let done = served.stop().code(0);
    // Log lines name the token by its id, never the token (the suite-wide
    // check reads every byte of the output for the tokens themselves).
    assert!(done.stderr.contains("POST /v1/urls 202 token=ghost"), "{}", done.stderr);
    assert!(done.stderr.contains("POST /v1/urls 403 token=shop"), "{}", done.stderr);
    assert!(done.stderr.contains("POST /v1/urls 401 token=-"), "{}", done.stderr);
    assert_eq!(sb.received_urls(), [sb.url("/post")]);
}

#[test]
fn sigterm_during_a_send_refuses_intake_with_503_records_the_answer_and_exits_0() {
    let mut sb = Sandbox::new();
    sb.extra.push_str("\n[submit]\nstop_grace = \"10s\"\n");
    sb.write_config();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).delay(Duration::from_millis(2000))]);
    let served = Served::start(&sb, &[]);
    admitted(served.post_json("/v1/urls", None, &serde_json::json!({ "urls": [sb.url("/a")] })));
    wait_for(&sb, ENDPOINT_PATH, 1);
    served.run.signal(libc::SIGTERM);
    served.run.wait_for_stderr("SIGTERM: stopping");
    let started = Instant::now();
    let (status, r, retry) =
        refusal(served.post_json("/v1/urls", None, &serde_json::json!({ "urls": [sb.url("/b")] })));
    assert!(started.elapsed() < Duration::from_secs(2), "the intake answers at once while the send finishes");
    assert_eq!((status, r.error.as_str(), retry.as_deref()), (503, "shutting_down", Some("10")));
    assert_eq!(r.retry_after, Some(10));
    let (status, r, _) = refusal(served.get("/readyz"));
    assert_eq!((status, r.error.as_str()), (503, "shutting_down"));
    served.run.finish().code(0);
    let q = queue(&sb);
    assert_eq!(q.items.len(), 1, "the URL refused with 503 was not taken: {:?}", q.items);
    let item = q.item(&sb.url("/a"));
    assert_eq!((item.state, item.attempts), (json::ItemState::Accepted, 1), "the answer in flight was recorded");
}

#[test]
fn budget_queue_and_metrics_say_what_status_and_queue_list_say() {
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", daily_quota = 2".into();
    sb.write_config();
    let served = Served::start(&sb, &[]);
    let urls: Vec<String> = ["/a", "/b", "/c"].iter().map(|p| sb.url(p)).collect();
    let doc = admitted(served.post_json("/v1/urls", None, &serde_json::json!({ "urls": urls })));
    // An engine's quota is never an intake error: the third is queued with the time it goes.
    assert_eq!(doc.queued, 3);
    let planned: Vec<&str> = doc.results.iter().map(|r| r.engines[0].planned_at.as_deref().unwrap()).collect();
    // Each URL says when the worker's own plan sends it: the two that fit
    // today's budget now, the third when the day reopens.
    assert_eq!(
        planned,
        ["2026-12-03T09:00:00+00:00", "2026-12-03T09:00:00+00:00", "2026-12-04T00:00:00+00:00"],
        "two of three fit today's budget"
    );
    wait_for(&sb, ENDPOINT_PATH, 1);

    let budget = served.get("/v1/budget");
    assert_eq!(budget.status(), 200);
    let text = budget.text().unwrap();
    let json::Doc::Status(status) = json::check_text(&text) else { panic!("not the status document: {text}") };
    let day = status.budgets.iter().find(|b| b.period == json::Period::Day).expect("the daily rule");
    assert_eq!((day.used, day.limit, day.remaining), (2, Some(2), Some(0)));

    let queue = served.get("/v1/queue?state=waiting");
    assert_eq!(queue.status(), 200);
    let text = queue.text().unwrap();
    let json::Doc::QueueList(q) = json::check_text(&text) else { panic!("not the queue document: {text}") };
    assert_eq!(q.items.len(), 1);
    assert_eq!(q.items[0].state, json::ItemState::Waiting);
    // Posted again while it waits: waiting, with when it goes.
    let doc = admitted(served.post_json("/v1/urls", None, &serde_json::json!({ "urls": [sb.url("/c")] })));
    let e = &doc.results[0].engines[0];
    assert_eq!((e.admission.as_str(), e.retry_at.as_deref()), ("waiting", Some("2026-12-04T00:00:00+00:00")));
    assert!(e.retry_after_secs.is_some_and(|s| s > 50_000), "{e:?}");
    let (status, r, _) = refusal(served.get("/v1/queue?state=lost"));
    assert_eq!((status, r.error.as_str()), (400, "bad_request"));
    assert!(r.message.contains("`state=lost`"), "{}", r.message);

    let metrics = served.get("/metrics");
    assert_eq!(metrics.status(), 200);
    assert!(metrics.headers()["content-type"].to_str().unwrap().starts_with("text/plain; version=0.0.4"));
    let served_text = metrics.text().unwrap();
    let cli = sb.indexq(&["status", "--format", "prometheus"]).now(NOW).output().code(0).stdout;
    let families =
        |t: &str| -> Vec<String> { t.lines().filter(|l| l.starts_with("# TYPE")).map(String::from).collect() };
    assert_eq!(families(&served_text), families(&cli), "the families of status --format prometheus");
    assert!(served_text.contains("indexq_budget_used"), "{served_text}");
    served.stop().code(0);
}

#[test]
fn sources_read_on_request_with_changed_and_per_property() {
    let mut sb = with_tokens();
    let sitemap = crate::support::sitemap::Sitemap::serve(&sb.site, "/sitemap.xml");
    sitemap.add("/a", Some("2026-12-01"));
    sitemap.add("/b", None);
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.extra.push_str("\n[serve]\nsources_every = \"0\"\n");
    sb.write_config();
    let served = serve_with_tokens(&sb, &[]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(sb.site.requests_to("GET", "/sitemap.xml").is_empty(), "sources_every = 0: never read by itself");

    let (status, r, _) =
        refusal(served.post_json("/v1/sources", Some(SHOP_TOKEN), &serde_json::json!({ "property": "site" })));
    // Another's property is answered as one that does not exist: a token
    // never learns which others there are.
    assert_eq!((status, r.error.as_str()), (422, "unknown_property"));
    assert_eq!(r.hint.as_deref(), Some("the properties of token `shop`: shop"));
    let (status, r, _) =
        refusal(served.post_json("/v1/sources", Some(GHOST_TOKEN), &serde_json::json!({ "property": "blog" })));
    assert_eq!((status, r.error.as_str()), (422, "unknown_property"));

    let read = served.post_json("/v1/sources", Some(GHOST_TOKEN), &serde_json::json!({}));
    assert_eq!(read.status(), 202);
    let doc: serde_json::Value = read.json().unwrap();
    assert_eq!(doc["engines"]["indexnow"]["new"], 2, "{doc}");
    assert_eq!(doc["invalid"], 0, "{doc}");
    wait_for(&sb, ENDPOINT_PATH, 1);
    let mut sent = sb.received_urls();
    sent.sort();
    assert_eq!(sent, [sb.url("/a"), sb.url("/b")]);

    // Again, unchanged: a conditional GET, a 304, nothing new.
    let read = served.client.post(format!("{}/v1/sources", served.base)).bearer_auth(GHOST_TOKEN).send().unwrap();
    assert_eq!(read.status(), 202);
    let doc: serde_json::Value = read.json().unwrap();
    assert_eq!(doc["engines"], serde_json::json!({}), "{doc}");
    let gets = sb.site.requests_to("GET", "/sitemap.xml");
    assert_eq!(gets.len(), 2);
    assert!(gets[1].header("If-None-Match").is_some(), "read conditionally");
    served.stop().code(0);
}

/// The RateLimit fields of an answer: its policy, and what is left.
fn rate_fields(response: &Response) -> (String, Option<String>) {
    let h = response.headers();
    let policy = h.get("ratelimit-policy").expect("every answer has RateLimit-Policy").to_str().unwrap();
    (policy.to_string(), h.get("ratelimit").map(|v| v.to_str().unwrap().to_string()))
}

#[test]
fn a_token_over_its_rate_gets_429_with_when_to_retry_and_every_answer_says_what_is_left() {
    let mut sb = with_tokens();
    sb.extra.push_str("\n[serve]\nrequests_per_second = 1\nrequest_burst = 3\nurls_per_minute = 60\nurl_burst = 4\n");
    sb.write_config();
    let served = serve_with_tokens(&sb, &[]);
    let policy = "\"requests_per_second\";q=1;w=1, \"urls_per_minute\";q=60;w=60";

    let health = served.get("/healthz");
    assert_eq!(rate_fields(&health), (policy.to_string(), None), "health counts against nothing");
    let urls = |paths: &[&str]| serde_json::json!({ "urls": paths.iter().map(|p| sb.url(p)).collect::<Vec<_>>() });
    let first = served.post_json("/v1/urls", Some(GHOST_TOKEN), &urls(&["/1", "/2", "/3"]));
    let (_, left) = rate_fields(&first);
    assert_eq!(left.as_deref(), Some("\"requests_per_second\";r=2;t=1, \"urls_per_minute\";r=1;t=3"));
    admitted(first);
    // Two URLs more than the one left: refused by the URL rule, which stays as it was.
    let over = served.post_json("/v1/urls", Some(GHOST_TOKEN), &urls(&["/4", "/5"]));
    let (_, left) = rate_fields(&over);
    assert_eq!(left.as_deref(), Some("\"requests_per_second\";r=1;t=2, \"urls_per_minute\";r=1;t=3"));
    let (status, r, retry) = refusal(over);
    assert_eq!((status, r.error.as_str(), r.limit.as_deref()), (429, "rate_limited", Some("urls_per_minute")));
    assert_eq!(
        (r.retry_after, retry.as_deref()),
        (Some(1), Some("1")),
        "one more URL fits in 1 s: 2 s − 1 s, rounded up"
    );
    // More URLs than the burst can never pass: not a 429.
    let (status, r, retry) = refusal(served.post_json("/v1/urls", Some(SHOP_TOKEN), &serde_json::json!({
        "urls": (0..5).map(|i| format!("{}/shop/{i}", sb.site.url().replace("127.0.0.1", "localhost"))).collect::<Vec<_>>()
    })));
    assert_eq!(
        (status, r.error.as_str(), r.limit.as_deref(), retry),
        (413, "payload_too_large", Some("urls_per_minute"), None)
    );

    // The third request of the burst passes, the fourth is refused.
    assert_eq!(
        served.client.get(format!("{}/v1/queue", served.base)).bearer_auth(GHOST_TOKEN).send().unwrap().status(),
        200
    );
    let refused = served.client.get(format!("{}/v1/budget", served.base)).bearer_auth(GHOST_TOKEN).send().unwrap();
    let (_, left) = rate_fields(&refused);
    assert_eq!(left.as_deref(), Some("\"requests_per_second\";r=0;t=3"));
    let text = {
        let (status, r, retry) = refusal(refused);
        assert_eq!(
            (status, r.limit.as_deref(), r.retry_after, retry.as_deref()),
            (429, Some("requests_per_second"), Some(1), Some("1"))
        );
        r.message
    };
    assert!(text.contains("token `ghost`"), "{text}");
    // Each token has its own limits.
    let shop = served.client.get(format!("{}/v1/queue", served.base)).bearer_auth(SHOP_TOKEN).send().unwrap();
    assert_eq!(shop.status(), 200);
    served.stop().code(0);
}

/// Two `serve` processes on one PostgreSQL ledger: together they admit at
/// most a token's intake limit and send at most the engine's quota.
#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_two_serves_share_the_intake_limit_and_the_quota() {
    let pg = crate::support::pg::server();
    let mut sb = with_tokens();
    sb.indexnow_extra = ", daily_quota = 3".into();
    sb.extra
        .push_str("\n[serve]\nurls_per_minute = 1\nurl_burst = 5\nrequests_per_second = 100\nrequest_burst = 100\n");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).delay(Duration::from_millis(150))]);
    sb.use_pg(pg.ledger());
    sb.write_config();
    let (one, two) = (serve_with_tokens(&sb, &[]), serve_with_tokens(&sb, &[]));
    let mut admitted_urls = Vec::new();
    let mut limited = 0;
    for i in 0..10 {
        let served = if i % 2 == 0 { &one } else { &two };
        let url = sb.url(&format!("/p{i}"));
        let response = served.post_json("/v1/urls", Some(GHOST_TOKEN), &serde_json::json!({ "urls": [url] }));
        match response.status().as_u16() {
            202 => admitted_urls.push(url),
            429 => limited += 1,
            other => panic!("{other}: {}", response.text().unwrap()),
        }
    }
    assert_eq!((admitted_urls.len(), limited), (5, 5), "one limit, whichever process answers");
    wait_for(&sb, ENDPOINT_PATH, 1);
    std::thread::sleep(Duration::from_millis(1500));
    let (a, b) = (one.stop().code(0), two.stop().code(0));
    let received = sb.received_urls();
    assert_eq!(received.len(), 3, "the quota, over both workers: {received:?}\n{}\n{}", a.stderr, b.stderr);
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).json();
    assert_eq!(
        (status["queue"]["accepted"].as_u64(), status["queue"]["waiting"].as_u64()),
        (Some(3), Some(2)),
        "{status:#}"
    );
}

/// The worker sleeps until the budget's window reopens, then sends: no new
/// request, no poll.
#[test]
fn the_worker_sends_the_moment_a_window_reopens() {
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", daily_quota = 1".into();
    sb.write_config();
    let served = Served::start_run(sb.indexq(&["serve", "--listen", "127.0.0.1:0"]).now("2026-12-03T23:59:58Z"));
    let doc =
        admitted(served.post_json("/v1/urls", None, &serde_json::json!({ "urls": [sb.url("/a"), sb.url("/b")] })));
    assert_eq!(doc.results[1].engines[0].planned_at.as_deref(), Some("2026-12-04T00:00:00+00:00"));
    wait_for(&sb, ENDPOINT_PATH, 1);
    assert_eq!(sb.received_urls(), [sb.url("/a")], "one a day");
    let started = Instant::now();
    wait_for(&sb, ENDPOINT_PATH, 2);
    assert!(started.elapsed() < Duration::from_secs(5), "sent as the day began: {:?}", started.elapsed());
    assert_eq!(sb.received_urls(), [sb.url("/a"), sb.url("/b")]);
    let done = served.stop().code(0);
    assert_eq!(done.stderr.matches("POST /v1").count(), 0, "-v is off: no request log");
}

/// A fixture of `tests/fixtures/webhooks/`, with the sandbox's site in it.
fn webhook(sb: &Sandbox, name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/webhooks").join(name);
    std::fs::read_to_string(path).unwrap().replace("{{SITE}}", &sb.site.url())
}

fn post_hook(served: &Served, path: &str, body: String) -> Response {
    served
        .client
        .post(format!("{}{path}", served.base))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .unwrap()
}

#[test]
fn publish_hooks_take_the_url_their_platform_documents() {
    let sb = with_tokens();
    let served = serve_with_tokens(&sb, &[]);
    // Ghost sends no header of ours: the token rides in the query (never logged).
    let ghost = |event: &str, fixture: &str| {
        post_hook(&served, &format!("/v1/hooks/ghost/{event}?token={GHOST_TOKEN}"), webhook(&sb, fixture))
    };
    let doc = admitted(ghost("post.published", "ghost-post.published.json"));
    assert_eq!(doc.results[0].url, sb.url("/webhookz/"));
    let doc = admitted(ghost("post.deleted", "ghost-post.deleted.json"));
    assert_eq!(doc.results[0].url, sb.url("/testing-post-deleted-webhook/"));
    let generic = served
        .client
        .post(format!("{}/v1/hooks/url", served.base))
        .bearer_auth(GHOST_TOKEN)
        .header("content-type", "application/json")
        .body(webhook(&sb, "generic-url.json"))
        .send()
        .unwrap();
    assert_eq!(admitted(generic).results[0].url, sb.url("/from-a-cms/"));
    wait_accepted_with(&served, GHOST_TOKEN, 3);
    let mut sent = sb.received_urls();
    sent.sort();
    assert_eq!(sent, [sb.url("/from-a-cms/"), sb.url("/testing-post-deleted-webhook/"), sb.url("/webhookz/")]);

    let (status, r, _) = refusal(ghost("post.scheduled", "ghost-post.published.json"));
    assert_eq!((status, r.error.as_str()), (404, "not_found"));
    let (status, r, _) = refusal(post_hook(
        &served,
        &format!("/v1/hooks/ghost/post.published?token={GHOST_TOKEN}"),
        "{\"post\":{}}".into(),
    ));
    assert_eq!((status, r.error.as_str()), (422, "unreadable_payload"));
    let (status, r, _) = refusal(post_hook(
        &served,
        "/v1/hooks/ghost/post.published?token=wrong-token-0123456789",
        webhook(&sb, "ghost-post.published.json"),
    ));
    assert_eq!((status, r.error.as_str()), (401, "unauthorized"));
    let (status, _, _) =
        refusal(post_hook(&served, &format!("/v1/urls?token={GHOST_TOKEN}"), webhook(&sb, "generic-url.json")));
    assert_eq!(status, 401, "a query token is taken by the hooks only");
    let done = served.stop().code(0);
    assert!(done.stderr.contains("POST /v1/hooks/ghost/post.published 202 token=ghost"), "{}", done.stderr);
}

/// A post's life in Ghost's own payloads, through `serve` to Google (which
/// is told updated or deleted): published and edited announce the URL the
/// payload gives (the edit renamed the slug), unpublished and deleted the
/// public URL remembered — never the draft preview Ghost puts in an
/// unpublished post's `current.url`. A post or page never seen is deleted
/// at its slug's URL, and the answer says so.
#[test]
fn ghost_announces_a_posts_public_url_through_its_life() {
    let sb = Sandbox::google("");
    let served = Served::start_run(sb.indexq(&["serve", "--listen", "127.0.0.1:0"]).now(NOW));
    // Ghost's snapshots are of four posts: here they are one.
    let one_post = |fixture: &str| {
        ["6571c9d2a1b2c3d4e5f6071a", "6571c9d2a1b2c3d4e5f6071c", "6571c9d2a1b2c3d4e5f6071e"]
            .iter()
            .fold(webhook(&sb, fixture), |body, id| body.replace(id, "6571c9d2a1b2c3d4e5f60718"))
    };
    let hook = |event: &str, body: String| admitted(post_hook(&served, &format!("/v1/hooks/ghost/{event}"), body));
    let said = |doc: &Admitted| (doc.results[0].url.clone(), doc.url_from.clone().unwrap_or_default());
    let (published, edited) = (sb.url("/webhookz/"), sb.url("/testing-post-published-edited-webhook/"));

    let doc = hook("post.published", one_post("ghost-post.published.json"));
    assert_eq!(said(&doc), (published.clone(), "payload".into()));
    wait_recorded(&served, &sb, GOOGLE_PUBLISH, 1);
    let doc = hook("post.published.edited", one_post("ghost-post.published.edited.json"));
    assert_eq!(said(&doc), (edited.clone(), "payload".into()));
    wait_recorded(&served, &sb, GOOGLE_PUBLISH, 2);
    let unpublished = one_post("ghost-post.unpublished.json");
    assert!(unpublished.contains(&sb.url("/p/")), "Ghost's unpublished payload holds the preview");
    let doc = hook("post.unpublished", unpublished);
    assert_eq!(said(&doc), (edited.clone(), "remembered".into()));
    assert_eq!(doc.results[0].engines[0].admission, "queued");
    wait_recorded(&served, &sb, GOOGLE_PUBLISH, 3);
    let doc = hook("post.deleted", one_post("ghost-post.deleted.json"));
    assert_eq!(said(&doc), (edited.clone(), "remembered".into()));
    assert_eq!(doc.results[0].engines[0].admission, "skipped", "announced as deleted already");

    let doc = hook("post.deleted", webhook(&sb, "ghost-post.deleted.json"));
    assert_eq!(said(&doc), (sb.url("/testing-post-deleted-webhook/"), "slug".into()));
    let doc = hook("page.deleted", webhook(&sb, "ghost-page.deleted.json"));
    assert_eq!(said(&doc), (sb.url("/testing-page-deleted-webhook/"), "slug".into()));
    wait_recorded(&served, &sb, GOOGLE_PUBLISH, 5);
    served.stop().code(0);

    let mut told = sb.google_published();
    let (updated, deleted) = ("URL_UPDATED".to_string(), "URL_DELETED".to_string());
    assert_eq!(told[..3], [(published, updated.clone()), (edited.clone(), updated), (edited, deleted.clone())]);
    told[3..].sort();
    assert_eq!(
        told[3..],
        [
            (sb.url("/testing-page-deleted-webhook/"), deleted.clone()),
            (sb.url("/testing-post-deleted-webhook/"), deleted)
        ]
    );
    let queued = queue(&sb);
    assert_eq!(queued.items.len(), 4, "{queued:#?}");
    assert!(queued.items.iter().all(|i| !i.url.contains("/p/")), "no preview is queued: {queued:#?}");
}

/// A page's life in Ghost's own page payloads, as a post's above: published
/// and edited announce the URL the payload gives (Ghost's snapshots are of
/// four pages, so the edit comes with another slug), unpublished and deleted
/// the public URL remembered. The draft preview Ghost puts in an unpublished
/// page's `current.url` is never queued, nor taken as a published URL.
#[test]
fn ghost_announces_a_pages_public_url_through_its_life() {
    let sb = Sandbox::google("");
    let served = Served::start_run(sb.indexq(&["serve", "--listen", "127.0.0.1:0"]).now(NOW));
    let one_page = |fixture: &str| {
        ["6571c9d2a1b2c3d4e5f60724", "6571c9d2a1b2c3d4e5f60726", "6571c9d2a1b2c3d4e5f60720"]
            .iter()
            .fold(webhook(&sb, fixture), |body, id| body.replace(id, "6571c9d2a1b2c3d4e5f60722"))
    };
    let post = |event: &str, body: String| post_hook(&served, &format!("/v1/hooks/ghost/{event}"), body);
    let hook = |event: &str, body: String| admitted(post(event, body));
    let said = |doc: &Admitted| (doc.results[0].url.clone(), doc.url_from.clone().unwrap_or_default());
    let published = sb.url("/testing-page-published-webhook/");
    let edited = sb.url("/testing-page-published-edited-webhook/");

    let doc = hook("page.published", one_page("ghost-page.published.json"));
    assert_eq!(said(&doc), (published.clone(), "payload".into()));
    wait_for(&sb, GOOGLE_PUBLISH, 1);
    let doc = hook("page.published.edited", one_page("ghost-page.published.edited.json"));
    assert_eq!(said(&doc), (edited.clone(), "payload".into()));
    wait_for(&sb, GOOGLE_PUBLISH, 2);
    let unpublished = one_page("ghost-page.unpublished.json");
    let preview = sb.url("/p/6e8a1c3d-5f7b-4d9e-8a2c-4e6a8c1e3b5d/");
    assert!(unpublished.contains(&format!("\"url\": \"{preview}\"")), "Ghost's unpublished page holds the preview");
    // Sent to the wrong event, the preview is refused, not announced.
    let (status, r, _) = refusal(post("page.published", unpublished.clone()));
    assert_eq!((status, r.error.as_str()), (422, "unreadable_payload"));
    assert!(r.message.contains(&preview), "{}", r.message);
    let doc = hook("page.unpublished", unpublished);
    assert_eq!(said(&doc), (edited.clone(), "remembered".into()));
    assert_eq!(doc.results[0].engines[0].admission, "queued");
    wait_recorded(&served, &sb, GOOGLE_PUBLISH, 3);
    let doc = hook("page.deleted", one_page("ghost-page.deleted.json"));
    assert_eq!(said(&doc), (edited.clone(), "remembered".into()));
    assert_eq!(doc.results[0].engines[0].admission, "skipped", "announced as deleted already");
    served.stop().code(0);

    let (updated, deleted) = ("URL_UPDATED".to_string(), "URL_DELETED".to_string());
    assert_eq!(
        sb.google_published(),
        [(published.clone(), updated.clone()), (edited.clone(), updated), (edited.clone(), deleted)]
    );
    let queued = queue(&sb);
    let mut urls: Vec<&str> = queued.items.iter().map(|i| i.url.as_str()).collect();
    urls.sort();
    assert_eq!(urls, [edited.as_str(), published.as_str()], "no preview is queued: {queued:#?}");
}

/// `wait_accepted`, asked with a token.
fn wait_accepted_with(served: &Served, token: &str, n: usize) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let text = served
            .client
            .get(format!("{}/v1/queue?state=accepted", served.base))
            .bearer_auth(token)
            .send()
            .unwrap()
            .text()
            .unwrap();
        let json::Doc::QueueList(q) = json::check_text(&text) else { panic!("not the queue document: {text}") };
        if q.items.len() >= n {
            return;
        }
        assert!(Instant::now() < end, "never {n} accepted: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn deploy_hooks_read_the_sources_of_a_production_deploy() {
    let mut sb = with_tokens();
    let sitemap = crate::support::sitemap::Sitemap::serve(&sb.site, "/sitemap.xml");
    sitemap.add("/a", Some("2026-12-01"));
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.extra.push_str("\n[serve]\nsources_every = \"0\"\n");
    sb.write_config();
    let served = serve_with_tokens(&sb, &[]);
    let hook = |path: &str, body: String| {
        served
            .client
            .post(format!("{}{path}", served.base))
            .header("cf-webhook-auth", GHOST_TOKEN)
            .body(body)
            .send()
            .unwrap()
    };
    let read = |response: Response| -> serde_json::Value {
        assert_eq!(response.status(), 202);
        response.json().unwrap()
    };
    let doc = read(hook("/v1/hooks/netlify?property=site", webhook(&sb, "netlify-deploy-succeeded.json")));
    assert_eq!(doc["engines"]["indexnow"]["new"], 1, "{doc}");
    sitemap.add("/b", Some("2026-12-03"));
    let doc = read(hook("/v1/hooks/vercel", webhook(&sb, "vercel-deployment-succeeded.json")));
    assert_eq!(doc["engines"]["indexnow"]["new"], 1, "only what the deploy changed: {doc}");
    let doc = read(hook("/v1/hooks/cloudflare-pages", webhook(&sb, "cloudflare-pages-deployment.json")));
    assert_eq!(doc["engines"], serde_json::json!({}), "unchanged: a 304 {doc}");
    assert_eq!(sb.site.requests_to("GET", "/sitemap.xml").len(), 3);

    // A preview is not production: said, and nothing read.
    let preview = webhook(&sb, "netlify-deploy-succeeded.json")
        .replace("\"context\": \"production\"", "\"context\": \"deploy-preview\"");
    let ignored = hook("/v1/hooks/netlify", preview);
    assert_eq!(ignored.status(), 200);
    assert_eq!(
        ignored.text().unwrap(),
        r#"{"ignored":"a deploy-preview deploy: only production deploys read the sources"}"#
    );
    // Vercel says a deployment's target is production, staging or null.
    let preview =
        webhook(&sb, "vercel-deployment-succeeded.json").replace("\"target\": \"production\"", "\"target\": null");
    let ignored = hook("/v1/hooks/vercel", preview);
    assert_eq!(ignored.status(), 200);
    assert_eq!(
        ignored.text().unwrap(),
        r#"{"ignored":"a deployment to a preview: only production reads the sources"}"#
    );
    // Cloudflare's Workers alert, as its webhook payload schema shows one.
    let workers = webhook(&sb, "cloudflare-pages-deployment.json")
        .replace("\"alert_type\": \"pages_event_alert\"", "\"alert_type\": \"workers_alert\"");
    let ignored = hook("/v1/hooks/cloudflare-pages", workers);
    assert_eq!(ignored.status(), 200);
    assert_eq!(
        ignored.text().unwrap(),
        r#"{"ignored":"a `workers_alert` alert, not a Pages deployment (pages_event_alert)"}"#
    );
    let (status, r, _) = refusal(hook("/v1/hooks/vercel", "{\"id\":1}".into()));
    assert_eq!((status, r.error.as_str()), (422, "unreadable_payload"));
    let (status, r, _) =
        refusal(hook("/v1/hooks/netlify?property=shop", webhook(&sb, "netlify-deploy-succeeded.json")));
    assert_eq!((status, r.error.as_str()), (422, "unknown_property"), "another's property, as one that is not");
    assert_eq!(sb.site.requests_to("GET", "/sitemap.xml").len(), 3);
    wait_accepted_with(&served, GHOST_TOKEN, 2);
    served.stop().code(0);
}

/// `examples/systemd/indexq-serve.service`'s command line, as written, takes
/// a URL, sends it, and stops on SIGTERM (`systemctl stop`) with exit 0.
#[test]
fn the_systemd_units_command_line_serves_and_stops_cleanly() {
    let unit = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/systemd/indexq-serve.service"),
    )
    .unwrap();
    let exec = unit.lines().find_map(|l| l.strip_prefix("ExecStart=")).expect("an ExecStart");
    let args: Vec<&str> = exec.split_whitespace().skip(1).collect();
    let mut sb = Sandbox::new();
    // The unit listens where the configuration says: here, a free port.
    sb.extra.push_str("\n[serve]\nlisten = \"127.0.0.1:0\"\n");
    sb.write_config();
    let served = Served::start_run(sb.indexq(&args).now(NOW));
    admitted(served.post("/v1/urls", Some("text/plain"), sb.url("/from-systemd")));
    wait_accepted(&served, 1);
    served.stop().code(0);
    assert_eq!(sb.received_urls(), [sb.url("/from-systemd")]);
}

/// What a raw connection gets back within 5 s: what was read, or `None`
/// if it was reset.
fn read_answer(stream: &mut std::net::TcpStream) -> Option<String> {
    use std::io::Read;
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Some(String::from_utf8_lossy(&got).into_owned()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
                panic!("nothing within 5 s (read so far: {:?})", String::from_utf8_lossy(&got))
            }
            Err(_) if got.is_empty() => return None,
            Err(_) => return Some(String::from_utf8_lossy(&got).into_owned()),
        }
    }
}

#[test]
fn hostile_clients_get_a_clear_answer_or_a_closed_connection_and_serve_stays_up() {
    use std::io::Write;
    let mut sb = Sandbox::new();
    sb.extra.push_str("\n[serve]\nmax_connections = 8\nidle_timeout = \"1s\"\n");
    sb.write_config();
    let served = Served::start(&sb, &[]);
    let addr = served.base.trim_start_matches("http://").to_string();
    let connect = || std::net::TcpStream::connect(&addr).unwrap();

    // A body announced as 1 GB: refused once the cap is passed, never read whole.
    let started = Instant::now();
    let mut big = connect();
    let head =
        "POST /v1/urls HTTP/1.1\r\nHost: indexq\r\nContent-Type: text/plain\r\nContent-Length: 1073741824\r\n\r\n";
    big.write_all(head.as_bytes()).unwrap();
    let chunk = vec![b'a'; 64 * 1024];
    for _ in 0..18 {
        if big.write_all(&chunk).is_err() {
            break;
        }
    }
    if let Some(answer) = read_answer(&mut big) {
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    }
    assert!(started.elapsed() < Duration::from_secs(5));

    // Headers that never end: the connection is closed once it is idle.
    let mut slow = connect();
    slow.write_all(b"POST /v1/urls HTTP/1.1\r\nHost: ind").unwrap();
    let started = Instant::now();
    let answer = read_answer(&mut slow);
    assert!(answer.as_deref().is_none_or(|a| !a.starts_with("HTTP/1.1 2")), "{answer:?}");
    assert!(started.elapsed() < Duration::from_secs(4), "closed after idle_timeout: {:?}", started.elapsed());

    // A body that stalls halfway: the same.
    let mut stalled = connect();
    stalled.write_all(b"POST /v1/urls HTTP/1.1\r\nHost: indexq\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nhttps://").unwrap();
    let answer = read_answer(&mut stalled);
    assert!(answer.as_deref().is_none_or(|a| !a.starts_with("HTTP/1.1 2")), "{answer:?}");

    // Many more idle connections than max_connections: bounded (the others
    // wait in the kernel's backlog), and each closed when idle, so a real
    // client still gets its answer once the idle ones ahead of it are closed.
    let idle: Vec<_> = (0..40).map(|_| connect()).collect();
    let started = Instant::now();
    let health = served.get("/healthz");
    assert_eq!(health.status(), 200);
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    drop(idle);
    // Invalid UTF-8 in a header, and garbage instead of HTTP: a 400 or a close.
    let mut garbage = connect();
    garbage.write_all(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n").unwrap();
    let answer = read_answer(&mut garbage);
    assert!(answer.as_deref().is_none_or(|a| a.is_empty() || a.starts_with("HTTP/1.1 400")), "{answer:?}");

    assert_eq!(served.get("/healthz").status(), 200, "still up");
    served.stop().code(0);
}

/// docs/usage.md's `docker run … indexq serve` line, as far as this machine
/// runs it: the image's entrypoint with the line's arguments, the
/// configuration it mounts holding a `[[serve.token]]` whose `token_env`
/// the line passes (`-e`), listening beyond loopback (any address; a free
/// port instead of 8470): a URL posted with the token is taken and sent,
/// one without is refused, and `docker stop`'s SIGTERM ends it with 0.
#[test]
fn the_containers_documented_serve_command_serves_beyond_loopback_with_its_token() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let usage = std::fs::read_to_string(root.join("docs/usage.md")).unwrap();
    let line = usage
        .replace("\\\n", " ")
        .lines()
        .find_map(|l| l.trim().strip_prefix("docker run ").filter(|r| r.contains(" serve")).map(str::to_string))
        .expect("docs/usage.md documents `docker run … indexq serve`");
    let words: Vec<&str> = line.split_whitespace().collect();
    let image = words.iter().position(|w| *w == "indexq").expect("the image `indexq`");
    let passed: Vec<&str> = words.windows(2).filter(|w| w[0] == "-e").map(|w| w[1]).collect();
    assert!(passed.contains(&"INDEXNOW_KEY") && passed.contains(&"INDEXQ_GHOST_TOKEN"), "{line}");
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).unwrap();
    assert!(dockerfile.contains("ENTRYPOINT [\"/usr/bin/indexq\"]"), "the image runs indexq itself");
    assert!(line.contains(":/etc/indexq/config.toml"), "the configuration is mounted where the image reads it");
    assert!(dockerfile.contains("INDEXQ_CONFIG=/etc/indexq/config.toml"));
    let args: Vec<String> = words[image + 1..].iter().map(|w| w.replace(":8470", ":0")).collect();
    assert_eq!(args, ["serve", "--listen", "0.0.0.0:0"], "{line}");

    let mut sb = Sandbox::new();
    sb.extra
        .push_str("\n[[serve.token]]\nid = \"ghost\"\ntoken_env = \"INDEXQ_GHOST_TOKEN\"\nproperties = [\"site\"]\n");
    sb.write_config();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut served = Served::start_run(sb.indexq(&args).now(NOW).env("INDEXQ_GHOST_TOKEN", GHOST_TOKEN));
    assert!(served.base.starts_with("http://0.0.0.0:"), "{}", served.base);
    served.base = served.base.replace("0.0.0.0", "127.0.0.1");
    let url = sb.url("/from-the-container");
    let without = served.post_json("/v1/urls", None, &serde_json::json!({ "urls": [url] }));
    assert_eq!(without.status(), 401);
    admitted(served.post_json("/v1/urls", Some(GHOST_TOKEN), &serde_json::json!({ "urls": [url] })));
    wait_accepted_with(&served, GHOST_TOKEN, 1);
    served.stop().code(0);
    assert_eq!(sb.received_urls(), [url]);
}
