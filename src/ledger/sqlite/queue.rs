//! The queue on SQLite: counts (kept per group), lists, `queue retry` and
//! `queue drop`, and what is parked.

use super::{
    counted, from_ts, group_id, insert_rows, opt_ts, params, policy, recount, stored, stored_group, stored_last_reason,
    stored_opt, ts, url_key, Connection, DateTime, GroupKey, HashMap, ItemFilter, ItemRow, ItemState, NoticeClaim,
    OptionalExtension, ParkedGroup, Queue, QueueCounts, Rc, Reason, Result, SqliteLedger, StateFilter, Utc, Value,
};
#[cfg(test)]
use crate::ledger::sql::ITEM_COLUMNS;

/// An item's row as `ITEM_COLUMNS` reads it (the tests' oracles).
#[cfg(test)]
pub(super) fn item_row(r: &super::Row<'_>) -> Result<ItemRow> {
    let engine: String = r.get(3)?;
    let state: String = r.get(5)?;
    let last_class: Option<String> = r.get(8)?;
    Ok(ItemRow {
        id: r.get(0)?,
        url: r.get(1)?,
        group: stored_group(r.get(2)?, &engine, r.get(4)?, &r.get::<_, String>(14)?)?,
        state: stored("items", "state", &state)?,
        next_attempt_at: opt_ts(r.get(6)?),
        attempts: r.get(7)?,
        last_class: stored_opt("items", "last_class", last_class.as_deref())?,
        last_reason: stored_last_reason(
            r.get::<_, Option<String>>(13)?.as_deref(),
            r.get::<_, Option<String>>(9)?.as_deref(),
        )?,
        last_message: r.get(10)?,
        last_http_status: r.get(11)?,
        accepted_at: opt_ts(r.get(12)?),
    })
}

/// A WHERE clause and its parameters for an `ItemFilter` at `now`, over
/// per-item rows alone or (`joined`) over `groups g CROSS JOIN items i`:
/// the tests' oracle over the ledger expanded into rows
/// (`batches::expand_items`).
/// A queued row a run of `in_flight` holds is in flight (`held`): the
/// clauses hold over the rows and over the view alike.
#[cfg(test)]
pub(super) fn filter_sql(filter: &ItemFilter, now: DateTime<Utc>, joined: bool) -> (String, Vec<Value>) {
    let mut clauses = vec!["1 = 1".to_string()];
    let mut values = Vec::new();
    if !filter.states.is_empty() {
        let held = held(if joined { "i.id" } else { "items.id" });
        let any: Vec<String> = filter
            .states
            .iter()
            .map(|s| match s {
                StateFilter::Due => format!("(state = 'queued' AND next_attempt_at <= {} AND NOT {held})", ts(now)),
                StateFilter::Waiting => format!("(state = 'queued' AND next_attempt_at > {} AND NOT {held})", ts(now)),
                StateFilter::Parked => "state = 'parked'".to_string(),
                StateFilter::InFlight => format!("(state = 'in_flight' OR (state = 'queued' AND {held}))"),
                StateFilter::Accepted => "state = 'accepted'".to_string(),
            })
            .collect();
        clauses.push(format!("({})", any.join(" OR ")));
    }
    // By group. Joined, a plain test on the (few) groups, which keeps them
    // scanned in their index order (`+`: no index search on them, which
    // would lose it), so the join needs no sort. Alone, the group ids from
    // a subquery, even with no test on them: the index on (group_id, state)
    // then serves a state.
    let mut by_group = Vec::new();
    let by_column = [
        ("property", filter.property.clone()),
        ("engine", filter.engine.map(|e| e.as_str().into())),
        ("target", filter.target.clone()),
    ];
    for (column, value) in by_column {
        if let Some(value) = value {
            values.push(Value::Text(value));
            by_group.push(format!("{}{column} = ?{}", if joined { "+g." } else { "" }, values.len()));
        }
    }
    if joined {
        clauses.extend(by_group);
    } else {
        by_group.insert(0, "1 = 1".into());
        clauses.push(format!("group_id IN (SELECT id FROM groups WHERE {})", by_group.join(" AND ")));
    }
    if let Some(u) = &filter.url {
        values.push(Value::Text(u.clone()));
        clauses.push(format!("{}url = ?{}", if joined { "i." } else { "" }, values.len()));
    }
    (clauses.join(" AND "), values)
}

/// A run of items a filter names: ids `first` to `last` of one span of
/// `group`, in its own state `state`, with a last request or not.
pub(super) struct Named {
    pub first: i64,
    pub last: i64,
    pub group: i64,
    pub state: String,
    pub answered: bool,
}

