//! A claim's steps on SQLite (`policy::ClaimSteps`): the clock, the windows
//! and the pace, the due items taken, moved or deferred with a statement
//! each, the units counted, and the reservations reconciled. Every step
//! runs in policy's transaction (`BEGIN IMMEDIATE`: the write lock is held,
//! so what is read stays so until it commits).
//!
//! A claim writes no span: its reservation's runs of ids in `in_flight`
//! hold what it took (schema 9), and the spans stay queued. Every other
//! write of state here (deferrals, moves of due times, reconcile) is a
//! write of spans (`spans.rs`); the due items are read from the queued
//! spans, never an item row.

use super::super::batches as layout;
use super::LedgerError;
use super::{
    from_ts, group_id, insert_request, opt_ts, params, stored_opt, ts, ClaimedItem, Connection, DateTime, GroupKey,
    IdRuns, Now, OptionalExtension, Owner, Recorded, Report, Result, RuleWindow, Tx, Usage, Utc,
};
use crate::ledger::policy::{ClaimSteps, Due, DueOrder, Kept, Taken};

pub(super) fn usage_in(tx: &Connection, rule: &RuleWindow) -> Result<Usage> {
    let blocked: Option<i64> = tx
        .prepare_cached("SELECT until FROM blocks WHERE rule = ?1")?
        .query_row(params![rule.rule], |r| r.get(0))
        .optional()?;
    let usage = tx
        .query_row(
            "SELECT used, limit_value, reported_at, reported_remaining FROM budget_usage
             WHERE rule = ?1 AND window_key = ?2",
            params![rule.rule, rule.window],
            |r| {
                let reported =
                    match (r.get::<_, Option<i64>>(2)?, r.get::<_, Option<i64>>(3)?, r.get::<_, Option<i64>>(1)?) {
                        (Some(at), Some(remaining), Some(limit)) => Some(Report {
                            at: from_ts(at),
                            remaining: remaining.max(0) as u64,
                            limit: limit.max(0) as u64,
                        }),
                        _ => None,
                    };
                Ok(Usage { used: r.get::<_, i64>(0)?.max(0) as u64, blocked_until: None, reported })
            },
        )
        .optional()?
        .unwrap_or_default();
    Ok(Usage { blocked_until: opt_ts(blocked), ..usage })
}

/// Counts `units` against a rule's window. The limit stored is the rule's,
/// unless the engine reported one in this window.
pub(super) fn add_usage(tx: &Connection, rule: &RuleWindow, units: u64) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO budget_usage (rule, window_key, period, used, limit_value, resets_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (rule, window_key) DO UPDATE SET used = used + excluded.used,
             limit_value = CASE WHEN reported_at IS NULL THEN excluded.limit_value ELSE limit_value END,
             resets_at = excluded.resets_at",
    )?
    .execute(params![
        rule.rule,
        rule.window,
        rule.period.as_str(),
        units as i64,
        rule.limit.map(|l| l as i64),
        ts(rule.resets_at)
    ])?;
    Ok(())
}

/// Consecutive due ids `first` to `last` of one queued span, none of them
/// in flight, with the span's columns a claim reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DueRun {
    first: i64,
    last: i64,
    pub(super) due: i64,
    attempts: u32,
    last_class: Option<String>,
    streak: u32,
    streak_started_at: Option<i64>,
    enqueued_at: i64,
}

impl DueRun {
    fn len(&self) -> usize {
        (self.last - self.first + 1) as usize
    }

    /// Whether an engine's answer (or an interrupted request) sent its
    /// items back: `DueKey::RetriesFirst`.
    fn retry(&self) -> bool {
        self.last_class.as_deref().is_some_and(|c| c != "accepted")
    }

    fn ids(&self) -> std::ops::RangeInclusive<i64> {
        self.first..=self.last
    }
}

/// The due spans of a group in (due time, first id) order: the order of
/// the partial index `spans_queued` (its entries end with the row id, the
/// span's first), so a walk of it reads no more spans than it uses.
const DUE_SPANS: &str =
    "SELECT first, last, next_attempt_at, attempts, last_class, streak, streak_started_at, enqueued_at
     FROM spans WHERE group_id = ?1 AND state = 'queued' AND next_attempt_at <= ?2
     ORDER BY next_attempt_at, first";

