//! `ledger copy` on SQLite: the ledger streamed out of one read snapshot (a
//! statement a table, a chunk at a time), and a copy merged in, in one
//! `BEGIN IMMEDIATE` transaction: each chunk staged in a temporary table
//! with multi-row inserts, each table merged with a few set-based
//! statements (`copy.sql`; the order is `ledger::copy`'s).

use super::{
    array, from_ts, ghost_urls, group_id_or_create, insert_rows, next_item_id, opt_ts, params, params_from_iter,
    recount, source_documents, source_failures, store_ghost_urls, store_source_documents, store_source_failures,
    stored, stored_group, stored_opt, stored_reason, ts, url_key, Connection, Copied, CopyDropped, CopyItem,
    CopyRequest, CopyUsage, Created, DateTime, GroupKey, HashMap, OptionalExtension, Result, Rows, SqliteLedger,
    StoredResponse, Utc, Value,
};
use crate::ledger::copy::{self, Chunk, Chunker, Clash, Import, Placed, Sink, StagedRequest};
use crate::ledger::item_ids;

/// The staging tables.
const STAGING: &str = include_str!("copy.sql");

impl Rows for SqliteLedger {
    fn schema_version(&mut self) -> Result<i64> {
        SqliteLedger::schema_version(self)
    }

    fn export(&mut self, in_flight_ok: bool, sink: &mut Sink) -> Result<()> {
        // A read transaction: one snapshot of the file (WAL).
        let tx = self.conn.transaction()?;
        let in_flight: i64 = tx.query_row("SELECT COUNT(*) FROM reservations", [], |r| r.get(0))?;
        if in_flight > 0 && !in_flight_ok {
            return Err(copy::in_flight_error(in_flight));
        }
        export_groups(&tx, sink)?;
        export_items(&tx, sink)?;
        export_dropped(&tx, sink)?;
        export_requests(&tx, sink)?;
        export_rest(&tx, sink)?;
        super::commit(tx)?;
        Ok(())
    }

    fn import(&mut self, feed: &mut copy::Feed) -> Result<Copied> {
        let (tx, groups) = self.begin_with_groups()?;
        tx.execute_batch(STAGING)?;
        let mut staging = Staging { conn: &tx, cache: groups, created: Vec::new() };
        let mut import = Import::new(&mut staging);
        feed(&mut |chunk| import.put(chunk))?;
        let copied = import.finish()?;
        let created = std::mem::take(&mut staging.created);
        tx.execute_batch("DROP TABLE temp.copy_items; DROP TABLE temp.copy_dropped; DROP TABLE temp.copy_requests;")?;
        super::commit(tx)?;
        self.groups.extend(created);
        Ok(copied)
    }
}

fn export_groups(tx: &Connection, sink: &mut Sink) -> Result<()> {
    let mut stmt = tx.prepare("SELECT id, property, engine, target, channel FROM groups ORDER BY id")?;
    let mut rows = stmt.query([])?;
    let mut groups = Vec::new();
    while let Some(r) = rows.next()? {
        groups.push((r.get(0)?, stored_group(r.get(1)?, &r.get::<_, String>(2)?, r.get(3)?, &r.get::<_, String>(4)?)?));
    }
    sink(Chunk::Groups(groups))
}

/// The staged items new to the target from `?1` on, with their state and
/// the target's ids of their last requests, as `batches::fill_from` reads
/// them.
const FRESH_ITEMS: &str = "SELECT c.dst, c.grp, c.url, c.action, c.lastmod, c.state, c.next_attempt_at,
         c.enqueued_at, c.attempts, c.last_class, c.streak, c.streak_started_at, c.accepted_at, c.parked_fingerprint,
         r.dst
     FROM copy_items c LEFT JOIN copy_requests r ON r.src = c.last_request
     WHERE c.fresh AND c.dst >= ?1 ORDER BY c.dst";

/// How many ids `export_items` reads at a time: its memory is a chunk's
/// items and the batch rows they fall in.
const EXPORT_CHUNK: usize = 10_000;

