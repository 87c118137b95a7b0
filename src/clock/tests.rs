//! Windows across DST and timezones, durations and how they are said.

use super::*;

fn utc(rfc3339: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(rfc3339).unwrap().with_timezone(&Utc)
}

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

fn hours(window: &Window) -> i64 {
    (window.end - window.start).num_seconds() / 3600
}

const LA: Tz = chrono_tz::America::Los_Angeles;
const SHANGHAI: Tz = chrono_tz::Asia::Shanghai;
const HAVANA: Tz = chrono_tz::America::Havana;

#[test]
fn los_angeles_days_around_dst_2027() {
    // DST starts Sunday 2027-03-14 at 02:00 PST (10:00Z): a 23-hour day.
    let before = window_at(Period::Day, LA, utc("2027-03-14T09:59:00Z"));
    let after = window_at(Period::Day, LA, utc("2027-03-14T10:00:00Z"));
    assert_eq!(before, after);
    assert_eq!(before.key, "2027-03-14");
    assert_eq!(before.period, Period::Day);
    assert_eq!(before.tz, LA);
    assert_eq!(before.start, utc("2027-03-14T08:00:00Z"));
    assert_eq!(before.end, utc("2027-03-15T07:00:00Z"));
    assert_eq!(before.end - before.start, TimeDelta::hours(23));
    assert_eq!(format_offset(utc("2027-03-14T09:59:00Z"), LA), "-08:00");
    assert_eq!(format_offset(utc("2027-03-14T10:00:00Z"), LA), "-07:00");

    // The last minute of the previous day, and ordinary days around it.
    let saturday = window_at(Period::Day, LA, utc("2027-03-14T07:59:59Z"));
    assert_eq!(saturday.key, "2027-03-13");
    assert_eq!(saturday.end, before.start);
    assert_eq!(hours(&saturday), 24);
    let monday = window_at(Period::Day, LA, before.end.with_timezone(&Utc));
    assert_eq!(monday.key, "2027-03-15");
    assert_eq!(hours(&monday), 24);

    // DST ends Sunday 2027-11-07 at 02:00 PDT (09:00Z): a 25-hour day.
    let fall = window_at(Period::Day, LA, utc("2027-11-07T12:00:00Z"));
    assert_eq!(fall.key, "2027-11-07");
    assert_eq!(fall.start, utc("2027-11-07T07:00:00Z"));
    assert_eq!(fall.end, utc("2027-11-08T08:00:00Z"));
    assert_eq!(fall.end - fall.start, TimeDelta::hours(25));
    // Both passes through 01:30 local belong to that day.
    let first_pass = window_at(Period::Day, LA, utc("2027-11-07T08:30:00Z"));
    let second_pass = window_at(Period::Day, LA, utc("2027-11-07T09:30:00Z"));
    assert_eq!(first_pass, fall);
    assert_eq!(second_pass, fall);

    let ordinary = window_at(Period::Day, LA, utc("2027-06-01T12:00:00Z"));
    assert_eq!(ordinary.key, "2027-06-01");
    assert_eq!(ordinary.end - ordinary.start, TimeDelta::hours(24));
}

#[test]
fn shanghai_day_boundary() {
    let last = window_at(Period::Day, SHANGHAI, utc("2026-12-03T15:59:59Z"));
    assert_eq!(last.key, "2026-12-03");
    assert_eq!(last.start, utc("2026-12-02T16:00:00Z"));
    assert_eq!(last.end, utc("2026-12-03T16:00:00Z"));
    assert_eq!(last.end.to_rfc3339(), "2026-12-04T00:00:00+08:00");

    let next = window_at(Period::Day, SHANGHAI, utc("2026-12-03T16:00:00Z"));
    assert_eq!(next.key, "2026-12-04");
    assert_eq!(next.start, last.end);
    assert_eq!(next.end, utc("2026-12-04T16:00:00Z"));
}

