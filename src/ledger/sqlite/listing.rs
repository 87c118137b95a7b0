//! What `queue list` shows and which items a URL names, read from schema
//! 12's batches and spans (issue 48; docs/design.md, *A ledger per batch*;
//! schema 12 has no items table): the spans by state give the ids and
//! every state column, each id's URL comes from its batch's texts, and a
//! URL becomes its id by its hash (`batches::find_ids`).

use super::super::batches::{self as layout, url_hash};
use super::{
    params, stored, stored_group, stored_last_reason, stored_opt, ts, Connection, DateTime, GroupKey, HashMap,
    ItemFilter, ItemRow, OptionalExtension, Result, StateFilter, Utc,
};
use std::collections::BTreeMap;

/// The states in the listing's order (by name, as it sorts them).
const STATES: [&str; 4] = ["accepted", "in_flight", "parked", "queued"];

/// What a span holds of what the listing shows.
const COLUMNS: &str = "first, last, state, next_attempt_at, attempts, last_class, accepted_at, last_request_id";

/// Items `first` to `last` of a span (all of it, or the part of it a run
/// of `in_flight` holds or does not), listed under `shown`: their own
/// state, or `in_flight` where a run holds them.
#[derive(Clone)]
struct Piece {
    first: i64,
    last: i64,
    own: String,
    shown: &'static str,
    due: Option<i64>,
    attempts: u32,
    last_class: Option<String>,
    accepted_at: Option<i64>,
    request: Option<i64>,
}

fn piece(r: &rusqlite::Row<'_>) -> rusqlite::Result<Piece> {
    Ok(Piece {
        first: r.get(0)?,
        last: r.get(1)?,
        own: r.get(2)?,
        shown: "",
        due: r.get(3)?,
        attempts: r.get(4)?,
        last_class: r.get(5)?,
        accepted_at: r.get(6)?,
        request: r.get(7)?,
    })
}

/// Whether an item of state `own` (held by a run of `in_flight` or not),
/// due at `due`, is one `filter` asks for: the tests `queue.rs`'s
/// `filter_sql` makes of an item row.
pub(super) fn asked(filter: &ItemFilter, own: &str, held: bool, due: Option<i64>, now: i64) -> bool {
    filter.states.is_empty()
        || filter.states.iter().any(|s| match s {
            StateFilter::Due => own == "queued" && !held && due.is_some_and(|d| d <= now),
            StateFilter::Waiting => own == "queued" && !held && due.is_some_and(|d| d > now),
            StateFilter::Parked => own == "parked",
            StateFilter::InFlight => own == "in_flight" || (own == "queued" && held),
            StateFilter::Accepted => own == "accepted",
        })
}

/// The parts of the ids `from` to `to` (a span's) that the runs of
/// `in_flight` (sorted, never overlapping) hold (`true`) or do not
/// (`false`), in id order.
pub(super) fn split(from: i64, to: i64, runs: &[(i64, i64)]) -> Vec<(i64, i64, bool)> {
    let mut parts = Vec::new();
    let mut at = from;
    for &(first, last) in runs.iter().filter(|&&(first, last)| last >= from && first <= to) {
        if first > at {
            parts.push((at, first - 1, false));
        }
        parts.push((first.max(at), last.min(to), true));
        at = last + 1;
    }
    if at <= to {
        parts.push((at, to, false));
    }
    parts
}

