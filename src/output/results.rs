//! The results of one `submit` run, as the report needs them: counts per
//! outcome, and per group, outcome and reason (with the first message and
//! hint and the earliest retry), aggregated as the run goes; a few invalid
//! lines for the human report; and, only for `--json`, every per-URL
//! result, streamed to a private temporary file (deleted when the run
//! ends) and read back once. Nothing is stored per URL otherwise: a run of a
//! million URLs keeps a map of which aggregate each item's result is in (a
//! result replaced later in the run — a retry that succeeded — moves its
//! count) and nothing else. This is report data, not the ledger. The
//! entries a run records (`ResultEntry`, `Planned`) are defined here;
//! `report` reads `Results`, and this module knows nothing of `report`.

use super::printer::rfc3339;
use crate::model::{Channel, GroupKey};
use crate::model::{EngineKind, LocalReason, Outcome, Position, Reason};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufWriter, Seek, Write};

/// One URL's result for one engine (README, *Output and exit codes*).
#[derive(Debug, Clone, Serialize)]
pub struct ResultEntry {
    pub url: String,
    pub property: Option<String>,
    pub engine: Option<EngineKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// `sitemaps` for the submission of a sitemap (`url` is the sitemap's);
    /// absent for a URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<Channel>,
    pub outcome: Outcome,
    pub reason: Reason,
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
    /// Where in the input, for invalid lines (`file:line`, `sitemap:line:column`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Position>,
    #[serde(skip)]
    pub retry: Option<(DateTime<Utc>, Tz)>,
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

/// A URL that a dry run would send now.
#[derive(Debug, Clone, Serialize)]
pub struct Planned {
    pub url: String,
    pub property: String,
    pub engine: EngineKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// `sitemaps` for the submission of a sitemap; absent for a URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<Channel>,
}

impl Planned {
    pub fn new(url: &str, group: &GroupKey) -> Planned {
        Planned {
            url: url.to_string(),
            property: group.property.clone(),
            engine: group.engine,
            endpoint: group.endpoint().map(str::to_string),
            channel: group.sitemap_url().map(|_| Channel::Sitemaps),
        }
    }
}

/// What a result is about: a ledger item, or something that is no ledger
/// item (an input line that never became one, a dry run's plan for a URL),
/// whose key is new each time (`line_key`): its result is never replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    Item(i64),
    Line(u64),
}

/// Results of one reason within a group, for the human report.
#[derive(Debug, Clone)]
pub struct Aggregate {
    pub group: GroupKey,
    pub outcome: Outcome,
    pub reason: Reason,
    pub count: u64,
    pub message: String,
    pub hint: Option<String>,
    pub next_retry: Option<(DateTime<Utc>, Tz)>,
}

/// How a result's JSON begins: its URL is its first field.
const URL_FIELD: &str = "{\"url\":";

/// How many invalid lines the human report names with `-q` (without it,
/// stderr names every one as it is read).
const INVALID_SHOWN: usize = 5;

/// An invalid input line, for the human report.
#[derive(Debug, Clone)]
pub struct InvalidLine {
    pub source: Option<Position>,
    pub url: String,
    pub message: String,
}

pub struct Results {
    /// Aggregates in the order their first result came.
    aggregates: Vec<Aggregate>,
    by_reason: HashMap<(GroupKey, Outcome, Reason), usize>,
    /// Per key whose result may still be replaced in this run (a wait or a
    /// retry): its aggregate (`None`: an invalid line, counted only by
    /// outcome), outcome, and where its JSON line is. A final result
    /// (accepted, skipped, parked, invalid) is not kept here: a run of a
    /// million accepted URLs keeps nothing per URL.
    current: FxHashMap<Key, (Option<usize>, Outcome, u64)>,
    /// JSON lines of results replaced later in the run.
    superseded: FxHashSet<u64>,
    /// Counts per outcome, by `Outcome as usize` (`Outcome::ALL`'s order):
    /// a count a URL, so not a map searched by name.
    summary: [u64; Outcome::ALL.len()],
    invalid: Vec<InvalidLine>,
    planned: BTreeMap<GroupKey, u64>,
    lines: u64,
    /// `--json`: every result and planned URL, one line each (`r\t`, or
    /// `r <retry ms>\t`, or `p\t`, then the JSON; or `t<template>\t` then
    /// the URL as a JSON string), in the order they came.
    json: Option<JsonLines>,
    /// The aggregate the last result went to: the next one, most often
    /// the same, is found without making its key.
    last_aggregate: Option<usize>,
    /// Results many URLs share (`Template`): the JSON that follows the URL
    /// (`--json`), and the retry's instant in milliseconds.
    templates: Vec<(String, Option<i64>)>,
    /// The end of what the run may wait for (`--max-wait`), when it has
    /// one: an item waiting in the ledger past it is not sent in this run.
    horizon: Option<DateTime<Utc>>,
}

