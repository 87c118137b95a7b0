//! A claim's steps on PostgreSQL (`policy::ClaimSteps`): the clock (the
//! server's), the windows, the group's queue and the pace held with `FOR
//! UPDATE` (policy takes windows in one order), due items read from the
//! group's due spans (`walk_due`) and taken,
//! moved or deferred as writes of spans, the units counted with a
//! conditional upsert per window, and the reservations reconciled.
//!
//! A claim writes no item row: its reservation lists the items it took
//! (schema 8), and an item a reservation lists is in flight (`in_flight`,
//! a view).

use super::session::Session;
use super::spans::{due_count, write_spans, Runs};
use super::LedgerError;
use super::{
    group_id, insert_request, owner_of, sec, stored_opt, ClaimedItem, DateTime, GenericClient, GroupKey, Now, Owner,
    Recorded, Report, Result, Row, RuleWindow, Tx, Usage, Utc,
};
use crate::ledger::policy::{ClaimSteps, Due, DueKey, DueOrder, Kept, Taken};
use rustc_hash::FxHashSet;

pub(super) fn usage_in(tx: &mut Session<'_, impl GenericClient>, rule: &RuleWindow) -> Result<Usage> {
    let usage = tx
        .query_opt(
            "SELECT used, limit_value, reported_at, reported_remaining FROM budget_usage
             WHERE rule = $1 AND window_key = $2",
            &[&rule.rule, &rule.window],
        )?
        .map(|r| usage_row(&r))
        .unwrap_or_default();
    Ok(Usage { blocked_until: blocked_until(tx, rule)?, ..usage })
}

/// The end of a block on the rule of `rule`, if one was recorded.
fn blocked_until(tx: &mut Session<'_, impl GenericClient>, rule: &RuleWindow) -> Result<Option<DateTime<Utc>>> {
    Ok(tx.query_opt("SELECT until FROM blocks WHERE rule = $1", &[&rule.rule])?.map(|r| r.get(0)))
}

pub(super) fn usage_row(r: &Row) -> Usage {
    let reported = match (r.get::<_, Option<DateTime<Utc>>>(2), r.get::<_, Option<i64>>(3), r.get::<_, Option<i64>>(1))
    {
        (Some(at), Some(remaining), Some(limit)) => {
            Some(Report { at, remaining: remaining.max(0) as u64, limit: limit.max(0) as u64 })
        }
        _ => None,
    };
    Usage { used: r.get::<_, i64>(0).max(0) as u64, blocked_until: None, reported }
}

/// Counts `units` against a rule's window, unconditionally (usage the
/// server already saw, or none: a row for a block or a report).
pub(super) fn add_usage(tx: &mut Session<'_, impl GenericClient>, rule: &RuleWindow, units: u64) -> Result<()> {
    tx.execute(
        "INSERT INTO budget_usage (rule, window_key, period, used, limit_value, resets_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (rule, window_key) DO UPDATE SET used = budget_usage.used + excluded.used,
             limit_value = CASE WHEN budget_usage.reported_at IS NULL THEN excluded.limit_value
                                ELSE budget_usage.limit_value END,
             resets_at = excluded.resets_at",
        &[
            &rule.rule,
            &rule.window,
            &rule.period.as_str(),
            &(units as i64),
            &rule.limit.map(|l| l as i64),
            &sec(rule.resets_at),
        ],
    )?;
    Ok(())
}

