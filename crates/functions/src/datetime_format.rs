//! `format_datetime` and `format_timespan`: .NET-style custom format specifiers
//! (`yyyy-MM-dd HH:mm:ss.fffffff`, `dd.hh:mm:ss`, ...). Letters that are not specifiers and
//! every other character are copied as they are.

use chrono::{DateTime, Datelike, Timelike};
use datafusion::error::Result;

use crate::rowfn::{Out, Val, arg, str_arg};

/// Splits a format into runs of one repeated letter (specifiers) and literal characters.
fn tokens(format: &str) -> Vec<(char, usize)> {
    let mut out: Vec<(char, usize)> = Vec::new();
    for c in format.chars() {
        match out.last_mut() {
            Some((last, n)) if *last == c && c.is_ascii_alphabetic() => *n += 1,
            _ => out.push((c, 1)),
        }
    }
    out
}

/// Fraction digits: `f` keeps trailing zeros, `F` drops them (and a dot before nothing).
fn fraction(out: &mut String, ticks: i64, letter: char, n: usize) {
    let digits = format!("{ticks:07}");
    let taken = &digits[..n.min(7)];
    if letter == 'f' {
        out.push_str(taken);
        if n > 7 {
            out.push_str(&"0".repeat(n - 7));
        }
    } else {
        let trimmed = taken.trim_end_matches('0');
        if trimmed.is_empty() && out.ends_with('.') {
            out.pop();
        }
        out.push_str(trimmed);
    }
}

fn pad(out: &mut String, value: i64, width: usize) {
    out.push_str(&format!("{value:0width$}"));
}

/// `format_datetime(datetime, format)`.
pub fn format_datetime(args: &[Val]) -> Result<Out> {
    let Some(ns) = arg(args, 0).datetime() else {
        return Ok(Out::Str(String::new()));
    };
    let t = DateTime::from_timestamp_nanos(ns).naive_utc();
    let ticks = t.nanosecond() as i64 / 100;
    let mut out = String::new();
    for (c, n) in tokens(str_arg(args, 1)) {
        match c {
            'y' => match n {
                1 => out.push_str(&(t.year() % 100).to_string()),
                2 => pad(&mut out, (t.year() % 100) as i64, 2),
                _ => pad(&mut out, t.year() as i64, n),
            },
            'M' => match n {
                1 => out.push_str(&t.month().to_string()),
                2 => pad(&mut out, t.month() as i64, 2),
                3 => out.push_str(&t.format("%b").to_string()),
                _ => out.push_str(&t.format("%B").to_string()),
            },
            'd' => match n {
                1 => out.push_str(&t.day().to_string()),
                2 => pad(&mut out, t.day() as i64, 2),
                3 => out.push_str(&t.format("%a").to_string()),
                _ => out.push_str(&t.format("%A").to_string()),
            },
            'H' => pad(&mut out, t.hour() as i64, n.min(2)),
            'h' => {
                let h = match t.hour() % 12 {
                    0 => 12,
                    h => h,
                };
                pad(&mut out, h as i64, n.min(2));
            }
            'm' => pad(&mut out, t.minute() as i64, n.min(2)),
            's' => pad(&mut out, t.second() as i64, n.min(2)),
            'f' | 'F' => fraction(&mut out, ticks, c, n),
            't' => {
                let marker = if t.hour() < 12 { "AM" } else { "PM" };
                out.push_str(if n == 1 { &marker[..1] } else { marker });
            }
            other => out.push_str(&other.to_string().repeat(n)),
        }
    }
    Ok(Out::Str(out))
}

/// `format_timespan(timespan, format)`.
pub fn format_timespan(args: &[Val]) -> Result<Out> {
    let Some(ns) = arg(args, 0).timespan() else {
        return Ok(Out::Str(String::new()));
    };
    let ticks_total = (ns / 100).unsigned_abs() as i64;
    let ticks = ticks_total % 10_000_000;
    let seconds = ticks_total / 10_000_000;
    let (days, hours, minutes, secs) = (seconds / 86_400, seconds / 3_600 % 24, seconds / 60 % 60, seconds % 60);
    let mut out = String::new();
    if ns < 0 {
        out.push('-');
    }
    for (c, n) in tokens(str_arg(args, 1)) {
        match c {
            'd' => pad(&mut out, days, n),
            'h' | 'H' => pad(&mut out, hours, n.min(2)),
            'm' => pad(&mut out, minutes, n.min(2)),
            's' => pad(&mut out, secs, n.min(2)),
            'f' | 'F' => fraction(&mut out, ticks, c, n),
            other => out.push_str(&other.to_string().repeat(n)),
        }
    }
    Ok(Out::Str(out))
}

#[cfg(test)]
mod tests {
    use crate::testing::{dt, run, s, ts};

    #[test]
    fn datetimes() {
        let t = dt("2017-01-29T09:00:05Z");
        assert_eq!(
            run("format_datetime", &[t.clone(), s("yy-MM-dd [HH:mm:ss]")]),
            "17-01-29 [09:00:05]"
        );
        assert_eq!(
            run("format_datetime", &[t.clone(), s("yyyy-M-dd [H:mm:ss]")]),
            "2017-1-29 [9:00:05]"
        );
        assert_eq!(
            run("format_datetime", &[t.clone(), s("yy-MM-dd HH:mm:ss")]),
            "17-01-29 09:00:05"
        );
        assert_eq!(run("format_datetime", &[t.clone(), s("hh:mm tt")]), "09:00 AM");
        assert_eq!(run("format_datetime", &[t.clone(), s("HH:mm:ss.FFF")]), "09:00:05");
        let f = dt("2017-01-29T21:00:05.1234567Z");
        assert_eq!(
            run("format_datetime", &[f.clone(), s("h:mm:ss.fff tt")]),
            "9:00:05.123 PM"
        );
        assert_eq!(run("format_datetime", &[f, s("ss.FFFFFFF")]), "05.1234567");
    }

    #[test]
    fn timespans() {
        let t = ts(((29 * 86_400 + 9 * 3_600 + 5) * 10_000_000 + 1_234_500) * 100);
        assert_eq!(
            run("format_timespan", &[t.clone(), s("dd.hh:mm:ss:FF")]),
            "29.09:00:05:12"
        );
        assert_eq!(
            run("format_timespan", &[t.clone(), s("ddd.h:mm:ss [fffffff]")]),
            "029.9:00:05 [1234500]"
        );
        assert_eq!(run("format_timespan", &[ts(-3_600_000_000_000), s("hh:mm")]), "-01:00");
    }
}
