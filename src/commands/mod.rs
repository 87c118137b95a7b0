//! One file per command. Each takes the resolved `Settings`, the `Printer`
//! and the `Clock`, and returns the exit status it decided.

pub mod completions;
pub mod doctor;
pub mod key;
pub mod log;
pub mod queue;
pub mod status;
pub mod submit;

use crate::config::{LedgerLocation, Settings};
use crate::ledger::SqliteLedger;

/// The exit codes of DESIGN §5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Nothing needs a human (accepted, deferred, queued for retry).
    Ok,
    /// Anything else: I/O error, corrupt ledger.
    Failure,
    /// Usage or configuration error; nothing sent.
    Usage,
    /// Some item is in a `--fail-on` class; the rest was processed.
    NeedsHuman,
}

impl ExitStatus {
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Ok => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::NeedsHuman => 3,
        }
    }
}

/// Opens the configured ledger for reading and writing.
pub fn open_ledger(settings: &Settings) -> anyhow::Result<SqliteLedger> {
    let LedgerLocation::Sqlite(path) = &settings.ledger;
    Ok(SqliteLedger::open(path)?)
}
