//! Four days of one site against mock engines, for the metrics and the
//! report: IndexNow with a daily quota of 3 (UTC) and Bing, each day's
//! answers scripted.
//!
//! | day (09:00 UTC) | input | IndexNow answers | Bing answers | exit |
//! |---|---|---|---|---|
//! | 2026-12-01 | /a1–/a5 | 200 (3 sent, 2 deferred) | 200 (5) | 0 |
//! | 2026-12-02 | /b1, /b2 | 429 (3 sent, not counted: given back; 1 deferred) | ErrorCode 14 (2 parked) | 3 |
//! | 2026-12-03 | — | 503 (3 sent, 1 deferred) | — (the parked 2 said again) | 3 |
//! | 2026-12-04 | /c1 | 422 (3 sent, parked; 2 deferred) | 200 (1) | 3 |
//!
//! So: IndexNow 3 accepted, 3 quota, 3 transient, 3 misconfigured (parked),
//! 2 waiting; Bing 6 accepted, 2 misconfigured (parked).
#![allow(dead_code)]

use super::mock::MockResponse;
use super::{Sandbox, BING_SUBMIT, ENDPOINT_PATH};

pub const DAYS: [&str; 4] =
    ["2026-12-01T09:00:00Z", "2026-12-02T09:00:00Z", "2026-12-03T09:00:00Z", "2026-12-04T09:00:00Z"];
/// When the metrics and the report are read: later on the last day.
pub const AFTER: &str = "2026-12-04T12:00:00Z";

/// The sandbox: one property with IndexNow (3 a day) and Bing.
pub fn sandbox() -> Sandbox {
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", daily_quota = 3".into();
    sb.bing = Some(String::new());
    sb.bing_quota(100, 1000);
    sb.write_config();
    sb
}

/// Runs the four days; `last` adds arguments to the last day's `submit`
/// (e.g. `--metrics-file`).
pub fn four_days(sb: &Sandbox, last: &[&str]) {
    let inputs = [
        Some(sb.urls("day1.txt", &["/a1", "/a2", "/a3", "/a4", "/a5"])),
        Some(sb.urls("day2.txt", &["/b1", "/b2"])),
        None,
        Some(sb.urls("day4.txt", &["/c1"])),
    ];
    let indexnow = [
        MockResponse::status(200),
        MockResponse::status(429),
        MockResponse::status(503),
        MockResponse::status(422).body("the URLs do not belong to the host"),
    ];
    let bing_ok = MockResponse::status(200).json(r#"{"d":null}"#);
    // Not a cause indexq can check by itself (a refused key would be: its
    // quota read would tell), so the two URLs stay parked.
    let bing_bad_key = MockResponse::status(400).json(r#"{"ErrorCode":14,"Message":"ERROR!!! NotAuthorized"}"#);
    let bing = [bing_ok.clone(), bing_bad_key, bing_ok.clone(), bing_ok];
    // Day 3 sends nothing that fails, but says again (a day later) that Bing's URLs are parked.
    let exits = [0, 3, 3, 3];
    for day in 0..4 {
        sb.engine.on("POST", ENDPOINT_PATH, vec![indexnow[day].clone()]);
        sb.engine.on("POST", BING_SUBMIT, vec![bing[day].clone()]);
        let mut args = vec!["submit", "--max-wait", "0"];
        if day == 3 {
            args.extend(last);
        }
        let input = inputs[day].as_ref().map(|p| p.to_str().unwrap().to_string());
        if let Some(input) = &input {
            args.push(input);
        }
        sb.indexq(&args).now(DAYS[day]).output().code(exits[day]);
    }
}