/// A result many URLs share but for their URL (the URLs that wait for the
/// budget: a dry run's, one result per group; a real run's, one per
/// claim): made once (`Results::template`)
/// — its aggregate found, its JSON written around the URL — and put for
/// each URL (`Results::put_like`), where a result built and serialized per
/// URL would cost most of a million-URL dry run. Only for a result nothing
/// replaces later in the run (no key).
pub struct Template {
    aggregate: Option<usize>,
    outcome: Outcome,
    retry: Option<(DateTime<Utc>, Tz)>,
    /// What begins each of its `--json` lines: `t<index>\t`, its index in
    /// `Results::templates`.
    tag: String,
}

struct JsonLines {
    file: BufWriter<std::fs::File>,
    written: u64,
    /// A line being made (`put_like`).
    line: Vec<u8>,
}

impl Results {
    /// `json`: keep every per-URL result for a `--json` document.
    pub fn new(json: bool) -> std::io::Result<Results> {
        let json = match json {
            true => Some(JsonLines { file: BufWriter::new(tempfile::tempfile()?), written: 0, line: Vec::new() }),
            false => None,
        };
        Ok(Results {
            aggregates: Vec::new(),
            by_reason: HashMap::new(),
            current: FxHashMap::default(),
            superseded: FxHashSet::default(),
            summary: [0; Outcome::ALL.len()],
            invalid: Vec::new(),
            planned: BTreeMap::new(),
            lines: 0,
            json,
            last_aggregate: None,
            templates: Vec::new(),
            horizon: None,
        })
    }

    /// The end of the run's wait (`put_waiting`).
    pub fn final_after(&mut self, horizon: DateTime<Utc>) {
        self.horizon = Some(horizon);
    }

    /// A key for a bad input line.
    pub fn line_key(&mut self) -> Key {
        self.lines += 1;
        Key::Line(self.lines)
    }

    /// Records (or replaces) the result for `key`.
    pub fn put(&mut self, key: Key, e: &ResultEntry) -> std::io::Result<()> {
        self.put_all(std::iter::once((key, e.url.as_str(), e.attempts)), e)
    }

    /// Records one result for many keys at once (an answer for a whole
    /// request): `e` with each key's URL and attempts.
    pub fn put_all<'u>(
        &mut self,
        keys: impl IntoIterator<Item = (Key, &'u str, u32)>,
        e: &ResultEntry,
    ) -> std::io::Result<()> {
        self.record(keys, e, true)
    }

    /// Records (or replaces) the result of an item the run found waiting in the
    /// ledger as it read its input: kept only when it waits no longer than the
    /// run (`final_after`) — one due later is not sent in this run, so nothing
    /// replaces its result; keeping them all held too much memory on a large
    /// queue (docs/performance.md, *Measured choices*).
    pub fn put_waiting(&mut self, key: Key, e: &ResultEntry) -> std::io::Result<()> {
        let later = matches!((self.horizon, e.retry), (Some(horizon), Some((retry, _))) if retry > horizon);
        self.record(std::iter::once((key, e.url.as_str(), e.attempts)), e, !later)
    }

