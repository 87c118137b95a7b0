//! The ledger's decisions, made once for every backend (a backend only
//! stores, in its dialect):
//! - admission: what a URL given to the ledger becomes, from what the
//!   ledger holds of it (new, requeued, left waiting, skipped as unchanged);
//! - the claim: from the rules' usage, the number of due items, the batch
//!   size and the pace, how many items go now, how many wait for their paced
//!   slot, and when the rest may go;
//! - what a finished reservation gives back to each of its windows;
//! - the limit an engine's report sets, and the ledger's clock;
//! - what a read of an engine's sitemap report leaves: since when its
//!   problems hold;
//! - the states `queue retry` and `queue drop` act on (here).
//!
//! Pure: each backend reads the inputs and applies the decision in its own
//! transaction, with set-based statements.

mod admit;
mod answer;
mod budget;
mod claim;
mod rate;
mod sitemaps;
mod steps;

pub use admit::{announced, preview, AdmitPlan, Existing};
pub use answer::reported_limit;
#[cfg(test)]
pub use claim::ts_ceil;
pub use claim::{claim, DueKey, DueOrder};
pub use rate::{decide_all, rate_keys, Gcra, RateDecision, RateRequest, Tats};
pub use sitemaps::{sitemap_marks, SitemapMarks};
pub use steps::{AnswerSteps, Backend, ClaimSteps, Due, Kept, Move, Steps, Taken};

use super::{ItemFilter, StateFilter};

/// The states `queue retry` acts on: parked, waiting or due (parked and
/// waiting when none is named).
pub fn retry_states(filter: &ItemFilter) -> ItemFilter {
    let mut filter = filter.clone();
    filter.states.retain(|s| matches!(s, StateFilter::Parked | StateFilter::Waiting | StateFilter::Due));
    if filter.states.is_empty() {
        filter.states = vec![StateFilter::Parked, StateFilter::Waiting];
    }
    filter
}

/// The states `queue drop` acts on: any but in flight (every other one
/// when none is named).
pub fn drop_states(filter: &ItemFilter) -> ItemFilter {
    let mut filter = filter.clone();
    filter.states.retain(|s| *s != StateFilter::InFlight);
    if filter.states.is_empty() {
        filter.states = vec![StateFilter::Due, StateFilter::Waiting, StateFilter::Parked, StateFilter::Accepted];
    }
    filter
}
