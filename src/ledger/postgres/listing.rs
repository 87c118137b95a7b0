//! Which items a URL names, read from schema 12's hash runs and spans
//! (issue 48; docs/design.md, *A ledger per batch*) instead of the items'
//! texts, as SQLite's `listing` does: a URL becomes its id in a group by
//! its hash (`batches::find_ids`), and the id is an item still where a
//! span holds it. The spans agree with the items at every commit
//! (`batches::set_spans`), so what is read is what the items say.

use super::super::batches::url_hash;
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
