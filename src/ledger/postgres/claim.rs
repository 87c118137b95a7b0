//! Budgets on PostgreSQL: the ledger's clock (the server's), claims with
//! the rule windows locked in one order, answers, units, reports and
//! reconciling.

use super::*;

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

/// Records, in the caller's transaction, that the engine says `remaining`
/// units are left in a reported rule's window (`policy::reported_limit`),
/// the window's row locked: in flight is what every reservation but
/// `answered` (the one whose answer said it, being finished) has counted in
/// the window.
pub(super) fn report_in(
    tx: &mut impl GenericClient,
    rule: &RuleWindow,
    remaining: u64,
    now: DateTime<Utc>,
    answered: Option<i64>,
) -> Result<Report> {
    lock_window(tx, rule)?;
    let in_flight: i64 = tx
        .query_one(
            "SELECT COALESCE(SUM(units), 0)::bigint FROM reservation_rules
             WHERE rule = $1 AND window_key = $2 AND reservation_id IS DISTINCT FROM $3",
            &[&rule.rule, &rule.window, &answered],
        )?
        .get(0);
    let used = usage_in(tx, rule)?.used;
    let limit = policy::reported_limit(used, remaining, in_flight.max(0) as u64);
    tx.execute(
        "UPDATE budget_usage SET limit_value = $3, reported_at = $4, reported_remaining = $5
         WHERE rule = $1 AND window_key = $2",
        &[&rule.rule, &rule.window, &(limit as i64), &now, &(remaining as i64)],
    )?;
    Ok(Report { at: now, remaining, limit })
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

/// The ids of reservations whose owner is gone, locked (others skip them).
pub(super) fn stale_reservations(
    tx: &mut impl GenericClient,
    now: DateTime<Utc>,
    me: &Owner,
    lock: bool,
) -> Result<Vec<i64>> {
    let sql = format!(
        "SELECT id, host, pid, started, lease_until FROM reservations ORDER BY id{}",
        if lock { " FOR UPDATE SKIP LOCKED" } else { "" }
    );
    let rows = tx.query(&sql, &[])?;
    Ok(rows.iter().filter(|r| !owner_of(r, 1).may_be_alive(me, r.get(4), now)).map(|r| r.get::<_, i64>(0)).collect())
}

impl Budget for PgLedger {
    fn stale_reservations(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<u64> {
        self.transaction(|tx| Ok(stale_reservations(tx, now, me, false)?.len() as u64))
    }

    fn reconcile(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<Reconciled> {
        let now = sec(now);
        self.transaction(|tx| {
            let stale = stale_reservations(tx, now, me, true)?;
            let mut done = Reconciled::default();
            for id in stale {
                let rows = tx.query(
                    "SELECT id, group_id FROM items WHERE reservation_id = $1 AND state = 'in_flight' ORDER BY id",
                    &[&id],
                )?;
                if let Some(first) = rows.first() {
                    let items: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                    let group: i64 = first.get(1);
                    let request = insert_request(tx, &Recorded::interrupted(group, now, &items))?;
                    tx.execute(
                        "UPDATE items SET state = 'queued', next_attempt_at = $2, reservation_id = NULL,
                             attempts = attempts + 1, last_class = 'transient', last_request_id = $3
                         WHERE reservation_id = $1 AND state = 'in_flight'",
                        &[&id, &now, &request],
                    )?;
                }
                tx.execute("DELETE FROM reservations WHERE id = $1", &[&id])?;
                done.reservations += 1;
                done.items += rows.len() as u64;
            }
            Ok(done)
        })
    }

    fn now(&mut self, now: Now, record: bool) -> Result<LedgerTime> {
        self.transaction(|tx| ledger_time(tx, now.shift, record))
    }

    fn claim(
        &mut self,
        group: &GroupKey,
        spec: &ClaimSpec,
        me: &Owner,
        deferred: &mut dyn FnMut(i64, &str, DateTime<Utc>),
    ) -> Result<Claim> {
        let lease = self.lease;
        let (claim, moved) = self.with_groups(|tx, groups| claim_once(tx, groups, group, spec, me, lease))?;
        for (id, url, at) in &moved {
            deferred(*id, url, *at);
        }
        Ok(claim)
    }

    fn take_units(&mut self, rules: &[RuleWindow], n: u64, now: DateTime<Utc>) -> Result<u64> {
        self.transaction(|tx| {
            let mut sorted: Vec<&RuleWindow> = rules.iter().collect();
            sorted.sort_by(|a, b| (&a.rule, &a.window).cmp(&(&b.rule, &b.window)));
            let mut granted = n;
            for rule in &sorted {
                lock_window(tx, rule)?;
                if let Some(left) = usage_in(tx, rule)?.remaining(rule, now) {
                    granted = granted.min(left);
                }
            }
            if granted > 0 {
                for rule in &sorted {
                    if !reserve(tx, rule, granted, now)? {
                        return Err(LedgerError::Retry);
                    }
                }
            }
            Ok(granted)
        })
    }

    fn record_inspections(&mut self, done: &Inspections) -> Result<()> {
        self.transaction(|tx| {
            // Budget rows first, in rule order, as a claim takes them.
            if done.unused > 0 {
                let mut windows: Vec<&RuleWindow> = done.windows.iter().collect();
                windows.sort_by(|a, b| (&a.rule, &a.window).cmp(&(&b.rule, &b.window)));
                for w in windows {
                    tx.execute(
                        "UPDATE budget_usage SET used = GREATEST(used - $3, 0) WHERE rule = $1 AND window_key = $2",
                        &[&w.rule, &w.window, &(done.unused as i64)],
                    )?;
                }
            }
            let mut blocks: Vec<&Block> = done.blocks.iter().collect();
            blocks.sort_by(|a, b| (&a.rule.rule, &a.rule.window).cmp(&(&b.rule.rule, &b.rule.window)));
            for block in blocks {
                add_usage(tx, &block.rule, 0)?;
                tx.execute(
                    "INSERT INTO blocks (rule, until) VALUES ($1, $2)
                     ON CONFLICT (rule) DO UPDATE SET until = GREATEST(blocks.until, excluded.until)",
                    &[&block.rule.rule, &sec(block.until)],
                )?;
            }
            for (class, answers) in policy::inspections_by_class(done.answers) {
                let last = answers.last().expect("a class with answers");
                tx.execute(
                    "INSERT INTO inspections AS i
                         (property, class, count, last_at, last_reason, last_message, last_hint, last_status)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                     ON CONFLICT (property, class) DO UPDATE SET count = i.count + excluded.count,
                         last_reason = CASE WHEN excluded.last_at >= i.last_at THEN excluded.last_reason
                                            ELSE i.last_reason END,
                         last_message = CASE WHEN excluded.last_at >= i.last_at THEN excluded.last_message
                                             ELSE i.last_message END,
                         last_hint = CASE WHEN excluded.last_at >= i.last_at THEN excluded.last_hint
                                          ELSE i.last_hint END,
                         last_status = CASE WHEN excluded.last_at >= i.last_at THEN excluded.last_status
                                            ELSE i.last_status END,
                         last_at = GREATEST(i.last_at, excluded.last_at)",
                    &[
                        &done.property,
                        &class.as_str(),
                        &(answers.len() as i64),
                        &sec(last.at),
                        &last.reason.to_string(),
                        &last.message,
                        &last.hint,
                        &last.http_status.map(i32::from),
                    ],
                )?;
            }
            Ok(())
        })
    }

    fn finish(&mut self, done: &Finish) -> Result<()> {
        let Finish { reservation, answers, blocks, reports, windows } = done;
        self.transaction(|tx| {
            // Budget rows first, in rule order, as a claim takes them (then
            // the items): two transactions never wait for each other in a
            // circle. What the engine did not count goes back, window by
            // window; then the engine's remainders are recorded.
            let mut windows: Vec<&RuleWindow> = windows.iter().collect();
            windows.sort_by(|a, b| (&a.rule, &a.window).cmp(&(&b.rule, &b.window)));
            for w in windows {
                let back = policy::given_back(answers, w);
                if back > 0 {
                    tx.execute(
                        "UPDATE budget_usage SET used = GREATEST(used - $3, 0) WHERE rule = $1 AND window_key = $2",
                        &[&w.rule, &w.window, &(back as i64)],
                    )?;
                }
            }
            let mut reports: Vec<&Remainder> = reports.iter().collect();
            reports.sort_by(|a, b| (&a.window.rule, &a.window.window).cmp(&(&b.window.rule, &b.window.window)));
            for r in reports {
                report_in(tx, &r.window, r.remaining, sec(r.at), Some(*reservation))?;
            }
            let mut blocks: Vec<&Block> = blocks.iter().collect();
            blocks.sort_by(|a, b| (&a.rule.rule, &a.rule.window).cmp(&(&b.rule.rule, &b.rule.window)));
            for block in blocks {
                add_usage(tx, &block.rule, 0)?;
                tx.execute(
                    "INSERT INTO blocks (rule, until) VALUES ($1, $2)
                     ON CONFLICT (rule) DO UPDATE SET until = GREATEST(blocks.until, excluded.until)",
                    &[&block.rule.rule, &sec(block.until)],
                )?;
            }
            for answer in answers.iter().filter(|a| !a.items.is_empty()) {
                let group: i64 = tx.query_one("SELECT group_id FROM items WHERE id = $1", &[&answer.items[0]])?.get(0);
                let (state, next, fingerprint) = match &answer.next {
                    NextStep::Accepted => ("accepted", None, None),
                    NextStep::RetryAt(t) => ("queued", Some(sec(*t)), None),
                    NextStep::Park { fingerprint } => ("parked", None, Some(fingerprint.as_str())),
                };
                let request = insert_request(tx, &Recorded::answer(group, answer))?;
                // Every item the answer names, in one statement.
                tx.execute(
                    "UPDATE items SET
                         state = $2, next_attempt_at = $3, reservation_id = NULL,
                         attempts = attempts + 1,
                         streak = CASE WHEN last_class IS NOT DISTINCT FROM $4 THEN streak + 1 ELSE 1 END,
                         streak_started_at = CASE WHEN last_class IS NOT DISTINCT FROM $4
                                                       AND streak_started_at IS NOT NULL
                                                  THEN streak_started_at ELSE $5 END,
                         last_class = $4,
                         accepted_at = CASE WHEN $2 = 'accepted' THEN $5 ELSE accepted_at END,
                         parked_fingerprint = $6, last_request_id = $7
                     WHERE id = ANY($1)",
                    &[&answer.items, &state, &next, &answer.class.as_str(), &sec(answer.at), &fingerprint, &request],
                )?;
            }
            tx.execute("DELETE FROM reservations WHERE id = $1", &[reservation])?;
            Ok(())
        })
    }

    fn pace_tat(&mut self, key: &str) -> Result<Option<i64>> {
        // A pace row written with 0 by a claim is one without a time yet.
        self.transaction(|tx| {
            Ok(tx
                .query_opt("SELECT tat_ms FROM pacing WHERE key = $1", &[&key])?
                .map(|r| r.get::<_, i64>(0))
                .filter(|t| *t > 0))
        })
    }

    fn usage(&mut self, rule: &RuleWindow) -> Result<Usage> {
        self.transaction(|tx| usage_in(tx, rule))
    }

    fn record_report(&mut self, rule: &RuleWindow, remaining: u64, now: DateTime<Utc>) -> Result<Report> {
        let now = sec(now);
        self.transaction(|tx| report_in(tx, rule, remaining, now, None))
    }
}

/// Due items a claim moved to when budget frees up: id, URL, time.
pub(super) type Deferred = Vec<(i64, String, DateTime<Utc>)>;

/// One claim, in the caller's transaction. Returns the claim and the items
/// deferred (told to the caller once the transaction has committed).
pub(super) fn claim_once(
    tx: &mut Transaction<'_>,
    cache: &HashMap<GroupKey, i64>,
    group: &GroupKey,
    spec: &ClaimSpec,
    me: &Owner,
    lease: TimeDelta,
) -> Result<(Claim, Deferred)> {
    let ClaimSpec { windows, max_items, pace, now } = *spec;
    let now = ledger_time(tx, now.shift, true)?.now;
    let rules = windows.at(now);
    let rules = &rules[..];
    let now_s = sec(now);
    let mut claim = Claim { now, windows: rules.to_vec(), ..Claim::default() };
    let mut deferred = Vec::new();
    let Some(group) = group_id(tx, cache, group)? else { return Ok((claim, deferred)) };
    // Lock the rule windows (in one order for every runner), then read them.
    let mut sorted: Vec<&RuleWindow> = rules.iter().collect();
    sorted.sort_by(|a, b| (&a.rule, &a.window).cmp(&(&b.rule, &b.window)));
    for rule in &sorted {
        lock_window(tx, rule)?;
    }
    let usages = rules.iter().map(|r| usage_in(tx, r)).collect::<Result<Vec<_>>>()?;
    let pacing = match pace {
        Some(p) => {
            tx.execute("INSERT INTO pacing (key, tat_ms) VALUES ($1, 0) ON CONFLICT DO NOTHING", &[&p.key])?;
            let tat: i64 = tx.query_one("SELECT tat_ms FROM pacing WHERE key = $1 FOR UPDATE", &[&p.key])?.get(0);
            Some(PaceState::new(p, now, (tat > 0).then_some(tat), rules))
        }
        None => None,
    };
    // Due items are counted only as far as the plan can tell apart: past the
    // budget and the batch, more makes no difference.
    let budget = rules.iter().zip(&usages).filter_map(|(r, u)| u.remaining(r, now)).min();
    let cap = budget.map_or(max_items, |b| (b as usize).max(max_items)).saturating_add(1);
    let due_count: i64 = tx
        .query_one(
            "SELECT COUNT(*) FROM (SELECT 1 FROM items WHERE group_id = $1 AND state = 'queued' AND next_attempt_at <= $2
                 LIMIT $3) AS due",
            &[&group, &now_s, &(cap as i64)],
        )?
        .get(0);
    let plan = ClaimPlan::new(rules, &usages, due_count.max(0) as usize, max_items, pacing.as_ref(), now);
    // Due items another runner holds are skipped, never waited for.
    let due = "SELECT id FROM items WHERE group_id = $1 AND state = 'queued' AND next_attempt_at <= $2";
    if plan.take > 0 {
        let reservation: i64 = tx
            .query_one(
                "INSERT INTO reservations (host, pid, started, created_at, lease_until, units)
                 VALUES ($1, $2, $3, $4, $4, 0) RETURNING id",
                &[&me.host, &(me.pid as i64), &(me.started as i64), &now_s],
            )?
            .get(0);
        // The first `take` due items, in order, marked in flight: one statement.
        let rows = tx.query(
            &format!(
                "UPDATE items SET state = 'in_flight', reservation_id = $3
                 WHERE id IN ({due} ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
                 RETURNING id, url, attempts, last_class, streak, streak_started_at, action, next_attempt_at"
            ),
            &[&group, &now_s, &reservation, &(plan.take as i64)],
        )?;
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
            taken.push((r.get::<_, Option<DateTime<Utc>>>(7), item));
        }
        taken.sort_by_key(|(at, item)| (*at, item.id));
        claim.items = taken.into_iter().map(|(_, item)| item).collect();
        if claim.items.is_empty() {
            // Other runners hold every due item: nothing to send.
            tx.execute("DELETE FROM reservations WHERE id = $1", &[&reservation])?;
        } else {
            claim.reservation = Some(reservation);
        }
    }
    // The next due items wait for their paced slot, each its own.
    let paced = plan.paced_until.saturating_sub(plan.take);
    if let (Some(p), true) = (&pacing, paced > 0) {
        let rows = tx.query(
            "SELECT id, url FROM items WHERE group_id = $1 AND state = 'queued' AND next_attempt_at <= $2
             ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED",
            &[&group, &now_s, &(paced as i64)],
        )?;
        for (position, r) in rows.iter().enumerate() {
            claim.paced.push((r.get(0), r.get(1), p.estimate(plan.take + position)));
        }
    }
    // The rest wait until the budget frees up: one statement.
    if let Some(t) = plan.retry_at {
        let paced_ids: Vec<i64> = claim.paced.iter().map(|p| p.0).collect();
        for r in tx.query(
            &format!(
                "UPDATE items SET next_attempt_at = $3
                 WHERE id IN ({due} AND id <> ALL($4) FOR UPDATE SKIP LOCKED) RETURNING id, url"
            ),
            &[&group, &now_s, &sec(t), &paced_ids],
        )? {
            deferred.push((r.get(0), r.get(1), t));
        }
        claim.deferred = deferred.len() as u64;
    }
    if !claim.paced.is_empty() {
        let ids: Vec<i64> = claim.paced.iter().map(|p| p.0).collect();
        let at: Vec<DateTime<Utc>> =
            claim.paced.iter().map(|(_, _, at)| DateTime::from_timestamp(ts_ceil(*at), 0).unwrap_or(*at)).collect();
        tx.execute(
            "UPDATE items SET next_attempt_at = moved.at FROM unnest($1::bigint[], $2::timestamptz[]) AS moved (id, at)
             WHERE items.id = moved.id",
            &[&ids, &at],
        )?;
    }
    if let (Some(mut p), Some(pace)) = (pacing, pace) {
        claim.slots = (0..claim.items.len()).map(|_| p.next_slot()).collect();
        tx.execute("UPDATE pacing SET tat_ms = $2 WHERE key = $1", &[&pace.key, &p.tat_ms()])?;
    }
    claim.retry_at = plan.retry_at;
    if let Some(reservation) = claim.reservation {
        let units = claim.items.len() as u64;
        for rule in &sorted {
            // The windows are locked and were read above: this cannot fail
            // unless the ledger was changed behind the locks.
            if !reserve(tx, rule, units, now)? {
                return Err(LedgerError::Invalid(format!("the budget of {} changed during a claim", rule.rule)));
            }
            tx.execute(
                "INSERT INTO reservation_rules (reservation_id, rule, window_key, units) VALUES ($1, $2, $3, $4)",
                &[&reservation, &rule.rule, &rule.window, &(units as i64)],
            )?;
        }
        tx.execute(
            "UPDATE reservations SET lease_until = $2, units = $3 WHERE id = $1",
            &[&reservation, &sec(lease_until(now, &claim.slots, lease)), &(units as i64)],
        )?;
    }
    Ok((claim, deferred))
}

pub(super) fn lock_window(tx: &mut impl GenericClient, rule: &RuleWindow) -> Result<()> {
    add_usage(tx, rule, 0)?;
    tx.query_one(
        "SELECT used FROM budget_usage WHERE rule = $1 AND window_key = $2 FOR UPDATE",
        &[&rule.rule, &rule.window],
    )?;
    Ok(())
}

/// The ledger's clock: the database server's (shifted like this machine's
/// by `INDEXQ_NOW`), never earlier than the latest instant recorded; with
/// `record`, recorded as the latest (the row locked until commit, so that
/// claims see each other's instants in order).
pub(super) fn ledger_time(tx: &mut impl GenericClient, shift: TimeDelta, record: bool) -> Result<LedgerTime> {
    let server: DateTime<Utc> = tx.query_one("SELECT clock_timestamp()", &[])?.get(0);
    let clock = server + shift;
    let lock = if record { " FOR UPDATE" } else { "" };
    let latest: Option<DateTime<Utc>> =
        tx.query_opt(&format!("SELECT latest_now FROM runs WHERE id = 1{lock}"), &[])?.map(|r| r.get(0));
    let now = ledger_now(clock, latest);
    if record && latest.is_none_or(|l| sec(now) > l) {
        tx.execute(
            "INSERT INTO runs (id, latest_now) VALUES (1, $1)
             ON CONFLICT (id) DO UPDATE SET latest_now = GREATEST(runs.latest_now, excluded.latest_now)",
            &[&sec(now)],
        )?;
    }
    Ok(LedgerTime { now, latest, clock })
}
