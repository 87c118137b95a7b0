//! The results of one `submit` run: one row per (URL, engine, target) the
//! run touched and per bad input line, plus the dry run's plan. They live in
//! a private temporary SQLite database (deleted when the run ends), so a run
//! of a million URLs keeps flat memory and the report is streamed from it.
//! This is report data, not the ledger: nothing here survives the run.

use crate::ledger::GroupKey;
use crate::model::{EngineKind, Outcome};
use crate::report::{Planned, ResultEntry};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rusqlite::{params, Connection, Row};
use std::collections::BTreeMap;
use std::str::FromStr;

/// Writes between commits.
const COMMIT_EVERY: usize = 10_000;

/// What a result is about: a ledger item, or an input line that never became one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Item(i64),
    Line(u64),
}

impl Key {
    fn text(self) -> String {
        match self {
            Key::Item(id) => format!("i{id}"),
            Key::Line(n) => format!("l{n}"),
        }
    }
}

/// Results of one reason within a group, for the human report.
#[derive(Debug, Clone)]
pub struct Aggregate {
    pub group: GroupKey,
    pub outcome: Outcome,
    pub reason: String,
    pub count: u64,
    pub message: String,
    pub hint: Option<String>,
    pub next_retry: Option<(DateTime<Utc>, Tz)>,
}

pub struct Results {
    conn: Connection,
    seq: i64,
    pending: usize,
    lines: u64,
}

const COLUMNS: &str = "url, property, engine, endpoint, outcome, reason, message, hint, http_status, retry_ms, retry_tz, attempts, source";

fn entry_row(r: &Row<'_>) -> rusqlite::Result<ResultEntry> {
    let engine: Option<String> = r.get(2)?;
    let outcome: String = r.get(4)?;
    let property: Option<String> = r.get(1)?;
    let endpoint: Option<String> = r.get::<_, Option<String>>(3)?.filter(|e| !e.is_empty());
    let retry_ms: Option<i64> = r.get(9)?;
    let retry_tz: Option<String> = r.get(10)?;
    let engine = engine.and_then(|e| EngineKind::from_str(&e).ok());
    Ok(ResultEntry {
        url: r.get(0)?,
        property,
        engine,
        endpoint,
        outcome: Outcome::from_str(&outcome).unwrap_or(Outcome::Invalid),
        reason: r.get(5)?,
        message: r.get(6)?,
        hint: r.get(7)?,
        http_status: r.get(8)?,
        retry_at: None,
        retry_after_secs: None,
        attempts: r.get(11)?,
        source: r.get(12)?,
        retry: retry_ms
            .and_then(DateTime::from_timestamp_millis)
            .map(|t| (t, retry_tz.and_then(|z| z.parse().ok()).unwrap_or(Tz::UTC))),
    })
}

impl Results {
    pub fn new() -> rusqlite::Result<Results> {
        // An empty name: a private, temporary, on-disk database.
        let conn = Connection::open("")?;
        conn.execute_batch(
            "PRAGMA journal_mode = OFF;
             PRAGMA synchronous = OFF;
             CREATE TABLE results (
                 key TEXT PRIMARY KEY, seq INTEGER NOT NULL,
                 url TEXT NOT NULL, property TEXT, engine TEXT, endpoint TEXT,
                 outcome TEXT NOT NULL, reason TEXT NOT NULL, message TEXT NOT NULL, hint TEXT,
                 http_status INTEGER, retry_ms INTEGER, retry_tz TEXT, attempts INTEGER NOT NULL, source TEXT
             );
             CREATE INDEX results_seq ON results (seq);
             CREATE INDEX results_group ON results (property, engine, endpoint, outcome, reason, seq);
             CREATE TABLE plan (seq INTEGER PRIMARY KEY, url TEXT NOT NULL, property TEXT NOT NULL,
                                engine TEXT NOT NULL, endpoint TEXT);
             BEGIN;",
        )?;
        Ok(Results { conn, seq: 0, pending: 0, lines: 0 })
    }

