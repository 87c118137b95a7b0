//! What the report says of the URLs admission took: nothing for one due
//! now; else its item's id and its result, made here from the admission
//! (skipped: accepted before) or read from its item (waiting, parked, in
//! flight). The intake and `serve` hand over what admission made of each
//! URL; the rows are made on the findings' side.

use super::base_entry;
use crate::ledger::{Admission, ItemRow, Ledger, NewItem};
use crate::model::{Class, GroupKey, ItemState, LocalReason, Outcome};
use crate::output::results::ResultEntry;
use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use rustc_hash::FxHashMap;

/// What the report says of each admitted URL (each item with what the
/// ledger made of it), in their order: nothing for one due now; else its
/// item's id and its result — accepted before and not sent again, or, read
/// from its item, waiting for a later attempt, parked or in flight. A quota
/// wait is told in the timezone of its group's rule (`rule_tz`), any other
/// in `user_tz`. `submit` and `serve` tell admissions through here.
pub(crate) fn admission_results(
    ledger: &mut dyn Ledger,
    admitted: &[(&NewItem, Admission)],
    now: DateTime<Utc>,
    user_tz: Tz,
    rule_tz: &dyn Fn(&GroupKey) -> Option<Tz>,
) -> anyhow::Result<Vec<ResultNow>> {
    let mut results: Vec<ResultNow> = Vec::with_capacity(admitted.len());
    let mut look_up = Vec::new();
    for (n, (item, admission)) in admitted.iter().enumerate() {
        results.push(match admission_result(item, admission.clone(), now) {
            AdmissionResult::Nothing => None,
            AdmissionResult::Result(id, e) => Some((id, e)),
            AdmissionResult::FromRow(id) => {
                look_up.push((id, n));
                None
            }
        });
    }
    if look_up.is_empty() {
        // Every URL due now (a fresh batch): no item to read.
        return Ok(results);
    }
    let places: FxHashMap<i64, Vec<usize>> = look_up.iter().fold(FxHashMap::default(), |mut m, (id, n)| {
        m.entry(*id).or_default().push(*n);
        m
    });
    let ids: Vec<i64> = look_up.iter().map(|(id, _)| *id).collect();
    for row in ledger.items_by_id(&ids)? {
        let id = row.id;
        let e = Box::new(row_entry(row, user_tz, rule_tz, now));
        for &n in places.get(&id).into_iter().flatten() {
            results[n] = Some((id, e.clone()));
        }
    }
    Ok(results)
}

/// What `admission_results` says of a URL: nothing (due now), or its item's id and result (boxed: 16 bytes a URL due now).
pub(crate) type ResultNow = Option<(i64, Box<ResultEntry>)>;

/// What the report says of an admitted URL now.
#[derive(Debug)]
pub(in crate::pipeline) enum AdmissionResult {
    /// Nothing yet: it is due, and this run sends it (or plans it).
    Nothing,
    /// Its result: accepted before and not sent again.
    Result(i64, Box<ResultEntry>),
    /// Its result is its ledger item's state: waiting for a later attempt,
    /// parked, or in flight.
    FromRow(i64),
}

/// Why a URL accepted `ago` is skipped, and the message that says so.
pub(in crate::pipeline) fn skipped_text(ago: TimeDelta, unchanged: bool) -> (LocalReason, String) {
    let ago = crate::clock::humanize(ago);
    match unchanged {
        true => (LocalReason::Unchanged, format!("not changed since it was accepted {ago} ago (no later lastmod)")),
        false => (LocalReason::AlreadyAccepted, format!("accepted {ago} ago")),
    }
}

/// What the report says of `item` now that admission made `admission`
/// of it.
pub(in crate::pipeline) fn admission_result(
    item: &NewItem,
    admission: Admission,
    now: DateTime<Utc>,
) -> AdmissionResult {
    match admission {
        Admission::Queued { .. } => AdmissionResult::Nothing,
        Admission::AlreadyQueued { id, next_attempt_at } if next_attempt_at.is_some_and(|t| t > now) => {
            AdmissionResult::FromRow(id)
        }
        Admission::AlreadyQueued { .. } => AdmissionResult::Nothing,
        Admission::Skipped { id, accepted_at, unchanged } => {
            let (reason, message) = skipped_text(now - accepted_at, unchanged);
            let mut e = base_entry(&item.url, &item.group, Outcome::Skipped, reason);
            e.message = message;
            AdmissionResult::Result(id, Box::new(e))
        }
        Admission::Parked { id } | Admission::InFlight { id } | Admission::Requeued { id, .. } => {
            AdmissionResult::FromRow(id)
        }
    }
}

/// The result of a URL whose item the ledger holds already: parked (with
/// the answer that parked it), in flight in another run, or waiting for its
/// next attempt. A quota wait is told in the timezone of the group's rule
/// (`rule_tz`), any other in the user's.
pub(in crate::pipeline) fn row_entry(
    row: ItemRow,
    user_tz: Tz,
    rule_tz: impl FnOnce(&GroupKey) -> Option<Tz>,
    now: DateTime<Utc>,
) -> ResultEntry {
    let (outcome, reason) = match row.state {
        ItemState::Parked => (Outcome::Misconfigured, row.last_reason.unwrap_or(LocalReason::Parked.into())),
        ItemState::InFlight => (Outcome::Deferred, LocalReason::InFlight.into()),
        _ => (Outcome::Deferred, row.last_reason.unwrap_or(LocalReason::Queued.into())),
    };
    let mut e = base_entry(&row.url, &row.group, outcome, reason);
    e.attempts = row.attempts;
    e.http_status = row.last_http_status;
    match row.state {
        ItemState::Parked => {
            e.message = row.last_message.unwrap_or_else(|| "parked by an earlier run".into());
            e.hint = Some(
                "fix the configuration (parked items are retried when it changes) or run `indexq queue retry`".into(),
            );
        }
        ItemState::InFlight => {
            e.message = "another indexq run is sending it right now".into();
        }
        _ => {
            // A quota wait is told in the quota's own timezone.
            let tz = match row.last_class {
                Some(Class::Quota) | None => rule_tz(&row.group).unwrap_or(user_tz),
                _ => user_tz,
            };
            e.message = row.last_message.unwrap_or_else(|| "waiting in the queue".into());
            if let Some(t) = row.next_attempt_at {
                e.set_retry(t, tz, now);
            }
        }
    }
    e
}
