//! Budget windows and their usage: a window's length (`Period`), a rule's current window, what has been
//! counted against it, and what an engine reported of it.

use chrono::{DateTime, Utc};
use std::fmt;

/// One budget rule in the window that contains "now".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleWindow {
    /// Stable id, e.g. `indexnow:example.com:https://api.indexnow.org/indexnow:day`.
    pub rule: String,
    pub period: Period,
    /// Window key, e.g. `2026-12-03` or `2026-12`.
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
