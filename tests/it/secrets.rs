//! Secrets in the forms engines echo them: a Google access token quoted by
//! a failing publish (the first token and one obtained by a refresh in the
//! middle of the run), the signed JWT assertion quoted by a token endpoint
//! that refuses it, and an IndexNow key echoed in another case or encoding.
//! Each stays out of every command's output and out of the ledger; and a
//! ledger URL mistyped so that it is no URL keeps its password out of
//! every output and of every file or folder name. (The
//! suite-wide check in `support` looks too; these tests also say what they
//! expect in its place, so they cannot pass by storing nothing.) Baidu's
//! push token and Yandex's OAuth token, quoted back, are tried too.

use crate::support::mock::{MockResponse, Request};
use crate::support::*;

const NOW: &str = "2026-12-03T09:30:00+08:00";

/// Every read-only view of the ledger a person or a script uses, joined.
fn every_view(sb: &Sandbox) -> String {
    let mut text = String::new();
    for args in [
        &["log"][..],
        &["--json", "log"],
        &["-vv", "status"],
        &["--json", "status"],
        &["queue", "list"],
        &["--json", "queue", "list"],
    ] {
        let done = sb.indexq(args).now(NOW).output().code(0);
        text.push_str(&done.stdout);
        text.push_str(&done.stderr);
    }
    text
}

/// Panics if `text` holds `form`, in any letter case.
fn assert_absent(text: &str, form: &str, what: &str) {
    assert!(
        !text.to_ascii_lowercase().contains(&form.to_ascii_lowercase()),
        "{what} leaked (a form starting {:?}) into:\n{text}",
        &form[..8]
    );
}

/// `text` with every byte percent-encoded (`%30%31...`), as some servers echo a value.
fn percent_all(text: &str) -> String {
    text.bytes().map(|b| format!("%{b:02X}")).collect()
}

/// `text` as HTML numeric character references (`&#48;&#49;...`).
fn html_all(text: &str) -> String {
    text.bytes().map(|b| format!("&#{b};")).collect()
}

/// `text` as JSON `\u` escapes (`\u0030\u0031...`).
fn json_all(text: &str) -> String {
    text.bytes().map(|b| format!("\\u{b:04x}")).collect()
}

/// A Google error body that quotes the request's `Authorization` header,
/// the token alone, upper-cased, percent-encoded and as a query parameter.
fn quoting_body(code: u16, status: &str, req: &Request) -> MockResponse {
    let header = req.header("authorization").unwrap_or_default().to_string();
    let token = header.strip_prefix("Bearer ").unwrap_or(&header).to_string();
    let echo = serde_json::json!({
        "error": {
            "code": code,
            "message": format!("Request failed. Headers: Authorization: {header}"),
            "status": status,
            "details": [{
                "token": token,
                "upper": header.to_ascii_uppercase(),
                "encoded": percent_all(&token),
                "request": format!("POST /v3/urlNotifications:publish?access_token={token}&alt=json"),
                "html": format!("&lt;code&gt;{}&lt;/code&gt;", html_all(&token)),
            }]
        }
    });
    MockResponse::status(code).json(&echo.to_string())
}

