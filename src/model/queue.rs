//! A queue item's state and the counts of a group's items, and what an
//! attempt leaves behind: the response as stored and what happens next.

use super::{GroupKey, Reason};
use chrono::{DateTime, Utc};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemState {
    Queued,
    InFlight,
    Accepted,
    Parked,
}

impl ItemState {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemState::Queued => "queued",
            ItemState::InFlight => "in_flight",
            ItemState::Accepted => "accepted",
            ItemState::Parked => "parked",
        }
    }
}

impl std::str::FromStr for ItemState {
    type Err = ();
    fn from_str(s: &str) -> std::result::Result<ItemState, ()> {
        match s {
            "queued" => Ok(ItemState::Queued),
            "in_flight" => Ok(ItemState::InFlight),
            "accepted" => Ok(ItemState::Accepted),
            "parked" => Ok(ItemState::Parked),
            _ => Err(()),
        }
    }
}

/// Queue counts for a group at a moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct QueueCounts {
    /// Queued and due now.
    pub due: u64,
    /// Queued for later (a window, a backoff).
    pub waiting: u64,
    /// Waiting for a human.
    pub parked: u64,
    pub in_flight: u64,
    pub accepted: u64,
}

/// What happens to an item after an attempt.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NextStep {
    Accepted,
    RetryAt(DateTime<Utc>),
    /// Parked until a human acts or the configuration (fingerprint) changes.
    Park {
        fingerprint: String,
    },
}

/// One response as stored: status and redacted, capped body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredResponse {
    pub http_status: Option<u16>,
    pub body: Option<String>,
}

/// The parked items of one group whose last answer gave one reason: what
/// needs a human, said until it is fixed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedGroup {
    pub group: GroupKey,
    /// The reason of their last answer (`None`: parked with no answer
    /// recorded).
    pub reason: Option<Reason>,
    pub count: u64,
    /// The earliest of their last answers.
    pub since: Option<DateTime<Utc>>,
    /// The URL and message of the latest of those answers.
    pub url: String,
    pub message: Option<String>,
    /// When a run last said so (`[submit] remind`).
    pub reminded_at: Option<DateTime<Utc>>,
}

impl ParkedGroup {
    /// The key a reminder is kept under: the reason's text (`parked` for
    /// none).
    pub fn reminder_key(&self) -> String {
        self.reason.map_or_else(|| super::LocalReason::Parked.to_string(), |r| r.to_string())
    }

    /// Three parked URLs of an IndexNow group since 2026-12-03 09:00 UTC,
    /// for `reason`, last reminded at `reminded_at`: the reminders' and
    /// their wording's tests share it.
    #[cfg(test)]
    pub fn example(reason: Reason, reminded_at: Option<&str>) -> ParkedGroup {
        ParkedGroup {
            group: GroupKey::urls("site", super::EngineKind::IndexNow, "https://api.indexnow.org/indexnow"),
            reason: Some(reason),
            count: 3,
            since: Some("2026-12-03T09:00:00Z".parse().unwrap()),
            url: "https://site.example/a".into(),
            message: Some("the key file answers 404".into()),
            reminded_at: reminded_at.map(|t| t.parse().unwrap()),
        }
    }
}
