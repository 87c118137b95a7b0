use super::*;
use crate::budget_rules::{Rule, Scope};
use crate::classify::RetryAfter;
use crate::engines::{Answer, Batch, Sent};
use crate::ledger::{Budget, ClaimSpec, Intake, Now, Owner};
use crate::model::{Action, ItemState, MisconfiguredReason, Period, StoredResponse};
use crate::pipeline::findings::{budget_entry, paced_entry};
use crate::pipeline::testing::{self, at, rule, site_group, Fixture, Scripted, Trial, NOW};
use chrono::TimeDelta;

/// A property's daily rule in Shanghai, its monthly one, and the pool's day.
fn rules() -> Vec<Rule> {
    vec![
        rule("day", Scope::Property, Period::Day, chrono_tz::Asia::Shanghai, Some(10)),
        rule("month", Scope::Property, Period::Month, Tz::UTC, Some(10)),
        rule("pool", Scope::Pool, Period::Day, chrono_tz::America::Los_Angeles, Some(10)),
    ]
}

fn answer(class: Class, reason: &str) -> Answer {
    Answer {
        verdict: testing::verdict(class, reason),
        response: StoredResponse { http_status: Some(if class == Class::Accepted { 200 } else { 429 }), body: None },
        reached: true,
        skipped: false,
    }
}

fn quota(retry_after: Option<RetryAfter>, window: Period) -> Sent {
    let mut a = answer(Class::Quota, "rate_limited");
    a.verdict.retry_after = retry_after;
    a.verdict.quota_window = window;
    Sent::whole(a, 1)
}

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

fn blocked(blocks: &[Block]) -> Vec<(&str, DateTime<Utc>)> {
    blocks.iter().map(|b| (b.rule.rule.as_str(), b.until)).collect()
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

#[test]
fn a_quota_answer_with_retry_after_blocks_the_groups_own_rules_until_then() {
    let now = at(NOW);
    let (rules, g) = (rules(), site_group());
    let windows = budget_rules::windows(&rules, now);
    let blocks = quota_blocks(&g, &rules, &windows, &quota(Some(RetryAfter::Seconds(120)), Period::Day), &[], now);
    let until = now + TimeDelta::seconds(120);
    assert_eq!(blocked(&blocks), [("day", until), ("month", until)]);
    assert_eq!(quota_tz(&rules, &windows, &blocks), None, "the retry is not a window's end");
}

#[test]
fn a_quota_answer_without_retry_after_blocks_the_window_it_named_until_it_ends() {
    let now = at(NOW);
    let (rules, g) = (rules(), site_group());
    let windows = budget_rules::windows(&rules, now);
    let blocks = quota_blocks(&g, &rules, &windows, &quota(None, Period::Day), &[], now);
    assert_eq!(blocked(&blocks), [("day", at("2026-03-02T16:00:00Z"))], "IndexNow's pool is not the answer's");
    assert_eq!(quota_tz(&rules, &windows, &blocks), Some(chrono_tz::Asia::Shanghai));
    let blocks = quota_blocks(&g, &rules, &windows, &quota(None, Period::Month), &[], now);
    assert_eq!(blocked(&blocks), [("month", at("2026-04-01T00:00:00Z"))]);
    assert_eq!(quota_tz(&rules, &windows, &blocks), Some(Tz::UTC));
    // Google's daily quota is the Cloud project's: the pool is spent too.
    let google = GroupKey { engine: EngineKind::Google, target: String::new(), ..g.clone() };
    let blocks = quota_blocks(&google, &rules, &windows, &quota(None, Period::Day), &[], now);
    assert_eq!(blocked(&blocks), [("day", at("2026-03-02T16:00:00Z")), ("pool", at("2026-03-03T08:00:00Z"))]);
    let accepted = Sent::whole(answer(Class::Accepted, "ok"), 1);
    assert!(quota_blocks(&g, &rules, &windows, &accepted, &[], now).is_empty(), "no quota answer, no block");
}

/// The ledger gives back what the answers say was not counted (its
/// policy decides it from each record's class and whether its request
/// left): each record says whether its request left.
#[test]
fn each_record_says_whether_its_request_left_for_the_ledger_to_give_back() {
    let (settings, g) = (testing::settings(""), site_group());
    let mut unreached = answer(Class::Transient, "connect");
    unreached.reached = false;
    let sent = Sent {
        answers: vec![answer(Class::Accepted, "ok"), unreached, answer(Class::Quota, "rate_limited")],
        per_url: vec![0, 1, 1, 0, 1, 2],
    };
    let items: Vec<ClaimedItem> = (1..=6).map(|id| item(id, None, 0)).collect();
    let settled = settle(&g, &items, &sent, &context(&settings, None), || 0.5);
    let reached: Vec<_> = settled.answered.iter().map(|a| (a.items.clone(), a.reached)).collect();
    assert_eq!(reached, [(vec![1, 4], true), (vec![2, 3, 5], false), (vec![6], true)]);
    // Through a ledger: the six claimed against every window, then finished.
    let (now, windows) = (at(NOW), budget_rules::windows(&rules(), at(NOW)));
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
    let (settings, g) = (testing::settings(""), site_group());
    let now = at(NOW);
    let mut rules = rules();
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
    assert!(quota_blocks(&g, &rules, &windows, &partial, &[true], now).is_empty());
    let spent = remainder(0, 32);
    assert_eq!(blocked(&quota_blocks(&g, &rules, &windows, &spent, &[false], now))[0].0, "day");
    let reports = remainders(&partial, &windows, now);
    let reports: Vec<_> = reports.iter().map(|r| (r.window.rule.as_str(), r.remaining, r.at)).collect();
    assert_eq!(reports, [("reported", 10, now)], "only the reported window of the day");
    assert!(remainders(&Sent::whole(answer(Class::Quota, "rate_limited"), 1), &windows, now).is_empty());
    // The items are due again now, without the scheduler's wait.
    let items: Vec<ClaimedItem> = (1..=3).map(|id| item(id, None, 0)).collect();
    let three = remainder(2, 3);
    let context = Settle { resend_now: &[true], ..context(&settings, None) };
    let settled = settle(&g, &items, &three, &context, || panic!("no jitter"));
    assert_eq!(settled.answered[0].next, NextStep::RetryAt(now));
    assert_eq!(settled.results[settled.result_of[0]].reason.to_string(), "partial_quota");
}

fn context<'a>(settings: &'a crate::config::Settings, quota_tz: Option<Tz>) -> Settle<'a> {
    Settle {
        at: at(NOW),
        key_first_used: None,
        quota_reset: Some(at("2026-03-02T16:00:00Z")),
        retry: &settings.retry,
        user_tz: chrono_tz::Europe::Paris,
        quota_tz,
        fingerprint: "fp",
        lease_end: at(NOW) + TimeDelta::minutes(10),
        resend_now: &[],
    }
}

