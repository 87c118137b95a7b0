//! What an answer decides beyond its class: the state it moves its items
//! to, what a finished reservation gives back to each of its windows, the
//! limit an engine's report sets, a request's inspections by class, and
//! the order a reservation's budget rows and items are written in. Each
//! backend takes the steps (`AnswerSteps`) in one transaction.

use super::super::{Answered, Finish, InspectionAnswer, Inspections, Result, RuleWindow};
use super::claim::lock_order;
use super::steps::{Move, Steps};
use crate::model::{Class, ItemState, NextStep, Period, Report};
use chrono::{DateTime, Utc};

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
    // A batch's thousands of ids a window: a hasher for integers, not
    // SipHash (the keys are the ledger's own ids, no one's input).
    let named: usize = answers.iter().map(|a| a.items.len()).sum();
    let mut items: rustc_hash::FxHashMap<i64, bool> =
        rustc_hash::FxHashMap::with_capacity_and_hasher(named, Default::default());
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

/// Where an answer's next step moves its items.
pub fn after(next: &NextStep) -> Move<'_> {
    match next {
        NextStep::Accepted => Move { to: ItemState::Accepted, due: None, fingerprint: None },
        NextStep::RetryAt(t) => Move { to: ItemState::Queued, due: Some(*t), fingerprint: None },
        NextStep::Park { fingerprint } => Move { to: ItemState::Parked, due: None, fingerprint: Some(fingerprint) },
    }
}

/// Everything one reservation's answers record (`Budget::finish`), in one
/// transaction: budget rows first, in lock order, as a claim takes them
/// (then the items) — what the engine did not count given back window by
/// window, the engine's remainders read, the blocks — then each answer's
/// request and its items moved, the first use of a credential the engine
/// accepted forgotten, and the reservation ended.
pub fn finish(steps: &mut (impl Steps + ?Sized), done: &Finish) -> Result<()> {
    for w in lock_order(&done.windows) {
        let back = given_back(&done.answers, w);
        if back > 0 {
            steps.give_back(w, back)?;
        }
    }
    let mut reports: Vec<_> = done.reports.iter().collect();
    reports.sort_by(|a, b| (&a.window.rule, &a.window.window).cmp(&(&b.window.rule, &b.window.window)));
    for r in reports {
        report(steps, &r.window, r.remaining, r.at, Some(done.reservation))?;
    }
    let mut blocks: Vec<_> = done.blocks.iter().collect();
    blocks.sort_by(|a, b| (&a.rule.rule, &a.rule.window).cmp(&(&b.rule.rule, &b.rule.window)));
    for block in blocks {
        steps.block(block)?;
    }
    for answer in done.answers.iter().filter(|a| !a.items.is_empty()) {
        steps.answer(answer, &after(&answer.next))?;
    }
    if let Some(fingerprint) = &done.accepted_credential {
        steps.credential_accepted(fingerprint)?;
    }
    steps.end(done.reservation)
}

/// Records `done` as `finish` does if its reservation is still open, and
/// says whether it was (`Budget::finish_if_open`). A `finish` cut by a lost
/// connection may have committed or not; recording it twice would give its
/// unused units back twice. A reservation that is gone was either recorded
/// by that cut commit or reconciled by another process: either way the
/// ledger has decided its items, and the answer is not recorded again.
pub fn finish_if_open(steps: &mut (impl Steps + ?Sized), done: &Finish) -> Result<bool> {
    let open = steps.reservations(true)?.iter().any(|(id, _, _)| *id == done.reservation);
    if open {
        finish(steps, done)?;
    }
    Ok(open)
}

/// What the engine says is left of a reported window, as a reading
/// (`Budget::record_report`; a remainder in an answer): the window's limit
/// becomes `reported_limit` of what the ledger has counted and the units
/// every other reservation than `answered` holds in it.
pub fn report(
    steps: &mut (impl Steps + ?Sized),
    rule: &RuleWindow,
    remaining: u64,
    at: DateTime<Utc>,
    answered: Option<i64>,
) -> Result<Report> {
    let used = steps.window(rule)?.used;
    let in_flight = steps.in_flight_units(rule, answered)?;
    let at = DateTime::from_timestamp(at.timestamp(), 0).unwrap_or(at);
    let report = Report { at, remaining, limit: reported_limit(used, remaining, in_flight) };
    steps.set_report(rule, &report)?;
    Ok(report)
}

/// A request's URL inspections (`Budget::record_inspections`): the unused
/// units given back, the blocks a quota answer puts on inspection windows,
/// and each class's answers counted (the last one of each kept).
pub fn record_inspections(steps: &mut (impl Steps + ?Sized), done: &Inspections) -> Result<()> {
    if done.unused > 0 {
        for w in lock_order(done.windows) {
            steps.give_back(w, done.unused)?;
        }
    }
    let mut blocks: Vec<_> = done.blocks.iter().collect();
    blocks.sort_by(|a, b| (&a.rule.rule, &a.rule.window).cmp(&(&b.rule.rule, &b.rule.window)));
    for block in blocks {
        steps.block(block)?;
    }
    for (class, answers) in inspections_by_class(done.answers) {
        let last = answers.last().expect("a class with answers");
        steps.count_inspections(done.property, class, answers.len() as u64, last)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::super::conformance;
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
            reason: conformance::some_reason(class),
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