/// The runs of items `filter` names at `now`, in id order, from the spans
/// (schema 12 has no row an item): a URL given, its live ids by its hash
/// in each group the filter names (`listing::live_ids_of_url`) and each
/// one's span; else every span of those groups, each split where a run of
/// `in_flight` holds part of it (a queued item held is in flight). Each
/// part is tested as `filter_sql` tests an item's row (`listing::asked`).
pub(super) fn named(conn: &Connection, filter: &ItemFilter, now: DateTime<Utc>) -> Result<Vec<Named>> {
    let held = super::IdRuns::in_flight(conn)?;
    let now = ts(now);
    let mut out = Vec::new();
    let mut keep = |first: i64, last: i64, span: &super::spans::SpanState| {
        for (a, b, is_held) in super::listing::split(first, last, &held.0) {
            if super::listing::asked(filter, &span.state, is_held, span.next_attempt_at, now) {
                out.push(Named {
                    first: a,
                    last: b,
                    group: span.group,
                    state: span.state.clone(),
                    answered: span.last_request_id.is_some(),
                });
            }
        }
    };
    if let Some(url) = &filter.url {
        let mut ids = super::listing::live_ids_of_url(conn, filter, url)?;
        ids.sort_unstable();
        let mut spans = super::spans::Cursor::new(conn)?;
        for id in ids {
            if let Some(span) = spans.at(id)? {
                keep(id, id, span);
            }
        }
        return Ok(out);
    }
    let groups = groups_of_filter(conn, filter)?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT first, last, group_id, {} FROM spans WHERE group_id = ?1",
        super::spans::SPAN_COLUMNS
    ))?;
    for group in groups {
        let mut rows = stmt.query([group])?;
        while let Some(r) = rows.next()? {
            keep(r.get(0)?, r.get(1)?, &super::spans::SpanState::read(r, 2)?);
        }
    }
    out.sort_unstable_by_key(|n| n.first);
    Ok(out)
}

