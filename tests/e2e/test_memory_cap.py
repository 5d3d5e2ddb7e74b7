"""The whole server under a memory cap of 2 GiB, with its default memory settings (which it
derives from the cap): every query of hostile_shapes.py, one after another and then several
at once, while OTLP ingest runs at a steady rate. The server stays up and healthy after each,
every ingest request is acknowledged and stored exactly once, and the allocator's live bytes
come back near where they started.

The cap is a cgroup v2 `memory.max` where the machine delegates the memory controller, else a
cgroup v1 `memory.limit_in_bytes`, else `RLIMIT_AS` (address space, which counts more than
memory: the server's defaults read it as its limit all the same). The kernel kills a process
that passes a cgroup cap; under RLIMIT_AS an allocation fails and the process aborts: either
way a server that overruns it is gone, which the test sees.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hostile_shapes import SERVER_LIMIT, memory_refusal_problem, memory_shapes, result_shapes
from test_hostile_queries import SteadyIngest, adx_query
from trawl_e2e import TrawlServer, http_request, operator_gauges, stop_all

CAP = 2 << 30
# Live heap bytes the server may keep after the queries, above what it held before them
# (caches of segments and indexes that the queries filled, ingest buffers).
HEAP_SLACK = 192 << 20


def mounts() -> list[tuple[str, str, str]]:
    """(mount point, file system type, super options) of /proc/self/mountinfo."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        found.append((fields[4], fields[dash + 1], fields[-1]))
    return found


class MemoryCap:
    """A memory cap for one process tree: `wrap(binary)` gives an executable that enters it
    and runs `binary`."""

    def __init__(self, directory: Path, limit: int = CAP):
        self.directory = directory
        self.limit = limit
        self.kind = "RLIMIT_AS"
        self.group: Path | None = None
        name = f"trawl-e2e-{os.getpid()}-{time.monotonic_ns()}"
        for point, fstype, options in mounts():
            if self.group is None and fstype == "cgroup2" and self._v2(Path(point), name):
                self.kind = "cgroup v2 memory.max"
        if self.group is None:
            for point, fstype, options in mounts():
                if self.group is None and fstype == "cgroup" and "memory" in options.split(","):
                    if self._v1(Path(point), name):
                        self.kind = "cgroup v1 memory.limit_in_bytes"

    def _v2(self, root: Path, name: str) -> bool:
        try:
            if "memory" not in (root / "cgroup.controllers").read_text().split():
                return False
            if "memory" not in (root / "cgroup.subtree_control").read_text().split():
                (root / "cgroup.subtree_control").write_text("+memory")
            group = root / name
            group.mkdir()
            (group / "memory.max").write_text(str(self.limit))
            swap = group / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
        except OSError:
            return False
        self.group = group
        return True

    def _v1(self, root: Path, name: str) -> bool:
        try:
            group = root / name
            group.mkdir()
            (group / "memory.limit_in_bytes").write_text(str(self.limit))
            swap = group / "memory.memsw.limit_in_bytes"
            if swap.exists():
                try:
                    swap.write_text(str(self.limit))
                except OSError:
                    pass
        except OSError:
            return False
        self.group = group
        return True

    def wrap(self, binary: Path) -> Path:
        script = self.directory / "capped-trawl"
        if self.group is not None:
            enter = f"echo $$ > {self.group / 'cgroup.procs'}"
        else:
            enter = f"ulimit -v {self.limit // 1024}"
        script.write_text(f'#!/bin/sh\nset -e\n{enter}\nexec "{binary}" "$@"\n')
        script.chmod(0o755)
        return script

    def peak(self) -> int | None:
        """The most the group used at once (page cache included), when it is a cgroup."""
        if self.group is None:
            return None
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            path = self.group / name
            if path.exists():
                return int(path.read_text())
        return None

    def remove(self) -> None:
        if self.group is not None:
            try:
                self.group.rmdir()
            except OSError:
                pass


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def heap_allocated(server: TrawlServer) -> float:
    return operator_gauges(server, "trawl_memory_heap_allocated_bytes")["trawl_memory_heap_allocated_bytes"]


def healthy(server: TrawlServer) -> None:
    assert server.running, f"the server died\n{server.log_tail()}"
    status, _, _ = http_request(server.query_url + "/health/ready", timeout=10)
    assert status == 200, f"not ready: {status}"
    assert server.query("print x = 1")[1] == [[1]]


