//! A ledger per batch (issue 48; docs/design.md, *A ledger per batch*: the
//! plan being built on this branch). What both backends store of an
//! admitted batch, as blobs: its URLs' 128-bit hashes sorted with each
//! one's place in the batch (`sorted`), its texts (`texts`), and the
//! lastmods and actions where any is not the default; and the sorted pages
//! that tiers of merged hashes are kept in. Pure: the backends read and
//! write the blobs, this says what is in them.
//!
//! A hash is written big-endian, so that a blob's bytes sort as its hashes
//! do and a page's first hash can key a B-tree as bytes; places, ends and
//! ids little-endian.
// The readers of texts, lastmods and actions come with admission's and
// `queue list`'s move to the batches, next on this branch; until then the
// tests are their only callers.
#![cfg_attr(not(test), allow(dead_code))]

use super::{LedgerError, Result};

/// The most items a batch row holds (an admission's batch).
pub const BATCH: usize = 10_000;
/// How many runs of one tier are merged into one run of the next.
pub const FANOUT: usize = 8;
/// The most entries in one page of a merged run.
pub const PAGE: usize = 1_000;
/// One entry of a batch's `sorted` blob: the hash and its place.
const PLACED: usize = 20;
/// One entry of a merged run's page: the hash and its item's id.
pub const ENTRY: usize = 24;

/// The hash a URL is known by in its group: xxh3-128 of its stored text.
/// Two URLs whose first 64 bits agree are told apart by the rest: nothing
/// keys on the first half alone.
pub fn url_hash(url: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(url.as_bytes())
}

/// One URL of a batch, in id order: its text, its lastmod (seconds) and
/// whether it is a deletion.
pub struct BatchItem<'a> {
    pub url: &'a str,
    pub lastmod: Option<i64>,
    pub deleted: bool,
}

/// A batch's blobs, as stored. `lastmods` and `actions` are `None` when
/// every item has none and every item is an update.
#[derive(Debug, PartialEq)]
pub struct BatchBlobs {
    pub sorted: Vec<u8>,
    pub texts: Vec<u8>,
    pub lastmods: Option<Vec<u8>>,
    pub actions: Option<Vec<u8>>,
}

/// A lastmod's absence in the `lastmods` blob (no stored time is this).
const NO_LASTMOD: i64 = i64::MIN;

/// The blobs of `items`, a batch in id order. Two URLs of the batch with
/// one hash are refused, naming both (the caller gives distinct URLs: a
/// shared hash is a collision, which the ledger cannot store as two).
pub fn encode(items: &[BatchItem<'_>]) -> Result<BatchBlobs> {
    if items.len() > BATCH {
        return Err(LedgerError::Invalid(format!("a batch of {} items (at most {BATCH})", items.len())));
    }
    let mut hashes: Vec<(u128, u32)> =
        items.iter().enumerate().map(|(place, item)| (url_hash(item.url), place as u32)).collect();
    hashes.sort_unstable();
    if let Some(w) = hashes.windows(2).find(|w| w[0].0 == w[1].0) {
        let (a, b) = (items[w[0].1 as usize].url, items[w[1].1 as usize].url);
        return Err(LedgerError::Invalid(format!("the URLs {a} and {b} share a 128-bit hash")));
    }
    let mut sorted = Vec::with_capacity(hashes.len() * PLACED);
    for (hash, place) in &hashes {
        sorted.extend_from_slice(&hash.to_be_bytes());
        sorted.extend_from_slice(&place.to_le_bytes());
    }
    let bytes: usize = items.iter().map(|i| i.url.len()).sum();
    let mut texts = Vec::with_capacity(items.len() * 4 + bytes);
    let mut end = 0u32;
    for item in items {
        end += item.url.len() as u32;
        texts.extend_from_slice(&end.to_le_bytes());
    }
    for item in items {
        texts.extend_from_slice(item.url.as_bytes());
    }
    let lastmods = items
        .iter()
        .any(|i| i.lastmod.is_some())
        .then(|| items.iter().flat_map(|i| i.lastmod.unwrap_or(NO_LASTMOD).to_le_bytes()).collect());
    let actions = items.iter().any(|i| i.deleted).then(|| items.iter().map(|i| u8::from(i.deleted)).collect());
    Ok(BatchBlobs { sorted, texts, lastmods, actions })
}

/// Where items in id order, given as (group, id), are cut into batch rows:
/// at every change of group, every gap in the ids and every `BATCH` items.
/// Each range is one batch row: one group's consecutive ids.
pub fn cuts(items: &[(i64, i64)]) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut start = 0;
    for k in 1..=items.len() {
        let cut =
            k == items.len() || k - start == BATCH || items[k].0 != items[start].0 || items[k].1 != items[k - 1].1 + 1;
        if cut {
            runs.push(start..k);
            start = k;
        }
    }
    runs
}

