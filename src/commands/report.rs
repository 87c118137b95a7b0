//! `indexq report --html FILE [--days N]`: one self-contained HTML file
//! about the budget over time — per property, engine and endpoint, the URLs
//! counted per day against the day's limit and the answers by class, the
//! budget now, and what is parked with the fix (`crate::report` gathers it and
//! renders it). Written atomically; `-` writes it to stdout.

use super::ExitStatus;
use crate::cli::ReportArgs;
use crate::clock::{self, Clock};
use crate::config::Settings;
use crate::ledger::open::open_ledger_on_clock;
use crate::output::printer::{rfc3339, Printer};
use crate::report::{self, html};
use std::io::Write;
use std::path::Path;

pub fn run(settings: &Settings, args: &ReportArgs, printer: &Printer, clock: &Clock) -> anyhow::Result<ExitStatus> {
    let mut ledger = open_ledger_on_clock(settings, clock)?;
    let now = clock.now();
    let user_tz = clock::user_timezone();
    let history = report::gather(settings, ledger.as_mut(), now, args.days)?;
    let mut page = Vec::new();
    html::write(&history, &html::Page { ledger: &settings.ledger.display(), user_tz }, &mut page)?;
    let to_stdout = args.html == Path::new("-");
    if to_stdout {
        let mut out = printer.document();
        out.write_all(&page)?;
        out.flush()?;
    } else {
        crate::files::write_atomically(&args.html, &page)?;
    }
    let parked: u64 = history.groups.iter().map(|g| g.queue.parked).sum();
    if printer.json && !to_stdout {
        printer.json(&serde_json::json!({
            "now": rfc3339(now, user_tz),
            "html": args.html.display().to_string(),
            "days": args.days,
            "parked": parked,
        }))?;
    } else if !to_stdout {
        printer.note(&format!(
            "Wrote {} ({} days, {} groups{}).",
            args.html.display(),
            args.days,
            history.groups.len(),
            if parked > 0 { format!("; {parked} URLs parked: the fixes are in it") } else { String::new() }
        ));
    }
    Ok(ExitStatus::Ok)
}
