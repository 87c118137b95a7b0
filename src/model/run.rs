//! A `submit` run as recorded when it ends.

use chrono::{DateTime, Utc};

/// One `submit` run, recorded when it ends (for the metrics of the last
/// run and the report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    /// The machine it ran on (`Owner`'s host: `$INDEXQ_HOST`, else the kernel's).
    pub host: String,
    /// Millisecond precision (what both backends keep).
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    /// The process's exit code (README, *Output and exit codes*).
    pub exit_code: u8,
}

impl RunRecord {
    /// `t` to the millisecond, as a run record keeps it.
    pub fn millis(t: DateTime<Utc>) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
    }
}