/// `Queue::items` on SQLite: each group the filter names (by property,
/// engine and target, in that order), in it each state (by name), in it
/// the items by due time and id — the order the items' own listing had.
/// A state's spans come from their partial index where there is one
/// (queued, parked), in the listing's order, so a small `--limit` reads a
/// few spans; the pieces a run of `in_flight` holds are listed in flight.
/// Each listed id's URL is read from its batch row, each batch row once.
/// The listing shows no lastmod or action (which `item_changes` holds
/// where they differ from the batch's, `batches::lastmod_and_action`), so
/// it reads no item row at all.
pub(super) fn items(conn: &Connection, filter: &ItemFilter, now: DateTime<Utc>) -> Result<Vec<ItemRow>> {
    let now = ts(now);
    let limit = filter.limit.unwrap_or(usize::MAX);
    let groups = listed_groups(conn, filter)?;
    // Every run of `in_flight`: few (a claim's runs). Each holds one
    // group's items, but an id is held whatever the group its run names,
    // as `item_states` says.
    let runs: Vec<(i64, i64)> = conn
        .prepare_cached("SELECT first, last FROM in_flight ORDER BY first")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let asking = Asking { filter, runs: &runs, now };
    let mut listed: Vec<(usize, Piece)> = Vec::new();
    let mut count = 0usize;
    'groups: for (k, (group, own_in_flight, _)) in groups.iter().enumerate() {
        // With `--url`, the span holding the URL's id in this group (if it
        // is an item still), cut to that id, is all the group can list.
        let only: Option<Piece> = match &filter.url {
            Some(url) => match span_of_url(conn, *group, url)? {
                Some(span) => Some(span),
                None => continue,
            },
            None => None,
        };
        for shown in STATES {
            if count >= limit {
                break 'groups;
            }
            let pieces = match shown {
                "in_flight" => asking.in_flight(conn, *group, *own_in_flight, only.as_ref())?,
                _ => asking.of_state(conn, *group, shown, only.as_ref(), limit - count)?,
            };
            for mut p in pieces {
                if count >= limit {
                    break 'groups;
                }
                let room = i64::try_from(limit - count).unwrap_or(i64::MAX);
                if p.last - p.first + 1 > room {
                    p.last = p.first + room - 1;
                }
                count += (p.last - p.first + 1) as usize;
                listed.push((k, p));
            }
        }
    }
    rows_of(conn, &groups, listed)
}

/// The groups a listing reads (by its property, engine and target), in
/// the listing's order: each one's id, whether its kept count holds an
/// item in flight, and its key.
fn listed_groups(conn: &Connection, filter: &ItemFilter) -> Result<Vec<(i64, bool, GroupKey)>> {
    let engine = filter.engine.map(|e| e.as_str().to_string());
    let mut stmt = conn.prepare_cached(
        "SELECT id, in_flight > 0, property, engine, target, channel FROM groups
         WHERE (?1 IS NULL OR property = ?1) AND (?2 IS NULL OR engine = ?2) AND (?3 IS NULL OR target = ?3)
         ORDER BY property, engine, target",
    )?;
    let mut rows = stmt.query(params![filter.property, engine, filter.target])?;
    let mut groups = Vec::new();
    while let Some(r) = rows.next()? {
        let key = stored_group(r.get(2)?, &r.get::<_, String>(3)?, r.get(4)?, &r.get::<_, String>(5)?)?;
        groups.push((r.get(0)?, r.get(1)?, key));
    }
    Ok(groups)
}

/// The span holding `url`'s id in `group`, cut to that id; `None` when
/// the group never held the URL or dropped it.
fn span_of_url(conn: &Connection, group: i64, url: &str) -> Result<Option<Piece>> {
    let Some(id) = super::batches::find_ids(conn, group, &[url_hash(url)])?[0] else { return Ok(None) };
    let span = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM spans WHERE first = (SELECT max(first) FROM spans WHERE first <= ?1) AND last >= ?1"
        ))?
        .query_row([id], piece)
        .optional()?;
    Ok(span.map(|span| Piece { first: id, last: id, ..span }))
}

/// What a listing asks, and the runs of `in_flight` that hold items
/// whatever their spans say.
struct Asking<'a> {
    filter: &'a ItemFilter,
    runs: &'a [(i64, i64)],
    now: i64,
}

