//! Admission on SQLite: a batch of URLs looked up by hash through their
//! groups' hash runs, the ids found read from their spans and batch rows,
//! and written as `policy::admit` decides for each — each group's new URLs
//! as batch rows and a span, the others' state through the spans and their
//! lastmods and actions in `item_changes` (schema 12 writes no row a URL);
//! and the sitemaps read for sources.

use super::{
    array, counted, from_ts, group_id, group_id_or_create, kept_changes, opt_ts, params, policy, stored, ts,
    wait_a_moment, without_foreign_keys, write, Admission, AdmitPlan, AdmitRule, Connection, Created, DateTime,
    Existing, GhostUrl, GroupKey, HashMap, IdRuns, Intake, ItemState, LedgerError, NewItem, OptionalExtension, Path,
    PathBuf, Preview, Rc, Result, SourceDocument, SourceFailure, SqliteLedger, Utc, Value,
};
use crate::ledger::batches::{url_hash, BatchItem};
use crate::ledger::{batch_groups, look_up};
use crate::model::Action;

/// The id the next new item takes: after every batch row's ids and every
/// dropped item's, so that an id a request or a batch row names is never
/// another URL's (the write lock is held). Every item is in a batch row
/// (schema 12); a dropped item keeps its batch row, and one dropped before
/// schema 12 that a request named keeps its `dropped_items` row.
pub(super) fn next_item_id(tx: &Connection) -> Result<i64> {
    let sql = "SELECT MAX(COALESCE((SELECT MAX(id) FROM dropped_items), 0),
                      COALESCE((SELECT first_id + n - 1 FROM batches ORDER BY first_id DESC LIMIT 1), 0)) + 1";
    Ok(tx.query_row(sql, [], |r| r.get(0))?)
}

/// What the ledger holds of each URL of `batch` (whose items are in the
/// groups `group_ids`, same order): `Ok` with the item, or `Err` for a URL
/// new to its group, with the place in the batch of its first URL of the
/// same group and hash (what tells the batch's new URLs apart: the same URL
/// twice is one new item). Per group, the URLs' 128-bit hashes through the
/// group's hash runs (`batches::find_ids`); an id found is the URL's item
/// if a span holds it (else it was dropped, and the URL is new again), its
/// state read from its span (by run) and its lastmod and action from
/// `batches::lastmod_and_action`. A hit is not compared with its text
/// (docs/design.md, *Collisions*). With a `helper` and
/// `look_up::SHARED_LOOK_UP` hashes or more to read, the reading is shared
/// with it (`shared_by_hash`).
pub(super) fn look_up(
    tx: &Connection,
    helper: Option<&mut Helper>,
    batch: &[NewItem],
    group_ids: &[i64],
) -> Result<Vec<std::result::Result<Existing, i64>>> {
    // The items reservations hold are read once (usually none), because asking
    // a row at a time through `item_states` made a run again slower
    // (docs/performance.md, *Measured choices*).
    let held = IdRuns::in_flight(tx)?;
    let hashes: Vec<u128> = batch.iter().map(|i| url_hash(&i.url)).collect();
    let sought = look_up::Sought::of(&hashes, group_ids);
    sought.distinct_urls(|at| &batch[at].url)?;
    let many = sought.distinct() >= look_up::SHARED_LOOK_UP;
    let mut found = vec![None; batch.len()];
    match helper.filter(|_| many).and_then(Helper::connection) {
        Some(helper) => in_read(helper, |helper| shared_by_hash(tx, helper, &held, &sought.by_group, &mut found))?,
        None => {
            for (group, hashes) in &sought.by_group {
                let hits = by_hash(tx, *group, hashes)?;
                known(tx, &hits, &held, &mut |place, e| found[place] = Some(e))?;
            }
        }
    }
    Ok(sought.each_url(&found))
}

/// `f` in a read transaction of the helper's, ended whatever happens.
fn in_read<T>(helper: &mut Connection, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
    helper.execute_batch("BEGIN")?;
    let out = f(helper);
    if !helper.is_autocommit() {
        helper.execute_batch("COMMIT")?;
    }
    out
}

/// An id found by hash, and the place in the batch of the first URL of
/// its hash.
type HashHit = (i64, usize);

/// The ids of `group` at `hashes` (`look_up::HashesByGroup`'s, sorted),
/// through its hash runs, by id.
fn by_hash(conn: &Connection, group: i64, hashes: &[(u128, usize)]) -> Result<Vec<HashHit>> {
    let sought: Vec<u128> = hashes.iter().map(|h| h.0).collect();
    let ids = super::batches::find_ids(conn, group, &sought)?;
    let mut hits: Vec<HashHit> =
        ids.into_iter().zip(hashes).filter_map(|(id, &(_, place))| Some((id?, place))).collect();
    hits.sort_unstable();
    Ok(hits)
}

