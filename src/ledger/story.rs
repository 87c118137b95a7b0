//! The ledger's life story, told against the `Ledger` trait so that every
//! backend passes the same test: admit, claim within budget, defer what does
//! not fit, finish, block on a quota answer, reconcile a dead owner's
//! reservation, take an engine's report with a request in flight, give
//! back what the engine did not count, and keep a sitemap's submissions and
//! what the engine reports of it.

use super::copy::{copy, dump};
use super::*;
use crate::model::{
    AcceptedReason, KeyPendingReason, MisconfiguredReason, QuotaReason, ReadFailure, SitemapReading, SourceDocument,
    TransientReason,
};
use crate::model::{NextStep, Period};

fn t(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn group() -> GroupKey {
    GroupKey::urls("site", EngineKind::IndexNow, "https://engine.example/")
}

fn day_rule(limit: Option<u64>, reported: bool) -> RuleWindow {
    RuleWindow {
        rule: if reported { "story:reported:day".into() } else { "story:day".into() },
        period: Period::Day,
        window: "2026-12-03".into(),
        limit,
        reported,
        resets_at: t("2026-12-04T00:00:00Z"),
    }
}

fn items(n: usize) -> Vec<NewItem> {
    (0..n)
        .map(|i| NewItem {
            url: format!("https://site.example/{i}"),
            group: group(),
            action: Action::Updated,
            lastmod: None,
        })
        .collect()
}

/// A reason of `class`, for answers whose reason the story does not read.
pub fn some_reason(class: Class) -> Reason {
    match class {
        Class::Accepted => AcceptedReason::Ok.into(),
        Class::Quota => QuotaReason::RateLimited.into(),
        Class::Transient => TransientReason::ServerError.into(),
        Class::KeyPending => KeyPendingReason::KeyPending.into(),
        Class::Misconfigured => MisconfiguredReason::BadRequest.into(),
    }
}

/// One answer for every item of a claim.
pub fn answer(claim: &Claim, at: DateTime<Utc>, class: Class, response: StoredResponse, next: NextStep) -> Answered {
    Answered {
        items: claim.items.iter().map(|i| i.id).collect(),
        at,
        class,
        reason: some_reason(class),
        message: "m".into(),
        response,
        next,
        reached: true,
    }
}

fn accept_all(ledger: &mut impl Ledger, claim: &Claim, at: DateTime<Utc>) {
    let ok = StoredResponse { http_status: Some(200), body: None };
    ledger
        .finish(&Finish {
            reservation: claim.reservation.unwrap(),
            answers: vec![answer(claim, at, Class::Accepted, ok, NextStep::Accepted)],
            blocks: vec![],
            reports: vec![],
            windows: vec![],
            accepted_credential: None,
        })
        .unwrap();
}

/// Claims, with no report of budget deferrals.
fn take(ledger: &mut impl Ledger, group: &GroupKey, spec: ClaimSpec, owner: &Owner) -> Claim {
    ledger.claim(group, &spec, owner, &mut |_, _, _| {}).unwrap()
}

/// The story every backend must pass.
pub fn story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let now = t("2026-12-03T09:00:00Z");
    let dedupe = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };

    // Admit 5; admitting them again changes nothing.
    let admitted = ledger.admit(&items(5), now, &dedupe).unwrap();
    assert!(admitted.iter().all(|a| matches!(a, Admission::Queued { .. })));
    let again = ledger.admit(&items(5), now, &dedupe).unwrap();
    assert!(again.iter().all(|a| matches!(a, Admission::AlreadyQueued { .. })));
    assert_eq!(ledger.due_groups(now).unwrap(), vec![group()]);

    // A budget of 3: 3 claimed, 2 deferred to the window's end.
    let rules = [day_rule(Some(3), false)];
    let claim = take(
        ledger,
        &group(),
        ClaimSpec { windows: &rules, max_items: 10, pace: None, now: Now::pinned(now), credential: None },
        &me,
    );
    assert_eq!(claim.items.len(), 3);
    assert_eq!(claim.deferred, 2);
    assert_eq!(claim.retry_at, Some(t("2026-12-04T00:00:00Z")));
    assert_eq!(ledger.usage(&rules[0]).unwrap().used, 3);
    assert_eq!(
        ledger.queue_counts(&group(), now).unwrap(),
        QueueCounts { in_flight: 3, waiting: 2, ..Default::default() }
    );
    accept_all(ledger, &claim, now);
    assert_eq!(ledger.queue_counts(&group(), now).unwrap().accepted, 3);

    // Nothing more today; accepted ones are skipped within the dedupe window.
    assert!(take(
        ledger,
        &group(),
        ClaimSpec { windows: &rules, max_items: 10, pace: None, now: Now::pinned(now), credential: None },
        &me
    )
    .items
    .is_empty());
    let again = ledger.admit(&items(1), now, &dedupe).unwrap();
    assert!(matches!(again[0], Admission::Skipped { .. }));

    // Next day: a new window.
    let tomorrow = t("2026-12-04T01:00:00Z");
    let rules2 =
        [RuleWindow { window: "2026-12-04".into(), resets_at: t("2026-12-05T00:00:00Z"), ..day_rule(Some(3), false) }];
    let claim = take(
        ledger,
        &group(),
        ClaimSpec { windows: &rules2, max_items: 10, pace: None, now: Now::pinned(tomorrow), credential: None },
        &me,
    );
    assert_eq!(claim.items.len(), 2);

    // The owner dies with the claim in flight: reconciled, counted, retried.
    let dead = Owner { host: me.host.clone(), pid: u32::MAX - 1, started: 1 };
    ledger
        .finish(&Finish {
            reservation: claim.reservation.unwrap(),
            answers: vec![Answered {
                reason: TransientReason::ServerError.into(),
                message: "503".into(),
                ..answer(&claim, tomorrow, Class::Transient, StoredResponse::default(), NextStep::RetryAt(tomorrow))
            }],
            blocks: vec![],
            reports: vec![],
            windows: vec![],
            accepted_credential: None,
        })
        .unwrap();
    let claim = take(
        ledger,
        &group(),
        ClaimSpec { windows: &rules2, max_items: 10, pace: None, now: Now::pinned(tomorrow), credential: None },
        &dead,
    );
    assert_eq!(claim.items.len(), 1, "one unit left today");
    let reconciled = ledger.reconcile(tomorrow, &me).unwrap();
    assert_eq!(reconciled, Reconciled { reservations: 1, items: 1 });
    assert_eq!(ledger.usage(&rules2[0]).unwrap().used, 3, "the lost request stays counted");
    let counts = ledger.queue_counts(&group(), tomorrow).unwrap();
    assert_eq!((counts.due, counts.waiting, counts.in_flight), (1, 1, 0), "the other waits for the next window");

    // A quota answer blocks the rule whatever its count.
    let open = [RuleWindow { limit: None, ..rules2[0].clone() }];
    let claim = take(
        ledger,
        &group(),
        ClaimSpec { windows: &open, max_items: 1, pace: None, now: Now::pinned(tomorrow), credential: None },
        &me,
    );
    let until = t("2026-12-04T02:00:00Z");
    ledger
        .finish(&Finish {
            reservation: claim.reservation.unwrap(),
            answers: vec![Answered {
                reason: QuotaReason::RateLimited.into(),
                message: "429".into(),
                ..answer(
                    &claim,
                    tomorrow,
                    Class::Quota,
                    StoredResponse { http_status: Some(429), body: Some("slow down".into()) },
                    NextStep::RetryAt(until),
                )
            }],
            blocks: vec![Block { rule: open[0].clone(), until }],
            reports: vec![],
            windows: vec![],
            accepted_credential: None,
        })
        .unwrap();
    let fresh =
        NewItem { url: "https://site.example/fresh".into(), group: group(), action: Action::Updated, lastmod: None };
    ledger.admit(&[fresh], tomorrow, &dedupe).unwrap();
    let blocked = take(
        ledger,
        &group(),
        ClaimSpec { windows: &open, max_items: 10, pace: None, now: Now::pinned(tomorrow), credential: None },
        &me,
    );
    assert!(blocked.items.is_empty());
    assert_eq!(blocked.deferred, 1);
    assert_eq!(blocked.retry_at, Some(until));
    let last = ledger.last_rejection(&group()).unwrap().unwrap();
    assert_eq!((last.class, last.http_status, last.body.as_deref()), (Class::Quota, Some(429), Some("slow down")));

    // An engine report with a request in flight: what is in flight is
    // assumed not yet counted by the engine.
    let reported =
        RuleWindow { window: "2026-12-04".into(), resets_at: t("2026-12-05T00:00:00Z"), ..day_rule(Some(10), true) };
    let later = t("2026-12-04T03:00:00Z");
    ledger.admit(&items(8), later, &AdmitRule { force: true, ..dedupe }).unwrap();
    let report = ledger.record_report(&reported, 5, later).unwrap();
    assert_eq!(report.limit, 5);
    let claim = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &vec![reported.clone()],
            max_items: 2,
            pace: None,
            now: Now::pinned(later),
            credential: None,
        },
        &me,
    );
    assert_eq!(claim.items.len(), 2);
    // Another process reads the engine before these two are counted there.
    let report = ledger.record_report(&reported, 5, later).unwrap();
    assert_eq!(report.limit, 5, "2 used + 5 left - 2 in flight");
    let usage = ledger.usage(&reported).unwrap();
    assert_eq!(usage.remaining(&reported, later), Some(3));

    // A pace of one send every 2 s with a burst of 3: at a horizon of "now",
    // 4 go (slots now, now, now, now) and the rest get their expected slots.
    let paced_group = GroupKey::urls("paced", EngineKind::Google, "");
    let paced: Vec<NewItem> = (0..10)
        .map(|i| NewItem {
            url: format!("https://paced.example/{i}"),
            group: paced_group.clone(),
            action: Action::Deleted,
            lastmod: None,
        })
        .collect();
    ledger.admit(&paced, later, &dedupe).unwrap();
    let pace = Pace { key: "story".into(), interval: TimeDelta::seconds(2), burst: 3, horizon: later };
    let claim = take(
        ledger,
        &paced_group,
        ClaimSpec { windows: &[], max_items: 100, pace: Some(&pace), now: Now::pinned(later), credential: None },
        &me,
    );
    assert_eq!(claim.items.len(), 4);
    assert_eq!(claim.items[0].action, Action::Deleted);
    // The claim's instant is the ledger's (on PostgreSQL the server's clock,
    // shifted to `later`: a moment after it).
    assert!(claim.now - later < TimeDelta::seconds(5), "{}", claim.now);
    assert_eq!(claim.slots, vec![claim.now; 4]);
    let expected: Vec<DateTime<Utc>> = (1..=6).map(|n| claim.now + TimeDelta::seconds(2 * n)).collect();
    assert_eq!(claim.paced.iter().map(|p| p.2).collect::<Vec<_>>(), expected);
    // Another claim at the same moment finds no slot, and defers all six again.
    let claim = take(
        ledger,
        &paced_group,
        ClaimSpec { windows: &[], max_items: 100, pace: Some(&pace), now: Now::pinned(later), credential: None },
        &me,
    );
    assert!(claim.items.is_empty());
    // Fourteen seconds on (all six due, their slots rounded up to the
    // second), with a horizon 10 s ahead, the pace lets them go at their slots.
    let then = later + TimeDelta::seconds(14);
    let pace = Pace { horizon: then + TimeDelta::seconds(10), ..pace };
    let claim = take(
        ledger,
        &paced_group,
        ClaimSpec { windows: &[], max_items: 100, pace: Some(&pace), now: Now::pinned(then), credential: None },
        &me,
    );
    assert_eq!(claim.items.len(), 6);
    assert_eq!(claim.slots[0], claim.now);
    assert_eq!(claim.slots[3], claim.now, "a burst of 4");
    assert_eq!(claim.slots[5], claim.now + TimeDelta::seconds(4));

    // --changed: an accepted URL goes again only if its lastmod is later
    // than its acceptance, whatever the dedupe window.
    let changed = AdmitRule { changed: true, ..dedupe };
    let page = |lastmod: Option<DateTime<Utc>>| NewItem {
        url: "https://site.example/page".into(),
        group: group(),
        action: Action::Updated,
        lastmod,
    };
    let at = t("2026-12-10T09:00:00Z");
    ledger.admit(&[page(None)], at, &changed).unwrap();
    let claim = take(
        ledger,
        &group(),
        ClaimSpec { windows: &[], max_items: 10, pace: None, now: Now::pinned(at), credential: None },
        &me,
    );
    accept_all(ledger, &claim, at);
    let later = at + TimeDelta::hours(1);
    let same = ledger.admit(&[page(Some(at - TimeDelta::days(1)))], later, &changed).unwrap();
    assert!(matches!(same[0], Admission::Skipped { unchanged: true, .. }), "{same:?}");
    let none = ledger.admit(&[page(None)], later, &changed).unwrap();
    assert!(matches!(none[0], Admission::Skipped { unchanged: true, .. }), "no lastmod: only when new");
    let moved = ledger.admit(&[page(Some(at + TimeDelta::minutes(30)))], later, &changed).unwrap();
    assert!(matches!(moved[0], Admission::Queued { fresh: false, .. }), "{moved:?}");
}

