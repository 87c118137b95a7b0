//! The items as rows, where a reader wants them whole (issue 48;
//! docs/design.md, *A ledger per batch*): schema 12 keeps no table of
//! items, so an item is its span's state columns (`spans`), its URL from
//! its batch row's texts (`Texts`), its lastmod and action from
//! `item_changes` or its batch row (`batches::lastmod_and_action`), and
//! `in_flight` where a reservation lists it. An id no span holds is no
//! item (a URL dropped, or an id never taken).

use super::super::batches as layout;
use super::batches::{lastmod_and_action, SPAN_COLUMNS};
use super::session::Session;
use super::{Action, DateTime, GenericClient, LedgerError, Result, Utc};
use std::collections::BTreeMap;

/// A batch row read for its texts: its length, group and texts blob.
struct Batch {
    n: i64,
    group: i64,
    texts: Vec<u8>,
}

/// The batch rows' texts read so far, by first id: each row read once
/// however many of its ids are asked for.
#[derive(Default)]
pub(super) struct Texts(BTreeMap<i64, Batch>);

impl Texts {
    /// The group and URL of id `id` from its batch row, `None` when no
    /// batch row holds it.
    pub(super) fn get(&mut self, tx: &mut Session<'_, impl GenericClient>, id: i64) -> Result<Option<(i64, String)>> {
        let held = self.0.range(..=id).next_back().filter(|(first, b)| id < *first + b.n).map(|(first, _)| *first);
        let first = match held {
            Some(first) => first,
            None => {
                let Some(row) = tx
                    .query_opt(
                        "SELECT first_id, n, group_id, texts FROM batches WHERE first_id <= $1
                         ORDER BY first_id DESC LIMIT 1",
                        &[&id],
                    )?
                    .filter(|r| id < r.get::<_, i64>(0) + i64::from(r.get::<_, i32>(1)))
                else {
                    return Ok(None);
                };
                let first: i64 = row.get(0);
                self.0
                    .insert(first, Batch { n: i64::from(row.get::<_, i32>(1)), group: row.get(2), texts: row.get(3) });
                first
            }
        };
        let batch = &self.0[&first];
        Ok(Some((batch.group, layout::text(&batch.texts, batch.n as usize, (id - first) as u32)?.to_string())))
    }

    /// The URL of id `id`, which a batch row must hold.
    pub(super) fn url(&mut self, tx: &mut Session<'_, impl GenericClient>, id: i64) -> Result<String> {
        match self.get(tx, id)? {
            Some((_, url)) => Ok(url),
            None => Err(LedgerError::Invalid(format!("batches: item {id} is in no batch"))),
        }
    }
}

/// The group of each of `ids` that a span holds, as (group, id), in the
/// order given; an id no span holds is left out. Its group is its batch
/// row's (the last starting at or before it), its span the one of that
/// group starting last at or before it.
pub(super) fn held_by_spans(tx: &mut Session<'_, impl GenericClient>, ids: &[i64]) -> Result<Vec<(i64, i64)>> {
    Ok(tx
        .query(
            "SELECT b.group_id, w.id FROM unnest($1::bigint[]) WITH ORDINALITY AS w (id, n)
             CROSS JOIN LATERAL (SELECT group_id FROM batches WHERE first_id <= w.id ORDER BY first_id DESC LIMIT 1) b
             CROSS JOIN LATERAL (
                 SELECT last FROM spans WHERE group_id = b.group_id AND first <= w.id ORDER BY first DESC LIMIT 1
             ) s
             WHERE s.last >= w.id ORDER BY w.n",
            &[&ids],
        )?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
}

/// An item whole: what schema 11's `item_states` row held (its key aside).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ItemCols {
    pub id: i64,
    pub group_id: i64,
    pub url: String,
    /// `in_flight` where a reservation lists it, else its span's.
    pub state: String,
    pub action: Action,
    pub lastmod: Option<DateTime<Utc>>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub enqueued_at: DateTime<Utc>,
    pub attempts: i32,
    pub last_class: Option<String>,
    pub streak: i32,
    pub streak_started_at: Option<DateTime<Utc>>,
    pub accepted_at: Option<DateTime<Utc>>,
    pub parked_fingerprint: Option<String>,
    pub last_request_id: Option<i64>,
}

