//! Every write of an item's state as a write of spans (issue 48;
//! docs/design.md, *A ledger per batch*). A write names runs of ids, a run
//! being a group's ids that follow each other (`Runs`); for all its runs at
//! once, with a constant number of statements, the spans are *cut* at each
//! run's two ends (a span reaching over an end becomes two with the same
//! columns), the write's own `SET` expressions run as one `UPDATE spans`
//! over the spans inside the runs (a row a span, not an item), and alike
//! neighbours across the touched ranges are *merged* again, so no two
//! adjacent spans of a group are alike. Every step holds the groups' spans
//! (`batches::lock_spans`) until the transaction ends.

use super::batches::{alike_before, lock_spans, SPAN_COLUMNS};
use super::session::Session;
use super::{pg, GenericClient, Result};

type Param<'a> = &'a (dyn pg::types::ToSql + Sync);

/// Runs of consecutive ids, each of one group, as three parallel arrays,
/// in (group, first id) order; no two runs overlap (`each`'s may touch).
#[derive(Debug, Default, PartialEq)]
pub(super) struct Runs {
    groups: Vec<i64>,
    firsts: Vec<i64>,
    lasts: Vec<i64>,
}

impl Runs {
    /// The runs of the (group, id) pairs `ids`, in any order, repeats
    /// allowed: a group's ids that follow each other are one run.
    pub(super) fn of(ids: &[(i64, i64)]) -> Runs {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut runs = Runs::default();
        for (group, id) in ids {
            match (runs.groups.last(), runs.lasts.last_mut()) {
                (Some(&g), Some(last)) if g == group && *last + 1 == id => *last = id,
                _ => {
                    runs.groups.push(group);
                    runs.firsts.push(id);
                    runs.lasts.push(id);
                }
            }
        }
        runs
    }

    /// The runs of `ids` (any order), all of `group`.
    pub(super) fn of_group(group: i64, ids: &[i64]) -> Runs {
        Runs::of(&ids.iter().map(|id| (group, *id)).collect::<Vec<_>>())
    }

    /// Each of the (group, id) pairs `ids` a run of its own (they may
    /// touch): for a write that gives each item a value of its own, whose
    /// `SET` then finds the item's value by `spans.first`.
    pub(super) fn each(ids: &[(i64, i64)]) -> Runs {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        Runs {
            groups: ids.iter().map(|p| p.0).collect(),
            firsts: ids.iter().map(|p| p.1).collect(),
            lasts: ids.iter().map(|p| p.1).collect(),
        }
    }

    /// The runs of spans as (group, first, last), which may touch: those
    /// that do are joined.
    pub(super) fn of_spans(spans: &[(i64, i64, i64)]) -> Runs {
        let mut spans = spans.to_vec();
        spans.sort_unstable();
        let mut runs = Runs::default();
        for (group, first, last) in spans {
            match (runs.groups.last(), runs.lasts.last_mut()) {
                (Some(&g), Some(end)) if g == group && *end + 1 >= first => *end = (*end).max(last),
                _ => {
                    runs.groups.push(group);
                    runs.firsts.push(first);
                    runs.lasts.push(last);
                }
            }
        }
        runs
    }

    pub(super) fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The runs' groups, each once, ascending.
    fn group_list(&self) -> Vec<i64> {
        let mut groups = self.groups.clone();
        groups.dedup();
        groups
    }