/// The ids of the groups `filter` names by property, engine and target.
fn groups_of_filter(conn: &Connection, filter: &ItemFilter) -> Result<Vec<i64>> {
    let engine = filter.engine.map(|e| e.as_str().to_string());
    Ok(conn
        .prepare_cached(
            "SELECT id FROM groups WHERE (?1 IS NULL OR property = ?1) AND (?2 IS NULL OR engine = ?2)
                 AND (?3 IS NULL OR target = ?3)",
        )?
        .query_map(params![filter.property, engine, filter.target], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// The ids `filter` names at `now` as the items' rows gave them (the
/// tests' oracle): the ledger expanded into per-item rows
/// (`batches::expand_items`), each tested by `filter_sql`, the URL by its
/// text.
#[cfg(test)]
pub(super) fn ids_from_rows(conn: &Connection, filter: &ItemFilter, now: DateTime<Utc>) -> Result<super::IdRuns> {
    super::batches::expand_items(conn)?;
    let (clause, values) = filter_sql(filter, now, false);
    let ids: Vec<i64> = conn
        .prepare(&format!("SELECT id FROM item_rows AS items WHERE {clause} ORDER BY id"))?
        .query_map(rusqlite::params_from_iter(values), |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(super::IdRuns::of(&ids))
}

/// The ids `filter` names at `now`, as runs (`named`).
pub(super) fn ids_of_filter(conn: &Connection, filter: &ItemFilter, now: DateTime<Utc>) -> Result<super::IdRuns> {
    Ok(super::IdRuns(named(conn, filter, now)?.iter().map(|n| (n.first, n.last)).collect()))
}

/// The ids a filter with no URL names at `now`, as runs, from the spans
/// alone: each group the filter names, the spans of each state it asks
/// for (through the partial indexes for queued and parked spans), a
/// queued span less the ids a run of `in_flight` holds (those are in
/// flight, which a filter of queued states does not name). A filter that
/// names items in flight (a queued item held, or a span of its own state)
/// is read per item instead (`ids_of_filter`).
pub(super) fn runs_of_filter(conn: &Connection, filter: &ItemFilter, now: DateTime<Utc>) -> Result<super::IdRuns> {
    if filter.url.is_some() || filter.states.is_empty() || filter.states.contains(&StateFilter::InFlight) {
        return ids_of_filter(conn, filter, now);
    }
    let held = super::IdRuns::in_flight(conn)?;
    let groups = groups_of_filter(conn, filter)?;
    let asked = |f: StateFilter| filter.states.contains(&f);
    let queued = match (asked(StateFilter::Due), asked(StateFilter::Waiting)) {
        (true, true) => Some("state = 'queued'".to_string()),
        (true, false) => Some(format!("state = 'queued' AND next_attempt_at <= {}", ts(now))),
        (false, true) => Some(format!("state = 'queued' AND next_attempt_at > {}", ts(now))),
        (false, false) => None,
    };
    let mut runs: Vec<(i64, i64)> = Vec::new();
    for group in groups {
        if let Some(queued) = &queued {
            let mut stmt =
                conn.prepare_cached(&format!("SELECT first, last FROM spans WHERE group_id = ?1 AND {queued}"))?;
            for span in stmt.query_map([group], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))? {
                let (first, last) = span?;
                runs.extend(free_of(first, last, &held));
            }
        }
        for (state, name) in [(StateFilter::Parked, "parked"), (StateFilter::Accepted, "accepted")] {
            if asked(state) {
                let mut stmt =
                    conn.prepare_cached("SELECT first, last FROM spans WHERE group_id = ?1 AND state = ?2")?;
                for span in stmt.query_map(params![group, name], |r| Ok((r.get(0)?, r.get(1)?)))? {
                    runs.push(span?);
                }
            }
        }
    }
    runs.sort_unstable();
    Ok(super::IdRuns(runs))
}

/// The parts of the ids `first` to `last` that no run of `held` holds.
fn free_of(first: i64, last: i64, held: &super::IdRuns) -> Vec<(i64, i64)> {
    let mut parts = Vec::new();
    let mut at = first;
    for &(a, b) in held.0.iter().filter(|&&(a, b)| b >= first && a <= last) {
        if a > at {
            parts.push((at, a - 1));
        }
        at = at.max(b + 1);
    }
    if at <= last {
        parts.push((at, last));
    }
    parts
}

/// Whether a run of `in_flight` holds the item whose id is `id` (SQL): the
/// run with the greatest `first` at or before it reaches it (runs never
/// overlap). The view `item_states` asks the same.
#[cfg(test)]
pub(super) fn held(id: &str) -> String {
    format!(
        "(COALESCE((SELECT f.last FROM in_flight f WHERE f.first <= {id} ORDER BY f.first DESC LIMIT 1), 0) >= {id})"
    )
}

#[cfg(test)]
/// ` AND NOT held(id)` where a run of `in_flight` holds items of `group`
/// (any group, with `None`), else nothing: a test a row, spared where no
/// reservation holds any (usually).
pub(super) fn and_not_held(conn: &Connection, group: Option<i64>, id: &str) -> Result<String> {
    let any: bool =
        conn.query_row("SELECT EXISTS (SELECT 1 FROM in_flight WHERE ?1 IS NULL OR group_id = ?1)", [group], |r| {
            r.get(0)
        })?;
    Ok(if any { format!(" AND NOT {}", held(id)) } else { String::new() })
}

/// `Queue::items` where no run of `in_flight` holds any item (usually): a
/// row's state is then its own, and each state asked for is read on its
/// own, group by group, in the listing's order (group, state, due time,
/// id), so that the queued items come in the order of their partial index
/// and the parked ones from theirs, and a small `--limit` reads a few
/// rows. One statement for every state would test every row of a group,
/// a million accepted ones included, however small the limit.
#[cfg(test)]
fn items_by_state(conn: &Connection, filter: &ItemFilter, now: DateTime<Utc>) -> Result<Vec<ItemRow>> {
    let mut limit = filter.limit.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    for (group, state, clause) in states_asked(conn, filter, now)? {
        if limit == 0 {
            break;
        }
        let by_url = if filter.url.is_some() { " AND i.url = ?3" } else { "" };
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {ITEM_COLUMNS} FROM item_rows i CROSS JOIN groups g ON g.id = i.group_id
                 LEFT JOIN requests r ON r.id = i.last_request_id
             WHERE i.group_id = ?1 AND i.state = ?2{clause}{by_url}
             ORDER BY i.next_attempt_at, i.id LIMIT ?4"
        ))?;
        let mut values = vec![Value::Integer(group), Value::Text(state.into())];
        values.push(filter.url.clone().map_or(Value::Null, Value::Text));
        values.push(Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
        let mut rows = stmt.query(rusqlite::params_from_iter(values))?;
        while let Some(r) = rows.next()? {
            out.push(item_row(r)?);
            limit -= 1;
        }
    }
    Ok(out)
}

/// The reads `items_by_state` makes, in the listing's order: each group
/// the filter names (by property, engine and target), and in it each state
/// asked for (in the order of their names, as the listing sorts them) with
/// its test on the due time.
#[cfg(test)]
fn states_asked(
    conn: &Connection,
    filter: &ItemFilter,
    now: DateTime<Utc>,
) -> Result<Vec<(i64, &'static str, String)>> {
    let asked = |f: StateFilter| filter.states.contains(&f);
    let queued = match (asked(StateFilter::Due), asked(StateFilter::Waiting)) {
        (true, true) => Some(String::new()),
        (true, false) => Some(format!(" AND i.next_attempt_at <= {}", ts(now))),
        (false, true) => Some(format!(" AND i.next_attempt_at > {}", ts(now))),
        (false, false) => None,
    };
    let states: Vec<(&'static str, String)> = [
        ("accepted", asked(StateFilter::Accepted).then(String::new)),
        ("in_flight", asked(StateFilter::InFlight).then(String::new)),
        ("parked", asked(StateFilter::Parked).then(String::new)),
        ("queued", queued),
    ]
    .into_iter()
    .filter_map(|(state, clause)| clause.map(|c| (state, c)))
    .collect();
    // A row of its own `in_flight` state (one a copy brought in flight) has
    // no index to find it by: its group is read for it only where the kept
    // count says it holds one.
    let mut stmt = conn.prepare_cached(
        "SELECT id, in_flight > 0 FROM groups WHERE (?1 IS NULL OR property = ?1) AND (?2 IS NULL OR engine = ?2)
             AND (?3 IS NULL OR target = ?3)
         ORDER BY property, engine, target",
    )?;
    let engine = filter.engine.map(|e| e.as_str().to_string());
    let groups = stmt.query_map(params![filter.property, engine, filter.target], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, bool>(1)?))
    })?;
    let mut asked = Vec::new();
    for group in groups {
        let (group, in_flight) = group?;
        let wanted = states.iter().filter(|(state, _)| *state != "in_flight" || in_flight);
        asked.extend(wanted.map(|(state, clause)| (group, *state, clause.clone())));
    }
    Ok(asked)
}