def check_answer(shape, status: int, body: str) -> str:
    # The defaults a 2 GiB cap gives are larger than the budget the shapes were sized for
    # (test_hostile_queries.py): one that fits them is answered, one that runs long meets the
    # time limit.
    assert status in shape.statuses | {200, 503, 504}, f"{shape.name!r}: {status} {body[:400]}"
    if status == 200:
        return "answered"
    error = json.loads(body)["error"]
    message = error["message"]
    assert "the server log has details" not in message, f"{shape.name!r}: an internal error: {error}"
    if status == 503:
        # Several at once may spend the server's memory for queries: the largest is stopped.
        assert SERVER_LIMIT in message, f"{shape.name!r}: {message}"
    elif status == 400:
        problem = memory_refusal_problem(shape, message)
        assert problem is None, problem
    return message


@pytest.fixture
def capped_server(trawl_bin, tmp_path):
    cap = MemoryCap(tmp_path)
    server = TrawlServer(
        cap.wrap(trawl_bin), tmp_path / "capped", name="capped", extra_args=["--query-timeout-secs", "60"]
    )
    try:
        server.start()
        yield server, cap
    finally:
        stop_all([server])
        cap.remove()


def test_hostile_queries_under_a_memory_cap(capped_server):
    server, cap = capped_server
    pid = server.process.pid
    shapes = memory_shapes() + result_shapes()
    ingest = SteadyIngest(server)
    ingest.start()
    outcomes = []
    try:
        # Warm up (ingest flushes, the first queries fill the caches they use), then the start.
        time.sleep(2)
        healthy(server)
        start_heap = heap_allocated(server)
        started = time.monotonic()
        for index, shape in enumerate(shapes):
            path = "/v1/rest/query" if index % 2 == 0 else "/v2/rest/query"
            status, body = adx_query(server, path, shape.kql, timeout="00:01:00")
            outcomes.append((shape.name, status, check_answer(shape, status, body)[:160]))
            healthy(server)
        concurrent_started = time.monotonic()
        sequential_secs = concurrent_started - started
        sequential_peak_kib = status_kib(pid, "VmHWM")
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(
                pool.map(
                    lambda shape: (shape, *adx_query(server, "/v2/rest/query", shape.kql, timeout="00:01:00")),
                    shapes,
                )
            )
        for shape, status, body in answers:
            outcomes.append((f"{shape.name} (concurrent)", status, check_answer(shape, status, body)[:160]))
        healthy(server)
        concurrent_ended = time.monotonic()
        # What the queries held is freed once they end.
        deadline = time.monotonic() + 30
        end_heap = heap_allocated(server)
        while end_heap > start_heap + HEAP_SLACK and time.monotonic() < deadline:
            time.sleep(1)
            end_heap = heap_allocated(server)
    finally:
        ingest.stopping.set()
        ingest.join(timeout=30)
    peak_kib = status_kib(pid, "VmHWM")
    print(f"memory cap: {cap.kind}, {CAP >> 20} MiB")
    for outcome in outcomes:
        print("  ", outcome)
    print(
        f"peak RSS {peak_kib >> 10} MiB (after the sequential run {sequential_peak_kib >> 10} MiB, "
        f"{sequential_secs:.0f} s); group peak {(cap.peak() or 0) >> 20} MiB; "
        f"heap allocated {start_heap / 2**20:.0f} MiB before, {end_heap / 2**20:.0f} MiB after"
    )
    print(
        f"ingest during them: {len(ingest.latencies)} requests, {len(ingest.acknowledged)} records, "
        f"slowest acknowledgement {max(ingest.latencies):.2f} s "
        f"(one after another {ingest.slowest_between(started, concurrent_started):.2f} s, "
        f"at once {ingest.slowest_between(concurrent_started, concurrent_ended):.2f} s)"
    )
    assert ingest.failures == [], f"ingest failed while the queries ran: {ingest.failures[:5]}"
    assert end_heap <= start_heap + HEAP_SLACK, f"heap {start_heap:.0f} -> {end_heap:.0f} bytes"
    assert peak_kib << 10 < CAP
    columns, rows = server.query(
        "default | where tostring(resource['service.name']) == 'steady' "
        "| summarize copies = count() by id = tostring(body) | summarize records = count(), most = max(copies)"
    )
    assert dict(zip(columns, rows[0])) == {"records": len(ingest.acknowledged), "most": 1}
    # Default limits under a cap come from the cap.
    assert "memory limits" in server.log_text()
