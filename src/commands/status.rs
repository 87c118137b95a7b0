//! `indexq status`: first what needs a human (parked items per group and
//! reason, with the fix), then per property × engine (× endpoint), each
//! budget rule's use in its current window and when it reopens (in the
//! rule's timezone, the user's, and relative), queue counts, and the last
//! rejection.

use super::{open_ledger_on_clock, ExitStatus};
use crate::budget;
use crate::cli::{StatusArgs, StatusFormat};
use crate::clock::{self, Clock};
use crate::config::Settings;
use crate::error::UsageError;
use crate::model::QueueCounts;
use crate::model::{EngineKind, Reason};
use crate::output::printer::{group_title, rfc3339, when, Printer};
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
}

pub fn run(settings: &Settings, args: &StatusArgs, printer: &Printer, clock: &Clock) -> anyhow::Result<ExitStatus> {
    let format = match (args.format, printer.json) {
        (Some(StatusFormat::Human | StatusFormat::Prometheus), true) => {
            return Err(UsageError("--json and --format human|prometheus ask for two formats: choose one".into()).into())
        }
        (None | Some(StatusFormat::Json), true) => StatusFormat::Json,
        (format, false) => format.unwrap_or(StatusFormat::Human),
    };
    let mut ledger = open_ledger_on_clock(settings, clock)?;
    let now = clock.now();
    if format == StatusFormat::Prometheus {
        let families = crate::metrics::gather(settings, ledger.as_mut(), now, None)?;
        let mut out = std::io::BufWriter::new(printer.document());
        crate::metrics::render(&families, &mut out)?;
        out.flush()?;
        return Ok(ExitStatus::Ok);
    }
    let user_tz = clock::user_timezone();
    let mut doc = StatusJson {
        now: rfc3339(now, user_tz),
        timezone: user_tz.name().to_string(),
        budgets: Vec::new(),
        queue: QueueCounts::default(),
        groups: Vec::new(),
        stranded: Vec::new(),
        parked: Vec::new(),
    };
    let parked = crate::history::parked_notices(settings, ledger.as_mut())?;
    doc.parked = parked.iter().map(|p| p.json(user_tz)).collect();
    let mut human = Vec::new();
    let google_project = crate::engines::google::project_id(settings);
    for group in budget::groups(settings) {
        let Some(rules) = budget::group_rules(settings, &group, google_project.as_deref()) else { continue };
        let endpoint = (!group.target.is_empty()).then(|| group.target.clone());
        writeln!(human, "{}", group_title(&group))?;
        let pool = match group.engine {
            EngineKind::Google => google_project.as_deref(),
            _ => None,
        };
        for state in budget::states(&rules, ledger.as_mut(), now)? {
            let budget::RuleState { rule, window, usage, limit, remaining, blocked } = state;
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
                (true, None) => {
                    (format!(" as {} reports it (not read yet in this window)", group.engine.title()), "local")
                }
                (false, _) if rule.scope == budget::Scope::Pool => match pool {
                    Some(project) => (format!(" for project {project} (shared by its properties)"), "local"),
                    None => (" (shared by all properties)".to_string(), "local"),
                },
                (false, _) => (String::new(), "local"),
            };
            writeln!(
                human,
                "  {}{label} {} ({}): {} used of {limit_text}{} — resets {}",
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
            )?;
            doc.budgets.push(BudgetJson {
                property: group.property.clone(),
                engine: group.engine,
                endpoint: endpoint.clone(),
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
            });
        }
        let counts = ledger.queue_counts(&group, now)?;
        writeln!(
            human,
            "  queue: {} due, {} waiting, {} parked, {} in flight, {} accepted",
            counts.due, counts.waiting, counts.parked, counts.in_flight, counts.accepted
        )?;
        let next = ledger.next_due(&group)?.filter(|t| *t > now);
        if let Some(t) = next {
            writeln!(human, "  next retry: {}", when(t, user_tz, user_tz, now))?;
        }
        let last = ledger.last_rejection(&group)?;
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
        doc.queue.due += counts.due;
        doc.queue.waiting += counts.waiting;
        doc.queue.parked += counts.parked;
        doc.queue.in_flight += counts.in_flight;
        doc.queue.accepted += counts.accepted;
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
        });
    }
    for (group, counts) in crate::budget::stranded_groups(settings, ledger.as_mut(), now)? {
        let hint = crate::budget::stranded_hint(&group);
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
            endpoint: (!group.target.is_empty()).then(|| group.target.clone()),
            queue: counts,
            hint,
        });
    }
    if format == StatusFormat::Json {
        printer.json(&doc)?;
    } else {
        let mut out = printer.stdout();
        writeln!(out, "Now: {} (your timezone: {})", clock::format_local(now, user_tz), user_tz.name())?;
        for notice in &parked {
            writeln!(out, "{}", notice.line(user_tz))?;
        }
        out.write_all(&human)?;
    }
    Ok(ExitStatus::Ok)
}
