//! The one way state is written on SQLite (issue 48; docs/design.md, *A
//! ledger per batch*): the spans hold the items' state columns, and every
//! write of state is a write of spans. For each run of consecutive ids a
//! write names, the spans are cut at the run's two ends (a span reaching
//! over an end becomes two with the same columns), the write's own `SET`
//! expressions run over the spans inside the run (a row a span, not an
//! item), and alike neighbours across the run are merged again, so that no
//! two adjacent spans of one group are ever alike.

use super::super::Result;
use super::IdRuns;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, ToSql};

/// The columns a span keeps, in `spans`' order after `group_id`: the
/// items' state.
pub(super) const SPAN_COLUMNS: &str = "state, next_attempt_at, enqueued_at, attempts, last_class, streak, \
     streak_started_at, accepted_at, parked_fingerprint, last_request_id";

/// How many columns `SPAN_COLUMNS` names.
const SPAN_WIDTH: usize = 10;

/// Cuts the span holding `at` in two, if it starts before `at`: it ends at
/// `at - 1`, and a span of the same group and columns holds the rest.
pub(super) fn cut_at(tx: &Connection, at: i64) -> Result<()> {
    let reaching: Option<i64> = tx
        .prepare_cached(
            "SELECT first FROM spans WHERE first = (SELECT max(first) FROM spans WHERE first < ?1) AND last >= ?1",
        )?
        .query_row([at], |r| r.get(0))
        .optional()?;
    if let Some(first) = reaching {
        tx.prepare_cached(&format!(
            "INSERT OR FAIL INTO spans (first, last, group_id, {SPAN_COLUMNS})
             SELECT ?2, last, group_id, {SPAN_COLUMNS} FROM spans WHERE first = ?1"
        ))?
        .execute([first, at])?;
        tx.prepare_cached("UPDATE spans SET last = ?2 WHERE first = ?1")?.execute([first, at - 1])?;
    }
    Ok(())
}

/// Merges alike neighbours among the spans from the one holding `from - 1`
/// to the one starting at `to + 1`: two spans are made one where the first
/// ends just before the second starts, of one group, with equal columns
/// (a NULL equal to a NULL, as `IS` compares).
pub(super) fn merge_over(tx: &Connection, from: i64, to: i64) -> Result<()> {
    let start: i64 = tx
        .prepare_cached("SELECT first FROM spans WHERE first = (SELECT max(first) FROM spans WHERE first < ?1)")?
        .query_row([from], |r| r.get(0))
        .optional()?
        .unwrap_or(from);
    let mut read = tx.prepare_cached(&format!(
        "SELECT first, last, group_id, {SPAN_COLUMNS} FROM spans WHERE first BETWEEN ?1 AND ?2 ORDER BY first"
    ))?;
    let spans: Vec<(i64, i64, i64, Vec<Value>)> = read
        .query_map([start, to.saturating_add(1)], |r| {
            let columns = (3..3 + SPAN_WIDTH).map(|k| r.get::<_, Value>(k)).collect::<rusqlite::Result<_>>()?;
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, columns))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut spans = spans.into_iter();
    let Some(mut current) = spans.next() else { return Ok(()) };
    let mut grown = false;
    for next in spans {
        if current.1 + 1 == next.0 && current.2 == next.2 && current.3 == next.3 {
            tx.prepare_cached("DELETE FROM spans WHERE first = ?1")?.execute([next.0])?;
            current.1 = next.1;
            grown = true;
            continue;
        }
        if grown {
            tx.prepare_cached("UPDATE spans SET last = ?2 WHERE first = ?1")?.execute([current.0, current.1])?;
        }
        current = next;
        grown = false;
    }
    if grown {
        tx.prepare_cached("UPDATE spans SET last = ?2 WHERE first = ?1")?.execute([current.0, current.1])?;
    }
    Ok(())
}

