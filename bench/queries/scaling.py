"""Distributed query scaling: the benchmark questions Q1–Q13 on a local cluster
(scripts/cluster.sh: s3s-fs, PostgreSQL, 3 query nodes) using 1, 2 and 3 query nodes
(ADX `query_fanout_nodes_percent` 1, 50 and 100), every query spread
(`--distribute-min-bytes 0`). Reports per question and node count the median wall time and
the segment bytes and rows each query node read (its `trawl_query_scanned_*_total` metrics),
and checks the split: with 3 nodes no node may read more than 40 % of the bytes.

On one machine the nodes share its cores, so the wall time need not fall (docs/cluster.md,
"Expected scaling on separate machines"); `--pin` runs query node i on core i mod cores
(`taskset`), which on a machine with at least 3 cores gives each its own.

    bench/queries/run.sh scaling --logs 10000000 --spans 5000000   # release binaries by default
    TRAWL_BIN=… TRAWL_GEN=… INGEST_BENCH=… bench/queries/run.sh scaling --logs 200000 --spans 100000
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from dataset import INGEST_BENCH, TRAWL_BIN, generator_manifest, log
from questions import QUESTIONS, fill, parameters

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "scripts" / "cluster.sh"
FANOUT = {1: 1, 2: 50, 3: 100}  # percent of 3 query nodes → that many nodes
MAX_SHARE = 0.40


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path.home() / ".cache" / "trawl-bench-scaling")
    parser.add_argument("--logs", type=int, default=10_000_000)
    parser.add_argument("--spans", type=int, default=5_000_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--runs", type=int, default=3, help="runs per question and node count (median)")
    parser.add_argument("--pin", action="store_true", help="pin query node i to core i mod cores")
    parser.add_argument("--keep", action="store_true", help="leave the cluster up")
    parser.add_argument("--reuse", action="store_true",
                        help="query the cluster a run with --keep left up (its cluster.env), without loading")
    parser.add_argument("--questions", help="comma-separated question ids (default: all)")
    return parser.parse_args()


class Cluster:
    def __init__(self, state: Path):
        self.state = state
        self.env: dict[str, str] = {}

    def script(self, *args: str) -> None:
        subprocess.run(["bash", str(CLUSTER), *args, "--dir", str(self.state / "cluster")],
                       cwd=self.state, check=True, env={**os.environ, "TRAWL_BIN": TRAWL_BIN})  # fmt: skip

    def up(self, pin: bool, reuse: bool = False) -> None:
        if not reuse:
            self.script("up", "--query-nodes", "3", "--merge-interval-secs", "5",
                        "--query-arg=--distribute-min-bytes=0", "--query-arg=--distribute-min-segments=0")  # fmt: skip
        for line in (self.state / "cluster.env").read_text().splitlines():
            key, _, value = line.partition("=")
            self.env[key] = " ".join(shlex.split(value))
        if pin:
            cores = os.cpu_count() or 1
            for i, pid in enumerate(self.env["PIDS_QUERY"].split()):
                subprocess.run(["taskset", "-a", "-p", "-c", str(i % cores), pid], check=True, capture_output=True)

    def query(self, kql: str, fanout: int) -> float:
        body = json.dumps({"db": "default", "csl": kql,
                           "properties": {"Options": {"query_fanout_nodes_percent": fanout}}}).encode()  # fmt: skip
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self.env['ADMIN_TOKEN']}"}
        request = urllib.request.Request(self.env["GATEWAY_URL"] + "/v1/rest/query", data=body, headers=headers)
        started = time.monotonic()
        with urllib.request.urlopen(request, timeout=3600) as response:
            answer = json.load(response)
        elapsed = time.monotonic() - started
        self.last_rows = answer["Tables"][0]["Rows"]
        return elapsed

    def scanned(self) -> list[tuple[int, int]]:
        """(rows, bytes) each query node has read, in the order of PIDS_QUERY."""
        out = []
        for url in self.env["QUERY_OPERATOR_URLS"].split():
            with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
                text = response.read().decode()
            values = dict(line.split(" ", 1) for line in text.splitlines() if line.startswith("trawl_query_scanned_"))
            out.append((int(float(values.get("trawl_query_scanned_rows_total", 0))),
                        int(float(values.get("trawl_query_scanned_bytes_total", 0)))))  # fmt: skip
        return out


def load(cluster: Cluster, args: argparse.Namespace) -> dict:
    manifest = generator_manifest(args.seed, args.logs, args.spans)
    urls = cluster.env["INGEST_OTLP_HTTP_URLS"].split()
    for url, (signal, count) in zip(urls, (("logs", args.logs), ("traces", args.spans))):
        log(f"loading {count:,} {signal} through {url}")
        subprocess.run([INGEST_BENCH, "--url", url, "--token", cluster.env["INGEST_TOKEN"], "-c", "32",
                        "--count", str(count), "--warmup", "0", "--seed", str(args.seed), "--signal", signal],
                       check=True, stdout=subprocess.DEVNULL,
                       # ingest-bench reads TRAWL_BIN as its own --trawl-bin (it would start a server).
                       env={k: v for k, v in os.environ.items() if k != "TRAWL_BIN"})  # fmt: skip
    expected = manifest["logs"]["records"] + manifest["traces"]["spans"]
    deadline = time.monotonic() + 600
    while True:
        cluster.query("default | count", 1)
        stored = cluster.last_rows[0][0]
        if stored >= expected or time.monotonic() > deadline:
            break
        time.sleep(2)
    log(f"{stored:,} of {expected:,} records queryable; letting merges settle")
    time.sleep(30)
    return manifest


def main() -> None:
    args = parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(args.dir)
    cluster.up(args.pin, args.reuse)
    try:
        manifest = generator_manifest(args.seed, args.logs, args.spans) if args.reuse else load(cluster, args)
        params = parameters(manifest)
        results = []
        wanted = set(args.questions.split(",")) if args.questions else None
        for question in QUESTIONS:
            if wanted and question.id not in wanted:
                continue
            kql = fill(question.kql, params)
            for nodes, fanout in FANOUT.items():
                cluster.query(kql, fanout)  # warm
                before = cluster.scanned()
                times = [cluster.query(kql, fanout) for _ in range(args.runs)]
                after = cluster.scanned()
                read = [(a[0] - b[0], a[1] - b[1]) for a, b in zip(after, before)]
                total = sum(b for _, b in read) or 1
                results.append({
                    "id": question.id, "nodes": nodes, "ms": round(statistics.median(times) * 1000, 1),
                    "bytes": [b for _, b in read], "rows": [r for r, _ in read],
                    "max_share": round(max(b for _, b in read) / total, 3),
                })  # fmt: skip
                log(f"{question.id} on {nodes}: {results[-1]['ms']} ms, bytes per node {results[-1]['bytes']}")
        print_report(results)
        (args.dir / "scaling.json").write_text(json.dumps(results, indent=1) + "\n")
        spread = [r for r in results if r["nodes"] == 3 and sum(r["bytes"]) > 0]
        worst = max((r["max_share"] for r in spread), default=0.0)
        overall = [sum(r["bytes"][i] for r in spread) for i in range(3)]
        share = max(overall) / (sum(overall) or 1)
        print(f"\n3 nodes: bytes per node over all questions {overall} (largest share {share:.0%}); "
              f"largest share of one question {worst:.0%}")  # fmt: skip
        if share > MAX_SHARE:
            sys.exit(f"the work does not split evenly: one node read {share:.0%} of the bytes (limit {MAX_SHARE:.0%})")
    finally:
        if not args.keep:
            cluster.script("down")


def print_report(results: list[dict]) -> None:
    print("\n| question | nodes | median ms | MiB read per node | rows read per node | largest share |")
    print("|---|---|---|---|---|---|")
    for r in results:
        mib = " / ".join(f"{b / 2**20:.1f}" for b in r["bytes"])
        rows = " / ".join(f"{n:,}" for n in r["rows"])
        print(f"| {r['id']} | {r['nodes']} | {r['ms']} | {mib} | {rows} | {r['max_share']:.0%} |")


if __name__ == "__main__":
    main()
