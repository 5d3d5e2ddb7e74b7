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
