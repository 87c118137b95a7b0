//! What the classifier tests share: the key, the contexts, and one helper a
//! classifier that checks every verdict it makes.

use super::*;

pub const KEY: &str = "3f8a1c9e7b2d4f6a8c0e1b3d5f7a9c2e";

pub const BING_CTX: BingContext<'static> = BingContext { site_url: "https://example.com/" };
pub const BAIDU_CTX: BaiduContext<'static> = BaiduContext { site: "https://example.com" };
pub const YANDEX_CTX: YandexContext<'static> = YandexContext { user_id: "1", host_id: "https:example.com:443" };
pub const GOOGLE_CTX: GoogleContext<'static> = GoogleContext {
    url: "https://example.com/a",
    action: crate::model::Action::Updated,
    client_email: "indexer@my-proj.iam.gserviceaccount.com",
    project_id: "my-proj",
};
pub const INSPECTION_CTX: InspectionContext<'static> = InspectionContext {
    url: "https://example.com/a",
    site_url: "https://example.com/",
    client_email: "indexer@my-proj.iam.gserviceaccount.com",
    project_id: "my-proj",
};
pub const SITEMAPS_CTX: SitemapsContext<'static> = SitemapsContext {
    sitemap: "https://example.com/sitemap.xml",
    site_url: "https://example.com/",
    client_email: "indexer@my-proj.iam.gserviceaccount.com",
    project_id: "my-proj",
};
/// The sitemap a Bing feed fixture is about.
pub const BING_FEED: &str = "https://example.com/sitemap.xml";
pub const GOOGLE_TOKEN_CTX: GoogleTokenContext<'static> =
    GoogleTokenContext { client_email: "indexer@my-proj.iam.gserviceaccount.com", key_id: "0123abcd" };

/// The default key location of [`KEY`].
pub fn location() -> String {
    format!("https://example.com/{KEY}.txt")
}

/// Every verdict a test makes goes through here: no message or hint may
/// show the key, in any letter case.
pub fn assert_no_secret(verdict: &Verdict, key: &str, case: &str) {
    let key = key.to_ascii_lowercase();
    let message = verdict.message.to_ascii_lowercase();
    assert!(!message.contains(&key), "{case}: message shows the key: {}", verdict.message);
    if let Some(hint) = &verdict.hint {
        assert!(!hint.to_ascii_lowercase().contains(&key), "{case}: hint shows the key: {hint}");
    }
    assert!(!verdict.message.is_empty(), "{case}: empty message");
    if verdict.class() == Class::Misconfigured {
        assert!(verdict.hint.is_some(), "{case}: misconfigured without a hint");
    }
}

pub fn owned_headers(headers: &[(&str, &str)]) -> Vec<(String, String)> {
    headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
}

/// A key file check that served `body`, "KEY" standing for [`KEY`].
pub fn fetched(status: u16, body: &str) -> KeyFileCheck {
    KeyFileCheck::Fetched { status, body: body.replace("KEY", KEY) }
}

/// An IndexNow answer for [`KEY`] at its default location.
pub fn indexnow_verdict(status: u16, headers: &[(&str, &str)], body: &str, check: Option<&KeyFileCheck>) -> Verdict {
    let headers = owned_headers(headers);
    let resp = Response { status, headers: &headers, body };
    let location = location();
    let ctx = IndexNowContext { key: KEY, key_location: &location, key_file: check };
    let verdict = indexnow(&resp, &ctx);
    assert_no_secret(&verdict, KEY, &format!("status {status} body {body:?}"));
    verdict
}

pub fn bing_verdict(status: u16, headers: &[(&str, &str)], body: &str) -> Verdict {
    let headers = owned_headers(headers);
    let v = bing(&Response { status, headers: &headers, body }, &BING_CTX);
    assert_no_secret(&v, KEY, &format!("bing {status} {body}"));
    v
}

/// Every Google verdict: a message, and a hint when misconfigured.
pub fn google_verdict(status: u16, headers: &[(&str, &str)], body: &str) -> Verdict {
    let headers = owned_headers(headers);
    let v = google(&Response { status, headers: &headers, body }, &GOOGLE_CTX);
    assert_no_secret(&v, KEY, &format!("google {status} {body}"));
    v
}

/// Every URL inspection verdict: a message, and a hint when misconfigured.
pub fn inspection_verdict(status: u16, headers: &[(&str, &str)], body: &str) -> Verdict {
    let headers = owned_headers(headers);
    let v = google_inspection(&Response { status, headers: &headers, body }, &INSPECTION_CTX);
    assert_no_secret(&v, KEY, &format!("google inspection {status} {body}"));
    v
}

pub fn google_token_verdict(status: u16, headers: &[(&str, &str)], body: &str) -> Verdict {
    let headers = owned_headers(headers);
    let v = google_token(&Response { status, headers: &headers, body }, &GOOGLE_TOKEN_CTX);
    assert_no_secret(&v, KEY, &format!("google token {status} {body}"));
    v
}

/// `{"error": {"code", "message", "status", "details"}}`.
pub fn rpc(code: u16, status: &str, message: &str, details: &str) -> String {
    let message = serde_json::Value::String(message.to_string());
    let details = if details.is_empty() { String::new() } else { format!(r#", "details": [{details}]"#) };
    format!(r#"{{"error": {{"code": {code}, "message": {message}, "status": "{status}"{details}}}}}"#)
}
