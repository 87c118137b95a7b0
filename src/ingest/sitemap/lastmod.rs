//! `<lastmod>`: W3C datetimes, and the forms generators write besides; and
//! the RFC 822 dates of an RSS feed's `<pubDate>`.

use crate::model::lastmod;
use chrono::{DateTime, FixedOffset, NaiveDate, NaiveTime, TimeZone, Utc};

/// Parses a sitemap lastmod: W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD, YYYY-MM-DDThh:mmTZD, with seconds and
/// fractions); a value without a time is a date, kept as `model::lastmod::of_date` keeps it (its first day for a year
/// or a month). None if unparseable.
///
/// Also accepted, as generators write them: a space or `t` for `T`, `z` for `Z`, `+hhmm` and `+hh` offsets, and a
/// time without offset, taken as UTC.
pub(super) fn parse_lastmod(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    fixed_form(s.as_bytes()).or_else(|| any_form(s))
}

/// Parses an RSS `<pubDate>`: an RFC 822 date as RFC 2822 reads it (the
/// weekday optional, a two-digit year, the zone as an offset or a name such
/// as `GMT` or `EST`). None without a zone, or if unparseable.
pub(super) fn parse_rfc822(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc2822(s.trim()).ok().map(|d| d.with_timezone(&Utc))
}

/// The three forms nearly every generator writes, read by their bytes' places:
/// `YYYY-MM-DD`, `YYYY-MM-DDThh:mm:ssZ` and `YYYY-MM-DDThh:mm:ss±hh:mm`. `None`
/// for anything else, or a value that is not a time: `any_form` reads those (a
/// test requires both to agree on every value this reads). Splitting by
/// separators took a noticeable share of a sitemap's parse; reading fixed
/// places takes a small fraction of that (docs/performance.md, *Measured
/// choices*).
fn fixed_form(s: &[u8]) -> Option<DateTime<Utc>> {
    let number = |b: &[u8]| b.iter().try_fold(0u32, |n, &c| c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0')));
    if s.len() < 10 || s[4] != b'-' || s[7] != b'-' {
        return None;
    }
    // Four digits fit in i32.
    let date = NaiveDate::from_ymd_opt(number(&s[..4])? as i32, number(&s[5..7])?, number(&s[8..10])?)?;
    if s.len() == 10 {
        return Some(lastmod::of_date(date));
    }
    if !matches!(s.len(), 20 | 25) || s[10] != b'T' || s[13] != b':' || s[16] != b':' {
        return None;
    }
    let time = NaiveTime::from_hms_opt(number(&s[11..13])?, number(&s[14..16])?, number(&s[17..19])?)?;
    let east = match (s.len(), s[19]) {
        (20, b'Z') => 0,
        (25, sign @ (b'+' | b'-')) if s[22] == b':' => {
            let (hours, minutes) = (number(&s[20..22])?, number(&s[23..25])?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            // At most 23:59, in seconds: fits in i32.
            let seconds = (hours * 3600 + minutes * 60) as i32;
            if sign == b'-' {
                -seconds
            } else {
                seconds
            }
        }
        _ => return None,
    };
    let local = date.and_time(time);
    Some(FixedOffset::east_opt(east)?.from_local_datetime(&local).single()?.with_timezone(&Utc))
}

/// Any form `parse_lastmod` takes (`s` trimmed).
fn any_form(s: &str) -> Option<DateTime<Utc>> {
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some(s[i + 1..].trim_start())),
        None => (s, None),
    };
    let mut parts = date.split('-');
    let year = digits(parts.next()?, 4)?;
    let month = parts.next().map_or(Some(1), |m| digits(m, 2))?;
    let day = match parts.next() {
        Some(d) => digits(d, 2)?,
        None if time.is_some() => return None,
        None => 1,
    };
    if parts.next().is_some() {
        return None;
    }
    // `year` has four digits, so it fits in i32.
    let date = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)?;
    let Some(time) = time else {
        return Some(lastmod::of_date(date));
    };
    let (clock, offset) = split_offset(time)?;
    let mut fields = clock.split(':');
    let hour = digits(fields.next()?, 2)?;
    let minute = digits(fields.next()?, 2)?;
    let (second, nano) = match fields.next() {
        None => (0, 0),
        Some(sec) => {
            let (whole, fraction) = match sec.split_once('.') {
                Some((whole, fraction)) => (whole, Some(fraction)),
                None => (sec, None),
            };
            (digits(whole, 2)?, fraction.map_or(Some(0), nanos)?)
        }
    };
    if fields.next().is_some() {
        return None;
    }
    let time = NaiveTime::from_hms_nano_opt(hour, minute, second, nano)?;
    Some(offset.from_local_datetime(&date.and_time(time)).single()?.with_timezone(&Utc))
}

