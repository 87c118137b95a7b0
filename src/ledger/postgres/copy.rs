//! `ledger copy` on PostgreSQL: the whole ledger out, and a copy merged in.

use super::*;

impl Rows for PgLedger {
    fn schema_version(&mut self) -> Result<i64> {
        Ok(self.stored_version()?.unwrap_or(0))
    }

    fn export(&mut self, in_flight_ok: bool) -> Result<Dump> {
        self.transaction(|tx| export(tx, in_flight_ok))
    }

    fn import(&mut self, dump: &Dump) -> Result<Copied> {
        self.with_groups(|tx, groups| import(tx, groups, dump))
    }
}

pub(super) fn export(tx: &mut Transaction<'_>, in_flight_ok: bool) -> Result<Dump> {
    // A consistent snapshot of every table.
    tx.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")?;
    let in_flight: i64 = tx.query_one("SELECT COUNT(*) FROM reservations", &[])?.get(0);
    if in_flight > 0 && !in_flight_ok {
        return Err(in_flight_error(in_flight));
    }
    let mut dump = Dump::default();
    let mut item_index = HashMap::new();
    let mut last_request = Vec::new();
    for r in tx.query(
        "SELECT i.id, i.url, g.property, g.engine, g.target, i.state, i.action, i.lastmod, i.next_attempt_at,
             i.enqueued_at, i.attempts, i.last_class, i.streak, i.streak_started_at, i.accepted_at,
             i.parked_fingerprint, i.last_request_id
         FROM items i JOIN groups g ON g.id = i.group_id ORDER BY i.id",
        &[],
    )? {
        item_index.insert(r.get::<_, i64>(0), dump.items.len());
        last_request.push(r.get::<_, Option<i64>>(16));
        dump.items.push(DumpItem {
            url: r.get(1),
            group: stored_group(r.get(2), r.get(3), r.get(4))?,
            state: stored("items", "state", r.get(5))?,
            action: stored("items", "action", r.get(6))?,
            lastmod: r.get(7),
            next_attempt_at: r.get(8),
            enqueued_at: r.get(9),
            attempts: r.get::<_, i32>(10) as u32,
            last_class: stored_opt("items", "last_class", r.get(11))?,
            streak: r.get::<_, i32>(12) as u32,
            streak_started_at: r.get(13),
            accepted_at: r.get(14),
            parked_fingerprint: r.get(15),
            last_request: None,
        });
    }
    let mut dropped_index = HashMap::new();
    for r in tx.query(
        "SELECT d.id, d.url, g.property, g.engine, g.target, d.dropped_at
         FROM dropped_items d JOIN groups g ON g.id = d.group_id ORDER BY d.id",
        &[],
    )? {
        dropped_index.insert(r.get::<_, i64>(0), dump.dropped.len());
        dump.dropped.push(DumpDropped {
            url: r.get(1),
            group: stored_group(r.get(2), r.get(3), r.get(4))?,
            dropped_at: r.get(5),
        });
    }
    let mut request_index = HashMap::new();
    for r in tx.query(
        "SELECT r.id, g.property, g.engine, g.target, r.at, r.class, r.reason, r.message, r.http_status, r.body,
             r.retry_at, r.n, r.first_item, r.items
         FROM requests r JOIN groups g ON g.id = r.group_id ORDER BY r.at, r.id",
        &[],
    )? {
        let named = ids::named(r.get::<_, i32>(11).into(), r.get(12), r.get(13))?;
        let items: Vec<usize> = named.iter().filter_map(|id| item_index.get(id).copied()).collect();
        let dropped: Vec<usize> = named.iter().filter_map(|id| dropped_index.get(id).copied()).collect();
        if items.is_empty() && dropped.is_empty() {
            continue;
        }
        request_index.insert(r.get::<_, i64>(0), dump.requests.len());
        dump.requests.push(DumpRequest {
            group: stored_group(r.get(1), r.get(2), r.get(3))?,
            at: r.get(4),
            class: stored("requests", "class", r.get(5))?,
            reason: stored_reason(stored("requests", "class", r.get(5))?, r.get(6))?,
            message: r.get(7),
            response: StoredResponse { http_status: r.get::<_, Option<i32>>(8).map(|s| s as u16), body: r.get(9) },
            retry_at: r.get(10),
            items,
            dropped,
        });
    }
    for (item, request) in dump.items.iter_mut().zip(last_request) {
        item.last_request = request.and_then(|r| request_index.get(&r).copied());
    }
    dump.usage = tx
        .query(
            "SELECT rule, window_key, period, used, limit_value, resets_at, reported_at, reported_remaining
             FROM budget_usage ORDER BY rule COLLATE \"C\", window_key COLLATE \"C\"",
            &[],
        )?
        .iter()
        .map(|r| DumpUsage {
            rule: r.get(0),
            window: r.get(1),
            period: r.get(2),
            used: r.get::<_, i64>(3).max(0) as u64,
            limit: r.get::<_, Option<i64>>(4).map(|l| l.max(0) as u64),
            resets_at: r.get(5),
            reported_at: r.get(6),
            reported_remaining: r.get::<_, Option<i64>>(7).map(|l| l.max(0) as u64),
        })
        .collect();
    dump.blocks =
        tx.query("SELECT rule, until FROM blocks ORDER BY rule", &[])?.iter().map(|r| (r.get(0), r.get(1))).collect();
    dump.pacing =
        tx.query("SELECT key, tat_ms FROM pacing ORDER BY key", &[])?.iter().map(|r| (r.get(0), r.get(1))).collect();
    dump.credentials = tx
        .query("SELECT fingerprint, first_used_at FROM credentials ORDER BY fingerprint", &[])?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    dump.latest_run = tx.query_opt("SELECT latest_now FROM runs WHERE id = 1", &[])?.map(|r| r.get(0));
    for r in tx.query(
        "SELECT g.property, g.engine, g.target, m.reason, m.reminded_at
         FROM reminders m JOIN groups g ON g.id = m.group_id ORDER BY g.property, g.engine, g.target, m.reason",
        &[],
    )? {
        dump.reminders.push((stored_group(r.get(0), r.get(1), r.get(2))?, r.get(3), r.get(4)));
    }
    dump.sources = source_documents(tx)?;
    Ok(dump)
}

