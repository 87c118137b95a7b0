//! `indexq ledger migrate|copy`: the ledger's schema, and moving a ledger
//! between backends (one machine's SQLite file to a shared PostgreSQL
//! database, or back).

use super::ExitStatus;
use crate::cli::{LedgerAction, LedgerArgs};
use crate::config::{ConfigError, LedgerLocation, LedgerOptions, Settings};
use crate::error::UsageError;
use crate::ledger::open::open_ledger;
use crate::ledger::CopyError;
use crate::output::printer::Printer;
use std::io::Write;

pub fn run(settings: &Settings, args: &LedgerArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    match &args.action {
        LedgerAction::Migrate => {
            // Opening migrates (under a lock: many runners, one migration).
            let version = open_ledger(settings)?.schema_version()?;
            let place = settings.ledger.display();
            if printer.json {
                printer.json(&serde_json::json!({ "ledger": place, "schema_version": version }))?;
            } else {
                writeln!(printer.stdout(), "{place}: schema version {version}")?;
            }
        }
        LedgerAction::Copy(copy) => {
            // The value is not shown: it may hold a password.
            let target = LedgerLocation::parse(&copy.to).map_err(|why| ConfigError {
                place: "`--to`".into(),
                message: why.message,
                hint: Some(why.hint.into()),
            })?;
            if target == settings.ledger && copy.schema.is_none() {
                return Err(UsageError("--to names the configured ledger itself".into()).into());
            }
            let schema = copy.schema.as_deref().unwrap_or(&settings.ledger_options.schema);
            crate::config::check_schema_name(schema).map_err(UsageError)?;
            let options = LedgerOptions { schema: schema.to_string(), ..settings.ledger_options.clone() };
            let mut from = open_ledger(settings)?;
            let mut to = crate::ledger::open(&target, &options)
                .map_err(|e| e.context(format!("ledger {}", target.display())))?;
            // One transaction of the target, from one snapshot of the
            // source: killed at any point, the target is left as it was.
            let copied = crate::ledger::copy(from.as_mut(), to.as_mut(), false).map_err(|e| match e {
                CopyError::From(e) => anyhow::Error::from(e),
                CopyError::To(e) => anyhow::Error::from(e).context(format!("ledger {}", target.display())),
            })?;
            let (from, to) = (settings.ledger.display(), target.display());
            if printer.json {
                printer.json(&serde_json::json!({ "from": from, "to": to, "copied": copied }))?;
            } else {
                writeln!(
                    printer.stdout(),
                    "Copied {from} to {to}: {} item(s) written, {} new attempt(s), {} budget window(s).",
                    copied.items,
                    copied.attempts,
                    copied.budget_windows
                )?;
            }
        }
    }
    Ok(ExitStatus::Ok)
}
