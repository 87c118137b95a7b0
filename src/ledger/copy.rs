//! `ledger copy`, once for every pair of backends: the source streams its
//! tables in a fixed order, each in key order, a chunk at a time (`export`);
//! the target stages each chunk with one statement and merges each table
//! with a few set-based statements, all in one transaction (`import`). So
//! a copy takes time in proportion to the ledger, memory in proportion to
//! a chunk, and a copy killed at any point leaves the target as it was.
//!
//! What is decided here, for both: the order of the tables, what a chunk
//! holds, and how a request's items are named in the target (the source's
//! ids translated through the items staged before it); what a merge keeps
//! (items take the source's state unless in flight in the target, an
//! attempt the target has is not added twice, budget usage takes the larger
//! count, blocks and paces the later time, credentials the earlier first
//! use, reminders, sitemaps read and Ghost's public URLs the later time, a
//! source that cannot be read its later failure with the earlier `since`)
//! is each target's SQL.

use super::{item_ids, url_keys};
use super::{GhostUrl, LedgerError, Result};
use crate::model::{Action, Class, GroupKey, ItemState, Reason, SourceDocument, SourceFailure, StoredResponse};
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// Rows of a table a chunk carries at most.
pub const CHUNK: usize = 10_000;

/// The bytes of requests a chunk carries at most (a request may name
/// 10,000 items and hold a body of 64 KiB).
pub const REQUEST_BYTES: usize = 4 << 20;

/// About how much memory a request takes in a chunk: its text, and for
/// each item it names not only the id but what naming it in the target
/// costs (the looked-up row, its place in the map of ids, the parameter:
/// about 200 bytes an item as measured on PostgreSQL), so that a chunk of
/// requests names some 20,000 items, not half a million.
pub fn request_bytes(r: &CopyRequest) -> usize {
    128 + r.message.len() + r.response.body.as_ref().map_or(0, String::len) + 200 * r.items.len()
}

/// An item as the source holds it (`group` and `last_request` are the
/// source's ids).
#[derive(Debug, Clone, PartialEq)]
pub struct CopyItem {
    pub id: i64,
    pub group: i64,
    pub url: String,
    pub state: ItemState,
    pub action: Action,
    pub lastmod: Option<DateTime<Utc>>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub enqueued_at: DateTime<Utc>,
    pub attempts: u32,
    pub last_class: Option<Class>,
    pub streak: u32,
    pub streak_started_at: Option<DateTime<Utc>>,
    pub accepted_at: Option<DateTime<Utc>>,
    pub parked_fingerprint: Option<String>,
    pub last_request: Option<i64>,
}

/// An item `queue drop` removed, kept because a request names it.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyDropped {
    pub id: i64,
    pub group: i64,
    pub url: String,
    pub dropped_at: DateTime<Utc>,
}

/// A recorded request (an attempt of every item it names), as the source
/// holds it: `items` are the source's ids, ascending.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyRequest {
    pub id: i64,
    pub group: i64,
    pub at: DateTime<Utc>,
    pub class: Class,
    pub reason: Reason,
    pub message: String,
    pub response: StoredResponse,
    pub retry_at: Option<DateTime<Utc>>,
    pub items: Vec<i64>,
}

/// A request as the target stores it: its items named by the target's ids
/// (`n`, the first, the last, and the whole list when there are several).
#[derive(Debug, Clone, PartialEq)]
pub struct StagedRequest<'a> {
    pub request: &'a CopyRequest,
    pub group: i64,
    pub n: i64,
    pub first: i64,
    pub last: i64,
    pub items: Option<Vec<u8>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CopyUsage {
    pub rule: String,
    pub window: String,
    pub period: String,
    pub used: u64,
    pub limit: Option<u64>,
    pub resets_at: DateTime<Utc>,
    pub reported_at: Option<DateTime<Utc>>,
    pub reported_remaining: Option<u64>,
}

