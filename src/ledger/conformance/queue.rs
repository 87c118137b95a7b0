//! The queue's part of the story: `queue list|retry|drop` filters, the
//! history dropped items leave (counted, copied), and the counts of
//! history and runs.

use super::*;

/// `queue list|retry|drop` filters, the same on every backend.
pub fn queue_story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let now = t("2026-12-05T09:00:00Z");
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let other = GroupKey::urls("other", EngineKind::Bing, "");
    let mut batch: Vec<NewItem> = (0..6)
        .map(|i| NewItem {
            url: format!("https://q.example/{i}"),
            group: group().into(),
            action: Action::Updated,
            lastmod: None,
            zone: chrono_tz::Tz::UTC,
        })
        .collect();
    batch.extend((0..4).map(|i| NewItem {
        url: format!("https://other.example/{i}"),
        group: other.clone().into(),
        action: Action::Updated,
        lastmod: None,
        zone: chrono_tz::Tz::UTC,
    }));
    ledger.admit(&batch, now, &rule).unwrap();
    let claim = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &[],
            max_items: 3,
            pace: None,
            now: Now::pinned(now),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
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
        accepted_credential: None,
        reservation: claim.reservation.unwrap(),
        answers,
        blocks: vec![],
        reports: vec![],
        windows: vec![],
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
    let now = t("2026-12-07T09:00:00Z");
    let last_sent = answer_before_dropping(ledger, now);
    let (spans_before, before, highest) = history_before_dropping(ledger, now, last_sent);
    let dropped = drop_parked_then_all(ledger, now, &spans_before, &before);
    submit_again_after_dropping(ledger, now, highest, &dropped);
}

/// The group `drop_story` drops from.
fn dropping() -> GroupKey {
    GroupKey::urls("dropping", EngineKind::IndexNow, "t")
}

fn drop_url(i: usize) -> String {
    format!("https://drop.example/{i}")
}

fn drop_batch(range: std::ops::Range<usize>) -> Vec<NewItem> {
    range
        .map(|i| NewItem {
            url: drop_url(i),
            group: dropping().into(),
            action: Action::Updated,
            lastmod: None,
            zone: chrono_tz::Tz::UTC,
        })
        .collect()
}

fn of_dropping() -> ItemFilter {
    ItemFilter { property: Some("dropping".into()), ..Default::default() }
}

/// The URL and id of every item of `dropping`.
fn dropping_ids(ledger: &mut dyn Ledger, now: DateTime<Utc>) -> Vec<(String, i64)> {
    ledger.items(&of_dropping(), now).unwrap().into_iter().map(|i| (i.url, i.id)).collect()
}

/// `dropping`'s attempts per class, over all time.
fn dropping_counts(ledger: &mut dyn Ledger) -> Vec<(Class, u64)> {
    let mut counts: Vec<(Class, u64)> =
        ledger.outcome_counts().unwrap().into_iter().filter(|c| c.0 == dropping()).map(|c| (c.1, c.2)).collect();
    counts.sort_by_key(|c| c.0.as_str());
    counts
}

fn dropping_expected(accepted: u64) -> Vec<(Class, u64)> {
    vec![(Class::Accepted, accepted), (Class::Misconfigured, 1), (Class::Transient, 1)]
}

/// `dropping`'s attempts per class on 2026-12-07.
fn dropping_spans(ledger: &mut dyn Ledger) -> Vec<SpanCount> {
    let bounds = [t("2026-12-07T00:00:00Z"), t("2026-12-08T00:00:00Z")];
    let mut spans: Vec<SpanCount> =
        ledger.attempt_history(&bounds).unwrap().into_iter().filter(|s| s.group == dropping()).collect();
    spans.sort_by_key(|s| s.class.as_str());
    spans
}

/// An attempt as `drop_story` reads it: URL, URLs, class, dropped.
type Shown = (String, u64, Class, bool);

/// `dropping`'s attempts as shown.
fn shown(rows: Vec<AttemptRow>) -> Vec<Shown> {
    rows.into_iter().filter(|a| a.group == dropping()).map(|a| (a.url, a.urls, a.class, a.dropped)).collect()
}

/// One answer of a request at `at`, for `items`, with a 200.
fn answered(items: Vec<i64>, at: DateTime<Utc>, class: Class, next: NextStep) -> Answered {
    let ok = StoredResponse { http_status: Some(200), body: None };
    Answered { items, at, class, reason: some_reason(class), message: "m".into(), response: ok, next, reached: true }
}

fn finish_with(reservation: i64, answers: Vec<Answered>) -> Finish {
    Finish { accepted_credential: None, reservation, answers, blocks: vec![], reports: vec![], windows: vec![] }
}