#[test]
fn month_windows() {
    // December to January.
    let dec = window_at(Period::Month, SHANGHAI, utc("2026-12-31T15:59:59Z"));
    assert_eq!(dec.key, "2026-12");
    assert_eq!(dec.period, Period::Month);
    assert_eq!(dec.start.to_rfc3339(), "2026-12-01T00:00:00+08:00");
    assert_eq!(dec.end.to_rfc3339(), "2027-01-01T00:00:00+08:00");
    let jan = window_at(Period::Month, SHANGHAI, utc("2026-12-31T16:00:00Z"));
    assert_eq!(jan.key, "2027-01");
    assert_eq!(jan.start, dec.end);
    assert_eq!(hours(&jan), 31 * 24);

    // February, ordinary and leap.
    let feb = window_at(Period::Month, SHANGHAI, utc("2027-02-10T00:00:00Z"));
    assert_eq!(feb.key, "2027-02");
    assert_eq!(hours(&feb), 28 * 24);
    let leap = window_at(Period::Month, SHANGHAI, utc("2028-02-29T12:00:00Z"));
    assert_eq!(leap.key, "2028-02");
    assert_eq!(hours(&leap), 29 * 24);

    // Months containing a DST change.
    let march = window_at(Period::Month, LA, utc("2027-03-20T00:00:00Z"));
    assert_eq!(march.key, "2027-03");
    assert_eq!(march.start, utc("2027-03-01T08:00:00Z"));
    assert_eq!(march.end, utc("2027-04-01T07:00:00Z"));
    assert_eq!(hours(&march), 31 * 24 - 1);
    let november = window_at(Period::Month, LA, utc("2027-11-20T00:00:00Z"));
    assert_eq!(hours(&november), 30 * 24 + 1);

    // The local month, not the UTC one.
    let la_new_year = window_at(Period::Month, LA, utc("2027-01-01T07:59:59Z"));
    assert_eq!(la_new_year.key, "2026-12");
}

#[test]
fn havana_midnight_gap_and_overlap() {
    // Cuba moves clocks from 00:00 to 01:00 on the second Sunday of
    // March: 2027-03-14. Check what the tz data says rather than assume.
    let day = date(2027, 3, 14);
    let midnight = day.and_time(chrono::NaiveTime::MIN);
    let start = start_of_day(HAVANA, day);

    // The result is an existing instant on (or after) that date...
    let local = start.naive_local();
    assert!(local >= midnight);
    assert_eq!(start.with_timezone(&Utc).with_timezone(&HAVANA).naive_local(), local);
    // ...and the earliest one: a second earlier it was still before midnight.
    let second_before = (start - TimeDelta::seconds(1)).naive_local();
    assert!(second_before < midnight, "{second_before}");

    match HAVANA.from_local_datetime(&midnight) {
        LocalResult::None => {
            // The data has the gap: the day starts at 01:00 CDT.
            assert_eq!(start.to_rfc3339(), "2027-03-14T01:00:00-04:00");
            let window = window_at(Period::Day, HAVANA, utc("2027-03-14T12:00:00Z"));
            assert_eq!(window.start, start);
            assert_eq!(hours(&window), 23);
        }
        LocalResult::Single(at) => assert_eq!(start, at),
        LocalResult::Ambiguous(earlier, _) => assert_eq!(start, earlier),
    }

    // Cuba moves clocks back from 01:00 to 00:00 on the first Sunday of
    // November, so 00:00 on 2027-11-07 happens twice: take the first.
    let fall = date(2027, 11, 7);
    let fall_midnight = fall.and_time(chrono::NaiveTime::MIN);
    let fall_start = start_of_day(HAVANA, fall);
    match HAVANA.from_local_datetime(&fall_midnight) {
        LocalResult::Ambiguous(earlier, later) => {
            assert_eq!(fall_start, earlier);
            assert!(earlier < later);
            assert_eq!(fall_start, utc("2027-11-07T04:00:00Z"));
            let window = window_at(Period::Day, HAVANA, utc("2027-11-07T12:00:00Z"));
            assert_eq!(hours(&window), 25);
        }
        LocalResult::Single(at) => assert_eq!(fall_start, at),
        LocalResult::None => assert!(fall_start.naive_local() > fall_midnight),
    }
}