/// Writes `set` (an `UPDATE`'s assignments over `SPAN_COLUMNS`, its
/// parameters `params`, `?1` on) to the spans of each run of `ids` that
/// `filter` (a condition over the same columns, or empty) holds: the
/// spans cut at each run's ends, updated a row a span, and merged again
/// over the run. Returns how many ids the updated spans hold.
pub(super) fn write(tx: &Connection, set: &str, filter: &str, params: &[&dyn ToSql], ids: &IdRuns) -> Result<u64> {
    let next = params.len() + 1;
    let filter = if filter.is_empty() { String::new() } else { format!(" AND ({filter})") };
    let sql = format!(
        "UPDATE OR FAIL spans SET {set} WHERE first BETWEEN ?{next} AND ?{}{filter} RETURNING last - first + 1",
        next + 1
    );
    let mut written = 0u64;
    for &(first, last) in &ids.0 {
        cut_at(tx, first)?;
        cut_at(tx, last + 1)?;
        let all: Vec<&dyn ToSql> = params.iter().copied().chain([&first as &dyn ToSql, &last]).collect();
        let mut stmt = tx.prepare_cached(&sql)?;
        let mut rows = stmt.query(&*all)?;
        while let Some(r) = rows.next()? {
            written += r.get::<_, i64>(0)? as u64;
        }
        drop(rows);
        merge_over(tx, first, last)?;
    }
    Ok(written)
}

/// `write` to the spans `filter` holds over a group's spans, whole: `set`
/// runs once over them, and each is merged with its neighbours. `filter`
/// names its own parameters among `params`. Returns each written span's
/// first and last ids.
pub(super) fn write_where(tx: &Connection, set: &str, filter: &str, params: &[&dyn ToSql]) -> Result<Vec<(i64, i64)>> {
    let written: Vec<(i64, i64)> = tx
        .prepare_cached(&format!("UPDATE OR FAIL spans SET {set} WHERE {filter} RETURNING first, last"))?
        .query_map(params, |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for &(first, last) in &written {
        merge_over(tx, first, last)?;
    }
    Ok(written)
}

/// Runs `update` (an `UPDATE spans … WHERE` that names the spans by their
/// first id, one of `ids`) with each of `ids` (distinct, ascending) in a
/// span of its own: for writes whose values differ item by item. The
/// spans are cut around each id first and merged over each run of them
/// after.
pub(super) fn write_apart(tx: &Connection, ids: &[i64], update: &str, params: &[&dyn ToSql]) -> Result<()> {
    for &id in ids {
        cut_at(tx, id)?;
        cut_at(tx, id + 1)?;
    }
    tx.prepare_cached(update)?.execute(params)?;
    for &(first, last) in &IdRuns::of(ids).0 {
        merge_over(tx, first, last)?;
    }
    Ok(())
}

/// Deletes the spans of each run of `ids`, cut at the run's ends first.
pub(super) fn delete(tx: &Connection, ids: &IdRuns) -> Result<()> {
    for &(first, last) in &ids.0 {
        cut_at(tx, first)?;
        cut_at(tx, last + 1)?;
        tx.prepare_cached("DELETE FROM spans WHERE first BETWEEN ?1 AND ?2")?.execute([first, last])?;
    }
    Ok(())
}

/// The span holding each id asked, read by run: an id in the span last
/// read is answered from it, another one seeks the span holding it (ids
/// asked in ascending order read each span once).
pub(super) struct Cursor<'c> {
    seek: rusqlite::CachedStatement<'c>,
    span: Option<(i64, i64, SpanState)>,
}

impl<'c> Cursor<'c> {
    pub(super) fn new(conn: &'c Connection) -> Result<Cursor<'c>> {
        let seek = conn.prepare_cached(&format!(
            "SELECT first, last, group_id, {SPAN_COLUMNS} FROM spans
             WHERE first = (SELECT max(first) FROM spans WHERE first <= ?1) AND last >= ?1"
        ))?;
        Ok(Cursor { seek, span: None })
    }

    /// The group and state of the span holding `id`; `None` if none does.
    pub(super) fn at(&mut self, id: i64) -> Result<Option<&SpanState>> {
        if !matches!(&self.span, Some((first, last, _)) if *first <= id && id <= *last) {
            self.span = self.seek.query_row([id], |r| Ok((r.get(0)?, r.get(1)?, SpanState::read(r, 2)?))).optional()?;
        }
        Ok(self.span.as_ref().map(|(_, _, s)| s))
    }
}

/// The state of each of `ids`, as the span holding it says; `None` for an
/// id no span holds.
#[cfg(test)]
pub(super) fn states(conn: &Connection, ids: &[i64]) -> Result<Vec<Option<SpanState>>> {
    let mut cursor = Cursor::new(conn)?;
    ids.iter().map(|&id| Ok(cursor.at(id)?.cloned())).collect()
}

/// Whether a span holds item `id` (an item no span holds was dropped, or
/// never taken): one seek on the spans' key.
pub(super) fn holds(conn: &Connection, id: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM spans WHERE first = (SELECT max(first) FROM spans WHERE first <= ?1)
                 AND last >= ?1)",
        )?
        .query_row([id], |r| r.get(0))?)
}

