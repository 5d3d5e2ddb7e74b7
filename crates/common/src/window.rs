//! The `since` / `until` of a query request: ISO 8601 datetimes (a datetime without an
//! offset is read in the request's time zone), relative expressions (`1h`, `30m`, `7d`,
//! meaning that long before now), or `now`.

use crate::TrawlError;
use crate::time::{now_nanos, parse_duration};
use chrono::{NaiveDate, NaiveDateTime, TimeZone};
use chrono_tz::Tz;

/// A resolved query window in nanoseconds since the epoch: `[since, until)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueryWindow {
    pub since: Option<i64>,
    pub until: Option<i64>,
}

/// Resolves `since`/`until` texts relative to `now` in `timezone` (IANA name, default UTC).
pub fn resolve_window(
    since: Option<&str>,
    until: Option<&str>,
    timezone: Option<&str>,
    now: i64,
) -> Result<QueryWindow, TrawlError> {
    let zone: Tz = match timezone.map(str::trim).filter(|z| !z.is_empty()) {
        None => Tz::UTC,
        Some(name) => name
            .parse()
            .map_err(|_| TrawlError::bad_request(format!("unknown time zone '{name}'")))?,
    };
    let since = since.map(|s| resolve_point(s, zone, now, "since")).transpose()?;
    let until = until.map(|s| resolve_point(s, zone, now, "until")).transpose()?;
    if let (Some(since), Some(until)) = (since, until)
        && since > until
    {
        return Err(TrawlError::bad_request("'since' is later than 'until'"));
    }
    Ok(QueryWindow { since, until })
}

/// [`resolve_window`] at the current time.
pub fn resolve_window_now(
    since: Option<&str>,
    until: Option<&str>,
    timezone: Option<&str>,
) -> Result<QueryWindow, TrawlError> {
    resolve_window(since, until, timezone, now_nanos())
}

fn resolve_point(text: &str, zone: Tz, now: i64, field: &str) -> Result<i64, TrawlError> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("now") {
        return Ok(now);
    }
    let relative = text.strip_prefix('-').unwrap_or(text);
    if let Some(nanos) = parse_duration(relative) {
        return Ok(now.saturating_sub(nanos));
    }
    if let Ok(with_offset) = chrono::DateTime::parse_from_rfc3339(text) {
        return with_offset
            .timestamp_nanos_opt()
            .ok_or_else(|| TrawlError::bad_request(format!("'{field}' is out of range")));
    }
    let naive = [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
    .or_else(|| {
        NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
    });
    match naive.and_then(|n| zone.from_local_datetime(&n).earliest()) {
        Some(local) => local
            .timestamp_nanos_opt()
            .ok_or_else(|| TrawlError::bad_request(format!("'{field}' is out of range"))),
        None => Err(TrawlError::bad_request(format!(
            "'{field}' must be an ISO 8601 datetime or a relative time such as 1h or 30m, found '{text}'"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000_000_000;

    #[test]
    fn relative_and_absolute_points() -> Result<(), TrawlError> {
        let now = 100 * HOUR;
        let w = resolve_window(Some("1h"), Some("now"), None, now)?;
        assert_eq!(
            w,
            QueryWindow {
                since: Some(99 * HOUR),
                until: Some(now)
            }
        );
        let w = resolve_window(Some("1970-01-01T01:00:00Z"), None, None, now)?;
        assert_eq!(w.since, Some(HOUR));
        // A naive datetime is read in the given zone: 02:00 in Berlin (winter) is 01:00 UTC.
        let w = resolve_window(Some("1970-01-01 02:00"), None, Some("Europe/Berlin"), now)?;
        assert_eq!(w.since, Some(HOUR));
        Ok(())
    }

    #[test]
    fn bad_inputs_are_bad_requests() {
        assert!(resolve_window(Some("yesterday-ish"), None, None, 0).is_err());
        assert!(resolve_window(None, None, Some("Mars/Olympus"), 0).is_err());
        assert!(resolve_window(Some("1h"), Some("2h"), None, 10 * HOUR).is_err());
    }
}
