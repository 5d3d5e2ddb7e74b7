"""Fresh segments and merged ones: with `--flush-compression none` ingest writes its segments
uncompressed, and the background merge rewrites them with zstd, a quiet table's lone segment
included. The rows read the same before and after. The default is zstd from the start."""

from __future__ import annotations

import time
from pathlib import Path

from trawl_e2e import post_otlp_json_logs

T0 = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
RECORDS = 3000


def records(tag: str) -> list[dict]:
    """Log records whose bodies and attributes repeat a lot: text any codec shrinks several-fold."""
    return [
        {
            "timeUnixNano": str(T0 + i * 1_000_000),
            "severityText": "ERROR" if i % 10 == 0 else "INFO",
            "body": {"stringValue": f"{tag} GET /api/v1/orders/{i % 50} answered 200 in {i % 7} ms by the order service"},
            "attributes": [
                {"key": "http.route", "value": {"stringValue": "/api/v1/orders/{id}"}},
                {"key": "http.user_agent", "value": {"stringValue": "Mozilla/5.0 (X11; Linux x86_64) Firefox/121.0"}},
                {"key": "request.note", "value": {"stringValue": f"order {i % 50} of tenant {i % 3} read from the primary"}},
            ],
        }
        for i in range(RECORDS)
    ]


def segments(server) -> dict[Path, int]:
    return {path: path.stat().st_size for path in (server.data_dir / "segments").rglob("*.parquet")}


def ingest_one_segment(server, tag: str) -> tuple[Path, int]:
    status, answer = post_otlp_json_logs(server, records(tag), service="codec")
    assert status == 200, answer
    written = segments(server)
    assert len(written) == 1, written
    assert server.count(f"default | where body has '{tag}'") == RECORDS
    return next(iter(written.items()))


def test_fresh_segments_are_written_uncompressed_and_merged_ones_with_zstd(trawl_factory):
    server = trawl_factory(
        "fresh",
        merge_interval_secs=1,
        extra_args=["--merge-idle-after-secs", "2", "--flush-compression", "none"],
    )
    fresh, fresh_bytes = ingest_one_segment(server, "codecfresh")
    errors_before = server.count("default | where body has 'codecfresh' and severity_text == 'ERROR'")
    assert errors_before == RECORDS // 10

    # The table goes quiet: the janitor rewrites its lone fresh segment (the old object stays
    # on disk through the deletion grace period, out of the catalog).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rewritten = {p: n for p, n in segments(server).items() if p != fresh}
        if rewritten:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"the lone fresh segment was not rewritten: {segments(server)}\n{server.log_tail()}")
    [(merged, merged_bytes)] = rewritten.items()
    assert merged_bytes * 2 < fresh_bytes, (
        f"the merged segment ({merged_bytes} bytes) is not compressed against the fresh one ({fresh_bytes})"
    )
    assert "merged segments" in server.log_text()
    # The same rows, once, from the merged segment.
    assert server.count("default | where body has 'codecfresh'") == RECORDS
    assert server.count("default | where body has 'codecfresh' and severity_text == 'ERROR'") == errors_before
    rows = server.query_dicts("default | where body has 'codecfresh' | summarize n = count() by route = tostring(attributes['http.route'])")
    assert rows == [{"route": "/api/v1/orders/{id}", "n": RECORDS}], rows


def test_fresh_segments_are_compressed_by_default(trawl_factory):
    plain = trawl_factory("none", extra_args=["--flush-compression", "none"])
    _, plain_bytes = ingest_one_segment(plain, "codecnone")
    packed = trawl_factory("default")
    _, packed_bytes = ingest_one_segment(packed, "codeczstd")
    assert packed_bytes * 2 < plain_bytes, f"zstd: {packed_bytes} bytes, none: {plain_bytes}"
    lz4 = trawl_factory("lz4", extra_args=["--flush-compression", "lz4"])
    _, lz4_bytes = ingest_one_segment(lz4, "codeclz4")
    assert lz4_bytes < plain_bytes, f"lz4: {lz4_bytes} bytes, none: {plain_bytes}"
