//! `indexq queue list|retry|drop`: the items in the ledger, and the two
//! things a person does to them: retry now (parked or waiting) and drop.

use super::{open_ledger_on_clock, ExitStatus};
use crate::cli::{QueueAction, QueueArgs, QueueFilter, StateArg};
use crate::clock::{self, Clock};
use crate::config::Settings;
use crate::error::UsageError;
use crate::ledger::{ItemFilter, Ledger, StateFilter};
use crate::model::ItemState;
use crate::model::{EngineKind, Reason};
use crate::output::printer::{rfc3339, Printer};
use serde::Serialize;
use std::io::Write;

/// How many items `queue list` shows without `--limit`.
const LIST_LIMIT: usize = 10_000;

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

#[derive(Serialize)]
struct ItemJson {
    url: String,
    property: String,
    engine: EngineKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint: Option<String>,
    state: &'static str,
    next_attempt_at: Option<String>,
    attempts: u32,
    last_outcome: Option<String>,
    reason: Option<Reason>,
    message: Option<String>,
    http_status: Option<u16>,
    accepted_at: Option<String>,
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
    let mut filter = to_filter(f);
    if filter.states.is_empty() {
        filter.states = vec![StateFilter::Due, StateFilter::Waiting, StateFilter::InFlight, StateFilter::Parked];
    }
    // A listing, not an export: without --limit, the first LIST_LIMIT items
    // (one more is read to tell whether there are others).
    let limit = filter.limit.unwrap_or(LIST_LIMIT);
    filter.limit = Some(limit + 1);
    let mut rows = ledger.items(&filter, now)?;
    let truncated = rows.len() > limit;
    rows.truncate(limit);
    if printer.json {
        let items: Vec<ItemJson> = rows
            .into_iter()
            .map(|r| ItemJson {
                url: r.url,
                property: r.group.property,
                engine: r.group.engine,
                endpoint: (!r.group.target.is_empty()).then_some(r.group.target),
                state: match (r.state, r.next_attempt_at) {
                    (ItemState::Queued, Some(t)) if t > now => "waiting",
                    (ItemState::Queued, _) => "due",
                    (s, _) => s.as_str(),
                },
                next_attempt_at: r.next_attempt_at.map(|t| rfc3339(t, user_tz)),
                attempts: r.attempts,
                last_outcome: r.last_class.map(|c| c.to_string()),
                reason: r.last_reason,
                message: r.last_message,
                http_status: r.last_http_status,
                accepted_at: r.accepted_at.map(|t| rfc3339(t, user_tz)),
            })
            .collect();
        printer.json(&serde_json::json!({ "now": rfc3339(now, user_tz), "items": items, "truncated": truncated }))?;
        return Ok(ExitStatus::Ok);
    }
    let mut out = printer.stdout();
    if rows.is_empty() {
        writeln!(out, "The queue is empty.")?;
    }
    for r in rows {
        let state = match (r.state, r.next_attempt_at) {
            (ItemState::Queued, Some(t)) if t > now => {
                format!("waiting until {} (in {})", clock::format_local(t, user_tz), clock::humanize(t - now))
            }
            (ItemState::Queued, _) => "due".to_string(),
            (s, _) => s.as_str().to_string(),
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
