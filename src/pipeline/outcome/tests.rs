use super::*;
use crate::budget_rules::{self, Rule, Scope};
use crate::classify::RetryAfter;
use crate::engines::{Answer, Batch, Sent};
use crate::ledger::{Budget, ClaimSpec, Intake, Now, Owner};
use crate::model::{Action, ItemState, MisconfiguredReason, Period};
use crate::output::results::ResultEntry;
use crate::pipeline::findings::answer_row;
use crate::pipeline::findings::{budget_entry, paced_entry};
use crate::pipeline::next_steps::resends_now;
use crate::pipeline::testing::{
    self, answer, at, blocked, quota, rule, site_group, three_rules, Fixture, Scripted, Trial, NOW,
};
use chrono::TimeDelta;

fn item(id: i64, last_class: Option<Class>, streak: u32) -> ClaimedItem {
    ClaimedItem {
        id,
        url: format!("https://site.example/{id}"),
        action: Action::Updated,
        attempts: streak,
        last_class,
        streak,
        streak_started_at: last_class.map(|_| at(NOW) - TimeDelta::minutes(10)),
    }
}

/// What the tests read of a request settled: the ledger's records, and
/// each decision's report row with each item's (`result_of`).
struct Case {
    answered: Vec<Answered>,
    results: Vec<ResultEntry>,
    result_of: Vec<usize>,
}

/// `sent` answering `items` of `g` under `rules` at `NOW`, settled as the
/// sender does for a user in Paris; `quota_tz`: the timezone a quota retry
/// without `Retry-After` is told in.
fn settle_sent(
    rules: &[Rule],
    g: &GroupKey,
    items: &[ClaimedItem],
    sent: &Sent,
    quota_tz: Option<Tz>,
    jitter: impl FnMut() -> f64,
) -> Case {
    let steps = testing::next_steps_after(g, rules, items, sent, jitter);
    let context = Settle { at: at(NOW), user_tz: chrono_tz::Europe::Paris, quota_tz, fingerprint: "fp" };
    let settled = settle(items, sent, &steps, &context);
    let mut results = Vec::new();
    for (item, &decided) in items.iter().zip(&steps.decision_of) {
        if decided == results.len() {
            results.push(answer_row(&item.url, g, item.attempts + 1, &settled.results[decided], at(NOW)));
        }
    }
    Case { answered: settled.answered, results, result_of: steps.decision_of }
}

/// What the ledger records of `answer` to `item` with `decision`, and the
/// item's report row.
fn item_result(
    g: &GroupKey,
    item: &ClaimedItem,
    answer: &Answer,
    decision: Decision,
    now: DateTime<Utc>,
    retry_tz: Tz,
    fingerprint: &str,
) -> (Recorded, ResultEntry) {
    let (recorded, result) = answer_result(answer, &decision, retry_tz, fingerprint);
    (recorded, answer_row(&item.url, g, item.attempts + 1, &result, now))
}

#[test]
fn a_deferral_is_a_deferred_result_with_its_retry() {
    let now = at(NOW);
    let g = site_group();
    let e = budget_entry("https://site.example/a", &g, at("2026-03-02T16:00:00Z"), chrono_tz::Asia::Shanghai, now);
    assert_eq!((e.outcome, e.reason.to_string().as_str()), (Outcome::Deferred, "budget"));
    assert_eq!(e.message, "the IndexNow budget for site is spent until its window reopens");
    assert_eq!((e.retry_at.as_deref(), e.retry_after_secs), (Some("2026-03-03T00:00:00+08:00"), Some(6 * 3600)));
    assert_eq!(e.endpoint.as_deref(), Some(g.target.as_str()));
    let e = paced_entry("https://site.example/a", &g, now + TimeDelta::seconds(30), Tz::UTC, now);
    assert_eq!((e.outcome, e.reason.to_string().as_str()), (Outcome::Deferred, "paced"));
    assert_eq!(e.message, "within budget, but IndexNow requests are paced to the configured rate; it goes at its slot");
    assert_eq!((e.retry_at.as_deref(), e.retry_after_secs), (Some("2026-03-02T10:00:30+00:00"), Some(30)));
}

