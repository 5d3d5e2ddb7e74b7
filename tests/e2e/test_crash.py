"""Crash safety: SIGKILL while OTLP/HTTP requests are in flight, restart on the same data dir,
and every acknowledged record must be there exactly once; unacknowledged records may be there
or not, but never twice. Then: background merges while queries run never change what a query
sees except by adding acknowledged rows.

Set TRAWL_E2E_SEED to replay a run (the seed is printed on failure).
"""

from __future__ import annotations

import os
import queue
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

from trawl_e2e import QueryError

SEED = int(os.environ.get("TRAWL_E2E_SEED") or random.SystemRandom().randrange(1 << 30))
PROTOBUF = {"Content-Type": "application/x-protobuf"}


def batch_body(marker: str, batch: int, size: int) -> bytes:
    """One ExportLogsServiceRequest of `size` records; record i has the unique `seq` batch*size+i."""
    t = time.time_ns()
    records = [
        logs_pb2.LogRecord(
            time_unix_nano=t + i,
            severity_number=logs_pb2.SEVERITY_NUMBER_INFO,
            severity_text="INFO",
            body=common_pb2.AnyValue(string_value=f"record {batch}/{i}"),
            attributes=[
                common_pb2.KeyValue(key="seq", value=common_pb2.AnyValue(int_value=batch * size + i)),
                common_pb2.KeyValue(key="batch", value=common_pb2.AnyValue(int_value=batch)),
            ],
        )
        for i in range(size)
    ]
    request = logs_service_pb2.ExportLogsServiceRequest(
        resource_logs=[
            logs_pb2.ResourceLogs(
                resource=resource_pb2.Resource(
                    attributes=[
                        common_pb2.KeyValue(key="service.name", value=common_pb2.AnyValue(string_value="e2e-crash")),
                        common_pb2.KeyValue(key="e2e.marker", value=common_pb2.AnyValue(string_value=marker)),
                    ]
                ),
                scope_logs=[logs_pb2.ScopeLogs(log_records=records)],
            )
        ]
    )
    return request.SerializeToString()


@dataclass
class Sender:
    """Posts batches from a few threads and records which ones were acknowledged (HTTP 200)."""

    url: str
    bodies: dict[int, bytes]
    auth: dict[str, str]
    threads: int = 4
    acked: set[int] = field(default_factory=set)
    failed: dict[int, str] = field(default_factory=dict)
    started: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> list[threading.Thread]:
        work: queue.Queue[int] = queue.Queue()
        for batch in self.bodies:
            work.put(batch)

        def worker() -> None:
            session = requests.Session()
            while not self.stop.is_set():
                try:
                    batch = work.get_nowait()
                except queue.Empty:
                    return
                with self.lock:
                    self.started.add(batch)
                try:
                    response = session.post(self.url, data=self.bodies[batch], headers={**PROTOBUF, **self.auth}, timeout=20)
                    outcome = response.status_code
                except requests.RequestException as error:
                    outcome = type(error).__name__
                with self.lock:
                    if outcome == 200:
                        self.acked.add(batch)
                    else:
                        self.failed[batch] = str(outcome)

        threads = [threading.Thread(target=worker, daemon=True) for _ in range(self.threads)]
        for thread in threads:
            thread.start()
        return threads

    def acked_count(self) -> int:
        with self.lock:
            return len(self.acked)


def seq_counts(server, marker: str) -> dict[int, int]:
    _, rows = server.query(
        f"default | where resource['e2e.marker'] == '{marker}' | summarize c = count() by seq = tostring(attributes['seq'])"
    )
    return {int(seq): c for seq, c in rows}


