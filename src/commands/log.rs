//! `indexq log [--url URL]`: attempts, oldest first, with their classified
//! outcome and the stored (redacted, capped) response body: every attempt
//! of a URL with `--url`, else one entry a request (with how many URLs it
//! carried). An attempt of a URL that `queue drop` removed stays, said to
//! be dropped.

use super::ExitStatus;
use crate::cli::LogArgs;
use crate::clock::{self, Clock};
use crate::config::Settings;
use crate::ledger::open::open_ledger_on_clock;
use crate::model::{EngineKind, Reason};
use crate::output::printer::{rfc3339, Printer};
use serde::Serialize;
use std::io::Write;

#[derive(Serialize)]
struct AttemptJson {
    at: String,
    /// The URL asked about, or the request's first.
    url: String,
    /// How many URLs the request carried.
    urls: u64,
    property: String,
    engine: EngineKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint: Option<String>,
    outcome: String,
    reason: Reason,
    message: String,
    http_status: Option<u16>,
    retry_at: Option<String>,
    body: Option<String>,
    /// `url`'s item was removed by `queue drop` (its attempts stay); written
    /// only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    dropped: bool,
}

pub fn run(settings: &Settings, args: &LogArgs, printer: &Printer, clock: &Clock) -> anyhow::Result<ExitStatus> {
    let mut ledger = open_ledger_on_clock(settings, clock)?;
    let user_tz = clock::user_timezone();
    let url = args.url.as_deref().map(crate::ingest::stored_form);
    let rows = ledger.attempts(url.as_deref(), args.limit)?;
    if printer.json {
        let attempts: Vec<AttemptJson> = rows
            .into_iter()
            .map(|a| AttemptJson {
                at: rfc3339(a.at, user_tz),
                url: a.url,
                urls: a.urls,
                endpoint: a.group.endpoint().map(str::to_string),
                property: a.group.property,
                engine: a.group.engine,
                outcome: a.class.to_string(),
                reason: a.reason,
                message: a.message,
                http_status: a.http_status,
                retry_at: a.retry_at.map(|t| rfc3339(t, user_tz)),
                body: a.body,
                dropped: a.dropped,
            })
            .collect();
        printer.json(&serde_json::json!({ "now": rfc3339(clock.now(), user_tz), "attempts": attempts }))?;
        return Ok(ExitStatus::Ok);
    }
    let mut out = printer.stdout();
    if rows.is_empty() {
        writeln!(out, "No attempts recorded{}.", args.url.as_ref().map(|u| format!(" for {u}")).unwrap_or_default())?;
    }
    for a in rows {
        let status = a.http_status.map(|s| format!(" HTTP {s}")).unwrap_or_default();
        // A URL `queue drop` removed (a ledger of schema 3 or older did not keep it).
        let url = match (a.dropped, a.url.is_empty()) {
            (false, _) => a.url,
            (true, false) => format!("{} (dropped)", a.url),
            (true, true) => "(a URL dropped from the queue)".to_string(),
        };
        let others = match a.urls {
            0 | 1 => String::new(),
            n => format!(" (and {} more URL{} in the request)", n - 1, if n == 2 { "" } else { "s" }),
        };
        writeln!(
            out,
            "{}  {} {}  {}{others}  {} ({}){status}",
            clock::format_local(a.at, user_tz),
            a.group.engine,
            a.group.property,
            url,
            a.class,
            a.reason
        )?;
        writeln!(out, "    {}", a.message)?;
        if let Some(t) = a.retry_at {
            writeln!(out, "    retry at {}", clock::format_local(t, user_tz))?;
        }
        if let Some(body) = a.body.as_deref().filter(|b| !b.trim().is_empty()) {
            for line in body.lines().take(20) {
                writeln!(out, "    | {line}")?;
            }
        }
    }
    Ok(ExitStatus::Ok)
}
