"""The log-push API (`POST /lgx/api/v1/push`) on a real server: a JSON push with labels and
structured metadata, checked field by field with KQL."""

from __future__ import annotations

import gzip
import json
import time
import uuid

from trawl_e2e import http_request


def test_json_push_maps_labels_severity_and_metadata(trawl):
    marker = f"push-{uuid.uuid4().hex[:8]}"
    t = time.time_ns()
    body = {
        "streams": [
            {
                "stream": {"job": "shop/checkout", "level": "warn", "pod": "p-1", "exporter": "x", "team": "a"},
                "values": [[str(t), f"{marker} one"], [str(t + 1), f"{marker} two", {"http_method": "GET", "user_id": "7"}]],
            }
        ]
    }
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip", **trawl.ingest_auth}
    status, _, answer = http_request(
        trawl.otlp_http_url + "/lgx/api/v1/push", gzip.compress(json.dumps(body).encode()), headers, "POST"
    )
    assert (status, answer) == (204, b"")
    kql = f'default | where body startswith "{marker}"'
    assert trawl.wait_for_count(kql, 2) == 2
    rows = trawl.query_dicts(
        f"{kql} | order by timestamp asc | project timestamp, body, severity_text, severity_number, resource, attributes"
    )
    second = rows[1]
    assert second["body"] == f"{marker} two"
    assert second["severity_text"] == "warn" and second["severity_number"] == 13
    assert second["resource"] == {"service.name": "checkout", "service.namespace": "shop", "k8s.pod.name": "p-1"}
    assert second["attributes"] == {"team": "a", "job": "shop/checkout", "http.method": "GET", "user_id": "7"}

    status, _, _ = http_request(
        trawl.otlp_http_url + "/lgx/api/v1/push", json.dumps(body).encode(), {"Content-Type": "application/json"}, "POST"
    )
    assert status == 401


def wait_rows(trawl, kql: str, n: int) -> list[dict]:
    assert trawl.wait_for_count(kql, n) == n
    return trawl.query_dicts(f"{kql} | order by timestamp asc | project body, severity_text, severity_number, resource, attributes")


def test_python_logging_loki_sends_with_basic_auth(trawl):
    """`python-logging-loki` speaks only basic authentication: the token goes as the password."""
    import logging

    import logging_loki

    marker = f"pll-{uuid.uuid4().hex[:8]}"
    handler = logging_loki.LokiHandler(
        url=trawl.otlp_http_url + "/lgx/api/v1/push",
        tags={"service": "billing", "namespace": "prod"},
        auth=("tenant", trawl.ingest_token),
        version="1",
    )
    logger = logging.getLogger(marker)
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    logger.warning(f"{marker} disk almost full", extra={"tags": {"disk": "sda"}})
    handler.close()
    (row,) = wait_rows(trawl, f'default | where body startswith "{marker}"', 1)
    assert row["body"] == f"{marker} disk almost full"
    assert row["resource"] == {"service.name": "billing", "k8s.namespace.name": "prod"}
    # This client names its level label `severity` (not `level`): a record attribute.
    assert row["attributes"] == {"severity": "warning", "logger": marker, "disk": "sda"}
    assert row["severity_text"] == ""  # KQL strings are never null


def test_loki_logger_handler_sends_gzip_json_with_metadata(trawl):
    import logging

    from loki_logger_handler.loki_logger_handler import LokiLoggerHandler

    marker = f"llh-{uuid.uuid4().hex[:8]}"
    handler = LokiLoggerHandler(
        url=trawl.otlp_http_url + "/lgx/api/v1/push",
        labels={"job": "shop/api", "level": "error"},
        compressed=True,
        additional_headers=trawl.ingest_auth,
        enable_structured_loki_metadata=True,
        loki_metadata={"http_route": "/cart", "user": "u1"},
        timeout=1,
    )
    logger = logging.getLogger(marker)
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    logger.error(f"{marker} payment failed")
    handler.flush()
    rows = wait_rows(trawl, f'default | where body contains "{marker}"', 1)
    row = rows[0]
    # The handler sends the record as a JSON line.
    assert json.loads(row["body"])["message"] == f"{marker} payment failed"
    assert row["severity_text"] == "error" and row["severity_number"] == 17
    assert row["resource"] == {"service.name": "api", "service.namespace": "shop"}
    assert row["attributes"]["http.route"] == "/cart" and row["attributes"]["user"] == "u1"
    assert row["attributes"]["job"] == "shop/api"


def test_protobuf_snappy_push_from_the_push_proto(trawl, tmp_path):
    """A push built from `push.proto` (the `logproto.PushRequest` wire shape), Snappy block
    compressed, as Promtail and Alloy send it."""
    import importlib
    import os
    import sys
    from pathlib import Path

    import cramjam
    import grpc_tools
    from grpc_tools import protoc

    repo = Path(__file__).resolve().parents[2]
    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = ["protoc", f"-I{repo / 'crates/proto/proto'}", f"-I{well_known}", f"--python_out={tmp_path}", "logproto/push.proto"]
    assert protoc.main(args) == 0
    sys.path.insert(0, str(tmp_path))
    try:
        push_pb2 = importlib.import_module("logproto.push_pb2")
    finally:
        sys.path.remove(str(tmp_path))

    marker = f"proto-{uuid.uuid4().hex[:8]}"
    request = push_pb2.PushRequest()
    stream = request.streams.add()
    stream.labels = '{service_name="gateway", level="debug", k8s_cluster_name="c1", filename="/var/log/app.log"}'
    entry = stream.entries.add()
    entry.timestamp.FromNanoseconds(1_700_000_000_123_456_789)
    entry.line = f"{marker} routed"
    metadata = entry.structuredMetadata.add()
    metadata.name, metadata.value = "service_version", "1.2"
    body = bytes(cramjam.snappy.compress_raw(request.SerializeToString()))
    headers = {"Content-Type": "application/x-protobuf", **trawl.ingest_auth}
    status, _, answer = http_request(trawl.otlp_http_url + "/lgx/api/v1/push", body, headers, "POST")
    assert (status, answer) == (204, b"")
    (row,) = wait_rows(trawl, f'default | where body == "{marker} routed"', 1)
    assert row["severity_text"] == "debug" and row["severity_number"] == 5
    assert row["resource"] == {"service.name": "gateway", "k8s.cluster.name": "c1", "log.file.path": "/var/log/app.log"}
    assert row["attributes"] == {"service.version": "1.2"}
    _, timestamps = trawl.query(f'default | where body == "{marker} routed" | project timestamp')
    assert timestamps == [["2023-11-14T22:13:20.1234567Z"]]
