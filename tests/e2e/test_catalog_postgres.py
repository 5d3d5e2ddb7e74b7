"""The catalog in PostgreSQL (`--catalog postgres://…`, a throwaway server from
scripts/postgres.sh): a process keeps its segments, tables and tokens there across a
restart, writes no SQLite file, and rides out a restart of PostgreSQL: ingest is held while
the catalog is away and nothing acknowledged is lost. Processes sharing it do the janitor's
work one at a time, under a lease another takes over when its holder dies."""

from __future__ import annotations

import threading
import time
import uuid


from test_faults import assert_exactly, logs_request, post_logs
from trawl_e2e import operator_gauges


def test_the_catalog_lives_in_postgres_across_a_restart(postgres, trawl_factory):
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


def test_a_restart_of_postgres_holds_ingest_and_loses_nothing(postgres, trawl_factory):
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


def lease_held(server) -> float:
    return operator_gauges(server, "trawl_janitor_lease_held").get("trawl_janitor_lease_held", -1)


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds:.0f} s: {what}"
        time.sleep(0.5)


def test_one_janitor_holds_the_lease_and_another_takes_over_when_it_dies(postgres, trawl_factory):
    # Two processes share the catalog; each would run the janitor's work, one at a time.
    first = trawl_factory("first", extra_args=["--catalog", postgres.url], merge_interval_secs=1)
    second = trawl_factory("second", extra_args=["--catalog", postgres.url], merge_interval_secs=1)
    wait_for(lambda: lease_held(first) + lease_held(second) == 1, 20, "exactly one holds the janitor lease")
    holder, other = (first, second) if lease_held(first) == 1 else (second, first)
    time.sleep(3)
    assert (lease_held(holder), lease_held(other)) == (1, 0), "the lease moved while its holder lived"

    holder.kill()
    started = time.monotonic()
    # The lease runs out within three passes (at least 30 s) of its last renewal.
    wait_for(lambda: lease_held(other) == 1, 45, "the other process takes the lease over")
    print(f"janitor lease taken over {time.monotonic() - started:.1f} s after its holder was killed")
    # Back from the crash, the first holder waits its turn.
    holder.start()
    time.sleep(3)
    assert (lease_held(holder), lease_held(other)) == (0, 1)
