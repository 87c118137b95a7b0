//! The order a group's due URLs go in (`[submit] order`).

use std::fmt;
use std::str::FromStr;

/// `[submit] order`: which due URLs a claim takes first where the budget
/// does not cover them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SubmitOrder {
    /// New and changed URLs first, the newest `lastmod` first (the time the
    /// URL was queued where it has none); retries first, by due time.
    #[default]
    Newest,
    /// By due time, then as the URLs were first read: first in, first out.
    Oldest,
}

impl SubmitOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            SubmitOrder::Newest => "newest",
            SubmitOrder::Oldest => "oldest",
        }
    }
}

impl fmt::Display for SubmitOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SubmitOrder {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "newest" => Ok(SubmitOrder::Newest),
            "oldest" => Ok(SubmitOrder::Oldest),
            other => Err(format!("unknown order `{other}` (expected newest or oldest)")),
        }
    }
}