/// `queue list|retry|drop` filters, the same on every backend.
pub fn queue_story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let now = t("2026-12-05T09:00:00Z");
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let other = GroupKey::urls("other", EngineKind::Bing, "");
    let mut batch: Vec<NewItem> = (0..6)
        .map(|i| NewItem {
            url: format!("https://q.example/{i}"),
            group: group(),
            action: Action::Updated,
            lastmod: None,
        })
        .collect();
    batch.extend((0..4).map(|i| NewItem {
        url: format!("https://other.example/{i}"),
        group: other.clone(),
        action: Action::Updated,
        lastmod: None,
    }));
    ledger.admit(&batch, now, &rule).unwrap();
    let claim = take(
        ledger,
        &group(),
        ClaimSpec { windows: &[], max_items: 3, pace: None, now: Now::pinned(now), credential: None },
        &me,
    );
    let record = |i: usize, class: Class, next: NextStep| Answered {
        items: vec![claim.items[i].id],
        ..answer(&claim, now, class, StoredResponse { http_status: Some(200), body: None }, next)
    };
    let answers = vec![
        record(0, Class::Misconfigured, NextStep::Park { fingerprint: "f".into() }),
        record(1, Class::Transient, NextStep::RetryAt(now + TimeDelta::hours(1))),
        record(2, Class::Accepted, NextStep::Accepted),
    ];
    let done = Finish {
        reservation: claim.reservation.unwrap(),
        answers,
        blocks: vec![],
        reports: vec![],
        windows: vec![],
        accepted_credential: None,
    };
    ledger.finish(&done).unwrap();

    let list = |ledger: &mut dyn Ledger, filter: ItemFilter| ledger.items(&filter, now).unwrap();
    let state = |s: StateFilter| ItemFilter { states: vec![s], ..Default::default() };
    assert_eq!(list(ledger, state(StateFilter::Parked)).len(), 1);
    assert_eq!(list(ledger, state(StateFilter::Waiting)).len(), 1);
    assert_eq!(list(ledger, state(StateFilter::Accepted)).len(), 1);
    assert_eq!(list(ledger, state(StateFilter::Due)).len(), 3 + 4);
    assert!(list(ledger, state(StateFilter::InFlight)).is_empty());
    let of_other = list(ledger, ItemFilter { property: Some("other".into()), ..Default::default() });
    assert_eq!(of_other.len(), 4);
    assert!(of_other.iter().all(|r| r.group == other));
    let by_engine = list(ledger, ItemFilter { engine: Some(EngineKind::Bing), ..Default::default() });
    assert_eq!(by_engine.len(), 4);
    assert_eq!(list(ledger, ItemFilter { limit: Some(2), ..Default::default() }).len(), 2);
    let one = list(ledger, ItemFilter { url: Some("https://q.example/5".into()), ..Default::default() });
    assert_eq!(one.len(), 1);

    // retry: parked (and waiting) become due; drop: what matches, never in flight.
    assert_eq!(ledger.retry(&state(StateFilter::Parked), now).unwrap(), 1);
    assert!(list(ledger, state(StateFilter::Parked)).is_empty());
    assert_eq!(ledger.retry(&ItemFilter::default(), now).unwrap(), 1, "the waiting one");
    assert_eq!(ledger.drop_items(&state(StateFilter::Accepted), now).unwrap(), 1);
    let url = ItemFilter { url: Some("https://q.example/5".into()), ..Default::default() };
    assert_eq!(ledger.drop_items(&url, now).unwrap(), 1);
    let counts = ledger.queue_counts(&group(), now).unwrap();
    assert_eq!(counts, QueueCounts { due: 4, ..Default::default() }, "{counts:?}");
    assert_eq!(ledger.queue_counts(&other, now).unwrap(), QueueCounts { due: 4, ..Default::default() });
}