fn malformed(column: &str) -> LedgerError {
    LedgerError::Invalid(format!("batches.{column}: a damaged blob"))
}

fn hash_at(blob: &[u8], size: usize, at: usize) -> u128 {
    u128::from_be_bytes(blob[at * size..at * size + 16].try_into().expect("16 bytes"))
}

/// A blob's entries of `size` bytes, sorted by hash, searched for hashes
/// asked in ascending order: each search starts past the last one's place
/// and gallops (1, 2, 4, … entries) before its binary search, so a batch
/// of thousands against one blob costs about a step a hash, as a walk of
/// both in order would, and a few hashes cost a binary search each.
struct Ascending<'b> {
    blob: &'b [u8],
    size: usize,
    from: usize,
}

impl<'b> Ascending<'b> {
    fn new(blob: &'b [u8], size: usize) -> Self {
        Ascending { blob, size, from: 0 }
    }

    /// The index of `hash`'s entry, if the blob holds it. `hash` is not
    /// below any hash asked before.
    fn seek(&mut self, hash: u128) -> Option<usize> {
        let n = self.blob.len() / self.size;
        let (mut lo, mut hi, mut step) = (self.from, self.from, 1);
        while hi < n && hash_at(self.blob, self.size, hi) < hash {
            lo = hi + 1;
            hi = lo + step;
            step *= 2;
        }
        let mut hi = hi.min(n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match hash_at(self.blob, self.size, mid) < hash {
                true => lo = mid + 1,
                false => hi = mid,
            }
        }
        let hit = lo < n && hash_at(self.blob, self.size, lo) == hash;
        self.from = lo + usize::from(hit);
        hit.then_some(lo)
    }
}

/// A batch's `sorted` blob, searched for hashes in ascending order.
pub struct Places<'b>(Ascending<'b>);

impl<'b> Places<'b> {
    pub fn new(sorted: &'b [u8]) -> Result<Self> {
        match sorted.len() % PLACED {
            0 => Ok(Places(Ascending::new(sorted, PLACED))),
            _ => Err(malformed("sorted")),
        }
    }

    /// The place in its batch of the URL of `hash`, if the batch holds it;
    /// `hash` not below any asked before.
    pub fn find(&mut self, hash: u128) -> Option<u32> {
        let at = self.0.seek(hash)?;
        Some(u32::from_le_bytes(self.0.blob[at * PLACED + 16..at * PLACED + 20].try_into().expect("4 bytes")))
    }
}

/// The place in its batch of the URL of `hash`, if the batch's `sorted`
/// blob holds it.
pub fn find(sorted: &[u8], hash: u128) -> Result<Option<u32>> {
    Ok(Places::new(sorted)?.find(hash))
}

/// The text of the item at `place` of a batch of `n` items.
pub fn text(texts: &[u8], n: usize, place: u32) -> Result<&str> {
    let place = place as usize;
    let end_at = |k: usize| -> Result<usize> {
        let bytes = texts.get(k * 4..k * 4 + 4).ok_or_else(|| malformed("texts"))?;
        Ok(u32::from_le_bytes(bytes.try_into().expect("4 bytes")) as usize)
    };
    if place >= n {
        return Err(malformed("texts"));
    }
    let start = if place == 0 { 0 } else { end_at(place - 1)? };
    let end = end_at(place)?;
    let bytes = texts.get(n * 4 + start..n * 4 + end).ok_or_else(|| malformed("texts"))?;
    std::str::from_utf8(bytes).map_err(|_| malformed("texts"))
}

