"""The otel_* aggregates and metric_hash on metrics sent by the OpenTelemetry SDK.

Each collection (`force_flush`) exports one point per series, so cumulative series get
several points; a second meter provider with another pod name stands for a restarted pod
(same series, new start time).
"""

from __future__ import annotations

import time

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider, UpDownCounter
from opentelemetry.sdk.metrics.export import AggregationTemporality, PeriodicExportingMetricReader
from opentelemetry.sdk.metrics.view import (
    ExplicitBucketHistogramAggregation,
    ExponentialBucketHistogramAggregation,
    View,
)
from opentelemetry.sdk.resources import Resource

from trawl_e2e import iso

SERVICE = "otel-fn"


def provider(server, pod: str, delta: bool) -> tuple[MeterProvider, PeriodicExportingMetricReader]:
    temporality = None
    if delta:
        temporality = {
            Counter: AggregationTemporality.DELTA,
            UpDownCounter: AggregationTemporality.DELTA,
            Histogram: AggregationTemporality.DELTA,
        }
    exporter = OTLPMetricExporter(
        endpoint=f"{server.otlp_http_url}/v1/metrics",
        headers=server.ingest_auth,
        timeout=10,
        preferred_temporality=temporality,
    )
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    views = [
        View(instrument_name="fn.latency", aggregation=ExplicitBucketHistogramAggregation(boundaries=[10.0, 100.0, 1000.0])),
        View(instrument_name="fn.exp_latency", aggregation=ExponentialBucketHistogramAggregation()),
    ]
    resource = Resource.create({"service.name": SERVICE, "k8s.pod.name": pod, "fn.delta": delta})
    return MeterProvider(resource=resource, metric_readers=[reader], views=views), reader


def flush(meter_provider: MeterProvider) -> None:
    assert meter_provider.force_flush(10_000), "metric force_flush timed out"
    time.sleep(0.01)  # distinct timestamps between collections


@pytest.fixture(scope="module")
def sent(trawl):
    started = time.time_ns()
    # Cumulative (the SDK default), pod 1: requests 5, 8, 10 on /a and 1 on /b; queue 10 then 7;
    # latency 5 and 50, then 500.
    cumulative, _ = provider(trawl, "pod-1", delta=False)
    meter = cumulative.get_meter("fn.meter")
    requests = meter.create_counter("fn.requests")
    queue = meter.create_up_down_counter("fn.queue")
    latency = meter.create_histogram("fn.latency", unit="ms")
    requests.add(5, {"route": "/a"})
    requests.add(1, {"route": "/b"})
    queue.add(10)
    latency.record(5)
    latency.record(50)
    flush(cumulative)
    requests.add(3, {"route": "/a"})
    queue.add(-3)
    latency.record(500)
    flush(cumulative)
    requests.add(2, {"route": "/a"})
    flush(cumulative)
    cumulative.shutdown()
    # The pod restarted: the same series starts again from zero (4, then 5).
    restarted, _ = provider(trawl, "pod-2", delta=False)
    requests = restarted.get_meter("fn.meter").create_counter("fn.requests")
    requests.add(4, {"route": "/a"})
    flush(restarted)
    requests.add(1, {"route": "/a"})
    flush(restarted)
    restarted.shutdown()
    # Delta temporality: requests 3 then 4; an up-down counter going down by 2; exponential
    # latencies 1 and 2, then 4 and 8.
    delta, _ = provider(trawl, "pod-3", delta=True)
    meter = delta.get_meter("fn.meter.delta")
    delta_requests = meter.create_counter("fn.delta_requests")
    drops = meter.create_up_down_counter("fn.delta_drops")
    exp_latency = meter.create_histogram("fn.exp_latency", unit="ms")
    delta_requests.add(3)
    drops.add(-2)
    exp_latency.record(1.0)
    exp_latency.record(2.0)
    flush(delta)
    delta_requests.add(4)
    exp_latency.record(4.0)
    exp_latency.record(8.0)
    flush(delta)
    delta.shutdown()
    # Cumulative readers export every series at each collection: 3 x 4 points for pod 1, 2 for
    # pod 2; delta readers only what changed: 3, then 2 (or 3, with a zero for the drops).
    trawl.wait_for_count(f"default | where resource['service.name'] == '{SERVICE}'", 19)
    return started


def metric(trawl, name: str, aggregate: str, by: str = "", **kwargs):
    kql = f"default | where metric_name == '{name}' | summarize v = {aggregate}{by}"
    return trawl.query_dicts(kql, **kwargs)


def test_cumulative_counter_increase_across_a_pod_restart(trawl, sent):
    # /a: 5 (the series began within the data) + 3 + 2, then a restart: 4 + 1.
    rows = metric(trawl, "fn.requests", "otel_increase($raw)", " by route = tostring(attributes['route'])")
    assert {r["route"]: r["v"] for r in rows} == {"/a": 15.0, "/b": 1.0}
    per_pod = metric(
        trawl,
        "fn.requests",
        "otel_increase($raw)",
        " by pod = tostring(resource['k8s.pod.name']) | order by pod asc",
    )
    assert [(r["pod"], r["v"]) for r in per_pod] == [("pod-1", 11.0), ("pod-2", 5.0)]