    /// `put_all`; a result that may be replaced later in the run is kept
    /// only if `replaceable`.
    fn record<'u>(
        &mut self,
        keys: impl IntoIterator<Item = (Key, &'u str, u32)>,
        e: &ResultEntry,
        replaceable: bool,
    ) -> std::io::Result<()> {
        let aggregate = match (&e.property, e.engine) {
            (Some(property), Some(engine)) => Some(self.aggregate(property, engine, e)),
            _ => None,
        };
        let outcome = e.outcome;
        // Only the `--json` document writes each key's copy.
        let mut entry = self.json.is_some().then(|| e.clone());
        for (key, url, attempts) in keys {
            let offset = match (&mut self.json, entry.as_mut()) {
                (Some(json), Some(entry)) => {
                    entry.url.clear();
                    entry.url.push_str(url);
                    entry.attempts = attempts;
                    // Its seconds are counted when the document is written.
                    entry.retry_after_secs = None;
                    let text = serde_json::to_string(&entry).map_err(std::io::Error::other)?;
                    let retry = e.retry.map(|(t, _)| format!(" {}", t.timestamp_millis())).unwrap_or_default();
                    let line = format!("r{retry}\t{text}\n");
                    json.file.write_all(line.as_bytes())?;
                    let at = json.written;
                    json.written += line.len() as u64;
                    at
                }
                _ => 0,
            };
            // A result nothing can replace keeps nothing: a final outcome, a
            // key made for it alone (a dry run's million deferrals), or a
            // wait past the run's.
            let replaced = match !replaceable || final_outcome(outcome) || matches!(key, Key::Line(_)) {
                true => self.current.remove(&key),
                false => self.current.insert(key, (aggregate, outcome, offset)),
            };
            if let Some(old) = replaced {
                self.uncount(old);
            }
            if let Some(a) = aggregate {
                self.aggregates[a].count += 1;
                if let Some(retry) = e.retry.filter(|r| self.aggregates[a].next_retry.is_none_or(|n| r.0 < n.0)) {
                    self.aggregates[a].next_retry = Some(retry);
                }
            }
            self.summary[outcome as usize] += 1;
            // A URL outside the IndexNow key location's folder is said by
            // its own notice, once per reminder (`NoticeKind::KeyScope`).
            let outside = e.reason == Reason::Local(LocalReason::OutsideKeyLocation);
            if outcome == Outcome::Invalid && !outside && self.invalid.len() < INVALID_SHOWN {
                self.invalid.push(InvalidLine {
                    source: e.source.clone(),
                    url: url.to_string(),
                    message: e.message.clone(),
                });
            }
        }
        Ok(())
    }

    /// The result `e` stands for, for many URLs (`put_like`); `e`'s own
    /// URL is not used.
    pub fn template(&mut self, e: &ResultEntry) -> std::io::Result<Template> {
        let aggregate = match (&e.property, e.engine) {
            (Some(property), Some(engine)) => Some(self.aggregate(property, engine, e)),
            _ => None,
        };
        // (Not an invalid line's, nor a sitemap's: those are told by their URL.)
        debug_assert!(e.outcome != Outcome::Invalid && !matches!(e.channel, Some(Channel::Sitemaps)));
        let index = self.templates.len();
        let mut suffix = String::new();
        if self.json.is_some() {
            let mut entry = e.clone();
            entry.url.clear();
            entry.retry_after_secs = None;
            let text = serde_json::to_string(&entry).map_err(std::io::Error::other)?;
            // The URL is the first field (`ResultEntry`'s order).
            suffix =
                text.strip_prefix(URL_FIELD).and_then(|t| t.strip_prefix("\"\"")).map(str::to_string).ok_or_else(
                    || std::io::Error::other(format!("a result's JSON does not begin with its URL: {text}")),
                )?;
        }
        self.templates.push((suffix, e.retry.map(|(t, _)| t.timestamp_millis())));
        Ok(Template { aggregate, outcome: e.outcome, retry: e.retry, tag: format!("t{index}\t") })
    }

    /// Records `template`'s result for `url`: counted, and with `--json` a
    /// line of the URL alone.
    pub fn put_like(&mut self, template: &Template, url: &str) -> std::io::Result<()> {
        if let Some(json) = &mut self.json {
            let line = &mut json.line;
            line.clear();
            line.extend_from_slice(template.tag.as_bytes());
            serde_json::to_writer(&mut *line, url).map_err(std::io::Error::other)?;
            line.push(b'\n');
            json.file.write_all(line)?;
            json.written += line.len() as u64;
        }
        if let Some(a) = template.aggregate {
            self.aggregates[a].count += 1;
            if let Some(retry) = template.retry.filter(|r| self.aggregates[a].next_retry.is_none_or(|n| r.0 < n.0)) {
                self.aggregates[a].next_retry = Some(retry);
            }
        }
        self.summary[template.outcome as usize] += 1;
        Ok(())
    }

