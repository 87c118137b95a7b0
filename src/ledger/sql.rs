//! SQL text both backends run as it is: the two dialects agree on it, so
//! it is written once. Each backend's own statements, and every schema,
//! live in its folder.

/// The columns `item_row` reads, from an item's row `i` (each backend's
/// `item_rows`: an id with its batch row's text and its span's state) with
/// its group `g` and the request `r` that last answered it.
pub(super) const ITEM_COLUMNS: &str =
    "i.id, i.url, g.property, g.engine, g.target, i.state, i.next_attempt_at, i.attempts, \
     i.last_class, r.reason, r.message, r.http_status, i.accepted_at, r.class, g.channel";

/// The columns `attempt_row` reads, from `requests r JOIN groups g`.
pub(super) const REQUEST_COLUMNS: &str =
    "r.at, r.n, g.property, g.engine, g.target, r.class, r.reason, r.message, r.http_status, r.body, r.retry_at, \
     g.channel";

/// A claim's order (`policy::DueOrder`) as an `ORDER BY` list over the
/// columns of schema 11's items, as the tests' `item_rows` hold them: the
/// oracle the claims' walks of spans are checked against (no claim sorts
/// rows any more). The dialects agree on each key. A retry is a queued item
/// whose last answer was not an acceptance (`false` sorts first in both);
/// the others tie on `RetryDue` (`NULL`).
#[cfg(test)]
pub(super) fn order_by(order: super::policy::DueOrder) -> String {
    use super::policy::DueKey;
    let key = |k: &DueKey| match k {
        DueKey::RetriesFirst => "(last_class IS NULL OR last_class = 'accepted')",
        DueKey::RetryDue => {
            "CASE WHEN last_class IS NULL OR last_class = 'accepted' THEN NULL ELSE next_attempt_at END"
        }
        DueKey::Due => "next_attempt_at",
        DueKey::Newest => "COALESCE(lastmod, enqueued_at) DESC",
        DueKey::Id => "id",
    };
    order.0.iter().map(key).collect::<Vec<_>>().join(", ")
}
