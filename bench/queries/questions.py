"""The benchmark questions Q1–Q13 (/work/shared/bench-queries.md): the KQL sent to Trawl, the
equivalent SQL run on DuckDB and on ClickHouse (chdb), and how their answers are compared.

Placeholders, filled from the generator's manifest: `{rare_token}`, `{needle}` (trace id),
`{end}`, `{end_1h}`, `{end_15m}` (the window's end, and one hour and 15 minutes before it,
as `YYYY-MM-DDTHH:MM:SSZ`); in the ClickHouse SQL also `{logs}` and `{spans}`, the paths of the
two exported files (`file_parameters`).

DuckDB reads two views, `logs` and `spans`, over the exported files: the columns of Trawl's
row layout, bags (`resource`, `attributes`, `events`, …) as JSON text, `body` as plain text,
`timestamp` as TIMESTAMPTZ_NS (time literals are cast to it), `duration` as BIGINT nanoseconds.
Table `default` holds both kinds of rows, so a question whose filter also matches spans (Q9,
Q10, Q13) or that asks for both (Q11) reads `logs UNION ALL spans`. The SQL returns datetimes
as `epoch_ns(…)`.

ClickHouse reads the same files with the table function `file('{logs}', Parquet)` (the types
come from the Parquet schema: `timestamp` DateTime64(9, 'UTC'), bags String, `body` and the
other optional columns Nullable), in a session with time zone UTC. Its SQL has the same shape
as DuckDB's (the same `UNION ALL`s; one that is ordered is wrapped in a subquery, since a
trailing ORDER BY would bind to its last SELECT only), parses time literals with
`parseDateTime64BestEffort(…, 9, 'UTC')` and returns datetimes as `toUnixTimestamp64Nano(…)`.

Translations of KQL semantics (DuckDB; ClickHouse):
- `has` (whole terms: maximal runs of ASCII letters, digits and non-ASCII bytes, compared
  case-insensitively) is a case-insensitive regexp with that term boundary on both sides:
  `regexp_matches(body, '(?i)…')`; `match(body, '(?i)…')` with the same pattern (both RE2);
- `contains` (case-insensitive) is `ILIKE '%…%'` on both;
- `percentiles` (nearest rank, estimated with a t-digest) is exact on both, compared within
  10 %: the digest's error is small in rank, but in a sparse tail a small rank error is a
  large difference in value. DuckDB: `quantile_disc` (the nearest rank). ClickHouse:
  `quantilesExactLow`, the value of 0-based rank floor(q·n) (the nearest rank, or the value
  after it when q·n is whole; 50 % is the lower median, the nearest rank);
- `dcount` (a HyperLogLog estimate) is exact, compared within 3 %: `count(DISTINCT …)`;
  `uniqExact(…)` (DuckDB's own estimate, `approx_count_distinct`, is off by up to ~6 % on
  this data);
- `tostring(bag['k'])` is `json_extract_string(bag, '$."k"')`; `JSONExtractString(bag, 'k')`
  (one key, dots included; a value that is not a string gives its JSON text on both);
- `toint(bag['k'])` is `TRY_CAST(json_extract_string(bag, '$."k"') AS INTEGER)`;
  `toInt32OrNull(JSONExtractString(bag, 'k'))`;
- `bin(timestamp, 5m)` is `time_bucket(INTERVAL 5 MINUTE, …)`;
  `toStartOfInterval(…, INTERVAL 5 MINUTE)`;
- absent strings are "" in KQL, NULL in DuckDB and in ClickHouse's Nullable columns, and ""
  from `JSONExtractString`; all compare as "" (and group together in KQL and ClickHouse).
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass
from pathlib import Path

# Column kinds of a result: how a cell is read from each side and compared.
STR = "str"  # text; null and "" are the same
INT = "int"  # exact integer
TIME = "time"  # Trawl: ISO 8601 text; SQL: nanoseconds since the epoch; compared in 100 ns ticks
SPAN = "span"  # Trawl: [-][d.]hh:mm:ss[.fffffff]; SQL: nanoseconds; compared in ticks
PCT = "pct"  # a percentile (timespan), within 10 %
EST = "est"  # an estimated count, within 3 %

TOLERANCE = {PCT: 0.10, EST: 0.03}
EXACT = (STR, INT, TIME, SPAN)


@dataclass(frozen=True)
class Question:
    id: str
    title: str
    kql: str
    sql: str  # DuckDB
    ch_sql: str  # ClickHouse (chdb)
    kinds: tuple[str, ...]
    # For `top N by <count>` answers: the index of the count column. Rows tied at the cut
    # may legitimately differ between the sides, so only their counts are compared.
    top_by: int | None = None


SERVICE = """json_extract_string(resource, '$."service.name"')"""
# A character that is not part of a term for `has` (`functions::tokenizer`); used with (?i).
HAS_BOUNDARY = r"[^0-9a-z\x{80}-\x{10ffff}]"

# ClickHouse: the two files, and the same expressions.
CH_LOGS = "file('{logs}', Parquet)"
CH_SPANS = "file('{spans}', Parquet)"
CH_SERVICE = "JSONExtractString(resource, 'service.name')"
# In a ClickHouse string literal a backslash escapes: doubled, RE2 sees HAS_BOUNDARY.
CH_HAS_BOUNDARY = HAS_BOUNDARY.replace("\\", "\\\\")

QUESTIONS = [
    Question(
        "Q1",
        "count all logs",
        "default | where isnotempty(body) | count",
        "SELECT count(*) FROM logs WHERE body <> ''",
        f"SELECT count(*) FROM {CH_LOGS} WHERE body <> ''",
        (INT,),
    ),
    Question(
        "Q2",
        "count by severity",
        "default | where isnotempty(body) | summarize count() by severity_text | order by count_ desc",
        "SELECT severity_text, count(*) AS count_ FROM logs WHERE body <> '' "
        "GROUP BY severity_text ORDER BY count_ DESC",
        f"SELECT severity_text, count(*) AS count_ FROM {CH_LOGS} WHERE body <> '' "
        "GROUP BY severity_text ORDER BY count_ DESC",
        (STR, INT),
    ),
    Question(
        "Q3",
        "errors per 5 minutes",
        'default | where severity_text == "ERROR" | summarize count() by bin(timestamp, 5m) '
        "| order by timestamp asc",
        "SELECT epoch_ns(time_bucket(INTERVAL 5 MINUTE, timestamp::TIMESTAMPTZ)) AS bin, count(*) AS count_ "
        "FROM logs WHERE severity_text = 'ERROR' GROUP BY bin ORDER BY bin",
        "SELECT toUnixTimestamp64Nano(toDateTime64(toStartOfInterval(timestamp, INTERVAL 5 MINUTE), 9)) AS bin, "
        f"count(*) AS count_ FROM {CH_LOGS} WHERE severity_text = 'ERROR' GROUP BY bin ORDER BY bin",
        (TIME, INT),
    ),
    Question(
        "Q4",
        "top services by errors",
        'default | where severity_text == "ERROR" | summarize errors = count() '
        "by service = tostring(resource['service.name']) | top 10 by errors desc",
        f"SELECT {SERVICE} AS service, count(*) AS errors FROM logs WHERE severity_text = 'ERROR' "
        "GROUP BY service ORDER BY errors DESC LIMIT 10",
        f"SELECT {CH_SERVICE} AS service, count(*) AS errors FROM {CH_LOGS} WHERE severity_text = 'ERROR' "
        "GROUP BY service ORDER BY errors DESC LIMIT 10",
        (STR, INT),
        top_by=1,
    ),
    Question(
        "Q5",
        "needle in a haystack",
        'default | where body has "{rare_token}" | project timestamp, severity_text, body, trace_id '
        "| order by timestamp asc",
        "SELECT epoch_ns(timestamp), severity_text, body, trace_id FROM logs "
        f"WHERE regexp_matches(body, '(?i)(^|{HAS_BOUNDARY}){{rare_token}}({HAS_BOUNDARY}|$)') "
        "ORDER BY timestamp",
        f"SELECT toUnixTimestamp64Nano(timestamp), severity_text, body, trace_id FROM {CH_LOGS} "
        f"WHERE match(body, '(?i)(^|{CH_HAS_BOUNDARY}){{rare_token}}({CH_HAS_BOUNDARY}|$)') "
        "ORDER BY timestamp",
        (TIME, STR, STR, STR),
    ),
    Question(
        "Q6",
        "substring search",
        'default | where body contains "deadlock" | count',
        "SELECT count(*) FROM logs WHERE body ILIKE '%deadlock%'",
        f"SELECT count(*) FROM {CH_LOGS} WHERE body ILIKE '%deadlock%'",
        (INT,),
    ),
    Question(
        "Q7",
        "latency percentiles",
        "default | where isnotempty(span_name) | summarize percentiles(duration, 50, 95, 99) "
        "by service = tostring(resource['service.name'])",
        "SELECT service, p[1], p[2], p[3] FROM ("
        f"SELECT {SERVICE} AS service, quantile_disc(duration, [0.5, 0.95, 0.99]) AS p "
        "FROM spans WHERE span_name <> '' GROUP BY service)",
        "SELECT service, p[1], p[2], p[3] FROM ("
        f"SELECT {CH_SERVICE} AS service, quantilesExactLow(0.5, 0.95, 0.99)(duration) AS p "
        f"FROM {CH_SPANS} WHERE span_name <> '' GROUP BY service)",
        (STR, PCT, PCT, PCT),
    ),
    Question(
        "Q8",
        "distinct traces per service",
        "default | where isnotempty(span_name) | summarize traces = dcount(trace_id) "
        "by service = tostring(resource['service.name']) | order by traces desc",
        f"SELECT {SERVICE} AS service, count(DISTINCT trace_id) AS traces FROM spans "
        "WHERE span_name <> '' GROUP BY service ORDER BY traces DESC",
        f"SELECT {CH_SERVICE} AS service, uniqExact(trace_id) AS traces FROM {CH_SPANS} "
        "WHERE span_name <> '' GROUP BY service ORDER BY traces DESC",
        (STR, EST),
    ),
    Question(
        "Q9",
        "server errors by route",
        "default | where toint(attributes['http.status_code']) >= 500 "
        "| summarize count() by route = tostring(attributes['http.route']) | top 10 by count_ desc",
        "WITH all_rows AS (SELECT attributes FROM logs UNION ALL SELECT attributes FROM spans) "
        """SELECT json_extract_string(attributes, '$."http.route"') AS route, count(*) AS count_ """
        """FROM all_rows WHERE TRY_CAST(json_extract_string(attributes, '$."http.status_code"') """
        "AS INTEGER) >= 500 GROUP BY route ORDER BY count_ DESC LIMIT 10",
        f"WITH all_rows AS (SELECT attributes FROM {CH_LOGS} UNION ALL SELECT attributes FROM {CH_SPANS}) "
        "SELECT JSONExtractString(attributes, 'http.route') AS route, count(*) AS count_ FROM all_rows "
        "WHERE toInt32OrNull(JSONExtractString(attributes, 'http.status_code')) >= 500 "
        "GROUP BY route ORDER BY count_ DESC LIMIT 10",
        (STR, INT),
        top_by=1,
    ),
    Question(
        "Q10",
        "last hour by host",
        "default | where timestamp between (datetime({end_1h}) .. datetime({end})) "
        "| summarize count() by host = tostring(resource['host.name']) | order by count_ desc",
        "WITH all_rows AS (SELECT timestamp, resource FROM logs "
        "UNION ALL SELECT timestamp, resource FROM spans) "
        """SELECT json_extract_string(resource, '$."host.name"') AS host, count(*) AS count_ """
        "FROM all_rows WHERE timestamp BETWEEN '{end_1h}'::TIMESTAMPTZ_NS AND '{end}'::TIMESTAMPTZ_NS "
        "GROUP BY host ORDER BY count_ DESC",
        f"WITH all_rows AS (SELECT timestamp, resource FROM {CH_LOGS} "
        f"UNION ALL SELECT timestamp, resource FROM {CH_SPANS}) "
        "SELECT JSONExtractString(resource, 'host.name') AS host, count(*) AS count_ FROM all_rows "
        "WHERE timestamp BETWEEN parseDateTime64BestEffort('{end_1h}', 9, 'UTC') "
        "AND parseDateTime64BestEffort('{end}', 9, 'UTC') GROUP BY host ORDER BY count_ DESC",
        (STR, INT),
    ),
    Question(
        "Q11",
        "one trace, spans and logs",
        'default | where trace_id == "{needle}" '
        "| project timestamp, span_id, name = coalesce(span_name, tostring(body)) | order by timestamp asc",
        "SELECT epoch_ns(timestamp) AS ts, span_id, span_name AS name FROM spans WHERE trace_id = '{needle}' "
        "UNION ALL SELECT epoch_ns(timestamp), span_id, body FROM logs WHERE trace_id = '{needle}' "
        "ORDER BY ts",
        "SELECT * FROM (SELECT toUnixTimestamp64Nano(timestamp) AS ts, span_id, span_name AS name "
        f"FROM {CH_SPANS} WHERE trace_id = '{{needle}}' UNION ALL SELECT toUnixTimestamp64Nano(timestamp), "
        f"span_id, body FROM {CH_LOGS} WHERE trace_id = '{{needle}}') ORDER BY ts",
        (TIME, STR, STR),
    ),
    Question(
        "Q12",
        "slowest spans",
        "default | where isnotempty(span_name) | top 20 by duration desc "
        "| project timestamp, trace_id, span_name, duration, service = tostring(resource['service.name'])",
        f"SELECT epoch_ns(timestamp), trace_id, span_name, duration, {SERVICE} AS service FROM spans "
        "WHERE span_name <> '' ORDER BY duration DESC LIMIT 20",
        f"SELECT toUnixTimestamp64Nano(timestamp), trace_id, span_name, duration, {CH_SERVICE} AS service "
        f"FROM {CH_SPANS} WHERE span_name <> '' ORDER BY duration DESC LIMIT 20",
        (TIME, STR, STR, SPAN, STR),
    ),
    Question(
        "Q13",
        "tail",
        "default | where timestamp >= datetime({end_15m}) | top 100 by timestamp desc "
        "| project timestamp, severity_text, body",
        "WITH all_rows AS (SELECT timestamp, severity_text, body FROM logs "
        "UNION ALL SELECT timestamp, NULL, NULL FROM spans) "
        "SELECT epoch_ns(timestamp) AS ts, severity_text, body FROM all_rows "
        "WHERE timestamp >= '{end_15m}'::TIMESTAMPTZ_NS ORDER BY ts DESC LIMIT 100",
        f"WITH all_rows AS (SELECT timestamp, severity_text, body FROM {CH_LOGS} "
        f"UNION ALL SELECT timestamp, NULL, NULL FROM {CH_SPANS}) "
        "SELECT toUnixTimestamp64Nano(timestamp) AS ts, severity_text, body FROM all_rows "
        "WHERE timestamp >= parseDateTime64BestEffort('{end_15m}', 9, 'UTC') ORDER BY ts DESC LIMIT 100",
        (TIME, STR, STR),
    ),
]


ISO_SECONDS = "%Y-%m-%dT%H:%M:%SZ"


def parse_iso_ticks(text: str) -> int:
    """`2026-01-01T12:00:00.0010000Z` → 100 ns ticks since the epoch."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    seconds = calendar.timegm(time.strptime(whole + "Z", ISO_SECONDS))
    return seconds * 10_000_000 + int((fraction + "0000000")[:7])


TIMESPAN = re.compile(r"(-?)(?:(\d+)\.)?(\d+):(\d+):(\d+)(?:\.(\d{1,7}))?")


def parse_timespan_ticks(text: str) -> int:
    """`[-][d.]hh:mm:ss[.fffffff]` → 100 ns ticks."""
    match = TIMESPAN.fullmatch(text)
    if match is None:
        raise ValueError(f"not a timespan: {text!r}")
    sign, days, hours, minutes, seconds, fraction = match.groups()
    total = ((int(days or 0) * 24 + int(hours)) * 60 + int(minutes)) * 60 + int(seconds)
    ticks = total * 10_000_000 + int(((fraction or "") + "0000000")[:7])
    return -ticks if sign else ticks


def from_trawl(kind: str, value):
    if value is None:
        return "" if kind == STR else None
    if kind == TIME:
        return parse_iso_ticks(value)
    if kind in (SPAN, PCT):
        return parse_timespan_ticks(value)
    return value


def from_sql(kind: str, value):
    if value is None:
        return "" if kind == STR else None
    if kind in (TIME, SPAN, PCT):
        return value // 100
    return value


def cells_match(kind: str, a, b) -> bool:
    if kind in EXACT or a is None or b is None:
        return a == b
    return abs(a - b) <= TOLERANCE[kind] * max(abs(a), abs(b))


def sort_key(kinds: tuple[str, ...], row: tuple) -> tuple:
    return tuple(repr(cell) for kind, cell in zip(kinds, row) if kind in EXACT)


def split_at_cut(rows: list[tuple], column: int) -> tuple[list[tuple], list[tuple]]:
    """The rows above the smallest count, and the rows at it."""
    cut = min(row[column] for row in rows)
    return [r for r in rows if r[column] != cut], sorted(r for r in rows if r[column] == cut)


def compare(question: Question, trawl_rows: list, sql_rows: list, peer: str = "DuckDB") -> tuple[bool, str]:
    """Whether Trawl's answer and the answer of the SQL engine `peer` are the same (as multisets
    of rows; see `Question.top_by`), and if not, the first difference."""
    kinds = question.kinds
    ours = [tuple(from_trawl(k, v) for k, v in zip(kinds, row)) for row in trawl_rows]
    theirs = [tuple(from_sql(k, v) for k, v in zip(kinds, row)) for row in sql_rows]
    if len(ours) != len(theirs):
        return False, f"{len(ours)} rows from Trawl, {len(theirs)} from {peer}"
    note = ""
    if question.top_by is not None and ours:
        column = question.top_by
        if sorted(r[column] for r in ours) != sorted(r[column] for r in theirs):
            return False, "the counts differ"
        (ours, ours_cut), (theirs, theirs_cut) = split_at_cut(ours, column), split_at_cut(theirs, column)
        if ours_cut != theirs_cut:
            note = f"ties at the cut: the last {len(ours_cut)} rows have the same counts, other keys"
    ours.sort(key=lambda row: sort_key(kinds, row))
    theirs.sort(key=lambda row: sort_key(kinds, row))
    for a, b in zip(ours, theirs):
        if not all(cells_match(k, x, y) for k, x, y in zip(kinds, a, b)):
            return False, f"Trawl {shorten(a)} vs {peer} {shorten(b)}"
    return True, note


def shorten(row: tuple, limit: int = 160) -> str:
    text = repr(row)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parameters(manifest: dict) -> dict[str, str]:
    """The placeholder values of a data set, from the generator's manifest."""
    end = calendar.timegm(time.strptime(manifest["end"], ISO_SECONDS))
    return {
        "rare_token": manifest["rare_token"],
        "needle": manifest["needle_trace_id"],
        "end": iso_utc(end),
        "end_1h": iso_utc(end - 3600),
        "end_15m": iso_utc(end - 900),
    }


def file_parameters(logs_file: Path, spans_file: Path) -> dict[str, str]:
    """The placeholders `{logs}` and `{spans}` of the ClickHouse SQL: the paths, escaped for the
    inside of a string literal."""
    return {
        name: str(path).replace("\\", "\\\\").replace("'", "\\'")
        for name, path in (("logs", logs_file), ("spans", spans_file))
    }


def iso_utc(seconds: int) -> str:
    return time.strftime(ISO_SECONDS, time.gmtime(seconds))


def fill(text: str, params: dict[str, str]) -> str:
    for name, value in params.items():
        text = text.replace("{" + name + "}", value)
    return text
