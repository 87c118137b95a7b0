//! The PostgreSQL ledger's schema: each version a `.sql` file under
//! `schema/` (`include_str!`ed), applied in order by `migrate` in one
//! transaction under an advisory lock (many runners, one migration), with
//! the URL keys of schema 1's items computed in Rust (`upgrade_to_2`). The
//! version is the row of `schema_version` in the ledger's schema.

use super::super::url_keys::{self, url_key};
use super::super::{stored, Class, LedgerError, Result};
use super::session::Session;
use super::PgLedger;
use ::postgres as pg;
use pg::Transaction;
use std::collections::HashSet;

/// The schema version this binary writes.
pub const SCHEMA_VERSION: i64 = 13;

/// Schema 1, the first migration of every ledger.
pub(super) const SCHEMA_1: &str = include_str!("schema/0001_ledger.sql");
/// Schema 2, over schema 1: SQL before and after `upgrade_to_2` fills the URL keys.
const SCHEMA_2: &str = include_str!("schema/0002_requests.sql");
const FILL_KEYS: &str = "-- (upgrade_to_2 fills the URL keys here)";
/// Schema 3, over schema 2: the sitemaps read for sources, and reminders.
const SCHEMA_3: &str = include_str!("schema/0003_sources.sql");
/// Schema 4, over schema 3: Google URL inspections per property and class, and
/// the items `queue drop` removed that requests name.
const SCHEMA_4: &str = include_str!("schema/0004_inspections.sql");
/// Schema 5, over schema 4: groups have a channel (sitemap groups), the sitemaps read
/// keep when they last changed, and what the engines report of the sitemaps submitted.
const SCHEMA_5: &str = include_str!("schema/0005_sitemaps.sql");
/// Schema 6, over schema 5: `indexq serve`'s intake limits.
const SCHEMA_6: &str = include_str!("schema/0006_serve.sql");
/// Schema 7, over schema 6: no foreign key from items to their group
/// (admission checks its groups once a batch).
const SCHEMA_7: &str = include_str!("schema/0007_items_groups.sql");
/// Schema 8, over schema 7: a reservation lists the items it took (a claim
/// writes no item row); the views of what is in flight.
pub(super) const SCHEMA_8: &str = include_str!("schema/0008_reservation_items.sql");
/// Schema 9, over schema 8: a reservation's list of items stored as it is,
/// not compressed.
const SCHEMA_9: &str = include_str!("schema/0009_reservation_storage.sql");
/// Schema 10, over schema 9: the public URL of each Ghost post or page
/// (`serve`'s Ghost hook).
const SCHEMA_10: &str = include_str!("schema/0010_ghost_urls.sql");
/// Schema 11, over schema 10: the sources that cannot be read, since when,
/// and when a run last said so.
const SCHEMA_11: &str = include_str!("schema/0011_source_failures.sql");
/// Schema 12, over schema 11: a ledger per batch (issue 48) — the
/// batches, spans and hash runs, filled from the items
/// (`batches::fill_from_items`) where `FILL_SPANS` marks, then the items
/// dropped (the spans are their state, the batch rows their URLs).
const SCHEMA_12: &str = include_str!("schema/0012_batches.sql");
/// Where schema 12's script is cut for the spans to be filled.
const FILL_SPANS: &str = "-- (the migration fills the batches and spans from the items here)";
/// Schema 13, over schema 12: the items' sequence gives blocks of
/// `ID_BLOCK` ids.
const SCHEMA_13: &str = include_str!("schema/0013_item_id_blocks.sql");

/// The ids each value of the sequence `item_ids` stands for (schema 13
/// makes it step by as many): a value `v` is the first of the ids `v` to
/// `v + ID_BLOCK - 1`, all of them its taker's.
pub(super) const ID_BLOCK: i64 = 1000;

