//! Mock Baidu link push and Yandex recrawl queue that keep their own books:
//! what is left of the day, answered as each engine's documentation says
//! (Baidu: `{"remain", "success"}`, `{"error": 400, "message": "over
//! quota"}`; Yandex: `{"task_id", "quota_remainder"}`, 429 `QUOTA_EXCEEDED`,
//! `GET /v4/user`, `/hosts`, `/recrawl/quota`). The fixtures under
//! `tests/fixtures/rejections/` name where each shape comes from.

use super::mock::{MockResponse, MockServer, Request};
use std::sync::{Arc, Mutex};

/// A Baidu push token recognisable in any output it leaks into.
pub const BAIDU_TOKEN: &str = "BAIDUPUSHTOKEN-5e1c7a9f3b2d4e6a";
/// A Yandex OAuth token recognisable in any output it leaks into.
pub const YANDEX_TOKEN: &str = "y0_YANDEXOAUTHTOKEN-9a7c5e3b1d2f4a6c";
/// The user the mock's `GET /v4/user` names.
pub const YANDEX_USER: u64 = 4242;
/// Baidu's push path.
pub const BAIDU_PUSH: &str = "/urls";
pub const YANDEX_USER_PATH: &str = "/v4/user";

/// `/v4/user/{YANDEX_USER}/hosts`.
pub fn yandex_hosts_path() -> String {
    format!("/v4/user/{YANDEX_USER}/hosts")
}

/// The host id Yandex gives a site `http://127.0.0.1:PORT/`.
pub fn yandex_host_id(site: &MockServer) -> String {
    format!("http:127.0.0.1:{}", site.port())
}

/// `/v4/user/{YANDEX_USER}/hosts/{host}/recrawl/{what}`.
pub fn yandex_recrawl_path(site: &MockServer, what: &str) -> String {
    format!("{}/{}/recrawl/{what}", yandex_hosts_path(), yandex_host_id(site))
}

/// What a mock engine has left today, and every URL it took or refused.
#[derive(Clone, Default)]
pub struct Book {
    inner: Arc<Mutex<BookState>>,
}

#[derive(Default)]
pub struct BookState {
    pub left: u64,
    /// (URL, taken).
    pub received: Vec<(String, bool)>,
}

impl Book {
    pub fn new(left: u64) -> Book {
        let book = Book::default();
        book.set_left(left);
        book
    }

    pub fn set_left(&self, left: u64) {
        self.inner.lock().unwrap().left = left;
    }

    pub fn left(&self) -> u64 {
        self.inner.lock().unwrap().left
    }

    pub fn taken(&self) -> Vec<String> {
        self.inner.lock().unwrap().received.iter().filter(|(_, ok)| *ok).map(|(u, _)| u.clone()).collect()
    }

    pub fn state(&self) -> std::sync::MutexGuard<'_, BookState> {
        self.inner.lock().unwrap()
    }
}

/// The URLs of a push, one a line.
pub fn pushed(request: &Request) -> Vec<String> {
    request.body.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// Baidu's answer to a push against `book`: over quota when the push is
/// larger than what is left (Baidu: "超过每日配额了，超配额后再提交都是无效的"),
/// else every URL taken and `remain` what is left after it.
pub fn baidu_answer(book: &Book, request: &Request) -> MockResponse {
    let urls = pushed(request);
    let mut state = book.state();
    let n = urls.len() as u64;
    if n > state.left {
        state.received.extend(urls.into_iter().map(|u| (u, false)));
        return MockResponse::status(400).json(r#"{"error":400,"message":"over quota"}"#);
    }
    state.left -= n;
    state.received.extend(urls.into_iter().map(|u| (u, true)));
    MockResponse::status(200).json(&format!(r#"{{"remain":{},"success":{n}}}"#, state.left))
}

/// Scripts the Baidu push on `engine` against `book`.
pub fn mock_baidu(engine: &MockServer, book: &Book) {
    let book = book.clone();
    engine.respond_with("POST", BAIDU_PUSH, move |r| baidu_answer(&book, r));
}

/// Yandex's answer to `POST …/recrawl/queue` against `book`.
pub fn yandex_answer(book: &Book, request: &Request) -> MockResponse {
    let url = request.json()["url"].as_str().unwrap_or_default().to_string();
    let mut state = book.state();
    if state.left == 0 {
        state.received.push((url, false));
        return MockResponse::status(429).json(r#"{"error_code":"QUOTA_EXCEEDED","error_message":"some string"}"#);
    }
    state.left -= 1;
    state.received.push((url, true));
    let task = format!("c7fe80c0-36e3-11e6-8b2d-{:012x}", state.received.len());
    MockResponse::status(202).json(&format!(r#"{{"task_id":"{task}","quota_remainder":{}}}"#, state.left))
}

/// Scripts Yandex on `engine` for the site served by `site`: the user, its
/// one verified host (the site), the quota read and the recrawl queue, all
/// against `book` with a daily quota of `daily`.
pub fn mock_yandex(engine: &MockServer, site: &MockServer, book: &Book, daily: u64) {
    engine.on(
        "GET",
        YANDEX_USER_PATH,
        vec![MockResponse::status(200).json(&format!(r#"{{"user_id":{YANDEX_USER}}}"#))],
    );
    let hosts = format!(
        r#"{{"hosts":[{{"host_id":"{id}","ascii_host_url":"{url}/","unicode_host_url":"{url}/","verified":true,"main_mirror":null}}]}}"#,
        id = yandex_host_id(site),
        url = site.url()
    );
    engine.on("GET", &yandex_hosts_path(), vec![MockResponse::status(200).json(&hosts)]);
    let b = book.clone();
    engine.respond_with("GET", &yandex_recrawl_path(site, "quota"), move |_| {
        MockResponse::status(200).json(&format!(r#"{{"daily_quota":{daily},"quota_remainder":{}}}"#, b.left()))
    });
    let b = book.clone();
    engine.respond_with("POST", &yandex_recrawl_path(site, "queue"), move |r| yandex_answer(&b, r));
}