/// The due runs of `group` at `now` in the order by due time and id
/// (`DueOrder::BY_DUE`), until they hold `n` ids (the last run cut there):
/// the queued spans in their index's order, less the ids a run of
/// `in_flight` holds.
pub(super) fn due_by_time(conn: &Connection, group: i64, now: i64, n: usize) -> Result<Vec<DueRun>> {
    let held = held_runs(conn, group)?;
    let mut out: Vec<DueRun> = Vec::new();
    let mut count = 0usize;
    if n == 0 {
        return Ok(out);
    }
    let mut stmt = conn.prepare_cached(DUE_SPANS)?;
    let mut rows = stmt.query(params![group, now])?;
    while let Some(r) = rows.next()? {
        let span = due_run(r)?;
        for mut part in free_parts(&span, &held) {
            let room = n - count;
            if part.len() >= room {
                part.last = part.first + room as i64 - 1;
                out.push(part);
                return Ok(out);
            }
            count += part.len();
            out.push(part);
        }
    }
    Ok(out)
}

/// The due runs of `group` at `now` in the order "newest" takes them
/// (`DueOrder::NEWEST`), until they hold `n` ids. Unlike the order by due
/// time, no index holds this order (the items' rows were sorted too, every
/// due row of the group read for it, before schema 12): every due span is read, and each is
/// cut into runs of one sort key — a run of a batch with no lastmods and
/// no `item_changes` is one key (the span's queued time) however long,
/// an item with a lastmod of its own a run of its own. Only the best runs
/// that hold `n` ids are kept while reading (`Best`), so the memory a
/// claim needs grows with `n`, not with the due items; the time still
/// grows with the due spans and the due items that have a lastmod.
fn due_newest(conn: &Connection, group: i64, now: i64, n: usize) -> Result<Vec<DueRun>> {
    let held = held_runs(conn, group)?;
    let mut best = Best::new(n);
    if n == 0 {
        return Ok(Vec::new());
    }
    // The lastmods of the batch read last: the spans of a batch mostly
    // come one after the other, so its blob is read once for all of them
    // and dropped before the next batch's is read.
    let mut lastmods = Lastmods::default();
    let mut stmt = conn.prepare_cached(DUE_SPANS)?;
    let mut rows = stmt.query(params![group, now])?;
    while let Some(r) = rows.next()? {
        for span in free_parts(&due_run(r)?, &held) {
            let retry = span.retry();
            newest_keys(conn, &span, &mut lastmods, |key, first, last| {
                // Retries first, by due time; then the newest lastmod (the
                // queued time where there is none); then by id, which the
                // runs' first ids give since no two runs overlap.
                let rank = (!retry, retry.then_some(span.due), std::cmp::Reverse(key), first);
                if best.wants(&rank) {
                    best.keep(rank, DueRun { first, last, ..span.clone() });
                }
            })?;
        }
    }
    Ok(best.into_runs())
}

/// A run's place in the order "newest": not a retry (retries first), a
/// retry's due time, its key reversed (the newest first), its first id.
/// No two runs share a first id, so no two runs share a place.
type NewestKey = (bool, Option<i64>, std::cmp::Reverse<i64>, i64);

/// A run with its place, ordered by its place alone (the heap's order).
struct Ranked(NewestKey, DueRun);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

/// The first runs in the order "newest" among those offered, until they
/// hold `n` ids: a heap with the last of them on top, which goes as soon
/// as the others hold `n` ids without it. So it keeps at most `n` runs
/// (each holds an id), each cut to `n` ids (no run can give more).
struct Best {
    n: usize,
    heap: std::collections::BinaryHeap<Ranked>,
    /// The ids the runs of `heap` hold.
    held: usize,
}

impl Best {
    fn new(n: usize) -> Self {
        Best { n, heap: std::collections::BinaryHeap::new(), held: 0 }
    }

    /// Whether a run at `rank` would be kept: while the runs kept hold
    /// fewer than `n` ids, any is; after that, one before the last kept.
    /// A run it would not keep need not be built.
    fn wants(&self, rank: &NewestKey) -> bool {
        self.n > 0 && (self.held < self.n || self.heap.peek().is_some_and(|last| *rank < last.0))
    }

    fn keep(&mut self, rank: NewestKey, mut run: DueRun) {
        if self.n == 0 {
            return;
        }
        if run.len() > self.n {
            run.last = run.first + self.n as i64 - 1;
        }
        self.held += run.len();
        self.heap.push(Ranked(rank, run));
        while let Some(last) = self.heap.peek() {
            if self.held - last.1.len() < self.n {
                break;
            }
            self.held -= last.1.len();
            self.heap.pop();
        }
    }

    /// The runs kept in their order, the last cut where they reach `n` ids.
    fn into_runs(self) -> Vec<DueRun> {
        let mut out = Vec::with_capacity(self.heap.len());
        let mut count = 0usize;
        for Ranked(_, mut run) in self.heap.into_sorted_vec() {
            if count >= self.n {
                break;
            }
            let room = self.n - count;
            if run.len() > room {
                run.last = run.first + room as i64 - 1;
            }
            count += run.len();
            out.push(run);
        }
        out
    }
}

