//! Values as both backends' tables keep them: a value read back as the type
//! it stands for (an unknown one is an error naming its table and column),
//! and a request as it is recorded.

use super::item_ids;
use super::{Answered, InspectionAnswer, InspectionCount, LedgerError, Result};
use crate::model::{
    Class, GroupKey, NextStep, ReadFailure, Reason, SitemapReading, SitemapState, StoredResponse, TransientReason,
};
use chrono::{DateTime, Utc};

/// A group as a backend stores it (the engine and the channel by name; a
/// name this indexq does not know is an error naming it).
pub(super) fn stored_group(property: String, engine: &str, target: String, channel: &str) -> Result<GroupKey> {
    Ok(GroupKey {
        property,
        engine: stored("groups", "engine", engine)?,
        target,
        channel: stored("groups", "channel", channel)?,
    })
}

/// A value read back from the ledger as the type it stands for: a value
/// this indexq does not know (a newer one wrote it, or the file was
/// changed by hand) is an error naming the table, the column and the value.
pub(super) fn stored<T: std::str::FromStr>(table: &str, column: &str, value: &str) -> Result<T> {
    value.parse().map_err(|_| {
        LedgerError::Invalid(format!(
            "the ledger's {table}.{column} holds `{value}`, which this indexq does not know (a newer indexq wrote it?)"
        ))
    })
}

/// A reason read back beside the class it was stored with (a request's):
/// a text this indexq does not know as a reason of that class is an error.
pub(super) fn stored_reason(class: Class, text: &str) -> Result<Reason> {
    Reason::of_class(class, text).map_err(|_| {
        LedgerError::Invalid(format!(
            "the ledger's requests.reason holds `{text}`, which this indexq does not know as a reason of class \
             {class} (a newer indexq wrote it?)"
        ))
    })
}

/// The reason of an item's last request, if it has one.
pub(super) fn stored_last_reason(class: Option<&str>, text: Option<&str>) -> Result<Option<Reason>> {
    match (class, text) {
        (Some(class), Some(text)) => Ok(Some(stored_reason(stored("requests", "class", class)?, text)?)),
        _ => Ok(None),
    }
}

/// A row of `inspections` read back: a class or a reason this indexq does
/// not know is an error naming it.
#[allow(clippy::too_many_arguments)]
pub(super) fn stored_inspection(
    property: String,
    class: &str,
    count: i64,
    at: DateTime<Utc>,
    reason: &str,
    message: String,
    hint: Option<String>,
    http_status: Option<i32>,
) -> Result<InspectionCount> {
    let class: Class = stored("inspections", "class", class)?;
    let reason = Reason::of_class(class, reason).map_err(|_| {
        LedgerError::Invalid(format!(
            "the ledger's inspections.last_reason holds `{reason}`, which this indexq does not know as a reason of \
             class {class} (a newer indexq wrote it?)"
        ))
    })?;
    let http_status = http_status.and_then(|s| u16::try_from(s).ok());
    let last = InspectionAnswer { at, class, reason, message, hint, http_status };
    Ok(InspectionCount { property, class, count: count.max(0) as u64, last })
}

/// A sitemap group's row, as both backends read it: the group, its item's
/// state and acceptance, and the columns of `sitemap_reports` (all empty
/// when its report was never read).
pub(super) struct StoredSitemap {
    pub(super) group: GroupKey,
    pub(super) item: String,
    pub(super) submitted_at: Option<DateTime<Utc>>,
    pub(super) read_at: Option<DateTime<Utc>>,
    pub(super) read_ok_at: Option<DateTime<Utc>>,
    pub(super) listed: Option<bool>,
    pub(super) submitted: Option<DateTime<Utc>>,
    pub(super) downloaded: Option<DateTime<Utc>>,
    pub(super) pending: Option<bool>,
    pub(super) errors: Option<i64>,
    pub(super) warnings: Option<i64>,
    pub(super) urls: Option<i64>,
    pub(super) status: Option<String>,
    pub(super) errors_since: Option<DateTime<Utc>>,
    pub(super) failure_class: Option<String>,
    pub(super) failure_reason: Option<String>,
    pub(super) failure_message: Option<String>,
    pub(super) failure_hint: Option<String>,
    pub(super) failure_status: Option<i64>,
    pub(super) failure_since: Option<DateTime<Utc>>,
}

