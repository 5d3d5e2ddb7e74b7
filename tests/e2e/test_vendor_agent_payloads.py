"""The vendor-compatible intake fed what the Datadog Agent sends: protobuf series v2 (deflate),
columnar series v3 (zstd), distribution sketches and APM traces (gzip; classic and indexed
tracer payloads), with stubs generated at test time from the payload protos in
`crates/proto/proto/vendor/` (field numbers of the public agent-payload and trace protos).
A token routes metrics, spans and logs to three tables; each store is checked field by field
with KQL, and logs are joined to their spans."""

from __future__ import annotations

import gzip
import importlib
import json
import math
import os
import sys
import time
import uuid
import zlib
from pathlib import Path

import cramjam
import pytest
from grpc_tools import protoc

from trawl_e2e import TrawlServer, cli, free_ports, http_request, stop_all

PROTO_ROOT = Path(__file__).resolve().parents[2] / "crates" / "proto" / "proto"
GAMMA_LN = math.log1p(2 / 128)
BIAS = 1338
NOW = int(time.time()) - 60


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """(metrics v2 and sketches, metrics v3, traces, indexed traces) message modules."""
    out = tmp_path_factory.mktemp("vendor_stubs")
    protos = ["vendor/metrics.proto", "vendor/metrics_v3.proto", "vendor/trace/trace.proto", "vendor/trace/idx.proto"]
    assert protoc.main(["grpc_tools.protoc", f"-I{PROTO_ROOT}", f"--python_out={out}", *protos]) == 0
    sys.path.insert(0, str(out))
    try:
        return tuple(
            importlib.import_module(name)
            for name in ("vendor.metrics_pb2", "vendor.metrics_v3_pb2", "vendor.trace.trace_pb2", "vendor.trace.idx_pb2")
        )
    finally:
        sys.path.remove(str(out))


@pytest.fixture(scope="module")
def agent(trawl_bin, tmp_path_factory):
    """A server with the vendor intake switched on by its environment variable, and a key
    routing metrics, spans and logs apart."""
    (port,) = free_ports(1)
    server = TrawlServer(
        trawl_bin,
        tmp_path_factory.mktemp("agent"),
        name="agent",
        extra_args=["--vendor-bind", f"127.0.0.1:{port}"],
    )
    os.environ["INGEST_VENDOR_INTAKE"] = "true"
    try:
        server.start()
    finally:
        del os.environ["INGEST_VENDOR_INTAKE"]
    server.vendor_url = f"http://127.0.0.1:{port}"
    code, key, err = cli(
        server,
        trawl_bin,
        "token",
        "create",
        "--name",
        "agent",
        "--table",
        "vx_logs",
        "--metrics-table",
        "vx_metrics",
        "--traces-table",
        "vx_spans",
        token=server.admin_token,
    )
    assert code == 0, err
    server.agent_key = key.strip()
    code, listing, err = cli(server, trawl_bin, "token", "list", token=server.admin_token)
    assert code == 0 and "metrics=vx_metrics,traces=vx_spans" in listing, listing + err
    yield server
    stop_all([server])


def post(server, path: str, body: bytes, encoding: str | None, content_type: str = "application/x-protobuf"):
    headers = {"DD-API-KEY": server.agent_key, "Content-Type": content_type}
    if encoding:
        headers["Content-Encoding"] = encoding
    status, _, answer = http_request(server.vendor_url + path, body, headers, "POST")
    return status, answer


