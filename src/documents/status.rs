//! What `indexq status` says, and `serve`'s `GET /v1/budget` answers:
//! first what needs a human (parked items per group and
//! reason, with the fix), then per property × engine (× endpoint), each
//! budget rule's use in its current window and when it reopens (in the
//! rule's timezone, the user's, and relative), queue counts, and the last
//! rejection; for a Google property with `skip_indexed`, its URL
//! inspections: their budget, their answers per class and the last failure;
//! for a sitemap submitted to an engine, when it was, and what the engine
//! last reported of it (read when, submitted, downloaded, pending, errors,
//! warnings, URLs) or the read that failed.

use crate::budget_rules;
use crate::clock;
use crate::config::Settings;
use crate::model::QueueCounts;
use crate::model::{EngineKind, Reason};
use crate::output::printer::{group_title, rfc3339, when};
use serde::Serialize;
use std::io::Write;

#[derive(Serialize)]
struct BudgetJson {
    property: String,
    engine: EngineKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint: Option<String>,
    /// The rule's id (as the metrics label it) and whom it binds: `property` or `pool`.
    rule: String,
    scope: &'static str,
    period: &'static str,
    window: String,
    used: u64,
    limit: Option<u64>,
    remaining: Option<u64>,
    /// `engine` when the limit is what the engine reported, `local` for the ledger's own rules.
    source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reported_at: Option<String>,
    resets_at: String,
    /// The same moment in the user's timezone.
    resets_at_local: String,
    resets_in_secs: i64,
    timezone: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    blocked_until: Option<String>,
}

#[derive(Serialize)]
struct RejectionJson {
    at: String,
    url: String,
    outcome: String,
    reason: Reason,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    http_status: Option<u16>,
}

#[derive(Serialize)]
struct GroupJson {
    property: String,
    engine: EngineKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint: Option<String>,
    queue: QueueCounts,
    last_rejection: Option<RejectionJson>,
    /// How long the queued URLs take at the daily budget, where the group
    /// has one and more URLs wait than a day of it covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    backlog: Option<budget_rules::Backlog>,
}

/// Queue items of a group the configuration no longer has.
#[derive(Serialize)]
struct StrandedJson {
    property: String,
    engine: EngineKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint: Option<String>,
    queue: QueueCounts,
    hint: String,
}

/// A Google property's URL inspections (`skip_indexed`).
#[derive(Serialize)]
struct InspectionsJson {
    property: String,
    site_url: String,
    /// The inspection budget: the property's rules (a day, a minute).
    budgets: Vec<BudgetJson>,
    /// Inspections per class of answer since the ledger began.
    answers: std::collections::BTreeMap<&'static str, u64>,
    /// The latest answer that said neither indexed nor not.
    last_failure: Option<InspectionFailureJson>,
}

#[derive(Serialize)]
struct InspectionFailureJson {
    at: String,
    outcome: String,
    reason: Reason,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    http_status: Option<u16>,
}

/// A sitemap submitted to an engine: when, and what the engine last
/// reported of it.
#[derive(Serialize)]
struct SitemapJson {
    property: String,
    engine: EngineKind,
    sitemap: String,
    /// When the sitemap was last submitted (accepted) to the engine.
    submitted_at: Option<String>,
    /// When indexq last read the engine's report, and whether that read
    /// failed (`read_failure`); the report's fields are the last one read.
    read_at: Option<String>,
    /// Whether the engine lists the sitemap (absent: never read).
    #[serde(skip_serializing_if = "Option::is_none")]
    listed: Option<bool>,
    /// The engine's own word on when it was submitted, and last downloaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    engine_submitted_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    downloaded_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    errors: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warnings: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    urls: Option<u64>,
    /// Google's `type`, Bing's `Status`.
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    read_failure: Option<InspectionFailureJson>,
}

