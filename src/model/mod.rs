//! The domain every part of indexq speaks in, with no I/O: engines, classes
//! and outcomes, groups and actions, budget windows and their usage, queue
//! states and counts, what is parked, stored responses, run records, the
//! sitemaps read for sources and what the engines report of those
//! submitted, and the reason of every outcome. The ledger stores these and
//! the engines, commands and reports use them; none of them needs the
//! storage layer to name one.

mod budget;
mod engine;
mod group;
pub mod lastmod;
mod notice;
mod order;
mod outcome;
mod position;
mod queue;
mod reason;
mod run;
mod sitemap;
mod source;

pub use budget::{Period, Report, RuleFamily, RuleId, RuleWindow, Usage, Whose};
pub use engine::EngineKind;
pub use group::{Action, Channel, GroupKey};
pub use notice::{NoticeKind, ParkedNotice};
pub use order::SubmitOrder;
pub use outcome::{Class, Outcome};
pub use position::Position;
pub use queue::{ItemState, NextStep, ParkedGroup, QueueCounts, StoredResponse};
pub use reason::{
    AcceptedReason, BingCode, Check, ClassReason, HttpStatus, KeyPendingReason, LocalReason, MisconfiguredReason,
    QuotaReason, Reason, TokenError, TokenHttpStatus, TransientReason,
};
pub use run::RunRecord;
pub use sitemap::{ReadFailure, SitemapRead, SitemapReading, SitemapState};
pub use source::{kept_changes, DocumentKind, SourceDocument, SourceFailure};
