use super::*;
use crate::ledger::ItemRow;
use crate::model::{Class, ItemState, Reason};
use crate::pipeline::findings::admitted::{admission_result, row_entry, AdmissionResult};
use crate::pipeline::testing::{self, admit_rule, at, new_item, site_group, Fixture, Scripted, NOW, PRINTER};

#[test]
fn since_keeps_only_a_lastmod_at_or_after_it() {
    let since = at("2026-03-01T00:00:00Z");
    assert!(!before_since(None, None), "without --since every URL is kept");
    assert!(!before_since(None, Some(since)));
    assert!(before_since(Some(since), None), "no lastmod: left out");
    assert!(before_since(Some(since), Some(since - TimeDelta::seconds(1))));
    assert!(!before_since(Some(since), Some(since)), "at --since: kept");
    assert!(!before_since(Some(since), Some(since + TimeDelta::days(3))));
}

/// When a sitemap last changed: the latest `changed_at` of what was
/// read of it, or a later `lastmod` in it (never later than now);
/// nothing read, nothing known.
#[test]
fn a_sitemap_changed_when_its_newest_document_did_or_a_later_lastmod_says() {
    let now = at(NOW);
    let doc = |changed: &str| SourceDocument {
        url: "https://site.example/s.xml".into(),
        etag: None,
        last_modified: None,
        digest: "d".into(),
        kind: DocumentKind::Urlset,
        routes: "r".into(),
        fetched_at: now,
        changed_at: at(changed),
    };
    let kept = [doc("2026-03-01T00:00:00Z"), doc("2026-03-02T08:00:00Z")];
    assert_eq!(sitemap_changed(&kept, None, now), Some(at("2026-03-02T08:00:00Z")));
    assert_eq!(sitemap_changed(&kept, Some(at("2026-03-01T12:00:00Z")), now), Some(at("2026-03-02T08:00:00Z")));
    assert_eq!(sitemap_changed(&kept, Some(at("2026-03-02T09:00:00Z")), now), Some(at("2026-03-02T09:00:00Z")));
    assert_eq!(sitemap_changed(&kept, Some(at("2030-01-01T00:00:00Z")), now), Some(now), "never later than now");
    assert_eq!(sitemap_changed(&[], Some(at("2026-03-02T09:00:00Z")), now), None);
}

#[test]
fn the_plan_counts_new_changed_and_unchanged_urls() {
    let now = at(NOW);
    let mut counts = PlanCounts::default();
    let admissions = [
        Admission::Queued { fresh: true },
        Admission::Queued { fresh: true },
        Admission::Queued { fresh: false },
        Admission::Skipped { id: 1, accepted_at: now, unchanged: true },
        Admission::Skipped { id: 2, accepted_at: now, unchanged: false },
        Admission::AlreadyQueued { id: 3, next_attempt_at: None },
        Admission::Parked { id: 4 },
        Admission::InFlight { id: 5 },
    ];
    for a in &admissions {
        count(&mut counts, a);
    }
    assert_eq!((counts.new, counts.changed, counts.unchanged), (2, 1, 1));
}

#[test]
fn a_due_url_says_nothing_and_one_waiting_parked_or_in_flight_is_told_from_its_row() {
    let now = at(NOW);
    let url = new_item(&site_group(), "https://site.example/a");
    let told_of = |a| match admission_result(&url, a, now) {
        AdmissionResult::Nothing => "nothing".to_string(),
        AdmissionResult::FromRow(id) => format!("row {id}"),
        AdmissionResult::Result(id, e) => format!("result {id} {}", e.reason),
    };
    assert_eq!(told_of(Admission::Queued { fresh: true }), "nothing");
    assert_eq!(told_of(Admission::Queued { fresh: false }), "nothing");
    assert_eq!(told_of(Admission::AlreadyQueued { id: 7, next_attempt_at: None }), "nothing");
    assert_eq!(told_of(Admission::AlreadyQueued { id: 7, next_attempt_at: Some(now) }), "nothing", "due now");
    let later = Some(now + TimeDelta::minutes(5));
    assert_eq!(told_of(Admission::AlreadyQueued { id: 7, next_attempt_at: later }), "row 7");
    assert_eq!(told_of(Admission::Parked { id: 8 }), "row 8");
    assert_eq!(told_of(Admission::InFlight { id: 9 }), "row 9");
}

