//! What runs leave, on PostgreSQL: the attempts as `log` and `status` show
//! them, their counts, and the record of `submit` runs.

use super::session::Session;
use super::{
    group_id, stored, stored_group, stored_inspection, stored_reason, url_key, AttemptRow, Class, DateTime, GroupKey,
    InspectionCount, PgLedger, Result, Row, RunRecord, Runs, SpanCount, Utc,
};
use crate::ledger::item_ids;
use crate::ledger::sql::REQUEST_COLUMNS;

/// A request's first item, joined after `requests r`: the id, and its URL
/// where `queue drop` kept it (`first_url` reads the rest).
const FIRST_ITEM: &str = "LEFT JOIN dropped_items d ON d.id = r.first_item";

/// The columns `first_url` reads, from `FIRST_ITEM`.
const FIRST_URL: &str = "r.first_item, d.url";

/// The URL of a request's first item (`first`, with its `dropped_items`
/// row's URL `kept`), and whether `queue drop` removed it: an item a span
/// holds is there still, its URL from its batch row; one no span holds was
/// dropped, its URL the one `dropped_items` kept, else its batch row's
/// (an item dropped before schema 12 is in no batch: then none).
pub(super) fn first_url(
    tx: &mut Session<'_, impl super::GenericClient>,
    texts: &mut super::rows::Texts,
    first: Option<i64>,
    kept: Option<String>,
) -> Result<(String, bool)> {
    let Some(id) = first else { return Ok((kept.unwrap_or_default(), true)) };
    let live = !super::rows::held_by_spans(tx, &[id])?.is_empty();
    if live {
        return Ok((texts.url(tx, id)?, false));
    }
    let url = match kept {
        Some(url) => url,
        None => texts.get(tx, id)?.map(|(_, url)| url).unwrap_or_default(),
    };
    Ok((url, true))
}

pub(super) fn attempt_row(r: &Row, url: String, dropped: bool) -> Result<AttemptRow> {
    Ok(AttemptRow {
        at: r.get(0),
        url,
        dropped,
        urls: r.get::<_, i32>(1).max(0) as u64,
        group: stored_group(r.get(2), r.get(3), r.get(4), r.get(11))?,
        class: stored("requests", "class", r.get(5))?,
        reason: stored_reason(stored("requests", "class", r.get(5))?, r.get(6))?,
        message: r.get(7),
        http_status: r.get::<_, Option<i32>>(8).map(|s| s as u16),
        body: r.get(9),
        retry_at: r.get(10),
    })
}

impl Runs for PgLedger {
    fn inspections(&mut self) -> Result<Vec<InspectionCount>> {
        self.transaction(|tx| {
            let rows = tx.query(
                "SELECT property, class, count, last_at, last_reason, last_message, last_hint, last_status
                 FROM inspections ORDER BY property, class",
                &[],
            )?;
            rows.iter()
                .map(|r| {
                    let (property, class, count, at): (String, String, i64, DateTime<Utc>) =
                        (r.get(0), r.get(1), r.get(2), r.get(3));
                    let (reason, message, hint, status): (String, String, Option<String>, Option<i32>) =
                        (r.get(4), r.get(5), r.get(6), r.get(7));
                    stored_inspection(property, &class, count, at, &reason, message, hint, status)
                })
                .collect()
        })
    }

    fn last_rejection(&mut self, group: &GroupKey) -> Result<Option<AttemptRow>> {
        self.with_groups(|tx, groups| {
            let Some(group) = group_id(tx, groups, group)? else { return Ok(None) };
            let sql = format!(
                "SELECT {REQUEST_COLUMNS}, {FIRST_URL} FROM requests r JOIN groups g ON g.id = r.group_id {FIRST_ITEM}
                 WHERE r.group_id = $1 AND r.class <> 'accepted'
                 ORDER BY r.at DESC, r.id DESC LIMIT 1"
            );
            let Some(r) = tx.query_opt(&sql, &[&group])? else { return Ok(None) };
            let (url, dropped) = first_url(tx, &mut super::rows::Texts::default(), r.get(12), r.get(13))?;
            Ok(Some(attempt_row(&r, url, dropped)?))
        })
    }