#[derive(Serialize)]
struct StatusJson {
    now: String,
    timezone: String,
    budgets: Vec<BudgetJson>,
    queue: QueueCounts,
    groups: Vec<GroupJson>,
    /// Items no configured property sends any more.
    stranded: Vec<StrandedJson>,
    /// What needs a human: parked items per group and reason.
    parked: Vec<crate::output::parked::ParkedJson>,
    /// Per Google property with `skip_indexed`: its URL inspections.
    inspections: Vec<InspectionsJson>,
    /// Per sitemap and engine it is submitted to: when, and what the
    /// engine reports of it.
    sitemaps: Vec<SitemapJson>,
}

/// What `status` says, as its `--json` document and as human text (the
/// parked notices apart): `serve`'s `GET /v1/budget` answers the document.
pub(crate) fn document(
    settings: &Settings,
    ledger: &mut dyn crate::ledger::Ledger,
    now: chrono::DateTime<chrono::Utc>,
    user_tz: chrono_tz::Tz,
) -> anyhow::Result<(impl Serialize, Vec<u8>, Vec<crate::model::ParkedNotice>)> {
    let mut doc = StatusJson {
        now: rfc3339(now, user_tz),
        timezone: user_tz.name().to_string(),
        budgets: Vec::new(),
        queue: QueueCounts::default(),
        groups: Vec::new(),
        stranded: Vec::new(),
        parked: Vec::new(),
        inspections: Vec::new(),
        sitemaps: Vec::new(),
    };
    let read = Read {
        settings,
        sitemap_states: ledger.sitemap_states()?,
        inspected: ledger.inspections()?,
        google_project: crate::engines::google::project_id(settings),
        user_tz,
        now,
    };
    // A source that cannot be read first: nothing new of its property comes in meanwhile.
    let mut parked = crate::attention::source_notices(settings, &mut *ledger)?;
    parked.extend(crate::attention::parked_notices(settings, &mut *ledger, now)?);
    doc.parked = parked.iter().map(|p| p.json(user_tz)).collect();
    let mut human = Vec::new();
    for group in budget_rules::groups(settings) {
        group_status(&read, &group, &mut *ledger, &mut doc, &mut human)?;
    }
    stranded_status(settings, &mut *ledger, now, &mut doc, &mut human)?;
    Ok((doc, human, parked))
}

/// What every group's part of the status reads: the configuration, what
/// the ledger holds of sitemaps and inspections, the Google project, and
/// the time.
struct Read<'a> {
    settings: &'a Settings,
    sitemap_states: Vec<crate::model::SitemapState>,
    inspected: Vec<crate::ledger::InspectionCount>,
    google_project: Option<String>,
    user_tz: chrono_tz::Tz,
    now: chrono::DateTime<chrono::Utc>,
}

/// One configured group: its budget rules, queue, last rejection, URL
/// inspections and sitemap, into `doc` and the human text.
fn group_status(
    read: &Read,
    group: &crate::model::GroupKey,
    ledger: &mut dyn crate::ledger::Ledger,
    doc: &mut StatusJson,
    human: &mut Vec<u8>,
) -> anyhow::Result<()> {
    let (settings, user_tz, now) = (read.settings, read.user_tz, read.now);
    let Some(rules) = budget_rules::group_rules(settings, group, read.google_project.as_deref()) else { return Ok(()) };
    let endpoint = group.endpoint().map(str::to_string);
    writeln!(human, "{}", group_title(group))?;
    let pool = match group.engine {
        EngineKind::Google => read.google_project.as_deref(),
        _ => None,
    };
    let mut limits = Vec::new();
    for state in budget_rules::states(&rules, ledger, now)? {
        limits.push((state.rule.period, state.limit));
        let (line, json) = rule_state(group, state, pool, user_tz, now);
        writeln!(human, "  {line}")?;
        doc.budgets.push(json);
    }
    let counts = ledger.queue_counts(group, now)?;
    let last = queue_status(group, &counts, ledger, user_tz, now, human)?;
    let backlog = budget_rules::Backlog::of(counts.due + counts.waiting, limits);
    if let Some(b) = backlog {
        writeln!(human, "  backlog: {b}")?;
    }
    doc.queue.due += counts.due;
    doc.queue.waiting += counts.waiting;
    doc.queue.parked += counts.parked;
    doc.queue.in_flight += counts.in_flight;
    doc.queue.accepted += counts.accepted;
    if let Some(inspections) = inspections(settings, group, ledger, &read.inspected, user_tz, now, human)? {
        doc.inspections.push(inspections);
    }
    if let Some(sitemap) = group.sitemap_url() {
        let state = read.sitemap_states.iter().find(|s| s.group == *group);
        doc.sitemaps.push(sitemap_report(group, sitemap, state, user_tz, human)?);
    }
    doc.groups.push(GroupJson {
        property: group.property.clone(),
        engine: group.engine,
        endpoint,
        queue: counts,
        last_rejection: last.map(|a| RejectionJson {
            at: rfc3339(a.at, user_tz),
            url: a.url,
            outcome: a.class.to_string(),
            reason: a.reason,
            message: a.message,
            http_status: a.http_status,
        }),
        backlog,
    });
    Ok(())
}

