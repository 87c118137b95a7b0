//! Budgets on SQLite: the ledger's clock, claims, answers, units, reports
//! and reconciling, each in one `BEGIN IMMEDIATE` transaction.

use super::*;

pub(super) fn load_pace<'p>(
    tx: &Connection,
    pace: &'p Pace,
    now: DateTime<Utc>,
    windows: &[RuleWindow],
) -> Result<PaceState<'p>> {
    let tat_ms: Option<i64> =
        tx.query_row("SELECT tat_ms FROM pacing WHERE key = ?1", [&pace.key], |r| r.get(0)).optional()?;
    Ok(PaceState::new(pace, now, tat_ms, windows))
}

/// The ledger's clock: this machine's (`local`), never earlier than the
/// latest instant recorded; with `record`, recorded as the latest.
pub(super) fn ledger_time(conn: &Connection, local: DateTime<Utc>, record: bool) -> Result<LedgerTime> {
    let latest: Option<i64> =
        conn.query_row("SELECT latest_now FROM runs WHERE id = 1", [], |r| r.get(0)).optional()?;
    let latest = opt_ts(latest);
    let now = ledger_now(local, latest);
    if record && latest.is_none_or(|l| ts(now) > ts(l)) {
        conn.execute(
            "INSERT INTO runs (id, latest_now) VALUES (1, ?1)
             ON CONFLICT (id) DO UPDATE SET latest_now = MAX(latest_now, excluded.latest_now)",
            [ts(now)],
        )?;
    }
    Ok(LedgerTime { now, latest, clock: local })
}

pub(super) fn store_pace(tx: &Connection, key: &str, state: &PaceState) -> Result<()> {
    tx.execute(
        "INSERT INTO pacing (key, tat_ms) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET tat_ms = excluded.tat_ms",
        params![key, state.tat_ms()],
    )?;
    Ok(())
}

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

/// Records, in the caller's transaction, that the engine says `remaining`
/// units are left in a reported rule's window (`policy::reported_limit`):
/// in flight is what every reservation but `answered` (the one whose answer
/// said it, being finished) has counted in the window.
pub(super) fn report_in(
    tx: &Connection,
    rule: &RuleWindow,
    remaining: u64,
    now: DateTime<Utc>,
    answered: Option<i64>,
) -> Result<Report> {
    let in_flight: i64 = tx.query_row(
        "SELECT COALESCE(SUM(units), 0) FROM reservation_rules
         WHERE rule = ?1 AND window_key = ?2 AND reservation_id IS NOT ?3",
        params![rule.rule, rule.window, answered],
        |r| r.get(0),
    )?;
    add_usage(tx, rule, 0)?;
    let used = usage_in(tx, rule)?.used;
    let limit = policy::reported_limit(used, remaining, in_flight.max(0) as u64);
    tx.execute(
        "UPDATE budget_usage SET limit_value = ?3, reported_at = ?4, reported_remaining = ?5
         WHERE rule = ?1 AND window_key = ?2",
        params![rule.rule, rule.window, limit as i64, ts(now), remaining as i64],
    )?;
    Ok(Report { at: now, remaining, limit })
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

/// Reservations whose owner is gone (dead process, or lease expired).
pub(super) fn stale_reservations(conn: &Connection, now: DateTime<Utc>, me: &Owner) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare("SELECT id, host, pid, started, lease_until FROM reservations")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            Owner { host: r.get(1)?, pid: r.get(2)?, started: r.get::<_, i64>(3)? as u64 },
            from_ts(r.get(4)?),
        ))
    })?;
    let mut stale = Vec::new();
    for row in rows {
        let (id, owner, lease_until) = row?;
        if !owner.may_be_alive(me, lease_until, now) {
            stale.push(id);
        }
    }
    Ok(stale)
}

