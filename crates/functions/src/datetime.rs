//! Datetime and timespan functions. Datetimes are nanoseconds since the Unix epoch (UTC),
//! timespans nanoseconds; Kusto's resolution is the 100 ns tick.

use chrono::{DateTime, Datelike, Duration, Months, NaiveDate, NaiveDateTime, TimeZone, Timelike};
use datafusion::error::Result;

use crate::rowfn::{Out, Val, arg, str_arg};

pub(crate) const TICK: i64 = 100;
const SECOND: i64 = 1_000_000_000;
const MINUTE: i64 = 60 * SECOND;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

fn naive(ns: i64) -> NaiveDateTime {
    DateTime::from_timestamp_nanos(ns).naive_utc()
}

fn nanos(t: NaiveDateTime) -> Option<i64> {
    t.and_utc().timestamp_nanos_opt()
}

fn datetime_out(t: Option<NaiveDateTime>) -> Result<Out> {
    Ok(t.and_then(nanos).map_or(Out::Null, Out::DateTime))
}

fn add_months(t: NaiveDateTime, months: i64) -> Option<NaiveDateTime> {
    let months = i32::try_from(months).ok()?;
    if months >= 0 {
        t.checked_add_months(Months::new(months as u32))
    } else {
        t.checked_sub_months(Months::new(months.unsigned_abs()))
    }
}

/// `datetime_add(part, amount, datetime)`.
pub fn datetime_add(args: &[Val]) -> Result<Out> {
    let (Some(amount), Some(t)) = (arg(args, 1).long(), arg(args, 2).datetime()) else {
        return Ok(Out::Null);
    };
    let t = naive(t);
    let unit = |ns: i64| {
        amount
            .checked_mul(ns)
            .and_then(|d| t.checked_add_signed(Duration::nanoseconds(d)))
    };
    let result = match str_arg(args, 0).to_ascii_lowercase().as_str() {
        "year" => add_months(t, amount.saturating_mul(12)),
        "quarter" => add_months(t, amount.saturating_mul(3)),
        "month" => add_months(t, amount),
        "week" => unit(7 * DAY),
        "day" => unit(DAY),
        "hour" => unit(HOUR),
        "minute" => unit(MINUTE),
        "second" => unit(SECOND),
        "millisecond" => unit(1_000_000),
        "microsecond" => unit(1_000),
        "nanosecond" => unit(1),
        _ => None,
    };
    datetime_out(result)
}

fn start_of_week(t: NaiveDateTime) -> NaiveDateTime {
    let day = t.date() - Duration::days(t.weekday().num_days_from_sunday() as i64);
    day.and_hms_opt(0, 0, 0).unwrap_or(t)
}

/// `datetime_diff(part, datetime1, datetime2)`: calendar periods from datetime2 to datetime1.
pub fn datetime_diff(args: &[Val]) -> Result<Out> {
    let (Some(a), Some(b)) = (arg(args, 1).datetime(), arg(args, 2).datetime()) else {
        return Ok(Out::Null);
    };
    let (x, y) = (naive(a), naive(b));
    let months = |t: NaiveDateTime| t.year() as i64 * 12 + t.month0() as i64;
    let truncated = |unit: i64| a.div_euclid(unit) - b.div_euclid(unit);
    let result = match str_arg(args, 0).to_ascii_lowercase().as_str() {
        "year" => x.year() as i64 - y.year() as i64,
        "quarter" => (x.year() as i64 * 4 + x.month0() as i64 / 3) - (y.year() as i64 * 4 + y.month0() as i64 / 3),
        "month" => months(x) - months(y),
        "week" => (start_of_week(x) - start_of_week(y)).num_days() / 7,
        "day" => truncated(DAY),
        "hour" => truncated(HOUR),
        "minute" => truncated(MINUTE),
        "second" => truncated(SECOND),
        "millisecond" => truncated(1_000_000),
        "microsecond" => truncated(1_000),
        "nanosecond" => a - b,
        _ => return Ok(Out::Null),
    };
    Ok(Out::Long(result))
}

