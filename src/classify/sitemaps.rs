//! What an engine's report on a sitemap submitted to it (Search Console's
//! `sitemaps.get`, Bing's `GetFeeds`, as the ledger keeps the last one)
//! says a human must look at, worded with its fix:
//!
//! | the report | reason |
//! |---|---|
//! | the sitemap has errors (Google's `errors` above 0; a Bing status other than success, pending or processing) | `sitemap_errors`, since the first report that said so |
//! | no download (`lastDownloaded`, Bing's `LastCrawled`) since the submission, `download_deadline` after it, by a report read since | `sitemap_not_downloaded`, since the deadline passed |
//! | the read itself refused (`misconfigured`: a permission, a property the engine does not have) | the refusal's reason, since the first such refusal |
//!
//! A sitemap whose submission is parked has none: the parked submission is
//! what a human is told. Pure, like every classifier: the caller passes the
//! instant and the deadline.

use crate::model::{Class, EngineKind, ItemState, MisconfiguredReason, Reason, SitemapState};
use chrono::{DateTime, TimeDelta, Utc};

/// How much earlier than the submission a download may be dated and still
/// count as after it: the engine's clock and ours differ, and Search Console
/// may round its times.
const CLOCKS_APART: TimeDelta = TimeDelta::hours(1);

/// One thing a human must look at about a sitemap: why, since when, what
/// the engine said and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitemapProblem {
    pub reason: Reason,
    pub since: DateTime<Utc>,
    pub message: String,
    pub hint: String,
}

/// Where a person sees what the engine says of a sitemap.
fn report_place(engine: EngineKind) -> &'static str {
    match engine {
        EngineKind::Google => "Search Console (Indexing → Sitemaps)",
        EngineKind::Bing => "Bing Webmaster Tools (Sitemaps)",
        EngineKind::IndexNow | EngineKind::Baidu | EngineKind::Yandex => "the engine",
    }
}

/// The problems of a sitemap group at `now` (see the module's table).
pub fn sitemap_problems(state: &SitemapState, now: DateTime<Utc>, deadline: TimeDelta) -> Vec<SitemapProblem> {
    let Some(sitemap) = state.group.sitemap_url() else { return Vec::new() };
    if state.item == ItemState::Parked {
        return Vec::new();
    }
    let engine = state.group.engine;
    let title = engine.title();
    let place = report_place(engine);
    let mut problems = Vec::new();
    if let (Some(failure), Some(since)) = (&state.failure, state.failure_since) {
        if failure.class == Class::Misconfigured {
            problems.push(SitemapProblem {
                reason: failure.reason,
                since,
                message: format!("{title}'s report on the sitemap could not be read: {}", failure.message),
                hint: failure.hint.clone().unwrap_or_default(),
            });
        }
    }
    let Some(reading) = &state.reading else { return problems };
    if let Some(since) = state.errors_since.filter(|_| reading.errors > 0) {
        let what = match (engine, reading.status.as_deref()) {
            (EngineKind::Bing, Some(status)) => format!("Bing reports the sitemap's status as \"{status}\""),
            _ => format!(
                "{title} reports {} and {} in the sitemap",
                plural(reading.errors, "error"),
                plural(reading.warnings, "warning")
            ),
        };
        problems.push(SitemapProblem {
            reason: MisconfiguredReason::SitemapErrors.into(),
            since,
            message: format!("{what}: {title} cannot read all of it."),
            hint: format!(
                "Open {sitemap} in {place} for the errors and fix the sitemap; once it changes indexq submits it \
                 again by itself (at most once a day), and it stops saying this once {title} reports it clean."
            ),
        });
    }
    let Some(submitted) = state.submitted_at else { return problems };
    let due = submitted + deadline;
    let read_since = state.read_ok_at.is_some_and(|at| at >= submitted);
    let downloaded = reading.downloaded.is_some_and(|d| d + CLOCKS_APART >= submitted);
    if now >= due && read_since && !downloaded {
        let last = match (reading.listed, reading.downloaded) {
            (false, _) => format!("{title} does not list the sitemap at all"),
            (true, Some(at)) => format!("{title} last downloaded it {}", at.format("%Y-%m-%d %H:%M UTC")),
            (true, None) => format!("{title} has never downloaded it"),
        };
        problems.push(SitemapProblem {
            reason: MisconfiguredReason::SitemapNotDownloaded.into(),
            since: due,
            message: format!(
                "{title} has not downloaded the sitemap since it was submitted on {} ({last}).",
                submitted.format("%Y-%m-%d %H:%M UTC")
            ),
            hint: format!(
                "Check that {sitemap} answers 200 to {title}'s crawler (no login, no robots.txt rule against it, no \
                 redirect to another host) and lies within the property, and look at it in {place}; indexq reads \
                 {title}'s report again by itself and stops saying this once it downloads the sitemap."
            ),
        });
    }
    problems
}