/// One chunk of a ledger's rows. A copy streams them in this order (the
/// order of the variants), each table in key order; a table may take many
/// chunks. Reservations are not copied: a copy is made with none in flight.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    /// Every group, by the source's id.
    Groups(Vec<(i64, GroupKey)>),
    Items(Vec<CopyItem>),
    Dropped(Vec<CopyDropped>),
    Requests(Vec<CopyRequest>),
    Usage(Vec<CopyUsage>),
    Blocks(Vec<(String, DateTime<Utc>)>),
    /// Pace key and its theoretical arrival time (ms).
    Pacing(Vec<(String, i64)>),
    /// Credential fingerprint and its first use.
    Credentials(Vec<(String, DateTime<Utc>)>),
    /// Group (the source's id), reason and when a run last said its items
    /// are parked.
    Reminders(Vec<(i64, String, DateTime<Utc>)>),
    /// The sitemaps read for sources.
    Sources(Vec<SourceDocument>),
    /// The public URL of each Ghost post or page (`serve`'s Ghost hook).
    GhostUrls(Vec<GhostUrl>),
    /// The sources that cannot be read.
    SourceFailures(Vec<SourceFailure>),
    /// The latest instant a run recorded.
    Latest(DateTime<Utc>),
}

/// What a copy did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Copied {
    /// Items written (new, or updated to the source's state).
    pub items: u64,
    /// Recorded requests (attempts) the target did not have yet.
    pub attempts: u64,
    pub budget_windows: u64,
}

/// Where `export` puts each chunk.
pub type Sink<'a> = dyn FnMut(Chunk) -> Result<()> + 'a;

/// What `import` runs to be given the chunks: the source's `export`.
pub type Feed<'a> = dyn FnMut(&mut Sink) -> Result<()> + 'a;

/// The ledger as rows: its schema, and everything in it streamed out and
/// merged in (`copy`).
pub trait Rows {
    /// The schema version the ledger has.
    fn schema_version(&mut self) -> Result<i64>;

    /// Every table in `Chunk`'s order, each in key order, into `sink` a
    /// chunk at a time, from one snapshot. Unless `in_flight_ok`, refused
    /// while a reservation is in flight: a copy must not carry URLs being
    /// sent.
    fn export(&mut self, in_flight_ok: bool, sink: &mut Sink) -> Result<()>;

    /// Merges in, in one transaction, what `feed` puts in the sink it is
    /// given (an `export`): all of it, or — on an error or a crash — none.
    fn import(&mut self, feed: &mut Feed) -> Result<Copied>;
}

/// Which ledger of a copy failed.
#[derive(Debug)]
pub enum CopyError {
    From(LedgerError),
    To(LedgerError),
}

/// Copies `from` into `to` (`ledger copy`): idempotent, in one transaction
/// of `to`, from one snapshot of `from`. An error says which side it came
/// from; either way `to` is left as it was.
pub fn copy(
    from: &mut (impl Rows + ?Sized),
    to: &mut (impl Rows + ?Sized),
    in_flight_ok: bool,
) -> std::result::Result<Copied, CopyError> {
    let stopped = |side: &str| LedgerError::Invalid(format!("the copy's {side} stopped"));
    let mut from_error = None;
    let copied = to.import(&mut |sink: &mut Sink| {
        // An error of the sink is the target's (a deadlock there is its
        // to run again): it goes back to the target as it is.
        let mut to_error = None;
        let exported = from.export(in_flight_ok, &mut |chunk| {
            sink(chunk).map_err(|e| {
                to_error = Some(e);
                stopped("target")
            })
        });
        match (exported, to_error) {
            (_, Some(e)) => Err(e),
            (Err(e), None) => {
                from_error = Some(e);
                Err(stopped("source"))
            }
            (Ok(()), None) => Ok(()),
        }
    });
    match (copied, from_error) {
        (_, Some(e)) => Err(CopyError::From(e)),
        (Err(e), None) => Err(CopyError::To(e)),
        (Ok(copied), None) => Ok(copied),
    }
}

/// Why a ledger with reservations in flight is not copied.
pub(super) fn in_flight_error(n: i64) -> LedgerError {
    LedgerError::Invalid(format!(
        "{n} reservation(s) are in flight: wait for the running `submit` to end (a stopped run's are \
         reconciled by the next `submit`), then copy"
    ))
}

/// Rows of one table gathered into chunks for a sink: a chunk is full at
/// `limit`, each row weighing `weigh` (one row, or its bytes).
pub struct Chunker<'s, 'a, T> {
    sink: &'s mut Sink<'a>,
    make: fn(Vec<T>) -> Chunk,
    weigh: fn(&T) -> usize,
    limit: usize,
    rows: Vec<T>,
    weight: usize,
}