/// `datetime_part(part, datetime)`.
pub fn datetime_part(args: &[Val]) -> Result<Out> {
    let Some(t) = arg(args, 1).datetime() else {
        return Ok(Out::Null);
    };
    let n = naive(t);
    let result = match str_arg(args, 0).to_ascii_lowercase().as_str() {
        "year" => n.year() as i64,
        "quarter" => n.month0() as i64 / 3 + 1,
        "month" => n.month() as i64,
        "week_of_year" | "weekofyear" | "week" => n.iso_week().week() as i64,
        "day" => n.day() as i64,
        "dayofyear" => n.ordinal() as i64,
        "hour" => n.hour() as i64,
        "minute" => n.minute() as i64,
        "second" => n.second() as i64,
        "millisecond" => n.nanosecond() as i64 / 1_000_000,
        "microsecond" => n.nanosecond() as i64 / 1_000,
        "nanosecond" => n.nanosecond() as i64,
        _ => return Ok(Out::Null),
    };
    Ok(Out::Long(result))
}

fn part_of(args: &[Val], f: fn(NaiveDateTime) -> i64) -> Result<Out> {
    Ok(arg(args, 0).datetime().map(|t| f(naive(t))).into())
}

pub fn getyear(args: &[Val]) -> Result<Out> {
    part_of(args, |t| t.year() as i64)
}

pub fn getmonth(args: &[Val]) -> Result<Out> {
    part_of(args, |t| t.month() as i64)
}

pub fn dayofmonth(args: &[Val]) -> Result<Out> {
    part_of(args, |t| t.day() as i64)
}

pub fn dayofyear(args: &[Val]) -> Result<Out> {
    part_of(args, |t| t.ordinal() as i64)
}

pub fn hourofday(args: &[Val]) -> Result<Out> {
    part_of(args, |t| t.hour() as i64)
}

pub fn weekofyear(args: &[Val]) -> Result<Out> {
    part_of(args, |t| t.iso_week().week() as i64)
}

/// `dayofweek(datetime)`: the days since the preceding Sunday, as a timespan.
pub fn dayofweek(args: &[Val]) -> Result<Out> {
    Ok(match arg(args, 0).datetime() {
        Some(t) => Out::Timespan(naive(t).weekday().num_days_from_sunday() as i64 * DAY),
        None => Out::Null,
    })
}

#[derive(Clone, Copy)]
enum Period {
    Day,
    Week,
    Month,
    Year,
}

/// The start of the period holding `t`, moved by `offset` periods.
fn start_of(t: NaiveDateTime, period: Period, offset: i64) -> Option<NaiveDateTime> {
    let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0);
    match period {
        Period::Day => midnight(t.date())?.checked_add_signed(Duration::days(offset)),
        Period::Week => start_of_week(t).checked_add_signed(Duration::weeks(offset)),
        Period::Month => add_months(midnight(t.date().with_day(1)?)?, offset),
        Period::Year => add_months(
            midnight(NaiveDate::from_ymd_opt(t.year(), 1, 1)?)?,
            offset.saturating_mul(12),
        ),
    }
}

fn start(args: &[Val], period: Period) -> Result<Out> {
    let Some(t) = arg(args, 0).datetime() else {
        return Ok(Out::Null);
    };
    let offset = arg(args, 1).long().unwrap_or(0);
    datetime_out(start_of(naive(t), period, offset))
}

/// The last tick of the period.
fn end(args: &[Val], period: Period) -> Result<Out> {
    let Some(t) = arg(args, 0).datetime() else {
        return Ok(Out::Null);
    };
    let offset = arg(args, 1).long().unwrap_or(0);
    let next = start_of(naive(t), period, offset.saturating_add(1)).and_then(nanos);
    Ok(next.map_or(Out::Null, |n| Out::DateTime(n - TICK)))
}

