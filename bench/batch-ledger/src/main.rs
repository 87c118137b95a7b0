//! Issue 48's prototype: the ledger's work of a `submit` in today's shape
//! (schema 11's `items`, a row and its index entries per URL) and in the
//! per-batch shape chosen in docs/design.md (*A ledger per batch*: blob rows
//! of hashes and texts, state per run of ids, tiers of sorted hash pages),
//! side by side in one call. See README.md beside this file.
//!
//! `batch-ledger compare [ROUNDS] [DIR]` runs every row for both shapes,
//! each in a child process of its own (so that its bytes written, its fsyncs
//! under `strace -c` and its peak RSS are its own), and prints the medians.
//! `batch-ledger run SHAPE ROW DB` is one such child.

use rusqlite::{params, Connection, OptionalExtension};
use std::process::Command;
use std::time::Instant;
use xxhash_rust::xxh3::{xxh3_128, xxh3_64};

/// URLs of one admission batch, and of one IndexNow request.
const BATCH: usize = 10_000;
/// Admissions share a transaction up to this many URLs, as indexq's do.
const COMMIT_EVERY: usize = 100_000;
/// The pinned clock of every run, and the dedupe window.
const NOW: i64 = 1_800_000_000;
/// Sorted runs of one tier merged into one run of the next (8, or
/// `$FANOUT`).
fn fanout() -> usize {
    std::env::var("FANOUT").ok().and_then(|f| f.parse().ok()).unwrap_or(8)
}
/// Entries (hash, id) in one blob of `hash_pages`.
const PAGE: usize = 1_000;
/// One entry of a tier's page: the 128-bit hash and the item's id.
const ENTRY: usize = 24;
/// One entry of a batch's sorted blob: the hash and its place in the batch.
const PLACED: usize = 20;

type Result<T> = rusqlite::Result<T>;

/// The `i`th URL of every row: distinct, about 60 bytes, as a site's.
fn url(i: u64) -> String {
    format!("https://www.example.com/articles/{:016x}/page-{i}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

fn open(path: &str) -> Result<Connection> {
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "page_size", 16_384)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "wal_autocheckpoint", (40 << 20) / 16_384)?;
    conn.pragma_update(None, "cache_size", -16_384)?;
    Ok(conn)
}

/// What both shapes keep alike: groups and their counts, reservations and
/// their runs of ids, requests, usage.
const COMMON: &str = "
CREATE TABLE IF NOT EXISTS groups (id INTEGER PRIMARY KEY, queued INTEGER NOT NULL DEFAULT 0,
    accepted INTEGER NOT NULL DEFAULT 0);