/// Reserves `units` of a rule's window in one statement: the units are
/// added only if they fit the window's limit (the engine's reported one, if
/// any) and no block holds at `now`. Returns whether they were. The row
/// exists already (`lock_window`).
pub(super) fn reserve(
    tx: &mut Session<'_, impl GenericClient>,
    rule: &RuleWindow,
    units: u64,
    now: DateTime<Utc>,
) -> Result<bool> {
    let row = tx.query_opt(
        "INSERT INTO budget_usage AS u (rule, window_key, period, used, limit_value, resets_at)
         SELECT $1::text, $2::text, $3::text, $4::bigint, $5::bigint, $6::timestamptz
         WHERE NOT EXISTS (SELECT 1 FROM blocks WHERE rule = $1 AND until > $7::timestamptz)
         ON CONFLICT (rule, window_key) DO UPDATE SET used = u.used + excluded.used,
             limit_value = CASE WHEN u.reported_at IS NULL THEN excluded.limit_value ELSE u.limit_value END,
             resets_at = excluded.resets_at
         WHERE (CASE WHEN u.reported_at IS NULL THEN excluded.limit_value ELSE u.limit_value END) IS NULL
            OR u.used + excluded.used
               <= (CASE WHEN u.reported_at IS NULL THEN excluded.limit_value ELSE u.limit_value END)
         RETURNING u.used",
        &[
            &rule.rule,
            &rule.window,
            &rule.period.as_str(),
            &(units as i64),
            &rule.limit.map(|l| l as i64),
            &sec(rule.resets_at),
            &now,
        ],
    )?;
    Ok(row.is_some())
}

/// A window's row made if missing and held until the transaction ends,
/// with its usage, in one statement: the upsert of no units takes the
/// row's lock (a row it inserts is its own), and what it returns is the
/// row as it stands once held. The block is read after, in a statement
/// of its own: its snapshot then follows the wait for the row, which an
/// answer that recorded a block may have held.
fn lock_window(tx: &mut Session<'_, impl GenericClient>, rule: &RuleWindow) -> Result<Usage> {
    let row = tx.query_one(
        "INSERT INTO budget_usage (rule, window_key, period, used, limit_value, resets_at)
         VALUES ($1, $2, $3, 0, $4, $5)
         ON CONFLICT (rule, window_key) DO UPDATE SET
             limit_value = CASE WHEN budget_usage.reported_at IS NULL THEN excluded.limit_value
                                ELSE budget_usage.limit_value END,
             resets_at = excluded.resets_at
         RETURNING used, limit_value, reported_at, reported_remaining",
        &[&rule.rule, &rule.window, &rule.period.as_str(), &rule.limit.map(|l| l as i64), &sec(rule.resets_at)],
    )?;
    Ok(Usage { blocked_until: blocked_until(tx, rule)?, ..usage_row(&row) })
}

/// A due span of a group as the claim reads it: its ids and the columns a
/// claimed item takes from it.
struct DueSpan {
    first: i64,
    last: i64,
    due: DateTime<Utc>,
    attempts: i32,
    last_class: Option<String>,
    streak: i32,
    streak_started_at: Option<DateTime<Utc>>,
    enqueued_at: DateTime<Utc>,
}

/// Due spans read a page at a time.
const DUE_PAGE: i64 = 200;

/// The ids of group `group` that a reservation lists (in flight).
fn held(tx: &mut Session<'_, impl GenericClient>, group: i64) -> Result<FxHashSet<i64>> {
    Ok(tx.query("SELECT id FROM in_flight WHERE group_id = $1", &[&group])?.iter().map(|r| r.get(0)).collect())
}

