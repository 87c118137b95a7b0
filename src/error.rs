//! The errors a run ends with, and the one place they become what the user
//! sees: the exit code (README, *Output and exit codes*), the error on one line, and its hint.
//!
//! - `UsageError`: a command line that cannot be done (exit 2).
//! - `LedgerError`: what a ledger backend gives, with the driver's error (and
//!   its code) kept as the source.
//! - `ConfigError`: a configuration problem with its place in the file and
//!   its hint (exit 2); `config` makes it from the file's text and spans.
//!
//! Driver errors are recognised by their type and code, walking `source()`,
//! never by their text: a full disk is SQLite's `SQLITE_FULL`, or an I/O
//! error `ENOSPC` / `EFBIG`. This module imports nothing of the crate but,
//! to print, the escaping of human text, so every layer may use it.

use std::error::Error;
use std::io::Write as _;

/// The exit codes (README, *Output and exit codes*), and the errors that end a run with each
/// (`exit_status_of`):
///
/// | code | meaning (README) | an error ends the run with it when |
/// |---|---|---|
/// | 0 | nothing needs a human (accepted, deferred, queued for retry) | stdout was closed (a pipe into `head`) |
/// | 1 | anything else (I/O error, corrupt ledger) | any other error: the ledger's, the network's, a full disk |
/// | 2 | usage or configuration error; nothing sent | a `UsageError`, a `ConfigError`, a ledger newer than this binary |
/// | 3 | some item is in a `--fail-on` class; the rest was processed | never: a command that finished returns it |
/// | 130 | (beyond §5) `submit` stopped by SIGINT (Ctrl-C) | never: the stopped run returns it |
/// | 143 | (beyond §5) `submit` stopped by SIGTERM | never: the stopped run returns it |
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
    /// `submit` was stopped by SIGINT (Ctrl-C): 128 + 2.
    Interrupted,
    /// `submit` was stopped by SIGTERM: 128 + 15.
    Terminated,
}

impl ExitStatus {
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Ok => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::NeedsHuman => 3,
            ExitStatus::Interrupted => 130,
            ExitStatus::Terminated => 143,
        }
    }
}

/// The exit status an error ends a command with (the table on
/// `ExitStatus`): 2 for usage and configuration errors and a ledger newer
/// than this binary (nothing was done; the fix is an upgrade), 0 for a
/// closed stdout, 1 for the rest.
pub fn exit_status_of(err: &anyhow::Error) -> ExitStatus {
    let broken_pipe = err
        .chain()
        .any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe));
    if broken_pipe {
        return ExitStatus::Ok;
    }
    let newer =
        err.chain().any(|e| matches!(e.downcast_ref::<LedgerError>(), Some(LedgerError::Open { newer: true, .. })));
    if newer || err.downcast_ref::<ConfigError>().is_some() || err.downcast_ref::<UsageError>().is_some() {
        ExitStatus::Usage
    } else {
        ExitStatus::Failure
    }
}

/// Prints the error that ended a run (the only fatal error printed): its
/// chain on one line (`error_chain`), with the hint below; returns the exit
/// status. A closed stdout is not an error: nothing is printed.
pub fn print_error(err: &anyhow::Error) -> ExitStatus {
    let status = exit_status_of(err);
    if status == ExitStatus::Ok {
        return status;
    }
    // What an error quotes (an answer, an input, a path) may hold control
    // characters: shown escaped, like all human text.
    let mut stderr = crate::output::escape::stderr();
    let _ = writeln!(stderr, "error: {}", error_chain(&**err));
    if let Some(hint) = hint(err) {
        let _ = writeln!(stderr, "  hint: {hint}");
    }
    status
}

