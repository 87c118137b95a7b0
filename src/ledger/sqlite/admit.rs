//! Admission on SQLite: a batch of URLs looked up by (group, key) a few
//! thousand at a time, and written with a multi-row statement per few
//! hundred rows, as `policy::admit` decides for each; and the sitemaps read
//! for sources.

use super::*;

/// The id the next new item takes: after every item's and every dropped
/// item's, so that an id a request names is never another URL's (the
/// write lock is held).
pub(super) fn next_item_id(tx: &Connection) -> Result<i64> {
    let sql =
        "SELECT MAX(COALESCE((SELECT MAX(id) FROM items), 0), COALESCE((SELECT MAX(id) FROM dropped_items), 0)) + 1";
    Ok(tx.query_row(sql, [], |r| r.get(0))?)
}

/// What the ledger holds of each URL of `batch` (whose items are in the
/// groups `group_ids`, same order): the item, or, for a URL new to its
/// group, the key it takes (`ids::resolve`). Keys are read a group and up
/// to 10,000 at a time, with one statement.
pub(super) fn look_up(
    tx: &Connection,
    batch: &[NewItem],
    group_ids: &[i64],
) -> Result<Vec<std::result::Result<Existing, i64>>> {
    let urls: Vec<&str> = batch.iter().map(|i| i.url.as_str()).collect();
    let mut stmt = tx.prepare_cached(
        "SELECT url_key, url, id, url, state, action, lastmod, accepted_at, next_attempt_at FROM items
         WHERE group_id = ?1 AND url_key IN rarray(?2)",
    )?;
    ids::resolve(&urls, group_ids, |wanted| {
        let mut by_group: HashMap<i64, Vec<i64>> = HashMap::new();
        for (group, key) in wanted {
            by_group.entry(*group).or_default().push(*key);
        }
        let mut found = Vec::new();
        // (A group the ledger has never seen, -1, holds nothing.)
        for (group, keys) in by_group.into_iter().filter(|(g, _)| *g >= 0) {
            for chunk in keys.chunks(10_000) {
                let mut rows = stmt.query(params![group, array(chunk)])?;
                while let Some(r) = rows.next()? {
                    found.push((group, r.get(0)?, r.get(1)?, existing_row(r, 2)?));
                }
            }
        }
        Ok(found)
    })
}

/// `Existing` from columns `id, url, state, action, lastmod, accepted_at,
/// next_attempt_at` starting at `at` (the url is skipped).
pub(super) fn existing_row(r: &Row<'_>, at: usize) -> Result<Existing> {
    let state: String = r.get(at + 2)?;
    let action: String = r.get(at + 3)?;
    Ok(Existing {
        id: r.get(at)?,
        state: stored("items", "state", &state)?,
        action: stored("items", "action", &action)?,
        lastmod: opt_ts(r.get(at + 4)?),
        accepted_at: opt_ts(r.get(at + 5)?),
        next_attempt_at: opt_ts(r.get(at + 6)?),
    })
}

/// The sitemaps read for sources, by URL.
pub(super) fn source_documents(conn: &Connection) -> Result<Vec<SourceDocument>> {
    let mut stmt = conn.prepare(
        "SELECT url, etag, last_modified, digest, kind, routes, fetched_at, changed_at FROM sources ORDER BY url",
    )?;
    let mut rows = stmt.query([])?;
    let mut documents = Vec::new();
    while let Some(r) = rows.next()? {
        documents.push(SourceDocument {
            url: r.get(0)?,
            etag: r.get(1)?,
            last_modified: r.get(2)?,
            digest: r.get(3)?,
            kind: stored("sources", "kind", &r.get::<_, String>(4)?)?,
            routes: r.get(5)?,
            fetched_at: from_ts(r.get(6)?),
            changed_at: from_ts(r.get(7)?),
        });
    }
    Ok(documents)
}

/// Keeps sitemaps read, replacing what was kept of each URL (with `later`,
/// only by a later read: a copy merges).
pub(super) fn store_source_documents(tx: &Connection, documents: &[SourceDocument], later: bool) -> Result<()> {
    let only = if later { " WHERE excluded.fetched_at >= sources.fetched_at" } else { "" };
    let sql = format!(
        "INSERT INTO sources (url, etag, last_modified, digest, kind, routes, fetched_at, changed_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, last_modified = excluded.last_modified,
             digest = excluded.digest, kind = excluded.kind, routes = excluded.routes,
             fetched_at = excluded.fetched_at, changed_at = excluded.changed_at{only}"
    );
    let mut stmt = tx.prepare(&sql)?;
    for d in documents {
        stmt.execute(params![
            d.url,
            d.etag,
            d.last_modified,
            d.digest,
            d.kind.as_str(),
            d.routes,
            ts(d.fetched_at),
            ts(d.changed_at)
        ])?;
    }
    Ok(())
}

/// What the ledger kept of the sitemaps at `urls` (the digest and when it
/// changed), by URL, in the caller's transaction.
fn stored_changes(tx: &Connection, urls: &[&str]) -> Result<HashMap<String, (String, DateTime<Utc>)>> {
    let urls: Rc<Vec<Value>> = Rc::new(urls.iter().map(|u| Value::Text(u.to_string())).collect());
    let mut stmt = tx.prepare_cached("SELECT url, digest, changed_at FROM sources WHERE url IN rarray(?1)")?;
    let mut rows = stmt.query([urls])?;
    let mut out = HashMap::new();
    while let Some(r) = rows.next()? {
        out.insert(r.get(0)?, (r.get(1)?, from_ts(r.get(2)?)));
    }
    Ok(out)
}