INSERT OR IGNORE INTO groups (id) VALUES (1);
CREATE TABLE IF NOT EXISTS reservations (id INTEGER PRIMARY KEY, created_at INTEGER NOT NULL, units INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS in_flight (first INTEGER PRIMARY KEY, last INTEGER NOT NULL,
    reservation_id INTEGER NOT NULL, group_id INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS in_flight_reservation ON in_flight (reservation_id);
CREATE TABLE IF NOT EXISTS requests (id INTEGER PRIMARY KEY, group_id INTEGER NOT NULL, at INTEGER NOT NULL,
    class TEXT NOT NULL, n INTEGER NOT NULL, first_item INTEGER NOT NULL, last_item INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS requests_group ON requests (group_id, at);
CREATE TABLE IF NOT EXISTS budget_usage (rule TEXT PRIMARY KEY, used INTEGER NOT NULL);
INSERT OR IGNORE INTO budget_usage VALUES ('indexnow', 0);
";

/// Today's shape: schema 11's items, their unique key and partial indexes.
const ITEMS: &str = "
CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY, group_id INTEGER NOT NULL, url_key INTEGER NOT NULL, url TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state = 'queued' OR state = 'in_flight' OR state = 'accepted' OR state = 'parked'),
    action TEXT NOT NULL DEFAULT 'updated' CHECK (action = 'updated' OR action = 'deleted'),
    lastmod INTEGER, next_attempt_at INTEGER, enqueued_at INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    last_class TEXT, streak INTEGER NOT NULL DEFAULT 0, streak_started_at INTEGER, accepted_at INTEGER,
    parked_fingerprint TEXT, last_request_id INTEGER, UNIQUE (group_id, url_key));
CREATE INDEX IF NOT EXISTS items_queued ON items (group_id, next_attempt_at) WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS items_parked ON items (group_id) WHERE state = 'parked';
";

/// The per-batch shape (docs/design.md, *A ledger per batch*).
const BATCHES: &str = "
CREATE TABLE IF NOT EXISTS batches (first_id INTEGER PRIMARY KEY, group_id INTEGER NOT NULL, n INTEGER NOT NULL,
    created_at INTEGER NOT NULL, sorted BLOB NOT NULL, texts BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS spans (first INTEGER PRIMARY KEY, last INTEGER NOT NULL, group_id INTEGER NOT NULL,
    state TEXT NOT NULL, next_attempt_at INTEGER, attempts INTEGER NOT NULL DEFAULT 0, last_class TEXT,
    streak INTEGER NOT NULL DEFAULT 0, accepted_at INTEGER, last_request_id INTEGER);
CREATE INDEX IF NOT EXISTS spans_queued ON spans (group_id, next_attempt_at) WHERE state = 'queued';
CREATE TABLE IF NOT EXISTS level0 (first_id INTEGER PRIMARY KEY, group_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS hash_runs (run INTEGER PRIMARY KEY, group_id INTEGER NOT NULL, tier INTEGER NOT NULL,
    n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS hash_pages (run INTEGER NOT NULL, first_hash BLOB NOT NULL, entries BLOB NOT NULL,
    PRIMARY KEY (run, first_hash)) WITHOUT ROWID;
";

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Items,
    Batches,
}

fn next_id(conn: &Connection, shape: Shape) -> Result<i64> {
    let sql = match shape {
        Shape::Items => "SELECT coalesce(max(id), 0) + 1 FROM items",
        Shape::Batches => "SELECT coalesce(max(last), 0) + 1 FROM spans",
    };
    conn.query_row(sql, [], |r| r.get(0))
}

/// Admits `urls` into group 1 as `submit` does: looked up batch by batch,
/// the new ones inserted, a commit every `COMMIT_EVERY`.
fn admit(conn: &Connection, shape: Shape, held: bool, urls: &[String]) -> Result<usize> {
    if shape == Shape::Batches {
        // Admissions need no fsync of their own (design: claims keep FULL).
        conn.pragma_update(None, "synchronous", "NORMAL")?;
    }
    let mut id = next_id(conn, shape)?;
    let mut admitted = 0;
    // `held`: the group's hashes read once and kept in memory while the
    // admissions hold the write lock (nothing else can add to them).
    // A small input looks up as `batches` does: loading every hash of a
    // big ledger for a few URLs would cost more than their seeks.
    let mut memo = if held && urls.len() >= 4_096 { Some(Memo::load(conn)?) } else { None };
    conn.execute_batch("BEGIN")?;
    for (n, chunk) in urls.chunks(BATCH).enumerate() {
        let new = match shape {
            Shape::Items => admit_items(conn, chunk, id)?,
            Shape::Batches => admit_batch(conn, chunk, id, memo.as_mut())?,
        };
        id += new as i64;
        admitted += new;
        if new > 0 {
            conn.execute("UPDATE groups SET queued = queued + ?1 WHERE id = 1", [new as i64])?;
        }
        if ((n + 1) * BATCH).is_multiple_of(COMMIT_EVERY) {
            conn.execute_batch("COMMIT; BEGIN")?;
        }
    }
    conn.execute_batch("COMMIT")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(admitted)
}

fn admit_items(conn: &Connection, chunk: &[String], first: i64) -> Result<usize> {
    let mut look = conn.prepare_cached("SELECT state, accepted_at FROM items WHERE group_id = 1 AND url_key = ?1")?;
    let mut new = Vec::new();
    for u in chunk {
        let found: Option<(String, Option<i64>)> =
            look.query_row([xxh3_64(u.as_bytes()) as i64], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
        if found.is_none() {
            new.push(u);
        }
    }
    // Multi-row statements, as indexq's: 100 rows of 6 values each.
    for (k, rows) in new.chunks(100).enumerate() {
        let values = vec!["(?, 1, ?, ?, 'queued', ?, ?)"; rows.len()].join(", ");
        let sql = format!(
            "INSERT OR FAIL INTO items (id, group_id, url_key, url, state, next_attempt_at, enqueued_at) VALUES {values}"
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut p: Vec<rusqlite::types::Value> = Vec::with_capacity(rows.len() * 5);
        for (j, u) in rows.iter().enumerate() {
            let id = first + (k * 100 + j) as i64;
            p.extend([id.into(), (xxh3_64(u.as_bytes()) as i64).into(), (*u).clone().into(), NOW.into(), NOW.into()]);
        }
        stmt.execute(rusqlite::params_from_iter(p))?;
    }
    Ok(new.len())
}

fn hash_of(e: &[u8]) -> u128 {
    u128::from_be_bytes(e[..16].try_into().unwrap())
}

/// Binary search of `hash` in a blob of fixed-size entries sorted by hash.
fn search(blob: &[u8], size: usize, hash: u128) -> Option<usize> {
    let (mut lo, mut hi) = (0, blob.len() / size);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match hash_of(&blob[mid * size..]).cmp(&hash) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid),
        }
    }
    None
}

/// Group 1's unmerged batches: each one's first id and sorted blob.
const LEVEL0_BATCHES: &str =
    "SELECT b.first_id, b.sorted FROM level0 l JOIN batches b ON b.first_id = l.first_id WHERE l.group_id = 1";

/// The ids of `hashes` (sorted) in group 1: the unmerged batches' sorted
/// blobs, then each tier's run, by a seek a hash when few are asked, else
/// by reading the run's pages in order.
fn look_up(conn: &Connection, hashes: &[u128]) -> Result<Vec<Option<i64>>> {
    let mut found = vec![None; hashes.len()];
    let mut level0 = conn.prepare_cached(LEVEL0_BATCHES)?;
    let mut rows = level0.query([])?;
    while let Some(r) = rows.next()? {
        let first: i64 = r.get(0)?;
        let blob = r.get_ref(1)?.as_blob()?;
        for (k, h) in hashes.iter().enumerate() {
            if found[k].is_none() {
                if let Some(at) = search(blob, PLACED, *h) {
                    let place = u32::from_le_bytes(blob[at * PLACED + 16..at * PLACED + 20].try_into().unwrap());
                    found[k] = Some(first + place as i64);
                }
            }
        }
    }
    let runs: Vec<(i64, i64)> = conn
        .prepare_cached("SELECT run, n FROM hash_runs WHERE group_id = 1")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_>>()?;
    let mut seek = conn.prepare_cached(
        "SELECT entries FROM hash_pages WHERE run = ?1 AND first_hash <= ?2 ORDER BY first_hash DESC LIMIT 1",
    )?;
    let mut pages = conn.prepare_cached("SELECT entries FROM hash_pages WHERE run = ?1 ORDER BY first_hash")?;
    for (run, n) in runs {
        let open: Vec<usize> = (0..hashes.len()).filter(|&k| found[k].is_none()).collect();
        if open.is_empty() {
            break;
        }
        let id_at =
            |blob: &[u8], at: usize| i64::from_le_bytes(blob[at * ENTRY + 16..at * ENTRY + 24].try_into().unwrap());
        if open.len() * 4 < (n as usize).div_ceil(PAGE) {
            for k in open {
                let key = hashes[k].to_be_bytes();
                let blob: Option<Vec<u8>> = seek.query_row(params![run, &key[..]], |r| r.get(0)).optional()?;
                if let Some(blob) = blob {
                    found[k] = search(&blob, ENTRY, hashes[k]).map(|at| id_at(&blob, at));
                }
            }
        } else {
            // Pages in order, the sorted hashes walked beside them: each
            // hash searched in the last page that starts at or before it.
            let mut rows = pages.query([run])?;
            let mut prev: Option<Vec<u8>> = None;
            let mut i = 0;
            loop {
                let next: Option<Vec<u8>> = rows.next()?.map(|r| r.get(0)).transpose()?;
                let bound = next.as_ref().map(|b| hash_of(b));
                while i < open.len() && bound.is_none_or(|b| hashes[open[i]] < b) {
                    if let Some(p) = &prev {
                        found[open[i]] = search(p, ENTRY, hashes[open[i]]).map(|at| id_at(p, at));
                    }
                    i += 1;
                }
                match next {
                    Some(b) => prev = Some(b),
                    None => break,
                }
            }
        }
    }
    Ok(found)
}

/// Whether each id found is accepted within the dedupe window or queued
/// (nothing to write) — read from the spans that hold them.
fn settled(conn: &Connection, ids: &mut [i64]) -> Result<usize> {
    if ids.is_empty() {
        return Ok(0);
    }
    ids.sort_unstable();
    let mut stmt = conn.prepare_cached(
        "SELECT first, last, state, accepted_at FROM spans
         WHERE first BETWEEN coalesce((SELECT max(first) FROM spans WHERE first <= ?1), ?1) AND ?2 ORDER BY first",
    )?;
    let mut rows = stmt.query(params![ids[0], ids[ids.len() - 1]])?;
    let (mut i, mut settled) = (0, 0);
    while let Some(r) = rows.next()? {
        let (first, last): (i64, i64) = (r.get(0)?, r.get(1)?);
        let state = r.get_ref(2)?.as_str()?;
        let accepted: Option<i64> = r.get(3)?;
        let quiet = state == "queued" || (state == "accepted" && accepted.is_some_and(|a| NOW - a < 86_400));
        while i < ids.len() && ids[i] <= last {
            if ids[i] >= first && quiet {
                settled += 1;
            }
            i += 1;
        }
    }
    Ok(settled)
}

/// A group's hashes in memory: the ones read or merged (sorted), and the
/// ones added since (sorted), merged when they are an eighth of the rest.
struct Memo {
    hashes: Vec<(u64, u64, i64)>,
    fresh: Vec<(u64, u64, i64)>,
}

fn split(h: u128) -> (u64, u64) {
    ((h >> 64) as u64, h as u64)
}

impl Memo {
    fn load(conn: &Connection) -> Result<Memo> {
        let mut hashes = Vec::new();
        let mut level0 = conn.prepare(LEVEL0_BATCHES)?;
        let mut rows = level0.query([])?;
        while let Some(r) = rows.next()? {
            let first: i64 = r.get(0)?;
            for e in r.get_ref(1)?.as_blob()?.chunks(PLACED) {
                let (hi, lo) = split(hash_of(e));
                hashes.push((hi, lo, first + u32::from_le_bytes(e[16..20].try_into().unwrap()) as i64));
            }
        }
        let mut pages =
            conn.prepare("SELECT p.entries FROM hash_runs r JOIN hash_pages p ON p.run = r.run WHERE r.group_id = 1")?;
        let mut rows = pages.query([])?;
        while let Some(r) = rows.next()? {
            for e in r.get_ref(0)?.as_blob()?.chunks(ENTRY) {
                let (hi, lo) = split(hash_of(e));
                hashes.push((hi, lo, i64::from_le_bytes(e[16..24].try_into().unwrap())));
            }
        }
        hashes.sort_unstable();
        Ok(Memo { hashes, fresh: Vec::new() })
    }

    /// The ids of `queries` (sorted), each list walked once from where
    /// the previous query ended (a galloping search): sorted queries read
    /// the memory in order instead of a binary search's random steps.
    fn find_sorted(&self, queries: &[u128]) -> Vec<Option<i64>> {
        let mut found = vec![None; queries.len()];
        for v in [&self.hashes, &self.fresh] {
            let mut from = 0;
            for (k, q) in queries.iter().enumerate() {
                let key = split(*q);
                // Gallop: double the step until past the key, then search.
                let mut step = 1;
                let mut hi = from;
                while hi < v.len() && (v[hi].0, v[hi].1) < key {
                    from = hi;
                    hi += step;
                    step *= 2;
                }
                let hi = hi.min(v.len());
                let at = from + v[from..hi].partition_point(|e| (e.0, e.1) < key);
                if at < v.len() && (v[at].0, v[at].1) == key {
                    found[k] = found[k].or(Some(v[at].2));
                }
                from = at;
            }
        }
        found
    }

    fn add(&mut self, entries: impl Iterator<Item = (u128, i64)>) {
        self.fresh.extend(entries.map(|(h, id)| {
            let (hi, lo) = split(h);
            (hi, lo, id)
        }));
        if self.fresh.len() * 8 > self.hashes.len() {
            self.hashes.append(&mut self.fresh);
            self.hashes.sort_unstable();
        } else {
            self.fresh.sort_unstable();
        }
    }
}

fn admit_batch(conn: &Connection, chunk: &[String], first: i64, memo: Option<&mut Memo>) -> Result<usize> {
    let mut hashes: Vec<(u128, usize)> = chunk.iter().enumerate().map(|(k, u)| (xxh3_128(u.as_bytes()), k)).collect();
    hashes.sort_unstable();
    let sorted: Vec<u128> = hashes.iter().map(|h| h.0).collect();
    let found = match &memo {
        Some(m) => m.find_sorted(&sorted),
        None => look_up(conn, &sorted)?,
    };
    let mut ids: Vec<i64> = found.iter().flatten().copied().collect();
    let hits = ids.len();
    let quiet = settled(conn, &mut ids)?;
    assert_eq!(quiet, hits, "the prototype's rows requeue nothing");
    let new: Vec<usize> = (0..hashes.len()).filter(|&k| found[k].is_none()).map(|k| hashes[k].1).collect();
    if new.is_empty() {
        return Ok(0);
    }
    // The batch in id order of the input; its sorted blob by hash.
    let mut texts = Vec::with_capacity(new.len() * 64);
    let mut ends = Vec::with_capacity(new.len() * 4);
    let mut place = vec![0u32; chunk.len()];
    let mut order = new.clone();
    order.sort_unstable();
    for (p, &k) in order.iter().enumerate() {
        place[k] = p as u32;
        texts.extend_from_slice(chunk[k].as_bytes());
        ends.extend_from_slice(&(texts.len() as u32).to_le_bytes());
    }
    ends.extend_from_slice(&texts);
    let mut blob = Vec::with_capacity(new.len() * PLACED);
    for ((h, k), _) in hashes.iter().zip(&found).filter(|(_, f)| f.is_none()) {
        blob.extend_from_slice(&h.to_be_bytes());
        blob.extend_from_slice(&place[*k].to_le_bytes());
    }
    let n = order.len() as i64;
    conn.prepare_cached("INSERT INTO batches VALUES (?1, 1, ?2, ?3, ?4, ?5)")?
        .execute(params![first, n, NOW, blob, ends])?;
    conn.prepare_cached(
        "INSERT INTO spans (first, last, group_id, state, next_attempt_at) VALUES (?1, ?2, 1, 'queued', ?3)",
    )?
    .execute(params![first, first + n - 1, NOW])?;
    conn.prepare_cached("INSERT INTO level0 VALUES (?1, 1)")?.execute([first])?;
    merge(conn)?;
    if let Some(m) = memo {
        m.add(hashes.iter().zip(&found).filter(|(_, f)| f.is_none()).map(|((h, k), _)| (*h, first + place[*k] as i64)));
    }
    Ok(order.len())
}

/// Merges `fanout()` runs of a tier into one of the next (level 0: the
/// batches' own sorted blobs), as long as a tier holds that many.
fn merge(conn: &Connection) -> Result<()> {
    let mut tier = 0;
    loop {
        let mut entries: Vec<(u128, i64)> = Vec::new();
        let members: Vec<i64> = if tier == 0 {
            conn.prepare_cached("SELECT first_id FROM level0 WHERE group_id = 1")?
                .query_map([], |r| r.get(0))?
                .collect::<Result<_>>()?
        } else {
            conn.prepare_cached("SELECT run FROM hash_runs WHERE group_id = 1 AND tier = ?1")?
                .query_map([tier], |r| r.get(0))?
                .collect::<Result<_>>()?
        };
        if members.len() < fanout() {
            return Ok(());
        }
        for &m in &members {
            if tier == 0 {
                let blob: Vec<u8> =
                    conn.query_row("SELECT sorted FROM batches WHERE first_id = ?1", [m], |r| r.get(0))?;
                for e in blob.chunks(PLACED) {
                    entries.push((hash_of(e), m + u32::from_le_bytes(e[16..20].try_into().unwrap()) as i64));
                }
                conn.execute("DELETE FROM level0 WHERE first_id = ?1", [m])?;
            } else {
                let mut stmt = conn.prepare_cached("SELECT entries FROM hash_pages WHERE run = ?1")?;
                let mut rows = stmt.query([m])?;
                while let Some(r) = rows.next()? {
                    for e in r.get_ref(0)?.as_blob()?.chunks(ENTRY) {
                        entries.push((hash_of(e), i64::from_le_bytes(e[16..24].try_into().unwrap())));
                    }
                }
                conn.execute("DELETE FROM hash_pages WHERE run = ?1", [m])?;
                conn.execute("DELETE FROM hash_runs WHERE run = ?1", [m])?;
            }
        }
        entries.sort_unstable();
        tier += 1;
        conn.execute("INSERT INTO hash_runs (group_id, tier, n) VALUES (1, ?1, ?2)", params![tier, entries.len()])?;
        let run = conn.last_insert_rowid();
        let mut put = conn.prepare_cached("INSERT INTO hash_pages VALUES (?1, ?2, ?3)")?;
        for page in entries.chunks(PAGE) {
            let mut blob = Vec::with_capacity(page.len() * ENTRY);
            for (h, id) in page {
                blob.extend_from_slice(&h.to_be_bytes());
                blob.extend_from_slice(&id.to_le_bytes());
            }
            put.execute(params![run, &page[0].0.to_be_bytes()[..], blob])?;
        }
    }
}

/// Claims and answers every due item of group 1, 10,000 a request, each
/// answer recorded in the next claim's transaction (as indexq does).
fn send_all(conn: &Connection, shape: Shape) -> Result<usize> {
    let mut pending: Option<(i64, i64, i64)> = None;
    let mut sent = 0;
    loop {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        if let Some((reservation, first, last)) = pending.take() {
            answer(conn, shape, reservation, first, last)?;
        }
        let Some((first, last)) = take(conn, shape)? else {
            conn.execute_batch("COMMIT")?;
            return Ok(sent);
        };
        let n = last - first + 1;
        conn.execute("INSERT INTO reservations (created_at, units) VALUES (?1, ?2)", params![NOW, n])?;
        let reservation = conn.last_insert_rowid();
        conn.execute("INSERT INTO in_flight VALUES (?1, ?2, ?3, 1)", params![first, last, reservation])?;
        conn.execute("UPDATE budget_usage SET used = used + ?1 WHERE rule = 'indexnow'", [n])?;
        // The claim is durable before its request goes: FULL, an fsync.
        conn.execute_batch("COMMIT")?;
        sent += n as usize;
        pending = Some((reservation, first, last));
    }
}

/// The next due run of ids, at most a request's worth. The prototype's
/// rows admit in runs of consecutive ids, so a claim is one run.
fn take(conn: &Connection, shape: Shape) -> Result<Option<(i64, i64)>> {
    match shape {
        Shape::Items => {
            let ids: Vec<i64> = conn
                .prepare_cached(
                    "SELECT id FROM items WHERE group_id = 1 AND state = 'queued' AND next_attempt_at <= ?1
                     ORDER BY next_attempt_at, id LIMIT ?2",
                )?
                .query_map(params![NOW, BATCH as i64], |r| r.get(0))?
                .collect::<Result<_>>()?;
            Ok((!ids.is_empty()).then(|| (ids[0], ids[ids.len() - 1])))
        }
        Shape::Batches => {
            let span: Option<(i64, i64)> = conn
                .prepare_cached(
                    "SELECT first, last FROM spans WHERE group_id = 1 AND state = 'queued' AND next_attempt_at <= ?1
                     ORDER BY next_attempt_at, first LIMIT 1",
                )?
                .query_row([NOW], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            let Some((first, last)) = span else { return Ok(None) };
            if last - first + 1 > BATCH as i64 {
                // The claim cuts the span at the request's size.
                let cut = first + BATCH as i64 - 1;
                conn.execute(
                    "INSERT INTO spans (first, last, group_id, state, next_attempt_at)
                     SELECT ?2 + 1, last, group_id, state, next_attempt_at FROM spans WHERE first = ?1",
                    params![first, cut],
                )?;
                conn.execute("UPDATE spans SET last = ?2 WHERE first = ?1", params![first, cut])?;
                return Ok(Some((first, cut)));
            }
            Ok(Some((first, last)))
        }
    }
}

fn answer(conn: &Connection, shape: Shape, reservation: i64, first: i64, last: i64) -> Result<()> {
    conn.execute(
        "INSERT INTO requests (group_id, at, class, n, first_item, last_item) VALUES (1, ?1, 'accepted', ?2, ?3, ?4)",
        params![NOW, last - first + 1, first, last],
    )?;
    let request = conn.last_insert_rowid();
    let sql = match shape {
        Shape::Items => {
            "UPDATE OR FAIL items SET state = 'accepted', attempts = attempts + 1, last_class = 'accepted', accepted_at = ?3,
             streak = 0, last_request_id = ?4 WHERE id BETWEEN ?1 AND ?2"
        }
        Shape::Batches => {
            "UPDATE OR FAIL spans SET state = 'accepted', attempts = attempts + 1, last_class = 'accepted', accepted_at = ?3,
             streak = 0, last_request_id = ?4 WHERE first BETWEEN ?1 AND ?2"
        }
    };
    conn.execute(sql, params![first, last, NOW, request])?;
    conn.execute("DELETE FROM in_flight WHERE reservation_id = ?1", [reservation])?;
    conn.execute("DELETE FROM reservations WHERE id = ?1", [reservation])?;
    conn.execute("UPDATE groups SET queued = queued - ?1, accepted = accepted + ?1 WHERE id = 1", [last - first + 1])?;
    Ok(())
}

/// Schema 11's items into batches, spans and hash tiers, in one
/// transaction: batches cut at a change of group, a gap in the ids and
/// every `BATCH`; spans at every change of state. (One group here.)
fn migrate(conn: &Connection) -> Result<usize> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    conn.execute_batch(BATCHES)?;
    let mut read = conn.prepare(
        "SELECT id, url, state, next_attempt_at, attempts, last_class, accepted_at, last_request_id
         FROM items ORDER BY id",
    )?;
    type State = (String, Option<i64>, i64, Option<String>, Option<i64>, Option<i64>);
    let mut rows = read.query([])?;
    let mut batch: Vec<(i64, String)> = Vec::with_capacity(BATCH);
    let mut span: Option<(i64, i64, State)> = None;
    let mut moved = 0;
    let flush_span = |s: &(i64, i64, State)| -> Result<()> {
        let (first, last, st) = s;
        conn.prepare_cached(
            "INSERT INTO spans (first, last, group_id, state, next_attempt_at, attempts, last_class, accepted_at,
             last_request_id) VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?
        .execute(params![first, last, st.0, st.1, st.2, st.3, st.4, st.5])?;
        Ok(())
    };
    while let Some(r) = rows.next()? {
        let id: i64 = r.get(0)?;
        let st: State = (r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?);
        if batch.len() == BATCH || batch.last().is_some_and(|(last, _)| *last + 1 != id) {
            write_batch(conn, &batch)?;
            batch.clear();
        }
        batch.push((id, r.get(1)?));
        match &mut span {
            Some((_, last, s)) if *last + 1 == id && *s == st => *last = id,
            _ => {
                if let Some(s) = span.take() {
                    flush_span(&s)?;
                }
                span = Some((id, id, st));
            }
        }
        moved += 1;
    }
    write_batch(conn, &batch)?;
    if let Some(s) = span.take() {
        flush_span(&s)?;
    }
    drop(rows);
    drop(read);
    conn.execute_batch("DROP TABLE items; COMMIT")?;
    Ok(moved)
}

fn write_batch(conn: &Connection, batch: &[(i64, String)]) -> Result<()> {
    let Some(&(first, _)) = batch.first() else { return Ok(()) };
    let mut texts = Vec::new();
    let mut ends = Vec::new();
    let mut hashes = Vec::with_capacity(batch.len());
    for (p, (_, u)) in batch.iter().enumerate() {
        texts.extend_from_slice(u.as_bytes());
        ends.extend_from_slice(&(texts.len() as u32).to_le_bytes());
        hashes.push((xxh3_128(u.as_bytes()), p as u32));
    }
    ends.extend_from_slice(&texts);
    hashes.sort_unstable();
    let mut blob = Vec::with_capacity(hashes.len() * PLACED);
    for (h, p) in hashes {
        blob.extend_from_slice(&h.to_be_bytes());
        blob.extend_from_slice(&p.to_le_bytes());
    }
    conn.prepare_cached("INSERT INTO batches VALUES (?1, 1, ?2, ?3, ?4, ?5)")?.execute(params![
        first,
        batch.len() as i64,
        NOW,
        blob,
        ends
    ])?;
    conn.prepare_cached("INSERT INTO level0 VALUES (?1, 1)")?.execute([first])?;
    merge(conn)
}

/// This process's bytes written (`wchar`: what it handed to write calls)
/// and peak RSS (kB).
fn io_and_rss() -> (u64, u64) {
    let field = |file: &str, name: &str| -> u64 {
        std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().trim_end_matches(" kB").parse().unwrap_or(0)))
            .unwrap_or(0)
    };
    (field("/proc/self/io", "wchar:"), field("/proc/self/status", "VmHWM:"))
}