impl Asking<'_> {
    fn wants(&self, f: StateFilter) -> bool {
        self.filter.states.is_empty() || self.filter.states.contains(&f)
    }

    /// A group's items listed in flight, by due time and id: spans of their
    /// own state in flight (a copy brought them so: no index finds them, so
    /// read only where the kept count says the group holds one), and the
    /// parts of any span a run holds. `only`: the span of `--url`.
    fn in_flight(
        &self,
        conn: &Connection,
        group: i64,
        own_in_flight: bool,
        only: Option<&Piece>,
    ) -> Result<Vec<Piece>> {
        let mut pieces = Vec::new();
        if !(self.wants(StateFilter::InFlight) || self.wants(StateFilter::Accepted) || self.wants(StateFilter::Parked))
        {
            return Ok(pieces);
        }
        let mut spans = Vec::new();
        if let Some(span) = only {
            spans.push(span.clone());
        } else {
            if own_in_flight {
                let mut stmt = conn.prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM spans WHERE group_id = ?1 AND state = 'in_flight'"
                ))?;
                let rows = stmt.query_map([group], piece)?;
                spans.extend(rows.collect::<rusqlite::Result<Vec<_>>>()?);
            }
            let mut held = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM spans
                 WHERE first BETWEEN coalesce((SELECT max(first) FROM spans WHERE first <= ?2), ?2) AND ?3
                     AND group_id = ?1 AND state <> 'in_flight'"
            ))?;
            for &(first, last) in self.runs {
                let rows = held.query_map([group, first, last], piece)?;
                spans.extend(rows.collect::<rusqlite::Result<Vec<_>>>()?);
            }
        }
        for span in spans {
            for (first, last, is_held) in split(span.first, span.last, self.runs) {
                if (is_held || span.own == "in_flight") && asked(self.filter, &span.own, is_held, span.due, self.now) {
                    pieces.push(Piece { first, last, shown: "in_flight", ..span.clone() });
                }
            }
        }
        pieces.sort_by_key(|p| (p.due, p.first));
        Ok(pieces)
    }

    /// A group's items listed under `shown` (not in flight), in the order
    /// of its partial index (due time, then id), read until `room` items
    /// are taken: the parts of its spans of that state no run holds.
    /// `only`: the span of `--url`.
    fn of_state(
        &self,
        conn: &Connection,
        group: i64,
        shown: &'static str,
        only: Option<&Piece>,
        room: usize,
    ) -> Result<Vec<Piece>> {
        let mut pieces = Vec::new();
        let wanted = match shown {
            "accepted" => self.wants(StateFilter::Accepted),
            "parked" => self.wants(StateFilter::Parked),
            _ => self.wants(StateFilter::Due) || self.wants(StateFilter::Waiting),
        };
        if !wanted {
            return Ok(pieces);
        }
        let mut take = |span: Piece| -> usize {
            let mut taken = 0;
            for (first, last, is_held) in split(span.first, span.last, self.runs) {
                if !is_held && asked(self.filter, &span.own, false, span.due, self.now) {
                    taken += (last - first + 1) as usize;
                    pieces.push(Piece { first, last, shown, ..span.clone() });
                }
            }
            taken
        };
        match only {
            Some(span) if span.own == shown => {
                take(span.clone());
            }
            Some(_) => {}
            None => {
                // The queued spans' test on the due time, where only one of
                // due and waiting is asked for: the partial index then
                // starts or ends there.
                let due = match (shown, self.filter.states.is_empty()) {
                    ("queued", false) => match (self.wants(StateFilter::Due), self.wants(StateFilter::Waiting)) {
                        (true, false) => " AND next_attempt_at <= ?2",
                        (false, true) => " AND next_attempt_at > ?2",
                        _ => "",
                    },
                    _ => "",
                };
                let mut stmt = conn.prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM spans WHERE group_id = ?1 AND state = '{shown}'{due}
                     ORDER BY next_attempt_at, first"
                ))?;
                let mut rows = match due {
                    "" => stmt.query([group])?,
                    _ => stmt.query([group, self.now])?,
                };
                let mut taken = 0;
                while let Some(r) = rows.next()? {
                    taken += take(piece(r)?);
                    if taken >= room {
                        break;
                    }
                }
            }
        }
        Ok(pieces)
    }
}

