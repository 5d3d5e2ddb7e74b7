"""CPU and heap profiles from the operator port, read the way operators read them: `go tool pprof`
(installed by the test command) and the profile protobuf itself."""

from __future__ import annotations

import gzip
import importlib
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from grpc_tools import protoc

from trawl_e2e import http_request, operator_gauges

PROTO_ROOT = Path(__file__).resolve().parents[2] / "crates" / "proto" / "proto"


@pytest.fixture(scope="module")
def profile_pb(tmp_path_factory):
    out = tmp_path_factory.mktemp("pprof_stubs")
    assert protoc.main(["grpc_tools.protoc", f"-I{PROTO_ROOT}", f"--python_out={out}", "pprof/profile.proto"]) == 0
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module("pprof.profile_pb2")
    finally:
        sys.path.remove(str(out))


def pprof_top(body: bytes, path: Path) -> str:
    """What `go tool pprof -top` prints for the profile `body`, saved at `path`."""
    go = shutil.which("go")
    assert go, "go tool pprof is missing: scripts/test.sh installs golang-go"
    path.write_bytes(body)
    env = dict(os.environ, HOME=str(path.parent), GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    top = subprocess.run(
        [go, "tool", "pprof", "-top", "-nodecount=20", str(path)], capture_output=True, text=True, timeout=120, env=env
    )
    assert top.returncode == 0, top.stderr
    return top.stdout


def busy(trawl, stop: threading.Event) -> None:
    """Queries that keep the engine's threads busy until stopped."""
    while not stop.is_set():
        trawl.query("range x from 1 to 300000 step 1 | summarize count() by x % 7")


def test_a_cpu_profile_is_what_go_tool_pprof_reads(trawl, profile_pb, tmp_path):
    stop = threading.Event()
    load = threading.Thread(target=busy, args=(trawl, stop), daemon=True)
    load.start()
    try:
        status, headers, body = http_request(trawl.operator_url + "/debug/pprof/profile?seconds=2", timeout=30)
    finally:
        stop.set()
        load.join(timeout=30)
    assert status == 200, body[:200]
    profile = profile_pb.Profile()
    profile.ParseFromString(gzip.decompress(body))
    strings = profile.string_table
    assert strings[0] == ""
    assert [(strings[t.type], strings[t.unit]) for t in profile.sample_type] == [
        ("samples", "count"),
        ("cpu", "nanoseconds"),
    ]
    assert profile.duration_nanos >= 2_000_000_000
    assert sum(s.value[0] for s in profile.sample) > 20, "too few samples for two busy seconds"
    names = {strings[f.name] for f in profile.function}
    assert any(name.startswith("trawl_engine::") for name in names), sorted(names)[:20]
    # Every sample's stack refers to locations and functions the profile holds.
    location_ids = {location.id for location in profile.location}
    assert all(set(sample.location_id) <= location_ids for sample in profile.sample)

    top = pprof_top(body, tmp_path / "profile.pb.gz")
    assert "Type: cpu" in top, top


def test_one_profile_at_a_time_and_bounded_durations(trawl):
    first = {}

    def take() -> None:
        first["status"] = http_request(trawl.operator_url + "/debug/pprof/profile?seconds=2", timeout=30)[0]

    thread = threading.Thread(target=take)
    thread.start()
    time.sleep(0.5)
    status, _, body = http_request(trawl.operator_url + "/debug/pprof/profile?seconds=1", timeout=30)
    thread.join(timeout=30)
    assert first["status"] == 200
    assert status == 409, body
    for seconds in ("0", "301", "soon"):
        status, _, body = http_request(trawl.operator_url + f"/debug/pprof/profile?seconds={seconds}")
        assert status == 400, (seconds, body)


def test_a_heap_profile_is_what_go_tool_pprof_reads(trawl, profile_pb, tmp_path):
    # Some data held in memory: the engine's caches, the catalog, buffers.
    for _ in range(3):
        trawl.query("range x from 1 to 200000 step 1 | summarize count() by x % 7")
    status, headers, body = http_request(trawl.operator_url + "/debug/pprof/heap", timeout=60)
    assert status == 200, body[:200]
    profile = profile_pb.Profile()
    profile.ParseFromString(gzip.decompress(body))
    strings = profile.string_table
    assert [(strings[t.type], strings[t.unit]) for t in profile.sample_type] == [
        ("inuse_objects", "count"),
        ("inuse_space", "bytes"),
    ]
    assert strings[profile.default_sample_type] == "inuse_space"
    assert (strings[profile.period_type.type], profile.period) == ("space", 1 << 20)
    live = sum(s.value[1] for s in profile.sample)
    assert live > 0, "no live allocation in a running server"
    names = {strings[f.name] for f in profile.function}
    assert any(name.startswith("trawl") for name in names), sorted(names)[:20]
    location_ids = {location.id for location in profile.location}
    assert all(set(sample.location_id) <= location_ids for sample in profile.sample)

    top = pprof_top(body, tmp_path / "heap.pb.gz")
    assert "Type: inuse_space" in top, top
    # The allocator's own count of live bytes agrees with the profile's estimate from samples,
    # and the process's resident memory holds it.
    memory = memory_gauges(trawl)
    allocated = memory["trawl_memory_heap_allocated_bytes"]
    if allocated > 32 << 20:  # enough samples (one per MiB) for the estimate to be close
        assert 0.25 < live / allocated < 4, (live, memory)
    assert memory["trawl_memory_resident_bytes"] > allocated, memory
    assert memory["trawl_memory_heap_resident_bytes"] >= allocated, memory
    print(f"profile {live / 2**20:.1f} MiB live, allocator {allocated / 2**20:.1f} MiB, RSS {memory['trawl_memory_resident_bytes'] / 2**20:.1f} MiB")


def memory_gauges(trawl) -> dict[str, float]:
    return operator_gauges(trawl, "trawl_memory_")
