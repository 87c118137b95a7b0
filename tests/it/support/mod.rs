//! The test sandbox: a temp dir with a config and ledger, a mock IndexNow
//! endpoint and a mock site serving the key file, and a builder that runs
//! the real `indexq` binary with the clock pinned (`INDEXQ_NOW`) and a
//! sealed environment (no HOME config, TZ fixed). What a run printed comes
//! back as `Done`, whose `--json` documents are read through the strict
//! structs of `json` (`Done::json`, `Done::submit_doc`, …).
#![allow(dead_code)]

pub mod json;
pub mod mock;
pub mod pg;
pub mod quota_engines;
pub mod scenario;
pub mod sitemap;

use mock::{MockResponse, MockServer};
pub use quota_engines::{
    mock_baidu, mock_yandex, yandex_host_id, yandex_recrawl_path, Book, BAIDU_PUSH, BAIDU_TOKEN, YANDEX_TOKEN,
    YANDEX_USER,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const KEY: &str = "0123456789abcdef0123456789abcdef";
pub const ENDPOINT_PATH: &str = "/indexnow";
/// A Bing API key recognisable in any output it leaks into.
pub const BING_KEY: &str = "BINGSECRETKEY-7f3a9c2e51d84b6f";
pub const BING_BASE: &str = "/webmaster/api.svc/json";
pub const BING_SUBMIT: &str = "/webmaster/api.svc/json/SubmitUrlBatch";
pub const BING_QUOTA: &str = "/webmaster/api.svc/json/GetUrlSubmissionQuota";
pub const BING_SUBMIT_FEED: &str = "/webmaster/api.svc/json/SubmitFeed";
pub const BING_GET_FEEDS: &str = "/webmaster/api.svc/json/GetFeeds";
pub const GOOGLE_TOKEN: &str = "/token";
pub const GOOGLE_PUBLISH: &str = "/v3/urlNotifications:publish";
pub const GOOGLE_INSPECT: &str = "/v1/urlInspection/index:inspect";
pub const GOOGLE_PROJECT: &str = "my-proj";
pub const GOOGLE_EMAIL: &str = "indexer@my-proj.iam.gserviceaccount.com";
pub const GOOGLE_KEY_ID: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678";
/// The access token the mock token endpoint hands out, and one for tests
/// that hand out another on a refresh: both recognisable in any output
/// they leak into.
pub const GOOGLE_ACCESS_TOKEN: &str = "ya29.FAKE-access-token-3f9c1e7a5b2d4c6e";
pub const GOOGLE_REFRESHED_TOKEN: &str = "ya29.FAKE-refreshed-token-8e2b4d6f1a3c5e7a";

/// Where every binary the tests run sends a request for a host outside
/// loopback: a port on this machine where nothing listens (9, discard), so
/// such a request is refused at once and no packet leaves the machine —
/// even from a build that would fetch a host it should not. indexq's
/// clients take the proxy variables from the environment (reqwest's system
/// proxies; none is built with `no_proxy`), and `NO_PROXY` names only
/// loopback, where the mock servers are. `fetch_hosts::the_proxy_guard_holds`
/// checks both halves.
pub const CLOSED_PROXY: &str = "http://127.0.0.1:9";
/// Loopback only: what the tests' servers listen on.
pub const NO_PROXY_LOOPBACK: &str = "127.0.0.0/8,127.0.0.1,::1,localhost";

/// Seals `cmd`'s way out: every proxy variable points at [`CLOSED_PROXY`]
/// but for loopback. Every command that runs the binary goes through here.
pub fn seal_network(cmd: &mut Command) -> &mut Command {
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
        cmd.env(var, CLOSED_PROXY);
    }
    cmd.env("NO_PROXY", NO_PROXY_LOOPBACK).env("no_proxy", NO_PROXY_LOOPBACK)
}