/// The rows of the listed pieces: each id's URL from its batch row (each
/// row read once), each piece's last request read once.
fn rows_of(conn: &Connection, groups: &[(i64, bool, GroupKey)], listed: Vec<(usize, Piece)>) -> Result<Vec<ItemRow>> {
    let mut texts = Texts::default();
    type Request = (Option<String>, Option<String>, Option<u16>, Option<String>);
    let mut requests: HashMap<i64, Request> = HashMap::new();
    let mut request_of =
        conn.prepare_cached("SELECT reason, message, http_status, class FROM requests WHERE id = ?1")?;
    let mut out = Vec::new();
    for (k, p) in listed {
        let (reason, message, status, class) = match p.request {
            Some(id) => match requests.entry(id) {
                std::collections::hash_map::Entry::Occupied(known) => known.get().clone(),
                std::collections::hash_map::Entry::Vacant(new) => new
                    .insert(
                        request_of
                            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                            .optional()?
                            .unwrap_or_default(),
                    )
                    .clone(),
            },
            None => Default::default(),
        };
        let state = stored("items", "state", p.shown)?;
        let last_class = stored_opt("items", "last_class", p.last_class.as_deref())?;
        let last_reason = stored_last_reason(class.as_deref(), reason.as_deref())?;
        for id in p.first..=p.last {
            out.push(ItemRow {
                id,
                url: texts.url(conn, id)?,
                group: groups[k].2.clone(),
                state,
                next_attempt_at: p.due.map(super::from_ts),
                attempts: p.attempts,
                last_class,
                last_reason,
                last_message: message.clone(),
                last_http_status: status,
                accepted_at: p.accepted_at.map(super::from_ts),
            });
        }
    }
    Ok(out)
}

/// The batch rows' texts read so far, by first id: each row read once
/// however many of its ids are listed.
#[derive(Default)]
pub(super) struct Texts(BTreeMap<i64, (i64, Vec<u8>)>);

impl Texts {
    pub(super) fn url(&mut self, conn: &Connection, id: i64) -> Result<String> {
        let held = self.0.range(..=id).next_back().filter(|(first, (n, _))| id < *first + n).map(|(first, _)| *first);
        let first = match held {
            Some(first) => first,
            None => {
                let (first, n, texts): (i64, i64, Vec<u8>) = conn
                    .prepare_cached(
                        "SELECT first_id, n, texts FROM batches WHERE first_id <= ?1 ORDER BY first_id DESC LIMIT 1",
                    )?
                    .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .optional()?
                    .filter(|(first, n, _)| id < first + n)
                    .ok_or_else(|| super::LedgerError::Invalid(format!("spans: item {id} is in no batch")))?;
                self.0.insert(first, (n, texts));
                first
            }
        };
        let (n, texts) = &self.0[&first];
        Ok(layout::text(texts, *n as usize, (id - first) as u32)?.to_string())
    }
}

/// The id `url` (as stored) has in `group`, if the group ever held it,
/// and whether it is there still (a span holds it) or was dropped: the
/// newest id of the URL, as `find_ids` finds it. An older id of a URL
/// dropped and submitted again is not found here (the merged runs keep the
/// newer), nor one dropped before schema 12 (no batch holds it):
/// `dropped_items` still names those.
pub(super) fn id_of_url(conn: &Connection, group: i64, url: &str) -> Result<Option<(i64, bool)>> {
    let Some(id) = super::batches::find_ids(conn, group, &[url_hash(url)])?[0] else { return Ok(None) };
    Ok(Some((id, super::spans::holds(conn, id)?)))
}

