//! Admission on PostgreSQL: a batch of URLs looked up by hash (schema 12:
//! no table of items), its new items written as batch rows and spans, the
//! requeued and updated as writes of spans and `item_changes`, as
//! `policy::admit` decides for each; and the sitemaps read for sources.

use super::schema::ID_BLOCK;
use super::session::{Session, Statements};
use super::spans::{write_spans, Runs};
use super::Action;
use super::{
    connect, group_id, group_id_or_create, hold_groups, in_transaction, kept_changes, off_runtime, opt_sec, policy,
    retrying, sec, stored, without_transaction, Admission, AdmitPlan, AdmitRule, Client, DateTime, Existing,
    GenericClient, GhostUrl, GroupKey, HashMap, Intake, LedgerError, NewItem, PgLedger, PgOptions, Preview, Result,
    SourceDocument, SourceFailure, Transaction, Utc,
};
use crate::ledger::batches::{url_hash, BatchItem};
use crate::ledger::kept_runs::RunKey;
use crate::ledger::{batch_groups, look_up};

/// What admission decides on of an item's state: its state (in flight
/// where a reservation lists it), accepted at, due at.
type StateOf = (String, Option<DateTime<Utc>>, Option<DateTime<Utc>>);

/// The items `ids` of group `group` (found by hash), as `Existing`, in the
/// order given; `None` for an id no span holds (a URL dropped: new again).
/// The state of each from its span, read by run, not an item at a time:
/// the group's spans from the one holding the least id to the greatest id,
/// in one statement through their key, then matched to the ids in order;
/// the ids the group's reservations list among them in a second. The
/// lastmod and action of each from `item_changes` or its batch row
/// (`batches::lastmod_and_action`).
pub(super) fn existing_of(
    tx: &mut Session<'_, impl GenericClient>,
    group: i64,
    ids: &[i64],
) -> Result<Vec<Option<Existing>>> {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    let (Some(&least), Some(&most)) = (sorted.first(), sorted.last()) else { return Ok(Vec::new()) };
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
    for id in sorted {
        while k < spans.len() && spans[k].get::<_, i64>(1) < id {
            k += 1;
        }
        let Some(span) = spans.get(k).filter(|s| s.get::<_, i64>(0) <= id) else { continue };
        let state = if held.contains(&id) { "in_flight".to_string() } else { span.get(2) };
        states.insert(id, (state, span.get(3), span.get(4)));
    }
    let live: Vec<i64> = ids.iter().copied().filter(|id| states.contains_key(id)).collect();
    let mut values: HashMap<i64, super::batches::Values> = HashMap::with_capacity(live.len());
    for (id, v) in live.iter().zip(super::batches::lastmod_and_action(tx, &live)?) {
        let v = v.ok_or_else(|| LedgerError::Invalid(format!("batches: item {id} is in no batch")))?;
        values.insert(*id, v);
    }
    ids.iter()
        .map(|id| {
            let Some((state, accepted_at, next_attempt_at)) = states.get(id) else { return Ok(None) };
            let (lastmod, action) = values[id];
            Ok(Some(Existing {
                id: *id,
                state: stored("spans", "state", state)?,
                action,
                lastmod: lastmod.and_then(|t| DateTime::from_timestamp(t, 0)),
                accepted_at: *accepted_at,
                next_attempt_at: *next_attempt_at,
            }))
        })
        .collect()
}