/// The items `ids` (in the order given; an id no span holds left out),
/// whole: one statement for their spans (each id's through its batch row's
/// group, as `held_by_spans`) and whether a reservation lists them, each
/// batch row's texts read once (`Texts`), their lastmods and actions at
/// once (`lastmod_and_action`). For the rare readers that want rows (a
/// run's results by id, `ledger copy`'s export, the tests' oracles); the
/// hot paths read spans by run.
pub(super) fn expand(tx: &mut Session<'_, impl GenericClient>, ids: &[i64]) -> Result<Vec<ItemCols>> {
    let rows = tx.query(
        &format!(
            "SELECT w.id, s.group_id, w.id IN (SELECT id FROM in_flight), {SPAN_COLUMNS}
             FROM unnest($1::bigint[]) WITH ORDINALITY AS w (id, n)
             CROSS JOIN LATERAL (SELECT group_id FROM batches WHERE first_id <= w.id ORDER BY first_id DESC LIMIT 1) b
             CROSS JOIN LATERAL (
                 SELECT * FROM spans WHERE group_id = b.group_id AND first <= w.id ORDER BY first DESC LIMIT 1
             ) s
             WHERE s.last >= w.id ORDER BY w.n"
        ),
        &[&ids],
    )?;
    let held: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    let values = lastmod_and_action(tx, &held)?;
    let mut texts = Texts::default();
    let mut out = Vec::with_capacity(rows.len());
    for (r, values) in rows.iter().zip(values) {
        let id: i64 = r.get(0);
        let (lastmod, action) =
            values.ok_or_else(|| LedgerError::Invalid(format!("batches: item {id} is in no batch")))?;
        out.push(ItemCols {
            id,
            group_id: r.get(1),
            url: texts.url(tx, id)?,
            state: if r.get::<_, bool>(2) { "in_flight".to_string() } else { r.get(3) },
            action,
            lastmod: lastmod.and_then(|t| DateTime::from_timestamp(t, 0)),
            next_attempt_at: r.get(4),
            enqueued_at: r.get(5),
            attempts: r.get(6),
            last_class: r.get(7),
            streak: r.get(8),
            streak_started_at: r.get(9),
            accepted_at: r.get(10),
            parked_fingerprint: r.get(11),
            last_request_id: r.get(12),
        });
    }
    Ok(out)
}

/// The columns of `ItemCols` as a relation over arrays (`$1`…`$15`, in
/// `ItemCols::arrays`' order), for a statement that joins items to other
/// tables as it joined `item_states`.
pub(super) const ITEM_ARRAYS: &str = "unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[],
         $6::timestamptz[], $7::timestamptz[], $8::timestamptz[], $9::integer[], $10::text[], $11::integer[],
         $12::timestamptz[], $13::timestamptz[], $14::text[], $15::bigint[]) WITH ORDINALITY
     AS i (id, group_id, url, state, action, lastmod, next_attempt_at, enqueued_at, attempts, last_class, streak,
         streak_started_at, accepted_at, parked_fingerprint, last_request_id, n)";

/// Items as the columns of `ITEM_ARRAYS`.
#[derive(Default)]
pub(super) struct Arrays {
    id: Vec<i64>,
    group_id: Vec<i64>,
    url: Vec<String>,
    state: Vec<String>,
    action: Vec<&'static str>,
    lastmod: Vec<Option<DateTime<Utc>>>,
    next_attempt_at: Vec<Option<DateTime<Utc>>>,
    enqueued_at: Vec<DateTime<Utc>>,
    attempts: Vec<i32>,
    last_class: Vec<Option<String>>,
    streak: Vec<i32>,
    streak_started_at: Vec<Option<DateTime<Utc>>>,
    accepted_at: Vec<Option<DateTime<Utc>>>,
    parked_fingerprint: Vec<Option<String>>,
    last_request_id: Vec<Option<i64>>,
}

