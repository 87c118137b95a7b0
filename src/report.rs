//! Output: the `Printer` every command writes through (JSON and requested
//! data to stdout, notes and warnings to stderr, `-q` keeps only what needs
//! a human), and the rendering of `submit` results as human text and as the
//! JSON document of DESIGN §5. Rendering is generic over `io::Write`, so
//! tests can render into a `Vec<u8>`.

use crate::clock;
use crate::ledger::GroupKey;
use crate::model::{EngineKind, Outcome};
use chrono::{DateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

#[derive(Debug, Clone, Copy)]
pub struct Printer {
    pub json: bool,
    pub verbosity: Verbosity,
}

impl Printer {
    pub fn stdout(&self) -> io::StdoutLock<'static> {
        io::stdout().lock()
    }

    /// Prints a warning about one input or item (never in JSON mode's stdout).
    pub fn warn(&self, text: &str) {
        let _ = writeln!(io::stderr().lock(), "warning: {text}");
    }

    /// Prints a note for a person (hidden by -q and by --json).
    pub fn note(&self, text: &str) {
        if !self.json && self.verbosity != Verbosity::Quiet {
            let _ = writeln!(io::stderr().lock(), "{text}");
        }
    }

    /// Prints one JSON document on stdout.
    pub fn json<T: Serialize>(&self, value: &T) -> io::Result<()> {
        let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
        writeln!(self.stdout(), "{text}")
    }
}

/// An instant as RFC 3339 with the offset of `tz`.
pub fn rfc3339(at: DateTime<Utc>, tz: Tz) -> String {
    at.with_timezone(&tz).to_rfc3339_opts(SecondsFormat::Secs, false)
}

/// "2026-12-04 00:00 Asia/Shanghai — in 8 h (17:00 in your timezone, +01:00)"
pub fn when(at: DateTime<Utc>, tz: Tz, user_tz: Tz, now: DateTime<Utc>) -> String {
    let relative = clock::humanize(at - now);
    let mut text = format!("{} — in {relative}", clock::format_local(at, tz));
    if user_tz != tz {
        let local = at.with_timezone(&user_tz);
        let same_day = local.date_naive() == now.with_timezone(&user_tz).date_naive();
        let shown = if same_day { local.format("%H:%M").to_string() } else { local.format("%a %H:%M").to_string() };
        text.push_str(&format!(" ({shown} in your timezone, {})", clock::format_offset(at, user_tz)));
    }
    text
}

/// One URL's result for one engine (DESIGN §5).
#[derive(Debug, Clone, Serialize)]
pub struct ResultEntry {
    pub url: String,
    pub property: Option<String>,
    pub engine: Option<EngineKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    pub outcome: Outcome,
    pub reason: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<i64>,
    pub attempts: u32,
    /// `file:line` of the input, for invalid lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip)]
    pub retry: Option<(DateTime<Utc>, Tz)>,
    #[serde(skip)]
    pub group: Option<GroupKey>,
}

impl ResultEntry {
    pub fn set_retry(&mut self, at: DateTime<Utc>, tz: Tz, now: DateTime<Utc>) {
        self.retry = Some((at, tz));
        self.retry_at = Some(rfc3339(at, tz));
        // Whole seconds, rounded up: a retry 599.9 s away is "600".
        let millis = (at - now).num_milliseconds().max(0);
        self.retry_after_secs = Some((millis + 999) / 1000);
    }
}

/// Counts per outcome, every outcome present (DESIGN §5).
pub fn summary(results: &[ResultEntry]) -> BTreeMap<&'static str, u64> {
    let mut counts: BTreeMap<&'static str, u64> = Outcome::ALL.iter().map(|o| (o.as_str(), 0)).collect();
    for r in results {
        *counts.entry(r.outcome.as_str()).or_default() += 1;
    }
    counts
}

/// A budget that stopped sends in this run, for the human report.
#[derive(Debug, Clone)]
pub struct Deferral {
    pub group: GroupKey,
    pub rule_tz: Tz,
    pub used: u64,
    pub limit: Option<u64>,
    pub retry_at: DateTime<Utc>,
    pub blocked: bool,
}

/// A URL that a dry run would send now.
#[derive(Debug, Clone, Serialize)]
pub struct Planned {
    pub url: String,
    pub property: String,
    pub engine: EngineKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(skip)]
    pub group: GroupKey,
}

impl Planned {
    pub fn new(url: &str, group: &GroupKey) -> Planned {
        Planned {
            url: url.to_string(),
            property: group.property.clone(),
            engine: group.engine,
            endpoint: (!group.target.is_empty()).then(|| group.target.clone()),
            group: group.clone(),
        }
    }
}

