//! Each token's intake limits, by GCRA in the ledger (`Limits::take_rate`:
//! one stored value per token and rule, read, decided and advanced in one
//! transaction; a refused request leaves it as it was), so that several
//! `serve` processes on one PostgreSQL ledger share them:
//! `requests_per_second` (every request but `/healthz` and `/readyz`, taken
//! by the guard) and `urls_per_minute` (the URLs of a `POST /v1/urls`, taken
//! once they are read). A refusal is a `429` with `Retry-After` (whole
//! seconds, rounded up, until the request would pass) and the rule's name;
//! every answer carries the IETF RateLimit header fields (`RateLimit-Policy`
//! and `RateLimit`) so a client can pace itself.

use super::State;
use crate::config::RateRule;
use crate::ledger::{Gcra, RateDecision};
use axum::http::{HeaderMap, HeaderValue};
use chrono::TimeDelta;

/// The rules a token's intake is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Limit {
    RequestsPerSecond,
    UrlsPerMinute,
}

impl Limit {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Limit::RequestsPerSecond => "requests_per_second",
            Limit::UrlsPerMinute => "urls_per_minute",
        }
    }

    pub(super) fn rule(self, state: &State) -> RateRule {
        match self {
            Limit::RequestsPerSecond => state.settings.serve.requests,
            Limit::UrlsPerMinute => state.settings.serve.urls,
        }
    }

    pub(super) fn gcra(self, state: &State) -> Gcra {
        let rule = self.rule(state);
        Gcra { per: rule.per, period: TimeDelta::from_std(rule.period).unwrap_or(TimeDelta::MAX), burst: rule.burst }
    }
}

/// What a rule made of a request, for its answer's headers.
#[derive(Debug, Clone, Copy)]
pub(super) struct Charged {
    pub limit: Limit,
    pub decision: RateDecision,
}

/// The RateLimit header fields (draft-ietf-httpapi-ratelimit-headers):
/// every rule's policy, and what is left of those this request took.
pub(super) fn headers(state: &State, taken: &[Charged], headers: &mut HeaderMap) {
    let policy: Vec<String> = [Limit::RequestsPerSecond, Limit::UrlsPerMinute]
        .iter()
        .map(|l| {
            let rule = l.rule(state);
            format!("\"{}\";q={};w={}", l.as_str(), rule.per, rule.period.as_secs())
        })
        .collect();
    if let Ok(v) = HeaderValue::from_str(&policy.join(", ")) {
        headers.insert("ratelimit-policy", v);
    }
    let left: Vec<String> = taken
        .iter()
        .map(|t| {
            let reset = (t.decision.reset.num_milliseconds() + 999) / 1000;
            format!("\"{}\";r={};t={}", t.limit.as_str(), t.decision.remaining, reset.max(0))
        })
        .collect();
    if let Ok(v) = HeaderValue::from_str(&left.join(", ")) {
        if !left.is_empty() {
            headers.insert("ratelimit", v);
        }
    }
}