impl<'s, 'a, T> Chunker<'s, 'a, T> {
    /// Chunks of `CHUNK` rows.
    pub fn new(sink: &'s mut Sink<'a>, make: fn(Vec<T>) -> Chunk) -> Self {
        Chunker::weighing(sink, make, |_| 1, CHUNK)
    }

    pub fn weighing(sink: &'s mut Sink<'a>, make: fn(Vec<T>) -> Chunk, weigh: fn(&T) -> usize, limit: usize) -> Self {
        Chunker { sink, make, weigh, limit, rows: Vec::new(), weight: 0 }
    }

    pub fn push(&mut self, row: T) -> Result<()> {
        self.weight += (self.weigh)(&row);
        self.rows.push(row);
        if self.weight >= self.limit {
            self.weight = 0;
            (self.sink)((self.make)(std::mem::take(&mut self.rows)))?;
        }
        Ok(())
    }

    /// The last, partial chunk.
    pub fn finish(self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        (self.sink)((self.make)(self.rows))
    }
}

/// A target's side of a copy, in its transaction: each table's rows staged
/// a chunk at a time with one statement, then merged with a few set-based
/// statements. The statements are the target's; the order is `Import`'s.
pub trait Stage {
    /// The target's id of each group (the source's id → a group made if missing).
    fn groups(&mut self, groups: &[(i64, GroupKey)]) -> Result<HashMap<i64, i64>>;

    /// Items, each with its group here and its URL's key (`url_keys::url_key`).
    fn stage_items(&mut self, items: &[CopyItem], groups: &HashMap<i64, i64>) -> Result<()>;

    /// Each staged item matched to the item of its URL here, at its
    /// group and key (`url_keys::url_key`).
    fn match_items(&mut self) -> Result<()>;

    /// The staged items not matched whose key another URL holds, here or
    /// among the staged items not matched, in the source's order.
    fn clashes(&mut self) -> Result<Vec<Clash>>;

    /// The item at a group and key here: its id, URL and whether it is in flight.
    fn held(&mut self, group: i64, key: i64) -> Result<Option<(i64, String, bool)>>;

    /// The staged items not matched at a group and key (the source's ids).
    fn staged(&mut self, group: i64, key: i64) -> Result<Vec<i64>>;

    /// Where a clashing item goes: to an item here, or to a new key.
    fn place(&mut self, src: i64, placed: &Placed) -> Result<()>;

    /// The staged items not matched numbered: ids after the last, in the
    /// source's order.
    fn number_items(&mut self) -> Result<()>;

    /// The staged items written, once the requests are merged: each matched
    /// one updated to the source's state unless in flight here, the others
    /// inserted; each pointing at its last request. Returns how many.
    fn write_items(&mut self) -> Result<u64>;

    fn stage_dropped(&mut self, dropped: &[CopyDropped], groups: &HashMap<i64, i64>) -> Result<()>;

    /// The staged dropped items merged: the same group, URL and time of the
    /// drop, or new.
    fn merge_dropped(&mut self) -> Result<()>;

    /// The target's id of each of `ids` (the source's), for those staged as
    /// items or dropped items.
    fn targets(&mut self, ids: &[i64]) -> Result<HashMap<i64, i64>>;

    fn stage_requests(&mut self, requests: &[StagedRequest]) -> Result<()>;

    /// The staged requests merged: those the target has (the same group,
    /// time, outcome and items) kept, the others inserted in order of time.
    /// Returns how many were inserted.
    fn merge_requests(&mut self) -> Result<u64>;

    /// Budget usage merged. Returns how many windows.
    fn merge_usage(&mut self, usage: &[CopyUsage]) -> Result<u64>;

    /// Every other table's rows merged (few: one a rule, key, credential,
    /// group or sitemap).
    fn merge_rest(&mut self, chunk: &Chunk, groups: &HashMap<i64, i64>) -> Result<()>;

    /// After the last chunk (the kept counts, where a target keeps them).
    fn finish(&mut self) -> Result<()>;
}

/// A staged item whose key another URL holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    pub src: i64,
    pub group: i64,
    pub key: i64,
    pub url: String,
}

/// Where a clashing item goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// The item of its URL here (written unless in flight).
    Same { id: i64, written: bool },
    /// A new item at this key.
    At(i64),
}

/// The target's group of a row (the source's group id).
pub fn group_of(groups: &HashMap<i64, i64>, src: i64) -> Result<i64> {
    groups.get(&src).copied().ok_or_else(|| LedgerError::Invalid(format!("a copy named group {src} before its groups")))
}

