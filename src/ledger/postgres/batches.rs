//! A ledger per batch on PostgreSQL (issue 48; docs/design.md, *A ledger
//! per batch*: being built on this branch). Schema 12's tables, as
//! `sqlite/batches.rs` keeps them on SQLite: a batch row written with its
//! run of tier 0, the runs of a tier merged into the next, a look-up of
//! hashes through them, the migration that fills them from schema 11's
//! items, the spans of new items (`new_queued_spans`, `copied_spans`; every
//! other write of state is `spans.rs`'s), and the items' lastmods and
//! actions that differ from their batch row's kept in `item_changes`
//! (`set_changes`). The blobs' layout is `ledger/batches.rs`'s alone. The
//! spans are the items' state (the items hold none since schema 12); the
//! items still hold their URLs, keys, lastmods and actions.

use super::super::batches::{self, BatchItem, FANOUT};
use super::super::find_ids as find;
use super::super::kept_runs::{keep, kept, Kept, RunKey};
use super::super::{LedgerError, Result};
use super::session::Session;
use super::{pg, Action, DateTime, GenericClient, Transaction, Utc};
use pg::fallible_iterator::FallibleIterator;
use pg::Statement;

/// Writes the batch `items` of `group`, ids from `first_id`, and merges
/// its group's runs as far as a tier is full.
pub(super) fn write_batch(
    tx: &mut Session<'_, impl GenericClient>,
    group: i64,
    first_id: i64,
    created_at: DateTime<Utc>,
    items: &[BatchItem<'_>],
) -> Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    let blobs = batches::encode(items)?;
    let n = items.len() as i32;
    tx.execute(
        "INSERT INTO batches (first_id, group_id, n, created_at, sorted, texts, lastmods, actions)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        &[&first_id, &group, &n, &created_at, &blobs.sorted, &blobs.texts, &blobs.lastmods, &blobs.actions],
    )?;
    let row = tx.query_one(
        &format!("INSERT INTO hash_runs (group_id, tier, n, batch) VALUES ($1, 0, $2, $3) RETURNING {RUN_KEY}"),
        &[&group, &i64::from(n), &first_id],
    )?;
    keep(run_key(&row, group), Kept::Sorted(blobs.sorted), &[]);
    merge_tiers(tx, group)
}

/// The columns of a `hash_runs` row that name its run among those kept in
/// memory (`run_key`): its id, the id of the transaction that wrote it
/// (`xmin`: a run's row and entries are written by one transaction, and
/// only its `n` is updated after, by the same one), and the table's oid (a
/// schema's own, new when the table is made again).
const RUN_KEY: &str = "run, xmin::text::bigint, tableoid::bigint";

/// The name of a run among those kept in memory, from `RUN_KEY`'s columns
/// first in `row`.
fn run_key(row: &pg::Row, group: i64) -> RunKey {
    let (stamp, ledger) = (row.get::<_, i64>(1) as u64, row.get::<_, i64>(2) as u64);
    RunKey { ledger, group, run: row.get(0), stamp }
}

/// While a tier of `group` holds `FANOUT` runs, merges them into one run
/// of the next tier: their entries read in order, a batch's blob whole or
/// a run's pages `PAGES_A_READ` at a time, and written once, as pages,
/// `PAGES_A_WRITE` at a time.
fn merge_tiers(tx: &mut Session<'_, impl GenericClient>, group: i64) -> Result<()> {
    use std::cmp::Reverse;
    for tier in 0i32.. {
        // Locked, in order: another runner merging the same runs waits
        // for this one, then finds them gone (and merges none of them
        // again into a run of its own).
        let runs: Vec<(RunKey, Option<i64>)> = tx
            .query(
                &format!(
                    "SELECT {RUN_KEY}, batch FROM hash_runs WHERE group_id = $1 AND tier = $2 ORDER BY run FOR UPDATE"
                ),
                &[&group, &tier],
            )?
            .iter()
            .map(|r| (run_key(r, group), r.get(3)))
            .collect();
        if runs.len() < FANOUT {
            return Ok(());
        }
        let next_pages = tx.prepare(&format!(
            "SELECT first_hash, entries FROM hash_pages WHERE run = $1 AND first_hash > $2
             ORDER BY first_hash LIMIT {PAGES_A_READ}"
        ))?;
        let batch_of = tx.prepare(TEXTS_OF)?;
        let mut cursors = Vec::with_capacity(runs.len());
        for (key, batch) in &runs {
            cursors.push(RunCursor::open(tx, key, *batch)?);
        }
        // A tier of batches is in memory whole: merged at once, the heap
        // left empty (a tier of merged runs is read pages at a time).
        let in_memory = batches::merged_in_memory(cursors.iter_mut().map(RunCursor::whole).collect());
        let mut heads = std::collections::BinaryHeap::new();
        if in_memory.is_none() {
            for (k, cursor) in cursors.iter_mut().enumerate() {
                if let Some(entry) = cursor.next(tx, &next_pages)? {
                    heads.push(Reverse((entry, k)));
                }
            }
        }
        let key = run_key(
            &tx.query_one(
                &format!("INSERT INTO hash_runs (group_id, tier, n) VALUES ($1, $2, 1) RETURNING {RUN_KEY}"),
                &[&group, &(tier + 1)],
            )?,
            group,
        );
        let run = key.run;
        let mut put = PageWriter::new(tx, run)?;
        // The merged run is kept as it is written: the look-ups of this
        // process's next admissions read none of its pages.
        let mut pager = batches::Pager::keeping_prefixes();
        for entry in in_memory.into_iter().flatten() {
            let page = pager.push(entry, &mut |a, b| Ok(text_of(tx, &batch_of, a)? == text_of(tx, &batch_of, b)?))?;
            if let Some(page) = page {
                put.push(tx, page)?;
            }
        }
        while let Some(Reverse((entry, k))) = heads.pop() {
            let page = pager.push(entry, &mut |a, b| Ok(text_of(tx, &batch_of, a)? == text_of(tx, &batch_of, b)?))?;
            if let Some(page) = page {
                put.push(tx, page)?;
            }
            if let Some(next) = cursors[k].next(tx, &next_pages)? {
                heads.push(Reverse((next, k)));
            }
        }
        let (last, prefixes, written) = pager.finish_keeping();
        if let Some(page) = last {
            put.push(tx, page)?;
        }
        put.flush(tx)?;
        tx.execute("UPDATE hash_runs SET n = $2 WHERE run = $1", &[&run, &(written.max(1) as i64)])?;
        let old: Vec<i64> = runs.iter().map(|(key, _)| key.run).collect();
        tx.execute("DELETE FROM hash_pages WHERE run = ANY($1)", &[&old])?;
        tx.execute("DELETE FROM hash_runs WHERE run = ANY($1)", &[&old])?;
        let merged: Vec<RunKey> = runs.iter().map(|(key, _)| *key).collect();
        keep(key, Kept::Prefixes(prefixes), &merged);
    }
    unreachable!("tiers are counted up until one is not full")
}

/// The pages of a run a merge reads with one statement, and writes with
/// one: each statement crosses the connection, and a merge of a million
/// URLs' runs reads and writes about a thousand pages.
const PAGES_A_READ: usize = 8;
const PAGES_A_WRITE: usize = 16;

/// A merged run's pages, written `PAGES_A_WRITE` at a time.
struct PageWriter {
    put: Statement,
    run: i64,
    first_hashes: Vec<[u8; 16]>,
    entries: Vec<Vec<u8>>,
}

impl PageWriter {
    fn new(tx: &mut Session<'_, impl GenericClient>, run: i64) -> Result<PageWriter> {
        let put = tx.prepare(
            "INSERT INTO hash_pages (run, first_hash, entries) SELECT $1, * FROM unnest($2::bytea[], $3::bytea[])",
        )?;
        Ok(PageWriter { put, run, first_hashes: Vec::new(), entries: Vec::new() })
    }

    fn push(&mut self, tx: &mut Session<'_, impl GenericClient>, page: batches::Page) -> Result<()> {
        self.first_hashes.push(page.first_hash);
        self.entries.push(page.entries);
        if self.entries.len() == PAGES_A_WRITE {
            self.flush(tx)?;
        }
        Ok(())
    }

    fn flush(&mut self, tx: &mut Session<'_, impl GenericClient>) -> Result<()> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let first_hashes: Vec<&[u8]> = self.first_hashes.iter().map(|h| &h[..]).collect();
        tx.execute(&self.put, &[&self.run, &first_hashes, &self.entries])?;
        self.first_hashes.clear();
        self.entries.clear();
        Ok(())
    }
}

/// A run's entries in hash order: a batch's blob (20 bytes an entry, read
/// whole), or a merged run's pages, read `PAGES_A_READ` at a time by key.
enum RunCursor {
    Batch(std::vec::IntoIter<(u128, i64)>),
    Pages {
        run: i64,
        after: Vec<u8>,
        page: std::vec::IntoIter<(u128, i64)>,
        /// The pages read and not yet begun, in key order.
        ahead: std::collections::VecDeque<Vec<u8>>,
    },
}

impl RunCursor {
    /// A batch's entries, in memory whole; none for a merged run's pages.
    fn whole(&mut self) -> Option<&mut std::vec::IntoIter<(u128, i64)>> {
        match self {
            RunCursor::Batch(entries) => Some(entries),
            RunCursor::Pages { .. } => None,
        }
    }

    fn open(tx: &mut Session<'_, impl GenericClient>, key: &RunKey, batch: Option<i64>) -> Result<RunCursor> {
        Ok(match batch {
            Some(first_id) => {
                let entries = match kept(key).as_deref() {
                    Some(Kept::Sorted(sorted)) => batches::batch_entries(first_id, sorted)?,
                    _ => {
                        let sorted: Vec<u8> =
                            tx.query_one("SELECT sorted FROM batches WHERE first_id = $1", &[&first_id])?.get(0);
                        batches::batch_entries(first_id, &sorted)?
                    }
                };
                RunCursor::Batch(entries.into_iter())
            }
            None => RunCursor::Pages {
                run: key.run,
                after: Vec::new(),
                page: Vec::new().into_iter(),
                ahead: Default::default(),
            },
        })
    }