#[test]
fn google_tokens_quoted_by_failing_publishes_never_show() {
    let sb = Sandbox::google("daily_quota = 50");
    sb.engine.on(
        "POST",
        GOOGLE_TOKEN,
        vec![google_token_response(GOOGLE_ACCESS_TOKEN), google_token_response(GOOGLE_REFRESHED_TOKEN)],
    );
    // /e500 → 500, /e403 → 403, /e401 → 401 (a refresh, then 401 again):
    // each quotes the token it was sent.
    sb.engine.respond_with("POST", GOOGLE_PUBLISH, |req| {
        let url = req.json()["url"].as_str().unwrap_or_default().to_string();
        match url.rsplit('/').next().unwrap_or_default() {
            "e500" => quoting_body(500, "INTERNAL", req),
            "e403" => quoting_body(403, "PERMISSION_DENIED", req),
            _ => quoting_body(401, "UNAUTHENTICATED", req),
        }
    });
    let urls = sb.urls("urls.txt", &["/e500", "/e403", "/e401"]);
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let doc = done.json();
    let results = results(&doc);
    assert_eq!(result_for(&results, &sb.url("/e500"))["outcome"], "transient", "{doc:#}");
    assert_eq!(result_for(&results, &sb.url("/e403"))["outcome"], "misconfigured", "{doc:#}");
    let unauthenticated = result_for(&results, &sb.url("/e401"));
    assert_eq!(unauthenticated["reason"], "unauthenticated", "{doc:#}");

    // Both tokens were used: the one of the run and the one of the refresh.
    let sent: Vec<String> = sb
        .engine
        .requests_to("POST", GOOGLE_PUBLISH)
        .iter()
        .filter_map(|r| r.header("authorization").map(str::to_string))
        .collect();
    for token in [GOOGLE_ACCESS_TOKEN, GOOGLE_REFRESHED_TOKEN] {
        assert!(sent.contains(&format!("Bearer {token}")), "{token} was sent: {sent:?}");
    }

    let mut text = format!("{}{}", done.stdout, done.stderr);
    text.push_str(&every_view(&sb));
    // The bodies were stored and shown — with the token masked.
    assert!(text.contains("Request failed. Headers: Authorization: "), "the bodies are shown:\n{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    let ledger = String::from_utf8_lossy(&ledger_bytes(&sb.ledger())).into_owned();
    assert!(ledger.contains("Request failed"), "the bodies are stored");
    for token in [GOOGLE_ACCESS_TOKEN, GOOGLE_REFRESHED_TOKEN] {
        for (what, form) in [("the token", token.to_string()), ("the token percent-encoded", percent_all(token))] {
            assert_absent(&text, &form, what);
            assert_absent(&ledger, &form, what);
        }
        assert_absent(&text, &html_all(token), "the token HTML-escaped");
        assert_absent(&ledger, &html_all(token), "the token HTML-escaped");
    }
}

/// A sitemap's submission (issue 25): Bing's `SubmitFeed` carries the API
/// key in its query string and Search Console's `sitemaps.submit` the
/// token; engines that quote them back — the request's target, the key
/// upper-cased and percent-encoded, the `Authorization` header — leave
/// neither in any output or the ledger, where the bodies are kept masked.
#[test]
fn the_bing_key_and_the_token_of_a_sitemap_submission_never_show() {
    use crate::support::sitemap::Sitemap;
    // Bing: SubmitFeed answers 400 quoting its own target (…?apikey=KEY) and
    // the key in other forms; GetFeeds is not reached (the feed is parked).
    let mut sb = Sandbox::bing("");
    let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
    sitemap.add("/a", None);
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.write_config();
    sb.engine.respond_with("POST", BING_SUBMIT_FEED, |req| {
        let key = req.path.split("apikey=").nth(1).unwrap_or_default().to_string();
        let message = format!(
            "ERROR!!! InvalidParameter in {} (apikey {}, encoded {}, as JSON {})",
            req.path,
            key.to_ascii_uppercase(),
            percent_all(&key),
            json_all(&key)
        );
        MockResponse::status(400).json(&serde_json::json!({ "ErrorCode": 8, "Message": message }).to_string())
    });
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0"]).now(NOW).output().code(3);
    let doc = done.submit_doc();
    assert_eq!(doc.result_for(&sb.url("/sitemap.xml")).reason, "InvalidParameter", "{}", done.stdout);
    let [request] = sb.engine.requests_to("POST", BING_SUBMIT_FEED).try_into().unwrap();
    assert!(request.path.ends_with(&format!("?apikey={BING_KEY}")), "the key went in the query string");
    let mut text = format!("{}{}", done.stdout, done.stderr);
    text.push_str(&every_view(&sb));
    let doctor = sb.indexq(&["-v", "doctor"]).now(NOW).output();
    text.push_str(&doctor.stdout);
    text.push_str(&doctor.stderr);
    assert!(text.contains("ERROR!!! InvalidParameter in /webmaster/api.svc/json/SubmitFeed?apikey="), "{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    let ledger = String::from_utf8_lossy(&ledger_bytes(&sb.ledger())).into_owned();
    assert!(ledger.contains("InvalidParameter in /webmaster/api.svc/json/SubmitFeed"), "the body is stored");
    for (what, form) in [("the key", BING_KEY.to_string()), ("the key percent-encoded", percent_all(BING_KEY))] {
        assert_absent(&text, &form, what);
        assert_absent(&ledger, &form, what);
    }

    // Google: sitemaps.submit answers 403 quoting the bearer token.
    let mut sb = Sandbox::google("indexing = false");
    let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
    sitemap.add("/a", None);
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.write_config();
    let segment = |t: &str| -> String {
        t.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    };
    let path =
        format!("/webmasters/v3/sites/{}/sitemaps/{}", segment(&sb.site_url()), segment(&sb.url("/sitemap.xml")));
    sb.engine.respond_with("PUT", &path, |req| quoting_body(403, "PERMISSION_DENIED", req));
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0"]).now(NOW).output().code(3);
    let puts = sb.engine.requests_to("PUT", &path);
    assert_eq!(puts[0].header("authorization"), Some(format!("Bearer {GOOGLE_ACCESS_TOKEN}").as_str()));
    let mut text = format!("{}{}", done.stdout, done.stderr);
    text.push_str(&every_view(&sb));
    assert!(text.contains("Request failed. Headers: Authorization: "), "the body is shown:\n{text}");
    let ledger = String::from_utf8_lossy(&ledger_bytes(&sb.ledger())).into_owned();
    for (what, form) in [
        ("the token", GOOGLE_ACCESS_TOKEN.to_string()),
        ("the token percent-encoded", percent_all(GOOGLE_ACCESS_TOKEN)),
    ] {
        assert_absent(&text, &form, what);
        assert_absent(&ledger, &form, what);
    }
}

#[test]
fn a_token_endpoint_echoing_the_assertion_keeps_it_out_of_log_and_ledger() {
    let sb = Sandbox::google("");
    sb.engine.respond_with("POST", GOOGLE_TOKEN, |req| {
        let form: std::collections::HashMap<String, String> =
            url::form_urlencoded::parse(req.body.as_bytes()).into_owned().collect();
        let assertion = form.get("assertion").cloned().unwrap_or_default();
        let body = serde_json::json!({
            "error": "invalid_grant",
            "error_description": format!("Invalid JWT Signature: {assertion}"),
            "request": format!("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion={assertion}"),
            "upper": assertion.to_ascii_uppercase(),
        });
        MockResponse::status(400).json(&body.to_string())
    });
    let urls = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let doc = done.json();
    let r = result_for(&results(&doc), &sb.url("/a")).clone();
    assert_eq!(r["outcome"], "misconfigured", "{r:#}");
    assert_eq!(r["reason"], "invalid_grant", "{r:#}");

    let tokens = sb.engine.requests_to("POST", GOOGLE_TOKEN);
    assert_eq!(tokens.len(), 1);
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(tokens[0].body.as_bytes()).into_owned().collect();
    let assertion = form["assertion"].clone();
    let signature = assertion.rsplit('.').next().unwrap().to_string();
    assert!(signature.len() > 100, "an RS256 signature: {}", signature.len());

    let mut text = format!("{}{}", done.stdout, done.stderr);
    text.push_str(&every_view(&sb));
    assert!(text.contains("Invalid JWT Signature: "), "the body is shown:\n{text}");
    let ledger = String::from_utf8_lossy(&ledger_bytes(&sb.ledger())).into_owned();
    assert!(ledger.contains("Invalid JWT Signature"), "the body is stored");
    for (what, form) in [("the assertion", &assertion), ("its signature", &signature)] {
        assert_absent(&text, form, what);
        assert_absent(&ledger, form, what);
    }
}

#[test]
fn an_indexnow_key_echoed_in_another_case_or_encoding_is_masked() {
    let sb = Sandbox::new();
    let forms = [
        ("upper-cased", KEY.to_ascii_uppercase()),
        ("percent-encoded", percent_all(KEY)),
        ("HTML-escaped", html_all(KEY)),
        ("JSON-escaped", json_all(KEY)),
    ];
    // A 422 whose body is JSON quoting the key in every form, and an HTML
    // line with the key as an escaped query parameter.
    let body = format!(
        "{{\"code\":\"InvalidKey\",\"message\":\"key {} does not match\",\"percent\":\"{}\",\"json\":\"{}\",\"html\":\"{}\",\
         \"page\":\"<a href=\\\"/indexnow?url=x&amp;key={}\\\">retry</a>\"}}",
        forms[0].1, forms[1].1, forms[2].1, forms[3].1, forms[0].1
    );
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(422).json(&body)]);
    let urls = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let doc = done.json();
    assert_eq!(result_for(&results(&doc), &sb.url("/a"))["outcome"], "misconfigured", "{doc:#}");

    let mut text = format!("{}{}", done.stdout, done.stderr);
    text.push_str(&every_view(&sb));
    assert!(text.contains("does not match"), "the body is shown:\n{text}");
    let ledger = String::from_utf8_lossy(&ledger_bytes(&sb.ledger())).into_owned();
    assert!(ledger.contains("does not match"), "the body is stored");
    for (what, form) in &forms {
        assert_absent(&text, form, what);
        assert_absent(&ledger, form, what);
    }
}