/// The tables in a copy's order (`Chunk`'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Table {
    Groups,
    Items,
    Dropped,
    Requests,
    Rest,
}

/// A target's import: the chunks put in their stage, each table merged when
/// the stream moves past it.
pub struct Import<'s, S: Stage + ?Sized> {
    stage: &'s mut S,
    groups: HashMap<i64, i64>,
    at: Table,
    copied: Copied,
}

impl<'s, S: Stage + ?Sized> Import<'s, S> {
    pub fn new(stage: &'s mut S) -> Self {
        Import { stage, groups: HashMap::new(), at: Table::Groups, copied: Copied::default() }
    }

    pub fn put(&mut self, chunk: Chunk) -> Result<()> {
        let table = match &chunk {
            Chunk::Groups(_) => Table::Groups,
            Chunk::Items(_) => Table::Items,
            Chunk::Dropped(_) => Table::Dropped,
            Chunk::Requests(_) => Table::Requests,
            _ => Table::Rest,
        };
        if table < self.at {
            return Err(LedgerError::Invalid(format!("a copy's {table:?} came after its {:?}", self.at)));
        }
        self.move_to(table)?;
        match chunk {
            Chunk::Groups(groups) => self.groups.extend(self.stage.groups(&groups)?),
            Chunk::Items(items) => self.stage.stage_items(&items, &self.groups)?,
            Chunk::Dropped(dropped) => self.stage.stage_dropped(&dropped, &self.groups)?,
            Chunk::Requests(requests) => self.requests(&requests)?,
            Chunk::Usage(usage) => self.copied.budget_windows += self.stage.merge_usage(&usage)?,
            rest => self.stage.merge_rest(&rest, &self.groups)?,
        }
        Ok(())
    }

    /// The tables before `table` merged.
    fn move_to(&mut self, table: Table) -> Result<()> {
        while self.at < table {
            match self.at {
                Table::Items => self.match_items()?,
                Table::Dropped => self.stage.merge_dropped()?,
                Table::Requests => {
                    self.copied.attempts += self.stage.merge_requests()?;
                    self.copied.items += self.stage.write_items()?;
                }
                Table::Groups | Table::Rest => {}
            }
            self.at = match self.at {
                Table::Groups => Table::Items,
                Table::Items => Table::Dropped,
                Table::Dropped => Table::Requests,
                Table::Requests | Table::Rest => Table::Rest,
            };
        }
        Ok(())
    }

    /// The staged items matched, a clash placed as a lookup would find it
    /// (following `url_keys::next_key` past keys another URL holds, to the item
    /// of its URL or the first key free here and among the staged items —
    /// those placed before it, in the source's order, included), and the
    /// new ones numbered: the requests name them by these ids. They are
    /// written after the requests, once, pointing at their last.
    fn match_items(&mut self) -> Result<()> {
        self.stage.match_items()?;
        let clashes = self.stage.clashes()?;
        let mut unplaced: std::collections::HashSet<i64> = clashes.iter().map(|c| c.src).collect();
        for c in &clashes {
            let mut key = c.key;
            let placed = loop {
                match self.stage.held(c.group, key)? {
                    Some((id, url, in_flight)) if url == c.url => break Placed::Same { id, written: !in_flight },
                    Some(_) => {}
                    None if self.stage.staged(c.group, key)?.iter().all(|s| *s == c.src || unplaced.contains(s)) => {
                        break Placed::At(key)
                    }
                    None => {}
                }
                key = url_keys::next_key(key);
            };
            unplaced.remove(&c.src);
            self.stage.place(c.src, &placed)?;
        }
        self.stage.number_items()
    }

    /// A chunk of requests staged with their items named by the target's
    /// ids; a request that names none of the items copied (they were
    /// removed before dropped items were kept) is left out.
    fn requests(&mut self, requests: &[CopyRequest]) -> Result<()> {
        let mut wanted: Vec<i64> = requests.iter().flat_map(|r| r.items.iter().copied()).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let targets = self.stage.targets(&wanted)?;
        let mut staged = Vec::with_capacity(requests.len());
        for request in requests {
            let mut items: Vec<i64> = request.items.iter().filter_map(|id| targets.get(id).copied()).collect();
            let Some(&group) = self.groups.get(&request.group) else { continue };
            if items.is_empty() {
                continue;
            }
            items.sort_unstable();
            let (first, last) = (items[0], items[items.len() - 1]);
            let list = (items.len() > 1).then(|| item_ids::encode(&items));
            staged.push(StagedRequest { request, group, n: items.len() as i64, first, last, items: list });
        }
        self.stage.stage_requests(&staged)
    }