/// The items as spans × batch texts × `batches::lastmod_and_action`, in id
/// order, `EXPORT_CHUNK` ids at a time: each span's state columns for its
/// ids (a queued item a run of `in_flight` holds shown in flight, as the
/// items' view showed it), each URL from its batch row's texts.
fn export_items(tx: &Connection, sink: &mut Sink) -> Result<()> {
    let held = super::IdRuns::in_flight(tx)?;
    let mut stmt =
        tx.prepare(&format!("SELECT first, last, group_id, {} FROM spans ORDER BY first", super::spans::SPAN_COLUMNS))?;
    let mut rows = stmt.query([])?;
    let mut chunks = Chunker::new(sink, Chunk::Items);
    let mut texts = super::listing::Texts::default();
    let mut pending: Vec<(i64, std::rc::Rc<super::spans::SpanState>)> = Vec::with_capacity(EXPORT_CHUNK);
    let mut flush = |pending: &mut Vec<(i64, std::rc::Rc<super::spans::SpanState>)>,
                     chunks: &mut Chunker<'_, '_, CopyItem>|
     -> Result<()> {
        let ids: Vec<i64> = pending.iter().map(|(id, _)| *id).collect();
        for ((id, span), values) in pending.drain(..).zip(super::batches::lastmod_and_action(tx, &ids)?) {
            let Some((lastmod, action)) = values else {
                return Err(super::LedgerError::Invalid(format!("batches: item {id} is in no batch")));
            };
            let state = match held.holds(id) {
                true => super::ItemState::InFlight,
                false => stored("spans", "state", &span.state)?,
            };
            chunks.push(CopyItem {
                id,
                group: span.group,
                url: texts.url(tx, id)?,
                state,
                action,
                lastmod: opt_ts(lastmod),
                next_attempt_at: opt_ts(span.next_attempt_at),
                enqueued_at: from_ts(span.enqueued_at),
                attempts: span.attempts as u32,
                last_class: stored_opt("spans", "last_class", span.last_class.as_deref())?,
                streak: span.streak as u32,
                streak_started_at: opt_ts(span.streak_started_at),
                accepted_at: opt_ts(span.accepted_at),
                parked_fingerprint: span.parked_fingerprint.clone(),
                last_request: span.last_request_id,
            })?;
        }
        // The batch rows read so far are let go with their chunk.
        texts = super::listing::Texts::default();
        Ok(())
    };
    while let Some(r) = rows.next()? {
        let (first, last): (i64, i64) = (r.get(0)?, r.get(1)?);
        let span = std::rc::Rc::new(super::spans::SpanState::read(r, 2)?);
        for id in first..=last {
            pending.push((id, span.clone()));
            if pending.len() == EXPORT_CHUNK {
                flush(&mut pending, &mut chunks)?;
            }
        }
    }
    flush(&mut pending, &mut chunks)?;
    chunks.finish()
}

fn export_dropped(tx: &Connection, sink: &mut Sink) -> Result<()> {
    let mut stmt = tx.prepare("SELECT id, group_id, url, dropped_at FROM dropped_items ORDER BY id")?;
    let mut rows = stmt.query([])?;
    let mut chunks = Chunker::new(sink, Chunk::Dropped);
    while let Some(r) = rows.next()? {
        chunks.push(CopyDropped { id: r.get(0)?, group: r.get(1)?, url: r.get(2)?, dropped_at: from_ts(r.get(3)?) })?;
    }
    chunks.finish()
}

fn export_requests(tx: &Connection, sink: &mut Sink) -> Result<()> {
    let mut stmt = tx.prepare(
        "SELECT id, group_id, at, class, reason, message, http_status, body, retry_at, n, first_item, items
         FROM requests ORDER BY id",
    )?;
    let mut rows = stmt.query([])?;
    let mut chunks = Chunker::weighing(sink, Chunk::Requests, copy::request_bytes, copy::REQUEST_BYTES);
    while let Some(r) = rows.next()? {
        let class = stored("requests", "class", &r.get::<_, String>(3)?)?;
        chunks.push(CopyRequest {
            id: r.get(0)?,
            group: r.get(1)?,
            at: from_ts(r.get(2)?),
            class,
            reason: stored_reason(class, &r.get::<_, String>(4)?)?,
            message: r.get(5)?,
            response: StoredResponse { http_status: r.get(6)?, body: r.get(7)? },
            retry_at: opt_ts(r.get(8)?),
            items: item_ids::named(r.get(9)?, r.get(10)?, r.get(11)?)?,
        })?;
    }
    chunks.finish()
}

