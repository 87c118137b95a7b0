//! `indexq status`: the format asked for, then the status
//! (`documents::status`) printed, or the metrics in Prometheus' text.

use super::ExitStatus;
use crate::cli::{StatusArgs, StatusFormat};
use crate::clock::{self, Clock};
use crate::config::Settings;
use crate::documents::status::document;
use crate::error::UsageError;
use crate::ledger::open::open_ledger_on_clock;
use crate::output::printer::Printer;
use std::io::Write;

pub fn run(settings: &Settings, args: &StatusArgs, printer: &Printer, clock: &Clock) -> anyhow::Result<ExitStatus> {
    let format = format_of(args, printer)?;
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
    let (doc, human, parked) = document(settings, ledger.as_mut(), now, user_tz)?;
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

/// The format asked for: `--format`, or `--json`, never both.
fn format_of(args: &StatusArgs, printer: &Printer) -> anyhow::Result<StatusFormat> {
    Ok(match (args.format, printer.json) {
        (Some(StatusFormat::Human | StatusFormat::Prometheus), true) => {
            return Err(UsageError("--json and --format human|prometheus ask for two formats: choose one".into()).into())
        }
        (None | Some(StatusFormat::Json), true) => StatusFormat::Json,
        (format, false) => format.unwrap_or(StatusFormat::Human),
    })
}