/// The lastmod of the item at `place`, from the batch's `lastmods` blob.
pub fn lastmod(lastmods: Option<&[u8]>, place: u32) -> Result<Option<i64>> {
    let Some(blob) = lastmods else { return Ok(None) };
    let at = place as usize * 8;
    let bytes = blob.get(at..at + 8).ok_or_else(|| malformed("lastmods"))?;
    let value = i64::from_le_bytes(bytes.try_into().expect("8 bytes"));
    Ok((value != NO_LASTMOD).then_some(value))
}

/// Whether the item at `place` is a deletion, from the `actions` blob.
pub fn deleted(actions: Option<&[u8]>, place: u32) -> Result<bool> {
    let Some(blob) = actions else { return Ok(false) };
    match blob.get(place as usize) {
        Some(0) => Ok(false),
        Some(1) => Ok(true),
        _ => Err(malformed("actions")),
    }
}

/// The entries of a merge's runs taken and merged at once, when every run
/// is in memory whole (`Some`: a tier of batches, `FANOUT` of at most a
/// batch each); `None`, nothing taken, when any is not (a merged run's
/// pages, read a few at a time). One sort, which finds the sorted runs and
/// merges them, in place of a heap popped an entry at a time; the order is
/// the heap's, (hash, id).
pub fn merged_in_memory(runs: Vec<Option<&mut std::vec::IntoIter<(u128, i64)>>>) -> Option<Vec<(u128, i64)>> {
    let runs: Vec<&mut std::vec::IntoIter<(u128, i64)>> = runs.into_iter().collect::<Option<_>>()?;
    let mut all: Vec<(u128, i64)> = Vec::with_capacity(runs.iter().map(|r| r.len()).sum());
    for run in runs {
        all.extend(std::mem::take(run));
    }
    all.sort();
    Some(all)
}

/// A batch's entries as (hash, id), its first item's id being `first_id`.
pub fn batch_entries(first_id: i64, sorted: &[u8]) -> Result<Vec<(u128, i64)>> {
    if sorted.len() % PLACED != 0 {
        return Err(malformed("sorted"));
    }
    Ok(sorted
        .chunks(PLACED)
        .map(|e| {
            let place = u32::from_le_bytes(e[16..20].try_into().expect("4 bytes"));
            (u128::from_be_bytes(e[..16].try_into().expect("16 bytes")), first_id + i64::from(place))
        })
        .collect())
}

/// A page's entries as (hash, id).
pub fn page_entries(page: &[u8]) -> Result<Vec<(u128, i64)>> {
    if page.len() % ENTRY != 0 {
        return Err(LedgerError::Invalid("hash_pages.entries: a damaged blob".into()));
    }
    Ok(page
        .chunks(ENTRY)
        .map(|e| {
            (
                u128::from_be_bytes(e[..16].try_into().expect("16 bytes")),
                i64::from_le_bytes(e[16..24].try_into().expect("8 bytes")),
            )
        })
        .collect())
}

/// The first hash of a page of a merged run (the key it is found by).
pub fn first_hash(page: &[u8]) -> Result<u128> {
    match page.get(..16) {
        Some(bytes) if page.len() % ENTRY == 0 => Ok(u128::from_be_bytes(bytes.try_into().expect("16 bytes"))),
        _ => Err(LedgerError::Invalid("hash_pages.entries: a damaged blob".into())),
    }
}

/// A page of a merged run, searched for hashes in ascending order.
pub struct PageIds<'b>(Ascending<'b>);

impl<'b> PageIds<'b> {
    pub fn new(page: &'b [u8]) -> Result<Self> {
        match page.len() % ENTRY {
            0 => Ok(PageIds(Ascending::new(page, ENTRY))),
            _ => Err(LedgerError::Invalid("hash_pages.entries: a damaged blob".into())),
        }
    }

    /// The id of `hash`, if the page holds it; `hash` not below any asked
    /// before.
    pub fn find(&mut self, hash: u128) -> Option<i64> {
        let at = self.0.seek(hash)?;
        Some(i64::from_le_bytes(self.0.blob[at * ENTRY + 16..at * ENTRY + 24].try_into().expect("8 bytes")))
    }
}

/// The id of `hash` in a page of a merged run, if the page holds it.
pub fn find_in_page(page: &[u8], hash: u128) -> Result<Option<i64>> {
    Ok(PageIds::new(page)?.find(hash))
}

