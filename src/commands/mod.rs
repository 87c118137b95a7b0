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

use crate::clock::Clock;
use crate::config::{LedgerLocation, Settings};
use crate::ledger::{Ledger, LedgerError, LedgerTime, Now, PgLedger, PgOptions, SqliteLedger};
use crate::model::{GroupKey, QueueCounts};

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

/// The exit status an error ends a command with (DESIGN §5): 2 for usage
/// and configuration errors and a ledger newer than this binary (nothing
/// was done; the fix is an upgrade), 1 for the rest. A closed stdout (a
/// pipe into `head`) is not an error.
pub fn exit_status_of(err: &anyhow::Error) -> ExitStatus {
    let broken_pipe = err
        .chain()
        .any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe));
    if broken_pipe {
        return ExitStatus::Ok;
    }
    let newer =
        err.chain().any(|e| matches!(e.downcast_ref::<LedgerError>(), Some(LedgerError::Open { newer: true, .. })));
    if newer
        || err.downcast_ref::<crate::config::ConfigError>().is_some()
        || err.downcast_ref::<submit::UsageError>().is_some()
    {
        ExitStatus::Usage
    } else {
        ExitStatus::Failure
    }
}

/// Opens the configured ledger for reading and writing.
pub fn open_ledger(settings: &Settings) -> anyhow::Result<Box<dyn Ledger + Send>> {
    open_ledger_at(settings, &settings.ledger, &settings.ledger_options.schema)
}

/// Opens a ledger (a file, or a schema of a database) with the
/// configuration's options: lease, timeout, password.
pub fn open_ledger_at(
    settings: &Settings,
    location: &LedgerLocation,
    schema: &str,
) -> anyhow::Result<Box<dyn Ledger + Send>> {
    let lease = lease(settings);
    Ok(match location {
        LedgerLocation::Sqlite(path) => Box::new(SqliteLedger::open(path)?.with_lease(lease)),
        LedgerLocation::Postgres(url) => Box::new(PgLedger::open(&pg_options(settings, url, schema)?)?),
    })
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

/// The configured ledger, for a dry run that only reads it: a SQLite file
/// that does not exist yet is an empty ledger in memory (no file is made).
/// Opening brings an older schema up to date, as every run does.
pub fn open_ledger_to_read(settings: &Settings) -> anyhow::Result<Box<dyn Ledger + Send>> {
    match &settings.ledger {
        LedgerLocation::Sqlite(path) if !path.exists() => Ok(Box::new(SqliteLedger::in_memory()?)),
        _ => open_ledger(settings),
    }
}

fn lease(settings: &Settings) -> chrono::TimeDelta {
    chrono::TimeDelta::from_std(settings.ledger_options.lease).unwrap_or(chrono::TimeDelta::MAX)
}

/// How to reach a PostgreSQL ledger: the password from the configuration
/// (`ledger_password_env`/`_file`), else `$PGPASSWORD`, else a pgpass file,
/// else the URL's own.
pub fn pg_options(settings: &Settings, url: &str, schema: &str) -> anyhow::Result<PgOptions> {
    let options = &settings.ledger_options;
    let password = match &options.password {
        Some(source) => Some(source.read()?.expose().to_string()),
        None => {
            std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()).or_else(|| crate::ledger::pgpass_password(url))
        }
    };
    Ok(PgOptions {
        url: url.to_string(),
        schema: schema.to_string(),
        password,
        timeout: options.timeout,
        lease: lease(settings),
    })
}
