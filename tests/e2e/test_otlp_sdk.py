"""OTLP intake with the real OpenTelemetry Python SDK exporters (gRPC and HTTP/protobuf, plain and
gzip), checked field by field against the SPEC row layout ("Stored telemetry rows (OTLP
conversion)") as the mapping README implements it.

Each transport variant sends its own copy of the same telemetry under a resource attribute
`e2e.transport`, so every check counts exactly the rows of one variant.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from opentelemetry import trace as trace_api
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetricExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.metrics import Observation
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExportResult
from opentelemetry.sdk.metrics import (
    Counter,
    Histogram,
    MeterProvider,
    ObservableCounter,
    ObservableUpDownCounter,
    UpDownCounter,
)
from opentelemetry.sdk.metrics.export import AggregationTemporality, MetricExportResult, PeriodicExportingMetricReader
from opentelemetry.sdk.metrics.view import (
    ExplicitBucketHistogramAggregation,
    ExponentialBucketHistogramAggregation,
    View,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from trawl_e2e import MS, iso

TRANSPORTS = ["grpc", "http", "grpc-gzip", "http-gzip"]

# Rows each transport variant produces: 3 spans, 2 log records, 9 metric data points.
SPANS_PER_RUN = 3
LOGS_PER_RUN = 2
POINTS_PER_RUN = 9


def hex_trace(trace_id: int) -> str:
    return format(trace_id, "032x")


def hex_span(span_id: int) -> str:
    return format(span_id, "016x")


def recording(cls):
    """A subclass of an SDK exporter that records every export result (the SDK only logs failures)."""

    class Recording(cls):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.results: list[Any] = []

        def export(self, *args, **kwargs):
            result = super().export(*args, **kwargs)
            self.results.append(result)
            return result

    Recording.__name__ = f"Recording{cls.__name__}"
    return Recording


@dataclass
class Sent:
    """What one transport variant sent: ids and times to compare the stored rows with."""

    transport: str
    t0: int
    resource: dict[str, Any]
    linked_trace: str = ""
    linked_span: str = ""
    trace_id: str = ""
    parent_span: str = ""
    child_span: str = ""
    child_trace_flags: int = 0
    export_results: dict[str, list[Any]] = field(default_factory=dict)


def make_exporters(server, transport: str, delta: bool = False):
    gzip = transport.endswith("-gzip")
    temporality = None
    if delta:
        temporality = {
            Counter: AggregationTemporality.DELTA,
            UpDownCounter: AggregationTemporality.CUMULATIVE,
            Histogram: AggregationTemporality.DELTA,
            ObservableCounter: AggregationTemporality.DELTA,
            ObservableUpDownCounter: AggregationTemporality.CUMULATIVE,
        }
    if transport.startswith("grpc"):
        common = dict(
            endpoint=server.otlp_grpc_url,
            insecure=True,
            headers={"authorization": f"Bearer {server.ingest_token}"},
            timeout=10,
            compression=grpc.Compression.Gzip if gzip else None,
        )
        return (
            recording(GrpcSpanExporter)(**common),
            recording(GrpcLogExporter)(**common),
            recording(GrpcMetricExporter)(preferred_temporality=temporality, **common),
        )
    compression = HttpCompression.Gzip if gzip else HttpCompression.NoCompression
    base = server.otlp_http_url
    auth = server.ingest_auth
    return (
        recording(HttpSpanExporter)(endpoint=f"{base}/v1/traces", timeout=10, compression=compression, headers=auth),
        recording(HttpLogExporter)(endpoint=f"{base}/v1/logs", timeout=10, compression=compression, headers=auth),
        recording(HttpMetricExporter)(
            endpoint=f"{base}/v1/metrics",
            timeout=10,
            compression=compression,
            preferred_temporality=temporality,
            headers=auth,
        ),
    )


def send_with_sdk(server, transport: str) -> Sent:
    t0 = (time.time_ns() // 1000) * 1000 - 5_000 * MS  # whole microseconds, a little in the past
    resource_attributes = {
        "service.name": f"e2e-sdk-{transport}",
        "service.version": "1.2.3",
        "deployment.environment.name": "e2e",
        "e2e.transport": transport,
    }
    resource = Resource.create(resource_attributes)
    sent = Sent(transport=transport, t0=t0, resource=dict(resource.attributes))
    span_exporter, log_exporter, metric_exporter = make_exporters(server, transport)
    _, _, delta_metric_exporter = make_exporters(server, transport, delta=True)

    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(log_exporter))
    tracer = tracer_provider.get_tracer("e2e.tracer", "2.0.1", attributes={"e2e.scope": "tracing"})
    logger = logger_provider.get_logger("e2e.logger", "3.1.4")

    # Traces: a span to link to, then a SERVER parent with an INTERNAL child.
    linked = tracer.start_span("warmup", kind=SpanKind.CLIENT, start_time=t0 - 50 * MS)
    linked.end(end_time=t0 - 10 * MS)
    parent = tracer.start_span(
        "GET /api/items",
        kind=SpanKind.SERVER,
        start_time=t0,
        attributes={
            "http.method": "GET",
            "http.route": "/api/items",
            "retries": 3,
            "ratio": 0.25,
            "cached": False,
            "tags": ["a", "b"],
        },
    )
    child = tracer.start_span(
        "db.query",
        context=trace_api.set_span_in_context(parent),
        start_time=t0 + 100 * MS,
        attributes={"db.system": "postgresql"},
        links=[Link(linked.get_span_context(), {"link.reason": "follows"})],
    )
    child.add_event("cache.miss", {"cache.key": "items:42", "attempt": 2}, timestamp=t0 + 150 * MS)
    child.set_status(Status(StatusCode.ERROR, "database timeout"))

    # Logs: one inside the child span (trace context), one structured without a span.
    logger.emit(
        timestamp=t0 + 200 * MS,
        context=trace_api.set_span_in_context(child),
        severity_number=SeverityNumber.ERROR,
        severity_text="ERROR",
        body="query failed: timeout",
        attributes={"e2e.kind": "correlated", "db.system": "postgresql", "attempt": 2},
    )
    logger.emit(
        timestamp=t0 + 300 * MS,
        severity_number=SeverityNumber.INFO,
        severity_text="INFO",
        body={"event": "startup", "port": 8080, "tags": ["x", "y"]},
        attributes={"e2e.kind": "structured"},
    )
    child.end(end_time=t0 + 400 * MS)
    parent.end(end_time=t0 + 1500 * MS)

    sent.linked_trace = hex_trace(linked.get_span_context().trace_id)
    sent.linked_span = hex_span(linked.get_span_context().span_id)
    sent.trace_id = hex_trace(parent.get_span_context().trace_id)
    sent.parent_span = hex_span(parent.get_span_context().span_id)
    sent.child_span = hex_span(child.get_span_context().span_id)
    sent.child_trace_flags = int(child.get_span_context().trace_flags)

    # Metrics: cumulative provider (the SDK default) and a delta one. Readers export only at shutdown.
    views = [
        View(
            instrument_name="e2e.latency",
            aggregation=ExplicitBucketHistogramAggregation(boundaries=[10.0, 100.0, 1000.0]),
        ),
        View(instrument_name="e2e.exp_latency", aggregation=ExponentialBucketHistogramAggregation()),
    ]
    meter_provider = MeterProvider(
        resource=resource,
        metric_readers=[PeriodicExportingMetricReader(metric_exporter, export_interval_millis=3_600_000)],
        views=views,
    )
    meter = meter_provider.get_meter("e2e.meter", "4.0")
    requests_counter = meter.create_counter("e2e.requests", unit="1", description="Requests served")
    requests_counter.add(5, {"route": "/a"})
    requests_counter.add(2, {"route": "/a"})
    requests_counter.add(1, {"route": "/b"})
    queue = meter.create_up_down_counter("e2e.queue_depth", unit="{item}")
    queue.add(10)
    queue.add(-3)
    latency = meter.create_histogram("e2e.latency", unit="ms", description="Request latency")
    for value in (5, 50, 50, 500, 5000):
        latency.record(value, {"route": "/a"})
    exp_latency = meter.create_histogram("e2e.exp_latency", unit="ms")
    for value in (1.0, 2.0, 4.0, 8.0):
        exp_latency.record(value)
    meter.create_observable_gauge(
        "e2e.temperature", callbacks=[lambda options: [Observation(21.5, {"room": "lab"})]], unit="Cel"
    )
    meter.create_gauge("e2e.sync_gauge").set(3, {"kind": "sync"})

    delta_provider = MeterProvider(
        resource=resource,
        metric_readers=[PeriodicExportingMetricReader(delta_metric_exporter, export_interval_millis=3_600_000)],
    )
    delta_meter = delta_provider.get_meter("e2e.meter.delta", "4.1")
    delta_counter = delta_meter.create_counter("e2e.delta_requests")
    delta_counter.add(3)
    delta_counter.add(4)
    delta_meter.create_histogram("e2e.delta_latency", unit="s").record(1.5)

    assert tracer_provider.force_flush(10_000), "span force_flush timed out"
    assert logger_provider.force_flush(10_000), "log force_flush timed out"
    tracer_provider.shutdown()
    logger_provider.shutdown()
    meter_provider.shutdown()  # one collection and export each
    delta_provider.shutdown()

    sent.export_results = {
        "spans": span_exporter.results,
        "logs": log_exporter.results,
        "metrics": metric_exporter.results,
        "delta metrics": delta_metric_exporter.results,
    }
    return sent


@pytest.fixture(scope="module")
def sent(trawl) -> dict[str, Sent]:
    """Sends the SDK telemetry once per transport variant and waits until it is queryable."""
    sent = {transport: send_with_sdk(trawl, transport) for transport in TRANSPORTS}
    expected = SPANS_PER_RUN + LOGS_PER_RUN + POINTS_PER_RUN
    for transport in TRANSPORTS:
        trawl.wait_for_count(f"default | where resource['e2e.transport'] == '{transport}'", expected)
    return sent


def rows_of(trawl, transport: str, condition: str) -> list[dict[str, Any]]:
    return trawl.query_dicts(f"default | where resource['e2e.transport'] == '{transport}' | where {condition}")


def one(rows: list[dict[str, Any]], what: str) -> dict[str, Any]:
    assert len(rows) == 1, f"expected exactly one {what}, found {len(rows)}: {rows}"
    return rows[0]


def assert_fields(row: dict[str, Any], expected: dict[str, Any], what: str) -> None:
    """Compares the listed fields; a field expected as None must be absent (null or empty text)."""
    problems = []
    for name, want in expected.items():
        have = row.get(name)
        if want is None:
            if have not in (None, ""):
                problems.append(f"{name}: expected absent, found {have!r}")
        elif have != want:
            problems.append(f"{name}: expected {want!r}, found {have!r}")
    assert not problems, f"{what}:\n  " + "\n  ".join(problems) + f"\nrow: {row}"


# --- exports ------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sdk_exports_succeed(sent, transport):
    success = {"spans": SpanExportResult.SUCCESS, "logs": LogRecordExportResult.SUCCESS}
    for signal, results in sent[transport].export_results.items():
        assert results, f"{signal}: the exporter never exported"
        want = success.get(signal, MetricExportResult.SUCCESS)
        assert all(r == want for r in results), f"{signal}: export results {results}"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_row_counts_per_transport(trawl, sent, transport):
    _, rows = trawl.query(
        f"default | where resource['e2e.transport'] == '{transport}' "
        "| extend kind = iff(isnotempty(span_name), 'span', iff(isnotempty(metric_name), 'metric', 'log')) "
        "| summarize n = count() by kind"
    )
    assert dict(rows) == {"span": SPANS_PER_RUN, "log": LOGS_PER_RUN, "metric": POINTS_PER_RUN}


# --- spans --------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_span_rows(trawl, sent, transport):
    s = sent[transport]
    spans = rows_of(trawl, transport, "isnotempty(span_name)")
    assert len(spans) == SPANS_PER_RUN, spans
    by_name = {row["span_name"]: row for row in spans}
    parent, child, linked = by_name["GET /api/items"], by_name["db.query"], by_name["warmup"]
    t0 = s.t0

    common = {
        "resource": s.resource,
        "scope_name": "e2e.tracer",
        "scope_version": "2.0.1",
        "scope": {"e2e.scope": "tracing"},
        # The Python SDK sends flags = HAS_IS_REMOTE (0x100) without the sampled bit; the README
        # keeps bits 8-9 in `flags` (span rows have no is_remote column).
        "sampled": None,
        "flags": 0x100,
        "trace_state": None,
    }
    assert_fields(
        parent,
        {
            **common,
            "trace_id": s.trace_id,
            "span_id": s.parent_span,
            "parent_span_id": None,
            "span_kind": "SERVER",
            "start_time": iso(t0),
            "end_time": iso(t0 + 1500 * MS),
            "timestamp": iso(t0 + 1500 * MS),
            "duration": "00:00:01.5000000",
            "status_code": "UNSET",
            "status_description": None,
            "attributes": {
                "http.method": "GET",
                "http.route": "/api/items",
                "retries": 3,
                "ratio": 0.25,
                "cached": False,
                "tags": ["a", "b"],
            },
            "events": None,
            "links": None,
        },
        "parent span",
    )
    assert_fields(
        child,
        {
            **common,
            "trace_id": s.trace_id,
            "span_id": s.child_span,
            "parent_span_id": s.parent_span,
            "span_kind": "INTERNAL",
            "start_time": iso(t0 + 100 * MS),
            "end_time": iso(t0 + 400 * MS),
            "timestamp": iso(t0 + 400 * MS),
            "duration": "00:00:00.3000000",
            "status_code": "ERROR",
            "status_description": "database timeout",
            "attributes": {"db.system": "postgresql"},
            "events": [
                {
                    "timestamp": iso(t0 + 150 * MS),
                    "name": "cache.miss",
                    "attributes": {"cache.key": "items:42", "attempt": 2},
                }
            ],
            # Link flags from the Python SDK: HAS_IS_REMOTE only, so sampled false, is_remote false.
            "links": [
                {
                    "trace_id": s.linked_trace,
                    "span_id": s.linked_span,
                    "sampled": False,
                    "is_remote": False,
                    "attributes": {"link.reason": "follows"},
                }
            ],
        },
        "child span",
    )
    assert_fields(
        linked,
        {
            **common,
            "span_id": s.linked_span,
            "trace_id": s.linked_trace,
            "span_kind": "CLIENT",
            "duration": "00:00:00.0400000",
            "parent_span_id": None,
        },
        "linked span",
    )
    for row in spans:
        for name in ("trace_id", "span_id"):
            value = row[name]
            assert value == value.lower() and all(c in "0123456789abcdef" for c in value), (
                f"{name} not lowercase hex: {value}"
            )
        assert len(row["trace_id"]) == 32 and len(row["span_id"]) == 16
        assert "ingest_time" in row and row["ingest_time"] >= row["timestamp"]
        # Log-only columns are absent on span rows.
        for absent in ("severity_text", "severity_number", "body", "metric_name", "observed_time"):
            assert row.get(absent) in (None, ""), f"{absent} on a span row: {row}"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_span_column_types_and_queries(trawl, sent, transport):
    s = sent[transport]
    types, rows = trawl.query_typed(
        f"default | where resource['e2e.transport'] == '{transport}' and span_id == '{s.child_span}' and isnotempty(span_name) "
        "| project timestamp, start_time, end_time, ingest_time, duration, trace_id, span_id, parent_span_id, span_name, "
        "span_kind, status_code, status_description, attributes, resource, events, links, scope_name, flags"
    )
    assert len(rows) == 1
    assert types == {
        "timestamp": "datetime", "start_time": "datetime", "end_time": "datetime", "ingest_time": "datetime",
        "duration": "timespan", "trace_id": "string", "span_id": "string", "parent_span_id": "string",
        "span_name": "string", "span_kind": "string", "status_code": "string", "status_description": "string",
        "attributes": "dynamic", "resource": "dynamic", "events": "dynamic", "links": "dynamic",
        "scope_name": "string", "flags": "long",
    }  # fmt: skip
    # Bracket access to dotted keys, nested access into events, text operators.
    _, rows = trawl.query(
        f"default | where resource['e2e.transport'] == '{transport}' and attributes['db.system'] == 'postgresql' and isnotempty(span_name) "
        "| project service = tostring(resource['service.name']), event = tostring(events[0].name), link_reason = tostring(links[0].attributes['link.reason'])"
    )
    assert rows == [[f"e2e-sdk-{transport}", "cache.miss", "follows"]]
    assert trawl.count(f"default | where resource['e2e.transport'] == '{transport}' and status_code == 'ERROR'") == 1
    assert (
        trawl.count(f"default | where resource['e2e.transport'] == '{transport}' and span_kind in ('SERVER', 'CLIENT')")
        == 2
    )
    assert (
        trawl.count(f"default | where resource['e2e.transport'] == '{transport}' and status_description has 'timeout'")
        == 1
    )


# --- logs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_log_rows(trawl, sent, transport):
    s = sent[transport]
    logs = rows_of(trawl, transport, "isnotempty(severity_text)")
    assert len(logs) == LOGS_PER_RUN, logs
    correlated = one([r for r in logs if r["attributes"].get("e2e.kind") == "correlated"], "correlated log")
    structured = one([r for r in logs if r["attributes"].get("e2e.kind") == "structured"], "structured log")
    common = {"resource": s.resource, "scope_name": "e2e.logger", "scope_version": "3.1.4", "scope": None}
    # The SDK sends the span's W3C trace flags as the record flags: sampled (bit 0) and, in this
    # SDK release, random-trace-id (bit 1), which stays in `flags`.
    assert s.child_trace_flags & 1, "the SDK did not sample the span"
    assert_fields(
        correlated,
        {
            **common,
            "timestamp": iso(s.t0 + 200 * MS),
            "severity_text": "ERROR",
            "severity_number": 17,
            "body": "query failed: timeout",
            "attributes": {"e2e.kind": "correlated", "db.system": "postgresql", "attempt": 2},
            "trace_id": s.trace_id,
            "span_id": s.child_span,
            "sampled": True,
            "flags": (s.child_trace_flags & ~1) or None,
        },
        "log in a span",
    )
    assert_fields(
        structured,
        {
            **common,
            "timestamp": iso(s.t0 + 300 * MS),
            "severity_text": "INFO",
            "severity_number": 9,
            "body": {"event": "startup", "port": 8080, "tags": ["x", "y"]},
            "attributes": {"e2e.kind": "structured"},
            "trace_id": None,
            "span_id": None,
            "sampled": None,
            "flags": None,
        },
        "structured log",
    )
    for row in logs:
        assert row.get("observed_time"), f"observed_time missing: {row}"
        assert row.get("ingest_time"), f"ingest_time missing: {row}"
        for absent in ("span_name", "span_kind", "status_code", "duration", "metric_name"):
            assert row.get(absent) in (None, ""), f"{absent} on a log row: {row}"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_log_joins_its_span(trawl, sent, transport):
    s = sent[transport]
    types, rows = trawl.query_typed(
        f"default | where resource['e2e.transport'] == '{transport}' and trace_id == '{s.trace_id}' and span_id == '{s.child_span}' "
        "| project span_name, severity_number, body, severity_text | sort by span_name asc"
    )
    assert types == {"span_name": "string", "severity_number": "long", "body": "dynamic", "severity_text": "string"}
    assert rows == [["", 17, "query failed: timeout", "ERROR"], ["db.query", None, None, ""]]
    assert trawl.count(f"default | where resource['e2e.transport'] == '{transport}' and body has 'timeout'") == 1
    assert (
        trawl.count(f"default | where resource['e2e.transport'] == '{transport}' and body['event'] == 'startup'") == 1
    )


# --- metrics ------------------------------------------------------------------------------------


def metric_rows(trawl, transport: str, name: str) -> list[dict[str, Any]]:
    return rows_of(trawl, transport, f"metric_name == '{name}'")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_metric_sum_rows(trawl, sent, transport):
    s = sent[transport]
    common = {"resource": s.resource, "scope_name": "e2e.meter", "scope_version": "4.0", "metric_type": "sum"}
    rows = metric_rows(trawl, transport, "e2e.requests")
    assert len(rows) == 2, rows
    by_route = {row["attributes"]["route"]: row for row in rows}
    for route, value in (("/a", 7), ("/b", 1)):
        assert_fields(
            by_route[route],
            {
                **common,
                "value": value,
                "aggregation_temporality": "CUMULATIVE",
                "is_monotonic": True,
                "metric_unit": "1",
                "metric_description": "Requests served",
                "attributes": {"route": route},
                "count": None,
                "bucket_counts": None,
            },
            f"counter point {route}",
        )
    queue = one(metric_rows(trawl, transport, "e2e.queue_depth"), "up-down counter point")
    assert_fields(
        queue,
        {
            **common,
            "value": 7,
            "aggregation_temporality": "CUMULATIVE",
            "is_monotonic": False,
            "metric_unit": "{item}",
            "metric_description": None,
            "attributes": None,
        },
        "up-down counter point",
    )
    delta = one(metric_rows(trawl, transport, "e2e.delta_requests"), "delta counter point")
    assert_fields(
        delta,
        {
            **common,
            "scope_name": "e2e.meter.delta",
            "scope_version": "4.1",
            "value": 7,
            "aggregation_temporality": "DELTA",
            "is_monotonic": True,
        },
        "delta counter point",
    )
    for row in rows + [queue, delta]:
        assert row.get("start_time") and row["start_time"] <= row["timestamp"], row
        assert row.get("ingest_time"), row


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_metric_gauge_rows(trawl, sent, transport):
    s = sent[transport]
    temperature = one(metric_rows(trawl, transport, "e2e.temperature"), "observable gauge point")
    assert_fields(
        temperature,
        {
            "metric_type": "gauge",
            "value": 21.5,
            "metric_unit": "Cel",
            "attributes": {"room": "lab"},
            "resource": s.resource,
            "scope_name": "e2e.meter",
            "aggregation_temporality": None,
            "is_monotonic": None,
        },
        "observable gauge point",
    )
    sync = one(metric_rows(trawl, transport, "e2e.sync_gauge"), "gauge point")
    assert_fields(
        sync,
        {"metric_type": "gauge", "value": 3, "attributes": {"kind": "sync"}, "aggregation_temporality": None},
        "gauge point",
    )
    assert temperature.get("timestamp") and temperature.get("ingest_time")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_metric_histogram_rows(trawl, sent, transport):
    s = sent[transport]
    latency = one(metric_rows(trawl, transport, "e2e.latency"), "histogram point")
    assert_fields(
        latency,
        {
            "metric_type": "histogram",
            "metric_unit": "ms",
            "metric_description": "Request latency",
            "count": 5,
            "sum": 5605.0,
            "min": 5.0,
            "max": 5000.0,
            "bucket_counts": [1, 2, 1, 1],
            "explicit_bounds": [10.0, 100.0, 1000.0],
            "aggregation_temporality": "CUMULATIVE",
            "attributes": {"route": "/a"},
            "resource": s.resource,
            "value": None,
            "is_monotonic": None,
        },
        "histogram point",
    )
    assert latency.get("start_time") and latency["start_time"] <= latency["timestamp"]
    delta = one(metric_rows(trawl, transport, "e2e.delta_latency"), "delta histogram point")
    assert_fields(
        delta,
        {
            "metric_type": "histogram",
            "metric_unit": "s",
            "count": 1,
            "sum": 1.5,
            "min": 1.5,
            "max": 1.5,
            "aggregation_temporality": "DELTA",
            "scope_name": "e2e.meter.delta",
        },
        "delta histogram point",
    )
    assert sum(delta["bucket_counts"]) == 1 and len(delta["bucket_counts"]) == len(delta["explicit_bounds"]) + 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_metric_exponential_histogram_rows(trawl, sent, transport):
    row = one(metric_rows(trawl, transport, "e2e.exp_latency"), "exponential histogram point")
    assert_fields(
        row,
        {
            "metric_type": "exponential_histogram",
            "count": 4,
            "sum": 15.0,
            "min": 1.0,
            "max": 8.0,
            "zero_count": 0,
            "aggregation_temporality": "CUMULATIVE",
            "value": None,
            "bucket_counts": None,
        },
        "exponential histogram point",
    )
    assert isinstance(row.get("scale"), int), row
    positive = row.get("positive")
    assert isinstance(positive, dict) and set(positive) >= {"offset", "bucket_counts"}, row
    assert sum(positive["bucket_counts"]) == 4, positive
    # Value v = 2^k lies in bucket ceil(k * 2^scale) - 1 = k * 2^scale - 1 (upper-inclusive buckets):
    # for 1, 2, 4, 8 the offset is -1 and the four counts sit 2^scale apart.
    scale = row["scale"]
    counts = positive["bucket_counts"]
    expected = [0] * (3 * 2**scale + 1)
    for k in range(4):
        expected[k * 2**scale] = 1
    # (The SDK sends its whole bucket array, trailing zeros included.)
    assert len(counts) >= len(expected) and not any(counts[len(expected) :]), f"scale {scale}: {positive}"
    assert (positive["offset"], counts[: len(expected)]) == (-1, expected), f"scale {scale}: {positive}"
    assert "negative" not in row or sum(row["negative"].get("bucket_counts", [])) == 0, row


def test_metric_column_types(trawl, sent):
    types, _ = trawl.query_typed(
        "default | where isnotempty(metric_name) | take 1 "
        "| project metric_name, metric_type, aggregation_temporality, is_monotonic, count, sum, min, max, bucket_counts, explicit_bounds, scale, zero_count, positive, start_time"
    )
    assert types == {
        "metric_name": "string", "metric_type": "string", "aggregation_temporality": "string", "is_monotonic": "bool",
        "count": "long", "sum": "real", "min": "real", "max": "real", "bucket_counts": "dynamic", "explicit_bounds": "dynamic",
        "scale": "long", "zero_count": "long", "positive": "dynamic", "start_time": "datetime",
    }  # fmt: skip


def test_each_transport_counted_separately(trawl, sent):
    _, rows = trawl.query(
        "default | where isnotempty(tostring(resource['e2e.transport'])) "
        "| summarize n = count(), services = dcount(tostring(resource['service.name'])) by t = tostring(resource['e2e.transport']) | sort by t asc"
    )
    per_run = SPANS_PER_RUN + LOGS_PER_RUN + POINTS_PER_RUN
    assert rows == [[t, per_run, 1] for t in sorted(TRANSPORTS)]