/// What the ledger holds of each URL of `batch` (whose items are in the
/// groups `group_ids`, same order): the item, or, for a URL new to its
/// group, the place in the batch of its first sight in that group (so that
/// the same URL twice is one new item). By hash alone (issue 48; the
/// design's *Collisions*: a hit is not compared with its text): per group,
/// the URLs' 128-bit hashes through the group's hash runs
/// (`batches::find_ids`), then the state of the ids found from their
/// spans (`existing_of`); an id no span holds was dropped, and its URL is
/// new again. With `lock`, the groups' spans are held first
/// (`batches::lock_spans`, in group order) until the transaction ends:
/// no answer moves them, and no other admission of these groups writes
/// new items, between this read and the writes. With a `helper` and
/// `look_up::SHARED_LOOK_UP` hashes or more to read, and no lock, half of
/// each group's hashes are read on the helper, on a thread of its own
/// (`shared_by_hash`).
pub(super) fn look_up(
    tx: &mut Session<'_, impl GenericClient>,
    helper: Option<&mut Helper>,
    batch: &[NewItem],
    group_ids: &[i64],
    lock: bool,
) -> Result<Vec<std::result::Result<Existing, i64>>> {
    Ok(look_up_seen(tx, helper, batch, group_ids, lock)?.0)
}

/// The runs of each group a look-up searched for every hash it sought in
/// the group (on both connections when it was shared), by group. A run
/// never changes once written: a look-up of the same hashes made again
/// need not search them (`admit_once`).
pub(super) type SeenRuns = HashMap<i64, Vec<RunKey>>;

/// `look_up`, and the runs it searched.
fn look_up_seen(
    tx: &mut Session<'_, impl GenericClient>,
    mut helper: Option<&mut Helper>,
    batch: &[NewItem],
    group_ids: &[i64],
    lock: bool,
) -> Result<(Vec<std::result::Result<Existing, i64>>, SeenRuns)> {
    if lock {
        let groups: Vec<i64> = group_ids.iter().copied().filter(|g| *g >= 0).collect();
        super::batches::lock_spans(tx, &groups)?;
    }
    let hashes: Vec<u128> = batch.iter().map(|i| url_hash(&i.url)).collect();
    let sought = look_up::Sought::of(&hashes, group_ids);
    sought.distinct_urls(|at| &batch[at].url)?;
    // (A read that locks is the ledger's connection's alone.)
    let share = sought.distinct() >= look_up::SHARED_LOOK_UP && !lock;
    let mut found = vec![None; batch.len()];
    let read = match helper.as_deref_mut().filter(|_| share).and_then(Helper::client) {
        Some(mut client) => match shared_by_hash(tx, &mut client, &sought.by_group, &mut found) {
            Ok(read) => read,
            Err(lost) => {
                let Lost(read, e) = *lost;
                tracing::debug!("the look-up's second connection failed, reading on one: {e}");
                if let Some(helper) = helper {
                    helper.client = Some(None);
                }
                read
            }
        },
        None => by_hash(tx, &sought.by_group, &mut |place, e| found[place] = Some(e)),
    };
    Ok((sought.each_url(&found), read?))
}

/// The items of each group of `wanted` at its hashes (`look_up::HashesByGroup`'s),
/// through the group's hash runs, each an item where a span holds it
/// (`existing_of`, 10,000 ids a time), to `sink` with the place of the
/// first URL of its hash.
fn by_hash(
    tx: &mut Session<'_, impl GenericClient>,
    wanted: &look_up::HashesByGroup,
    sink: &mut dyn FnMut(usize, Existing),
) -> Result<SeenRuns> {
    let mut seen = SeenRuns::new();
    for (group, hashes) in wanted {
        let sought: Vec<u128> = hashes.iter().map(|h| h.0).collect();
        let (ids, runs) = super::batches::find_ids_past(tx, *group, &sought, &[])?;
        seen.insert(*group, runs);
        let mut hits: Vec<(i64, usize)> =
            ids.into_iter().zip(hashes).filter_map(|(id, &(_, place))| Some((id?, place))).collect();
        hits.sort_unstable();
        for chunk in hits.chunks(10_000) {
            let ids: Vec<i64> = chunk.iter().map(|h| h.0).collect();
            for ((_, place), existing) in chunk.iter().zip(existing_of(tx, *group, &ids)?) {
                if let Some(existing) = existing {
                    sink(*place, existing);
                }
            }
        }
    }
    Ok(seen)
}

