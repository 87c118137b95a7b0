//! What the engines report of the sitemaps submitted, on PostgreSQL: one
//! row of `sitemap_reports` per sitemap group.

use super::{
    group_id_or_create, opt_sec, policy, sec, stored_group, DateTime, GroupKey, HashMap, PgLedger, Result, SitemapRead,
    SitemapReports, SitemapState, StoredSitemap, Utc,
};

impl SitemapReports for PgLedger {
    fn record_sitemap_read(&mut self, group: &GroupKey, read: &SitemapRead, at: DateTime<Utc>) -> Result<()> {
        let at = sec(at);
        self.with_groups(|tx, groups| {
            let id = group_id_or_create(tx, groups, group)?;
            // Two runs reading at once: the second waits for the first's marks.
            let before = tx.query_opt(
                "SELECT errors_since, failure_reason, failure_since FROM sitemap_reports WHERE group_id = $1 FOR UPDATE",
                &[&id],
            )?;
            let (marks, failed): (policy::SitemapMarks, Option<String>) = match before {
                Some(r) => (policy::SitemapMarks { errors_since: r.get(0), failure_since: r.get(2) }, r.get(1)),
                None => (policy::SitemapMarks::default(), None),
            };
            let marks = policy::sitemap_marks(&marks, failed.as_deref(), read, at);
            match read {
                SitemapRead::Read(r) => {
                    let big = |n: u64| n.min(i64::MAX as u64) as i64;
                    tx.execute(
                        "INSERT INTO sitemap_reports (group_id, read_at, read_ok_at, listed, submitted, downloaded,
                             pending, errors, warnings, urls, status, errors_since)
                         VALUES ($1, $2, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                         ON CONFLICT (group_id) DO UPDATE SET read_at = excluded.read_at,
                             read_ok_at = excluded.read_ok_at, listed = excluded.listed,
                             submitted = excluded.submitted, downloaded = excluded.downloaded,
                             pending = excluded.pending, errors = excluded.errors, warnings = excluded.warnings,
                             urls = excluded.urls, status = excluded.status, errors_since = excluded.errors_since,
                             failure_class = NULL, failure_reason = NULL, failure_message = NULL,
                             failure_hint = NULL, failure_status = NULL, failure_since = NULL",
                        &[
                            &id,
                            &at,
                            &r.listed,
                            &opt_sec(r.submitted),
                            &opt_sec(r.downloaded),
                            &r.pending,
                            &big(r.errors),
                            &big(r.warnings),
                            &r.urls.map(big),
                            &r.status,
                            &opt_sec(marks.errors_since),
                        ],
                    )?;
                }
                SitemapRead::Failed(f) => {
                    tx.execute(
                        "INSERT INTO sitemap_reports (group_id, read_at, failure_class, failure_reason,
                             failure_message, failure_hint, failure_status, failure_since)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                         ON CONFLICT (group_id) DO UPDATE SET read_at = excluded.read_at,
                             failure_class = excluded.failure_class, failure_reason = excluded.failure_reason,
                             failure_message = excluded.failure_message, failure_hint = excluded.failure_hint,
                             failure_status = excluded.failure_status, failure_since = excluded.failure_since",
                        &[
                            &id,
                            &at,
                            &f.class.as_str(),
                            &f.reason.to_string(),
                            &f.message,
                            &f.hint,
                            &f.http_status.map(i32::from),
                            &opt_sec(marks.failure_since),
                        ],
                    )?;
                }
            }
            Ok(())
        })
    }

    fn sitemap_states(&mut self) -> Result<Vec<SitemapState>> {
        self.transaction(|tx| {
            let mut reminded: HashMap<i64, Vec<(String, DateTime<Utc>)>> = HashMap::new();
            for r in tx.query(
                "SELECT m.group_id, m.reason, m.reminded_at FROM reminders m JOIN groups g ON g.id = m.group_id
                 WHERE g.channel = 'sitemaps' ORDER BY m.reason COLLATE \"C\"",
                &[],
            )? {
                reminded.entry(r.get(0)).or_default().push((r.get(1), r.get(2)));
            }
            let rows = tx.query(
                "SELECT g.id, g.property, g.engine, g.target, g.channel, i.state, i.accepted_at, s.read_at,
                     s.read_ok_at, s.listed, s.submitted, s.downloaded, s.pending, s.errors, s.warnings, s.urls,
                     s.status, s.errors_since, s.failure_class, s.failure_reason, s.failure_message, s.failure_hint,
                     s.failure_status, s.failure_since
                 FROM groups g JOIN (
                     SELECT x.id, sp.group_id, sp.accepted_at,
                         CASE WHEN x.id IN (SELECT id FROM in_flight) THEN 'in_flight' ELSE sp.state END AS state
                     FROM spans sp CROSS JOIN LATERAL generate_series(sp.first, sp.last) AS x (id)
                     WHERE sp.group_id IN (SELECT id FROM groups WHERE channel = 'sitemaps')
                 ) i ON i.group_id = g.id
                 LEFT JOIN sitemap_reports s ON s.group_id = g.id
                 WHERE g.channel = 'sitemaps'
                 ORDER BY g.property COLLATE \"C\", g.engine COLLATE \"C\", g.target COLLATE \"C\", i.id",
                &[],
            )?;
            rows.iter()
                .map(|r| {
                    let id: i64 = r.get(0);
                    let row = StoredSitemap {
                        group: stored_group(r.get(1), r.get(2), r.get(3), r.get(4))?,
                        item: r.get(5),
                        submitted_at: r.get(6),
                        read_at: r.get(7),
                        read_ok_at: r.get(8),
                        listed: r.get(9),
                        submitted: r.get(10),
                        downloaded: r.get(11),
                        pending: r.get(12),
                        errors: r.get(13),
                        warnings: r.get(14),
                        urls: r.get(15),
                        status: r.get(16),
                        errors_since: r.get(17),
                        failure_class: r.get(18),
                        failure_reason: r.get(19),
                        failure_message: r.get(20),
                        failure_hint: r.get(21),
                        failure_status: r.get::<_, Option<i32>>(22).map(i64::from),
                        failure_since: r.get(23),
                    };
                    row.state(reminded.remove(&id).unwrap_or_default())
                })
                .collect()
        })
    }
}