/// `queue drop` removes items, not history: the attempts of the items it
/// drops stay counted (over all time and per span), `attempts` lists them
/// with the URL each was about (said to be dropped), with or without
/// `--url`, the last rejection stays, a dropped item's id is given to no
/// other item, and a URL dropped and submitted again adds to its history.
/// Its own group (`dropping`), so that it can follow `story` in a copy.
pub fn drop_story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let now = t("2026-12-07T09:00:00Z");
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let dropping = GroupKey::urls("dropping", EngineKind::IndexNow, "t");
    let url = |i: usize| format!("https://drop.example/{i}");
    let batch = |range: std::ops::Range<usize>| -> Vec<NewItem> {
        range
            .map(|i| NewItem { url: url(i), group: dropping.clone(), action: Action::Updated, lastmod: None })
            .collect()
    };
    let of_group = ItemFilter { property: Some("dropping".into()), ..Default::default() };
    let ids = |ledger: &mut dyn Ledger| -> Vec<(String, i64)> {
        ledger.items(&of_group, now).unwrap().into_iter().map(|i| (i.url, i.id)).collect()
    };
    // 0 and 1 accepted in one request, 2 parked, 3 waiting (transient); 4
    // never sent (due in a year; the lowest id: the highest is one a request names).
    ledger.admit(&batch(4..5), now + TimeDelta::days(365), &rule).unwrap();
    ledger.admit(&batch(0..4), now, &rule).unwrap();
    let claim = take(
        ledger,
        &dropping,
        ClaimSpec { windows: &[], max_items: 10, pace: None, now: Now::pinned(now), credential: None },
        &me,
    );
    assert_eq!(claim.items.len(), 4);
    let id = |i: usize| claim.items[i].id;
    let ok = StoredResponse { http_status: Some(200), body: None };
    let record = |items: Vec<i64>, class, next| Answered {
        items,
        at: now,
        class,
        reason: some_reason(class),
        message: "m".into(),
        response: ok.clone(),
        next,
        reached: true,
    };
    let answers = vec![
        record(vec![id(0), id(1)], Class::Accepted, NextStep::Accepted),
        record(vec![id(2)], Class::Misconfigured, NextStep::Park { fingerprint: "f".into() }),
        record(vec![id(3)], Class::Transient, NextStep::RetryAt(now + TimeDelta::hours(1))),
    ];
    ledger
        .finish(&Finish {
            reservation: claim.reservation.unwrap(),
            answers,
            blocks: vec![],
            windows: vec![],
            reports: vec![],
            accepted_credential: None,
        })
        .unwrap();
    let counts = |ledger: &mut dyn Ledger| -> Vec<(Class, u64)> {
        let mut counts: Vec<(Class, u64)> =
            ledger.outcome_counts().unwrap().into_iter().filter(|c| c.0 == dropping).map(|c| (c.1, c.2)).collect();
        counts.sort_by_key(|c| c.0.as_str());
        counts
    };
    let expected = |accepted| vec![(Class::Accepted, accepted), (Class::Misconfigured, 1), (Class::Transient, 1)];
    assert_eq!(counts(ledger), expected(2));
    let bounds = [t("2026-12-07T00:00:00Z"), t("2026-12-08T00:00:00Z")];
    let spans = |ledger: &mut dyn Ledger| {
        let mut spans: Vec<SpanCount> =
            ledger.attempt_history(&bounds).unwrap().into_iter().filter(|s| s.group == dropping).collect();
        spans.sort_by_key(|s| s.class.as_str());
        spans
    };
    let spans_before = spans(ledger);
    assert_eq!(spans_before.iter().map(|s| s.urls).sum::<u64>(), 4);
    let shown = |rows: Vec<AttemptRow>| -> Vec<(String, u64, Class, bool)> {
        rows.into_iter().filter(|a| a.group == dropping).map(|a| (a.url, a.urls, a.class, a.dropped)).collect()
    };
    let before = shown(ledger.attempts(None, 100).unwrap());
    assert_eq!(before.len(), 3);
    assert!(before.iter().all(|a| !a.3));
    let highest = ids(ledger).iter().map(|(_, id)| *id).max().unwrap();
    assert_eq!(highest, id(3));

    // The parked item, then all the others (the highest id among them).
    let parked = ItemFilter { states: vec![StateFilter::Parked], ..of_group.clone() };
    assert_eq!(ledger.drop_items(&parked, now).unwrap(), 1);
    assert_eq!(counts(ledger), expected(2), "dropping the parked item");
    assert_eq!(ledger.drop_items(&of_group, now).unwrap(), 4);
    assert!(ids(ledger).is_empty());
    assert_eq!(ledger.queue_counts(&dropping, now).unwrap(), QueueCounts::default());
    assert_eq!(counts(ledger), expected(2), "dropping every item");
    assert_eq!(spans(ledger), spans_before);
    let after = shown(ledger.attempts(None, 100).unwrap());
    let dropped: Vec<_> = before.iter().map(|(u, n, c, _)| (u.clone(), *n, *c, true)).collect();
    assert_eq!(after, dropped, "every attempt, with the URL it was about");
    assert_eq!(shown(ledger.attempts(Some(&url(1)), 10).unwrap()), [(url(1), 2, Class::Accepted, true)]);
    assert_eq!(shown(ledger.attempts(Some(&url(2)), 10).unwrap()), [(url(2), 1, Class::Misconfigured, true)]);
    assert!(ledger.attempts(Some(&url(4)), 10).unwrap().is_empty(), "never sent: no history");
    let last = ledger.last_rejection(&dropping).unwrap().expect("the last rejection stays");
    assert!(last.dropped && [url(2), url(3)].contains(&last.url) && last.class != Class::Accepted, "{last:?}");

    // New items take new ids; a URL submitted again adds to its history.
    ledger.admit(&batch(2..3), now, &rule).unwrap();
    ledger.admit(&batch(5..6), now, &rule).unwrap();
    let new = ids(ledger);
    assert_eq!(new.len(), 2);
    assert!(new.iter().all(|(_, id)| *id > highest), "no dropped id is given again: {new:?} (highest {highest})");
    let later = now + TimeDelta::hours(2);
    let claim = take(
        ledger,
        &dropping,
        ClaimSpec { windows: &[], max_items: 10, pace: None, now: Now::pinned(later), credential: None },
        &me,
    );
    accept_all(ledger, &claim, later);
    assert_eq!(counts(ledger), expected(4));
    assert_eq!(
        shown(ledger.attempts(Some(&url(2)), 10).unwrap()),
        [(url(2), 1, Class::Misconfigured, true), (url(2), 2, Class::Accepted, false)]
    );
    assert_eq!(shown(ledger.attempts(None, 100).unwrap())[..3], dropped);
}

