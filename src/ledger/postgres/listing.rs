//! Which items a URL names, read from schema 12's hash runs and spans
//! (issue 48; docs/design.md, *A ledger per batch*) instead of the items'
//! texts, as SQLite's `listing` does: a URL becomes its id in a group by
//! its hash (`batches::find_ids`), and the id is an item still where a
//! span holds it. The spans agree with the items at every commit
//! (`batches::set_spans`), so what is read is what the items say.

use super::super::batches::url_hash;
#[cfg(test)]
use super::PgLedger;
use super::{GenericClient, ItemFilter, Result};

/// The id `url` (as stored) has in `group`, if the group ever held it,
/// and whether it is there still (a span holds it) or was dropped: the
/// newest id of the URL, as `find_ids` finds it. An older id of a URL
/// dropped and submitted again is not found here (the runs give the
/// newer), nor one dropped before schema 12 (no batch holds it):
/// `dropped_items` still names those.
pub(super) fn id_of_url(tx: &mut impl GenericClient, group: i64, url: &str) -> Result<Option<(i64, bool)>> {
    let Some(id) = super::batches::find_ids(tx, group, &[url_hash(url)])?[0] else { return Ok(None) };
    let live: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM spans WHERE group_id = $1 AND last >= $2
                 AND first = (SELECT max(first) FROM spans WHERE group_id = $1 AND first <= $2))",
            &[&group, &id],
        )?
        .get(0);
    Ok(Some((id, live)))
}

/// The ids `url` (as stored) has in the groups `filter` names (by
/// property, engine and target) that are items still: what `queue list
/// --url`, `queue retry --url` and `queue drop --url` act on.
pub(super) fn live_ids_of_url(tx: &mut impl GenericClient, filter: &ItemFilter, url: &str) -> Result<Vec<i64>> {
    let engine = filter.engine.map(|e| e.as_str().to_string());
    let groups: Vec<i64> = tx
        .query(
            "SELECT id FROM groups
             WHERE ($1::text IS NULL OR property = $1) AND ($2::text IS NULL OR engine = $2)
                 AND ($3::text IS NULL OR target = $3)",
            &[&filter.property, &engine, &filter.target],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut ids = Vec::new();
    for group in groups {
        if let Some((id, true)) = id_of_url(tx, group, url)? {
            ids.push(id);
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::conformance::{dedupe_day, test_postgres, two_groups};
    use crate::ledger::{Intake, Queue, Runs};
    use chrono::{DateTime, Utc};

    /// A URL's id by its hash in each group, an item still, then dropped
    /// (found, not live), then submitted again (its newer id, live); the
    /// ids `queue retry --url` and `queue drop --url` act on follow, and
    /// `queue list --url` lists the item by them. A URL no group ever held
    /// has none.
    #[test]
    #[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
    fn postgres_a_urls_ids_by_hash_dropped_and_submitted_again() {
        let mut ledger = test_postgres();
        let item = two_groups();
        let now: DateTime<Utc> = "2026-12-03T09:00:00Z".parse().unwrap();
        let batch: Vec<_> = (0..50).map(|i| item(0, i)).chain((0..50).map(|i| item(1, i))).collect();
        ledger.admit(&batch, now, &dedupe_day()).unwrap();
        let url = batch[7].url.clone();
        let in_both = url == batch[57].url;
        let ids = |ledger: &mut PgLedger| -> (Vec<Option<(i64, bool)>>, Vec<i64>) {
            let url = url.clone();
            ledger
                .transaction(|tx| {
                    let groups: Vec<i64> =
                        tx.query("SELECT id FROM groups ORDER BY id", &[])?.iter().map(|r| r.get(0)).collect();
                    let each = groups.iter().map(|g| id_of_url(tx, *g, &url)).collect::<Result<Vec<_>>>()?;
                    Ok((each, live_ids_of_url(tx, &ItemFilter::default(), &url)?))
                })
                .unwrap()
        };
        let item_id = |ledger: &mut PgLedger| -> Vec<i64> {
            let url = url.clone();
            ledger
                .transaction(|tx| {
                    Ok(tx
                        .query("SELECT id FROM items WHERE url = $1 ORDER BY id", &[&url])?
                        .iter()
                        .map(|r| r.get(0))
                        .collect())
                })
                .unwrap()
        };
        let held = item_id(&mut ledger);
        let (each, live) = ids(&mut ledger);
        assert_eq!(live, held, "in_both: {in_both}");
        assert_eq!(each.iter().flatten().map(|(id, _)| *id).collect::<Vec<_>>(), held);
        assert!(each.iter().flatten().all(|(_, live)| *live));
        let filter = ItemFilter { url: Some(url.clone()), ..Default::default() };
        let listed: Vec<i64> = ledger.items(&filter, now).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(listed, held);
        assert_eq!(ledger.drop_items(&filter, now).unwrap(), held.len() as u64);
        let (each, live) = ids(&mut ledger);
        assert!(live.is_empty());
        assert_eq!(
            each.iter().flatten().map(|(id, live)| (*id, *live)).collect::<Vec<_>>(),
            held.iter().map(|id| (*id, false)).collect::<Vec<_>>(),
            "dropped: found, not live"
        );
        assert!(ledger.items(&filter, now).unwrap().is_empty());
        assert_eq!(ledger.retry(&filter, now).unwrap(), 0);
        let again: Vec<_> = batch.iter().filter(|i| i.url == url).cloned().collect();
        ledger.admit(&again, now, &dedupe_day()).unwrap();
        let newer = item_id(&mut ledger);
        assert!(newer.iter().zip(&held).all(|(new, old)| new > old), "{newer:?} after {held:?}");
        let (each, live) = ids(&mut ledger);
        assert_eq!(live, newer);
        assert!(each.iter().flatten().all(|(_, live)| *live));
        let listed: Vec<i64> = ledger.items(&filter, now).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(listed, newer);
        // `log --url` reads the same ids: no request names any, so none.
        assert!(ledger.attempts(Some(&url), 10).unwrap().is_empty());
        let (each, live) = {
            let other = "https://nowhere.example/never".to_string();
            ledger
                .transaction(|tx| {
                    let g: i64 = tx.query_one("SELECT min(id) FROM groups", &[])?.get(0);
                    Ok((id_of_url(tx, g, &other)?, live_ids_of_url(tx, &ItemFilter::default(), &other)?))
                })
                .unwrap()
        };
        assert_eq!((each, live), (None, vec![]));
    }
}