/// The items of `hits` (ascending by id), each to `sink` with its place,
/// 10,000 at a time: an id a span holds is an item, its state its
/// span's (`spans::Cursor`: a span read once for the ids it holds), its
/// lastmod and action `batches::lastmod_and_action`'s (each batch row read
/// once for its ids). An id no span holds was dropped: not found. An item
/// a reservation holds (`held`) is in flight.
fn known(conn: &Connection, hits: &[HashHit], held: &IdRuns, sink: &mut dyn FnMut(usize, Existing)) -> Result<()> {
    let mut spans = super::spans::Cursor::new(conn)?;
    for chunk in hits.chunks(10_000) {
        // What admission reads of each id's span, taken out of the span
        // (a span holds many ids: its texts are not copied for each).
        let mut live = Vec::with_capacity(chunk.len());
        for &(id, place) in chunk {
            if let Some(span) = spans.at(id)? {
                let state: ItemState = stored("spans", "state", &span.state)?;
                live.push((id, place, (state, span.accepted_at, span.next_attempt_at)));
            }
        }
        let ids: Vec<i64> = live.iter().map(|l| l.0).collect();
        for ((id, place, span), values) in live.into_iter().zip(super::batches::lastmod_and_action(conn, &ids)?) {
            let Some((lastmod, action)) = values else {
                return Err(LedgerError::Invalid(format!("batches: item {id} is in no batch")));
            };
            let (state, accepted_at, next_attempt_at) = span;
            let mut existing = Existing {
                id,
                state,
                action,
                lastmod: opt_ts(lastmod),
                accepted_at: opt_ts(accepted_at),
                next_attempt_at: opt_ts(next_attempt_at),
            };
            if existing.state == ItemState::Queued && held.holds(id) {
                existing.state = ItemState::InFlight;
            }
            sink(place, existing);
        }
    }
    Ok(())
}

/// `look_up`'s reading on two connections at once, the ledger's (`tx`, on
/// this thread) and the helper's (on a thread of its own): each looks up
/// the lower or upper half of each group's sorted hashes (so each reads
/// its half of a merged run's pages), then reads the spans and values of
/// the lower or upper half of the ids found. Each connection reads its own
/// snapshot: `decide` says why that is sound.
fn shared_by_hash(
    tx: &Connection,
    helper: &mut Connection,
    held: &IdRuns,
    wanted: &look_up::HashesByGroup,
    found: &mut [Option<Existing>],
) -> Result<()> {
    // Each group's hashes in the lower half (`upper` false) or the upper.
    let read = |conn: &Connection, upper: bool| -> Result<Vec<HashHit>> {
        let mut hits = Vec::new();
        for (group, hashes) in wanted {
            let (lower, higher) = hashes.split_at(hashes.len() / 2);
            hits.extend(by_hash(conn, *group, if upper { higher } else { lower })?);
        }
        Ok(hits)
    };
    let (mut hits, their_hits) = std::thread::scope(|s| {
        let helper = &mut *helper;
        let theirs = s.spawn(move || read(helper, true));
        let mine = read(tx, false);
        let theirs = theirs.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Ok::<_, LedgerError>((mine?, theirs?))
    })?;
    hits.extend(their_hits);
    // Runs each sorted by id (a group's on one connection): a stable sort
    // merges them, where an unstable one would sort them anew.
    hits.sort();
    let their_ids = hits.split_off(hits.len() / 2);
    std::thread::scope(|s| {
        let helper = &mut *helper;
        let their_ids = &their_ids;
        let theirs = s.spawn(move || -> Result<Vec<(usize, Existing)>> {
            let mut out = Vec::with_capacity(their_ids.len());
            known(helper, their_ids, held, &mut |place, e| out.push((place, e)))?;
            Ok(out)
        });
        let mine = known(tx, &hits, held, &mut |place, e| found[place] = Some(e));
        let theirs = theirs.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        mine?;
        for (place, e) in theirs? {
            found[place] = Some(e);
        }
        Ok(())
    })
}

/// A second connection to the ledger's file that only reads, beside the
/// ledger's own, for `look_up` (`shared_by_hash`, `shared`): opened the first time a look-up is
/// shared, then kept. None for a ledger in memory, for a file whose identity
/// cannot be read (not on Unix), or when it cannot be opened: the ledger's own
/// connection then reads alone. Its page cache is 2 MiB, because each batch
/// reads its part once and a larger cache gained no time, only memory
/// (docs/performance.md, *Measured choices*).
pub(super) struct Helper {
    /// The ledger's path, and the file the ledger opened there (`file_id`).
    file: Option<(PathBuf, FileId)>,
    /// `Some(None)`: it could not be opened.
    connection: Option<Option<Connection>>,
}

/// Which file a path names (device and inode).
type FileId = (u64, u64);

/// The file at `path` now; none where that cannot be told (not on Unix).
#[cfg(unix)]
pub(super) fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The file at `path` now; none where that cannot be told (not on Unix).
#[cfg(not(unix))]
pub(super) fn file_id(_path: &Path) -> Option<FileId> {
    None
}

impl Helper {
    /// The helper of the ledger at `path`, the file the ledger opened being
    /// `opened` (none: in memory, or a file that cannot be told apart).
    pub(super) fn new(path: &Path, opened: Option<FileId>) -> Helper {
        Helper { file: opened.map(|id| (path.to_path_buf(), id)), connection: None }
    }

    /// None: a ledger in memory.
    pub(super) fn none() -> Helper {
        Helper { file: None, connection: None }
    }

