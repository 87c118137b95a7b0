//! The budget's part of the story: what the engine did not count given
//! back, a paced claim trusted until its last slot, and URL inspections.

use super::*;

/// What a finished reservation gives back (`policy::given_back`), the same
/// on every backend, in the transaction that records the answers: units the
/// engine refused for rate or quota go back to the day and month windows
/// (not to a minute's), units never sent to every window, the rest stay
/// charged; a block still holds a window given back to; and an engine's
/// remainder in its answer sets a reported window's limit, with another
/// run's reservation in flight counted against it.
pub fn give_back_story(ledger: &mut impl Ledger) {
    let now = t("2026-12-07T09:00:00Z");
    let rules = give_back_windows();
    refused_and_never_sent_given_back(ledger, &rules, now);
    a_block_holds_a_window_given_back_to(ledger, &rules, now);
    an_engines_remainder_sets_the_limit(ledger, &rules[0], now);
}

/// The story's windows: a day of 10, a month of 100, a minute of 20.
fn give_back_windows() -> [RuleWindow; 3] {
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
    [day, month, minute]
}

/// The units used of each window.
fn used(ledger: &mut dyn Ledger, rules: &[RuleWindow]) -> Vec<u64> {
    rules.iter().map(|w| ledger.usage(w).unwrap().used).collect::<Vec<_>>()
}

fn give_back_spec(windows: &(dyn Windows + Sync), max_items: usize, now: DateTime<Utc>) -> ClaimSpec<'_> {
    ClaimSpec {
        windows,
        max_items,
        pace: None,
        now: Now::pinned(now),
        credential: None,
        order: crate::model::SubmitOrder::Oldest,
    }
}

fn give_back_finish(reservation: i64, answers: Vec<Answered>, blocks: Vec<Block>, rules: &[RuleWindow]) -> Finish {
    Finish { accepted_credential: None, reservation, answers, blocks, reports: vec![], windows: rules.to_vec() }
}

/// 6 claimed of 10: units refused for rate or quota go back to the day and
/// the month, not the minute; units never sent to every window.
fn refused_and_never_sent_given_back(ledger: &mut impl Ledger, rules: &[RuleWindow; 3], now: DateTime<Utc>) {
    let me = Owner::current();
    let soon = now + TimeDelta::minutes(1);
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    ledger.admit(&items(10), now, &rule).unwrap();
    let claim = take(ledger, &group(), give_back_spec(rules, 6, now), &me);
    assert_eq!(claim.items.len(), 6);
    assert_eq!(used(ledger, rules), [6, 6, 6]);
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
    let done = give_back_finish(claim.reservation.unwrap(), answers, vec![], rules);
    assert!(ledger.finish_if_open(&done).unwrap(), "an open reservation is recorded");
    assert_eq!(used(ledger, rules), [2, 2, 5], "day and month: 6 - 3 refused - 1 never sent; the minute: 6 - 1");
    // The same answer again (a commit a lost connection hid): nothing is
    // given back twice.
    assert!(!ledger.finish_if_open(&done).unwrap(), "an ended reservation is not recorded again");
    assert_eq!(used(ledger, rules), [2, 2, 5]);
}

/// A refusal that spends the day gives its unit back, and the day stays spent.
fn a_block_holds_a_window_given_back_to(ledger: &mut impl Ledger, rules: &[RuleWindow; 3], now: DateTime<Utc>) {
    let me = Owner::current();
    let day = &rules[0];
    let claim = take(ledger, &group(), give_back_spec(rules, 1, now), &me);
    assert_eq!(claim.items.len(), 1);
    let spent = answer(&claim, now, Class::Quota, StoredResponse::default(), NextStep::RetryAt(day.resets_at));
    let block = Block { rule: day.clone(), until: day.resets_at };
    ledger.finish(&give_back_finish(claim.reservation.unwrap(), vec![spent], vec![block], rules)).unwrap();
    assert_eq!(used(ledger, rules), [2, 2, 6]);
    assert_eq!(ledger.usage(day).unwrap().remaining(day, now), Some(0), "the block holds");
    let blocked = take(ledger, &group(), give_back_spec(rules, 10, now), &me);
    assert_eq!((blocked.items.len(), blocked.deferred, blocked.retry_at), (0, 3, Some(day.resets_at)));
}

