//! The search engines indexq submits to.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A search engine indexq can submit to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    #[serde(rename = "indexnow")]
    IndexNow,
    Bing,
    Google,
}

impl EngineKind {
    pub const ALL: [EngineKind; 3] = [EngineKind::IndexNow, EngineKind::Bing, EngineKind::Google];

    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::IndexNow => "indexnow",
            EngineKind::Bing => "bing",
            EngineKind::Google => "google",
        }
    }

    /// The name a person reads ("IndexNow", "Bing", "Google").
    pub fn title(self) -> &'static str {
        match self {
            EngineKind::IndexNow => "IndexNow",
            EngineKind::Bing => "Bing",
            EngineKind::Google => "Google",
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "indexnow" => Ok(EngineKind::IndexNow),
            "bing" => Ok(EngineKind::Bing),
            "google" => Ok(EngineKind::Google),
            other => Err(format!("unknown engine `{other}` (expected indexnow, bing or google)")),
        }
    }
}