def test_sigkill_during_ingest_loses_no_acknowledged_record(trawl_factory):
    rng = random.Random(SEED)
    batches, size, rounds = 40, 250, 3
    server = trawl_factory("crash", merge_interval_secs=2)
    history: list[str] = []
    earlier: list[tuple[str, int]] = []
    for round_number in range(rounds):
        marker = f"crash-{round_number}-{uuid.uuid4().hex[:8]}"
        bodies = {b: batch_body(marker, b, size) for b in range(batches)}
        sender = Sender(f"{server.otlp_http_url}/v1/logs", bodies, server.ingest_auth, threads=4)
        kill_after = rng.randrange(3, batches - 8)  # acknowledged batches before the crash
        jitter = rng.uniform(0, 0.15)
        threads = sender.run()
        deadline = time.monotonic() + 60
        while sender.acked_count() < kill_after and time.monotonic() < deadline and any(t.is_alive() for t in threads):
            time.sleep(0.005)
        time.sleep(jitter)
        with sender.lock:
            in_flight = len(sender.started) - len(sender.acked) - len(sender.failed)
        server.kill()
        sender.stop.set()
        for thread in threads:
            thread.join(timeout=30)
        history.append(
            f"round {round_number} (seed {SEED}): kill after {kill_after} acks + {jitter:.3f} s, "
            f"{in_flight} requests in flight, acked {len(sender.acked)}, failed {len(sender.failed)}, never sent {batches - len(sender.started)}"
        )
        assert sender.acked, "\n".join(history)
        assert len(sender.acked) < batches, "the crash came after every request finished:\n" + "\n".join(history)

        # A write the kill interrupted leaves a temporary file; start-up removes every one.
        planted = server.data_dir / "segments" / "interrupted-write.partial"
        planted.parent.mkdir(parents=True, exist_ok=True)
        planted.write_bytes(b"half a segment")
        server.start()  # same data dir, recovery
        left = list((server.data_dir / "segments").rglob("*.partial"))
        assert not left, f"partial files after recovery: {left}"
        counts = seq_counts(server, marker)
        context = "\n".join(history)
        duplicated = {seq: c for seq, c in counts.items() if c > 1}
        assert not duplicated, (
            f"records stored more than once after recovery: {sorted(duplicated.items())[:20]} ({len(duplicated)} seqs)\n{context}"
        )
        # The brief's own query: must be empty.
        _, rows = server.query(
            f"default | where resource['e2e.marker'] == '{marker}' | summarize c = count() by seq = tostring(attributes['seq']) | where c > 1"
        )
        assert rows == [], f"{rows[:20]}\n{context}"
        missing = [b * size + i for b in sorted(sender.acked) for i in range(size) if b * size + i not in counts]
        assert not missing, (
            f"{len(missing)} acknowledged records lost in the crash, e.g. seqs {missing[:20]} "
            f"(batches {sorted({s // size for s in missing})})\n{context}"
        )
        unknown = [seq for seq in counts if seq // size not in bodies]
        assert not unknown, f"records that were never sent: {unknown[:20]}"
        partial = {
            b: sum(1 for i in range(size) if b * size + i in counts) for b in range(batches) if b not in sender.acked
        }
        partial = {b: n for b, n in partial.items() if 0 < n < size}
        assert not partial, f"unacknowledged requests stored in part (batch: records stored): {partial}\n{context}"
        # The rows of earlier rounds are untouched by this crash and recovery (no loss, no replay).
        for old_marker, old_count in earlier:
            now = server.count(f"default | where resource['e2e.marker'] == '{old_marker}'")
            assert now == old_count, (
                f"round with marker {old_marker}: {old_count} rows before, {now} after another crash\n{context}"
            )
        earlier.append((marker, sum(counts.values())))
    print("\n".join(history))


def test_merge_while_querying(trawl_factory):
    server = trawl_factory("merge", merge_interval_secs=1)
    marker = f"merge-{uuid.uuid4().hex[:8]}"
    batches, size = 150, 20
    bodies = {b: batch_body(marker, b, size) for b in range(batches)}
    sender = Sender(f"{server.otlp_http_url}/v1/logs", bodies, server.ingest_auth, threads=3)
    kql = f"default | where resource['e2e.marker'] == '{marker}'"
    observations = []  # (acked rows before the query, count, rows started before the query ended)
    errors = []

    def observe() -> None:
        with sender.lock:
            low = len(sender.acked) * size
        try:
            n = server.count(kql)
        except (QueryError, OSError) as error:
            errors.append(str(error))
            return
        with sender.lock:
            high = len(sender.started) * size
        observations.append((low, n, high))

    threads = sender.run()
    # The table exists from the first stored batch on (before that a query says UnknownTable).
    while sender.acked_count() == 0 and any(t.is_alive() for t in threads):
        time.sleep(0.01)
    while any(t.is_alive() for t in threads):
        observe()
    for thread in threads:
        thread.join()
    assert not sender.failed, f"ingest failed: {sender.failed}"
    total = batches * size
    # Keep querying while the janitor merges what is left.
    settle = time.monotonic() + 4
    while time.monotonic() < settle:
        observe()
        time.sleep(0.05)

    assert not errors, f"queries failed during merges: {errors[:5]}"
    assert len(observations) > 20, f"too few queries ran: {len(observations)}"
    went_down = [(a, b) for a, b in zip(observations, observations[1:]) if b[1] < a[1]]
    assert not went_down, f"count went down between consecutive queries: {went_down[:10]}"
    below = [o for o in observations if o[1] < o[0]]
    assert not below, f"acknowledged rows not visible (acked before the query, count, started): {below[:10]}"
    above = [o for o in observations if o[1] > o[2]]
    assert not above, f"more rows than were sent (acked before, count, started): {above[:10]}"
    assert observations[-1][1] == total, f"final count {observations[-1][1]}, acknowledged {total}"
    counts = seq_counts(server, marker)
    assert len(counts) == total and set(counts.values()) == {1}, "duplicates or losses after merging"
    merges = server.log_text().count("merged segments")
    print(f"{len(observations)} queries, {merges} merges, final count {observations[-1][1]}")
    assert merges > 0, "no merge ran during the test (expected 'merged segments' in the server log)"


def test_sigterm_during_ingest_keeps_acknowledged_records(trawl_factory):
    """A clean shutdown while requests are in flight: exit 0 in time, and after a restart every
    acknowledged record is there exactly once."""
    rng = random.Random(SEED + 1)
    batches, size = 30, 250
    server = trawl_factory("sigterm")
    marker = f"sigterm-{uuid.uuid4().hex[:8]}"
    bodies = {b: batch_body(marker, b, size) for b in range(batches)}
    sender = Sender(f"{server.otlp_http_url}/v1/logs", bodies, server.ingest_auth, threads=4)
    kill_after = rng.randrange(3, batches - 8)
    threads = sender.run()
    deadline = time.monotonic() + 60
    while sender.acked_count() < kill_after and time.monotonic() < deadline:
        time.sleep(0.005)
    code = server.stop()
    sender.stop.set()
    for thread in threads:
        thread.join(timeout=30)
    context = f"seed {SEED}: SIGTERM after {kill_after} acks; acked {len(sender.acked)}, failed {sender.failed}"
    assert code == 0, f"exit code {code} on SIGTERM under load (None = not within the timeout)\n{context}"
    server.start()
    counts = seq_counts(server, marker)
    assert all(c == 1 for c in counts.values()), f"duplicates after a clean shutdown\n{context}"
    missing = [b for b in sorted(sender.acked) if any(b * size + i not in counts for i in range(size))]
    assert not missing, f"acknowledged batches missing after a clean shutdown: {missing}\n{context}"