/// An engine's remainder in a refusal (Bing's "Quota remaining for today:
/// 10, Submitted: 32"), with another run's 3 in flight.
fn an_engines_remainder_sets_the_limit(ledger: &mut impl Ledger, day: &RuleWindow, now: DateTime<Utc>) {
    let me = Owner::current();
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let bing = GroupKey::urls("bing", EngineKind::Bing, "");
    let batch: Vec<NewItem> = (0..35)
        .map(|i| NewItem {
            url: format!("https://bing.example/{i}"),
            group: bing.clone().into(),
            action: Action::Updated,
            lastmod: None,
            zone: chrono_tz::Tz::UTC,
        })
        .collect();
    ledger.admit(&batch, now, &rule).unwrap();
    let reported = RuleWindow { rule: "give:reported:day".into(), reported: true, ..day.clone() };
    let only = vec![reported.clone()];
    let spec = |max_items| give_back_spec(&only, max_items, now);
    assert_eq!(ledger.record_report(&reported, 100, now).unwrap().limit, 100, "a stale reading: 100 left");
    let refused = take(ledger, &bing, spec(32), &me);
    let elsewhere = Owner { host: "elsewhere.example".into(), pid: 1, started: 1 };
    let other = take(ledger, &bing, spec(3), &elsewhere);
    assert_eq!((refused.items.len(), other.items.len()), (32, 3));
    let remainder = Remainder { window: reported.clone(), remaining: 10, at: now };
    let partial = answer(&refused, now, Class::Quota, StoredResponse::default(), NextStep::RetryAt(now));
    ledger
        .finish(&Finish {
            accepted_credential: None,
            reservation: refused.reservation.unwrap(),
            answers: vec![partial],
            blocks: vec![],
            reports: vec![remainder],
            windows: only.clone(),
        })
        .unwrap();
    let usage = ledger.usage(&reported).unwrap();
    assert_eq!(usage.used, 3, "the 32 refused are given back; the other run's 3 stay counted");
    assert_eq!(usage.reported.map(|r| (r.remaining, r.limit)), Some((10, 10)), "3 counted + 10 left - 3 in flight");
    assert_eq!(usage.remaining(&reported, now), Some(7), "with the 3 in flight, 10 in all");
    let again = take(ledger, &bing, spec(32), &me);
    assert_eq!((again.items.len(), again.deferred), (7, 25));
}

/// The window of 2026-12-07 (UTC) of a day rule named `rule`.
fn december_7th(rule: &str, limit: u64) -> RuleWindow {
    RuleWindow {
        rule: rule.into(),
        period: Period::Day,
        window: "2026-12-07".into(),
        limit: Some(limit),
        reported: false,
        resets_at: t("2026-12-08T00:00:00Z"),
    }
}

/// A claim whose group's whole queue fits the budget counts its due items
/// no further than a batch (`count_cap`): the same claims as a full count —
/// a batch taken, nothing deferred, the rest due for the next — and once
/// the queue outgrows the budget, what the budget cannot cover is deferred.
pub fn counted_to_a_batch_story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let now = t("2026-12-07T09:00:00Z");
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let day = december_7th("count:day", 10);
    let rules = vec![day.clone()];
    let spec = |max_items| ClaimSpec {
        windows: &rules,
        max_items,
        pace: None,
        now: Now::pinned(now),
        credential: None,
        order: crate::model::SubmitOrder::Oldest,
    };
    ledger.admit(&items(6), now, &rule).unwrap();
    let first = take(ledger, &group(), spec(4), &me);
    assert_eq!((first.items.len(), first.deferred, first.retry_at), (4, 0, None), "6 queued, room for 10");
    let second = take(ledger, &group(), spec(4), &me);
    assert_eq!((second.items.len(), second.deferred, second.retry_at), (2, 0, None), "the other 2 stayed due");
    // 4 left in the day; 6 more queued: over the budget, so counted to it,
    // and what it cannot cover deferred — not the one it covers after the
    // batch, which the next claim takes.
    ledger.admit(&items(12)[6..], now, &rule).unwrap();
    let third = take(ledger, &group(), spec(3), &me);
    assert_eq!((third.items.len(), third.deferred, third.retry_at), (3, 2, Some(day.resets_at)));
    let fourth = take(ledger, &group(), spec(3), &me);
    assert_eq!((fourth.items.len(), fourth.deferred), (1, 0), "the day's last unit");
    assert_eq!(ledger.usage(&day).unwrap().used, 10);
}

