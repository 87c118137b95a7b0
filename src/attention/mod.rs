//! What needs a human, in one place: detection (items stranded under a
//! group the configuration no longer has, and what is parked per group and
//! reason, with the fix in the words the engine's answer gives it:
//! `fixes`), and a run's side of it (`reminders`: the fix checks made
//! before sending, and when each notice is told again). `submit`'s
//! reminders, `status`, `doctor`, the metrics and the HTML report all read
//! them from here; `output::parked` only words them, and the notices
//! themselves are the domain's (`model::ParkedNotice`).

mod fixes;
mod reminders;

pub(crate) use reminders::{notice_fixes, run_notices, urls_parked, RunGroups, Sightings};

use crate::budget_rules;
use crate::config::Settings;
use crate::ledger::Ledger;
use crate::model::{
    EngineKind, GroupKey, NoticeKind, ParkedGroup, ParkedNotice, QueueCounts, Reason, SitemapState, SourceFailure,
};
use chrono::{DateTime, TimeDelta, Utc};

/// Queue items the configuration no longer sends: their (property, engine,
/// endpoint) group is in the ledger but not in the configuration (a renamed
/// property, a respelled endpoint), with their counts; of settings
/// `narrowed` to some properties, only theirs.
pub fn stranded_groups(
    settings: &Settings,
    ledger: &mut dyn Ledger,
    now: DateTime<Utc>,
) -> crate::ledger::Result<Vec<(GroupKey, QueueCounts)>> {
    let configured = budget_rules::groups(settings);
    let mut stranded = Vec::new();
    for group in ledger.stored_groups()? {
        if configured.contains(&group) || !settings.sees(&group.property) {
            continue;
        }
        let counts = ledger.queue_counts(&group, now)?;
        if counts.due + counts.waiting + counts.parked + counts.in_flight > 0 {
            stranded.push((group, counts));
        }
    }
    Ok(stranded)
}

/// What to do about stranded items of `group`.
pub fn stranded_hint(group: &GroupKey) -> String {
    let selector = crate::output::printer::group_selector(group);
    format!(
        "no configured property sends these any more (renamed, or the endpoint respelled?): list them with \
         `indexq queue list {selector}`, submit their URLs again under the current configuration, then drop \
         them with `indexq queue drop {selector}`"
    )
}

/// The fix for items of `group` parked with `reason` (`url`: one of them),
/// with what the configuration says of the property.
pub fn fix(settings: &Settings, group: &GroupKey, reason: Reason, url: &str) -> Option<String> {
    fixes::hint(group.engine, reason, url, &fix_context(settings, group))
}

/// What needs a human in the configured groups at `now`, with the fixes, as
/// `status` and `doctor` say it (every one told): what is parked, then what
/// the engines' reports on the sitemaps submitted to them say.
pub fn parked_notices(
    settings: &Settings,
    ledger: &mut dyn Ledger,
    now: DateTime<Utc>,
) -> anyhow::Result<Vec<ParkedNotice>> {
    let configured = budget_rules::groups(settings);
    let mut notices = parked_item_notices(settings, ledger)?;
    let states: Vec<SitemapState> =
        ledger.sitemap_states()?.into_iter().filter(|s| configured.contains(&s.group)).collect();
    notices.extend(sitemap_notices(settings, &states, now));
    Ok(notices)
}

/// The configured properties' sources that cannot be read, as `status`
/// and `doctor` say them (every one told), before what is parked.
pub fn source_notices(settings: &Settings, ledger: &mut dyn Ledger) -> anyhow::Result<Vec<ParkedNotice>> {
    let configured = budget_rules::groups(settings);
    Ok(ledger.source_failures()?.iter().filter_map(|f| source_notice(settings, &configured, f)).collect())
}

/// A source that cannot be read as a notice (told), under the first of
/// `groups` of its property (a URL group); none when its property has none
/// or no longer lists it.
pub fn source_notice(settings: &Settings, groups: &[GroupKey], failure: &SourceFailure) -> Option<ParkedNotice> {
    let property = settings.property(&failure.property)?;
    let listed = property.sources.iter().any(|s| s.name() == failure.source);
    let group = groups.iter().find(|g| g.property == failure.property && g.sitemap_url().is_none())?;
    listed.then(|| ParkedNotice {
        kind: NoticeKind::Source,
        parked: ParkedGroup {
            group: group.clone(),
            reason: Some(failure.reason.into()),
            count: 0,
            since: Some(failure.since),
            url: failure.source.clone(),
            message: Some(failure.message.clone()),
            reminded_at: failure.reminded_at,
        },
        fix: Some(source_fix(failure.reason)),
        fresh: false,
        told: true,
    })
}

/// What to do about a source that cannot be read, by its reason.
fn source_fix(reason: crate::model::LocalReason) -> String {
    use crate::model::LocalReason as R;
    let what = match reason {
        R::SourceNotFound => "publish the sitemap at that address, or change the property's `sources` to where it is",
        R::SourceRefused => {
            "let indexq fetch it (no login, no IP or user-agent block), or change the property's `sources`"
        }
        R::SourceServerError => "check the web server's error log; indexq reads it again by itself",
        R::SourceTimeout | R::SourceUnreachable => {
            "check that the site is up and reachable from this machine (or raise `[http] timeout`)"
        }
        R::SourceDns => "check the host name in the property's `sources` and its DNS record",
        R::SourceNotAllowed => {
            "list the host it redirects to in the property's `fetch_hosts`, or point `sources` at where it ends"
        }
        R::SourceTls => "check the site's certificate (its chain, its names, its expiry)",
        R::SourceNotASitemap => {
            "point the property's `sources` at the sitemap itself (XML, a feed or a URL list), not a web page"
        }
        _ => "check that the file exists and that indexq's user can read it",
    };
    what.to_string()
}

