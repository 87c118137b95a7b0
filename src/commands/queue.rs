//! `indexq queue list|retry|drop`: the items in the ledger, and the two
//! things a person does to them: retry now (parked or waiting) and drop.

use super::ExitStatus;
use crate::cli::{QueueAction, QueueArgs, QueueFilter, StateArg};
use crate::clock::{self, Clock};
use crate::config::Settings;
use crate::documents::queue_list::{list_doc, listed};
use crate::error::UsageError;
use crate::ledger::open::open_ledger_on_clock;
use crate::ledger::{ItemFilter, Ledger, StateFilter};
use crate::model::GroupKey;
use crate::model::ItemState;
use crate::output::printer::Printer;
use std::io::Write;

fn to_filter(f: &QueueFilter) -> ItemFilter {
    ItemFilter {
        states: f
            .state
            .iter()
            .flat_map(|s| match s {
                StateArg::Due => vec![StateFilter::Due],
                StateArg::Waiting => vec![StateFilter::Waiting],
                StateArg::Queued => vec![StateFilter::Due, StateFilter::Waiting],
                StateArg::Parked => vec![StateFilter::Parked],
                StateArg::InFlight => vec![StateFilter::InFlight],
                StateArg::Accepted => vec![StateFilter::Accepted],
            })
            .collect(),
        property: f.property.clone(),
        engine: f.engine,
        target: f.endpoint.clone(),
        url: f.url.as_deref().map(crate::ingest::stored_form),
        limit: f.limit,
    }
}

/// The states `queue list` names, in its order: the filter, the human
/// name, and the `--state` value.
const STATES: [(StateFilter, &str, &str); 5] = [
    (StateFilter::Due, "due", "due"),
    (StateFilter::Waiting, "waiting", "waiting"),
    (StateFilter::Parked, "parked", "parked"),
    (StateFilter::InFlight, "in flight", "in_flight"),
    (StateFilter::Accepted, "accepted", "accepted"),
];

/// A stored state as human text names it (`--json` has `ItemState::as_str`).
fn human_state(state: ItemState) -> &'static str {
    match state {
        ItemState::Queued => "queued",
        ItemState::InFlight => "in flight",
        ItemState::Accepted => "accepted",
        ItemState::Parked => "parked",
    }
}