/// The tokens of `serve`'s `[[serve.token]]`s in the tests: recognisable
/// in any output, log or ledger byte they leak into (`secrets`).
pub const GHOST_TOKEN: &str = "ghost-TOKEN-5b1e9c7d3a2f4e6b8c0d";
pub const SHOP_TOKEN: &str = "shop-TOKEN-9e8d7c6b5a4f3e2d1c0b";
/// A read-only token of the shop (`scope = "read"`).
pub const DASH_TOKEN: &str = "dash-TOKEN-4c3b2a1f0e9d8c7b6a5f";
/// The secret part of the chat webhook's URL (`[notify] webhook`).
pub const WEBHOOK_TOKEN: &str = "whk-SECRET-4c2a8e6b0d9f1a3c5e7b";

/// A token endpoint's answer handing out `token`.
/// Google's documented answer to a publish: `urlNotificationMetadata` with
/// the notification it recorded — `latestUpdate` for `URL_UPDATED`,
/// `latestRemove` for `URL_DELETED` — `{url, type, notifyTime}`.
pub fn google_published_response(req: &mock::Request) -> MockResponse {
    let body = req.json();
    let (url, kind) = (body["url"].as_str().unwrap_or_default(), body["type"].as_str().unwrap_or_default());
    let field = if kind == "URL_DELETED" { "latestRemove" } else { "latestUpdate" };
    let notification = serde_json::json!({ "url": url, "type": kind, "notifyTime": "2026-12-03T01:30:00.123456789Z" });
    MockResponse::status(200)
        .json(&serde_json::json!({ "urlNotificationMetadata": { "url": url, field: notification } }).to_string())
}