def test_series_v2_from_the_agent(agent, pb):
    metrics, _, _, _ = pb
    name = f"agent.v2.{uuid.uuid4().hex[:6]}"
    payload = metrics.MetricPayload()

    def series(suffix: str, kind: int, interval: int, value: float):
        s = payload.series.add(metric=f"{name}.{suffix}", type=kind, interval=interval, unit="request")
        s.resources.add(type="host", name="web-1")
        s.tags.extend(["env:prod", "team:a", "team:b"])
        s.points.add(value=value, timestamp=NOW)
        return s

    series("gauge", metrics.MetricPayload.GAUGE, 0, 3.5)
    series("count", metrics.MetricPayload.COUNT, 10, 7)
    series("rate", metrics.MetricPayload.RATE, 10, 2.5)
    series("rate_no_interval", metrics.MetricPayload.RATE, 0, 2.5)
    status, answer = post(agent, "/api/v2/series", zlib.compress(payload.SerializeToString()), "deflate")
    assert (status, answer) == (202, b"{}")

    kql = f'vx_metrics | where metric_name startswith "{name}."'
    assert agent.wait_for_count(kql, 4) == 4
    rows = {
        row["metric_name"].rsplit(".", 1)[1]: row
        for row in agent.query_dicts(
            f"{kql} | project metric_name, metric_type, value, unit = metric_unit, "
            "aggregation_temporality, is_monotonic, window = tolong((timestamp - start_time) / 1s), "
            "at = tolong(datetime_diff('second', timestamp, datetime(1970-01-01))), "
            "marker = tostring(attributes['vx.metric_type']), attributes, resource, scope_name, scope_version"
        )
    }
    gauge, count, rate, rate_gauge = rows["gauge"], rows["count"], rows["rate"], rows["rate_no_interval"]
    assert (gauge["metric_type"], gauge["value"], gauge.get("window"), gauge["at"]) == ("gauge", 3.5, None, NOW)
    assert gauge["attributes"] == {"env": "prod", "team": ["a", "b"]}
    assert gauge["resource"] == {"host.name": "web-1"}
    assert (gauge["scope_name"], gauge["scope_version"], gauge["unit"]) == ("vx", "v2", "request")
    assert (count["metric_type"], count["value"], count["aggregation_temporality"]) == ("sum", 7.0, "DELTA")
    assert (count["is_monotonic"], count["window"], count["marker"]) == (False, 10, "")
    assert (rate["metric_type"], rate["value"], rate["window"], rate["marker"]) == ("sum", 25.0, 10, "rate")
    assert (rate_gauge["metric_type"], rate_gauge["value"], rate_gauge["marker"]) == ("gauge", 2.5, "rate")

    status, answer = post(agent, "/api/v2/series", b'{"series": []}', None, "application/json")
    assert status == 400 and b"JSON" in answer


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def dictionary(strings: list[str]) -> bytes:
    return b"".join(varint(len(s.encode())) + s.encode() for s in strings)


def deltas(values: list[int]) -> list[int]:
    return [v - (values[i - 1] if i else 0) for i, v in enumerate(values)]


def series_v3_payload(v3, name: str, now: int):
    """The v3 payload the test sends (also a fuzz seed): a count with a unit (int values, two
    points) and a gauge (float64, one point), metric names under `name`, times near `now`."""
    payload = v3.Payload()
    payload.metadata.tags.append("region:eu")
    data = payload.metricData
    data.dictNameStr = dictionary([f"{name}.requests", f"{name}.load"])
    data.dictTagStr = dictionary(["env:prod", "team:a"])
    data.dictTagsets.extend([2, 1, 1])  # one set: [env:prod, team:a]
    data.dictResourceStr = dictionary(["host", "web-3"])
    data.dictResourceLen.append(1)
    data.dictResourceType.append(1)
    data.dictResourceName.append(2)
    data.dictUnitStr = dictionary(["request"])
    # A count with a unit (int values, two points) and a gauge (float64, one point).
    data.types.extend([0x1 | 0x10 | 0x200, 0x3 | 0x30])
    data.nameRefs.extend(deltas([1, 2]))
    data.tagsetRefs.extend(deltas([1, 1]))
    data.resourcesRefs.extend(deltas([1, 1]))
    data.sourceTypeNameRefs.extend([0, 0])
    data.originInfoRefs.extend([0, 0])
    data.unitRefs.append(1)
    data.intervals.extend([10, 0])
    data.numPoints.extend([2, 1])
    data.timestamps.extend(deltas([now - 10, now, now]))
    data.valsSint64.extend([4, 6])
    data.valsFloat64.append(0.75)
    return payload


