//! Budget rules as data: which limits apply to a send for a (property,
//! engine, target) group, each with its period and timezone, and the window
//! of each at a given instant. Engines and the ledger never hard-code a
//! limit; they receive these rules.
//!
//! Rules per group (docs/design.md, *Budgets and windows*):
//! - the property's own rule for the engine (`daily_quota`, Bing also
//!   `monthly_quota`), in the property's `quota_timezone`. A daily rule
//!   always exists, even without a limit: usage is counted and a server's
//!   `quota` answer can block it;
//! - the engine's global pool (`[engine] daily_quota`), shared by every
//!   property using the same credentials.
//!
//! IndexNow rules count per endpoint: each endpoint answers and throttles
//! on its own (the engines share what they are sent, so one is enough).
//!
//! The rules are pure, read from the configuration. The ledger appears here
//! only where a rule meets its count: `states` reads each rule's usage from
//! a ledger, and `Vec<Rule>` gives the ledger its windows (`Windows`).

use crate::clock;
use crate::config::{Property, Settings};
use crate::ledger::Ledger;
use crate::model::EngineKind;
use crate::model::Period;
use crate::model::{GroupKey, RuleFamily, RuleId, RuleWindow, Usage, Whose};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

/// Whom a rule binds: the property alone, or everyone sharing a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Property,
    Pool,
}

impl Scope {
    /// `"property"` or `"pool"` (a metric label, a JSON field).
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Property => "property",
            Scope::Pool => "pool",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The rule's `RuleId`, as text: what the ledger keys its counts by.
    pub id: String,
    pub scope: Scope,
    pub period: Period,
    pub tz: Tz,
    pub limit: Option<u64>,
    /// The engine reports what is left (Bing); `limit` is the fallback
    /// until it has in the current window.
    pub reported: bool,
}

impl Rule {
    /// The rule `id` names: its period, its scope (a pool's or a
    /// property's) and whether the engine reports what is left (Bing's own
    /// numbers) as the id says.
    pub fn new(id: RuleId, tz: Tz, limit: Option<u64>) -> Rule {
        let scope = match id.whose {
            Whose::Property(_) => Scope::Property,
            Whose::Pool(_) => Scope::Pool,
        };
        let reported = id.family.reported();
        Rule { period: id.period, scope, reported, tz, limit, id: id.to_string() }
    }

    /// The rule's window that contains `now`.
    pub fn window(&self, now: DateTime<Utc>) -> RuleWindow {
        let w = clock::window_at(self.period, self.tz, now);
        RuleWindow {
            rule: self.id.clone(),
            period: self.period,
            window: w.key,
            limit: self.limit,
            reported: self.reported,
            resets_at: w.end.with_timezone(&Utc),
        }
    }
}

/// Every group the configuration defines: for a property's URLs, one per
/// IndexNow endpoint and one for each other engine it sends URLs to (Google
/// unless `indexing = false`); then one per remote sitemap of its sources
/// and engine it submits sitemaps to (Bing, Google; unless `sitemaps =
/// false`).
pub fn groups(settings: &Settings) -> Vec<GroupKey> {
    let mut groups = Vec::new();
    for p in &settings.properties {
        let urls = |engine, target: String| GroupKey::urls(p.name.clone(), engine, target);
        if p.indexnow.is_some() {
            groups.extend(settings.indexnow.endpoints.iter().map(|e| urls(EngineKind::IndexNow, e.to_string())));
        }
        if p.bing.is_some() {
            groups.push(urls(EngineKind::Bing, String::new()));
        }
        if p.google.as_ref().is_some_and(|g| g.indexing) {
            groups.push(urls(EngineKind::Google, String::new()));
        }
        if p.baidu.is_some() {
            groups.push(urls(EngineKind::Baidu, String::new()));
        }
        if p.yandex.is_some() {
            groups.push(urls(EngineKind::Yandex, String::new()));
        }
        for engine in [EngineKind::Bing, EngineKind::Google] {
            groups
                .extend(p.submitted_sitemaps(engine).into_iter().map(|s| GroupKey::sitemap(p.name.clone(), engine, s)));
        }
    }
    groups
}

/// indexq's conservative default for Bing's day: the limit that applies
/// when Bing's own numbers cannot be read and no local rule is configured.
/// Not a figure Bing documents — its quota is adaptive (up to 10,000 URLs a
/// day for an established site) and `GetUrlSubmissionQuota` is the only
/// source of it — but one low enough for any site.
pub const BING_NEW_SITE_DAILY: u64 = 10;

