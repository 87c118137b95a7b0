//! `ledger copy` on PostgreSQL: the ledger streamed out of one snapshot
//! (`REPEATABLE READ`; a cursor a table, a chunk at a time), and a copy
//! merged in, in one transaction: each chunk staged in a temporary table
//! with one binary `COPY … FROM STDIN`, each table merged with a few
//! set-based statements (`copy.sql`; the order is `ledger::copy`'s). A copy
//! runs on the caller's thread with no statement or idle timeout: its
//! statements take as long as the ledger is big (the lock timeout and the
//! connection's keepalives still hold).

use super::schema::ID_BLOCK;
use super::session::Session;
use super::spans::{write_spans, Runs};
use super::{
    ghost_urls, group_id_or_create, hold_groups, pg, retrying, source_documents, source_failures, store_ghost_urls,
    store_source_documents, store_source_failures, stored, stored_group, stored_opt, stored_reason, url_key, Copied,
    CopyDropped, CopyItem, CopyRequest, CopyUsage, DateTime, GroupKey, HashMap, LedgerError, PgLedger, Result, Row,
    Rows, StoredResponse, Transaction, Utc,
};
use crate::ledger::batches::url_hash;
use crate::ledger::copy::{self, Chunk, Chunker, Clash, Import, Placed, Sink, StagedRequest, CHUNK as ROWS};
use crate::ledger::{item_ids, look_up};
use pg::binary_copy::BinaryCopyInWriter;
use pg::types::{ToSql, Type};
use std::collections::HashSet;

/// The staging tables.
const STAGING: &str = include_str!("copy.sql");

/// An item updated by a copy, over its span's columns (the span of this
/// one item, `spans.first`): the staged values, its last request the
/// target's id of the source's, or its own where the source names none
/// the copy brought.
const COPIED: &str = "(state, next_attempt_at, enqueued_at, attempts, last_class, streak, streak_started_at,
         accepted_at, parked_fingerprint, last_request_id) =
     (SELECT c.state, c.next_attempt_at, c.enqueued_at, c.attempts, c.last_class, c.streak, c.streak_started_at,
             c.accepted_at, c.parked_fingerprint, COALESCE(r.dst, spans.last_request_id)
      FROM copy_items c LEFT JOIN copy_requests r ON r.src = c.last_request WHERE c.dst = spans.first)";

impl Rows for PgLedger {
    fn schema_version(&mut self) -> Result<i64> {
        Ok(self.stored_version()?.unwrap_or(0))
    }

    fn export(&mut self, in_flight_ok: bool, sink: &mut Sink) -> Result<()> {
        self.copying("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", |tx| {
            let in_flight: i64 = tx.query_one("SELECT COUNT(*) FROM reservations", &[])?.get(0);
            if in_flight > 0 && !in_flight_ok {
                return Err(copy::in_flight_error(in_flight));
            }
            let groups = tx.query("SELECT id, property, engine, target, channel FROM groups ORDER BY id", &[])?;
            let groups = groups.iter().map(|r| Ok((r.get(0), stored_group(r.get(1), r.get(2), r.get(3), r.get(4))?)));
            sink(Chunk::Groups(groups.collect::<Result<_>>()?))?;
            export_items(tx, sink)?;
            export_dropped(tx, sink)?;
            export_requests(tx, sink)?;
            export_rest(tx, sink)
        })
    }

    fn import(&mut self, feed: &mut copy::Feed) -> Result<Copied> {
        let cache = self.groups.clone();
        self.copying(STAGING, |tx| {
            // Which items here are in flight stays as read (`hold_groups`).
            hold_groups(tx, None)?;
            let mut staging = Staging { tx, cache: &cache };
            let mut import = Import::new(&mut staging);
            feed(&mut |chunk| import.put(chunk))?;
            import.finish()
        })
    }
}

impl PgLedger {
    /// One transaction of a copy, run on this thread (`ledger copy` is no
    /// async command), `first` its first statements.
    fn copying<T>(
        &mut self,
        first: &str,
        mut f: impl FnMut(&mut Session<'_, Transaction<'_>>) -> Result<T>,
    ) -> Result<T> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(LedgerError::Invalid("a ledger copy runs outside the async runtime".into()));
        }
        let check = self.client.checks_spans();
        let (client, statements) = self.client.live()?;
        retrying(|| {
            let mut tx = client.transaction()?;
            tx.batch_execute(first)?;
            tx.batch_execute("SET LOCAL statement_timeout = 0; SET LOCAL idle_in_transaction_session_timeout = 0")?;
            let value = f(&mut Session::new(&mut tx, statements))?;
            super::commit(tx, check)?;
            Ok(value)
        })
    }
}

