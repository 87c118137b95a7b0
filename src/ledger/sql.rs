//! SQL text both backends run as it is: the two dialects agree on it, so
//! it is written once. Each backend's own statements, and every schema,
//! live in its folder.

/// The columns `item_row` reads, from `items i` with its group `g` and the
/// request `r` that last answered it.
pub(super) const ITEM_COLUMNS: &str =
    "i.id, i.url, g.property, g.engine, g.target, i.state, i.next_attempt_at, i.attempts, \
     i.last_class, r.reason, r.message, r.http_status, i.accepted_at, r.class, g.channel";

/// The columns `attempt_row` reads, from `requests r JOIN groups g`.
pub(super) const REQUEST_COLUMNS: &str =
    "r.at, r.n, g.property, g.engine, g.target, r.class, r.reason, r.message, r.http_status, r.body, r.retry_at, \
     g.channel";

/// A request's first item, whether in the queue or dropped: joined after
/// `requests r`, for `FIRST_URL`.
pub(super) const FIRST_ITEM: &str =
    "LEFT JOIN items i ON i.id = r.first_item LEFT JOIN dropped_items d ON d.id = r.first_item";

/// The URL of a request's first item, and whether `queue drop` removed it.
pub(super) const FIRST_URL: &str = "COALESCE(i.url, d.url, ''), i.id IS NULL";

// No backend on this branch runs it now; left for the integrator.
#[allow(dead_code)]
/// `ledger copy`: the staged items new to the target, inserted with the
/// ids staging gave them and the target's ids of their last requests.
pub(super) const INSERT_FRESH_ITEMS: &str =
    "INSERT INTO items (id, group_id, url_key, url, state, action, lastmod, next_attempt_at, enqueued_at,
         attempts, last_class, streak, streak_started_at, accepted_at, parked_fingerprint, last_request_id)
     SELECT c.dst, c.grp, c.url_key, c.url, c.state, c.action, c.lastmod, c.next_attempt_at, c.enqueued_at,
         c.attempts, c.last_class, c.streak, c.streak_started_at, c.accepted_at, c.parked_fingerprint, r.dst
     FROM copy_items c LEFT JOIN copy_requests r ON r.src = c.last_request
     WHERE c.fresh ORDER BY c.dst";

/// A claim's order (`policy::DueOrder`) as an `ORDER BY` list over the
/// columns of `items`: the dialects agree on each key. A retry is a queued
/// item whose last answer was not an acceptance (`false` sorts first in
/// both); the others tie on `RetryDue` (`NULL`).
#[allow(dead_code)] // PostgreSQL sorts "newest" in Rust now; left for the integrator.
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