/// Walks the due items of `group` at `now` in the order by due time, then
/// id (`DueOrder::BY_DUE`): the queued spans due by `now` through
/// `spans_queued` in (due, first id) order, a page at a time, each span's
/// ids ascending, less those `held` lists; from the place `from` on if
/// given (due at or after it). `visit` is given each item and its span
/// and says whether to go on. Spans never overlap, so (due, first id,
/// id) is the order (due, id). The group's spans are not held: the
/// claim's hold on its group's row keeps out every writer of its spans
/// but the answers, which move only ids a reservation lists (skipped
/// here), yet cut and merge the spans around them between two pages. A
/// span cut so starts again past the place the walk reached, its ids
/// given before: each id is given once (`seen`). A span merged with one
/// given before keeps that one's first id and is not read again. Holding
/// the spans instead would make every answer of the group wait for the
/// claim's commit.
fn walk_due(
    tx: &mut Session<'_, impl GenericClient>,
    group: i64,
    now: DateTime<Utc>,
    from: Option<DateTime<Utc>>,
    held: &FxHashSet<i64>,
    mut visit: impl FnMut(&DueSpan, i64) -> bool,
) -> Result<()> {
    let mut seen = FxHashSet::default();
    let page = tx.prepare(
        "SELECT first, last, next_attempt_at, attempts, last_class, streak, streak_started_at, enqueued_at FROM spans
         WHERE group_id = $1 AND state = 'queued' AND next_attempt_at <= $2
             AND (next_attempt_at, first) > ($3, $4)
         ORDER BY next_attempt_at, first LIMIT $5",
    )?;
    // Before any due time (the first day of year 1, which the server's
    // times hold, where chrono's least time is out of their range).
    let start = DateTime::<Utc>::from_timestamp(-62_135_596_800, 0).unwrap_or(now);
    let mut after: (DateTime<Utc>, i64) = (from.unwrap_or(start), i64::MIN);
    loop {
        let rows = tx.query(&page, &[&group, &now, &after.0, &after.1, &DUE_PAGE])?;
        for r in &rows {
            let span = DueSpan {
                first: r.get(0),
                last: r.get(1),
                due: r.get(2),
                attempts: r.get(3),
                last_class: r.get(4),
                streak: r.get(5),
                streak_started_at: r.get(6),
                enqueued_at: r.get(7),
            };
            after = (span.due, span.first);
            for id in span.first..=span.last {
                if !held.contains(&id) && seen.insert(id) && !visit(&span, id) {
                    return Ok(());
                }
            }
        }
        if (rows.len() as i64) < DUE_PAGE {
            return Ok(());
        }
    }
}

/// The first `n` due items of `group` at `now` in `order`, each as its id,
/// due time and the span's columns a claim gives it.
fn first_due(
    tx: &mut Session<'_, impl GenericClient>,
    group: i64,
    now: DateTime<Utc>,
    n: usize,
    order: DueOrder,
) -> Result<Vec<(i64, DueColumns)>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if order.by_due() {
        let held = held(tx, group)?;
        let mut due = Vec::with_capacity(n.min(10_000));
        walk_due(tx, group, now, None, &held, |s, id| {
            due.push((id, (s.due, s.attempts, s.last_class.clone(), s.streak, s.streak_started_at)));
            due.len() < n
        })?;
        return Ok(due);
    }
    // The order "newest": no index gives it (the items' did not either).
    // The group's due items are walked as runs of ids (each run a due
    // span's, less the ids a reservation lists), then each run's ids a
    // chunk at a time with their lastmods (`item_changes` or the batch
    // row), each offered to a heap of the best `n` so far in the order's
    // keys, as the items' `ORDER BY` sorted them (`sql::order_by`: a retry
    // is a queued item whose last answer was not an acceptance; `NULL`s
    // last, as PostgreSQL sorts them ascending). Memory grows with the
    // due spans and `n`, not with the due items.
    let held = held(tx, group)?;
    let mut runs: Vec<(i64, i64, DueColumns, DateTime<Utc>)> = Vec::new();
    walk_due(tx, group, now, None, &held, |s, id| {
        match runs.last_mut() {
            Some(run) if run.1 + 1 == id && run.0 >= s.first => run.1 = id,
            _ => runs.push((
                id,
                id,
                (s.due, s.attempts, s.last_class.clone(), s.streak, s.streak_started_at),
                s.enqueued_at,
            )),
        }
        true
    })?;
    let mut best: std::collections::BinaryHeap<(Vec<SortKey>, i64, DueColumns)> =
        std::collections::BinaryHeap::with_capacity(n.min(10_000) + 1);
    for (first, last, cols, enqueued_at) in runs {
        let fresh = cols.2.as_deref().is_none_or(|c| c == "accepted");
        let mut from = first;
        while from <= last {
            let to = last.min(from + 9_999);
            let ids: Vec<i64> = (from..=to).collect();
            for (id, values) in ids.iter().zip(super::batches::lastmod_and_action(tx, &ids)?) {
                let lastmod = values.and_then(|(lastmod, _)| lastmod).and_then(|t| DateTime::from_timestamp(t, 0));
                let keys = order
                    .0
                    .iter()
                    .map(|k| match k {
                        DueKey::RetriesFirst => SortKey::Up(i64::from(fresh)),
                        DueKey::RetryDue if fresh => SortKey::Null,
                        DueKey::RetryDue | DueKey::Due => SortKey::Up(cols.0.timestamp()),
                        DueKey::Newest => SortKey::Down(std::cmp::Reverse(lastmod.unwrap_or(enqueued_at).timestamp())),
                        DueKey::Id => SortKey::Up(*id),
                    })
                    .collect();
                best.push((keys, *id, cols.clone()));
                if best.len() > n {
                    best.pop();
                }
            }
            from = to + 1;
        }
    }
    Ok(best.into_sorted_vec().into_iter().map(|(_, id, cols)| (id, cols)).collect())
}