pub fn startofday(args: &[Val]) -> Result<Out> {
    start(args, Period::Day)
}

pub fn startofweek(args: &[Val]) -> Result<Out> {
    start(args, Period::Week)
}

pub fn startofmonth(args: &[Val]) -> Result<Out> {
    start(args, Period::Month)
}

pub fn startofyear(args: &[Val]) -> Result<Out> {
    start(args, Period::Year)
}

pub fn endofday(args: &[Val]) -> Result<Out> {
    end(args, Period::Day)
}

pub fn endofweek(args: &[Val]) -> Result<Out> {
    end(args, Period::Week)
}

pub fn endofmonth(args: &[Val]) -> Result<Out> {
    end(args, Period::Month)
}

pub fn endofyear(args: &[Val]) -> Result<Out> {
    end(args, Period::Year)
}

/// `make_datetime(year, month, day[, hour, minute, second])`; the second may have a fraction.
pub fn make_datetime(args: &[Val]) -> Result<Out> {
    let int = |i: usize| arg(args, i).long().and_then(|v| u32::try_from(v).ok());
    let (Some(year), Some(month), Some(day)) = (arg(args, 0).long(), int(1), int(2)) else {
        return Ok(Out::Null);
    };
    let (hour, minute) = (int(3).unwrap_or(0), int(4).unwrap_or(0));
    let second = arg(args, 5).real().unwrap_or(0.0);
    if !(0.0..60.0).contains(&second) || hour > 23 || minute > 59 {
        return Ok(Out::Null);
    }
    let Some(date) = i32::try_from(year)
        .ok()
        .and_then(|y| NaiveDate::from_ymd_opt(y, month, day))
    else {
        return Ok(Out::Null);
    };
    let ticks = (second * 10_000_000.0).round() as i64;
    let time = date
        .and_hms_opt(hour, minute, 0)
        .and_then(|t| t.checked_add_signed(Duration::nanoseconds(ticks * TICK)));
    datetime_out(time)
}

/// `make_timespan(hours, minutes)`, `(hours, minutes, seconds)` or
/// `(days, hours, minutes, seconds)`.
pub fn make_timespan(args: &[Val]) -> Result<Out> {
    let values: Option<Vec<f64>> = args.iter().map(|v| v.real()).collect();
    let Some(values) = values else {
        return Ok(Out::Null);
    };
    let (days, hours, minutes, seconds) = match values.as_slice() {
        [h, m] => (0.0, *h, *m, 0.0),
        [h, m, s] => (0.0, *h, *m, *s),
        [d, h, m, s] => (*d, *h, *m, *s),
        _ => return Ok(Out::Null),
    };
    let total = days * DAY as f64 + hours * HOUR as f64 + minutes * MINUTE as f64 + seconds * SECOND as f64;
    Ok(Out::Timespan(((total / TICK as f64).round() as i64) * TICK))
}

fn from_unix(args: &[Val], unit: i64) -> Result<Out> {
    let Some(v) = arg(args, 0)
        .real()
        .filter(|v| v.is_finite() && v.abs() < 9.2e18 / unit as f64)
    else {
        return Ok(Out::Null);
    };
    // The whole part exactly, the fraction to the tick.
    let whole = v.trunc() as i64;
    let fraction = ((v - v.trunc()) * unit as f64 / TICK as f64).round() as i64 * TICK;
    Ok(whole
        .checked_mul(unit)
        .and_then(|n| n.checked_add(fraction))
        .map_or(Out::Null, Out::DateTime))
}

pub fn unixtime_seconds_todatetime(args: &[Val]) -> Result<Out> {
    from_unix(args, 1_000_000_000)
}

pub fn unixtime_milliseconds_todatetime(args: &[Val]) -> Result<Out> {
    from_unix(args, 1_000_000)
}

pub fn unixtime_microseconds_todatetime(args: &[Val]) -> Result<Out> {
    from_unix(args, 1_000)
}