/// The least daily push quota Baidu gives a site (its range is 10 to
/// 100,000): the first push of a quota day, before an answer's `remain`
/// has said what is left, so that it cannot be refused whole as `over
/// quota` while some of the day is left.
pub const BAIDU_FIRST_PUSH: u64 = 10;

/// indexq's conservative default for Yandex's recrawl day, until
/// `/recrawl/quota` or an answer's `quota_remainder` has said what is left,
/// when no `daily_quota` is configured. Not a figure Yandex documents.
pub const YANDEX_UNREAD_DAILY: u64 = 10;

/// Google's documented limits on URL inspections, per property.
pub const INSPECTIONS_PER_DAY: u64 = 2_000;
pub const INSPECTIONS_PER_MINUTE: u64 = 600;

/// The least time between two submissions of one sitemap to one engine
/// (its item's `AdmitRule::resend_after`): a change within a day of the
/// last submission waits for the day to pass, and the changes meanwhile go
/// with it, once.
pub const SITEMAP_RESUBMIT_AFTER: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// The Search Console API's published limit for its resources other than
/// Search Analytics and URL Inspection (sitemaps among them), per user — the
/// service account: 200 queries a minute (and 20 a second).
pub const SEARCH_CONSOLE_PER_MINUTE: u64 = 200;

/// The rules that every send of `group` must fit. `pool` names what the
/// engine's credentials share (Google: the Cloud project of the key file).
pub fn rules_for(settings: &Settings, property: &Property, group: &GroupKey, pool: Option<&str>) -> Vec<Rule> {
    let name = || Whose::Property(property.name.clone());
    let project = || Whose::Pool(Some(pool.unwrap_or("unknown").to_string()));
    let id = |family, whose, target: Option<&str>, period| RuleId {
        family,
        whose,
        target: target.map(str::to_string),
        period,
    };
    if let Some(sitemap) = group.sitemap_url() {
        return sitemap_rules(settings, property, group, sitemap, pool);
    }
    let mut rules = Vec::new();
    match group.engine {
        EngineKind::IndexNow => {
            let endpoint = Some(group.target.as_str());
            if let Some(table) = &property.indexnow {
                let day = id(RuleFamily::IndexNow, name(), endpoint, Period::Day);
                rules.push(Rule::new(day, table.quota_timezone, table.daily_quota));
            }
            if let Some(limit) = settings.indexnow.daily_quota {
                let day = id(RuleFamily::IndexNow, Whose::Pool(None), endpoint, Period::Day);
                rules.push(Rule::new(day, settings.indexnow.quota_timezone, Some(limit)));
            }
        }
        EngineKind::Bing => {
            if let Some(table) = &property.bing {
                let tz = table.quota_timezone;
                rules.push(Rule::new(id(RuleFamily::Bing, name(), None, Period::Day), tz, table.daily_quota));
                if let Some(limit) = table.monthly_quota {
                    rules.push(Rule::new(id(RuleFamily::Bing, name(), None, Period::Month), tz, Some(limit)));
                }
                // What Bing says is left, day and month: a rule of its own, so
                // that a configured quota stays a ceiling.
                let fallback = table.daily_quota.is_none().then_some(BING_NEW_SITE_DAILY);
                for (period, limit) in [(Period::Day, fallback), (Period::Month, None)] {
                    rules.push(Rule::new(id(RuleFamily::BingReported, name(), None, period), tz, limit));
                }
            }
            let tz = settings.bing.quota_timezone;
            if let Some(limit) = settings.bing.daily_quota {
                rules.push(Rule::new(id(RuleFamily::Bing, Whose::Pool(None), None, Period::Day), tz, Some(limit)));
            }
            if let Some(limit) = settings.bing.monthly_quota {
                rules.push(Rule::new(id(RuleFamily::Bing, Whose::Pool(None), None, Period::Month), tz, Some(limit)));
            }
        }
        EngineKind::Baidu => {
            if let Some(table) = &property.baidu {
                // Until an answer has said what is left today, a first push
                // of Baidu's least quota: it bounds that claim and defers
                // nothing (`RuleFamily::states_in_answers`).
                let fallback = Some(BAIDU_FIRST_PUSH);
                rules.extend(counted_and_reported(
                    (RuleFamily::Baidu, RuleFamily::BaiduReported),
                    name(),
                    table.quota_timezone,
                    table.daily_quota,
                    fallback,
                ));
            }
        }
        EngineKind::Yandex => {
            if let Some(table) = &property.yandex {
                // As Bing's: the default only without a ceiling of the user's.
                let fallback = table.daily_quota.is_none().then_some(YANDEX_UNREAD_DAILY);
                rules.extend(counted_and_reported(
                    (RuleFamily::Yandex, RuleFamily::YandexReported),
                    name(),
                    table.quota_timezone,
                    table.daily_quota,
                    fallback,
                ));
            }
        }
        EngineKind::Google => {
            if let Some(table) = &property.google {
                let day = id(RuleFamily::Google, name(), None, Period::Day);
                rules.push(Rule::new(day, table.quota_timezone, Some(table.daily_quota)));
            }
            let day = id(RuleFamily::GoogleProject, project(), None, Period::Day);
            rules.push(Rule::new(day, settings.google.quota_timezone, Some(settings.google.daily_quota)));
        }
    }
    rules
}