/// A span's group and state columns, as `states` reads them.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SpanState {
    pub group: i64,
    pub state: String,
    pub next_attempt_at: Option<i64>,
    pub enqueued_at: i64,
    pub attempts: i64,
    pub last_class: Option<String>,
    pub streak: i64,
    pub streak_started_at: Option<i64>,
    pub accepted_at: Option<i64>,
    pub parked_fingerprint: Option<String>,
    pub last_request_id: Option<i64>,
}

impl SpanState {
    pub(super) fn read(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<SpanState> {
        Ok(SpanState {
            group: r.get(at)?,
            state: r.get(at + 1)?,
            next_attempt_at: r.get(at + 2)?,
            enqueued_at: r.get(at + 3)?,
            attempts: r.get(at + 4)?,
            last_class: r.get(at + 5)?,
            streak: r.get(at + 6)?,
            streak_started_at: r.get(at + 7)?,
            accepted_at: r.get(at + 8)?,
            parked_fingerprint: r.get(at + 9)?,
            last_request_id: r.get(at + 10)?,
        })
    }
}

/// Sets `set` on the spans of `first` to `last` (a test's way to put
/// items in a state, by the one primitive every write uses).
#[cfg(test)]
pub(super) fn set_state(conn: &Connection, first: i64, last: i64, set: &str) -> Result<u64> {
    write(conn, set, "", &[], &IdRuns(vec![(first, last)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bare `spans` table (schema 12's) with the spans `(first, last,
    /// group, state)`, every other column its default.
    fn spans(list: &[(i64, i64, i64, &str)]) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE spans (first INTEGER PRIMARY KEY, last INTEGER NOT NULL, group_id INTEGER NOT NULL,
                 state TEXT NOT NULL, next_attempt_at INTEGER, enqueued_at INTEGER NOT NULL,
                 attempts INTEGER NOT NULL DEFAULT 0, last_class TEXT, streak INTEGER NOT NULL DEFAULT 0,
                 streak_started_at INTEGER, accepted_at INTEGER, parked_fingerprint TEXT, last_request_id INTEGER)",
        )
        .unwrap();
        for &(first, last, group, state) in list {
            conn.execute(
                "INSERT INTO spans (first, last, group_id, state, enqueued_at) VALUES (?1, ?2, ?3, ?4, 0)",
                rusqlite::params![first, last, group, state],
            )
            .unwrap();
        }
        conn
    }

    fn read(conn: &Connection) -> Vec<(i64, i64, i64, String, i64)> {
        conn.prepare("SELECT first, last, group_id, state, attempts FROM spans ORDER BY first")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    fn q(first: i64, last: i64, group: i64, state: &str, attempts: i64) -> (i64, i64, i64, String, i64) {
        (first, last, group, state.to_string(), attempts)
    }

    #[test]
    fn a_write_inside_a_span_cuts_it_in_three() {
        let conn = spans(&[(1, 10, 1, "queued")]);
        let n = write(&conn, "attempts = attempts + 1", "", &[], &IdRuns(vec![(4, 6)])).unwrap();
        assert_eq!(n, 3);
        assert_eq!(read(&conn), [q(1, 3, 1, "queued", 0), q(4, 6, 1, "queued", 1), q(7, 10, 1, "queued", 0)]);
    }

    #[test]
    fn a_write_that_makes_neighbours_alike_merges_them() {
        let conn = spans(&[(1, 3, 1, "queued"), (4, 6, 1, "parked"), (7, 10, 1, "queued")]);
        write(&conn, "state = ?1", "", &[&"queued"], &IdRuns(vec![(4, 6)])).unwrap();
        assert_eq!(read(&conn), [q(1, 10, 1, "queued", 0)]);
    }

    #[test]
    fn neighbours_of_two_groups_or_across_a_gap_are_not_merged() {
        let conn = spans(&[(1, 3, 1, "queued"), (4, 6, 2, "parked"), (8, 10, 2, "queued")]);
        write(&conn, "state = 'queued'", "", &[], &IdRuns(vec![(4, 6)])).unwrap();
        assert_eq!(read(&conn), [q(1, 3, 1, "queued", 0), q(4, 6, 2, "queued", 0), q(8, 10, 2, "queued", 0)]);
    }

    #[test]
    fn a_filter_leaves_the_spans_it_does_not_hold_and_they_merge_back() {
        let conn = spans(&[(1, 5, 1, "queued"), (6, 8, 1, "parked"), (9, 12, 1, "queued")]);
        let n = write(&conn, "state = 'accepted'", "state = 'parked'", &[], &IdRuns(vec![(3, 10)])).unwrap();
        assert_eq!(n, 3);
        assert_eq!(read(&conn), [q(1, 5, 1, "queued", 0), q(6, 8, 1, "accepted", 0), q(9, 12, 1, "queued", 0)]);
        let n = write(&conn, "attempts = 1", "state = 'parked'", &[], &IdRuns(vec![(2, 11)])).unwrap();
        assert_eq!(n, 0);
        assert_eq!(read(&conn).len(), 3, "the cuts of a write that changed nothing are merged again");
    }

    #[test]
    fn each_span_of_a_run_runs_the_expressions_on_its_own_columns() {
        let conn = spans(&[(1, 2, 1, "queued"), (3, 4, 1, "parked")]);
        conn.execute("UPDATE spans SET attempts = 5 WHERE first = 3", []).unwrap();
        write(&conn, "attempts = attempts + 1, state = 'queued'", "", &[], &IdRuns(vec![(1, 4)])).unwrap();
        assert_eq!(read(&conn), [q(1, 2, 1, "queued", 1), q(3, 4, 1, "queued", 6)]);
        write(&conn, "attempts = 7", "", &[], &IdRuns(vec![(2, 2), (4, 4)])).unwrap();
        assert_eq!(
            read(&conn),
            [q(1, 1, 1, "queued", 1), q(2, 2, 1, "queued", 7), q(3, 3, 1, "queued", 6), q(4, 4, 1, "queued", 7)]
        );
    }

    #[test]
    fn a_whole_span_write_merges_around_each() {
        let conn = spans(&[(1, 3, 1, "queued"), (4, 4, 1, "parked"), (5, 6, 1, "queued"), (7, 7, 1, "parked")]);
        let written = write_where(&conn, "state = 'queued'", "state = 'parked' AND group_id = ?1", &[&1]).unwrap();
        assert_eq!(written, [(4, 4), (7, 7)]);
        assert_eq!(read(&conn), [q(1, 7, 1, "queued", 0)]);
    }

    #[test]
    fn a_delete_cuts_and_leaves_the_rest() {
        let conn = spans(&[(1, 10, 1, "queued")]);
        delete(&conn, &IdRuns(vec![(3, 4), (10, 10)])).unwrap();
        assert_eq!(read(&conn), [q(1, 2, 1, "queued", 0), q(5, 9, 1, "queued", 0)]);
    }

    #[test]
    fn the_states_of_ids_are_their_spans() {
        let conn = spans(&[(1, 3, 1, "queued"), (4, 4, 1, "parked"), (8, 9, 2, "accepted")]);
        let states = states(&conn, &[1, 3, 4, 5, 8, 9]).unwrap();
        let said: Vec<Option<(i64, String)>> = states.into_iter().map(|s| s.map(|s| (s.group, s.state))).collect();
        let s = |g: i64, st: &str| Some((g, st.to_string()));
        assert_eq!(said, [s(1, "queued"), s(1, "queued"), s(1, "parked"), None, s(2, "accepted"), s(2, "accepted")]);
    }
}
