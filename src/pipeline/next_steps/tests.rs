use super::*;
use crate::budget_rules::Rule;
use crate::classify::RetryAfter;
use crate::engines::{Answer, Sent};
use crate::model::Period;
use crate::pipeline::testing::{self, answer, at, blocked, quota, site_group, three_rules, NOW};
use chrono::TimeDelta;

/// The next steps after `sent` answered a claim of no items: its blocks.
fn after(group: &GroupKey, rules: &[Rule], sent: &Sent) -> NextSteps {
    testing::next_steps_after(group, rules, &[], sent, || panic!("no items, no jitter"))
}

#[test]
fn a_quota_answer_with_retry_after_blocks_the_groups_own_rules_until_then() {
    let now = at(NOW);
    let (rules, g) = (three_rules(), site_group());
    let steps = after(&g, &rules, &quota(Some(RetryAfter::Seconds(120)), Period::Day));
    let until = now + TimeDelta::seconds(120);
    assert_eq!(blocked(&steps.blocks), [("day", until), ("month", until)]);
    assert_eq!(steps.quota_tz, None, "the retry is not a window's end");
}

#[test]
fn a_quota_answer_without_retry_after_blocks_the_window_it_named_until_it_ends() {
    let (rules, g) = (three_rules(), site_group());
    let steps = after(&g, &rules, &quota(None, Period::Day));
    assert_eq!(blocked(&steps.blocks), [("day", at("2026-03-02T16:00:00Z"))], "IndexNow's pool is not the answer's");
    assert_eq!(steps.quota_tz, Some(chrono_tz::Asia::Shanghai));
    let steps = after(&g, &rules, &quota(None, Period::Month));
    assert_eq!(blocked(&steps.blocks), [("month", at("2026-04-01T00:00:00Z"))]);
    assert_eq!(steps.quota_tz, Some(Tz::UTC));
    // Google's daily quota is the Cloud project's: the pool is spent too.
    let google = GroupKey { engine: EngineKind::Google, target: String::new(), ..g.clone() };
    let steps = after(&google, &rules, &quota(None, Period::Day));
    assert_eq!(blocked(&steps.blocks), [("day", at("2026-03-02T16:00:00Z")), ("pool", at("2026-03-03T08:00:00Z"))]);
    let accepted = Sent::whole(answer(Class::Accepted, "ok"), 1);
    assert!(after(&g, &rules, &accepted).blocks.is_empty(), "no quota answer, no block");
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