/// Exactly `len` ASCII digits.
fn digits(s: &str, len: usize) -> Option<u32> {
    if s.len() != len || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A decimal fraction of a second as nanoseconds (digits past the ninth are dropped).
fn nanos(fraction: &str) -> Option<u32> {
    if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut padded: String = fraction.chars().take(9).collect();
    while padded.len() < 9 {
        padded.push('0');
    }
    padded.parse().ok()
}

/// Splits `hh:mm[:ss[.s]]TZD` into the clock and its offset (none: UTC).
fn split_offset(time: &str) -> Option<(&str, FixedOffset)> {
    if let Some(clock) = time.strip_suffix(['Z', 'z']) {
        return Some((clock.trim_end(), FixedOffset::east_opt(0)?));
    }
    let Some(i) = time.rfind(['+', '-']) else {
        return Some((time, FixedOffset::east_opt(0)?));
    };
    let (clock, zone) = time.split_at(i);
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    // `zone` starts with the ASCII sign found above, so byte 1 is a character boundary.
    let zone = &zone[1..];
    let (hours, minutes) = match zone.split_once(':') {
        Some((h, m)) => (digits(h, 2)?, digits(m, 2)?),
        None if zone.len() == 4 => (digits(zone.get(..2)?, 2)?, digits(zone.get(2..)?, 2)?),
        None => (digits(zone, 2)?, 0),
    };
    if hours > 23 || minutes > 59 {
        return None;
    }
    // hours ≤ 23 and minutes ≤ 59, so the seconds fit in i32.
    let seconds = i32::try_from(hours * 3600 + minutes * 60).ok()?;
    Some((clock.trim_end(), FixedOffset::east_opt(sign * seconds)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
    }

    #[test]
    fn parse_lastmod_table() {
        let ms = chrono::Duration::milliseconds;
        let table: &[(&str, Option<DateTime<Utc>>)] = &[
            ("2024", Some(utc(2024, 1, 1, 0, 0, 0))),
            ("2024-02", Some(utc(2024, 2, 1, 0, 0, 0))),
            ("2024-02-29", Some(utc(2024, 2, 29, 0, 0, 0))),
            ("2024-02-29T23:30Z", Some(utc(2024, 2, 29, 23, 30, 0))),
            ("2024-02-29T23:30+01:00", Some(utc(2024, 2, 29, 22, 30, 0))),
            ("2024-02-29T23:30:15-05:00", Some(utc(2024, 3, 1, 4, 30, 15))),
            ("2024-02-29T23:30:15.5Z", Some(utc(2024, 2, 29, 23, 30, 15) + ms(500))),
            (
                "2024-02-29T23:30:15.123456789123Z",
                Some(utc(2024, 2, 29, 23, 30, 15) + chrono::Duration::nanoseconds(123_456_789)),
            ),
            ("  2024-02-29t23:30:15z ", Some(utc(2024, 2, 29, 23, 30, 15))),
            ("2024-02-29 23:30:15+0100", Some(utc(2024, 2, 29, 22, 30, 15))),
            ("2024-02-29T23:30:15+01", Some(utc(2024, 2, 29, 22, 30, 15))),
            ("2024-02-29T23:30:15", Some(utc(2024, 2, 29, 23, 30, 15))),
            ("", None),
            ("yesterday", None),
            ("2023-02-29", None),
            ("2024-13", None),
            ("2024-1-5", None),
            ("24-01-05", None),
            ("+2024", None),
            ("2024-01-05T", None),
            ("2024-01-05T25:00Z", None),
            ("2024-01-05T10Z", None),
            ("2024-01-05T10:00:61Z", None),
            ("2024-01-05T10:00:00.Z", None),
            ("2024-01-05T10:00:00+24:00", None),
            ("2024-01-05T10:00:00+1:00", None),
            ("2024-01T10:00Z", None),
            ("2024-01-05T10:00:00:00Z", None),
            ("2024-01-05-01", None),
            ("2024-01-05T10:+0:00Z", None),
            ("2024-01-05T10:00+é", None),
            ("Mon, 05 Jan 2024 10:00:00 GMT", None),
        ];
        for (input, expected) in table {
            assert_eq!(parse_lastmod(input), *expected, "{input:?}");
            assert_eq!(any_form(input.trim()), *expected, "{input:?} read in any form");
        }
    }

    #[test]
    fn parse_rfc822_table() {
        // The forms crawler-commons' RSS fixture writes (xmlRss_pubDate.xml), and zones by name.
        let table: &[(&str, Option<DateTime<Utc>>)] = &[
            ("Thu, 05 Jan 2017 12:34:50 GMT", Some(utc(2017, 1, 5, 12, 34, 50))),
            ("Thu, 05 Jan 2017 13:34:51 +0100", Some(utc(2017, 1, 5, 12, 34, 51))),
            ("Thu, 05 Jan 17 13:34:52 +0100", Some(utc(2017, 1, 5, 12, 34, 52))),
            ("05 Jan 2017 13:34:53 +0100", Some(utc(2017, 1, 5, 12, 34, 53))),
            (" 05 Jan 17 13:34:54 +0100 ", Some(utc(2017, 1, 5, 12, 34, 54))),
            ("Sun, 06 Sep 2009 16:20:00 +0000", Some(utc(2009, 9, 6, 16, 20, 0))),
            ("Mon, 06 Sep 2010 00:01:00 EST", Some(utc(2010, 9, 6, 5, 1, 0))),
            ("05 Jan 17 13:34:55", None),
            ("", None),
            ("2017-01-05T12:34:50Z", None),
        ];
        for (input, expected) in table {
            assert_eq!(parse_rfc822(input), *expected, "{input:?}");
        }
    }

    /// What the fixed forms read, `any_form` reads the same, around every
    /// limit of their fields (and a form not quite fixed is left to it).
    #[test]
    fn fixed_forms_agree_with_any_form() {
        let mut read = 0;
        for year in ["0000", "1970", "2024", "9999"] {
            for month in 0..=13 {
                for day in [0, 1, 28, 29, 30, 31, 32] {
                    let date = format!("{year}-{month:02}-{day:02}");
                    let mut forms = vec![date.clone(), format!("{date}t00:00:00Z"), format!("{date}T00:00Z")];
                    for (h, m, s) in [(0, 0, 0), (23, 59, 59), (24, 0, 0), (12, 60, 0), (12, 0, 60), (9, 5, 7)] {
                        for zone in ["Z", "z", "+00:00", "-00:00", "-05:30", "+23:59", "+24:00", "+12:60", "+0530", "X"]
                        {
                            forms.push(format!("{date}T{h:02}:{m:02}:{s:02}{zone}"));
                        }
                    }
                    for form in forms {
                        if let Some(fixed) = fixed_form(form.as_bytes()) {
                            read += 1;
                            assert_eq!(Some(fixed), any_form(&form), "{form:?}");
                        }
                        assert_eq!(parse_lastmod(&form), any_form(&form), "{form:?}");
                    }
                }
            }
        }
        assert!(read > 3_000, "the fixed forms read {read}");
    }
}