    /// The next entry; `next_pages` selects a run's first pages whose keys
    /// are past the one given (an empty `bytea` sorts before every key).
    fn next(
        &mut self,
        tx: &mut Session<'_, impl GenericClient>,
        next_pages: &Statement,
    ) -> Result<Option<(u128, i64)>> {
        match self {
            RunCursor::Batch(entries) => Ok(entries.next()),
            RunCursor::Pages { run, after, page, ahead } => loop {
                if let Some(entry) = page.next() {
                    return Ok(Some(entry));
                }
                if ahead.is_empty() {
                    for row in tx.query(next_pages, &[&*run, &&after[..]])? {
                        *after = row.get(0);
                        ahead.push_back(row.get(1));
                    }
                }
                let Some(entries) = ahead.pop_front() else { return Ok(None) };
                *page = batches::page_entries(&entries)?.into_iter();
            },
        }
    }
}

/// The batch that may hold an item: the last starting at or before it.
const TEXTS_OF: &str = "SELECT first_id, n, texts FROM batches WHERE first_id <= $1 ORDER BY first_id DESC LIMIT 1";

/// The URL of item `id`, from its batch's texts (`batch_of`: `TEXTS_OF`).
fn text_of(tx: &mut Session<'_, impl GenericClient>, batch_of: &Statement, id: i64) -> Result<String> {
    let row = tx
        .query_opt(batch_of, &[&id])?
        .filter(|r| id < r.get::<_, i64>(0) + i64::from(r.get::<_, i32>(1)))
        .ok_or_else(|| LedgerError::Invalid(format!("hash_runs: item {id} is in no batch")))?;
    let (first_id, n): (i64, i32) = (row.get(0), row.get(1));
    Ok(batches::text(row.get(2), n as usize, (id - first_id) as u32)?.to_string())
}

/// The id of each of `hashes` in `group`, if the group holds it, by the
/// look-up shared with SQLite (`ledger::find_ids`): a merged run read in
/// order is read whole, and its prefixes kept, unless it is kept already
/// (each page crosses the connection).
pub(super) fn find_ids(
    tx: &mut Session<'_, impl GenericClient>,
    group: i64,
    hashes: &[u128],
) -> Result<Vec<Option<i64>>> {
    Ok(find_ids_past(tx, group, hashes, &[])?.0)
}

/// `find_ids`, the runs in `seen` not searched, and the keys of the runs
/// listed.
pub(super) fn find_ids_past(
    tx: &mut Session<'_, impl GenericClient>,
    group: i64,
    hashes: &[u128],
    seen: &[RunKey],
) -> Result<(Vec<Option<i64>>, Vec<RunKey>)> {
    let rows = tx.query(
        &format!("SELECT {RUN_KEY}, n, batch FROM hash_runs WHERE group_id = $1 ORDER BY tier, run DESC"),
        &[&group],
    )?;
    let runs: Vec<_> = rows.iter().map(|r| (run_key(r, group), r.get(3), r.get(4))).collect();
    // A group with no runs holds no hash (and names no table to let go
    // the runs kept of).
    let Some(ledger) = runs.first().map(|r| r.0.ledger) else { return Ok((vec![None; hashes.len()], Vec::new())) };
    let keys = runs.iter().map(|r| r.0).collect();
    let listed = find::Listed { ledger, group, runs };
    let mut pages = Pages {
        sorted_of: tx.prepare("SELECT sorted FROM batches WHERE first_id = $1")?,
        page_at: tx.prepare(
            "SELECT entries FROM hash_pages WHERE run = $1 AND first_hash <= $2 ORDER BY first_hash DESC LIMIT 1",
        )?,
        pages_of: tx.prepare(
            "SELECT entries FROM hash_pages WHERE run = $1 AND first_hash <= $3 AND first_hash >= coalesce(
                 (SELECT first_hash FROM hash_pages WHERE run = $1 AND first_hash <= $2
                  ORDER BY first_hash DESC LIMIT 1), '')
             ORDER BY first_hash",
        )?,
        tx,
    };
    Ok((find::find_ids(&mut pages, &listed, hashes, find::Reading::WholeKept, seen)?, keys))
}

/// A PostgreSQL ledger's runs read for `find::find_ids`.
struct Pages<'t, 's, C> {
    tx: &'t mut Session<'s, C>,
    sorted_of: Statement,
    page_at: Statement,
    pages_of: Statement,
}

impl<C: GenericClient> find::RunPages for Pages<'_, '_, C> {
    fn sorted(&mut self, first_id: i64) -> Result<Vec<u8>> {
        Ok(self.tx.query_one(&self.sorted_of, &[&first_id])?.get(0))
    }

    fn page_at(&mut self, run: i64, hash: u128) -> Result<Option<Vec<u8>>> {
        let key = hash.to_be_bytes();
        Ok(self.tx.query_opt(&self.page_at, &[&run, &&key[..]])?.map(|r| r.get(0)))
    }

    fn pages(&mut self, run: i64, from: u128, to: u128, each: &mut dyn FnMut(Vec<u8>) -> Result<()>) -> Result<()> {
        // The pages come one at a time, as the server sends them.
        let (from, to) = (from.to_be_bytes(), to.to_be_bytes());
        let params: [&(dyn pg::types::ToSql + Sync); 3] = [&run, &&from[..], &&to[..]];
        let mut rows = self.tx.query_raw(&self.pages_of, params)?;
        while let Some(row) = rows.next()? {
            each(row.get(0))?;
        }
        Ok(())
    }
}

