//! Dates as sites write them: a `lastmod` in the future goes once however
//! often it is read again, and a date without a time is a day in the
//! property's timezone (`property.timezone`), compared as a date with the
//! one recorded at the last acceptance.

use crate::support::*;

fn urlset(sb: &Sandbox, entries: &[(&str, &str)]) -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for (path, lastmod) in entries {
        xml.push_str(&format!("<url><loc>{}</loc><lastmod>{lastmod}</lastmod></url>\n", sb.url(path)));
    }
    xml.push_str("</urlset>\n");
    xml
}

/// The URLs the engine received, sorted.
fn received(sb: &Sandbox) -> Vec<String> {
    let mut urls = sb.received_urls();
    urls.sort();
    urls
}

/// The CI recipe (`submit --sitemap FILE --changed`) run three times, a day
/// apart, on a sitemap that does not change and holds a lastmod in the
/// future: each page goes once. Each run warns once of it, naming the
/// count and the first URL; the dry run plans as the run decides.
#[test]
fn the_ci_recipe_sends_a_future_lastmod_once_over_three_runs() {
    let sb = Sandbox::new();
    let sitemap = urlset(
        &sb,
        &[("/typo", "2030-01-01T12:00:00Z"), ("/scheduled", "2027-03-01T09:00:00+08:00"), ("/b", "2027-01-02")],
    );
    std::fs::write(sb.dir.path().join("sitemap.xml"), sitemap).unwrap();
    let recipe = ["submit", "--sitemap", "sitemap.xml", "--changed"];
    for (day, now) in ["2027-01-04T09:00:00Z", "2027-01-05T09:00:00Z", "2027-01-06T09:00:00Z"].iter().enumerate() {
        let plan = sb.indexq(&[&["--json"][..], &recipe, &["--dry-run"]].concat()).now(now).output().code(0);
        let summary = plan.submit_doc().plan_summary.expect("a dry run's summary");
        let indexnow = summary.values().next().expect("IndexNow's plan");
        let (new, unchanged) = if day == 0 { (3, 0) } else { (0, 3) };
        assert_eq!((indexnow.new, indexnow.changed, indexnow.unchanged), (new, 0, unchanged), "day {day}");

        let done = sb.indexq(&recipe).now(now).output().code(0);
        let warnings: Vec<&str> = done.stderr.lines().filter(|l| l.contains("in the future")).collect();
        assert_eq!(warnings.len(), 1, "one warning a run: {}", done.stderr);
        assert!(
            warnings[0].starts_with(&format!(
                "warning: 2 URLs have a lastmod in the future (the first: {}: 2030-01-01T12:00:00Z)",
                sb.url("/typo")
            )),
            "{}",
            warnings[0]
        );
    }
    assert_eq!(received(&sb), [sb.url("/b"), sb.url("/scheduled"), sb.url("/typo")], "each once");

    // The site corrects the typo to a day after the acceptance: a change,
    // sent once more; its scheduled post, unchanged, stays.
    std::fs::write(
        sb.dir.path().join("sitemap.xml"),
        urlset(
            &sb,
            &[("/typo", "2027-01-05T12:00:00Z"), ("/scheduled", "2027-03-01T09:00:00+08:00"), ("/b", "2027-01-02")],
        ),
    )
    .unwrap();
    for now in ["2027-01-07T09:00:00Z", "2027-01-08T09:00:00Z"] {
        let done = sb.indexq(&recipe).now(now).output().code(0);
        let scheduled = format!("warning: 1 URL has a lastmod in the future ({}: ", sb.url("/scheduled"));
        assert!(done.stderr.contains(&scheduled), "{}", done.stderr);
    }
    assert_eq!(sb.received_urls().len(), 4);
    assert_eq!(sb.received_urls().last(), Some(&sb.url("/typo")));
}

