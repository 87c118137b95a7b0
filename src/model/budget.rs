//! Budget rules and windows and their usage: a rule's identity (`RuleId`),
//! a window's length (`Period`), a rule's current window, what has been
//! counted against it, and what an engine reported of it.

use chrono::{DateTime, Utc};
use std::fmt;

/// What a budget rule counts: a family of sends (an engine's URLs, its
/// sitemaps, Google's inspections), whose sends (a property, or a pool
/// several share), the endpoint or sitemap that counts on its own, and the
/// window's length.
///
/// Its text (`Display`) is the rule's id: what the ledger keys its counts,
/// blocks and reservations by, and what `--json`, the metrics and the report
/// show, `{family}:{whose}[:{target}]:{period}`, e.g.
/// `indexnow:example.com:https://api.indexnow.org/indexnow:day`,
/// `bing:*:month`. Ledgers already hold these texts: they never change.
/// With a window key (`RuleWindow::window`) it names one row of counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleId {
    pub family: RuleFamily,
    pub whose: Whose,
    /// The IndexNow endpoint, or the sitemap, counted on its own.
    pub target: Option<String>,
    pub period: Period,
}

/// The sends a rule counts, and the first part of its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleFamily {
    /// URLs sent to an IndexNow endpoint.
    IndexNow,
    /// URLs sent to Bing, as indexq counts them.
    Bing,
    /// URLs sent to Bing, against what Bing says is left.
    BingReported,
    /// URLs sent to Google's Indexing API, per property.
    Google,
    /// URLs sent to Google's Indexing API, per Cloud project.
    GoogleProject,
    /// Sitemaps submitted to Search Console.
    GoogleSitemaps,
    /// Sitemaps submitted to Bing.
    BingSitemaps,
    /// URL inspections (Search Console's URL Inspection API).
    GoogleInspect,
    /// URLs pushed to Baidu, as indexq counts them.
    Baidu,
    /// URLs pushed to Baidu, against the `remain` its answers state.
    BaiduReported,
    /// URLs sent to Yandex's recrawl queue, as indexq counts them.
    Yandex,
    /// URLs sent to Yandex's recrawl queue, against its `quota_remainder`.
    YandexReported,
}

impl RuleFamily {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleFamily::IndexNow => "indexnow",
            RuleFamily::Bing => "bing",
            RuleFamily::BingReported => "bing-reported",
            RuleFamily::Google => "google",
            RuleFamily::GoogleProject => "google-project",
            RuleFamily::GoogleSitemaps => "google-sitemaps",
            RuleFamily::BingSitemaps => "bing-sitemaps",
            RuleFamily::GoogleInspect => "google-inspect",
            RuleFamily::Baidu => "baidu",
            RuleFamily::BaiduReported => "baidu-reported",
            RuleFamily::Yandex => "yandex",
            RuleFamily::YandexReported => "yandex-reported",
        }
    }

    /// Whether the family counts against what the engine itself says is
    /// left (its last statement, kept in the ledger, sets the limit).
    pub fn reported(self) -> bool {
        matches!(self, RuleFamily::BingReported | RuleFamily::BaiduReported | RuleFamily::YandexReported)
    }

    /// Whether the engine says what is left in its answers to sends (Baidu's
    /// `remain`, Yandex's `quota_remainder`), not only in a read before
    /// them (Bing): until it has said so in a window, its rule's fallback
    /// bounds a claim but defers nothing — the answer to that claim says.
    pub fn states_in_answers(self) -> bool {
        matches!(self, RuleFamily::BaiduReported | RuleFamily::YandexReported)
    }

    /// The family a rule's id (`RuleId`'s text) names, by its first part.
    pub fn of_rule_id(id: &str) -> Option<RuleFamily> {
        const ALL: [RuleFamily; 12] = [
            RuleFamily::IndexNow,
            RuleFamily::Bing,
            RuleFamily::BingReported,
            RuleFamily::Google,
            RuleFamily::GoogleProject,
            RuleFamily::GoogleSitemaps,
            RuleFamily::BingSitemaps,
            RuleFamily::GoogleInspect,
            RuleFamily::Baidu,
            RuleFamily::BaiduReported,
            RuleFamily::Yandex,
            RuleFamily::YandexReported,
        ];
        let first = id.split(':').next()?;
        ALL.into_iter().find(|f| f.as_str() == first)
    }
}

/// Whose sends a rule counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whose {
    /// One property's, by name.
    Property(String),
    /// A pool's, shared by several properties: those whose credentials
    /// are of one Cloud project (Google; by its id), or `None` for every
    /// property using the engine (`*`).
    Pool(Option<String>),
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whose = match &self.whose {
            Whose::Property(name) => name.as_str(),
            Whose::Pool(Some(pool)) => pool.as_str(),
            Whose::Pool(None) => "*",
        };
        write!(f, "{}:{whose}:", self.family.as_str())?;
        if let Some(target) = &self.target {
            write!(f, "{target}:")?;
        }
        f.write_str(self.period.as_str())
    }
}

