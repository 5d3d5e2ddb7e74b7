#!/usr/bin/env python3
"""Seed corpora for the fuzz targets (fuzz/fuzz_targets/), made with the real client libraries
the end-to-end tests use (tests/e2e/requirements.txt).

Each file is one request body as the client puts it on the wire, decompressed unless the
target itself reads compressed bytes (the log-push protobuf body stays Snappy compressed).
HTTP clients send to a local capture endpoint on 127.0.0.1 that records the bodies; protobuf
payloads the tests build by hand are built the same way (the helpers are imported from the
tests where they are functions).

    ~/.cache/trawl-e2e-venv/bin/python fuzz/seeds/make_seeds.py [OUT_DIR]

OUT_DIR defaults to fuzz/corpus. Every target directory written is emptied of its old seeds
first (*.bin, *.json, *.kql).
"""

from __future__ import annotations

import base64
import datetime
import gzip
import http.server
import importlib
import json
import logging
import math
import os
import random
import re
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path
from urllib.parse import urljoin

import cramjam
import grpc_tools
import logging_loki
from azure.kusto.data import ClientRequestProperties, KustoClient, KustoConnectionStringBuilder
from azure.kusto.data.exceptions import KustoError
from datadog_api_client import ApiClient, Configuration
from datadog_api_client.v2.api.logs_api import LogsApi
from datadog_api_client.v2.model.content_encoding import ContentEncoding
from datadog_api_client.v2.model.http_log import HTTPLog
from datadog_api_client.v2.model.http_log_item import HTTPLogItem
from google.protobuf import json_format
from grpc_tools import protoc
from loki_logger_handler.loki_logger_handler import LokiLoggerHandler
from opentelemetry import trace as trace_api
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.metrics import Observation
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import (
    AlwaysOnExemplarFilter,
    Counter,
    Histogram,
    MeterProvider,
    ObservableCounter,
    ObservableUpDownCounter,
    UpDownCounter,
)
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader, MetricsData
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, ExponentialBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PROTO_ROOT = REPO / "crates" / "proto" / "proto"
E2E = REPO / "tests" / "e2e"

# Every client here talks to 127.0.0.1: never through a proxy from the environment.
for _name in ("no_proxy", "NO_PROXY"):
    os.environ[_name] = ",".join(filter(None, [os.environ.get(_name, ""), "127.0.0.1", "localhost"]))

# Fixed times keep most seeds identical from run to run (2023-11-14T22:13:20Z, as the tests use).
T0 = 1_700_000_000_000_000_000
NOW_S = T0 // 10**9
MS = 1_000_000
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
UINT64_MAX = 2**64 - 1
SEED_EXTENSIONS = (".bin", ".json", ".kql")
SIZE_LIMIT = 20 * 1024

# Text that exercises UTF-8 handling: accents, CJK, right-to-left, emoji with a joiner,
# a combining mark, a NUL and a line break.
UNICODE = "Grüße 日本語 שלום 👩\u200d💻 e\u0301 nul:\x00 nl:\n"
# The printable part, for query string literals.
UNICODE_WORDS = UNICODE.split(" nul:")[0]


# --- output ------------------------------------------------------------------------------------


class Corpus:
    """The output tree: one directory per target, emptied of old seeds when first written."""

    def __init__(self, root: Path):
        self.root = root
        self.counts: dict[str, int] = {}
        self.sizes: dict[str, int] = {}
        self.oversized: list[str] = []

    def add(self, target: str, name: str, data: bytes | str) -> None:
        directory = self.root / target
        if target not in self.counts:
            directory.mkdir(parents=True, exist_ok=True)
            for old in directory.iterdir():
                if old.is_file() and old.suffix in SEED_EXTENSIONS:
                    old.unlink()
            self.counts[target] = 0
            self.sizes[target] = 0
        if isinstance(data, str):
            data = data.encode("utf-8")
        path = directory / name
        if path.exists():
            raise SystemExit(f"two seeds named {target}/{name}")
        path.write_bytes(data)
        self.counts[target] += 1
        self.sizes[target] += len(data)
        if len(data) > SIZE_LIMIT:
            self.oversized.append(f"{target}/{name} ({len(data)} bytes)")


# --- capture endpoint --------------------------------------------------------------------------


