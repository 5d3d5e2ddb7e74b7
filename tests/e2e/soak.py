"""Soak: ingest and query at a steady rate for a while and watch the server's resident memory.

Used by `test_soak.py` (one minute in the test command) and by `bench/soak.sh` (ten minutes or
more on a release build). Several senders post OTLP/JSON logs at a fixed pace; a query loop
runs a mix of dashboard queries; the server's RSS is sampled every second. The report gives
the least-squares slope of RSS over the second half of the run (after the allocator and
caches warmed up), in MiB per minute: flat memory means a slope near zero.

    python tests/e2e/soak.py --binary target/release/trawl --seconds 600
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from trawl_e2e import TrawlServer, http_request, operator_gauges, post_otlp_json_logs, stop_all

QUERIES = [
    "default | where severity_text == 'ERROR' | summarize count() by bin(timestamp, 10s)",
    "default | summarize n = count() by service = tostring(resource['service.name'])",
    "default | top 20 by timestamp desc",
    "default | where body has 'payment' | take 50",
    "default | summarize dcount(tostring(attributes['user'])), percentile(toint(attributes['latency_ms']), 95)",
]


@dataclass
class SoakReport:
    seconds: float
    records_acknowledged: int
    ingest_failures: int
    queries: int
    query_failures: int
    rss_mib: list[tuple[float, float]] = field(default_factory=list)
    # The allocator's live bytes (trawl_memory_heap_allocated_bytes), sampled every 5 s.
    heap_mib: list[tuple[float, float]] = field(default_factory=list)

    @property
    def slope_mib_per_minute(self) -> float:
        """Least-squares slope of RSS over the second half of the run."""
        return self.second_half_slope(self.rss_mib)

    def second_half_slope(self, series: list[tuple[float, float]]) -> float:
        """Least-squares slope of `series` over the second half of the run, in MiB per minute."""
        half = [(t, r) for t, r in series if t >= self.seconds / 2]
        if len(half) < 3:
            return 0.0
        n = len(half)
        mean_t = sum(t for t, _ in half) / n
        mean_r = sum(r for _, r in half) / n
        var = sum((t - mean_t) ** 2 for t, _ in half)
        cov = sum((t - mean_t) * (r - mean_r) for t, r in half)
        return 60.0 * cov / var if var else 0.0

    def summary(self) -> dict:
        rss = [r for _, r in self.rss_mib]
        return {
            "seconds": round(self.seconds, 1),
            "records_acknowledged": self.records_acknowledged,
            "ingest_failures": self.ingest_failures,
            "queries": self.queries,
            "query_failures": self.query_failures,
            "rss_start_mib": round(rss[0], 1) if rss else None,
            "rss_peak_mib": round(max(rss), 1) if rss else None,
            "rss_end_mib": round(rss[-1], 1) if rss else None,
            "rss_slope_mib_per_minute_second_half": round(self.slope_mib_per_minute, 2),
            "heap_allocated_end_mib": round(self.heap_mib[-1][1], 1) if self.heap_mib else None,
            "heap_allocated_peak_mib": round(max(h for _, h in self.heap_mib), 1) if self.heap_mib else None,
            "heap_allocated_slope_mib_per_minute_second_half": round(self.second_half_slope(self.heap_mib), 2),
        }


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def heap_allocated_mib(server: TrawlServer) -> float | None:
    try:
        gauges = operator_gauges(server, "trawl_memory_heap_allocated_bytes")
    except (OSError, AssertionError):
        return None
    value = gauges.get("trawl_memory_heap_allocated_bytes")
    return None if value is None else value / 2**20


def soak(server: TrawlServer, seconds: float, senders: int = 3, per_request: int = 200, pace: float = 0.2) -> SoakReport:
    stop = threading.Event()
    lock = threading.Lock()
    report = SoakReport(seconds=seconds, records_acknowledged=0, ingest_failures=0, queries=0, query_failures=0)
    services = [f"svc-{i}" for i in range(8)]
    words = ["payment", "checkout", "cart", "login", "search", "timeout", "retry", "ok"]

    def send(seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            records = []
            for _ in range(per_request):
                records.append({
                    "timeUnixNano": str(time.time_ns()),
                    "severityText": rng.choice(["INFO", "INFO", "INFO", "WARN", "ERROR"]),
                    "body": {"stringValue": " ".join(rng.choice(words) for _ in range(8)) + f" {rng.getrandbits(48):x}"},
                    "attributes": [
                        {"key": "user", "value": {"stringValue": f"u{rng.randint(1, 5000)}"}},
                        {"key": "latency_ms", "value": {"intValue": str(rng.randint(1, 900))}},
                    ],
                })  # fmt: skip
            try:
                status, _ = post_otlp_json_logs(server, records, service=rng.choice(services))
            except OSError:
                status = 0
            with lock:
                if status == 200:
                    report.records_acknowledged += len(records)
                else:
                    report.ingest_failures += 1
            stop.wait(pace)

    def query() -> None:
        rng = random.Random(7)
        while not stop.is_set():
            try:
                server.query(rng.choice(QUERIES), since="30s")
                ok = True
            except Exception:  # noqa: BLE001 - any failure counts
                ok = False
            with lock:
                report.queries += 1
                report.query_failures += 0 if ok else 1
            stop.wait(0.5)

    threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(senders)]
    threads.append(threading.Thread(target=query, daemon=True))
    started = time.monotonic()
    for thread in threads:
        thread.start()
    try:
        tick = 0
        while (elapsed := time.monotonic() - started) < seconds:
            report.rss_mib.append((elapsed, rss_mib(server.process.pid)))
            if tick % 5 == 0 and (heap := heap_allocated_mib(server)) is not None:
                report.heap_mib.append((elapsed, heap))
            tick += 1
            time.sleep(1.0)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    return report


def heap_profile(server: TrawlServer, path: Path) -> None:
    status, _, body = http_request(server.operator_url + "/debug/pprof/heap", timeout=120)
    if status == 200:
        path.write_bytes(body)
    else:
        print(f"heap profile: HTTP {status}: {body[:200]!r}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True, type=Path)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--senders", type=int, default=3)
    parser.add_argument(
        "--heap-profiles",
        type=Path,
        help="directory for /debug/pprof/heap taken at the half and at the end of the run "
        "(compare them: go tool pprof -top -base half.pb.gz end.pb.gz)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        server = TrawlServer(args.binary.resolve(), Path(work), name="soak", merge_interval_secs=10)
        server.start()
        halfway = None
        if args.heap_profiles:
            args.heap_profiles.mkdir(parents=True, exist_ok=True)
            halfway = threading.Timer(args.seconds / 2, heap_profile, (server, args.heap_profiles / "half.pb.gz"))
            halfway.start()
        try:
            report = soak(server, args.seconds, senders=args.senders)
            if args.heap_profiles:
                heap_profile(server, args.heap_profiles / "end.pb.gz")
        finally:
            if halfway:
                halfway.cancel()
            stop_all([server])
    print(json.dumps(report.summary(), indent=2))


if __name__ == "__main__":
    main()