/// A site in UTC+8 writes the date of the day a page is published. Pages
/// submitted before 08:00 local (before UTC midnight) are not sent again by
/// a run after UTC midnight: the date read is the date recorded. A URL that
/// came from a list (no lastmod recorded) is unchanged when it was accepted
/// on that local day, changed when it was accepted the local day before.
#[test]
fn dates_in_a_utc8_property_are_not_sent_again_after_utc_midnight() {
    let mut sb = Sandbox::new();
    sb.property_extra = "timezone = \"Asia/Shanghai\"\n".into();
    sb.write_config();
    let sitemap = |sb: &Sandbox, dates: &[(&str, &str)]| {
        std::fs::write(sb.dir.path().join("sitemap.xml"), urlset(sb, dates)).unwrap();
    };
    // 23:30 local on the 3rd: /late-list, from a list.
    let list = sb.urls("late.txt", &["/late-list"]);
    sb.indexq(&["submit", list.to_str().unwrap()]).now("2027-01-03T15:30:00Z").output().code(0);
    // 07:00 local on the 4th (23:00 UTC on the 3rd): the morning's posts,
    // and /early-list from a list.
    sitemap(&sb, &[("/post-1", "2027-01-04"), ("/post-2", "2027-01-04"), ("/old", "2027-01-02")]);
    let recipe = ["submit", "--sitemap", "sitemap.xml", "--changed"];
    sb.indexq(&recipe).now("2027-01-03T23:00:00Z").output().code(0);
    let list = sb.urls("early.txt", &["/early-list"]);
    sb.indexq(&["submit", list.to_str().unwrap()]).now("2027-01-03T23:05:00Z").output().code(0);
    assert_eq!(sb.received_urls().len(), 5);

    // 09:00 local on the 4th (01:00 UTC): the sitemap now names the two
    // list URLs with the same date.
    let dates = [
        ("/post-1", "2027-01-04"),
        ("/post-2", "2027-01-04"),
        ("/old", "2027-01-02"),
        ("/early-list", "2027-01-04"),
        ("/late-list", "2027-01-04"),
    ];
    sitemap(&sb, &dates);
    let now = "2027-01-04T01:00:00Z";
    let plan = sb.indexq(&["--json", "submit", "--dry-run", "--sitemap", "sitemap.xml", "--changed"]).now(now).output();
    let summary = plan.code(0).submit_doc().plan_summary.expect("a dry run's summary");
    let indexnow = summary.values().next().expect("IndexNow's plan");
    assert_eq!((indexnow.new, indexnow.changed, indexnow.unchanged), (0, 1, 4), "the dry run decides as the run");
    let doc = sb.indexq(&[&["--json"][..], &recipe].concat()).now(now).output().code(0).submit_doc();
    assert_eq!(doc.summary.get(json::Outcome::named("accepted")), 1);
    assert_eq!(doc.summary.get(json::Outcome::named("skipped")), 4);
    assert_eq!(sb.received_urls().last(), Some(&sb.url("/late-list")), "accepted the local day before");

    // The next local day's date is a change.
    let mut next = dates;
    next[0].1 = "2027-01-05";
    sitemap(&sb, &next);
    sb.indexq(&recipe).now("2027-01-05T01:00:00Z").output().code(0);
    assert_eq!(sb.received_urls().len(), 7);
    assert_eq!(sb.received_urls().last(), Some(&sb.url("/post-1")));
}

/// `property.timezone` names an IANA timezone: another is refused with its
/// key and line.
#[test]
fn a_property_timezone_that_is_not_one_is_refused_with_its_place() {
    let mut sb = Sandbox::new();
    sb.property_extra = "timezone = \"UTC+8\"\n".into();
    sb.write_config();
    let done = sb.indexq(&["submit", "--dry-run"]).output().code(2);
    assert!(done.stderr.contains("property[0].timezone"), "{}", done.stderr);
    assert!(done.stderr.contains("indexq.toml:15:"), "{}", done.stderr);
}

/// Ghost's `post.published.edited` replayed four times, its post's
/// `updated_at` in the future (a wrong server clock): sent once. The
/// payload is Ghost's own (`tests/fixtures/webhooks/ghost-post.published.json`),
/// its `current.updated_at` moved to 2030.
#[test]
fn a_ghost_edit_replayed_with_a_future_updated_at_is_sent_once() {
    let sb = crate::serve::with_tokens();
    let served = crate::serve::serve_with_tokens(&sb, &[]);
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/webhooks/ghost-post.published.json");
    let fixture = std::fs::read_to_string(path).unwrap().replace("{{SITE}}", &sb.site.url());
    let current = "\"updated_at\": \"2026-12-03T08:59:30.000Z\"";
    assert_eq!(fixture.matches(current).count(), 1, "the current post's updated_at");
    let payload = fixture.replace(current, "\"updated_at\": \"2030-06-01T10:20:30.000Z\"");
    let replay = || {
        let response = served
            .client
            .post(format!("{}/v1/hooks/ghost/post.published.edited?token={GHOST_TOKEN}", served.base))
            .header("content-type", "application/json")
            .body(payload.clone())
            .send()
            .unwrap();
        let doc = crate::serve::admitted(response);
        let e = &doc.results[0].engines[0];
        (e.admission.clone(), e.reason.clone())
    };
    assert_eq!(replay().0, "queued");
    // Accepted (asked over `GET /v1/queue` with the token) before it is replayed.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let url = format!("{}/v1/queue?state=accepted", served.base);
        let text = served.client.get(url).bearer_auth(GHOST_TOKEN).send().unwrap().text().unwrap();
        let json::Doc::QueueList(q) = json::check_text(&text) else { panic!("not the queue document: {text}") };
        if !q.items.is_empty() {
            break;
        }
        assert!(std::time::Instant::now() < end, "never accepted: {text}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for _ in 0..3 {
        assert_eq!(replay(), ("skipped".to_string(), "unchanged".to_string()), "read again: the same lastmod");
    }
    let done = served.stop().code(0);
    assert_eq!(sb.received_urls(), [sb.url("/webhookz/")]);
    let warned = format!("1 URL has a lastmod in the future ({}: 2030-06-01T10:20:30Z)", sb.url("/webhookz/"));
    assert_eq!(done.stderr.matches(&warned).count(), 4, "{}", done.stderr);
}