#[test]
fn a_url_accepted_before_is_skipped_as_unchanged_or_already_accepted() {
    let now = at(NOW);
    let url = new_item(&site_group(), "https://site.example/a");
    let accepted_at = now - TimeDelta::hours(3);
    let AdmissionResult::Result(id, e) =
        admission_result(&url, Admission::Skipped { id: 4, accepted_at, unchanged: true }, now)
    else {
        panic!("a skipped URL has its result now")
    };
    assert_eq!((id, e.outcome, e.reason.to_string().as_str()), (4, Outcome::Skipped, "unchanged"));
    assert_eq!(e.message, "not changed since it was accepted 3 h ago (no later lastmod)");
    assert_eq!(
        (e.url.as_str(), e.property.as_deref(), e.engine),
        (url.url.as_str(), Some("site"), Some(url.group.engine))
    );
    let AdmissionResult::Result(_, e) =
        admission_result(&url, Admission::Skipped { id: 4, accepted_at, unchanged: false }, now)
    else {
        panic!("a skipped URL has its result now")
    };
    assert_eq!(
        (e.outcome, e.reason.to_string().as_str(), e.message.as_str()),
        (Outcome::Skipped, "already_accepted", "accepted 3 h ago")
    );
}

fn row(state: ItemState, last_class: Option<Class>, reason: Option<&str>) -> ItemRow {
    ItemRow {
        id: 3,
        url: "https://site.example/a".into(),
        group: site_group(),
        state,
        next_attempt_at: Some(at("2026-03-02T12:00:00Z")),
        attempts: 2,
        last_class,
        last_reason: reason
            .map(|r| Reason::of_class(last_class.expect("a reason has a class"), r).expect("a reason of the class")),
        last_message: reason.map(|r| format!("the engine said {r}")),
        last_http_status: Some(429),
        accepted_at: None,
    }
}

#[test]
fn a_parked_row_is_misconfigured_with_the_answer_that_parked_it() {
    let now = at(NOW);
    let no_tz = |_: &GroupKey| -> Option<Tz> { panic!("a parked item has no retry to tell") };
    let e = row_entry(row(ItemState::Parked, Some(Class::Misconfigured), Some("forbidden")), Tz::UTC, no_tz, now);
    assert_eq!(
        (e.outcome, e.reason.to_string().as_str(), e.message.as_str()),
        (Outcome::Misconfigured, "forbidden", "the engine said forbidden")
    );
    assert_eq!((e.attempts, e.http_status, e.retry_at), (2, Some(429), None));
    assert!(e.hint.is_some_and(|h| h.contains("indexq queue retry")));
    let e = row_entry(row(ItemState::Parked, None, None), Tz::UTC, no_tz, now);
    assert_eq!((e.reason.to_string().as_str(), e.message.as_str()), ("parked", "parked by an earlier run"));
}

#[test]
fn an_in_flight_row_is_deferred_while_another_run_sends_it() {
    let now = at(NOW);
    let e = row_entry(row(ItemState::InFlight, Some(Class::Transient), Some("server_error")), Tz::UTC, |_| None, now);
    assert_eq!((e.outcome, e.reason.to_string().as_str()), (Outcome::Deferred, "in_flight"));
    assert_eq!(e.message, "another indexq run is sending it right now");
    assert_eq!(e.retry_at, None);
}

#[test]
fn a_quota_wait_is_told_in_the_rules_timezone_and_any_other_in_the_users() {
    let now = at(NOW);
    let shanghai = |_: &GroupKey| Some(chrono_tz::Asia::Shanghai);
    let paris = chrono_tz::Europe::Paris;
    let e = row_entry(row(ItemState::Queued, Some(Class::Quota), Some("rate_limited")), paris, shanghai, now);
    assert_eq!((e.outcome, e.reason.to_string().as_str()), (Outcome::Deferred, "rate_limited"));
    assert_eq!(e.retry_at.as_deref(), Some("2026-03-02T20:00:00+08:00"));
    assert_eq!(e.retry_after_secs, Some(7200));
    let e = row_entry(row(ItemState::Queued, None, None), paris, shanghai, now);
    assert_eq!((e.reason.to_string().as_str(), e.message.as_str()), ("queued", "waiting in the queue"));
    assert_eq!(e.retry_at.as_deref(), Some("2026-03-02T20:00:00+08:00"), "never answered: the budget's wait");
    let e = row_entry(row(ItemState::Queued, Some(Class::Transient), Some("server_error")), paris, shanghai, now);
    assert_eq!(e.retry_at.as_deref(), Some("2026-03-02T13:00:00+01:00"));
    let e = row_entry(row(ItemState::Queued, Some(Class::Quota), None), paris, |_| None, now);
    assert_eq!(e.retry_at.as_deref(), Some("2026-03-02T13:00:00+01:00"), "no rule: the user's timezone");
}

