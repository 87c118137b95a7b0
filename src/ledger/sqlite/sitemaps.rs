//! What the engines report of the sitemaps submitted, on SQLite: one row
//! of `sitemap_reports` per sitemap group.

use super::{
    from_ts, group_id_or_create, opt_ts, params, policy, stored_group, ts, DateTime, GroupKey, HashMap,
    OptionalExtension, Result, SitemapRead, SitemapReports, SitemapState, SqliteLedger, StoredSitemap, Utc,
};

impl SitemapReports for SqliteLedger {
    fn record_sitemap_read(&mut self, group: &GroupKey, read: &SitemapRead, at: DateTime<Utc>) -> Result<()> {
        let (tx, groups) = self.begin_with_groups()?;
        let mut created = Vec::new();
        let id = group_id_or_create(&tx, groups, &mut created, group)?;
        let before: Option<(Option<i64>, Option<String>, Option<i64>)> = tx
            .query_row(
                "SELECT errors_since, failure_reason, failure_since FROM sitemap_reports WHERE group_id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        let (errors_since, failed, failure_since) = before.unwrap_or_default();
        let before = policy::SitemapMarks { errors_since: opt_ts(errors_since), failure_since: opt_ts(failure_since) };
        let marks = policy::sitemap_marks(&before, failed.as_deref(), read, at);
        match read {
            SitemapRead::Read(r) => {
                tx.execute(
                    "INSERT INTO sitemap_reports (group_id, read_at, read_ok_at, listed, submitted, downloaded,
                         pending, errors, warnings, urls, status, errors_since)
                     VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                     ON CONFLICT (group_id) DO UPDATE SET read_at = excluded.read_at,
                         read_ok_at = excluded.read_ok_at, listed = excluded.listed,
                         submitted = excluded.submitted, downloaded = excluded.downloaded,
                         pending = excluded.pending, errors = excluded.errors, warnings = excluded.warnings,
                         urls = excluded.urls, status = excluded.status, errors_since = excluded.errors_since,
                         failure_class = NULL, failure_reason = NULL, failure_message = NULL,
                         failure_hint = NULL, failure_status = NULL, failure_since = NULL",
                    params![
                        id,
                        ts(at),
                        r.listed,
                        r.submitted.map(ts),
                        r.downloaded.map(ts),
                        r.pending,
                        r.errors.min(i64::MAX as u64) as i64,
                        r.warnings.min(i64::MAX as u64) as i64,
                        r.urls.map(|n| n.min(i64::MAX as u64) as i64),
                        r.status,
                        marks.errors_since.map(ts)
                    ],
                )?;
            }
            SitemapRead::Failed(f) => {
                tx.execute(
                    "INSERT INTO sitemap_reports (group_id, read_at, failure_class, failure_reason, failure_message,
                         failure_hint, failure_status, failure_since)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                     ON CONFLICT (group_id) DO UPDATE SET read_at = excluded.read_at,
                         failure_class = excluded.failure_class, failure_reason = excluded.failure_reason,
                         failure_message = excluded.failure_message, failure_hint = excluded.failure_hint,
                         failure_status = excluded.failure_status, failure_since = excluded.failure_since",
                    params![
                        id,
                        ts(at),
                        f.class.as_str(),
                        f.reason.to_string(),
                        f.message,
                        f.hint,
                        f.http_status,
                        marks.failure_since.map(ts)
                    ],
                )?;
            }
        }
        super::commit(tx)?;
        self.groups.extend(created);
        Ok(())
    }

    fn sitemap_states(&mut self) -> Result<Vec<SitemapState>> {
        let mut reminded: HashMap<i64, Vec<(String, DateTime<Utc>)>> = HashMap::new();
        {
            let mut stmt = self.conn.prepare(
                "SELECT m.group_id, m.reason, m.reminded_at FROM reminders m JOIN groups g ON g.id = m.group_id
                 WHERE g.channel = 'sitemaps' ORDER BY m.reason",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                reminded.entry(r.get(0)?).or_default().push((r.get(1)?, from_ts(r.get(2)?)));
            }
        }
        // Each item of a sitemap group (one, usually) from its span, a
        // queued one a run of `in_flight` holds shown in flight.
        let held = super::IdRuns::in_flight(&self.conn)?;
        let mut stmt = self.conn.prepare(
            "SELECT g.id, g.property, g.engine, g.target, g.channel, i.state, i.accepted_at, s.read_at, s.read_ok_at,
                 s.listed, s.submitted, s.downloaded, s.pending, s.errors, s.warnings, s.urls, s.status,
                 s.errors_since, s.failure_class, s.failure_reason, s.failure_message, s.failure_hint,
                 s.failure_status, s.failure_since, i.first, i.last
             FROM groups g JOIN spans i ON i.group_id = g.id LEFT JOIN sitemap_reports s ON s.group_id = g.id
             WHERE g.channel = 'sitemaps'
             ORDER BY g.property, g.engine, g.target, i.first",
        )?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            let (first, last): (i64, i64) = (r.get(24)?, r.get(25)?);
            for item in first..=last {
                let row = StoredSitemap {
                    group: stored_group(r.get(1)?, &r.get::<_, String>(2)?, r.get(3)?, &r.get::<_, String>(4)?)?,
                    item: if held.holds(item) { "in_flight".to_string() } else { r.get(5)? },
                    submitted_at: opt_ts(r.get(6)?),
                    read_at: opt_ts(r.get(7)?),
                    read_ok_at: opt_ts(r.get(8)?),
                    listed: r.get(9)?,
                    submitted: opt_ts(r.get(10)?),
                    downloaded: opt_ts(r.get(11)?),
                    pending: r.get(12)?,
                    errors: r.get(13)?,
                    warnings: r.get(14)?,
                    urls: r.get(15)?,
                    status: r.get(16)?,
                    errors_since: opt_ts(r.get(17)?),
                    failure_class: r.get(18)?,
                    failure_reason: r.get(19)?,
                    failure_message: r.get(20)?,
                    failure_hint: r.get(21)?,
                    failure_status: r.get(22)?,
                    failure_since: opt_ts(r.get(23)?),
                };
                out.push(row.state(reminded.remove(&id).unwrap_or_default())?);
            }
        }
        Ok(out)
    }
}
