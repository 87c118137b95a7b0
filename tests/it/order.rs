//! `[submit] order` through the binary: a blog whose sitemap holds a
//! 30-post archive and gains a post each day, with Google at 11 a day.
//! Newest first (the default), each day's post is published the day it
//! appears, first of the day's 11; `order = "oldest"` keeps the archive
//! first, as before.

use crate::support::sitemap::Sitemap;
use crate::support::*;

/// Four runs, each in its own Pacific day (Google's quota day), at 04:00
/// there.
const DAYS: [&str; 4] =
    ["2026-12-03T12:00:00Z", "2026-12-04T12:00:00Z", "2026-12-05T12:00:00Z", "2026-12-06T12:00:00Z"];

/// A Google sandbox whose property's source is a sitemap of 30 archived
/// posts (`/archive/0` the oldest, a day apart in 2024); `submit` adds
/// lines to `[submit]`.
fn blog(submit: &str) -> (Sandbox, Sitemap) {
    blog_of(30, submit)
}

/// `blog` with an archive of `n` posts.
fn blog_of(n: usize, submit: &str) -> (Sandbox, Sitemap) {
    let mut sb = Sandbox::google("daily_quota = 11, sitemaps = false");
    sb.google_extra = "requests_per_minute = 6000\n".into();
    let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
    let day = chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap();
    for i in 0..n {
        sitemap.add(&format!("/archive/{i}"), Some(&(day + chrono::Days::new(i as u64)).to_string()));
    }
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.extra = format!("[submit]\n{submit}\n{}", sb.extra);
    sb.write_config();
    (sb, sitemap)
}

/// The paths Google was asked to publish, from the `from`-th request on,
/// sorted (a burst's requests go at once: their order is the mock's).
fn published_since(sb: &Sandbox, from: usize) -> Vec<String> {
    let base = sb.site.url();
    let mut paths: Vec<String> = sb
        .google_published()
        .into_iter()
        .skip(from)
        .map(|(url, _)| url.trim_start_matches(&base).to_string())
        .collect();
    paths.sort();
    paths
}

fn archive(ids: std::ops::Range<usize>) -> Vec<String> {
    let mut paths: Vec<String> = ids.map(|i| format!("/archive/{i}")).collect();
    paths.sort();
    paths
}

/// Day 1 publishes the 11 newest of the archive; from day 2, the post of
/// the morning goes the same day and the archive fills the rest of the
/// day's 11.
#[test]
fn newest_first_sends_each_days_post_the_day_it_appears() {
    let (sb, sitemap) = blog("");
    sb.indexq(&["submit", "--max-wait", "30s"]).now(DAYS[0]).output().code(0);
    let day1 = published_since(&sb, 0);
    assert_eq!(day1, archive(19..30), "the 11 newest of the archive");
    let mut sent = day1.len();
    for (day, at) in DAYS.iter().enumerate().skip(1) {
        let date = &at[..10];
        sitemap.add(&format!("/post/{day}"), Some(&format!("{date}T10:00:00Z")));
        sb.indexq(&["submit", "--max-wait", "30s"]).now(at).output().code(0);
        let today = published_since(&sb, sent);
        // Day 2: the post and 10 of the archive; day 3: the post and the
        // archive's last 9; day 4: the post alone.
        assert_eq!(today.len(), [11, 10, 1][day - 1], "day {}: {today:?}", day + 1);
        assert!(today.contains(&format!("/post/{day}")), "day {}: the new post goes: {today:?}", day + 1);
        sent += today.len();
    }
    // 30 archived posts and 3 new ones at 11 a day: all sent in 3 days.
    let all = published_since(&sb, 0);
    assert_eq!(all.len(), 33, "{all:?}");
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 33, "each sent once: {all:?}");
}

