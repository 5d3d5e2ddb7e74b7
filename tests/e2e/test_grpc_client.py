"""`QueryService.ExecuteQuery` through `grpcio`, with stubs generated from the repository's
`.proto` at test time by `grpcio-tools`, as a user would: frame order, batch sizes and the
iteration rules on a result of more than 1,000 rows, errors, metadata and cancellation. The
channel goes to the query port, the one the HTTP routes use too."""

from __future__ import annotations

import importlib
import json
import sys
import uuid
from pathlib import Path

import grpc
import pytest
from grpc_tools import protoc

from trawl_e2e import post_otlp_json_logs

REPO = Path(__file__).resolve().parents[2]
PROTO_ROOT = REPO / "crates" / "proto" / "proto"
MARKER = "grpc-client-e2e"
ROWS = 1_500
T0 = 1_700_000_000_000_000_000
MESSAGE_LIMIT = 4 * 1024 * 1024


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """The generated modules: (messages, service stubs)."""
    out = tmp_path_factory.mktemp("stubs")
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        "trawl/query/v1/query.proto",
    ]
    assert protoc.main(args) == 0, "protoc failed on query.proto"
    sys.path.insert(0, str(out))
    try:
        return (
            importlib.import_module("trawl.query.v1.query_pb2"),
            importlib.import_module("trawl.query.v1.query_pb2_grpc"),
        )
    finally:
        sys.path.remove(str(out))


@pytest.fixture(scope="module")
def loaded(trawl):
    """ROWS log records, one per millisecond, in table `default`."""
    records = [
        {
            "timeUnixNano": str(T0 + i * 1_000_000),
            "severityText": "ERROR" if i % 10 == 0 else "INFO",
            "body": {"stringValue": f"{MARKER} {i:05d}"},
            "attributes": [{"key": "n", "value": {"intValue": str(i)}}],
        }
        for i in range(ROWS)
    ]
    status, answer = post_otlp_json_logs(trawl, records, service="grpc")
    assert status == 200, answer
    trawl.wait_for_count(f'default | where body has "{MARKER}"', ROWS)
    return trawl


@pytest.fixture
def stub(loaded, pb):
    messages, services = pb
    # Through the gateway, which forwards the stub's method path as it is.
    channel = grpc.insecure_channel(loaded.gateway_endpoint)
    stub = services.QueryServiceStub(channel)
    # Signed in with the bootstrap admin token; x-svc-* metadata from a caller is dropped.
    stub.metadata = [
        ("authorization", f"Bearer {loaded.admin_token}"),
        ("x-svc-username", "not-me"),
    ]
    yield stub
    channel.close()


def run(pb, stub, query: str, timeout: float = 60.0) -> list:
    messages, _ = pb
    request = messages.ExecuteQueryRequest(query=query)
    metadata = stub.metadata
    return list(stub.ExecuteQuery(request, metadata=metadata, timeout=timeout))


def kinds(frames) -> list[str]:
    """Payload kinds in order, progress left out."""
    return [f.WhichOneof("payload") for f in frames if f.WhichOneof("payload") != "progress"]