/// The ledger gives back what the answers say was not counted (its
/// policy decides it from each record's class and whether its request
/// left): each record says whether its request left.
#[test]
fn each_record_says_whether_its_request_left_for_the_ledger_to_give_back() {
    let g = site_group();
    let mut unreached = answer(Class::Transient, "connect");
    unreached.reached = false;
    let sent = Sent {
        answers: vec![answer(Class::Accepted, "ok"), unreached, answer(Class::Quota, "rate_limited")],
        per_url: vec![0, 1, 1, 0, 1, 2],
    };
    let items: Vec<ClaimedItem> = (1..=6).map(|id| item(id, None, 0)).collect();
    let settled = settle_sent(&three_rules(), &g, &items, &sent, None, || 0.5);
    let reached: Vec<_> = settled.answered.iter().map(|a| (a.items.clone(), a.reached)).collect();
    assert_eq!(reached, [(vec![1, 4], true), (vec![2, 3, 5], false), (vec![6], true)]);
    // Through a ledger: the six claimed against every window, then finished.
    let (now, windows) = (at(NOW), budget_rules::windows(&three_rules(), at(NOW)));
    let mut ledger = crate::ledger::SqliteLedger::in_memory().unwrap();
    let batch: Vec<_> = items.iter().map(|i| testing::new_item(&g, &i.url)).collect();
    ledger.admit(&batch, now, &testing::admit_rule()).unwrap();
    let spec = ClaimSpec {
        windows: &windows,
        max_items: 6,
        pace: None,
        now: Now::pinned(now),
        credential: None,
        order: crate::model::SubmitOrder::Oldest,
    };
    let claim = ledger.claim(&g, &spec, &Owner::current(), &mut |_, _, _| {}).unwrap();
    assert_eq!(claim.items.iter().map(|i| i.id).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
    let reservation = claim.reservation.unwrap();
    let answers = settled.answered;
    ledger
        .finish(&Finish {
            reservation,
            answers,
            blocks: vec![],
            reports: vec![],
            windows: windows.clone(),
            accepted_credential: None,
        })
        .unwrap();
    let used: Vec<u64> = windows.iter().map(|w| ledger.usage(w).unwrap().used).collect();
    assert_eq!(used, [2, 2, 2], "3 never sent and 1 refused for quota given back, to each day and month");
}

/// Bing's partial remainder: due again at once when its request carried
/// more than what is left, nothing blocked, and the remainder recorded
/// for the reported window of its period; a spent window (0 left) is
/// blocked as any quota answer; an unexplained remainder waits.
#[test]
fn a_partial_remainder_its_request_explains_goes_again_at_once_within_it() {
    let g = site_group();
    let now = at(NOW);
    let mut rules = three_rules();
    rules.push(Rule { reported: true, ..rule("reported", Scope::Property, Period::Day, Tz::UTC, Some(100)) });
    let windows = budget_rules::windows(&rules, now);
    let remainder = |left: u64, urls: usize| {
        let mut a = answer(Class::Quota, "partial_quota");
        a.verdict.reported = Some((Period::Day, left));
        Sent::whole(a, urls)
    };
    let partial = remainder(10, 32);
    assert!(resends_now(&partial, 0, &windows));
    assert!(!resends_now(&remainder(10, 10), 0, &windows), "a request no larger than the remainder");
    assert!(!resends_now(&remainder(0, 32), 0, &windows), "nothing left: the window is spent");
    assert!(!resends_now(&partial, 0, &windows[..3]), "no reported window bounds the next claim");
    let mut told = remainder(10, 32);
    told.answers[0].verdict.retry_after = Some(RetryAfter::Seconds(60));
    assert!(!resends_now(&told, 0, &windows), "the engine said when");
    let no_items = || panic!("no items, no jitter");
    assert!(testing::next_steps_after(&g, &rules, &[], &partial, no_items).blocks.is_empty());
    let spent = remainder(0, 32);
    assert_eq!(blocked(&testing::next_steps_after(&g, &rules, &[], &spent, no_items).blocks)[0].0, "day");
    let reports = remainders(&partial, &windows, now);
    let reports: Vec<_> = reports.iter().map(|r| (r.window.rule.as_str(), r.remaining, r.at)).collect();
    assert_eq!(reports, [("reported", 10, now)], "only the reported window of the day");
    assert!(remainders(&Sent::whole(answer(Class::Quota, "rate_limited"), 1), &windows, now).is_empty());
    // The items are due again now, without the scheduler's wait.
    let items: Vec<ClaimedItem> = (1..=3).map(|id| item(id, None, 0)).collect();
    let three = remainder(2, 3);
    let settled = settle_sent(&rules, &g, &items, &three, None, || panic!("no jitter"));
    assert_eq!(settled.answered[0].next, NextStep::RetryAt(now));
    assert_eq!(settled.results[settled.result_of[0]].reason.to_string(), "partial_quota");
}

#[test]
fn a_request_the_stop_cut_is_recorded_as_interrupted_past_the_scheduler() {
    let g = site_group();
    let items = [item(1, None, 0), item(2, Some(Class::Transient), 2), item(3, None, 0)];
    let sent = Sent { answers: vec![Answer::unanswered_on_stop(), Answer::not_sent_on_stop()], per_url: vec![0, 0, 1] };
    let settled = settle_sent(&three_rules(), &g, &items, &sent, None, || panic!("no jitter: no backoff"));
    let lease_end = at(NOW) + TimeDelta::minutes(10);
    let records: Vec<_> =
        settled.answered.iter().map(|a| (a.items.clone(), a.class, a.reason.to_string(), a.next.clone())).collect();
    assert_eq!(
        records,
        [
            (vec![1, 2], Class::Transient, "interrupted".into(), NextStep::RetryAt(lease_end)),
            (vec![3], Class::Transient, "interrupted".into(), NextStep::RetryAt(at(NOW))),
        ]
    );
    let e = &settled.results[settled.result_of[0]];
    assert_eq!((e.outcome, e.reason.to_string().as_str(), e.http_status), (Outcome::Transient, "interrupted", None));
    assert_eq!((e.retry_at.as_deref(), e.retry_after_secs), (Some("2026-03-02T11:10:00+01:00"), Some(600)));
    assert!(e.message.contains("stop_grace"), "{}", e.message);
    let reached: Vec<bool> = settled.answered.iter().map(|a| a.reached).collect();
    assert_eq!(reached, [true, false], "only the URL never sent gives its budget back");
}

#[test]
fn items_with_one_answer_and_history_share_one_decision_and_one_record() {
    let g = site_group();
    let items = [item(1, None, 0), item(2, Some(Class::Transient), 2), item(3, None, 0)];
    let sent = Sent::whole(answer(Class::Accepted, "ok"), 3);
    let mut draws = 0;
    let settled = settle_sent(&three_rules(), &g, &items, &sent, None, || {
        draws += 1;
        0.5
    });
    assert_eq!(draws, 2, "one jitter per answer and history");
    let [a] = settled.answered.as_slice() else { panic!("one record: {:?}", settled.answered) };
    assert_eq!(
        (a.items.as_slice(), a.class, &a.next, a.at),
        (&[1, 2, 3][..], Class::Accepted, &NextStep::Accepted, at(NOW))
    );
    assert_eq!((a.reason.to_string().as_str(), a.response.http_status), ("ok", Some(200)));
    assert_eq!(settled.result_of, [0, 1, 0], "one result per answer and history, in the items' order");
    assert!(settled.results.iter().all(|e| e.outcome == Outcome::Accepted && e.attempts > 0));
}

#[test]
fn each_answer_and_next_step_is_its_own_record() {
    let g = site_group();
    // Per URL: the first and third accepted, the second refused.
    let sent = Sent {
        answers: vec![answer(Class::Accepted, "ok"), answer(Class::Misconfigured, "forbidden")],
        per_url: vec![0, 1, 0],
    };
    let items = [item(1, None, 0), item(2, None, 0), item(3, None, 0)];
    let settled = settle_sent(&three_rules(), &g, &items, &sent, None, || 0.5);
    let records: Vec<_> = settled.answered.iter().map(|a| (a.items.clone(), a.class, a.next.clone())).collect();
    assert_eq!(
        records,
        [
            (vec![1, 3], Class::Accepted, NextStep::Accepted),
            (vec![2], Class::Misconfigured, NextStep::Park { fingerprint: "fp".into() }),
        ]
    );
    // Two answers alike but for their responses: each is its own record.
    let mut other = answer(Class::Accepted, "ok");
    other.response.body = Some("{}".into());
    let sent = Sent { answers: vec![answer(Class::Accepted, "ok"), other], per_url: vec![0, 1] };
    let settled = settle_sent(&three_rules(), &g, &items[..2], &sent, None, || 0.5);
    let records: Vec<_> = settled.answered.iter().map(|a| (a.items.clone(), a.response.body.clone())).collect();
    assert_eq!(records, [(vec![1], None), (vec![2], Some("{}".into()))]);
    // One transient answer: items with another history retry at another time.
    let sent = Sent::whole(answer(Class::Transient, "server_error"), 2);
    let items = [item(1, None, 0), item(2, Some(Class::Transient), 2)];
    let settled = settle_sent(&three_rules(), &g, &items, &sent, None, || 0.5);
    let next: Vec<_> = settled.answered.iter().map(|a| (a.items.clone(), a.next.clone())).collect();
    let backoff = |secs| NextStep::RetryAt(at(NOW) + TimeDelta::seconds(secs));
    assert_eq!(next, [(vec![1], backoff(15)), (vec![2], backoff(60))], "30 s, then 2 min, times the jitter");
}

#[test]
fn a_quota_retry_is_told_in_the_quotas_timezone_and_others_in_the_users() {
    let g = site_group();
    let shanghai = Some(chrono_tz::Asia::Shanghai);
    let retry_at = |sent: &Sent, quota_tz| {
        let settled = settle_sent(&three_rules(), &g, &[item(1, None, 0)], sent, quota_tz, || 0.5);
        settled.results[settled.result_of[0]].retry_at.clone().unwrap()
    };
    assert_eq!(retry_at(&quota(None, Period::Day), shanghai), "2026-03-03T00:00:00+08:00");
    assert_eq!(retry_at(&quota(None, Period::Day), None), "2026-03-02T17:00:00+01:00");
    let with_retry_after = quota(Some(RetryAfter::Seconds(3600)), Period::Day);
    assert_eq!(retry_at(&with_retry_after, shanghai), "2026-03-02T12:00:00+01:00");
    let transient = Sent::whole(answer(Class::Transient, "server_error"), 1);
    assert_eq!(retry_at(&transient, shanghai), "2026-03-02T11:00:15+01:00");
}

#[test]
fn an_item_result_carries_the_answer_and_the_decision() {
    let (now, g, tz) = (at(NOW), site_group(), chrono_tz::Europe::Paris);
    let it = item(1, Some(Class::Transient), 2);
    let mut skipped = answer(Class::Accepted, "already_indexed");
    skipped.skipped = true;
    let (r, e) = item_result(&g, &it, &skipped, Decision::Accepted, now, tz, "fp");
    assert_eq!((r.class, r.next, e.outcome), (Class::Accepted, NextStep::Accepted, Outcome::Skipped));
    assert_eq!(
        (e.reason.to_string().as_str(), e.attempts, e.http_status, e.retry_at),
        ("already_indexed", 3, Some(200), None)
    );

    let later = now + TimeDelta::minutes(30);
    let (r, e) = item_result(&g, &it, &answer(Class::Quota, "rate_limited"), Decision::RetryAt(later), now, tz, "fp");
    assert_eq!((r.class, r.next, e.outcome), (Class::Quota, NextStep::RetryAt(later), Outcome::Quota));
    assert_eq!((e.retry_at.as_deref(), e.retry_after_secs), (Some("2026-03-02T11:30:00+01:00"), Some(1800)));
    assert_eq!((r.reason.to_string().as_str(), r.message.as_str()), ("rate_limited", "the engine said rate_limited"));

    let mut refused = answer(Class::Misconfigured, "forbidden");
    refused.verdict.hint = Some("check the key".into());
    let park = Decision::Park { gave_up: None };
    let (r, e) = item_result(&g, &it, &refused, park, now, tz, "fp");
    assert_eq!((r.class, r.next), (Class::Misconfigured, NextStep::Park { fingerprint: "fp".into() }));
    assert_eq!(
        (e.outcome, e.reason.to_string().as_str(), e.hint.as_deref()),
        (Outcome::Misconfigured, "forbidden", Some("check the key"))
    );
}

#[test]
fn an_item_the_scheduler_gave_up_on_is_misconfigured_with_its_reason_and_a_hint() {
    let (now, g, tz) = (at(NOW), site_group(), Tz::UTC);
    let it = item(1, Some(Class::Transient), 2);
    let gave_up = |reason: MisconfiguredReason| {
        let gave_up = match reason {
            MisconfiguredReason::KeyNeverAccepted => GaveUp::KeyNeverAccepted { since_first_use: TimeDelta::days(1) },
            _ => GaveUp::Failing { failing_for: TimeDelta::days(3), attempts: 12 },
        };
        Decision::Park { gave_up: Some(gave_up) }
    };
    let (r, e) = item_result(
        &g,
        &it,
        &answer(Class::Transient, "server_error"),
        gave_up(MisconfiguredReason::GaveUp),
        now,
        tz,
        "fp",
    );
    assert_eq!((e.outcome, e.reason.to_string().as_str()), (Outcome::Misconfigured, "gave_up"));
    assert_eq!(
        e.message,
        "gave up after 3 d of failures (12 attempts); the engine or the network kept failing (last answer: the \
         engine said server_error)"
    );
    assert_eq!(e.hint.as_deref(), Some("check the endpoint and the network, then `indexq queue retry`"));
    assert_eq!((r.class, r.reason.to_string().as_str(), r.message), (Class::Misconfigured, "gave_up", e.message));
    let key = answer(Class::KeyPending, "key_pending");
    let (_, e) = item_result(&g, &it, &key, gave_up(MisconfiguredReason::KeyNeverAccepted), now, tz, "fp");
    assert_eq!(e.reason.to_string(), "key_never_accepted");
    assert!(e.hint.is_some_and(|h| h.contains("indexq key generate")));
    // IndexNow's last 403 said UserForbiddedToAccessSite: the causes reported for it, in order.
    let mut forbidden = answer(Class::KeyPending, "key_pending");
    forbidden.response.body = Some(r#"{"errorCode":"UserForbiddedToAccessSite","message":"User is unauthorized to access the site. Please verify the site using the key and try again","details":null}"#.into());
    let (r, e) = item_result(&g, &it, &forbidden, gave_up(MisconfiguredReason::KeyNeverAccepted), now, tz, "fp");
    assert_eq!((e.outcome, e.reason.to_string().as_str()), (Outcome::Misconfigured, "user_forbidden"));
    assert_eq!((r.class, r.reason.to_string().as_str()), (Class::Misconfigured, "user_forbidden"));
    assert!(
        e.message.starts_with(
            "the engine still refuses the key 1 d after its first use, although the key file is served correctly: \
             IndexNow says UserForbiddedToAccessSite, and the causes"
        ),
        "{}",
        e.message
    );
    assert!(!e.message.contains("last answer"), "{}", e.message);
    let hint = e.hint.unwrap();
    assert!(hint.starts_with("1) verify the site in Bing Webmaster Tools"), "{hint}");
}

fn used(trial: &mut Trial) -> u64 {
    let run = &mut trial.run;
    let g = site_group();
    let rules = run.rules(&g).unwrap();
    let window = budget_rules::windows(&rules, run.clock.now()).remove(0);
    run.ledger.usage(&window).unwrap().used
}

#[tokio::test]
async fn a_refusal_parks_the_items_and_one_that_never_reached_the_engine_costs_nothing() {
    for reached in [true, false] {
        let f = Fixture::new("");
        let mut engine = Scripted::answering(Class::Misconfigured, "forbidden", 10);
        if !reached {
            engine.answer = Box::new(|b: &Batch| Sent::unconfigured("IndexNow", "site", b.urls.len()));
        }
        let (mut run, _) = f.sent(engine, 3).await;
        assert_eq!(used(&mut run), if reached { 3 } else { 0 }, "reached: {reached}");
        let items = testing::items(&mut run);
        assert!(items.iter().all(|i| i.state == ItemState::Parked && i.attempts == 1), "{items:?}");
        let reason = if reached { "forbidden" } else { "not_configured" };
        assert!(testing::results(&mut run).iter().all(|(_, o, r)| o == "misconfigured" && r == reason));
    }
}

/// An engine whose request is in flight when the run is stopped: it
/// stops the run, then answers `sent`.
fn stopped_while_sending(run_stop: &super::super::stop::Stop, sent: fn(usize) -> Sent) -> Scripted {
    let stop = run_stop.clone();
    let mut engine = Scripted::answering(Class::Accepted, "ok", 2);
    engine.answer = Box::new(move |b: &Batch| {
        stop.trigger(super::super::stop::Signal::Terminate);
        sent(b.urls.len())
    });
    engine
}

#[tokio::test]
async fn an_answer_within_the_grace_is_recorded_as_usual_and_nothing_more_is_claimed() {
    let f = Fixture::new("");
    let stop = super::super::stop::Stop::new(std::time::Duration::from_secs(10));
    let engine = stopped_while_sending(&stop, |n| Sent::whole(answer(Class::Accepted, "ok"), n));
    let batches = engine.batches.clone();
    let mut run = f.queued(engine, 5);
    run.run.stop = stop;
    run.sender().send_due(&testing::PRINTER).await.unwrap();
    assert_eq!(batches.lock().unwrap().len(), 1, "one batch, then the stop: no second claim");
    let mut items = testing::items(&mut run);
    items.sort_by_key(|i| i.id);
    let states: Vec<ItemState> = items.into_iter().map(|i| i.state).collect();
    assert_eq!(
        states,
        [ItemState::Accepted, ItemState::Accepted, ItemState::Queued, ItemState::Queued, ItemState::Queued]
    );
    assert_eq!(used(&mut run), 2);
    assert_eq!(run.findings.cut, Default::default(), "nothing was cut");
}

#[tokio::test]
async fn a_request_unanswered_at_the_deadline_stays_counted_and_waits_for_its_lease() {
    let f = Fixture::new("");
    let stop = super::super::stop::Stop::new(std::time::Duration::from_secs(10));
    let mut run = f.queued(stopped_while_sending(&stop, |n| Sent::whole(Answer::unanswered_on_stop(), n)), 3);
    run.run.stop = stop;
    run.sender().send_due(&testing::PRINTER).await.unwrap();
    assert_eq!(used(&mut run), 2, "counted: the engine may have it");
    let mut items = testing::items(&mut run);
    items.sort_by_key(|i| i.id);
    let lease_end = run.findings.cut.retry_at.expect("a retry time");
    assert!(lease_end >= at(NOW) + TimeDelta::minutes(10) && lease_end < at(NOW) + TimeDelta::minutes(11));
    for i in &items[..2] {
        assert_eq!((i.state, i.attempts, i.last_class), (ItemState::Queued, 1, Some(Class::Transient)));
        assert_eq!(i.last_reason.map(|r| r.to_string()).as_deref(), Some("interrupted"));
        assert_eq!(i.next_attempt_at, Some(lease_end), "not before the lease ends");
    }
    assert_eq!((items[2].state, items[2].attempts), (ItemState::Queued, 0), "the third was never claimed");
    assert_eq!(
        (run.findings.cut.unanswered_requests, run.findings.cut.unanswered_urls, run.findings.cut.unsent_urls),
        (1, 2, 0)
    );
    let outcomes: Vec<_> = testing::results(&mut run).into_iter().map(|(_, o, r)| format!("{o} {r}")).collect();
    assert_eq!(outcomes, ["transient interrupted"; 2]);
}

#[tokio::test]
async fn a_request_the_stop_kept_from_going_gives_its_budget_back_and_is_due() {
    let f = Fixture::new("");
    let stop = super::super::stop::Stop::new(std::time::Duration::from_secs(10));
    let mut run = f.queued(stopped_while_sending(&stop, |n| Sent::whole(Answer::not_sent_on_stop(), n)), 2);
    run.run.stop = stop;
    run.sender().send_due(&testing::PRINTER).await.unwrap();
    assert_eq!(used(&mut run), 0, "nothing reached the engine");
    let now = run.run.clock.now();
    for i in testing::items(&mut run) {
        assert_eq!((i.state, i.last_class), (ItemState::Queued, Some(Class::Transient)));
        assert!(i.next_attempt_at.is_some_and(|t| t <= now), "due again: {i:?}");
    }
    assert_eq!(
        (run.findings.cut.unanswered_requests, run.findings.cut.unsent_urls, run.findings.cut.retry_at),
        (0, 2, None)
    );
}

#[tokio::test]
async fn a_transient_answer_is_recorded_and_the_items_wait_for_their_retry() {
    let f = Fixture::new("");
    let (mut run, _) = f.sent(Scripted::answering(Class::Transient, "server_error", 10), 3).await;
    assert_eq!(used(&mut run), 3);
    for i in testing::items(&mut run) {
        assert_eq!((i.state, i.attempts, i.last_class), (ItemState::Queued, 1, Some(Class::Transient)));
        assert_eq!(
            (i.last_reason.map(|r| r.to_string()).as_deref(), i.last_http_status),
            (Some("server_error"), Some(500))
        );
        assert!(i.next_attempt_at.is_some_and(|t| t > at(NOW)), "{i:?}");
    }
    let outcomes: Vec<_> = testing::results(&mut run).into_iter().map(|(_, o, r)| format!("{o} {r}")).collect();
    assert_eq!(outcomes, ["transient server_error"; 3]);
}
