//! What `indexq queue list --json` says, and `serve`'s `GET /v1/queue`
//! answers: the items a filter asks for, within a limit.

use crate::ledger::{ItemFilter, Ledger, StateFilter};
use crate::model::ItemState;
use crate::model::{EngineKind, Reason};
use crate::output::printer::rfc3339;
use serde::Serialize;

/// How many items `queue list` shows without `--limit`.
pub(crate) const LIST_LIMIT: usize = 10_000;

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

/// The items `f` asks for (by default, all but the accepted), at most its
/// `--limit` or `LIST_LIMIT`: the filter used, the rows, whether there were
/// more, and the limit.
pub(crate) fn listed(
    ledger: &mut dyn Ledger,
    f: &ItemFilter,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<(ItemFilter, Vec<crate::ledger::ItemRow>, bool, usize)> {
    let mut filter = f.clone();
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
    Ok((filter, rows, truncated, limit))
}

/// `queue list --json`'s document of `rows`.
pub(crate) fn list_doc(
    rows: Vec<crate::ledger::ItemRow>,
    truncated: bool,
    now: chrono::DateTime<chrono::Utc>,
    user_tz: chrono_tz::Tz,
) -> serde_json::Value {
    let items: Vec<ItemJson> = rows
        .into_iter()
        .map(|r| ItemJson {
            url: r.url,
            endpoint: r.group.endpoint().map(str::to_string),
            property: r.group.property,
            engine: r.group.engine,
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
    serde_json::json!({ "now": rfc3339(now, user_tz), "items": items, "truncated": truncated })
}

/// `queue list --json`'s document for the filter `f` (`serve`'s `GET /v1/queue`).
pub(crate) fn document(
    ledger: &mut dyn Ledger,
    f: &ItemFilter,
    now: chrono::DateTime<chrono::Utc>,
    user_tz: chrono_tz::Tz,
) -> anyhow::Result<serde_json::Value> {
    let (_, rows, truncated, _) = listed(ledger, f, now)?;
    Ok(list_doc(rows, truncated, now, user_tz))
}

/// `document` of the items of `properties` only (what a `serve` token
/// sees): each property's listing in turn, within the one limit.
pub(crate) fn document_of(
    ledger: &mut dyn Ledger,
    f: &ItemFilter,
    properties: &[String],
    now: chrono::DateTime<chrono::Utc>,
    user_tz: chrono_tz::Tz,
) -> anyhow::Result<serde_json::Value> {
    let (mut rows, mut truncated, mut limit) = (Vec::new(), false, f.limit.unwrap_or(LIST_LIMIT));
    for property in properties {
        let f = ItemFilter { property: Some(property.clone()), ..f.clone() };
        let (_, mut some, more, l) = listed(ledger, &f, now)?;
        rows.append(&mut some);
        (truncated, limit) = (truncated || more, l);
    }
    truncated |= rows.len() > limit;
    rows.truncate(limit);
    Ok(list_doc(rows, truncated, now, user_tz))
}