pub(super) fn import(tx: &mut Transaction<'_>, cache: &HashMap<GroupKey, i64>, dump: &Dump) -> Result<Copied> {
    let mut copied = Copied::default();
    let mut groups: HashMap<GroupKey, i64> = HashMap::new();
    let mut group_of = |tx: &mut Transaction<'_>, key: &GroupKey| -> Result<i64> {
        if let Some(id) = groups.get(key) {
            return Ok(*id);
        }
        let id = group_id_or_create(tx, cache, key)?;
        groups.insert(key.clone(), id);
        Ok(id)
    };
    // Each item by its group and URL: updated to the dump's state (unless in
    // flight here), or inserted.
    let mut item_groups = Vec::with_capacity(dump.items.len());
    for item in &dump.items {
        item_groups.push(group_of(tx, &item.group)?);
    }
    let batch: Vec<NewItem> = dump
        .items
        .iter()
        .map(|i| NewItem { url: i.url.clone(), group: i.group.clone(), action: i.action, lastmod: i.lastmod })
        .collect();
    let found = look_up(tx, &batch, &item_groups, true)?;
    let insert = tx.prepare(
        "INSERT INTO items (group_id, url_key, url, state, action, lastmod, next_attempt_at, enqueued_at, attempts,
             last_class, streak, streak_started_at, accepted_at, parked_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id",
    )?;
    let update = tx.prepare(
        "UPDATE items SET state = $2, action = $3, lastmod = $4, next_attempt_at = $5, enqueued_at = $6,
             attempts = $7, last_class = $8, streak = $9, streak_started_at = $10, accepted_at = $11,
             parked_fingerprint = $12
         WHERE id = $1 AND state <> 'in_flight'",
    )?;
    let mut ids = Vec::with_capacity(dump.items.len());
    // Items in flight here keep what they have.
    let mut written = Vec::with_capacity(dump.items.len());
    for ((item, found), group) in dump.items.iter().zip(found).zip(item_groups) {
        let (attempts, streak) = (item.attempts as i32, item.streak as i32);
        let class = item.last_class.map(|c| c.as_str());
        let values: [&(dyn pg::types::ToSql + Sync); 11] = [
            &item.state.as_str(),
            &item.action.as_str(),
            &item.lastmod,
            &item.next_attempt_at,
            &item.enqueued_at,
            &attempts,
            &class,
            &streak,
            &item.streak_started_at,
            &item.accepted_at,
            &item.parked_fingerprint,
        ];
        match found {
            Ok(existing) => {
                let mut all: Vec<&(dyn pg::types::ToSql + Sync)> = vec![&existing.id];
                all.extend_from_slice(&values);
                copied.items += tx.execute(&update, &all)?;
                ids.push(existing.id);
                written.push(existing.state != ItemState::InFlight);
            }
            Err(key) => {
                let mut all: Vec<&(dyn pg::types::ToSql + Sync)> = vec![&group, &key, &item.url];
                all.extend_from_slice(&values);
                ids.push(tx.query_one(&insert, &all)?.get(0));
                copied.items += 1;
                written.push(true);
            }
        }
    }
    // Dropped items: the same group, URL and time of the drop, or new (an
    // id from the items' sequence).
    let mut dropped_ids = Vec::with_capacity(dump.dropped.len());
    for d in &dump.dropped {
        let group = group_of(tx, &d.group)?;
        let key = url_key(&d.url);
        let same = tx.query_opt(
            "SELECT id FROM dropped_items WHERE group_id = $1 AND url_key = $2 AND url = $3 AND dropped_at = $4",
            &[&group, &key, &d.url, &d.dropped_at],
        )?;
        let id: i64 = match same {
            Some(row) => row.get(0),
            None => tx
                .query_one(
                    "INSERT INTO dropped_items (id, group_id, url_key, url, dropped_at)
                     VALUES (nextval(pg_get_serial_sequence('items', 'id')), $1, $2, $3, $4) RETURNING id",
                    &[&group, &key, &d.url, &d.dropped_at],
                )?
                .get(0),
        };
        dropped_ids.push(id);
    }
    // Requests the ledger does not have yet (the same group, time, outcome
    // and items).
    let mut request_ids = Vec::with_capacity(dump.requests.len());
    for r in &dump.requests {
        let group = group_of(tx, &r.group)?;
        let mut items: Vec<i64> =
            r.items.iter().map(|&i| ids[i]).chain(r.dropped.iter().map(|&i| dropped_ids[i])).collect();
        items.sort_unstable();
        let mut same = None;
        for row in tx.query(
            "SELECT id, n, first_item, items FROM requests WHERE group_id = $1 AND at = $2 AND class = $3
                 AND reason = $4 AND message = $5 AND retry_at IS NOT DISTINCT FROM $6",
            &[&group, &r.at, &r.class.as_str(), &r.reason.to_string(), &r.message, &r.retry_at],
        )? {
            if ids::named(row.get::<_, i32>(1).into(), row.get(2), row.get(3))? == items {
                same = Some(row.get::<_, i64>(0));
            }
        }
        let id = match same {
            Some(id) => id,
            None => {
                copied.attempts += 1;
                insert_request(tx, &Recorded::copied(group, r, &items))?
            }
        };
        request_ids.push(id);
    }
    let (pointed, pointers): (Vec<i64>, Vec<i64>) = dump
        .items
        .iter()
        .zip(&ids)
        .zip(&written)
        .filter_map(|((item, id), written)| item.last_request.filter(|_| *written).map(|r| (*id, request_ids[r])))
        .unzip();
    tx.execute(
        "UPDATE items SET last_request_id = p.request FROM unnest($1::bigint[], $2::bigint[]) AS p (id, request)
         WHERE items.id = p.id",
        &[&pointed, &pointers],
    )?;
    for u in &dump.usage {
        tx.execute(
            "INSERT INTO budget_usage AS b (rule, window_key, period, used, limit_value, resets_at, reported_at,
                 reported_remaining)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (rule, window_key) DO UPDATE SET used = GREATEST(b.used, excluded.used),
                 limit_value = excluded.limit_value, resets_at = excluded.resets_at,
                 reported_at = excluded.reported_at, reported_remaining = excluded.reported_remaining",
            &[
                &u.rule,
                &u.window,
                &u.period,
                &(u.used as i64),
                &u.limit.map(|l| l as i64),
                &u.resets_at,
                &u.reported_at,
                &u.reported_remaining.map(|r| r as i64),
            ],
        )?;
        copied.budget_windows += 1;
    }
    for (rule, until) in &dump.blocks {
        tx.execute(
            "INSERT INTO blocks (rule, until) VALUES ($1, $2)
             ON CONFLICT (rule) DO UPDATE SET until = GREATEST(blocks.until, excluded.until)",
            &[rule, until],
        )?;
    }
    for (key, tat) in &dump.pacing {
        tx.execute(
            "INSERT INTO pacing (key, tat_ms) VALUES ($1, $2)
             ON CONFLICT (key) DO UPDATE SET tat_ms = GREATEST(pacing.tat_ms, excluded.tat_ms)",
            &[key, tat],
        )?;
    }
    for (fingerprint, at) in &dump.credentials {
        tx.execute(
            "INSERT INTO credentials (fingerprint, first_used_at) VALUES ($1, $2)
             ON CONFLICT (fingerprint) DO UPDATE SET first_used_at = LEAST(credentials.first_used_at, excluded.first_used_at)",
            &[fingerprint, at],
        )?;
    }
    for (group, reason, at) in &dump.reminders {
        let group = group_of(tx, group)?;
        tx.execute(
            "INSERT INTO reminders (group_id, reason, reminded_at) VALUES ($1, $2, $3)
             ON CONFLICT (group_id, reason) DO UPDATE SET reminded_at = GREATEST(reminders.reminded_at, excluded.reminded_at)",
            &[&group, reason, &sec(*at)],
        )?;
    }
    store_source_documents(tx, &dump.sources, true)?;
    if let Some(latest) = dump.latest_run {
        tx.execute(
            "INSERT INTO runs (id, latest_now) VALUES (1, $1)
             ON CONFLICT (id) DO UPDATE SET latest_now = GREATEST(runs.latest_now, excluded.latest_now)",
            &[&latest],
        )?;
    }
    Ok(copied)
}
