//! A month left alone: 30 simulated days of an hourly `indexq -q submit`
//! with the site's sitemap as its source, against mock IndexNow and Bing
//! engines that keep their own books by the simulated day. No run sleeps
//! for a retry (`max_wait = "0s"`): a retry goes with a later run.
//!
//! | when (UTC) | what happens |
//! |---|---|
//! | every day, 06:00 | the sitemap gains 3 pages; from day 3 a page of two days before gets a later `lastmod` |
//! | days 3–9 | the IndexNow key file is missing (404) and IndexNow answers 403: parked by the first answer, then held — the sitemap's new pages (one more each afternoon, 14:00) wait with the parked ones, nothing is sent to IndexNow — said once a day, and noticed fixed by itself on day 10 |
//! | day 10, 06:00 | Bing refuses the batch: 400 `{"ErrorCode":2,"Message":"ERROR!!! Quota remaining for today: 0, Submitted: …"}` |
//! | day 15, 06:00 | the run is stopped by SIGTERM while IndexNow holds its request |
//! | days 12–13 | the sitemap answers 404: said once a day, `resumed:` when it reads on day 14 |
//! | day 20, 00:00–11:59 | both engines answer 500 (Bing's `SubmitFeed` too) |
//!
//! The sitemap goes to Bing too (`SubmitFeed`), and Bing's `GetFeeds` says
//! it crawled it when it was submitted. At the end: every page and every
//! later `lastmod` was accepted exactly once per engine, no day got more
//! than its quota at either engine, the sitemap was submitted once a day at
//! most — each day's change with the next day's submission, none on day
//! 13 (the change of day 12 was not read), the one a 500 kept back going
//! after noon (with that day's change) and each next a day after it —
//! nothing is left queued or parked, and each day's output held exactly one
//! saying of the parked group while it was parked and of the sitemap while
//! it could not be read, none before or after; a run exits 3 exactly when
//! it says something needs a human.
//!
//! A second month (`a_month_of_new_posts_ahead_of_an_archive`): a blog
//! with a 300-post archive and a post each morning, Google at 11 a day,
//! `order = "newest"` (the default). Each post is accepted the day it
//! appears, and the archive drains in the 10 left each day.
//!
//! A third (`a_month_of_every_quota_engine_side_by_side`, issue 47): all
//! five engines on one site, Baidu and Yandex each keeping its books by its
//! own midnight, none ever asked for more than it has left.
#![cfg(unix)]

use crate::signals::Running;
use crate::support::mock::MockResponse;
use crate::support::sitemap::Sitemap;
use crate::support::*;
use chrono::{DateTime, Duration as Span, NaiveDate, TimeZone, Utc};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Each engine's daily quota (IndexNow: the property's own; Bing: what the
/// mock reports and the property's own).
const QUOTA: usize = 10;
const DAYS: u32 = 30;

/// What the mock engines and site know: the simulated time and the day's
/// troubles, and every URL each engine received.
#[derive(Default)]
struct World {
    now: Option<DateTime<Utc>>,
    key_missing: bool,
    /// The sitemap answers 404.
    sitemap_down: bool,
    failing: bool,
    bing_refuses: bool,
    /// How long IndexNow holds its next answer.
    hold: Option<Duration>,
    /// (engine, when, URL, accepted).
    received: Vec<(&'static str, DateTime<Utc>, String, bool)>,
    /// Bing's `SubmitFeed` requests: when, and whether it took it.
    feeds: Vec<(DateTime<Utc>, bool)>,
}

impl World {
    fn now(&self) -> DateTime<Utc> {
        self.now.expect("the simulated time is set before each run")
    }

    fn accepted_today(&self, engine: &str) -> usize {
        let day = self.now().date_naive();
        self.received.iter().filter(|(e, at, _, ok)| *e == engine && *ok && at.date_naive() == day).count()
    }