/// A sitemap's own day, counted (its spacing is the admission's: one
/// submission a day at most), and for Search Console the service account's
/// per-minute limit, shared by every sitemap it submits.
fn sitemap_rules(
    settings: &Settings,
    property: &Property,
    group: &GroupKey,
    sitemap: &str,
    pool: Option<&str>,
) -> Vec<Rule> {
    let name = Whose::Property(property.name.clone());
    let day = |family| RuleId { family, whose: name.clone(), target: Some(sitemap.to_string()), period: Period::Day };
    match group.engine {
        EngineKind::Google => {
            let tz = property.google.as_ref().map_or(settings.google.quota_timezone, |g| g.quota_timezone);
            let project = Whose::Pool(Some(pool.unwrap_or("unknown").to_string()));
            let minute =
                RuleId { family: RuleFamily::GoogleSitemaps, whose: project, target: None, period: Period::Minute };
            vec![
                Rule::new(day(RuleFamily::GoogleSitemaps), tz, None),
                Rule::new(minute, settings.google.quota_timezone, Some(SEARCH_CONSOLE_PER_MINUTE)),
            ]
        }
        EngineKind::Bing => {
            let tz = property.bing.as_ref().map_or(settings.bing.quota_timezone, |b| b.quota_timezone);
            vec![Rule::new(day(RuleFamily::BingSitemaps), tz, None)]
        }
        EngineKind::IndexNow | EngineKind::Baidu | EngineKind::Yandex => Vec::new(),
    }
}

/// A daily quota the engine states in its answers (Baidu's `remain`,
/// Yandex's `quota_remainder`): the day as indexq counts it, with the
/// configured limit if any, and the day against what the engine said is
/// left, with `fallback` until it has said it in the window — a rule of its
/// own, so that a configured quota stays a ceiling.
fn counted_and_reported(
    (counted, reported): (RuleFamily, RuleFamily),
    whose: Whose,
    tz: Tz,
    limit: Option<u64>,
    fallback: Option<u64>,
) -> [Rule; 2] {
    let id = |family| RuleId { family, whose: whose.clone(), target: None, period: Period::Day };
    [Rule::new(id(counted), tz, limit), Rule::new(id(reported), tz, fallback)]
}

/// The rules a URL inspection must fit (Google `skip_indexed`).
pub fn inspection_rules(property: &Property) -> Vec<Rule> {
    let tz = property.google.as_ref().map_or(chrono_tz::America::Los_Angeles, |g| g.quota_timezone);
    [(Period::Day, INSPECTIONS_PER_DAY), (Period::Minute, INSPECTIONS_PER_MINUTE)]
        .into_iter()
        .map(|(period, limit)| {
            let whose = Whose::Property(property.name.clone());
            Rule::new(RuleId { family: RuleFamily::GoogleInspect, whose, target: None, period }, tz, Some(limit))
        })
        .collect()
}

/// A group's rules, as the ledger asks for their windows at its own now.
impl crate::ledger::Windows for Vec<Rule> {
    fn at(&self, now: DateTime<Utc>) -> Vec<RuleWindow> {
        windows(self, now)
    }
}

/// The rules' windows at `now`.
pub fn windows(rules: &[Rule], now: DateTime<Utc>) -> Vec<RuleWindow> {
    rules.iter().map(|r| r.window(now)).collect()
}

/// A rule in its window at some instant, as a ledger has counted it: what
/// `status`, the metrics and the report show.
#[derive(Debug, Clone)]
pub struct RuleState {
    pub rule: Rule,
    pub window: RuleWindow,
    pub usage: Usage,
    /// The limit that applies: the engine's report (Bing), else the rule's own.
    pub limit: Option<u64>,
    /// What is left of the window: nothing once the server has said it is
    /// spent; a shorter pause (Retry-After, a per-minute limit) shows as
    /// `blocked` and leaves the window's count alone.
    pub remaining: Option<u64>,
    /// The server refused sends until then (a `quota` answer), if after `now`.
    pub blocked: Option<DateTime<Utc>>,
}