    /// The connection, opened on the file the ledger opened, never another:
    /// a file moved aside and another put at its path while a run goes on
    /// would have the look-up read the other ledger (its URLs accepted, not
    /// this one's), so the file at the path is the same before and after
    /// the open (its inode cannot be reused while the ledger holds it open),
    /// and a file gone is not created.
    fn connection(&mut self) -> Option<&mut Connection> {
        let (path, id) = self.file.as_ref()?;
        self.connection
            .get_or_insert_with(|| {
                let open = || -> Result<Connection> {
                    let moved = || LedgerError::Invalid(format!("{} is no longer the ledger's file", path.display()));
                    if file_id(path) != Some(*id) {
                        return Err(moved());
                    }
                    let flags = rusqlite::OpenFlags::default().difference(rusqlite::OpenFlags::SQLITE_OPEN_CREATE);
                    let conn = Connection::open_with_flags(path, flags)?;
                    if file_id(path) != Some(*id) {
                        return Err(moved());
                    }
                    conn.busy_handler(Some(wait_a_moment))?;
                    conn.pragma_update(None, "query_only", true)?;
                    conn.pragma_update(None, "cache_size", -2 * 1024)?;
                    rusqlite::vtab::array::load_module(&conn)?;
                    Ok(conn)
                };
                open().inspect_err(|e| tracing::debug!("no helper connection for the look-up: {e}")).ok()
            })
            .as_mut()
    }
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
        let group_ids =
            batch_groups::group_ids(batch, |g| Ok(group_id(&self.conn, &mut self.groups, g)?.unwrap_or(-1)))?;
        let found = look_up::previewed(&group_ids, || look_up(&self.conn, Some(&mut self.helper), batch, &group_ids))?;
        Ok(policy::preview(batch, found, rule, now))
    }

    fn announce(&mut self, batch: &[NewItem], now: DateTime<Utc>) -> Result<u64> {
        let groups = &mut self.groups;
        without_foreign_keys(&mut self.conn, |conn| {
            let tx = write(conn)?;
            let group_ids = batch_groups::group_ids(batch, |g| Ok(group_id(&tx, groups, g)?.unwrap_or(-1)))?;
            let found = look_up(&tx, None, batch, &group_ids)?;
            let mut by_group: HashMap<i64, Vec<i64>> = HashMap::new();
            for (group, id) in policy::announced(&found, &group_ids) {
                by_group.entry(group).or_default().push(id);
            }
            let mut recorded = 0;
            for (group, mut ids) in by_group {
                ids.sort_unstable();
                ids.dedup();
                let runs = IdRuns::of(&ids);
                let n = super::spans::write(
                    &tx,
                    "state = 'accepted', accepted_at = ?1, last_class = 'accepted', next_attempt_at = NULL,
                     streak = 0, streak_started_at = NULL",
                    "state = 'queued'",
                    params![ts(now)],
                    &runs,
                )?;
                counted(&tx, group, Some(ItemState::Queued), Some(ItemState::Accepted), n)?;
                recorded += n;
            }
            super::commit(tx)?;
            Ok(recorded)
        })
    }

    /// Decided first by reading, without the write lock (`decide`): a
    /// batch that writes nothing (a run again over URLs accepted within the
    /// dedupe window) takes no lock and commits nothing. Otherwise the write
    /// transaction applies that decision if the ledger has not changed
    /// since it was read, or decides again under the lock. Between
    /// `begin_admissions` and `end_admissions`, the batches that write
    /// share a transaction, committed every `ADMISSIONS_A_COMMIT` URLs.
    fn admit(&mut self, batch: &[NewItem], now: DateTime<Utc>, rule: &AdmitRule) -> Result<Vec<Admission>> {
        if self.admitting.as_ref().is_some_and(|a| a.open) {
            return self.admit_held(batch, now, rule, None);
        }
        let decided = match decide(&mut self.conn, Some(&mut self.helper), &mut self.groups, batch, now, rule)? {
            Decision::Done(admissions) => return Ok(admissions),
            Decision::Write(decided) => decided,
        };
        if self.admitting.is_some() {
            return self.admit_held(batch, now, rule, decided);
        }
        // Without a statement journal: see `without_foreign_keys`.
        let groups = &mut self.groups;
        without_foreign_keys(&mut self.conn, |conn| {
            let tx = write(conn)?;
            let (admissions, created) = admit_batch(&tx, groups, batch, now, rule, decided)?;
            super::commit(tx)?;
            groups.extend(created);
            Ok(admissions)
        })
    }

    fn begin_admissions(&mut self) {
        self.admitting.get_or_insert_with(Admitting::default);
    }

    fn end_admissions(&mut self) -> Result<()> {
        let settled = self.settle();
        self.admitting = None;
        settled
    }

    fn source_documents(&mut self) -> Result<Vec<SourceDocument>> {
        source_documents(&self.conn)
    }

    /// After the URLs admitted so far are committed (`begin`).
    fn record_source_documents(&mut self, documents: &[SourceDocument]) -> Result<Vec<SourceDocument>> {
        let tx = self.begin()?;
        let urls: Vec<&str> = documents.iter().map(|d| d.url.as_str()).collect();
        let stored = stored_changes(&tx, &urls)?;
        let documents = kept_changes(documents, |url| stored.get(url).map(|(d, at)| (d.as_str(), *at)));
        store_source_documents(&tx, &documents, false)?;
        super::commit(tx)?;
        Ok(documents)
    }

    fn ghost_url(&mut self, property: &str, ghost_id: &str) -> Result<Option<String>> {
        let mut stmt = self.conn.prepare_cached("SELECT url FROM ghost_urls WHERE property = ?1 AND ghost_id = ?2")?;
        Ok(stmt.query_row(params![property, ghost_id], |r| r.get(0)).optional()?)
    }

    /// After the URLs admitted so far are committed (`begin`).
    fn record_ghost_url(&mut self, url: &GhostUrl) -> Result<()> {
        let tx = self.begin()?;
        store_ghost_urls(&tx, std::slice::from_ref(url))?;
        super::commit(tx)?;
        Ok(())
    }

    fn source_failures(&mut self) -> Result<Vec<SourceFailure>> {
        source_failures(&self.conn, None)
    }

    fn record_source_failure(&mut self, failure: &SourceFailure) -> Result<SourceFailure> {
        let tx = self.begin()?;
        store_source_failures(&tx, std::slice::from_ref(failure))?;
        let kept = source_failures(&tx, Some((&failure.property, &failure.source)))?;
        super::commit(tx)?;
        kept.into_iter().next().ok_or_else(|| LedgerError::Invalid("a source failure just kept is not there".into()))
    }

    fn clear_source_failure(&mut self, property: &str, source: &str) -> Result<Option<SourceFailure>> {
        if !self.has_source_failures()? {
            return Ok(None);
        }
        let tx = self.begin()?;
        let kept = source_failures(&tx, Some((property, source)))?.into_iter().next();
        if kept.is_some() {
            tx.prepare_cached("DELETE FROM source_failures WHERE property = ?1 AND source = ?2")?
                .execute(params![property, source])?;
        }
        super::commit(tx)?;
        Ok(kept)
    }

    fn record_source_reminders(&mut self, told: &[(String, String)], at: DateTime<Utc>) -> Result<()> {
        let tx = self.begin()?;
        {
            let mut stmt =
                tx.prepare_cached("UPDATE source_failures SET reminded_at = ?3 WHERE property = ?1 AND source = ?2")?;
            for (property, source) in told {
                stmt.execute(params![property, source, ts(at)])?;
            }
        }
        super::commit(tx)?;
        Ok(())
    }
}