/// Attempts counted per group and class, over all time and per span, one
/// per URL; `submit` runs recorded, the last and the last that succeeded.
pub fn history_story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let other = GroupKey::urls("other", EngineKind::Bing, "");
    assert!(ledger.outcome_counts().unwrap().is_empty());
    assert_eq!(ledger.last_run(false).unwrap(), None);

    // Day 1: 3 URLs of the story's group go in one request: 2 accepted, 1 parked.
    let day1 = t("2026-12-03T10:00:00Z");
    ledger.admit(&items(3), day1, &rule).unwrap();
    let claim = take(
        ledger,
        &group(),
        ClaimSpec { windows: &[], max_items: 10, pace: None, now: Now::pinned(day1), credential: None },
        &me,
    );
    let ok = StoredResponse { http_status: Some(200), body: None };
    let record = |items: Vec<i64>, at, class, next| Answered {
        items,
        at,
        class,
        reason: some_reason(class),
        message: "m".into(),
        response: ok.clone(),
        next,
        reached: true,
    };
    let records = vec![
        record(vec![claim.items[0].id, claim.items[1].id], day1, Class::Accepted, NextStep::Accepted),
        record(vec![claim.items[2].id], day1, Class::Misconfigured, NextStep::Park { fingerprint: "f".into() }),
    ];
    let finish = |reservation, answers| Finish {
        reservation,
        answers,
        blocks: vec![],
        reports: vec![],
        windows: vec![],
        accepted_credential: None,
    };
    ledger.finish(&finish(claim.reservation.unwrap(), records)).unwrap();

    // Day 2, just after midnight: 2 URLs of another group, both transient.
    let day2 = t("2026-12-04T00:00:00Z");
    let batch: Vec<NewItem> = (0..2)
        .map(|i| NewItem {
            url: format!("https://o.example/{i}"),
            group: other.clone(),
            action: Action::Updated,
            lastmod: None,
        })
        .collect();
    ledger.admit(&batch, day2, &rule).unwrap();
    let claim = take(
        ledger,
        &other,
        ClaimSpec { windows: &[], max_items: 10, pace: None, now: Now::pinned(day2), credential: None },
        &me,
    );
    let ids = claim.items.iter().map(|i| i.id).collect();
    let records = vec![record(ids, day2, Class::Transient, NextStep::RetryAt(day2 + TimeDelta::hours(1)))];
    ledger.finish(&finish(claim.reservation.unwrap(), records)).unwrap();

    let mut counts = ledger.outcome_counts().unwrap();
    counts.sort_by(|a, b| (&a.0, a.1.as_str()).cmp(&(&b.0, b.1.as_str())));
    assert_eq!(
        counts,
        vec![(other.clone(), Class::Transient, 2), (group(), Class::Accepted, 2), (group(), Class::Misconfigured, 1),]
    );

    // Three days; the last has nothing; attempts outside the bounds are not counted.
    let bounds =
        [t("2026-12-03T00:00:00Z"), t("2026-12-04T00:00:00Z"), t("2026-12-05T00:00:00Z"), t("2026-12-06T00:00:00Z")];
    let mut spans = ledger.attempt_history(&bounds).unwrap();
    spans.sort_by(|a, b| (a.span, &a.group, a.class.as_str()).cmp(&(b.span, &b.group, b.class.as_str())));
    let span = |span, group: &GroupKey, class, urls| SpanCount { group: group.clone(), span, class, urls };
    assert_eq!(
        spans,
        vec![
            span(0, &group(), Class::Accepted, 2),
            span(0, &group(), Class::Misconfigured, 1),
            span(1, &other, Class::Transient, 2),
        ]
    );
    let later = ledger.attempt_history(&bounds[1..]).unwrap();
    assert_eq!(later, vec![span(0, &other, Class::Transient, 2)]);
    assert!(ledger.attempt_history(&bounds[..1]).unwrap().is_empty());

    // Runs: the last one, and the last that exited 0 (times to the millisecond).
    let run = |start: &str, ms: i64, exit_code| RunRecord {
        host: "machine-a".into(),
        started_at: t(start),
        ended_at: t(start) + TimeDelta::milliseconds(ms),
        exit_code,
    };
    ledger.record_run(&run("2026-12-03T10:00:00.250Z", 1_500, 0)).unwrap();
    ledger.record_run(&run("2026-12-04T00:00:00Z", 2_125, 3)).unwrap();
    assert_eq!(ledger.last_run(false).unwrap(), Some(run("2026-12-04T00:00:00Z", 2_125, 3)));
    assert_eq!(ledger.last_run(true).unwrap(), Some(run("2026-12-03T10:00:00.250Z", 1_500, 0)));
}

/// What a finished reservation gives back (`policy::given_back`), the same
/// on every backend, in the transaction that records the answers: units the
/// engine refused for rate or quota go back to the day and month windows
/// (not to a minute's), units never sent to every window, the rest stay
/// charged; a block still holds a window given back to; and an engine's
/// remainder in its answer sets a reported window's limit, with another
/// run's reservation in flight counted against it.
pub fn give_back_story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let now = t("2026-12-07T09:00:00Z");
    let soon = now + TimeDelta::minutes(1);
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let window = |period: Period, key: &str, resets: &str, limit: u64| RuleWindow {
        rule: format!("give:{period}"),
        period,
        window: key.into(),
        limit: Some(limit),
        reported: false,
        resets_at: t(resets),
    };
    let day = window(Period::Day, "2026-12-07", "2026-12-08T00:00:00Z", 10);
    let month = window(Period::Month, "2026-12", "2027-01-01T00:00:00Z", 100);
    let minute = window(Period::Minute, "2026-12-07T09:00", "2026-12-07T09:01:00Z", 20);
    let rules = vec![day.clone(), month.clone(), minute.clone()];
    let used = |ledger: &mut dyn Ledger| rules.iter().map(|w| ledger.usage(w).unwrap().used).collect::<Vec<_>>();
    ledger.admit(&items(10), now, &rule).unwrap();
    let spec =
        |max_items| ClaimSpec { windows: &rules, max_items, pace: None, now: Now::pinned(now), credential: None };
    let claim = take(ledger, &group(), spec(6), &me);
    assert_eq!(claim.items.len(), 6);
    assert_eq!(used(ledger), [6, 6, 6]);
    let ids: Vec<i64> = claim.items.iter().map(|i| i.id).collect();
    let part = |range: std::ops::Range<usize>, class: Class, reached: bool, next: NextStep| Answered {
        items: ids[range].to_vec(),
        reached,
        ..answer(&claim, now, class, StoredResponse::default(), next)
    };
    let answers = vec![
        // Refused for rate or quota: the engine did not count them.
        part(0..3, Class::Quota, true, NextStep::RetryAt(soon)),
        // A timeout: the engine may have it.
        part(3..4, Class::Transient, true, NextStep::RetryAt(soon)),
        // A refused connection: never sent.
        part(4..5, Class::Transient, false, NextStep::RetryAt(soon)),
        part(5..6, Class::Accepted, true, NextStep::Accepted),
    ];
    let finish = |reservation, answers, blocks, reports| Finish {
        reservation,
        answers,
        blocks,
        reports,
        windows: rules.clone(),
        accepted_credential: None,
    };
    ledger.finish(&finish(claim.reservation.unwrap(), answers, vec![], vec![])).unwrap();
    assert_eq!(used(ledger), [2, 2, 5], "day and month: 6 - 3 refused - 1 never sent; the minute: 6 - 1");

    // A refusal that spends the day gives its unit back, and the day stays spent.
    let claim = take(ledger, &group(), spec(1), &me);
    assert_eq!(claim.items.len(), 1);
    let spent = answer(&claim, now, Class::Quota, StoredResponse::default(), NextStep::RetryAt(day.resets_at));
    let block = Block { rule: day.clone(), until: day.resets_at };
    ledger.finish(&finish(claim.reservation.unwrap(), vec![spent], vec![block], vec![])).unwrap();
    assert_eq!(used(ledger), [2, 2, 6]);
    assert_eq!(ledger.usage(&day).unwrap().remaining(&day, now), Some(0), "the block holds");
    let blocked = take(ledger, &group(), spec(10), &me);
    assert_eq!((blocked.items.len(), blocked.deferred, blocked.retry_at), (0, 3, Some(day.resets_at)));

    // An engine's remainder in a refusal (Bing's "Quota remaining for today:
    // 10, Submitted: 32"), with another run's 3 in flight.
    let bing = GroupKey::urls("bing", EngineKind::Bing, "");
    let batch: Vec<NewItem> = (0..35)
        .map(|i| NewItem {
            url: format!("https://bing.example/{i}"),
            group: bing.clone(),
            action: Action::Updated,
            lastmod: None,
        })
        .collect();
    ledger.admit(&batch, now, &rule).unwrap();
    let reported = RuleWindow { rule: "give:reported:day".into(), reported: true, ..day.clone() };
    let only = vec![reported.clone()];
    let spec = |max_items| ClaimSpec { windows: &only, max_items, pace: None, now: Now::pinned(now), credential: None };
    assert_eq!(ledger.record_report(&reported, 100, now).unwrap().limit, 100, "a stale reading: 100 left");
    let refused = take(ledger, &bing, spec(32), &me);
    let elsewhere = Owner { host: "elsewhere.example".into(), pid: 1, started: 1 };
    let other = take(ledger, &bing, spec(3), &elsewhere);
    assert_eq!((refused.items.len(), other.items.len()), (32, 3));
    let remainder = Remainder { window: reported.clone(), remaining: 10, at: now };
    let partial = answer(&refused, now, Class::Quota, StoredResponse::default(), NextStep::RetryAt(now));
    ledger
        .finish(&Finish {
            reservation: refused.reservation.unwrap(),
            answers: vec![partial],
            blocks: vec![],
            reports: vec![remainder],
            windows: only.clone(),
            accepted_credential: None,
        })
        .unwrap();
    let usage = ledger.usage(&reported).unwrap();
    assert_eq!(usage.used, 3, "the 32 refused are given back; the other run's 3 stay counted");
    assert_eq!(usage.reported.map(|r| (r.remaining, r.limit)), Some((10, 10)), "3 counted + 10 left - 3 in flight");
    assert_eq!(usage.remaining(&reported, now), Some(7), "with the 3 in flight, 10 in all");
    let again = take(ledger, &bing, spec(32), &me);
    assert_eq!((again.items.len(), again.deferred), (7, 25));
}

