//! How every command speaks: the `Printer` (JSON and requested data to
//! stdout, notes and warnings to stderr, `-q` keeps only what needs a human;
//! human text with its control characters escaped, see `escape`)
//! and the formatting shared by the commands' human text: instants as RFC 3339
//! in a rule's timezone, `when` something happens (both timezones and how
//! long from now), and a group's title. It knows no command and no run.

use super::escape::{self, Escaping};
use crate::clock;
use crate::model::GroupKey;
use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use chrono_tz::Tz;
use serde::Serialize;
use std::io::{self, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

/// Stdout, locked. A JSON document (`Stdout::new(true)`, hundreds of MB
/// for a million results) goes out in large writes on its own handle of
/// the descriptor: through the standard stream's line buffer each 8 KiB
/// would be two writes (up to its last line break, then the rest).
/// Human text goes through the standard stream as it is.
pub struct Stdout {
    // (Dropped first: the document is written out before the lock goes.)
    document: Option<io::BufWriter<std::fs::File>>,
    lock: io::StdoutLock<'static>,
}

/// How much of a document is written at once.
const DOCUMENT_BUFFER: usize = 1 << 20;

impl Stdout {
    fn new(document: bool) -> Stdout {
        let mut lock = io::stdout().lock();
        let document = match document && lock.flush().is_ok() {
            // (A closed stdout has no handle to copy: its writes fail as before.)
            true => own_handle(&lock).map(|file| io::BufWriter::with_capacity(DOCUMENT_BUFFER, file)),
            false => None,
        };
        Stdout { document, lock }
    }
}

/// A handle of stdout's own, for large writes.
#[cfg(unix)]
fn own_handle(lock: &io::StdoutLock<'static>) -> Option<std::fs::File> {
    std::os::fd::AsFd::as_fd(lock).try_clone_to_owned().ok().map(std::fs::File::from)
}

/// A handle of stdout's own, for large writes.
#[cfg(windows)]
fn own_handle(lock: &io::StdoutLock<'static>) -> Option<std::fs::File> {
    std::os::windows::io::AsHandle::as_handle(lock).try_clone_to_owned().ok().map(std::fs::File::from)
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.document {
            Some(document) => document.write(buf),
            None => self.lock.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.document {
            Some(document) => document.write_all(buf),
            None => self.lock.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Some(document) = &mut self.document {
            document.flush()?;
        }
        self.lock.flush()
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Printer {
    pub json: bool,
    pub verbosity: Verbosity,
}

impl Printer {
    /// Stdout for what a command prints: human text with its control
    /// characters escaped (`escape`); with `--json`, as is.
    pub fn stdout(&self) -> Escaping<Stdout> {
        Escaping::new(Stdout::new(self.json), !self.json)
    }

    /// Stdout as is, for a document in a format with its own escaping:
    /// JSON, the HTML report, the Prometheus text.
    pub fn document(&self) -> io::StdoutLock<'static> {
        io::stdout().lock()
    }

    /// Prints a warning about one input or item (never in JSON mode's stdout).
    pub fn warn(&self, text: &str) {
        let _ = writeln!(escape::stderr(), "warning: {text}");
    }

    /// Prints a bad input line as it is read (stderr), in human mode
    /// without -q. It is told once: with `-q` the report names the first
    /// few at its end, with `--json` the document has each.
    pub fn invalid(&self, text: &str) {
        if !self.json && self.verbosity != Verbosity::Quiet {
            let _ = writeln!(escape::stderr(), "invalid: {text}");
        }
    }

    /// Prints a note for a person (hidden by -q and by --json).
    pub fn note(&self, text: &str) {
        if !self.json && self.verbosity != Verbosity::Quiet {
            let _ = writeln!(escape::stderr(), "{text}");
        }
    }

    /// Prints one JSON document on stdout.
    pub fn json<T: Serialize>(&self, value: &T) -> io::Result<()> {
        let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
        writeln!(self.document(), "{text}")
    }
}

/// An instant as RFC 3339 with the offset of `tz`.
pub fn rfc3339(at: DateTime<Utc>, tz: Tz) -> String {
    at.with_timezone(&tz).to_rfc3339_opts(SecondsFormat::Secs, false)
}

/// "2026-12-04 00:00 Asia/Shanghai — in 8 h (17:00 in your timezone, +01:00)"
pub fn when(at: DateTime<Utc>, tz: Tz, user_tz: Tz, now: DateTime<Utc>) -> String {
    // To the nearest second: a reset 6 h 29 min 59.9 s away reads "6 h 30 min".
    let relative = clock::humanize(TimeDelta::seconds(((at - now).num_milliseconds() + 500).div_euclid(1000)));
    let mut text = format!("{} — in {relative}", clock::format_local(at, tz));
    if user_tz != tz {
        let local = at.with_timezone(&user_tz);
        let same_day = local.date_naive() == now.with_timezone(&user_tz).date_naive();
        let shown = if same_day { local.format("%H:%M").to_string() } else { local.format("%a %H:%M").to_string() };
        text.push_str(&format!(" ({shown} in your timezone, {})", clock::format_offset(at, user_tz)));
    }
    text
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

/// A group in human text: the engine, its endpoint's host (when it has
/// one) and the property; for a sitemap group, the sitemap.
pub fn group_title(g: &GroupKey) -> String {
    if let Some(sitemap) = g.sitemap_url() {
        return format!("{} sitemap {sitemap} for {}", g.engine.title(), g.property);
    }
    match g.endpoint() {
        None => format!("{} for {}", g.engine.title(), g.property),
        Some(endpoint) => format!("{} ({}) for {}", g.engine.title(), short_target(endpoint), g.property),
    }
}

/// The options of `indexq queue` that select a group's items:
/// `--property P --engine E`, and `--endpoint` (IndexNow) or `--url` (a
/// sitemap group's one item).
pub fn group_selector(g: &GroupKey) -> String {
    let mut selector = format!("--property {} --engine {}", g.property, g.engine.as_str());
    if let Some(endpoint) = g.endpoint() {
        selector.push_str(&format!(" --endpoint {endpoint}"));
    }
    if let Some(sitemap) = g.sitemap_url() {
        selector.push_str(&format!(" --url {sitemap}"));
    }
    selector
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
