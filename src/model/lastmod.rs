//! What a `lastmod` means once read: an instant the site wrote, or a date
//! it wrote without a time. Both are kept as one instant (the ledger's
//! `lastmod` column, whole seconds): a date as 00:00:00 UTC of that date,
//! which is how indexq has always kept it. So an instant at exactly
//! 00:00:00 UTC reads back as a date — a generator that writes a date as a
//! midnight means the same, and an instant written at that very second is
//! taken for its date, a loss of one day's precision at worst.
//!
//! The day a date names is the property's: its `timezone` says when that
//! day begins and ends.

use chrono::{DateTime, NaiveDate, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

/// A date written without a time, as it is kept: 00:00:00 UTC of `date`.
pub fn of_date(date: NaiveDate) -> DateTime<Utc> {
    date.and_time(NaiveTime::MIN).and_utc()
}

/// The date a kept lastmod was written as, if it was written without a
/// time (it is exactly 00:00:00 UTC).
pub fn date_only(lastmod: DateTime<Utc>) -> Option<NaiveDate> {
    (lastmod.time() == NaiveTime::MIN).then(|| lastmod.date_naive())
}

/// A lastmod as the ledger keeps it: whole seconds (what a sub-second
/// fraction would change is lost on the way in anyway, and a value read
/// again must compare equal to the one kept).
pub fn kept(lastmod: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(lastmod.timestamp(), 0).unwrap_or(lastmod)
}

/// The first instant `lastmod` may mean in `zone`: an instant itself; a
/// date, the start of that day there (the first instant of it when a
/// clock change skips its midnight).
pub fn earliest(lastmod: DateTime<Utc>, zone: Tz) -> DateTime<Utc> {
    match date_only(lastmod) {
        Some(date) => day_start(date, zone),
        None => lastmod,
    }
}

/// Whether `lastmod` had begun by `t` in `zone` (`earliest` is not later
/// than `t`). A day begins at most a day after its midnight in UTC (the
/// zones' offsets and their gaps are under that), so a lastmod a day or more
/// before `t` is decided without the zone's rules.
pub fn begun_by(lastmod: DateTime<Utc>, zone: Tz, t: DateTime<Utc>) -> bool {
    lastmod + chrono::Duration::days(1) <= t || earliest(lastmod, zone) <= t
}

/// The date of `lastmod` in `zone`: a date itself; an instant, the day it
/// falls on there.
pub fn local_date(lastmod: DateTime<Utc>, zone: Tz) -> NaiveDate {
    match date_only(lastmod) {
        Some(date) => date,
        None => lastmod.with_timezone(&zone).date_naive(),
    }
}

/// When `date` begins in `zone`: its midnight, or the earliest instant of
/// the day when a clock change skips midnight (the day then begins at the
/// end of the gap).
pub fn day_start(date: NaiveDate, zone: Tz) -> DateTime<Utc> {
    let mut local = date.and_time(NaiveTime::MIN);
    // A gap is at most a few hours; a quarter-hour step finds its end.
    for _ in 0..=4 * 24 {
        if let Some(t) = zone.from_local_datetime(&local).earliest() {
            return t.with_timezone(&Utc);
        }
        local += chrono::Duration::minutes(15);
    }
    of_date(date)
}

/// The lastmods later than the moment they were read, as a run or a
/// request tells of them: how many, and the first one's URL and value.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct InFuture {
    pub count: u64,
    pub first: Option<(String, DateTime<Utc>)>,
}

impl InFuture {
    /// Counts `lastmod` of `url` (of a property in `zone`) if it is later
    /// than `now`, the moment it was read: an instant after it, or a date
    /// whose day has not yet begun in `zone`.
    pub fn note(&mut self, url: &str, lastmod: Option<DateTime<Utc>>, zone: Tz, now: DateTime<Utc>) {
        if let Some(lastmod) = lastmod.filter(|l| !begun_by(*l, zone, now)) {
            self.count += 1;
            self.first.get_or_insert_with(|| (url.to_string(), lastmod));
        }
    }

