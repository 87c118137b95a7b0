//! One file per command. Each takes the resolved `Settings`, the `Printer`
//! and the `Clock`, and returns the exit status it decided.

pub mod completions;
pub mod doctor;
pub mod init;
pub mod key;
pub mod ledger;
pub mod log;
pub mod queue;
pub mod report;
pub mod status;
pub mod submit;

pub use crate::error::ExitStatus;

use crate::clock::Clock;
use crate::config::Settings;
use crate::ledger::{Ledger, LedgerTime, Now};
use crate::model::{GroupKey, QueueCounts};

/// Opens the configured ledger for reading and writing.
pub fn open_ledger(settings: &Settings) -> anyhow::Result<Box<dyn Ledger + Send>> {
    crate::ledger::open(&settings.ledger, &settings.ledger_options)
}

/// What "now" is for the ledger: this machine's clock and how far
/// `INDEXQ_NOW` shifted it.
pub fn now(clock: &Clock) -> Now {
    Now { local: clock.now(), shift: clock.pinned_shift() }
}

/// Sets `clock` to the ledger's (DESIGN §2, one clock): never earlier than
/// any run has seen, and on PostgreSQL the database server's. With
/// `record`, this run's instant is recorded as the latest seen.
pub fn follow_ledger_clock(ledger: &mut dyn Ledger, clock: &Clock, record: bool) -> anyhow::Result<LedgerTime> {
    let time = ledger.now(now(clock), record)?;
    clock.follow(time.now);
    Ok(time)
}

/// Opens the configured ledger, and sets `clock` to its clock.
pub fn open_ledger_on_clock(settings: &Settings, clock: &Clock) -> anyhow::Result<Box<dyn Ledger + Send>> {
    let mut ledger = open_ledger(settings)?;
    follow_ledger_clock(ledger.as_mut(), clock, false)?;
    Ok(ledger)
}

/// Queue items the configuration no longer sends: their (property, engine,
/// endpoint) group is in the ledger but not in the configuration (a renamed
/// property, a respelled endpoint), with their counts.
pub fn stranded_groups(
    settings: &Settings,
    ledger: &mut dyn Ledger,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Vec<(GroupKey, QueueCounts)>> {
    let configured = crate::budget::groups(settings);
    let mut stranded = Vec::new();
    for group in ledger.stored_groups()? {
        if configured.contains(&group) {
            continue;
        }
        let counts = ledger.queue_counts(&group, now)?;
        if counts.due + counts.waiting + counts.parked + counts.in_flight > 0 {
            stranded.push((group, counts));
        }
    }
    Ok(stranded)
}

/// What to do about stranded items of `group`.
pub fn stranded_hint(group: &GroupKey) -> String {
    let endpoint = if group.target.is_empty() { String::new() } else { format!(" --endpoint {}", group.target) };
    format!(
        "no configured property sends these any more (renamed, or the endpoint respelled?): list them with \
         `indexq queue list --property {p} --engine {e}{endpoint}`, submit their URLs again under the current \
         configuration, then drop them with `indexq queue drop --property {p} --engine {e}{endpoint}`",
        p = group.property,
        e = group.engine.as_str(),
    )
}

/// The configured ledger, for a dry run that only reads it
/// (`ledger::open_to_read`).
pub fn open_ledger_to_read(settings: &Settings) -> anyhow::Result<Box<dyn Ledger + Send>> {
    crate::ledger::open_to_read(&settings.ledger, &settings.ledger_options)
}