/// One page of a merged run: its first hash (the key it is found by) and
/// its entries.
pub struct Page {
    pub first_hash: [u8; 16],
    pub entries: Vec<u8>,
}

/// Writes a merged run's entries, given in (hash, id) order, as pages of
/// `PAGE` entries, a page at a time (a merge holds no more than one). Two
/// entries of one hash are one URL admitted twice (dropped, then submitted
/// again: `same_url` says so), and the newer id is kept; else two URLs
/// share the hash, and the merge is refused naming both ids.
#[derive(Default)]
pub struct Pager {
    /// The last entry pushed, held until the next shows its hash differs.
    pending: Option<(u128, i64)>,
    page: Vec<(u128, i64)>,
    /// Entries written to pages so far.
    written: u64,
    /// The prefix of each entry written, when the run is to be kept in
    /// memory as it is written (`keeping_prefixes`).
    prefixes: Option<Vec<u32>>,
}

impl Pager {
    /// Takes the next entry; gives a page when one is full.
    pub fn push(
        &mut self,
        (hash, id): (u128, i64),
        same_url: &mut impl FnMut(i64, i64) -> Result<bool>,
    ) -> Result<Option<Page>> {
        match self.pending {
            Some((held, older)) if held == hash => {
                if !same_url(older, id)? {
                    return Err(LedgerError::Invalid(format!("the items {older} and {id} share a 128-bit URL hash")));
                }
                self.pending = Some((hash, id.max(older)));
                Ok(None)
            }
            _ => Ok(self.pending.replace((hash, id)).and_then(|e| self.add(e))),
        }
    }

    /// A pager that also gathers the prefixes of the entries it writes
    /// (`finish_keeping`).
    pub fn keeping_prefixes() -> Pager {
        Pager { prefixes: Some(Vec::new()), ..Pager::default() }
    }

    fn add(&mut self, entry: (u128, i64)) -> Option<Page> {
        if let Some(prefixes) = &mut self.prefixes {
            prefixes.push(super::kept_runs::Kept::prefix(entry.0));
        }
        self.page.push(entry);
        self.written += 1;
        (self.page.len() == PAGE).then(|| page_of(&std::mem::take(&mut self.page)))
    }

    /// The last page, if any entry is left.
    pub fn finish(mut self) -> Option<Page> {
        let full = self.pending.take().and_then(|e| self.add(e));
        full.or_else(|| (!self.page.is_empty()).then(|| page_of(&self.page)))
    }

    /// The last page, if any entry is left, the prefixes of every entry
    /// written (none unless made by `keeping_prefixes`), and the number of
    /// entries the run's pages hold (the last one pushed included: it was
    /// held until now).
    pub fn finish_keeping(mut self) -> (Option<Page>, Vec<u32>, u64) {
        let full = self.pending.take().and_then(|e| self.add(e));
        let last = full.or_else(|| (!self.page.is_empty()).then(|| page_of(&self.page)));
        (last, self.prefixes.unwrap_or_default(), self.written)
    }
}

fn page_of(entries: &[(u128, i64)]) -> Page {
    let mut blob = Vec::with_capacity(entries.len() * ENTRY);
    for (hash, id) in entries {
        blob.extend_from_slice(&hash.to_be_bytes());
        blob.extend_from_slice(&id.to_le_bytes());
    }
    Page { first_hash: entries[0].0.to_be_bytes(), entries: blob }
}