    /// Every table merged, and the stage finished.
    pub fn finish(mut self) -> Result<Copied> {
        self.move_to(Table::Rest)?;
        self.stage.finish()?;
        Ok(self.copied)
    }
}

#[cfg(test)]
pub use dump::dump;

/// A whole ledger's rows gathered in memory, named by their positions
/// rather than ids, so that two ledgers' can be compared (tests).
#[cfg(test)]
mod dump {
    use super::*;

    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Dump {
        /// (group, item without its ids, its last request's position).
        pub items: Vec<(GroupKey, CopyItem, Option<usize>)>,
        pub dropped: Vec<(GroupKey, CopyDropped)>,
        /// Oldest first: (group, request, its items' and dropped items' positions).
        pub requests: Vec<(GroupKey, CopyRequest, Vec<usize>, Vec<usize>)>,
        pub usage: Vec<CopyUsage>,
        pub blocks: Vec<(String, DateTime<Utc>)>,
        pub pacing: Vec<(String, i64)>,
        pub credentials: Vec<(String, DateTime<Utc>)>,
        pub reminders: Vec<(GroupKey, String, DateTime<Utc>)>,
        pub sources: Vec<SourceDocument>,
        pub ghost_urls: Vec<GhostUrl>,
        pub source_failures: Vec<SourceFailure>,
        pub latest_run: Option<DateTime<Utc>>,
    }

    /// Everything in `ledger` (in flight too).
    pub fn dump(ledger: &mut (impl Rows + ?Sized)) -> Dump {
        let mut chunks = Vec::new();
        ledger
            .export(true, &mut |chunk| {
                chunks.push(chunk);
                Ok(())
            })
            .expect("the ledger exports");
        let mut groups = HashMap::new();
        let (mut items, mut dropped, mut requests, mut d) = (Vec::new(), Vec::new(), Vec::new(), Dump::default());
        for chunk in chunks {
            match chunk {
                Chunk::Groups(g) => groups.extend(g),
                Chunk::Items(i) => items.extend(i),
                Chunk::Dropped(x) => dropped.extend(x),
                Chunk::Requests(r) => requests.extend(r),
                Chunk::Usage(u) => d.usage.extend(u),
                Chunk::Blocks(b) => d.blocks.extend(b),
                Chunk::Pacing(p) => d.pacing.extend(p),
                Chunk::Credentials(c) => d.credentials.extend(c),
                Chunk::Reminders(r) => d.reminders.extend(r.into_iter().map(|(g, r, at)| (groups[&g].clone(), r, at))),
                Chunk::Sources(s) => d.sources.extend(s),
                Chunk::GhostUrls(g) => d.ghost_urls.extend(g),
                Chunk::SourceFailures(f) => d.source_failures.extend(f),
                Chunk::Latest(at) => d.latest_run = Some(at),
            }
        }
        let item_at: HashMap<i64, usize> = items.iter().enumerate().map(|(n, i)| (i.id, n)).collect();
        let dropped_at: HashMap<i64, usize> = dropped.iter().enumerate().map(|(n, x)| (x.id, n)).collect();
        requests.sort_by_key(|r| (r.at, r.id));
        let mut request_at = HashMap::new();
        for r in requests {
            let named: Vec<usize> = r.items.iter().filter_map(|id| item_at.get(id).copied()).collect();
            let gone: Vec<usize> = r.items.iter().filter_map(|id| dropped_at.get(id).copied()).collect();
            if named.is_empty() && gone.is_empty() {
                continue;
            }
            request_at.insert(r.id, d.requests.len());
            d.requests.push((
                groups[&r.group].clone(),
                CopyRequest { id: 0, group: 0, items: vec![], ..r },
                named,
                gone,
            ));
        }
        for i in items {
            let last = i.last_request.and_then(|r| request_at.get(&r).copied());
            let group = groups[&i.group].clone();
            d.items.push((group, CopyItem { id: 0, group: 0, last_request: None, ..i }, last));
        }
        for x in dropped {
            d.dropped.push((groups[&x.group].clone(), CopyDropped { id: 0, group: 0, ..x }));
        }
        d
    }
}