#[test]
fn an_invalid_line_keeps_its_position() {
    let place = Position::at("https://e.com:8080/s.xml", 3, 14);
    let e = invalid("https://e.com/s.xml", &place, LocalReason::Sitemap, "not XML".into());
    assert_eq!(
        (e.outcome, e.reason.to_string().as_str(), e.message.as_str()),
        (Outcome::Invalid, "sitemap", "not XML")
    );
    assert_eq!((e.source.as_ref(), e.property, e.engine), (Some(&place), None, None));
    assert_eq!(&*e.source.unwrap().source, "https://e.com:8080/s.xml", "the sitemap, a port and all");
}

fn read_list(intake: &mut Admitting, text: &'static str) {
    intake.ingest_list("urls.txt", Box::new(std::io::Cursor::new(text)), &PRINTER).expect("the list is read");
}

#[tokio::test]
async fn a_list_becomes_queue_items_and_its_bad_lines_invalid_results() {
    let f = Fixture::new("");
    let mut run = f.run(Scripted::answering(Class::Accepted, "ok", 10));
    let mut intake = run.intake(admit_rule(), None);
    read_list(
        &mut intake,
        "https://site.example/a\nhttps://site.example/b\nhttps://site.example/a\nnot a url\nhttps://other.example/x\n",
    );
    let new = intake.counts[&EngineKind::IndexNow].new;
    let urls: Vec<_> = testing::items(&mut run).into_iter().map(|i| (i.url, i.state)).collect();
    assert_eq!(
        urls,
        [
            ("https://site.example/a".to_string(), ItemState::Queued),
            ("https://site.example/b".into(), ItemState::Queued)
        ]
    );
    assert_eq!(new, 2, "a URL read twice is one new item");
    assert_eq!((run.findings.read, run.findings.admitted), (5, 3));
    let results = testing::results(&mut run);
    assert_eq!(
        results,
        [
            ("not a url".to_string(), "invalid".to_string(), "invalid_url".to_string()),
            ("https://other.example/x".into(), "invalid".into(), "no_property".into()),
        ]
    );
}

#[tokio::test]
async fn since_leaves_out_urls_without_a_later_lastmod() {
    let f = Fixture::new("");
    let mut run = f.run(Scripted::answering(Class::Accepted, "ok", 10));
    let since = at("2026-03-01T00:00:00Z");
    let mut intake = run.intake(admit_rule(), Some(since));
    for (path, lastmod) in [("old", Some(since - TimeDelta::days(1))), ("none", None), ("new", Some(since))] {
        let url = ingest::parse_url(&format!("https://site.example/{path}"));
        intake.take_url(Some(path), &Position::at("sitemap.xml", 1, 1), url, lastmod, &PRINTER).unwrap();
    }
    intake.flush().unwrap();
    let before_since = intake.before_since;
    let urls: Vec<_> = testing::items(&mut run).into_iter().map(|i| i.url).collect();
    assert_eq!(urls, ["https://site.example/new"]);
    assert_eq!((before_since, run.findings.read), (2, 3));
}

#[tokio::test]
async fn an_accepted_url_read_again_is_skipped_and_with_changed_counted_unchanged() {
    let f = Fixture::new("");
    let mut run = f.run(Scripted::answering(Class::Accepted, "ok", 10));
    read_list(&mut run.intake(admit_rule(), None), "https://site.example/a\n");
    run.sender().send_due(&PRINTER).await.unwrap();
    assert_eq!(testing::items(&mut run)[0].state, ItemState::Accepted);

    let counts = |i: &Admitting| {
        let c = i.counts[&EngineKind::IndexNow];
        (c.new, c.changed, c.unchanged)
    };
    let mut again = run.intake(admit_rule(), None);
    read_list(&mut again, "https://site.example/a\n");
    let again = counts(&again);
    let mut changed = run.intake(AdmitRule { changed: true, ..admit_rule() }, None);
    read_list(&mut changed, "https://site.example/a\n");
    let changed = counts(&changed);

    assert_eq!((again, changed), ((0, 0, 0), (0, 0, 1)));
    let reasons: Vec<_> = testing::results(&mut run).into_iter().map(|(_, o, r)| format!("{o} {r}")).collect();
    assert_eq!(reasons, ["accepted ok", "skipped already_accepted", "skipped unchanged"]);
    assert_eq!(testing::items(&mut run)[0].state, ItemState::Accepted, "nothing was queued again");
}

