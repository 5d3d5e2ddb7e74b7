"""Segments on a real S3-compatible server (`--object-store s3://bucket/prefix`, s3s-fs on
loopback): written there and read back, across a restart; an outage of the server holds
ingest until it is back (and past 25 s answers 503 with Retry-After) and fails queries over
segments the local cache does not hold with a clear error, while cached segments keep
answering, across a restart too; a wrong bucket or wrong credentials stop start-up with the
reason."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from test_faults import assert_exactly, logs_request, post_logs
from trawl_e2e import QueryError, S3Server, TrawlServer, operator_gauges


@pytest.fixture
def s3(tmp_path):
    server = S3Server(tmp_path / "s3").start()
    yield server
    server.stop()


def s3_trawl(trawl_factory, s3: S3Server, prefix: str, extra_args_more: list[str] | None = None, **kwargs):
    return trawl_factory(
        extra_args=["--object-store", f"s3://trawl-e2e/{prefix}", "--s3-endpoint", s3.endpoint, *(extra_args_more or [])],
        extra_env=s3.env(),
        **kwargs,
    )


def test_segments_live_in_the_bucket_and_survive_a_restart(trawl_factory, s3):
    server = s3_trawl(trawl_factory, s3, "e2e/restart")
    marker = uuid.uuid4().hex
    for batch in range(5):
        status, _, _ = post_logs(server, logs_request(marker, batch).SerializeToString())
        assert status == 200
    assert_exactly(server, marker, 5)

    stored = [p for p in s3.objects(prefix="e2e/restart") if p.suffix == ".parquet"]
    assert stored, f"no segment under s3://trawl-e2e/e2e/restart: {s3.objects()}"
    local = server.data_dir / "segments"
    assert not local.exists() or not any(local.rglob("*.parquet")), "segments were written to the local disk"

    server.stop_cleanly()
    server.start()
    assert_exactly(server, marker, 5)
    status, _, _ = post_logs(server, logs_request(marker, 5).SerializeToString())
    assert status == 200
    assert_exactly(server, marker, 6)


def test_an_outage_of_the_store_holds_ingest_and_fails_queries_clearly(trawl_factory, s3):
    # Without the segment cache, every query needs the store.
    server = s3_trawl(trawl_factory, s3, "e2e/outage", extra_args_more=["--segment-cache-bytes", "0"])
    marker = uuid.uuid4().hex
    assert post_logs(server, logs_request(marker, 0).SerializeToString())[0] == 200
    assert_exactly(server, marker, 1)

    s3.stop()
    with pytest.raises(QueryError) as failed:
        server.query(f"default | where tostring(body) contains '{marker}' | summarize count()")
    assert "segment store is unavailable" in failed.value.body, failed.value.body

    answers: list[tuple[int, dict[str, str], float]] = []
    sender = threading.Thread(target=lambda: answers.append(post_logs(server, logs_request(marker, 1).SerializeToString())))
    sender.start()
    time.sleep(6)
    s3.start()
    sender.join(timeout=60)
    assert answers, "the held request never got an answer"
    status, _, seconds = answers[0]
    assert status == 200, answers
    assert seconds >= 5, f"acknowledged after {seconds:.1f} s, while the store was down for 6 s"
    assert_exactly(server, marker, 2)


def test_a_long_outage_answers_503_after_25_seconds_and_nothing_acknowledged_is_lost(trawl_factory, s3):
    server = s3_trawl(trawl_factory, s3, "e2e/long-outage", extra_args_more=["--segment-cache-bytes", "0"])
    marker = uuid.uuid4().hex
    assert post_logs(server, logs_request(marker, 0).SerializeToString())[0] == 200

    s3.stop()
    status, headers, seconds = post_logs(server, logs_request(marker, 1).SerializeToString())
    assert status == 503, (status, headers)
    assert 20 <= seconds <= 40, f"answered after {seconds:.1f} s"
    assert int(headers.get("retry-after", "0")) >= 1, headers
    # The server keeps serving while the store is down: health, and a query's clear error.
    with pytest.raises(QueryError) as failed:
        server.query(f"default | where tostring(body) contains '{marker}' | summarize count()")
    assert "segment store is unavailable" in failed.value.body, failed.value.body
    time.sleep(max(0.0, 40 - seconds))
    s3.start()

    # The client retries what was refused; what was acknowledged before is there.
    status, _, _ = post_logs(server, logs_request(marker, 1).SerializeToString())
    assert status == 200
    assert_exactly(server, marker, 2)


def test_cached_segments_answer_while_the_store_is_down_across_a_restart(trawl_factory, s3):
    # No merges: the segments the queries read stay the ones the cache holds.
    server = s3_trawl(trawl_factory, s3, "e2e/cache", merge_interval_secs=0)
    marker = uuid.uuid4().hex
    for batch in range(3):
        assert post_logs(server, logs_request(marker, batch).SerializeToString())[0] == 200
    assert_exactly(server, marker, 3)
    cache = server.data_dir / "segment-cache"
    assert any(p.name == "object.json" for p in cache.rglob("*")), f"nothing cached under {cache}"

    # A new process reads the cache the last one left; with the store gone, it answers from it.
    server.stop_cleanly()
    server.start()
    s3.stop()
    assert_exactly(server, marker, 3)
    read = operator_gauges(server, "trawl_storage_cache_read_bytes_total")
    assert read.get('trawl_storage_cache_read_bytes_total{source="cache"}', 0) > 0, read
    assert read.get('trawl_storage_cache_read_bytes_total{source="store"}', 0) == 0, read
    s3.start()


@pytest.mark.parametrize(
    ("store", "secret", "reason"),
    [
        ("s3://missing-bucket/x", None, "NoSuchBucket"),
        ("s3://trawl-e2e/x", "not-the-secret", "403 Forbidden"),
    ],
)
def test_a_wrong_bucket_or_credentials_stop_start_up_with_the_reason(trawl_bin, tmp_path, s3, store, secret, reason):
    env = s3.env()
    if secret:
        env["AWS_SECRET_ACCESS_KEY"] = secret
    # Not through trawl_factory, which expects its servers to stop cleanly.
    server = TrawlServer(
        trawl_bin, tmp_path / "refused", extra_args=["--object-store", store, "--s3-endpoint", s3.endpoint], extra_env=env
    )
    with pytest.raises(AssertionError) as refused:
        server.start()
    message = str(refused.value)
    assert "exited with 1" in message, message
    assert f"cannot reach the segment store {store}" in message and reason in message, message