#[test]
fn skipped_date_starts_at_next_existing_time() {
    // Samoa skipped 2011-12-30 entirely, jumping from the end of the 29th
    // to the start of the 31st.
    let apia = chrono_tz::Pacific::Apia;
    let skipped = start_of_day(apia, date(2011, 12, 30));
    let next = start_of_day(apia, date(2011, 12, 31));
    assert_eq!(skipped, next);
    assert_eq!(next.naive_local(), date(2011, 12, 31).and_hms_opt(0, 0, 0).unwrap());
    let before = window_at(Period::Day, apia, utc("2011-12-30T09:59:59Z"));
    assert_eq!(before.key, "2011-12-29");
    assert_eq!(before.end, next);
}

#[test]
fn wall_clock_stepping_back_across_midnight() {
    // Until 2011 Newfoundland ended DST at 00:01 NDT, back to 23:01 NST:
    // 2010-11-07 00:00 to 00:01 happened, then 2010-11-06 23:01 again.
    let st_johns = chrono_tz::America::St_Johns;
    let saturday = window_at(Period::Day, st_johns, utc("2010-11-07T02:29:59Z"));
    assert_eq!(saturday.key, "2010-11-06");
    assert_eq!(saturday.end, utc("2010-11-07T02:30:00Z"));
    assert_eq!(hours(&saturday), 24);

    // 23:28 NST on the 6th by the wall clock, but after the 7th began.
    let repeated = utc("2010-11-07T02:58:49Z");
    assert_eq!(format_local(repeated, st_johns), "2010-11-06 23:28 America/St_Johns");
    let sunday = window_at(Period::Day, st_johns, repeated);
    assert_eq!(sunday.key, "2010-11-07");
    assert_eq!(sunday.start, saturday.end);
    assert_eq!(sunday.end, utc("2010-11-08T03:30:00Z"));
    assert_eq!(hours(&sunday), 25);
}

#[test]
fn windows_contain_their_instant_everywhere() {
    let zones = [
        LA,
        SHANGHAI,
        HAVANA,
        chrono_tz::America::Santiago,
        chrono_tz::America::St_Johns,
        chrono_tz::Australia::Lord_Howe,
        chrono_tz::Pacific::Apia,
        chrono_tz::Europe::London,
        chrono_tz::Asia::Tehran,
        chrono_tz::Africa::Casablanca,
        Tz::UTC,
    ];
    let from = utc("2008-01-01T00:00:00Z").timestamp();
    let to = utc("2030-01-01T00:00:00Z").timestamp();
    for tz in zones {
        // An odd step that lands on many different local times.
        for secs in (from..to).step_by(40_009) {
            let at = DateTime::from_timestamp(secs, 0).unwrap();
            for period in [Period::Day, Period::Month] {
                let w = window_at(period, tz, at);
                assert!(w.start <= at && at < w.end, "{tz} {at} {w:?}");
                let next = window_at(period, tz, w.end.with_timezone(&Utc));
                assert_eq!(next.start, w.end, "{tz} {at}");
                assert!(next.key > w.key, "{tz} {at}");
                let last_second = (w.end - TimeDelta::seconds(1)).with_timezone(&Utc);
                assert_eq!(window_at(period, tz, last_second), w, "{tz} {at}");
            }
        }
    }
}

#[test]
fn clock_advances_from_its_base() {
    let base = utc("2026-12-03T01:00:00Z");
    let clock = Clock::starting_at(base);
    let first = clock.now();
    assert!(first >= base);
    std::thread::sleep(Duration::from_millis(20));
    let second = clock.now();
    assert!(second >= first + TimeDelta::milliseconds(20));
    assert!(second < base + TimeDelta::minutes(1));

    let system = Clock::starting_at(Utc::now()).now();
    assert!((system - Utc::now()).num_seconds().abs() < 60);
}