/// Writes the batch rows of `items`, the new items of one admission in id
/// order as (group, id, item): one batch row a run (`batches::cuts`).
pub(super) fn write_new_items(
    tx: &mut Session<'_, impl GenericClient>,
    items: &[(i64, i64, BatchItem<'_>)],
    created_at: DateTime<Utc>,
) -> Result<()> {
    let keys: Vec<(i64, i64)> = items.iter().map(|(group, id, _)| (*group, *id)).collect();
    for run in batches::cuts(&keys) {
        let (group, first_id) = keys[run.start];
        let batch: Vec<BatchItem> = items[run]
            .iter()
            .map(|(_, _, i)| BatchItem { url: i.url, lastmod: i.lastmod, deleted: i.deleted })
            .collect();
        write_batch(tx, group, first_id, created_at, &batch)?;
    }
    Ok(())
}

/// Which items `fill_from_items` reads.
pub(super) enum Fill {
    /// Every item, and their spans: schema 11's items into schema 12.
    Migration,
    /// The items a copy adds (its staging table's fresh rows), no
    /// spans: the copy writes those from its staged values
    /// (`copied_spans`).
    Copied,
}

/// A span's state columns, in `spans`' order after `last`.
pub(super) const SPAN_COLUMNS: &str =
    "state, next_attempt_at, enqueued_at, attempts, last_class, streak, streak_started_at,
    accepted_at, parked_fingerprint, last_request_id";

/// The state columns of an item (`SPAN_COLUMNS`), as `spans` keeps them.
#[derive(PartialEq)]
struct SpanState {
    state: String,
    next_attempt_at: Option<DateTime<Utc>>,
    enqueued_at: DateTime<Utc>,
    attempts: i32,
    last_class: Option<String>,
    streak: i32,
    streak_started_at: Option<DateTime<Utc>>,
    accepted_at: Option<DateTime<Utc>>,
    parked_fingerprint: Option<String>,
    last_request_id: Option<i64>,
}

impl SpanState {
    fn of(r: &pg::Row, at: usize) -> SpanState {
        SpanState {
            state: r.get(at),
            next_attempt_at: r.get(at + 1),
            enqueued_at: r.get(at + 2),
            attempts: r.get(at + 3),
            last_class: r.get(at + 4),
            streak: r.get(at + 5),
            streak_started_at: r.get(at + 6),
            accepted_at: r.get(at + 7),
            parked_fingerprint: r.get(at + 8),
            last_request_id: r.get(at + 9),
        }
    }
}

/// Spans gathered to be written with one statement.
#[derive(Default)]
struct SpanRows(Vec<(i64, i64, i64, SpanState)>);

impl SpanRows {
    /// Spans written a statement at a time.
    const A_STATEMENT: usize = 10_000;

    fn push(&mut self, tx: &mut Session<'_, Transaction<'_>>, span: (i64, i64, i64, SpanState)) -> Result<()> {
        self.0.push(span);
        if self.0.len() == Self::A_STATEMENT {
            self.flush(tx)?;
        }
        Ok(())
    }

    fn flush(&mut self, tx: &mut Session<'_, Transaction<'_>>) -> Result<()> {
        let spans = std::mem::take(&mut self.0);
        if spans.is_empty() {
            return Ok(());
        }
        let column = |f: fn(&(i64, i64, i64, SpanState)) -> i64| spans.iter().map(f).collect::<Vec<i64>>();
        let (groups, firsts, lasts) = (column(|s| s.0), column(|s| s.1), column(|s| s.2));
        let states: Vec<&str> = spans.iter().map(|s| s.3.state.as_str()).collect();
        let due: Vec<Option<DateTime<Utc>>> = spans.iter().map(|s| s.3.next_attempt_at).collect();
        let enqueued: Vec<DateTime<Utc>> = spans.iter().map(|s| s.3.enqueued_at).collect();
        let attempts: Vec<i32> = spans.iter().map(|s| s.3.attempts).collect();
        let classes: Vec<Option<&str>> = spans.iter().map(|s| s.3.last_class.as_deref()).collect();
        let streaks: Vec<i32> = spans.iter().map(|s| s.3.streak).collect();
        let streak_started: Vec<Option<DateTime<Utc>>> = spans.iter().map(|s| s.3.streak_started_at).collect();
        let accepted: Vec<Option<DateTime<Utc>>> = spans.iter().map(|s| s.3.accepted_at).collect();
        let fingerprints: Vec<Option<&str>> = spans.iter().map(|s| s.3.parked_fingerprint.as_deref()).collect();
        let requests: Vec<Option<i64>> = spans.iter().map(|s| s.3.last_request_id).collect();
        tx.execute(
            &format!(
                "INSERT INTO spans (group_id, first, last, {SPAN_COLUMNS})
                 SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::timestamptz[],
                     $6::timestamptz[], $7::integer[], $8::text[], $9::integer[], $10::timestamptz[],
                     $11::timestamptz[], $12::text[], $13::bigint[])"
            ),
            &[
                &groups,
                &firsts,
                &lasts,
                &states,
                &due,
                &enqueued,
                &attempts,
                &classes,
                &streaks,
                &streak_started,
                &accepted,
                &fingerprints,
                &requests,
            ],
        )?;
        Ok(())
    }
}

/// The items `fill` names as batches and their runs (and, for the
/// migration, their spans), in the caller's transaction: read in id order
/// through a cursor, batches cut at every change of group, every gap in
/// the ids and every `BATCH` items; spans at every change of group, gap or
/// state column. As SQLite's `fill_from_items`; the migration drops the
/// items after.
pub(super) fn fill_from_items(tx: &mut Session<'_, Transaction<'_>>, fill: Fill) -> Result<()> {
    let read = match fill {
        Fill::Migration => format!("SELECT id, group_id, url, action, lastmod, {SPAN_COLUMNS} FROM items ORDER BY id"),
        Fill::Copied => "SELECT dst, grp, url, action, lastmod FROM copy_items WHERE fresh ORDER BY dst".into(),
    };
    let cursor = tx.client.bind(read.as_str(), &[])?;
    // The batch being gathered: its group, first id, and (url, lastmod, deleted).
    type Gathered = (i64, i64, Vec<(String, Option<i64>, bool)>);
    let mut batch: Option<Gathered> = None;
    let mut span: Option<(i64, i64, i64, SpanState)> = None;
    let mut spans = SpanRows::default();
    let created_at = super::sec(Utc::now());
    let write = |tx: &mut Session<'_, Transaction<'_>>, (group, first, items): &Gathered| -> Result<()> {
        let items: Vec<BatchItem> = items
            .iter()
            .map(|(url, lastmod, deleted)| BatchItem { url, lastmod: *lastmod, deleted: *deleted })
            .collect();
        write_batch(tx, *group, *first, created_at, &items)
    };
    loop {
        let rows = tx.client.query_portal(&cursor, batches::BATCH as i32)?;
        if rows.is_empty() {
            break;
        }
        for r in &rows {
            let (id, group, url): (i64, i64, String) = (r.get(0), r.get(1), r.get(2));
            let deleted = match r.get::<_, &str>(3) {
                "updated" => false,
                "deleted" => true,
                other => return Err(LedgerError::Invalid(format!("items.action: {other}"))),
            };
            let lastmod = r.get::<_, Option<DateTime<Utc>>>(4).map(|t| t.timestamp());
            let follows = |g: i64, first: i64, len: usize| g == group && first + len as i64 == id;
            match &mut batch {
                Some((g, first, items)) if items.len() < batches::BATCH && follows(*g, *first, items.len()) => {
                    items.push((url, lastmod, deleted));
                }
                _ => {
                    if let Some(done) = batch.replace((group, id, vec![(url, lastmod, deleted)])) {
                        write(tx, &done)?;
                    }
                }
            }
            if matches!(fill, Fill::Copied) {
                continue;
            }
            let state = SpanState::of(r, 5);
            match &mut span {
                Some((g, _, last, s)) if *g == group && *last + 1 == id && *s == state => *last = id,
                _ => {
                    if let Some(done) = span.replace((group, id, id, state)) {
                        spans.push(tx, done)?;
                    }
                }
            }
        }
    }
    if let Some(done) = batch {
        write(tx, &done)?;
    }
    if let Some(done) = span {
        spans.push(tx, done)?;
    }
    spans.flush(tx)
}

/// Holds the spans of each of `groups` until the transaction ends, in
/// group order: a transaction-level advisory lock a group (of this
/// schema), so that two runners rewriting spans of one group take turns.
/// Without it, two answers of one group's neighbouring items, each cutting
/// the span they share from the same snapshot, would write overlapping
/// pieces. One the session's transaction holds already is not asked for
/// again (`Session::spans_held`).
pub(super) fn lock_spans(tx: &mut Session<'_, impl GenericClient>, groups: &[i64]) -> Result<()> {
    let mut groups = groups.to_vec();
    groups.sort_unstable();
    groups.dedup();
    for group in groups {
        if tx.spans_held.contains(&group) {
            continue;
        }
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtext('indexq spans ' || current_schema() || ' ' || $1::bigint)::bigint)",
            &[&group],
        )?;
        tx.spans_held.push(group);
    }
    Ok(())
}

