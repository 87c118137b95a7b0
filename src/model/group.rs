//! Where URLs go: a group (property, engine, channel, target), and what a
//! submission tells the engine of a URL.

use super::EngineKind;

/// What a group's items are sent as: URLs (IndexNow, Bing's URL
/// Submission API, Google's Indexing API), or a property's sitemap (Search
/// Console's `sitemaps.submit`, Bing's `SubmitFeed`), told when it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    #[default]
    Urls,
    Sitemaps,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Urls => "urls",
            Channel::Sitemaps => "sitemaps",
        }
    }
}

impl std::str::FromStr for Channel {
    type Err = ();
    fn from_str(s: &str) -> std::result::Result<Channel, ()> {
        match s {
            "urls" => Ok(Channel::Urls),
            "sitemaps" => Ok(Channel::Sitemaps),
            _ => Err(()),
        }
    }
}

/// Where a group of items goes: one property, one engine, one channel, one
/// target — the endpoint URL for IndexNow, where each endpoint has its own
/// state; the sitemap's URL for a sitemap group (one group per sitemap, so
/// that a sitemap's budget is its own); empty for the URLs of the engines
/// with a single endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKey {
    pub property: String,
    pub engine: EngineKind,
    pub target: String,
    pub channel: Channel,
}

impl GroupKey {
    /// A group of URLs (`target`: the IndexNow endpoint, else empty).
    pub fn urls(property: impl Into<String>, engine: EngineKind, target: impl Into<String>) -> GroupKey {
        GroupKey { property: property.into(), engine, target: target.into(), channel: Channel::Urls }
    }

    /// The group of one sitemap of a property, sent to `engine`.
    pub fn sitemap(property: impl Into<String>, engine: EngineKind, sitemap: impl Into<String>) -> GroupKey {
        GroupKey { property: property.into(), engine, target: sitemap.into(), channel: Channel::Sitemaps }
    }

    /// The IndexNow endpoint the group sends to, if it has one.
    pub fn endpoint(&self) -> Option<&str> {
        (self.channel == Channel::Urls && !self.target.is_empty()).then_some(self.target.as_str())
    }

    /// The sitemap the group submits, if it is a sitemap group.
    pub fn sitemap_url(&self) -> Option<&str> {
        (self.channel == Channel::Sitemaps).then_some(self.target.as_str())
    }
}

/// What a submission says happened to a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Action {
    #[default]
    Updated,
    Deleted,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Updated => "updated",
            Action::Deleted => "deleted",
        }
    }
}

impl std::str::FromStr for Action {
    type Err = ();
    fn from_str(s: &str) -> std::result::Result<Action, ()> {
        match s {
            "updated" => Ok(Action::Updated),
            "deleted" => Ok(Action::Deleted),
            _ => Err(()),
        }
    }
}
