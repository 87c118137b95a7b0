//! A claim's steps on SQLite (`policy::ClaimSteps`): the clock, the windows
//! and the pace, the due items taken, moved or deferred with a statement
//! each, the units counted, and the reservations reconciled. Every step
//! runs in policy's transaction (`BEGIN IMMEDIATE`: the write lock is held,
//! so what is read stays so until it commits).
//!
//! A claim writes no item row: its reservation's runs of ids in
//! `in_flight` hold what it took (schema 9), and the rows stay queued.

use super::{
    array, from_ts, group_id, insert_request, insert_rows, opt_ts, params, stored, stored_opt, ts, update_ids,
    ClaimedItem, Connection, DateTime, GroupKey, IdRuns, Now, OptionalExtension, Owner, Recorded, Report, Result,
    RuleWindow, Tx, Usage, Utc, Value,
};
use crate::ledger::policy::{ClaimSteps, Due, DueOrder, Kept, Taken};
use crate::ledger::sql::order_by;

pub(super) fn usage_in(tx: &Connection, rule: &RuleWindow) -> Result<Usage> {
    let blocked: Option<i64> =
        tx.query_row("SELECT until FROM blocks WHERE rule = ?1", params![rule.rule], |r| r.get(0)).optional()?;
    let usage = tx
        .query_row(
            "SELECT used, limit_value, reported_at, reported_remaining FROM budget_usage
             WHERE rule = ?1 AND window_key = ?2",
            params![rule.rule, rule.window],
            |r| {
                let reported =
                    match (r.get::<_, Option<i64>>(2)?, r.get::<_, Option<i64>>(3)?, r.get::<_, Option<i64>>(1)?) {
                        (Some(at), Some(remaining), Some(limit)) => Some(Report {
                            at: from_ts(at),
                            remaining: remaining.max(0) as u64,
                            limit: limit.max(0) as u64,
                        }),
                        _ => None,
                    };
                Ok(Usage { used: r.get::<_, i64>(0)?.max(0) as u64, blocked_until: None, reported })
            },
        )
        .optional()?
        .unwrap_or_default();
    Ok(Usage { blocked_until: opt_ts(blocked), ..usage })
}

/// Counts `units` against a rule's window. The limit stored is the rule's,
/// unless the engine reported one in this window.
pub(super) fn add_usage(tx: &Connection, rule: &RuleWindow, units: u64) -> Result<()> {
    tx.execute(
        "INSERT INTO budget_usage (rule, window_key, period, used, limit_value, resets_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (rule, window_key) DO UPDATE SET used = used + excluded.used,
             limit_value = CASE WHEN reported_at IS NULL THEN excluded.limit_value ELSE limit_value END,
             resets_at = excluded.resets_at",
        params![
            rule.rule,
            rule.window,
            rule.period.as_str(),
            units as i64,
            rule.limit.map(|l| l as i64),
            ts(rule.resets_at)
        ],
    )?;
    Ok(())
}

/// The due items of a group, in the order they go, but for those in flight
/// (`Tx::due`).
const DUE: &str = "FROM items WHERE group_id = ?1 AND state = 'queued' AND next_attempt_at <= ?2";

impl Tx<'_> {
    /// The due items of `group`: `DUE`, less those a run of `in_flight` holds.
    fn due(&self, group: i64) -> Result<String> {
        Ok(format!("{DUE}{}", super::queue::and_not_held(self.conn, Some(group), "items.id")?))
    }
}