impl Arrays {
    pub(super) fn of(items: Vec<ItemCols>) -> Arrays {
        let mut a = Arrays::default();
        for i in items {
            a.id.push(i.id);
            a.group_id.push(i.group_id);
            a.url.push(i.url);
            a.state.push(i.state);
            a.action.push(i.action.as_str());
            a.lastmod.push(i.lastmod);
            a.next_attempt_at.push(i.next_attempt_at);
            a.enqueued_at.push(i.enqueued_at);
            a.attempts.push(i.attempts);
            a.last_class.push(i.last_class);
            a.streak.push(i.streak);
            a.streak_started_at.push(i.streak_started_at);
            a.accepted_at.push(i.accepted_at);
            a.parked_fingerprint.push(i.parked_fingerprint);
            a.last_request_id.push(i.last_request_id);
        }
        a
    }

    /// The parameters `$1`…`$15` of `ITEM_ARRAYS`.
    pub(super) fn params(&self) -> Vec<&(dyn ::postgres::types::ToSql + Sync)> {
        vec![
            &self.id,
            &self.group_id,
            &self.url,
            &self.state,
            &self.action,
            &self.lastmod,
            &self.next_attempt_at,
            &self.enqueued_at,
            &self.attempts,
            &self.last_class,
            &self.streak,
            &self.streak_started_at,
            &self.accepted_at,
            &self.parked_fingerprint,
            &self.last_request_id,
        ]
    }
}

/// Every id a span holds, ascending.
#[cfg(test)]
pub(super) fn every_id(tx: &mut Session<'_, impl GenericClient>) -> Result<Vec<i64>> {
    Ok(tx
        .query(
            "SELECT x.id FROM spans s CROSS JOIN LATERAL generate_series(s.first, s.last) AS x (id) ORDER BY 1",
            &[],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// The tests' expansion of the ledger into item rows: a `TEMP` table
/// `table` (dropped at commit; emptied and filled again by a second call) with schema 11's `item_states` columns
/// (`url_key` computed from the URL), filled from the spans, batch rows
/// and changes, so that an oracle written against the item rows runs with
/// only the table's name changed.
#[cfg(test)]
pub(super) fn fill_item_rows(tx: &mut Session<'_, impl GenericClient>, table: &str) -> Result<()> {
    let ids = every_id(tx)?;
    let items = expand(tx, &ids)?;
    let keys: Vec<i64> = items.iter().map(|i| super::super::url_keys::url_key(&i.url)).collect();
    let arrays = Arrays::of(items);
    // Made once a transaction and emptied after: a table made again at
    // every call holds a lock more each time until the commit.
    tx.batch_execute(&format!(
        "CREATE TEMP TABLE IF NOT EXISTS {table} (
             id bigint, url text, group_id bigint, state text, action text, lastmod timestamptz,
             next_attempt_at timestamptz, enqueued_at timestamptz, attempts integer, last_class text,
             streak integer, streak_started_at timestamptz, accepted_at timestamptz, parked_fingerprint text,
             url_key bigint, last_request_id bigint
         ) ON COMMIT DROP;
         DELETE FROM {table};"
    ))?;
    let mut params = arrays.params();
    params.push(&keys);
    tx.execute(
        &format!(
            "INSERT INTO {table}
             SELECT i.id, i.url, i.group_id, i.state, i.action, i.lastmod, i.next_attempt_at, i.enqueued_at,
                 i.attempts, i.last_class, i.streak, i.streak_started_at, i.accepted_at, i.parked_fingerprint,
                 k.url_key, i.last_request_id
             FROM {ITEM_ARRAYS} JOIN unnest($16::bigint[]) WITH ORDINALITY AS k (url_key, n) ON k.n = i.n"
        ),
        &params,
    )?;
    Ok(())
}
