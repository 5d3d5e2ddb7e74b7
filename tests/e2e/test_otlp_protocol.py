"""OTLP wire handling without the SDK: hand-written OTLP/JSON, hand-built protobuf, gzip,
partial success, and the error answers (400, 413, 415, gRPC INVALID_ARGUMENT)."""

from __future__ import annotations

import gzip
import json
import time
import uuid

import grpc
import pytest
import requests
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from trawl_e2e import MS, TrawlServer, ingest_channel, iso, stop_all

PROTOBUF = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}


def now_us() -> int:
    return (time.time_ns() // 1000) * 1000


def kv(key: str, value) -> common_pb2.KeyValue:
    any_value = common_pb2.AnyValue()
    if isinstance(value, bool):
        any_value.bool_value = value
    elif isinstance(value, int):
        any_value.int_value = value
    elif isinstance(value, float):
        any_value.double_value = value
    else:
        any_value.string_value = value
    return common_pb2.KeyValue(key=key, value=any_value)


def log_request(marker: str, n: int = 1, body: str = "hello") -> logs_service_pb2.ExportLogsServiceRequest:
    t = now_us()
    records = [
        logs_pb2.LogRecord(
            time_unix_nano=t + i,
            severity_number=logs_pb2.SEVERITY_NUMBER_WARN,
            severity_text="WARN",
            body=common_pb2.AnyValue(string_value=f"{body} {i}"),
            attributes=[kv("i", i)],
        )
        for i in range(n)
    ]
    return logs_service_pb2.ExportLogsServiceRequest(
        resource_logs=[
            logs_pb2.ResourceLogs(
                resource=resource_pb2.Resource(
                    attributes=[kv("service.name", "e2e-protocol"), kv("e2e.marker", marker)]
                ),
                scope_logs=[
                    logs_pb2.ScopeLogs(scope=common_pb2.InstrumentationScope(name="hand"), log_records=records)
                ],
            )
        ]
    )


def marker_count(server, marker: str) -> int:
    return server.count(f"default | where resource['e2e.marker'] == '{marker}'")


# --- OTLP/JSON -------------------------------------------------------------------------------------


TRACE_ID_UPPER = "5B8EFFF798038103D269B633813FC60C"
SPAN_ID_UPPER = "EEE19B7EC3C1B174"
PARENT_ID = "0102030405060708"
LINK_TRACE = "0af7651916cd43dd8448eb211c80319c"
LINK_SPAN = "b7ad6b7169203331"


def json_payloads(marker: str, t: int) -> dict[str, dict]:
    """OTLP/JSON as the spec writes it: lowerCamelCase, int64 as strings, ids as hex, enums as integers."""
    resource = {
        "attributes": [
            {"key": "service.name", "value": {"stringValue": "e2e-json"}},
            {"key": "e2e.marker", "value": {"stringValue": marker}},
            {"key": "host.cpus", "value": {"intValue": "8"}},
        ],
        "droppedAttributesCount": 2,
    }
    scope = {
        "name": "json.scope",
        "version": "0.0.1",
        "attributes": [{"key": "scope.kind", "value": {"stringValue": "manual"}}],
    }
    logs = {
        "resourceLogs": [
            {
                "resource": resource,
                "scopeLogs": [
                    {
                        "scope": scope,
                        "logRecords": [
                            {
                                "timeUnixNano": str(t),
                                "observedTimeUnixNano": str(t + 5 * MS),
                                "severityNumber": 13,
                                "severityText": "WARN",
                                "body": {
                                    "kvlistValue": {
                                        "values": [
                                            {"key": "msg", "value": {"stringValue": "disk almost full"}},
                                            {"key": "free", "value": {"doubleValue": 0.05}},
                                            {
                                                "key": "mounts",
                                                "value": {
                                                    "arrayValue": {"values": [{"stringValue": "/"}, {"intValue": "2"}]}
                                                },
                                            },
                                        ]
                                    }
                                },
                                "attributes": [
                                    {"key": "seq", "value": {"intValue": "9007199254740993"}},
                                    {"key": "raw", "value": {"bytesValue": "AQID"}},
                                    {"key": "ok", "value": {"boolValue": True}},
                                ],
                                "droppedAttributesCount": 1,
                                "flags": 1,
                                "traceId": TRACE_ID_UPPER,
                                "spanId": SPAN_ID_UPPER,
                            },
                            {
                                # No time: the row falls back to observed_time.
                                "observedTimeUnixNano": str(t + 7 * MS),
                                "severityNumber": 5,
                                "body": {"stringValue": "plain"},
                            },
                        ],
                    }
                ],
            }
        ]
    }
    traces = {
        "resourceSpans": [
            {
                "resource": resource,
                "scopeSpans": [
                    {
                        "scope": scope,
                        "spans": [
                            {
                                "traceId": TRACE_ID_UPPER,
                                "spanId": SPAN_ID_UPPER,
                                "parentSpanId": PARENT_ID,
                                "traceState": "vendor=1",
                                "name": "json-span",
                                "kind": 3,
                                "startTimeUnixNano": str(t),
                                "endTimeUnixNano": str(t + 2 * MS + 500),
                                "attributes": [{"key": "peer.port", "value": {"intValue": "443"}}],
                                "droppedAttributesCount": 4,
                                "events": [
                                    {
                                        "timeUnixNano": str(t + MS),
                                        "name": "retry",
                                        "attributes": [{"key": "n", "value": {"intValue": "1"}}],
                                        "droppedAttributesCount": 3,
                                    }
                                ],
                                "droppedEventsCount": 5,
                                "links": [
                                    {
                                        "traceId": LINK_TRACE,
                                        "spanId": LINK_SPAN,
                                        "traceState": "k=v",
                                        "flags": 769,
                                        "attributes": [],
                                    }
                                ],
                                "status": {"code": 1, "message": ""},
                                "flags": 1,
                            }
                        ],
                    }
                ],
            }
        ]
    }
    metrics = {
        "resourceMetrics": [
            {
                "resource": resource,
                "scopeMetrics": [
                    {
                        "scope": scope,
                        "metrics": [
                            {
                                "name": "json.sum",
                                "unit": "By",
                                "description": "bytes",
                                "sum": {
                                    "aggregationTemporality": 1,
                                    "isMonotonic": True,
                                    "dataPoints": [
                                        {
                                            "startTimeUnixNano": str(t - 60_000 * MS),
                                            "timeUnixNano": str(t),
                                            "asInt": "12345678901",
                                            "attributes": [{"key": "dir", "value": {"stringValue": "rx"}}],
                                        }
                                    ],
                                },
                            },
                            {
                                "name": "json.gauge",
                                "gauge": {"dataPoints": [{"timeUnixNano": str(t), "asDouble": 0.75, "flags": 1}]},
                            },
                            {
                                "name": "json.histogram",
                                "histogram": {
                                    "aggregationTemporality": 2,
                                    "dataPoints": [
                                        {
                                            "timeUnixNano": str(t),
                                            "count": "6",
                                            "sum": 21.0,
                                            "min": 1.0,
                                            "max": 6.0,
                                            "bucketCounts": ["1", "2", "3"],
                                            "explicitBounds": [1.5, 3.5],
                                        }
                                    ],
                                },
                            },
                            {
                                "name": "json.exp",
                                "exponentialHistogram": {
                                    "aggregationTemporality": 1,
                                    "dataPoints": [
                                        {
                                            "timeUnixNano": str(t),
                                            "count": "5",
                                            "sum": 12.5,
                                            "scale": 1,
                                            "zeroCount": "1",
                                            "positive": {"offset": 2, "bucketCounts": ["1", "2"]},
                                            "negative": {"offset": -1, "bucketCounts": ["1"]},
                                        }
                                    ],
                                },
                            },
                            {
                                "name": "json.summary",
                                "summary": {
                                    "dataPoints": [
                                        {
                                            "timeUnixNano": str(t),
                                            "count": "10",
                                            "sum": 55.5,
                                            "quantileValues": [
                                                {"quantile": 0.5, "value": 5.0},
                                                {"quantile": 0.99, "value": 9.5},
                                            ],
                                        }
                                    ]
                                },
                            },
                        ],
                    }
                ],
            }
        ]
    }
    return {"logs": logs, "traces": traces, "metrics": metrics}


@pytest.fixture(scope="module")
def json_sent(trawl):
    marker = f"json-{uuid.uuid4().hex[:8]}"
    t = now_us() - 10_000 * MS
    answers = {}
    for signal, payload in json_payloads(marker, t).items():
        response = requests.post(
            f"{trawl.otlp_http_url}/v1/{signal}", data=json.dumps(payload), headers={**JSON, **trawl.ingest_auth}, timeout=10
        )
        answers[signal] = response
    trawl.wait_for_count(f"default | where resource['e2e.marker'] == '{marker}'", 2 + 1 + 5)
    return marker, t, answers


def test_json_answers(json_sent):
    _, _, answers = json_sent
    for signal, response in answers.items():
        assert response.status_code == 200, (signal, response.status_code, response.text)
        assert response.headers["content-type"].startswith("application/json"), response.headers
        body = response.json()
        assert isinstance(body, dict) and not body.get("partialSuccess"), body


def test_json_log_rows(trawl, json_sent):
    marker, t, _ = json_sent
    rows = trawl.query_dicts(
        f"default | where resource['e2e.marker'] == '{marker}' and isnotempty(severity_number) | sort by severity_number desc"
    )
    assert len(rows) == 2, rows
    first, second = rows
    expected_resource = {"service.name": "e2e-json", "e2e.marker": marker, "host.cpus": 8}
    assert first["timestamp"] == iso(t)
    assert first["observed_time"] == iso(t + 5 * MS)
    assert first["severity_number"] == 13 and first["severity_text"] == "WARN"
    assert first["body"] == {"msg": "disk almost full", "free": 0.05, "mounts": ["/", 2]}
    assert first["attributes"] == {"seq": 9007199254740993, "raw": "AQID", "ok": True}
    assert first["dropped_attributes_count"] == 1
    assert first["dropped_resource_attributes_count"] == 2
    assert first["trace_id"] == TRACE_ID_UPPER.lower() and first["span_id"] == SPAN_ID_UPPER.lower()
    assert first["sampled"] is True and "flags" not in first
    assert first["resource"] == expected_resource
    assert (
        first["scope"] == {"scope.kind": "manual"}
        and first["scope_name"] == "json.scope"
        and first["scope_version"] == "0.0.1"
    )
    # timeUnixNano missing: timestamp falls back to observed_time.
    assert second["timestamp"] == iso(t + 7 * MS) and second["observed_time"] == iso(t + 7 * MS)
    assert second["body"] == "plain" and second["severity_number"] == 5
    assert second.get("severity_text", "") == "" and second.get("trace_id", "") == ""
    # int64 beyond 2^53 kept exactly when read back as text.
    _, rows = trawl.query(
        f"default | where resource['e2e.marker'] == '{marker}' and attributes['seq'] == 9007199254740993 | project s = tostring(attributes['seq'])"
    )
    assert rows == [["9007199254740993"]]


def test_json_span_row(trawl, json_sent):
    marker, t, _ = json_sent
    row = trawl.query_dicts(f"default | where resource['e2e.marker'] == '{marker}' and isnotempty(span_name)")
    assert len(row) == 1, row
    row = row[0]
    expected = {
        "trace_id": TRACE_ID_UPPER.lower(),
        "span_id": SPAN_ID_UPPER.lower(),
        "parent_span_id": PARENT_ID,
        "trace_state": "vendor=1",
        "span_name": "json-span",
        "span_kind": "CLIENT",
        "start_time": iso(t),
        "end_time": iso(t + 2 * MS + 500),
        "timestamp": iso(t + 2 * MS + 500),
        "duration": "00:00:00.0020005",
        "status_code": "OK",
        "sampled": True,
        "attributes": {"peer.port": 443},
        "dropped_attributes_count": 4,
        "dropped_events_count": 5,
        "dropped_resource_attributes_count": 2,
        "events": [{"timestamp": iso(t + MS), "name": "retry", "attributes": {"n": 1}, "dropped_attributes_count": 3}],
        # flags 769 = sampled (bit 0) + HAS_IS_REMOTE (bit 8) + IS_REMOTE (bit 9): fully decomposed.
        "links": [
            {
                "trace_id": LINK_TRACE,
                "span_id": LINK_SPAN,
                "trace_state": "k=v",
                "sampled": True,
                "is_remote": True,
                "attributes": {},
            }
        ],
        "scope_name": "json.scope",
        "scope": {"scope.kind": "manual"},
    }
    problems = {k: (v, row.get(k)) for k, v in expected.items() if row.get(k) != v}
    assert not problems, f"(expected, found): {problems}\nrow: {row}"
    assert (
        row.get("status_description", "") == "" and row.get("flags") is None and row.get("dropped_links_count") is None
    )


def test_json_metric_rows(trawl, json_sent):
    marker, t, _ = json_sent
    rows = {
        r["metric_name"]: r
        for r in trawl.query_dicts(f"default | where resource['e2e.marker'] == '{marker}' and isnotempty(metric_name)")
    }
    assert set(rows) == {"json.sum", "json.gauge", "json.histogram", "json.exp", "json.summary"}
    s = rows["json.sum"]
    assert (s["metric_type"], s["value"], s["aggregation_temporality"], s["is_monotonic"]) == (
        "sum",
        12345678901,
        "DELTA",
        True,
    )
    assert (s["metric_unit"], s["metric_description"], s["attributes"]) == ("By", "bytes", {"dir": "rx"})
    assert s["start_time"] == iso(t - 60_000 * MS) and s["timestamp"] == iso(t)
    g = rows["json.gauge"]
    assert (g["metric_type"], g["value"], g["no_recorded_value"]) == ("gauge", 0.75, True)
    assert g.get("aggregation_temporality", "") == "" and "start_time" not in g and "is_monotonic" not in g
    h = rows["json.histogram"]
    assert (h["metric_type"], h["count"], h["sum"], h["min"], h["max"]) == ("histogram", 6, 21.0, 1.0, 6.0)
    assert (h["bucket_counts"], h["explicit_bounds"], h["aggregation_temporality"]) == (
        [1, 2, 3],
        [1.5, 3.5],
        "CUMULATIVE",
    )
    e = rows["json.exp"]
    assert (e["metric_type"], e["count"], e["sum"], e["scale"], e["zero_count"]) == (
        "exponential_histogram",
        5,
        12.5,
        1,
        1,
    )
    assert e["positive"] == {"offset": 2, "bucket_counts": [1, 2]} and e["negative"] == {
        "offset": -1,
        "bucket_counts": [1],
    }
    assert e["aggregation_temporality"] == "DELTA" and "min" not in e and "max" not in e
    q = rows["json.summary"]
    assert (q["metric_type"], q["count"], q["sum"]) == ("summary", 10, 55.5)
    assert q["quantile_values"] == [{"quantile": 0.5, "value": 5.0}, {"quantile": 0.99, "value": 9.5}]
    for row in rows.values():
        assert row["resource"]["service.name"] == "e2e-json" and row["scope_name"] == "json.scope"


def test_query_window_uses_row_timestamp(trawl, json_sent):
    marker, t, _ = json_sent
    kql = f"default | where resource['e2e.marker'] == '{marker}' and isnotempty(severity_number)"
    assert trawl.count(kql, since=iso(t - MS), until=iso(t + MS)) == 1
    assert trawl.count(kql, since=iso(t + MS)) == 1  # only the record whose timestamp is t + 7 ms
    assert trawl.count(kql, until=iso(t)) == 0  # until is exclusive
    assert trawl.count(kql, since="1h") == 2


def test_mixed_int_and_double_values_widen_to_real(trawl):
    """A column whose values are long in some rows and real in others widens to real
    (docs/architecture.md, "int -> long -> real"): the integer point reads back as the nearest
    double, and the column's type is real."""
    marker = f"int-exact-{uuid.uuid4().hex[:8]}"
    t = now_us()
    payload = {
        "resourceMetrics": [
            {
                "resource": {"attributes": [{"key": "e2e.marker", "value": {"stringValue": marker}}]},
                "scopeMetrics": [
                    {
                        "metrics": [
                            {
                                "name": "exact.int",
                                "sum": {
                                    "aggregationTemporality": 2,
                                    "isMonotonic": True,
                                    "dataPoints": [{"timeUnixNano": str(t), "asInt": "9007199254740993"}],
                                },
                            },
                            {
                                "name": "exact.double",
                                "gauge": {"dataPoints": [{"timeUnixNano": str(t), "asDouble": 0.5}]},
                            },
                        ]
                    }
                ],
            }
        ]
    }
    response = requests.post(f"{trawl.otlp_http_url}/v1/metrics", data=json.dumps(payload), headers={**JSON, **trawl.ingest_auth}, timeout=10)
    assert response.status_code == 200, response.text
    assert trawl.wait_for_count(f"default | where resource['e2e.marker'] == '{marker}'", 2) == 2
    types, rows = trawl.query_typed(
        f"default | where resource['e2e.marker'] == '{marker}' | sort by metric_name asc | project metric_name, value"
    )
    assert types["value"] == "real", types
    assert rows == [["exact.double", 0.5], ["exact.int", 9007199254740992.0]], rows


def test_zero_times_fall_back(trawl):
    marker = f"zero-times-{uuid.uuid4().hex[:8]}"
    before = time.time_ns()
    resource = {"attributes": [{"key": "e2e.marker", "value": {"stringValue": marker}}]}
    t = now_us()
    traces = {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [
        {"traceId": "11" * 16, "spanId": "22" * 8, "name": "no-end", "startTimeUnixNano": str(t)},
    ]}]}]}  # fmt: skip
    logs = {
        "resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": [{"body": {"stringValue": "no times"}}]}]}]
    }
    for signal, payload in (("traces", traces), ("logs", logs)):
        response = requests.post(
            f"{trawl.otlp_http_url}/v1/{signal}", data=json.dumps(payload), headers={**JSON, **trawl.ingest_auth}, timeout=10
        )
        assert response.status_code == 200, response.text
    rows = {
        r.get("span_name") or "log": r
        for r in trawl.query_dicts(f"default | where resource['e2e.marker'] == '{marker}'")
    }
    span, log = rows["no-end"], rows["log"]
    assert span["timestamp"] == iso(t) and span["start_time"] == iso(t)
    assert "end_time" not in span and "duration" not in span
    assert "observed_time" not in log and log["timestamp"] == log["ingest_time"] and log["timestamp"] >= iso(before)