/// What is parked in the configured groups, with the fixes (each told).
pub fn parked_item_notices(settings: &Settings, ledger: &mut dyn Ledger) -> anyhow::Result<Vec<ParkedNotice>> {
    let configured = budget_rules::groups(settings);
    Ok(ledger
        .parked()?
        .into_iter()
        .filter(|p| configured.contains(&p.group))
        .map(|parked| ParkedNotice {
            kind: NoticeKind::Parked,
            fix: parked.reason.and_then(|r| fix(settings, &parked.group, r, &parked.url)),
            parked,
            fresh: false,
            told: true,
        })
        .collect())
}

/// What the engines' reports on sitemaps (`states`) say a human must look
/// at, at `now`, as notices (each told, none fresh), with when each was
/// last said.
pub fn sitemap_notices(settings: &Settings, states: &[SitemapState], now: DateTime<Utc>) -> Vec<ParkedNotice> {
    let deadline = TimeDelta::from_std(settings.sitemap.download_deadline).unwrap_or(TimeDelta::MAX);
    let mut notices = Vec::new();
    for state in states {
        for problem in crate::classify::sitemap_problems(state, now, deadline) {
            let key = problem.reason.to_string();
            let reminded_at = state.reminded.iter().find(|(r, _)| *r == key).map(|(_, at)| *at);
            notices.push(ParkedNotice {
                kind: NoticeKind::SitemapReport,
                parked: ParkedGroup {
                    group: state.group.clone(),
                    reason: Some(problem.reason),
                    count: 1,
                    since: Some(problem.since),
                    url: state.group.target.clone(),
                    message: Some(problem.message),
                    reminded_at,
                },
                fix: Some(problem.hint).filter(|h| !h.is_empty()),
                fresh: false,
                told: true,
            });
        }
    }
    notices
}

/// What the fixes name, from the configuration: the key location with the
/// key masked (read from its source only to mask it; unreadable, the
/// default location shows the mask, `[REDACTED]`), Bing's site, Google's service account.
fn fix_context(settings: &Settings, group: &GroupKey) -> fixes::Context {
    let mut ctx = fixes::Context::default();
    let Some(property) = settings.property(&group.property) else { return ctx };
    match group.engine {
        EngineKind::IndexNow => {
            let Some(table) = &property.indexnow else { return ctx };
            let key = crate::config::read_indexnow_key(table).ok();
            let location = match (&table.key_location, &key) {
                (Some(l), _) => l.to_string(),
                (None, Some(k)) => {
                    crate::engines::indexnow::default_key_location(&property.site, k.expose()).to_string()
                }
                (None, None) => {
                    crate::engines::indexnow::default_key_location(&property.site, crate::redact::MASK).to_string()
                }
            };
            ctx.key_location = match &key {
                Some(k) => crate::redact::mask(&location, k.expose()),
                None => mask_key_file_name(&location),
            };
        }
        EngineKind::Bing => {
            ctx.site_url = property.bing.as_ref().map_or(property.site.to_string(), |b| b.site_url.clone());
        }
        EngineKind::Baidu => {
            ctx.site_url = property.baidu.as_ref().map_or(property.site.to_string(), |b| b.site.clone());
        }
        EngineKind::Yandex => {
            let host = property.yandex.as_ref().and_then(|y| y.host_id.clone());
            ctx.site_url = host.unwrap_or_else(|| property.site.to_string());
        }
        EngineKind::Google => {
            let account = crate::engines::google::key_file_path(settings)
                .ok()
                .and_then(|p| crate::engines::google::ServiceAccount::load(&p).ok());
            match account {
                Some(a) => {
                    ctx.client_email = a.client_email.clone();
                    ctx.project_id = a.project_id.clone();
                    ctx.key_id = a.key_id.clone();
                }
                None => {
                    ctx.client_email = "the service account".into();
                    ctx.project_id = "of the key file".into();
                    ctx.key_id = "in use".into();
                }
            }
        }
    }
    ctx
}

/// `https://example.com/KEY.txt` → `https://example.com/[REDACTED].txt`: a key
/// location written out in the configuration, when the key itself cannot
/// be read to mask it (a file named like a key is taken to be one).
fn mask_key_file_name(location: &str) -> String {
    let Some((dir, name)) = location.rsplit_once('/') else { return location.to_string() };
    match name.strip_suffix(".txt") {
        Some(stem) if crate::classify::check_indexnow_key(stem).is_ok() => format!("{dir}/{}.txt", crate::redact::MASK),
        _ => location.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_name_is_masked() {
        let key = "0123456789abcdef0123456789abcdef";
        assert_eq!(mask_key_file_name(&format!("https://e.com/{key}.txt")), "https://e.com/[REDACTED].txt");
        assert_eq!(mask_key_file_name("https://e.com/.well-known/indexnow"), "https://e.com/.well-known/indexnow");
    }
}
