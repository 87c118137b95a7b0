//! What an answer means (its class) and what became of a URL in a run
//! (its outcome). Serde names are the `--json` names (README, *Output and exit codes*)
//! and the strings stored in the ledger.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What an engine's answer (or the lack of one) means (README, *What each answer means*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    Accepted,
    Quota,
    Transient,
    KeyPending,
    Misconfigured,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Accepted => "accepted",
            Class::Quota => "quota",
            Class::Transient => "transient",
            Class::KeyPending => "key_pending",
            Class::Misconfigured => "misconfigured",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Class {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "accepted" => Class::Accepted,
            "quota" => Class::Quota,
            "transient" => Class::Transient,
            "key_pending" => Class::KeyPending,
            "misconfigured" => Class::Misconfigured,
            other => return Err(format!("unknown class `{other}`")),
        })
    }
}

/// The outcome of one URL for one engine in one run: a class, or one of the
/// local outcomes that never left the machine (README, *What each answer means*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Accepted,
    Quota,
    Transient,
    KeyPending,
    Misconfigured,
    Deferred,
    Skipped,
    Invalid,
}

impl Outcome {
    pub const ALL: [Outcome; 8] = [
        Outcome::Accepted,
        Outcome::Quota,
        Outcome::Transient,
        Outcome::KeyPending,
        Outcome::Misconfigured,
        Outcome::Deferred,
        Outcome::Skipped,
        Outcome::Invalid,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Quota => "quota",
            Outcome::Transient => "transient",
            Outcome::KeyPending => "key_pending",
            Outcome::Misconfigured => "misconfigured",
            Outcome::Deferred => "deferred",
            Outcome::Skipped => "skipped",
            Outcome::Invalid => "invalid",
        }
    }
}

impl From<Class> for Outcome {
    fn from(class: Class) -> Self {
        match class {
            Class::Accepted => Outcome::Accepted,
            Class::Quota => Outcome::Quota,
            Class::Transient => Outcome::Transient,
            Class::KeyPending => Outcome::KeyPending,
            Class::Misconfigured => Outcome::Misconfigured,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Outcome {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Outcome::ALL
            .into_iter()
            .find(|o| o.as_str() == s.trim())
            .ok_or_else(|| {
                format!(
                    "unknown outcome `{s}` (expected one of accepted, quota, transient, key_pending, misconfigured, deferred, skipped, invalid)"
                )
            })
    }
}
