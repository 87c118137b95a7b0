//! The item ids a recorded request names, as one value: ascending, each
//! the difference from the one before in LEB128 (a batch of 10,000 ids
//! claimed together takes about 10 KB). Both backends store it as bytes.

use super::{LedgerError, NewItem, Result};
use crate::model::GroupKey;

/// `ids` (any order, no repeats) as bytes.
pub fn encode(ids: &[i64]) -> Vec<u8> {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    let mut out = Vec::with_capacity(sorted.len() * 2);
    let mut last = 0i64;
    for id in sorted {
        let mut delta = id.wrapping_sub(last) as u64;
        last = id;
        loop {
            let byte = (delta & 0x7f) as u8;
            delta >>= 7;
            if delta == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
    }
    out
}

/// The ids `encode` wrote, ascending.
pub fn decode(bytes: &[u8]) -> Result<Vec<i64>> {
    let mut ids = Vec::new();
    let (mut last, mut delta, mut shift) = (0i64, 0u64, 0u32);
    for &byte in bytes {
        if shift > 63 {
            return Err(bad());
        }
        delta |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            last = last.wrapping_add(delta as i64);
            ids.push(last);
            (delta, shift) = (0, 0);
        } else {
            shift += 7;
        }
    }
    if shift != 0 {
        return Err(bad());
    }
    Ok(ids)
}

fn bad() -> LedgerError {
    LedgerError::Invalid("the ledger's requests.items holds bytes that are not a list of item ids".into())
}

/// The item ids a request names, from its `n`, `first_item` and `items`
/// (none when it names one item, `first`).
pub fn named(n: i64, first: i64, items: Option<Vec<u8>>) -> Result<Vec<i64>> {
    match items {
        Some(bytes) => decode(&bytes),
        None if n == 1 => Ok(vec![first]),
        None => {
            Err(LedgerError::Invalid("the ledger's requests.items is missing for a request of several items".into()))
        }
    }
}

/// The integer an item is found by in its group: a 64-bit hash of its URL
/// (xxh3, stable across versions and machines). Two URLs of one group with
/// the same key (about one chance in 10^8 for a million URLs) are told
/// apart by their text: the second takes the next key that is free
/// (`next_key`), and a lookup follows the same steps.
pub fn url_key(url: &str) -> i64 {
    xxhash_rust::xxh3::xxh3_64(url.as_bytes()) as i64
}

/// The key tried after `key` when it holds another URL.
pub fn next_key(key: i64) -> i64 {
    key.wrapping_add(1)
}

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

/// Each item's group id, in batch order: `id_of` is asked once per run of
/// items of one group (a batch is mostly one group).
pub fn group_ids(batch: &[NewItem], mut id_of: impl FnMut(&GroupKey) -> Result<i64>) -> Result<Vec<i64>> {
    let mut ids = Vec::with_capacity(batch.len());
    let mut last: Option<(&GroupKey, i64)> = None;
    for item in batch {
        let id = match last {
            Some((key, id)) if *key == *item.group => id,
            _ => id_of(&item.group)?,
        };
        last = Some((&item.group, id));
        ids.push(id);
    }
    Ok(ids)
}

/// What a foreign key from items to their group would check, once per
/// group of a batch: `found` of the `wanted` distinct group ids are in the
/// ledger. Admission checks it itself on both backends: SQLite's runs with
/// foreign keys off, PostgreSQL's items have no such key (docs/design.md).
pub fn groups_found(found: i64, wanted: usize) -> Result<()> {
    if found as usize != wanted {
        return Err(LedgerError::Invalid(format!(
            "a group of the items being admitted is not in the ledger ({found} of {wanted} found)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_in_order() {
        for ids in [vec![], vec![1], vec![5, 3, 1_000_000, 2, i64::MAX], (1..=10_000).collect::<Vec<i64>>()] {
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            assert_eq!(decode(&encode(&ids)).unwrap(), sorted);
        }
        assert!(encode(&(1..=10_000).collect::<Vec<i64>>()).len() <= 10_000, "one byte an id claimed together");
        assert!(decode(&[0x80]).is_err(), "a cut value");
    }

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