/// 0 and 1 accepted in one request, 2 parked, 3 waiting (transient); 4
/// never sent (due in a year; the lowest id: the highest is one a request
/// names). The id of 3, the last sent.
fn answer_before_dropping(ledger: &mut impl Ledger, now: DateTime<Utc>) -> i64 {
    let me = Owner::current();
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    ledger.admit(&drop_batch(4..5), now + TimeDelta::days(365), &rule).unwrap();
    ledger.admit(&drop_batch(0..4), now, &rule).unwrap();
    let claim = take(
        ledger,
        &dropping(),
        ClaimSpec {
            windows: &[],
            max_items: 10,
            pace: None,
            now: Now::pinned(now),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    assert_eq!(claim.items.len(), 4);
    let id = |i: usize| claim.items[i].id;
    let answers = vec![
        answered(vec![id(0), id(1)], now, Class::Accepted, NextStep::Accepted),
        answered(vec![id(2)], now, Class::Misconfigured, NextStep::Park { fingerprint: "f".into() }),
        answered(vec![id(3)], now, Class::Transient, NextStep::RetryAt(now + TimeDelta::hours(1))),
    ];
    ledger.finish(&finish_with(claim.reservation.unwrap(), answers)).unwrap();
    id(3)
}

/// Before any drop: the counts, the spans, the attempts (none dropped) and
/// the highest id (the last sent). Returns the spans, attempts and id.
fn history_before_dropping(
    ledger: &mut impl Ledger,
    now: DateTime<Utc>,
    last_sent: i64,
) -> (Vec<SpanCount>, Vec<Shown>, i64) {
    assert_eq!(dropping_counts(ledger), dropping_expected(2));
    let spans_before = dropping_spans(ledger);
    assert_eq!(spans_before.iter().map(|s| s.urls).sum::<u64>(), 4);
    let before = shown(ledger.attempts(None, 100).unwrap());
    assert_eq!(before.len(), 3);
    assert!(before.iter().all(|a| !a.3));
    let highest = dropping_ids(ledger, now).iter().map(|(_, id)| *id).max().unwrap();
    assert_eq!(highest, last_sent);
    (spans_before, before, highest)
}

/// The parked item, then all the others (the highest id among them): the
/// history stays, every attempt said to be dropped. Returns the attempts.
fn drop_parked_then_all(
    ledger: &mut impl Ledger,
    now: DateTime<Utc>,
    spans_before: &[SpanCount],
    before: &[Shown],
) -> Vec<Shown> {
    let parked = ItemFilter { states: vec![StateFilter::Parked], ..of_dropping() };
    assert_eq!(ledger.drop_items(&parked, now).unwrap(), 1);
    assert_eq!(dropping_counts(ledger), dropping_expected(2), "dropping the parked item");
    assert_eq!(ledger.drop_items(&of_dropping(), now).unwrap(), 4);
    assert!(dropping_ids(ledger, now).is_empty());
    assert_eq!(ledger.queue_counts(&dropping(), now).unwrap(), QueueCounts::default());
    assert_eq!(dropping_counts(ledger), dropping_expected(2), "dropping every item");
    assert_eq!(dropping_spans(ledger), spans_before);
    let after = shown(ledger.attempts(None, 100).unwrap());
    let dropped: Vec<_> = before.iter().map(|(u, n, c, _)| (u.clone(), *n, *c, true)).collect();
    assert_eq!(after, dropped, "every attempt, with the URL it was about");
    assert_eq!(shown(ledger.attempts(Some(&drop_url(1)), 10).unwrap()), [(drop_url(1), 2, Class::Accepted, true)]);
    assert_eq!(shown(ledger.attempts(Some(&drop_url(2)), 10).unwrap()), [(drop_url(2), 1, Class::Misconfigured, true)]);
    assert!(ledger.attempts(Some(&drop_url(4)), 10).unwrap().is_empty(), "never sent: no history");
    let last = ledger.last_rejection(&dropping()).unwrap().expect("the last rejection stays");
    assert!(
        last.dropped && [drop_url(2), drop_url(3)].contains(&last.url) && last.class != Class::Accepted,
        "{last:?}"
    );
    dropped
}

/// New items take new ids; a URL submitted again adds to its history.
fn submit_again_after_dropping(ledger: &mut impl Ledger, now: DateTime<Utc>, highest: i64, dropped: &[Shown]) {
    let me = Owner::current();
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    ledger.admit(&drop_batch(2..3), now, &rule).unwrap();
    ledger.admit(&drop_batch(5..6), now, &rule).unwrap();
    let new = dropping_ids(ledger, now);
    assert_eq!(new.len(), 2);
    assert!(new.iter().all(|(_, id)| *id > highest), "no dropped id is given again: {new:?} (highest {highest})");
    let later = now + TimeDelta::hours(2);
    let claim = take(
        ledger,
        &dropping(),
        ClaimSpec {
            windows: &[],
            max_items: 10,
            pace: None,
            now: Now::pinned(later),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    accept_all(ledger, &claim, later);
    assert_eq!(dropping_counts(ledger), dropping_expected(4));
    assert_eq!(
        shown(ledger.attempts(Some(&drop_url(2)), 10).unwrap()),
        [(drop_url(2), 1, Class::Misconfigured, true), (drop_url(2), 2, Class::Accepted, false)]
    );
    assert_eq!(shown(ledger.attempts(None, 100).unwrap())[..3], *dropped);
}

/// Attempts counted per group and class, over all time and per span, one
/// per URL; `submit` runs recorded, the last and the last that succeeded.
pub fn history_story(ledger: &mut impl Ledger) {
    let other = GroupKey::urls("other", EngineKind::Bing, "");
    assert!(ledger.outcome_counts().unwrap().is_empty());
    assert_eq!(ledger.last_run(false).unwrap(), None);
    day_one_accepted_and_parked(ledger);
    day_two_transient_elsewhere(ledger, &other);
    counted_per_group_class_and_span(ledger, &other);
    the_last_run_and_the_last_that_succeeded(ledger);
}

/// Day 1: 3 URLs of the story's group go in one request: 2 accepted, 1 parked.
fn day_one_accepted_and_parked(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let day1 = t("2026-12-03T10:00:00Z");
    ledger.admit(&items(3), day1, &rule).unwrap();
    let claim = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &[],
            max_items: 10,
            pace: None,
            now: Now::pinned(day1),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    let records = vec![
        answered(vec![claim.items[0].id, claim.items[1].id], day1, Class::Accepted, NextStep::Accepted),
        answered(vec![claim.items[2].id], day1, Class::Misconfigured, NextStep::Park { fingerprint: "f".into() }),
    ];
    ledger.finish(&finish_with(claim.reservation.unwrap(), records)).unwrap();
}

/// Day 2, just after midnight: 2 URLs of another group, both transient.
fn day_two_transient_elsewhere(ledger: &mut impl Ledger, other: &GroupKey) {
    let me = Owner::current();
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let day2 = t("2026-12-04T00:00:00Z");
    let batch: Vec<NewItem> = (0..2)
        .map(|i| NewItem {
            url: format!("https://o.example/{i}"),
            group: other.clone().into(),
            action: Action::Updated,
            lastmod: None,
            zone: chrono_tz::Tz::UTC,
        })
        .collect();
    ledger.admit(&batch, day2, &rule).unwrap();
    let claim = take(
        ledger,
        other,
        ClaimSpec {
            windows: &[],
            max_items: 10,
            pace: None,
            now: Now::pinned(day2),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    let ids = claim.items.iter().map(|i| i.id).collect();
    let records = vec![answered(ids, day2, Class::Transient, NextStep::RetryAt(day2 + TimeDelta::hours(1)))];
    ledger.finish(&finish_with(claim.reservation.unwrap(), records)).unwrap();
}

/// The attempts per group and class, over all time, then per day: three
/// days, the last with nothing; attempts outside the bounds are not counted.
fn counted_per_group_class_and_span(ledger: &mut impl Ledger, other: &GroupKey) {
    let mut counts = ledger.outcome_counts().unwrap();
    counts.sort_by(|a, b| (&a.0, a.1.as_str()).cmp(&(&b.0, b.1.as_str())));
    assert_eq!(
        counts,
        vec![(other.clone(), Class::Transient, 2), (group(), Class::Accepted, 2), (group(), Class::Misconfigured, 1),]
    );

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
            span(1, other, Class::Transient, 2),
        ]
    );
    let later = ledger.attempt_history(&bounds[1..]).unwrap();
    assert_eq!(later, vec![span(0, other, Class::Transient, 2)]);
    assert!(ledger.attempt_history(&bounds[..1]).unwrap().is_empty());
}

/// Runs: the last one, and the last that exited 0 (times to the millisecond).
fn the_last_run_and_the_last_that_succeeded(ledger: &mut impl Ledger) {
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

#[test]
fn sqlite_runs_the_queue_commands() {
    let dir = tempfile::tempdir().unwrap();
    queue_story(&mut super::super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap());
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
    drop_story(&mut super::super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap());
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
    let mut from = super::super::SqliteLedger::open_checking_spans(&dir.path().join("from.db")).unwrap();
    story(&mut from);
    drop_story(&mut from);
    let original = dump(&mut from);
    assert!(!original.dropped.is_empty() && original.requests.iter().any(|r| !r.3.is_empty()));
    let mut to = super::super::SqliteLedger::open_checking_spans(&dir.path().join("to.db")).unwrap();
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
    history_story(&mut super::super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_counts_history_and_runs() {
    let mut ledger = test_postgres();
    history_story(&mut ledger);
}
