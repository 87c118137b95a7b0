//! The queue on PostgreSQL: counts (kept by statement triggers), lists,
//! `queue retry` and `queue drop`, and what is parked. An item a
//! reservation lists is in flight, its row still `queued` (`in_flight`,
//! `item_states`: schema 8); the kept counts count it queued.

use super::session::Session;
use super::spans::{delete_spans, due_count, write_spans, write_whole_spans, Runs};
use super::{
    group_id, hold_groups, pg, policy, sec, stored, stored_group, stored_last_reason, stored_opt, url_key, DateTime,
    GroupKey, ItemFilter, ItemRow, NoticeClaim, ParkedGroup, PgLedger, Queue, QueueCounts, Reason, Result, Row,
    StateFilter, Utc,
};
use crate::ledger::sql::ITEM_COLUMNS;

pub(super) fn item_row(r: &Row) -> Result<ItemRow> {
    Ok(ItemRow {
        id: r.get(0),
        url: r.get(1),
        group: stored_group(r.get(2), r.get(3), r.get(4), r.get(14))?,
        state: stored("spans", "state", r.get(5))?,
        next_attempt_at: r.get(6),
        attempts: r.get::<_, i32>(7) as u32,
        last_class: stored_opt("spans", "last_class", r.get(8))?,
        last_reason: stored_last_reason(r.get(13), r.get(9))?,
        last_message: r.get(10),
        last_http_status: r.get::<_, Option<i32>>(11).map(|s| s as u16),
        accepted_at: r.get(12),
    })
}

pub(super) type Params = Vec<Box<dyn pg::types::ToSql + Sync + Send>>;

/// A WHERE clause over `item_states i JOIN groups g` and its parameters.
pub(super) fn filter_sql(filter: &ItemFilter, now: DateTime<Utc>) -> (String, Params) {
    // `$1` is "now", named once even when no state needs it (a statement
    // must use every parameter it is given).
    let mut values: Params = vec![Box::new(sec(now))];
    let mut clauses = vec!["$1::timestamptz IS NOT NULL".to_string()];
    if !filter.states.is_empty() {
        let any: Vec<&str> = filter
            .states
            .iter()
            .map(|s| match s {
                StateFilter::Due => "(i.state = 'queued' AND i.next_attempt_at <= $1)",
                StateFilter::Waiting => "(i.state = 'queued' AND i.next_attempt_at > $1)",
                StateFilter::Parked => "i.state = 'parked'",
                StateFilter::InFlight => "i.state = 'in_flight'",
                StateFilter::Accepted => "i.state = 'accepted'",
            })
            .collect();
        clauses.push(format!("({})", any.join(" OR ")));
    }
    if let Some(p) = &filter.property {
        values.push(Box::new(p.clone()));
        clauses.push(format!("g.property = ${}", values.len()));
    }
    if let Some(e) = filter.engine {
        values.push(Box::new(e.as_str().to_string()));
        clauses.push(format!("g.engine = ${}", values.len()));
    }
    if let Some(t) = &filter.target {
        values.push(Box::new(t.clone()));
        clauses.push(format!("g.target = ${}", values.len()));
    }
    if let Some(u) = &filter.url {
        values.push(Box::new(u.clone()));
        clauses.push(format!("i.url = ${}", values.len()));
    }
    (clauses.join(" AND "), values)
}

/// `filter_sql`, a URL given as its ids: its hash looked up in each group
/// the filter names (`listing::live_ids_of_url`), not a test of every
/// row's text.
#[cfg(test)]
fn filter_by_ids(
    tx: &mut Session<'_, impl super::GenericClient>,
    filter: &ItemFilter,
    now: DateTime<Utc>,
) -> Result<(String, Params)> {
    let Some(url) = &filter.url else { return Ok(filter_sql(filter, now)) };
    let ids = super::listing::live_ids_of_url(tx, filter, url)?;
    let (clause, mut values) = filter_sql(&ItemFilter { url: None, ..filter.clone() }, now);
    values.push(Box::new(ids));
    Ok((format!("{clause} AND i.id = ANY(${})", values.len()), values))
}