/// Each row `sql` selects, through a cursor: `size` rows in memory at a time.
fn each_row(
    tx: &mut Session<'_, Transaction<'_>>,
    sql: &str,
    size: usize,
    mut f: impl FnMut(&Row) -> Result<()>,
) -> Result<()> {
    let cursor = tx.client.bind(sql, &[])?;
    loop {
        let rows = tx.client.query_portal(&cursor, size as i32)?;
        if rows.is_empty() {
            return Ok(());
        }
        rows.iter().try_for_each(&mut f)?;
    }
}

/// The items in id order, a batch row at a time (`rows::expand` of its
/// ids: their spans, texts and changes), so that memory holds one batch
/// (at most 10,000 items).
fn export_items(tx: &mut Session<'_, Transaction<'_>>, sink: &mut Sink) -> Result<()> {
    let mut chunks = Chunker::new(sink, Chunk::Items);
    let batches: Vec<(i64, i32)> = tx
        .query("SELECT first_id, n FROM batches ORDER BY first_id", &[])?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for (first, n) in batches {
        let ids: Vec<i64> = (first..first + i64::from(n)).collect();
        for i in super::rows::expand(tx, &ids)? {
            chunks.push(CopyItem {
                id: i.id,
                group: i.group_id,
                url: i.url,
                state: stored("spans", "state", &i.state)?,
                action: i.action,
                lastmod: i.lastmod,
                next_attempt_at: i.next_attempt_at,
                enqueued_at: i.enqueued_at,
                attempts: i.attempts as u32,
                last_class: stored_opt("spans", "last_class", i.last_class.as_deref())?,
                streak: i.streak as u32,
                streak_started_at: i.streak_started_at,
                accepted_at: i.accepted_at,
                parked_fingerprint: i.parked_fingerprint,
                last_request: i.last_request_id,
            })?;
        }
    }
    chunks.finish()
}

fn export_dropped(tx: &mut Session<'_, Transaction<'_>>, sink: &mut Sink) -> Result<()> {
    let mut chunks = Chunker::new(sink, Chunk::Dropped);
    let sql = "SELECT id, group_id, url, dropped_at FROM dropped_items ORDER BY id";
    each_row(tx, sql, ROWS, |r| {
        chunks.push(CopyDropped { id: r.get(0), group: r.get(1), url: r.get(2), dropped_at: r.get(3) })
    })?;
    chunks.finish()
}

fn export_requests(tx: &mut Session<'_, Transaction<'_>>, sink: &mut Sink) -> Result<()> {
    let mut chunks = Chunker::weighing(sink, Chunk::Requests, copy::request_bytes, copy::REQUEST_BYTES);
    let sql = "SELECT id, group_id, at, class, reason, message, http_status, body, retry_at, n, first_item, items
               FROM requests ORDER BY id";
    // A request may be large: a hundred at a time.
    each_row(tx, sql, 100, |r| {
        let class = stored("requests", "class", r.get(3))?;
        chunks.push(CopyRequest {
            id: r.get(0),
            group: r.get(1),
            at: r.get(2),
            class,
            reason: stored_reason(class, r.get(4))?,
            message: r.get(5),
            response: StoredResponse { http_status: r.get::<_, Option<i32>>(6).map(|s| s as u16), body: r.get(7) },
            retry_at: r.get(8),
            items: item_ids::named(r.get::<_, i32>(9).into(), r.get(10), r.get(11))?,
        })
    })?;
    chunks.finish()
}

