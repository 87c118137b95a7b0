//! The claim's order (`[submit] order`), the same on every backend: an
//! engine with a daily quota takes retries first by due time, then the
//! newest pages, and the archive in the budget left, with a claim that is
//! not one run of consecutive ids held and answered as any other; IndexNow
//! keeps the order by due time.

use super::*;
use crate::model::SubmitOrder;

fn day(n: u32) -> RuleWindow {
    RuleWindow {
        rule: "order:day".into(),
        period: Period::Day,
        window: format!("2026-12-0{n}"),
        limit: Some(3),
        reported: false,
        resets_at: t(&format!("2026-12-0{}T00:00:00Z", n + 1)),
    }
}

fn page(group: &GroupKey, path: &str, lastmod: Option<&str>) -> NewItem {
    NewItem {
        url: format!("https://blog.example/{path}"),
        group: group.clone().into(),
        action: Action::Updated,
        lastmod: lastmod.map(t),
        zone: chrono_tz::Tz::UTC,
    }
}

fn paths(claim: &Claim) -> Vec<String> {
    claim.items.iter().map(|i| i.url.trim_start_matches("https://blog.example/").to_string()).collect()
}

fn spec(rules: &[RuleWindow; 1], max_items: usize, now: DateTime<Utc>) -> ClaimSpec<'_> {
    ClaimSpec {
        windows: rules,
        max_items,
        pace: None,
        now: Now::pinned(now),
        credential: None,
        order: SubmitOrder::Newest,
    }
}

fn finish(ledger: &mut impl Ledger, claim: &Claim, answers: Vec<Answered>) {
    let done = Finish {
        reservation: claim.reservation.unwrap(),
        answers,
        blocks: vec![],
        reports: vec![],
        windows: vec![],
        accepted_credential: None,
    };
    ledger.finish(&done).unwrap();
}

