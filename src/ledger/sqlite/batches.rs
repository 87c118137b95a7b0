//! A ledger per batch on SQLite (issue 48; docs/design.md, *A ledger per
//! batch*: being built on this branch). Schema 12's tables: a batch row
//! written with its run of tier 0, the runs of a tier merged into the
//! next, a look-up of hashes through them, the migration that fills them
//! from schema 11's items (`fill_from`) before the items are dropped, an
//! admission's new items as a queued span (`new_queued_span`; every other
//! write of state is `spans.rs`'s), and the item changes. A URL is kept
//! once, in its batch row: admission finds the URLs it holds through the
//! runs (`find_ids`), then reads their state by span and their lastmod
//! and action from the changes or the batch row.

use super::super::batches::{self, BatchItem, FANOUT};
use super::super::find_ids as find;
use super::super::kept_runs::{keep, kept, Kept, RunKey};
use super::super::{LedgerError, Result};
use crate::model::Action;
use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension};

/// Writes the batch `items` of `group`, ids from `first_id`, and merges
/// its group's runs as far as a tier is full.
pub(super) fn write_batch(
    tx: &Connection,
    group: i64,
    first_id: i64,
    created_at: i64,
    items: &[BatchItem<'_>],
) -> Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    let blobs = batches::encode(items)?;
    tx.prepare_cached(
        "INSERT OR FAIL INTO batches (first_id, group_id, n, created_at, sorted, texts, lastmods, actions)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        first_id,
        group,
        items.len() as i64,
        created_at,
        &blobs.sorted,
        blobs.texts,
        blobs.lastmods,
        blobs.actions
    ])?;
    let (run, stamp): (i64, i64) = tx
        .prepare_cached(
            "INSERT OR FAIL INTO hash_runs (group_id, tier, n, batch, stamp) VALUES (?1, 0, ?2, ?3, random())
             RETURNING run, stamp",
        )?
        .query_row(params![group, items.len() as i64, first_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    keep(run_key(group, run, stamp), Kept::Sorted(blobs.sorted), &[]);
    merge_tiers(tx, group)
}

/// The name of a SQLite run among those kept in memory: its group, id and
/// stamp (a random number written with it: a rowid is given again after
/// a rollback, or once the highest run is deleted). The ledger is not
/// named: two ledgers' runs of one id and stamp are one run copied whole
/// (a backup of the file), its entries the same.
fn run_key(group: i64, run: i64, stamp: i64) -> RunKey {
    RunKey { ledger: 0, group, run, stamp: stamp as u64 }
}

/// While a tier of `group` holds `FANOUT` runs, merges them into one run
/// of the next tier: their entries read in order, a batch's blob or a
/// run's page at a time, and written once, as pages, a page at a time.
fn merge_tiers(tx: &Connection, group: i64) -> Result<()> {
    use std::cmp::Reverse;
    for tier in 0.. {
        let runs: Vec<(i64, Option<i64>, i64)> = tx
            .prepare_cached("SELECT run, batch, stamp FROM hash_runs WHERE group_id = ?1 AND tier = ?2 ORDER BY run")?
            .query_map(params![group, tier], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        if runs.len() < FANOUT {
            return Ok(());
        }
        let mut cursors = runs
            .iter()
            .map(|(run, batch, stamp)| RunCursor::open(tx, run_key(group, *run, *stamp), *batch))
            .collect::<Result<Vec<_>>>()?;
        // A tier of batches is in memory whole: merged at once, the heap
        // left empty (a tier of merged runs is read a page at a time).
        let in_memory = batches::merged_in_memory(cursors.iter_mut().map(RunCursor::whole).collect());
        let mut heads = std::collections::BinaryHeap::new();
        if in_memory.is_none() {
            for (k, cursor) in cursors.iter_mut().enumerate() {
                if let Some(entry) = cursor.next(tx)? {
                    heads.push(Reverse((entry, k)));
                }
            }
        }
        let (run, stamp): (i64, i64) = tx
            .prepare_cached(
                "INSERT OR FAIL INTO hash_runs (group_id, tier, n, stamp) VALUES (?1, ?2, 1, random())
                 RETURNING run, stamp",
            )?
            .query_row(params![group, tier + 1], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let mut put =
            tx.prepare_cached("INSERT OR FAIL INTO hash_pages (run, first_hash, entries) VALUES (?1, ?2, ?3)")?;
        let mut same_url = |a: i64, b: i64| Ok(text_of(tx, a)? == text_of(tx, b)?);
        // The merged run is kept as it is written: the look-ups of this
        // process's next admissions read none of its pages.
        let mut pager = batches::Pager::keeping_prefixes();
        for entry in in_memory.into_iter().flatten() {
            if let Some(page) = pager.push(entry, &mut same_url)? {
                put.execute(params![run, &page.first_hash[..], page.entries])?;
            }
        }
        while let Some(Reverse((entry, k))) = heads.pop() {
            if let Some(page) = pager.push(entry, &mut same_url)? {
                put.execute(params![run, &page.first_hash[..], page.entries])?;
            }
            if let Some(next) = cursors[k].next(tx)? {
                heads.push(Reverse((next, k)));
            }
        }
        let (last, prefixes, written) = pager.finish_keeping();
        if let Some(page) = last {
            put.execute(params![run, &page.first_hash[..], page.entries])?;
        }
        tx.prepare_cached("UPDATE hash_runs SET n = ?2 WHERE run = ?1")?
            .execute(params![run, written.max(1) as i64])?;
        for (old, _, _) in &runs {
            tx.prepare_cached("DELETE FROM hash_pages WHERE run = ?1")?.execute([old])?;
            tx.prepare_cached("DELETE FROM hash_runs WHERE run = ?1")?.execute([old])?;
        }
        let merged: Vec<RunKey> = runs.iter().map(|(old, _, stamp)| run_key(group, *old, *stamp)).collect();
        keep(run_key(group, run, stamp), Kept::Prefixes(prefixes), &merged);
    }
    unreachable!("tiers are counted up until one is not full")
}

/// A run's entries in hash order: a batch's blob (20 bytes an entry, read
/// whole, or the copy kept in memory), or a merged run's pages, read one
/// at a time by key.
enum RunCursor {
    Batch(std::vec::IntoIter<(u128, i64)>),
    Pages { run: i64, after: Vec<u8>, page: std::vec::IntoIter<(u128, i64)> },
}

impl RunCursor {
    /// A batch's entries, in memory whole; none for a merged run's pages.
    fn whole(&mut self) -> Option<&mut std::vec::IntoIter<(u128, i64)>> {
        match self {
            RunCursor::Batch(entries) => Some(entries),
            RunCursor::Pages { .. } => None,
        }
    }

    fn open(tx: &Connection, key: RunKey, batch: Option<i64>) -> Result<RunCursor> {
        Ok(match batch {
            Some(first_id) => {
                let entries = match kept(&key).as_deref() {
                    Some(Kept::Sorted(sorted)) => batches::batch_entries(first_id, sorted)?,
                    _ => {
                        let sorted: Vec<u8> = tx
                            .prepare_cached("SELECT sorted FROM batches WHERE first_id = ?1")?
                            .query_row([first_id], |r| r.get(0))?;
                        batches::batch_entries(first_id, &sorted)?
                    }
                };
                RunCursor::Batch(entries.into_iter())
            }
            None => RunCursor::Pages { run: key.run, after: Vec::new(), page: Vec::new().into_iter() },
        })
    }

    fn next(&mut self, tx: &Connection) -> Result<Option<(u128, i64)>> {
        match self {
            RunCursor::Batch(entries) => Ok(entries.next()),
            RunCursor::Pages { run, after, page } => loop {
                if let Some(entry) = page.next() {
                    return Ok(Some(entry));
                }
                // The next page: the first whose key is past the last read
                // (an empty blob sorts before every key).
                let next: Option<(Vec<u8>, Vec<u8>)> = tx
                    .prepare_cached(
                        "SELECT first_hash, entries FROM hash_pages WHERE run = ?1 AND first_hash > ?2
                         ORDER BY first_hash LIMIT 1",
                    )?
                    .query_row(params![*run, &after[..]], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?;
                let Some((first, entries)) = next else { return Ok(None) };
                *after = first;
                *page = batches::page_entries(&entries)?.into_iter();
            },
        }
    }
}

/// The URL of item `id`, from its batch's texts.
fn text_of(conn: &Connection, id: i64) -> Result<String> {
    let (first_id, n, texts): (i64, i64, Vec<u8>) = conn
        .prepare_cached("SELECT first_id, n, texts FROM batches WHERE first_id <= ?1 ORDER BY first_id DESC LIMIT 1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?
        .filter(|(first, n, _)| id < first + n)
        .ok_or_else(|| LedgerError::Invalid(format!("hash_runs: item {id} is in no batch")))?;
    Ok(batches::text(&texts, n as usize, (id - first_id) as u32)?.to_string())
}

/// The id of each of `hashes` in `group`, if the group holds it, by the
/// look-up shared with PostgreSQL (`ledger::find_ids`): a merged run's
/// pages read in order are only those between the lowest and the highest
/// hash sought, so that two connections each looking up half of a
/// batch's sorted hashes (admission's helper) read half of the pages
/// each; a run small enough is read whole once and kept (`Reading::Part`).
pub(super) fn find_ids(conn: &Connection, group: i64, hashes: &[u128]) -> Result<Vec<Option<i64>>> {
    let runs = conn
        .prepare_cached("SELECT run, n, batch, stamp FROM hash_runs WHERE group_id = ?1 ORDER BY tier, run DESC")?
        .query_map([group], |r| Ok((run_key(group, r.get(0)?, r.get(3)?), r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let listed = find::Listed { ledger: 0, group, runs };
    find::find_ids(&mut Pages(conn), &listed, hashes, find::Reading::Part, &[])
}

/// A SQLite ledger's runs read for `find::find_ids`.
struct Pages<'c>(&'c Connection);

impl find::RunPages for Pages<'_> {
    fn sorted(&mut self, first_id: i64) -> Result<Vec<u8>> {
        Ok(self
            .0
            .prepare_cached("SELECT sorted FROM batches WHERE first_id = ?1")?
            .query_row([first_id], |r| r.get(0))?)
    }

    fn page_at(&mut self, run: i64, hash: u128) -> Result<Option<Vec<u8>>> {
        let key = hash.to_be_bytes();
        Ok(self
            .0
            .prepare_cached(
                "SELECT entries FROM hash_pages WHERE run = ?1 AND first_hash <= ?2 ORDER BY first_hash DESC LIMIT 1",
            )?
            .query_row(params![run, &key[..]], |r| r.get(0))
            .optional()?)
    }

    fn pages(&mut self, run: i64, from: u128, to: u128, each: &mut dyn FnMut(Vec<u8>) -> Result<()>) -> Result<()> {
        let (from, to) = (from.to_be_bytes(), to.to_be_bytes());
        let mut statement = self.0.prepare_cached(
            "SELECT entries FROM hash_pages WHERE run = ?1 AND first_hash <= ?3 AND first_hash >= coalesce(
                 (SELECT max(first_hash) FROM hash_pages WHERE run = ?1 AND first_hash <= ?2), x'')
             ORDER BY first_hash",
        )?;
        let mut rows = statement.query(params![run, &from[..], &to[..]])?;
        while let Some(row) = rows.next()? {
            each(row.get(0)?)?;
        }
        Ok(())
    }
}

use super::spans::SPAN_COLUMNS;

/// Schema 11's items from `?1` on, in id order, as `fill_from` reads them.
pub(super) const ITEMS_OF_SCHEMA_11: &str = "SELECT id, group_id, url, action, lastmod, state, next_attempt_at,
     enqueued_at, attempts, last_class, streak, streak_started_at, accepted_at, parked_fingerprint, last_request_id
     FROM items WHERE id >= ?1 ORDER BY id";

/// The items `source` reads from `from_id` on (a statement of `?1` whose
/// columns are the id, group, URL, action, lastmod and `SPAN_COLUMNS`, in
/// id order) as batches and their runs, and their spans, in the caller's
/// transaction: batches cut at every change of group, every gap in the ids
/// and every `BATCH` items; spans at every change of group, gap or state
/// column. Schema 11's items into schema 12 (all, `ITEMS_OF_SCHEMA_11`),
/// and the items a copy added (its new ones, whose ids follow every other
/// item's, with their state from the staged rows).
pub(super) fn fill_from(tx: &Connection, source: &str, from_id: i64) -> Result<()> {
    let mut read = tx.prepare(source)?;
    let mut put_span = tx.prepare(&format!(
        "INSERT OR FAIL INTO spans (first, last, group_id, {SPAN_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
    ))?;
    // The batch being gathered: its group, first id, and (url, lastmod, deleted).
    type Gathered = (i64, i64, Vec<(String, Option<i64>, bool)>);
    let mut batch: Option<Gathered> = None;
    let mut span: Option<(i64, i64, i64, Vec<Value>)> = None;
    let write = |batch: &Gathered| -> Result<()> {
        let (group, first, items) = batch;
        let items: Vec<BatchItem> = items
            .iter()
            .map(|(url, lastmod, deleted)| BatchItem { url, lastmod: *lastmod, deleted: *deleted })
            .collect();
        // A migrated batch was made now; the items keep their enqueued_at.
        write_batch(tx, *group, *first, chrono::Utc::now().timestamp(), &items)
    };
    let mut rows = read.query([from_id])?;
    while let Some(r) = rows.next()? {
        let (id, group, url): (i64, i64, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
        let action: String = r.get(3)?;
        let deleted = match action.as_str() {
            "updated" => false,
            "deleted" => true,
            other => return Err(LedgerError::Invalid(format!("items.action: {other}"))),
        };
        let state: Vec<Value> = (5..15).map(|c| r.get::<_, Value>(c)).collect::<rusqlite::Result<_>>()?;
        let follows = |g: i64, first: i64, len: usize| g == group && first + len as i64 == id;
        match &mut batch {
            Some((g, first, items)) if items.len() < batches::BATCH && follows(*g, *first, items.len()) => {
                items.push((url, r.get(4)?, deleted));
            }
            _ => {
                if let Some(done) = batch.replace((group, id, vec![(url, r.get(4)?, deleted)])) {
                    write(&done)?;
                }
            }
        }
        match &mut span {
            Some((g, _, last, s)) if *g == group && *last + 1 == id && *s == state => *last = id,
            _ => {
                if let Some((g, first, last, s)) = span.replace((group, id, id, state)) {
                    put_span.execute(rusqlite::params_from_iter(
                        [first.into(), last.into(), g.into()].into_iter().chain(s),
                    ))?;
                }
            }
        }
    }
    if let Some(done) = batch {
        write(&done)?;
    }
    if let Some((g, first, last, s)) = span {
        put_span
            .execute(rusqlite::params_from_iter([Value::from(first), last.into(), g.into()].into_iter().chain(s)))?;
    }
    // The first span written may be like the group's span before it.
    super::spans::merge_over(tx, from_id, from_id)
}

/// The span of an admission's new items of `group`, `first` to `last`,
/// as its statement wrote them (queued, due at once, every other column
/// its default), merged with the span before it if that is alike (the
/// group's previous admission in the same second).
pub(super) fn new_queued_span(tx: &Connection, group: i64, first: i64, last: i64, now: i64) -> Result<()> {
    tx.prepare_cached(&format!(
        "INSERT OR FAIL INTO spans (first, last, group_id, {SPAN_COLUMNS})
         VALUES (?1, ?2, ?3, 'queued', ?4, ?4, 0, NULL, 0, NULL, NULL, NULL, NULL)"
    ))?
    .execute([first, last, group, now])?;
    super::spans::merge_over(tx, first, last)
}

/// An item's lastmod (seconds since 1970-01-01 UTC) and action.
pub(super) type Values = (Option<i64>, Action);

/// The lastmods and actions the batch rows hold, for ids asked in
/// ascending order: each batch row is read once for all its ids, and only
/// its small blobs (they come before `sorted` and `texts` in the row, so
/// reading them walks no overflow page of the texts).
struct BatchValues<'c> {
    read: rusqlite::CachedStatement<'c>,
    row: Option<ValuesRow>,
}

/// A batch row's first id, n, lastmods and actions (the row last read).
type ValuesRow = (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>);

impl<'c> BatchValues<'c> {
    fn new(conn: &'c Connection) -> Result<BatchValues<'c>> {
        let read = conn.prepare_cached(
            "SELECT first_id, n, lastmods, actions FROM batches WHERE first_id <= ?1 ORDER BY first_id DESC LIMIT 1",
        )?;
        Ok(BatchValues { read, row: None })
    }

    /// What the batch row holding `id` says of it; `None` if no batch
    /// row holds it.
    fn of(&mut self, id: i64) -> Result<Option<Values>> {
        if !matches!(&self.row, Some((first, n, ..)) if (*first..first + n).contains(&id)) {
            self.row = self
                .read
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .optional()?
                .filter(|(first, n, ..)| id < first + n);
        }
        let Some((first, _, lastmods, actions)) = &self.row else { return Ok(None) };
        let place = (id - first) as u32;
        let action = if batches::deleted(actions.as_deref(), place)? { Action::Deleted } else { Action::Updated };
        Ok(Some((batches::lastmod(lastmods.as_deref(), place)?, action)))
    }
}

/// Each of `ids`' lastmod and action (in the order given): its row of
/// `item_changes` if it has one, else what its batch row says, each batch
/// row read once for all its ids; `None` for an id no batch row holds.
pub(super) fn lastmod_and_action(conn: &Connection, ids: &[i64]) -> Result<Vec<Option<Values>>> {
    let mut out = vec![None; ids.len()];
    let mut changed = std::collections::HashMap::new();
    let mut take = |rows: &mut rusqlite::Rows<'_>| -> Result<()> {
        while let Some(r) = rows.next()? {
            let action: Action = super::stored("item_changes", "action", &r.get::<_, String>(2)?)?;
            changed.insert(r.get::<_, i64>(0)?, (r.get::<_, Option<i64>>(1)?, action));
        }
        Ok(())
    };
    // Ids that come in long runs (a list read again in the order it was
    // admitted) are read a range a run; scattered ones through `rarray`,
    // for which SQLite first builds a temporary index of every id given,
    // which was a tenth of the run again when the ids were few runs.
    let runs = super::IdRuns::of(ids);
    if runs.0.len() * 8 <= ids.len() {
        let mut read =
            conn.prepare_cached("SELECT id, lastmod, action FROM item_changes WHERE id BETWEEN ?1 AND ?2")?;
        for &(first, last) in &runs.0 {
            take(&mut read.query([first, last])?)?;
        }
    } else {
        let mut read = conn.prepare_cached("SELECT id, lastmod, action FROM item_changes WHERE id IN rarray(?1)")?;
        take(&mut read.query([super::array(ids)])?)?;
    }
    let mut by_id: Vec<usize> = (0..ids.len()).collect();
    by_id.sort_unstable_by_key(|&k| ids[k]);
    let mut batch = BatchValues::new(conn)?;
    for k in by_id {
        out[k] = match changed.get(&ids[k]) {
            Some(values) => Some(*values),
            None => batch.of(ids[k])?,
        };
    }
    Ok(out)
}

/// Writes the lastmods and actions `values` (by id) to `item_changes`: an
/// item's row where its values differ from what its batch row says, none
/// where they agree (a row it had is deleted). The writer gives the values
/// it decided; nothing is read back but the batch rows.
pub(super) fn set_changes(tx: &Connection, values: &[(i64, Values)]) -> Result<()> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by_key(|(id, _)| *id);
    let mut put = tx.prepare_cached(
        "INSERT INTO item_changes (id, lastmod, action) VALUES (?1, ?2, ?3)
         ON CONFLICT (id) DO UPDATE SET lastmod = excluded.lastmod, action = excluded.action",
    )?;
    let mut clear = tx.prepare_cached("DELETE FROM item_changes WHERE id = ?1")?;
    let mut batch = BatchValues::new(tx)?;
    for (id, item) in sorted {
        match batch.of(id)? == Some(item) {
            true => clear.execute([id])?,
            false => put.execute(params![id, item.0, item.1.as_str()])?,
        };
    }
    Ok(())
}

/// The rows of `item_changes` of the runs of `ids` deleted (items dropped).
pub(super) fn clear_changes(tx: &Connection, ids: &super::IdRuns) -> Result<()> {
    let mut clear = tx.prepare_cached("DELETE FROM item_changes WHERE id BETWEEN ?1 AND ?2")?;
    for &(first, last) in &ids.0 {
        clear.execute([first, last])?;
    }
    Ok(())
}

/// The changes of schema 11's items `first` to `last` (the migration's,
/// while the items are still there) made to agree with the
/// items again, after a write that may have changed their lastmod or
/// action, or dropped them: their rows of `item_changes` go, and each item
/// of the run whose lastmod or action differs from what its batch row says
/// gets one with its own. An item in no batch row (none is, once schema 12
/// is applied) gets one too, so that the reader still finds its values.
/// Reading the items back keeps one rule for every kind of write.
pub(super) fn changes_from_items(tx: &Connection, first: i64, last: i64) -> Result<()> {
    tx.prepare_cached("DELETE FROM item_changes WHERE id BETWEEN ?1 AND ?2")?.execute([first, last])?;
    let mut read = tx.prepare_cached("SELECT id, lastmod, action FROM items WHERE id BETWEEN ?1 AND ?2 ORDER BY id")?;
    let mut put = tx.prepare_cached("INSERT OR FAIL INTO item_changes (id, lastmod, action) VALUES (?1, ?2, ?3)")?;
    let mut batch = BatchValues::new(tx)?;
    let mut rows = read.query([first, last])?;
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let item: Values = (r.get(1)?, super::stored("items", "action", &r.get::<_, String>(2)?)?);
        if batch.of(id)? != Some(item) {
            put.execute(params![id, item.0, item.1.as_str()])?;
        }
    }
    Ok(())
}

/// Whether `item_changes` keeps its rules against the spans and the batch
/// rows: no row of an id no span holds (a drop deletes its item's), none
/// equal to its batch row's values (a write that makes them agree again
/// deletes it). An error names the first broken rule. (An item's values
/// themselves cannot be checked against another record: there is none.)
#[cfg(test)]
pub(super) fn changes_agree(conn: &Connection) -> Result<()> {
    let disagree = |what: String| Err(LedgerError::Invalid(format!("item_changes: {what}")));
    let changes: Vec<(i64, Values)> = conn
        .prepare("SELECT id, lastmod, action FROM item_changes ORDER BY id")?
        .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get::<_, String>(2)?))))?
        .map(|row| {
            let (id, (lastmod, action)) = row?;
            Ok((id, (lastmod, super::stored("item_changes", "action", &action)?)))
        })
        .collect::<Result<_>>()?;
    let mut batch = BatchValues::new(conn)?;
    for (id, change) in changes {
        if !super::spans::holds(conn, id)? {
            return disagree(format!("a change of {id}, which no span holds"));
        }
        if batch.of(id)? == Some(change) {
            return disagree(format!("the change of item {id} equals its batch row's values"));
        }
    }
    Ok(())
}

