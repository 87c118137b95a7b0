//! Finding a batch's URLs among the items of their groups, shared by both
//! backends' admission and preview: by the URLs' 128-bit hashes through a
//! group's hash runs first (issue 48, on its branch), then the URLs not
//! found by key, which gives a new URL the key it takes; the keys grouped,
//! the steps past keys another URL holds, and when a look-up is large
//! enough to share with a helper connection.

use super::url_keys::{next_key, url_key};
use super::Result;

/// The fewest keys a look-up reads for it to be shared with a helper
/// connection (each backend's `admit::Helper`): a smaller one's reading is
/// not worth two threads.
pub const SHARED_LOOK_UP: usize = 4_096;

/// Keys to look up by group, each group's sorted and distinct.
pub type KeysByGroup = std::collections::BTreeMap<i64, Vec<i64>>;

/// The keys `resolve` wants (`wanted`) by group; a group the ledger has
/// never seen (-1) holds nothing, and is left out.
pub fn keys_by_group(wanted: &[(i64, i64)]) -> KeysByGroup {
    let mut by_group = KeysByGroup::new();
    for &(group, key) in wanted.iter().filter(|(group, _)| *group >= 0) {
        by_group.entry(group).or_default().push(key);
    }
    for keys in by_group.values_mut() {
        keys.sort_unstable();
        keys.dedup();
    }
    by_group
}

/// Where `resolve`'s `fetch` hands what it read of an item: its (group,
/// key), its URL and what the caller wants of it.
pub type Found<'f, E> = dyn FnMut((i64, i64), &str, E) + 'f;