def test_a_window_that_starts_after_the_series_counts_only_growth_inside_it(trawl, sent):
    # The window starts after both series began: their first points inside it are baselines.
    first = trawl.query_dicts(
        "default | where metric_name == 'fn.requests' and attributes['route'] == '/a' "
        "| summarize t = min(timestamp), restart = max(start_time)"
    )[0]
    rows = metric(trawl, "fn.requests", "otel_increase($raw)", " by route = tostring(attributes['route'])", since=first["t"])
    # pod-1: 8 - 5 + 10 - 8 = 5 (5 is a baseline); pod-2 began after the window start: 4 + 1.
    assert {r["route"]: r["v"] for r in rows}["/a"] == 10.0


def test_metric_hash_groups_series_and_ignores_the_pod(trawl, sent):
    rows = trawl.query_dicts(
        f"default | where resource['service.name'] == '{SERVICE}' and metric_name == 'fn.requests' "
        "| summarize series = dcount(metric_hash), pods = dcount(tostring(resource['k8s.pod.name'])) "
        "by route = tostring(attributes['route'])"
    )
    assert {r["route"]: (r["series"], r["pods"]) for r in rows} == {"/a": (1, 2), "/b": (1, 1)}
    _, rows = trawl.query("default | where metric_name == 'fn.requests' | take 1 | project metric_hash")
    assert isinstance(rows[0][0], int)


def test_delta_counter_increase_and_rate(trawl, sent):
    rows = trawl.query_dicts(
        "default | where metric_name == 'fn.delta_requests' "
        "| summarize i = otel_increase($raw), r = otel_rate($raw), "
        "seconds = (max(timestamp) - min(start_time)) / 1s"
    )
    row = rows[0]
    assert row["i"] == 7.0
    assert row["seconds"] > 0
    assert row["r"] == pytest.approx(7.0 / row["seconds"], rel=1e-6)


def test_cumulative_up_down_counter_delta(trawl, sent):
    # 10, then 7: the series began within the data, so its change is 7.
    assert metric(trawl, "fn.queue", "otel_delta($raw)")[0]["v"] == 7.0


def test_negative_delta_increment_warns(trawl, sent):
    result = trawl.query_raw("default | where metric_name == 'fn.delta_drops' | summarize v = otel_increase($raw)")
    assert trawl.primary(result)["rows"] == [[-2.0]]
    warnings = next(t for t in result["Tables"] if t["name"] == "@Warnings")["rows"]
    assert [w[0] for w in warnings] == ["OtelNegativeIncrement"], warnings
    # otel_delta is meant for such counts: no warning.
    result = trawl.query_raw("default | where metric_name == 'fn.delta_drops' | summarize v = otel_delta($raw)")
    assert next(t for t in result["Tables"] if t["name"] == "@Warnings")["rows"] == []


def test_cumulative_histogram_merge_and_percentile(trawl, sent):
    merged = metric(trawl, "fn.latency", "otel_histogram_merge($raw)")[0]["v"]
    assert merged["count"] == 3.0
    assert merged["explicit_bounds"] == [10.0, 100.0, 1000.0]
    assert merged["bucket_counts"] == [1.0, 1.0, 1.0, 0.0]
    assert (merged["min"], merged["max"]) == (5.0, 500.0)
    # Rank 1.5 of 3 is halfway through the (10, 100] bucket.
    assert metric(trawl, "fn.latency", "otel_histogram_percentile($raw, 50)")[0]["v"] == pytest.approx(55.0)
    assert metric(trawl, "fn.latency", "otel_histogram_percentile($raw, 100)")[0]["v"] == pytest.approx(500.0)


def test_delta_exponential_histogram_merge_and_percentile(trawl, sent):
    merged = metric(trawl, "fn.exp_latency", "otel_histogram_merge($raw)")[0]["v"]
    assert merged["count"] == 4.0
    assert merged["sum"] == 15.0
    assert "scale" in merged and sum(merged["positive"]["bucket_counts"]) == 4.0
    p50 = metric(trawl, "fn.exp_latency", "otel_histogram_percentile($raw, 50)")[0]["v"]
    assert 1.0 <= p50 <= 4.0
    assert metric(trawl, "fn.exp_latency", "otel_histogram_percentile($raw, 99)")[0]["v"] <= 8.0


def test_bin_auto_picks_a_round_bin_for_the_window(trawl, sent):
    now = time.time_ns()
    # A one-hour window: 3 s bins (1,200 of them).
    rows = trawl.query_dicts(
        "default | where metric_name == 'fn.delta_requests' "
        "| summarize v = otel_increase($raw) by b = bin_auto(timestamp) "
        "| summarize total = sum(v), n = count()",
        since=iso(now - 3_600 * 10**9),
        until=iso(now + 1),
    )
    assert rows[0]["total"] == 7.0
    _, rows = trawl.query(
        "print b = bin_auto(datetime(2024-01-01 10:00:04))",
        since="2024-01-01T09:00:00Z",
        until="2024-01-01T10:00:00Z",
    )
    assert rows[0][0].startswith("2024-01-01T10:00:03")
    with pytest.raises(Exception):
        trawl.query("print bin_auto(now(), 5)")


def test_summarize_over_its_memory_budget_warns_through_the_gateway(trawl_factory):
    server = trawl_factory(extra_args=["--summarize-memory-limit-bytes", str(1 << 20)])
    result = server.query_raw(
        "range x from 1 to 200000 step 1 | summarize n = count() by k = strcat('k', x) | summarize groups = count(), rows = sum(n)"
    )
    groups, rows = server.primary(result)["rows"][0]
    assert 0 < groups < 200_000 and groups == rows, (groups, rows)
    warnings = next(t for t in result["Tables"] if t["name"] == "@Warnings")["rows"]
    assert [w[0] for w in warnings] == ["SummarizeMemoryLimit"], warnings
