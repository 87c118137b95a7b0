//! A claim's steps on PostgreSQL (`policy::ClaimSteps`): the clock (the
//! server's), the windows, the group's queue and the pace held with `FOR
//! UPDATE` (policy takes windows in one order), due items taken, moved or
//! deferred with a statement each — items another transaction holds
//! skipped (`SKIP LOCKED`), never waited for — the units counted with a
//! conditional upsert per window, and the reservations reconciled.
//!
//! A claim writes no item row: its reservation lists the items it took
//! (schema 8), and an item a reservation lists is in flight (`in_flight`,
//! a view).

use super::spans::{shifted, write_spans, Runs};
use super::{
    group_id, insert_request, items_named, owner_of, sec, stored, stored_opt, ClaimedItem, DateTime, GenericClient,
    GroupKey, Now, Owner, Recorded, Report, Result, Row, RuleWindow, Tx, Usage, Utc,
};
use crate::ledger::policy::{ClaimSteps, Due, DueOrder, Kept, Taken};
use crate::ledger::sql::order_by;

pub(super) fn usage_in(tx: &mut impl GenericClient, rule: &RuleWindow) -> Result<Usage> {
    let blocked: Option<DateTime<Utc>> =
        tx.query_opt("SELECT until FROM blocks WHERE rule = $1", &[&rule.rule])?.map(|r| r.get(0));
    let usage = tx
        .query_opt(
            "SELECT used, limit_value, reported_at, reported_remaining FROM budget_usage
             WHERE rule = $1 AND window_key = $2",
            &[&rule.rule, &rule.window],
        )?
        .map(|r| usage_row(&r))
        .unwrap_or_default();
    Ok(Usage { blocked_until: blocked, ..usage })
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
pub(super) fn add_usage(tx: &mut impl GenericClient, rule: &RuleWindow, units: u64) -> Result<()> {
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
pub(super) fn reserve(tx: &mut impl GenericClient, rule: &RuleWindow, units: u64, now: DateTime<Utc>) -> Result<bool> {
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

pub(super) fn lock_window(tx: &mut impl GenericClient, rule: &RuleWindow) -> Result<()> {
    add_usage(tx, rule, 0)?;
    tx.query_one(
        "SELECT used FROM budget_usage WHERE rule = $1 AND window_key = $2 FOR UPDATE",
        &[&rule.rule, &rule.window],
    )?;
    Ok(())
}

/// Which items of group `$1` are due at `$2`: queued, due, and listed by no
/// reservation of the group (the queue is held: `hold_queue`).
macro_rules! due {
    () => {
        "group_id = $1 AND state = 'queued' AND next_attempt_at <= $2
         AND id NOT IN (SELECT id FROM in_flight WHERE group_id = $1)"
    };
}

/// The due items of a group. A statement that updates some of them names them
/// `id = ANY(ARRAY(…))`: the items are then found by their key, where `id IN
/// (…)` let the planner hash the ids and scan the whole table for them, which
/// made a claim on a large queue more than twice as slow (docs/performance.md,
/// *Measured choices*).
const DUE: &str = concat!("SELECT id FROM items WHERE ", due!());

/// A claim's deferral of due items, over a span's columns: `$4` the time
/// they are due again.
const DEFERRED: &str = "next_attempt_at = $4";

/// Items a killed run held, queued all along, due again now (`$4`), an
/// attempt counted against the request `$5` that records it.
const INTERRUPTED: &str =
    "next_attempt_at = $4, attempts = attempts + 1, last_class = 'transient', last_request_id = $5";

impl ClaimSteps for Tx<'_, '_> {
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
        lock_window(self.tx, rule)?;
        usage_in(self.tx, rule)
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
        let sql = format!("SELECT COUNT(*) FROM ({DUE} LIMIT $3) AS due");
        let n: i64 = self.tx.query_one(&sql, &[&group, &sec(now), &(cap as i64)])?.get(0);
        Ok(n.max(0) as usize)
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
        let rows = self.tx.query(
            &format!(
                concat!(
                    "SELECT id, url, attempts, last_class, streak, streak_started_at, action, next_attempt_at
                     FROM items WHERE ",
                    due!(),
                    " ORDER BY {} LIMIT $3 FOR UPDATE SKIP LOCKED"
                ),
                order_by(order)
            ),
            &[&group, &now, &(n as i64)],
        )?;
        if rows.is_empty() {
            // Other transactions hold every due item: nothing to send.
            return Ok(None);
        }
        let mut ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        ids.sort_unstable();
        let reservation: i64 = self
            .tx
            .query_one(
                "INSERT INTO reservations (host, pid, started, created_at, lease_until, units, group_id, items)
                 VALUES ($1, $2, $3, $4, $4, 0, $5, $6) RETURNING id",
                &[&me.host, &(me.pid as i64), &(me.started as i64), &now, &group, &ids],
            )?
            .get(0);
        let mut taken = Vec::with_capacity(rows.len());
        for r in &rows {
            let item = ClaimedItem {
                id: r.get(0),
                url: r.get(1),
                action: stored("items", "action", r.get(6))?,
                attempts: r.get::<_, i32>(2) as u32,
                last_class: stored_opt("items", "last_class", r.get(3))?,
                streak: r.get::<_, i32>(4) as u32,
                streak_started_at: r.get(5),
            };
            taken.push((r.get(7), item));
        }
        Ok(Some(Taken { reservation, items: taken }))
    }

    fn next_due(&mut self, group: i64, now: DateTime<Utc>, n: usize, order: DueOrder) -> Result<Vec<Due>> {
        let rows = self.tx.query(
            &format!(
                concat!("SELECT id, url FROM items WHERE ", due!(), " ORDER BY {} LIMIT $3 FOR UPDATE SKIP LOCKED"),
                order_by(order)
            ),
            &[&group, &sec(now), &(n as i64)],
        )?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn nth_due(&mut self, group: i64, now: DateTime<Utc>, n: usize) -> Result<Option<(DateTime<Utc>, i64)>> {
        let row = self.tx.query_opt(
            concat!(
                "SELECT next_attempt_at, id FROM items WHERE ",
                due!(),
                " ORDER BY next_attempt_at, id OFFSET $3 LIMIT 1"
            ),
            &[&group, &sec(now), &i64::try_from(n.saturating_sub(1)).unwrap_or(i64::MAX)],
        )?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }

    fn defer_due(
        &mut self,
        group: i64,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        keep: &Kept,
        limit: usize,
    ) -> Result<Vec<i64>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let after = match keep {
            Kept::None => None,
            Kept::After(place) => Some(*place),
            Kept::Except(ids) => {
                let rows = self.tx.query(
                    &format!(
                        "UPDATE items SET next_attempt_at = $3
                         WHERE id = ANY(ARRAY({DUE} AND NOT (id = ANY($4)) LIMIT $5 FOR UPDATE SKIP LOCKED))
                         RETURNING id"
                    ),
                    &[&group, &sec(now), &sec(until), ids, &limit],
                )?;
                let deferred: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                write_spans(self.tx, &Runs::of_group(group, &deferred), DEFERRED, "true", &[&sec(until)])?;
                return Ok(deferred);
            }
        };
        let (after_at, after_id) = (after.map(|a| a.0), after.map_or(0, |a| a.1));
        let rows = self.tx.query(
            &format!(
                "UPDATE items SET next_attempt_at = $3
                 WHERE id = ANY(ARRAY({DUE} AND ($4::timestamptz IS NULL OR (next_attempt_at, id) > ($4, $5))
                     LIMIT $6 FOR UPDATE SKIP LOCKED))
                 RETURNING id"
            ),
            &[&group, &sec(now), &sec(until), &after_at, &after_id, &limit],
        )?;
        let deferred: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        write_spans(self.tx, &Runs::of_group(group, &deferred), DEFERRED, "true", &[&sec(until)])?;
        Ok(deferred)
    }

    fn urls(&mut self, ids: &[i64]) -> Result<Vec<Due>> {
        let rows = self.tx.query(
            "SELECT i.id, i.url FROM unnest($1::bigint[]) WITH ORDINALITY AS wanted (id, n)
                 JOIN items i ON i.id = wanted.id ORDER BY wanted.n",
            &[&ids],
        )?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn move_due(&mut self, moved: &[(i64, DateTime<Utc>)]) -> Result<()> {
        let (ids, at): (Vec<i64>, Vec<DateTime<Utc>>) = moved.iter().copied().unzip();
        let moved: Vec<(i64, i64)> = self
            .tx
            .query(
                "UPDATE items SET next_attempt_at = moved.at
                 FROM unnest($1::bigint[], $2::timestamptz[]) AS moved (id, at)
                 WHERE items.id = moved.id RETURNING items.group_id, items.id",
                &[&ids, &at],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
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

    fn hold(&mut self, reservation: i64, rules: &[RuleWindow], units: u64, lease_until: DateTime<Utc>) -> Result<()> {
        let units = units as i64;
        for rule in rules {
            self.tx.execute(
                "INSERT INTO reservation_rules (reservation_id, rule, window_key, units) VALUES ($1, $2, $3, $4)",
                &[&reservation, &rule.rule, &rule.window, &units],
            )?;
        }
        self.tx.execute(
            "UPDATE reservations SET lease_until = $2, units = $3 WHERE id = $1",
            &[&reservation, &sec(lease_until), &units],
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
        self.tx.execute(
            &format!("UPDATE items SET {} WHERE state = 'queued' AND {}", shifted(INTERRUPTED, -2), items_named(items)),
            &[&items, &now, &request],
        )?;
        write_spans(self.tx, &Runs::of_group(group, items), INTERRUPTED, "state = 'queued'", &[&now, &request])?;
        Ok(())
    }

    fn end(&mut self, reservation: i64) -> Result<()> {
        self.tx.execute("DELETE FROM reservations WHERE id = $1", &[&reservation])?;
        Ok(())
    }

    fn first_use(&mut self, fingerprint: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
        self.tx.execute(
            "INSERT INTO credentials (fingerprint, first_used_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&fingerprint, &sec(now)],
        )?;
        Ok(self.tx.query_one("SELECT first_used_at FROM credentials WHERE fingerprint = $1", &[&fingerprint])?.get(0))
    }
}