def test_series_v3_maps_as_v2(agent, pb):
    _, v3, _, _ = pb
    name = f"agent.v3.{uuid.uuid4().hex[:6]}"
    payload = series_v3_payload(v3, name, NOW)
    body = bytes(cramjam.zstd.compress(payload.SerializeToString()))
    assert post(agent, "/api/intake/metrics/v3/series", body, "zstd") == (202, b"{}")

    kql = f'vx_metrics | where metric_name startswith "{name}."'
    assert agent.wait_for_count(kql, 3) == 3
    rows = agent.query_dicts(
        f"{kql} | order by metric_name desc, timestamp asc | project metric_name, metric_type, value, "
        "unit = metric_unit, window = tolong((timestamp - start_time) / 1s), attributes, resource, scope_version"
    )
    assert [(r["metric_type"], r["value"], r.get("window")) for r in rows] == [
        ("sum", 4.0, 10),
        ("sum", 6.0, 10),
        ("gauge", 0.75, None),
    ]
    assert rows[0]["unit"] == "request" and not rows[2].get("unit")
    assert all(r["attributes"] == {"env": "prod", "team": "a", "region": "eu"} for r in rows)
    assert all(r["resource"] == {"host.name": "web-3"} and r["scope_version"] == "v3" for r in rows)


def histogram_v3_payload(v3, name: str, now: int):
    """The Agent's OpenTelemetry histograms in a v3 payload: an explicit-bucket one (sint64
    values, min present) and an exponential one (float64 values, min and max present)."""
    payload = v3.Payload()
    data = payload.metricData
    data.dictNameStr = dictionary([f"{name}.latency", f"{name}.size"])
    data.types.extend([0x6 | 0x10, 0x7 | 0x30])
    data.nameRefs.extend(deltas([1, 2]))
    data.tagsetRefs.extend([0, 0])
    data.resourcesRefs.extend([0, 0])
    data.intervals.extend([0, 0])
    data.numPoints.extend([1, 1])
    data.timestamps.extend(deltas([now, now]))
    # explicit: sum 30, min 2, bounds [10, 20]; exponential header: scale 2, offsets 3 and -1
    data.valsSint64.extend([30, 2, 10, 20, 2, 3, -1])
    # exponential: sum 12.5, min -1.5, max 9.25, zero threshold 0
    data.valsFloat64.extend([12.5, -1.5, 9.25, 0.0])
    data.sketchNumBins.extend([3, 2, 1])
    data.sketchBinCnts.extend([1, 3, 1, 4, 5, 2])
    data.pointFlags.extend([1, 3])
    data.valsUint64.extend([5, 12, 1])
    return payload