/// A credential's first use (`key_pending`'s clock) is kept by the claims
/// and answers themselves: the first claim that takes items with it
/// records it, later ones read it, a claim that takes nothing records
/// nothing, and an answer the engine accepted forgets it, so that the next
/// use starts a new clock.
pub fn credential_story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let keyed = GroupKey::urls("keyed", EngineKind::IndexNow, "https://engine.example/");
    let idle = GroupKey::urls("idle", EngineKind::IndexNow, "https://engine.example/");
    let batch = |group: &GroupKey, n: usize| -> Vec<NewItem> {
        (0..n)
            .map(|i| NewItem {
                url: format!("https://{}.example/{i}", group.property),
                group: group.clone(),
                action: Action::Updated,
                lastmod: None,
            })
            .collect()
    };
    let claim = |ledger: &mut dyn Budget, group: &GroupKey, at: DateTime<Utc>, credential: Option<&str>| {
        let spec = ClaimSpec { windows: &[], max_items: 1, pace: None, now: Now::pinned(at), credential };
        ledger.claim(group, &spec, &me, &mut |_, _, _| {}).unwrap()
    };
    let finish = |ledger: &mut dyn Budget, claim: &Claim, class: Class, next: NextStep, accepted: Option<&str>| {
        ledger
            .finish(&Finish {
                reservation: claim.reservation.unwrap(),
                answers: vec![answer(claim, claim.now, class, StoredResponse::default(), next)],
                blocks: vec![],
                reports: vec![],
                windows: vec![],
                accepted_credential: accepted.map(str::to_string),
            })
            .unwrap()
    };
    let t0 = t("2026-12-07T09:00:00Z");
    ledger.admit(&batch(&keyed, 4), t0, &rule).unwrap();
    let first = claim(ledger, &keyed, t0, Some("key"));
    assert_eq!(first.key_first_used, Some(t0), "its first use: the claim's instant");
    finish(ledger, &first, Class::KeyPending, NextStep::RetryAt(t0 + TimeDelta::hours(1)), None);
    let t1 = t0 + TimeDelta::minutes(10);
    let second = claim(ledger, &keyed, t1, Some("key"));
    assert_eq!(second.key_first_used, Some(t0), "still pending: the clock runs from the first use");
    finish(ledger, &second, Class::Accepted, NextStep::Accepted, Some("key"));
    let t2 = t1 + TimeDelta::minutes(10);
    let third = claim(ledger, &keyed, t2, Some("key"));
    assert_eq!(third.key_first_used, Some(t2), "accepted since: a new clock");
    finish(ledger, &third, Class::Accepted, NextStep::Accepted, Some("key"));
    // A claim without a credential, or that takes nothing, records none.
    let fourth = claim(ledger, &keyed, t2, None);
    assert_eq!(fourth.key_first_used, None);
    finish(ledger, &fourth, Class::Accepted, NextStep::Accepted, None);
    let t3 = t2 + TimeDelta::minutes(10);
    let empty = claim(ledger, &idle, t3, Some("other"));
    assert!(empty.reservation.is_none() && empty.key_first_used.is_none(), "nothing due: {empty:?}");
    ledger.admit(&batch(&idle, 1), t3, &rule).unwrap();
    let t4 = t3 + TimeDelta::minutes(10);
    assert_eq!(claim(ledger, &idle, t4, Some("other")).key_first_used, Some(t4), "the empty claim recorded no use");
}

/// A paced claim by an owner on another host is trusted until a lease
/// after its last slot, not only after the claim.
pub fn paced_lease_story(ledger: &mut impl Ledger) {
    let now = t("2026-12-06T09:00:00Z");
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let paced = GroupKey::urls("paced", EngineKind::Google, "");
    let batch: Vec<NewItem> = (0..3)
        .map(|i| NewItem {
            url: format!("https://paced.example/{i}"),
            group: paced.clone(),
            action: Action::Updated,
            lastmod: None,
        })
        .collect();
    ledger.admit(&batch, now, &rule).unwrap();
    let pace = Pace {
        key: "story-pace".into(),
        interval: TimeDelta::seconds(60),
        burst: 1,
        horizon: now + TimeDelta::minutes(10),
    };
    let elsewhere = Owner { host: "elsewhere.example".into(), pid: 1, started: 1 };
    let spec = ClaimSpec { windows: &[], max_items: 3, pace: Some(&pace), now: Now::pinned(now), credential: None };
    let claim = take(ledger, &paced, spec, &elsewhere);
    assert_eq!(claim.items.len(), 3);
    let last = *claim.slots.last().unwrap();
    assert!(last >= now + TimeDelta::seconds(60), "{:?}", claim.slots);
    let me = Owner::current();
    let lease = owner::LEASE;
    assert_eq!(ledger.reconcile(now + lease + TimeDelta::seconds(1), &me).unwrap(), Reconciled::default());
    let after = ledger.reconcile(last + lease + TimeDelta::seconds(1), &me).unwrap();
    assert_eq!(after, Reconciled { reservations: 1, items: 3 });
}