/// `SPAN_COLUMNS`' columns of the row `lag` reads before this one, each
/// equal to this row's (a NULL equal to a NULL), as SQL.
pub(super) fn alike_before() -> String {
    SPAN_COLUMNS
        .split(',')
        .map(|c| format!("lag({0}) OVER w IS NOT DISTINCT FROM {0}", c.trim()))
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// Rewrites the spans of the runs of ids `written` names (a group and an
/// id a row, any order, repeats allowed), one statement for them all,
/// `parts` giving the run's own pieces (as group_id, first, last and
/// `SPAN_COLUMNS`, `r` the runs as (g, f, l); `extra` its parameters from
/// `$4`). For each group, the runs are its ids that follow each other
/// (found here, so that the statement gets a row a run, not an id); the spans of the group that overlap a
/// run or end or start next to it are deleted, and their pieces outside
/// every run come back beside the run's parts; consecutive pieces of one
/// group with equal columns are then written as one span. So a span is cut
/// at a run's ends (its outside pieces kept), the spans inside go, the
/// run's parts are cut at a gap or a change of a column, and a new span is
/// merged with a neighbour that is alike. Its callers write new items'
/// spans (`new_queued_spans`, `copied_spans`).
fn rewrite(
    tx: &mut Session<'_, impl GenericClient>,
    written: &[(i64, i64)],
    parts: &str,
    extra: &[&(dyn pg::types::ToSql + Sync)],
) -> Result<()> {
    let mut sorted = written.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let (mut gs, mut fs, mut ls): (Vec<i64>, Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new(), Vec::new());
    for (group, id) in sorted {
        match (gs.last(), ls.last_mut()) {
            (Some(g), Some(l)) if *g == group && *l + 1 == id => *l = id,
            _ => {
                gs.push(group);
                fs.push(id);
                ls.push(id);
            }
        }
    }
    let mut params: Vec<&(dyn pg::types::ToSql + Sync)> = vec![&gs, &fs, &ls];
    params.extend_from_slice(extra);
    let alike = alike_before();
    tx.execute(
        &format!(
            "WITH r (g, f, l) AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[])),
             -- The spans a run overlaps or touches: those that start in it
             -- or just past it, and the one before it if that reaches it
             -- or ends just before it.
             hit (group_id, first) AS (
                 SELECT s.group_id, s.first FROM r JOIN spans s ON s.group_id = r.g AND s.first BETWEEN r.f AND r.l + 1
                 UNION
                 SELECT b.group_id, b.first FROM r CROSS JOIN LATERAL (
                     SELECT group_id, first, last FROM spans WHERE group_id = r.g AND first < r.f
                     ORDER BY first DESC LIMIT 1
                 ) AS b WHERE b.last >= r.f - 1
             ),
             gone AS (
                 DELETE FROM spans s USING hit WHERE s.group_id = hit.group_id AND s.first = hit.first RETURNING s.*
             ),
             -- Each span gone beside each run it meets, in id order: its
             -- piece before the run (from its start, or from the run
             -- before), and after the last run its piece past it.
             cut AS (
                 SELECT gone.*, r.f, r.l, lag(r.l) OVER w AS l_before, lead(r.f) OVER w AS f_after
                 FROM gone JOIN r ON r.g = gone.group_id AND gone.first <= r.l + 1 AND gone.last >= r.f - 1
                 WINDOW w AS (PARTITION BY gone.group_id, gone.first ORDER BY r.f)
             ),
             parts (group_id, first, last, {SPAN_COLUMNS}) AS (
                 SELECT group_id, coalesce(l_before + 1, first), least(f - 1, last), {SPAN_COLUMNS} FROM cut
                 UNION ALL
                 SELECT group_id, l + 1, last, {SPAN_COLUMNS} FROM cut WHERE f_after IS NULL
                 UNION ALL
                 {parts}
             ),
             marked AS (
                 SELECT *, CASE WHEN lag(last) OVER w = first - 1 AND {alike} THEN 0 ELSE 1 END AS starts
                 FROM parts WHERE first <= last
                 WINDOW w AS (PARTITION BY group_id ORDER BY first)
             ),
             islands AS (SELECT *, sum(starts) OVER (PARTITION BY group_id ORDER BY first) AS island FROM marked)
             INSERT INTO spans (group_id, first, last, {SPAN_COLUMNS})
             SELECT group_id, min(first), max(last), {SPAN_COLUMNS} FROM islands
             GROUP BY group_id, island, {SPAN_COLUMNS}"
        ),
        &params,
    )?;
    Ok(())
}

/// The spans of a copy's new items (`copy_items`' fresh rows, `fresh` as
/// (group, id)): the staged columns of each, the last request mapped to
/// the target's, cut at a gap, a change of group or of a column, and
/// merged with a neighbour that is alike. Not read back from the items.
pub(super) fn copied_spans(tx: &mut Session<'_, impl GenericClient>, fresh: &[(i64, i64)]) -> Result<()> {
    if fresh.is_empty() {
        return Ok(());
    }
    let groups: Vec<i64> = fresh.iter().map(|f| f.0).collect();
    lock_spans(tx, &groups)?;
    let parts = "SELECT c.grp, c.dst, c.dst, c.state, c.next_attempt_at, c.enqueued_at, c.attempts, c.last_class,
                     c.streak, c.streak_started_at, c.accepted_at, c.parked_fingerprint, q.dst
                 FROM r JOIN copy_items c ON c.fresh AND c.grp = r.g AND c.dst BETWEEN r.f AND r.l
                     LEFT JOIN copy_requests q ON q.src = c.last_request";
    rewrite(tx, fresh, parts, &[])
}

/// The spans of an admission's new items, (group, id) in any order, as
/// its statement wrote them (queued, due and enqueued `now`, every other
/// column its default), not read back: a span a run of a group's new ids
/// (another runner may have taken ids between them), merged with a
/// neighbour that is alike (the group's previous admission in the same
/// second).
pub(super) fn new_queued_spans(
    tx: &mut Session<'_, impl GenericClient>,
    new: &[(i64, i64)],
    now: DateTime<Utc>,
) -> Result<()> {
    if new.is_empty() {
        return Ok(());
    }
    let groups: Vec<i64> = new.iter().map(|n| n.0).collect();
    lock_spans(tx, &groups)?;
    let parts = "SELECT g, f, l, 'queued', $4::timestamptz, $4::timestamptz, 0, NULL::text, 0, NULL::timestamptz,
                     NULL::timestamptz, NULL::text, NULL::bigint FROM r";
    rewrite(tx, new, parts, &[&now])
}

/// An item's lastmod (seconds since 1970-01-01 UTC) and action.
pub(super) type Values = (Option<i64>, Action);

/// The runs of `ids` that follow each other, sorted: their first ids and
/// their last.
fn runs_of(ids: &[i64]) -> (Vec<i64>, Vec<i64>) {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let (mut lows, mut highs): (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
    for id in sorted {
        match highs.last_mut() {
            Some(high) if *high + 1 == id => *high = id,
            _ => {
                lows.push(id);
                highs.push(id);
            }
        }
    }
    (lows, highs)
}

/// A batch row's `n`, `lastmods` and `actions`, by its first id.
type BatchBlobs = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// The batch rows holding any id of the runs `$1` (lows) to `$2` (highs),
/// in id order, as the tail of a statement that names their columns
/// (`b`): each run's rows found by two seeks, the last starting at or
/// before the run and those starting inside it.
const BATCHES_OF_RUNS: &str = "FROM batches b
     WHERE b.first_id IN (
         SELECT s.first_id FROM unnest($1::bigint[], $2::bigint[]) AS w (low, high)
             JOIN batches s ON s.first_id <= w.high AND s.first_id >= coalesce(
                 (SELECT max(first_id) FROM batches WHERE first_id <= w.low), w.low)
     )
     ORDER BY b.first_id";

/// What the batch rows say of each of `ids` (in the order given): its
/// lastmod and action as admitted, `None` for an id no batch row holds.
/// One statement reads each batch row holding any of them once, and only
/// its small blobs. The ids go as the runs of them that follow each other
/// (`lows` and `highs`, `runs_of`: most often one run, an admission's or a
/// request's), each run's batch rows found by two seeks: the last starting
/// at or before the run, and those starting inside it.
fn batch_values(
    tx: &mut Session<'_, impl GenericClient>,
    lows: &[i64],
    highs: &[i64],
    ids: &[i64],
) -> Result<Vec<Option<Values>>> {
    let rows =
        tx.query(&format!("SELECT b.first_id, b.n, b.lastmods, b.actions {BATCHES_OF_RUNS}"), &[&lows, &highs])?;
    let held: std::collections::BTreeMap<i64, BatchBlobs> =
        rows.iter().map(|r| (r.get::<_, i64>(0), (i64::from(r.get::<_, i32>(1)), r.get(2), r.get(3)))).collect();
    ids.iter()
        .map(|&id| {
            let Some((first, (n, lastmods, actions))) = held.range(..=id).next_back() else { return Ok(None) };
            if id >= first + n {
                return Ok(None);
            }
            let place = (id - first) as u32;
            let action = if batches::deleted(actions.as_deref(), place)? { Action::Deleted } else { Action::Updated };
            Ok(Some((batches::lastmod(lastmods.as_deref(), place)?, action)))
        })
        .collect()
}

/// Each of `ids`' lastmod and action (in the order given): its row of
/// `item_changes` if it has one, else what its batch row says, each batch
/// row read once for all its ids; `None` for an id no batch row holds. As
/// SQLite's.
///
/// The changes too are read by the runs of ids: `id = ANY($1)` of ten
/// thousand ids sorts the array at each call once the server keeps a
/// generic plan of the statement (a prepared one, `Session`).
pub(super) fn lastmod_and_action(tx: &mut Session<'_, impl GenericClient>, ids: &[i64]) -> Result<Vec<Option<Values>>> {
    let (lows, highs) = runs_of(ids);
    let changed = changes_of_runs(tx, &lows, &highs)?;
    let batch = batch_values(tx, &lows, &highs, ids)?;
    Ok(ids.iter().zip(batch).map(|(id, said)| changed.get(id).copied().or(said)).collect())
}

/// The rows of `item_changes` of the ids of the runs `lows` to `highs`.
fn changes_of_runs(
    tx: &mut Session<'_, impl GenericClient>,
    lows: &[i64],
    highs: &[i64],
) -> Result<rustc_hash::FxHashMap<i64, Values>> {
    let mut changed = rustc_hash::FxHashMap::default();
    for r in tx.query(
        "SELECT c.id, c.lastmod, c.action FROM unnest($1::bigint[], $2::bigint[]) AS w (low, high)
             JOIN item_changes c ON c.id BETWEEN w.low AND w.high",
        &[&lows, &highs],
    )? {
        let lastmod: Option<DateTime<Utc>> = r.get(1);
        let action: Action = super::stored("item_changes", "action", r.get(2))?;
        changed.insert(r.get::<_, i64>(0), (lastmod.map(|t| t.timestamp()), action));
    }
    Ok(changed)
}

/// A batch row's count, actions blob and texts, by its first id.
type BatchTexts = (i64, Option<Vec<u8>>, Vec<u8>);

/// Each of `ids`' URL and action (in the order given), as a claim sends
/// them: its change's action if it has one, else its batch row's; `None`
/// for an id no batch row holds. Two statements for any number of ids:
/// the changes, and the batch rows holding them with their texts and
/// actions (each once).
pub(super) fn urls_and_actions(
    tx: &mut Session<'_, impl GenericClient>,
    ids: &[i64],
) -> Result<Vec<Option<(String, Action)>>> {
    let (lows, highs) = runs_of(ids);
    let changed = changes_of_runs(tx, &lows, &highs)?;
    let rows = tx.query(&format!("SELECT b.first_id, b.n, b.actions, b.texts {BATCHES_OF_RUNS}"), &[&lows, &highs])?;
    let held: std::collections::BTreeMap<i64, BatchTexts> =
        rows.iter().map(|r| (r.get::<_, i64>(0), (i64::from(r.get::<_, i32>(1)), r.get(2), r.get(3)))).collect();
    let mut urls = Vec::with_capacity(ids.len());
    for &id in ids {
        let Some((first, (n, actions, texts))) = held.range(..=id).next_back().filter(|(f, b)| id < **f + b.0) else {
            if changed.contains_key(&id) {
                return Err(LedgerError::Invalid(format!("batches: item {id} is changed but in no batch")));
            }
            urls.push(None);
            continue;
        };
        let place = (id - first) as u32;
        let action = match changed.get(&id) {
            Some((_, action)) => *action,
            None if batches::deleted(actions.as_deref(), place)? => Action::Deleted,
            None => Action::Updated,
        };
        urls.push(Some((batches::text(texts, *n as usize, place)?.to_string(), action)));
    }
    Ok(urls)
}

/// The changes of the items of `values` made to agree with the lastmod
/// and action each now has (`values`: by id, each once): their rows of
/// `item_changes` go, and each whose values differ from what its batch
/// row says gets one with its own. No item is read back: the writer says
/// what it wrote. A constant number of statements for any number of ids:
/// the rows deleted at once, the batch rows read at once (their small
/// blobs), the differing written at once.
pub(super) fn set_changes(tx: &mut Session<'_, impl GenericClient>, values: &[(i64, Values)]) -> Result<()> {
    if values.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = values.iter().map(|v| v.0).collect();
    let (lows, highs) = runs_of(&ids);
    tx.execute(
        "DELETE FROM item_changes c USING unnest($1::bigint[], $2::bigint[]) AS w (low, high)
         WHERE c.id BETWEEN w.low AND w.high",
        &[&lows, &highs],
    )?;
    let batch = batch_values(tx, &lows, &highs, &ids)?;
    let (mut put, mut lastmods, mut actions) = (Vec::new(), Vec::new(), Vec::new());
    for ((id, now), said) in values.iter().zip(batch) {
        if said != Some(*now) {
            put.push(*id);
            lastmods.push(now.0.and_then(|t| DateTime::<Utc>::from_timestamp(t, 0)));
            actions.push(now.1.as_str());
        }
    }
    if !put.is_empty() {
        tx.execute(
            "INSERT INTO item_changes (id, lastmod, action)
             SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[])",
            &[&put, &lastmods, &actions],
        )?;
    }
    Ok(())
}

/// Whether `item_changes` keeps its rules (schema 12 keeps no other copy
/// of an item's lastmod and action to compare with): no row of an id no
/// span holds (a drop deletes its item's), none equal to its batch row's
/// values (a write that sets them back deletes it). An error names the
/// first rule broken.
#[cfg(test)]
pub(super) fn changes_agree(tx: &mut Session<'_, Transaction<'_>>) -> Result<()> {
    let disagree = |what: String| Err(LedgerError::Invalid(format!("item_changes: {what}")));
    let changes = tx.query("SELECT c.id, c.lastmod, c.action FROM item_changes c ORDER BY c.id", &[])?;
    let ids: Vec<i64> = changes.iter().map(|r| r.get(0)).collect();
    let live: std::collections::HashSet<i64> =
        super::rows::held_by_spans(tx, &ids)?.into_iter().map(|(_, id)| id).collect();
    let (lows, highs) = runs_of(&ids);
    let batch = batch_values(tx, &lows, &highs, &ids)?;
    for (r, said) in changes.iter().zip(batch) {
        let id: i64 = r.get(0);
        if !live.contains(&id) {
            return disagree(format!("a change of {id}, which is no item"));
        }
        let lastmod: Option<DateTime<Utc>> = r.get(1);
        let change: Values = (lastmod.map(|t| t.timestamp()), super::stored("item_changes", "action", r.get(2))?);
        if said == Some(change) {
            return disagree(format!("the change of item {id} equals its batch row's values"));
        }
    }
    Ok(())
}

/// Whether the spans keep their rules against the batch rows: no two spans
/// overlap (the ids are one sequence over every group); every id of a
/// span is in a batch row of its group (a span may reach over several of
/// the group's rows that follow each other: alike neighbours are merged); no two adjacent spans of a group are
/// alike (`IS NOT DISTINCT FROM` every state column). Not checked: that
/// every id of a batch row is in a span, dropped or never taken — a drop
/// of an item no request names leaves no row in `dropped_items`, so an id
/// in no span is not told from one dropped. An error names the first rule
/// broken. Run before every commit of the conformance suite's ledgers.
#[cfg(test)]
pub(super) fn spans_agree(tx: &mut Session<'_, Transaction<'_>>) -> Result<()> {
    let disagree = |what: String| Err(LedgerError::Invalid(format!("spans: {what}")));
    let overlap = tx.query_opt(
        "SELECT first, next FROM (SELECT first, last, lead(first) OVER (ORDER BY first) AS next FROM spans) AS s
         WHERE next <= last LIMIT 1",
        &[],
    )?;
    if let Some(r) = overlap {
        return disagree(format!("the span at {} overlaps the one at {}", r.get::<_, i64>(0), r.get::<_, i64>(1)));
    }
    let outside = tx.query_opt(
        "SELECT s.first, s.last FROM spans s CROSS JOIN LATERAL (
             SELECT COALESCE(sum(LEAST(s.last, b.first_id + b.n - 1) - GREATEST(s.first, b.first_id) + 1), 0) AS held
             FROM batches b
             WHERE b.group_id = s.group_id AND b.first_id <= s.last AND b.first_id + b.n - 1 >= s.first
         ) c
         WHERE c.held <> s.last - s.first + 1
         ORDER BY s.first LIMIT 1",
        &[],
    )?;
    if let Some(r) = outside {
        let (first, last): (i64, i64) = (r.get(0), r.get(1));
        return disagree(format!("the span {first}-{last} holds ids no batch row of its group holds"));
    }
    let alike =
        SPAN_COLUMNS.split(',').map(|c| format!("a.{0} IS NOT DISTINCT FROM b.{0}", c.trim())).collect::<Vec<_>>();
    let twins = tx.query_opt(
        &format!(
            "SELECT a.first, b.first FROM spans a JOIN spans b ON b.group_id = a.group_id AND b.first = a.last + 1
             WHERE {} ORDER BY a.first LIMIT 1",
            alike.join(" AND ")
        ),
        &[],
    )?;
    match twins {
        Some(r) => disagree(format!("the spans at {} and {} are alike", r.get::<_, i64>(0), r.get::<_, i64>(1))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::batches::url_hash;
    use super::super::{PgLedger, PgOptions};
    use super::*;
    use crate::ledger::conformance::{dedupe_day, test_postgres, test_postgres_unchecked, two_groups};
    use crate::ledger::{Intake, ItemFilter, Queue};

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    /// Every item of the ledger as (id, group, url, state), by id.
    fn items_of(ledger: &mut PgLedger) -> Vec<(i64, i64, String, String)> {
        ledger
            .transaction(|tx| {
                super::super::rows::fill_item_rows(tx, "item_rows")?;
                Ok(tx
                    .query("SELECT id, group_id, url, state FROM item_rows ORDER BY id", &[])?
                    .iter()
                    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                    .collect())
            })
            .unwrap()
    }

    /// Every item of the ledger is found by its URL's hash in its group, at
    /// its id; a URL never admitted is not.
    fn assert_batches_hold_every_item(ledger: &mut PgLedger) {
        let items = items_of(ledger);
        assert!(!items.is_empty());
        ledger
            .transaction(|tx| {
                for (id, group, url, _) in &items {
                    assert_eq!(find_ids(tx, *group, &[url_hash(url)])?, [Some(*id)], "{url} of group {group}");
                }
                let groups: Vec<i64> = tx.query("SELECT id FROM groups", &[])?.iter().map(|r| r.get(0)).collect();
                for group in groups {
                    assert_eq!(find_ids(tx, group, &[url_hash("https://site.example/never")])?, [None]);
                }
                Ok(())
            })
            .unwrap();
    }

    /// The items of a ledger of schema 12 given back schema 11's state
    /// columns (every item queued, due and enqueued at 09:00, as its
    /// admission left it), schema 1's counting triggers and schema 8's
    /// view, from those scripts' own text, and schema 12's tables dropped:
    /// a ledger of schema 11 to migrate.
    fn back_to_11(tx: &mut Session<'_, Transaction<'_>>) -> Result<()> {
        use super::super::schema::{SCHEMA_1, SCHEMA_8};
        let between = |script: &'static str, from: &str, to: Option<&str>| {
            let start = script.find(from).expect("the script holds it");
            let end = to.map_or(script.len(), |to| start + script[start..].find(to).expect("the script holds it"));
            &script[start..end]
        };
        // Schema 11's items, made again from the spans, batch rows and
        // changes (`rows::fill_item_rows`), numbered by their own sequence
        // again from the highest id taken (the blocks of `item_ids` leave
        // ids unused above it).
        super::super::rows::fill_item_rows(tx, "item_rows")?;
        tx.batch_execute(
            "DROP TRIGGER spans_inserted ON spans; DROP TRIGGER spans_updated ON spans;
             DROP TRIGGER spans_deleted ON spans;
             CREATE TABLE items (
                 id bigserial PRIMARY KEY,
                 url text NOT NULL,
                 group_id bigint NOT NULL,
                 state text NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'in_flight', 'accepted', 'parked')),
                 action text NOT NULL DEFAULT 'updated' CHECK (action IN ('updated', 'deleted')),
                 lastmod timestamptz,
                 next_attempt_at timestamptz DEFAULT '2026-12-03T09:00:00Z',
                 enqueued_at timestamptz NOT NULL DEFAULT '2026-12-03T09:00:00Z',
                 attempts integer NOT NULL DEFAULT 0,
                 last_class text,
                 streak integer NOT NULL DEFAULT 0,
                 streak_started_at timestamptz,
                 accepted_at timestamptz,
                 parked_fingerprint text,
                 url_key bigint NOT NULL,
                 last_request_id bigint,
                 CONSTRAINT items_key UNIQUE (group_id, url_key)
             );
             INSERT INTO items (id, url, group_id, state, action, lastmod, next_attempt_at, enqueued_at, attempts,
                     last_class, streak, streak_started_at, accepted_at, parked_fingerprint, url_key, last_request_id)
                 SELECT id, url, group_id, state, action, lastmod, next_attempt_at, enqueued_at, attempts,
                     last_class, streak, streak_started_at, accepted_at, parked_fingerprint, url_key, last_request_id
                 FROM item_rows;
             SELECT setval(pg_get_serial_sequence('items', 'id'),
                 (SELECT max(id) FROM (SELECT id FROM items UNION ALL SELECT id FROM dropped_items) AS ids));
             DROP SEQUENCE item_ids;",
        )?;
        tx.batch_execute(between(SCHEMA_1, "CREATE FUNCTION count_items()", Some("CREATE TABLE responses")))?;
        tx.batch_execute(between(SCHEMA_8, "CREATE VIEW item_states", None))?;
        tx.batch_execute(
            "DROP TABLE item_changes, hash_pages, hash_runs, spans, batches;
             DROP FUNCTION count_spans();
             DELETE FROM schema_version; INSERT INTO schema_version VALUES (11);",
        )?;
        Ok(())
    }

    /// The options that open `ledger`'s schema again, waiting up to
    /// `timeout`.
    fn options_of(ledger: &PgLedger, timeout: std::time::Duration) -> PgOptions {
        PgOptions {
            url: std::env::var("INDEXQ_TEST_PG").unwrap(),
            schema: ledger.schema.clone(),
            password: std::env::var("INDEXQ_TEST_PG_PASSWORD").ok(),
            timeout,
            lease: crate::ledger::owner::LEASE,
        }
    }

    /// One statement's numbers, by row.
    fn numbers(ledger: &mut PgLedger, sql: &'static str) -> Vec<i64> {
        ledger.transaction(|tx| Ok(tx.query(sql, &[])?.iter().map(|r| r.get(0)).collect())).unwrap()
    }

    /// Admission writes each group's new items as batch rows, in runs of
    /// ids of their own even when the input mixes the groups; every item is
    /// found by its URL's hash (many hashes at once too), an unknown hash
    /// is not, and a URL dropped and submitted again is found at its new
    /// id, through merges.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_admission_writes_each_groups_new_items_as_batches() {
        let mut ledger = test_postgres();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        for round in 0..FANOUT * 2 {
            let batch: Vec<_> = (0..20).map(|i| item(i % 2, round * 20 + i)).collect();
            ledger.admit(&batch, now, &dedupe_day()).unwrap();
        }
        let sizes = numbers(&mut ledger, "SELECT n::bigint FROM batches ORDER BY first_id");
        assert_eq!(sizes, vec![10; 2 * FANOUT * 2], "one batch row a group an admission");
        let tiers = numbers(&mut ledger, "SELECT tier::bigint FROM hash_runs ORDER BY group_id, tier");
        assert_eq!(tiers, [1, 1, 1, 1], "each group's 16 batches merged into two runs of tier 1");
        assert_batches_hold_every_item(&mut ledger);
        let items = items_of(&mut ledger);
        let (groups, hashes): (Vec<i64>, Vec<u128>) = items.iter().map(|(_, g, url, _)| (*g, url_hash(url))).unzip();
        let ids: Vec<Option<i64>> = items.iter().map(|(id, ..)| Some(*id)).collect();
        let group_a = groups[0];
        let of_a = |v: &[Option<i64>]| -> Vec<Option<i64>> {
            v.iter().zip(&groups).filter(|(_, g)| **g == group_a).map(|(x, _)| *x).collect()
        };
        let hashes_a: Vec<u128> = hashes.iter().zip(&groups).filter(|(_, g)| **g == group_a).map(|(h, _)| *h).collect();
        let found = ledger.transaction(|tx| find_ids(tx, group_a, &hashes_a)).unwrap();
        assert_eq!(found, of_a(&ids), "many hashes at once: each run's pages read in order");
        let filter = ItemFilter { url: Some("https://site.example/4".into()), ..Default::default() };
        assert_eq!(ledger.drop_items(&filter, now).unwrap(), 1);
        ledger.admit(&[item(0, 4)], now, &dedupe_day()).unwrap();
        for round in 0..FANOUT * 2 {
            let batch: Vec<_> = (0..20).map(|i| item(i % 2, 1_000 + round * 20 + i)).collect();
            ledger.admit(&batch, now, &dedupe_day()).unwrap();
        }
        let again = items_of(&mut ledger);
        let newer = again.iter().find(|i| i.2 == "https://site.example/4").unwrap().0;
        assert!(newer > items.iter().map(|i| i.0).max().unwrap(), "submitted again, it has a new id");
        assert_batches_hold_every_item(&mut ledger);
    }

    /// A ledger of schema 11 (items of two groups, some accepted, one
    /// parked, one with a lastmod and one a deletion, a gap left by an
    /// item gone) gets schema 12 on open: every item found by its URL's
    /// hash in its own group only, its span in its state, its text,
    /// lastmod and action in its batch; the items kept.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_a_version_11_ledger_is_migrated_into_batches_and_spans() {
        // Its items are changed by its own statements, with no spans.
        let mut ledger = test_postgres_unchecked();
        let item = two_groups();
        let mut items: Vec<_> = (0..40).map(|i| item(0, i)).collect();
        items.extend((0..25).map(|i| item(1, i)));
        ledger.admit(&items, t("2026-12-03T09:00:00Z"), &dedupe_day()).unwrap();
        ledger
            .transaction(|tx| {
                back_to_11(tx)?;
                Ok(tx.batch_execute(
                    "UPDATE items SET state = 'accepted', accepted_at = now(), attempts = 1, last_class = 'accepted'
                         WHERE id BETWEEN 5 AND 14;
                     UPDATE items SET state = 'parked', parked_fingerprint = 'fp' WHERE id = 20;
                     UPDATE items SET lastmod = to_timestamp(1700000000) WHERE id = 21;
                     UPDATE items SET action = 'deleted' WHERE id = 22;
                     DELETE FROM items WHERE id = 30;",
                )?)
            })
            .unwrap();
        let options = options_of(&ledger, std::time::Duration::from_secs(10));
        drop(ledger);
        let mut ledger = PgLedger::open(&options).unwrap();
        assert_eq!(ledger.stored_version().unwrap(), Some(super::super::SCHEMA_VERSION));
        let items = items_of(&mut ledger);
        assert_eq!(items.len(), 64, "every item found after");
        assert_batches_hold_every_item(&mut ledger);
        // Each batch row is written from its items' current values, so no
        // item differs from it: no change row is due, and none is written.
        ledger.transaction(changes_agree).unwrap();
        let other_group_finds_none = ledger
            .transaction(|tx| {
                for (id, group, url, state) in &items {
                    let other: i64 = tx.query_one("SELECT id FROM groups WHERE id <> $1", &[group])?.get(0);
                    assert_ne!(find_ids(tx, other, &[url_hash(url)])?[0], Some(*id), "{url}: its own group's only");
                    let span: Option<String> = tx
                        .query_opt(
                            "SELECT state FROM spans WHERE group_id = $1 AND first <= $2 AND last >= $2",
                            &[group, id],
                        )?
                        .map(|r| r.get(0));
                    assert_eq!(span.as_deref(), Some(state.as_str()), "item {id}");
                }
                let gone: i64 =
                    tx.query_one("SELECT count(*) FROM spans WHERE first <= 30 AND last >= 30", &[])?.get(0);
                Ok(gone == 0)
            })
            .unwrap();
        assert!(other_group_finds_none, "no span holds an item gone");
        // The gap and the change of group cut the batches; the states cut the spans.
        let cuts = numbers(&mut ledger, "SELECT first_id * 100 + n FROM batches ORDER BY first_id");
        assert_eq!(cuts, [129, 3110, 4125], "1 (29), 31 (10), 41 (25)");
        let spans = numbers(&mut ledger, "SELECT first * 100 + last FROM spans ORDER BY first");
        assert_eq!(spans, [104, 514, 1519, 2020, 2129, 3140, 4165]);
        let url_21 = items.iter().find(|i| i.0 == 21).unwrap().2.clone();
        ledger
            .transaction(|tx| {
                let r = tx.query_one("SELECT texts, n, lastmods, actions FROM batches WHERE first_id = 1", &[])?;
                let (texts, n): (&[u8], i32) = (r.get(0), r.get(1));
                let (lastmods, actions): (Option<&[u8]>, Option<&[u8]>) = (r.get(2), r.get(3));
                assert_eq!(batches::text(texts, n as usize, 20)?, url_21);
                assert_eq!(batches::lastmod(lastmods, 20)?, Some(1_700_000_000));
                assert!(batches::deleted(actions, 21)?);
                assert!(!batches::deleted(actions, 20)?);
                let storage: Vec<String> = tx
                    .query(
                        "SELECT attstorage::text FROM pg_attribute WHERE attrelid = 'batches'::regclass
                         AND attname IN ('sorted', 'texts', 'lastmods', 'actions')",
                        &[],
                    )?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                assert_eq!(storage, ["e"; 4], "the blobs stored as they are (external, uncompressed)");
                Ok(())
            })
            .unwrap();
    }

    /// A million items of schema 11 (one group, a hundred runs of
    /// different states) migrate into batches and spans, and the items are
    /// dropped, in one transaction; how long it takes is printed.
    /// Run by hand (`--ignored --nocapture`): it writes a million rows.
    #[test]
    #[ignore = "a million rows: run by hand with INDEXQ_TEST_PG"]
    fn postgres_a_million_items_of_schema_11_migrate() {
        let mut ledger = test_postgres_unchecked();
        ledger.admit(&[two_groups()(0, 0)], t("2026-12-03T09:00:00Z"), &dedupe_day()).unwrap();
        ledger
            .transaction(|tx| {
                back_to_11(tx)?;
                Ok(tx.batch_execute(
                    "INSERT INTO items (group_id, url_key, url, state, attempts)
                     SELECT (SELECT min(id) FROM groups), n, 'https://site.example/big/' || n,
                         CASE WHEN n / 10000 % 2 = 0 THEN 'queued' ELSE 'accepted' END, n / 10000 % 3
                     FROM generate_series(1, 1000000) AS n;",
                )?)
            })
            .unwrap();
        let options = options_of(&ledger, std::time::Duration::from_secs(600));
        drop(ledger);
        let started = std::time::Instant::now();
        let mut ledger = PgLedger::open(&options).unwrap();
        println!("a million items of schema 11 migrated in {:?}", started.elapsed());
        assert_eq!(ledger.stored_version().unwrap(), Some(super::super::SCHEMA_VERSION));
        let spans = numbers(&mut ledger, "SELECT count(*) FROM spans");
        assert!(spans[0] >= 100, "{spans:?}");
        let held = numbers(&mut ledger, "SELECT sum(last - first + 1)::bigint FROM spans");
        assert_eq!(held, [1_000_001]);
        let tables = numbers(
            &mut ledger,
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'items'",
        );
        assert_eq!(tables, [0], "the items dropped");
        let batched = numbers(&mut ledger, "SELECT sum(n)::bigint FROM batches");
        assert_eq!(batched, [1_000_001], "every URL in a batch row");
    }

    /// The spans written by a long sequence of writes (a run of ids of two
    /// groups, their ids interleaved in places, moved to one of a few
    /// states through `write_spans`, or an item deleted with its span):
    /// the spans keep their rules after each (`spans_agree`), and no two
    /// adjacent spans of a group are alike (each write merges what it made
    /// alike); then through the ledger, a drop, a retry and an announce.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_spans_follow_every_write_of_a_run_of_items() {
        let mut ledger = test_postgres();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        // Ids 1-60 of group a, then 61-90 of group b; then ten of each
        // group in turn (91-110, the groups alternating: every id of a
        // group is a run of its own there).
        ledger.admit(&(0..60).map(|i| item(0, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        ledger.admit(&(0..30).map(|i| item(1, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        assert_eq!(numbers(&mut ledger, "SELECT count(*) FROM spans"), [2], "an admission's new items: one span");
        for i in 0..10 {
            ledger.admit(&[item(0, 100 + i)], now, &dedupe_day()).unwrap();
            ledger.admit(&[item(1, 100 + i)], now, &dedupe_day()).unwrap();
        }
        let alike = SPAN_COLUMNS
            .split(',')
            .map(|c| format!("a.{0} IS NOT DISTINCT FROM b.{0}", c.trim()))
            .collect::<Vec<_>>()
            .join(" AND ");
        let adjacent_alike = format!(
            "SELECT count(*) FROM spans a JOIN spans b ON b.group_id = a.group_id AND b.first = a.last + 1 AND {alike}"
        );
        let states = [
            "state = 'queued', next_attempt_at = now() + interval '5 s', attempts = attempts + 1,
             last_class = 'transient'",
            "state = 'accepted', accepted_at = '2026-12-03T09:00:07Z', next_attempt_at = NULL, last_class = 'accepted'",
            "state = 'parked', parked_fingerprint = 'fp', last_class = 'misconfigured', next_attempt_at = NULL",
            "state = 'queued', next_attempt_at = '2026-12-03T09:00:05Z', streak = 0, streak_started_at = NULL",
        ];
        let mut random = crate::ledger::conformance::Seeded::new(48);
        let steps: Vec<(i64, i64, u64)> = (0..300).map(|_| random.step(110, 12, 20)).collect();
        ledger
            .transaction(|tx| {
                for (step, &(first, last, kind)) in steps.iter().enumerate() {
                    match kind {
                        // Items dropped one at a time, so that most stay.
                        0 => {
                            super::super::spans::drop_item(tx, first)?;
                        }
                        k => super::super::spans::set_state(tx, first, last, states[k as usize % states.len()])?,
                    }
                    if let Err(e) = spans_agree(tx) {
                        panic!("step {step}, ids {first}-{last}: {e}");
                    }
                    let alike: i64 = tx.query_one(&adjacent_alike, &[])?.get(0);
                    assert_eq!(alike, 0, "step {step}: adjacent spans alike");
                }
                Ok(())
            })
            .unwrap();
        let items = numbers(&mut ledger, "SELECT sum(last - first + 1)::bigint FROM spans")[0];
        let spans = numbers(&mut ledger, "SELECT count(*) FROM spans")[0];
        assert!(items > 80 && spans > 20, "{items} items, {spans} spans");
        // Through the ledger: a drop, a retry of every item, and an
        // announce; each commit checks the spans (`test_postgres`).
        let filter = ItemFilter { url: Some("https://site.example/1".into()), ..Default::default() };
        assert!(ledger.drop_items(&filter, now).unwrap() > 0, "the URL of either group");
        assert!(ledger.retry(&ItemFilter::default(), now).unwrap() > 0);
        ledger.admit(&[item(0, 200), item(1, 200)], now, &dedupe_day()).unwrap();
        assert_eq!(ledger.announce(&[item(0, 200), item(1, 200)], now).unwrap(), 2);
        ledger.transaction(spans_agree).unwrap();
    }

    /// The check fails where the spans break each of its rules: a span
    /// overlapping another, one holding an id that is no item of its group
    /// (an item deleted; a span given to the other group), an item in no
    /// span, two adjacent spans alike.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_spans_agree_finds_each_disagreement() {
        let mut ledger = test_postgres();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        ledger.admit(&(0..10).map(|i| item(0, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        ledger.admit(&(0..10).map(|i| item(1, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        let broken = |ledger: &mut PgLedger, sql: &str| {
            ledger
                .transaction(|tx| {
                    tx.batch_execute(&format!("SAVEPOINT s; {sql}"))?;
                    let err = spans_agree(tx).map_err(|e| e.to_string()).unwrap_err();
                    tx.batch_execute("ROLLBACK TO SAVEPOINT s")?;
                    Ok(err)
                })
                .unwrap()
        };
        // The second group's ids are the next block's.
        let b = 1 + super::super::schema::ID_BLOCK;
        let overlap = broken(&mut ledger, &format!("UPDATE spans SET last = {b} WHERE first = 1"));
        assert!(overlap.contains(&format!("overlaps the one at {b}")), "{overlap}");
        // A span reaching past its batch row, and one given to the other
        // group: ids no batch row of its group holds.
        let past = broken(&mut ledger, &format!("UPDATE spans SET last = {} WHERE first = {b}", b + 14));
        assert!(past.contains(&format!("the span {b}-{} holds ids no batch row of its group holds", b + 14)), "{past}");
        let other =
            broken(&mut ledger, &format!("UPDATE spans SET group_id = (SELECT min(id) FROM groups) WHERE first = {b}"));
        assert!(
            other.contains(&format!("the span {b}-{} holds ids no batch row of its group holds", b + 9)),
            "{other}"
        );
        let twins = broken(
            &mut ledger,
            "INSERT INTO spans SELECT group_id, 6, 10, state, next_attempt_at, enqueued_at, attempts, last_class,
                 streak, streak_started_at, accepted_at, parked_fingerprint, last_request_id
             FROM spans WHERE first = 1;
             UPDATE spans SET last = 5 WHERE first = 1",
        );
        assert!(twins.contains("the spans at 1 and 6 are alike"), "{twins}");
        ledger.transaction(spans_agree).unwrap();
    }

    /// A copy into a PostgreSQL ledger that holds items already writes its
    /// new items as batch rows, each group's one run of ids; copied again,
    /// it writes none.
    /// `changes_agree` finds each way the changes can disagree: an item
    /// written without `set_changes` (by lastmod, by action), a change
    /// left behind by a dropped item, a change equal to its batch row's
    /// values, a batch row's blob written wrong; `set_changes` makes the
    /// first agree again.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_changes_agree_finds_each_disagreement() {
        let mut ledger = test_postgres();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        ledger.admit(&(0..5).map(|i| item(0, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        let broken = |ledger: &mut PgLedger, sql: &str| {
            ledger
                .transaction(|tx| {
                    tx.batch_execute(&format!("SAVEPOINT s; {sql}"))?;
                    let err = changes_agree(tx).map_err(|e| e.to_string()).unwrap_err();
                    tx.batch_execute("ROLLBACK TO SAVEPOINT s")?;
                    Ok(err)
                })
                .unwrap()
        };
        let dropped =
            broken(&mut ledger, "INSERT INTO item_changes (id, lastmod, action) VALUES (99, now(), 'deleted')");
        assert!(dropped.contains("a change of 99, which is no item"), "{dropped}");
        let alike = broken(&mut ledger, "INSERT INTO item_changes (id, lastmod, action) VALUES (4, NULL, 'updated')");
        assert!(alike.contains("the change of item 4 equals its batch row's values"), "{alike}");
        // A change left behind by an item dropped (its span gone).
        let gone = broken(
            &mut ledger,
            "INSERT INTO item_changes (id, lastmod, action) VALUES (2, to_timestamp(7), 'updated');
             DELETE FROM spans",
        );
        assert!(gone.contains("a change of 2, which is no item"), "{gone}");
        // A batch row's blob that says what the change says.
        let blob = broken(
            &mut ledger,
            "INSERT INTO item_changes (id, lastmod, action) VALUES (4, NULL, 'deleted');
             UPDATE batches SET actions = '\\x0000000100'",
        );
        assert!(blob.contains("the change of item 4 equals its batch row's values"), "{blob}");
        ledger
            .transaction(|tx| {
                set_changes(tx, &[(2, (Some(7), Action::Updated))])?;
                changes_agree(tx)?;
                assert_eq!(
                    lastmod_and_action(tx, &[2, 1, 77])?,
                    [Some((Some(7), Action::Updated)), Some((None, Action::Updated)), None]
                );
                Ok(())
            })
            .unwrap();
    }

    /// After each of 300 random writes of lastmods and actions to runs of
    /// two groups' items, and drops, `set_changes` of the written ids
    /// leaves a change row exactly for each item that differs from its
    /// batch row.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_item_changes_follow_every_write_of_a_lastmod_or_an_action() {
        let mut ledger = test_postgres_unchecked();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        ledger.admit(&(0..40).map(|i| item(0, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        ledger.admit(&(0..40).map(|i| item(1, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        let writes = [
            "lastmod = to_timestamp(1700000000)",
            "lastmod = NULL",
            "action = 'deleted'",
            "action = 'updated'",
            "action = 'deleted', lastmod = to_timestamp(1800000000)",
        ];
        let k_of = |kind: u64| kind as usize % writes.len();
        let mut random = crate::ledger::conformance::Seeded::new(4_849);
        let steps: Vec<(i64, i64, u64)> = (0..300).map(|_| random.step(80, 8, 30)).collect();
        let most = ledger
            .transaction(|tx| {
                // The oracle: the items' rows, written as the items were.
                super::super::rows::fill_item_rows(tx, "item_rows")?;
                let mut most = 0i64;
                for (step, &(first, last, kind)) in steps.iter().enumerate() {
                    if kind == 0 {
                        // A drop, as `queue drop` makes it: the span and
                        // the change row go.
                        let gone = super::super::rows::held_by_spans(tx, &[first])?;
                        super::super::spans::delete_spans(tx, &super::super::spans::Runs::of(&gone))?;
                        tx.execute("DELETE FROM item_changes WHERE id = $1", &[&first])?;
                        tx.execute("DELETE FROM item_rows WHERE id = $1", &[&first])?;
                    } else {
                        let rows = tx.query(
                            &format!(
                                "UPDATE item_rows SET {} WHERE id BETWEEN $1 AND $2 RETURNING id, lastmod, action",
                                writes[k_of(kind)]
                            ),
                            &[&first, &last],
                        )?;
                        let values = rows
                            .iter()
                            .map(|r| {
                                let lastmod: Option<DateTime<Utc>> = r.get(1);
                                Ok((
                                    r.get(0),
                                    (
                                        lastmod.map(|t| t.timestamp()),
                                        super::super::stored("items", "action", r.get(2))?,
                                    ),
                                ))
                            })
                            .collect::<Result<Vec<(i64, Values)>>>()?;
                        set_changes(tx, &values)?;
                    }
                    if let Err(e) = changes_agree(tx) {
                        panic!("step {step}, ids {first}-{last}: {e}");
                    }
                    // Every item's values what the reader says.
                    let oracle = tx.query("SELECT id, lastmod, action FROM item_rows ORDER BY id", &[])?;
                    let ids: Vec<i64> = oracle.iter().map(|r| r.get(0)).collect();
                    for (r, said) in oracle.iter().zip(lastmod_and_action(tx, &ids)?) {
                        let lastmod: Option<DateTime<Utc>> = r.get(1);
                        let item: Values =
                            (lastmod.map(|t| t.timestamp()), super::super::stored("items", "action", r.get(2))?);
                        assert_eq!(said, Some(item), "step {step}: item {}", r.get::<_, i64>(0));
                    }
                    most = most.max(tx.query_one("SELECT count(*) FROM item_changes", &[])?.get(0));
                }
                Ok(most)
            })
            .unwrap();
        assert!(most > 10, "the writes made changes: at most {most} rows");
    }

    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_a_copy_writes_its_new_items_as_batches() {
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        let mut from = test_postgres();
        let batch: Vec<_> = (0..30).map(|i| item(i % 2, i)).collect();
        from.admit(&batch, now, &dedupe_day()).unwrap();
        let mut to = test_postgres();
        to.admit(&[item(0, 0), item(1, 100)], now, &dedupe_day()).unwrap();
        crate::ledger::copy(&mut from, &mut to, true).unwrap();
        assert_batches_hold_every_item(&mut to);
        let sizes = numbers(&mut to, "SELECT n::bigint FROM batches ORDER BY first_id");
        assert_eq!(sizes, [1, 1, 14, 15], "the two admitted, then group a's 14 new, group b's 15");
        crate::ledger::copy(&mut from, &mut to, true).unwrap();
        assert_eq!(numbers(&mut to, "SELECT count(*) FROM batches"), [4]);
        assert_batches_hold_every_item(&mut to);
    }

    /// Batches enough to fill two tiers: each tier's runs merged into one
    /// of the next, every URL still found (a seek a hash, and the pages in
    /// order), and a URL never admitted not.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_full_tiers_are_merged_and_every_url_is_still_found() {
        let mut ledger = test_postgres();
        let now = t("2026-12-03T09:00:00Z");
        ledger
            .transaction(|tx| {
                tx.batch_execute(
                    "INSERT INTO groups (id, property, engine, target) VALUES (1, 'p', 'indexnow', 't'),
                         (2, 'p', 'bing', 't')",
                )?;
                let urls: Vec<String> =
                    (0..FANOUT * FANOUT * 3 + 3).map(|i| format!("https://site.example/{i}")).collect();
                for (b, batch) in urls.chunks(3).enumerate() {
                    let items: Vec<BatchItem> =
                        batch.iter().map(|url| BatchItem { url, lastmod: None, deleted: false }).collect();
                    write_batch(tx, 1, 1 + 3 * b as i64, now, &items)?;
                }
                let tiers: Vec<(i32, i64)> = tx
                    .query("SELECT tier, count(*) FROM hash_runs GROUP BY tier ORDER BY tier", &[])?
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect();
                // 195 URLs in 65 batches of 3: one run of tier 2 (64 batches), one batch.
                assert_eq!(tiers, [(0, 1), (2, 1)]);
                let hashes: Vec<u128> =
                    urls.iter().map(|u| url_hash(u)).chain([url_hash("https://site.example/new")]).collect();
                let expected: Vec<Option<i64>> = (1..=urls.len() as i64).map(Some).chain([None]).collect();
                assert_eq!(find_ids(tx, 1, &hashes)?, expected);
                for (hash, id) in hashes.iter().zip(&expected) {
                    assert_eq!(find_ids(tx, 1, &[*hash])?, [*id]);
                }
                // A run of more pages than four hashes sought: each found by a seek.
                let urls: Vec<String> = (0..FANOUT * 600).map(|i| format!("https://site.example/{i}")).collect();
                for (b, batch) in urls.chunks(600).enumerate() {
                    let items: Vec<BatchItem> =
                        batch.iter().map(|url| BatchItem { url, lastmod: None, deleted: false }).collect();
                    write_batch(tx, 2, 10_000 + 600 * b as i64, now, &items)?;
                }
                let pages: i64 = tx.query_one("SELECT count(*) FROM hash_pages", &[])?.get(0);
                assert_eq!(pages, 1 + 5, "one page of group 1's run, five of group 2's");
                for (k, url) in urls.iter().enumerate().step_by(97) {
                    assert_eq!(find_ids(tx, 2, &[url_hash(url)])?, [Some(10_000 + k as i64)], "{url}");
                }
                assert_eq!(find_ids(tx, 2, &[url_hash("https://site.example/new")])?, [None]);
                Ok(())
            })
            .unwrap();
    }

    /// A merged run is kept as it is written (its hashes' prefixes), and
    /// a look-up reads none of its pages for a hash it does not hold, but
    /// reads them for one it may; a run written again under the same id
    /// (its first writer rolled back, the sequence set back) is another
    /// run, read anew, not the one kept.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_a_kept_run_is_found_again_and_a_run_written_anew_is_read() {
        let mut ledger = test_postgres();
        let now = t("2026-12-03T09:00:00Z");
        let write = |tx: &mut Session<'_, Transaction<'_>>, site: &str| -> Result<(Vec<u128>, i64)> {
            let urls: Vec<String> = (0..FANOUT * 3).map(|i| format!("https://{site}/{i}")).collect();
            for (b, batch) in urls.chunks(3).enumerate() {
                let items: Vec<BatchItem> =
                    batch.iter().map(|url| BatchItem { url, lastmod: None, deleted: false }).collect();
                write_batch(tx, 1, 1 + 3 * b as i64, now, &items)?;
            }
            let run: i64 = tx.query_one("SELECT run FROM hash_runs WHERE tier = 1", &[])?.get(0);
            Ok((urls.iter().map(|u| url_hash(u)).collect(), run))
        };
        ledger
            .transaction(|tx| {
                Ok(tx.batch_execute(
                    "INSERT INTO groups (id, property, engine, target) VALUES (1, 'p', 'indexnow', 't')",
                )?)
            })
            .unwrap();
        let expected: Vec<Option<i64>> = (1..=(FANOUT * 3) as i64).map(Some).collect();
        let first = ledger.transaction(|tx| {
            let (hashes, run) = write(tx, "a.example")?;
            let table: i64 = tx.query_one("SELECT 'hash_runs'::regclass::oid::bigint", &[])?.get(0);
            assert_eq!(crate::ledger::kept_runs::kept_of(table as u64, 1, run), 1, "the merged run is kept");
            assert_eq!(find_ids(tx, 1, &hashes)?, expected);
            // A hash the kept prefixes do not hold is not sought in the
            // run's pages: here a page made to claim it.
            let new = url_hash("https://a.example/new");
            let claimed = batches::merge(vec![(new, 99)], |_, _| Ok(true))?;
            tx.execute("DELETE FROM hash_pages WHERE run = $1", &[&run])?;
            tx.execute(
                "INSERT INTO hash_pages (run, first_hash, entries) VALUES ($1, $2, $3)",
                &[&run, &&claimed[0].first_hash[..], &claimed[0].entries],
            )?;
            assert_eq!(find_ids(tx, 1, &[new])?, [None], "not read: the run kept says it is not there");
            assert_eq!(find_ids(tx, 1, &hashes[..1])?, [None], "read: the run kept may hold it");
            Err::<(), _>(LedgerError::Invalid(format!("rolled back: {run}")))
        });
        let Err(LedgerError::Invalid(said)) = first else { panic!("{first:?}") };
        let run: i64 = said.trim_start_matches("rolled back: ").parse().unwrap();
        ledger
            .transaction(|tx| {
                // A run of that id written again, by another process:
                // nothing of it kept here.
                tx.execute("SELECT setval(pg_get_serial_sequence('hash_runs', 'run'), $1::bigint, false)", &[&run])?;
                let hashes: Vec<u128> = (0..FANOUT * 3).map(|i| url_hash(&format!("https://b.example/{i}"))).collect();
                let again: i64 = tx
                    .query_one(
                        "INSERT INTO hash_runs (group_id, tier, n) VALUES (1, 1, $1) RETURNING run",
                        &[&(hashes.len() as i64)],
                    )?
                    .get(0);
                assert_eq!(again, run, "the same run id, written anew");
                for page in batches::merge(hashes.iter().copied().zip(1..).collect(), |_, _| Ok(true))? {
                    tx.execute(
                        "INSERT INTO hash_pages (run, first_hash, entries) VALUES ($1, $2, $3)",
                        &[&run, &&page.first_hash[..], &page.entries],
                    )?;
                }
                assert_eq!(find_ids(tx, 1, &hashes)?, expected);
                let gone: Vec<u128> = (0..FANOUT * 3).map(|i| url_hash(&format!("https://a.example/{i}"))).collect();
                assert_eq!(find_ids(tx, 1, &gone)?, vec![None; gone.len()]);
                Ok(())
            })
            .unwrap();
    }
}
