//! What a run keeps of a document it fetched for a property's `sources` (a
//! remote sitemap): what makes the next fetch conditional (`ETag`,
//! `Last-Modified`), what tells a change (the body's digest), and what it
//! was read for (the run's groups), so that an unchanged sitemap costs one
//! 304 and no parse.

use super::LocalReason;
use chrono::{DateTime, Utc};

/// A property's source (a `sources` entry) that could not be read, as the
/// ledger keeps it until it reads again: why (the last failed read's
/// reason, one of the `source_*` local reasons, and its message), since
/// when it has failed (kept across reads that fail for another reason),
/// and when a run last said so (`[submit] remind`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFailure {
    pub property: String,
    /// The source as configured: its URL, or its path.
    pub source: String,
    pub reason: LocalReason,
    pub message: String,
    /// The first failed read of this spell.
    pub since: DateTime<Utc>,
    /// The latest failed read.
    pub failed_at: DateTime<Utc>,
    pub reminded_at: Option<DateTime<Utc>>,
}

/// What a fetched sitemap document held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentKind {
    /// A `<urlset>`: URLs. Fetched conditionally next time.
    Urlset,
    /// A `<sitemapindex>`: other sitemaps. Always fetched in full, since a
    /// child may change while the index does not.
    Index,
}

impl DocumentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentKind::Urlset => "urlset",
            DocumentKind::Index => "index",
        }
    }
}

impl std::str::FromStr for DocumentKind {
    type Err = ();
    fn from_str(s: &str) -> Result<DocumentKind, ()> {
        match s {
            "urlset" => Ok(DocumentKind::Urlset),
            "index" => Ok(DocumentKind::Index),
            _ => Err(()),
        }
    }
}

/// A remote sitemap document as the ledger keeps it, once every URL read
/// from it is in the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceDocument {
    pub url: String,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// SHA-256 of the body as downloaded (hex).
    pub digest: String,
    pub kind: DocumentKind,
    /// The groups its URLs were routed to (a digest): a run that routes to
    /// other groups (an engine added, `--engine`) reads it in full.
    pub routes: String,
    pub fetched_at: DateTime<Utc>,
    /// When indexq first saw the body it has now (its digest): a read that
    /// finds the same digest keeps it, so every run and every machine
    /// sharing the ledger agrees on when the sitemap last changed (what a
    /// sitemap submission compares with its last acceptance).
    pub changed_at: DateTime<Utc>,
}

/// The sitemaps read, as the ledger keeps them: a document whose digest the
/// ledger holds already (`stored`: its digest and `changed_at`, by URL)
/// keeps the `changed_at` it had — the body is the one first seen then —
/// and any other takes the one it was read with (its read's instant). The
/// ledger keeps them so; a dry run reckons them so without writing.
pub fn kept_changes<'s>(
    documents: &[SourceDocument],
    stored: impl Fn(&str) -> Option<(&'s str, DateTime<Utc>)>,
) -> Vec<SourceDocument> {
    documents
        .iter()
        .map(|d| {
            let changed_at = match stored(&d.url) {
                Some((digest, at)) if digest == d.digest => at,
                _ => d.changed_at,
            };
            SourceDocument { changed_at, ..d.clone() }
        })
        .collect()
}

#[cfg(test)]
mod kept_changes_tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn a_body_seen_before_keeps_when_it_changed() {
        let doc = |digest: &str, at_: &str| SourceDocument {
            url: "https://s.example/s.xml".into(),
            etag: None,
            last_modified: None,
            digest: digest.into(),
            kind: DocumentKind::Urlset,
            routes: "r".into(),
            fetched_at: at(at_),
            changed_at: at(at_),
        };
        let before = at("2026-12-01T00:00:00Z");
        let stored = |url: &str| (url == "https://s.example/s.xml").then_some(("d1", before));
        let kept = kept_changes(&[doc("d1", "2026-12-03T00:00:00Z"), doc("d2", "2026-12-03T00:00:00Z")], stored);
        assert_eq!((kept[0].changed_at, kept[1].changed_at), (before, at("2026-12-03T00:00:00Z")));
        assert_eq!(kept[0].fetched_at, at("2026-12-03T00:00:00Z"), "the read is the new one all the same");
    }
}