/// What unattended runs keep between runs: the parked items per group and
/// reason with their reminders, a fix that unparks one reason only, and
/// the sitemaps read for sources.
pub fn unattended_story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let now = t("2026-12-05T09:00:00Z");
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    ledger.admit(&items(5), now, &rule).unwrap();
    let claim = take(
        ledger,
        &group(),
        ClaimSpec { windows: &[], max_items: 5, pace: None, now: Now::pinned(now), credential: None },
        &me,
    );
    let park = NextStep::Park { fingerprint: "f".into() };
    let record = |ids: &[usize], reason: MisconfiguredReason, at: DateTime<Utc>, next: NextStep| Answered {
        items: ids.iter().map(|&i| claim.items[i].id).collect(),
        reason: reason.into(),
        message: format!("said {reason}"),
        ..answer(&claim, at, Class::Misconfigured, StoredResponse { http_status: Some(403), body: None }, next)
    };
    let answers = vec![
        record(&[0, 1], MisconfiguredReason::KeyFileMissing, now, park.clone()),
        record(&[2], MisconfiguredReason::KeyFileMissing, now + TimeDelta::minutes(1), park.clone()),
        record(&[3], MisconfiguredReason::BadRequest, now, park.clone()),
        Answered {
            items: vec![claim.items[4].id],
            ..answer(&claim, now, Class::Accepted, StoredResponse::default(), NextStep::Accepted)
        },
    ];
    ledger
        .finish(&Finish {
            reservation: claim.reservation.unwrap(),
            answers,
            blocks: vec![],
            reports: vec![],
            windows: vec![],
            accepted_credential: None,
        })
        .unwrap();

    let parked = ledger.parked().unwrap();
    let summary: Vec<_> =
        parked.iter().map(|p| (p.reminder_key(), p.count, p.since, p.message.clone(), p.reminded_at)).collect();
    assert_eq!(
        summary,
        [
            ("bad_request".to_string(), 1, Some(now), Some("said bad_request".to_string()), None),
            ("key_file_missing".into(), 3, Some(now), Some("said key_file_missing".into()), None),
        ]
    );
    assert_eq!(parked[1].url, "https://site.example/2", "the latest answer's URL");
    assert!(parked.iter().all(|p| p.group == group()));

    let later = now + TimeDelta::hours(1);
    ledger.record_reminders(&[(group(), "key_file_missing".into())], later).unwrap();
    ledger.record_reminders(&[(group(), "key_file_missing".into())], later + TimeDelta::hours(1)).unwrap();
    let reminded: Vec<_> = ledger.parked().unwrap().into_iter().map(|p| p.reminded_at).collect();
    assert_eq!(reminded, [None, Some(later + TimeDelta::hours(1))]);

    // A fix found for one reason unparks that reason's items only.
    let fixed = ledger.unpark_fixed(&group(), &[MisconfiguredReason::KeyFileMissing.into()], later).unwrap();
    assert_eq!(fixed, 3);
    let left: Vec<_> = ledger.parked().unwrap().into_iter().map(|p| (p.reminder_key(), p.count)).collect();
    assert_eq!(left, [("bad_request".to_string(), 1)]);
    assert_eq!(
        ledger.queue_counts(&group(), later).unwrap(),
        QueueCounts { due: 3, parked: 1, accepted: 1, ..Default::default() }
    );
    assert_eq!(ledger.unpark_fixed(&group(), &[MisconfiguredReason::KeyFileMissing.into()], later).unwrap(), 0);

    // The sitemaps read for sources: kept per URL, the latest read replacing one before.
    let document = |url: &str, etag: Option<&str>, kind| SourceDocument {
        url: url.into(),
        etag: etag.map(String::from),
        last_modified: Some("Sat, 05 Dec 2026 08:00:00 GMT".into()),
        digest: "d1".into(),
        kind,
        routes: "r".into(),
        fetched_at: now,
        changed_at: now,
    };
    assert!(ledger.source_documents().unwrap().is_empty());
    let urlset = document("https://site.example/sitemap.xml", Some("\"v1\""), crate::model::DocumentKind::Urlset);
    let index = document("https://site.example/index.xml", None, crate::model::DocumentKind::Index);
    ledger.record_source_documents(&[urlset.clone(), index.clone()]).unwrap();
    let newer = SourceDocument { etag: Some("\"v2\"".into()), fetched_at: later, ..urlset };
    ledger.record_source_documents(std::slice::from_ref(&newer)).unwrap();
    assert_eq!(ledger.source_documents().unwrap(), [index, newer]);
}

/// URL inspections: units taken and the unused given back, answers counted
/// per property and class with the last of each kept (an older one never
/// replaces it), and a quota's block on the inspection window.
pub fn inspection_story(ledger: &mut impl Ledger) {
    let at = t("2026-12-03T10:00:00Z");
    let day = RuleWindow { rule: "google-inspect:site:day".into(), limit: Some(3), ..day_rule(Some(3), false) };
    let minute = RuleWindow {
        rule: "google-inspect:site:minute".into(),
        period: Period::Minute,
        window: "2026-12-03T10:00".into(),
        limit: Some(600),
        reported: false,
        resets_at: t("2026-12-03T10:01:00Z"),
    };
    let windows = [day.clone(), minute.clone()];
    assert_eq!(ledger.take_units(&windows, 5, at).unwrap(), 3, "the day allows 3");
    let answer = |class: Class, reason: Reason, at: DateTime<Utc>, status: Option<u16>| InspectionAnswer {
        at,
        class,
        reason,
        message: format!("{class} at {at}"),
        hint: (class == Class::Misconfigured).then(|| "add the service account".to_string()),
        http_status: status,
    };
    let refused = MisconfiguredReason::InspectionNotOwner.into();
    let answers = [
        answer(Class::Accepted, AcceptedReason::AlreadyIndexed.into(), at, Some(200)),
        answer(Class::Misconfigured, refused, at + TimeDelta::seconds(1), Some(403)),
    ];
    // Two asked, one not (an earlier refusal stopped it): one unit back.
    ledger
        .record_inspections(&Inspections {
            property: "site",
            answers: &answers,
            windows: &windows,
            unused: 1,
            blocks: &[],
        })
        .unwrap();
    assert_eq!(ledger.usage(&day).unwrap().used, 2);
    assert_eq!(ledger.usage(&minute).unwrap().used, 2);
    let counts = ledger.inspections().unwrap();
    let seen: Vec<_> = counts.iter().map(|c| (c.property.as_str(), c.class, c.count)).collect();
    assert_eq!(seen, [("site", Class::Accepted, 1), ("site", Class::Misconfigured, 1)]);
    assert_eq!(counts[1].last, answers[1]);

    // A quota: counted, and the minute blocked; an answer older than the
    // kept one counts but does not replace it.
    let later = at + TimeDelta::seconds(30);
    let quota = answer(Class::Quota, QuotaReason::Quota.into(), later, Some(429));
    let older = answer(Class::Misconfigured, MisconfiguredReason::ApiDisabled.into(), at - TimeDelta::hours(1), None);
    let block = Block { rule: minute.clone(), until: later + TimeDelta::seconds(60) };
    let done = [quota.clone(), older];
    ledger
        .record_inspections(&Inspections {
            property: "site",
            answers: &done,
            windows: &windows,
            unused: 0,
            blocks: std::slice::from_ref(&block),
        })
        .unwrap();
    assert_eq!(ledger.usage(&minute).unwrap().blocked_until, Some(block.until));
    assert_eq!(ledger.usage(&minute).unwrap().remaining(&minute, later), Some(0), "no inspection until then");
    assert_eq!(ledger.take_units(&windows, 1, later).unwrap(), 0);
    let counts = ledger.inspections().unwrap();
    let seen: Vec<_> = counts.iter().map(|c| (c.class, c.count, c.last.reason.to_string())).collect();
    assert_eq!(
        seen,
        [
            (Class::Accepted, 1, "already_indexed".to_string()),
            (Class::Misconfigured, 2, "inspection_not_owner".to_string()),
            (Class::Quota, 1, "quota".to_string()),
        ]
    );
    assert_eq!(counts[2].last, quota);
}

