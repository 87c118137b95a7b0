//! Finding a batch's URLs among the items of their groups, shared by both
//! backends' admission and preview: each group's hashes sorted and
//! distinct (`hashes_by_group`), for a look-up through the group's hash
//! runs; when a look-up is large enough to share with a helper
//! connection; and a preview that need not look at all.

use super::Result;

/// The fewest keys a look-up reads for it to be shared with a helper
/// connection (each backend's `admit::Helper`): a smaller one's reading is
/// not worth two threads.
pub const SHARED_LOOK_UP: usize = 4_096;

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

    /// Each group's hashes sorted and distinct, with the first URL's place;
    /// a group never seen left out.
    #[test]
    fn hashes_are_grouped_sorted_and_distinct() {
        let by_group = hashes_by_group(&[9, 4, 9, 4, 7, 1], &[2, 2, 2, 5, -1, 2]);
        let expected: HashesByGroup = [(2, vec![(1, 5), (4, 1), (9, 0)]), (5, vec![(4, 3)])].into();
        assert_eq!(by_group, expected);
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
