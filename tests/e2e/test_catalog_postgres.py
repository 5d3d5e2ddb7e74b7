"""The catalog in PostgreSQL (`--catalog postgres://…`, a throwaway server from
scripts/postgres.sh): a process keeps its segments, tables and tokens there across a
restart, writes no SQLite file, and rides out a restart of PostgreSQL: ingest is held while
the catalog is away and nothing acknowledged is lost."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from test_faults import assert_exactly, logs_request, post_logs
from trawl_e2e import PostgresServer


@pytest.fixture
def postgres():
    server = PostgresServer().start()
    yield server
    server.remove()


def test_the_catalog_lives_in_postgres_across_a_restart(trawl_factory, postgres):
    server = trawl_factory(extra_args=["--catalog", postgres.url])
    marker = uuid.uuid4().hex
    for batch in range(3):
        assert post_logs(server, logs_request(marker, batch).SerializeToString())[0] == 200
    assert_exactly(server, marker, 3)
    assert not (server.data_dir / "catalog.db").exists(), "a SQLite catalog was written beside PostgreSQL"
    assert postgres.scalar("SELECT count(*) FROM segments WHERE state = 'live'") >= 1

    server.stop_cleanly()
    server.start()
    assert_exactly(server, marker, 3)
    assert post_logs(server, logs_request(marker, 3).SerializeToString())[0] == 200
    assert_exactly(server, marker, 4)


def test_a_restart_of_postgres_holds_ingest_and_loses_nothing(trawl_factory, postgres):
    server = trawl_factory(extra_args=["--catalog", postgres.url])
    marker = uuid.uuid4().hex
    assert post_logs(server, logs_request(marker, 0).SerializeToString())[0] == 200

    postgres.stop()
    answers: list[tuple[int, dict[str, str], float]] = []
    sender = threading.Thread(target=lambda: answers.append(post_logs(server, logs_request(marker, 1).SerializeToString())))
    sender.start()
    time.sleep(5)
    postgres.start()
    sender.join(timeout=60)
    assert answers, "the held request never got an answer"
    status, headers, _ = answers[0]
    if status != 200:
        # Past the retry window the sender is told to retry; it does, as exporters do.
        assert status == 503 and headers.get("retry-after"), answers
        assert post_logs(server, logs_request(marker, 1).SerializeToString())[0] == 200
    assert_exactly(server, marker, 2)