/// A run of items a filter selects, all of one span: its group, first and
/// last ids, and the span's last request.
pub(super) type Selected = (i64, i64, i64, Option<i64>);

/// The items `filter` selects, as runs of ids, read from the spans
/// (`filter_sql`'s clause over `spans i JOIN groups g`: the queued and
/// parked spans through their partial indexes), each span whole unless a
/// reservation lists some of its ids (cut around them) or the filter
/// names a URL (its ids alone). For `queue retry` and `queue drop`, whose
/// states are never in flight: an id a reservation lists is never
/// selected. No item row is read.
pub(super) fn selected_runs(
    tx: &mut Session<'_, impl super::GenericClient>,
    filter: &ItemFilter,
    now: DateTime<Utc>,
) -> Result<Vec<Selected>> {
    debug_assert!(!filter.states.is_empty() && !filter.states.contains(&StateFilter::InFlight));
    let url_ids = match &filter.url {
        Some(url) => Some(super::listing::live_ids_of_url(tx, filter, url)?),
        None => None,
    };
    let (mut clause, mut values) = filter_sql(&ItemFilter { url: None, ..filter.clone() }, now);
    if let Some(ids) = &url_ids {
        values.push(Box::new(ids.clone()));
        clause = format!(
            "{clause} AND EXISTS (SELECT 1 FROM unnest(${}::bigint[]) AS u (id) WHERE u.id BETWEEN i.first AND i.last)",
            values.len()
        );
    }
    let spans = tx.query(
        &format!(
            "SELECT i.group_id, i.first, i.last, i.last_request_id FROM spans i JOIN groups g ON g.id = i.group_id
             WHERE {clause}"
        ),
        &refs(&values),
    )?;
    let held: std::collections::BTreeSet<i64> =
        tx.query("SELECT id FROM in_flight", &[])?.iter().map(|r| r.get(0)).collect();
    let mut named: Vec<i64> = url_ids.unwrap_or_default();
    named.sort_unstable();
    let mut runs = Vec::new();
    for s in &spans {
        let (group, first, last, request): Selected = (s.get(0), s.get(1), s.get(2), s.get(3));
        // The span's ids the filter names: all of them, or the URL's.
        let mut pieces: Vec<(i64, i64)> = match filter.url {
            Some(_) => named.iter().filter(|id| (first..=last).contains(*id)).map(|id| (*id, *id)).collect(),
            None => vec![(first, last)],
        };
        // Cut around the ids in flight.
        let mut kept = Vec::new();
        for (mut from, to) in pieces.drain(..) {
            for &id in held.range(from..=to) {
                if id > from {
                    kept.push((from, id - 1));
                }
                from = id + 1;
            }
            if from <= to {
                kept.push((from, to));
            }
        }
        runs.extend(kept.into_iter().map(|(f, l)| (group, f, l, request)));
    }
    Ok(runs)
}

/// The listing from the item rows, which `listing::items` replaced: kept
/// for its test, which compares the two, over the rows the test made
/// again from the spans, batch rows and changes (`rows::fill_item_rows`
/// into `item_rows`, in this transaction).
#[cfg(test)]
pub(super) fn items_from_rows(
    tx: &mut Session<'_, impl super::GenericClient>,
    filter: &ItemFilter,
    now: DateTime<Utc>,
) -> Result<Vec<ItemRow>> {
    let limit = filter.limit.map_or(String::new(), |n| format!(" LIMIT {n}"));
    let (clause, values) = filter_by_ids(tx, filter, now)?;
    let sql = format!(
        "SELECT {ITEM_COLUMNS} FROM item_rows i JOIN groups g ON g.id = i.group_id
         LEFT JOIN requests r ON r.id = i.last_request_id WHERE {clause}
         ORDER BY g.property COLLATE \"C\", g.engine COLLATE \"C\", g.target COLLATE \"C\", i.state COLLATE \"C\",
             i.next_attempt_at NULLS FIRST, i.id{limit}"
    );
    tx.query(&sql, &refs(&values))?.iter().map(item_row).collect()
}

