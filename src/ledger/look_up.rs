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
    Sought::of(hashes, groups).by_group
}

/// What a batch's look-up seeks, and how its URLs share what it finds:
/// the URLs of one group and hash are one item, found (or new) at the place
/// of the first of them. Found items are kept by that place (a slot a URL),
/// not in a map keyed by group and hash, because hashing each URL's key
/// into two maps was a large share of a run again's work on the ledger's
/// thread (docs/performance.md, *Measured choices*).
pub struct Sought {
    /// Each seen group's hashes, sorted and distinct, with their first place.
    pub by_group: HashesByGroup,
    /// For each URL, the place of the first URL of its group with its hash.
    first: Vec<usize>,
}

impl Sought {
    /// What to seek for a batch whose URLs' hashes are `hashes`, in the
    /// groups `groups` (same order; -1: a group the ledger has never seen).
    pub fn of(hashes: &[u128], groups: &[i64]) -> Sought {
        let mut all: Vec<(i64, u128, usize)> =
            hashes.iter().zip(groups).enumerate().map(|(place, (&hash, &group))| (group, hash, place)).collect();
        // Sorted by group, hash, then place: the first of equal ones is the first URL.
        sort_by_buckets(&mut all);
        let mut first = vec![0; hashes.len()];
        let mut by_group = HashesByGroup::new();
        let mut run_start = 0;
        for (at, &(group, hash, place)) in all.iter().enumerate() {
            if at == 0 || (all[at - 1].0, all[at - 1].1) != (group, hash) {
                run_start = place;
                if group >= 0 {
                    by_group.entry(group).or_default().push((hash, place));
                }
            }
            first[place] = run_start;
        }
        Sought { by_group, first }
    }

    /// The number of distinct (group, hash) pairs to look up.
    pub fn distinct(&self) -> usize {
        self.by_group.values().map(Vec::len).sum()
    }

    /// The URLs at `place` that share their group and hash with an earlier
    /// URL at `first`: `(first, place)`.
    fn repeats(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.first.iter().enumerate().filter(|(place, first)| *place != **first).map(|(place, first)| (*first, place))
    }

    /// Refuses a batch (`urls`, whose hashes these are) two of whose
    /// different URLs of one group share a hash, naming both: the ledger
    /// cannot store them as two items (docs/design.md, *Collisions*).
    pub fn distinct_urls<'a>(&self, urls: impl Fn(usize) -> &'a str) -> Result<()> {
        match self.repeats().find(|&(first, at)| urls(first) != urls(at)) {
            Some((a, b)) => {
                let (a, b) = (urls(a), urls(b));
                Err(super::LedgerError::Invalid(format!("the URLs {a} and {b} share a 128-bit hash")))
            }
            None => Ok(()),
        }
    }

    /// Each URL's item, `found` at the place of its first URL (`found`
    /// holds a slot a URL), or `Err` with that place for a URL new to its
    /// group.
    pub fn each_url<E: Clone>(&self, found: &[Option<E>]) -> Vec<std::result::Result<E, i64>> {
        self.first.iter().map(|&first| found[first].clone().ok_or(first as i64)).collect()
    }
}

/// `entries` (group, hash, place) sorted as `sort_unstable` sorts them,
/// in a few passes: the hashes are uniform (xxh3), so a bucket by group
/// and the hash's top bits, about one for each entry, holds a few entries,
/// each bucket sorted alone. A comparison sort of each batch was most of
/// its look-up's work on the ledger's thread besides the search
/// (docs/performance.md, *Measured choices*).
fn sort_by_buckets(entries: &mut Vec<(i64, u128, usize)>) {
    // The groups, in order (the URLs of one group come in runs: few steps).
    let mut groups: Vec<i64> = Vec::new();
    for &(group, _, _) in entries.iter() {
        if groups.last() != Some(&group) && !groups.contains(&group) {
            groups.push(group);
        }
    }
    groups.sort_unstable();
    let bits = (usize::BITS - entries.len().leading_zeros()).clamp(1, 16);
    let bucket = |&(group, hash, _): &(i64, u128, usize)| {
        let group = groups.binary_search(&group).expect("every entry's group is listed");
        (group << bits) | (hash >> (128 - bits)) as usize
    };
    // Where each bucket starts, then each entry put in its bucket.
    let mut starts = vec![0usize; (groups.len() << bits) + 1];
    for entry in entries.iter() {
        starts[bucket(entry) + 1] += 1;
    }
    for at in 1..starts.len() {
        starts[at] += starts[at - 1];
    }
    let mut sorted = vec![(0, 0, 0); entries.len()];
    let mut next = starts.clone();
    for entry in entries.iter() {
        let b = bucket(entry);
        sorted[next[b]] = *entry;
        next[b] += 1;
    }
    for range in starts.windows(2) {
        if range[1] - range[0] > 1 {
            sorted[range[0]..range[1]].sort_unstable();
        }
    }
    *entries = sorted;
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

    /// Each URL shares what is found with the first URL of its group and
    /// hash, in any group, a group never seen included; a URL of another
    /// group with the same hash is its own.
    #[test]
    fn urls_of_one_group_and_hash_share_the_first_ones_item() {
        let sought = Sought::of(&[9, 4, 9, 9, 7, 7], &[2, 2, 2, 5, -1, -1]);
        assert_eq!(sought.distinct(), 3);
        assert_eq!(sought.repeats().collect::<Vec<_>>(), [(0, 2), (4, 5)]);
        assert!(sought.distinct_urls(|at| ["a", "b", "a", "a", "c", "c"][at]).is_ok());
        let refused = sought.distinct_urls(|at| ["a", "b", "a", "a", "c", "e"][at]).unwrap_err();
        assert_eq!(refused.to_string(), "ledger: the URLs c and e share a 128-bit hash");
        let found = [Some('a'), None, None, Some('d'), None, None];
        assert_eq!(sought.each_url(&found), [Ok('a'), Err(1), Ok('a'), Ok('d'), Err(4), Err(4)]);
    }

    /// The bucket sort sorts as a comparison sort does: several groups (a
    /// never seen one among them), repeated hashes, hashes close together.
    #[test]
    fn buckets_sort_as_a_comparison_sort_does() {
        let mut random = crate::ledger::conformance::Seeded::new(7);
        for round in 0..40 {
            let n = random.below(3_000) as usize;
            let mut entries: Vec<(i64, u128, usize)> = (0..n)
                .map(|place| {
                    let group = random.below(4) as i64 - 1;
                    let hash = match random.below(3) {
                        0 => u128::from(random.below(5)),
                        _ => (u128::from(random.below(1 << 30)) << 98) | u128::from(random.below(1 << 30)),
                    };
                    (group, hash, place)
                })
                .collect();
            let mut expected = entries.clone();
            expected.sort_unstable();
            sort_by_buckets(&mut entries);
            assert_eq!(entries, expected, "round {round}");
        }
        let mut none: Vec<(i64, u128, usize)> = Vec::new();
        sort_by_buckets(&mut none);
        assert!(none.is_empty());
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
