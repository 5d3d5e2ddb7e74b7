"""Query benchmark: the questions Q1–Q13 of /work/shared/bench-queries.md as KQL on Trawl
(`POST /v2/rest/query` at the gateway) and as SQL on DuckDB and on ClickHouse (chdb) over the same records
exported to Parquet; median times, the ratios of Trawl to each and to the faster of the two, and whether each
gave Trawl's answer.

Run it through run.sh (which provides DuckDB and chdb); see bench/README.md, "Query benchmark".
"""

from __future__ import annotations

import argparse
import os
import json
import statistics
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from functools import partial
from pathlib import Path

import duckdb

from dataset import LOCAL, TRAWL_BIN, TrawlServer, ensure_exported, ensure_loaded, live_segments, log, sql_string
from questions import QUESTIONS, Question, compare, file_parameters, fill, parameters

try:
    import chdb
except ImportError as error:
    chdb = None  # every chdb query fails with CHDB_MISSING; the other sides still run
    CHDB_MISSING = f"chdb is not installed ({error})"

# The SQL engines Trawl is compared with: result key, name in reports, the Question field of their SQL.
PEERS = (("duckdb", "DuckDB", "sql"), ("chdb", "chdb", "ch_sql"))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="/tmp/trawl-bench-data", help="data set directory")
    parser.add_argument("--logs", type=int, help="log records to load (default 10,000,000)")
    parser.add_argument("--spans", type=int, help="spans to load (default 5,000,000)")
    parser.add_argument("--seed", type=int, help="generator seed (default 42)")
    parser.add_argument("--runs", type=positive, default=5, help="timed runs per query and side (after 1 warm-up)")
    parser.add_argument("--only", help="comma-separated question ids, e.g. Q5,Q9")
    parser.add_argument(
        "--trawl-url", help="gateway URL of a running server with this data set (token in TRAWL_TOKEN), e.g. http://127.0.0.1:9500"
    )
    parser.add_argument("--json-out", help="where to write all figures (default DIR/query-bench.json)")
    return parser.parse_args()


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def selected(only: str | None) -> list[Question]:
    if not only:
        return QUESTIONS
    wanted = [item.strip().upper() for item in only.split(",") if item.strip()]
    known = {q.id for q in QUESTIONS}
    unknown = [item for item in wanted if item not in known]
    if unknown:
        raise SystemExit(f"unknown question ids: {', '.join(unknown)}")
    return [q for q in QUESTIONS if q.id in wanted]


class QueryError(Exception):
    pass


# The bearer token of the gateway (set by main from the server's bootstrap file or --token).
TOKEN: dict[str, str] = {}


def trawl_query(url: str, kql: str) -> list:
    """POST /v2/rest/query at the gateway without a time scope (the whole table): the frames."""
    body = json.dumps({"db": "default", "csl": kql}).encode()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN.get('token', '')}"}
    request = urllib.request.Request(f"{url}/v2/rest/query", data=body, headers=headers)
    try:
        with LOCAL.open(request, timeout=3600) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        raise QueryError(error_text(error)) from None
    except OSError as error:
        raise QueryError(str(error)) from None


def error_text(error: urllib.error.HTTPError) -> str:
    """`code: message` of an ADX error answer, or the HTTP status."""
    try:
        body = json.loads(error.read())["error"]
        return f"{body.get('@context', {}).get('code', body['code'])}: {body['message']}"
    except (ValueError, KeyError, TypeError):
        return f"HTTP {error.code} {error.reason}"


def trawl_rows(url: str, kql: str) -> tuple[list, list]:
    """The rows of PrimaryResult and the warnings (QueryCompletionInformation rows of level Warning)."""
    frames = [f for f in trawl_query(url, kql) if f.get("FrameType") == "DataTable"]
    primary = next(f["Rows"] for f in frames if f["TableKind"] == "PrimaryResult")
    warnings = [
        row
        for f in frames
        if f["TableKind"] == "QueryCompletionInformation"
        for row in f["Rows"]
        if row[6] == "Warning"
    ]
    return primary, warnings


def timed(run, runs: int) -> dict:
    """One warm-up run (whose answer is kept), then `runs` timed runs."""
    try:
        answer = run()
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            run()
            times.append((time.perf_counter() - began) * 1000)
    except (QueryError, duckdb.Error) as error:
        return {"error": str(error)}
    return {"answer": answer, "ms": [round(t, 2) for t in times], "median_ms": round(statistics.median(times), 2)}


def measure(question: Question, params: dict, trawl_url: str, peers: dict, runs: int) -> dict:
    """Trawl's answer and times, each peer's (`peers`: key → a function from SQL to rows), the
    ratios, and whether each peer gave Trawl's answer."""
    kql = fill(question.kql, params)
    sql = {key: fill(getattr(question, field), params) for key, _, field in PEERS}
    log(f"{question.id}: {question.title}")
    trawl = timed(lambda: trawl_rows(trawl_url, kql), runs)
    result = {"id": question.id, "question": question.title, "kql": kql}
    result.update({field: sql[key] for key, _, field in PEERS}, trawl=trawl)
    result.update({key: timed(partial(peers[key], sql[key]), runs) for key, _, _ in PEERS})
    rows, warnings = trawl.pop("answer", (None, None))
    if rows is not None:
        trawl.update(rows=len(rows), warnings=warnings)
    for key, name, _ in PEERS:
        peer = result[key]
        answer = peer.pop("answer", None)
        if answer is None:
            continue
        peer["rows"] = len(answer)
        if rows is not None:
            same, detail = compare(question, rows, answer, name)
            peer.update(ratio=round(trawl["median_ms"] / peer["median_ms"], 3), same_answer=same, detail=detail)
    peer_ms = [result[key]["median_ms"] for key, _, _ in PEERS if "median_ms" in result[key]]
    if "median_ms" in trawl and peer_ms:
        result["ratio_best"] = round(trawl["median_ms"] / min(peer_ms), 3)
    return result