#[test]
fn a_request_the_stop_cut_waits_for_its_lease_if_sent_and_is_due_at_once_if_not() {
    let (now, lease_end) = (at(NOW), at(NOW) + TimeDelta::minutes(10));
    let unanswered = Answer::unanswered_on_stop();
    assert_eq!(stop_decision(&unanswered, now, lease_end), Some(Decision::RetryAt(lease_end)));
    let late = now + TimeDelta::minutes(11);
    assert_eq!(stop_decision(&unanswered, late, lease_end), Some(Decision::RetryAt(late)), "never in the past");
    assert_eq!(stop_decision(&Answer::not_sent_on_stop(), now, lease_end), Some(Decision::RetryAt(now)));
    for (class, reason) in [(Class::Accepted, "ok"), (Class::Transient, "server_error"), (Class::Quota, "rate_limited")]
    {
        assert_eq!(stop_decision(&answer(class, reason), now, lease_end), None, "the scheduler's");
    }
}

#[test]
fn a_request_the_stop_cut_is_recorded_as_interrupted_past_the_scheduler() {
    let (settings, g) = (testing::settings(""), site_group());
    let items = [item(1, None, 0), item(2, Some(Class::Transient), 2), item(3, None, 0)];
    let sent = Sent { answers: vec![Answer::unanswered_on_stop(), Answer::not_sent_on_stop()], per_url: vec![0, 0, 1] };
    let settled = settle(&g, &items, &sent, &context(&settings, None), || panic!("no jitter: no backoff"));
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
    let (settings, g) = (testing::settings(""), site_group());
    let items = [item(1, None, 0), item(2, Some(Class::Transient), 2), item(3, None, 0)];
    let sent = Sent::whole(answer(Class::Accepted, "ok"), 3);
    let mut draws = 0;
    let settled = settle(&g, &items, &sent, &context(&settings, None), || {
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
    let (settings, g) = (testing::settings(""), site_group());
    // Per URL: the first and third accepted, the second refused.
    let sent = Sent {
        answers: vec![answer(Class::Accepted, "ok"), answer(Class::Misconfigured, "forbidden")],
        per_url: vec![0, 1, 0],
    };
    let items = [item(1, None, 0), item(2, None, 0), item(3, None, 0)];
    let settled = settle(&g, &items, &sent, &context(&settings, None), || 0.5);
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
    let settled = settle(&g, &items[..2], &sent, &context(&settings, None), || 0.5);
    let records: Vec<_> = settled.answered.iter().map(|a| (a.items.clone(), a.response.body.clone())).collect();
    assert_eq!(records, [(vec![1], None), (vec![2], Some("{}".into()))]);
    // One transient answer: items with another history retry at another time.
    let sent = Sent::whole(answer(Class::Transient, "server_error"), 2);
    let items = [item(1, None, 0), item(2, Some(Class::Transient), 2)];
    let settled = settle(&g, &items, &sent, &context(&settings, None), || 0.5);
    let next: Vec<_> = settled.answered.iter().map(|a| (a.items.clone(), a.next.clone())).collect();
    let backoff = |secs| NextStep::RetryAt(at(NOW) + TimeDelta::seconds(secs));
    assert_eq!(next, [(vec![1], backoff(15)), (vec![2], backoff(60))], "30 s, then 2 min, times the jitter");
}

#[test]
fn a_quota_retry_is_told_in_the_quotas_timezone_and_others_in_the_users() {
    let (settings, g) = (testing::settings(""), site_group());
    let shanghai = Some(chrono_tz::Asia::Shanghai);
    let retry_at = |sent: &Sent, quota_tz| {
        let settled = settle(&g, &[item(1, None, 0)], sent, &context(&settings, quota_tz), || 0.5);
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
    let park = Decision::Park { reason: None, message: None };
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
    let gave_up =
        |reason: MisconfiguredReason| Decision::Park { reason: Some(reason), message: Some("gave up".into()) };
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
    assert_eq!(e.message, "gave up (last answer: the engine said server_error)");
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
    assert!(e.message.starts_with("gave up: IndexNow says UserForbiddedToAccessSite, and the causes"), "{}", e.message);
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
