//! `indexq serve`'s intake limits (`Limits`): per token and rule, one
//! stored theoretical arrival time, read, decided (`policy::Gcra`) and
//! advanced in one transaction — so several processes on one PostgreSQL
//! ledger share each token's limits — and left as it was by a request the
//! rule refuses. What a token is, and which rules there are, is `serve`'s.

pub use super::policy::{Gcra, RateDecision, RateRequest};
use super::{Now, Result};

/// The intake limits: schema 6's `intake_limits`.
pub trait Limits {
    /// Takes the rules of each of `requests`, in order, at the ledger's now
    /// (on PostgreSQL the database server's clock, shifted as `now` says):
    /// per request, the decision of each rule taken (`policy::decide_all`),
    /// stored where it allows. One transaction for them all: many requests
    /// cost one commit.
    fn take_rates(&mut self, requests: &[RateRequest], now: Now) -> Result<Vec<Vec<RateDecision>>>;

    /// Takes `cost` units of `token`'s `rule`: the rule's decision.
    #[cfg(test)]
    fn take_rate(&mut self, token: &str, rule: &str, gcra: &Gcra, cost: u32, now: Now) -> Result<RateDecision> {
        let request = RateRequest { token: token.into(), takes: vec![(rule.into(), *gcra, cost)] };
        let mut decided = self.take_rates(&[request], now)?;
        Ok(decided.remove(0).remove(0))
    }
}
