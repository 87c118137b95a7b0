//! Time for the whole program: this module is the only place that reads the
//! system clock or the `INDEXQ_NOW` override, picks the user's timezone, and
//! turns an instant into a quota window (the calendar day or month in some
//! engine's timezone, with its start, end and key). It also parses durations
//! written by users and config, and formats instants, offsets and time deltas
//! for people. It knows nothing about the ledger, engines or HTTP: callers ask
//! "what time is it" and "which window is this", and decide what that means.

use crate::model::Period;
use std::ffi::OsString;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Datelike, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;

/// Environment variable that pins the start of the run to a given instant.
const NOW_VAR: &str = "INDEXQ_NOW";

/// The program's source of "now".
///
/// It remembers a base instant and the monotonic [`Instant`] at which it was
/// created; [`Clock::now`] is the base plus the real time elapsed since. So a
/// clock pinned with `INDEXQ_NOW` still advances during the run, and sleeps
/// behave as they would without the override.
///
/// Once a ledger is open, the clock follows the ledger's: [`Clock::follow_since`]
/// moves it to the instant the ledger decides with (never earlier than any
/// run has seen; on PostgreSQL the database server's clock), so that every
/// window decision of the run uses one notion of now.
#[derive(Debug)]
pub struct Clock {
    base: DateTime<Utc>,
    started: Instant,
    /// How far `INDEXQ_NOW` moved this clock from the machine's wall clock.
    pinned: TimeDelta,
    /// Milliseconds added by `follow_since`.
    followed_ms: AtomicI64,
}

impl Clock {
    /// `INDEXQ_NOW=<RFC 3339 timestamp>` pins the start of the run; the clock
    /// then advances with real elapsed time (so in-run sleeps still work).
    /// Without it (unset or empty), system time.
    pub fn from_env() -> Result<Clock, ClockError> {
        let base = base_from_env_value(std::env::var_os(NOW_VAR))?;
        let wall = Utc::now();
        let mut clock = Clock::starting_at(base.unwrap_or(wall));
        clock.pinned = base.map_or(TimeDelta::zero(), |b| b - wall);
        Ok(clock)
    }

    /// A clock whose `now()` is `at` at the moment of this call.
    pub fn starting_at(at: DateTime<Utc>) -> Clock {
        Clock { base: at, started: Instant::now(), pinned: TimeDelta::zero(), followed_ms: AtomicI64::new(0) }
    }

    /// The current instant: the base plus the real time elapsed since the
    /// clock was made (and what `follow_since` added).
    pub fn now(&self) -> DateTime<Utc> {
        // Both fallbacks need an elapsed time of about 290 million years.
        let elapsed = TimeDelta::from_std(self.started.elapsed()).unwrap_or(TimeDelta::MAX)
            + TimeDelta::milliseconds(self.followed_ms.load(Ordering::Relaxed));
        self.base.checked_add_signed(elapsed).unwrap_or(DateTime::<Utc>::MAX_UTC)
    }

    /// How far `INDEXQ_NOW` shifts this clock from the machine's: a ledger
    /// that keeps its own clock (a database server's) shifts it the same.
    pub fn pinned_shift(&self) -> TimeDelta {
        self.pinned
    }

    /// The clock follows the ledger's: moved by what the ledger said (`at`)
    /// when asked at this clock's `asked`. The time the asking took is not
    /// taken off (a process that stays up and asks often, `serve`, would
    /// drift back by it).
    pub fn follow_since(&self, at: DateTime<Utc>, asked: DateTime<Utc>) {
        let by = (at - asked).num_milliseconds();
        if by != 0 {
            self.followed_ms.fetch_add(by, Ordering::Relaxed);
        }
    }
}

/// Why the clock could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ClockError {
    /// `INDEXQ_NOW` is set but is not an RFC 3339 timestamp.
    #[error(
        "{NOW_VAR}=`{value}` is not a valid timestamp ({reason}); \
         expected RFC 3339 like 2026-12-03T09:00:00+08:00"
    )]
    BadNow { value: String, reason: chrono::ParseError },
    /// `INDEXQ_NOW` is set but is not valid Unicode.
    #[error(
        "{NOW_VAR}=`{value}` is not valid UTF-8; \
         expected RFC 3339 like 2026-12-03T09:00:00+08:00"
    )]
    NotUnicode { value: String },
}