/// Bing's sitemap channel as a site with no problem sees it: `SubmitFeed`
/// takes every sitemap (`{"d":null}`), and `GetFeeds` lists each one
/// submitted as Bing documents its `Feed`, read without a problem ("Success")
/// and crawled on 2100-01-01 — after any submission a test's pinned clock
/// makes. Tests about the channel script their own answers.
pub fn bing_takes_every_feed(engine: &MockServer) {
    let feeds: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let taken = std::sync::Arc::clone(&feeds);
    engine.respond_with("POST", BING_SUBMIT_FEED, move |r| {
        let feed = r.json()["feedUrl"].as_str().unwrap_or_default().to_string();
        let mut taken = taken.lock().unwrap();
        if !taken.contains(&feed) {
            taken.push(feed);
        }
        MockResponse::status(200).json(r#"{"d":null}"#)
    });
    engine.respond_with("GET", BING_GET_FEEDS, move |_| {
        let listed: Vec<serde_json::Value> = feeds
            .lock()
            .unwrap()
            .iter()
            .map(|url| {
                serde_json::json!({
                    "__type": "Feed:#Microsoft.Bing.Webmaster.Api",
                    "Compressed": false,
                    "FileSize": 1024,
                    "LastCrawled": "/Date(4102444800000)/",
                    "Status": "Success",
                    "Submitted": "/Date(4102444800000)/",
                    "Type": "Sitemap",
                    "Url": url,
                    "UrlCount": 3
                })
            })
            .collect();
        MockResponse::status(200).json(&serde_json::json!({ "d": listed }).to_string())
    });
}

pub fn google_token_response(token: &str) -> MockResponse {
    MockResponse::status(200).json(&format!(r#"{{"access_token":"{token}","expires_in":3599,"token_type":"Bearer"}}"#))
}

pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub engine: MockServer,
    pub site: MockServer,
    /// Extra text inside the property's `indexnow = { ... }` table.
    pub indexnow_extra: String,
    /// Extra top-level TOML (e.g. `[retry]` settings) appended to the config.
    pub extra: String,
    pub endpoints: Vec<String>,
    /// The property's `bing = { ... }` table contents, if it uses Bing
    /// (the `[bing]` section then points at the mock engine).
    pub bing: Option<String>,
    /// Whether the property uses IndexNow.
    pub indexnow: bool,
    /// Extra `[[property]]` tables appended to the config.
    pub more_properties: String,
    /// Extra lines in the property's own table (e.g. `sources = [...]`).
    pub property_extra: String,
    /// The property's `google = { ... }` table contents, if it uses Google
    /// (`[google]` then points at the mock engine and a generated key file).
    pub google: Option<String>,
    /// Extra lines for the `[google]` section (e.g. `requests_per_minute = 30`).
    pub google_extra: String,
    /// The property's `baidu = { ... }` table contents, if it uses Baidu
    /// (`[baidu]` then points at the mock engine).
    pub baidu: Option<String>,
    /// The property's `yandex = { ... }` table contents, if it uses Yandex
    /// (`[yandex]` then points at the mock engine).
    pub yandex: Option<String>,
    /// A PostgreSQL ledger instead of the SQLite file (`Sandbox::use_pg`):
    /// its keys head the config, and runs get its password and no
    /// `$INDEXQ_LEDGER`.
    pub pg: Option<pg::PgLedger>,
}

impl Sandbox {
    /// A sandbox whose engine accepts everything (200) and whose site serves the key.
    pub fn new() -> Sandbox {
        // Early in the run, before many connections hold ephemeral ports.
        drop(mock::reserve_fixed_port(mock::FIXTURE_PORT));
        let engine = MockServer::start();
        engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
        let site = MockServer::start();
        site.on("GET", &format!("/{KEY}.txt"), vec![MockResponse::status(200).body(&format!("{KEY}\n"))]);
        let endpoints = vec![format!("{}{ENDPOINT_PATH}", engine.url())];
        bing_takes_every_feed(&engine);
        Sandbox {
            dir: tempfile::tempdir().unwrap(),
            engine,
            site,
            indexnow_extra: String::new(),
            extra: "[retry]\nkey_pending_first = \"1s\"\n\n[http]\nconnect_timeout = \"2s\"\ntimeout = \"3s\"\n".into(),
            endpoints,
            bing: None,
            indexnow: true,
            more_properties: String::new(),
            property_extra: String::new(),
            google: None,
            google_extra: String::new(),
            baidu: None,
            yandex: None,
            pg: None,
        }
    }

    /// A sandbox whose property uses only Baidu, with `table` as its
    /// `baidu` table; the mock push has `left` for today (`Book`).
    pub fn baidu(table: &str, left: u64) -> (Sandbox, Book) {
        let mut sb = Sandbox::new();
        sb.indexnow = false;
        sb.baidu = Some(table.to_string());
        let book = Book::new(left);
        mock_baidu(&sb.engine, &book);
        sb.write_config();
        (sb, book)
    }

    /// A sandbox whose property uses only Yandex, with `table` as its
    /// `yandex` table; the mock has `left` of `daily` for today (`Book`).
    pub fn yandex(table: &str, daily: u64, left: u64) -> (Sandbox, Book) {
        let mut sb = Sandbox::new();
        sb.indexnow = false;
        sb.yandex = Some(table.to_string());
        let book = Book::new(left);
        mock_yandex(&sb.engine, &sb.site, &book, daily);
        sb.write_config();
        (sb, book)
    }

    /// A sandbox whose property uses only Google, with `table` as its
    /// `google` table, a service-account key file made with a fresh RSA key,
    /// a token endpoint that hands out `GOOGLE_ACCESS_TOKEN` and a publish
    /// endpoint that accepts everything as Google documents it
    /// ([`google_published_response`]).
    pub fn google(table: &str) -> Sandbox {
        let mut sb = Sandbox::new();
        sb.indexnow = false;
        sb.google = Some(table.to_string());
        sb.write_google_key();
        sb.engine.on("POST", GOOGLE_TOKEN, vec![google_token_response(GOOGLE_ACCESS_TOKEN)]);
        sb.engine.respond_with("POST", GOOGLE_PUBLISH, google_published_response);
        sb.write_config();
        sb
    }

    /// Writes `service-account.json` with a new 2048-bit RSA key; returns
    /// the public key in PEM, to check signatures with.
    pub fn write_google_key(&self) -> String {
        use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
        let key = test_rsa_key();
        let private = key.to_pkcs8_pem(LineEnding::LF).unwrap().to_string();
        let public = key.to_public_key().to_public_key_pem(LineEnding::LF).unwrap();
        let file = serde_json::json!({
            "type": "service_account",
            "project_id": GOOGLE_PROJECT,
            "private_key_id": GOOGLE_KEY_ID,
            "private_key": private,
            "client_email": GOOGLE_EMAIL,
            "client_id": "1234567890",
            "token_uri": format!("{}{GOOGLE_TOKEN}", self.engine.url()),
        });
        std::fs::write(self.dir.path().join("service-account.json"), file.to_string()).unwrap();
        public
    }

    /// The URLs the mock Indexing API was asked to publish, in order.
    pub fn google_published(&self) -> Vec<(String, String)> {
        self.engine
            .requests_to("POST", GOOGLE_PUBLISH)
            .iter()
            .map(|r| {
                let body = r.json();
                (body["url"].as_str().unwrap().to_string(), body["type"].as_str().unwrap().to_string())
            })
            .collect()
    }

    /// A sandbox whose property uses only Bing, with `table` as its `bing`
    /// table; the mock says 100 left today and 1,000 this month, and
    /// accepts every batch.
    pub fn bing(table: &str) -> Sandbox {
        let mut sb = Sandbox::new();
        sb.indexnow = false;
        sb.bing = Some(table.to_string());
        sb.bing_quota(100, 1000);
        sb.engine.on("POST", BING_SUBMIT, vec![MockResponse::status(200).json(r#"{"d":null}"#)]);
        sb.write_config();
        sb
    }

    pub fn bing_quota(&self, daily: u64, monthly: u64) {
        let body = format!(
            r#"{{"d":{{"__type":"UrlSubmissionQuota:#Microsoft.Bing.Webmaster.Api","DailyQuota":{daily},"MonthlyQuota":{monthly}}}}}"#
        );
        self.engine.on("GET", BING_QUOTA, vec![MockResponse::status(200).json(&body)]);
    }

    /// The URLs the mock Bing API received, over all batches.
    pub fn bing_received(&self) -> Vec<String> {
        self.url_lists(BING_SUBMIT)
    }

    /// The URLs the mock IndexNow endpoint received, over all batches.
    pub fn indexnow_received(&self) -> Vec<String> {
        self.url_lists(ENDPOINT_PATH)
    }

    /// Every `urlList` entry POSTed to `path`, in order.
    fn url_lists(&self, path: &str) -> Vec<String> {
        self.engine
            .requests_to("POST", path)
            .iter()
            .flat_map(|r| {
                r.json()["urlList"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|u| u.as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    pub fn site_url(&self) -> String {
        format!("{}/", self.site.url())
    }

    pub fn key_location(&self) -> String {
        format!("{}/{KEY}.txt", self.site.url())
    }

    pub fn ledger(&self) -> PathBuf {
        self.dir.path().join("state").join("ledger.db")
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("indexq.toml")
    }

    /// Writes the config file from the sandbox's settings.
    pub fn write_config(&self) -> PathBuf {
        let endpoints: Vec<String> = self.endpoints.iter().map(|e| format!("\"{e}\"")).collect();
        // Top-level keys (the PostgreSQL ledger's) come before the first table.
        let mut text = self.pg.as_ref().map(pg::PgLedger::config_lines).unwrap_or_default();
        text.push_str(&format!("[indexnow]\nendpoints = [{}]\n\n{}\n\n", endpoints.join(", "), self.extra));
        if self.bing.is_some() {
            text.push_str(&format!(
                "[bing]\napi_key_env = \"BING_KEY\"\nendpoint = \"{}{BING_BASE}\"\n\n",
                self.engine.url()
            ));
        }
        if self.google.is_some() {
            text.push_str(&format!(
                "[google]\ncredentials = \"service-account.json\"\nendpoint = \"{0}\"\ninspection_endpoint = \"{0}\"\n{1}\n\n",
                self.engine.url(),
                self.google_extra
            ));
        }
        if self.baidu.is_some() {
            text.push_str(&format!("[baidu]\ntoken_env = \"BAIDU_TOKEN\"\nendpoint = \"{}\"\n\n", self.engine.url()));
        }
        if self.yandex.is_some() {
            text.push_str(&format!("[yandex]\ntoken_env = \"YANDEX_TOKEN\"\nendpoint = \"{}\"\n\n", self.engine.url()));
        }
        text.push_str(&format!("[[property]]\nname = \"site\"\nsite = \"{}\"\n", self.site_url()));
        text.push_str(&self.property_extra);
        if self.indexnow {
            text.push_str(&format!(
                "indexnow = {{ key_env = \"INDEXNOW_KEY\", key_location = \"{}\"{} }}\n",
                self.key_location(),
                self.indexnow_extra
            ));
        }
        if let Some(bing) = &self.bing {
            text.push_str(&format!("bing = {{ {bing} }}\n"));
        }
        if let Some(google) = &self.google {
            text.push_str(&format!("google = {{ {google} }}\n"));
        }
        if let Some(baidu) = &self.baidu {
            text.push_str(&format!("baidu = {{ {baidu} }}\n"));
        }
        if let Some(yandex) = &self.yandex {
            text.push_str(&format!("yandex = {{ {yandex} }}\n"));
        }
        text.push_str(&self.more_properties);
        let path = self.config_path();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Writes a URL list under the sandbox and returns its path.
    pub fn urls(&self, name: &str, paths: &[&str]) -> PathBuf {
        let text: String = paths.iter().map(|p| format!("{}{p}\n", self.site.url())).collect();
        self.file(name, &text)
    }

    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A builder for one run of the binary.
    pub fn indexq(&self, args: &[&str]) -> Run {
        if !self.config_path().exists() {
            self.write_config();
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_indexq"));
        cmd.args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("XDG_STATE_HOME", self.dir.path().join("xdg-state"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg-config"))
            .env("INDEXQ_CONFIG", self.config_path())
            .env("INDEXNOW_KEY", KEY)
            .env("BING_KEY", BING_KEY)
            .env("BAIDU_TOKEN", BAIDU_TOKEN)
            .env("YANDEX_TOKEN", YANDEX_TOKEN)
            .env("TZ", "UTC")
            .stdin(Stdio::null());
        seal_network(&mut cmd);
        match &self.pg {
            Some(pg) => pg.apply(&mut cmd),
            None => {
                cmd.env("INDEXQ_LEDGER", self.ledger());
            }
        }
        Run { cmd }
    }

    /// The URLs the mock engine received, in order, over all POSTs.
    pub fn received_urls(&self) -> Vec<String> {
        self.url_lists(ENDPOINT_PATH)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.site.url())
    }
}

/// Every file and directory name under `dir`, recursively.
pub fn names_under(dir: &std::path::Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        names.push(entry.file_name().to_string_lossy().into_owned());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            names.extend(names_under(&entry.path()));
        }
    }
    names
}

pub struct Run {
    pub cmd: Command,
}

impl Run {
    pub fn now(mut self, at: &str) -> Run {
        self.cmd.env("INDEXQ_NOW", at);
        self
    }

    pub fn env(mut self, k: &str, v: impl AsRef<std::ffi::OsStr>) -> Run {
        self.cmd.env(k, v);
        self
    }

    pub fn env_remove(mut self, k: &str) -> Run {
        self.cmd.env_remove(k);
        self
    }

    pub fn output(mut self) -> Done {
        let out = self.cmd.output().unwrap();
        Done::from(out)
    }

    /// Runs the command on a pseudo-terminal (util-linux `script`); what the
    /// terminal showed (stdout and stderr together) comes back as stdout.
    pub fn in_terminal(self) -> Done {
        let quote = |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"));
        let mut line = quote(self.cmd.get_program());
        for arg in self.cmd.get_args() {
            line.push(' ');
            line.push_str(&quote(arg));
        }
        let mut script = Command::new("script");
        script.args(["-qec", &line, "/dev/null"]).env_clear().stdin(Stdio::null());
        for (k, v) in self.cmd.get_envs() {
            if let Some(v) = v {
                script.env(k, v);
            }
        }
        script.env("TERM", "xterm");
        if let Some(dir) = self.cmd.get_current_dir() {
            script.current_dir(dir);
        }
        let out = script.output().expect("`script` (util-linux) runs the terminal test");
        Done::from(out)
    }

    pub fn spawn(mut self) -> std::process::Child {
        self.cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    }
}

pub struct Done {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The fake secrets every test uses. No byte the binary writes (stdout,
/// stderr, at any verbosity, panics included) and no ledger file may hold
/// one, in any form it can take (`secret_forms`): `Done` checks every run's
/// output, and a sandbox checks its ledger files when it is dropped.
pub fn secrets() -> Vec<String> {
    let mut secrets = vec![
        KEY.to_string(),
        BING_KEY.to_string(),
        BAIDU_TOKEN.to_string(),
        YANDEX_TOKEN.to_string(),
        GOOGLE_ACCESS_TOKEN.to_string(),
        GOOGLE_REFRESHED_TOKEN.to_string(),
        GHOST_TOKEN.to_string(),
        SHOP_TOKEN.to_string(),
        DASH_TOKEN.to_string(),
        WEBHOOK_TOKEN.to_string(),
    ];
    // The test PostgreSQL server's password, when the PostgreSQL tests run.
    secrets.extend(pg::password());
    if let Some(key) = TEST_KEY.get() {
        use rsa::pkcs8::{EncodePrivateKey, LineEnding};
        let pem = key.to_pkcs8_pem(LineEnding::LF).unwrap().to_string();
        // A line from the middle of the private key: any leak of it shows.
        secrets.extend(pem.lines().skip(5).take(1).map(str::to_string));
    }
    // Every signed JWT assertion a mock token endpoint received in this
    // process: its signature (what makes it usable) must never show.
    for assertion in mock::assertions_seen() {
        if let Some((_, signature)) = assertion.rsplit_once('.') {
            secrets.push(signature.chars().take(40).collect());
        }
    }
    secrets
}

/// The shortest form of a secret worth looking for (a shorter one could
/// match ordinary text).
const MIN_FORM: usize = 12;

/// The forms a secret can take in text, lower-cased (the check ignores
/// case, so an upper-cased echo counts): as is, percent-encoded (a query
/// string), HTML-escaped and JSON-escaped — each only once, and the encoded
/// ones only when long enough not to match ordinary text.
pub fn secret_forms(secret: &str) -> Vec<(&'static str, String)> {
    let percent: String = url::form_urlencoded::byte_serialize(secret.as_bytes()).collect();
    let html = secret
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;");
    let json = serde_json::to_string(secret).unwrap();
    let json = json[1..json.len() - 1].to_string();
    let mut forms: Vec<(&'static str, String)> = Vec::new();
    let all = [
        ("as is", secret.to_string()),
        ("percent-encoded", percent.replace('+', "%20")),
        ("form-encoded", percent),
        ("HTML-escaped", html),
        ("JSON-escaped", json.replace('/', "\\/")),
        ("JSON-escaped", json),
    ];
    for (kind, form) in all {
        let form = form.to_ascii_lowercase();
        let long_enough = kind == "as is" || form.len() >= MIN_FORM;
        if long_enough && !forms.iter().any(|(_, f)| *f == form) {
            forms.push((kind, form));
        }
    }
    forms
}

/// Panics if `bytes` hold a fake secret in any of its forms; `what` names
/// where they came from. One pass over the bytes, whatever the number of
/// forms (ledger files are large, and the suite checks every one).
pub fn assert_no_secret(bytes: &[u8], what: &str) {
    let mut forms: Vec<(String, &'static str, String)> = Vec::new();
    for secret in secrets() {
        for (kind, form) in secret_forms(&secret) {
            forms.push((secret.chars().take(6).collect(), kind, form));
        }
    }
    // The forms by their first byte.
    let mut starting: Vec<Vec<usize>> = vec![Vec::new(); 256];
    for (n, (_, _, form)) in forms.iter().enumerate() {
        starting[usize::from(form.as_bytes()[0])].push(n);
    }
    let haystack = bytes.to_ascii_lowercase();
    for i in 0..haystack.len() {
        for &n in &starting[usize::from(haystack[i])] {
            let (start, kind, form) = &forms[n];
            let found = haystack[i..].starts_with(form.as_bytes());
            assert!(!found, "a secret ({start}…) leaked into {what} ({kind}, in any case)");
        }
    }
}

impl From<Output> for Done {
    fn from(out: Output) -> Done {
        assert_no_secret(&out.stdout, "stdout");
        assert_no_secret(&out.stderr, "stderr");
        Done {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        for suffix in ["db", "db-wal", "db-shm"] {
            let path = self.ledger().with_extension(suffix);
            if let Ok(bytes) = std::fs::read(&path) {
                assert_no_secret(&bytes, &path.display().to_string());
            }
        }
    }
}

impl Done {
    /// Asserts the exit code, showing both channels when it differs.
    pub fn code(self, expected: i32) -> Done {
        assert_eq!(
            self.code, expected,
            "exit code {} (expected {expected})\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }

    /// Stdout as a JSON value, for ad-hoc lookups — checked first against
    /// the document's struct (`json::check`): a document that does not match
    /// its struct fails here.
    pub fn json(&self) -> Value {
        self.doc();
        serde_json::from_str(&self.stdout).expect("checked as JSON by `doc`")
    }

    /// Stdout as the document it is, strictly parsed and checked (`json::check_text`).
    fn doc(&self) -> json::Doc {
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&self.stdout) {
            panic!("stdout is not JSON ({e}):\n{}\n--- stderr\n{}", self.stdout, self.stderr);
        }
        json::check_text(&self.stdout)
    }
}

/// `Done::submit_doc()` and the other typed readers: stdout parsed strictly
/// as the document it must be (panics with the document otherwise).
macro_rules! typed_readers {
    ($($name:ident: $command:literal => $variant:ident),* $(,)?) => {
        impl Done {
            $(
                #[doc = concat!("Stdout as the `", $command, " --json` document.")]
                pub fn $name(&self) -> json::$variant {
                    match self.doc() {
                        json::Doc::$variant(doc) => doc,
                        _ => panic!(concat!("expected the `", $command, "` document:\n{}"), self.stdout),
                    }
                }
            )*
        }
    };
}

typed_readers! {
    submit_doc: "submit" => Submit,
    status_doc: "status" => Status,
    queue_doc: "queue list" => QueueList,
    queue_retry_doc: "queue retry" => QueueRetry,
    queue_drop_doc: "queue drop" => QueueDrop,
    log_doc: "log" => Log,
    doctor_doc: "doctor" => Doctor,
    key_doc: "key generate" => KeyGenerate,
    init_doc: "init" => Init,
    migrate_doc: "ledger migrate" => LedgerMigrate,
    copy_doc: "ledger copy" => LedgerCopy,
    report_doc: "report" => Report,
}

/// The results of a `submit --json` document, each checked against its
/// struct (`json::SubmitResult`), for ad-hoc lookups.
pub fn results(doc: &Value) -> Vec<Value> {
    match json::check(doc) {
        json::Doc::Submit(_) => doc["results"].as_array().unwrap().clone(),
        other => panic!("expected the `submit` document: {other:#?}"),
    }
}

/// The one result for `url` (panics if there is not exactly one).
pub fn result_for<'a>(results: &'a [Value], url: &str) -> &'a Value {
    let found: Vec<&Value> = results.iter().filter(|r| r["url"] == url).collect();
    assert_eq!(found.len(), 1, "expected one result for {url}: {results:#?}");
    found[0]
}

/// The count of `outcome` in a `submit --json` document's summary.
pub fn count(doc: &Value, outcome: &str) -> u64 {
    match json::check(doc) {
        json::Doc::Submit(doc) => doc.summary.get(json::Outcome::named(outcome)),
        other => panic!("expected the `submit` document: {other:#?}"),
    }
}

/// One RSA key per test process (generating one takes a moment).
static TEST_KEY: std::sync::OnceLock<rsa::RsaPrivateKey> = std::sync::OnceLock::new();

pub fn test_rsa_key() -> rsa::RsaPrivateKey {
    TEST_KEY.get_or_init(|| rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap()).clone()
}

pub fn ledger_bytes(path: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap_or_default();
    bytes.extend(std::fs::read(path.with_extension("db-wal")).unwrap_or_default());
    bytes
}

/// Adds `n` accepted items to the SQLite ledger at `path`, in the group of
/// its first item, as submits of 10,000 URLs a request would have left them
/// (`SITE/big/N`, each pointing at its request): a batch row, its tier-0
/// hash run and a span a request (schema 12), a ledger of a site's size
/// made in seconds. Returns how many items the ledger then holds.
pub fn add_accepted_items(path: &Path, n: i64, at: i64) -> i64 {
    use indexq::testing_api::batches::{encode, text, BatchItem};
    let mut conn = rusqlite::Connection::open(path).unwrap();
    let tx = conn.transaction().unwrap();
    let (group, texts, count): (i64, Vec<u8>, i64) = tx
        .query_row("SELECT group_id, texts, n FROM batches ORDER BY first_id LIMIT 1", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    let url = text(&texts, count as usize, 0).unwrap().to_string();
    let site = url.rsplit_once('/').unwrap().0.to_string();
    let first: i64 = tx.query_row("SELECT MAX(first_id + n - 1) + 1 FROM batches", [], |r| r.get(0)).unwrap();
    {
        let mut request = tx
            .prepare(
                "INSERT INTO requests (group_id, at, class, reason, message, http_status, n, first_item, last_item,
                     items)
                 VALUES (?1, ?2, 'accepted', 'ok', 'accepted', 200, ?3, ?4, ?5, ?6)",
            )
            .unwrap();
        let mut batch = tx
            .prepare(
                "INSERT INTO batches (first_id, group_id, n, created_at, sorted, texts, lastmods, actions)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, NULL)",
            )
            .unwrap();
        let mut run = tx.prepare("INSERT INTO hash_runs (group_id, tier, n, batch) VALUES (?1, 0, ?2, ?3)").unwrap();
        // The items' state, one span a request's items.
        let mut span = tx
            .prepare(
                "INSERT INTO spans (first, last, group_id, state, enqueued_at, attempts, last_class, streak,
                     streak_started_at, accepted_at, last_request_id)
                 VALUES (?1, ?2, ?3, 'accepted', ?4, 1, 'accepted', 1, ?4, ?4, ?5)",
            )
            .unwrap();
        for lo in (first..first + n).step_by(10_000) {
            let hi = (lo + 9_999).min(first + n - 1);
            // The ids, ascending, as LEB128 deltas (the ledger's `ids::encode`).
            let mut ids = Vec::new();
            let mut v = lo as u64;
            while v >= 0x80 {
                ids.push((v as u8 & 0x7f) | 0x80);
                v >>= 7;
            }
            ids.push(v as u8);
            ids.extend(std::iter::repeat_n(1u8, (hi - lo) as usize));
            let list = (hi > lo).then_some(ids);
            request.execute(rusqlite::params![group, at, hi - lo + 1, lo, hi, list]).unwrap();
            let request_id = tx.last_insert_rowid();
            let urls: Vec<String> = (lo..=hi).map(|id| format!("{site}/big/{id}")).collect();
            let items: Vec<BatchItem> =
                urls.iter().map(|url| BatchItem { url, lastmod: None, deleted: false }).collect();
            let blobs = encode(&items).unwrap();
            batch.execute(rusqlite::params![lo, group, hi - lo + 1, at, blobs.sorted, blobs.texts]).unwrap();
            run.execute(rusqlite::params![group, hi - lo + 1, lo]).unwrap();
            span.execute(rusqlite::params![lo, hi, group, at, request_id]).unwrap();
        }
    }
    tx.execute("UPDATE groups SET accepted = accepted + ?1 WHERE id = ?2", [n, group]).unwrap();
    let total = tx.query_row("SELECT SUM(last - first + 1) FROM spans", [], |r| r.get(0)).unwrap();
    tx.commit().unwrap();
    total
}