#[derive(Serialize)]
struct SubmitJson<'a> {
    now: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    dry_run: bool,
    /// With --dry-run: what would be sent now.
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<&'a [Planned]>,
    results: &'a [ResultEntry],
    summary: BTreeMap<&'static str, u64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    notes: &'a [String],
}

pub struct SubmitReport<'a> {
    pub now: DateTime<Utc>,
    pub user_tz: Tz,
    pub dry_run: bool,
    pub results: &'a [ResultEntry],
    pub deferrals: &'a [Deferral],
    /// URLs that a dry run would send now.
    pub planned: &'a [Planned],
    /// Groups with items waiting in the queue after the run.
    pub waiting: &'a [Waiting],
    /// What the user should know about the run itself.
    pub notes: &'a [String],
}

/// Items of a group that wait for a later time.
#[derive(Debug, Clone)]
pub struct Waiting {
    pub group: GroupKey,
    pub count: u64,
    pub next: DateTime<Utc>,
    pub tz: Tz,
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The endpoint's host (and port), for human text.
fn short_target(target: &str) -> String {
    url::Url::parse(target)
        .ok()
        .and_then(|u| {
            u.host_str().map(|h| match u.port() {
                Some(p) => format!("{h}:{p}"),
                None => h.to_string(),
            })
        })
        .unwrap_or_else(|| target.to_string())
}

pub fn group_title(g: &GroupKey) -> String {
    if g.target.is_empty() {
        format!("{} for {}", g.engine.title(), g.property)
    } else {
        format!("{} ({}) for {}", g.engine.title(), short_target(&g.target), g.property)
    }
}

impl SubmitReport<'_> {
    pub fn write_json(&self, printer: &Printer) -> io::Result<()> {
        printer.json(&SubmitJson {
            now: rfc3339(self.now, self.user_tz),
            dry_run: self.dry_run,
            plan: self.dry_run.then_some(self.planned),
            results: self.results,
            summary: summary(self.results),
            notes: self.notes,
        })
    }