/// The pinned base instant from the raw value of `INDEXQ_NOW`, or `None` if
/// the variable is unset or empty. Kept apart from `from_env` so tests need
/// not touch the process environment.
fn base_from_env_value(value: Option<OsString>) -> Result<Option<DateTime<Utc>>, ClockError> {
    let Some(raw) = value else {
        return Ok(None);
    };
    let Some(text) = raw.to_str() else {
        return Err(ClockError::NotUnicode { value: raw.to_string_lossy().into_owned() });
    };
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match DateTime::parse_from_rfc3339(text) {
        Ok(at) => Ok(Some(at.with_timezone(&Utc))),
        Err(reason) => Err(ClockError::BadNow { value: text.to_string(), reason }),
    }
}

/// The user's own timezone: `$TZ` (a leading `:` stripped) if it parses as a
/// [`Tz`], else [`iana_time_zone::get_timezone`] parsed, else UTC.
///
/// `$TZ` may also be a path into a zoneinfo directory, such as
/// `/usr/share/zoneinfo/Europe/Berlin`; the part after `zoneinfo/` is used.
pub fn user_timezone() -> Tz {
    let from_var = std::env::var("TZ").ok().and_then(|value| tz_from_tz_var(&value));
    if let Some(tz) = from_var {
        return tz;
    }
    iana_time_zone::get_timezone().ok().and_then(|name| name.parse::<Tz>().ok()).unwrap_or(Tz::UTC)
}

/// Interpret the value of `$TZ` as an IANA name, if it is one.
fn tz_from_tz_var(value: &str) -> Option<Tz> {
    let name = value.trim();
    let name = name.strip_prefix(':').unwrap_or(name);
    let name = match name.rfind("zoneinfo/") {
        Some(at) => &name[at + "zoneinfo/".len()..],
        None => name,
    };
    name.parse::<Tz>().ok()
}

/// Parse an IANA timezone name such as `Europe/Berlin` (case-sensitive, as in
/// the tz database); the error is a short reason.
pub fn parse_timezone(name: &str) -> Result<Tz, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("empty timezone name".to_string());
    }
    name.parse::<Tz>().map_err(|_| format!("unknown timezone `{name}`"))
}

/// One calendar day or month in a timezone: the half-open interval
/// `[start, end)`, where `end` is the start of the next window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub period: Period,
    pub tz: Tz,
    pub start: DateTime<Tz>,
    pub end: DateTime<Tz>,
    /// The local calendar date (`2026-12-03`) or month (`2026-12`) in `tz`
    /// that the window covers.
    pub key: String,
}

/// The calendar day or month in `tz` that contains instant `at`. `end` is the
/// start of the next window. Days are not always 24 hours long: a day on which
/// DST starts or ends is 23 or 25 hours (or another length) long.
///
/// Windows run from [`start_of_day`] to [`start_of_day`], so they tile time
/// without gaps or overlaps. Where local time steps back across midnight
/// (America/St_Johns moved clocks back from 00:01 to 23:01 until 2011), the
/// repeated late-evening minutes come after the new day has started, so they
/// belong to the new day's window even though the wall clock shows the old
/// date.
pub fn window_at(period: Period, tz: Tz, at: DateTime<Utc>) -> Window {
    if period == Period::Minute {
        let start = at
            - TimeDelta::nanoseconds(i64::from(at.timestamp_subsec_nanos()))
            - TimeDelta::seconds(at.timestamp().rem_euclid(60));
        let local = start.with_timezone(&tz);
        return Window {
            period,
            tz,
            start: local,
            end: (start + TimeDelta::minutes(1)).with_timezone(&tz),
            key: local.format("%Y-%m-%dT%H:%M").to_string(),
        };
    }
    let local_date = at.with_timezone(&tz).date_naive();
    let mut first = first_day_of(period, local_date);
    let mut window = window_from(period, tz, first);
    // Usually `at` is already inside; after a backward step across midnight it
    // is one window later. The bound only guards against looping at the far
    // edge of chrono's date range, where windows can be empty.
    for _ in 0..3 {
        let nearby = if at < window.start {
            first_day_of(period, first.pred_opt().unwrap_or(first))
        } else if at >= window.end {
            first_day_of(period, next_first_day(period, first))
        } else {
            break;
        };
        first = nearby;
        window = window_from(period, tz, first);
    }
    window
}