/// What to do about `err`: the configuration's or the ledger's own hint,
/// else the fix for a database lost mid-run or a full disk under the ledger.
fn hint(err: &anyhow::Error) -> Option<String> {
    if let Some(hint) = err.downcast_ref::<ConfigError>().and_then(|c| c.hint.clone()) {
        return Some(hint);
    }
    if let Some(LedgerError::Open { hint: Some(hint), .. }) = err.downcast_ref::<LedgerError>() {
        return Some(hint.clone());
    }
    if LedgerError::is_lost(err) {
        return Some(
            "nothing was sent without a reservation; every URL already in the ledger stays there (queued, or in \
             flight until a later run reconciles it): run again once the database is back (URLs of the input not yet \
             read need the input again)"
                .into(),
        );
    }
    let ledger_disk_full = err.chain().any(|e| e.is::<LedgerError>() && is_disk_full(e));
    ledger_disk_full
        .then(|| "free space on the disk that holds the ledger, or move it (`ledger` / $INDEXQ_LEDGER)".into())
}

/// A ledger error names the ledger: `err`, from a command that used the
/// configured ledger named `ledger` (as messages name it), with that name in front, unless
/// it names it already (opening it does) or is not the ledger's.
pub fn naming_ledger(err: anyhow::Error, ledger: &str) -> anyhow::Error {
    match err.downcast_ref::<LedgerError>() {
        Some(LedgerError::Open { .. }) | None => err,
        Some(_) => err.context(format!("ledger {ledger}")),
    }
}

/// A configuration problem, located in the file (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{place}: {message}")]
pub struct ConfigError {
    pub place: String,
    pub message: String,
    pub hint: Option<String>,
}

/// A usage error found before anything was sent (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A database driver's error, kept as the source of a `LedgerError`.
pub type DriverError = Box<dyn Error + Send + Sync + 'static>;

/// Errors a ledger gives: the message names the ledger; the driver's error,
/// with its code, is kept as the source.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("ledger {path}: {message}")]
    Open {
        path: String,
        message: String,
        hint: Option<String>,
        /// The ledger's schema is newer than this binary knows (exit 2).
        newer: bool,
        #[source]
        source: Option<Box<LedgerError>>,
    },
    /// SQLite's database stayed locked by another run beyond the wait.
    #[error("ledger: the database is busy")]
    Busy(#[source] DriverError),
    #[error("the ledger has schema version {found}, newer than this indexq knows ({known})")]
    Newer { found: i64, known: i64 },
    /// The database cannot be reached, or stopped answering (PostgreSQL):
    /// what the driver said on one line (`message`, no secret in it), and
    /// its error.
    #[error("the database cannot be reached: {message}")]
    Unavailable {
        message: String,
        #[source]
        source: DriverError,
    },
    /// The database aborted a transaction (a deadlock); it is run again.
    #[error("the database aborted a transaction")]
    Retry,
    /// SQLite refused a statement (a full disk, a damaged file, …).
    #[error("the SQLite ledger refused a statement")]
    Sqlite(#[source] rusqlite::Error),
    /// PostgreSQL refused a statement: what it said, and its code.
    #[error("the database refused a statement: {message}")]
    Postgres {
        message: String,
        #[source]
        source: postgres::Error,
    },
    /// What the ledger holds makes no sense to this indexq (a value it does
    /// not know, a damaged list), or what was asked of it cannot be done now.
    #[error("ledger: {0}")]
    Invalid(String),
}

impl LedgerError {
    /// Whether `err` comes from a database ledger that cannot be reached.
    pub fn is_lost(err: &anyhow::Error) -> bool {
        err.chain().any(|e| matches!(e.downcast_ref::<LedgerError>(), Some(LedgerError::Unavailable { .. })))
    }

    /// The ledger at `place` has a schema newer than this binary knows.
    pub fn newer(place: &str, found: i64, known: i64) -> LedgerError {
        LedgerError::Open {
            path: place.to_string(),
            message: LedgerError::Newer { found, known }.to_string(),
            hint: Some("upgrade indexq (a newer version wrote this ledger)".into()),
            newer: true,
            source: None,
        }
    }
}

impl From<rusqlite::Error> for LedgerError {
    fn from(err: rusqlite::Error) -> Self {
        match err.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                LedgerError::Busy(Box::new(err))
            }
            _ => LedgerError::Sqlite(err),
        }
    }
}