impl StoredSitemap {
    /// The state it stands for; a value this indexq does not know is an
    /// error naming it.
    pub(super) fn state(self, reminded: Vec<(String, DateTime<Utc>)>) -> Result<SitemapState> {
        let n = |v: Option<i64>| v.map(|n| n.max(0) as u64);
        let reading = self.read_ok_at.map(|_| SitemapReading {
            listed: self.listed.unwrap_or(false),
            submitted: self.submitted,
            downloaded: self.downloaded,
            pending: self.pending.unwrap_or(false),
            errors: n(self.errors).unwrap_or(0),
            warnings: n(self.warnings).unwrap_or(0),
            urls: n(self.urls),
            status: self.status,
        });
        let failure = match (self.failure_class.as_deref(), self.failure_reason.as_deref()) {
            (Some(class), Some(reason)) => {
                let class: Class = stored("sitemap_reports", "failure_class", class)?;
                let reason = Reason::of_class(class, reason).map_err(|_| {
                    LedgerError::Invalid(format!(
                        "the ledger's sitemap_reports.failure_reason holds `{reason}`, which this indexq does not \
                         know as a reason of class {class} (a newer indexq wrote it?)"
                    ))
                })?;
                Some(ReadFailure {
                    class,
                    reason,
                    message: self.failure_message.unwrap_or_default(),
                    hint: self.failure_hint,
                    http_status: self.failure_status.and_then(|s| u16::try_from(s).ok()),
                })
            }
            _ => None,
        };
        Ok(SitemapState {
            group: self.group,
            item: stored("items", "state", &self.item)?,
            submitted_at: self.submitted_at,
            read_at: self.read_at,
            reading,
            read_ok_at: self.read_ok_at,
            errors_since: self.errors_since,
            failure,
            failure_since: self.failure_since,
            reminded,
        })
    }
}

/// `stored` for a column that may be empty.
pub(super) fn stored_opt<T: std::str::FromStr>(table: &str, column: &str, value: Option<&str>) -> Result<Option<T>> {
    value.map(|v| stored(table, column, v)).transpose()
}

/// A request as a backend records it: the items it named (its group's),
/// when, and what came of it.
pub(super) struct Recorded<'a> {
    pub(super) group: i64,
    pub(super) at: DateTime<Utc>,
    pub(super) class: Class,
    pub(super) reason: Reason,
    pub(super) message: &'a str,
    pub(super) response: &'a StoredResponse,
    pub(super) retry_at: Option<DateTime<Utc>>,
    pub(super) items: &'a [i64],
}

impl<'a> Recorded<'a> {
    /// An answer, for the items of `group` it names.
    pub(super) fn answer(group: i64, answer: &'a Answered) -> Recorded<'a> {
        let retry_at = match answer.next {
            NextStep::RetryAt(t) => Some(t),
            _ => None,
        };
        Recorded {
            group,
            at: answer.at,
            class: answer.class,
            reason: answer.reason,
            message: &answer.message,
            response: &answer.response,
            retry_at,
            items: &answer.items,
        }
    }

    /// The reservation of a run that stopped before the answer came:
    /// retried now (`reconcile`).
    pub(super) fn interrupted(group: i64, now: DateTime<Utc>, items: &'a [i64]) -> Recorded<'a> {
        const NO_RESPONSE: &StoredResponse = &StoredResponse { http_status: None, body: None };
        Recorded {
            group,
            at: now,
            class: Class::Transient,
            reason: Reason::Transient(TransientReason::Interrupted),
            message: INTERRUPTED,
            response: NO_RESPONSE,
            retry_at: Some(now),
            items,
        }
    }

    /// The items as the `requests` table keeps them: the first, the last,
    /// and the whole list (none when it is one item).
    pub(super) fn stored_items(&self) -> (i64, i64, Option<Vec<u8>>) {
        let (first, last) = (self.items.iter().min(), self.items.iter().max());
        let list = (self.items.len() > 1).then(|| item_ids::encode(self.items));
        (first.copied().unwrap_or(0), last.copied().unwrap_or(0), list)
    }
}

/// What `reconcile` records of a reservation whose run stopped mid-request.
pub(super) const INTERRUPTED: &str =
    "the run that sent this stopped before the answer came; the request counts against the budget and the URL is retried";

/// Stored bodies are capped to this many bytes.
pub(super) const BODY_CAP: usize = 64 * 1024;

/// Cuts a body to `BODY_CAP` bytes at a character boundary.
pub(super) fn cap_body(body: &str) -> &str {
    if body.len() <= BODY_CAP {
        return body;
    }
    let mut end = BODY_CAP;
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    &body[..end]
}
