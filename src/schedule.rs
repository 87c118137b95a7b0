//! The retry scheduler: given a classified answer and the item's history,
//! decides what happens next (the README's table of classes). Pure: time and randomness are
//! passed in, so every rule is a unit test.
//!
//! - `quota`: the server's `Retry-After` (capped at 31 days), else the latest
//!   reset of the windows the answer blocked;
//! - `transient`: `Retry-After` (capped at the backoff cap), else exponential
//!   backoff with full jitter from `retry.transient_first` up to
//!   `retry.transient_cap`; after `retry.transient_deadline` of consecutive
//!   failures the item is parked as `misconfigured` / `gave_up`;
//! - `key_pending`: `retry.key_pending_first`, doubling, until
//!   `retry.key_pending_deadline` after the key's first use, then parked as
//!   `misconfigured` / `key_never_accepted`;
//! - `misconfigured`: parked.

use crate::classify::RetryAfter;
use crate::config::RetrySettings;
use crate::model::{Class, MisconfiguredReason};
use chrono::{DateTime, TimeDelta, Utc};

/// The longest a server's `Retry-After` on a quota answer is trusted for.
pub const QUOTA_RETRY_CAP: TimeDelta = TimeDelta::days(31);
/// The shortest retry indexq schedules, so nothing busy-loops.
pub const MIN_RETRY: TimeDelta = TimeDelta::seconds(1);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Accepted,
    RetryAt(DateTime<Utc>),
    /// Parked; `gave_up` says why when the scheduler itself gave up, and
    /// then replaces the answer's reason.
    Park {
        gave_up: Option<GaveUp>,
    },
}

/// Why the scheduler gave up on an item: what its record says instead of
/// the engine's answer (worded by whoever reports it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GaveUp {
    /// Transient failures, `attempts` in a row, for `failing_for`
    /// (`retry.transient_deadline` or more).
    Failing { failing_for: TimeDelta, attempts: u32 },
    /// The key refused for `since_first_use` after its first use
    /// (`retry.key_pending_deadline` or more).
    KeyNeverAccepted { since_first_use: TimeDelta },
}

impl GaveUp {
    /// The reason an item the scheduler gave up on is parked for.
    pub fn reason(self) -> MisconfiguredReason {
        match self {
            GaveUp::Failing { .. } => MisconfiguredReason::GaveUp,
            GaveUp::KeyNeverAccepted { .. } => MisconfiguredReason::KeyNeverAccepted,
        }
    }
}

/// What the scheduler needs of an item's past.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct History {
    pub last_class: Option<Class>,
    /// Consecutive attempts that ended in `last_class`, before this one.
    pub streak: u32,
    pub streak_started_at: Option<DateTime<Utc>>,
}

pub struct Inputs<'a> {
    pub class: Class,
    pub retry_after: Option<RetryAfter>,
    pub now: DateTime<Utc>,
    pub history: History,
    /// For `key_pending`: when the key was first used.
    pub key_first_used: Option<DateTime<Utc>>,
    /// For `quota` without `Retry-After`: when the blocked windows reopen.
    pub quota_reset: Option<DateTime<Utc>>,
    pub settings: &'a RetrySettings,
}

fn delta(d: std::time::Duration) -> TimeDelta {
    TimeDelta::from_std(d).unwrap_or(TimeDelta::MAX)
}

fn resolve(retry_after: RetryAfter, now: DateTime<Utc>) -> TimeDelta {
    match retry_after {
        RetryAfter::Seconds(s) => TimeDelta::seconds(i64::try_from(s).unwrap_or(i64::MAX).min(i64::MAX / 1000)),
        RetryAfter::At(t) => t - now,
    }
}

/// When to try again after a quota answer with `Retry-After`: at least
/// `MIN_RETRY`, at most `QUOTA_RETRY_CAP` from now.
pub fn quota_retry_at(retry_after: RetryAfter, now: DateTime<Utc>) -> DateTime<Utc> {
    now + resolve(retry_after, now).clamp(MIN_RETRY, QUOTA_RETRY_CAP)
}

/// `first * 2^(n-1)`, saturating at `cap`.
fn doubled(first: TimeDelta, n: u32, cap: TimeDelta) -> TimeDelta {
    let factor = 1i32.checked_shl(n.saturating_sub(1).min(30)).unwrap_or(i32::MAX);
    first.checked_mul(factor).unwrap_or(cap).min(cap)
}

/// The first wait before a lost database connection is tried again.
pub const RECONNECT_FIRST: std::time::Duration = std::time::Duration::from_millis(250);
/// The longest wait between two tries to reconnect: a ledger that comes
/// back is found again within this, so that `serve` answers again within
/// seconds of its return.
pub const RECONNECT_CAP: std::time::Duration = std::time::Duration::from_secs(4);