impl PgLedger {
    pub(super) fn migrate(&mut self) -> Result<()> {
        let schema = self.schema.clone();
        self.transaction(|tx| {
            tx.execute("SELECT pg_advisory_xact_lock(hashtext('indexq migrate ' || $1)::bigint)", &[&schema])?;
            tx.batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {schema};
                 CREATE TABLE IF NOT EXISTS {schema}.schema_version (version bigint NOT NULL);"
            ))?;
            let version: Option<i64> =
                tx.query_opt(&format!("SELECT max(version) FROM {schema}.schema_version"), &[])?.and_then(|r| r.get(0));
            let version = version.unwrap_or(0);
            if version > SCHEMA_VERSION {
                return Err(LedgerError::Newer { found: version, known: SCHEMA_VERSION });
            }
            if version < SCHEMA_VERSION {
                tx.batch_execute(&format!("SET LOCAL search_path TO {schema}"))?;
            }
            if version < 1 {
                tx.batch_execute(SCHEMA_1)?;
            }
            if version < 2 {
                upgrade_to_2(tx)?;
            }
            if version < 3 {
                tx.batch_execute(SCHEMA_3)?;
            }
            if version < 4 {
                tx.batch_execute(SCHEMA_4)?;
            }
            if version < 5 {
                tx.batch_execute(SCHEMA_5)?;
            }
            if version < 6 {
                tx.batch_execute(SCHEMA_6)?;
            }
            if version < 7 {
                tx.batch_execute(SCHEMA_7)?;
            }
            if version < 8 {
                tx.batch_execute(SCHEMA_8)?;
            }
            if version < 9 {
                tx.batch_execute(SCHEMA_9)?;
            }
            if version < 10 {
                tx.batch_execute(SCHEMA_10)?;
            }
            if version < 11 {
                tx.batch_execute(SCHEMA_11)?;
            }
            if version < 12 {
                let (before, after) =
                    SCHEMA_12.split_once(FILL_SPANS).expect("the schema-12 script marks where the spans are filled");
                tx.batch_execute(before)?;
                super::batches::fill_from_items(tx, super::batches::Fill::Migration)?;
                tx.batch_execute(after)?;
            }
            if version < 13 {
                tx.batch_execute(SCHEMA_13)?;
            }
            if version < SCHEMA_VERSION {
                tx.execute(&format!("DELETE FROM {schema}.schema_version"), &[])?;
                tx.execute(&format!("INSERT INTO {schema}.schema_version VALUES ($1)"), &[&SCHEMA_VERSION])?;
            }
            Ok(())
        })
        .map_err(|e| match e {
            LedgerError::Newer { found, known } => LedgerError::newer(&self.place, found, known),
            e => e,
        })
    }

    /// The schema version in the database (`None`: no indexq schema yet).
    pub fn stored_version(&mut self) -> Result<Option<i64>> {
        let schema = self.schema.clone();
        self.transaction(|tx| {
            let exists: bool = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM information_schema.tables
                     WHERE table_schema = $1 AND table_name = 'schema_version')",
                    &[&schema],
                )?
                .get(0);
            if !exists {
                return Ok(None);
            }
            Ok(tx.query_one(&format!("SELECT max(version) FROM {schema}.schema_version"), &[])?.get(0))
        })
    }
}

/// Schema 1 → 2: items get their URL key (a URL whose key another of its
/// group holds takes the next free one), each attempt becomes a recorded
/// request naming its item, and each item points at its last one. Values
/// this indexq does not know stop the upgrade, naming them.
fn upgrade_to_2(tx: &mut Session<'_, Transaction<'_>>) -> Result<()> {
    for (table, column, known) in [
        ("items", "state", "'queued', 'in_flight', 'accepted', 'parked'"),
        ("items", "action", "'updated', 'deleted'"),
        ("items", "last_class", CLASSES),
        ("attempts", "class", CLASSES),
    ] {
        let sql = format!("SELECT {column} FROM {table} WHERE {column} NOT IN ({known}) LIMIT 1");
        if let Some(r) = tx.query_opt(&sql, &[])? {
            return Err(stored::<Class>(table, column, r.get::<_, &str>(0)).err().unwrap_or_else(|| {
                LedgerError::Invalid(format!("the ledger's {table}.{column} holds a value this indexq does not know"))
            }));
        }
    }
    let (before, after) = SCHEMA_2.split_once(FILL_KEYS).expect("the schema-2 script marks where the keys are filled");
    tx.batch_execute(before)?;
    let (mut ids, mut keys) = (Vec::new(), Vec::new());
    let mut taken = HashSet::new();
    for r in tx.query("SELECT id, group_id, url FROM items ORDER BY id", &[])? {
        let group: i64 = r.get(1);
        let mut key = url_key(r.get(2));
        while !taken.insert((group, key)) {
            key = url_keys::next_key(key);
        }
        ids.push(r.get::<_, i64>(0));
        keys.push(key);
    }
    tx.execute(
        "UPDATE items SET url_key = k.key FROM unnest($1::bigint[], $2::bigint[]) AS k (id, key) WHERE items.id = k.id",
        &[&ids, &keys],
    )?;
    tx.batch_execute(after)?;
    Ok(())
}

/// The classes, as the schema's checks list them.
const CLASSES: &str = "'accepted', 'quota', 'transient', 'key_pending', 'misconfigured'";
