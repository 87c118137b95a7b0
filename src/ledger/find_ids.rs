//! The look-up of hashes through a group's sorted runs, one walk for both
//! backends (docs/design.md, *A ledger per batch*): which runs are read,
//! in which order, when a merged run's pages are sought a hash at a time
//! and when read in order, and what is kept in memory (`kept_runs`). A
//! backend lists its runs and reads their blobs and pages
//! (`RunPages`); it decides none of this.

use super::batches;
use super::kept_runs::{keep, kept, let_go_unlisted, room_for_entries, Kept, RunKey};
use super::{LedgerError, Result};

/// A group's runs as its backend lists them: newest first (the lower
/// tiers, then the later runs of a tier), so a URL admitted again after a
/// drop is found at its newer id.
pub struct Listed {
    /// The ledger (`RunKey::ledger`) and group the runs are of.
    pub ledger: u64,
    pub group: i64,
    /// Each run's key, its entries, and its batch if it is one (tier 0).
    pub runs: Vec<(RunKey, i64, Option<i64>)>,
}

/// What a merged run's pages read in order are for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Only the pages from the one that could hold the lowest hash sought
    /// to the one that could hold the highest, so that two connections
    /// each looking up half of a batch's sorted hashes (SQLite admission's
    /// helper) read half of the pages each; nothing read is kept. But a
    /// run whose entries fit what is kept of them (`Kept::Entries`) is
    /// read whole once and kept so, and then read no more.
    Part,
    /// The whole run, its prefixes kept for the next look-up, unless it
    /// is kept already (PostgreSQL: each page crosses the connection, and
    /// a run read whole once need not be again).
    WholeKept,
}

/// How a backend reads a run's entries.
pub trait RunPages {
    /// The `sorted` blob of the batch whose first id is `first_id`.
    fn sorted(&mut self, first_id: i64) -> Result<Vec<u8>>;
    /// The page of `run` that could hold `hash`: the last starting at or
    /// before it.
    fn page_at(&mut self, run: i64, hash: u128) -> Result<Option<Vec<u8>>>;
    /// The pages of `run` in order, each given to `each` as it is read:
    /// from the one that could hold `from` to the last starting at or
    /// before `to`.
    fn pages(&mut self, run: i64, from: u128, to: u128, each: &mut dyn FnMut(Vec<u8>) -> Result<()>) -> Result<()>;
}

/// The id of each of `hashes` in the group of `listed`, if it holds it:
/// in every run, a batch's blob searched; a merged run's page that could
/// hold a hash found by its key and searched, or, when the hashes still
/// sought are many against the run's pages, the run's pages read in order
/// beside the sorted hashes (a seek a hash would read each page many
/// times). A kept run (`kept_runs`) is searched in memory: a batch's
/// blob whole, a merged run's prefixes for the hashes it may hold, whose
/// pages alone are then read. A batch's blob read is kept; a merged run
/// read whole is kept when `reading` says so. The runs of the group no
/// longer listed (merged since, by this process or another) are let go.
/// The runs in `skip` are not searched (a look-up made again of what an
/// earlier one searched them for: runs never change once written).
pub fn find_ids(
    store: &mut impl RunPages,
    listed: &Listed,
    hashes: &[u128],
    reading: Reading,
    skip: &[RunKey],
) -> Result<Vec<Option<i64>>> {
    let keys: Vec<RunKey> = listed.runs.iter().map(|r| r.0).collect();
    let_go_unlisted(listed.ledger, listed.group, &keys);
    let mut found = vec![None; hashes.len()];
    let searched: Vec<&(RunKey, i64, Option<i64>)> = listed.runs.iter().filter(|r| !skip.contains(&r.0)).collect();
    if searched.is_empty() {
        return Ok(found);
    }
    let mut by_hash: Vec<usize> = (0..hashes.len()).collect();
    by_hash.sort_unstable_by_key(|&k| hashes[k]);
    for &&(key, n, batch) in &searched {
        // The hashes still sought, in hash order.
        let open: Vec<usize> = by_hash.iter().copied().filter(|&k| found[k].is_none()).collect();
        if open.is_empty() {
            break;
        }
        let held = kept(&key);
        // The hashes to read the run for: all those still sought, or, of
        // a merged run kept, those whose prefix it holds.
        let sought = match (held.as_deref(), batch) {
            (Some(Kept::Sorted(sorted)), Some(first_id)) => {
                find_in_batch(sorted, first_id, hashes, &open, &mut found)?;
                continue;
            }
            (Some(Kept::Entries(entries)), None) => {
                let mut ids = batches::PageIds::new(entries)?;
                for &k in &open {
                    found[k] = ids.find(hashes[k]);
                }
                continue;
            }
            (Some(Kept::Prefixes(prefixes)), None) => Kept::may_hold(prefixes, hashes, &open),
            (None, _) => open,
            (Some(_), _) => {
                return Err(LedgerError::Invalid(format!("hash_runs: run {} is kept as another tier", key.run)))
            }
        };
        if sought.is_empty() {
            continue;
        }
        match batch {
            Some(first_id) => {
                let sorted = store.sorted(first_id)?;
                find_in_batch(&sorted, first_id, hashes, &sought, &mut found)?;
                keep(key, Kept::Sorted(sorted), &[]);
            }
            None if sought.len() * 4 < (n as usize).div_ceil(batches::PAGE) => {
                for k in sought {
                    if let Some(page) = store.page_at(key.run, hashes[k])? {
                        found[k] = batches::find_in_page(&page, hashes[k])?;
                    }
                }
            }
            None => {
                let whole = reading == Reading::WholeKept && held.is_none();
                let entries_bytes = n as usize * batches::ENTRY;
                let entries = reading == Reading::Part && held.is_none() && room_for_entries(entries_bytes);
                let (from, to) = match whole || entries {
                    true => (0, u128::MAX),
                    false => (hashes[sought[0]], hashes[sought[sought.len() - 1]]),
                };
                let mut prefixes = whole.then(|| Vec::with_capacity(n as usize));
                let mut all = entries.then(|| Vec::with_capacity(entries_bytes));
                let mut walk = PageWalk { hashes, sought: &sought, next: 0, page: None };
                store.pages(key.run, from, to, &mut |page| {
                    if let Some(prefixes) = &mut prefixes {
                        prefixes.extend(batches::page_entries(&page)?.iter().map(|(hash, _)| Kept::prefix(*hash)));
                    }
                    if let Some(all) = &mut all {
                        all.extend_from_slice(&page);
                    }
                    walk.before(Some(&page), &mut found)?;
                    walk.page = Some(page);
                    Ok(())
                })?;
                walk.before(None, &mut found)?;
                if let Some(prefixes) = prefixes {
                    keep(key, Kept::Prefixes(prefixes), &[]);
                }
                if let Some(all) = all {
                    keep(key, Kept::Entries(all), &[]);
                }
            }
        }
    }
    Ok(found)
}