/// A group's queue as a person reads it: its counts, the next retry and
/// the last rejection, which it returns.
fn queue_status(
    group: &crate::model::GroupKey,
    counts: &QueueCounts,
    ledger: &mut dyn crate::ledger::Ledger,
    user_tz: chrono_tz::Tz,
    now: chrono::DateTime<chrono::Utc>,
    human: &mut Vec<u8>,
) -> anyhow::Result<Option<crate::ledger::AttemptRow>> {
    writeln!(
        human,
        "  queue: {} due, {} waiting, {} parked, {} in flight, {} accepted",
        counts.due, counts.waiting, counts.parked, counts.in_flight, counts.accepted
    )?;
    let next = ledger.next_due(group)?.filter(|t| *t > now);
    if let Some(t) = next {
        writeln!(human, "  next retry: {}", when(t, user_tz, user_tz, now))?;
    }
    let last = ledger.last_rejection(group)?;
    if let Some(a) = &last {
        writeln!(
            human,
            "  last rejection: {} {} ({}{}): {}",
            clock::format_local(a.at, user_tz),
            a.class,
            a.reason,
            a.http_status.map(|s| format!(", HTTP {s}")).unwrap_or_default(),
            a.message
        )?;
    }
    Ok(last)
}

/// Queue items of groups the configuration no longer has, with the hint.
fn stranded_status(
    settings: &Settings,
    ledger: &mut dyn crate::ledger::Ledger,
    now: chrono::DateTime<chrono::Utc>,
    doc: &mut StatusJson,
    human: &mut Vec<u8>,
) -> anyhow::Result<()> {
    for (group, counts) in crate::attention::stranded_groups(settings, ledger, now)? {
        let hint = crate::attention::stranded_hint(&group);
        writeln!(
            human,
            "{} — not configured any more: {} queued, {} parked, {} in flight\n  hint: {hint}",
            group_title(&group),
            counts.due + counts.waiting,
            counts.parked,
            counts.in_flight
        )?;
        doc.stranded.push(StrandedJson {
            property: group.property.clone(),
            engine: group.engine,
            endpoint: group.endpoint().map(str::to_string),
            queue: counts,
            hint,
        });
    }
    Ok(())
}