/// Whether `err` or one of its sources says the disk is full: SQLite's
/// `SQLITE_FULL` (rusqlite's `ErrorCode::DiskFull`), or an I/O error of
/// kind `StorageFull` / `FileTooLarge` (`ENOSPC` / `EFBIG`). By code, not
/// by text: the text differs by driver, version and language.
pub fn is_disk_full(err: &(dyn Error + 'static)) -> bool {
    std::iter::successors(Some(err), |e| (*e).source()).any(|e| {
        let sqlite_full = e
            .downcast_ref::<rusqlite::Error>()
            .is_some_and(|sqlite| sqlite.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull));
        sqlite_full || e.downcast_ref::<std::io::Error>().is_some_and(io_disk_full)
    })
}

fn io_disk_full(io: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    #[cfg(unix)]
    if matches!(io.raw_os_error(), Some(libc::ENOSPC | libc::EFBIG)) {
        return true;
    }
    matches!(io.kind(), ErrorKind::StorageFull | ErrorKind::FileTooLarge)
}

/// An error and its sources on one line, `outer: cause: root cause`; a
/// source whose text the line already holds is not repeated, nor the
/// driver's error under a lost database (its message says it on one line,
/// where PostgreSQL's own text would repeat it over several).
pub fn error_chain(err: &(dyn Error + 'static)) -> String {
    let mut text = String::new();
    for cause in std::iter::successors(Some(err), |e| (*e).source()) {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&cause_text);
        }
        if matches!(cause.downcast_ref::<LedgerError>(), Some(LedgerError::Unavailable { .. })) {
            break;
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn sources_join_on_one_line_without_repeats() {
        let root = Layer("connection refused", None);
        let middle = Layer("tcp connect error: connection refused", Some(Box::new(root)));
        let top = Layer("error sending request", Some(Box::new(middle)));
        assert_eq!(error_chain(&top), "error sending request: tcp connect error: connection refused");
        assert_eq!(error_chain(&Layer("alone", None)), "alone");
    }

    /// A ledger that could not be used because SQLite said `code`, as
    /// `SqliteLedger::open` reports it, under a command's context.
    fn ledger_refused(code: std::ffi::c_int, text: &str) -> anyhow::Error {
        let sqlite = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), Some(text.into()));
        let open = LedgerError::Open {
            path: "/var/lib/indexq/ledger.db".into(),
            message: "cannot use it".into(),
            hint: None,
            newer: false,
            source: Some(Box::new(LedgerError::from(sqlite))),
        };
        anyhow::Error::new(open).context("submitting")
    }

    #[test]
    fn a_full_disk_is_recognised_by_its_code_not_its_text() {
        let full = ledger_refused(rusqlite::ffi::SQLITE_FULL, "la base de données ou le disque est plein");
        assert!(is_disk_full(&*full));
        assert!(hint(&full).is_some_and(|h| h.starts_with("free space on the disk that holds the ledger")));
        assert_eq!(exit_status_of(&full), ExitStatus::Failure);

        // The words without the code are not a full disk.
        let damaged = ledger_refused(rusqlite::ffi::SQLITE_CORRUPT, "database or disk is full");
        assert!(!is_disk_full(&*damaged));
        assert_eq!(hint(&damaged), None);
        let said = anyhow::Error::new(std::io::Error::other("disk is full: File too large"));
        assert!(!is_disk_full(&*said));

        for io in [
            std::io::Error::from(std::io::ErrorKind::StorageFull),
            std::io::Error::from(std::io::ErrorKind::FileTooLarge),
            #[cfg(unix)]
            std::io::Error::from_raw_os_error(libc::ENOSPC),
            #[cfg(unix)]
            std::io::Error::from_raw_os_error(libc::EFBIG),
        ] {
            let err = anyhow::Error::new(io).context("writing the metrics file");
            assert!(is_disk_full(&*err), "{err:#}");
            // Not the ledger's disk: no hint about the ledger.
            assert_eq!(hint(&err), None, "{err:#}");
        }
    }

    #[test]
    fn each_error_has_its_exit_code() {
        let usage = anyhow::Error::new(UsageError("--out x: not a directory".into()));
        assert_eq!(exit_status_of(&usage), ExitStatus::Usage);
        let config = ConfigError { place: "indexq.toml:1:1: `ledger`".into(), message: "bad".into(), hint: None };
        assert_eq!(exit_status_of(&anyhow::Error::new(config).context("loading")), ExitStatus::Usage);
        let newer = anyhow::Error::new(LedgerError::newer("ledger.db", 9, 2)).context("submitting");
        assert_eq!(exit_status_of(&newer), ExitStatus::Usage);
        let pipe = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe)).context("printing");
        assert_eq!(exit_status_of(&pipe), ExitStatus::Ok);
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        let lost = LedgerError::Unavailable { message: "connection reset".into(), source: Box::new(reset) };
        let lost = anyhow::Error::new(lost);
        assert_eq!(exit_status_of(&lost), ExitStatus::Failure);
        assert!(hint(&lost).is_some_and(|h| h.starts_with("nothing was sent without a reservation")));
        assert_eq!(
            [0, 1, 2, 3],
            [ExitStatus::Ok, ExitStatus::Failure, ExitStatus::Usage, ExitStatus::NeedsHuman].map(ExitStatus::code)
        );
    }

    #[test]
    fn a_ledger_error_is_named_once() {
        let ledger = "/var/lib/indexq/ledger.db";
        let locked = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY);
        let busy = LedgerError::from(rusqlite::Error::SqliteFailure(locked, Some("database is locked".into())));
        let busy = naming_ledger(anyhow::Error::new(busy), ledger);
        assert_eq!(
            error_chain(&*busy),
            "ledger /var/lib/indexq/ledger.db: ledger: the database is busy: database is locked: Error code 5: The \
             database file is locked"
        );
        let opened = naming_ledger(ledger_refused(rusqlite::ffi::SQLITE_FULL, "database or disk is full"), ledger);
        assert_eq!(
            error_chain(&*opened),
            "submitting: ledger /var/lib/indexq/ledger.db: cannot use it: the SQLite ledger refused a statement: \
             database or disk is full: Error code 13: Insertion failed because database is full"
        );
    }

    /// The driver's error stays the source of a busy or lost database: the
    /// chain shows it, and its type is there to be asked.
    #[test]
    fn a_busy_or_lost_database_keeps_the_drivers_error() {
        let locked = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY), None);
        let busy = anyhow::Error::new(LedgerError::from(locked)).context("claiming");
        assert!(matches!(busy.downcast_ref::<LedgerError>(), Some(LedgerError::Busy(_))));
        let driver = busy.chain().find_map(|e| e.downcast_ref::<rusqlite::Error>());
        assert_eq!(driver.and_then(rusqlite::Error::sqlite_error_code), Some(rusqlite::ErrorCode::DatabaseBusy));

        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let message = format!("error connecting to server: {refused}");
        let lost = LedgerError::Unavailable { message, source: Box::new(refused) };
        let lost = anyhow::Error::new(lost).context("submitting");
        assert!(LedgerError::is_lost(&lost));
        assert!(lost.chain().any(|e| e.downcast_ref::<std::io::Error>().is_some()), "{lost:#}");
        assert!(format!("{lost:#}").ends_with(": connection refused"), "{lost:#}");
        // PostgreSQL's own text, over several lines, is not said again.
        let db = Layer("db error", Some(Box::new(Layer("ERROR: canceling statement due to lock timeout", None))));
        let message = "canceling statement due to lock timeout (55P03)".to_string();
        let timed_out = anyhow::Error::new(LedgerError::Unavailable { message, source: Box::new(db) });
        assert!(format!("{timed_out:#}").ends_with(": db error: ERROR: canceling statement due to lock timeout"));
        assert_eq!(
            error_chain(&*timed_out.context("claiming")),
            "claiming: the database cannot be reached: canceling statement due to lock timeout (55P03)"
        );
        // What the driver said is in the message already: not said twice.
        assert_eq!(
            error_chain(&*lost),
            "submitting: the database cannot be reached: error connecting to server: connection refused"
        );
    }
}
