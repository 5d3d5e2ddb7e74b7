"""A crash loop under load: senders push OTLP/HTTP, log-push and vendor-intake logs at a steady
rate and retry every request until it is acknowledged (as real shippers do), while the server is
killed with SIGKILL at random moments (CRASH_LOOP_KILLS times, 20 by default) and restarted on
the same data directory. Flushes are slowed a little (an injected put delay) so kills land inside
segment writes, and merges run every second so kills land inside merges too.

At the end every record is stored exactly once: none lost (every request was acknowledged in the
end) and none twice, although requests stored just before a crash were sent again (storage
deduplicates them by request key; see docs/operations.md).

Set TRAWL_E2E_SEED to replay the kill timing.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import uuid
from dataclasses import dataclass, field

import requests
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.resource.v1 import resource_pb2

from trawl_e2e import free_ports, http_request

SEED = int(os.environ.get("TRAWL_E2E_SEED") or random.SystemRandom().randrange(1 << 30))
KILLS = int(os.environ.get("CRASH_LOOP_KILLS", "20"))


def otlp_body(marker: str, lines: list[str]) -> tuple[bytes, dict[str, str]]:
    t = time.time_ns()
    records = [logs_pb2.LogRecord(time_unix_nano=t + i, body=common_pb2.AnyValue(string_value=line)) for i, line in enumerate(lines)]
    request = logs_service_pb2.ExportLogsServiceRequest(
        resource_logs=[
            logs_pb2.ResourceLogs(
                resource=resource_pb2.Resource(
                    attributes=[common_pb2.KeyValue(key="e2e.marker", value=common_pb2.AnyValue(string_value=marker))]
                ),
                scope_logs=[logs_pb2.ScopeLogs(log_records=records)],
            )
        ]
    )
    return request.SerializeToString(), {"Content-Type": "application/x-protobuf"}


def push_body(marker: str, lines: list[str]) -> tuple[bytes, dict[str, str]]:
    t = time.time_ns()
    body = {"streams": [{"stream": {"job": "crash-loop", "marker": marker}, "values": [[str(t + i), line] for i, line in enumerate(lines)]}]}
    return json.dumps(body).encode(), {"Content-Type": "application/json"}


def vendor_body(marker: str, lines: list[str]) -> tuple[bytes, dict[str, str]]:
    items = [{"message": line, "service": "crash-loop", "ddtags": f"marker:{marker}"} for line in lines]
    return json.dumps(items).encode(), {"Content-Type": "application/json"}


@dataclass
class Stream:
    """One sender: its batches, sent in order, each until acknowledged."""

    name: str
    url: object  # () -> str, read at each attempt (ports change at every restart)
    auth: object  # () -> dict
    batches: list[tuple[bytes, dict[str, str]]]
    ok: tuple[int, ...]
    acked: int = 0
    attempts: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    in_flight: bool = False

    def run(self, stop: threading.Event) -> None:
        session = requests.Session()
        for body, headers in self.batches:
            while not stop.is_set():
                self.attempts += 1
                self.in_flight = True
                try:
                    response = session.post(self.url(), data=body, headers={**headers, **self.auth()}, timeout=40)
                    outcome = response.status_code
                except requests.RequestException as error:
                    outcome = type(error).__name__
                    session = requests.Session()
                self.in_flight = False
                if outcome in self.ok:
                    self.acked += 1
                    break
                self.refused[str(outcome)] = self.refused.get(str(outcome), 0) + 1
                time.sleep(0.1)
            time.sleep(0.02)


def test_kill_loop_under_load_stores_every_record_exactly_once(trawl_factory):
    rng = random.Random(SEED)
    (vendor_port,) = free_ports(1)
    server = trawl_factory(
        "crashloop",
        merge_interval_secs=1,
        extra_args=["--fault-injection", "--ingest-dedup-window-secs", os.environ.get("CRASH_LOOP_DEDUP_SECS", "600"), "--vendor-intake", "true", "--vendor-bind", f"127.0.0.1:{vendor_port}"],
    )
    vendor_url = f"http://127.0.0.1:{vendor_port}"

    def slow_flushes() -> None:
        # Widen the windows between a segment's put and its commit, and between the commit and
        # the answer (a request stored but not acknowledged), so kills land inside them.
        spec = {"clear": True, "store_put_delay_ms": rng.choice([0, 50, 150, 300]), "catalog_commit_delay_ms": rng.choice([0, 100, 300])}
        http_request(
            server.operator_url + "/debug/faults",
            json.dumps(spec).encode(),
            {"Content-Type": "application/json"},
            "POST",
        )

    slow_flushes()
    marker = f"loop-{uuid.uuid4().hex[:8]}"
    expected: set[str] = set()

    def lines(kind: str, batch: int, size: int) -> list[str]:
        made = [f"{marker} {kind} {batch}/{i}" for i in range(size)]
        expected.update(made)
        return made

    streams = []
    for copy in range(2):
        kind = f"otlp{copy}"
        streams.append(
            Stream(kind, lambda: server.otlp_http_url + "/v1/logs", lambda: server.ingest_auth,
                   [otlp_body(marker, lines(kind, b, 20)) for b in range(60)], (200,))
        )  # fmt: skip
    streams.append(
        Stream("push", lambda: server.otlp_http_url + "/lgx/api/v1/push", lambda: server.ingest_auth,
               [push_body(marker, lines("push", b, 10)) for b in range(60)], (204,))
    )  # fmt: skip
    streams.append(
        Stream("vendor", lambda: vendor_url + "/api/v2/logs", lambda: {"DD-API-KEY": server.ingest_token},
               [vendor_body(marker, lines("vendor", b, 10)) for b in range(60)], (202,))
    )  # fmt: skip

    stop = threading.Event()
    threads = [threading.Thread(target=s.run, args=(stop,), daemon=True) for s in streams]
    for thread in threads:
        thread.start()

    def deduplicated() -> int:
        """Requests the running process acknowledged without storing them again."""
        try:
            text = http_request(server.operator_url + "/metrics", timeout=2)[2].decode()
        except OSError:
            return 0
        for line in text.splitlines():
            if line.startswith("trawl_ingest_deduplicated_total "):
                return int(float(line.split()[1]))
        return 0

    history = []
    kills_in_flight = 0
    deduplicated_total = 0
    for kill in range(KILLS):
        time.sleep(rng.uniform(0.2, 1.5))
        deduplicated_total += deduplicated()
        busy = sum(1 for s in streams if s.in_flight)
        kills_in_flight += busy > 0
        server.kill()
        history.append(f"kill {kill}: {busy} requests in flight, acked {[s.acked for s in streams]}")
        time.sleep(rng.uniform(0, 0.3))
        server.start()
        slow_flushes()
    deadline = time.monotonic() + 180
    for thread in threads:
        thread.join(timeout=max(1.0, deadline - time.monotonic()))
    stop.set()
    deduplicated_total += deduplicated()
    context = f"seed {SEED}\n" + "\n".join(history) + "\n" + "\n".join(
        f"{s.name}: acked {s.acked}/{len(s.batches)}, attempts {s.attempts}, refused {s.refused}" for s in streams
    )
    assert all(s.acked == len(s.batches) for s in streams), f"senders did not finish\n{context}"

    _, rows = server.query(f"default | where body startswith '{marker} ' | summarize c = count() by line = tostring(body)")
    counts = {line: c for line, c in rows}
    twice = {line: c for line, c in counts.items() if c > 1}
    missing = expected - counts.keys()
    unknown = counts.keys() - expected
    assert not twice, f"{len(twice)} records stored more than once, e.g. {sorted(twice.items())[:5]}\n{context}"
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}\n{context}"
    assert not unknown, f"records never sent: {sorted(unknown)[:5]}"
    retried = sum(s.attempts - len(s.batches) for s in streams)
    log = server.log_text()
    print(
        f"{KILLS} kills ({kills_in_flight} with requests in flight), {len(expected)} records checked exactly once, "
        f"{retried} retried requests ({deduplicated_total} acknowledged as stored already), "
        f"merge passes logged: {log.count('merge pass')}\n{context}"
    )
    assert kills_in_flight >= KILLS // 2, f"too few kills landed while requests were in flight\n{context}"