/// The small tables: one row a rule window, block, pace, credential,
/// reminder, sitemap or Ghost post.
fn export_rest(tx: &Connection, sink: &mut Sink) -> Result<()> {
    let mut stmt = tx.prepare(
        "SELECT rule, window_key, period, used, limit_value, resets_at, reported_at, reported_remaining
         FROM budget_usage ORDER BY rule, window_key",
    )?;
    let usage = stmt.query_map([], |r| {
        Ok(CopyUsage {
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
    sink(Chunk::Usage(usage.collect::<rusqlite::Result<_>>()?))?;
    let timed = |sql: &str| -> Result<Vec<(String, DateTime<Utc>)>> {
        let mut stmt = tx.prepare(sql)?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, from_ts(r.get(1)?))))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    };
    sink(Chunk::Blocks(timed("SELECT rule, until FROM blocks ORDER BY rule")?))?;
    let mut stmt = tx.prepare("SELECT key, tat_ms FROM pacing ORDER BY key")?;
    let pacing = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
    sink(Chunk::Pacing(pacing))?;
    sink(Chunk::Credentials(timed("SELECT fingerprint, first_used_at FROM credentials ORDER BY fingerprint")?))?;
    let mut stmt = tx.prepare(
        "SELECT m.group_id, m.reason, m.reminded_at FROM reminders m JOIN groups g ON g.id = m.group_id
         ORDER BY g.property, g.engine, g.target, m.reason",
    )?;
    let reminders = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, from_ts(r.get(2)?))))?;
    sink(Chunk::Reminders(reminders.collect::<rusqlite::Result<_>>()?))?;
    sink(Chunk::Sources(source_documents(tx)?))?;
    let mut chunks = Chunker::new(sink, Chunk::GhostUrls);
    for url in ghost_urls(tx)? {
        chunks.push(url)?;
    }
    chunks.finish()?;
    sink(Chunk::SourceFailures(source_failures(tx, None)?))?;
    let latest: Option<i64> = tx.query_row("SELECT latest_now FROM runs WHERE id = 1", [], |r| r.get(0)).optional()?;
    match latest {
        Some(at) => sink(Chunk::Latest(from_ts(at))),
        None => Ok(()),
    }
}

/// This ledger as a copy's target, in the copy's transaction.
struct Staging<'a> {
    conn: &'a Connection,
    cache: &'a mut HashMap<GroupKey, i64>,
    /// Groups this copy made: cached once it commits.
    created: Created,
}

impl Staging<'_> {
    /// The last id a new item of this copy took (none: 0): the items are
    /// written last, and a dropped item's id is never an item's.
    fn numbered(&self) -> Result<i64> {
        Ok(self.conn.query_row("SELECT COALESCE(MAX(dst), 0) FROM copy_items WHERE fresh", [], |r| r.get(0))?)
    }
}

