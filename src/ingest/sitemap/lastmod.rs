//! `<lastmod>`: W3C datetimes, and the forms generators write besides.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveTime, TimeZone, Utc};

/// Parses a sitemap lastmod: W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD, YYYY-MM-DDThh:mmTZD, with seconds and fractions); date-only means 00:00 UTC. None if unparseable.
///
/// Also accepted, as generators write them: a space or `t` for `T`, `z` for `Z`, `+hhmm` and `+hh` offsets, and a
/// time without offset, taken as UTC.
pub(super) fn parse_lastmod(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
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
        return Some(date.and_time(NaiveTime::MIN).and_utc());
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
        }
    }
}
