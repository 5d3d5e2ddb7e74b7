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
    # The commit the binary was built from (the tests run from a checkout).
    assert re.fullmatch(r"[0-9a-f]{12}", info.get("commit", "")), info


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? ([0-9.eE+-]+|NaN|[+-]Inf)$')


def metric_samples(text: str) -> dict[tuple[str, frozenset], float]:
    """{(name, labels): value} of an OpenMetrics / Prometheus text exposition."""
    samples = {}
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match:
            name, labels, value = match.groups()
            pairs = frozenset(re.findall(r'(\w+)="([^"]*)"', labels or ""))
            samples[(name, pairs)] = float(value)
    return samples


def scrape(trawl) -> dict[tuple[str, frozenset], float]:
    status, headers, body = http_request(trawl.operator_url + "/metrics")
    assert status == 200
    assert headers["content-type"].startswith("application/openmetrics-text"), headers
    text = body.decode()
    assert text.rstrip().endswith("# EOF"), text[-200:]
    return metric_samples(text)


def value(samples, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_operator_metrics_cover_ingest_storage_catalog_query_and_gateway(trawl):
    before = scrape(trawl)
    records = [{"body": {"stringValue": text}} for text in ("one", "two", "three")]
    status, answer = post_otlp_json_logs(trawl, records)
    assert status == 200, answer
    refused, _, _ = http_request(
        trawl.otlp_http_url + "/v1/logs", b"{}", {"Content-Type": "application/json"}, "POST"
    )
    assert refused == 401
    trawl.query("default | count")
    bad, _, _ = http_request(
        trawl.gateway_url + "/v2/rest/query",
        json.dumps({"csl": "print 1"}).encode(),
        {"Content-Type": "application/json", "Authorization": "Bearer not-a-token"},
        "POST",
    )
    assert bad == 401
    after = scrape(trawl)

    def grew(name: str, by: float | None = None, **labels) -> None:
        delta = value(after, name, **labels) - value(before, name, **labels)
        if by is None:
            assert delta > 0, f"{name}{labels} did not grow"
        else:
            assert delta == by, f"{name}{labels} grew by {delta}, not {by}"

    # Ingest: requests by protocol and outcome, records by signal, bytes, refusals.
    grew("trawl_ingest_requests_total", 1, protocol="otlp_http", outcome="stored")
    grew("trawl_ingest_requests_total", 1, protocol="otlp_http", outcome="refused")
    grew("trawl_ingest_records_total", 3, signal="logs")
    grew("trawl_ingest_bytes_total", protocol="otlp_http")
    grew("trawl_ingest_rejections_total", 1, reason="unauthenticated")
    grew("trawl_ingest_flush_seconds_count")
    assert ("trawl_ingest_buffered_rows", frozenset()) in after
    # Storage and catalog.
    grew("trawl_storage_segments_written_total")
    grew("trawl_storage_segment_bytes_written_total")
    grew("trawl_catalog_commit_seconds_count")
    # Query: duration and outcome by face, gauges.
    grew("trawl_queries_total", 1, face="adx", outcome="ok")
    grew("trawl_query_seconds_count", 1, face="adx")
    assert value(after, "trawl_query_running") == 0
    assert ("trawl_query_queued", frozenset()) in after
    # Gateway: forwarded requests by route, refusals by reason.
    grew("trawl_gateway_forwarded_total", 1, route="v2")
    grew("trawl_gateway_auth_failures_total", 1, reason="token")


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


def test_a_restarted_server_warms_its_footer_cache_before_it_is_ready(trawl_factory):
    """At start-up the query node reads the footers and token indexes of the live segments
    into their caches (the log says how many) before it takes queries; `--warm-up-secs 0`
    turns that off."""
    server = trawl_factory("warm")
    for batch in range(3):
        records = [{"body": {"stringValue": f"warm-up {batch} {i}"}} for i in range(20)]
        status, answer = post_otlp_json_logs(server, records, service="warm")
        assert status == 200, answer
    server.wait_for_count('default | where body has "warm-up"', 60)
    server.stop_cleanly()
    server.start()
    log = server.log_paths[-1].read_text(errors="replace")
    warmed = re.search(r"footer cache warmed.*?footers=(\d+) live_segments=(\d+).*?token_indexes=(\d+)", log)
    assert warmed, f"no warm-up line in the log of the restart:\n{server.log_tail()}"
    footers, live, indexes = int(warmed.group(1)), int(warmed.group(2)), int(warmed.group(3))
    assert 1 <= footers <= live, warmed.group(0)
    # Every segment written here has a token index, and the warm-up read each one it had the
    # footer of.
    assert indexes == footers, warmed.group(0)
    assert server.count('default | where body has "warm-up"') == 60
    server.stop_cleanly()
    server.extra_args = ["--warm-up-secs", "0"]
    server.start()
    assert "footer cache warmed" not in server.log_paths[-1].read_text(errors="replace")
    assert server.count('default | where body has "warm-up"') == 60