/// A value of a sort key: ascending with `NULL` after every value (as
/// PostgreSQL sorts ascending), or descending.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum SortKey {
    Up(i64),
    Null,
    Down(std::cmp::Reverse<i64>),
}

/// What a claimed item takes from its span: due time, attempts, last
/// class, streak and its start.
type DueColumns = (DateTime<Utc>, i32, Option<String>, i32, Option<DateTime<Utc>>);

/// A claim's deferral of due items, over a span's columns: `$4` the time
/// they are due again.
const DEFERRED: &str = "next_attempt_at = $4";

/// Items a killed run held, queued all along, due again now (`$4`), an
/// attempt counted against the request `$5` that records it.
const INTERRUPTED: &str =
    "next_attempt_at = $4, attempts = attempts + 1, last_class = 'transient', last_request_id = $5";

impl ClaimSteps for Tx<'_, '_, '_> {
    /// The database server's clock, shifted like this machine's by
    /// `INDEXQ_NOW`: every machine decides by one clock.
    fn own_clock(&mut self, now: Now) -> Result<DateTime<Utc>> {
        let server: DateTime<Utc> = self.tx.query_one("SELECT clock_timestamp()", &[])?.get(0);
        Ok(server + now.shift)
    }

    fn latest(&mut self, hold: bool) -> Result<Option<DateTime<Utc>>> {
        let lock = if hold { " FOR UPDATE" } else { "" };
        let row = self.tx.query_opt(&format!("SELECT latest_now FROM runs WHERE id = 1{lock}"), &[])?;
        Ok(row.map(|r| r.get(0)))
    }

    fn record_latest(&mut self, at: DateTime<Utc>) -> Result<()> {
        self.tx.execute(
            "INSERT INTO runs (id, latest_now) VALUES (1, $1)
             ON CONFLICT (id) DO UPDATE SET latest_now = GREATEST(runs.latest_now, excluded.latest_now)",
            &[&at],
        )?;
        Ok(())
    }

    fn group(&mut self, key: &GroupKey) -> Result<Option<i64>> {
        group_id(self.tx, self.groups, key)
    }

    fn window(&mut self, rule: &RuleWindow) -> Result<Usage> {
        lock_window(self.tx, rule)
    }

    /// The group's row, `FOR NO KEY UPDATE`: one claim of a group at a time
    /// (a claim locks the rows it takes only until it commits, so another
    /// must read the reservations after that), and none while a writer
    /// holds it `FOR SHARE` (`hold_groups`). A request's foreign key to its
    /// group (`FOR KEY SHARE`) does not wait for it.
    fn hold_queue(&mut self, group: i64) -> Result<()> {
        self.tx.query_opt("SELECT 1 FROM groups WHERE id = $1 FOR NO KEY UPDATE", &[&group])?;
        Ok(())
    }

    fn usage(&mut self, rule: &RuleWindow) -> Result<Usage> {
        usage_in(self.tx, rule)
    }

    /// A pace row written with 0 by a claim is one without a time yet.
    fn pace(&mut self, key: &str, hold: bool) -> Result<Option<i64>> {
        if hold {
            self.tx.execute("INSERT INTO pacing (key, tat_ms) VALUES ($1, 0) ON CONFLICT DO NOTHING", &[&key])?;
        }
        let lock = if hold { " FOR UPDATE" } else { "" };
        let row = self.tx.query_opt(&format!("SELECT tat_ms FROM pacing WHERE key = $1{lock}"), &[&key])?;
        Ok(row.map(|r| r.get::<_, i64>(0)).filter(|t| *t > 0))
    }

    fn set_pace(&mut self, key: &str, tat_ms: i64) -> Result<()> {
        self.tx.execute("UPDATE pacing SET tat_ms = $2 WHERE key = $1", &[&key, &tat_ms])?;
        Ok(())
    }

    fn count_due(&mut self, group: i64, now: DateTime<Utc>, cap: usize) -> Result<usize> {
        let n: i64 = self.tx.query_one(&format!("SELECT {}", due_count("$1", "$2")), &[&group, &sec(now)])?.get(0);
        Ok((n.max(0) as usize).min(cap))
    }

    /// The kept count of queued rows, less those in flight (still queued rows).
    fn queued(&mut self, group: i64) -> Result<u64> {
        let n: i64 = self
            .tx
            .query_one(
                "SELECT COALESCE((SELECT n FROM group_counts WHERE group_id = $1 AND state = 'queued'), 0)
                      - (SELECT COUNT(*) FROM in_flight WHERE group_id = $1)",
                &[&group],
            )?
            .get(0);
        Ok(n.max(0) as u64)
    }

    /// The items read and locked (until the claim commits), then listed
    /// by the new reservation: no item row is written.
    fn take_due(
        &mut self,
        group: i64,
        now: DateTime<Utc>,
        n: usize,
        order: DueOrder,
        me: &Owner,
    ) -> Result<Option<Taken>> {
        let now = sec(now);
        let due = first_due(self.tx, group, now, n, order)?;
        if due.is_empty() {
            return Ok(None);
        }
        let mut ids: Vec<i64> = due.iter().map(|d| d.0).collect();
        let texts = super::batches::urls_and_actions(self.tx, &ids)?;
        ids.sort_unstable();
        let reservation: i64 = self
            .tx
            .query_one(
                "INSERT INTO reservations (host, pid, started, created_at, lease_until, units, group_id, items)
                 VALUES ($1, $2, $3, $4, $4, 0, $5, $6) RETURNING id",
                &[&me.host, &(me.pid as i64), &(me.started as i64), &now, &group, &ids],
            )?
            .get(0);
        let mut taken = Vec::with_capacity(due.len());
        for ((id, (at, attempts, last_class, streak, streak_started_at)), text) in due.into_iter().zip(texts) {
            let Some((url, action)) = text else {
                return Err(LedgerError::Invalid(format!("spans: the due item {id} has no item row")));
            };
            let item = ClaimedItem {
                id,
                url,
                action,
                attempts: attempts as u32,
                last_class: stored_opt("spans", "last_class", last_class.as_deref())?,
                streak: streak as u32,
                streak_started_at,
            };
            taken.push((Some(at), item));
        }
        Ok(Some(Taken { reservation, items: taken }))
    }

    fn next_due(&mut self, group: i64, now: DateTime<Utc>, n: usize, order: DueOrder) -> Result<Vec<Due>> {
        let due = first_due(self.tx, group, sec(now), n, order)?;
        let ids: Vec<i64> = due.iter().map(|d| d.0).collect();
        let texts = super::batches::urls_and_actions(self.tx, &ids)?;
        Ok(ids.into_iter().zip(texts).filter_map(|(id, text)| Some((id, text?.0))).collect())
    }

    fn nth_due(&mut self, group: i64, now: DateTime<Utc>, n: usize) -> Result<Option<(DateTime<Utc>, i64)>> {
        let held = held(self.tx, group)?;
        let (mut seen, mut nth) = (0, None);
        walk_due(self.tx, group, sec(now), None, &held, |s, id| {
            seen += 1;
            if seen >= n.max(1) {
                nth = Some((s.due, id));
                return false;
            }
            true
        })?;
        Ok(nth)
    }

    fn defer_due(
        &mut self,
        group: i64,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        keep: &Kept,
        limit: usize,
    ) -> Result<Vec<i64>> {
        // The due items past what is kept, `limit` of them, in the
        // order by due time (any would do: the claim defers them all,
        // `limit` a statement).
        let held = held(self.tx, group)?;
        let mut deferred = Vec::new();
        let (from, except) = match keep {
            Kept::None => (None, None),
            Kept::After(place) => (Some(place.0), None),
            Kept::Except(ids) => (None, Some(ids.iter().copied().collect::<FxHashSet<i64>>())),
        };
        walk_due(self.tx, group, sec(now), from, &held, |s, id| {
            let kept = match keep {
                Kept::After((at, after)) => (s.due, id) <= (*at, *after),
                _ => except.as_ref().is_some_and(|e| e.contains(&id)),
            };
            if !kept {
                deferred.push(id);
            }
            deferred.len() < limit
        })?;
        write_spans(self.tx, &Runs::of_group(group, &deferred), DEFERRED, "true", &[&sec(until)])?;
        Ok(deferred)
    }

    fn urls(&mut self, ids: &[i64]) -> Result<Vec<Due>> {
        // The ids a span holds (an item still), each URL from its batch row.
        let held = super::rows::held_by_spans(self.tx, ids)?;
        let mut texts = super::rows::Texts::default();
        held.into_iter().map(|(_, id)| Ok((id, texts.url(self.tx, id)?))).collect()
    }

    fn move_due(&mut self, moved: &[(i64, DateTime<Utc>)]) -> Result<()> {
        let (ids, at): (Vec<i64>, Vec<DateTime<Utc>>) = moved.iter().copied().unzip();
        let moved = super::rows::held_by_spans(self.tx, &ids)?;
        // Each moved id its own run, its span given its own due time.
        write_spans(
            self.tx,
            &Runs::each(&moved),
            "next_attempt_at = (SELECT at FROM unnest($4::bigint[], $5::timestamptz[]) AS m (id, at)
                                WHERE m.id = spans.first)",
            "true",
            &[&ids, &at],
        )?;
        Ok(())
    }

    fn charge(&mut self, rules: &[RuleWindow], units: u64, now: DateTime<Utc>) -> Result<bool> {
        for rule in rules {
            if !reserve(self.tx, rule, units, now)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// One statement: the reservation's windows and its lease.
    fn hold(&mut self, reservation: i64, rules: &[RuleWindow], units: u64, lease_until: DateTime<Utc>) -> Result<()> {
        let names: Vec<&str> = rules.iter().map(|r| r.rule.as_str()).collect();
        let windows: Vec<&str> = rules.iter().map(|r| r.window.as_str()).collect();
        self.tx.execute(
            "WITH leased AS (UPDATE reservations SET lease_until = $2, units = $3 WHERE id = $1)
             INSERT INTO reservation_rules (reservation_id, rule, window_key, units)
             SELECT $1, r.rule, r.window_key, $3 FROM unnest($4::text[], $5::text[]) AS r (rule, window_key)",
            &[&reservation, &sec(lease_until), &(units as i64), &names, &windows],
        )?;
        Ok(())
    }

    /// Held, the reservations another reconcile holds are skipped.
    fn reservations(&mut self, hold: bool) -> Result<Vec<(i64, Owner, DateTime<Utc>)>> {
        let lock = if hold { " FOR UPDATE SKIP LOCKED" } else { "" };
        let rows = self
            .tx
            .query(&format!("SELECT id, host, pid, started, lease_until FROM reservations ORDER BY id{lock}"), &[])?;
        Ok(rows.iter().map(|r| (r.get(0), owner_of(r, 1), r.get(4))).collect())
    }

    /// The items the reservation lists.
    fn in_flight(&mut self, reservation: i64) -> Result<Option<(i64, Vec<i64>)>> {
        let row = self.tx.query_opt(
            "SELECT group_id, items FROM reservations WHERE id = $1 AND cardinality(items) > 0",
            &[&reservation],
        )?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }

    /// Their rows, queued all along, due now.
    fn interrupted(&mut self, group: i64, items: &[i64], now: DateTime<Utc>) -> Result<()> {
        let now = sec(now);
        let request = insert_request(self.tx, &Recorded::interrupted(group, now, items))?;
        write_spans(self.tx, &Runs::of_group(group, items), INTERRUPTED, "state = 'queued'", &[&now, &request])?;
        Ok(())
    }

    fn end(&mut self, reservation: i64) -> Result<()> {
        self.tx.execute("DELETE FROM reservations WHERE id = $1", &[&reservation])?;
        Ok(())
    }

    fn first_use(&mut self, fingerprint: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
        first_use(self.tx, fingerprint, now)
    }
}

/// When the credential `fingerprint` was first used, its row written with
/// `now` if it has none. One statement most often: the row it inserts,
/// or else the one its snapshot sees (a row the insert finds deleted
/// since is replaced, and the inserted one comes first). A row another
/// runner committed after that snapshot (the insert waited for it, or
/// met it) is not in the snapshot: then it is read by a statement of its
/// own.
fn first_use(tx: &mut Session<'_, impl GenericClient>, fingerprint: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    let row = tx.query_opt(
        "WITH added AS (
             INSERT INTO credentials (fingerprint, first_used_at) VALUES ($1, $2) ON CONFLICT DO NOTHING
             RETURNING first_used_at)
         SELECT first_used_at FROM (
             SELECT first_used_at, 0 AS n FROM added
             UNION ALL SELECT first_used_at, 1 FROM credentials WHERE fingerprint = $1
         ) AS used ORDER BY n LIMIT 1",
        &[&fingerprint, &sec(now)],
    )?;
    match row {
        Some(row) => Ok(row.get(0)),
        None => {
            Ok(tx.query_one("SELECT first_used_at FROM credentials WHERE fingerprint = $1", &[&fingerprint])?.get(0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::conformance::{dedupe_day, test_postgres, two_groups};
    use crate::ledger::{Action, Intake, NewItem};

    /// A credential's first use: written with the time given when it has
    /// none, kept when it has one, and, when another runner writes it
    /// while this one waits on its insert, read back as that runner wrote
    /// it (the statement's own snapshot does not see it).
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_a_first_use_is_written_once_and_read_as_written() {
        let mut ledger = test_postgres();
        let at = |s: i64| DateTime::<Utc>::from_timestamp(1_796_000_000 + s, 0).unwrap();
        assert_eq!(ledger.transaction(|tx| first_use(tx, "k1", at(1))).unwrap(), at(1), "written");
        assert_eq!(ledger.transaction(|tx| first_use(tx, "k1", at(2))).unwrap(), at(1), "kept");
        let options = crate::ledger::postgres::PgOptions {
            url: std::env::var("INDEXQ_TEST_PG").unwrap(),
            schema: ledger.schema.clone(),
            password: std::env::var("INDEXQ_TEST_PG_PASSWORD").ok(),
            timeout: std::time::Duration::from_secs(10),
            lease: crate::ledger::owner::LEASE,
        };
        let mut other = super::super::connect(&options, false).unwrap();
        let mut theirs = other.transaction().unwrap();
        theirs.execute("INSERT INTO credentials (fingerprint, first_used_at) VALUES ('k2', $1)", &[&at(3)]).unwrap();
        let read = std::thread::scope(|s| {
            let mine = s.spawn(|| ledger.transaction(|tx| first_use(tx, "k2", at(4))).unwrap());
            // The insert waits for the other runner's row, then meets it.
            std::thread::sleep(std::time::Duration::from_millis(300));
            theirs.commit().unwrap();
            mine.join().unwrap()
        });
        assert_eq!(read, at(3), "the other runner's first use");
    }

    /// The first `n` due items in the order "newest" (`first_due`), for
    /// every `n` from 1 to past the due items, equal the item rows' own
    /// `ORDER BY` (`sql::order_by`, over `rows::fill_item_rows`): lastmods
    /// from the batch rows shared by runs of items, ties with other items'
    /// queued time, lastmods changed after admission (`item_changes`),
    /// retries of one due time and of another, items not yet due, and a
    /// run a reservation lists.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_the_newest_due_items_are_the_rows_in_their_order() {
        let mut ledger = test_postgres();
        let item = two_groups();
        let at = |s: i64| DateTime::<Utc>::from_timestamp(1_796_000_000 + s, 0).unwrap();
        let now = at(1_000);
        // Group a: 60 items, lastmods in runs of five (some none, some equal
        // to the queued time), then group b's 20, then a's 20 more.
        let lastmod = |i: usize| match i / 5 % 4 {
            0 => None,
            1 => Some(at(500 + (i / 5) as i64)),
            2 => Some(now),
            _ => Some(at(100)),
        };
        let batch: Vec<_> = (0..60).map(|i| NewItem { lastmod: lastmod(i), ..item(0, i) }).collect();
        ledger.admit(&batch, now, &dedupe_day()).unwrap();
        ledger.admit(&(0..20).map(|i| item(1, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        let more: Vec<_> = (60..80).map(|i| NewItem { lastmod: lastmod(i), ..item(0, i) }).collect();
        ledger.admit(&more, at(900), &dedupe_day()).unwrap();
        let group: i64 = ledger.transaction(|tx| Ok(tx.query_one("SELECT min(id) FROM groups", &[])?.get(0))).unwrap();
        ledger
            .transaction(|tx| {
                super::super::spans::set_state(
                    tx,
                    7,
                    12,
                    "last_class = 'transient', next_attempt_at = now() - interval '1 day'",
                )?;
                super::super::spans::set_state(tx, 30, 33, "last_class = 'quota'")?;
                super::super::spans::set_state(tx, 40, 44, "next_attempt_at = '2030-01-01T00:00:00Z'")?;
                super::super::batches::set_changes(
                    tx,
                    &[(3, (Some(at(800).timestamp()), Action::Updated)), (52, (None, Action::Deleted))],
                )?;
                tx.execute(
                    "INSERT INTO reservations (host, pid, started, created_at, lease_until, units, group_id, items)
                     VALUES ('h', 1, 1, now(), now(), 1, $1, $2)",
                    &[&group, &(20..26).collect::<Vec<i64>>()],
                )?;
                Ok(())
            })
            .unwrap();
        let order = DueOrder::NEWEST;
        ledger
            .transaction(|tx| {
                super::super::rows::fill_item_rows(tx, "item_rows")?;
                let rows: Vec<i64> = tx
                    .query(
                        &format!(
                            "SELECT id FROM item_rows WHERE group_id = $1 AND state = 'queued' AND next_attempt_at <= $2
                             ORDER BY {}",
                            crate::ledger::sql::order_by(order)
                        ),
                        &[&group, &now],
                    )?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                assert!(rows.len() > 50, "{} due", rows.len());
                for n in 1..=rows.len() + 3 {
                    let due: Vec<i64> = first_due(tx, group, now, n, order)?.into_iter().map(|d| d.0).collect();
                    assert_eq!(due, rows[..n.min(rows.len())], "n = {n}");
                }
                Ok(())
            })
            .unwrap();
    }
}