    /// Records what an engine received, and answers.
    fn receive(&mut self, engine: &'static str, urls: Vec<String>, ok: bool) {
        let now = self.now();
        self.received.extend(urls.into_iter().map(|u| (engine, now, u, ok)));
    }
}

fn url_list(request: &crate::support::mock::Request) -> Vec<String> {
    let body = request.json();
    body["urlList"].as_array().unwrap().iter().map(|u| u.as_str().unwrap().to_string()).collect()
}

/// The sandbox: one property with IndexNow (10 a day) and Bing, its source
/// the sitemap; the engines and the key file answer from `world`.
fn sandbox(world: &Arc<Mutex<World>>) -> (Sandbox, Sitemap) {
    let mut sb = Sandbox::new();
    let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
    sb.indexnow_extra = format!(", daily_quota = {QUOTA}");
    sb.bing = Some(format!("daily_quota = {QUOTA}"));
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    // A stop gives requests in flight 5 s; the mock holds one for 1 s. No
    // run sleeps for a retry (`max_wait`): the simulated clock moves by the
    // hour, and a run that slept would go on at its own clock, seconds past
    // the hour the mock engines keep their books by (day 20's 500s, retried
    // within the default 90 s, made three runs sleep 18–55 s, and a retry
    // due a few seconds past noon recorded the sitemap's submission there).
    sb.extra.push_str("\n[submit]\nstop_grace = \"5s\"\nmax_wait = \"0s\"\n");
    sb.write_config();

    let w = Arc::clone(world);
    let served = sitemap.clone();
    sb.site.respond_with("GET", "/sitemap.xml", move |r| {
        if w.lock().unwrap().sitemap_down {
            return MockResponse::status(404);
        }
        served.answer(r.header("If-None-Match"))
    });
    let w = Arc::clone(world);
    sb.site.respond_with("GET", &format!("/{KEY}.txt"), move |_| {
        if w.lock().unwrap().key_missing {
            MockResponse::status(404)
        } else {
            MockResponse::status(200).body(KEY)
        }
    });
    let w = Arc::clone(world);
    sb.engine.respond_with("POST", ENDPOINT_PATH, move |r| {
        let mut w = w.lock().unwrap();
        let urls = url_list(r);
        if w.key_missing {
            w.receive("indexnow", urls, false);
            return MockResponse::status(403).json(r#"{"errorCode":"SiteVerificationNotCompleted"}"#);
        }
        if w.failing {
            w.receive("indexnow", urls, false);
            return MockResponse::status(500);
        }
        w.receive("indexnow", urls, true);
        match w.hold.take() {
            Some(hold) => MockResponse::status(200).delay(hold),
            None => MockResponse::status(200),
        }
    });
    let w = Arc::clone(world);
    sb.engine.respond_with("GET", BING_QUOTA, move |_| {
        let left = QUOTA - w.lock().unwrap().accepted_today("bing");
        MockResponse::status(200)
            .json(&format!(r#"{{"d":{{"DailyQuota":{left},"MonthlyQuota":{}}}}}"#, 10 * QUOTA * 31))
    });
    let w = Arc::clone(world);
    sb.engine.respond_with("POST", BING_SUBMIT, move |r| {
        let mut w = w.lock().unwrap();
        let urls = url_list(r);
        let left = QUOTA - w.accepted_today("bing");
        let n = urls.len();
        if w.bing_refuses || n > left {
            let left = if w.bing_refuses { 0 } else { left };
            w.receive("bing", urls, false);
            let message = format!("ERROR!!! Quota remaining for today: {left}, Submitted: {n}");
            return MockResponse::status(400).json(&format!(r#"{{"ErrorCode":2,"Message":"{message}"}}"#));
        }
        if w.failing {
            w.receive("bing", urls, false);
            return MockResponse::status(500).json(r#"{"ErrorCode":1,"Message":"InternalError"}"#);
        }
        w.receive("bing", urls, true);
        MockResponse::status(200).json(r#"{"d":null}"#)
    });
    let w = Arc::clone(world);
    sb.engine.respond_with("POST", BING_SUBMIT_FEED, move |_| {
        let mut w = w.lock().unwrap();
        let (now, failing) = (w.now(), w.failing);
        w.feeds.push((now, !failing));
        if failing {
            return MockResponse::status(500).json(r#"{"ErrorCode":1,"Message":"InternalError"}"#);
        }
        MockResponse::status(200).json(r#"{"d":null}"#)
    });
    // Bing crawls the sitemap as soon as it takes it.
    let w = Arc::clone(world);
    let feed = sb.url("/sitemap.xml");
    sb.engine.respond_with("GET", BING_GET_FEEDS, move |_| {
        let w = w.lock().unwrap();
        let Some(last) = w.feeds.iter().rev().find(|(_, ok)| *ok).map(|(at, _)| *at) else {
            return MockResponse::status(200).json(r#"{"d":[]}"#);
        };
        let date = format!("/Date({})/", last.timestamp_millis());
        let body = serde_json::json!({ "d": [{ "__type": "Feed:#Microsoft.Bing.Webmaster.Api", "Compressed": false,
            "FileSize": 2048, "LastCrawled": date, "Status": "Success", "Submitted": date, "Type": "Sitemap",
            "Url": feed, "UrlCount": 90 }] });
        MockResponse::status(200).json(&body.to_string())
    });
    (sb, sitemap)
}

fn day_start(day: u32) -> DateTime<Utc> {
    let date = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap() + Span::days(i64::from(day));
    Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).unwrap())
}

/// Lines that say the parked IndexNow group needs a human (the answer that
/// parked URLs, or a reminder), or that the sitemap cannot be read.
fn sayings(stdout: &str) -> usize {
    let says = |l: &&str| {
        l.starts_with("error: IndexNow")
            || l.starts_with("needs a human: IndexNow")
            || l.starts_with("needs a human: the source ")
    };
    stdout.lines().filter(says).count()
}

/// The days the IndexNow key file is missing, and those the sitemap answers 404.
const KEY_MISSING: std::ops::RangeInclusive<u32> = 3..=9;
const SITEMAP_DOWN: std::ops::RangeInclusive<u32> = 12..=13;

#[test]
fn a_month_of_hourly_runs_left_alone() {
    let world = Arc::new(Mutex::new(World::default()));
    let (sb, sitemap) = sandbox(&world);
    // Every page's `lastmod`s, in order, as the times indexq can see them.
    let mut versions: BTreeMap<String, Vec<DateTime<Utc>>> = BTreeMap::new();
    let mut said_per_day: Vec<(u32, usize)> = Vec::new();
    let mut resumed: Vec<(u32, u32, String)> = Vec::new();

    for day in 1..=DAYS {
        let mut said = 0;
        for hour in 0..24 {
            let now = day_start(day) + Span::hours(hour);
            {
                let mut w = world.lock().unwrap();
                w.now = Some(now);
                w.key_missing = KEY_MISSING.contains(&day);
                w.sitemap_down = SITEMAP_DOWN.contains(&day);
                w.failing = day == 20 && hour < 12;
                w.bing_refuses = day == 10 && hour == 6;
            }
            // A change is seen when the sitemap is read: while it answers
            // 404, the day after the outage.
            let seen = if SITEMAP_DOWN.contains(&day) { day_start(SITEMAP_DOWN.end() + 1) } else { now };
            if hour == 6 {
                for page in 1..=3 {
                    let path = format!("/d{day}-{page}");
                    sitemap.add(&path, Some(&now.to_rfc3339()));
                    versions.entry(sb.url(&path)).or_default().push(seen);
                }
                if day >= 3 {
                    let path = format!("/d{}-1", day - 2);
                    sitemap.touch(&path, &now.to_rfc3339());
                    versions.entry(sb.url(&path)).or_default().push(seen);
                }
            }
            // While the key file is missing, a new page each afternoon too.
            if hour == 14 && KEY_MISSING.contains(&day) {
                let path = format!("/d{day}-afternoon");
                sitemap.add(&path, Some(&now.to_rfc3339()));
                versions.entry(sb.url(&path)).or_default().push(now);
            }
            let at = now.to_rfc3339();
            let done = if day == 15 && hour == 6 {
                world.lock().unwrap().hold = Some(Duration::from_secs(1));
                let running = Running::start(sb.indexq(&["-q", "submit"]).now(&at));
                let before = sb.engine.requests_to("POST", ENDPOINT_PATH).len();
                let held = sb.engine.wait_for_requests("POST", ENDPOINT_PATH, before + 1, Duration::from_secs(20));
                assert!(held, "IndexNow got the request it holds");
                running.signal(libc::SIGTERM);
                let done = running.finish();
                assert_eq!(done.code, 143, "{}\n{}", done.stdout, done.stderr);
                assert!(done.stdout.contains("interrupted by SIGTERM"), "{}", done.stdout);
                done
            } else {
                sb.indexq(&["-q", "submit"]).now(&at).output()
            };
            let n = sayings(&done.stdout);
            if done.code != 143 {
                let expected = if n > 0 { 3 } else { 0 };
                assert_eq!(
                    done.code, expected,
                    "day {day} {hour}:00: exit 3 exactly when a run says what needs a human\n--- stdout\n{}\n--- stderr\n{}",
                    done.stdout, done.stderr
                );
            }
            assert_eq!(done.stderr, "", "day {day} {hour}:00: -q says nothing on stderr");
            said += n;
            for line in done.stdout.lines().filter(|l| l.starts_with("resumed: ")) {
                resumed.push((day, hour as u32, line.to_string()));
            }
        }
        said_per_day.push((day, said));
    }

    // One saying a day while parked (the answer on day 3, a reminder on
    // days 4 to 9) and while the sitemap cannot be read, none before or after.
    let expected: Vec<(u32, usize)> =
        (1..=DAYS).map(|d| (d, usize::from(KEY_MISSING.contains(&d) || SITEMAP_DOWN.contains(&d)))).collect();
    assert_eq!(said_per_day, expected);
    // Each fix said once, by the first run that found it.
    assert_eq!(resumed.len(), 2, "{resumed:#?}");
    assert_eq!((resumed[0].0, resumed[0].1), (10, 0), "{resumed:#?}");
    assert!(resumed[0].2.starts_with("resumed: IndexNow"), "{resumed:#?}");
    assert_eq!((resumed[1].0, resumed[1].1), (14, 0), "{resumed:#?}");
    assert!(resumed[1].2.starts_with("resumed: the source "), "{resumed:#?}");

    let w = world.lock().unwrap();
    // Nothing sent to IndexNow while its key file was missing but the
    // request whose answer parked the group.
    let first_refusal = day_start(*KEY_MISSING.start()) + Span::hours(6);
    let refused: Vec<&DateTime<Utc>> = w
        .received
        .iter()
        .filter(|(e, at, _, ok)| *e == "indexnow" && !ok && *at < day_start(KEY_MISSING.end() + 1))
        .map(|r| &r.1)
        .collect();
    let during: Vec<_> = w
        .received
        .iter()
        .filter(|(e, at, ..)| *e == "indexnow" && *at > first_refusal && *at < day_start(KEY_MISSING.end() + 1))
        .collect();
    assert!(during.is_empty(), "sent while parked: {during:?}");
    assert!(!refused.is_empty() && refused.iter().all(|at| **at == first_refusal), "{refused:?}");
    for engine in ["indexnow", "bing"] {
        // No day got more than its quota at the engine (what it received, refused or not).
        let mut per_day: BTreeMap<NaiveDate, usize> = BTreeMap::new();
        for (_, at, _, _) in w.received.iter().filter(|(e, ..)| *e == engine) {
            *per_day.entry(at.date_naive()).or_default() += 1;
        }
        assert!(per_day.values().all(|&n| n <= QUOTA), "{engine}: {per_day:?}");
        // Every page's last lastmod accepted, and never twice for one lastmod.
        for (url, lastmods) in &versions {
            let accepted: Vec<DateTime<Utc>> =
                w.received.iter().filter(|(e, _, u, ok)| *e == engine && u == url && *ok).map(|r| r.1).collect();
            let last = *lastmods.last().unwrap();
            assert!(
                accepted.iter().any(|&at| at >= last),
                "{engine}: {url} was not accepted after {last}: {accepted:?}"
            );
            for pair in accepted.windows(2) {
                let changed = lastmods.iter().any(|&m| m > pair[0] && m <= pair[1]);
                assert!(changed, "{engine}: {url} accepted twice for one lastmod: {accepted:?} ({lastmods:?})");
            }
        }
    }
    // The sitemap: taken once a day at most, each day's 06:00 change with the
    // next submission — at 00:00, until day 20's 500s keep it back (retried
    // with backoff) until a run after noon, and from then on a day after the
    // one before.
    // Day 13 has none: day 12's change was read on day 14 (with day 13's).
    let taken: Vec<DateTime<Utc>> = w.feeds.iter().filter(|(_, ok)| *ok).map(|(at, _)| *at).collect();
    assert_eq!(taken.len() as u32, DAYS - 1, "{taken:?}");
    let before: Vec<DateTime<Utc>> = (1..20).filter(|d| *d != 13).map(day_start).collect();
    assert_eq!(taken[..18], before[..]);
    assert!(taken[18] >= day_start(20) + Span::hours(12) && taken[18] < day_start(21), "{taken:?}");
    assert!(taken[18..].windows(2).all(|p| p[1] - p[0] == Span::hours(24)), "{taken:?}");
    let refused: Vec<DateTime<Utc>> = w.feeds.iter().filter(|(_, ok)| !ok).map(|(at, _)| *at).collect();
    assert!(!refused.is_empty(), "day 20's 500s met the sitemap");
    assert!(refused.iter().all(|at| *at >= day_start(20) && *at < day_start(20) + Span::hours(12)), "{refused:?}");
    let last = *taken.last().unwrap();
    drop(w);

    // Nothing is left queued, in flight or parked: from day 20 on, each
    // day's submission went after noon, with that day's 06:00 change.
    let status =
        sb.indexq(&["--json", "status"]).now(&(day_start(DAYS + 1)).to_rfc3339()).output().code(0).status_doc();
    assert_eq!((status.queue.due, status.queue.waiting, status.queue.in_flight, status.queue.parked), (0, 0, 0, 0));
    assert!(status.parked.is_empty());
    assert_eq!(status.queue.accepted as usize, 2 * versions.len() + 1, "every page, for both engines; the sitemap");
    let [sitemap] = status.sitemaps.as_slice() else { panic!("one sitemap: {:?}", status.sitemaps) };
    assert_eq!(sitemap.submitted_at.as_deref(), Some(last.to_rfc3339().as_str()));
    assert_eq!((sitemap.listed, sitemap.errors, sitemap.urls), (Some(true), Some(0), Some(90)));
    assert_eq!(sitemap.downloaded_at, sitemap.submitted_at, "Bing crawled it as it took it");
}

/// A month of a site in UTC+8 (`timezone = "Asia/Shanghai"`) that writes
/// dates without a time: hourly runs as above, with no trouble at the
/// engines. Every day at 06:00 local (22:00 UTC the day before) the sitemap
/// gains 3 pages dated that local day, and from day 3 at 11:00 local
/// (03:00 UTC) a page of two days before gets that day's date — so the
/// morning's pages are read again after UTC midnight, with the date they
/// were accepted with. On day 5 a scheduled post appears with a lastmod in
/// 2031, read again twice a day; on day 12 the site corrects it to that
/// day's date. At the end every page version was accepted exactly once per
/// engine, and the one warning of a run is the lastmod in the future.
#[test]
fn a_month_of_a_site_in_utc8_that_writes_dates() {
    let world = Arc::new(Mutex::new(World::default()));
    let (mut sb, sitemap) = sandbox(&world);
    sb.property_extra.push_str("timezone = \"Asia/Shanghai\"\n");
    sb.write_config();
    let zone = chrono_tz::Asia::Shanghai;
    let scheduled = "2031-06-01T10:00:00+08:00";
    // Every page's lastmods as written, in order.
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut warned = 0;

    for day in 1..=DAYS {
        for hour in 0..24 {
            let now = day_start(day) + Span::hours(hour);
            world.lock().unwrap().now = Some(now);
            let today = now.with_timezone(&zone).date_naive().to_string();
            let mut version = |path: &str, lastmod: &str| {
                versions.entry(sb.url(path)).or_default().push(lastmod.to_string());
            };
            if hour == 22 {
                for page in 1..=3 {
                    let path = format!("/p{day}-{page}");
                    sitemap.add(&path, Some(&today));
                    version(&path, &today);
                }
                if day == 5 {
                    sitemap.add("/scheduled", Some(scheduled));
                    version("/scheduled", scheduled);
                }
            }
            if hour == 3 && day >= 3 {
                let path = format!("/p{}-2", day - 2);
                sitemap.touch(&path, &today);
                version(&path, &today);
                if day == 12 {
                    sitemap.touch("/scheduled", &today);
                    version("/scheduled", &today);
                }
            }
            let done = sb.indexq(&["-q", "submit"]).now(&now.to_rfc3339()).output().code(0);
            for line in done.stderr.lines() {
                let expected = format!("warning: 1 URL has a lastmod in the future ({}: ", sb.url("/scheduled"));
                assert!(line.starts_with(&expected), "day {day} {hour}:00: {}", done.stderr);
                warned += 1;
            }
        }
    }
    // Read again at 22:00 on days 5 to 11 and at 03:00 on days 6 to 11
    // (on day 12 at 03:00 it was corrected).
    assert_eq!(warned, 13, "a warning each run that read it");

    let w = world.lock().unwrap();
    for engine in ["indexnow", "bing"] {
        let mut per_day: BTreeMap<NaiveDate, usize> = BTreeMap::new();
        for (_, at, _, _) in w.received.iter().filter(|(e, ..)| *e == engine) {
            *per_day.entry(at.date_naive()).or_default() += 1;
        }
        assert!(per_day.values().all(|&n| n <= QUOTA), "{engine}: {per_day:?}");
        for (url, lastmods) in &versions {
            let accepted: Vec<DateTime<Utc>> =
                w.received.iter().filter(|(e, _, u, ok)| *e == engine && u == url && *ok).map(|r| r.1).collect();
            assert_eq!(accepted.len(), lastmods.len(), "{engine}: {url}, versions {lastmods:?}, accepted {accepted:?}");
        }
        let total: usize = versions.values().map(Vec::len).sum();
        assert_eq!(w.received.iter().filter(|(e, ..)| *e == engine).count(), total, "{engine}: nothing else sent");
    }
    let received = w.received.len();
    drop(w);
    // The sitemap's submission of day 30's change waits for its day's
    // spacing; it goes at midnight, and nothing else does.
    let end = day_start(DAYS + 1);
    world.lock().unwrap().now = Some(end);
    sb.indexq(&["-q", "submit"]).now(&end.to_rfc3339()).output().code(0);
    assert_eq!(world.lock().unwrap().received.len(), received, "no URL went again");
    let status = sb.indexq(&["--json", "status"]).now(&end.to_rfc3339()).output().code(0).status_doc();
    assert_eq!((status.queue.due, status.queue.waiting, status.queue.in_flight, status.queue.parked), (0, 0, 0, 0));
}

/// A blog whose sitemap lists a 300-post archive and gains a post each day
/// at 08:30 UTC (00:30 of Google's Pacific quota day); a job runs at 09:00,
/// 15:00 and 21:00 UTC. Each day's post is accepted at 09:00 that day, with
/// 10 of the archive; the later runs find the day spent and send nothing.
/// After 30 days the archive has drained (300 = 30 × 10), every URL was
/// accepted once, and nothing is left queued.
#[test]
fn a_month_of_new_posts_ahead_of_an_archive() {
    let mut sb = Sandbox::google("daily_quota = 11, sitemaps = false");
    sb.google_extra = "requests_per_minute = 6000\n".into();
    let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
    let first = NaiveDate::from_ymd_opt(2023, 1, 1).unwrap();
    for i in 0..300 {
        sitemap.add(&format!("/archive/{i}"), Some(&(first + Span::days(i)).to_string()));
    }
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.extra.push_str("\n[submit]\nmax_wait = \"30s\"\n");
    sb.write_config();
    let base = sb.site.url();
    let mut sent = 0;
    for day in 1..=DAYS {
        let morning = day_start(day) + Span::minutes(8 * 60 + 30);
        sitemap.add(&format!("/post/{day}"), Some(&morning.to_rfc3339()));
        for hour in [9, 15, 21] {
            let now = (day_start(day) + Span::hours(hour)).to_rfc3339();
            sb.indexq(&["-q", "submit"]).now(&now).output().code(0);
        }
        let published = sb.google_published();
        let today: Vec<&str> = published[sent..].iter().map(|(url, _)| url.trim_start_matches(&base)).collect();
        assert_eq!(today.len(), 11, "day {day}: the day's budget, no more: {today:?}");
        let post = format!("/post/{day}");
        assert!(today.contains(&post.as_str()), "day {day}: the post goes the day it appears: {today:?}");
        assert!(today.iter().filter(|p| p.starts_with("/archive/")).count() == 10, "day {day}: {today:?}");
        sent = published.len();
    }
    let mut all: Vec<String> = sb.google_published().into_iter().map(|(url, _)| url).collect();
    assert_eq!(all.len(), 330);
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 330, "each URL accepted once");
    let end = (day_start(DAYS) + Span::hours(22)).to_rfc3339();
    let status = sb.indexq(&["--json", "status"]).now(&end).output().code(0).status_doc();
    assert_eq!((status.queue.due, status.queue.waiting, status.queue.accepted), (0, 0, 330), "{status:#?}");
}

/// What the quota engines of `a_month_of_every_quota_engine_side_by_side`
/// received: (engine, when, URL, taken).
type Received = Arc<Mutex<Vec<(&'static str, DateTime<Utc>, String, bool)>>>;

/// How many URLs `engine` took on the quota day (in `tz`) of `now`.
fn taken_on_day(received: &Received, engine: &str, tz: chrono_tz::Tz, now: DateTime<Utc>) -> usize {
    let day = now.with_timezone(&tz).date_naive();
    let received = received.lock().unwrap();
    received.iter().filter(|(e, at, _, ok)| *e == engine && *ok && at.with_timezone(&tz).date_naive() == day).count()
}

/// A month of a site whose sitemap lists a 40-page archive and gains 3
/// pages each day at 06:00 UTC, submitted hourly to all five engines at
/// once: IndexNow (10 a day of the property's own), Bing (10 a day, as it
/// reports), Google (11 a day), Baidu (10 pushes a day, its day China's)
/// and Yandex (5 recrawls a day, its day Moscow's). Baidu and Yandex keep
/// their books by their own midnights (16:00 and 21:00 UTC), and each
/// says what is left in every answer (`remain`, `quota_remainder`).
/// Neither is ever asked for more than it has left — no `over quota`, no
/// `QUOTA_EXCEEDED` — no engine's day gets more than its quota, no URL is
/// taken twice by one engine, and each day's new pages go first (newest
/// first) at Baidu and Yandex, within a day of appearing.
#[test]
fn a_month_of_every_quota_engine_side_by_side() {
    const BAIDU: usize = 10;
    const YANDEX: usize = 5;
    const GOOGLE: usize = 11;
    let shanghai = chrono_tz::Asia::Shanghai;
    let moscow = chrono_tz::Europe::Moscow;
    let mut sb = Sandbox::google(&format!("daily_quota = {GOOGLE}, sitemaps = false"));
    sb.google_extra = "requests_per_minute = 6000\n".into();
    sb.indexnow = true;
    sb.indexnow_extra = format!(", daily_quota = {QUOTA}");
    sb.bing = Some(format!("daily_quota = {QUOTA}, sitemaps = false"));
    sb.baidu = Some(String::new());
    sb.yandex = Some(String::new());
    let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
    let first = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
    for i in 0..40 {
        sitemap.add(&format!("/archive/{i}"), Some(&(first + Span::days(i)).to_string()));
    }
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.extra.push_str("\n[submit]\nmax_wait = \"0s\"\n");
    sb.write_config();

    let now: Arc<Mutex<DateTime<Utc>>> = Arc::new(Mutex::new(day_start(1)));
    let received: Received = Arc::default();
    // Bing: 10 a day (UTC), said by its quota read.
    let (n, r) = (Arc::clone(&now), Arc::clone(&received));
    sb.engine.respond_with("GET", BING_QUOTA, move |_| {
        let left = QUOTA - taken_on_day(&r, "bing", chrono_tz::UTC, *n.lock().unwrap());
        MockResponse::status(200).json(&format!(r#"{{"d":{{"DailyQuota":{left},"MonthlyQuota":9999}}}}"#))
    });
    let (n, r) = (Arc::clone(&now), Arc::clone(&received));
    sb.engine.respond_with("POST", BING_SUBMIT, move |req| {
        let at = *n.lock().unwrap();
        let urls = url_list(req);
        let ok = urls.len() <= QUOTA - taken_on_day(&r, "bing", chrono_tz::UTC, at);
        r.lock().unwrap().extend(urls.into_iter().map(|u| ("bing", at, u, ok)));
        MockResponse::status(if ok { 200 } else { 400 }).json(r#"{"d":null}"#)
    });
    // Baidu: 10 a day (Shanghai); a push larger than what is left is refused whole.
    let (n, r) = (Arc::clone(&now), Arc::clone(&received));
    sb.engine.respond_with("POST", BAIDU_PUSH, move |req| {
        let at = *n.lock().unwrap();
        let urls = crate::support::quota_engines::pushed(req);
        let left = BAIDU - taken_on_day(&r, "baidu", shanghai, at);
        let ok = urls.len() <= left;
        let count = urls.len();
        r.lock().unwrap().extend(urls.into_iter().map(|u| ("baidu", at, u, ok)));
        if !ok {
            return MockResponse::status(400).json(r#"{"error":400,"message":"over quota"}"#);
        }
        MockResponse::status(200).json(&format!(r#"{{"remain":{},"success":{count}}}"#, left - count))
    });
    // Yandex: 5 a day (Moscow), read by `recrawl/quota` and said in each answer.
    crate::support::quota_engines::mock_yandex(&sb.engine, &sb.site, &Book::new(0), YANDEX as u64);
    let (n, r) = (Arc::clone(&now), Arc::clone(&received));
    sb.engine.respond_with("GET", &yandex_recrawl_path(&sb.site, "quota"), move |_| {
        let left = YANDEX - taken_on_day(&r, "yandex", moscow, *n.lock().unwrap());
        MockResponse::status(200).json(&format!(r#"{{"daily_quota":{YANDEX},"quota_remainder":{left}}}"#))
    });
    let (n, r) = (Arc::clone(&now), Arc::clone(&received));
    sb.engine.respond_with("POST", &yandex_recrawl_path(&sb.site, "queue"), move |req| {
        let at = *n.lock().unwrap();
        let url = req.json()["url"].as_str().unwrap_or_default().to_string();
        let left = YANDEX - taken_on_day(&r, "yandex", moscow, at);
        r.lock().unwrap().push(("yandex", at, url, left > 0));
        if left == 0 {
            return MockResponse::status(429).json(r#"{"error_code":"QUOTA_EXCEEDED","error_message":"some string"}"#);
        }
        MockResponse::status(202).json(&format!(r#"{{"task_id":"t","quota_remainder":{}}}"#, left - 1))
    });

    let mut appeared: BTreeMap<String, DateTime<Utc>> = BTreeMap::new();
    for day in 1..=DAYS {
        for hour in 0..24 {
            let at = day_start(day) + Span::hours(hour);
            *now.lock().unwrap() = at;
            if hour == 6 {
                for page in 1..=3 {
                    let path = format!("/new/{day}-{page}");
                    sitemap.add(&path, Some(&at.to_rfc3339()));
                    appeared.insert(sb.url(&path), at);
                }
            }
            sb.indexq(&["-q", "submit"]).now(&at.to_rfc3339()).output().code(0);
        }
    }

    let received = received.lock().unwrap();
    let quotas: [(&str, usize, chrono_tz::Tz); 3] =
        [("bing", QUOTA, chrono_tz::UTC), ("baidu", BAIDU, shanghai), ("yandex", YANDEX, moscow)];
    for (engine, quota, tz) in quotas {
        let refused: Vec<_> = received.iter().filter(|(e, _, _, ok)| *e == engine && !ok).collect();
        assert!(refused.is_empty(), "{engine} was asked for more than it had left: {refused:?}");
        let mut per_day: BTreeMap<NaiveDate, usize> = BTreeMap::new();
        for (_, at, _, _) in received.iter().filter(|(e, ..)| *e == engine) {
            *per_day.entry(at.with_timezone(&tz).date_naive()).or_default() += 1;
        }
        assert!(per_day.values().all(|&n| n <= quota), "{engine}: {per_day:?}");
        let mut urls: Vec<&String> = received.iter().filter(|(e, ..)| *e == engine).map(|r| &r.2).collect();
        let total = urls.len();
        urls.sort();
        urls.dedup();
        assert_eq!(urls.len(), total, "{engine}: a URL taken twice");
    }
    // Newest first: each new page went to Baidu and Yandex within a day.
    for (url, at) in &appeared {
        for engine in ["baidu", "yandex"] {
            let taken = received.iter().find(|(e, _, u, ok)| *e == engine && u == url && *ok).map(|r| r.1);
            assert!(taken.is_some_and(|t| t - *at < Span::hours(24)), "{engine}: {url} (from {at}) taken {taken:?}");
        }
    }
    // Baidu's 10 a day took the archive too once the new pages had gone.
    let baidu = received.iter().filter(|(e, ..)| *e == "baidu").count();
    assert_eq!(baidu, 40 + appeared.len(), "Baidu took every page within the month");
    let google = sb.google_published().len();
    assert!(google > 0 && google <= GOOGLE * DAYS as usize, "{google}");
    let indexnow = sb.indexnow_received().len();
    assert!(indexnow > 0, "IndexNow ran beside them");
}