/// The ids `url` (as stored) has in the groups `filter` names (by
/// property, engine and target) that are items still: what `queue retry
/// --url` and `queue drop --url` act on.
pub(super) fn live_ids_of_url(conn: &Connection, filter: &ItemFilter, url: &str) -> Result<Vec<i64>> {
    let engine = filter.engine.map(|e| e.as_str().to_string());
    let groups: Vec<i64> = conn
        .prepare_cached(
            "SELECT id FROM groups
             WHERE (?1 IS NULL OR property = ?1) AND (?2 IS NULL OR engine = ?2) AND (?3 IS NULL OR target = ?3)",
        )?
        .query_map(params![filter.property, engine, filter.target], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut ids = Vec::new();
    for group in groups {
        if let Some((id, true)) = id_of_url(conn, group, url)? {
            ids.push(id);
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::super::batches::spans_agree;
    use super::super::queue::items_from_rows;
    use super::super::SqliteLedger;
    use super::*;
    use crate::ledger::conformance::{dedupe_day, two_groups};
    use crate::ledger::{Intake, Queue};
    use crate::model::EngineKind;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    /// Every filter `queue list` takes, against the listing from the item
    /// rows (the one this replaces), compared as shown.
    fn assert_lists_agree(ledger: &mut SqliteLedger, now: DateTime<Utc>, step: usize) {
        use StateFilter::*;
        let state_sets: [&[StateFilter]; 9] = [
            &[],
            &[Due],
            &[Waiting],
            &[Parked],
            &[InFlight],
            &[Accepted],
            &[Due, Waiting],
            &[Accepted, InFlight, Parked],
            &[Waiting, InFlight],
        ];
        let mut filters = Vec::new();
        for states in state_sets {
            for limit in [None, Some(0), Some(1), Some(3), Some(7), Some(40)] {
                filters.push(ItemFilter { states: states.to_vec(), limit, ..Default::default() });
            }
            filters.push(ItemFilter { states: states.to_vec(), property: Some("b".into()), ..Default::default() });
            for url in ["https://site.example/3", "https://site.example/70", "https://site.example/none"] {
                filters.push(ItemFilter { states: states.to_vec(), url: Some(url.into()), ..Default::default() });
            }
        }
        filters.push(ItemFilter { engine: Some(EngineKind::Bing), ..Default::default() });
        filters.push(ItemFilter { engine: Some(EngineKind::IndexNow), limit: Some(5), ..Default::default() });
        for filter in filters {
            // The ids `queue retry` and `queue drop` would act on: from the
            // spans (no URL) against each item joined to its span.
            let by_spans = super::super::queue::runs_of_filter(&ledger.conn, &filter, now).unwrap().ids();
            let by_parts = super::super::queue::ids_of_filter(&ledger.conn, &filter, now).unwrap().ids();
            let by_rows = super::super::queue::ids_from_rows(&ledger.conn, &filter, now).unwrap().ids();
            assert_eq!(by_spans, by_rows, "step {step}, {filter:?}: the ids a filter names");
            assert_eq!(by_parts, by_rows, "step {step}, {filter:?}: the ids a filter names, split by span");
            let from_spans: Vec<String> =
                ledger.items(&filter, now).unwrap().iter().map(|r| format!("{r:?}")).collect();
            let from_rows: Vec<String> =
                items_from_rows(&ledger.conn, &filter, now).unwrap().iter().map(|r| format!("{r:?}")).collect();
            if let Some(k) = (0..from_spans.len().max(from_rows.len())).find(|&k| from_spans.get(k) != from_rows.get(k))
            {
                panic!(
                    "step {step}, {filter:?}: {} rows against {}, first differing at {k}:\n{:?}\n{:?}",
                    from_spans.len(),
                    from_rows.len(),
                    from_spans.get(k),
                    from_rows.get(k)
                );
            }
        }
        // Every item by id, in an order that is not the ids' (the last
        // first, then the others ascending, one asked twice), from the
        // spans by run against the rows.
        let mut every = items_from_rows(&ledger.conn, &ItemFilter::default(), now).unwrap();
        every.sort_by_key(|r| r.id);
        if let Some(last) = every.pop() {
            every.insert(0, last);
        }
        if let Some(again) = every.get(1).cloned() {
            every.push(again);
        }
        let ids: Vec<i64> = every.iter().map(|r| r.id).collect();
        let by_id: Vec<String> = ledger.items_by_id(&ids).unwrap().iter().map(|r| format!("{r:?}")).collect();
        let from_rows: Vec<String> = every.iter().map(|r| format!("{r:?}")).collect();
        if let Some(k) = (0..by_id.len().max(from_rows.len())).find(|&k| by_id.get(k) != from_rows.get(k)) {
            panic!("step {step}, items by id, first differing at {k}:\n{:?}\n{:?}", by_id.get(k), from_rows.get(k));
        }
    }

    /// `queue list` from the spans and batches lists what the items'
    /// listing did, with every filter, through a long sequence of writes
    /// that split and merge spans across three batches of two groups,
    /// with and without runs of `in_flight` holding some of them.
    #[test]
    fn the_listing_from_spans_equals_the_listing_from_the_rows() {
        let mut ledger = SqliteLedger::in_memory().unwrap();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        // Ids 1-60 of group a, 61-90 of group b, then 91-115 of group a: a
        // second batch of a, whose URLs 60-84 are new.
        ledger.admit(&(0..60).map(|i| item(0, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        ledger.admit(&(0..30).map(|i| item(1, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        ledger.admit(&(60..85).map(|i| item(0, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        assert_lists_agree(&mut ledger, now, 0);
        let listed = ledger.items(&ItemFilter::default(), now).unwrap();
        assert_eq!(listed.len(), 115);
        assert_eq!(listed[60].url, "https://site.example/60", "the second batch of a follows the first");
        let n = now.timestamp();
        let states = [
            format!(
                "state = 'queued', next_attempt_at = {}, attempts = attempts + 1, last_class = 'transient'",
                n + 60
            ),
            format!("state = 'queued', next_attempt_at = {}, last_request_id = 999", n - 60),
            "state = 'accepted', accepted_at = 7, next_attempt_at = NULL, last_class = 'accepted'".into(),
            "state = 'parked', parked_fingerprint = 'fp', last_class = 'misconfigured', next_attempt_at = NULL".into(),
            "state = 'in_flight'".into(),
            format!("state = 'queued', next_attempt_at = {n}, streak = 0"),
        ];
        let mut random = crate::ledger::conformance::Seeded::new(4_848);
        for step in 1..=120 {
            let (first, last, kind) = random.step(115, 10, 25);
            let conn = &ledger.conn;
            match kind {
                0 => {
                    super::super::spans::delete(conn, &super::super::IdRuns(vec![(first, first)])).unwrap();
                }
                k => {
                    super::super::spans::set_state(conn, first, last, &states[k as usize % states.len()]).unwrap();
                }
            };
            spans_agree(conn).unwrap();
            // The kept counts, which a write through the ledger keeps.
            super::super::recount(conn).unwrap();
            // Runs of `in_flight` over a third of the steps, some reaching
            // over ids of two spans or two groups' batches.
            conn.execute("DELETE FROM in_flight", []).unwrap();
            if step % 3 == 0 {
                let runs = [(first, last), (first + 20, first + 26)];
                for (run, (a, b)) in runs.into_iter().enumerate() {
                    let group: Option<i64> =
                        super::super::spans::states(conn, &[a]).unwrap()[0].as_ref().map(|s| s.group);
                    if let Some(group) = group.filter(|_| b <= 115) {
                        conn.execute(
                            "INSERT INTO in_flight (first, last, reservation_id, group_id) VALUES (?1, ?2, ?3, ?4)",
                            [a, b, run as i64 + 1, group],
                        )
                        .unwrap();
                    }
                }
            }
            if step % 4 == 0 {
                assert_lists_agree(&mut ledger, now, step);
            }
        }
        let spans: i64 = ledger.conn.query_row("SELECT count(*) FROM spans", [], |r| r.get(0)).unwrap();
        assert!(spans > 20, "the writes split the spans: {spans}");
    }

    /// A URL dropped and submitted again is found at its newer id (its
    /// item), one dropped and not submitted again at its id (gone), and
    /// one never admitted not at all; `queue retry --url` and `queue drop
    /// --url` act on the item of each group that holds the URL.
    #[test]
    fn a_url_becomes_its_ids_by_its_hash() {
        let mut ledger = SqliteLedger::in_memory().unwrap();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        ledger.admit(&(0..5).map(|i| item(i % 2, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        ledger.admit(&[item(1, 0)], now, &dedupe_day()).unwrap();
        // An item after them, so that the ids dropped below are not the
        // highest (`a_dropped_highest_id_is_not_taken_again` tests that).
        ledger.admit(&[item(0, 9)], now, &dedupe_day()).unwrap();
        let group = |p: &str| -> i64 {
            ledger.conn.query_row("SELECT id FROM groups WHERE property = ?1", [p], |r| r.get(0)).unwrap()
        };
        let (a, b) = (group("a"), group("b"));
        let url = |i: usize| format!("https://site.example/{i}");
        let id_of = |ledger: &SqliteLedger, group: i64, i: usize| id_of_url(&ledger.conn, group, &url(i)).unwrap();
        // Group a's new items are ids 1-3 (URLs 0, 2, 4), b's 4-5 (1, 3), then
        // 6 (b's URL 0) and 7 (a's URL 9).
        assert_eq!(id_of(&ledger, a, 2), Some((2, true)));
        assert_eq!(id_of(&ledger, b, 0), Some((6, true)));
        assert_eq!(id_of(&ledger, b, 2), None);
        let by_url = |i: usize| ItemFilter { url: Some(url(i)), ..Default::default() };
        assert_eq!(ledger.drop_items(&by_url(0), now).unwrap(), 2, "URL 0 in both groups");
        assert_eq!((id_of(&ledger, a, 0), id_of(&ledger, b, 0)), (Some((1, false)), Some((6, false))));
        ledger.admit(&[item(0, 0)], now, &dedupe_day()).unwrap();
        assert_eq!(id_of(&ledger, a, 0), Some((8, true)), "submitted again: its newer id");
        assert_eq!(live_ids_of_url(&ledger.conn, &by_url(0), &url(0)).unwrap(), [8]);
        let of_b = ItemFilter { property: Some("b".into()), ..by_url(3) };
        assert_eq!(live_ids_of_url(&ledger.conn, &of_b, &url(3)).unwrap(), [5]);
        assert_eq!(ledger.retry(&ItemFilter { property: Some("a".into()), ..by_url(3) }, now).unwrap(), 0);
        assert_eq!(ledger.drop_items(&of_b, now).unwrap(), 1);
        assert_eq!(ledger.drop_items(&by_url(99), now).unwrap(), 0, "never admitted");
        let left: Vec<i64> = ledger.items(&ItemFilter::default(), now).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(left, [2, 3, 7, 8, 4]);
    }

    /// The highest id dropped with no request naming it (so no
    /// `dropped_items` row keeps it) is not given to the next new item:
    /// its batch row still names it.
    #[test]
    fn a_dropped_highest_id_is_not_taken_again() {
        let mut ledger = SqliteLedger::in_memory().unwrap();
        let item = two_groups();
        let now = t("2026-12-03T09:00:00Z");
        ledger.admit(&[item(0, 0), item(0, 1)], now, &dedupe_day()).unwrap();
        let filter = ItemFilter { url: Some("https://site.example/1".into()), ..Default::default() };
        assert_eq!(ledger.drop_items(&filter, now).unwrap(), 1);
        ledger.admit(&[item(0, 2)], now, &dedupe_day()).unwrap();
        let ids: Vec<i64> = ledger.items(&ItemFilter::default(), now).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(ids, [1, 3], "id 2 stays the dropped URL's");
    }
}