/// The hashes sought in a run's pages read in order: each is searched in
/// the last page starting at or before it, the page read before the
/// first that starts after it.
struct PageWalk<'a> {
    hashes: &'a [u128],
    sought: &'a [usize],
    /// The first of `sought` not searched yet.
    next: usize,
    /// The last page read.
    page: Option<Vec<u8>>,
}

impl PageWalk<'_> {
    /// Searches the last page read for the hashes below `following`'s
    /// first (all that are left when there is no following page).
    fn before(&mut self, following: Option<&[u8]>, found: &mut [Option<i64>]) -> Result<()> {
        let bound = following.map(batches::first_hash).transpose()?;
        let mut ids = self.page.as_deref().map(batches::PageIds::new).transpose()?;
        while self.next < self.sought.len() && bound.is_none_or(|b| self.hashes[self.sought[self.next]] < b) {
            let k = self.sought[self.next];
            if let Some(ids) = &mut ids {
                found[k] = ids.find(self.hashes[k]);
            }
            self.next += 1;
        }
        Ok(())
    }
}

/// Finds `sought` (indexes into `hashes`, in hash order) in a batch's
/// `sorted` blob, its items' ids from `first_id`.
fn find_in_batch(
    sorted: &[u8],
    first_id: i64,
    hashes: &[u128],
    sought: &[usize],
    found: &mut [Option<i64>],
) -> Result<()> {
    let mut places = batches::Places::new(sorted)?;
    for &k in sought {
        found[k] = places.find(hashes[k]).map(|place| first_id + i64::from(place));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::batches::{merge, url_hash, Page};

    /// One merged run in memory, counting the pages it reads.
    struct Store {
        pages: Vec<Page>,
        read: usize,
    }

    impl Store {
        fn first(page: &Page) -> u128 {
            u128::from_be_bytes(page.first_hash)
        }
    }

    impl RunPages for Store {
        fn sorted(&mut self, _: i64) -> Result<Vec<u8>> {
            unreachable!("no batch run here")
        }

        fn page_at(&mut self, _: i64, hash: u128) -> Result<Option<Vec<u8>>> {
            self.read += 1;
            Ok(self.pages.iter().rev().find(|p| Store::first(p) <= hash).map(|p| p.entries.clone()))
        }

        fn pages(&mut self, _: i64, from: u128, to: u128, each: &mut dyn FnMut(Vec<u8>) -> Result<()>) -> Result<()> {
            let start = self.pages.iter().rposition(|p| Store::first(p) <= from).unwrap_or(0);
            for page in self.pages[start..].iter().filter(|p| Store::first(p) <= to) {
                self.read += 1;
                each(page.entries.clone())?;
            }
            Ok(())
        }
    }

    /// A merged run read in order for part of its hashes reads only the
    /// pages between them and keeps nothing, unless its entries fit what
    /// is kept of them: then it is read whole once and its hashes found
    /// with no page read after. Read to be kept (`WholeKept`), it is read
    /// whole once, and a fresh hash then reads no page, a known one only
    /// its page.
    #[test]
    fn a_merged_run_is_read_in_part_or_whole_and_kept() {
        let urls: Vec<String> = (0..5 * batches::PAGE).map(|i| format!("https://find.example/{i}")).collect();
        let mut entries: Vec<(u128, i64)> = urls.iter().map(|u| url_hash(u)).zip(1..).collect();
        let pages = merge(entries.clone(), |_, _| Ok(true)).unwrap();
        entries.sort_unstable();
        let key = RunKey { ledger: 4_848, group: 1, run: 1, stamp: 9 };
        // Listed as a run of a million entries, too many to keep whole.
        let large = Listed { ledger: 4_848, group: 1, runs: vec![(key, 1_000_000, None)] };
        let mut store = Store { pages, read: 0 };
        // The second page's hashes, in part.
        let part: Vec<u128> = entries[batches::PAGE..2 * batches::PAGE].iter().map(|e| e.0).collect();
        let ids = find_ids(&mut store, &large, &part, Reading::Part, &[]).unwrap();
        assert_eq!(ids, entries[batches::PAGE..2 * batches::PAGE].iter().map(|e| Some(e.1)).collect::<Vec<_>>());
        assert_eq!(store.read, 1, "the one page that holds them");
        assert!(kept(&key).is_none(), "a run read in part is not kept");
        // Small enough: read whole once, its entries kept, then no page read.
        let small = Listed { runs: vec![(key, entries.len() as i64, None)], ..large };
        store.read = 0;
        let ids = find_ids(&mut store, &small, &part, Reading::Part, &[]).unwrap();
        assert_eq!(ids, entries[batches::PAGE..2 * batches::PAGE].iter().map(|e| Some(e.1)).collect::<Vec<_>>());
        assert_eq!(store.read, 5, "every page, once");
        assert!(matches!(kept(&key).as_deref(), Some(Kept::Entries(e)) if e.len() == entries.len() * batches::ENTRY));
        let all: Vec<u128> = entries.iter().map(|e| e.0).collect();
        let fresh = url_hash("https://find.example/new");
        let mut sought = all.clone();
        sought.push(fresh);
        let ids = find_ids(&mut store, &small, &sought, Reading::Part, &[]).unwrap();
        let expected: Vec<Option<i64>> = entries.iter().map(|e| Some(e.1)).chain([None]).collect();
        assert_eq!((ids, store.read), (expected, 5), "found with no page read");
        let key = RunKey { stamp: 10, ..key };
        let listed = Listed { runs: vec![(key, entries.len() as i64, None)], ..small };
        // Read whole, then kept.
        let all: Vec<u128> = entries.iter().map(|e| e.0).collect();
        store.read = 0;
        let ids = find_ids(&mut store, &listed, &all, Reading::WholeKept, &[]).unwrap();
        assert_eq!(ids, entries.iter().map(|e| Some(e.1)).collect::<Vec<_>>());
        assert_eq!(store.read, 5, "every page, once");
        assert!(matches!(kept(&key).as_deref(), Some(Kept::Prefixes(p)) if p.len() == entries.len()));
        store.read = 0;
        assert_eq!(
            find_ids(&mut store, &listed, &[url_hash("https://find.example/new")], Reading::WholeKept, &[]).unwrap(),
            [None]
        );
        assert_eq!(store.read, 0, "a fresh hash: no page read");
        assert_eq!(
            find_ids(&mut store, &listed, &[entries[7].0], Reading::WholeKept, &[]).unwrap(),
            [Some(entries[7].1)]
        );
        assert_eq!(store.read, 1, "a known hash: its page alone");
        // Skipped, the run is not searched, and still kept (it is listed).
        store.read = 0;
        assert_eq!(find_ids(&mut store, &listed, &[entries[7].0], Reading::WholeKept, &[key]).unwrap(), [None]);
        assert_eq!(store.read, 0);
        assert!(kept(&key).is_some());
        // Listed no more (merged since), the run is let go.
        find_ids(&mut store, &Listed { runs: vec![], ..listed }, &[entries[7].0], Reading::WholeKept, &[]).unwrap();
        assert!(kept(&key).is_none());
    }
}
