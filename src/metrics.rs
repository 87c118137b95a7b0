//! Metrics for the monitoring people already run, in the Prometheus text
//! exposition format (0.0.4): what `status --format prometheus` prints and
//! `submit --metrics-file` writes (atomically, for node_exporter's textfile
//! collector). Everything comes from the configuration and the ledger, read
//! through the `Ledger` trait: budget use per rule and window, queue items
//! by state, attempts by class since the ledger began, Google URL
//! inspections (`skip_indexed`) by class since the ledger began, what the
//! engines' reports on the sitemaps submitted say a human must look at, and
//! the last `submit` run (which `submit` records as it ends). It knows nothing
//! of engines or HTTP.
//!
//! Names follow Prometheus's rules: an `indexq_` prefix, base units
//! (seconds; budgets count URLs), `_timestamp_seconds` for instants, `_total`
//! on counters, a HELP and a TYPE line for every family (also one with no
//! sample yet).

use crate::budget_rules;
use crate::config::Settings;
use crate::ledger::Ledger;
use crate::model::Class;
use crate::model::{GroupKey, RunRecord};
use crate::output::printer::Printer;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::io::{self, Write};

/// The classes, in the order the metrics list them.
const CLASSES: [Class; 5] = [Class::Accepted, Class::Quota, Class::Transient, Class::KeyPending, Class::Misconfigured];

/// The classes an inspection answer can have (no key is pending there).
pub const INSPECTION_CLASSES: [Class; 4] = [Class::Accepted, Class::Quota, Class::Transient, Class::Misconfigured];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
        }
    }
}

/// One metric family: its name, help, type and samples.
#[derive(Debug, Clone)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub samples: Vec<Sample>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

impl Family {
    fn new(name: &'static str, kind: Kind, help: &'static str) -> Family {
        Family { name, help, kind, samples: Vec::new() }
    }