def zlib_streams(raw: bytes, pieces: int) -> bytes:
    """`raw` cut in pieces, each compressed as a zlib stream of its own (as the Agent
    compresses a v3 payload column by column)."""
    size = max(1, len(raw) // pieces)
    return b"".join(zlib.compress(raw[i : i + size]) for i in range(0, len(raw), size))


def test_histograms_in_v3_payloads_compressed_piece_by_piece(agent, pb):
    _, v3, _, _ = pb
    name = f"agent.hist.{uuid.uuid4().hex[:6]}"
    raw = histogram_v3_payload(v3, name, NOW).SerializeToString()
    body = zlib_streams(raw, 5)
    assert post(agent, "/api/intake/metrics/v3/sketches", body, "deflate") == (202, b"{}")

    kql = f'vx_metrics | where metric_name startswith "{name}."'
    assert agent.wait_for_count(kql, 2) == 2
    rows = agent.query_dicts(
        f"{kql} | order by metric_name asc | project metric_name, metric_type, count, sum, min, max, "
        "bucket_counts, explicit_bounds, scale, zero_count, positive, negative, aggregation_temporality"
    )
    explicit, exponential = rows
    assert explicit["metric_type"] == "histogram"
    assert (explicit["count"], explicit["sum"], explicit["min"], explicit.get("max")) == (5, 30.0, 2.0, None)
    assert explicit["bucket_counts"] == [1, 3, 1] and explicit["explicit_bounds"] == [10.0, 20.0]
    assert exponential["metric_type"] == "exponential_histogram"
    assert (exponential["count"], exponential["zero_count"], exponential["scale"]) == (12, 1, 2)
    assert (exponential["min"], exponential["max"], exponential["sum"]) == (-1.5, 9.25, 12.5)
    assert exponential["positive"] == {"offset": 3, "bucket_counts": [4, 5]}
    assert exponential["negative"] == {"offset": -1, "bucket_counts": [2]}
    assert {r["aggregation_temporality"] for r in rows} == {"DELTA"}
    # The histogram functions read them as they read OTLP histograms: the median of
    # [1, 3, 1] over bounds [10, 20] lies in the second bucket, within min 2 and the bounds.
    p50 = agent.query_dicts(
        f"{kql} | summarize p = otel_histogram_percentile($raw, 50) by metric_type | order by metric_type asc"
    )
    assert len(p50) == 2
    explicit_p50 = next(r["p"] for r in p50 if r["metric_type"] == "histogram")
    assert 10.0 <= explicit_p50 <= 20.0


def agent_key(v: float) -> int:
    """The sketch key the Agent gives a value (round half to even, as Go's RoundToEven)."""
    if v == 0:
        return 0
    key = round(math.log(abs(v)) / GAMMA_LN) + BIAS
    return key if v > 0 else -key


def test_sketches_keep_exact_summaries_and_percentiles_within_bounds(agent, pb):
    metrics, _, _, _ = pb
    name = f"agent.sketch.{uuid.uuid4().hex[:6]}"
    values = sorted([0.0] * 5 + [1.0 * 1.01**i for i in range(1000)] + [-3.0] * 10)
    bins: dict[int, int] = {}
    for v in values:
        bins[agent_key(v)] = bins.get(agent_key(v), 0) + 1
    payload = metrics.SketchPayload()
    sketch = payload.sketches.add(metric=name, host="web-1", tags=["env:prod"])
    keys = sorted(bins)
    sketch.dogsketches.add(
        ts=NOW,
        cnt=len(values),
        min=values[0],
        max=values[-1],
        sum=sum(values),
        avg=sum(values) / len(values),
        k=keys,
        n=[bins[k] for k in keys],
    )
    assert post(agent, "/api/beta/sketches", gzip.compress(payload.SerializeToString()), "gzip") == (202, b"{}")

    kql = f'vx_metrics | where metric_name == "{name}"'
    assert agent.wait_for_count(kql, 1) == 1
    (row,) = agent.query_dicts(
        f"{kql} | project metric_type, count, sum, min, max, scale, zero_count, positive, negative, "
        "aggregation_temporality, scope_version, resource, attributes"
    )
    assert (row["metric_type"], row["aggregation_temporality"], row["scope_version"]) == (
        "exponential_histogram",
        "DELTA",
        "beta",
    )
    assert (row["count"], row["min"], row["max"], row["scale"], row["zero_count"]) == (len(values), -3.0, values[-1], 5, 5)
    assert row["sum"] == pytest.approx(sum(values), rel=1e-12)
    assert row["resource"] == {"host.name": "web-1"} and row["attributes"] == {"env": "prod"}
    assert sum(row["negative"]["bucket_counts"]) == 10
    positive = row["positive"]
    assert sum(positive["bucket_counts"]) == 1000

    # Percentiles read from the stored buckets (log midpoints) against the true values.
    positives = [v for v in values if v > 0]
    for q in (0.5, 0.9, 0.99):
        rank = math.ceil(q * len(positives))
        seen = 0
        for offset, count in enumerate(positive["bucket_counts"]):
            seen += count
            if seen >= rank:
                estimate = 2 ** ((positive["offset"] + offset + 0.5) / 32)
                break
        truth = positives[rank - 1]
        assert abs(estimate - truth) / truth < 0.033, (q, estimate, truth)


def classic_traces(trace_pb, marker: str):
    """Trace A (128-bit, high bits in `_dd.p.tid`): an erroring server root and a client child;
    trace B (64-bit): one span with a legacy JSON span link."""
    payload = trace_pb.AgentPayload(hostName="agent-host", env="staging")
    tracer = payload.tracerPayloads.add(
        languageName="python", tracerVersion="2.9.0", runtimeID="rt-1", hostname="web-1", appVersion="1.4.0"
    )
    chunk = tracer.chunks.add(priority=1)
    start = NOW * 10**9
    root = chunk.spans.add(
        service=f"{marker}-svc", name="flask.request", resource="GET /cart", traceID=1111, spanID=1,
        start=start, duration=5_000_000, error=1, type="web",
    )
    root.meta.update({
        "_dd.p.tid": "00000000000000ab", "span.kind": "server", "env": "prod", "version": "2.0",
        "component": "flask", "error.message": "cart is gone", "http.method": "GET",
    })
    root.metrics["http.status_code"] = 500.0
    event = root.spanEvents.add(time_unix_nano=start + 1000, name="exception")
    event.attributes["exception.message"].string_value = "boom"
    child = chunk.spans.add(
        service=f"{marker}-svc", name="requests.request", resource="", traceID=1111, spanID=2, parentID=1,
        start=start + 1000, duration=1_000_000,
    )
    child.meta.update({"_dd.p.tid": "00000000000000ab", "span.kind": "client", "otel.status_code": "Ok"})
    link = child.spanLinks.add(traceID=7, traceID_high=1, spanID=9, tracestate="dd=s:1", flags=(1 << 31) | 1)
    link.attributes["link.kind"] = "retry"
    other = tracer.chunks.add(priority=0)
    single = other.spans.add(
        service=f"{marker}-svc", name="worker.job", resource="nightly", traceID=2222, spanID=3,
        start=start, duration=2_000_000,
    )
    single.meta["_dd.span_links"] = '[{"trace_id": "00000000000000000000000000000457", "span_id": "0000000000000001"}]'
    return payload


def indexed_traces(idx_pb, trace_pb, marker: str):
    """Trace C in the indexed form: all 128 bits in the chunk, strings in a table."""
    strings = ["", f"{marker}-svc", "grpc.server", "/Checkout/Pay", "go", "1.60.0", "prod", "http.route", "/pay"]
    ref = strings.index
    payload = trace_pb.AgentPayload(hostName="agent-host")
    tracer = payload.idxTracerPayloads.add(languageName=ref("go"), tracerVersion=ref("1.60.0"), env=ref("prod"))
    tracer.strings.extend(strings)
    chunk = tracer.chunks.add(priority=2, traceID=((0xCD << 64) | 3333).to_bytes(16, "big"))
    span = chunk.spans.add(
        serviceRef=ref(f"{marker}-svc"), nameRef=ref("grpc.server"), resourceRef=ref("/Checkout/Pay"),
        spanID=4, start=NOW * 10**9, duration=3_000_000, kind=idx_pb.SPAN_KIND_SERVER,
    )
    span.attributes[ref("http.route")].stringValueRef = ref("/pay")
    return payload


def test_traces_from_the_agent_and_logs_joined_to_them(agent, pb):
    _, _, trace_pb, idx_pb = pb
    marker = f"t{uuid.uuid4().hex[:8]}"
    body = gzip.compress(classic_traces(trace_pb, marker).SerializeToString())
    assert post(agent, "/api/v0.2/traces", body, "gzip") == (202, b"{}")
    assert post(agent, "/api/v0.2/traces", indexed_traces(idx_pb, trace_pb, marker).SerializeToString(), None) == (
        202,
        b"{}",
    )
    kql = f'vx_spans | where resource["service.name"] == "{marker}-svc"'
    assert agent.wait_for_count(kql, 4) == 4
    spans = {
        row["op"]: row
        for row in agent.query_dicts(
            f"{kql} | project op = tostring(attributes['vx.operation_name']), trace_id, span_id, parent_span_id, "
            "span_name, span_kind, status_code, status_description, sampled, duration_ms = duration / 1ms, "
            "attributes, resource, scope_name, scope_version, links, events"
        )
    }
    root, child, single, indexed = (
        spans["flask.request"], spans["requests.request"], spans["worker.job"], spans["grpc.server"],
    )
    assert root["trace_id"] == f"{0xAB:016x}{1111:016x}" and root["span_id"] == f"{1:016x}"
    assert (root["span_name"], root["span_kind"], root["status_code"]) == ("GET /cart", "SERVER", "ERROR")
    assert (root["status_description"], root["sampled"], root["duration_ms"]) == ("cart is gone", True, 5.0)
    assert (root["scope_name"], root["scope_version"]) == ("flask", "2.9.0")
    assert root["attributes"]["vx.trace_id"] == "1111" and root["attributes"]["vx.span_id"] == "1"
    assert root["attributes"]["vx.span_type"] == "web" and root["attributes"]["http.status_code"] == 500
    assert root["resource"] == {
        "service.name": f"{marker}-svc",
        "deployment.environment.name": "prod",
        "service.version": "2.0",
        "host.name": "web-1",
        "service.instance.id": "rt-1",
        "telemetry.sdk.language": "python",
        "telemetry.sdk.version": "2.9.0",
        "telemetry.sdk.name": "vx",
    }
    assert [(e["name"], e["attributes"]) for e in root["events"]] == [("exception", {"exception.message": "boom"})]
    assert (child["span_name"], child["span_kind"], child["status_code"]) == ("requests.request", "CLIENT", "OK")
    assert child["parent_span_id"] == f"{1:016x}" and child["trace_id"] == root["trace_id"]
    assert child["links"] == [{
        "trace_id": f"{1:016x}{7:016x}", "span_id": f"{9:016x}", "trace_state": "dd=s:1",
        "sampled": True, "attributes": {"link.kind": "retry"},
    }]
    assert single["trace_id"] == f"{0:016x}{2222:016x}" and single.get("sampled") is None
    assert single["resource"]["deployment.environment.name"] == "staging"
    assert single["links"][0]["trace_id"] == f"{0x457:032x}" and single["scope_name"] == "vx"
    assert indexed["trace_id"] == f"{0xCD:016x}{3333:016x}" and indexed["span_kind"] == "SERVER"
    assert indexed["attributes"]["http.route"] == "/pay" and indexed["resource"]["telemetry.sdk.language"] == "go"
    assert indexed["resource"]["deployment.environment.name"] == "prod"

    # Logs carry decimal ids: the 64-bit trace joins on trace_id; the 128-bit one, whose logs
    # carry only the low 64 bits, joins on the decimal vx.trace_id attribute.
    logs = [
        {"message": f"{marker} nightly ran", "service": f"{marker}-svc", "dd.trace_id": "2222", "dd.span_id": "3"},
        {"message": f"{marker} cart gone", "service": f"{marker}-svc", "dd.trace_id": "1111", "dd.span_id": "1"},
    ]
    status, _, _ = http_request(
        agent.vendor_url + "/api/v2/logs",
        json.dumps(logs).encode(),
        {"DD-API-KEY": agent.agent_key, "Content-Type": "application/json"},
        "POST",
    )
    assert status == 202
    logs_kql = f'vx_logs | where body startswith "{marker}"'
    assert agent.wait_for_count(logs_kql, 2) == 2
    by_trace_id = agent.query_dicts(
        f"{logs_kql} | join kind=inner (vx_spans | project trace_id, span_id, op = tostring(attributes['vx.operation_name'])) "
        "on trace_id, span_id | project body, op"
    )
    assert by_trace_id == [{"body": f"{marker} nightly ran", "op": "worker.job"}]
    by_attribute = agent.query_dicts(
        f"{logs_kql} | extend tid = tostring(attributes['vx.trace_id']) "
        "| join kind=inner (vx_spans | where isempty(parent_span_id) "
        "| extend tid = tostring(attributes['vx.trace_id']), op = tostring(attributes['vx.operation_name'])) on tid "
        "| order by op asc | project body, op"
    )
    assert by_attribute == [
        {"body": f"{marker} cart gone", "op": "flask.request"},
        {"body": f"{marker} nightly ran", "op": "worker.job"},
    ]