impl Queue for SqliteLedger {
    fn unpark_changed(&mut self, group: &GroupKey, fingerprint: &str, now: DateTime<Utc>) -> Result<u64> {
        let (tx, groups) = self.begin_with_groups()?;
        let Some(group) = group_id(&tx, groups, group)? else { return Ok(0) };
        let written = super::spans::write_where(
            &tx,
            "state = 'queued', next_attempt_at = ?3, streak = 0, streak_started_at = NULL, parked_fingerprint = NULL",
            "group_id = ?1 AND state = 'parked' AND parked_fingerprint IS NOT ?2",
            params![group, fingerprint, ts(now)],
        )?;
        let n: i64 = written.iter().map(|(first, last)| last - first + 1).sum();
        counted(&tx, group, Some(ItemState::Parked), Some(ItemState::Queued), n as u64)?;
        super::commit(tx)?;
        Ok(n as u64)
    }

    fn stored_groups(&mut self) -> Result<Vec<GroupKey>> {
        let mut stmt = self
            .conn
            .prepare("SELECT property, engine, target, channel FROM groups ORDER BY property, engine, target")?;
        let mut rows = stmt.query([])?;
        let mut groups = Vec::new();
        while let Some(r) = rows.next()? {
            groups.push(stored_group(r.get(0)?, &r.get::<_, String>(1)?, r.get(2)?, &r.get::<_, String>(3)?)?);
        }
        Ok(groups)
    }