impl Budget for SqliteLedger {
    fn stale_reservations(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<u64> {
        Ok(stale_reservations(&self.conn, now, me)?.len() as u64)
    }

    fn reconcile(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<Reconciled> {
        let tx = self.write()?;
        let stale = stale_reservations(&tx, now, me)?;
        let mut done = Reconciled::default();
        for id in stale {
            let mut stmt = tx
                .prepare_cached("SELECT id FROM items WHERE reservation_id = ?1 AND state = 'in_flight' ORDER BY id")?;
            let items = ids_of(&mut stmt, [id])?;
            drop(stmt);
            if let Some(&first) = items.first() {
                let group: i64 = tx.query_row("SELECT group_id FROM items WHERE id = ?1", [first], |r| r.get(0))?;
                let request = insert_request(&tx, &Recorded::interrupted(group, now, &items))?;
                let n = tx.execute(
                    "UPDATE items SET state = 'queued', next_attempt_at = ?2, reservation_id = NULL,
                         attempts = attempts + 1, last_class = 'transient', last_request_id = ?3
                     WHERE reservation_id = ?1 AND state = 'in_flight'",
                    params![id, ts(now), request],
                )?;
                counted(&tx, group, Some(ItemState::InFlight), Some(ItemState::Queued), n as u64)?;
            }
            tx.execute("DELETE FROM reservations WHERE id = ?1", [id])?;
            done.reservations += 1;
            done.items += items.len() as u64;
        }
        tx.commit()?;
        Ok(done)
    }

    fn claim(
        &mut self,
        group: &GroupKey,
        spec: &ClaimSpec,
        me: &Owner,
        deferred: &mut dyn FnMut(i64, &str, DateTime<Utc>),
    ) -> Result<Claim> {
        let ClaimSpec { windows, max_items, pace, now } = *spec;
        let tx = write(&mut self.conn)?;
        let now = ledger_time(&tx, now.local, true)?.now;
        let rules = windows.at(now);
        let rules = &rules[..];
        let mut claim = Claim { now, windows: rules.to_vec(), ..Claim::default() };
        // A group never seen has no items: the claim goes on with none.
        let group = group_id(&tx, &mut self.groups, group)?.unwrap_or(-1);
        let usages = rules.iter().map(|r| usage_in(&tx, r)).collect::<Result<Vec<_>>>()?;
        // Due items are counted only as far as the plan can tell apart:
        // past the budget and the batch, more makes no difference.
        let budget = rules.iter().zip(&usages).filter_map(|(r, u)| u.remaining(r, now)).min();
        let cap = budget.map_or(max_items, |b| (b as usize).max(max_items)).saturating_add(1);
        let due_count: i64 = tx.query_row(
            "SELECT COUNT(*) FROM (SELECT 1 FROM items WHERE group_id = ?1 AND state = 'queued' AND next_attempt_at <= ?2
                 LIMIT ?3)",
            params![group, ts(now), cap as i64],
            |r| r.get(0),
        )?;
        let pacing = match pace {
            Some(p) => Some(load_pace(&tx, p, now, rules)?),
            None => None,
        };
        let plan = ClaimPlan::new(rules, &usages, due_count.max(0) as usize, max_items, pacing.as_ref(), now);
        let due_scan = "FROM items WHERE group_id = ?1 AND state = 'queued' AND next_attempt_at <= ?2";
        if plan.take > 0 {
            tx.execute(
                "INSERT INTO reservations (host, pid, started, created_at, lease_until, units) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                params![me.host, me.pid, me.started as i64, ts(now), plan.take as i64],
            )?;
            let reservation = tx.last_insert_rowid();
            // The first `take` due items, in order, marked in flight.
            let mut stmt = tx.prepare_cached(&format!(
                "UPDATE items SET state = 'in_flight', reservation_id = ?3
                 WHERE id IN (SELECT id {due_scan} ORDER BY next_attempt_at, id LIMIT ?4)
                 RETURNING id, url, attempts, last_class, streak, streak_started_at, action, next_attempt_at"
            ))?;
            let mut rows = stmt.query(params![group, ts(now), reservation, plan.take as i64])?;
            let mut taken = Vec::with_capacity(plan.take);
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
                taken.push((r.get::<_, Option<i64>>(7)?, item));
            }
            drop(rows);
            drop(stmt);
            taken.sort_by_key(|(at, item)| (*at, item.id));
            claim.items = taken.into_iter().map(|(_, item)| item).collect();
            claim.reservation = Some(reservation);
            counted(&tx, group, Some(ItemState::Queued), Some(ItemState::InFlight), claim.items.len() as u64)?;
        }
        // The next due items wait for their paced slot, each its own.
        let paced = plan.paced_until.saturating_sub(plan.take);
        if let (Some(p), true) = (&pacing, paced > 0) {
            let mut stmt =
                tx.prepare_cached(&format!("SELECT id, url {due_scan} ORDER BY next_attempt_at, id LIMIT ?3"))?;
            let rows = stmt.query_map(params![group, ts(now), paced as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
            for (position, row) in rows.enumerate() {
                let (id, url): (i64, String) = row?;
                claim.paced.push((id, url, p.estimate(plan.take + position)));
            }
        }
        // The rest wait until the budget frees up: one statement.
        if let Some(t) = plan.retry_at {
            let paced_ids: Vec<i64> = claim.paced.iter().map(|p| p.0).collect();
            let mut stmt = tx.prepare_cached(&format!(
                "UPDATE items SET next_attempt_at = ?3 WHERE id IN (SELECT id {due_scan}) AND id NOT IN rarray(?4)
                 RETURNING id, url"
            ))?;
            let mut rows = stmt.query(params![group, ts(now), ts(t), array(&paced_ids)])?;
            while let Some(r) = rows.next()? {
                deferred(r.get(0)?, &r.get::<_, String>(1)?, t);
                claim.deferred += 1;
            }
        }
        let moved: Vec<Value> =
            claim.paced.iter().flat_map(|(id, _, at)| [Value::Integer(*id), Value::Integer(ts_ceil(*at))]).collect();
        insert_rows(
            &tx,
            "UPDATE items SET next_attempt_at = v.column2 FROM (",
            ") AS v WHERE items.id = v.column1",
            2,
            &moved,
        )?;
        if let (Some(mut p), Some(pace)) = (pacing, pace) {
            claim.slots = (0..claim.items.len()).map(|_| p.next_slot()).collect();
            store_pace(&tx, &pace.key, &p)?;
        }
        claim.retry_at = plan.retry_at;
        if let Some(reservation) = claim.reservation {
            let units = claim.items.len() as i64;
            tx.execute(
                "UPDATE reservations SET lease_until = ?2, units = ?3 WHERE id = ?1",
                params![reservation, ts(lease_until(now, &claim.slots, self.lease)), units],
            )?;
            for rule in rules {
                add_usage(&tx, rule, units as u64)?;
                tx.execute(
                    "INSERT INTO reservation_rules (reservation_id, rule, window_key, units) VALUES (?1, ?2, ?3, ?4)",
                    params![reservation, rule.rule, rule.window, units],
                )?;
            }
        }
        tx.commit()?;
        Ok(claim)
    }

    fn take_units(&mut self, rules: &[RuleWindow], n: u64, now: DateTime<Utc>) -> Result<u64> {
        let tx = self.write()?;
        let mut granted = n;
        for rule in rules {
            if let Some(left) = usage_in(&tx, rule)?.remaining(rule, now) {
                granted = granted.min(left);
            }
        }
        if granted > 0 {
            for rule in rules {
                add_usage(&tx, rule, granted)?;
            }
        }
        tx.commit()?;
        Ok(granted)
    }

    fn record_inspections(&mut self, done: &Inspections) -> Result<()> {
        let tx = self.write()?;
        if done.unused > 0 {
            for w in done.windows {
                tx.execute(
                    "UPDATE budget_usage SET used = MAX(used - ?3, 0) WHERE rule = ?1 AND window_key = ?2",
                    params![w.rule, w.window, done.unused as i64],
                )?;
            }
        }
        for block in done.blocks {
            add_usage(&tx, &block.rule, 0)?;
            tx.execute(
                "INSERT INTO blocks (rule, until) VALUES (?1, ?2)
                 ON CONFLICT (rule) DO UPDATE SET until = MAX(until, excluded.until)",
                params![block.rule.rule, ts(block.until)],
            )?;
        }
        for (class, answers) in policy::inspections_by_class(done.answers) {
            let last = answers.last().expect("a class with answers");
            tx.prepare_cached(
                "INSERT INTO inspections
                     (property, class, count, last_at, last_reason, last_message, last_hint, last_status)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (property, class) DO UPDATE SET count = count + excluded.count,
                     last_reason = CASE WHEN excluded.last_at >= last_at THEN excluded.last_reason ELSE last_reason END,
                     last_message = CASE WHEN excluded.last_at >= last_at THEN excluded.last_message
                                         ELSE last_message END,
                     last_hint = CASE WHEN excluded.last_at >= last_at THEN excluded.last_hint ELSE last_hint END,
                     last_status = CASE WHEN excluded.last_at >= last_at THEN excluded.last_status ELSE last_status END,
                     last_at = MAX(last_at, excluded.last_at)",
            )?
            .execute(params![
                done.property,
                class.as_str(),
                answers.len() as i64,
                ts(last.at),
                last.reason.to_string(),
                last.message,
                last.hint,
                last.http_status
            ])?;
        }
        tx.commit()?;
        Ok(())
    }

    fn finish(&mut self, done: &Finish) -> Result<()> {
        let Finish { reservation, answers, blocks, reports, windows } = done;
        let tx = self.write()?;
        // Items answered before in this finish (Bing's halves of a batch):
        // their state is read before they move again.
        let mut answered: HashSet<i64> = HashSet::new();
        for answer in answers.iter().filter(|a| !a.items.is_empty()) {
            let group: i64 =
                tx.query_row("SELECT group_id FROM items WHERE id = ?1", [answer.items[0]], |r| r.get(0))?;
            let (state, next, fingerprint) = match &answer.next {
                NextStep::Accepted => ("accepted", None, None),
                NextStep::RetryAt(t) => ("queued", Some(*t), None),
                NextStep::Park { fingerprint } => ("parked", None, Some(fingerprint.as_str())),
            };
            let request = insert_request(&tx, &Recorded::answer(group, answer))?;
            let again = answer.items.iter().any(|id| answered.contains(id));
            let before = match again {
                true => states_of(&tx, &answer.items)?,
                // Claimed by this reservation and not answered yet: in flight.
                false => vec![(ItemState::InFlight, answer.items.len() as u64)],
            };
            answered.extend(&answer.items);
            // Every item the answer names, in one statement.
            tx.prepare_cached(
                "UPDATE items SET
                     state = ?2, next_attempt_at = ?3, reservation_id = NULL,
                     attempts = attempts + 1,
                     streak = CASE WHEN last_class IS ?4 THEN streak + 1 ELSE 1 END,
                     streak_started_at = CASE WHEN last_class IS ?4 AND streak_started_at IS NOT NULL
                                              THEN streak_started_at ELSE ?5 END,
                     last_class = ?4,
                     accepted_at = CASE WHEN ?2 = 'accepted' THEN ?5 ELSE accepted_at END,
                     parked_fingerprint = ?6, last_request_id = ?7
                 WHERE id IN rarray(?1)",
            )?
            .execute(params![
                array(&answer.items),
                state,
                next.map(ts),
                answer.class.as_str(),
                ts(answer.at),
                fingerprint,
                request
            ])?;
            let to = stored("items", "state", state)?;
            for (from, n) in before {
                counted(&tx, group, Some(from), Some(to), n)?;
            }
        }
        // What the engine did not count goes back, window by window.
        for w in windows {
            let back = policy::given_back(answers, w);
            if back > 0 {
                tx.execute(
                    "UPDATE budget_usage SET used = MAX(used - ?3, 0) WHERE rule = ?1 AND window_key = ?2",
                    params![w.rule, w.window, back as i64],
                )?;
            }
        }
        for r in reports {
            report_in(&tx, &r.window, r.remaining, r.at, Some(*reservation))?;
        }
        for block in blocks {
            add_usage(&tx, &block.rule, 0)?;
            tx.execute(
                "INSERT INTO blocks (rule, until) VALUES (?1, ?2)
                 ON CONFLICT (rule) DO UPDATE SET until = MAX(until, excluded.until)",
                params![block.rule.rule, ts(block.until)],
            )?;
        }
        tx.execute("DELETE FROM reservations WHERE id = ?1", [reservation])?;
        tx.commit()?;
        Ok(())
    }

    fn pace_tat(&mut self, key: &str) -> Result<Option<i64>> {
        Ok(self.conn.query_row("SELECT tat_ms FROM pacing WHERE key = ?1", [key], |r| r.get(0)).optional()?)
    }

    fn now(&mut self, now: Now, record: bool) -> Result<LedgerTime> {
        if !record {
            return ledger_time(&self.conn, now.local, false);
        }
        let tx = self.write()?;
        let time = ledger_time(&tx, now.local, true)?;
        tx.commit()?;
        Ok(time)
    }

    fn usage(&mut self, rule: &RuleWindow) -> Result<Usage> {
        usage_in(&self.conn, rule)
    }

    fn record_report(&mut self, rule: &RuleWindow, remaining: u64, now: DateTime<Utc>) -> Result<Report> {
        let tx = self.write()?;
        let report = report_in(&tx, rule, remaining, now, None)?;
        tx.commit()?;
        Ok(report)
    }
}