    /// Human text: per group what happened and what the user can do; the
    /// invalid lines; a summary. With `quiet`, only what needs a human.
    pub fn write_human(&self, out: &mut impl Write, quiet: bool) -> io::Result<()> {
        let mut groups: BTreeMap<&GroupKey, Vec<&ResultEntry>> = BTreeMap::new();
        for r in self.results {
            if let Some(g) = &r.group {
                groups.entry(g).or_default().push(r);
            }
        }
        if !quiet {
            for note in self.notes {
                writeln!(out, "note: {note}")?;
            }
        }
        if self.dry_run {
            writeln!(out, "Dry run: nothing is sent and the ledger is not changed.")?;
            let mut per_group: BTreeMap<&GroupKey, u64> = BTreeMap::new();
            for p in self.planned {
                *per_group.entry(&p.group).or_default() += 1;
            }
            for (g, n) in per_group {
                writeln!(out, "{}: {} would go now.", group_title(g), plural(n, "URL", "URLs"))?;
            }
        }
        for (g, entries) in &groups {
            let count = |o: Outcome| entries.iter().filter(|r| r.outcome == o).count() as u64;
            let title = group_title(g);
            if !quiet {
                let accepted = count(Outcome::Accepted);
                if accepted > 0 {
                    writeln!(out, "{title}: {} accepted.", plural(accepted, "URL", "URLs"))?;
                }
                let skipped = count(Outcome::Skipped);
                if skipped > 0 {
                    writeln!(
                        out,
                        "{title}: {} skipped, already accepted within the dedupe window (--force resubmits).",
                        plural(skipped, "URL", "URLs")
                    )?;
                }
                for d in self.deferrals.iter().filter(|d| &d.group == *g) {
                    let waiting = entries
                        .iter()
                        .filter(|r| r.outcome == Outcome::Deferred && r.retry.map(|x| x.0) == Some(d.retry_at))
                        .count() as u64;
                    if waiting == 0 {
                        continue;
                    }
                    let used = match d.limit {
                        Some(l) => format!(" ({}/{l})", d.used),
                        None => String::new(),
                    };
                    let what = if d.blocked { "was refused by the server" } else { "is used" };
                    writeln!(
                        out,
                        "{} quota for {} {what}{used}. Next window opens {}. {} queued for then.",
                        g.engine.title(),
                        g.property,
                        when(d.retry_at, d.rule_tz, self.user_tz, self.now),
                        plural(waiting, "URL is", "URLs are")
                    )?;
                }
                let other_deferred: Vec<_> = entries
                    .iter()
                    .filter(|r| {
                        r.outcome == Outcome::Deferred
                            && !self
                                .deferrals
                                .iter()
                                .any(|d| &d.group == *g && r.retry.map(|x| x.0) == Some(d.retry_at))
                    })
                    .collect();
                if let Some(first) = other_deferred.first() {
                    let next = other_deferred.iter().filter_map(|r| r.retry).min_by_key(|x| x.0);
                    let at = next
                        .map(|(t, tz)| format!(" The next is due {}.", when(t, tz, self.user_tz, self.now)))
                        .unwrap_or_default();
                    writeln!(
                        out,
                        "{title}: {} already in the queue ({}).{at}",
                        plural(other_deferred.len() as u64, "URL is", "URLs are"),
                        first.message
                    )?;
                }
            }
            for outcome in [Outcome::Quota, Outcome::Transient, Outcome::KeyPending, Outcome::Misconfigured] {
                let mut by_reason: BTreeMap<&str, Vec<&&ResultEntry>> = BTreeMap::new();
                for r in entries.iter().filter(|r| r.outcome == outcome) {
                    by_reason.entry(r.reason.as_str()).or_default().push(r);
                }
                for (reason, rs) in by_reason {
                    let n = rs.len() as u64;
                    let first = rs[0];
                    if outcome == Outcome::Misconfigured {
                        writeln!(out, "error: {title}: {} ({reason})", first.message)?;
                        if let Some(hint) = &first.hint {
                            writeln!(out, "  hint: {hint}")?;
                        }
                        writeln!(
                            out,
                            "  {} parked until the configuration changes or `indexq queue retry`.",
                            plural(n, "URL is", "URLs are")
                        )?;
                    } else if !quiet {
                        let next = rs.iter().filter_map(|r| r.retry).min_by_key(|x| x.0);
                        let retry = next
                            .map(|(t, tz)| {
                                format!(
                                    " {} queued for {}.",
                                    plural(n, "URL is", "URLs are"),
                                    when(t, tz, self.user_tz, self.now)
                                )
                            })
                            .unwrap_or_default();
                        writeln!(out, "{title}: {}{retry}", first.message)?;
                    }
                }
            }
        }
        if !quiet {
            for w in self.waiting.iter().filter(|w| !groups.contains_key(&w.group)) {
                writeln!(
                    out,
                    "{}: {} in the queue; the next goes {}.",
                    group_title(&w.group),
                    plural(w.count, "URL waits", "URLs wait"),
                    when(w.next, w.tz, self.user_tz, self.now)
                )?;
            }
        }
        for r in self.results.iter().filter(|r| r.outcome == Outcome::Invalid) {
            let place = r.source.as_deref().unwrap_or("input");
            writeln!(out, "invalid: {place}: `{}`: {}", r.url, r.message)?;
        }
        if !quiet || self.results.iter().any(|r| matches!(r.outcome, Outcome::Misconfigured | Outcome::Invalid)) {
            let parts: Vec<String> =
                summary(self.results).into_iter().filter(|(_, n)| *n > 0).map(|(o, n)| format!("{n} {o}")).collect();
            if parts.is_empty() && self.waiting.is_empty() {
                writeln!(out, "Nothing to send.")?;
            } else if parts.is_empty() {
                writeln!(out, "Nothing is due now.")?;
            } else {
                writeln!(out, "{}.", parts.join(", "))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn when_names_both_timezones() {
        let now: DateTime<Utc> = "2026-12-03T08:00:00Z".parse().unwrap();
        let at: DateTime<Utc> = "2026-12-03T16:00:00Z".parse().unwrap();
        let text = when(at, chrono_tz::Asia::Shanghai, chrono_tz::Europe::Berlin, now);
        assert!(text.starts_with("2026-12-04 00:00 Asia/Shanghai — in 8 h"), "{text}");
        assert!(text.ends_with("(17:00 in your timezone, +01:00)"), "{text}");
        let same = when(at, chrono_tz::UTC, chrono_tz::UTC, now);
        assert!(!same.contains("your timezone"), "{same}");
    }

    #[test]
    fn retry_at_carries_the_offset_of_the_rule() {
        let at: DateTime<Utc> = "2026-12-03T08:00:00Z".parse().unwrap();
        assert_eq!(rfc3339(at, chrono_tz::America::Los_Angeles), "2026-12-03T00:00:00-08:00");
    }
}