/// The `lastmods` blob of one batch row, the one read last (none before
/// the first read): reading another's drops it first.
#[derive(Default)]
struct Lastmods(Option<(i64, Option<Vec<u8>>)>);

impl Lastmods {
    fn of(&mut self, conn: &Connection, batch: i64) -> Result<Option<&[u8]>> {
        if self.0.as_ref().is_none_or(|(read, _)| *read != batch) {
            self.0 = None;
            let blob: Option<Vec<u8>> = conn
                .prepare_cached("SELECT lastmods FROM batches WHERE first_id = ?1")?
                .query_row([batch], |r| r.get(0))?;
            self.0 = Some((batch, blob));
        }
        Ok(self.0.as_ref().and_then(|(_, blob)| blob.as_deref()))
    }
}

/// The ids of `span` cut into runs of one key of the order "newest", each
/// given to `each` as (key, first, last) in id order: an item's lastmod
/// (its row of `item_changes`, else its batch row's), or the span's queued
/// time where it has none. A batch row with no lastmods and no changed
/// item among the ids is one run; else each item is read, and neighbours
/// of one key are one run. The changed items are read in id order beside
/// the ids, never gathered.
fn newest_keys(
    conn: &Connection,
    span: &DueRun,
    lastmods: &mut Lastmods,
    mut each: impl FnMut(i64, i64, i64),
) -> Result<()> {
    let (first, last, enqueued) = (span.first, span.last, span.enqueued_at);
    // The batch rows over the ids: the one holding `first`, and those after
    // it up to `last`. Whether a row has lastmods is read from its record
    // header, not its blob.
    let rows: Vec<(i64, i64, bool)> = conn
        .prepare_cached(
            "SELECT first_id, n, lastmods IS NOT NULL FROM batches
             WHERE first_id >= COALESCE((SELECT first_id FROM batches WHERE first_id <= ?1
                                         ORDER BY first_id DESC LIMIT 1), ?1)
               AND first_id <= ?2
             ORDER BY first_id",
        )?
        .query_map([first, last], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    // The run being built, given on when the next id's key differs.
    let mut run: Option<(i64, i64, i64)> = None;
    let mut push = |key: i64, from: i64, to: i64| match run.as_mut() {
        Some((k, _, end)) if *k == key && *end + 1 == from => *end = to,
        _ => {
            if let Some((k, start, end)) = run.replace((key, from, to)) {
                each(k, start, end);
            }
        }
    };
    let mut changes =
        conn.prepare_cached("SELECT id, lastmod FROM item_changes WHERE id BETWEEN ?1 AND ?2 ORDER BY id")?;
    let mut at = first;
    for (batch, n, has_lastmods) in rows {
        let (from, to) = (at.max(batch), last.min(batch + n - 1));
        if from != at || to < from {
            break;
        }
        let mut changed = changes.query([from, to])?;
        let mut change: Option<(i64, Option<i64>)> = match changed.next()? {
            Some(r) => Some((r.get(0)?, r.get(1)?)),
            None => None,
        };
        if !has_lastmods && change.is_none() {
            push(enqueued, from, to);
        } else {
            let blob = if has_lastmods { lastmods.of(conn, batch)? } else { None };
            for id in from..=to {
                let lastmod = match change {
                    Some((changed_id, lastmod)) if changed_id == id => {
                        change = match changed.next()? {
                            Some(r) => Some((r.get(0)?, r.get(1)?)),
                            None => None,
                        };
                        lastmod
                    }
                    _ => layout::lastmod(blob, (id - batch) as u32)?,
                };
                push(lastmod.unwrap_or(enqueued), id, id);
            }
        }
        at = to + 1;
    }
    if at <= last {
        return Err(LedgerError::Invalid(format!("spans: item {at} is in no batch")));
    }
    if let Some((key, start, end)) = run {
        each(key, start, end);
    }
    Ok(())
}

/// The due runs of `group` at `now` in `order`, until they hold `n` ids.
fn due_runs(conn: &Connection, group: i64, now: i64, n: usize, order: DueOrder) -> Result<Vec<DueRun>> {
    if order.by_due() {
        due_by_time(conn, group, now, n)
    } else if order == DueOrder::NEWEST {
        due_newest(conn, group, now, n)
    } else {
        Err(LedgerError::Invalid(format!("claim: no reading of the spans in the order {order:?}")))
    }
}

fn due_run(r: &rusqlite::Row<'_>) -> rusqlite::Result<DueRun> {
    Ok(DueRun {
        first: r.get(0)?,
        last: r.get(1)?,
        due: r.get(2)?,
        attempts: r.get(3)?,
        last_class: r.get(4)?,
        streak: r.get(5)?,
        streak_started_at: r.get(6)?,
        enqueued_at: r.get(7)?,
    })
}

/// The runs of `in_flight` that hold items of `group`, by first id: few
/// (its claims' runs). A claim's runs hold its group's items alone.
fn held_runs(conn: &Connection, group: i64) -> Result<Vec<(i64, i64)>> {
    Ok(conn
        .prepare_cached("SELECT first, last FROM in_flight WHERE group_id = ?1 ORDER BY first")?
        .query_map([group], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?)
}

/// The parts of `span` no run of `held` (sorted, never overlapping) holds,
/// in id order.
fn free_parts(span: &DueRun, held: &[(i64, i64)]) -> Vec<DueRun> {
    let mut parts = Vec::new();
    let mut at = span.first;
    for &(first, last) in held.iter().filter(|&&(first, last)| last >= span.first && first <= span.last) {
        if first > at {
            parts.push(DueRun { first: at, last: first - 1, ..span.clone() });
        }
        at = at.max(last + 1);
    }
    if at <= span.last {
        parts.push(DueRun { first: at, last: span.last, ..span.clone() });
    }
    parts
}

impl ClaimSteps for Tx<'_> {
    fn own_clock(&mut self, now: Now) -> Result<DateTime<Utc>> {
        Ok(now.local)
    }

    /// The write lock holds it.
    fn latest(&mut self, _hold: bool) -> Result<Option<DateTime<Utc>>> {
        let latest = self
            .conn
            .prepare_cached("SELECT latest_now FROM runs WHERE id = 1")?
            .query_row([], |r| r.get(0))
            .optional()?;
        Ok(opt_ts(latest))
    }

    fn record_latest(&mut self, at: DateTime<Utc>) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO runs (id, latest_now) VALUES (1, ?1)
             ON CONFLICT (id) DO UPDATE SET latest_now = MAX(latest_now, excluded.latest_now)",
            )?
            .execute([ts(at)])?;
        Ok(())
    }

    fn group(&mut self, key: &GroupKey) -> Result<Option<i64>> {
        group_id(self.conn, self.groups, key)
    }

    /// Held already: a claim's transaction holds the whole ledger's write lock.
    fn hold_queue(&mut self, _group: i64) -> Result<()> {
        Ok(())
    }

    fn window(&mut self, rule: &RuleWindow) -> Result<Usage> {
        add_usage(self.conn, rule, 0)?;
        usage_in(self.conn, rule)
    }

    fn usage(&mut self, rule: &RuleWindow) -> Result<Usage> {
        usage_in(self.conn, rule)
    }

    fn pace(&mut self, key: &str, _hold: bool) -> Result<Option<i64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT tat_ms FROM pacing WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?)
    }

    fn set_pace(&mut self, key: &str, tat_ms: i64) -> Result<()> {
        self.conn.prepare_cached("INSERT INTO pacing (key, tat_ms) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET tat_ms = excluded.tat_ms")?.execute(params![key, tat_ms],
        )?;
        Ok(())
    }

    fn count_due(&mut self, group: i64, now: DateTime<Utc>, cap: usize) -> Result<usize> {
        Ok(due_by_time(self.conn, group, ts(now), cap)?.iter().map(DueRun::len).sum())
    }

    /// The kept count of queued rows, less those in flight (still queued rows).
    fn queued(&mut self, group: i64) -> Result<u64> {
        let n: i64 = self
            .conn
            .prepare_cached(
                "SELECT queued - (SELECT COALESCE(SUM(last - first + 1), 0) FROM in_flight WHERE group_id = ?1)
             FROM groups WHERE id = ?1",
            )?
            .query_row([group], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }

    fn take_due(
        &mut self,
        group: i64,
        now: DateTime<Utc>,
        n: usize,
        order: DueOrder,
        me: &Owner,
    ) -> Result<Option<Taken>> {
        // The due runs from the spans, each id's URL from its batch row
        // (each row read once) and its action through `item_changes` and
        // the batch rows; no item row is read. The write lock holds what
        // was read.
        let runs = due_runs(self.conn, group, ts(now), n, order)?;
        let ids: Vec<i64> = runs.iter().flat_map(DueRun::ids).collect();
        let values = super::batches::lastmod_and_action(self.conn, &ids)?;
        let mut texts = super::listing::Texts::default();
        let mut taken = Vec::with_capacity(ids.len());
        let mut values = ids.iter().zip(values);
        for run in &runs {
            let last_class = stored_opt("spans", "last_class", run.last_class.as_deref())?;
            for (&id, value) in values.by_ref().take(run.len()) {
                let (_, action) =
                    value.ok_or_else(|| LedgerError::Invalid(format!("spans: item {id} is in no batch")))?;
                let item = ClaimedItem {
                    id,
                    url: texts.url(self.conn, id)?,
                    action,
                    attempts: run.attempts,
                    last_class,
                    streak: run.streak,
                    streak_started_at: opt_ts(run.streak_started_at),
                };
                taken.push((Some(from_ts(run.due)), item));
            }
        }
        if taken.is_empty() {
            return Ok(None);
        }
        // Held as runs of consecutive ids (in the order of their ids); the
        // items themselves stay in the claim's order.
        let mut ids: Vec<i64> = taken.iter().map(|(_, item)| item.id).collect();
        ids.sort_unstable();
        let ids = IdRuns::of(&ids);
        self.conn
            .prepare_cached(
                "INSERT INTO reservations (host, pid, started, created_at, lease_until, units)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            )?
            .execute(params![me.host, me.pid, me.started as i64, ts(now), taken.len() as i64])?;
        let reservation = self.conn.last_insert_rowid();
        let mut held = self
            .conn
            .prepare_cached("INSERT INTO in_flight (first, last, reservation_id, group_id) VALUES (?1, ?2, ?3, ?4)")?;
        for (first, last) in &ids.0 {
            held.execute(params![first, last, reservation, group])?;
        }
        Ok(Some(Taken { reservation, items: taken }))
    }

    fn next_due(&mut self, group: i64, now: DateTime<Utc>, n: usize, order: DueOrder) -> Result<Vec<Due>> {
        let mut texts = super::listing::Texts::default();
        let mut out = Vec::with_capacity(n);
        for id in due_runs(self.conn, group, ts(now), n, order)?.iter().flat_map(DueRun::ids) {
            out.push((id, texts.url(self.conn, id)?));
        }
        Ok(out)
    }

    fn nth_due(&mut self, group: i64, now: DateTime<Utc>, n: usize) -> Result<Option<(DateTime<Utc>, i64)>> {
        let runs = due_by_time(self.conn, group, ts(now), n.max(1))?;
        let count: usize = runs.iter().map(DueRun::len).sum();
        Ok(runs.last().filter(|_| count == n.max(1)).map(|run| (from_ts(run.due), run.last)))
    }

    fn defer_due(
        &mut self,
        group: i64,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        keep: &Kept,
        limit: usize,
    ) -> Result<Vec<i64>> {
        // Every due run of the group, less the ids a reservation holds, in
        // the order by due time; those `keep` names left out.
        let mut runs: Vec<(i64, i64)> = Vec::new();
        let except: std::collections::HashSet<i64> = match keep {
            Kept::Except(ids) => ids.iter().copied().collect(),
            _ => Default::default(),
        };
        let mut room = limit;
        'runs: for run in due_by_time(self.conn, group, ts(now), usize::MAX)? {
            let from = match keep {
                Kept::After((at, id)) => match run.due.cmp(&ts(*at)) {
                    std::cmp::Ordering::Less => continue,
                    std::cmp::Ordering::Equal => run.first.max(id + 1),
                    std::cmp::Ordering::Greater => run.first,
                },
                _ => run.first,
            };
            for id in from..=run.last {
                if room == 0 {
                    break 'runs;
                }
                if except.contains(&id) {
                    continue;
                }
                match runs.last_mut() {
                    Some(last) if last.1 + 1 == id => last.1 = id,
                    _ => runs.push((id, id)),
                }
                room -= 1;
            }
        }
        let runs = IdRuns(runs);
        super::spans::write(self.conn, "next_attempt_at = ?1", "", params![ts(until)], &runs)?;
        Ok(runs.ids())
    }

    fn urls(&mut self, ids: &[i64]) -> Result<Vec<Due>> {
        // Each URL from its batch row's texts, each row read once for the
        // ids it holds (a claim's ids are runs of a few batches).
        let mut texts = super::listing::Texts::default();
        ids.iter().map(|&id| Ok((id, texts.url(self.conn, id)?))).collect()
    }

    fn move_due(&mut self, moved: &[(i64, DateTime<Utc>)]) -> Result<()> {
        // Consecutive ids moved to one time are one run of one write.
        let mut moved: Vec<(i64, i64)> = moved.iter().map(|(id, at)| (*id, ts(*at))).collect();
        moved.sort_unstable();
        let mut k = 0;
        while k < moved.len() {
            let (first, at) = moved[k];
            let mut last = first;
            while k + 1 < moved.len() && moved[k + 1] == (last + 1, at) {
                k += 1;
                last += 1;
            }
            k += 1;
            super::spans::write(self.conn, "next_attempt_at = ?1", "", params![at], &IdRuns(vec![(first, last)]))?;
        }
        Ok(())
    }

    /// The write lock is held: what `window` read still holds, and the
    /// units fit.
    fn charge(&mut self, rules: &[RuleWindow], units: u64, _now: DateTime<Utc>) -> Result<bool> {
        for rule in rules {
            add_usage(self.conn, rule, units)?;
        }
        Ok(true)
    }

    fn hold(&mut self, reservation: i64, rules: &[RuleWindow], units: u64, lease_until: DateTime<Utc>) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE reservations SET lease_until = ?2, units = ?3 WHERE id = ?1")?
            .execute(params![reservation, ts(lease_until), units as i64])?;
        let mut insert = self.conn.prepare_cached(
            "INSERT INTO reservation_rules (reservation_id, rule, window_key, units) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for rule in rules {
            insert.execute(params![reservation, rule.rule, rule.window, units as i64])?;
        }
        Ok(())
    }

    fn reservations(&mut self, _hold: bool) -> Result<Vec<(i64, Owner, DateTime<Utc>)>> {
        let mut stmt = self.conn.prepare("SELECT id, host, pid, started, lease_until FROM reservations ORDER BY id")?;
        let rows = stmt.query_map([], |r| {
            let owner = Owner { host: r.get(1)?, pid: r.get(2)?, started: r.get::<_, i64>(3)? as u64 };
            Ok((r.get(0)?, owner, from_ts(r.get(4)?)))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The ids of the reservation's runs.
    fn in_flight(&mut self, reservation: i64) -> Result<Option<(i64, Vec<i64>)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT first, last, group_id FROM in_flight WHERE reservation_id = ?1 ORDER BY first")?;
        let runs = stmt.query_map([reservation], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get(2)?)))?;
        let runs: Vec<(i64, i64, i64)> = runs.collect::<rusqlite::Result<_>>()?;
        let Some(&(_, _, group)) = runs.first() else { return Ok(None) };
        Ok(Some((group, runs.iter().flat_map(|&(first, last, _)| first..=last).collect())))
    }

    /// Their spans, queued all along, due now.
    fn interrupted(&mut self, group: i64, items: &[i64], now: DateTime<Utc>) -> Result<()> {
        let request = insert_request(self.conn, &Recorded::interrupted(group, now, items))?;
        let ids = IdRuns::of(items);
        super::spans::write(
            self.conn,
            "next_attempt_at = ?1, attempts = attempts + 1, last_class = 'transient', last_request_id = ?2",
            "state = 'queued'",
            params![ts(now), request],
            &ids,
        )?;
        Ok(())
    }

    /// The reservation and its runs.
    fn end(&mut self, reservation: i64) -> Result<()> {
        self.conn.prepare_cached("DELETE FROM in_flight WHERE reservation_id = ?1")?.execute([reservation])?;
        self.conn.prepare_cached("DELETE FROM reservations WHERE id = ?1")?.execute([reservation])?;
        Ok(())
    }

    fn first_use(&mut self, fingerprint: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
        self.conn
            .prepare_cached(
                "INSERT INTO credentials (fingerprint, first_used_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            )?
            .execute(params![fingerprint, ts(now)])?;
        let first: i64 = self
            .conn
            .prepare_cached("SELECT first_used_at FROM credentials WHERE fingerprint = ?1")?
            .query_row([fingerprint], |r| r.get(0))?;
        Ok(from_ts(first))
    }
}