    /// The groups with a due item no reservation holds: each group's first
    /// due span through the partial index, less what `in_flight` holds.
    fn due_groups(&mut self, now: DateTime<Utc>) -> Result<Vec<GroupKey>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, property, engine, target, channel FROM groups g
             WHERE EXISTS (SELECT 1 FROM spans WHERE group_id = g.id AND state = 'queued' AND next_attempt_at <= ?1)
             ORDER BY property, engine, target",
        )?;
        let mut rows = stmt.query([ts(now)])?;
        let mut groups = Vec::new();
        while let Some(r) = rows.next()? {
            let group: i64 = r.get(0)?;
            if !super::claim::due_by_time(&self.conn, group, ts(now), 1)?.is_empty() {
                groups.push(stored_group(r.get(1)?, &r.get::<_, String>(2)?, r.get(3)?, &r.get::<_, String>(4)?)?);
            }
        }
        Ok(groups)
    }

    /// The due time of the group's queued span that is due first, less
    /// what `in_flight` holds.
    fn next_due(&mut self, group: &GroupKey) -> Result<Option<DateTime<Utc>>> {
        let Some(group) = self.existing_group(group)? else { return Ok(None) };
        let first = super::claim::due_by_time(&self.conn, group, i64::MAX, 1)?;
        Ok(first.first().map(|run| from_ts(run.due)))
    }

    fn queue_counts(&mut self, group: &GroupKey, now: DateTime<Utc>) -> Result<QueueCounts> {
        let Some(group) = self.existing_group(group)? else { return Ok(QueueCounts::default()) };
        // The counts by state are kept in `groups` (an item in flight counted
        // queued); the due items are counted here from the due spans, and
        // those runs hold, run by run, from the spans each overlaps (`+`: no
        // other index; one statement: one snapshot). Not the due items no
        // run holds, tested one at a time: with a run in flight, that made
        // `status` several times slower on a large queue
        // (docs/performance.md, *Measured choices*).
        let (queued, in_flight, parked, accepted, due, held, held_due) = self
            .conn
            .prepare_cached(
                "SELECT queued, in_flight, parked, accepted,
                     (SELECT COALESCE(SUM(last - first + 1), 0) FROM spans
                      WHERE group_id = g.id AND state = 'queued' AND next_attempt_at <= ?2),
                     (SELECT COALESCE(SUM(last - first + 1), 0) FROM in_flight WHERE group_id = g.id),
                     (SELECT COALESCE(SUM(min(f.last, s.last) - max(f.first, s.first) + 1), 0)
                      FROM in_flight f CROSS JOIN spans s
                          ON s.first BETWEEN coalesce((SELECT max(first) FROM spans WHERE first <= f.first), f.first)
                                         AND f.last
                      WHERE f.group_id = g.id AND s.last >= f.first AND +s.state = 'queued'
                          AND +s.next_attempt_at <= ?2)
                 FROM groups g WHERE id = ?1",
            )?
            .query_row(params![group, ts(now)], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                ))
            })?;
        let due = due - held_due;
        let n = |v: i64| v.max(0) as u64;
        Ok(QueueCounts {
            due: n(due),
            waiting: n(queued - held - due),
            parked: n(parked),
            in_flight: n(in_flight + held),
            accepted: n(accepted),
        })
    }

    /// From the spans and the batches (`listing.rs`); the items' own
    /// listing is kept as the tests' reference (`items_from_rows`).
    fn items(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<Vec<ItemRow>> {
        super::listing::items(&self.conn, filter, now)
    }

    /// The items of `ids`, in their order, in the caller's one read (a
    /// statement per id was a read transaction per id outside a write —
    /// two file locks each, most of a run again over a million queued
    /// URLs). Each item's state and group from its span, read by run
    /// (`spans::Cursor`: ids that follow each other in one span read it
    /// once), its URL from its batch row's texts (`listing::Texts`: a row
    /// read once for its ids), its last request read once for all the
    /// items it names. An id no span holds is no item, and left out.
    fn items_by_id(&mut self, ids: &[i64]) -> Result<Vec<ItemRow>> {
        let conn = &self.conn;
        let held = super::IdRuns::in_flight(conn)?;
        let mut group_of = conn.prepare_cached("SELECT property, engine, target, channel FROM groups WHERE id = ?1")?;
        let mut groups: HashMap<i64, GroupKey> = HashMap::new();
        let mut request_of =
            conn.prepare_cached("SELECT reason, message, http_status, class FROM requests WHERE id = ?1")?;
        type Request = (Option<String>, Option<String>, Option<u16>, Option<String>);
        let mut request: Option<(i64, Request)> = None;
        let mut spans = super::spans::Cursor::new(conn)?;
        let mut texts = super::listing::Texts::default();
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            // An id no span holds is no item (dropped, or never taken).
            let Some(span) = spans.at(id)?.cloned() else { continue };
            let group = match groups.get(&span.group) {
                Some(group) => group.clone(),
                None => {
                    let group = group_of.query_row([span.group], |r| {
                        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?, r.get::<_, String>(3)?))
                    })?;
                    let group = stored_group(group.0, &group.1, group.2, &group.3)?;
                    groups.insert(span.group, group.clone());
                    group
                }
            };
            // An item a run of `in_flight` holds is in flight, whatever
            // its span says (as the view `item_states` shows it).
            let state = match held.holds(id) {
                true => ItemState::InFlight,
                false => stored("spans", "state", &span.state)?,
            };
            let (reason, message, status, class) = match span.last_request_id {
                Some(at) if request.as_ref().is_some_and(|(known, _)| *known == at) => {
                    request.as_ref().map(|(_, read)| read.clone()).unwrap_or_default()
                }
                Some(at) => {
                    let read: Request = request_of
                        .query_row([at], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                        .optional()?
                        .unwrap_or_default();
                    request = Some((at, read.clone()));
                    read
                }
                None => Default::default(),
            };
            out.push(ItemRow {
                id,
                url: texts.url(conn, id)?,
                group,
                state,
                next_attempt_at: opt_ts(span.next_attempt_at),
                attempts: span.attempts as u32,
                last_class: stored_opt("spans", "last_class", span.last_class.as_deref())?,
                last_reason: stored_last_reason(class.as_deref(), reason.as_deref())?,
                last_message: message,
                last_http_status: status,
                accepted_at: opt_ts(span.accepted_at),
            });
        }
        Ok(out)
    }

    fn retry(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<u64> {
        let filter = policy::retry_states(filter);
        let tx = self.begin()?;
        let runs = match filter.url {
            None => runs_of_filter(&tx, &filter, now)?,
            Some(_) => ids_of_filter(&tx, &filter, now)?,
        };
        let changed = super::spans::write(
            &tx,
            "state = 'queued', next_attempt_at = ?1, streak = 0, streak_started_at = NULL, parked_fingerprint = NULL",
            "",
            params![ts(now)],
            &runs,
        )?;
        // A person's command, rare: the kept counts counted again.
        recount(&tx)?;
        super::commit(tx)?;
        Ok(changed)
    }

    fn drop_items(&mut self, filter: &ItemFilter, now: DateTime<Utc>) -> Result<u64> {
        let filter = policy::drop_states(filter);
        let tx = self.begin()?;
        let named = named(&tx, &filter, now)?;
        let mut dropped = 0;
        let mut gone: HashMap<(i64, ItemState), u64> = HashMap::new();
        // A drop removes items, not history: their requests stay, and an
        // item a request names (it has a last one) keeps its URL and id,
        // the URL read from its batch row.
        let mut kept = Vec::new();
        let mut ids = Vec::new();
        let mut texts = super::listing::Texts::default();
        for n in &named {
            let len = (n.last - n.first + 1) as u64;
            dropped += len;
            ids.extend(n.first..=n.last);
            *gone.entry((n.group, stored("spans", "state", &n.state)?)).or_default() += len;
            if n.answered {
                for id in n.first..=n.last {
                    let url = texts.url(&tx, id)?;
                    kept.extend([Value::Integer(id), Value::Integer(n.group), url_key(&url).into(), url.into()]);
                }
            }
        }
        let runs = super::IdRuns::of(&ids);
        super::spans::delete(&tx, &runs)?;
        // Their rows of `item_changes` go with them.
        super::batches::clear_changes(&tx, &runs)?;
        for ((group, state), n) in gone {
            counted(&tx, group, Some(state), None, n)?;
        }
        insert_rows(
            &tx,
            &format!(
                "INSERT INTO dropped_items (id, group_id, url_key, url, dropped_at)
                 SELECT column1, column2, column3, column4, {} FROM (",
                ts(now)
            ),
            ")",
            4,
            &kept,
        )?;
        super::commit(tx)?;
        Ok(dropped)
    }

    fn unpark_fixed(&mut self, group: &GroupKey, reasons: &[Reason], now: DateTime<Utc>) -> Result<u64> {
        let texts: Rc<Vec<Value>> = Rc::new(reasons.iter().map(|r| Value::Text(r.to_string())).collect());
        let (tx, groups) = self.begin_with_groups()?;
        let Some(group) = group_id(&tx, groups, group)? else { return Ok(0) };
        let written = super::spans::write_where(
            &tx,
            "state = 'queued', next_attempt_at = ?3, streak = 0, streak_started_at = NULL, parked_fingerprint = NULL",
            "group_id = ?1 AND state = 'parked' AND last_request_id IN (
                 SELECT id FROM requests WHERE class = 'misconfigured' AND reason IN rarray(?2))",
            params![group, texts, ts(now)],
        )?;
        let n: i64 = written.iter().map(|(first, last)| last - first + 1).sum();
        counted(&tx, group, Some(ItemState::Parked), Some(ItemState::Queued), n as u64)?;
        super::commit(tx)?;
        Ok(n as u64)
    }

    fn parked(&mut self) -> Result<Vec<ParkedGroup>> {
        // Per group and last answer: how many, since when, the latest answer
        // (then its URL and message), and the reminder kept under its reason.
        let mut stmt = self.conn.prepare(
            "SELECT g.property, g.engine, g.target, r.class, r.reason, sum(s.last - s.first + 1), min(r.at), max(r.id),
                    s.group_id, m.reminded_at, g.channel
             FROM spans s JOIN groups g ON g.id = s.group_id
             LEFT JOIN requests r ON r.id = s.last_request_id
             LEFT JOIN reminders m ON m.group_id = s.group_id AND m.reason = coalesce(r.reason, 'parked')
             WHERE s.state = 'parked'
             GROUP BY s.group_id, r.class, r.reason
             ORDER BY g.property, g.engine, g.target, r.reason",
        )?;
        let mut rows = stmt.query([])?;
        let mut parked = Vec::new();
        while let Some(r) = rows.next()? {
            let class: Option<String> = r.get(3)?;
            let reason: Option<String> = r.get(4)?;
            parked.push((
                ParkedGroup {
                    group: stored_group(r.get(0)?, &r.get::<_, String>(1)?, r.get(2)?, &r.get::<_, String>(10)?)?,
                    reason: stored_last_reason(class.as_deref(), reason.as_deref())?,
                    count: r.get::<_, i64>(5)? as u64,
                    since: opt_ts(r.get(6)?),
                    url: String::new(),
                    message: None,
                    reminded_at: opt_ts(r.get(9)?),
                },
                r.get::<_, Option<i64>>(7)?,
                (r.get::<_, i64>(8)?, class, reason),
            ));
        }
        drop(rows);
        drop(stmt);
        let conn = &self.conn;
        let mut texts = super::listing::Texts::default();
        let mut out = Vec::with_capacity(parked.len());
        for (mut p, request, (group, class, reason)) in parked {
            let mut url = None;
            if let Some(request) = request {
                let (message, first): (String, Option<i64>) =
                    conn.query_row("SELECT message, first_item FROM requests WHERE id = ?1", [request], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })?;
                p.message = Some(message);
                if let Some(id) = first.filter(|&id| super::spans::holds(conn, id).unwrap_or(false)) {
                    url = Some(texts.url(conn, id)?);
                }
            }
            // With no live first item of a request to show, the least URL
            // of the parked items of the kind (as `min(url)` read it from
            // the items' rows), from their batch rows' texts.
            if url.is_none() {
                let mut spans = conn.prepare_cached(
                    "SELECT s.first, s.last FROM spans s LEFT JOIN requests r ON r.id = s.last_request_id
                     WHERE s.group_id = ?1 AND s.state = 'parked' AND r.class IS ?2 AND r.reason IS ?3",
                )?;
                let runs: Vec<(i64, i64)> = spans
                    .query_map(params![group, class, reason], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                for id in runs.into_iter().flat_map(|(first, last)| first..=last) {
                    let text = texts.url(conn, id)?;
                    if url.as_ref().is_none_or(|least| text < *least) {
                        url = Some(text);
                    }
                }
            }
            p.url = url.unwrap_or_default();
            out.push(p);
        }
        Ok(out)
    }

    fn record_reminders(&mut self, reminded: &[(GroupKey, String)], at: DateTime<Utc>) -> Result<()> {
        let (tx, groups) = self.begin_with_groups()?;
        for (group, reason) in reminded {
            let Some(group) = group_id(&tx, groups, group)? else { continue };
            tx.execute(
                "INSERT INTO reminders (group_id, reason, reminded_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (group_id, reason) DO UPDATE SET reminded_at = excluded.reminded_at",
                params![group, reason, ts(at)],
            )?;
        }
        super::commit(tx)?;
        Ok(())
    }

    fn reminded_at(&mut self, group: &GroupKey, key: &str) -> Result<Option<DateTime<Utc>>> {
        let Some(group) = group_id(&self.conn, &mut self.groups, group)? else { return Ok(None) };
        let at: Option<i64> = self
            .conn
            .prepare_cached("SELECT reminded_at FROM reminders WHERE group_id = ?1 AND reason = ?2")?
            .query_row(params![group, key], |r| r.get(0))
            .optional()?;
        Ok(at.map(from_ts))
    }

    fn claim_notice(
        &mut self,
        group: &GroupKey,
        key: &str,
        at: DateTime<Utc>,
        cutoff: DateTime<Utc>,
    ) -> Result<Option<NoticeClaim>> {
        let (tx, groups) = self.begin_with_groups()?;
        let Some(group) = group_id(&tx, groups, group)? else { return Ok(None) };
        let previous: Option<i64> = tx
            .query_row(
                "SELECT reminded_at FROM reminders WHERE group_id = ?1 AND reason = ?2",
                params![group, key],
                |r| r.get(0),
            )
            .optional()?;
        // The write decides, not the read before it: a conditional upsert
        // that writes nothing when a claim later than the cutoff is there.
        let won = tx
            .query_row(
                "INSERT INTO reminders (group_id, reason, reminded_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (group_id, reason) DO UPDATE SET reminded_at = excluded.reminded_at
                 WHERE reminders.reminded_at <= ?4
                 RETURNING reminded_at",
                params![group, key, ts(at), ts(cutoff)],
                |r| r.get::<_, i64>(0),
            )
            .optional()?;
        super::commit(tx)?;
        Ok(won.map(|at| NoticeClaim { at: from_ts(at), previous: previous.map(from_ts) }))
    }

    fn notices_sent(&mut self, prefix: &str) -> Result<Vec<(GroupKey, String, DateTime<Utc>)>> {
        let mut stmt = self.conn.prepare(
            "SELECT g.property, g.engine, g.target, g.channel, m.reason, m.reminded_at
             FROM reminders m JOIN groups g ON g.id = m.group_id
             WHERE substr(m.reason, 1, length(?1)) = ?1
             ORDER BY g.property, g.engine, g.target, g.channel, m.reason",
        )?;
        let mut rows = stmt.query(params![prefix])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let group = stored_group(r.get(0)?, &r.get::<_, String>(1)?, r.get(2)?, &r.get::<_, String>(3)?)?;
            out.push((group, r.get(4)?, from_ts(r.get(5)?)));
        }
        Ok(out)
    }

    fn take_notice(&mut self, group: &GroupKey, key: &str, at: DateTime<Utc>) -> Result<bool> {
        let (tx, groups) = self.begin_with_groups()?;
        let Some(group) = group_id(&tx, groups, group)? else { return Ok(false) };
        let n = tx.execute(
            "DELETE FROM reminders WHERE group_id = ?1 AND reason = ?2 AND reminded_at = ?3",
            params![group, key, ts(at)],
        )?;
        super::commit(tx)?;
        Ok(n == 1)
    }

    fn give_back_notice(
        &mut self,
        group: &GroupKey,
        key: &str,
        claimed: Option<DateTime<Utc>>,
        previous: Option<DateTime<Utc>>,
    ) -> Result<()> {
        let (tx, groups) = self.begin_with_groups()?;
        let Some(group) = group_id(&tx, groups, group)? else { return Ok(()) };
        match (claimed, previous) {
            (Some(claimed), Some(previous)) => tx.execute(
                "UPDATE reminders SET reminded_at = ?4 WHERE group_id = ?1 AND reason = ?2 AND reminded_at = ?3",
                params![group, key, ts(claimed), ts(previous)],
            )?,
            (Some(claimed), None) => tx.execute(
                "DELETE FROM reminders WHERE group_id = ?1 AND reason = ?2 AND reminded_at = ?3",
                params![group, key, ts(claimed)],
            )?,
            (None, Some(previous)) => tx.execute(
                "INSERT INTO reminders (group_id, reason, reminded_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (group_id, reason) DO NOTHING",
                params![group, key, ts(previous)],
            )?,
            (None, None) => 0,
        };
        super::commit(tx)?;
        Ok(())
    }
}