pub(super) fn refs(values: &Params) -> Vec<&(dyn pg::types::ToSql + Sync)> {
    values.iter().map(|v| v.as_ref() as &(dyn pg::types::ToSql + Sync)).collect()
}

/// Parked items queued again, over a span's columns: due at `$3`.
const UNPARKED: &str =
    "state = 'queued', next_attempt_at = $3, streak = 0, streak_started_at = NULL, parked_fingerprint = NULL";

/// Items queued again by `queue retry`, over a span's columns: due at
/// `$4`.
const RETRIED: &str =
    "state = 'queued', next_attempt_at = $4, streak = 0, streak_started_at = NULL, parked_fingerprint = NULL";

impl Queue for PgLedger {
    fn unpark_changed(&mut self, group: &GroupKey, fingerprint: &str, now: DateTime<Utc>) -> Result<u64> {
        let now = sec(now);
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(0) };
            let filter = "group_id = $1 AND state = 'parked' AND parked_fingerprint IS DISTINCT FROM $2";
            let written = write_whole_spans(tx, &[group], UNPARKED, filter, &[&group, &fingerprint, &now])?;
            Ok(written.iter().map(|(_, first, last)| (last - first + 1) as u64).sum())
        })
    }

    fn stored_groups(&mut self) -> Result<Vec<GroupKey>> {
        self.transaction(|tx| {
            tx.query("SELECT property, engine, target, channel FROM groups ORDER BY property, engine, target", &[])?
                .iter()
                .map(|r| stored_group(r.get(0), r.get(1), r.get(2), r.get(3)))
                .collect()
        })
    }

    fn due_groups(&mut self, now: DateTime<Utc>) -> Result<Vec<GroupKey>> {
        let now = sec(now);
        self.transaction(|tx| {
            tx.query(
                &format!(
                    "SELECT property, engine, target, channel FROM groups g WHERE {} > 0
                     ORDER BY property, engine, target",
                    due_count("g.id", "$1")
                ),
                &[&now],
            )?
            .iter()
            .map(|r| stored_group(r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect()
        })
    }

    fn next_due(&mut self, group: &GroupKey) -> Result<Option<DateTime<Utc>>> {
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(None) };
            Ok(tx
                .query_opt(
                    // The first queued span, by due time, that holds an id
                    // no reservation lists.
                    "SELECT s.next_attempt_at FROM spans s WHERE s.group_id = $1 AND s.state = 'queued'
                         AND s.last - s.first + 1 > (
                             SELECT count(*) FROM in_flight f WHERE f.group_id = $1 AND f.id BETWEEN s.first AND s.last)
                     ORDER BY s.next_attempt_at LIMIT 1",
                    &[&group],
                )?
                .and_then(|r| r.get(0)))
        })
    }

    fn queue_counts(&mut self, group: &GroupKey, now: DateTime<Utc>) -> Result<QueueCounts> {
        let now = sec(now);
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(QueueCounts::default()) };
            // The counts by state are kept (the rows in flight counted
            // queued); only the due items and those in flight are counted
            // (one statement: one snapshot).
            let r = tx.query_one(
                &format!(
                    "SELECT COALESCE(SUM(n) FILTER (WHERE state = 'queued'), 0)::bigint,
                            COALESCE(SUM(n) FILTER (WHERE state = 'parked'), 0)::bigint,
                            COALESCE(SUM(n) FILTER (WHERE state = 'in_flight'), 0)::bigint,
                            COALESCE(SUM(n) FILTER (WHERE state = 'accepted'), 0)::bigint,
                            {},
                            (SELECT COUNT(*) FROM in_flight WHERE group_id = $1)
                     FROM group_counts WHERE group_id = $1",
                    due_count("$1", "$2")
                ),
                &[&group, &now],
            )?;
            let n = |i: usize| r.get::<_, i64>(i).max(0) as u64;
            let (held, due) = (n(5), n(4));
            let queued = n(0).saturating_sub(held);
            Ok(QueueCounts {
                due,
                waiting: queued.saturating_sub(due),
                parked: n(1),
                in_flight: n(2) + held,
                accepted: n(3),
            })
        })
    }

    /// From the spans and batch rows (`listing::items`; issue 48), read in
    /// one snapshot so that its statements see one ledger.
    fn items(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<Vec<ItemRow>> {
        self.transaction(|tx| {
            tx.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")?;
            super::listing::items(tx, filter, now)
        })
    }

    /// The items whole (`rows::expand`), joined to their groups and last
    /// requests as the rows of `item_states` were.
    fn items_by_id(&mut self, ids: &[i64]) -> Result<Vec<ItemRow>> {
        self.transaction(|tx| {
            let arrays = super::rows::Arrays::of(super::rows::expand(tx, ids)?);
            let sql = format!(
                "SELECT {ITEM_COLUMNS} FROM {} JOIN groups g ON g.id = i.group_id
                     LEFT JOIN requests r ON r.id = i.last_request_id
                 ORDER BY i.n",
                super::rows::ITEM_ARRAYS
            );
            tx.query(&sql, &arrays.params())?.iter().map(item_row).collect()
        })
    }

    fn retry(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<u64> {
        let filter = policy::retry_states(filter);
        self.transaction(|tx| {
            hold_groups(tx, None)?;
            let selected = selected_runs(tx, &filter, now)?;
            let runs: Vec<(i64, i64, i64)> = selected.iter().map(|&(g, f, l, _)| (g, f, l)).collect();
            write_spans(tx, &Runs::of_spans(&runs), RETRIED, "true", &[&sec(now)])?;
            Ok(runs.iter().map(|(_, f, l)| (l - f + 1) as u64).sum())
        })
    }

    fn drop_items(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<u64> {
        let filter = policy::drop_states(filter);
        self.transaction(|tx| {
            hold_groups(tx, None)?;
            let selected = selected_runs(tx, &filter, now)?;
            let runs: Vec<(i64, i64, i64)> = selected.iter().map(|&(g, f, l, _)| (g, f, l)).collect();
            delete_spans(tx, &Runs::of_spans(&runs))?;
            let gone: Vec<i64> = runs.iter().flat_map(|&(_, f, l)| f..=l).collect();
            // A dropped item has no change left (its batch row keeps its
            // text; no span holds it any more).
            tx.execute("DELETE FROM item_changes WHERE id = ANY($1)", &[&gone])?;
            // A drop removes items, not history: their requests stay, and an
            // item a request names (it has a last one) keeps its URL and id.
            let (mut ids, mut groups, mut keys, mut urls) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let mut texts = super::rows::Texts::default();
            for &(group, first, last, request) in &selected {
                if request.is_none() {
                    continue;
                }
                for id in first..=last {
                    let url = texts.url(tx, id)?;
                    ids.push(id);
                    groups.push(group);
                    keys.push(url_key(&url));
                    urls.push(url);
                }
            }
            tx.execute(
                "INSERT INTO dropped_items (id, group_id, url_key, url, dropped_at)
                 SELECT id, group_id, url_key, url, $5
                 FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[]) AS d (id, group_id, url_key, url)",
                &[&ids, &groups, &keys, &urls, &now],
            )?;
            let n = gone.len() as u64;
            Ok(n)
        })
    }

    fn unpark_fixed(&mut self, group: &GroupKey, reasons: &[Reason], now: DateTime<Utc>) -> Result<u64> {
        let now = sec(now);
        let texts: Vec<String> = reasons.iter().map(|r| r.to_string()).collect();
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(0) };
            let filter = "group_id = $1 AND state = 'parked' AND last_request_id IN (
                SELECT id FROM requests WHERE class = 'misconfigured' AND reason = ANY($2))";
            let written = write_whole_spans(tx, &[group], UNPARKED, filter, &[&group, &texts, &now])?;
            Ok(written.iter().map(|(_, first, last)| (last - first + 1) as u64).sum())
        })
    }

    fn parked(&mut self) -> Result<Vec<ParkedGroup>> {
        self.transaction(|tx| {
            // Per group and last answer: how many, since when, the latest
            // answer's URL and message, and the reminder kept under its reason.
            // The parked spans (`spans_parked`), each counted by its length,
            // the least URL of their items read from their batch rows.
            let rows = tx.query(
                "SELECT g.property, g.engine, g.target, p.class, p.reason, p.n, p.since, r.message, r.first_item,
                        p.firsts, p.lasts, m.reminded_at, g.channel
                 FROM (SELECT s.group_id, r.class, r.reason, sum(s.last - s.first + 1)::bigint AS n,
                              min(r.at) AS since, max(r.id) AS latest, array_agg(s.first) AS firsts,
                              array_agg(s.last) AS lasts
                       FROM spans s LEFT JOIN requests r ON r.id = s.last_request_id
                       WHERE s.state = 'parked'
                       GROUP BY s.group_id, r.class, r.reason) p
                 JOIN groups g ON g.id = p.group_id
                 LEFT JOIN requests r ON r.id = p.latest
                 LEFT JOIN reminders m ON m.group_id = p.group_id AND m.reason = coalesce(p.reason, 'parked')
                 ORDER BY g.property, g.engine, g.target, p.reason",
                &[],
            )?;
            let mut texts = super::rows::Texts::default();
            let mut out = Vec::with_capacity(rows.len());
            for r in &rows {
                let class: Option<String> = r.get(3);
                let reason: Option<String> = r.get(4);
                let (firsts, lasts): (Vec<i64>, Vec<i64>) = (r.get(9), r.get(10));
                let mut least: Option<String> = None;
                for (first, last) in firsts.into_iter().zip(lasts) {
                    for id in first..=last {
                        let url = texts.url(tx, id)?;
                        if least.as_ref().is_none_or(|l| url < *l) {
                            least = Some(url);
                        }
                    }
                }
                // The latest answer's first URL while it is an item still.
                let latest = match r.get::<_, Option<i64>>(8) {
                    Some(id) if !super::rows::held_by_spans(tx, &[id])?.is_empty() => Some(texts.url(tx, id)?),
                    _ => None,
                };
                out.push(ParkedGroup {
                    group: stored_group(r.get(0), r.get(1), r.get(2), r.get(12))?,
                    reason: stored_last_reason(class.as_deref(), reason.as_deref())?,
                    count: r.get::<_, i64>(5) as u64,
                    since: r.get(6),
                    message: r.get(7),
                    url: latest.or(least).unwrap_or_default(),
                    reminded_at: r.get(11),
                });
            }
            Ok(out)
        })
    }

    fn record_reminders(&mut self, reminded: &[(GroupKey, String)], at: DateTime<Utc>) -> Result<()> {
        let at = sec(at);
        self.with_groups(|tx, groups| {
            for (group, reason) in reminded {
                let Some(group) = group_id(tx, groups, group)? else { continue };
                tx.execute(
                    "INSERT INTO reminders (group_id, reason, reminded_at) VALUES ($1, $2, $3)
                     ON CONFLICT (group_id, reason) DO UPDATE SET reminded_at = excluded.reminded_at",
                    &[&group, reason, &at],
                )?;
            }
            Ok(())
        })
    }

    fn reminded_at(&mut self, group: &GroupKey, key: &str) -> Result<Option<DateTime<Utc>>> {
        self.transaction(|tx| {
            let row = tx.query_opt(
                "SELECT m.reminded_at FROM reminders m JOIN groups g ON g.id = m.group_id
                 WHERE g.property = $1 AND g.engine = $2 AND g.target = $3 AND g.channel = $4 AND m.reason = $5",
                &[&group.property, &group.engine.as_str(), &group.target, &group.channel.as_str(), &key],
            )?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    fn claim_notice(
        &mut self,
        group: &GroupKey,
        key: &str,
        at: DateTime<Utc>,
        cutoff: DateTime<Utc>,
    ) -> Result<Option<NoticeClaim>> {
        let (at, cutoff) = (sec(at), sec(cutoff));
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(None) };
            let previous: Option<DateTime<Utc>> = tx
                .query_opt("SELECT reminded_at FROM reminders WHERE group_id = $1 AND reason = $2", &[&group, &key])?
                .map(|r| r.get(0));
            // The write decides, not the read before it: of two claims at
            // once, the second waits for the first's row and then finds
            // its claim later than the cutoff, so it writes nothing.
            let won = tx.query_opt(
                "INSERT INTO reminders (group_id, reason, reminded_at) VALUES ($1, $2, $3)
                 ON CONFLICT (group_id, reason) DO UPDATE SET reminded_at = excluded.reminded_at
                 WHERE reminders.reminded_at <= $4
                 RETURNING reminded_at",
                &[&group, &key, &at, &cutoff],
            )?;
            Ok(won.map(|r| NoticeClaim { at: r.get(0), previous }))
        })
    }

    fn notices_sent(&mut self, prefix: &str) -> Result<Vec<(GroupKey, String, DateTime<Utc>)>> {
        self.transaction(|tx| {
            tx.query(
                "SELECT g.property, g.engine, g.target, g.channel, m.reason, m.reminded_at
                 FROM reminders m JOIN groups g ON g.id = m.group_id
                 WHERE left(m.reason, length($1)) = $1
                 ORDER BY g.property, g.engine, g.target, g.channel, m.reason",
                &[&prefix],
            )?
            .iter()
            .map(|r| Ok((stored_group(r.get(0), r.get(1), r.get(2), r.get(3))?, r.get(4), r.get(5))))
            .collect()
        })
    }

    fn take_notice(&mut self, group: &GroupKey, key: &str, at: DateTime<Utc>) -> Result<bool> {
        let at = sec(at);
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(false) };
            let n = tx.execute(
                "DELETE FROM reminders WHERE group_id = $1 AND reason = $2 AND reminded_at = $3",
                &[&group, &key, &at],
            )?;
            Ok(n == 1)
        })
    }

    fn give_back_notice(
        &mut self,
        group: &GroupKey,
        key: &str,
        claimed: Option<DateTime<Utc>>,
        previous: Option<DateTime<Utc>>,
    ) -> Result<()> {
        let (claimed, previous) = (claimed.map(sec), previous.map(sec));
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(()) };
            match (claimed, previous) {
                (Some(claimed), Some(previous)) => tx.execute(
                    "UPDATE reminders SET reminded_at = $4 WHERE group_id = $1 AND reason = $2 AND reminded_at = $3",
                    &[&group, &key, &claimed, &previous],
                )?,
                (Some(claimed), None) => tx.execute(
                    "DELETE FROM reminders WHERE group_id = $1 AND reason = $2 AND reminded_at = $3",
                    &[&group, &key, &claimed],
                )?,
                (None, Some(previous)) => tx.execute(
                    "INSERT INTO reminders (group_id, reason, reminded_at) VALUES ($1, $2, $3)
                     ON CONFLICT (group_id, reason) DO NOTHING",
                    &[&group, &key, &previous],
                )?,
                (None, None) => 0,
            };
            Ok(())
        })
    }
}