    /// `put_like` for a result that takes the place of `key`'s, if it had
    /// one, and that nothing replaces later in the run (a real run's URLs
    /// deferred past its wait): kept for no key.
    pub fn put_like_over(&mut self, template: &Template, key: Key, url: &str) -> std::io::Result<()> {
        if let Some(old) = self.current.remove(&key) {
            self.uncount(old);
        }
        self.put_like(template, url)
    }

    /// A replaced result no longer counted (nor, with `--json`, written).
    fn uncount(&mut self, (aggregate, outcome, offset): (Option<usize>, Outcome, u64)) {
        if let Some(a) = aggregate {
            self.aggregates[a].count -= 1;
        }
        self.summary[outcome as usize] -= 1;
        if self.json.is_some() {
            self.superseded.insert(offset);
        }
    }

    /// The aggregate of `e`'s group, outcome and reason (made on first use).
    fn aggregate(&mut self, property: &str, engine: EngineKind, e: &ResultEntry) -> usize {
        let (target, channel) = match e.channel {
            Some(Channel::Sitemaps) => (e.url.as_str(), Channel::Sitemaps),
            _ => (e.endpoint.as_deref().unwrap_or_default(), Channel::Urls),
        };
        if let Some(last) = self.last_aggregate {
            let a = &self.aggregates[last];
            let g = &a.group;
            if (a.outcome, a.reason, g.engine, g.channel) == (e.outcome, e.reason, engine, channel)
                && g.property == property
                && g.target == target
            {
                return last;
            }
        }
        let group = match channel {
            Channel::Sitemaps => GroupKey::sitemap(property, engine, target),
            _ => GroupKey::urls(property, engine, target),
        };
        let key = (group, e.outcome, e.reason);
        let index = match self.by_reason.get(&key) {
            Some(&index) => index,
            None => {
                self.aggregates.push(Aggregate {
                    group: key.0.clone(),
                    outcome: e.outcome,
                    reason: e.reason,
                    count: 0,
                    message: e.message.clone(),
                    hint: e.hint.clone(),
                    next_retry: None,
                });
                self.by_reason.insert(key, self.aggregates.len() - 1);
                self.aggregates.len() - 1
            }
        };
        self.last_aggregate = Some(index);
        index
    }

    /// Records a URL of `group` a dry run would send now: counted (the
    /// group copied once, not per URL) and, with `--json`, written as
    /// `Planned`.
    pub fn plan(&mut self, url: &str, group: &GroupKey) -> std::io::Result<()> {
        match self.planned.get_mut(group) {
            Some(n) => *n += 1,
            None => _ = self.planned.insert(group.clone(), 1),
        }
        if let Some(json) = &mut self.json {
            let p = Planned::new(url, group);
            let line = format!("p\t{}\n", serde_json::to_string(&p).map_err(std::io::Error::other)?);
            json.file.write_all(line.as_bytes())?;
            json.written += line.len() as u64;
        }
        Ok(())
    }

