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
    /// Baidu's link push (普通收录 API 提交).
    Baidu,
    /// Yandex Webmaster's recrawl queue.
    Yandex,
}

impl EngineKind {
    pub const ALL: [EngineKind; 5] =
        [EngineKind::IndexNow, EngineKind::Bing, EngineKind::Google, EngineKind::Baidu, EngineKind::Yandex];

    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::IndexNow => "indexnow",
            EngineKind::Bing => "bing",
            EngineKind::Google => "google",
            EngineKind::Baidu => "baidu",
            EngineKind::Yandex => "yandex",
        }
    }

    /// Whether the engine sets a daily quota on URLs: then `[submit] order`
    /// (newest first) and the baseline apply to it. IndexNow's endpoints set
    /// none.
    pub fn daily_quota(self) -> bool {
        match self {
            EngineKind::IndexNow => false,
            EngineKind::Bing | EngineKind::Google | EngineKind::Baidu | EngineKind::Yandex => true,
        }
    }

    /// The name a person reads ("IndexNow", "Bing", "Google", "Baidu", "Yandex").
    pub fn title(self) -> &'static str {
        match self {
            EngineKind::IndexNow => "IndexNow",
            EngineKind::Bing => "Bing",
            EngineKind::Google => "Google",
            EngineKind::Baidu => "Baidu",
            EngineKind::Yandex => "Yandex",
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
            "baidu" => Ok(EngineKind::Baidu),
            "yandex" => Ok(EngineKind::Yandex),
            other => Err(format!("unknown engine `{other}` (expected indexnow, bing, google, baidu or yandex)")),
        }
    }
}
