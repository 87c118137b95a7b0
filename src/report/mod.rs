//! The budget over time, for `indexq report`: per configured (property,
//! engine, endpoint) group, each day of the last N — URLs counted against
//! the group's own daily budget and that day's limit, and the attempts by
//! class — the budget rules now (as `status` shows them), the queue, and
//! what is parked with the reason and the fix. Days are calendar days in
//! the timezone of the group's own daily rule, so a day's bar and its limit
//! are the ones the ledger counted. Everything is read through the `Ledger`
//! trait; `html` renders it. (`crate::output::report` is `submit`'s output,
//! not this.)

pub mod html;

use crate::budget_rules::{self, RuleState, Scope};
use crate::clock;
use crate::config::Settings;
use crate::ledger::{ItemFilter, Ledger, StateFilter};
use crate::model::Period;
use crate::model::{Class, LocalReason, Reason};
use crate::model::{GroupKey, QueueCounts, RunRecord};
use chrono::{DateTime, TimeDelta, Utc};
use chrono_tz::Tz;
use std::collections::BTreeMap;

/// The classes, in the order the report shows them.
pub const CLASSES: [Class; 5] =
    [Class::Accepted, Class::Quota, Class::Transient, Class::KeyPending, Class::Misconfigured];

/// At most this many parked items are read per group to list their reasons
/// (the count shown is always the whole queue's).
const PARKED_READ: usize = 10_000;
/// Example URLs shown per reason.
const EXAMPLES: usize = 3;

/// Everything the report shows.
#[derive(Debug, Clone)]
pub struct History {
    pub now: DateTime<Utc>,
    pub days: u16,
    pub groups: Vec<GroupHistory>,
    pub last_run: Option<RunRecord>,
    pub last_success: Option<RunRecord>,
    /// Queue items of groups the configuration no longer has.
    pub stranded: Vec<(GroupKey, QueueCounts)>,
}

#[derive(Debug, Clone)]
pub struct GroupHistory {
    pub group: GroupKey,
    /// The timezone of the group's days (its own daily rule's).
    pub tz: Tz,
    /// Oldest first; the last is today.
    pub days: Vec<Day>,
    /// Every rule of the group in its current window.
    pub rules: Vec<RuleState>,
    pub queue: QueueCounts,
    /// Parked items by reason, most first.
    pub parked: Vec<Parked>,
}

#[derive(Debug, Clone)]
pub struct Day {
    /// `2026-12-03`, in the group's timezone.
    pub key: String,
    pub start: DateTime<Utc>,
    /// URLs counted against the group's own daily budget that day.
    pub used: u64,
    /// The day's limit: the smallest of the group's own daily rules' (the
    /// engine's report for Bing); `None`: no limit.
    pub limit: Option<u64>,
    /// URLs attempted that day, by class (in `CLASSES` order).
    pub outcomes: [u64; 5],
}

/// Parked items of a group that share a reason.
#[derive(Debug, Clone)]
pub struct Parked {
    pub reason: Reason,
    pub count: u64,
    /// The last answer's message, of the first item.
    pub message: String,
    pub http_status: Option<u16>,
    /// The fix, as indexq words it when the answer comes.
    pub hint: Option<String>,
    pub examples: Vec<String>,
}

impl Day {
    pub fn outcome(&self, class: Class) -> u64 {
        CLASSES.iter().position(|c| *c == class).map_or(0, |i| self.outcomes[i])
    }
}