/// One budget rule in its window: the human line (without its indent) and
/// the JSON entry. `pool` names the Google project a pool rule is.
fn rule_state(
    group: &crate::model::GroupKey,
    state: budget_rules::RuleState,
    pool: Option<&str>,
    user_tz: chrono_tz::Tz,
    now: chrono::DateTime<chrono::Utc>,
) -> (String, BudgetJson) {
    let budget_rules::RuleState { rule, window, usage, limit, remaining, blocked } = state;
    let limit_text = limit.map_or("no limit".to_string(), |l| format!("{l}"));
    let (label, source) = match (rule.reported, usage.reported) {
        (true, Some(report)) => (
            format!(
                " as {} reports it ({} left at {}; the ledger has counted since)",
                group.engine.title(),
                report.remaining,
                clock::format_local(report.at, user_tz)
            ),
            "engine",
        ),
        (true, None) => (format!(" as {} reports it (not read yet in this window)", group.engine.title()), "local"),
        (false, _) if rule.scope == budget_rules::Scope::Pool => match pool {
            Some(project) => (format!(" for project {project} (shared by its properties)"), "local"),
            None => (" (shared by all properties)".to_string(), "local"),
        },
        (false, _) => (String::new(), "local"),
    };
    let line = format!(
        "{}{label} {} ({}): {} used of {limit_text}{} — resets {}",
        rule.period.as_str(),
        window.window,
        rule.tz.name(),
        usage.used,
        match (blocked, remaining) {
            (Some(t), _) if t == window.resets_at => ", spent: the server said so".to_string(),
            (Some(t), _) => format!(", refused by the server until {}", when(t, rule.tz, user_tz, now)),
            (None, Some(r)) => format!(", {r} left"),
            (None, None) => String::new(),
        },
        when(window.resets_at, rule.tz, user_tz, now)
    );
    let json = BudgetJson {
        property: group.property.clone(),
        engine: group.engine,
        endpoint: group.endpoint().map(str::to_string),
        rule: rule.id.clone(),
        scope: rule.scope.as_str(),
        period: rule.period.as_str(),
        window: window.window.clone(),
        used: usage.used,
        limit,
        remaining,
        source,
        reported_at: usage.reported.filter(|_| rule.reported).map(|r| rfc3339(r.at, user_tz)),
        resets_at: rfc3339(window.resets_at, rule.tz),
        resets_at_local: rfc3339(window.resets_at, user_tz),
        resets_in_secs: (window.resets_at - now).num_seconds(),
        timezone: rule.tz.name().to_string(),
        blocked_until: blocked.map(|t| rfc3339(t, rule.tz)),
    };
    (line, json)
}

/// A sitemap group's submission and the engine's last report on it, in
/// `human` and as JSON.
fn sitemap_report(
    group: &crate::model::GroupKey,
    sitemap: &str,
    state: Option<&crate::model::SitemapState>,
    user_tz: chrono_tz::Tz,
    human: &mut Vec<u8>,
) -> anyhow::Result<SitemapJson> {
    let title = group.engine.title();
    let local = |t: chrono::DateTime<chrono::Utc>| clock::format_local(t, user_tz);
    let reading = state.and_then(|s| s.reading.as_ref());
    let mut doc = SitemapJson {
        property: group.property.clone(),
        engine: group.engine,
        sitemap: sitemap.to_string(),
        submitted_at: state.and_then(|s| s.submitted_at).map(|t| rfc3339(t, user_tz)),
        read_at: state.and_then(|s| s.read_at).map(|t| rfc3339(t, user_tz)),
        listed: reading.map(|r| r.listed),
        engine_submitted_at: reading.and_then(|r| r.submitted).map(|t| rfc3339(t, user_tz)),
        downloaded_at: reading.and_then(|r| r.downloaded).map(|t| rfc3339(t, user_tz)),
        pending: reading.map(|r| r.pending),
        errors: reading.map(|r| r.errors),
        warnings: reading.map(|r| r.warnings),
        urls: reading.and_then(|r| r.urls),
        status: reading.and_then(|r| r.status.clone()),
        read_failure: None,
    };
    let submitted = state.and_then(|s| s.submitted_at).map_or("not yet".to_string(), local);
    writeln!(human, "  submitted to {title}: {submitted}")?;
    match (reading, state.and_then(|s| s.read_ok_at)) {
        (Some(r), Some(read)) if r.listed => {
            let downloaded = r.downloaded.map_or("never".to_string(), local);
            let urls = r.urls.map(|n| format!(", {n} URLs")).unwrap_or_default();
            let pending = if r.pending { ", pending" } else { "" };
            let status = r.status.as_deref().map(|s| format!(" ({s})")).unwrap_or_default();
            writeln!(
                human,
                "  {title}'s report (read {}): submitted {}, downloaded {downloaded}{pending}, {} errors, {} warnings{urls}{status}",
                local(read),
                r.submitted.map_or("-".to_string(), local),
                r.errors,
                r.warnings
            )?;
        }
        (Some(_), Some(read)) => {
            writeln!(human, "  {title}'s report (read {}): it does not list the sitemap", local(read))?
        }
        _ => writeln!(human, "  {title}'s report: not read yet")?,
    }
    if let Some((failure, at)) = state.and_then(|s| s.failure.as_ref().zip(s.read_at)) {
        writeln!(
            human,
            "  last read failed {} {} ({}{}): {}",
            local(at),
            failure.class,
            failure.reason,
            failure.http_status.map(|s| format!(", HTTP {s}")).unwrap_or_default(),
            failure.message
        )?;
        if let Some(hint) = &failure.hint {
            writeln!(human, "    hint: {hint}")?;
        }
        doc.read_failure = Some(InspectionFailureJson {
            at: rfc3339(at, user_tz),
            outcome: failure.class.to_string(),
            reason: failure.reason,
            message: failure.message.clone(),
            hint: failure.hint.clone(),
            http_status: failure.http_status,
        });
    }
    Ok(doc)
}