#[test]
fn indexq_now_values() {
    // Tested through the raw value, so no test touches the environment.
    assert!(base_from_env_value(None).unwrap().is_none());
    assert!(base_from_env_value(Some("".into())).unwrap().is_none());
    assert!(base_from_env_value(Some("  ".into())).unwrap().is_none());
    assert_eq!(
        base_from_env_value(Some("2026-12-03T09:00:00+08:00".into())).unwrap(),
        Some(utc("2026-12-03T01:00:00Z"))
    );
    assert_eq!(base_from_env_value(Some(" 2026-12-03T01:00:00Z\n".into())).unwrap(), Some(utc("2026-12-03T01:00:00Z")));

    let err = base_from_env_value(Some("tomorrow".into())).unwrap_err();
    assert!(matches!(err, ClockError::BadNow { .. }));
    let message = err.to_string();
    assert!(message.contains("INDEXQ_NOW"), "{message}");
    assert!(message.contains("`tomorrow`"), "{message}");
    assert!(message.contains("RFC 3339"), "{message}");
    assert!(message.contains("2026-12-03T09:00:00+08:00"), "{message}");

    // A date without a time or offset is not RFC 3339.
    assert!(base_from_env_value(Some("2026-12-03".into())).is_err());
    assert!(base_from_env_value(Some("2026-12-03T09:00:00".into())).is_err());

    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![0x32, 0xff]);
        let err = base_from_env_value(Some(bad)).unwrap_err();
        assert!(matches!(err, ClockError::NotUnicode { .. }));
        assert!(err.to_string().contains("INDEXQ_NOW"));
    }

    // from_env reads the real environment, which this test leaves alone:
    // it must agree with whatever is set there.
    let from_env = Clock::from_env();
    match std::env::var_os(NOW_VAR) {
        None => assert!(from_env.is_ok()),
        Some(value) => {
            assert_eq!(from_env.is_ok(), base_from_env_value(Some(value)).is_ok())
        }
    }
}

#[test]
fn timezones() {
    assert_eq!(parse_timezone("Asia/Shanghai"), Ok(SHANGHAI));
    assert_eq!(parse_timezone(" America/Los_Angeles "), Ok(LA));
    assert_eq!(parse_timezone("UTC"), Ok(Tz::UTC));
    assert_eq!(parse_timezone("Mars/Olympus"), Err("unknown timezone `Mars/Olympus`".to_string()));
    assert!(parse_timezone("").is_err());

    assert_eq!(tz_from_tz_var("Europe/Berlin"), Some(chrono_tz::Europe::Berlin));
    assert_eq!(tz_from_tz_var(":Europe/Berlin"), Some(chrono_tz::Europe::Berlin));
    assert_eq!(tz_from_tz_var("/usr/share/zoneinfo/Europe/Berlin"), Some(chrono_tz::Europe::Berlin));
    assert_eq!(tz_from_tz_var("CET-1CEST,M3.5.0,M10.5.0/3"), None);
    assert_eq!(tz_from_tz_var(""), None);

    // Whatever the machine says, the result is some timezone.
    let _ = user_timezone();
}

#[test]
fn periods() {
    assert_eq!(Period::Day.as_str(), "day");
    assert_eq!(Period::Month.as_str(), "month");
    assert_eq!(Period::Month.to_string(), "month");
}

#[test]
fn durations_accepted() {
    let secs = |n: u64| Ok(Duration::from_secs(n));
    assert_eq!(parse_duration("0"), secs(0));
    assert_eq!(parse_duration("0s"), secs(0));
    assert_eq!(parse_duration("90s"), secs(90));
    assert_eq!(parse_duration("5m"), secs(300));
    assert_eq!(parse_duration("2h"), secs(7_200));
    assert_eq!(parse_duration("3d"), secs(259_200));
    assert_eq!(parse_duration("1h30m"), secs(5_400));
    assert_eq!(parse_duration("1d2h3m4s"), secs(93_784));
    assert_eq!(parse_duration("2d 12h"), secs(216_000));
    assert_eq!(parse_duration("  45s\n"), secs(45));
    assert_eq!(parse_duration("007m"), secs(420));
    assert_eq!(parse_duration("36500d"), secs(MAX_DURATION_SECS));
}