    fn wrote(&mut self) -> rusqlite::Result<()> {
        self.pending += 1;
        if self.pending >= COMMIT_EVERY {
            self.conn.execute_batch("COMMIT; BEGIN;")?;
            self.pending = 0;
        }
        Ok(())
    }

    /// A key for a bad input line.
    pub fn line_key(&mut self) -> Key {
        self.lines += 1;
        Key::Line(self.lines)
    }

    /// Records (or replaces) the result for `key`; its place in the report
    /// is where the key first appeared, and its attempts never go down.
    pub fn put(&mut self, key: Key, e: &ResultEntry) -> rusqlite::Result<()> {
        self.seq += 1;
        self.conn
            .prepare_cached(&format!(
                "INSERT INTO results (key, seq, {COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
                 ON CONFLICT (key) DO UPDATE SET
                     url = excluded.url, property = excluded.property, engine = excluded.engine,
                     endpoint = excluded.endpoint, outcome = excluded.outcome, reason = excluded.reason,
                     message = excluded.message, hint = excluded.hint, http_status = excluded.http_status,
                     retry_ms = excluded.retry_ms, retry_tz = excluded.retry_tz,
                     attempts = MAX(attempts, excluded.attempts), source = excluded.source"
            ))?
            .execute(params![
                key.text(),
                self.seq,
                e.url,
                e.property,
                e.engine.map(|x| x.as_str()),
                e.endpoint.as_deref().unwrap_or(""),
                e.outcome.as_str(),
                e.reason,
                e.message,
                e.hint,
                e.http_status,
                e.retry.map(|(t, _)| t.timestamp_millis()),
                e.retry.map(|(_, tz)| tz.name().to_string()),
                e.attempts,
                e.source,
            ])?;
        self.wrote()
    }

    /// Records a URL a dry run would send now.
    pub fn plan(&mut self, p: &Planned) -> rusqlite::Result<()> {
        self.conn
            .prepare_cached("INSERT INTO plan (url, property, engine, endpoint) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![p.url, p.property, p.engine.as_str(), p.endpoint.as_deref().unwrap_or("")])?;
        self.wrote()
    }

    /// Counts per outcome, every outcome present.
    pub fn summary(&self) -> rusqlite::Result<BTreeMap<&'static str, u64>> {
        let mut counts: BTreeMap<&'static str, u64> = Outcome::ALL.iter().map(|o| (o.as_str(), 0)).collect();
        let mut stmt = self.conn.prepare("SELECT outcome, COUNT(*) FROM results GROUP BY outcome")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        for row in rows {
            let (outcome, n) = row?;
            if let Ok(o) = Outcome::from_str(&outcome) {
                counts.insert(o.as_str(), n as u64);
            }
        }
        Ok(counts)
    }