/// The last `days` days (today included) of every configured group, at `now`.
pub fn gather(settings: &Settings, ledger: &mut dyn Ledger, now: DateTime<Utc>, days: u16) -> anyhow::Result<History> {
    let google_project = crate::engines::google::project_id(settings);
    let mut groups = Vec::new();
    for group in budget_rules::groups(settings) {
        let Some(rules) = budget_rules::group_rules(settings, &group, google_project.as_deref()) else { continue };
        // The group's own daily rules decide its days and their limits.
        let own: Vec<&budget_rules::Rule> =
            rules.iter().filter(|r| r.period == Period::Day && r.scope == Scope::Property).collect();
        let tz = own.first().copied().or(rules.first()).map_or(chrono_tz::UTC, |r| r.tz);
        let mut history = Vec::new();
        for (key, start) in day_starts(tz, now, days) {
            let mut day = Day { key, start, used: 0, limit: None, outcomes: [0; 5] };
            for rule in &own {
                let window = rule.window(start);
                let usage = ledger.usage(&window)?;
                day.used = day.used.max(usage.used);
                if let Some(l) = usage.limit(&window) {
                    day.limit = Some(day.limit.map_or(l, |d| d.min(l)));
                }
            }
            history.push(day);
        }
        let states = budget_rules::states(&rules, ledger, now)?;
        let queue = ledger.queue_counts(&group, now)?;
        let parked = if queue.parked > 0 { parked(settings, ledger, &group, now)? } else { Vec::new() };
        groups.push(GroupHistory { group, tz, days: history, rules: states, queue, parked });
    }
    // The attempts, one query per timezone for the groups whose days are in it.
    let mut by_tz: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, g) in groups.iter().enumerate() {
        by_tz.entry(g.tz.name()).or_default().push(i);
    }
    for members in by_tz.values() {
        let first = &groups[members[0]];
        let mut bounds: Vec<DateTime<Utc>> = first.days.iter().map(|d| d.start).collect();
        let last = first.days.last().map(|d| d.start).unwrap_or(now);
        bounds.push(clock::window_at(Period::Day, first.tz, last).end.with_timezone(&Utc));
        for count in ledger.attempt_history(&bounds)? {
            let Some(&i) = members.iter().find(|&&i| groups[i].group == count.group) else { continue };
            let slot = CLASSES.iter().position(|c| *c == count.class).unwrap_or(0);
            if let Some(day) = groups[i].days.get_mut(count.span) {
                day.outcomes[slot] += count.urls;
            }
        }
    }
    let stranded = crate::attention::stranded_groups(settings, ledger, now)?;
    Ok(History { now, days, groups, last_run: ledger.last_run(false)?, last_success: ledger.last_run(true)?, stranded })
}

/// The `days` calendar days in `tz` up to the one holding `now`, oldest
/// first: each day's key and its first instant.
fn day_starts(tz: Tz, now: DateTime<Utc>, days: u16) -> Vec<(String, DateTime<Utc>)> {
    let mut out = Vec::with_capacity(usize::from(days));
    let mut at = now;
    for _ in 0..days {
        let window = clock::window_at(Period::Day, tz, at);
        let start = window.start.with_timezone(&Utc);
        out.push((window.key, start));
        at = start - TimeDelta::seconds(1);
    }
    out.reverse();
    out
}

/// The parked items of `group`, by reason, with the fix.
fn parked(
    settings: &Settings,
    ledger: &mut dyn Ledger,
    group: &GroupKey,
    now: DateTime<Utc>,
) -> anyhow::Result<Vec<Parked>> {
    let filter = ItemFilter {
        states: vec![StateFilter::Parked],
        property: Some(group.property.clone()),
        engine: Some(group.engine),
        target: Some(group.target.clone()),
        limit: Some(PARKED_READ),
        ..Default::default()
    };
    let mut by_reason: Vec<Parked> = Vec::new();
    for item in ledger.items(&filter, now)? {
        let reason = item.last_reason.unwrap_or(Reason::Local(LocalReason::Parked));
        match by_reason.iter_mut().find(|p| p.reason == reason) {
            Some(p) => {
                p.count += 1;
                if p.examples.len() < EXAMPLES {
                    p.examples.push(item.url);
                }
            }
            None => by_reason.push(Parked {
                hint: crate::attention::fix(settings, group, reason, &item.url),
                reason,
                count: 1,
                message: item.last_message.unwrap_or_default(),
                http_status: item.last_http_status,
                examples: vec![item.url],
            }),
        }
    }
    by_reason.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.reason.to_string().cmp(&b.reason.to_string())));
    Ok(by_reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_follow_the_timezone_across_a_dst_change() {
        // Los Angeles leaves DST on 2026-11-01: that day is 25 hours long.
        let now: DateTime<Utc> = "2026-11-02T20:00:00Z".parse().unwrap();
        let days = day_starts(chrono_tz::America::Los_Angeles, now, 3);
        let keys: Vec<&str> = days.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["2026-10-31", "2026-11-01", "2026-11-02"]);
        assert_eq!(days[1].1 - days[0].1, TimeDelta::hours(24));
        assert_eq!(days[2].1 - days[1].1, TimeDelta::hours(25));
        assert_eq!(day_starts(chrono_tz::UTC, now, 1)[0].1, "2026-11-02T00:00:00Z".parse::<DateTime<Utc>>().unwrap());
    }
}