/// Whether the spans keep their rules against the batch rows: every id of
/// a span in a batch row of the span's group (a span may reach over
/// several: adjacent spans alike are merged); no two spans overlapping; no
/// two adjacent spans of one group alike (a NULL equal to a NULL); no id
/// `dropped_items` names in a span. (That every id of a batch row is in a
/// span, dropped or never taken cannot be checked: an item dropped that no
/// request named leaves no record, as an id never taken leaves none.) An
/// error names the first broken rule.
#[cfg(test)]
pub(super) fn spans_agree(conn: &Connection) -> Result<()> {
    let disagree = |what: String| Err(LedgerError::Invalid(format!("spans: {what}")));
    let overlap: Option<(i64, i64)> = conn
        .query_row(
            "SELECT a.first, b.first FROM spans a JOIN spans b
                 ON b.first = (SELECT min(first) FROM spans WHERE first > a.first)
             WHERE b.first <= a.last LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    if let Some((a, b)) = overlap {
        return disagree(format!("the span at {a} overlaps the one at {b}"));
    }
    // The batch rows from the one holding the span's first id up to its
    // last, of the span's group, must cover every id of it: a span may
    // reach over several batch rows of its group (adjacent spans alike are
    // merged, whichever admission wrote them), never over another group's
    // row or an id no row holds.
    let outside: Option<(i64, i64)> = conn
        .query_row(
            "SELECT s.first, s.last FROM spans s
             WHERE (SELECT COALESCE(sum(min(s.last, b.first_id + b.n - 1) - max(s.first, b.first_id) + 1), 0)
                    FROM batches b
                    WHERE b.first_id >= COALESCE((SELECT max(first_id) FROM batches WHERE first_id <= s.first), s.first)
                        AND b.first_id <= s.last AND b.first_id + b.n > s.first AND b.group_id = s.group_id)
                   <> s.last - s.first + 1
             ORDER BY s.first LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    if let Some((first, last)) = outside {
        return disagree(format!("the span {first}-{last} is not inside its group's batch rows"));
    }
    let dropped: Option<(i64, i64)> = conn
        .query_row(
            "SELECT d.id, s.first FROM dropped_items d
             JOIN spans s ON s.first = (SELECT max(first) FROM spans WHERE first <= d.id) AND s.last >= d.id
             ORDER BY d.id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    if let Some((id, first)) = dropped {
        return disagree(format!("the dropped item {id} is in the span at {first}"));
    }
    let alike = SPAN_COLUMNS.split(',').map(|c| format!("a.{0} IS b.{0}", c.trim())).collect::<Vec<_>>();
    let twins: Option<(i64, i64)> = conn
        .query_row(
            &format!(
                "SELECT a.first, b.first FROM spans a JOIN spans b ON b.first = a.last + 1
                 WHERE a.group_id = b.group_id AND {} LIMIT 1",
                alike.join(" AND ")
            ),
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    match twins {
        Some((a, b)) => disagree(format!("the adjacent spans at {a} and {b} are alike")),
        None => Ok(()),
    }
}

/// The tests' expansion of the ledger into per-item rows: a `TEMP` table
/// `item_rows` with the columns schema 11's items had, one row an item a
/// span holds, its URL from its batch row, its lastmod and action from
/// `lastmod_and_action`, its key computed (`url_keys::url_key`), and a
/// `TEMP` view `item_states` over it (a queued item a run of `in_flight`
/// holds shown in flight), so that the oracles written against the items
/// run with only the table's name changed. Made again at each call (the
/// ledger as it is now).
#[cfg(test)]
pub(super) fn expand_items(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "DROP VIEW IF EXISTS temp.item_states;
         DROP TABLE IF EXISTS temp.item_rows;
         CREATE TEMP TABLE item_rows (
             id INTEGER PRIMARY KEY, group_id INTEGER NOT NULL, url_key INTEGER NOT NULL, url TEXT NOT NULL,
             state TEXT NOT NULL, action TEXT NOT NULL, lastmod INTEGER, next_attempt_at INTEGER,
             enqueued_at INTEGER NOT NULL, attempts INTEGER NOT NULL, last_class TEXT, streak INTEGER NOT NULL,
             streak_started_at INTEGER, accepted_at INTEGER, parked_fingerprint TEXT, last_request_id INTEGER);
         CREATE TEMP VIEW item_states AS
         SELECT i.id, i.group_id, i.url_key, i.url,
                CASE WHEN (SELECT f.last FROM in_flight f WHERE f.first <= i.id ORDER BY f.first DESC LIMIT 1) >= i.id
                     THEN 'in_flight' ELSE i.state END AS state,
                i.action, i.lastmod, i.next_attempt_at, i.enqueued_at, i.attempts, i.last_class, i.streak,
                i.streak_started_at, i.accepted_at, i.parked_fingerprint, i.last_request_id
         FROM temp.item_rows i;",
    )?;
    let spans: Vec<(i64, i64, super::spans::SpanState)> = conn
        .prepare(&format!("SELECT first, last, group_id, {SPAN_COLUMNS} FROM spans ORDER BY first"))?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, super::spans::SpanState::read(r, 2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut put = conn.prepare(
        "INSERT INTO temp.item_rows VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
    )?;
    let mut texts = super::listing::Texts::default();
    for (first, last, s) in spans {
        let ids: Vec<i64> = (first..=last).collect();
        for (id, values) in ids.iter().zip(lastmod_and_action(conn, &ids)?) {
            let (lastmod, action) = values.expect("every item a span holds is in a batch row");
            let url = texts.url(conn, *id)?;
            put.execute(params![
                id,
                s.group,
                crate::ledger::url_keys::url_key(&url),
                url,
                s.state,
                action.as_str(),
                lastmod,
                s.next_attempt_at,
                s.enqueued_at,
                s.attempts,
                s.last_class,
                s.streak,
                s.streak_started_at,
                s.accepted_at,
                s.parked_fingerprint,
                s.last_request_id
            ])?;
        }
    }
    Ok(())
}

/// The state column of the span holding `id`, if one does.
#[cfg(test)]
pub(super) fn state_of(conn: &Connection, id: i64) -> Result<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT state FROM spans WHERE first = (SELECT max(first) FROM spans WHERE first <= ?1) AND last >= ?1",
            [id],
            |r| r.get(0),
        )
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::super::super::batches::url_hash;
    use super::super::SqliteLedger;
    use super::*;
    use crate::ledger::conformance::{dedupe_day, two_groups};
    use crate::ledger::{Intake, NewItem};
    use chrono::{DateTime, Utc};

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    /// A ledger of schema 11 (items of two groups, some accepted, one
    /// parked, one with a lastmod and one a deletion, a gap left by an
    /// item gone) gets schema 12 on open: every item found by its URL's
    /// hash in its own group only, its span in its state, its text,
    /// lastmod and action in its batch; the items table gone.
    #[test]
    fn a_version_11_ledger_is_migrated_into_batches_and_spans() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        super::super::schema::new_schema(&path, 11)
            .execute_batch(
                "INSERT INTO groups (id, property, engine, target) VALUES (1, 'a', 'indexnow', 'https://engine.example/'),
                     (2, 'b', 'indexnow', 'https://engine.example/');
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 65)
                 INSERT INTO items (id, group_id, url_key, url, state, next_attempt_at, enqueued_at)
                 SELECT i, CASE WHEN i <= 40 THEN 1 ELSE 2 END, i,
                     'https://site.example/' || CASE WHEN i <= 40 THEN i - 1 ELSE i - 41 END, 'queued', 7, 7
                 FROM n;
                 UPDATE items SET state = 'accepted', accepted_at = 1, attempts = 1, last_class = 'accepted'
                     WHERE id BETWEEN 5 AND 14;
                 UPDATE items SET state = 'parked', parked_fingerprint = 'fp' WHERE id = 20;
                 UPDATE items SET lastmod = 1700000000 WHERE id = 21;
                 UPDATE items SET action = 'deleted' WHERE id = 22;
                 DELETE FROM items WHERE id = 30;",
            )
            .unwrap();
        let ledger = SqliteLedger::open(&path).unwrap();
        assert_eq!(SqliteLedger::schema_version(&ledger).unwrap(), super::super::schema::SCHEMA_VERSION);
        let conn = &ledger.conn;
        expand_items(conn).unwrap();
        let items: Vec<(i64, i64, String, String)> = conn
            .prepare("SELECT id, group_id, url, state FROM item_rows ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(items.len(), 64, "every item is in the batches and spans");
        let named: Vec<String> = conn
            .prepare("SELECT name FROM main.sqlite_master WHERE name LIKE 'item%' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(named, ["item_changes"], "no items table, no view or index over it");
        let groups: Vec<i64> = conn
            .prepare("SELECT id FROM groups ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|g| g.unwrap())
            .collect();
        assert_eq!(groups.len(), 2);
        for (id, group, url, state) in &items {
            let other = groups.iter().find(|g| *g != group).unwrap();
            assert_eq!(find_ids(conn, *group, &[url_hash(url)]).unwrap(), [Some(*id)], "{url}");
            let elsewhere = find_ids(conn, *other, &[url_hash(url)]).unwrap()[0];
            assert_ne!(elsewhere, Some(*id), "{url} is found in its own group only");
            assert_eq!(state_of(conn, *id).unwrap().as_deref(), Some(state.as_str()), "item {id}");
        }
        assert_eq!(state_of(conn, 30).unwrap(), None, "no span holds an item gone");
        // The gap and the change of group cut the batches; the states cut the spans.
        let cuts: Vec<(i64, i64)> = conn
            .prepare("SELECT first_id, n FROM batches ORDER BY first_id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(|b| b.unwrap())
            .collect();
        assert_eq!(cuts, [(1, 29), (31, 10), (41, 25)]);
        let spans: i64 = conn.query_row("SELECT count(*) FROM spans", [], |r| r.get(0)).unwrap();
        assert_eq!(spans, 7, "1-4, 5-14, 15-19, 20, 21-29, 31-40, 41-65");
        spans_agree(conn).unwrap();
        type Stored = (Vec<u8>, i64, Option<Vec<u8>>, Option<Vec<u8>>);
        let (texts, n, lastmods, actions): Stored = conn
            .query_row("SELECT texts, n, lastmods, actions FROM batches WHERE first_id = 1", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .unwrap();
        let url_21 = &items.iter().find(|i| i.0 == 21).unwrap().2;
        assert_eq!(batches::text(&texts, n as usize, 20).unwrap(), url_21);
        assert_eq!(batches::lastmod(lastmods.as_deref(), 20).unwrap(), Some(1_700_000_000));
        assert!(batches::deleted(actions.as_deref(), 21).unwrap());
        assert!(!batches::deleted(actions.as_deref(), 20).unwrap());
        // The batch rows hold every item's lastmod and action: no change.
        let changes: i64 = conn.query_row("SELECT count(*) FROM item_changes", [], |r| r.get(0)).unwrap();
        assert_eq!(changes, 0);
        changes_agree(conn).unwrap();
        assert_eq!(
            lastmod_and_action(conn, &[22, 21, 30, 1]).unwrap(),
            [
                Some((None, Action::Deleted)),
                Some((Some(1_700_000_000), Action::Updated)),
                None,
                Some((None, Action::Updated))
            ]
        );
    }

    /// A new ledger of schema 12 has no items table, and no view, index,
    /// trigger or key that reads or names one, before and after an admission
    /// (which writes batch rows and spans alone).
    #[test]
    fn a_new_ledger_holds_no_items_table() {
        let mut ledger = SqliteLedger::in_memory().unwrap();
        let named = |ledger: &SqliteLedger| -> Vec<String> {
            ledger
                .conn
                .prepare(
                    "SELECT name FROM main.sqlite_master
                     WHERE name = 'items' OR tbl_name = 'items' OR sql LIKE '%FROM items%' OR sql LIKE '%JOIN items%'
                         OR sql LIKE '%ON items%' OR sql LIKE '%REFERENCES items%'
                     ORDER BY name",
                )
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        };
        assert_eq!(named(&ledger), Vec::<String>::new());
        ledger.admit(&[two_groups()(0, 1)], t("2026-12-03T09:00:00Z"), &dedupe_day()).unwrap();
        assert_eq!(named(&ledger), Vec::<String>::new());
        let rows: i64 = ledger.conn.query_row("SELECT count(*) FROM batches", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 1, "the URL is in its batch row");
    }

    /// `changes_from_items` over every id, as the migration from schema 11
    /// runs it after writing the batch rows: an item whose lastmod or action
    /// differs from what its batch row says gets a row of `item_changes`,
    /// the others none. (The migration writes each batch row from its items,
    /// so through it no item differs: the batch row here is written from
    /// other values by hand to stand for one that would, and a temporary
    /// table for schema 11's items, which schema 12 drops.)
    #[test]
    fn set_changes_over_every_id_keeps_an_item_unlike_its_batch_row() {
        let ledger = SqliteLedger::in_memory().unwrap();
        let conn = &ledger.conn;
        conn.execute_batch(
            "INSERT INTO groups (id, property, engine, target) VALUES (1, 'p', 'indexnow', 't');
             CREATE TEMP TABLE items (id INTEGER PRIMARY KEY, group_id INTEGER, url_key INTEGER, url TEXT,
                 lastmod INTEGER, action TEXT);
             INSERT INTO items (id, group_id, url_key, url, lastmod, action)
                 VALUES (1, 1, 1, 'https://site.example/1', 5, 'deleted'),
                        (2, 1, 2, 'https://site.example/2', NULL, 'updated');",
        )
        .unwrap();
        let items = ["https://site.example/1", "https://site.example/2"].map(|url| BatchItem {
            url,
            lastmod: None,
            deleted: false,
        });
        write_batch(conn, 1, 1, 0, &items).unwrap();
        new_queued_span(conn, 1, 1, 2, 0).unwrap();
        changes_from_items(conn, i64::MIN, i64::MAX).unwrap();
        let rows: Vec<(i64, Option<i64>, String)> = conn
            .prepare("SELECT id, lastmod, action FROM item_changes")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(|c| c.unwrap())
            .collect();
        assert_eq!(rows, [(1, Some(5), "deleted".to_string())]);
        changes_agree(conn).unwrap();
    }

    /// Every item of the ledger is found by its URL's hash in its group, at
    /// its id, and the spans agree with the items.
    fn assert_batches_hold_every_item(conn: &Connection) {
        spans_agree(conn).unwrap();
        expand_items(conn).unwrap();
        let items: Vec<(i64, i64, String)> = conn
            .prepare("SELECT id, group_id, url FROM item_rows ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(|i| i.unwrap())
            .collect();
        for (id, group, url) in items {
            assert_eq!(find_ids(conn, group, &[url_hash(&url)]).unwrap(), [Some(id)], "{url} of group {group}");
        }
    }

    /// Admission writes each group's new items as batch rows, in runs of
    /// ids of their own even when the input mixes the groups; a URL
    /// dropped and submitted again is found at its new id, through merges.
    #[test]
    fn admission_writes_each_groups_new_items_as_batches() {
        use crate::ledger::{ItemFilter, Queue};
        let mut ledger = SqliteLedger::in_memory().unwrap();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        for round in 0..FANOUT * 2 {
            let batch: Vec<_> = (0..20).map(|i| item(i % 2, round * 20 + i)).collect();
            ledger.admit(&batch, now, &dedupe_day()).unwrap();
        }
        let runs: i64 = ledger.conn.query_row("SELECT count(*) FROM batches WHERE n = 10", [], |r| r.get(0)).unwrap();
        assert_eq!(runs, 2 * FANOUT as i64 * 2, "one batch row a group an admission");
        assert_batches_hold_every_item(&ledger.conn);
        let filter = ItemFilter { url: Some("https://site.example/4".into()), ..Default::default() };
        assert_eq!(ledger.drop_items(&filter, now).unwrap(), 1);
        ledger.admit(&[item(0, 4)], now, &dedupe_day()).unwrap();
        for round in 0..FANOUT * 2 {
            let batch: Vec<_> = (0..20).map(|i| item(i % 2, 1_000 + round * 20 + i)).collect();
            ledger.admit(&batch, now, &dedupe_day()).unwrap();
        }
        assert_batches_hold_every_item(&ledger.conn);
    }

    /// A long sequence of writes of random runs of ids of two groups (moved
    /// to one of a few states by the spans' one primitive, or deleted),
    /// each also made to a per-item copy of the items with their state (the
    /// rows the items held before the spans did): after each, every item's
    /// state read through its span equals its row's in the copy, and the
    /// spans keep their rules (`spans_agree`, which also finds two adjacent
    /// spans alike).
    #[test]
    fn spans_follow_every_write_of_a_run_of_items() {
        use super::super::spans;
        use crate::ledger::{ItemFilter, Queue};
        let mut ledger = SqliteLedger::in_memory().unwrap();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        // Ids 1-60 of group a, then 61-90 of group b.
        ledger.admit(&(0..60).map(|i| item(0, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        ledger.admit(&(0..30).map(|i| item(1, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        let conn = &ledger.conn;
        let count =
            |conn: &Connection| -> i64 { conn.query_row("SELECT count(*) FROM spans", [], |r| r.get(0)).unwrap() };
        assert_eq!(count(conn), 2, "an admission's new items of a group are one span");
        spans_agree(conn).unwrap();
        expand_items(conn).unwrap();
        conn.execute_batch("CREATE TEMP TABLE model AS SELECT * FROM item_rows").unwrap();
        let same = SPAN_COLUMNS.split(',').map(|c| format!("m.{0} IS i.{0}", c.trim())).collect::<Vec<_>>();
        let differ = format!(
            "SELECT m.id FROM model m LEFT JOIN item_rows i ON i.id = m.id
             WHERE i.id IS NULL OR m.group_id IS NOT i.group_id OR NOT ({}) ORDER BY m.id LIMIT 1",
            same.join(" AND ")
        );
        let states = [
            "state = 'queued', next_attempt_at = 5, attempts = attempts + 1, last_class = 'transient'",
            "state = 'accepted', accepted_at = 7, next_attempt_at = NULL, last_class = 'accepted'",
            "state = 'parked', parked_fingerprint = 'fp', last_class = 'misconfigured', next_attempt_at = NULL",
            "state = 'queued', next_attempt_at = 5, streak = 0, streak_started_at = NULL",
            "streak = CASE WHEN last_class IS 'transient' THEN streak + 1 ELSE 1 END, last_class = 'transient'",
        ];
        let mut random = crate::ledger::conformance::Seeded::new(48);
        for step in 0..300 {
            let (first, last, kind) = random.step(90, 12, 20);
            let run = super::super::IdRuns(vec![(first, last)]);
            match kind {
                // Items dropped one at a time, so that most stay.
                0 => {
                    let one = super::super::IdRuns(vec![(first, first)]);
                    spans::delete(conn, &one).unwrap();
                    conn.execute("DELETE FROM model WHERE id = ?1", [first]).unwrap();
                }
                k => {
                    let set = states[k as usize % states.len()];
                    let n = spans::write(conn, set, "", &[], &run).unwrap();
                    let m = conn
                        .execute(&format!("UPDATE model SET {set} WHERE id BETWEEN ?1 AND ?2"), [first, last])
                        .unwrap();
                    assert_eq!(n, m as u64, "step {step}: the ids written");
                }
            };
            if let Err(e) = spans_agree(conn) {
                panic!("step {step}, ids {first}-{last}: {e}");
            }
            expand_items(conn).unwrap();
            let wrong: Option<i64> = conn.query_row(&differ, [], |r| r.get(0)).optional().unwrap();
            assert_eq!(wrong, None, "step {step}, ids {first}-{last}: an item's span differs from its row");
        }
        let (items, model): (i64, i64) = conn
            .query_row("SELECT (SELECT count(*) FROM item_rows), (SELECT count(*) FROM model)", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(items, model);
        assert!(items > 60 && count(conn) > 10, "{items} items, {} spans", count(conn));
        // A write of the copy the spans were not told of is found.
        conn.execute("UPDATE model SET attempts = attempts + 1 WHERE id = (SELECT max(id) FROM model)", []).unwrap();
        assert!(conn.query_row(&differ, [], |r| r.get::<_, i64>(0)).optional().unwrap().is_some());
        conn.execute_batch("DROP TABLE temp.model").unwrap();
        let filter = ItemFilter { url: Some("https://site.example/1".into()), ..Default::default() };
        ledger.drop_items(&filter, now).unwrap();
        ledger.retry(&ItemFilter::default(), now).unwrap();
        spans_agree(&ledger.conn).unwrap();
    }

    /// Each of the spans' rules, broken by hand in a ledger whose spans
    /// keep them, is found: a span in another group's batch row, a span
    /// over ids no batch row holds, an id `dropped_items` names in a span,
    /// two spans that overlap, two adjacent spans of a group alike.
    #[test]
    fn spans_agree_finds_each_broken_rule() {
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        let broken = |sql: &str| -> String {
            let mut ledger = SqliteLedger::in_memory().unwrap();
            // Ids 1-10 of group a (1-3 queued, 4 parked, 5-10 queued), 11-15 of group b.
            ledger.admit(&(0..10).map(|i| item(0, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
            ledger.admit(&(0..5).map(|i| item(1, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
            super::super::spans::set_state(&ledger.conn, 4, 4, "state = 'parked'").unwrap();
            spans_agree(&ledger.conn).unwrap();
            ledger.conn.execute_batch(sql).unwrap();
            spans_agree(&ledger.conn).unwrap_err().to_string()
        };
        let e = broken("UPDATE spans SET group_id = (SELECT group_id FROM spans WHERE first = 11) WHERE first = 4");
        assert!(e.contains("the span 4-4 is not inside its group's batch rows"), "{e}");
        let e = broken("UPDATE spans SET last = 20 WHERE first = 11");
        assert!(e.contains("the span 11-20 is not inside its group's batch rows"), "{e}");
        let e = broken(
            "INSERT INTO dropped_items (id, group_id, url_key, url, dropped_at)
             SELECT 7, group_id, 0, 'https://site.example/6', 0 FROM spans WHERE first = 5",
        );
        assert!(e.contains("the dropped item 7 is in the span at 5"), "{e}");
        let e = broken("UPDATE spans SET last = 4 WHERE first = 1");
        assert!(e.contains("the span at 1 overlaps the one at 4"), "{e}");
        let e = broken(
            "UPDATE spans SET last = 7 WHERE first = 5;
             INSERT INTO spans SELECT 8, 10, group_id, state, next_attempt_at, enqueued_at, attempts, last_class,
                 streak, streak_started_at, accepted_at, parked_fingerprint, last_request_id FROM spans WHERE first = 5",
        );
        assert!(e.contains("the adjacent spans at 5 and 8 are alike"), "{e}");
    }

    /// The lastmods and actions of items written through the ledger (a new
    /// lastmod of a queued item, one back to what its batch row says, a
    /// queued item's deletion, an accepted item requeued as a deletion
    /// after the dedupe window, a drop): `item_changes` holds an item's
    /// values exactly while they differ from its batch row's, and the
    /// reader says each item's.
    #[test]
    fn item_changes_follow_every_write_of_a_lastmod_or_an_action() {
        use crate::ledger::{ItemFilter, Queue};
        use crate::model::Action;
        let mut ledger = SqliteLedger::in_memory().unwrap();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        let with =
            |i: usize, lastmod: Option<&str>, action: Action| NewItem { lastmod: lastmod.map(t), action, ..item(0, i) };
        let admit = |ledger: &mut SqliteLedger, items: &[NewItem], at| {
            ledger.admit(items, at, &dedupe_day()).unwrap();
            changes_agree(&ledger.conn).unwrap();
        };
        let changes = |ledger: &SqliteLedger| -> Vec<(i64, Option<i64>, String)> {
            ledger
                .conn
                .prepare("SELECT id, lastmod, action FROM item_changes ORDER BY id")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .map(|c| c.unwrap())
                .collect()
        };
        let (early, late) = ("2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z");
        // Ids 1-4: 1 with a lastmod, the rest without.
        let first: Vec<NewItem> = (0..4).map(|i| with(i, (i == 0).then_some(early), Action::Updated)).collect();
        admit(&mut ledger, &first, now);
        assert_eq!(changes(&ledger), []);
        // A new lastmod for 1 and 2, a deletion for 3 (all still queued).
        admit(
            &mut ledger,
            &[
                with(0, Some(late), Action::Updated),
                with(1, Some(late), Action::Updated),
                with(2, None, Action::Deleted),
            ],
            now,
        );
        let late_s = t(late).timestamp();
        assert_eq!(
            changes(&ledger),
            [(1, Some(late_s), "updated".into()), (2, Some(late_s), "updated".into()), (3, None, "deleted".into())]
        );
        // 1's lastmod back to its batch row's, 3 an update again: their rows go.
        admit(&mut ledger, &[with(0, Some(early), Action::Updated), with(2, None, Action::Updated)], now);
        assert_eq!(changes(&ledger), [(2, Some(late_s), "updated".into())]);
        // 4 accepted, then requeued as a deletion after the dedupe window.
        let accepted = format!("state = 'accepted', accepted_at = {}, next_attempt_at = NULL", now.timestamp());
        super::super::spans::set_state(&ledger.conn, 4, 4, &accepted).unwrap();
        admit(&mut ledger, &[with(3, None, Action::Deleted)], now + chrono::TimeDelta::days(2));
        assert_eq!(changes(&ledger), [(2, Some(late_s), "updated".into()), (4, None, "deleted".into())]);
        let said = lastmod_and_action(&ledger.conn, &[4, 3, 2, 1]).unwrap();
        let early_s = t(early).timestamp();
        assert_eq!(
            said,
            [
                Some((None, Action::Deleted)),
                Some((None, Action::Updated)),
                Some((Some(late_s), Action::Updated)),
                Some((Some(early_s), Action::Updated))
            ]
        );
        // A drop takes its items' rows with them.
        let filter = ItemFilter { url: Some("https://site.example/1".into()), ..Default::default() };
        assert_eq!(ledger.drop_items(&filter, now).unwrap(), 1);
        assert_eq!(changes(&ledger), [(4, None, "deleted".into())]);
        changes_agree(&ledger.conn).unwrap();
    }

    /// Random writes of lastmods and actions to runs of ids of two groups
    /// through `set_changes` (and drops of single items, their changes
    /// cleared), each also made to a model of every item's values: after
    /// each, `lastmod_and_action` says every item's values as the model
    /// does, and `item_changes` holds a row for exactly the items that
    /// differ from their batch row (all admitted with no lastmod, updated).
    #[test]
    fn item_changes_follow_random_writes_of_runs() {
        let mut ledger = SqliteLedger::in_memory().unwrap();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        ledger.admit(&(0..40).map(|i| item(0, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        ledger.admit(&(0..30).map(|i| item(1, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        let conn = &ledger.conn;
        type Write = (Option<Option<i64>>, Option<Action>);
        let writes: [Write; 6] = [
            (Some(Some(100)), None),
            (Some(None), None),
            (None, Some(Action::Deleted)),
            (None, Some(Action::Updated)),
            (Some(Some(200)), Some(Action::Deleted)),
            (Some(None), Some(Action::Updated)),
        ];
        let mut model: std::collections::BTreeMap<i64, Values> =
            (1..=70).map(|id| (id, (None, Action::Updated))).collect();
        let mut random = crate::ledger::conformance::Seeded::new(4_848);
        let mut most = 0;
        for step in 0..300 {
            let (first, last, kind) = random.step(70, 10, 25);
            match kind {
                0 => {
                    let one = super::super::IdRuns(vec![(first, first)]);
                    super::super::spans::delete(conn, &one).unwrap();
                    clear_changes(conn, &one).unwrap();
                    model.remove(&first);
                }
                k => {
                    let (lastmod, action) = writes[k as usize % writes.len()];
                    let mut values = Vec::new();
                    for id in first..=last {
                        if let Some(had) = model.get_mut(&id) {
                            *had = (lastmod.unwrap_or(had.0), action.unwrap_or(had.1));
                            values.push((id, *had));
                        }
                    }
                    set_changes(conn, &values).unwrap();
                }
            };
            if let Err(e) = changes_agree(conn) {
                panic!("step {step}, ids {first}-{last}: {e}");
            }
            let ids: Vec<i64> = model.keys().copied().collect();
            let said: Vec<Values> = lastmod_and_action(conn, &ids).unwrap().into_iter().map(Option::unwrap).collect();
            assert_eq!(said, model.values().copied().collect::<Vec<_>>(), "step {step}");
            // Scattered ids (every third: no runs) are read the other way.
            let scattered: Vec<i64> = ids.iter().copied().step_by(3).collect();
            let said: Vec<Values> =
                lastmod_and_action(conn, &scattered).unwrap().into_iter().map(Option::unwrap).collect();
            assert_eq!(said, scattered.iter().map(|id| model[id]).collect::<Vec<_>>(), "step {step}, scattered");
            let rows: usize = conn.query_row("SELECT count(*) FROM item_changes", [], |r| r.get(0)).unwrap();
            let differ = model.values().filter(|v| **v != (None, Action::Updated)).count();
            assert_eq!(rows, differ, "step {step}: a row for each item that differs from its batch");
            most = most.max(rows);
        }
        assert!(most > 10, "the writes made changes: at most {most} rows");
    }

    /// `changes_agree` finds each way the changes can break their rules: a
    /// change of an id no span holds (left behind by a drop, or never
    /// taken), a change equal to its batch row's values.
    #[test]
    fn changes_agree_finds_each_disagreement() {
        let mut ledger = SqliteLedger::in_memory().unwrap();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        ledger.admit(&(0..5).map(|i| item(0, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        let conn = &ledger.conn;
        changes_agree(conn).unwrap();
        let fails = |sql: &str, undo: &str, says: &str| {
            conn.execute_batch(sql).unwrap();
            let err = changes_agree(conn).expect_err(sql).to_string();
            assert!(err.contains(says), "{sql}: {err}");
            conn.execute_batch(undo).unwrap();
            changes_agree(conn).unwrap();
        };
        fails(
            "INSERT INTO item_changes (id, lastmod, action) VALUES (99, 1, 'deleted')",
            "DELETE FROM item_changes",
            "a change of 99, which no span holds",
        );
        fails(
            "INSERT INTO item_changes (id, lastmod, action) VALUES (4, NULL, 'updated')",
            "DELETE FROM item_changes",
            "the change of item 4 equals its batch row's values",
        );
        // A change written by `set_changes` agrees.
        set_changes(conn, &[(2, (Some(7), Action::Updated))]).unwrap();
        changes_agree(conn).unwrap();
        set_changes(conn, &[(2, (None, Action::Updated))]).unwrap();
        let rows: i64 = conn.query_row("SELECT count(*) FROM item_changes", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 0, "values that agree with the batch row again keep no row");
    }

    /// A copy into a SQLite ledger that holds items already writes its new
    /// items as batch rows, each group's one run of ids; copied again, it
    /// writes none.
    #[test]
    fn a_copy_writes_its_new_items_as_batches() {
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        let mut from = SqliteLedger::in_memory().unwrap();
        let batch: Vec<_> = (0..30).map(|i| item(i % 2, i)).collect();
        from.admit(&batch, now, &dedupe_day()).unwrap();
        let mut to = SqliteLedger::in_memory().unwrap();
        to.admit(&[item(0, 0), item(1, 100)], now, &dedupe_day()).unwrap();
        crate::ledger::copy(&mut from, &mut to, true).unwrap();
        assert_batches_hold_every_item(&to.conn);
        let sizes: Vec<i64> = to
            .conn
            .prepare("SELECT n FROM batches ORDER BY first_id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|n| n.unwrap())
            .collect();
        assert_eq!(sizes, [1, 1, 14, 15], "the two admitted, then group a's 14 new, group b's 15");
        crate::ledger::copy(&mut from, &mut to, true).unwrap();
        let rows: i64 = to.conn.query_row("SELECT count(*) FROM batches", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 4);
        assert_batches_hold_every_item(&to.conn);
    }

    /// A copy that updates an item the target holds already (its lastmod
    /// and action from the source) keeps them in `item_changes`, the
    /// target's batch row having the values it was admitted with; copied
    /// back to the values of its batch row, the row goes.
    #[test]
    fn a_copy_that_updates_an_item_keeps_its_change() {
        use crate::model::Action;
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        let lastmod = t("2026-11-01T00:00:00Z");
        let changed = NewItem { lastmod: Some(lastmod), action: Action::Deleted, ..item(0, 0) };
        let mut from = SqliteLedger::in_memory().unwrap();
        from.admit(&[changed, item(0, 1)], now, &dedupe_day()).unwrap();
        let mut to = SqliteLedger::in_memory().unwrap();
        to.admit(&[item(0, 0)], now, &dedupe_day()).unwrap();
        crate::ledger::copy(&mut from, &mut to, true).unwrap();
        changes_agree(&to.conn).unwrap();
        let rows: Vec<(i64, Option<i64>, String)> = to
            .conn
            .prepare("SELECT id, lastmod, action FROM item_changes")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(|c| c.unwrap())
            .collect();
        assert_eq!(rows, [(1, Some(lastmod.timestamp()), "deleted".to_string())]);
        let mut back = SqliteLedger::in_memory().unwrap();
        back.admit(&[item(0, 0)], now, &dedupe_day()).unwrap();
        crate::ledger::copy(&mut back, &mut to, true).unwrap();
        changes_agree(&to.conn).unwrap();
        let left: i64 = to.conn.query_row("SELECT count(*) FROM item_changes", [], |r| r.get(0)).unwrap();
        assert_eq!(left, 0, "the item's values are its batch row's again");
    }

    /// A million items of schema 11 (every thousandth queued, the rest
    /// accepted) migrate in one transaction into 100 batches and 2,000
    /// spans, each item found by its hash. Run by hand to time it
    /// (`cargo test --lib a_million_items -- --ignored --nocapture`): a
    /// debug build's SQLite is unoptimised, so a release build takes less.
    #[test]
    #[ignore = "a million items: run by hand to time the migration"]
    fn a_million_items_of_schema_11_migrate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        super::super::schema::new_schema(&path, 11)
            .execute_batch(
                "INSERT INTO groups (id, property, engine, target) VALUES (1, 'p', 'indexnow', 't');
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
                 INSERT INTO items (id, group_id, url_key, url, state, enqueued_at, attempts, last_class,
                     accepted_at)
                 SELECT i, 1, i, 'https://www.site.example/articles/' || i || '/a-title-of-some-length',
                     CASE WHEN i % 1000 = 0 THEN 'queued' ELSE 'accepted' END, 1, 1, 'accepted', 2
                 FROM n;",
            )
            .unwrap();
        let start = std::time::Instant::now();
        let ledger = SqliteLedger::open(&path).unwrap();
        let peak = std::fs::read_to_string("/proc/self/status")
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("VmHWM"))
            .map(str::to_string)
            .unwrap_or_default();
        eprintln!("a million items migrated in {:.2} s; {peak}", start.elapsed().as_secs_f64());
        let conn = &ledger.conn;
        let (batches, items): (i64, i64) =
            conn.query_row("SELECT count(*), sum(n) FROM batches", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        assert_eq!((batches, items), (100, 1_000_000));
        let spans: i64 = conn.query_row("SELECT count(*) FROM spans", [], |r| r.get(0)).unwrap();
        assert_eq!(spans, 2_000);
        for i in (1..=1_000_000).step_by(99_991) {
            let url = format!("https://www.site.example/articles/{i}/a-title-of-some-length");
            assert_eq!(find_ids(conn, 1, &[url_hash(&url)]).unwrap(), [Some(i)]);
        }
    }

    /// Batches enough to fill two tiers: each tier's runs merged into one
    /// of the next, every URL still found, and a URL never admitted not.
    #[test]
    fn full_tiers_are_merged_and_every_url_is_still_found() {
        let ledger = SqliteLedger::in_memory().unwrap();
        let conn = &ledger.conn;
        conn.execute_batch("INSERT INTO groups (id, property, engine, target) VALUES (1, 'p', 'indexnow', 't')")
            .unwrap();
        let urls: Vec<String> = (0..FANOUT * FANOUT * 3 + 3).map(|i| format!("https://site.example/{i}")).collect();
        for (b, batch) in urls.chunks(3).enumerate() {
            let items: Vec<BatchItem> =
                batch.iter().map(|url| BatchItem { url, lastmod: None, deleted: false }).collect();
            write_batch(conn, 1, 1 + 3 * b as i64, 0, &items).unwrap();
        }
        let tiers: Vec<(i64, i64)> = conn
            .prepare("SELECT tier, count(*) FROM hash_runs GROUP BY tier ORDER BY tier")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(|t| t.unwrap())
            .collect();
        // 195 URLs in 65 batches of 3: one run of tier 2 (64 batches), one batch.
        assert_eq!(tiers, [(0, 1), (2, 1)]);
        let hashes: Vec<u128> =
            urls.iter().map(|u| url_hash(u)).chain([url_hash("https://site.example/new")]).collect();
        let expected: Vec<Option<i64>> = (1..=urls.len() as i64).map(Some).chain([None]).collect();
        // Read page by page (many hashes), and a seek a hash (few).
        assert_eq!(find_ids(conn, 1, &hashes).unwrap(), expected);
        for (hash, id) in hashes.iter().zip(&expected) {
            assert_eq!(find_ids(conn, 1, &[*hash]).unwrap(), [*id]);
        }
        // A run of more pages than four hashes sought: each found by a seek.
        conn.execute_batch("INSERT INTO groups (id, property, engine, target) VALUES (2, 'p', 'bing', 't')").unwrap();
        let urls: Vec<String> = (0..FANOUT * 600).map(|i| format!("https://site.example/{i}")).collect();
        for (b, batch) in urls.chunks(600).enumerate() {
            let items: Vec<BatchItem> =
                batch.iter().map(|url| BatchItem { url, lastmod: None, deleted: false }).collect();
            write_batch(conn, 2, 10_000 + 600 * b as i64, 0, &items).unwrap();
        }
        let pages: i64 = conn.query_row("SELECT count(*) FROM hash_pages", [], |r| r.get(0)).unwrap();
        assert_eq!(pages, 1 + 5, "one page of group 1's run, five of group 2's");
        for (k, url) in urls.iter().enumerate().step_by(97) {
            assert_eq!(find_ids(conn, 2, &[url_hash(url)]).unwrap(), [Some(10_000 + k as i64)], "{url}");
        }
        assert_eq!(find_ids(conn, 2, &[url_hash("https://site.example/new")]).unwrap(), [None]);
    }
    /// The runs a process writes are kept in memory as they are written
    /// (a batch's blob, a merged run's hash prefixes): a look-up reads
    /// none of a kept run's pages for a hash it does not hold, but reads
    /// them for one it may. A run written by a transaction that rolled
    /// back leaves its id to the next run written, which has another
    /// stamp: read anew, not taken for the one kept.
    #[test]
    fn runs_written_are_kept_and_a_run_of_an_id_given_again_is_read_anew() {
        // A group of this test's own: the runs kept are the process's, and
        // another test's look-up lets go the runs of its group it does not
        // list.
        const GROUP: i64 = 4_812;
        // On disk: a ledger in memory keeps no journal, so it cannot roll back.
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
        ledger
            .conn
            .execute("INSERT INTO groups (id, property, engine, target) VALUES (?1, 'p', 'indexnow', 't')", [GROUP])
            .unwrap();
        let write = |tx: &Connection| -> (Vec<u128>, i64, i64) {
            let urls: Vec<String> = (0..FANOUT * 3).map(|i| format!("https://a.example/{i}")).collect();
            for (b, batch) in urls.chunks(3).enumerate() {
                let items: Vec<BatchItem> =
                    batch.iter().map(|url| BatchItem { url, lastmod: None, deleted: false }).collect();
                write_batch(tx, GROUP, 1 + 3 * b as i64, 0, &items).unwrap();
            }
            let (run, stamp) = tx
                .query_row("SELECT run, stamp FROM hash_runs WHERE tier = 1", [], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap();
            (urls.iter().map(|u| url_hash(u)).collect(), run, stamp)
        };
        let kept_of = |run: i64| crate::ledger::kept_runs::kept_of(0, GROUP, run);
        let expected: Vec<Option<i64>> = (1..=(FANOUT * 3) as i64).map(Some).collect();
        let tx = ledger.conn.transaction().unwrap();
        let (hashes, run, stamp) = write(&tx);
        assert_eq!(kept_of(run), 1, "the merged run is kept as it is written");
        assert_eq!(find_ids(&tx, GROUP, &hashes).unwrap(), expected);
        // A hash the kept prefixes do not hold is not sought in the run's
        // pages: here a page made to claim it.
        let new = url_hash("https://a.example/new");
        let claimed = batches::merge(vec![(new, 99)], |_, _| Ok(true)).unwrap();
        tx.execute("DELETE FROM hash_pages WHERE run = ?1", [run]).unwrap();
        tx.execute(
            "INSERT INTO hash_pages (run, first_hash, entries) VALUES (?1, ?2, ?3)",
            params![run, &claimed[0].first_hash[..], &claimed[0].entries],
        )
        .unwrap();
        assert_eq!(find_ids(&tx, GROUP, &[new]).unwrap(), [None], "not read: the run kept says it is not there");
        assert_eq!(find_ids(&tx, GROUP, &hashes[..1]).unwrap(), [None], "read: the run kept may hold it");
        drop(tx);
        // A run of that id written again, by another process: nothing of it
        // kept here.
        let tx = ledger.conn.transaction().unwrap();
        let hashes: Vec<u128> = (0..FANOUT * 3).map(|i| url_hash(&format!("https://b.example/{i}"))).collect();
        let (again, other): (i64, i64) = tx
            .query_row(
                "INSERT INTO hash_runs (run, group_id, tier, n, stamp) VALUES (?1, ?2, 1, ?3, random())
                 RETURNING run, stamp",
                params![run, GROUP, hashes.len() as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(again, run);
        assert_ne!(other, stamp, "another stamp");
        let pages = batches::merge(hashes.iter().copied().zip(1..).collect(), |_, _| Ok(true)).unwrap();
        for page in pages {
            tx.execute(
                "INSERT INTO hash_pages (run, first_hash, entries) VALUES (?1, ?2, ?3)",
                params![run, &page.first_hash[..], &page.entries],
            )
            .unwrap();
        }
        assert_eq!(find_ids(&tx, GROUP, &hashes).unwrap(), expected);
        let gone: Vec<u128> = (0..FANOUT * 3).map(|i| url_hash(&format!("https://a.example/{i}"))).collect();
        assert_eq!(find_ids(&tx, GROUP, &gone).unwrap(), vec![None; gone.len()]);
    }

    /// A ledger of schema 12 (runs with no stamp) gets a stamp for each of
    /// its runs on open, each its own, and its URLs are found as before.
    #[test]
    fn a_version_12_ledger_gets_a_stamp_for_each_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let urls: Vec<String> = (0..FANOUT * 3 + 6).map(|i| format!("https://site.example/{i}")).collect();
        {
            let ledger = SqliteLedger::open(&path).unwrap();
            ledger
                .conn
                .execute_batch("INSERT INTO groups (id, property, engine, target) VALUES (1, 'p', 'indexnow', 't')")
                .unwrap();
            for (b, batch) in urls.chunks(3).enumerate() {
                let items: Vec<BatchItem> =
                    batch.iter().map(|url| BatchItem { url, lastmod: None, deleted: false }).collect();
                write_batch(&ledger.conn, 1, 1 + 3 * b as i64, 0, &items).unwrap();
            }
            ledger.conn.execute_batch("ALTER TABLE hash_runs DROP COLUMN stamp; PRAGMA user_version = 12").unwrap();
        }
        let ledger = SqliteLedger::open(&path).unwrap();
        assert_eq!(SqliteLedger::schema_version(&ledger).unwrap(), 13);
        let (runs, stamps, unstamped): (i64, i64, i64) = ledger
            .conn
            .query_row(
                "SELECT count(*), count(DISTINCT stamp), count(*) FILTER (WHERE stamp = 0) FROM hash_runs",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!((runs, stamps, unstamped), (3, 3, 0), "a merged run and two batches, each stamped");
        let hashes: Vec<u128> = urls.iter().map(|u| url_hash(u)).collect();
        let expected: Vec<Option<i64>> = (1..=urls.len() as i64).map(Some).collect();
        assert_eq!(find_ids(&ledger.conn, 1, &hashes).unwrap(), expected);
    }

    /// A merged run read in order for part of its hashes (a half of a
    /// batch's, as admission's two connections each look up): only the
    /// pages between its lowest and highest hash, and every hash of the
    /// part found, in whichever page, a hash between two pages too.
    #[test]
    fn part_of_a_runs_hashes_is_found_reading_its_pages_in_order() {
        let ledger = SqliteLedger::in_memory().unwrap();
        let conn = &ledger.conn;
        conn.execute_batch("INSERT INTO groups (id, property, engine, target) VALUES (1, 'p', 'indexnow', 't')")
            .unwrap();
        let urls: Vec<String> = (0..FANOUT * 600).map(|i| format!("https://site.example/{i}")).collect();
        for (b, batch) in urls.chunks(600).enumerate() {
            let items: Vec<BatchItem> =
                batch.iter().map(|url| BatchItem { url, lastmod: None, deleted: false }).collect();
            write_batch(conn, 1, 1 + 600 * b as i64, 0, &items).unwrap();
        }
        let pages: i64 = conn.query_row("SELECT count(*) FROM hash_pages", [], |r| r.get(0)).unwrap();
        assert_eq!(pages, 5);
        let mut by_hash: Vec<(u128, i64)> = urls.iter().zip(1..).map(|(u, id)| (url_hash(u), id)).collect();
        by_hash.sort_unstable();
        let half = by_hash.len() / 2;
        for part in [&by_hash[..half], &by_hash[half..], &by_hash[1_100..1_130], &by_hash[999..1_001]] {
            let hashes: Vec<u128> = part.iter().map(|h| h.0).collect();
            let expected: Vec<Option<i64>> = part.iter().map(|h| Some(h.1)).collect();
            assert_eq!(find_ids(conn, 1, &hashes).unwrap(), expected);
        }
        // Hashes sought beyond both ends of the run are not found.
        assert_eq!(find_ids(conn, 1, &[0, 1, u128::MAX - 1, u128::MAX]).unwrap(), [None; 4]);
    }
}
