//! `ledger copy` on SQLite: the whole ledger out, and a copy merged in.

use super::*;

impl Rows for SqliteLedger {
    fn schema_version(&mut self) -> Result<i64> {
        SqliteLedger::schema_version(self)
    }

    fn export(&mut self, in_flight_ok: bool) -> Result<Dump> {
        let tx = self.begin()?;
        let in_flight: i64 = tx.query_row("SELECT COUNT(*) FROM reservations", [], |r| r.get(0))?;
        if in_flight > 0 && !in_flight_ok {
            return Err(in_flight_error(in_flight));
        }
        let mut dump = Dump::default();
        let mut item_index = HashMap::new();
        let mut last_request = Vec::new();
        {
            let mut stmt = tx.prepare(
                "SELECT i.id, i.url, g.property, g.engine, g.target, i.state, i.action, i.lastmod, i.next_attempt_at,
                     i.enqueued_at, i.attempts, i.last_class, i.streak, i.streak_started_at, i.accepted_at,
                     i.parked_fingerprint, i.last_request_id
                 FROM items i JOIN groups g ON g.id = i.group_id ORDER BY i.id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let engine: String = r.get(3)?;
                let (state, action): (String, String) = (r.get(5)?, r.get(6)?);
                let class: Option<String> = r.get(11)?;
                item_index.insert(r.get::<_, i64>(0)?, dump.items.len());
                last_request.push(r.get::<_, Option<i64>>(16)?);
                dump.items.push(DumpItem {
                    url: r.get(1)?,
                    group: stored_group(r.get(2)?, &engine, r.get(4)?)?,
                    state: stored("items", "state", &state)?,
                    action: stored("items", "action", &action)?,
                    lastmod: opt_ts(r.get(7)?),
                    next_attempt_at: opt_ts(r.get(8)?),
                    enqueued_at: from_ts(r.get(9)?),
                    attempts: r.get(10)?,
                    last_class: stored_opt("items", "last_class", class.as_deref())?,
                    streak: r.get(12)?,
                    streak_started_at: opt_ts(r.get(13)?),
                    accepted_at: opt_ts(r.get(14)?),
                    parked_fingerprint: r.get(15)?,
                    last_request: None,
                });
            }
        }
        let mut dropped_index = HashMap::new();
        {
            let mut stmt = tx.prepare(
                "SELECT d.id, d.url, g.property, g.engine, g.target, d.dropped_at
                 FROM dropped_items d JOIN groups g ON g.id = d.group_id ORDER BY d.id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                dropped_index.insert(r.get::<_, i64>(0)?, dump.dropped.len());
                dump.dropped.push(DumpDropped {
                    url: r.get(1)?,
                    group: stored_group(r.get(2)?, &r.get::<_, String>(3)?, r.get(4)?)?,
                    dropped_at: from_ts(r.get(5)?),
                });
            }
        }
        {
            let mut request_index = HashMap::new();
            let mut stmt = tx.prepare(
                "SELECT r.id, g.property, g.engine, g.target, r.at, r.class, r.reason, r.message, r.http_status,
                     r.body, r.retry_at, r.n, r.first_item, r.items
                 FROM requests r JOIN groups g ON g.id = r.group_id ORDER BY r.at, r.id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let named = ids::named(r.get(11)?, r.get(12)?, r.get(13)?)?;
                let items: Vec<usize> = named.iter().filter_map(|id| item_index.get(id).copied()).collect();
                let dropped: Vec<usize> = named.iter().filter_map(|id| dropped_index.get(id).copied()).collect();
                if items.is_empty() && dropped.is_empty() {
                    continue;
                }
                let (engine, class): (String, String) = (r.get(2)?, r.get(5)?);
                let class = stored("requests", "class", &class)?;
                request_index.insert(r.get::<_, i64>(0)?, dump.requests.len());
                dump.requests.push(DumpRequest {
                    group: stored_group(r.get(1)?, &engine, r.get(3)?)?,
                    at: from_ts(r.get(4)?),
                    class,
                    reason: stored_reason(class, &r.get::<_, String>(6)?)?,
                    message: r.get(7)?,
                    response: StoredResponse { http_status: r.get(8)?, body: r.get(9)? },
                    retry_at: opt_ts(r.get(10)?),
                    items,
                    dropped,
                });
            }
            for (item, request) in dump.items.iter_mut().zip(last_request) {
                item.last_request = request.and_then(|r| request_index.get(&r).copied());
            }
        }
        {
            let mut stmt = tx.prepare(
                "SELECT rule, window_key, period, used, limit_value, resets_at, reported_at, reported_remaining
                 FROM budget_usage ORDER BY rule, window_key",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok(DumpUsage {
                    rule: r.get(0)?,
                    window: r.get(1)?,
                    period: r.get(2)?,
                    used: r.get::<_, i64>(3)?.max(0) as u64,
                    limit: r.get::<_, Option<i64>>(4)?.map(|l| l.max(0) as u64),
                    resets_at: from_ts(r.get(5)?),
                    reported_at: opt_ts(r.get(6)?),
                    reported_remaining: r.get::<_, Option<i64>>(7)?.map(|l| l.max(0) as u64),
                })
            })?;
            dump.usage = rows.collect::<rusqlite::Result<_>>()?;
            let mut stmt = tx.prepare("SELECT rule, until FROM blocks ORDER BY rule")?;
            dump.blocks =
                stmt.query_map([], |r| Ok((r.get(0)?, from_ts(r.get(1)?))))?.collect::<rusqlite::Result<_>>()?;
            let mut stmt = tx.prepare("SELECT key, tat_ms FROM pacing ORDER BY key")?;
            dump.pacing = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
            let mut stmt = tx.prepare("SELECT fingerprint, first_used_at FROM credentials ORDER BY fingerprint")?;
            dump.credentials =
                stmt.query_map([], |r| Ok((r.get(0)?, from_ts(r.get(1)?))))?.collect::<rusqlite::Result<_>>()?;
            let mut stmt = tx.prepare(
                "SELECT g.property, g.engine, g.target, m.reason, m.reminded_at
                 FROM reminders m JOIN groups g ON g.id = m.group_id ORDER BY g.property, g.engine, g.target, m.reason",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let group = stored_group(r.get(0)?, &r.get::<_, String>(1)?, r.get(2)?)?;
                dump.reminders.push((group, r.get(3)?, from_ts(r.get(4)?)));
            }
        }
        dump.sources = source_documents(&tx)?;
        dump.latest_run =
            opt_ts(tx.query_row("SELECT latest_now FROM runs WHERE id = 1", [], |r| r.get(0)).optional()?);
        tx.commit()?;
        Ok(dump)
    }

    fn import(&mut self, dump: &Dump) -> Result<Copied> {
        let tx = write(&mut self.conn)?;
        let mut copied = Copied::default();
        let mut created = Vec::new();
        let mut ids = Vec::with_capacity(dump.items.len());
        {
            // Each item by its group and URL: updated to the dump's state
            // (unless in flight here), or inserted.
            let mut batch_groups = Vec::with_capacity(dump.items.len());
            for item in &dump.items {
                batch_groups.push(group_id_or_create(&tx, &mut self.groups, &mut created, &item.group)?);
            }
            let batch: Vec<NewItem> = dump
                .items
                .iter()
                .map(|i| NewItem { url: i.url.clone(), group: i.group.clone(), action: i.action, lastmod: i.lastmod })
                .collect();
            let found = look_up(&tx, &batch, &batch_groups)?;
            // New items (and dropped ones) take the ids after the last.
            let mut next_id = next_item_id(&tx)?;
            let mut insert = tx.prepare(
                "INSERT INTO items (id, group_id, url_key, url, state, action, lastmod, next_attempt_at, enqueued_at,
                     attempts, last_class, streak, streak_started_at, accepted_at, parked_fingerprint)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )?;
            let mut update = tx.prepare(
                "UPDATE items SET state = ?2, action = ?3, lastmod = ?4, next_attempt_at = ?5, enqueued_at = ?6,
                     attempts = ?7, last_class = ?8, streak = ?9, streak_started_at = ?10, accepted_at = ?11,
                     parked_fingerprint = ?12
                 WHERE id = ?1 AND state != 'in_flight'",
            )?;
            // Items in flight here keep what they have.
            let mut written = Vec::with_capacity(dump.items.len());
            for ((item, found), group) in dump.items.iter().zip(found).zip(batch_groups) {
                let values = params![
                    item.state.as_str(),
                    item.action.as_str(),
                    item.lastmod.map(ts),
                    item.next_attempt_at.map(ts),
                    ts(item.enqueued_at),
                    item.attempts,
                    item.last_class.map(|c| c.as_str()),
                    item.streak,
                    item.streak_started_at.map(ts),
                    item.accepted_at.map(ts),
                    item.parked_fingerprint,
                ];
                match found {
                    Ok(existing) => {
                        let mut all: Vec<&dyn rusqlite::ToSql> = vec![&existing.id];
                        all.extend_from_slice(values);
                        copied.items += update.execute(all.as_slice())? as u64;
                        ids.push(existing.id);
                        written.push(existing.state != ItemState::InFlight);
                    }
                    Err(key) => {
                        let mut all: Vec<&dyn rusqlite::ToSql> = vec![&next_id, &group, &key, &item.url];
                        all.extend_from_slice(values);
                        insert.execute(all.as_slice())?;
                        copied.items += 1;
                        ids.push(next_id);
                        next_id += 1;
                        written.push(true);
                    }
                }
            }
            // Dropped items: the same group, URL and time of the drop, or new.
            let mut dropped_ids = Vec::with_capacity(dump.dropped.len());
            {
                let mut same = tx.prepare(
                    "SELECT id FROM dropped_items WHERE group_id = ?1 AND url_key = ?2 AND url = ?3 AND dropped_at = ?4",
                )?;
                let mut keep = tx.prepare(
                    "INSERT INTO dropped_items (id, group_id, url_key, url, dropped_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                for d in &dump.dropped {
                    let group = group_id_or_create(&tx, &mut self.groups, &mut created, &d.group)?;
                    let key = params![group, url_key(&d.url), d.url, ts(d.dropped_at)];
                    let id = match same.query_row(key, |r| r.get(0)).optional()? {
                        Some(id) => id,
                        None => {
                            keep.execute(params![next_id, group, url_key(&d.url), d.url, ts(d.dropped_at)])?;
                            next_id += 1;
                            next_id - 1
                        }
                    };
                    dropped_ids.push(id);
                }
            }
            // Requests the ledger does not have yet (the same group, time,
            // outcome and items).
            let mut known = tx.prepare(
                "SELECT id, n, first_item, items FROM requests WHERE group_id = ?1 AND at = ?2 AND class = ?3
                     AND reason = ?4 AND message = ?5 AND retry_at IS ?6",
            )?;
            let mut request_ids = Vec::with_capacity(dump.requests.len());
            for r in &dump.requests {
                let group = group_id_or_create(&tx, &mut self.groups, &mut created, &r.group)?;
                let mut items: Vec<i64> =
                    r.items.iter().map(|&i| ids[i]).chain(r.dropped.iter().map(|&i| dropped_ids[i])).collect();
                items.sort_unstable();
                let key =
                    params![group, ts(r.at), r.class.as_str(), r.reason.to_string(), r.message, r.retry_at.map(ts)];
                let mut same = None;
                let mut rows = known.query(key)?;
                while let Some(row) = rows.next()? {
                    if ids::named(row.get(1)?, row.get(2)?, row.get(3)?)? == items {
                        same = Some(row.get::<_, i64>(0)?);
                    }
                }
                drop(rows);
                let id = match same {
                    Some(id) => id,
                    None => {
                        copied.attempts += 1;
                        insert_request(&tx, &Recorded::copied(group, r, &items))?
                    }
                };
                request_ids.push(id);
            }
            // An item points at its last request.
            let mut point = tx.prepare("UPDATE items SET last_request_id = ?2 WHERE id = ?1")?;
            for ((item, id), written) in dump.items.iter().zip(&ids).zip(&written) {
                if let Some(index) = item.last_request.filter(|_| *written) {
                    point.execute(params![id, request_ids[index]])?;
                }
            }
            let mut usage = tx.prepare(
                "INSERT INTO budget_usage (rule, window_key, period, used, limit_value, resets_at, reported_at,
                     reported_remaining)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (rule, window_key) DO UPDATE SET used = MAX(used, excluded.used),
                     limit_value = excluded.limit_value, resets_at = excluded.resets_at,
                     reported_at = excluded.reported_at, reported_remaining = excluded.reported_remaining",
            )?;
            for u in &dump.usage {
                usage.execute(params![
                    u.rule,
                    u.window,
                    u.period,
                    u.used as i64,
                    u.limit.map(|l| l as i64),
                    ts(u.resets_at),
                    u.reported_at.map(ts),
                    u.reported_remaining.map(|r| r as i64)
                ])?;
                copied.budget_windows += 1;
            }
            for (rule, until) in &dump.blocks {
                tx.execute(
                    "INSERT INTO blocks (rule, until) VALUES (?1, ?2)
                     ON CONFLICT (rule) DO UPDATE SET until = MAX(until, excluded.until)",
                    params![rule, ts(*until)],
                )?;
            }
            for (key, tat) in &dump.pacing {
                tx.execute(
                    "INSERT INTO pacing (key, tat_ms) VALUES (?1, ?2)
                     ON CONFLICT (key) DO UPDATE SET tat_ms = MAX(tat_ms, excluded.tat_ms)",
                    params![key, tat],
                )?;
            }
            for (fingerprint, at) in &dump.credentials {
                tx.execute(
                    "INSERT INTO credentials (fingerprint, first_used_at) VALUES (?1, ?2)
                     ON CONFLICT (fingerprint) DO UPDATE SET first_used_at = MIN(first_used_at, excluded.first_used_at)",
                    params![fingerprint, ts(*at)],
                )?;
            }
            for (group, reason, at) in &dump.reminders {
                let group = group_id_or_create(&tx, &mut self.groups, &mut created, group)?;
                tx.execute(
                    "INSERT INTO reminders (group_id, reason, reminded_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (group_id, reason) DO UPDATE SET reminded_at = MAX(reminded_at, excluded.reminded_at)",
                    params![group, reason, ts(*at)],
                )?;
            }
            store_source_documents(&tx, &dump.sources, true)?;
            if let Some(latest) = dump.latest_run {
                tx.execute(
                    "INSERT INTO runs (id, latest_now) VALUES (1, ?1)
                     ON CONFLICT (id) DO UPDATE SET latest_now = MAX(latest_now, excluded.latest_now)",
                    [ts(latest)],
                )?;
            }
            // The kept counts, recounted once (inserted rows are not counted
            // by the triggers).
            recount(&tx)?;
        }
        tx.commit()?;
        self.groups.extend(created);
        Ok(copied)
    }
}