/// One row of one shape, in this process: prints `ms bytes rss urls`.
fn run(shape: Shape, held: bool, row: &str, db: &str) -> Result<()> {
    let start = Instant::now();
    let conn = open(db)?;
    conn.execute_batch(COMMON)?;
    let urls: Vec<String> = match row {
        "fresh-100k" | "again-100k" => (0..100_000).map(url).collect(),
        "fresh-1m" => (0..1_000_000).map(url).collect(),
        // 25 of the 1M and 25 new.
        "small" => (0..25u64).map(|i| url(i * 39_989)).chain((0..25).map(|i| url(2_000_000 + i))).collect(),
        "migrate" => Vec::new(),
        other => panic!("no row {other}"),
    };
    let moved = if row == "migrate" {
        migrate(&conn)?
    } else {
        conn.execute_batch(if shape == Shape::Items { ITEMS } else { BATCHES })?;
        admit(&conn, shape, held, &urls)?;
        send_all(&conn, shape)?
    };
    drop(conn);
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let (bytes, rss) = io_and_rss();
    println!("{ms:.1} {bytes} {rss} {moved}");
    Ok(())
}

/// What one child reported, and its fsyncs.
#[derive(Clone, Copy, Default)]
struct Figures {
    ms: f64,
    bytes: f64,
    rss: f64,
    fsyncs: f64,
}

