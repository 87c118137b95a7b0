//! What needs a human (`attention` finds it), said the same way by
//! `submit`, `status` and `doctor`: per group and reason, how many URLs are parked and since when,
//! why, the fix, and whether indexq notices the fix by itself or needs
//! `indexq queue retry`; and, in the same words, what an engine's report
//! on a sitemap submitted to it says a human must look at (its errors, no
//! download in time, a refused read).

use super::printer::{group_title, rfc3339};
use crate::clock;
use crate::model::{NoticeKind, ParkedNotice};
use chrono_tz::Tz;
use serde::Serialize;

impl ParkedNotice {
    /// The command that sends them again once fixed.
    pub fn retry_command(&self) -> String {
        format!("indexq queue retry --state parked {}", super::printer::group_selector(&self.parked.group))
    }

    /// One line: "needs a human: IndexNow (host) for site: 3 URLs parked
    /// since … (key_file_missing). `<message>` Fix: … `<who notices>`".
    pub fn line(&self, user_tz: Tz) -> String {
        let fix = self.fix.as_deref().map(|f| format!(" Fix: {}", sentence(f))).unwrap_or_default();
        format!("needs a human: {}: {}{fix}{}", self.title(), self.summary(user_tz), self.who())
    }

    /// What the notice is about: the group, or for a source the source and its property.
    pub fn title(&self) -> String {
        match self.kind {
            NoticeKind::Source => format!("the source {} of {}", self.parked.url, self.parked.group.property),
            _ => group_title(&self.parked.group),
        }
    }

    /// "3 URLs parked since … (key_file_missing). `<message>`"; for a
    /// sitemap, "its submission parked since …" or, from the engine's
    /// report, "since … (sitemap_errors). `<message>`".
    pub fn summary(&self, user_tz: Tz) -> String {
        let p = &self.parked;
        let since = p.since.map(|t| format!(" since {}", clock::format_local(t, user_tz))).unwrap_or_default();
        let message = p.message.as_deref().map(|m| format!(" {}", sentence(m))).unwrap_or_default();
        let urls = |n: u64| if n == 1 { "1 URL".to_string() } else { format!("{n} URLs") };
        let what = match (self.kind, p.group.sitemap_url()) {
            (NoticeKind::SitemapReport, _) => format!("said{since}"),
            (NoticeKind::Inspection, _) => format!("URL inspections refused; {} published without one", urls(p.count)),
            (NoticeKind::KeyScope, _) => format!("{} not sent to IndexNow", urls(p.count)),
            (NoticeKind::Source, _) => format!("cannot be read{since}"),
            (NoticeKind::Parked, Some(_)) => format!("its submission parked{since}"),
            (NoticeKind::Parked, None) => format!("{} parked{since}", urls(p.count)),
        };
        format!("{what} ({}).{message}", p.reminder_key())
    }

    /// " indexq checks … by itself" or " … once fixed, run `indexq queue retry …`".
    pub fn who(&self) -> String {
        match self.kind {
            NoticeKind::Inspection => {
                return " indexq publishes URLs without inspection meanwhile, and says this again after `[submit] \
                        remind` while Google refuses."
                    .to_string()
            }
            NoticeKind::KeyScope => {
                return " indexq says this again after `[submit] remind` while the key location leaves them out."
                    .to_string()
            }
            NoticeKind::Source => {
                return " indexq reads it again on every run that reads the sources, and says so once it reads."
                    .to_string()
            }
            NoticeKind::Parked | NoticeKind::SitemapReport => {}
        }
        if self.kind == NoticeKind::SitemapReport {
            return format!(
                " indexq reads {}'s report on the sitemap again by itself (`[sitemap] read_interval`) and stops \
                 saying this once it is resolved.",
                self.parked.group.engine.title()
            );
        }
        match self.check() {
            Some(check) => {
                format!(" indexq checks {} on every run and sends them again by itself once it is fixed.", check.what())
            }
            None => format!(
                " indexq cannot check this by itself: once fixed, run `{}` (a change to the engine's configuration \
                 also retries them).",
                self.retry_command()
            ),
        }
    }

    /// As `--json` documents list it.
    pub fn json(&self, user_tz: Tz) -> ParkedJson {
        let p = &self.parked;
        ParkedJson {
            kind: self.kind.as_str(),
            property: p.group.property.clone(),
            engine: p.group.engine.as_str(),
            endpoint: p.group.endpoint().map(str::to_string),
            sitemap: p.group.sitemap_url().map(str::to_string),
            source: (self.kind == NoticeKind::Source).then(|| p.url.clone()),
            reason: self.parked.reminder_key(),
            urls: p.count,
            since: p.since.map(|t| rfc3339(t, user_tz)),
            message: p.message.clone(),
            fix: self.fix.clone(),
            checked_by_itself: self.check().is_some(),
            retry: (self.kind == NoticeKind::Parked).then(|| self.retry_command()),
            reminded_at: p.reminded_at.map(|t| rfc3339(t, user_tz)),
            told: self.told,
        }
    }
}

/// A parked group in a `--json` document.
#[derive(Debug, Clone, Serialize)]
pub struct ParkedJson {
    /// `parked` items, or what an engine's report on a sitemap says
    /// (`sitemap_report`).
    pub kind: &'static str,
    pub property: String,
    pub engine: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The sitemap, for a sitemap group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sitemap: Option<String>,
    /// The source (its URL or path), for a source that cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub reason: String,
    pub urls: u64,
    pub since: Option<String>,
    pub message: Option<String>,
    pub fix: Option<String>,
    /// Whether indexq notices the fix by itself (else `retry` is needed).
    pub checked_by_itself: bool,
    /// The command that sends parked items again once fixed (none for a
    /// sitemap's report).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<String>,
    /// When a run last said so (before this one).
    pub reminded_at: Option<String>,
    /// Whether this run said so.
    pub told: bool,
}

/// A text as a sentence: ends with a full stop.
fn sentence(text: &str) -> String {
    let text = text.trim();
    if text.ends_with(['.', '!', '?', ')']) {
        text.to_string()
    } else {
        format!("{text}.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{MisconfiguredReason, ParkedGroup, Reason};

    fn parked(reason: Reason, reminded_at: Option<&str>) -> ParkedGroup {
        ParkedGroup::example(reason, reminded_at)
    }

    #[test]
    fn a_line_says_how_many_since_when_why_the_fix_and_who_notices_it() {
        let notice = ParkedNotice {
            kind: NoticeKind::Parked,
            parked: parked(MisconfiguredReason::KeyFileMissing.into(), None),
            fix: Some("publish the key file".into()),
            fresh: false,
            told: true,
        };
        assert_eq!(
            notice.line(chrono_tz::Europe::Paris),
            "needs a human: IndexNow (api.indexnow.org) for site: 3 URLs parked since 2026-12-03 10:00 Europe/Paris \
             (key_file_missing). the key file answers 404. Fix: publish the key file. indexq checks the key file on \
             every run and sends them again by itself once it is fixed."
        );
        let notice = ParkedNotice {
            kind: NoticeKind::Parked,
            parked: parked(MisconfiguredReason::BadRequest.into(), None),
            fix: None,
            fresh: false,
            told: true,
        };
        let line = notice.line(Tz::UTC);
        assert!(
            line.ends_with(
                "indexq cannot check this by itself: once fixed, run `indexq queue retry --state parked --property \
                 site --engine indexnow --endpoint https://api.indexnow.org/indexnow` (a change to the engine's \
                 configuration also retries them)."
            ),
            "{line}"
        );
    }
}