    /// Counts per outcome, every outcome present.
    pub fn summary(&self) -> BTreeMap<&'static str, u64> {
        Outcome::ALL.iter().map(|&o| (o.as_str(), self.summary[o as usize])).collect()
    }

    /// Every planned URL (`--json` only), as JSON (in parts, as
    /// `each_result_json`), in order. (`flush` first.)
    pub fn each_planned_json(&self, mut f: impl FnMut(&[&[u8]]) -> std::io::Result<()>) -> anyhow::Result<()> {
        self.each_line(|_, tag, text| if tag == "p" { f(&[text]) } else { Ok(()) })
    }

    /// Every result (`--json` only), as JSON with `retry_after_secs`
    /// counted to `end` (in parts, to be written one after the other), in
    /// the order the run gave them their last result.
    pub fn each_result_json(
        &self,
        end: DateTime<Utc>,
        mut f: impl FnMut(&[&[u8]]) -> std::io::Result<()>,
    ) -> anyhow::Result<()> {
        // The retry, in milliseconds, follows the key: its seconds from
        // `end` close the object.
        let with_retry = |json: &[u8], ms: i64, out: &mut Vec<u8>| {
            let millis = (ms - end.timestamp_millis()).max(0);
            out.extend_from_slice(json.strip_suffix(b"}").unwrap_or(json));
            out.extend_from_slice(format!(",\"retry_after_secs\":{}}}", (millis + 999) / 1000).as_bytes());
        };
        // What follows the URL of each template's results, its seconds counted once.
        let suffixes: Vec<Vec<u8>> = self
            .templates
            .iter()
            .map(|(suffix, retry)| match retry {
                Some(ms) => {
                    let mut out = Vec::new();
                    with_retry(suffix.as_bytes(), *ms, &mut out);
                    out
                }
                None => suffix.as_bytes().to_vec(),
            })
            .collect();
        let mut line = Vec::new();
        self.each_line(|offset, tag, text| {
            if let Some(index) = tag.strip_prefix('t') {
                let suffix = index.parse::<usize>().ok().and_then(|i| suffixes.get(i));
                let suffix = suffix.ok_or_else(|| std::io::Error::other(format!("no template `{tag}`")))?;
                return f(&[URL_FIELD.as_bytes(), text, suffix]);
            }
            if !tag.starts_with('r') || self.superseded.contains(&offset) {
                return Ok(());
            }
            match tag.split_once(' ').and_then(|(_, ms)| ms.parse::<i64>().ok()) {
                Some(ms) => {
                    line.clear();
                    with_retry(text, ms, &mut line);
                    f(&[&line])
                }
                None => f(&[text]),
            }
        })
    }

    /// Each line of the `--json` file: its offset, tag and JSON. (Its
    /// lines were written from text: each is read back as bytes, its tag
    /// alone checked as text.)
    fn each_line(&self, mut f: impl FnMut(u64, &str, &[u8]) -> std::io::Result<()>) -> anyhow::Result<()> {
        let Some(json) = &self.json else { return Ok(()) };
        let mut file = json.file.get_ref().try_clone()?;
        file.rewind()?;
        let mut lines = std::io::BufReader::with_capacity(1 << 16, file);
        let (mut offset, mut line) = (0u64, Vec::new());
        loop {
            line.clear();
            let n = lines.read_until(b'\n', &mut line)? as u64;
            if n == 0 {
                return Ok(());
            }
            let line = line.strip_suffix(b"\n").unwrap_or(&line);
            let (tag, text) = match memchr::memchr(b'\t', line) {
                Some(tab) => (std::str::from_utf8(&line[..tab])?, &line[tab + 1..]),
                None => ("", &[][..]),
            };
            f(offset, tag, text)?;
            offset += n;
        }
    }

    /// Writes out what `each_planned_json` and `each_result_json` read.
    pub fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.json {
            Some(json) => json.file.flush(),
            None => Ok(()),
        }
    }

    /// The first invalid lines, and how many there were in all (a URL outside
    /// the IndexNow key location is not among them: its notice says it).
    pub fn invalid(&self) -> (&[InvalidLine], u64) {
        let outside = Reason::Local(LocalReason::OutsideKeyLocation);
        let told_apart: u64 = self.aggregates.iter().filter(|a| a.reason == outside).map(|a| a.count).sum();
        (&self.invalid, self.summary[Outcome::Invalid as usize].saturating_sub(told_apart))
    }

    /// Deferred results per engine.
    pub fn deferred_per_engine(&self) -> BTreeMap<EngineKind, u64> {
        let mut out = BTreeMap::new();
        for a in self.aggregates.iter().filter(|a| a.outcome == Outcome::Deferred) {
            *out.entry(a.group.engine).or_default() += a.count;
        }
        out
    }

    /// Planned URLs per group.
    pub fn planned_counts(&self) -> Vec<(GroupKey, u64)> {
        self.planned.iter().map(|(g, n)| (g.clone(), *n)).collect()
    }

    /// Per group, outcome and reason: how many, the first message and hint,
    /// and the earliest retry; grouped by group, in the order they came.
    pub fn aggregates(&self) -> Vec<Aggregate> {
        let mut out: Vec<(usize, &Aggregate)> =
            self.aggregates.iter().enumerate().filter(|(_, a)| a.count > 0).collect();
        out.sort_by(|(i, a), (j, b)| {
            (&a.group.property, a.group.engine.as_str(), &a.group.target, i).cmp(&(
                &b.group.property,
                b.group.engine.as_str(),
                &b.group.target,
                j,
            ))
        });
        out.into_iter().map(|(_, a)| a.clone()).collect()
    }
}