/// The runs both `a` and `b` searched, by group: those that each half of
/// a shared look-up searched for its hashes.
fn seen_by_both(a: SeenRuns, mut b: SeenRuns) -> SeenRuns {
    a.into_iter()
        .map(|(group, mut runs)| {
            let theirs = b.remove(&group).unwrap_or_default();
            runs.retain(|run| theirs.contains(run));
            (group, runs)
        })
        .collect()
}

/// A shared look-up by hash whose helper failed (its connection lost):
/// how the ledger's connection then read alone, having read the helper's
/// half too, and the helper's error.
struct Lost(Result<SeenRuns>, LedgerError);

/// `look_up`'s look-up by hash on two connections at once, the ledger's
/// (`tx`, on this thread) and the helper's (`client`, on a thread of its
/// own), into `found` (a slot a URL of the batch): each looks up the lower
/// or upper half of each group's sorted hashes (so each reads its half of a
/// merged run's pages) and the spans of the ids it found. A statement of
/// each reads at its own snapshot, as any statement of the ledger's own
/// connection does (`Helper` says why that is sound). `Ok(Err(_))`: the
/// ledger's own read failed; `Err(Lost)`: the helper's did, and its half
/// was read here.
fn shared_by_hash(
    tx: &mut Session<'_, impl GenericClient>,
    client: &mut Session<'_, Client>,
    wanted: &look_up::HashesByGroup,
    found: &mut [Option<Existing>],
) -> std::result::Result<Result<SeenRuns>, Box<Lost>> {
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
    let (read, their_read) = std::thread::scope(|s| {
        let their_read = s.spawn(|| {
            let mut out = Vec::new();
            by_hash(client, &theirs, &mut |place, e| out.push((place, e))).map(|seen| (out, seen))
        });
        let read = by_hash(tx, &mine, &mut |place, e| found[place] = Some(e));
        (read, their_read.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    });
    let seen = match read {
        Ok(seen) => seen,
        Err(e) => return Ok(Err(e)),
    };
    match their_read {
        Ok((their_found, their_seen)) => {
            for (place, e) in their_found {
                found[place] = Some(e);
            }
            Ok(Ok(seen_by_both(seen, their_seen)))
        }
        Err(e) => {
            let read = by_hash(tx, &theirs, &mut |place, e| found[place] = Some(e));
            Err(Box::new(Lost(read.map(|their_seen| seen_by_both(seen, their_seen)), e)))
        }
    }
}

/// A second connection to the database beside the ledger's own, that only
/// reads, for a batch's look-up (`look_up`): connected the first time a
/// look-up is shared, then kept. None when it cannot connect: the
/// ledger's own connection then reads alone. A statement of each reads
/// at its own snapshot, as any statement of the ledger's own connection
/// does (`READ COMMITTED`): a look-up that decides to write more than new
/// items is decided again with its groups' spans held, and one that only
/// writes new items looks their hashes up again under that hold
/// (`admit_once`).
pub(super) struct Helper {
    options: PgOptions,
    /// `Some(None)`: it could not connect.
    client: Option<Option<Client>>,
    /// The statements `client` has prepared.
    statements: Statements,
}

impl Helper {
    pub(super) fn new(options: &PgOptions) -> Helper {
        Helper { options: options.clone(), client: None, statements: Statements::default() }
    }

    fn client(&mut self) -> Option<Session<'_, Client>> {
        // A connection the server closed (a restart) is opened again.
        if matches!(&self.client, Some(Some(c)) if c.is_closed()) {
            self.client = None;
            self.statements = Statements::default();
        }
        let options = &self.options;
        let client = self
            .client
            .get_or_insert_with(|| {
                connect(options, true)
                    .inspect_err(|e| tracing::debug!("no helper connection for the look-up: {e}"))
                    .ok()
            })
            .as_mut()?;
        Some(Session::new(client, &mut self.statements))
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
    /// with nothing held and nothing written. A batch that only writes
    /// new items writes them as decided (a URL another runner admitted
    /// meanwhile is found again under the hold of its group's spans: the
    /// batch is then decided again, held); any other is decided again with
    /// its groups' spans held (`admit_once`).
    fn admit(&mut self, batch: &[NewItem], now: DateTime<Utc>, rule: &AdmitRule) -> Result<Vec<Admission>> {
        let now = sec(now);
        let (groups, helper) = (&self.groups, &mut self.helper);
        let (group_ids, (found, seen)) = without_transaction(&mut self.client, |tx| {
            let group_ids = batch_groups::group_ids(batch, |g| Ok(group_id(tx, groups, g)?.unwrap_or(-1)))?;
            let found = look_up_seen(tx, Some(&mut *helper), batch, &group_ids, false)?;
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
                decided = Some((plan, seen));
            }
        }
        let cache = &self.groups;
        let conn = &mut self.client;
        let (out, created) = off_runtime(|| {
            let check = conn.checks_spans();
            let (client, statements) = conn.live()?;
            retrying(|| admit_once(client, statements, cache, batch, now, rule, decided.take(), check))
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
        self.transaction(source_documents)
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
pub(super) fn source_failures(
    tx: &mut Session<'_, impl GenericClient>,
    only: Option<(&str, &str)>,
) -> Result<Vec<SourceFailure>> {
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
pub(super) fn store_source_failures(
    tx: &mut Session<'_, impl GenericClient>,
    failures: &[SourceFailure],
) -> Result<()> {
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
pub(super) fn ghost_urls(tx: &mut Session<'_, impl GenericClient>) -> Result<Vec<GhostUrl>> {
    Ok(tx
        .query("SELECT property, ghost_id, url, announced_at FROM ghost_urls ORDER BY property, ghost_id", &[])?
        .iter()
        .map(|r| GhostUrl { property: r.get(0), ghost_id: r.get(1), url: r.get(2), announced_at: r.get(3) })
        .collect())
}

/// Keeps Ghost's public URLs in one statement, each replacing what was
/// kept of its post unless that was announced later (a copy merges with
/// the same rule).
pub(super) fn store_ghost_urls(tx: &mut Session<'_, impl GenericClient>, urls: &[GhostUrl]) -> Result<()> {
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
pub(super) fn source_documents(tx: &mut Session<'_, Transaction<'_>>) -> Result<Vec<SourceDocument>> {
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
    tx: &mut Session<'_, impl GenericClient>,
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
/// are in the ledger, what a foreign key would check of every row, once
/// per group (schema 7 dropped the key: docs/design.md); and held `FOR
/// SHARE` until the transaction ends (`hold_groups`' order and lock), so
/// that no claim of them commits meanwhile. A batch decided by reading
/// held nothing before: without the hold, its new items could commit
/// between a claim's count of its group's queue and its take, and the
/// claim take more than the budget it had counted for.
fn groups_exist(tx: &mut Session<'_, Transaction<'_>>, groups: &[i64]) -> Result<()> {
    let mut wanted = groups.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    if wanted.is_empty() {
        return Ok(());
    }
    let found: i64 = tx
        .query_one(
            "SELECT count(*) FROM (SELECT 1 FROM groups WHERE id = ANY($1) ORDER BY id FOR SHARE) AS held",
            &[&wanted],
        )?
        .get(0);
    batch_groups::groups_found(found, wanted.len())
}

/// Groups a transaction created, with their ids.
pub(super) type CreatedGroups = Vec<(GroupKey, i64)>;

/// One attempt at admitting a batch, in one transaction: the groups (held
/// `FOR SHARE`: no claim of them commits meanwhile), their spans held
/// (`batches::lock_spans`, in group order, so that two runners admitting
/// into one group wait for each other), a look-up of every URL by hash,
/// `policy::admit` for each, then the new items' ids from the sequence
/// `item_ids`, their batch rows and queued spans, the requeued items'
/// spans, and the changes of lastmods and actions (`set_changes`) — or,
/// with `decided` (a plan read with nothing held that only writes new items,
/// and the runs that read searched), its new items alone, once their hashes
/// are looked up again under the hold in the runs that read did not
/// search: a URL another runner admitted meanwhile runs the whole
/// transaction again, undecided.
#[allow(clippy::too_many_arguments)]
pub(super) fn admit_once(
    client: &mut Client,
    statements: &mut Statements,
    cache: &HashMap<GroupKey, i64>,
    batch: &[NewItem],
    now: DateTime<Utc>,
    rule: &AdmitRule,
    decided: Option<(AdmitPlan, SeenRuns)>,
    check: bool,
) -> Result<(Vec<Admission>, CreatedGroups)> {
    let mut transaction = client.transaction()?;
    let mut tx = Session::new(&mut transaction, statements);
    let mut ids: HashMap<GroupKey, i64> = HashMap::new();
    // The lastmod each item found holds, for the changes a requeue makes.
    let mut lastmods: HashMap<i64, Option<DateTime<Utc>>> = HashMap::new();
    let (plan, seen) = match decided {
        Some((plan, seen)) => (plan, Some(seen)),
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
            lastmods.extend(found.iter().filter_map(|f| f.as_ref().ok()).map(|e| (e.id, e.lastmod)));
            (AdmitPlan::new(batch, &group_ids, &found, rule, now), None)
        }
    };
    let fresh = &plan.inserts;
    let groups: Vec<i64> = fresh.iter().map(|f| f.1).collect();
    groups_exist(&mut tx, &groups)?;
    // The spans of every group written, held at once in group order (see
    // `batches::lock_spans`): no other admission of these groups writes
    // new items until this one commits.
    let mut span_groups: Vec<i64> = groups.clone();
    span_groups.extend(plan.requeued.keys().map(|(group, ..)| *group));
    super::batches::lock_spans(&mut tx, &span_groups)?;
    if let Some(seen) = &seen {
        // Decided by a read that held nothing: a new URL another runner
        // admitted meanwhile (its batch row committed before this hold)
        // is found now, in a run that read did not search, and the batch
        // is decided again, held.
        let hashes: Vec<u128> = fresh.iter().map(|f| url_hash(&batch[f.0].url)).collect();
        for (group, sought) in look_up::hashes_by_group(&hashes, &groups) {
            let sought: Vec<u128> = sought.iter().map(|h| h.0).collect();
            let searched = seen.get(&group).map_or(&[][..], Vec::as_slice);
            let found = super::batches::find_ids_past(&mut tx, group, &sought, searched)?.0;
            let ids: Vec<i64> = found.into_iter().flatten().collect();
            if !ids.is_empty() && !super::rows::held_by_spans(&mut tx, &ids)?.is_empty() {
                return Err(LedgerError::Retry);
            }
        }
    }
    // The new items' ids, each group's a run of the sequence's (group by
    // group, input order within); another runner may take ids between
    // two of them (a sequence's ids are not held for one statement), so
    // each batch row is cut where the ids do not follow each other.
    let mut order: Vec<usize> = (0..fresh.len()).collect();
    order.sort_by_key(|&k| (fresh[k].1, fresh[k].0));
    let taken = take_item_ids(&mut tx, fresh.len())?;
    let mut new_ids = vec![0; fresh.len()];
    for (k, id) in order.into_iter().zip(taken) {
        new_ids[k] = id;
    }
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
    let new: Vec<(i64, i64)> = written.iter().map(|(group, id, _)| (*group, *id)).collect();
    super::batches::new_queued_spans(&mut tx, &new, now)?;
    // The lastmod and action each requeued or updated item has after this
    // admission: a requeue sets its action, an update its action and
    // lastmod (after the requeue, as the items' statements ran).
    let mut changed: std::collections::BTreeMap<i64, super::batches::Values> = std::collections::BTreeMap::new();
    for ((group, action, due), ids) in &plan.requeued {
        write_spans(&mut tx, &Runs::of_group(*group, ids), REQUEUED, "true", &[&now, &sec(*due)])?;
        for id in ids {
            let lastmod = lastmods.get(id).copied().flatten().map(|t| t.timestamp());
            changed.insert(*id, (lastmod, *action));
        }
    }
    for (id, action, lastmod) in &plan.updates {
        changed.insert(*id, (opt_sec(*lastmod).map(|t| t.timestamp()), *action));
    }
    let changed: Vec<(i64, super::batches::Values)> = changed.into_iter().collect();
    super::batches::set_changes(&mut tx, &changed)?;
    let out = plan.admissions(&new_ids, now);
    super::commit(transaction, check)?;
    let created = ids.into_iter().filter(|(key, _)| !cache.contains_key(key)).collect();
    Ok((out, created))
}

/// `n` new ids, ascending, from the sequence `item_ids`: a value of it
/// is a block of `ID_BLOCK` ids (schema 13), so `n` ids take `n /
/// ID_BLOCK` values, rounded up, and the ids of the last block that are
/// not needed are never used. Another runner may take a block between two
/// of these, so the ids need not follow each other from one block to the
/// next (each batch row is cut where they do not).
fn take_item_ids(tx: &mut Session<'_, Transaction<'_>>, n: usize) -> Result<Vec<i64>> {
    let blocks = (n as i64 + ID_BLOCK - 1) / ID_BLOCK;
    let mut firsts: Vec<i64> = tx
        .query("SELECT nextval('item_ids') FROM generate_series(1, $1::bigint)", &[&blocks])?
        .iter()
        .map(|r| r.get(0))
        .collect();
    firsts.sort_unstable();
    Ok(firsts.into_iter().flat_map(|first| first..first + ID_BLOCK).take(n).collect())
}

/// An announced item's state, over a span's columns: accepted at `$4`.
const ANNOUNCED: &str = "state = 'accepted', accepted_at = $4, last_class = 'accepted', next_attempt_at = NULL,
     streak = 0, streak_started_at = NULL";

/// A requeued item's state, over a span's columns: queued at `$4`, due at
/// `$5`.
const REQUEUED: &str = "state = 'queued', next_attempt_at = $5, enqueued_at = $4, streak = 0, streak_started_at = NULL";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::conformance;
    use crate::ledger::*;

    /// A batch of new URLs decided by reading (`decided`) waits, as every
    /// admission does, for a claim of its group to commit: a claim counts
    /// its group's queue and then takes from it, and new items committed
    /// between the two would be taken past the budget it counted for.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_new_urls_wait_for_a_claim_of_their_group() {
        let mut ledger = conformance::test_postgres();
        let options = PgOptions { schema: ledger.schema.clone(), ..test_options() };
        let (batch, now, rule) =
            (conformance::items(4), "2026-12-03T09:00:00Z".parse().unwrap(), conformance::dedupe_day());
        ledger.admit(&batch[..1], now, &rule).unwrap();
        // Another runner's claim holds the group's row, as `hold_queue` does.
        let mut other = connect(&options, false).unwrap();
        let mut claim = other.transaction().unwrap();
        claim.execute("SELECT 1 FROM groups FOR NO KEY UPDATE", &[]).unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let admitting = s.spawn(|| {
                let admitted = ledger.admit(&batch[1..], now, &rule).unwrap();
                done.store(true, std::sync::atomic::Ordering::SeqCst);
                admitted
            });
            std::thread::sleep(std::time::Duration::from_millis(400));
            assert!(!done.load(std::sync::atomic::Ordering::SeqCst), "admitted while a claim held the group");
            claim.commit().unwrap();
            let admitted = admitting.join().unwrap();
            assert!(admitted.iter().all(|a| matches!(a, Admission::Queued { .. })), "{admitted:?}");
        });
    }

    /// A batch decided by reading to be new, then admitted by another
    /// runner before this one writes it, is not written twice: the
    /// attempt that only writes new items asks to be run again, and the
    /// next attempt (its spans held) finds them queued. The run the first
    /// read searched is not searched again; the other runner's is.
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
        let (group_ids, (found, seen)) = a
            .with_groups(|tx, groups| {
                let group_ids = batch_groups::group_ids(&batch, |g| Ok(group_id(tx, groups, g)?.unwrap_or(-1)))?;
                Ok((group_ids.clone(), look_up_seen(tx, None, &batch, &group_ids, false)?))
            })
            .unwrap();
        assert_eq!(seen.values().map(Vec::len).collect::<Vec<_>>(), [1], "the first item's run");
        let plan = AdmitPlan::new(&batch, &group_ids, &found, &rule, now);
        assert_eq!((plan.inserts.len(), plan.requeued.len(), plan.updates.len()), (2, 0, 0));
        b.admit(&batch, now, &rule).unwrap();
        let client = a.client.as_mut().unwrap();
        let stale =
            admit_once(client, &mut Default::default(), &HashMap::new(), &batch, now, &rule, Some((plan, seen)), true);
        assert!(matches!(stale, Err(LedgerError::Retry)), "{:?}", stale.map(|r| r.0));
        let admitted = a.admit(&batch, now, &rule).unwrap();
        assert!(admitted.iter().all(|a| matches!(a, Admission::AlreadyQueued { .. })), "{admitted:?}");
    }

    /// A ledger of schema 12 took its ids one by one; the step to schema
    /// 13 makes the next value the last one given plus a block, past every
    /// id given before.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_ids_after_the_step_to_blocks_follow_every_id_given_before() {
        let mut ledger = conformance::test_postgres();
        let options = PgOptions { schema: ledger.schema.clone(), ..test_options() };
        // Schema 12 as an older binary left it: a sequence stepping by
        // one, five ids taken from it.
        let last: i64 = ledger
            .transaction(|tx| {
                tx.batch_execute(
                    "ALTER SEQUENCE item_ids INCREMENT BY 1;
                     DELETE FROM schema_version; INSERT INTO schema_version VALUES (12);",
                )?;
                Ok(tx.query_one("SELECT max(nextval('item_ids')) FROM generate_series(1, 5)", &[])?.get(0))
            })
            .unwrap();
        drop(ledger);
        let mut ledger = PgLedger::open(&options).unwrap();
        assert_eq!(ledger.stored_version().unwrap(), Some(crate::ledger::postgres::SCHEMA_VERSION));
        let ids = ledger.transaction(|tx| take_item_ids(tx, 2)).unwrap();
        assert_eq!(ids, vec![last + ID_BLOCK, last + ID_BLOCK + 1]);
    }

    /// New ids come a block of `ID_BLOCK` a value of the sequence; blocks
    /// that do not follow each other (another runner took one between
    /// them; here, a sequence that steps by two blocks) give ids that do
    /// not, and the batch row is cut where they do not follow: each item
    /// is found again by its URL.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_new_ids_come_in_blocks_cut_where_they_do_not_follow() {
        let mut ledger = conformance::test_postgres();
        let step: i64 =
            ledger.transaction(|tx| Ok(tx.query_one("SELECT increment_by FROM pg_sequences WHERE schemaname = current_schema() AND sequencename = 'item_ids'", &[])?.get(0))).unwrap();
        assert_eq!(step, ID_BLOCK, "the sequence steps by a block");
        let block = ID_BLOCK as usize;
        let following = ledger.transaction(|tx| take_item_ids(tx, block + 1)).unwrap();
        assert_eq!(following, (following[0]..following[0] + ID_BLOCK + 1).collect::<Vec<_>>());
        // The second block was taken for its first id alone: the next
        // value starts after it.
        let next = ledger.transaction(|tx| take_item_ids(tx, 1)).unwrap();
        assert_eq!(next, vec![following[0] + 2 * ID_BLOCK]);
        assert!(ledger.transaction(|tx| take_item_ids(tx, 0)).unwrap().is_empty());
        ledger
            .transaction(|tx| Ok(tx.batch_execute(&format!("ALTER SEQUENCE item_ids INCREMENT BY {}", 2 * ID_BLOCK))?))
            .unwrap();
        let stepping = ledger.transaction(|tx| take_item_ids(tx, block + 1)).unwrap();
        let first = next[0] + 2 * ID_BLOCK;
        let mut expected: Vec<i64> = (first..first + ID_BLOCK).collect();
        expected.push(first + 2 * ID_BLOCK);
        assert_eq!(stepping, expected);
        let (batch, now, rule) =
            (conformance::items(block + 1), "2026-12-03T09:00:00Z".parse().unwrap(), conformance::dedupe_day());
        let admitted = ledger.admit(&batch, now, &rule).unwrap();
        assert!(admitted.iter().all(|a| matches!(a, Admission::Queued { .. })), "{admitted:?}");
        let rows: Vec<(i64, i32)> = ledger
            .transaction(|tx| {
                Ok(tx
                    .query("SELECT first_id, n FROM batches ORDER BY first_id", &[])?
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect())
            })
            .unwrap();
        let first = stepping[block] + 2 * ID_BLOCK;
        assert_eq!(rows, vec![(first, ID_BLOCK as i32), (first + 2 * ID_BLOCK, 1)], "a batch row for each block");
        let again = ledger.admit(&batch, now, &rule).unwrap();
        assert!(again.iter().all(|a| matches!(a, Admission::AlreadyQueued { .. })), "{again:?}");
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
        let err = admit_once(client, &mut Default::default(), &believed, &batch, now, &rule, None, true)
            .map(|r| r.0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not in the ledger"), "{err}");
        let items: i64 = client
            .query_one("SELECT (SELECT count(*) FROM batches) + (SELECT count(*) FROM spans)", &[])
            .unwrap()
            .get(0);
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

    /// A look-up of a batch (more than `SHARED_LOOK_UP` URLs) finds each
    /// item by its hash and its state by its span, alone, shared with the
    /// helper and locked alike; a URL dropped is new again (the place of
    /// its first sight), and once submitted again is found at its new id.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_a_look_up_finds_items_by_hash_and_reads_them_by_id() {
        let mut ledger = conformance::test_postgres();
        let now: DateTime<Utc> = "2026-12-03T09:00:00Z".parse().unwrap();
        let rule = conformance::dedupe_day();
        let batch = conformance::items(look_up::SHARED_LOOK_UP + 100);
        ledger.admit(&batch, now, &rule).unwrap();
        let id_of = |ledger: &mut PgLedger, k: usize| -> i64 {
            let url = batch[k].url.clone();
            ledger
                .transaction(|tx| {
                    super::super::rows::fill_item_rows(tx, "item_rows")?;
                    Ok(tx.query_one("SELECT id FROM item_rows WHERE url = $1", &[&url])?.get(0))
                })
                .unwrap()
        };
        let (ids, last) = ([0, 9, 2999].map(|k| id_of(&mut ledger, k)), id_of(&mut ledger, batch.len() - 1));
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
        let id = |k: usize| alone[k].as_ref().map(|e| e.id).map_err(|place| *place);
        assert_eq!((id(0), id(9), id(2999), id(batch.len() - 1)), (Ok(ids[0]), Ok(ids[1]), Ok(ids[2]), Ok(last)));
        assert_eq!(id(19), Err(19), "dropped: new again, at its first sight");
        assert_eq!(alone.iter().filter(|f| f.is_err()).count(), 1);
        // Submitted again, the dropped URL is found by hash at its new id.
        ledger.admit(&batch[19..20], now, &rule).unwrap();
        let again = id_of(&mut ledger, 19);
        assert!(again > last, "a new id: {again}");
        let found = ledger.transaction(|tx| look_up(tx, None, &batch[19..20], &group_ids[19..20], false)).unwrap();
        assert_eq!(found[0].as_ref().map(|e| e.id), Ok(again));
        let found = ledger.transaction(|tx| {
            let wanted = look_up::hashes_by_group(&[url_hash(&batch[19].url)], &group_ids[19..20]);
            let mut found = Vec::new();
            by_hash(tx, &wanted, &mut |_, e| found.push(e.id))?;
            Ok(found)
        });
        assert_eq!(found.unwrap(), [again], "by hash");
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
