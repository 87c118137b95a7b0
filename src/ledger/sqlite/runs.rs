//! What runs leave, on SQLite: the attempts as `log` and `status` show
//! them, their counts, and the record of `submit` runs.

use super::listing::Texts;
use super::{
    from_ts, ids_of, opt_ts, params, params_from_iter, stored, stored_group, stored_inspection, stored_reason, ts,
    url_key, AttemptRow, Class, DateTime, GroupKey, InspectionCount, OptionalExtension, Result, Row, RunRecord, Runs,
    SpanCount, SqliteLedger, Utc,
};
use crate::ledger::item_ids;
use crate::ledger::sql::REQUEST_COLUMNS;
use rusqlite::Connection;

/// A request's first item if `queue drop` removed it: joined after
/// `requests r`, for `FIRST_URL`. A live item's URL is in its batch row,
/// read by `first_url`.
const FIRST_ITEM: &str = "LEFT JOIN dropped_items d ON d.id = r.first_item";

/// The dropped URL (if any) and the id of a request's first item: two
/// columns, read by `first_url`.
const FIRST_URL: &str = "d.url, r.first_item";

/// The URL of a request's first item and whether `queue drop` removed it,
/// from the two columns of `FIRST_URL` at `at`: an item a span holds is
/// live, its URL in its batch row; any other was dropped, its URL the one
/// `dropped_items` kept (none if it kept none).
fn first_url(conn: &Connection, texts: &mut Texts, r: &Row<'_>, at: usize) -> Result<(String, bool)> {
    let kept: Option<String> = r.get(at)?;
    match r.get::<_, Option<i64>>(at + 1)? {
        Some(id) if super::spans::holds(conn, id)? => Ok((texts.url(conn, id)?, false)),
        _ => Ok((kept.unwrap_or_default(), true)),
    }
}

pub(super) fn attempt_row(r: &Row<'_>, url: String, dropped: bool) -> Result<AttemptRow> {
    let engine: String = r.get(3)?;
    let class: String = r.get(5)?;
    let class = stored("requests", "class", &class)?;
    Ok(AttemptRow {
        at: from_ts(r.get(0)?),
        url,
        dropped,
        urls: r.get::<_, i64>(1)?.max(0) as u64,
        group: stored_group(r.get(2)?, &engine, r.get(4)?, &r.get::<_, String>(11)?)?,
        class,
        reason: stored_reason(class, &r.get::<_, String>(6)?)?,
        message: r.get(7)?,
        http_status: r.get(8)?,
        body: r.get(9)?,
        retry_at: opt_ts(r.get(10)?),
    })
}