/// The names at the top of the file system that hold `part`.
fn at_root_holding(part: &str) -> Vec<String> {
    std::fs::read_dir("/")
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(part))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_mistyped_ledger_url_is_refused_and_its_password_never_becomes_a_name_or_output() {
    const USER: &str = "typo-user-4qv";
    const PASSWORD: &str = "Typo-Ledger-Pw-8Jm3";
    const HOST: &str = "typo-db-6hx.example";
    let values = [
        format!("postgres//{USER}:{PASSWORD}@{HOST}/indexq"),
        format!("postgresql//{USER}:{PASSWORD}@{HOST}/indexq"),
        format!("postgresql;//{USER}:{PASSWORD}@{HOST}/indexq"),
        format!("postgres:/{USER}:{PASSWORD}@{HOST}/indexq"),
        format!("{USER}:{PASSWORD}@{HOST}/indexq"),
        format!("//{USER}:{PASSWORD}@{HOST}/indexq"),
        // libpq's key/value form, which would otherwise be a file named
        // after the whole string.
        format!("host={HOST} user={USER} password={PASSWORD} dbname=indexq"),
    ];
    for value in &values {
        for in_env in [false, true] {
            let sb = Sandbox::new();
            let config = std::fs::read_to_string(sb.write_config()).unwrap();
            let list = sb.urls("urls.txt", &["/a"]);
            if !in_env {
                std::fs::write(sb.config_path(), format!("ledger = {}\n{config}", serde_json::Value::from(&**value)))
                    .unwrap();
            }
            let commands = [
                &["submit", list.to_str().unwrap()][..],
                &["status"],
                &["doctor"],
                &["--json", "doctor"],
                &["report", "--html", "report.html"],
                &["ledger", "migrate"],
                &["queue", "list"],
                &["serve"],
            ];
            for args in commands {
                let run = sb.indexq(args).now(NOW);
                let run = if in_env { run.env("INDEXQ_LEDGER", value) } else { run.env_remove("INDEXQ_LEDGER") };
                let done = run.output().code(2);
                let place =
                    if in_env { "`$INDEXQ_LEDGER`".to_string() } else { "indexq.toml:1:10: `ledger`".to_string() };
                assert!(done.stderr.contains(&place), "{value} {args:?}: names {place}:\n{}", done.stderr);
                assert!(done.stderr.contains("\n  hint: "), "{}", done.stderr);
                for channel in [&done.stdout, &done.stderr] {
                    assert_absent(channel, PASSWORD, "the ledger's password");
                }
            }
            // `ledger copy --to` takes the same kind of value.
            if in_env {
                sb.indexq(&["status"]).now(NOW).output().code(0);
                let done = sb.indexq(&["ledger", "copy", "--to", value]).now(NOW).output().code(2);
                assert!(done.stderr.contains("`--to`"), "{value}: {}", done.stderr);
                assert_absent(&format!("{}{}", done.stdout, done.stderr), PASSWORD, "the ledger's password");
            }
            let names = names_under(sb.dir.path());
            for part in [PASSWORD, HOST] {
                assert!(
                    !names.iter().any(|n| n.contains(part)),
                    "{value}: no file or folder is named after it: {names:?}"
                );
            }
            assert!(sb.engine.requests().is_empty() && sb.site.requests().is_empty(), "{value}: nothing sent");
        }
    }
    // `//user:PW@host/db` would have been a folder at the top of the file system.
    for part in [USER, PASSWORD, HOST] {
        assert_eq!(at_root_holding(part), Vec::<String>::new(), "nothing new at /");
    }
}