/// A sitemap's life: its group (a channel of its own) and its one item —
/// new, due now; accepted, then changed within a day of it, queued again
/// for a day after the submission (the changes meanwhile coalesced), unless
/// forced — the reads of the engine's report, with since when its errors
/// and a failure of one reason hold, and the reminders of its problems.
/// The sitemaps read keep when their body first changed.
pub fn sitemap_story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let now = t("2026-12-03T09:00:00Z");
    let sitemap = "https://site.example/sitemap.xml";
    let group = GroupKey::sitemap("site", EngineKind::Google, sitemap);
    let urls = GroupKey::urls("site", EngineKind::Google, "");
    let rule = AdmitRule {
        dedupe: TimeDelta::hours(24),
        force: false,
        changed: true,
        resend_after: Some(TimeDelta::hours(24)),
    };
    let item = |lastmod: DateTime<Utc>| NewItem {
        url: sitemap.into(),
        group: group.clone(),
        action: Action::Updated,
        lastmod: Some(lastmod),
    };
    assert!(ledger.sitemap_states().unwrap().is_empty(), "no sitemap submitted yet");
    assert_eq!(ledger.admit(&[item(now)], now, &rule).unwrap(), [Admission::Queued { fresh: true }]);
    assert_eq!(ledger.due_groups(now).unwrap(), std::slice::from_ref(&group), "its own group, not the URLs'");
    assert_eq!(ledger.queue_counts(&urls, now).unwrap(), QueueCounts::default());
    let claim = take(
        ledger,
        &group,
        ClaimSpec { windows: &[], max_items: 10, pace: None, now: Now::pinned(now), credential: None },
        &me,
    );
    assert_eq!(claim.items.iter().map(|i| i.url.as_str()).collect::<Vec<_>>(), [sitemap]);
    let submitted = now + TimeDelta::seconds(1);
    accept_all(ledger, &claim, submitted);
    let [state] = ledger.sitemap_states().unwrap().try_into().unwrap();
    assert_eq!(
        (state.group.clone(), state.item, state.submitted_at),
        (group.clone(), ItemState::Accepted, Some(submitted))
    );
    assert_eq!((state.read_at, state.reading.clone(), state.failure.clone()), (None, None, None));

    // Unchanged: nothing; changed an hour later: queued for a day after the
    // submission; changed again meanwhile: still once, then.
    assert!(matches!(
        ledger.admit(&[item(now)], now + TimeDelta::hours(1), &rule).unwrap()[0],
        Admission::Skipped { .. }
    ));
    let changed = now + TimeDelta::hours(1);
    let due = submitted + TimeDelta::hours(24);
    assert_eq!(
        ledger.admit(&[item(changed)], changed, &rule).unwrap(),
        [Admission::Requeued { id: claim.items[0].id, due }]
    );
    let again = changed + TimeDelta::hours(2);
    assert!(matches!(ledger.admit(&[item(again)], again, &rule).unwrap()[0], Admission::AlreadyQueued { .. }));
    assert_eq!(ledger.next_due(&group).unwrap(), Some(due));
    assert_eq!(ledger.queue_counts(&group, again).unwrap(), QueueCounts { waiting: 1, ..Default::default() });
    // Forced, it goes now.
    let forced = ledger.admit(&[item(again)], again, &AdmitRule { force: true, ..rule }).unwrap();
    assert!(matches!(forced[0], Admission::AlreadyQueued { .. }), "queued already: left as it is");

    // The engine's report: read, with errors since the first that said so;
    // a failure keeps the report and counts from the first of its reason.
    let reading = SitemapReading {
        listed: true,
        submitted: Some(submitted),
        downloaded: Some(submitted + TimeDelta::seconds(5)),
        pending: false,
        errors: 2,
        warnings: 1,
        urls: Some(12),
        status: Some("sitemap".into()),
    };
    let r1 = now + TimeDelta::minutes(1);
    ledger.record_sitemap_read(&group, &SitemapRead::Read(reading.clone()), r1).unwrap();
    let r2 = r1 + TimeDelta::hours(6);
    ledger.record_sitemap_read(&group, &SitemapRead::Read(reading.clone()), r2).unwrap();
    let failed = ReadFailure {
        class: Class::Misconfigured,
        reason: MisconfiguredReason::NotPropertyUser.into(),
        message: "refused".into(),
        hint: Some("add the account".into()),
        http_status: Some(403),
    };
    let (f1, f2) = (r2 + TimeDelta::hours(6), r2 + TimeDelta::hours(12));
    ledger.record_sitemap_read(&group, &SitemapRead::Failed(failed.clone()), f1).unwrap();
    ledger.record_sitemap_read(&group, &SitemapRead::Failed(failed.clone()), f2).unwrap();
    let [state] = ledger.sitemap_states().unwrap().try_into().unwrap();
    assert_eq!((state.read_at, state.read_ok_at, state.reading.clone()), (Some(f2), Some(r2), Some(reading.clone())));
    assert_eq!((state.errors_since, state.failure.clone(), state.failure_since), (Some(r1), Some(failed), Some(f1)));
    // A clean report ends both.
    let clean = SitemapReading { errors: 0, ..reading };
    let r3 = f2 + TimeDelta::hours(6);
    ledger.record_sitemap_read(&group, &SitemapRead::Read(clean.clone()), r3).unwrap();
    ledger.record_reminders(&[(group.clone(), "sitemap_errors".into())], r3).unwrap();
    let [state] = ledger.sitemap_states().unwrap().try_into().unwrap();
    assert_eq!(
        (state.reading, state.errors_since, state.failure, state.failure_since),
        (Some(clean), None, None, None)
    );
    assert_eq!(state.reminded, [("sitemap_errors".to_string(), r3)]);

    // What a sitemap read keeps: when its body first changed.
    let document = |digest: &str, at: DateTime<Utc>| SourceDocument {
        url: sitemap.into(),
        etag: None,
        last_modified: None,
        digest: digest.into(),
        kind: crate::model::DocumentKind::Urlset,
        routes: "r".into(),
        fetched_at: at,
        changed_at: at,
    };
    assert_eq!(ledger.record_source_documents(&[document("d1", now)]).unwrap()[0].changed_at, now);
    let later = now + TimeDelta::hours(3);
    assert_eq!(ledger.record_source_documents(&[document("d1", later)]).unwrap()[0].changed_at, now, "the same body");
    assert_eq!(ledger.record_source_documents(&[document("d2", later)]).unwrap()[0].changed_at, later, "a new one");
    assert_eq!(ledger.source_documents().unwrap()[0].changed_at, later);
}

