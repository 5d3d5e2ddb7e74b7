"""Probes on every HTTP port, and the operator's Prometheus metrics."""

from __future__ import annotations

import json
import re

import pytest

from trawl_e2e import http_request, post_otlp_json_logs


@pytest.mark.parametrize("port", ["gateway_url", "query_url", "operator_url", "otlp_http_url"])
def test_probes_on_every_http_port(trawl, port):
    base = getattr(trawl, port)
    status, headers, body = http_request(base + "/health")
    assert status == 200, (port, status, body)
    status, headers, body = http_request(base + "/health/ready")
    assert status == 200, (port, status, body)
    assert json.loads(body) == {"status": "ready"}
    status, headers, body = http_request(base + "/info")
    assert status == 200, (port, status, body)
    assert headers["content-type"].startswith("application/json")
    info = json.loads(body)
    assert isinstance(info, dict) and info.get("version"), info


def test_operator_metrics_count_ingested_rows(trawl):
    def counter(text: str, name: str) -> int:
        match = re.search(rf"^{name} (\d+)$", text, re.MULTILINE)
        assert match, f"{name} missing from /metrics:\n{text}"
        return int(match.group(1))

    status, headers, body = http_request(trawl.operator_url + "/metrics")
    assert status == 200
    assert headers["content-type"].startswith("text/plain")
    text = body.decode()
    assert "# TYPE trawl_ingest_rows_total counter" in text
    before = counter(text, "trawl_ingest_rows_total")
    records = [{"body": {"stringValue": text}} for text in ("one", "two", "three")]
    status, answer = post_otlp_json_logs(trawl, records)
    assert status == 200, answer
    _, _, body = http_request(trawl.operator_url + "/metrics")
    assert counter(body.decode(), "trawl_ingest_rows_total") == before + 3


def test_query_port_answers_only_signed_requests_with_problem_details(trawl):
    """The query service refuses what the gateway did not sign, even with a valid token."""
    for headers in ({}, trawl.query_auth, {"x-svc-username": "admin", "x-svc-signature": "forged"}):
        status, _, body = http_request(
            trawl.query_url + "/query",
            json.dumps({"query": "default | count"}).encode(),
            {"Content-Type": "application/json", **headers},
            "POST",
        )
        assert status == 401, (status, body)
        problem = json.loads(body)
        assert {"type", "message", "code"} <= set(problem), problem
        assert problem["code"] == "Unauthenticated"


def test_gateway_answers_query_errors_as_adx_errors(trawl):
    status, _, body = http_request(
        trawl.gateway_url + "/v2/rest/query",
        json.dumps({"db": "default", "csl": "default | where"}).encode(),
        {"Content-Type": "application/json", **trawl.query_auth},
        "POST",
    )
    assert status == 400, (status, body)
    assert json.loads(body)["error"]["@context"]["code"] == "SyntaxError"


def test_default_table_answers_before_any_ingest(trawl_factory):
    """The default table exists from the first start: a count is 0, not UnknownTable."""
    server = trawl_factory()
    columns, rows = server.query("default | count")
    assert rows == [[0]], rows
    columns, rows = server.query("default | where timestamp > ago(1h) | count")
    assert rows == [[0]], rows