# --- protobuf and gzip over HTTP -----------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["protobuf", "json"])
def test_http_gzip_bodies(trawl, fmt):
    marker = f"gzip-{fmt}-{uuid.uuid4().hex[:8]}"
    request = log_request(marker, n=50)
    if fmt == "protobuf":
        raw, headers = request.SerializeToString(), dict(PROTOBUF)
    else:
        raw, headers = json_format.MessageToJson(request).encode(), dict(JSON)
    response = requests.post(
        f"{trawl.otlp_http_url}/v1/logs",
        data=gzip.compress(raw),
        headers={**headers, "Content-Encoding": "gzip", **trawl.ingest_auth},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(headers["Content-Type"])
    assert trawl.wait_for_count(f"default | where resource['e2e.marker'] == '{marker}'", 50) == 50
    _, rows = trawl.query(
        f"default | where resource['e2e.marker'] == '{marker}' | summarize n = dcount(tostring(attributes['i'])), b = dcount(tostring(body))"
    )
    assert rows == [[50, 50]]


def test_protobuf_success_answer(trawl):
    marker = f"pb-{uuid.uuid4().hex[:8]}"
    response = requests.post(
        f"{trawl.otlp_http_url}/v1/logs", data=log_request(marker, 3).SerializeToString(), headers={**PROTOBUF, **trawl.ingest_auth}, timeout=10
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-protobuf"
    answer = logs_service_pb2.ExportLogsServiceResponse.FromString(response.content)
    assert not answer.HasField("partial_success"), answer
    # An acknowledged request is durable: its rows are visible (after at most a flush).
    assert trawl.wait_for_count(f"default | where resource['e2e.marker'] == '{marker}'", 3) == 3


@pytest.mark.parametrize("fmt", ["protobuf", "json"])
def test_partial_success(trawl, fmt):
    marker = f"partial-{fmt}-{uuid.uuid4().hex[:8]}"
    t = now_us()
    good = trace_pb2.Span(
        trace_id=bytes(range(1, 17)),
        span_id=bytes(range(1, 9)),
        name="good",
        start_time_unix_nano=t,
        end_time_unix_nano=t + MS,
    )
    bad = trace_pb2.Span(
        trace_id=b"\x01\x02\x03",
        span_id=bytes(range(1, 9)),
        name="bad-trace-id",
        start_time_unix_nano=t,
        end_time_unix_nano=t + MS,
    )
    request = trace_service_pb2.ExportTraceServiceRequest(
        resource_spans=[
            trace_pb2.ResourceSpans(
                resource=resource_pb2.Resource(attributes=[kv("e2e.marker", marker)]),
                scope_spans=[trace_pb2.ScopeSpans(spans=[good, bad])],
            )
        ]
    )
    if fmt == "protobuf":
        response = requests.post(
            f"{trawl.otlp_http_url}/v1/traces", data=request.SerializeToString(), headers={**PROTOBUF, **trawl.ingest_auth}, timeout=10
        )
        assert response.status_code == 200, response.content
        answer = trace_service_pb2.ExportTraceServiceResponse.FromString(response.content)
    else:
        payload = json_format.MessageToDict(request)
        # OTLP/JSON ids are hex, not base64 as in the generic protobuf JSON mapping.
        span_list = payload["resourceSpans"][0]["scopeSpans"][0]["spans"]
        for span, message in zip(span_list, [good, bad]):
            span["traceId"], span["spanId"] = message.trace_id.hex(), message.span_id.hex()
        response = requests.post(f"{trawl.otlp_http_url}/v1/traces", data=json.dumps(payload), headers={**JSON, **trawl.ingest_auth}, timeout=10)
        assert response.status_code == 200, response.text
        answer = json_format.Parse(
            response.text, trace_service_pb2.ExportTraceServiceResponse(), ignore_unknown_fields=False
        )
    assert answer.partial_success.rejected_spans == 1, answer
    assert answer.partial_success.error_message, answer
    assert trawl.wait_for_count(f"default | where resource['e2e.marker'] == '{marker}'", 1) == 1
    assert trawl.query(f"default | where resource['e2e.marker'] == '{marker}' | project span_name")[1] == [["good"]]


# --- errors --------------------------------------------------------------------------------------


def rpc_status(response) -> tuple[int, str]:
    """google.rpc.Status (code 1, message 2) from a protobuf or JSON error body."""
    if response.headers.get("content-type", "").startswith("application/json"):
        body = response.json()
        return body["code"], body["message"]
    from google.rpc import status_pb2

    status = status_pb2.Status.FromString(response.content)
    return status.code, status.message


@pytest.mark.parametrize("signal", ["logs", "traces", "metrics"])
def test_malformed_protobuf_is_400_and_server_keeps_serving(trawl, signal):
    before = trawl.count()
    for garbage in (b"\xff\xff\xff\xff\xff", b"\x0a\x05\x0a\x03", b"\x0a\xff\xff\xff\xff\x0f"):
        response = requests.post(f"{trawl.otlp_http_url}/v1/{signal}", data=garbage, headers={**PROTOBUF, **trawl.ingest_auth}, timeout=10)
        assert response.status_code == 400, (garbage, response.status_code, response.content)
        code, message = rpc_status(response)
        assert code == 3 and message, (code, message)  # INVALID_ARGUMENT
    # Still serving: a good request is stored and queries answer.
    marker = f"after-bad-{signal}-{uuid.uuid4().hex[:8]}"
    response = requests.post(
        f"{trawl.otlp_http_url}/v1/logs", data=log_request(marker).SerializeToString(), headers={**PROTOBUF, **trawl.ingest_auth}, timeout=10
    )
    assert response.status_code == 200
    assert trawl.wait_for_count(f"default | where resource['e2e.marker'] == '{marker}'", 1) == 1
    assert trawl.count() == before + 1


@pytest.mark.parametrize(
    "payload",
    [
        b"{not json",
        b"[]",
        b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"timeUnixNano": "abc"}]}]}]}',
        b'{"resourceLogs": 5}',
    ],
)
def test_malformed_json_is_400(trawl, payload):
    response = requests.post(f"{trawl.otlp_http_url}/v1/logs", data=payload, headers={**JSON, **trawl.ingest_auth}, timeout=10)
    assert response.status_code == 400, (payload, response.status_code, response.text)
    code, message = rpc_status(response)
    assert code == 3 and message


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "", "application/grpc"])
def test_wrong_content_type_is_415(trawl, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    body = log_request("never-stored").SerializeToString()
    response = requests.post(f"{trawl.otlp_http_url}/v1/logs", data=body, headers={**headers, **trawl.ingest_auth}, timeout=10)
    assert response.status_code == 415, (content_type, response.status_code, response.text)
    assert marker_count(trawl, "never-stored") == 0


def test_content_type_parameters_and_aliases(trawl):
    marker = f"ctype-{uuid.uuid4().hex[:8]}"
    for content_type in ("application/x-protobuf; charset=binary", "application/protobuf", "APPLICATION/X-PROTOBUF"):
        # A request of its own each time: the same body again would be one request sent twice
        # (stored once, see docs/operations.md "Retries and deduplication").
        body = log_request(marker, body=content_type).SerializeToString()
        response = requests.post(
            f"{trawl.otlp_http_url}/v1/logs", data=body, headers={"Content-Type": content_type, **trawl.ingest_auth}, timeout=10
        )
        assert response.status_code == 200, (content_type, response.status_code)
    payload = json_format.MessageToJson(log_request(marker))
    response = requests.post(
        f"{trawl.otlp_http_url}/v1/logs",
        data=payload,
        headers={"Content-Type": "application/json; charset=utf-8", **trawl.ingest_auth},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    assert trawl.wait_for_count(f"default | where resource['e2e.marker'] == '{marker}'", 4) == 4


def test_corrupt_gzip_is_400(trawl):
    response = requests.post(
        f"{trawl.otlp_http_url}/v1/logs",
        data=b"definitely not gzip",
        headers={**PROTOBUF, "Content-Encoding": "gzip", **trawl.ingest_auth},
        timeout=10,
    )
    assert response.status_code == 400, response.content


def test_unknown_path_and_method(trawl):
    assert (
        requests.post(f"{trawl.otlp_http_url}/v1/profiles-nope", data=b"", headers={**PROTOBUF, **trawl.ingest_auth}, timeout=10).status_code
        == 404
    )
    assert requests.get(f"{trawl.otlp_http_url}/v1/logs", timeout=10).status_code == 405


@pytest.fixture(scope="module")
def small_server(trawl_bin, tmp_path_factory):
    """A server with --max-body-bytes 4096."""
    server = TrawlServer(
        trawl_bin, tmp_path_factory.mktemp("small"), name="small", extra_args=["--max-body-bytes", "4096"]
    ).start()
    yield server
    stop_all([server])


def test_http_body_size_limit_is_413(small_server):
    marker = f"big-{uuid.uuid4().hex[:8]}"
    big = log_request(marker, n=200, body="x" * 100).SerializeToString()
    assert len(big) > 4096
    response = requests.post(f"{small_server.otlp_http_url}/v1/logs", data=big, headers={**PROTOBUF, **small_server.ingest_auth}, timeout=10)
    assert response.status_code == 413, response.status_code
    # A small gzip body that inflates beyond the limit is refused too.
    compressed = gzip.compress(big)
    assert len(compressed) < 4096
    response = requests.post(
        f"{small_server.otlp_http_url}/v1/logs",
        data=compressed,
        headers={**PROTOBUF, "Content-Encoding": "gzip", **small_server.ingest_auth},
        timeout=10,
    )
    assert response.status_code == 413, response.status_code
    response = requests.post(
        f"{small_server.otlp_http_url}/v1/logs",
        data=log_request(marker, n=2).SerializeToString(),
        headers={**PROTOBUF, **small_server.ingest_auth},
        timeout=10,
    )
    assert response.status_code == 200
    assert small_server.wait_for_count(f"default | where resource['e2e.marker'] == '{marker}'", 2) == 2


def test_grpc_oversized_request_is_a_permanent_error(small_server):
    """OTLP clients retry OUT_OF_RANGE (always retryable in the OTLP spec), so an oversized request
    must get a permanent code; the server maps its own PayloadTooLarge to RESOURCE_EXHAUSTED
    (retryable only with RetryInfo), see otlp_grpc.rs status_of."""
    marker = f"big-grpc-{uuid.uuid4().hex[:8]}"
    with ingest_channel(small_server) as channel:
        stub = logs_service_pb2_grpc.LogsServiceStub(channel)
        with pytest.raises(grpc.RpcError) as error:
            stub.Export(log_request(marker, n=200, body="x" * 100), timeout=10)
        stub.Export(log_request(marker, n=2), timeout=10)
    assert small_server.wait_for_count(f"default | where resource['e2e.marker'] == '{marker}'", 2) == 2
    assert error.value.code() in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INVALID_ARGUMENT), (
        error.value.code(),
        error.value.details(),
    )


# --- gRPC ----------------------------------------------------------------------------------------


def test_grpc_partial_success_and_gzip(trawl):
    marker = f"grpc-raw-{uuid.uuid4().hex[:8]}"
    t = now_us()
    request = trace_service_pb2.ExportTraceServiceRequest(
        resource_spans=[
            trace_pb2.ResourceSpans(
                resource=resource_pb2.Resource(attributes=[kv("e2e.marker", marker)]),
                scope_spans=[
                    trace_pb2.ScopeSpans(
                        spans=[
                            trace_pb2.Span(
                                trace_id=b"\x11" * 16,
                                span_id=b"\x22" * 8,
                                name="ok",
                                start_time_unix_nano=t,
                                end_time_unix_nano=t + 1,
                            ),
                            trace_pb2.Span(trace_id=b"\x11" * 16, span_id=b"\x22" * 3, name="short-span-id"),
                        ]
                    )
                ],
            )
        ]
    )
    with ingest_channel(trawl) as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        answer = stub.Export(request, timeout=10, compression=grpc.Compression.Gzip)
    assert answer.partial_success.rejected_spans == 1 and answer.partial_success.error_message, answer
    assert trawl.wait_for_count(f"default | where resource['e2e.marker'] == '{marker}'", 1) == 1
    _, rows = trawl.query(
        f"default | where resource['e2e.marker'] == '{marker}' | project span_name, trace_id, span_id, duration"
    )
    assert rows == [["ok", "11" * 16, "22" * 8, "00:00:00"]] or rows == [
        ["ok", "11" * 16, "22" * 8, "00:00:00.0000000"]
    ], rows


@pytest.mark.parametrize(
    "method",
    [
        "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
        "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
        "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
    ],
)
def test_grpc_malformed_request_is_invalid_argument(trawl, method):
    with ingest_channel(trawl) as channel:
        export = channel.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as error:
            export(b"\xff\xff\xff\xff\xff", timeout=10)
    # Still serving.
    marker = f"after-bad-grpc-{uuid.uuid4().hex[:8]}"
    with ingest_channel(trawl) as channel:
        logs_service_pb2_grpc.LogsServiceStub(channel).Export(log_request(marker), timeout=10)
    assert trawl.wait_for_count(f"default | where resource['e2e.marker'] == '{marker}'", 1) == 1
    # OTLP: a request that cannot be decoded is INVALID_ARGUMENT (permanent; otlp_grpc.rs says so too).
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (error.value.code(), error.value.details())


def test_grpc_unknown_method_is_unimplemented(trawl):
    with ingest_channel(trawl) as channel:
        call = channel.unary_unary(
            "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )
        with pytest.raises(grpc.RpcError) as error:
            call(b"", timeout=10)
    assert error.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_metrics_request_over_grpc_empty_is_ok(trawl):
    with ingest_channel(trawl) as channel:
        call = channel.unary_unary(
            "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
            request_serializer=metrics_service_pb2.ExportMetricsServiceRequest.SerializeToString,
            response_deserializer=metrics_service_pb2.ExportMetricsServiceResponse.FromString,
        )
        answer = call(metrics_service_pb2.ExportMetricsServiceRequest(), timeout=10)
    assert not answer.HasField("partial_success")


def test_unsupported_content_encoding_is_415(trawl):
    response = requests.post(
        f"{trawl.otlp_http_url}/v1/logs",
        data=log_request("br-encoding").SerializeToString(),
        headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "br", **trawl.ingest_auth},
        timeout=10,
    )
    assert response.status_code == 415, response.text
