//! What needs a human, as data: a notice per group and reason (parked
//! items, an engine's report on a sitemap, refused inspections, URLs the
//! key location leaves out, a source that cannot be read). `attention`
//! finds them and decides when each is told; `output::parked` words them.

use super::{Check, ParkedGroup};

/// What a notice is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    /// Parked items: waiting will not get them through.
    Parked,
    /// What an engine reports of a sitemap submitted to it (its `parked`
    /// group is the sitemap's, with one URL, the sitemap's): indexq reads the
    /// report again by itself and stops saying it once it is resolved.
    SitemapReport,
    /// Google refused a run's URL inspections (`skip_indexed`) for a reason
    /// waiting will not fix: the URLs were published without inspection,
    /// and each run asks again until a human fixes the property or access.
    Inspection,
    /// URLs outside the folder of the IndexNow key location: IndexNow never
    /// gets them until the key location (or the site) changes.
    KeyScope,
    /// A property's source (`sources`) that cannot be read (its `parked`
    /// group is one of the property's, its `url` the source, its reason a
    /// `source_*` one): indexq reads it again on every run that reads the
    /// sources and says `resumed:` once it reads.
    Source,
}

impl NoticeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::Parked => "parked",
            NoticeKind::SitemapReport => "sitemap_report",
            NoticeKind::Inspection => "inspection",
            NoticeKind::KeyScope => "key_scope",
            NoticeKind::Source => "source",
        }
    }
}

/// One parked group, with what a person needs to act on it.
#[derive(Debug, Clone)]
pub struct ParkedNotice {
    pub kind: NoticeKind,
    pub parked: ParkedGroup,
    /// The fix, in the words the answer gave it.
    pub fix: Option<String>,
    /// Whether this run parked some of them.
    pub fresh: bool,
    /// Whether this run said so (a run says it when the group was parked
    /// in it, or when its reminder is due).
    pub told: bool,
}

impl ParkedNotice {
    /// What indexq checks on each run to notice the fix by itself.
    pub fn check(&self) -> Option<Check> {
        match self.kind {
            NoticeKind::SitemapReport => Some(Check::SitemapReport),
            NoticeKind::Parked => self.parked.reason.and_then(|r| r.check()),
            NoticeKind::Inspection | NoticeKind::KeyScope | NoticeKind::Source => None,
        }
    }
}