/// One budget rule in the window that contains "now".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleWindow {
    /// The rule's id (a `RuleId`'s text), e.g.
    /// `indexnow:example.com:https://api.indexnow.org/indexnow:day`.
    pub rule: String,
    pub period: Period,
    /// Window key, e.g. `2026-12-03` or `2026-12` (`clock::window_at`).
    pub window: String,
    /// The configured limit; for a reported rule, the limit that applies
    /// until the engine has reported its own numbers in this window.
    pub limit: Option<u64>,
    /// The engine reports what is left (Bing): its last report, kept in the
    /// ledger, sets the limit.
    pub reported: bool,
    pub resets_at: DateTime<Utc>,
}

/// What the ledger knows of a rule's current window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub used: u64,
    /// The server said no until then (a `quota` answer).
    pub blocked_until: Option<DateTime<Utc>>,
    /// For a reported rule: when the engine last said what is left, what it
    /// said, and the limit that makes of it in the ledger's count.
    pub reported: Option<Report>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub at: DateTime<Utc>,
    pub remaining: u64,
    pub limit: u64,
}

impl Usage {
    /// The limit that applies: the engine's report for a reported rule that
    /// has one, else the rule's own.
    pub fn limit(&self, rule: &RuleWindow) -> Option<u64> {
        match self.reported {
            Some(report) if rule.reported => Some(report.limit),
            _ => rule.limit,
        }
    }

    /// Units left in the window at `now`; `None` means no limit.
    pub fn remaining(&self, rule: &RuleWindow, now: DateTime<Utc>) -> Option<u64> {
        if self.blocked_until.is_some_and(|t| t > now) {
            return Some(0);
        }
        self.limit(rule).map(|l| l.saturating_sub(self.used))
    }

    /// When the rule frees budget again, if it has none left at `now`.
    pub fn available_at(&self, rule: &RuleWindow, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let blocked = self.blocked_until.filter(|t| *t > now);
        let spent = self.limit(rule).is_some_and(|l| self.used >= l).then_some(rule.resets_at);
        match (blocked, spent) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The length of a quota window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Period {
    /// A clock minute (rate rules such as Google's inspections per minute).
    Minute,
    Day,
    Month,
}

impl Period {
    /// `"day"` or `"month"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Minute => "minute",
            Period::Day => "day",
            Period::Month => "month",
        }
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts ledgers already hold and scripts read: one of each shape.
    #[test]
    fn a_rule_id_reads_as_ledgers_have_stored_it() {
        let id = |family, whose, target: Option<&str>, period| {
            RuleId { family, whose, target: target.map(str::to_string), period }.to_string()
        };
        let site = || Whose::Property("site".into());
        let endpoint = Some("https://api.indexnow.org/indexnow");
        let sitemap = Some("https://site.example/sitemap.xml");
        let project = || Whose::Pool(Some("my-project".into()));
        let texts = [
            (
                id(RuleFamily::IndexNow, site(), endpoint, Period::Day),
                "indexnow:site:https://api.indexnow.org/indexnow:day",
            ),
            (
                id(RuleFamily::IndexNow, Whose::Pool(None), endpoint, Period::Day),
                "indexnow:*:https://api.indexnow.org/indexnow:day",
            ),
            (id(RuleFamily::Bing, site(), None, Period::Month), "bing:site:month"),
            (id(RuleFamily::Bing, Whose::Pool(None), None, Period::Day), "bing:*:day"),
            (id(RuleFamily::BingReported, site(), None, Period::Day), "bing-reported:site:day"),
            (id(RuleFamily::BaiduReported, site(), None, Period::Day), "baidu-reported:site:day"),
            (id(RuleFamily::Yandex, Whose::Pool(None), None, Period::Day), "yandex:*:day"),
            (id(RuleFamily::Google, site(), None, Period::Day), "google:site:day"),
            (id(RuleFamily::GoogleProject, project(), None, Period::Day), "google-project:my-project:day"),
            (
                id(RuleFamily::GoogleSitemaps, site(), sitemap, Period::Day),
                "google-sitemaps:site:https://site.example/sitemap.xml:day",
            ),
            (id(RuleFamily::GoogleSitemaps, project(), None, Period::Minute), "google-sitemaps:my-project:minute"),
            (
                id(RuleFamily::BingSitemaps, site(), sitemap, Period::Day),
                "bing-sitemaps:site:https://site.example/sitemap.xml:day",
            ),
            (id(RuleFamily::GoogleInspect, site(), None, Period::Minute), "google-inspect:site:minute"),
        ];
        for (text, stored) in texts {
            assert_eq!(text, stored);
            let family = RuleFamily::of_rule_id(&text).map(RuleFamily::as_str);
            assert_eq!(family, stored.split(':').next(), "{stored}");
        }
        assert_eq!(RuleFamily::of_rule_id("nothing:site:day"), None);
    }
}
