//! Time units: KQL counts in 100 ns ticks, storage in nanoseconds since the Unix epoch.

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};

pub const NANOS_PER_TICK: i64 = 100;
pub const TICKS_PER_SECOND: i64 = 10_000_000;
pub const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// Current time in nanoseconds since the Unix epoch.
pub fn now_nanos() -> i64 {
    Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX)
}

/// Formats nanoseconds since the epoch as ISO 8601 UTC with 7 fractional digits
/// (KQL's 100 ns precision), e.g. `2024-01-02T03:04:05.1234567Z`.
pub fn format_datetime(nanos: i64) -> String {
    let secs = nanos.div_euclid(NANOS_PER_SECOND);
    let sub = nanos.rem_euclid(NANOS_PER_SECOND) as u32;
    match Utc.timestamp_opt(secs, sub - sub % 100) {
        chrono::LocalResult::Single(dt) => {
            let text = dt.to_rfc3339_opts(SecondsFormat::Nanos, true);
            // Nanos gives 9 digits; KQL prints 7.
            match text.rfind('.') {
                Some(dot) if text.len() >= dot + 10 => format!("{}Z", &text[..dot + 8]),
                _ => text,
            }
        }
        _ => nanos.to_string(),
    }
}

/// Formats a timespan given in nanoseconds as KQL prints it: `[-][d.]hh:mm:ss[.fffffff]`.
pub fn format_timespan(nanos: i64) -> String {
    let negative = nanos < 0;
    let ticks = (nanos / NANOS_PER_TICK).unsigned_abs();
    let ticks_per_second = TICKS_PER_SECOND as u64;
    let total_seconds = ticks / ticks_per_second;
    let fraction = ticks % ticks_per_second;
    let days = total_seconds / 86_400;
    let hours = (total_seconds / 3600) % 24;
    let minutes = (total_seconds / 60) % 60;
    let seconds = total_seconds % 60;
    let mut out = String::with_capacity(20);
    if negative {
        out.push('-');
    }
    if days > 0 {
        out.push_str(&format!("{days}."));
    }
    out.push_str(&format!("{hours:02}:{minutes:02}:{seconds:02}"));
    if fraction > 0 {
        out.push_str(&format!(".{fraction:07}"));
    }
    out
}

/// Parses the datetime texts KQL accepts into nanoseconds since the epoch: ISO 8601 / RFC 3339
/// (`T` or a space, optional fraction, `Z` or an offset; none means UTC), bare dates
/// (`2024-01-02`, `2024/01/02`, `20240102`), US dates (`01-02-2024`, `01/02/2024 10:00:00`),
/// RFC 822/1123, and `2024, 1, 2[, h, m, s]`.
pub fn parse_datetime(text: &str) -> Option<i64> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(text) {
        return dt.timestamp_nanos_opt();
    }
    let without_zone = text
        .strip_suffix('Z')
        .or_else(|| text.strip_suffix('z'))
        .or_else(|| text.strip_suffix(" UTC"))
        .unwrap_or(text);
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
        "%Y/%m/%d %H:%M:%S%.f",
        "%Y-%m-%dT%H",
        "%m/%d/%Y %H:%M:%S%.f",
        "%m/%d/%Y %H:%M",
        "%m-%d-%Y %H:%M:%S%.f",
    ] {
        if let Ok(naive) = chrono::NaiveDateTime::parse_from_str(without_zone, format) {
            return naive.and_utc().timestamp_nanos_opt();
        }
    }
    for format in ["%Y-%m-%d", "%Y/%m/%d", "%Y%m%d", "%m-%d-%Y", "%m/%d/%Y"] {
        if let Ok(date) = chrono::NaiveDate::parse_from_str(without_zone, format) {
            return date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_nanos_opt();
        }
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%d %H:%M:%S%.f%z",
        "%Y-%m-%d %H:%M:%S%.f %z",
    ] {
        if let Ok(dt) = DateTime::parse_from_str(text, format) {
            return dt.timestamp_nanos_opt();
        }
    }
    if let Ok(dt) = DateTime::parse_from_rfc2822(text) {
        return dt.timestamp_nanos_opt();
    }
    parse_datetime_parts(without_zone)
}