/// `serve`'s bearer tokens, presented every way a client can (a bearer
/// header, a hook's `?token=`, Cloudflare's `cf-webhook-auth`, a near miss):
/// at `-vv`, no answer, log line, output or ledger byte holds one (the
/// suite-wide check reads every byte for them), and the log names each
/// request's token by its id.
#[test]
fn serve_tokens_stay_out_of_every_answer_log_and_the_ledger() {
    let sb = crate::serve::with_tokens();
    let served = crate::serve::serve_with_tokens(&sb, &["-vv"]);
    let body = serde_json::json!({ "urls": [sb.url("/a")] });
    let mut answers = String::new();
    let mut said = |r: reqwest::blocking::Response| {
        let headers = format!("{:?}", r.headers());
        answers.push_str(&format!("{headers}\n{}\n", r.text().unwrap()));
    };
    let mut near_miss = GHOST_TOKEN.to_string();
    near_miss.pop();
    for token in [GHOST_TOKEN, SHOP_TOKEN, near_miss.as_str()] {
        said(served.post_json("/v1/urls", Some(token), &body));
    }
    let hook = format!("{}/v1/hooks/url?token={GHOST_TOKEN}", served.base);
    said(served.client.post(hook).json(&serde_json::json!({ "url": sb.url("/b") })).send().unwrap());
    said(
        served
            .client
            .post(format!("{}/v1/hooks/netlify", served.base))
            .header("cf-webhook-auth", SHOP_TOKEN)
            .body("{\"state\":\"building\"}")
            .send()
            .unwrap(),
    );
    assert_no_secret(answers.as_bytes(), "serve's answers");
    crate::serve::wait_for(&sb, ENDPOINT_PATH, 1);
    let done = served.stop().code(0);
    for expected in ["POST /v1/urls 202 token=ghost", "POST /v1/urls 403 token=shop", "POST /v1/urls 401 token=-"] {
        assert!(done.stderr.contains(expected), "{expected}:\n{}", done.stderr);
    }
    assert!(done.stderr.contains("POST /v1/hooks/url 202 token=ghost"), "{}", done.stderr);
    assert!(!done.stderr.contains("?token"), "a hook's query is never logged:\n{}", done.stderr);
    assert_no_secret(every_view(&sb).as_bytes(), "every view of the ledger");
}