/// "1 error", "2 errors".
fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GroupKey, ReadFailure, SitemapReading};

    const SITEMAP: &str = "https://example.com/sitemap.xml";

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn state(reading: Option<SitemapReading>) -> SitemapState {
        SitemapState {
            group: GroupKey::sitemap("site", EngineKind::Google, SITEMAP),
            item: ItemState::Accepted,
            submitted_at: Some(at("2026-12-01T10:00:00Z")),
            read_at: Some(at("2026-12-01T10:00:05Z")),
            read_ok_at: reading.as_ref().map(|_| at("2026-12-01T10:00:05Z")),
            reading,
            errors_since: None,
            failure: None,
            failure_since: None,
            reminded: Vec::new(),
        }
    }

    fn reasons(problems: &[SitemapProblem]) -> Vec<String> {
        problems.iter().map(|p| p.reason.to_string()).collect()
    }

    const DAYS3: TimeDelta = TimeDelta::days(3);

    #[test]
    fn errors_are_said_since_the_first_report_of_them() {
        let reading = SitemapReading { listed: true, errors: 2, warnings: 1, ..Default::default() };
        let mut s = state(Some(reading));
        s.errors_since = Some(at("2026-12-01T10:00:05Z"));
        let problems = sitemap_problems(&s, at("2026-12-01T11:00:00Z"), DAYS3);
        assert_eq!(reasons(&problems), ["sitemap_errors"]);
        assert_eq!(problems[0].since, at("2026-12-01T10:00:05Z"));
        assert!(problems[0].message.starts_with("Google reports 2 errors and 1 warning in the sitemap"));
        assert!(problems[0].hint.contains("Search Console (Indexing → Sitemaps)"), "{}", problems[0].hint);
    }

    #[test]
    fn no_download_within_the_deadline_is_said_once_it_has_passed_and_a_report_read_since_shows_it() {
        let undownloaded = SitemapReading { listed: true, pending: true, ..Default::default() };
        let s = state(Some(undownloaded.clone()));
        assert!(sitemap_problems(&s, at("2026-12-04T09:59:59Z"), DAYS3).is_empty(), "before the deadline");
        let problems = sitemap_problems(&s, at("2026-12-04T10:00:00Z"), DAYS3);
        assert_eq!(reasons(&problems), ["sitemap_not_downloaded"]);
        assert_eq!(problems[0].since, at("2026-12-04T10:00:00Z"));
        assert!(problems[0].message.contains("has never downloaded it"), "{}", problems[0].message);
        // Downloaded since the submission (or a moment before, by the engine's clock): nothing to say.
        let read = SitemapReading { downloaded: Some(at("2026-12-01T09:30:00Z")), ..undownloaded.clone() };
        assert!(sitemap_problems(&state(Some(read)), at("2026-12-05T00:00:00Z"), DAYS3).is_empty());
        // Downloaded only before it: said.
        let old = SitemapReading { downloaded: Some(at("2026-11-20T00:00:00Z")), ..undownloaded.clone() };
        let problems = sitemap_problems(&state(Some(old)), at("2026-12-05T00:00:00Z"), DAYS3);
        assert!(problems[0].message.contains("last downloaded it 2026-11-20 00:00 UTC"), "{}", problems[0].message);
        // Not listed at all.
        let problems = sitemap_problems(&state(Some(SitemapReading::default())), at("2026-12-05T00:00:00Z"), DAYS3);
        assert!(problems[0].message.contains("does not list the sitemap"), "{}", problems[0].message);
        // No report read since the submission: not known, not said.
        let mut s = state(Some(undownloaded));
        s.read_ok_at = Some(at("2026-11-30T00:00:00Z"));
        assert!(sitemap_problems(&s, at("2026-12-05T00:00:00Z"), DAYS3).is_empty());
    }

    #[test]
    fn a_refused_read_is_said_and_a_parked_submission_says_nothing_here() {
        let mut s = state(None);
        s.failure = Some(ReadFailure {
            class: Class::Misconfigured,
            reason: MisconfiguredReason::NotPropertyUser.into(),
            message: "Search Console answered HTTP 403 Forbidden".into(),
            hint: Some("Add the service account".into()),
            http_status: Some(403),
        });
        s.failure_since = Some(at("2026-12-01T10:00:05Z"));
        let problems = sitemap_problems(&s, at("2026-12-01T11:00:00Z"), DAYS3);
        assert_eq!(reasons(&problems), ["not_property_user"]);
        assert_eq!(problems[0].hint, "Add the service account");
        s.failure.as_mut().unwrap().class = Class::Transient;
        assert!(sitemap_problems(&s, at("2026-12-01T11:00:00Z"), DAYS3).is_empty(), "a failure on the engine's side");
        let mut parked = state(Some(SitemapReading { listed: true, errors: 3, ..Default::default() }));
        parked.errors_since = Some(at("2026-12-01T10:00:05Z"));
        parked.item = ItemState::Parked;
        assert!(sitemap_problems(&parked, at("2026-12-09T00:00:00Z"), DAYS3).is_empty());
    }

    #[test]
    fn bing_says_its_status() {
        let mut s = state(Some(SitemapReading {
            listed: true,
            errors: 1,
            status: Some("Failed".into()),
            downloaded: Some(at("2026-12-01T11:00:00Z")),
            ..Default::default()
        }));
        s.group.engine = EngineKind::Bing;
        s.errors_since = Some(at("2026-12-01T12:00:00Z"));
        let problems = sitemap_problems(&s, at("2026-12-01T12:00:00Z"), DAYS3);
        assert!(problems[0].message.starts_with("Bing reports the sitemap's status as \"Failed\""));
        assert!(problems[0].hint.contains("Bing Webmaster Tools (Sitemaps)"));
    }
}
