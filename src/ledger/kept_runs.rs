//! The hash runs a process has read or written, kept in memory for its
//! next look-ups (docs/design.md, *A ledger per batch*, *Runs kept in
//! memory*). A run's entries never change once written (a merge writes a
//! new run and deletes the old), so each admission of a submit need not
//! read again every run its group holds for its new URLs, which made a
//! look-up's reads grow with the ledger. The backends store the runs and
//! say what names one run once (`RunKey`); what is kept, and how much, is
//! decided here, once for both.

use std::sync::{Arc, Mutex};

/// A run's entries as a look-up or a write last held them.
pub enum Kept {
    /// A batch's `sorted` blob (a run of tier 0).
    Sorted(Vec<u8>),
    /// A merged run's hashes, each its first 4 bytes, in order: a hash
    /// whose prefix is not among them is not in the run, and only the
    /// pages of those that are need be read (a known URL's, and a fresh
    /// one's about as often as the run's size is of 2^32).
    Prefixes(Vec<u32>),
    /// A merged run's entries (hash and id) whole, its pages one after the
    /// other, for a run another process wrote that a look-up reads in part
    /// (SQLite's): its known URLs' ids are found with no page read. Each
    /// of a run again's batches read every page of such a run anew (a
    /// batch's hashes fall on every page), which was the most of what that
    /// run read; kept up to `ENTRIES_BYTES` in all.
    Entries(Vec<u8>),
}

impl Kept {
    fn bytes(&self) -> usize {
        match self {
            Kept::Sorted(blob) => blob.len(),
            Kept::Prefixes(prefixes) => prefixes.len() * 4,
            Kept::Entries(entries) => entries.len(),
        }
    }

    /// The prefix of `hash` as `Prefixes` keeps it.
    pub fn prefix(hash: u128) -> u32 {
        (hash >> 96) as u32
    }

    /// Of `sought` (indexes into `hashes`, in hash order), those whose
    /// prefix `prefixes` holds: the only ones the run may hold. Each
    /// search starts at the last one's place and gallops (1, 2, 4, …
    /// entries) before its binary search, as `batches`' blobs are
    /// searched: a batch's hashes against a run many times its size cost
    /// a few steps each, in memory near the last, not a binary search of
    /// the whole run each.
    pub fn may_hold(prefixes: &[u32], hashes: &[u128], sought: &[usize]) -> Vec<usize> {
        let mut from = 0;
        let mut maybe = Vec::new();
        for &k in sought {
            let prefix = Kept::prefix(hashes[k]);
            let (mut lo, mut hi, mut step) = (from, from, 1);
            while hi < prefixes.len() && prefixes[hi] < prefix {
                lo = hi + 1;
                hi = lo + step;
                step *= 2;
            }
            let hi = hi.min(prefixes.len());
            from = lo + prefixes[lo..hi].partition_point(|p| *p < prefix);
            if prefixes.get(from) == Some(&prefix) {
                maybe.push(k);
            }
        }
        maybe
    }
}

/// Which run a kept copy is of, named once by its backend: the ledger (a
/// PostgreSQL schema's `hash_runs` oid; 0 for SQLite), the run's group
/// and id, and a stamp that tells apart two runs given the same id (the
/// id of PostgreSQL's writing transaction; a random number SQLite writes
/// with the run), so a run of an id written again — after a rollback, or
/// its table made anew — is another key, never the copy kept of the old.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RunKey {
    pub ledger: u64,
    pub group: i64,
    pub run: i64,
    pub stamp: u64,
}

type KeptRuns = rustc_hash::FxHashMap<RunKey, Arc<Kept>>;

/// Kept across ledgers and connections (the key names the run once), up
/// to `KEPT_BYTES`.
static KEPT: Mutex<Option<KeptRuns>> = Mutex::new(None);

/// The most bytes of runs `KEPT` holds (a merged run's prefixes take 4
/// bytes a URL); a run that would pass it is read each time, as before.
const KEPT_BYTES: usize = 64 << 20;

/// The most bytes of `Kept::Entries` `KEPT` holds: a small ledger's merged
/// runs whole, and little beside the peak memory of a run on a large one,
/// whose runs are read in part as before (docs/performance.md, *Measured
/// choices*).
const ENTRIES_BYTES: usize = 4 << 20;

fn entries_kept(kept: &KeptRuns) -> usize {
    kept.values().filter(|r| matches!(***r, Kept::Entries(_))).map(|r| r.bytes()).sum()
}

/// Whether a run's entries of `bytes` would be kept (`Kept::Entries`).
pub fn room_for_entries(bytes: usize) -> bool {
    kept_runs().as_ref().map_or(0, entries_kept) + bytes <= ENTRIES_BYTES
}