/// A chat webhook's URL (`[notify] webhook`) is a secret: a chat service
/// that refuses it and quotes it back, as is, upper-cased or
/// percent-encoded, gets it masked in the warning, and no view of the
/// ledger holds it.
#[test]
fn a_notify_webhook_url_stays_out_of_every_output() {
    let chat = crate::support::mock::MockServer::start();
    let hook = format!("/services/T0000/B0000/{WEBHOOK_TOKEN}");
    let url = format!("{}{hook}", chat.url());
    let echo = format!("invalid_token: {url} {} {}", WEBHOOK_TOKEN.to_ascii_uppercase(), percent_all(WEBHOOK_TOKEN));
    chat.on("POST", &hook, vec![MockResponse::status(403).body(&echo)]);
    let mut sb = Sandbox::new();
    sb.extra = format!("[notify]\nwebhook = \"{url}\"\n");
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(403)]);
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![MockResponse::status(404)]);
    sb.write_config();
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["-vv", "submit", list.to_str().unwrap()]).now(NOW).output().code(3);
    assert_eq!(chat.requests_to("POST", &hook).len(), 1, "the webhook was tried");
    let warning = done.stderr.lines().find(|l| l.starts_with("warning: [notify]")).expect("the failure is said");
    assert!(warning.contains("HTTP 403: invalid_token: [REDACTED]"), "{warning}");
    let text = format!("{}{}{}", done.stdout, done.stderr, every_view(&sb));
    for form in [WEBHOOK_TOKEN.to_string(), percent_all(WEBHOOK_TOKEN), hook.clone()] {
        assert_absent(&text, &form, "the webhook");
    }
}

