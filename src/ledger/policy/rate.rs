//! `indexq serve`'s intake limits: GCRA (the generic cell rate algorithm),
//! one stored value per token and rule — its theoretical arrival time
//! (TAT). A rule lets `per` units through every `period`, `burst` at once:
//! the emission interval is `T = period / per`, the tolerance
//! `τ = (burst − 1) × T`. A request of `cost` units at `now` is allowed when
//! `max(TAT, now) + cost × T − (τ + T) ≤ now`, and then the TAT becomes
//! `max(TAT, now) + cost × T`; a refused request leaves it as it was, and
//! is told to come back after `TAT − τ − now` (for `cost` units, when
//! `cost` of them fit). Decided here once; each backend reads and writes
//! the TAT in one transaction, so processes sharing a ledger share it.

use chrono::{DateTime, TimeDelta, Utc};

/// A rule: `per` units every `period`, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gcra {
    pub per: u32,
    pub period: TimeDelta,
    pub burst: u32,
}

/// What a rule made of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    pub allowed: bool,
    /// The TAT to store (unchanged when refused).
    pub tat: DateTime<Utc>,
    /// Refused: how long until `cost` units fit (never, when `cost` is over
    /// the burst: `None`).
    pub retry_after: Option<TimeDelta>,
    /// Units that would pass now, after this request.
    pub remaining: u32,
    /// How long until the whole burst is available again.
    pub reset: TimeDelta,
}

impl Gcra {
    /// The emission interval: one unit every `T`.
    pub fn interval(&self) -> TimeDelta {
        // In nanoseconds, so 100 a second is exactly 10 ms.
        let nanos = self.period.num_nanoseconds().unwrap_or(i64::MAX) / i64::from(self.per.max(1));
        TimeDelta::nanoseconds(nanos.max(1))
    }

    /// The tolerance: `(burst − 1) × T`.
    pub fn tolerance(&self) -> TimeDelta {
        self.interval() * (self.burst.max(1) as i32 - 1)
    }

    /// Decides a request of `cost` units at `now`, the stored TAT being
    /// `tat` (none yet: as if it were `now`).
    pub fn decide(&self, tat: Option<DateTime<Utc>>, now: DateTime<Utc>, cost: u32) -> RateDecision {
        let t = self.interval();
        let tau = self.tolerance();
        let base = tat.map_or(now, |tat| tat.max(now));
        let new_tat = base + t * cost as i32;
        let allow_at = new_tat - tau - t;
        let allowed = cost <= self.burst && allow_at <= now;
        let tat = if allowed { new_tat } else { tat.unwrap_or(now) };
        let retry_after = match (allowed, cost <= self.burst) {
            (true, _) => None,
            (false, true) => Some(allow_at - now),
            (false, false) => None,
        };
        let used = tat.max(now) - now;
        let spare = (tau + t - used).max(TimeDelta::zero());
        let remaining = (spare.num_nanoseconds().unwrap_or(0) / t.num_nanoseconds().unwrap_or(1).max(1)) as u32;
        RateDecision { allowed, tat, retry_after, remaining: remaining.min(self.burst), reset: used }
    }
}

/// One request's takes, in order: a rule is taken only if every rule
/// before it allowed (a refused request moves nothing of the rule that
/// refused it, nor of those after).
#[derive(Debug, Clone)]
pub struct RateRequest {
    pub token: String,
    pub takes: Vec<(String, Gcra, u32)>,
}

/// The TATs of a group of requests, by token and rule: what is stored
/// (`None`: never taken), then what the decisions made of them.
pub type Tats = std::collections::BTreeMap<(String, String), Option<DateTime<Utc>>>;

/// Decides `requests` in order at `now` over `tats` (every token and rule
/// they name, as stored), advancing `tats` as each allows: per request,
/// the decision of each rule taken. Returns the keys whose TAT moved.
pub fn decide_all(requests: &[RateRequest], tats: &mut Tats, now: DateTime<Utc>) -> Vec<Vec<RateDecision>> {
    let mut out = Vec::with_capacity(requests.len());
    for request in requests {
        let mut decisions = Vec::with_capacity(request.takes.len());
        for (rule, gcra, cost) in &request.takes {
            let key = (request.token.clone(), rule.clone());
            let tat = tats.get(&key).copied().flatten();
            let d = gcra.decide(tat, now, *cost);
            decisions.push(d);
            if !d.allowed {
                break;
            }
            tats.insert(key, Some(d.tat));
        }
        out.push(decisions);
    }
    out
}