fn kept_runs() -> std::sync::MutexGuard<'static, Option<KeptRuns>> {
    // A panic while the map was held leaves it whole (each change is one
    // insert, remove or retain), so a poisoned lock is taken as it is.
    KEPT.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The copy kept of the run `key`, if any.
pub fn kept(key: &RunKey) -> Option<Arc<Kept>> {
    kept_runs().as_ref().and_then(|k| k.get(key).cloned())
}

/// Lets go the runs kept of `group` of `ledger` that are not among
/// `listed`: merged into others since, by this process or another.
pub fn let_go_unlisted(ledger: u64, group: i64, listed: &[RunKey]) {
    if let Some(kept) = kept_runs().as_mut() {
        kept.retain(|k, _| k.ledger != ledger || k.group != group || listed.contains(k));
    }
}

/// Keeps `run` if it fits, having let go the runs it was merged from
/// (`merged`, when it was just written by a merge). A run written by a
/// transaction that then rolls back is never listed, and goes with the
/// next look-up of its group (`let_go_unlisted`).
pub fn keep(key: RunKey, run: Kept, merged: &[RunKey]) {
    let mut guard = kept_runs();
    let kept = guard.get_or_insert_with(Default::default);
    for old in merged {
        kept.remove(old);
    }
    let used: usize = kept.values().map(|r| r.bytes()).sum();
    let entries_fit = !matches!(run, Kept::Entries(_)) || entries_kept(kept) + run.bytes() <= ENTRIES_BYTES;
    if used + run.bytes() <= KEPT_BYTES && entries_fit {
        kept.insert(key, Arc::new(run));
    }
}

/// How many runs of `group` of `ledger` are kept (tests).
#[cfg(test)]
pub fn kept_of(ledger: u64, group: i64, run: i64) -> usize {
    kept_runs()
        .as_ref()
        .map_or(0, |k| k.keys().filter(|k| k.ledger == ledger && k.group == group && k.run == run).count())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the hashes whose prefix the run holds may be in it, found in
    /// one walk over both sorted lists.
    #[test]
    fn only_hashes_with_a_kept_prefix_may_be_held() {
        let at = |prefix: u32, rest: u128| (u128::from(prefix) << 96) | rest;
        let prefixes = [3, 5, 5, 9];
        let hashes = [at(1, 0), at(3, 7), at(4, 0), at(5, 1), at(9, u128::MAX >> 32), at(10, 0)];
        let sought: Vec<usize> = (0..hashes.len()).collect();
        assert_eq!(Kept::may_hold(&prefixes, &hashes, &sought), [1, 3, 4]);
        assert_eq!(Kept::may_hold(&[], &hashes, &sought), Vec::<usize>::new());
        // Against a binary search of each, over runs and gaps of all sizes.
        let mut random = crate::ledger::conformance::Seeded::new(48);
        for round in 0..50 {
            let mut prefixes: Vec<u32> = (0..random.below(3_000)).map(|_| random.below(10_000) as u32).collect();
            prefixes.sort_unstable();
            let mut hashes: Vec<u128> = (0..random.below(500)).map(|_| at(random.below(10_000) as u32, 0)).collect();
            hashes.sort_unstable();
            let sought: Vec<usize> = (0..hashes.len()).collect();
            let expected: Vec<usize> =
                sought.iter().copied().filter(|&k| prefixes.binary_search(&Kept::prefix(hashes[k])).is_ok()).collect();
            assert_eq!(Kept::may_hold(&prefixes, &hashes, &sought), expected, "round {round}");
        }
    }

    /// A run written is kept and the runs it was merged from let go; a
    /// look-up lets go the runs of its group no longer listed, and no
    /// other group's.
    #[test]
    fn runs_merged_or_no_longer_listed_are_let_go() {
        let key = |group: i64, run: i64| RunKey { ledger: 77, group, run, stamp: 5 };
        keep(key(1, 1), Kept::Sorted(vec![0; 20]), &[]);
        keep(key(1, 2), Kept::Sorted(vec![0; 20]), &[]);
        keep(key(2, 1), Kept::Sorted(vec![0; 20]), &[]);
        keep(key(1, 3), Kept::Prefixes(vec![1, 2]), &[key(1, 1)]);
        assert_eq!((kept_of(77, 1, 1), kept_of(77, 1, 2), kept_of(77, 1, 3)), (0, 1, 1));
        assert!(kept(&RunKey { stamp: 6, ..key(1, 3) }).is_none(), "another stamp is another run");
        keep(key(1, 4), Kept::Prefixes(vec![1]), &[]);
        let_go_unlisted(77, 1, &[key(1, 3), key(1, 4)]);
        assert_eq!((kept_of(77, 1, 2), kept_of(77, 1, 3), kept_of(77, 1, 4)), (0, 1, 1));
        assert_eq!(kept_of(77, 2, 1), 1, "another group's run stays");
    }
}