pub fn unixtime_nanoseconds_todatetime(args: &[Val]) -> Result<Out> {
    from_unix(args, 1)
}

/// Parses the datetime texts Kusto accepts (see `trawl_common::time::parse_datetime`).
pub fn parse_datetime(text: &str) -> Option<i64> {
    trawl_common::time::parse_datetime(text)
}

pub fn todatetime(args: &[Val]) -> Result<Out> {
    Ok(match arg(args, 0) {
        Val::DateTime(t) => Out::DateTime(t),
        Val::Str(s) => parse_datetime(&crate::dynamic::dynamic_to_string(Some(s))).map_or(Out::Null, Out::DateTime),
        _ => Out::Null,
    })
}

/// Parses `[-][d.]hh:mm[:ss[.fffffff]]` and KQL timespan literals (`2d`, `1.5h`, `30ms`).
pub fn parse_timespan(text: &str) -> Option<i64> {
    let text = text.trim();
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let value = if body.contains(':') {
        let (days, clock) = match body.split_once(':') {
            Some((head, _)) if head.contains('.') => {
                let (d, rest) = body.split_once('.')?;
                (d.parse::<i64>().ok()?, rest)
            }
            _ => (0, body),
        };
        let parts: Vec<&str> = clock.split(':').collect();
        let (h, m, s) = match parts.as_slice() {
            [h, m] => (*h, *m, "0"),
            [h, m, s] => (*h, *m, *s),
            _ => return None,
        };
        let (h, m) = (h.parse::<i64>().ok()?, m.parse::<i64>().ok()?);
        if m > 59 {
            return None;
        }
        let (whole, fraction) = s.split_once('.').unwrap_or((s, ""));
        let seconds = whole.parse::<i64>().ok()?;
        if seconds > 59 || !fraction.chars().all(|c| c.is_ascii_digit()) || fraction.len() > 9 {
            return None;
        }
        let fraction_ns = format!("{fraction:0<9}").parse::<i64>().ok()?;
        days * DAY + h * HOUR + m * MINUTE + seconds * SECOND + fraction_ns
    } else {
        let split = body.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let (number, unit) = body.split_at(split);
        let number: f64 = number.parse().ok()?;
        let unit_ns = match unit {
            "d" | "day" | "days" => DAY,
            "h" | "hr" | "hrs" | "hour" | "hours" => HOUR,
            "m" | "min" | "minute" | "minutes" => MINUTE,
            "s" | "sec" | "second" | "seconds" => SECOND,
            "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1_000_000,
            "microsecond" | "microseconds" => 1_000,
            "tick" | "ticks" => TICK,
            _ => return None,
        };
        (number * unit_ns as f64).round() as i64
    };
    Some(if negative { -value } else { value })
}

pub fn totimespan(args: &[Val]) -> Result<Out> {
    Ok(match arg(args, 0) {
        Val::Timespan(t) => Out::Timespan(t),
        Val::Str(s) => parse_timespan(&crate::dynamic::dynamic_to_string(Some(s))).map_or(Out::Null, Out::Timespan),
        _ => Out::Null,
    })
}

/// `bin_at(value, bin_size, fixed_point)` for numbers, datetimes and timespans.
pub fn bin_at(args: &[Val]) -> Result<Out> {
    let floor_to = |v: i64, size: i64, fixed: i64| -> Out {
        if size <= 0 {
            return Out::Null;
        }
        Out::Long(fixed + (v - fixed).div_euclid(size) * size)
    };
    Ok(match (arg(args, 0), arg(args, 1), arg(args, 2)) {
        (Val::DateTime(v), Val::Timespan(size), Val::DateTime(fixed)) => match floor_to(v, size, fixed) {
            Out::Long(n) => Out::DateTime(n),
            other => other,
        },
        (Val::Timespan(v), Val::Timespan(size), Val::Timespan(fixed)) => match floor_to(v, size, fixed) {
            Out::Long(n) => Out::Timespan(n),
            other => other,
        },
        (Val::Long(v), Val::Long(size), Val::Long(fixed)) => floor_to(v, size, fixed),
        (v, size, fixed) => match (v.real(), size.real(), fixed.real()) {
            (Some(v), Some(size), Some(fixed)) if size > 0.0 => Out::Real(fixed + ((v - fixed) / size).floor() * size),
            _ => Out::Null,
        },
    })
}