/// What the ledger holds in the states `filter` did not ask for, within
/// its property, engine, endpoint and URL: the counts above 0, in the
/// order of `STATES`.
fn counts_elsewhere(
    ledger: &mut dyn Ledger,
    filter: &ItemFilter,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Vec<(StateFilter, u64)>> {
    let others: Vec<StateFilter> = STATES.iter().map(|(s, ..)| *s).filter(|s| !filter.states.contains(s)).collect();
    if others.is_empty() {
        return Ok(Vec::new());
    }
    let mut counts: Vec<(StateFilter, u64)> = others.iter().map(|s| (*s, 0)).collect();
    let mut add = |state: StateFilter, n: u64| {
        if let Some((_, count)) = counts.iter_mut().find(|(s, _)| *s == state) {
            *count += n;
        }
    };
    if filter.url.is_some() {
        // One URL has an item per engine (and endpoint) at most: listed, then counted.
        let rows = ledger.items(&ItemFilter { states: others, limit: None, ..filter.clone() }, now)?;
        for r in rows {
            let state = match (r.state, r.next_attempt_at) {
                (ItemState::Queued, Some(t)) if t > now => StateFilter::Waiting,
                (ItemState::Queued, _) => StateFilter::Due,
                (ItemState::InFlight, _) => StateFilter::InFlight,
                (ItemState::Parked, _) => StateFilter::Parked,
                (ItemState::Accepted, _) => StateFilter::Accepted,
            };
            add(state, 1);
        }
    } else {
        let matches = |g: &GroupKey| {
            filter.property.as_ref().is_none_or(|p| *p == g.property)
                && filter.engine.is_none_or(|e| e == g.engine)
                && filter.target.as_ref().is_none_or(|t| *t == g.target)
        };
        for group in ledger.stored_groups()?.into_iter().filter(matches) {
            let c = ledger.queue_counts(&group, now)?;
            for (state, n) in [
                (StateFilter::Due, c.due),
                (StateFilter::Waiting, c.waiting),
                (StateFilter::Parked, c.parked),
                (StateFilter::InFlight, c.in_flight),
                (StateFilter::Accepted, c.accepted),
            ] {
                add(state, n);
            }
        }
    }
    counts.retain(|(_, n)| *n > 0);
    Ok(counts)
}

/// What `queue list` says when no item matched: the states it looked in,
/// and what the ledger holds in the others (`elsewhere`), with where to see
/// them. `default`: no `--state` was given.
fn nothing_listed(asked: &[StateFilter], elsewhere: &[(StateFilter, u64)], default: bool) -> String {
    let row = |state: StateFilter| STATES.iter().find(|(s, ..)| *s == state).expect("every state has a row");
    let asked: Vec<&str> = STATES.iter().filter(|(s, ..)| asked.contains(s)).map(|(_, human, _)| *human).collect();
    let asked = match asked.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    if elsewhere.is_empty() {
        return if default {
            "The queue is empty.".into()
        } else {
            format!("No items {asked}, and none in any other state.")
        };
    }
    let held: Vec<String> = elsewhere.iter().map(|(s, n)| format!("{n} {}", row(*s).1)).collect();
    let states: Vec<&str> = elsewhere.iter().map(|(s, _)| row(*s).2).collect();
    format!(
        "No items {asked}; {} — see `indexq status`, or list them with `indexq queue list --state {}`.",
        held.join(", "),
        states.join(",")
    )
}

pub fn run(settings: &Settings, args: &QueueArgs, printer: &Printer, clock: &Clock) -> anyhow::Result<ExitStatus> {
    let mut ledger = open_ledger_on_clock(settings, clock)?;
    let now = clock.now();
    let user_tz = clock::user_timezone();
    match &args.action {
        None => list(&mut *ledger, &QueueFilter::default(), printer, now, user_tz),
        Some(QueueAction::List(f)) => list(&mut *ledger, f, printer, now, user_tz),
        Some(QueueAction::Retry(f)) => {
            let n = ledger.retry(&to_filter(f), now)?;
            if printer.json {
                printer.json(&serde_json::json!({ "retried": n }))?;
            } else {
                writeln!(printer.stdout(), "{n} item(s) are due now; `indexq submit` sends them.")?;
            }
            Ok(ExitStatus::Ok)
        }
        Some(QueueAction::Drop(d)) => {
            let f = &d.filter;
            let has_filter = !f.state.is_empty() || f.property.is_some() || f.engine.is_some() || f.url.is_some();
            if !has_filter && !d.all {
                return Err(UsageError(
                    "`queue drop` needs a filter (--state, --property, --engine, --url) or --all".into(),
                )
                .into());
            }
            let n = ledger.drop_items(&to_filter(f), now)?;
            if printer.json {
                printer.json(&serde_json::json!({ "dropped": n }))?;
            } else {
                writeln!(printer.stdout(), "{n} item(s) dropped from the ledger.")?;
            }
            Ok(ExitStatus::Ok)
        }
    }
}

fn list(
    ledger: &mut dyn Ledger,
    f: &QueueFilter,
    printer: &Printer,
    now: chrono::DateTime<chrono::Utc>,
    user_tz: chrono_tz::Tz,
) -> anyhow::Result<ExitStatus> {
    let (filter, rows, truncated, limit) = listed(ledger, &to_filter(f), now)?;
    if printer.json {
        printer.json(&list_doc(rows, truncated, now, user_tz))?;
        return Ok(ExitStatus::Ok);
    }
    let mut out = printer.stdout();
    if rows.is_empty() {
        let asked = filter.states.clone();
        let elsewhere = counts_elsewhere(ledger, &filter, now)?;
        writeln!(out, "{}", nothing_listed(&asked, &elsewhere, f.state.is_empty()))?;
    }
    for r in rows {
        let state = match (r.state, r.next_attempt_at) {
            (ItemState::Queued, Some(t)) if t > now => {
                format!("waiting until {} (in {})", clock::format_local(t, user_tz), clock::humanize(t - now))
            }
            (ItemState::Queued, _) => "due".to_string(),
            (s, _) => human_state(s).to_string(),
        };
        writeln!(out, "{}  {} {}  {state}", r.url, r.group.engine, r.group.property)?;
        if let (Some(class), Some(reason)) = (r.last_class, &r.last_reason) {
            writeln!(
                out,
                "    last: {class} ({reason}) after {} attempt(s): {}",
                r.attempts,
                r.last_message.as_deref().unwrap_or("")
            )?;
        }
    }
    if truncated {
        writeln!(out, "(the first {limit} items; --limit N shows more)")?;
    }
    Ok(ExitStatus::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use StateFilter::*;

    #[test]
    fn an_empty_listing_says_what_it_left_out() {
        let default = [Due, Waiting, InFlight, Parked];
        assert_eq!(nothing_listed(&default, &[], true), "The queue is empty.");
        assert_eq!(
            nothing_listed(&default, &[(Accepted, 12)], true),
            "No items due, waiting, parked or in flight; 12 accepted — see `indexq status`, or list them with \
             `indexq queue list --state accepted`."
        );
        assert_eq!(
            nothing_listed(&[Parked], &[(Due, 3), (InFlight, 1), (Accepted, 12)], false),
            "No items parked; 3 due, 1 in flight, 12 accepted — see `indexq status`, or list them with \
             `indexq queue list --state due,in_flight,accepted`."
        );
        assert_eq!(
            nothing_listed(&[Accepted, Due], &[], false),
            "No items due or accepted, and none in any other state."
        );
    }

    #[test]
    fn human_text_says_in_flight_in_words() {
        assert_eq!(human_state(ItemState::InFlight), "in flight");
        assert_eq!(ItemState::InFlight.as_str(), "in_flight", "as --json says it");
        for (state, human, value) in STATES {
            assert!(!human.contains(['_', '-']), "{human}");
            let parsed = <StateArg as clap::ValueEnum>::from_str(value, false).expect(value);
            assert_eq!(to_filter(&QueueFilter { state: vec![parsed], ..QueueFilter::default() }).states, vec![state]);
        }
    }
}