def test_a_large_result_arrives_in_ordered_batches_of_one_iteration(pb, stub):
    frames = run(pb, stub, f'default | where body has "{MARKER}" | project timestamp, severity_text, body, n = toint(attributes.n) | order by timestamp asc')
    order = kinds(frames)
    assert order[:2] == ["schema", "metadata"]
    assert order[-1] == "done"
    assert set(order[2:-1]) == {"batch"}
    assert len({f.request_id for f in frames}) == 1

    schema = next(f.schema for f in frames if f.WhichOneof("payload") == "schema")
    messages, _ = pb
    assert schema.name == "PrimaryResult"
    assert [c.name for c in schema.columns] == ["timestamp", "severity_text", "body", "n"]
    assert [c.type for c in schema.columns] == [
        messages.COLUMN_TYPE_DATETIME,
        messages.COLUMN_TYPE_STRING,
        messages.COLUMN_TYPE_DYNAMIC,
        messages.COLUMN_TYPE_INT32,
    ]

    batches = [f.batch for f in frames if f.WhichOneof("payload") == "batch"]
    assert all(len(b.rows) <= 100 for b in batches)
    assert all(b.table_name == "PrimaryResult" for b in batches)
    assert all(f.ByteSize() < MESSAGE_LIMIT for f in frames)
    iterations = {b.result_iteration_id for b in batches}
    assert len(iterations) == 1
    uuid.UUID(iterations.pop())
    assert [b.is_iteration_complete for b in batches] == [False] * (len(batches) - 1) + [True]

    rows = [row for b in batches for row in b.rows]
    assert len(rows) == ROWS
    first, last = rows[0].values, rows[-1].values
    assert first[0].WhichOneof("kind") == "datetime_ticks"
    assert first[0].datetime_ticks == T0 // 100
    assert last[0].datetime_ticks == (T0 + (ROWS - 1) * 1_000_000) // 100
    assert first[1].string_value == "ERROR"
    assert first[2].string_value == f"{MARKER} 00000"
    assert [r.values[3].int_value for r in rows] == list(range(ROWS))

    progress = [f.progress for f in frames if f.WhichOneof("payload") == "progress"]
    assert progress, "progress frames are sent"
    final = progress[-1]
    assert final.rows_processed >= ROWS
    assert final.chunks_total >= 1 and final.chunks_scanned >= 1
    assert final.query_time_nanos > 0
    assert not final.HasField("planning_progress")


def test_several_statements_give_extra_tables_in_order(pb, stub):
    frames = run(pb, stub, f'default | where body has "{MARKER}" | count; default | where body has "{MARKER}" | take 3')
    schemas = [f.schema.name for f in frames if f.WhichOneof("payload") == "schema"]
    assert schemas == ["PrimaryResult", "ExtraTable_0"]
    batches = [f.batch for f in frames if f.WhichOneof("payload") == "batch"]
    assert [b.table_name for b in batches] == ["PrimaryResult", "ExtraTable_0"]
    assert batches[0].rows[0].values[0].long_value == ROWS
    assert len(batches[1].rows) == 3
    assert [b.is_iteration_complete for b in batches] == [False, True]
    assert batches[0].result_iteration_id == batches[1].result_iteration_id


def test_fork_names_its_tables_by_branch_and_its_warnings_carry_the_branch(pb, stub):
    # Source 1, where 2, fork 3: the first branch is unnamed, the second named.
    frames = run(
        pb,
        stub,
        f'default | where body has "{MARKER}" '
        "| fork (summarize n = count()) sampled = (summarize hint.sample = 0.5 n = count())",
    )
    schemas = [f.schema.name for f in frames if f.WhichOneof("payload") == "schema"]
    assert schemas == ["GenericResult_1", "sampled"]
    batches = [f.batch for f in frames if f.WhichOneof("payload") == "batch"]
    assert [b.table_name for b in batches] == ["GenericResult_1", "sampled"]
    assert batches[0].rows[0].values[0].long_value == ROWS
    warnings = [w for f in frames if f.WhichOneof("payload") == "metadata" for w in f.metadata.warnings]
    sampled = [w for w in warnings if w.HasField("branch_index")]
    assert sampled, f"no warning names its fork branch: {warnings}"
    assert {(w.operator_id, w.branch_index) for w in sampled} == {(3, 2)}
    assert kinds(frames)[-1] == "done"


