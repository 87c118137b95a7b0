//! What a run keeps of a document it fetched for a property's `sources` (a
//! remote sitemap): what makes the next fetch conditional (`ETag`,
//! `Last-Modified`), what tells a change (the body's digest), and what it
//! was read for (the run's groups), so that an unchanged sitemap costs one
//! 304 and no parse.

use chrono::{DateTime, Utc};

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