impl SqliteLedger {
    /// Whether any source is kept as failing: a run whose sources all read
    /// (the usual one) writes nothing for them.
    fn has_source_failures(&mut self) -> Result<bool> {
        Ok(self.conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM source_failures)")?.query_row([], |r| r.get(0))?)
    }
}

/// The sources whose last read failed (`only`: one property's source), by property and source.
pub(super) fn source_failures(conn: &Connection, only: Option<(&str, &str)>) -> Result<Vec<SourceFailure>> {
    let mut stmt = conn.prepare_cached(
        "SELECT property, source, reason, message, since, failed_at, reminded_at FROM source_failures
         WHERE ?1 IS NULL OR (property = ?1 AND source = ?2) ORDER BY property, source",
    )?;
    let (property, source) = only.unzip();
    let mut rows = stmt.query(params![property, source])?;
    let mut failures = Vec::new();
    while let Some(r) = rows.next()? {
        failures.push(SourceFailure {
            property: r.get(0)?,
            source: r.get(1)?,
            reason: stored("source_failures", "reason", &r.get::<_, String>(2)?)?,
            message: r.get(3)?,
            since: from_ts(r.get(4)?),
            failed_at: from_ts(r.get(5)?),
            reminded_at: opt_ts(r.get(6)?),
        });
    }
    Ok(failures)
}

/// Keeps failed reads of sources: each replaces the reason, message and
/// latest failure kept of its source unless that failed later, and keeps
/// the earlier `since` and the later reminder (a copy merges with the same
/// rule).
pub(super) fn store_source_failures(tx: &Connection, failures: &[SourceFailure]) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO source_failures (property, source, reason, message, since, failed_at, reminded_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (property, source) DO UPDATE SET
             reason = CASE WHEN excluded.failed_at >= failed_at THEN excluded.reason ELSE reason END,
             message = CASE WHEN excluded.failed_at >= failed_at THEN excluded.message ELSE message END,
             failed_at = max(failed_at, excluded.failed_at),
             since = min(since, excluded.since),
             reminded_at = CASE WHEN reminded_at IS NULL THEN excluded.reminded_at
                                WHEN excluded.reminded_at IS NULL THEN reminded_at
                                ELSE max(reminded_at, excluded.reminded_at) END",
    )?;
    for f in failures {
        stmt.execute(params![
            f.property,
            f.source,
            f.reason.to_string(),
            f.message,
            ts(f.since),
            ts(f.failed_at),
            f.reminded_at.map(ts)
        ])?;
    }
    Ok(())
}

