//! What an answer decides beyond its class: what a finished reservation
//! gives back to each of its windows, the limit an engine's report sets,
//! and a request's inspections by class.

use super::super::{Answered, InspectionAnswer, RuleWindow};
use crate::model::{Class, Period};

/// Whether a unit of a request answered with `class` goes back to a window
/// of `period` (`reached`: the request left this machine):
/// - a request that never left was counted by nobody: back to every window;
/// - one the engine refused for rate or quota (`quota`: Bing's ErrorCode
///   4/5 and its remainder wording, Google's 429 `RESOURCE_EXHAUSTED`,
///   IndexNow's 429) was not counted by the engine: back to the day and
///   month windows, but it still counts in a per-minute window (a pace's
///   arrival time is never given back either): it was a request all the same;
/// - anything else may have been received — an acceptance, a refusal for
///   another reason, a timeout, a reset, a 5xx, a lost answer — and stays
///   charged.
///
/// Giving units back never reopens a window a block holds (a quota answer's
/// `Block`): the window stays spent until the block ends.
pub fn gives_back(class: Class, reached: bool, period: Period) -> bool {
    if !reached {
        return true;
    }
    class == Class::Quota && matches!(period, Period::Day | Period::Month)
}

/// The units a reservation's `answers` give back to `window`: one per item,
/// when every answer naming it gives back ([`gives_back`]) — an item named
/// twice (a request and its retry within the claim) that may have been
/// received once stays charged.
pub fn given_back(answers: &[Answered], window: &RuleWindow) -> u64 {
    let mut items: std::collections::HashMap<i64, bool> = std::collections::HashMap::new();
    for answer in answers {
        let back = gives_back(answer.class, answer.reached, window.period);
        for id in &answer.items {
            *items.entry(*id).or_insert(true) &= back;
        }
    }
    items.values().filter(|back| **back).count() as u64
}

/// The limit a reported rule takes from the engine's report: what the
/// ledger has counted, plus what the engine says is left, less what is in
/// flight right now (the engine may not have counted it yet), so that two
/// runs cannot both spend the same remainder.
pub fn reported_limit(used: u64, remaining: u64, in_flight: u64) -> u64 {
    (used + remaining).saturating_sub(in_flight)
}

/// A request's inspection answers by class, each class's in the order they
/// came (its last is the one `inspections` keeps), classes in name order.
pub fn inspections_by_class(answers: &[InspectionAnswer]) -> Vec<(Class, Vec<&InspectionAnswer>)> {
    let mut by_class: std::collections::BTreeMap<&'static str, (Class, Vec<&InspectionAnswer>)> = Default::default();
    let mut sorted: Vec<&InspectionAnswer> = answers.iter().collect();
    sorted.sort_by_key(|a| a.at);
    for a in sorted {
        by_class.entry(a.class.as_str()).or_insert_with(|| (a.class, Vec::new())).1.push(a);
    }
    by_class.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::super::super::story;
    use super::*;
    use crate::model::{NextStep, StoredResponse};
    use chrono::DateTime;

    fn window(period: Period) -> RuleWindow {
        RuleWindow {
            rule: format!("r:{period}"),
            period,
            window: "w".into(),
            limit: Some(10),
            reported: false,
            resets_at: DateTime::UNIX_EPOCH,
        }
    }

    fn answered(items: &[i64], class: Class, reached: bool) -> Answered {
        Answered {
            items: items.to_vec(),
            at: DateTime::UNIX_EPOCH,
            class,
            reason: story::some_reason(class),
            message: String::new(),
            response: StoredResponse::default(),
            next: NextStep::Accepted,
            reached,
        }
    }

    #[test]
    fn refused_for_rate_or_quota_gives_back_to_the_day_and_month_never_sent_to_every_window() {
        for period in [Period::Day, Period::Month] {
            assert!(gives_back(Class::Quota, true, period), "{period}");
        }
        assert!(!gives_back(Class::Quota, true, Period::Minute), "a refused request still counts in the minute");
        for class in [Class::Accepted, Class::Transient, Class::Misconfigured, Class::KeyPending] {
            for period in [Period::Minute, Period::Day, Period::Month] {
                assert!(!gives_back(class, true, period), "{class} may have been received: charged ({period})");
                assert!(gives_back(class, false, period), "{class} never sent: given back ({period})");
            }
        }
    }

    #[test]
    fn a_reservation_gives_back_per_window_each_item_once() {
        let answers = [
            answered(&[1, 2], Class::Quota, true),
            answered(&[3], Class::Accepted, true),
            answered(&[4], Class::Transient, true),
            answered(&[5], Class::Transient, false),
        ];
        assert_eq!(given_back(&answers, &window(Period::Day)), 3, "2 refused + 1 never sent");
        assert_eq!(given_back(&answers, &window(Period::Month)), 3);
        assert_eq!(given_back(&answers, &window(Period::Minute)), 1, "only the one never sent");
        assert_eq!(given_back(&[], &window(Period::Day)), 0);
        // Named by a refusal and by an answer that may have been received: charged.
        let twice = [answered(&[1, 2], Class::Quota, true), answered(&[2], Class::Transient, true)];
        assert_eq!(given_back(&twice, &window(Period::Day)), 1);
    }
}