/// The small tables: one row a rule window, block, pace, credential,
/// reminder or sitemap.
fn export_rest(tx: &mut Session<'_, Transaction<'_>>, sink: &mut Sink) -> Result<()> {
    let usage = tx.query(
        "SELECT rule, window_key, period, used, limit_value, resets_at, reported_at, reported_remaining
         FROM budget_usage ORDER BY rule COLLATE \"C\", window_key COLLATE \"C\"",
        &[],
    )?;
    sink(Chunk::Usage(
        usage
            .iter()
            .map(|r| CopyUsage {
                rule: r.get(0),
                window: r.get(1),
                period: r.get(2),
                used: r.get::<_, i64>(3).max(0) as u64,
                limit: r.get::<_, Option<i64>>(4).map(|l| l.max(0) as u64),
                resets_at: r.get(5),
                reported_at: r.get(6),
                reported_remaining: r.get::<_, Option<i64>>(7).map(|l| l.max(0) as u64),
            })
            .collect(),
    ))?;
    let pairs = |tx: &mut Session<'_, Transaction<'_>>, sql: &str| -> Result<Vec<(String, DateTime<Utc>)>> {
        Ok(tx.query(sql, &[])?.iter().map(|r| (r.get(0), r.get(1))).collect())
    };
    sink(Chunk::Blocks(pairs(tx, "SELECT rule, until FROM blocks ORDER BY rule")?))?;
    let pacing = tx.query("SELECT key, tat_ms FROM pacing ORDER BY key", &[])?;
    sink(Chunk::Pacing(pacing.iter().map(|r| (r.get(0), r.get(1))).collect()))?;
    sink(Chunk::Credentials(pairs(tx, "SELECT fingerprint, first_used_at FROM credentials ORDER BY fingerprint")?))?;
    let reminders = tx.query(
        "SELECT m.group_id, m.reason, m.reminded_at FROM reminders m JOIN groups g ON g.id = m.group_id
         ORDER BY g.property, g.engine, g.target, m.reason",
        &[],
    )?;
    sink(Chunk::Reminders(reminders.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()))?;
    sink(Chunk::Sources(source_documents(tx)?))?;
    let mut chunks = Chunker::new(sink, Chunk::GhostUrls);
    for url in ghost_urls(tx)? {
        chunks.push(url)?;
    }
    chunks.finish()?;
    sink(Chunk::SourceFailures(source_failures(tx, None)?))?;
    match tx.query_opt("SELECT latest_now FROM runs WHERE id = 1", &[])? {
        Some(r) => sink(Chunk::Latest(r.get(0))),
        None => Ok(()),
    }
}

/// This ledger as a copy's target, in the copy's transaction.
struct Staging<'t, 's, 'c> {
    tx: &'t mut Session<'s, Transaction<'c>>,
    cache: &'t HashMap<GroupKey, i64>,
}

impl Staging<'_, '_, '_> {
    /// `rows` into a staging table with one binary COPY.
    fn copy_in(&mut self, into: &str, types: &[Type], rows: &[Vec<&(dyn ToSql + Sync)>]) -> Result<()> {
        let mut writer =
            BinaryCopyInWriter::new(self.tx.client.copy_in(&format!("COPY {into} FROM STDIN (FORMAT binary)"))?, types);
        for row in rows {
            writer.write(row)?;
        }
        writer.finish()?;
        Ok(())
    }
}