/// `order = "oldest"`: the archive as the sitemap lists it, first in,
/// first out; the day-2 post waits behind the archive's next 11.
#[test]
fn oldest_keeps_the_archive_first() {
    let (sb, sitemap) = blog("order = \"oldest\"");
    sb.indexq(&["submit", "--max-wait", "30s"]).now(DAYS[0]).output().code(0);
    let day1 = published_since(&sb, 0);
    assert_eq!(day1, archive(0..11));
    sitemap.add("/post/1", Some("2026-12-04T10:00:00Z"));
    sb.indexq(&["submit", "--max-wait", "30s"]).now(DAYS[1]).output().code(0);
    let day2 = published_since(&sb, 11);
    assert_eq!(day2, archive(11..22), "the post waits behind the archive");
}

/// A value other than `newest` or `oldest` is an error naming the key and its line.
#[test]
fn an_unknown_order_names_the_key_and_line() {
    let (sb, _sitemap) = blog("order = \"random\"");
    let done = sb.indexq(&["submit", "--dry-run"]).now(DAYS[0]).output();
    assert_eq!(done.code, 2, "{}", done.stderr);
    assert!(done.stderr.contains("submit.order"), "{}", done.stderr);
    assert!(done.stderr.contains("unknown order `random` (expected newest or oldest)"), "{}", done.stderr);
}

/// `--baseline` with no input reads the sources and records every URL as
/// announced: nothing is sent, no quota spent, the count said. The next
/// runs send only what is new or changed since; `--force` undoes it.
#[test]
fn a_baseline_records_the_archive_and_later_runs_send_only_what_is_new() {
    let (sb, sitemap) = blog("");
    let done = sb.indexq(&["submit", "--baseline"]).now(DAYS[0]).output().code(0);
    assert!(
        done.stdout.contains(
            "Baseline: recorded 30 URLs as already announced (30 to Google); nothing was sent and no quota spent."
        ),
        "{}",
        done.stdout
    );
    assert!(sb.google_published().is_empty(), "nothing sent");
    let status = sb.indexq(&["--json", "status"]).now(DAYS[0]).output().code(0).status_doc();
    assert!(status.budgets.iter().all(|b| b.used == 0), "no quota spent: {status:#?}");
    // A baseline again records nothing more.
    let again = sb.indexq(&["submit", "--baseline"]).now(DAYS[0]).output().code(0);
    assert!(again.stdout.contains("Baseline: recorded 0 URLs"), "{}", again.stdout);

    // The next day: a new post and an archived one changed go; nothing else.
    sitemap.add("/post/1", Some("2026-12-04T10:00:00Z"));
    sitemap.touch("/archive/3", "2026-12-04T09:00:00Z");
    sb.indexq(&["submit", "--max-wait", "30s"]).now(DAYS[1]).output().code(0);
    assert_eq!(published_since(&sb, 0), ["/archive/3", "/post/1"]);

    // --force undoes it for what it is given.
    let list = sb.urls("again.txt", &["/archive/7"]);
    sb.indexq(&["submit", "--force", "--max-wait", "30s", list.to_str().unwrap()]).now(DAYS[2]).output().code(0);
    assert_eq!(published_since(&sb, 2), ["/archive/7"]);
}

/// A URL list given to `--baseline` is recorded for the engines `--engine`
/// names; the input replaces the sources. With `--json`, the count is a
/// note of the document.
#[test]
fn a_baseline_of_a_list_names_its_count() {
    let (sb, _sitemap) = blog("");
    let list = sb.urls("old.txt", &["/archive/0", "/archive/1"]);
    let done = sb.indexq(&["--json", "submit", "--baseline", "--engine", "google", list.to_str().unwrap()]);
    let doc = done.now(DAYS[0]).output().code(0).json();
    let said = "Baseline: recorded 2 URLs as already announced (2 to Google); nothing was sent and no quota spent.";
    assert_eq!(doc["notes"], serde_json::json!([said]), "{doc:#}");
    // The sources' other 28 go the next run, the 2 recorded do not.
    sb.indexq(&["submit", "--max-wait", "30s"]).now(DAYS[1]).output().code(0);
    let sent = published_since(&sb, 0);
    assert_eq!(sent.len(), 11, "{sent:?}");
    assert!(!sent.contains(&"/archive/0".to_string()) && !sent.contains(&"/archive/1".to_string()), "{sent:?}");
}