/// `2025, 6, 14[, 10, 30, 0.5]`: year, month, day and optional hour, minute, second.
fn parse_datetime_parts(text: &str) -> Option<i64> {
    if !text.contains(',') {
        return None;
    }
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() < 3 || parts.len() > 6 {
        return None;
    }
    let number = |i: usize| parts.get(i).map_or(Some(0), |p| p.parse::<u32>().ok());
    let year: i32 = parts[0].parse().ok()?;
    let date = chrono::NaiveDate::from_ymd_opt(year, number(1)?, number(2)?)?;
    let seconds: f64 = parts.get(5).map_or(Some(0.0), |p| p.parse().ok())?;
    let whole = seconds.trunc() as u32;
    let nanos = ((seconds - seconds.trunc()) * 1e9).round() as u32;
    let time = chrono::NaiveTime::from_hms_nano_opt(number(3)?, number(4)?, whole, nanos)?;
    date.and_time(time).and_utc().timestamp_nanos_opt()
}

/// Parses a relative duration such as `1h`, `30m`, `7d`, `15s`, `100ms`, `2.5h` into
/// nanoseconds.
pub fn parse_duration(text: &str) -> Option<i64> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let unit_nanos: f64 = match unit {
        "d" | "day" | "days" => 86_400e9,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600e9,
        "m" | "min" | "minute" | "minutes" => 60e9,
        "s" | "sec" | "second" | "seconds" => 1e9,
        "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1e6,
        "microsecond" | "microseconds" | "us" => 1e3,
        "tick" | "ticks" => 100.0,
        "ns" | "nanosecond" | "nanoseconds" => 1.0,
        _ => return None,
    };
    Some((number * unit_nanos) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetime_prints_seven_fraction_digits() {
        assert_eq!(
            format_datetime(1_700_000_000_123_456_789),
            "2023-11-14T22:13:20.1234567Z"
        );
        assert_eq!(format_datetime(0), "1970-01-01T00:00:00.0000000Z");
    }

    #[test]
    fn timespan_prints_days_and_ticks() {
        assert_eq!(format_timespan(1_500_000_000), "00:00:01.5000000");
        assert_eq!(
            format_timespan(86_400 * NANOS_PER_SECOND + 3_600 * NANOS_PER_SECOND),
            "1.01:00:00"
        );
        assert_eq!(format_timespan(-60 * NANOS_PER_SECOND), "-00:01:00");
    }

    #[test]
    fn parses_datetimes_and_durations() {
        assert_eq!(parse_datetime("1970-01-01T00:00:01Z"), Some(NANOS_PER_SECOND));
        assert_eq!(parse_datetime("1970-01-01 00:00:01"), Some(NANOS_PER_SECOND));
        assert_eq!(parse_datetime("1970-01-02"), Some(86_400 * NANOS_PER_SECOND));
        assert_eq!(parse_datetime("01-02-1970"), Some(86_400 * NANOS_PER_SECOND));
        assert_eq!(parse_datetime("01/02/1970 00:00:01"), Some(86_401 * NANOS_PER_SECOND));
        assert_eq!(parse_datetime("1970, 1, 2"), Some(86_400 * NANOS_PER_SECOND));
        assert_eq!(parse_datetime("1970, 1, 1, 0, 0, 1.5"), Some(1_500_000_000));
        assert_eq!(parse_duration("1h"), Some(3_600 * NANOS_PER_SECOND));
        assert_eq!(parse_duration("30m"), Some(1_800 * NANOS_PER_SECOND));
        assert_eq!(parse_duration("100ms"), Some(100_000_000));
        assert_eq!(parse_duration("abc"), None);
    }
}