impl Runs for SqliteLedger {
    fn inspections(&mut self) -> Result<Vec<InspectionCount>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT property, class, count, last_at, last_reason, last_message, last_hint, last_status
             FROM inspections ORDER BY property, class",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, Option<String>>(6)?,
                r.get::<_, Option<i32>>(7)?,
            ))
        })?;
        let mut counts = Vec::new();
        for row in rows {
            let (property, class, count, at, reason, message, hint, status) = row?;
            counts.push(stored_inspection(property, &class, count, from_ts(at), &reason, message, hint, status)?);
        }
        Ok(counts)
    }

    fn last_rejection(&mut self, group: &GroupKey) -> Result<Option<AttemptRow>> {
        let Some(group) = self.existing_group(group)? else { return Ok(None) };
        // The newest rejection, from its own partial index: accepted
        // requests, however many, are not read.
        let sql = format!(
            "SELECT {REQUEST_COLUMNS}, {FIRST_URL} FROM requests r JOIN groups g ON g.id = r.group_id {FIRST_ITEM}
             WHERE r.group_id = ?1 AND r.class != 'accepted'
             ORDER BY r.at DESC, r.id DESC LIMIT 1"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut rows = stmt.query([group])?;
        match rows.next()? {
            Some(r) => {
                let (url, dropped) = first_url(&self.conn, &mut Texts::default(), r, 12)?;
                Ok(Some(attempt_row(r, url, dropped)?))
            }
            None => Ok(None),
        }
    }

    fn attempts(&mut self, url: Option<&str>, limit: usize) -> Result<Vec<AttemptRow>> {
        let mut out: Vec<(i64, AttemptRow)> = Vec::new();
        match url {
            Some(u) => {
                // The URL's id in each group, by its hash (an item still,
                // or dropped), and the older ids `queue drop` removed that
                // `dropped_items` names (a URL dropped and submitted again
                // is found by its hash at its newer id only), then the
                // requests that name each.
                let groups: Vec<i64> = ids_of(&mut self.conn.prepare("SELECT id FROM groups")?, [])?;
                let mut gone = self.conn.prepare_cached(
                    "SELECT id FROM dropped_items WHERE group_id = ?1 AND url_key = ?2 AND url = ?3 ORDER BY id",
                )?;
                let mut requests = self.conn.prepare_cached(&format!(
                    "SELECT {REQUEST_COLUMNS}, r.id, r.first_item, r.items FROM requests r JOIN groups g ON g.id = r.group_id
                     WHERE r.group_id = ?1 AND r.first_item <= ?2 AND r.last_item >= ?2"
                ))?;
                for group in groups {
                    let found = super::listing::id_of_url(&self.conn, group, u)?;
                    let dropped = ids_of(&mut gone, params![group, url_key(u), u])?;
                    let older = dropped.into_iter().filter(|id| found.is_none_or(|(newest, _)| *id != newest));
                    let items = found.map(|(id, live)| (id, !live)).into_iter().chain(older.map(|id| (id, true)));
                    for (item, dropped) in items {
                        let mut rows = requests.query(params![group, item])?;
                        while let Some(r) = rows.next()? {
                            let named = item_ids::named(r.get(1)?, r.get(13)?, r.get(14)?)?;
                            if named.binary_search(&item).is_ok() {
                                out.push((r.get(12)?, attempt_row(r, u.to_string(), dropped)?));
                            }
                        }
                    }
                }
                out.sort_by_key(|(id, a)| std::cmp::Reverse((a.at, *id)));
                out.truncate(limit);
            }
            None => {
                let mut stmt = self.conn.prepare(&format!(
                    "SELECT {REQUEST_COLUMNS}, {FIRST_URL}, r.id FROM requests r JOIN groups g ON g.id = r.group_id
                         {FIRST_ITEM}
                     ORDER BY r.at DESC, r.id DESC LIMIT ?1"
                ))?;
                let mut rows = stmt.query([limit as i64])?;
                let mut texts = Texts::default();
                while let Some(r) = rows.next()? {
                    let (url, dropped) = first_url(&self.conn, &mut texts, r, 12)?;
                    out.push((r.get(14)?, attempt_row(r, url, dropped)?));
                }
            }
        }
        out.reverse();
        Ok(out.into_iter().map(|(_, a)| a).collect())
    }

    // History and monitoring: short read-only queries over the attempts,
    // and the record of `submit` runs (table `submit_runs`, migration 2).

    /// One per URL attempted: the attempts table has a row per item and attempt.
    fn outcome_counts(&mut self) -> Result<Vec<(GroupKey, Class, u64)>> {
        // One per URL a request named: the requests' sizes, summed.
        let mut stmt = self.conn.prepare(
            "SELECT g.property, g.engine, g.target, r.class, SUM(r.n), g.channel
             FROM requests r JOIN groups g ON g.id = r.group_id
             GROUP BY g.property, g.engine, g.target, g.channel, r.class",
        )?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let group = stored_group(r.get(0)?, &r.get::<_, String>(1)?, r.get(2)?, &r.get::<_, String>(5)?)?;
            let class = stored("requests", "class", &r.get::<_, String>(3)?)?;
            out.push((group, class, r.get::<_, i64>(4)?.max(0) as u64));
        }
        Ok(out)
    }

    /// The spans as a VALUES list joined to the requests by time (the index
    /// on `requests (at)` serves each span), their sizes summed per group
    /// and class.
    fn attempt_history(&mut self, bounds: &[DateTime<Utc>]) -> Result<Vec<SpanCount>> {
        if bounds.len() < 2 {
            return Ok(Vec::new());
        }
        let spans: Vec<String> =
            (0..bounds.len() - 1).map(|n| format!("({n}, ?{}, ?{})", 2 * n + 1, 2 * n + 2)).collect();
        let values: Vec<i64> = bounds.windows(2).flat_map(|w| [ts(w[0]), ts(w[1])]).collect();
        let sql = format!(
            "WITH spans (n, start, stop) AS (VALUES {})
             SELECT s.n, g.property, g.engine, g.target, r.class, SUM(r.n), g.channel
             FROM spans s JOIN requests r ON r.at >= s.start AND r.at < s.stop JOIN groups g ON g.id = r.group_id
             GROUP BY s.n, g.property, g.engine, g.target, g.channel, r.class",
            spans.join(", ")
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query(params_from_iter(values))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(SpanCount {
                span: r.get::<_, i64>(0)?.max(0) as usize,
                group: stored_group(r.get(1)?, &r.get::<_, String>(2)?, r.get(3)?, &r.get::<_, String>(6)?)?,
                class: stored("requests", "class", &r.get::<_, String>(4)?)?,
                urls: r.get::<_, i64>(5)?.max(0) as u64,
            });
        }
        Ok(out)
    }

    /// Not waiting for the disk (`without_waiting_for_disk`): a power cut
    /// may lose a run's line, and nothing else.
    fn record_run(&mut self, run: &RunRecord) -> Result<()> {
        // Held admissions first, and waiting for the disk (`begin`).
        self.settle()?;
        super::without_waiting_for_disk(&mut self.conn, |conn| {
            let tx = super::write(conn)?;
            tx.execute(
                "INSERT INTO submit_runs (host, started_ms, ended_ms, exit_code) VALUES (?1, ?2, ?3, ?4)",
                params![run.host, run.started_at.timestamp_millis(), run.ended_at.timestamp_millis(), run.exit_code],
            )?;
            super::commit(tx)
        })
    }

    /// The latest row recorded (the highest id), of all or of those that exited 0.
    fn last_run(&mut self, succeeded: bool) -> Result<Option<RunRecord>> {
        let only_ok = if succeeded { "WHERE exit_code = 0" } else { "" };
        let sql =
            format!("SELECT host, started_ms, ended_ms, exit_code FROM submit_runs {only_ok} ORDER BY id DESC LIMIT 1");
        let ms = |v: i64| DateTime::from_timestamp_millis(v).unwrap_or(DateTime::<Utc>::MAX_UTC);
        Ok(self
            .conn
            .query_row(&sql, [], |r| {
                Ok(RunRecord {
                    host: r.get(0)?,
                    started_at: ms(r.get(1)?),
                    ended_at: ms(r.get(2)?),
                    exit_code: r.get::<_, i64>(3)?.clamp(0, 255) as u8,
                })
            })
            .optional()?)
    }
}