    /// The one warning that tells of them all, if there are any; counted
    /// from nothing again.
    pub fn take_warning(&mut self) -> Option<String> {
        let InFuture { count, first } = std::mem::take(self);
        let (url, lastmod) = first?;
        let lastmod = lastmod.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
        let them = match count {
            1 => format!("1 URL has a lastmod in the future ({url}: {lastmod})"),
            n => format!("{n} URLs have a lastmod in the future (the first: {url}: {lastmod})"),
        };
        Some(format!(
            "{them}: each is taken as the moment it was read, and goes again only when its lastmod changes \
             (a typo, a wrong server clock or a scheduled post?)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_is_kept_as_utc_midnight_and_read_back_as_a_date() {
        let date = NaiveDate::from_ymd_opt(2027, 1, 4).unwrap();
        assert_eq!(date_only(of_date(date)), Some(date));
        assert_eq!(date_only(of_date(date) + chrono::Duration::seconds(1)), None);
        assert_eq!(date_only(of_date(date) + chrono::Duration::milliseconds(1)), None);
        let shanghai = chrono_tz::Asia::Shanghai;
        assert_eq!(earliest(of_date(date), shanghai), "2027-01-03T16:00:00Z".parse::<DateTime<Utc>>().unwrap());
        assert_eq!(earliest(of_date(date), Tz::UTC), of_date(date));
        let late: DateTime<Utc> = "2027-01-04T17:00:00Z".parse().unwrap();
        assert_eq!(local_date(late, shanghai), NaiveDate::from_ymd_opt(2027, 1, 5).unwrap());
        assert_eq!(local_date(late, Tz::UTC), date);
    }

    #[test]
    fn lastmods_in_the_future_are_told_once_with_the_first() {
        let now: DateTime<Utc> = "2027-01-04T10:00:00Z".parse().unwrap();
        let mut future = InFuture::default();
        future.note("https://e.com/a", Some(now), Tz::UTC, now);
        future.note("https://e.com/b", None, Tz::UTC, now);
        // The 5th has begun in Shanghai (18:00 UTC on the 4th is 02:00 there).
        let tomorrow = of_date(NaiveDate::from_ymd_opt(2027, 1, 5).unwrap());
        future.note("https://e.com/e", Some(tomorrow), chrono_tz::Asia::Shanghai, now + chrono::Duration::hours(8));
        assert_eq!(future.take_warning(), None, "now is not in the future");
        let later = now + chrono::Duration::seconds(1);
        future.note("https://e.com/c", Some(later), Tz::UTC, now);
        future.note("https://e.com/d", Some(later), Tz::UTC, now);
        future.note("https://e.com/e", Some(tomorrow), Tz::UTC, now + chrono::Duration::hours(8));
        let warning = future.take_warning().unwrap();
        assert!(
            warning
                .starts_with("3 URLs have a lastmod in the future (the first: https://e.com/c: 2027-01-04T10:00:01Z)"),
            "{warning}"
        );
        assert_eq!(future, InFuture::default(), "counted from nothing again");
    }

    /// `begun_by`'s shortcut agrees with `earliest` in the zones furthest
    /// east and west, and across a gap at midnight.
    #[test]
    fn begun_by_agrees_with_earliest() {
        use chrono_tz::{America, Asia, Etc, Pacific};
        let zones =
            [Tz::UTC, Asia::Shanghai, Pacific::Kiritimati, Etc::GMTPlus12, Pacific::Pago_Pago, America::Santiago];
        for date in [NaiveDate::from_ymd_opt(2027, 1, 4).unwrap(), NaiveDate::from_ymd_opt(2022, 9, 11).unwrap()] {
            let lastmod = of_date(date);
            for zone in zones {
                for minutes in (-3 * 24 * 60..=3 * 24 * 60).step_by(30) {
                    let t = lastmod + chrono::Duration::minutes(minutes);
                    assert_eq!(begun_by(lastmod, zone, t), earliest(lastmod, zone) <= t, "{date} {zone} {t}");
                }
            }
        }
    }

    /// A day whose midnight a clock change skips begins when the gap ends
    /// (Santiago moved from 00:00 to 01:00 on 2022-09-11).
    #[test]
    fn a_day_without_a_midnight_begins_after_the_gap() {
        let date = NaiveDate::from_ymd_opt(2022, 9, 11).unwrap();
        let start = day_start(date, chrono_tz::America::Santiago);
        assert_eq!(start, "2022-09-11T04:00:00Z".parse::<DateTime<Utc>>().unwrap());
    }
}