/// Whether a result is the last an item gets in a run: it was accepted,
/// skipped or parked (or the line was invalid). A wait or a retry may be
/// followed by another within `--max-wait`.
fn final_outcome(outcome: Outcome) -> bool {
    match outcome {
        Outcome::Accepted | Outcome::Skipped | Outcome::Misconfigured | Outcome::Invalid => true,
        Outcome::Quota | Outcome::Transient | Outcome::KeyPending | Outcome::Deferred => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(url: &str, outcome: Outcome, reason: impl Into<Reason>) -> ResultEntry {
        let reason = reason.into();
        ResultEntry {
            url: url.into(),
            property: Some("site".into()),
            engine: Some(EngineKind::IndexNow),
            endpoint: Some("https://e.example/indexnow".into()),
            channel: None,
            outcome,
            reason,
            message: format!("{reason} message"),
            hint: None,
            http_status: None,
            retry_at: None,
            retry_after_secs: None,
            attempts: 1,
            source: None,
            retry: None,
        }
    }

    #[test]
    fn a_result_nothing_can_replace_is_counted_and_not_kept() {
        let mut results = Results::new(false).unwrap();
        let mut deferred = entry("https://s/a", Outcome::Deferred, crate::model::LocalReason::Budget);
        for _ in 0..3 {
            let key = results.line_key();
            deferred.url = format!("https://s/{key:?}");
            results.put(key, &deferred).unwrap();
        }
        assert_eq!(results.summary()["deferred"], 3);
        assert!(results.current.is_empty(), "a line's key is never put again: nothing kept per URL");
        results.put(Key::Item(7), &deferred).unwrap();
        assert_eq!(results.current.len(), 1, "an item's wait may be replaced by its retry's answer");
    }

    /// A result put for many URLs from one template reads back, counts and
    /// aggregates as the same result put for each URL would.
    #[test]
    fn a_templated_result_is_the_result_put_for_each_url() {
        let end = Utc::now();
        let mut deferred = entry("https://s/a", Outcome::Deferred, crate::model::LocalReason::Budget);
        deferred.set_retry(end + chrono::TimeDelta::seconds(90), Tz::UTC, end);
        deferred.url = "https://s/\"quoted\"\u{1b}".into();
        let read = |results: &mut Results| {
            results.flush().unwrap();
            let mut lines = Vec::new();
            results
                .each_result_json(end, |r| {
                    lines.push(String::from_utf8(r.concat()).unwrap());
                    Ok(())
                })
                .unwrap();
            let aggregates: Vec<(Outcome, u64)> = results.aggregates().iter().map(|a| (a.outcome, a.count)).collect();
            (lines, results.summary(), aggregates, results.deferred_per_engine())
        };
        let urls = ["https://s/a", "https://s/\"quoted\"\u{1b}", "https://s/ü"];
        let mut each = Results::new(true).unwrap();
        for url in urls {
            let key = each.line_key();
            each.put(key, &ResultEntry { url: url.into(), ..deferred.clone() }).unwrap();
        }
        let mut templated = Results::new(true).unwrap();
        let template = templated.template(&deferred).unwrap();
        for url in urls {
            templated.put_like(&template, url).unwrap();
        }
        let (each, templated) = (read(&mut each), read(&mut templated));
        assert_eq!(each, templated);
        assert!(each.0[0].ends_with(",\"retry_after_secs\":90}"), "{}", each.0[0]);
        assert_eq!(each.1["deferred"], 3);
    }

    /// An item found waiting past the end of the run's wait is final:
    /// counted, kept for no key; one due within it may be replaced, and so
    /// may an answer whatever its retry (Bing's partial remainder goes again
    /// at once).
    #[test]
    fn a_result_waiting_past_the_runs_wait_is_not_kept() {
        let now = Utc::now();
        let mut results = Results::new(false).unwrap();
        results.final_after(now + chrono::TimeDelta::minutes(5));
        let mut waiting = entry("https://s/a", Outcome::Deferred, crate::model::LocalReason::Queued);
        waiting.set_retry(now + chrono::TimeDelta::hours(1), Tz::UTC, now);
        results.put_waiting(Key::Item(1), &waiting).unwrap();
        assert!(results.current.is_empty(), "not sent in this run: nothing kept");
        let mut soon = entry("https://s/b", Outcome::Deferred, crate::model::LocalReason::Queued);
        soon.set_retry(now + chrono::TimeDelta::minutes(1), Tz::UTC, now);
        results.put_waiting(Key::Item(2), &soon).unwrap();
        assert_eq!(results.current.len(), 1, "due within the wait: its answer replaces it");
        let mut quota = entry("https://s/c", Outcome::Quota, crate::model::QuotaReason::Quota);
        quota.set_retry(now + chrono::TimeDelta::hours(1), Tz::UTC, now);
        results.put(Key::Item(3), &quota).unwrap();
        assert_eq!(results.current.len(), 2, "an answer is kept");
        let summary = results.summary();
        assert_eq!((summary["deferred"], summary["quota"]), (2, 1));
    }

    /// A real run's deferral past its wait takes the place of the item's
    /// earlier result (a requeued item told waiting), and keeps nothing.
    #[test]
    fn a_templated_result_over_a_key_replaces_its_result_and_keeps_nothing() {
        let end = Utc::now();
        let mut results = Results::new(true).unwrap();
        let waiting = entry("https://s/a", Outcome::Deferred, crate::model::LocalReason::Queued);
        results.put(Key::Item(1), &waiting).unwrap();
        let mut budget = entry("", Outcome::Deferred, crate::model::LocalReason::Budget);
        budget.set_retry(end + chrono::TimeDelta::hours(1), Tz::UTC, end);
        let template = results.template(&budget).unwrap();
        results.put_like_over(&template, Key::Item(1), "https://s/a").unwrap();
        results.put_like_over(&template, Key::Item(2), "https://s/b").unwrap();
        assert_eq!(results.summary()["deferred"], 2, "the waiting result replaced, not counted again");
        assert!(results.current.is_empty(), "nothing kept per URL");
        let counts: Vec<(String, u64)> = results.aggregates().iter().map(|a| (a.reason.to_string(), a.count)).collect();
        assert_eq!(counts, [("budget".to_string(), 2)], "the emptied waiting aggregate is gone");
        results.flush().unwrap();
        let mut lines = Vec::new();
        results
            .each_result_json(end, |r| {
                lines.push(serde_json::from_slice::<serde_json::Value>(&r.concat()).unwrap());
                Ok(())
            })
            .unwrap();
        let told: Vec<(&str, &str)> =
            lines.iter().map(|l| (l["url"].as_str().unwrap(), l["reason"].as_str().unwrap())).collect();
        assert_eq!(told, [("https://s/a", "budget"), ("https://s/b", "budget")]);
    }

    #[test]
    fn a_replaced_result_moves_its_count_and_json_keeps_the_last() {
        let mut results = Results::new(true).unwrap();
        results
            .put(Key::Item(1), &entry("https://s/a", Outcome::Transient, crate::model::TransientReason::ServerError))
            .unwrap();
        let ok = entry("", Outcome::Accepted, crate::model::AcceptedReason::Ok);
        results.put_all([(Key::Item(1), "https://s/a", 2), (Key::Item(2), "https://s/b", 1)], &ok).unwrap();
        let key = results.line_key();
        let mut bad = entry("nope", Outcome::Invalid, crate::model::LocalReason::InvalidUrl);
        (bad.property, bad.engine, bad.source) = (None, None, Some(Position::line("urls.txt", 3)));
        results.put(key, &bad).unwrap();
        let summary = results.summary();
        assert_eq!((summary["accepted"], summary["transient"], summary["invalid"]), (2, 0, 1));
        let aggregates = results.aggregates();
        assert_eq!(aggregates.len(), 1, "the emptied transient aggregate is gone: {aggregates:?}");
        assert_eq!((aggregates[0].outcome, aggregates[0].count), (Outcome::Accepted, 2));
        assert_eq!(results.invalid().0[0].source, Some(Position::line("urls.txt", 3)));
        results.flush().unwrap();
        let mut lines = Vec::new();
        let end = Utc::now();
        results
            .each_result_json(end, |r| {
                lines.push(String::from_utf8(r.concat()).unwrap());
                Ok(())
            })
            .unwrap();
        let docs: Vec<serde_json::Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(docs.len(), 3, "{lines:?}");
        assert_eq!(
            (docs[0]["url"].as_str(), docs[0]["outcome"].as_str(), docs[0]["attempts"].as_u64()),
            (Some("https://s/a"), Some("accepted"), Some(2))
        );
        assert_eq!(docs[1]["url"], "https://s/b");
        assert_eq!(docs[2]["outcome"], "invalid");
    }
}
