//! Admission on PostgreSQL: a batch of URLs looked up, inserted and
//! updated with a statement each over arrays (`unnest`), as `policy::admit`
//! decides for each; and the sitemaps read for sources.

use super::spans::{write_spans, Runs};
use super::Action;
use super::{
    connect, group_id, group_id_or_create, hold_groups, in_transaction, items_named, kept_changes, off_runtime,
    opt_sec, pg, policy, retrying, sec, stored, Admission, AdmitPlan, AdmitRule, Client, DateTime, Existing,
    GenericClient, GhostUrl, GroupKey, HashMap, Intake, LedgerError, NewItem, PgLedger, PgOptions, Preview, Result,
    Row, SourceDocument, SourceFailure, SqlState, Transaction, Utc,
};
use crate::ledger::batches::{url_hash, BatchItem};
use crate::ledger::{batch_groups, look_up};
use rustc_hash::FxHashMap;

/// What admission decides on of an item's state: its state (in flight
/// where a reservation lists it), accepted at, due at.
type StateOf = (String, Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// The items of `rows` (of group `group`; columns `id, action, lastmod`
/// from `at`) as `Existing`, in their order, each with its state from the
/// span holding it. The spans are read by run, not an item at a time: the
/// group's spans from the one holding the least id to the greatest id,
/// in one statement through their key, then matched to the ids in order;
/// the ids the group's reservations list among them in a second.
pub(super) fn existing_rows(tx: &mut impl GenericClient, group: i64, rows: &[Row], at: usize) -> Result<Vec<Existing>> {
    let mut ids: Vec<i64> = rows.iter().map(|r| r.get(at)).collect();
    ids.sort_unstable();
    let (Some(&least), Some(&most)) = (ids.first(), ids.last()) else { return Ok(Vec::new()) };
    let spans = tx.query(
        "SELECT first, last, state, accepted_at, next_attempt_at FROM spans
         WHERE group_id = $1 AND first <= $3
             AND first >= COALESCE((SELECT max(first) FROM spans WHERE group_id = $1 AND first <= $2), $2)
         ORDER BY first",
        &[&group, &least, &most],
    )?;
    let held: std::collections::HashSet<i64> = tx
        .query("SELECT id FROM in_flight WHERE group_id = $1 AND id BETWEEN $2 AND $3", &[&group, &least, &most])?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut states: HashMap<i64, StateOf> = HashMap::with_capacity(ids.len());
    let mut k = 0;
    for id in ids {
        while k < spans.len() && spans[k].get::<_, i64>(1) < id {
            k += 1;
        }
        let Some(span) = spans.get(k).filter(|s| s.get::<_, i64>(0) <= id) else {
            return Err(LedgerError::Invalid(format!("spans: item {id} is in no span of its group")));
        };
        let state = if held.contains(&id) { "in_flight".to_string() } else { span.get(2) };
        states.insert(id, (state, span.get(3), span.get(4)));
    }
    rows.iter()
        .map(|r| {
            let id: i64 = r.get(at);
            let (state, accepted_at, next_attempt_at) = &states[&id];
            Ok(Existing {
                id,
                state: stored("spans", "state", state)?,
                action: stored("items", "action", r.get(at + 1))?,
                lastmod: r.get(at + 2),
                accepted_at: *accepted_at,
                next_attempt_at: *next_attempt_at,
            })
        })
        .collect()
}

/// The items of group `$1` at the keys `$2` (a `bigint[]`), by key: their
/// key, URL, then `existing_rows`' columns. The keys
/// are read through a subquery, as `items_named` reads ids: joined to `unnest`
/// of them, the planner hashed the keys and scanned the whole table while it
/// had no statistics of it, which made the first look-ups of a large submit
/// slower than reading by key (docs/performance.md, *Measured choices*).
pub(super) const ITEMS_AT_KEYS: &str = "SELECT i.url_key, i.url, i.id, i.action, i.lastmod
     FROM items i WHERE i.group_id = $1 AND i.url_key = ANY(ARRAY(SELECT unnest($2::bigint[])))
     ORDER BY i.url_key";

/// The items of group `$1` with the ids `$2` (a `bigint[]`, found by hash
/// through the group's hash runs), by id, read through a subquery as
/// `ITEMS_AT_KEYS` reads its keys (the same reason), with the same
/// columns.
pub(super) const ITEMS_AT_IDS: &str = "SELECT i.id, i.url, i.id, i.action, i.lastmod
     FROM items i WHERE i.group_id = $1 AND i.id = ANY(ARRAY(SELECT unnest($2::bigint[])))
     ORDER BY i.id";

/// What the ledger holds of each URL of `batch` (whose items are in the
/// groups `group_ids`, same order): the item, or, for a URL new to its
/// group, the key it takes (`look_up::resolve`); an item a reservation
/// lists is in flight (`item_states`). First by hash, as SQLite's
/// admission does: per group, the URLs' 128-bit hashes through the group's
/// hash runs (`batches::find_ids`), then the rows of the ids found, by id
/// (`ITEMS_AT_IDS`). The URLs not found (new, or dropped: an id found with
/// no item row) are then looked up by key (`by_key`), which gives each new
/// URL the key it takes, and also finds a URL whose hash a run did not
/// show this statement (a merge committed between reading a group's runs
/// and their pages): the items are still what the ledger holds. With
/// `lock`, the rows found are locked, by hash in id order, then by key in
/// (group, key) order; two runners locking overlapping batches in those
/// two orders may deadlock, which the server detects and `retrying` runs
/// again. With a `helper` and `look_up::SHARED_LOOK_UP` hashes or keys or
/// more to read, and no lock, each step reads half of each group's on the
/// helper, on a thread of its own (`shared_by_hash`).
pub(super) fn look_up(
    tx: &mut impl GenericClient,
    mut helper: Option<&mut Helper>,
    batch: &[NewItem],
    group_ids: &[i64],
    lock: bool,
) -> Result<Vec<std::result::Result<Existing, i64>>> {
    if lock {
        // The items' state is their spans': a look-up that decides to
        // write holds its groups' spans until it commits, so that no
        // answer moves them between its read and its write (the rows it
        // locks hold no state any more).
        let groups: Vec<i64> = group_ids.iter().copied().filter(|g| *g >= 0).collect();
        super::batches::lock_spans(tx, &groups)?;
    }
    let urls: Vec<&str> = batch.iter().map(|i| i.url.as_str()).collect();
    let hashes: Vec<u128> = urls.iter().map(|u| url_hash(u)).collect();
    let wanted = look_up::hashes_by_group(&hashes, group_ids);
    let sql = format!("{ITEMS_AT_IDS}{}", if lock { " FOR UPDATE OF i" } else { "" });
    // (A read that locks is the ledger's connection's alone.)
    let share = wanted.values().map(Vec::len).sum::<usize>() >= look_up::SHARED_LOOK_UP && !lock;
    let found = match helper.as_deref_mut().filter(|_| share).and_then(Helper::client) {
        Some(client) => match shared_by_hash(tx, client, &urls, &wanted) {
            Ok(found) => found,
            Err(lost) => {
                let Lost(found, e) = *lost;
                tracing::debug!("the look-up's second connection failed, reading on one: {e}");
                if let Some(helper) = helper.as_deref_mut() {
                    helper.client = Some(None);
                }
                found
            }
        },
        None => {
            let mut found = FxHashMap::default();
            by_hash(tx, &sql, &urls, &wanted, &mut found).map(|()| found)
        }
    };
    let found = found?;
    look_up::resolve_by_hash(&urls, group_ids, &hashes, &found, |urls, groups| by_key(tx, helper, urls, groups, lock))
}

/// What the look-up by hash found, keyed by (group, hash).
type ByHash = FxHashMap<(i64, u128), Existing>;

/// The items of each group of `wanted` at its hashes (`look_up::HashesByGroup`'s),
/// through the group's hash runs, then read by id (`sql`: `ITEMS_AT_IDS`,
/// perhaps locking), each into `found` under its (group, hash) when its URL
/// is the batch's (`urls`) at the hash's place. An id with no row is a URL
/// dropped: not found. A row whose URL is another (a 128-bit collision,
/// which the runs would otherwise hide) is not found either: the key
/// look-up then tells the two apart.
fn by_hash(
    tx: &mut impl GenericClient,
    sql: &str,
    urls: &[&str],
    wanted: &look_up::HashesByGroup,
    found: &mut ByHash,
) -> Result<()> {
    for (group, hashes) in wanted {
        let sought: Vec<u128> = hashes.iter().map(|h| h.0).collect();
        let ids = super::batches::find_ids(tx, *group, &sought)?;
        // The (hash, place) of each id found.
        let mut hits: Vec<(i64, u128, usize)> =
            ids.into_iter().zip(hashes).filter_map(|(id, &(hash, place))| Some((id?, hash, place))).collect();
        if hits.is_empty() {
            continue;
        }
        hits.sort_unstable();
        let wanted_ids: Vec<i64> = hits.iter().map(|h| h.0).collect();
        for chunk in wanted_ids.chunks(10_000) {
            let rows = tx.query(sql, &[group, &chunk])?;
            for (r, existing) in rows.iter().zip(existing_rows(tx, *group, &rows, 2)?) {
                let id: i64 = r.get(0);
                let Ok(k) = hits.binary_search_by_key(&id, |h| h.0) else { continue };
                let (_, hash, place) = hits[k];
                if urls[place] == r.get::<_, &str>(1) {
                    found.insert((*group, hash), existing);
                }
            }
        }
    }
    Ok(())
}

/// A shared look-up by hash whose helper failed (its connection lost):
/// what the ledger's connection then found alone, having read the
/// helper's half too, and the helper's error.
struct Lost(Result<ByHash>, LedgerError);

/// `look_up`'s look-up by hash on two connections at once, the ledger's
/// (`tx`, on this thread) and the helper's (`client`, on a thread of its
/// own): each looks up the lower or upper half of each group's sorted
/// hashes (so each reads its half of a merged run's pages) and reads the
/// rows of the ids it found. A statement of each reads at its own
/// snapshot, as any statement of the ledger's own connection does
/// (`Helper` says why that is sound). `Ok(Err(_))`: the ledger's own read
/// failed; `Err(Lost)`: the helper's did, and its half was read here.
fn shared_by_hash(
    tx: &mut impl GenericClient,
    client: &mut Client,
    urls: &[&str],
    wanted: &look_up::HashesByGroup,
) -> std::result::Result<Result<ByHash>, Box<Lost>> {
    let halves = |upper: bool| -> look_up::HashesByGroup {
        wanted
            .iter()
            .map(|(group, hashes)| {
                let (lower, higher) = hashes.split_at(hashes.len() / 2);
                (*group, if upper { higher } else { lower }.to_vec())
            })
            .collect()
    };
    let (mine, theirs) = (halves(false), halves(true));
    let mut found = ByHash::default();
    let (read, their_read) = std::thread::scope(|s| {
        let their_read = s.spawn(|| {
            let mut out = ByHash::default();
            by_hash(client, ITEMS_AT_IDS, urls, &theirs, &mut out).map(|()| out)
        });
        let read = by_hash(tx, ITEMS_AT_IDS, urls, &mine, &mut found);
        (read, their_read.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    });
    if let Err(e) = read {
        return Ok(Err(e));
    }
    match their_read {
        Ok(their_found) => {
            found.extend(their_found);
            Ok(Ok(found))
        }
        Err(e) => {
            let read = by_hash(tx, ITEMS_AT_IDS, urls, &theirs, &mut found).map(|()| found);
            Err(Box::new(Lost(read, e)))
        }
    }
}

/// The items of `urls` (in the groups `group_ids`, same order) by key, and
/// the keys the new ones take (`look_up::resolve`), with one statement a
/// group and round. With `lock`, the rows found are locked, in (group,
/// key) order. With a `helper` and `look_up::SHARED_LOOK_UP` keys or more
/// to read, it reads half of each group's keys at the same time, on a
/// thread of its own (the server then works on both: a look-up is its
/// statement's work).
fn by_key(
    tx: &mut impl GenericClient,
    mut helper: Option<&mut Helper>,
    urls: &[&str],
    group_ids: &[i64],
    lock: bool,
) -> Result<Vec<std::result::Result<Existing, i64>>> {
    let sql = format!("{ITEMS_AT_KEYS}{}", if lock { " FOR UPDATE OF i" } else { "" });
    look_up::resolve(urls, group_ids, |wanted, found| {
        let mut by_group = look_up::keys_by_group(wanted);
        // (A read that locks is the ledger's connection's alone.)
        let share = by_group.values().map(Vec::len).sum::<usize>() >= look_up::SHARED_LOOK_UP && !lock;
        let Some(client) = helper.as_deref_mut().filter(|_| share).and_then(Helper::client) else {
            return read_keys(tx, &sql, &by_group, found);
        };
        // The helper's half of each group's keys.
        let theirs: look_up::KeysByGroup =
            by_group.iter_mut().map(|(group, keys)| (*group, keys.split_off(keys.len() / 2))).collect();
        let (mine, read) = std::thread::scope(|s| {
            let read = s.spawn(|| -> Result<Vec<(i64, i64, String, Existing)>> {
                let mut out = Vec::new();
                for (group, keys) in &theirs {
                    let rows = client.query(ITEMS_AT_KEYS, &[group, keys])?;
                    for (r, existing) in rows.iter().zip(existing_rows(client, *group, &rows, 2)?) {
                        out.push((*group, r.get(0), r.get(1), existing));
                    }
                }
                Ok(out)
            });
            let mine = read_keys(tx, &sql, &by_group, found);
            (mine, read.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        });
        mine?;
        match read {
            Ok(rows) => {
                for (group, key, url, existing) in rows {
                    found((group, key), &url, existing);
                }
                Ok(())
            }
            // A helper that failed (its connection lost) fails no run: its
            // half is read here, and the run reads alone from now on.
            Err(e) => {
                tracing::debug!("the look-up's second connection failed, reading on one: {e}");
                if let Some(helper) = helper.as_deref_mut() {
                    helper.client = Some(None);
                }
                read_keys(tx, &sql, &theirs, found)
            }
        }
    })
}

/// The items of each group at its keys (`ITEMS_AT_KEYS`, or `sql`, the same
/// with a lock), each to `found`.
fn read_keys(
    tx: &mut impl GenericClient,
    sql: &str,
    by_group: &look_up::KeysByGroup,
    found: &mut look_up::Found<'_, Existing>,
) -> Result<()> {
    for (group, keys) in by_group {
        let rows = tx.query(sql, &[group, keys])?;
        for (r, existing) in rows.iter().zip(existing_rows(tx, *group, &rows, 2)?) {
            found((*group, r.get(0)), r.get::<_, &str>(1), existing);
        }
    }
    Ok(())
}

/// A second connection to the database beside the ledger's own, that only
/// reads, for a batch's look-up (`look_up`): connected the first time a
/// look-up is shared, then kept. None when it cannot connect: the
/// ledger's own connection then reads alone. A statement of each reads
/// at its own snapshot, as any statement of the ledger's own connection
/// does (`READ COMMITTED`): a look-up that decides to write more than new
/// items is decided again with its rows locked, and new items inserted
/// by another runner meanwhile conflict (`admit_once`).
pub(super) struct Helper {
    options: PgOptions,
    /// `Some(None)`: it could not connect.
    client: Option<Option<Client>>,
}

impl Helper {
    pub(super) fn new(options: &PgOptions) -> Helper {
        Helper { options: options.clone(), client: None }
    }

    fn client(&mut self) -> Option<&mut Client> {
        // A connection the server closed (a restart) is opened again.
        if matches!(&self.client, Some(Some(c)) if c.is_closed()) {
            self.client = None;
        }
        let options = &self.options;
        self.client
            .get_or_insert_with(|| {
                connect(options, true)
                    .inspect_err(|e| tracing::debug!("no helper connection for the look-up: {e}"))
                    .ok()
            })
            .as_mut()
    }

    /// The connection, to drop where the blocking client may (`off_runtime`).
    pub(super) fn take(&mut self) -> Option<Client> {
        self.client.take().flatten()
    }
}

impl Intake for PgLedger {
    fn preview(&mut self, batch: &[NewItem], rule: &AdmitRule, now: DateTime<Utc>) -> Result<Vec<Preview>> {
        let (groups, helper) = (&self.groups, &mut self.helper);
        let found = in_transaction(&mut self.client, |tx| {
            let group_ids = batch_groups::group_ids(batch, |g| Ok(group_id(tx, groups, g)?.unwrap_or(-1)))?;
            look_up::previewed(&group_ids, || look_up(tx, Some(&mut *helper), batch, &group_ids, false))
        })?;
        Ok(policy::preview(batch, found, rule, now))
    }

    /// Decided first by reading, no row locked: a batch that writes nothing
    /// (a run again over URLs accepted within the dedupe window) ends there,
    /// with no `FOR UPDATE` and nothing written. A batch that only inserts
    /// new items inserts them as decided (a URL another runner admitted
    /// meanwhile conflicts: the batch is then decided again, locked); any
    /// other is decided again with its rows locked (`admit_once`).
    fn admit(&mut self, batch: &[NewItem], now: DateTime<Utc>, rule: &AdmitRule) -> Result<Vec<Admission>> {
        let now = sec(now);
        let (groups, helper) = (&self.groups, &mut self.helper);
        let (group_ids, found) = in_transaction(&mut self.client, |tx| {
            let group_ids = batch_groups::group_ids(batch, |g| Ok(group_id(tx, groups, g)?.unwrap_or(-1)))?;
            let found = look_up(tx, Some(&mut *helper), batch, &group_ids, false)?;
            Ok((group_ids, found))
        })?;
        // A group new to the ledger is made under the lock.
        let mut decided = None;
        if !group_ids.contains(&-1) {
            let plan = AdmitPlan::new(batch, &group_ids, &found, rule, now);
            if !plan.writes() {
                return Ok(plan.admissions(&[], now));
            }
            if plan.requeued.is_empty() && plan.updates.is_empty() {
                decided = Some(plan);
            }
        }
        let cache = &self.groups;
        let conn = &mut self.client;
        let (out, created) = off_runtime(|| {
            let check = conn.checks_spans();
            let client = conn.live()?;
            retrying(|| admit_once(client, cache, batch, now, rule, decided.take(), check))
        })?;
        self.groups.extend(created);
        Ok(out)
    }

    /// The groups held and the rows locked, as an admission that writes.
    fn announce(&mut self, batch: &[NewItem], now: DateTime<Utc>) -> Result<u64> {
        let now = sec(now);
        let groups = &self.groups;
        in_transaction(&mut self.client, |tx| {
            let group_ids = batch_groups::group_ids(batch, |g| Ok(group_id(tx, groups, g)?.unwrap_or(-1)))?;
            hold_groups(tx, Some(&group_ids))?;
            let found = look_up(tx, None, batch, &group_ids, true)?;
            let named = policy::announced(&found, &group_ids);
            let written = write_spans(tx, &Runs::of(&named), ANNOUNCED, "state = 'queued'", &[&now])?;
            Ok(written.iter().map(|(_, first, last)| (last - first + 1) as u64).sum())
        })
    }

    fn source_documents(&mut self) -> Result<Vec<SourceDocument>> {
        self.transaction(|tx| source_documents(tx))
    }

    fn record_source_documents(&mut self, documents: &[SourceDocument]) -> Result<Vec<SourceDocument>> {
        self.transaction(|tx| {
            // Two runs reading the same new body agree on when it changed:
            // the second waits here for the first, then finds its digest.
            tx.batch_execute("LOCK TABLE sources IN SHARE ROW EXCLUSIVE MODE")?;
            let urls: Vec<&str> = documents.iter().map(|d| d.url.as_str()).collect();
            let stored: HashMap<String, (String, DateTime<Utc>)> = tx
                .query("SELECT url, digest, changed_at FROM sources WHERE url = ANY($1)", &[&urls])?
                .iter()
                .map(|r| (r.get(0), (r.get(1), r.get(2))))
                .collect();
            let documents = kept_changes(documents, |url| stored.get(url).map(|(d, at)| (d.as_str(), *at)));
            store_source_documents(tx, &documents, false)?;
            Ok(documents)
        })
    }

    fn ghost_url(&mut self, property: &str, ghost_id: &str) -> Result<Option<String>> {
        self.transaction(|tx| {
            let row = tx.query_opt(
                "SELECT url FROM ghost_urls WHERE property = $1 AND ghost_id = $2",
                &[&property, &ghost_id],
            )?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    fn record_ghost_url(&mut self, url: &GhostUrl) -> Result<()> {
        self.transaction(|tx| store_ghost_urls(tx, std::slice::from_ref(url)))
    }

    fn source_failures(&mut self) -> Result<Vec<SourceFailure>> {
        self.transaction(|tx| source_failures(tx, None))
    }

    fn record_source_failure(&mut self, failure: &SourceFailure) -> Result<SourceFailure> {
        self.transaction(|tx| {
            store_source_failures(tx, std::slice::from_ref(failure))?;
            let kept = source_failures(tx, Some((&failure.property, &failure.source)))?;
            kept.into_iter()
                .next()
                .ok_or_else(|| LedgerError::Invalid("a source failure just kept is not there".into()))
        })
    }

    fn clear_source_failure(&mut self, property: &str, source: &str) -> Result<Option<SourceFailure>> {
        self.transaction(|tx| {
            let kept = source_failures(tx, Some((property, source)))?.into_iter().next();
            if kept.is_some() {
                tx.execute("DELETE FROM source_failures WHERE property = $1 AND source = $2", &[&property, &source])?;
            }
            Ok(kept)
        })
    }

    fn record_source_reminders(&mut self, told: &[(String, String)], at: DateTime<Utc>) -> Result<()> {
        let properties: Vec<&str> = told.iter().map(|(p, _)| p.as_str()).collect();
        let sources: Vec<&str> = told.iter().map(|(_, s)| s.as_str()).collect();
        let at = sec(at);
        self.transaction(|tx| {
            tx.execute(
                "UPDATE source_failures f SET reminded_at = $3
                 FROM unnest($1::text[], $2::text[]) AS t (property, source)
                 WHERE f.property = t.property AND f.source = t.source",
                &[&properties, &sources, &at],
            )?;
            Ok(())
        })
    }
}

/// The sources whose last read failed (`only`: one property's source), by property and source.
pub(super) fn source_failures(tx: &mut impl GenericClient, only: Option<(&str, &str)>) -> Result<Vec<SourceFailure>> {
    let (property, source) = only.unzip();
    tx.query(
        "SELECT property, source, reason, message, since, failed_at, reminded_at FROM source_failures
         WHERE $1::text IS NULL OR (property = $1 AND source = $2) ORDER BY property, source",
        &[&property, &source],
    )?
    .iter()
    .map(|r| {
        Ok(SourceFailure {
            property: r.get(0),
            source: r.get(1),
            reason: stored("source_failures", "reason", r.get(2))?,
            message: r.get(3),
            since: r.get(4),
            failed_at: r.get(5),
            reminded_at: r.get(6),
        })
    })
    .collect()
}

/// Keeps failed reads of sources in one statement: each replaces the
/// reason, message and latest failure kept of its source unless that
/// failed later, and keeps the earlier `since` and the later reminder (a
/// copy merges with the same rule).
pub(super) fn store_source_failures(tx: &mut impl GenericClient, failures: &[SourceFailure]) -> Result<()> {
    let properties: Vec<&str> = failures.iter().map(|f| f.property.as_str()).collect();
    let sources: Vec<&str> = failures.iter().map(|f| f.source.as_str()).collect();
    let reasons: Vec<String> = failures.iter().map(|f| f.reason.to_string()).collect();
    let messages: Vec<&str> = failures.iter().map(|f| f.message.as_str()).collect();
    let since: Vec<DateTime<Utc>> = failures.iter().map(|f| sec(f.since)).collect();
    let failed: Vec<DateTime<Utc>> = failures.iter().map(|f| sec(f.failed_at)).collect();
    let reminded: Vec<Option<DateTime<Utc>>> = failures.iter().map(|f| f.reminded_at.map(sec)).collect();
    tx.execute(
        "INSERT INTO source_failures AS f (property, source, reason, message, since, failed_at, reminded_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[],
                              $6::timestamptz[], $7::timestamptz[])
         ON CONFLICT (property, source) DO UPDATE SET
             reason = CASE WHEN excluded.failed_at >= f.failed_at THEN excluded.reason ELSE f.reason END,
             message = CASE WHEN excluded.failed_at >= f.failed_at THEN excluded.message ELSE f.message END,
             failed_at = greatest(f.failed_at, excluded.failed_at),
             since = least(f.since, excluded.since),
             reminded_at = greatest(f.reminded_at, excluded.reminded_at)",
        &[&properties, &sources, &reasons, &messages, &since, &failed, &reminded],
    )?;
    Ok(())
}

/// The public URLs of Ghost's posts and pages, by property and id.
pub(super) fn ghost_urls(tx: &mut impl GenericClient) -> Result<Vec<GhostUrl>> {
    Ok(tx
        .query("SELECT property, ghost_id, url, announced_at FROM ghost_urls ORDER BY property, ghost_id", &[])?
        .iter()
        .map(|r| GhostUrl { property: r.get(0), ghost_id: r.get(1), url: r.get(2), announced_at: r.get(3) })
        .collect())
}

/// Keeps Ghost's public URLs in one statement, each replacing what was
/// kept of its post unless that was announced later (a copy merges with
/// the same rule).
pub(super) fn store_ghost_urls(tx: &mut impl GenericClient, urls: &[GhostUrl]) -> Result<()> {
    let properties: Vec<&str> = urls.iter().map(|u| u.property.as_str()).collect();
    let ids: Vec<&str> = urls.iter().map(|u| u.ghost_id.as_str()).collect();
    let texts: Vec<&str> = urls.iter().map(|u| u.url.as_str()).collect();
    let at: Vec<DateTime<Utc>> = urls.iter().map(|u| u.announced_at).collect();
    tx.execute(
        "INSERT INTO ghost_urls AS g (property, ghost_id, url, announced_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
         ON CONFLICT (property, ghost_id) DO UPDATE SET url = excluded.url, announced_at = excluded.announced_at
         WHERE excluded.announced_at >= g.announced_at",
        &[&properties, &ids, &texts, &at],
    )?;
    Ok(())
}

/// The sitemaps read for sources, by URL.
pub(super) fn source_documents(tx: &mut impl GenericClient) -> Result<Vec<SourceDocument>> {
    tx.query(
        "SELECT url, etag, last_modified, digest, kind, routes, fetched_at, changed_at FROM sources ORDER BY url",
        &[],
    )?
    .iter()
    .map(|r| {
        Ok(SourceDocument {
            url: r.get(0),
            etag: r.get(1),
            last_modified: r.get(2),
            digest: r.get(3),
            kind: stored("sources", "kind", r.get(4))?,
            routes: r.get(5),
            fetched_at: r.get(6),
            changed_at: r.get(7),
        })
    })
    .collect()
}

/// Keeps sitemaps read, replacing what was kept of each URL (with `later`,
/// only by a later read: a copy merges).
pub(super) fn store_source_documents(
    tx: &mut impl GenericClient,
    documents: &[SourceDocument],
    later: bool,
) -> Result<()> {
    let only = if later { " WHERE excluded.fetched_at >= sources.fetched_at" } else { "" };
    let sql = format!(
        "INSERT INTO sources (url, etag, last_modified, digest, kind, routes, fetched_at, changed_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (url) DO UPDATE SET etag = excluded.etag, last_modified = excluded.last_modified,
             digest = excluded.digest, kind = excluded.kind, routes = excluded.routes,
             fetched_at = excluded.fetched_at, changed_at = excluded.changed_at{only}"
    );
    for d in documents {
        tx.execute(
            &sql,
            &[
                &d.url,
                &d.etag,
                &d.last_modified,
                &d.digest,
                &d.kind.as_str(),
                &d.routes,
                &sec(d.fetched_at),
                &sec(d.changed_at),
            ],
        )?;
    }
    Ok(())
}

/// The groups of the items about to be inserted (`groups`, one per item)
/// are in the ledger: what a foreign key would check of every row, once
/// per group (schema 7 dropped the key: docs/design.md).
fn groups_exist(tx: &mut Transaction<'_>, groups: &[i64]) -> Result<()> {
    let mut wanted = groups.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.is_empty() {
        return Ok(());
    }
    let found: i64 = tx.query_one("SELECT count(*) FROM groups WHERE id = ANY($1)", &[&wanted])?.get(0);
    batch_groups::groups_found(found, wanted.len())
}

/// Groups a transaction created, with their ids.
pub(super) type CreatedGroups = Vec<(GroupKey, i64)>;

/// One attempt at admitting a batch, in one transaction: the groups (held
/// `FOR SHARE`: no claim of them commits meanwhile), a
/// lookup of every URL (its rows locked, in (group, key) order, so that two
/// runners admitting overlapping lists wait for each other, never
/// deadlock), `policy::admit` for each, then one statement for the new
/// items, one per action for the requeued, one for the updated — or, with
/// `decided` (a plan read unlocked that only inserts), its new items alone.
/// A URL another runner inserted meanwhile runs the whole transaction
/// again, undecided.
pub(super) fn admit_once(
    client: &mut Client,
    cache: &HashMap<GroupKey, i64>,
    batch: &[NewItem],
    now: DateTime<Utc>,
    rule: &AdmitRule,
    decided: Option<AdmitPlan>,
    check: bool,
) -> Result<(Vec<Admission>, CreatedGroups)> {
    let mut tx = client.transaction()?;
    let mut ids: HashMap<GroupKey, i64> = HashMap::new();
    let plan = match decided {
        Some(plan) => plan,
        None => {
            let group_ids = batch_groups::group_ids(batch, |g| match ids.get(g) {
                Some(id) => Ok(*id),
                None => {
                    let id = group_id_or_create(&mut tx, cache, g)?;
                    ids.insert(g.clone(), id);
                    Ok(id)
                }
            })?;
            // Which items are in flight is read after no claim of these
            // groups can commit before this transaction ends.
            hold_groups(&mut tx, Some(&group_ids))?;
            let found = look_up(&mut tx, None, batch, &group_ids, true)?;
            AdmitPlan::new(batch, &group_ids, &found, rule, now)
        }
    };
    let fresh = &plan.inserts;
    let groups: Vec<i64> = fresh.iter().map(|f| f.1).collect();
    groups_exist(&mut tx, &groups)?;
    let keys: Vec<i64> = fresh.iter().map(|f| f.2).collect();
    let urls: Vec<&str> = fresh.iter().map(|f| batch[f.0].url.as_str()).collect();
    let new_actions: Vec<&str> = fresh.iter().map(|f| batch[f.0].action.as_str()).collect();
    let new_lastmods: Vec<Option<DateTime<Utc>>> = fresh.iter().map(|f| opt_sec(batch[f.0].lastmod)).collect();
    // A plain `INSERT`, not `ON CONFLICT DO NOTHING`, because PostgreSQL's
    // speculative insertion checks the key index before each row and writes a
    // confirmation after it, which made the statement markedly slower
    // (docs/performance.md, *Measured choices*). A key another runner took
    // meanwhile fails the statement, and the transaction is decided again.
    // The ids are taken in the order of the rows, each group's in a run of
    // its own (input order within it), so that each run is one batch row.
    let inserted = tx.query(
        "INSERT INTO items (group_id, url_key, url, action, lastmod)
         SELECT t.group_id, t.url_key, t.url, t.action, t.lastmod
         FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[]) WITH ORDINALITY
             AS t (group_id, url_key, url, action, lastmod, n)
         ORDER BY t.group_id, t.n
         RETURNING group_id, url_key, id",
        &[&groups, &keys, &urls, &new_actions, &new_lastmods],
    );
    let inserted: HashMap<(i64, i64), i64> = match inserted {
        Ok(rows) => rows.iter().map(|r| ((r.get(0), r.get(1)), r.get(2))).collect(),
        // Another runner admitted some of these URLs meanwhile: decide again.
        Err(e) if key_taken(&e) => return Err(LedgerError::Retry),
        Err(e) => return Err(e.into()),
    };
    let new_ids: Vec<i64> = fresh.iter().map(|(_, group, key)| inserted[&(*group, *key)]).collect();
    // Issue 48, on its branch: each group's new items as batch rows too,
    // cut wherever another runner took an id between two of this
    // statement's (a sequence's ids are not held for one statement).
    let mut written: Vec<(i64, i64, BatchItem)> = fresh
        .iter()
        .zip(&new_ids)
        .map(|((index, group, _), id)| {
            let item = &batch[*index];
            let lastmod = opt_sec(item.lastmod).map(|t| t.timestamp());
            (*group, *id, BatchItem { url: &item.url, lastmod, deleted: item.action == Action::Deleted })
        })
        .collect();
    written.sort_unstable_by_key(|(_, id, _)| *id);
    super::batches::write_new_items(&mut tx, &written, now)?;
    // Issue 48, on its branch: the spans of every group written, locked
    // at once in group order (see `batches::lock_spans`), then the new
    // items' spans as written, the requeued read back.
    let mut span_groups: Vec<i64> = groups.clone();
    span_groups.extend(plan.requeued.iter().map(|((group, ..), _)| *group));
    super::batches::lock_spans(&mut tx, &span_groups)?;
    let new: Vec<(i64, i64)> = written.iter().map(|(group, id, _)| (*group, *id)).collect();
    super::batches::new_queued_spans(&mut tx, &new, now)?;
    for ((group, action, due), ids) in &plan.requeued {
        tx.execute(&format!("UPDATE items SET action = $2 WHERE {}", items_named(ids)), &[ids, &action.as_str()])?;
        write_spans(&mut tx, &Runs::of_group(*group, ids), REQUEUED, "true", &[&now, &sec(*due)])?;
    }
    if !plan.updates.is_empty() {
        let updated: Vec<i64> = plan.updates.iter().map(|u| u.0).collect();
        let actions: Vec<&str> = plan.updates.iter().map(|u| u.1.as_str()).collect();
        let lastmods: Vec<Option<DateTime<Utc>>> = plan.updates.iter().map(|u| opt_sec(u.2)).collect();
        tx.execute(
            "UPDATE items SET action = u.action, lastmod = u.lastmod
             FROM unnest($1::bigint[], $2::text[], $3::timestamptz[]) AS u (id, action, lastmod) WHERE items.id = u.id",
            &[&updated, &actions, &lastmods],
        )?;
    }
    // Issue 48, on its branch: the changes of every item whose action or
    // lastmod this admission may have set (requeued or updated), at once.
    let changed: Vec<i64> =
        plan.requeued.values().flat_map(|ids| ids.iter().copied()).chain(plan.updates.iter().map(|u| u.0)).collect();
    super::batches::set_changes(&mut tx, &changed)?;
    let out = plan.admissions(&new_ids, now);
    super::commit(tx, check)?;
    let created = ids.into_iter().filter(|(key, _)| !cache.contains_key(key)).collect();
    Ok((out, created))
}

/// An announced item's state, over a span's columns: accepted at `$4`.
const ANNOUNCED: &str = "state = 'accepted', accepted_at = $4, last_class = 'accepted', next_attempt_at = NULL,
     streak = 0, streak_started_at = NULL";

/// A requeued item's state, over a span's columns: queued at `$4`, due at
/// `$5`.
const REQUEUED: &str = "state = 'queued', next_attempt_at = $5, enqueued_at = $4, streak = 0, streak_started_at = NULL";

/// Whether `err` is an insert's item meeting another item of the same
/// (group, key): the `items_key` constraint.
fn key_taken(err: &pg::Error) -> bool {
    err.as_db_error().is_some_and(|e| *e.code() == SqlState::UNIQUE_VIOLATION && e.constraint() == Some("items_key"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::conformance;
    use crate::ledger::*;

    /// A batch decided by reading to be new, then admitted by another
    /// runner before this one inserts it, is not inserted twice: the
    /// insert-only attempt asks to be run again, and the next attempt (with
    /// its rows locked) finds them queued.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_a_decision_another_runner_overtook_is_made_again_locked() {
        let mut a = conformance::test_postgres();
        let options = PgOptions { schema: a.schema.clone(), ..test_options() };
        let mut b = PgLedger::open(&options).unwrap();
        let batch = conformance::items(3);
        let now: DateTime<Utc> = "2026-12-03T09:00:00Z".parse().unwrap();
        let rule = conformance::dedupe_day();
        a.admit(&batch[..1], now, &rule).unwrap();
        let (group_ids, found) = a
            .with_groups(|tx, groups| {
                let group_ids = batch_groups::group_ids(&batch, |g| Ok(group_id(tx, groups, g)?.unwrap_or(-1)))?;
                Ok((group_ids.clone(), look_up(tx, None, &batch, &group_ids, false)?))
            })
            .unwrap();
        let plan = AdmitPlan::new(&batch, &group_ids, &found, &rule, now);
        assert_eq!((plan.inserts.len(), plan.requeued.len(), plan.updates.len()), (2, 0, 0));
        b.admit(&batch, now, &rule).unwrap();
        let client = a.client.as_mut().unwrap();
        let stale = admit_once(client, &HashMap::new(), &batch, now, &rule, Some(plan), true);
        assert!(matches!(stale, Err(LedgerError::Retry)), "{:?}", stale.map(|r| r.0));
        let admitted = a.admit(&batch, now, &rule).unwrap();
        assert!(admitted.iter().all(|a| matches!(a, Admission::AlreadyQueued { .. })), "{admitted:?}");
    }

    /// Schema 7 has no foreign key from items to their group: an item of a
    /// group this runner believes is in the ledger, which is not, is refused
    /// by admission's own check, and nothing of its batch is kept.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_admission_refuses_an_item_of_a_group_not_in_the_ledger() {
        let mut ledger = conformance::test_postgres();
        let (group, batch) = (conformance::group(), conformance::items(3));
        let now: DateTime<Utc> = "2026-12-03T09:00:00Z".parse().unwrap();
        let rule = conformance::dedupe_day();
        let believed = HashMap::from([(group.clone(), 999_999)]);
        let client = ledger.client.as_mut().unwrap();
        let err = admit_once(client, &believed, &batch, now, &rule, None, true).map(|r| r.0).unwrap_err().to_string();
        assert!(err.contains("not in the ledger"), "{err}");
        let items: i64 = client.query_one("SELECT count(*) FROM items", &[]).unwrap().get(0);
        assert_eq!(items, 0, "nothing of the refused batch is kept");
        // The same batch with the group as it is in the ledger goes in.
        assert_eq!(ledger.admit(&batch, now, &rule).unwrap().len(), 3);
    }

    /// A look-up shared with the helper connection finds what the ledger's
    /// own connection finds alone: items of two groups (their keys in both
    /// halves), queued and in flight, URLs new to the ledger, a new URL
    /// twice. A batch of groups new to the ledger connects no helper.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn a_look_up_shared_with_the_helper_finds_what_one_connection_finds() {
        let mut ledger = conformance::test_postgres();
        let item = conformance::two_groups();
        let now: DateTime<Utc> = "2026-12-03T09:00:00Z".parse().unwrap();
        let rule = conformance::dedupe_day();
        let held: Vec<NewItem> = (0..3_000).map(|i| item(0, i)).chain((0..2_000).map(|i| item(1, i))).collect();
        ledger.admit(&held, now, &rule).unwrap();
        assert!(ledger.helper.client.is_none(), "new groups: nothing to look up, no helper");
        let again = ledger.admit(&held, now, &rule).unwrap();
        assert!(again.iter().all(|a| matches!(a, Admission::AlreadyQueued { .. })));
        assert!(matches!(ledger.helper.client, Some(Some(_))), "a batch decided by reading shares its look-up");
        // In flight: a's first 1,200 items and b's first 1,600 (by id).
        for (group, n) in [(item(0, 0).group, 1_200), (item(1, 0).group, 1_600)] {
            let spec = ClaimSpec {
                windows: &[],
                max_items: n,
                pace: None,
                now: Now::pinned(now),
                credential: None,
                order: crate::model::SubmitOrder::Oldest,
            };
            let claimed = ledger.claim(&group, &spec, &Owner::current(), &mut |_, _, _| {}).unwrap();
            assert_eq!(claimed.items.len(), n);
        }
        let mut batch: Vec<NewItem> =
            (1_000..4_000).map(|i| item(0, i)).chain((1_500..2_500).map(|i| item(1, i))).collect();
        batch.extend((0..1_000).step_by(3).map(|i| item(0, i)));
        batch.push(item(1, 4_000));
        batch.push(item(1, 4_000));
        let group_ids = ledger
            .with_groups(|tx, groups| batch_groups::group_ids(&batch, |g| Ok(group_id(tx, groups, g)?.unwrap())))
            .unwrap();
        let alone = ledger.transaction(|tx| look_up(tx, None, &batch, &group_ids, false)).unwrap();
        let (client, helper) = (&mut ledger.client, &mut ledger.helper);
        let shared = in_transaction(client, |tx| look_up(tx, Some(&mut *helper), &batch, &group_ids, false)).unwrap();
        assert_eq!(shared, alone);
        let states = |state: ItemState| alone.iter().filter(|f| matches!(f, Ok(e) if e.state == state)).count();
        assert_eq!(alone.iter().filter(|f| f.is_err()).count(), 1_000 + 500 + 2, "new URLs");
        assert_eq!((states(ItemState::Queued), states(ItemState::InFlight)), (1_800 + 400, 200 + 334 + 100));
        // The same URL twice: one new key.
        assert_eq!(alone[alone.len() - 1], alone[alone.len() - 2]);
        // The helper's connection lost: the look-up is still whole, read on
        // one connection, and the run goes on without a helper.
        let Some(Some(client)) = &mut ledger.helper.client else { panic!("connected") };
        let read_only: String = client.query_one("SHOW default_transaction_read_only", &[]).unwrap().get(0);
        assert_eq!(read_only, "on", "the helper writes nothing");
        let pid: i32 = client.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
        ledger.transaction(|tx| Ok(tx.execute("SELECT pg_terminate_backend($1)", &[&pid])?)).unwrap();
        let (client, helper) = (&mut ledger.client, &mut ledger.helper);
        let lost = in_transaction(client, |tx| look_up(tx, Some(&mut *helper), &batch, &group_ids, false)).unwrap();
        assert_eq!(lost, alone);
        assert!(matches!(ledger.helper.client, Some(None)), "no helper after it failed");
    }

    /// Admission finds what it holds by hash through the runs, then reads
    /// it by id, alone, shared with the helper and locked alike: an item
    /// whose key no longer leads to it is found all the same; a URL
    /// dropped is new again at its own key, and once submitted again is
    /// found at its new id; an id found whose row holds another URL (as a
    /// 128-bit collision would) is not that URL's, which then takes the
    /// next key (the other URL holds its own).
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_a_look_up_finds_items_by_hash_and_reads_them_by_id() {
        use crate::ledger::url_keys::{next_key, url_key};
        let mut ledger = conformance::test_postgres();
        let now: DateTime<Utc> = "2026-12-03T09:00:00Z".parse().unwrap();
        let rule = conformance::dedupe_day();
        let batch = conformance::items(look_up::SHARED_LOOK_UP + 100);
        ledger.admit(&batch, now, &rule).unwrap();
        let id_of = |ledger: &mut PgLedger, k: usize| -> i64 {
            let url = batch[k].url.clone();
            ledger.transaction(|tx| Ok(tx.query_one("SELECT id FROM items WHERE url = $1", &[&url])?.get(0))).unwrap()
        };
        let (ids, last) = ([0, 9, 2999].map(|k| id_of(&mut ledger, k)), id_of(&mut ledger, batch.len() - 1));
        let moved = [batch[9].url.clone(), batch[2999].url.clone()];
        let other = batch[29].url.clone();
        ledger
            .transaction(|tx| {
                tx.execute(
                    "UPDATE items SET url_key = url_key # 6148914691236517205 WHERE url = ANY($1)",
                    &[&&moved[..]],
                )?;
                Ok(tx.execute("UPDATE items SET url = url || '?another' WHERE url = $1", &[&other])?)
            })
            .unwrap();
        let filter = ItemFilter { url: Some(batch[19].url.clone()), ..Default::default() };
        assert_eq!(ledger.drop_items(&filter, now).unwrap(), 1);
        let group_ids = ledger
            .with_groups(|tx, groups| batch_groups::group_ids(&batch, |g| Ok(group_id(tx, groups, g)?.unwrap())))
            .unwrap();
        let alone = ledger.transaction(|tx| look_up(tx, None, &batch, &group_ids, false)).unwrap();
        let locked = ledger.transaction(|tx| look_up(tx, None, &batch, &group_ids, true)).unwrap();
        let (client, helper) = (&mut ledger.client, &mut ledger.helper);
        let shared = in_transaction(client, |tx| look_up(tx, Some(&mut *helper), &batch, &group_ids, false)).unwrap();
        assert!(matches!(ledger.helper.client, Some(Some(_))), "shared with the helper");
        assert_eq!(shared, alone);
        assert_eq!(locked, alone);
        let id = |k: usize| alone[k].as_ref().map(|e| e.id).map_err(|key| *key);
        assert_eq!((id(0), id(9), id(2999), id(batch.len() - 1)), (Ok(ids[0]), Ok(ids[1]), Ok(ids[2]), Ok(last)));
        assert_eq!(id(19), Err(url_key(&batch[19].url)), "dropped: new at its key");
        assert_eq!(id(29), Err(next_key(url_key(&batch[29].url))), "its key holds another URL");
        assert_eq!(alone.iter().filter(|f| f.is_err()).count(), 2);
        // Submitted again, the dropped URL is found by hash at its new id.
        ledger.admit(&batch[19..20], now, &rule).unwrap();
        let again = id_of(&mut ledger, 19);
        assert!(again > last, "a new id: {again}");
        let found = ledger.transaction(|tx| look_up(tx, None, &batch[19..20], &group_ids[19..20], false)).unwrap();
        assert_eq!(found[0].as_ref().map(|e| e.id), Ok(again));
        let found = ledger.transaction(|tx| {
            let wanted = look_up::hashes_by_group(&[url_hash(&batch[19].url)], &group_ids[19..20]);
            let mut found = FxHashMap::default();
            by_hash(tx, ITEMS_AT_IDS, &[&batch[19].url], &wanted, &mut found)?;
            Ok(found.into_values().map(|e| e.id).collect::<Vec<_>>())
        });
        assert_eq!(found.unwrap(), [again], "by hash, not by key");
    }

    fn test_options() -> PgOptions {
        PgOptions {
            url: std::env::var("INDEXQ_TEST_PG").unwrap(),
            schema: String::new(),
            password: std::env::var("INDEXQ_TEST_PG_PASSWORD").ok(),
            timeout: std::time::Duration::from_secs(10),
            lease: crate::ledger::owner::LEASE,
        }
    }
}