/// A serve token inside a submitted URL (a webhook's URL pasted with its
/// `?token=`, as written or percent-encoded) is masked before the URL is
/// kept: the answer, the queue, every view of the ledger and what the
/// engine is sent hold `[REDACTED]` where it was, and nothing else of the
/// URL changes.
#[test]
fn a_serve_token_inside_a_submitted_url_is_stored_and_shown_masked() {
    let sb = crate::serve::with_tokens();
    let served = crate::serve::serve_with_tokens(&sb, &[]);
    let plain = sb.url(&format!("/hook?token={GHOST_TOKEN}&page=2"));
    let encoded = sb.url(&format!("/hook2?t={}", percent_all(SHOP_TOKEN)));
    let body = serde_json::json!({ "urls": [plain, encoded] });
    let doc = crate::serve::admitted(served.post_json("/v1/urls", Some(GHOST_TOKEN), &body));
    let urls: Vec<&str> = doc.results.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(urls, [sb.url("/hook?token=[REDACTED]&page=2"), sb.url("/hook2?t=[REDACTED]")]);
    crate::serve::wait_for(&sb, ENDPOINT_PATH, 1);
    served.stop().code(0);
    let mut received = sb.received_urls();
    received.sort();
    assert_eq!(received, [sb.url("/hook2?t=[REDACTED]"), sb.url("/hook?token=[REDACTED]&page=2")]);
    let views = every_view(&sb);
    assert!(views.contains("/hook?token=[REDACTED]&page=2"), "{views}");
    assert_no_secret(views.as_bytes(), "every view of the ledger");
}

/// Baidu's push token travels in the query string and Yandex's OAuth token
/// in the `Authorization` header (issue 47): engines that quote them back —
/// the request's target, the header, the token upper-cased and
/// percent-encoded — leave neither in any output or the ledger, where the
/// bodies are kept masked.
#[test]
fn the_baidu_and_yandex_tokens_quoted_by_their_engines_never_show() {
    // Baidu: `token is not valid`, quoting the push's own target.
    let (sb, _book) = Sandbox::baidu("", 10);
    sb.engine.respond_with("POST", BAIDU_PUSH, |req| {
        let token = req.path.split("token=").nth(1).unwrap_or_default().to_string();
        let message =
            format!("token is not valid: {} ({}, {})", req.path, token.to_ascii_uppercase(), percent_all(&token));
        MockResponse::status(401).json(&serde_json::json!({ "error": 401, "message": message }).to_string())
    });
    let urls = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let [push] = sb.engine.requests_to("POST", BAIDU_PUSH).try_into().unwrap();
    assert!(push.path.ends_with(&format!("token={BAIDU_TOKEN}")), "the token went in the query string");
    let mut text = format!("{}{}", done.stdout, done.stderr);
    text.push_str(&every_view(&sb));
    let doctor = sb.indexq(&["-v", "doctor"]).now(NOW).output();
    text.push_str(&doctor.stdout);
    text.push_str(&doctor.stderr);
    assert!(text.contains("token is not valid: /urls?site="), "the body is shown:\n{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    let ledger = String::from_utf8_lossy(&ledger_bytes(&sb.ledger())).into_owned();
    assert!(ledger.contains("token is not valid: /urls?site="), "the body is stored");
    for (what, form) in
        [("the token", BAIDU_TOKEN.to_string()), ("the token percent-encoded", percent_all(BAIDU_TOKEN))]
    {
        assert_absent(&text, &form, what);
        assert_absent(&ledger, &form, what);
    }

    // Yandex: the recrawl queue answers 403, quoting the Authorization header.
    let (sb, _book) = Sandbox::yandex("", 10, 10);
    sb.engine.respond_with("POST", &yandex_recrawl_path(&sb.site, "queue"), |req| {
        let header = req.header("authorization").unwrap_or_default().to_string();
        let token = header.strip_prefix("OAuth ").unwrap_or(&header).to_string();
        let message = format!("Bad token. Headers: Authorization: {header} ({})", json_all(&token));
        MockResponse::status(403)
            .json(&serde_json::json!({ "error_code": "FORBIDDEN", "error_message": message }).to_string())
    });
    let urls = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", urls.to_str().unwrap()]).now(NOW).output().code(3);
    let mut text = format!("{}{}", done.stdout, done.stderr);
    text.push_str(&every_view(&sb));
    let doctor = sb.indexq(&["-v", "doctor"]).now(NOW).output();
    text.push_str(&doctor.stdout);
    text.push_str(&doctor.stderr);
    assert!(text.contains("Bad token. Headers: Authorization: OAuth "), "the body is shown:\n{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    let ledger = String::from_utf8_lossy(&ledger_bytes(&sb.ledger())).into_owned();
    assert!(ledger.contains("Bad token. Headers"), "the body is stored");
    for (what, form) in
        [("the token", YANDEX_TOKEN.to_string()), ("the token percent-encoded", percent_all(YANDEX_TOKEN))]
    {
        assert_absent(&text, &form, what);
        assert_absent(&ledger, &form, what);
    }
}