    fn attempts(&mut self, url: Option<&str>, limit: usize) -> Result<Vec<AttemptRow>> {
        let limit = limit as i64;
        self.transaction(|tx| {
            let mut out: Vec<(i64, AttemptRow)> = Vec::new();
            match url {
                Some(u) => {
                    // The URL's newest id in each group by its hash, an item
                    // still or dropped (`listing::id_of_url`), and its older
                    // ids `dropped_items` names (a URL dropped and submitted
                    // again is found by its hash at its newer id only), then
                    // the requests that name each.
                    let groups: Vec<i64> = tx.query("SELECT id FROM groups", &[])?.iter().map(|r| r.get(0)).collect();
                    for group in &groups {
                        let found = super::listing::id_of_url(tx, *group, u)?;
                        let gone: Vec<i64> = tx
                            .query(
                                "SELECT id FROM dropped_items WHERE group_id = $1 AND url_key = $2 AND url = $3 ORDER BY id",
                                &[group, &url_key(u), &u],
                            )?
                            .iter()
                            .map(|r| r.get(0))
                            .collect();
                        let older = gone.into_iter().filter(|id| found.is_none_or(|(newest, _)| *id != newest));
                        let items = found.map(|(id, live)| (id, !live)).into_iter().chain(older.map(|id| (id, true)));
                        for (item, dropped) in items {
                            let sql = format!(
                                "SELECT {REQUEST_COLUMNS}, r.id, r.first_item, r.items FROM requests r
                                     JOIN groups g ON g.id = r.group_id
                                 WHERE r.group_id = $1 AND r.first_item <= $2 AND r.last_item >= $2"
                            );
                            for r in tx.query(&sql, &[group, &item])? {
                                if item_ids::named(r.get::<_, i32>(1).into(), r.get(13), r.get(14))?.binary_search(&item).is_ok() {
                                    out.push((r.get(12), attempt_row(&r, u.to_string(), dropped)?));
                                }
                            }
                        }
                    }
                    out.sort_by_key(|(id, a)| std::cmp::Reverse((a.at, *id)));
                    out.truncate(limit as usize);
                }
                None => {
                    let sql = format!(
                        "SELECT {REQUEST_COLUMNS}, {FIRST_URL}, r.id FROM requests r JOIN groups g ON g.id = r.group_id
                             {FIRST_ITEM}
                         ORDER BY r.at DESC, r.id DESC LIMIT $1"
                    );
                    let mut texts = super::rows::Texts::default();
                    for r in tx.query(&sql, &[&limit])? {
                        let (url, dropped) = first_url(tx, &mut texts, r.get(12), r.get(13))?;
                        out.push((r.get(14), attempt_row(&r, url, dropped)?));
                    }
                }
            }
            out.reverse();
            Ok(out.into_iter().map(|(_, a)| a).collect())
        })
    }

    // History and monitoring: short read-only queries over the attempts,
    // and the record of `submit` runs (table `submit_runs`, migration 2).

    /// One per URL attempted: the attempts table has a row per item and attempt.
    fn outcome_counts(&mut self) -> Result<Vec<(GroupKey, Class, u64)>> {
        // One per URL a request named: the requests' sizes, summed.
        self.transaction(|tx| {
            tx.query(
                "SELECT g.property, g.engine, g.target, r.class, sum(r.n)::bigint, g.channel
                 FROM requests r JOIN groups g ON g.id = r.group_id
                 GROUP BY g.property, g.engine, g.target, g.channel, r.class",
                &[],
            )?
            .iter()
            .map(|r| {
                let group = stored_group(r.get(0), r.get(1), r.get(2), r.get(5))?;
                Ok((group, stored("requests", "class", r.get(3))?, r.get::<_, i64>(4).max(0) as u64))
            })
            .collect()
        })
    }

    /// The spans as two arrays (starts, ends) unnested with their ordinal,
    /// joined to the requests by time, their sizes summed per group and class.
    fn attempt_history(&mut self, bounds: &[DateTime<Utc>]) -> Result<Vec<SpanCount>> {
        if bounds.len() < 2 {
            return Ok(Vec::new());
        }
        let starts: Vec<DateTime<Utc>> = bounds[..bounds.len() - 1].to_vec();
        let stops: Vec<DateTime<Utc>> = bounds[1..].to_vec();
        self.transaction(|tx| {
            tx.query(
                "SELECT s.n, g.property, g.engine, g.target, r.class, sum(r.n)::bigint, g.channel
                 FROM unnest($1::timestamptz[], $2::timestamptz[]) WITH ORDINALITY AS s (start, stop, n)
                     JOIN requests r ON r.at >= s.start AND r.at < s.stop JOIN groups g ON g.id = r.group_id
                 GROUP BY s.n, g.property, g.engine, g.target, g.channel, r.class",
                &[&starts, &stops],
            )?
            .iter()
            .map(|r| {
                Ok(SpanCount {
                    // WITH ORDINALITY counts from 1.
                    span: (r.get::<_, i64>(0) - 1).max(0) as usize,
                    group: stored_group(r.get(1), r.get(2), r.get(3), r.get(6))?,
                    class: stored("requests", "class", r.get(4))?,
                    urls: r.get::<_, i64>(5).max(0) as u64,
                })
            })
            .collect()
        })
    }

    fn record_run(&mut self, run: &RunRecord) -> Result<()> {
        let (started, ended) = (RunRecord::millis(run.started_at), RunRecord::millis(run.ended_at));
        let code = i32::from(run.exit_code);
        self.transaction(|tx| {
            tx.execute(
                "INSERT INTO submit_runs (host, started_at, ended_at, exit_code) VALUES ($1, $2, $3, $4)",
                &[&run.host, &started, &ended, &code],
            )?;
            Ok(())
        })
    }

    /// The latest row recorded (the highest id), of all or of those that exited 0.
    fn last_run(&mut self, succeeded: bool) -> Result<Option<RunRecord>> {
        let only_ok = if succeeded { "WHERE exit_code = 0" } else { "" };
        let sql =
            format!("SELECT host, started_at, ended_at, exit_code FROM submit_runs {only_ok} ORDER BY id DESC LIMIT 1");
        self.transaction(|tx| {
            Ok(tx.query_opt(&sql, &[])?.map(|r| RunRecord {
                host: r.get(0),
                started_at: r.get(1),
                ended_at: r.get(2),
                exit_code: r.get::<_, i32>(3).clamp(0, 255) as u8,
            }))
        })
    }
}