/// The URL inspections of a Google group whose property has `skip_indexed`
/// (`None` otherwise): their budget, their answers per class and the last
/// failure, in `human` and as JSON.
fn inspections(
    settings: &Settings,
    group: &crate::model::GroupKey,
    ledger: &mut dyn crate::ledger::Ledger,
    inspected: &[crate::ledger::InspectionCount],
    user_tz: chrono_tz::Tz,
    now: chrono::DateTime<chrono::Utc>,
    human: &mut Vec<u8>,
) -> anyhow::Result<Option<InspectionsJson>> {
    let Some(property) = settings.property(&group.property).filter(|_| group.engine == EngineKind::Google) else {
        return Ok(None);
    };
    let Some(google) = property.google.as_ref().filter(|g| g.skip_indexed) else { return Ok(None) };
    writeln!(human, "  URL inspections (skip_indexed, site_url {}):", google.site_url)?;
    let mut doc = InspectionsJson {
        property: property.name.clone(),
        site_url: google.site_url.clone(),
        budgets: Vec::new(),
        answers: crate::metrics::INSPECTION_CLASSES.iter().map(|c| (c.as_str(), 0)).collect(),
        last_failure: None,
    };
    for state in budget_rules::states(&budget_rules::inspection_rules(property), ledger, now)? {
        let (line, json) = rule_state(group, state, None, user_tz, now);
        writeln!(human, "    {line}")?;
        doc.budgets.push(json);
    }
    let mine: Vec<&crate::ledger::InspectionCount> = inspected.iter().filter(|c| c.property == property.name).collect();
    for c in &mine {
        *doc.answers.entry(c.class.as_str()).or_default() += c.count;
    }
    let answers: Vec<String> = doc.answers.iter().filter(|(_, n)| **n > 0).map(|(c, n)| format!("{n} {c}")).collect();
    writeln!(
        human,
        "    answers since the ledger began: {}",
        if answers.is_empty() { "none".to_string() } else { answers.join(", ") }
    )?;
    let failure = mine.iter().filter(|c| c.class != crate::model::Class::Accepted).max_by_key(|c| c.last.at);
    if let Some(last) = failure.map(|c| &c.last) {
        writeln!(
            human,
            "    last failure: {} {} ({}{}): {}",
            clock::format_local(last.at, user_tz),
            last.class,
            last.reason,
            last.http_status.map(|s| format!(", HTTP {s}")).unwrap_or_default(),
            last.message
        )?;
        if let Some(hint) = &last.hint {
            writeln!(human, "      hint: {hint}")?;
        }
        doc.last_failure = Some(InspectionFailureJson {
            at: rfc3339(last.at, user_tz),
            outcome: last.class.to_string(),
            reason: last.reason,
            message: last.message.clone(),
            hint: last.hint.clone(),
            http_status: last.http_status,
        });
    }
    Ok(Some(doc))
}