/// The public URLs of Ghost's posts and pages, by property and id.
pub(super) fn ghost_urls(conn: &Connection) -> Result<Vec<GhostUrl>> {
    let mut stmt =
        conn.prepare("SELECT property, ghost_id, url, announced_at FROM ghost_urls ORDER BY property, ghost_id")?;
    let rows = stmt.query_map([], |r| {
        Ok(GhostUrl { property: r.get(0)?, ghost_id: r.get(1)?, url: r.get(2)?, announced_at: from_ts(r.get(3)?) })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Keeps Ghost's public URLs, each replacing what was kept of its post
/// unless that was announced later (a copy merges with the same rule).
pub(super) fn store_ghost_urls(tx: &Connection, urls: &[GhostUrl]) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO ghost_urls (property, ghost_id, url, announced_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (property, ghost_id) DO UPDATE SET url = excluded.url, announced_at = excluded.announced_at
         WHERE excluded.announced_at >= ghost_urls.announced_at",
    )?;
    for u in urls {
        stmt.execute(params![u.property, u.ghost_id, u.url, ts(u.announced_at)])?;
    }
    Ok(())
}

/// An admission decided by reading (`Intake::admit`): the ledger's
/// `data_version` then, and the plan.
struct Decided {
    version: i64,
    plan: AdmitPlan,
}

/// What reading decides of a batch: its admissions, when it writes
/// nothing; else what the write may take as decided (`None`: a group new
/// to the ledger, made under the lock).
enum Decision {
    Done(Vec<Admission>),
    Write(Option<Decided>),
}

/// A batch's admission decided in one read transaction (a snapshot; no
/// lock is taken), with the ledger's `data_version`; a large batch's items
/// read half in the `helper`'s own read transaction, begun after this one
/// (`look_up`). Mixing the two snapshots is sound: each URL's item is read
/// as the ledger held it at some moment of the decision (an item's id
/// and hash never change), so a decision that writes nothing is as true as one
/// made on a single snapshot that moment; and one that writes is applied
/// only if no other connection has committed since `data_version` was read
/// (`admit_batch`) — the helper commits nothing, so both snapshots were
/// then the ledger as the write finds it.
fn decide(
    conn: &mut Connection,
    helper: Option<&mut Helper>,
    groups: &mut HashMap<GroupKey, i64>,
    batch: &[NewItem],
    now: DateTime<Utc>,
    rule: &AdmitRule,
) -> Result<Decision> {
    let read = conn.transaction()?;
    let version = data_version(&read)?;
    let group_ids = batch_groups::group_ids(batch, |g| Ok(group_id(&read, groups, g)?.unwrap_or(-1)))?;
    let found = look_up(&read, helper, batch, &group_ids)?;
    read.commit()?;
    if group_ids.contains(&-1) {
        return Ok(Decision::Write(None));
    }
    let plan = AdmitPlan::new(batch, &group_ids, &found, rule, now);
    Ok(match plan.writes() {
        false => Decision::Done(plan.admissions(&[], now)),
        true => Decision::Write(Some(Decided { version, plan })),
    })
}

/// `PRAGMA data_version`: changes when another connection commits.
fn data_version(conn: &Connection) -> Result<i64> {
    Ok(conn.prepare_cached("PRAGMA data_version")?.query_row([], |r| r.get(0))?)
}

/// One batch's admission, in one write transaction (foreign keys off: see
/// `without_foreign_keys`): what was `decided` by reading if nothing has
/// changed since, else decided again — the groups, a lookup of every URL,
/// `policy::admit` for each; then the requeued (a write of spans per
/// action and due time) and the updated (their lastmods and actions in
/// `item_changes`), and the new items as batch rows and spans. An error
/// rolls the whole transaction back (nothing inside it catches one), so
/// SQLite needs no statement journal to undo a statement alone.
fn admit_batch(
    tx: &Connection,
    groups: &mut HashMap<GroupKey, i64>,
    batch: &[NewItem],
    now: DateTime<Utc>,
    rule: &AdmitRule,
    decided: Option<Decided>,
) -> Result<(Vec<Admission>, Created)> {
    let mut created = Vec::new();
    let plan = match decided {
        Some(d) if data_version(tx)? == d.version => d.plan,
        _ => {
            let group_ids = batch_groups::group_ids(batch, |g| group_id_or_create(tx, groups, &mut created, g))?;
            let found = look_up(tx, None, batch, &group_ids)?;
            AdmitPlan::new(batch, &group_ids, &found, rule, now)
        }
    };
    // New items take the ids after the last, each group's in a run of its
    // own (input order within it), so that each run is one batch row.
    let first_id = next_item_id(tx)?;
    let mut order: Vec<usize> = (0..plan.inserts.len()).collect();
    order.sort_by_key(|&k| plan.inserts[k].1);
    let mut ids = vec![0; plan.inserts.len()];
    for (j, &k) in order.iter().enumerate() {
        ids[k] = first_id + j as i64;
    }
    let mut inserted: HashMap<i64, u64> = HashMap::new();
    for (_, group, _) in &plan.inserts {
        *inserted.entry(*group).or_default() += 1;
    }
    groups_exist(tx, &inserted.keys().copied().collect::<Vec<i64>>())?;
    // The lastmods and actions the requeued and updated items now have,
    // written to `item_changes` where they differ from their batch rows'
    // (`batches::set_changes`): a requeued item takes its new action and
    // keeps its lastmod; an update sets both, after a requeue of the same
    // id (as the items' two statements did in that order).
    let mut values: std::collections::BTreeMap<i64, super::batches::Values> = Default::default();
    for ((group, action, due), ids) in &plan.requeued {
        // Only accepted items are queued again.
        let runs = IdRuns::of(ids);
        let n = super::spans::write(
            tx,
            "state = 'queued', next_attempt_at = ?2, enqueued_at = ?1, streak = 0, streak_started_at = NULL",
            "",
            params![ts(now), ts(*due)],
            &runs,
        )?;
        counted(tx, *group, Some(ItemState::Accepted), Some(ItemState::Queued), n)?;
        for (id, had) in ids.iter().zip(super::batches::lastmod_and_action(tx, ids)?) {
            let Some((lastmod, _)) = had else {
                return Err(LedgerError::Invalid(format!("batches: item {id} is in no batch")));
            };
            values.insert(*id, (lastmod, *action));
        }
    }
    for (id, action, lastmod) in &plan.updates {
        values.insert(*id, (lastmod.map(ts), *action));
    }
    super::batches::set_changes(tx, &values.into_iter().collect::<Vec<_>>())?;
    for (group, n) in inserted {
        counted(tx, group, None, Some(ItemState::Queued), n)?;
    }
    // Each group's new items as batch rows (their URLs are written there
    // alone), and one queued span a group.
    let mut start = 0;
    while start < order.len() {
        let group = plan.inserts[order[start]].1;
        let end = order[start..].iter().position(|&k| plan.inserts[k].1 != group).map_or(order.len(), |p| start + p);
        for chunk in order[start..end].chunks(super::super::batches::BATCH) {
            let items: Vec<BatchItem> = chunk
                .iter()
                .map(|&k| {
                    let item = &batch[plan.inserts[k].0];
                    BatchItem { url: &item.url, lastmod: item.lastmod.map(ts), deleted: item.action == Action::Deleted }
                })
                .collect();
            super::batches::write_batch(tx, group, ids[chunk[0]], ts(now), &items)?;
        }
        // The group's new ids are one run, all alike: one span.
        super::batches::new_queued_span(tx, group, ids[order[start]], ids[order[end - 1]], ts(now))?;
        start = end;
    }
    Ok((plan.admissions(&ids, now), created))
}

/// URLs admitted in one transaction, at most, between `begin_admissions` and
/// `end_admissions`. Each commit writes every page its batches touched, and the
/// URLs' keys spread over the whole key index, so small commits write the index
/// many times over (docs/performance.md, *Measured choices*). A bound keeps the
/// write lock from being held for a whole large input.
const ADMISSIONS_A_COMMIT: usize = 100_000;

/// Admissions sharing write transactions (`Intake::begin_admissions`):
/// whether one is open (foreign keys off: see `without_foreign_keys`), the
/// URLs written in it, and the groups it made (cached once it commits).
#[derive(Default)]
pub(super) struct Admitting {
    open: bool,
    written: usize,
    created: Created,
}

impl SqliteLedger {
    /// A batch admitted in the held transaction (begun here if none is
    /// open), committed once it holds `ADMISSIONS_A_COMMIT` URLs.
    fn admit_held(
        &mut self,
        batch: &[NewItem],
        now: DateTime<Utc>,
        rule: &AdmitRule,
        decided: Option<Decided>,
    ) -> Result<Vec<Admission>> {
        let admitting = self.admitting.as_mut().expect("admissions are held");
        if !admitting.open {
            self.conn.pragma_update(None, "foreign_keys", false)?;
            if let Err(e) = self.conn.execute_batch("BEGIN IMMEDIATE") {
                self.conn.pragma_update(None, "foreign_keys", true)?;
                return Err(e.into());
            }
            admitting.open = true;
        }
        let admitted = admit_batch(&self.conn, &mut self.groups, batch, now, rule, decided);
        let (admissions, created) = match admitted {
            Ok(done) => done,
            Err(e) => {
                self.abandon();
                return Err(e);
            }
        };
        admitting.created.extend(created);
        admitting.written += batch.len();
        if admitting.written >= ADMISSIONS_A_COMMIT {
            self.settle()?;
        }
        Ok(admissions)
    }

    /// Commits the admissions of the held transaction, if one is open.
    pub(super) fn settle(&mut self) -> Result<()> {
        let Some(admitting) = self.admitting.as_mut().filter(|a| a.open) else { return Ok(()) };
        super::check_spans(&self.conn);
        if let Err(e) = self.conn.execute_batch("COMMIT") {
            self.abandon();
            return Err(e.into());
        }
        admitting.open = false;
        admitting.written = 0;
        self.groups.extend(admitting.created.drain(..));
        self.conn.pragma_update(None, "foreign_keys", true)?;
        Ok(())
    }

    /// Rolls the held transaction back (an error stopped it: what it wrote
    /// since its last commit is undone, as one batch's was before).
    fn abandon(&mut self) {
        if let Some(admitting) = self.admitting.as_mut().filter(|a| a.open) {
            *admitting = Admitting::default();
            if !self.conn.is_autocommit() {
                let _ = self.conn.execute_batch("ROLLBACK");
            }
            let _ = self.conn.pragma_update(None, "foreign_keys", true);
        }
    }
}

/// Each of `ids` (distinct) is a group in the ledger: what the foreign key
/// of `items.group_id` would check of every row (admission runs with
/// foreign keys off).
fn groups_exist(tx: &Connection, ids: &[i64]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let found: i64 = tx
        .prepare_cached("SELECT COUNT(*) FROM groups WHERE id IN rarray(?1)")?
        .query_row([array(ids)], |r| r.get(0))?;
    batch_groups::groups_found(found, ids.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::conformance;
    use crate::ledger::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    /// A batch decided by reading, then admitted by another connection
    /// before this one takes the lock, is decided again under it: the same
    /// URLs are not inserted twice (which the unique key would refuse).
    #[test]
    fn a_decision_another_connection_overtook_is_made_again_under_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let (mut a, mut b) = (SqliteLedger::open(&path).unwrap(), SqliteLedger::open(&path).unwrap());
        let batch = conformance::items(3);
        let now = t("2026-12-03T09:00:00Z");
        let rule = conformance::dedupe_day();
        a.admit(&batch[..1], now, &rule).unwrap();
        let Decision::Write(decided) = decide(&mut a.conn, None, &mut a.groups, &batch, now, &rule).unwrap() else {
            panic!("two new URLs are written")
        };
        assert!(decided.as_ref().is_some_and(|d| d.plan.inserts.len() == 2));
        b.admit(&batch, now, &rule).unwrap();
        let (admitted, _) = without_foreign_keys(&mut a.conn, |conn| {
            let tx = write(conn)?;
            let admitted = admit_batch(&tx, &mut a.groups, &batch, now, &rule, decided)?;
            tx.commit()?;
            Ok(admitted)
        })
        .unwrap();
        assert!(admitted.iter().all(|a| matches!(a, Admission::AlreadyQueued { .. })), "{admitted:?}");
        let items: i64 = a.conn.query_row("SELECT SUM(last - first + 1) FROM spans", [], |r| r.get(0)).unwrap();
        assert_eq!(items, 3);
        // Nothing changed since: a batch that writes nothing takes no lock.
        let Decision::Done(again) = decide(&mut a.conn, None, &mut a.groups, &batch, now, &rule).unwrap() else {
            panic!("nothing to write")
        };
        assert_eq!(again.len(), 3);
    }

    /// A large batch's look-up shared with the helper connection finds what
    /// the ledger's own connection alone finds — in each group, new URLs,
    /// URLs the ledger holds (in either half of the keys and of the ids),
    /// a URL twice, and items a reservation holds (in flight) — and a
    /// decision made with it writes nothing the other would not.
    #[test]
    fn a_look_up_shared_with_the_helper_finds_what_one_connection_finds() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
        let item = conformance::two_groups();
        let now = t("2026-12-03T09:00:00Z");
        let rule = conformance::dedupe_day();
        let held: Vec<NewItem> = (0..3_000).map(|i| item(0, i)).chain((0..2_000).map(|i| item(1, i))).collect();
        ledger.admit(&held, now, &rule).unwrap();
        assert!(ledger.helper.connection.is_none(), "new groups: nothing to look up, no helper");
        let again = ledger.admit(&held, now, &rule).unwrap();
        assert!(again.iter().all(|a| matches!(a, Admission::AlreadyQueued { .. })));
        assert!(matches!(ledger.helper.connection, Some(Some(_))), "a batch decided by reading shares its look-up");
        // Items of both groups in flight, in the lower and upper halves of
        // the ids found (1 to 3,000 are a's, then b's).
        ledger
            .conn
            .execute_batch(
                "INSERT INTO in_flight (first, last, reservation_id, group_id) VALUES (1400, 1600, 1, 1), (2500, 2700, 2, 1), (4900, 4910, 3, 2)",
            )
            .unwrap();
        let mut batch: Vec<NewItem> =
            (1_000..4_000).map(|i| item(0, i)).chain((1_500..2_500).map(|i| item(1, i))).collect();
        batch.extend((0..1_000).step_by(3).map(|i| item(0, i)));
        batch.push(item(1, 4_000));
        batch.push(item(1, 4_000));
        assert!(batch.len() >= look_up::SHARED_LOOK_UP);
        let group_ids =
            batch_groups::group_ids(&batch, |g| Ok(group_id(&ledger.conn, &mut ledger.groups, g)?.unwrap())).unwrap();
        let alone = look_up(&ledger.conn, None, &batch, &group_ids).unwrap();
        let shared = look_up(&ledger.conn, Some(&mut ledger.helper), &batch, &group_ids).unwrap();
        assert_eq!(shared, alone);
        let states = |state: ItemState| alone.iter().filter(|f| matches!(f, Ok(e) if e.state == state)).count();
        assert_eq!(alone.iter().filter(|f| f.is_err()).count(), 1_000 + 500 + 2, "new URLs");
        assert_eq!((states(ItemState::Queued), states(ItemState::InFlight)), (2_000 + 334 + 500 - 413, 201 + 201 + 11));
        // The same URL twice: one new key.
        assert_eq!(alone[alone.len() - 1], alone[alone.len() - 2]);
        let plan = |decision: Decision| match decision {
            Decision::Write(Some(d)) => d.plan.inserts.len(),
            _ => panic!("new URLs are written"),
        };
        let with_helper = decide(&mut ledger.conn, Some(&mut ledger.helper), &mut ledger.groups, &batch, now, &rule);
        let without = decide(&mut ledger.conn, None, &mut ledger.groups, &batch, now, &rule);
        assert_eq!(plan(with_helper.unwrap()), plan(without.unwrap()));
    }

    /// Admission finds what it holds by hash through the runs, then reads
    /// each id's state from its span and its lastmod and action from its
    /// changes or batch row, alone and shared with the helper alike: an
    /// item with a change of its own is read with it, one in a span of its
    /// own in that span's state; a URL dropped is new again (no span holds
    /// its id), told apart from the batch's other new URLs by the place of
    /// its first occurrence, which a second occurrence shares.
    #[test]
    fn a_look_up_finds_items_by_hash_and_reads_them_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
        let now = t("2026-12-03T09:00:00Z");
        let rule = conformance::dedupe_day();
        let mut batch = conformance::items(look_up::SHARED_LOOK_UP + 100);
        ledger.admit(&batch, now, &rule).unwrap();
        // Ids follow the input: batch[k] is item k + 1.
        super::super::batches::set_changes(&ledger.conn, &[(30, (Some(5), Action::Deleted))]).unwrap();
        let accepted = format!("state = 'accepted', accepted_at = {}, next_attempt_at = NULL", ts(now));
        super::super::spans::set_state(&ledger.conn, 3000, 3000, &accepted).unwrap();
        let filter = ItemFilter { url: Some(batch[19].url.clone()), ..Default::default() };
        assert_eq!(ledger.drop_items(&filter, now).unwrap(), 1);
        batch.push(batch[19].clone());
        let group_ids =
            batch_groups::group_ids(&batch, |g| Ok(group_id(&ledger.conn, &mut ledger.groups, g)?.unwrap())).unwrap();
        let alone = look_up(&ledger.conn, None, &batch, &group_ids).unwrap();
        let shared = look_up(&ledger.conn, Some(&mut ledger.helper), &batch, &group_ids).unwrap();
        assert!(matches!(ledger.helper.connection, Some(Some(_))), "shared with the helper");
        assert_eq!(shared, alone);
        let id = |k: usize| alone[k].as_ref().map(|e| e.id).map_err(|place| *place);
        let last = batch.len() - 2;
        assert_eq!((id(9), id(2999), id(0), id(last)), (Ok(10), Ok(3000), Ok(1), Ok(last as i64 + 1)));
        assert_eq!(id(19), Err(19), "dropped: new again");
        assert_eq!(id(batch.len() - 1), Err(19), "the same new URL twice: one new item");
        assert_eq!(alone.iter().filter(|f| f.is_err()).count(), 2);
        let found = |k: usize| alone[k].as_ref().unwrap();
        assert_eq!((found(29).lastmod, found(29).action), (opt_ts(Some(5)), Action::Deleted), "its change");
        assert_eq!((found(28).lastmod, found(28).action), (None, Action::Updated), "its batch row's");
        assert_eq!((found(2999).state, found(2999).accepted_at), (ItemState::Accepted, Some(now)), "its own span");
        assert_eq!(found(2998).state, ItemState::Queued);
    }

    /// A ledger moved aside while a run goes on, another ledger made at its
    /// path, is still the one the run's look-up reads: the helper is not
    /// opened on the other file (where this ledger's queued URLs are
    /// unknown, or another's accepted). (Unix: elsewhere a file cannot be
    /// told apart, and no helper is opened.)
    #[cfg(unix)]
    #[test]
    fn a_look_up_never_reads_another_file_put_at_the_ledger_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let now = t("2026-12-03T09:00:00Z");
        let rule = conformance::dedupe_day();
        let batch = conformance::items(look_up::SHARED_LOOK_UP);
        let mut ledger = SqliteLedger::open(&path).unwrap();
        ledger.admit(&batch, now, &rule).unwrap();
        for suffix in ["", "-wal", "-shm"] {
            let name = |base: &str| dir.path().join(format!("{base}.db{suffix}"));
            std::fs::rename(name("ledger"), name("aside")).unwrap();
        }
        let _other = SqliteLedger::open(&path).unwrap();
        let again = ledger.admit(&batch, now, &rule).unwrap();
        assert!(matches!(ledger.helper.connection, Some(None)), "no helper on the other file");
        assert!(again.iter().all(|a| matches!(a, Admission::AlreadyQueued { .. })), "{:?}", &again[..2]);
    }

    /// Held admissions (`begin_admissions`) share a transaction that no
    /// other connection sees until it commits: before any other write of
    /// this ledger (here a claim), or at `end_admissions`; and foreign keys
    /// are checked again after.
    #[test]
    fn held_admissions_commit_before_any_other_write_and_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let (mut a, b) = (SqliteLedger::open(&path).unwrap(), SqliteLedger::open(&path).unwrap());
        let group = std::sync::Arc::new(GroupKey::urls("site", EngineKind::IndexNow, "https://engine.example/"));
        let batch = |from: usize, n: usize| -> Vec<NewItem> {
            (from..from + n)
                .map(|i| NewItem {
                    url: format!("https://site.example/{i}"),
                    group: group.clone(),
                    action: Action::Updated,
                    lastmod: None,
                    zone: chrono_tz::Tz::UTC,
                })
                .collect()
        };
        let seen_by_b = || -> i64 {
            b.conn.query_row("SELECT COALESCE(SUM(last - first + 1), 0) FROM spans", [], |r| r.get(0)).unwrap()
        };
        let now = t("2026-12-03T09:00:00Z");
        let rule = conformance::dedupe_day();
        a.begin_admissions();
        a.admit(&batch(0, 3), now, &rule).unwrap();
        let again = a.admit(&batch(2, 2), now, &rule).unwrap();
        assert!(matches!(again[0], Admission::AlreadyQueued { .. }), "the held transaction sees its own: {again:?}");
        assert_eq!(seen_by_b(), 0, "not committed yet");
        let spec = ClaimSpec {
            windows: &[],
            max_items: 2,
            pace: None,
            now: Now::pinned(now),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        };
        let claim = a.claim(&group, &spec, &Owner::current(), &mut |_, _, _| {}).unwrap();
        assert_eq!((claim.items.len(), seen_by_b()), (2, 4), "the claim committed the admissions first");
        a.admit(&batch(4, 1), now, &rule).unwrap();
        assert_eq!(seen_by_b(), 4);
        a.end_admissions().unwrap();
        assert_eq!(seen_by_b(), 5);
        let checked: i64 = a.conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0)).unwrap();
        assert_eq!(checked, 1);
        // Batch by batch again: each committed as it is admitted.
        a.admit(&batch(5, 1), now, &rule).unwrap();
        assert_eq!(seen_by_b(), 6);
    }
}