pub fn order_story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let google = GroupKey::urls("blog", EngineKind::Google, "");
    let ok = StoredResponse { http_status: Some(200), body: None };

    // Day 1: an archive of 8 posts (ids in the order read, oldest first), a
    // budget of 3 in batches of 2: the newest two, then the third newest;
    // the other 5 deferred to the window's end (more than one statement).
    let day1 = t("2026-12-01T09:00:00Z");
    let archive: Vec<NewItem> =
        (0..8).map(|i| page(&google, &format!("a{i}"), Some(&format!("2020-01-0{}T00:00:00Z", i + 1)))).collect();
    ledger.admit(&archive, day1, &dedupe_day()).unwrap();
    let rules = [day(1)];
    let mut told = Vec::new();
    let claim = ledger.claim(&google, &spec(&rules, 2, day1), &me, &mut |id, _, _| told.push(id)).unwrap();
    assert_eq!(paths(&claim), ["a7", "a6"]);
    assert_eq!((claim.deferred, told.len()), (5, 5));
    accept_all(ledger, &claim, day1);
    let claim = take(ledger, &google, spec(&rules, 2, day1), &me);
    assert_eq!(paths(&claim), ["a5"]);
    accept_all(ledger, &claim, day1);

    // Day 2: two new pages (one without a lastmod: the time it was queued)
    // and an archived page changed this morning go before the rest of the
    // archive — one claim of ids 1, 9 and 10, not one run.
    let day2 = t("2026-12-02T09:00:00Z");
    let new = [
        page(&google, "n0", Some("2026-12-02T08:00:00Z")),
        page(&google, "n1", None),
        page(&google, "a0", Some("2026-12-02T07:00:00Z")),
    ];
    ledger.admit(&new, day2, &dedupe_day()).unwrap();
    let rules = [day(2)];
    let claim = take(ledger, &google, spec(&rules, 10, day2), &me);
    assert_eq!(paths(&claim), ["n1", "n0", "a0"]);
    assert_eq!((claim.deferred, claim.retry_at), (4, Some(t("2026-12-03T00:00:00Z"))));
    let counts = ledger.queue_counts(&google, day2).unwrap();
    assert_eq!((counts.in_flight, counts.waiting, counts.due), (3, 4, 0), "{counts:?}");
    let in_flight = ItemFilter { states: vec![StateFilter::InFlight], ..Default::default() };
    let mut held: Vec<String> = ledger.items(&in_flight, day2).unwrap().into_iter().map(|r| r.url).collect();
    held.sort();
    assert_eq!(held, ["https://blog.example/a0", "https://blog.example/n0", "https://blog.example/n1"]);
    // a0 answered transient (due again when the next window opens), the
    // new ones accepted.
    let retry = Answered {
        items: vec![claim.items[2].id],
        ..answer(&claim, day2, Class::Transient, ok.clone(), NextStep::RetryAt(t("2026-12-03T00:00:00Z")))
    };
    let accepted = Answered {
        items: vec![claim.items[0].id, claim.items[1].id],
        ..answer(&claim, day2, Class::Accepted, ok.clone(), NextStep::Accepted)
    };
    finish(ledger, &claim, vec![retry, accepted]);
    let counts = ledger.queue_counts(&google, day2).unwrap();
    assert_eq!((counts.in_flight, counts.waiting, counts.accepted), (0, 5, 5), "{counts:?}");

    // Day 3: the retry keeps its place by due time, ahead of the day's new
    // page, which goes before the archive.
    let day3 = t("2026-12-03T09:00:00Z");
    ledger.admit(&[page(&google, "n2", Some("2026-12-03T08:00:00Z"))], day3, &dedupe_day()).unwrap();
    let rules = [day(3)];
    let claim = take(ledger, &google, spec(&rules, 10, day3), &me);
    assert_eq!(paths(&claim), ["a0", "n2", "a4"]);
    assert_eq!(claim.deferred, 3);
    accept_all(ledger, &claim, day3);

    // IndexNow has no daily quota: by due time, then as read, whatever
    // `order` says.
    let indexnow = GroupKey::urls("blog", EngineKind::IndexNow, "https://engine.example/");
    let pages: Vec<NewItem> =
        (0..3).map(|i| page(&indexnow, &format!("i{i}"), Some(&format!("2020-02-0{}T00:00:00Z", i + 1)))).collect();
    ledger.admit(&pages, day3, &dedupe_day()).unwrap();
    let rules = [RuleWindow { rule: "order:indexnow".into(), ..day(3) }];
    let claim = take(ledger, &indexnow, spec(&rules, 2, day3), &me);
    assert_eq!(paths(&claim), ["i0", "i1"]);
    accept_all(ledger, &claim, day3);

    // A baseline (`submit --baseline`): what a read left queued is recorded
    // as accepted, with no request and no unit; read again, it is unchanged.
    let changed = AdmitRule { changed: true, ..dedupe_day() };
    let known =
        [page(&google, "b0", Some("2019-05-01T00:00:00Z")), page(&google, "b1", None), page(&google, "a1", None)];
    let before = ledger.queue_counts(&google, day3).unwrap();
    ledger.admit(&known, day3, &changed).unwrap();
    assert_eq!(ledger.announce(&known, day3).unwrap(), 3, "b0, b1 and the waiting a1");
    let after = ledger.queue_counts(&google, day3).unwrap();
    assert_eq!((after.waiting, after.accepted), (before.waiting - 1, before.accepted + 3), "{after:?}");
    assert_eq!(ledger.usage(&day(3)).unwrap().used, 3, "no unit spent");
    let again = ledger.admit(&known, day3 + TimeDelta::days(2), &changed).unwrap();
    assert!(again.iter().all(|a| matches!(a, Admission::Skipped { unchanged: true, .. })), "{again:?}");
    assert_eq!(ledger.announce(&known, day3).unwrap(), 0);
}

#[test]
fn sqlite_keeps_the_order() {
    let dir = tempfile::tempdir().unwrap();
    order_story(&mut super::super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_keeps_the_order() {
    order_story(&mut test_postgres());
}