/// Skipped URLs share a result made once only while group, reason and
/// message stay the same: each URL still reads back its own.
#[tokio::test]
async fn a_skipped_result_is_shared_only_by_urls_of_the_same_group_reason_and_message() {
    let f = Fixture::new("");
    let mut run = f.run(Scripted::answering(Class::Accepted, "ok", 10));
    let site = site_group();
    let other = GroupKey::urls("other", EngineKind::IndexNow, "https://api.indexnow.org/indexnow");
    let skipped = [
        ("a", &site, LocalReason::AlreadyAccepted, "accepted 3 h ago"),
        ("b", &site, LocalReason::AlreadyAccepted, "accepted 3 h ago"),
        ("c", &site, LocalReason::AlreadyAccepted, "accepted 5 min ago"),
        ("d", &other, LocalReason::AlreadyAccepted, "accepted 5 min ago"),
        ("e", &site, LocalReason::Unchanged, "accepted 5 min ago"),
        ("f", &site, LocalReason::AlreadyAccepted, "accepted 3 h ago"),
    ];
    let mut intake = run.intake(admit_rule(), None);
    for (n, (path, group, reason, message)) in skipped.iter().enumerate() {
        let item = new_item(group, &format!("https://site.example/{path}"));
        intake.skip(&item, n as i64, *reason, message).unwrap();
    }
    let results = &mut run.findings.results;
    results.flush().unwrap();
    let mut told = Vec::new();
    results
        .each_result_json(at(NOW), |line| {
            let v: serde_json::Value = serde_json::from_slice(&line.concat()).unwrap();
            let url = v["url"].as_str().unwrap().trim_start_matches("https://site.example/").to_string();
            told.push((url, v["property"].as_str().unwrap().to_string(), v["reason"].clone(), v["message"].clone()));
            Ok(())
        })
        .unwrap();
    let expected: Vec<_> = skipped
        .iter()
        .map(|(path, group, reason, message)| {
            (
                path.to_string(),
                group.property.clone(),
                serde_json::json!(reason.to_string()),
                serde_json::json!(message),
            )
        })
        .collect();
    assert_eq!(told, expected);
    assert_eq!(run.findings.results.summary()["skipped"], 6);
}

/// A batch's skipped URLs accepted at different instants each say their
/// own: the text made for one instant is not told of another.
#[tokio::test]
async fn skipped_urls_accepted_at_different_instants_each_say_their_own() {
    let f = Fixture::new("");
    let mut run = f.run(Scripted::answering(Class::Accepted, "ok", 10));
    let site = site_group();
    let now = at(NOW);
    let hours = [3, 3, 5, 5, 3, 7];
    let items: Vec<_> = (0..hours.len()).map(|n| new_item(&site, &format!("https://site.example/{n}"))).collect();
    let admitted: Vec<_> = items
        .iter()
        .zip(hours)
        .enumerate()
        .map(|(n, (item, h))| {
            let accepted_at = now - TimeDelta::hours(h);
            (item, Admission::Skipped { id: n as i64, accepted_at, unchanged: h == 7 })
        })
        .collect();
    run.intake(admit_rule(), None).tell_admitted(&admitted, now).unwrap();
    let results = &mut run.findings.results;
    results.flush().unwrap();
    let mut told = Vec::new();
    results
        .each_result_json(now, |line| {
            let v: serde_json::Value = serde_json::from_slice(&line.concat()).unwrap();
            told.push(v["message"].as_str().unwrap().to_string());
            Ok(())
        })
        .unwrap();
    let expected: Vec<_> = hours.iter().map(|h| skipped_text(TimeDelta::hours(*h), *h == 7).1).collect();
    assert_eq!(told, expected);
    assert_eq!(told.iter().collect::<std::collections::BTreeSet<_>>().len(), 3, "three texts: {told:?}");
}

/// A batch of skipped and waiting URLs is told in the order it was read.
#[tokio::test]
async fn skipped_and_waiting_urls_are_told_in_the_order_read() {
    let f = Fixture::new(", daily_quota = 1");
    let mut run = f.run(Scripted::answering(Class::Accepted, "ok", 10));
    let (a, b, c) = ("https://site.example/a", "https://site.example/b", "https://site.example/c");
    read_list(
        &mut run.intake(admit_rule(), None),
        "https://site.example/a\nhttps://site.example/b\nhttps://site.example/c\n",
    );
    run.sender().send_due(&PRINTER).await.unwrap();
    let states: Vec<_> = testing::items(&mut run).into_iter().map(|i| i.state).collect();
    assert_eq!(states, [ItemState::Accepted, ItemState::Queued, ItemState::Queued], "b and c wait for the budget");
    read_list(
        &mut run.intake(admit_rule(), None),
        "https://site.example/b\nhttps://site.example/a\nhttps://site.example/c\n",
    );
    let results = testing::results(&mut run);
    let told: Vec<_> = results[results.len() - 3..].iter().map(|(url, o, _)| (url.as_str(), o.as_str())).collect();
    assert_eq!(told, [(b, "deferred"), (a, "skipped"), (c, "deferred")]);
}