/// Finds each URL's item in its group by key, following `next_key` past
/// keys another URL holds: `Ok` with what `fetch` read of the URL's item,
/// or `Err` with the key a URL new to its group takes (never one another
/// URL of this batch took). `fetch` reads the items at some (group, key)
/// pairs and hands each to its sink: its group and key, its URL (borrowed
/// from the row: a URL of the batch is not copied) and what the caller
/// wants of it.
pub fn resolve<E: Clone>(
    urls: &[&str],
    groups: &[i64],
    mut fetch: impl FnMut(&[(i64, i64)], &mut Found<'_, E>) -> Result<()>,
) -> Result<Vec<std::result::Result<E, i64>>> {
    use rustc_hash::FxHashMap as HashMap;
    use std::borrow::Cow;
    let mut keys: Vec<i64> = urls.iter().map(|u| url_key(u)).collect();
    let mut out: Vec<Option<std::result::Result<E, i64>>> = vec![None; urls.len()];
    // The keys new URLs of this batch took, and which URL took each.
    let mut claimed: HashMap<(i64, i64), usize> = HashMap::default();
    let mut pending: Vec<usize> = (0..urls.len()).collect();
    while !pending.is_empty() {
        let wanted: Vec<(i64, i64)> = pending.iter().map(|&i| (groups[i], keys[i])).collect();
        // The first URL looked up at each (group, key), by its place in
        // `pending`, which holds what was found there: an item holding that
        // URL keeps the batch's text; only another URL's is copied.
        let mut first: HashMap<(i64, i64), usize> = HashMap::default();
        first.reserve(pending.len());
        for (k, &at) in wanted.iter().enumerate() {
            first.entry(at).or_insert(k);
        }
        let mut found: Vec<Option<(Cow<'_, str>, E)>> = vec![None; pending.len()];
        fetch(&wanted, &mut |at, url, e| {
            if let Some(&k) = first.get(&at) {
                let i = pending[k];
                let url = if urls[i] == url { Cow::Borrowed(urls[i]) } else { Cow::Owned(url.to_string()) };
                found[k] = Some((url, e));
            }
        })?;
        let mut next = Vec::new();
        for (&i, at) in pending.iter().zip(wanted) {
            let taken_by = claimed.get(&at).copied();
            match (found[first[&at]].as_ref(), taken_by) {
                (Some((url, e)), _) if url == urls[i] => out[i] = Some(Ok(e.clone())),
                // The same URL twice in the batch: the same new item.
                (None, Some(j)) if urls[j] == urls[i] => out[i] = Some(Err(at.1)),
                (None, None) => {
                    claimed.insert(at, i);
                    out[i] = Some(Err(at.1));
                }
                // Another URL holds the key, or took it in this batch.
                _ => {
                    keys[i] = next_key(keys[i]);
                    next.push(i);
                }
            }
        }
        pending = next;
    }
    Ok(out.into_iter().map(|o| o.expect("every URL was resolved")).collect())
}

/// The hashes to look up by group, each group's sorted and distinct, each
/// with the place in the batch of the first URL that has it; a group the
/// ledger has never seen (-1) holds nothing, and is left out.
pub type HashesByGroup = std::collections::BTreeMap<i64, Vec<(u128, usize)>>;

/// `HashesByGroup` of a batch whose URLs' hashes are `hashes`, in the
/// groups `groups` (same order).
pub fn hashes_by_group(hashes: &[u128], groups: &[i64]) -> HashesByGroup {
    let mut by_group = HashesByGroup::new();
    for (place, (&hash, &group)) in hashes.iter().zip(groups).enumerate().filter(|(_, (_, g))| **g >= 0) {
        by_group.entry(group).or_default().push((hash, place));
    }
    for hashes in by_group.values_mut() {
        // Sorted by hash, then place: the first of equal hashes is the first URL.
        hashes.sort_unstable();
        hashes.dedup_by_key(|(hash, _)| *hash);
    }
    by_group
}

/// The items found by hash (`found`: what the caller read of the item at
/// each (group, hash), whose text it compared with the batch's URL), each
/// URL's; the URLs not found are looked up by key (`by_key`, given those
/// URLs and their groups, as `resolve` answers): a URL whose hash no run
/// holds, or whose id found has no item any more (a URL dropped). A URL
/// the key look-up finds anyway is found: the items are what the ledger
/// holds while the runs are being built beside them.
pub fn resolve_by_hash<E: Clone>(
    urls: &[&str],
    groups: &[i64],
    hashes: &[u128],
    found: &rustc_hash::FxHashMap<(i64, u128), E>,
    by_key: impl FnOnce(&[&str], &[i64]) -> Result<Vec<std::result::Result<E, i64>>>,
) -> Result<Vec<std::result::Result<E, i64>>> {
    let mut out: Vec<Option<std::result::Result<E, i64>>> = vec![None; urls.len()];
    let mut rest = Vec::new();
    for (i, slot) in out.iter_mut().enumerate() {
        match found.get(&(groups[i], hashes[i])) {
            Some(e) => *slot = Some(Ok(e.clone())),
            None => rest.push(i),
        }
    }
    if !rest.is_empty() {
        let rest_urls: Vec<&str> = rest.iter().map(|&i| urls[i]).collect();
        let rest_groups: Vec<i64> = rest.iter().map(|&i| groups[i]).collect();
        for (i, resolved) in rest.into_iter().zip(by_key(&rest_urls, &rest_groups)?) {
            out[i] = Some(resolved);
        }
    }
    Ok(out.into_iter().map(|o| o.expect("every URL was resolved")).collect())
}

/// What a preview finds of each URL of a batch in the groups `group_ids`
/// (`-1`: a group the ledger has never seen): its item, or `None`. A batch
/// of unseen groups alone (an empty ledger's) holds none of them and is not
/// looked up at all.
pub fn previewed<E>(
    group_ids: &[i64],
    look_up: impl FnOnce() -> Result<Vec<std::result::Result<E, i64>>>,
) -> Result<Vec<Option<E>>> {
    if group_ids.iter().all(|g| *g < 0) {
        return Ok(group_ids.iter().map(|_| None).collect());
    }
    Ok(look_up()?.into_iter().map(std::result::Result::ok).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A URL whose key another URL holds is found at the next key; a URL
    /// met twice is found twice; a new one takes its own key.
    #[test]
    fn resolve_follows_keys_another_url_holds() {
        let (a, b) = (url_key("https://s.example/a"), url_key("https://s.example/b"));
        let ledger = [((1, a), "https://s.example/other", 0), ((1, next_key(a)), "https://s.example/a", 7)];
        let urls = ["https://s.example/a", "https://s.example/b", "https://s.example/a"];
        let found = resolve(&urls, &[1, 1, 1], |wanted, found| {
            for (at, url, e) in ledger.iter().filter(|(at, _, _)| wanted.contains(at)) {
                found(*at, url, *e);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(found, [Ok(7), Err(b), Ok(7)]);
    }

    /// Each group's hashes sorted and distinct, with the first URL's place;
    /// a group never seen left out.
    #[test]
    fn hashes_are_grouped_sorted_and_distinct() {
        let by_group = hashes_by_group(&[9, 4, 9, 4, 7, 1], &[2, 2, 2, 5, -1, 2]);
        let expected: HashesByGroup = [(2, vec![(1, 5), (4, 1), (9, 0)]), (5, vec![(4, 3)])].into();
        assert_eq!(by_group, expected);
    }

    /// The URLs found by hash are not looked up by key; the others are, in
    /// batch order, a URL twice both times, and their answers put back in
    /// place.
    #[test]
    fn urls_not_found_by_hash_are_looked_up_by_key() {
        let urls = ["a", "b", "c", "b", "d"];
        let found: rustc_hash::FxHashMap<(i64, u128), u8> = [((1, 10), 7), ((2, 30), 8)].into_iter().collect();
        let resolved = resolve_by_hash(&urls, &[1, 1, 2, 1, 2], &[10, 20, 30, 20, 40], &found, |urls, groups| {
            assert_eq!((urls, groups), (&["b", "b", "d"][..], &[1, 1, 2][..]));
            Ok(vec![Err(5), Err(5), Ok(9)])
        })
        .unwrap();
        assert_eq!(resolved, [Ok(7), Err(5), Ok(8), Err(5), Ok(9)]);
        let all = resolve_by_hash(&urls[..1], &[1], &[10], &found, |_, _| panic!("looked up by key")).unwrap();
        assert_eq!(all, [Ok(7)]);
    }

    /// A batch of groups the ledger has never seen is not looked up; any
    /// other is, a URL new to its group found as `None`.
    #[test]
    fn a_preview_looks_up_only_groups_the_ledger_has_seen() {
        let unseen = previewed::<u8>(&[-1, -1], || panic!("looked up")).unwrap();
        assert_eq!(unseen, [None, None]);
        let seen = previewed(&[-1, 4], || Ok(vec![Err(9), Ok(7u8)])).unwrap();
        assert_eq!(seen, [None, Some(7)]);
    }
}