/// The tokens and rules `requests` name, each once.
pub fn rate_keys(requests: &[RateRequest]) -> Vec<(String, String)> {
    let keys: std::collections::BTreeSet<(String, String)> =
        requests.iter().flat_map(|r| r.takes.iter().map(|(rule, _, _)| (r.token.clone(), rule.clone()))).collect();
    keys.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap() + TimeDelta::milliseconds(ms)
    }

    /// 100 a second with a burst of 20.
    const RULE: Gcra = Gcra { per: 100, period: TimeDelta::seconds(1), burst: 20 };

    /// Sends `n` requests of one unit at `now` from `tat`; the decisions.
    fn burst(mut tat: Option<DateTime<Utc>>, now: DateTime<Utc>, n: usize) -> Vec<RateDecision> {
        let mut out = Vec::new();
        for _ in 0..n {
            let d = RULE.decide(tat, now, 1);
            tat = Some(d.tat);
            out.push(d);
        }
        out
    }

    #[test]
    fn twenty_pass_at_once_and_the_21st_is_refused_with_a_retry_of_10_ms() {
        assert_eq!((RULE.interval(), RULE.tolerance()), (TimeDelta::milliseconds(10), TimeDelta::milliseconds(190)));
        let decisions = burst(None, at_ms(0), 21);
        assert!(decisions[..20].iter().all(|d| d.allowed));
        let remaining: Vec<u32> = decisions[..20].iter().map(|d| d.remaining).collect();
        assert_eq!(remaining, (0..20).rev().collect::<Vec<u32>>(), "each says how many more pass now");
        let last = decisions[20];
        assert!(!last.allowed);
        assert_eq!(last.retry_after, Some(TimeDelta::milliseconds(10)));
        assert_eq!(last.tat, at_ms(200), "a refused request does not move the TAT");
        assert_eq!((last.remaining, last.reset), (0, TimeDelta::milliseconds(200)));
    }

    #[test]
    fn five_ms_after_a_full_burst_the_retry_is_5_ms_and_after_it_one_passes() {
        let tat = burst(None, at_ms(0), 20).last().unwrap().tat;
        let d = RULE.decide(Some(tat), at_ms(5), 1);
        assert!(!d.allowed);
        assert_eq!(d.retry_after, Some(TimeDelta::milliseconds(5)));
        let d = RULE.decide(Some(tat), at_ms(10), 1);
        assert!(d.allowed, "one unit has come back");
        assert_eq!((d.tat, d.remaining), (at_ms(210), 0));
    }

    #[test]
    fn a_rule_recovers_its_whole_burst_and_never_more() {
        let tat = burst(None, at_ms(0), 20).last().unwrap().tat;
        assert_eq!(burst(Some(tat), at_ms(10_000), 21).iter().filter(|d| d.allowed).count(), 20);
    }

    #[test]
    fn requests_decided_together_are_decided_in_order_and_a_refusal_moves_nothing() {
        let per_request = Gcra { per: 1, period: TimeDelta::seconds(1), burst: 2 };
        let per_url = Gcra { per: 1, period: TimeDelta::seconds(1), burst: 3 };
        let request = |token: &str, urls: u32| RateRequest {
            token: token.into(),
            takes: vec![("requests".into(), per_request, 1), ("urls".into(), per_url, urls)],
        };
        let requests = [request("a", 2), request("a", 2), request("b", 1), request("a", 1)];
        let mut tats = Tats::new();
        let decided = decide_all(&requests, &mut tats, at_ms(0));
        let allowed: Vec<Vec<bool>> = decided.iter().map(|d| d.iter().map(|d| d.allowed).collect()).collect();
        assert_eq!(
            allowed,
            [vec![true, true], vec![true, false], vec![true, true], vec![false]],
            "the second's URLs do not fit; the fourth is over the request rule, its URLs not asked"
        );
        assert_eq!(tats[&("a".to_string(), "urls".to_string())], Some(at_ms(2000)), "only the first's URLs moved it");
        assert_eq!(tats[&("a".to_string(), "requests".to_string())], Some(at_ms(2000)));
        assert_eq!(rate_keys(&requests).len(), 4);
    }

    #[test]
    fn a_request_of_many_units_passes_when_they_all_fit_and_one_over_the_burst_never() {
        let urls = Gcra { per: 600, period: TimeDelta::seconds(60), burst: 1000 };
        assert_eq!(urls.interval(), TimeDelta::milliseconds(100));
        let d = urls.decide(None, at_ms(0), 1000);
        assert!(d.allowed);
        assert_eq!((d.tat, d.remaining), (at_ms(100_000), 0));
        // 10 more: 10 intervals of 100 ms to wait.
        let refused = urls.decide(Some(d.tat), at_ms(0), 10);
        assert_eq!((refused.allowed, refused.retry_after), (false, Some(TimeDelta::seconds(1))));
        assert_eq!(refused.tat, d.tat);
        let never = urls.decide(None, at_ms(0), 1001);
        assert_eq!((never.allowed, never.retry_after, never.tat), (false, None, at_ms(0)));
    }
}
