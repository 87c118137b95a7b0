//! Every classifier (`indexnow`, `bing`, `google`, `google_inspection`,
//! `google_token`, `baidu` with the URLs it lists, `yandex` and its quota
//! read) over an
//! arbitrary status, headers and body: one of the five classes, never a panic,
//! a hint on every `misconfigured` verdict and never the IndexNow key in a text.
//!
//! Input layout: 2 bytes status (any u16), 1 byte choosing the classifier and,
//! for IndexNow, the key file check; the rest split on NUL into header name,
//! header value, … and the body last (all decoded lossily as UTF-8).
#![no_main]

use indexq::testing_api::classify::{
    self, BaiduContext, BingContext, GoogleContext, GoogleTokenContext, IndexNowContext, InspectionContext,
    KeyFileCheck, Response, Verdict, YandexContext,
};
use indexq::testing_api::model::{Action, Class};
use libfuzzer_sys::fuzz_target;

const KEY: &str = "a1b2c3d4e5f6a7b8";
const KEY_LOCATION: &str = "https://example.com/a1b2c3d4e5f6a7b8.txt";

fn check(verdict: &Verdict) {
    let known = matches!(
        verdict.class(),
        Class::Accepted | Class::Quota | Class::Transient | Class::KeyPending | Class::Misconfigured
    );
    assert!(known);
    assert!(!verdict.reason().to_string().is_empty() && !verdict.message.is_empty(), "{verdict:?}");
    if verdict.class() == Class::Misconfigured {
        assert!(verdict.hint.is_some(), "misconfigured without a hint: {verdict:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let status = u16::from_be_bytes([data[0], data[1]]);
    let choice = data[2];
    let mut parts: Vec<String> =
        data[3..].split(|&b| b == 0).map(|p| String::from_utf8_lossy(p).into_owned()).collect();
    let body = parts.pop().unwrap_or_default();
    let headers: Vec<(String, String)> =
        parts.chunks(2).map(|p| (p[0].clone(), p.get(1).cloned().unwrap_or_default())).collect();
    let resp = Response { status, headers: &headers, body: &body };
    let verdict = match choice % 7 {
        0 => {
            // The key file check reuses the headers' first value as the served body.
            let served = headers.first().map(|(_, v)| v.clone()).unwrap_or_default();
            let key_file = match (choice / 5) % 3 {
                0 => None,
                1 => Some(KeyFileCheck::Fetched { status: status.rotate_left(8), body: served }),
                _ => Some(KeyFileCheck::Failed { error: served }),
            };
            let ctx = IndexNowContext { key: KEY, key_location: KEY_LOCATION, key_file: key_file.as_ref() };
            let verdict = classify::indexnow(&resp, &ctx);
            let texts = format!("{} {}", verdict.message, verdict.hint.as_deref().unwrap_or_default());
            assert!(!texts.to_ascii_lowercase().contains(KEY), "the key shows: {verdict:?}");
            verdict
        }
        1 => classify::bing(&resp, &BingContext { site_url: "https://example.com/" }),
        2 => {
            let ctx = GoogleContext {
                url: "https://example.com/page",
                action: if (choice / 5) % 2 == 0 { Action::Updated } else { Action::Deleted },
                client_email: "indexer@project.iam.gserviceaccount.com",
                project_id: "project",
            };
            classify::google(&resp, &ctx)
        }
        3 => {
            let ctx = InspectionContext {
                url: "https://example.com/page",
                site_url: if (choice / 5) % 2 == 0 { "https://example.com/" } else { "sc-domain:example.com" },
                client_email: "indexer@project.iam.gserviceaccount.com",
                project_id: "project",
            };
            classify::google_inspection(&resp, &ctx)
        }
        4 => {
            let ctx = GoogleTokenContext {
                client_email: "indexer@project.iam.gserviceaccount.com",
                key_id: "0123456789abcdef",
            };
            classify::google_token(&resp, &ctx)
        }
        5 => {
            let ctx = BaiduContext { site: "https://example.com" };
            for (_, verdict) in classify::baidu_refused(&resp, &ctx) {
                check(&verdict);
            }
            classify::baidu(&resp, &ctx)
        }
        _ => {
            let ctx = YandexContext { user_id: "1", host_id: "https:example.com:443" };
            if let Err(verdict) = classify::yandex_quota(&resp, &ctx) {
                check(&verdict);
            }
            classify::yandex(&resp, &ctx)
        }
    };
    check(&verdict);
});