impl Intake for SqliteLedger {
    fn preview(&mut self, batch: &[NewItem], rule: &AdmitRule, now: DateTime<Utc>) -> Result<Vec<Preview>> {
        // A group the ledger has never seen holds none of them.
        let group_ids = ids::group_ids(batch, |g| Ok(group_id(&self.conn, &mut self.groups, g)?.unwrap_or(-1)))?;
        let found = look_up(&self.conn, batch, &group_ids)?.into_iter().map(|found| found.ok()).collect();
        Ok(policy::preview(batch, found, rule, now))
    }

    fn admit(&mut self, batch: &[NewItem], now: DateTime<Utc>, rule: &AdmitRule) -> Result<Vec<Admission>> {
        // Without a statement journal: see `without_foreign_keys`.
        without_foreign_keys(&mut self.conn, |conn| admit_batch(conn, &mut self.groups, batch, now, rule))
    }

    fn source_documents(&mut self) -> Result<Vec<SourceDocument>> {
        source_documents(&self.conn)
    }

    fn record_source_documents(&mut self, documents: &[SourceDocument]) -> Result<Vec<SourceDocument>> {
        let tx = write(&mut self.conn)?;
        let urls: Vec<&str> = documents.iter().map(|d| d.url.as_str()).collect();
        let stored = stored_changes(&tx, &urls)?;
        let documents = kept_changes(documents, |url| stored.get(url).map(|(d, at)| (d.as_str(), *at)));
        store_source_documents(&tx, &documents, false)?;
        tx.commit()?;
        Ok(documents)
    }
}

/// One batch's admission, in one write transaction (foreign keys off: see
/// `without_foreign_keys`): the groups, a lookup of every URL,
/// `policy::admit` for each, then the new items (a multi-row `INSERT OR
/// FAIL` per few hundred rows), the requeued (an `UPDATE OR FAIL` per action
/// and due time) and the updated. `OR FAIL`: a statement that meets a broken
/// constraint stops where it is, and the error rolls the whole transaction
/// back (nothing inside it catches one), so SQLite needs no statement
/// journal to undo that statement alone.
fn admit_batch(
    conn: &mut Connection,
    groups: &mut HashMap<GroupKey, i64>,
    batch: &[NewItem],
    now: DateTime<Utc>,
    rule: &AdmitRule,
) -> Result<Vec<Admission>> {
    let tx = write(conn)?;
    let mut created = Vec::new();
    let group_ids = ids::group_ids(batch, |g| group_id_or_create(&tx, groups, &mut created, g))?;
    let found = look_up(&tx, batch, &group_ids)?;
    let plan = AdmitPlan::new(batch, &group_ids, &found, rule, now);
    // New items take the ids after the last.
    let first_id = next_item_id(&tx)?;
    let ids: Vec<i64> = (first_id..).take(plan.inserts.len()).collect();
    let mut inserted: HashMap<i64, u64> = HashMap::new();
    let mut inserts = Vec::with_capacity(plan.inserts.len() * 6);
    for ((index, group, key), id) in plan.inserts.iter().zip(&ids) {
        let item = &batch[*index];
        *inserted.entry(*group).or_default() += 1;
        inserts.extend([
            Value::Integer(*id),
            Value::Integer(*group),
            Value::Integer(*key),
            Value::Text(item.url.clone()),
            Value::Text(item.action.as_str().into()),
            item.lastmod.map(ts).into(),
        ]);
    }
    groups_exist(&tx, &inserted.keys().copied().collect::<Vec<i64>>())?;
    insert_rows(
        &tx,
        &format!(
            "INSERT OR FAIL INTO items (id, group_id, url_key, url, action, lastmod, state, next_attempt_at,
                 enqueued_at)
             SELECT column1, column2, column3, column4, column5, column6, 'queued', {0}, {0} FROM (",
            ts(now)
        ),
        ")",
        6,
        &inserts,
    )?;
    for ((group, action, due), ids) in &plan.requeued {
        // Only accepted items are queued again.
        let n = tx
            .prepare_cached(
                "UPDATE OR FAIL items SET state = 'queued', action = ?2, next_attempt_at = ?4, enqueued_at = ?3,
                     streak = 0, streak_started_at = NULL WHERE id IN rarray(?1)",
            )?
            .execute(params![array(ids), action.as_str(), ts(now), ts(*due)])?;
        counted(&tx, *group, Some(ItemState::Accepted), Some(ItemState::Queued), n as u64)?;
    }
    let updates: Vec<Value> = plan
        .updates
        .iter()
        .flat_map(|(id, action, lastmod)| {
            [Value::Integer(*id), Value::Text(action.as_str().into()), lastmod.map(ts).into()]
        })
        .collect();
    insert_rows(
        &tx,
        "UPDATE OR FAIL items SET action = v.column2, lastmod = v.column3 FROM (",
        ") AS v WHERE items.id = v.column1",
        3,
        &updates,
    )?;
    for (group, n) in inserted {
        counted(&tx, group, None, Some(ItemState::Queued), n)?;
    }
    let out = plan.admissions(&ids, now);
    tx.commit()?;
    groups.extend(created);
    Ok(out)
}

/// What the foreign key of `items.group_id` checks of every row, once per
/// group: each of `ids` is a group in the ledger (admission runs with
/// foreign keys off).
fn groups_exist(tx: &Connection, ids: &[i64]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let found: i64 = tx.query_row("SELECT COUNT(*) FROM groups WHERE id IN rarray(?1)", [array(ids)], |r| r.get(0))?;
    if found as usize != ids.len() {
        return Err(LedgerError::Invalid(format!(
            "a group of the items being admitted is not in the ledger ({} of {} found)",
            found,
            ids.len()
        )));
    }
    Ok(())
}
