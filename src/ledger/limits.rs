//! `indexq serve`'s intake limits (`Limits`): per token and rule, one
//! stored theoretical arrival time, read, decided (`policy::Gcra`) and
//! advanced in one transaction — so several processes on one PostgreSQL
//! ledger share each token's limits — and left as it was by a request the
//! rule refuses. What a token is, and which rules there are, is `serve`'s.

pub use super::policy::{Gcra, RateDecision};
use super::{Now, Result};

/// The intake limits: schema 6's `intake_limits`.
pub trait Limits {
    /// Takes `cost` units of `token`'s `rule` at the ledger's now (on
    /// PostgreSQL the database server's clock, shifted as `now` says): the
    /// rule's decision, stored if it allows. One transaction.
    fn take_rate(&mut self, token: &str, rule: &str, gcra: &Gcra, cost: u32, now: Now) -> Result<RateDecision>;
}
