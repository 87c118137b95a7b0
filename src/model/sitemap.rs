//! What an engine says of a sitemap it was given (Search Console's
//! `sitemaps.get`, Bing's `GetFeeds`), and what the ledger keeps of a
//! sitemap group between runs: the last report read, when, a read that
//! failed, and since when each problem a human must look at has held.

use super::{Class, GroupKey, ItemState, Reason};
use chrono::{DateTime, TimeDelta, Utc};

/// An engine's report on one sitemap, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SitemapReading {
    /// Whether the engine has the sitemap at all (Search Console's 404,
    /// a sitemap missing from Bing's `GetFeeds`: not listed).
    pub listed: bool,
    /// When the engine says the sitemap was last submitted.
    pub submitted: Option<DateTime<Utc>>,
    /// When the engine last downloaded (Bing: crawled) the sitemap.
    pub downloaded: Option<DateTime<Utc>>,
    /// The engine has not processed it yet (Google's `isPending`, Bing's
    /// status "Pending" or "Processing").
    pub pending: bool,
    /// Errors and warnings the engine found in the sitemap itself (Bing
    /// reports no count: an error status counts as one error).
    pub errors: u64,
    pub warnings: u64,
    /// Pages in the sitemap, where the engine gives a count (Google: the
    /// `submitted` of its `contents[]` entries of type `web`; Bing: `UrlCount`).
    pub urls: Option<u64>,
    /// The engine's own word for it (Google's `type`, Bing's `Status`).
    pub status: Option<String>,
}

/// A read of the engine's report that got no report: the answer,
/// classified like any answer (`misconfigured` needs a human).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadFailure {
    pub class: Class,
    pub reason: Reason,
    pub message: String,
    /// The fix, for `misconfigured`.
    pub hint: Option<String>,
    pub http_status: Option<u16>,
}

/// One read of an engine's report on a sitemap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SitemapRead {
    Read(SitemapReading),
    Failed(ReadFailure),
}

/// What the ledger keeps of a sitemap group: its item (the submission) and
/// what the engine last said of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitemapState {
    pub group: GroupKey,
    /// The sitemap item's state, and when it was last accepted (submitted).
    pub item: ItemState,
    pub submitted_at: Option<DateTime<Utc>>,
    /// When the engine's report was last read (whatever came of it).
    pub read_at: Option<DateTime<Utc>>,
    /// The last report read.
    pub reading: Option<SitemapReading>,
    pub read_ok_at: Option<DateTime<Utc>>,
    /// Since when the reports have said the sitemap has errors.
    pub errors_since: Option<DateTime<Utc>>,
    /// The last read, when it failed, and since when reads have failed so.
    pub failure: Option<ReadFailure>,
    pub failure_since: Option<DateTime<Utc>>,
    /// When a run last said each of its problems (`[submit] remind`), by
    /// the problem's reason.
    pub reminded: Vec<(String, DateTime<Utc>)>,
}

impl SitemapState {
    /// Whether the engine's report is read at `now`: its sitemap was
    /// submitted (accepted) at least once and is not parked (a parked
    /// submission is said as such), and it was never read, or submitted
    /// since its last read, or last read `interval` ago or more.
    pub fn read_due(&self, now: DateTime<Utc>, interval: TimeDelta) -> bool {
        let Some(submitted) = self.submitted_at else { return false };
        if self.item == ItemState::Parked {
            return false;
        }
        match self.read_at {
            None => true,
            Some(read) => submitted > read || now >= read + interval,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn a_report_is_read_after_a_submission_and_every_interval() {
        let submitted = at("2026-12-03T09:00:00Z");
        let state = SitemapState {
            group: GroupKey::sitemap("site", super::super::EngineKind::Google, "https://s.example/s.xml"),
            item: ItemState::Accepted,
            submitted_at: Some(submitted),
            read_at: None,
            reading: None,
            read_ok_at: None,
            errors_since: None,
            failure: None,
            failure_since: None,
            reminded: Vec::new(),
        };
        let six = TimeDelta::hours(6);
        assert!(state.read_due(submitted, six), "never read");
        let read = SitemapState { read_at: Some(submitted + TimeDelta::seconds(1)), ..state.clone() };
        assert!(!read.read_due(submitted + TimeDelta::hours(5), six));
        assert!(read.read_due(submitted + TimeDelta::hours(6) + TimeDelta::seconds(1), six));
        let resubmitted = SitemapState { submitted_at: Some(submitted + TimeDelta::hours(1)), ..read.clone() };
        assert!(resubmitted.read_due(submitted + TimeDelta::hours(1), six), "submitted since");
        assert!(!SitemapState { submitted_at: None, ..state.clone() }.read_due(submitted, six), "never submitted");
        assert!(!SitemapState { item: ItemState::Parked, ..state }.read_due(submitted, six), "parked");
    }
}