impl ClaimSteps for Tx<'_> {
    fn own_clock(&mut self, now: Now) -> Result<DateTime<Utc>> {
        Ok(now.local)
    }

    /// The write lock holds it.
    fn latest(&mut self, _hold: bool) -> Result<Option<DateTime<Utc>>> {
        let latest = self.conn.query_row("SELECT latest_now FROM runs WHERE id = 1", [], |r| r.get(0)).optional()?;
        Ok(opt_ts(latest))
    }

    fn record_latest(&mut self, at: DateTime<Utc>) -> Result<()> {
        self.conn.execute(
            "INSERT INTO runs (id, latest_now) VALUES (1, ?1)
             ON CONFLICT (id) DO UPDATE SET latest_now = MAX(latest_now, excluded.latest_now)",
            [ts(at)],
        )?;
        Ok(())
    }

    fn group(&mut self, key: &GroupKey) -> Result<Option<i64>> {
        group_id(self.conn, self.groups, key)
    }

    /// Held already: a claim's transaction holds the whole ledger's write lock.
    fn hold_queue(&mut self, _group: i64) -> Result<()> {
        Ok(())
    }

    fn window(&mut self, rule: &RuleWindow) -> Result<Usage> {
        add_usage(self.conn, rule, 0)?;
        usage_in(self.conn, rule)
    }

    fn usage(&mut self, rule: &RuleWindow) -> Result<Usage> {
        usage_in(self.conn, rule)
    }

    fn pace(&mut self, key: &str, _hold: bool) -> Result<Option<i64>> {
        Ok(self.conn.query_row("SELECT tat_ms FROM pacing WHERE key = ?1", [key], |r| r.get(0)).optional()?)
    }

    fn set_pace(&mut self, key: &str, tat_ms: i64) -> Result<()> {
        self.conn.execute(
            "INSERT INTO pacing (key, tat_ms) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET tat_ms = excluded.tat_ms",
            params![key, tat_ms],
        )?;
        Ok(())
    }

    fn count_due(&mut self, group: i64, now: DateTime<Utc>, cap: usize) -> Result<usize> {
        let sql = format!("SELECT COUNT(*) FROM (SELECT 1 {} LIMIT ?3)", self.due(group)?);
        let n: i64 = self.conn.query_row(&sql, params![group, ts(now), cap as i64], |r| r.get(0))?;
        Ok(n.max(0) as usize)
    }

    /// The kept count of queued rows, less those in flight (still queued rows).
    fn queued(&mut self, group: i64) -> Result<u64> {
        let n: i64 = self.conn.query_row(
            "SELECT queued - (SELECT COALESCE(SUM(last - first + 1), 0) FROM in_flight WHERE group_id = ?1)
             FROM groups WHERE id = ?1",
            [group],
            |r| r.get(0),
        )?;
        Ok(n.max(0) as u64)
    }

    fn take_due(
        &mut self,
        group: i64,
        now: DateTime<Utc>,
        n: usize,
        order: DueOrder,
        me: &Owner,
    ) -> Result<Option<Taken>> {
        // Read, then marked by id, because an `UPDATE … RETURNING` keeps every
        // row it returns in a temporary table before the first is read, which
        // cost a fresh submit more CPU (docs/performance.md, *Measured
        // choices*). The write lock holds what was read.
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT id, url, attempts, last_class, streak, streak_started_at, action, next_attempt_at
             {} ORDER BY {} LIMIT ?3",
            self.due(group)?,
            order_by(order)
        ))?;
        let mut rows = stmt.query(params![group, ts(now), n as i64])?;
        let mut taken = Vec::with_capacity(n);
        while let Some(r) = rows.next()? {
            let class: Option<String> = r.get(3)?;
            let action: String = r.get(6)?;
            let item = ClaimedItem {
                id: r.get(0)?,
                url: r.get(1)?,
                action: stored("items", "action", &action)?,
                attempts: r.get(2)?,
                last_class: stored_opt("items", "last_class", class.as_deref())?,
                streak: r.get(4)?,
                streak_started_at: opt_ts(r.get(5)?),
            };
            taken.push((opt_ts(r.get(7)?), item));
        }
        if taken.is_empty() {
            return Ok(None);
        }
        // Held as runs of consecutive ids (in the order of their ids); the
        // items themselves stay in the claim's order.
        let mut ids: Vec<i64> = taken.iter().map(|(_, item)| item.id).collect();
        ids.sort_unstable();
        let ids = IdRuns::of(&ids);
        self.conn.execute(
            "INSERT INTO reservations (host, pid, started, created_at, lease_until, units)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            params![me.host, me.pid, me.started as i64, ts(now), taken.len() as i64],
        )?;
        let reservation = self.conn.last_insert_rowid();
        let mut held = self
            .conn
            .prepare_cached("INSERT INTO in_flight (first, last, reservation_id, group_id) VALUES (?1, ?2, ?3, ?4)")?;
        for (first, last) in &ids.0 {
            held.execute(params![first, last, reservation, group])?;
        }
        Ok(Some(Taken { reservation, items: taken }))
    }

    fn next_due(&mut self, group: i64, now: DateTime<Utc>, n: usize, order: DueOrder) -> Result<Vec<Due>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT id, url {} ORDER BY {} LIMIT ?3",
            self.due(group)?,
            order_by(order)
        ))?;
        let rows = stmt.query_map(params![group, ts(now), n as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn nth_due(&mut self, group: i64, now: DateTime<Utc>, n: usize) -> Result<Option<(DateTime<Utc>, i64)>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT next_attempt_at, id {} ORDER BY next_attempt_at, id LIMIT 1 OFFSET ?3",
            self.due(group)?
        ))?;
        let offset = i64::try_from(n.saturating_sub(1)).unwrap_or(i64::MAX);
        let place = stmt.query_row(params![group, ts(now), offset], |r| Ok((from_ts(r.get(0)?), r.get(1)?)));
        Ok(place.optional()?)
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
                let mut stmt = self.conn.prepare_cached(&format!(
                    "UPDATE items SET next_attempt_at = ?3
                     WHERE id IN (SELECT id {} AND id NOT IN (SELECT value FROM rarray(?4)) LIMIT ?5)
                     RETURNING id",
                    self.due(group)?
                ))?;
                let rows = stmt.query_map(params![group, ts(now), ts(until), array(ids), limit], |r| r.get(0))?;
                let deferred: Vec<i64> = rows.collect::<rusqlite::Result<_>>()?;
                super::batches::set_spans_of_ids(self.conn, &deferred)?;
                return Ok(deferred);
            }
        };
        let mut stmt = self.conn.prepare_cached(&format!(
            "UPDATE items SET next_attempt_at = ?3
             WHERE id IN (SELECT id {} AND (?4 IS NULL OR (next_attempt_at, id) > (?4, ?5)) LIMIT ?6)
             RETURNING id",
            self.due(group)?
        ))?;
        let (after_at, after_id) = (after.map(|a| ts(a.0)), after.map_or(0, |a| a.1));
        let rows = stmt.query_map(params![group, ts(now), ts(until), after_at, after_id, limit], |r| r.get(0))?;
        let deferred: Vec<i64> = rows.collect::<rusqlite::Result<_>>()?;
        super::batches::set_spans_of_ids(self.conn, &deferred)?;
        Ok(deferred)
    }

    fn urls(&mut self, ids: &[i64]) -> Result<Vec<Due>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT i.id, i.url FROM rarray(?1) AS k CROSS JOIN items AS i ON i.id = k.value")?;
        let rows = stmt.query_map([array(ids)], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn move_due(&mut self, moved: &[(i64, DateTime<Utc>)]) -> Result<()> {
        let values: Vec<Value> =
            moved.iter().flat_map(|(id, at)| [Value::Integer(*id), Value::Integer(ts(*at))]).collect();
        let (head, tail) = ("UPDATE items SET next_attempt_at = v.column2 FROM (", ") AS v WHERE items.id = v.column1");
        insert_rows(self.conn, head, tail, 2, &values)?;
        let ids: Vec<i64> = moved.iter().map(|(id, _)| *id).collect();
        super::batches::set_spans_of_ids(self.conn, &ids)
    }

    /// The write lock is held: what `window` read still holds, and the
    /// units fit.
    fn charge(&mut self, rules: &[RuleWindow], units: u64, _now: DateTime<Utc>) -> Result<bool> {
        for rule in rules {
            add_usage(self.conn, rule, units)?;
        }
        Ok(true)
    }

    fn hold(&mut self, reservation: i64, rules: &[RuleWindow], units: u64, lease_until: DateTime<Utc>) -> Result<()> {
        self.conn.execute(
            "UPDATE reservations SET lease_until = ?2, units = ?3 WHERE id = ?1",
            params![reservation, ts(lease_until), units as i64],
        )?;
        let mut insert = self.conn.prepare_cached(
            "INSERT INTO reservation_rules (reservation_id, rule, window_key, units) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for rule in rules {
            insert.execute(params![reservation, rule.rule, rule.window, units as i64])?;
        }
        Ok(())
    }

    fn reservations(&mut self, _hold: bool) -> Result<Vec<(i64, Owner, DateTime<Utc>)>> {
        let mut stmt = self.conn.prepare("SELECT id, host, pid, started, lease_until FROM reservations ORDER BY id")?;
        let rows = stmt.query_map([], |r| {
            let owner = Owner { host: r.get(1)?, pid: r.get(2)?, started: r.get::<_, i64>(3)? as u64 };
            Ok((r.get(0)?, owner, from_ts(r.get(4)?)))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The ids of the reservation's runs.
    fn in_flight(&mut self, reservation: i64) -> Result<Option<(i64, Vec<i64>)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT first, last, group_id FROM in_flight WHERE reservation_id = ?1 ORDER BY first")?;
        let runs = stmt.query_map([reservation], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get(2)?)))?;
        let runs: Vec<(i64, i64, i64)> = runs.collect::<rusqlite::Result<_>>()?;
        let Some(&(_, _, group)) = runs.first() else { return Ok(None) };
        Ok(Some((group, runs.iter().flat_map(|&(first, last, _)| first..=last).collect())))
    }

    /// Their rows, queued all along, due now.
    fn interrupted(&mut self, group: i64, items: &[i64], now: DateTime<Utc>) -> Result<()> {
        let request = insert_request(self.conn, &Recorded::interrupted(group, now, items))?;
        let ids = IdRuns::of(items);
        update_ids(
            self.conn,
            "UPDATE OR FAIL items SET next_attempt_at = ?1, attempts = attempts + 1, last_class = 'transient',
                 last_request_id = ?2
             WHERE state = 'queued' AND",
            params![ts(now), request],
            &ids,
        )?;
        super::batches::set_spans_of(self.conn, &ids)
    }

    /// The reservation and its runs.
    fn end(&mut self, reservation: i64) -> Result<()> {
        self.conn.execute("DELETE FROM in_flight WHERE reservation_id = ?1", [reservation])?;
        self.conn.execute("DELETE FROM reservations WHERE id = ?1", [reservation])?;
        Ok(())
    }

    fn first_use(&mut self, fingerprint: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
        self.conn
            .prepare_cached(
                "INSERT INTO credentials (fingerprint, first_used_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            )?
            .execute(params![fingerprint, ts(now)])?;
        let first: i64 = self
            .conn
            .prepare_cached("SELECT first_used_at FROM credentials WHERE fingerprint = ?1")?
            .query_row([fingerprint], |r| r.get(0))?;
        Ok(from_ts(first))
    }
}