impl copy::Stage for Staging<'_> {
    fn groups(&mut self, groups: &[(i64, GroupKey)]) -> Result<HashMap<i64, i64>> {
        let mut ids = HashMap::with_capacity(groups.len());
        for (src, key) in groups {
            ids.insert(*src, group_id_or_create(self.conn, self.cache, &mut self.created, key)?);
        }
        Ok(ids)
    }

    fn stage_items(&mut self, items: &[CopyItem], groups: &HashMap<i64, i64>) -> Result<()> {
        let mut values = Vec::with_capacity(items.len() * 16);
        for i in items {
            values.extend([
                Value::Integer(i.id),
                Value::Integer(copy::group_of(groups, i.group)?),
                Value::Integer(url_key(&i.url)),
                Value::Text(i.url.clone()),
                Value::Text(i.state.as_str().into()),
                Value::Text(i.action.as_str().into()),
                i.lastmod.map(ts).into(),
                i.next_attempt_at.map(ts).into(),
                Value::Integer(ts(i.enqueued_at)),
                Value::Integer(i.attempts.into()),
                i.last_class.map(|c| c.as_str().to_string()).into(),
                Value::Integer(i.streak.into()),
                i.streak_started_at.map(ts).into(),
                i.accepted_at.map(ts).into(),
                i.parked_fingerprint.clone().into(),
                i.last_request.into(),
            ]);
        }
        let head = "INSERT INTO copy_items (src, grp, url_key, url, state, action, lastmod, next_attempt_at,
             enqueued_at, attempts, last_class, streak, streak_started_at, accepted_at, parked_fingerprint, last_request)";
        insert_rows(self.conn, head, "", 16, &values)?;
        Ok(())
    }

    /// Each staged item matched to the target's item of the same URL in
    /// its group by hash (`batches::find_ids`, a span holding the id found),
    /// a group's staged items 10,000 at a time: given the source's state
    /// unless the target's is in flight (its own, or held by a run of
    /// `in_flight`).
    fn match_items(&mut self) -> Result<()> {
        let conn = self.conn;
        let held = super::IdRuns::in_flight(conn)?;
        let groups: Vec<i64> = conn
            .prepare("SELECT DISTINCT grp FROM copy_items ORDER BY grp")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let mut staged =
            conn.prepare("SELECT src, url FROM copy_items WHERE grp = ?1 AND src > ?2 ORDER BY src LIMIT 10000")?;
        let mut spans = super::spans::Cursor::new(conn)?;
        for group in groups {
            let mut after = i64::MIN;
            loop {
                let chunk: Vec<(i64, String)> = staged
                    .query_map([group, after], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                let Some(last) = chunk.last() else { break };
                after = last.0;
                let mut hashes: Vec<(u128, i64)> =
                    chunk.iter().map(|(src, url)| (crate::ledger::batches::url_hash(url), *src)).collect();
                hashes.sort_unstable();
                let sought: Vec<u128> = hashes.iter().map(|h| h.0).collect();
                let mut matched = Vec::new();
                for ((_, src), id) in hashes.iter().zip(super::batches::find_ids(conn, group, &sought)?) {
                    let Some(id) = id else { continue };
                    let Some(span) = spans.at(id)? else { continue };
                    let in_flight = span.state == "in_flight" || held.holds(id);
                    matched.extend([Value::Integer(*src), Value::Integer(id), Value::Integer(i64::from(!in_flight))]);
                }
                insert_rows(
                    conn,
                    "UPDATE copy_items SET dst = v.column2, written = v.column3 FROM (",
                    ") AS v WHERE copy_items.src = v.column1",
                    3,
                    &matched,
                )?;
            }
        }
        Ok(())
    }

    /// None: a URL is matched by its hash, and two URLs of one group cannot
    /// hold one place (schema 12 keys nothing on `url_key`).
    fn clashes(&mut self) -> Result<Vec<Clash>> {
        Ok(Vec::new())
    }

    /// None: no clash asks (`clashes`).
    fn held(&mut self, _group: i64, _key: i64) -> Result<Option<(i64, String, bool)>> {
        Ok(None)
    }

    /// None: no clash asks (`clashes`).
    fn staged(&mut self, _group: i64, _key: i64) -> Result<Vec<i64>> {
        Ok(Vec::new())
    }

    fn place(&mut self, src: i64, placed: &Placed) -> Result<()> {
        match *placed {
            Placed::Same { id, written } => self
                .conn
                .execute("UPDATE copy_items SET dst = ?2, written = ?3 WHERE src = ?1", params![src, id, written])?,
            Placed::At(key) => self.conn.execute("UPDATE copy_items SET url_key = ?2 WHERE src = ?1", [src, key])?,
        };
        Ok(())
    }

    fn number_items(&mut self) -> Result<()> {
        // After the last item's or dropped item's id, in the source's order
        // (a copy keeps the items' order; its batch rows are cut wherever
        // the source's ids change group).
        self.conn.execute(
            "UPDATE copy_items SET dst = ?1 + n.k - 1, written = 1, fresh = 1
             FROM (SELECT src, row_number() OVER (ORDER BY src) AS k FROM copy_items WHERE dst IS NULL) AS n
             WHERE copy_items.src = n.src",
            [next_item_id(self.conn)?],
        )?;
        Ok(())
    }

    fn write_items(&mut self) -> Result<u64> {
        // The items the copy writes: those it matched, but for those in
        // flight (in the target's own state, or held by a reservation).
        let held = super::IdRuns::in_flight(self.conn)?;
        let matched: Vec<(i64, String, Option<i64>)> = self
            .conn
            .prepare("SELECT dst, action, lastmod FROM copy_items WHERE written AND NOT fresh ORDER BY dst")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut spans = super::spans::Cursor::new(self.conn)?;
        let mut updated = Vec::with_capacity(matched.len());
        let mut values = Vec::with_capacity(matched.len());
        for (id, action, lastmod) in matched {
            if held.holds(id) || spans.at(id)?.is_none_or(|s| s.state == "in_flight") {
                continue;
            }
            updated.push(id);
            values.push((id, (lastmod, stored("copy_items", "action", &action)?)));
        }
        drop(spans);
        super::batches::set_changes(self.conn, &values)?;
        super::spans::write_apart(
            self.conn,
            &updated,
            "UPDATE OR FAIL spans SET state = c.state, next_attempt_at = c.next_attempt_at,
                 enqueued_at = c.enqueued_at, attempts = c.attempts, last_class = c.last_class, streak = c.streak,
                 streak_started_at = c.streak_started_at, accepted_at = c.accepted_at,
                 parked_fingerprint = c.parked_fingerprint,
                 last_request_id = COALESCE(c.request, spans.last_request_id)
             FROM (SELECT copy_items.*, r.dst AS request FROM copy_items
                   LEFT JOIN copy_requests r ON r.src = copy_items.last_request) AS c
             WHERE spans.first = c.dst AND c.dst IN rarray(?1)",
            &[&array(&updated)],
        )?;
        // The new items as batch rows and spans (they take the ids after
        // every other item's), cut where the source's order changes group.
        let (first, inserted): (Option<i64>, i64) =
            self.conn.query_row("SELECT MIN(dst), COUNT(*) FROM copy_items WHERE fresh", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
        if let Some(first) = first {
            super::batches::fill_from(self.conn, FRESH_ITEMS, first)?;
        }
        Ok(updated.len() as u64 + inserted as u64)
    }

    fn stage_dropped(&mut self, dropped: &[CopyDropped], groups: &HashMap<i64, i64>) -> Result<()> {
        let mut values = Vec::with_capacity(dropped.len() * 5);
        for d in dropped {
            let group = copy::group_of(groups, d.group)?;
            let (key, at) = (url_key(&d.url), ts(d.dropped_at));
            values.extend([Value::Integer(d.id), Value::Integer(group), Value::Integer(key), d.url.clone().into()]);
            values.push(Value::Integer(at));
        }
        insert_rows(self.conn, "INSERT INTO copy_dropped (src, grp, url_key, url, dropped_at)", "", 5, &values)?;
        Ok(())
    }

    fn merge_dropped(&mut self) -> Result<()> {
        self.conn.execute(
            "UPDATE copy_dropped SET dst = d.id FROM dropped_items AS d
             WHERE d.group_id = copy_dropped.grp AND d.url_key = copy_dropped.url_key AND d.url = copy_dropped.url
                 AND d.dropped_at = copy_dropped.dropped_at",
            [],
        )?;
        self.conn.execute(
            "UPDATE copy_dropped SET dst = ?1 + n.k - 1, fresh = 1
             FROM (SELECT src, row_number() OVER (ORDER BY src) AS k FROM copy_dropped WHERE dst IS NULL) AS n
             WHERE copy_dropped.src = n.src",
            [next_item_id(self.conn)?.max(self.numbered()? + 1)],
        )?;
        self.conn.execute(
            "INSERT INTO dropped_items (id, group_id, url_key, url, dropped_at)
             SELECT dst, grp, url_key, url, dropped_at FROM copy_dropped WHERE fresh ORDER BY dst",
            [],
        )?;
        Ok(())
    }

    fn targets(&mut self, ids: &[i64]) -> Result<HashMap<i64, i64>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT src, dst FROM copy_dropped WHERE src IN rarray(?1)
             UNION ALL SELECT src, dst FROM copy_items WHERE src IN rarray(?1)",
        )?;
        let rows = stmt.query_map([array(ids)], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn stage_requests(&mut self, requests: &[StagedRequest]) -> Result<()> {
        let mut values = Vec::with_capacity(requests.len() * 13);
        for s in requests {
            let r = s.request;
            values.extend([Value::Integer(r.id), Value::Integer(s.group), Value::Integer(ts(r.at))]);
            values.extend([r.class.as_str().to_string().into(), r.reason.to_string().into(), r.message.clone().into()]);
            values.extend([r.response.http_status.map(i64::from).into(), r.response.body.clone().into()]);
            values.extend([r.retry_at.map(ts).into(), Value::Integer(s.n), Value::Integer(s.first)]);
            values.extend([Value::Integer(s.last), s.items.clone().into()]);
        }
        let head = "INSERT INTO copy_requests (src, grp, at, class, reason, message, http_status, body, retry_at, n,
             first_item, last_item, items)";
        insert_rows(self.conn, head, "", 13, &values)?;
        Ok(())
    }

    fn merge_requests(&mut self) -> Result<u64> {
        self.conn.execute(
            "UPDATE copy_requests SET dst = (
                 SELECT r.id FROM requests r
                 WHERE r.group_id = copy_requests.grp AND r.at = copy_requests.at AND r.class = copy_requests.class
                     AND r.reason = copy_requests.reason AND r.message = copy_requests.message
                     AND r.retry_at IS copy_requests.retry_at AND r.n = copy_requests.n
                     AND r.first_item = copy_requests.first_item AND r.items IS copy_requests.items
                 ORDER BY r.id DESC LIMIT 1)",
            [],
        )?;
        let next: i64 = self.conn.query_row("SELECT COALESCE(MAX(id), 0) + 1 FROM requests", [], |r| r.get(0))?;
        self.conn.execute(
            "UPDATE copy_requests SET dst = ?1 + n.k - 1, fresh = 1
             FROM (SELECT src, row_number() OVER (ORDER BY at, src) AS k FROM copy_requests WHERE dst IS NULL) AS n
             WHERE copy_requests.src = n.src",
            [next],
        )?;
        let inserted = self.conn.execute(
            "INSERT INTO requests (id, group_id, at, class, reason, message, http_status, body, retry_at, n,
                 first_item, last_item, items)
             SELECT dst, grp, at, class, reason, message, http_status, body, retry_at, n, first_item, last_item, items
             FROM copy_requests WHERE fresh ORDER BY dst",
            [],
        )?;
        Ok(inserted as u64)
    }

    fn merge_usage(&mut self, usage: &[CopyUsage]) -> Result<u64> {
        let mut stmt = self.conn.prepare(
            "INSERT INTO budget_usage (rule, window_key, period, used, limit_value, resets_at, reported_at,
                 reported_remaining)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (rule, window_key) DO UPDATE SET used = MAX(used, excluded.used),
                 limit_value = excluded.limit_value, resets_at = excluded.resets_at,
                 reported_at = excluded.reported_at, reported_remaining = excluded.reported_remaining",
        )?;
        for u in usage {
            let (limit, remaining) = (u.limit.map(|l| l as i64), u.reported_remaining.map(|r| r as i64));
            let at = (ts(u.resets_at), u.reported_at.map(ts));
            stmt.execute(params![u.rule, u.window, u.period, u.used as i64, limit, at.0, at.1, remaining])?;
        }
        Ok(usage.len() as u64)
    }

    fn merge_rest(&mut self, chunk: &Chunk, groups: &HashMap<i64, i64>) -> Result<()> {
        let (sql, rows): (&str, Vec<Vec<Value>>) = match chunk {
            Chunk::Blocks(rows) => (
                "INSERT INTO blocks (rule, until) VALUES (?1, ?2)
                 ON CONFLICT (rule) DO UPDATE SET until = MAX(until, excluded.until)",
                rows.iter().map(|(rule, until)| vec![rule.clone().into(), ts(*until).into()]).collect(),
            ),
            Chunk::Pacing(rows) => (
                "INSERT INTO pacing (key, tat_ms) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET tat_ms = MAX(tat_ms, excluded.tat_ms)",
                rows.iter().map(|(key, tat)| vec![key.clone().into(), (*tat).into()]).collect(),
            ),
            Chunk::Credentials(rows) => (
                "INSERT INTO credentials (fingerprint, first_used_at) VALUES (?1, ?2)
                 ON CONFLICT (fingerprint) DO UPDATE SET first_used_at = MIN(first_used_at, excluded.first_used_at)",
                rows.iter().map(|(fingerprint, at)| vec![fingerprint.clone().into(), ts(*at).into()]).collect(),
            ),
            Chunk::Reminders(rows) => (
                "INSERT INTO reminders (group_id, reason, reminded_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (group_id, reason) DO UPDATE SET reminded_at = MAX(reminded_at, excluded.reminded_at)",
                rows.iter()
                    .map(|(g, why, at)| {
                        Ok(vec![copy::group_of(groups, *g)?.into(), why.clone().into(), ts(*at).into()])
                    })
                    .collect::<Result<_>>()?,
            ),
            Chunk::Latest(at) => (
                "INSERT INTO runs (id, latest_now) VALUES (1, ?1)
                 ON CONFLICT (id) DO UPDATE SET latest_now = MAX(latest_now, excluded.latest_now)",
                vec![vec![ts(*at).into()]],
            ),
            Chunk::Sources(documents) => return store_source_documents(self.conn, documents, true),
            Chunk::GhostUrls(urls) => return store_ghost_urls(self.conn, urls),
            Chunk::SourceFailures(failures) => return store_source_failures(self.conn, failures),
            _ => return Ok(()),
        };
        let mut stmt = self.conn.prepare(sql)?;
        for row in rows {
            stmt.execute(params_from_iter(row))?;
        }
        Ok(())
    }

    /// The kept counts, counted again (the merge's inserts and updates are
    /// not counted by the statements).
    fn finish(&mut self) -> Result<()> {
        recount(self.conn)
    }
}