fn child(shape: &str, row: &str, db: &str, dir: &str) -> Figures {
    let trace = format!("{dir}/strace.txt");
    let me = std::env::current_exe().unwrap();
    let out = Command::new("strace")
        .args(["-f", "--seccomp-bpf", "-c", "-e", "trace=fsync,fdatasync", "-o", &trace])
        .arg(me)
        .args(["run", shape, row, db])
        .output()
        .expect("strace runs");
    assert!(out.status.success(), "{shape} {row}: {}", String::from_utf8_lossy(&out.stderr));
    let line = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = line.split_whitespace().map(|x| x.parse().unwrap()).collect();
    let fsyncs = std::fs::read_to_string(&trace)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.ends_with("fsync") || l.ends_with("fdatasync"))
        .map(|l| l.split_whitespace().nth(3).and_then(|c| c.parse::<f64>().ok()).unwrap_or(0.0))
        .fold(0.0, |a, c| a + c);
    Figures { ms: v[0], bytes: v[1], rss: v[2], fsyncs }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// The shapes measured: today's, per-batch, and per-batch with the
/// group's hashes held in memory while admissions hold the write lock.
const SHAPES: [&str; 3] = ["items", "batches", "held"];

fn compare(rounds: usize, dir: &str) {
    let rows = ["fresh-100k", "again-100k", "fresh-1m", "small"];
    // Per row: per round, each shape's figures; and the migration per round.
    let mut got: Vec<Vec<[Figures; 3]>> = vec![Vec::new(); rows.len()];
    let mut migrated: Vec<(Figures, f64)> = Vec::new();
    for round in 0..rounds {
        let db = |shape: &str, size: &str| format!("{dir}/{shape}-{size}.db");
        for shape in SHAPES {
            for size in ["100k", "1m"] {
                for ext in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{ext}", db(shape, size)));
                }
            }
        }
        for (r, row) in rows.iter().enumerate() {
            let size = if row.ends_with("100k") { "100k" } else { "1m" };
            // Rotate which shape goes first, round by round.
            let mut figures = [Figures::default(); 3];
            for k in 0..SHAPES.len() {
                let s = (k + round) % SHAPES.len();
                figures[s] = child(SHAPES[s], row, &db(SHAPES[s], size), dir);
            }
            got[r].push(figures);
        }
        // Today's 1M ledger (the small row added 25) into the new shape.
        let m = child("batches", "migrate", &db("items", "1m"), dir);
        migrated.push((m, m.ms / got[2][round][0].ms));
        eprintln!("round {} done", round + 1);
    }
    println!("| row | time / today's: per-batch, held | MB written: today's, per-batch, held | fsyncs: today's, per-batch, held | peak RSS MB: today's, per-batch, held | ms: per-batch, held |");
    println!("|---|---|---|---|---|---|");
    for (r, row) in rows.iter().enumerate() {
        let ratio = |s: usize| median(got[r].iter().map(|f| f[s].ms / f[0].ms).collect());
        let m = |s: usize, f: fn(&Figures) -> f64| median(got[r].iter().map(|g| f(&g[s])).collect());
        println!(
            "| {row} | {:.2}×, {:.2}× | {:.1}, {:.1}, {:.1} | {:.0}, {:.0}, {:.0} | {:.0}, {:.0}, {:.0} | {:.1}, {:.1} |",
            ratio(1),
            ratio(2),
            m(0, |f| f.bytes) / 1e6,
            m(1, |f| f.bytes) / 1e6,
            m(2, |f| f.bytes) / 1e6,
            m(0, |f| f.fsyncs),
            m(1, |f| f.fsyncs),
            m(2, |f| f.fsyncs),
            m(0, |f| f.rss) / 1e3,
            m(1, |f| f.rss) / 1e3,
            m(2, |f| f.rss) / 1e3,
            m(1, |f| f.ms),
            m(2, |f| f.ms),
        );
    }
    println!(
        "| migrate 1M (today's ledger into the per-batch shape) | {:.2}× today's fresh 1M | {:.1} | {:.0} | {:.0} | {:.0} |",
        median(migrated.iter().map(|m| m.1).collect()),
        median(migrated.iter().map(|m| m.0.bytes).collect()) / 1e6,
        median(migrated.iter().map(|m| m.0.fsyncs).collect()),
        median(migrated.iter().map(|m| m.0.rss).collect()) / 1e3,
        median(migrated.iter().map(|m| m.0.ms).collect()),
    );
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") => {
            let shape = if args[1] == "items" { Shape::Items } else { Shape::Batches };
            run(shape, args[1] == "held", &args[2], &args[3])
        }
        Some("compare") => {
            let rounds = args.get(1).map_or(3, |r| r.parse().expect("ROUNDS is a number"));
            let dir =
                args.get(2).cloned().unwrap_or_else(|| std::env::temp_dir().join("batch-ledger").display().to_string());
            std::fs::create_dir_all(&dir).expect("DIR can be made");
            compare(rounds, &dir);
            Ok(())
        }
        _ => {
            eprintln!("usage: batch-ledger compare [ROUNDS] [DIR] | batch-ledger run items|batches|held ROW DB");
            std::process::exit(2)
        }
    }
}