#[cfg(test)]
mod tests {
    use super::super::batches::{expand_items, lastmod_and_action, set_changes, spans_agree};
    use super::super::SqliteLedger;
    use super::*;
    use crate::ledger::conformance::{dedupe_day, two_groups};
    use crate::ledger::sql::order_by;
    use crate::ledger::Intake;

    /// The due items of a group, but for those in flight: each item with
    /// its state, read through its span, as a row (`item_rows`: the
    /// ledger expanded into rows, `batches::expand_items`).
    const DUE: &str = "FROM item_rows AS items WHERE group_id = ?1 AND state = 'queued' AND next_attempt_at <= ?2";

    /// A test's write of `set` to the ids `first` to `last`: a lastmod
    /// (`lastmod = N` or `lastmod = NULL`) to the items' changes (`set_changes`,
    /// each item keeping its action), anything else to the spans.
    fn write(conn: &Connection, set: &str, first: i64, last: i64) {
        if let Some(value) = set.strip_prefix("lastmod = ") {
            let lastmod: Option<i64> = value.parse().ok();
            let ids: Vec<i64> = (first..=last).collect();
            let values: Vec<_> = ids
                .iter()
                .zip(lastmod_and_action(conn, &ids).unwrap())
                .filter_map(|(id, had)| Some((*id, (lastmod, had?.1))))
                .collect();
            set_changes(conn, &values).unwrap();
        } else {
            super::super::spans::set_state(conn, first, last, set).unwrap();
        }
    }