def duckdb_connection(logs_file: Path, spans_file: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"threads": 2})
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"CREATE VIEW logs AS SELECT * FROM read_parquet({sql_string(logs_file)})")
    con.execute(f"CREATE VIEW spans AS SELECT * FROM read_parquet({sql_string(spans_file)})")
    return con


def chdb_runner() -> Callable[[str], list]:
    """ClickHouse SQL → rows (tuples, fetched as Arrow), on an in-memory chdb session with 2
    threads (as DuckDB; the Parquet decoding threads too) and time zone UTC. Without chdb, every
    query fails with the reason."""
    if chdb is None:
        return partial(fail, CHDB_MISSING)
    # A connection raises its errors as RuntimeErrors (its ChdbError, not chdb.ChdbError).
    try:
        con = chdb.connect(":memory:")
        con.query("SET max_threads = 2, max_parsing_threads = 2")
        con.query("SET session_timezone = 'UTC'")
    except RuntimeError as error:
        return partial(fail, f"no chdb session: {error}")

    def rows(sql: str) -> list:
        try:
            table = con.query(sql, "ArrowTable")
        except RuntimeError as error:
            raise QueryError(str(error)) from None
        return list(zip(*(column.to_pylist() for column in table.columns)))

    return rows


def fail(reason: str, _sql: str) -> list:
    """A side that cannot run: every query fails with `reason`."""
    raise QueryError(reason)


def verdict(result: dict, key: str, name: str) -> str:
    """Whether peer `key` gave Trawl's answer (or which side failed)."""
    for side, side_name in (("trawl", "Trawl"), (key, name)):
        if "error" in result[side]:
            return f"**{side_name} error**: {result[side]['error']}"
    if not result[key]["same_answer"]:
        return f"**NO**: {result[key]['detail']}"
    detail = result[key]["detail"]
    return f"yes ({detail})" if detail else "yes"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def ratio(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "–"


def table(results: list[dict]) -> str:
    lines = [
        "| id | question | trawl ms | duckdb ms | chdb ms | trawl/duckdb | trawl/chdb | trawl/best "
        "| same answer, duckdb | same answer, chdb |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in results:
        sides = ["trawl"] + [key for key, _, _ in PEERS]
        ms = [f"{r[side]['median_ms']:,.1f}" if "median_ms" in r[side] else "error" for side in sides]
        ratios = [ratio(r[key].get("ratio")) for key, _, _ in PEERS] + [ratio(r.get("ratio_best"))]
        verdicts = [cell(verdict(r, key, name)) for key, name, _ in PEERS]
        lines.append(f"| {r['id']} | {r['question']} | {' | '.join(ms + ratios + verdicts)} |")
    return "\n".join(lines)


def run_all(questions: list[Question], manifest: dict, trawl_url: str, files: tuple[Path, Path], runs: int) -> list:
    params = {**parameters(manifest), **file_parameters(*files)}
    duck = duckdb_connection(*files)
    peers = {"duckdb": lambda sql: duck.execute(sql).fetchall(), "chdb": chdb_runner()}
    return [measure(q, params, trawl_url, peers, runs) for q in questions]


def main() -> None:
    args = parse_args()
    data = Path(args.data)
    questions = selected(args.only)
    if args.trawl_url and not (data / "loaded.json").exists():
        raise SystemExit(f"--trawl-url needs the data set loaded in {data}: run once without it")
    manifest = ensure_loaded(data, {"seed": args.seed, "logs": args.logs, "spans": args.spans})
    files = ensure_exported(data, manifest)
    if args.trawl_url:
        trawl = {"url": args.trawl_url.rstrip("/")}
        TOKEN["token"] = os.environ.get("TRAWL_TOKEN", "")
        results = run_all(questions, manifest, trawl["url"], files, args.runs)
    else:
        with TrawlServer(data / "trawl", data / "server.log", merge_interval_secs=0) as server:
            trawl = {"url": server.gateway_url, "bin": TRAWL_BIN}
            TOKEN["token"] = server.secret("admin_token")
            results = run_all(questions, manifest, server.gateway_url, files, args.runs)
    print(table(results))
    report = {
        "data": {"dir": str(data), "live_segments": len(live_segments(data / "trawl")), "manifest": manifest},
        "trawl": trawl,
        "duckdb_version": duckdb.__version__,
        "chdb_version": f"{chdb.__version__} (ClickHouse {chdb.engine_version})" if chdb is not None else None,
        "runs": args.runs,
        "results": results,
    }
    out = Path(args.json_out) if args.json_out else data / "query-bench.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    log(f"figures written to {out}")


if __name__ == "__main__":
    main()