/// `entries` (any order) as the pages of one run, through a `Pager`.
pub fn merge(mut entries: Vec<(u128, i64)>, mut same_url: impl FnMut(i64, i64) -> Result<bool>) -> Result<Vec<Page>> {
    entries.sort_unstable();
    let mut pager = Pager::default();
    let mut pages = Vec::new();
    for entry in entries {
        pages.extend(pager.push(entry, &mut same_url)?);
    }
    pages.extend(pager.finish());
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(url: &str) -> BatchItem<'_> {
        BatchItem { url, lastmod: None, deleted: false }
    }

    #[test]
    fn a_batch_finds_each_of_its_urls_and_no_other() {
        let urls: Vec<String> = (0..300).map(|i| format!("https://site.example/post/{i}")).collect();
        let items: Vec<BatchItem> = urls.iter().map(|u| item(u)).collect();
        let blobs = encode(&items).unwrap();
        assert_eq!((blobs.lastmods.as_ref(), blobs.actions.as_ref()), (None, None));
        for (place, url) in urls.iter().enumerate() {
            let found = find(&blobs.sorted, url_hash(url)).unwrap();
            assert_eq!(found, Some(place as u32), "{url}");
            assert_eq!(text(&blobs.texts, urls.len(), place as u32).unwrap(), url);
        }
        assert_eq!(find(&blobs.sorted, url_hash("https://site.example/post/300")).unwrap(), None);
    }

    /// A run of ids is cut where its group changes, where an id is
    /// skipped (another writer took it) and at `BATCH` items.
    #[test]
    fn hashes_asked_in_ascending_order_find_what_one_search_each_finds() {
        // Random blobs of 0-300 entries, each asked a random ascending
        // subset of its own hashes mixed with hashes it does not hold
        // (below, between and above its own): the walk's answers must be a
        // binary search's, whatever the gaps between the asked hashes.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..200 {
            let n = (next() % 301) as usize;
            let urls: Vec<String> = (0..n).map(|k| format!("https://site.example/{round}/{k}")).collect();
            let items: Vec<BatchItem> =
                urls.iter().map(|url| BatchItem { url, lastmod: None, deleted: false }).collect();
            let blobs = encode(&items).unwrap();
            let mut asked: Vec<u128> = urls.iter().filter(|_| next() % 3 == 0).map(|u| url_hash(u)).collect();
            asked.extend((0..next() % 40).map(|_| u128::from(next()) << 64 | u128::from(next())));
            asked.extend([0, u128::MAX]);
            asked.sort_unstable();
            asked.dedup();
            let mut places = Places::new(&blobs.sorted).unwrap();
            for hash in asked {
                let one = search_once(&blobs.sorted, hash);
                assert_eq!(places.find(hash), one, "round {round}, {n} entries, hash {hash:x}");
            }
        }
    }

    /// A plain binary search of one hash, as the walk must answer.
    fn search_once(sorted: &[u8], hash: u128) -> Option<u32> {
        let n = sorted.len() / PLACED;
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match hash_at(sorted, PLACED, mid).cmp(&hash) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    return Some(u32::from_le_bytes(sorted[mid * PLACED + 16..mid * PLACED + 20].try_into().unwrap()))
                }
            }
        }
        None
    }

    #[test]
    fn items_are_cut_into_batches_at_groups_gaps_and_the_batch_size() {
        assert_eq!(cuts(&[]), []);
        let items = [(1, 10), (1, 11), (2, 12), (2, 13), (2, 15), (1, 16)];
        assert_eq!(cuts(&items), [0..2, 2..4, 4..5, 5..6]);
        let long: Vec<(i64, i64)> = (0..BATCH as i64 * 2 + 1).map(|id| (7, id)).collect();
        assert_eq!(cuts(&long), [0..BATCH, BATCH..2 * BATCH, 2 * BATCH..2 * BATCH + 1]);
    }

    #[test]
    fn lastmods_and_deletions_are_kept_by_place() {
        let items = [
            BatchItem { url: "https://site.example/a", lastmod: Some(1_700_000_000), deleted: false },
            BatchItem { url: "https://site.example/b", lastmod: None, deleted: true },
        ];
        let blobs = encode(&items).unwrap();
        assert_eq!(lastmod(blobs.lastmods.as_deref(), 0).unwrap(), Some(1_700_000_000));
        assert_eq!(lastmod(blobs.lastmods.as_deref(), 1).unwrap(), None);
        assert!(!deleted(blobs.actions.as_deref(), 0).unwrap());
        assert!(deleted(blobs.actions.as_deref(), 1).unwrap());
    }

    #[test]
    fn a_url_twice_in_a_batch_is_refused_naming_it() {
        let err = encode(&[item("https://site.example/a"), item("https://site.example/a")]).unwrap_err();
        assert!(err.to_string().contains("https://site.example/a"), "{err}");
    }

    /// Two hashes whose first halves agree are two entries, each found by
    /// its whole hash; a third with that first half is found by neither.
    #[test]
    fn hashes_whose_first_halves_collide_are_told_apart() {
        let high = 0x0123_4567_89ab_cdefu128 << 64;
        let pages = merge(vec![(high | 2, 20), (high | 1, 10), (5, 5)], |_, _| unreachable!()).unwrap();
        assert_eq!(pages.len(), 1);
        assert_eq!(find_in_page(&pages[0].entries, high | 1).unwrap(), Some(10));
        assert_eq!(find_in_page(&pages[0].entries, high | 2).unwrap(), Some(20));
        assert_eq!(find_in_page(&pages[0].entries, high | 3).unwrap(), None);
        assert_eq!(pages[0].first_hash, 5u128.to_be_bytes());
    }

    #[test]
    fn a_merge_pages_its_entries_in_hash_order_keeps_the_newer_of_one_url_and_refuses_a_shared_hash() {
        let entries: Vec<(u128, i64)> = (0..2_500).map(|i| (url_hash(&format!("u{i}")), i)).collect();
        let pages = merge(entries.clone(), |_, _| unreachable!()).unwrap();
        assert_eq!(pages.iter().map(|p| p.entries.len() / ENTRY).collect::<Vec<_>>(), [1_000, 1_000, 500]);
        assert!(pages.windows(2).all(|w| w[0].first_hash < w[1].first_hash));
        let back: Vec<(u128, i64)> = pages.iter().flat_map(|p| page_entries(&p.entries).unwrap()).collect();
        let mut sorted = entries.clone();
        sorted.sort_unstable();
        assert_eq!(back, sorted);
        let err = merge(vec![(7, 1), (7, 2)], |_, _| Ok(false)).err().expect("a shared hash is refused");
        assert!(err.to_string().contains("items 1 and 2"), "{err}");
        // One URL admitted twice (dropped, then submitted again): the newer kept.
        let pages = merge(vec![(7, 2), (7, 1), (9, 3)], |a, b| Ok((a, b) == (1, 2))).unwrap();
        assert_eq!(page_entries(&pages[0].entries).unwrap(), [(7, 2), (9, 3)]);
    }

    /// Runs in memory whole are merged at once in (hash, id) order; with a
    /// run that is not, nothing is taken from the others.
    #[test]
    fn runs_in_memory_are_merged_at_once_and_others_left_whole() {
        let (mut a, mut b) = (vec![(1, 10), (5, 11), (9, 12)].into_iter(), vec![(2, 20), (5, 3), (7, 21)].into_iter());
        let merged = merged_in_memory(vec![Some(&mut a), Some(&mut b)]).unwrap();
        assert_eq!(merged, [(1, 10), (2, 20), (5, 3), (5, 11), (7, 21), (9, 12)]);
        assert_eq!((a.len(), b.len()), (0, 0));
        let mut c = vec![(3, 30)].into_iter();
        assert_eq!(merged_in_memory(vec![Some(&mut c), None]), None);
        assert_eq!(c.len(), 1, "left as it was");
    }

    /// One URL met twice across where a page would end: the page waits
    /// for it, and holds it once, at its newer id.
    #[test]
    fn a_url_met_twice_at_a_page_boundary_is_written_once() {
        let mut entries: Vec<(u128, i64)> = (0..PAGE as u128).map(|h| (h, h as i64)).collect();
        entries.push((PAGE as u128 - 1, 5_000));
        let mut pager = Pager::keeping_prefixes();
        let mut pages = Vec::new();
        for entry in entries {
            pages.extend(pager.push(entry, &mut |a, b| Ok((a, b) == (PAGE as i64 - 1, 5_000))).unwrap());
        }
        let (last, prefixes, written) = pager.finish_keeping();
        pages.extend(last);
        assert_eq!((pages.len(), prefixes.len(), written), (1, PAGE, PAGE as u64), "the URL once, counted once");
        let back = page_entries(&pages[0].entries).unwrap();
        assert_eq!((back.len(), back[PAGE - 1]), (PAGE, (PAGE as u128 - 1, 5_000)));
    }

    #[test]
    fn a_damaged_blob_is_an_error_naming_its_column() {
        assert!(find(&[0; 19], 1).unwrap_err().to_string().contains("batches.sorted"));
        assert!(text(&[1, 0, 0, 0], 1, 0).unwrap_err().to_string().contains("batches.texts"));
        assert!(deleted(Some(&[2]), 0).unwrap_err().to_string().contains("batches.actions"));
    }
}