class Capture:
    """An HTTP server on 127.0.0.1 that records every POST body (decoded from its
    Content-Encoding) and answers what each client expects to hear on success."""

    def __init__(self):
        self.bodies: list[tuple[str, bytes]] = []
        self.lock = threading.Lock()
        capture = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def read_body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        chunk = self.rfile.read(size)
                        self.rfile.readline()
                        if size == 0:
                            break
                        chunks.append(chunk)
                    body = b"".join(chunks)
                else:
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = self.headers.get("Content-Encoding", "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                elif encoding:
                    raise ValueError(f"unexpected Content-Encoding {encoding}")
                return body

            def answer(self, status: int, body: bytes = b"", content_type: str = "application/json"):
                self.send_response(status)
                if body or status != 204:
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self.answer(404, b"{}")

            def do_POST(self):
                body = self.read_body()
                with capture.lock:
                    capture.bodies.append((self.path, body))
                path = self.path
                if path.startswith(("/v1/logs", "/v1/traces", "/v1/metrics")):
                    self.answer(200, b"", "application/x-protobuf")
                elif path.startswith("/lgx/"):
                    self.answer(204)
                elif path.startswith("/api/"):
                    self.answer(202, b"{}")
                elif "/rest/" in path:
                    # The query clients only need their request recorded: an error answer ends the call.
                    error = {"error": {"code": "BadRequest", "message": "seed capture", "@permanent": True}}
                    self.answer(400, json.dumps(error).encode())
                else:
                    self.answer(404, b"{}")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Capture":
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def take(self, expected: int = 1) -> list[bytes]:
        """The bodies recorded since the last call; exactly `expected` of them."""
        with self.lock:
            bodies, self.bodies = self.bodies, []
        if len(bodies) != expected:
            raise RuntimeError(f"expected {expected} request bodies, captured {[p for p, _ in bodies]}")
        return [body for _, body in bodies]


# --- generated protobuf stubs -------------------------------------------------------------------


def generate_stubs(out: Path):
    """Python stubs of the repository's protos, generated as the e2e tests do; returns
    (vendor metrics, vendor metrics v3, vendor trace, vendor idx, log push, query) modules."""
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    protos = [
        "vendor/metrics.proto",
        "vendor/metrics_v3.proto",
        "vendor/trace/trace.proto",
        "vendor/trace/idx.proto",
        "logproto/push.proto",
        "trawl/query/v1/query.proto",
    ]
    args = ["grpc_tools.protoc", f"-I{PROTO_ROOT}", f"-I{well_known}", f"--python_out={out}", *protos]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    sys.path.insert(0, str(out))
    try:
        return tuple(
            importlib.import_module(name)
            for name in (
                "vendor.metrics_pb2",
                "vendor.metrics_v3_pb2",
                "vendor.trace.trace_pb2",
                "vendor.trace.idx_pb2",
                "logproto.push_pb2",
                "trawl.query.v1.query_pb2",
            )
        )
    finally:
        sys.path.remove(str(out))


def e2e_module(name: str):
    """A module of tests/e2e, for the payload helpers the tests define."""
    if str(E2E) not in sys.path:
        sys.path.insert(0, str(E2E))
    return importlib.import_module(name)


# --- logging records -------------------------------------------------------------------------


def fixed_record(name: str, level: int, msg, args=(), *, created: float, extra: dict | None = None, exc_info=None):
    """A logging record with fixed times, thread and process (so reruns match) and a
    made-up source location (not this file's path)."""
    record = logging.LogRecord(name, level, "app/payments.py", 42, msg, args, exc_info, func="pay")
    record.created, record.msecs, record.relativeCreated = created, (created % 1) * 1000, 1000.0
    record.thread, record.threadName, record.process, record.processName = 1, "MainThread", 1, "MainProcess"
    record.taskName = None
    for key, value in (extra or {}).items():
        setattr(record, key, value)
    return record


# --- OTLP: the OpenTelemetry SDK and its OTLP/HTTP exporters ------------------------------------

DELTA = {
    Counter: AggregationTemporality.DELTA,
    UpDownCounter: AggregationTemporality.CUMULATIVE,
    Histogram: AggregationTemporality.DELTA,
    ObservableCounter: AggregationTemporality.DELTA,
    ObservableUpDownCounter: AggregationTemporality.CUMULATIVE,
}


class SeededIds(IdGenerator):
    """Trace and span ids from a seeded generator (after any given ones), so reruns match."""

    def __init__(self, seed: int, trace_ids=(), span_ids=()):
        self.random = random.Random(seed)
        self.trace_ids, self.span_ids = list(trace_ids), list(span_ids)

    def generate_trace_id(self) -> int:
        return self.trace_ids.pop(0) if self.trace_ids else self.random.getrandbits(128) | 1

    def generate_span_id(self) -> int:
        return self.span_ids.pop(0) if self.span_ids else self.random.getrandbits(64) | 1


def service(name: str, **extra) -> Resource:
    return Resource({"service.name": name, "service.version": "1.2.3", **extra})


def tracing(resource: Resource, seed: int, **kwargs):
    """A tracer provider whose finished spans collect in memory: (provider, memory)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=resource, id_generator=kwargs.pop("ids", SeededIds(seed)), **kwargs)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def logging_provider(resource: Resource):
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=resource)
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    return provider, memory


def metering(resource: Resource, temporality=None, views=(), exemplars: bool = False):
    reader = InMemoryMetricReader(preferred_temporality=temporality)
    provider = MeterProvider(
        resource=resource,
        metric_readers=[reader],
        views=views,
        exemplar_filter=AlwaysOnExemplarFilter() if exemplars else None,
    )
    return provider, reader


def trace_seeds() -> dict[str, list]:
    """Finished spans per seed name."""
    seeds = {}

    # What the e2e SDK test sends: a SERVER parent, a child with an event, a link and an error.
    provider, memory = tracing(service("checkout", **{"deployment.environment.name": "e2e"}), seed=1)
    tracer = provider.get_tracer("e2e.tracer", "2.0.1", attributes={"e2e.scope": "tracing"})
    linked = tracer.start_span("warmup", kind=SpanKind.CLIENT, start_time=T0 - 50 * MS)
    linked.end(end_time=T0 - 10 * MS)
    parent = tracer.start_span(
        "GET /api/items",
        kind=SpanKind.SERVER,
        start_time=T0,
        attributes={"http.method": "GET", "retries": 3, "ratio": 0.25, "cached": False, "tags": ["a", "b"]},
    )
    child = tracer.start_span(
        "db.query",
        context=trace_api.set_span_in_context(parent),
        start_time=T0 + 100 * MS,
        attributes={"db.system": "postgresql", "ports": [5432, 5433], "weights": [0.5, 1.5], "flags": [True, False]},
        links=[Link(linked.get_span_context(), {"link.reason": "follows"})],
    )
    child.add_event("cache.miss", {"cache.key": "items:42", "attempt": 2}, timestamp=T0 + 150 * MS)
    child.set_status(Status(StatusCode.ERROR, "database timeout"))
    child.end(end_time=T0 + 400 * MS)
    parent.set_status(Status(StatusCode.OK))
    parent.end(end_time=T0 + 500 * MS)
    seeds["sdk_server_client_link_event"] = list(memory.get_finished_spans())

    # Two resources (one empty), several scopes (with and without version, schema, attributes),
    # every span kind, and a remote parent with a trace state.
    first, memory_a = tracing(service("frontend", **{"host.name": "web-1", "host.cpus": 8}), seed=2)
    second, memory_b = tracing(Resource({}), seed=3)
    remote = SpanContext(
        trace_id=0x0AF7651916CD43DD8448EB211C80319C,
        span_id=0xB7AD6B7169203331,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState([("vendor", "p:8f;r:1"), ("other", "1")]),
    )
    scopes = [
        first.get_tracer("http.server", "1.0"),
        first.get_tracer("queue", schema_url="https://opentelemetry.io/schemas/1.26.0", attributes={"queue.kind": "kafka"}),
        second.get_tracer(""),
    ]
    kinds = [SpanKind.SERVER, SpanKind.CLIENT, SpanKind.PRODUCER, SpanKind.CONSUMER, SpanKind.INTERNAL]
    for i, kind in enumerate(kinds):
        tracer = scopes[i % len(scopes)]
        context = trace_api.set_span_in_context(NonRecordingSpan(remote)) if i == 0 else None
        span = tracer.start_span(f"op-{kind.name.lower()}", context=context, kind=kind, start_time=T0 + i * MS)
        span.set_attribute("messaging.batch", i)
        span.end(end_time=T0 + (i + 3) * MS)
    seeds["sdk_two_resources_scopes_kinds"] = list(memory_a.get_finished_spans()) + list(memory_b.get_finished_spans())

    # Edge values: the largest ids, zero and reversed times, int64 limits, NaN and infinities,
    # empty strings, Unicode, a link to an unsampled context.
    ids = SeededIds(4, trace_ids=[2**128 - 1], span_ids=[UINT64_MAX, 1, 2])
    provider, memory = tracing(service(UNICODE), seed=4, ids=ids)
    tracer = provider.get_tracer(UNICODE, "0.0.0-α")
    root = tracer.start_span(
        "",
        start_time=0,
        attributes={
            "max": INT64_MAX,
            "min": INT64_MIN,
            "nan": math.nan,
            "inf": math.inf,
            "-inf": -math.inf,
            "-0": -0.0,
            "empty": "",
            "empty.list": [],
            UNICODE: UNICODE,
        },
    )
    unsampled = SpanContext(trace_id=1, span_id=1, is_remote=False, trace_flags=TraceFlags(TraceFlags.DEFAULT))
    reversed_span = tracer.start_span(
        UNICODE,
        context=trace_api.set_span_in_context(root),
        start_time=T0 + 10 * MS,
        links=[Link(unsampled), Link(remote, {"n": INT64_MIN})],
    )
    reversed_span.add_event("", timestamp=0)
    reversed_span.end(end_time=T0)
    root.end(end_time=0)
    seeds["sdk_edge_values"] = list(memory.get_finished_spans())

    # Span limits drop attributes, events and links (dropped counts), and a recorded exception.
    limits = SpanLimits(max_span_attributes=2, max_events=2, max_links=1, max_attribute_length=8)
    provider, memory = tracing(service("limited"), seed=5, span_limits=limits)
    tracer = provider.get_tracer("limited.tracer")
    span = tracer.start_span(
        "limited",
        start_time=T0,
        attributes={f"a{i}": "long value " * 3 for i in range(5)},
        links=[Link(remote), Link(remote), Link(remote)],
    )
    for i in range(4):
        span.add_event(f"e{i}", {"i": i}, timestamp=T0 + i)
    try:
        raise ValueError("boom")
    except ValueError as error:
        # No traceback: the stack trace would name this file's path.
        span.record_exception(error.with_traceback(None), timestamp=T0 + 5, escaped=True)
    span.end(end_time=T0 + 10 * MS)
    seeds["sdk_limits_dropped_counts"] = list(memory.get_finished_spans())

    # A batch of many small spans in one trace.
    provider, memory = tracing(service("batch"), seed=6)
    tracer = provider.get_tracer("batch")
    with tracer.start_as_current_span("root", start_time=T0, end_on_exit=False) as top:
        for i in range(60):
            tracer.start_span(f"step {i}", start_time=T0 + i * MS, attributes={"i": i}).end(end_time=T0 + (i + 1) * MS)
    top.end(end_time=T0 + 61 * MS)
    seeds["sdk_sixty_spans"] = list(memory.get_finished_spans())
    return seeds


def log_seeds() -> dict[str, list]:
    """Finished log records per seed name."""
    seeds = {}
    span_provider, _ = tracing(service("checkout"), seed=11)
    span = span_provider.get_tracer("t").start_span("db.query", start_time=T0)
    in_span = trace_api.set_span_in_context(span)

    # What the e2e SDK test sends: one record in a span, one structured without.
    provider, memory = logging_provider(service("checkout", **{"deployment.environment.name": "e2e"}))
    logger = provider.get_logger("e2e.logger", "3.1.4")
    logger.emit(
        timestamp=T0 + 200 * MS,
        observed_timestamp=T0 + 201 * MS,
        context=in_span,
        severity_number=SeverityNumber.ERROR,
        severity_text="ERROR",
        body="query failed: timeout",
        attributes={"e2e.kind": "correlated", "db.system": "postgresql", "attempt": 2},
    )
    logger.emit(
        timestamp=T0 + 300 * MS,
        observed_timestamp=T0 + 301 * MS,
        severity_number=SeverityNumber.INFO,
        severity_text="INFO",
        body={"event": "startup", "port": 8080, "tags": ["x", "y"]},
        attributes={"e2e.kind": "structured"},
    )
    seeds["sdk_correlated_and_structured"] = list(memory.get_finished_logs())

    # Every body type and severity, event names, nested attribute values.
    provider, memory = logging_provider(service("bodies"))
    logger = provider.get_logger("bodies", schema_url="https://opentelemetry.io/schemas/1.26.0")
    bodies = [
        "plain text",
        b"\x00\x01\xfe\xff",
        42,
        -1.5,
        math.nan,
        True,
        ["a", 1, 2.5, False, None, ["nested"]],
        {"msg": "disk almost full", "free": 0.05, "mounts": ["/", 2], "inner": {"deep": {"deeper": [1]}}},
        None,
    ]
    severities = list(SeverityNumber)
    for i, body in enumerate(bodies):
        severity = severities[i * 3 % len(severities)]
        logger.emit(
            timestamp=T0 + i * MS,
            observed_timestamp=T0 + i * MS,
            severity_number=severity,
            severity_text=severity.name,
            body=body,
            attributes={"i": i, "map": {"k": "v", "n": [1, 2]}, "bytes": b"\x01\x02\x03"},
            event_name=f"app.event.{i}" if i % 2 else None,
        )
    seeds["sdk_body_types_severities"] = list(memory.get_finished_logs())

    # Edge values: zero times, no severity, int64 limits, NaN and infinities, Unicode, an
    # exception, empty strings, an unnamed logger.
    provider, memory = logging_provider(Resource({}))
    logger = provider.get_logger("")
    logger.emit(timestamp=0, observed_timestamp=0, body="")
    logger.emit(
        timestamp=T0,
        observed_timestamp=0,
        severity_number=SeverityNumber.UNSPECIFIED,
        body=UNICODE,
        attributes={
            "max": INT64_MAX,
            "min": INT64_MIN,
            "nan": math.nan,
            "inf": math.inf,
            "-inf": -math.inf,
            "empty": "",
            UNICODE: [UNICODE],
        },
    )
    logger.emit(
        timestamp=T0 + 1,
        observed_timestamp=T0 + 2,
        severity_number=SeverityNumber.FATAL4,
        severity_text=UNICODE,
        body="failed",
        exception=ValueError("bad value"),
    )
    seeds["sdk_edge_values"] = list(memory.get_finished_logs())

    # Two resources with several scopes each.
    records = []
    for n, resource in enumerate([service("api", **{"k8s.pod.name": "api-0"}), service("worker")]):
        provider, memory = logging_provider(resource)
        for scope in ("http", "db", "cache"):
            logger = provider.get_logger(f"{resource.attributes['service.name']}.{scope}", "1.0", attributes={"scope.n": n})
            for i in range(2):
                logger.emit(
                    timestamp=T0 + i * MS,
                    observed_timestamp=T0 + i * MS,
                    context=in_span if i else None,
                    severity_number=SeverityNumber.WARN,
                    severity_text="WARN",
                    body=f"{scope} record {i}",
                )
        records.extend(memory.get_finished_logs())
    seeds["sdk_two_resources_six_scopes"] = records

    # The standard library logging bridge: a formatted message, extra attributes, an exception.
    provider, memory = logging_provider(service("bridge"))
    handler = LoggingHandler(logger_provider=provider)
    for level, msg, args, exc in [
        (logging.WARNING, "disk %s at %d%%", ("sda", 91), None),
        (logging.ERROR, "payment failed", (), (ValueError, ValueError("card declined"), None)),
        (logging.DEBUG, {"structured": True, "n": 1}, (), None),
    ]:
        record = fixed_record("app.payments", level, msg, args, created=NOW_S + 0.25, extra={"order_id": "o-17"}, exc_info=exc)
        handler.handle(record)
    seeds["logging_bridge"] = list(memory.get_finished_logs())
    span.end(end_time=T0 + MS)
    return seeds


def metric_seeds() -> dict[str, MetricsData]:
    """Collected metrics per seed name."""
    seeds = {}
    attrs = {"host": "web-1", "region": "eu"}

    # Every instrument, cumulative.
    buckets = View(instrument_name="latency", aggregation=ExplicitBucketHistogramAggregation([0, 5, 10, 100]))
    provider, reader = metering(service("metrics"), views=[buckets])
    meter = provider.get_meter("e2e.meter", "1.0", attributes={"meter.kind": "sdk"})
    meter.create_counter("requests", unit="1", description="requests served").add(5, attrs)
    meter.create_up_down_counter("queue.depth").add(-3, attrs)
    histogram = meter.create_histogram("latency", unit="ms")
    for value in (0.5, 3, 7, 12, 250):
        histogram.record(value, attrs)
    meter.create_gauge("temperature", unit="Cel").set(21.5, attrs)
    meter.create_observable_counter(
        "cpu.time", callbacks=[lambda _: [Observation(12.5, {"cpu": "0"}), Observation(3, {"cpu": "1"})]]
    )
    meter.create_observable_gauge("memory.usage", callbacks=[lambda _: [Observation(2**40)]], unit="By")
    meter.create_observable_up_down_counter("connections", callbacks=[lambda _: [Observation(-7, attrs)]])
    seeds["sdk_cumulative_all_instruments"] = reader.get_metrics_data()

    # Delta temporality: the second collection, whose start time is the first one's end.
    provider, reader = metering(service("metrics-delta"), temporality=DELTA)
    meter = provider.get_meter("delta.meter")
    counter, histogram = meter.create_counter("bytes", unit="By"), meter.create_histogram("size")
    counter.add(100, {"dir": "rx"})
    histogram.record(10)
    reader.get_metrics_data()
    counter.add(7, {"dir": "rx"})
    counter.add(9, {"dir": "tx"})
    histogram.record(1.5)
    histogram.record(1000, {"big": True})
    meter.create_observable_counter("polls", callbacks=[lambda _: [Observation(4)]])
    seeds["sdk_delta_sum_histogram"] = reader.get_metrics_data()

    # Exponential histograms: zero and positive values (the SDK refuses negative ones); a small
    # bucket limit forces a low scale; tiny and huge magnitudes.
    views = [
        View(instrument_name="exp.*", aggregation=ExponentialBucketHistogramAggregation(max_size=20)),
        View(instrument_name="wide", aggregation=ExponentialBucketHistogramAggregation(max_size=160, max_scale=20)),
    ]
    provider, reader = metering(service("metrics-exp"), views=views, temporality=DELTA)
    meter = provider.get_meter("exp.meter")
    exp = meter.create_histogram("exp.latency", unit="s")
    for value in [0.0, 0.0, 1e-300, 5e-324, 1e300, 3.14] + [1.01**i for i in range(50)]:
        exp.record(value, {"route": "/cart"})
    exp.record(2.0, {"route": "/pay"})
    wide = meter.create_histogram("wide")
    for value in (1.0, 1.0000001, 1.5, 2.0):
        wide.record(value)
    seeds["sdk_exponential_histogram"] = reader.get_metrics_data()

    # Edge values the SDK lets through (it drops NaN and infinite measurements): int64 limits,
    # the largest and smallest doubles, zero, empty and Unicode attributes, an empty resource.
    provider, reader = metering(Resource({}))
    meter = provider.get_meter("edge", UNICODE)
    meter.create_gauge("max.gauge").set(1.7976931348623157e308, {"sign": "+"})
    meter.create_observable_gauge("tiny.gauge", callbacks=[lambda _: [Observation(-5e-324), Observation(-0.0, {"zero": True})]])
    meter.create_counter("max.counter").add(INT64_MAX, {UNICODE: UNICODE})
    meter.create_up_down_counter("min.counter").add(INT64_MIN, {"empty": ""})
    meter.create_counter("zero.counter", description=UNICODE).add(0)
    meter.create_histogram("single.bucket", unit="{req}").record(0, {"list": [1, 2], "flag": False, "f": 1.5})
    seeds["sdk_edge_values"] = reader.get_metrics_data()

    # Two resources in one request, and exemplars that carry trace and span ids.
    span_provider, _ = tracing(service("exemplars"), seed=21)
    span = span_provider.get_tracer("t").start_span("request", start_time=T0)
    parts = []
    for name in ("api", "worker"):
        provider, reader = metering(service(name), exemplars=True)
        meter = provider.get_meter(f"{name}.meter", "2.0")
        counter = meter.create_counter(f"{name}.jobs")
        histogram = meter.create_histogram(f"{name}.duration", unit="ms")
        with trace_api.use_span(span, end_on_exit=False):
            counter.add(3, {"queue": "default"})
            histogram.record(42.0, {"queue": "default"})
        counter.add(1, {"queue": "slow"})
        parts.extend(reader.get_metrics_data().resource_metrics)
    span.end(end_time=T0 + MS)
    seeds["sdk_two_resources_exemplars"] = MetricsData(resource_metrics=parts)
    return seeds


def hand_built_metrics() -> ExportMetricsServiceRequest:
    """What the SDK cannot send, built from the OTLP messages as the protocol test builds its
    requests: NaN and infinite values, a summary, negative exponential buckets, a point flagged
    as having no recorded value, an unknown temporality."""
    m = metrics_pb2
    attrs = [KeyValue(key="k", value=AnyValue(string_value="v"))]
    metrics = [
        m.Metric(name="nan.gauge", gauge=m.Gauge(data_points=[
            m.NumberDataPoint(time_unix_nano=T0, as_double=math.nan, attributes=attrs),
            m.NumberDataPoint(time_unix_nano=T0, as_double=math.inf),
            m.NumberDataPoint(time_unix_nano=T0, as_double=-math.inf),
            m.NumberDataPoint(time_unix_nano=0, flags=1),
        ])),
        m.Metric(name="int.sum", unit="By", sum=m.Sum(aggregation_temporality=7, is_monotonic=True, data_points=[
            m.NumberDataPoint(start_time_unix_nano=T0, time_unix_nano=T0 - 1, as_int=INT64_MIN),
        ])),
        m.Metric(name="latency.summary", summary=m.Summary(data_points=[
            m.SummaryDataPoint(time_unix_nano=T0, count=10, sum=math.nan, quantile_values=[
                m.SummaryDataPoint.ValueAtQuantile(quantile=0.5, value=5.0),
                m.SummaryDataPoint.ValueAtQuantile(quantile=1.5, value=-math.inf),
            ]),
        ])),
        m.Metric(name="nan.histogram", histogram=m.Histogram(aggregation_temporality=2, data_points=[
            m.HistogramDataPoint(time_unix_nano=T0, count=3, sum=math.inf, min=math.nan, max=-0.0,
                                 bucket_counts=[1, 1, 1, 5], explicit_bounds=[math.inf, 1.0]),
        ])),
        m.Metric(name="negative.exp", exponential_histogram=m.ExponentialHistogram(aggregation_temporality=1, data_points=[
            m.ExponentialHistogramDataPoint(
                time_unix_nano=T0, count=UINT64_MAX, sum=-1e308, scale=-10, zero_count=1, zero_threshold=1e-9,
                positive=m.ExponentialHistogramDataPoint.Buckets(offset=-(2**31), bucket_counts=[1]),
                negative=m.ExponentialHistogramDataPoint.Buckets(offset=2**31 - 1, bucket_counts=[2, 0, 3]),
            ),
            m.ExponentialHistogramDataPoint(time_unix_nano=T0, scale=20),
        ])),
        m.Metric(name="empty.metric"),
    ]
    return ExportMetricsServiceRequest(resource_metrics=[
        m.ResourceMetrics(scope_metrics=[m.ScopeMetrics(metrics=metrics)]),
        m.ResourceMetrics(),
    ])


ID_KEYS = {"traceId", "spanId", "parentSpanId"}


def hex_ids(node) -> None:
    """OTLP/JSON writes trace and span ids as hex, not base64 as the protobuf JSON mapping does."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ID_KEYS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            hex_ids(item)


def otlp_json(message, *, enum_names: bool = False, indent: int | None = None) -> bytes:
    """OTLP/JSON of a request: lowerCamelCase keys, int64 as strings, hex ids, enums as integers
    (or as names when asked: the protobuf JSON mapping's default, which receivers accept too)."""
    payload = json_format.MessageToDict(message, use_integers_for_enums=not enum_names)
    hex_ids(payload)
    separators = None if indent else (",", ":")
    return json.dumps(payload, ensure_ascii=indent is not None, indent=indent, separators=separators).encode()


def otlp(corpus: Corpus, capture: Capture) -> None:
    plain = Compression.NoCompression
    exporters = {
        "traces": OTLPSpanExporter(endpoint=f"{capture.url}/v1/traces", compression=plain, timeout=10),
        "logs": OTLPLogExporter(endpoint=f"{capture.url}/v1/logs", compression=plain, timeout=10),
        "metrics": OTLPMetricExporter(endpoint=f"{capture.url}/v1/metrics", compression=plain, timeout=10),
    }
    messages = {"traces": ExportTraceServiceRequest, "logs": ExportLogsServiceRequest, "metrics": ExportMetricsServiceRequest}
    examples = e2e_module("test_otlp_protocol").json_payloads("seed", T0)
    for signal, seeds in (("traces", trace_seeds()), ("logs", log_seeds()), ("metrics", metric_seeds())):
        exporter = exporters[signal]
        first = None
        for name, batch in seeds.items():
            result = exporter.export(batch)
            if result.name != "SUCCESS":
                raise RuntimeError(f"{signal} {name}: export {result}")
            (body,) = capture.take()
            corpus.add(f"otlp_{signal}_protobuf", f"{name}.bin", body)
            request = messages[signal].FromString(body)
            corpus.add(f"otlp_{signal}_json", f"{name}.json", otlp_json(request))
            if first is None:
                first = request
        if signal == "metrics":
            request = hand_built_metrics()
            corpus.add("otlp_metrics_protobuf", "hand_nan_inf_summary.bin", request.SerializeToString())
            corpus.add("otlp_metrics_json", "hand_nan_inf_summary.json", otlp_json(request))
        # The hand-written OTLP/JSON of the protocol test (upper-case hex ids, summaries, ...),
        # and the first request pretty-printed with enum names.
        corpus.add(f"otlp_{signal}_json", "e2e_spec_example.json", json.dumps(examples[signal]))
        corpus.add(f"otlp_{signal}_json", "pretty_enum_names.json", otlp_json(first, enum_names=True, indent=2))
        exporter.shutdown()


# --- log push ----------------------------------------------------------------------------------


class FixedClock:
    """Pins time.time() while a client that stamps entries with it runs (only logging_loki's
    push timestamp reads it here)."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def __enter__(self):
        self.original = time.time
        time.time = lambda: self.seconds

    def __exit__(self, *exc):
        time.time = self.original


def logpush_json(corpus: Corpus, capture: Capture) -> None:
    url = f"{capture.url}/lgx/api/v1/push"
    target = "logpush_json"

    # python-logging-loki: one entry per request, its level and logger as labels, extra tags.
    handler = logging_loki.LokiHandler(
        url=url, tags={"service": "billing", "namespace": "prod"}, auth=("tenant", "t"), version="1"
    )
    with FixedClock(NOW_S + 0.5):
        tags = {"tags": {"disk": "sda", "bad-label!": "x"}}
        handler.handle(fixed_record("billing", logging.WARNING, "disk almost full", created=NOW_S, extra=tags))
        handler.handle(fixed_record("billing.ü", logging.ERROR, UNICODE, created=NOW_S))
    handler.close()
    first, second = capture.take(2)
    corpus.add(target, "python_logging_loki_tags.json", first)
    corpus.add(target, "python_logging_loki_unicode.json", second)

    # loki-logger-handler: records as JSON lines, several streams in one push, structured
    # metadata as a third element of a value; gzip on the wire (decoded here).
    def handler_of(**kwargs):
        # A flush interval long enough that only the explicit sends below post.
        return LokiLoggerHandler(url=url, timeout=3600, compressed=True, **kwargs)

    metadata = handler_of(
        labels={"job": "shop/api", "level": "error"},
        label_keys={"tenant"},
        enable_structured_loki_metadata=True,
        loki_metadata={"http_route": "/cart", "user": "u1"},
        loki_metadata_keys=["order_id"],
    )
    metadata.handle(fixed_record("shop", logging.ERROR, "payment failed", created=NOW_S, extra={"order_id": 17, "tenant": "a"}))
    extra = {"tenant": "b", "loki_metadata": {"trace_id": "abc", "n": 1}}
    metadata.handle(fixed_record("shop", logging.INFO, "paid", created=NOW_S + 1, extra=extra))
    metadata.handle(fixed_record("shop", logging.INFO, UNICODE, created=0.0, extra={"tenant": "b"}))
    metadata._send()  # what the handler's flush thread and exit hook call
    corpus.add(target, "loki_logger_handler_metadata_streams.json", capture.take()[0])

    # Without JSON formatting the handler puts the record object itself where the line goes.
    raw = handler_of(labels={"job": "raw"}, message_in_json_format=False)
    raw.handle(fixed_record("raw", logging.WARNING, "not a string line", created=NOW_S))
    raw._send()
    corpus.add(target, "loki_logger_handler_object_line.json", capture.take()[0])

    # The e2e test's push: labels, nanosecond timestamps as strings, one value with metadata.
    body = {
        "streams": [
            {
                "stream": {"job": "shop/checkout", "level": "warn", "pod": "p-1", "exporter": "x", "team": "a"},
                "values": [[str(T0), "one"], [str(T0 + 1), "two", {"http_method": "GET", "user_id": "7"}]],
            }
        ]
    }
    corpus.add(target, "e2e_labels_metadata.json", json.dumps(body))

    # Edge values: empty labels and lines, zero and largest timestamps, an empty metadata map,
    # an empty stream, an empty push.
    body = {
        "streams": [
            {"stream": {}, "values": [["0", ""], ["18446744073709551615", UNICODE, {}]]},
            {"stream": {"level": "", UNICODE: UNICODE}, "values": []},
        ]
    }
    corpus.add(target, "edge_values.json", json.dumps(body))
    corpus.add(target, "empty_push.json", json.dumps({"streams": []}))


def logpush_protobuf(corpus: Corpus, push_pb2) -> None:
    target = "logpush_protobuf"

    def snappy(request) -> bytes:
        return bytes(cramjam.snappy.compress_raw(request.SerializeToString()))

    # The e2e test's push.
    request = push_pb2.PushRequest()
    stream = request.streams.add()
    stream.labels = '{service_name="gateway", level="debug", k8s_cluster_name="c1", filename="/var/log/app.log"}'
    entry = stream.entries.add()
    entry.timestamp.FromNanoseconds(1_700_000_000_123_456_789)
    entry.line = "routed"
    meta = entry.structuredMetadata.add()
    meta.name, meta.value = "service_version", "1.2"
    corpus.add(target, "e2e_one_entry_metadata.bin", snappy(request))

    # Several streams and entries, a stream hash, escaped label values, Unicode.
    request = push_pb2.PushRequest()
    for s, level in enumerate(["info", "error", "warn"]):
        labels = f'{{job="shop/api", level="{level}", msg="say \\"hi\\"", idx="{s}"}}'
        stream = request.streams.add(labels=labels, hash=0x9E3779B97F4A7C15 + s)
        for i in range(4):
            entry = stream.entries.add(line=f"{level} line {i} {UNICODE if i == 3 else ''}")
            entry.timestamp.FromNanoseconds(T0 + s * 10**9 + i)
            if i % 2:
                entry.structuredMetadata.add(name="trace_id", value=f"{i:032x}")
                entry.structuredMetadata.add(name="", value="")
    corpus.add(target, "three_streams_metadata.bin", snappy(request))

    # Edge values: zero and the latest timestamps, negative seconds, no timestamp, empty
    # labels, a long repetitive line.
    request = push_pb2.PushRequest()
    stream = request.streams.add(labels="{}")
    stream.entries.add(line="")
    for seconds, nanos in [(0, 0), (253402300799, 999_999_999), (-62135596800, 0), (-1, 1)]:
        entry = stream.entries.add(line=f"t={seconds}")
        entry.timestamp.seconds, entry.timestamp.nanos = seconds, nanos
    request.streams.add(labels="").entries.add(line="x" * 8000).timestamp.FromNanoseconds(T0)
    request.streams.add(labels='{level="debug"}')
    corpus.add(target, "edge_values.bin", snappy(request))

    corpus.add(target, "empty_push.bin", snappy(push_pb2.PushRequest()))


# --- vendor intake ------------------------------------------------------------------------------


def vendor_logs(corpus: Corpus, capture: Capture) -> None:
    configuration = Configuration(host=capture.url)
    configuration.api_key["apiKeyAuth"] = "seed-key"

    def submit(items, encoding=None) -> bytes:
        with ApiClient(configuration) as api:
            kwargs = {"content_encoding": encoding} if encoding else {}
            LogsApi(api).submit_log(body=HTTPLog(items), **kwargs)
        return capture.take()[0]

    target = "vendor_logs"
    # The e2e test's entry, sent gzip-compressed as the test does (decoded here).
    item = HTTPLogItem(
        ddsource="python",
        ddtags="env:e2e,version:2.1,team:a,team:b",
        hostname="web-1",
        message="checkout failed",
        service="checkout",
        status="error",
    )
    corpus.add(target, "e2e_tags_status.json", submit([item], ContentEncoding.GZIP))

    # A message that is itself JSON, with trace ids and nested fields; epoch-millisecond times.
    inner = {"msg": "slow query", "level": "warn", "dd.trace_id": "2222", "dd.span_id": "3", "db": {"rows": 10, "ms": 1.5}}
    items = [
        HTTPLogItem(message=json.dumps(inner), service="db", hostname="db-1", timestamp=1_700_000_000_123),
        HTTPLogItem(message=json.dumps({"log": "from a sidecar", "timestamp": "2023-11-14T22:13:20.5Z"}), ddsource="nginx"),
        HTTPLogItem(message="[1, 2, 3]", status="info"),
    ]
    corpus.add(target, "json_messages_trace_ids.json", submit(items, ContentEncoding.DEFLATE))

    # Additional attributes of every JSON type, nested objects, other timestamp keys and forms.
    items = [
        HTTPLogItem(
            message="request done",
            status="warning",
            date="2023-11-14T22:13:20.123456789+02:00",
            http={"method": "GET", "status_code": 500, "url": {"path": "/cart", "query": None}},
            duration=1.5e9,
            retried=False,
            ids=[1, 2, 3],
            big=INT64_MAX,
            small=INT64_MIN,
            huge=2**64,
            contextMap={"dd.trace_id": "1111", "dd.span_id": "1"},
        ),
        HTTPLogItem(message="syslog", status="3", eventTime="1700000000000"),
        HTTPLogItem(message="numeric status", status=4, _timestamp=1700000000.5),
        HTTPLogItem(message="at", timestamp=datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)),
    ]
    corpus.add(target, "attribute_types_timestamps.json", submit(items))

    # The vendor-neutral tag and source keys, no message key but msg, empty and Unicode values,
    # unknown status, tags without values.
    items = [
        HTTPLogItem(message="", msg="fallback body", vxtags="solo,env:,:novalue,,k:v:w", vxsource="go", status="bogus"),
        HTTPLogItem(message=UNICODE, ddtags=f"name:{UNICODE}", hostname="", service=UNICODE, status="EMERG"),
        HTTPLogItem(message="no extras"),
    ]
    corpus.add(target, "neutral_keys_unicode_edges.json", submit(items))

    # Many entries in one request.
    levels = ["debug", "info", "notice", "warn", "error", "critical", "alert", "emergency", "ok", "trace"]
    items = [
        HTTPLogItem(message=f"entry {i}", status=levels[i % len(levels)], service=f"svc-{i % 3}", timestamp=1_700_000_000_000 + i)
        for i in range(40)
    ]
    corpus.add(target, "forty_entries.json", submit(items))


def vendor_metrics(corpus: Corpus, metrics, v3) -> None:
    agent = e2e_module("test_vendor_agent_payloads")
    dictionary, deltas, agent_key = agent.dictionary, agent.deltas, agent.agent_key

    # Series v2: the e2e test's payload.
    target = "vendor_series_v2"
    payload = metrics.MetricPayload()

    def series(name: str, kind: int, interval: int, value: float):
        s = payload.series.add(metric=f"agent.v2.{name}", type=kind, interval=interval, unit="request")
        s.resources.add(type="host", name="web-1")
        s.tags.extend(["env:prod", "team:a", "team:b"])
        s.points.add(value=value, timestamp=NOW_S)
        return s

    series("gauge", metrics.MetricPayload.GAUGE, 0, 3.5)
    series("count", metrics.MetricPayload.COUNT, 10, 7)
    series("rate", metrics.MetricPayload.RATE, 10, 2.5)
    series("rate_no_interval", metrics.MetricPayload.RATE, 0, 2.5)
    corpus.add(target, "e2e_four_types.bin", payload.SerializeToString())

    # Several resources, source type, origin metadata, tags without values, many points.
    payload = metrics.MetricPayload()
    s = payload.series.add(metric="system.load.1", type=metrics.MetricPayload.GAUGE, source_type_name="System")
    s.resources.add(type="host", name="web-2")
    s.resources.add(type="device", name="/dev/sda")
    s.resources.add(type="", name="")
    s.tags.extend(["solo", "env:", ":x", "k:v:w", "env:prod", "env:prod"])
    s.metadata.origin.origin_product, s.metadata.origin.origin_category, s.metadata.origin.origin_service = 10, 11, 12
    for i in range(30):
        s.points.add(value=i / 7, timestamp=NOW_S + i * 15)
    payload.series.add(metric="unspecified.type", type=metrics.MetricPayload.UNSPECIFIED).points.add(value=1, timestamp=NOW_S)
    corpus.add(target, "resources_origin_points.bin", payload.SerializeToString())

    # Edge values: NaN and infinities, zero and extreme timestamps and intervals, no points,
    # an empty name, Unicode, an unknown enum value.
    payload = metrics.MetricPayload()
    s = payload.series.add(metric=UNICODE, type=metrics.MetricPayload.COUNT, interval=INT64_MAX, unit=UNICODE)
    s.tags.append(f"{UNICODE}:{UNICODE}")
    for value, ts in [(math.nan, 0), (math.inf, INT64_MAX), (-math.inf, INT64_MIN), (-0.0, -1), (1e308, NOW_S)]:
        s.points.add(value=value, timestamp=ts)
    payload.series.add(metric="", type=metrics.MetricPayload.RATE, interval=-10).points.add(value=5, timestamp=NOW_S)
    payload.series.add(metric="no.points", type=metrics.MetricPayload.GAUGE)
    payload.series.add(metric="unknown.type", type=7).points.add(value=1, timestamp=NOW_S)
    corpus.add(target, "edge_values.bin", payload.SerializeToString())

    # Sketches: the e2e test's distribution (zeros, a thousand positive values, negatives).
    target = "vendor_sketches"

    def add_point(sketch, ts: int, values: list[float]) -> None:
        """One point binned as the Agent bins it, with its exact summary."""
        bins: dict[int, int] = {}
        for v in values:
            bins[agent_key(v)] = bins.get(agent_key(v), 0) + 1
        keys = sorted(bins)
        total = sum(values)
        sketch.dogsketches.add(
            ts=ts, cnt=len(values), min=min(values), max=max(values), sum=total, avg=total / len(values),
            k=keys, n=[bins[k] for k in keys],
        )

    payload = metrics.SketchPayload()
    sketch = payload.sketches.add(metric="agent.sketch", host="web-1", tags=["env:prod"])
    add_point(sketch, NOW_S, [0.0] * 5 + [1.0 * 1.01**i for i in range(1000)] + [-3.0] * 10)
    corpus.add(target, "e2e_distribution.bin", payload.SerializeToString())

    # Several sketches and points, metadata, a point with only zeros.
    payload = metrics.SketchPayload()
    for n in range(3):
        sketch = payload.sketches.add(metric=f"request.latency.{n}", host=f"web-{n}", tags=["env:prod", f"shard:{n}"])
        sketch.metadata.origin.origin_product = 10
        for p in range(3):
            add_point(sketch, NOW_S + 10 * p, [0.5 * (p + 1) * (i + 1) for i in range(20)])
    payload.sketches.add(metric="zeros", host="h").dogsketches.add(ts=NOW_S, cnt=3, k=[0], n=[3])
    corpus.add(target, "three_sketches_metadata.bin", payload.SerializeToString())

    # Edge values: no points, counts that disagree with the bins, extreme keys and counts,
    # NaN and infinite summaries, more keys than counts, zero and extreme times.
    payload = metrics.SketchPayload()
    payload.sketches.add(metric="no.points")
    sketch = payload.sketches.add(metric=UNICODE, host=UNICODE, tags=[UNICODE, ""])
    sketch.dogsketches.add(
        ts=0, cnt=INT64_MAX, min=math.nan, max=math.inf, sum=-math.inf, avg=math.nan,
        k=[-(2**31), 2**31 - 1, 0], n=[2**32 - 1, 1, 0],
    )
    sketch.dogsketches.add(ts=INT64_MIN, cnt=-1, min=1, max=0, k=[1, 2, 3], n=[1])
    sketch.dogsketches.add(ts=INT64_MAX, cnt=0, k=[5, 5, 4], n=[1, 1, 1])
    corpus.add(target, "edge_values.bin", payload.SerializeToString())

    # Series v3: the e2e test's payload.
    target = "vendor_series_v3"
    payload = agent.series_v3_payload(v3, "agent.v3", NOW_S)
    corpus.add(target, "e2e_count_and_gauge.bin", payload.SerializeToString())
    payload = agent.histogram_v3_payload(v3, "agent.hist", NOW_S)
    corpus.add(target, "e2e_histograms.bin", payload.SerializeToString())

    # Every metric and value type (a sketch series too), a tag set that includes an earlier
    # one, source types, origins, metadata resources.
    payload = v3.Payload()
    payload.metadata.tags.extend(["region:eu", "env:prod"])
    payload.metadata.resources.extend(["cluster", "c1", "odd-one-out"])
    data = payload.metricData
    data.dictNameStr = dictionary(["m.count", "m.rate", "m.gauge", "m.sketch", "m.zero"])
    data.dictTagStr = dictionary(["env:prod", "team:a", "shard:1", "solo"])
    # Set 1: [env:prod, team:a]; set 2: set 1 plus shard:1 (index -1 includes set 1).
    data.dictTagsets.extend([2, 1, 1, 2, -1, 4])
    data.dictResourceStr = dictionary(["host", "web-1", "device", "sda"])
    data.dictResourceLen.extend([1, 2])
    data.dictResourceType.extend([1, 1, 2])
    data.dictResourceName.extend([2, 2, 2])
    data.dictSourceTypeName = dictionary(["System", "kubelet"])
    data.dictOriginInfo.extend([10, 11, 12, 1, 2, 3])
    data.dictUnitStr = dictionary(["byte", "second"])
    data.types.extend([0x1 | 0x10 | 0x200, 0x2 | 0x20, 0x3 | 0x30 | 0x200, 0x4 | 0x30, 0x3 | 0x00])
    data.nameRefs.extend(deltas([1, 2, 3, 4, 5]))
    data.tagsetRefs.extend(deltas([1, 2, 0, 2, 1]))
    data.resourcesRefs.extend(deltas([1, 2, 2, 0, 1]))
    data.sourceTypeNameRefs.extend(deltas([1, 1, 2, 0, 0]))
    data.originInfoRefs.extend(deltas([1, 2, 0, 0, 1]))
    data.unitRefs.extend(deltas([1, 2]))
    data.intervals.extend([10, 15, 0, 10, 0])
    data.numPoints.extend([2, 2, 1, 1, 1])
    data.timestamps.extend(deltas([NOW_S - 10, NOW_S, NOW_S - 15, NOW_S, NOW_S, NOW_S, NOW_S]))
    data.valsSint64.extend([4, -6])
    data.valsFloat32.extend([0.5, 1.25])
    data.valsFloat64.append(0.75)
    # The sketch point: sum, min, max (float64), count (sint64), then its bins (keys delta-coded).
    data.valsFloat64.extend([10.0, 1.0, 4.0])
    data.valsSint64.append(4)
    data.sketchNumBins.append(3)
    data.sketchBinKeys.extend(deltas([agent_key(1.0), agent_key(2.0), agent_key(4.0)]))
    data.sketchBinCnts.extend([1, 2, 1])
    corpus.add(target, "all_types_tagset_include_origins.bin", payload.SerializeToString())

    # Edge values: NaN and infinities, the largest interval, negative time deltas, Unicode
    # names, columns left out (read as zeros), a series with no points.
    payload = v3.Payload()
    data = payload.metricData
    data.dictNameStr = dictionary([UNICODE, ""])
    data.types.extend([0x3 | 0x30, 0x1 | 0x10, 0x3 | 0x20])
    data.nameRefs.extend(deltas([1, 2, 1]))
    data.intervals.extend([UINT64_MAX, 0, 1])
    data.numPoints.extend([4, 0, 1])
    data.timestamps.extend([NOW_S, -NOW_S, INT64_MAX, INT64_MIN, 0])
    data.valsFloat64.extend([math.nan, math.inf, -math.inf, -0.0])
    data.valsFloat32.append(math.nan)
    corpus.add(target, "edge_values_sparse_columns.bin", payload.SerializeToString())


def vendor_traces(corpus: Corpus, trace_pb, idx_pb) -> None:
    agent = e2e_module("test_vendor_agent_payloads")
    agent.NOW = NOW_S  # the helpers read the module's start time; pin it so reruns match
    target = "vendor_traces"
    # Map fields serialize in a fixed order (deterministic=True) so reruns match; any order is valid.
    corpus.add(target, "e2e_classic.bin", agent.classic_traces(trace_pb, "seed").SerializeToString(deterministic=True))
    corpus.add(target, "e2e_indexed.bin", agent.indexed_traces(idx_pb, trace_pb, "seed").SerializeToString(deterministic=True))

    # Both shapes in one payload, with payload tags and an agent version.
    payload = agent.classic_traces(trace_pb, "both")
    payload.MergeFrom(agent.indexed_traces(idx_pb, trace_pb, "both"))
    payload.tags.update({"_dd.apm_mode": "edge", "env": "prod"})
    payload.agentVersion = "7.60.0"
    corpus.add(target, "classic_and_indexed.bin", payload.SerializeToString(deterministic=True))

    # Classic edge values: zero and largest ids, negative duration, meta_struct bytes, every
    # event attribute type, a dropped trace, an empty chunk, NaN metrics, Unicode.
    payload = trace_pb.AgentPayload(hostName=UNICODE)
    tracer = payload.tracerPayloads.add(languageName="", containerID="c" * 64, languageVersion="3.12")
    tracer.tags[UNICODE] = UNICODE
    tracer.chunks.add()
    chunk = tracer.chunks.add(priority=-1, origin="synthetics", droppedTrace=True)
    chunk.tags["_dd.p.dm"] = "-4"
    span = chunk.spans.add(
        service="", name="", resource=UNICODE, traceID=UINT64_MAX, spanID=UINT64_MAX, parentID=UINT64_MAX,
        start=INT64_MAX, duration=-1, error=-7,
    )
    span.meta.update({"_dd.p.tid": "ffffffffffffffff", "span.kind": "consumer", "error.message": ""})
    span.metrics.update({"nan": math.nan, "inf": math.inf, "_sampling_priority_v1": 2.0})
    span.meta_struct["appsec"] = b"\x82\xa1a\x01"
    event = span.spanEvents.add(time_unix_nano=UINT64_MAX, name="")
    value_type = trace_pb.AttributeAnyValue
    event.attributes["s"].CopyFrom(value_type(type=value_type.STRING_VALUE, string_value=UNICODE))
    event.attributes["b"].CopyFrom(value_type(type=value_type.BOOL_VALUE, bool_value=True))
    event.attributes["i"].CopyFrom(value_type(type=value_type.INT_VALUE, int_value=INT64_MIN))
    event.attributes["d"].CopyFrom(value_type(type=value_type.DOUBLE_VALUE, double_value=math.nan))
    array = event.attributes["a"]
    array.type = value_type.ARRAY_VALUE
    array.array_value.values.add(type=0, string_value="x")
    array.array_value.values.add(type=2, int_value=INT64_MAX)
    array.array_value.values.add(type=3, double_value=-math.inf)
    chunk.spans.add(service="zero", traceID=0, spanID=0, start=0, duration=0)
    bad = chunk.spans.add(service="bad-tid", traceID=1, spanID=2)
    bad.meta["_dd.p.tid"] = "not-hex"
    bad.meta["_dd.span_links"] = "[{not json"
    corpus.add(target, "classic_edge_values.bin", payload.SerializeToString(deterministic=True))

    # Indexed edge values: every AnyValue kind, links and events, string references past the
    # table, a short trace id.
    strings = ["", "svc", "op", "res", "key", "val", UNICODE, "link.kind"]
    payload = trace_pb.AgentPayload(hostName="agent-host")
    tracer = payload.idxTracerPayloads.add(languageName=2, env=99, hostname=6)
    tracer.strings.extend(strings)
    tracer.attributes.add(key=4, value=idx_pb.AnyValue(stringValueRef=5))
    chunk = tracer.chunks.add(priority=1, traceID=(2**128 - 1).to_bytes(16, "big"), origin=6, decisionMaker=3)
    chunk.attributes.add(key=4, value=idx_pb.AnyValue(intValue=INT64_MIN))
    span = chunk.spans.add(
        serviceRef=1, nameRef=2, resourceRef=3, spanID=UINT64_MAX, parentID=1, start=0, duration=UINT64_MAX,
        error=True, kind=idx_pb.SPAN_KIND_CONSUMER, envRef=6, versionRef=1000, componentRef=6, typeRef=2,
    )
    span.attributes[4].CopyFrom(idx_pb.AnyValue(boolValue=True))
    span.attributes[5].CopyFrom(idx_pb.AnyValue(doubleValue=math.nan))
    span.attributes[6].CopyFrom(idx_pb.AnyValue(bytesValue=b"\x00\xff"))
    nested = span.attributes[7]
    nested.arrayValue.values.add(intValue=1)
    nested.arrayValue.values.add(stringValueRef=6)
    nested.arrayValue.values.add().keyValueList.keyValues.add(key=4, value=idx_pb.AnyValue(stringValueRef=5))
    span.attributes[500].CopyFrom(idx_pb.AnyValue(stringValueRef=12345))
    link = span.spanLinks.add(traceID=bytes(16), spanID=7, tracestateRef=6, flagsRef=(1 << 31) | 1)
    link.attributes[7].CopyFrom(idx_pb.AnyValue(stringValueRef=5))
    event = span.spanEvents.add(time=T0, nameRef=6)
    event.attributes[4].CopyFrom(idx_pb.AnyValue(intValue=3))
    tracer.chunks.add(priority=0, traceID=b"\x01\x02\x03").spans.add(serviceRef=1, spanID=1)
    corpus.add(target, "indexed_edge_values.bin", payload.SerializeToString(deterministic=True))


# --- query requests -----------------------------------------------------------------------------


def grpc_execute_query(corpus: Corpus, query_pb2) -> None:
    """`ExecuteQueryRequest` messages as a gRPC client serializes them: query texts with
    relative, ISO, naive and malformed time windows and time zones."""
    requests = {
        "plain": dict(query='default | where body has "error" | take 10'),
        "relative_window": dict(
            query="default | summarize n = count() by bin(timestamp, 5m), severity_text | order by timestamp asc",
            since="1h",
            until="5m",
        ),
        "iso_window_timezone": dict(
            query="default | where timestamp between (datetime(2023-11-14) .. 1d) | project timestamp, body",
            since="2023-11-14T00:00:00Z",
            until="2023-11-15T00:00:00+02:00",
            timezone="Europe/Berlin",
        ),
        "naive_times_offset_zone": dict(
            query="let t = default | where isnotempty(span_name); t | join kind=inner (t) on trace_id | count",
            since="2023-11-14 08:00",
            until="2023-11-14T09:30:00.1234567",
            timezone="America/St_Johns",
        ),
        "render_and_functions": dict(
            query="range x from 1 to 100 step 1 | extend y = sin(x) * 1e10, s = strcat('a', tostring(x)) | render timechart",
            timezone="UTC",
        ),
        "unicode_and_comments": dict(
            query=f"// {UNICODE}\ndefault\n| where body == '{UNICODE_WORDS}' // trailing\n| extend ['col with space'] = 1",
            since="",
            until="",
            timezone="",
        ),
        "window_without_query": dict(since="2023-11-14T22:13:20.1234567Z", until="now", timezone="+05:30"),
        "bad_window_values": dict(query="print 1", since="yesterday", until="-5m", timezone="Not/AZone"),
    }
    for name, fields in requests.items():
        corpus.add("grpc_execute_query", f"{name}.bin", query_pb2.ExecuteQueryRequest(**fields).SerializeToString())


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:60] or "query"


def kql_parse(corpus: Corpus, public: int = 40, golden: int = 10) -> None:
    """KQL texts: queries of the public conformance corpus and of the engine's golden tests,
    chosen greedily for the most features not yet covered (an operator counts three times as
    much as a function or a word), shorter first on ties."""

    def pick(candidates: list[tuple[str, str, dict[str, int]]], n: int) -> list[tuple[str, str]]:
        chosen, seen = [], set()
        pool = sorted(candidates)
        while pool and len(chosen) < n:
            best = max(pool, key=lambda c: (sum(w for f, w in c[2].items() if f not in seen), -len(c[1])))
            pool.remove(best)
            chosen.append(best[:2])
            seen |= best[2].keys()
        return chosen

    target = "kql_parse"
    lines = (REPO / "tests/conformance/corpus/public.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    candidates = [
        (
            row["id"],
            row["query"],
            {**{f"fn:{f}": 1 for f in row.get("functions") or []}, **{f"op:{o}": 3 for o in row.get("operators") or []}},
        )
        for row in rows
        if len(row["query"].encode()) <= SIZE_LIMIT
    ]
    for name, query in pick(candidates, public):
        corpus.add(target, f"public_{slug(name)}.kql", query)

    words = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
    candidates = []
    for path in sorted((REPO / "crates/engine/tests/golden").glob("*.kql")):
        text = path.read_text()
        operators = re.findall(r"\|\s*([a-z][a-z0-9_-]*)", text)
        features = {**{w: 1 for w in words.findall(text)}, **{f"op:{o}": 3 for o in operators}}
        candidates.append((path.stem, text, features))
    for name, query in pick(candidates, golden):
        corpus.add(target, f"golden_{slug(name)}.kql", query)


def adx_request(corpus: Corpus, capture: Capture) -> None:
    def client(version: str, database: str | None = None) -> KustoClient:
        url = f"{capture.url}/{database}" if database else capture.url
        kusto = KustoClient(KustoConnectionStringBuilder.with_token_provider(url, lambda: "seed-token"))
        if version == "v1":
            kusto._query_endpoint = urljoin(kusto._kusto_cluster, "v1/rest/query")  # as the e2e test does
        return kusto

    def properties(options: dict, parameters: dict | None = None) -> ClientRequestProperties:
        props = ClientRequestProperties()
        for key, value in options.items():
            props.set_option(key, value)
        for key, value in (parameters or {}).items():
            props.set_parameter(key, value)
        props.client_request_id = "seed;1"
        return props

    query = 'default | where body has "error" | project timestamp, severity_text, body | order by timestamp asc'
    # (endpoint, seed name, database: None sends the client's default name, query, properties);
    # the client writes the properties as a JSON string, timedelta options in Python's str() form.
    cases = [
        ("v2", "v2_plain", "default", query, None),
        ("v2", "v2_progressive_servertimeout", "default", query,
         properties({"results_progressive_enabled": True, "servertimeout": datetime.timedelta(minutes=4)})),
        ("v2", "v2_datetimescope_timezone", "logs", "default | summarize count() by bin(timestamp, 1h)",
         properties({
             "query_datetimescope_from": "2023-11-14T00:00:00Z",
             "query_datetimescope_to": "1h",
             "query_timezone": "Europe/Berlin",
             "servertimeout": datetime.timedelta(hours=1, microseconds=5),
             "deferpartialqueryfailures": False,
         })),
        ("v2", "v2_parameters_norequesttimeout", None, "declare query_parameters(n:long); default | take n",
         properties({"norequesttimeout": True, "truncationmaxrecords": 10**6}, {"n": "5", "name": UNICODE})),
        ("v1", "v1_plain", "default", query, None),
        ("v1", "v1_datetimescope_unicode", "default", f"print s = '{UNICODE_WORDS}'",
         properties({
             "query_datetimescope_from": "2023-11-14 08:00",
             "query_datetimescope_to": "",
             "servertimeout": datetime.timedelta(days=1, seconds=1),
         })),
    ]
    for version, name, database, csl, props in cases:
        kusto = client(version, database)
        try:
            kusto.execute_query(database, csl, props)
        except KustoError:
            pass  # the capture endpoint answers with an error; only the request body matters
        finally:
            kusto.close()
        corpus.add("adx_request", f"{name}.json", capture.take()[0])


# --- main ----------------------------------------------------------------------------------------


def main() -> int:
    out = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else HERE.parent / "corpus"
    # The edge seeds trip the SDK's limits and name checks on purpose; failed exports still raise.
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
    corpus = Corpus(out)
    with tempfile.TemporaryDirectory(prefix="trawl-seed-stubs-") as stubs, Capture() as capture:
        metrics, v3, trace_pb, idx_pb, push_pb2, query_pb2 = generate_stubs(Path(stubs))
        otlp(corpus, capture)
        logpush_json(corpus, capture)
        logpush_protobuf(corpus, push_pb2)
        vendor_logs(corpus, capture)
        vendor_metrics(corpus, metrics, v3)
        vendor_traces(corpus, trace_pb, idx_pb)
        grpc_execute_query(corpus, query_pb2)
        kql_parse(corpus)
        adx_request(corpus, capture)
    total = 0
    for target in sorted(corpus.counts):
        total += corpus.sizes[target]
        print(f"{target:24} {corpus.counts[target]:3} seeds {corpus.sizes[target]:8} bytes")
    print(f"{'total':24} {sum(corpus.counts.values()):3} seeds {total:8} bytes in {out}")
    for line in corpus.oversized:
        print(f"warning: over {SIZE_LIMIT} bytes: {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
