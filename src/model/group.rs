//! Where URLs go: a group (property, engine, target), and what a submission
//! tells the engine of a URL.

use super::EngineKind;

/// Where a group of items goes: one property, one engine, one target (the
/// endpoint URL for IndexNow, where each endpoint has its own state; empty
/// for engines with a single endpoint).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKey {
    pub property: String,
    pub engine: EngineKind,
    pub target: String,
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