def test_render_puts_the_visualization_in_the_metadata_frame(pb, stub):
    frames = run(pb, stub, f'default | where body has "{MARKER}" | summarize count() by bin(timestamp, 1s) | render timechart')
    metadata = next(f.metadata for f in frames if f.WhichOneof("payload") == "metadata")
    assert metadata.visualization.visualization_type == "timechart"
    assert kinds(frames)[:2] == ["schema", "metadata"]
    # A bin() query reports completion per time bin; the last report has all bins read.
    final = [f.progress for f in frames if f.WhichOneof("payload") == "progress"][-1]
    assert final.HasField("bin_progress")
    assert final.bin_progress.bin_span == 10_000_000  # 1 s in 100 ns ticks
    assert final.bin_progress.first_bin_start <= T0 // 100
    assert set(final.bin_progress.completion_percentages) == {100}


def test_a_bad_query_gets_an_error_frame_then_done(pb, stub):
    frames = run(pb, stub, "default | where nope == 1")
    assert kinds(frames) == ["error", "done"]
    error = next(f.error for f in frames if f.WhichOneof("payload") == "error")
    assert error.code == "UnknownColumn"
    assert error.title
    assert error.location.start_line == 1 and error.location.start_column == 17
    assert "^" in error.message
    assert json.loads(error.details)["code"] == "UnknownColumn"
    # The support ticket is the id the failure was logged under: the call's request id.
    request_ids = {f.request_id for f in frames}
    assert request_ids == {error.support_ticket_id}


def test_a_cancelled_call_leaves_the_server_serving(pb, stub):
    messages, _ = pb
    call = stub.ExecuteQuery(
        messages.ExecuteQueryRequest(query=f'default | where body has "{MARKER}"'),
        timeout=60,
        metadata=stub.metadata,
    )
    next(call)
    call.cancel()
    with pytest.raises(grpc.RpcError) as raised:
        for _ in call:
            pass
    assert raised.value.code() == grpc.StatusCode.CANCELLED
    frames = run(pb, stub, f'default | where body has "{MARKER}" | count')
    assert kinds(frames)[-1] == "done"


def test_a_segment_that_cannot_be_read_is_a_partial_failure(pb, trawl_factory):
    """A segment whose object went missing on disk is left out; the gRPC metadata names it
    in `partial_failures`, the ADX v2 face as a `PartialFailure` warning, and the other
    segment's rows come back."""
    server = trawl_factory("partial")
    for batch in range(2):
        records = [
            {"timeUnixNano": str(T0 + (batch * 10 + i) * 1_000_000), "body": {"stringValue": f"partial {batch} {i}"}}
            for i in range(10)
        ]
        status, answer = post_otlp_json_logs(server, records, service="partial")
        assert status == 200, answer
    segments = sorted((server.data_dir / "segments").rglob("*.parquet"))
    assert len(segments) == 2, segments
    # The first batch's segment (acknowledged first, so written first).
    lost = min(segments, key=lambda p: p.stat().st_mtime_ns)
    lost.unlink()

    messages, services = pb
    channel = grpc.insecure_channel(server.gateway_endpoint)
    try:
        stub = services.QueryServiceStub(channel)
        request = messages.ExecuteQueryRequest(query='default | where body has "partial" | count')
        frames = list(
            stub.ExecuteQuery(request, metadata=[("authorization", f"Bearer {server.admin_token}")], timeout=60)
        )
    finally:
        channel.close()
    assert kinds(frames)[-1] == "done", kinds(frames)
    failures = [f for frame in frames if frame.WhichOneof("payload") == "metadata" for f in frame.metadata.partial_failures]
    assert [list(f.segment_ids) for f in failures] == [[lost.stem]], failures
    assert "missing" in failures[0].message
    rows = [row for frame in frames if frame.WhichOneof("payload") == "batch" for row in frame.batch.rows]
    assert [[v.long_value for v in row.values] for row in rows] == [[10]]

    result = server.query_raw('default | where body has "partial" | count')
    assert server.primary(result)["rows"] == [[10]]
    warnings = next(t for t in result["Tables"] if t["name"] == "@Warnings")["rows"]
    assert any(kind == "PartialFailure" and lost.stem in message for kind, message, _ in warnings), warnings
    # The server goes on serving.
    assert server.count("default") == 20