    /// Every result, in the order the run first met them.
    pub fn each(&self, mut f: impl FnMut(ResultEntry) -> std::io::Result<()>) -> anyhow::Result<()> {
        let mut stmt = self.conn.prepare(&format!("SELECT {COLUMNS} FROM results ORDER BY seq"))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            f(entry_row(row)?)?;
        }
        Ok(())
    }

    /// Results with one of these outcomes, in order.
    pub fn each_with(
        &self,
        outcome: Outcome,
        mut f: impl FnMut(ResultEntry) -> std::io::Result<()>,
    ) -> anyhow::Result<()> {
        let mut stmt = self.conn.prepare(&format!("SELECT {COLUMNS} FROM results WHERE outcome = ?1 ORDER BY seq"))?;
        let mut rows = stmt.query([outcome.as_str()])?;
        while let Some(row) = rows.next()? {
            f(entry_row(row)?)?;
        }
        Ok(())
    }

    /// Every planned URL, in order.
    pub fn each_planned(&self, mut f: impl FnMut(Planned) -> std::io::Result<()>) -> anyhow::Result<()> {
        let mut stmt = self.conn.prepare("SELECT url, property, engine, endpoint FROM plan ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let engine: String = r.get(2)?;
            let group = GroupKey {
                property: r.get(1)?,
                engine: EngineKind::from_str(&engine).unwrap_or(EngineKind::IndexNow),
                target: r.get(3)?,
            };
            f(Planned::new(&r.get::<_, String>(0)?, &group))?;
        }
        Ok(())
    }

    /// Deferred results per engine.
    pub fn deferred_per_engine(&self) -> rusqlite::Result<BTreeMap<EngineKind, u64>> {
        let mut stmt = self.conn.prepare(
            "SELECT engine, COUNT(*) FROM results WHERE outcome = 'deferred' AND engine IS NOT NULL GROUP BY engine",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        let mut out = BTreeMap::new();
        for row in rows {
            let (engine, n) = row?;
            if let Ok(e) = EngineKind::from_str(&engine) {
                out.insert(e, n as u64);
            }
        }
        Ok(out)
    }

    /// Planned URLs per group.
    pub fn planned_counts(&self) -> rusqlite::Result<Vec<(GroupKey, u64)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT property, engine, endpoint, COUNT(*) FROM plan GROUP BY 1, 2, 3 ORDER BY 1, 2, 3")?;
        let rows = stmt.query_map([], |r| {
            let engine: String = r.get(1)?;
            Ok((
                GroupKey {
                    property: r.get(0)?,
                    engine: EngineKind::from_str(&engine).unwrap_or(EngineKind::IndexNow),
                    target: r.get(2)?,
                },
                r.get::<_, i64>(3)? as u64,
            ))
        })?;
        rows.collect()
    }

    /// Per group, outcome and reason: how many, the first message and hint,
    /// and the earliest retry.
    pub fn aggregates(&self) -> anyhow::Result<Vec<Aggregate>> {
        let mut stmt = self.conn.prepare(
            "SELECT property, engine, endpoint, outcome, reason, COUNT(*),
                    (SELECT message FROM results r2 WHERE r2.property = r.property AND r2.engine = r.engine
                        AND r2.endpoint = r.endpoint AND r2.outcome = r.outcome
                        AND r2.reason = r.reason ORDER BY seq LIMIT 1),
                    (SELECT hint FROM results r2 WHERE r2.property = r.property AND r2.engine = r.engine
                        AND r2.endpoint = r.endpoint AND r2.outcome = r.outcome
                        AND r2.reason = r.reason ORDER BY seq LIMIT 1),
                    MIN(retry_ms),
                    (SELECT retry_tz FROM results r2 WHERE r2.property = r.property AND r2.engine = r.engine
                        AND r2.endpoint = r.endpoint AND r2.outcome = r.outcome
                        AND r2.reason = r.reason AND r2.retry_ms IS NOT NULL ORDER BY retry_ms LIMIT 1)
             FROM results r WHERE property IS NOT NULL AND engine IS NOT NULL
             GROUP BY property, engine, endpoint, outcome, reason
             ORDER BY property, engine, endpoint, MIN(seq)",
        )?;
        let rows = stmt.query_map([], |r| {
            let engine: String = r.get(1)?;
            let outcome: String = r.get(3)?;
            let retry_ms: Option<i64> = r.get(8)?;
            let retry_tz: Option<String> = r.get(9)?;
            Ok(Aggregate {
                group: GroupKey {
                    property: r.get(0)?,
                    engine: EngineKind::from_str(&engine).unwrap_or(EngineKind::IndexNow),
                    target: r.get(2)?,
                },
                outcome: Outcome::from_str(&outcome).unwrap_or(Outcome::Invalid),
                reason: r.get(4)?,
                count: r.get::<_, i64>(5)? as u64,
                message: r.get(6)?,
                hint: r.get(7)?,
                next_retry: retry_ms
                    .and_then(DateTime::from_timestamp_millis)
                    .map(|t| (t, retry_tz.and_then(|z| z.parse().ok()).unwrap_or(Tz::UTC))),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
