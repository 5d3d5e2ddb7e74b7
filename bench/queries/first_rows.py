"""Time to first rows: queries that run in time slices (newest rows, time bins) in ADX v2
progressive mode through the gateway, timed to the first `TableFragment` (the first refined
snapshot, or the result) and to the end, over the query benchmark's data set. Each is also
run in a shape that does not slice, for the whole-query time it replaces.

Run it through run.sh: `bench/queries/run.sh first-rows [--data DIR] [--runs N]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import urllib.request
from pathlib import Path

from dataset import LOCAL, TrawlServer, log

QUERIES = [
    (
        "newest 100 logs",
        "default | top 100 by timestamp desc | project timestamp, severity_text, body",
        "default | extend t = timestamp | top 100 by t desc | project timestamp, severity_text, body",
    ),
    (
        "newest 100 errors",
        "default | where severity_text == 'ERROR' | top 100 by timestamp desc | project timestamp, body",
        "default | where severity_text == 'ERROR' | extend t = timestamp | top 100 by t desc | project timestamp, body",
    ),
    (
        "logs per minute",
        "default | summarize n = count() by bin(timestamp, 1m)",
        "default | summarize n = count() by bin(timestamp + 0s, 1m)",
    ),
]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="/tmp/trawl-bench-data", help="data set directory (loaded by queries.py)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json-out", help="default DIR/first-rows.json")
    return parser.parse_args()


def progressive(url: str, token: str, kql: str) -> tuple[float, float, int]:
    """(ms to the first TableFragment, ms to the end, fragments) of one progressive query."""
    body = {
        "db": "default",
        "csl": kql,
        "properties": {"Options": {"results_progressive_enabled": True}},
    }
    request = urllib.request.Request(
        f"{url}/v2/rest/query",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
        method="POST",
    )
    started = time.perf_counter()
    first = None
    text = b""
    with LOCAL.open(request, timeout=600) as response:
        while True:
            chunk = response.read1(65536)
            if not chunk:
                break
            text += chunk
            if first is None and b'"TableFragment"' in text:
                first = time.perf_counter()
    ended = time.perf_counter()
    frames = json.loads(text)
    fragments = sum(1 for f in frames if f.get("FrameType") == "TableFragment")
    errors = [f for f in frames if f.get("FrameType") == "DataSetCompletion" and f.get("HasErrors")]
    if errors:
        raise RuntimeError(f"{kql}: {errors}")
    return ((first or ended) - started) * 1000, (ended - started) * 1000, fragments


def main() -> None:
    args = parse_args()
    data = Path(args.data)
    if not (data / "loaded.json").exists():
        raise SystemExit(f"{data} holds no loaded data set: run bench/queries/run.sh --data {data} first")
    records = json.loads((data / "loaded.json").read_text())["logs"]["records"]
    results = []
    with TrawlServer(data / "trawl", data / "server.log", merge_interval_secs=0) as server:
        token = server.secret("admin_token")
        for name, sliced, whole in QUERIES:
            progressive(server.gateway_url, token, sliced)  # warm the caches
            firsts, totals, wholes, fragments = [], [], [], 0
            for _ in range(args.runs):
                first, total, fragments = progressive(server.gateway_url, token, sliced)
                firsts.append(first)
                totals.append(total)
                wholes.append(progressive(server.gateway_url, token, whole)[1])
            row = {
                "query": name,
                "first_rows_ms": round(statistics.median(firsts), 1),
                "sliced_total_ms": round(statistics.median(totals), 1),
                "unsliced_total_ms": round(statistics.median(wholes), 1),
                "fragments": fragments,
            }
            log(json.dumps(row))
            results.append(row)
    print(f"\n{records:,} log records, median of {args.runs} runs (progressive v2 through the gateway)\n")
    print("| query | first rows ms | sliced total ms | unsliced total ms | fragments |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['query']} | {r['first_rows_ms']} | {r['sliced_total_ms']} | {r['unsliced_total_ms']} | {r['fragments']} |"
        )
    out = Path(args.json_out) if args.json_out else data / "first-rows.json"
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