/// The window of `period` that begins on local date `first`.
fn window_from(period: Period, tz: Tz, first: NaiveDate) -> Window {
    let key = match period {
        Period::Minute | Period::Day => first.format("%Y-%m-%d"),
        Period::Month => first.format("%Y-%m"),
    };
    Window {
        period,
        tz,
        start: start_of_day(tz, first),
        end: start_of_day(tz, next_first_day(period, first)),
        key: key.to_string(),
    }
}

/// The first local date of the day or month containing `date`.
fn first_day_of(period: Period, date: NaiveDate) -> NaiveDate {
    match period {
        Period::Minute | Period::Day => date,
        Period::Month => first_of_month(date.year(), date.month()),
    }
}

/// The first local date of the window after the one starting on `first`.
fn next_first_day(period: Period, first: NaiveDate) -> NaiveDate {
    match period {
        // chrono's dates end in year 262143, far beyond any instant this
        // program sees; at that edge the same date comes back instead of a
        // panic.
        Period::Minute | Period::Day => first.succ_opt().unwrap_or(first),
        Period::Month if first.month() == 12 => first_of_month(first.year() + 1, 1),
        Period::Month => first_of_month(first.year(), first.month() + 1),
    }
}

/// The first day of a month. Callers pass a month in 1..=12 and a year taken
/// from (or one after) an existing date; the fallback only matters at the
/// very end of chrono's range.
fn first_of_month(year: i32, month: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(year, month, 1).unwrap_or(NaiveDate::MAX)
}

/// The first instant of local date `date` in `tz`: local 00:00, or if 00:00
/// does not exist that day (DST jumps at midnight, e.g. America/Havana in
/// March), the earliest existing local time after it; if 00:00 is ambiguous,
/// the earlier instant.
///
/// If a timezone skipped the whole date (Pacific/Apia skipped 2011-12-30),
/// the result is the first instant of the next existing date.
pub fn start_of_day(tz: Tz, date: NaiveDate) -> DateTime<Tz> {
    let midnight = date.and_time(chrono::NaiveTime::MIN);
    match tz.from_local_datetime(&midnight) {
        LocalResult::Single(at) => at,
        LocalResult::Ambiguous(earlier, later) => earlier.min(later),
        LocalResult::None => first_instant_at_or_after(tz, midnight),
    }
}