#[test]
fn sqlite_keeps_the_first_use_of_credentials() {
    let dir = tempfile::tempdir().unwrap();
    credential_story(&mut super::SqliteLedger::open(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_keeps_the_first_use_of_credentials() {
    let mut ledger = test_postgres();
    credential_story(&mut ledger);
}

#[test]
fn sqlite_keeps_the_sitemaps_submitted() {
    let dir = tempfile::tempdir().unwrap();
    sitemap_story(&mut super::SqliteLedger::open(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_keeps_the_sitemaps_submitted() {
    let mut ledger = test_postgres();
    sitemap_story(&mut ledger);
}

#[test]
fn sqlite_counts_inspections() {
    let dir = tempfile::tempdir().unwrap();
    inspection_story(&mut super::SqliteLedger::open(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_counts_inspections() {
    let mut ledger = test_postgres();
    inspection_story(&mut ledger);
}

#[test]
fn sqlite_keeps_what_unattended_runs_need() {
    let dir = tempfile::tempdir().unwrap();
    unattended_story(&mut super::SqliteLedger::open(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_keeps_what_unattended_runs_need() {
    let mut ledger = test_postgres();
    unattended_story(&mut ledger);
}

#[test]
fn sqlite_gives_back_what_the_engine_did_not_count() {
    let dir = tempfile::tempdir().unwrap();
    give_back_story(&mut super::SqliteLedger::open(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_gives_back_what_the_engine_did_not_count() {
    let mut ledger = test_postgres();
    give_back_story(&mut ledger);
}

#[test]
fn sqlite_trusts_a_paced_claim_until_its_last_slot() {
    let dir = tempfile::tempdir().unwrap();
    paced_lease_story(&mut super::SqliteLedger::open(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_trusts_a_paced_claim_until_its_last_slot() {
    let mut ledger = test_postgres();
    paced_lease_story(&mut ledger);
}

#[test]
fn sqlite_runs_the_queue_commands() {
    let dir = tempfile::tempdir().unwrap();
    queue_story(&mut super::SqliteLedger::open(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_runs_the_queue_commands() {
    let mut ledger = test_postgres();
    queue_story(&mut ledger);
}

#[test]
fn sqlite_keeps_the_history_of_dropped_items() {
    let dir = tempfile::tempdir().unwrap();
    drop_story(&mut super::SqliteLedger::open(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_keeps_the_history_of_dropped_items() {
    let mut ledger = test_postgres();
    drop_story(&mut ledger);
}

/// A copy carries the dropped items' history: the counts, the attempts
/// with their URLs, and a second copy adds nothing.
#[test]
fn sqlite_copies_the_history_of_dropped_items() {
    let dir = tempfile::tempdir().unwrap();
    let mut from = super::SqliteLedger::open(&dir.path().join("from.db")).unwrap();
    story(&mut from);
    drop_story(&mut from);
    let original = dump(&mut from);
    assert!(!original.dropped.is_empty() && original.requests.iter().any(|r| !r.3.is_empty()));
    let mut to = super::SqliteLedger::open(&dir.path().join("to.db")).unwrap();
    copy(&mut from, &mut to, true).unwrap();
    assert_eq!(dump(&mut to), original);
    assert_eq!(copy(&mut from, &mut to, true).unwrap().attempts, 0, "no attempt is added twice");
    assert_eq!(dump(&mut to), original, "a second copy changes nothing");
    let sorted = |ledger: &mut dyn Ledger| {
        let mut counts = ledger.outcome_counts().unwrap();
        counts.sort_by(|a, b| (&a.0, a.1.as_str()).cmp(&(&b.0, b.1.as_str())));
        counts
    };
    assert_eq!(sorted(&mut to), sorted(&mut from));
    let log = |ledger: &mut dyn Ledger| -> Vec<(String, u64, bool)> {
        ledger.attempts(None, 1000).unwrap().into_iter().map(|a| (a.url, a.urls, a.dropped)).collect()
    };
    assert_eq!(log(&mut to), log(&mut from));
}

#[test]
fn sqlite_counts_history_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    history_story(&mut super::SqliteLedger::open(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_counts_history_and_runs() {
    let mut ledger = test_postgres();
    history_story(&mut ledger);
}

#[test]
fn sqlite_tells_the_story() {
    let dir = tempfile::tempdir().unwrap();
    let mut ledger = super::SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
    story(&mut ledger);
}

/// A PostgreSQL ledger in a new schema of the test server
/// (`$INDEXQ_TEST_PG`, started by `.ci/postgres`); without it the test
/// fails (the tests that call this are ignored with the reason `needs PostgreSQL`).
pub fn test_postgres() -> super::PgLedger {
    let Some(url) = std::env::var("INDEXQ_TEST_PG").ok().filter(|u| !u.is_empty()) else {
        panic!("PostgreSQL tests need INDEXQ_TEST_PG; run `eval \"$(.ci/postgres start)\"`");
    };
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let options = super::PgOptions {
        url,
        schema: format!("unit_{}_{n}_{nanos}", std::process::id()),
        password: std::env::var("INDEXQ_TEST_PG_PASSWORD").ok(),
        timeout: std::time::Duration::from_secs(10),
        lease: super::owner::LEASE,
    };
    super::PgLedger::open(&options).expect("the test PostgreSQL server")
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_tells_the_story() {
    let mut ledger = test_postgres();
    story(&mut ledger);
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn a_copy_between_backends_is_exact_and_idempotent() {
    let mut pg = test_postgres();
    let dir = tempfile::tempdir().unwrap();
    let mut sqlite = super::SqliteLedger::open(&dir.path().join("from.db")).unwrap();
    story(&mut sqlite);
    drop_story(&mut sqlite);
    let original = dump(&mut sqlite);
    assert!(!original.items.is_empty() && !original.requests.is_empty() && !original.usage.is_empty());

    let first = copy(&mut sqlite, &mut pg, true).unwrap();
    assert_eq!(dump(&mut pg), original, "SQLite -> PostgreSQL");
    let again = copy(&mut sqlite, &mut pg, true).unwrap();
    assert_eq!(again.attempts, 0, "no attempt is added twice");
    // Items in flight in the target are left alone.
    let in_flight = original.items.iter().filter(|i| i.1.state == ItemState::InFlight).count() as u64;
    assert_eq!((first.items, again.items), (original.items.len() as u64, original.items.len() as u64 - in_flight));
    assert_eq!(dump(&mut pg), original, "a second copy changes nothing");

    let mut back = super::SqliteLedger::open(&dir.path().join("back.db")).unwrap();
    copy(&mut pg, &mut back, true).unwrap();
    assert_eq!(dump(&mut back), original, "PostgreSQL -> SQLite");
}

/// On PostgreSQL, window decisions use the database server's clock (shifted
/// only by `INDEXQ_NOW`): a machine whose own clock runs two hours ahead
/// neither sees an item due in an hour nor counts in a later window.
#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_decides_with_the_server_clock() {
    let mut ledger = test_postgres();
    let wall = crate::clock::wall_now();
    let ahead = Now { local: wall + TimeDelta::hours(2), shift: TimeDelta::zero() };
    let time = ledger.now(ahead, false).unwrap();
    assert!((time.now - wall).abs() < TimeDelta::seconds(30), "{time:?} vs {wall}");
    let dedupe = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    ledger.admit(&items(1), wall + TimeDelta::hours(1), &dedupe).unwrap();
    let claim = take(
        &mut ledger,
        &group(),
        ClaimSpec { windows: &[], max_items: 10, pace: None, now: ahead, credential: None },
        &Owner::current(),
    );
    assert!(claim.items.is_empty(), "not due yet by the server's clock");
    assert!((claim.now - wall).abs() < TimeDelta::seconds(30), "{} vs {wall}", claim.now);
}

/// On SQLite, this machine's clock decides, never earlier than the latest
/// instant a run recorded.
#[test]
fn sqlite_decides_with_this_machine_clock_floored_by_the_latest_seen() {
    let dir = tempfile::tempdir().unwrap();
    let mut ledger = super::SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
    let at = t("2026-12-04T00:10:00Z");
    assert_eq!(ledger.now(Now::pinned(at), true).unwrap(), LedgerTime { now: at, latest: None, clock: at });
    let back = at - TimeDelta::minutes(15);
    let time = ledger.now(Now::pinned(back), false).unwrap();
    assert_eq!(time, LedgerTime { now: at, latest: Some(at), clock: back });
    let dedupe = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    ledger.admit(&items(1), at, &dedupe).unwrap();
    let claim = take(
        &mut ledger,
        &group(),
        ClaimSpec { windows: &[], max_items: 10, pace: None, now: Now::pinned(back), credential: None },
        &Owner::current(),
    );
    assert_eq!((claim.items.len(), claim.now), (1, at), "due at the floor");
}