impl copy::Stage for Staging<'_, '_, '_> {
    fn groups(&mut self, groups: &[(i64, GroupKey)]) -> Result<HashMap<i64, i64>> {
        groups.iter().map(|(src, key)| Ok((*src, group_id_or_create(self.tx, self.cache, key)?))).collect()
    }

    fn stage_items(&mut self, items: &[CopyItem], groups: &HashMap<i64, i64>) -> Result<()> {
        let keyed: Vec<(i64, i64, i32, i32, Option<&str>)> = items
            .iter()
            .map(|i| {
                let counts = (i.attempts as i32, i.streak as i32);
                Ok((
                    copy::group_of(groups, i.group)?,
                    url_key(&i.url),
                    counts.0,
                    counts.1,
                    i.last_class.map(|c| c.as_str()),
                ))
            })
            .collect::<Result<_>>()?;
        let (state, action): (Vec<&str>, Vec<&str>) =
            items.iter().map(|i| (i.state.as_str(), i.action.as_str())).unzip();
        let rows: Vec<Vec<&(dyn ToSql + Sync)>> = items
            .iter()
            .zip(&keyed)
            .zip(state.iter().zip(&action))
            .map(|((i, (group, key, attempts, streak, class)), (state, action))| {
                let row: Vec<&(dyn ToSql + Sync)> = vec![
                    &i.id,
                    group,
                    key,
                    &i.url,
                    state,
                    action,
                    &i.lastmod,
                    &i.next_attempt_at,
                    &i.enqueued_at,
                    attempts,
                    class,
                    streak,
                    &i.streak_started_at,
                    &i.accepted_at,
                    &i.parked_fingerprint,
                    &i.last_request,
                ];
                row
            })
            .collect();
        use Type as T;
        let types = [
            T::INT8,
            T::INT8,
            T::INT8,
            T::TEXT,
            T::TEXT,
            T::TEXT,
            T::TIMESTAMPTZ,
            T::TIMESTAMPTZ,
            T::TIMESTAMPTZ,
            T::INT4,
            T::TEXT,
            T::INT4,
            T::TIMESTAMPTZ,
            T::TIMESTAMPTZ,
            T::TEXT,
            T::INT8,
        ];
        let into = "copy_items (src, grp, url_key, url, state, action, lastmod, next_attempt_at, enqueued_at,
             attempts, last_class, streak, streak_started_at, accepted_at, parked_fingerprint, last_request)";
        self.copy_in(into, &types, &rows)
    }

    /// By hash: each staged URL's hash through its group's runs
    /// (`batches::find_ids`), an item of the target where a span holds
    /// the id found (`rows::held_by_spans`), given the source's state
    /// unless it is in flight (a reservation lists it, or its span is in
    /// flight: a copy brings items so), as `item_states` said. Read
    /// 10,000 staged items at a time.
    fn match_items(&mut self) -> Result<()> {
        let mut after = i64::MIN;
        loop {
            let rows = self
                .tx
                .query("SELECT src, grp, url FROM copy_items WHERE src > $1 ORDER BY src LIMIT 10000", &[&after])?;
            let Some(last) = rows.last() else { return Ok(()) };
            after = last.get(0);
            let srcs: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
            let groups: Vec<i64> = rows.iter().map(|r| r.get(1)).collect();
            let hashes: Vec<u128> = rows.iter().map(|r| url_hash(r.get::<_, &str>(2))).collect();
            let (mut matched, mut ids) = (Vec::new(), Vec::new());
            for (group, wanted) in look_up::hashes_by_group(&hashes, &groups) {
                let sought: Vec<u128> = wanted.iter().map(|w| w.0).collect();
                let found = super::batches::find_ids(self.tx, group, &sought)?;
                let hits: Vec<(u128, i64)> =
                    wanted.iter().zip(found).filter_map(|(&(hash, _), id)| Some((hash, id?))).collect();
                let live: HashSet<i64> =
                    super::rows::held_by_spans(self.tx, &hits.iter().map(|h| h.1).collect::<Vec<_>>())?
                        .into_iter()
                        .map(|(_, id)| id)
                        .collect();
                let by_hash: HashMap<u128, i64> = hits.into_iter().filter(|(_, id)| live.contains(id)).collect();
                for (k, (&g, hash)) in groups.iter().zip(&hashes).enumerate() {
                    if g == group {
                        if let Some(&id) = by_hash.get(hash) {
                            matched.push(srcs[k]);
                            ids.push(id);
                        }
                    }
                }
            }
            self.tx.execute(
                "UPDATE copy_items c SET dst = m.id,
                     written = m.id NOT IN (SELECT id FROM in_flight) AND NOT EXISTS (
                         SELECT 1 FROM spans s
                         WHERE s.group_id = c.grp AND s.state = 'in_flight' AND m.id BETWEEN s.first AND s.last)
                 FROM unnest($1::bigint[], $2::bigint[]) AS m (src, id) WHERE c.src = m.src",
                &[&matched, &ids],
            )?;
        }
    }

    /// Two different URLs can no longer clash: an item is its 128-bit
    /// hash in its group, not a key that two URLs may share.
    fn clashes(&mut self) -> Result<Vec<Clash>> {
        Ok(Vec::new())
    }

    /// Not asked: `clashes` gives none.
    fn held(&mut self, _group: i64, _key: i64) -> Result<Option<(i64, String, bool)>> {
        Ok(None)
    }

    /// Not asked: `clashes` gives none.
    fn staged(&mut self, _group: i64, _key: i64) -> Result<Vec<i64>> {
        Ok(Vec::new())
    }

    fn place(&mut self, src: i64, placed: &Placed) -> Result<()> {
        match *placed {
            Placed::Same { id, written } => self
                .tx
                .execute("UPDATE copy_items SET dst = $2, written = $3 WHERE src = $1", &[&src, &id, &written])?,
            Placed::At(key) => self.tx.execute("UPDATE copy_items SET url_key = $2 WHERE src = $1", &[&src, &key])?,
        };
        Ok(())
    }

    /// From the items' sequence, a block of `ID_BLOCK` ids a value, in
    /// the source's order (a copy keeps the items' order; its batch rows
    /// are cut wherever the ids change group, or skip a block another
    /// runner took meanwhile).
    fn number_items(&mut self) -> Result<()> {
        self.tx.execute(
            "WITH s AS (SELECT src, row_number() OVER (ORDER BY src) - 1 AS k FROM copy_items WHERE dst IS NULL),
             blocks AS (SELECT row_number() OVER (ORDER BY first) - 1 AS b, first
                        FROM (SELECT nextval('item_ids') AS first
                              FROM generate_series(1, (SELECT (count(*) + $1 - 1) / $1 FROM s))) AS taken)
             UPDATE copy_items c SET dst = blocks.first + s.k % $1, written = true, fresh = true
             FROM s JOIN blocks ON blocks.b = s.k / $1
             WHERE c.src = s.src",
            &[&ID_BLOCK],
        )?;
        Ok(())
    }

    /// The items the source holds and the target too: their staged
    /// values written over the target's, the last request mapped to the
    /// target's (`COPIED` over their spans).
    fn write_items(&mut self) -> Result<u64> {
        let rows = self.tx.query(
            "SELECT c.grp, c.dst, c.lastmod, c.action FROM copy_items c
             WHERE c.written AND NOT c.fresh AND c.dst NOT IN (SELECT id FROM in_flight) ORDER BY c.dst",
            &[],
        )?;
        let updated: Vec<(i64, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        // The updated items' spans given the staged values, each item a
        // run of its own; the new items as batch rows and spans of their
        // staged values.
        write_spans(self.tx, &Runs::each(&updated), COPIED, "true", &[])?;
        let inserted: i64 = self.tx.query_one("SELECT count(*) FROM copy_items WHERE fresh", &[])?.get(0);
        if inserted > 0 {
            super::batches::fill_from_items(self.tx, super::batches::Fill::Copied)?;
            let fresh: Vec<(i64, i64)> = self
                .tx
                .query("SELECT grp, dst FROM copy_items WHERE fresh", &[])?
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
            super::batches::copied_spans(self.tx, &fresh)?;
        }
        // The updated items' lastmods and actions, the staged ones (the
        // new items' batch rows were written from theirs).
        let values = rows
            .iter()
            .map(|r| {
                let lastmod: Option<DateTime<Utc>> = r.get(2);
                Ok((r.get::<_, i64>(1), (lastmod.map(|t| t.timestamp()), stored("copy_items", "action", r.get(3))?)))
            })
            .collect::<Result<Vec<_>>>()?;
        super::batches::set_changes(self.tx, &values)?;
        Ok(updated.len() as u64 + inserted as u64)
    }

    fn stage_dropped(&mut self, dropped: &[CopyDropped], groups: &HashMap<i64, i64>) -> Result<()> {
        let keyed: Vec<(i64, i64)> =
            dropped.iter().map(|d| Ok((copy::group_of(groups, d.group)?, url_key(&d.url)))).collect::<Result<_>>()?;
        let rows: Vec<Vec<&(dyn ToSql + Sync)>> = dropped
            .iter()
            .zip(&keyed)
            .map(|(d, (group, key))| {
                let row: Vec<&(dyn ToSql + Sync)> = vec![&d.id, group, key, &d.url, &d.dropped_at];
                row
            })
            .collect();
        let types = [Type::INT8, Type::INT8, Type::INT8, Type::TEXT, Type::TIMESTAMPTZ];
        self.copy_in("copy_dropped (src, grp, url_key, url, dropped_at)", &types, &rows)
    }

    /// New dropped items take ids from the items' sequence: never another item's.
    fn merge_dropped(&mut self) -> Result<()> {
        self.tx.batch_execute(
            "ANALYZE copy_dropped;
             UPDATE copy_dropped c SET dst = d.id FROM dropped_items d
             WHERE d.group_id = c.grp AND d.url_key = c.url_key AND d.url = c.url AND d.dropped_at = c.dropped_at;
             UPDATE copy_dropped c SET dst = n.id, fresh = true
             FROM (SELECT src, nextval('item_ids') AS id
                   FROM (SELECT src FROM copy_dropped WHERE dst IS NULL ORDER BY src) AS s) AS n
             WHERE c.src = n.src;
             INSERT INTO dropped_items (id, group_id, url_key, url, dropped_at)
             SELECT dst, grp, url_key, url, dropped_at FROM copy_dropped WHERE fresh ORDER BY dst;",
        )?;
        Ok(())
    }

    fn targets(&mut self, ids: &[i64]) -> Result<HashMap<i64, i64>> {
        let rows = self.tx.query(
            "SELECT src, dst FROM copy_dropped WHERE src = ANY($1)
             UNION ALL SELECT src, dst FROM copy_items WHERE src = ANY($1)",
            &[&ids],
        )?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn stage_requests(&mut self, requests: &[StagedRequest]) -> Result<()> {
        let texts: Vec<(&str, String, Option<i32>, i32)> = requests
            .iter()
            .map(|s| {
                (
                    s.request.class.as_str(),
                    s.request.reason.to_string(),
                    s.request.response.http_status.map(i32::from),
                    s.n as i32,
                )
            })
            .collect();
        let rows: Vec<Vec<&(dyn ToSql + Sync)>> = requests
            .iter()
            .zip(&texts)
            .map(|(s, (class, reason, status, n))| {
                let r = s.request;
                let row: Vec<&(dyn ToSql + Sync)> = vec![
                    &r.id,
                    &s.group,
                    &r.at,
                    class,
                    reason,
                    &r.message,
                    status,
                    &r.response.body,
                    &r.retry_at,
                    n,
                    &s.first,
                    &s.last,
                    &s.items,
                ];
                row
            })
            .collect();
        use Type as T;
        let types = [
            T::INT8,
            T::INT8,
            T::TIMESTAMPTZ,
            T::TEXT,
            T::TEXT,
            T::TEXT,
            T::INT4,
            T::TEXT,
            T::TIMESTAMPTZ,
            T::INT4,
            T::INT8,
            T::INT8,
            T::BYTEA,
        ];
        let into = "copy_requests (src, grp, at, class, reason, message, http_status, body, retry_at, n, first_item,
             last_item, items)";
        self.copy_in(into, &types, &rows)
    }

    /// New requests take ids from the requests' sequence, in order of time.
    fn merge_requests(&mut self) -> Result<u64> {
        self.tx.batch_execute(
            "ANALYZE copy_requests;
             UPDATE copy_requests c SET dst = (
                 SELECT r.id FROM requests r
                 WHERE r.group_id = c.grp AND r.at = c.at AND r.class = c.class AND r.reason = c.reason
                     AND r.message = c.message AND r.retry_at IS NOT DISTINCT FROM c.retry_at AND r.n = c.n
                     AND r.first_item = c.first_item AND r.items IS NOT DISTINCT FROM c.items
                 ORDER BY r.id DESC LIMIT 1);
             UPDATE copy_requests c SET dst = n.id, fresh = true
             FROM (SELECT src, nextval(pg_get_serial_sequence('requests', 'id')) AS id
                   FROM (SELECT src FROM copy_requests WHERE dst IS NULL ORDER BY at, src) AS s) AS n
             WHERE c.src = n.src;",
        )?;
        let inserted = self.tx.execute(
            "INSERT INTO requests (id, group_id, at, class, reason, message, http_status, body, retry_at, n,
                 first_item, last_item, items)
             SELECT dst, grp, at, class, reason, message, http_status, body, retry_at, n, first_item, last_item, items
             FROM copy_requests WHERE fresh ORDER BY dst",
            &[],
        )?;
        Ok(inserted)
    }

    fn merge_usage(&mut self, usage: &[CopyUsage]) -> Result<u64> {
        let (rules, windows): (Vec<&str>, Vec<&str>) =
            usage.iter().map(|u| (u.rule.as_str(), u.window.as_str())).unzip();
        let periods: Vec<&str> = usage.iter().map(|u| u.period.as_str()).collect();
        let used: Vec<i64> = usage.iter().map(|u| u.used as i64).collect();
        let limits: Vec<Option<i64>> = usage.iter().map(|u| u.limit.map(|l| l as i64)).collect();
        let resets: Vec<DateTime<Utc>> = usage.iter().map(|u| u.resets_at).collect();
        let reported: Vec<Option<DateTime<Utc>>> = usage.iter().map(|u| u.reported_at).collect();
        let remaining: Vec<Option<i64>> = usage.iter().map(|u| u.reported_remaining.map(|r| r as i64)).collect();
        self.tx.execute(
            "INSERT INTO budget_usage AS b (rule, window_key, period, used, limit_value, resets_at, reported_at,
                 reported_remaining)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[],
                 $6::timestamptz[], $7::timestamptz[], $8::bigint[])
             ON CONFLICT (rule, window_key) DO UPDATE SET used = GREATEST(b.used, excluded.used),
                 limit_value = excluded.limit_value, resets_at = excluded.resets_at,
                 reported_at = excluded.reported_at, reported_remaining = excluded.reported_remaining",
            &[&rules, &windows, &periods, &used, &limits, &resets, &reported, &remaining],
        )?;
        Ok(usage.len() as u64)
    }

    fn merge_rest(&mut self, chunk: &Chunk, groups: &HashMap<i64, i64>) -> Result<()> {
        match chunk {
            Chunk::Blocks(rows) => merge_pairs(
                self.tx,
                "INSERT INTO blocks (rule, until) SELECT * FROM unnest($1::text[], $2::timestamptz[])
                 ON CONFLICT (rule) DO UPDATE SET until = GREATEST(blocks.until, excluded.until)",
                rows,
            ),
            Chunk::Pacing(rows) => merge_pairs(
                self.tx,
                "INSERT INTO pacing (key, tat_ms) SELECT * FROM unnest($1::text[], $2::bigint[])
                 ON CONFLICT (key) DO UPDATE SET tat_ms = GREATEST(pacing.tat_ms, excluded.tat_ms)",
                rows,
            ),
            Chunk::Credentials(rows) => merge_pairs(
                self.tx,
                "INSERT INTO credentials (fingerprint, first_used_at) SELECT * FROM unnest($1::text[], $2::timestamptz[])
                 ON CONFLICT (fingerprint)
                 DO UPDATE SET first_used_at = LEAST(credentials.first_used_at, excluded.first_used_at)",
                rows,
            ),
            Chunk::Reminders(rows) => {
                let ids: Vec<i64> = rows.iter().map(|(g, ..)| copy::group_of(groups, *g)).collect::<Result<_>>()?;
                let (reasons, at): (Vec<&str>, Vec<DateTime<Utc>>) = rows.iter().map(|(_, r, at)| (r.as_str(), *at)).unzip();
                self.tx.execute(
                    "INSERT INTO reminders (group_id, reason, reminded_at)
                     SELECT * FROM unnest($1::bigint[], $2::text[], $3::timestamptz[])
                     ON CONFLICT (group_id, reason)
                     DO UPDATE SET reminded_at = GREATEST(reminders.reminded_at, excluded.reminded_at)",
                    &[&ids, &reasons, &at],
                )?;
                Ok(())
            }
            Chunk::Sources(documents) => store_source_documents(self.tx, documents, true),
            Chunk::GhostUrls(urls) => store_ghost_urls(self.tx, urls),
            Chunk::SourceFailures(failures) => store_source_failures(self.tx, failures),
            Chunk::Latest(at) => {
                self.tx.execute(
                    "INSERT INTO runs (id, latest_now) VALUES (1, $1)
                     ON CONFLICT (id) DO UPDATE SET latest_now = GREATEST(runs.latest_now, excluded.latest_now)",
                    &[at],
                )?;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The groups' counts follow by the statement triggers.
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Key and value pairs merged with one statement over two arrays.
fn merge_pairs<V: ToSql + Sync + Clone>(
    tx: &mut Session<'_, Transaction<'_>>,
    sql: &str,
    rows: &[(String, V)],
) -> Result<()> {
    let (keys, values): (Vec<&str>, Vec<V>) = rows.iter().map(|(k, v)| (k.as_str(), v.clone())).unzip();
    tx.execute(sql, &[&keys, &values])?;
    Ok(())
}