/// `Queue::items` as read from the item rows before schema 12's spans,
/// each item now joined to its span (`item_rows`) and sorted and filtered
/// per item: what the listing from the spans must equal, in the tests.
#[cfg(test)]
pub(super) fn items_from_rows(conn: &Connection, filter: &ItemFilter, now: DateTime<Utc>) -> Result<Vec<ItemRow>> {
    super::batches::expand_items(conn)?;
    if !filter.states.is_empty() && and_not_held(conn, None, "i.id")?.is_empty() {
        return items_by_state(conn, filter, now);
    }
    let (clause, values) = filter_sql(filter, now, true);
    let limit = filter.limit.map_or(String::new(), |n| format!(" LIMIT {n}"));
    // Group by group (CROSS JOIN: the groups, few, in their index order
    // outside), each group's items in the order of its index: no sort. The
    // rows' own state where no run of `in_flight` exists (usually): the
    // state as the view says it, a row at a time, would need a sort of
    // every match, however small the limit (docs/performance.md, *Measured
    // choices*).
    let state = match and_not_held(conn, None, "i.id")?.is_empty() {
        true => "i.state".to_string(),
        false => format!("(CASE WHEN {} THEN 'in_flight' ELSE i.state END)", held("i.id")),
    };
    let columns = ITEM_COLUMNS.replacen("i.state", &state, 1);
    let sql = format!(
        "SELECT {columns} FROM groups g CROSS JOIN item_rows i ON i.group_id = g.id
             LEFT JOIN requests r ON r.id = i.last_request_id
         WHERE {clause}
         ORDER BY g.property, g.engine, g.target, {state}, i.next_attempt_at, i.id{limit}"
    );
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(values))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(item_row(r)?);
    }
    Ok(out)
}