/// The dry run and `status` say how long the backlog takes at the daily
/// budget; a first run that queues more than a week of it says so once,
/// naming `--baseline`.
#[test]
fn the_backlog_is_estimated_and_a_first_run_of_more_than_a_week_says_so_once() {
    let (sb, _sitemap) = blog_of(100, "");
    let plan = sb.indexq(&["submit", "--dry-run"]).now(DAYS[0]).output().code(0);
    assert!(plan.stdout.contains("100 URLs waiting: about 10 days at 11 a day"), "{}", plan.stdout);
    assert!(sb.google_published().is_empty());

    let first = sb.indexq(&["submit", "--max-wait", "30s"]).now(DAYS[0]).output().code(0);
    let said = "this first run queued 100 URLs, about 10 days at 11 a day";
    assert_eq!(sb.google_published().len(), 11);
    assert_eq!(first.stderr.matches(said).count(), 1, "{}", first.stderr);
    assert!(first.stderr.contains("indexq submit --baseline --engine google"), "{}", first.stderr);
    assert!(first.stderr.contains("POST /v1/sources"), "{}", first.stderr);

    let status = sb.indexq(&["status"]).now(DAYS[0]).output().code(0);
    assert!(status.stdout.contains("backlog: 89 URLs waiting: about 9 days at 11 a day"), "{}", status.stdout);
    let doc = sb.indexq(&["--json", "status"]).now(DAYS[0]).output().code(0).status_doc();
    let backlog = doc.groups[0].backlog.clone().expect("a backlog");
    assert_eq!((backlog.urls, backlog.per_day, backlog.days), (89, 11, 9));

    let second = sb.indexq(&["submit", "--max-wait", "30s"]).now(DAYS[1]).output().code(0);
    assert!(!second.stderr.contains("first run"), "said once: {}", second.stderr);
}

/// `queue drop` undoes a baseline for what it drops: read again (here from
/// a list: the unchanged sitemap costs a 304 and is not parsed), the URL is
/// new, and goes; the others recorded stay announced.
#[test]
fn queue_drop_undoes_a_baseline() {
    let (sb, _sitemap) = blog("");
    sb.indexq(&["submit", "--baseline"]).now(DAYS[0]).output().code(0);
    let url = format!("{}/archive/5", sb.site.url());
    sb.indexq(&["queue", "drop", "--state", "accepted", "--url", &url]).now(DAYS[0]).output().code(0);
    let list = sb.urls("two.txt", &["/archive/5", "/archive/6"]);
    sb.indexq(&["submit", "--changed", "--max-wait", "30s", list.to_str().unwrap()]).now(DAYS[1]).output().code(0);
    assert_eq!(published_since(&sb, 0), ["/archive/5"]);
}

/// The advice of a first run's warning works as given: `--baseline` after
/// it reads the unchanged sitemap in full (no 304 is taken for "nothing
/// new") and records what the first run left queued; the next day only a
/// new post goes.
#[test]
fn a_baseline_after_a_first_run_records_what_it_queued() {
    let (sb, sitemap) = blog_of(100, "");
    sb.indexq(&["submit", "--max-wait", "30s"]).now(DAYS[0]).output().code(0);
    assert_eq!(sb.google_published().len(), 11);
    let done = sb.indexq(&["submit", "--baseline", "--engine", "google"]).now(DAYS[0]).output().code(0);
    assert!(done.stdout.contains("recorded 89 URLs as already announced (89 to Google)"), "{}", done.stdout);
    assert!(!done.stdout.contains("waiting") && !done.stdout.contains("deferred"), "{}", done.stdout);
    let doc = sb.indexq(&["--json", "status"]).now(DAYS[0]).output().code(0).status_doc();
    assert_eq!((doc.queue.due, doc.queue.waiting, doc.queue.accepted), (0, 0, 100), "{doc:#?}");
    sitemap.add("/post/1", Some("2026-12-04T10:00:00Z"));
    sb.indexq(&["submit", "--max-wait", "30s"]).now(DAYS[1]).output().code(0);
    assert_eq!(published_since(&sb, 11), ["/post/1"]);
}