/// How long to wait after the `failures`th failed try to reopen the
/// ledger's connection before the next: doubling from `RECONNECT_FIRST`
/// up to `RECONNECT_CAP`, without jitter (each process has one connection
/// to reopen, so there is no herd of its own to spread). No wait before
/// the first try (`failures` 0): a connection found lost is reopened at
/// once.
pub fn reconnect_after(failures: u32) -> std::time::Duration {
    if failures == 0 {
        return std::time::Duration::ZERO;
    }
    let first = delta(RECONNECT_FIRST);
    doubled(first, failures, delta(RECONNECT_CAP)).to_std().unwrap_or(RECONNECT_CAP)
}

/// The next step of an item whose request the run's stop cut: sent and not
/// answered (`reached`), it goes again once its reservation's lease has
/// ended (`lease_end`), as a reconciled one would (the engine may have it,
/// so not sooner); never sent, it is due at once.
pub fn after_stop(reached: bool, now: DateTime<Utc>, lease_end: DateTime<Utc>) -> Decision {
    Decision::RetryAt(if reached { lease_end.max(now) } else { now })
}

/// Decides the next step. `jitter` is a uniform sample in [0, 1).
pub fn decide(input: &Inputs, jitter: f64) -> Decision {
    let now = input.now;
    let h = input.history;
    let same = h.last_class == Some(input.class);
    let streak = if same { h.streak + 1 } else { 1 };
    let started = if same { h.streak_started_at.unwrap_or(now) } else { now };
    let s = input.settings;
    match input.class {
        Class::Accepted => Decision::Accepted,
        Class::Misconfigured => Decision::Park { gave_up: None },
        Class::Quota => match input.retry_after {
            Some(ra) => Decision::RetryAt(quota_retry_at(ra, now)),
            None => {
                let wait = input.quota_reset.map_or(TimeDelta::hours(1), |t| t - now);
                Decision::RetryAt(now + wait.clamp(MIN_RETRY, QUOTA_RETRY_CAP))
            }
        },
        Class::Transient => {
            let deadline = delta(s.transient_deadline);
            if now - started >= deadline {
                return Decision::Park {
                    gave_up: Some(GaveUp::Failing { failing_for: now - started, attempts: streak }),
                };
            }
            let cap = delta(s.transient_cap);
            let wait = match input.retry_after {
                Some(ra) => resolve(ra, now).min(cap),
                None => {
                    let ceiling = doubled(delta(s.transient_first), streak, cap);
                    let ms = (ceiling.num_milliseconds() as f64 * jitter.clamp(0.0, 1.0)) as i64;
                    TimeDelta::milliseconds(ms)
                }
            };
            Decision::RetryAt(now + wait.max(MIN_RETRY))
        }
        Class::KeyPending => {
            let first_used = input.key_first_used.unwrap_or(started);
            let give_up_at = first_used + delta(s.key_pending_deadline);
            if now >= give_up_at {
                return Decision::Park {
                    gave_up: Some(GaveUp::KeyNeverAccepted { since_first_use: now - first_used }),
                };
            }
            let wait = doubled(delta(s.key_pending_first), streak, TimeDelta::MAX).max(MIN_RETRY);
            Decision::RetryAt((now + wait).min(give_up_at))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn settings() -> RetrySettings {
        RetrySettings {
            transient_first: Duration::from_secs(30),
            transient_cap: Duration::from_secs(6 * 3600),
            transient_deadline: Duration::from_secs(3 * 86400),
            key_pending_first: Duration::from_secs(60),
            key_pending_deadline: Duration::from_secs(86400),
        }
    }

    fn now() -> DateTime<Utc> {
        "2026-12-03T09:00:00Z".parse().unwrap()
    }

    fn fresh() -> History {
        History { last_class: None, streak: 0, streak_started_at: None }
    }

    fn run(class: Class, retry_after: Option<RetryAfter>, history: History, jitter: f64) -> Decision {
        let s = settings();
        decide(
            &Inputs { class, retry_after, now: now(), history, key_first_used: None, quota_reset: None, settings: &s },
            jitter,
        )
    }

    #[test]
    fn retry_after_seconds_and_date() {
        assert_eq!(
            run(Class::Quota, Some(RetryAfter::Seconds(120)), fresh(), 0.5),
            Decision::RetryAt(now() + TimeDelta::seconds(120))
        );
        let at: DateTime<Utc> = "2026-12-03T10:00:00Z".parse().unwrap();
        assert_eq!(run(Class::Transient, Some(RetryAfter::At(at)), fresh(), 0.5), Decision::RetryAt(at));
        // A date in the past still waits the minimum, never zero.
        let past: DateTime<Utc> = "2026-12-01T00:00:00Z".parse().unwrap();
        assert_eq!(run(Class::Quota, Some(RetryAfter::At(past)), fresh(), 0.5), Decision::RetryAt(now() + MIN_RETRY));
        // Absurd values are capped.
        assert_eq!(
            run(Class::Quota, Some(RetryAfter::Seconds(10 * 365 * 86400)), fresh(), 0.5),
            Decision::RetryAt(now() + QUOTA_RETRY_CAP)
        );
        assert_eq!(
            run(Class::Transient, Some(RetryAfter::Seconds(10 * 365 * 86400)), fresh(), 0.5),
            Decision::RetryAt(now() + TimeDelta::hours(6))
        );
    }

    #[test]
    fn quota_without_retry_after_waits_for_the_window() {
        let s = settings();
        let reset: DateTime<Utc> = "2026-12-03T16:00:00Z".parse().unwrap();
        let d = decide(
            &Inputs {
                class: Class::Quota,
                retry_after: None,
                now: now(),
                history: fresh(),
                key_first_used: None,
                quota_reset: Some(reset),
                settings: &s,
            },
            0.3,
        );
        assert_eq!(d, Decision::RetryAt(reset));
    }

    #[test]
    fn transient_backoff_is_full_jitter_doubling_to_the_cap() {
        assert_eq!(
            run(Class::Transient, None, fresh(), 0.999_999),
            Decision::RetryAt(now() + TimeDelta::milliseconds(29_999))
        );
        assert_eq!(run(Class::Transient, None, fresh(), 0.0), Decision::RetryAt(now() + MIN_RETRY));
        let third = History { last_class: Some(Class::Transient), streak: 2, streak_started_at: Some(now()) };
        assert_eq!(run(Class::Transient, None, third, 0.5), Decision::RetryAt(now() + TimeDelta::seconds(60)));
        let many = History { last_class: Some(Class::Transient), streak: 40, streak_started_at: Some(now()) };
        assert_eq!(run(Class::Transient, None, many, 0.5), Decision::RetryAt(now() + TimeDelta::hours(3)));
    }

    #[test]
    fn reconnecting_doubles_to_the_cap_from_at_once() {
        use std::time::Duration;
        let waits: Vec<Duration> = (0..8).map(reconnect_after).collect();
        let ms = |n| Duration::from_millis(n);
        assert_eq!(waits, [ms(0), ms(250), ms(500), ms(1000), ms(2000), ms(4000), ms(4000), ms(4000)]);
        assert_eq!(reconnect_after(u32::MAX), RECONNECT_CAP);
    }

    #[test]
    fn transient_gives_up_after_the_deadline() {
        let h = History {
            last_class: Some(Class::Transient),
            streak: 12,
            streak_started_at: Some(now() - TimeDelta::days(3)),
        };
        match run(Class::Transient, None, h, 0.5) {
            Decision::Park { gave_up } => assert_eq!(gave_up.map(GaveUp::reason), Some(MisconfiguredReason::GaveUp)),
            other => panic!("expected park, got {other:?}"),
        }
        // Another class in between starts a new streak.
        let h =
            History { last_class: Some(Class::Quota), streak: 12, streak_started_at: Some(now() - TimeDelta::days(5)) };
        assert!(matches!(run(Class::Transient, None, h, 0.5), Decision::RetryAt(_)));
    }

    #[test]
    fn key_pending_doubles_from_the_first_retry_and_stops_a_day_after_first_use() {
        let s = settings();
        let input = |streak: u32, first_used: DateTime<Utc>| Inputs {
            class: Class::KeyPending,
            retry_after: None,
            now: now(),
            history: History {
                last_class: (streak > 0).then_some(Class::KeyPending),
                streak,
                streak_started_at: Some(first_used),
            },
            key_first_used: Some(first_used),
            quota_reset: None,
            settings: &s,
        };
        assert_eq!(decide(&input(0, now()), 0.5), Decision::RetryAt(now() + TimeDelta::seconds(60)));
        assert_eq!(decide(&input(1, now()), 0.5), Decision::RetryAt(now() + TimeDelta::seconds(120)));
        assert_eq!(decide(&input(3, now()), 0.5), Decision::RetryAt(now() + TimeDelta::seconds(480)));
        // Never later than the deadline.
        let first = now() - TimeDelta::hours(23) - TimeDelta::minutes(59);
        assert_eq!(decide(&input(12, first), 0.5), Decision::RetryAt(first + TimeDelta::hours(24)));
        match decide(&input(13, now() - TimeDelta::hours(24)), 0.5) {
            Decision::Park { gave_up } => {
                assert_eq!(gave_up.map(GaveUp::reason), Some(MisconfiguredReason::KeyNeverAccepted))
            }
            other => panic!("expected park, got {other:?}"),
        }
    }

    #[test]
    fn misconfigured_parks_and_accepted_is_done() {
        assert_eq!(run(Class::Misconfigured, None, fresh(), 0.5), Decision::Park { gave_up: None });
        assert_eq!(run(Class::Accepted, None, fresh(), 0.5), Decision::Accepted);
    }
}