/// The rules of a configured group (`None` for a property the configuration
/// does not have). `pool` names what the engine's credentials share (Google:
/// `engines::google::project_id`).
pub fn group_rules(settings: &Settings, group: &GroupKey, pool: Option<&str>) -> Option<Vec<Rule>> {
    let property = settings.property(&group.property)?;
    let pool = if group.engine == EngineKind::Google { pool } else { None };
    Some(rules_for(settings, property, group, pool))
}

/// Each of `rules` in its window at `now`, as `ledger` has counted it.
pub fn states(rules: &[Rule], ledger: &mut dyn Ledger, now: DateTime<Utc>) -> crate::ledger::Result<Vec<RuleState>> {
    let mut states = Vec::with_capacity(rules.len());
    for rule in rules {
        let window = rule.window(now);
        let usage = ledger.usage(&window)?;
        let limit = usage.limit(&window);
        let blocked = usage.blocked_until.filter(|t| *t > now);
        let remaining = match blocked {
            Some(t) if t >= window.resets_at => Some(0),
            _ => limit.map(|l| l.saturating_sub(usage.used)),
        };
        states.push(RuleState { rule: rule.clone(), window, usage, limit, remaining, blocked });
    }
    Ok(states)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn indexnow_rules_follow_the_config() {
        let text = r#"
[indexnow]
endpoints = ["https://a.example/indexnow", "https://b.example/indexnow"]
daily_quota = 500
[[property]]
name = "site"
site = "https://site.example/"
indexnow = { key_env = "K", daily_quota = 11, quota_timezone = "Asia/Shanghai" }
"#;
        let s = crate::config::parse(Path::new("t.toml"), text).unwrap();
        let group = GroupKey::urls("site", EngineKind::IndexNow, "https://a.example/indexnow");
        let rules = rules_for(&s, &s.properties[0], &group, None);
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].id, "indexnow:site:https://a.example/indexnow:day");
        assert_eq!(rules[0].limit, Some(11));
        assert_eq!(rules[0].tz, chrono_tz::Asia::Shanghai);
        assert_eq!(rules[1].scope, Scope::Pool);
        assert_eq!(rules[1].limit, Some(500));

        let now: DateTime<Utc> = "2026-12-03T15:59:59Z".parse().unwrap();
        let w = rules[0].window(now);
        assert_eq!(w.window, "2026-12-03");
        assert_eq!(w.resets_at, "2026-12-03T16:00:00Z".parse::<DateTime<Utc>>().unwrap());
    }

    /// Every rule id, pool and property, as ledgers already hold them: the
    /// text never changes.
    #[test]
    fn rule_ids_keep_their_stored_text() {
        let text = r#"
[indexnow]
daily_quota = 500
[bing]
api_key_env = "B"
daily_quota = 100
monthly_quota = 1000
[[property]]
name = "site"
site = "https://site.example/"
sources = ["https://site.example/sitemap.xml"]
indexnow = { key_env = "K" }
bing = { daily_quota = 20, monthly_quota = 300 }
google = {}
baidu = {}
yandex = { daily_quota = 20 }
[baidu]
token_env = "T"
[yandex]
token_env = "Y"
"#;
        let s = crate::config::parse(Path::new("t.toml"), text).unwrap();
        let p = &s.properties[0];
        let ids = |group: GroupKey, pool| -> Vec<(String, Scope, bool)> {
            rules_for(&s, p, &group, pool).into_iter().map(|r| (r.id, r.scope, r.reported)).collect()
        };
        let (property, pool) = (Scope::Property, Scope::Pool);
        let endpoint = s.indexnow.endpoints[0].to_string();
        assert_eq!(
            ids(GroupKey::urls("site", EngineKind::IndexNow, endpoint.clone()), None),
            [
                (format!("indexnow:site:{endpoint}:day"), property, false),
                (format!("indexnow:*:{endpoint}:day"), pool, false)
            ]
        );
        let bing = ids(GroupKey::urls("site", EngineKind::Bing, ""), None);
        let expected = [
            ("bing:site:day", property, false),
            ("bing:site:month", property, false),
            ("bing-reported:site:day", property, true),
            ("bing-reported:site:month", property, true),
            ("bing:*:day", pool, false),
            ("bing:*:month", pool, false),
        ];
        assert_eq!(bing, expected.map(|(id, scope, reported)| (id.to_string(), scope, reported)));
        let google = ids(GroupKey::urls("site", EngineKind::Google, ""), Some("proj"));
        let expected = [("google:site:day", property, false), ("google-project:proj:day", pool, false)];
        assert_eq!(google, expected.map(|(id, scope, reported)| (id.to_string(), scope, reported)));
        // Baidu and Yandex: the day as counted (the property's ceiling) and as
        // the engine states it, each in the engine's timezone, with their fallbacks.
        let limits = |engine| -> Vec<(String, bool, Option<u64>, Tz)> {
            let group = GroupKey::urls("site", engine, "");
            rules_for(&s, p, &group, None).into_iter().map(|r| (r.id, r.reported, r.limit, r.tz)).collect()
        };
        let shanghai = chrono_tz::Asia::Shanghai;
        assert_eq!(
            limits(EngineKind::Baidu),
            [
                ("baidu:site:day".to_string(), false, None, shanghai),
                ("baidu-reported:site:day".to_string(), true, Some(BAIDU_FIRST_PUSH), shanghai)
            ]
        );
        let moscow = chrono_tz::Europe::Moscow;
        assert_eq!(
            limits(EngineKind::Yandex),
            [
                ("yandex:site:day".to_string(), false, Some(20), moscow),
                ("yandex-reported:site:day".to_string(), true, None, moscow)
            ]
        );
        let unknown = ids(GroupKey::urls("site", EngineKind::Google, ""), None);
        assert_eq!(unknown[1].0, "google-project:unknown:day");

        let sitemap = "https://site.example/sitemap.xml";
        let google = ids(GroupKey::sitemap("site", EngineKind::Google, sitemap), Some("proj"));
        let expected = [
            ("google-sitemaps:site:https://site.example/sitemap.xml:day", property, false),
            ("google-sitemaps:proj:minute", pool, false),
        ];
        assert_eq!(google, expected.map(|(id, scope, reported)| (id.to_string(), scope, reported)));
        let bing = ids(GroupKey::sitemap("site", EngineKind::Bing, sitemap), None);
        assert_eq!(bing, [("bing-sitemaps:site:https://site.example/sitemap.xml:day".to_string(), property, false)]);

        let inspections: Vec<_> = inspection_rules(p).into_iter().map(|r| (r.id, r.period, r.limit)).collect();
        assert_eq!(
            inspections,
            [
                ("google-inspect:site:day".to_string(), Period::Day, Some(INSPECTIONS_PER_DAY)),
                ("google-inspect:site:minute".to_string(), Period::Minute, Some(INSPECTIONS_PER_MINUTE))
            ]
        );
    }
}