#[test]
fn durations_rejected() {
    let err = |s: &str| parse_duration(s).unwrap_err();

    assert!(err("").contains("empty"));
    assert!(err("   ").contains("empty"));
    assert!(err("5x").contains("unknown unit `x`"));
    assert!(err("5ms").contains("unknown unit `ms`"));
    assert!(err("-1s").contains("negative"));
    assert!(err("1.5h").contains("fractional"));
    assert!(err("1,5h").contains("fractional"));
    assert!(err("5").contains("missing unit"));
    assert!(err("h").contains("expected a number"));
    assert!(err("1h 30").contains("missing unit after `30`"));
    assert!(err("30m1h").contains("out of order"));
    assert!(err("1m1m").contains("repeated"));
    assert!(err("+5s").contains("expected a number"));
    assert!(err("36501d").contains("too long"));
    assert!(err("36500d1s").contains("too long"));
    assert!(err("99999999999999999999s").contains("too long"));
    assert!(err("18446744073709551615d").contains("too long"));

    // Every error names the accepted forms or how to fix the input.
    for bad in ["", "5x", "-1s", "5", "h"] {
        assert!(err(bad).contains("90s, 5m, 2h, 3d"), "{bad}: {}", err(bad));
    }
    assert!(err("1.5h").contains("1h30m"));
}

#[test]
fn humanize_examples() {
    let h = |secs: i64| humanize(TimeDelta::seconds(secs));
    assert_eq!(h(0), "0 s");
    assert_eq!(h(40), "40 s");
    assert_eq!(h(59), "59 s");
    assert_eq!(h(60), "1 min");
    assert_eq!(h(5 * 60 + 59), "5 min");
    assert_eq!(h(3_599), "59 min");
    assert_eq!(h(3_600), "1 h");
    assert_eq!(h(6 * 3_600 + 12 * 60 + 30), "6 h 12 min");
    assert_eq!(h(86_399), "23 h 59 min");
    assert_eq!(h(86_400), "1 d");
    assert_eq!(h(2 * 86_400 + 3 * 3_600 + 59 * 60), "2 d 3 h");
    assert_eq!(h(2 * 86_400 + 5 * 60), "2 d");
    assert_eq!(h(400 * 86_400), "400 d");
    assert_eq!(h(-5), "0 s");
    assert_eq!(humanize(TimeDelta::milliseconds(999)), "0 s");
    assert_eq!(humanize(TimeDelta::MIN), "0 s");
    assert_eq!(humanize(TimeDelta::MAX).split(' ').nth(1), Some("d"));
}

#[test]
fn formatting() {
    assert_eq!(format_local(utc("2026-12-03T08:00:59Z"), LA), "2026-12-03 00:00 America/Los_Angeles");
    assert_eq!(format_local(utc("2026-12-03T01:00:00Z"), SHANGHAI), "2026-12-03 09:00 Asia/Shanghai");
    assert_eq!(format_offset(utc("2026-12-03T01:00:00Z"), SHANGHAI), "+08:00");
    assert_eq!(format_offset(utc("2027-07-01T00:00:00Z"), LA), "-07:00");
    assert_eq!(format_offset(utc("2027-01-01T00:00:00Z"), LA), "-08:00");
    assert_eq!(format_offset(utc("2027-01-01T00:00:00Z"), Tz::UTC), "+00:00");
    assert_eq!(format_offset(utc("2027-01-01T00:00:00Z"), chrono_tz::Asia::Kolkata), "+05:30");
}