/// An answer recorded with the next claim (`finish_and_claim`), in one
/// transaction: the answer first — two items accepted, the unit of one the
/// engine never got given back and the item due again at once — then the
/// claim, which sees it: a new reservation of that item and the two the
/// first claim left due (the budget covered them), the day's 5 units all
/// counted, the sixth item waiting for the next day.
pub fn answered_with_the_next_claim_story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let now = t("2026-12-07T09:00:00Z");
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let day = december_7th("next:day", 5);
    let rules = vec![day.clone()];
    let spec = ClaimSpec {
        windows: &rules,
        max_items: 3,
        pace: None,
        now: Now::pinned(now),
        credential: None,
        order: crate::model::SubmitOrder::Oldest,
    };
    ledger.admit(&items(6), now, &rule).unwrap();
    let first = take(ledger, &group(), spec, &me);
    let ids: Vec<i64> = first.items.iter().map(|i| i.id).collect();
    let ok = StoredResponse { http_status: Some(200), body: None };
    let accepted =
        Answered { items: ids[..2].to_vec(), ..answer(&first, now, Class::Accepted, ok, NextStep::Accepted) };
    let never_sent = StoredResponse { http_status: None, body: None };
    let unsent = Answered {
        items: vec![ids[2]],
        reached: false,
        ..answer(&first, now, Class::Transient, never_sent, NextStep::RetryAt(now))
    };
    let done = Finish {
        reservation: first.reservation.unwrap(),
        answers: vec![accepted, unsent],
        blocks: vec![],
        reports: vec![],
        windows: rules.clone(),
        accepted_credential: None,
    };
    let second = ledger.finish_and_claim(&done, &group(), &spec, &me, &mut |_, _, _| {}).unwrap();
    assert!(second.reservation.is_some());
    let again: Vec<i64> = second.items.iter().map(|i| i.id).collect();
    assert_eq!(again.len(), 3, "room for 3: 5 a day, 3 counted, 1 given back: {again:?}");
    assert!(again.contains(&ids[2]) && !again.contains(&ids[0]) && !again.contains(&ids[1]), "{again:?}");
    assert_eq!(ledger.usage(&day).unwrap().used, 5);
    assert_eq!(
        ledger.queue_counts(&group(), now).unwrap(),
        QueueCounts { waiting: 1, in_flight: 3, accepted: 2, ..Default::default() }
    );
}

/// A budget of 1 over 8 due items: 7 deferred to the window's end, each
/// told once — more than one statement defers in a test build
/// (`policy::claim::DEFERRED_A_STATEMENT`: 3), so in several.
pub fn deferred_at_large_story(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let now = t("2026-12-07T09:00:00Z");
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    let day = december_7th("defer:day", 1);
    let rules = vec![day.clone()];
    let spec = ClaimSpec {
        windows: &rules,
        max_items: 10,
        pace: None,
        now: Now::pinned(now),
        credential: None,
        order: crate::model::SubmitOrder::Oldest,
    };
    ledger.admit(&items(8), now, &rule).unwrap();
    let mut told = Vec::new();
    let claim = ledger.claim(&group(), &spec, &me, &mut |id, _, at| told.push((id, at))).unwrap();
    assert_eq!((claim.items.len(), claim.deferred, claim.retry_at), (1, 7, Some(day.resets_at)));
    let mut ids: Vec<i64> = told.iter().map(|(id, _)| *id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 7, "each deferred item told once: {told:?}");
    assert!(!ids.contains(&claim.items[0].id));
    assert!(told.iter().all(|(_, at)| *at == day.resets_at));
    assert_eq!(
        ledger.queue_counts(&group(), now).unwrap(),
        QueueCounts { in_flight: 1, waiting: 7, ..Default::default() }
    );
    assert_eq!(ledger.next_due(&group()).unwrap(), Some(day.resets_at));
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
            group: paced.clone().into(),
            action: Action::Updated,
            lastmod: None,
            zone: chrono_tz::Tz::UTC,
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
    let spec = ClaimSpec {
        windows: &[],
        max_items: 3,
        pace: Some(&pace),
        now: Now::pinned(now),
        credential: None,
        order: crate::model::SubmitOrder::Oldest,
    };
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

#[test]
fn sqlite_gives_back_what_the_engine_did_not_count() {
    let dir = tempfile::tempdir().unwrap();
    give_back_story(&mut super::super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap());
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
    paced_lease_story(&mut super::super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_trusts_a_paced_claim_until_its_last_slot() {
    let mut ledger = test_postgres();
    paced_lease_story(&mut ledger);
}

#[test]
fn sqlite_counts_inspections() {
    let dir = tempfile::tempdir().unwrap();
    inspection_story(&mut super::super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_counts_inspections() {
    let mut ledger = test_postgres();
    inspection_story(&mut ledger);
}

#[test]
fn sqlite_counts_due_items_to_a_batch_when_the_queue_fits_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    counted_to_a_batch_story(
        &mut super::super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap(),
    );
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_counts_due_items_to_a_batch_when_the_queue_fits_the_budget() {
    let mut ledger = test_postgres();
    counted_to_a_batch_story(&mut ledger);
}

#[test]
fn sqlite_records_an_answer_with_the_next_claim() {
    let dir = tempfile::tempdir().unwrap();
    answered_with_the_next_claim_story(
        &mut super::super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap(),
    );
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_records_an_answer_with_the_next_claim() {
    let mut ledger = test_postgres();
    answered_with_the_next_claim_story(&mut ledger);
}

#[test]
fn sqlite_defers_every_item_past_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    deferred_at_large_story(
        &mut super::super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap(),
    );
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_defers_every_item_past_the_budget_in_several_statements() {
    let mut ledger = test_postgres();
    deferred_at_large_story(&mut ledger);
}
