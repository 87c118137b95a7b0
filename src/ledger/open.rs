//! The configured ledger, opened, and its clock followed: what every
//! command, the pipeline and `serve` do before they read or write it.

use super::{Ledger, LedgerTime, Now};
use crate::clock::Clock;
use crate::config::Settings;

/// Opens the configured ledger for reading and writing.
pub fn open_ledger(settings: &Settings) -> anyhow::Result<Box<dyn Ledger + Send>> {
    super::open(&settings.ledger, &settings.ledger_options)
}

/// What "now" is for the ledger: this machine's clock and how far
/// `INDEXQ_NOW` shifted it.
pub fn now(clock: &Clock) -> Now {
    Now { local: clock.now(), shift: clock.pinned_shift() }
}

/// Sets `clock` to the ledger's (docs/design.md, *One clock*): never earlier than
/// any run has seen, and on PostgreSQL the database server's. With
/// `record`, this run's instant is recorded as the latest seen.
pub fn follow_ledger_clock(ledger: &mut dyn Ledger, clock: &Clock, record: bool) -> anyhow::Result<LedgerTime> {
    let asked = now(clock);
    let time = ledger.now(asked, record)?;
    clock.follow_since(time.now, asked.local);
    Ok(time)
}

/// Opens the configured ledger, and sets `clock` to its clock.
pub fn open_ledger_on_clock(settings: &Settings, clock: &Clock) -> anyhow::Result<Box<dyn Ledger + Send>> {
    let mut ledger = open_ledger(settings)?;
    follow_ledger_clock(ledger.as_mut(), clock, false)?;
    Ok(ledger)
}

/// The configured ledger, for a dry run that only reads it
/// (`ledger::open_to_read`).
pub fn open_ledger_to_read(settings: &Settings) -> anyhow::Result<Box<dyn Ledger + Send>> {
    super::open_to_read(&settings.ledger, &settings.ledger_options)
}
