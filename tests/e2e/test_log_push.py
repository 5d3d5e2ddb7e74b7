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
