"""Fault injection on the segment store and the catalog (`trawl serve --fault-injection`, which
serves `POST /debug/faults` on the operator port): slow and refused puts, a store down for
10 s and for 40 s, a full disk, a catalog down and a commit whose answer is lost.

Expected (SPEC "Errors / Ingest"): ingest holds a request up to 25 s while it retries with
backoff, then answers 503 with Retry-After (UNAVAILABLE over gRPC); a query names the part that
is unavailable; no partial segment is ever visible or left behind; the service recovers by itself; every
acknowledged record is stored exactly once, also when the sender retries a refused request.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import grpc
import pytest
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.resource.v1 import resource_pb2

from trawl_e2e import QueryError, http_request, ingest_channel

RETRY_SECS = 25


def logs_request(marker: str, batch: int, size: int = 20) -> logs_service_pb2.ExportLogsServiceRequest:
    t = time.time_ns()
    records = [
        logs_pb2.LogRecord(
            time_unix_nano=t + i,
            body=common_pb2.AnyValue(string_value=f"{marker} {batch}/{i}"),
            attributes=[common_pb2.KeyValue(key="seq", value=common_pb2.AnyValue(int_value=batch * size + i))],
        )
        for i in range(size)
    ]
    marker_kv = common_pb2.KeyValue(key="e2e.marker", value=common_pb2.AnyValue(string_value=marker))
    return logs_service_pb2.ExportLogsServiceRequest(
        resource_logs=[
            logs_pb2.ResourceLogs(
                resource=resource_pb2.Resource(attributes=[marker_kv]),
                scope_logs=[logs_pb2.ScopeLogs(log_records=records)],
            )
        ]
    )


def post_logs(server, body: bytes, timeout: float = 60) -> tuple[int, dict[str, str], float]:
    """(status, headers, seconds) of one OTLP/HTTP protobuf export."""
    started = time.monotonic()
    status, headers, _ = http_request(
        server.otlp_http_url + "/v1/logs",
        body,
        {"Content-Type": "application/x-protobuf", **server.ingest_auth},
        "POST",
        timeout,
    )
    return status, headers, time.monotonic() - started


def inject(server, **spec) -> dict:
    status, _, answer = http_request(
        server.operator_url + "/debug/faults", json.dumps(spec).encode(), {"Content-Type": "application/json"}, "POST"
    )
    assert status == 200, answer
    return json.loads(answer)


def seq_counts(server, marker: str) -> dict[int, int]:
    _, rows = server.query(
        f"default | where resource['e2e.marker'] == '{marker}' | summarize c = count() by seq = tolong(attributes['seq'])"
    )
    return {seq: c for seq, c in rows}


def assert_exactly(server, marker: str, batches: int, size: int = 20) -> None:
    counts = seq_counts(server, marker)
    twice = {s: c for s, c in counts.items() if c != 1}
    assert not twice, f"records stored more than once: {sorted(twice.items())[:10]}"
    assert sorted(counts) == list(range(batches * size)), f"{batches * size - len(counts)} records missing"


@pytest.fixture(scope="module")
def faulty(trawl_bin, tmp_path_factory):
    from trawl_e2e import TrawlServer, stop_all

    server = TrawlServer(
        trawl_bin,
        tmp_path_factory.mktemp("faults"),
        name="faults",
        merge_interval_secs=1,
        extra_args=["--fault-injection"],
    )
    server.start()
    yield server
    stop_all([server])


def test_faults_endpoint_is_off_by_default(trawl):
    status, _, _ = http_request(trawl.operator_url + "/debug/faults", b"{}", {"Content-Type": "application/json"}, "POST")
    assert status in (404, 405), status


def test_slow_and_refused_puts_are_retried(faulty):
    marker = f"slow-{uuid.uuid4().hex[:8]}"
    inject(faulty, clear=True, store_put_delay_ms=1500, store_failed_puts=3)
    status, _, took = post_logs(faulty, logs_request(marker, 0).SerializeToString())
    assert status == 200 and took >= 1.0, (status, took)
    print(f"slow and refused puts: stored after {took:.1f} s")
    inject(faulty, clear=True)
    assert_exactly(faulty, marker, 1)


def test_a_store_down_for_10s_is_waited_out(faulty):
    marker = f"down10-{uuid.uuid4().hex[:8]}"
    post_logs(faulty, logs_request(marker, 0).SerializeToString())
    inject(faulty, clear=True, store_down_secs=10)
    # A query that must read segments names the part that is down.
    with pytest.raises(QueryError) as refused:
        faulty.query(f"default | where resource['e2e.marker'] == '{marker}' | count")
    assert refused.value.status == 503 and "segment store is unavailable" in refused.value.body, refused.value.body
    status, _, took = post_logs(faulty, logs_request(marker, 1).SerializeToString())
    assert status == 200, status
    assert 5 <= took < RETRY_SECS, f"held {took:.1f} s"
    print(f"store down 10 s: request held {took:.1f} s, then 200")
    assert_exactly(faulty, marker, 2)
    metrics = http_request(faulty.operator_url + "/metrics")[2].decode()
    assert 'trawl_ingest_retries_total{part="store"}' in metrics
    assert 'trawl_storage_request_errors_total{operation="put"}' in metrics


def test_a_store_down_for_40s_answers_503_then_the_retry_is_stored_once(faulty):
    marker = f"down40-{uuid.uuid4().hex[:8]}"
    http_body = logs_request(marker, 0).SerializeToString()
    grpc_request = logs_request(marker, 1)
    inject(faulty, clear=True, store_down_secs=40)
    started = time.monotonic()
    outcomes: dict[str, object] = {}

    def over_grpc() -> None:
        with ingest_channel(faulty) as channel:
            try:
                logs_service_pb2_grpc.LogsServiceStub(channel).Export(grpc_request, timeout=60)
                outcomes["grpc"] = "ok"
            except grpc.RpcError as error:
                outcomes["grpc"] = error.code()

    thread = threading.Thread(target=over_grpc)
    thread.start()
    status, headers, took = post_logs(faulty, http_body)
    thread.join()
    assert status == 503 and headers.get("retry-after"), (status, headers)
    assert RETRY_SECS - 2 <= took <= RETRY_SECS + 5, f"held {took:.1f} s"
    assert outcomes["grpc"] == grpc.StatusCode.UNAVAILABLE, outcomes
    print(f"store down 40 s: HTTP 503 after {took:.1f} s (Retry-After {headers.get('retry-after')}), gRPC {outcomes['grpc']}")
    # The senders retry after the outage: stored once each, nothing partial visible before.
    time.sleep(max(0.0, 41 - (time.monotonic() - started)))
    assert post_logs(faulty, http_body)[0] == 200
    with ingest_channel(faulty) as channel:
        logs_service_pb2_grpc.LogsServiceStub(channel).Export(grpc_request, timeout=60)
    # And once more, as a sender that lost the answer would: still once.
    assert post_logs(faulty, http_body)[0] == 200
    assert_exactly(faulty, marker, 2)


def put_errors(server) -> float:
    metrics = http_request(server.operator_url + "/metrics")[2].decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith('trawl_storage_request_errors_total{operation="put"')
    )


def test_a_full_disk_leaves_nothing_partial(faulty):
    marker = f"full-{uuid.uuid4().hex[:8]}"
    # Something stored first, so the table has the columns the mid-outage query names.
    assert post_logs(faulty, logs_request(f"{marker}-before", 0).SerializeToString())[0] == 200
    errors_before = put_errors(faulty)
    inject(faulty, clear=True, store_disk_full_secs=4)
    outcome: dict[str, object] = {}
    thread = threading.Thread(target=lambda: outcome.update(post=post_logs(faulty, logs_request(marker, 0).SerializeToString())))
    thread.start()
    time.sleep(2)
    # Mid-outage: writes fail half-way through, and no query sees any of their rows.
    failed = put_errors(faulty) - errors_before
    assert failed > 0, "the full disk should have failed a write"
    assert faulty.count(f"default | where resource['e2e.marker'] == '{marker}'") == 0
    thread.join()
    status, _, took = outcome["post"]
    assert status == 200 and took >= 2, (status, took)
    print(f"disk full 4 s: {failed:.0f} failed write(s) mid-outage, none visible; stored after {took:.1f} s")
    # Every failed write, the request's and any background merge's, removed its half-written file.
    assert not list((faulty.data_dir / "segments").rglob("*.partial"))
    assert_exactly(faulty, marker, 1)


def test_catalog_faults(faulty):
    marker = f"catalog-{uuid.uuid4().hex[:8]}"
    # The commit goes through and its answer is lost: the retry finds it, once.
    inject(faulty, clear=True, catalog_lost_commits=2)
    assert post_logs(faulty, logs_request(marker, 0).SerializeToString())[0] == 200
    # Down for 8 s: ingest is held and stored once it is back; a query names the catalog.
    inject(faulty, clear=True, catalog_down_secs=8)
    with pytest.raises(QueryError) as refused:
        faulty.query("default | count")
    assert refused.value.status == 503 and "catalog" in refused.value.body, refused.value.body
    status, _, took = post_logs(faulty, logs_request(marker, 1).SerializeToString())
    assert status == 200 and took >= 4, (status, took)
    report = inject(faulty, clear=True)
    print(f"catalog: 2 lost commits stored once; down 8 s: held {took:.1f} s; {report['injected']} faults injected in all")
    assert report["injected"] > 0
    assert_exactly(faulty, marker, 2)


def test_a_request_sent_again_is_stored_once(trawl):
    """What a sender does when an answer is lost: the same request again, over OTLP/HTTP and
    OTLP/gRPC alike, is acknowledged and stored once; a different request is stored."""
    marker = f"again-{uuid.uuid4().hex[:8]}"
    request = logs_request(marker, 0)
    for _ in range(2):
        assert post_logs(trawl, request.SerializeToString())[0] == 200
    with ingest_channel(trawl) as channel:
        logs_service_pb2_grpc.LogsServiceStub(channel).Export(request, timeout=30)
    assert post_logs(trawl, logs_request(marker, 1).SerializeToString())[0] == 200
    assert_exactly(trawl, marker, 2)
    metrics = http_request(trawl.operator_url + "/metrics")[2].decode()
    deduplicated = [line for line in metrics.splitlines() if line.startswith("trawl_ingest_deduplicated_total ")]
    assert deduplicated and float(deduplicated[0].split()[1]) >= 2, deduplicated