/// `datetime_list_timezones()`: the names of the time zones datetime functions accept (the
/// IANA database), sorted.
pub fn datetime_list_timezones(_args: &[Val]) -> Result<Out> {
    let mut names: Vec<&str> = chrono_tz::TZ_VARIANTS.iter().map(|zone| zone.name()).collect();
    names.sort_unstable();
    Ok(crate::json::out(serde_json::Value::Array(
        names
            .into_iter()
            .map(|name| serde_json::Value::String(name.to_string()))
            .collect(),
    )))
}

fn zone(name: &str) -> Option<chrono_tz::Tz> {
    name.parse::<chrono_tz::Tz>().ok()
}

/// `datetime_utc_to_local(datetime, timezone)`.
pub fn datetime_utc_to_local(args: &[Val]) -> Result<Out> {
    let (Some(t), Some(tz)) = (arg(args, 0).datetime(), zone(str_arg(args, 1))) else {
        return Ok(Out::Null);
    };
    let local = tz.from_utc_datetime(&naive(t)).naive_local();
    datetime_out(Some(local))
}

/// `datetime_local_to_utc(datetime, timezone)`: an ambiguous local time is taken as standard
/// time, a skipped one with the offset after the change.
pub fn datetime_local_to_utc(args: &[Val]) -> Result<Out> {
    let (Some(t), Some(tz)) = (arg(args, 0).datetime(), zone(str_arg(args, 1))) else {
        return Ok(Out::Null);
    };
    let local = naive(t);
    let utc = match tz.from_local_datetime(&local) {
        chrono::LocalResult::Single(x) => Some(x.naive_utc()),
        chrono::LocalResult::Ambiguous(_, later) => Some(later.naive_utc()),
        chrono::LocalResult::None => tz
            .from_local_datetime(&(local + Duration::hours(1)))
            .earliest()
            .map(|x| x.naive_utc() - Duration::hours(1)),
    };
    datetime_out(utc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{dt, l, r, run, s, ts};

    #[test]
    fn time_zones_are_listed_and_each_is_accepted() {
        let list: Vec<String> = serde_json::from_str(&run("datetime_list_timezones", &[])).unwrap_or_default();
        assert!(list.len() > 300, "{}", list.len());
        assert!(list.contains(&"Europe/Paris".to_string()) && list.contains(&"UTC".to_string()));
        assert!(list.iter().all(|name| zone(name).is_some()));
    }

    #[test]
    fn adding_and_diffing() {
        let t = dt("2017-01-01T00:00:00Z");
        let add = |part: &str, n: i64| run("datetime_add", &[s(part), l(n), t.clone()]);
        assert_eq!(add("year", 1), "2018-01-01T00:00:00Z");
        assert_eq!(add("quarter", 1), "2017-04-01T00:00:00Z");
        assert_eq!(add("week", 1), "2017-01-08T00:00:00Z");
        assert_eq!(add("day", -1), "2016-12-31T00:00:00Z");
        assert_eq!(add("second", 1), "2017-01-01T00:00:01Z");
        let jan31 = dt("2017-01-31T00:00:00Z");
        assert_eq!(run("datetime_add", &[s("month"), l(1), jan31]), "2017-02-28T00:00:00Z");
        let diff = |part: &str, a: &str, b: &str| run("datetime_diff", &[s(part), dt(a), dt(b)]);
        assert_eq!(diff("year", "2017-01-01T00:00:00Z", "2000-12-31T00:00:00Z"), "17");
        assert_eq!(diff("quarter", "2017-07-01T00:00:00Z", "2017-03-30T00:00:00Z"), "2");
        assert_eq!(diff("month", "2017-01-01T00:00:00Z", "2015-12-30T00:00:00Z"), "13");
        assert_eq!(diff("week", "2017-10-29T00:00:00Z", "2017-09-30T00:00:00Z"), "5");
        assert_eq!(diff("day", "2017-10-29T00:00:00Z", "2017-09-30T00:00:00Z"), "29");
        assert_eq!(diff("hour", "2017-10-31T01:00:00Z", "2017-10-30T23:59:59Z"), "2");
        assert_eq!(diff("minute", "2017-10-30T23:05:01Z", "2017-10-30T23:00:59Z"), "5");
        assert_eq!(
            diff("second", "2017-10-30T23:00:10.100Z", "2017-10-30T23:00:00.900Z"),
            "10"
        );
        assert_eq!(
            diff("millisecond", "2017-10-30T23:00:00.2001Z", "2017-10-30T23:00:00.1009Z"),
            "100"
        );
    }

    #[test]
    fn parts() {
        let t = dt("2017-10-30T01:02:03.7654321Z");
        assert_eq!(run("datetime_part", &[s("year"), t.clone()]), "2017");
        assert_eq!(run("datetime_part", &[s("quarter"), t.clone()]), "4");
        assert_eq!(run("datetime_part", &[s("week_of_year"), t.clone()]), "44");
        assert_eq!(run("datetime_part", &[s("dayOfYear"), t.clone()]), "303");
        assert_eq!(run("datetime_part", &[s("millisecond"), t.clone()]), "765");
        assert_eq!(run("datetime_part", &[s("nanosecond"), t.clone()]), "765432100");
        assert_eq!(run("getyear", std::slice::from_ref(&t)), "2017");
        assert_eq!(run("getmonth", std::slice::from_ref(&t)), "10");
        assert_eq!(run("dayofmonth", std::slice::from_ref(&t)), "30");
        assert_eq!(run("dayofyear", std::slice::from_ref(&t)), "303");
        assert_eq!(run("hourofday", std::slice::from_ref(&t)), "1");
        assert_eq!(run("weekofyear", &[dt("2020-12-31T00:00:00Z")]), "53");
        assert_eq!(run("dayofweek", &[dt("1947-11-30T10:00:05Z")]), "0");
        assert_eq!(run("dayofweek", &[dt("1970-05-12T00:00:00Z")]), (2 * DAY).to_string());
    }

    #[test]
    fn starts_and_ends() {
        let t = dt("2017-01-01T10:10:17Z");
        assert_eq!(run("startofday", std::slice::from_ref(&t)), "2017-01-01T00:00:00Z");
        assert_eq!(run("startofweek", &[t.clone(), l(-1)]), "2016-12-25T00:00:00Z");
        assert_eq!(run("startofweek", &[t.clone(), l(1)]), "2017-01-08T00:00:00Z");
        assert_eq!(run("startofmonth", &[t.clone(), l(1)]), "2017-02-01T00:00:00Z");
        assert_eq!(run("startofyear", &[t.clone(), l(-1)]), "2016-01-01T00:00:00Z");
        assert_eq!(run("endofmonth", &[t.clone(), l(-1)]), "2016-12-31T23:59:59.999999900Z");
        assert_eq!(run("endofmonth", &[t.clone(), l(1)]), "2017-02-28T23:59:59.999999900Z");
        assert_eq!(
            run("endofweek", std::slice::from_ref(&t)),
            "2017-01-07T23:59:59.999999900Z"
        );
        assert_eq!(
            run("endofday", std::slice::from_ref(&t)),
            "2017-01-01T23:59:59.999999900Z"
        );
        assert_eq!(run("endofyear", &[t]), "2017-12-31T23:59:59.999999900Z");
    }

    #[test]
    fn making_and_parsing() {
        let m = run("make_datetime", &[l(2017), l(10), l(1), l(12), l(11), r(0.1234567)]);
        assert_eq!(m, "2017-10-01T12:11:00.123456700Z");
        assert_eq!(run("make_datetime", &[l(2017), l(2), l(30)]), "null");
        assert_eq!(
            run("make_timespan", &[l(1), l(12), l(30), r(55.123)]),
            (DAY + 12 * HOUR + 30 * MINUTE + 55_123_000_000).to_string()
        );
        assert_eq!(
            run("make_timespan", &[l(2), l(30)]),
            (2 * HOUR + 30 * MINUTE).to_string()
        );
        assert_eq!(
            run("unixtime_seconds_todatetime", &[r(1546300800.0)]),
            "2019-01-01T00:00:00Z"
        );
        assert_eq!(
            run("unixtime_milliseconds_todatetime", &[r(1546300800123.0)]),
            "2019-01-01T00:00:00.123Z"
        );
        assert_eq!(
            run("todatetime", &[s("2015-12-31 23:59:59.9")]),
            "2015-12-31T23:59:59.900Z"
        );
        assert_eq!(
            run("todatetime", &[s("2015-12-31T23:59:59.9000000Z")]),
            "2015-12-31T23:59:59.900Z"
        );
        assert_eq!(run("todatetime", &[s("2015-12-31")]), "2015-12-31T00:00:00Z");
        assert_eq!(
            run("todatetime", &[s("Thu, 01 Jan 2015 10:00:00 GMT")]),
            "2015-01-01T10:00:00Z"
        );
        assert_eq!(run("todatetime", &[s("nope")]), "null");
        assert_eq!(run("totimespan", &[s("0.00:01:00")]), MINUTE.to_string());
        assert_eq!(
            run("totimespan", &[s("1.02:03:04.5")]),
            (DAY + 2 * HOUR + 3 * MINUTE + 4_500_000_000).to_string()
        );
        assert_eq!(run("totimespan", &[s("-00:30")]), (-30 * MINUTE).to_string());
        assert_eq!(run("totimespan", &[s("1.5h")]), (90 * MINUTE).to_string());
        assert_eq!(run("totimespan", &[s("abc")]), "null");
    }

    #[test]
    fn binning_and_zones() {
        assert_eq!(run("bin_at", &[r(6.5), r(2.5), r(7.0)]), "4.5");
        assert_eq!(run("bin_at", &[l(7), l(3), l(1)]), "7");
        let fixed = dt("2018-02-24T15:14:00Z");
        let r1 = run("bin_at", &[dt("2018-02-23T16:14:00Z"), ts(DAY), fixed.clone()]);
        assert_eq!(r1, "2018-02-23T15:14:00Z");
        let r2 = run("bin_at", &[dt("2018-02-24T15:24:00Z"), ts(DAY), fixed]);
        assert_eq!(r2, "2018-02-24T15:14:00Z");
        let local = dt("2020-02-02T20:02:20Z");
        assert_eq!(
            run("datetime_local_to_utc", &[local.clone(), s("US/Pacific")]),
            "2020-02-03T04:02:20Z"
        );
        assert_eq!(
            run("datetime_local_to_utc", &[local.clone(), s("Europe/Paris")]),
            "2020-02-02T19:02:20Z"
        );
        assert_eq!(
            run("datetime_utc_to_local", &[local, s("Europe/Paris")]),
            "2020-02-02T21:02:20Z"
        );
        let gap = dt("2022-03-27T02:00:00Z");
        assert_eq!(
            run("datetime_local_to_utc", &[gap, s("Europe/Brussels")]),
            "2022-03-27T00:00:00Z"
        );
        let three = dt("2022-03-27T03:00:00Z");
        assert_eq!(
            run("datetime_local_to_utc", &[three, s("Europe/Brussels")]),
            "2022-03-27T01:00:00Z"
        );
        assert_eq!(
            run(
                "datetime_local_to_utc",
                &[dt("2022-03-27T03:00:00Z"), s("Nowhere/City")]
            ),
            "null"
        );
    }
}