    /// The runs as the parameters `$1`, `$2`, `$3` of a statement, then
    /// `more`.
    fn params<'a>(&'a self, more: &[Param<'a>]) -> Vec<Param<'a>> {
        let mut params: Vec<Param<'a>> = vec![&self.groups, &self.firsts, &self.lasts];
        params.extend_from_slice(more);
        params
    }
}

/// The runs `$1`, `$2`, `$3` as a table `r (g, f, l)`, for a `WITH`.
const RUNS: &str = "r (g, f, l) AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]))";

/// Cuts the spans at each run's two ends: a span holding a run's first id
/// and ids before it, or its last id and ids after it, is split there into
/// spans with the same columns. One statement for every run.
fn cut(tx: &mut Session<'_, impl GenericClient>, runs: &Runs) -> Result<()> {
    tx.execute(
        &format!(
            "WITH {RUNS},
             -- A cut is before the id `at`: each run's first id and the id
             -- past its last.
             c (g, at) AS (SELECT g, f FROM r UNION SELECT g, l + 1 FROM r),
             -- The span holding an id `at` and ids before it: the one that
             -- starts last before it, if it reaches it.
             hit AS (
                 SELECT s.group_id, s.first, c.at FROM c CROSS JOIN LATERAL (
                     SELECT group_id, first, last FROM spans WHERE group_id = c.g AND first < c.at
                     ORDER BY first DESC LIMIT 1
                 ) AS s WHERE s.last >= c.at
             ),
             gone AS (
                 DELETE FROM spans s USING (SELECT DISTINCT group_id, first FROM hit) AS h
                 WHERE s.group_id = h.group_id AND s.first = h.first RETURNING s.*
             ),
             -- Each span cut beside its cuts in order: its piece before
             -- each cut, from its start or the cut before, and after the
             -- last cut its piece from there.
             pts AS (
                 SELECT gone.*, hit.at, lag(hit.at) OVER w AS before, lead(hit.at) OVER w AS after
                 FROM gone JOIN hit ON hit.group_id = gone.group_id AND hit.first = gone.first
                 WINDOW w AS (PARTITION BY gone.group_id, gone.first ORDER BY hit.at)
             )
             INSERT INTO spans (group_id, first, last, {SPAN_COLUMNS})
             SELECT group_id, coalesce(before, first), at - 1, {SPAN_COLUMNS} FROM pts
             UNION ALL
             SELECT group_id, at, last, {SPAN_COLUMNS} FROM pts WHERE after IS NULL"
        ),
        &runs.params(&[]),
    )?;
    Ok(())
}

/// Merges alike neighbours over each run and beside it: the spans that
/// start in a run or just past it, and the one before it, are rewritten
/// with each stretch of adjacent spans with equal columns (`IS NOT
/// DISTINCT FROM`: a NULL equal to a NULL) as one span. One statement.
fn merge(tx: &mut Session<'_, impl GenericClient>, runs: &Runs) -> Result<()> {
    let alike = alike_before();
    tx.execute(
        &format!(
            "WITH {RUNS},
             hit AS (
                 SELECT s.group_id, s.first FROM r JOIN spans s ON s.group_id = r.g AND s.first BETWEEN r.f AND r.l + 1
                 UNION
                 SELECT b.group_id, b.first FROM r CROSS JOIN LATERAL (
                     SELECT group_id, first FROM spans WHERE group_id = r.g AND first < r.f
                     ORDER BY first DESC LIMIT 1
                 ) AS b
             ),
             gone AS (
                 DELETE FROM spans s USING hit WHERE s.group_id = hit.group_id AND s.first = hit.first RETURNING s.*
             ),
             marked AS (
                 SELECT *, CASE WHEN lag(last) OVER w = first - 1 AND {alike} THEN 0 ELSE 1 END AS starts
                 FROM gone WINDOW w AS (PARTITION BY group_id ORDER BY first)
             ),
             islands AS (SELECT *, sum(starts) OVER (PARTITION BY group_id ORDER BY first) AS island FROM marked)
             INSERT INTO spans (group_id, first, last, {SPAN_COLUMNS})
             SELECT group_id, min(first), max(last), {SPAN_COLUMNS} FROM islands
             GROUP BY group_id, island, {SPAN_COLUMNS}"
        ),
        &runs.params(&[]),
    )?;
    Ok(())
}

/// The primitive of every write of state: for the items of `runs`, the
/// spans cut at the runs' ends, then `UPDATE spans SET {set}` over the
/// spans inside a run that `filter` keeps (an expression over `spans`'
/// columns, `true` for all), then alike neighbours merged. `set` and
/// `filter` are the write's own expressions over the span's columns, as
/// they were over an item's (`attempts = attempts + 1`), their parameters
/// `more` numbered from `$4` (`$1`–`$3` are the runs). Returns the spans
/// written as (group, first, last), in no order.
pub(super) fn write_spans(
    tx: &mut Session<'_, impl GenericClient>,
    runs: &Runs,
    set: &str,
    filter: &str,
    more: &[Param<'_>],
) -> Result<Vec<(i64, i64, i64)>> {
    if runs.is_empty() {
        return Ok(Vec::new());
    }
    lock_spans(tx, &runs.group_list())?;
    cut(tx, runs)?;
    let written: Vec<(i64, i64, i64)> = tx
        .query(
            &format!(
                "UPDATE spans SET {set}
                 FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS r (g, f, l)
                 WHERE spans.group_id = r.g AND spans.first BETWEEN r.f AND r.l AND ({filter})
                 RETURNING spans.group_id, spans.first, spans.last"
            ),
            &runs.params(more),
        )?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    merge(tx, runs)?;
    Ok(written)
}

/// A write over whole spans: `UPDATE spans SET {set} WHERE {filter}`, its
/// parameters `params` from `$1`, the spans of `groups` held first; then
/// alike neighbours merged around each span written. For a filter over
/// the spans' own columns (every parked span of a group). Returns the
/// spans written as (group, first, last).
pub(super) fn write_whole_spans(
    tx: &mut Session<'_, impl GenericClient>,
    groups: &[i64],
    set: &str,
    filter: &str,
    params: &[Param<'_>],
) -> Result<Vec<(i64, i64, i64)>> {
    lock_spans(tx, groups)?;
    let written: Vec<(i64, i64, i64)> = tx
        .query(&format!("UPDATE spans SET {set} WHERE {filter} RETURNING group_id, first, last"), params)?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    merge(tx, &Runs::of_spans(&written))?;
    Ok(written)
}

/// Deletes the spans of the items of `runs` (cut at the runs' ends
/// first, their pieces outside kept). Neighbours across a run deleted are
/// not adjacent any more, so nothing merges.
pub(super) fn delete_spans(tx: &mut Session<'_, impl GenericClient>, runs: &Runs) -> Result<()> {
    if runs.is_empty() {
        return Ok(());
    }
    lock_spans(tx, &runs.group_list())?;
    cut(tx, runs)?;
    tx.execute(
        "DELETE FROM spans USING unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS r (g, f, l)
         WHERE spans.group_id = r.g AND spans.first BETWEEN r.f AND r.l",
        &runs.params(&[]),
    )?;
    Ok(())
}

/// How many items of the group `group` are due at `now` (SQL expressions,
/// parameters) and listed by no reservation, as a scalar `bigint`
/// subquery: the lengths of the group's queued spans due by then (through
/// `spans_queued`), less the ids its reservations list that such a span
/// holds (each found as the span of its group that starts last at or
/// before it).
pub(super) fn due_count(group: &str, now: &str) -> String {
    format!(
        "((SELECT COALESCE(sum(s.last - s.first + 1), 0) FROM spans s
           WHERE s.group_id = {group} AND s.state = 'queued' AND s.next_attempt_at <= {now})
          - (SELECT count(*) FROM in_flight f CROSS JOIN LATERAL (
                 SELECT state, next_attempt_at, last FROM spans s WHERE s.group_id = f.group_id AND s.first <= f.id
                 ORDER BY s.first DESC LIMIT 1
             ) AS s
             WHERE f.group_id = {group} AND s.last >= f.id AND s.state = 'queued' AND s.next_attempt_at <= {now}))::bigint"
    )
}

/// For tests: the items `first` to `last` (whatever their groups) given
/// the state `set` (a `SET` list over a span's columns, no parameters)
/// through `write_spans`, as `UPDATE items SET … WHERE id BETWEEN` did.
#[cfg(test)]
pub(super) fn set_state(tx: &mut Session<'_, impl GenericClient>, first: i64, last: i64, set: &str) -> Result<()> {
    let named = super::rows::held_by_spans(tx, &(first..=last).collect::<Vec<_>>())?;
    write_spans(tx, &Runs::of(&named), set, "true", &[])?;
    Ok(())
}

/// For tests: item `id` dropped (its span cut), as `DELETE FROM items`
/// did.
#[cfg(test)]
pub(super) fn drop_item(tx: &mut Session<'_, impl GenericClient>, id: i64) -> Result<()> {
    let held = super::rows::held_by_spans(tx, &[id])?;
    delete_spans(tx, &Runs::of(&held))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_a_groups_ids_that_follow_each_other() {
        let runs = Runs::of(&[(2, 5), (1, 3), (1, 1), (1, 2), (2, 4), (1, 2), (2, 7), (1, 5)]);
        assert_eq!(runs, Runs { groups: vec![1, 1, 2, 2], firsts: vec![1, 5, 4, 7], lasts: vec![3, 5, 5, 7] });
        assert_eq!(Runs::of_group(3, &[9, 8]), Runs { groups: vec![3], firsts: vec![8], lasts: vec![9] });
        assert!(Runs::of(&[]).is_empty());
        let spans = Runs::of_spans(&[(1, 5, 9), (1, 1, 4), (1, 11, 12), (2, 1, 1)]);
        assert_eq!(spans, Runs { groups: vec![1, 1, 2], firsts: vec![1, 11, 1], lasts: vec![9, 12, 1] });
    }

    /// The primitive does what the items' own statements did: an oracle
    /// table of item rows with state columns (taken from the items joined
    /// to their spans, `item_states`) gets each write as the items' `UPDATE`
    /// it was, and the spans get it through `write_spans` (or a drop
    /// through `delete_spans`, a write over whole spans through
    /// `write_whole_spans`): 300 writes of random runs over two groups
    /// whose ids alternate in places, some filtered by a column. After each
    /// the spans, expanded to their ids, equal the oracle row for row, keep
    /// their rules (`spans_agree`), and no two adjacent spans of a group
    /// are alike.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_write_spans_does_what_the_items_statement_did() {
        use super::super::batches::spans_agree;
        use crate::ledger::conformance::{dedupe_day, test_postgres, two_groups};
        use crate::ledger::Intake;
        let mut ledger = test_postgres();
        let item = two_groups();
        let now: super::super::DateTime<super::super::Utc> = "2026-12-03T09:00:00Z".parse().unwrap();
        ledger.admit(&(0..60).map(|i| item(0, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
        ledger.admit(&(0..30).map(|i| item(1, i)).collect::<Vec<_>>(), now, &dedupe_day()).unwrap();
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
        let equal = SPAN_COLUMNS
            .split(',')
            .map(|c| format!("o.{0} IS NOT DISTINCT FROM e.{0}", c.trim()))
            .collect::<Vec<_>>()
            .join(" AND ");
        let differing = format!(
            "SELECT coalesce(o.id, e.id) FROM oracle o FULL JOIN (
                 SELECT x.id, s.group_id, {SPAN_COLUMNS} FROM spans s CROSS JOIN LATERAL generate_series(s.first, s.last) AS x (id)
             ) AS e ON e.id = o.id
             WHERE o.id IS NULL OR e.id IS NULL OR o.group_id <> e.group_id OR NOT ({equal})
             ORDER BY 1 LIMIT 1"
        );
        // A write's `SET` and its filter (over an item's or a span's
        // columns alike).
        let writes = [
            (
                "state = 'queued', next_attempt_at = now() + interval '5 s', attempts = attempts + 1,
                 streak = CASE WHEN last_class IS NOT DISTINCT FROM 'transient' THEN streak + 1 ELSE 1 END,
                 last_class = 'transient'",
                "true",
            ),
            (
                "state = 'accepted', accepted_at = '2026-12-03T09:00:07Z', next_attempt_at = NULL,
                 last_class = 'accepted'",
                "true",
            ),
            (
                "state = 'parked', parked_fingerprint = 'fp', last_class = 'misconfigured', next_attempt_at = NULL",
                "true",
            ),
            (
                "state = 'queued', next_attempt_at = '2026-12-03T09:00:05Z', streak = 0, streak_started_at = NULL",
                "true",
            ),
            ("attempts = attempts + 1, last_request_id = 7", "state = 'queued'"),
            (
                "state = 'queued', parked_fingerprint = NULL, next_attempt_at = '2026-12-03T09:00:05Z'",
                "state = 'parked'",
            ),
        ];
        let mut random = crate::ledger::conformance::Seeded::new(4812);
        let steps: Vec<(i64, i64, u64)> = (0..300).map(|_| random.step(110, 12, 24)).collect();
        let kinds = ledger
            .transaction(|tx| {
                let mut kinds = [0usize; 3];
                super::super::rows::fill_item_rows(tx, "item_rows")?;
                tx.batch_execute(&format!(
                    "CREATE TEMP TABLE oracle ON COMMIT DROP AS SELECT id, group_id, {SPAN_COLUMNS} FROM item_rows"
                ))?;
                for (step, &(first, last, kind)) in steps.iter().enumerate() {
                    match kind {
                        0 => {
                            drop_item(tx, first)?;
                            tx.execute("DELETE FROM oracle WHERE id = $1", &[&first])?;
                            kinds[0] += 1;
                        }
                        // Every parked span of the first group queued again.
                        1 => {
                            let group: i64 = tx.query_one("SELECT min(group_id) FROM spans", &[])?.get(0);
                            let (set, filter) = writes[5];
                            let filter = format!("group_id = $1 AND {filter}");
                            tx.execute(&format!("UPDATE oracle SET {set} WHERE {filter}"), &[&group])?;
                            write_whole_spans(tx, &[group], set, &filter, &[&group])?;
                            kinds[1] += 1;
                        }
                        k => {
                            let (set, filter) = writes[k as usize % writes.len()];
                            let rows = tx.query(
                                &format!(
                                    "UPDATE oracle SET {set} WHERE id BETWEEN $1 AND $2 AND {filter} RETURNING id"
                                ),
                                &[&first, &last],
                            )?;
                            // The runs are the ids the write names, not
                            // those its filter kept.
                            let named: Vec<(i64, i64)> =
                                super::super::rows::held_by_spans(tx, &(first..=last).collect::<Vec<_>>())?;
                            let written = write_spans(tx, &Runs::of(&named), set, filter, &[])?;
                            let n: i64 = written.iter().map(|(_, f, l)| l - f + 1).sum();
                            assert_eq!(n, rows.len() as i64, "step {step}: the spans written hold the items written");
                            kinds[2] += 1;
                        }
                    }
                    if let Some(r) = tx.query_opt(&differing, &[])? {
                        panic!("step {step}, ids {first}-{last}, kind {kind}: item {} differs", r.get::<_, i64>(0));
                    }
                    if let Err(e) = spans_agree(tx) {
                        panic!("step {step}, ids {first}-{last}, kind {kind}: {e}");
                    }
                    let alike: i64 = tx.query_one(&adjacent_alike, &[])?.get(0);
                    assert_eq!(alike, 0, "step {step}: adjacent spans alike");
                }
                Ok(kinds)
            })
            .unwrap();
        assert!(kinds.iter().all(|k| *k > 5), "every kind of write ran: {kinds:?}");
        let spans: i64 = ledger.transaction(|tx| Ok(tx.query_one("SELECT count(*) FROM spans", &[])?.get(0))).unwrap();
        assert!(spans > 20, "{spans} spans");
    }
}