    /// The ids the items' rows give in `order` (the reading this replaces):
    /// each item read with its span's state, sorted and filtered per item.
    fn due_from_rows(conn: &Connection, group: i64, now: i64, n: usize, order: DueOrder) -> Vec<i64> {
        expand_items(conn).unwrap();
        let held = super::super::queue::and_not_held(conn, Some(group), "items.id").unwrap();
        let sql = format!("SELECT id {DUE}{held} ORDER BY {} LIMIT ?3", order_by(order));
        let mut stmt = conn.prepare(&sql).unwrap();
        let rows = stmt.query_map(params![group, now, n as i64], |r| r.get(0)).unwrap();
        rows.collect::<rusqlite::Result<_>>().unwrap()
    }

    /// The due items from the spans, in both orders and at several sizes,
    /// are the items' due rows in the same order, through random writes
    /// of runs that split spans, send items back as retries, give items
    /// lastmods of their own, and hold some in flight; one of the batches
    /// has lastmods, the others none.
    #[test]
    fn the_due_items_from_spans_are_the_rows_due_in_each_order() {
        let mut ledger = SqliteLedger::in_memory().unwrap();
        let item = two_groups();
        let now = DateTime::parse_from_rfc3339("2026-12-03T09:00:00Z").unwrap().with_timezone(&Utc);
        let n = now.timestamp();
        ledger.admit(&(0..60).map(|i| item(0, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        ledger.admit(&(0..30).map(|i| item(1, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        let dated: Vec<_> = (60..85)
            .map(|i| {
                let mut it = item(0, i);
                it.lastmod = Some(now - chrono::TimeDelta::hours(((i * 7) % 11) as i64));
                it
            })
            .collect();
        ledger.admit(&dated, now, &dedupe_day()).unwrap();
        let has_lastmods: i64 =
            ledger.conn.query_row("SELECT count(*) FROM batches WHERE lastmods IS NOT NULL", [], |r| r.get(0)).unwrap();
        assert_eq!(has_lastmods, 1, "the third batch holds its lastmods");
        let writes = [
            format!(
                "state = 'queued', next_attempt_at = {}, attempts = attempts + 1, last_class = 'transient'",
                n - 30
            ),
            format!("state = 'queued', next_attempt_at = {}, last_class = 'quota', streak = 2", n - 90),
            format!("lastmod = {}", n - 5_000),
            format!("lastmod = {}", n + 3_600),
            "lastmod = NULL".into(),
            "state = 'accepted', accepted_at = 7, next_attempt_at = NULL, last_class = 'accepted'".into(),
            format!("state = 'queued', next_attempt_at = {}", n + 60),
            format!("state = 'queued', next_attempt_at = {}, last_class = 'accepted'", n - 60),
        ];
        let mut random = crate::ledger::conformance::Seeded::new(4_849);
        let mut compared = 0;
        for step in 0..=150 {
            let conn = &ledger.conn;
            if step > 0 {
                let (first, last, kind) = random.step(115, 12, writes.len() as u64);
                let write = &writes[kind as usize];
                super::tests::write(conn, write, first, last);
                spans_agree(conn).unwrap();
                conn.execute("DELETE FROM in_flight", []).unwrap();
                // A run of one group's items, as a claim's runs are.
                let group_of = |id: i64| -> Option<i64> {
                    super::super::spans::states(conn, &[id]).unwrap()[0].as_ref().map(|s| s.group)
                };
                if let (0, Some(group), true) = (step % 3, group_of(first), group_of(first) == group_of(last)) {
                    conn.execute(
                        "INSERT INTO in_flight (first, last, reservation_id, group_id) VALUES (?1, ?2, 1, ?3)",
                        [first, last, group],
                    )
                    .unwrap();
                }
            }
            for group in [1, 2] {
                for order in [DueOrder::BY_DUE, DueOrder::NEWEST] {
                    for size in [1, 3, 7, 40, 1_000] {
                        let runs = due_runs(conn, group, n, size, order).unwrap();
                        let from_spans: Vec<i64> = runs.iter().flat_map(DueRun::ids).collect();
                        let from_rows = due_from_rows(conn, group, n, size, order);
                        assert_eq!(from_spans, from_rows, "step {step}, group {group}, {order:?}, {size}");
                        compared += from_rows.len();
                    }
                }
                let count: usize = due_by_time(conn, group, n, usize::MAX).unwrap().iter().map(DueRun::len).sum();
                assert_eq!(count, due_from_rows(conn, group, n, usize::MAX >> 1, DueOrder::BY_DUE).len());
            }
        }
        assert!(compared > 10_000, "due items were compared: {compared}");
    }

    /// A small `n` against many runs, most of them ties of key (lastmods
    /// shared by many items, and equal to another batch's queued time),
    /// with retries of one due time and items held in flight: the runs
    /// kept are the items' own `ORDER BY`, at every `n` from 1 up.
    #[test]
    fn a_small_n_against_many_runs_of_tied_keys_is_the_rows_order() {
        let mut ledger = SqliteLedger::in_memory().unwrap();
        let item = two_groups();
        let now = DateTime::parse_from_rfc3339("2026-12-03T09:00:00Z").unwrap().with_timezone(&Utc);
        let hour = chrono::TimeDelta::hours(1);
        let n = now.timestamp();
        // Queued an hour before the dated batch: its key ties the lastmods
        // of an hour before `now`.
        ledger.admit(&(0..100).map(|i| item(0, i)).collect::<Vec<_>>(), now - hour, &dedupe_day()).unwrap();
        let dated: Vec<_> = (100..400)
            .map(|i| {
                let mut it = item(0, i);
                it.lastmod = (i % 7 != 0).then(|| now - hour * (i % 4) as i32);
                it
            })
            .collect();
        ledger.admit(&dated, now, &dedupe_day()).unwrap();
        let conn = &ledger.conn;
        let writes = [
            (
                format!("next_attempt_at = {}, attempts = 1, last_class = 'transient'", n - 30),
                [(20, 25), (150, 160), (301, 301), (350, 352)],
            ),
            (format!("lastmod = {}", n - 7_200), [(40, 41), (200, 204), (260, 260), (390, 400)]),
            ("lastmod = NULL".to_string(), [(60, 60), (230, 233), (10, 10), (370, 371)]),
        ];
        for (write, runs) in &writes {
            for &(first, last) in runs {
                super::tests::write(conn, write, first, last);
            }
        }
        spans_agree(conn).unwrap();
        let changes: i64 = conn.query_row("SELECT count(*) FROM item_changes", [], |r| r.get(0)).unwrap();
        assert!(changes > 10, "items have lastmods of their own: {changes}");
        for held in [None, Some((120, 180))] {
            conn.execute("DELETE FROM in_flight", []).unwrap();
            if let Some((first, last)) = held {
                conn.execute(
                    "INSERT INTO in_flight (first, last, reservation_id, group_id) VALUES (?1, ?2, 1, 1)",
                    [first, last],
                )
                .unwrap();
            }
            let all = due_from_rows(conn, 1, n, 1_000, DueOrder::NEWEST);
            assert!(all.len() > 300, "due: {}", all.len());
            for size in (1..=60).chain([150, 299, 400, 1_000]) {
                let runs = due_runs(conn, 1, n, size, DueOrder::NEWEST).unwrap();
                let from_spans: Vec<i64> = runs.iter().flat_map(DueRun::ids).collect();
                assert_eq!(from_spans, due_from_rows(conn, 1, n, size, DueOrder::NEWEST), "{held:?}, {size}");
                assert_eq!(from_spans[..], all[..size.min(all.len())], "{held:?}, {size}");
            }
        }
    }

    /// `Best` keeps at most `n` runs whatever it is offered, and gives the
    /// first `n` ids of all the runs sorted by place and cut there.
    #[test]
    fn the_best_runs_stay_at_most_n_and_are_the_sorted_first() {
        let mut random = crate::ledger::conformance::Seeded::new(48);
        let span = DueRun {
            first: 0,
            last: 0,
            due: 0,
            attempts: 0,
            last_class: None,
            streak: 0,
            streak_started_at: None,
            enqueued_at: 0,
        };
        for n in [1, 2, 5, 17, 100] {
            let mut best = Best::new(n);
            let mut all = Vec::new();
            let mut first = 0;
            for _ in 0..2_000 {
                let long = random.below(4) == 0;
                let len = 1 + random.below(if long { 300 } else { 3 }) as i64;
                let retry = random.below(5) == 0;
                let rank =
                    (!retry, retry.then(|| random.below(3) as i64), std::cmp::Reverse(random.below(6) as i64), first);
                let run = DueRun { first, last: first + len - 1, ..span.clone() };
                all.push((rank, run.clone()));
                if best.wants(&rank) {
                    best.keep(rank, run);
                }
                assert!(best.heap.len() <= n, "{n}: {} runs kept", best.heap.len());
                first += len + random.below(2) as i64;
            }
            all.sort_by_key(|(rank, _)| *rank);
            let expected: Vec<i64> = all.iter().flat_map(|(_, run)| run.ids()).take(n).collect();
            let kept: Vec<i64> = best.into_runs().iter().flat_map(DueRun::ids).collect();
            assert_eq!(kept, expected, "{n}");
        }
    }
}