    fn push(&mut self, labels: Vec<(&'static str, String)>, value: f64) {
        self.samples.push(Sample { labels, value });
    }
}

/// The labels of a (property, engine, endpoint) group; `endpoint` is the
/// IndexNow endpoint URL, empty for the other engines; a sitemap group's
/// series have a `sitemap` label too, its URL.
fn group_labels(group: &GroupKey) -> Vec<(&'static str, String)> {
    let mut labels = vec![
        ("property", group.property.clone()),
        ("engine", group.engine.as_str().to_string()),
        ("endpoint", group.endpoint().unwrap_or_default().to_string()),
    ];
    if let Some(sitemap) = group.sitemap_url() {
        labels.push(("sitemap", sitemap.to_string()));
    }
    labels
}

fn seconds(t: DateTime<Utc>) -> f64 {
    t.timestamp_millis() as f64 / 1000.0
}

/// Every family, from the configuration and the ledger at `now`. The last
/// run is the ledger's, or `this_run` (a `submit` writing its metrics as it
/// ends, before its record is stored).
pub fn gather(
    settings: &Settings,
    ledger: &mut dyn Ledger,
    now: DateTime<Utc>,
    this_run: Option<&RunRecord>,
) -> anyhow::Result<Vec<Family>> {
    let configured = budget_rules::groups(settings);
    let mut families = budget_families(settings, ledger, &configured, now)?;
    families.push(queue_family(settings, ledger, &configured, now)?);
    families.push(attempts_family(settings, ledger, &configured)?);
    families.push(inspection_family(settings, ledger)?);
    families.push(sitemap_family(settings, ledger, &configured, now)?);
    families.push(source_family(settings, ledger)?);
    let last = match this_run {
        Some(run) => Some(run.clone()),
        None => ledger.last_run(false)?,
    };
    let last_ok = match this_run {
        Some(run) if run.exit_code == 0 => Some(run.clone()),
        _ => ledger.last_run(true)?,
    };
    families.extend(run_families(last.as_ref(), last_ok.as_ref(), now));
    Ok(families)
}

/// Each budget rule of the configured groups in its current window: used,
/// limit, remaining, and when it reopens (an instant, and seconds from now).
fn budget_families(
    settings: &Settings,
    ledger: &mut dyn Ledger,
    configured: &[GroupKey],
    now: DateTime<Utc>,
) -> anyhow::Result<Vec<Family>> {
    let mut used = Family::new(
        "indexq_budget_used_urls",
        Kind::Gauge,
        "URLs counted against a budget rule in its current window (pool rules are shared: they repeat under each property)",
    );
    let mut limit = Family::new(
        "indexq_budget_limit_urls",
        Kind::Gauge,
        "The limit of a budget rule in its current window (as the engine reports it, for Bing); absent: no limit",
    );
    let mut remaining = Family::new(
        "indexq_budget_remaining_urls",
        Kind::Gauge,
        "URLs a budget rule still allows in its current window (0 once the server said it is spent); absent: no limit",
    );
    let mut reset_at = Family::new(
        "indexq_budget_window_reset_timestamp_seconds",
        Kind::Gauge,
        "When a budget rule's current window ends and the next one opens",
    );
    let mut reset_in = Family::new(
        "indexq_budget_window_reset_seconds",
        Kind::Gauge,
        "Seconds from when these metrics were made until a budget rule's window reopens",
    );
    let google_project = crate::engines::google::project_id(settings);
    for group in configured {
        let Some(rules) = budget_rules::group_rules(settings, group, google_project.as_deref()) else { continue };
        for state in budget_rules::states(&rules, ledger, now)? {
            let mut labels = group_labels(group);
            labels.extend([
                ("rule", state.rule.id.clone()),
                ("period", state.rule.period.as_str().to_string()),
                ("scope", state.rule.scope.as_str().to_string()),
            ]);
            used.push(labels.clone(), state.usage.used as f64);
            if let Some(l) = state.limit {
                limit.push(labels.clone(), l as f64);
            }
            if let Some(r) = state.remaining {
                remaining.push(labels.clone(), r as f64);
            }
            reset_at.push(labels.clone(), seconds(state.window.resets_at));
            reset_in.push(labels, (state.window.resets_at - now).num_seconds() as f64);
        }
    }
    Ok(vec![used, limit, remaining, reset_at, reset_in])
}

/// Queue items of every group by state: configured ones, then those the
/// configuration no longer has (parked there still needs a human).
fn queue_family(
    settings: &Settings,
    ledger: &mut dyn Ledger,
    configured: &[GroupKey],
    now: DateTime<Utc>,
) -> anyhow::Result<Family> {
    let mut queue = Family::new(
        "indexq_queue_items",
        Kind::Gauge,
        "Queue items by state: due (now), waiting (for a window or a backoff), parked (for a human), in_flight, accepted",
    );
    let mut queued: Vec<(GroupKey, crate::model::QueueCounts)> = Vec::new();
    for group in configured {
        queued.push((group.clone(), ledger.queue_counts(group, now)?));
    }
    queued.extend(crate::attention::stranded_groups(settings, ledger, now)?);
    for (group, counts) in &queued {
        let states = [
            ("due", counts.due),
            ("waiting", counts.waiting),
            ("parked", counts.parked),
            ("in_flight", counts.in_flight),
            ("accepted", counts.accepted),
        ];
        for (state, n) in states {
            let mut labels = group_labels(group);
            labels.push(("state", state.to_string()));
            queue.push(labels, n as f64);
        }
    }
    Ok(queue)
}

/// Attempts by the class of their answer: every class of every configured
/// group (a counter starts at 0), and those of groups that have attempts
/// but are no longer configured.
fn attempts_family(settings: &Settings, ledger: &mut dyn Ledger, configured: &[GroupKey]) -> anyhow::Result<Family> {
    let mut attempts = Family::new(
        "indexq_attempts_total",
        Kind::Counter,
        "URLs attempted since the ledger began, by the class of the answer (one per URL; `queue drop` removes the attempts of the items it drops)",
    );
    let mut counts: BTreeMap<GroupKey, BTreeMap<&'static str, u64>> =
        configured.iter().map(|g| (g.clone(), BTreeMap::new())).collect();
    // Of settings narrowed to some properties (a `serve` token's), only theirs.
    for (group, class, n) in ledger.outcome_counts()?.into_iter().filter(|(g, _, _)| settings.sees(&g.property)) {
        counts.entry(group).or_default().insert(class.as_str(), n);
    }
    for (group, classes) in &counts {
        for class in CLASSES {
            let mut labels = group_labels(group);
            labels.push(("class", class.as_str().to_string()));
            attempts.push(labels, classes.get(class.as_str()).copied().unwrap_or(0) as f64);
        }
    }
    Ok(attempts)
}

/// Google URL inspections by the class of their answer: every class of
/// every property with `skip_indexed` (a counter starts at 0), and those of
/// properties the ledger has inspections of.
fn inspection_family(settings: &Settings, ledger: &mut dyn Ledger) -> anyhow::Result<Family> {
    let mut family = Family::new(
        "indexq_google_inspections_total",
        Kind::Counter,
        "Google URL inspections (skip_indexed) since the ledger began, by the class of the answer (accepted: indexed or not; the others: published without inspection)",
    );
    let mut counts: BTreeMap<String, BTreeMap<&'static str, u64>> = settings
        .properties
        .iter()
        .filter(|p| p.google.as_ref().is_some_and(|g| g.skip_indexed))
        .map(|p| (p.name.clone(), BTreeMap::new()))
        .collect();
    for c in ledger.inspections()?.into_iter().filter(|c| settings.sees(&c.property)) {
        *counts.entry(c.property).or_default().entry(c.class.as_str()).or_default() += c.count;
    }
    for (property, classes) in &counts {
        for class in INSPECTION_CLASSES {
            let labels = vec![("property", property.clone()), ("class", class.as_str().to_string())];
            family.push(labels, classes.get(class.as_str()).copied().unwrap_or(0) as f64);
        }
    }
    Ok(family)
}

/// What the engines' reports on the configured sitemaps say a human must
/// look at, now: 1 per sitemap, engine and reason (`sitemap_errors`,
/// `sitemap_not_downloaded`, or a read refused); none when all is well.
fn sitemap_family(
    settings: &Settings,
    ledger: &mut dyn Ledger,
    configured: &[GroupKey],
    now: DateTime<Utc>,
) -> anyhow::Result<Family> {
    let mut family = Family::new(
        "indexq_sitemap_problems",
        Kind::Gauge,
        "What an engine's report on a sitemap submitted to it says a human must look at (1 per sitemap, engine and reason); absent when all is well",
    );
    let states: Vec<_> = ledger.sitemap_states()?.into_iter().filter(|s| configured.contains(&s.group)).collect();
    for notice in crate::attention::sitemap_notices(settings, &states, now) {
        let group = &notice.parked.group;
        let labels = vec![
            ("property", group.property.clone()),
            ("engine", group.engine.as_str().to_string()),
            ("sitemap", group.target.clone()),
            ("reason", notice.parked.reminder_key()),
        ];
        family.push(labels, 1.0);
    }
    Ok(family)
}

/// The configured sources that cannot be read: 1 per property, source and
/// reason (`source_not_found`, `source_timeout`, …); none when all read.
fn source_family(settings: &Settings, ledger: &mut dyn Ledger) -> anyhow::Result<Family> {
    let mut family = Family::new(
        "indexq_source_problems",
        Kind::Gauge,
        "A property's source that could not be read when last read (1 per property, source and reason); absent when all read",
    );
    for notice in crate::attention::source_notices(settings, ledger)? {
        let labels = vec![
            ("property", notice.parked.group.property.clone()),
            ("source", notice.parked.url.clone()),
            ("reason", notice.parked.reminder_key()),
        ];
        family.push(labels, 1.0);
    }
    Ok(family)
}

/// The families of the last `submit` run (ledger-wide: on a shared
/// PostgreSQL ledger, the last run of any machine), when these metrics were
/// made, and the build.
fn run_families(last: Option<&RunRecord>, last_ok: Option<&RunRecord>, now: DateTime<Utc>) -> Vec<Family> {
    let mut start = Family::new(
        "indexq_last_run_start_timestamp_seconds",
        Kind::Gauge,
        "When the last `indexq submit` run started",
    );
    let mut duration =
        Family::new("indexq_last_run_duration_seconds", Kind::Gauge, "How long the last `indexq submit` run took");
    let mut code = Family::new(
        "indexq_last_run_exit_code",
        Kind::Gauge,
        "The exit code of the last `indexq submit` run: 0 nothing needs a human, 3 something does, 1 failed, 2 usage error",
    );
    let mut success = Family::new(
        "indexq_last_success_timestamp_seconds",
        Kind::Gauge,
        "When the last `indexq submit` run that exited 0 ended",
    );
    if let Some(run) = last {
        start.push(vec![], seconds(run.started_at));
        duration.push(vec![], (run.ended_at - run.started_at).num_milliseconds().max(0) as f64 / 1000.0);
        code.push(vec![], f64::from(run.exit_code));
    }
    if let Some(run) = last_ok {
        success.push(vec![], seconds(run.ended_at));
    }
    let mut made = Family::new(
        "indexq_metrics_timestamp_seconds",
        Kind::Gauge,
        "When these metrics were made (the ledger's clock); `_reset_seconds` count from here",
    );
    made.push(vec![], seconds(now));
    let mut build = Family::new("indexq_build_info", Kind::Gauge, "The indexq that made these metrics (always 1)");
    build.push(vec![("version", env!("CARGO_PKG_VERSION").to_string())], 1.0);
    vec![start, duration, code, success, made, build]
}

/// The families in the text exposition format, each with its HELP and TYPE.
pub fn render(families: &[Family], out: &mut impl Write) -> io::Result<()> {
    for family in families {
        writeln!(out, "# HELP {} {}", family.name, escape_help(family.help))?;
        writeln!(out, "# TYPE {} {}", family.name, family.kind.as_str())?;
        for sample in &family.samples {
            write!(out, "{}", family.name)?;
            if !sample.labels.is_empty() {
                let labels: Vec<String> =
                    sample.labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect();
                write!(out, "{{{}}}", labels.join(","))?;
            }
            writeln!(out, " {}", value(sample.value))?;
        }
    }
    Ok(())
}

fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// A label value: `\`, `"` and newlines escaped.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A HELP text: `\` and newlines escaped.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// Writes the metrics to `path` as a `submit` run ends (`--metrics-file`),
/// with `run` as the last run, atomically. If the ledger cannot be read
/// (`lost`: a database lost mid-run, or an error reading it) the file still
/// gets this run's families, so monitoring sees the failure; unless the run
/// failed already (`run_failed`), a warning says so.
pub fn write_file(
    settings: &Settings,
    ledger: &mut dyn Ledger,
    path: &std::path::Path,
    run: &RunRecord,
    lost: bool,
    run_failed: bool,
    printer: &Printer,
) -> anyhow::Result<()> {
    let gathered = if lost {
        Err(anyhow::anyhow!("the ledger cannot be reached"))
    } else {
        gather(settings, ledger, run.ended_at, Some(run))
    };
    let families = match gathered {
        Ok(families) => families,
        Err(e) => {
            if !run_failed {
                printer.warn(&format!("the metrics in {} hold only this run: {e:#}", path.display()));
            }
            run_families(Some(run), (run.exit_code == 0).then_some(run), run.ended_at)
        }
    };
    let mut text = Vec::new();
    render(&families, &mut text)?;
    crate::files::write_atomically(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_help_type_and_escaped_labels() {
        let mut family = Family::new("indexq_x_total", Kind::Counter, "Things\\n and a \\ backslash");
        family.push(vec![("property", "a \"b\"\\c\nd".into())], 3.0);
        family.push(vec![], 0.25);
        let mut empty = Family::new("indexq_y", Kind::Gauge, "Nothing yet");
        empty.samples.clear();
        let mut out = Vec::new();
        render(&[family, empty], &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "# HELP indexq_x_total Things\\\\n and a \\\\ backslash\n# TYPE indexq_x_total counter\n\
             indexq_x_total{property=\"a \\\"b\\\"\\\\c\\nd\"} 3\nindexq_x_total 0.25\n\
             # HELP indexq_y Nothing yet\n# TYPE indexq_y gauge\n"
        );
        assert_eq!(value(1_796_288_400.25), "1796288400.25");
        assert_eq!(value(f64::INFINITY), "+Inf");
    }
}