/// How long a group's waiting backlog takes at its daily budget (`status`
/// and the dry run): the URLs queued, the smallest daily limit of the
/// group's rules, and the days that takes, rounded up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Backlog {
    pub urls: u64,
    pub per_day: u64,
    pub days: u64,
}

impl Backlog {
    /// Of `urls` queued, under rules whose daily limits are `limits` (each
    /// `(period, limit)`): none without a daily limit above nothing (a
    /// spent engine's reported 0 says no more than that), nor for what one
    /// day's budget covers — a backlog is what waits beyond today.
    pub fn of(urls: u64, limits: impl IntoIterator<Item = (Period, Option<u64>)>) -> Option<Backlog> {
        let per_day = limits.into_iter().filter(|(p, _)| *p == Period::Day).filter_map(|(_, l)| l).min()?;
        (per_day > 0 && urls > per_day).then(|| Backlog { urls, per_day, days: urls.div_ceil(per_day) })
    }
}

impl std::fmt::Display for Backlog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Backlog { urls, per_day, days } = *self;
        // (More URLs than a day's budget: never one URL, nor one day.)
        write!(f, "{urls} URLs waiting: about {days} days at {per_day} a day")
    }
}

#[cfg(test)]
mod backlog_tests {
    use super::*;

    #[test]
    fn a_backlog_takes_whole_days_at_the_smallest_daily_limit() {
        let day = |l| (Period::Day, Some(l));
        let b = Backlog::of(312, [day(11), day(200), (Period::Minute, Some(6))]).unwrap();
        assert_eq!(b, Backlog { urls: 312, per_day: 11, days: 29 });
        assert_eq!(b.to_string(), "312 URLs waiting: about 29 days at 11 a day");
        assert_eq!(Backlog::of(12, [day(11)]).unwrap().to_string(), "12 URLs waiting: about 2 days at 11 a day");
        assert_eq!(Backlog::of(11, [day(11)]), None, "a day's budget covers it");
        assert_eq!(Backlog::of(0, [day(11)]), None);
        assert_eq!(Backlog::of(5, [(Period::Day, None)]), None, "no daily limit");
        assert_eq!(Backlog::of(5, [day(0)]), None);
    }
}
