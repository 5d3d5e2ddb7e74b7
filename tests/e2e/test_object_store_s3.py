"""Segments on a real S3-compatible server (`--object-store s3://bucket/prefix`, s3s-fs on
loopback): written there and read back, across a restart; an outage of the server holds
ingest until it is back and fails queries with a clear error; a wrong bucket or wrong
credentials stop start-up with the reason."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from test_faults import assert_exactly, logs_request, post_logs
from trawl_e2e import QueryError, S3Server, TrawlServer


@pytest.fixture
def s3(tmp_path):
    server = S3Server(tmp_path / "s3").start()
    yield server
    server.stop()


def s3_trawl(trawl_factory, s3: S3Server, prefix: str, **kwargs):
    return trawl_factory(
        extra_args=["--object-store", f"s3://trawl-e2e/{prefix}", "--s3-endpoint", s3.endpoint],
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
    server = s3_trawl(trawl_factory, s3, "e2e/outage")
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