/// The earliest instant whose local time in `tz` is at or after `local`,
/// used when `local` falls in a gap.
///
/// Every offset in the tz data, historical local mean times included, lies
/// within ±16 hours, so the end of the gap is within 16 hours of `local` read
/// as UTC: before `lo` every instant shows a local time before `local`, and
/// from `hi` on every instant shows one at or after it. Between them local
/// time only moves forward unless a backward transition sits within hours of
/// the gap, which the tz data does not have; so a binary search on whole
/// seconds (transitions fall on whole seconds) finds the end of the gap.
fn first_instant_at_or_after(tz: Tz, local: NaiveDateTime) -> DateTime<Tz> {
    let target = local.and_utc().timestamp();
    let shows_at_or_after = |secs: i64| -> bool {
        match DateTime::from_timestamp(secs, 0) {
            Some(at) => at.with_timezone(&tz).naive_local() >= local,
            None => true,
        }
    };
    // Invariant: shows_at_or_after(lo) is false, shows_at_or_after(hi) is true.
    let mut lo = target - 16 * 3600;
    let mut hi = target + 16 * 3600;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if shows_at_or_after(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let at = DateTime::from_timestamp(hi, 0).unwrap_or(DateTime::<Utc>::MAX_UTC);
    at.with_timezone(&tz)
}

/// The longest duration [`parse_duration`] accepts: 36500 days (about 100
/// years), so adding any parsed duration to a real date never overflows.
const MAX_DURATION_SECS: u64 = 36_500 * 86_400;

const DURATION_FORMS: &str = "expected a whole number with a unit s, m, h or d \
                              (e.g. 0, 90s, 5m, 2h, 3d, 1h30m)";

/// Durations as written by users and config: `0`, `0s`, `90s`, `5m`, `2h`,
/// `3d`, and combinations like `1h30m` or `2d 12h`. Whitespace around and
/// between parts is allowed. Units are `s`, `m` (minutes), `h` and `d`, each
/// used at most once and from largest to smallest. Numbers are whole and
/// non-negative: fractions like `1.5h` are rejected (write `1h30m`). A bare
/// number is only accepted for `0`. At most 36500d.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let text = s.trim();
    if text.is_empty() {
        return Err(format!("empty duration; {DURATION_FORMS}"));
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.starts_with('-') {
        return Err(format!("negative duration `{text}` is not allowed; {DURATION_FORMS}"));
    }

    let too_long = || format!("duration `{text}` is too long; the longest accepted is 36500d");
    let mut total: u64 = 0;
    // Size of the last unit used, so units must strictly decrease.
    let mut last_unit: Option<u64> = None;
    let mut rest = text;
    while !rest.is_empty() {
        let digits_len = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let (digits, after) = rest.split_at(digits_len);
        if digits.is_empty() {
            return Err(format!("expected a number at `{rest}` in `{text}`; {DURATION_FORMS}"));
        }
        if after.starts_with(['.', ',']) {
            return Err(format!(
                "fractional numbers are not accepted in `{text}`; \
                 combine units instead, e.g. 1h30m rather than 1.5h"
            ));
        }
        let unit_len = after.find(|c: char| !c.is_alphabetic()).unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let unit_secs: u64 = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3_600,
            "d" => 86_400,
            "" => return Err(format!("missing unit after `{digits}` in `{text}`; {DURATION_FORMS}")),
            other => return Err(format!("unknown unit `{other}` in `{text}`; {DURATION_FORMS}")),
        };
        if last_unit.is_some_and(|last| unit_secs >= last) {
            return Err(format!(
                "unit `{unit}` repeated or out of order in `{text}`; \
                 write units from largest to smallest, each once, e.g. 1d2h30m"
            ));
        }
        last_unit = Some(unit_secs);

        let number: u64 = digits.parse().map_err(|_| too_long())?;
        total = number
            .checked_mul(unit_secs)
            .and_then(|secs| total.checked_add(secs))
            .filter(|&secs| secs <= MAX_DURATION_SECS)
            .ok_or_else(too_long)?;
        rest = after.trim_start();
    }
    Ok(Duration::from_secs(total))
}

/// Relative time a person reads, e.g. `0 s`, `40 s`, `5 min`, `6 h 12 min`,
/// `2 d 3 h`.
///
/// Rule: under a minute, whole seconds; under an hour, whole minutes; under a
/// day, hours and minutes; from a day on, days and hours. So at most the two
/// largest units, and a zero second unit is left out (`2 h`, not `2 h 0 min`).
/// Smaller parts are truncated, never rounded up (5 min 59 s reads `5 min`).
/// Negative deltas read as `0 s`.
pub fn humanize(d: TimeDelta) -> String {
    let secs = d.num_seconds().max(0);
    let (days, hours, mins) = (secs / 86_400, secs % 86_400 / 3_600, secs % 3_600 / 60);
    if secs < 60 {
        format!("{secs} s")
    } else if secs < 3_600 {
        format!("{mins} min")
    } else if secs < 86_400 {
        if mins == 0 {
            format!("{hours} h")
        } else {
            format!("{hours} h {mins} min")
        }
    } else if hours == 0 {
        format!("{days} d")
    } else {
        format!("{days} d {hours} h")
    }
}

/// `2026-12-03 00:00 America/Los_Angeles`: the local time in `tz` to the
/// minute (truncated), then the timezone name.
pub fn format_local(at: DateTime<Utc>, tz: Tz) -> String {
    format!("{} {}", at.with_timezone(&tz).format("%Y-%m-%d %H:%M"), tz.name())
}

/// The UTC offset of `tz` at that instant, like `+08:00` or `-07:00` (with
/// seconds only for the historical offsets that have them).
pub fn format_offset(at: DateTime<Utc>, tz: Tz) -> String {
    at.with_timezone(&tz).offset().fix().to_string()
}

/// The real wall-clock time, whatever `INDEXQ_NOW` says: for what another
/// party checks against its own clock (the `iat` of a signed token).
pub fn wall_now() -> DateTime<Utc> {
    Utc::now()
}

#[cfg(test)]
mod tests;
